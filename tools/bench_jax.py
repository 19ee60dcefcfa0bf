#!/usr/bin/env python3
# Usage: bench_jax.py SHARDC [--hidden H] [--seq S] [--batch B] [--heads A] [--seconds T]
#                     [--cases forward,train] [--ranks 1,8] [--rounds N] [--keep-blas-coretype]
"""The GPT layer of tools/gen_gpt.py, shardc's CPU program against JAX/XLA.

Four cases: the layer's forward pass and its training step (MSELoss, SGD), each
on 1 rank (shardc: --parallel-mode stand_alone; JAX: one CPU device) and on 8
ranks with the Megatron strategies gen_gpt.py writes (dp x mp; JAX: 8 virtual
CPU devices, XLA_FLAGS=--xla_force_host_platform_device_count=8, the same
shardings on the parameters and the activation, GSPMD propagating the rest).
Same shapes, float32, both on every core of this machine (shardc: the runtime
gives each rank its share of the cores for BLAS; XLA: its own thread pool),
each with the vector kernels it picks for this CPU (an OPENBLAS_CORETYPE in
the environment is set aside for shardc's runs, and said so; XLA has no such
pin: --keep-blas-coretype keeps it).
Each time is the best of 5 timings of K runs, K calibrated for about --seconds,
and the best of --rounds such figures taken alternately with XLA's.
Prints one line per case: milliseconds per run for each, and the ratio shardc /
XLA (below 1: shardc faster). When jax cannot be imported it says so and
exits 0: the comparison is optional (pip install jax).
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PY = "/usr/bin/python3"


def shardc_ms(shardc, tmp, args, devices, seconds, env):
    """ms per run of the program gen_gpt.py writes with args, on `devices` ranks."""
    ir = os.path.join(tmp, "m.ir")
    out = os.path.join(tmp, "out")
    subprocess.run([PY, os.path.join(HERE, "gen_gpt.py"), "--layers", "1", "-o", ir] + args, check=True)
    mode = ["--parallel-mode", "stand_alone"] if devices == 1 else []
    subprocess.run([shardc, ir, "-o", out] + mode, check=True, stdout=subprocess.DEVNULL)

    def run(k):
        r = subprocess.run([os.path.join(out, "run.sh"), "--steps", str(k)], check=True,
                           capture_output=True, text=True, env=env)
        m = re.search(r"^time: \d+ \w+ in ([0-9.]+) s", r.stdout, re.M)
        if not m:
            sys.exit("bench_jax: no time line in run.sh's output:\n" + r.stdout + r.stderr)
        return float(m.group(1))

    k = 1
    while run(k) < seconds / 4 and k < 1 << 16:
        k *= 2
    k = max(1, int(k * seconds / max(run(k), 1e-6)))
    return min(run(k) for _ in range(5)) / k * 1e3


JAX_CASE = r'''
import math, sys, time
import numpy as np
import jax, jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
H, S, B, A, devices, train, seconds = %(H)d, %(S)d, %(B)d, %(A)d, %(devices)d, %(train)d, %(seconds)f
F, Dh, R = 4 * H, H // A, B * S
mp = math.gcd(devices, math.gcd(A, F)); dp = math.gcd(devices // mp, B)

def ln(x, g, b):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / jnp.sqrt(v + 1e-5) * g + b

def gelu(x):
    return 0.5 * x * (1 + jnp.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))

def layer(p, x):
    h = ln(x, p["g1"], p["b1"])
    def heads(w):
        return (h @ w).reshape(B, S, A, Dh).transpose(0, 2, 1, 3)
    q, k, v = heads(p["wq"]), heads(p["wk"]), heads(p["wv"])
    s = jax.nn.softmax((q @ k.transpose(0, 1, 3, 2)) * (1 / math.sqrt(Dh)), axis=-1)
    ctx = (s @ v).transpose(0, 2, 1, 3).reshape(R, H)
    r1 = x + ctx @ p["wo"]
    f = gelu(ln(r1, p["g2"], p["b2"]) @ p["fc1"] + p["fc1b"]) @ p["fc2"] + p["fc2b"]
    return r1 + f

def loss(p, x, t):
    return jnp.mean((layer(p, x) - t) ** 2)

def step(p, x, t):
    l, g = jax.value_and_grad(loss)(p, x, t)
    return l, jax.tree_util.tree_map(lambda a, b: a - 0.01 * b, p, g)

rng = np.random.default_rng(0)
shapes = {"g1": (H,), "b1": (H,), "wq": (H, H), "wk": (H, H), "wv": (H, H), "wo": (H, H),
          "g2": (H,), "b2": (H,), "fc1": (H, F), "fc1b": (F,), "fc2": (F, H), "fc2b": (H,)}
p = {n: jnp.asarray(rng.normal(0, 0.02, s).astype(np.float32)) for n, s in shapes.items()}
x = jnp.asarray(rng.uniform(-1, 1, (R, H)).astype(np.float32))
t = jnp.asarray(rng.uniform(-1, 1, (R, H)).astype(np.float32))
if devices > 1:
    mesh = Mesh(np.array(jax.devices()[:dp * mp]).reshape(dp, mp), ("dp", "mp"))
    spec = {"wq": P(None, "mp"), "wk": P(None, "mp"), "wv": P(None, "mp"), "fc1": P(None, "mp"),
            "fc1b": P("mp"), "wo": P("mp", None), "fc2": P("mp", None)}
    p = {n: jax.device_put(a, NamedSharding(mesh, spec.get(n, P()))) for n, a in p.items()}
    x = jax.device_put(x, NamedSharding(mesh, P("dp", None)))
    t = jax.device_put(t, NamedSharding(mesh, P("dp", None)))
if train:
    f = jax.jit(step)
    def run(k):
        global p
        t0 = time.perf_counter()
        for _ in range(k):
            l, p = f(p, x, t)
        jax.block_until_ready(p)
        return time.perf_counter() - t0
else:
    f = jax.jit(layer)
    def run(k):
        t0 = time.perf_counter()
        for _ in range(k):
            y = f(p, x)
        y.block_until_ready()
        return time.perf_counter() - t0
run(2)
k = 1
while run(k) < seconds / 4 and k < 1 << 16:
    k *= 2
k = max(1, int(k * seconds / max(run(k), 1e-6)))
print(min(run(k) for _ in range(5)) / k * 1e3)
'''


def jax_ms(h, s, b, a, devices, train, seconds):
    """ms per run of the same layer in JAX, or None (with the reason printed) when XLA fails.

    XLA's newer CPU runtime ("thunks") runs the 8 virtual devices' collectives on
    its thread pool, which on 2 cores waits for itself until XLA aborts ("stuck"
    AllReduce, jax 0.4.38 and 0.10); the older runtime does not. So the flag that
    selects it is tried first, and then no flag (jax versions without it refuse it).
    """
    code = JAX_CASE % dict(H=h, S=s, B=b, A=a, devices=devices, train=int(train), seconds=seconds)
    why = ""
    for extra in ("--xla_cpu_use_thunk_runtime=false", ""):
        env = dict(os.environ)
        env["XLA_FLAGS"] = " ".join(f for f in (env.get("XLA_FLAGS", ""), extra,
                                                "--xla_force_host_platform_device_count=%d" % devices) if f)
        env["JAX_PLATFORMS"] = "cpu"
        try:
            r = subprocess.run([PY, "-c", code], env=env, capture_output=True, text=True, timeout=120 + 60 * seconds)
        except subprocess.TimeoutExpired:
            why = "no answer in %d s" % (120 + 60 * seconds)
            break   # a hang is not the flag's refusal: the next try would hang too
        if r.returncode == 0:
            return float(r.stdout.strip().splitlines()[-1])
        lines = [l for l in r.stderr.strip().splitlines() if l.strip()]
        why = "exit %d: %s" % (r.returncode, lines[-1][:120] if lines else "")
    print("bench: jax: %d device(s), %s: failed (%s)" % (devices, "training step" if train else "forward", why))
    return None


def main():
    ap = argparse.ArgumentParser(description="shardc's CPU programs against JAX/XLA on the GPT layer.")
    ap.add_argument("shardc")
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--cases", default="forward,train", help="forward, train or both (comma-separated)")
    ap.add_argument("--ranks", default="1,8", help="rank counts, comma-separated")
    ap.add_argument("--rounds", type=int, default=3, help="alternating timings of each side (best kept)")
    ap.add_argument("--keep-blas-coretype", action="store_true",
                    help="run shardc with the environment's OPENBLAS_CORETYPE (default: set aside)")
    a = ap.parse_args()
    if subprocess.run([PY, "-c", "import jax"], capture_output=True).returncode != 0:
        print("bench: jax: skipped: jax is not installed for %s (pip install jax)" % PY)
        return 0
    shape = ["--hidden", str(a.hidden), "--seq", str(a.seq), "--batch", str(a.batch), "--heads", str(a.heads)]
    # XLA picks its kernels from the CPU it runs on; so does OpenBLAS unless
    # OPENBLAS_CORETYPE names a core. An environment that pins an older core
    # (Haswell's AVX2 on an AVX-512 machine) would compare shardc's GEMMs on
    # half the vector width with XLA's: set it aside unless asked to keep it.
    env = dict(os.environ)
    pinned = env.get("OPENBLAS_CORETYPE")
    if pinned and not a.keep_blas_coretype:
        del env["OPENBLAS_CORETYPE"]
        print("bench: OPENBLAS_CORETYPE=%s set aside: OpenBLAS detects this CPU, as XLA does "
              "(--keep-blas-coretype keeps it)" % pinned)
    print("bench: GPT layer (hidden %d, seq %d, batch %d, heads %d) against JAX/XLA on %d cores, ms per run:"
          % (a.hidden, a.seq, a.batch, a.heads, os.cpu_count()))
    print("bench: %-16s %6s %10s %10s %8s" % ("case", "ranks", "shardc", "XLA", "ratio"))
    tmp = tempfile.mkdtemp()
    try:
        for train in [c == "train" for c in a.cases.split(",")]:
            for devices in [int(r) for r in a.ranks.split(",")]:
                args = shape + ["--devices", "8"] + (["--megatron"] if devices == 8 else []) + (["--train"] if train else [])
                # alternately, each the best of its rounds: on a shared machine
                # whole minutes run slower, and would fall on one side only
                ms = mj = None
                for _ in range(a.rounds):
                    t = shardc_ms(a.shardc, tmp, args, devices, a.seconds, env)
                    ms = t if ms is None else min(ms, t)
                    t = jax_ms(a.hidden, a.seq, a.batch, a.heads, devices, train, a.seconds)
                    if t is None:
                        break
                    mj = t if mj is None else min(mj, t)
                case = "training step" if train else "forward"
                if mj is None:
                    print("bench: %-16s %6d %10.2f %10s %8s" % (case, devices, ms, "-", "-"))
                else:
                    print("bench: %-16s %6d %10.2f %10.2f %8.2f" % (case, devices, ms, mj, ms / mj))
                sys.stdout.flush()
    finally:
        shutil.rmtree(tmp)
    print("bench: target (issue 17): ratio <= 1.0 on 1 rank, <= 1.2 on 8 ranks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
