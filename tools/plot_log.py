#!/usr/bin/python3
"""plot_log.py LOG [-o loss.png]: the loss and the learning rate against the step.

LOG is what run.sh --log FILE wrote (one JSON object a line: step, loss, lr,
and grad_norm, samples_per_s or tokens_per_s, ms_per_step, eta_s; a loss that
was not finite is null), or run.sh's stdout (its `step: S, loss is L, lr R, ...`
lines).  Draws two panels sharing the step axis with matplotlib (python3-matplotlib,
tools/install-deps.sh): the loss above, the learning rate below, and writes
the picture to -o (default loss.png).  Exits 1 with one message when LOG holds
no step or matplotlib is missing.
"""
import argparse
import json
import re
import sys


def read_log(path):
    """[(step, loss or None, lr or None)] from a --log file or run.sh's stdout."""
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                r = json.loads(line)
                rows.append((int(r["step"]), r.get("loss"), r.get("lr")))
                continue
            m = re.match(r"step: (\d+), loss is ([^,\s]+)(?:, lr ([^,\s]+))?", line)
            if m:
                loss = float(m.group(2))
                rows.append((int(m.group(1)), loss, float(m.group(3)) if m.group(3) else None))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log")
    ap.add_argument("-o", "--output", default="loss.png")
    a = ap.parse_args()
    try:
        rows = read_log(a.log)
    except (OSError, ValueError, KeyError) as e:
        sys.exit("plot_log.py: %s: %s" % (a.log, e))
    if not rows:
        sys.exit("plot_log.py: %s holds no step (run.sh --log FILE, or run.sh's stdout)" % a.log)
    try:
        import matplotlib
        matplotlib.use("Agg")   # no display needed
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("plot_log.py: matplotlib is missing (apt-get install python3-matplotlib, or tools/install-deps.sh)")
    steps = [r[0] for r in rows]
    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(7, 5))
    top.plot(steps, [float("nan") if r[1] is None else r[1] for r in rows], marker=".")
    top.set_ylabel("loss")
    top.grid(True, alpha=0.3)
    bottom.plot(steps, [float("nan") if r[2] is None else r[2] for r in rows], color="tab:orange", marker=".")
    bottom.set_ylabel("learning rate")
    bottom.set_xlabel("step")
    bottom.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(a.output)
    print("plot_log.py: %d steps drawn into %s" % (len(rows), a.output))
    return 0


if __name__ == "__main__":
    sys.exit(main())
