#!/usr/bin/python3
"""ref_eval.py: an independent numpy reference evaluator for shardc IR.

    tools/ref_eval.py MODEL.ir [--input NAME=FILE.npy]... [--param NAME=FILE.npy]...
                      [--data NAME=FILE.npy|NAME=FILE:S]... [--labels NAME] [--shuffle SEED]
                      [--output-dir DIR] [--steps K] [--seed S] [--shardc SHARDC]

It reads a module in the IR of docs/language.md (lexical rules and grammar) with
its own small parser (standard library + numpy, nothing from the C compiler
but, for a model in mixed precision, which operator computes in which type:
the precision column of the compiler's operator table, from `SHARDC
--list-ops --json`, SHARDC being --shardc, else $SHARDC, else this
repository's build/shardc),
evaluates the entry graph (the last one) serially, and writes what the
generated programs' run.sh writes (docs/output.md): DIR/output_<k>.npy for
the k-th returned value (DIR defaults to ./results), and, with a `train`
block, one line `step: S, loss is L` per step and DIR/param_<name>.npy for
every Parameter after the last step.  It exists to check the compiler's
per-rank programs against something that shares none of their code.

What it ignores and why: strategies, layouts, `shard`, and every context key
but `seed` (sharding never changes values).  `Call` is inlined (its `graph:`
attribute names the callee).  A collective written in an input graph is the
identity when its group has one member; any larger group is an error, since
a serial reference has only one rank.  Only the entry graph and the graphs
it calls are evaluated, so a problem in a graph nothing calls goes unseen;
checks that concern strategies or layouts are the compiler's, not ours.

Choices where MindSpore leaves room:

- Floats.  Each operator is computed in float64 from its inputs and its
  result is rounded once to its element type (Float32 -> float32, Float16 ->
  float16, BFloat16 -> nearest-even bfloat16), so the evaluator behaves like
  a float32 program whose every operator is correctly rounded; a real float32
  program differs from it by accumulated rounding only.  Gradients are
  computed the same way: each operator's backward in float64 at the rounded
  forward values, each gradient contribution and each accumulated sum rounded
  to the value's element type.  The optimizer computes in float64 and rounds
  the parameter and its state (SGD's accumulation, Momentum's v, Adam's m
  and v) to the parameter's element type every step.  Integer operators compute in int64
  and wrap to their type; Div and Cast of floats to integers truncate toward
  zero as C does.
- .npy element types: Float32 float32, Float16 float16, BFloat16 float32
  (npy has no bfloat16; the values are bfloat16-exact), Int32 int32, Int64
  int64, Bool bool.  A file for an input must have exactly the declared shape
  and that element type (any byte order).
- --data, --labels and --shuffle feed inputs a new batch every step, read
  from the whole file by the rules of docs/output.md (Data that streams):
  a .npy dataset's batches in turn or, shuffled, in each epoch's
  Fisher-Yates order of splitmix64 draws; a token stream's samples of S + 1
  tokens at sequential or drawn starts.  Without a train block the graph's
  results are those of step K's batch (--steps K), as the programs'.
- Loss printing: `step: S, loss is L, lr R` with S from 1, L the shortest
  decimal that reads back as the same float32 (numpy's str of a float32,
  e.g. 2.3016002), the way MindSpore prints a float32 loss tensor, and R
  the step's learning rate (%.6g; the programs' line goes on with timings).
- Outputs with `train`: output_<k>.npy holds the values of the last step's
  forward pass, computed before that step's update; param_<name>.npy holds
  the parameters after it.
- Optimizers follow MindSpore's nn.SGD, nn.Momentum, nn.Adam,
  nn.AdamWeightDecay and nn.Lamb (g' = g + weight_decay * p):
    SGD       g' (every parameter: nn.SGD's kernel has no decay filter);
              with momentum > 0: a = g' at step 1, else
              a = momentum * a + (1 - dampening) * g', and g' = a, or
              g' + momentum * a with nesterov;  p -= lr * g'
    Momentum  v = momentum * v + g';  p -= lr * v, or with use_nesterov
              p -= lr * g' + lr * momentum * v
    Adam      m = b1 m + (1 - b1) g';  v = b2 v + (1 - b2) g'^2
              lr_t = lr * sqrt(1 - b2^t) / (1 - b1^t)       (t from 1)
              p -= lr_t * m / (sqrt(v) + eps)     (nn.Adam's formula: eps is
                                                   added to sqrt(v), not to
                                                   the bias-corrected sqrt(v^))
    AdamWeightDecay  m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
              p -= lr * (m / (sqrt(v) + eps) + weight_decay * p)
                                                  (no bias correction)
    Lamb      m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2  (t from 1)
              u = m / (1 - b1^t) / (sqrt(v / (1 - b2^t)) + eps)
                  + weight_decay * p
              r = ||p|| / (||u|| + 2^-126), or 1 when either norm is 0,
                  each norm over the whole parameter
              p -= lr * r * u       (MindSpore's Lamb kernel, LambApplyWeightAssign)
  Momentum, Adam, AdamWeightDecay and Lamb decay only parameters whose name holds
  neither 'beta' nor 'gamma' (MindSpore's default filter for ungrouped
  parameters).  Defaults are MindSpore's: SGD learning_rate 0.1, momentum 0,
  dampening 0, weight_decay 0, nesterov false; Momentum weight_decay 0,
  use_nesterov false; Adam learning_rate 1e-3, beta1 0.9, beta2 0.999, eps
  1e-8, weight_decay 0; AdamWeightDecay the same but eps 1e-6; Lamb beta1
  0.9, beta2 0.999, eps 1e-6, weight_decay 0.  nn.Momentum has no default
  learning_rate or momentum, nn.Lamb none for learning_rate: they must be given.
  Optimizer arguments are named (`Momentum(learning_rate: 0.2, momentum:
  0.1)`), and `steps` defaults to 1.  `accumulate_steps: n` runs n
  micro-batches a step (micro-batch m of step s the run's batch (s - 1) n +
  m + 1, from --data), sums their gradients of loss / n in float64, rounds
  the sum once and updates once; the loss printed is the micro-batches'
  mean.  `micro_batches: "auto"` computes the graph as written, the step's
  batch whole.  `clip_global_norm: c` in the train
  block scales every gradient by c / max(global norm, c) before the update
  (ops.clip_by_global_norm; the norm over every trained parameter).
  learning_rate is a number or a schedule, evaluated at MindSpore's
  global_step g (the updates before this one: step - 1 without loss
  scaling), in float64: WarmUpLR lr * min(g, W) / W; CosineDecayLR
  min + (max - min) / 2 * (1 + cos(pi * min(g, D) / D)); PolynomialDecayLR
  (lr - end) * (1 - min(g, D) / D)^power + end (update_decay_steps: D
  times max(ceil(g / D), 1), g unclamped); ExponentialDecayLR
  lr * rate^(g / D) (is_stair: floor(g / D)); MindFormers'
  CosineWithWarmUpLR init + (lr - init) * g / W below W, then
  end + (lr - end) / 2 * (1 + cos(pi * min((g - W) / (T - W), 1))).
- Gradients at kinks: ReLU's is 0 at 0; Maximum and Minimum give each
  operand half the gradient where they tie (MindSpore's MaximumGrad);
  ReduceMax and ReduceMin split the gradient evenly among tied maxima
  (minima) (MindSpore's bprop), but ArgMaxWithValue's and ArgMinWithValue's
  values give it to the one index they picked (the first), TopK's to its k
  picks; L1Loss uses sign(0) = 0. ReduceProd's
  gradient is the product of the other elements, exact at zeros.
- Gather along `axis` (any dim of the table, negative from the end) reads
  entry i - offset of that dim for index i (`offset`, default 0, is the
  lowering extension for tables split along it); entries outside the table
  give zeros.  EmbeddingLookup is Gather on axis 0 with its `offset`
  (MindSpore's third input), a table of 1 or 2 dims and indices of one or
  more: ids outside the table after the offset give zeros and no gradient.
  A SparseSoftmaxCrossEntropyWithLogits label outside [0, C) is
  an error.  GatherD reads x at the index along `dim` (an index outside
  gives 0); its gradient adds dy there.
- GatherNd reads x's slices at the indices' rows (the last dim their
  coordinates); TensorScatterUpdate/Add/Sub/Mul/Div/Max/Min set (add,
  subtract, multiply, divide, take the larger, the smaller) updates at them
  in order, the last of repeated indices winning an update. An index
  outside x is an error (the runtime stops too). Gradients are MindSpore's
  bprops: GatherNd's dy added back (ScatterNd), the scatters' x gets dy
  (Update: the replaced slices zeroed; Mul, Div: scaled by the updates;
  Max, Min: where x won, shared by the ties), updates dy's slices (Sub:
  negated; Mul: times x; Div: times -x / u^2; Max, Min: where they won,
  shared by the ties).
- UnsortedSegmentSum/Max/Min/Prod (num_segments an attribute): row s reduces
  the rows of x whose id is s, ids outside [0, num_segments) dropped; an
  empty segment is 0, the type's lowest finite value, its largest, or 1.
  Gradients are MindSpore's bprops: Sum's dy gathered by the ids, Max's and
  Min's dy shared among the rows equal to their segment's result, Prod's dy
  times out / x (the nonzero product at a lone zero, 0 past one zero); 0
  for a dropped id.
- L2Normalize: x / sqrt(max(sum(x^2 over axis), epsilon)); where the sum is
  below epsilon the norm is constant and the gradient is dy / sqrt(epsilon).
- BatchNorm (MindSpore's ops.BatchNorm, its first output y): x (N, C) or
  (N, C, H, W) normalized per channel by the batch's mean and biased
  variance over every dim but C (is_training: true) or by the given mean
  and variance (false); in training each forward pass then sets the moving
  mean and variance Parameters to (1 - momentum) moving + momentum batch,
  the variance's unbiased (times M / (M - 1), M the values a channel has),
  as MindSpore's kernels do; they get no gradient and no optimizer.  Its
  gradient is MindSpore's BatchNormGrad: through the batch's statistics in
  training, the statistics fixed in inference.
- SoftmaxCrossEntropyWithLogits is MindSpore's primitive's first output,
  each row's loss (N,); its gradient is MindSpore's bprop, (softmax -
  labels) dloss (the loss's gradient when each label row sums to 1), and
  the labels get none.
- StridedSlice: negative begin/end count from the end, then both clamp to
  the dim, as Python slices; strides are positive. MindSpore's masks, bit i
  for entry i: begin_mask/end_mask take the dim from its start/to its end,
  new_axis_mask inserts a dim of 1 (winning over shrink_axis_mask), which
  takes the one element at begin and drops the dim; entries may be fewer
  than x's dims (the rest whole); ellipsis_mask is refused.
- A number written as an operand (`Mul(%x, 0.125)`) is a constant of shape
  () in the element type of the operator's first value operand, rounded
  once from the number (a Call takes none); in mixed
  precision it is written in the compute type when every operator reading it
  computes in it (no Cast).  It is no input: --input does not know it.

Errors: a problem in the model prints `FILE:LINE:COL: error: message`
(columns count bytes from 1) and exits 1; a bad --input/--param (unknown
name, missing or unreadable file, wrong shape or element type) prints a
message naming it and exits 1; a wrong command line exits 2.
"""

import argparse
import json
import math
import os
import re
import subprocess
import sys

import numpy as np


class ModelError(Exception):
    """A problem in the model, reported at a character offset of its source."""

    def __init__(self, offset, message):
        super().__init__(message)
        self.offset = offset
        self.message = message


class FeedError(Exception):
    """A problem with a file given by --input or --param."""


# ---------------------------------------------------------------------------
# Lexer (docs/language.md, Lexical rules)

KEYWORDS = {"context", "layout", "graph", "train", "return", "true", "false", "None"}

TOKEN_RE = re.compile(r"""
    (?P<ws>[ \t\r\n]+)
  | (?P<comment>\#[^\n]*)
  | (?P<arrow>->)
  | (?P<float>-?\d+\.\d*(?:[eE][-+]?\d+)?|-?\.\d+(?:[eE][-+]?\d+)?|-?\d+[eE][-+]?\d+)
  | (?P<int>-?\d+)
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<value>%[A-Za-z0-9_.]+)
  | (?P<graph>@[A-Za-z0-9_.]+)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<punct>[(){}\[\]<>,:=])
""", re.VERBOSE)


class Token:
    def __init__(self, kind, text, value, offset):
        self.kind = kind      # int float string value graph ident -> EOF, a keyword, or a punctuation char
        self.text = text
        self.value = value    # the int, float, unescaped string or name
        self.offset = offset  # character offset into the source


def unescape(text, offset):
    out, i = [], 1
    while i < len(text) - 1:
        c = text[i]
        if c == "\\":
            i += 1
            if text[i] not in "\"\\":
                raise ModelError(offset + i - 1, "unknown escape in string (only \\\" and \\\\ are allowed)")
            c = text[i]
        out.append(c)
        i += 1
    return "".join(out)


def tokenize(src):
    toks, pos = [], 0
    while pos < len(src):
        m = TOKEN_RE.match(src, pos)
        if not m:
            if src[pos] == '"':
                raise ModelError(pos, "unterminated string")
            raise ModelError(pos, "unexpected character %r" % src[pos])
        kind, text = m.lastgroup, m.group()
        if kind == "int":
            v = int(text)
            if not -2**63 <= v < 2**63:
                raise ModelError(pos, "integer literal out of range (64-bit)")
            toks.append(Token("int", text, v, pos))
        elif kind == "float":
            v = float(text)
            if math.isinf(v):
                raise ModelError(pos, "float literal out of range")
            toks.append(Token("float", text, v, pos))
        elif kind == "string":
            toks.append(Token("string", text, unescape(text, pos), pos))
        elif kind in ("value", "graph"):
            toks.append(Token(kind, text, text[1:], pos))
        elif kind == "ident":
            toks.append(Token(text if text in KEYWORDS else "ident", text, text, pos))
        elif kind == "arrow":
            toks.append(Token("->", text, text, pos))
        elif kind == "punct":
            toks.append(Token(text, text, text, pos))
        pos = m.end()
    toks.append(Token("EOF", "end of file", None, pos))
    return toks


# ---------------------------------------------------------------------------
# Parser (docs/language.md, Grammar).  Values become Python objects: int, float, str
# (strings), bool, None, tuple, dict, and the classes below.

class Ref:
    """%name: a value."""

    def __init__(self, name, offset):
        self.name, self.offset = name, offset


class Number:
    """A number written as an operand (`Mul(%x, 0.125)`): shape (), its user's element type."""

    def __init__(self, value, text, offset):
        self.value, self.text, self.offset = value, text, offset   # value: int or float


class GraphRef:
    """@name: a graph."""

    def __init__(self, name, offset):
        self.name, self.offset = name, offset


class Ident:
    """A bare identifier used as a value (Float16, SGD)."""

    def __init__(self, name, offset):
        self.name, self.offset = name, offset


class Apply:
    """IDENT(args): an optimizer, an initializer or a layout application."""

    def __init__(self, name, args, offset):
        self.name, self.args, self.offset = name, args, offset   # args: [(key or None, value)]


class Type:
    def __init__(self, kind, dtype, shape, offset):
        self.kind = kind      # 'Tensor' or 'Parameter'
        self.dtype = dtype    # 'Float32', ...
        self.shape = shape    # tuple of ints
        self.offset = offset


class Param:
    def __init__(self, name, type_, init, offset):
        self.name, self.type, self.init, self.offset = name, type_, init, offset


# MindSpore's other names of one operator, read as it (compiler/ir.c, op_from_name).
OP_ALIASES = {"TensorAdd": "Add", "RealDiv": "Div", "SparseGatherV2": "Gather", "ResizeBilinear": "ResizeBilinearV2"}


class Stmt:
    def __init__(self, result, op, operands, attrs, sig, offset, op_offset):
        self.result = result          # name without %
        self.op = OP_ALIASES.get(op, op)
        self.operands = operands      # [Ref or Number]
        self.attrs = attrs            # dict
        if self.op == "Range":        # MindSpore's P.Range(start, limit, delta): Arange (compiler/misc_ops.c)
            keys = ("start", "stop", "step")
            if len(operands) == 3 and not any(isinstance(r, Ref) for r in operands) and \
                    not any(k in attrs for k in keys):
                self.op, self.operands = "Arange", []
                self.attrs = dict(attrs, **{k: r.value for k, r in zip(keys, operands)})
        self.sig = sig                # None or ([Type], [Type])
        self.offset = offset
        self.op_offset = op_offset


class Graph:
    def __init__(self, name, offset):
        self.name, self.offset = name, offset
        self.params = []              # [Param]
        self.stmts = []               # [Stmt]
        self.rets = []                # [Ref]


class Module:
    def __init__(self):
        self.context = None           # (dict, offset)
        self.layouts = {}
        self.graphs = []              # [Graph], file order
        self.train = None             # (dict, offset)


DTYPES = ("Float32", "Float16", "BFloat16", "Int32", "Int64", "Bool")


MAX_NESTING = 200   # brackets inside brackets; deeper is refused rather than overflowing Python's stack


class Parser:
    def __init__(self, src):
        self.toks = tokenize(src)
        self.i = 0
        self.depth = 0

    def peek(self, k=0):
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def next(self):
        t = self.peek()
        self.i += 1
        return t

    def fail(self, what):
        t = self.peek()
        found = "end of file" if t.kind == "EOF" else "'%s'" % t.text
        raise ModelError(t.offset, "expected %s, found %s" % (what, found))

    def expect(self, kind, what=None):
        if self.peek().kind != kind:
            self.fail(what or "'%s'" % kind)
        return self.next()

    def accept(self, kind):
        if self.peek().kind == kind:
            return self.next()
        return None

    def module(self):
        m = Module()
        while self.peek().kind != "EOF":
            t = self.peek()
            if t.kind == "context":
                self.next()
                if m.context:
                    raise ModelError(t.offset, "a module has at most one context block")
                m.context = (self.dict_(), t.offset)
            elif t.kind == "train":
                self.next()
                if m.train:
                    raise ModelError(t.offset, "a module has at most one train block")
                m.train = (self.dict_(), t.offset)
            elif t.kind == "layout":
                self.next()
                name = self.expect("ident", "a layout name")
                self.expect("=")
                self.expect("ident", "Layout")
                self.expect("(")
                m.layouts[name.value] = self.args()
                self.expect(")")
            elif t.kind == "graph":
                g = self.graph()
                if any(h.name == g.name for h in m.graphs):
                    raise ModelError(g.offset, "graph @%s is defined twice" % g.name)
                m.graphs.append(g)
            else:
                self.fail("'context', 'layout', 'graph' or 'train'")
        if not m.graphs:
            raise ModelError(self.peek().offset, "the module has no graph")
        return m

    def graph(self):
        self.expect("graph")
        name = self.expect("graph", "a graph name such as @net")
        g = Graph(name.value, name.offset)
        self.expect("(")
        while self.peek().kind == "value":
            v = self.next()
            self.expect(":")
            ty = self.type_()
            init = None
            if self.accept("="):
                iname = self.expect("ident", "an initializer such as uniform(0, 1)")
                args = []
                if self.accept("("):
                    args = self.args()
                    self.expect(")")
                init = Apply(iname.value, args, iname.offset)
            g.params.append(Param(v.value, ty, init, v.offset))
            if not self.accept(","):
                break
        self.expect(")", "',' or ')'")
        self.expect("{")
        while self.peek().kind == "value":
            g.stmts.append(self.stmt())
        self.expect("return", "a statement or 'return'")
        g.rets.append(self.ref())
        while self.accept(","):
            g.rets.append(self.ref())
        self.expect("}")
        return g

    def ref(self):
        t = self.expect("value", "a value name such as %x")
        return Ref(t.value, t.offset)

    def operand(self):
        t = self.peek()
        if t.kind in ("int", "float"):
            self.next()
            return Number(t.value, t.text, t.offset)
        return self.ref()

    def stmt(self):
        res = self.next()
        self.expect("=")
        op = self.expect("ident", "an operator name")
        self.expect("(")
        operands = []
        if self.peek().kind != ")":
            operands.append(self.operand())
            while self.accept(","):
                operands.append(self.operand())
        self.expect(")", "',' or ')'")
        attrs = self.dict_() if self.peek().kind == "{" else {}
        sig = None
        if self.accept(":"):
            self.expect("(")
            ins = self.types(")")
            self.expect(")")
            self.expect("->")
            self.expect("(")
            outs = self.types(")")
            self.expect(")")
            sig = (ins, outs)
        return Stmt(res.value, op.value, operands, attrs, sig, res.offset, op.offset)

    def types(self, end):
        out = []
        if self.peek().kind == end:
            return out
        out.append(self.type_())
        while self.accept(","):
            out.append(self.type_())
        return out

    def type_(self):
        t = self.expect("<", "a type such as <Tensor[Float32], (16, 32)>")
        kind = self.expect("ident", "Tensor or Parameter")
        if kind.value not in ("Tensor", "Parameter"):
            raise ModelError(kind.offset, "unknown type '%s' (expected Tensor or Parameter)" % kind.value)
        self.expect("[")
        dt = self.expect("ident", "an element type")
        if dt.value not in DTYPES:
            raise ModelError(dt.offset, "unknown element type '%s' (expected %s)" % (dt.value, ", ".join(DTYPES)))
        self.expect("]")
        self.expect(",")
        shape_tok = self.peek()
        shape = self.tuple_()
        if not all(type(d) is int and d > 0 for d in shape):
            raise ModelError(shape_tok.offset, "a shape is a tuple of positive integers")
        self.expect(">")
        return Type(kind.value, dt.value, shape, t.offset)

    def value(self):
        t = self.peek()
        k = t.kind
        if k in ("(", "{") or (k == "ident" and self.peek(1).kind == "("):
            self.depth += 1
            if self.depth > MAX_NESTING:
                raise ModelError(t.offset, "nested too deeply (more than %d levels)" % MAX_NESTING)
            try:
                return self.nested_value()
            finally:
                self.depth -= 1
        if k in ("int", "float", "string"):
            self.next()
            return t.value
        if k in ("true", "false"):
            self.next()
            return k == "true"
        if k == "None":
            self.next()
            return None
        if k == "value":
            self.next()
            return Ref(t.value, t.offset)
        if k == "graph":
            self.next()
            return GraphRef(t.value, t.offset)
        if k == "ident":
            self.next()
            return Ident(t.value, t.offset)
        self.fail("a value")

    def nested_value(self):
        t = self.peek()
        if t.kind == "(":
            return self.tuple_()
        if t.kind == "{":
            return self.dict_()
        self.next()
        self.expect("(")
        args = self.args()
        self.expect(")", "',' or ')'")
        return Apply(t.value, args, t.offset)

    def tuple_(self):
        self.expect("(", "a tuple")
        items = []
        while self.peek().kind != ")":
            items.append(self.value())
            if not self.accept(","):
                break
        self.expect(")", "',' or ')'")
        return tuple(items)

    def dict_(self):
        self.expect("{", "a dict")
        d = {}
        while self.peek().kind != "}":
            key = self.next()
            if key.kind not in ("ident", "string") and key.kind not in KEYWORDS - {"true", "false", "None"}:
                self.i -= 1
                self.fail("a key or '}'")
            self.expect(":")
            if key.value in d:
                raise ModelError(key.offset, "key '%s' appears twice" % key.value)
            d[key.value] = self.value()
            self.accept(",")
        self.expect("}")
        return d

    def args(self):
        out = []
        if self.peek().kind == ")":
            return out
        while True:
            if self.peek().kind == "ident" and self.peek(1).kind == ":":
                key = self.next().value
                self.next()
                out.append((key, self.value()))
            else:
                out.append((None, self.value()))
            if not self.accept(","):
                return out


def parse(src):
    return Parser(src).module()


# ---------------------------------------------------------------------------
# Element types: how a value is stored and how a float64 result is rounded.

def round_bf16(x):
    """Round float64 values to the nearest bfloat16 (ties to even); float32 storage."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(all="ignore"):
        _, e = np.frexp(x)                               # |x| = m * 2^e, m in [0.5, 1)
        q = np.maximum(e - 8, -133)                       # 8 significant bits; subnormals below 2^-126
        r = np.ldexp(np.rint(np.ldexp(x, -q)), q)
        r = np.where(np.isfinite(x), r, x)
        r = np.where(np.abs(r) > 3.3895313892515355e38, np.copysign(np.inf, x), r)
    return r.astype(np.float32)


def round_bf16_bits(x):
    """float32 values to bfloat16 the way the runtime does it: round to nearest even on
    the upper 16 bits of the float32 pattern (NaN kept quiet); float32 storage."""
    u = np.uint64                                        # every constant unsigned: numpy 1.x turns
    b = np.asarray(x, dtype=np.float32).view(np.uint32).astype(u)   # uint64 with int64 into float64
    r = ((b + u(0x7FFF) + ((b >> u(16)) & u(1))) >> u(16)) << u(16)
    r = np.where((b & u(0x7FFFFFFF)) > u(0x7F800000), b | u(0x00400000), r)   # NaN: stays a (quiet) NaN
    return r.astype(np.uint32).view(np.float32)


STORAGE = {"Float32": np.float32, "Float16": np.float16, "BFloat16": np.float32,
           "Int32": np.int32, "Int64": np.int64, "Bool": np.bool_}
FLOAT_TYPES = ("Float32", "Float16", "BFloat16")


def is_float(dtype):
    return dtype in FLOAT_TYPES


def to_dtype(x, dtype):
    """A float64 or int64 result as a value of element type `dtype`."""
    x = np.asarray(x)
    with np.errstate(all="ignore"):
        if dtype == "BFloat16":
            return round_bf16(x)
        if dtype == "Bool":
            return x != 0
        if dtype in ("Int32", "Int64") and x.dtype.kind == "f":
            x = np.trunc(np.nan_to_num(x, nan=0.0, posinf=0.0, neginf=0.0))
        return x.astype(STORAGE[dtype])


def widen(x, dtype):
    """A stored value in the precision operators compute in."""
    if is_float(dtype):
        return np.asarray(x, dtype=np.float64)
    if dtype == "Bool":
        return np.asarray(x, dtype=np.bool_)
    return np.asarray(x, dtype=np.int64)


# ---------------------------------------------------------------------------
# Deterministic initializers (docs/output.md), vectorized in wrapping uint64.

M64 = (1 << 64) - 1


def fnv1a64(s):
    h = 0xcbf29ce484222325
    for b in s.encode("utf-8"):
        h = ((h ^ b) * 0x100000001b3) & M64
    return h


def splitmix64(z):
    """splitmix64 of a uint64 array (wrapping arithmetic)."""
    z = z + np.uint64(0x9e3779b97f4a7c15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xbf58476d1ce4e5b9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94d049bb133111eb)
    return z ^ (z >> np.uint64(31))


def init_key(name, seed):
    return fnv1a64(name) ^ ((seed * 0x9e3779b97f4a7c15) & M64)


def uniform_bits(key, count):
    """u(j) for j in [0, count): (splitmix64(key + j) >> 40) * 2^-24, as float64."""
    with np.errstate(over="ignore"):
        z = np.uint64(key) + np.arange(count, dtype=np.uint64)
        return (splitmix64(z) >> np.uint64(40)).astype(np.float64) * 2.0 ** -24


def keep_prob(at):
    p = at.get("keep_prob", 0.5)
    if type(p) not in (int, float) or not 0 < p <= 1:
        raise OpError("keep_prob, the chance of keeping an element, must be in (0, 1]")
    return float(np.float32(p))


def dropout_keep(name, seed, step, shape, p):
    """Dropout's mask of the whole value (docs/operators.md, Dropout): element i
    (row-major) kept when (splitmix64(k + i) >> 40) 2^-24 < p, k =
    splitmix64((fnv1a64(name) ^ seed 0x9e3779b97f4a7c15) + step)."""
    n = int(np.prod(shape, dtype=np.int64))
    with np.errstate(over="ignore"):
        k = splitmix64(np.uint64((init_key(name, seed) + step) & M64))
    return (uniform_bits(int(k), n) < p).reshape(shape)


def dropout(prog, ins, x):
    """x (or dy) times the mask over keep_prob: the forward and the gradient; the identity without training."""
    p = keep_prob(ins.attrs)
    if not prog.train:
        return x
    keep = dropout_keep(prog.flat[ins.out], prog.seed, prog.step, x.shape, p)
    return np.where(keep, np.float32(x) * np.float32(1.0 / p), np.float32(0))


def gen_mask(prog, ins):
    """DropoutGenMask: the piece [begin, end) of the Bool mask of `shape` that a Dropout named as its result
    keeps (dropout_keep's draw); every element kept without training."""
    shape = attr_ints(ins.attrs, "shape")
    if "keep_prob" not in ins.attrs or not shape or min(shape) < 1:
        raise OpError("needs the attributes 'shape' (one dim or more, positive) and 'keep_prob'")
    p = keep_prob(ins.attrs)
    if not prog.train:
        return constant_piece(np.ones(shape, dtype=bool), ins.attrs)
    return constant_piece(dropout_keep(prog.flat[ins.out], prog.seed, prog.step, tuple(shape), p), ins.attrs)


def do_mask(prog, ins, x, mask):
    """DropoutDoMask: x (or dy) where the mask is true times 1 / keep_prob, as Dropout scales; the identity
    without training (its DropoutGenMask keeps every element)."""
    p = keep_prob(ins.attrs)
    if not prog.train:
        return x
    if mask.shape != x.shape:
        raise OpError("the mask %s is not x's shape %s" % (mask.shape, x.shape))
    return np.where(mask, np.float32(x) * np.float32(1.0 / p), np.float32(0))


def uniform_real(prog, ins):
    """UniformReal: the piece [begin, end) of the whole `shape` of Float32 draws in [0, 1), element i the
    draw Dropout compares with keep_prob (dropout_keep), keyed by its flat name; seed and seed2, when either is
    given, as one seed (seed << 32 | seed2) in place of the model's (compiler/misc_ops.c)."""
    shape = attr_ints(ins.attrs, "shape")
    if not shape or min(shape) < 1:
        raise OpError("needs the attribute 'shape' (one dim or more, positive)")
    s1, s2 = ins.attrs.get("seed", 0), ins.attrs.get("seed2", 0)
    seed = (s1 << 32 | s2) if s1 or s2 else prog.seed
    n = int(np.prod(shape, dtype=np.int64))
    with np.errstate(over="ignore"):
        k = splitmix64(np.uint64((init_key(prog.flat[ins.out], seed) + prog.step) & M64))
    u = uniform_bits(int(k), n).astype(np.float32).reshape(shape)
    return constant_piece(u, ins.attrs)


def init_number(v, what, offset):
    if type(v) in (int, float):
        return float(v)
    raise ModelError(offset, "%s takes numbers" % what)


def initialize(name, type_, init, seed):
    """The initial value of the entry-graph input or parameter `name`
    (docs/output.md, Initializers)."""
    n = int(np.prod(type_.shape, dtype=np.int64))
    if init is None:
        init = Apply("normal" if type_.kind == "Parameter" else "uniform",
                     [(None, 0.01)] if type_.kind == "Parameter" else [(None, 0), (None, 1)], type_.offset)
    args = [v for _, v in init.args]
    wanted = {"zeros": 0, "ones": 0, "constant": 1, "uniform": 2, "normal": 1, "randint": 2}
    if init.name not in wanted:
        raise ModelError(init.offset, "unknown initializer '%s' (expected zeros, ones, constant, uniform, normal "
                         "or randint)" % init.name)
    if len(args) != wanted[init.name]:
        raise ModelError(init.offset, "%s takes %d argument%s" % (init.name, wanted[init.name],
                                                                   "" if wanted[init.name] == 1 else "s"))
    args = [init_number(a, init.name, init.offset) for a in args]
    key = init_key(name, seed)
    if init.name == "zeros":
        x = np.zeros(n)
    elif init.name == "ones":
        x = np.ones(n)
    elif init.name == "constant":
        x = np.full(n, args[0])
    elif init.name == "uniform":
        lo, hi = args
        x = lo + (hi - lo) * uniform_bits(key, n)
    elif init.name == "normal":
        u = uniform_bits(key, 2 * n)
        x = args[0] * np.sqrt(-2.0 * np.log(1.0 - u[0::2])) * np.cos(2.0 * math.pi * u[1::2])
    else:
        lo, hi = args
        x = lo + np.floor(uniform_bits(key, n) * (hi - lo))
    return to_dtype(x.reshape(type_.shape), type_.dtype)


# ---------------------------------------------------------------------------
# Operators (docs/operators.md).  Each has a forward f(ins, attrs) -> float64/int64
# result and a backward b(g, ins, attrs) -> one gradient (or None) per input,
# all in float64 and unrounded; the evaluator widens and rounds around them.

class OpError(Exception):
    """A problem an operator finds in its operands or attributes."""


def attr_int(at, key, default):
    v = at.get(key, default)
    if isinstance(v, tuple) and len(v) == 1:
        v = v[0]
    if type(v) is not int:
        raise OpError("attribute '%s' is an integer" % key)
    return v


def attr_bool(at, key):
    v = at.get(key, False)
    if type(v) is not bool:
        raise OpError("attribute '%s' is true or false" % key)
    return v


def attr_ints(at, key):
    if key not in at:
        raise OpError("needs the attribute '%s'" % key)
    v = at[key]
    if not isinstance(v, tuple) or not all(type(i) is int for i in v):
        raise OpError("attribute '%s' is a tuple of integers" % key)
    return v


def norm_axis(a, rank):
    if not -max(rank, 1) <= a < max(rank, 1):
        raise OpError("axis %d is out of range for a tensor of rank %d" % (a, rank))
    return a % rank if rank else 0


def reduce_axes(at, rank):
    """The normalized axes a reduction reduces: absent or () means all."""
    v = at.get("axis")
    if v is None or v == ():
        return tuple(range(rank))
    v = v if isinstance(v, tuple) else (v,)
    if not all(type(a) is int for a in v):
        raise OpError("axis is an integer or a tuple of integers")
    axes = tuple(sorted(norm_axis(a, rank) for a in v))
    if len(set(axes)) != len(axes):
        raise OpError("an axis is named twice")
    return axes


def unbroadcast(g, shape):
    """Sums a broadcast gradient back to `shape`."""
    while g.ndim > len(shape):
        g = g.sum(axis=0)
    for i, d in enumerate(shape):
        if d == 1 and g.shape[i] != 1:
            g = g.sum(axis=i, keepdims=True)
    return g


def swap_last(x):
    return np.swapaxes(x, -1, -2)


def mm_operands(ins, at, batch):
    a, b = ins
    if batch and (a.ndim < 2 or b.ndim < 2) or not batch and (a.ndim != 2 or b.ndim != 2):
        raise OpError("needs %s operands, got %s and %s" % ("rank >= 2" if batch else "2-D", a.shape, b.shape))
    ta, tb = attr_bool(at, "transpose_a"), attr_bool(at, "transpose_b")
    return (swap_last(a) if ta else a), (swap_last(b) if tb else b), ta, tb


def fwd_matmul(ins, at, batch=False):
    a, b, _, _ = mm_operands(ins, at, batch)
    if a.shape[-1] != b.shape[-2]:
        raise OpError("inner dimensions differ: %s and %s" % (a.shape, b.shape))
    return np.matmul(a, b)


def bwd_matmul(g, ins, at, batch=False):
    a, b, ta, tb = mm_operands(ins, at, batch)
    da = unbroadcast(np.matmul(g, swap_last(b)), a.shape)
    db = unbroadcast(np.matmul(swap_last(a), g), b.shape)
    return [swap_last(da) if ta else da, swap_last(db) if tb else db]


def fwd_batch_matmul(ins, at):
    return fwd_matmul(ins, at, batch=True)


def bwd_batch_matmul(g, ins, at):
    return bwd_matmul(g, ins, at, batch=True)


def fwd_add(ins, at):
    return ins[0] + ins[1]


def bwd_add(g, ins, at):
    return [unbroadcast(g, ins[0].shape), unbroadcast(g, ins[1].shape)]


def fwd_sub(ins, at):
    return ins[0] - ins[1]


def bwd_sub(g, ins, at):
    return [unbroadcast(g, ins[0].shape), unbroadcast(-g, ins[1].shape)]


def fwd_mul(ins, at):
    return ins[0] * ins[1]


def bwd_mul(g, ins, at):
    a, b = ins
    return [unbroadcast(g * b, a.shape), unbroadcast(g * a, b.shape)]


def fwd_div(ins, at):
    a, b = ins
    if a.dtype.kind == "f":
        return a / b
    with np.errstate(all="ignore"):               # integer division truncates toward zero, as C
        q = np.trunc(a.astype(np.float64) / b.astype(np.float64))
    return np.nan_to_num(q, nan=0.0, posinf=0.0, neginf=0.0).astype(np.int64)


def bwd_div(g, ins, at):
    a, b = ins
    return [unbroadcast(g / b, a.shape), unbroadcast(-g * a / (b * b), b.shape)]


def fwd_maximum(ins, at):
    return np.maximum(ins[0], ins[1])


def split_ties(g, a, b, first):
    """The gradient to the operand chosen (`first`: a), half to each where a and b tie."""
    ga = np.where(a == b, g / 2, np.where(first, g, 0.0))
    gb = np.where(a == b, g / 2, np.where(first, 0.0, g))
    return [unbroadcast(ga, a.shape), unbroadcast(gb, b.shape)]


def bwd_maximum(g, ins, at):
    a, b = ins
    return split_ties(g, a, b, a > b)             # a tie gives each operand half (MindSpore's MaximumGrad)


def fwd_minimum(ins, at):
    return np.minimum(ins[0], ins[1])


def bwd_minimum(g, ins, at):
    a, b = ins
    return split_ties(g, a, b, a < b)


def fwd_pow(ins, at):
    with np.errstate(all="ignore"):               # a negative base's fractional power is NaN, as C's powf
        return np.power(ins[0], ins[1])


def bwd_pow(g, ins, at):
    a, b = ins
    with np.errstate(all="ignore"):
        ga = g * b * np.power(a, b - 1.0)
        gb = np.where(a > 0, g * np.power(a, b) * np.log(np.where(a > 0, a, 1.0)), 0.0)   # 0 where log a is undefined
    return [unbroadcast(ga, a.shape), unbroadcast(gb, b.shape)]


def fwd_floor_div(ins, at):
    with np.errstate(all="ignore"):
        return np.floor(ins[0] / ins[1])


def bwd_floor_div(g, ins, at):
    return [np.zeros_like(ins[0]), np.zeros_like(ins[1])]   # MindSpore's: no gradient


def fwd_floor_mod(ins, at):
    with np.errstate(all="ignore"):
        return np.mod(ins[0], ins[1])             # the divisor's sign


def bwd_floor_mod(g, ins, at):
    a, b = ins
    with np.errstate(all="ignore"):
        return [unbroadcast(g + 0.0 * b, a.shape), unbroadcast(-g * np.floor(a / b), b.shape)]


def fwd_mod(ins, at):
    with np.errstate(all="ignore"):
        return np.fmod(ins[0], ins[1])            # the dividend's sign, MindSpore's Mod


def bwd_mod(g, ins, at):
    a, b = ins
    with np.errstate(all="ignore"):
        return [unbroadcast(g + 0.0 * b, a.shape), unbroadcast(-g * np.trunc(a / b), b.shape)]


def fwd_squared_difference(ins, at):
    d = ins[0] - ins[1]
    return d * d


def bwd_squared_difference(g, ins, at):
    a, b = ins
    return [unbroadcast(2.0 * g * (a - b), a.shape), unbroadcast(-2.0 * g * (a - b), b.shape)]


def fwd_div_no_nan(ins, at):
    a, b = ins
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(b == 0, 0.0, a / np.where(b == 0, 1.0, b))


def bwd_div_no_nan(g, ins, at):
    """MindSpore's bprop: da = DivNoNan(dy, b), db = -da times the result; both 0 where b == 0."""
    a, b = ins
    safe = np.where(b == 0, 1.0, b)
    da = np.where(b == 0, 0.0, g / safe)
    db = np.where(b == 0, 0.0, -da * a / safe)
    return [unbroadcast(da, a.shape), unbroadcast(db, b.shape)]


def fwd_atan2(ins, at):
    return np.arctan2(ins[0], ins[1])


def bwd_atan2(g, ins, at):
    a, b = ins
    r = a * a + b * b
    return [unbroadcast(g * b / r, a.shape), unbroadcast(-g * a / r, b.shape)]


def fwd_xlogy(ins, at):
    """MindSpore's Xlogy: x log y, 0 where x == 0 (whatever y)."""
    a, b = ins
    with np.errstate(all="ignore"):
        return np.where(a == 0, 0.0, a * np.log(b))


def bwd_xlogy(g, ins, at):
    """MindSpore's bprop: dx = Xlogy(dy, y) masked to 0 where x == 0 and y <= 0; dy = dy x / y."""
    a, b = ins
    with np.errstate(all="ignore"):
        da = np.where((g == 0) | ((a == 0) & (b <= 0)), 0.0, g * np.log(b))
        db = g * a / b
    return [unbroadcast(da, a.shape), unbroadcast(db, b.shape)]


def fwd_xdivy(ins, at):
    """MindSpore's Xdivy: x / y, 0 where x == 0 (whatever y)."""
    a, b = ins
    with np.errstate(all="ignore"):
        return np.where(a == 0, 0.0, a / b)


def bwd_xdivy(g, ins, at):
    """MindSpore's bprop: Xdivy(x != 0, y) dy and Xdivy(-x, y^2) dy: 0 where x == 0."""
    a, b = ins
    with np.errstate(all="ignore"):
        da = np.where(a == 0, 0.0, 1.0 / b) * g
        db = np.where(a == 0, 0.0, -a / (b * b)) * g
    return [unbroadcast(da, a.shape), unbroadcast(db, b.shape)]


def fwd_mul_no_nan(ins, at):
    """MindSpore's MulNoNan: x y, 0 where y == 0 even if x is inf or NaN."""
    a, b = ins
    with np.errstate(all="ignore"):
        return np.where(b == 0, 0.0, a * b)


def bwd_mul_no_nan(g, ins, at):
    """MindSpore's bprop: MulNoNan(dy, y) and MulNoNan(x, dy)."""
    a, b = ins
    with np.errstate(all="ignore"):
        da = np.where(b == 0, 0.0, g * b)
        db = np.where(g == 0, 0.0, a * g)
    return [unbroadcast(da, a.shape), unbroadcast(db, b.shape)]


def fwd_truncate_div(ins, at):
    """MindSpore's TruncateDiv: x / y rounded toward 0 (an integer's as C's division)."""
    a, b = ins
    if a.dtype.kind != "f":
        return fwd_div(ins, at)
    with np.errstate(all="ignore"):
        return np.trunc(a / b)


def fwd_truncate_mod(ins, at):
    """MindSpore's TruncateMod: the remainder of TruncateDiv, the dividend's sign (C's fmod)."""
    with np.errstate(all="ignore"):
        return np.fmod(ins[0], ins[1])


def fwd_hypot(ins, at):
    return np.hypot(ins[0], ins[1])


def bwd_hypot(g, ins, at):
    """MindSpore's bprop: dy x / out and dy y / out (NaN at (0, 0))."""
    a, b = ins
    with np.errstate(all="ignore"):
        r = np.hypot(a, b)
        return [unbroadcast(g * (a / r), a.shape), unbroadcast(g * (b / r), b.shape)]


def sigmoid_ce_operands(ins):
    return same_shape(ins, "logits", "labels")


def fwd_sigmoid_ce(ins, at):
    """MindSpore's SigmoidCrossEntropyWithLogits: max(x, 0) - x z + log(1 + exp(-|x|)), logits and labels of
    one shape."""
    x, z = sigmoid_ce_operands(ins)
    return np.maximum(x, 0) - x * z + np.log1p(np.exp(-np.abs(x)))


def bwd_sigmoid_ce(g, ins, at):
    """MindSpore's bprop: dy (sigmoid(x) - z) for the logits, zeros for the labels (none here)."""
    x, z = sigmoid_ce_operands(ins)
    return [g * (1 / (1 + np.exp(-x)) - z), None]


def fwd_lerp(ins, at):
    """MindSpore's Lerp: start + weight (end - start), the three broadcast (numpy's)."""
    s, e, w = ins
    try:
        np.broadcast_shapes(s.shape, e.shape, w.shape)
    except ValueError as err:
        raise OpError(str(err))
    return s + w * (e - s)


def bwd_lerp(g, ins, at):
    """MindSpore's bprop: dy (1 - w), dy w, dy (end - start), each summed to its operand's shape."""
    s, e, w = ins
    return [unbroadcast(g * (1 - w), s.shape), unbroadcast(g * w, e.shape), unbroadcast(g * (e - s), w.shape)]


def fwd_masked_fill(ins, at):
    """MindSpore's MaskedFill: value where the Bool mask is true, else input; input and mask broadcast (numpy's),
    value a scalar (a number or a 0-d tensor) of input's type."""
    x, m, v = ins
    if m.dtype != np.bool_:
        raise OpError("the mask must be Bool")
    if np.ndim(v) != 0:
        raise OpError("value must be a scalar (a number or a 0-d tensor), got shape %s" % (np.shape(v),))
    try:
        np.broadcast_shapes(x.shape, m.shape)
    except ValueError as err:
        raise OpError(str(err))
    return np.where(m, v, x)


def bwd_masked_fill(g, ins, at):
    """MindSpore's bprop: dy (1 - mask) for input (summed over its broadcast dims), none for the mask, and the
    sum of dy mask for value."""
    x, m, v = ins
    return [unbroadcast(np.where(m, 0.0, g), x.shape), None, np.sum(np.where(m, g, 0.0))]


# The comparisons (MindSpore's Equal, NotEqual, Greater, GreaterEqual, Less,
# LessEqual): numpy's, broadcasting, a NaN unequal to everything; a Bool
# result, so neither operand gets a gradient.
def approximate_equal(a, b, at):
    """MindSpore's ApproximateEqual: |a - b| < tolerance (1e-5 by default, a Float32 attribute; the kernel
    compares in Float32), of operands of one shape (no broadcasting, MindSpore's)."""
    if np.shape(a) != np.shape(b):
        raise OpError("ApproximateEqual's operands have one shape, got %s and %s" % (np.shape(a), np.shape(b)))
    tol = attr_number(at, "tolerance", 1e-5)
    if not (np.isfinite(tol) and tol >= 0):
        raise OpError("tolerance must be a finite number, 0 or more")
    with np.errstate(invalid="ignore"):
        return np.abs(a - b) < float(np.float32(tol))


# The comparisons: f(a, b, attributes), a Bool result.
COMPARES = {"Equal": lambda a, b, at: np.equal(a, b), "NotEqual": lambda a, b, at: np.not_equal(a, b),
            "Greater": lambda a, b, at: np.greater(a, b), "GreaterEqual": lambda a, b, at: np.greater_equal(a, b),
            "Less": lambda a, b, at: np.less(a, b), "LessEqual": lambda a, b, at: np.less_equal(a, b),
            "ApproximateEqual": approximate_equal}


def fwd_compare(op):
    return lambda ins, at: COMPARES[op](ins[0], ins[1], at)


def bwd_compare(g, ins, at):
    return [None, None]


# The logical operators (MindSpore's LogicalNot, LogicalAnd, LogicalOr) on
# Bool operands, broadcasting, and IsFinite of a float: Bool results, so no
# operand gets a gradient.
def bool_operands(op, ins):
    for x in ins:
        if np.asarray(x).dtype != np.bool_:
            raise OpError("%s needs Bool operands, got %s" % (op, np.asarray(x).dtype))
    return ins


LOGICALS = {"LogicalNot": lambda ins, at: np.logical_not(*bool_operands("LogicalNot", ins)),
            "LogicalAnd": lambda ins, at: np.logical_and(*bool_operands("LogicalAnd", ins)),
            "LogicalOr": lambda ins, at: np.logical_or(*bool_operands("LogicalOr", ins))}


def fwd_is_finite(ins, at):
    if np.asarray(ins[0]).dtype.kind != "f":
        raise OpError("IsFinite needs a float operand")
    return np.isfinite(ins[0])


def bwd_mask(g, ins, at):
    """A Bool result: no operand gets a gradient."""
    return [None for _ in ins]


def fwd_bias_add(ins, at):
    x, b = ins
    if b.ndim != 1 or x.ndim < 1 or x.shape[-1] != b.shape[0]:
        raise OpError("the bias must be 1-D with the size of x's last dim; x is %s, bias %s" % (x.shape, b.shape))
    return x + b


def bwd_bias_add(g, ins, at):
    return [g, g.reshape(-1, g.shape[-1]).sum(axis=0)]


def fwd_relu(ins, at):
    return np.maximum(ins[0], 0)


def kernel_param(at, key, default):
    """An elementwise kernel's number as MindSpore uses it: a Float32 scalar cast to x's type ("@dtype",
    which forward and backward add: op_attrs)."""
    t = at.get("@dtype", "Float32")
    return float(widen(to_dtype(np.float32(attr_number(at, key, default)), t), t))


def leaky_alpha(at):
    """LeakyReLU's alpha (0.2 by default, MindSpore's nn.LeakyReLU)."""
    if not np.isfinite(attr_number(at, "alpha", 0.2)):
        raise OpError("LeakyReLU's alpha must be a finite number")
    return kernel_param(at, "alpha", 0.2)


def shrink_lambd(at):
    """HShrink's and SoftShrink's lambd (0.5 by default, MindSpore's)."""
    lambd = attr_number(at, "lambd", 0.5)
    if not (np.isfinite(lambd) and lambd >= 0):
        raise OpError("lambd must be a finite number, 0 or more")
    return kernel_param(at, "lambd", 0.5)


def fwd_hshrink(ins, at):
    x, p = ins[0], shrink_lambd(at)
    return np.where((x >= -p) & (x <= p), 0.0, x)   # a NaN stays NaN


def bwd_hshrink(g, ins, at):
    x, p = ins[0], shrink_lambd(at)
    return [np.where((x >= -p) & (x <= p), 0.0, g)]


def fwd_soft_shrink(ins, at):
    x, p = ins[0], shrink_lambd(at)
    return np.where(x > p, x - p, np.where(x < -p, x + p, np.where(np.isnan(x), x, 0.0)))   # a NaN stays NaN


bwd_soft_shrink = bwd_hshrink   # MindSpore's SoftShrinkGrad: dy outside [-lambd, lambd]


def fwd_trunc(ins, at):
    return np.trunc(ins[0])


def fwd_erfinv(ins, at):
    """erf's inverse: Winitzki's closed form (2e-3 off), then Newton's steps on erf(y) = x; +-1 give
    +-infinity, outside [-1, 1] NaN."""
    x = np.asarray(ins[0], dtype=np.float64)
    inside = np.abs(x) < 1
    xi = np.where(inside, x, 0.0)
    ln = np.log1p(-xi * xi)
    a = 0.147
    b = 2.0 / (math.pi * a) + ln / 2
    y = np.sign(xi) * np.sqrt(np.sqrt(b * b - ln / a) - b)
    for _ in range(4):
        y = y - (erf(y) - xi) / (2.0 / math.sqrt(math.pi) * np.exp(-y * y))
    return np.where(inside, y, np.where(x == 1, np.inf, np.where(x == -1, -np.inf, np.nan)))


def bwd_erfinv(g, ins, at):
    y = fwd_erfinv(ins, at)
    return [g * math.sqrt(math.pi) / 2 * np.exp(y * y)]


def fwd_leaky_relu(ins, at):
    """MindSpore's Maximum(alpha x, x) (Minimum when alpha > 1): x above 0, alpha x below."""
    x = ins[0]
    return np.where(x > 0, x, leaky_alpha(at) * x)


def bwd_leaky_relu(g, ins, at):
    """The Maximum's gradient (MindSpore's MaximumGrad) through alpha x and x: dy above 0, alpha dy below, each
    operand half of dy at the tie x = 0, and nothing at a NaN, which neither operand wins."""
    x, a = ins[0], leaky_alpha(at)
    return [np.where(x > 0, g, np.where(x < 0, a * g, np.where(x == 0, (g + a * g) / 2, 0.0)))]


def prelu_weight(x, w):
    """PReLU's weight broadcast to x: one per channel (x's dim 1; one channel below rank 2), or one for all."""
    channels = x.shape[1] if x.ndim >= 2 else 1
    if w.ndim != 1 or w.shape[0] not in (channels, 1):
        raise OpError("the weight must be 1-D, of x's channels (dim 1) or of 1; x is %s, weight %s"
                      % (x.shape, w.shape))
    if x.ndim >= 2 and w.shape[0] == channels:
        return w.reshape((1, channels) + (1,) * (x.ndim - 2)), True
    return w[0], False


def fwd_prelu(ins, at):
    x, w = ins
    wb, _ = prelu_weight(x, w)
    return np.where(x < 0, wb * x, x)


def bwd_prelu(g, ins, at):
    """MindSpore's PReLUGrad: dx = x <= 0 ? w dy : dy; dw the sum of x dy where x < 0 over its channel."""
    x, w = ins
    wb, per_channel = prelu_weight(x, w)
    prod = np.where(x < 0, x * g, 0.0)
    axes = tuple(d for d in range(x.ndim) if not (per_channel and d == 1))
    return [np.where(x <= 0, wb * g, g), prod.sum(axis=axes).reshape(w.shape)]


def window_pair(at, key):
    """Conv2D's and the pools' kernel_size, stride(s), dilation: a number, a pair or (1, 1, h, w); 1 by default."""
    v = at.get(key, 1)
    v = v if isinstance(v, tuple) else (v, v)
    if len(v) == 4 and v[:2] == (1, 1):
        v = v[2:]
    if len(v) != 2 or not all(type(i) is int and i >= 1 for i in v):
        raise OpError("'%s' is a positive integer or a pair of them" % key)
    return v


def window_geometry(x, at, conv):
    """MindSpore's output sizes and padding: (kh, kw) dilated, strides, dilation, (top, bottom, left, right),
    (ho, wo). valid: ceil((x - k + 1) / s); same: ceil(x / s), the padding's odd one after; pad: as given."""
    if x.ndim != 4:
        raise OpError("x must be 4-D (N, C, H, W), not %s" % (x.shape,))
    if at.get("data_format", "NCHW") != "NCHW" or at.get("mode", 1) != 1:
        raise OpError("data_format is \"NCHW\" and mode 1")
    k = window_pair(at, "kernel_size")
    s = window_pair(at, "stride" if conv else "strides")
    d = window_pair(at, "dilation") if conv else (1, 1)
    mode = str(at.get("pad_mode", "valid")).lower()
    pad = at.get("pad", 0) if conv else 0
    pad = pad if isinstance(pad, tuple) else (pad,) * 4
    if mode not in (("valid", "same", "pad") if conv else ("valid", "same")) or len(pad) != 4 or \
            not all(type(p) is int and p >= 0 for p in pad):
        raise OpError("pad_mode %r or pad %r is not MindSpore's" % (mode, pad))
    pads, out = [], []
    for i in range(2):
        size, kd = x.shape[2 + i], d[i] * (k[i] - 1) + 1
        if mode == "same":
            o = -(-size // s[i])
            need = max(0, (o - 1) * s[i] + kd - size)
            lo, hi = need // 2, need - need // 2
        elif mode == "pad":
            lo, hi = pad[2 * i], pad[2 * i + 1]
            o = (size + lo + hi - kd) // s[i] + 1
        else:
            lo = hi = 0
            o = (size - kd) // s[i] + 1
        if o < 1:
            raise OpError("x %s is smaller than the window" % (x.shape,))
        pads += [lo, hi]
        out.append(o)
    return k, s, d, pads, out


def window_views(xp, k, s, d, out):
    """For each window offset (i, j) in row-major order: the sliced view of the padded xp it reads."""
    for i in range(k[0]):
        for j in range(k[1]):
            yield i, j, (slice(None), slice(None), slice(i * d[0], i * d[0] + (out[0] - 1) * s[0] + 1, s[0]),
                         slice(j * d[1], j * d[1] + (out[1] - 1) * s[1] + 1, s[1]))


def window_pad(x, pads, value):
    return np.pad(x, ((0, 0), (0, 0), (pads[0], pads[1]), (pads[2], pads[3])), constant_values=value)


def window_crop(dxp, x, pads):
    return dxp[:, :, pads[0]:pads[0] + x.shape[2], pads[2]:pads[2] + x.shape[3]]


def conv_groups(x, at):
    """Conv2D's group: a positive integer dividing x's channels and out_channel."""
    groups, o = attr_int(at, "group", 1), attr_int(at, "out_channel", 0)
    if groups < 1 or o < 1 or x.shape[1] % groups or o % groups:
        raise OpError("group %d must divide x's channels (%d) and out_channel (%d)" % (groups, x.shape[1], o))
    return groups


def fwd_conv2d(ins, at):
    x, w = ins
    k, s, d, pads, out = window_geometry(x, at, True)
    groups = conv_groups(x, at)
    if w.shape != (attr_int(at, "out_channel", 0), x.shape[1] // groups) + tuple(k):
        raise OpError("the weight must be (out_channel, C / group, kh, kw), not %s" % (w.shape,))
    xp, y = window_pad(x, pads, 0.0), np.zeros((x.shape[0], w.shape[0], out[0], out[1]))
    cg, og = x.shape[1] // groups, w.shape[0] // groups
    for q in range(groups):
        for i, j, v in window_views(xp, k, s, d, out):
            y[:, q * og:(q + 1) * og] += np.einsum("nchw,oc->nohw", xp[v][:, q * cg:(q + 1) * cg],
                                                   w[q * og:(q + 1) * og, :, i, j])
    return y


def bwd_conv2d(g, ins, at):
    x, w = ins
    k, s, d, pads, out = window_geometry(x, at, True)
    xp = window_pad(x, pads, 0.0)
    dxp, dw = np.zeros(xp.shape), np.zeros(w.shape)
    groups = conv_groups(x, at)
    cg, og = x.shape[1] // groups, w.shape[0] // groups
    for q in range(groups):
        gq, cs, os_ = g[:, q * og:(q + 1) * og], slice(q * cg, (q + 1) * cg), slice(q * og, (q + 1) * og)
        for i, j, v in window_views(xp, k, s, d, out):
            dxp[v][:, cs] += np.einsum("nohw,oc->nchw", gq, w[os_, :, i, j])
            dw[os_, :, i, j] = np.einsum("nohw,nchw->oc", gq, xp[v][:, cs])
    return [window_crop(dxp, x, pads), dw]


def transpose_x(dout, w, at):
    """Conv2DTranspose's input_size as the convolution's x (zeros, its shape only); dout must be that
    convolution's output."""
    size = at.get("input_size")
    if not isinstance(size, tuple) or len(size) != 4 or not all(type(i) is int and i >= 1 for i in size):
        raise OpError("input_size is four positive integers (N, C, H, W), not %r" % (size,))
    x = np.zeros(size)
    k, s, d, pads, out = window_geometry(x, at, True)
    groups = conv_groups(x, at)
    if w.shape != (attr_int(at, "out_channel", 0), size[1] // groups) + tuple(k):
        raise OpError("the weight must be (out_channel, C / group, kh, kw), not %s" % (w.shape,))
    if dout.shape != (size[0], w.shape[0], out[0], out[1]):
        raise OpError("dout %s is not the convolution's output for input_size %s" % (dout.shape, size))
    return x


def fwd_conv2d_transpose(ins, at):
    """Conv2D's gradient with respect to x (of input_size), given dout."""
    dout, w = ins
    return bwd_conv2d(dout, [transpose_x(dout, w, at), w], at)[0]


def bwd_conv2d_transpose(g, ins, at):
    """dout's: Conv2D(g, w); w's: Conv2D's weight gradient with x = g and dy = dout."""
    dout, w = ins
    transpose_x(dout, w, at)
    return [fwd_conv2d([g, w], at), bwd_conv2d(dout, [g, w], at)[1]]


def pool_first_max(x, at):
    """MaxPool: each window's maximum over its elements inside x and the offset (i, j) of its first (a NaN
    wins, as the kernels' scan), padding -inf."""
    k, s, d, pads, out = window_geometry(x, at, False)
    xp = window_pad(x, pads, -np.inf)
    best, where = None, None
    for i, j, v in window_views(xp, k, s, d, out):
        c = xp[v]
        if best is None:
            best, where = c.copy(), np.zeros(c.shape, dtype=np.int64)
            continue
        take = (c > best) | (np.isnan(c) & ~np.isnan(best))
        best, where = np.where(take, c, best), np.where(take, i * k[1] + j, where)
    return best, where, (k, s, d, pads, out)


def pool_counts(x, at):
    k, s, d, pads, out = window_geometry(x, at, False)
    ones, n = window_pad(np.ones(x.shape), pads, 0.0), 0
    for _, _, v in window_views(ones, k, s, d, out):
        n = n + ones[v]
    return n, (k, s, d, pads, out)


def fwd_max_pool(ins, at):
    return pool_first_max(ins[0], at)[0]


def bwd_max_pool(g, ins, at):
    """dy to each window's first maximum, summed where windows overlap."""
    x = ins[0]
    _, where, (k, s, d, pads, out) = pool_first_max(x, at)
    dxp = np.zeros(window_pad(x, pads, 0.0).shape)
    for i, j, v in window_views(dxp, k, s, d, out):
        dxp[v] += np.where(where == i * k[1] + j, g, 0.0)
    return [window_crop(dxp, x, pads)]


def fwd_avg_pool(ins, at):
    """The mean of each window's elements inside x (SAME's padding not counted, MindSpore's)."""
    x = ins[0]
    n, (k, s, d, pads, out) = pool_counts(x, at)
    xp, acc = window_pad(x, pads, 0.0), 0
    for _, _, v in window_views(xp, k, s, d, out):
        acc = acc + xp[v]
    return acc / n


def bwd_avg_pool(g, ins, at):
    x = ins[0]
    n, (k, s, d, pads, out) = pool_counts(x, at)
    dxp = np.zeros(window_pad(x, pads, 0.0).shape)
    for _, _, v in window_views(dxp, k, s, d, out):
        dxp[v] += g / n
    return [window_crop(dxp, x, pads)]


def bwd_relu(g, ins, at):
    return [np.where(ins[0] > 0, g, 0.0)]


GELU_C = math.sqrt(2.0 / math.pi)
erf = np.vectorize(math.erf, otypes=[np.float64])
erfc = np.vectorize(math.erfc, otypes=[np.float64])


def gelu_erf_form(at):
    """approximate: "tanh" (the default) or "none" (the erf form, 0.5 x (1 + erf(x / sqrt 2)))."""
    v = at.get("approximate", "tanh")
    if v not in ("tanh", "none"):
        raise OpError('attribute \'approximate\' is "tanh" or "none"')
    return v == "none"


def fwd_gelu(ins, at):
    x = ins[0]
    if gelu_erf_form(at):
        return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))
    return 0.5 * x * (1.0 + np.tanh(GELU_C * (x + 0.044715 * x ** 3)))


def bwd_gelu(g, ins, at):
    x = ins[0]
    if gelu_erf_form(at):
        return [g * (0.5 * (1.0 + erf(x / math.sqrt(2.0))) + x * np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi))]
    t = np.tanh(GELU_C * (x + 0.044715 * x ** 3))
    dt = (1.0 - t * t) * GELU_C * (1.0 + 3 * 0.044715 * x * x)
    return [g * (0.5 * (1.0 + t) + 0.5 * x * dt)]


def fwd_tanh(ins, at):
    return np.tanh(ins[0])


def bwd_tanh(g, ins, at):
    y = np.tanh(ins[0])
    return [g * (1.0 - y * y)]


def fwd_sigmoid(ins, at):
    return 1.0 / (1.0 + np.exp(-ins[0]))


def bwd_sigmoid(g, ins, at):
    y = fwd_sigmoid(ins, at)
    return [g * y * (1.0 - y)]


def fwd_exp(ins, at):
    return np.exp(ins[0])


def bwd_exp(g, ins, at):
    return [g * np.exp(ins[0])]


def fwd_log(ins, at):
    return np.log(ins[0])


def bwd_log(g, ins, at):
    return [g / ins[0]]


def fwd_neg(ins, at):
    return -ins[0]


def bwd_neg(g, ins, at):
    return [-g]


def fwd_sqrt(ins, at):
    return np.sqrt(ins[0])


def bwd_sqrt(g, ins, at):
    return [g / (2.0 * np.sqrt(ins[0]))]


def fwd_rsqrt(ins, at):
    return 1.0 / np.sqrt(ins[0])


def bwd_rsqrt(g, ins, at):
    return [-0.5 * g * ins[0] ** -1.5]


def fwd_silu(ins, at):
    return ins[0] / (1.0 + np.exp(-ins[0]))


def bwd_silu(g, ins, at):
    s = 1.0 / (1.0 + np.exp(-ins[0]))
    return [g * s * (1.0 + ins[0] * (1.0 - s))]


def fwd_abs(ins, at):
    return np.abs(ins[0])


def bwd_abs(g, ins, at):
    return [np.sign(ins[0]) * g]


def fwd_sin(ins, at):
    return np.sin(ins[0])


def bwd_sin(g, ins, at):
    return [g * np.cos(ins[0])]


def fwd_cos(ins, at):
    return np.cos(ins[0])


def bwd_cos(g, ins, at):
    return [-g * np.sin(ins[0])]


def fwd_erf(ins, at):
    return erf(ins[0])


def bwd_erf(g, ins, at):
    return [g * 2.0 / math.sqrt(math.pi) * np.exp(-ins[0] * ins[0])]


def fwd_reciprocal(ins, at):
    return 1.0 / ins[0]


def bwd_reciprocal(g, ins, at):
    return [-g / (ins[0] * ins[0])]


def fwd_log1p(ins, at):
    return np.log1p(ins[0])


def bwd_log1p(g, ins, at):
    return [g / (1.0 + ins[0])]


def fwd_expm1(ins, at):
    return np.expm1(ins[0])


def bwd_expm1(g, ins, at):
    return [g * np.exp(ins[0])]


def fwd_softplus(ins, at):
    return np.logaddexp(0.0, ins[0])


def bwd_softplus(g, ins, at):
    return [g / (1.0 + np.exp(-ins[0]))]


def fwd_floor(ins, at):
    return np.floor(ins[0])


def fwd_sign(ins, at):
    return np.sign(ins[0])


def fwd_ceil(ins, at):
    return np.ceil(ins[0])


def fwd_round(ins, at):
    return np.rint(ins[0])                        # half to even, as MindSpore's Round


def fwd_tan(ins, at):
    return np.tan(ins[0])


def bwd_tan(g, ins, at):
    return [g / np.cos(ins[0]) ** 2]


def fwd_atan(ins, at):
    return np.arctan(ins[0])


def bwd_atan(g, ins, at):
    return [g / (1.0 + ins[0] * ins[0])]


def fwd_sinh(ins, at):
    return np.sinh(ins[0])


def bwd_sinh(g, ins, at):
    return [g * np.cosh(ins[0])]


def fwd_cosh(ins, at):
    return np.cosh(ins[0])


def bwd_cosh(g, ins, at):
    return [g * np.sinh(ins[0])]


def fwd_hswish(ins, at):
    x = ins[0]
    return x * np.clip(x + 3.0, 0.0, 6.0) / 6.0


def bwd_hswish(g, ins, at):
    x = ins[0]                                    # MindSpore's HSwishGrad
    return [np.where(x <= -3.0, 0.0, np.where(x >= 3.0, g, g * (2.0 * x + 3.0) / 6.0))]


def fwd_relu6(ins, at):
    return np.clip(ins[0], 0.0, 6.0)


def bwd_relu6(g, ins, at):
    x = ins[0]                                    # MindSpore's ReLU6Grad: dy inside (0, 6)
    return [np.where((x > 0.0) & (x < 6.0), g, 0.0)]


def fwd_softsign(ins, at):
    return ins[0] / (1.0 + np.abs(ins[0]))


def bwd_softsign(g, ins, at):
    return [g / (1.0 + np.abs(ins[0])) ** 2]


def fwd_fast_gelu(ins, at):
    return ins[0] / (1.0 + np.exp(-1.702 * ins[0]))   # x sigmoid(1.702 x), MindSpore's FastGeLU


def bwd_fast_gelu(g, ins, at):
    u = 1.702 * ins[0]
    s = 1.0 / (1.0 + np.exp(-u))
    return [g * s * (1.0 + u * (1.0 - s))]


def fwd_hsigmoid(ins, at):
    return np.clip(ins[0] + 3.0, 0.0, 6.0) / 6.0


def bwd_hsigmoid(g, ins, at):
    x = ins[0]
    return [np.where((x > -3.0) & (x < 3.0), g / 6.0, 0.0)]


def fwd_erfc(ins, at):
    return erfc(ins[0])


def bwd_erfc(g, ins, at):
    return [-g * 2.0 / math.sqrt(math.pi) * np.exp(-ins[0] * ins[0])]


def digamma(x):
    """d/dx log Gamma(x), elementwise in double: the recurrence up to x >= 6, then the asymptotic series;
    below 0 the reflection psi(1 - x) - pi / tan(pi x); NaN at the poles 0, -1, ..."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(all="ignore"):
        pole = (x <= 0) & (x == np.floor(x))
        neg = x <= 0
        r = np.where(neg, -math.pi / np.tan(math.pi * x), 0.0)
        x = np.where(neg, 1 - x, x)
        for _ in range(6):
            small = x < 6
            r = r - np.where(small, 1 / x, 0.0)
            x = np.where(small, x + 1, x)
        f = 1 / (x * x)
        s = r + np.log(x) - 0.5 / x - f * (1 / 12 - f * (1 / 120 - f * (1 / 252 - f * (1 / 240 - f / 132))))
    return np.where(pole, np.nan, s)


lgamma = np.vectorize(math.lgamma, otypes=[np.float64])


def fwd_lgamma(ins, at):
    """MindSpore's Lgamma: log |Gamma(x)| (infinite at the poles 0, -1, ...)."""
    x = np.asarray(ins[0], dtype=np.float64)
    pole = (x <= 0) & (x == np.floor(x))
    return np.where(pole, np.inf, lgamma(np.where(pole, 1.0, x)))


def bwd_lgamma(g, ins, at):
    """MindSpore's bprop: dy digamma(x)."""
    return [g * digamma(ins[0])]


def zeta(x, q):
    """The Hurwitz zeta function sum over k >= 0 of (k + q)^-x, elementwise in double: 40 terms summed, then
    the tail by Euler-Maclaurin (its first 8 Bernoulli terms); infinite at x == 1 and at q a non-positive
    integer, NaN for x < 1 and for q < 0 with x not an integer (MindSpore's and scipy's)."""
    x, q = np.broadcast_arrays(np.asarray(x, dtype=np.float64), np.asarray(q, dtype=np.float64))
    out = np.empty(x.shape)
    bern = [1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510]
    for i, (s, a) in enumerate(zip(x.ravel(), q.ravel())):
        if s == 1 or (a <= 0 and a == math.floor(a)):
            out.flat[i] = math.inf
            continue
        if not s > 1 or (a < 0 and s != math.floor(s)) or a != a:
            out.flat[i] = math.nan
            continue
        n = 40
        t = sum((k + a) ** -s for k in range(n))
        w = n + a
        t += w ** (1 - s) / (s - 1) + 0.5 * w ** -s
        fac, p = s, w ** (-s - 1)
        for j, b in enumerate(bern):
            t += b / math.factorial(2 * j + 2) * fac * p
            fac *= (s + 2 * j + 1) * (s + 2 * j + 2)
            p /= w * w
        out.flat[i] = t
    return out


def fwd_zeta(ins, at):
    return zeta(ins[0], ins[1])


def bwd_zeta(g, ins, at):
    """MindSpore's bprop: none to x (zeros), -x zeta(x + 1, q) dy to q."""
    a, b = ins
    with np.errstate(all="ignore"):
        db = -a * zeta(a + 1, b) * g
    return [unbroadcast(np.zeros_like(g), a.shape), unbroadcast(db, b.shape)]


def fwd_next_after(ins, at):
    """The next Float32 after x toward y (numpy's nextafter in float32)."""
    return np.nextafter(np.float32(ins[0]), np.float32(ins[1])).astype(np.float64)


def bwd_next_after(g, ins, at):
    """MindSpore's bprop: dy to x, zeros to y."""
    return [unbroadcast(g, ins[0].shape), unbroadcast(np.zeros_like(g), ins[1].shape)]


def int_operands(op, ins):
    for x in ins:
        if x.dtype.kind not in "iu":
            raise OpError("%s takes Int32 or Int64 operands" % op)
    return [np.asarray(x, dtype=np.int64) for x in ins]


def int_math(op):
    """MindSpore's Invert, PopulationCount, LeftShift, RightShift on two's complement integers of the operand's
    width (the result x's type): a shift count is first taken modulo the width where its size exceeds it
    (MindSpore's CPU kernels), then one below 0 or at the width gives 0 (left) or x's sign (right)."""
    def fwd(ins, at):
        bits = 64 if at.get("@dtype") == "Int64" else 32
        a = int_operands(op, ins)
        x = a[0]
        if op == "Invert":
            r = ~x
        elif op == "PopulationCount":
            u = x.astype(np.uint64) & np.uint64((1 << bits) - 1)
            r = np.zeros(x.shape, dtype=np.int64)
            for k in range(bits):
                r += ((u >> np.uint64(k)) & np.uint64(1)).astype(np.int64)
        else:
            x, s = np.broadcast_arrays(x, a[1])
            s = np.where(np.abs(s) > bits, np.fmod(s, bits), s)
            out = (s < 0) | (s >= bits)
            sc = np.where(out, 0, s).astype(np.uint64)
            if op == "LeftShift":
                u = (x.astype(np.uint64) << sc) & np.uint64((1 << bits) - 1)
                r = u.astype(np.int64)
                if bits == 32:
                    r = np.where(r >= 1 << 31, r - (1 << 32), r)
                r = np.where(out, 0, r)
            else:
                r = np.where(out, np.where(x < 0, -1, 0), x >> sc.astype(np.int64))
        return np.asarray(r).astype(ins[0].dtype)
    return fwd


def bwd_integer(g, ins, at):
    """Integers carry no gradient."""
    return [None] * len(ins)


def fwd_reverse_v2(ins, at):
    """MindSpore's ReverseV2: x reversed along the dims axis names."""
    x = ins[0]
    axes = at.get("axis")
    axes = [axes] if type(axes) is int else list(axes or [])
    if not axes or any(type(a) is not int or not -x.ndim <= a < x.ndim for a in axes):
        raise OpError("axis must name dims of %s" % (x.shape,))
    return np.flip(x, axis=tuple(a % x.ndim for a in axes))


def bwd_reverse_v2(g, ins, at):
    """MindSpore's bprop: dy reversed alike."""
    return [fwd_reverse_v2([g], at)]


def trace_axes(x, at):
    a1, a2 = at.get("axis1", 1), at.get("axis2", 0)
    if x.ndim < 2 or not -x.ndim <= a1 < x.ndim or not -x.ndim <= a2 < x.ndim or a1 % x.ndim == a2 % x.ndim:
        raise OpError("axis1 and axis2 must be two different dims of %s" % (x.shape,))
    return at.get("offset", 0), a1 % x.ndim, a2 % x.ndim


def fwd_trace_v2(ins, at):
    """MindSpore's TraceV2 (numpy's trace): the sums of x[.., i, .., i + offset, ..], i along axis1 (MindSpore's
    defaults offset 0, axis1 1, axis2 0)."""
    off, a1, a2 = trace_axes(ins[0], at)
    return np.trace(np.asarray(ins[0], dtype=np.float64), off, a1, a2)


def bwd_trace_v2(g, ins, at):
    """TraceV2Grad: dy on the diagonals of zeros."""
    x = ins[0]
    off, a1, a2 = trace_axes(x, at)
    dx = np.zeros(x.shape)
    v = np.moveaxis(dx, (a1, a2), (-2, -1))
    n1, n2 = v.shape[-2], v.shape[-1]
    for i in range(n1):
        if 0 <= i + off < n2:
            v[..., i, i + off] = g
    return [dx]


def fwd_acos(ins, at):
    return np.arccos(ins[0])


def bwd_acos(g, ins, at):
    return [-g / np.sqrt(1.0 - ins[0] ** 2)]


def fwd_asin(ins, at):
    return np.arcsin(ins[0])


def bwd_asin(g, ins, at):
    return [g / np.sqrt(1.0 - ins[0] ** 2)]


def fwd_atanh(ins, at):
    return np.arctanh(ins[0])


def bwd_atanh(g, ins, at):
    return [g / (1.0 - ins[0] ** 2)]


def fwd_asinh(ins, at):
    return np.arcsinh(ins[0])


def bwd_asinh(g, ins, at):
    return [g / np.sqrt(ins[0] ** 2 + 1.0)]


def fwd_acosh(ins, at):
    return np.arccosh(ins[0])


def bwd_acosh(g, ins, at):
    return [g / np.sqrt(ins[0] ** 2 - 1.0)]


def elu_alpha(at):
    alpha = attr_number(at, "alpha", 1.0)
    if alpha != 1:
        raise OpError("Elu's alpha must be 1.0 (MindSpore's only value)")
    return alpha


def fwd_elu(ins, at):
    x = ins[0]
    return np.where(x > 0, x, elu_alpha(at) * np.expm1(np.minimum(x, 0.0)))


def bwd_elu(g, ins, at):
    x = ins[0]                                    # x < 0: alpha e^x (MindSpore's EluGrad, y + alpha)
    return [np.where(x < 0, g * elu_alpha(at) * np.exp(np.minimum(x, 0.0)), g)]


SELU_SCALE, SELU_ALPHA = 1.0507009873554804934193349852946, 1.6732632423543772848170429916717


def fwd_selu(ins, at):
    x = ins[0]
    return SELU_SCALE * np.where(x > 0, x, SELU_ALPHA * np.expm1(np.minimum(x, 0.0)))


def bwd_selu(g, ins, at):
    """MindSpore's bprop: scale EluGrad(dy, y), scale dy (y + 1) where y < 0 (not the slope scale alpha e^x)."""
    y = fwd_selu(ins, at)
    return [SELU_SCALE * np.where(y < 0, g * (y + 1.0), g)]


def fwd_mish(ins, at):
    x = ins[0]
    return x * np.tanh(np.logaddexp(0.0, x))


def bwd_mish(g, ins, at):
    x = ins[0]
    th = np.tanh(np.logaddexp(0.0, x))
    return [g * (th + x * (1.0 - th * th) / (1.0 + np.exp(-x)))]


def fwd_log_sigmoid(ins, at):
    return -np.logaddexp(0.0, -ins[0])


def bwd_log_sigmoid(g, ins, at):
    return [g / (1.0 + np.exp(ins[0]))]


def fwd_zeros_like(ins, at):
    return np.zeros_like(ins[0])


def fwd_ones_like(ins, at):
    return np.ones_like(ins[0])


def bwd_zero(g, ins, at):
    """Floor, Ceil, Round, Rint, Sign, ZerosLike, OnesLike: MindSpore's zero gradient."""
    return [np.zeros_like(ins[0])]


def fwd_square(ins, at):
    return ins[0] * ins[0]


def bwd_square(g, ins, at):
    return [2.0 * ins[0] * g]


def fwd_select(ins, at):
    c, x, y = ins
    if c.dtype != np.bool_:
        raise OpError("the condition must be Bool")
    if not c.shape == x.shape == y.shape:
        raise OpError("the condition, x and y must have one shape; they are %s, %s and %s" % (c.shape, x.shape,
                                                                                            y.shape))
    return np.where(c, x, y)


def bwd_select(g, ins, at):
    c = ins[0]
    return [None, np.where(c, g, 0.0), np.where(c, 0.0, g)]


def rotate(x, mode):
    """RoPE's rotation of x's last dim: mode 0 rotate-half (-x2, x1), mode 1 the
    interleaved pairs (x0, x1) -> (-x1, x0)."""
    if mode == 0:
        h = x.shape[-1] // 2
        return np.concatenate([-x[..., h:], x[..., :h]], axis=-1)
    r = np.empty_like(x)
    r[..., 0::2] = -x[..., 1::2]
    r[..., 1::2] = x[..., 0::2]
    return r


def rotary_mode(ins, at):
    mode = attr_int(at, "mode", 0)
    if mode not in (0, 1):
        raise OpError("mode is 0 (rotate-half) or 1 (interleaved pairs), not %d" % mode)
    x, c, s = ins
    if x.ndim != 4 or x.shape[-1] % 2:
        raise OpError("x must be 4-D with an even last dim, got %s" % (x.shape,))
    for t in (c, s):
        if t.ndim != 4 or t.shape[-1] != x.shape[-1] or any(d not in (1, e) for d, e in zip(t.shape, x.shape)):
            raise OpError("cos and sin must broadcast to x %s, got %s" % (x.shape, t.shape))
    return mode


def fwd_rotary(ins, at):
    mode = rotary_mode(ins, at)
    x, c, s = ins
    return x * c + rotate(x, mode) * s


def bwd_rotary(g, ins, at):
    mode = rotary_mode(ins, at)
    x, c, s = ins
    return [g * c - rotate(g * s, mode), unbroadcast(g * x, c.shape), unbroadcast(g * rotate(x, mode), s.shape)]


def flash_layout(at):
    layout = at.get("input_layout", "BNSD")
    if layout not in ("BNSD", "BSND", "BSH"):
        raise OpError("input_layout is \"BNSD\", \"BSND\" or \"BSH\"")
    return layout


def to_bnsd(x, layout, heads):
    """An operand in input_layout's order as (B, N, S, D)."""
    if layout == "BSH":
        x = x.reshape(x.shape[:2] + (heads, x.shape[2] // heads))
    return x if layout == "BNSD" else np.swapaxes(x, 1, 2)


def from_bnsd(x, layout):
    """(B, N, S, D) back to input_layout's order."""
    if layout == "BNSD":
        return x
    x = np.swapaxes(x, 1, 2)
    return x.reshape(x.shape[:2] + (-1,)) if layout == "BSH" else x


def flash_bnsd(ins, at):
    """q, k and v as (B, N, S, D): BSH's k and v have head_num's head dim D."""
    layout = flash_layout(at)
    n = attr_int(at, "head_num", -1)
    q = to_bnsd(ins[0], layout, n)
    d = q.shape[3]
    kv = [to_bnsd(x, layout, x.shape[2] // d if layout == "BSH" else None) for x in ins[1:3]]
    return [q] + kv + list(ins[3:])


def flash_hidden(ins, at):
    """FlashAttentionScore's hidden keys, (B or 1, N or 1, S, S_kv) booleans:
    attn_mask nonzero (MindSpore's: 1 masks out), and with sparse_mode 2 or 3
    the keys after each query. ins: q, k and v as (B, N, S, D)."""
    q, k, v = ins[:3]
    if (q.ndim != 4 or k.shape != v.shape or k.shape[0] != q.shape[0] or k.shape[3] != q.shape[3]
            or q.shape[1] % k.shape[1]):
        raise OpError("q (B, N, S, D), k and v (B, N_kv, S_kv, D) with N_kv dividing N, got %s %s %s"
                      % (q.shape, k.shape, v.shape))
    if attr_int(at, "head_num", -1) != q.shape[1]:
        raise OpError("head_num must be q's dim 1")
    if attr_number(at, "keep_prob", 1.0) != 1:
        raise OpError("keep_prob must be 1")
    mode = attr_int(at, "sparse_mode", 0)
    if mode not in (0, 2, 3):
        raise OpError("sparse_mode is 0, 2 or 3")
    s, t = q.shape[2], k.shape[2]
    hidden = np.zeros((1, 1, s, t), dtype=bool)
    if len(ins) == 4:
        m = ins[3]
        hidden = hidden | (m.reshape((1, 1) + m.shape) if m.ndim == 2 else m).astype(bool)
    if mode:
        hidden = hidden | np.triu(np.ones((s, t), dtype=bool), 1)
    return hidden


def kv_heads(x, n):
    """Key or value heads (B, N_kv, S_kv, D) repeated to n query heads:
    query head h reads key head h // (n // N_kv) (grouped-query attention)."""
    return np.repeat(x, n // x.shape[1], axis=1)


def kv_sum(g, nkv):
    """A gradient over the repeated heads (B, N, S_kv, D) summed back to each key head's."""
    b, n = g.shape[:2]
    return g.reshape((b, nkv, n // nkv) + g.shape[2:]).sum(axis=2)


def flash_probs(ins, at):
    """softmax(scale q k^T) over the keys each query sees; rows that see none are 0."""
    q = ins[0]
    hidden = flash_hidden(ins, at)
    k = kv_heads(ins[1], q.shape[1])
    sc = attr_number(at, "scale_value", 1.0) * np.matmul(q, np.swapaxes(k, -1, -2))
    sc = np.where(hidden, -np.inf, sc)
    mx = sc.max(axis=-1, keepdims=True)
    e = np.where(hidden, 0.0, np.exp(sc - np.where(np.isfinite(mx), mx, 0.0)))
    den = e.sum(axis=-1, keepdims=True)
    return e / np.where(den > 0, den, 1.0)


def fwd_flash_attention(ins, at):
    ins = flash_bnsd(ins, at)
    return from_bnsd(np.matmul(flash_probs(ins, at), kv_heads(ins[2], ins[0].shape[1])), flash_layout(at))


def bwd_flash_attention(g, ins, at):
    layout = flash_layout(at)
    ins = flash_bnsd(ins, at)
    g = to_bnsd(g, layout, ins[0].shape[1])
    q, nkv = ins[0], ins[1].shape[1]
    k, v = kv_heads(ins[1], q.shape[1]), kv_heads(ins[2], q.shape[1])
    p = flash_probs(ins, at)
    scale = attr_number(at, "scale_value", 1.0)
    dp = np.matmul(g, np.swapaxes(v, -1, -2))
    ds = p * (dp - (dp * p).sum(axis=-1, keepdims=True))
    grads = [scale * np.matmul(ds, k), kv_sum(scale * np.matmul(np.swapaxes(ds, -1, -2), q), nkv),
             kv_sum(np.matmul(np.swapaxes(p, -1, -2), g), nkv)]
    grads = [from_bnsd(x, layout) for x in grads]
    return grads + [None] * (len(ins) - 3)


def softmax_axis(at, rank):
    return norm_axis(attr_int(at, "axis", -1), rank)


def fwd_softmax(ins, at):
    x = ins[0]
    ax = softmax_axis(at, x.ndim)
    e = np.exp(x - x.max(axis=ax, keepdims=True))
    return e / e.sum(axis=ax, keepdims=True)


def bwd_softmax(g, ins, at):
    y = fwd_softmax(ins, at)
    ax = softmax_axis(at, y.ndim)
    return [y * (g - (g * y).sum(axis=ax, keepdims=True))]


def fwd_log_softmax(ins, at):
    x = ins[0]
    ax = softmax_axis(at, x.ndim)
    s = x - x.max(axis=ax, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=ax, keepdims=True))


def bwd_log_softmax(g, ins, at):
    y = fwd_log_softmax(ins, at)
    ax = softmax_axis(at, y.ndim)
    return [g - np.exp(y) * g.sum(axis=ax, keepdims=True)]


def keep_dims(at):
    return attr_bool(at, "keep_dims")


def expand_reduced(g, x, at):
    """A reduction's gradient with the reduced dims put back (size 1)."""
    axes = reduce_axes(at, x.ndim)
    return g if keep_dims(at) else np.expand_dims(g, axes) if axes else g


def fwd_reduce_sum(ins, at):
    return ins[0].sum(axis=reduce_axes(at, ins[0].ndim), keepdims=keep_dims(at))


def bwd_reduce_sum(g, ins, at):
    x = ins[0]
    return [np.broadcast_to(expand_reduced(g, x, at), x.shape).copy()]


def reduce_count(x, at):
    return int(np.prod([x.shape[a] for a in reduce_axes(at, x.ndim)], dtype=np.int64))


def fwd_reduce_mean(ins, at):
    x = ins[0]
    s = x.sum(axis=reduce_axes(at, x.ndim), keepdims=keep_dims(at))
    n = reduce_count(x, at)
    return s / n if x.dtype.kind == "f" else fwd_div([s, np.int64(n)], at)


def bwd_reduce_mean(g, ins, at):
    x = ins[0]
    return [np.broadcast_to(expand_reduced(g, x, at), x.shape) / reduce_count(x, at)]


def fwd_reduce_max(ins, at):
    return ins[0].max(axis=reduce_axes(at, ins[0].ndim), keepdims=keep_dims(at))


def bwd_reduce_max(g, ins, at):
    x = ins[0]
    axes = reduce_axes(at, x.ndim)
    m = x.max(axis=axes, keepdims=True)
    hit = (x == m).astype(np.float64)              # ties share the gradient evenly
    share = hit / hit.sum(axis=axes, keepdims=True)
    return [share * expand_reduced(g, x, at)]


def fwd_reduce_min(ins, at):
    return ins[0].min(axis=reduce_axes(at, ins[0].ndim), keepdims=keep_dims(at))


def bwd_reduce_min(g, ins, at):
    x = ins[0]
    axes = reduce_axes(at, x.ndim)
    m = x.min(axis=axes, keepdims=True)
    hit = (x == m).astype(np.float64)              # ties share the gradient evenly, as ReduceMax's
    share = hit / hit.sum(axis=axes, keepdims=True)
    return [share * expand_reduced(g, x, at)]


def fwd_reduce_prod(ins, at):
    return ins[0].prod(axis=reduce_axes(at, ins[0].ndim), keepdims=keep_dims(at))


def bwd_reduce_prod(g, ins, at):
    # The product of the other elements (MindSpore's ReduceProd bprop), taken
    # directly: the exclusive products of the reduced elements moved last.
    x = ins[0]
    axes = reduce_axes(at, x.ndim)
    keep = [a for a in range(x.ndim) if a not in axes]
    xt = np.transpose(x, keep + list(axes)).astype(np.float64)
    flat = xt.reshape(xt.shape[:len(keep)] + (-1,))
    n = flat.shape[-1]
    others = np.empty_like(flat)
    for i in range(n):
        others[..., i] = np.prod(np.delete(flat, i, axis=-1), axis=-1)
    others = others.reshape(xt.shape)
    return [np.transpose(others, np.argsort(keep + list(axes))) * expand_reduced(g, x, at)]


def scan_setup(ins, at):
    """x with the scanned axis moved last, in float64, and how to put it back."""
    x = ins[0]
    if "axis" not in at:
        raise OpError("needs the attribute 'axis'")
    ax = norm_axis(attr_int(at, "axis", None), x.ndim)
    return np.moveaxis(x.astype(np.float64), ax, -1), ax


def scan_window(i, n, at):
    """The positions y[i] reads: up to i (from i with reverse), i itself left out when exclusive."""
    ex, rev = attr_bool(at, "exclusive"), attr_bool(at, "reverse")
    w = range(i, n) if rev else range(0, i + 1)
    return [j for j in w if not (ex and j == i)]


def fwd_scan(prod):
    def fwd(ins, at):
        x, ax = scan_setup(ins, at)
        n = x.shape[-1]
        y = np.empty_like(x)
        for i in range(n):   # each element straight from its window (no running sum to share)
            part = x[..., scan_window(i, n, at)]
            y[..., i] = part.prod(axis=-1) if prod else part.sum(axis=-1)
        return np.moveaxis(y, -1, ax)
    return fwd


def bwd_scan(prod):
    # dx[j] = sum over the i whose window holds j of dy[i] d y[i] / d x[j]: 1
    # for CumSum, the product of the window's other elements for CumProd
    # (exact at zeros; MindSpore's divides by x).
    def bwd(g, ins, at):
        x, ax = scan_setup(ins, at)
        gt = np.moveaxis(g.astype(np.float64), ax, -1)
        n = x.shape[-1]
        dx = np.zeros_like(x)
        for i in range(n):
            w = scan_window(i, n, at)
            for j in w:
                others = [m for m in w if m != j]
                d = x[..., others].prod(axis=-1) if prod else 1.0
                dx[..., j] += gt[..., i] * d
        return [np.moveaxis(dx, -1, ax)]
    return bwd


def need_bool(x, op):
    if x.dtype != np.bool_:
        raise OpError("%s reduces a Bool tensor, not %s" % (op, x.dtype))
    return x


def fwd_reduce_all(ins, at):
    return need_bool(ins[0], "ReduceAll").all(axis=reduce_axes(at, ins[0].ndim), keepdims=keep_dims(at))


def fwd_reduce_any(ins, at):
    return need_bool(ins[0], "ReduceAny").any(axis=reduce_axes(at, ins[0].ndim), keepdims=keep_dims(at))


def bwd_bool_result(g, ins, at):
    return [None]                                  # a Bool result carries no gradient


def fwd_reshape(ins, at):
    shape = attr_ints(at, "shape")
    try:
        return ins[0].reshape(shape)
    except ValueError:
        raise OpError("cannot reshape %s to %s" % (ins[0].shape, shape))


def bwd_reshape(g, ins, at):
    return [g.reshape(ins[0].shape)]


def fwd_transpose(ins, at):
    perm = attr_ints(at, "perm")
    if sorted(perm) != list(range(ins[0].ndim)):
        raise OpError("perm %s is not a permutation of the %d dims of %s" % (perm, ins[0].ndim, ins[0].shape))
    return np.transpose(ins[0], perm)


def bwd_transpose(g, ins, at):
    return [np.transpose(g, np.argsort(attr_ints(at, "perm")))]


def fwd_broadcast_to(ins, at):
    x = ins[0]
    shape = attr_ints(at, "shape")
    lead = len(shape) - x.ndim
    if lead < 0:
        raise OpError("%s has more dims than the target %s" % (x.shape, shape))
    target = tuple(x.shape[i - lead] if s == -1 and i >= lead else s for i, s in enumerate(shape))
    if any(s == -1 for s in target):
        raise OpError("-1 in %s names no dim of %s" % (shape, x.shape))
    try:
        return np.broadcast_to(x, target).copy()
    except ValueError:
        raise OpError("%s does not broadcast to %s" % (x.shape, shape))


def bwd_broadcast_to(g, ins, at):
    return [unbroadcast(g, ins[0].shape)]


def tile_multiples(x, at):
    """Tile's multiples lined up with x's dims (either padded with 1s before)."""
    m = attr_ints(at, "multiples")
    if any(i < 1 for i in m):
        raise OpError("each of the multiples %s is at least 1" % (m,))
    r = max(len(m), x.ndim)
    return (1,) * (r - len(m)) + tuple(m), x.reshape((1,) * (r - x.ndim) + x.shape)


def fwd_tile(ins, at):
    m, x = tile_multiples(ins[0], at)
    return np.tile(x, m)


def bwd_tile(g, ins, at):
    m, x = tile_multiples(ins[0], at)
    parts = []   # each dim of g as (repeat, dim of x)
    for i, (k, d) in enumerate(zip(m, x.shape)):
        parts += [k, d]
    g = g.reshape(parts).sum(axis=tuple(range(0, len(parts), 2)))
    return [g.reshape(ins[0].shape)]


def triangle(upper):
    """MindSpore's Tril (upper False) and Triu: x's last two dims kept on and below
    (above) the diagonal-th diagonal, zeros elsewhere; the gradient is the same mask
    on dy (MindSpore's bprop)."""
    def mask(x, at):
        if x.ndim < 2:
            raise OpError("x has %d dims; it needs two or more" % x.ndim)
        return (np.triu if upper else np.tril)(x, attr_int(at, "diagonal", 0))
    return (lambda ins, at: mask(ins[0], at)), (lambda g, ins, at: [mask(g, at)])


def fwd_one_hot(ins, at):
    idx, on, off = ins
    if idx.dtype.kind not in "iu":
        raise OpError("the indices are %s; they must be Int32 or Int64" % idx.dtype)
    if "depth" not in at:
        raise OpError("needs the attribute 'depth'")
    depth = attr_int(at, "depth", None)
    if depth < 1:
        raise OpError("depth is at least 1")
    axis = norm_axis(attr_int(at, "axis", -1), idx.ndim + 1)
    hit = np.expand_dims(idx, axis) == np.arange(depth).reshape([-1 if i == axis else 1 for i in range(idx.ndim + 1)])
    return np.where(hit, on, off)   # an index outside [0, depth) hits nothing: a row of off_value


def bwd_one_hot(g, ins, at):
    return [None, None, None]   # MindSpore's: no gradient


def fwd_expand_dims(ins, at):
    x = ins[0]
    return np.expand_dims(x, norm_axis(attr_int(at, "axis", None), x.ndim + 1))


def fwd_squeeze(ins, at):
    x = ins[0]
    v = at.get("axis", ())
    axes = tuple(norm_axis(a, x.ndim) for a in (v if isinstance(v, tuple) else (v,)))
    if any(x.shape[a] != 1 for a in axes):
        raise OpError("only dims of size 1 can be squeezed: axis %s of %s" % (v, x.shape))
    return np.squeeze(x, axis=axes if axes else None)


def bwd_view(g, ins, at):
    """The views that add or drop dims of size 1: the gradient in the input's shape."""
    return [g.reshape(ins[0].shape)]


def fwd_flatten(ins, at):
    x = ins[0]
    if x.ndim < 1:
        raise OpError("needs a tensor of rank 1 or more")
    return x.reshape(x.shape[0], -1)


def bwd_flatten(g, ins, at):
    return [g.reshape(ins[0].shape)]


def gather_rows(ins, at):
    """The axis, each index's entry along it (0 where outside) and which are inside."""
    table, idx = ins
    if table.ndim < 1 or idx.dtype.kind not in "iu":
        raise OpError("needs a table of rank 1 or more and integer indices")
    axis = attr_int(at, "axis", 0)
    if not -table.ndim <= axis < table.ndim:
        raise OpError("axis %d is not a dim of a table of rank %d" % (axis, table.ndim))
    axis %= table.ndim
    rows = idx.astype(np.int64) - attr_int(at, "offset", 0)
    valid = (rows >= 0) & (rows < table.shape[axis])
    return axis, np.where(valid, rows, 0), valid


def fwd_gather(ins, at):
    table = ins[0]
    axis, rows, valid = gather_rows(ins, at)
    out = np.take(table, rows, axis=axis)
    mask = valid.reshape((1,) * axis + valid.shape + (1,) * (table.ndim - axis - 1))
    return np.where(mask, out, 0)


def bwd_gather(g, ins, at):
    table = ins[0]
    axis, rows, valid = gather_rows(ins, at)
    dt = np.zeros(table.shape)
    # the index dims of g and the gathered dim of dt first, then the rest in order
    gi = np.moveaxis(g, list(range(axis, axis + rows.ndim)), list(range(rows.ndim)))
    np.add.at(np.moveaxis(dt, axis, 0), rows[valid], gi[valid])
    return [dt, None]


def embedding_lookup_check(ins):
    """MindSpore's EmbeddingLookup: a table of 1 or 2 dims, indices of one dim or more (Gather's on axis 0 then)."""
    table, idx = ins
    if not 1 <= table.ndim <= 2 or idx.ndim < 1:
        raise OpError("needs a table of 1 or 2 dims and indices of one dim or more")


def fwd_embedding_lookup(ins, at):
    embedding_lookup_check(ins)
    return fwd_gather(ins, {"offset": attr_int(at, "offset", 0)})


def bwd_embedding_lookup(g, ins, at):
    embedding_lookup_check(ins)
    return bwd_gather(g, ins, {"offset": attr_int(at, "offset", 0)})


def gather_d_parts(ins, at):
    """GatherD's dim, the index made valid (0 where outside x's dim) and which are inside."""
    x, idx = ins
    if idx.dtype.kind not in "iu" or idx.ndim != x.ndim or x.ndim < 1:
        raise OpError("needs an integer index of x's rank")
    if "dim" not in at:
        raise OpError("needs the attribute 'dim'")
    dim = norm_axis(attr_int(at, "dim", None), x.ndim)
    if any(i > s for d, (i, s) in enumerate(zip(idx.shape, x.shape)) if d != dim):
        raise OpError("the index %s is larger than x %s off dim %d" % (idx.shape, x.shape, dim))
    rows = idx.astype(np.int64) - attr_int(at, "offset", 0)   # offset: x is the slice of its dim from there
    valid = (rows >= 0) & (rows < x.shape[dim])
    return dim, np.where(valid, rows, 0), valid


def gather_d_where(idx, dim, rows):
    """The coordinates in x of each element of the index: its own, rows along dim."""
    grid = list(np.indices(idx.shape))
    grid[dim] = rows
    return tuple(grid)


def fwd_gather_d(ins, at):
    x, idx = ins
    dim, rows, valid = gather_d_parts(ins, at)
    return np.where(valid, x[gather_d_where(idx, dim, rows)], 0).astype(x.dtype)


def bwd_gather_d(g, ins, at):
    x, idx = ins
    dim, rows, valid = gather_d_parts(ins, at)
    dx = np.zeros(x.shape)
    np.add.at(dx, tuple(c[valid] for c in gather_d_where(idx, dim, rows)), g[valid])
    return [dx, None]


def nd_parts(x, idx, name):
    """GatherNd's and the tensor scatters' indices as (m, n) and x's first n dims
    flattened into rows: the rows they name, (m,). An index outside x is an
    error, as the runtime's."""
    if idx.dtype.kind not in "iu" or idx.ndim < 1 or x.ndim < 1:
        raise OpError("needs integer indices of one dim or more and an x of one or more")
    n = idx.shape[-1]
    if not 1 <= n <= x.ndim:
        raise OpError("the indices have %d coordinates each; x has %d dims" % (n, x.ndim))
    flat = idx.reshape(-1, n).astype(np.int64)
    bad = np.any((flat < 0) | (flat >= np.array(x.shape[:n])), axis=1)
    if bad.any():
        raise OpError("%s: index %s lies outside x's indexed dims %s" % (name, tuple(flat[bad][0]), x.shape[:n]))
    return np.ravel_multi_index(tuple(flat.T), x.shape[:n]) if n else np.zeros(len(flat), np.int64)


def nd_slices(x, idx):
    """x as (rows, inner): its first n dims flattened, n the indices' last dim."""
    return x.reshape((-1,) + x.shape[idx.shape[-1]:])


def fwd_gather_nd(ins, at):
    x, idx = ins
    rows = nd_parts(x, idx, "GatherNd")
    return nd_slices(x, idx)[rows].reshape(idx.shape[:-1] + x.shape[idx.shape[-1]:])


def bwd_gather_nd(g, ins, at):
    """MindSpore's bprop: ScatterNd of dy into zeros of x's shape, repeated indices adding up."""
    x, idx = ins
    rows = nd_parts(x, idx, "GatherNd")
    dx = np.zeros(x.shape)
    np.add.at(nd_slices(dx, idx), rows, g.reshape((len(rows),) + x.shape[idx.shape[-1]:]))
    return [dx, None]


SCATTER_APPLY = {"Update": lambda a, u: u, "Add": np.add, "Sub": np.subtract, "Mul": np.multiply,
                 "Div": np.divide, "Max": np.fmax, "Min": np.fmin}


def tensor_scatter(kind):
    """TensorScatterUpdate, Add, Sub, Mul, Div, Max, Min: x with the slices the
    indices name set to (plus, less, times, divided by, the larger of, the
    smaller of) updates, the indices in order (the last of repeated ones wins
    an update, as shardc's kernels do), and MindSpore's bprops: x's gradient
    dy (Update: the replaced slices zeroed; Mul, Div: TensorScatterMul/Div of
    dy by the updates; Max, Min: dy where x won, shared by the ties), updates'
    dy's slices (Sub: negated; Mul: times x's; Div: times -x / u^2; Max, Min:
    where the update won, shared by the ties: TensorScatterPossibleReplacement).
    Mul's and Div's updates' gradients read x, not the other updates to a
    repeated slice, as MindSpore's do."""
    def parts(ins):
        x, idx, upd = ins
        rows = nd_parts(x, idx, "TensorScatter" + kind)
        want = idx.shape[:-1] + x.shape[idx.shape[-1]:]
        if upd.shape != want:
            raise OpError("updates %s must be %s" % (upd.shape, want))
        return x, idx, rows, upd.reshape((len(rows),) + x.shape[idx.shape[-1]:])

    def apply(x, idx, rows, upd):
        y = np.array(x, copy=True)
        ys = nd_slices(y, idx)
        for i, r in enumerate(rows):
            ys[r] = SCATTER_APPLY[kind](ys[r], upd[i])
        return y

    def fwd(ins, at):
        return apply(*parts(ins))

    def bwd(g, ins, at):
        x, idx, rows, upd = parts(ins)
        g = np.asarray(g, dtype=np.float64)
        gs, xs = nd_slices(g, idx)[rows], nd_slices(np.asarray(x, dtype=np.float64), idx)[rows]
        if kind in ("Max", "Min"):
            y = apply(x, idx, rows, upd)
            won = (x == y).astype(np.float64)
            up_won = (upd == nd_slices(y, idx)[rows]).astype(np.float64)
            ties = np.array(won, copy=True)
            np.add.at(nd_slices(ties, idx), rows, up_won)
            share = np.where(ties > 0, g / np.maximum(ties, 1), 0.0)   # no ties (NaNs): 0, as the kernels
            dx = share * won
            du = nd_slices(share, idx)[rows] * up_won
        else:
            dx = np.array(g, copy=True)
            if kind == "Update":
                nd_slices(dx, idx)[rows] = 0
            elif kind in ("Mul", "Div"):
                dx = apply(dx, idx, rows, upd.astype(np.float64))
            du = -gs if kind == "Sub" else xs * gs if kind == "Mul" else gs * (xs / -(upd * upd)) \
                if kind == "Div" else gs
        return [dx, None, du.reshape(ins[2].shape)]
    return fwd, bwd


def state_scatter(kind, nd):
    """ScatterUpdate .. ScatterMin (nd False: the indices name x's dim 0, updates
    indices.shape + x.shape[1:]) and ScatterNdUpdate, Add, Sub (nd True): the
    tensor scatter's result, which also becomes x (forward() writes it back:
    x is state). MindSpore's bprops: updates' gradient dy's slices at the
    indices (Sub's negated), not masked by which update won; none for Mul
    and Div (MindSpore registers none; shardc refuses a model needing it);
    none for x, the state."""
    fwd_ts, bwd_ts = tensor_scatter(kind)

    def as_nd(ins):
        x, idx, upd = ins
        return [x, idx if nd else np.asarray(idx)[..., None], upd]

    def fwd(ins, at):
        return fwd_ts(as_nd(ins), at)

    def bwd(g, ins, at):
        if kind in ("Mul", "Div"):
            return [None, None, None]
        return [None, None, tensor_scatter("Sub" if kind == "Sub" else "Add")[1](g, as_nd(ins), at)[2]]
    return fwd, bwd


STATE_OPS = ("ScatterUpdate", "ScatterAdd", "ScatterSub", "ScatterMul", "ScatterDiv", "ScatterMax", "ScatterMin",
             "ScatterNdUpdate", "ScatterNdAdd", "ScatterNdSub", "AssignAdd", "AssignSub")   # x (operand 0) is state


def inplace(kind):
    """InplaceAdd, InplaceSub, InplaceUpdate(x, v) {indices}: x with the rows of its dim 0
    that indices names plus, less, replaced by v's rows (v (len(indices),) + x.shape[1:]);
    functional. MindSpore's bprops return zeros for both."""
    def fwd(ins, at):
        x, v = ins
        idx = at.get("indices")
        if isinstance(idx, int):
            idx = (idx,)
        if not isinstance(idx, (list, tuple)) or not idx:
            raise OpError("indices is a row or a tuple of rows")
        if v.shape != (len(idx),) + x.shape[1:]:
            raise OpError("v %s must be %s" % (v.shape, (len(idx),) + x.shape[1:]))
        return tensor_scatter(kind)[0]([x, np.array(idx, dtype=np.int64)[:, None], v], at)

    def bwd(g, ins, at):
        return [np.zeros(ins[0].shape), np.zeros(ins[1].shape)]
    return fwd, bwd


def fwd_assign(sign):
    """AssignAdd, AssignSub: x plus or less value broadcast to x's shape (the result, and x's new value)."""
    def fwd(ins, at):
        x, v = ins
        if np.broadcast_shapes(x.shape, v.shape) != x.shape:
            raise OpError("value %s does not broadcast to x's shape %s" % (v.shape, x.shape))
        return x + sign * v
    return fwd


SEGMENT_BIG = {"Float32": float(np.finfo(np.float32).max), "Float16": 65504.0, "BFloat16": 3.3895313892515355e38}


def segment_parts(ins, at):
    """x as (rows, inner) in float64, the ids (rows,) made valid (0 where dropped), which are kept, S."""
    x, ids = ins
    if ids.dtype.kind not in "iu" or not 1 <= ids.ndim <= x.ndim or x.shape[:ids.ndim] != ids.shape:
        raise OpError("segment_ids must be integers with x's first dims")
    if "num_segments" not in at:
        raise OpError("needs the attribute 'num_segments'")
    segs = attr_int(at, "num_segments", None)
    if segs < 1:
        raise OpError("num_segments must be at least 1")
    flat = ids.reshape(-1).astype(np.int64)
    valid = (flat >= 0) & (flat < segs)
    return x.reshape(flat.size, -1).astype(np.float64), np.where(valid, flat, 0), valid, segs


def segment_reduce(kind, x2, ids, valid, segs, dtype):
    """Row s: the rows of x2 whose id is s reduced (numpy's ufunc.at); an empty segment MindSpore's value."""
    big = SEGMENT_BIG.get(dtype, SEGMENT_BIG["Float32"])
    init = {"Sum": 0.0, "Prod": 1.0, "Max": -big, "Min": big}[kind]
    y = np.full((segs, x2.shape[1]), init)
    ufunc = {"Sum": np.add, "Prod": np.multiply, "Max": np.maximum, "Min": np.minimum}[kind]
    ufunc.at(y, ids[valid], x2[valid])
    return y


def fwd_segment(kind):
    def fwd(ins, at):
        x2, ids, valid, segs = segment_parts(ins, at)
        y = segment_reduce(kind, x2, ids, valid, segs, at.get("@dtype", "Float32"))
        return y.reshape((segs,) + ins[0].shape[ins[1].ndim:])
    return fwd


def bwd_segment(kind):
    """MindSpore's bprops: Sum dy gathered by the ids; Max/Min dy to the rows equal to their segment's result,
    divided among the ties; Prod dy times the others' product (out / x, the nonzero product at the one zero, 0
    with two zeros or more); 0 for a dropped id; the ids get none."""
    def bwd(g, ins, at):
        x2, ids, valid, segs = segment_parts(ins, at)
        g2 = np.asarray(g, dtype=np.float64).reshape(segs, -1)
        keep = valid[:, None]
        if kind == "Sum":
            dx = np.where(keep, g2[ids], 0.0)
        elif kind in ("Max", "Min"):
            y = segment_reduce(kind, x2, ids, valid, segs, at.get("@dtype", "Float32"))
            sel = keep & (x2 == y[ids])
            ties = segment_reduce("Sum", sel.astype(np.float64), ids, valid, segs, "Float32")
            dx = np.where(sel, g2[ids] / np.where(sel, ties[ids], 1.0), 0.0)
        else:
            zero = x2 == 0
            zeros = segment_reduce("Sum", zero.astype(np.float64), ids, valid, segs, "Float32")
            grad = np.where(zeros > 1, 0.0, g2)
            nonzero = segment_reduce("Prod", np.where(zero, 1.0, x2), ids, valid, segs, "Float32")
            out = segment_reduce("Prod", x2, ids, valid, segs, "Float32")
            with np.errstate(all="ignore"):
                partial = np.where(zero, nonzero[ids], out[ids] / np.where(zero, 1.0, x2))
            dx = np.where(keep, grad[ids] * partial, 0.0)
        return [dx.reshape(ins[0].shape), None]
    return bwd


def l2_normalize_parts(ins, at):
    x = ins[0]
    v = at.get("axis", 0)
    if isinstance(v, tuple):
        if len(v) != 1:
            raise OpError("takes one axis")
        v = v[0]
    if x.ndim < 1:
        raise OpError("needs a tensor of rank 1 or more")
    axis = norm_axis(v, x.ndim)
    eps = at.get("epsilon", 1e-4)
    if type(eps) not in (int, float):
        raise OpError("epsilon is a number")
    s = (x.astype(np.float64) ** 2).sum(axis=axis, keepdims=True)
    return x, axis, s, np.sqrt(np.maximum(s, eps)), s >= eps


def fwd_l2_normalize(ins, at):
    x, _, _, r, _ = l2_normalize_parts(ins, at)
    return x / r


def bwd_l2_normalize(g, ins, at):
    # MindSpore's: where the sum of squares is below epsilon the norm is constant
    x, axis, _, r, through = l2_normalize_parts(ins, at)
    dot = (g * x).sum(axis=axis, keepdims=True)
    return [g / r - np.where(through, x * dot / r ** 3, 0)]


def lp_norm_parts(ins, at):
    """MindSpore's LpNorm: (x, axes, p, the norm before epsilon with the reduced dims kept, epsilon)."""
    if "axis" not in at:
        raise OpError("needs the attribute 'axis'")
    x, p, eps = ins[0], at.get("p", 2), at.get("epsilon", 1e-12)
    if type(p) is not int or not 1 <= p <= 64:
        raise OpError("p is an integer from 1 to 64")
    axes = reduce_axes(at, x.ndim)
    n = (np.abs(x) ** p).sum(axis=axes, keepdims=True) ** (1.0 / p)
    return x, axes, p, n, eps


def fwd_lp_norm(ins, at):
    """max((sum |x|^p)^(1/p), epsilon) over axis."""
    _, axes, _, n, eps = lp_norm_parts(ins, at)
    out = np.maximum(n, eps)
    return out if keep_dims(at) else out.squeeze(axis=axes)


def bwd_lp_norm(g, ins, at):
    """dx = dy x |x|^(p-2) / n^(p-1) where the norm n is above epsilon (0 where x is 0), else 0."""
    x, axes, p, n, eps = lp_norm_parts(ins, at)
    g = g if keep_dims(at) else np.expand_dims(g, axes)
    with np.errstate(divide="ignore", invalid="ignore"):
        slope = np.sign(x) * np.abs(x) ** (p - 1) / n ** (p - 1)
    return [np.where(n > eps, g * np.nan_to_num(slope), 0)]


def clip_by_norm_parts(ins, at):
    """MindSpore's ClipByNorm: (x, clip_norm, the L2 norm over axis with its dims kept, max(l2, clip_norm))."""
    x, c = ins
    l2 = np.sqrt((x * x).sum(axis=reduce_axes(at, x.ndim), keepdims=True))
    return x, c, l2, np.maximum(l2, c)


def fwd_clip_by_norm(ins, at):
    """x clip_norm / max(l2norm(x, axis), clip_norm)."""
    x, c, _, m = clip_by_norm_parts(ins, at)
    return x * c / m


def bwd_clip_by_norm(g, ins, at):
    """Through the quotient: the norm's share where it is above clip_norm (and not 0), clip_norm's where it is
    the larger (ties: Maximum's split, half to each)."""
    x, c, l2, m = clip_by_norm_parts(ins, at)
    axes = reduce_axes(at, x.ndim)
    tie = np.where(l2 == c, 0.5, 1.0)
    wl, wc = np.where(l2 >= c, tie, 0.0), np.where(c >= l2, tie, 0.0)
    dm = -(g * x * c).sum(axis=axes, keepdims=True) / (m * m)     # d out / d max, summed over the norm's elements
    with np.errstate(divide="ignore", invalid="ignore"):
        dx = g * c / m + np.where(l2 > 0, dm * wl * x / l2, 0)
    dc = g * x / m + dm * wc
    return [dx, unbroadcast(dc, c.shape)]


def fwd_iou(ins, at):
    """MindSpore's IOU (its CPU kernel): out[m, n] the overlap of gt box m and anchor box n, sides x1 - x0 + 1,
    over the union (mode "iou") or gt box m's area ("iof"), plus 1e-10."""
    a, g = ins
    mode = at.get("mode", "iou")
    if mode not in ("iou", "iof"):
        raise OpError("mode is \"iou\" or \"iof\"")
    if a.ndim != 2 or g.ndim != 2 or a.shape[1] != 4 or g.shape[1] != 4:
        raise OpError("anchor_boxes and gt_boxes are (N, 4) and (M, 4)")
    a, g = a[None, :, :], g[:, None, :]
    w = np.maximum(0, np.minimum(a[..., 2], g[..., 2]) - np.maximum(a[..., 0], g[..., 0]) + 1)
    h = np.maximum(0, np.minimum(a[..., 3], g[..., 3]) - np.maximum(a[..., 1], g[..., 1]) + 1)
    over = w * h
    area_a = (a[..., 2] - a[..., 0] + 1) * (a[..., 3] - a[..., 1] + 1)
    area_g = (g[..., 2] - g[..., 0] + 1) * (g[..., 3] - g[..., 1] + 1)
    return over / ((area_g + 1e-10) if mode == "iof" else (area_a + area_g - over + 1e-10))


def layer_norm_parts(ins, at):
    x, gamma, beta = ins
    norm = norm_axis(attr_int(at, "begin_norm_axis", -1), x.ndim)
    params = norm_axis(attr_int(at, "begin_params_axis", -1), x.ndim)
    eps = at.get("epsilon", 1e-5)
    if type(eps) not in (int, float):
        raise OpError("epsilon is a number")
    if gamma.shape != x.shape[params:] or beta.shape != x.shape[params:]:
        raise OpError("gamma and beta must have x's dims from begin_params_axis, %s" % (x.shape[params:],))
    axes = tuple(range(norm, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)     # biased
    rstd = 1.0 / np.sqrt(var + eps)
    return x, gamma, beta, axes, params, (x - mean) * rstd, rstd


def fwd_layer_norm(ins, at):
    _, gamma, beta, _, _, xhat, _ = layer_norm_parts(ins, at)
    return xhat * gamma + beta


def bwd_layer_norm(g, ins, at):
    x, gamma, _, axes, params, xhat, rstd = layer_norm_parts(ins, at)
    lead = tuple(range(params))
    dxhat = g * gamma
    dx = rstd * (dxhat - dxhat.mean(axis=axes, keepdims=True) - xhat * (dxhat * xhat).mean(axis=axes, keepdims=True))
    return [dx, (g * xhat).sum(axis=lead), g.sum(axis=lead)]


def batch_norm_parts(ins, at):
    x, scale, bias, mean, var = ins
    if x.ndim not in (2, 4):
        raise OpError("x must be (N, C) or (N, C, H, W), not %s" % (x.shape,))
    c = x.shape[1]
    if any(t.shape != (c,) for t in ins[1:]):
        raise OpError("scale, bias, mean and variance must be (C,) = (%d,)" % c)
    eps = attr_number(at, "epsilon", 1e-5)
    axes = (0,) + tuple(range(2, x.ndim))
    shape = (1, c) + (1,) * (x.ndim - 2)
    if attr_bool(at, "is_training"):
        m = x.mean(axis=axes, keepdims=True)
        v = ((x - m) ** 2).mean(axis=axes, keepdims=True)     # biased
    else:
        m, v = mean.reshape(shape), var.reshape(shape)
    rstd = 1.0 / np.sqrt(v + eps)
    return x, scale.reshape(shape), bias.reshape(shape), axes, m, v, rstd


def fwd_batch_norm(ins, at):
    x, scale, bias, _, m, _, rstd = batch_norm_parts(ins, at)
    return (x - m) * rstd * scale + bias


def bwd_batch_norm(g, ins, at):
    x, scale, _, axes, m, _, rstd = batch_norm_parts(ins, at)
    xhat = (x - m) * rstd
    dxhat = g * scale
    if attr_bool(at, "is_training"):   # through the batch's statistics
        dx = rstd * (dxhat - dxhat.mean(axis=axes, keepdims=True) - xhat * (dxhat * xhat).mean(axis=axes, keepdims=True))
    else:
        dx = dxhat * rstd
    return [dx, (g * xhat).sum(axis=axes), g.sum(axis=axes), None, None]


def batch_norm_moving(ins, at):
    """The moving mean and variance after a training forward pass (MindSpore's kernels' update)."""
    x, _, _, _, m, v, _ = batch_norm_parts(ins, at)
    momentum = attr_number(at, "momentum", 0.1)
    count = x.size // x.shape[1]
    return [(1 - momentum) * ins[3] + momentum * m.reshape(-1),
            (1 - momentum) * ins[4] + momentum * v.reshape(-1) * count / (count - 1)]


def rms_norm_parts(ins, at):
    x, gamma = ins
    if gamma.ndim < 1 or gamma.ndim > x.ndim or gamma.shape != x.shape[x.ndim - gamma.ndim:]:
        raise OpError("gamma must have x's last dims, got %s for x %s" % (gamma.shape, x.shape))
    eps = at.get("epsilon", 1e-6)
    if type(eps) not in (int, float):
        raise OpError("epsilon is a number")
    axes = tuple(range(x.ndim - gamma.ndim, x.ndim))
    rstd = 1.0 / np.sqrt((x * x).mean(axis=axes, keepdims=True) + eps)
    return x, gamma, axes, rstd


def fwd_rms_norm(ins, at):
    x, gamma, _, rstd = rms_norm_parts(ins, at)
    return x * rstd * gamma


def bwd_rms_norm(g, ins, at):
    x, gamma, axes, rstd = rms_norm_parts(ins, at)
    xhat = x * rstd
    dxhat = g * gamma
    dx = rstd * (dxhat - xhat * (dxhat * xhat).mean(axis=axes, keepdims=True))
    return [dx, (g * xhat).sum(axis=tuple(range(x.ndim - gamma.ndim)))]


def concat_axis(ins, at):
    return norm_axis(attr_int(at, "axis", 0), ins[0].ndim)


def fwd_add_n(ins, at):
    if any(x.shape != ins[0].shape for x in ins):
        raise OpError("adds operands of one shape; got %s" % ([x.shape for x in ins],))
    return sum(ins[1:], ins[0])


def bwd_add_n(g, ins, at):
    return [g for _ in ins]


def fwd_concat(ins, at):
    if ins[0].ndim < 1:
        raise OpError("cannot join scalars")
    try:
        return np.concatenate(ins, axis=concat_axis(ins, at))
    except ValueError as e:
        raise OpError(str(e))


def bwd_concat(g, ins, at):
    ax = concat_axis(ins, at)
    cuts = np.cumsum([x.shape[ax] for x in ins])[:-1]
    return np.split(g, cuts, axis=ax)


def cast_dtype(at):
    v = at.get("dtype")
    name = v.name if isinstance(v, Ident) else v
    if name not in DTYPES:
        raise OpError("attribute 'dtype' is an element type such as Float16")
    return name


def stack_axis(ins, at):
    return norm_axis(attr_int(at, "axis", 0), ins[0].ndim + 1)


def fwd_stack(ins, at):
    """MindSpore's Stack: operands of one shape, a new dim of their count at axis (of the result's rank)."""
    if any(x.shape != ins[0].shape for x in ins):
        raise OpError("stacks operands of one shape; got %s" % ([x.shape for x in ins],))
    return np.stack(ins, axis=stack_axis(ins, at))


def bwd_stack(g, ins, at):
    ax = stack_axis(ins, at)
    return [np.take(g, i, axis=ax) for i in range(len(ins))]


def fwd_cast(ins, at):
    cast_dtype(at)
    return ins[0]                                   # the evaluator rounds to the new type


def bwd_cast(g, ins, at):
    # Float to float passes the gradient through; anything through an integer has none.
    return [g if ins[0].dtype.kind == "f" and is_float(cast_dtype(at)) else None]


def slices(x, at):
    """StridedSlice's index into x: bit i of a mask for entry i of begin, end and strides (bits past the
    entries do nothing), x's dims past the entries whole; numpy indexing does the rest, np.newaxis for a
    new axis (which wins over a shrink of the same entry) and an integer for a shrunk dim."""
    begin, end, strides = attr_ints(at, "begin"), attr_ints(at, "end"), attr_ints(at, "strides")
    if not len(begin) == len(end) == len(strides):
        raise OpError("begin, end and strides need as many entries each")
    if at.get("ellipsis_mask", 0):
        raise OpError("ellipsis_mask is not supported")

    def bit(name, i):
        return at.get(name, 0) >> i & 1
    out, d = [], 0
    for i, (b, e, s) in enumerate(zip(begin, end, strides)):
        if bit("new_axis_mask", i):
            out.append(np.newaxis)
            continue
        if d >= x.ndim:
            raise OpError("more entries than %s has dims" % (x.shape,))
        n, d = x.shape[d], d + 1
        b = 0 if bit("begin_mask", i) else b
        e = n if bit("end_mask", i) else e
        if bit("shrink_axis_mask", i):
            if not -n <= b < n:
                raise OpError("shrunk index %d outside a dim of %d" % (b, n))
            out.append(b)
            continue
        if s < 1:
            raise OpError("strides must be positive")
        if not len(range(n)[b:e:s]):
            raise OpError("dim %d of %s would be empty (begin %d, end %d)" % (d - 1, x.shape, b, e))
        out.append(slice(b, e, s))
    return tuple(out)


def padded(x, at):
    """x with zeros past its end up to the slice's end where `pad` is set (StridedSlice's pad)."""
    if not at.get("pad"):
        return x
    ends = at.get("end", [])
    widths = [(0, max(0, e - n)) for e, n in zip(ends, x.shape)]
    return np.pad(x, widths)


def fwd_strided_slice(ins, at):
    x = padded(ins[0], at)
    return x[slices(x, at)]


def bwd_strided_slice(g, ins, at):
    x = padded(ins[0], at)
    dx = np.zeros(x.shape)
    dx[slices(x, at)] = g
    return [dx[tuple(slice(0, n) for n in ins[0].shape)]]


def pad_widths(x, at):
    """PadV3's (before, after) for each dim of x: paddings' pairs from the last
    dim back (paddings_contiguous, the default), or all the befores, then all
    the afters; the dims it leaves out unpadded. Constant mode, no crop."""
    if at.get("mode", "constant") != "constant":
        raise OpError("mode %r: only \"constant\" is supported (as MindSpore's parallel PadV3)" % at.get("mode"))
    if "paddings" not in at:
        raise OpError("needs the attribute 'paddings'")
    p = list(at["paddings"])
    if x.ndim < 1 or any(type(v) is not int for v in p) or len(p) % 2 or len(p) > 2 * x.ndim:
        raise OpError("paddings %s are not pairs for the dims of %s" % (at["paddings"], x.shape))
    if any(v < 0 for v in p):
        raise OpError("paddings %s: a negative padding (a crop) is not supported" % (at["paddings"],))
    k = len(p) // 2
    if at.get("paddings_contiguous", True):
        pairs = [(p[2 * i], p[2 * i + 1]) for i in range(k)]
    else:
        pairs = [(p[i], p[k + i]) for i in range(k)]
    return [(0, 0)] * (x.ndim - k) + pairs[::-1]


def fwd_pad_v3(ins, at):
    """MindSpore's PadV3 (torch's F.pad): x inside its constant (0 when absent)."""
    x = ins[0]
    return np.pad(x, pad_widths(x, at), constant_values=ins[1] if len(ins) == 2 else 0)


def bwd_pad_v3(g, ins, at):
    """dy's box where x went (MindSpore's bprop); the constant gets none."""
    box = tuple(slice(b, b + n) for (b, _), n in zip(pad_widths(ins[0], at), ins[0].shape))
    return [g[box]] + [None] * (len(ins) - 1)


def resize_taps(at, x, bilinear):
    """MindSpore's resize coordinates for x (N, C, H, W), in Float32 as its
    kernels compute them: per output axis, the source indices (lo, hi) and
    the weight t of hi (nearest: hi = lo, t = 0)."""
    size = at.get("size")
    if x.ndim != 4:
        raise OpError("x %s is not NCHW (4 dims)" % (x.shape,))
    if not isinstance(size, (list, tuple)) or len(size) != 2 or any(type(v) is not int or v < 1 for v in size):
        raise OpError("size %r is not two positive integers" % (size,))
    align, half = bool(at.get("align_corners", False)), bool(at.get("half_pixel_centers", False))
    if align and half:
        raise OpError("align_corners and half_pixel_centers are both true")
    f32 = np.float32
    taps = []
    for n_in, n_out in zip(x.shape[2:], size):
        scale = f32(n_in - 1) / f32(n_out - 1) if align and n_out > 1 else f32(n_in) / f32(n_out)
        o = np.arange(n_out, dtype=f32)
        if bilinear:
            s = (o + f32(0.5)) * scale - f32(0.5) if half else o * scale
            fl = np.floor(s)
            lo = np.maximum(fl, 0).astype(np.int64)
            hi = np.minimum(np.ceil(s).astype(np.int64), n_in - 1)
            taps.append((lo, hi, (s - fl).astype(np.float64)))
        else:
            s = (o + f32(0.5)) * scale if half else o * scale
            i = np.where(s >= 0, np.floor(s + f32(0.5)), np.ceil(s - f32(0.5))) if align else np.floor(s)
            i = np.clip(i.astype(np.int64), 0, n_in - 1)
            taps.append((i, i, np.zeros(n_out)))
    return taps


def fwd_resize(bilinear):
    """MindSpore's ResizeNearestNeighbor / ResizeBilinearV2 {size, align_corners,
    half_pixel_centers} on NCHW (size an attribute)."""
    def fwd(ins, at):
        x = ins[0]
        (y0, y1, ty), (x0, x1, tx) = resize_taps(at, x, bilinear)
        ty, tx = ty[:, None], tx[None, :]
        r0, r1 = x[:, :, y0, :], x[:, :, y1, :]
        top = r0[..., x0] + (r0[..., x1] - r0[..., x0]) * tx
        bottom = r1[..., x0] + (r1[..., x1] - r1[..., x0]) * tx
        return top + (bottom - top) * ty
    return fwd


def bwd_resize(bilinear):
    """Resize*Grad: dy added back onto the x elements each output read, times their weights."""
    def bwd(g, ins, at):
        x = ins[0]
        (y0, y1, ty), (x0, x1, tx) = resize_taps(at, x, bilinear)
        dx = np.zeros(x.shape, dtype=np.result_type(g, np.float64))
        ty, tx = ty[:, None], tx[None, :]
        for yi, wy in ((y0, 1 - ty), (y1, ty)):
            for xi, wx in ((x0, 1 - tx), (x1, tx)):
                rows = np.broadcast_to(yi[:, None], g.shape[2:])
                cols = np.broadcast_to(xi[None, :], g.shape[2:])
                np.add.at(dx, (slice(None), slice(None), rows, cols), g * (wy * wx))
        return [dx.astype(g.dtype)]
    return bwd


def split_piece(x, at):
    """Split's piece: `index` of `output_num` equal pieces along `axis` (MindSpore's ops.Split)."""
    axis, n, i = at.get("axis"), at.get("output_num", 1), at.get("index")
    if type(axis) is not int or not -x.ndim <= axis < x.ndim:
        raise OpError("axis must be one dim of %s" % (x.shape,))
    if type(n) is not int or n < 1 or x.shape[axis] % n:
        raise OpError("dim %d of %s does not divide into output_num %s equal pieces" % (axis % x.ndim, x.shape, n))
    if type(i) is not int or not 0 <= i < n:
        raise OpError("index %s is not one of the %d pieces" % (i, n))
    s = [slice(None)] * x.ndim
    k = x.shape[axis] // n
    s[axis] = slice(i * k, (i + 1) * k)
    return tuple(s)


def split_v_piece(x, at):
    """SplitV's piece: `index` of the pieces of lengths `size_splits` along
    `split_dim`, one length -1 the rest (MindSpore's ops.SplitV)."""
    sizes, dim, n, i = list(at.get("size_splits", ())), at.get("split_dim"), at.get("num_split"), at.get("index")
    if type(dim) is not int or not -x.ndim <= dim < x.ndim:
        raise OpError("split_dim must be one dim of %s" % (x.shape,))
    if n != len(sizes):
        raise OpError("num_split %s must be the number of size_splits %s" % (n, sizes))
    length = x.shape[dim]
    if sizes.count(-1) == 1:
        sizes[sizes.index(-1)] = length - sum(s for s in sizes if s != -1)
    if any(type(s) is not int or s < 1 for s in sizes) or sum(sizes) != length:
        raise OpError("size_splits %s do not cut dim %d of %s into pieces" % (at.get("size_splits"), dim, x.shape))
    if type(i) is not int or not 0 <= i < n:
        raise OpError("index %s is not one of the %d pieces" % (i, n))
    s = [slice(None)] * x.ndim
    s[dim] = slice(sum(sizes[:i]), sum(sizes[:i + 1]))
    return tuple(s)


def arg_pick(x, at, op):
    """The first index of the maximum (minimum) along the axis, a NaN first
    (numpy's argmax and argmin), and the axis."""
    with_value = op.endswith("WithValue")
    if x.ndim < 1:
        raise OpError("needs a tensor of rank 1 or more")
    if with_value and attr_int(at, "index", None) not in (0, 1):
        raise OpError("index is 0 (the indices) or 1 (the values)")
    axis = norm_axis(attr_int(at, "axis", 0 if with_value else -1), x.ndim)
    pick = np.argmin if op in ("ArgMinWithValue", "Argmin") else np.argmax
    return pick(x, axis=axis), axis


def fwd_arg_reduce(op):
    def fwd(ins, at):
        x = ins[0]
        idx, axis = arg_pick(x, at, op)
        if not op.endswith("WithValue") or attr_int(at, "index", None) == 0:
            out = idx.astype(np.int32)
        else:
            out = np.take_along_axis(x, np.expand_dims(idx, axis), axis).squeeze(axis)
        return np.expand_dims(out, axis) if op.endswith("WithValue") and attr_bool(at, "keep_dims") else out
    return fwd


def bwd_arg_reduce(op):
    def bwd(g, ins, at):
        x = ins[0]
        idx, axis = arg_pick(x, at, op)
        if not op.endswith("WithValue") or attr_int(at, "index", None) == 0:
            return [None]   # the indices: no gradient
        dx = np.zeros(x.shape)
        gg = g if attr_bool(at, "keep_dims") else np.expand_dims(g, axis)
        np.put_along_axis(dx, np.expand_dims(idx, axis), gg, axis)   # dy at the pick alone, ties or not
        return [dx]
    return bwd


def topk_order(x, at):
    """The k picks along the last dim: the largest first, a NaN before every
    number, the lower index first among equals."""
    if x.ndim < 1:
        raise OpError("needs a tensor of rank 1 or more")
    k = attr_int(at, "k", None)
    if k is None or not 1 <= k <= x.shape[-1]:
        raise OpError("k is 1 to the last dim's %d" % x.shape[-1])
    if attr_int(at, "index", None) not in (0, 1):
        raise OpError("index is 0 (the values) or 1 (the indices)")
    nan = np.isnan(x)
    where = np.broadcast_to(np.arange(x.shape[-1]), x.shape)
    order = np.lexsort((where, -np.where(nan, 0, x), ~nan), axis=-1)
    return order[..., :k]


def fwd_topk(ins, at):
    x = ins[0]
    idx = topk_order(x, at)
    return idx.astype(np.int32) if attr_int(at, "index", None) == 1 else np.take_along_axis(x, idx, -1)


def bwd_topk(g, ins, at):
    x = ins[0]
    idx = topk_order(x, at)
    if attr_int(at, "index", None) == 1:
        return [None]
    dx = np.zeros(x.shape)
    np.put_along_axis(dx, idx, g, -1)
    return [dx]


def slice_piece(x, at):
    """Slice's piece: `size` elements of each dim from `begin`, -1 the rest (MindSpore's ops.Slice)."""
    begin, size = attr_ints(at, "begin"), attr_ints(at, "size")
    if len(begin) != x.ndim or len(size) != x.ndim:
        raise OpError("begin and size need one entry per dim of %s" % (x.shape,))
    s = []
    for b, n, d in zip(begin, size, x.shape):
        e = d if n == -1 else b + n
        if not 0 <= b < d or not b < e <= d:
            raise OpError("begin %d, size %d outside a dim of %d" % (b, n, d))
        s.append(slice(b, e))
    return tuple(s)


def ce_parts(ins, at):
    logits, labels = ins
    if logits.ndim != 2 or labels.shape != logits.shape[:1] or labels.dtype.kind not in "iu":
        raise OpError("needs logits (N, C) and integer labels (N,); got %s and %s" % (logits.shape, labels.shape))
    if labels.size and (labels.min() < 0 or labels.max() >= logits.shape[1]):
        raise OpError("a label is outside [0, %d)" % logits.shape[1])
    s = logits - logits.max(axis=1, keepdims=True)
    logp = s - np.log(np.exp(s).sum(axis=1, keepdims=True))
    return logp, labels.astype(np.int64)


def fwd_sparse_ce(ins, at):
    logp, labels = ce_parts(ins, at)
    return -logp[np.arange(len(labels)), labels].mean()


def bwd_sparse_ce(g, ins, at):
    logp, labels = ce_parts(ins, at)
    d = np.exp(logp)
    d[np.arange(len(labels)), labels] -= 1.0
    return [g * d / len(labels), None]


def dense_ce_parts(ins):
    logits, labels = ins
    if logits.ndim != 2 or labels.shape != logits.shape:
        raise OpError("needs logits (N, C) and labels (N, C); got %s and %s" % (logits.shape, labels.shape))
    s = logits - logits.max(axis=1, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=1, keepdims=True)), labels


def fwd_dense_ce(ins, at):
    logp, labels = dense_ce_parts(ins)
    return -(labels * logp).sum(axis=1)


def bwd_dense_ce(g, ins, at):
    # MindSpore's bprop: its backprop output (softmax - labels) times each row's dloss, the gradient
    # when each label row sums to 1; none for the labels
    logp, labels = dense_ce_parts(ins)
    return [(np.exp(logp) - labels) * np.asarray(g)[:, None], None]


def same_shape(ins, first, second):
    """Two operands that must have one shape (a loss's), named first and second in the message."""
    a, b = ins
    if a.shape != b.shape:
        raise OpError("%s %s and %s %s differ in shape" % (first, a.shape, second, b.shape))
    return a, b


def loss_operands(ins):
    return same_shape(ins, "prediction", "target")


def fwd_mse(ins, at):
    p, t = loss_operands(ins)
    return ((p - t) ** 2).mean()


def bwd_mse(g, ins, at):
    p, t = loss_operands(ins)
    d = g * 2.0 * (p - t) / p.size
    return [d, -d]


def fwd_square_sum_all(ins, at):
    """MindSpore's SquareSumAll(x, y): (sum x^2, sum y^2), x and y of one shape; output `index` of the two."""
    x, y = ins
    if x.shape != y.shape:
        raise OpError("x and y must have one shape; they are %s and %s" % (x.shape, y.shape))
    k = attr_int(at, "index", 0)
    if k not in (0, 1):
        raise OpError("index %d: SquareSumAll has outputs 0 and 1" % k)
    return (ins[k] ** 2).sum()


def bwd_square_sum_all(g, ins, at):
    """MindSpore's bprop: 2 x dy for the operand the output sums, none for the other."""
    k = attr_int(at, "index", 0)
    return [2.0 * g * ins[0] if k == 0 else None, 2.0 * g * ins[1] if k == 1 else None]


def fwd_l2(ins, at):
    """MindSpore's L2Loss: sum x^2 / 2, a scalar."""
    return (ins[0] ** 2).sum() / 2


def bwd_l2(g, ins, at):
    return [g * ins[0]]


KL_REDUCTIONS = ("mean", "none", "batchmean", "sum")


def kldiv_reduction(at):
    r = at.get("reduction", "mean")
    if r not in KL_REDUCTIONS:
        raise OpError("reduction %r: KLDivLoss takes %s" % (r, ", ".join(KL_REDUCTIONS)))
    return r


def fwd_kldiv(ins, at):
    """MindSpore's KLDivLoss(x, y): y (log y - x), 0 where NaN (y 0, MindSpore's CPU kernel); then
    the elements ("none"), their mean ("mean"), their sum over x's dim 0 ("batchmean"), or sum."""
    x, y = ins
    if x.shape != y.shape:
        raise OpError("logits and labels must have one shape; they are %s and %s" % (x.shape, y.shape))
    r = kldiv_reduction(at)
    with np.errstate(divide="ignore", invalid="ignore"):
        e = y * (np.log(y) - x)
    e = np.where(np.isnan(e), 0.0, e)
    if r == "none":
        return e
    if r == "batchmean" and x.ndim == 0:
        raise OpError("reduction 'batchmean' needs logits with a dim 0")
    return e.sum() / (x.size if r == "mean" else x.shape[0] if r == "batchmean" else 1)


def bwd_kldiv(g, ins, at):
    """MindSpore's bprop (KLDivLossGrad): -y dy, dy over the count as the forward; the labels' zeros."""
    x, y = ins
    r = kldiv_reduction(at)
    scale = 1.0 / (x.size if r == "mean" else x.shape[0] if r == "batchmean" else 1)
    return [-y * g * (1.0 if r == "none" else scale), None]


def fwd_l1(ins, at):
    p, t = loss_operands(ins)
    return np.abs(p - t).mean()


def bwd_l1(g, ins, at):
    p, t = loss_operands(ins)
    d = g * np.sign(p - t) / p.size
    return [d, -d]


def fwd_identity(ins, at):
    return ins[0]


def bwd_identity(g, ins, at):
    return [g]


# op name -> (forward, backward, fewest operands, most operands)
# ---------------------------------------------------------------------------
# Computed constants (docs/operators.md): no operands; the value comes from
# the attributes and the value's element type (the mask's default fill is
# that type's lowest finite value).  begin/end pick a piece of the whole.

def attr_number(at, key, default):
    v = at.get(key, default)
    if type(v) not in (int, float):
        raise OpError("attribute '%s' is a number" % key)
    return v


def constant_piece(whole, at):
    """The piece [begin, end) of the whole value, per dim (the whole when not written)."""
    begin = at.get("begin", (0,) * whole.ndim)
    end = at.get("end", whole.shape)
    if len(begin) != whole.ndim or len(end) != whole.ndim or \
            not all(0 <= b < e <= n for b, e, n in zip(begin, end, whole.shape)):
        raise OpError("begin %s and end %s are no piece of the whole value %s" % (begin, end, whole.shape))
    return whole[tuple(slice(b, e) for b, e in zip(begin, end))]


def const_arange(at, dtype):
    start, step = attr_number(at, "start", 0), attr_number(at, "step", 1)
    if "stop" not in at:
        raise OpError("needs the attribute 'stop'")
    stop = attr_number(at, "stop", 0)
    n = math.ceil((stop - start) / step) if step else 0
    if n < 1:
        raise OpError("start %s, stop %s and step %s give no element" % (start, stop, step))
    if n > at.get("maxlen", 1000000):
        raise OpError("the range has %d elements, more than maxlen %s (MindSpore's Range)" % (n, at.get("maxlen")))
    if is_float(dtype):
        return constant_piece(start + np.arange(n, dtype=np.float64) * step, at)
    return constant_piece(int(start) + np.arange(n, dtype=np.int64) * int(step), at)


def table_shape(at, least=2):
    shape = attr_ints(at, "shape")
    if len(shape) < least or min(shape) < 1:
        raise OpError("shape %s: the value has %d dims or more, all positive" % (shape, least))
    return shape


def const_causal_mask(at, dtype):
    """0 where allowed (column <= row), fill where masked; Bool: true where allowed."""
    shape = table_shape(at)
    rows, cols = np.arange(shape[-2])[:, None], np.arange(shape[-1])[None, :]
    allowed = np.broadcast_to(cols <= rows, shape)
    if dtype == "Bool":
        return constant_piece(allowed, at)
    fill = attr_number(at, "fill", -FLOAT_MAX[dtype])
    return constant_piece(np.where(allowed, 0.0, float(fill)), at)


def const_rope(at, dtype, sin):
    """The rotate-half layout: column c has frequency theta^(-2k/d), k = c mod d/2, rounded
    to float32; the angle position * frequency is a float32 product; its cos (sin) is
    rounded to float32, then to the value's type."""
    shape = table_shape(at)
    d, theta = shape[-1], float(attr_number(at, "theta", 10000.0))
    k = np.arange(d) % (d // 2)
    freq = (1.0 / np.power(theta, 2.0 * k / d)).astype(np.float32)
    angle = np.arange(shape[-2], dtype=np.float32)[:, None] * freq[None, :]
    table = (np.sin if sin else np.cos)(angle.astype(np.float64)).astype(np.float32)
    return constant_piece(np.broadcast_to(table.astype(np.float64), shape), at)


def const_fill(at, dtype):
    """FillV2: every element `fill` (MindSpore's ops.FillV2(shape, value))."""
    if "fill" not in at:
        raise OpError("needs the attribute 'fill'")
    return constant_piece(np.full(table_shape(at, 1), float(attr_number(at, "fill", 0))), at)


def const_eye(at, dtype):
    """Eye: (n, m), ones on the main diagonal (MindSpore's ops.Eye(n, m, t))."""
    if "n" not in at or "m" not in at:
        raise OpError("needs the attributes 'n' and 'm'")
    n, m = int(at["n"]), int(at["m"])
    if n < 1 or m < 1:
        raise OpError("n %d and m %d must be positive" % (n, m))
    eye = np.eye(n, m)
    return constant_piece(eye.astype(bool) if dtype == "Bool" else eye, at)


def const_lin_space(at, dtype):
    """LinSpace: num Float32 elements start + step i, step = (stop - start) / (num - 1), each
    operation rounded to float32 as MindSpore's CPU kernel computes it; num 1: start."""
    if any(k not in at for k in ("start", "stop", "num")):
        raise OpError("needs the attributes 'start', 'stop' and 'num'")
    num = int(at["num"])
    if num < 1:
        raise OpError("num %d must be 1 or more" % num)
    start, stop = np.float32(attr_number(at, "start", 0)), np.float32(attr_number(at, "stop", 0))
    if num == 1:
        return constant_piece(np.array([start], dtype=np.float64), at)
    step = np.float32((stop - start) / np.float32(num - 1))
    vals = start + step * np.arange(num, dtype=np.float32)
    return constant_piece(vals.astype(np.float32).astype(np.float64), at)


CONSTANTS = {
    "Eye": const_eye,
    "LinSpace": const_lin_space,
    "Arange": const_arange,
    "FillV2": const_fill,
    "CausalMask": const_causal_mask,
    "RopeCos": lambda at, dtype: const_rope(at, dtype, False),
    "RopeSin": lambda at, dtype: const_rope(at, dtype, True),
}


def constant_dtype(op, attrs):
    """A constant's element type: its dtype; else Arange's is Int64 from integers (MindSpore's
    ops.arange), Float32 from any float, and the tables' Float32."""
    if "dtype" in attrs:
        return cast_dtype(attrs)
    if op == "Arange" and all(type(attrs.get(k, 0)) is int for k in ("start", "stop", "step")):
        return "Int64"
    return "Float32"


def fwd_none(ins, at):
    raise OpError("a computed constant is evaluated from its attributes")


def bwd_none(g, ins, at):
    return []


def piece_of(piece):
    """The forward and backward of an operator that keeps one piece of x
    (Split, SplitV, Slice): x[piece], and dy placed back there in zeros."""
    def fwd(ins, at):
        return ins[0][piece(ins[0], at)]

    def bwd(g, ins, at):
        dx = np.zeros(ins[0].shape)
        dx[piece(ins[0], at)] = g
        return [dx]
    return fwd, bwd


OPS = {
    "MatMul": (fwd_matmul, bwd_matmul, 2, 2),
    "BatchMatMul": (fwd_batch_matmul, bwd_batch_matmul, 2, 2),
    "Add": (fwd_add, bwd_add, 2, 2),
    "Sub": (fwd_sub, bwd_sub, 2, 2),
    "Mul": (fwd_mul, bwd_mul, 2, 2),
    "Div": (fwd_div, bwd_div, 2, 2),
    "Maximum": (fwd_maximum, bwd_maximum, 2, 2),
    "Minimum": (fwd_minimum, bwd_minimum, 2, 2),
    "Pow": (fwd_pow, bwd_pow, 2, 2),
    "FloorDiv": (fwd_floor_div, bwd_floor_div, 2, 2),
    "FloorMod": (fwd_floor_mod, bwd_floor_mod, 2, 2),
    "Mod": (fwd_mod, bwd_mod, 2, 2),
    "SquaredDifference": (fwd_squared_difference, bwd_squared_difference, 2, 2),
    "DivNoNan": (fwd_div_no_nan, bwd_div_no_nan, 2, 2),
    "Atan2": (fwd_atan2, bwd_atan2, 2, 2),
    "Xlogy": (fwd_xlogy, bwd_xlogy, 2, 2),
    "Xdivy": (fwd_xdivy, bwd_xdivy, 2, 2),
    "MulNoNan": (fwd_mul_no_nan, bwd_mul_no_nan, 2, 2),
    "TruncateDiv": (fwd_truncate_div, bwd_floor_div, 2, 2),    # MindSpore's: no gradient
    "TruncateMod": (fwd_truncate_mod, bwd_mod, 2, 2),          # Mod's: dy, -dy trunc(x / y)
    "Hypot": (fwd_hypot, bwd_hypot, 2, 2),
    "NextAfter": (fwd_next_after, bwd_next_after, 2, 2),
    "Zeta": (fwd_zeta, bwd_zeta, 2, 2),
    **{op: (int_math(op), bwd_integer, 1, 1) for op in ("Invert", "PopulationCount")},
    **{op: (int_math(op), bwd_integer, 2, 2) for op in ("LeftShift", "RightShift")},
    "SigmoidCrossEntropyWithLogits": (fwd_sigmoid_ce, bwd_sigmoid_ce, 2, 2),
    "Lerp": (fwd_lerp, bwd_lerp, 3, 3),
    "MaskedFill": (fwd_masked_fill, bwd_masked_fill, 3, 3),
    **{op: (fwd_compare(op), bwd_compare, 2, 2) for op in COMPARES},
    "LogicalNot": (LOGICALS["LogicalNot"], bwd_mask, 1, 1),
    "LogicalAnd": (LOGICALS["LogicalAnd"], bwd_mask, 2, 2),
    "LogicalOr": (LOGICALS["LogicalOr"], bwd_mask, 2, 2),
    "IsFinite": (fwd_is_finite, bwd_mask, 1, 1),
    "BiasAdd": (fwd_bias_add, bwd_bias_add, 2, 2),
    "ReLU": (fwd_relu, bwd_relu, 1, 1),
    "LeakyReLU": (fwd_leaky_relu, bwd_leaky_relu, 1, 1),
    "ReLU6": (fwd_relu6, bwd_relu6, 1, 1),
    "Softsign": (fwd_softsign, bwd_softsign, 1, 1),
    "FastGeLU": (fwd_fast_gelu, bwd_fast_gelu, 1, 1),
    "PReLU": (fwd_prelu, bwd_prelu, 2, 2),
    "Conv2D": (fwd_conv2d, bwd_conv2d, 2, 2),
    "Conv2DTranspose": (fwd_conv2d_transpose, bwd_conv2d_transpose, 2, 2),
    "MaxPool": (fwd_max_pool, bwd_max_pool, 1, 1),
    "AvgPool": (fwd_avg_pool, bwd_avg_pool, 1, 1),
    "GeLU": (fwd_gelu, bwd_gelu, 1, 1),
    "Tanh": (fwd_tanh, bwd_tanh, 1, 1),
    "Sigmoid": (fwd_sigmoid, bwd_sigmoid, 1, 1),
    "Exp": (fwd_exp, bwd_exp, 1, 1),
    "Log": (fwd_log, bwd_log, 1, 1),
    "Neg": (fwd_neg, bwd_neg, 1, 1),
    "Sqrt": (fwd_sqrt, bwd_sqrt, 1, 1),
    "Rsqrt": (fwd_rsqrt, bwd_rsqrt, 1, 1),
    "SiLU": (fwd_silu, bwd_silu, 1, 1),
    "Square": (fwd_square, bwd_square, 1, 1),
    "Abs": (fwd_abs, bwd_abs, 1, 1),
    "Sin": (fwd_sin, bwd_sin, 1, 1),
    "Cos": (fwd_cos, bwd_cos, 1, 1),
    "Erf": (fwd_erf, bwd_erf, 1, 1),
    "Reciprocal": (fwd_reciprocal, bwd_reciprocal, 1, 1),
    "Log1p": (fwd_log1p, bwd_log1p, 1, 1),
    "Expm1": (fwd_expm1, bwd_expm1, 1, 1),
    "Softplus": (fwd_softplus, bwd_softplus, 1, 1),
    "Floor": (fwd_floor, bwd_zero, 1, 1),
    "Sign": (fwd_sign, bwd_zero, 1, 1),
    "Ceil": (fwd_ceil, bwd_zero, 1, 1),
    "Round": (fwd_round, bwd_zero, 1, 1),
    "Tan": (fwd_tan, bwd_tan, 1, 1),
    "Atan": (fwd_atan, bwd_atan, 1, 1),
    "Sinh": (fwd_sinh, bwd_sinh, 1, 1),
    "Cosh": (fwd_cosh, bwd_cosh, 1, 1),
    "HSwish": (fwd_hswish, bwd_hswish, 1, 1),
    "HSigmoid": (fwd_hsigmoid, bwd_hsigmoid, 1, 1),
    "Erfc": (fwd_erfc, bwd_erfc, 1, 1),
    "Inv": (fwd_reciprocal, bwd_reciprocal, 1, 1),   # MindSpore's Inv is 1 / x
    "Acos": (fwd_acos, bwd_acos, 1, 1),
    "Asin": (fwd_asin, bwd_asin, 1, 1),
    "Atanh": (fwd_atanh, bwd_atanh, 1, 1),
    "Asinh": (fwd_asinh, bwd_asinh, 1, 1),
    "Acosh": (fwd_acosh, bwd_acosh, 1, 1),
    "Rint": (fwd_round, bwd_zero, 1, 1),
    "Trunc": (fwd_trunc, bwd_zero, 1, 1),
    "Erfinv": (fwd_erfinv, bwd_erfinv, 1, 1),
    "Lgamma": (fwd_lgamma, bwd_lgamma, 1, 1),
    "HShrink": (fwd_hshrink, bwd_hshrink, 1, 1),
    "SoftShrink": (fwd_soft_shrink, bwd_soft_shrink, 1, 1),
    "Elu": (fwd_elu, bwd_elu, 1, 1),
    "Mish": (fwd_mish, bwd_mish, 1, 1),
    "SeLU": (fwd_selu, bwd_selu, 1, 1),
    "LogSigmoid": (fwd_log_sigmoid, bwd_log_sigmoid, 1, 1),
    "ZerosLike": (fwd_zeros_like, bwd_zero, 1, 1),
    "OnesLike": (fwd_ones_like, bwd_zero, 1, 1),
    "Select": (fwd_select, bwd_select, 3, 3),
    "PadFill": (fwd_identity, bwd_identity, 1, 1),   # a whole tensor has no padding
    "RotaryPositionEmbedding": (fwd_rotary, bwd_rotary, 3, 3),
    "Dropout": (fwd_none, bwd_none, 1, 1),           # dropout(): its mask needs the step and its name
    "DropoutGenMask": (fwd_none, bwd_none, 0, 0),    # gen_mask(): Dropout's mask, by its name
    "UniformReal": (fwd_none, bwd_none, 0, 0),       # uniform_real(): Dropout's draws, by its name
    "DropoutDoMask": (fwd_none, bwd_none, 2, 2),     # do_mask(): the identity without training
    "FlashAttentionScore": (fwd_flash_attention, bwd_flash_attention, 3, 4),
    "Softmax": (fwd_softmax, bwd_softmax, 1, 1),
    "LogSoftmax": (fwd_log_softmax, bwd_log_softmax, 1, 1),
    "ReduceSum": (fwd_reduce_sum, bwd_reduce_sum, 1, 1),
    "ReduceMean": (fwd_reduce_mean, bwd_reduce_mean, 1, 1),
    "ReduceMax": (fwd_reduce_max, bwd_reduce_max, 1, 1),
    "ReduceMin": (fwd_reduce_min, bwd_reduce_min, 1, 1),
    "ReduceProd": (fwd_reduce_prod, bwd_reduce_prod, 1, 1),
    "ReduceAll": (fwd_reduce_all, bwd_bool_result, 1, 1),
    "ReduceAny": (fwd_reduce_any, bwd_bool_result, 1, 1),
    "CumSum": (fwd_scan(False), bwd_scan(False), 1, 1),
    "CumProd": (fwd_scan(True), bwd_scan(True), 1, 1),
    "Reshape": (fwd_reshape, bwd_reshape, 1, 1),
    "Identity": (lambda ins, at: ins[0].copy(), lambda g, ins, at: [g], 1, 1),
    "Depend": (lambda ins, at: ins[0].copy(), lambda g, ins, at: [g, None], 2, 2),   # expr only orders: no gradient
    "Transpose": (fwd_transpose, bwd_transpose, 1, 1),
    "Flatten": (fwd_flatten, bwd_flatten, 1, 1),
    "ExpandDims": (fwd_expand_dims, bwd_view, 1, 1),
    "BroadcastTo": (fwd_broadcast_to, bwd_broadcast_to, 1, 1),
    "Squeeze": (fwd_squeeze, bwd_view, 1, 1),
    "Gather": (fwd_gather, bwd_gather, 2, 2),
    "EmbeddingLookup": (fwd_embedding_lookup, bwd_embedding_lookup, 2, 2),
    "GatherD": (fwd_gather_d, bwd_gather_d, 2, 2),
    "GatherNd": (fwd_gather_nd, bwd_gather_nd, 2, 2),
    "TensorScatterUpdate": tensor_scatter("Update") + (3, 3),
    "ScatterUpdate": state_scatter("Update", False) + (3, 3),
    "ScatterAdd": state_scatter("Add", False) + (3, 3),
    "ScatterSub": state_scatter("Sub", False) + (3, 3),
    "ScatterMul": state_scatter("Mul", False) + (3, 3),
    "ScatterDiv": state_scatter("Div", False) + (3, 3),
    "ScatterMax": state_scatter("Max", False) + (3, 3),
    "ScatterMin": state_scatter("Min", False) + (3, 3),
    "ScatterNdUpdate": state_scatter("Update", True) + (3, 3),
    "ScatterNdAdd": state_scatter("Add", True) + (3, 3),
    "ScatterNdSub": state_scatter("Sub", True) + (3, 3),
    "InplaceAdd": inplace("Add") + (2, 2),
    "InplaceSub": inplace("Sub") + (2, 2),
    "InplaceUpdate": inplace("Update") + (2, 2),
    "AssignAdd": (fwd_assign(1), lambda g, ins, at: [None, bwd_add(g, ins, at)[1]], 2, 2),
    "AssignSub": (fwd_assign(-1), lambda g, ins, at: [None, bwd_sub(g, ins, at)[1]], 2, 2),
    "TensorScatterAdd": tensor_scatter("Add") + (3, 3),
    "TensorScatterSub": tensor_scatter("Sub") + (3, 3),
    "TensorScatterMul": tensor_scatter("Mul") + (3, 3),
    "TensorScatterDiv": tensor_scatter("Div") + (3, 3),
    "TensorScatterMax": tensor_scatter("Max") + (3, 3),
    "TensorScatterMin": tensor_scatter("Min") + (3, 3),
    **{"UnsortedSegment" + k: (fwd_segment(k), bwd_segment(k), 2, 2) for k in ("Sum", "Max", "Min", "Prod")},
    "L2Normalize": (fwd_l2_normalize, bwd_l2_normalize, 1, 1),
    "LpNorm": (fwd_lp_norm, bwd_lp_norm, 1, 1),
    "IOU": (fwd_iou, bwd_none, 2, 2),                # MindSpore's (no bprop); the compiler: Transpose, slices, ...       # MindSpore's; the compiler writes it as Abs, Pow, ReduceSum
    "ClipByNorm": (fwd_clip_by_norm, bwd_clip_by_norm, 2, 2),   # MindSpore's; the compiler: Square, ReduceSum, ...
    "Tile": (fwd_tile, bwd_tile, 1, 1),
    "OneHot": (fwd_one_hot, bwd_one_hot, 3, 3),
    "Tril": (*triangle(False), 1, 1),
    "Triu": (*triangle(True), 1, 1),
    "LayerNorm": (fwd_layer_norm, bwd_layer_norm, 3, 3),
    "RmsNorm": (fwd_rms_norm, bwd_rms_norm, 2, 2),
    "BatchNorm": (fwd_batch_norm, bwd_batch_norm, 5, 5),
    "Concat": (fwd_concat, bwd_concat, 1, None),
    "AddN": (fwd_add_n, bwd_add_n, 2, None),
    "Stack": (fwd_stack, bwd_stack, 1, None),
    "Cast": (fwd_cast, bwd_cast, 1, 1),
    "StridedSlice": (fwd_strided_slice, bwd_strided_slice, 1, 1),
    "Slice": (*piece_of(slice_piece), 1, 1),
    "Split": (*piece_of(split_piece), 1, 1),
    "SplitV": (*piece_of(split_v_piece), 1, 1),
    "PadV3": (fwd_pad_v3, bwd_pad_v3, 1, 2),
    "ResizeNearestNeighbor": (fwd_resize(False), bwd_resize(False), 1, 1),
    "ResizeBilinearV2": (fwd_resize(True), bwd_resize(True), 1, 1),
    "ReverseV2": (fwd_reverse_v2, bwd_reverse_v2, 1, 1),
    "TraceV2": (fwd_trace_v2, bwd_trace_v2, 1, 1),
    **{op: (fwd_arg_reduce(op), bwd_arg_reduce(op), 1, 1)
       for op in ("ArgMaxWithValue", "ArgMinWithValue", "Argmax", "Argmin")},
    "TopK": (fwd_topk, bwd_topk, 1, 1),
    "SparseSoftmaxCrossEntropyWithLogits": (fwd_sparse_ce, bwd_sparse_ce, 2, 2),
    "SoftmaxCrossEntropyWithLogits": (fwd_dense_ce, bwd_dense_ce, 2, 2),
    "MSELoss": (fwd_mse, bwd_mse, 2, 2),
    "L1Loss": (fwd_l1, bwd_l1, 2, 2),
    "L2Loss": (fwd_l2, bwd_l2, 1, 1),
    "SquareSumAll": (fwd_square_sum_all, bwd_square_sum_all, 2, 2),
    "Arange": (fwd_none, bwd_none, 0, 0),
    "CausalMask": (fwd_none, bwd_none, 0, 0),
    "FillV2": (fwd_none, bwd_none, 0, 0),
    "Eye": (fwd_none, bwd_none, 0, 0),
    "LinSpace": (fwd_none, bwd_none, 0, 0),
    "KLDivLoss": (fwd_kldiv, bwd_kldiv, 2, 2),
    "RopeCos": (fwd_none, bwd_none, 0, 0),
    "RopeSin": (fwd_none, bwd_none, 0, 0),
    # Collectives: the identity over a one-member group (checked when flattening).
    "AllReduce": (fwd_identity, bwd_identity, 1, 1),
    "AllGather": (fwd_identity, bwd_identity, 1, 1),
    "ReduceScatter": (fwd_identity, bwd_identity, 1, 1),
    "AllToAll": (fwd_identity, bwd_identity, 1, 1),
}
COLLECTIVES = ("AllReduce", "AllGather", "ReduceScatter", "AllToAll")
# Operators the compiler writes as others when it parses them (misc_ops.c):
# no row of its table, and so no precision class of their own.
EXPANDED = ("LpNorm", "ClipByNorm", "IOU")


# ---------------------------------------------------------------------------
# The program: the entry graph with every Call inlined, as a flat list of
# instructions over dense value ids.

class Instr:
    def __init__(self, op, ins, attrs, out, offset):
        self.op, self.ins, self.attrs, self.out, self.offset = op, ins, attrs, out, offset


class Program:
    def __init__(self):
        self.names = []       # value id -> name, for messages
        self.dtypes = []      # value id -> element type
        self.inputs = []      # [(value id, Param)] of the entry graph, in order
        self.instrs = []      # [Instr], in evaluation order
        self.outputs = []     # value ids the entry graph returns
        self.checks = {}      # value id -> [(Type, offset, what)] declared types to verify
        self.loss = None      # value id of the train loss
        self.loss_offset = 0
        self.literals = {}    # value id -> the number written as an operand (no input: the program's own)
        self.flat = {}        # a Dropout's result id -> its name in the compiler's flat graph (its mask's key)
        self.seed = 0         # the context's seed (a Dropout's mask)
        self.step = 1         # the training step being run, from 1 (a Dropout's mask)
        self.train = False    # a train block: Dropout drops; without, the identity (eval mode)

    def new_value(self, name, dtype):
        self.names.append(name)
        self.dtypes.append(dtype)
        return len(self.names) - 1

    def expect_type(self, vid, type_, offset, what):
        self.checks.setdefault(vid, []).append((type_, offset, what))


def result_dtype(op, attrs, in_dtypes, offset):
    if op == "Cast":
        try:
            return cast_dtype(attrs)
        except OpError as e:
            raise ModelError(offset, "Cast: %s" % e)
    if op == "Select" and len(in_dtypes) == 3:
        return in_dtypes[1]                          # the condition is Bool; the result is x's
    if op in COMPARES or op in LOGICALS or op == "IsFinite":
        return "Bool"
    if op == "OneHot" and len(in_dtypes) == 3:
        return in_dtypes[1]                          # on_value's; the indices are integers
    if op in ("Argmax", "Argmin") or (op == "TopK" and attrs.get("index") == 1) or \
            (op in ("ArgMaxWithValue", "ArgMinWithValue") and attrs.get("index") == 0):
        return "Int32"                               # the indices they pick
    if op == "DropoutGenMask":
        return "Bool"
    if op in CONSTANTS:
        try:
            return constant_dtype(op, attrs)
        except OpError as e:
            raise ModelError(offset, "%s: %s" % (op, e))
    return in_dtypes[0] if in_dtypes else "Float32"


def check_collective(st):
    group = st.attrs.get("group")
    if not isinstance(group, tuple) or not group:
        raise ModelError(st.op_offset, "%s needs a 'group', a non-empty tuple of ranks" % st.op)
    if len(group) != 1:
        raise ModelError(st.op_offset, "%s over the group %s: a serial reference cannot evaluate a multi-rank "
                         "collective" % (st.op, group))


FLOAT_MAX = {"Float32": float(np.finfo(np.float32).max), "Float16": 65504.0, "BFloat16": 3.3895313892515355e38}


def emit_literal(prog, st, env, k):
    """A value holding the number written as operand k of `st`, in the element type of
    its first value operand (docs/language.md, Operands)."""
    num = st.operands[k]
    if st.op == "Call":
        raise ModelError(num.offset, "Call: a number cannot be passed to a called graph")
    # OneHot's on_value and off_value go with each other: Float32 when neither is a value
    first = next((r for r in st.operands[st.op == "OneHot":] if isinstance(r, Ref)), None)
    if first is None and st.op == "OneHot":
        vid = prog.new_value("%s#%d" % (st.result, k), "Float32")
        prog.literals[vid] = float(num.value)
        return vid
    if first is None:
        raise ModelError(st.op_offset, "%s: a number operand takes its type from a value operand, and %s has none"
                         % (st.op, st.op))
    dtype = prog.dtypes[env[first.name]]
    if dtype == "Bool":
        raise ModelError(num.offset, "%s: the number %s would be Bool, as the operand it goes with; Bool takes no "
                         "numbers" % (st.op, num.text))
    if not is_float(dtype) and type(num.value) is float:
        raise ModelError(num.offset, "%s: the number %s is not an integer, but the operand it goes with is %s"
                         % (st.op, num.text, dtype))
    if dtype == "Int32" and not -2**31 <= num.value < 2**31:
        raise ModelError(num.offset, "%s: the number %s does not fit Int32" % (st.op, num.text))
    if is_float(dtype) and abs(num.value) > FLOAT_MAX[dtype]:
        raise ModelError(num.offset, "%s: the number %s does not fit %s" % (st.op, num.text, dtype))
    vid = prog.new_value("%s#%d" % (st.result, k), dtype)
    prog.literals[vid] = num.value
    return vid


def emit_graph(prog, module, gi, env, prefix=""):
    """Appends graph `gi`'s statements with inputs bound by `env`; returns its results' ids.
    prefix: the compiler's flat names of a called graph's values, `<call result>.`
    (flatten.c), which key a Dropout's mask."""
    g = module.graphs[gi]
    for st in g.stmts:
        ins = []
        for r in st.operands:
            if isinstance(r, Ref) and r.name not in env:
                raise ModelError(r.offset, "value '%%%s' is not defined before this use in @%s" % (r.name, g.name))
        for k, r in enumerate(st.operands):
            ins.append(env[r.name] if isinstance(r, Ref) else emit_literal(prog, st, env, k))
        if st.result in env:
            raise ModelError(st.offset, "value '%%%s' is defined twice in @%s" % (st.result, g.name))
        if st.op == "Call":
            out = emit_call(prog, module, gi, st, ins, prefix)
        elif st.op in OPS:
            lo, hi = OPS[st.op][2], OPS[st.op][3]
            if len(ins) < lo or (hi is not None and len(ins) > hi):
                raise ModelError(st.op_offset, "%s takes %s operand%s, %d given" % (
                    st.op, lo if lo == hi else "%d or more" % lo, "" if lo == 1 and hi == 1 else "s", len(ins)))
            if st.op in COLLECTIVES:
                check_collective(st)
            dtype = result_dtype(st.op, st.attrs, [prog.dtypes[v] for v in ins], st.op_offset)
            out = prog.new_value(st.result, dtype)
            prog.instrs.append(Instr(st.op, ins, st.attrs, out, st.op_offset))
            if st.op in ("Dropout", "DropoutGenMask", "UniformReal"):
                if prefix.count(".") >= 8:
                    raise ModelError(st.op_offset, "%s: the reference keys a mask by its flat name, which the "
                                     "compiler starts over 8 Calls deep (flatten.c); this one is deeper" % st.op)
                prog.flat[out] = prefix + st.result
        else:
            raise ModelError(st.op_offset, "unknown operator '%s'" % st.op)
        if st.sig:
            sig_ins, sig_outs = st.sig
            if len(sig_ins) != len(ins) or len(sig_outs) != 1:
                raise ModelError(st.offset, "the signature of '%%%s' lists %d inputs and %d results; %s has %d "
                                 "operands and one result" % (st.result, len(sig_ins), len(sig_outs), st.op, len(ins)))
            for k, (v, t) in enumerate(zip(ins, sig_ins)):
                prog.expect_type(v, t, t.offset, "signature input %d of '%%%s'" % (k, st.result))
            prog.expect_type(out, sig_outs[0], sig_outs[0].offset, "the signature's result of '%%%s'" % st.result)
        env[st.result] = out
    outs = []
    for r in g.rets:
        if r.name not in env:
            raise ModelError(r.offset, "returned value '%%%s' is not defined in @%s" % (r.name, g.name))
        outs.append(env[r.name])
    return outs


# The most operators the entry may have once its Calls are inlined (the
# compiler's limit too): 40 graphs each calling the one before twice are 2 KB
# of text and 2^40 operators.
INLINE_LIMIT = 10_000_000


def callee_index(index, gi, st):
    """The graph a Call statement of graph `gi` inlines (defined before it), or None."""
    ref = st.attrs.get("graph") if st.op == "Call" else None
    ci = index.get(ref.name) if isinstance(ref, GraphRef) else None
    return ci if ci is not None and ci < gi else None


def inlined_sizes(module, index, upto):
    """Operators each graph up to `upto` has once its Calls are inlined, capped just over
    the limit; a graph calls only graphs before it, so one pass in file order does."""
    sizes = []
    for gi in range(upto + 1):
        n = 0
        for st in module.graphs[gi].stmts:
            ci = callee_index(index, gi, st)
            n = min(n + (sizes[ci] if ci is not None else 1), INLINE_LIMIT + 1)
        sizes.append(n)
    return sizes


def emit_call(prog, module, gi, st, ins, prefix=""):
    ref = st.attrs.get("graph")
    if not isinstance(ref, GraphRef):
        raise ModelError(st.op_offset, "Call needs a 'graph' attribute naming the called graph, such as @f")
    ci = next((k for k, h in enumerate(module.graphs) if h.name == ref.name), None)
    if ci is None or ci >= gi:
        raise ModelError(ref.offset, "graph @%s is not defined before @%s" % (ref.name, module.graphs[gi].name))
    callee = module.graphs[ci]
    if len(ins) != len(callee.params):
        raise ModelError(st.op_offset, "@%s takes %d inputs, %d given" % (callee.name, len(callee.params), len(ins)))
    for v, p in zip(ins, callee.params):
        prog.expect_type(v, p.type, st.op_offset, "input '%%%s' of @%s" % (p.name, callee.name))
    outs = emit_graph(prog, module, ci, {p.name: v for p, v in zip(callee.params, ins)}, prefix + st.result + ".")
    if len(outs) != 1:
        raise ModelError(st.op_offset, "@%s returns %d values; Call takes a graph that returns one"
                         % (callee.name, len(outs)))
    return outs[0]


def check_inlined_size(module, gi):
    """Refuses, at the Call that crosses it, an entry over INLINE_LIMIT operators once inlined."""
    index = {}
    for k, g in enumerate(module.graphs):
        index.setdefault(g.name, k)   # the first graph of a name, as emit_call finds it
    sizes = inlined_sizes(module, index, gi)
    if sizes[gi] <= INLINE_LIMIT:
        return
    n = 0
    for st in module.graphs[gi].stmts:
        ci = callee_index(index, gi, st)
        n += sizes[ci] if ci is not None else 1
        if n > INLINE_LIMIT:
            raise ModelError(st.op_offset, "inlining @%s here takes @%s over %d operators"
                             % (module.graphs[ci].name, module.graphs[gi].name, INLINE_LIMIT))


def flatten(module):
    prog = Program()
    gi = len(module.graphs) - 1
    entry = module.graphs[gi]
    check_inlined_size(module, gi)
    env = {}
    for p in entry.params:
        if p.name in env:
            raise ModelError(p.offset, "input '%%%s' is declared twice" % p.name)
        env[p.name] = prog.new_value(p.name, p.type.dtype)
        prog.inputs.append((env[p.name], p))
    for g in module.graphs[:-1]:
        for p in g.params:
            if p.init is not None:
                raise ModelError(p.init.offset, "only the entry graph's inputs have initializers")
    prog.outputs = emit_graph(prog, module, gi, env)
    if module.train:
        loss = module.train[0].get("loss")
        if not isinstance(loss, Ref):
            raise ModelError(module.train[1], "the train block needs 'loss: %value'")
        if loss.name not in env:
            raise ModelError(loss.offset, "loss '%%%s' is not a value of the entry graph @%s" % (loss.name, entry.name))
        prog.loss, prog.loss_offset = env[loss.name], loss.offset
        if not is_float(prog.dtypes[prog.loss]):
            raise ModelError(loss.offset, "the loss '%%%s' is not a float value" % loss.name)
    return prog


# ---------------------------------------------------------------------------
# Mixed precision: the model's `precision`, from the context or the train
# block (compiler/autocast.c makes the same rewrite).  Float32 parameters stay the master copies; each
# operator computes as its precision class says, and the classes are the
# compiler's (ops.h's precision column, read from `shardc --list-ops --json`:
# which operator is in which class is written once, there): "low" in the
# compute type, its Float32 inputs cast to it (one Cast a value, shared by its
# users); "f32" in Float32, its half inputs cast up; "follow" (operators that
# move or pick elements, and the comparisons, whose result stays Bool) in its
# input's type (Float32 when a Concat's inputs differ); "asis" as written.
# Returned values and the loss are cast back to the types they were written
# with.  Operators on other types run as written.
# What each class means, and every operator's math, stay this file's own.

PRECISIONS = {"bf16": "BFloat16", "fp16": "Float16", "fp32": None}
PRECISION_CLASSES = ("low", "f32", "follow", "asis")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def default_shardc():
    """The compiler whose table gives the precision classes: $SHARDC, else the
    repository's build/shardc (this file's ../build/shardc)."""
    return os.environ.get("SHARDC") or os.path.join(ROOT, "build", "shardc")


_classes = {}


def precision_classes(shardc=None):
    """{operator name: precision class}, from `SHARDC --list-ops --json` (run once
    per compiler).  Raises OSError when the compiler cannot say."""
    shardc = shardc or default_shardc()
    if shardc not in _classes:
        try:
            p = subprocess.run([shardc, "--list-ops", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               timeout=60)
        except (OSError, subprocess.SubprocessError) as e:
            raise OSError("mixed precision takes the operators' precision classes from the compiler: cannot run "
                          "%s --list-ops --json (%s); build it (make build/shardc) or name it with --shardc or "
                          "SHARDC" % (shardc, e))
        try:
            table = json.loads(p.stdout) if p.returncode == 0 else None
            classes = {row["name"]: row["precision"] for row in table}
        except (TypeError, ValueError, KeyError):
            classes = None
        if classes is None or not set(classes.values()) <= set(PRECISION_CLASSES):
            raise OSError("%s --list-ops --json (exit %d) gives no table of precision classes: %s"
                          % (shardc, p.returncode, p.stderr.decode(errors="replace").strip()[:200]))
        _classes[shardc] = classes
    return _classes[shardc]


def precision_config(module):
    """The compute type the model's precision names, or None (Float32 throughout): the
    train block's, else the context's; where both name a half type it is the same one."""
    named = []
    for block, offset in (b for b in (module.context, module.train) if b is not None):
        if "precision" in block:
            p = block["precision"]
            if p not in PRECISIONS:
                raise ModelError(offset, 'precision is "bf16", "fp16" or "fp32"')
            named.append((PRECISIONS[p], offset))
    if len(named) == 2 and named[0][0] and named[1][0] and named[0][0] != named[1][0]:
        raise ModelError(named[1][1], "the train block's precision differs from the context's")
    if len(named) == 2 and not named[1][0]:
        return named[0][0]
    return named[-1][0] if named else None


def loss_scale_config(module):
    """(init_loss_scale, scale_factor, scale_window) with precision "fp16" (MindSpore's
    DynamicLossScaleManager and its defaults), else None."""
    block, offset = module.train
    keys = [k for k in ("init_loss_scale", "scale_factor", "scale_window") if k in block]
    if precision_config(module) != "Float16":
        if keys:
            raise ModelError(offset, 'loss scaling is for precision: "fp16"')
        return None
    init, factor, window = block.get("init_loss_scale", 2 ** 24), block.get("scale_factor", 2), \
        block.get("scale_window", 2000)
    if type(init) not in (int, float) or not 1 <= init < math.inf:
        raise ModelError(offset, "init_loss_scale is a number at least 1")
    if type(factor) not in (int, float) or not 1 < factor < math.inf:
        raise ModelError(offset, "scale_factor is a number greater than 1")
    if type(window) is not int or window < 1:
        raise ModelError(offset, "scale_window is a positive integer")
    return float(init), float(factor), window


def autocast(prog, prec, shardc=None):
    """Rewrites prog for compute type `prec` by inserting Cast instructions, each
    operator in its precision class (precision_classes: the compiler's)."""
    classes = precision_classes(shardc)

    # The two exceptions to the table (docs/language.md, Mixed precision): an
    # AddN of 8 operands or more computes in Float32, and LinSpace and
    # UniformReal (Float32 only) are never computed in the compute type
    # (lowered_consts below).
    def op_class(ins):
        return "f32" if ins.op == "AddN" and len(ins.ins) >= 8 else classes[ins.op]
    declared = list(prog.dtypes)
    cur = list(range(len(prog.names)))       # value id -> the id computing it now
    casts = {}

    def value_as(v, dt, offset):
        now = cur[v]
        if prog.dtypes[now] == dt or not is_float(dt) or not is_float(prog.dtypes[now]):
            return now
        if (v, dt) not in casts:
            out = prog.new_value(prog.names[v] + "." + {"BFloat16": "bf16", "Float16": "f16"}.get(dt, "f32"), dt)
            instrs.append(Instr("Cast", [now], {"dtype": dt}, out, offset))
            casts[v, dt] = out
        return casts[v, dt]

    def changes(ins):   # a comparison follows its Float32 operands; its result stays Bool
        return op_class(ins) in ("low", "f32", "follow") and (declared[ins.out] == "Float32" or ins.op in COMPARES) \
            and all(declared[v] == "Float32" or not is_float(declared[v]) for v in ins.ins)

    # A number written as an operand that only operators computing in the
    # compute type read is written in that type: no Cast between them.
    for ins in prog.instrs:
        if ins.op not in classes:
            raise OSError("the compiler's table has no operator %s: no precision class for it" % ins.op)
    readers = {}
    for ins in prog.instrs:
        for v in ins.ins:
            if v in prog.literals:
                readers.setdefault(v, []).append(ins)
    for v, users in readers.items():
        if declared[v] == "Float32" and all(op_class(u) == "low" and changes(u) for u in users):
            prog.dtypes[v] = prec
            prog.checks.pop(v, None)                  # declared types were checked as written
    # So is a computed constant (no input to follow) that only operators
    # computing in the compute type read, and is not returned; else Float32.
    users = {}
    for ins in prog.instrs:
        for v in ins.ins:
            users.setdefault(v, []).append(ins)
    lowered_consts = set(ins.out for ins in prog.instrs
                         if ins.op in CONSTANTS and ins.op not in ("LinSpace", "UniformReal") and ins.out in users and
                         ins.out not in prog.outputs and ins.out != prog.loss and
                         all(op_class(u) == "low" and changes(u) for u in users[ins.out]))

    instrs = []
    for ins in prog.instrs:
        low, f32, follow = (op_class(ins) == c for c in ("low", "f32", "follow"))
        change = changes(ins)
        want = [declared[v] for v in ins.ins]
        if change:
            now = [prog.dtypes[cur[v]] for v in ins.ins]
            floats = [t for t in now if is_float(t)]
            for k, t in enumerate(now):
                if is_float(t):
                    want[k] = prec if low else "Float32" if f32 else t if len(set(floats)) == 1 else "Float32"
        new_ins = [value_as(v, w, ins.offset) for v, w in zip(ins.ins, want)]
        if change and ins.op not in COMPARES:
            firsts = [prog.dtypes[v] for v in new_ins if is_float(prog.dtypes[v])]
            prog.dtypes[ins.out] = prec if low else "Float32" if f32 or not firsts else firsts[0]
            if ins.op in CONSTANTS:
                prog.dtypes[ins.out] = prec if ins.out in lowered_consts else "Float32"
            if prog.dtypes[ins.out] != declared[ins.out]:
                prog.checks.pop(ins.out, None)       # declared types were checked as written
        instrs.append(Instr(ins.op, new_ins, ins.attrs, ins.out, ins.offset))
        cur[ins.out] = ins.out
    prog.outputs = [value_as(v, declared[v], prog.loss_offset) for v in prog.outputs]
    if prog.loss is not None:
        prog.loss = value_as(prog.loss, declared[prog.loss], prog.loss_offset)
    prog.instrs = instrs


# ---------------------------------------------------------------------------
# Evaluation: forward, backward.

def check_value(prog, vid, x):
    for t, offset, what in prog.checks.get(vid, ()):
        if t.dtype != prog.dtypes[vid] or tuple(t.shape) != x.shape:
            raise ModelError(offset, "%s is declared %s %s but '%%%s' is %s %s" % (
                what, t.dtype, tuple(t.shape), prog.names[vid], prog.dtypes[vid], x.shape))


def op_attrs(prog, ins):
    """An instruction's attributes; LeakyReLU's, HShrink's, SoftShrink's and the segment reductions' with
    "@dtype", the type it computes in, to which MindSpore casts its alpha or lambd, or the empty segments'
    value, and the integer operators' with their width (no attribute of the language has an "@")."""
    if ins.op in ("LeakyReLU", "HShrink", "SoftShrink", "Invert", "PopulationCount", "LeftShift", "RightShift") or \
            ins.op.startswith("UnsortedSegment"):
        return dict(ins.attrs, **{"@dtype": prog.dtypes[ins.ins[0]]})
    return ins.attrs


def forward(prog, feeds):
    """Every value of the program, in storage precision; feeds: value id -> array."""
    vals = [None] * len(prog.names)
    for vid, _ in prog.inputs:
        vals[vid] = feeds[vid]
        check_value(prog, vid, vals[vid])
    for vid, number in prog.literals.items():
        vals[vid] = to_dtype(np.full((), number), prog.dtypes[vid])
        check_value(prog, vid, vals[vid])
    with np.errstate(all="ignore"):
        for ins in prog.instrs:
            args = [widen(vals[v], prog.dtypes[v]) for v in ins.ins]
            try:
                if ins.op in CONSTANTS:
                    r = CONSTANTS[ins.op](ins.attrs, prog.dtypes[ins.out])
                elif ins.op == "Dropout":
                    r = dropout(prog, ins, args[0])
                elif ins.op == "DropoutGenMask":
                    r = gen_mask(prog, ins)
                elif ins.op == "UniformReal":
                    r = uniform_real(prog, ins)
                elif ins.op == "DropoutDoMask":
                    r = do_mask(prog, ins, args[0], args[1])
                else:
                    r = OPS[ins.op][0](args, op_attrs(prog, ins))
            except (OpError, ValueError) as e:                # ValueError: numpy's, e.g. shapes that do not broadcast
                raise ModelError(ins.offset, "%s: %s" % (ins.op, e))
            vals[ins.out] = to_dtype(r, prog.dtypes[ins.out])
            check_value(prog, ins.out, vals[ins.out])
            if ins.op == "BatchNorm" and ins.attrs.get("is_training") is True:   # the moving statistics, in place
                for v, new in zip(ins.ins[3:5], batch_norm_moving(args, ins.attrs)):
                    feeds[v] = to_dtype(new, prog.dtypes[v])
            if ins.op in STATE_OPS:                           # x updated in place: the result
                feeds[ins.ins[0]] = to_dtype(vals[ins.out], prog.dtypes[ins.ins[0]])
    return vals


def backward(prog, vals, loss, seed=1.0, stop=()):
    """Gradients of `seed` times value `loss` with respect to every float value it depends on
    (not through the instructions in stop: their results' gradients are left where they are)."""
    adj = {loss: to_dtype(np.full(vals[loss].shape, seed), prog.dtypes[loss])}
    with np.errstate(all="ignore"):
        for ins in reversed(prog.instrs):
            if ins.out not in adj or ins in stop:
                continue
            g = widen(adj[ins.out], prog.dtypes[ins.out])
            args = [widen(vals[v], prog.dtypes[v]) for v in ins.ins]
            grads = [dropout(prog, ins, g)] if ins.op == "Dropout" else \
                [do_mask(prog, ins, g, args[1]), None] if ins.op == "DropoutDoMask" else \
                OPS[ins.op][1](g, args, op_attrs(prog, ins))
            for v, gv in zip(ins.ins, grads):
                dt = prog.dtypes[v]
                if gv is None or not is_float(dt):
                    continue
                gv = to_dtype(gv, dt)
                adj[v] = gv if v not in adj else to_dtype(widen(adj[v], dt) + widen(gv, dt), dt)
    return adj


# ---------------------------------------------------------------------------
# Optimizers (MindSpore nn.SGD, nn.Momentum, nn.Adam, nn.AdamWeightDecay, nn.Lamb;
# see the docstring).

OPTIMIZERS = {   # name -> {argument: MindSpore's default, None where it has none}
    "SGD": {"learning_rate": 0.1, "momentum": 0.0, "dampening": 0.0, "weight_decay": 0.0, "nesterov": False},
    "Momentum": {"learning_rate": None, "momentum": None, "weight_decay": 0.0, "use_nesterov": False},
    "Adam": {"learning_rate": 1e-3, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "weight_decay": 0.0},
    "AdamWeightDecay": {"learning_rate": 1e-3, "beta1": 0.9, "beta2": 0.999, "eps": 1e-6, "weight_decay": 0.0},
    "Lamb": {"learning_rate": None, "beta1": 0.9, "beta2": 0.999, "eps": 1e-6, "weight_decay": 0.0},
}

RANGES = {   # argument -> (test, what it must be), MindSpore's checks
    "learning_rate": (lambda v: v >= 0, "at least 0"),
    "momentum": (lambda v: v >= 0, "at least 0"),
    "dampening": (lambda v: v >= 0, "at least 0"),
    "weight_decay": (lambda v: v >= 0, "at least 0"),
    "beta1": (lambda v: 0 < v < 1, "between 0 and 1, both excluded"),
    "beta2": (lambda v: 0 < v < 1, "between 0 and 1, both excluded"),
    "eps": (lambda v: v > 0, "greater than 0"),
}


# Learning-rate schedules: name -> [(argument, MindSpore's default or None, kind)]
# in the order lr_at reads them; kind: "pos" > 0, "nonneg" >= 0, "steps" an
# integer >= 1, "steps0" an integer >= 0, "bool".
SCHEDULES = {
    "WarmUpLR": [("learning_rate", None, "nonneg"), ("warmup_steps", None, "steps")],
    "CosineDecayLR": [("min_lr", None, "nonneg"), ("max_lr", None, "pos"), ("decay_steps", None, "steps")],
    "PolynomialDecayLR": [("learning_rate", None, "pos"), ("end_learning_rate", None, "nonneg"),
                          ("decay_steps", None, "steps"), ("power", None, "pos"),
                          ("update_decay_steps", False, "bool")],
    "ExponentialDecayLR": [("learning_rate", None, "pos"), ("decay_rate", None, "pos"),
                           ("decay_steps", None, "steps"), ("is_stair", False, "bool")],
    "CosineWithWarmUpLR": [("learning_rate", None, "pos"), ("warmup_steps", 0, "steps0"),
                           ("total_steps", None, "steps"), ("lr_end", 0.0, "nonneg"),
                           ("warmup_lr_init", 0.0, "nonneg")],
}


def schedule_config(v):
    """(name, [argument values]) of a learning_rate schedule; ModelError when bad."""
    if v.name not in SCHEDULES:
        raise ModelError(v.offset, "unknown learning-rate schedule '%s'" % v.name)
    spec = SCHEDULES[v.name]
    vals = {k: d for k, d, _ in spec}
    kinds = {k: kind for k, _, kind in spec}
    for key, x in (v.args if isinstance(v, Apply) else []):
        if key not in kinds:
            raise ModelError(v.offset, "%s has no argument '%s'" % (v.name, key))
        kind = kinds[key]
        ok = (type(x) is bool if kind == "bool" else
              type(x) is int and x >= (1 if kind == "steps" else 0) if kind.startswith("steps") else
              type(x) in (int, float) and (x > 0 if kind == "pos" else x >= 0))
        if not ok:
            raise ModelError(v.offset, "%s's '%s' is out of range" % (v.name, key))
        vals[key] = x
    missing = [k for k, x in vals.items() if x is None]
    if missing:
        raise ModelError(v.offset, "%s needs %s" % (v.name, ", ".join(missing)))
    args = [float(vals[k]) for k, _, _ in spec]
    if v.name == "CosineDecayLR" and not args[0] < args[1]:
        raise ModelError(v.offset, "CosineDecayLR's max_lr must be greater than its min_lr")
    if v.name == "CosineWithWarmUpLR" and not args[2] > args[1]:
        raise ModelError(v.offset, "CosineWithWarmUpLR's total_steps must be greater than its warmup_steps")
    return v.name, args


def lr_at(schedule, g):
    """The learning rate at MindSpore's global_step g (0 at the first update)."""
    name, a = schedule
    g = float(g)
    if name == "WarmUpLR":
        return a[0] * min(g, a[1]) / a[1]
    if name == "CosineDecayLR":
        return a[0] + 0.5 * (a[1] - a[0]) * (1.0 + math.cos(math.pi * min(g, a[2]) / a[2]))
    if name == "PolynomialDecayLR":
        d = a[2]
        if a[4]:
            d *= max(math.ceil(g / d), 1.0)
        else:
            g = min(g, d)
        return (a[0] - a[1]) * (1.0 - g / d) ** a[3] + a[1]
    if name == "ExponentialDecayLR":
        p = g / a[2]
        return a[0] * a[1] ** (math.floor(p) if a[3] else p)
    if name == "CosineWithWarmUpLR":
        if g < a[1]:
            return a[4] + (a[0] - a[4]) * g / a[1]
        return a[3] + 0.5 * (a[0] - a[3]) * (1.0 + math.cos(math.pi * min((g - a[1]) / (a[2] - a[1]), 1.0)))
    raise AssertionError(name)


def accumulate_config(module):
    """The train block's accumulate_steps (or micro_batches, its other name): micro-batches a step (1: none).
    micro_batches "auto" is 1: the graph is the step's batch, which the micro-batches the compiler
    picks split (their mean loss that batch's, for a mean loss)."""
    block, offset = module.train
    n = block.get("accumulate_steps", block.get("micro_batches", 1))
    if n == "auto" and "micro_batches" in block:
        return 1
    if type(n) is not int or not 1 <= n <= 1000000:
        raise ModelError(offset, "accumulate_steps is a positive integer, at most 1000000")
    return n


def optimizer_config(module):
    """(name, {argument: value}, steps, clip_global_norm or None) of the train block."""
    block, offset = module.train
    for key in block:
        if key not in ("loss", "optimizer", "steps", "accumulate_steps", "micro_batches", "clip_global_norm", "precision",
                       "init_loss_scale", "scale_factor", "scale_window", "recompute", "weight_decay_params"):
            raise ModelError(offset, "unknown train key '%s' (expected loss, optimizer, steps, accumulate_steps, "
                             "clip_global_norm, precision, init_loss_scale, scale_factor, scale_window, recompute, "
                             "weight_decay_params)" % key)
    if block.get("recompute", False) not in (True, False):   # recomputation changes no number
        raise ModelError(offset, "recompute is true or false")
    steps = block.get("steps", 1)
    if type(steps) is not int or steps < 1:
        raise ModelError(offset, "steps is a positive integer")
    clip = block.get("clip_global_norm")
    if clip is not None and (type(clip) not in (int, float) or not clip > 0):
        raise ModelError(offset, "clip_global_norm is a number greater than 0")
    opt = block.get("optimizer", Ident("SGD", offset))
    if not isinstance(opt, (Ident, Apply)) or opt.name not in OPTIMIZERS:
        raise ModelError(getattr(opt, "offset", offset),
                         "optimizer is SGD(...), Momentum(...), Adam(...), AdamWeightDecay(...) or Lamb(...)")
    hyper = dict(OPTIMIZERS[opt.name])
    for key, v in (opt.args if isinstance(opt, Apply) else []):
        if key is None:
            raise ModelError(opt.offset, "name the optimizer's arguments: %s(learning_rate: ...)" % opt.name)
        if key not in hyper:
            raise ModelError(opt.offset, "%s has no argument '%s' (it takes %s)"
                             % (opt.name, key, ", ".join(OPTIMIZERS[opt.name])))
        if key in ("nesterov", "use_nesterov"):
            if type(v) is not bool:
                raise ModelError(opt.offset, "'%s' is true or false" % key)
            hyper[key] = v
            continue
        if key == "learning_rate" and isinstance(v, (Ident, Apply)):
            hyper["schedule"] = schedule_config(v)
            hyper[key] = 0.0
            continue
        if type(v) not in (int, float):
            raise ModelError(opt.offset, "'%s' is a number" % key)
        test, what = RANGES[key]
        if not test(v):
            raise ModelError(opt.offset, "%s's '%s' is %s" % (opt.name, key, what))
        hyper[key] = float(v)
    missing = [k for k, v in hyper.items() if v is None]
    if missing:
        raise ModelError(opt.offset, "%s needs %s (MindSpore's nn.%s has no default)"
                         % (opt.name, " and ".join(missing), opt.name))
    if opt.name == "SGD" and hyper["nesterov"] and not (hyper["momentum"] > 0 and hyper["dampening"] == 0):
        raise ModelError(opt.offset, "SGD with nesterov needs momentum > 0 and dampening 0")
    group = block.get("weight_decay_params")   # MindSpore's group parameters: these decay, no other
    if group is not None:
        if not isinstance(group, (tuple, list)) or not all(isinstance(r, Ref) for r in group):
            raise ModelError(offset, "weight_decay_params is a tuple of parameters, such as (%w1, %w2)")
        hyper["decay_group"] = set(r.name for r in group)
    return opt.name, hyper, steps, None if clip is None else float(clip)


def decays(hyper, name, every=False):
    """weight_decay_params when given (MindSpore's group parameters); else
    MindSpore's default decay filter for ungrouped parameters (nn.Momentum,
    nn.Adam, nn.AdamWeightDecay; nn.SGD's kernel decays every parameter)."""
    if "decay_group" in hyper:
        return name in hyper["decay_group"]
    return every or ("beta" not in name and "gamma" not in name)


def sgd_update(p, g, state, hyper, t, name):
    """nn.SGD, as its SGD kernel: the first step sets the accumulation to the gradient."""
    if decays(hyper, name, every=True):
        g = g + hyper["weight_decay"] * p
    mu = hyper["momentum"]
    if mu > 0:
        a = g if t == 1 else mu * state["a"] + (1.0 - hyper["dampening"]) * g
        state["a"] = a
        g = g + mu * a if hyper["nesterov"] else a
    return p - hyper["learning_rate"] * g


def momentum_update(p, g, state, hyper, t, name):
    if hyper["weight_decay"] and decays(hyper, name):
        g = g + hyper["weight_decay"] * p
    mu, lr = hyper["momentum"], hyper["learning_rate"]
    v = mu * state.get("v", 0.0) + g
    state["v"] = v
    return p - (lr * g + lr * mu * v if hyper["use_nesterov"] else lr * v)


def adam_update(p, g, state, hyper, t, name):
    b1, b2 = hyper["beta1"], hyper["beta2"]
    if hyper["weight_decay"] and decays(hyper, name):
        g = g + hyper["weight_decay"] * p
    m = b1 * state.get("m", 0.0) + (1.0 - b1) * g
    v = b2 * state.get("v", 0.0) + (1.0 - b2) * g * g
    state["m"], state["v"] = m, v
    lr_t = hyper["learning_rate"] * np.sqrt(1.0 - b2 ** t) / (1.0 - b1 ** t)
    return p - lr_t * m / (np.sqrt(v) + hyper["eps"])


def adam_weight_decay_update(p, g, state, hyper, t, name):
    """nn.AdamWeightDecay: no bias correction; the decay joins the update, not m and v."""
    b1, b2 = hyper["beta1"], hyper["beta2"]
    m = b1 * state.get("m", 0.0) + (1.0 - b1) * g
    v = b2 * state.get("v", 0.0) + (1.0 - b2) * g * g
    state["m"], state["v"] = m, v
    update = m / (np.sqrt(v) + hyper["eps"])
    if decays(hyper, name):
        update = update + hyper["weight_decay"] * p
    return p - hyper["learning_rate"] * update


def lamb_update(p, g, state, hyper, t, name):
    """nn.Lamb: Adam's moments bias-corrected, their ratio plus the decay, scaled by the
    layer's trust ratio ||p|| / ||update||, both norms over the whole parameter (1 when
    either is 0; 2^-126 is MindSpore's guard in the divisor)."""
    b1, b2 = hyper["beta1"], hyper["beta2"]
    m = b1 * state.get("m", 0.0) + (1.0 - b1) * g
    v = b2 * state.get("v", 0.0) + (1.0 - b2) * g * g
    state["m"], state["v"] = m, v
    update = m / (1.0 - b1 ** t) / (np.sqrt(v / (1.0 - b2 ** t)) + hyper["eps"])
    if decays(hyper, name):
        update = update + hyper["weight_decay"] * p
    w_norm, u_norm = math.sqrt(float(np.sum(p * p))), math.sqrt(float(np.sum(update * update)))
    ratio = w_norm / (u_norm + 2.0 ** -126) if w_norm > 0 and u_norm > 0 else 1.0
    return p - hyper["learning_rate"] * ratio * update


UPDATES = {"SGD": sgd_update, "Momentum": momentum_update, "Adam": adam_update,
           "AdamWeightDecay": adam_weight_decay_update, "Lamb": lamb_update}


def clip_by_global_norm(trained, params, grads, clip):
    """ops.clip_by_global_norm: every gradient times clip / max(global norm, clip)."""
    with np.errstate(all="ignore"):
        wide = {vid: widen(grads[vid], dtype) if vid in grads else np.zeros(params[vid].shape)
                for vid, (_, dtype) in trained.items()}
        norm = math.sqrt(sum(float(np.sum(g * g)) for g in wide.values()))
        scale = clip / max(norm, clip)
        for vid, (_, dtype) in trained.items():
            grads[vid] = to_dtype(wide[vid] * scale, dtype)


def optimizer_step(name, hyper, trained, params, grads, states, t):
    """One update of every trained parameter (value id -> (name, dtype)), step t from 1.

    `params` (value id -> array) is updated in place; `states` holds each
    parameter's optimizer state (value id -> {"m": ..., "v": ...})."""
    with np.errstate(all="ignore"):
        for vid, (pname, dtype) in trained.items():
            p = widen(params[vid], dtype)
            g = widen(grads[vid], dtype) if vid in grads else np.zeros(p.shape)
            state = {k: widen(v, dtype) for k, v in states[vid].items()}
            p = UPDATES[name](p, g, state, hyper, t, pname)
            states[vid] = {k: to_dtype(v, dtype) for k, v in state.items()}
            params[vid] = to_dtype(p, dtype)


def format_loss(x):
    """The shortest decimal that reads back as the same float32 (MindSpore's print of a float32 tensor)."""
    return str(np.float32(x))


def train(prog, module, feeds, steps_override, out, data=None):
    """Runs the train block (each step's batch of the --data inputs from
    data); returns the last step's values and the trained inputs."""
    name, hyper, steps, clip = optimizer_config(module)
    if steps_override is not None:
        steps = steps_override
    moving = {v for ins in prog.instrs if ins.op == "BatchNorm" for v in ins.ins[3:5]}   # updated by it, not trained
    moving |= {ins.ins[0] for ins in prog.instrs if ins.op in STATE_OPS}
    trained = {vid: (p.name, p.type.dtype) for vid, p in prog.inputs if p.type.kind == "Parameter" and vid not in moving}
    for vid, p in prog.inputs:
        if vid in trained and not is_float(p.type.dtype):
            raise ModelError(p.offset, "parameter '%%%s' is %s; only float parameters can be trained"
                             % (p.name, p.type.dtype))
    params = dict(feeds)
    states = {vid: {} for vid in trained}
    vals = None
    scaling = loss_scale_config(module)
    scale, good, updates = (scaling[0] if scaling else 1.0), 0, 0
    prog.train = True
    n = accumulate_config(module)
    # a trained parameter's copy in another type (mixed precision's half copy, a Cast of it):
    # with accumulation its gradient is summed and rounded to the copy's type before it is cast back
    copies = [ins for ins in prog.instrs if ins.op == "Cast" and ins.ins[0] in trained] if n > 1 else []
    for t in range(1, steps + 1):
        # accumulate_steps n: micro-batch m of step t is the run's batch (t - 1) n + m + 1,
        # each seeded with scale / n (the gradient of the micro-batches' mean loss),
        # the gradients summed in float64 and rounded once, the loss the mean.
        grads, loss_sum, copied = {}, 0.0, {}
        for m in range(n):
            batch = (t - 1) * n + m + 1
            if data:
                params.update(data.batch(batch))
            prog.step = batch
            vals = forward(prog, params)
            if vals[prog.loss].shape != ():
                raise ModelError(prog.loss_offset, "the loss '%%%s' is %s, not a scalar"
                                 % (prog.names[prog.loss], vals[prog.loss].shape))
            loss_sum += float(np.float32(vals[prog.loss]))
            micro = backward(prog, vals, prog.loss, scale / n if n > 1 else scale, copies)
            for v in trained:
                if v in micro:
                    grads[v] = widen(micro[v], trained[v][1]) + grads.get(v, 0.0)
            for ins in copies:
                if ins.out in micro:
                    copied[ins] = widen(micro[ins.out], prog.dtypes[ins.out]) + copied.get(ins, 0.0)
        for v in grads:
            grads[v] = to_dtype(grads[v], trained[v][1]) if n > 1 else micro[v]
        for ins, g in copied.items():   # each copy's sum rounded to its type, then cast back
            v, dt = ins.ins[0], trained[ins.ins[0]][1]
            g = to_dtype(widen(to_dtype(g, prog.dtypes[ins.out]), prog.dtypes[ins.out]), dt)
            grads[v] = g if v not in grads else to_dtype(widen(grads[v], dt) + widen(g, dt), dt)
        if "schedule" in hyper:
            hyper["learning_rate"] = lr_at(hyper["schedule"], updates)   # the updates before this one
        loss = vals[prog.loss] if n == 1 else np.float32(loss_sum / n)
        out.write("step: %d, loss is %s, lr %.6g\n" % (t, format_loss(loss), hyper["learning_rate"]))
        out.flush()
        if scaling:
            # Dynamic loss scaling: an inf or NaN in any scaled gradient skips the
            # step and divides the scale (not below 1); else the gradients are
            # unscaled, and scale_window good steps in a row multiply it.
            with np.errstate(all="ignore"):
                sq = float(np.float32(sum(float(np.sum(np.float64(grads[v]) ** 2)) for v in trained if v in grads)))
            if not math.isfinite(sq):
                nxt = max(scale / scaling[1], 1.0)
                out.write("step: %d, overflow, loss scale %.10g -> %.10g, step skipped\n" % (t, scale, nxt))
                scale, good = nxt, 0
                continue
            for v in trained:
                if v in grads:
                    grads[v] = to_dtype(widen(grads[v], trained[v][1]) * (1.0 / scale), trained[v][1])
        if clip is not None:
            clip_by_global_norm(trained, params, grads, clip)
        updates += 1                                 # a skipped step is no update (SGD's first, Adam's t)
        optimizer_step(name, hyper, trained, params, grads, states, updates)
        if scaling:
            good += 1
            if good == scaling[2]:
                scale, good = scale * scaling[1], 0
    return vals, params


# ---------------------------------------------------------------------------
# Files and the command line.

def npy_dtype(dtype):
    return np.dtype(STORAGE[dtype])


def load_array(what, path):
    """The array in a .npy file; FeedError naming `what` when there is none."""
    try:
        x = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise FeedError("%s: no such file '%s'" % (what, path))
    except (OSError, ValueError) as e:
        raise FeedError("%s: cannot read '%s' as a .npy file: %s" % (what, path, e))
    if not isinstance(x, np.ndarray):
        raise FeedError("%s: '%s' holds no array" % (what, path))
    return x


def load_feed(flag, name, path, param):
    """A value read from a .npy file for input `name` of the expected type."""
    x = load_array("%s %s" % (flag, name), path)
    want, shape = npy_dtype(param.type.dtype), tuple(param.type.shape)
    if not isinstance(x, np.ndarray) or x.dtype.newbyteorder("=") != want.newbyteorder("=") or x.shape != shape:
        got = "%s %s" % (x.dtype, x.shape) if isinstance(x, np.ndarray) else "not an array"
        raise FeedError("%s %s: '%s' holds %s, but '%%%s' is %s %s, which needs a %s array of shape %s"
                        % (flag, name, path, got, name, param.type.dtype, shape, want, shape))
    x = x.astype(want)
    return round_bf16(x) if param.type.dtype == "BFloat16" else x


def feeds_for(prog, seed, inputs, params):
    """Every entry-graph input and parameter: from its file, or from its initializer."""
    by_name = {p.name: (vid, p) for vid, p in prog.inputs}
    files = {}
    for flag, pairs, kind in (("--input", inputs, "Tensor"), ("--param", params, "Parameter")):
        for pair in pairs:
            name, sep, path = pair.partition("=")
            if not sep or not name or not path:
                raise FeedError("%s %s: expected NAME=FILE.npy" % (flag, pair))
            if name not in by_name:
                raise FeedError("%s %s: the entry graph has no input or parameter '%%%s'" % (flag, name, name))
            p = by_name[name][1]
            if p.type.kind != kind:
                other = "--param" if p.type.kind == "Parameter" else "--input"
                raise FeedError("%s %s: '%%%s' is a %s; give it with %s" % (flag, name, name, p.type.kind, other))
            files[name] = (flag, path)
    feeds = {}
    for vid, p in prog.inputs:
        if p.name in files:
            feeds[vid] = load_feed(files[p.name][0], p.name, files[p.name][1], p)
        else:
            feeds[vid] = initialize(p.name, p.type, p.init, seed)
    return feeds


# ---------------------------------------------------------------------------
# Data that streams (docs/output.md, Data that streams): --data, --labels,
# --shuffle give some inputs a new batch every step.  Python integers here,
# not the initializers' numpy code: one more independent reading of the rules.

LLMC_MAGIC, LLMC_MAGIC_LLAMA3 = 20240520, 20240801


def data_draw(seed, j):
    """The j-th draw of the generator seeded with seed: splitmix64(seed * 0x9e3779b97f4a7c15 + j)."""
    z = (seed * 0x9e3779b97f4a7c15 + j + 0x9e3779b97f4a7c15) & M64
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M64
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M64
    return z ^ (z >> 31)


def batch_order(seed, epoch, nb):
    """Epoch's order of nb batches: Fisher-Yates from the last, position i
    swapped with draw(seed, epoch * nb + i) mod (i + 1)."""
    perm = list(range(nb))
    for i in range(nb - 1, 0, -1):
        j = data_draw(seed, epoch * nb + i) % (i + 1)
        perm[i], perm[j] = perm[j], perm[i]
    return perm


def read_token_file(path, flag):
    """The tokens of a token stream (int64) and its format: a .npy (1-D
    int32), llm.c's .bin (first int32 20240520: a 256-int32 header, version
    1, the count, then uint16), else uint16 from the first byte."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise FeedError("%s: cannot read '%s': %s" % (flag, path, e.strerror))
    if raw[:6] == b"\x93NUMPY":
        x = np.load(path, allow_pickle=False)
        if x.ndim != 1 or x.dtype.newbyteorder("=") != np.dtype(np.int32):
            raise FeedError("%s: '%s' is a .npy of %s %s, not 1-D int32" % (flag, path, x.dtype, x.shape))
        return x.astype(np.int64)
    head = np.frombuffer(raw[:12], "<i4") if len(raw) >= 12 else np.zeros(3, np.int32)
    if head[0] == LLMC_MAGIC_LLAMA3:
        raise FeedError("%s: '%s' is llm.c's Llama 3 format, which is not read" % (flag, path))
    if head[0] == LLMC_MAGIC:
        if head[1] != 1 or len(raw) != 1024 + 2 * int(head[2]):
            raise FeedError("%s: '%s' has a bad llm.c header (version %d, %d tokens, %d bytes)"
                            % (flag, path, head[1], head[2], len(raw)))
        return np.frombuffer(raw[1024:], "<u2").astype(np.int64)
    if len(raw) % 2:
        raise FeedError("%s: '%s' has an odd number of bytes" % (flag, path))
    return np.frombuffer(raw, "<u2").astype(np.int64)


class DataStreams:
    """The inputs fed by --data: batch(t) is {vid: value} for step t (from 1)."""

    def __init__(self, prog, specs, labels, shuffle):
        by_name = {p.name: (vid, p) for vid, p in prog.inputs if p.type.kind == "Tensor"}
        self.sources = []   # (kind, vids, params, file data, numbers)
        self.seed = shuffle
        for spec in specs:
            name, sep, rest = spec.partition("=")
            if not sep or not name or not rest:
                raise FeedError("--data %s: expected NAME=FILE.npy or NAME=FILE:S" % spec)
            if name not in by_name:
                raise FeedError("--data %s: the entry graph has no input '%%%s'" % (spec, name))
            path, colon, slen = rest.rpartition(":")
            vid, p = by_name[name]
            if colon and slen.isdigit():
                S = int(slen)
                feeds = [(vid, p)]
                if labels is not None:
                    if labels not in by_name:
                        raise FeedError("--labels %s: the entry graph has no input '%%%s'" % (labels, labels))
                    feeds.append(by_name[labels])
                toks = read_token_file(path, "--data %s" % spec)
                count = int(np.prod(p.type.shape, dtype=np.int64))
                if S < 1 or count % S:
                    raise FeedError("--data %s: %d elements are no whole number of samples of %d" % (spec, count, S))
                if len(toks) < count + 1:
                    raise FeedError("--data %s: %d tokens, too few for one step (%d)" % (spec, len(toks), count + 1))
                self.sources.append(("tokens", feeds, toks, S, count // S))
            else:
                x = load_array("--data %s" % spec, rest)
                shape = tuple(p.type.shape)
                want = npy_dtype(p.type.dtype)
                if (not shape or x.shape[1:] != shape[1:] or x.ndim != len(shape) or x.shape[0] % shape[0]
                        or x.shape[0] == 0 or x.dtype.newbyteorder("=") != want.newbyteorder("=")):
                    raise FeedError("--data %s: '%s' holds %s %s, not (N,) + %s with N a multiple of %d"
                                    % (spec, rest, x.dtype, x.shape, shape[1:], shape[0] if shape else 0))
                x = x.astype(want)
                x = round_bf16(x) if p.type.dtype == "BFloat16" else x
                self.sources.append(("rows", [(vid, p)], x, shape[0], x.shape[0] // shape[0]))
        self.order = {}

    def vids(self):
        return {vid for src in self.sources for vid, _ in src[1]}

    def batch(self, t):
        out = {}
        for k, (kind, feeds, x, size, per) in enumerate(self.sources):
            if kind == "rows":
                nb, epoch, i = per, (t - 1) // per, (t - 1) % per
                if self.seed is not None:
                    if self.order.get(k, (None,))[0] != epoch:
                        self.order[k] = (epoch, batch_order(self.seed, epoch, nb))
                    i = self.order[k][1][i]
                (vid, _), = feeds
                out[vid] = x[i * size:(i + 1) * size]
                continue
            S, ns = size, per
            q = [(t - 1) * ns + i for i in range(ns)]
            if self.seed is not None:
                starts = [data_draw(self.seed, j) % (len(x) - S) for j in q]
            else:
                starts = [j % ((len(x) - 1) // S) * S for j in q]
            for shift, (vid, p) in enumerate(feeds):
                v = np.stack([x[a + shift:a + shift + S] for a in starts])
                out[vid] = v.reshape(p.type.shape).astype(npy_dtype(p.type.dtype))
        return out


def context_seed(module):
    if not module.context:
        return 0
    seed = module.context[0].get("seed", 0)
    if type(seed) is not int:
        raise ModelError(module.context[1], "seed is an integer")
    return seed


def save(path, x, dtype):
    np.save(path, np.asarray(x, dtype=npy_dtype(dtype)))


def location(src, offset):
    """Line and byte column (from 1) of a character offset."""
    line = src.count("\n", 0, offset) + 1
    start = src.rfind("\n", 0, offset) + 1
    return line, len(src[start:offset].encode("utf-8")) + 1


def run(argv, out=sys.stdout, err=sys.stderr):
    ap = argparse.ArgumentParser(prog="ref_eval.py", description="Serial numpy reference evaluator for shardc IR.")
    ap.add_argument("model", help="MODEL.ir")
    ap.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy", help="feed a graph input")
    ap.add_argument("--param", action="append", default=[], metavar="NAME=FILE.npy", help="feed a parameter")
    ap.add_argument("--data", action="append", default=[], metavar="NAME=FILE.npy|NAME=FILE:S",
                    help="an input that streams: a batch a step from a .npy dataset or a token stream")
    ap.add_argument("--labels", metavar="NAME", help="the input fed a token stream's next tokens")
    ap.add_argument("--shuffle", type=int, metavar="SEED", help="shuffle the --data batches or samples")
    ap.add_argument("--output-dir", default="results", metavar="DIR", help="where to write (default ./results)")
    ap.add_argument("--steps", type=int, metavar="K", help="training steps (overrides the train block)")
    ap.add_argument("--seed", type=int, metavar="S", help="initializer seed (overrides the context)")
    ap.add_argument("--shardc", metavar="SHARDC", help="the compiler whose operator table gives mixed precision's "
                    "classes (default: $SHARDC, else this repository's build/shardc)")
    args = ap.parse_args(argv)
    if args.steps is not None and args.steps < 1:
        ap.error("--steps is a positive integer")
    try:
        with open(args.model, "rb") as f:
            raw = f.read()
    except OSError as e:
        err.write("ref_eval.py: error: cannot read %s: %s\n" % (args.model, e.strerror))
        return 1
    try:
        src = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line, start = raw.count(b"\n", 0, e.start) + 1, raw.rfind(b"\n", 0, e.start) + 1
        err.write("%s:%d:%d: error: the model is not UTF-8 text (byte 0x%02x)\n"
                  % (args.model, line, e.start - start + 1, raw[e.start]))
        return 1
    try:
        module = parse(src)
        prog = flatten(module)
        seed = args.seed if args.seed is not None else context_seed(module)
        prog.seed = seed                             # a Dropout's mask too (shardc --seed sets the same)
        if module.train:
            optimizer_config(module)                 # report a bad train block before any work
            loss_scale_config(module)
        if precision_config(module):
            autocast(prog, precision_config(module), args.shardc)
        feeds = feeds_for(prog, seed, args.input, args.param)
        data = DataStreams(prog, args.data, args.labels, args.shuffle) if args.data else None
        if data:
            given = {pair.partition("=")[0] for pair in args.input}
            both = [p.name for vid, p in prog.inputs if vid in data.vids() and p.name in given]
            if both:
                raise FeedError("input '%s' is given by both --input and --data" % both[0])
        elif args.labels is not None or args.shuffle is not None:
            raise FeedError("--labels and --shuffle go with --data")
        os.makedirs(args.output_dir, exist_ok=True)
        if module.train:
            vals, params = train(prog, module, feeds, args.steps, out, data)
        else:
            if data:   # the graph runs K times; the results are the last run's
                feeds.update(data.batch(args.steps or 1))
            vals, params = forward(prog, feeds), {}
        for k, vid in enumerate(prog.outputs):
            save(os.path.join(args.output_dir, "output_%d.npy" % k), vals[vid], prog.dtypes[vid])
        for vid, p in prog.inputs:
            if vid in params and p.type.kind == "Parameter":
                save(os.path.join(args.output_dir, "param_%s.npy" % p.name), params[vid], p.type.dtype)
    except ModelError as e:
        line, col = location(src, e.offset)
        err.write("%s:%d:%d: error: %s\n" % (args.model, line, col, e.message))
        return 1
    except FeedError as e:
        err.write("ref_eval.py: error: %s\n" % e)
        return 1
    except OSError as e:
        err.write("ref_eval.py: error: %s\n" % e)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
