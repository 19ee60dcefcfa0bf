#!/bin/sh
# install-deps.sh: install what shardc needs to build and test, when missing.
# Called by the Makefile (once; it leaves build/.deps-ok). Debian packages only.
set -e
need=""
have_cmd() { command -v "$1" >/dev/null 2>&1; }
have_hdr() { [ -e "/usr/include/$1" ] || [ -e "/usr/include/x86_64-linux-gnu/$1" ] || [ -e "/usr/include/aarch64-linux-gnu/$1" ]; }
have_cmd flex        || need="$need flex"
have_cmd bison       || need="$need bison"
have_cmd pkg-config  || need="$need pkg-config"
have_hdr jansson.h   || need="$need libjansson-dev"
have_hdr criterion/criterion.h || need="$need libcriterion-dev"
have_cmd mpicc       || need="$need libopenmpi-dev openmpi-bin"
have_hdr cblas.h || have_hdr openblas/cblas.h || [ -e /usr/include/x86_64-linux-gnu/openblas-pthread/cblas.h ] || need="$need libopenblas-dev"
/usr/bin/python3 -c 'import numpy' 2>/dev/null || need="$need python3-numpy"
have_cmd clang       || need="$need clang"
ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1 || need="$need libclang-rt-dev"
if [ -n "$need" ]; then
	echo "install-deps: installing$need"
	if [ "$(id -u)" != 0 ]; then
		echo "install-deps: need root to apt-get install$need" >&2
		exit 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q >/dev/null
	# shellcheck disable=SC2086
	apt-get install -y -q --no-install-recommends $need >/dev/null
fi
echo "install-deps: all dependencies present"
