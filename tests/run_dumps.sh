#!/bin/sh
# run_dumps.sh SHARDC: the parallel stages of every sample, of the
# vocab-parallel GPT output layer (tests/e2e: statistics completed inside
# split operators), of the recomputed layers (tests/e2e/recompute_layers.ir:
# the recompute attributes step_parallel_begin carries, the recomputed
# operators listed after each rank's graph), of numbers written as operands
# (tests/e2e/scalar_literals.ir: each printed where it was, as written) and of
# computed constants (tests/e2e/causal_attention.ir, rope_attention.ir: each
# rank's piece as begin and end, no in_strategy) and of pipeline stages
# (tests/e2e/pipeline_*.ir: each operator's stage in step_parallel_begin,
# each rank's stage alone in its step_parallel_end, what other stages send
# it as inputs and what it sends them returned), pinned.
#   - ir/step_parallel_begin.ir and every ir/rank_<r>/step_parallel_end.ir
#     equal the golden copies in tests/dumps/<sample>/ (UPDATE=1 rewrites them);
#   - every dump reads back with --check;
#   - step_parallel_begin.ir compiled again gives the same per-rank programs
#     and the same manifest.json, byte for byte (docs/output.md, IR dumps);
#   - compiling twice gives identical output folders.
# Last line: N passed, N failed.
shardc=${1:?usage: run_dumps.sh SHARDC}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
for f in ir-samples/*.ir tests/e2e/vocab_parallel_gpt.ir tests/e2e/recompute_layers.ir tests/e2e/scalar_literals.ir \
	tests/e2e/causal_attention.ir tests/e2e/rope_attention.ir tests/e2e/pipeline_mlp.ir tests/e2e/pipeline_tied_gpipe.ir; do
	name=$(basename "$f" .ir)
	out="$tmp/$name" gold="tests/dumps/$name" ok=1
	if ! "$shardc" "$f" -o "$out" --dump-ir 2>"$tmp/err"; then
		echo "FAIL $f does not compile"; cat "$tmp/err"; fail=$((fail + 1)); continue
	fi
	"$shardc" "$f" -o "$out.again" --dump-ir 2>/dev/null
	diff -r "$out" "$out.again" >"$tmp/diff" || { echo "FAIL $f: two compilations differ"; cat "$tmp/diff"; ok=0; }
	for d in "$out"/ir/step_parallel_begin.ir "$out"/ir/rank_*/step_parallel_end.ir; do
		"$shardc" "$d" --check 2>"$tmp/err" || { echo "FAIL ${d#$tmp/} does not read back"; cat "$tmp/err"; ok=0; }
	done
	if "$shardc" "$out/ir/step_parallel_begin.ir" -o "$out.begin" --dump-ir 2>"$tmp/err"; then
		for d in "$out"/ir/rank_*; do
			r=$(basename "$d")
			cmp -s "$d/step_parallel_end.ir" "$out.begin/ir/$r/step_parallel_end.ir" ||
				{ echo "FAIL $f: step_parallel_begin recompiles to another $r program"; ok=0; }
		done
		cmp -s "$out/manifest.json" "$out.begin/manifest.json" ||
			{ echo "FAIL $f: step_parallel_begin recompiles to another manifest"; ok=0; }
	else
		echo "FAIL $f: step_parallel_begin does not compile"; cat "$tmp/err"; ok=0
	fi
	if [ -n "$UPDATE" ]; then
		rm -rf "$gold"; mkdir -p "$gold"
		(cd "$out/ir" && find . -name 'step_parallel_*.ir' | while read -r p; do
			mkdir -p "$OLDPWD/$gold/$(dirname "$p")"; cp "$p" "$OLDPWD/$gold/$p"; done)
	fi
	for g in $(cd "$gold" 2>/dev/null && find . -name '*.ir' | sort); do
		diff -u "$gold/$g" "$out/ir/$g" >"$tmp/diff" || { echo "FAIL $f: $g differs from $gold/$g"; head -40 "$tmp/diff"; ok=0; }
	done
	[ -f "$gold/step_parallel_begin.ir" ] || { echo "FAIL $f: no golden dumps in $gold (UPDATE=1 writes them)"; ok=0; }
	if [ $ok -eq 1 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
done

# parameter_plan written as a Layout (P("a", "None") on Layout((8,), ("a",)))
# gives the operators the strategies of the tuple form ((8, 1)), and the same
# per-rank programs: the plan's first user follows it either way. (A rank's
# table is compared from its #include on: the comment above it names the
# device matrices its numbers were worked out on, (8, 1) for the tuple's
# home and (8,) for the Layout's, and the numbers are the same.)
for f in ir-samples/shard_net1.ir ir-samples/shard_net2.ir; do
	name=$(basename "$f" .ir) ok=1
	sed 's|parameter_plan: {"block1.dense2.weight": (8, 1)}|parameter_plan: {"block1.dense2.weight": P("a", "None")}|
	     s|^graph @block(|layout P = Layout((8,), ("a",))\n\ngraph @block(|' "$f" >"$tmp/$name.layout.ir"
	grep -q 'P("a", "None")' "$tmp/$name.layout.ir" || ok=0
	"$shardc" "$f" -o "$tmp/$name.tuple" --dump-ir 2>"$tmp/err" &&
		"$shardc" "$tmp/$name.layout.ir" -o "$tmp/$name.layout" --dump-ir 2>>"$tmp/err" || { cat "$tmp/err"; ok=0; }
	grep '^  %' "$tmp/$name.tuple/ir/step_parallel_begin.ir" >"$tmp/a" 2>/dev/null
	grep '^  %' "$tmp/$name.layout/ir/step_parallel_begin.ir" >"$tmp/b" 2>/dev/null
	[ -s "$tmp/a" ] && diff -u "$tmp/a" "$tmp/b" || ok=0
	tail -n +2 "$tmp/$name.tuple/program.c" | cmp -s - "$(tail -n +2 "$tmp/$name.layout/program.c" >"$tmp/c"; echo "$tmp/c")" || ok=0
	for r in "$tmp/$name.tuple"/rank_*.c; do
		sed -n '/^#include/,$p' "$r" >"$tmp/d"
		sed -n '/^#include/,$p' "$tmp/$name.layout/$(basename "$r")" | cmp -s - "$tmp/d" || ok=0
	done
	if [ $ok = 1 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL $f: parameter_plan as a Layout gives other strategies than as a tuple"; fi
done
# --dump-after: each stage's program as it leaves the stage. After search,
# step_parallel_begin; after fuse (the last stage that changes the program),
# every rank's step_parallel_end; after check, the module as 00_parsed.ir;
# after lower, a forward program (no backward operator) that reads back, and
# after differentiate one with the backward pass; a stage with no text of its
# own, or no stage, is refused (exit 2), and so is --dump-after without -o.
for f in ir-samples/transformer_block.ir tests/e2e/transformer_train.ir; do
	name=$(basename "$f" .ir) out="$tmp/after_$name" ok=1
	if "$shardc" "$f" -o "$out" --dump-ir --dump-after check,search,lower,differentiate,fuse 2>"$tmp/err"; then
		cmp -s "$out/ir/after_search.ir" "$out/ir/step_parallel_begin.ir" || { echo "FAIL $f: after_search.ir is not step_parallel_begin"; ok=0; }
		for d in "$out"/ir/rank_*; do
			r=$(basename "$d")
			cmp -s "$out/ir/after_fuse/$r.ir" "$d/step_parallel_end.ir" || { echo "FAIL $f: after_fuse/$r.ir is not its step_parallel_end"; ok=0; }
		done
		cmp -s "$out/ir/after_check.ir" "$out/ir/00_parsed.ir" || { echo "FAIL $f: after_check.ir is not 00_parsed.ir"; ok=0; }
		"$shardc" "$out/ir/after_lower/rank_0.ir" --check 2>"$tmp/err" || { echo "FAIL $f: after_lower/rank_0.ir does not read back"; cat "$tmp/err"; ok=0; }
		if grep -q 'train' "$f"; then
			! grep -q 'backward' "$out/ir/after_lower/rank_0.ir" && grep -q 'backward' "$out/ir/after_differentiate/rank_0.ir" ||
				{ echo "FAIL $f: after_lower has a backward pass, or after_differentiate none"; ok=0; }
		fi
	else
		echo "FAIL $f: --dump-after"; cat "$tmp/err"; ok=0
	fi
	"$shardc" "$f" -o "$out.x" --dump-after flatten 2>"$tmp/err"; rc=$?
	[ $rc = 2 ] && grep -q "no text of its own for the stage 'flatten'" "$tmp/err" || { echo "FAIL $f: --dump-after flatten: exit $rc"; cat "$tmp/err"; ok=0; }
	"$shardc" "$f" -o "$out.x" --dump-after nothing 2>"$tmp/err"; rc=$?
	[ $rc = 2 ] && grep -q "no stage 'nothing'" "$tmp/err" || { echo "FAIL $f: --dump-after nothing: exit $rc"; ok=0; }
	"$shardc" "$f" --check --dump-after check 2>"$tmp/err"; rc=$?
	[ $rc = 2 ] || { echo "FAIL $f: --check --dump-after: exit $rc"; ok=0; }
	if [ $ok -eq 1 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
done
echo "dumps: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
