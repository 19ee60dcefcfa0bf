#!/bin/sh
# run_mpi_p2p.sh MPIRUN NP PROGRAM: mpi_p2p's messages on NP ranks, then its
# faults: a bad peer for sc_p2p_exchange, sc_p2p_send and sc_p2p_recv (past
# the world, negative, the rank itself) and a bad root for sc_broadcast_host,
# each of which must abort the job (not hang: a timeout fails it) with the
# runtime's message naming the call and the value, and an inf loss through
# sc_check_loss_host, which must end every rank with status 3 and one
# message. Last line: N passed, N failed.
MPIRUN=$1 NP=$2 PROG=$3
T=${TMPDIR:-/tmp}/mpi_p2p.$$
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAILED: $*"; }

if timeout 120 $MPIRUN -np "$NP" "$PROG" >"$T.log" 2>&1; then ok; else bad "messages: status $?"; fi
cat "$T.log"

# expect_fault NAME STATUS MESSAGE: --fault NAME ends in failure (STATUS, or
# any but 0 and the timeout's 124 when it is -) with MESSAGE, in 60 s
expect_fault() {
	timeout 60 $MPIRUN -np "$NP" "$PROG" --fault "$1" >"$T.log" 2>&1
	st=$?
	if [ "$st" -ne 0 ] && [ "$st" -ne 124 ] && { [ "$2" = - ] || [ "$st" -eq "$2" ]; } &&
		grep -Eq -- "$3" "$T.log"; then ok; else
		bad "--fault $1: status $st; want: $3"; head -c 2000 "$T.log"; fi
}
W="is not a rank of the world \[0, $NP\)"
expect_fault exchange-past - "shardc runtime: rank [0-9]+: .*comm\.c:[0-9]+: sc_p2p_exchange: operation 1: peer $NP $W"
expect_fault exchange-negative - "sc_p2p_exchange: operation 1: peer -1 $W"
expect_fault exchange-self - "shardc runtime: rank ([0-9]+): .*: sc_p2p_exchange: operation 1: peer \1 is this rank"
expect_fault send-past - "shardc runtime: rank [0-9]+: .*comm\.c:[0-9]+: sc_p2p_send: peer $NP $W"
expect_fault send-negative - "sc_p2p_send: peer -1 $W"
expect_fault send-self - "shardc runtime: rank ([0-9]+): .*: sc_p2p_send: peer \1 is this rank"
expect_fault recv-self - "shardc runtime: rank ([0-9]+): .*: sc_p2p_recv: peer \1 is this rank"
expect_fault broadcast-root - "sc_broadcast_host: root $NP $W"
expect_fault inf-loss 3 "^shardc: step 7: the loss is inf \(the run diverged: lower the learning rate"
if [ "$fail" -eq 0 ] && [ "$(grep -c 'the loss is' "$T.log")" -ne 1 ]; then
	bad "--fault inf-loss: the message $(grep -c 'the loss is' "$T.log") times, want once"; fi
rm -f "$T.log"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
