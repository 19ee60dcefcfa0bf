#!/bin/sh
# install-deps.sh: make sure every dependency shardc builds and tests with is
# really usable, install the missing ones, and write the flags to use into
# build/config.mk (the Makefile includes it, so the flags are computed after
# the install, never before).
#
# Each dependency is probed the way configure does it: a tiny program that
# uses the exact symbols the code uses is compiled and linked. A header alone
# proves nothing: Debian's netlib libblas-dev ships a cblas.h without
# openblas_set_num_threads, so "cblas.h exists" is not "OpenBLAS is there".
# Debian packages only; installing needs root.
#
#   sh tools/install-deps.sh [CONFIG]   (CONFIG defaults to build/config.mk)
set -eu
config=${1:-build/config.mk}
CC=${CC:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# try_link NAME CC FLAGS... < program: 0 when the program compiles and links.
try_link() {
	name=$1 compiler=$2
	shift 2
	cat >"$tmp/$name.c"
	# shellcheck disable=SC2068
	$compiler -o "$tmp/$name" "$tmp/$name.c" $@ >"$tmp/$name.log" 2>&1
}

have_cmd() { command -v "$1" >/dev/null 2>&1; }

# OpenBLAS's OpenMP flavour: the runtime's own loops are OpenMP, and with the
# pthreads flavour the two thread pools spin against each other (the GPT layer's
# 1-rank forward took 56 ms on 2 cores, 35 ms with one shared OpenMP pool).
# Debian installs it beside the default flavour; the rpath makes the programs
# load it whatever the libopenblas.so.0 alternative points to.
blas_dir() { echo "/usr/lib/$($CC -print-multiarch)/openblas-openmp"; }
blas_pc() { PKG_CONFIG_PATH="$(blas_dir)/pkgconfig" pkg-config "$@" openblas 2>/dev/null; }
blas_cflags() { blas_pc --cflags || true; }
blas_libs() { echo "$(blas_pc --libs || echo -lopenblas) -Wl,-rpath,$(blas_dir)"; }

probe_jansson() {
	try_link jansson "$CC" -ljansson <<-'EOF'
	#include <jansson.h>
	int main(void) { json_t *j = json_pack("{s:i}", "a", 1); json_decref(j); return 0; }
	EOF
}
probe_criterion() {
	try_link criterion "$CC" -lcriterion <<-'EOF'
	#include <criterion/criterion.h>
	Test(probe, links) { cr_assert(1); }
	EOF
}
probe_mpi() {
	have_cmd mpicc && have_cmd mpirun || return 1
	try_link mpi mpicc <<-'EOF'
	#include <mpi.h>
	int main(int argc, char **argv) { MPI_Init(&argc, &argv); MPI_Comm c; MPI_Comm_split(MPI_COMM_WORLD, 0, 0, &c); MPI_Finalize(); return 0; }
	EOF
}
probe_openblas() {
	# It links, computes, and is the OpenMP build (openblas_get_parallel: 2).
	# shellcheck disable=SC2046
	try_link openblas "$CC" $(blas_cflags) $(blas_libs) <<-'EOF' && "$tmp/openblas"
	#include <cblas.h>
	int main(void) {
		float a = 1, b = 2, c = 0;
		openblas_set_num_threads(1);
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 1, 1, 1, 1.0f, &a, 1, &b, 1, 0.0f, &c, 1);
		return c == 2 && openblas_get_parallel() == 2 ? 0 : 1;
	}
	EOF
}
probe_sanitizers() {
	try_link san "$CC" -fsanitize=address,undefined <<-'EOF'
	int main(void) { return 0; }
	EOF
}
probe_libfuzzer() {
	have_cmd clang || return 1
	try_link fuzzer clang -fsanitize=fuzzer,address,undefined <<-'EOF'
	#include <stddef.h>
	#include <stdint.h>
	int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }
	EOF
}
probe_numpy() { /usr/bin/python3 -c 'import numpy' >/dev/null 2>&1; }
probe_matplotlib() { /usr/bin/python3 -c 'import matplotlib' >/dev/null 2>&1; }   # tools/plot_log.py

# Each line: probe, then the Debian packages that satisfy it.
checks='
have_cmd_flex flex
have_cmd_bison bison
have_cmd_pkg-config pkg-config
probe_jansson libjansson-dev
probe_criterion libcriterion-dev
probe_mpi libopenmpi-dev openmpi-bin
probe_openblas libopenblas-openmp-dev
probe_sanitizers gcc
probe_libfuzzer clang libclang-rt-dev
probe_numpy python3-numpy
probe_matplotlib python3-matplotlib
'

run_probe() {
	case $1 in
	have_cmd_*) have_cmd "${1#have_cmd_}" ;;
	*) "$1" ;;
	esac
}

missing() {
	echo "$checks" | while read -r probe pkgs; do
		[ -n "$probe" ] || continue
		run_probe "$probe" || echo "$pkgs"
	done
}

need=$(missing | tr '\n' ' ')
if [ -n "${need% }" ]; then
	echo "install-deps: installing $need"
	if [ "$(id -u)" != 0 ]; then
		echo "install-deps: need root to apt-get install $need" >&2
		exit 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q >/dev/null
	# shellcheck disable=SC2086
	apt-get install -y -q --no-install-recommends $need >/dev/null
	# Probe again: a package that installed but still does not link is named here.
	still=""
	for probe in $(echo "$checks" | awk 'NF {print $1}'); do
		run_probe "$probe" || still="$still ${probe#probe_}"
	done
	if [ -n "$still" ]; then
		echo "install-deps: still unusable after installing:$still" >&2
		for f in "$tmp"/*.log; do [ -s "$f" ] && { echo "--- $f" >&2; cat "$f" >&2; }; done
		exit 1
	fi
fi

mkdir -p "$(dirname "$config")"
cat >"$config.tmp" <<EOF
# Written by tools/install-deps.sh after every dependency was probed; delete
# it (or run make clean) to probe again.
MPI_CFLAGS := $(mpicc --showme:compile)
MPI_LIBS := $(mpicc --showme:link)
BLAS_CFLAGS := $(blas_cflags)
BLAS_LIBS := $(blas_libs)
EOF
mv "$config.tmp" "$config"
echo "install-deps: all dependencies present; flags in $config"
