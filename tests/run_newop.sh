#!/bin/sh
# run_newop.sh CC CFLAGS...: an operator added to ops.h and nowhere else must
# not build. A copy of compiler/ gets a throwaway row at the end of OP_TABLE
# and every source is compiled with the project's flags (-fsyntax-only).
#   - the build must fail, each error a -Wswitch error naming the new
#     operator: no switch over the operators may fall into a default, which
#     would make the operator an unsplit copy with an identity gradient;
#   - every switch over the operators must be among them: the switches that
#     -Wswitch-enum (which also sees switches with a default) finds for the
#     new operator are exactly the ones -Wswitch finds.
# Last line: N passed, N failed (one check per switch over the operators).
cc=${1:?usage: run_newop.sh CC CFLAGS...}
shift
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r compiler "$tmp/compiler"
new=OP_SHARDC_NEWOP
awk '
	/^#define OP_TABLE\(OP\)/ { table = 1 }
	table && !/\\$/ {
		print $0 " \\"
		print "\tOP(SHARDC_NEWOP, \"ShardcNewOp\", 1, 1, 0)"
		table = 0
		next
	}
	{ print }
' compiler/ops.h >"$tmp/compiler/ops.h"
grep -q "OP(SHARDC_NEWOP" "$tmp/compiler/ops.h" || { echo "run_newop: could not add a row to ops.h"; exit 1; }

# `file:line (function)` of the switches each warning option reports for the
# new operator.
switches() {
	for f in "$tmp"/compiler/*.c; do
		LC_ALL=C "$cc" "$@" -fsyntax-only "$f" 2>&1
	done | sed "s|^$tmp/||" | awk -v new="$new" '
		/: In function / { fn = $NF; gsub(/[^A-Za-z0-9_]/, "", fn) }
		index($0, "enumeration value '\''" new "'\'' not handled in switch") {
			split($0, at, ":"); print at[1] ":" at[2] " (" fn ")"
		}' | sort -u
}
switches "$@" >"$tmp/wswitch"
switches "$@" -Wswitch-enum -Wno-error >"$tmp/wswitch_enum"
status=0
for f in "$tmp"/compiler/*.c; do
	LC_ALL=C "$cc" "$@" -fsyntax-only "$f" >>"$tmp/log" 2>&1 || status=1
done
pass=0 fail=0
if [ $status -eq 0 ]; then
	echo "FAIL the compiler builds with $new added to ops.h alone"; fail=$((fail + 1))
fi
if grep ': error: ' "$tmp/log" | grep -v "'$new' not handled in switch" >"$tmp/other"; then
	echo "FAIL errors other than -Wswitch on $new:"; head -n 20 "$tmp/other"; fail=$((fail + 1))
fi
if [ ! -s "$tmp/wswitch_enum" ]; then
	echo "FAIL -Wswitch-enum finds no switch over the operators"; fail=$((fail + 1))
fi
while read -r at; do
	if grep -qxF "$at" "$tmp/wswitch"; then
		echo "ok   $at: a switch over the operators, no default"; pass=$((pass + 1))
	else
		echo "FAIL $at: a switch over the operators has a default that takes $new silently"; fail=$((fail + 1))
	fi
done <"$tmp/wswitch_enum"
echo "newop: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
