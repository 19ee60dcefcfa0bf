#!/usr/bin/env bash
# run_e2e.sh SHARDC [MODEL.ir...]: end-to-end runs of the generated programs.
#
# Each model (default: every ir-samples/*.ir and tests/e2e/*.ir) is compiled,
# built and run through its run.sh on the CPU backend on 1, 2, 4 and 8 ranks (under
# make test a model written for 8 devices or more skips 4: below), and on 8
# ranks (and 4 with E2E_FULL) with the strategies the double-recursive search chooses for it
# without its own (auto_parallel, recursive_programming), and on the runs a
# line `# e2e ranks: 2 4 8s` replaces those counts, and its variants run
# only on counts it lists (a pipeline's stages need two ranks or more), and a line `# e2e runs: 2d 4p` of the model adds (N ranks: Nd in data_parallel
# mode, Np in auto_parallel mode by sharding propagation from its own
# strategies, Nn by the double-recursive search on nodes of 4 devices with
# slow links between them, Na with pipeline_stages "auto" on the devices of
# the model's `# e2e cluster: JSON` line, where the search must choose
# stages or, with micro_batches "auto", micro-batches; no fallback for
# these), and its
# results (output_<k>.npy, param_<name>.npy, the loss lines) are compared with
# (a) the same model compiled for one device (--parallel-mode stand_alone) and
# (b) tools/ref_eval.py, the numpy reference (with micro_batches "auto" the
# parameters and loss lines only: the outputs are the last micro-batch's,
# the one device's the whole batch's). The bytes each rank counts at run
# time must equal manifest.json's comm_bytes_per_rank times the steps run.
# A model's own strategies are used where they fit the device count; where
# they do not (exit 1), it is compiled without them (tools/strip_strategies.py:
# the default strategies), else in data_parallel mode; a stand_alone model
# runs its N-rank case in semi_auto_parallel mode.
# Then training models again with each of MindSpore's optimizer options
# (SGD's momentum, dampening, weight_decay and nesterov, Momentum's
# weight_decay and use_nesterov, AdamWeightDecay, clip_global_norm; the
# model's own learning rate) on 8 ranks, compared the same way: under make
# test the models of OPT_MODELS (below), whose parameters take every kind of
# layout and copy an optimizer update meets (the update is per element, so
# more models would repeat them), each two of the options in turn; every
# training model and option with E2E_FULL=1.
# Then every training model with Float32 parameters in mixed precision,
# precision: "bf16", on 8 ranks (below: the tolerance and why), and
# with each memory saving (ZeRO levels 1 to 3, recomputation) on 2 and 8
# (make test: each model one ZeRO level, in turn, with recomputation in the
# same run; OPT_MODELS' every level and recomputation apart).
# E2E_FULL=1 (make test-full) runs the variants on 1, 2, 4 and 8 ranks.
# Under make test a program identical to one already run (each 1-rank
# program is the one-device program) takes that run's results (run(), below);
# E2E_FULL=1 runs it again.
# Then wrong inputs: a missing file, a wrong shape, a wrong dtype, an
# unknown name, a label outside the classes and, with --strict-inputs, an
# input no file gives each give a message naming the input (and the label's
# value and place) and a non-zero exit, within a time limit (no hang), as
# do an id and a label past GPT-2's vocabulary split unevenly, on 8 and 1; an
# input left to its initializer without the flag, one warning naming it.
# Last line: e2e: N passed, N failed.
# Floats compare within npy_compare.py's rtol, 2e-3 unless the model has a
# line `# e2e rtol: R` (models computing in BFloat16 state theirs and why),
# and `# e2e atol: A` lets differences up to A pass whatever the magnitudes;
# `# e2e variants: none` keeps a training model out of the optimizer, mixed
# precision and memory-saving variants (a model there for its runs alone).
# Loss scaling's overflow lines must equal the reference's.
set -u
shardc=$(realpath "${1:?usage: run_e2e.sh SHARDC [MODEL.ir...]}")
shift
[ $# -gt 0 ] || set -- ir-samples/*.ir tests/e2e/*.ir
for m in "$@"; do   # a bare NAME: tests/e2e/NAME.ir or ir-samples/NAME.ir
	[ -f "$m" ] || { [ -f "tests/e2e/$m.ir" ] && m=tests/e2e/$m.ir; } || { [ -f "ir-samples/$m.ir" ] && m=ir-samples/$m.ir; }
	set -- "$@" "$m"
	shift
done
root=$(pwd)
py=/usr/bin/python3
# E2E_WORK=DIR keeps every model's work there (DIR/NAME/n<N>: the compiled
# OUTDIR with its CPU results in res/; DIR/NAME/tol: its tolerances), for
# tools/gpu_kit.sh to rerun on a GPU; by default it is a temporary folder.
if [ -n "${E2E_WORK:-}" ]; then
	tmp=$(realpath -m "$E2E_WORK")   # run.sh runs in each OUTDIR: a relative path would point elsewhere
	rm -rf "$tmp" && mkdir -p "$tmp" || exit 2
else
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
fi
pass=0 fail=0
# The variants' rank counts: make test runs a representative few (the
# search's plans and each variant on 8 ranks, where the plan splits most,
# against the one-device program and the reference (a variant's 1-rank run
# would compare its one-device program with the reference: within twice the
# tolerance once the 8-rank run passes against both), and the bf16 and
# memory-saving variants on every other model (below); E2E_FULL=1 (make
# test-full) every count and every model.
if [ -n "${E2E_FULL:-}" ]; then
	opt_ranks="1 8" bf16_ranks="1 2 4 8" memsave_ranks="1 2 4 8" search_ranks="4s 8s"
else
	opt_ranks="8" bf16_ranks="8" memsave_ranks="8" search_ranks="8s"
	# A model written for 8 devices or more runs on 1, 2 and 8 ranks: on 4, as
	# on 2, its strategies either do not fit (compiled without them) or
	# split as on 8 with no copies; 2 already runs those programs' kind.
	skip_4_from=8
	# replicated and data-parallel (data_parallel_mlp), Megatron row and column
	# slices with biases and LayerNorm (transformer_train), Layouts with a split
	# reduce dim (layout_three_layer), a row-split table and every gradient
	# kind (every_grad), a tied embedding split by rows (gpt2, tied_embedding)
	OPT_MODELS=${OPT_MODELS:-"data_parallel_mlp transformer_train layout_three_layer every_grad gpt2 tied_embedding"}
fi
export CFLAGS="-O0 -std=c11 -Wall -Wextra -Werror"   # the generated programs compile cleanly

ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }

# run DIR RESULTS [args]: run.sh with its stdout in RESULTS/log; the exit status.
# make test runs a program once: where DIR's files (all but manifest.json and
# strategy.json, which the program does not read, and each source's first
# line naming the .ir it came from) and the arguments equal those of a run
# that passed earlier, RESULTS is a copy of that run's results and $reused
# names it; the comparisons and the byte count against DIR's own manifest
# still run on them. About a third of the runs repeat a program: a model's
# 1-rank program is its one-device program, a memory-saving or pipeline
# variant's one-device program is often the model's, and a ZeRO level or
# recompute: true often compiles to the model's program (or level2 to
# level1's) unchanged. E2E_FULL=1 runs every program.
declare -A ran=()   # digest of a program and its arguments -> the results of its run
reused=
run() {
	local dir=$1 res=$2 key=
	shift 2
	reused=
	if [ -z "${E2E_FULL:-}" ]; then
		key=$(cd "$dir" && { for f in *; do
			[ -f "$f" ] && [ "$f" != manifest.json ] && [ "$f" != strategy.json ] || continue
			echo "== $f" && sed '1{/compiled by shardc from/d}' "$f"
		done; printf '%s\n' "$@"; } | sha1sum) || key=
		if [ -n "$key" ] && [ -n "${ran[$key]:-}" ] && rm -rf "$res" && cp -r "${ran[$key]}" "$res"; then
			reused=${ran[$key]#"$tmp/"} && reused=${reused%/res} && reused=${reused%_res}
			return 0
		fi
	fi
	mkdir -p "$res"
	(cd "$dir" && timeout 600 ./run.sh --output-dir "$res" "$@") >"$res/log" 2>"$res/err" || return
	[ -z "$key" ] || ran[$key]=$res
}

# check MODEL NAME COUNTS...: the model against the one-device program and
# the reference on each rank count (a trailing s: the search's strategies).
check() {
	local model=$1 name=$2
	shift 2
	local w=$tmp/$name n out how fallback status msg
	mkdir -p "$w/ref"
	if ! "$py" tools/ref_eval.py "$model" --shardc "$shardc" --output-dir "$w/ref" >"$w/ref/log" 2>"$w/ref/err"; then
		bad "$name: the reference fails: $(head -3 "$w/ref/err")"
		return
	fi
	if ! "$shardc" "$model" -o "$w/serial" --parallel-mode stand_alone 2>"$w/err" ||
	   ! run "$w/serial" "$w/serial_res"; then
		bad "$name: one device: $(tail -3 "$w/err" "$w/serial_res/err" 2>/dev/null)"
		return
	fi
	rtol=$(sed -n 's/^# e2e rtol: *\([0-9.e+-]*\).*/\1/p' "$model" | head -1)
	atol=$(sed -n 's/^# e2e atol: *\([0-9.e+-]*\).*/\1/p' "$model" | head -1)
	echo "${rtol:-2e-3} ${atol:-0}" >"$w/tol"
	"$py" tools/strip_strategies.py "$model" >"$w/stripped.ir"
	local only
	only=$(sed -n 's/^# e2e ranks: *//p' "$model" | head -1)
	for n in "$@"; do
		[ -z "$only" ] || [[ " $only " == *" $n "* ]] || continue   # a count the model's line leaves out
		out=$w/n$n
		how="as written" fallback=1   # fallback: other strategies when these do not fit; not for Np, Nd
		if [ "${n%s}" != "$n" ]; then   # the double-recursive search's own strategies
			n=${n%s}
			how="recursive_programming"
			"$shardc" "$w/stripped.ir" -o "$out" --device-num "$n" --parallel-mode auto_parallel \
				--search-mode recursive_programming 2>"$w/err"
		elif [ "${n%n}" != "$n" ]; then   # the double-recursive search on nodes of 4 with slow links
			n=${n%n}
			how="recursive_programming, nodes of 4" fallback=0
			echo '{"devices_per_node": 4, "device_flops": 1e9, "inter_node_bandwidth": 1e8,
			       "inter_node_latency": 1e-3}' >"$w/nodes.json"
			"$shardc" "$w/stripped.ir" -o "$out" --device-num "$n" --parallel-mode auto_parallel \
				--search-mode recursive_programming --cluster "$w/nodes.json" 2>"$w/err"
		elif [ "${n%p}" != "$n" ]; then   # sharding propagation from the model's own strategies
			n=${n%p}
			how="sharding_propagation" fallback=0
			"$shardc" "$model" -o "$out" --device-num "$n" --parallel-mode auto_parallel \
				--search-mode sharding_propagation 2>"$w/err"
		elif [ "${n%a}" != "$n" ]; then   # pipeline_stages "auto" on the model's `# e2e cluster:` devices
			n=${n%a}
			how="the search on the model's cluster" fallback=0
			sed -n 's/^# e2e cluster: *//p' "$model" | head -1 >"$w/cluster.json"
			"$shardc" "$model" -o "$out" --device-num "$n" --cluster "$w/cluster.json" 2>"$w/err" &&
				"$py" -c 'import json,sys; m = json.load(open(sys.argv[1]))
sys.exit(m.get("pipeline", {}).get("stages", 1) < 2 and m.get("micro_batches", 1) < 2)' \
					"$out/manifest.json" ||
				{ bad "$name on $n ranks: the search chose no stages nor micro-batches: $(head -3 "$w/err")"; continue; }
		elif [ "${n%d}" != "$n" ]; then   # data_parallel: every operator batch parallel
			n=${n%d}
			how="data_parallel mode" fallback=0
			"$shardc" "$model" -o "$out" --device-num "$n" --parallel-mode data_parallel 2>"$w/err"
		else
			"$shardc" "$model" -o "$out" --device-num "$n" 2>"$w/err"
		fi
		status=$?
		if [ $status = 0 ] && [ "$how" = "as written" ] && [ "$(grep -o -m1 '"device_num": [0-9]*' "$out/manifest.json")" != "\"device_num\": $n" ]; then   # the first: the context's
			rm -rf "$out"
			how="semi_auto_parallel"
			"$shardc" "$model" -o "$out" --device-num "$n" --parallel-mode semi_auto_parallel 2>"$w/err"
			status=$?
		fi
		if [ $status = 1 ] && [ $fallback = 1 ]; then
			how="strategies stripped"
			"$shardc" "$w/stripped.ir" -o "$out" --device-num "$n" 2>"$w/err"
			status=$?
		fi
		if [ $status = 1 ] && [ $fallback = 1 ]; then
			how="data_parallel"
			"$shardc" "$model" -o "$out" --device-num "$n" --parallel-mode data_parallel 2>"$w/err"
			status=$?
		fi
		if [ $status != 0 ]; then
			bad "$name on $n ranks: shardc exits $status: $(head -3 "$w/err")"
			continue
		fi
		if ! run "$out" "$out/res"; then
			bad "$name on $n ranks ($how): run.sh fails: $(tail -5 "$out/res/err")"
			continue
		fi
		local got=$out/res one=$w/serial_res ref=$w/ref
		if grep -q '^ *micro_batches: *"auto"' "$model"; then   # the outputs are the last micro-batch's
			got=$out/cmp one=$w/serial_cmp ref=$w/ref_cmp
			for d in "$out/res:$got" "$w/serial_res:$one" "$w/ref:$ref"; do
				rm -rf "${d#*:}" && mkdir -p "${d#*:}" && cp "${d%%:*}"/param_*.npy "${d%%:*}/log" "${d#*:}/"
			done
		fi
		# one Python for the three checks: its start-up is a third of a small model's check
		msg=$("$py" tools/npy_compare.py "$got" "$one" "$ref" --rtol "${rtol:-2e-3}" --atol "${atol:-0}" \
		          --what "vs one device" --what "vs reference" --manifest "$out/manifest.json")
		if [ $? = 0 ]; then
			ok "$name on $n ranks ($how${reused:+; the same program as $reused, its results}): $(echo "$msg" | grep -o 'worst.*' | tr '\n' ' ')"
		else
			bad "$name on $n ranks ($how): $msg"
		fi
	done
}

for model in "$@"; do
	# shellcheck disable=SC2046
	counts=$(sed -n 's/^# e2e ranks: *//p' "$model" | head -1)
	written_for=$(sed -n 's/^[^#]*device_num: *\([0-9]*\).*/\1/p' "$model" | head -1)
	base="1 2 4 8"
	[ -n "${skip_4_from:-}" ] && [ "${written_for:-1}" -ge "$skip_4_from" ] && base="1 2 8"
	check "$model" "$(basename "$model" .ir)" ${counts:-$base $search_ranks} $(sed -n 's/^# e2e runs: *//p' "$model" | head -1)
done

# Loss scaling pinned (tests/e2e/mixed_loss_scale_f16.ir, 8 ranks): the scale
# starts at 2^24, overflows and halves with the step skipped, and training
# goes on (the loss falls; a later good run of steps doubles the scale).
log=$tmp/mixed_loss_scale_f16/n8/res/log
if [ -f "$log" ]; then
	if msg=$("$py" - "$log" <<'PY'
import re, sys
log = open(sys.argv[1]).read()
over = re.findall(r"^step: (\d+), overflow, loss scale (\S+) -> (\S+), step skipped$", log, re.M)
loss = [float(x) for x in re.findall(r"^step: \d+, loss is ([^,\s]+)", log, re.M)]
steps = {int(s) for s, _, _ in over}
if not over or over[0] != ("1", "16777216", "8388608"):
    sys.exit("no overflow at step 1 halving 16777216 -> 8388608: %s" % over[:1])
if any(float(b) * 2 != float(a) for _, a, b in over):
    sys.exit("an overflow does not halve the scale: %s" % over)
good = [s for s in range(1, len(loss) + 1) if s not in steps]
if len(good) < 3 or not loss[-1] < loss[0]:
    sys.exit("training does not go on after the overflows: %d good steps, loss %s -> %s" % (len(good), loss[0], loss[-1]))
print("%d steps skipped, scale %s -> %s, %d steps trained, loss %s -> %s"
      % (len(over), over[0][1], over[-1][2], len(good), loss[0], loss[-1]))
PY
	); then
		ok "loss scaling: $msg"
	else
		bad "loss scaling: $msg"
	fi
fi

# The optimizer options: the train block's optimizer replaced (its
# learning_rate kept), clip_global_norm added where a variant names one.
variants=(
	"sgd_momentum_dampening_decay_clip|SGD(learning_rate: LR, momentum: 0.9, dampening: 0.1, weight_decay: 0.01)|0.5"
	"sgd_nesterov_decay|SGD(learning_rate: LR, momentum: 0.9, nesterov: true, weight_decay: 0.01)|"
	"momentum_nesterov_decay_clip|Momentum(learning_rate: LR, momentum: 0.9, weight_decay: 0.01, use_nesterov: true)|0.1"
	"adam_weight_decay_clip|AdamWeightDecay(learning_rate: LR, weight_decay: 0.01)|0.5|1e-2"
)
# AdamWeightDecay moves every element by about lr a step whatever its
# gradient's size, so an element whose gradient is rounding noise (a sum that
# cancels) moves by lr in a direction float32 and the float64 reference may
# see differently: against the reference its variant allows 1e-2 (recursive_net
# measured 4.1e-3, lr 1e-3 over 10 steps); against one device it is exact.
# Models that train half parameters, or in mixed precision, keep their own optimizer: their
# tolerances are set for it (and clip_global_norm is Float32-only).
turn=0
for model in "$@"; do
	grep -q '^train' "$model" || continue
	grep -q '^# e2e variants: none' "$model" && continue
	grep -q 'Parameter\[\(Float16\|BFloat16\)\]' "$model" && continue
	grep -q '^  *precision:' "$model" && continue   # mixed-precision models keep their own setup
	if [ -n "${OPT_MODELS:-}" ] && [[ " $OPT_MODELS " != *" $(basename "$model" .ir) "* ]]; then
		continue
	fi
	turn=$((turn + 1)) k=0
	for v in "${variants[@]}"; do
		# make test: each model two of the four, in turn (each option meets
		# half of OPT_MODELS' layouts); E2E_FULL all
		k=$((k + 1))
		[ -z "${E2E_FULL:-}" ] && (((k + turn) % 2)) && continue
		IFS='|' read -r vname opt clip vrtol <<<"$v"
		name="$(basename "$model" .ir)+$vname"
		if ! "$py" - "$model" "$opt" "$clip" "$vrtol" >"$tmp/$name.ir" <<'PY'
import re, sys
sys.path.insert(0, "tools")
from ir_text import optimizer_at
text = open(sys.argv[1]).read()
train = text.rindex("\ntrain")
m = optimizer_at(text, train)
new = "optimizer: " + sys.argv[2].replace("LR", m[2] if m and m[2] else "0.1")
if sys.argv[3]:
    new = re.sub(r",?\s*clip_global_norm:\s*[-+0-9.eE]+", "", new) + ", clip_global_norm: " + sys.argv[3]
    text = re.sub(r"clip_global_norm:\s*[-+0-9.eE]+,?", "", text)
    m = optimizer_at(text, text.rindex("\ntrain"))
if m:
    text = text[:m[0]] + new + text[m[1]:]
else:
    text = text[:train] + text[train:].replace("{", "{" + new + ", ", 1)
if sys.argv[4]:
    text = "# e2e rtol: %s\n" % sys.argv[4] + text
sys.stdout.write(text)
PY
		then
			bad "$name: cannot write the variant"
			continue
		fi
		check "$tmp/$name.ir" "$name" $opt_ranks
	done
done

# Mixed precision: every model with Float32 parameters again with
# precision: "bf16" (autocast.c; in the train block of a training model, in
# the context of an inference one), on 1, 2, 4 and 8 ranks against the
# one-device bf16 program and ref_eval's bf16 emulation (the same Casts, each
# result rounded to bfloat16). A training model's optimizer becomes SGD with
# the model's own learning rate: Adam's and AdamWeightDecay's updates move an element by about
# lr whatever its gradient's size, so gradients that bf16 rounding leaves at
# noise level move by lr in either direction. Tolerance BF16_RTOL: bfloat16
# keeps 8 significant bits, so each rounding is off by up to 2^-9 = 2e-3
# relative (2^-8 = 3.9e-3 between neighbours); one program and another round
# different partial sums (the split of a MatMul's k, an AllReduce's order)
# and so differ by about one bf16 step in a result, which the next operators
# and the steps carry on: measured worst 4.5e-3 (layout_three_layer, 8 ranks),
# about one bf16 step, so 1e-2 leaves twice that. Parameters that start at zero
# and move only by gradients that cancel to noise (ffn_propagation's biases,
# 1e-9 to 1e-5) are held to BF16_ATOL = 1e-5 absolute, under one bf16 step
# (2^-8 x 0.02 = 7.8e-5) of the smallest weights the models initialize.
# make test runs every other such model (in turn, so that every kind of
# operator meets it; OPT_MODELS' always); E2E_FULL every one.
BF16_RTOL=${BF16_RTOL:-1e-2}
BF16_ATOL=${BF16_ATOL:-1e-5}
turn=0
for model in "$@"; do
	grep -q '^# e2e variants: none' "$model" && continue
	grep -q 'Parameter\[\(Float16\|BFloat16\)\]' "$model" && continue
	grep -q '^ *precision:' "$model" && continue
	turn=$((turn + 1))
	if [ -z "${E2E_FULL:-}" ] && ((turn % 2 == 0)) && [[ " $OPT_MODELS " != *" $(basename "$model" .ir) "* ]]; then
		continue
	fi
	name="$(basename "$model" .ir)+bf16"
	if ! "$py" - "$model" "$BF16_RTOL" "$BF16_ATOL" >"$tmp/$name.ir" <<'PY'
import re, sys
sys.path.insert(0, "tools")
from ir_text import optimizer_at
text = open(sys.argv[1]).read()
text = re.sub(r"^# e2e [ar]tol:.*\n", "", text, flags=re.M)
if not re.search(r"^train", text, re.M):   # inference: the context's precision
    ctx = re.search(r"^context\s*\{", text, re.M)
    text = (text[:ctx.end()] + ' precision: "bf16",' + text[ctx.end():] if ctx
            else 'context { precision: "bf16" }\n' + text)
    sys.stdout.write("# e2e rtol: %s\n# e2e atol: %s\n" % (sys.argv[2], sys.argv[3]) + text)
    sys.exit(0)
train = text.rindex("\ntrain")
m = optimizer_at(text, train)
new = "optimizer: SGD(learning_rate: %s)" % (m[2] if m and m[2] else "0.1")
if m:
    text = text[:m[0]] + new + text[m[1]:]
    train = text.rindex("\ntrain")
text = text[:train] + text[train:].replace("{", '{precision: "bf16", ', 1)
sys.stdout.write("# e2e rtol: %s\n# e2e atol: %s\n" % (sys.argv[2], sys.argv[3]) + text)
PY
	then
		bad "$name: cannot write the variant"
		continue
	fi
	check "$tmp/$name.ir" "$name" $bf16_ranks
done

# Memory-saving parallelism: every training model again with optimizer
# parallelism at each level (context enable_parallel_optimizer,
# optimizer_level: parameters, gradients and optimizer state as slices over
# the ranks that sum their gradients; level2 with optimizer_weight_shard_size
# 2; level3 gathering each parameter again for the backward pass) and with
# recomputation of every layer (the train block's recompute: true), on 8
# ranks (E2E_FULL: 1, 2, 4 and 8; make test runs every level and
# recomputation apart for OPT_MODELS' models, and for every other model of
# the rest one run of one level, the three in turn, together with
# recomputation), against the one-device program and the reference with the
# model's own tolerances: the same numbers (summed in another order where a
# ReduceScatter replaces an AllReduce), and the bytes counted at run time,
# recomputed collectives and regathered parameters included, equal the
# manifest's.
memsave=(
	"zero1|enable_parallel_optimizer: true, optimizer_level: \"level1\"|"
	"zero2|enable_parallel_optimizer: true, optimizer_level: \"level2\", optimizer_weight_shard_size: 2|"
	"zero3|enable_parallel_optimizer: true, optimizer_level: \"level3\"|"
	"recompute||recompute: true"
)
level=0 turn=0   # make test: the ZeRO level a model runs, in turn, and whether it runs one (below)
for model in "$@"; do
	grep -q '^train' "$model" || continue
	grep -q '^# e2e variants: none' "$model" && continue
	runs=("${memsave[@]}")
	if [ -z "${E2E_FULL:-}" ] && [[ " $OPT_MODELS " != *" $(basename "$model" .ir) "* ]]; then
		turn=$((turn + 1))
		((turn % 2 == 0)) && continue   # every other model: the levels in turn meet a sixth of them each
		level=$((level % 3 + 1))
		# one run: a ZeRO level (the levels in turn, each meets a third of the
		# models) with recomputation, as people train large models
		IFS='|' read -r zname zctx _ <<<"${memsave[$((level - 1))]}"
		IFS='|' read -r rname _ rtrain <<<"${memsave[3]}"
		runs=("$zname+$rname|$zctx|$rtrain")
	fi
	for v in "${runs[@]}"; do
		IFS='|' read -r vname ctx train <<<"$v"
		name="$(basename "$model" .ir)+$vname"
		if ! "$py" - "$model" "$ctx" "$train" >"$tmp/$name.ir" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
if sys.argv[2]:
    ctx = re.search(r"^context\s*\{", text, re.M)
    text = (text[:ctx.end()] + " " + sys.argv[2] + "," + text[ctx.end():] if ctx
            else "context { " + sys.argv[2] + " }\n" + text)
if sys.argv[3]:
    text = re.sub(r"^\s*recompute:[^,\n}]*,?", "", text, flags=re.M)
    train = text.rindex("\ntrain")
    text = text[:train] + text[train:].replace("{", "{" + sys.argv[3] + ", ", 1)
sys.stdout.write(text)
PY
		then
			bad "$name: cannot write the variant"
			continue
		fi
		check "$tmp/$name.ir" "$name" $memsave_ranks
	done
done

# Pipeline parallelism: the models of PIPE_MODELS (GPT-2 with its tied
# embedding and gradient clipping, LLaMA, a transformer layer stack) split
# into pipeline_stages P by the compiler (no pipeline_stage written: stages.c
# balances their work), with micro_batches M under each schedule, against
# the one-device program running the same M micro-batches and the
# reference; each run prints the bubble it measured, a line a stage. make test runs a representative few (P x M x schedule x ranks,
# written P:M:scheduler:ranks), E2E_FULL=1 every P in {2, 4}, M in {1, 4, 8},
# both schedules on 8 ranks and P on P ranks.
PIPE_MODELS=${PIPE_MODELS:-"gpt2 llama transformer_train"}
if [ -n "${E2E_FULL:-}" ]; then
	pipe_runs=""
	for P in 2 4; do for M in 1 4 8; do for S in 1f1b gpipe; do pipe_runs+=" $P:$M:$S:$P $P:$M:$S:8"; done; done; done
else
	pipe_runs="2:4:1f1b:8 4:8:gpipe:8 2:1:1f1b:2 4:4:1f1b:4"
fi
for model in "$@"; do
	[[ " $PIPE_MODELS " == *" $(basename "$model" .ir) "* ]] || continue
	for run in $pipe_runs; do
		IFS=':' read -r P M S R <<<"$run"
		name="$(basename "$model" .ir)+pipe${P}m${M}${S}"
		if ! "$py" - "$model" "$P" "$M" "$S" "$R" >"$tmp/$name.ir" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
P, M, S, R = sys.argv[2:]
text = re.sub(r"^# e2e (runs|ranks):.*\n", "", text, flags=re.M)
ctx = re.search(r"^context\s*\{", text, re.M)
entry = ' pipeline_stages: %s, pipeline_scheduler: "%s",' % (P, S)
text = text[:ctx.end()] + entry + text[ctx.end():] if ctx else "context {" + entry[:-1] + " }\n" + text
train = text.rindex("\ntrain")
text = text[:train] + text[train:].replace("{", "{micro_batches: %s, " % M, 1)
sys.stdout.write("# e2e ranks: %s\n" % R + text)
PY
		then
			bad "$name: cannot write the variant"
			continue
		fi
		check "$tmp/$name.ir" "$name" "$R"
		log=$tmp/$name/n$R/res/log   # and the bubble measured, a line a stage
		if [ -f "$log" ]; then
			if [ "$(grep -c '^pipeline stage [0-9]* (ranks [0-9]*-[0-9]*): idle [0-9.]*% of the run' "$log")" = "$P" ]; then
				ok "$name on $R ranks: the bubble measured, a line for each of $P stages"
			else
				bad "$name on $R ranks: no line a stage with the bubble measured: $(grep -m2 pipeline "$log")"
			fi
		fi
	done
done

# Gradient accumulation: each model with accumulate_steps N in its train
# block (tests/e2e/accumulate.ir) against the same model on batches N times
# larger (every Tensor input's dim 0 times N) without it, both fed by run.sh
# --data from one file per input of steps * N micro-batches (micro-batch m of
# step s is batch (s - 1) N + m of the file; the large model's step s reads N
# of them at once): the loss lines and the parameters must agree within
# float rounding (ACC_RTOL; in bf16 and fp16 each micro-batch's half gradient
# is rounded before the sum, where the large batch rounds the sum once:
# ACC_HALF_RTOL), and the bytes the accumulating program counts equal its
# manifest's, the gradients' collectives once a step. With the model's own
# optimizer and schedule, SGD with momentum, Momentum, ZeRO levels 1 to 3,
# recompute, bf16 and fp16 (SGD: Adam moves noise-level gradients by lr), on
# 1, 2 and 4 ranks (ACC_RANKS; make test: the model's own setup on each, each
# other variant on 2 or 4, in turn).
ACC_RTOL=${ACC_RTOL:-1e-5}
ACC_HALF_RTOL=${ACC_HALF_RTOL:-1e-2}
accvariants=(
	"own|||"
	"sgd_momentum|||SGD(learning_rate: 0.05, momentum: 0.9)"
	"momentum|||Momentum(learning_rate: 0.05, momentum: 0.9)"
	"zero1|enable_parallel_optimizer: true, optimizer_level: \"level1\"||"
	"zero2|enable_parallel_optimizer: true, optimizer_level: \"level2\"||"
	"zero3|enable_parallel_optimizer: true, optimizer_level: \"level3\"||"
	"recompute||recompute: true|"
	"bf16||precision: \"bf16\"|SGD(learning_rate: 0.05, momentum: 0.9)"
	"fp16||precision: \"fp16\", init_loss_scale: 1024|SGD(learning_rate: 0.05, momentum: 0.9)"
)
for model in "$@"; do
	grep -q '^ *accumulate_steps:' "$model" || continue
	turn=0
	for v in "${accvariants[@]}"; do
		IFS='|' read -r vname ctx train opt <<<"$v"
		acc_ranks=${ACC_RANKS:-1 2 4}
		if [ -z "${E2E_FULL:-}" ] && [ -z "${ACC_RANKS:-}" ] && [ "$vname" != own ]; then
			acc_ranks=$((2 << turn % 2))   # 2 and 4 in turn: ZeRO's slices need ranks
			turn=$((turn + 1))
		fi
		name="$(basename "$model" .ir)+batch_$vname"
		w=$tmp/$name
		mkdir -p "$w"
		# the model with the variant (acc.ir), the large batch's (big.ir), the data files
		if ! "$py" - "$model" "$ctx" "$train" "$opt" "$w" <<'PY'
import re, sys
import numpy as np
sys.path.insert(0, "tools")
from ir_text import optimizer_at
path, ctx, train, opt, w = sys.argv[1:6]
text = open(path).read()
if ctx:
    c = re.search(r"^context\s*\{", text, re.M)
    text = text[:c.end()] + " " + ctx + "," + text[c.end():] if c else "context { " + ctx + " }\n" + text
if opt:
    m = optimizer_at(text, text.rindex("\ntrain"))
    text = text[:m[0]] + "optimizer: " + opt + text[m[1]:]
if train:
    at = text.rindex("\ntrain")
    text = text[:at] + text[at:].replace("{", "{" + train + ", ", 1)
n = int(re.search(r"^\s*accumulate_steps:\s*(\d+)", text, re.M).group(1))
steps = int(re.search(r"^\s*steps:\s*(\d+)", text, re.M).group(1))
open(w + "/acc.ir", "w").write(text)
big = re.sub(r"^\s*accumulate_steps:\s*\d+,?\n", "", text, flags=re.M)
rng = np.random.default_rng(5)
data = []
def widen(m):   # a Tensor input of the entry graph: dim 0 times n, and its data file
    dims = [int(d) for d in m.group(3).split(",") if d.strip()]
    x = rng.normal(size=[steps * n * dims[0]] + dims[1:]).astype(np.float32)
    np.save("%s/%s.npy" % (w, m.group(1)), x)
    data.append(m.group(1))
    return "%%%s: <Tensor[%s], (%s)>" % (m.group(1), m.group(2), ", ".join(str(d) for d in [dims[0] * n] + dims[1:]))
entry = big.rindex("\ngraph")
other = re.findall(r"%(\w+): <Tensor\[(?!Float32\])", big[entry:])
if other:
    sys.exit("the large-batch check feeds Float32 inputs only, not %s" % ", ".join(other))
big = big[:entry] + re.sub(r"%(\w+): <Tensor\[(Float32)\], \(([\d, ]+)\)>", widen, big[entry:])
open(w + "/big.ir", "w").write(big)
open(w + "/data", "w").write(" ".join("--data %s=%s/%s.npy" % (d, w, d) for d in data))
PY
		then
			bad "$name: cannot write the variant (above)"
			continue
		fi
		rtol=$ACC_RTOL
		case $vname in bf16|fp16) rtol=$ACC_HALF_RTOL ;; esac
		read -r -a data <"$w/data"
		for n in $acc_ranks; do
			for m in acc big; do
				rm -rf "$w/$m$n"
				"$shardc" "$w/$m.ir" -o "$w/$m$n" --device-num "$n" 2>"$w/err" ||
					"$shardc" "$w/$m.ir" -o "$w/$m$n" --device-num "$n" --parallel-mode data_parallel 2>"$w/err" ||
					break
				run "$w/$m$n" "$w/$m$n/res" "${data[@]}" || break
				mkdir -p "$w/$m$n/cmp" && cp "$w/$m$n/res/"param_*.npy "$w/$m$n/res/log" "$w/$m$n/cmp/"
			done
			if [ ! -f "$w/big$n/cmp/log" ]; then
				bad "$name on $n ranks: $(tail -3 "$w/err" "$w/acc$n/res/err" "$w/big$n/res/err" 2>/dev/null)"
				continue
			fi
			if msg=$("$py" tools/npy_compare.py "$w/acc$n/cmp" "$w/big$n/cmp" --rtol "$rtol" \
			             --what "vs the large batch" --manifest "$w/acc$n/manifest.json"); then
				ok "$name on $n ranks, vs the large batch: $(echo "$msg" | grep -o 'worst.*' | tr '\n' ' ')bytes as the manifest's"
			else
				bad "$name on $n ranks: $msg"
			fi
		done
	done
done

# The CUDA backend: the seed's programs build and link against it (CI has
# nvcc but no GPU; the device tool runs them for real).
if [ -f build/runtime/libshardc_rt_cuda.a ]; then
	out=$tmp/cuda
	if "$shardc" ir-samples/matmul_relu_semi.ir -o "$out" 2>"$tmp/err" && make -s -C "$out" BACKEND=cuda >"$tmp/err" 2>&1 &&
	   [ -x "$out/bin/cuda/rank_7" ]; then
		ok "matmul_relu_semi builds for BACKEND=cuda"
	else
		bad "matmul_relu_semi does not build for BACKEND=cuda: $(tail -5 "$tmp/err")"
	fi
fi

# Wrong inputs: one model, 4 ranks; each must fail fast with the input named.
model=ir-samples/data_parallel_mlp.ir
out=$tmp/wrong
"$shardc" "$model" -o "$out" >/dev/null 2>&1 && (cd "$out" && make -s >/dev/null 2>&1)
"$py" -c 'import numpy as np, sys
d = sys.argv[1]
np.save(d + "/x_shape.npy", np.zeros((3, 4), np.float32))
np.save(d + "/x_dtype.npy", np.zeros((16, 32), np.float64))
np.save(d + "/x_ok.npy", np.zeros((16, 32), np.float32))
label = np.zeros(16, np.int32); label[11] = 10
np.save(d + "/label_out.npy", label)' "$out"
check_wrong() {
	local what=$1 want=$2
	shift 2
	(cd "$out" && timeout 120 ./run.sh --output-dir "$out/res" "$@") >"$out/log" 2>&1
	local status=$?
	if [ $status = 0 ] || [ $status = 124 ]; then
		bad "wrong input ($what): exit $status (want a non-zero exit, no hang)"
	elif ! grep -q -- "$want" "$out/log"; then
		bad "wrong input ($what): no message with '$want': $(head -3 "$out/log")"
	else
		ok "wrong input ($what): exit $status, $(grep -m1 -- "$want" "$out/log")"
	fi
}
check_wrong "missing file" "input 'x'" --input "x=$out/nothing.npy"
check_wrong "wrong shape" "input 'x'" --input "x=$out/x_shape.npy"
check_wrong "wrong dtype" "input 'x'" --input "x=$out/x_dtype.npy"
check_wrong "unknown name" "no input named 'y'" --input "y=$out/x_ok.npy"
check_wrong "label out of range" "input 'label': .* holds 10 at (11,), outside \[0, 10)" --input "label=$out/label_out.npy"
check_wrong "bad --steps" "steps" --steps 0
# GPT-2's vocabulary split unevenly (docs/language.md, Uneven splits): an id
# past the table and a label past the classes stop the run on 8 ranks and on
# one, naming the input, the place and the value.
for n in 8 1; do
	out=$tmp/wrong_vocab$n
	mode=semi_auto_parallel
	[ $n = 1 ] && mode=stand_alone
	"$shardc" tests/e2e/gpt2_vocab50257.ir -o "$out" --parallel-mode $mode >/dev/null 2>&1 && (cd "$out" && make -s >/dev/null 2>&1)
	"$py" -c 'import numpy as np, sys
d = sys.argv[1]
ids = np.zeros((2, 8), np.int32); ids[1, 5] = 50257
np.save(d + "/ids_out.npy", ids)
labels = np.zeros(16, np.int32); labels[9] = 60000
np.save(d + "/labels_out.npy", labels)' "$out"
	check_wrong "id out of range, $n ranks" "input 'ids': .* holds 50257 at (1, 5), outside \[0, 50257)" --input "ids=$out/ids_out.npy"
	check_wrong "label out of range, $n ranks" "input 'labels': .* holds 60000 at (9,), outside \[0, 50257)" --input "labels=$out/labels_out.npy"
	(cd "$out" && timeout 600 ./run.sh --output-dir "$out/unchecked" --unchecked-ids --input "ids=$out/ids_out.npy" \
		--input "labels=$out/labels_out.npy") >"$out/unchecked.log" 2>&1 || bad "--unchecked-ids, $n ranks: $(tail -3 "$out/unchecked.log")"
	cp "$out/unchecked.log" "$out/unchecked/log" 2>/dev/null
done
# --unchecked-ids (MindSpore's behaviour): the same ids and labels train on,
# the id past the table a zero row, the label past the classes adding 0,
# whatever the split: 8 ranks (the vocabulary in 4 uneven pieces) as one.
if msg=$("$py" tools/npy_compare.py "$tmp/wrong_vocab8/unchecked" "$tmp/wrong_vocab1/unchecked" --atol 1e-7 \
	--what "--unchecked-ids, 8 ranks vs 1"); then
	ok "$(echo "$msg" | tail -1)"
else
	bad "$msg"
fi
out=$tmp/wrong
# --strict-inputs: an input no --input gives stops every rank with one message
# naming it and its initializer; without the flag the run goes on, rank 0
# warning once, naming it; with every input given, no warning, and it runs.
check_wrong "--strict-inputs, label not given" "no --input NAME=FILE.npy gives the input 'label' (randint(0, 10))" \
	--strict-inputs --input "x=$out/x_ok.npy"
"$py" -c 'import numpy as np, sys; np.save(sys.argv[1] + "/label_ok.npy", np.arange(16, dtype=np.int32) % 10)' "$out"
(cd "$out" && timeout 120 ./run.sh --output-dir "$out/res" --input "x=$out/x_ok.npy") >"$out/log" 2>&1
if [ $? = 0 ] && [ "$(grep -c "^shardc: warning: no --input gives 'label' (randint(0, 10)): it runs on its initializer" "$out/log")" = 1 ]; then
	ok "input on its initializer: one warning naming it, and the run goes on"
else
	bad "input on its initializer: no single warning naming 'label': $(head -3 "$out/log")"
fi
(cd "$out" && timeout 120 ./run.sh --output-dir "$out/res" --strict-inputs --input "x=$out/x_ok.npy" \
	--input "label=$out/label_ok.npy") >"$out/log" 2>&1
if [ $? = 0 ] && ! grep -q "warning" "$out/log"; then
	ok "--strict-inputs with every input given: runs, no warning"
else
	bad "--strict-inputs with every input given: $(head -3 "$out/log")"
fi
echo "e2e: $pass passed, $fail failed"
[ $fail = 0 ]
