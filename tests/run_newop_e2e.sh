#!/usr/bin/env bash
# run_newop_e2e.sh: adding an elementwise operator or a normalizer is what
# docs/internals.md's "Adding an operator" says, end to end. In a temporary
# copy of the repo a throwaway operator Cube (y = x^3, dx = 3 x^2 dy) gets
#   - its row in compiler/ops.h's UNARY_OPS,
#   - its kernel's row in runtime/shardc_rt.h's SC_UNARY_TABLE (the CPU and
#     CUDA kernels both expand it),
#   - its math in tools/ref_eval.py (the numpy reference) and
#     tests/sim/eval.c (the double-precision simulator),
# and a throwaway normalizer CenterNorm (LayerNorm without beta:
# (x - mean) / sqrt(var + eps) * gamma) gets
#   - its row in compiler/ops.h's NORM_OPS,
#   - its kernel's row in runtime/shardc_rt.h's SC_NORM_TABLE (centered),
#   - its math in tools/ref_eval.py,
# and nothing else (the simulator's normalizer reads the table). The copy
# builds shardc and the CPU runtime, and models using them (Cube alone, a
# training through Cube, a training through CenterNorm split along the axis
# it normalizes) run through run.sh on 1 and 2 ranks, compared with
# tools/ref_eval.py (tools/npy_compare.py); the simulator compiles with the
# new rows too, and so do the CUDA kernels where nvcc is installed.
# Last line: newop-e2e: N passed, N failed.
set -u
root=$(pwd)
py=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
finish() { echo "newop-e2e: $pass passed, $fail failed"; [ "$fail" -eq 0 ]; exit $?; }

# The copy: the tracked and untracked files git knows of, and the probed
# dependency flags (so that make does not probe again).
repo=$tmp/repo
mkdir -p "$repo/build"
git ls-files -z --cached --others --exclude-standard | (cd "$root" && xargs -0 cp --parents -t "$repo" 2>/dev/null)
[ -f build/config.mk ] && cp build/config.mk "$repo/build/"

# Cube's four edits: the rows go in before Square's (the last row of each
# table has no continuation backslash), the math after Square's; CenterNorm's
# three: its rows before LayerNorm's, its math after LayerNorm's.
"$py" - "$repo" <<'PY' || { bad "could not add Cube to the copy"; finish; }
import sys
repo = sys.argv[1]
def insert(path, anchor, text, after):
    p = repo + "/" + path
    s = open(p).read()
    i = s.index(anchor)
    i = s.index("\n", i) + 1 if after else s.rindex("\n", 0, i) + 1
    open(p, "w").write(s[:i] + text + s[i:])
insert("compiler/ops.h", 'OP(SQUARE, "Square"',
       '\tOP(CUBE, "Cube", 1, 1, 0, SH_FLOAT, R_ELEMWISE, UNARY(CUBE), GR_X, 0, PREC_LOW, V_COPY) \\\n', False)
insert("runtime/shardc_rt.h", "U(SQUARE, X,", "\tU(CUBE, X, x * x * x, 3 * t * t * g) \\\n", False)
insert("tools/ref_eval.py", '"Square": (fwd_square, bwd_square, 1, 1),',
       '    "Cube": (lambda ins, at: ins[0] ** 3, lambda g, ins, at: [3.0 * ins[0] ** 2 * g], 1, 1),\n', True)
insert("tests/sim/eval.c", "case OP_SQUARE: return x * x;", "\tcase OP_CUBE: return x * x * x;\n", True)
insert("compiler/ops.h", 'OP(LAYER_NORM, "LayerNorm"',
       '\tOP(CENTER_NORM, "CenterNorm", 2, 4, A(EPSILON), SH_OWN, R_OWN, NORM(CENTER_NORM), GR_X, 0, PREC_F32, V_COPY) \\\n', False)
insert("runtime/shardc_rt.h", "N(LAYER_NORM, 1)", "\tN(CENTER_NORM, 1) \\\n", False)
insert("tools/ref_eval.py", '"LayerNorm": (fwd_layer_norm, bwd_layer_norm, 3, 3),',
       '    "CenterNorm": (lambda ins, at: fwd_layer_norm(ins + [0 * ins[1]], at),\n'
       '                   lambda g, ins, at: bwd_layer_norm(g, ins + [0 * ins[1]], at)[:2], 2, 2),\n', True)
PY
if ! grep -q 'OP(CUBE' "$repo/compiler/ops.h" || ! grep -q 'U(CUBE' "$repo/runtime/shardc_rt.h" ||
   ! grep -q 'OP(CENTER_NORM' "$repo/compiler/ops.h" || ! grep -q 'N(CENTER_NORM' "$repo/runtime/shardc_rt.h"; then
	bad "the rows did not go in"
	finish
fi
if ! (cd "$repo" && make -j2 NO_CUDA=1 build/shardc runtime >"$tmp/build.log" 2>&1); then
	bad "the copy with Cube does not build: $(grep -m5 -E 'error|Error' "$tmp/build.log")"
	finish
fi
ok "Cube added in ops.h, shardc_rt.h, ref_eval.py and sim/eval.c, CenterNorm in ops.h, shardc_rt.h and ref_eval.py: shardc and the CPU runtime build"
if (cd "$repo" && cc -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror -Icompiler -Ibuild/gen -Itests/sim \
	-fsyntax-only tests/sim/eval.c) >"$tmp/sim.log" 2>&1; then
	ok "the simulator compiles with Cube and CenterNorm"
else
	bad "the simulator does not compile with Cube and CenterNorm: $(grep -m5 error "$tmp/sim.log")"
fi

# The CUDA kernels expand the same SC_UNARY_TABLE row: with nvcc here, the
# copy's kernels.cu must build with Cube in it (no GPU needed to compile).
nvcc=$(command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
if [ -n "$nvcc" ] && [ "${NO_CUDA:-0}" != 1 ]; then
	if (cd "$repo" && "$nvcc" -O0 -std=c++17 -Iruntime -Iruntime/cpu -Xcompiler -Wall,-Wextra,-Werror \
		-c -o "$tmp/kernels_cu.o" runtime/cuda/kernels.cu) >"$tmp/nvcc.log" 2>&1; then
		ok "the CUDA kernels build with Cube and CenterNorm ($nvcc)"
	else
		bad "the CUDA kernels do not build with Cube and CenterNorm: $(grep -m5 error "$tmp/nvcc.log")"
	fi
else
	echo "skip the CUDA kernels with Cube: no nvcc"
fi

cat >"$tmp/cube_fwd.ir" <<'EOF'
context {
  device_num: 2,
  parallel_mode: "semi_auto_parallel",
  seed: 11
}

graph @cube(%x: <Tensor[Float32], (8, 6)> = uniform(-2, 2)) {
  %y = Cube(%x) {in_strategy: ((2, 1))}
  return %y
}
EOF
cat >"$tmp/cube_train.ir" <<'EOF'
context {
  device_num: 2,
  parallel_mode: "semi_auto_parallel",
  seed: 12
}

graph @net(%x: <Tensor[Float32], (8, 16)> = uniform(-1, 1),
           %target: <Tensor[Float32], (8, 4)> = uniform(-0.5, 0.5),
           %w: <Parameter[Float32], (16, 4)> = normal(0.3)) {
  %h = MatMul(%x, %w) {in_strategy: ((1, 2), (2, 1))}
  %c = Cube(%h)
  %loss = MSELoss(%c, %target)
  return %loss, %c
}

train {
  loss: %loss,
  optimizer: SGD(learning_rate: 0.05),
  steps: 3
}
EOF
cat >"$tmp/cnorm_train.ir" <<'EOF'
context {
  device_num: 2,
  parallel_mode: "semi_auto_parallel",
  seed: 13
}

graph @net(%x: <Tensor[Float32], (8, 16)> = uniform(-1, 1),
           %target: <Tensor[Float32], (8, 16)> = uniform(-0.5, 0.5),
           %w: <Parameter[Float32], (16, 16)> = normal(0.3),
           %gamma: <Parameter[Float32], (16,)> = uniform(0.5, 1.5)) {
  %h = MatMul(%x, %w) {in_strategy: ((1, 1), (1, 2))}
  %c = CenterNorm(%h, %gamma) {epsilon: 0.001, in_strategy: ((1, 2), (2,))}
  %loss = MSELoss(%c, %target)
  return %loss, %c
}

train {
  loss: %loss,
  optimizer: SGD(learning_rate: 0.05),
  steps: 3
}
EOF
export CFLAGS="-O0 -std=c11 -Wall -Wextra -Werror"

# calls MODEL RANKS: the kernel calls its program must hold, one a line.
calls() {
	case $1 in
	cube_fwd) echo 'sc_unary(rt, SC_U_CUBE' ;;
	cube_train) printf '%s\n' 'sc_unary(rt, SC_U_CUBE' 'sc_unary_grad(rt, SC_U_CUBE' ;;
	cnorm_train)   # split along its axis on 2 ranks: the slice's piece
		if [ "$2" = 1 ]; then printf '%s\n' 'sc_norm(rt, SC_N_CENTER_NORM' 'sc_norm_grad(rt, SC_N_CENTER_NORM'
		else printf '%s\n' 'sc_norm_part(rt, SC_N_CENTER_NORM' 'sc_norm_part_grad(rt, SC_N_CENTER_NORM'; fi ;;
	esac
}

for model in cube_fwd cube_train cnorm_train; do
	m=$tmp/$model.ir
	if ! "$py" "$repo/tools/ref_eval.py" "$m" --shardc "$repo/build/shardc" --output-dir "$tmp/$model.ref" >"$tmp/ref.log" 2>&1; then
		bad "$model: the reference fails: $(tail -3 "$tmp/ref.log")"
		continue
	fi
	for n in 1 2; do
		out=$tmp/$model.$n
		args=(--device-num "$n")
		[ "$n" = 1 ] && args+=(--parallel-mode stand_alone)
		if ! "$repo/build/shardc" "$m" -o "$out" "${args[@]}" 2>"$tmp/err"; then
			bad "$model on $n ranks: shardc fails: $(head -3 "$tmp/err")"
			continue
		fi
		missing=$(calls "$model" "$n" | while IFS= read -r c; do
			grep -qF "$c" "$out"/program.c || printf ' %s, ...);' "$c"
		done)
		if [ -n "$missing" ]; then
			bad "$model on $n ranks: not in the program:$missing"
			continue
		fi
		mkdir -p "$out/res"
		if ! (cd "$out" && timeout 300 ./run.sh --output-dir "$out/res") >"$out/res/log" 2>"$out/res/err"; then
			bad "$model on $n ranks: run.sh fails: $(tail -5 "$out/res/err")"
			continue
		fi
		if msg=$("$py" "$root/tools/npy_compare.py" "$out/res" "$tmp/$model.ref" --rtol 2e-3 --what "vs reference"); then
			ok "$model on $n ranks: $(echo "$msg" | grep -o 'worst.*' | tr '\n' ' ')$(grep -m3 -o 'loss.*' "$out/res/log" | tr '\n' ' ')"
		else
			bad "$model on $n ranks: $msg"
		fi
	done
done
finish
