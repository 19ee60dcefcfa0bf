#!/bin/sh
# run_roundtrip.sh SHARDC: every sample and good test passes --check, and
# parse -> print -> parse -> print gives identical text. Last line: N passed, N failed.
shardc=${1:?usage: run_roundtrip.sh SHARDC}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
for f in ir-samples/*.ir tests/good/*.ir; do
	[ -e "$f" ] || continue
	name=$(basename "$f" .ir)
	if "$shardc" "$f" -o "$tmp/$name.1" --dump-ir 2>"$tmp/err" &&
	   "$shardc" "$tmp/$name.1/ir/00_parsed.ir" -o "$tmp/$name.2" --dump-ir 2>>"$tmp/err" &&
	   cmp -s "$tmp/$name.1/ir/00_parsed.ir" "$tmp/$name.2/ir/00_parsed.ir"; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "FAIL round trip: $f"
		cat "$tmp/err"
		[ -f "$tmp/$name.2/ir/00_parsed.ir" ] &&
			diff -u "$tmp/$name.1/ir/00_parsed.ir" "$tmp/$name.2/ir/00_parsed.ir"
	fi
done
echo "roundtrip: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
