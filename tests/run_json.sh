#!/bin/sh
# run_json.sh SHARDC: every JSON file shardc writes parses, at every device
# count. manifest.json and strategy.json of every sample and e2e model on
# 1, 2, 8 and 64 devices in every parallel mode (the search's both modes
# included), of every good model (MindSpore's tests, translated) on 1, 8 and
# 64 (with JSON_FULL=1, make test-full, every model on 1, 2, 4, 8, 16 and 64), and of 2-layer GPT stacks (tools/gen_gpt.py) at 64, 128
# and 1,024 devices, Megatron-annotated and searched, trained with bf16,
# ZeRO level 2 and recomputation: each is read by Python's json module, and
# a strategy.json is loaded back with --strategy-in (save and reload).
# A compile that refuses the model (exit 1) writes nothing to parse.
# Last line: json: N passed, N failed.
shardc=${1:?usage: run_json.sh SHARDC}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
py=/usr/bin/python3
pass=0 fail=0 n=0
: >"$tmp/outs"
compile() {   # compile LABEL MODEL ARGS...: OUT listed when it compiled
	label=$1 model=$2
	shift 2
	n=$((n + 1))
	out="$tmp/o$n"
	"$shardc" "$model" -o "$out" "$@" >/dev/null 2>"$tmp/err"
	rc=$?
	if [ $rc = 0 ]; then
		echo "$out $label" >>"$tmp/outs"
	elif [ $rc != 1 ]; then
		echo "FAIL $label: exit $rc"; head -5 "$tmp/err"; fail=$((fail + 1))
	fi
}
for f in ir-samples/*.ir tests/e2e/*.ir tests/good/*.ir; do
	devs="1 2 4 8 16 64"
	[ -n "${JSON_FULL:-}" ] || devs="1 2 8 64"
	case $f in tests/good/*) [ -n "${JSON_FULL:-}" ] || devs="1 8 64" ;; esac
	for dev in $devs; do
		for mode in stand_alone data_parallel semi_auto_parallel auto_parallel/sharding_propagation \
		            auto_parallel/recursive_programming; do
			search=
			[ "${mode#*/}" != "$mode" ] && search="--search-mode ${mode#*/}"
			# shellcheck disable=SC2086
			compile "$f --device-num $dev --parallel-mode ${mode%/*} $search" "$f" \
				--device-num "$dev" --parallel-mode "${mode%/*}" $search
		done
	done
done
for dev in 64 128 1024; do
	for how in "--megatron --mp 4" "--mode auto_parallel --search sharding_propagation"; do
		for train in "" "--train --precision bf16 --zero level2 --recompute true"; do
			g="$tmp/gpt$n.ir"
			# shellcheck disable=SC2086
			$py tools/gen_gpt.py --layers 2 --devices "$dev" $how $train -o "$g" || { fail=$((fail + 1)); continue; }
			compile "gen_gpt.py --layers 2 --devices $dev $how $train" "$g"
		done
	done
done
# Parse them all in one Python.
$py - "$tmp/outs" >"$tmp/parsed" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    out, label = line.rstrip("\n").split(" ", 1)
    bad = []
    for name in ("manifest.json", "strategy.json"):
        try:
            json.load(open(out + "/" + name))
        except Exception as e:
            bad.append("%s: %s" % (name, e))
    print(("ok " if not bad else "FAIL ") + label + ("" if not bad else ": " + "; ".join(bad)))
PY
while read -r verdict rest; do
	if [ "$verdict" = ok ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL $rest"; fi
done <"$tmp/parsed"
# Save and reload: a GPT stack's strategies at 1,024 devices read back.
g="$tmp/reload.ir"
$py tools/gen_gpt.py --layers 2 --devices 1024 --megatron --mp 4 -o "$g"
if "$shardc" "$g" -o "$tmp/r1" --strategy-out "$tmp/s.json" 2>"$tmp/err" &&
   "$shardc" "$g" -o "$tmp/r2" --strategy-in "$tmp/s.json" 2>>"$tmp/err" &&
   cmp -s "$tmp/r1/manifest.json" "$tmp/r2/manifest.json"; then
	pass=$((pass + 1))
else
	echo "FAIL strategy.json of a 1,024-device GPT stack does not load back to the same plan"; head -5 "$tmp/err"
	fail=$((fail + 1))
fi
echo "json: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
