#!/bin/sh
# run_agree.sh SHARDC: --check accepts exactly what -o compiles. Every
# ir-samples/ and tests/e2e/ model is compiled both ways on its own device
# count and on 8, in its own and in every parallel mode (auto_parallel in
# both search modes), plain, in bf16, in fp16, with ZeRO-3 and with
# recomputation; each tests/good/ model (MindSpore's tests, translated,
# written for their device count) likewise on its own count only, and on 8
# too with AGREE_FULL=1 (make test-full); every tests/bad/ case
# both ways with its `# args:` line. The two exit statuses must be equal: a
# model error found only after lowering (a --check that passes what -o
# refuses) or an abort shows as a disagreement, printed with its command.
# Two compiles at a time (AGREE_JOBS). Last line: agree: N passed, N failed.
shardc=${1:?usage: run_agree.sh SHARDC}
case $shardc in /*) ;; *) shardc=$(pwd)/$shardc ;; esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# One job a line: the model, then its options without --check or -o: on
# its own device count and on 8, as written and in every parallel mode, each
# plain, in bf16 and fp16, with ZeRO-3 and with recomputation.
for f in ir-samples/*.ir tests/e2e/*.ir tests/good/*.ir; do
	devs='"" "--device-num 8"'
	case $f in tests/good/*) [ -n "${AGREE_FULL:-}" ] || devs='""' ;; esac
	eval "set -- $devs"
	for dev in "$@"; do
		for mode in "" stand_alone data_parallel semi_auto_parallel auto_parallel/sharding_propagation \
		            auto_parallel/recursive_programming; do
			m=
			[ -n "$mode" ] && m="--parallel-mode ${mode%/*}"
			[ "${mode#*/}" != "$mode" ] && m="$m --search-mode ${mode#*/}"
			for extra in "" "--precision bf16" "--precision fp16" "--parallel-optimizer level3" --recompute; do
				# shellcheck disable=SC2086
				echo $f $dev $m $extra
			done
		done
	done
done >"$tmp/jobs"
for f in tests/bad/*.ir; do
	args=$(sed -n '1s/^# args: //p' "$f")
	# drop --check and -o DIR: each run adds its own
	args=$(echo "$args" | sed -e 's/--check//' -e 's/\(-o\|--output\) [^ ]*//')
	echo "$f $args"
done >>"$tmp/jobs"

# one JOB: both compiles; prints "ok" or the disagreement.
cat >"$tmp/one.sh" <<'EOF'
shardc=$1 tmp=$2 job=$3
o=$(mktemp -d "$tmp/o.XXXXXX")
# shellcheck disable=SC2086
"$shardc" $job --check >/dev/null 2>"$o/check.err" </dev/null
c=$?
# shellcheck disable=SC2086
"$shardc" $job -o "$o/out" >/dev/null 2>"$o/out.err" </dev/null
w=$?
# one write a job, so that two jobs' lines do not interleave
if [ "$c" = "$w" ]; then
	msg=ok
else
	msg="DISAGREE: shardc $job --check: exit $c; -o OUT: exit $w
$(head -c 600 "$o/out.err" | head -3 | sed 's/^/  -o: /')"
fi
printf '%s\n' "$msg"
rm -rf "$o"
EOF
tr '\n' '\0' <"$tmp/jobs" | xargs -0 -n 1 -P "${AGREE_JOBS:-2}" sh "$tmp/one.sh" "$shardc" "$tmp" >"$tmp/results"
grep -v '^ok$' "$tmp/results"
pass=$(grep -c '^ok$' "$tmp/results")
fail=$(grep -c '^DISAGREE' "$tmp/results")
echo "agree: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
