#!/bin/sh
# run_mpi_io.sh MPIRUN PROGRAM TMPDIR EXAMPLE: the .npy and initializer tests
# across 4 ranks (mpi_io.c), and the header's worked example on 2. numpy (/usr/bin/python3) writes the inputs and checks
# the outputs, the initializers against its own IR-SPEC 9 arithmetic. Then
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
EOF

GOOD="--input x=$T/x.npy --input x2=$T/x_v2.npy --input y=$T/y.npy --input m=$T/m.npy"
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
def uniform(name, seed, shape, lo, hi):
    n = int(np.prod(shape))
    return np.array([lo + (hi - lo) * u(name, seed, i) for i in range(n)]).reshape(shape).astype('<f4')
def normal(name, seed, shape, std):
    n = int(np.prod(shape))
    return np.array([std * math.sqrt(-2 * math.log(1 - u(name, seed, 2 * i))) * math.cos(2 * math.pi * u(name, seed, 2 * i + 1))
                     for i in range(n)]).reshape(shape).astype('<f4')
def randint(name, seed, shape, lo, hi):
    n = int(np.prod(shape))
    return np.array([lo + math.floor(u(name, seed, i) * (hi - lo)) for i in range(n)]).reshape(shape).astype('<i4')
EOF

if $PY - "$T" <<'EOF'; then ok; else bad "saved outputs"; fi
import sys, numpy as np
t = sys.argv[1]
sys.path.insert(0, t)
from ref import uniform, normal, randint
x = np.load(f"{t}/x.npy")
want = {
    "x_split": x, "x_rep": x, "x_rows": x,
    "y_copy": np.load(f"{t}/y.npy"), "m_copy": np.load(f"{t}/m.npy"),
    "w_uniform": uniform("w", 3, (8, 12), -1.0, 1.0),
    "n_normal": normal("layer.0.w", 1, (4, 2, 6), 0.5),
    "r_randint": randint("labels", 2, (16,), -3, 7),
    "s_scalar": uniform("s", 0, (), 2.0, 3.0),
}
bad = 0
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

# expect_error NAME FILE MESSAGE [NP]: x fed from FILE must fail with MESSAGE once
expect_error() {
	name=$1 file=$2 msg=$3 np=${4:-4}
	timeout 120 $MPIRUN -np "$np" "$PROG" --input "x=$file" --input "x2=$T/x_v2.npy" --input "y=$T/y.npy" \
		--input "m=$T/m.npy" --output-dir "$T/out" >"$T/$name.log" 2>&1
	st=$?
	n=$(grep -cF -- "$msg" "$T/$name.log")
	if [ "$st" -ne 0 ] && [ "$st" -ne 124 ] && [ "$n" -eq 1 ] && ! grep -q "MPI_ABORT" "$T/$name.log"; then ok; else
		bad "$name: status $st, message seen $n times; want: $msg"; cat "$T/$name.log"; fi
}
expect_error shape "$T/x_small.npy" "shardc: input 'x': $T/x_small.npy has shape (3, 4), expected (6, 8)"
expect_error dtype "$T/x_f64.npy" "shardc: input 'x': $T/x_f64.npy has dtype '<f8' (read: '<f4' float32"
expect_error dtype_i4 "$T/x_i4.npy" "shardc: input 'x': $T/x_i4.npy has dtype int32 ('<i4'), expected float32 ('<f4')"
expect_error missing "$T/nope.npy" "shardc: input 'x': $T/nope.npy cannot be opened: No such file or directory"
expect_error trunc "$T/x_trunc.npy" "shardc: input 'x': $T/x_trunc.npy is truncated: 172 bytes of data, expected 192"
expect_error fortran "$T/x_fortran.npy" "shardc: input 'x': $T/x_fortran.npy is in Fortran order"
expect_error magic "$T/not_npy.npy" "shardc: input 'x': $T/not_npy.npy is not a .npy file"
expect_error ranks "$T/x.npy" "shardc: this program was compiled for 4 ranks, but runs on 2 (mpirun -np 4)" 2
timeout 120 $MPIRUN -np 4 "$PROG" --inptu "x=$T/x.npy" >"$T/opt.log" 2>&1
st=$?
if [ "$st" -ne 0 ] && [ "$st" -ne 124 ] && [ "$(grep -c "unknown option '--inptu'" "$T/opt.log")" -eq 1 ]; then ok; else
	bad "unknown option: status $st"; cat "$T/opt.log"; fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
