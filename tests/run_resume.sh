#!/usr/bin/env bash
# run_resume.sh SHARDC: checkpoints and resuming (docs/output.md, Checkpoints
# of a run), CPU backend.
#   - exact resume: a run killed with SIGKILL (every process of the job at
#     once, as a node dies) after a seeded random delay, checkpointing every step so
#     that kills land in checkpoint writes too, then resumed with --resume
#     until it ends, writes parameters byte for byte those of a run never
#     interrupted: the Megatron GPT layer (Float32, 8 ranks and 1), and the
#     two-layer MLP in mixed precision with Float16 loss scaling (8 ranks;
#     its skipped steps and loss scale carried over), gradient accumulation
#     (4 ranks), and a .npy dataset read a batch a step, shuffled by epoch
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

# interrupted NAME STEPS SEED MS: NAME's run of STEPS steps checkpointing
# every step, killed up to three times after seeded random delays (5% to
# 60% of MS, an uninterrupted run's milliseconds), resumed after each, then
# left to end (started again from scratch, at most 3 times, when it ended
# before the first kill); its results in $tmp/NAME/killed. Prints the kills
# that hit the running job and how many of them left a checkpoint half
# written (a step-N.tmp folder).
interrupted() {
	local dir=$tmp/$1 steps=$2 ms=$4 kills=0 torn=0 fresh=0 resume=() pid wait_ms
	rm -rf "$dir/ck" "$dir/killed"
	RANDOM=$3
	for _ in 1 2 3 4 5 6 7; do
		setsid "$dir/run.sh" --steps "$steps" --checkpoint "$dir/ck" --save-every 1 --keep 2 \
			--output-dir "$dir/killed" "${resume[@]}" "${DATA[@]}" >"$dir/try.log" 2>&1 &
		pid=$!
		if [ $kills -lt 3 ]; then
			wait_ms=$((ms * (5 + RANDOM % 56) / 100))
			sleep "$((wait_ms / 1000)).$(printf %03d $((wait_ms % 1000)))"
			if kill -0 $pid 2>/dev/null; then
				pkill -9 -s $pid   # the whole job: mpirun puts each rank in a process group of its own
				wait $pid 2>/dev/null
				while pgrep -s $pid >/dev/null; do sleep 0.05; done
				kills=$((kills + 1))
				ls -d "$dir/ck"/step-*.tmp >/dev/null 2>&1 && torn=$((torn + 1))
				ls "$dir/ck"/step-* >/dev/null 2>&1 && resume=(--resume "$dir/ck")
				continue
			fi
		fi
		if ! wait $pid; then
			echo "run failed: $(grep -m2 -e shardc -e error "$dir/try.log")" >&2
			return 1
		fi
		if [ $kills -gt 0 ] || [ $fresh -eq 3 ]; then
			echo "$kills $torn"
			return 0
		fi
		fresh=$((fresh + 1))   # ended before the first kill: again, from scratch
		rm -rf "$dir/ck" "$dir/killed"
	done
	echo "never ended" >&2
	return 1
}

# exact NAME STEPS: the uninterrupted run (checkpointing every step: its
# time sets the kills'), then three seeds of interrupted ones.
exact() {
	local name=$1 steps=$2 seed k t0 ms
	t0=$(date +%s%N)
	if ! "$tmp/$name/run.sh" --steps "$steps" --checkpoint "$tmp/$name/ck_whole" --save-every 1 \
		--output-dir "$tmp/$name/whole" "${DATA[@]}" >"$tmp/$name/whole.log" 2>&1; then
		bad "$name: the uninterrupted run fails: $(tail -3 "$tmp/$name/whole.log")"
		return
	fi
	ms=$((($(date +%s%N) - t0) / 1000000))
	for seed in 1 2 3; do
		if k=$(interrupted "$name" "$steps" $seed $ms 2>"$tmp/err"); then
			set -- $k
			if [ "$1" = 0 ]; then
				bad "$name, seed $seed: no kill hit the run (it ended first)"
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

compile megatron8 tests/e2e/megatron_layer.ir && exact megatron8 150
compile megatron1 tests/e2e/megatron_layer.ir --parallel-mode stand_alone && exact megatron1 150
compile loss_scale8 tests/e2e/mixed_loss_scale_f16.ir && exact loss_scale8 150
compile accumulate4 tests/e2e/accumulate.ir && exact accumulate4 150
# a dataset read a batch a step, shuffled by epoch: resumed at the step's batch
"$py" - "$tmp" <<'PY'
import sys, numpy as np
rng = np.random.default_rng(5)
np.save(sys.argv[1] + "/x.npy", rng.uniform(-1, 1, (112, 32)).astype("<f4"))
np.save(sys.argv[1] + "/label.npy", rng.integers(0, 10, 112).astype("<i4"))
PY
DATA=(--data "x=$tmp/x.npy" --data "label=$tmp/label.npy" --shuffle 7)
compile stream4 ir-samples/data_parallel_mlp.ir && exact stream4 150
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
fi
compile forward ir-samples/matmul_relu_semi.ir &&
	refuse "shardc: --checkpoint and --resume are for training: this model has no train block" "$tmp/forward" \
		--checkpoint "$tmp/c"
echo "resume: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
