/* reduce.cu: the kernels that sum across rows, and their extern "C"
 * launchers: reductions over axes, column sums, and the normalizers, whose
 * dgamma and dbeta are column sums.
 *
 * A column sum adds up an (A, R, C) view over R: blocks of 32 columns by 8
 * row lanes each sum a chunk of the rows, and when there is more than one
 * chunk a second kernel adds the chunks' partial rows, from device scratch
 * the caller passes (sized by the _scratch functions), in order. Every sum
 * here goes in a fixed order, so results repeat from run to run. A reduction
 * takes that path when its reduced dims are one run of x's dims with more
 * than one element after it; otherwise each output gets a thread, a warp or
 * a block, by the length of the reduced range, which walks the reduced dims
 * with the plan's strides. The normalizers give each row one warp; the rows'
 * statistics go to scratch for dgamma's and dbeta's column sums. The twins
 * are in cpu/kernels.c; cuda_twins.c compares them. */
#include <stdint.h>

#include "cuda_kernels.h"
#include "kernels.cuh"

namespace {

/* the offset of element i of n dims walked with these strides */
__device__ int64_t strided_offset(int64_t i, const int64_t *dims, const int64_t *stride, int n)
{
	int64_t off = 0;
	for (int d = n - 1; d >= 0; d--) {
		off += (i % dims[d]) * stride[d];
		i /= dims[d];
	}
	return off;
}

/* output o's first element, and reduced element r's offset from it */
__device__ int64_t plan_base(int64_t o, const sc_cu_plan &p)
{
	return strided_offset(o, p.kdims, p.kstride, p.nk);
}

__device__ int64_t plan_red(int64_t r, const sc_cu_plan &p)
{
	return strided_offset(r, p.rdims, p.rstride, p.nr);
}

int64_t plan_count(const sc_cu_plan &p, int64_t *nred)
{
	int64_t n = 1, r = 1;
	for (int d = 0; d < p.nk; d++)
		n *= p.kdims[d];
	for (int d = 0; d < p.nr; d++)
		r *= p.rdims[d];
	*nred = r;
	return n;
}

/* ---- reductions ---- */

/* a and b combined as kind reduces: their max, their min, or their sum (a
 * mean's too: divided at the end); start(kind) is its identity, which
 * combined with any v gives v */
__device__ inline float combine(sc_reduce_kind kind, float a, float b)
{
	return kind == SC_R_MAX ? max_nan(a, b) : kind == SC_R_MIN ? min_nan(a, b) : a + b;
}

__device__ inline float start(sc_reduce_kind kind)
{
	return kind == SC_R_MAX ? -INFINITY : kind == SC_R_MIN ? INFINITY : 0.0f;
}

/* v's sum (max, min as kind says) over a group of G threads (1, 32 or the
 * block), in every thread of the group, in a fixed order; every thread of
 * the block must call it. */
template <int G>
__device__ float group_reduce(float v, sc_reduce_kind kind)
{
	if constexpr (G == 1)
		return v;
	v = kind == SC_R_MAX ? warp_max(v) : kind == SC_R_MIN ? warp_min(v) : warp_sum(v);
	if constexpr (G > 32) {
		__shared__ float part[G / 32];
		if (threadIdx.x % 32 == 0)
			part[threadIdx.x / 32] = v;
		__syncthreads();
		v = part[0];
		for (int k = 1; k < G / 32; k++)
			v = combine(kind, v, part[k]);
		__syncthreads();   /* part is written again by the next call */
	}
	return v;
}

/* G threads per output walk its reduced range, r = g, g + G, ...; contig:
 * the output's reduced elements are x[o nred ..], the plan's walk else. */
template <int G>
__global__ void reduce_k(sc_reduce_kind kind, const float *x, float *y, int64_t nout, int64_t nred, sc_cu_plan p,
                         int contig)
{
	int g = threadIdx.x % G;
	for (int64_t o = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / G; o < nout;
	     o += (int64_t)gridDim.x * blockDim.x / G) {
		int64_t base = contig ? o * nred : plan_base(o, p);
		float acc = start(kind);
		for (int64_t r = g; r < nred; r += G) {
			float v = x[base + (contig ? r : plan_red(r, p))];
			acc = combine(kind, acc, v);
		}
		acc = group_reduce<G>(acc, kind);
		if (g == 0)
			y[o] = kind == SC_R_MEAN ? acc / (float)nred : acc;
	}
}

/* ---- column sums: an (A, R, C) view summed over R ---- */

const int CX = 32, CY = 8;   /* a column block: 32 columns by 8 row lanes */

/* What a column sum adds: NV values of element i, row r of the view. */
struct PlainSrc {   /* x itself */
	static const int NV = 1;
	const float *x;
	__device__ void get(int64_t i, int64_t, float *v) const { v[0] = x[i]; }
};

/* dgamma's and dbeta's terms: dy xhat and dy, from the row statistics
 * norm_grad_k kept (mean, then rstd, for each of rows); viewed as (n / np,
 * np), so element i is parameter i % np's, of norm row i / cols */
struct NormSrc {
	static const int NV = 2;
	const float *dy, *x, *stats;
	int64_t rows, cols, np;
	__device__ void get(int64_t i, int64_t r, float *v) const
	{
		int64_t nr = np == cols ? r : i / cols;
		float xh = (x[i] - stats[nr]) * stats[rows + nr];
		v[0] = dy[i] * xh;
		v[1] = dy[i];
	}
};

/* norm_part_grad's: dy (x - mean) rstd and dy, the statistics given */
struct NormPartSrc {
	static const int NV = 2;
	const float *dy, *x, *mean, *var;
	float eps;
	int centered;
	__device__ void get(int64_t i, int64_t r, float *v) const
	{
		float rstd = rsqrtf(var[r] + eps), m = centered ? mean[r] : 0.0f, xc = x[i] - m;
		v[0] = dy[i] * xc * rstd;
		v[1] = dy[i];
	}
};

struct ColOut {
	float *p[2];   /* each value's (A, C) result; NULL: not wanted */
};

/* Block (x, y, z): columns 32x.., rows chunk y (chunk long), batches z, z +
 * gridDim.z, ...; thread (tx, ty) sums rows ty, ty + CY, ... of its column,
 * then ty 0 adds the CY sums in order and writes them to dst: the result
 * (nchunk 1) or row (a nchunk + y) of the partials. */
template <typename Src>
__global__ void colsum_k(Src src, sc_reduce_kind kind, int mean, int64_t A, int64_t R, int64_t C, int64_t chunk,
                         ColOut dst)
{
	__shared__ float part[Src::NV][CY][CX];
	int tx = threadIdx.x, ty = threadIdx.y;
	int64_t c = blockIdx.x * (int64_t)CX + tx, r0 = blockIdx.y * chunk, r1 = r0 + chunk < R ? r0 + chunk : R;
	for (int64_t a = blockIdx.z; a < A; a += gridDim.z) {
		float acc[Src::NV], v[Src::NV];
		for (int k = 0; k < Src::NV; k++)
			acc[k] = start(kind);
		if (c < C) {
#pragma unroll 4
			for (int64_t r = r0 + ty; r < r1; r += CY) {
				src.get((a * R + r) * C + c, r, v);
				for (int k = 0; k < Src::NV; k++)
					acc[k] = combine(kind, acc[k], v[k]);
			}
		}
		for (int k = 0; k < Src::NV; k++)
			part[k][ty][tx] = acc[k];
		__syncthreads();
		for (int k = 0; ty == 0 && c < C && k < Src::NV; k++) {
			float s = part[k][0][tx];
			for (int t = 1; t < CY; t++)
				s = combine(kind, s, part[k][t][tx]);
			if (dst.p[k])
				dst.p[k][(a * gridDim.y + blockIdx.y) * C + c] = mean ? s / (float)R : s;
		}
		__syncthreads();
	}
}

/* out[k][a C + c] = the nchunk partials of (a, c) combined in order */
__global__ void colsum_finish_k(const float *part, int nv, sc_reduce_kind kind, int mean, int64_t A, int64_t R,
                                int64_t C, int64_t nchunk, ColOut out)
{
	GRID_LOOP(i, nv * A * C) {
		int64_t k = i / (A * C), ac = i % (A * C);
		if (!out.p[k])
			continue;
		const float *q = part + (k * A + ac / C) * nchunk * C + ac % C;
		float s = q[0];
		for (int64_t t = 1; t < nchunk; t++)
			s = combine(kind, s, q[t * C]);
		out.p[k][ac] = mean ? s / (float)R : s;
	}
}

/* chunks of R for an (A, R, C) column sum: about 1024 blocks in all, each
 * thread at least 16 rows */
int64_t col_chunks(int64_t A, int64_t R, int64_t C)
{
	int64_t tiles = A * ((C + CX - 1) / CX), want = (1024 + tiles - 1) / tiles, most = R / (CY * 16);
	int64_t n = want < most ? want : most;
	n = n < 1 ? 1 : n > 65535 ? 65535 : n;
	return (R + (R + n - 1) / n - 1) / ((R + n - 1) / n);   /* no empty chunk */
}

size_t col_scratch(int nv, int64_t A, int64_t R, int64_t C)
{
	int64_t n = R > 0 ? col_chunks(A, R, C) : 1;
	return n > 1 ? (size_t)(nv * A * n * C) * sizeof(float) : 0;
}

/* src summed (max, min as kind says) over the R of its (A, R, C) view into
 * out, in two passes when R is long: the partials in scratch (col_scratch
 * bytes); mean divides by R at the end */
template <typename Src>
cudaError_t colsum(Src src, sc_reduce_kind kind, int mean, int64_t A, int64_t R, int64_t C, ColOut out, void *scratch,
                   cudaStream_t s)
{
	int64_t n = col_chunks(A, R, C), chunk = (R + n - 1) / n;
	ColOut dst = out;
	for (int k = 0; k < Src::NV && n > 1; k++)
		dst.p[k] = (float *)scratch + k * A * n * C;
	dim3 grid((unsigned)((C + CX - 1) / CX), (unsigned)n, (unsigned)(A < 65535 ? A : 65535));
	colsum_k<<<grid, dim3(CX, CY), 0, s>>>(src, kind, n > 1 ? 0 : mean, A, R, C, chunk, dst);
	if (n > 1)
		colsum_finish_k<<<blocks_for(Src::NV * A * C), THREADS, 0, s>>>((const float *)scratch, Src::NV, kind, mean, A,
		                                                                 R, C, n, out);
	return cudaGetLastError();
}

/* Whether p reduces x viewed as (A, R, C) over R: its reduced dims (those
 * longer than 1) one run of x's dims, C the elements after it. */
bool plan_run(const sc_cu_plan &p, int64_t *A, int64_t *R, int64_t *C)
{
	int64_t r = 1, lo = 1, hi = 1, nout = 1;
	for (int d = 0; d < p.nr; d++)
		if (p.rdims[d] > 1) {
			lo = r == 1 || p.rstride[d] < lo ? p.rstride[d] : lo;
			hi = p.rstride[d] * p.rdims[d] > hi ? p.rstride[d] * p.rdims[d] : hi;
			r *= p.rdims[d];
		}
	for (int d = 0; d < p.nk; d++)
		nout *= p.kdims[d];
	*R = r, *C = lo, *A = nout / lo;
	return hi == lo * r;
}

__global__ void count_equal_k(const float *x, const float *y, float *count, int64_t nout, int64_t nred,
                              sc_cu_plan p)
{
	GRID_LOOP(o, nout) {
		int64_t base = plan_base(o, p);
		int64_t ties = 0;
		for (int64_t r = 0; r < nred; r++)
			ties += x[base + plan_red(r, p)] == y[o];
		count[o] = (float)ties;
	}
}

__global__ void reduce_max_grad_k(const float *x, const float *y, const float *dy, const float *count, float *dx,
                                  int64_t nout, int64_t nred, sc_cu_plan p)
{
	GRID_LOOP(o, nout) {
		int64_t base = plan_base(o, p);
		float ties = 0;
		if (count)
			ties = count[o];
		else
			for (int64_t r = 0; r < nred; r++)
				ties += x[base + plan_red(r, p)] == y[o];
		float share = ties > 0 ? dy[o] / ties : 0.0f;
		for (int64_t r = 0; r < nred; r++) {
			int64_t j = base + plan_red(r, p);
			dx[j] = x[j] == y[o] ? share : 0;
		}
	}
}

/* ---- ReduceProd (its statistics and gradient), ReduceAll and ReduceAny: a
 * thread an output, products in double, as the CPU twins ---- */

/* k -1: the product; 0: the product of the nonzero elements; 1: how many are zero */
__global__ void prod_k(const float *x, int k, float *y, int64_t nout, int64_t nred, sc_cu_plan p)
{
	GRID_LOOP(o, nout) {
		int64_t base = plan_base(o, p), zeros = 0;
		double acc = 1;
		for (int64_t r = 0; r < nred; r++) {
			float v = x[base + plan_red(r, p)];
			if (k < 0 || v != 0)
				acc *= v;
			else
				zeros++;
		}
		y[o] = (float)(k == 1 ? (double)zeros : acc);
	}
}

__global__ void prod_grad_k(const float *x, const float *dy, const float *prod, const float *zeros, float *dx,
                            int64_t nout, int64_t nred, sc_cu_plan p)
{
	GRID_LOOP(o, nout) {
		int64_t base = plan_base(o, p), z = 0;
		double P = 1;
		if (prod)
			P = prod[o], z = (int64_t)zeros[o];
		else
			for (int64_t r = 0; r < nred; r++) {
				float v = x[base + plan_red(r, p)];
				if (v != 0)
					P *= v;
				else
					z++;
			}
		for (int64_t r = 0; r < nred; r++) {
			int64_t j = base + plan_red(r, p), others = z - (x[j] == 0);
			dx[j] = others ? 0.0f : (float)(dy[o] * (x[j] == 0 ? P : P / x[j]));
		}
	}
}

__global__ void reduce_bool_k(int any, const uint8_t *x, uint8_t *y, int64_t nout, int64_t nred, sc_cu_plan p)
{
	GRID_LOOP(o, nout) {
		int64_t base = plan_base(o, p);
		uint8_t acc = (uint8_t)!any;
		for (int64_t r = 0; r < nred && acc == (uint8_t)!any; r++)
			if ((x[base + plan_red(r, p)] != 0) == any)
				acc = (uint8_t)any;
		y[o] = acc;
	}
}

/* ---- the normalizers (SC_NORM_TABLE): one warp per row; centered 0 takes
 * the mean as 0, so the second sum is the mean square ---- */

__device__ void row_stats(const float *xr, int64_t cols, int centered, float eps, int lane, float *mean, float *rstd)
{
	float s = 0, v = 0, m = 0;
	if (centered) {
		for (int64_t j = lane; j < cols; j += 32)
			s += xr[j];
		m = warp_sum(s) / (float)cols;
	}
	for (int64_t j = lane; j < cols; j += 32)
		v += (xr[j] - m) * (xr[j] - m);
	*mean = m;
	*rstd = rsqrtf(warp_sum(v) / (float)cols + eps);
}

/* beta may be NULL */
__global__ void norm_k(int centered, const float *x, const float *gamma, const float *beta, float *y, int64_t rows,
                       int64_t cols, int64_t np, float eps)
{
	int lane = threadIdx.x % 32;
	ROW_LOOP(r, rows) {
		float mean, rstd;
		row_stats(x + r * cols, cols, centered, eps, lane, &mean, &rstd);
		for (int64_t j = lane; j < cols; j += 32) {
			int64_t i = r * cols + j, p = i % np;
			y[i] = (x[i] - mean) * rstd * gamma[p] + (beta ? beta[p] : 0.0f);
		}
	}
}

/* dx, and each row's mean and rstd in stats (NULL: not wanted) for
 * dgamma's and dbeta's column sums (NormSrc) */
__global__ void norm_grad_k(int centered, const float *dy, const float *x, const float *gamma, float *dx,
                            float *stats, int64_t rows, int64_t cols, int64_t np, float eps)
{
	int lane = threadIdx.x % 32;
	ROW_LOOP(r, rows) {
		float mean, rstd, m1 = 0, m2 = 0;
		row_stats(x + r * cols, cols, centered, eps, lane, &mean, &rstd);
		if (stats && lane == 0) {
			stats[r] = mean;
			stats[rows + r] = rstd;
		}
		for (int64_t j = lane; dx && j < cols; j += 32) {
			int64_t i = r * cols + j, p = i % np;
			float xh = (x[i] - mean) * rstd, g = dy[i] * gamma[p];
			m1 += g;
			m2 += g * xh;
		}
		m1 = centered ? warp_sum(m1) / (float)cols : 0.0f;   /* centered is the same in every lane */
		m2 = warp_sum(m2) / (float)cols;
		for (int64_t j = lane; dx && j < cols; j += 32) {
			int64_t i = r * cols + j, p = i % np;
			float xh = (x[i] - mean) * rstd, g = dy[i] * gamma[p];
			dx[i] = rstd * (g - m1 - xh * m2);
		}
	}
}

/* mean NULL when not centered; beta may be NULL */
__global__ void norm_part_k(int centered, const float *x, const float *gamma, const float *beta, const float *mean,
                            const float *var, float *y, int64_t rows, int64_t cols, float eps)
{
	GRID_LOOP(i, rows * cols) {
		int64_t r = i / cols, j = i % cols;
		float m = centered ? mean[r] : 0.0f;
		y[i] = (x[i] - m) * rsqrtf(var[r] + eps) * gamma[j] + (beta ? beta[j] : 0.0f);
	}
}

/* mean and dmean NULL when not centered; dgamma and dbeta are column sums
 * (NormPartSrc) */
__global__ void norm_part_grad_k(int centered, const float *dy, const float *x, const float *gamma, const float *mean,
                                 const float *var, float *dx, float *dmean, float *dvar, int64_t rows, int64_t cols,
                                 float eps)
{
	int lane = threadIdx.x % 32;
	ROW_LOOP(r, rows) {
		float rstd = rsqrtf(var[r] + eps), m = centered ? mean[r] : 0.0f, s1 = 0, s2 = 0;
		for (int64_t j = lane; j < cols; j += 32) {
			int64_t i = r * cols + j;
			float xc = x[i] - m, g = dy[i] * gamma[j];
			s1 += g;
			s2 += g * xc;
			if (dx)
				dx[i] = g * rstd;
		}
		s1 = warp_sum(s1);
		s2 = warp_sum(s2);
		if (lane == 0 && dmean)
			dmean[r] = -rstd * s1;
		if (lane == 0 && dvar)
			dvar[r] = -0.5f * rstd * rstd * rstd * s2;
	}
}

/* CumSum (prod 0) and CumProd (prod 1): a thread a line of the scan, as
 * the CPU twin (sc_cpu_cumsum_part) computes it, in Float32. A split axis's
 * piece starts from the carried totals of the slices before it. */
__device__ int64_t scan_first(int64_t l, int64_t n, int64_t inner, int reverse, int64_t *step)
{
	*step = reverse ? -inner : inner;
	return (l / inner) * n * inner + l % inner + (reverse ? (n - 1) * inner : 0);
}

__device__ float scan_carry(int prod, const float *g, int64_t l, int64_t k, int64_t inner, int64_t r, int reverse,
                            int64_t skip)
{
	float c = prod ? 1.0f : 0.0f;
	if (!g)
		return c;
	const float *gl = g + (l / inner) * k * inner + l % inner;
	for (int64_t q = reverse ? r + 1 : 0; q < (reverse ? k : r); q++)
		if (q != skip)
			c = prod ? c * gl[q * inner] : c + gl[q * inner];
	return c;
}

__global__ void cumsum_k(int prod, const float *x, const float *totals, float *y, int64_t r, int64_t k, int64_t lines,
                         int64_t n, int64_t inner, int exclusive, int reverse)
{
	int64_t l = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
	if (l >= lines)
		return;
	int64_t step, f = scan_first(l, n, inner, reverse, &step);
	float acc = scan_carry(prod, totals, l, k, inner, r, reverse, -1);
	for (int64_t t = 0; t < n; t++) {
		float v = x[f + t * step];
		if (exclusive)
			y[f + t * step] = acc;
		acc = prod ? acc * v : acc + v;
		if (!exclusive)
			y[f + t * step] = acc;
	}
}

/* The gradient (sc_cpu_cumsum_part_grad): dx, CumProd's without division;
 * dtotals, this rank's term for each carried slice's total. */
__global__ void cumsum_grad_k(int prod, const float *x, const float *totals, const float *dy, float *dx, float *dtotals,
                              int64_t r, int64_t k, int64_t lines, int64_t n, int64_t inner, int exclusive,
                              int reverse)
{
	int64_t l = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
	if (l >= lines)
		return;
	int64_t step, f = scan_first(l, n, inner, reverse, &step);
	float c = totals ? scan_carry(prod, totals, l, k, inner, r, reverse, -1) : 1.0f;
	if (dx && prod) {
		float b = 0, next_dy = 0, next_x = 0;
		for (int64_t t = n - 1; t >= 0; t--) {
			float g = dy[f + t * step] * c;
			b = exclusive ? (t == n - 1 ? 0 : next_dy + next_x * b) : (t == n - 1 ? g : g + next_x * b);
			next_dy = g;
			next_x = x[f + t * step];
			dx[f + t * step] = b;
		}
		float a = 1;
		for (int64_t t = 0; t < n; t++) {
			dx[f + t * step] *= a;
			a *= x[f + t * step];
		}
	} else if (dx) {   /* the other way's scan of dy */
		float acc = 0;
		for (int64_t t = n - 1; t >= 0; t--) {
			float v = dy[f + t * step];
			if (exclusive)
				dx[f + t * step] = acc;
			acc += v;
			if (!exclusive)
				dx[f + t * step] = acc;
		}
	}
	if (!dtotals)
		return;
	float sum = 0, acc = prod ? 1.0f : 0.0f;
	for (int64_t t = 0; t < n; t++) {
		float v = x ? x[f + t * step] : 0, before = acc;
		acc = prod ? acc * v : acc + v;
		sum += dy[f + t * step] * (prod ? (exclusive ? before : acc) : 1.0f);
	}
	float *dg = dtotals + (l / inner) * k * inner + l % inner;
	for (int64_t q = 0; q < k; q++) {
		int carried = reverse ? q > r : q < r;
		dg[q * inner] = !carried ? 0.0f : prod ? sum * scan_carry(1, totals, l, k, inner, r, reverse, q) : sum;
	}
}

}   /* namespace */

/* ---- launchers ---- */

extern "C" {

/* a run with more than one element after it and rows enough to fill the
 * column blocks: a column sum */
static bool col_reduce(const sc_cu_plan *p, int64_t *A, int64_t *R, int64_t *C)
{
	int64_t nred, nout = plan_count(*p, &nred);
	return nout > 0 && nred > 0 && plan_run(*p, A, R, C) && *C > 1 && (*C >= CX || *R >= 4 * CY);
}

size_t sc_cu_reduce_scratch(const sc_cu_plan *p)
{
	int64_t A, R, C;
	return col_reduce(p, &A, &R, &C) ? col_scratch(1, A, R, C) : 0;
}

/* The column sum, or a thread, a warp or a block an output as the reduced
 * range grows; a run with nothing after it is walked contiguously. */
cudaError_t sc_cu_reduce(sc_reduce_kind kind, const float *x, float *y, const sc_cu_plan *p, void *scratch,
                         cudaStream_t s)
{
	int64_t A, R, C, nred, nout = plan_count(*p, &nred);
	if (nout <= 0)
		return cudaSuccess;
	if (col_reduce(p, &A, &R, &C))
		return colsum(PlainSrc{x}, kind, kind == SC_R_MEAN, A, R, C, ColOut{{y, nullptr}}, scratch, s);
	int contig = nout > 0 && nred > 0 && plan_run(*p, &A, &R, &C) && C == 1;
	if (nred < 32)
		reduce_k<1><<<blocks_for(nout), THREADS, 0, s>>>(kind, x, y, nout, nred, *p, contig);
	else if (nred < 4096 || nout >= 4096)
		reduce_k<32><<<row_blocks(nout), THREADS, 0, s>>>(kind, x, y, nout, nred, *p, contig);
	else
		reduce_k<THREADS><<<(int)(nout < 65535 ? nout : 65535), THREADS, 0, s>>>(kind, x, y, nout, nred, *p, contig);
	return cudaGetLastError();
}

cudaError_t sc_cu_reduce_max_grad(const float *x, const float *y, const float *dy, const float *count, float *dx,
                                  const sc_cu_plan *p, cudaStream_t s)
{
	int64_t nred, nout = plan_count(*p, &nred);
	reduce_max_grad_k<<<blocks_for(nout), THREADS, 0, s>>>(x, y, dy, count, dx, nout, nred, *p);
	return cudaGetLastError();
}

cudaError_t sc_cu_count_equal(const float *x, const float *y, float *count, const sc_cu_plan *p, cudaStream_t s)
{
	int64_t nred, nout = plan_count(*p, &nred);
	count_equal_k<<<blocks_for(nout), THREADS, 0, s>>>(x, y, count, nout, nred, *p);
	return cudaGetLastError();
}

cudaError_t sc_cu_reduce_prod(const float *x, int k, float *y, const sc_cu_plan *p, cudaStream_t s)
{
	int64_t nred, nout = plan_count(*p, &nred);
	prod_k<<<blocks_for(nout), THREADS, 0, s>>>(x, k, y, nout, nred, *p);
	return cudaGetLastError();
}

cudaError_t sc_cu_reduce_prod_grad(const float *x, const float *dy, const float *prod, const float *zeros, float *dx,
                                   const sc_cu_plan *p, cudaStream_t s)
{
	int64_t nred, nout = plan_count(*p, &nred);
	prod_grad_k<<<blocks_for(nout), THREADS, 0, s>>>(x, dy, prod, zeros, dx, nout, nred, *p);
	return cudaGetLastError();
}

cudaError_t sc_cu_reduce_bool(int any, const uint8_t *x, uint8_t *y, const sc_cu_plan *p, cudaStream_t s)
{
	int64_t nred, nout = plan_count(*p, &nred);
	reduce_bool_k<<<blocks_for(nout), THREADS, 0, s>>>(any, x, y, nout, nred, *p);
	return cudaGetLastError();
}

cudaError_t sc_cu_norm(int centered, const float *x, const float *gamma, const float *beta, float *y, int64_t rows,
                       int64_t cols, int64_t np, float eps, cudaStream_t s)
{
	norm_k<<<row_blocks(rows), THREADS, 0, s>>>(centered, x, gamma, beta, y, rows, cols, np, eps);
	return cudaGetLastError();
}

/* the row statistics, then dgamma's and dbeta's column sums' partials */
size_t sc_cu_norm_grad_scratch(int64_t rows, int64_t cols, int64_t np)
{
	int64_t n = rows * cols;
	return n > 0 && np > 0 ? (size_t)(2 * rows) * sizeof(float) + col_scratch(2, 1, n / np, np) : 0;
}

cudaError_t sc_cu_norm_grad(int centered, const float *dy, const float *x, const float *gamma, float *dx,
                            float *dgamma, float *dbeta, int64_t rows, int64_t cols, int64_t np, float eps,
                            void *scratch, cudaStream_t s)
{
	int64_t n = rows * cols;
	if (n <= 0 || np <= 0 || n % np != 0) {
		cudaError_t e = cudaSuccess;
		if (dgamma && np > 0)
			e = cudaMemsetAsync(dgamma, 0, (size_t)np * sizeof(float), s);
		if (e == cudaSuccess && dbeta && np > 0)
			e = cudaMemsetAsync(dbeta, 0, (size_t)np * sizeof(float), s);
		return e != cudaSuccess || n <= 0 || np <= 0 ? e : cudaErrorInvalidValue;
	}
	float *stats = dgamma || dbeta ? (float *)scratch : nullptr;
	norm_grad_k<<<row_blocks(rows), THREADS, 0, s>>>(centered, dy, x, gamma, dx, stats, rows, cols, np, eps);
	if (!stats)
		return cudaGetLastError();
	return colsum(NormSrc{dy, x, stats, rows, cols, np}, SC_R_SUM, 0, 1, n / np, np, ColOut{{dgamma, dbeta}},
	              stats + 2 * rows, s);
}

cudaError_t sc_cu_norm_part(int centered, const float *x, const float *gamma, const float *beta, const float *mean,
                            const float *var, float *y, int64_t rows, int64_t cols, float eps, cudaStream_t s)
{
	norm_part_k<<<blocks_for(rows * cols), THREADS, 0, s>>>(centered, x, gamma, beta, mean, var, y, rows, cols, eps);
	return cudaGetLastError();
}

size_t sc_cu_norm_part_grad_scratch(int64_t rows, int64_t cols)
{
	return rows > 0 && cols > 0 ? col_scratch(2, 1, rows, cols) : 0;
}

cudaError_t sc_cu_norm_part_grad(int centered, const float *dy, const float *x, const float *gamma, const float *mean,
                                 const float *var, float *dx, float *dgamma, float *dbeta, float *dmean, float *dvar,
                                 int64_t rows, int64_t cols, float eps, void *scratch, cudaStream_t s)
{
	if (rows <= 0 || cols <= 0) {
		cudaError_t e = cudaSuccess;
		if (dgamma && cols > 0)
			e = cudaMemsetAsync(dgamma, 0, (size_t)cols * sizeof(float), s);
		if (e == cudaSuccess && dbeta && cols > 0)
			e = cudaMemsetAsync(dbeta, 0, (size_t)cols * sizeof(float), s);
		return e;
	}
	norm_part_grad_k<<<row_blocks(rows), THREADS, 0, s>>>(centered, dy, x, gamma, mean, var, dx, dmean, dvar, rows,
	                                                        cols, eps);
	if (!dgamma && !dbeta)
		return cudaGetLastError();
	return colsum(NormPartSrc{dy, x, mean, var, eps, centered}, SC_R_SUM, 0, 1, rows, cols, ColOut{{dgamma, dbeta}},
	              scratch, s);
}

cudaError_t sc_cu_cumsum(int prod, const float *x, const float *totals, float *y, int64_t offset, int64_t k,
                         int64_t outer, int64_t n, int64_t inner, int exclusive, int reverse, cudaStream_t s)
{
	int64_t lines = outer * inner;
	if (lines <= 0 || n <= 0)
		return cudaSuccess;
	cumsum_k<<<blocks_for(lines), THREADS, 0, s>>>(prod, x, totals, y, offset / n, k, lines, n, inner, exclusive,
	                                               reverse);
	return cudaGetLastError();
}

cudaError_t sc_cu_cumsum_grad(int prod, const float *x, const float *totals, const float *dy, float *dx,
                              float *dtotals, int64_t offset, int64_t k, int64_t outer, int64_t n, int64_t inner,
                              int exclusive, int reverse, cudaStream_t s)
{
	int64_t lines = outer * inner;
	if (lines <= 0 || n <= 0)
		return cudaSuccess;
	cumsum_grad_k<<<blocks_for(lines), THREADS, 0, s>>>(prod, x, totals, dy, dx, dtotals, offset / n, k, lines, n,
	                                                    inner, exclusive, reverse);
	return cudaGetLastError();
}

}   /* extern "C" */
