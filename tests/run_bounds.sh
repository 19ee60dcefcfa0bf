#!/bin/sh
# run_bounds.sh SHARDC: work and output that must not run away with the model.
#   - a chain of 20,000 graphs, each calling the one before once, compiles
#     (timeout 60 s: it took 4 to 14 s when name lookups were quadratic) and its
#     inlined names stay short (they grew by two bytes per level, 40 KB deep);
#   - a data-parallel training model's program.c is as big on 1,024 ranks as on
#     64 (within 64 bytes: it names its groups by a grid, not by listing every
#     member; 4,096 ranks made 113 MB of OUT), and so is rank_0.c, its table
#     (within 1.2x); its OUT on 1,024 ranks is under 10 MB (every rank's whole
#     program made 9.9 MB of C);
#   - a 100-layer GPT stack's OUT (hidden 256, Megatron strategies) is on 64
#     ranks within 1.5x of its OUT on one (manifest.json listing every rank's
#     piece of every tensor made it 3.6x).
# The refusal of an inlining bomb is a golden test (tests/bad/inline_too_big*.ir);
# `make bench` prints the chain's --check time.
# Last line: N passed, N failed.
shardc=${1:?usage: run_bounds.sh SHARDC}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }

python3 tools/gen_calls.py --graphs 20000 -o "$tmp/chain.ir"
if timeout 60 "$shardc" "$tmp/chain.ir" -o "$tmp/chain" --dump-ir 2>"$tmp/err"; then
	ok
	longest=$(grep -o '%[A-Za-z0-9_.]*' "$tmp/chain/ir/step_parallel_begin.ir" | awk '{ if (length($0) > n) n = length($0) } END { print n }')
	if [ "$longest" -le 64 ]; then ok; else bad "20,000-graph chain: a value name of $longest bytes"; fi
else
	bad "20,000-graph chain does not compile within 60 s"; cat "$tmp/err"
fi

for n in 64 1024; do
	sed -e "s/device_num: 4/device_num: $n/" -e "s/(16, /($n, /g; s/(16,)/($n,)/g" ir-samples/data_parallel_mlp.ir \
		>"$tmp/dp$n.ir"
	timeout 120 "$shardc" "$tmp/dp$n.ir" -o "$tmp/dp$n" 2>"$tmp/err" || { bad "data_parallel_mlp on $n ranks"; cat "$tmp/err"; }
done
s64=$(wc -c <"$tmp/dp64/program.c") s1024=$(wc -c <"$tmp/dp1024/program.c")
echo "bounds: data_parallel_mlp program.c: $s64 bytes on 64 ranks, $s1024 on 1,024"
if [ "$s1024" -le $((s64 + 64)) ]; then ok; else bad "program.c grows with the ranks: $s64 -> $s1024 bytes"; fi
s64=$(wc -c <"$tmp/dp64/rank_0.c") s1024=$(wc -c <"$tmp/dp1024/rank_0.c")
echo "bounds: data_parallel_mlp rank_0.c: $s64 bytes on 64 ranks, $s1024 on 1,024"
if [ $((s1024 * 5)) -le $((s64 * 6)) ]; then ok; else bad "rank_0.c grows with the ranks: $s64 -> $s1024 bytes"; fi
out=$(du -sb "$tmp/dp1024" | cut -f1)
echo "bounds: data_parallel_mlp OUT on 1,024 ranks: $out bytes"
if [ "$out" -lt 10000000 ]; then ok; else bad "OUT of 1,024 ranks is $out bytes, over 10 MB"; fi

for n in 1 64; do
	python3 tools/gen_gpt.py --layers 100 --hidden 256 --megatron --devices $n -o "$tmp/gpt$n.ir"
	"$shardc" "$tmp/gpt$n.ir" -o "$tmp/gpt$n" 2>"$tmp/err" || { bad "100-layer GPT on $n ranks"; cat "$tmp/err"; }
done
o1=$(du -sb "$tmp/gpt1" | cut -f1) o64=$(du -sb "$tmp/gpt64" | cut -f1)
echo "bounds: 100-layer GPT OUT: $o1 bytes on 1 rank, $o64 on 64"
if [ $((o64 * 2)) -le $((o1 * 3)) ]; then ok; else bad "OUT grows with the ranks: $o1 -> $o64 bytes"; fi

echo "bounds: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
