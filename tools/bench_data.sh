#!/usr/bin/env bash
# bench_data.sh SHARDC [RUNS]: what reading --data costs a step (docs/benchmarks.md,
# Data that streams).
#
# Two training models on 2 ranks (data_parallel), each run RUNS times (default
# 3) on the CPU backend, printing the programs' own `data:` line (the reader
# thread's time a batch against a step, the time a step waited for it and
# put its batch in place; the slowest rank's) and the `time:` line:
#   lm    a language-model head on GPT-2's vocabulary (wte 50257 x 128, tied),
#         ids (8, 128) and labels from a 4,000,000-token llm.c .bin, S = 128,
#         shuffled: 10 steps, a few KB read a step;
#   wide  a linear classifier on a .npy dataset of 4,096 rows of 4,096 float32
#         (64 MiB, 16 batches of 256): 400 steps, 2 MiB a rank a step, which
#         the step reads where the file is mapped; then the same model fed
#         one batch of 256 rows over and over (the reader's path, the data
#         warm in the cache) and with no --data (inputs on initializers):
#         the three steps' times apart are what a new batch costs the step.
set -eu
shardc=$(realpath "${1:?usage: bench_data.sh SHARDC [RUNS]}")
runs=${2:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/lm.ir" <<'EOF'
context { device_num: 2, parallel_mode: "data_parallel", seed: 1 }
graph @lm(%ids: <Tensor[Int32], (8, 128)> = randint(0, 50257),
          %labels: <Tensor[Int32], (1024,)> = randint(0, 50257),
          %wte: <Parameter[Float32], (50257, 128)> = normal(0.02),
          %w: <Parameter[Float32], (128, 128)> = normal(0.05)) {
  %h = Gather(%wte, %ids) {axis: 0}
  %f = Reshape(%h) {shape: (1024, 128)}
  %a = MatMul(%f, %w)
  %g = GeLU(%a)
  %logits = MatMul(%g, %wte) {transpose_b: true}
  %loss = SparseSoftmaxCrossEntropyWithLogits(%logits, %labels)
  return %loss
}
train { loss: %loss, optimizer: SGD(learning_rate: 0.1), steps: 10 }
EOF
cat >"$tmp/wide.ir" <<'EOF'
context { device_num: 2, parallel_mode: "data_parallel", seed: 1 }
graph @wide(%x: <Tensor[Float32], (256, 4096)> = uniform(-1, 1),
            %label: <Tensor[Int32], (256,)> = randint(0, 16),
            %w: <Parameter[Float32], (4096, 16)> = normal(0.01)) {
  %logits = MatMul(%x, %w)
  %loss = SparseSoftmaxCrossEntropyWithLogits(%logits, %label)
  return %loss
}
train { loss: %loss, optimizer: SGD(learning_rate: 0.1), steps: 40 }
EOF
/usr/bin/python3 - "$tmp" <<'EOF'
import sys
import numpy as np
d, rng = sys.argv[1], np.random.default_rng(0)
t = rng.integers(0, 50257, 4_000_000).astype(np.uint16)
head = np.zeros(256, np.int32)
head[:3] = (20240520, 1, len(t))
open(d + "/tok.bin", "wb").write(head.tobytes() + t.tobytes())
np.save(d + "/x.npy", rng.uniform(-1, 1, (4096, 4096)).astype(np.float32))
np.save(d + "/label.npy", rng.integers(0, 16, 4096).astype(np.int32))
np.save(d + "/x1.npy", np.load(d + "/x.npy")[:256])
np.save(d + "/label1.npy", np.load(d + "/label.npy")[:256])
EOF
for m in lm wide; do
	"$shardc" "$tmp/$m.ir" -o "$tmp/$m"
	make -s -C "$tmp/$m" >/dev/null
done
for ((i = 1; i <= runs; i++)); do
	echo "== lm, run $i"
	"$tmp/lm/run.sh" --output-dir "$tmp/res" --data "ids=$tmp/tok.bin:128" --labels labels --shuffle 3 |
		grep -E '^(data|time):'
	echo "== wide, run $i"
	"$tmp/wide/run.sh" --output-dir "$tmp/res" --steps 400 --data "x=$tmp/x.npy" --data "label=$tmp/label.npy" |
		grep -E '^(data|time):'
	echo "== wide, one batch over and over, run $i"
	"$tmp/wide/run.sh" --output-dir "$tmp/res" --steps 400 --data "x=$tmp/x1.npy" --data "label=$tmp/label1.npy" |
		grep -E '^time:'
	echo "== wide, no --data, run $i"
	"$tmp/wide/run.sh" --output-dir "$tmp/res" --steps 400 2>/dev/null | grep -E '^time:'
done
