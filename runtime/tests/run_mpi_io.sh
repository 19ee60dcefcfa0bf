#!/bin/sh
# run_mpi_io.sh MPIRUN PROGRAM TMPDIR EXAMPLE: the .npy and initializer tests
# across 4 ranks (mpi_io.c), and the header's worked example on 2. numpy (/usr/bin/python3) writes the inputs and checks
# the outputs, the initializers against its own arithmetic of docs/output.md's initializers. Then
# bad inputs: each run must end with status 1 (not hang: a timeout fails it)
# and print its one message once. Last line: N passed, N failed.
MPIRUN=$1 PROG=$2 T=$3 EXAMPLE=$4
PY=/usr/bin/python3
rm -rf "$T" && mkdir -p "$T/out" || exit 1
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAILED: $*"; }

$PY - "$T" <<'EOF' || exit 1
import sys, numpy as np
t = sys.argv[1]
x = ((np.arange(48) * 0.5) - 3).reshape(6, 8).astype('<f4')
np.save(f"{t}/x.npy", x)
with open(f"{t}/x_v2.npy", "wb") as f:
    np.lib.format.write_array(f, x, version=(2, 0))
np.save(f"{t}/y.npy", (np.arange(6) * 10 - 7).astype('<i8'))
np.save(f"{t}/m.npy", np.array([[True, False, True], [False, False, True]]))
np.save(f"{t}/x_f64.npy", x.astype('<f8'))
np.save(f"{t}/x_small.npy", x[:3, :4])
np.save(f"{t}/x_fortran.npy", np.asfortranarray(x))
np.save(f"{t}/x_i4.npy", x.astype('<i4'))
open(f"{t}/x_trunc.npy", "wb").write(open(f"{t}/x.npy", "rb").read()[:-20])
open(f"{t}/not_npy.npy", "w").write("hello\n")
# float16 with its edges; float32 values for a bfloat16 input, most not bfloat16-exact
h = np.array([1/3, 65504, 6e-8, -0.0, np.inf, -2.5] * 4).reshape(4, 6).astype('<f2')
np.save(f"{t}/h.npy", h)
hb = np.array([1/3, 1 + 2**-8, 1 + 3 * 2**-8, 3.3961776e38, 0.1, -7] * 4, dtype=np.float32).reshape(4, 6)
hb[1, [0, 1, 2, 4, 5]] *= 1000
np.save(f"{t}/hb.npy", hb.astype('<f4'))
# uneven shards: 10 rows in pieces of 3, 5 in pieces of 2; ids_bad has 9 in the last real row
np.save(f"{t}/u.npy", (np.arange(30) * 0.25 - 1).reshape(10, 3).astype('<f4'))
ids = (np.arange(10) % 7).reshape(5, 2).astype('<i4')
np.save(f"{t}/ids.npy", ids)
ids[4, 1] = 9
np.save(f"{t}/ids_bad.npy", ids)
EOF

GOOD="--input x=$T/x.npy --input x2=$T/x_v2.npy --input y=$T/y.npy --input m=$T/m.npy --input h=$T/h.npy --input hb=$T/hb.npy"
GOOD="$GOOD --input u=$T/u.npy --input ids=$T/ids.npy"
if timeout 120 $MPIRUN -np 4 "$PROG" $GOOD --output-dir "$T/out" >"$T/good.log" 2>&1; then ok; else
	bad "good inputs: status $?"; cat "$T/good.log"; fi
grep -q "^rank 3: comm bytes sent 0$" "$T/good.log" && ok || bad "sc_finalize's byte report"

cat >"$T/ref.py" <<'EOF'
import math, numpy as np
M = (1 << 64) - 1
def fnv(s):
    h = 0xcbf29ce484222325
    for b in s.encode():
        h = ((h ^ b) * 0x100000001b3) & M
    return h
def sm(z):
    z = (z + 0x9e3779b97f4a7c15) & M
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M
    return z ^ (z >> 31)
def u(name, seed, j):
    return (sm((fnv(name) ^ ((seed * 0x9e3779b97f4a7c15) & M)) + j & M) >> 40) * 2.0 ** -24
def f4(a):
    return a.astype('<f4')
def uniform(name, seed, shape, lo, hi, to=f4):
    n = int(np.prod(shape))
    return to(np.array([lo + (hi - lo) * u(name, seed, i) for i in range(n)]).reshape(shape))
def normal(name, seed, shape, std, to=f4):
    n = int(np.prod(shape))
    return to(np.array([std * math.sqrt(-2 * math.log(1 - u(name, seed, 2 * i))) * math.cos(2 * math.pi * u(name, seed, 2 * i + 1))
                        for i in range(n)]).reshape(shape))
def randint(name, seed, shape, lo, hi):
    n = int(np.prod(shape))
    return np.array([lo + math.floor(u(name, seed, i) * (hi - lo)) for i in range(n)]).reshape(shape).astype('<i4')
EOF

if $PY - "$T" "$(dirname "$0")/../../tools" <<'EOF'; then ok; else bad "saved outputs"; fi
import sys, numpy as np
t = sys.argv[1]
sys.path.insert(0, t)
sys.path.insert(0, sys.argv[2])
from ref import uniform, normal, randint
from ref_eval import round_bf16   # the bfloat16 convention: float32 storage, nearest even
x = np.load(f"{t}/x.npy")
want = {
    "x_split": x, "x_rep": x, "x_rows": x,
    "y_copy": np.load(f"{t}/y.npy"), "m_copy": np.load(f"{t}/m.npy"),
    "w_uniform": uniform("w", 3, (8, 12), -1.0, 1.0),
    "n_normal": normal("layer.0.w", 1, (4, 2, 6), 0.5),
    "r_randint": randint("labels", 2, (16,), -3, 7),
    "s_scalar": uniform("s", 0, (), 2.0, 3.0),
    "u_uneven": np.load(f"{t}/u.npy"), "ids_uneven": np.load(f"{t}/ids.npy"),
    "v_normal_uneven": normal("v", 4, (10, 5), 1.0),
    "k_randint_uneven": randint("k", 5, (5,), 0, 100),
}
# bit for bit: float16 and bfloat16 (saved as float32) round the double once
hb = round_bf16(np.load(f"{t}/hb.npy"))
exact = {
    "h_copy": np.load(f"{t}/h.npy"), "hb_round": hb, "hb_as_f16": hb.astype('<f2'),
    "w_uniform_f16": uniform("w", 3, (8, 12), -1.0, 1.0, to=lambda a: a.astype('<f2')),
    "n_normal_bf16": normal("layer.0.w", 1, (4, 2, 6), 0.5, to=round_bf16),
    "c_fill_f16": np.full(3, 0.1, dtype='<f2'),
    "wb_uniform_bf16_uneven": uniform("wb", 6, (4, 7), -1.0, 1.0, to=round_bf16),
}
bad = 0
for name, w in exact.items():
    got = np.load(f"{t}/out/{name}.npy")
    if got.dtype != w.dtype or got.shape != w.shape or got.tobytes() != w.tobytes():
        print(f"{name}: {got.dtype} {got.shape}\n{got}\nwant {w.dtype} {w.shape}\n{w}"); bad += 1
if not np.isinf(hb[0, 3]) or hb[0, 1] != 1 or hb[0, 2] != 1 + 2**-6:
    print(f"round_bf16 is not what this test assumes: {hb[0]}"); bad += 1
for name, w in want.items():
    got = np.load(f"{t}/out/{name}.npy")
    if got.dtype != w.dtype or got.shape != w.shape:
        print(f"{name}: {got.dtype} {got.shape}, want {w.dtype} {w.shape}"); bad += 1
    elif w.dtype == np.float32 and not np.allclose(got, w, rtol=1e-6, atol=1e-7):
        print(f"{name}: largest difference {np.max(np.abs(got - w))}"); bad += 1
    elif w.dtype != np.float32 and not np.array_equal(got, w):
        print(f"{name}: differs\n{got}\n{w}"); bad += 1
sys.exit(1 if bad else 0)
EOF

# the worked example of shardc_rt.h: y = relu(x @ w) on 2 ranks, x from a file or its initializer
$PY -c "import numpy as np; np.save('$T/ex_x.npy', np.linspace(-1, 1, 512).reshape(16, 32).astype('<f4'))"
for feed in file init; do
	rm -rf "$T/ex" && mkdir -p "$T/ex"
	args=$([ $feed = file ] && echo "--input x=$T/ex_x.npy")
	if timeout 120 $MPIRUN -np 2 "$EXAMPLE" $args --output-dir "$T/ex" >"$T/ex.log" 2>&1 &&
		grep -q "^rank 1: comm bytes sent 256$" "$T/ex.log" && $PY - "$T" $feed <<'EOF'; then ok; else bad "example ($feed)"; cat "$T/ex.log"; fi
import sys, numpy as np
t, feed = sys.argv[1], sys.argv[2]
sys.path.insert(0, t)
from ref import uniform, normal
x = np.load(f"{t}/ex_x.npy") if feed == "file" else uniform("x", 0, (16, 32), 0.0, 1.0)
want = np.maximum(x.astype(np.float64) @ normal("w", 0, (32, 8), 0.01).astype(np.float64), 0)
got = np.load(f"{t}/ex/output_0.npy")
d = np.max(np.abs(got - want))
print(f"example ({feed}): largest difference from numpy {d:.2e}")
sys.exit(0 if got.shape == (16, 8) and d < 1e-6 else 1)
EOF
done

# expect_run NAME MESSAGE NP ARGS...: the good inputs and ARGS must fail with MESSAGE once, in 60 s,
# and the log stay short (names cut)
expect_run() {
	name=$1 msg=$2 np=$3
	shift 3
	timeout 60 $MPIRUN -np "$np" "$PROG" $GOOD "$@" --output-dir "$T/out" >"$T/$name.log" 2>&1
	st=$?
	n=$(grep -cF -- "$msg" "$T/$name.log")
	if [ "$st" -ne 0 ] && [ "$st" -ne 124 ] && [ "$n" -eq 1 ] && ! grep -q "MPI_ABORT" "$T/$name.log" &&
		[ "$(wc -c <"$T/$name.log")" -lt 4000 ]; then ok; else
		bad "$name: status $st, message seen $n times; want: $msg"; head -c 2000 "$T/$name.log"; fi
}
# expect_error NAME FILE MESSAGE [NP [INPUT]]: INPUT (default x) fed from FILE must fail with MESSAGE once
expect_error() {
	expect_run "$1" "$3" "${4:-4}" --input "${5:-x}=$2"
}
expect_error shape "$T/x_small.npy" "shardc: input 'x': $T/x_small.npy has shape (3, 4), expected (6, 8)"
expect_error dtype "$T/x_f64.npy" "shardc: input 'x': $T/x_f64.npy has dtype '<f8' (read: '<f4' float32"
expect_error dtype_i4 "$T/x_i4.npy" "shardc: input 'x': $T/x_i4.npy has dtype int32 ('<i4'), expected float32 ('<f4')"
expect_error missing "$T/nope.npy" "shardc: input 'x': $T/nope.npy cannot be opened: No such file or directory"
expect_error trunc "$T/x_trunc.npy" "shardc: input 'x': $T/x_trunc.npy is truncated: 172 bytes of data, expected 192"
expect_error fortran "$T/x_fortran.npy" "shardc: input 'x': $T/x_fortran.npy is in Fortran order"
expect_error magic "$T/not_npy.npy" "shardc: input 'x': $T/not_npy.npy is not a .npy file"
expect_error h_f4 "$T/x.npy" "shardc: input 'h': $T/x.npy has dtype float32 ('<f4'), expected float16 ('<f2')" 4 h
expect_error hb_f2 "$T/h.npy" \
	"shardc: input 'hb': $T/h.npy has dtype float16 ('<f2'), expected bfloat16 ('<f4': float32 holding bfloat16 values)" 4 hb
expect_error hb_shape "$T/x.npy" "shardc: input 'hb': $T/x.npy has shape (6, 8), expected (4, 6)" 4 hb
expect_error ranks "$T/x.npy" "shardc: this program was compiled for 4 ranks, but runs on 2 (mpirun -np 4)" 2
expect_error dir "$T" "shardc: input 'x': $T is a directory, not a .npy file"
mkfifo "$T/fifo"
expect_error fifo "$T/fifo" "shardc: input 'x': $T/fifo is a FIFO (named pipe), not a .npy file"
expect_error ids_bad "$T/ids_bad.npy" \
	"shardc: input 'ids': $T/ids_bad.npy holds 9 at (4, 1), outside [0, 7): they index a table of 7 rows" 4 ids
expect_run param "shardc: parameter 'p': $T/x_small.npy has shape (3, 4), expected (6, 8)" 4 --param "p=$T/x_small.npy"
expect_run param_name "shardc: --param q=$T/x.npy: the model has no parameter named 'q' (it has: p)" 4 --param "q=$T/x.npy"
long=$($PY -c 'print("n" * 100000)')
expect_run long_name "the model has no input named '$(printf "%.64s" "$long")... (100000 bytes)' (it has: x x2 y m h hb u ids)" \
	4 --input "$long=$T/x.npy"
expect_run long_option "shardc: unknown option '--$(printf "%.62s" "$long")... (100002 bytes)' (known:" 4 "--$long"
for steps in " 3" "3 " "+3" "-3" "0" "3x"; do
	expect_run "steps '$steps'" "shardc: --steps '$steps': expected a positive integer" 4 --steps "$steps"
done
expect_run "steps empty" "shardc: option '--steps' needs a value" 4 --steps=
timeout 120 $MPIRUN -np 4 "$PROG" --inptu "x=$T/x.npy" >"$T/opt.log" 2>&1
st=$?
if [ "$st" -ne 0 ] && [ "$st" -ne 124 ] && [ "$(grep -c "unknown option '--inptu'" "$T/opt.log")" -eq 1 ]; then ok; else
	bad "unknown option: status $st"; cat "$T/opt.log"; fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
