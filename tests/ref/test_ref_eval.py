#!/usr/bin/python3
"""Tests of tools/ref_eval.py, the numpy reference evaluator.

    /usr/bin/python3 tests/ref/test_ref_eval.py      (or: make ref-test)

Plain unittest.  Covers the initializers of docs/output.md against values derived
by hand, every operator's forward against an explicit numpy expression, every
differentiable operator's backward against central finite differences in
float64, the three optimizers against hand computation, the error messages,
and a run of every model in ir-samples/ and tests/good/ (two steps where the
model trains).
"""

import contextlib
import glob
import importlib.util
import io
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
import unittest

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TOOL = os.path.join(ROOT, "tools", "ref_eval.py")
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable

_spec = importlib.util.spec_from_file_location("ref_eval", TOOL)
R = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(R)


def init(name, shape, call, dtype="Float32", seed=0, kind="Tensor"):
    """Initializes `name` with an initializer written as IR text, e.g. 'uniform(0, 1)'."""
    src = "graph @g(%%%s: <%s[%s], %s> = %s) { return %%%s }" % (
        name, kind, dtype, tuple(shape) if len(shape) != 1 else "(%d,)" % shape[0], call, name)
    p = R.parse(src).graphs[0].params[0]
    return R.initialize(p.name, p.type, p.init, seed)


def run_cli(args):
    """Runs the evaluator in-process; returns (status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    status = R.run(args, out=out, err=err)
    return status, out.getvalue(), err.getvalue()


class TempDir(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.dir = self._tmp.name

    def tearDown(self):
        self._tmp.cleanup()

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text)
        return path


# ---------------------------------------------------------------------------

class Initializers(unittest.TestCase):
    def test_published_vectors(self):
        # FNV-1a 64 of "" is the offset basis, of "a" the published test vector;
        # SplitMix64 seeded with 0 first returns 0xe220a8397b1dcdaf.
        self.assertEqual(R.fnv1a64(""), 0xcbf29ce484222325)
        self.assertEqual(R.fnv1a64("a"), 0xaf63dc4c8601ec8c)
        self.assertEqual(int(R.splitmix64(np.array([0], dtype=np.uint64))[0]), 0xe220a8397b1dcdaf)

    def test_uniform_by_hand(self):
        # name "x", seed 0:
        #   fnv1a64("x"): 0xcbf29ce484222325 ^ 0x78 = 0xcbf29ce48422235d
        #                 * 0x100000001b3 mod 2^64   = 0xaf63f54c86021707
        #   key = 0xaf63f54c86021707 ^ (0 * 0x9e3779b97f4a7c15) = 0xaf63f54c86021707
        # u(0): z = key + 0
        #   z += 0x9e3779b97f4a7c15              -> 0x4d9b6f06054c931c
        #   z = (z ^ z>>30) * 0xbf58476d1ce4e5b9 -> 0xea30f856f1998de4
        #   z = (z ^ z>>27) * 0x94d049bb133111eb -> 0x338262d89792fc3e
        #   z ^ z>>31                            =  0x338262d8f096398f
        #   >> 40 = 0x338262 = 3375714;  u(0) = 3375714 / 2^24 = 0.201208233833313
        # u(1): z = key + 1 -> ... -> 0x82ced935c8563cdd; >> 40 = 8572633; u(1) = 0.5109687447547913
        self.assertEqual(R.init_key("x", 0), 0xaf63f54c86021707)
        u = R.uniform_bits(R.init_key("x", 0), 2)
        self.assertEqual(list(u * 2 ** 24), [3375714.0, 8572633.0])
        # uniform(0, 1): u itself, rounded to float32; uniform(-1, 1) of element 1: -1 + 2 * 0.51096874 = 0.02193749
        x = init("x", (2,), "uniform(0, 1)")
        self.assertEqual(x.dtype, np.float32)
        self.assertEqual(x[0], np.float32(3375714 / 2 ** 24))
        self.assertEqual(init("x", (2,), "uniform(-1, 1)")[1], np.float32(-1 + 2 * 8572633 / 2 ** 24))
        # randint(3, 10) on Int32: 3 + floor(u * 7) = 3 + floor(1.408) = 4 and 3 + floor(3.577) = 6
        self.assertEqual(list(init("x", (2,), "randint(3, 10)", dtype="Int32")), [4, 6])

    def test_normal_by_hand(self):
        # name "w", seed 1:
        #   fnv1a64("w") = (0xcbf29ce484222325 ^ 0x77) * 0x100000001b3 = 0xaf63ea4c86020456
        #   1 * 0x9e3779b97f4a7c15 = 0x9e3779b97f4a7c15; key = 0xaf63ea4c86020456 ^ that = 0x315493f5f9487843
        #   u(0) = (splitmix64(key) >> 40) / 2^24 = 3920091 / 2^24 = 0.2336556315422058
        #   u(1) = 5376139 / 2^24 = 0.3204428553581238
        # normal(0.01), element 0 uses u(0) and u(1):
        #   sqrt(-2 ln(1 - 0.2336556)) = sqrt(-2 * -0.2661236) = 0.7295528
        #   cos(2 pi * 0.3204429) = cos(2.0134018) = -0.4282954
        #   0.01 * 0.7295528 * -0.4282954 = -0.0031246408
        # element 1 uses u(2) = 7466828 / 2^24 and u(3) = 10805403 / 2^24:
        #   0.01 * 1.0852567 * -0.6176017 = -0.0067025633
        self.assertEqual(R.init_key("w", 1), 0x315493f5f9487843)
        u = R.uniform_bits(R.init_key("w", 1), 4) * 2 ** 24
        self.assertEqual(list(u), [3920091.0, 5376139.0, 7466828.0, 10805403.0])
        w = init("w", (2,), "normal(0.01)", seed=1, kind="Parameter")
        np.testing.assert_allclose(w, [-0.0031246408, -0.0067025633], rtol=1e-7)
        self.assertEqual(w.dtype, np.float32)

    def test_defaults_and_constants(self):
        # Inputs default to uniform(0, 1), parameters to normal(0.01) (docs/language.md, Graphs).
        p = R.parse("graph @g(%x: <Tensor[Float32], (3,)>, %w: <Parameter[Float32], (3,)>) { return %x }")
        x, w = p.graphs[0].params
        np.testing.assert_array_equal(R.initialize("x", x.type, None, 5), init("x", (3,), "uniform(0, 1)", seed=5))
        np.testing.assert_array_equal(R.initialize("w", w.type, None, 5),
                                      init("w", (3,), "normal(0.01)", seed=5, kind="Parameter"))
        np.testing.assert_array_equal(init("c", (2, 2), "constant(-2.5)"), np.full((2, 2), -2.5, np.float32))
        np.testing.assert_array_equal(init("c", (2,), "ones", dtype="Int64"), np.ones(2, np.int64))
        np.testing.assert_array_equal(init("c", (2,), "zeros", dtype="Float16"), np.zeros(2, np.float16))
        self.assertEqual(init("c", (), "constant(0.1)", dtype="Float16").dtype, np.float16)
        self.assertEqual(init("c", (), "constant(0.1)", dtype="Float16"), np.float16(0.1))

    def test_vectorized_matches_scalar_and_is_fast(self):
        def scalar_u(key, j):
            m = (1 << 64) - 1
            z = (key + j + 0x9e3779b97f4a7c15) & m
            z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & m
            z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & m
            return ((z ^ (z >> 31)) >> 40) * 2.0 ** -24
        t0 = time.time()
        x = init("big.weight", (1000, 1000), "normal(0.02)", seed=3, kind="Parameter")
        self.assertLess(time.time() - t0, 5.0)
        key = R.init_key("big.weight", 3)
        for i in (0, 1, 4242, 999999):
            u0, u1 = scalar_u(key, 2 * i), scalar_u(key, 2 * i + 1)
            want = 0.02 * math.sqrt(-2 * math.log(1 - u0)) * math.cos(2 * math.pi * u1)
            self.assertEqual(x.reshape(-1)[i], np.float32(want))
        # key + j wraps around 2^64
        self.assertEqual(R.uniform_bits((1 << 64) - 1, 2)[1], scalar_u((1 << 64) - 1, 1))

    def test_bfloat16_rounding(self):
        # 7 fraction bits: 1 + 2^-8 is a tie and goes to even (1.0); 1 + 3 * 2^-8 goes up to 1 + 2^-6.
        r = R.round_bf16(np.array([1 + 2 ** -8, 1 + 3 * 2 ** -8, -(1 + 2 ** -7), 3.4e38, np.inf]))
        np.testing.assert_array_equal(r, np.array([1.0, 1 + 2 ** -6, -(1 + 2 ** -7), np.inf, np.inf], np.float32))
        self.assertEqual(init("b", (), "constant(0.1)", dtype="BFloat16"), np.float32(0.10009765625))


# ---------------------------------------------------------------------------

def rng(seed=0):
    return np.random.default_rng(seed)


def fwd(op, ins, attrs=None):
    return R.OPS[op][0]([np.asarray(x) for x in ins], attrs or {})


class Forward(unittest.TestCase):
    def check(self, op, ins, attrs, want):
        got = fwd(op, ins, attrs)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
        self.assertEqual(np.shape(got), np.shape(want))

    def test_matmul(self):
        a, b = rng().normal(size=(3, 4)), rng(1).normal(size=(4, 5))
        self.check("MatMul", [a, b], {}, a @ b)
        self.check("MatMul", [a.T, b], {"transpose_a": True}, a @ b)
        self.check("MatMul", [a, b.T], {"transpose_b": True}, a @ b)
        self.check("MatMul", [a.T, b.T], {"transpose_a": True, "transpose_b": True}, a @ b)

    def test_batch_matmul(self):
        a, b = rng().normal(size=(2, 1, 3, 4)), rng(1).normal(size=(5, 4, 6))
        want = np.einsum("xymk,ykn->xymn", np.broadcast_to(a, (2, 5, 3, 4)), b)
        self.check("BatchMatMul", [a, b], {}, want)
        self.check("BatchMatMul", [np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2)],
                   {"transpose_a": True, "transpose_b": True}, want)

    def test_binary_broadcasting(self):
        a, b = rng().normal(size=(4, 1, 3)), rng(1).uniform(1, 2, size=(5, 1))
        for op, f in (("Add", np.add), ("Sub", np.subtract), ("Mul", np.multiply), ("Div", np.divide),
                      ("Maximum", np.maximum), ("Minimum", np.minimum)):
            self.check(op, [a, b], {}, f(a, b))
        self.check("Pow", [np.abs(a), b], {}, np.abs(a) ** b)
        self.check("Pow", [a, np.float64(2.0)], {}, a * a)
        n, d = np.array([7.0, -7.0, 7.0, -7.5]), np.array([2.0, 2.0, -2.0, 2.0])
        self.check("FloorDiv", [n, d], {}, np.array([3.0, -4.0, -4.0, -4.0]))
        self.check("FloorMod", [n, d], {}, np.array([1.0, 1.0, -1.0, 0.5]))
        self.check("Mod", [n, d], {}, np.array([1.0, -1.0, 1.0, -1.5]))
        self.check("SquaredDifference", [a, b], {}, (a - b) ** 2)
        self.check("Add", [a, np.float64(2.0)], {}, a + 2.0)
        self.check("DivNoNan", [np.array([np.nan, 3.0, -3.0, 0.0]), np.array([0.0, 0.0, 2.0, 0.0])], {},
                   np.array([0.0, 0.0, -1.5, 0.0]))            # 0 where the divisor is 0, whatever the dividend
        self.check("DivNoNan", [a, b], {}, a / b)
        self.check("Atan2", [a, b - 1.5], {}, np.arctan2(a, b - 1.5))
        self.check("Atan2", [np.array([1.0, 1.0, -1.0, 0.0]), np.array([0.0, -1.0, -1.0, 0.0])], {},
                   np.array([math.pi / 2, 3 * math.pi / 4, -3 * math.pi / 4, 0.0]))
        z, w = np.array([0.0, 0.0, 2.0, -7.0]), np.array([0.0, np.nan, 0.0, 2.0])
        self.check("Xlogy", [a, b], {}, a * np.log(b))
        self.check("Xlogy", [z, w], {}, np.array([0.0, 0.0, -np.inf, -7 * math.log(2)]))   # 0 where x == 0, whatever y
        self.check("Xdivy", [a, b], {}, a / b)
        self.check("Xdivy", [z, w], {}, np.array([0.0, 0.0, np.inf, -3.5]))
        self.check("MulNoNan", [a, b], {}, a * b)
        self.check("MulNoNan", [np.array([np.inf, np.nan, 3.0]), np.array([0.0, 0.0, 2.0])], {},
                   np.array([0.0, 0.0, 6.0]))                  # 0 where y == 0, even times inf or NaN
        self.check("TruncateDiv", [n, d], {}, np.array([3.0, -3.0, -3.0, -3.0]))   # toward 0
        self.check("TruncateDiv", [np.array([7, -7], np.int32), np.array([2, 2], np.int32)], {}, np.array([3, -3]))
        self.check("TruncateMod", [n, d], {}, np.array([1.0, -1.0, 1.0, -1.5]))    # the dividend's sign
        self.check("Hypot", [a, b], {}, np.sqrt(a * a + b * b))
        self.check("Hypot", [np.array([3.0, 1e30]), np.array([4.0, 1e30])], {}, np.array([5.0, 1e30 * math.sqrt(2)]))

    def test_compare(self):
        # numpy's comparisons, broadcasting, a number either side; NaN compares false but unequal; -0 == 0
        a, b = rng().normal(size=(4, 1, 3)), rng(1).normal(size=(5, 1))
        a[0, 0, 0] = b[2, 0]                                  # a tie
        for op, f in (("Equal", np.equal), ("NotEqual", np.not_equal), ("Greater", np.greater),
                      ("GreaterEqual", np.greater_equal), ("Less", np.less), ("LessEqual", np.less_equal)):
            got = fwd(op, [a, b])
            self.assertEqual((got.dtype, got.shape), (np.bool_, (4, 5, 3)))
            np.testing.assert_array_equal(got, f(a, b))
            np.testing.assert_array_equal(fwd(op, [a, np.float64(0.0)]), f(a, 0.0))
            np.testing.assert_array_equal(fwd(op, [np.float64(0.0), a]), f(0.0, a))
        x = np.array([np.nan, -0.0, 1.0])
        self.assertEqual(fwd("Equal", [x, np.array([np.nan, 0.0, 1.0])]).tolist(), [False, True, True])
        self.assertEqual(fwd("NotEqual", [x, np.float64(np.nan)]).tolist(), [True, True, True])
        self.assertEqual(fwd("GreaterEqual", [x, np.float64(np.nan)]).tolist(), [False, False, False])
        # ApproximateEqual: |a - b| < tolerance (1e-5 by default), operands of one shape; NaN is never close
        y = np.array([1.0, 2.0, 3.0, np.nan])
        self.assertEqual(fwd("ApproximateEqual", [y, np.array([2.0, 3.0, 6.0, np.nan])], {"tolerance": 2.0}).tolist(),
                         [True, True, False, False])
        self.assertEqual(fwd("ApproximateEqual", [y, y + 2e-6]).tolist(), [True, True, True, False])
        self.assertEqual(fwd("ApproximateEqual", [y, y + 2e-5]).tolist(), [False, False, False, False])
        with self.assertRaises(R.OpError):
            fwd("ApproximateEqual", [a, b])

    def test_logical(self):
        # numpy's, broadcasting; Bool operands only; IsFinite of a float
        a, b = rng().normal(size=(4, 1, 3)) > 0, rng(1).normal(size=(5, 1)) > 0
        for op, f in (("LogicalAnd", np.logical_and), ("LogicalOr", np.logical_or)):
            got = fwd(op, [a, b])
            self.assertEqual((got.dtype, got.shape), (np.bool_, (4, 5, 3)))
            np.testing.assert_array_equal(got, f(a, b))
        np.testing.assert_array_equal(fwd("LogicalNot", [a]), ~a)
        self.assertEqual(fwd("IsFinite", [np.array([1.0, np.inf, -np.inf, np.nan, -0.0])]).tolist(),
                         [True, False, False, False, True])
        with self.assertRaises(R.OpError):
            fwd("LogicalAnd", [a, np.ones((5, 1))])
        with self.assertRaises(R.OpError):
            fwd("IsFinite", [a])

    def test_integer_division_truncates(self):
        self.check("Div", [np.array([7, -7, 7]), np.array([2, 2, -2])], {}, np.array([3, -3, -3]))

    def test_bias_add(self):
        x, b = rng().normal(size=(2, 3, 4)), rng(1).normal(size=(4,))
        self.check("BiasAdd", [x, b], {}, x + b[None, None, :])

    def test_unary(self):
        x = rng().normal(size=(3, 4))
        p = np.abs(x) + 0.5
        c = math.sqrt(2 / math.pi)
        self.check("ReLU", [x], {}, np.where(x > 0, x, 0))
        self.check("GeLU", [x], {}, 0.5 * x * (1 + np.tanh(c * (x + 0.044715 * x ** 3))))
        self.check("Tanh", [x], {}, np.tanh(x))
        self.check("Sigmoid", [x], {}, 1 / (1 + np.exp(-x)))
        self.check("Exp", [x], {}, np.exp(x))
        self.check("Log", [p], {}, np.log(p))
        self.check("Neg", [x], {}, -x)
        self.check("Sqrt", [p], {}, np.sqrt(p))
        self.check("Rsqrt", [p], {}, 1 / np.sqrt(p))
        self.check("SiLU", [x], {}, x / (1 + np.exp(-x)))
        self.check("Square", [x], {}, x ** 2)
        self.check("Abs", [x], {}, np.abs(x))
        self.check("Sin", [x], {}, np.sin(x))
        self.check("Cos", [x], {}, np.cos(x))
        self.check("Erf", [x], {}, np.array([math.erf(v) for v in x.ravel()]).reshape(x.shape))
        self.check("Reciprocal", [p], {}, 1 / p)
        self.check("Log1p", [p], {}, np.log(1 + p))
        self.check("Expm1", [x], {}, np.exp(x) - 1)
        self.check("Softplus", [x * 30], {}, np.log(1 + np.exp(x * 30)))   # large |x|: no overflow
        self.check("Floor", [x * 3], {}, np.floor(x * 3))
        self.check("Sign", [np.array([-2.0, 0.0, 3.0])], {}, np.array([-1.0, 0.0, 1.0]))
        self.check("Ceil", [x * 3], {}, np.ceil(x * 3))
        self.check("Round", [np.array([0.5, 1.5, 2.5, -0.5, -1.7])], {}, np.array([0.0, 2.0, 2.0, -0.0, -2.0]))
        self.check("Tan", [x], {}, np.tan(x))
        self.check("Atan", [x], {}, np.arctan(x))
        self.check("Sinh", [x], {}, np.sinh(x))
        self.check("Cosh", [x], {}, np.cosh(x))
        h = np.array([-4.0, -3.0, -1.0, 0.0, 2.0, 3.0, 5.0])
        self.check("HSwish", [h], {}, h * np.minimum(np.maximum(h + 3, 0), 6) / 6)
        self.check("HSigmoid", [h], {}, np.minimum(np.maximum(h + 3, 0), 6) / 6)
        u = np.tanh(x)                                          # in (-1, 1)
        self.check("Erfc", [x], {}, np.array([1 - math.erf(v) for v in x.ravel()]).reshape(x.shape))
        self.check("Erfc", [np.array([10.0])], {}, np.array([2.088487583762545e-45]))   # no cancellation
        self.check("Inv", [p], {}, 1 / p)
        self.check("Acos", [u], {}, np.arccos(u))
        self.check("Asin", [u], {}, np.arcsin(u))
        self.check("Atanh", [u], {}, 0.5 * np.log((1 + u) / (1 - u)))
        self.check("Asinh", [x], {}, np.log(x + np.sqrt(x * x + 1)))
        self.check("Acosh", [p + 1], {}, np.log(p + 1 + np.sqrt((p + 1) ** 2 - 1)))
        self.check("Rint", [np.array([0.5, 1.5, 2.5, -0.5, -1.7])], {}, np.array([0.0, 2.0, 2.0, -0.0, -2.0]))
        self.check("Elu", [x], {}, np.where(x > 0, x, np.exp(x) - 1))
        self.check("Elu", [x], {"alpha": 1.0}, np.where(x > 0, x, np.exp(x) - 1))
        with self.assertRaises(R.OpError):
            fwd("Elu", [x], {"alpha": 0.5})                     # MindSpore's Elu takes 1.0 only
        self.check("Mish", [x], {}, x * np.tanh(np.log(1 + np.exp(x))))
        sc, al = 1.0507009873554805, 1.6732632423543772
        self.check("SeLU", [x], {}, np.where(x > 0, sc * x, sc * al * (np.exp(x) - 1)))
        self.check("LogSigmoid", [x], {}, np.log(1 / (1 + np.exp(-x))))
        self.check("LogSigmoid", [np.array([-800.0, 800.0])], {}, np.array([-800.0, 0.0]))   # no overflow
        self.check("ZerosLike", [x], {}, np.zeros_like(x))
        self.check("OnesLike", [np.array([np.nan, 2.0])], {}, np.array([1.0, 1.0]))
        self.check("ReLU6", [np.array([-1.0, 0.0, 3.0, 6.0, 7.5])], {}, np.array([0.0, 0.0, 3.0, 6.0, 6.0]))
        self.check("Softsign", [x], {}, x / (1 + np.abs(x)))
        self.check("FastGeLU", [x], {}, x / (1 + np.exp(-1.702 * np.abs(x))) * np.exp(0.851 * (x - np.abs(x))))
        self.check("Trunc", [np.array([-1.5, -0.5, 0.5, 2.7])], {}, np.array([-1.0, 0.0, 0.0, 2.0]))
        u = np.array([-0.999, -0.5, 0.0, 0.3, 0.99999])
        got = fwd("Erfinv", [u], {})
        np.testing.assert_allclose([math.erf(v) for v in got], u, rtol=1e-12, atol=1e-15)
        self.assertEqual(fwd("Erfinv", [np.array([1.0, -1.0])], {}).tolist(), [np.inf, -np.inf])
        self.assertTrue(np.isnan(fwd("Erfinv", [np.array([1.5])], {})[0]))
        s = np.array([-1.0, -0.5, -0.2, 0.0, 0.3, 0.5, 0.9, np.nan])
        self.check("HShrink", [s[:7]], {}, np.array([-1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.9]))
        self.check("HShrink", [s[:7]], {"lambd": 0.25}, np.array([-1.0, -0.5, 0.0, 0.0, 0.3, 0.5, 0.9]))
        self.check("SoftShrink", [s[:7]], {}, np.array([-0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.4]))
        self.assertTrue(np.isnan(fwd("HShrink", [s], {})[7]) and np.isnan(fwd("SoftShrink", [s], {})[7]))
        with self.assertRaises(R.OpError):
            fwd("SoftShrink", [s], {"lambd": -0.1})
        erf = np.array([math.erf(v / math.sqrt(2)) for v in x.ravel()]).reshape(x.shape)
        self.check("GeLU", [x], {"approximate": "none"}, 0.5 * x * (1 + erf))
        self.check("GeLU", [x], {"approximate": "tanh"}, 0.5 * x * (1 + np.tanh(c * (x + 0.044715 * x ** 3))))
        with self.assertRaises(R.OpError):
            fwd("GeLU", [x], {"approximate": "erf"})

    def test_leaky_relu(self):
        """MindSpore's nn.LeakyReLU: Maximum(alpha x, x) (Minimum above 1); alpha 0.2 by default, a Float32
        scalar cast to x's type before it multiplies."""
        x = np.array([-2.0, -0.5, 0.0, 1.5, np.nan])
        a32 = float(np.float32(0.2))
        self.check("LeakyReLU", [x[:4]], {}, np.where(x[:4] > 0, x[:4], a32 * x[:4]))
        self.assertTrue(np.isnan(fwd("LeakyReLU", [x], {})[4]))
        for alpha in (0.01, 1.5, -0.3, 1.0):
            a = float(np.float32(alpha))
            ref = (np.minimum if alpha > 1 else np.maximum)(a * x[:4], x[:4])
            self.check("LeakyReLU", [x[:4]], {"alpha": alpha}, ref)
        for dt, rnd in (("Float16", lambda v: float(np.float16(v))), ("BFloat16", lambda v: float(R.round_bf16(v)))):
            self.check("LeakyReLU", [x[:2]], {"alpha": 0.2, "@dtype": dt}, rnd(np.float32(0.2)) * x[:2])
        with self.assertRaises(R.OpError):
            fwd("LeakyReLU", [x], {"alpha": "a"})

    def test_windows(self):
        """Conv2D against a direct sum over windows (MindSpore's sizes: valid, same with the extra padding at the
        bottom and right, pad; stride, dilation, group); MaxPool's first maximum and AvgPool's mean of the
        elements inside x (SAME's padding not counted)."""
        x = rng(1).normal(size=(2, 4, 7, 6))
        for at, wshape in [({"kernel_size": 3}, (6, 4, 3, 3)),
                           ({"kernel_size": (2, 3), "pad_mode": "same", "stride": 2}, (6, 4, 2, 3)),
                           ({"kernel_size": 2, "pad_mode": "pad", "pad": (1, 0, 2, 1), "dilation": (2, 1)}, (6, 4, 2, 2)),
                           ({"kernel_size": 3, "pad_mode": "SAME", "group": 2, "stride": (1, 2)}, (6, 2, 3, 3))]:
            w = rng(2).normal(size=wshape)
            at = dict(at, out_channel=6)
            k, s, d, pads, out = R.window_geometry(x, at, True)
            xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[1]), (pads[2], pads[3])))
            groups, want = at.get("group", 1), np.zeros((2, 6) + tuple(out))
            for o in range(6):
                c0 = o // (6 // groups) * (4 // groups)
                for i in range(out[0]):
                    for j in range(out[1]):
                        win = xp[:, c0:c0 + 4 // groups, i * s[0]:i * s[0] + d[0] * (k[0] - 1) + 1:d[0],
                                 j * s[1]:j * s[1] + d[1] * (k[1] - 1) + 1:d[1]]
                        want[:, o, i, j] = np.sum(win * w[o], axis=(1, 2, 3))
            self.check("Conv2D", [x, w], at, want)
        self.assertEqual(fwd("Conv2D", [x, rng(2).normal(size=(6, 4, 3, 3))],
                             {"out_channel": 6, "kernel_size": 3, "pad_mode": "same", "stride": 2}).shape, (2, 6, 4, 3))
        v = np.arange(16.0).reshape(1, 1, 4, 4)
        self.check("MaxPool", [v], {"kernel_size": 3, "strides": 2, "pad_mode": "SAME"},
                   np.array([[[[10.0, 11.0], [14.0, 15.0]]]]))
        self.check("AvgPool", [v], {"kernel_size": 3, "strides": 2, "pad_mode": "SAME"},   # 3x3, 3x2, 2x3, 2x2
                   np.array([[[[5.0, 6.5], [11.0, 12.5]]]]))
        self.check("AvgPool", [v], {"kernel_size": 2, "strides": 2}, np.array([[[[2.5, 4.5], [10.5, 12.5]]]]))
        g = R.OPS["MaxPool"][1](np.ones((1, 1, 1, 1)), [np.zeros((1, 1, 2, 2))], {"kernel_size": 2})
        self.assertEqual(g[0].tolist(), [[[[1.0, 0.0], [0.0, 0.0]]]])   # ties: the first maximum takes it all
        with self.assertRaises(R.OpError):
            fwd("Conv2D", [x, rng(2).normal(size=(6, 4, 2, 2))], {"out_channel": 6, "kernel_size": 3})
        # Conv2DTranspose is Conv2D's adjoint in x: <Conv2D(x, w), dout> == <x, Conv2DTranspose(dout, w)>, and
        # by hand, each dout element times w scattered onto its window (stride 2: the windows apart)
        for at, wshape in [({"kernel_size": 3, "pad_mode": "same", "stride": 2}, (6, 4, 3, 3)),
                           ({"kernel_size": 2, "pad_mode": "pad", "pad": (1, 0, 2, 1), "dilation": (2, 1)}, (6, 4, 2, 2)),
                           ({"kernel_size": 3, "group": 2, "stride": (1, 2)}, (6, 2, 3, 3))]:
            w, at = rng(2).normal(size=wshape), dict(at, out_channel=6, input_size=x.shape)
            dout = rng(3).normal(size=fwd("Conv2D", [x, w], at).shape)
            y = fwd("Conv2DTranspose", [dout, w], at)
            self.assertEqual(y.shape, x.shape)
            self.assertAlmostEqual(float(np.sum(fwd("Conv2D", [x, w], at) * dout)), float(np.sum(x * y)))
        self.check("Conv2DTranspose", [np.array([[[[1.0, 2.0]]]]), np.array([[[[1.0, 10.0], [100.0, 1000.0]]]])],
                   {"out_channel": 1, "kernel_size": 2, "stride": 2, "input_size": (1, 1, 2, 4)},
                   np.array([[[[1.0, 10.0, 2.0, 20.0], [100.0, 1000.0, 200.0, 2000.0]]]]))
        for at in ({"input_size": (2, 4, 7)}, {"input_size": (2, 4, 8, 6)}, {}):   # dout (2, 6, 5, 4): 7x6's
            with self.assertRaises(R.OpError):
                fwd("Conv2DTranspose", [rng(3).normal(size=(2, 6, 5, 4)), rng(2).normal(size=(6, 4, 3, 3))],
                    dict(at, out_channel=6, kernel_size=3))

    def test_prelu(self):
        """MindSpore's PReLU: x < 0 ? w x : x, a weight per channel (x's dim 1) or one for all."""
        x = rng().normal(size=(2, 3, 4))
        w = np.array([0.1, -0.6, 0.25])
        self.check("PReLU", [x, w], {}, np.where(x < 0, w[None, :, None] * x, x))
        self.check("PReLU", [x, w[:1]], {}, np.where(x < 0, 0.1 * x, x))
        v = np.array([-1.0, 2.0, -3.0])                           # below rank 2: one channel
        self.check("PReLU", [v, np.array([0.5])], {}, np.array([-0.5, 2.0, -1.5]))
        d, wd = np.arange(-6.0, 6.0).reshape(2, 3, 2), np.array([0.1, 0.6, -0.3])   # MindSpore's docs' example
        self.check("PReLU", [d, wd], {}, np.array([[[-0.6, -0.5], [-2.4, -1.8], [0.6, 0.3]],
                                                   [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]]))
        for bad in (np.ones(4), np.ones((3, 1)), np.ones(2)):
            with self.assertRaises(R.OpError):
                fwd("PReLU", [x, bad], {})
        with self.assertRaises(R.OpError):
            fwd("PReLU", [v, np.ones(3)], {})                     # one channel: one weight

    def test_select(self):
        c = np.array([[True, False, True], [False, False, True]])
        x, y = rng().normal(size=(2, 3)), rng(1).normal(size=(2, 3))
        self.check("Select", [c, x, y], {}, np.where(c, x, y))
        with self.assertRaises(R.OpError):                    # one shape: no broadcasting
            fwd("Select", [c[:, :1], x, y])
        with self.assertRaises(R.OpError):                    # the condition is Bool
            fwd("Select", [x, x, y])

    def test_dropout(self):
        # The generator of docs/operators.md pinned (the runtime's test_rt_kernels has the same bits);
        # pieces of the whole's mask are the whole's; a new mask each step; the ratio near keep_prob.
        bits = lambda m: "".join("1" if b else "0" for b in m)
        self.assertEqual(bits(R.dropout_keep("d", 7, 1, (16,), 0.5)), "1111000100001100")
        self.assertEqual(bits(R.dropout_keep("d", 7, 2, (16,), 0.5)), "1010100000110010")
        m = R.dropout_keep("layer.0.drop", 3, 5, (40, 50), float(np.float32(0.7)))
        self.assertTrue(0.65 < m.mean() < 0.75)
        self.assertFalse((m == R.dropout_keep("layer.0.drop", 3, 6, (40, 50), 0.7)).all())
        self.assertFalse((m == R.dropout_keep("layer.1.drop", 3, 5, (40, 50), 0.7)).all())
        self.assertTrue(R.dropout_keep("d", 1, 1, (8, 8), 1.0).all())
        with self.assertRaises(R.OpError):
            R.keep_prob({"keep_prob": 0})
        with self.assertRaises(R.OpError):
            R.keep_prob({"keep_prob": 1.5})

    def test_split(self):
        x = rng().normal(size=(2, 3, 12))
        self.check("Split", [x], {"axis": 2, "output_num": 3, "index": 1}, x[:, :, 4:8])
        self.check("Split", [x], {"axis": -1, "output_num": 3, "index": 2}, x[:, :, 8:])
        self.check("Split", [x], {"axis": 1, "output_num": 3, "index": 0}, x[:, :1, :])
        self.check("Split", [x], {"axis": 0, "index": 0}, x)
        for bad in ({"axis": 2, "output_num": 5, "index": 0}, {"axis": 2, "output_num": 3, "index": 3},
                    {"axis": 3, "output_num": 3, "index": 0}, {"output_num": 3, "index": 0}):
            with self.assertRaises(R.OpError):
                fwd("Split", [x], bad)

    def test_split_v(self):
        x = rng().normal(size=(2, 3, 12))
        at = {"size_splits": (3, -1, 2), "split_dim": 2, "num_split": 3}
        self.check("SplitV", [x], dict(at, index=0), x[:, :, :3])
        self.check("SplitV", [x], dict(at, index=1), x[:, :, 3:10])
        self.check("SplitV", [x], dict(at, index=2), x[:, :, 10:])
        self.check("SplitV", [x], {"size_splits": (1, 2), "split_dim": -2, "num_split": 2, "index": 1}, x[:, 1:, :])
        for bad in (dict(at, index=3), dict(at, num_split=2, index=0), dict(at, size_splits=(3, 3, 2), index=0),
                    dict(at, size_splits=(12, -1, 1), index=0), dict(at, split_dim=3, index=0)):
            with self.assertRaises(R.OpError):
                fwd("SplitV", [x], bad)

    def test_pad_v3(self):
        x = rng().normal(size=(2, 3, 4))
        # pairs from the last dim back: (1, 2) on dim 2, (0, 3) on dim 1; the constant 0.5, or 0 when absent
        self.check("PadV3", [x, 0.5], {"paddings": (1, 2, 0, 3)}, np.pad(x, [(0, 0), (0, 3), (1, 2)],
                                                                          constant_values=0.5))
        self.check("PadV3", [x], {"paddings": (2, 2)}, np.pad(x, [(0, 0), (0, 0), (2, 2)]))
        # paddings_contiguous false: the befores (1, 0, 2), then the afters (2, 3, 0)
        self.check("PadV3", [x, -1.0], {"paddings": (1, 0, 2, 2, 3, 0), "paddings_contiguous": False},
                   np.pad(x, [(2, 0), (0, 3), (1, 2)], constant_values=-1.0))
        self.check("PadV3", [x], {"paddings": ()}, x)
        got = fwd("PadV3", [np.arange(3, dtype=np.int32), np.int32(-7)], {"paddings": (1, 0)})
        np.testing.assert_array_equal(got, np.array([-7, 0, 1, 2], np.int32))
        self.assertEqual(got.dtype, np.int32)
        for bad in ({"paddings": (1, 1, 1)}, {"paddings": (1,) * 8}, {"paddings": (1, -1)}, {},
                    {"paddings": (1, 1), "mode": "reflect"}):
            with self.assertRaises(R.OpError):
                fwd("PadV3", [x], bad)

    def test_resize(self):
        x = np.arange(8.0).reshape(2, 1, 2, 2)   # two planes [[0, 1], [2, 3]] and [[4, 5], [6, 7]]
        up = np.repeat(np.repeat(x, 2, axis=2), 2, axis=3)
        self.check("ResizeNearestNeighbor", [x], {"size": (4, 4)}, up)
        # align_corners to (3, 3): scale 1/2, round(0.5) is 1 (half away from zero, MindSpore's roundf)
        self.check("ResizeNearestNeighbor", [x], {"size": (3, 3), "align_corners": True}, x[:, :, [0, 1, 1]][..., [0, 1, 1]])
        # half_pixel_centers to (1, 4): row floor(0.5 * 2) = 1, columns floor((o + 0.5) / 2)
        self.check("ResizeNearestNeighbor", [x], {"size": (1, 4), "half_pixel_centers": True}, x[:, :, [1]][..., [0, 0, 1, 1]])
        p = np.array([[0, 0.5, 1], [1, 1.5, 2], [2, 2.5, 3]])
        self.check("ResizeBilinearV2", [x], {"size": (3, 3), "align_corners": True}, np.stack([p, p + 4])[:, None])
        # scale 1/2 without half pixels: s = 0, 0.5, 1, 1.5 (the last row past x's clamped to it)
        q = np.array([[0, 0.5, 1, 1], [2, 2.5, 3, 3]])
        self.check("ResizeBilinearV2", [x], {"size": (2, 4)}, np.stack([q, q + 4])[:, None])
        # half_pixel_centers: s = -0.25 (rows 0 and 0), 0.25, 0.75, 1.25 (rows 1 and 1)
        self.check("ResizeBilinearV2", [x[:1, :, :1]], {"size": (1, 4), "half_pixel_centers": True},
                   np.array([0, 0.25, 0.75, 1]).reshape(1, 1, 1, 4))
        for bad in ({}, {"size": (2,)}, {"size": (2, 0)}, {"size": (2, 2), "align_corners": True,
                                                            "half_pixel_centers": True}):
            with self.assertRaises(R.OpError):
                fwd("ResizeBilinearV2", [x], bad)
        with self.assertRaises(R.OpError):
            fwd("ResizeNearestNeighbor", [x[0]], {"size": (2, 2)})

    def test_slice(self):
        x = rng().normal(size=(4, 3, 6))
        self.check("Slice", [x], {"begin": (1, 0, 2), "size": (2, 3, 3)}, x[1:3, :, 2:5])
        self.check("Slice", [x], {"begin": (3, 1, 0), "size": (-1, -1, 6)}, x[3:, 1:, :])
        for bad in ({"begin": (0, 0, 4), "size": (1, 1, 3)}, {"begin": (0, 0, 6), "size": (1, 1, -1)},
                    {"begin": (0, 0), "size": (1, 1)}, {"begin": (0, 0, 0), "size": (1, 0, 1)}, {"size": (1, 1, 1)}):
            with self.assertRaises(R.OpError):
                fwd("Slice", [x], bad)

    def test_add_n(self):
        a, b, c = rng(1).normal(size=(2, 3)), rng(2).normal(size=(2, 3)), rng(3).normal(size=(2, 3))
        self.check("AddN", [a, b, c], {}, a + b + c)
        with self.assertRaises(R.OpError):
            fwd("AddN", [a, np.ones(3)], {})

    def test_stack(self):
        a, b, c = rng(1).normal(size=(2, 3)), rng(2).normal(size=(2, 3)), rng(3).normal(size=(2, 3))
        want = np.zeros((2, 3, 3))
        for k, x in enumerate((a, b, c)):
            want[:, k, :] = x
        self.check("Stack", [a, b, c], {"axis": 1}, want)
        self.check("Stack", [a, b, c], {"axis": -2}, want)    # from the result's rank
        self.check("Stack", [a, b], {}, np.array([a, b]))     # axis 0
        self.check("Stack", [a], {"axis": 2}, a[:, :, None])
        for bad_ins, bad_at in (([a, np.ones((3, 2))], {}), ([a, b], {"axis": 3}), ([a, b], {"axis": -4})):
            with self.assertRaises(R.OpError):
                fwd("Stack", bad_ins, bad_at)

    def test_lerp(self):
        s, e, w = rng(1).normal(size=(2, 3, 4)), rng(2).normal(size=(4,)), rng(3).uniform(size=(3, 1))
        want = np.empty((2, 3, 4))
        for i, j, k in np.ndindex(2, 3, 4):
            want[i, j, k] = s[i, j, k] + w[j, 0] * (e[k] - s[i, j, k])
        self.check("Lerp", [s, e, w], {}, want)
        self.check("Lerp", [e, s, np.array(0.25)], {}, e + 0.25 * (s - e))   # end larger than start
        with self.assertRaises(R.OpError):
            fwd("Lerp", [s, e, np.ones(3)], {})

    def test_masked_fill(self):
        # value where the mask is true, else input; input (2, 1, 4) and mask (3, 1) broadcast to (2, 3, 4)
        x, m = rng(1).normal(size=(2, 1, 4)), np.array([[True], [False], [True]])
        want = np.empty((2, 3, 4))
        for i, j, k in np.ndindex(2, 3, 4):
            want[i, j, k] = 0.5 if m[j, 0] else x[i, 0, k]
        self.check("MaskedFill", [x, m, np.array(0.5)], {}, want)
        self.check("MaskedFill", [np.array([np.inf, np.nan]), np.array([True, True]), np.float64(-1.0)], {},
                   np.array([-1.0, -1.0]))                     # whatever input holds there
        for bad in ([x, m.astype(np.float64), np.array(0.5)], [x, m, np.ones(2)], [x, np.ones((3, 3), bool), 0.5]):
            with self.assertRaises(R.OpError):
                fwd("MaskedFill", bad, {})

    def test_identity_depend_square_sum_all(self):
        x, y = rng(1).normal(size=(3, 4)), rng(2).normal(size=(3, 4))
        self.check("Identity", [x], {}, x)
        self.check("Depend", [x, y], {}, x)                   # its value; y only computed first
        self.check("SquareSumAll", [x, y], {"index": 0}, np.sum(x * x))
        self.check("SquareSumAll", [x, y], {"index": 1}, np.sum(y * y))
        for bad_ins, bad_at in (([x, y[:2]], {"index": 0}), ([x, y], {"index": 2})):
            with self.assertRaises(R.OpError):
                fwd("SquareSumAll", bad_ins, bad_at)

    def test_sigmoid_ce(self):
        x, z = np.array([[-30.0, -1.0, 0.0], [0.5, 2.0, 40.0]]), np.array([[0.0, 1.0, 0.5], [1.0, 0.25, 1.0]])
        # the cross entropy -z log(sigmoid(x)) - (1 - z) log(1 - sigmoid(x)), computed without overflow
        p = 1 / (1 + np.exp(-x))
        naive = -z * np.log(p) - (1 - z) * np.log1p(-np.minimum(p, 1 - 1e-16))
        got = fwd("SigmoidCrossEntropyWithLogits", [x, z], {})
        np.testing.assert_allclose(got, naive, rtol=1e-9, atol=1e-12)
        self.check("SigmoidCrossEntropyWithLogits", [x, z], {},
                   np.maximum(x, 0) - x * z + np.log(1 + np.exp(-np.abs(x))))
        self.assertAlmostEqual(got[1, 2], 0.0, delta=1e-15)          # x 40, z 1: no overflow
        with self.assertRaises(R.OpError):
            fwd("SigmoidCrossEntropyWithLogits", [x, z[:, :1]], {})

    def test_softmax_family(self):
        x = rng().normal(size=(3, 5))
        e = np.exp(x)
        self.check("Softmax", [x], {}, e / e.sum(axis=-1, keepdims=True))
        self.check("Softmax", [x], {"axis": 0}, e / e.sum(axis=0, keepdims=True))
        self.check("Softmax", [x], {"axis": (0,)}, e / e.sum(axis=0, keepdims=True))
        self.check("LogSoftmax", [x], {}, np.log(e / e.sum(axis=-1, keepdims=True)))
        self.check("LogSoftmax", [x], {"axis": 0}, np.log(e / e.sum(axis=0, keepdims=True)))
        big = np.array([[1000.0, 0.0]])               # stable: no overflow
        self.check("Softmax", [big], {}, np.array([[1.0, 0.0]]))

    def test_reductions(self):
        x = rng().normal(size=(2, 3, 4))
        self.check("ReduceSum", [x], {}, np.sum(x))
        self.check("ReduceSum", [x], {"axis": ()}, np.sum(x))
        self.check("ReduceSum", [x], {"axis": 1}, x.sum(axis=1))
        self.check("ReduceSum", [x], {"axis": -1, "keep_dims": True}, x.sum(axis=2, keepdims=True))
        self.check("ReduceMean", [x], {"axis": (0, 2)}, x.mean(axis=(0, 2)))
        self.check("ReduceMean", [x], {"axis": (0, 2), "keep_dims": True}, x.mean(axis=(0, 2), keepdims=True))
        self.check("ReduceMax", [x], {"axis": (2, 0)}, x.max(axis=(0, 2)))
        self.check("ReduceMax", [x], {}, x.max())
        self.check("ReduceMin", [x], {"axis": (2, 0)}, x.min(axis=(0, 2)))
        self.check("ReduceMin", [x], {"axis": -1, "keep_dims": True}, x.min(axis=2, keepdims=True))
        self.check("ReduceMin", [x], {}, x.min())
        self.check("ReduceProd", [x], {"axis": (2, 0)}, x.prod(axis=(0, 2)))
        self.check("ReduceProd", [x], {"axis": -1, "keep_dims": True}, x.prod(axis=2, keepdims=True))
        self.check("ReduceProd", [x], {}, x.prod())
        self.check("CumSum", [x], {"axis": 1}, np.cumsum(x, axis=1))
        self.check("CumProd", [x], {"axis": -1}, np.cumprod(x, axis=2))
        c = np.cumsum(x[:, ::-1], axis=1)[:, ::-1]   # reverse: from the end
        self.check("CumSum", [x], {"axis": 1, "reverse": True}, c)
        self.check("CumSum", [x], {"axis": 1, "exclusive": True, "reverse": True}, c - x)
        e = np.concatenate([np.ones((2, 1, 4)), np.cumprod(x, axis=1)[:, :-1]], axis=1)   # exclusive: 1 first
        self.check("CumProd", [x], {"axis": 1, "exclusive": True}, e)
        b = x > 0
        for op, f in (("ReduceAll", np.all), ("ReduceAny", np.any)):
            got = fwd(op, [b], {"axis": 1})
            self.assertEqual((got.dtype, got.shape), (np.bool_, (2, 4)))
            np.testing.assert_array_equal(got, f(b, axis=1))
            np.testing.assert_array_equal(fwd(op, [b], {"axis": (0, 2), "keep_dims": True}),
                                          f(b, axis=(0, 2), keepdims=True))
            self.assertEqual(fwd(op, [b]), f(b))
        self.assertEqual(fwd("ReduceAll", [np.zeros((0, 2), bool)], {"axis": 0}).tolist(), [True, True])
        self.assertEqual(fwd("ReduceAny", [np.zeros((0, 2), bool)], {"axis": 0}).tolist(), [False, False])
        with self.assertRaises(R.OpError):
            fwd("ReduceAll", [x], {"axis": 1})             # a Bool tensor only

    def test_shape_ops(self):
        x = rng().normal(size=(2, 3, 4))
        self.check("Reshape", [x], {"shape": (4, -1)}, x.reshape(4, 6))
        self.check("Transpose", [x], {"perm": (2, 0, 1)}, np.transpose(x, (2, 0, 1)))
        self.check("Flatten", [x], {}, x.reshape(2, 12))
        self.check("ExpandDims", [x], {"axis": -1}, x.reshape(2, 3, 4, 1))
        c = x[:, :1, :]
        self.check("BroadcastTo", [c], {"shape": (5, 2, 3, -1)}, np.broadcast_to(c, (5, 2, 3, 4)))
        with self.assertRaises(R.OpError):
            fwd("BroadcastTo", [x], {"shape": (2, 5, 4)})
        self.check("ExpandDims", [x], {"axis": 1}, x.reshape(2, 1, 3, 4))
        y = x.reshape(2, 1, 3, 1, 4)
        self.check("Squeeze", [y], {}, x)
        self.check("Squeeze", [y], {"axis": -2}, x.reshape(2, 1, 3, 4))
        self.check("Squeeze", [y], {"axis": (1, 3)}, x)
        with self.assertRaises(R.OpError):
            fwd("Squeeze", [y], {"axis": 0})
        self.check("Concat", [x, x[:, :1], x], {"axis": 1}, np.concatenate([x, x[:, :1], x], axis=1))
        self.check("Concat", [x, x], {}, np.concatenate([x, x], axis=0))
        self.check("StridedSlice", [x], {"begin": (0, 1, -3), "end": (2, 3, 100), "strides": (1, 1, 2)},
                   x[0:2, 1:3, 1:4:2])
        # MindSpore's masks (bit i for entry i) and entries fewer than the dims (the rest whole)
        self.check("StridedSlice", [x], {"begin": (1, 5), "end": (0, 6), "strides": (1, 1), "begin_mask": 2,
                                         "end_mask": 2, "shrink_axis_mask": 1}, x[1, :, :])
        self.check("StridedSlice", [x], {"begin": (0, 0, 1), "end": (1, 2, 3), "strides": (1, 1, 1),
                                         "new_axis_mask": 5, "shrink_axis_mask": 1}, x[None, 0:2, None, :, :])
        self.check("StridedSlice", [x], {"begin": (-1, 9), "end": (0, 1), "strides": (1, 2), "shrink_axis_mask": 1,
                                         "begin_mask": 2}, x[-1, 0:1:2])
        self.check("StridedSlice", [x], {"begin": (0,), "end": (1,), "strides": (1,), "new_axis_mask": 3},
                   x[None])
        for bad in ({"ellipsis_mask": 1}, {"shrink_axis_mask": 1, "begin": (2,)}, {"strides": (-1,)}):
            with self.assertRaises(R.OpError):
                fwd("StridedSlice", [x], dict({"begin": (0,), "end": (1,), "strides": (1,)}, **bad))

    def test_gather(self):
        t = rng().normal(size=(5, 3))
        i = np.array([[4, 0], [2, 2]])
        self.check("Gather", [t, i], {"axis": 0}, t[i])
        # offset 2: index i reads row i - 2; indices 0, 1 and 7 fall outside the 5-row table
        want = np.stack([t[2], np.zeros(3), np.zeros(3), t[0], np.zeros(3)])
        self.check("Gather", [t, np.array([4, 0, 1, 2, 7])], {"offset": 2}, want)
        u = rng(3).normal(size=(2, 5, 3))
        self.check("Gather", [u, i], {"axis": 1}, np.take(u, i, axis=1))
        self.check("Gather", [u, i], {"axis": -1}, u[:, :, [[1, 0], [2, 2]]] * np.array([[0, 1], [1, 1]]))
        with self.assertRaises(R.OpError):
            fwd("Gather", [u, i], {"axis": 3})

    def test_embedding_lookup(self):
        t = rng().normal(size=(4, 2))
        # MindSpore's example: offset 4, ids 5 and 8 read rows 1 and 4 (outside: zeros), 2 reads row -2 (zeros)
        i = np.array([[5, 2], [8, 5]])
        want = np.stack([np.stack([t[1], np.zeros(2)]), np.stack([np.zeros(2), t[1]])])
        self.check("EmbeddingLookup", [t, i], {"offset": 4}, want)
        self.check("EmbeddingLookup", [t, np.array([3, 0])], {}, t[[3, 0]])
        self.check("EmbeddingLookup", [t[:, 0], np.array([[1, 9]])], {"offset": 1}, np.array([[t[0, 0], 0]]))
        for bad in ([rng().normal(size=(2, 2, 2)), i], [t, np.array(1)]):   # a 3-d table, a scalar id
            with self.assertRaises(R.OpError):
                fwd("EmbeddingLookup", bad, {})

    def test_gather_d(self):
        x = rng().normal(size=(3, 4))
        i = np.array([[3, 0, 3], [1, 1, 2]], dtype=np.int32)
        self.check("GatherD", [x, i], {"dim": 1}, np.take_along_axis(x[:2], i, axis=1))   # shorter on dim 0
        j = np.array([[2, 0], [0, 1]], dtype=np.int64)   # shorter than x on dim 1
        self.check("GatherD", [x, j], {"dim": 0}, np.take_along_axis(x[:, :2], j, axis=0))
        self.check("GatherD", [x, i], {"dim": -1}, np.take_along_axis(x[:2], i, axis=1))
        for bad in ({}, {"dim": 2}):
            with self.assertRaises(R.OpError):
                fwd("GatherD", [x, i], bad)
        with self.assertRaises(R.OpError):
            fwd("GatherD", [x, np.zeros((4, 4), dtype=np.int32)], {"dim": 1})   # larger than x off dim

    def test_gather_nd_and_scatters(self):
        x = rng().normal(size=(3, 4, 2))
        i = np.array([[[2, 1], [0, 3]], [[2, 1], [1, 0]]], dtype=np.int32)   # (2, 2, 2): rows of x's last dim
        self.check("GatherNd", [x, i], {}, x[i[..., 0], i[..., 1]])
        self.check("GatherNd", [x, np.array([[1], [0]])], {}, x[[1, 0]])
        self.check("GatherNd", [x, np.array([[2, 3, 1]])], {}, [x[2, 3, 1]])
        for bad in (np.array([[3, 0]]), np.array([[0, -1]]), np.zeros((2, 4), dtype=np.int32)):
            with self.assertRaises(R.OpError):   # outside x; more coordinates than x has dims
                fwd("GatherNd", [x, bad], {})
        rows = np.array([[2], [0], [2]], dtype=np.int64)   # row 2 twice: the last update wins
        u = rng(1).normal(size=(3, 4, 2))
        want = x.copy()
        want[0], want[2] = u[1], u[2]
        self.check("TensorScatterUpdate", [x, rows, u], {}, want)
        want = x.copy()
        want[0] += u[1]
        want[2] += u[0] + u[2]
        self.check("TensorScatterAdd", [x, rows, u], {}, want)
        self.check("TensorScatterSub", [x, rows, u], {}, 2 * x - want)
        want = x.copy()
        want[0] *= u[1]
        want[2] *= u[0] * u[2]   # repeated: applied in turn
        self.check("TensorScatterMul", [x, rows, u], {}, want)
        want = x.copy()
        want[0] /= u[1]
        want[2] = want[2] / u[0] / u[2]
        self.check("TensorScatterDiv", [x, rows, u], {}, want)
        want = x.copy()
        want[0] = np.maximum(x[0], u[1])
        want[2] = np.maximum(np.maximum(x[2], u[0]), u[2])
        self.check("TensorScatterMax", [x, rows, u], {}, want)
        want = x.copy()
        want[0] = np.minimum(x[0], u[1])
        want[2] = np.minimum(np.minimum(x[2], u[0]), u[2])
        self.check("TensorScatterMin", [x, rows, u], {}, want)
        with self.assertRaises(R.OpError):
            fwd("TensorScatterUpdate", [x, rows, u[:2]], {})   # updates not indices.shape[:-1] + x.shape[1:]
        with self.assertRaises(R.OpError):
            fwd("TensorScatterMul", [x, np.array([[3]]), u[:1]], {})   # outside x

    def test_state_scatters(self):
        # the in-place operators' results: the Scatter rows' indices name x's dim 0 (any shape), the
        # ScatterNd rows' are the tensor scatters'; AssignAdd/Sub broadcast value to x's shape
        x = rng(1).normal(size=(3, 4, 2))
        rows = np.array([[2, 0], [2, 1]], dtype=np.int32)   # (2, 2): updates (2, 2, 4, 2); row 2 twice
        u = rng(2).normal(size=(2, 2, 4, 2))
        want = x.copy()
        want[0], want[1], want[2] = u[0, 1], u[1, 1], u[1, 0]   # the last update to row 2 wins
        self.check("ScatterUpdate", [x, rows, u], {}, want)
        want = x.copy()
        want[0] += u[0, 1]
        want[1] += u[1, 1]
        want[2] += u[0, 0] + u[1, 0]
        self.check("ScatterAdd", [x, rows, u], {}, want)
        self.check("ScatterSub", [x, rows, u], {}, 2 * x - want)
        self.check("ScatterMax", [x, rows, u], {}, fwd("TensorScatterMax", [x, rows[..., None], u], {}))
        self.check("ScatterMin", [x, rows, u], {}, fwd("TensorScatterMin", [x, rows[..., None], u], {}))
        self.check("ScatterMul", [x, rows, u], {}, fwd("TensorScatterMul", [x, rows[..., None], u], {}))
        self.check("ScatterDiv", [x, rows, u], {}, fwd("TensorScatterDiv", [x, rows[..., None], u], {}))
        nd, v = np.array([[2, 1], [0, 3]]), rng(3).normal(size=(2, 2))
        for kind in ("Update", "Add", "Sub"):
            self.check("ScatterNd" + kind, [x, nd, v], {}, fwd("TensorScatter" + kind, [x, nd, v], {}))
        self.check("AssignAdd", [x, np.array([1.0, 2.0])], {}, x + [1.0, 2.0])
        self.check("AssignSub", [x, x], {}, np.zeros_like(x))
        with self.assertRaises(R.OpError):
            fwd("AssignAdd", [x[0], x], {})   # value (3, 4, 2) does not broadcast to x's (4, 2)
        with self.assertRaises(R.OpError):
            fwd("ScatterUpdate", [x, np.array([3]), u[0, :1]], {})   # row 3 outside x

    def test_inplace_ops(self):
        # InplaceAdd, Sub, Update: rows of dim 0 named by the indices attribute, in order; MindSpore's
        # bprops return zeros
        x, v = rng(1).normal(size=(4, 3)), rng(2).normal(size=(3, 3))
        want = x.copy()
        want[0] += v[0] + v[2]
        want[3] += v[1]
        self.check("InplaceAdd", [x, v], {"indices": (0, 3, 0)}, want)
        self.check("InplaceSub", [x, v], {"indices": (0, 3, 0)}, 2 * x - want)
        want = x.copy()
        want[1], want[2] = v[2], v[1]
        self.check("InplaceUpdate", [x, v], {"indices": (1, 2, 1)}, want)
        self.check("InplaceUpdate", [x, v[:1]], {"indices": 2}, np.concatenate([x[:2], v[:1], x[3:]]))
        with self.assertRaises(R.OpError):
            fwd("InplaceAdd", [x, v], {"indices": (0, 1)})   # v has 3 rows for 2 indices
        dx, dv = R.OPS["InplaceAdd"][1](np.ones((4, 3)), [x, v], {"indices": (0, 3, 0)})
        self.assertEqual((float(np.abs(dx).sum()), float(np.abs(dv).sum())), (0.0, 0.0))

    def test_state_scatter_bprops_by_hand(self):
        # MindSpore's bprops: ScatterMax's updates get dy's rows whether they won or not (Gather(dout,
        # indices)), Sub's negated; x (the state) and Mul's, Div's updates none
        x, rows, u, g = np.array([5.0, 3.0]), np.array([0, 1, 0]), np.array([1.0, 4.0, 2.0]), np.array([10.0, 20.0])
        self.assertEqual(R.OPS["ScatterMax"][1](g, [x, rows, u], {})[:2], [None, None])
        np.testing.assert_allclose(R.OPS["ScatterMax"][1](g, [x, rows, u], {})[2], [10.0, 20.0, 10.0])
        np.testing.assert_allclose(R.OPS["ScatterSub"][1](g, [x, rows, u], {})[2], [-10.0, -20.0, -10.0])
        self.assertEqual(R.OPS["ScatterMul"][1](g, [x, rows, u], {}), [None, None, None])
        dx, dv = R.OPS["AssignSub"][1](np.ones((3, 2)), [np.zeros((3, 2)), np.array([1.0, 1.0])], {})
        self.assertIsNone(dx)
        np.testing.assert_allclose(dv, [-3.0, -3.0])

    def test_state_scatter_train(self):
        # each forward pass writes the result into x (state: no gradient, no optimizer, no decay):
        # after 2 steps ScatterAdd has added u's rows twice and AssignAdd value twice, while w trains
        module = R.parse("""
          graph @g(%u: <Tensor[Float32], (2, 3)> = normal(1.0), %rows: <Tensor[Int32], (2,)> = randint(0, 1),
                   %w: <Parameter[Float32], (2, 3)> = ones, %t: <Parameter[Float32], (4, 3)> = zeros,
                   %c: <Parameter[Float32], (2, 3)> = zeros) {
            %h = Mul(%u, %w)
            %s = ScatterAdd(%t, %rows, %h)
            %a = AssignAdd(%c, %u)
            %q = Square(%s)
            %l1 = ReduceSum(%q)
            %l2 = ReduceSum(%a)
            %l = Add(%l1, %l2)
            return %l
          }
          train {loss: %l, optimizer: SGD(learning_rate: 0.01, weight_decay: 0.5), steps: 2}""")
        prog = R.flatten(module)
        feeds = {vid: R.initialize(p.name, p.type, p.init, 0) for vid, p in prog.inputs}
        u = np.float64(feeds[0])
        _, params = R.train(prog, module, dict(feeds), None, io.StringIO())
        np.testing.assert_allclose(params[4], 2 * u, rtol=1e-6)
        self.assertEqual(float(np.abs(params[3][1:]).sum()), 0.0, "rows 1..3 untouched")
        self.assertTrue(np.any(params[3][0] != 0), "row 0 took the updates")
        self.assertTrue(np.any(params[2] != 1), "w trains")

    def test_tensor_scatter_bprops_by_hand(self):
        # MindSpore's bprops: Mul's updates' gradient x dy at its slice (not the other updates' product:
        # MindSpore's), Div's dy x / -u^2; Max's ties share dy: x (2) and two updates (2) at element 0
        x, rows = np.array([2.0, 3.0, 5.0]), np.array([[0], [2], [0]])
        u, g = np.array([2.0, 4.0, 0.5]), np.array([1.0, 10.0, 100.0])
        bwd = R.OPS["TensorScatterMul"][1]
        dx, _, du = bwd(g, [x, rows, u], {})
        np.testing.assert_allclose(dx, [1.0, 10.0, 400.0])
        np.testing.assert_allclose(du, [2.0, 500.0, 2.0])
        dx, _, du = R.OPS["TensorScatterDiv"][1](g, [x, rows, u], {})
        np.testing.assert_allclose(dx, [1.0, 10.0, 25.0])
        np.testing.assert_allclose(du, [-0.5, -100.0 * 5.0 / 16.0, -8.0])
        dx, _, du = R.OPS["TensorScatterMax"][1](g, [x, rows, np.array([2.0, 4.0, 2.0])], {})
        np.testing.assert_allclose(dx, [1.0 / 3.0, 10.0, 100.0])
        np.testing.assert_allclose(du, [1.0 / 3.0, 0.0, 1.0 / 3.0])
        dx, _, du = R.OPS["TensorScatterMin"][1](g, [x, rows, np.array([1.0, 7.0, 2.0])], {})
        np.testing.assert_allclose(dx, [0.0, 10.0, 100.0])
        np.testing.assert_allclose(du, [1.0, 0.0, 0.0])

    def test_segments(self):
        x = np.array([[1.0, -2.0], [3.0, 0.5], [-1.0, 4.0], [2.0, 2.0], [5.0, 6.0]])
        ids = np.array([1, -1, 1, 0, 3], dtype=np.int32)   # -1 and 3 dropped for 3 segments; segment 2 empty
        big = float(np.finfo(np.float32).max)
        self.check("UnsortedSegmentSum", [x, ids], {"num_segments": 3}, [[2.0, 2.0], [0.0, 2.0], [0.0, 0.0]])
        self.check("UnsortedSegmentMax", [x, ids], {"num_segments": 3}, [[2.0, 2.0], [1.0, 4.0], [-big, -big]])
        self.check("UnsortedSegmentMin", [x, ids], {"num_segments": 3}, [[2.0, 2.0], [-1.0, -2.0], [big, big]])
        self.check("UnsortedSegmentProd", [x, ids], {"num_segments": 3}, [[2.0, 2.0], [-1.0, -8.0], [1.0, 1.0]])
        half = R.OPS["UnsortedSegmentMax"][0]([x, ids], {"num_segments": 3, "@dtype": "Float16"})
        np.testing.assert_array_equal(half[2], [-65504.0, -65504.0])   # the type's lowest
        y = rng().normal(size=(2, 3, 4))
        i2 = np.array([[0, 2, 2], [1, 0, 5]], dtype=np.int64)   # ids of two dims
        want = np.zeros((3, 4))
        for a in range(2):
            for b in range(3):
                if i2[a, b] < 3:
                    want[i2[a, b]] += y[a, b]
        self.check("UnsortedSegmentSum", [y, i2], {"num_segments": 3}, want)
        for bad in ({}, {"num_segments": 0}):
            with self.assertRaises(R.OpError):
                fwd("UnsortedSegmentSum", [x, ids], bad)
        with self.assertRaises(R.OpError):
            fwd("UnsortedSegmentSum", [x, np.zeros(4, dtype=np.int32)], {"num_segments": 2})   # not x's first dim

    def test_l2_normalize(self):
        x = rng().normal(size=(3, 4))
        self.check("L2Normalize", [x], {}, x / np.sqrt((x * x).sum(0, keepdims=True)))
        self.check("L2Normalize", [x], {"axis": (-1,)}, x / np.sqrt((x * x).sum(1, keepdims=True)))
        small = x * 1e-3   # each row's sum of squares below epsilon: divided by sqrt(epsilon)
        self.check("L2Normalize", [small], {"axis": 1, "epsilon": 1e-4}, small / 1e-2)
        with self.assertRaises(R.OpError):
            fwd("L2Normalize", [x], {"axis": (0, 1)})

    def test_tile(self):
        x = rng().normal(size=(2, 3))
        self.check("Tile", [x], {"multiples": (2, 1)}, np.concatenate([x, x], axis=0))
        self.check("Tile", [x], {"multiples": (3, 2, 1)}, np.broadcast_to(np.concatenate([x, x]), (3, 4, 3)))
        self.check("Tile", [x], {"multiples": (2,)}, np.concatenate([x, x], axis=1))   # x's last dims
        with self.assertRaises(R.OpError):
            fwd("Tile", [x], {"multiples": (2, 0)})

    def test_triangle(self):
        x = rng().normal(size=(2, 3, 4))
        rows, cols = np.indices((3, 4))
        for d in (-4, -1, 0, 2, 5):   # below every element, below, on, above the main diagonal, past the last
            self.check("Tril", [x], {"diagonal": d}, np.where(cols - rows <= d, x, 0))
            self.check("Triu", [x], {"diagonal": d}, np.where(cols - rows >= d, x, 0))
        self.check("Tril", [x], {}, np.where(cols <= rows, x, 0))   # the main diagonal by default
        b = x > 0   # any element type: Bool's zero is false
        np.testing.assert_array_equal(fwd("Triu", [b], {"diagonal": 1}), np.where(cols > rows, b, False))
        with self.assertRaises(R.OpError):
            fwd("Tril", [x[0, 0]], {})   # a vector has no matrix
        with self.assertRaises(R.OpError):
            fwd("Triu", [x], {"diagonal": 1.5})

    def test_one_hot(self):
        i = np.array([[0, 3], [-1, 4]], dtype=np.int32)   # -1 and 4 outside 4 classes: rows of off_value
        on, off = np.float64(0.9), np.float64(-0.5)
        want = np.full((2, 2, 4), -0.5)
        want[0, 0, 0] = want[0, 1, 3] = 0.9
        self.check("OneHot", [i, on, off], {"depth": 4}, want)
        self.check("OneHot", [i, on, off], {"depth": 4, "axis": 0}, np.moveaxis(want, -1, 0))
        self.check("OneHot", [i, on, off], {"depth": 4, "axis": 1}, np.moveaxis(want, -1, 1))
        for bad in ({}, {"depth": 4, "axis": 3}):
            with self.assertRaises(R.OpError):
                fwd("OneHot", [i, on, off], bad)
        with self.assertRaises(R.OpError):
            fwd("OneHot", [i.astype(np.float32), on, off], {"depth": 4})

    def test_picks(self):
        x = np.array([[1.0, 5.0, 5.0, -2.0], [np.nan, 0.0, np.nan, 7.0], [3.0, -1.0, 3.0, -1.0]])
        self.check("ArgMaxWithValue", [x], {"axis": 1, "index": 0}, np.array([1, 0, 0]))     # first max, first NaN
        self.check("ArgMinWithValue", [x], {"axis": -1, "index": 0}, np.array([3, 0, 1]))    # NaN picked by min too
        self.check("ArgMaxWithValue", [x], {"axis": 1, "keep_dims": True, "index": 1}, [[5.0], [np.nan], [3.0]])
        self.check("ArgMinWithValue", [x], {"index": 1}, [np.nan, -1.0, np.nan, -2.0])       # axis 0 by default
        self.check("Argmax", [x], {}, np.array([1, 0, 0]))                                   # axis -1 by default
        self.check("Argmin", [x], {"axis": 0}, np.array([1, 2, 1, 0]))
        self.assertEqual(fwd("Argmax", [x], {}).dtype, np.int32)
        self.check("TopK", [x], {"k": 3, "index": 0}, [[5.0, 5.0, 1.0], [np.nan, np.nan, 7.0], [3.0, 3.0, -1.0]])
        self.check("TopK", [x], {"k": 3, "index": 1}, np.array([[1, 2, 0], [0, 2, 3], [0, 2, 1]]))
        for op, bad in (("ArgMaxWithValue", {"axis": 1}), ("ArgMaxWithValue", {"index": 2}),
                        ("TopK", {"k": 5, "index": 0}), ("TopK", {"k": 2})):
            with self.assertRaises(R.OpError):
                fwd(op, [x], bad)

    def test_layer_norm(self):
        x, g, b = rng().normal(size=(2, 3, 4)), rng(1).normal(size=(4,)), rng(2).normal(size=(4,))
        mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
        self.check("LayerNorm", [x, g, b], {}, (x - mu) / np.sqrt(var + 1e-5) * g + b)
        g2, b2 = rng(3).normal(size=(3, 4)), rng(4).normal(size=(3, 4))
        mu, var = x.mean((1, 2), keepdims=True), x.var((1, 2), keepdims=True)
        self.check("LayerNorm", [x, g2, b2], {"begin_norm_axis": 1, "begin_params_axis": 1, "epsilon": 0.1},
                   (x - mu) / np.sqrt(var + 0.1) * g2 + b2)

    def test_batch_norm(self):
        # training: the batch's statistics over every dim but C; inference: the given ones
        x, g, b = rng().normal(size=(4, 3, 2, 5)), rng(1).normal(size=(3,)), rng(2).normal(size=(3,))
        m, v = rng(3).normal(size=(3,)), rng(4).uniform(0.5, 2, size=(3,))
        c = (1, 3, 1, 1)
        mu, var = x.mean((0, 2, 3), keepdims=True), x.var((0, 2, 3), keepdims=True)
        self.check("BatchNorm", [x, g, b, m, v], {"is_training": True},
                   (x - mu) / np.sqrt(var + 1e-5) * g.reshape(c) + b.reshape(c))
        self.check("BatchNorm", [x, g, b, m, v], {"epsilon": 0.1},
                   (x - m.reshape(c)) / np.sqrt(v.reshape(c) + 0.1) * g.reshape(c) + b.reshape(c))
        x2 = rng(5).normal(size=(6, 3))
        self.check("BatchNorm", [x2, g, b, m, v], {"is_training": True},
                   (x2 - x2.mean(0)) / np.sqrt(x2.var(0) + 1e-5) * g + b)
        # the moving statistics, MindSpore's update: the variance unbiased over the 40 values a channel has
        nm, nv = R.batch_norm_moving([x, g, b, m, v], {"is_training": True, "momentum": 0.2})
        np.testing.assert_allclose(nm, 0.8 * m + 0.2 * mu.reshape(-1), rtol=1e-12)
        np.testing.assert_allclose(nv, 0.8 * v + 0.2 * var.reshape(-1) * 40 / 39, rtol=1e-12)
        with self.assertRaises(R.OpError):
            fwd("BatchNorm", [x[0], g, b, m, v])
        with self.assertRaises(R.OpError):
            fwd("BatchNorm", [x, g[:2], b, m, v])

    def test_batch_norm_moving_statistics_train(self):
        # two SGD steps with weight decay on the same x: each forward pass updates the moving mean and
        # variance (momentum 0.5), the optimizer never does (no gradient, no decay): after two, 0.75 of
        # the batch's mean and 0.25 + 0.75 of its unbiased variance
        module = R.parse("""
          graph @g(%x: <Tensor[Float32], (4, 2)> = normal(1.0), %g: <Parameter[Float32], (2,)> = ones,
                   %b: <Parameter[Float32], (2,)> = zeros, %m: <Parameter[Float32], (2,)> = zeros,
                   %v: <Parameter[Float32], (2,)> = ones) {
            %y = BatchNorm(%x, %g, %b, %m, %v) {is_training: true, momentum: 0.5}
            %s = Sigmoid(%y)
            %l = ReduceSum(%s)
            return %l
          }
          train {loss: %l, optimizer: SGD(learning_rate: 0.1, weight_decay: 0.5), steps: 2}""")
        prog = R.flatten(module)
        feeds = {vid: R.initialize(p.name, p.type, p.init, 0) for vid, p in prog.inputs}
        x = np.float64(feeds[0])
        _, params = R.train(prog, module, dict(feeds), None, io.StringIO())
        np.testing.assert_allclose(params[3], 0.75 * x.mean(0), rtol=1e-6)
        np.testing.assert_allclose(params[4], 0.25 + 0.75 * x.var(0) * 4 / 3, rtol=1e-6)
        self.assertTrue(np.any(params[1] != 1), "the scale trains")

    def test_rms_norm(self):
        x, g, g2 = rng().normal(size=(2, 3, 4)), rng(1).normal(size=(4,)), rng(3).normal(size=(3, 4))
        self.check("RmsNorm", [x, g], {}, x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * g)
        self.check("RmsNorm", [x, g2], {"epsilon": 0.1}, x / np.sqrt((x * x).mean((1, 2), keepdims=True) + 0.1) * g2)

    def test_cast(self):
        ok, st, _ = self.run_graph("""
          graph @g(%x: <Tensor[Float32], (4,)>) {
            %h = Cast(%x) {dtype: Float16}
            %i = Cast(%x) {dtype: "Int32"}
            %b = Cast(%x) {dtype: Bool}
            return %h, %i, %b
          }""", {"x": np.array([1.1, -2.7, 0.0, 70000.0], np.float32)})
        self.assertTrue(ok, st)
        h, i, b = st
        self.assertEqual(h.dtype, np.float16)
        np.testing.assert_array_equal(h, np.array([1.1, -2.7, 0.0, np.inf], np.float16))
        np.testing.assert_array_equal(i, np.array([1, -2, 0, 70000], np.int32))
        np.testing.assert_array_equal(b, np.array([True, True, False, True]))

    def test_half_arithmetic_rounds_once(self):
        """Float16 and BFloat16 operators compute wide and round each result once."""
        x = np.array([0.3, -1.7, 2.05, 11.3], np.float32)
        w = np.array([[0.5, -0.25], [1.5, 0.75], [-0.125, 2.0], [0.0625, -1.0]], np.float32)
        for dt, rnd in (("Float16", lambda v: np.float16(v)), ("BFloat16", R.round_bf16)):
            xs, ws = rnd(x), rnd(w)
            ok, st, _ = self.run_graph("""
              graph @g(%%x: <Tensor[%s], (1, 4)>, %%w: <Tensor[%s], (4, 2)>) {
                %%s = Sigmoid(%%x)
                %%m = MatMul(%%x, %%w)
                %%r = ReduceSum(%%x) {axis: 1}
                return %%s, %%m, %%r
              }""" % (dt, dt), {"x": xs.reshape(1, 4), "w": ws})
            self.assertTrue(ok, st)
            sig, mm, red = st
            x64, w64 = np.float64(xs).reshape(1, 4), np.float64(ws)
            np.testing.assert_array_equal(sig, rnd(1 / (1 + np.exp(-x64))))
            np.testing.assert_array_equal(mm, rnd(x64 @ w64))   # one rounding, not one per product
            np.testing.assert_array_equal(red, rnd(x64.sum(axis=1)))
            self.assertEqual(sig.dtype, np.float16 if dt == "Float16" else np.float32)

    def test_round_bf16_ties_to_even(self):
        one = 1.0
        self.assertEqual(R.round_bf16(one + 2 ** -8), one)                  # a tie: to the even 1.0
        self.assertEqual(R.round_bf16(one + 3 * 2 ** -8), one + 2 ** -6)    # a tie: to the even 1 + 2^-6
        self.assertEqual(R.round_bf16(one + 2 ** -8 + 2 ** -20), one + 2 ** -7)

    def test_round_bf16_bits_matches_rounding_of_float32(self):
        """The runtime's upper-16-bit rounding of float32 and round_bf16 agree: ties, inf, NaN, overflow."""
        x = rng().normal(size=20000).astype(np.float32) * np.float32(10.0) ** rng(1).integers(-40, 38, 20000)
        ties = np.array([1 + 2 ** -8, 1 + 3 * 2 ** -8, -(1 + 2 ** -8), 2 ** -130 * (1 + 2 ** -8)], np.float32)
        edge = np.array([np.inf, -np.inf, 3.3895314e38, np.finfo(np.float32).max, -np.finfo(np.float32).max,
                         0.0, -0.0, np.finfo(np.float32).tiny, 1e-45], np.float32)
        for v in (x, ties, edge):
            np.testing.assert_array_equal(R.round_bf16_bits(v), R.round_bf16(v))
        np.testing.assert_array_equal(R.round_bf16_bits(ties), np.array([1.0, 1 + 2 ** -6, -1.0, 2 ** -130], np.float32))
        self.assertEqual(R.round_bf16_bits(np.float32(np.finfo(np.float32).max)), np.inf)   # rounds past the top
        n = R.round_bf16_bits(np.array([np.nan, -np.nan], np.float32))
        self.assertTrue(np.isnan(n).all())
        self.assertTrue(np.isnan(R.round_bf16(np.array([np.nan]))).all())
        # every value is bfloat16-exact: its lower 16 bits are zero
        self.assertFalse((R.round_bf16_bits(x).view(np.uint32) & 0xFFFF).any())

    def test_losses(self):
        logits, labels = rng().normal(size=(4, 6)), np.array([0, 5, 2, 2])
        logp = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
        self.check("SparseSoftmaxCrossEntropyWithLogits", [logits, labels], {}, -logp[np.arange(4), labels].mean())
        # the dense labels': each row's loss, -sum labels * log_softmax; one-hot rows are the sparse one's rows
        probs = rng(3).uniform(0.1, 1, size=(4, 6))
        probs /= probs.sum(axis=1, keepdims=True)
        self.check("SoftmaxCrossEntropyWithLogits", [logits, probs], {}, -(probs * logp).sum(axis=1))
        self.check("SoftmaxCrossEntropyWithLogits", [logits, np.eye(6)[labels]], {}, -logp[np.arange(4), labels])
        p, t = rng(1).normal(size=(3, 2)), rng(2).normal(size=(3, 2))
        self.check("MSELoss", [p, t], {}, ((p - t) ** 2).mean())
        self.check("L1Loss", [p, t], {}, np.abs(p - t).mean())
        self.check("L2Loss", [p], {}, (p * p).sum() / 2)
        self.check("L2Loss", [np.array(3.0)], {}, 4.5)

    def test_misc_ops(self):
        # MindSpore's LpNorm max((sum |x|^p)^(1/p), epsilon), ClipByNorm x c / max(l2, c), IOU with its + 1
        x = rng(1).normal(size=(4, 3))
        self.check("LpNorm", [x], {"axis": 1, "p": 3}, (np.abs(x) ** 3).sum(axis=1) ** (1 / 3))
        self.check("LpNorm", [x], {"axis": (0, 1), "p": 1, "keep_dims": True}, np.abs(x).sum(keepdims=True))
        self.check("LpNorm", [np.zeros((2, 2))], {"axis": 0, "epsilon": 0.5}, np.full(2, 0.5))
        l2 = np.sqrt((x * x).sum(axis=1, keepdims=True))
        self.check("ClipByNorm", [x, np.array([1.2])], {"axis": 1}, x * 1.2 / np.maximum(l2, 1.2))
        self.check("ClipByNorm", [x, np.array(100.0)], {}, x)
        a = np.array([[0.0, 0.0, 3.0, 3.0], [1.0, 1.0, 2.0, 5.0]])
        g = np.array([[0.0, 0.0, 3.0, 3.0], [2.0, 2.0, 4.0, 4.0], [9.0, 9.0, 9.0, 9.0]])
        over = np.array([[16, 6], [4, 3], [0, 0]], dtype=float)
        area_a, area_g = np.array([16.0, 10.0]), np.array([16.0, 9.0, 1.0])
        self.check("IOU", [a, g], {}, over / (area_a[None] + area_g[:, None] - over + 1e-10))
        self.check("IOU", [a, g], {"mode": "iof"}, over / (area_g[:, None] + 1e-10))
        with self.assertRaises(R.OpError):
            fwd("IOU", [a, g], {"mode": "giou"})
        with self.assertRaises(R.OpError):
            fwd("LpNorm", [x], {"p": 2})

    def test_kldiv_loss(self):
        # MindSpore's KLDivLoss: y (log y - x), 0 where y is 0; reduced by mean, batchmean (dim 0) or sum
        x, y = rng(1).normal(size=(4, 3)), rng(2).uniform(0, 1, size=(4, 3))
        y[1, 2] = 0
        e = y * (np.log(np.where(y > 0, y, 1)) - x)
        e[1, 2] = 0
        self.check("KLDivLoss", [x, y], {"reduction": "none"}, e)
        self.check("KLDivLoss", [x, y], {}, e.mean())
        self.check("KLDivLoss", [x, y], {"reduction": "batchmean"}, e.sum() / 4)
        self.check("KLDivLoss", [x, y], {"reduction": "sum"}, e.sum())
        for ins, at in (([x, y[:2]], {}), ([np.array(1.0), np.array(0.5)], {"reduction": "batchmean"}),
                        ([x, y], {"reduction": "batch"})):
            with self.assertRaises(R.OpError):
                R.OPS["KLDivLoss"][0](ins, at)

    def test_single_member_collectives_are_identity(self):
        x = rng().normal(size=(2, 4))
        for op in R.COLLECTIVES:
            self.check(op, [x], {"group": (0,)}, x)

    def run_graph(self, src, feeds):
        """Evaluates a graph with float32 rounding; returns (ok, outputs or message, prog)."""
        try:
            prog = R.flatten(R.parse(src))
            by_name = {p.name: vid for vid, p in prog.inputs}
            vals = R.forward(prog, {by_name[n]: x for n, x in feeds.items()})
            return True, [vals[v] for v in prog.outputs], prog
        except R.ModelError as e:
            return False, e.message, None

    def test_compare_masks(self):
        # a comparison's Bool: Select's condition as it is, a Cast to Float32 multiplied in
        ok, st, _ = self.run_graph("""
          graph @g(%x: <Tensor[Float32], (2, 3)>, %t: <Tensor[Float32], (3,)>) {
            %m = Greater(%x, 0.0)
            %n = LessEqual(%t, %x)
            %x2 = Mul(%x, 2.0)
            %s = Select(%m, %x, %x2)
            %f = Cast(%n) {dtype: Float32}
            %y = Mul(%s, %f)
            return %m, %n, %y
          }""", {"x": np.array([[1.5, -2.0, 0.0], [-0.5, 3.0, 2.0]], np.float32),
                 "t": np.array([0.0, 3.0, 2.0], np.float32)})
        self.assertTrue(ok, st)
        m, n, y = st
        self.assertEqual((m.dtype, n.dtype, y.dtype), (np.bool_, np.bool_, np.float32))
        self.assertEqual(m.tolist(), [[True, False, False], [False, True, True]])
        self.assertEqual(n.tolist(), [[True, False, False], [False, True, True]])
        np.testing.assert_array_equal(y, np.array([[1.5, 0, 0], [0, 3.0, 2.0]], np.float32))

    def test_every_result_is_rounded_to_float32(self):
        a = np.array([1.0, 3.0], np.float32)
        ok, (q,), _ = self.run_graph("""
          graph @g(%a: <Tensor[Float32], (2,)>, %b: <Tensor[Float32], (2,)>) {
            %q = Div(%a, %b)
            return %q
          }""", {"a": a, "b": np.array([3.0, 7.0], np.float32)})
        self.assertEqual(q.dtype, np.float32)
        np.testing.assert_array_equal(q, np.array([1 / 3, 3 / 7], np.float32))

    def test_numbers_as_operands(self):
        x = rng().normal(size=(2, 3)).astype(np.float32)
        ok, (y, h), prog = self.run_graph("""
          graph @f(%a: <Tensor[Float16], (2, 3)>) { %b = Sub(%a, .5) return %b }
          graph @main(%x: <Tensor[Float32], (2, 3)>) {
            %1 = Mul(%x, 0.1)
            %2 = Add(%1, 1e-6)
            %y = Sub(1.0, %2)
            %m = Maximum(%y, 0)
            %c = Cast(%m) {dtype: Float16}
            %h = Call(%c) {graph: @f}
            return %y, %h
          }""", {"x": x})
        self.assertTrue(ok, y)
        f32 = np.float32
        one = (x.astype(np.float64) * f32(0.1)).astype(f32)          # 0.1 rounded to Float32 first
        want = (1.0 - (one.astype(np.float64) + f32(1e-6)).astype(f32)).astype(f32)
        np.testing.assert_array_equal(y, want)
        np.testing.assert_array_equal(h, (np.maximum(want, 0).astype(np.float16) - np.float16(0.5)))
        self.assertEqual(sorted(prog.literals.values()), [0, 1e-6, 0.1, 0.5, 1.0])
        self.assertEqual([p.name for _, p in prog.inputs], ["x"])          # no input of the user's

    def test_numbers_that_do_not_fit(self):
        for stmt, msg in (("%y = Add(%i, 0.5)", "the number 0.5 is not an integer, but the operand it goes with "
                           "is Int32"),
                          ("%y = Add(%i, 3000000000)", "the number 3000000000 does not fit Int32"),
                          ("%y = Add(1, 2)", "Add: a number operand takes its type from a value operand"),
                          ("%y = Call(%i, 2) {graph: @g}", "Call: a number cannot be passed to a called graph")):
            ok, msg_got, _ = self.run_graph("graph @g(%%i: <Tensor[Int32], (2,)>) { %s return %%y }" % stmt, {})
            self.assertFalse(ok, stmt)
            self.assertIn(msg, msg_got)

    def test_computed_constants(self):
        ok, outs, prog = self.run_graph("""
          graph @g(%x: <Tensor[Float32], (2,)>) {
            %a = Arange() {stop: 5}
            %b = Arange() {start: 0.5, stop: 1.5, step: 0.25, begin: (1,), end: (3,)}
            %m = CausalMask() {shape: (1, 3, 4)}
            %f = CausalMask() {shape: (3, 3), dtype: Float16, fill: -100.0}
            %t = CausalMask() {shape: (2, 3), dtype: Bool}
            %c = RopeCos() {shape: (3, 4)}
            %s = RopeSin() {shape: (4, 4), theta: 100.0, begin: (2, 0), end: (4, 2)}
            %o = FillV2() {shape: (2, 3), fill: 1.5}
            %k = FillV2() {shape: (4,), fill: 7, dtype: Int32, begin: (1,), end: (3,)}
            %e = Eye() {n: 3, m: 4, begin: (1, 0), end: (3, 4)}
            %l = LinSpace() {start: 1.0, stop: 10.0, num: 5, begin: (2,), end: (5,)}
            return %a, %b, %m, %f, %t, %c, %s, %o, %k, %e, %l
          }""", {"x": np.zeros(2, np.float32)})
        self.assertTrue(ok, outs)
        a, b, m, f, t, c, s, o, k, e, lin = outs
        np.testing.assert_array_equal(e, np.eye(3, 4, dtype=np.float32)[1:])
        np.testing.assert_array_equal(lin, np.array([5.5, 7.75, 10.0], np.float32))
        np.testing.assert_array_equal(o, np.full((2, 3), 1.5, np.float32))
        self.assertEqual(k.dtype, np.int32)
        np.testing.assert_array_equal(k, np.full(2, 7, np.int32))
        self.assertEqual(a.dtype, np.int64)                           # MindSpore's: Int64 from integers
        np.testing.assert_array_equal(a, np.arange(5))
        np.testing.assert_array_equal(b, np.array([0.75, 1.0], np.float32))
        low = np.float32(np.finfo(np.float32).min)                    # the masked value: the type's lowest
        np.testing.assert_array_equal(m, np.array([[[0, low, low, low], [0, 0, low, low], [0, 0, 0, low]]],
                                                  np.float32))
        self.assertEqual(f.dtype, np.float16)
        np.testing.assert_array_equal(f, np.triu(np.full((3, 3), -100.0), 1).astype(np.float16))
        np.testing.assert_array_equal(t, np.array([[True, False, False], [True, True, False]]))
        freq = np.array([1, 0.01, 1, 0.01], np.float32)                # 10000^(-2k/4), halves alike
        np.testing.assert_allclose(c, np.cos(np.arange(3)[:, None] * freq[None, :]), rtol=1e-7)
        np.testing.assert_allclose(s, np.sin(np.array([[2.0], [3.0]]) * np.array([1, 0.1])), rtol=1e-7)
        self.assertEqual([p.name for _, p in prog.inputs], ["x"])          # no input of the user's

    def test_computed_constants_errors(self):
        for stmt, msg in (("%y = Arange() {start: 3, stop: 3}", "give no element"),
                          ("%y = CausalMask() {shape: (4,)}", "the value has 2 dims or more"),
                          ("%y = FillV2() {shape: (2, 0), fill: 1.0}", "all positive"),
                          ("%y = FillV2() {shape: (2,)}", "needs the attribute 'fill'"),
                          ("%y = Eye() {n: 2}", "needs the attributes 'n' and 'm'"),
                          ("%y = LinSpace() {start: 1.0, stop: 2.0, num: 0}", "num 0 must be 1 or more"),
                          ("%y = RopeCos() {shape: (2, 4), end: (3, 4)}", "no piece of the whole value")):
            ok, msg_got, _ = self.run_graph("graph @g(%%i: <Tensor[Int32], (2,)>) { %s return %%y }" % stmt,
                                            {"i": np.zeros(2, np.int32)})
            self.assertFalse(ok, stmt)
            self.assertIn(msg, msg_got)

    def test_call_is_inlined(self):
        x = rng().normal(size=(2, 3)).astype(np.float32)
        ok, (y,), prog = self.run_graph("""
          graph @sq(%a: <Tensor[Float32], (2, 3)>) { %s = Square(%a) return %s }
          graph @main(%x: <Tensor[Float32], (2, 3)>) {
            %y = Call(%x) {graph: @sq, shard: {in_strategy: ((2, 1),)}}
            %z = Call(%y) {graph: @sq}
            return %z
          }""", {"x": x})
        self.assertTrue(ok)
        np.testing.assert_array_equal(y, (x * x).astype(np.float32) ** 2)
        self.assertEqual([i.op for i in prog.instrs], ["Square", "Square"])


# ---------------------------------------------------------------------------

def numeric_grad(f, x, h=1e-6):
    g = np.zeros_like(x)
    it = np.nditer(x, flags=["multi_index"])
    for _ in it:
        i = it.multi_index
        old = x[i]
        x[i] = old + h
        fp = f()
        x[i] = old - h
        fm = f()
        x[i] = old
        g[i] = (fp - fm) / (2 * h)
    return g


class Gradients(unittest.TestCase):
    """Each backward against central differences of sum(r * forward) in float64."""

    def check(self, op, ins, attrs=None, wrt=None):
        attrs = attrs or {}
        ins = [np.array(x, dtype=np.float64) if np.asarray(x).dtype.kind == "f" else np.asarray(x) for x in ins]
        out = fwd(op, ins, attrs)
        r = rng(7).normal(size=np.shape(out))
        grads = R.OPS[op][1](r, ins, attrs)
        self.assertEqual(len(grads), len(ins))
        for k in wrt if wrt is not None else range(len(ins)):
            num = numeric_grad(lambda: float(np.sum(r * fwd(op, ins, attrs))), ins[k])
            self.assertEqual(np.shape(grads[k]), ins[k].shape, "%s input %d" % (op, k))
            np.testing.assert_allclose(grads[k], num, rtol=1e-6, atol=1e-8, err_msg="%s input %d" % (op, k))

    def test_matmul(self):
        for ta in (False, True):
            for tb in (False, True):
                a = rng(1).normal(size=(4, 3) if ta else (3, 4))
                b = rng(2).normal(size=(5, 4) if tb else (4, 5))
                self.check("MatMul", [a, b], {"transpose_a": ta, "transpose_b": tb})

    def test_batch_matmul(self):
        self.check("BatchMatMul", [rng(1).normal(size=(2, 1, 3, 4)), rng(2).normal(size=(3, 4, 2))])
        self.check("BatchMatMul", [rng(1).normal(size=(2, 4, 3)), rng(2).normal(size=(2, 5, 4))],
                   {"transpose_a": True, "transpose_b": True})

    def test_binary(self):
        a, b = rng(1).normal(size=(3, 1, 4)), rng(2).uniform(0.5, 2, size=(2, 1))
        for op in ("Add", "Sub", "Mul", "Div", "Maximum", "Minimum"):
            self.check(op, [a, b])
        self.check("Mul", [a, np.float64(1.5)])
        self.check("Pow", [np.abs(a) + 0.2, b])
        self.check("Pow", [np.abs(a) + 0.2, np.float64(3.0)])
        self.check("SquaredDifference", [a, b])
        q = np.array([[0.3, 1.4, -2.2], [2.6, -0.7, 1.2]])        # quotients away from the steps
        for op in ("FloorMod", "Mod"):
            self.check(op, [q, np.float64(0.9)])
        self.assertEqual(R.OPS["FloorDiv"][1](np.ones(3), [q[0], q[1]], {})[0].tolist(), [0.0, 0.0, 0.0])
        g = R.OPS["Pow"][1](np.ones(2), [np.array([-1.0, 0.0]), np.array([2.0, 2.0])], {})
        self.assertEqual(g[1].tolist(), [0.0, 0.0])     # the exponent's gradient where log a is undefined
        self.check("DivNoNan", [a, b])
        g = R.OPS["DivNoNan"][1](np.array([2.0, 2.0]), [np.array([3.0, 3.0]), np.array([0.0, 2.0])], {})
        self.assertEqual([g[0].tolist(), g[1].tolist()], [[0.0, 1.0], [0.0, -1.5]])   # MindSpore's: 0 at b == 0
        self.check("Atan2", [a, b - 1.2])
        for op in ("Xlogy", "Xdivy", "MulNoNan", "Hypot"):
            self.check(op, [a, b])
        self.check("TruncateMod", [q, np.float64(0.9)])
        self.assertEqual(R.OPS["TruncateDiv"][1](np.ones(3), [q[0], q[1]], {})[0].tolist(), [0.0, 0.0, 0.0])
        # MindSpore's masks: Xlogy's dx 0 where dy == 0 (log 0 is -inf) or x == 0 and y <= 0; MulNoNan's
        # MulNoNan(dy, y) and MulNoNan(x, dy); Xdivy's 0 where x == 0
        g = R.OPS["Xlogy"][1](np.array([0.0, 1.0, 1.0]), [np.array([2.0, 0.0, 3.0]), np.array([0.0, -1.0, 1.0])], {})
        self.assertEqual(g[0].tolist(), [0.0, 0.0, 0.0])
        g = R.OPS["MulNoNan"][1](np.array([0.0, np.inf]), [np.array([np.inf, 3.0]), np.array([5.0, 0.0])], {})
        self.assertEqual([g[0].tolist(), g[1].tolist()], [[0.0, 0.0], [0.0, np.inf]])
        g = R.OPS["Xdivy"][1](np.array([1.0, 1.0]), [np.array([0.0, 3.0]), np.array([0.0, 2.0])], {})
        self.assertEqual([g[0].tolist(), g[1].tolist()], [[0.0, 0.5], [0.0, -0.75]])

    def test_bias_add(self):
        self.check("BiasAdd", [rng(1).normal(size=(2, 3, 4)), rng(2).normal(size=(4,))])

    def test_windows(self):
        x = rng(1).normal(size=(2, 4, 7, 6))
        for at, wshape in [({"kernel_size": 3, "pad_mode": "same"}, (4, 4, 3, 3)),
                           ({"kernel_size": (2, 3), "pad_mode": "pad", "pad": (1, 0, 2, 1), "stride": 2,
                             "dilation": (2, 1)}, (4, 4, 2, 3)),
                           ({"kernel_size": 3, "group": 2, "stride": (1, 2)}, (4, 2, 3, 3))]:
            self.check("Conv2D", [x, rng(2).normal(size=wshape)], dict(at, out_channel=4))
            dout = R.OPS["Conv2D"][0]([x, rng(2).normal(size=wshape)], dict(at, out_channel=4))
            self.check("Conv2DTranspose", [rng(3).normal(size=dout.shape), rng(2).normal(size=wshape)],
                       dict(at, out_channel=4, input_size=x.shape))
        for op in ("MaxPool", "AvgPool"):   # distinct values: no ties, the maxima's slopes defined
            self.check(op, [x], {"kernel_size": 3, "strides": 2, "pad_mode": "SAME"})
            self.check(op, [x], {"kernel_size": (2, 3), "strides": (1, 2)})

    def test_prelu(self):
        x = rng(1).normal(size=(2, 3, 4))
        x = np.where(np.abs(x) < 0.05, 0.3, x)         # away from the kink
        self.check("PReLU", [x, rng(2).normal(size=(3,))])
        self.check("PReLU", [x, rng(2).normal(size=(1,))])
        self.check("PReLU", [x[0, 0], np.array([0.3])])
        g = R.OPS["PReLU"][1](np.array([2.0, 2.0]), [np.array([0.0, -1.0]), np.array([0.25])], {})
        self.assertEqual([g[0].tolist(), g[1].tolist()], [[0.5, 0.5], [-2.0]])   # PReLUGrad: x <= 0 takes w dy

    def test_leaky_relu_is_maximum_of_alpha_x_and_x(self):
        """At x = 0 alpha x and x tie and MaximumGrad gives each half: LeakyReLU's gradient there is the
        Maximum's through Mul, (1 + alpha) dy / 2; at a NaN neither wins."""
        x, g = np.array([-1.0, 0.0, 2.0, np.nan]), np.array([1.0, 3.0, -2.0, 1.0])
        for alpha in (0.2, 1.5):
            a = float(np.float32(alpha))
            m = "Minimum" if alpha > 1 else "Maximum"
            ga, gx = R.OPS[m][1](g, [a * x, x], {})
            got = R.OPS["LeakyReLU"][1](g, [x], {"alpha": alpha})[0]
            np.testing.assert_array_equal(got[:3], (a * ga + gx)[:3])
            self.assertEqual(got[1], (1 + a) * 3 / 2)
            self.assertEqual(got[3], 0.0)

    def test_logical(self):                             # Bool results: no operand gets a gradient
        m, x = np.array([True, False]), np.array([1.0, np.inf])
        for op, ins in (("LogicalNot", [m]), ("LogicalAnd", [m, m]), ("LogicalOr", [m, m]), ("IsFinite", [x])):
            self.assertEqual(R.OPS[op][1](np.ones(2), ins, {}), [None] * len(ins))

    def test_unary(self):
        x = rng(1).normal(size=(3, 4))
        x = np.where(np.abs(x) < 0.05, 0.3, x)         # away from ReLU's kink
        for op in ("ReLU", "GeLU", "Tanh", "Sigmoid", "Exp", "Neg", "SiLU", "Square", "Abs", "Sin", "Cos", "Erf",
                   "Expm1", "Softplus", "Tan", "Atan", "Sinh", "Cosh"):
            self.check(op, [x])
        for op in ("HSwish", "HSigmoid"):                # away from the kinks at -3 and 3
            self.check(op, [np.array([-4.0, -2.5, -1.0, 0.5, 2.0, 4.0])])
        self.check("ReLU6", [np.array([-1.0, 0.5, 3.0, 5.5, 7.0])])   # away from the kinks at 0 and 6
        for op in ("Softsign", "FastGeLU"):
            self.check(op, [x])
        self.check("Erfinv", [np.tanh(x)])
        for op in ("HShrink", "SoftShrink"):             # away from the kinks at -lambd and lambd
            self.check(op, [np.where(np.abs(np.abs(x) - 0.5) < 0.05, 0.8, x)])
        self.check("GeLU", [x], {"approximate": "none"})
        for op in ("Log", "Sqrt", "Rsqrt", "Reciprocal", "Log1p"):
            self.check(op, [np.abs(x) + 0.5])
        for op in ("Floor", "Ceil", "Round", "Rint", "Trunc", "Sign", "ZerosLike", "OnesLike"):   # MindSpore's zero gradient
            self.assertEqual(R.OPS[op][1](np.ones((3, 4)), [x], {})[0].tolist(), np.zeros((3, 4)).tolist())
        for op in ("Erfc", "Asinh", "Elu", "Mish", "LogSigmoid"):
            self.check(op, [x])
        self.check("Inv", [np.abs(x) + 0.5])
        for op in ("Acos", "Asin", "Atanh"):
            self.check(op, [np.tanh(x)])
        self.check("Acosh", [np.abs(x) + 1.2])
        self.check("SeLU", [np.abs(x)])                  # x > 0: scale; below 0 MindSpore's EluGrad form, not the slope
        for alpha in (0.2, 1.5, -0.3):
            self.check("LeakyReLU", [x], {"alpha": alpha})
        y = np.array([-2.0, -0.5])
        sc, al = 1.0507009873554805, 1.6732632423543772
        np.testing.assert_allclose(R.OPS["SeLU"][1](np.ones(2), [y], {})[0], sc * (sc * al * np.expm1(y) + 1))

    def test_dropout(self):
        # Linear in x: the gradient is the forward on dy, the same mask drawn again from its counter;
        # without a train block the identity both ways.
        prog = R.Program()
        out = prog.new_value("d", "Float32")
        prog.flat[out], prog.seed, prog.step, prog.train = "d", 7, 1, True
        ins = R.Instr("Dropout", [0], {"keep_prob": 0.5}, out, 0)
        x = np.arange(1, 17, dtype=np.float32)
        keep = np.array([c == "1" for c in "1111000100001100"])
        np.testing.assert_array_equal(R.dropout(prog, ins, x), np.where(keep, 2 * x, 0))
        np.testing.assert_array_equal(R.dropout(prog, ins, -x), np.where(keep, -2 * x, 0))
        prog.train = False
        np.testing.assert_array_equal(R.dropout(prog, ins, x), x)

    def test_dropout_masks(self):
        # DropoutDoMask of DropoutGenMask's mask is a Dropout of the mask's name, bit for bit, forward and
        # gradient; a piece [begin, end) of the mask is that piece of the whole; without a train block the
        # mask keeps every element and DropoutDoMask is the identity.
        prog = R.Program()
        out = prog.new_value("m", "Bool")
        prog.flat[out], prog.seed, prog.step, prog.train = "m", 3, 5, True
        gen = R.Instr("DropoutGenMask", [], {"shape": (6, 8), "keep_prob": 0.7}, out, 0)
        do = R.Instr("DropoutDoMask", [0, out], {"keep_prob": 0.7}, out + 1, 0)
        drop = R.Instr("Dropout", [0], {"keep_prob": 0.7}, out, 0)
        x = rng(4).normal(size=(6, 8)).astype(np.float32)
        mask = R.gen_mask(prog, gen)
        self.assertEqual(mask.dtype, bool)
        np.testing.assert_array_equal(mask, R.dropout_keep("m", 3, 5, (6, 8), float(np.float32(0.7))))
        self.assertEqual(R.do_mask(prog, do, x, mask).tobytes(), R.dropout(prog, drop, x).tobytes())
        self.assertEqual(R.do_mask(prog, do, -x, mask).tobytes(), R.dropout(prog, drop, -x).tobytes())
        piece = R.Instr("DropoutGenMask", [], {"shape": (6, 8), "keep_prob": 0.7, "begin": (2, 4), "end": (4, 8)},
                        out, 0)
        np.testing.assert_array_equal(R.gen_mask(prog, piece), mask[2:4, 4:8])
        prog.step = 6
        self.assertFalse((R.gen_mask(prog, gen) == mask).all())
        prog.train = False
        self.assertTrue(R.gen_mask(prog, gen).all())
        np.testing.assert_array_equal(R.do_mask(prog, do, x, R.gen_mask(prog, gen)), x)

    def test_select(self):
        c = rng(3).normal(size=(3, 4)) > 0
        self.check("Select", [c, rng(1).normal(size=(3, 4)), rng(2).normal(size=(3, 4))], wrt=[1, 2])

    def test_pad_fill(self):
        # the identity on a whole tensor (no padding), and its gradient dy
        self.check("PadFill", [rng(5).normal(size=(3, 4))], {"axis": 1, "fill": -1e30})

    def test_split(self):
        self.check("Split", [rng(3).normal(size=(2, 6))], {"axis": 1, "output_num": 3, "index": 1})
        self.check("Split", [rng(4).normal(size=(4, 2, 3))], {"axis": 0, "output_num": 2, "index": 0})

    def test_split_v(self):
        self.check("SplitV", [rng(3).normal(size=(2, 6))],
                   {"size_splits": (1, -1, 2), "split_dim": 1, "num_split": 3, "index": 1})

    def test_slice(self):
        self.check("Slice", [rng(5).normal(size=(4, 6))], {"begin": (1, 2), "size": (2, -1)})

    def test_resize(self):
        # dy added back onto the x elements each output read, times their weights (each mode, up and down)
        x = rng(8).normal(size=(2, 2, 3, 4))
        for op in ("ResizeNearestNeighbor", "ResizeBilinearV2"):
            for size in ((5, 7), (2, 3)):
                for at in ({}, {"align_corners": True}, {"half_pixel_centers": True}):
                    self.check(op, [x], dict(at, size=size))

    def test_pad_v3(self):
        # dx is dy's box where x went; the constant has no gradient
        self.check("PadV3", [rng(6).normal(size=(3, 4)), 0.5], {"paddings": (1, 2, 2, 0)}, wrt=[0])
        self.check("PadV3", [rng(7).normal(size=(2, 3, 2))], {"paddings": (0, 1, 2, 1), "paddings_contiguous": False})
        g = R.OPS["PadV3"][1](np.ones((3, 4)), [np.zeros((2, 2)), np.float64(0.5)], {"paddings": (1, 1, 0, 1)})
        self.assertIsNone(g[1])

    def test_add_n(self):
        self.check("AddN", [rng(6).normal(size=(3, 4)), rng(7).normal(size=(3, 4)), rng(8).normal(size=(3, 4))], {})

    def test_stack(self):
        self.check("Stack", [rng(6).normal(size=(3, 4)), rng(7).normal(size=(3, 4)), rng(8).normal(size=(3, 4))],
                   {"axis": -1})
        self.check("Stack", [rng(9).normal(size=(2,)), rng(10).normal(size=(2,))], {})

    def test_lerp(self):
        # every operand broadcast along some dim: each gradient summed back to its shape
        s, e, w = rng(1).normal(size=(2, 1, 4)), rng(2).normal(size=(3, 1)), rng(3).uniform(size=(2, 3, 1))
        self.check("Lerp", [s, e, w])
        self.check("Lerp", [rng(4).normal(size=(3, 4)), rng(5).normal(size=(4,)), np.array(0.3)], wrt=[0, 1])

    def test_masked_fill(self):
        # MindSpore's bprop: dy where the mask is false for the input, summed over its broadcast dims; none for
        # the mask; the sum of dy where it is true for the value
        x, m = rng(1).normal(size=(2, 1, 4)), rng(2).normal(size=(3, 1)) > 0
        self.check("MaskedFill", [x, m, np.array(0.7)], wrt=[0, 2])
        g = R.OPS["MaskedFill"][1](np.ones((2, 3, 4)), [x, m, np.array(0.7)], {})
        self.assertEqual((g[1], float(g[2])), (None, 8.0 * int(m.sum())))

    def test_identity_depend_square_sum_all(self):
        x, y = rng(1).normal(size=(3, 4)), rng(2).normal(size=(3, 4))
        self.check("Identity", [x])
        self.check("Depend", [x, y], wrt=[0])
        self.assertIsNone(R.OPS["Depend"][1](np.ones((3, 4)), [x, y], {})[1])   # what it waits for: no gradient
        for k in (0, 1):
            self.check("SquareSumAll", [x, y], {"index": k}, wrt=[k])
            self.assertIsNone(R.OPS["SquareSumAll"][1](np.float64(1.0), [x, y], {"index": k})[1 - k])

    def test_sigmoid_ce(self):
        # MindSpore's bprop: dy (sigmoid(x) - z) for the logits (the loss's derivative), zeros (None) for the labels
        x, z = rng(1).normal(size=(3, 4)) * 3, rng(2).uniform(size=(3, 4))
        self.check("SigmoidCrossEntropyWithLogits", [x, z], wrt=[0])
        g = rng(3).normal(size=(3, 4))
        dx, dz = R.OPS["SigmoidCrossEntropyWithLogits"][1](g, [x, z], {})
        np.testing.assert_allclose(dx, g * (1 / (1 + np.exp(-x)) - z), rtol=1e-12)
        self.assertIsNone(dz)
        g = R.OPS["Select"][1](np.ones((1, 2)), [np.array([[True, False]]), np.zeros((1, 2)), np.zeros((1, 2))], {})
        self.assertIsNone(g[0])                             # the condition has no gradient

    def test_softmax_family(self):
        x = rng(1).normal(size=(3, 5))
        for op in ("Softmax", "LogSoftmax"):
            self.check(op, [x])
            self.check(op, [x], {"axis": 0})

    def test_reductions(self):
        x = rng(1).normal(size=(2, 3, 4))
        for op in ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd"):
            self.check(op, [x])
            self.check(op, [x], {"axis": 1})
            self.check(op, [x], {"axis": (0, 2), "keep_dims": True})
            self.check(op, [x], {"axis": -1, "keep_dims": False})

    def test_scans(self):
        x = rng(1).normal(size=(2, 3, 4))
        for op in ("CumSum", "CumProd"):
            for ex in (False, True):
                for rev in (False, True):
                    self.check(op, [x], {"axis": 1, "exclusive": ex, "reverse": rev})
                    self.check(op, [x], {"axis": -1, "exclusive": ex, "reverse": rev})

    def test_cumprod_at_zeros(self):
        # each y[i]'s other factors, no division: exact where x has zeros (MindSpore's divides by x)
        x = np.array([[2.0, 0.0, 3.0, 0.5]])
        g = R.OPS["CumProd"][1](np.ones((1, 4)), [x], {"axis": 1})[0]
        np.testing.assert_array_equal(g, [[1.0, 11.0, 0.0, 0.0]])
        g = R.OPS["CumProd"][1](np.ones((1, 4)), [x], {"axis": 1, "exclusive": True})[0]
        np.testing.assert_array_equal(g, [[1.0, 8.0, 0.0, 0.0]])
        g = R.OPS["CumProd"][1](np.ones((1, 4)), [x], {"axis": 1, "reverse": True})[0]
        np.testing.assert_array_equal(g, [[0.0, 4.5, 0.5, 4.0]])

    def test_reduce_max_splits_ties(self):
        g = R.OPS["ReduceMax"][1](np.array([6.0]), [np.array([[1.0, 3.0, 3.0]])], {"axis": 1})[0]
        np.testing.assert_array_equal(g, [[0.0, 3.0, 3.0]])

    def test_reduce_prod_at_zeros(self):
        # the product of the others: at one zero its gradient is the rest's product, the others' 0; two zeros: all 0
        x = np.array([[2.0, 0.0, 3.0, -1.0], [0.0, 5.0, 0.0, 2.0], [2.0, 4.0, 0.5, -1.0]])
        g = R.OPS["ReduceProd"][1](np.array([1.0, 1.0, 2.0]), [x], {"axis": 1})[0]
        np.testing.assert_array_equal(g, [[0.0, -6.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0], [-4.0, -2.0, -16.0, 8.0]])

    def test_logical_reductions(self):
        b = rng(1).normal(size=(2, 3, 4)) > 0
        for op in ("ReduceAll", "ReduceAny"):
            self.assertEqual(R.OPS[op][1](np.ones((2, 4)), [b], {"axis": 1}), [None])   # a Bool result: no gradient

    def test_reduce_min_splits_ties(self):
        g = R.OPS["ReduceMin"][1](np.array([6.0]), [np.array([[1.0, 1.0, 3.0]])], {"axis": 1})[0]
        np.testing.assert_array_equal(g, [[3.0, 3.0, 0.0]])
        g = R.OPS["ReduceMin"][1](np.array([[4.0]]), [np.array([[2.0, 0.5], [0.5, 0.5]])],
                                  {"keep_dims": True})[0]
        np.testing.assert_array_equal(g, [[0.0, 4.0 / 3], [4.0 / 3, 4.0 / 3]])

    def test_maximum_minimum_split_ties(self):
        # MindSpore's MaximumGrad: a tie gives each operand half of the gradient
        a, b, g = np.array([1.0, 2.0, 3.0]), np.array([2.0]), np.ones(3)
        da, db = R.OPS["Maximum"][1](g, [a, b], {})
        np.testing.assert_array_equal(da, [0.0, 0.5, 1.0])
        np.testing.assert_array_equal(db, [1.5])
        da, db = R.OPS["Minimum"][1](g, [a, b], {})
        np.testing.assert_array_equal(da, [1.0, 0.5, 0.0])
        np.testing.assert_array_equal(db, [1.5])

    def test_shape_ops(self):
        x = rng(1).normal(size=(2, 3, 4))
        self.check("Reshape", [x], {"shape": (6, -1)})
        self.check("Transpose", [x], {"perm": (1, 2, 0)})
        self.check("Flatten", [x])
        self.check("ExpandDims", [x], {"axis": 2})
        self.check("BroadcastTo", [x[:, :1, :]], {"shape": (3, 2, 3, 4)})
        self.check("Squeeze", [x.reshape(2, 3, 1, 4)], {"axis": 2})
        self.check("Concat", [x, rng(2).normal(size=(2, 1, 4))], {"axis": 1})
        self.check("StridedSlice", [x], {"begin": (1, 0, -4), "end": (2, 3, 4), "strides": (1, 2, 3)})
        self.check("StridedSlice", [x], {"begin": (1, 0, 1), "end": (2, 3, 3), "strides": (1, 1, 2),
                                         "new_axis_mask": 2, "shrink_axis_mask": 1, "end_mask": 4})
        self.check("StridedSlice", [x], {"begin": (0, -1), "end": (2, 0), "strides": (1, 1), "begin_mask": 1,
                                         "shrink_axis_mask": 2})
        # pad: past the end reads 0 (an uneven split's last piece), its gradient dropped
        self.check("StridedSlice", [x], {"begin": (1, 0, 2), "end": (3, 3, 6), "strides": (1, 1, 1), "pad": True})
        want = np.zeros((2, 3, 4))
        want[0, :, :2] = x[1, :, 2:]
        np.testing.assert_array_equal(R.OPS["StridedSlice"][0]([x], {"begin": (1, 0, 2), "end": (3, 3, 6),
                                                                      "strides": (1, 1, 1), "pad": True}), want)

    def test_gather(self):
        t = rng(1).normal(size=(5, 3))
        self.check("Gather", [t, np.array([[4, 0], [2, 4]])], {"axis": 0}, wrt=[0])   # repeated rows add up
        self.check("Gather", [t, np.array([4, 0, 1, 7])], {"offset": 1}, wrt=[0])     # rows outside: no gradient
        u = rng(2).normal(size=(2, 5, 3))
        self.check("Gather", [u, np.array([[4, 0], [2, 4]])], {"axis": 1}, wrt=[0])
        self.check("Gather", [u, np.array([3, 0, 1, 2])], {"axis": -1, "offset": 1}, wrt=[0])

    def test_embedding_lookup(self):
        t = rng(1).normal(size=(5, 3))
        self.check("EmbeddingLookup", [t, np.array([[4, 0], [2, 4]])], {}, wrt=[0])   # repeated rows add up
        self.check("EmbeddingLookup", [t, np.array([4, 0, 1, 7, 9])], {"offset": 2}, wrt=[0])   # outside: none
        self.check("EmbeddingLookup", [t[:, 1], np.array([3, 3, 6])], {"offset": 1}, wrt=[0])

    def test_gather_d(self):
        x = rng(1).normal(size=(3, 4))
        self.check("GatherD", [x, np.array([[3, 0, 3], [1, 1, 3]])], {"dim": 1}, wrt=[0])   # repeats add up
        self.check("GatherD", [x, np.array([[2, 0], [2, 1]])], {"dim": 0}, wrt=[0])

    def test_gather_nd_and_scatters(self):
        x = rng(1).normal(size=(3, 4, 2))
        self.check("GatherNd", [x, np.array([[2, 1], [0, 3], [2, 1]])], {}, wrt=[0])   # repeats add up
        rows = np.array([[2], [0]])
        for op in ("TensorScatterUpdate", "TensorScatterAdd", "TensorScatterSub", "TensorScatterMul",
                   "TensorScatterMax", "TensorScatterMin"):
            self.check(op, [x, rows, rng(2).normal(size=(2, 4, 2))], {}, wrt=[0, 2])
        self.check("TensorScatterDiv", [x, rows, rng(2).uniform(0.5, 2.0, size=(2, 4, 2))], {}, wrt=[0, 2])
        # the in-place operators: the updates' (value's) gradient, distinct indices (x is state: none)
        for op in ("ScatterUpdate", "ScatterAdd", "ScatterSub"):
            self.check(op, [x, np.array([2, 0]), rng(2).normal(size=(2, 4, 2))], {}, wrt=[2])
        for op in ("ScatterNdUpdate", "ScatterNdAdd", "ScatterNdSub"):
            self.check(op, [x, np.array([[2, 1], [0, 3]]), rng(2).normal(size=(2, 2))], {}, wrt=[2])
        self.check("AssignAdd", [x, rng(3).normal(size=(4, 1))], {}, wrt=[1])
        self.check("AssignSub", [x, rng(3).normal(size=(4, 2))], {}, wrt=[1])

    def test_state_and_inplace_bprops(self):
        # MindSpore's bprops, not the derivative: ScatterMax's and ScatterMin's updates take dy's rows
        # whether they won or not (equal to central differences where every update wins), ScatterMul's
        # and ScatterDiv's none (refused in training), InplaceAdd's, Sub's, Update's zeros
        x = np.full((3, 4), -5.0)
        self.check("ScatterMax", [x, np.array([2, 0]), rng(2).uniform(1, 2, size=(2, 4))], wrt=[2])
        self.check("ScatterMin", [-x, np.array([1, 2]), rng(2).uniform(1, 2, size=(2, 4))], wrt=[2])
        g = rng(3).normal(size=(3, 4))
        np.testing.assert_allclose(R.OPS["ScatterMax"][1](g, [-x, np.array([2, 0]), np.zeros((2, 4))], {})[2],
                                   g[[2, 0]])   # the updates lost to x: still dy's rows (Gather(dout, indices))
        for op in ("ScatterMul", "ScatterDiv"):
            self.assertEqual(R.OPS[op][1](g, [x, np.array([1]), np.ones((1, 4))], {}), [None, None, None])
        for op in ("InplaceAdd", "InplaceSub", "InplaceUpdate"):
            dx, dv = R.OPS[op][1](g, [x, np.ones((2, 4))], {"indices": (0, 2)})
            self.assertEqual((float(np.abs(dx).sum()), float(np.abs(dv).sum())), (0.0, 0.0), op)

    def test_segments(self):
        x = rng(1).normal(size=(5, 3))
        ids = np.array([2, 0, -1, 1, 4])   # -1 and 4 dropped for 3 segments (none empty: Max's lowest would swamp
                                           # the differences)
        for op in ("UnsortedSegmentSum", "UnsortedSegmentMax", "UnsortedSegmentMin", "UnsortedSegmentProd"):
            self.check(op, [x, ids], {"num_segments": 3}, wrt=[0])
            self.check(op, [rng(2).normal(size=(2, 2, 3)), np.array([[1, 0], [1, 3]])], {"num_segments": 2}, wrt=[0])

    def test_segment_ties_and_zeros(self):
        # Max/Min: dy shared among the ties (MindSpore's num_selected); a dropped id gets nothing
        x = np.array([[1.0], [3.0], [3.0], [3.0], [2.0]])
        ids = np.array([0, 0, 0, 1, 5])
        g = R.OPS["UnsortedSegmentMax"][1](np.array([[6.0], [1.0]]), [x, ids], {"num_segments": 2})[0]
        np.testing.assert_array_equal(g, [[0.0], [3.0], [3.0], [1.0], [0.0]])
        g = R.OPS["UnsortedSegmentMin"][1](np.array([[6.0], [1.0]]), [x, ids], {"num_segments": 2})[0]
        np.testing.assert_array_equal(g, [[6.0], [0.0], [0.0], [1.0], [0.0]])
        # Prod: one zero gets the others' product, two zeros give 0 everywhere, none: out / x
        x = np.array([[2.0], [0.0], [3.0], [0.0], [0.0], [4.0], [-1.0], [5.0]])
        ids = np.array([0, 0, 0, 1, 1, 1, 2, 2])
        g = R.OPS["UnsortedSegmentProd"][1](np.array([[1.0], [1.0], [2.0]]), [x, ids], {"num_segments": 3})[0]
        np.testing.assert_array_equal(g, [[0.0], [6.0], [0.0], [0.0], [0.0], [0.0], [10.0], [-2.0]])
        g = R.OPS["UnsortedSegmentSum"][1](np.array([[1.0], [2.0]]), [x[:3], np.array([1, 7, 0])],
                                          {"num_segments": 2})
        np.testing.assert_array_equal(g[0], [[2.0], [0.0], [1.0]])
        self.assertIsNone(g[1])   # the ids carry no gradient

    def test_l2_normalize(self):
        x = rng(1).normal(size=(3, 4))
        self.check("L2Normalize", [x], {}, wrt=[0])
        self.check("L2Normalize", [x], {"axis": 1}, wrt=[0])
        self.check("L2Normalize", [x * 1e-3], {"axis": 1}, wrt=[0])   # below epsilon: the norm constant

    def test_tile(self):
        x = rng(1).normal(size=(2, 3))
        self.check("Tile", [x], {"multiples": (2, 3)})        # dy summed over the tiles
        self.check("Tile", [x], {"multiples": (2, 1, 2)})     # a new leading dim
        self.check("Tile", [x[:1]], {"multiples": (4, 1)})    # a dim of 1 repeated

    def test_triangle(self):
        x = rng(1).normal(size=(2, 3, 4))
        for d in (-2, 0, 1):
            self.check("Tril", [x], {"diagonal": d})   # dy masked as the forward
            self.check("Triu", [x], {"diagonal": d})

    def test_one_hot(self):
        i = np.array([1, 5, -1, 0])
        grads = R.OPS["OneHot"][1](np.ones((4, 3)), [i, np.float64(1), np.float64(0)], {"depth": 3})
        self.assertEqual(grads, [None, None, None])           # MindSpore's: no gradient

    def test_picks(self):
        x = rng(1).normal(size=(3, 4, 5))                      # distinct values: no tie within the step
        for op in ("ArgMaxWithValue", "ArgMinWithValue"):
            for keep in (False, True):
                self.check(op, [x], {"axis": 1, "keep_dims": keep, "index": 1})
            self.assertEqual(R.OPS[op][1](np.ones((4, 5)), [x], {"index": 0}), [None])   # the indices: none
        self.check("TopK", [x], {"k": 3, "index": 0})
        self.assertEqual(R.OPS["TopK"][1](np.ones((3, 4, 3)), [x], {"k": 3, "index": 1}), [None])
        self.assertEqual(R.OPS["Argmax"][1](np.ones((3, 4)), [x], {}), [None])
        tie = np.array([2.0, 7.0, 7.0, 1.0])                   # the first of equals takes all of dy
        g = R.OPS["ArgMaxWithValue"][1](np.float64(3.0), [tie], {"index": 1})
        self.assertEqual(g[0].tolist(), [0.0, 3.0, 0.0, 0.0])

    def test_layer_norm(self):
        x = rng(1).normal(size=(2, 3, 4))
        self.check("LayerNorm", [x, rng(2).normal(size=(4,)), rng(3).normal(size=(4,))])
        self.check("LayerNorm", [x, rng(2).normal(size=(3, 4)), rng(3).normal(size=(3, 4))],
                   {"begin_norm_axis": 1, "begin_params_axis": 1})
        self.check("LayerNorm", [x, rng(2).normal(size=(4,)), rng(3).normal(size=(4,))],
                   {"begin_norm_axis": 1, "begin_params_axis": -1, "epsilon": 0.01})

    def test_batch_norm(self):
        # MindSpore's BatchNormGrad: through the batch's statistics in training, fixed in inference;
        # the moving mean and variance get none
        x, g, b = rng(1).normal(size=(3, 2, 2, 3)), rng(2).normal(size=(2,)), rng(3).normal(size=(2,))
        m, v = rng(4).normal(size=(2,)), rng(5).uniform(0.5, 2, size=(2,))
        self.check("BatchNorm", [x, g, b, m, v], {"is_training": True}, wrt=[0, 1, 2])
        self.check("BatchNorm", [x, g, b, m, v], {"epsilon": 0.01}, wrt=[0, 1, 2])
        self.check("BatchNorm", [x[:, :, 0, 0], g, b, m, v], {"is_training": True}, wrt=[0, 1, 2])
        self.assertEqual(R.OPS["BatchNorm"][1](np.ones_like(x), [x, g, b, m, v], {})[3:], [None, None])

    def test_rms_norm(self):
        x = rng(1).normal(size=(2, 3, 4))
        self.check("RmsNorm", [x, rng(2).normal(size=(4,))])
        self.check("RmsNorm", [x, rng(2).normal(size=(3, 4))], {"epsilon": 0.01})

    def test_rotary(self):
        x, c, s = rng(1).normal(size=(2, 3, 4, 6)), rng(2).normal(size=(1, 1, 4, 6)), rng(3).normal(size=(1, 1, 4, 6))
        self.check("RotaryPositionEmbedding", [x, c, s])                # mode 0, rotate-half
        self.check("RotaryPositionEmbedding", [x, c, s], {"mode": 1})   # interleaved pairs
        y = R.OPS["RotaryPositionEmbedding"][0]([x, np.ones_like(c), np.zeros_like(s)], {})
        np.testing.assert_array_equal(y, x)                             # cos 1, sin 0: the identity
        h = np.concatenate([-x[..., 3:], x[..., :3]], axis=-1)           # rotate_half(x)
        y = R.OPS["RotaryPositionEmbedding"][0]([x, c, s], {})
        np.testing.assert_allclose(y, x * c + h * s, rtol=1e-12)

    def test_flash_attention(self):
        q, k, v = rng(1).normal(size=(2, 2, 3, 4)), rng(2).normal(size=(2, 2, 5, 4)), rng(3).normal(size=(2, 2, 5, 4))
        m = rng(4).normal(size=(3, 5)) > 0.5
        at = {"head_num": 2, "scale_value": 0.5}
        self.check("FlashAttentionScore", [q, k, v], at)
        self.check("FlashAttentionScore", [q, k, v, m], at, wrt=[0, 1, 2])        # 1 masks out
        self.check("FlashAttentionScore", [q, k[:, :, :3], v[:, :, :3]], dict(at, sparse_mode=2))
        s = 0.5 * q @ np.swapaxes(k, -1, -2)                                     # the unfused attention
        s = np.where(m, -np.inf, s)
        p = np.exp(s - s.max(axis=-1, keepdims=True))
        y = R.OPS["FlashAttentionScore"][0]([q, k, v, m], at)
        np.testing.assert_allclose(y, (p / p.sum(axis=-1, keepdims=True)) @ v, rtol=1e-12)
        y = R.OPS["FlashAttentionScore"][0]([q, k, v, np.ones((3, 5))], at)       # every key hidden: zeros
        np.testing.assert_array_equal(y, np.zeros_like(q))
        # grouped-query (4 query heads, 2 key heads) and multi-query: each query head n reads key head n // 2
        # (n // 4), the key's gradient summed over the heads it serves
        q4 = rng(5).normal(size=(2, 4, 3, 4))
        at4 = {"head_num": 4, "scale_value": 0.5}
        self.check("FlashAttentionScore", [q4, k, v], at4)
        self.check("FlashAttentionScore", [q4, k[:, :1], v[:, :1]], at4)
        y = R.OPS["FlashAttentionScore"][0]([q4, k, v], at4)
        rep = [np.repeat(x, 2, axis=1) for x in (k, v)]
        np.testing.assert_allclose(y, R.OPS["FlashAttentionScore"][0]([q4] + rep, at4), rtol=1e-12)
        # BSND and BSH: the same numbers as BNSD, transposed (BSH's hidden dim N x D)
        t = [np.swapaxes(x, 1, 2) for x in (q4, k, v)]
        y_bsnd = R.OPS["FlashAttentionScore"][0](t, dict(at4, input_layout="BSND"))
        np.testing.assert_allclose(y_bsnd, np.swapaxes(y, 1, 2), rtol=1e-12)
        h = [x.reshape(x.shape[:2] + (-1,)) for x in t]
        y_bsh = R.OPS["FlashAttentionScore"][0](h, dict(at4, input_layout="BSH"))
        np.testing.assert_allclose(y_bsh, y_bsnd.reshape(y_bsnd.shape[:2] + (-1,)), rtol=1e-12)
        self.check("FlashAttentionScore", h, dict(at4, input_layout="BSH"))

    def test_compare(self):
        # a Bool result: neither operand gets a gradient
        for op in R.COMPARES:
            self.assertEqual(R.OPS[op][1](np.ones((2, 3)), [rng(1).normal(size=(2, 3)), np.zeros((2, 3))], {}),
                             [None, None])

    def test_cast(self):
        self.check("Cast", [rng(1).normal(size=(3,))], {"dtype": R.Ident("Float16", 0)})
        g = R.OPS["Cast"][1](np.ones(3), [rng(1).normal(size=(3,))], {"dtype": R.Ident("Int32", 0)})
        self.assertEqual(g, [None])

    def test_losses(self):
        logits = rng(1).normal(size=(4, 6))
        self.check("SparseSoftmaxCrossEntropyWithLogits", [logits, np.array([1, 5, 0, 1])], wrt=[0])
        # the dense labels', rows summing to 1: MindSpore's (softmax - labels) dloss is the loss's gradient
        probs = rng(4).uniform(0.1, 1, size=(4, 6))
        probs /= probs.sum(axis=1, keepdims=True)
        self.check("SoftmaxCrossEntropyWithLogits", [logits, probs], wrt=[0])
        self.check("SoftmaxCrossEntropyWithLogits", [logits, np.eye(6)[[1, 5, 0, 1]]], wrt=[0])
        # rows not summing to 1: still MindSpore's backprop, not the loss's gradient; none for the labels
        g = rng(5).normal(size=4)
        dx, dl = R.OPS["SoftmaxCrossEntropyWithLogits"][1](g, [logits, 2 * probs], {})
        sm = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
        np.testing.assert_allclose(dx, (sm - 2 * probs) * g[:, None], rtol=1e-12)
        self.assertIsNone(dl)
        p, t = rng(2).normal(size=(3, 4)), rng(3).normal(size=(3, 4))
        self.check("MSELoss", [p, t])
        self.check("L1Loss", [p, t])
        self.check("L2Loss", [p])

    def test_lp_norm_clip_by_norm(self):
        x = rng(2).normal(size=(3, 4))
        for at in ({"axis": 1, "p": 3}, {"axis": 0, "p": 2, "keep_dims": True}, {"axis": (0, 1), "p": 1}):
            self.check("LpNorm", [x], at)
        self.check("ClipByNorm", [x, np.array([1.1])], {"axis": 1})      # rows both sides of clip_norm
        self.check("ClipByNorm", [x, np.array(0.5)], {})
        boxes = np.array([[0.0, 0.0, 2.0, 2.0], [1.0, 1.0, 3.0, 4.0]])
        self.assertEqual(R.OPS["IOU"][1](np.ones((2, 2)), [boxes, boxes], {}), [])   # MindSpore's: no bprop

    def test_uniform_real_range(self):
        # UniformReal: Dropout's draws keyed by the flat name, seed and step; a piece is the whole's; seed and
        # seed2 replace the model's seed. Range(start, limit, delta) reads as Arange.
        prog = R.Program()
        out = prog.new_value("u", "Float32")
        prog.flat[out], prog.seed, prog.step = "u", 3, 5
        u = R.uniform_real(prog, R.Instr("UniformReal", [], {"shape": (6, 8)}, out, 0))
        self.assertEqual(u.dtype, np.float32)
        self.assertTrue(((u >= 0) & (u < 1)).all())
        np.testing.assert_array_equal(u < np.float32(0.7), R.dropout_keep("u", 3, 5, (6, 8), float(np.float32(0.7))))
        piece = R.Instr("UniformReal", [], {"shape": (6, 8), "begin": (2, 4), "end": (4, 8)}, out, 0)
        np.testing.assert_array_equal(R.uniform_real(prog, piece), u[2:4, 4:8])
        seeded = R.uniform_real(prog, R.Instr("UniformReal", [], {"shape": (6, 8), "seed": 1, "seed2": 2}, out, 0))
        prog.seed = 1 << 32 | 2
        np.testing.assert_array_equal(R.uniform_real(prog, R.Instr("UniformReal", [], {"shape": (6, 8)}, out, 0)), seeded)
        st = R.Stmt("r", "Range", [R.Number(0.0, "0.0", 0), R.Number(4.0, "4.0", 0), R.Number(0.5, "0.5", 0)], {"maxlen": 10}, None, 0, 0)
        self.assertEqual((st.op, st.operands, st.attrs["stop"], st.attrs["step"]), ("Arange", [], 4.0, 0.5))

    def test_kldiv_loss(self):
        x, y = rng(2).normal(size=(3, 4)), rng(3).uniform(0.1, 1, size=(3, 4))
        for r in ("none", "mean", "batchmean", "sum"):
            self.check("KLDivLoss", [x, y], {"reduction": r}, wrt=[0])
            self.assertIsNone(R.OPS["KLDivLoss"][1](np.ones((3, 4)) if r == "none" else np.float64(1.0), [x, y],
                                                    {"reduction": r})[1])   # the labels: none (MindSpore's zeros)

    def test_collectives(self):
        for op in R.COLLECTIVES:
            self.check(op, [rng(1).normal(size=(2, 3))], {"group": (0,)})

    def test_constants(self):
        for op in R.CONSTANTS:                              # no operand, no gradient
            self.assertEqual(R.OPS[op][1](np.ones(3), [], {}), [])

    def test_int_math_ops(self):
        """Invert, PopulationCount and the shifts at both widths (MindSpore's modulo of a count past the width,
        shardc's 0 or sign where C leaves the shift undefined); no gradient."""
        k = np.array([[5, -6, 1, -1], [7, 1 << 30, -8, 3]])
        s = np.array([1, 2, 33, -1])
        i32, i64 = {"@dtype": "Int32"}, {"@dtype": "Int64"}
        np.testing.assert_array_equal(fwd("Invert", [k], i32), ~k)
        np.testing.assert_array_equal(fwd("PopulationCount", [k], i32), [[2, 30, 1, 32], [3, 1, 29, 2]])
        np.testing.assert_array_equal(fwd("PopulationCount", [np.array([-1, 1 << 40])], i64), [64, 1])
        np.testing.assert_array_equal(fwd("LeftShift", [k, s], i32), [[10, -24, 2, 0], [14, 0, -16, 0]])
        np.testing.assert_array_equal(fwd("RightShift", [k, s], i32), [[2, -2, 0, -1], [3, 1 << 28, -4, 0]])
        np.testing.assert_array_equal(fwd("LeftShift", [np.array([-1, 3]), np.array([40, 64])], i64),
                                      [-(1 << 40), 0])
        for op, n in (("Invert", 1), ("PopulationCount", 1), ("LeftShift", 2), ("RightShift", 2)):
            self.assertEqual(R.OPS[op][1](np.ones((2, 4)), [k, s][:n], i32), [None] * n)

    def test_special(self):
        """Lgamma (its gradient digamma), Zeta (against mpmath's values; its gradient to q only, x zeros) and
        NextAfter (dy to x, zeros to y)."""
        x = rng().uniform(0.3, 4, size=(3, 4))
        self.check("Lgamma", [x])
        np.testing.assert_allclose(R.digamma(np.array([1, 0.5, -0.5, 7.3, -2.6])),
                                   [-0.577215664901533, -1.96351002602142, 0.0364899739785765, 1.91782033563799,
                                    0.114897506696934], rtol=1e-9)   # the series to 1/132 x^10 at x >= 6
        np.testing.assert_allclose(R.zeta(np.array([2, 3, 1.5, 4.5, 2]), np.array([1, 2, 0.5, 3.25, -1.5])),
                                   [1.64493406684823, 0.202056903159594, 4.77653794755483, 0.00764789380252909,
                                    9.37924664498912], rtol=1e-10)
        z = R.zeta(np.array([1.0, 0.9, 2.0]), np.array([1.0, 2.0, -2.0]))
        self.assertTrue(np.isinf(z[0]) and np.isnan(z[1]) and np.isinf(z[2]))
        a, q = rng(1).uniform(1.5, 3, size=(3, 4)), rng(2).uniform(0.5, 2, size=(4,))
        self.check("Zeta", [a, q], wrt=[1])
        g = rng(3).normal(size=(3, 4))
        np.testing.assert_array_equal(R.OPS["Zeta"][1](g, [a, q], {})[0], np.zeros((3, 4)))
        n = fwd("NextAfter", [np.array([1.0, 1.0, -2.0]), np.array([2.0, 0.0, -2.0])], {})
        np.testing.assert_array_equal(n, [np.nextafter(np.float32(1), np.float32(2)),
                                          np.nextafter(np.float32(1), np.float32(0)), -2.0])
        da, db = R.OPS["NextAfter"][1](g, [a, q], {})
        np.testing.assert_array_equal(da, g)
        np.testing.assert_array_equal(db, np.zeros(4))

    def test_reverse_trace(self):
        """ReverseV2 (its own adjoint) and TraceV2 (numpy's trace; MindSpore's default axes 1 and 0)."""
        x = rng().normal(size=(4, 2, 3))
        np.testing.assert_array_equal(fwd("ReverseV2", [x], {"axis": (0, -1)}), x[::-1, :, ::-1])
        self.check("ReverseV2", [x], {"axis": (1,)})
        np.testing.assert_allclose(fwd("TraceV2", [x], {"offset": -1, "axis1": 2, "axis2": 0}),
                                   np.trace(x, -1, 2, 0))
        np.testing.assert_allclose(fwd("TraceV2", [x[:, :, 0].T], {"offset": 1}), [x[0, 1, 0] + 0.0])
        self.check("TraceV2", [x], {"offset": 1, "axis1": 0, "axis2": 2})
        self.check("TraceV2", [rng(1).normal(size=(3, 5))], {"offset": -1})

    def test_every_operator_is_tested(self):
        names = set(n[len("test_"):] for n in dir(self) if n.startswith("test_"))
        groups = {"matmul": ["MatMul"], "batch_matmul": ["BatchMatMul"],
                  "binary": ["Add", "Sub", "Mul", "Div", "Maximum", "Minimum", "Pow", "FloorDiv", "FloorMod", "Mod",
                             "SquaredDifference", "DivNoNan", "Atan2", "Xlogy", "Xdivy", "MulNoNan", "TruncateDiv",
                             "TruncateMod", "Hypot"], "bias_add": ["BiasAdd"], "prelu": ["PReLU"],
                  "windows": ["Conv2D", "Conv2DTranspose", "MaxPool", "AvgPool"],
                  "leaky_relu_is_maximum_of_alpha_x_and_x": ["LeakyReLU"],
                  "unary": ["ReLU", "GeLU", "Tanh", "Sigmoid", "Exp", "Log", "Neg", "Sqrt", "Rsqrt", "SiLU", "Square",
                            "Abs", "Sin", "Cos", "Erf", "Reciprocal", "Log1p", "Expm1", "Softplus", "Floor", "Sign",
                            "Ceil", "Round", "Tan", "Atan", "Sinh", "Cosh", "HSwish", "HSigmoid", "Erfc", "Inv", "Acos",
                            "Asin", "Atanh", "Asinh", "Acosh", "Rint", "Elu", "Mish", "SeLU", "LogSigmoid",
                            "ZerosLike", "OnesLike", "ReLU6", "Softsign", "FastGeLU", "Trunc", "Erfinv", "HShrink",
                            "SoftShrink"],
                  "select": ["Select"], "dropout": ["Dropout"],
                  "dropout_masks": ["DropoutGenMask", "DropoutDoMask"], "split": ["Split"], "split_v": ["SplitV"], "slice": ["Slice"],
                  "pad_v3": ["PadV3"], "resize": ["ResizeNearestNeighbor", "ResizeBilinearV2"],
                  "lp_norm_clip_by_norm": ["LpNorm", "ClipByNorm", "IOU"], "uniform_real_range": ["UniformReal"],
                  "int_math_ops": ["Invert", "PopulationCount", "LeftShift", "RightShift"],
                  "special": ["Lgamma", "Zeta", "NextAfter"], "reverse_trace": ["ReverseV2", "TraceV2"],
                  "add_n": ["AddN"], "pad_fill": ["PadFill"], "stack": ["Stack"], "lerp": ["Lerp"],
                  "masked_fill": ["MaskedFill"], "identity_depend_square_sum_all": ["Identity", "Depend", "SquareSumAll"],
                  "sigmoid_ce": ["SigmoidCrossEntropyWithLogits"],
                  "softmax_family": ["Softmax", "LogSoftmax"],
                  "reductions": ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd"],
                  "logical_reductions": ["ReduceAll", "ReduceAny"], "scans": ["CumSum", "CumProd"],
                  "shape_ops": ["Reshape", "Transpose", "Flatten", "ExpandDims", "Squeeze", "BroadcastTo",
                                "Concat", "StridedSlice"], "gather": ["Gather"], "gather_d": ["GatherD"],
                  "embedding_lookup": ["EmbeddingLookup"],
                  "gather_nd_and_scatters": ["GatherNd", "TensorScatterUpdate", "TensorScatterAdd",
                                             "TensorScatterSub", "TensorScatterMul", "TensorScatterDiv",
                                             "TensorScatterMax", "TensorScatterMin", "ScatterUpdate", "ScatterAdd",
                                             "ScatterSub", "ScatterNdUpdate", "ScatterNdAdd", "ScatterNdSub",
                                             "AssignAdd", "AssignSub"],
                  "state_and_inplace_bprops": ["ScatterMax", "ScatterMin", "ScatterMul", "ScatterDiv", "InplaceAdd",
                                               "InplaceSub", "InplaceUpdate"],
                  "segments": ["UnsortedSegmentSum", "UnsortedSegmentMax", "UnsortedSegmentMin", "UnsortedSegmentProd"],
                  "l2_normalize": ["L2Normalize"], "tile": ["Tile"], "one_hot": ["OneHot"], "triangle": ["Tril", "Triu"],
                  "picks": ["ArgMaxWithValue", "ArgMinWithValue", "Argmax", "Argmin", "TopK"],
                  "layer_norm": ["LayerNorm"], "rms_norm": ["RmsNorm"], "batch_norm": ["BatchNorm"], "rotary": ["RotaryPositionEmbedding"],
                  "flash_attention": ["FlashAttentionScore"], "cast": ["Cast"], "compare": list(R.COMPARES),
                  "logical": ["LogicalNot", "LogicalAnd", "LogicalOr", "IsFinite"],
                  "losses": ["SparseSoftmaxCrossEntropyWithLogits", "SoftmaxCrossEntropyWithLogits", "MSELoss",
                             "L1Loss", "L2Loss"], "kldiv_loss": ["KLDivLoss"],
                  "collectives": list(R.COLLECTIVES), "constants": list(R.CONSTANTS)}
        covered = set(op for g, ops in groups.items() if g in names for op in ops)
        self.assertEqual(covered, set(R.OPS))

    def test_program_gradient_in_float64(self):
        # A whole program (attention-like chain with a Call) with rounding switched off: backward() against
        # central differences of the loss for every element of every parameter.
        src = """
          graph @proj(%a: <Tensor[Float32], (4, 6)>, %w: <Tensor[Float32], (6, 6)>) {
            %m = MatMul(%a, %w)
            %g = GeLU(%m)
            return %g
          }
          graph @g(%x: <Tensor[Float32], (4, 6)> = uniform(-1, 1),
                   %labels: <Tensor[Int32], (4,)> = randint(0, 3),
                   %ln.gamma: <Parameter[Float32], (6,)> = uniform(0.5, 1.5),
                   %ln.beta: <Parameter[Float32], (6,)> = normal(0.1),
                   %wq: <Parameter[Float32], (6, 6)> = normal(0.5),
                   %wo: <Parameter[Float32], (6, 3)> = normal(0.5),
                   %emb: <Parameter[Float32], (3, 6)> = normal(0.5)) {
            %ln = LayerNorm(%x, %ln.gamma, %ln.beta)
            %e = Gather(%emb, %labels)
            %xe = Add(%ln, %e)
            %q = Call(%xe, %wq) {graph: @proj}
            %q3 = Reshape(%q) {shape: (2, 2, 6)}
            %k3 = Transpose(%q3) {perm: (0, 2, 1)}
            %s = BatchMatMul(%q3, %q3) {transpose_b: true}
            %p = Softmax(%s)
            %c = BatchMatMul(%p, %q3)
            %c2 = Reshape(%c) {shape: (4, 6)}
            %t = Tanh(%c2)
            %sl = StridedSlice(%t) {begin: (0, 0), end: (4, 6), strides: (1, 1)}
            %logits = MatMul(%sl, %wo)
            %ce = SparseSoftmaxCrossEntropyWithLogits(%logits, %labels)
            %sq = Square(%logits)
            %r = ReduceMean(%sq)
            %loss = Add(%ce, %r)
            return %loss
          }
          train {loss: %loss, optimizer: SGD}"""
        saved = R.STORAGE["Float32"]
        R.STORAGE["Float32"] = np.float64
        try:
            prog = R.flatten(R.parse(src))
            feeds = {vid: R.initialize(p.name, p.type, p.init, 0) for vid, p in prog.inputs}
            grads = R.backward(prog, R.forward(prog, feeds), prog.loss)
            for vid, p in prog.inputs:
                if p.type.kind != "Parameter":
                    continue
                num = numeric_grad(lambda: float(R.forward(prog, feeds)[prog.loss]), feeds[vid])
                np.testing.assert_allclose(grads[vid], num, rtol=1e-5, atol=1e-8, err_msg=p.name)
        finally:
            R.STORAGE["Float32"] = saved

    def test_program_backward_accumulates(self):
        # loss = sum(w * w) + sum(w): dloss/dw = 2w + 1, the value %w used three times.
        prog = R.flatten(R.parse("""
          graph @g(%w: <Parameter[Float32], (3,)>) {
            %sq = Mul(%w, %w)
            %s = Add(%sq, %w)
            %l = ReduceSum(%s)
            return %l
          }
          train {loss: %l, optimizer: SGD}"""))
        w = np.array([0.5, -1.0, 2.0], np.float32)
        vals = R.forward(prog, {0: w})
        grads = R.backward(prog, vals, prog.loss)
        np.testing.assert_array_equal(grads[0], 2 * w + 1)
        self.assertEqual(grads[0].dtype, np.float32)


# ---------------------------------------------------------------------------

SQUARE_MODEL = """
graph @g(%w: <Parameter[Float32], (2,)> = constant(0.5),
         %gamma: <Parameter[Float32], (2,)> = constant(0.5)) {
  %sw = Square(%w)
  %sg = Square(%gamma)
  %s = Add(%sw, %sg)
  %loss = ReduceSum(%s)
  return %loss
}
train { loss: %loss, optimizer: OPT, steps: 2 }
"""


class Optimizers(TempDir):
    """loss = sum(w^2) + sum(gamma^2), w = gamma = 0.5: the gradient of each element is 2p."""

    def train(self, opt):
        model = self.write("m.ir", SQUARE_MODEL.replace("OPT", opt))
        status, out, err = run_cli([model, "--output-dir", self.dir])
        self.assertEqual(status, 0, err)
        w = np.load(os.path.join(self.dir, "param_w.npy"))
        g = np.load(os.path.join(self.dir, "param_gamma.npy"))
        self.assertEqual(w.dtype, np.float32)
        return out, w, g

    def test_sgd(self):
        # step 1: g = 2 * 0.5 = 1.0, w = 0.5 - 0.1 * 1.0 = 0.4;  loss 4 * 0.25 = 1
        # step 2: g = 0.8, w = 0.4 - 0.1 * 0.8 = 0.32;           loss 4 * 0.16 = 0.64, except that
        #         float32(0.4) = 0.40000001, whose square rounds to 0.16000001, and 4 of those to 0.64000005
        out, w, _ = self.train("SGD(learning_rate: 0.1)")
        self.assertEqual(out, "step: 1, loss is 1.0, lr 0.1\nstep: 2, loss is 0.64000005, lr 0.1\n")
        np.testing.assert_allclose(w, [0.32, 0.32], rtol=1e-6)
        # output_0 is the last step's forward, before its update
        self.assertEqual(np.load(os.path.join(self.dir, "output_0.npy")), np.float32(0.64000005))

    def test_sgd_default_learning_rate_is_mindspores(self):
        # nn.SGD's default learning_rate is 0.1: the same as above
        _, w, _ = self.train("SGD")
        np.testing.assert_allclose(w, [0.32, 0.32], rtol=1e-6)

    def test_momentum(self):
        # step 1: v = 0.9 * 0 + 1.0 = 1.0,   w = 0.5 - 0.1 * 1.0 = 0.4
        # step 2: v = 0.9 * 1.0 + 0.8 = 1.7, w = 0.4 - 0.1 * 1.7 = 0.23
        _, w, _ = self.train("Momentum(learning_rate: 0.1, momentum: 0.9)")
        np.testing.assert_allclose(w, [0.23, 0.23], rtol=1e-6)

    def test_momentum_needs_its_arguments(self):
        model = self.write("m.ir", SQUARE_MODEL.replace("OPT", "Momentum(learning_rate: 0.1)"))
        status, _, err = run_cli([model, "--output-dir", self.dir])
        self.assertEqual(status, 1)
        self.assertIn("Momentum needs momentum", err)

    def test_adam_with_weight_decay(self):
        # loss = sum(w + gamma), so the gradient is 1 everywhere; lr 0.1, b1 0.9, b2 0.999, eps 1e-8,
        # weight_decay 0.5, which applies to w but not to gamma (MindSpore skips names with 'gamma').
        # nn.Adam: lr_t = lr sqrt(1 - b2^t) / (1 - b1^t), p -= lr_t m / (sqrt(v) + eps).
        # gamma, step 1: g = 1; m = 0.1, v = 0.001; lr_t = 0.1 * 0.0316228 / 0.1
        #                gamma = 0.5 - 0.0316228 * 0.1 / 0.0316228 = 0.4 (eps aside)
        #        step 2: g = 1; m = 0.19, v = 0.001999; lr_t m / sqrt(v) = 0.1; gamma = 0.3
        # w,     step 1: g = 1 + 0.5 * 0.5 = 1.25; m = 0.125, v = 0.0015625
        #                lr_t m / sqrt(v) = 0.0316228 * 0.125 / 0.0395285 = 0.1; w = 0.4
        #        step 2: g = 1 + 0.5 * 0.4 = 1.2; m = 0.9 * 0.125 + 0.1 * 1.2 = 0.2325
        #                v = 0.999 * 0.0015625 + 0.001 * 1.44 = 0.0030009375
        #                lr_t = 0.1 * sqrt(0.001999) / 0.19 = 0.0235317; sqrt(v) = 0.0547808
        #                w = 0.4 - 0.0235317 * 0.2325 / 0.0547808 = 0.4 - 0.0998728 = 0.3001272
        model = self.write("m.ir", SQUARE_MODEL.replace("Square", "Neg").replace("%s = Add(%sw, %sg)",
                           "%s = Add(%w, %gamma)").replace(
                           "OPT", "Adam(learning_rate: 0.1, beta1: 0.9, beta2: 0.999, eps: 1e-8, weight_decay: 0.5)"))
        status, out, err = run_cli([model, "--output-dir", self.dir])
        self.assertEqual(status, 0, err)
        # eps next to sqrt(v) = 0.03 leaves 3e-7 of each step undone: 1.6000001 in float32
        self.assertEqual(out, "step: 1, loss is 2.0, lr 0.1\nstep: 2, loss is 1.6000001, lr 0.1\n")
        w = np.load(os.path.join(self.dir, "param_w.npy"))
        g = np.load(os.path.join(self.dir, "param_gamma.npy"))
        np.testing.assert_allclose(w, [0.3001272, 0.3001272], rtol=1e-6)
        np.testing.assert_allclose(g, [0.3, 0.3], rtol=1e-6)

    def test_sgd_momentum_dampening(self):
        # nn.SGD's kernel: the first step sets the accumulation to the gradient (no dampening)
        # step 1: g = 1.0, a = 1.0, w = 0.5 - 0.1 = 0.4
        # step 2: g = 0.8, a = 0.9 * 1.0 + (1 - 0.5) * 0.8 = 1.3, w = 0.4 - 0.13 = 0.27
        _, w, g = self.train("SGD(learning_rate: 0.1, momentum: 0.9, dampening: 0.5)")
        np.testing.assert_allclose(w, [0.27, 0.27], rtol=1e-6)
        np.testing.assert_allclose(g, [0.27, 0.27], rtol=1e-6)

    def test_sgd_nesterov_decays_every_parameter(self):
        # g' = g + 0.5 p, a as above, p -= lr (g' + 0.9 a); nn.SGD's kernel decays gamma too
        # step 1: g' = 1.25, a = 1.25, p = 0.5 - 0.1 * 2.375 = 0.2625
        # step 2: g' = 0.525 + 0.13125 = 0.65625, a = 1.125 + 0.65625 = 1.78125,
        #         p = 0.2625 - 0.1 * (0.65625 + 1.603125) = 0.0365625
        _, w, g = self.train("SGD(learning_rate: 0.1, momentum: 0.9, weight_decay: 0.5, nesterov: true)")
        np.testing.assert_allclose(w, [0.0365625] * 2, rtol=1e-5)
        np.testing.assert_allclose(g, [0.0365625] * 2, rtol=1e-5)

    def test_momentum_nesterov_weight_decay_skips_gamma(self):
        # v = 0.9 v + g'; p -= lr g' + lr 0.9 v; w decays (g' = g + 0.5 w), gamma does not
        # w:     as SGD with nesterov above: 0.0365625
        # gamma: step 1: g = 1, v = 1, gamma = 0.5 - 0.19 = 0.31
        #        step 2: g = 0.62, v = 1.52, gamma = 0.31 - (0.062 + 0.1368) = 0.1112
        _, w, g = self.train("Momentum(learning_rate: 0.1, momentum: 0.9, weight_decay: 0.5, use_nesterov: true)")
        np.testing.assert_allclose(w, [0.0365625] * 2, rtol=1e-5)
        np.testing.assert_allclose(g, [0.1112] * 2, rtol=1e-5)

    def test_adam_weight_decay_has_no_bias_correction(self):
        # loss = sum(w + gamma): g = 1. nn.AdamWeightDecay, eps 1e-6 by default:
        # m = 0.9 m + 0.1, v = 0.999 v + 0.001, p -= lr (m / (sqrt(v) + eps) + 0.5 p), gamma not decayed
        model = self.write("m.ir", SQUARE_MODEL.replace("Square", "Neg").replace("%s = Add(%sw, %sg)",
                           "%s = Add(%w, %gamma)").replace("OPT", "AdamWeightDecay(learning_rate: 0.1, weight_decay: 0.5)"))
        status, _, err = run_cli([model, "--output-dir", self.dir])
        self.assertEqual(status, 0, err)
        want_w, want_g, m, v = 0.5, 0.5, 0.0, 0.0
        for _ in range(2):
            m, v = 0.9 * m + 0.1, 0.999 * v + 0.001
            u = m / (math.sqrt(v) + 1e-6)
            want_w -= 0.1 * (u + 0.5 * want_w)
            want_g -= 0.1 * u
        # step 1 moves gamma by lr * 0.1 / sqrt(0.001) = 0.316: no bias correction (Adam's would be 0.1)
        self.assertAlmostEqual(0.5 - 0.1 * 0.1 / (math.sqrt(0.001) + 1e-6), 0.18378, places=5)
        np.testing.assert_allclose(np.load(os.path.join(self.dir, "param_w.npy")), [want_w] * 2, rtol=1e-5)
        np.testing.assert_allclose(np.load(os.path.join(self.dir, "param_gamma.npy")), [want_g] * 2, rtol=1e-5)

    def test_lamb_trust_ratio(self):
        # loss = sum(w + gamma): g = 1. nn.Lamb: u = m^ / (sqrt(v^) + eps) (+ 0.5 w for w), about 1,
        # times ||p|| / ||u||: each element of w moves by lr |w| a step (0.5 -> 0.45 -> 0.405), whatever
        # the decay; gamma starts at 0, a zero norm, so its ratio is 1: -0.1, then -0.1 - 0.01
        model = self.write("m.ir", SQUARE_MODEL.replace("constant(0.5)) {", "constant(0.0)) {").replace(
                           "Square", "Neg").replace("%s = Add(%sw, %sg)", "%s = Add(%w, %gamma)").replace(
                           "OPT", "Lamb(learning_rate: 0.1, weight_decay: 0.5)"))
        status, _, err = run_cli([model, "--output-dir", self.dir])
        self.assertEqual(status, 0, err)
        w, g = np.load(os.path.join(self.dir, "param_w.npy")), np.load(os.path.join(self.dir, "param_gamma.npy"))
        np.testing.assert_allclose(w, [0.405, 0.405], rtol=1e-5)
        np.testing.assert_allclose(g, [-0.11, -0.11], rtol=1e-5)

    def test_clip_global_norm(self):
        # g = 2p = 1 on four elements: global norm 2, clipped to 1 (g = 0.5), w = 0.5 - 0.05 = 0.45;
        # step 2: g = 0.9, norm 1.8, clipped to 0.5 again: w = 0.4. A large clip changes nothing.
        model = self.write("m.ir", SQUARE_MODEL.replace("OPT", "SGD(learning_rate: 0.1)").replace(
                           "steps: 2", "steps: 2, clip_global_norm: 1.0"))
        status, _, err = run_cli([model, "--output-dir", self.dir])
        self.assertEqual(status, 0, err)
        np.testing.assert_allclose(np.load(os.path.join(self.dir, "param_w.npy")), [0.4, 0.4], rtol=1e-6)
        np.testing.assert_allclose(np.load(os.path.join(self.dir, "param_gamma.npy")), [0.4, 0.4], rtol=1e-6)
        model = self.write("m.ir", SQUARE_MODEL.replace("OPT", "SGD(learning_rate: 0.1)").replace(
                           "steps: 2", "steps: 2, clip_global_norm: 10"))
        status, _, err = run_cli([model, "--output-dir", self.dir])
        self.assertEqual(status, 0, err)
        np.testing.assert_allclose(np.load(os.path.join(self.dir, "param_w.npy")), [0.32, 0.32], rtol=1e-6)

    def test_optimizer_options_are_checked(self):
        for opt, msg in (("SGD(nesterov: true)", "nesterov needs momentum > 0"),
                         ("SGD(momentum: 0.9, nesterov: 1)", "'nesterov' is true or false"),
                         ("SGD(dampening: -1)", "'dampening' is at least 0"),
                         ("Momentum(learning_rate: 0.1, momentum: 0.9, use_nesterov: 2)", "true or false"),
                         ("AdamWeightDecay(beta2: 1.5)", "'beta2' is between 0 and 1"),
                         ("AdamWeightDecay(momentum: 0.9)", "AdamWeightDecay has no argument 'momentum'"),
                         ("Lamb(beta1: 0.9)", "Lamb needs learning_rate"),
                         ("Lamb(learning_rate: 0.1, beta1: -0.5)", "'beta1' is between 0 and 1"),
                         ("Lamb(learning_rate: 0.1, eps: 0)", "'eps' is greater than 0")):
            model = self.write("m.ir", SQUARE_MODEL.replace("OPT", opt))
            status, _, err = run_cli([model, "--output-dir", self.dir])
            self.assertEqual(status, 1, opt)
            self.assertIn(msg, err, opt)
        model = self.write("m.ir", SQUARE_MODEL.replace("OPT", "SGD").replace("steps: 2", "clip_global_norm: -1"))
        status, _, err = run_cli([model, "--output-dir", self.dir])
        self.assertEqual(status, 1)
        self.assertIn("clip_global_norm is a number greater than 0", err)

    def test_steps_flag_overrides(self):
        model = self.write("m.ir", SQUARE_MODEL.replace("OPT", "SGD(learning_rate: 0.1)"))
        status, out, _ = run_cli([model, "--output-dir", self.dir, "--steps", "3"])
        self.assertEqual(status, 0)
        self.assertEqual(out.count("step: "), 3)
        self.assertTrue(out.endswith("step: 3, loss is 0.4096, lr 0.1\n"))        # step 3 sees w = 0.32

    def test_schedule_sets_each_steps_rate(self):
        # SGD with WarmUpLR(0.2, 2): global_step 0, 1, 2 give lr 0, 0.1, 0.2; the gradient is 2w
        # step 1: lr 0, w stays 0.5;  step 2: w = 0.5 - 0.1 * 1.0 = 0.4;  step 3: w = 0.4 - 0.2 * 0.8 = 0.24
        model = self.write("m.ir", SQUARE_MODEL.replace(
            "OPT", "SGD(learning_rate: WarmUpLR(learning_rate: 0.2, warmup_steps: 2))"))
        status, out, err = run_cli([model, "--output-dir", self.dir, "--steps", "3"])
        self.assertEqual(status, 0, err)
        self.assertEqual(re.findall(r"lr (\S+)", out), ["0", "0.1", "0.2"])
        np.testing.assert_allclose(np.load(os.path.join(self.dir, "param_w.npy")), [0.24, 0.24], rtol=1e-6)

    def test_bad_schedule(self):
        model = self.write("m.ir", SQUARE_MODEL.replace(
            "OPT", "SGD(learning_rate: CosineDecayLR(min_lr: 0.1, max_lr: 0.01, decay_steps: 3))"))
        status, _, err = run_cli([model, "--output-dir", self.dir])
        self.assertEqual(status, 1)
        self.assertIn("max_lr must be greater than its min_lr", err)


class PlotLog(TempDir):
    """tools/plot_log.py draws a --log file (skipped, and said so, without matplotlib)."""

    def test_plot(self):
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            print("PlotLog.test_plot skipped: matplotlib is not importable (tools/install-deps.sh installs it)")
            self.skipTest("matplotlib is not importable")
        log = self.write("log.jsonl", "".join(
            '{"step": %d, "loss": %g, "lr": %g, "samples_per_s": 100, "ms_per_step": 1, "eta_s": 0}\n'
            % (s, 2.0 / s, 0.1 * min(s, 3) / 3) for s in range(1, 9)))
        png = os.path.join(self.dir, "loss.png")
        p = subprocess.run([PYTHON, os.path.join(ROOT, "tools", "plot_log.py"), log, "-o", png],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(png, "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")

    def test_reads_stdout_lines(self):
        spec = importlib.util.spec_from_file_location("plot_log", os.path.join(ROOT, "tools", "plot_log.py"))
        P = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(P)
        log = self.write("log", "step: 1, loss is 2.5, lr 0, grad norm 1.2, 10 samples/s, 1 ms/step, eta 0:00:01\n"
                                "step: 2, overflow, loss scale 4 -> 2, step skipped\nstep: 2, loss is 2.25, lr 0.1\n")
        self.assertEqual(P.read_log(log), [(1, 2.5, 0.0), (2, 2.25, 0.1)])


class Schedules(unittest.TestCase):
    """ref_eval's lr_at against MindSpore's formulas (mindspore/nn/learning_rate_schedule.py,
    the docstrings' math; MindFormers' CosineWithWarmUpLR), written out here apart, at
    global steps 0 to 12 (global_step 0 is the first update)."""

    @staticmethod
    def mindspore(name, kw, step):
        if name == "WarmUpLR":              # learning_rate * tmp_step / warmup_steps, tmp_step = min(step, W)
            return kw["learning_rate"] * min(step, kw["warmup_steps"]) / kw["warmup_steps"]
        if name == "CosineDecayLR":         # min + 0.5 (max - min)(1 + cos(pi * min(step, D) / D))
            p = min(step, kw["decay_steps"]) / kw["decay_steps"]
            return kw["min_lr"] + 0.5 * (kw["max_lr"] - kw["min_lr"]) * (1 + math.cos(math.pi * p))
        if name == "PolynomialDecayLR":     # (lr - end)(1 - tmp_step / tmp_decay_steps)^power + end
            d, t = kw["decay_steps"], step
            if kw.get("update_decay_steps"):
                d = d * max(math.ceil(t / d), 1)
            else:
                t = min(t, d)
            return (kw["learning_rate"] - kw["end_learning_rate"]) * (1 - t / d) ** kw["power"] \
                + kw["end_learning_rate"]
        if name == "ExponentialDecayLR":    # lr * decay_rate^p, p = step / D (floored with is_stair)
            p = step / kw["decay_steps"]
            if kw.get("is_stair"):
                p = math.floor(p)
            return kw["learning_rate"] * kw["decay_rate"] ** p
        if name == "CosineWithWarmUpLR":    # linear from warmup_lr_init, then cosine to lr_end
            w, total = kw.get("warmup_steps", 0), kw["total_steps"]
            init, end = kw.get("warmup_lr_init", 0.0), kw.get("lr_end", 0.0)
            if step < w:
                return init + (kw["learning_rate"] - init) * step / w
            progress = min(1.0, (step - w) / (total - w))
            return end + (kw["learning_rate"] - end) * 0.5 * (1 + math.cos(math.pi * progress))
        raise AssertionError(name)

    CASES = [
        ("WarmUpLR", {"learning_rate": 0.1, "warmup_steps": 4}),
        ("CosineDecayLR", {"min_lr": 0.01, "max_lr": 0.1, "decay_steps": 4}),
        ("PolynomialDecayLR", {"learning_rate": 0.1, "end_learning_rate": 0.01, "decay_steps": 4, "power": 0.5}),
        ("PolynomialDecayLR", {"learning_rate": 0.1, "end_learning_rate": 0.01, "decay_steps": 4, "power": 2.0,
                               "update_decay_steps": True}),
        ("ExponentialDecayLR", {"learning_rate": 0.1, "decay_rate": 0.9, "decay_steps": 4}),
        ("ExponentialDecayLR", {"learning_rate": 0.1, "decay_rate": 0.9, "decay_steps": 4, "is_stair": True}),
        ("CosineWithWarmUpLR", {"learning_rate": 1e-3, "warmup_steps": 3, "total_steps": 9, "lr_end": 1e-5,
                                "warmup_lr_init": 1e-4}),
    ]

    def test_against_mindspore_formulas(self):
        for name, kw in self.CASES:
            args = ", ".join("%s: %s" % (k, str(v).lower() if isinstance(v, bool) else v) for k, v in kw.items())
            src = "graph @g(%%l: <Tensor[Float32], ()>) { return %%l }\n" \
                  "train { loss: %%l, optimizer: SGD(learning_rate: %s(%s)) }" % (name, args)
            sched = R.schedule_config(R.parse(src).train[0]["optimizer"].args[0][1])
            for step in range(13):
                with self.subTest(schedule=name, args=args, global_step=step):
                    self.assertAlmostEqual(R.lr_at(sched, step), self.mindspore(name, kw, step), places=12)

    def test_mindspore_docstring_examples(self):
        # the examples of MindSpore's docstrings, global_step 2: CosineDecayLR(0.01, 0.1, 4) prints 0.055
        sched = ("CosineDecayLR", [0.01, 0.1, 4.0])
        self.assertAlmostEqual(R.lr_at(sched, 2), 0.055, places=7)
        self.assertAlmostEqual(R.lr_at(("WarmUpLR", [0.1, 2.0]), 2), 0.1, places=12)


# ---------------------------------------------------------------------------

class MixedPrecision(TempDir):
    MODEL = """context {device_num: 1, seed: 2}
graph @net(%x: <Tensor[Float32], (4, 8)> = uniform(-1, 1), %t: <Tensor[Float32], (4, 2)> = uniform(T0, T1),
           %w: <Parameter[Float32], (8, 2)> = normal(0.5), %b: <Parameter[Float32], (2,)> = zeros) {
  %y = MatMul(%x, %w)
  %yb = BiasAdd(%y, %b)
  %s = Softmax(%yb)
  %loss = MSELoss(%yb, %t)
  return %loss, %s
}
train {loss: %loss, optimizer: SGD(learning_rate: 0.01), steps: STEPS, PREC}
"""

    def program(self, prec, t0=0, t1=1, steps=1):
        src = self.MODEL.replace("PREC", prec).replace("T0", str(t0)).replace("T1", str(t1)).replace("STEPS",
                                                                                                      str(steps))
        module = R.parse(src)
        prog = R.flatten(module)
        if R.precision_config(module):
            R.autocast(prog, R.precision_config(module))
        return module, prog

    def test_autocast_inserts_casts(self):
        _, prog = self.program('precision: "bf16"')
        ops = [(i.op, [prog.names[v] for v in i.ins], prog.names[i.out], prog.dtypes[i.out]) for i in prog.instrs]
        self.assertEqual(ops, [
            ("Cast", ["x"], "x.bf16", "BFloat16"),            # Float32 inputs and parameters cast where used
            ("Cast", ["w"], "w.bf16", "BFloat16"),
            ("MatMul", ["x.bf16", "w.bf16"], "y", "BFloat16"),
            ("Cast", ["b"], "b.bf16", "BFloat16"),
            ("BiasAdd", ["y", "b.bf16"], "yb", "BFloat16"),
            ("Cast", ["yb"], "yb.f32", "Float32"),             # Softmax and the loss in Float32, one shared Cast
            ("Softmax", ["yb.f32"], "s", "Float32"),
            ("MSELoss", ["yb.f32", "t"], "loss", "Float32"),
        ])
        self.assertEqual([prog.names[v] for v in prog.outputs], ["loss", "s"])
        # the parameters stay Float32 (master weights), and so do their gradients
        self.assertEqual([prog.dtypes[v] for v, _ in prog.inputs], ["Float32"] * 4)

    def test_bf16_rounds_where_autocast_says(self):
        module, prog = self.program('precision: "bf16"')
        feeds = R.feeds_for(prog, 2, [], [])
        vals = R.forward(prog, feeds)
        x, w, b = (np.float64(feeds[v]) for v, _ in prog.inputs[0:1] + prog.inputs[2:4])
        y = R.round_bf16(R.round_bf16(x) @ R.round_bf16(w))
        yb = R.round_bf16(y + R.round_bf16(b))
        by = {prog.names[v]: vals[v] for v in range(len(prog.names))}
        np.testing.assert_array_equal(by["yb"], yb)
        grads = R.backward(prog, vals, prog.loss)
        self.assertEqual(grads[prog.inputs[2][0]].dtype, np.float32)

    def test_numbers_take_the_compute_type(self):
        module = R.parse("""context {precision: "bf16"}
graph @g(%x: <Tensor[Float32], (4,)> = uniform(0, 1)) {
  %a = Mul(%x, 0.1)
  %e = Exp(1e-3, %a)
  return %e
}""".replace("Exp(1e-3, %a)", "Add(%a, 1e-3)"))
        prog = R.flatten(module)
        R.autocast(prog, "BFloat16")
        by = {prog.names[v]: prog.dtypes[v] for v in prog.literals}
        self.assertEqual(by, {"a#1": "BFloat16", "e#1": "BFloat16"})        # no Cast of a number
        self.assertEqual([i.op for i in prog.instrs], ["Cast", "Mul", "Add", "Cast"])
        vals = R.forward(prog, R.feeds_for(prog, 0, [], []))
        self.assertEqual(vals[next(v for v in prog.literals if prog.names[v] == "a#1")], R.round_bf16(0.1))

    def test_comparisons_follow_their_operands(self):
        # two half operands compared as they are (no Cast); a number beside a half one: both in Float32,
        # the number as written (not rounded to BFloat16); the result Bool
        module = R.parse("""context {precision: "bf16"}
graph @g(%x: <Tensor[Float32], (4,)>, %y: <Tensor[Float32], (4,)>) {
  %a = Mul(%x, 1.0)
  %b = Mul(%y, 1.0)
  %l = Less(%a, %b)
  %g = Greater(%a, 0.1)
  return %l, %g
}""")
        prog = R.flatten(module)
        R.autocast(prog, "BFloat16")
        ops = [(i.op, [prog.dtypes[v] for v in i.ins], prog.dtypes[i.out]) for i in prog.instrs if i.op in R.COMPARES]
        self.assertEqual(ops, [("Less", ["BFloat16", "BFloat16"], "Bool"), ("Greater", ["Float32", "Float32"], "Bool")])
        self.assertEqual(sorted(prog.dtypes[v] for v in prog.literals), ["BFloat16", "BFloat16", "Float32"])
        x = np.array([0.1, 0.10009765625, 0.5, -1.0], np.float32)   # 0.10009765625: 0.1 in BFloat16
        by_name = {p.name: vid for vid, p in prog.inputs}
        vals = R.forward(prog, {by_name["x"]: x, by_name["y"]: np.array([0.2, 0.1, 0.5, 0.0], np.float32)})
        l, g = (vals[v] for v in prog.outputs)
        self.assertEqual(l.tolist(), [True, False, False, True])       # 0.10009765625 < bf16(0.1) is false
        self.assertEqual(g.tolist(), [True, True, True, False])         # bf16(0.1) > 0.1 as written

    def test_constants_take_their_readers_type(self):
        module = R.parse("""context {precision: "fp16"}
graph @g(%x: <Tensor[Float32], (4, 4)> = uniform(0, 1)) {
  %m = CausalMask() {shape: (4, 4)}
  %a = Add(%x, %m)
  %c = RopeCos() {shape: (4, 4)}
  %e = Exp(%c)
  %y = Mul(%a, %e)
  return %y
}""")
        prog = R.flatten(module)
        R.autocast(prog, "Float16")
        by = {prog.names[i.out]: prog.dtypes[i.out] for i in prog.instrs if i.op in R.CONSTANTS}
        self.assertEqual(by, {"m": "Float16", "c": "Float32"})          # Add computes in Float16, Exp in Float32
        vals = R.forward(prog, R.feeds_for(prog, 0, [], []))
        m = next(i.out for i in prog.instrs if i.op == "CausalMask")
        self.assertEqual(vals[m][0, 1], np.float16(-65504))              # Float16's lowest, not -inf

    def test_fp32_is_off(self):
        _, prog = self.program('precision: "fp32"')
        self.assertNotIn("Cast", [i.op for i in prog.instrs])

    def test_loss_scaling_skips_and_halves(self):
        # targets near 40: the scaled gradients (about 40 x scale) overflow Float16 (65504) at first
        model = self.write("m.ir", self.MODEL.replace(
            "PREC", 'precision: "fp16", init_loss_scale: 1048576, scale_window: 2').replace(
            "T0", "30").replace("T1", "50").replace("STEPS", "14"))
        status, out, err = run_cli([model, "--output-dir", self.dir])
        self.assertEqual(status, 0, err)
        over = re.findall(r"^step: (\d+), overflow, loss scale (\S+) -> (\S+), step skipped$", out, re.M)
        losses = [float(v) for v in re.findall(r"^step: \d+, loss is ([^,\s]+)", out, re.M)]
        self.assertEqual(len(losses), 14)
        self.assertEqual(over[0], ("1", "1048576", "524288"))
        for s_, a, b_ in over[1:]:
            self.assertEqual(float(b_) * 2, float(a))
        skipped = {int(s_) for s_, _, _ in over}
        first_good = min(set(range(1, 15)) - skipped)
        # a skipped step does not update: the next step's loss is the same
        self.assertEqual(losses[first_good - 1], losses[0])
        self.assertLess(losses[-1], losses[0])
        # scale_window 2: after two good steps in a row the scale doubles, so it overflows again
        self.assertTrue(any(s_ > first_good for s_ in skipped), out)

    def test_loss_scaling_needs_fp16(self):
        model = self.write("m.ir", self.MODEL.replace("PREC", 'precision: "bf16", scale_window: 2').replace(
            "T0", "0").replace("T1", "1").replace("STEPS", "1"))
        status, _, err = run_cli([model, "--output-dir", self.dir])
        self.assertEqual(status, 1)
        self.assertIn('loss scaling is for precision: "fp16"', err)


class PrecisionClasses(TempDir):
    """Which operator computes in which type comes from the compiler's table
    (shardc --list-ops --json), not from a list of ref_eval's own."""
    MODEL = MixedPrecision.MODEL.replace("PREC", 'precision: "bf16"').replace("T0", "0").replace(
        "T1", "1").replace("STEPS", "1")

    def test_every_operator_has_the_compilers_class(self):
        p = subprocess.run([R.default_shardc(), "--list-ops", "--json"], stdout=subprocess.PIPE, check=True)
        table = {row["name"]: row["precision"] for row in json.loads(p.stdout)}
        self.assertEqual(R.precision_classes(), table)
        self.assertEqual(set(R.OPS) - set(table) - set(R.EXPANDED), set(),
                         "operators ref_eval computes that the compiler lacks")
        self.assertEqual(table["MatMul"], "low")
        self.assertEqual(table["Softmax"], "f32")
        self.assertEqual(table["Reshape"], "follow")
        self.assertEqual(table["Cast"], "asis")

    def test_a_table_that_says_otherwise_changes_the_casts(self):
        # a stand-in compiler whose table puts MatMul in Float32: its product is no longer rounded to bf16
        rows = [{"name": n, "precision": c} for n, c in R.precision_classes().items()]
        for r in rows:
            r["precision"] = {"MatMul": "f32"}.get(r["name"], r["precision"])
        fake = self.write("shardc", "#!/bin/sh\ncat <<'EOF'\n%s\nEOF\n" % json.dumps(rows))
        os.chmod(fake, 0o755)
        prog = R.flatten(R.parse(self.MODEL))
        R.autocast(prog, "BFloat16", fake)
        ops = {i.op: prog.dtypes[i.out] for i in prog.instrs}
        self.assertEqual(ops["MatMul"], "Float32")
        self.assertEqual(ops["BiasAdd"], "BFloat16")

    def test_no_compiler_no_mixed_precision(self):
        model = self.write("m.ir", self.MODEL)
        status, _, err = run_cli([model, "--output-dir", self.dir, "--shardc", os.path.join(self.dir, "none")])
        self.assertEqual(status, 1)
        self.assertIn("--list-ops --json", err)
        # a Float32 model needs no compiler
        status, _, err = run_cli([self.write("f.ir", self.MODEL.replace('precision: "bf16"', 'precision: "fp32"')),
                                  "--output-dir", self.dir, "--shardc", os.path.join(self.dir, "none")])
        self.assertEqual(status, 0, err)


class CommandLine(TempDir):
    MODEL = """context {device_num: 1, seed: 4}
graph @net(%x: <Tensor[Float32], (2, 3)>, %w: <Parameter[Float32], (3, 2)>,
           %ids: <Tensor[Int32], (2,)> = randint(0, 2)) {
  %y = MatMul(%x, %w)
  %z = Gather(%y, %ids)
  return %y, %ids
}
"""

    def test_feeds_and_outputs(self):
        model = self.write("m.ir", self.MODEL)
        x = rng().normal(size=(2, 3)).astype(np.float32)
        w = rng(1).normal(size=(3, 2)).astype(np.float32)
        np.save(os.path.join(self.dir, "x.npy"), x)
        np.save(os.path.join(self.dir, "w.npy"), w)
        out = os.path.join(self.dir, "res")
        status, _, err = run_cli([model, "--input", "x=" + os.path.join(self.dir, "x.npy"),
                                  "--param", "w=" + os.path.join(self.dir, "w.npy"), "--output-dir", out])
        self.assertEqual(status, 0, err)
        y, ids = np.load(os.path.join(out, "output_0.npy")), np.load(os.path.join(out, "output_1.npy"))
        self.assertEqual((y.dtype, ids.dtype), (np.float32, np.int32))
        np.testing.assert_allclose(y, x.astype(np.float64) @ w, rtol=1e-6)
        np.testing.assert_array_equal(ids, init("ids", (2,), "randint(0, 2)", dtype="Int32", seed=4))

    def test_mindspore_aliases(self):
        """TensorAdd and RealDiv are read as Add and Div."""
        model = self.write("a.ir", """graph @net(%a: <Tensor[Float32], (2, 3)>, %b: <Tensor[Float32], (2, 3)>) {
  %s = TensorAdd(%a, %b)
  %q = RealDiv(%s, %b)
  return %q
}
""")
        a = rng().normal(size=(2, 3)).astype(np.float32)
        b = rng(1).uniform(1, 2, size=(2, 3)).astype(np.float32)
        np.save(os.path.join(self.dir, "a.npy"), a)
        np.save(os.path.join(self.dir, "b.npy"), b)
        out = os.path.join(self.dir, "res")
        status, _, err = run_cli([model, "--input", "a=" + os.path.join(self.dir, "a.npy"),
                                  "--input", "b=" + os.path.join(self.dir, "b.npy"), "--output-dir", out])
        self.assertEqual(status, 0, err)
        np.testing.assert_allclose(np.load(os.path.join(out, "output_0.npy")),
                                   (a.astype(np.float64) + b) / b, rtol=1e-6)

    def test_sparse_gather_v2_is_gather(self):
        """SparseGatherV2 is read as Gather: the same lookup and (dense) gradient."""
        model = self.write("g.ir", """graph @net(%t: <Parameter[Float32], (5, 3)>, %i: <Tensor[Int32], (2, 2)>) {
  %g = SparseGatherV2(%t, %i) {axis: 0}
  %s = ReduceSum(%g)
  return %s, %g
}
""")
        t = rng().normal(size=(5, 3)).astype(np.float32)
        np.save(os.path.join(self.dir, "t.npy"), t)
        np.save(os.path.join(self.dir, "i.npy"), np.array([[4, 0], [2, 4]], dtype=np.int32))
        out = os.path.join(self.dir, "res")
        status, _, err = run_cli([model, "--param", "t=" + os.path.join(self.dir, "t.npy"),
                                  "--input", "i=" + os.path.join(self.dir, "i.npy"), "--output-dir", out])
        self.assertEqual(status, 0, err)
        np.testing.assert_allclose(np.load(os.path.join(out, "output_1.npy")), t[[[4, 0], [2, 4]]], rtol=1e-6)

    def test_seed_flag_overrides_context(self):
        model = self.write("m.ir", self.MODEL)
        run_cli([model, "--output-dir", self.dir, "--seed", "9"])
        np.testing.assert_array_equal(np.load(os.path.join(self.dir, "output_1.npy")),
                                      init("ids", (2,), "randint(0, 2)", dtype="Int32", seed=9))

    def expect_error(self, args, text, status=1):
        got, _, err = run_cli(args)
        self.assertEqual(got, status, err)
        self.assertIn(text, err)
        return err

    def test_feed_errors_name_the_input(self):
        model = self.write("m.ir", self.MODEL)
        np.save(os.path.join(self.dir, "shape.npy"), np.zeros((3, 2), np.float32))
        np.save(os.path.join(self.dir, "dtype.npy"), np.zeros((2, 3), np.float64))
        self.expect_error([model, "--input", "x=" + os.path.join(self.dir, "none.npy")], "--input x: no such file")
        self.expect_error([model, "--input", "x=" + os.path.join(self.dir, "shape.npy")],
                          "'%x' is Float32 (2, 3), which needs a float32 array of shape (2, 3)")
        self.expect_error([model, "--input", "x=" + os.path.join(self.dir, "dtype.npy")], "holds float64 (2, 3)")
        self.expect_error([model, "--input", "nope=" + os.path.join(self.dir, "dtype.npy")],
                          "no input or parameter '%nope'")
        self.expect_error([model, "--input", "w=" + os.path.join(self.dir, "dtype.npy")],
                          "'%w' is a Parameter; give it with --param")

    def test_parse_error_location(self):
        model = self.write("bad.ir", "graph @g(%x: <Tensor[Float32], (2,)>) {\n  %y = ReLU(%x\n  return %y\n}\n")
        err = self.expect_error([model], "bad.ir:3:3: error: expected ',' or ')', found 'return'")
        self.assertTrue(err.startswith(model + ":3:3: error:"))
        model = self.write("bad2.ir", "graph @g(%x: <Tensor[Float32], (2,)>) {\n  %y = Relu(%x)\n  return %y\n}\n")
        self.expect_error([model], "bad2.ir:2:8: error: unknown operator 'Relu'")
        model = self.write("bad5.ir", "graph @g(%x: <Tensor[Float32], (2,)>) {\n"
                                      "  %y = ReLU(%x) {s: \"\u00e9\" 3}\n  return %y\n}\n")
        self.expect_error([model], "bad5.ir:2:26: error: expected a key or '}', found '3'")   # columns count bytes
        model = self.write("bad3.ir", "graph @g() { %y = ReLU(%x) return %y }")
        self.expect_error([model], "bad3.ir:1:24: error: value '%x' is not defined")
        model = self.write("bad4.ir", 'context {seed: "x\\n"}')
        self.expect_error([model], "bad4.ir:1:18: error: unknown escape")

    def test_signature_mismatch(self):
        model = self.write("sig.ir", "graph @g(%x: <Tensor[Float32], (2, 3)>) {\n"
                                     "  %y = ReLU(%x) : (<Tensor[Float32], (2, 3)>) -> (<Tensor[Float32], (3, 2)>)\n"
                                     "  return %y\n}\n")
        self.expect_error([model], "sig.ir:2:51: error: the signature's result of '%y' is declared Float32 (3, 2)")

    def test_multi_rank_collective_is_refused(self):
        model = self.write("c.ir", "context {device_num: 2}\ngraph @g(%x: <Tensor[Float32], (2,)>) {\n"
                                   "  %y = AllReduce(%x) {op: \"sum\", group: (0, 1)}\n  return %y\n}\n")
        self.expect_error([model], "c.ir:3:8: error: AllReduce over the group (0, 1): a serial reference cannot "
                                   "evaluate a multi-rank collective")

    def test_bad_command_line(self):
        with self.assertRaises(SystemExit) as e, contextlib.redirect_stderr(io.StringIO()):
            run_cli(["--steps"])
        self.assertEqual(e.exception.code, 2)


# ---------------------------------------------------------------------------

class Samples(TempDir):
    """Every sample model evaluates through the real command line (two steps where it trains)."""

    def test_every_sample(self):
        models = sorted(glob.glob(os.path.join(ROOT, "ir-samples", "*.ir")) +
                        glob.glob(os.path.join(ROOT, "tests", "good", "*.ir")))
        self.assertGreater(len(models), 10)
        for model in models:
            with self.subTest(model=os.path.basename(model)):
                out = os.path.join(self.dir, os.path.basename(model))
                p = subprocess.run([PYTHON, TOOL, model, "--output-dir", out, "--steps", "2"],
                                   capture_output=True, text=True, timeout=120)
                self.assertEqual(p.returncode, 0, p.stderr)
                with open(model) as f:
                    trains = "\ntrain" in f.read()
                lines = p.stdout.splitlines()
                self.assertEqual(len(lines), 2 if trains else 0, p.stdout)
                for s, line in enumerate(lines, 1):
                    self.assertRegex(line, r"^step: %d, loss is -?[0-9.e+-]+, lr [0-9.e+-]+$" % s)
                    self.assertTrue(math.isfinite(float(line.split()[4].rstrip(","))))
                self.assertTrue(os.path.exists(os.path.join(out, "output_0.npy")))
                for f in glob.glob(os.path.join(out, "*.npy")):
                    x = np.load(f)
                    if x.dtype.kind == "f":
                        self.assertTrue(np.isfinite(x).all(), f)
                if trains:
                    self.assertTrue(glob.glob(os.path.join(out, "param_*.npy")))

    def test_bad_inputs_never_crash(self):
        # The compiler's bad inputs: each is either refused with a located message (status 1) or, when the
        # problem is one a serial evaluator does not care about (strategies, layouts), evaluated (status 0).
        for model in sorted(glob.glob(os.path.join(ROOT, "tests", "bad", "*.ir"))):
            with self.subTest(model=os.path.basename(model)):
                status, _, err = run_cli([model, "--output-dir", self.dir, "--steps", "1"])
                self.assertIn(status, (0, 1))
                if status:
                    self.assertRegex(err, r"^%s:\d+:\d+: error: " % re.escape(model))


class DataStreams(TempDir):
    """--data, --labels and --shuffle: the batches of docs/output.md, Data that streams."""
    ROWS = """context {device_num: 1}
graph @net(%x: <Tensor[Float32], (2, 3)>, %w: <Parameter[Float32], (3, 2)>, %ids: <Tensor[Int32], (2,)>) {
  %y = MatMul(%x, %w)
  return %y, %ids
}
"""
    TOKENS = """graph @lm(%ids: <Tensor[Int32], (2, 3)>, %lab: <Tensor[Int64], (6,)>) {
  return %ids, %lab
}
"""

    def test_draws(self):
        self.assertEqual(R.data_draw(0, 0), 0xe220a8397b1dcdaf)   # splitmix64's first output from state 0
        for e in range(4):
            order = R.batch_order(7, e, 10)
            self.assertEqual(sorted(order), list(range(10)))
        self.assertNotEqual(R.batch_order(7, 0, 10), R.batch_order(7, 1, 10))
        self.assertEqual(R.batch_order(7, 3, 1), [0])

    def test_rows_by_hand(self):
        model = self.write("m.ir", self.ROWS)
        x = rng().normal(size=(6, 3)).astype(np.float32)
        ids = np.arange(6, dtype=np.int32)
        w = rng(1).normal(size=(3, 2)).astype(np.float32)
        for name, a in (("x", x), ("ids", ids), ("w", w)):
            np.save(os.path.join(self.dir, name + ".npy"), a)
        feed = ["--data", "x=" + os.path.join(self.dir, "x.npy"), "--data", "ids=" + os.path.join(self.dir, "ids.npy"),
                "--param", "w=" + os.path.join(self.dir, "w.npy"), "--output-dir", self.dir, "--steps", "5"]
        for shuffle in (None, 7):
            status, _, err = run_cli([model] + feed + (["--shuffle", str(shuffle)] if shuffle is not None else []))
            self.assertEqual(status, 0, err)
            b = 1 if shuffle is None else R.batch_order(7, 1, 3)[1]   # step 5: epoch 1, its second batch
            np.testing.assert_allclose(np.load(os.path.join(self.dir, "output_0.npy")),
                                       x[2 * b:2 * b + 2].astype(np.float64) @ w, rtol=1e-6)
            np.testing.assert_array_equal(np.load(os.path.join(self.dir, "output_1.npy")), ids[2 * b:2 * b + 2])

    def test_tokens_by_hand(self):
        model = self.write("lm.ir", self.TOKENS)
        tok = np.arange(100, dtype=np.uint16)
        head = np.zeros(256, np.int32)
        head[:3] = (20240520, 1, 100)
        with open(os.path.join(self.dir, "t.bin"), "wb") as f:
            f.write(head.tobytes() + tok.tobytes())
        with open(os.path.join(self.dir, "raw.bin"), "wb") as f:
            f.write(tok.tobytes())
        np.save(os.path.join(self.dir, "t.npy"), tok.astype(np.int32))
        for name in ("t.bin", "raw.bin", "t.npy"):
            status, _, err = run_cli([model, "--data", "ids=%s:3" % os.path.join(self.dir, name), "--labels", "lab",
                                      "--steps", "4", "--output-dir", self.dir])
            self.assertEqual(status, 0, err)
            # step 4: samples 6 and 7 of 33 = (100 - 1) // 3, at tokens 18 and 21
            np.testing.assert_array_equal(np.load(os.path.join(self.dir, "output_0.npy")),
                                          [[18, 19, 20], [21, 22, 23]])
            lab = np.load(os.path.join(self.dir, "output_1.npy"))
            self.assertEqual(lab.dtype, np.int64)
            np.testing.assert_array_equal(lab, [19, 20, 21, 22, 23, 24])
        run_cli([model, "--data", "ids=%s:3" % os.path.join(self.dir, "t.bin"), "--labels", "lab", "--steps", "20",
                 "--output-dir", self.dir])   # samples 38, 39: wrapped to 5 and 6
        np.testing.assert_array_equal(np.load(os.path.join(self.dir, "output_0.npy")), [[15, 16, 17], [18, 19, 20]])
        run_cli([model, "--data", "ids=%s:3" % os.path.join(self.dir, "t.bin"), "--labels", "lab", "--steps", "2",
                 "--shuffle", "5", "--output-dir", self.dir])
        starts = [R.data_draw(5, q) % 97 for q in (2, 3)]
        np.testing.assert_array_equal(np.load(os.path.join(self.dir, "output_0.npy")),
                                      [[a, a + 1, a + 2] for a in starts])

    def test_errors(self):
        model = self.write("lm.ir", self.TOKENS)
        with open(os.path.join(self.dir, "short.bin"), "wb") as f:
            f.write(np.arange(6, dtype=np.uint16).tobytes())
        status, _, err = run_cli([model, "--data", "ids=%s:3" % os.path.join(self.dir, "short.bin")])
        self.assertEqual(status, 1)
        self.assertIn("6 tokens, too few for one step (7)", err)
        rows = self.write("m.ir", self.ROWS)
        np.save(os.path.join(self.dir, "x5.npy"), np.zeros((5, 3), np.float32))
        status, _, err = run_cli([rows, "--data", "x=" + os.path.join(self.dir, "x5.npy")])
        self.assertEqual(status, 1)
        self.assertIn("with N a multiple of 2", err)
        status, _, err = run_cli([rows, "--shuffle", "3"])
        self.assertEqual(status, 1)
        self.assertIn("--labels and --shuffle go with --data", err)


if __name__ == "__main__":
    unittest.main(verbosity=1)
