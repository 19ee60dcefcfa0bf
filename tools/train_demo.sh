#!/usr/bin/env bash
# train_demo.sh SHARDC [OUT] [STEPS]: make train-demo. A byte-level GPT
# trained on real text on 8 ranks of this machine, with checkpoints, and its
# loss curve.
#
# The text is the Python standard library's own source (every Debian
# machine with python3 has it): its .py files in name order, the first 4
# MiB, each byte a token (a headerless uint16 .bin, docs/output.md, Data
# that streams). The model (written below): 4 layers, hidden 128, 4 heads,
# a context of 64 bytes, the embedding tied to the output layer, learned
# positions, causal attention (CausalMask): 0.83M parameters; 8 ranks in
# data_parallel mode, 64 samples a step, AdamWeightDecay with a warmup over
# a tenth of the steps and a cosine decay, clipped at norm 1. run.sh feeds
# it with --data (shuffled), writes a checkpoint every 100 steps
# (--checkpoint, --keep 2) and the progress as JSON lines (--log);
# tools/plot_log.py draws OUT/loss.png. Last line: the final loss against
# the text's unigram entropy (what a model that knows only byte
# frequencies reaches) and its bigram entropy (the next byte given the
# last), in nats a byte.
set -euo pipefail
shardc=$(realpath "${1:?usage: train_demo.sh SHARDC [OUT] [STEPS]}")
out=$(realpath -m "${2:-build/train-demo}")
steps=${3:-600}
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$out"
mkdir -p "$out"

# The text, and its unigram and bigram entropies in nats (OUT/entropy).
/usr/bin/python3 - "$out" <<'EOF'
import array, collections, math, pathlib, sys, sysconfig
out = pathlib.Path(sys.argv[1])
lib = pathlib.Path(sysconfig.get_paths()["stdlib"])
text = bytearray()
for f in sorted(lib.glob("*.py")):
    text += f.read_bytes()
    if len(text) >= 4 << 20:
        break
text = bytes(text[:4 << 20])
array.array("H", iter(text)).tofile(open(out / "text.bin", "wb"))   # one uint16 a byte
n = len(text)
h = -sum(c / n * math.log(c / n) for c in collections.Counter(text).values())
prev = collections.Counter(text[:-1])
h2 = -sum(c / (n - 1) * math.log(c / prev[a]) for (a, _), c in collections.Counter(zip(text, text[1:])).items())
(out / "entropy").write_text("%.6f %.6f\n" % (h, h2))
print("train_demo: %d bytes of %s; entropy a byte: unigram %.3f nats, bigram %.3f" % (n, lib, h, h2))
EOF

# The model.
/usr/bin/python3 - "$out/byte_gpt.ir" "$steps" <<'EOF'
import sys
L, H, A, S, B, V = 4, 128, 4, 64, 64, 256
steps = int(sys.argv[2])
D = H // A
T = "<Tensor[Float32], (%s)>"
P = "<Parameter[Float32], (%s)>"
params = ["%%ids: <Tensor[Int32], (%d, %d)> = randint(0, %d)" % (B, S, V),
          "%%labels: <Tensor[Int32], (%d,)> = randint(0, %d)" % (B * S, V),
          "%%wte: %s = normal(0.02)" % (P % ("%d, %d" % (V, H))),
          "%%wpe: %s = normal(0.01)" % (P % ("%d, %d" % (S, H)))]
body = ["  %e = Gather(%wte, %ids) {axis: 0}",
        "  %ep = Add(%e, %wpe)",
        "  %%x0 = Reshape(%%ep) {shape: (%d, %d)}" % (B * S, H),
        "  %%mask = CausalMask() {shape: (%d, %d)}" % (S, S)]
ln = "begin_norm_axis: -1, begin_params_axis: -1, epsilon: 1e-5"
x = "%x0"
for i in range(L):
    p = "%%l%d." % i
    params += ["%sln1.gamma: %s = ones" % (p, P % H), "%sln1.beta: %s = zeros" % (p, P % H)]
    params += ["%s%s: %s = normal(0.02)" % (p, w, P % ("%d, %d" % (H, H))) for w in ("wq", "wk", "wv")]
    params += ["%swo: %s = normal(%g)" % (p, P % ("%d, %d" % (H, H)), 0.02 / (2 * L) ** 0.5)]
    params += ["%sln2.gamma: %s = ones" % (p, P % H), "%sln2.beta: %s = zeros" % (p, P % H)]
    params += ["%sfc1.weight: %s = normal(0.02)" % (p, P % ("%d, %d" % (H, 4 * H))),
               "%sfc1.bias: %s = zeros" % (p, P % (4 * H)),
               "%sfc2.weight: %s = normal(%g)" % (p, P % ("%d, %d" % (4 * H, H)), 0.02 / (2 * L) ** 0.5),
               "%sfc2.bias: %s = zeros" % (p, P % H)]
    q = "%%l%d_" % i
    body += ["  %sln1 = LayerNorm(%s, %sln1.gamma, %sln1.beta) {%s}" % (q, x, p, p, ln)]
    for w in ("q", "k", "v"):
        body += ["  %s%s = MatMul(%sln1, %sw%s)" % (q, w, q, p, w),
                 "  %s%s4 = Reshape(%s%s) {shape: (%d, %d, %d, %d)}" % (q, w, q, w, B, S, A, D),
                 "  %s%sh = Transpose(%s%s4) {perm: (0, 2, 1, 3)}" % (q, w, q, w)]
    body += ["  %sscores = BatchMatMul(%sqh, %skh) {transpose_b: true}" % (q, q, q),
             "  %sscaled = Mul(%sscores, %.17g)" % (q, q, D ** -0.5),
             "  %smasked = Add(%sscaled, %%mask)" % (q, q),
             "  %sprobs = Softmax(%smasked) {axis: -1}" % (q, q),
             "  %sctx = BatchMatMul(%sprobs, %svh)" % (q, q, q),
             "  %sctxt = Transpose(%sctx) {perm: (0, 2, 1, 3)}" % (q, q),
             "  %sctx2 = Reshape(%sctxt) {shape: (%d, %d)}" % (q, q, B * S, H),
             "  %sattn = MatMul(%sctx2, %swo)" % (q, q, p),
             "  %sres1 = Add(%s, %sattn)" % (q, x, q),
             "  %sln2 = LayerNorm(%sres1, %sln2.gamma, %sln2.beta) {%s}" % (q, q, p, p, ln),
             "  %sh = MatMul(%sln2, %sfc1.weight)" % (q, q, p),
             "  %shb = BiasAdd(%sh, %sfc1.bias)" % (q, q, p),
             "  %sg = GeLU(%shb)" % (q, q),
             "  %sf = MatMul(%sg, %sfc2.weight)" % (q, q, p),
             "  %sfb = BiasAdd(%sf, %sfc2.bias)" % (q, q, p),
             "  %sout = Add(%sres1, %sfb)" % (q, q, q)]
    x = "%sout" % q
params += ["%%lnf.gamma: %s = ones" % (P % H), "%%lnf.beta: %s = zeros" % (P % H)]
body += ["  %%hf = LayerNorm(%s, %%lnf.gamma, %%lnf.beta) {%s}" % (x, ln),
         "  %logits = MatMul(%hf, %wte) {transpose_b: true}",
         "  %loss = SparseSoftmaxCrossEntropyWithLogits(%logits, %labels)",
         "  return %loss"]
n = V * H + S * H + 2 * H + L * (4 * H * H + 8 * H * H + 4 * H + H + 4 * H)
print("train_demo: a byte-level GPT of %.2fM parameters (%d layers, hidden %d, %d heads, context %d), %d samples a step"
      % (n / 1e6, L, H, A, S, B))
with open(sys.argv[1], "w") as f:
    f.write("# make train-demo's byte-level GPT (tools/train_demo.sh writes it).\n")
    f.write('context { device_num: 8, parallel_mode: "data_parallel", seed: 1 }\n\n')
    f.write("graph @byte_gpt(" + ",\n                ".join(params) + ") {\n")
    f.write("\n".join(body) + "\n}\n\n")
    f.write("train {\n  loss: %%loss,\n"
            "  optimizer: AdamWeightDecay(learning_rate: CosineWithWarmUpLR(learning_rate: 0.003, warmup_steps: %d,\n"
            "                             total_steps: %d, lr_end: 0.0003, warmup_lr_init: 0.0003),\n"
            "                             weight_decay: 0.01),\n"
            "  clip_global_norm: 1.0,\n  steps: %d\n}\n" % (max(1, steps // 10), steps, steps))
EOF

"$shardc" "$out/byte_gpt.ir" -o "$out/model" >/dev/null
start=$(date +%s)
"$out/model/run.sh" --data "ids=$out/text.bin:64" --labels labels --shuffle 1 --steps "$steps" \
	--checkpoint "$out/checkpoints" --save-every 100 --keep 2 --log "$out/log.jsonl" --log-every 10 \
	--output-dir "$out/results" | grep -E '^step: [0-9]*0,|^time:|^data:'
/usr/bin/python3 "$here/plot_log.py" "$out/log.jsonl" -o "$out/loss.png"
/usr/bin/python3 - "$out" "$(( $(date +%s) - start ))" <<'EOF'
import json, math, pathlib, sys
out = pathlib.Path(sys.argv[1])
rows = [json.loads(l) for l in open(out / "log.jsonl")]
h, h2 = map(float, (out / "entropy").read_text().split())
first, last = rows[0]["loss"], rows[-1]["loss"]
print("train_demo: loss %.3f nats a byte at step %d, %.3f at step %d (%.2f bits), in %s s: %.0f%% below the text's "
      "unigram entropy %.3f, %s its bigram entropy %.3f; curve in %s" % (first, rows[0]["step"], last, rows[-1]["step"],
      last / math.log(2), sys.argv[2], 100 * (1 - last / h), h, "below" if last < h2 else "above", h2,
      out / "loss.png"))
EOF
