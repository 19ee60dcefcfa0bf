#!/usr/bin/python3
"""npy_compare.py GOT EXPECTED... [--rtol R] [--what TEXT]... [--manifest FILE]: compares
a result folder with one or more others (one process for them all: the e2e suite runs
this after every run).

Each pair must hold the same .npy files (output_<k>.npy, param_<name>.npy); each pair must
have the same shape and dtype, integers equal, floats within
|got - expected| <= rtol * (|expected| + max|expected|).  The second term scales with
the tensor's magnitude so that elements that cancel to near zero are not held to a
relative bound that float32 rounding cannot meet.  With a `log` file in each folder
(run.sh's stdout), the `step: S, loss is L, lr R, ...` lines must match in number
and loss, the learning rates R (6 digits) within 1e-5 relative where both print one, and loss
scaling's `step: S, overflow, ...` lines exactly.  --atol A: differences up
to A pass whatever the magnitudes.  --what names each EXPECTED in turn in the lines
printed.  --manifest FILE: also the bytes GOT's log counted against that manifest.json
(bytes_check.py).
Prints one line per problem and the worst error of each comparison; exits 1 on any problem."""
import argparse
import glob
import os
import re
import sys

import numpy as np


def losses(folder):
    path = os.path.join(folder, "log")
    if not os.path.exists(path):
        return None
    return [float(m.group(2)) for m in re.finditer(r"^step: (\d+), loss is ([^,\s]+)", open(path).read(), re.M)]


def rates(folder):
    """The learning rate of each loss line (None where a line has none)."""
    path = os.path.join(folder, "log")
    if not os.path.exists(path):
        return None
    return [None if m.group(1) is None else float(m.group(1))
            for m in re.finditer(r"^step: \d+, loss is [^,\s]+(?:, lr ([^,\s]+))?", open(path).read(), re.M)]


def overflows(folder):
    """Loss scaling's `step: S, overflow, loss scale A -> B, step skipped` lines."""
    path = os.path.join(folder, "log")
    if not os.path.exists(path):
        return None
    return re.findall(r"^step: \d+, overflow, .*$", open(path).read(), re.M)


def compare(got_dir, want_dir, rtol, atol):
    """The problems found comparing two result folders, and the worst relative error."""
    problems = []
    names = lambda d: sorted(os.path.basename(f) for f in glob.glob(os.path.join(d, "*.npy")))
    got, want = names(got_dir), names(want_dir)
    if got != want:
        problems.append("files differ: %s vs %s" % (got, want))
    elif not got:   # two empty folders agree on nothing: a run that wrote no results
        problems.append("no .npy results in %s or %s" % (got_dir, want_dir))
    worst = 0.0
    for f in sorted(set(got) & set(want)):
        x, y = np.load(os.path.join(got_dir, f)), np.load(os.path.join(want_dir, f))
        if x.shape != y.shape or x.dtype != y.dtype:
            problems.append("%s: %s %s, expected %s %s" % (f, x.dtype, x.shape, y.dtype, y.shape))
        elif x.dtype.kind != "f":
            if not np.array_equal(x, y):
                problems.append("%s: %d elements differ" % (f, int(np.sum(x != y))))
        elif x.size:
            x64, y64 = x.astype(np.float64), y.astype(np.float64)
            if not np.array_equal(np.isnan(x64), np.isnan(y64)):
                problems.append("%s: NaNs differ" % f)
                continue
            ok = ~np.isnan(y64)
            scale = np.abs(y64[ok]).max() if ok.any() else 0.0
            diff = np.abs(x64[ok] - y64[ok])
            err = np.where(diff <= atol, 0.0, diff / (np.abs(y64[ok]) + scale + 1e-30))
            e = float(err.max()) if err.size else 0.0
            worst = max(worst, e)
            if e > rtol:
                i = int(np.argmax(err))
                problems.append("%s: relative error %.3g at flat index %d (%r vs %r)"
                                % (f, e, i, float(x64[ok][i]), float(y64[ok][i])))
    og, ow = overflows(got_dir), overflows(want_dir)
    if og is not None and ow is not None and og != ow:
        problems.append("loss scaling: %s, expected %s" % (og or "no overflow", ow or "no overflow"))
    lg, lw = losses(got_dir), losses(want_dir)
    if lg is not None and lw is not None:
        if len(lg) != len(lw):
            problems.append("%d loss lines, expected %d" % (len(lg), len(lw)))
        for s, (p, q) in enumerate(zip(lg, lw), 1):
            e = abs(p - q) / (abs(q) + 1e-30)
            worst = max(worst, e)
            if e > rtol:
                problems.append("step %d: loss %r, expected %r" % (s, p, q))
                break
    rg, rw = rates(got_dir), rates(want_dir)
    for s, (p, q) in enumerate(zip(rg or [], rw or []), 1):
        if p is not None and q is not None and abs(p - q) > 1e-5 * abs(q):
            problems.append("step %d: learning rate %r, expected %r" % (s, p, q))
            break
    return problems, worst


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("got")
    ap.add_argument("expected", nargs="+")
    ap.add_argument("--rtol", type=float, default=2e-3)
    ap.add_argument("--atol", type=float, default=0.0,
                    help="differences up to this much pass whatever the magnitudes (default 0)")
    ap.add_argument("--what", action="append", default=[],
                    help="a name for each EXPECTED, in turn, in the lines printed")
    ap.add_argument("--manifest", help="also check the bytes GOT/log counted against this manifest.json")
    a = ap.parse_args()
    if len(a.what) > len(a.expected):
        ap.error("%d --what for %d EXPECTED folders" % (len(a.what), len(a.expected)))
    failed = False
    for k, want in enumerate(a.expected):
        what = a.what[k] if k < len(a.what) else ""
        problems, worst = compare(a.got, want, a.rtol, a.atol)
        for p in problems:
            print("%s%s" % (what + ": " if what else "", p))
        print("%sworst relative error %.3g" % (what + ": " if what else "", worst))
        failed = failed or bool(problems)
    if a.manifest:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from bytes_check import check
        msg = check(a.manifest, os.path.join(a.got, "log"))
        if msg:
            print(msg)
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
