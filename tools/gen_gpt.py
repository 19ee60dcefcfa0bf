#!/usr/bin/env python3
# Usage: gen_gpt.py --layers N [--train [--precision bf16|fp16] [--optimizer sgd|momentum|adam]] [--hidden H] [--seq S] [--batch B] [--heads A] [--ffn F] [--vocab V [--vocab-mp K]] [--devices D] [--mode semi_auto_parallel|auto_parallel] [--search recursive_programming|sharding_propagation] [--megatron [--mp M]] [--pipeline P [--micro-batches M]] [--zero LEVEL] [--recompute true|selective] [--seed K] [-o FILE]
"""Write a GPT-style stack of N transformer layers as a shardc IR module (docs/language.md).

Each layer has the block structure of ir-samples/transformer_block.ir, on the 2-D
activation x = (batch * seq, hidden):

    LayerNorm -> Q, K, V MatMul -> Reshape (B, S, A, H/A) -> Transpose (0, 2, 1, 3)
    -> BatchMatMul(q, k, transpose_b) -> Mul by the scale input -> Softmax
    -> BatchMatMul(., v) -> Transpose (0, 2, 1, 3) -> Reshape (B*S, H) -> MatMul wo
    -> residual Add -> LayerNorm -> MatMul fc1 + BiasAdd -> GeLU -> MatMul fc2
    + BiasAdd -> residual Add

(25 operators per layer).  Parameters are named l<i>.<name> (l0.wq, l0.fc1.weight,
...); the graph inputs are %x and the constant %scale = 1/sqrt(H/A).  With --vocab V
the stack is a language model: x is the rows of a table %wte (V, H) that the token
ids %ids (B, S) name (Gather), and the loss (with --train) the cross-entropy of the
tied head's logits x wte^T against %labels; with --megatron the lookup, the head and
the cross-entropy split the vocabulary --vocab-mp ways (default mp), unevenly where
that does not divide V (docs/language.md, Uneven splits).

Without --megatron no operator carries a strategy.  With --megatron the devices are
split as dp x mp (mp the largest divisor of --devices that divides --heads, unless
--mp is given; dp = gcd(devices / mp, batch)) and every operator but the Reshapes
gets the Megatron in_strategy: Q/K/V and fc1 weights column-split (1, mp), wo and
fc2 row-split (mp, 1), attention split over (batch dp, heads mp), LayerNorm, Softmax
and the residual Adds with their normalized / feature axis whole.

With --pipeline P (and --train) the context has pipeline_stages P and the train
block micro_batches M (--micro-batches, default P): the graph is one micro-batch of
--batch rows, a step M of them (--micro-batches auto, with --mode auto_parallel:
micro_batches "auto", the graph the step's --batch rows, the search picks M).  The
strategies are over a stage's devices (devices / P); with --megatron every layer
carries pipeline_stage (layer i on stage i * P // layers, the lookup on the first,
the head and loss on the last: Megatron's equal layers a stage), without it the
compiler splits the stages.

Standard library only.  --layers 5000 (125,000 operators) takes a second or two.
"""
import argparse
import math
import sys


def die(msg):
    sys.stderr.write("gen_gpt.py: error: %s\n" % msg)
    sys.exit(2)


def largest_divisor(n, of):
    """Largest d dividing both n and of."""
    return math.gcd(n, of)


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Write a GPT-style stack of transformer layers as shardc IR.")
    ap.add_argument("--layers", type=int, required=True, help="number of transformer layers")
    ap.add_argument("--hidden", type=int, default=64, help="hidden size H (default 64)")
    ap.add_argument("--seq", type=int, default=16, help="sequence length S (default 16)")
    ap.add_argument("--batch", type=int, default=8, help="batch size B (default 8)")
    ap.add_argument("--heads", type=int, default=4, help="attention heads A (default 4)")
    ap.add_argument("--ffn", type=int, default=None, help="MLP width (default 4*H)")
    ap.add_argument("--devices", type=int, default=8, help="device_num (default 8)")
    ap.add_argument("--mode", default="semi_auto_parallel",
                    choices=["semi_auto_parallel", "auto_parallel"])
    ap.add_argument("--search", default=None,
                    choices=["recursive_programming", "sharding_propagation"],
                    help="search_mode (written only with --mode auto_parallel)")
    ap.add_argument("--megatron", action="store_true",
                    help="add Megatron column/row in_strategy annotations")
    ap.add_argument("--mp", type=int, default=None,
                    help="model-parallel degree for --megatron (default: gcd(devices, heads))")
    ap.add_argument("--vocab", type=int, default=0, help="a token embedding and tied head of V rows (default none)")
    ap.add_argument("--vocab-mp", type=int, default=None,
                    help="with --megatron --vocab: slices of the vocabulary (default mp; the batch split the rest)")
    ap.add_argument("--pipeline", default="1",
                    help="pipeline_stages P (with --train); the strategies are over devices / P; "
                         "\"auto\" (with --mode auto_parallel): the search picks P")
    ap.add_argument("--micro-batches", default=None,
                    help="with --pipeline: the train block's micro_batches (default P); \"auto\" (with --mode "
                         "auto_parallel): the search picks it, the graph the step's batch")
    ap.add_argument("--seed", type=int, default=None, help="context seed")
    ap.add_argument("--train", action="store_true",
                    help="add a target input, an MSELoss of the last layer's output and a train block (1 step)")
    ap.add_argument("--precision", default=None, choices=("bf16", "fp16", "fp32"),
                    help="with --train: the train block's precision (mixed precision)")
    ap.add_argument("--optimizer", default="sgd", choices=["sgd", "momentum", "adam"],
                    help="the train block's optimizer (default sgd)")
    ap.add_argument("--zero", default=None, choices=["level1", "level2", "level3"],
                    help="with --train: enable_parallel_optimizer with this optimizer_level (ZeRO)")
    ap.add_argument("--recompute", default=None, choices=["true", "selective"],
                    help="with --train: the train block's recompute")
    ap.add_argument("-o", "--output", default=None, help="output file (default stdout)")
    a = ap.parse_args(argv)

    N, H, S, B, A, D = a.layers, a.hidden, a.seq, a.batch, a.heads, a.devices
    auto = a.pipeline == "auto"
    if auto and (a.mode != "auto_parallel" or a.megatron or not a.train):
        die("--pipeline auto needs --mode auto_parallel and --train, and no --megatron")
    Pp = 1 if auto else int(a.pipeline)
    if Pp < 1 or D % Pp or (Pp > 1 and not a.train):
        die("--pipeline %d must divide --devices %d and needs --train" % (Pp, D))
    micro_auto = a.micro_batches == "auto"
    if micro_auto and (a.mode != "auto_parallel" or not a.train):
        die("--micro-batches auto needs --mode auto_parallel and --train")
    if a.micro_batches is not None and not micro_auto and (
            (Pp == 1 and not auto) or not a.micro_batches.isdigit() or int(a.micro_batches) < 1):
        die("--micro-batches needs --pipeline and must be positive, or auto")
    M = "auto" if micro_auto else int(a.micro_batches or Pp)
    DW = D          # device_num as written: every rank
    D //= Pp        # a stage's devices: what the strategies split over
    F = a.ffn if a.ffn is not None else 4 * H
    for name, v in (("--layers", N), ("--hidden", H), ("--seq", S), ("--batch", B),
                    ("--heads", A), ("--ffn", F), ("--devices", D)):
        if v <= 0:
            die("%s must be a positive integer" % name)
    if H % A:
        die("--hidden %d is not divisible by --heads %d" % (H, A))
    if a.precision and not a.train:
        die("--precision needs --train (it is a train block option)")
    Dh = H // A
    R = B * S

    dp = mp = 1
    if a.megatron:
        if a.mp is not None:
            mp = a.mp
            if mp <= 0 or D % mp or A % mp or F % mp:
                die("--mp %d must divide --devices %d, --heads %d and --ffn %d" % (mp, D, A, F))
        else:
            mp = largest_divisor(D, math.gcd(A, F))
        dp = math.gcd(D // mp, B)
    elif a.mp is not None:
        die("--mp needs --megatron")
    if a.vocab < 0:
        die("--vocab must be a positive integer")
    if a.vocab_mp is not None and (not a.megatron or not a.vocab or a.vocab_mp <= 0 or D % a.vocab_mp):
        die("--vocab-mp needs --megatron and --vocab, and must divide --devices %d" % D)
    if a.optimizer != "sgd" and not a.train:
        die("--optimizer needs --train")
    if (a.zero or a.recompute) and not a.train:
        die("--zero and --recompute need --train")

    out = []
    stage = [None]  # with --megatron --pipeline: the stage the operators written now run on

    def w(text):
        if stage[0] is not None and text.startswith("  %") and " = " in text:
            body, rest = text.split("\n", 1)   # the operator's line; a return after it stays
            tagged = body[:-1] + ", pipeline_stage: %d}" % stage[0] if body.endswith("}") \
                else body + " {pipeline_stage: %d}" % stage[0]
            text = tagged + "\n" + rest
        out.append(text)
    w("# GPT-style stack generated by tools/gen_gpt.py:\n")
    w("#   %s\n" % " ".join(["gen_gpt.py"] + (sys.argv[1:] if argv is None else list(argv))))
    w("# layers %d, hidden %d, heads %d (head dim %d), seq %d, batch %d, ffn %d, devices %d,\n"
      % (N, H, A, Dh, S, B, F, DW))
    if Pp > 1:
        w("# pipeline: %d stages of %d devices, %s micro-batches a step.\n" % (Pp, D, "the search's count of" if micro_auto else M))
    elif auto:
        w("# pipeline: stages the search's choice, %s micro-batches a step.\n" % ("the search's count of" if micro_auto else M))
    if a.megatron:
        w("# Megatron strategies with dp %d x mp %d%s.\n"
          % (dp, mp, "" if dp * mp == D else " (the remaining %d-fold copies are repeated calculation)" % (D // (dp * mp))))
    else:
        w("# no strategy annotations.\n")
    w("\ncontext {\n  device_num: %d,\n  parallel_mode: \"%s\",\n" % (DW, a.mode))
    if Pp > 1 or auto:
        w("  pipeline_stages: %s,\n" % ('"auto"' if auto else Pp))
    if a.mode == "auto_parallel":
        w("  search_mode: \"%s\",\n" % (a.search or "sharding_propagation"))
    if a.seed is not None:
        w("  seed: %d,\n" % a.seed)
    if a.zero:
        w("  enable_parallel_optimizer: true,\n  optimizer_level: \"%s\",\n" % a.zero)
    w("  dataset_strategy: \"full_batch\"\n}\n\n")

    T = "<Tensor[Float32], (%s)>"
    P = "<Parameter[Float32], (%s)>"

    def shp(*dims):
        return ", ".join(str(d) for d in dims) + ("," if len(dims) == 1 else "")

    # graph header: inputs then every layer's parameters
    V = a.vocab
    I = "<Tensor[Int32], (%s)>"
    if V:
        params = ["%%ids: %s = randint(0, %d)" % (I % shp(B, S), V),
                  "%%scale: %s = constant(%r)" % (T % shp(1), 1.0 / math.sqrt(Dh)),
                  "%%wte: %s = normal(0.02)" % (P % shp(V, H))]
        if a.train:
            params.insert(1, "%%labels: %s = randint(0, %d)" % (I % shp(R), V))
    else:
        params = ["%%x: %s = uniform(-1, 1)" % (T % shp(R, H)),
                  "%%scale: %s = constant(%r)" % (T % shp(1), 1.0 / math.sqrt(Dh))]
        if a.train:
            params.insert(1, "%%target: %s = uniform(-1, 1)" % (T % shp(R, H)))
    pH, pHH, pHF, pFH, pF = P % shp(H), P % shp(H, H), P % shp(H, F), P % shp(F, H), P % shp(F)
    for i in range(N):
        l = "%%l%d." % i
        params += [
            l + "ln1.gamma: " + pH + " = ones",
            l + "ln1.beta: " + pH + " = zeros",
            l + "wq: " + pHH + " = normal(0.02)",
            l + "wk: " + pHH + " = normal(0.02)",
            l + "wv: " + pHH + " = normal(0.02)",
            l + "wo: " + pHH + " = normal(0.02)",
            l + "ln2.gamma: " + pH + " = ones",
            l + "ln2.beta: " + pH + " = zeros",
            l + "fc1.weight: " + pHF + " = normal(0.02)",
            l + "fc1.bias: " + pF + " = zeros",
            l + "fc2.weight: " + pFH + " = normal(0.02)",
            l + "fc2.bias: " + pH + " = zeros",
        ]
    w("graph @gpt(" + ",\n          ".join(params) + ") {\n")

    if a.megatron:
        def st(s):
            return " {in_strategy: %s}" % s
        def st_ln():
            return ", in_strategy: ((%d, 1), (1,), (1,))" % dp
        s_col = st("((%d, 1), (1, %d))" % (dp, mp))
        s_row = st("((%d, %d), (%d, 1))" % (dp, mp, mp))
        s_tin = ", in_strategy: ((%d, 1, %d, 1),)" % (dp, mp)
        s_tout = ", in_strategy: ((%d, %d, 1, 1),)" % (dp, mp)
        s_bmm = ", in_strategy: ((%d, %d, 1, 1), (%d, %d, 1, 1))" % (dp, mp, dp, mp)
        s_bmm2 = st("((%d, %d, 1, 1), (%d, %d, 1, 1))" % (dp, mp, dp, mp))
        s_mul = st("((%d, %d, 1, 1), (1,))" % (dp, mp))
        s_sm = ", in_strategy: ((%d, %d, 1, 1),)" % (dp, mp)
        s_add = st("((%d, 1), (%d, 1))" % (dp, dp))
        s_b1 = st("((%d, %d), (%d,))" % (dp, mp, mp))
        s_gelu = st("((%d, %d),)" % (dp, mp))
        s_b2 = st("((%d, 1), (1,))" % dp)
        s_lnx = st_ln()
    else:
        s_col = s_row = s_bmm2 = s_mul = s_add = s_b1 = s_gelu = s_b2 = ""
        s_tin = s_tout = s_bmm = s_sm = s_lnx = ""

    ln_attrs = "begin_norm_axis: -1, begin_params_axis: -1, epsilon: 1e-5"
    heads_shape = "(%d, %d, %d, %d)" % (B, S, A, Dh)
    flat_shape = "(%d, %d)" % (R, H)
    x = "%x"
    vp = (a.vocab_mp if a.vocab_mp is not None else mp) if a.megatron else 1
    vdp = math.gcd(D // vp, B) if a.megatron else 1
    if a.megatron and Pp > 1:
        stage[0] = 0
    if V:
        s_emb = " {axis: 0, in_strategy: ((%d, 1), (%d, 1))}" % (vp, vdp) if a.megatron else " {axis: 0}"
        w("  %%tok = Gather(%%wte, %%ids)%s\n" % s_emb)
        w("  %%x = Reshape(%%tok) {shape: %s}\n" % flat_shape)
    for i in range(N):
        p = "%%l%d." % i      # parameter prefix
        v = "%%l%d." % i      # value prefix (same namespace, distinct suffixes)
        if stage[0] is not None:
            stage[0] = i * Pp // N
        w("  # layer %d\n" % i)
        w("  %sln1 = LayerNorm(%s, %sln1.gamma, %sln1.beta) {%s%s}\n" % (v, x, p, p, ln_attrs, s_lnx))
        for n in "qkv":
            w("  %s%s = MatMul(%sln1, %sw%s)%s\n" % (v, n, v, p, n, s_col))
        for n in "qkv":
            w("  %s%s4 = Reshape(%s%s) {shape: %s}\n" % (v, n, v, n, heads_shape))
        for n in "qkv":
            w("  %s%sh = Transpose(%s%s4) {perm: (0, 2, 1, 3)%s}\n" % (v, n, v, n, s_tin))
        w("  %sscores = BatchMatMul(%sqh, %skh) {transpose_b: true%s}\n" % (v, v, v, s_bmm))
        w("  %sscaled = Mul(%sscores, %%scale)%s\n" % (v, v, s_mul))
        w("  %sprobs = Softmax(%sscaled) {axis: -1%s}\n" % (v, v, s_sm))
        w("  %sctx = BatchMatMul(%sprobs, %svh)%s\n" % (v, v, v, s_bmm2))
        w("  %sctxt = Transpose(%sctx) {perm: (0, 2, 1, 3)%s}\n" % (v, v, s_tout))
        w("  %sctx2 = Reshape(%sctxt) {shape: %s}\n" % (v, v, flat_shape))
        w("  %sattn = MatMul(%sctx2, %swo)%s\n" % (v, v, p, s_row))
        w("  %sres1 = Add(%s, %sattn)%s\n" % (v, x, v, s_add))
        w("  %sln2 = LayerNorm(%sres1, %sln2.gamma, %sln2.beta) {%s%s}\n" % (v, v, p, p, ln_attrs, s_lnx))
        w("  %sh = MatMul(%sln2, %sfc1.weight)%s\n" % (v, v, p, s_col))
        w("  %shb = BiasAdd(%sh, %sfc1.bias)%s\n" % (v, v, p, s_b1))
        w("  %sg = GeLU(%shb)%s\n" % (v, v, s_gelu))
        w("  %sf = MatMul(%sg, %sfc2.weight)%s\n" % (v, v, p, s_row))
        w("  %sfb = BiasAdd(%sf, %sfc2.bias)%s\n" % (v, v, p, s_b2))
        w("  %sout = Add(%sres1, %sfb)%s\n" % (v, v, v, s_add))
        x = v + "out"
    if V:
        s_head = " {transpose_b: true, in_strategy: ((%d, 1), (%d, 1))}" % (vdp, vp) if a.megatron else \
            " {transpose_b: true}"
        w("  %%logits = MatMul(%s, %%wte)%s\n" % (x, s_head))
        x = "%logits"
    if a.train and V:
        s_ce = " {in_strategy: ((%d, %d), (%d,))}" % (vdp, vp, vdp) if a.megatron else ""
        w("  %%loss = SparseSoftmaxCrossEntropyWithLogits(%%logits, %%labels)%s\n  return %%loss\n}\n" % s_ce)
    if a.train:
        if not V:
            w("  %%loss = MSELoss(%s, %%target)\n  return %%loss\n}\n" % x)
        prec = '  precision: "%s",\n' % a.precision if a.precision else ""
        if micro_auto:
            prec += '  micro_batches: "auto",\n'
        elif (Pp > 1 or auto) and M > 1:
            prec += "  micro_batches: %d,\n" % M
        opt = {"sgd": "SGD(learning_rate: 0.01)", "momentum": "Momentum(learning_rate: 0.01, momentum: 0.9)",
               "adam": "Adam(learning_rate: 0.001)"}[a.optimizer]
        if a.recompute:
            prec += "  recompute: %s,\n" % ("true" if a.recompute == "true" else '"selective"')
        w("\ntrain {\n  loss: %%loss,\n  optimizer: %s,\n%s  steps: 1\n}\n" % (opt, prec))
    else:
        w("  return %s\n}\n" % x)

    text = "".join(out)
    if a.output:
        with open(a.output, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
