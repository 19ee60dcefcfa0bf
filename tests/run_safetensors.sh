#!/usr/bin/env bash
# run_safetensors.sh SHARDC: run.sh --params FILE.safetensors end to end
# (docs/output.md, Checkpoints).
#
# Three training models, tests/e2e/transformer_train.ir (Float32 parameters,
# Megatron dp 2 x mp 4 on 8 ranks: row and column slices),
# tests/e2e/half_transformer_bf16.ir (BFloat16 parameters) and
# ir-samples/gpt2.ir (GPT-2 with its tied embedding, the vocabulary split 4
# ways), each on 8 ranks and on 1. numpy and json alone write the checkpoints here, byte by byte as
# the format says, with random weights: plain.safetensors (Float32, the IR's
# names, tensors in another order than the data, an extra tensor nobody
# reads), mixed.safetensors (each tensor F64, F32, F16 or BF16 in turn),
# renamed.safetensors with names.json (GPT-2's style of names, and its
# causal mask as an unread BOOL tensor), and, where Python's safetensors
# package is installed, pkg.safetensors written by it. Each run must print
# the same loss lines and write the same results (output_<k>.npy,
# param_<name>.npy) bit for bit as the run given the same values as
# --param NAME=FILE.npy files (converted as the runtime converts); --param
# wins over the checkpoint, which may then lack the tensor. Every training
# run's params.safetensors is read back with numpy and json (header length a
# multiple of 8, offsets end to end, the parameter's dtype, BF16 for
# BFloat16) and must equal its param_<name>.npy; loaded with --params, its
# first loss must equal the 4th of a 4-step run (with Dropout, whose masks
# change from step to step, a 1-step run must give what the param_<name>.npy
# files give). Then broken checkpoints and
# rename files: each ends every rank with status 1 and one message naming the
# file and the tensor, without a hang. Last line: N passed, N failed.
set -u
shardc=$(realpath "${1:?usage: run_safetensors.sh SHARDC}")
py=/usr/bin/python3
root=$(pwd)
. "$(dirname "$0")/lib.sh"   # $tmp, ok, bad, CFLAGS

# run DIR NAME ARGS...: DIR's run.sh with ARGS, results in DIR/NAME (stdout in log); its status.
run() {
	local dir=$1 name=$2
	shift 2
	mkdir -p "$dir/$name"
	(cd "$dir" && timeout 300 ./run.sh --output-dir "$dir/$name" "$@") >"$dir/$name/log" 2>"$dir/$name/err"
}

# same A B WHAT: the loss lines and every .npy of two results, bit for bit
same() {
	local msg
	if msg=$("$py" - "$1" "$2" <<'PY'
import glob, os, re, sys
import numpy as np
a, b = sys.argv[1], sys.argv[2]
loss = [re.findall(r"^step: \d+, loss is [^,\s]+", open(d + "/log").read(), re.M) for d in (a, b)]   # not the timings
if not loss[0] or loss[0] != loss[1]:
    sys.exit("loss lines differ: %s vs %s" % (loss[0][:3], loss[1][:3]))
names = sorted(os.path.basename(f) for f in glob.glob(a + "/*.npy"))
if names != sorted(os.path.basename(f) for f in glob.glob(b + "/*.npy")) or not names:
    sys.exit("different results: %s" % names)
for n in names:
    x, y = np.load(a + "/" + n), np.load(b + "/" + n)
    if x.dtype != y.dtype or x.shape != y.shape or x.tobytes() != y.tobytes():
        sys.exit("%s differs: largest difference %g" % (n, np.max(np.abs(x.astype(float) - y.astype(float)))))
print("%d loss lines, %d results equal" % (len(loss[0]), len(names)))
PY
	); then ok "$3: $msg"; else bad "$3: $msg"; fi
}

# params_args DIR: --param NAME=DIR/NAME.npy for every .npy in DIR
params_args() {
	local f n
	for f in "$1"/*.npy; do
		n=$(basename "$f" .npy)
		printf '%s\n' --param "$n=$f"
	done
}

# fixtures OUT MANIFEST: the checkpoints and .npy files described above, in OUT
fixtures() {
	"$py" - "$1" "$2" "$root/tools" <<'PY'
import json, os, struct, sys
import numpy as np
out, manifest = sys.argv[1], json.load(open(sys.argv[2]))
sys.path.insert(0, sys.argv[3])
from ref_eval import round_bf16   # nearest even, from the float64: the runtime's rounding
rng = np.random.default_rng(28)
params = manifest["parameters"]

def write(path, tensors, order=None, meta=None, extra=b""):
    """tensors: name -> (dtype, shape, bytes); the data in `order` (default: as given)."""
    header, data = {}, b""
    for name in order or list(tensors):
        dtype, shape, raw = tensors[name]
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    if meta is not None:
        header["__metadata__"] = meta
    text = json.dumps(dict(reversed(list(header.items())))).encode()   # the header's order is not the data's
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data + extra)

def param_value(p, v):
    """what a parameter of p's type holds when its file holds v: nearest, ties to even, from the float64"""
    return round_bf16(np.asarray(v, np.float64)) if p["dtype"] == "BFloat16" else np.asarray(v).astype("<f4")

def bf16_bits(v):
    return (round_bf16(v).view("<u4") >> 16).astype("<u2")

os.makedirs(out + "/npy"), os.makedirs(out + "/npy_mixed")
plain, mixed, renamed, names = {}, {}, {}, {}
for i, p in enumerate(params):
    n, shape = p["name"], tuple(p["shape"])
    x = rng.normal(0, 0.05, shape) + (1.0 if "gamma" in n else 0.0)   # float64, not float32-exact
    x32 = x.astype("<f4")
    np.save(out + "/npy/" + n + ".npy", param_value(p, x32))
    plain[n] = ("F32", shape, x32.tobytes())
    dtype = ["F64", "F32", "F16", "BF16"][i % 4]
    raw = {"F64": lambda: x.astype("<f8"), "F32": lambda: x32, "F16": lambda: x.astype("<f2"),
           "BF16": lambda: bf16_bits(x)}[dtype]()
    held = {"F64": x, "F32": x32, "F16": x.astype("<f2").astype(np.float64),
            "BF16": round_bf16(x).astype(np.float64)}[dtype]
    mixed[n] = (dtype, shape, raw.tobytes())
    np.save(out + "/npy_mixed/" + n + ".npy", param_value(p, held))
    if i % 5 != 1:   # most renamed, GPT-2's style; the others keep their own names
        names[n] = "transformer.h.0." + n.replace(".", "_") + ".weight"
    renamed[names.get(n, n)] = plain[n]
plain["unread.extra"] = ("I8", (3,), b"\x01\x02\x03")
renamed["transformer.h.0.attn.bias"] = ("BOOL", (1, 1, 4, 4), np.tril(np.ones((4, 4), bool)).tobytes())
write(out + "/plain.safetensors", plain, order=sorted(plain), meta={"format": "pt"})
write(out + "/mixed.safetensors", mixed)
write(out + "/renamed.safetensors", renamed, meta={"source": "numpy"})
json.dump(names, open(out + "/names.json", "w"), indent=1)
try:
    from safetensors.numpy import save_file
    if all(p["dtype"] == "Float32" for p in params):
        save_file({n: np.frombuffer(plain[n][2], "<f4").reshape(plain[n][1]) for n in plain if n != "unread.extra"},
                  out + "/pkg.safetensors", metadata={"format": "np"})
except ImportError:
    pass

# broken ones, for the first parameter of two dims (wq)
w = next(p for p in params if len(p["shape"]) == 2)["name"]
part = {n: v for n, v in plain.items() if n != w}
write(out + "/partial.safetensors", part)
shape = plain[w][1]
write(out + "/badshape.safetensors", {**part, w: ("F32", (shape[0], shape[1] // 2), plain[w][2][: len(plain[w][2]) // 2])})
write(out + "/i8.safetensors", {**part, w: ("I8", shape, b"\0" * (shape[0] * shape[1]))})
blob = open(out + "/plain.safetensors", "rb").read()
open(out + "/truncated.safetensors", "wb").write(blob[:-100])
text = b'{"wq": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},, }'
open(out + "/badjson.safetensors", "wb").write(struct.pack("<Q", len(text)) + text + bytes(8))
open(out + "/shortheader.safetensors", "wb").write(struct.pack("<Q", 4096) + text)
open(out + "/badnames.json", "w").write('{"%s": "x",}' % w)
json.dump({"nope": "x"}, open(out + "/unknown_names.json", "w"))
json.dump({w: "transformer.h.0.nothing"}, open(out + "/missing_names.json", "w"))
print(w)
PY
}

# roundtrip RESULTS WHAT: params.safetensors read with numpy and json equals the param_<name>.npy
roundtrip() {
	local msg
	if msg=$("$py" - "$1" <<'PY'
import glob, json, os, struct, sys
import numpy as np
d = sys.argv[1]
blob = open(d + "/params.safetensors", "rb").read()
(n,) = struct.unpack("<Q", blob[:8])
header = json.loads(blob[8:8 + n])
data = blob[8 + n:]
if n % 8:
    sys.exit("header length %d is not a multiple of 8" % n)
if header.pop("__metadata__", None) != {"format": "pt"}:
    sys.exit("no __metadata__ {'format': 'pt'}")
files = sorted(glob.glob(d + "/param_*.npy"))
if sorted(header) != sorted(os.path.basename(f)[6:-4] for f in files):
    sys.exit("tensors %s, param files %s" % (sorted(header), files))
at = 0
for name, t in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"]):
    b, e = t["data_offsets"]
    want = np.load(d + "/param_" + name + ".npy")
    if b != at:
        sys.exit("%s starts at %d, not %d: the data has a hole" % (name, b, at))
    at = e
    if t["dtype"] == "F32":
        got = np.frombuffer(data[b:e], "<f4").reshape(t["shape"])
        same = want.dtype == np.float32 and got.tobytes() == want.tobytes()
    elif t["dtype"] == "BF16":   # param_<name>.npy holds a bfloat16 parameter as float32
        got = (np.frombuffer(data[b:e], "<u2").astype("<u4") << 16).view("<f4").reshape(t["shape"])
        same = got.tobytes() == want.tobytes()
    else:
        sys.exit("%s has dtype %s" % (name, t["dtype"]))
    if not same or list(want.shape) != t["shape"]:
        sys.exit("%s (%s %s) differs from param_%s.npy" % (name, t["dtype"], t["shape"], name))
if at != len(data):
    sys.exit("the data ends at %d, the file at %d" % (at, len(data)))
try:
    from safetensors.numpy import load_file
    if all(t["dtype"] == "F32" for t in header.values()):
        loaded = load_file(d + "/params.safetensors")
        for name in header:
            assert np.array_equal(loaded[name], np.load(d + "/param_" + name + ".npy")), name
        print("the safetensors package reads it too;", end=" ")
except ImportError:
    pass
print("%d tensors (%s) equal the .npy files" % (len(header), ", ".join(sorted({t["dtype"] for t in header.values()}))))
PY
	); then ok "$2: $msg"; else bad "$2: $msg"; fi
}

# expect_error DIR WHAT MESSAGE ARGS...: the run fails with status 1 and MESSAGE once, within 60 s
expect_error() {
	local dir=$1 what=$2 msg=$3
	shift 3
	(cd "$dir" && timeout 60 ./run.sh --output-dir "$dir/err_out" "$@") >"$tmp/err.log" 2>&1
	local st=$? n
	n=$(grep -cF -- "$msg" "$tmp/err.log")
	if [ "$st" = 1 ] && [ "$n" = 1 ] && ! grep -q MPI_ABORT "$tmp/err.log"; then
		ok "error ($what): $(grep -F -- "$msg" "$tmp/err.log")"
	else
		bad "error ($what): status $st, message seen $n times; want: $msg"
		head -c 1500 "$tmp/err.log"
	fi
}

# check DIR NAME REF WHAT ARGS...: run NAME with ARGS; its results must equal REF's
check() {
	local dir=$1 name=$2 ref=$3 what=$4
	shift 4
	if run "$dir" "$name" "$@"; then same "$dir/$name" "$dir/$ref" "$what"; else
		bad "$what: run.sh fails: $(tail -3 "$dir/$name/err")"; fi
}

# reference DIR NAME ARGS...: a run the others are compared with; false when it fails
reference() {
	local dir=$1 name=$2
	shift 2
	run "$dir" "$name" "$@" && return 0
	bad "$dir $name: run.sh fails: $(tail -3 "$dir/$name/err")"
	return 1
}

pkg_note="" wq=""
for model in tests/e2e/transformer_train.ir tests/e2e/half_transformer_bf16.ir ir-samples/gpt2.ir; do
	m=$(basename "$model" .ir)
	fx=$tmp/$m/fx
	for n in 8 1; do
		d=$tmp/$m/n$n what="$m on $n ranks"
		if [ $n = 1 ]; then
			"$shardc" "$model" -o "$d" --device-num 1 --parallel-mode stand_alone 2>"$tmp/err"
		else
			"$shardc" "$model" -o "$d" 2>"$tmp/err"
		fi || { bad "$what: shardc: $(head -3 "$tmp/err")"; continue; }
		if [ ! -f "$fx/plain.safetensors" ] && ! wq=$(fixtures "$fx" "$d/manifest.json"); then
			bad "$m: cannot write the checkpoints"
			continue 2
		fi
		mapfile -t npy < <(params_args "$fx/npy")
		mapfile -t npy_mixed < <(params_args "$fx/npy_mixed")
		# --param wins: partial.safetensors lacks wq, which a .npy file gives (its mixed value)
		mapfile -t wins < <(params_args "$fx/npy" | sed "s|^$wq=$fx/npy/$wq.npy\$|$wq=$fx/npy_mixed/$wq.npy|")
		reference "$d" npy --steps 3 "${npy[@]}" || continue
		check "$d" plain npy "$what: --params plain.safetensors (F32) = --param .npy" \
			--steps 3 --params "$fx/plain.safetensors"
		check "$d" renamed npy "$what: --params renamed.safetensors --param-names names.json = --param .npy" \
			--steps 3 --params "$fx/renamed.safetensors" --param-names "$fx/names.json"
		reference "$d" mixed_npy --steps 3 "${npy_mixed[@]}" &&
			check "$d" mixed mixed_npy "$what: --params mixed.safetensors (F64, F32, F16, BF16) = --param .npy" \
				--steps 3 --params "$fx/mixed.safetensors"
		if [ -f "$fx/pkg.safetensors" ]; then
			check "$d" pkg npy "$what: --params pkg.safetensors (the safetensors package's) = --param .npy" \
				--steps 3 --params "$fx/pkg.safetensors"
		elif [ -z "$pkg_note" ] && [ "$m" = transformer_train ]; then
			pkg_note="note: Python's safetensors package is not installed: no file written by it was read"
			echo "$pkg_note"
		fi
		reference "$d" wins_npy --steps 3 "${wins[@]}" &&
			check "$d" wins wins_npy "$what: --param $wq=FILE.npy wins over --params (which lacks it)" \
				--steps 3 --params "$fx/partial.safetensors" --param "$wq=$fx/npy_mixed/$wq.npy"
		[ -f "$d/plain/params.safetensors" ] && roundtrip "$d/plain" "$what: params.safetensors"
		# the checkpoint written after 3 steps, loaded: its first loss is a 4-step run's 4th;
		# with Dropout (gpt2), whose masks differ from step to step, the 1-step run's
		# results are those of the same parameters given as the param_<name>.npy files
		if grep -q 'Dropout(' "$model" && [ -f "$d/plain/params.safetensors" ]; then
			mkdir -p "$d/trained" && for f in "$d/plain"/param_*.npy; do cp "$f" "$d/trained/$(basename "$f" | sed 's/^param_//')"; done
			mapfile -t trained < <(params_args "$d/trained")
			reference "$d" trained_npy --steps 1 "${trained[@]}" &&
				check "$d" again trained_npy "$what: params.safetensors loaded back = its param_<name>.npy files" \
					--steps 1 --params "$d/plain/params.safetensors"
		elif reference "$d" four --steps 4 --params "$fx/plain.safetensors" && [ -f "$d/plain/params.safetensors" ] &&
			reference "$d" again --steps 1 --params "$d/plain/params.safetensors"; then
			l4=$(sed -n 's/^step: 4, \(loss is [^,]*\).*/\1/p' "$d/four/log") l1=$(sed -n 's/^step: 1, \(loss is [^,]*\).*/\1/p' "$d/again/log")
			if [ -n "$l1" ] && [ "$l1" = "$l4" ]; then
				ok "$what: params.safetensors loaded back: its first loss is the 4-step run's 4th ($l1)"
			else
				bad "$what: params.safetensors loaded back: loss '$l1', the 4-step run's 4th '$l4'"
			fi
		fi
	done
done

# Broken checkpoints and rename files: the Float32 model on 8 ranks.
d=$tmp/transformer_train/n8 fx=$tmp/transformer_train/fx
if [ -d "$d" ] && [ "$wq" = wq ]; then
	expect_error "$d" "missing tensor" "shardc: parameter 'wq': $fx/partial.safetensors has no tensor 'wq'" \
		--params "$fx/partial.safetensors"
	expect_error "$d" "wrong shape" \
		"shardc: parameter 'wq': tensor 'wq' of $fx/badshape.safetensors has shape (256, 128), expected (256, 256)" \
		--params "$fx/badshape.safetensors"
	expect_error "$d" "unsupported dtype" \
		"shardc: parameter 'wq': tensor 'wq' of $fx/i8.safetensors has dtype I8, which is not read as float32 (F64, F32, F16 and BF16 are)" \
		--params "$fx/i8.safetensors"
	expect_error "$d" "truncated file" "shardc: --params $fx/truncated.safetensors is truncated: tensor '" \
		--params "$fx/truncated.safetensors"
	expect_error "$d" "header past the end" \
		"shardc: --params $fx/shortheader.safetensors is truncated: its header is 4096 bytes" \
		--params "$fx/shortheader.safetensors"
	expect_error "$d" "bad JSON" "shardc: --params $fx/badjson.safetensors has a header that is not JSON: line 1, column" \
		--params "$fx/badjson.safetensors"
	expect_error "$d" "no file" "shardc: --params $fx/none.safetensors cannot be opened: No such file or directory" \
		--params "$fx/none.safetensors"
	expect_error "$d" "a directory" "shardc: --params $fx is a directory, not a safetensors file" --params "$fx"
	expect_error "$d" "bad rename JSON" "shardc: --param-names $fx/badnames.json is not JSON: line 1" \
		--params "$fx/plain.safetensors" --param-names "$fx/badnames.json"
	expect_error "$d" "rename of no parameter" \
		"shardc: --param-names $fx/unknown_names.json renames 'nope', but the model has no parameter of that name (it has: ln1.gamma" \
		--params "$fx/plain.safetensors" --param-names "$fx/unknown_names.json"
	expect_error "$d" "renamed to a missing tensor" \
		"shardc: parameter 'wq': $fx/plain.safetensors has no tensor 'transformer.h.0.nothing' (its name in $fx/missing_names.json)" \
		--params "$fx/plain.safetensors" --param-names "$fx/missing_names.json"
	expect_error "$d" "--param-names alone" "shardc: --param-names $fx/names.json needs --params FILE.safetensors" \
		--param-names "$fx/names.json"
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
