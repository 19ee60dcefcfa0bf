#!/usr/bin/python3
"""bytes_check.py MANIFEST LOG: the bytes each rank counted at run time (run.sh's
`rank R: comm bytes sent B` lines in LOG) equal manifest.json's comm_bytes_per_rank
times the steps run (K of the `time: K steps` or `time: K runs` line, else the
`step: S, loss is L` lines, at least 1); on pipeline stages also the point-to-point
share (`rank R: p2p bytes sent B`) the manifest's pipeline.p2p_bytes_per_rank times
the steps.  Prints the difference and exits 1 when they do not."""
import json
import re
import sys


def check(manifest_path, log_path):
    """None when the counts agree, else what differs."""
    manifest = json.load(open(manifest_path))
    try:
        log = open(log_path).read()
    except OSError as e:
        return "no run log to count the bytes of: %s" % e
    timed = re.search(r"^time: (\d+) (steps|runs) in ", log, re.M)   # rank 0's last line but the bytes
    steps = int(timed.group(1)) if timed else len(re.findall(r"^step: \d+, loss is ", log, re.M)) or 1
    counted = {int(r): int(b) for r, b in re.findall(r"^rank (\d+): comm bytes sent (\d+)$", log, re.M)}
    want = {r: b * steps for r, b in enumerate(manifest["comm_bytes_per_rank"])}
    if counted != want:
        return "bytes counted %s, manifest says %s per step x %d" % (counted, manifest["comm_bytes_per_rank"], steps)
    p2p = {int(r): int(b) for r, b in re.findall(r"^rank (\d+): p2p bytes sent (\d+)$", log, re.M)}
    per_step = manifest.get("pipeline", {}).get("p2p_bytes_per_rank", [0] * len(manifest["comm_bytes_per_rank"]))
    want = {r: b * steps for r, b in enumerate(per_step) if any(per_step)}
    if p2p != want:
        return "point-to-point bytes counted %s, manifest says %s per step x %d" % (p2p, per_step, steps)
    return None


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: bytes_check.py MANIFEST LOG")
    msg = check(sys.argv[1], sys.argv[2])
    if msg:
        print(msg)
        sys.exit(1)


if __name__ == "__main__":
    main()
