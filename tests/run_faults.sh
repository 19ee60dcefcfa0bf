#!/usr/bin/env bash
# run_faults.sh SHARDC: runs that must stop, on 2 ranks (CPU backend), each
# within 10 s, with its one message and its exit status (docs/output.md,
# run.sh: what stops a run):
#   - a Float32 model that diverges (learning rate 1e6): `shardc: step 5: the
#     loss is inf (the run diverged: ...)`, exit 3, no result written;
#   - a NaN in an input: the loss is nan at step 1, exit 3;
#   - Float16 loss scaling whose scale reaches 1 and whose gradients still
#     overflow (targets of 1e7): 10 steps in a row skipped at scale 1, exit 3;
#   - an output folder that cannot be made (under a regular file, which
#     fails for root too): exit 1 before step 1;
#   - a save that fails mid-way (rank 0 under a file size limit, as a full
#     disk): exit 1, the earlier param_w.npy left whole, no temporary file;
#   - a rank killed (SIGKILL): mpirun stops the others and names it;
#   - the progress options: a bad --log-every K or a --log FILE that cannot
#     be written, exit 1; --log-every 4 --log FILE over 10 steps prints and
#     logs steps 1, 4, 8 and 10, the JSON lines with the loss lines' values.
# Last line: faults: N passed, N failed.
set -u
shardc=$(realpath "${1:?usage: run_faults.sh SHARDC}")
py=/usr/bin/python3
. "$(dirname "$0")/lib.sh"   # $tmp, ok, bad, CFLAGS

# model NAME W_COLS OPTIMIZER TRAIN_EXTRA TARGET: y = x w against a target, MSELoss, 2 ranks.
model() {
	cat >"$tmp/$1.ir" <<EOF
context {
  device_num: 2,
  parallel_mode: "data_parallel"
}

graph @net(%x: <Tensor[Float32], (8, 64)> = uniform(-1, 1),
           %target: <Tensor[Float32], (8, $2)> = $5,
           %w: <Parameter[Float32], (64, $2)> = normal(0.1)) {
  %y = MatMul(%x, %w)
  %loss = MSELoss(%y, %target)
  return %loss
}

train {
  loss: %loss,
  optimizer: $3,$4
  steps: 10
}
EOF
	"$shardc" "$tmp/$1.ir" -o "$tmp/$1" >"$tmp/$1.err" 2>&1 && make -s -C "$tmp/$1" >>"$tmp/$1.err" 2>&1 ||
		{ bad "$1: does not compile: $(tail -3 "$tmp/$1.err")"; return 1; }
}

# expect NAME STATUS MESSAGE DIR ARGS...: run.sh of DIR with ARGS ends within 10 s with exit
# STATUS and MESSAGE once (a regular expression), and writes no .npy into its output folder.
expect() {
	local name=$1 want=$2 msg=$3 dir=$4 status n start
	shift 4
	start=$(date +%s)
	timeout 10 "$dir/run.sh" --output-dir "$tmp/res_$name" "$@" >"$tmp/$name.log" 2>&1
	status=$?
	n=$(grep -cE -- "$msg" "$tmp/$name.log")
	if [ "$status" != "$want" ] || [ "$n" != 1 ]; then
		bad "$name: exit $status (want $want), message seen $n times: $msg"
		grep -v '^step' "$tmp/$name.log" | head -8
	elif compgen -G "$tmp/res_$name/*.npy" >/dev/null; then
		bad "$name: wrote $(ls "$tmp/res_$name")"
	else
		ok "$name: exit $status in $(($(date +%s) - start)) s: $(grep -m1 -E -- "$msg" "$tmp/$name.log")"
	fi
}

model diverge 4 "SGD(learning_rate: 1000000)" "" "uniform(-1, 1)" &&
	expect diverge 3 "^shardc: step 5: the loss is inf \(the run diverged: lower the learning rate, or clip gradients with clip_global_norm\)$" "$tmp/diverge"

if model good 4 "SGD(learning_rate: 0.01)" "" "uniform(-1, 1)"; then
	"$py" -c 'import numpy as np, sys; x = np.ones((8, 64), np.float32); x[3, 5] = np.nan; np.save(sys.argv[1], x)' "$tmp/x_nan.npy"
	expect nan_input 3 "^shardc: step 1: the loss is nan \(at the first step, before any update: an input or a parameter holds a NaN" \
		"$tmp/good" --input "x=$tmp/x_nan.npy"
	touch "$tmp/file.txt"
	expect unwritable_folder 1 "^shardc: cannot write to the output folder $tmp/file.txt/sub: Not a directory$" "$tmp/good" \
		--output-dir "$tmp/file.txt/sub"
	grep -q '^step' "$tmp/unwritable_folder.log" && bad "unwritable_folder: a step ran before the folder was checked"
fi

# Float16 loss scaling from 4: steps 1 and 2 halve the scale to 1, steps 3 to 12 are skipped at 1.
model stuck 4 "SGD(learning_rate: 0.001)" ' precision: "fp16", init_loss_scale: 4,' "uniform(1e7, 2e7)" &&
	expect stuck_scale 3 "^shardc: step 12: 10 steps in a row skipped, their gradients overflowing Float16 with the loss scale at 1 " \
		"$tmp/stuck" --steps 100

# A save failing mid-way: rank 0 may write 4 MiB a file (SIGXFSZ ignored: write fails with EFBIG, as
# on a full disk), param_w.npy takes 8 MiB. MPI's shared memory segments are kept under the limit.
if model big 32768 "SGD(learning_rate: 0.01)" "" "uniform(-1, 1)"; then
	res=$tmp/res_big
	if ! timeout 20 "$tmp/big/run.sh" --steps 1 --output-dir "$res" >"$tmp/big.log" 2>&1; then
		bad "save failing: the first run fails: $(tail -3 "$tmp/big.log")"
	else
		cp "$res/param_w.npy" "$tmp/param_w.before"
		mpi=(mpirun --oversubscribe --mca btl_vader_segment_size 1048576)
		[ "$(id -u)" != 0 ] || mpi+=(--allow-run-as-root)
		start=$(date +%s)
		timeout 10 "${mpi[@]}" -np 1 sh -c 'trap "" XFSZ; ulimit -f 4096; exec "$0" "$@"' "$tmp/big/bin/cpu/rank_0" \
			--steps 2 --output-dir "$res" : -np 1 "$tmp/big/bin/cpu/rank_1" --steps 2 --output-dir "$res" \
			>"$tmp/big_fail.log" 2>&1
		status=$?
		msg="shardc: cannot write $res/param_w.npy: File too large"
		if [ $status != 1 ] || [ "$(grep -cxF -- "$msg" "$tmp/big_fail.log")" != 1 ]; then
			bad "save failing: exit $status (want 1), no single '$msg'"
			head -8 "$tmp/big_fail.log"
		elif ! cmp -s "$tmp/param_w.before" "$res/param_w.npy" || [ "$(ls -A "$res")" != "$(printf 'output_0.npy\nparam_w.npy\nparams.safetensors')" ]; then
			bad "save failing: param_w.npy changed or a file was left: $(ls -A "$res" | tr '\n' ' ')"
		else
			ok "save failing: exit 1 in $(($(date +%s) - start)) s, param_w.npy as it was, nothing else left: $msg"
		fi
	fi
fi

# A rank killed: mpirun ends the job and names the rank.
if [ -d "$tmp/good" ]; then
	"$tmp/good/run.sh" --steps 100000000 --output-dir "$tmp/res_kill" >"$tmp/kill.log" 2>&1 &
	job=$!
	for _ in $(seq 100); do grep -q '^step: 1,' "$tmp/kill.log" && break; sleep 0.1; done
	pid=   # rank 1's process, by its command line (/proc: no procps on a bare Debian)
	for c in /proc/[0-9]*/cmdline; do
		case $(tr '\0' ' ' <"$c" 2>/dev/null) in
		"$tmp/good/bin/cpu/rank_1 "*) pid=${c#/proc/}; pid=${pid%/cmdline}; break ;;
		esac
	done
	if [ -z "$pid" ]; then
		bad "rank killed: rank 1 is not running: $(head -3 "$tmp/kill.log")"
		kill "$job" 2>/dev/null
	else
		start=$(date +%s)
		kill -KILL "$pid"
		for _ in $(seq 100); do kill -0 "$job" 2>/dev/null || break; sleep 0.1; done
		if kill -0 "$job" 2>/dev/null; then
			bad "rank killed: the job still runs 10 s after rank 1 was killed"
			kill "$job"   # mpirun (run.sh execs it), which ends its ranks
		else
			wait "$job"
			status=$?
			line=$(grep -m1 -E "process rank 1 .*exited on signal 9" "$tmp/kill.log")
			if [ $status = 0 ] || [ -z "$line" ]; then
				bad "rank killed: exit $status, $(grep -v '^step' "$tmp/kill.log" | head -5)"
			else
				ok "rank killed: exit $status in $(($(date +%s) - start)) s: $line"
			fi
		fi
	fi
fi

# Progress: --log-every and --log (docs/output.md, The progress line).
if [ -d "$tmp/good" ]; then
	expect log_every_zero 1 "^shardc: --log-every '0': expected a positive integer$" "$tmp/good" --log-every 0
	expect log_unwritable 1 "^shardc: --log '$tmp/file.txt/log.jsonl': cannot write it: Not a directory$" "$tmp/good" \
		--log "$tmp/file.txt/log.jsonl"
	if ! timeout 20 "$tmp/good/run.sh" --log-every 4 --log "$tmp/log.jsonl" --output-dir "$tmp/res_log" \
		>"$tmp/log_every.log" 2>&1; then
		bad "--log-every 4 --log: run.sh fails: $(tail -3 "$tmp/log_every.log")"
	elif msg=$("$py" - "$tmp/log_every.log" "$tmp/log.jsonl" <<'PY'
import json, re, sys
lines = re.findall(r"^step: (\d+), loss is ([^,]+), lr ([^,]+), ([^,]+) samples/s, ([^,]+) ms/step, eta (\d+:\d\d:\d\d)$",
                   open(sys.argv[1]).read(), re.M)
log = [json.loads(l) for l in open(sys.argv[2])]
if [int(l[0]) for l in lines] != [1, 4, 8, 10]:
    sys.exit("printed steps %s, expected 1, 4, 8, 10: %s" % ([l[0] for l in lines], open(sys.argv[1]).read()[:300]))
if [r["step"] for r in log] != [1, 4, 8, 10]:
    sys.exit("logged steps %s" % [r["step"] for r in log])
for l, r in zip(lines, log):
    if float(l[1]) != r["loss"] or float(l[2]) != r["lr"] or r["eta_s"] < 0 or r["ms_per_step"] < 0 or \
            r["samples_per_s"] <= 0 or set(r) != {"step", "loss", "lr", "samples_per_s", "ms_per_step", "eta_s"}:
        sys.exit("line %s and record %s differ" % (l, r))
print("steps 1, 4, 8, 10 printed and logged, the records' keys %s" % ", ".join(log[0]))
PY
	); then
		ok "--log-every 4 --log: $msg"
	else
		bad "--log-every 4 --log: $msg"
	fi
fi

echo "faults: $pass passed, $fail failed"
[ $fail = 0 ]
