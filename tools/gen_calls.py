#!/usr/bin/env python3
"""gen_calls.py: models made of many small graphs calling one another, for the
bounds tests and `make bench` (tools/bench.sh).

  --graphs N --calls 1   a chain: @g_k calls @g_(k-1) once (N graphs, N ReLUs inlined)
  --graphs N --calls C   a bomb: @g_k calls @g_(k-1) C times (C^(N-1) ReLUs once inlined)

Each graph maps a (4, 4) Float32 tensor to one of the same shape; @g_0 is one
ReLU, the entry @net calls the last graph once."""
import argparse
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--graphs", type=int, required=True)
    ap.add_argument("--calls", type=int, default=1)
    ap.add_argument("-o", "--output", default="-")
    a = ap.parse_args()
    t = "<Tensor[Float32], (4, 4)>"
    out = ['context {device_num: 1, parallel_mode: "stand_alone"}']
    out.append(f"graph @g_0(%x: {t}) {{\n  %1 = ReLU(%x)\n  return %1\n}}")
    for k in range(1, a.graphs):
        body = [f"  %{c + 1} = Call(%{c if c else 'x'}) {{graph: @g_{k - 1}}}" for c in range(a.calls)]
        body.append(f"  return %{a.calls}")
        out.append(f"graph @g_{k}(%x: {t}) {{\n" + "\n".join(body) + "\n}")
    out.append(f"graph @net(%x: {t}) {{\n  %1 = Call(%x) {{graph: @g_{a.graphs - 1}}}\n  return %1\n}}")
    text = "\n".join(out) + "\n"
    if a.output == "-":
        sys.stdout.write(text)
    else:
        with open(a.output, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
