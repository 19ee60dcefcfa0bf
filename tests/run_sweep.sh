#!/bin/sh
# run_sweep.sh SHARDC: the sanitized compiler (build/san/shardc) over every
# sample, device count and parallel mode, looking for crashes.
#
# Every model in ir-samples/, tests/good/ and tests/e2e/, plus generated
# chains of N split ReLUs ending in a Reshape whose split cannot carry (the
# redistribution that grows lower.c's value array mid-Reshape, N = 1..130 so
# that some N crosses each capacity doubling), is compiled with --dump-ir on
# 1, 3, 8 and 16 devices (SWEEP_FULL=1, make test-full: 2, 4 and 6 too; 3
# and 8 already meet uneven and even splits; tests/good's models, MindSpore's
# tests translated for their own count, on 1 and 8 unless SWEEP_FULL) in stand_alone, data_parallel,
# semi_auto_parallel and auto_parallel with both search modes (every sample
# and e2e model also in mixed precision, fp16 and bf16, on 1 and 8 devices in
# semi_auto_parallel and the double-recursive search); each
# successful compile's own step_parallel_begin.ir is compiled again with the
# same options (on 1, 3 and 8 devices; on every count with SWEEP_FULL: the
# printer's output does not depend on the count beyond what those meet), and
# a sample's or e2e model's every step_parallel_end.ir reads back with
# --check on 3 and 8 devices in semi_auto_parallel (uneven pieces), in
# Float32 and in bf16. A compile passes when it exits 0, or 1 with a clean
# diagnostic (the sample's strategies need 8 devices, say); a sanitizer
# report, an exit status of 2 or more or a signal fails it. Two compiles run
# at a time (SWEEP_JOBS). Last line: N passed, N failed.
#
# run_sweep.sh --one SHARDC MODEL DEVICES MODE SEARCH PRECISION OUT RESULT: one
# compile (and its step_parallel_begin.ir), the verdict written to RESULT.
if [ "$1" = --one ]; then
	shardc=$2 model=$3 dev=$4 mode=$5 search=$6 prec=$7 out=$8 result=$9
	label="$model --device-num $dev --parallel-mode $mode${search:+ --search-mode $search}${prec:+ --precision $prec}"
	# A sanitizer report must not pass for exit 1, the status of a bad model.
	export ASAN_OPTIONS=exitcode=86:detect_leaks=1 UBSAN_OPTIONS=exitcode=87:halt_on_error=1:print_stacktrace=1
	passes="1 2"
	[ -z "${SWEEP_FULL:-}" ] && case $dev in 2 | 16) passes=1 ;; esac
	for pass in $passes; do
		in=$model
		[ $pass -eq 2 ] && in="$out/ir/step_parallel_begin.ir" label="$label, its step_parallel_begin.ir"
		o="$out.$pass"
		"$shardc" "$in" -o "$o" --dump-ir --device-num "$dev" --parallel-mode "$mode" \
			${search:+--search-mode "$search"} ${prec:+--precision "$prec"} >/dev/null 2>"$out.err" </dev/null
		rc=$?
		if grep -q 'Sanitizer\|runtime error:' "$out.err" || [ $rc -ge 2 ] ||
		   { [ $rc -eq 1 ] && ! grep -q 'error' "$out.err"; }; then
			{ echo "FAIL $label: exit $rc"; head -n 30 "$out.err"; } >"$result"
			rm -rf "$out".*
			exit 0
		fi
		[ $rc -eq 0 ] || break   # a clean diagnostic: nothing to feed back
		# On 3 and 8 devices (uneven pieces, empty ones) each rank's
		# step_parallel_end reads back too: samples' and e2e models'.
		case $dev.$model in 3.ir-samples/* | 3.tests/e2e/* | 8.ir-samples/* | 8.tests/e2e/*) readback=1 ;; *) readback= ;; esac
		if [ $pass -eq 1 ] && [ -n "$readback" ] && [ "$mode" = semi_auto_parallel ] && [ "$prec" != fp16 ]; then
			for d in "$o"/ir/rank_*/step_parallel_end.ir; do
				"$shardc" "$d" --check >/dev/null 2>"$out.err" </dev/null && continue
				{ echo "FAIL $label: ${d#$o/} does not read back"; head -n 30 "$out.err"; } >"$result"
				rm -rf "$out".*
				exit 0
			done
		fi
		[ $pass -eq 1 ] && mv "$o" "$out"
	done
	echo pass >"$result"
	rm -rf "$out" "$out".*
	exit 0
fi

shardc=${1:?usage: run_sweep.sh SHARDC}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/models" "$tmp/res" "$tmp/out"

# x (64, 32) split by columns through N ReLUs, then reshaped to (2048,):
# a column split cannot carry, so the Reshape gathers first.
n=1
while [ $n -le 130 ]; do
	f="$tmp/models/relu_reshape_$n.ir"
	{
		echo 'context {device_num: 8, parallel_mode: "semi_auto_parallel"}'
		echo 'graph @net(%x: <Tensor[Float32], (64, 32)> = uniform(-1, 1)) {'
		prev=x i=1
		while [ $i -le $n ]; do
			echo "  %r$i = ReLU(%$prev) {in_strategy: ((1, 8),)}"
			prev=r$i i=$((i + 1))
		done
		echo "  %y = Reshape(%$prev) {shape: (2048,)}"
		echo '  return %y'
		echo '}'
	} >"$f"
	n=$((n + 1))
done

# One line per compile: MODEL DEVICES MODE SEARCH ("-": none).
devices="1 3 8 16"
[ -n "${SWEEP_FULL:-}" ] && devices="1 2 3 4 6 8 16"
for f in ir-samples/*.ir tests/good/*.ir tests/e2e/*.ir; do
	devs=$devices
	case $f in tests/good/*) [ -n "${SWEEP_FULL:-}" ] || devs="1 8" ;; esac
	for dev in $devs; do
		for mode in stand_alone data_parallel semi_auto_parallel auto_parallel/sharding_propagation \
		            auto_parallel/recursive_programming; do
			echo "$f $dev ${mode%/*} $([ "${mode#*/}" = "$mode" ] && echo - || echo "${mode#*/}") -"
		done
	done
done >"$tmp/jobs"
for f in ir-samples/*.ir tests/e2e/*.ir; do
	for dev in 1 8; do
		for prec in fp16 bf16; do
			echo "$f $dev semi_auto_parallel - $prec"
			echo "$f $dev auto_parallel recursive_programming $prec"
		done
	done
done >>"$tmp/jobs"
for f in "$tmp"/models/relu_reshape_*.ir; do
	echo "$f 8 semi_auto_parallel - -"
done >>"$tmp/jobs"

# Fields after the fixed arguments: ID MODEL DEVICES MODE SEARCH PRECISION.
awk '{ print NR, $0 }' "$tmp/jobs" |
	xargs -P "${SWEEP_JOBS:-2}" -n 6 sh -c '
		search=$7; [ "$search" = - ] && search=
		prec=$8; [ "$prec" = - ] && prec=
		sh "$0" --one "$1" "$4" "$5" "$6" "$search" "$prec" "$2/out/$3" "$2/res/$3"
	' "$0" "$shardc" "$tmp"

pass=0 fail=0 total=$(wc -l <"$tmp/jobs")
i=1
while [ $i -le "$total" ]; do
	if [ "$(cat "$tmp/res/$i" 2>/dev/null)" = pass ]; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		if [ -s "$tmp/res/$i" ]; then cat "$tmp/res/$i"; else echo "FAIL $(sed -n "${i}p" "$tmp/jobs"): no verdict"; fi |
			sed "s|$tmp/models/|(generated) |"
	fi
	i=$((i + 1))
done
echo "sweep: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
