#!/bin/bash
# tests/run_docs.sh [SHARDC]: the command examples of the docs still run.
#
# Convention (README.md, docs/*.md, runtime/README.md, ir-samples/README.md):
# a session is a fenced block opened with ```console. In it, a line starting
# with `$ ` is a command (a line ending with `\` continues on the next one);
# the lines up to the next `$ ` are its output, shown, not compared. Other
# fenced blocks (```sh, ```text, ...) and indented blocks are never run.
#
# Of those commands, each that invokes shardc (`shardc` or `build/shardc`)
# or an OUTDIR's `run.sh` is run, in file order, from the repository root by
# `bash -c`, with SHARDC (default build/shardc) as `shardc` first on PATH;
# the others (cat, ls, python3, dot, ...) are shown only. A command must
# exit 0, or N when it ends with the comment `# exit: N` (a wrong model:
# 1). Commands that write, write under out/ (git-ignored): they are the
# reader's commands, so they use the paths a reader would.
#
# The last line is `docs-check: N passed, N failed`; the status is 1 when
# any failed (or none was found).
set -u
cd "$(dirname "$0")/.." || exit 2
root=$PWD
shardc=${1:-build/shardc}
case $shardc in /*) ;; *) shardc=$root/$shardc ;; esac
[ -x "$shardc" ] || { echo "docs-check: no shardc at $shardc (make first)"; exit 2; }

bin=$(mktemp -d)
log=$(mktemp)
trap 'rm -rf "$bin" "$log"' EXIT
ln -s "$shardc" "$bin/shardc"

# Print FILE<TAB>LINE<TAB>COMMAND for every command of a ```console block.
extract() {
	awk -v f="$1" '
		/^```/ { inblk = !inblk && $0 ~ /^```console[ \t]*$/; next }
		!inblk { next }
		cont { cmd = cmd " " $0 }
		!cont && /^\$ / { line = NR; cmd = substr($0, 3) }
		cont || /^\$ / { if (cmd ~ /\\$/) { sub(/\\$/, "", cmd); cont = 1 } else { print f "\t" line "\t" cmd; cont = 0 } }
	' "$1"
}

pass=0 fail=0
for f in README.md docs/*.md runtime/README.md ir-samples/README.md; do
	[ -f "$f" ] || continue
	while IFS=$'\t' read -r file line cmd; do
		case $cmd in
		*shardc*|*run.sh*) ;;
		*) continue ;;
		esac
		want=0
		if [[ $cmd =~ \#\ exit:\ ([0-9]+)[[:space:]]*$ ]]; then want=${BASH_REMATCH[1]}; fi
		run=${cmd//build\/shardc/shardc}
		PATH="$bin:$PATH" timeout 300 bash -c "$run" >"$log" 2>&1 </dev/null
		got=$?
		if [ "$got" = "$want" ]; then
			pass=$((pass + 1))
			echo "ok   $file:$line: $cmd"
		else
			fail=$((fail + 1))
			echo "FAIL $file:$line: exit $got, expected $want: $cmd"
			tail -n 20 "$log" | sed 's/^/     | /'
		fi
	done < <(extract "$f")
done
echo "docs-check: $pass passed, $fail failed"
[ "$fail" = 0 ] && [ "$pass" -gt 0 ]
