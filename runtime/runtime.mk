# runtime.mk: the runtime library, included by the top Makefile.
#
#   build/runtime/libshardc_rt_cpu.a    MPI + OpenBLAS + C        (always)
#   build/runtime/libshardc_rt_cuda.a   MPI + NCCL + cuBLAS + CUDA (when nvcc is found)
#   make runtime          both libraries (the cuda one when detected)
#   make runtime-test     CPU unit tests (Criterion, ASan/UBSan) and the MPI tests (mpirun -np 4)
#   make runtime-cuda-test  CUDA kernels against their CPU twins; skips when no GPU is present
#
# Overrides: NO_CUDA=1 (no cuda library), NO_NCCL=1 (cuda library whose
# collectives go through MPI on host memory), NVCC=, CUDA_HOME=,
# CUDA_ARCH= (nvcc -gencode flags), RT_NP= (ranks of the MPI tests).

RT_B := $(or $(B),build)/runtime
RT_CC ?= $(or $(CC),cc)
RT_WARN := -Wall -Wextra -Werror -Wshadow -Wmissing-prototypes -Wstrict-prototypes
RT_SAN := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
RT_NP ?= 4
RT_MPIRUN := mpirun --allow-run-as-root --oversubscribe

# ---- detection: MPI and OpenBLAS (required; tools/install-deps.sh probes and
# installs them and writes their flags to build/config.mk, which the top
# Makefile includes), nvcc and NCCL (optional) ----
RT_MPI_CFLAGS := $(MPI_CFLAGS)
RT_MPI_LIBS := $(MPI_LIBS)
CUDA_HOME ?= /usr/local/cuda
ifeq ($(NO_CUDA),1)
  NVCC :=
else
  NVCC ?= $(shell command -v nvcc 2>/dev/null || ls $(CUDA_HOME)/bin/nvcc 2>/dev/null)
endif
ifeq ($(NO_NCCL),1)
  RT_NCCL :=
else
  RT_NCCL := $(firstword $(wildcard $(CUDA_HOME)/include/nccl.h /usr/include/nccl.h /usr/local/include/nccl.h))
endif
CUDA_ARCH ?= -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=[sm_90,compute_90]
$(if $(MPI_LIBS),$(info runtime: MPI $(MPI_LIBS); OpenBLAS $(BLAS_LIBS); \
nvcc $(or $(NVCC),none$(if $(filter 1,$(NO_CUDA)), (NO_CUDA=1))); \
NCCL $(if $(NVCC),$(or $(RT_NCCL),none: collectives through MPI),-)))

# -fopenmp: the CPU kernels' loops run on the rank's share of the cores.
# -fno-trapping-math -fno-math-errno: no kernel reads the floating-point flags
# or errno, and without them GCC keeps a branch for every float compare and a
# call for every sqrtf, so those loops do not vectorize. Neither changes a
# value (no reassociation, no contraction: -std=c11 keeps -ffp-contract=off).
RT_CFLAGS := -std=c11 -D_POSIX_C_SOURCE=200809L $(RT_WARN) -fopenmp -fno-trapping-math -fno-math-errno -Iruntime -Iruntime/cpu $(RT_MPI_CFLAGS) $(BLAS_CFLAGS)
RT_LIBS := $(RT_MPI_LIBS) $(BLAS_LIBS) -ljansson -fopenmp -lm
RT_CUDA_CFLAGS := -isystem $(CUDA_HOME)/include $(if $(RT_NCCL),,-DSC_NO_NCCL)
RT_CUDA_LIBS := -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcublas -lcudart $(if $(RT_NCCL),-lnccl) -lstdc++

RT_HDRS := runtime/shardc_rt.h runtime/rt_internal.h runtime/cpu/cpu_kernels.h
RT_COMMON := util half rt comm npy safetensors init data checkpoint
RT_CPU_OBJS := $(RT_COMMON) kernels backend
RT_CUDA_OBJS := $(RT_COMMON) backend_cuda profile_cuda kernels_cu reduce_cu

.PHONY: runtime runtime-test runtime-cuda-test
runtime: $(RT_B)/libshardc_rt_cpu.a $(RT_B)/link.mk $(if $(NVCC),$(RT_B)/libshardc_rt_cuda.a)

# What a generated program links the cpu library with (its Makefile includes
# this): the BLAS install-deps chose, so programs and tests use the same one.
$(RT_B)/link.mk: $(or $(B),build)/config.mk runtime/runtime.mk
	@mkdir -p $(@D)
	printf '# Written by runtime/runtime.mk: the cpu library'"'"'s link flags.\nLIBS_cpu := %s\n' '$(BLAS_LIBS) -ljansson -fopenmp -lm' > $@

# ---- the cpu library: opt (programs) and san (tests) ----
define rt_variant
$(RT_B)/$(1)/%.o: runtime/common/%.c $(RT_HDRS)
	@mkdir -p $$(@D)
	$(RT_CC) $(RT_CFLAGS) $(2) -c -o $$@ $$<
$(RT_B)/$(1)/%.o: runtime/cpu/%.c $(RT_HDRS)
	@mkdir -p $$(@D)
	$(RT_CC) $(RT_CFLAGS) $(2) -c -o $$@ $$<
endef
$(eval $(call rt_variant,opt,-O2 -g))
$(eval $(call rt_variant,san,$(RT_SAN)))

$(RT_B)/libshardc_rt_cpu.a: $(RT_CPU_OBJS:%=$(RT_B)/opt/%.o)
	ar rcs $@ $^
$(RT_B)/san/libshardc_rt_cpu.a: $(RT_CPU_OBJS:%=$(RT_B)/san/%.o)
	ar rcs $@ $^

# ---- the cuda library ----
$(RT_B)/cuda/%.o: runtime/common/%.c $(RT_HDRS)
	@mkdir -p $(@D)
	$(RT_CC) $(RT_CFLAGS) -O2 -g -c -o $@ $<
$(RT_B)/cuda/profile_cuda.o: runtime/cuda/profile.c runtime/cuda/profile.h $(RT_HDRS)
	@mkdir -p $(@D)
	$(RT_CC) $(RT_CFLAGS) $(RT_CUDA_CFLAGS) -O2 -g -c -o $@ $<
$(RT_B)/cuda/backend_cuda.o: runtime/cuda/backend.c runtime/cuda/cuda_kernels.h runtime/cuda/profile.h $(RT_HDRS)
	@mkdir -p $(@D)
	$(RT_CC) $(RT_CFLAGS) $(RT_CUDA_CFLAGS) -O2 -g -c -o $@ $<
$(RT_B)/cuda/%_cu.o: runtime/cuda/%.cu runtime/cuda/kernels.cuh runtime/cuda/cuda_kernels.h runtime/cpu/cpu_kernels.h runtime/shardc_rt.h
	@mkdir -p $(@D)
	$(NVCC) -O2 -std=c++17 $(CUDA_ARCH) -Iruntime -Iruntime/cpu -Xcompiler -Wall,-Wextra,-Werror -c -o $@ $<
$(RT_B)/libshardc_rt_cuda.a: $(RT_CUDA_OBJS:%=$(RT_B)/cuda/%.o)
	ar rcs $@ $^

# ---- tests ----
RT_UNIT := test_rt_kernels test_rt_grads test_rt_io test_rt_half test_rt_safetensors test_rt_data
RT_SAN_LIB := $(RT_B)/san/libshardc_rt_cpu.a
RT_TEST_O := $(RT_B)/san/rt_test.o

$(RT_TEST_O): runtime/tests/rt_test.c runtime/tests/rt_test.h
	@mkdir -p $(@D)
	$(RT_CC) $(RT_CFLAGS) $(RT_SAN) -c -o $@ $<
$(RT_B)/san/test_rt_%: runtime/tests/test_rt_%.c $(RT_TEST_O) $(RT_SAN_LIB)
	$(RT_CC) $(RT_CFLAGS) -Iruntime/tests $(RT_SAN) -o $@ $< $(RT_TEST_O) $(RT_SAN_LIB) $(RT_LIBS) -lcriterion
$(RT_B)/san/mpi_%: runtime/tests/mpi_%.c $(RT_TEST_O) $(RT_SAN_LIB)
	$(RT_CC) $(RT_CFLAGS) -Iruntime/tests $(RT_SAN) -o $@ $< $(RT_TEST_O) $(RT_SAN_LIB) $(RT_LIBS)

# The worked example at the top of shardc_rt.h, cut out of the header so
# the two cannot drift apart.
$(RT_B)/san/example.c: runtime/shardc_rt.h
	@mkdir -p $(@D)
	sed -n '/^ \*     #include "shardc_rt.h"/,/^ \*     }$$/s/^ \*     //p' $< >$@
$(RT_B)/san/example: $(RT_B)/san/example.c $(RT_SAN_LIB)
	$(RT_CC) $(RT_CFLAGS) $(RT_SAN) -o $@ $< $(RT_SAN_LIB) $(RT_LIBS)

# The MPI tests run with ASAN_OPTIONS=detect_leaks=0: OpenMPI keeps (and
# LeakSanitizer reports) allocations of its own at exit; ours are checked by
# the Criterion tests, which run with leak detection on.
runtime-test: $(addprefix $(RT_B)/san/,$(RT_UNIT) mpi_collectives mpi_p2p mpi_io mpi_safetensors mpi_checkpoint example)
	@set -e; for t in $(RT_UNIT); do echo "== $$t"; ASAN_OPTIONS=detect_leaks=1 $(RT_B)/san/$$t --jobs 2; done
	@echo "== mpi_collectives (mpirun -np $(RT_NP))"
	@ASAN_OPTIONS=detect_leaks=0 $(RT_MPIRUN) -np $(RT_NP) $(RT_B)/san/mpi_collectives
	@echo "== mpi_p2p (mpirun -np $(RT_NP))"
	@ASAN_OPTIONS=detect_leaks=0 sh runtime/tests/run_mpi_p2p.sh "$(RT_MPIRUN)" $(RT_NP) $(RT_B)/san/mpi_p2p
	@echo "== mpi_io"
	@ASAN_OPTIONS=detect_leaks=0 sh runtime/tests/run_mpi_io.sh "$(RT_MPIRUN)" $(RT_B)/san/mpi_io $(RT_B)/mpi_io.tmp $(RT_B)/san/example
	@echo "== mpi_safetensors (mpirun -np 4)"
	@rm -rf $(RT_B)/mpi_st.tmp && mkdir -p $(RT_B)/mpi_st.tmp && \
		ASAN_OPTIONS=detect_leaks=0 $(RT_MPIRUN) -np 4 $(RT_B)/san/mpi_safetensors --output-dir $(RT_B)/mpi_st.tmp
	@echo "== mpi_checkpoint (mpirun -np 4)"
	@rm -rf $(RT_B)/mpi_ck.tmp && mkdir -p $(RT_B)/mpi_ck.tmp && \
		ASAN_OPTIONS=detect_leaks=0 $(RT_MPIRUN) -np 4 $(RT_B)/san/mpi_checkpoint --output-dir $(RT_B)/mpi_ck.tmp
	@echo "runtime-test: all passed"

# CUDA twins: the cuda library's kernels against the CPU ones, and the
# collective test again on the cuda library (NCCL, or MPI when ranks share
# a GPU). Both skip with a message where no GPU is present.
$(RT_B)/cuda/cuda_twins: runtime/tests/cuda_twins.c runtime/tests/rt_test.c runtime/tests/rt_test.h $(RT_B)/libshardc_rt_cuda.a $(RT_B)/opt/kernels.o
	$(RT_CC) $(RT_CFLAGS) $(RT_CUDA_CFLAGS) -Iruntime/tests -O1 -g -o $@ $< runtime/tests/rt_test.c $(RT_B)/opt/kernels.o \
		$(RT_B)/libshardc_rt_cuda.a $(RT_LIBS) $(RT_CUDA_LIBS)
$(RT_B)/cuda/cuda_gemm_bench: runtime/tests/cuda_gemm_bench.c $(RT_B)/libshardc_rt_cuda.a
	$(RT_CC) $(RT_CFLAGS) $(RT_CUDA_CFLAGS) -O2 -o $@ $< $(RT_B)/libshardc_rt_cuda.a $(RT_LIBS) $(RT_CUDA_LIBS)
$(RT_B)/cuda/mpi_%: runtime/tests/mpi_%.c runtime/tests/rt_test.c runtime/tests/rt_test.h $(RT_B)/libshardc_rt_cuda.a
	$(RT_CC) $(RT_CFLAGS) $(RT_CUDA_CFLAGS) -Iruntime/tests -DSC_TEST_CUDA -O1 -g -o $@ $< runtime/tests/rt_test.c \
		$(RT_B)/libshardc_rt_cuda.a $(RT_LIBS) $(RT_CUDA_LIBS)

ifeq ($(NVCC),)
runtime-cuda-test:
	@echo "runtime-cuda-test: skipped: no nvcc$(if $(filter 1,$(NO_CUDA)), (NO_CUDA=1))"
else
runtime-cuda-test: $(RT_B)/cuda/cuda_twins $(RT_B)/cuda/mpi_collectives $(RT_B)/cuda/mpi_p2p
	@echo "== cuda_twins"
	@$(RT_MPIRUN) -np 1 $(RT_B)/cuda/cuda_twins
	@if $(RT_B)/cuda/cuda_twins --has-gpu; then echo "== mpi_collectives on cuda (mpirun -np $(RT_NP))"; \
		$(RT_MPIRUN) -np $(RT_NP) $(RT_B)/cuda/mpi_collectives && \
		echo "== mpi_p2p on cuda (mpirun -np $(RT_NP))" && \
		sh runtime/tests/run_mpi_p2p.sh "$(RT_MPIRUN)" $(RT_NP) $(RT_B)/cuda/mpi_p2p; fi
endif
