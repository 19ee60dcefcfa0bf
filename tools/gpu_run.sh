#!/usr/bin/env bash
# gpu_run.sh KIT.tar.xz [SECONDS]: on a machine with a GPU, from the repo's
# root: the cuda backend's kernels against their CPU twins, the matrix
# products' speed, the collectives, then every run of the kit's end-to-end
# models built for BACKEND=cuda and compared with the CPU programs' results
# (tools/npy_compare.py, the model's tolerances, against the one-device CPU program) and with the manifest's
# byte counts. The kit is tools/gpu_kit.sh's. The end-to-end runs stop
# after SECONDS (default 240), counting what was not run. Last line:
# gpu e2e: N passed, N failed, N not run. The GPT timings are in
# /tmp/shardc_gpu/bench too. GPU_SKIP="gemm comm" leaves out the matrix
# products' speed and the collectives (already measured in a session whose
# device minutes are few); the twins stop after GPU_TWINS_SECONDS (120);
# GPU_DEADLINE (below) bounds the whole script.
set -uo pipefail
kit_tar=$(realpath "${1:?usage: gpu_run.sh KIT.tar.xz [SECONDS]}")
budget=${2:-240}
repo=$(pwd)
work=/tmp/shardc_gpu
rm -rf "$work" && mkdir -p "$work" && tar -C "$work" -xJf "$kit_tar" || exit 2
kit=$work/kit
R=$kit/root/usr

# OpenMPI unpacked under $R, found through OPAL_PREFIX; PMIx's plugins are
# named, or it looks where Debian puts them (the device's own pmix2 is
# another version: its zlib plugin refused ours, 2026-11-24).
export OPAL_PREFIX=$R PATH=$kit/bin:$R/bin:$PATH
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export PMIX_MCA_mca_base_component_path=$R/lib/x86_64-linux-gnu/pmix2/lib/pmix PMIX_MCA_pcompress_base_silence_warning=1
ln -sf "$R/bin/orterun" "$kit/bin/mpirun"
ln -sf "$R/bin/mpicc.openmpi" "$kit/bin/mpicc"
# cuBLAS, the CUDA runtime and NCCL: with the toolkit, or with PyTorch's packages.
libdir() { dirname "$(find /usr/local/cuda/lib64/ /usr/local/cuda/targets /usr/lib/x86_64-linux-gnu/ /opt /usr/local/lib \
	-name "$1" 2>/dev/null | head -1)" 2>/dev/null; }
cublas=$(libdir 'libcublas.so.13*') cudart=$(libdir 'libcudart.so.13*') nccl=$(libdir 'libnccl.so.2*')
export LD_LIBRARY_PATH=$R/lib/x86_64-linux-gnu:$R/lib/x86_64-linux-gnu/openmpi/lib:$cublas:$cudart:$nccl:${LD_LIBRARY_PATH:-}
export CUDA_LIBS="-L$cublas -L$cudart -L$nccl -l:libcublas.so.13 -l:libcudart.so.13 -l:libnccl.so.2 -lstdc++ $kit/lib/libjansson.a -lm"
mpi=(mpirun --oversubscribe --bind-to none)

echo "== machine"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader
echo "gcc: $(gcc --version | head -1); cublas in $cublas, cudart in $cudart, nccl in $nccl; $(nproc) cores"
skip=" ${GPU_SKIP:-} "
echo "== cuda_twins"
# bounded: a kernel that hangs must not take the whole call's minutes
timeout -k 5 "${GPU_TWINS_SECONDS:-120}" "${mpi[@]}" -np 1 "$kit/bin/cuda_twins" >"$work/twins.log" 2>&1
rc=$?
echo "cuda_twins: exit $rc$([ $rc = 124 ] && echo ', stopped: out of time')"
grep -v 'pmix\|dlopen\|Perhaps a missing' "$work/twins.log" | tail -40
if [[ $skip != *" gemm "* ]]; then
	echo "== cuda_gemm_bench"
	"${mpi[@]}" -np 1 "$kit/bin/cuda_gemm_bench" 2>&1
fi
if [[ $skip != *" comm "* ]]; then
	echo "== mpi_collectives on the cuda library, 4 ranks on one GPU (so through MPI: NCCL takes one rank a GPU)"
	"${mpi[@]}" -np 4 "$kit/bin/mpi_collectives" 2>&1 | grep -v 'bytes sent' | tail -6   # the checks' line, not the counts
	echo "== mpi_p2p on the cuda library, 4 ranks on one GPU (through MPI, as above)"
	"${mpi[@]}" -np 4 "$kit/bin/mpi_p2p" 2>&1 | grep -v 'bytes sent' | tail -6
fi

mkdir -p "$repo/build/runtime"
cp "$kit/lib/libshardc_rt_cuda.a" "$repo/build/runtime/"
echo "== training steps of 4 GPT layers (seq 1024, batch 8, 16 heads, Adam), 1 rank"
# The dense peak of the GPU's half-precision tensor cores, TFLOP/s (TF32's is
# half of it), for the model FLOPs utilization (MFU): the step's FLOPs (the
# kit's `flops`) over its time, over the peak. SHARDC_PEAK="TFLOPS,GBS" overrides.
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$gpu" in
*H100*PCIe*) peak=756.5 ;;
*H100*NVL*) peak=835.5 ;;
*H100* | *H200*) peak=989.4 ;;
*A100*) peak=312 ;;
*) peak=${SHARDC_PEAK:-} peak=${peak%%,*} ;;
esac
# step DIR LABEL [OPTION]: median ms/step of steps 3..12 and the MFU
step() {
	local d=$1 label=$2 opt=${3:-}
	if ! "${mpi[@]}" -np 1 "$d/bin/cuda/program" --steps 12 --output-dir "$d/res" $opt >"$d/log.$label" 2>&1; then
		echo "$label: fails: $(tail -3 "$d/log.$label")"
		return
	fi
	local ms
	ms=$(awk -F', ' '/^step: / { split($1, s, " "); if (s[2] >= 3) for (i = 1; i <= NF; i++) if ($i ~ / ms\/step$/) { sub(/ ms\/step/, "", $i); print $i } }' \
		"$d/log.$label" | sort -g | awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : "nan" }')
	read -r n t f <"$d/flops"
	local loss
	loss=$(grep -o 'loss is [^ ,]*' "$d/log.$label" | tail -1 | cut -d' ' -f3)
	awk -v l="$label" -v ms="$ms" -v f="$f" -v pk="${peak:-0}" -v n="$n" -v loss="$loss" 'BEGIN {
		tf = f / (ms / 1e3) / 1e12
		mfu = pk > 0 ? sprintf("MFU %5.1f%% of %s TFLOP/s", 100 * tf / pk, pk) : "MFU: peak unknown"
		printf "%-20s %9.2f ms/step %7.1f TFLOP/s  %s  (%.1fM params, %.2f TFLOP a step, last loss %s)\n", l, ms, tf, mfu, n / 1e6, f / 1e12, loss
	}' | tee -a "$work/bench"
}
for d in "$kit"/bench/*; do
	name=$(basename "$d")
	make -s -C "$d" BACKEND=cuda SHARDC_HOME="$repo" CFLAGS="-O2 -std=c11" LIBS_cuda="$CUDA_LIBS" >"$d/build.log" 2>&1 ||
		{ echo "$name: build fails: $(tail -3 "$d/build.log")"; continue; }
	step "$d" "$name"
	[[ $name == *fp32 ]] && step "$d" "$name+tf32" --tf32
done
echo "== profiles (SHARDC_PROFILE=1: steps 2 to 4)"
for d in "$kit"/bench/gpt2048_bf16 "$kit"/bench/gpt2048_fp32; do
	opt=
	[[ $d == *fp32 ]] && opt=--tf32
	echo "-- $(basename "$d") $opt"
	SHARDC_PROFILE=1 "${mpi[@]}" -np 1 "$d/bin/cuda/program" --steps 4 --output-dir "$d/resp" $opt 2>&1 >/dev/null |
		sed -n '/^profile/,$p' | head -45
done

echo "== end to end on BACKEND=cuda"
# one run: build, run, compare; prints ok/FAIL and the worst errors
one() {
	local dir=$1 ranks rtol atol msg
	ranks=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["device_num"])' "$dir/manifest.json")
	read -r rtol atol <"$dir/../tol"
	local what="${dir#"$kit"/e2e/} ($ranks ranks)"
	if ! make -s -C "$dir" BACKEND=cuda SHARDC_HOME="$repo" CFLAGS="-O0 -std=c11" LIBS_cuda="$CUDA_LIBS" >"$dir/build.log" 2>&1; then
		echo "FAIL $what: build: $(tail -3 "$dir/build.log")"
		return
	fi
	mkdir -p "$dir/gpu"
	if ! timeout 120 "${mpi[@]}" -np "$ranks" "$dir/bin/cuda/program" --output-dir "$dir/gpu" >"$dir/gpu/log" 2>"$dir/gpu/err"; then
		echo "FAIL $what: run: $(tail -3 "$dir/gpu/err")"
		return
	fi
	if msg=$(python3 "$repo/tools/npy_compare.py" "$dir/gpu" "$dir/../cpu" --rtol "$rtol" --atol "$atol" --what "cuda vs cpu" \
	             --manifest "$dir/manifest.json" 2>&1); then
		echo "ok   $what: $(echo "$msg" | grep -o 'worst.*' | tr '\n' ' ')"
	else
		echo "FAIL $what: $msg"
	fi
}
export -f one
export kit repo
export MPI_CMD="${mpi[*]}"
# GPU_DEADLINE: seconds from this script's start by which the end-to-end
# runs stop (the device call's own limit, less a margin), whatever SECONDS says.
if [ -n "${GPU_DEADLINE:-}" ] && ((GPU_DEADLINE - SECONDS < budget)); then
	budget=$((GPU_DEADLINE - SECONDS > 1 ? GPU_DEADLINE - SECONDS : 1))
fi
# Each rank count's runs in turn, so a cut-off run still covers every model once.
for d in "$kit"/e2e/*/n1 "$kit"/e2e/*/n2 "$kit"/e2e/*/n4 "$kit"/e2e/*/n8 "$kit"/e2e/*/n4s "$kit"/e2e/*/n8s; do
	[ -d "$d" ] && echo "$d"
done >"$work/runs"
total=$(wc -l <"$work/runs")
timeout "$budget" xargs -P "$(( $(nproc) / 2 ))" -I{} bash -c 'mpi=($MPI_CMD); one "$1"' _ {} <"$work/runs" | tee "$work/results"
pass=$(grep -c '^ok ' "$work/results")
fail=$(grep -c '^FAIL ' "$work/results")
echo "gpu e2e: $pass passed, $fail failed, $((total - pass - fail)) not run"
