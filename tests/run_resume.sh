#!/usr/bin/env bash
# run_resume.sh SHARDC: checkpoints and resuming (docs/output.md, Checkpoints
# of a run), CPU backend.
#   - exact resume (seeds 1 to 3 for the Megatron layer, 1 and 2 for the rest;
#     make test: 1 and 2 for the 8-rank Megatron layer, 1 for the rest, each
#     seed's kills hitting a checkpoint's write at least once; E2E_FULL=1 all):
#     a run checkpointing every step killed with SIGKILL (every process of
#     the job at once, as a node dies) three times, each just after a step
#     drawn at random (seeded), in its update or its checkpoint's write, and
#     resumed with --resume until it ends, writes parameters byte for byte those of a run never
#     interrupted: the Megatron GPT layer (Float32, 8 ranks and 1), and the
#     two-layer MLP in mixed precision with Float16 loss scaling (8 ranks;
#     its skipped steps and loss scale carried over), BFloat16 (a
#     transformer's BFloat16 parameters and their state on 8 ranks, and the
#     Megatron layer in mixed precision bf16), gradient accumulation
#     (4 ranks), nn.Lamb with optimizer parallelism (4 ranks: its m and v
#     in slices, its bias corrections from the step), and a .npy dataset read a batch a step, shuffled by epoch
#     (4 ranks: the resumed run reads the batches the uninterrupted one
#     did);
#   - resharding: the 8-rank Megatron checkpoint at step 4 resumed on 4
#     ranks (data parallel) and on 1, losses within 1e-5 relative of the
#     8-rank run's;
#   - --keep 2 leaves the two newest checkpoints;
#   - the options' refusals, exit 1 with one message: --save-every 0, --keep
#     -1, --save-every without --checkpoint, --resume from a folder with no
#     checkpoint, --checkpoint in a program that does not train.
# Last line: resume: N passed, N failed.
set -u
shardc=$(realpath "${1:?usage: run_resume.sh SHARDC}")
py=/usr/bin/python3
. "$(dirname "$0")/lib.sh"   # $tmp, ok, bad, CFLAGS
DATA=()   # --data options of the runs (exact's caller sets them)

# compile NAME MODEL [shardc args]: OUTDIR $tmp/NAME, built.
compile() {
	local name=$1 model=$2
	shift 2
	"$shardc" "$model" -o "$tmp/$name" "$@" 2>"$tmp/err" && make -s -C "$tmp/$name" >/dev/null 2>>"$tmp/err" ||
		{ bad "$name does not compile: $(head -3 "$tmp/err")"; return 1; }
}

# same_params A B: every param_*.npy of A equals B's byte for byte.
same_params() {
	local f n=0
	for f in "$1"/param_*.npy; do
		cmp -s "$f" "$2/$(basename "$f")" || return 1
		n=$((n + 1))
	done
	[ $n -gt 0 ]
}

# session SID: the live processes of session SID (setsid's), from /proc: a
# minimal Debian has no pkill.
session() {
	local sid=$1 f s
	for f in /proc/[0-9]*/stat; do
		read -r s 2>/dev/null <"$f" || continue
		s=${s##*) }   # after the command's name: state, ppid, pgrp, session, ...
		set -- $s
		[ "$4" = "$sid" ] && [ "$1" != Z ] && { f=${f#/proc/}; echo "${f%/stat}"; }
	done
}

# interrupted NAME STEPS SEED: NAME's run of STEPS steps checkpointing every
# step, killed three times, each as soon as its loss line shows a step drawn
# at random (seeded) from those it has not reached in its first half, so the
# kill lands after that step's line, in its update or its checkpoint's
# write; resumed after each, then left to end. Its results in
# $tmp/NAME/killed. Prints the kills and how many of them left a checkpoint
# half written (a step-N.tmp folder).
interrupted() {
	local dir=$tmp/$1 steps=$2 kills=0 torn=0 resume=() pid at=0 target room last
	rm -rf "$dir/ck" "$dir/killed"
	RANDOM=$3
	while :; do
		# emptied here, before the watcher's tail opens it: a tail that read
		# the last try's lines before the run's own '>' emptied it would
		# take the new lines, once longer, for lines appended after them
		: >"$dir/try.log"
		# niced, so that on a loaded machine the watcher below still sees the
		# target step's line before the run has gone past it (or ended)
		setsid nice -n 19 "$dir/run.sh" --steps "$steps" --checkpoint "$dir/ck" --save-every 1 --keep 2 --log-every 1 \
			--output-dir "$dir/killed" "${resume[@]}" "${DATA[@]}" >"$dir/try.log" 2>&1 &
		pid=$!
		if [ $kills -lt 3 ]; then
			# the kills spread over the first half, leaving the second
			# half's time for the watcher to land the last one
			room=$(((steps / 2 - at) / (3 - kills)))
			target=$((at + 1 + RANDOM % (room > 0 ? room : 1)))
			# the target step's line as soon as it is written: tail follows
			# the log (no polling) until the run ends
			if grep -q -m1 "^step: $target," <(tail -n +1 -F --pid=$pid "$dir/try.log" 2>/dev/null) &&
			   kill -0 $pid 2>/dev/null; then
				kill -9 $(session $pid) 2>/dev/null   # the whole job: mpirun gives each rank a process group
				wait $pid 2>/dev/null
				for _ in $(seq 100); do [ -n "$(session $pid)" ] || break; sleep 0.05; done
				kills=$((kills + 1))
				ls -d "$dir/ck"/step-*.tmp >/dev/null 2>&1 && torn=$((torn + 1))
				# the next run starts after the newest whole checkpoint: the
				# kill lands a few steps past the target on a loaded machine
				last=$(ls -d "$dir/ck"/step-* 2>/dev/null | grep -v '\.tmp$' | tail -1)
				if [ -n "$last" ] && [ $((10#${last##*step-})) -ge "$steps" ]; then
					# so late that the last step's checkpoint was written (a
					# loaded machine): drop it, as if the kill had come before,
					# so that the resumed run has a step left (--keep 2 kept the one before)
					rm -rf "$last"
					last=$(ls -d "$dir/ck"/step-* 2>/dev/null | grep -v '\.tmp$' | tail -1)
				fi
				[ -n "$last" ] && { resume=(--resume "$dir/ck"); at=$((10#${last##*step-})); }
				continue
			fi
		fi
		if ! wait $pid; then
			echo "run failed: $(grep -m2 -e shardc -e error "$dir/try.log")" >&2
			return 1
		fi
		echo "$kills $torn"
		return 0
	done
}

# seeds FULL FEW: the seeds to run, FULL under E2E_FULL=1 (make test-full), else FEW.
seeds() { if [ -n "${E2E_FULL:-}" ]; then echo "$1"; else echo "$2"; fi; }

# exact NAME STEPS [SEEDS]: the uninterrupted run (checkpointing every step,
# as the others), then interrupted ones, a seed each (1 2 3).
exact() {
	local name=$1 steps=$2 seeds=${3:-1 2 3} seed k
	if ! "$tmp/$name/run.sh" --steps "$steps" --checkpoint "$tmp/$name/ck_whole" --save-every 1 \
		--output-dir "$tmp/$name/whole" "${DATA[@]}" >"$tmp/$name/whole.log" 2>&1; then
		bad "$name: the uninterrupted run fails: $(tail -3 "$tmp/$name/whole.log")"
		return
	fi
	for seed in $seeds; do
		if k=$(interrupted "$name" "$steps" $seed 2>"$tmp/err"); then
			set -- $k
			if [ "$1" != 3 ]; then
				bad "$name, seed $seed: $1 kills of 3 hit the run (it ended first)"
			elif same_params "$tmp/$name/whole" "$tmp/$name/killed"; then
				ok "$name, seed $seed: killed $1 times ($2 in a checkpoint's write), resumed: the parameters of" \
					"the uninterrupted run, bit for bit"
			else
				bad "$name, seed $seed: killed $1 times, resumed: parameters differ from the uninterrupted run's"
			fi
		else
			bad "$name, seed $seed: $(head -3 "$tmp/err")"
		fi
	done
}

compile megatron8 tests/e2e/megatron_layer.ir && exact megatron8 150 "$(seeds "1 2 3" "1 2")"
compile megatron1 tests/e2e/megatron_layer.ir --parallel-mode stand_alone && exact megatron1 150 "$(seeds "1 2 3" 1)"
compile loss_scale8 tests/e2e/mixed_loss_scale_f16.ir && exact loss_scale8 150 "$(seeds "1 2" 1)"
compile accumulate4 tests/e2e/accumulate.ir && exact accumulate4 150 "$(seeds "1 2" 1)"
compile bf16_params8 tests/e2e/half_transformer_bf16.ir && exact bf16_params8 60 "$(seeds "1 2" 1)"
compile bf16_mixed8 tests/e2e/megatron_layer.ir --precision bf16 && exact bf16_mixed8 150 "$(seeds "1 2" 1)"
compile lamb_zero4 tests/e2e/lamb_zero.ir && exact lamb_zero4 150 "$(seeds "1 2" 1)"
# a dataset read a batch a step, shuffled by epoch: resumed at the step's batch
"$py" - "$tmp" <<'PY'
import sys, numpy as np
rng = np.random.default_rng(5)
np.save(sys.argv[1] + "/x.npy", rng.uniform(-1, 1, (112, 32)).astype("<f4"))
np.save(sys.argv[1] + "/label.npy", rng.integers(0, 10, 112).astype("<i4"))
PY
DATA=(--data "x=$tmp/x.npy" --data "label=$tmp/label.npy" --shuffle 7)
compile stream4 ir-samples/data_parallel_mlp.ir && exact stream4 150 "$(seeds "1 2" 1)"
DATA=()

# Resharding: step 4's checkpoint of the 8-rank plan on 4 ranks (data parallel) and on 1.
if [ -d "$tmp/megatron8" ] &&
   "$tmp/megatron8/run.sh" --steps 8 --checkpoint "$tmp/reshard" --save-every 4 --output-dir "$tmp/r8" \
	>"$tmp/r8.log" 2>&1; then
	rm -rf "$tmp/reshard/step-000000008"
	for target in "dp4 --device-num 4 --parallel-mode data_parallel" "one --parallel-mode stand_alone"; do
		set -- $target
		name=$1
		shift
		if compile "$name" tests/e2e/megatron_layer.ir "$@" &&
		   "$tmp/$name/run.sh" --steps 8 --resume "$tmp/reshard" --output-dir "$tmp/$name/r" >"$tmp/$name.log" 2>&1; then
			if msg=$("$py" - "$tmp/r8.log" "$tmp/$name.log" <<'PY'
import re, sys
def losses(path):
    return {int(s): float(x) for s, x in re.findall(r"^step: (\d+), loss is ([^,\s]+)", open(path).read(), re.M)}
a, b = losses(sys.argv[1]), losses(sys.argv[2])
steps = sorted(set(b))
if steps != [5, 6, 7, 8]:
    sys.exit("the resumed run's steps are %s, not 5 to 8" % steps)
worst = max(abs(b[s] - a[s]) / abs(a[s]) for s in steps)
print("worst relative loss difference %.3g" % worst)
sys.exit(worst > 1e-5)
PY
			); then
				ok "the 8-rank checkpoint resumed on $name: $msg"
			else
				bad "the 8-rank checkpoint resumed on $name: $msg"
			fi
		else
			bad "the 8-rank checkpoint does not resume on $name: $(tail -3 "$tmp/$name.log")"
		fi
	done
	n=$(ls -d "$tmp/megatron8/ck"/step-* 2>/dev/null | wc -l)
	[ "$n" = 2 ] && ok "--keep 2 leaves 2 checkpoints" || bad "--keep 2 leaves $n checkpoints"
else
	bad "the 8-rank Megatron run with checkpoints fails: $(tail -3 "$tmp/r8.log")"
fi

# refuse MESSAGE OUTDIR ARGS...: exit 1 with MESSAGE
refuse() {
	local want=$1 dir=$2
	shift 2
	"$dir/run.sh" "$@" --output-dir "$tmp/refused" >"$tmp/out" 2>&1
	local status=$?
	if [ $status = 1 ] && grep -qF -e "$want" "$tmp/out"; then
		ok "refused: $*"
	else
		bad "run.sh $*: exit $status, $(grep shardc "$tmp/out" | head -2)"
	fi
}
if [ -d "$tmp/megatron1" ]; then
	mkdir -p "$tmp/empty"
	refuse "shardc: --save-every '0': expected a positive integer" "$tmp/megatron1" --checkpoint "$tmp/c" --save-every 0
	refuse "shardc: --keep '-1': expected a non-negative integer" "$tmp/megatron1" --checkpoint "$tmp/c" --keep -1
	refuse "shardc: --save-every and --keep need --checkpoint DIR" "$tmp/megatron1" --save-every 2
	refuse "shardc: --resume $tmp/empty: no checkpoint in it" "$tmp/megatron1" --resume "$tmp/empty"
	[ -d "$tmp/megatron8/ck" ] &&   # its checkpoints are past step 1: nothing would run (and no made-up results)
		refuse "and the run ends at step 1 (--steps counts every step from the first): nothing is left to run" \
			"$tmp/megatron1" --resume "$tmp/megatron8/ck" --steps 1
	refuse "it is one checkpoint's folder: give the folder that holds it" \
		"$tmp/megatron1" --resume "$(ls -d "$tmp/megatron8/ck"/step-* | tail -1)"
	refuse "shardc: --resume restores every parameter (and the optimizer state) from the checkpoint" \
		"$tmp/megatron1" --resume "$tmp/megatron8/ck" --params "$(ls -d "$tmp/megatron8/ck"/step-* | tail -1)/model.safetensors"
	# a checkpoint whose file was cut short: the message names --resume, the option that read it
	if [ -d "$tmp/megatron8/ck" ]; then
		last=$(ls -d "$tmp/megatron8/ck"/step-* | head -1)   # the older: the run goes on past it
		mkdir -p "$tmp/cutck" && cp -r "$last" "$tmp/cutck/" &&
			truncate -s 1000 "$tmp/cutck/${last##*/}/model.safetensors"
		refuse "shardc: --resume $tmp/cutck/${last##*/}/model.safetensors is truncated" "$tmp/megatron1" \
			--resume "$tmp/cutck" --steps 150
	fi
fi
compile forward ir-samples/matmul_relu_semi.ir &&
	refuse "shardc: --checkpoint and --resume are for training: this model has no train block" "$tmp/forward" \
		--checkpoint "$tmp/c"
echo "resume: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
