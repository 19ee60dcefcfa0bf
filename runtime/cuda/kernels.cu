/* kernels.cu: the CUDA kernels and their extern "C" launchers; nothing else
 * (those that sum across rows, reductions and the normalizers, are in
 * reduce.cu).
 *
 * Elementwise kernels use grid-stride loops over int64 indices. Row kernels
 * (softmax, cross entropy) give each row one warp and reduce with shuffles;
 * a softmax row along the last axis of at most 1024 is read once, into
 * registers. gather's scatter-add and the losses use atomicAdd, so their
 * last bits vary from run to run; every other sum goes in a fixed order.
 * Every kernel has its twin in cpu/kernels.c; cuda_twins.c compares them. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <float.h>
#include <stdint.h>
#include <string.h>
#include <type_traits>

#include "cuda_kernels.h"
#include "kernels.cuh"

namespace {

/* The sum of s over the block's threads, in thread 0 (the others get a
 * partial sum); every thread of the block must call it. */
__device__ float block_sum(float s)
{
	__shared__ float part[THREADS / 32];
	s = warp_sum(s);
	if (threadIdx.x % 32 == 0)
		part[threadIdx.x / 32] = s;
	__syncthreads();
	if (threadIdx.x < 32) {
		s = threadIdx.x < THREADS / 32 ? part[threadIdx.x] : 0;
		s = warp_sum(s);
	}
	return s;
}

__device__ int64_t walk_off(int64_t i, const sc_cu_walk &w, int64_t *off1)
{
	int64_t o0 = 0, o1 = 0;
	for (int d = w.ndim - 1; d >= 0; d--) {
		int64_t k = i % w.dims[d];
		i /= w.dims[d];
		o0 += k * w.s0[d];
		o1 += k * w.s1[d];
	}
	if (off1)
		*off1 = o1;
	return o0;
}

__device__ int64_t load_index(const void *idx, int is64, int64_t i)
{
	return is64 ? ((const int64_t *)idx)[i] : ((const int32_t *)idx)[i];
}

/* ---- memory and collectives' helpers ---- */

template <typename T>
__global__ void fill_k(T *d, int64_t n, T v)
{
	GRID_LOOP(i, n) d[i] = v;
}

/* the twin: sc_cpu_fill_pad; x == y writes each element its own value */
template <typename T>
__global__ void fill_pad_k(const T *x, T *y, int64_t n, int64_t mid, int64_t inner, int64_t real, T v)
{
	GRID_LOOP(i, n) y[i] = i / inner % mid >= real ? v : x[i];
}

/* the twin: sc_cpu_triangle; T an unsigned integer of the element's size (a zero is all bits 0) */
template <typename T>
__global__ void triangle_k(const T *x, T *y, int64_t n, int upper, int64_t rows, int64_t cols, int64_t shift)
{
	GRID_LOOP(i, n) {
		int64_t d = i % cols - i / cols % rows - shift;   /* column less row in the whole, less the diagonal */
		y[i] = (upper ? d >= 0 : d <= 0) ? x[i] : (T)0;
	}
}

template <typename T>
__global__ void swap01_k(const T *src, T *dst, int64_t A, int64_t B, int64_t C)
{
	GRID_LOOP(i, A * B * C) {
		int64_t c = i % C, ab = i / C, b = ab % B, a = ab / B;
		dst[(b * A + a) * C + c] = src[i];
	}
}

template <typename T>
__global__ void divide_k(T *d, int64_t n, int div)
{
	GRID_LOOP(i, n) d[i] /= (T)div;
}

/* the twins: kernels.c's sc_digamma and sc_zeta, in double */
__device__ static double sc_digamma(double x)
{
	double r = 0;
	if (x <= 0) {
		if (x == floor(x))
			return nan("");
		r = -3.14159265358979323846 / tan(3.14159265358979323846 * x);
		x = 1 - x;
	}
	for (; x < 6; x += 1)
		r -= 1 / x;
	double f = 1 / (x * x);
	return r + log(x) - 0.5 / x -
	       f * (1.0 / 12 - f * (1.0 / 120 - f * (1.0 / 252 - f * (1.0 / 240 - f * (1.0 / 132)))));
}

__device__ static double sc_zeta(double x, double q)
{
	const double den[12] = {12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9,
	                        7.47242496e10, -2.950130727918164224e12, 1.1646782814350067249e14,
	                        -4.5979787224074726105e15, 1.8152105401943546773e17, -7.1661652561756670113e18};
	if (x == 1)
		return HUGE_VAL;
	if (!(x > 1) || q != q)
		return nan("");
	if (q <= 0) {
		if (q == floor(q))
			return HUGE_VAL;
		if (x != floor(x))
			return nan("");
	}
	double s = pow(q, -x), a = q, b = 0;
	for (int i = 0; i < 9 || a <= 9;) {
		i++;
		a += 1;
		b = pow(a, -x);
		s += b;
		if (fabs(b / s) < 1e-17)
			return s;
	}
	double w = a, fac = 1, k = 0;
	s += b * w / (x - 1) - 0.5 * b;
	for (int j = 0; j < 12; j++) {
		fac *= x + k;
		b /= w;
		double t = fac * b / den[j];
		s += t;
		if (fabs(t / s) < 1e-17)
			break;
		k += 1;
		fac *= x + k;
		b /= w;
		k += 1;
	}
	return s;
}

/* the twin: kernels.c's int_op */
__device__ static int64_t int_op(sc_intop op, int64_t a, int64_t b, int bits)
{
	uint64_t mask = bits == 64 ? ~(uint64_t)0 : ((uint64_t)1 << bits) - 1;
	switch (op) {
	case SC_INT_INVERT: return ~a;
	case SC_INT_POPCOUNT: return __popcll((unsigned long long)((uint64_t)a & mask));
	case SC_INT_LEFT_SHIFT: case SC_INT_RIGHT_SHIFT: {
		if (b > bits || b < -bits)
			b %= bits;
		if (b < 0 || b >= bits)
			return op == SC_INT_LEFT_SHIFT ? 0 : a < 0 ? -1 : 0;
		if (op == SC_INT_RIGHT_SHIFT)
			return a >> b;
		uint64_t u = ((uint64_t)a << b) & mask;
		return bits == 64 ? (int64_t)u : (int64_t)(int32_t)(uint32_t)u;
	}
	}
	return 0;
}

__global__ void int_math_k(sc_intop op, int bits, const void *a, const void *b, void *y, int64_t n, sc_cu_walk w)
{
	GRID_LOOP(i, n) {
		int64_t ib, ia = walk_off(i, w, &ib);
		if (bits == 64)
			((int64_t *)y)[i] = int_op(op, ((const int64_t *)a)[ia], ((const int64_t *)b)[ib], 64);
		else
			((int32_t *)y)[i] = (int32_t)int_op(op, ((const int32_t *)a)[ia], ((const int32_t *)b)[ib], 32);
	}
}

/* the twin: sc_cpu_reverse */
__global__ void reverse_k(const float *x, float *y, int64_t n, sc_cu_walk d, unsigned rev)
{
	GRID_LOOP(i, n) {
		int64_t r = i, src = 0, stride = 1;
		for (int k = d.ndim - 1; k >= 0; k--) {
			int64_t j = r % d.dims[k];
			r /= d.dims[k];
			src += ((rev >> k) & 1 ? d.dims[k] - 1 - j : j) * stride;
			stride *= d.dims[k];
		}
		y[i] = x[src];
	}
}

/* the twin: sc_diag_base */
__device__ static int64_t diag_base(const sc_diag &g, int64_t j)
{
	int64_t off = g.start;
	for (int d = g.nother - 1; d >= 0; d--) {
		off += j % g.odims[d] * g.ostr[d];
		j /= g.odims[d];
	}
	return off;
}

/* the twins: sc_cpu_trace (a sum in double, in order) and sc_cpu_trace_grad (dx zeroed first) */
__global__ void trace_k(const float *x, float *y, sc_diag g)
{
	GRID_LOOP(j, g.n) {
		int64_t base = diag_base(g, j);
		double s = 0;
		for (int64_t i = 0; i < g.len; i++)
			s += x[base + i * g.step];
		y[j] = (float)s;
	}
}

__global__ void trace_grad_k(const float *dy, float *dx, sc_diag g)
{
	GRID_LOOP(j, g.n) {
		int64_t base = diag_base(g, j);
		for (int64_t i = 0; i < g.len; i++)
			dx[base + i * g.step] = dy[j];
	}
}

/* ---- elementwise ---- */

__device__ float binop(sc_binop op, float a, float b)
{
	switch (op) {
	case SC_ADD: return a + b;
	case SC_SUB: return a - b;
	case SC_MUL: return a * b;
	case SC_DIV: return a / b;
	case SC_MAXIMUM: return max_nan(a, b);
	case SC_MINIMUM: return min_nan(a, b);
	case SC_POW: return powf(a, b);
	case SC_FLOOR_DIV: return floorf(a / b);
	case SC_FLOOR_MOD: {   /* the CPU's: the sign of b */
		float r = fmodf(a, b);
		return r != 0 && (r < 0) != (b < 0) ? r + b : r;
	}
	case SC_MOD: return fmodf(a, b);
	case SC_SQUARED_DIFF: return (a - b) * (a - b);
	case SC_DIV_NO_NAN: return b == 0 ? 0 : a / b;
	case SC_ATAN2: return atan2f(a, b);
	case SC_SIGMOID_CE: return fmaxf(a, 0.0f) - a * b + log1pf(expf(-fabsf(a)));
	case SC_XLOGY: return a == 0 ? 0 : a * logf(b);
	case SC_XDIVY: return a == 0 ? 0 : a / b;
	case SC_MUL_NO_NAN: return b == 0 ? 0 : a * b;
	case SC_TRUNCATE_DIV: return truncf(a / b);
	case SC_TRUNCATE_MOD: return fmodf(a, b);
	case SC_HYPOT: return hypotf(a, b);
	case SC_NEXT_AFTER: return nextafterf(a, b);
	case SC_ZETA: return (float)sc_zeta(a, b);
	}
	return 0;
}

__global__ void binary_k(sc_binop op, const float *a, const float *b, float *y, int64_t n, sc_cu_walk w)
{
	GRID_LOOP(i, n) {
		int64_t ob, oa = walk_off(i, w, &ob);
		y[i] = binop(op, a[oa], b[ob]);
	}
}

/* the twin: sc_cpu_compare; a row of SC_COMPARE_TABLE, 1 where true */
__device__ uint8_t compare(sc_cmpop op, float p, float a, float b)
{
	switch (op) {
#define COMPARE_CASE(name, test) \
	case SC_CMP_##name: return (test);
	SC_COMPARE_TABLE(COMPARE_CASE)
#undef COMPARE_CASE
	case SC_CMP_COUNT: break;
	}
	return 0;
}

__global__ void compare_k(sc_cmpop op, float p, const float *a, const float *b, uint8_t *y, int64_t n, sc_cu_walk w)
{
	GRID_LOOP(i, n) {
		int64_t ob, oa = walk_off(i, w, &ob);
		y[i] = compare(op, p, a[oa], b[ob]);
	}
}

/* the twin: sc_cpu_logical; SC_L_NOT's b is a again */
__global__ void logical_k(sc_logop op, const uint8_t *a, const uint8_t *b, uint8_t *y, int64_t n, sc_cu_walk w)
{
	GRID_LOOP(i, n) {
		int64_t ob, oa = walk_off(i, w, &ob);
		y[i] = SC_LOGICAL(op, a[oa], b[ob]);
	}
}

/* the twin: sc_cpu_is_finite */
__global__ void is_finite_k(const float *x, uint8_t *y, int64_t n)
{
	GRID_LOOP(i, n) y[i] = isfinite(x[i]);
}

__global__ void binary_grad_k(sc_binop op, const float *a, const float *b, const float *dy, float *ga, float *gb,
                              int64_t n, sc_cu_walk w)
{
	GRID_LOOP(i, n) {
		int64_t ib, ia = walk_off(i, w, &ib);
		float g = dy[i], da = 0, db = 0;
		switch (op) {
		case SC_ADD: da = g; db = g; break;
		case SC_SUB: da = g; db = -g; break;
		case SC_MUL: da = g * b[ib]; db = g * a[ia]; break;
		case SC_DIV: da = g / b[ib]; db = -g * a[ia] / (b[ib] * b[ib]); break;
		case SC_POW:   /* the CPU's term_a and term_b */
			da = g * b[ib] * powf(a[ia], b[ib] - 1);
			db = a[ia] > 0 ? g * powf(a[ia], b[ib]) * logf(a[ia]) : 0;
			break;
		case SC_FLOOR_DIV: break;
		case SC_FLOOR_MOD: da = g; db = -g * floorf(a[ia] / b[ib]); break;
		case SC_MOD: da = g; db = -g * truncf(a[ia] / b[ib]); break;
		case SC_SQUARED_DIFF: da = 2 * g * (a[ia] - b[ib]); db = -da; break;
		case SC_DIV_NO_NAN:   /* the CPU's: 0 where b == 0 */
			da = b[ib] == 0 ? 0 : g / b[ib];
			db = b[ib] == 0 ? 0 : -g * (a[ia] / b[ib]) / b[ib];
			break;
		case SC_ATAN2: {
			float r = a[ia] * a[ia] + b[ib] * b[ib];
			da = g * b[ib] / r;
			db = -g * a[ia] / r;
			break;
		}
		case SC_SIGMOID_CE:   /* the CPU's term_a and term_b */
			da = g * (1 / (1 + expf(-a[ia])) - b[ib]);
			db = -g * a[ia];
			break;
		case SC_XLOGY:   /* the CPU's: Xlogy(dy, b), 0 where a == 0 and b <= 0; dy a / b */
			da = g == 0 || (a[ia] == 0 && b[ib] <= 0) ? 0 : g * logf(b[ib]);
			db = g * a[ia] / b[ib];
			break;
		case SC_XDIVY:   /* 0 where a == 0 */
			da = g * (a[ia] == 0 ? 0 : 1 / b[ib]);
			db = g * (a[ia] == 0 ? 0 : -a[ia] / (b[ib] * b[ib]));
			break;
		case SC_MUL_NO_NAN:   /* MulNoNan(dy, b), MulNoNan(a, dy) */
			da = b[ib] == 0 ? 0 : g * b[ib];
			db = g == 0 ? 0 : a[ia] * g;
			break;
		case SC_TRUNCATE_DIV: break;
		case SC_TRUNCATE_MOD: da = g; db = -g * truncf(a[ia] / b[ib]); break;
		case SC_HYPOT: {
			float r = hypotf(a[ia], b[ib]);
			da = g * (a[ia] / r);
			db = g * (b[ib] / r);
			break;
		}
		case SC_NEXT_AFTER: da = g; break;   /* MindSpore's bprop: dy and 0 */
		case SC_ZETA: db = (float)(g * -a[ia] * sc_zeta(a[ia] + 1, b[ib])); break;   /* 0 and -a zeta(a + 1, b) dy */
		case SC_MAXIMUM: case SC_MINIMUM:   /* a tie splits the gradient evenly */
			if (a[ia] == b[ib])
				da = db = g / 2;
			else
				((a[ia] > b[ib]) == (op == SC_MAXIMUM) ? da : db) = g;
			break;
		}
		if (ga)
			ga[i] = da;
		if (gb)
			gb[i] = db;
	}
}

__global__ void bias_add_k(const float *x, const float *bias, float *y, int64_t n, int64_t c)
{
	GRID_LOOP(i, n) y[i] = x[i] + bias[i % c];
}

/* PReLU on x (n / (c inner), c, inner): element i's channel (i / inner) % c,
 * or 0 when one weight serves all (wn == 1). */
__device__ static __forceinline__ float prelu_w(const float *w, int64_t i, int64_t c, int64_t inner, int64_t wn)
{
	return w[wn == 1 ? 0 : i / inner % c];
}

__global__ void prelu_k(const float *x, const float *w, float *y, int64_t n, int64_t c, int64_t inner, int64_t wn)
{
	GRID_LOOP(i, n) {
		float v = x[i];
		y[i] = v < 0 ? __fmul_rn(prelu_w(w, i, c, inner, wn), v) : v;
	}
}

/* dx (unless NULL) = x <= 0 ? w dy : dy; prod (unless NULL) = x < 0 ? x dy : 0,
 * which a reduction sums into dw */
__global__ void prelu_grad_k(const float *x, const float *w, const float *dy, float *dx, float *prod, int64_t n,
                             int64_t c, int64_t inner, int64_t wn)
{
	GRID_LOOP(i, n) {
		float v = x[i], g = dy[i];
		if (dx)
			dx[i] = v <= 0 ? __fmul_rn(prelu_w(w, i, c, inner, wn), g) : g;
		if (prod)
			prod[i] = v < 0 ? __fmul_rn(v, g) : 0.0f;
	}
}

/* GeLU's tanh (SC_UNARY_TABLE): the CPU's is written out to vectorize; here
 * tanhf is already a few instructions. */
__device__ static float sc_gelu_tanh(float u)
{
	return tanhf(u);
}

/* GeLU's derivative at t (SC_UNARY_TABLE): tanh once. */
__device__ static float sc_gelu_slope(float t)
{
	float th = sc_gelu_tanh(SC_GELU_U(t));
	return 0.5f * (1 + th) + 0.5f * t * (1 - th * th) * SC_GELU_DU(t);
}

/* erf's inverse (SC_UNARY_TABLE's Erfinv): CUDA's; the CPU twin computes its own. */
__device__ static float sc_erfinv(float x)
{
	return erfinvf(x);
}

/* SiLU's derivative at t (SC_UNARY_TABLE): sigmoid once. */
__device__ static float sc_silu_slope(float t)
{
	float s = 1 / (1 + expf(-t));
	return s * (1 + t * (1 - s));
}

/* Mish's derivative at t (SC_UNARY_TABLE): tanh and sigmoid once. */
__device__ static float sc_mish_slope(float t)
{
	float th = tanhf(SC_SOFTPLUS(t));
	return th + t * (1 - th * th) / (1 + expf(-t));
}

/* op(x), SC_UNARY_TABLE's forward column: unary_k and bias_unary_k (p the
 * row's parameter, LeakyReLU's alpha). */
__device__ static __forceinline__ float unary_fwd(sc_unop op, float x, float p)
{
	switch (op) {
#define CASE(name, t, fwd, grad) \
	case SC_U_##name: return (fwd);
		SC_UNARY_TABLE(CASE)
#undef CASE
	case SC_U_COUNT: break;
	}
	return 0;
}

__global__ void unary_k(sc_unop op, float p, const float *xs, float *y, int64_t n)
{
	GRID_LOOP(i, n) y[i] = unary_fwd(op, xs[i], p);
}

/* pre = x + bias (kept unless NULL), y = op(pre): compiler/fuse.c */
__global__ void bias_unary_k(sc_unop op, float p, const float *xs, const float *bias, float *pre, float *y, int64_t n,
                             int64_t c)
{
	GRID_LOOP(i, n) {
		float x = __fadd_rn(xs[i], bias[i % c]);
		if (pre)
			pre[i] = x;
		y[i] = unary_fwd(op, x, p);
	}
}

/* pre = x + bias (kept unless NULL), y = r + pre: compiler/fuse.c */
__global__ void bias_add_residual_k(const float *xs, const float *bias, float *pre, const float *r, float *y,
                                    int64_t n, int64_t c)
{
	GRID_LOOP(i, n) {
		float x = __fadd_rn(xs[i], bias[i % c]);
		if (pre)
			pre[i] = x;
		y[i] = __fadd_rn(r[i], x);
	}
}

__device__ static __forceinline__ float unary_bwd(sc_unop op, float t, float g, float p)
{
	switch (op) {
#define CASE(name, t_, fwd, grad) \
	case SC_U_##name: return (grad);
		SC_UNARY_TABLE(CASE)
#undef CASE
	case SC_U_COUNT: break;
	}
	return 0;
}

__global__ void unary_grad_k(sc_unop op, float p, const float *ts, const float *dy, float *dx, int64_t n)
{
	GRID_LOOP(i, n) dx[i] = unary_bwd(op, ts ? ts[i] : 0.0f, dy[i], p);
}

__global__ void scale_k(const float *x, float *y, int64_t n, float a)
{
	GRID_LOOP(i, n) y[i] = a * x[i];
}

/* ---- softmax: one warp per (outer, inner) row ---- */

/* x is read as x * scale[0] (scale NULL: 1), a fused Mul, plus the mask
 * (NULL: none; rows along the last axis only, inner 1), a fused Add
 * (compiler/fuse.c): the mask's row at walk_off(r, mw), mlast apart. */
__device__ float softmax_in(const float *xr, float s, const float *mr, int64_t mlast, int64_t k, int64_t inner)
{
	float v = __fmul_rn(xr[k * inner], s);   /* rounded, never contracted into what follows */
	return mr ? __fadd_rn(v, mr[k * mlast]) : v;
}

__global__ void softmax_k(const float *x, const float *scale, const float *mask, sc_cu_walk mw, int64_t mlast,
                          float *y, int64_t outer, int64_t len, int64_t inner, int is_log)
{
	int lane = threadIdx.x % 32;
	float s = scale ? scale[0] : 1.0f;
	ROW_LOOP(r, outer * inner) {
		const float *xr = x + (r / inner) * len * inner + r % inner;
		const float *mr = mask ? mask + walk_off(r, mw, nullptr) : nullptr;
		float *yr = y + (r / inner) * len * inner + r % inner;
		float mx = -INFINITY, sum = 0;
		for (int64_t k = lane; k < len; k += 32)
			mx = fmaxf(mx, softmax_in(xr, s, mr, mlast, k, inner));
		mx = warp_max(mx);
		for (int64_t k = lane; k < len; k += 32)
			sum += expf(softmax_in(xr, s, mr, mlast, k, inner) - mx);
		sum = warp_sum(sum);
		float lse = logf(sum);
		for (int64_t k = lane; k < len; k += 32) {
			float v = softmax_in(xr, s, mr, mlast, k, inner);
			yr[k * inner] = is_log ? v - mx - lse : expf(v - mx) / sum;
		}
	}
}

__global__ void softmax_grad_k(const float *y, const float *dy, float *dx, int64_t outer, int64_t len, int64_t inner,
                               int is_log)
{
	int lane = threadIdx.x % 32;
	ROW_LOOP(r, outer * inner) {
		int64_t base = (r / inner) * len * inner + r % inner;
		float s = 0;
		for (int64_t k = lane; k < len; k += 32)
			s += is_log ? dy[base + k * inner] : dy[base + k * inner] * y[base + k * inner];
		s = warp_sum(s);
		for (int64_t k = lane; k < len; k += 32) {
			int64_t j = base + k * inner;
			dx[j] = is_log ? dy[j] - expf(y[j]) * s : y[j] * (dy[j] - s);
		}
	}
}

/* softmax_k and softmax_grad_k for rows along the last axis (inner 1) of
 * at most 32 K: each lane keeps its K elements in registers, so x (y and dy)
 * is read once; the same operations in the same order as the kernels above. */
template <int K>   /* two blocks an SM: left alone, ptxas takes 202 registers for K 32 */
__global__ void __launch_bounds__(THREADS, 2)
	softmax_row_k(const float *x, const float *scale, const float *mask, sc_cu_walk mw, int64_t mlast, float *y,
	              int64_t rows, int64_t len, int is_log)
{
	int lane = threadIdx.x % 32;
	float s = scale ? scale[0] : 1.0f;
	ROW_LOOP(r, rows) {
		const float *mr = mask ? mask + walk_off(r, mw, nullptr) : nullptr;
		float v[K], mx = -INFINITY, sum = 0;
#pragma unroll
		for (int q = 0; q < K; q++) {
			v[q] = lane + 32 * q < len ? softmax_in(x + r * len, s, mr, mlast, lane + 32 * q, 1) : -INFINITY;
			mx = fmaxf(mx, v[q]);
		}
		mx = warp_max(mx);
#pragma unroll
		for (int q = 0; q < K; q++)
			if (lane + 32 * q < len)
				sum += expf(v[q] - mx);
		sum = warp_sum(sum);
		float lse = logf(sum);
#pragma unroll
		for (int q = 0; q < K; q++)
			if (lane + 32 * q < len)
				y[r * len + lane + 32 * q] = is_log ? v[q] - mx - lse : expf(v[q] - mx) / sum;
	}
}

template <int K>
__global__ void softmax_grad_row_k(const float *y, const float *dy, float *dx, int64_t rows, int64_t len, int is_log)
{
	int lane = threadIdx.x % 32;
	ROW_LOOP(r, rows) {
		float yv[K], dv[K], s = 0;
#pragma unroll
		for (int q = 0; q < K; q++) {
			int64_t j = r * len + lane + 32 * q;
			yv[q] = lane + 32 * q < len ? y[j] : 0.0f;
			dv[q] = lane + 32 * q < len ? dy[j] : 0.0f;
			if (lane + 32 * q < len)
				s += is_log ? dv[q] : dv[q] * yv[q];
		}
		s = warp_sum(s);
#pragma unroll
		for (int q = 0; q < K; q++)
			if (lane + 32 * q < len)
				dx[r * len + lane + 32 * q] = is_log ? dv[q] - expf(yv[q]) * s : yv[q] * (dv[q] - s);
	}
}

/* ---- elementwise, by index: ReduceMax's gradient, Select, rotary ---- */

__global__ void where_equal_k(const float *x, const float *y, const float *dy, float *dx, int64_t n)
{
	GRID_LOOP(i, n) dx[i] = x[i] == y[i] ? dy[i] : 0.0f;
}

/* a or b NULL: zeros (Select's gradients) */
__global__ void select_k(const uint8_t *cond, const float *a, const float *b, float *y, int64_t n)
{
	GRID_LOOP(i, n) y[i] = cond[i] ? (a ? a[i] : 0.0f) : (b ? b[i] : 0.0f);
}

/* RotaryPositionEmbedding (the twin: sc_cpu_rotary); cos or sin NULL: zeros */
__global__ void rotary_k(int64_t mode, int transpose, const float *x, const float *cos, const float *sin, float *y,
                         int64_t total, sc_cu_walk w)
{
	const int64_t *n = w.dims;
	GRID_LOOP(i, total) {
		int64_t off = SC_ROTARY_OFFSET(mode, i % n[3], n[3]), at = SC_ROTARY_AT(i, n, w.s1);
		float c = cos ? cos[SC_ROTARY_AT(i, n, w.s0)] : 0.0f, r = off > 0 ? -x[i + off] : x[i + off];
		float sv = !sin ? 0.0f : transpose ? -sin[at + off] : sin[at];
		y[i] = __fadd_rn(__fmul_rn(x[i], c), __fmul_rn(r, sv));
	}
}

/* ---- FlashAttentionScore (the twin: sc_cpu_flash_attention, _grad) ----
 * A thread per query row (per key row for dk and dv), a block of FA_T of
 * them per (b, n, rows block); the other side's rows go through shared
 * memory FA_K at a time. The online softmax is per key (the running maximum
 * and sum rescaled when the maximum grows): straightforward, not tuned. */

#define FA_T 64   /* threads (rows) a block */
#define FA_K 32   /* the other side's rows a shared tile holds: 2 FA_K D floats, 32 KiB at D = 128 */

struct FaMask {
	const void *mask;
	int mask_float;
	int64_t ms[3];
};

/* The operands' strides over batch, head and row (sc_fa_strides): q's (o,
 * dout, dq alike) and k's (v, dk, dv alike), with their head counts. */
struct FaStr {
	int64_t qs[3], ks[3], nh, nkv;
};

__device__ int64_t fa_qoff(const FaStr &st, int64_t bh, int64_t i)
{
	return bh / st.nh * st.qs[0] + bh % st.nh * st.qs[1] + i * st.qs[2];
}

__device__ int64_t fa_koff(const FaStr &st, int64_t kh, int64_t j)
{
	return kh / st.nkv * st.ks[0] + kh % st.nkv * st.ks[1] + j * st.ks[2];
}

__device__ bool fa_hidden(const FaMask &m, int64_t b, int64_t h, int64_t i, int64_t j, int causal)
{
	return SC_FA_HIDDEN(m.mask, m.mask_float, m.ms, b, h, i, j, causal);
}

/* rows [r0, r0 + FA_K) of x (rows of d floats, ld apart) into sh, zeros past n */
__device__ void fa_load(float *sh, const float *x, int64_t r0, int64_t n, int64_t d, int64_t ld)
{
	for (int64_t e = threadIdx.x; e < FA_K * d; e += blockDim.x)
		sh[e] = r0 + e / d < n ? x[(r0 + e / d) * ld + e % d] : 0.0f;
}

__device__ float fa_dot(const float *a, const float *b, int64_t d)
{
	float s = 0.0f;
	for (int64_t e = 0; e < d; e++)
		s += a[e] * b[e];
	return s;
}

/* o (when not NULL) and lse (when not NULL) of query row i of head bh;
 * key head kh = (b, h / g) (g query heads a key head: grouped-query attention) */
__global__ void flash_fwd_k(const float *q, const float *k, const float *v, FaMask mk, FaStr st, float *o, float *lse,
                            int64_t g, int64_t S, int64_t T, int64_t D, float scale, int causal)
{
	extern __shared__ float sh[];   /* k's and v's tile rows: (FA_K, D) each */
	float *ks = sh, *vs = sh + FA_K * D;
	int64_t nh = st.nh, bh = blockIdx.x, i = (int64_t)blockIdx.y * FA_T + threadIdx.x, b = bh / nh, h = bh % nh;
	int64_t kh = b * (nh / g) + h / g;
	bool live = i < S;
	const float *qi = q + fa_qoff(st, bh, live ? i : 0);
	float *oi = o && live ? o + fa_qoff(st, bh, i) : NULL;
	float m = -INFINITY, l = 0.0f;
	for (int64_t e = 0; oi && e < D; e++)
		oi[e] = 0.0f;
	for (int64_t j0 = 0; j0 < T; j0 += FA_K) {
		__syncthreads();
		fa_load(ks, k + fa_koff(st, kh, 0), j0, T, D, st.ks[2]);
		fa_load(vs, v + fa_koff(st, kh, 0), j0, T, D, st.ks[2]);
		__syncthreads();
		for (int64_t c = 0; live && c < FA_K && j0 + c < T; c++) {
			if (fa_hidden(mk, b, h, i, j0 + c, causal))
				continue;
			float s = scale * fa_dot(qi, ks + c * D, D);
			if (s > m) {
				float alpha = expf(m - s);
				l *= alpha;
				for (int64_t e = 0; oi && e < D; e++)
					oi[e] *= alpha;
				m = s;
			}
			float p = expf(s - m);
			l += p;
			for (int64_t e = 0; oi && e < D; e++)
				oi[e] += p * vs[c * D + e];
		}
	}
	if (!live)
		return;
	for (int64_t e = 0; oi && e < D; e++)
		oi[e] = l > 0 ? oi[e] / l : 0.0f;
	if (lse)
		lse[bh * S + i] = l > 0 ? m + logf(l) : INFINITY;
}

/* dd[bh S + i] = o . dout of query row i of head bh */
__global__ void flash_rowdot_k(const float *o, const float *dout, FaStr st, float *dd, int64_t rows, int64_t S,
                               int64_t D)
{
	GRID_LOOP(r, rows) dd[r] = fa_dot(o + fa_qoff(st, r / S, r % S), dout + fa_qoff(st, r / S, r % S), D);
}

/* dq of query row i: scale sum_j P (dP - D_i) k_j */
__global__ void flash_dq_k(const float *q, const float *k, const float *v, FaMask mk, FaStr st, const float *dout,
                           const float *lse, const float *dd, float *dq, int64_t g, int64_t S, int64_t T, int64_t D,
                           float scale, int causal)
{
	extern __shared__ float sh[];
	float *ks = sh, *vs = sh + FA_K * D;
	int64_t nh = st.nh, bh = blockIdx.x, i = (int64_t)blockIdx.y * FA_T + threadIdx.x, b = bh / nh, h = bh % nh;
	int64_t kh = b * (nh / g) + h / g;
	bool live = i < S;
	int64_t r = bh * S + (live ? i : 0), at = fa_qoff(st, bh, live ? i : 0);
	const float *qi = q + at, *gi = dout + at;
	float *dqi = dq + at;
	for (int64_t e = 0; live && e < D; e++)
		dqi[e] = 0.0f;
	for (int64_t j0 = 0; j0 < T; j0 += FA_K) {
		__syncthreads();
		fa_load(ks, k + fa_koff(st, kh, 0), j0, T, D, st.ks[2]);
		fa_load(vs, v + fa_koff(st, kh, 0), j0, T, D, st.ks[2]);
		__syncthreads();
		for (int64_t c = 0; live && c < FA_K && j0 + c < T; c++) {
			if (fa_hidden(mk, b, h, i, j0 + c, causal))
				continue;
			float p = expf(scale * fa_dot(qi, ks + c * D, D) - lse[r]);
			float ds = p * (fa_dot(gi, vs + c * D, D) - dd[r]);
			for (int64_t e = 0; e < D; e++)
				dqi[e] += scale * ds * ks[c * D + e];
		}
	}
}

/* dk and dv (either NULL) of key row j of key head kh = (b, kh % nkv):
 * sum_i scale dS q_i and sum_i P dO_i over the rows of the g query heads it
 * serves, in head order */
__global__ void flash_dkv_k(const float *q, const float *k, const float *v, FaMask mk, FaStr st, const float *dout,
                            const float *lse, const float *dd, float *dk, float *dv, int64_t g, int64_t S, int64_t T,
                            int64_t D, float scale, int causal)
{
	extern __shared__ float sh[];
	float *qs = sh, *gs = sh + FA_K * D, *ls = sh + 2 * FA_K * D, *ds_ = ls + FA_K;
	int64_t nh = st.nh, nkv = st.nkv, kh = blockIdx.x, j = (int64_t)blockIdx.y * FA_T + threadIdx.x, b = kh / nkv;
	bool live = j < T;
	int64_t at = fa_koff(st, kh, live ? j : 0);
	const float *kj = k + at, *vj = v + at;
	float *kg = dk ? dk + at : NULL, *vg = dv ? dv + at : NULL;
	for (int64_t e = 0; live && e < D; e++) {
		if (kg)
			kg[e] = 0.0f;
		if (vg)
			vg[e] = 0.0f;
	}
	for (int64_t h = kh % nkv * g; h < kh % nkv * g + g; h++) {
		int64_t bh = b * nh + h;
		for (int64_t i0 = 0; i0 < S; i0 += FA_K) {
			__syncthreads();
			fa_load(qs, q + fa_qoff(st, bh, 0), i0, S, D, st.qs[2]);
			fa_load(gs, dout + fa_qoff(st, bh, 0), i0, S, D, st.qs[2]);
			if (threadIdx.x < FA_K && i0 + threadIdx.x < S) {
				ls[threadIdx.x] = lse[bh * S + i0 + threadIdx.x];
				ds_[threadIdx.x] = dd[bh * S + i0 + threadIdx.x];
			}
			__syncthreads();
			for (int64_t c = 0; live && c < FA_K && i0 + c < S; c++) {
				if (fa_hidden(mk, b, h, i0 + c, j, causal))
					continue;
				float p = expf(scale * fa_dot(qs + c * D, kj, D) - ls[c]);
				for (int64_t e = 0; vg && e < D; e++)
					vg[e] += p * gs[c * D + e];
				if (!kg)
					continue;
				float ds = p * (fa_dot(gs + c * D, vj, D) - ds_[c]);
				for (int64_t e = 0; e < D; e++)
					kg[e] += scale * ds * qs[c * D + e];
			}
		}
	}
}

/* ---- dropout (the twin: sc_cpu_dropout) ---- */

__device__ uint64_t splitmix64_d(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Whether element l of a piece is kept: w the piece's dims and the whole's
 * strides (s0), base its first element's index in the whole, k the key.
 * Dropout and DropoutGenMask draw through it alike. */
__device__ double dropout_u(const sc_cu_walk &w, int64_t base, int64_t l, uint64_t k)
{
	int64_t i = base, rest = l;
	for (int d = w.ndim - 1; d >= 0; d--) {
		i += rest % w.dims[d] * w.s0[d];
		rest /= w.dims[d];
	}
	return (double)(splitmix64_d(k + (uint64_t)i) >> 40) * 0x1p-24;
}

__device__ bool dropout_keeps(const sc_cu_walk &w, int64_t base, int64_t l, uint64_t k, float keep)
{
	return dropout_u(w, base, l, k) < (double)keep;
}

/* UniformReal: the draw itself (the twin: sc_cpu_uniform_real) */
__global__ void uniform_real_k(float *y, int64_t n, sc_cu_walk w, int64_t base, uint64_t k)
{
	GRID_LOOP(l, n) y[l] = (float)dropout_u(w, base, l, k);
}

__global__ void dropout_k(const float *x, float *y, int64_t n, sc_cu_walk w, int64_t base, uint64_t k, float keep,
                          float scale)
{
	GRID_LOOP(l, n) y[l] = dropout_keeps(w, base, l, k, keep) ? __fmul_rn(x[l], scale) : 0.0f;
}

/* DropoutGenMask's mask: dropout_k's draw, 1 where kept */
__global__ void dropout_gen_mask_k(uint8_t *m, int64_t n, sc_cu_walk w, int64_t base, uint64_t k, float keep)
{
	GRID_LOOP(l, n) m[l] = dropout_keeps(w, base, l, k, keep);
}

/* DropoutDoMask: dropout_k's kept value where the mask is 1 */
__global__ void dropout_do_mask_k(const float *x, const uint8_t *m, float *y, int64_t n, float scale)
{
	GRID_LOOP(l, n)
		y[l] = m[l] ? __fmul_rn(x[l], scale) : 0.0f;
}

/* ---- computed constants (the twins: sc_cpu_arange, sc_cpu_causal_mask, sc_cpu_rope) ---- */

/* start + (first + i) step rounded twice, as the CPU computes it: no FMA */
__global__ void arange_f32_k(float *y, int64_t n, int64_t first, double start, double step)
{
	GRID_LOOP(i, n) y[i] = (float)__dadd_rn(start, __dmul_rn((double)(first + i), step));
}

template <typename T>
__global__ void arange_int_k(T *y, int64_t n, int64_t first, int64_t start, int64_t step)
{
	GRID_LOOP(i, n) y[i] = (T)(start + (first + i) * step);
}

template <typename T>
__global__ void causal_mask_k(T *y, int64_t total, int64_t rows, int64_t cols, int64_t row0, int64_t col0, T masked,
                              T allowed)
{
	GRID_LOOP(i, total) y[i] = col0 + i % cols > row0 + i / cols % rows ? masked : allowed;
}

template <typename T>
__global__ void eye_k(T *y, int64_t total, int64_t cols, int64_t row0, int64_t col0)
{
	GRID_LOOP(i, total) y[i] = (T)(row0 + i / cols == col0 + i % cols);
}

/* start + step i, each rounded as the CPU rounds it: no FMA */
__global__ void lin_space_k(float *y, int64_t n, int64_t first, float start, float step, int64_t num)
{
	GRID_LOOP(i, n) y[i] = num > 1 ? __fadd_rn(start, __fmul_rn(step, (float)(first + i))) : start;
}

__global__ void rope_k(float *y, int is_sin, int64_t total, int64_t rows, int64_t cols, int64_t row0, int64_t col0,
                       int64_t d, double theta)
{
	GRID_LOOP(i, total) {
		float angle = __fmul_rn((float)(row0 + i / cols % rows), SC_ROPE_FREQ(col0 + i % cols, d, theta));
		y[i] = (float)(is_sin ? sin((double)angle) : cos((double)angle));
	}
}

/* ---- data movement ---- */

/* BOX: y is walked too (w.s1), for the box of a slice that lies in x when
 * the slice reaches past x; otherwise y is the walk itself, in order. */
template <typename T, bool BOX>
__global__ void strided_copy_k(const T *x, T *y, int64_t base, int64_t n, sc_cu_walk w)
{
	GRID_LOOP(i, n) {
		int64_t o1 = i;
		int64_t o0 = walk_off(i, w, BOX ? &o1 : nullptr);
		y[o1] = x[base + o0];
	}
}

template <bool BOX>
__global__ void strided_scatter_k(const float *y, float *x, int64_t base, int64_t n, sc_cu_walk w)
{
	GRID_LOOP(i, n) {
		int64_t o1 = i;
		int64_t o0 = walk_off(i, w, BOX ? &o1 : nullptr);
		x[base + o0] = y[o1];
	}
}

__device__ inline bool pick_before(float a, int64_t ia, float b, int64_t ib, int is_min)
{
	bool an = isnan(a), bn = isnan(b);
	if (an != bn)
		return an;
	if (!an && a != b)
		return is_min ? a < b : a > b;
	return ia < ib;
}

/* sc_cpu_arg_reduce's order (shardc_rt.h): one thread per (outer, inner). */
__global__ void arg_reduce_k(const float *x, int64_t outer, int64_t n, int64_t inner, int is_min, int32_t *idx,
                             float *val, const float *dy, float *dx)
{
	GRID_LOOP(t, outer * inner) {
		int64_t o = t / inner, i = t % inner;
		const float *p = x + o * n * inner + i;
		int64_t best = 0;
		for (int64_t j = 1; j < n; j++)
			if (pick_before(p[j * inner], j, p[best * inner], best, is_min))
				best = j;
		if (idx)
			idx[t] = (int32_t)best;
		if (val)
			val[t] = p[best * inner];
		if (dx)
			dx[(o * n + best) * inner + i] = dy[t];
	}
}

/* One thread per row: its k picks one after another (sc_cpu_topk). */
__global__ void topk_k(const float *x, int64_t rows, int64_t n, int64_t k, float *val, int32_t *idx, const float *dy,
                       float *dx)
{
	GRID_LOOP(r, rows) {
		const float *row = x + r * n;
		int64_t prev = -1;
		for (int64_t t = 0; t < k; t++) {
			int64_t best = -1;
			for (int64_t j = 0; j < n; j++)
				if ((prev < 0 || pick_before(row[prev], prev, row[j], j, 0)) &&
				    (best < 0 || pick_before(row[j], j, row[best], best, 0)))
					best = j;
			prev = best;
			if (val)
				val[r * k + t] = row[best];
			if (idx)
				idx[r * k + t] = (int32_t)best;
			if (dx)
				dx[r * n + best] = dy[r * k + t];
		}
	}
}

__global__ void one_hot_k(const void *idx, int idx64, int64_t n, int64_t depth, int64_t inner, int64_t offset,
                          const float *on, const float *off, float *y)
{
	GRID_LOOP(i, n) {
		int64_t o = i / (depth * inner), j = i / inner % depth, k = i % inner;
		y[i] = load_index(idx, idx64, o * inner + k) - offset == j ? *on : *off;
	}
}

/* y (outer, nidx, row), element i: outer slice o, index k, column j; n = outer nidx row */
__global__ void gather_k(const float *table, int64_t rows, int64_t row, const void *idx, int idx64, int64_t nidx,
                         int64_t n, int64_t offset, int64_t limit, float *y)
{
	GRID_LOOP(i, n) {
		int64_t o = i / (nidx * row), k = i / row % nidx, j = i % row;
		int64_t id = load_index(idx, idx64, k), r = id - offset;
		y[i] = id < limit && r >= 0 && r < rows ? table[(o * rows + r) * row + j] : 0.0f;
	}
}

__global__ void gather_grad_k(const float *dy, const void *idx, int idx64, int64_t nidx, int64_t n, int64_t offset,
                              int64_t limit, float *dtable, int64_t rows, int64_t row)
{
	GRID_LOOP(i, n) {
		int64_t o = i / (nidx * row), k = i / row % nidx, j = i % row;
		int64_t id = load_index(idx, idx64, k), r = id - offset;
		if (id < limit && r >= 0 && r < rows)
			atomicAdd(dtable + (o * rows + r) * row + j, dy[i]);
	}
}

/* GatherD's dims, passed by value: the index's (y's) and x's, rank ndim */
struct GatherDDims {
	int ndim, dim;
	int64_t offset;   /* x's slice along dim starts there */
	int64_t idims[8], xdims[8];
};

/* x's offset for element i of the index, or -1 when its index lies outside x's dim */
__device__ int64_t gather_d_at(const void *idx, int idx64, const GatherDDims &g, int64_t i)
{
	int64_t r = load_index(idx, idx64, i) - g.offset, off = 0, stride = 1;
	if (r < 0 || r >= g.xdims[g.dim])
		return -1;
	for (int d = g.ndim - 1; d >= 0; d--) {
		off += (d == g.dim ? r : i % g.idims[d]) * stride;
		i /= g.idims[d];
		stride *= g.xdims[d];
	}
	return off;
}

__global__ void gather_d_k(const float *x, const void *idx, int idx64, GatherDDims g, int64_t n, float *y)
{
	GRID_LOOP(i, n) {
		int64_t at = gather_d_at(idx, idx64, g, i);
		y[i] = at < 0 ? 0.0f : x[at];
	}
}

__global__ void gather_d_grad_k(const float *dy, const void *idx, int idx64, GatherDDims g, int64_t n, float *dx)
{
	GRID_LOOP(i, n) {
		int64_t at = gather_d_at(idx, idx64, g, i);
		if (at >= 0)
			atomicAdd(dx + at, dy[i]);
	}
}

/* GatherNd's and the tensor scatters' view of x: its n indexed dims, and
 * where x's piece starts in the whole along them (0s: the whole) */
struct NdDims {
	int n;
	int64_t dims[8], start[8];
};

/* The slice of x's piece row i of the indices names (host-checked inside the whole); -1 outside the piece */
__device__ int64_t nd_row(const void *idx, int idx64, const NdDims &g, int64_t i)
{
	int64_t row = 0;
	for (int d = 0; d < g.n; d++) {
		int64_t v = load_index(idx, idx64, i * g.n + d) - g.start[d];
		if (v < 0 || v >= g.dims[d])
			return -1;
		row = row * g.dims[d] + v;
	}
	return row;
}

__global__ void gather_nd_k(const float *x, const void *idx, int idx64, NdDims g, int64_t inner, int64_t total,
                            float *y)
{
	GRID_LOOP(t, total) {
		int64_t r = nd_row(idx, idx64, g, t / inner);
		y[t] = r < 0 ? 0.0f : x[r * inner + t % inner];
	}
}

/* One update u applied to an element a of x (sc_cpu_tensor_scatter's scatter_apply); op -1: add */
__device__ float scatter_apply(int op, float a, float u)
{
	switch (op) {
	case SC_SCATTER_UPDATE: return u;
	case SC_SCATTER_SUB: return a - u;
	case SC_SCATTER_MUL: return a * u;
	case SC_SCATTER_DIV: return a / u;
	case SC_SCATTER_MAX: return fmaxf(a, u);
	case SC_SCATTER_MIN: return fminf(a, u);
	default: return a + u;
	}
}

/* One thread per inner element j, walking the indices in order: repeated
 * slices add (or are replaced, multiplied, ...) in the CPU twin's order,
 * with no atomics. */
__global__ void scatter_nd_k(int op, const float *upd, const void *idx, int idx64, NdDims g, int64_t m, int64_t inner,
                             float *y)
{
	GRID_LOOP(j, inner) {
		for (int64_t i = 0; i < m; i++) {
			int64_t r = nd_row(idx, idx64, g, i);
			if (r >= 0)
				y[r * inner + j] = scatter_apply(op, y[r * inner + j], upd[i * inner + j]);
		}
	}
}

/* Max's and Min's ties at element j of slice r of x's piece, for row i of
 * the indices (r its slice): 1 where x equals y, plus the updates equal to
 * y there (the CPU twin's scatter_ties, counted by a scan) */
__device__ int64_t scatter_ties(const float *x, const float *upd, const float *y, const void *idx, int idx64,
                                const NdDims &g, int64_t m, int64_t inner, int64_t r, int64_t j)
{
	int64_t e = r * inner + j, ties = x[e] == y[e];
	for (int64_t i = 0; i < m; i++)
		ties += nd_row(idx, idx64, g, i) == r && upd[i * inner + j] == y[e];
	return ties;
}

/* Max's and Min's x gradient, after dx = dy where x == y, else 0: each slice
 * an index names (its first index's thread) divided by its ties */
__global__ void scatter_tie_share_k(const float *x, const float *upd, const float *y, const void *idx, int idx64,
                                    NdDims g, int64_t m, int64_t inner, float *dx)
{
	GRID_LOOP(t, m * inner) {
		int64_t i = t / inner, j = t % inner, r = nd_row(idx, idx64, g, i);
		bool first = r >= 0;
		for (int64_t k = 0; first && k < i; k++)
			first = nd_row(idx, idx64, g, k) != r;
		int64_t ties = first ? scatter_ties(x, upd, y, idx, idx64, g, m, inner, r, j) : 0;
		if (first)
			dx[r * inner + j] = ties ? dx[r * inner + j] / (float)ties : 0.0f;   /* 0 ties: NaNs */
	}
}

__global__ void scatter_x_won_k(const float *dy, const float *x, const float *y, int64_t n, float *dx)
{
	GRID_LOOP(e, n) dx[e] = x[e] == y[e] ? dy[e] : 0.0f;
}

/* k 0 (sign 0): zero the slices of dx (x's shape) the indices name; k 2: dx
 * (m, inner) = dy's slices (Sub: negated; Mul: times x's; Div: times x's /
 * -(u u); Max, Min: shared by the ties where u won), 0 for another piece's */
__global__ void nd_slices_k(int op, int k, const float *dy, const float *x, const float *upd, const float *y,
                            const void *idx, int idx64, NdDims g, int64_t m, int64_t inner, float *dx)
{
	GRID_LOOP(t, m * inner) {
		int64_t r = nd_row(idx, idx64, g, t / inner), j = t % inner, e = r * inner + j;
		if (k == 0) {
			if (r >= 0)
				dx[e] = 0.0f;
			continue;
		}
		float u = upd ? upd[t] : 0.0f, gr = r < 0 ? 0.0f : dy[e];
		if (r < 0)
			dx[t] = 0.0f;
		else if (op == SC_SCATTER_SUB)
			dx[t] = -gr;
		else if (op == SC_SCATTER_MUL)
			dx[t] = x[e] * gr;
		else if (op == SC_SCATTER_DIV)
			dx[t] = gr * (x[e] / -(u * u));
		else if (op == SC_SCATTER_MAX || op == SC_SCATTER_MIN) {
			int64_t ties = scatter_ties(x, upd, y, idx, idx64, g, m, inner, r, j);
			dx[t] = ties ? (u == y[e] ? gr : 0.0f) / (float)ties : 0.0f;
		}
		else
			dx[t] = gr;
	}
}

/* The unsorted segment reductions. A thread per element of the result
 * (of the statistics; of dx), each walking the rows in order, so that sums
 * and products run in double in the CPU twin's order and no atomics are
 * needed: the same values, run to run. */
__device__ int64_t segment_of(const void *ids, int ids64, int64_t i, int64_t segments)
{
	int64_t s = load_index(ids, ids64, i);
	return s >= 0 && s < segments ? s : -1;
}

__global__ void unsorted_segment_k(int op, const float *x, const void *ids, int ids64, float *y, int64_t rows,
                                   int64_t inner, int64_t segments, float big)
{
	GRID_LOOP(j, segments * inner) {
		int64_t s = j / inner, c = j % inner;
		double acc = op == SC_SEG_PROD ? 1.0 : 0.0;
		float m = op == SC_SEG_MAX ? -big : big;
		for (int64_t i = 0; i < rows; i++) {
			if (segment_of(ids, ids64, i, segments) != s)
				continue;
			float v = x[i * inner + c];
			if (op == SC_SEG_SUM)
				acc += v;
			else if (op == SC_SEG_PROD)
				acc *= v;
			else if (op == SC_SEG_MAX ? v > m : v < m)
				m = v;
		}
		y[j] = op == SC_SEG_MAX || op == SC_SEG_MIN ? m : (float)acc;
	}
}

/* Statistic k of segment s, element c over the rows (sc_unsorted_segment_stat) */
__device__ float segment_stat(int op, const float *x, const void *ids, int ids64, const float *y, int k, int64_t s,
                              int64_t c, int64_t rows, int64_t inner, int64_t segments)
{
	bool product = op == SC_SEG_PROD && k == 0;
	double acc = product ? 1.0 : 0.0;
	for (int64_t i = 0; i < rows; i++) {
		if (segment_of(ids, ids64, i, segments) != s)
			continue;
		float v = x[i * inner + c];
		if (product)
			acc *= v != 0.0f ? v : 1.0;
		else if (op == SC_SEG_PROD)
			acc += v == 0.0f;
		else
			acc += v == y[s * inner + c];
	}
	return (float)acc;
}

__global__ void unsorted_segment_stat_k(int op, const float *x, const void *ids, int ids64, const float *y, int k,
                                        float *stat, int64_t rows, int64_t inner, int64_t segments)
{
	GRID_LOOP(j, segments * inner)
		stat[j] = segment_stat(op, x, ids, ids64, y, k, j / inner, j % inner, rows, inner, segments);
}

__global__ void unsorted_segment_grad_k(int op, const float *x, const void *ids, int ids64, const float *y,
                                        const float *dy, const float *stat0, const float *stat1, float *dx,
                                        int64_t rows, int64_t inner, int64_t segments)
{
	GRID_LOOP(j, rows * inner) {
		int64_t i = j / inner, c = j % inner, s = segment_of(ids, ids64, i, segments), at = s * inner + c;
		float g = 0.0f;
		if (s >= 0) {
			float s0 = 0.0f, s1 = 0.0f;
			if (op != SC_SEG_SUM) {
				s0 = stat0 ? stat0[at] : segment_stat(op, x, ids, ids64, y, 0, s, c, rows, inner, segments);
				if (op == SC_SEG_PROD)
					s1 = stat1 ? stat1[at] : segment_stat(op, x, ids, ids64, y, 1, s, c, rows, inner, segments);
			}
			g = SC_SEGMENT_GRAD(op, x ? x[j] : 0.0f, y ? y[at] : 0.0f, dy[at], s0, s1);
		}
		dx[j] = g;
	}
}

/* L2Normalize, a thread per row (o, i) of x (outer, n, inner) along n, sums in double as the CPU twin's */
__device__ double l2_sumsq(const float *x, const float *sumsq, int64_t n, int64_t inner, int64_t o, int64_t i)
{
	if (sumsq)
		return sumsq[o * inner + i];
	double s = 0;
	for (int64_t j = 0; j < n; j++) {
		double v = x[(o * n + j) * inner + i];
		s += v * v;
	}
	return s;
}

__global__ void l2_normalize_k(const float *x, const float *sumsq, float *y, int64_t rows, int64_t n, int64_t inner,
                               double eps)
{
	GRID_LOOP(t, rows) {
		int64_t o = t / inner, i = t % inner;
		double s = l2_sumsq(x, sumsq, n, inner, o, i), r = sqrt(s > eps ? s : eps);
		for (int64_t j = 0; j < n; j++) {
			int64_t at = (o * n + j) * inner + i;
			y[at] = (float)(x[at] / r);
		}
	}
}

__global__ void l2_normalize_grad_k(const float *x, const float *sumsq, const float *dy, float *dx, float *dsumsq,
                                    int64_t rows, int64_t n, int64_t inner, double eps)
{
	GRID_LOOP(t, rows) {
		int64_t o = t / inner, i = t % inner;
		double s = l2_sumsq(x, sumsq, n, inner, o, i), m = s > eps ? s : eps, r = sqrt(m), dot = 0;
		for (int64_t j = 0; j < n; j++)
			dot += (double)dy[(o * n + j) * inner + i] * x[(o * n + j) * inner + i];
		double ds = s >= eps ? -0.5 * dot / (m * r) : 0;   /* below eps the norm is constant */
		if (dsumsq)
			dsumsq[t] = (float)ds;
		for (int64_t j = 0; dx && j < n; j++) {
			int64_t at = (o * n + j) * inner + i;
			dx[at] = (float)(dy[at] / r + (sumsq ? 0 : 2 * x[at] * ds));
		}
	}
}

/* BatchNorm, a thread per channel of x (n, c, hw), sums in double as the CPU twin's */
__device__ void bn_stats(const float *x, const float *mean, const float *var, int64_t n, int64_t c, int64_t hw,
                         int64_t ch, double *m, double *v)
{
	if (mean) {
		*m = mean[ch], *v = var[ch];
		return;
	}
	double s = 0, q = 0;
	for (int64_t i = 0; i < n; i++)
		for (int64_t j = 0; j < hw; j++)
			s += x[(i * c + ch) * hw + j];
	*m = s / (double)(n * hw);
	for (int64_t i = 0; i < n; i++)
		for (int64_t j = 0; j < hw; j++) {
			double d = x[(i * c + ch) * hw + j] - *m;
			q += d * d;
		}
	*v = q / (double)(n * hw);
}

__global__ void batch_norm_k(const float *x, const float *scale, const float *bias, float *moving_mean,
                             float *moving_var, const float *batch_mean, const float *batch_var, float *y, int64_t n,
                             int64_t c, int64_t hw, double eps, double momentum, int64_t count, int mode)
{
	GRID_LOOP(ch, c) {
		double m, v;
		if (mode == SC_BN_INFER)
			bn_stats(x, moving_mean, moving_var, n, c, hw, ch, &m, &v);
		else
			bn_stats(x, batch_mean, batch_var, n, c, hw, ch, &m, &v);
		double r = 1 / sqrt(v + eps);
		for (int64_t i = 0; i < n; i++)
			for (int64_t j = 0; j < hw; j++) {
				int64_t at = (i * c + ch) * hw + j;
				y[at] = (float)((x[at] - m) * r * scale[ch] + bias[ch]);
			}
		if (mode == SC_BN_TRAIN) {
			moving_mean[ch] = (float)((1 - momentum) * moving_mean[ch] + momentum * m);
			moving_var[ch] = (float)((1 - momentum) * moving_var[ch] + momentum * v * (double)count / (double)(count - 1));
		}
	}
}

__global__ void batch_norm_grad_k(const float *x, const float *dy, const float *scale, const float *mean,
                                  const float *var, float *dx, float *dscale, float *dbias, float *dmean, float *dvar,
                                  int64_t n, int64_t c, int64_t hw, double eps)
{
	GRID_LOOP(ch, c) {
		double m, v, sdy = 0, sdyx = 0, M = (double)(n * hw);
		bn_stats(x, mean, var, n, c, hw, ch, &m, &v);
		double r = 1 / sqrt(v + eps);
		for (int64_t i = 0; i < n; i++)
			for (int64_t j = 0; j < hw; j++) {
				int64_t at = (i * c + ch) * hw + j;
				sdy += dy[at];
				sdyx += (double)dy[at] * (x[at] - m);
			}
		if (dscale)
			dscale[ch] = (float)(sdyx * r);
		if (dbias)
			dbias[ch] = (float)sdy;
		if (dmean)
			dmean[ch] = (float)(-scale[ch] * r * sdy);
		if (dvar)
			dvar[ch] = (float)(-0.5 * scale[ch] * r * r * r * sdyx);
		for (int64_t i = 0; dx && i < n; i++)
			for (int64_t j = 0; j < hw; j++) {
				int64_t at = (i * c + ch) * hw + j;
				double g = mean ? dy[at] : dy[at] - sdy / M - (x[at] - m) * r * r * sdyx / M;
				dx[at] = (float)(scale[ch] * r * g);
			}
	}
}

/* ---- cast ---- */

/* Float16 and BFloat16 as the kernels see them: their 16 bits (a uint16_t
 * in memory), tagged with the format. Conversions follow half.c: to them
 * nearest even with cuda_fp16.h / cuda_bf16.h, a NaN as the quiet NaN of its
 * sign; from them exactly. */
struct f16 {
	uint16_t bits;
};
struct bf16 {
	uint16_t bits;
};

__host__ __device__ f16 f16_of(float v)
{
	return {v != v ? (uint16_t)(signbit(v) ? 0xfe00 : 0x7e00) : __half_raw(__float2half_rn(v)).x};
}
__host__ __device__ f16 f16_of(double v)
{
	return {v != v ? (uint16_t)(signbit(v) ? 0xfe00 : 0x7e00) : __half_raw(__double2half(v)).x};
}
__host__ __device__ bf16 bf16_of(float v)
{
	return {v != v ? (uint16_t)(signbit(v) ? 0xffc0 : 0x7fc0) : __nv_bfloat16_raw(__float2bfloat16_rn(v)).x};
}
__host__ __device__ bf16 bf16_of(double v)
{
	return {v != v ? (uint16_t)(signbit(v) ? 0xffc0 : 0x7fc0) : __nv_bfloat16_raw(__double2bfloat16(v)).x};
}

/* an element as what casts compute with: 2-byte floats as float32 (exact;
 * a NaN quieted with its payload, as half.c does), bool as 0/1, the rest as
 * it is */
__device__ float widen(f16 h)
{
	if ((h.bits & 0x7fff) > 0x7c00)
		return __uint_as_float((h.bits & 0x8000u) << 16 | 0x7fc00000u | (h.bits & 0x3ffu) << 13);
	__half_raw r;
	r.x = h.bits;
	return __half2float(__half(r));
}
__device__ float widen(bf16 h)
{
	return __uint_as_float((uint32_t)h.bits << 16);
}
__device__ int32_t widen(uint8_t b)
{
	return b != 0;
}
template <typename T>
__device__ T widen(T v)
{
	return v;
}

/* what a 2-byte float is rounded from: a float32 as it is, an integer as
 * double (exact below 2^53, as sc_cpu_cast does it) */
__device__ float exact(float v)
{
	return v;
}
template <typename T>
__device__ double exact(T v)
{
	return (double)v;
}

/* one element of S as D, as sc_cpu_cast does it (uint8_t is bool) */
template <typename S, typename D>
__device__ D convert(S v)
{
	auto w = widen(v);
	using W = decltype(w);
	constexpr bool from_float = std::is_same_v<W, float>;
	if constexpr (std::is_same_v<D, uint8_t>)
		return w != 0;
	else if constexpr (std::is_same_v<D, f16>)
		return f16_of(exact(w));
	else if constexpr (std::is_same_v<D, bf16>)
		return bf16_of(exact(w));
	else if constexpr (from_float && std::is_same_v<D, int32_t>)
		return w != w ? 0 : w >= 2147483647.0f ? INT32_MAX : w <= -2147483648.0f ? INT32_MIN : (int32_t)w;
	else if constexpr (from_float && std::is_same_v<D, int64_t>)
		return w != w ? 0 : w >= 9.2233720e18f ? INT64_MAX : w <= -9.2233720e18f ? INT64_MIN : (int64_t)w;
	else
		return (D)w;
}

template <typename S, typename D>
__global__ void cast_k(const S *x, D *y, int64_t n)
{
	GRID_LOOP(i, n) y[i] = convert<S, D>(x[i]);
}

/* x rounded in place to the half type H and widened back (sc_round) */
template <typename H>
__global__ void round_k(float *x, int64_t n)
{
	GRID_LOOP(i, n) x[i] = widen(convert<float, H>(x[i]));
}

/* cast_k four elements a thread: one 16-byte load and one 8-byte store
 * between float32 and the 2-byte floats */
template <typename S, typename D>
__global__ void cast4_k(const S *x, D *y, int64_t n4)
{
	struct alignas(4 * sizeof(S)) S4 {
		S v[4];
	};
	struct alignas(4 * sizeof(D)) D4 {
		D v[4];
	};
	GRID_LOOP(i, n4) {
		S4 a = ((const S4 *)x)[i];
		D4 b;
#pragma unroll
		for (int k = 0; k < 4; k++)
			b.v[k] = convert<S, D>(a.v[k]);
		((D4 *)y)[i] = b;
	}
}

/* float32 to or from a 2-byte float with both ends aligned: fours, then
 * the n % 4 left one a thread */
template <typename S, typename D>
void cast(const S *x, D *y, int64_t n, cudaStream_t s)
{
	int64_t n4 = 0;
	if constexpr ((std::is_same_v<S, float> && sizeof(D) == 2) || (sizeof(S) == 2 && std::is_same_v<D, float>)) {
		n4 = (uintptr_t)x % (4 * sizeof(S)) == 0 && (uintptr_t)y % (4 * sizeof(D)) == 0 ? n / 4 : 0;
		if (n4 > 0)
			cast4_k<<<blocks_for(n4), THREADS, 0, s>>>(x, y, n4);
	}
	if (n > 4 * n4)
		cast_k<<<blocks_for(n - 4 * n4), THREADS, 0, s>>>(x + 4 * n4, y + 4 * n4, n - 4 * n4);
}

template <typename S>
cudaError_t cast_from(const S *x, void *y, sc_dtype yt, int64_t n, cudaStream_t s)
{
	switch (yt) {
	case SC_F32: cast(x, (float *)y, n, s); break;
	case SC_F16: cast(x, (f16 *)y, n, s); break;
	case SC_BF16: cast(x, (bf16 *)y, n, s); break;
	case SC_I32: cast(x, (int32_t *)y, n, s); break;
	case SC_I64: cast(x, (int64_t *)y, n, s); break;
	case SC_BOOL: cast(x, (uint8_t *)y, n, s); break;
	default: return cudaErrorInvalidValue;
	}
	return cudaGetLastError();
}

/* ---- elementwise chains (compiler/fuse.c) ---- */

/* One thread an element: the operands loaded, then the steps in order, each
 * as its own kernel computes it (sc_ew_chain in shardc_rt.h). The binary
 * steps round each result (the _rn intrinsics), so that no product and sum
 * of two steps become one fma, which the separate kernels could not do. */
/* ---- elementwise chains ----
 * A chain is interpreted: decoding every step for every element made it
 * bound by instructions (14% of the bandwidth on an H200, 2026-11-26). So
 * each thread takes EW_E consecutive elements and decodes each step once
 * for all of them, the operator's switch outside their loop (each case
 * calls unary_fwd or unary_bwd with a constant, which folds theirs). The values
 * live in dynamic shared memory, value k of element e at
 * ((k * EW_E + e) * blockDim.x + threadIdx.x) (indexed at run time, and
 * conflict-free): at most 24 values, 48 KiB a block of EW_THREADS. The
 * chain is read where it was passed (__grid_constant__: no copy into every
 * thread's local memory). The arithmetic is each step's kernel's, rounded
 * per step (the _rn intrinsics), so that no product and sum of two steps
 * become one fma, which the separate kernels could not do. */
const int EW_E = 4, EW_THREADS = 128;

__device__ float ew_binop(int op, float a, float b)
{
	switch (op) {
	case SC_ADD: return __fadd_rn(a, b);
	case SC_SUB: return __fsub_rn(a, b);
	case SC_MUL: return __fmul_rn(a, b);
	case SC_DIV: return __fdiv_rn(a, b);
	default: return binop((sc_binop)op, a, b);
	}
}

/* value k of this thread's element e */
#define EW_V(k, e) v[((k) * EW_E + (e)) * (int)blockDim.x]

/* operand in's m elements from i (column col of c), the rest 0 */
template <typename T>
__device__ void ew_in(float *v, int k, const T *p, sc_ew_bcast bcast, int64_t i, int64_t col, int64_t c, int m)
{
	for (int e = 0; e < EW_E; e++) {
		int64_t at = bcast == SC_EW_FULL ? i + e : bcast == SC_EW_ROW ? col : 0;
		EW_V(k, e) = e < m ? widen(p[at]) : 0.0f;
		if (++col == c)
			col = 0;
	}
}

__global__ void ew_chain_k(const __grid_constant__ sc_cu_chain ch, int64_t n, int64_t c)
{
	extern __shared__ float ew_values[];
	float *v = ew_values + threadIdx.x;
	bool narrow = n <= INT32_MAX;
	int64_t step = (int64_t)gridDim.x * blockDim.x * EW_E;
	for (int64_t i = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) * EW_E; i < n; i += step) {
		int m = n - i < EW_E ? (int)(n - i) : EW_E;
		int64_t col = narrow ? (int64_t)((uint32_t)i % (uint32_t)c) : i % c;
		for (int k = 0; k < ch.nin; k++) {
			const sc_ew_operand &in = ch.ins[k];
			if (in.dt == SC_BF16)
				ew_in(v, k, (const bf16 *)in.p, in.bcast, i, col, c, m);
			else if (in.dt == SC_F16)
				ew_in(v, k, (const f16 *)in.p, in.bcast, i, col, c, m);
			else
				ew_in(v, k, (const float *)in.p, in.bcast, i, col, c, m);
		}
		for (int k = 0; k < ch.nsteps; k++) {
			const sc_ew_step st = ch.steps[k];
			int y = ch.nin + k;
			switch (st.kind) {
			case SC_EW_UNARY:
				switch ((sc_unop)st.op) {
#define CASE(name, t_, fwd, grad)                                         \
	case SC_U_##name:                                                     \
		for (int e = 0; e < EW_E; e++)                                    \
			EW_V(y, e) = unary_fwd(SC_U_##name, EW_V(st.a, e), st.p);     \
		break;
					SC_UNARY_TABLE(CASE)
#undef CASE
				case SC_U_COUNT: break;
				}
				break;
			case SC_EW_UNARY_GRAD:
				switch ((sc_unop)st.op) {
#define CASE(name, t_, fwd, grad)                                         \
	case SC_U_##name:                                                     \
		for (int e = 0; e < EW_E; e++)                                    \
			EW_V(y, e) = unary_bwd(SC_U_##name, EW_V(st.a, e), EW_V(st.b, e), st.p); \
		break;
					SC_UNARY_TABLE(CASE)
#undef CASE
				case SC_U_COUNT: break;
				}
				break;
			case SC_EW_BINARY:
				for (int e = 0; e < EW_E; e++)
					EW_V(y, e) = ew_binop(st.op, EW_V(st.a, e), EW_V(st.b, e));
				break;
			case SC_EW_ROUND:
				for (int e = 0; e < EW_E; e++)
					EW_V(y, e) = st.dt == SC_BF16 ? widen(bf16_of(EW_V(st.a, e))) : widen(f16_of(EW_V(st.a, e)));
				break;
			case SC_EW_STORE:
				for (int e = 0; e < m; e++) {
					float a = EW_V(st.a, e);
					if (st.dt == SC_BF16)
						((bf16 *)st.out)[i + e] = bf16_of(a);
					else if (st.dt == SC_F16)
						((f16 *)st.out)[i + e] = f16_of(a);
					else
						((float *)st.out)[i + e] = a;
				}
				for (int e = 0; e < EW_E; e++)
					EW_V(y, e) = EW_V(st.a, e);
				break;
			}
		}
	}
}
#undef EW_V

/* ---- losses ---- */

__device__ float row_lse(const float *x, int64_t c, int lane, float *mx)
{
	float m = -INFINITY, s = 0;
	for (int64_t j = lane; j < c; j += 32)
		m = fmaxf(m, x[j]);
	m = warp_max(m);
	for (int64_t j = lane; j < c; j += 32)
		s += expf(x[j] - m);
	*mx = m;
	return logf(warp_sum(s));
}

__global__ void sparse_ce_k(const float *logits, const void *labels, int label64, float *loss, int64_t n, int64_t c)
{
	int lane = threadIdx.x % 32;
	ROW_LOOP(r, n) {
		int64_t l = load_index(labels, label64, r);
		float mx, lse = row_lse(logits + r * c, c, lane, &mx);
		if (lane == 0 && l >= 0 && l < c)
			atomicAdd(loss, (lse - (logits[r * c + l] - mx)) / (float)n);
	}
}

__global__ void sparse_ce_grad_k(const float *logits, const void *labels, int label64, const float *dloss,
                                 float *dlogits, int64_t n, int64_t c)
{
	int lane = threadIdx.x % 32;
	float scale = (dloss ? *dloss : 1.0f) / (float)n;
	ROW_LOOP(r, n) {
		int64_t l = load_index(labels, label64, r);
		const float *x = logits + r * c;
		float mx, lse = row_lse(x, c, lane, &mx);
		for (int64_t j = lane; j < c; j += 32)
			dlogits[r * c + j] = l < 0 || l >= c ? 0.0f : (expf(x[j] - mx - lse) - (j == l)) * scale;
	}
}

__global__ void sparse_ce_part_k(const float *logits, const void *labels, int label64, const float *max,
                                 const float *sum, float *loss, int64_t n, int64_t c, int64_t offset)
{
	GRID_LOOP(r, n) {
		int64_t l = load_index(labels, label64, r) - offset;
		loss[r] = l >= 0 && l < c ? logf(sum[r]) + max[r] - logits[r * c + l] : 0.0f;
	}
}

__global__ void sparse_ce_part_grad_k(const float *logits, const void *labels, int label64, const float *max,
                                      const float *sum, const float *dloss, float *dlogits, int64_t n, int64_t c,
                                      int64_t offset, int64_t classes)
{
	GRID_LOOP(i, n * c) {
		int64_t r = i / c, j = i % c, label = load_index(labels, label64, r);
		dlogits[i] = label < 0 || label >= classes ? 0.0f
		             : (expf(logits[i] - max[r]) / sum[r] - (j == label - offset)) * dloss[r];
	}
}

/* The dense cross-entropy (labels (n, c)): a warp per row but for the slice's gradient, elementwise. */
__global__ void softmax_ce_k(const float *logits, const float *labels, float *loss, int64_t n, int64_t c)
{
	int lane = threadIdx.x % 32;
	ROW_LOOP(r, n) {
		const float *x = logits + r * c, *t = labels + r * c;
		float mx, lse = row_lse(x, c, lane, &mx), s = 0;
		for (int64_t j = lane; j < c; j += 32)
			s += t[j] * (lse - (x[j] - mx));
		s = warp_sum(s);
		if (lane == 0)
			loss[r] = s;
	}
}

__global__ void softmax_ce_grad_k(const float *logits, const float *labels, const float *dloss, float *dlogits,
                                  int64_t n, int64_t c)
{
	int lane = threadIdx.x % 32;
	ROW_LOOP(r, n) {
		const float *x = logits + r * c, *t = labels + r * c;
		float mx, lse = row_lse(x, c, lane, &mx), dy = dloss ? dloss[r] : 1.0f;
		for (int64_t j = lane; j < c; j += 32)   /* the row read whole (row_lse) before any of it is written */
			dlogits[r * c + j] = (expf(x[j] - mx - lse) - t[j]) * dy;
	}
}

__global__ void softmax_ce_part_k(const float *logits, const float *labels, const float *max, const float *sum,
                                  float *loss, int64_t n, int64_t c)
{
	int lane = threadIdx.x % 32;
	ROW_LOOP(r, n) {
		float lse = logf(sum[r]) + max[r], s = 0;
		for (int64_t j = lane; j < c; j += 32)
			s += labels[r * c + j] * (lse - logits[r * c + j]);
		s = warp_sum(s);
		if (lane == 0)
			loss[r] = s;
	}
}

__global__ void softmax_ce_part_grad_k(const float *logits, const float *labels, const float *max, const float *sum,
                                       const float *dloss, float *dlogits, int64_t n, int64_t c)
{
	GRID_LOOP(i, n * c) {
		int64_t r = i / c;
		dlogits[i] = (expf(logits[i] - max[r]) / sum[r] - labels[i]) * (dloss ? dloss[r] : 1.0f);
	}
}

__global__ void pair_loss_k(int l1, const float *p, const float *t, float *loss, int64_t n)
{
	float s = 0;
	GRID_LOOP(i, n) {
		float d = p[i] - t[i];
		s += l1 ? fabsf(d) : d * d;
	}
	s = block_sum(s);
	if (threadIdx.x == 0)
		atomicAdd(loss, s / (float)n);
}

__global__ void pair_loss_grad_k(int l1, const float *p, const float *t, const float *dloss, float *dp, int64_t n)
{
	float scale = (dloss ? *dloss : 1.0f) / (float)n;
	GRID_LOOP(i, n) {
		float d = p[i] - t[i];
		dp[i] = l1 ? (d > 0 ? scale : d < 0 ? -scale : 0.0f) : 2 * d * scale;
	}
}

/* the twin: sc_cpu_l2_loss (sums in double there) */
__global__ void l2_loss_k(const float *x, float *loss, int64_t n)
{
	float s = 0;
	GRID_LOOP(i, n) s += x[i] * x[i];
	s = block_sum(s);
	if (threadIdx.x == 0)
		atomicAdd(loss, s / 2);
}

__global__ void l2_loss_grad_k(const float *x, const float *dloss, float *dx, int64_t n)
{
	float g = dloss ? *dloss : 1.0f;
	GRID_LOOP(i, n) dx[i] = x[i] * g;
}

/* the twins: sc_cpu_kldiv_loss (sums in double there) and its gradient */
__device__ float kldiv_elem(float x, float y)
{
	float v = __fmul_rn(logf(y) - x, y);
	return isnan(v) ? 0.0f : v;
}

__global__ void kldiv_none_k(const float *x, const float *y, float *out, int64_t n)
{
	GRID_LOOP(i, n) out[i] = kldiv_elem(x[i], y[i]);
}

__global__ void kldiv_sum_k(const float *x, const float *y, float *out, int64_t n, float scale)
{
	float s = 0;
	GRID_LOOP(i, n) s += kldiv_elem(x[i], y[i]);
	s = block_sum(s);
	if (threadIdx.x == 0)
		atomicAdd(out, s * scale);
}

__global__ void kldiv_grad_k(const float *y, const float *dout, float *dx, int64_t n, int reduce, float g)
{
	if (reduce && dout)
		g = __fmul_rn(g, *dout);
	GRID_LOOP(i, n) dx[i] = reduce ? __fmul_rn(y[i], g) : -__fmul_rn(y[i], dout[i]);
}

/* the twin: sc_cpu_lerp; start and end at sw's offsets, the weight at ww's first */
__global__ void lerp_k(const float *start, const float *end, const float *w, float *y, int64_t n, sc_cu_walk sw,
                       sc_cu_walk ww)
{
	GRID_LOOP(i, n) {
		int64_t oe, os = walk_off(i, sw, &oe), ow = walk_off(i, ww, NULL);
		float a = start[os];
		y[i] = a + w[ow] * (end[oe] - a);
	}
}

/* operand k's term at each element of y (sc_cpu_lerp_grad sums them) */
__global__ void lerp_grad_k(int k, const float *start, const float *end, const float *w, const float *dy, float *g,
                            int64_t n, sc_cu_walk sw, sc_cu_walk ww)
{
	GRID_LOOP(i, n) {
		int64_t oe, os = walk_off(i, sw, &oe), ow = walk_off(i, ww, NULL);
		float t = w[ow];
		g[i] = k == 0 ? dy[i] * (1 - t) : k == 1 ? dy[i] * t : dy[i] * (end[oe] - start[os]);
	}
}

/* the twin: sc_cpu_masked_fill; x and the mask at w's offsets */
__global__ void masked_fill_k(const float *x, const uint8_t *m, const float *v, float *y, int64_t n, sc_cu_walk w)
{
	GRID_LOOP(i, n) {
		int64_t om, ox = walk_off(i, w, &om);
		y[i] = m[om] ? v[0] : x[ox];
	}
}

/* x's (k 0: dy where the mask is false) or value's (k 2: where true) term at
 * each element of y (sc_masked_fill_grad sums them) */
__global__ void masked_fill_grad_k(int k, const uint8_t *m, const float *dy, float *g, int64_t n, sc_cu_walk w)
{
	GRID_LOOP(i, n) {
		int64_t om;
		walk_off(i, w, &om);
		g[i] = (m[om] != 0) == (k == 2) ? dy[i] : 0.0f;
	}
}

/* ---- ResizeNearestNeighbor, ResizeBilinearV2 (the twins: sc_cpu_resize, _grad) ----
 * Their coordinates rounded as the CPU's: no fused multiply-add. */

__device__ static float resize_scale_d(int64_t in, int64_t out, int align)
{
	return align && out > 1 ? __fdiv_rn((float)(in - 1), (float)(out - 1)) : __fdiv_rn((float)in, (float)out);
}

__device__ static int64_t resize_nearest_d(int64_t o, float scale, int64_t in, int align, int half)
{
	float s = half ? __fmul_rn(__fadd_rn((float)o, 0.5f), scale) : __fmul_rn((float)o, scale);
	int64_t i = (int64_t)(align ? roundf(s) : floorf(s));
	return i < 0 ? 0 : i < in - 1 ? i : in - 1;
}

__device__ static void resize_linear_d(int64_t o, float scale, int64_t in, int half, int64_t *lo, int64_t *hi,
                                       float *t)
{
	float s = half ? __fsub_rn(__fmul_rn(__fadd_rn((float)o, 0.5f), scale), 0.5f) : __fmul_rn((float)o, scale);
	float f = floorf(s);
	int64_t c = (int64_t)ceilf(s);
	*lo = f < 0 ? 0 : (int64_t)f;
	*hi = c < in - 1 ? c : in - 1;
	*t = __fsub_rn(s, f);
}

__device__ static float lerp_rn(float a, float b, float t)
{
	return __fadd_rn(a, __fmul_rn(__fsub_rn(b, a), t));
}

/* one thread per element of y */
__global__ void resize_k(int bilinear, const float *x, float *y, int64_t n, int64_t in_h, int64_t in_w,
                         int64_t out_h, int64_t out_w, int align, int half)
{
	float sh = resize_scale_d(in_h, out_h, align), sw = resize_scale_d(in_w, out_w, align);
	GRID_LOOP(i, n) {
		int64_t ow = i % out_w, oh = i / out_w % out_h, p = i / (out_w * out_h);
		const float *xp = x + p * in_h * in_w;
		if (!bilinear) {
			y[i] = xp[resize_nearest_d(oh, sh, in_h, align, half) * in_w + resize_nearest_d(ow, sw, in_w, align, half)];
			continue;
		}
		int64_t y0, y1, x0, x1;
		float ty, tx;
		resize_linear_d(oh, sh, in_h, half, &y0, &y1, &ty);
		resize_linear_d(ow, sw, in_w, half, &x0, &x1, &tx);
		float top = lerp_rn(xp[y0 * in_w + x0], xp[y0 * in_w + x1], tx);
		float bottom = lerp_rn(xp[y1 * in_w + x0], xp[y1 * in_w + x1], tx);
		y[i] = lerp_rn(top, bottom, ty);
	}
}

/* one thread per element of dy, added onto dx (zeroed) with atomicAdd */
__global__ void resize_grad_k(int bilinear, const float *dy, float *dx, int64_t n, int64_t in_h, int64_t in_w,
                              int64_t out_h, int64_t out_w, int align, int half)
{
	float sh = resize_scale_d(in_h, out_h, align), sw = resize_scale_d(in_w, out_w, align);
	GRID_LOOP(i, n) {
		int64_t ow = i % out_w, oh = i / out_w % out_h, p = i / (out_w * out_h);
		float *dp = dx + p * in_h * in_w, g = dy[i];
		if (!bilinear) {
			atomicAdd(dp + resize_nearest_d(oh, sh, in_h, align, half) * in_w + resize_nearest_d(ow, sw, in_w, align, half), g);
			continue;
		}
		int64_t y0, y1, x0, x1;
		float ty, tx;
		resize_linear_d(oh, sh, in_h, half, &y0, &y1, &ty);
		resize_linear_d(ow, sw, in_w, half, &x0, &x1, &tx);
		float top = __fmul_rn(g, 1 - ty), bottom = __fmul_rn(g, ty);
		atomicAdd(dp + y0 * in_w + x0, __fmul_rn(top, 1 - tx));
		atomicAdd(dp + y0 * in_w + x1, __fmul_rn(top, tx));
		atomicAdd(dp + y1 * in_w + x0, __fmul_rn(bottom, 1 - tx));
		atomicAdd(dp + y1 * in_w + x1, __fmul_rn(bottom, tx));
	}
}

/* ---- optimizers ---- */

__global__ void sgd_k(float *p, const float *g, float *accum, int64_t n, float lr, float mu, float damp, float wd,
                      int nesterov, int first)
{
	GRID_LOOP(i, n) {
		float gi = g[i] + wd * p[i];
		if (mu > 0) {
			accum[i] = first ? gi : mu * accum[i] + damp * gi;
			gi = nesterov ? gi + mu * accum[i] : accum[i];
		}
		p[i] -= lr * gi;
	}
}

__global__ void momentum_k(float *p, const float *g, float *v, int64_t n, float lr, float mu, float wd, int nesterov)
{
	GRID_LOOP(i, n) {
		float gi = g[i] + wd * p[i];
		v[i] = mu * v[i] + gi;
		p[i] -= nesterov ? lr * gi + lr * mu * v[i] : lr * v[i];
	}
}

__global__ void adam_k(float *p, const float *g, float *m, float *v, int64_t n, float lr_t, float b1, float b2,
                       float eps, float wd)
{
	GRID_LOOP(i, n) {
		float gi = g[i] + wd * p[i];
		m[i] += (1 - b1) * (gi - m[i]);
		v[i] += (1 - b2) * (gi * gi - v[i]);
		p[i] -= lr_t * m[i] / (sqrtf(v[i]) + eps);
	}
}

__global__ void adam_weight_decay_k(float *p, const float *g, float *m, float *v, int64_t n, float lr, float b1,
                                    float b2, float eps, float wd)
{
	GRID_LOOP(i, n) {
		m[i] = b1 * m[i] + (1 - b1) * g[i];
		v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
		p[i] -= lr * (m[i] / (sqrtf(v[i]) + eps) + wd * p[i]);
	}
}

/* nn.Lamb (sc_cpu_lamb's twin): the update of one element from this step's m and v. */
__device__ float lamb_update(float p, float m, float v, float c1, float c2, float e, float wd)
{
	return (m / c1) / (sqrtf(v / c2) + e) + wd * p;
}

__global__ void lamb_norms_k(const float *p, const float *g, const float *m, const float *v, int64_t n, float b1,
                             float b2, float c1, float c2, float e, float wd, float *out)
{
	float sw = 0, su = 0;
	GRID_LOOP(i, n) {
		float mi = b1 * m[i] + (1 - b1) * g[i], vi = b2 * v[i] + (1 - b2) * g[i] * g[i];
		float u = lamb_update(p[i], mi, vi, c1, c2, e, wd);
		sw += p[i] * p[i];
		su += u * u;
	}
	sw = block_sum(sw);
	su = block_sum(su);
	if (threadIdx.x == 0) {
		atomicAdd(out, sw);
		atomicAdd(out + 1, su);
	}
}

__global__ void lamb_k(float *p, const float *g, float *m, float *v, int64_t n, float lr, float b1, float b2,
                       float c1, float c2, float e, float wd, const float *norms)
{
	float wn = sqrtf(norms[0]), un = sqrtf(norms[1]);
	float r = wn > 0 && un > 0 ? wn / (un + FLT_MIN) : 1;   /* 2^-126, as MindSpore's divisor */
	GRID_LOOP(i, n) {
		m[i] = b1 * m[i] + (1 - b1) * g[i];
		v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
		p[i] -= lamb_update(p[i], m[i], v[i], c1, c2, e, wd) * lr * r;
	}
}

/* ---- gradient clipping ---- */

__global__ void sum_squares_k(const float *x, int64_t n, float *out)
{
	float s = 0;
	GRID_LOOP(i, n) s += x[i] * x[i];
	s = block_sum(s);
	if (threadIdx.x == 0)
		atomicAdd(out, s);
}

__global__ void clip_by_norm_k(const float *x, float *y, int64_t n, const float *sqnorm, float clip)
{
	float norm = sqrtf(*sqnorm), scale = clip / (norm > clip ? norm : clip);
	GRID_LOOP(i, n) y[i] = x[i] * scale;
}

/* ---- the launchers' helpers ---- */

int64_t walk_count(const sc_cu_walk *w)
{
	int64_t n = 1;
	for (int d = 0; d < w->ndim; d++)
		n *= w->dims[d];
	return n;
}

template <typename T, bool BOX>
void copy_as(const void *x, void *y, int64_t base, int64_t n, const sc_cu_walk &w, cudaStream_t s)
{
	strided_copy_k<T, BOX><<<blocks_for(n), THREADS, 0, s>>>((const T *)x, (T *)y, base, n, w);
}

/* es-byte elements moved as unsigned integers of that size: any bits pass */
template <bool BOX>
cudaError_t strided_copy(const void *x, void *y, int64_t base, const sc_cu_walk *w, size_t es, cudaStream_t s)
{
	int64_t n = walk_count(w);
	if (n <= 0)
		return cudaSuccess;
	switch (es) {
	case 1: copy_as<uint8_t, BOX>(x, y, base, n, *w, s); break;
	case 2: copy_as<uint16_t, BOX>(x, y, base, n, *w, s); break;
	case 4: copy_as<uint32_t, BOX>(x, y, base, n, *w, s); break;
	case 8: copy_as<uint64_t, BOX>(x, y, base, n, *w, s); break;
	default: return cudaErrorInvalidValue;
	}
	return cudaGetLastError();
}

template <bool BOX>
cudaError_t strided_scatter(const float *y, float *x, int64_t base, const sc_cu_walk *w, cudaStream_t s)
{
	int64_t n = walk_count(w);
	if (n <= 0)
		return cudaSuccess;
	strided_scatter_k<BOX><<<blocks_for(n), THREADS, 0, s>>>(y, x, base, n, *w);
	return cudaGetLastError();
}

}   /* namespace */

/* ---- launchers ---- */

/* ---- windowed operators (sc_cpu_conv2d's and sc_cpu_pool's twins) ---- */

__global__ void im2col_k(const sc_window g, const float *x, float *col)
{
	int64_t cols = g.ho * g.wo;
	GRID_LOOP(e, g.c * g.kh * g.kw * cols) {
		int64_t row = e / cols, at = e % cols, oh = at / g.wo, ow = at % g.wo;
		int64_t j = row % g.kw, i = row / g.kw % g.kh, ci = row / (g.kw * g.kh);
		int64_t r = oh * g.sh - g.pt + i * g.dh, s = ow * g.sw - g.pl + j * g.dw;
		col[e] = r >= 0 && r < g.h && s >= 0 && s < g.w ? x[(ci * g.h + r) * g.w + s] : 0.0f;
	}
}

__global__ void col2im_k(const sc_window g, const float *col, float *dx)
{
	int64_t cols = g.ho * g.wo;
	GRID_LOOP(e, g.c * g.h * g.w) {
		int64_t s = e % g.w, r = e / g.w % g.h, ci = e / (g.w * g.h);
		float acc = 0;
		for (int64_t i = 0; i < g.kh; i++) {
			int64_t t = r + g.pt - i * g.dh;
			if (t < 0 || t % g.sh || t / g.sh >= g.ho)
				continue;
			for (int64_t j = 0; j < g.kw; j++) {
				int64_t u = s + g.pl - j * g.dw;
				if (u < 0 || u % g.sw || u / g.sw >= g.wo)
					continue;
				acc = __fadd_rn(acc, col[((ci * g.kh + i) * g.kw + j) * cols + t / g.sh * g.wo + u / g.sw]);
			}
		}
		dx[e] = acc;
	}
}

/* A window's rows [r0, r1) and columns [s0, s1) inside x. */
__device__ static void pool_window_d(const sc_window &g, int64_t oh, int64_t ow, int64_t *r0, int64_t *r1,
                                     int64_t *s0, int64_t *s1)
{
	*r0 = oh * g.sh - g.pt;
	*s0 = ow * g.sw - g.pl;
	*r1 = *r0 + g.kh < g.h ? *r0 + g.kh : g.h;
	*s1 = *s0 + g.kw < g.w ? *s0 + g.kw : g.w;
	*r0 = *r0 > 0 ? *r0 : 0;
	*s0 = *s0 > 0 ? *s0 : 0;
}

/* The plane offset of the window's first maximum (a NaN wins); -1: empty. */
__device__ static int64_t pool_argmax_d(const sc_window &g, const float *xp, int64_t oh, int64_t ow)
{
	int64_t r0, r1, s0, s1, best = -1;
	pool_window_d(g, oh, ow, &r0, &r1, &s0, &s1);
	for (int64_t r = r0; r < r1; r++)
		for (int64_t s = s0; s < s1; s++) {
			float v = xp[r * g.w + s];
			if (best < 0 || v > xp[best] || (isnan(v) && !isnan(xp[best])))
				best = r * g.w + s;
		}
	return best;
}

__global__ void pool_k(sc_pool_kind k, const sc_window g, const float *x, float *y)
{
	GRID_LOOP(e, g.n * g.c * g.ho * g.wo) {
		int64_t ow = e % g.wo, oh = e / g.wo % g.ho, p = e / (g.wo * g.ho);
		const float *xp = x + p * g.h * g.w;
		if (k == SC_POOL_MAX) {
			int64_t at = pool_argmax_d(g, xp, oh, ow);
			y[e] = at >= 0 ? xp[at] : 0.0f;
			continue;
		}
		int64_t r0, r1, s0, s1;
		pool_window_d(g, oh, ow, &r0, &r1, &s0, &s1);
		float acc = 0;
		for (int64_t r = r0; r < r1; r++)
			for (int64_t s = s0; s < s1; s++)
				acc = __fadd_rn(acc, xp[r * g.w + s]);
		int64_t count = (r1 - r0) * (s1 - s0);
		y[e] = count > 0 ? __fdiv_rn(acc, (float)count) : 0.0f;
	}
}

/* Each dx element gathers the windows holding it, in the twin's order. */
__global__ void pool_grad_k(sc_pool_kind k, const sc_window g, const float *x, const float *dy, float *dx)
{
	GRID_LOOP(e, g.n * g.c * g.h * g.w) {
		int64_t s = e % g.w, r = e / g.w % g.h, p = e / (g.w * g.h), at = r * g.w + s;
		const float *xp = x ? x + p * g.h * g.w : NULL, *dyp = dy + p * g.ho * g.wo;
		/* the windows whose rows hold r: oh sh - pt <= r < oh sh - pt + kh */
		int64_t oh0 = r + g.pt - g.kh + 1, ow0 = s + g.pl - g.kw + 1;
		oh0 = oh0 > 0 ? (oh0 + g.sh - 1) / g.sh : 0;
		ow0 = ow0 > 0 ? (ow0 + g.sw - 1) / g.sw : 0;
		float acc = 0;
		for (int64_t oh = oh0; oh < g.ho && oh * g.sh - g.pt <= r; oh++)
			for (int64_t ow = ow0; ow < g.wo && ow * g.sw - g.pl <= s; ow++) {
				float d = dyp[oh * g.wo + ow];
				if (k == SC_POOL_MAX) {
					if (pool_argmax_d(g, xp, oh, ow) == at)
						acc = __fadd_rn(acc, d);
					continue;
				}
				int64_t r0, r1, s0, s1;
				pool_window_d(g, oh, ow, &r0, &r1, &s0, &s1);
				acc = __fadd_rn(acc, __fdiv_rn(d, (float)((r1 - r0) * (s1 - s0))));
			}
		dx[e] = acc;
	}
}

extern "C" {

cudaError_t sc_cu_fill(void *dst, sc_dtype dt, int64_t n, double value, cudaStream_t s)
{
	if (n <= 0)
		return cudaSuccess;
	switch (dt) {
	case SC_F32: fill_k<<<blocks_for(n), THREADS, 0, s>>>((float *)dst, n, (float)value); break;
	case SC_I32: fill_k<<<blocks_for(n), THREADS, 0, s>>>((int32_t *)dst, n, (int32_t)llrint(value)); break;
	case SC_I64: fill_k<<<blocks_for(n), THREADS, 0, s>>>((int64_t *)dst, n, (int64_t)llrint(value)); break;
	case SC_BOOL: fill_k<<<blocks_for(n), THREADS, 0, s>>>((uint8_t *)dst, n, (uint8_t)(value != 0)); break;
	case SC_F16: fill_k<<<blocks_for(n), THREADS, 0, s>>>((uint16_t *)dst, n, f16_of(value).bits); break;
	case SC_BF16: fill_k<<<blocks_for(n), THREADS, 0, s>>>((uint16_t *)dst, n, bf16_of(value).bits); break;
	}
	return cudaGetLastError();
}

cudaError_t sc_cu_fill_pad(const void *x, void *y, sc_dtype dt, int64_t outer, int64_t mid, int64_t inner,
                           int64_t real, double value, cudaStream_t s)
{
	int64_t n = outer * mid * inner;
	if (n <= 0)
		return cudaSuccess;
	switch (dt) {
	case SC_F32:
		fill_pad_k<<<blocks_for(n), THREADS, 0, s>>>((const float *)x, (float *)y, n, mid, inner, real,
		                                              (float)value);
		break;
	case SC_I32:
		fill_pad_k<<<blocks_for(n), THREADS, 0, s>>>((const int32_t *)x, (int32_t *)y, n, mid, inner, real,
		                                              (int32_t)llrint(value));
		break;
	case SC_I64:
		fill_pad_k<<<blocks_for(n), THREADS, 0, s>>>((const int64_t *)x, (int64_t *)y, n, mid, inner, real,
		                                              (int64_t)llrint(value));
		break;
	case SC_BOOL:
		fill_pad_k<<<blocks_for(n), THREADS, 0, s>>>((const uint8_t *)x, (uint8_t *)y, n, mid, inner, real,
		                                              (uint8_t)(value != 0));
		break;
	case SC_F16:
		fill_pad_k<<<blocks_for(n), THREADS, 0, s>>>((const uint16_t *)x, (uint16_t *)y, n, mid, inner, real,
		                                              f16_of(value).bits);
		break;
	case SC_BF16:
		fill_pad_k<<<blocks_for(n), THREADS, 0, s>>>((const uint16_t *)x, (uint16_t *)y, n, mid, inner, real,
		                                              bf16_of(value).bits);
		break;
	}
	return cudaGetLastError();
}

cudaError_t sc_cu_triangle(int upper, const void *x, void *y, size_t es, int64_t lead, int64_t rows, int64_t cols,
                           int64_t row0, int64_t col0, int64_t diagonal, cudaStream_t s)
{
	int64_t n = lead * rows * cols, shift = diagonal + row0 - col0;
	if (n <= 0)
		return cudaSuccess;
	if (es == 1)
		triangle_k<<<blocks_for(n), THREADS, 0, s>>>((const uint8_t *)x, (uint8_t *)y, n, upper, rows, cols, shift);
	else if (es == 2)
		triangle_k<<<blocks_for(n), THREADS, 0, s>>>((const uint16_t *)x, (uint16_t *)y, n, upper, rows, cols, shift);
	else if (es == 4)
		triangle_k<<<blocks_for(n), THREADS, 0, s>>>((const uint32_t *)x, (uint32_t *)y, n, upper, rows, cols, shift);
	else if (es == 8)
		triangle_k<<<blocks_for(n), THREADS, 0, s>>>((const uint64_t *)x, (uint64_t *)y, n, upper, rows, cols, shift);
	else
		return cudaErrorInvalidValue;
	return cudaGetLastError();
}

cudaError_t sc_cu_swap01(const void *src, void *dst, int64_t A, int64_t B, int64_t C, size_t es, cudaStream_t s)
{
	int64_t n = A * B * C;
	if (n <= 0)
		return cudaSuccess;
	if (es == 2)
		swap01_k<<<blocks_for(n), THREADS, 0, s>>>((const uint16_t *)src, (uint16_t *)dst, A, B, C);
	else if (es == 4)
		swap01_k<<<blocks_for(n), THREADS, 0, s>>>((const uint32_t *)src, (uint32_t *)dst, A, B, C);
	else if (es == 8)
		swap01_k<<<blocks_for(n), THREADS, 0, s>>>((const uint64_t *)src, (uint64_t *)dst, A, B, C);
	else
		swap01_k<<<blocks_for(n * (int64_t)es), THREADS, 0, s>>>((const uint8_t *)src, (uint8_t *)dst, A, B,
		                                                          C * (int64_t)es);
	return cudaGetLastError();
}

cudaError_t sc_cu_divide(void *buf, sc_dtype dt, int64_t n, int div, cudaStream_t s)
{
	if (n <= 0)
		return cudaSuccess;
	if (dt == SC_F32)
		divide_k<<<blocks_for(n), THREADS, 0, s>>>((float *)buf, n, div);
	else if (dt == SC_I32)
		divide_k<<<blocks_for(n), THREADS, 0, s>>>((int32_t *)buf, n, div);
	else if (dt == SC_I64)
		divide_k<<<blocks_for(n), THREADS, 0, s>>>((int64_t *)buf, n, div);
	else
		return cudaErrorInvalidValue;
	return cudaGetLastError();
}

cudaError_t sc_cu_binary(sc_binop op, const float *a, const float *b, float *y, const sc_cu_walk *w, cudaStream_t s)
{
	int64_t n = walk_count(w);
	binary_k<<<blocks_for(n), THREADS, 0, s>>>(op, a, b, y, n, *w);
	return cudaGetLastError();
}

cudaError_t sc_cu_compare(sc_cmpop op, float p, const float *a, const float *b, uint8_t *y, const sc_cu_walk *w,
                          cudaStream_t s)
{
	int64_t n = walk_count(w);
	compare_k<<<blocks_for(n), THREADS, 0, s>>>(op, p, a, b, y, n, *w);
	return cudaGetLastError();
}

cudaError_t sc_cu_logical(sc_logop op, const uint8_t *a, const uint8_t *b, uint8_t *y, const sc_cu_walk *w,
                          cudaStream_t s)
{
	int64_t n = walk_count(w);
	logical_k<<<blocks_for(n), THREADS, 0, s>>>(op, a, b, y, n, *w);
	return cudaGetLastError();
}

cudaError_t sc_cu_is_finite(const float *x, uint8_t *y, int64_t n, cudaStream_t s)
{
	is_finite_k<<<blocks_for(n), THREADS, 0, s>>>(x, y, n);
	return cudaGetLastError();
}

cudaError_t sc_cu_int_math(sc_intop op, sc_dtype dt, const void *a, const void *b, void *y, const sc_cu_walk *w,
                           cudaStream_t s)
{
	if (dt != SC_I32 && dt != SC_I64)
		return cudaErrorInvalidValue;
	int64_t n = walk_count(w);
	int_math_k<<<blocks_for(n), THREADS, 0, s>>>(op, dt == SC_I64 ? 64 : 32, a, b, y, n, *w);
	return cudaGetLastError();
}

cudaError_t sc_cu_reverse(const float *x, float *y, const sc_cu_walk *d, unsigned rev, cudaStream_t s)
{
	int64_t n = 1;
	for (int k = 0; k < d->ndim; k++)
		n *= d->dims[k];
	reverse_k<<<blocks_for(n), THREADS, 0, s>>>(x, y, n, *d, rev);
	return cudaGetLastError();
}

cudaError_t sc_cu_trace(const float *x, float *y, const sc_diag *g, int grad, cudaStream_t s)
{
	if (grad)
		trace_grad_k<<<blocks_for(g->n), THREADS, 0, s>>>(x, y, *g);
	else
		trace_k<<<blocks_for(g->n), THREADS, 0, s>>>(x, y, *g);
	return cudaGetLastError();
}

cudaError_t sc_cu_binary_grad_full(sc_binop op, const float *a, const float *b, const float *dy, float *ga,
                                   float *gb, const sc_cu_walk *w, cudaStream_t s)
{
	int64_t n = walk_count(w);
	binary_grad_k<<<blocks_for(n), THREADS, 0, s>>>(op, a, b, dy, ga, gb, n, *w);
	return cudaGetLastError();
}

cudaError_t sc_cu_bias_add(const float *x, const float *bias, float *y, int64_t rows, int64_t c, cudaStream_t s)
{
	if (rows * c <= 0)
		return cudaSuccess;
	bias_add_k<<<blocks_for(rows * c), THREADS, 0, s>>>(x, bias, y, rows * c, c);
	return cudaGetLastError();
}

cudaError_t sc_cu_prelu(const float *x, const float *w, float *y, int64_t n, int64_t c, int64_t inner, int64_t wn,
                        cudaStream_t s)
{
	if (n <= 0)
		return cudaSuccess;
	prelu_k<<<blocks_for(n), THREADS, 0, s>>>(x, w, y, n, c, inner, wn);
	return cudaGetLastError();
}

cudaError_t sc_cu_im2col(const sc_window *g, const float *x, float *col, cudaStream_t s)
{
	int64_t n = g->c * g->kh * g->kw * g->ho * g->wo;
	if (n <= 0)
		return cudaSuccess;
	im2col_k<<<blocks_for(n), THREADS, 0, s>>>(*g, x, col);
	return cudaGetLastError();
}

cudaError_t sc_cu_col2im(const sc_window *g, const float *col, float *dx, cudaStream_t s)
{
	int64_t n = g->c * g->h * g->w;
	if (n <= 0)
		return cudaSuccess;
	col2im_k<<<blocks_for(n), THREADS, 0, s>>>(*g, col, dx);
	return cudaGetLastError();
}

cudaError_t sc_cu_pool(sc_pool_kind k, const sc_window *g, const float *x, float *y, cudaStream_t s)
{
	int64_t n = g->n * g->c * g->ho * g->wo;
	if (n <= 0)
		return cudaSuccess;
	pool_k<<<blocks_for(n), THREADS, 0, s>>>(k, *g, x, y);
	return cudaGetLastError();
}

cudaError_t sc_cu_pool_grad(sc_pool_kind k, const sc_window *g, const float *x, const float *dy, float *dx,
                            cudaStream_t s)
{
	int64_t n = g->n * g->c * g->h * g->w;
	if (n <= 0)
		return cudaSuccess;
	pool_grad_k<<<blocks_for(n), THREADS, 0, s>>>(k, *g, x, dy, dx);
	return cudaGetLastError();
}

cudaError_t sc_cu_prelu_grad(const float *x, const float *w, const float *dy, float *dx, float *prod, int64_t n,
                             int64_t c, int64_t inner, int64_t wn, cudaStream_t s)
{
	if (n <= 0)
		return cudaSuccess;
	prelu_grad_k<<<blocks_for(n), THREADS, 0, s>>>(x, w, dy, dx, prod, n, c, inner, wn);
	return cudaGetLastError();
}

cudaError_t sc_cu_unary(sc_unop op, float p, const float *x, float *y, int64_t n, cudaStream_t s)
{
	if (n <= 0)
		return cudaSuccess;
	unary_k<<<blocks_for(n), THREADS, 0, s>>>(op, p, x, y, n);
	return cudaGetLastError();
}

cudaError_t sc_cu_bias_unary(sc_unop op, float p, const float *x, const float *bias, float *pre, float *y,
                             int64_t rows, int64_t c, cudaStream_t s)
{
	if (rows * c <= 0)
		return cudaSuccess;
	bias_unary_k<<<blocks_for(rows * c), THREADS, 0, s>>>(op, p, x, bias, pre, y, rows * c, c);
	return cudaGetLastError();
}

cudaError_t sc_cu_bias_add_residual(const float *x, const float *bias, float *pre, const float *r, float *y,
                                   int64_t rows, int64_t c, cudaStream_t s)
{
	if (rows * c <= 0)
		return cudaSuccess;
	bias_add_residual_k<<<blocks_for(rows * c), THREADS, 0, s>>>(x, bias, pre, r, y, rows * c, c);
	return cudaGetLastError();
}

cudaError_t sc_cu_unary_grad(sc_unop op, float p, const float *t, const float *dy, float *dx, int64_t n,
                             cudaStream_t s)
{
	if (n <= 0)
		return cudaSuccess;
	unary_grad_k<<<blocks_for(n), THREADS, 0, s>>>(op, p, t, dy, dx, n);
	return cudaGetLastError();
}

cudaError_t sc_cu_scale(const float *x, float *y, int64_t n, float alpha, cudaStream_t s)
{
	if (n <= 0)
		return cudaSuccess;
	scale_k<<<blocks_for(n), THREADS, 0, s>>>(x, y, n, alpha);
	return cudaGetLastError();
}

/* rows along the last axis: in registers when they fit (softmax_row_k) */
static cudaError_t softmax_rows(const float *x, const float *scale, const float *mask, const sc_cu_walk *mw,
                                int64_t mlast, float *y, int64_t rows, int64_t len, int is_log, cudaStream_t s)
{
	int b = row_blocks(rows);
	if (len <= 128)
		softmax_row_k<4><<<b, THREADS, 0, s>>>(x, scale, mask, *mw, mlast, y, rows, len, is_log);
	else if (len <= 512)
		softmax_row_k<16><<<b, THREADS, 0, s>>>(x, scale, mask, *mw, mlast, y, rows, len, is_log);
	else if (len <= 1024)
		softmax_row_k<32><<<b, THREADS, 0, s>>>(x, scale, mask, *mw, mlast, y, rows, len, is_log);
	else
		softmax_k<<<b, THREADS, 0, s>>>(x, scale, mask, *mw, mlast, y, rows, len, 1, is_log);
	return cudaGetLastError();
}

cudaError_t sc_cu_softmax(const float *x, const float *scale, float *y, int64_t outer, int64_t len, int64_t inner,
                          int is_log, cudaStream_t s)
{
	sc_cu_walk none;
	memset(&none, 0, sizeof none);
	if (inner == 1)
		return softmax_rows(x, scale, nullptr, &none, 0, y, outer, len, is_log, s);
	softmax_k<<<row_blocks(outer * inner), THREADS, 0, s>>>(x, scale, nullptr, none, 0, y, outer, len, inner, is_log);
	return cudaGetLastError();
}

cudaError_t sc_cu_softmax_masked(const float *x, const float *scale, const float *mask, const sc_cu_walk *mw,
                                 int64_t mlast, float *y, int64_t rows, int64_t len, cudaStream_t s)
{
	return softmax_rows(x, scale, mask, mw, mlast, y, rows, len, 0, s);
}

cudaError_t sc_cu_softmax_grad(const float *y, const float *dy, float *dx, int64_t outer, int64_t len, int64_t inner,
                               int is_log, cudaStream_t s)
{
	int b = row_blocks(outer * inner);
	if (inner == 1 && len <= 128)
		softmax_grad_row_k<4><<<b, THREADS, 0, s>>>(y, dy, dx, outer, len, is_log);
	else if (inner == 1 && len <= 512)
		softmax_grad_row_k<16><<<b, THREADS, 0, s>>>(y, dy, dx, outer, len, is_log);
	else if (inner == 1 && len <= 1024)
		softmax_grad_row_k<32><<<b, THREADS, 0, s>>>(y, dy, dx, outer, len, is_log);
	else
		softmax_grad_k<<<b, THREADS, 0, s>>>(y, dy, dx, outer, len, inner, is_log);
	return cudaGetLastError();
}

cudaError_t sc_cu_where_equal(const float *x, const float *y, const float *dy, float *dx, int64_t n, cudaStream_t s)
{
	if (n <= 0)
		return cudaSuccess;
	where_equal_k<<<blocks_for(n), THREADS, 0, s>>>(x, y, dy, dx, n);
	return cudaGetLastError();
}

cudaError_t sc_cu_select(const uint8_t *cond, const float *a, const float *b, float *y, int64_t n, cudaStream_t s)
{
	if (n <= 0)
		return cudaSuccess;
	select_k<<<blocks_for(n), THREADS, 0, s>>>(cond, a, b, y, n);
	return cudaGetLastError();
}

cudaError_t sc_cu_rotary(int64_t mode, int transpose, const float *x, const float *cos, const float *sin, float *y,
                         const sc_cu_walk *w, cudaStream_t s)
{
	int64_t n = walk_count(w);
	if (n <= 0)
		return cudaSuccess;
	rotary_k<<<blocks_for(n), THREADS, 0, s>>>(mode, transpose, x, cos, sin, y, n, *w);
	return cudaGetLastError();
}

static FaMask fa_mask(const void *mask, int mask_float, const int64_t *mask_dims)
{
	FaMask m = {mask, mask_float, {0, 0, 0}};
	if (mask)
		SC_FA_MASK_STRIDES(mask_dims, m.ms);
	return m;
}

static FaStr fa_str(const int64_t *dims, int layout)
{
	FaStr st;
	sc_fa_strides(layout, dims[1], dims[2], dims[4], st.qs);
	sc_fa_strides(layout, dims[5], dims[3], dims[4], st.ks);
	st.nh = dims[1];
	st.nkv = dims[5];
	return st;
}

cudaError_t sc_cu_flash_attention(const float *q, const float *k, const float *v, const void *mask, int mask_float,
                                  const int64_t *mask_dims, float *o, const int64_t *dims, float scale, int causal,
                                  int layout, cudaStream_t s)
{
	int64_t bh = dims[0] * dims[1], S = dims[2], T = dims[3], D = dims[4], g = dims[5] > 0 ? dims[1] / dims[5] : 0;
	if (bh * S <= 0)
		return cudaSuccess;
	if (g < 1 || dims[1] % dims[5])
		return cudaErrorInvalidValue;   /* the key heads must divide the query heads */
	dim3 grid((unsigned)bh, (unsigned)((S + FA_T - 1) / FA_T));   /* heads on x: up to 2^31 - 1 */
	if (2 * FA_K * D * sizeof(float) > 48 * 1024 - 2 * FA_K * sizeof(float))
		return cudaErrorInvalidValue;   /* D > 190: tiles past the default shared memory */
	flash_fwd_k<<<grid, FA_T, 2 * FA_K * D * sizeof(float), s>>>(q, k, v, fa_mask(mask, mask_float, mask_dims),
	                                                           fa_str(dims, layout), o, NULL, g, S, T, D, scale, causal);
	return cudaGetLastError();
}

size_t sc_cu_flash_attention_grad_scratch(const int64_t *dims)
{
	return (size_t)(2 * dims[0] * dims[1] * dims[2]) * sizeof(float);
}

cudaError_t sc_cu_flash_attention_grad(const float *q, const float *k, const float *v, const void *mask,
                                       int mask_float, const int64_t *mask_dims, const float *o, const float *dout,
                                       float *dq, float *dk, float *dv, const int64_t *dims, float scale, int causal,
                                       int layout, void *scratch, cudaStream_t s)
{
	int64_t bh = dims[0] * dims[1], S = dims[2], T = dims[3], D = dims[4], g = dims[5] > 0 ? dims[1] / dims[5] : 0;
	if (bh * S <= 0 || bh * T <= 0)
		return cudaSuccess;
	if (g < 1 || dims[1] % dims[5])
		return cudaErrorInvalidValue;   /* the key heads must divide the query heads */
	int64_t kvh = dims[0] * dims[5];
	FaMask m = fa_mask(mask, mask_float, mask_dims);
	FaStr st = fa_str(dims, layout);
	float *lse = (float *)scratch, *dd = lse + bh * S;
	size_t tile = 2 * FA_K * D * sizeof(float);
	if (tile > 48 * 1024 - 2 * FA_K * sizeof(float))
		return cudaErrorInvalidValue;   /* D > 190: tiles past the default shared memory */
	dim3 qgrid((unsigned)bh, (unsigned)((S + FA_T - 1) / FA_T)), kgrid((unsigned)kvh, (unsigned)((T + FA_T - 1) / FA_T));
	flash_fwd_k<<<qgrid, FA_T, tile, s>>>(q, k, v, m, st, NULL, lse, g, S, T, D, scale, causal);
	flash_rowdot_k<<<blocks_for(bh * S), THREADS, 0, s>>>(o, dout, st, dd, bh * S, S, D);
	if (dq)
		flash_dq_k<<<qgrid, FA_T, tile, s>>>(q, k, v, m, st, dout, lse, dd, dq, g, S, T, D, scale, causal);
	if (dk || dv)
		flash_dkv_k<<<kgrid, FA_T, tile + 2 * FA_K * sizeof(float), s>>>(q, k, v, m, st, dout, lse, dd, dk, dv, g, S, T,
		                                                                  D, scale, causal);
	return cudaGetLastError();
}

cudaError_t sc_cu_arange(void *y, sc_dtype dt, int64_t n, int64_t first, double start, double step, cudaStream_t s)
{
	if (n <= 0)
		return cudaSuccess;
	if (dt == SC_F32)
		arange_f32_k<<<blocks_for(n), THREADS, 0, s>>>((float *)y, n, first, start, step);
	else if (dt == SC_I32)
		arange_int_k<<<blocks_for(n), THREADS, 0, s>>>((int32_t *)y, n, first, (int64_t)start, (int64_t)step);
	else if (dt == SC_I64)
		arange_int_k<<<blocks_for(n), THREADS, 0, s>>>((int64_t *)y, n, first, (int64_t)start, (int64_t)step);
	else
		return cudaErrorInvalidValue;
	return cudaGetLastError();
}

cudaError_t sc_cu_dropout(const float *x, float *y, const sc_cu_walk *w, int64_t base, uint64_t k, double keep_prob,
                          cudaStream_t s)
{
	int64_t n = walk_count(w);
	if (n <= 0)
		return cudaSuccess;
	float keep = (float)keep_prob;
	dropout_k<<<blocks_for(n), THREADS, 0, s>>>(x, y, n, *w, base, k, keep, (float)(1.0 / (double)keep));
	return cudaGetLastError();
}

cudaError_t sc_cu_dropout_gen_mask(uint8_t *m, const sc_cu_walk *w, int64_t base, uint64_t k, double keep_prob,
                                   cudaStream_t s)
{
	int64_t n = walk_count(w);
	if (n <= 0)
		return cudaSuccess;
	dropout_gen_mask_k<<<blocks_for(n), THREADS, 0, s>>>(m, n, *w, base, k, (float)keep_prob);
	return cudaGetLastError();
}

cudaError_t sc_cu_uniform_real(float *y, const sc_cu_walk *w, int64_t base, uint64_t k, cudaStream_t s)
{
	int64_t n = walk_count(w);
	if (n <= 0)
		return cudaSuccess;
	uniform_real_k<<<blocks_for(n), THREADS, 0, s>>>(y, n, *w, base, k);
	return cudaGetLastError();
}

cudaError_t sc_cu_dropout_do_mask(const float *x, const uint8_t *m, float *y, int64_t n, double keep_prob,
                                  cudaStream_t s)
{
	if (n <= 0)
		return cudaSuccess;
	float keep = (float)keep_prob;
	dropout_do_mask_k<<<blocks_for(n), THREADS, 0, s>>>(x, m, y, n, (float)(1.0 / (double)keep));
	return cudaGetLastError();
}

cudaError_t sc_cu_causal_mask(void *y, sc_dtype dt, int64_t lead, int64_t rows, int64_t cols, int64_t row0,
                              int64_t col0, double fill, cudaStream_t s)
{
	int64_t n = lead * rows * cols;
	if (n <= 0)
		return cudaSuccess;
	if (dt == SC_F32)
		causal_mask_k<<<blocks_for(n), THREADS, 0, s>>>((float *)y, n, rows, cols, row0, col0, (float)fill, 0.0f);
	else if (dt == SC_BOOL)
		causal_mask_k<<<blocks_for(n), THREADS, 0, s>>>((uint8_t *)y, n, rows, cols, row0, col0, (uint8_t)0,
		                                                (uint8_t)1);
	else
		return cudaErrorInvalidValue;
	return cudaGetLastError();
}

cudaError_t sc_cu_eye(void *y, sc_dtype dt, int64_t rows, int64_t cols, int64_t row0, int64_t col0, cudaStream_t s)
{
	int64_t n = rows * cols;
	if (n <= 0)
		return cudaSuccess;
	if (dt == SC_F32)
		eye_k<<<blocks_for(n), THREADS, 0, s>>>((float *)y, n, cols, row0, col0);
	else if (dt == SC_I32)
		eye_k<<<blocks_for(n), THREADS, 0, s>>>((int32_t *)y, n, cols, row0, col0);
	else if (dt == SC_I64)
		eye_k<<<blocks_for(n), THREADS, 0, s>>>((int64_t *)y, n, cols, row0, col0);
	else if (dt == SC_BOOL)
		eye_k<<<blocks_for(n), THREADS, 0, s>>>((uint8_t *)y, n, cols, row0, col0);
	else
		return cudaErrorInvalidValue;
	return cudaGetLastError();
}

cudaError_t sc_cu_lin_space(float *y, int64_t n, int64_t first, float start, float stop, int64_t num, cudaStream_t s)
{
	if (n <= 0)
		return cudaSuccess;
	float step = num > 1 ? (stop - start) / (float)(num - 1) : 0.0f;   /* on the host: as the CPU divides */
	lin_space_k<<<blocks_for(n), THREADS, 0, s>>>(y, n, first, start, step, num);
	return cudaGetLastError();
}

cudaError_t sc_cu_rope(float *y, int is_sin, int64_t lead, int64_t rows, int64_t cols, int64_t row0, int64_t col0,
                       int64_t d, double theta, cudaStream_t s)
{
	int64_t n = lead * rows * cols;
	if (n <= 0)
		return cudaSuccess;
	rope_k<<<blocks_for(n), THREADS, 0, s>>>(y, is_sin, n, rows, cols, row0, col0, d, theta);
	return cudaGetLastError();
}

cudaError_t sc_cu_strided_copy(const void *x, void *y, int64_t base, const sc_cu_walk *w, size_t es, cudaStream_t s)
{
	return strided_copy<false>(x, y, base, w, es, s);
}

cudaError_t sc_cu_strided_scatter(const float *y, float *x, int64_t base, const sc_cu_walk *w, cudaStream_t s)
{
	return strided_scatter<false>(y, x, base, w, s);
}

cudaError_t sc_cu_box_copy(const void *x, void *y, int64_t base, const sc_cu_walk *w, size_t es, cudaStream_t s)
{
	return strided_copy<true>(x, y, base, w, es, s);
}

cudaError_t sc_cu_box_scatter(const float *y, float *x, int64_t base, const sc_cu_walk *w, cudaStream_t s)
{
	return strided_scatter<true>(y, x, base, w, s);
}

cudaError_t sc_cu_arg_reduce(const float *x, int64_t outer, int64_t n, int64_t inner, int is_min, int32_t *idx,
                             float *val, const float *dy, float *dx, cudaStream_t s)
{
	if (outer * inner <= 0)
		return cudaSuccess;
	arg_reduce_k<<<blocks_for(outer * inner), THREADS, 0, s>>>(x, outer, n, inner, is_min, idx, val, dy, dx);
	return cudaGetLastError();
}

cudaError_t sc_cu_topk(const float *x, int64_t rows, int64_t n, int64_t k, float *val, int32_t *idx, const float *dy,
                       float *dx, cudaStream_t s)
{
	if (rows <= 0)
		return cudaSuccess;
	topk_k<<<blocks_for(rows), THREADS, 0, s>>>(x, rows, n, k, val, idx, dy, dx);
	return cudaGetLastError();
}

cudaError_t sc_cu_one_hot(const void *idx, int idx64, int64_t outer, int64_t depth, int64_t inner, int64_t offset,
                          const float *on, const float *off, float *y, cudaStream_t s)
{
	int64_t n = outer * depth * inner;
	if (n <= 0)
		return cudaSuccess;
	one_hot_k<<<blocks_for(n), THREADS, 0, s>>>(idx, idx64, n, depth, inner, offset, on, off, y);
	return cudaGetLastError();
}

cudaError_t sc_cu_gather(const float *table, int64_t outer, int64_t rows, int64_t row, const void *idx, int idx64,
                         int64_t nidx, int64_t offset, int64_t limit, float *y, cudaStream_t s)
{
	int64_t n = outer * nidx * row;
	if (n <= 0)
		return cudaSuccess;
	gather_k<<<blocks_for(n), THREADS, 0, s>>>(table, rows, row, idx, idx64, nidx, n, offset, limit, y);
	return cudaGetLastError();
}

static GatherDDims gather_d_dims(const int64_t *xdims, const int64_t *idims, int ndim, int dim, int64_t offset)
{
	GatherDDims g;
	memset(&g, 0, sizeof g);
	g.ndim = ndim;
	g.dim = dim;
	g.offset = offset;
	memcpy(g.idims, idims, sizeof(int64_t) * (size_t)ndim);
	memcpy(g.xdims, xdims, sizeof(int64_t) * (size_t)ndim);
	return g;
}

cudaError_t sc_cu_gather_d(const float *x, const int64_t *xdims, const void *idx, int idx64, const int64_t *idims,
                           int ndim, int dim, int64_t offset, float *y, cudaStream_t s)
{
	int64_t n = 1;
	for (int d = 0; d < ndim; d++)
		n *= idims[d];
	if (n <= 0)
		return cudaSuccess;
	gather_d_k<<<blocks_for(n), THREADS, 0, s>>>(x, idx, idx64, gather_d_dims(xdims, idims, ndim, dim, offset), n, y);
	return cudaGetLastError();
}

cudaError_t sc_cu_gather_d_grad(const float *dy, const void *idx, int idx64, const int64_t *idims, float *dx,
                                const int64_t *xdims, int ndim, int dim, int64_t offset, cudaStream_t s)
{
	int64_t n = 1, nx = 1;
	for (int d = 0; d < ndim; d++) {
		n *= idims[d];
		nx *= xdims[d];
	}
	cudaError_t e = cudaMemsetAsync(dx, 0, (size_t)nx * sizeof(float), s);
	if (e != cudaSuccess || n <= 0)
		return e;
	gather_d_grad_k<<<blocks_for(n), THREADS, 0, s>>>(dy, idx, idx64, gather_d_dims(xdims, idims, ndim, dim, offset), n,
	                                                  dx);
	return cudaGetLastError();
}

static NdDims nd_dims(const int64_t *start, const int64_t *dims, int n, int64_t *rows)
{
	NdDims g;
	memset(&g, 0, sizeof g);
	g.n = n;
	memcpy(g.dims, dims, sizeof(int64_t) * (size_t)n);
	if (start)
		memcpy(g.start, start, sizeof(int64_t) * (size_t)n);
	*rows = 1;
	for (int d = 0; d < n; d++)
		*rows *= dims[d];
	return g;
}

cudaError_t sc_cu_gather_nd(const float *x, const int64_t *dims, int n, int64_t inner, const void *idx, int idx64,
                            int64_t m, float *y, cudaStream_t s)
{
	int64_t rows, total = m * inner;
	NdDims g = nd_dims(NULL, dims, n, &rows);
	if (total <= 0)
		return cudaSuccess;
	gather_nd_k<<<blocks_for(total), THREADS, 0, s>>>(x, idx, idx64, g, inner, total, y);
	return cudaGetLastError();
}

cudaError_t sc_cu_gather_nd_grad(const float *dy, const void *idx, int idx64, int64_t m, float *dx,
                                 const int64_t *dims, int n, int64_t inner, cudaStream_t s)
{
	int64_t rows;
	NdDims g = nd_dims(NULL, dims, n, &rows);
	cudaError_t e = cudaMemsetAsync(dx, 0, (size_t)(rows * inner) * sizeof(float), s);
	if (e != cudaSuccess || m * inner <= 0)
		return e;
	scatter_nd_k<<<blocks_for(inner), THREADS, 0, s>>>(-1, dy, idx, idx64, g, m, inner, dx);   /* -1: add */
	return cudaGetLastError();
}

cudaError_t sc_cu_tensor_scatter(int op, const float *x, const void *idx, int idx64, int64_t m, const float *upd,
                                 float *y, const int64_t *start, const int64_t *ldims, int n, int64_t inner,
                                 cudaStream_t s)
{
	int64_t rows;
	NdDims g = nd_dims(start, ldims, n, &rows);
	if (y != x) {
		cudaError_t e = cudaMemcpyAsync(y, x, (size_t)(rows * inner) * sizeof(float), cudaMemcpyDeviceToDevice, s);
		if (e != cudaSuccess)
			return e;
	}
	if (m * inner <= 0)
		return cudaSuccess;
	scatter_nd_k<<<blocks_for(inner), THREADS, 0, s>>>(op, upd, idx, idx64, g, m, inner, y);
	return cudaGetLastError();
}

cudaError_t sc_cu_tensor_scatter_grad(int op, int k, const float *dy, const float *x, const float *upd,
                                      const float *y, const void *idx, int idx64, int64_t m, float *dx,
                                      const int64_t *start, const int64_t *ldims, int n, int64_t inner, cudaStream_t s)
{
	int64_t rows, total = m * inner;
	NdDims g = nd_dims(start, ldims, n, &rows);
	bool ties = op == SC_SCATTER_MAX || op == SC_SCATTER_MIN;
	if (k == 0 && ties) {   /* x's: dy where x won, shared by the ties */
		if (rows * inner > 0)
			scatter_x_won_k<<<blocks_for(rows * inner), THREADS, 0, s>>>(dy, x, y, rows * inner, dx);
		if (total > 0)
			scatter_tie_share_k<<<blocks_for(total), THREADS, 0, s>>>(x, upd, y, idx, idx64, g, m, inner, dx);
		return cudaGetLastError();
	}
	if (k == 0 && dx != dy) {   /* x's: dy, the updated slices zeroed (Update), scaled (Mul, Div) */
		cudaError_t e = cudaMemcpyAsync(dx, dy, (size_t)(rows * inner) * sizeof(float), cudaMemcpyDeviceToDevice, s);
		if (e != cudaSuccess)
			return e;
	}
	if (total <= 0 || (k == 0 && (op == SC_SCATTER_ADD || op == SC_SCATTER_SUB)))
		return cudaSuccess;
	if (k == 0 && (op == SC_SCATTER_MUL || op == SC_SCATTER_DIV))
		scatter_nd_k<<<blocks_for(inner), THREADS, 0, s>>>(op, upd, idx, idx64, g, m, inner, dx);
	else
		nd_slices_k<<<blocks_for(total), THREADS, 0, s>>>(op, k, dy, x, upd, y, idx, idx64, g, m, inner, dx);
	return cudaGetLastError();
}

cudaError_t sc_cu_l2_normalize(const float *x, const float *sumsq, float *y, int64_t outer, int64_t n, int64_t inner,
                               double eps, cudaStream_t s)
{
	int64_t rows = outer * inner;
	if (rows <= 0)
		return cudaSuccess;
	l2_normalize_k<<<blocks_for(rows), THREADS, 0, s>>>(x, sumsq, y, rows, n, inner, eps);
	return cudaGetLastError();
}

cudaError_t sc_cu_l2_normalize_grad(const float *x, const float *sumsq, const float *dy, float *dx, float *dsumsq,
                                    int64_t outer, int64_t n, int64_t inner, double eps, cudaStream_t s)
{
	int64_t rows = outer * inner;
	if (rows <= 0)
		return cudaSuccess;
	l2_normalize_grad_k<<<blocks_for(rows), THREADS, 0, s>>>(x, sumsq, dy, dx, dsumsq, rows, n, inner, eps);
	return cudaGetLastError();
}

cudaError_t sc_cu_gather_grad(const float *dy, const void *idx, int idx64, int64_t nidx, int64_t offset,
                              int64_t limit, float *dtable, int64_t outer, int64_t rows, int64_t row, cudaStream_t s)
{
	int64_t n = outer * nidx * row;
	cudaError_t e = cudaMemsetAsync(dtable, 0, (size_t)(outer * rows * row) * sizeof(float), s);
	if (e != cudaSuccess || n <= 0)
		return e;
	gather_grad_k<<<blocks_for(n), THREADS, 0, s>>>(dy, idx, idx64, nidx, n, offset, limit, dtable, rows, row);
	return cudaGetLastError();
}

cudaError_t sc_cu_ew_chain(const sc_cu_chain *ch, int64_t rows, int64_t cols, cudaStream_t s)
{
	if (rows * cols <= 0)
		return cudaSuccess;
	int64_t n = rows * cols, per = (int64_t)EW_THREADS * EW_E, blocks = (n + per - 1) / per;
	size_t values = (size_t)(ch->nin + ch->nsteps) * EW_E * EW_THREADS * sizeof(float);
	ew_chain_k<<<(int)(blocks > 65535 ? 65535 : blocks), EW_THREADS, values, s>>>(*ch, n, cols);
	return cudaGetLastError();
}

cudaError_t sc_cu_round(float *x, sc_dtype dt, int64_t n, cudaStream_t s)
{
	if (n <= 0)
		return cudaSuccess;
	if (dt == SC_F16)
		round_k<f16><<<blocks_for(n), THREADS, 0, s>>>(x, n);
	else
		round_k<bf16><<<blocks_for(n), THREADS, 0, s>>>(x, n);
	return cudaGetLastError();
}

cudaError_t sc_cu_cast(const void *x, sc_dtype x_dt, void *y, sc_dtype y_dt, int64_t n, cudaStream_t s)
{
	if (n <= 0)
		return cudaSuccess;
	switch (x_dt) {
	case SC_F32: return cast_from((const float *)x, y, y_dt, n, s);
	case SC_I32: return cast_from((const int32_t *)x, y, y_dt, n, s);
	case SC_I64: return cast_from((const int64_t *)x, y, y_dt, n, s);
	case SC_BOOL: return cast_from((const uint8_t *)x, y, y_dt, n, s);
	case SC_F16: return cast_from((const f16 *)x, y, y_dt, n, s);
	case SC_BF16: return cast_from((const bf16 *)x, y, y_dt, n, s);
	}
	return cudaErrorInvalidValue;
}

cudaError_t sc_cu_sparse_ce(const float *logits, const void *labels, int label64, float *loss, int64_t n, int64_t c,
                            cudaStream_t s)
{
	cudaError_t e = cudaMemsetAsync(loss, 0, sizeof(float), s);
	if (e != cudaSuccess)
		return e;
	sparse_ce_k<<<row_blocks(n), THREADS, 0, s>>>(logits, labels, label64, loss, n, c);
	return cudaGetLastError();
}

cudaError_t sc_cu_sparse_ce_part(const float *logits, const void *labels, int label64, const float *max,
                                 const float *sum, float *loss, int64_t n, int64_t c, int64_t offset,
                                 cudaStream_t s)
{
	sparse_ce_part_k<<<blocks_for(n), THREADS, 0, s>>>(logits, labels, label64, max, sum, loss, n, c, offset);
	return cudaGetLastError();
}

cudaError_t sc_cu_sparse_ce_part_grad(const float *logits, const void *labels, int label64, const float *max,
                                      const float *sum, const float *dloss, float *dlogits, int64_t n, int64_t c,
                                      int64_t offset, int64_t classes, cudaStream_t s)
{
	sparse_ce_part_grad_k<<<blocks_for(n * c), THREADS, 0, s>>>(logits, labels, label64, max, sum, dloss, dlogits, n,
	                                                          c, offset, classes);
	return cudaGetLastError();
}

cudaError_t sc_cu_sparse_ce_grad(const float *logits, const void *labels, int label64, const float *dloss,
                                 float *dlogits, int64_t n, int64_t c, cudaStream_t s)
{
	sparse_ce_grad_k<<<row_blocks(n), THREADS, 0, s>>>(logits, labels, label64, dloss, dlogits, n, c);
	return cudaGetLastError();
}

cudaError_t sc_cu_softmax_ce(const float *logits, const float *labels, float *loss, int64_t n, int64_t c,
                             cudaStream_t s)
{
	softmax_ce_k<<<row_blocks(n), THREADS, 0, s>>>(logits, labels, loss, n, c);
	return cudaGetLastError();
}

cudaError_t sc_cu_softmax_ce_grad(const float *logits, const float *labels, const float *dloss, float *dlogits,
                                  int64_t n, int64_t c, cudaStream_t s)
{
	softmax_ce_grad_k<<<row_blocks(n), THREADS, 0, s>>>(logits, labels, dloss, dlogits, n, c);
	return cudaGetLastError();
}

cudaError_t sc_cu_softmax_ce_part(const float *logits, const float *labels, const float *max, const float *sum,
                                  float *loss, int64_t n, int64_t c, cudaStream_t s)
{
	softmax_ce_part_k<<<row_blocks(n), THREADS, 0, s>>>(logits, labels, max, sum, loss, n, c);
	return cudaGetLastError();
}

cudaError_t sc_cu_softmax_ce_part_grad(const float *logits, const float *labels, const float *max, const float *sum,
                                       const float *dloss, float *dlogits, int64_t n, int64_t c, cudaStream_t s)
{
	softmax_ce_part_grad_k<<<blocks_for(n * c), THREADS, 0, s>>>(logits, labels, max, sum, dloss, dlogits, n, c);
	return cudaGetLastError();
}

cudaError_t sc_cu_pair_loss(int l1, const float *pred, const float *target, float *loss, int64_t n, cudaStream_t s)
{
	cudaError_t e = cudaMemsetAsync(loss, 0, sizeof(float), s);
	if (e != cudaSuccess)
		return e;
	int b = blocks_for(n);
	pair_loss_k<<<b > 1024 ? 1024 : b, THREADS, 0, s>>>(l1, pred, target, loss, n);
	return cudaGetLastError();
}

cudaError_t sc_cu_pair_loss_grad(int l1, const float *pred, const float *target, const float *dloss, float *dpred,
                                 int64_t n, cudaStream_t s)
{
	if (n <= 0)
		return cudaSuccess;
	pair_loss_grad_k<<<blocks_for(n), THREADS, 0, s>>>(l1, pred, target, dloss, dpred, n);
	return cudaGetLastError();
}

cudaError_t sc_cu_l2_loss(const float *x, float *loss, int64_t n, cudaStream_t s)
{
	cudaError_t e = cudaMemsetAsync(loss, 0, sizeof(float), s);
	if (e != cudaSuccess || n <= 0)
		return e;
	int b = blocks_for(n);
	l2_loss_k<<<b > 1024 ? 1024 : b, THREADS, 0, s>>>(x, loss, n);
	return cudaGetLastError();
}

cudaError_t sc_cu_l2_loss_grad(const float *x, const float *dloss, float *dx, int64_t n, cudaStream_t s)
{
	if (n <= 0)
		return cudaSuccess;
	l2_loss_grad_k<<<blocks_for(n), THREADS, 0, s>>>(x, dloss, dx, n);
	return cudaGetLastError();
}

cudaError_t sc_cu_kldiv_loss(const float *x, const float *y, float *out, int64_t n, int reduce, double scale,
                             cudaStream_t s)
{
	if (!reduce) {
		if (n > 0)
			kldiv_none_k<<<blocks_for(n), THREADS, 0, s>>>(x, y, out, n);
		return cudaGetLastError();
	}
	cudaError_t e = cudaMemsetAsync(out, 0, sizeof(float), s);
	if (e != cudaSuccess || n <= 0)
		return e;
	int b = blocks_for(n);
	kldiv_sum_k<<<b > 1024 ? 1024 : b, THREADS, 0, s>>>(x, y, out, n, (float)scale);
	return cudaGetLastError();
}

cudaError_t sc_cu_kldiv_loss_grad(const float *y, const float *dout, float *dx, int64_t n, int reduce, double scale,
                                  cudaStream_t s)
{
	if (n <= 0)
		return cudaSuccess;
	kldiv_grad_k<<<blocks_for(n), THREADS, 0, s>>>(y, dout, dx, n, reduce, (float)-scale);
	return cudaGetLastError();
}

cudaError_t sc_cu_lerp(const float *start, const float *end, const float *w, float *y, const sc_cu_walk *sw,
                       const sc_cu_walk *ww, cudaStream_t s)
{
	int64_t n = walk_count(sw);
	lerp_k<<<blocks_for(n), THREADS, 0, s>>>(start, end, w, y, n, *sw, *ww);
	return cudaGetLastError();
}

cudaError_t sc_cu_lerp_grad_full(int k, const float *start, const float *end, const float *w, const float *dy,
                                 float *g, const sc_cu_walk *sw, const sc_cu_walk *ww, cudaStream_t s)
{
	int64_t n = walk_count(sw);
	lerp_grad_k<<<blocks_for(n), THREADS, 0, s>>>(k, start, end, w, dy, g, n, *sw, *ww);
	return cudaGetLastError();
}

cudaError_t sc_cu_masked_fill(const float *x, const uint8_t *m, const float *v, float *y, const sc_cu_walk *w,
                              cudaStream_t s)
{
	int64_t n = walk_count(w);
	masked_fill_k<<<blocks_for(n), THREADS, 0, s>>>(x, m, v, y, n, *w);
	return cudaGetLastError();
}

cudaError_t sc_cu_resize(int bilinear, const float *x, float *y, int64_t nc, int64_t in_h, int64_t in_w, int64_t out_h,
                         int64_t out_w, int align_corners, int half_pixel_centers, cudaStream_t s)
{
	int64_t n = nc * out_h * out_w;
	resize_k<<<blocks_for(n), THREADS, 0, s>>>(bilinear, x, y, n, in_h, in_w, out_h, out_w, align_corners,
	                                            half_pixel_centers);
	return cudaGetLastError();
}

cudaError_t sc_cu_resize_grad(int bilinear, const float *dy, float *dx, int64_t nc, int64_t in_h, int64_t in_w,
                              int64_t out_h, int64_t out_w, int align_corners, int half_pixel_centers, cudaStream_t s)
{
	int64_t n = nc * out_h * out_w;
	cudaError_t e = cudaMemsetAsync(dx, 0, (size_t)(nc * in_h * in_w) * sizeof *dx, s);
	if (e != cudaSuccess)
		return e;
	resize_grad_k<<<blocks_for(n), THREADS, 0, s>>>(bilinear, dy, dx, n, in_h, in_w, out_h, out_w, align_corners,
	                                                 half_pixel_centers);
	return cudaGetLastError();
}

cudaError_t sc_cu_masked_fill_grad_full(int k, const uint8_t *m, const float *dy, float *g, const sc_cu_walk *w,
                                        cudaStream_t s)
{
	int64_t n = walk_count(w);
	masked_fill_grad_k<<<blocks_for(n), THREADS, 0, s>>>(k, m, dy, g, n, *w);
	return cudaGetLastError();
}

cudaError_t sc_cu_sgd(float *p, const float *g, float *accum, int64_t n, float lr, float mu, float damp, float wd,
                      int nesterov, int first, cudaStream_t s)
{
	if (n <= 0)
		return cudaSuccess;
	sgd_k<<<blocks_for(n), THREADS, 0, s>>>(p, g, accum, n, lr, mu, damp, wd, nesterov, first);
	return cudaGetLastError();
}

cudaError_t sc_cu_momentum(float *p, const float *g, float *v, int64_t n, float lr, float mu, float wd, int nesterov,
                           cudaStream_t s)
{
	if (n <= 0)
		return cudaSuccess;
	momentum_k<<<blocks_for(n), THREADS, 0, s>>>(p, g, v, n, lr, mu, wd, nesterov);
	return cudaGetLastError();
}

cudaError_t sc_cu_adam(float *p, const float *g, float *m, float *v, int64_t n, float lr_t, float b1, float b2,
                       float eps, float wd, cudaStream_t s)
{
	if (n <= 0)
		return cudaSuccess;
	adam_k<<<blocks_for(n), THREADS, 0, s>>>(p, g, m, v, n, lr_t, b1, b2, eps, wd);
	return cudaGetLastError();
}

cudaError_t sc_cu_adam_weight_decay(float *p, const float *g, float *m, float *v, int64_t n, float lr, float b1,
                                    float b2, float eps, float wd, cudaStream_t s)
{
	if (n <= 0)
		return cudaSuccess;
	adam_weight_decay_k<<<blocks_for(n), THREADS, 0, s>>>(p, g, m, v, n, lr, b1, b2, eps, wd);
	return cudaGetLastError();
}

cudaError_t sc_cu_lamb_norms(const float *p, const float *g, const float *m, const float *v, int64_t n, float b1,
                             float b2, float c1, float c2, float eps, float wd, float *out, cudaStream_t s)
{
	cudaError_t e = cudaMemsetAsync(out, 0, 2 * sizeof(float), s);
	if (n <= 0 || e != cudaSuccess)
		return e;
	int b = blocks_for(n);
	lamb_norms_k<<<b > 1024 ? 1024 : b, THREADS, 0, s>>>(p, g, m, v, n, b1, b2, c1, c2, eps, wd, out);
	return cudaGetLastError();
}

cudaError_t sc_cu_lamb(float *p, const float *g, float *m, float *v, int64_t n, float lr, float b1, float b2,
                       float c1, float c2, float eps, float wd, const float *norms, cudaStream_t s)
{
	if (n <= 0)
		return cudaSuccess;
	lamb_k<<<blocks_for(n), THREADS, 0, s>>>(p, g, m, v, n, lr, b1, b2, c1, c2, eps, wd, norms);
	return cudaGetLastError();
}

cudaError_t sc_cu_sum_squares(const float *const *xs, const int64_t *ns, int nx, float *out, cudaStream_t s)
{
	cudaError_t e = cudaMemsetAsync(out, 0, sizeof(float), s);
	for (int k = 0; k < nx && e == cudaSuccess; k++) {
		if (ns[k] <= 0)
			continue;
		int b = blocks_for(ns[k]);
		sum_squares_k<<<b > 1024 ? 1024 : b, THREADS, 0, s>>>(xs[k], ns[k], out);
		e = cudaGetLastError();
	}
	return e;
}

cudaError_t sc_cu_clip_by_norm(const float *x, float *y, int64_t n, const float *sqnorm, float clip, cudaStream_t s)
{
	if (n <= 0)
		return cudaSuccess;
	clip_by_norm_k<<<blocks_for(n), THREADS, 0, s>>>(x, y, n, sqnorm, clip);
	return cudaGetLastError();
}

cudaError_t sc_cu_batch_norm(const float *x, const float *scale, const float *bias, float *moving_mean,
                             float *moving_var, const float *batch_mean, const float *batch_var, float *y, int64_t n,
                             int64_t c, int64_t hw, double eps, double momentum, int64_t count, int mode,
                             cudaStream_t s)
{
	if (c <= 0)
		return cudaSuccess;
	batch_norm_k<<<blocks_for(c), THREADS, 0, s>>>(x, scale, bias, moving_mean, moving_var, batch_mean, batch_var, y,
	                                                n, c, hw, eps, momentum, count, mode);
	return cudaGetLastError();
}

cudaError_t sc_cu_batch_norm_grad(const float *x, const float *dy, const float *scale, const float *mean,
                                  const float *var, float *dx, float *dscale, float *dbias, float *dmean, float *dvar,
                                  int64_t n, int64_t c, int64_t hw, double eps, cudaStream_t s)
{
	if (c <= 0)
		return cudaSuccess;
	batch_norm_grad_k<<<blocks_for(c), THREADS, 0, s>>>(x, dy, scale, mean, var, dx, dscale, dbias, dmean, dvar, n, c,
	                                                     hw, eps);
	return cudaGetLastError();
}

cudaError_t sc_cu_unsorted_segment(int op, const float *x, const void *ids, int ids64, float *y, int64_t rows,
                                   int64_t inner, int64_t segments, float big, cudaStream_t s)
{
	if (segments * inner <= 0)
		return cudaSuccess;
	unsorted_segment_k<<<blocks_for(segments * inner), THREADS, 0, s>>>(op, x, ids, ids64, y, rows, inner, segments,
	                                                                    big);
	return cudaGetLastError();
}

cudaError_t sc_cu_unsorted_segment_stat(int op, const float *x, const void *ids, int ids64, const float *y, int k,
                                        float *stat, int64_t rows, int64_t inner, int64_t segments, cudaStream_t s)
{
	if (segments * inner <= 0)
		return cudaSuccess;
	unsorted_segment_stat_k<<<blocks_for(segments * inner), THREADS, 0, s>>>(op, x, ids, ids64, y, k, stat, rows,
	                                                                         inner, segments);
	return cudaGetLastError();
}

cudaError_t sc_cu_unsorted_segment_grad(int op, const float *x, const void *ids, int ids64, const float *y,
                                        const float *dy, const float *stat0, const float *stat1, float *dx,
                                        int64_t rows, int64_t inner, int64_t segments, cudaStream_t s)
{
	if (rows * inner <= 0)
		return cudaSuccess;
	unsorted_segment_grad_k<<<blocks_for(rows * inner), THREADS, 0, s>>>(op, x, ids, ids64, y, dy, stat0, stat1, dx,
	                                                                     rows, inner, segments);
	return cudaGetLastError();
}

}   /* extern "C" */
