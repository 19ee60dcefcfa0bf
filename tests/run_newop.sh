#!/bin/sh
# run_newop.sh CC CFLAGS...: what a new row of ops.h needs before it builds.
# Copies of compiler/ (and runtime/shardc_rt.h, which ir.c checks kernel names
# against) get a throwaway row and every source is compiled with the
# project's flags (-fsyntax-only).
# 1. An operator of its own classes (SH_OWN, R_OWN, kernel OWN; its
#    gradient reading everything, GR_XY; computing in Float32 under mixed
#    precision, PREC_F32) at the end of OP_TABLE:
#    - the build must fail, each error a -Wswitch error naming the new
#      operator: no switch over the operators may fall into a default, which
#      would make the operator an unsplit copy with an identity gradient;
#    - every switch over the operators must be among them: the switches that
#      -Wswitch-enum (which also sees switches with a default) finds for the
#      new operator are exactly the ones -Wswitch finds.
# 2. An elementwise operator, a row of UNARY_OPS naming its kernel
#    UNARY(SHARDC_NEWOP):
#    - without its precision and view columns (a row as it was written before
#      ops.h had them), the build must fail: no operator computes in a half
#      type, or in any type, because its row forgot to say;
#    - alone, the build must fail (not a silent copy), every error in ir.c,
#      which checks each row's kernel against the runtime: SC_U_SHARDC_NEWOP
#      undeclared (and its row in SC_UNARY_TABLE missing);
#    - with its kernel's row in SC_UNARY_TABLE (runtime/shardc_rt.h), every
#      source compiles: the switches take it through their UNARY_OPS case.
# (tests/run_newop_e2e.sh then runs such an operator end to end.)
# Last line: N passed, N failed (one check per switch over the operators).
cc=${1:?usage: run_newop.sh CC CFLAGS...}
shift
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r compiler "$tmp/compiler"
mkdir -p "$tmp/runtime"
cp runtime/shardc_rt.h "$tmp/runtime/"
new=OP_SHARDC_NEWOP
awk '
	/^#define OP_TABLE\(OP\)/ { table = 1 }
	table && !/\\$/ {
		print $0 " \\"
		print "\tOP(SHARDC_NEWOP, \"ShardcNewOp\", 1, 1, 0, SH_OWN, R_OWN, OWN, GR_XY, 0, PREC_F32, V_COPY)"
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
# Every compiler source of the copy, syntax only: errors in $tmp/log (anew),
# status 1 when any failed.
compile_all() {
	: >"$tmp/log"
	status=0
	for f in "$tmp"/compiler/*.c; do
		LC_ALL=C "$cc" "$@" -fsyntax-only "$f" >>"$tmp/log" 2>&1 || status=1
	done
}
compile_all "$@"
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

# 2. the elementwise row, before Square's in UNARY_OPS (the table's last row
# has no continuation backslash); first without its last two columns.
awk '/OP\(SQUARE, "Square"/ {
		print "\tOP(SHARDC_NEWOP, \"ShardcNewOp\", 1, 1, 0, SH_FLOAT, R_ELEMWISE, UNARY(SHARDC_NEWOP), GR_X, 0) \\"
	}
	{ print }' compiler/ops.h >"$tmp/compiler/ops.h"
cp runtime/shardc_rt.h "$tmp/runtime/"
awk '/U\(SQUARE, X,/ { print "\tU(SHARDC_NEWOP, X, x * x * x, 3 * t * t * g) \\" } { print }' \
	runtime/shardc_rt.h >"$tmp/runtime/shardc_rt.h"
compile_all "$@"
if [ $status -ne 0 ] && grep -q 'requires 12 arguments, but only 10 given' "$tmp/log"; then
	echo "ok   an elementwise row without its precision and view columns does not build"; pass=$((pass + 1))
else
	echo "FAIL an elementwise row without its precision and view columns:"; grep ': error: ' "$tmp/log" | head -n 5
	fail=$((fail + 1))
fi
cp runtime/shardc_rt.h "$tmp/runtime/"
awk '/OP\(SQUARE, "Square"/ {
		print "\tOP(SHARDC_NEWOP, \"ShardcNewOp\", 1, 1, 0, SH_FLOAT, R_ELEMWISE, UNARY(SHARDC_NEWOP), GR_X, 0, PREC_LOW, V_COPY) \\"
	}
	{ print }' compiler/ops.h >"$tmp/compiler/ops.h"
grep -q "UNARY(SHARDC_NEWOP)" "$tmp/compiler/ops.h" || { echo "run_newop: could not add a row to UNARY_OPS"; exit 1; }
compile_all "$@"
if [ $status -eq 0 ]; then
	echo "FAIL the compiler builds with an elementwise row whose kernel the runtime lacks"; fail=$((fail + 1))
elif grep ': error: ' "$tmp/log" | grep -v "^$tmp/compiler/ir.c:" >"$tmp/other" ||
     ! grep -q "'SC_U_SHARDC_NEWOP' undeclared" "$tmp/log"; then
	echo "FAIL an elementwise row alone: errors other than ir.c's on its missing kernel:"
	head -n 20 "$tmp/other"; fail=$((fail + 1))
else
	echo "ok   an elementwise row alone does not build: ir.c's check of its kernel, SC_U_SHARDC_NEWOP undeclared"
	pass=$((pass + 1))
fi
awk '/U\(SQUARE, X,/ { print "\tU(SHARDC_NEWOP, X, x * x * x, 3 * t * t * g) \\" } { print }' \
	runtime/shardc_rt.h >"$tmp/runtime/shardc_rt.h"
grep -q "U(SHARDC_NEWOP" "$tmp/runtime/shardc_rt.h" || { echo "run_newop: could not add a row to SC_UNARY_TABLE"; exit 1; }
compile_all "$@"
if [ $status -eq 0 ]; then
	echo "ok   an elementwise row with its kernel's row in SC_UNARY_TABLE builds"; pass=$((pass + 1))
else
	echo "FAIL an elementwise row with its kernel does not build:"; grep ': error: ' "$tmp/log" | head -n 20
	fail=$((fail + 1))
fi
echo "newop: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
