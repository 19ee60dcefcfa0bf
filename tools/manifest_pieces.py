#!/usr/bin/env python3
# Usage: manifest_pieces.py MANIFEST [NAME...]
"""Every rank's piece of a manifest.json's tensors, and every rank's group of its
collectives, worked out from the rules the manifest states once
(docs/output.md, manifest.json): a tensor's "layout", "piece" and "copies", a
collective's "group" grid.

As a program it prints, for each input, parameter and output (only those NAMEd,
if any), one line per rank: `NAME rank R: start [...] shape [...]`, then for
each collective one line per rank with the members of the rank's group.
As a module: coords(dev, rank), piece_start(tensor, rank), pieces(tensor,
device_num), group(grid, rank).  Standard library only.
"""
import json
import sys


def coords(dev, rank):
    """The rank's coordinates on the device matrix dev, ranks row-major over it
    (the last axis fastest)."""
    c = [0] * len(dev)
    for a in range(len(dev) - 1, -1, -1):
        c[a] = rank % dev[a]
        rank //= dev[a]
    return c


def piece_start(tensor, rank):
    """Where the rank's piece starts in the global tensor: along dim d, the
    number whose digits are the rank's coordinates on map[d] (the first axis
    most significant) times the piece's size."""
    layout = tensor["layout"]
    dev, c = layout["dev"], coords(layout["dev"], rank)
    start = []
    for axes, size in zip(layout["map"], tensor["piece"]):
        s = 0
        for a in axes:
            s = s * dev[a] + c[a]
        start.append(s * size)
    return start


def pieces(tensor, device_num):
    """[(rank, start, shape)] for every rank, as the manifest listed them before
    it stated the rule instead."""
    return [(r, piece_start(tensor, r), list(tensor["piece"])) for r in range(device_num)]


def group(grid, rank):
    """The members of the rank's group, in order: the ranks whose coordinates
    on grid["dev"] equal the rank's except on grid["axes"], ascending."""
    dev, axes = grid["dev"], set(grid["axes"])
    c = coords(dev, rank)
    members = [0]
    for a, n in enumerate(dev):
        members = [m * n + (k if a in axes else c[a]) for m in members
                   for k in (range(n) if a in axes else (0,))]
    return members


def main(argv):
    if len(argv) < 2:
        sys.stderr.write("usage: manifest_pieces.py MANIFEST [NAME...]\n")
        return 2
    with open(argv[1]) as f:
        m = json.load(f)
    names = set(argv[2:])
    n = m["device_num"]
    for kind in ("inputs", "parameters", "outputs"):
        for t in m[kind]:
            if names and t["name"] not in names:
                continue
            for r, start, shape in pieces(t, n):
                print("%s rank %d: start %s shape %s" % (t["name"], r, start, shape))
    if not names:
        for k, c in enumerate(m["collectives"]):
            for r in range(n):
                print("collective %d (%s %s) rank %d: group %s" % (k, c["op"], c["value"], r, group(c["group"], r)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
