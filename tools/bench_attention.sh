#!/usr/bin/env bash
# bench_attention.sh SHARDC [RUNS]: FlashAttentionScore against the unfused
# attention it replaces (BatchMatMul, Mul by the scale, Softmax, BatchMatMul),
# a training step each (forward and backward), 1 rank, CPU backend.
#
# q, k and v (1, 4, 1024, 64) are parameters (so every gradient runs) and
# the loss is the MSE of the context against a target; no projections, so
# the step is the attention's. Each model runs RUNS times (default 3), 10
# steps, printing its programs' `time:` line. Then both compiled (not run)
# at S = 4096 (B 1, N 2, D 64), printing the slab each program's plan takes:
# the unfused one holds (S, S) scores and probabilities, the flash one none.
# Run it with `env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE` as the other
# benchmarks are.
set -eu
shardc=$(realpath "${1:?usage: bench_attention.sh SHARDC [RUNS]}")
runs=${2:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
model() {   # model NAME B N S D FLASH
	local name=$1 b=$2 n=$3 s=$4 d=$5 flash=$6 t
	t="<Parameter[Float32], ($b, $n, $s, $d)>"
	{
		echo "context { device_num: 1, seed: 1 }"
		echo "graph @$name(%q: $t = normal(0.5), %k: $t = normal(0.5), %v: $t = normal(0.5),"
		echo "             %target: <Tensor[Float32], ($b, $n, $s, $d)> = uniform(-1, 1)) {"
		if [ "$flash" = 1 ]; then
			echo "  %ctx = FlashAttentionScore(%q, %k, %v) {head_num: $n, scale_value: 0.125}"
		else
			echo "  %scores = BatchMatMul(%q, %k) {transpose_b: true}"
			echo "  %scaled = Mul(%scores, 0.125)"
			echo "  %probs = Softmax(%scaled) {axis: -1}"
			echo "  %ctx = BatchMatMul(%probs, %v)"
		fi
		echo "  %loss = MSELoss(%ctx, %target)"
		echo "  return %loss"
		echo "}"
		echo "train { loss: %loss, optimizer: SGD(learning_rate: 0.1), steps: 10 }"
	} >"$tmp/$name.ir"
}
model unfused 1 4 1024 64 0
model flash 1 4 1024 64 1
for m in unfused flash; do
	"$shardc" "$tmp/$m.ir" -o "$tmp/$m"
	make -s -C "$tmp/$m" >/dev/null
done
for ((i = 1; i <= runs; i++)); do
	for m in unfused flash; do
		echo "== $m, S 1024, run $i"
		"$tmp/$m/run.sh" --output-dir "$tmp/res" 2>/dev/null | grep -E '^time:'
	done
done
model unfused_4096 1 2 4096 64 0
model flash_4096 1 2 4096 64 1
for m in unfused_4096 flash_4096; do
	"$shardc" "$tmp/$m.ir" -o "$tmp/$m"
	echo "== $m (compiled, not run): $(grep -o 'sc_slab(rt, [0-9]*' "$tmp/$m/program.c" | head -1 | sed 's/.*, //') bytes of slab"
done
