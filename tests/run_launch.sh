#!/usr/bin/env bash
# run_launch.sh SHARDC: run.sh's launchers (docs/output.md, Running on a
# cluster), on 2 ranks (CPU backend). A trained sample runs three ways and
# writes the same results byte for byte and the same loss lines:
#   - plain run.sh (mpirun on this machine);
#   - --hostfile with two slots of this machine standing for two nodes;
#   - --launcher srun, with an `srun` on PATH that stands for Slurm's: it
#     checks it is asked for PMIx and 2 tasks of the one program, then
#     starts them with mpirun.
# And the launchers' refusals, exit 2 with a message: an unknown launcher, a
# hostfile that cannot be read, a hostfile with srun.
# Last line: launch: N passed, N failed.
set -u
shardc=$(realpath "${1:?usage: run_launch.sh SHARDC}")
. "$(dirname "$0")/lib.sh"   # $tmp, ok, bad, CFLAGS

out=$tmp/o
if ! "$shardc" ir-samples/data_parallel_mlp.ir -o "$out" --device-num 2 2>"$tmp/err"; then
	bad "data_parallel_mlp does not compile on 2 ranks: $(head -3 "$tmp/err")"
	echo "launch: $pass passed, $fail failed"
	exit 1
fi
# The loss lines without their timings.
losses() { sed -n 's/^\(step: [0-9]*, loss is [^,]*, lr [^,]*\),.*/\1/p' "$1"; }
# same RESULTS: the files and the loss lines of the plain run
same() {
	if ! diff -r "$out/plain" "$out/$1" >/dev/null; then
		bad "$2: the results differ from the plain run's"
	elif ! diff <(losses "$tmp/plain.log") <(losses "$tmp/$1.log") >/dev/null; then
		bad "$2: the loss lines differ from the plain run's"
	else
		ok "$2: the plain run's results and loss lines"
	fi
}
if "$out/run.sh" --steps 3 --output-dir "$out/plain" >"$tmp/plain.log" 2>&1 && grep -q '^step' "$tmp/plain.log"; then
	ok "plain run"
else
	bad "plain run fails: $(tail -3 "$tmp/plain.log")"
fi

printf 'localhost slots=2\n' >"$tmp/hosts"
if "$out/run.sh" --steps 3 --output-dir "$out/hostfile" --hostfile "$tmp/hosts" >"$tmp/hostfile.log" 2>&1; then
	same hostfile "--hostfile (two slots for two nodes)"
else
	bad "--hostfile fails: $(tail -3 "$tmp/hostfile.log")"
fi

mkdir -p "$tmp/bin"
cat >"$tmp/bin/srun" <<'EOF'
#!/usr/bin/env bash
# Slurm's srun as run.sh must call it: --mpi=pmix --ntasks=N PROGRAM ARGS...
[ "$1" = --mpi=pmix ] || { echo "srun: expected --mpi=pmix first, got '$1'" >&2; exit 9; }
[ "$2" = --ntasks=2 ] || { echo "srun: expected --ntasks=2, got '$2'" >&2; exit 9; }
case $3 in */bin/cpu/program) ;; *) echo "srun: expected OUTDIR/bin/cpu/program, got '$3'" >&2; exit 9 ;; esac
shift 2
root=; [ "$(id -u)" != 0 ] || root=--allow-run-as-root
exec mpirun --oversubscribe $root -np 2 "$@"
EOF
chmod +x "$tmp/bin/srun"
if PATH="$tmp/bin:$PATH" "$out/run.sh" --steps 3 --output-dir "$out/srun" --launcher srun >"$tmp/srun.log" 2>&1; then
	same srun "--launcher srun (one program, one task a rank)"
else
	bad "--launcher srun fails: $(tail -3 "$tmp/srun.log")"
fi

# refuse ARGS... MESSAGE: exit 2 with MESSAGE on stderr
refuse() {
	local want=${*: -1}
	"$out/run.sh" "${@:1:$#-1}" >"$tmp/out" 2>"$tmp/err"
	local status=$?
	if [ $status = 2 ] && grep -qF -e "$want" "$tmp/err"; then
		ok "refused: ${*:1:$#-1}"
	else
		bad "run.sh ${*:1:$#-1}: exit $status, $(head -2 "$tmp/err")"
	fi
}
refuse --launcher slurm "--launcher 'slurm': expected mpirun (the default) or srun"
refuse --hostfile "$tmp/none" "--hostfile '$tmp/none' cannot be read"
refuse --hostfile "$tmp/hosts" --launcher srun "--hostfile is mpirun's"
echo "launch: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
