/* cuda_gemm_bench.c: the cuda library's matrix products, timed.
 *
 * sc_matmul (Float32, cublasSgemm) and sc_matmul_half (BFloat16 and
 * Float16 operands, Float32 sums: cublasGemmEx on tensor cores) on square
 * products and on the GEMMs of GPT layers (tokens x hidden times hidden x
 * 4 hidden, the MLP's first product, at the 1.3B and 13B widths). Each
 * figure is 2mnk flops over the mean of 10 products after 3 warm-ups; the
 * stream is drained (sc_to_host) before the clock stops. Prints one line a
 * case; where no GPU is present it says so and exits 0. Run under
 * mpirun -np 1, or alone (an MPI singleton). */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "rt_internal.h"

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void product(sc_rt *rt, sc_dtype dt, char *slab, int64_t m, int64_t n, int64_t k)
{
	size_t in = sc_dtype_size(dt);
	void *a = slab, *b = slab + m * k * in;
	float *c = (float *)(slab + (m * k + k * n) * in);
	if (dt == SC_F32)
		sc_matmul(rt, a, b, c, m, n, k, 0, 0);
	else
		sc_matmul_half(rt, dt, a, b, c, SC_F32, m, n, k, 0, 0);
}

int main(int argc, char **argv)
{
	int ndev = 0;
	cudaError_t e = cudaGetDeviceCount(&ndev);
	if (e != cudaSuccess || ndev == 0) {
		printf("cuda_gemm_bench: no CUDA device (%s); skipped\n",
		       e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
		return 0;
	}
	static const struct {
		const char *what;
		int64_t m, n, k;
	} cases[] = {
		{"square 4096", 4096, 4096, 4096},
		{"square 8192", 8192, 8192, 8192},
		{"GPT 1.3B MLP (8192 tokens)", 8192, 8192, 2048},
		{"GPT 13B MLP (8192 tokens)", 8192, 20480, 5120},
	};
	static const sc_dtype types[] = {SC_F32, SC_BF16, SC_F16};
	sc_rt *rt = sc_init(&argc, &argv, 1);
	size_t most = 0;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		size_t bytes = (size_t)(cases[i].m * cases[i].k + cases[i].k * cases[i].n + cases[i].m * cases[i].n) * 4;
		most = bytes > most ? bytes : most;
	}
	char *slab = sc_slab(rt, most);   /* zeroed: the flops do not depend on the values */
	float probe;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
			int64_t m = cases[i].m, n = cases[i].n, k = cases[i].k;
			for (int r = 0; r < 3; r++)
				product(rt, types[t], slab, m, n, k);
			sc_to_host(rt, &probe, slab, sizeof probe);
			double t0 = now();
			for (int r = 0; r < 10; r++)
				product(rt, types[t], slab, m, n, k);
			sc_to_host(rt, &probe, slab, sizeof probe);
			double s = (now() - t0) / 10;
			printf("gemm %-28s %-8s m %6lld n %6lld k %6lld  %8.3f ms  %7.1f TFLOP/s\n", cases[i].what,
			       sc_dtype_name(types[t]), (long long)m, (long long)n, (long long)k, s * 1e3,
			       2.0 * (double)m * (double)n * (double)k / s / 1e12);
		}
	sc_finalize(rt);
	return 0;
}
