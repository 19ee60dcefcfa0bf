#!/bin/sh
# snapshot.sh SHARDC LIST: one line per compile, for checking that a change to
# the compiler leaves what it writes byte-identical. Every sample and e2e model
# on 1, 2, 4 and 8 devices in stand_alone, data_parallel, semi_auto_parallel
# and auto_parallel (both search modes), plain and with bf16, ZeRO-3 and
# recomputation, is compiled with -o and --dump-ir; the line holds the exit
# status, a hash of every file written (names and bytes) and a hash of stderr.
# Compare two LISTs with diff. SNAP_MODELS overrides the model list.
shardc=${1:?usage: snapshot.sh SHARDC LIST}
# The Makefile names the runtime's folder: one name, wherever the binary lies.
export SHARDC_HOME=/shardc-home
list=${2:?usage: snapshot.sh SHARDC LIST}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
models=${SNAP_MODELS:-$(ls ir-samples/*.ir tests/e2e/*.ir tests/good/*.ir)}
for f in $models; do
	for dev in 1 2 4 8; do
		for mode in stand_alone data_parallel semi_auto_parallel auto_parallel/sharding_propagation \
		            auto_parallel/recursive_programming; do
			for extra in - "--precision bf16" "--parallel-optimizer level3" --recompute; do
				echo "$f|$dev|$mode|$extra"
			done
		done
	done
done >"$tmp/jobs"
one() {
	IFS='|' read -r f dev mode extra <<E
$1
E
	o=$(mktemp -d "$tmp/o.XXXXXX")
	search=
	[ "${mode#*/}" != "$mode" ] && search="--search-mode ${mode#*/}"
	[ "$extra" = - ] && extra=
	# shellcheck disable=SC2086
	"$shardc" "$f" -o "$o/out" --dump-ir --device-num "$dev" --parallel-mode "${mode%/*}" $search $extra \
		>"$o/stdout" 2>"$o/stderr" </dev/null
	rc=$?
	files=$( [ -d "$o/out" ] && cd "$o/out" && find . -type f | LC_ALL=C sort | xargs -r sha1sum | sha1sum | cut -c1-12)
	err=$(sed "s|$o/out|OUT|g" "$o/stderr" | sha1sum | cut -c1-12)
	out=$(sha1sum <"$o/stdout" | cut -c1-12)
	echo "$1 exit=$rc files=${files:--} stdout=$out stderr=$err"
	rm -rf "$o"
}

while read -r job; do one "$job"; done <"$tmp/jobs" >"$list"
wc -l <"$list"
