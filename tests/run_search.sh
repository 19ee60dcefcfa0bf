#!/bin/sh
# run_search.sh SHARDC [FAST_SHARDC]: the strategy search end to end (SHARDC
# the sanitized build; FAST_SHARDC, default SHARDC, the optimized one for the
# second 13B pipeline row, which ASan makes three times slower: the first
# runs the same search under ASan).
#   - strategy files: every sample and a GPT-style stack compiled with
#     --strategy-out, then again with --strategy-in, give the same per-rank
#     programs and manifest.json byte for byte, pipelines too (their stage
#     count and each operator's stage read back, micro_batches "auto" its
#     count, a count the batch does not split into an error);
#   - micro_batches "auto" where the batch leaves dim 0: one micro-batch,
#     and --explain says why;
#   - the stage split by seconds, where it costs less than by work;
#   - Megatron: a GPT-style stack with no annotations, searched by the
#     double-recursive search on 8 devices, needs no more communication per
#     rank (manifest.json's comm_bytes_per_rank) than the same stack with
#     tools/gen_gpt.py's hand-written Megatron column/row strategies, forward
#     only and with training (--train: forward and backward of one step);
#   - --strategy-in skips the search (and its memory estimate);
#   - --dot: the MatMul -> ReLU sample's DOT equals tests/dot/matmul_relu_semi.dot
#     (with --check and with -o), is written whole (no FILE.tmp left behind),
#     a write error is exit 4, a pipeline's stages are boxes with SendRecv
#     edges between them, and the DOT parses with graphviz's `dot` when
#     it is installed (UPDATE=1 rewrites the expected file);
#   - bench-search at small scale, also on devices small enough for memory
#     to bind: D-Rec costs no more than the hand plans that fit, no operator
#     has a runner-up that is cheaper and fits, and the search's memory
#     figure is the slab, there and on every sample;
#   - pipeline stages: with pipeline_stages "auto" the search is no worse
#     than the best hand 3-D plan at small scale, its memory the slab;
#   - GPT 1.3B on 8 devices and 13B on 64 at batch 8 a device fit 80e9-byte
#     devices by the memory savings the search switches on (--explain);
#   - a shard Call's result only the graph reads is not gathered whole;
#   - a forward graph's result is handed over whole (full_batch) or split
#     along dim 0 (data_parallel), and the search prices the hand-over;
#   - a Megatron GPT layer trained (hidden 256, seq 128, batch 8, 8 heads)
#     sends no more bytes a rank than the real MindSpore does on the same
#     strategies: 3,942,151 at 8 devices (dp 2 x mp 4), 1,616,615 at 64
#     (dp 8 x mp 8): the backward pass completes gradients lazily there;
#   - sharding propagation in training, from only the MatMuls' Megatron
#     strategies (an FFN, a GPT layer; dp 2 x mp 4 on 8 devices and dp 8 x
#     mp 8 on 64), costs no more by the cost model (--explain's total) than
#     the whole Megatron plan;
#   - when the double-recursive search computes everything whole on every
#     device (a small GPT layer trained on 8), --explain says why: the
#     cheapest plan that splits and its cost;
#   - a GPT layer too small to split over 8 nodes of 8 (hidden 1,024 trained
#     on 64) is split inside each node and repeated across the nodes (the
#     copies on the slowest axis), at no more than its cost on one node's 8
#     devices and under 0.75 of its cost computed whole, and that plan's
#     Layouts read back from strategy.json;
#   - a tied embedding in bf16 (tests/e2e/tied_embedding.ir on 2 ranks): its
#     gradient is reduced once, in Float32, not once more as its BFloat16 copy.
# Last line: N passed, N failed.
shardc=${1:?usage: run_search.sh SHARDC [FAST_SHARDC]}
fast_shardc=${2:-$shardc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }

# comm_bytes_per_rank's largest entry.
comm_bytes() {
	/usr/bin/python3 -c 'import json, sys; print(max(json.load(open(sys.argv[1]))["comm_bytes_per_rank"]))' "$1"
}

python3 tools/gen_gpt.py --layers 3 --devices 8 --mode auto_parallel --search recursive_programming -o "$tmp/gpt_drec.ir"
python3 tools/gen_gpt.py --layers 3 --devices 8 --mode auto_parallel --search sharding_propagation --megatron \
	--mp 2 -o "$tmp/gpt_prop.ir"
for f in ir-samples/*.ir "$tmp/gpt_drec.ir" "$tmp/gpt_prop.ir"; do
	name=$(basename "$f" .ir)
	out="$tmp/$name"
	if ! "$shardc" "$f" -o "$out.a" --dump-ir --strategy-out "$out.json" 2>"$tmp/err"; then
		bad "$f does not compile"; cat "$tmp/err"; continue
	fi
	if ! "$shardc" "$f" -o "$out.b" --dump-ir --strategy-in "$out.json" 2>"$tmp/err"; then
		bad "$f does not compile with --strategy-in"; cat "$tmp/err"; continue
	fi
	rm -rf "$out.a/ir/00_parsed.ir" "$out.b/ir/00_parsed.ir"
	if diff -r "$out.a" "$out.b" >"$tmp/diff"; then ok; else bad "$f: --strategy-in gives other programs"; head -20 "$tmp/diff"; fi
done

# Pipeline stages back from the file: stages written (pipeline_mlp), a
# count given with the search's split (a GPT stack), and "auto" with the
# memory savings its search switched on given again (pipeline_auto), and
# with micro_batches "auto" the micro-batch count (with stages and
# without): the same programs. An edited stage that reads a later stage's
# value, or that differs from the stage the model writes, is an error at
# its entry; a micro-batch count the batch does not split into, at the
# inputs.
python3 tools/gen_gpt.py --layers 4 --devices 8 --mode auto_parallel --search recursive_programming --train \
	--pipeline 2 --micro-batches 4 -o "$tmp/gpt_pp2.ir"
echo '{"device_memory": 40000}' >"$tmp/c40k.json"
echo '{"device_memory": 4e5}' >"$tmp/c400k.json"
echo '{"device_memory": 2.5e6}' >"$tmp/c2500k.json"
# MODEL [OPTIONS]|OPTIONS GIVEN AGAIN|WHAT THE FILE HOLDS
for spec in 'tests/e2e/pipeline_mlp.ir||"stage": 1' "$tmp/gpt_pp2.ir||\"stage\": 1" \
	"tests/e2e/pipeline_auto.ir --cluster $tmp/c40k.json|--parallel-optimizer level3 --recompute|\"stage\": 1" \
	"tests/e2e/pipeline_micro_auto.ir --cluster $tmp/c400k.json|--parallel-optimizer level3 --recompute|\"micro_batches\": [2-9]" \
	"tests/e2e/micro_auto.ir --cluster $tmp/c2500k.json||\"micro_batches\": [2-9]"; do
	model=${spec%%|*} rest=${spec#*|}
	again=${rest%%|*} holds=${rest#*|}
	name=$(basename "${model%% *}" .ir)
	# shellcheck disable=SC2086  # model and again are word lists
	if "$shardc" $model -o "$tmp/$name.pa" --strategy-out "$tmp/$name.pjson" 2>"$tmp/err" &&
	   "$shardc" $model $again -o "$tmp/$name.pb" --strategy-in "$tmp/$name.pjson" 2>>"$tmp/err" &&
	   grep -q "$holds" "$tmp/$name.pjson" && diff -r "$tmp/$name.pa" "$tmp/$name.pb" >"$tmp/diff"; then ok
	else bad "$name: --strategy-in does not give the programs back: $(head -3 "$tmp/err" "$tmp/diff")"; fi
done
sed 's/"micro_batches": [0-9]*/"micro_batches": 3/' "$tmp/micro_auto.pjson" >"$tmp/micro3.json"
if "$shardc" tests/e2e/micro_auto.ir --strategy-in "$tmp/micro3.json" --check 2>"$tmp/err"; then
	bad "--strategy-in with 3 micro-batches of a batch of 128 rows: accepted"
elif grep -q "input %x has 128 rows, which 3 micro-batches do not split evenly" "$tmp/err"; then ok
else bad "--strategy-in with micro-batches the batch does not split into: $(head -2 "$tmp/err")"; fi
# A batch that leaves dim 0 (a Transpose of it) cannot be split: the search
# keeps one micro-batch and --explain says why for each count it tried.
cat >"$tmp/moved_batch.ir" <<'EOF'
context { device_num: 2, parallel_mode: "auto_parallel", search_mode: "recursive_programming" }
graph @net(%x: <Tensor[Float32], (8, 4, 16)> = uniform(-1, 1), %t: <Tensor[Float32], (8, 4, 16)> = uniform(-1, 1),
           %w: <Parameter[Float32], (4, 16, 16)> = normal(0.1)) {
  %xt = Transpose(%x) {perm: (1, 0, 2)}
  %y = BatchMatMul(%xt, %w)
  %tt = Transpose(%t) {perm: (1, 0, 2)}
  %loss = MSELoss(%y, %tt)
  return %loss
}
train { loss: %loss, optimizer: SGD(learning_rate: 0.1), micro_batches: "auto" }
EOF
if "$shardc" "$tmp/moved_batch.ir" --check --explain >"$tmp/mb.txt" 2>"$tmp/err" &&
   grep -q "^# chose 1 micro-batch a step" "$tmp/mb.txt" &&
   grep -q "2 micro-batches: micro_batches \"auto\": in 2 micro-batches %xt is (4, 4, 16) where the step's batch makes it (4, 8, 16): the batch (each input's dim 0) must stay dim 0" "$tmp/mb.txt"
then ok; else bad "micro_batches auto with the batch moved off dim 0: $(grep -m3 'micro-batch' "$tmp/mb.txt") $(head -2 "$tmp/err")"; fi
# Outside auto_parallel nothing picks the count: with stages, a warning.
sed 's/parallel_mode: "auto_parallel"/parallel_mode: "semi_auto_parallel"/; s/pipeline_stages: "auto"/pipeline_stages: 2/' \
	tests/e2e/pipeline_micro_auto.ir >"$tmp/semi_micro.ir"
if "$shardc" "$tmp/semi_micro.ir" --check 2>"$tmp/err" &&
   grep -q 'warning: micro_batches "auto" is the search.s (auto_parallel): in semi_auto_parallel mode the 2 stages run the step.s batch as one micro-batch' "$tmp/err"
then ok; else bad "micro_batches auto in semi_auto_parallel with stages: no warning: $(head -3 "$tmp/err")"; fi
# The split by seconds (tests/e2e/pipeline_cost_split.ir: the AllReduce
# layers last): the search takes it over the split by work, which costs more.
if "$shardc" tests/e2e/pipeline_cost_split.ir --explain --check >"$tmp/cs.txt" 2>"$tmp/err" &&
   python3 - "$tmp/cs.txt" <<'PY'
import re, sys
m = re.search(r"cost ([0-9.e+-]+) s, .*; split by seconds \(by work: cost ([0-9.e+-]+) s", open(sys.argv[1]).read())
sys.exit(not (m and float(m.group(1)) < float(m.group(2))))
PY
then ok; else bad "pipeline_cost_split: the stages not split by seconds: $(grep -m2 'stages of' "$tmp/cs.txt")"; fi
python3 - "$tmp/gpt_pp2.pjson" >"$tmp/moved.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
s["operators"][0]["stage"] = 1   # the first operator on the last stage: its readers on stage 0 read a later stage
json.dump(s, sys.stdout, indent=1)
PY
python3 - "$tmp/pipeline_mlp.pjson" >"$tmp/unwritten.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
s["operators"][-2]["stage"] = 0   # against the model's pipeline_stage 1 on its last layer
json.dump(s, sys.stdout, indent=1)
PY
if "$shardc" tests/e2e/pipeline_mlp.ir --strategy-in "$tmp/unwritten.json" --check 2>"$tmp/err"; then
	bad "--strategy-in moving an operator off the stage the model writes: accepted"
elif grep -q "unwritten.json:[0-9]*:[0-9]*: error: .* runs on stage 1 as the model's pipeline_stage attributes place it, not on stage 0" "$tmp/err"; then ok
else bad "--strategy-in moving an operator off its written stage: $(head -2 "$tmp/err")"; fi
if "$shardc" "$tmp/gpt_pp2.ir" --strategy-in "$tmp/moved.json" --check 2>"$tmp/err"; then
	bad "--strategy-in with a stage reading a later stage's value: accepted"
elif grep -q "moved.json:[0-9]*:[0-9]*: error: .* runs on stage 0 but reads .* on stage 1" "$tmp/err"; then ok
else bad "--strategy-in with a stage reading a later stage's value: $(head -2 "$tmp/err")"; fi

for train in "" --train; do
	for layers in 2 4; do
		python3 tools/gen_gpt.py --layers $layers --devices 8 --mode auto_parallel --search recursive_programming \
			$train -o "$tmp/plain.ir"
		python3 tools/gen_gpt.py --layers $layers --devices 8 --megatron $train -o "$tmp/megatron.ir"
		"$shardc" "$tmp/plain.ir" -o "$tmp/plain" && "$shardc" "$tmp/megatron.ir" -o "$tmp/megatron" ||
			{ bad "gpt $layers $train"; continue; }
		d=$(comm_bytes "$tmp/plain/manifest.json") m=$(comm_bytes "$tmp/megatron/manifest.json")
		echo "search: GPT-style stack of $layers layers on 8 devices${train:+, training}: double-recursive search" \
			"$d bytes per rank, Megatron column/row by hand $m bytes per rank (manifest.json)"
		if [ "$d" -le "$m" ]; then ok; else bad "gpt $layers layers $train: D-Rec sends $d bytes per rank, Megatron $m"; fi
	done
done

# --strategy-in skips the search: a model whose searched strategies would not
# fit a 2 MB device (the weight replicated, 4.2 MB) compiles with a loaded
# strategy file that splits the weight eight ways.
cat >"$tmp/big.ir" <<'EOF'
context {device_num: 8, parallel_mode: "auto_parallel", search_mode: "sharding_propagation"}
graph @net(%x: <Tensor[Float32], (8, 1024)> = uniform(0, 1),
           %w: <Parameter[Float32], (1024, 1024)> = normal(0.01)) {
  %y = MatMul(%x, %w)
  %z = ReLU(%y)
  return %z
}
EOF
sed 's/%y = MatMul(%x, %w)/%y = MatMul(%x, %w) {in_strategy: ((1, 1), (1, 8))}/
     s/"auto_parallel", search_mode: "sharding_propagation"/"semi_auto_parallel"/' "$tmp/big.ir" >"$tmp/big_semi.ir"
echo '{"device_memory": 2e6}' >"$tmp/small.json"
"$shardc" "$tmp/big_semi.ir" -o "$tmp/big_semi" --strategy-out "$tmp/big.json" || bad "big_semi.ir does not compile"
if "$shardc" "$tmp/big.ir" --cluster "$tmp/small.json" --check 2>"$tmp/err"; then
	bad "big.ir: the search fits a 2 MB device, the test needs it not to"
elif ! grep -q "no strategy fits" "$tmp/err"; then bad "big.ir: $(cat "$tmp/err")"; else ok; fi
tail -n +2 "$tmp/big_semi/rank_3.c" >"$tmp/want"   # line 1 names the model file
tail -n +2 "$tmp/big_semi/program.c" >"$tmp/want_program"
if "$shardc" "$tmp/big.ir" --cluster "$tmp/small.json" --strategy-in "$tmp/big.json" -o "$tmp/big" 2>"$tmp/err" &&
	tail -n +2 "$tmp/big/rank_3.c" | cmp -s - "$tmp/want" &&
	tail -n +2 "$tmp/big/program.c" | cmp -s - "$tmp/want_program"; then ok; else
	bad "--strategy-in with strategies that fit a small device: $(cat "$tmp/err")"; fi
# --dot: golden, with --check and with -o; write errors; parsing.
want=tests/dot/matmul_relu_semi.dot
if [ "${UPDATE:-0}" = 1 ]; then "$shardc" ir-samples/matmul_relu_semi.ir --check --dot "$want"; fi
if "$shardc" ir-samples/matmul_relu_semi.ir --check --dot "$tmp/mr.dot" 2>"$tmp/err" && cmp -s "$tmp/mr.dot" "$want"
then ok; else bad "--dot: matmul_relu_semi differs from $want"; diff -u "$want" "$tmp/mr.dot" | head -30; cat "$tmp/err"; fi
if "$shardc" ir-samples/matmul_relu_semi.ir -o "$tmp/mr" --dot "$tmp/mr2.dot" && cmp -s "$tmp/mr2.dot" "$want" &&
	[ -z "$(ls "$tmp" | grep '\.tmp')" ]; then ok; else bad "--dot with -o: not the same DOT, or a temporary left"; fi
"$shardc" ir-samples/matmul_relu_semi.ir --check --dot "$tmp/no/such/dir/x.dot" 2>"$tmp/err"
st=$?
if [ "$st" = 4 ] && grep -q "shardc: cannot write $tmp/no/such/dir/x.dot: No such file or directory" "$tmp/err"
then ok; else bad "--dot into a missing folder: exit $st (want 4): $(cat "$tmp/err")"; fi
# Pipeline stages: a cluster box a stage, the edge between stages a SendRecv
# (tests/e2e/pipeline_mlp.ir: 2 stages of 2 ranks, one activation crossing).
if "$shardc" tests/e2e/pipeline_mlp.ir --check --dot "$tmp/pp.dot" &&
	[ "$(grep -c 'subgraph cluster_stage' "$tmp/pp.dot")" = 2 ] &&
	grep -q 'label="pipeline stage 1: ranks 2-3"' "$tmp/pp.dot" &&
	[ "$(grep -c 'SendRecv from stage 0: 256 bytes a rank' "$tmp/pp.dot")" = 1 ]
then ok; else bad "--dot of a pipeline: no stage boxes or no SendRecv edge: $(grep stage "$tmp/pp.dot")"; fi
if command -v dot >/dev/null 2>&1; then
	for f in "$want" "$tmp/gpt_drec.ir" tests/e2e/pipeline_mlp.ir; do
		case $f in *.ir) "$shardc" "$f" --check --dot "$tmp/g.dot" || bad "--dot $f"; f=$tmp/g.dot ;; esac
		if dot -Tsvg "$f" -o "$tmp/g.svg" 2>"$tmp/err" && [ ! -s "$tmp/err" ]; then ok
		else bad "dot -Tsvg $f: $(cat "$tmp/err")"; fi
	done
else
	echo "search: graphviz's dot is not installed; the DOT files are not parsed (apt-get install graphviz)"
fi

# bench-search at small scale (tools/bench_search.py --small: each row's layer
# shapes, 2 layers, its devices and batch, Adam): D-Rec's total cost by the
# cost model is no more than every hand plan's that fits (Megatron mp 2/4/8,
# data parallel), and --explain prices given strategies (no search) too.
# Then two rows again on devices small enough for memory to bind (--memory):
# some hand plans fit and some do not (13B: mp 2 and data parallel do not, as
# at full size; 350M: only data parallel fits, and neither does the search's
# fastest plan). Everywhere the search stops at a fixed point: no
# operator's --explain runner-up costs less than its choice and fits (a
# cheaper one says "does not fit: needs N B a device", over the memory).
for spec in 13B 1.3B 350M "13B 4e9" "350M 11e9"; do
set -- $spec
if /usr/bin/python3 tools/bench_search.py "$shardc" --small --rows $1 --memory ${2:-80e9} --json "$tmp/bench.json" \
	>"$tmp/bench.md" 2>&1 && /usr/bin/python3 - "$tmp/bench.json" "${2:-}" <<'PY'
import json, sys
rs = json.load(open(sys.argv[1]))
drec = [r for r in rs if r["plan"] == "D-Rec"][0]
plans = [r for r in rs if r["plan"].startswith(("Megatron", "data"))]
hand = [r for r in plans if r.get("fits")]
if sys.argv[2]:   # a small device: memory binds
    assert 1 <= len(hand) < len(plans), plans
else:
    assert len(hand) >= 3, hand
assert drec.get("fits") and all(drec["cost"] <= h["cost"] for h in hand), (drec, hand)
assert drec["cheaper_fit"] == 0, ("runner-ups cheaper than the choice that fit", drec)
for r in rs:   # the search's memory figure is the program's slab (within 2%)
    assert "error" in r or abs(r["memory"] / r["slab"] - 1) <= 0.02, r
PY
then ok; else bad "bench_search.py --small $spec: D-Rec above a hand plan, a cheaper runner-up that fits, or memory off the slab: $(cat "$tmp/bench.md")"; fi
done
# Pipeline stages (bench_search.py --small --rows 13B/64pp: GPT 13B's layers,
# 4 of them, on 64 devices, a step's batch 512 in M micro-batches): the
# search with pipeline_stages "auto" at its best M costs no more than the best
# hand 3-D plan (tensor t, pipeline p, data the rest, M in {p, 2p, 4p}) that
# fits, says how many stages it chose, and its memory figure is the slab on
# every row (pipeline plans included: a stage's parameters and the
# micro-batches it holds). On 12e9-byte devices no hand 3-D plan fits and
# the search's plan does.
for mem in 80e9 12e9; do
bin=$shardc
[ $mem = 12e9 ] && bin=$fast_shardc
if /usr/bin/python3 tools/bench_search.py "$bin" --small --rows 13B/64pp --memory $mem --json "$tmp/pp.json" \
	>"$tmp/pp.md" 2>&1 && /usr/bin/python3 - "$tmp/pp.json" $mem <<'PY'
import json, sys
rs = json.load(open(sys.argv[1]))
search = [r for r in rs if r["plan"].startswith("D-Rec")]
hand = [r for r in rs if r["plan"].startswith("tensor")]
assert search and hand and all("stages" in r for r in search), rs
fit = [r["cost"] for r in hand if r.get("fits")]
best = min(r["cost"] for r in search if r.get("fits"))
if float(sys.argv[2]) >= 80e9:
    assert fit and best <= min(fit), (best, fit)
else:
    assert not fit, hand
for r in rs:
    assert "error" in r or abs(r["memory"] / r["slab"] - 1) <= 0.02, r
PY
then ok; else bad "bench_search.py --small --rows 13B/64pp --memory $mem: the search above the best hand 3-D plan, or memory off the slab: $(cat "$tmp/pp.md")"; fi
done
# Memory savings at full size (docs/language.md: optimizer parallelism,
# recompute): GPT 1.3B (hidden 2048, 24 layers, seq 1024, batch 8 a device)
# on 8 devices and GPT 13B (hidden 5120, 40 layers) on 64, fp32 with Adam, on
# 80e9-byte devices, fit no plan that keeps every activation; the search
# switches the savings on, says so in --explain, and the plan fits: the
# search's memory figure, and the slab of the program written, under 80e9.
echo '{"device_memory": 80e9}' >"$tmp/80g.json"
for spec in "2048 24 16 8 64" "5120 40 40 64 512"; do
	set -- $spec
	python3 tools/gen_gpt.py --hidden $1 --layers $2 --heads $3 --devices $4 --batch $5 --seq 1024 --train \
		--optimizer adam --mode auto_parallel --search recursive_programming -o "$tmp/save.ir"
	rm -rf "$tmp/save"
	if "$shardc" "$tmp/save.ir" --cluster "$tmp/80g.json" --check --explain >"$tmp/explain" 2>"$tmp/err" &&
	   grep -q '^# memory: the searched plan did not fit a device; switched on optimizer parallelism' "$tmp/explain" &&
	   grep -q '^# recomputed in the backward pass: [1-9]' "$tmp/explain" &&
	   grep -q '^# sliced over the ranks that sum their gradients: [1-9]' "$tmp/explain" &&
	   "$shardc" "$tmp/save.ir" --cluster "$tmp/80g.json" -o "$tmp/save" 2>"$tmp/err" &&
	   /usr/bin/python3 - "$tmp/explain" "$tmp/save/program.c" <<'PY'
import re, sys
mem = float(re.search(r"memory ([0-9.e+]+) B a device", open(sys.argv[1]).read()).group(1))
slab = int(re.search(r"sc_slab\(rt, (\d+)\)", open(sys.argv[2]).read()).group(1))
assert mem <= 80e9 and slab <= 80e9 and abs(mem / slab - 1) <= 0.02, (mem, slab)
PY
	then ok; else bad "GPT hidden $1, $2 layers on $4 devices: no plan that fits with the savings: $(head -c 600 "$tmp/err") $(grep '^# [a-z]' "$tmp/explain" | tail -4)"; fi
done
# Every sample, forward and (gen_gpt.py --train, Adam) training, in Float32
# and in bf16 (whose Casts the search's count lays out as the program does),
# searched and as written, on a pipeline too: --explain's memory figure is
# the slab the generated program allocates (sc_slab), within 2%.
python3 tools/gen_gpt.py --layers 2 --devices 8 --train --optimizer adam --mode auto_parallel \
	--search recursive_programming -o "$tmp/gpt_adam.ir"
python3 tools/gen_gpt.py --layers 2 --devices 8 --train --optimizer adam --mode auto_parallel \
	--search recursive_programming --precision bf16 -o "$tmp/gpt_bf16.ir"
python3 tools/gen_gpt.py --layers 4 --hidden 256 --heads 8 --seq 64 --devices 8 --train --optimizer adam \
	--megatron --mp 2 --pipeline 2 --micro-batches 4 --precision bf16 --vocab 1000 -o "$tmp/gpt_pp_bf16.ir"
for f in ir-samples/*.ir "$tmp/gpt_adam.ir" "$tmp/gpt_bf16.ir" "$tmp/gpt_pp_bf16.ir"; do
	mem=$("$shardc" "$f" --check --explain 2>/dev/null | sed -n 's/.*, memory \([0-9.e+-]*\) B a device$/\1/p')
	rm -rf "$tmp/slab"
	if [ -z "$mem" ] || ! "$shardc" "$f" -o "$tmp/slab" 2>"$tmp/err"; then
		bad "$f: no memory figure or no program"; continue
	fi
	slab=$(sed -n 's/.*sc_slab(rt, \([0-9]*\)).*/\1/p' "$tmp/slab"/program.c | sort -n | tail -1)
	if /usr/bin/python3 -c 'import sys; m, s = map(float, sys.argv[1:]); sys.exit(abs(m / s - 1) > 0.02)' "$mem" "$slab"
	then ok; else bad "$f: --explain's memory $mem B, the slab $slab B"; fi
done
# A functional shard's result that only the graph reads on (full_batch) is
# not gathered whole first: the ReLU -> ReLU shard feeding a MatMul sends
# 1,536 bytes a rank (7,168 when the result was made whole).
if "$shardc" tests/good/shard_relu_relu_matmul.ir -o "$tmp/srm" --dump-ir 2>"$tmp/err"; then
	# the Call's result %r goes to the MatMul as laid out; the only collectives
	# hand %y over whole (full_batch): its completion and gathering, 5,120 B
	b=$(comm_bytes "$tmp/srm/manifest.json")
	[ "$b" -le 5120 ] && ok || bad "shard_relu_relu_matmul sends $b bytes a rank (at most 5120)"
	if grep -E '= (AllGather|AllReduce|ReduceScatter|AllToAll)\(%r' "$tmp/srm/ir/rank_0/step_parallel_end.ir" >/dev/null; then
		bad "shard_relu_relu_matmul redistributes the Call's result %r"
	else
		ok
	fi
else
	bad "shard_relu_relu_matmul does not compile: $(head -3 "$tmp/err")"
fi
for case in "8 4 3942151" "64 8 1616615"; do
	set -- $case
	python3 tools/gen_gpt.py --layers 1 --train --hidden 256 --seq 128 --batch 8 --heads 8 --ffn 1024 \
		--devices "$1" --megatron --mp "$2" -o "$tmp/layer.ir"
	if "$shardc" "$tmp/layer.ir" -o "$tmp/layer" 2>"$tmp/err"; then
		b=$(comm_bytes "$tmp/layer/manifest.json")
		[ "$b" -le "$3" ] && ok || bad "the Megatron GPT layer trained on $1 devices sends $b bytes a rank (MindSpore: $3)"
	else
		bad "the Megatron GPT layer on $1 devices does not compile: $(head -3 "$tmp/err")"
	fi
done
# explain_total FILE: --explain's total cost of FILE's plan.
explain_total() {
	"$shardc" "$1" --check --explain 2>&1 | sed -n 's/^# total cost \([0-9.e+-]*\) s.*/\1/p'
}
python3 tools/gen_gpt.py --layers 1 --train --hidden 256 --seq 128 --batch 8 --heads 8 --ffn 1024 --devices 8 \
	--megatron --mp 4 --mode auto_parallel --search sharding_propagation -o "$tmp/gpt_megatron.ir"
# the same at 64 devices, dp 8 x mp 8
python3 tools/gen_gpt.py --layers 1 --train --hidden 256 --seq 128 --batch 8 --heads 8 --ffn 1024 --devices 64 \
	--megatron --mp 8 --mode auto_parallel --search sharding_propagation -o "$tmp/gpt_megatron64.ir"
to64() {   # an 8-device dp 2 x mp 4 model's strategies at dp 8 x mp 8
	sed -e 's/device_num: 8/device_num: 64/' -e 's/(2, 1)/(8, 1)/g' -e 's/(1, 4)/(1, 8)/g' -e 's/(2, 4)/(8, 8)/g' \
	    -e 's/(4, 1)/(8, 1)/g' -e 's/(4,)/(8,)/g' "$1"
}
to64 tests/good/ffn_seeds_trained.ir >"$tmp/ffn_seeds64.ir"
to64 tests/good/ffn_megatron_trained.ir >"$tmp/ffn_megatron64.ir"
to64 tests/good/gpt_layer_seeds_trained.ir >"$tmp/gpt_seeds64.ir"
for pair in "tests/good/ffn_seeds_trained.ir tests/good/ffn_megatron_trained.ir" \
            "tests/good/gpt_layer_seeds_trained.ir $tmp/gpt_megatron.ir" \
            "$tmp/ffn_seeds64.ir $tmp/ffn_megatron64.ir" "$tmp/gpt_seeds64.ir $tmp/gpt_megatron64.ir"; do
	set -- $pair
	found=$(explain_total "$1") megatron=$(explain_total "$2")
	if [ -n "$found" ] && [ -n "$megatron" ] &&
	   /usr/bin/python3 -c 'import sys; sys.exit(float(sys.argv[1]) > float(sys.argv[2]) * (1 + 1e-9))' "$found" "$megatron"
	then ok; else bad "$1: propagation's plan costs ${found:-?} s, the Megatron plan ${megatron:-?} s"; fi
done
python3 tools/gen_gpt.py --layers 1 --train --hidden 256 --seq 128 --batch 8 --heads 8 --ffn 1024 --devices 8 \
	--mode auto_parallel --search recursive_programming -o "$tmp/whole.ir"
if "$shardc" "$tmp/whole.ir" --check --explain 2>&1 | grep -q '^# every operator is computed whole on every device: the cheapest plan that splits, [0-9]* x [0-9]* .*, costs [0-9.e+-]* s against'
then ok; else bad "a plan computing everything whole: no --explain line saying why"; fi
# MindSpore's test_batch_matmul_auto_parallel on 16 devices (two nodes of
# the default cluster): the batch split 16 ways everywhere, weights too,
# leaves the loss's AllReduce (a few bytes) as the one collective; a tree
# over two nodes pays one slow round, not four (cost_collective), so the
# search does not keep 4 copies of the weights and sum their gradients.
if "$shardc" tests/good/batch_matmul_auto_ms.ir -o "$tmp/bmm16" 2>"$tmp/err" &&
   [ "$(comm_bytes "$tmp/bmm16/manifest.json")" -lt 16 ]; then ok
else bad "test_batch_matmul_auto_parallel on 16 devices: $(comm_bytes "$tmp/bmm16/manifest.json" 2>/dev/null) bytes a rank, not the loss's alone: $(head -3 "$tmp/err")"; fi
# Propagation decides an operator by its neighbours alone: a ReLU whose
# result the net returns takes its producer's split (MindSpore's
# test_shrink_axis_mask: (16,)), not the split cheapest to hand over.
if "$shardc" tests/good/strided_slice_shrink_relu_ms.ir -o "$tmp/shrink" 2>"$tmp/err" &&
   /usr/bin/python3 -c 'import json, sys
ops = {o["name"]: o for o in json.load(open(sys.argv[1]))["operators"]}
sys.exit(ops["r"]["in_strategy"] != [[16]])' "$tmp/shrink/strategy.json"; then ok
else bad "test_shrink_axis_mask: the ReLU after a (1, 1, 1, 16) slice does not take (16,): $(head -3 "$tmp/err")"; fi
# MindSpore's test_cumsum_auto: the CumSum after a MatMul cut ((16, 1), (1,
# 1)) scans its last axis; the search keeps the MatMul's row split and the
# scanned axis whole, ((16, 1),): nothing moves between the two.
if "$shardc" tests/good/cumsum_auto_ms.ir -o "$tmp/cumsum" 2>"$tmp/err" &&
   /usr/bin/python3 -c 'import json, sys
ops = {o["name"]: o for o in json.load(open(sys.argv[1]))["operators"]}
sys.exit(ops["c"]["in_strategy"] != [[16, 1]])' "$tmp/cumsum/strategy.json"; then ok
else bad "test_cumsum_auto: the CumSum after the (16, 1) MatMul does not take ((16, 1),): $(head -3 "$tmp/err")"; fi
# A GPT layer too small to split over 8 nodes (hidden 1,024 trained on 64
# devices): the search splits it inside each node and repeats it on every
# node (the copies on the slowest axis), so it costs no more than its plan
# on the 8 devices of one node (its redistributions kept off the slow links
# where that is faster) and far less than computed whole everywhere (its
# cost on one device); the plan's Layouts, declared in strategy.json, read
# back to the same programs.
python3 tools/gen_gpt.py --layers 1 --train --hidden 1024 --seq 128 --batch 8 --heads 16 --ffn 4096 --devices 64 \
	--mode auto_parallel --search recursive_programming -o "$tmp/nodes.ir"
"$shardc" "$tmp/nodes.ir" --check --explain >"$tmp/explain" 2>&1
found=$(sed -n 's/^# total cost \([0-9.e+-]*\) s.*/\1/p' "$tmp/explain")
whole=$("$shardc" "$tmp/nodes.ir" --device-num 1 --check --explain 2>&1 | sed -n 's/^# total cost \([0-9.e+-]*\) s.*/\1/p')
node=$("$shardc" "$tmp/nodes.ir" --device-num 8 --check --explain 2>&1 | sed -n 's/^# total cost \([0-9.e+-]*\) s.*/\1/p')
if [ -n "$found" ] && [ -n "$whole" ] && [ -n "$node" ] && grep -q ' with 8 copies first cost' "$tmp/explain" &&
   awk -v a="$found" -v b="$whole" -v c="$node" 'BEGIN { exit !(a < 0.75 * b && a <= c * (1 + 1e-9)) }'; then
	ok
else
	bad "GPT layer (hidden 1,024) trained on 64 devices: the plan costs ${found:-?} s, on one node ${node:-?} s," \
		"computed whole ${whole:-?} s ($(grep -c 'copies first' "$tmp/explain") operators with copies first)"
fi
if "$shardc" "$tmp/nodes.ir" -o "$tmp/nodes1" --strategy-out "$tmp/nodes.json" 2>"$tmp/err" &&
   "$shardc" "$tmp/nodes.ir" -o "$tmp/nodes2" --strategy-in "$tmp/nodes.json" 2>"$tmp/err" &&
   grep -q '"name": "copies_first_8x' "$tmp/nodes.json" && diff -r "$tmp/nodes1" "$tmp/nodes2" >/dev/null; then
	ok
else
	bad "the copies-first plan does not read back from strategy.json to the same programs: $(head -3 "$tmp/err")"
fi
if "$shardc" tests/e2e/tied_embedding.ir -o "$tmp/tied" --precision bf16 --device-num 2 2>"$tmp/err"; then
	/usr/bin/python3 -c 'import json, sys
names = [c["value"] for c in json.load(open(sys.argv[1]))["collectives"]]
sys.exit(not (any(n.startswith("grad_wte.") for n in names) and not any(n.startswith("grad_wte.bf16") for n in names)))' \
		"$tmp/tied/manifest.json" && ok || bad "tied_embedding in bf16: the table's gradient is not reduced once in Float32"
else
	bad "tied_embedding does not compile with bf16: $(head -3 "$tmp/err")"
fi
# A forward FFN's result handed over as the user asked (MindSpore's
# VirtualOutput): whole with full_batch, split along dim 0 with data_parallel;
# the search prices the hand-over, so with full_batch D-Rec's plan costs no
# more than the data-parallel plan that must gather the result.
ffn_forward() {   # ffn_forward SEARCH DATASET [IN_STRATEGY]
	st=${3:+" {in_strategy: $3}"}
	cat <<EOF
context { device_num: 8, parallel_mode: "auto_parallel", search_mode: "$1", dataset_strategy: "$2" }
graph @ffn(%x: <Tensor[Float32], (1024, 256)> = uniform(-1, 1),
           %w1: <Parameter[Float32], (256, 1024)> = normal(0.02), %b1: <Parameter[Float32], (1024,)> = zeros,
           %w2: <Parameter[Float32], (1024, 256)> = normal(0.02), %b2: <Parameter[Float32], (256,)> = zeros) {
  %h = MatMul(%x, %w1)$st
  %hb = BiasAdd(%h, %b1)
  %a = ReLU(%hb)
  %y = MatMul(%a, %w2)$st
  %yb = BiasAdd(%y, %b2)
  return %yb
}
EOF
}
# output_layout MANIFEST: output 0's map, e.g. [[0], []]
output_layout() {
	/usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["outputs"][0]["layout"]["map"])' "$1"
}
for search in sharding_propagation recursive_programming; do
	for ds in "full_batch [[], []]" "data_parallel [[0], []]"; do
		set -- $ds
		ffn_forward $search "$1" >"$tmp/ffn.ir"
		if "$shardc" "$tmp/ffn.ir" -o "$tmp/ffn" 2>"$tmp/err"; then
			got=$(output_layout "$tmp/ffn/manifest.json")
			[ "$got" = "$2 $3" ] && ok || bad "ffn forward ($search, $1): result laid out $got, not $2 $3"
		else
			bad "ffn forward ($search, $1) does not compile: $(head -3 "$tmp/err")"
		fi
	done
done
# the hand-over asks the whole dim 0 to divide: the ReLU's rows are 2 a rank
# here (16 over 8), which must not read as indivisible
if "$shardc" ir-samples/matmul_relu_semi.ir -o "$tmp/mr_dp" --dataset-strategy data_parallel 2>"$tmp/err"; then
	got=$(output_layout "$tmp/mr_dp/manifest.json")
	[ "$got" = "[[0], []]" ] && ok || bad "matmul_relu_semi (data_parallel): result laid out $got, not [[0], []]"
else
	bad "matmul_relu_semi (data_parallel) does not compile: $(head -3 "$tmp/err")"
fi
ffn_forward recursive_programming full_batch >"$tmp/ffn.ir"
ffn_forward recursive_programming full_batch "((8, 1), (1, 1))" >"$tmp/ffn_dp.ir"
found=$(explain_total "$tmp/ffn.ir") dp=$(explain_total "$tmp/ffn_dp.ir")
if [ -n "$found" ] && [ -n "$dp" ] && awk -v a="$found" -v b="$dp" 'BEGIN { exit !(a <= b) }'; then
	ok
else
	bad "ffn forward (recursive_programming, full_batch): the plan costs ${found:-?} s, the data-parallel one ${dp:-?} s"
fi
# A functional shard's in_strategy configures the callee's operators that
# read the inputs it lays out (MindSpore's shard: the rest follow by
# propagation or the search): the MatMul takes x cut (4, 2) in
# semi_auto_parallel, and in auto_parallel while training, where the search
# had priced the layout away.
cat >"$tmp/shard_train.ir" <<'EOF'
context {device_num: 8, parallel_mode: "semi_auto_parallel"}
graph @dense_relu(%x: <Tensor[Float32], (32, 128)>, %w: <Tensor[Float32], (128, 10)>, %b: <Tensor[Float32], (10,)>) {
  %1 = MatMul(%x, %w)
  %2 = BiasAdd(%1, %b)
  %3 = ReLU(%2)
  return %3
}
graph @main(%x: <Tensor[Float32], (32, 128)> = uniform(0, 1), %w1: <Parameter[Float32], (128, 10)> = normal(0.1),
            %b1: <Parameter[Float32], (10,)> = zeros) {
  %r = Call(%x, %w1, %b1) {graph: @dense_relu, shard: {in_strategy: ((4, 2), None, None)}}
  %loss = ReduceMean(%r)
  return %loss
}
train {loss: %loss, steps: 2}
EOF
for mode in "" "--parallel-mode auto_parallel --search-mode sharding_propagation" \
            "--parallel-mode auto_parallel --search-mode recursive_programming"; do
	# shellcheck disable=SC2086
	if "$shardc" "$tmp/shard_train.ir" --check $mode --strategy-out "$tmp/shard.json" 2>"$tmp/err"; then
		got=$(/usr/bin/python3 -c 'import json, sys
print([o["in_strategy"] for o in json.load(open(sys.argv[1]))["operators"] if o["op"] == "MatMul"][0])' "$tmp/shard.json")
		[ "$got" = "[[4, 2], [2, 1]]" ] && ok || bad "shard in_strategy ((4, 2), ...) ${mode:-semi_auto_parallel}: MatMul $got"
	else
		bad "the shard model does not compile (${mode:-semi_auto_parallel}): $(head -3 "$tmp/err")"
	fi
done
echo "search: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
