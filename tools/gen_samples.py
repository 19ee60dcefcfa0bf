#!/usr/bin/env python3
# Usage: gen_samples.py gpt2|llama [--layers L] [--hidden H] [--heads N] [--seq S] [--batch B] [--vocab V] [--ffn F] [--unfused]
#                       [--dp D] [--mp M]
"""Write ir-samples/gpt2.ir or ir-samples/llama.ir (the defaults give those
files byte for byte), or the same model at other sizes.

gpt2: token and position embeddings (the positions an Arange), pre-LayerNorm
blocks with FlashAttentionScore (causal), GeLU, Dropout 0.1, a final
LayerNorm and the head tied to the token embedding. llama: RmsNorm, the
rotary embedding with computed RopeCos/RopeSin tables, FlashAttentionScore
(causal), the SwiGLU MLP, no biases, an untied head. Both: Megatron
strategies for 8 devices (dp 2 x mp 4), trained with AdamWeightDecay and
clip_global_norm. --unfused writes the attention as BatchMatMul, Mul by the
scale, Add of a CausalMask, Softmax, BatchMatMul (what shardc compiled
before FlashAttentionScore). docs/benchmarks.md compiles both at GPT-2
small's widths for its mixed-precision memory table.

Standard library only.
"""
import argparse
import math
import re

HEADERS = {
    "gpt2": """# GPT-2 as a MindSpore (MindFormers) user writes it, at toy sizes: token and
# position embeddings (the positions an Arange), pre-LayerNorm blocks whose
# attention is FlashAttentionScore with the causal mask (sparse_mode 2) and
# whose MLP is GeLU (tanh form), Dropout 0.1 on the embeddings, the attention
# output and the MLP output, a final LayerNorm and the head tied to the token
# embedding (logits = h wte^T), trained with AdamWeightDecay and gradient
# clipping by global norm as GPT-2 was. The real GPT-2 small has vocabulary
# 50,257, context 1,024, 12 layers of hidden 768 with 12 heads and MLP 3,072;
# this one has vocabulary %(V)d, sequence %(S)d, %(L)d layers of hidden %(H)d with %(N)d heads
# of %(D)d and MLP %(F)d, batch %(B)d. Megatron strategies for 8 devices, dp 2 x mp 4:
# q, k, v and fc1 split by columns (heads), the attention's output projection
# and fc2 by rows, the vocabulary split 4 ways in the lookup, the head and
# the cross-entropy (Megatron's vocab-parallel embedding and loss).
# e2e runs: 2d 8p
# e2e atol: 1e-7
# (The keys' bias gets a gradient of exactly 0 in exact arithmetic, since
# softmax ignores what it adds to a row's scores: its trained values are
# float rounding, 1e-9 at most, which no relative tolerance can compare.)
""",
    "llama": """# A LLaMA-style model as a MindSpore (MindFormers) user writes it, at toy
# sizes: RMSNorm before attention and MLP, rotary position embeddings
# (RotaryPositionEmbedding, rotate-half, with the cos and sin tables the
# program computes: RopeCos, RopeSin, theta 10000), FlashAttentionScore with
# the causal mask (sparse_mode 2), the SwiGLU MLP (down(SiLU(gate(x)) *
# up(x))), no biases, a final RMSNorm and an untied output head, trained with
# AdamWeightDecay and gradient clipping. LLaMA-2 7B has vocabulary 32,000,
# context 4,096, 32 layers of hidden 4,096 with 32 heads and MLP 11,008; this
# one has vocabulary %(V)d, sequence %(S)d, %(L)d layers of hidden %(H)d with %(N)d heads of
# %(D)d and MLP %(F)d, batch %(B)d. Megatron strategies for 8 devices, dp 2 x mp 4:
# q, k, v, gate and up split by columns (heads), o and down by rows, the
# embedding's and the head's vocabulary split 4 ways and the cross-entropy
# split along it.
# e2e runs: 2d 8p
""",
}

CONTEXT = """context {
  device_num: 8,
  parallel_mode: "semi_auto_parallel",
  dataset_strategy: "full_batch",
  seed: 1
}
"""

TRAIN = """
train {
  loss: %%loss,
  optimizer: AdamWeightDecay(learning_rate: 0.001, weight_decay: %s),
  clip_global_norm: 1.0,
  steps: 3
}"""

FUSED = ("  {q}ctx = FlashAttentionScore({q}{qn}, {q}{kn}, {q}vh) {{head_num: {N}, scale_value: {scale}, sparse_mode: 2, "
         "input_layout: \"BNSD\", in_strategy: ((2, 4, 1, 1), (2, 4, 1, 1), (2, 4, 1, 1))}}")
UNFUSED = """  {q}s = BatchMatMul({q}{qn}, {q}{kn}) {{transpose_b: true, in_strategy: ((2, 4, 1, 1), (2, 4, 1, 1))}}
  {q}sc = Mul({q}s, {scale}) {{in_strategy: ((2, 4, 1, 1), ())}}
  {q}mask = CausalMask() {{shape: (1, 1, {S}, {S})}}
  {q}sm = Add({q}sc, {q}mask) {{in_strategy: ((2, 4, 1, 1), (1, 1, 1, 1))}}
  {q}p = Softmax({q}sm) {{axis: -1, in_strategy: ((2, 4, 1, 1),)}}
  {q}ctx = BatchMatMul({q}p, {q}vh) {{in_strategy: ((2, 4, 1, 1), (2, 4, 1, 1))}}"""


def ty(kind, dt, dims):
    return "<%s[%s], (%s)>" % (kind, dt, ", ".join(map(str, dims)) + ("," if len(dims) == 1 else ""))


def signature(name, params, B, S, V, indent):
    args = ["%%ids: %s = randint(0, %d)" % (ty("Tensor", "Int32", (B, S)), V),
            "%%labels: %s = randint(0, %d)" % (ty("Tensor", "Int32", (B * S,)), V)]
    args += ["%%%s: %s = %s" % (n, ty("Parameter", "Float32", d), i) for n, d, i in params]
    return "graph @%s(" % name + (",\n" + " " * indent).join(args) + ") {"


def attention(q, a, qn, kn):
    """The attention of the block whose values are named q..., as --unfused asks."""
    text = (UNFUSED if a.unfused else FUSED)
    return text.format(q=q, qn=qn, kn=kn, N=a.heads, S=a.seq, scale=repr(1 / math.sqrt(a.hidden // a.heads)))


def gpt2(a):
    L, H, S, B, V, F = a.layers, a.hidden, a.seq, a.batch, a.vocab, a.ffn
    params = [("wte", (V, H), "normal(0.02)"), ("wpe", (S, H), "normal(0.01)")]
    for l in range(L):
        p = "h%d." % l
        params += [(p + "ln_1.gamma", (H,), "ones"), (p + "ln_1.beta", (H,), "zeros")]
        for n in "qkv":
            params += [(p + "attn.%s.weight" % n, (H, H), "normal(0.02)"), (p + "attn.%s.bias" % n, (H,), "zeros")]
        params += [(p + "attn.c_proj.weight", (H, H), "normal(0.02)"), (p + "attn.c_proj.bias", (H,), "zeros"),
                   (p + "ln_2.gamma", (H,), "ones"), (p + "ln_2.beta", (H,), "zeros"),
                   (p + "mlp.c_fc.weight", (H, F), "normal(0.02)"), (p + "mlp.c_fc.bias", (F,), "zeros"),
                   (p + "mlp.c_proj.weight", (F, H), "normal(0.02)"), (p + "mlp.c_proj.bias", (H,), "zeros")]
    params += [("ln_f.gamma", (H,), "ones"), ("ln_f.beta", (H,), "zeros")]
    if a.untied:
        params += [("lm_head.weight", (H, V), "normal(0.02)")]
    ln = "{begin_norm_axis: -1, begin_params_axis: -1, epsilon: 1e-5, in_strategy: ((2, 1), (1,), (1,))}"
    out = [signature("gpt2", params, B, S, V, 12),
           "  # embeddings: the token's row of wte (the vocabulary split 4 ways) and the position's of wpe",
           "  %tok = Gather(%wte, %ids) {axis: 0, in_strategy: ((4, 1), (2, 1))}",
           "  %%pos = Arange() {stop: %d, dtype: Int32}" % S,
           "  %pe = Gather(%wpe, %pos) {axis: 0}",
           "  %emb = Add(%tok, %pe) {in_strategy: ((2, 1, 1), (1, 1))}",
           "  %%emb2 = Reshape(%%emb) {shape: (%d, %d)}" % (B * S, H),
           "  %x0 = Dropout(%emb2) {keep_prob: 0.9, in_strategy: ((2, 1),)}"]
    x = "%x0"
    for l in range(L):
        q = "%%h%d." % l
        out += ["  # block %d" % l,
                "  %sln1 = LayerNorm(%s, %sln_1.gamma, %sln_1.beta) %s" % (q, x, q, q, ln)]
        for n in "qkv":
            out += ["  %s%s = MatMul(%sln1, %sattn.%s.weight) {in_strategy: ((2, 1), (1, 4))}" % (q, n, q, q, n),
                    "  %s%sb = BiasAdd(%s%s, %sattn.%s.bias) {in_strategy: ((2, 4), (4,))}" % (q, n, q, n, q, n),
                    "  %s%s4 = Reshape(%s%sb) {shape: (%d, %d, %d, %d)}" % (q, n, q, n, B, S, a.heads, H // a.heads),
                    "  %s%sh = Transpose(%s%s4) {perm: (0, 2, 1, 3), in_strategy: ((2, 1, 4, 1),)}" % (q, n, q, n)]
        out += [attention(q, a, "qh", "kh"),
                "  %sctxt = Transpose(%sctx) {perm: (0, 2, 1, 3), in_strategy: ((2, 4, 1, 1),)}" % (q, q),
                "  %sctx2 = Reshape(%sctxt) {shape: (%d, %d)}" % (q, q, B * S, H),
                "  %sa = MatMul(%sctx2, %sattn.c_proj.weight) {in_strategy: ((2, 4), (4, 1))}" % (q, q, q),
                "  %sab = BiasAdd(%sa, %sattn.c_proj.bias) {in_strategy: ((2, 1), (1,))}" % (q, q, q),
                "  %sad = Dropout(%sab) {keep_prob: 0.9, in_strategy: ((2, 1),)}" % (q, q),
                "  %sres1 = Add(%s, %sad) {in_strategy: ((2, 1), (2, 1))}" % (q, x, q),
                "  %sln2 = LayerNorm(%sres1, %sln_2.gamma, %sln_2.beta) %s" % (q, q, q, q, ln),
                "  %sfc = MatMul(%sln2, %smlp.c_fc.weight) {in_strategy: ((2, 1), (1, 4))}" % (q, q, q),
                "  %sfcb = BiasAdd(%sfc, %smlp.c_fc.bias) {in_strategy: ((2, 4), (4,))}" % (q, q, q),
                "  %sg = GeLU(%sfcb) {in_strategy: ((2, 4),)}" % (q, q),
                "  %smo = MatMul(%sg, %smlp.c_proj.weight) {in_strategy: ((2, 4), (4, 1))}" % (q, q, q),
                "  %smob = BiasAdd(%smo, %smlp.c_proj.bias) {in_strategy: ((2, 1), (1,))}" % (q, q, q),
                "  %smd = Dropout(%smob) {keep_prob: 0.9, in_strategy: ((2, 1),)}" % (q, q),
                "  %sout = Add(%sres1, %smd) {in_strategy: ((2, 1), (2, 1))}" % (q, q, q)]
        x = q + "out"
    head = ("  %logits = MatMul(%hf, %lm_head.weight) {in_strategy: ((2, 1), (1, 4))}" if a.untied else
            "  %logits = MatMul(%hf, %wte) {transpose_b: true, in_strategy: ((2, 1), (4, 1))}")
    out += ["  # the head, %s, and the vocab-parallel cross-entropy" % ("untied" if a.untied else "tied to the token embedding"),
            "  %%hf = LayerNorm(%s, %%ln_f.gamma, %%ln_f.beta) %s" % (x, ln),
            head,
            "  %loss = SparseSoftmaxCrossEntropyWithLogits(%logits, %labels) {in_strategy: ((2, 4), (2,))}",
            "  return %loss",
            "}",
            TRAIN % "0.01"]
    return out


def llama(a):
    L, H, S, B, V, F, D = a.layers, a.hidden, a.seq, a.batch, a.vocab, a.ffn, a.hidden // a.heads
    params = [("embed_tokens", (V, H), "normal(0.02)")]
    for l in range(L):
        p = "layers.%d." % l
        params += [(p + "input_layernorm.weight", (H,), "ones")]
        params += [(p + "self_attn.%s_proj.weight" % n, (H, H), "normal(0.02)") for n in "qkvo"]
        params += [(p + "post_attention_layernorm.weight", (H,), "ones"),
                   (p + "mlp.gate_proj.weight", (H, F), "normal(0.02)"),
                   (p + "mlp.up_proj.weight", (H, F), "normal(0.02)"),
                   (p + "mlp.down_proj.weight", (F, H), "normal(0.02)")]
    params += [("norm.weight", (H,), "ones"), ("lm_head.weight", (H, V), "normal(0.02)")]
    out = [signature("llama", params, B, S, V, 13),
           "  %tok = Gather(%embed_tokens, %ids) {axis: 0, in_strategy: ((4, 1), (2, 1))}",
           "  %%x0 = Reshape(%%tok) {shape: (%d, %d)}" % (B * S, H),
           "  %%cos = RopeCos() {shape: (1, 1, %d, %d)}" % (S, D),
           "  %%sin = RopeSin() {shape: (1, 1, %d, %d), theta: 10000.0}" % (S, D)]
    x = "%x0"
    for l in range(L):
        q = "%%layers.%d." % l
        out += ["  # layer %d" % l,
                "  %sn1 = RmsNorm(%s, %sinput_layernorm.weight) {epsilon: 1e-5, in_strategy: ((2, 1), (1,))}" % (q, x, q)]
        for n in "qkv":
            out += ["  %s%s = MatMul(%sn1, %sself_attn.%s_proj.weight) {in_strategy: ((2, 1), (1, 4))}" % (q, n, q, q, n),
                    "  %s%s4 = Reshape(%s%s) {shape: (%d, %d, %d, %d)}" % (q, n, q, n, B, S, a.heads, D),
                    "  %s%sh = Transpose(%s%s4) {perm: (0, 2, 1, 3), in_strategy: ((2, 1, 4, 1),)}" % (q, n, q, n)]
        for n in "qk":
            out += ["  %s%sr = RotaryPositionEmbedding(%s%sh, %%cos, %%sin) {mode: 0, in_strategy: ((2, 4, 1, 1), "
                    "(1, 1, 1, 1), (1, 1, 1, 1))}" % (q, n, q, n)]
        out += [attention(q, a, "qr", "kr"),
                "  %sctxt = Transpose(%sctx) {perm: (0, 2, 1, 3), in_strategy: ((2, 4, 1, 1),)}" % (q, q),
                "  %sctx2 = Reshape(%sctxt) {shape: (%d, %d)}" % (q, q, B * S, H),
                "  %sa = MatMul(%sctx2, %sself_attn.o_proj.weight) {in_strategy: ((2, 4), (4, 1))}" % (q, q, q),
                "  %sres1 = Add(%s, %sa) {in_strategy: ((2, 1), (2, 1))}" % (q, x, q),
                "  %sn2 = RmsNorm(%sres1, %spost_attention_layernorm.weight) {epsilon: 1e-5, "
                "in_strategy: ((2, 1), (1,))}" % (q, q, q),
                "  %sgate = MatMul(%sn2, %smlp.gate_proj.weight) {in_strategy: ((2, 1), (1, 4))}" % (q, q, q),
                "  %sup = MatMul(%sn2, %smlp.up_proj.weight) {in_strategy: ((2, 1), (1, 4))}" % (q, q, q),
                "  %sact = SiLU(%sgate) {in_strategy: ((2, 4),)}" % (q, q),
                "  %sgu = Mul(%sact, %sup) {in_strategy: ((2, 4), (2, 4))}" % (q, q, q),
                "  %sdown = MatMul(%sgu, %smlp.down_proj.weight) {in_strategy: ((2, 4), (4, 1))}" % (q, q, q),
                "  %sout = Add(%sres1, %sdown) {in_strategy: ((2, 1), (2, 1))}" % (q, q, q)]
        x = q + "out"
    out += ["  %%hf = RmsNorm(%s, %%norm.weight) {epsilon: 1e-5, in_strategy: ((2, 1), (1,))}" % x,
            "  %logits = MatMul(%hf, %lm_head.weight) {in_strategy: ((2, 1), (1, 4))}",
            "  %loss = SparseSoftmaxCrossEntropyWithLogits(%logits, %labels) {in_strategy: ((2, 4), (2,))}",
            "  return %loss",
            "}",
            TRAIN % "0.1"]
    return out


def with_parallel(text, dp, mp):
    """The model's Megatron strategies, written for dp 2 x mp 4, for dp x mp:
    every slice count 2 in an in_strategy becomes dp, every 4 mp."""
    def one(m):
        return re.sub(r"\d+", lambda d: {"2": str(dp), "4": str(mp)}.get(d.group(0), d.group(0)), m.group(0))
    text = re.sub(r"in_strategy: \([^{}\n]*?\)\}", one, text)
    return (text.replace("Megatron strategies for 8 devices, dp 2 x mp 4", "Megatron strategies, dp %d x mp %d" % (dp, mp))
            .replace("vocabulary split 4 ways", "vocabulary split %d ways" % mp))


def main():
    ap = argparse.ArgumentParser(description="Write ir-samples/gpt2.ir or llama.ir, or the model at other sizes.")
    ap.add_argument("model", choices=["gpt2", "llama"])
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--seq", type=int, default=16)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--vocab", type=int, default=256)
    ap.add_argument("--ffn", type=int, help="MLP width (default: 4 H for gpt2, 11 H / 4 for llama)")
    ap.add_argument("--untied", action="store_true", help="gpt2: an output head of its own, not wte's transpose")
    ap.add_argument("--unfused", action="store_true", help="attention as BatchMatMul, Mul, Add mask, Softmax, BatchMatMul")
    ap.add_argument("--dp", type=int, default=2, help="data-parallel slices in the strategies (default 2)")
    ap.add_argument("--mp", type=int, default=4, help="model-parallel slices: heads, MLP, vocabulary (default 4)")
    a = ap.parse_args()
    if a.ffn is None:
        a.ffn = 4 * a.hidden if a.model == "gpt2" else 11 * a.hidden // 4
    if a.hidden % a.heads:
        ap.error("--hidden %d is not a multiple of --heads %d" % (a.hidden, a.heads))
    sizes = {"V": a.vocab, "S": a.seq, "L": a.layers, "H": a.hidden, "N": a.heads, "D": a.hidden // a.heads,
             "F": a.ffn, "B": a.batch}
    body = (gpt2 if a.model == "gpt2" else llama)(a)
    header = HEADERS[a.model] % sizes
    if a.untied and a.model == "gpt2":
        header = header.replace("and the head tied to the token\n# embedding (logits = h wte^T)", "and an untied head\n# (logits = h lm_head)")
    text = header + "\n" + CONTEXT + "\n" + "\n".join(body)
    print(text if (a.dp, a.mp) == (2, 4) else with_parallel(text, a.dp, a.mp))


if __name__ == "__main__":
    main()
