#!/bin/sh
# bench.sh SHARDC: front-end speed on a 100,000-operator GPT-style model
# (tools/gen_gpt.py, 4000 layers of 25 operators), then the strategy search's
# speed on GPT-style stacks with no annotations (auto_parallel,
# recursive_programming) of 10, 100 and 1000 layers at 8, 64 and 1024
# devices, then --check of a chain of 20,000 graphs each calling the one
# before (tools/gen_calls.py). Targets: parse + check of 100,000 operators
# under 1 s and peak memory under 500 MB; the search of 100 layers at 64
# devices under 1 s, its time growing linearly with operators; the chain
# linear in the graphs.
set -e
shardc=${1:?usage: bench.sh SHARDC}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 tools/gen_gpt.py --layers 4000 --megatron --devices 8 -o "$tmp/gpt.ir"
echo "bench: $(wc -c <"$tmp/gpt.ir") bytes of IR"
for i in 1 2 3; do
	"$shardc" "$tmp/gpt.ir" --check --time 2>"$tmp/t"
	cat "$tmp/t"
done
echo "bench: target: parse + check of 100,000 operators under 1 s, peak memory under 500 MB"
echo "bench: strategy search (double-recursive), GPT-style stacks with no annotations:"
printf 'bench: %8s %8s %10s %10s %12s\n' layers devices operators "search s" "us/operator"
for layers in 10 100 1000; do
	for devices in 8 64 1024; do
		python3 tools/gen_gpt.py --layers $layers --devices $devices --mode auto_parallel \
			--search recursive_programming -o "$tmp/s.ir"
		"$shardc" "$tmp/s.ir" --check --time 2>"$tmp/t"
		sed -n 's/^shardc: \([0-9]*\) operators:.* search \([0-9.]*\) s.*/\1 \2/p' "$tmp/t" |
			awk -v l=$layers -v d=$devices '{ printf "bench: %8d %8d %10d %10.3f %12.1f\n", l, d, $1, $2, $2 * 1e6 / $1 }'
	done
done
echo "bench: target: 100 layers at 64 devices under 1 s; time per operator flat as layers grow"
python3 tools/gen_calls.py --graphs 20000 -o "$tmp/chain.ir"
echo "bench: a chain of 20,000 graphs, each calling the one before (tools/gen_calls.py):"
"$shardc" "$tmp/chain.ir" --check --time
echo "bench: target: linear in the graphs (it took 4 to 14 s when name lookups were quadratic)"
