#!/usr/bin/env bash
# bench_checkpoint.sh SHARDC [RUNS]: what a checkpoint costs a training run
# against writing its bytes (docs/benchmarks.md, Checkpoints).
#
# One GPT layer (tools/gen_gpt.py: hidden 1024, seq 128, batch 2, Adam: the
# parameters and both moments, 151 MB) on 2 ranks (Megatron mp 2: each rank
# writes its half), CPU backend. Each of RUNS rounds (default 3) runs 4
# steps without checkpoints and 4 with --save-every 1 (4 checkpoints,
# --keep 1), the programs' own `time:` line each; a checkpoint's cost is the
# difference over 4. Against it: the same bytes written with dd to the same
# disk and fsynced (conv=fsync), as two files in parallel. Prints the
# fastest of each and their ratio.
set -euo pipefail
shardc=$(realpath "${1:?usage: bench_checkpoint.sh SHARDC [RUNS]}")
runs=${2:-3}
tmp=$(mktemp -d "${TMPDIR:-/var/tmp}/bench_ckpt.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
here=$(cd "$(dirname "$0")" && pwd)
/usr/bin/python3 "$here/gen_gpt.py" --layers 1 --hidden 1024 --seq 128 --batch 2 --heads 16 --devices 2 --train \
	--optimizer adam --megatron --mp 2 -o "$tmp/layer.ir"
"$shardc" "$tmp/layer.ir" -o "$tmp/out" >/dev/null
secs() { sed -n 's/^time: [0-9]* steps in \([0-9.]*\) s.*/\1/p'; }
plain=999 with=999 bytes=0 dd_s=999
for r in $(seq "$runs"); do
	t=$("$tmp/out/run.sh" --steps 4 --output-dir "$tmp/res" 2>"$tmp/err" | secs) || { cat "$tmp/err" >&2; exit 1; }
	plain=$(awk -v a="$plain" -v b="$t" 'BEGIN { print (b < a ? b : a) }')
	rm -rf "$tmp/ck"
	t=$("$tmp/out/run.sh" --steps 4 --output-dir "$tmp/res" --checkpoint "$tmp/ck" --save-every 1 --keep 1 \
		2>"$tmp/err" | secs) || { cat "$tmp/err" >&2; exit 1; }
	with=$(awk -v a="$with" -v b="$t" 'BEGIN { print (b < a ? b : a) }')
	bytes=$(du -sb "$tmp/ck" | cut -f1)
	half=$((bytes / 2 / 1048576 + 1))
	s0=$(date +%s.%N)
	dd if=/dev/zero of="$tmp/dd0" bs=1M count=$half conv=fsync status=none &
	dd if=/dev/zero of="$tmp/dd1" bs=1M count=$half conv=fsync status=none
	wait
	t=$(awk -v a="$s0" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
	rm -f "$tmp/dd0" "$tmp/dd1"
	dd_s=$(awk -v a="$dd_s" -v b="$t" 'BEGIN { print (b < a ? b : a) }')
done
awk -v p="$plain" -v w="$with" -v b="$bytes" -v d="$dd_s" 'BEGIN {
	c = (w - p) / 4
	printf "checkpoint: %.1f MB; 4 steps %.3f s without, %.3f s with one after each: %.3f s a checkpoint; dd of its bytes (2 files, fsynced) %.3f s: %.2fx\n",
		b / 1e6, p, w, c, d, c / d }'
