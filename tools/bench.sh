#!/bin/sh
# bench.sh SHARDC: front-end speed on a 100,000-operator GPT-style model
# (tools/gen_gpt.py, 4000 layers of 25 operators). Target: parse + check
# under 1 s and peak memory under 500 MB.
set -e
shardc=${1:?usage: bench.sh SHARDC}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 tools/gen_gpt.py --layers 4000 --megatron --devices 8 -o "$tmp/gpt.ir"
echo "bench: $(wc -c <"$tmp/gpt.ir") bytes of IR"
best=""
for i in 1 2 3; do
	"$shardc" "$tmp/gpt.ir" --check --time 2>"$tmp/t"
	cat "$tmp/t"
done
echo "bench: target: parse + check of 100,000 operators under 1 s, peak memory under 500 MB"
