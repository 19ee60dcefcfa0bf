#!/usr/bin/env python3
# Usage: bench_search.py SHARDC [--small] [--rows 13B,1.3B,350M,1.3B/8,13B/64,1.5B/8,1.5B/64,13B/64pp,175B/1024] [--memory BYTES] [--json FILE]
"""The strategy search against the hand plans at the scale of real models (make bench-search).

For each row (a GPT stack from tools/gen_gpt.py with a train block, fp32, Adam, seq 1024)
every plan is compiled with --cluster set to 8 devices a node, 300e9 B/s within a node,
25e9 B/s between nodes, 5e-6 s latency, 2e14 FLOP/s and 80e9 B a device:

    D-Rec         auto_parallel, search_mode recursive_programming, no annotations
    propagation   auto_parallel, search_mode sharding_propagation, no annotations
    Megatron mp M gen_gpt.py --megatron --mp M (semi_auto_parallel: the search is off)
    data parallel gen_gpt.py --megatron --mp 1 (every operator split over the batch only)
    data parallel, vocab mp K   (rows with a vocabulary) the same, but the lookup, the
                  tied head and the cross-entropy split the vocabulary K ways (unevenly)

and the table gives, per plan: the total cost by shardc's own cost model (--explain's
"total cost"), the bytes a rank sends (manifest.json's largest comm_bytes_per_rank),
the search's memory figure (--explain's "memory ... a device"), the slab the largest
rank's program allocates (sc_slab in program.c), whether that fits a device (80e9 B), the
compile time (--time's total, parse to lowering, in a run without --explain; one
core, wall clock, so a loaded machine shows more), and of the operators --explain
prints, those whose runner-up costs less than their choice: how many of those
runner-ups fit the device and how many do not ("does not fit: needs ... B a device").
After the search none may fit. A plan shardc refuses shows the first line of the
error.

The pipeline rows (13B/64pp, 175B/1024: pipelining should win there) compare 3-D
plans at one batch a step, split into M micro-batches:

    D-Rec, pipeline auto, M auto   auto_parallel, recursive_programming, pipeline_stages
                  "auto" and micro_batches "auto": the graph is the step's batch, the
                  search picks the stages, where they split and M
    tensor t, pipeline p, M   the best hand 3-D plan of each t: gen_gpt.py --megatron
                  --mp t --pipeline p --micro-batches M (data parallelism the rest),
                  t in {1, 2, 4, 8} within a node, M in {p, 2p, 4p}, each plain, with
                  ZeRO-1 and with ZeRO-1 and every layer recomputed; the cheapest that
                  fits (else the least memory) of all p and M (the graph one
                  micro-batch of batch / M rows, the train block's micro_batches M)

and "total cost" is a step's (--explain's figure, a micro-batch's share, times M).

--small keeps each row's layer shapes but stacks 2 layers, so the table runs in seconds.
--memory sets the device memory instead of 80e9 (the small rows need less for memory
to bind: at 350M, 11e9 leaves data parallelism the one hand plan that fits).
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
MEMORY = 80e9
CLUSTER = {"devices_per_node": 8, "intra_node_bandwidth": 300e9, "intra_node_latency": 5e-6,
           "inter_node_bandwidth": 25e9, "inter_node_latency": 5e-6, "device_flops": 2e14,
           "device_memory": MEMORY}
# name: (hidden, layers, heads, devices, batch, seq[, vocab]): with a vocabulary the stack
# is a language model (gen_gpt.py --vocab: token lookup, tied head, cross-entropy)
ROWS = {
    "13B": (5120, 40, 40, 8, 1, 1024),
    "1.3B": (2048, 24, 16, 64, 128, 1024),
    "350M": (1024, 24, 16, 64, 512, 1024),
    # batch 8 a device: no plan fits without optimizer parallelism and recomputation
    "1.3B/8": (2048, 24, 16, 8, 64, 1024),
    "13B/64": (5120, 40, 40, 64, 512, 1024),
    # GPT-2 1.5B: 25 heads, which no device count divides, and vocabulary 50,257 = 29 x 1,733
    "1.5B/8": (1600, 48, 25, 8, 16, 1024, 50257),
    "1.5B/64": (1600, 48, 25, 64, 128, 1024, 50257),
}
SMALL = {   # the same layers, 2 of them: the per-layer trade-offs of the full rows, in seconds
    "13B": (5120, 2, 40, 8, 1, 1024),
    "1.3B": (2048, 2, 16, 64, 128, 1024),
    "350M": (1024, 2, 16, 64, 512, 1024),
    "1.3B/8": (2048, 2, 16, 8, 64, 1024),
    "13B/64": (5120, 2, 40, 64, 512, 1024),
    "1.5B/8": (1600, 2, 25, 8, 16, 1024, 50257),
    "1.5B/64": (1600, 2, 25, 64, 128, 1024, 50257),
}
# Pipeline rows: name: (hidden, layers, heads, devices, batch a step, seq, precision,
# vocabulary or 0)
PIPE_ROWS = {
    "13B/64pp": (5120, 40, 40, 64, 512, 1024, "fp32", 0),
    # GPT-3 175B as a language model (token ids in, a tied head and cross-entropy out:
    # a step's micro-batches of ids are small beside the stack's Float32 input):
    # fp32 master weights, bf16 compute, Adam; the batch of its paper
    "175B/1024": (12288, 96, 96, 1024, 1536, 2048, "bf16", 50257),
}
PIPE_SMALL = {k: (v[0], 4) + v[2:] for k, v in PIPE_ROWS.items()}
# Rows whose hand plans are Megatron with ZeRO-1 (enable_parallel_optimizer,
# level1), alone and with every layer recomputed (recompute: true).
MEMSAVE = {"1.3B/8", "13B/64"}


def plans(devices, heads, memsave=False, vocab=0):
    out = [("D-Rec", ["--mode", "auto_parallel", "--search", "recursive_programming"]),
           ("propagation", ["--mode", "auto_parallel", "--search", "sharding_propagation"])]
    saves = [("", [])]
    if memsave:
        saves = [(" + ZeRO-1", ["--zero", "level1"]),
                 (" + ZeRO-1 + recompute", ["--zero", "level1", "--recompute", "true"])]
    for mp in (2, 4, 8):
        if devices % mp == 0 and heads % mp == 0:
            out += [("Megatron mp %d%s" % (mp, n), ["--megatron", "--mp", str(mp)] + z) for n, z in saves]
    out += [("data parallel%s" % n, ["--megatron", "--mp", "1"] + z) for n, z in saves]
    if vocab:   # the layers data parallel, the lookup, head and loss vocab-parallel over a node (uneven)
        vp = min(devices, 8)
        out += [("data parallel, vocab mp %d%s" % (vp, n), ["--megatron", "--mp", "1", "--vocab-mp", str(vp)] + z)
                for n, z in saves]
    return out


def runner_ups(text, memory):
    """Of --explain's operator lines, those whose runner-up costs less than the
    choice: (how many of those runner-ups fit, how many do not), by the memory
    the line says the plan with the runner-up needs ("needs ... B a device";
    none said counts as fitting)."""
    fit = nofit = 0
    for line in text.splitlines():
        m = re.search(r"\) cost ([0-9.e+-]+) s.*; runner-up .*\) cost ([0-9.e+-]+) s", line)
        if m and float(m.group(2)) < float(m.group(1)):
            need = re.search(r"needs ([0-9.e+-]+) B a device", line)
            if need and float(need.group(1)) > memory:
                nofit += 1
            else:
                fit += 1
    return fit, nofit


def pipe_plans(dims):
    """(name, gen_gpt.py arguments, micro-batches, group) of a pipeline row: the
    search's (micro-batches None: its choice), and every hand 3-D plan (group: its
    tensor degree)."""
    hidden, layers, heads, devices, batch = dims[:5]
    out = [("D-Rec, pipeline auto, M auto", ["--mode", "auto_parallel", "--search", "recursive_programming",
                                             "--pipeline", "auto", "--micro-batches", "auto"], None, None)]
    for t in (1, 2, 4, 8):
        if heads % t or devices % t:
            continue
        p = 1
        while p <= min(layers, devices // t):
            d = devices // (t * p)
            for m in ((p, 2 * p, 4 * p) if p > 1 else (1,)):
                if batch % m or (batch // m) % d:
                    continue
                base = ["--megatron", "--mp", str(t)] + (["--pipeline", str(p), "--micro-batches", str(m)] if p > 1 else [])
                for n, z in (("", []), (" + ZeRO-1", ["--zero", "level1"]),
                             (" + ZeRO-1 + recompute", ["--zero", "level1", "--recompute", "true"])):
                    out.append(("tensor %d, pipeline %d, M %d%s" % (t, p, m, n), base + z, m, t))
            p *= 2
    return out


def run_plan(shardc, tmp, row, dims, name, args, memory, micro=1):
    hidden, layers, heads, devices, batch, seq = dims[:6]
    vocab = ["--vocab", str(dims[6])] if len(dims) > 6 and isinstance(dims[6], int) else []
    if len(dims) > 7:   # a pipeline row: the graph is one micro-batch (micro None: the step's); its precision
        batch //= micro or 1
        vocab = (["--precision", dims[6]] if dims[6] != "fp32" else []) + (["--vocab", str(dims[7])] if dims[7] else [])
    tag = re.sub(r"[^A-Za-z0-9]+", "_", "%s_%s" % (row, name))
    ir = os.path.join(tmp, tag + ".ir")
    subprocess.run([sys.executable, os.path.join(HERE, "gen_gpt.py"), "--layers", str(layers), "--hidden",
                    str(hidden), "--heads", str(heads), "--seq", str(seq), "--batch", str(batch), "--devices",
                    str(devices), "--train", "--optimizer", "adam", "-o", ir] + vocab + args, check=True)
    out = os.path.join(tmp, tag)
    cluster = os.path.join(tmp, "cluster.json")
    # --explain prices every operator's runner-up too: a run of its own, not timed
    p = subprocess.run([shardc, ir, "--cluster", cluster, "--explain", "--check"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True)
    r = {"plan": name}
    m = re.search(r"# chose (\d+) stage", p.stdout)
    if m:
        r["stages"] = int(m.group(1))
    m = re.search(r"# chose (\d+) micro-batch", p.stdout)
    if micro is None:
        micro = r["micro"] = int(m.group(1)) if m else 1
    m = re.search(r"total cost ([0-9.e+-]+) s, memory ([0-9.e+-]+) B a device", p.stdout)
    if m:
        r["cost"], r["memory"] = float(m.group(1)) * micro, float(m.group(2))
    if "runner-up" in p.stdout:
        r["cheaper_fit"], r["cheaper_nofit"] = runner_ups(p.stdout, memory)
    p = subprocess.run([shardc, ir, "--cluster", cluster, "--time", "-o", out], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True)
    m = re.search(r"total ([0-9.]+) s", p.stderr)
    if m:
        r["compile"] = float(m.group(1))
    if p.returncode != 0:
        err = [l for l in p.stderr.splitlines() if "error:" in l]
        r["error"] = err[0].split("error:", 1)[1].strip() if err else p.stderr.strip()[:300]
        return r
    man = json.load(open(os.path.join(out, "manifest.json")))
    r["comm"] = max(man.get("comm_bytes_per_rank", [0]))
    slab = 0
    for f in glob.glob(os.path.join(out, "program.c")):
        with open(f) as fh:
            for line in fh:
                m = re.search(r"sc_slab\(rt, (\d+)\)", line)
                if m:
                    slab = max(slab, int(m.group(1)))
                    break
    r["slab"] = slab
    r["fits"] = slab <= memory
    shutil.rmtree(out, ignore_errors=True)
    return r


def pipe_row(shardc, tmp, row, dims, memory, results):
    """A pipeline row's lines: the search's per M, and the best hand 3-D plan of
    each tensor degree (fitting first, then cheapest)."""
    rs, best_of = [], {}
    for name, args, micro, group in pipe_plans(dims):
        r = run_plan(shardc, tmp, row, dims, name, args, memory, micro)
        if group is None:
            rs.append(r)
            continue
        key = (r.get("fits", False), -r.get("cost", float("inf")) if r.get("fits") else -r.get("memory", float("inf")))
        if group not in best_of or key > best_of[group][0]:
            best_of[group] = (key, r)
    hand = [r for _, r in best_of.values()]
    fitting = [r["cost"] for r in hand if r.get("fits") and "cost" in r]
    best = min(fitting) if fitting else None
    for r in rs + [best_of[t][1] for t in sorted(best_of)]:
        ratio = r["cost"] / best if best and "cost" in r else None
        mratio = r["memory"] / r["slab"] if r.get("slab") and "memory" in r else None
        fits = "refused: " + r["error"][:120] if "error" in r else ("yes" if r["fits"] else "no")
        name = r["plan"] + (" (chose %d stage%s%s)" % (r["stages"], "s" if r["stages"] > 1 else "",
                                                      ", %d micro-batch%s" % (r["micro"], "es" if r["micro"] > 1 else "")
                                                      if "micro" in r else "")
                            if "stages" in r else "")
        print("| %s | %d | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | - |" % (
            row, dims[3], dims[4], name, fmt(r.get("cost")), fmt(ratio), fmt(r.get("comm")),
            fmt(r.get("memory")), fmt(r.get("slab")), fmt(mratio), fits, fmt(r.get("compile"))))
        sys.stdout.flush()
        r.update(model=row, devices=dims[3], batch=dims[4], best_hand=best)
        results.append(r)


def fmt(v, unit=""):
    if v is None:
        return "-"
    return "%.4g%s" % (v, unit)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("shardc")
    ap.add_argument("--small", action="store_true", help="the shapes divided down (same structure)")
    ap.add_argument("--rows", default=",".join(ROWS))
    ap.add_argument("--json", default=None, help="also write the results as JSON to this file")
    ap.add_argument("--memory", type=float, default=MEMORY, help="bytes a device (default 80e9)")
    a = ap.parse_args()
    table = SMALL if a.small else ROWS
    tmp = tempfile.mkdtemp(prefix="bench_search.")
    try:
        with open(os.path.join(tmp, "cluster.json"), "w") as f:
            json.dump(dict(CLUSTER, device_memory=a.memory), f)
        results = []
        print("| model | devices | batch | plan | total cost (s) | cost / best hand plan | bytes a rank | "
              "search memory (B) | slab (B) | memory / slab | fits %g | compile (s) | "
              "cheaper runner-ups: fit, do not |" % a.memory)
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for row in a.rows.split(","):
            if row in PIPE_ROWS:
                pipe_row(os.path.abspath(a.shardc), tmp, row, (PIPE_SMALL if a.small else PIPE_ROWS)[row], a.memory,
                         results)
                continue
            dims = table[row]
            rs = [run_plan(os.path.abspath(a.shardc), tmp, row, dims, n, args, a.memory)
                  for n, args in plans(dims[3], dims[2], row in MEMSAVE, dims[6] if len(dims) > 6 else 0)]
            hand = [r["cost"] for r in rs if r["plan"].startswith(("Megatron", "data")) and r.get("fits") and "cost" in r]
            best = min(hand) if hand else None
            for r in rs:
                ratio = r["cost"] / best if best and "cost" in r else None
                mratio = r["memory"] / r["slab"] if r.get("slab") and "memory" in r else None
                fits = "refused: " + r["error"][:120] if "error" in r else ("yes" if r["fits"] else "no")
                ups = "%d, %d" % (r["cheaper_fit"], r["cheaper_nofit"]) if "cheaper_fit" in r else "-"
                print("| %s | %d | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                    row, dims[3], dims[4], r["plan"], fmt(r.get("cost")), fmt(ratio), fmt(r.get("comm")),
                    fmt(r.get("memory")), fmt(r.get("slab")), fmt(mratio), fits, fmt(r.get("compile")), ups))
                sys.stdout.flush()
                r.update(model=row, devices=dims[3], batch=dims[4], best_hand=best)
                results.append(r)
        if a.json:
            with open(a.json, "w") as f:
                json.dump(results, f, indent=1)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
