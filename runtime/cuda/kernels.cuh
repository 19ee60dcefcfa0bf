/* kernels.cuh: what kernels.cu and reduce.cu share: the launch shapes, the
 * grid-stride loops and the warp reductions. Device code is compiled per
 * file (no relocatable device code), so these few helpers are inline here
 * rather than defined once; nothing else is. */
#ifndef KERNELS_CUH
#define KERNELS_CUH

#include <stdint.h>

namespace {

const int THREADS = 256;

inline int blocks_for(int64_t n)
{
	int64_t b = (n + THREADS - 1) / THREADS;
	return (int)(b < 1 ? 1 : b > 65535 ? 65535 : b);
}

inline int row_blocks(int64_t rows)   /* one warp per row, 8 rows a block */
{
	int64_t b = (rows + THREADS / 32 - 1) / (THREADS / 32);
	return (int)(b < 1 ? 1 : b > 65535 ? 65535 : b);
}

#define GRID_LOOP(i, n) \
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)
#define ROW_LOOP(r, rows)                                                                  \
	for (int64_t r = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32; r < (rows);    \
	     r += (int64_t)gridDim.x * blockDim.x / 32)

__device__ inline float warp_sum(float v)
{
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

/* The larger and the smaller of a and b, a NaN kept (the CPU's SC_MAX_NAN
 * and SC_MIN_NAN). Functions, not those macros: a macro evaluates b in one
 * branch only, and when b is a warp shuffle the lanes that skip it leave
 * the others reading garbage or waiting for ever (seen on an H200,
 * 2026-11-28: wrong softmax rows, then a hang). */
__device__ inline float max_nan(float a, float b)
{
	return SC_MAX_NAN(a, b);
}

__device__ inline float min_nan(float a, float b)
{
	return SC_MIN_NAN(a, b);
}

__device__ inline float warp_max(float v)
{
	for (int o = 16; o > 0; o >>= 1)
		v = max_nan(v, __shfl_xor_sync(0xffffffffu, v, o));
	return v;
}

__device__ inline float warp_min(float v)
{
	for (int o = 16; o > 0; o >>= 1)
		v = min_nan(v, __shfl_xor_sync(0xffffffffu, v, o));
	return v;
}

}   /* namespace */

#endif
