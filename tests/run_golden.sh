#!/bin/sh
# run_golden.sh SHARDC: golden diagnostics. Each tests/bad/NAME.ir is compiled
# (with the arguments of a `# args:` first line, default --check); its stderr
# must equal tests/bad/NAME.err and its exit status the `# exit:` line
# (default 1). With UPDATE=1 the .err files are rewritten instead.
# Last line: N passed, N failed.
shardc=${1:?usage: run_golden.sh SHARDC}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
for f in tests/bad/*.ir; do
	name=${f%.ir}
	args=$(sed -n '1s/^# args: //p' "$f")
	[ -n "$args" ] || args=--check
	want=$(sed -n '1,3s/^# exit: //p' "$f")
	[ -n "$want" ] || want=1
	# shellcheck disable=SC2086
	"$shardc" "$f" $args >"$tmp/out" 2>"$tmp/err"
	got=$?
	if [ "${UPDATE:-0}" = 1 ]; then
		cp "$tmp/err" "$name.err"
	fi
	if [ "$got" = "$want" ] && [ -f "$name.err" ] && cmp -s "$tmp/err" "$name.err"; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "FAIL $f: exit $got (want $want)"
		[ -f "$name.err" ] && diff -u "$name.err" "$tmp/err"
	fi
done
echo "golden: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
