#!/bin/sh
# run_mpi_p2p.sh MPIRUN NP PROGRAM: mpi_p2p's exchanges on NP ranks, then a
# bad peer (past the world, negative, the rank itself), each of which must
# abort the job (not hang: a timeout fails it) with the runtime's message
# naming the operation and the peer. Last line: N passed, N failed.
MPIRUN=$1 NP=$2 PROG=$3
T=${TMPDIR:-/tmp}/mpi_p2p.$$
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAILED: $*"; }

if timeout 120 $MPIRUN -np "$NP" "$PROG" >"$T.log" 2>&1; then ok; else bad "exchanges: status $?"; fi
cat "$T.log"

# expect_abort WHICH MESSAGE: --bad-peer WHICH ends in failure with MESSAGE, in 60 s
expect_abort() {
	timeout 60 $MPIRUN -np "$NP" "$PROG" --bad-peer "$1" >"$T.log" 2>&1
	st=$?
	if [ "$st" -ne 0 ] && [ "$st" -ne 124 ] && grep -Eq -- "$2" "$T.log"; then ok; else
		bad "--bad-peer $1: status $st; want: $2"; head -c 2000 "$T.log"; fi
}
expect_abort past "shardc runtime: rank [0-9]+: .*comm\.c:[0-9]+: sc_p2p_exchange: operation 1: peer $NP is not a rank of the world \[0, $NP\)"
expect_abort negative "sc_p2p_exchange: operation 1: peer -1 is not a rank of the world \[0, $NP\)"
expect_abort self "shardc runtime: rank ([0-9]+): .*: sc_p2p_exchange: operation 1: peer \1 is this rank"
rm -f "$T.log"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
