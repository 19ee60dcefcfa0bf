#!/usr/bin/env bash
# run_outdir.sh SHARDC: how shardc writes OUT (compiler/outdir.c).
#
# - A recompile for fewer ranks leaves no rank_<r>.c, ir/rank_<r> or bin/ of
#   the old one; compiles of 8 and 16 ranks racing into one OUT leave one of
#   them whole (run.sh, manifest.json, program.c, ranks.c, rank files and ir/
#   agree).
# - OUT as a file, or as a folder of the user's with files in it, is refused
#   with exit 2 and left alone; an empty folder is used.
# - A write that fails part way (ulimit -f: EFBIG) exits 4 naming the file,
#   leaves the old OUT byte for byte and no staging folder; so does a failed
#   --strategy-out.
# - A model path with "*/", spaces, quotes, '$' and a newline, and an OUT
#   path with them, compile, build (-Werror) and run on 2 ranks; so does a
#   SHARDC_HOME with spaces, quotes, '$' and '#' in its name.
# Last line: outdir: N passed, N failed.
set -u
shardc=$(realpath "${1:?usage: run_outdir.sh SHARDC}")
root=$(pwd)
model=$root/ir-samples/matmul_relu_semi.ir
. "$(dirname "$0")/lib.sh"   # $tmp, ok, bad, CFLAGS

check() { local what=$1; shift; if "$@"; then ok "$what"; else bad "$what"; return 1; fi; }

# compile OUT RANKS [shardc args]: the seed, data parallel, on RANKS devices.
compile() {
	local out=$1 n=$2
	shift 2
	"$shardc" "$model" -o "$out" --parallel-mode data_parallel --device-num "$n" "$@"
}

# whole OUT RANKS: every part of OUT is of one compile for RANKS ranks.
whole() {
	local out=$1 n=$2 r
	[ -f "$out/manifest.json" ] && [ -f "$out/Makefile" ] && [ -x "$out/run.sh" ] || return 1
	grep -q "^ranks=$n\$" "$out/run.sh" || return 1
	grep -q "\"device_num\": $n," "$out/manifest.json" || return 1
	grep -q "^RANKS := $n\$" "$out/Makefile" || return 1
	[ "$(ls "$out" | grep -c '^rank_[0-9]*\.c$')" = "$n" ] || return 1
	[ -f "$out/program.c" ] && [ "$(grep -c '^#include "rank_[0-9]*\.c"$' "$out/ranks.c")" = "$n" ] || return 1
	grep -q "(${n} ranks)" "$out/program.c" || return 1
	[ "$(ls "$out/ir" | grep -c '^rank_[0-9]*$')" = "$n" ] || return 1
	for ((r = 0; r < n; r++)); do
		head -1 "$out/rank_$r.c" | grep -q "rank $r of $n of" || return 1
	done
}

# no_staging DIR: no staging or set-aside folder left in DIR.
no_staging() { ! ls -a "$1" | grep -q 'shardc-\(tmp\|old\)'; }

sum() { (cd "$1" && find . -type f | LC_ALL=C sort | xargs -d '\n' md5sum); }

# ---- the last compile wins whole ----
out=$tmp/out
compile "$out" 8 --dump-ir >/dev/null && (cd "$out" && ./run.sh >/dev/null 2>&1)
check "8 ranks compiled and run" whole "$out" 8
check "8 ranks: bin/ and results/ written" test -d "$out/bin" -a -d "$out/results"
compile "$out" 2 --dump-ir >/dev/null
check "8 ranks then 2: nothing of the 8 left (rank_2.c .. rank_7.c, ir/rank_2 .., bin/)" \
	eval 'whole "$out" 2 && [ ! -e "$out/rank_2.c" ] && [ ! -e "$out/ir/rank_7" ] && [ ! -e "$out/bin" ]'
check "no staging folder left" no_staging "$tmp"

race_ok=true
for round in 1 2 3 4 5; do
	compile "$out" 16 --dump-ir >/dev/null 2>"$tmp/race16" &
	a=$!
	compile "$out" 8 --dump-ir >/dev/null 2>"$tmp/race8" &
	b=$!
	wait $a && wait $b || { race_ok=false; cat "$tmp/race16" "$tmp/race8"; }
	if ! whole "$out" 16 && ! whole "$out" 8; then
		race_ok=false
		echo "round $round: a mix: $(ls "$out" | tr '\n' ' ')"
	fi
	no_staging "$tmp" || race_ok=false
done
check "8 and 16 ranks compiled at once into one OUT, 5 times: one of them whole each time" $race_ok

# ---- what OUT may replace ----
echo "my notes" >"$tmp/file"
compile "$tmp/file" 2 >/dev/null 2>"$tmp/err"
st=$?
check "OUT a file: exit 2, the file untouched" \
	eval '[ $st = 2 ] && [ "$(cat "$tmp/file")" = "my notes" ] && grep -q "is not a folder" "$tmp/err"'
mkdir -p "$tmp/mine/sub" && echo "keep" >"$tmp/mine/notes.txt"
compile "$tmp/mine" 2 >/dev/null 2>"$tmp/err"
st=$?
check "OUT a folder shardc did not write: exit 2, says so, left alone" \
	eval '[ $st = 2 ] && [ -f "$tmp/mine/notes.txt" ] && [ -d "$tmp/mine/sub" ] && [ ! -e "$tmp/mine/rank_0.c" ] &&
	      grep -q "shardc did not write" "$tmp/err"'
mkdir -p "$tmp/empty"
compile "$tmp/empty/" 2 --dump-ir >/dev/null
check "OUT an empty folder (given with a slash): used" whole "$tmp/empty" 2
ln -s "$tmp/empty" "$tmp/link"
compile "$tmp/link" 8 --dump-ir >/dev/null
check "OUT a symbolic link to a shardc folder: the folder replaced, the link kept" \
	eval '[ -L "$tmp/link" ] && whole "$tmp/empty" 8'
check "no staging folder left" no_staging "$tmp"

# ---- a write failing part way ----
compile "$out" 8 --dump-ir >/dev/null
before=$(sum "$out")
(trap '' XFSZ; ulimit -f 2; compile "$out" 2 --dump-ir) >/dev/null 2>"$tmp/err"
st=$?
check "a write failing part way: exit 4" test $st = 4
check "... the message names the file and the reason" grep -q "^shardc: cannot write $out/[^ ]*: File too large\$" "$tmp/err"
check "... the old OUT byte for byte" test "$(sum "$out")" = "$before"
check "... no staging folder left" no_staging "$tmp"
"$shardc" "$model" --check --strategy-out "$tmp/no/such/dir/s.json" 2>"$tmp/err"
st=$?
check "--strategy-out unwritable: exit 4, named" \
	eval '[ $st = 4 ] && grep -q "cannot write $tmp/no/such/dir/s.json: No such file or directory" "$tmp/err"'

# ---- paths pasted into C, make and shell ----
weird="we ird \"q\" 'a' \$HOME ??/"$'\n'"x*"   # the model is weird/m.ir: "*/" in its path
if ! mkdir -p "$tmp/$weird" 2>/dev/null; then weird="we ird \"q\" 'a' \$HOME ??/ x*"; mkdir -p "$tmp/$weird"; fi
cp "$model" "$tmp/$weird/m.ir"
wmodel=$(ls -d "$tmp/$weird"/*.ir)
wout="$tmp/out \"q\" 'a' \$HOME x*/"
"$shardc" "$wmodel" -o "$wout" --parallel-mode data_parallel --device-num 2 --dump-ir >/dev/null
check "a model path with */, spaces, quotes, \$ and a newline: compiled" whole "$wout" 2
check "... rank_0.c names it escaped on line 1" eval 'head -1 "$wout/rank_0.c" | grep -qF "x*\\/"'
(cd "$wout" && ./run.sh >"$tmp/log" 2>&1)
check "... built with -Werror and run on 2 ranks" \
	eval 'grep -q "^rank 1: comm bytes sent" "$tmp/log" && [ -f "$wout/results/output_0.npy" ]' || tail "$tmp/log"

home="$tmp/sh home #1 \$x 'q' \"d\""
ln -s "$root" "$home"
SHARDC_HOME=$home compile "$tmp/hout" 2 >/dev/null
check "SHARDC_HOME with spaces, #, \$ and quotes: the Makefile names it" \
	grep -qF "SHARDC_HOME ?= $tmp/sh home \\#1 \$\$x 'q' \"d\"" "$tmp/hout/Makefile"
(cd "$tmp/hout" && ./run.sh >"$tmp/log" 2>&1)
check "... built against it and run on 2 ranks" \
	eval 'grep -q "^rank 1: comm bytes sent" "$tmp/log" && [ -f "$tmp/hout/results/output_0.npy" ]'
make -s -C "$tmp/hout" clean && make -s -C "$tmp/hout" SHARDC_HOME="$tmp/no such home" >"$tmp/log" 2>&1
st=$?
check "... a missing runtime is named, quoted" eval '[ $st != 0 ] && grep -qF "no $tmp/no such home/build/runtime/" "$tmp/log"'

echo "outdir: $pass passed, $fail failed"
[ $fail = 0 ]
