#!/usr/bin/env bash
# run_data.sh SHARDC: inputs that stream, run.sh --data end to end
# (docs/output.md, Data that streams).
#
# numpy writes the data here: a .npy dataset for ir-samples/data_parallel_mlp.ir
# (x (80, 32) and label (80,): 5 batches of 16) and one token stream of 150
# ids under 48 for tests/e2e/tied_embedding.ir (ids (8, 4) and labels (32,),
# S = 4: 8 samples a step, 37 in the stream, so the batches wrap inside a
# step) as llm.c's .bin, a headerless uint16 .bin and an int32 .npy. Each
# model runs 7 steps (past the end of the data) on 1, 2, 4 and 8 ranks, in
# order and with --shuffle, and must print the same loss lines and write the
# same results, within the e2e tolerance (2e-3), as tools/ref_eval.py given
# the same options, which reads the whole file by the documented rule; the
# bytes counted at run time equal the manifest's. The token stream also runs
# with ids split inside the samples (--dataset-strategy ((2, 4), (8,)): each
# rank reads one token of each of 4 samples), with the plan the double-recursive
# search chooses on 8 ranks, and into an inference model
# (matmul_relu_semi: the outputs are the last step's batch's); both models
# again with accumulate_steps, on 1 and 4 ranks. Then bad
# inputs on 2 ranks: each gives a message naming the input and the file and
# a non-zero exit, without a hang. Last line: N passed, N failed.
set -u
shardc=$(realpath "${1:?usage: run_data.sh SHARDC}")
py=/usr/bin/python3
root=$(pwd)
. "$(dirname "$0")/lib.sh"   # $tmp, ok, bad, CFLAGS

"$py" - "$tmp" <<'PY' || { echo "FAIL cannot write the data"; exit 1; }
import sys
import numpy as np
d = sys.argv[1]
rng = np.random.default_rng(20240520)
np.save(d + "/x.npy", rng.uniform(-1, 1, (80, 32)).astype(np.float32))
np.save(d + "/label.npy", rng.integers(0, 10, 80).astype(np.int32))
tok = rng.integers(0, 48, 150).astype(np.uint16)
head = np.zeros(256, np.int32)
head[:3] = (20240520, 1, len(tok))
open(d + "/tok.bin", "wb").write(head.tobytes() + tok.tobytes())
open(d + "/raw.bin", "wb").write(tok.tobytes())
np.save(d + "/tok.npy", tok.astype(np.int32))
# bad inputs
np.save(d + "/x_rows.npy", np.zeros((81, 32), np.float32))    # 81 rows: no whole number of batches of 16
np.save(d + "/x_cols.npy", np.zeros((80, 31), np.float32))
np.save(d + "/x_f64.npy", np.zeros((80, 32), np.float64))
open(d + "/short.bin", "wb").write(tok[:20].tobytes())         # one step needs 33 tokens
far = tok.copy()
far[70] = 48                                                   # read at step 3 (tokens 64..96)
open(d + "/far.bin", "wb").write(far.tobytes())
np.save(d + "/mm.npy", rng.uniform(0, 1, (48, 32)).astype(np.float32))
np.save(d + "/label_short.npy", rng.integers(0, 10, 32).astype(np.int32))   # 2 batches of 16 where x has 5
PY

# compile MODEL DIR N [ARGS]: shardc for N ranks into DIR; its status
compile() {
	local model=$1 dir=$2 n=$3
	shift 3
	"$shardc" "$model" -o "$dir" --device-num "$n" "$@" 2>"$tmp/err" && make -s -C "$dir" >/dev/null 2>"$tmp/err"
}

# check NAME MODEL DIR RUNARGS...: DIR's run.sh and the reference with the same
# --data options, 7 steps; the loss lines, results and bytes compared.
check() {
	local name=$1 model=$2 dir=$3 res ref msg
	shift 3
	# fresh folders each check ($RANDOM's 32,768 names collided in about one run in ten,
	# and a reference folder then held another model's parameters too)
	res=$(mktemp -d "$dir/res_XXXXXX") ref=$(mktemp -d "$tmp/ref_XXXXXX")
	if ! (cd "$dir" && timeout 300 ./run.sh --output-dir "$res" --steps 7 "$@") >"$res/log" 2>"$res/err"; then
		bad "$name: run.sh fails: $(tail -3 "$res/err")"
		return
	fi
	if ! "$py" tools/ref_eval.py "$model" --shardc "$shardc" --output-dir "$ref" --steps 7 "$@" >"$ref/log" 2>"$ref/err"; then
		bad "$name: the reference fails: $(head -3 "$ref/err")"
		return
	fi
	if msg=$("$py" tools/npy_compare.py "$res" "$ref" --what "vs reference" --manifest "$dir/manifest.json"); then
		ok "$name: $(echo "$msg" | grep -o 'worst.*' | tr '\n' ' ')"
		grep -m1 '^data: ' "$res/log" >"$tmp/last_data_line"
	else
		bad "$name: $msg"
	fi
}

mlp=ir-samples/data_parallel_mlp.ir
tied=tests/e2e/tied_embedding.ir
for n in 1 2 4 8; do
	if compile "$mlp" "$tmp/mlp$n" "$n"; then
		check "mlp .npy dataset on $n ranks" "$mlp" "$tmp/mlp$n" --data "x=$tmp/x.npy" --data "label=$tmp/label.npy"
		check "mlp .npy dataset on $n ranks, --shuffle 3" "$mlp" "$tmp/mlp$n" --data "x=$tmp/x.npy" \
			--data "label=$tmp/label.npy" --shuffle 3
	else
		bad "mlp on $n ranks: shardc or make fails: $(head -3 "$tmp/err")"
	fi
	if compile "$tied" "$tmp/tied$n" "$n"; then
		check "token stream (llm.c .bin) on $n ranks" "$tied" "$tmp/tied$n" --data "ids=$tmp/tok.bin:4" --labels labels
		check "token stream (llm.c .bin) on $n ranks, --shuffle 5" "$tied" "$tmp/tied$n" --data "ids=$tmp/tok.bin:4" \
			--labels labels --shuffle 5
	else
		bad "tied_embedding on $n ranks: shardc or make fails: $(head -3 "$tmp/err")"
	fi
done
# accumulate_steps: each micro-batch reads the next batch (micro-batch m of
# step s the run's batch (s - 1) N + m), past the end of the data and
# shuffled, as the reference reads them.
sed 's/^train {/train {accumulate_steps: 3, /' "$mlp" >"$tmp/mlp_acc.ir"
sed 's/^train {/train {accumulate_steps: 2, /' "$tied" >"$tmp/tied_acc.ir"
for n in 1 4; do
	if compile "$tmp/mlp_acc.ir" "$tmp/mlp_acc$n" "$n"; then
		check "mlp .npy dataset, accumulate_steps 3, on $n ranks, --shuffle 3" "$tmp/mlp_acc.ir" "$tmp/mlp_acc$n" \
			--data "x=$tmp/x.npy" --data "label=$tmp/label.npy" --shuffle 3
	else
		bad "mlp with accumulate_steps on $n ranks: shardc or make fails: $(head -3 "$tmp/err")"
	fi
	if compile "$tmp/tied_acc.ir" "$tmp/tied_acc$n" "$n"; then
		check "token stream (llm.c .bin), accumulate_steps 2, on $n ranks" "$tmp/tied_acc.ir" "$tmp/tied_acc$n" \
			--data "ids=$tmp/tok.bin:4" --labels labels
	else
		bad "tied_embedding with accumulate_steps on $n ranks: shardc or make fails: $(head -3 "$tmp/err")"
	fi
done
check "token stream (headerless .bin) on 2 ranks" "$tied" "$tmp/tied2" --data "ids=$tmp/raw.bin:4" --labels labels
check "token stream (int32 .npy) on 4 ranks, --shuffle 9" "$tied" "$tmp/tied4" --data "ids=$tmp/tok.npy:4" \
	--labels labels --shuffle 9
if compile "$tied" "$tmp/tied8seq" 8 --parallel-mode semi_auto_parallel --dataset-strategy '((2, 4), (8,))'; then
	check "token stream, samples split over 4 ranks (ids (2, 4) ways) on 8 ranks" "$tied" "$tmp/tied8seq" \
		--data "ids=$tmp/tok.bin:4" --labels labels
else
	bad "tied_embedding split along the samples: shardc or make fails: $(head -3 "$tmp/err")"
fi
if compile "$tied" "$tmp/tied8s" 8 --parallel-mode auto_parallel --search-mode recursive_programming; then
	check "token stream on 8 ranks, the double-recursive search's plan, --shuffle 5" "$tied" "$tmp/tied8s" \
		--data "ids=$tmp/tok.bin:4" --labels labels --shuffle 5
else
	bad "tied_embedding with the search's plan: shardc or make fails: $(head -3 "$tmp/err")"
fi
if compile ir-samples/matmul_relu_semi.ir "$tmp/mm8" 8; then
	check "inference (matmul_relu_semi) on 8 ranks, --shuffle 1: the last step's batch" ir-samples/matmul_relu_semi.ir \
		"$tmp/mm8" --data "x=$tmp/mm.npy" --shuffle 1
fi
[ -s "$tmp/last_data_line" ] && echo "     (the last run's reader: $(cat "$tmp/last_data_line"))"

# wrong NAME DIR WANT ARGS...: run.sh must exit non-zero within 60 s with WANT in its output.
wrong() {
	local what=$1 dir=$2 want=$3 status
	shift 3
	(cd "$dir" && timeout 60 ./run.sh --output-dir "$tmp/wrong" --steps 7 "$@") >"$tmp/log" 2>&1
	status=$?
	if [ $status = 0 ] || [ $status = 124 ]; then
		bad "bad input ($what): exit $status (want a non-zero exit, no hang)"
	elif ! grep -q -- "$want" "$tmp/log"; then
		bad "bad input ($what): no message with '$want': $(grep -m2 shardc "$tmp/log")"
	else
		ok "bad input ($what): exit $status, $(grep -m1 -- "$want" "$tmp/log")"
	fi
}
m=$tmp/mlp2 t=$tmp/tied2
wrong "missing file" "$m" "input 'x': --data $tmp/none.npy cannot be opened: No such file or directory" \
	--data "x=$tmp/none.npy"
wrong "rows not a multiple of the batch" "$m" \
	"input 'x': --data $tmp/x_rows.npy has shape (81, 32), expected (N, 32) with N a multiple of 16" --data "x=$tmp/x_rows.npy"
wrong "shape" "$m" "input 'x': --data $tmp/x_cols.npy has shape (80, 31), expected (N, 32)" --data "x=$tmp/x_cols.npy"
wrong "dtype" "$m" "input 'x': --data $tmp/x_f64.npy has dtype '<f8'" --data "x=$tmp/x_f64.npy"
wrong "an input and its labels of different batch counts" "$m" \
	"--data $tmp/x.npy holds 5 batches of 16 rows but --data $tmp/label_short.npy holds 2 of 16" \
	--data "x=$tmp/x.npy" --data "label=$tmp/label_short.npy"
wrong "token stream too short" "$t" \
	"input 'ids': --data $tmp/short.bin holds 20 tokens (headerless .bin, uint16), too few for one step: 8 samples of 5 tokens need 33" \
	--data "ids=$tmp/short.bin:4" --labels labels
wrong "token outside the vocabulary at step 3" "$t" \
	"input 'ids': --data $tmp/far.bin holds 48 at token 70 (read for step 3), outside \[0, 48): they index Gather %h's table %wte" \
	--data "ids=$tmp/far.bin:4" --labels labels
grep -q '^step: 2, ' "$tmp/log" && ! grep -q '^step: 3, ' "$tmp/log" && ok "the bad token stops the run at step 3" ||
	bad "the bad token does not stop the run at step 3: $(grep '^step' "$tmp/log" | tr '\n' ' ')"
wrong "samples that do not divide the input" "$t" "cannot be cut into samples of 3 tokens for 'ids'" \
	--data "ids=$tmp/tok.bin:3" --labels labels
wrong "a token stream into a float input" "$m" "is a token stream, which feeds Int32 or Int64 inputs; 'x' is float32" \
	--data "x=$tmp/tok.bin:32"
wrong "unknown input" "$m" "the model has no input named 'y' (it has: x label)" --data "y=$tmp/x.npy"
wrong "a parameter" "$m" "the model has no input named 'fc1.bias'" --data "fc1.bias=$tmp/x.npy"
wrong "--input and --data" "$m" "input 'x' is given by both --input and --data" --data "x=$tmp/x.npy" --input "x=$tmp/x.npy"
wrong "--labels without a token stream" "$m" "--labels label needs exactly one token stream" --data "x=$tmp/x.npy" \
	--labels label
wrong "--shuffle without --data" "$m" "--shuffle 3 without --data" --shuffle 3
wrong "--shuffle not a number" "$t" "--shuffle 'abc': expected a seed" --data "ids=$tmp/tok.bin:4" --shuffle abc
echo "data: $pass passed, $fail failed"
[ $fail = 0 ]
