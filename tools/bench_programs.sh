#!/bin/sh
# bench_programs.sh SHARDC DIRECT: the generated programs' speed.
#
# For the MatMul -> ReLU sample (ir-samples/matmul_relu_semi.ir), the transformer sample
# (ir-samples/transformer_block.ir) and scaled-up versions of both
# (tools/gen_matmul_relu.py at 1024^3, tools/gen_gpt.py --layers 1 at hidden 512),
# all forward only:
#   (a) the program compiled with --parallel-mode stand_alone, run on 1 rank,
#       against DIRECT (tools/bench_direct.c: the same model by hand, cblas_sgemm
#       and plain loops), same number of runs, setup excluded; target: within 1.2x.
#       Both outputs are compared (max |difference|).
#   (b) the program with the sample's own strategies on 8 ranks: time per run and
#       bytes sent per rank per run, the counted figure checked equal to
#       manifest.json's comm_bytes_per_rank.
#   (c) one training step of the GPT layer on 1 rank with the train block's
#       precision "bf16" against Float32: time per step and the slab's bytes.
# The cpu backend throughout; OpenBLAS one thread per rank on both sides. The
# number of runs K is calibrated per program for about BENCH_SECONDS (default 1)
# seconds; each timing is the best of BENCH_REPEAT (default 5) runs.
# Exits 1 if an output differs or a byte count disagrees with the manifest;
# a ratio over 1.2 is reported, not failed.
set -eu
shardc=${1:?usage: bench_programs.sh SHARDC DIRECT}
direct=${2:?usage: bench_programs.sh SHARDC DIRECT}
seconds=${BENCH_SECONDS:-1}
repeat=${BENCH_REPEAT:-5}
export SHARDC_THREADS=1               # as bench_direct: one BLAS thread a rank
py=/usr/bin/python3                   # numpy lives there, not in the python3 on PATH
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

# runs CMD... with --steps K; prints the seconds of the "time: K runs in T s" line
timed() {
	k=$1
	shift
	"$@" --steps "$k" >"$tmp/log" 2>"$tmp/err" || { cat "$tmp/log" "$tmp/err" >&2; exit 1; }
	sed -n 's/^time: [0-9]* [a-z]* in \([0-9.]*\) s.*/\1/p' "$tmp/log"
}

# the number of runs of CMD... that takes about $seconds
calibrate() {
	k=1
	while :; do
		t=$(timed "$k" "$@")
		if awk -v t="$t" 'BEGIN { exit !(t >= 0.1) }'; then
			awk -v t="$t" -v k="$k" -v s="$seconds" 'BEGIN { n = int(k * s / t + 0.5); print (n < 1 ? 1 : n) }'
			return
		fi
		k=$(awk -v t="$t" -v k="$k" 'BEGIN { print (t < 0.002 ? k * 100 : int(k * 0.2 / t) + 1) }')
	done
}

# best K CMD...: the best (smallest) seconds of $repeat runs of CMD... with K runs
best() {
	k=$1
	shift
	b=""
	i=0
	while [ $i -lt "$repeat" ]; do
		t=$(timed "$k" "$@")
		b=$(awk -v t="$t" -v b="$b" 'BEGIN { print ((b == "" || t < b) ? t : b) }')
		i=$((i + 1))
	done
	echo "$b"
}

# best_pair K DIRECT-ARGS -- PROGRAM...: "best-program best-direct" over $repeat runs of
# each, alternated so that a change in the machine's load touches both alike
best_pair() {
	k=$1
	shift
	dargs=""
	while [ "$1" != -- ]; do dargs="$dargs $1"; shift; done
	shift
	bp="" bd=""
	i=0
	while [ $i -lt "$repeat" ]; do
		t=$(timed "$k" "$@")
		bp=$(awk -v t="$t" -v b="$bp" 'BEGIN { print ((b == "" || t < b) ? t : b) }')
		# shellcheck disable=SC2086 # dargs: the direct program's words, none with spaces
		t=$(timed "$k" "$direct" $dargs)
		bd=$(awk -v t="$t" -v b="$bd" 'BEGIN { print ((b == "" || t < b) ? t : b) }')
		i=$((i + 1))
	done
	echo "$bp $bd"
}

# max |a - b| and max |b| of two .npy files, or "shape" if they differ in shape
npy_diff() {
	"$py" -c '
import sys, numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
if a.shape != b.shape:
    print("shape %s vs %s" % (a.shape, b.shape)); sys.exit(1)
d = float(np.abs(a.astype(np.float64) - b).max()); m = float(np.abs(b).max())
print("%.1e" % d); sys.exit(0 if d <= 1e-4 * max(m, 1.0) else 1)' "$1" "$2"
}

us() { awk -v t="$1" -v k="$2" 'BEGIN { printf "%.2f", 1e6 * t / k }'; }

# case NAME IRFILE STRATEGIES DIRECT-ARGS...
bench_case() {
	name=$1 ir=$2 strat=$3
	shift 3
	d="$tmp/$name"
	mkdir -p "$d"
	"$shardc" "$ir" -o "$d/one" --parallel-mode stand_alone
	"$shardc" "$ir" -o "$d/par"
	make -s -C "$d/one" >/dev/null
	make -s -C "$d/par" >/dev/null

	# (a) 1 rank against the direct computation
	k=$(calibrate "$d/one/run.sh" --output-dir "$d/one/res")
	pair=$(best_pair "$k" "$@" --out "$d/direct.npy" -- "$d/one/run.sh" --output-dir "$d/one/res")
	tp=${pair% *} td=${pair#* }
	ratio=$(awk -v a="$tp" -v b="$td" 'BEGIN { printf "%.2f", a / b }')
	verdict=$(awk -v r="$ratio" 'BEGIN { print (r <= 1.2 ? "ok" : "OVER") }')
	diff1=$(npy_diff "$d/one/res/output_0.npy" "$d/direct.npy") || { fail=1; diff1="$diff1 FAIL"; }
	printf '%-24s %9s %12s %12s %6sx %-9s %s\n' "$name" "$k" "$(us "$tp" "$k")" "$(us "$td" "$k")" \
		"$ratio" "1.2x $verdict" "$diff1" >>"$tmp/table_a"

	# (b) 8 ranks with the sample's strategies
	ranks=$(sed -n 's/^ranks=//p' "$d/par/run.sh")
	k8=$(calibrate "$d/par/run.sh" --output-dir "$d/par/res")
	t8=$(best "$k8" "$d/par/run.sh" --output-dir "$d/par/res")
	counted=$(sed -n 's/^rank \([0-9]*\): comm bytes sent \([0-9]*\)$/\1 \2/p' "$tmp/log" | sort -n |
		awk -v k="$k8" '{ printf "%s%s", (NR > 1 ? "," : ""), $2 / k }')
	manifest=$("$py" -c 'import json, sys; print(",".join(str(b) for b in json.load(open(sys.argv[1]))["comm_bytes_per_rank"]))' \
		"$d/par/manifest.json")
	exact=$(sed -n 's/^rank \([0-9]*\): comm bytes sent \([0-9]*\)$/\1 \2/p' "$tmp/log" | sort -n |
		awk -v k="$k8" -v m="$manifest" 'BEGIN { n = split(m, mb, ",") }
			{ if ($2 != mb[NR] * k) bad = 1; c++ } END { print ((bad || c != n) ? "FAIL" : "equal") }')
	[ "$exact" = equal ] || fail=1
	diff8=$(npy_diff "$d/par/res/output_0.npy" "$d/direct.npy") || { fail=1; diff8="$diff8 FAIL"; }
	bytes=$(echo "$counted" | awk -F, '{ for (i = 2; i <= NF; i++) if ($i != $1) { print $0; exit } print $1 " each" }')
	printf '%-24s %-16s %5s %9s %12s  %-22s %-8s %s\n' "$name" "$strat" "$ranks" "$k8" "$(us "$t8" "$k8")" "$bytes" \
		"$exact" "$diff8" >>"$tmp/table_b"
}

python3 tools/gen_matmul_relu.py --m 1024 --k 1024 --n 1024 -o "$tmp/matmul_relu_1024.ir"
python3 tools/gen_gpt.py --layers 1 --hidden 512 --seq 128 --batch 4 --heads 8 --devices 8 --megatron --mp 4 \
	--seed 1 -o "$tmp/gpt_512.ir"
echo "bench: generated programs (cpu backend, OpenBLAS 1 thread/rank, $(nproc) cores; K runs for ~${seconds} s, best of $repeat)"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
: >"$tmp/table_a"
: >"$tmp/table_b"
bench_case seed_16x32x16 ir-samples/matmul_relu_semi.ir "mm (2,4),(4,1)" matmul_relu 16 32 16
bench_case seed_1024x1024x1024 "$tmp/matmul_relu_1024.ir" "mm (2,4),(4,1)" matmul_relu 1024 1024 1024
bench_case transformer_64x256 ir-samples/transformer_block.ir "dp2 x mp4" transformer 4 16 256 8 1024 --seed 1
bench_case gpt1_512x512_ffn2048 "$tmp/gpt_512.ir" "dp2 x mp4" transformer 4 128 512 8 2048 --prefix l0. --seed 1

# (c) mixed precision: one training step of the GPT layer on 1 rank, the
# train block's precision "bf16" against Float32 (tools/gen_gpt.py --train --precision)
: >"$tmp/table_c"
for prec in fp32 bf16; do
	python3 tools/gen_gpt.py --layers 1 --hidden 512 --seq 128 --batch 4 --heads 8 --devices 1 --train \
		--precision "$prec" --seed 1 -o "$tmp/gpt_train_$prec.ir"
	"$shardc" "$tmp/gpt_train_$prec.ir" -o "$tmp/train_$prec" --parallel-mode stand_alone
	make -s -C "$tmp/train_$prec" >/dev/null
	k=$(calibrate "$tmp/train_$prec/run.sh" --output-dir "$tmp/train_$prec/res")
	t=$(best "$k" "$tmp/train_$prec/run.sh" --output-dir "$tmp/train_$prec/res")
	loss=$(sed -n 's/^step: 1, loss is \([^,]*\).*/\1/p' "$tmp/log")
	slab=$(sed -n 's/.*sc_slab(rt, \([0-9]*\)).*/\1/p' "$tmp/train_$prec/rank_0.c")
	printf '%-24s %-9s %9s %12s %14s  %s\n' gpt1_512x512_ffn2048 "$prec" "$k" "$(us "$t" "$k")" "$slab" "$loss" \
		>>"$tmp/table_c"
done

echo
echo "(a) 1 rank (--parallel-mode stand_alone) against the same model by hand (tools/bench_direct.c)"
printf '%-24s %9s %12s %12s %7s %-9s %s\n' model "runs K" "program us" "direct us" ratio target "max|diff|"
cat "$tmp/table_a"
echo
echo "(b) 8 ranks, the model's own strategies (mpirun --oversubscribe on $(nproc) cores)"
printf '%-24s %-16s %5s %9s %12s  %-22s %-8s %s\n' model strategies ranks "runs K" "us/run" "bytes/rank/run" \
	manifest "max|diff|"
cat "$tmp/table_b"
echo
echo "(c) 1 rank, one training step (forward, backward, SGD), precision fp32 against bf16 (Float32 master"
echo "    weights; MatMul and elementwise in BFloat16: each widened to Float32, computed, rounded once)"
printf '%-24s %-9s %9s %12s %14s  %s\n' model precision "steps K" "us/step" "slab bytes" "step 1 loss"
cat "$tmp/table_c"
echo
echo "us = microseconds per run of the forward graph (in (c), per training step); bytes/rank/run = run.sh's 'comm bytes sent' / K,"
echo "'manifest' = equal when every rank's count is K x manifest.json's comm_bytes_per_rank;"
echo "max|diff| = largest difference of output_0.npy from bench_direct's output."
echo "load average before: $load0, after: $(cut -d' ' -f1-3 /proc/loadavg) (the machine is shared: other load skews both sides)"
[ "$fail" = 0 ] || { echo "bench_programs: FAILED (an output or a byte count is wrong)"; exit 1; }
