/* kernels.c: every operator of docs/operators.md, its backward, and the optimizers,
 * on host memory.
 *
 * Straight loops over row-major tensors; the one shared device is an index
 * walk that keeps a counter per dim and a running offset per operand, so
 * broadcasting, transposes, slices and reductions are all "add this dim's
 * stride, carry into the next". Sums over many elements (reductions, norms,
 * softmax, losses, broadcast gradients) accumulate in double. Matmuls go to
 * OpenBLAS. These are the reference the cuda backend is checked against, so
 * clarity comes first; but the generated programs run on them too, so the
 * kernels a transformer block spends its time in (binary ops, transpose,
 * softmax, the normalizers) reduce their shapes first and walk only the outer
 * dims, with a plain loop along the last. */
#include "cpu_kernels.h"

#include <cblas.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "rt_internal.h"

/* The loops the layers spend their time in are compiled three times, for
 * x86-64's AVX-512 (v4), AVX2 (v3) and baseline levels, and the loader picks
 * the one this CPU runs (GCC's target_clones, an ifunc): one library for
 * every x86-64 machine, 2 to 4x wider vectors where the CPU has them. No
 * value changes with the level: -std=c11 contracts no a * b + c into an FMA,
 * and no loop reassociates a sum. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define SC_VECTOR_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define SC_VECTOR_CLONES
#endif

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);
	if (!p)
		SC_DIE("out of memory");
	return p;
}

/* ---- the index walk ---- */

/* Steps idx (row-major over dims) by one and each offs[k] by strides[k][d];
 * with nops operands. */
typedef struct {
	int ndim, nops;
	const int64_t *dims;
	int64_t idx[SC_MAX_DIMS];
	int64_t off[3];
	const int64_t *strides[3];
} Walk;

static void walk_init(Walk *w, const int64_t *dims, int ndim, int nops, const int64_t *s0, const int64_t *s1,
                      const int64_t *s2)
{
	memset(w, 0, sizeof *w);
	w->dims = dims;
	w->ndim = ndim;
	w->nops = nops;
	w->strides[0] = s0;
	w->strides[1] = s1;
	w->strides[2] = s2;
}

static void walk_next(Walk *w)
{
	for (int d = w->ndim - 1; d >= 0; d--) {
		for (int k = 0; k < w->nops; k++)
			w->off[k] += w->strides[k][d];
		if (++w->idx[d] < w->dims[d])
			return;
		for (int k = 0; k < w->nops; k++)
			w->off[k] -= w->strides[k][d] * w->dims[d];
		w->idx[d] = 0;
	}
}

/* w at row-major position i, as i calls of walk_next would leave it. */
static void walk_seek(Walk *w, int64_t i)
{
	memset(w->off, 0, sizeof w->off);
	for (int d = w->ndim - 1; d >= 0; d--) {
		w->idx[d] = i % w->dims[d];
		i /= w->dims[d];
		for (int k = 0; k < w->nops; k++)
			w->off[k] += w->idx[d] * w->strides[k][d];
	}
}

static void row_strides(const int64_t *dims, int ndim, int64_t *s)
{
	int64_t v = 1;
	for (int d = ndim - 1; d >= 0; d--) {
		s[d] = v;
		v *= dims[d];
	}
}

/* Strides over x's index space of the output of a reduction: 0 on reduced
 * axes, row-major over the kept ones. */
static int64_t reduce_strides(const char *what, const int64_t *dims, int ndim, const int *axes, int naxes,
                              int64_t *ostride)
{
	bool red[SC_MAX_DIMS] = {0};
	sc_check_dims(what, dims, ndim);
	for (int i = 0; i < naxes; i++) {
		int a = sc_norm_axis(what, axes[i], ndim);
		if (red[a])
			SC_DIE("%s: axis %d named twice", what, a);
		red[a] = true;
	}
	int64_t v = 1;
	for (int d = ndim - 1; d >= 0; d--) {
		ostride[d] = red[d] ? 0 : v;
		v *= red[d] ? 1 : dims[d];
	}
	return v;   /* the result's elements */
}

/* ---- memory ---- */

void sc_cpu_fill(void *dst, sc_dtype dt, int64_t n, double value)
{
	for (int64_t i = 0; i < n; i++)
		sc_store_as(dst, dt, i, value);
}

/* Loops whose elements (or rows) are computed independently run on the
 * rank's threads (sc_be_init sets them: the node's cores over its ranks)
 * once they are this long; each element is computed as in one thread, so
 * results do not depend on the thread count. */
#define SC_PAR_MIN ((int64_t)1 << 15)

/* ---- matmul ---- */

static int blas_int(int64_t v)
{
	if (v < 0 || v > INT_MAX)
		SC_DIE("matmul: dim %lld out of BLAS's int range", (long long)v);
	return (int)v;
}

void sc_cpu_matmul(const float *a, const float *b, float *c, int64_t m, int64_t n, int64_t k, int transpose_a,
                   int transpose_b)
{
	cblas_sgemm(CblasRowMajor, transpose_a ? CblasTrans : CblasNoTrans, transpose_b ? CblasTrans : CblasNoTrans,
	            blas_int(m), blas_int(n), blas_int(k), 1.0f, a, blas_int(transpose_a ? m : k), b,
	            blas_int(transpose_b ? k : n), 0.0f, c, blas_int(n));
}

void sc_cpu_batch_matmul_strided(const float *a, const int64_t *a_st, const float *b, const int64_t *b_st, float *c,
                                 const int64_t *c_st, const int64_t *bdims, int nb, int64_t m, int64_t n, int64_t k,
                                 int transpose_a, int transpose_b)
{
	sc_check_dims("batch_matmul", bdims, nb);
	int64_t batches = sc_numel(bdims, nb);
	int lda = blas_int(a_st[nb]), ldb = blas_int(b_st[nb]), ldc = blas_int(c_st[nb]);
	/* Many small products (attention's, one a batch and head): each thread
	 * takes a run of them, and OpenBLAS, called inside the parallel region,
	 * runs each on that one thread: no fork and join a product (2-3% of the
	 * GPT layer on 2 cores). On one thread OpenBLAS may take its small-matrix
	 * kernel, whose sums round differently in the last bit, as they do under
	 * SHARDC_THREADS=1. Large ones go one after another on all threads. */
	int many = batches >= omp_get_max_threads() && m * n * k <= ((int64_t)1 << 22);
#pragma omp parallel if (many)
	{
		int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
		int64_t lo = batches * t / nt, hi = batches * (t + 1) / nt;
		Walk w;
		walk_init(&w, bdims, nb, 3, a_st, b_st, c_st);
		walk_seek(&w, lo);
		for (int64_t i = lo; i < hi; i++, walk_next(&w))
			cblas_sgemm(CblasRowMajor, transpose_a ? CblasTrans : CblasNoTrans,
			            transpose_b ? CblasTrans : CblasNoTrans, blas_int(m), blas_int(n), blas_int(k), 1.0f,
			            a + w.off[0], lda, b + w.off[1], ldb, 0.0f, c + w.off[2], ldc);
	}
}

void sc_cpu_batch_matmul(const float *a, const int64_t *a_bdims, int a_nb, const float *b, const int64_t *b_bdims,
                         int b_nb, float *c, const int64_t *c_bdims, int c_nb, int64_t m, int64_t n, int64_t k,
                         int transpose_a, int transpose_b)
{
	/* numpy's broadcast as strides: a repeated matrix's batch stride is 0 */
	int64_t sa[SC_MAX_DIMS + 1], sb[SC_MAX_DIMS + 1], sc[SC_MAX_DIMS + 1];
	sc_bcast_strides("batch_matmul a", a_bdims, a_nb, c_bdims, c_nb, sa);
	sc_bcast_strides("batch_matmul b", b_bdims, b_nb, c_bdims, c_nb, sb);
	row_strides(c_bdims, c_nb, sc);
	for (int d = 0; d < c_nb; d++) {
		sa[d] *= m * k;
		sb[d] *= k * n;
		sc[d] *= m * n;
	}
	sa[c_nb] = transpose_a ? m : k;
	sb[c_nb] = transpose_b ? k : n;
	sc[c_nb] = n;
	sc_cpu_batch_matmul_strided(a, sa, b, sb, c, sc, c_bdims, c_nb, m, n, k, transpose_a, transpose_b);
}

/* ---- special functions: Lgamma's slope, Zeta ---- */

/* digamma(x) = d/dx log Gamma(x) (Lgamma's gradient, SC_UNARY_TABLE): the
 * recurrence psi(x) = psi(x + 1) - 1 / x up to x >= 6, then the asymptotic
 * series log x - 1 / 2x - sum B_2k / (2k x^2k); below 0 the reflection
 * psi(x) = psi(1 - x) - pi / tan(pi x). NaN at the poles 0, -1, -2, ... */
static double sc_digamma(double x)
{
	double r = 0;
	if (x <= 0) {
		if (x == floor(x))
			return NAN;
		r = -3.14159265358979323846 / tan(3.14159265358979323846 * x);
		x = 1 - x;
	}
	for (; x < 6; x += 1)
		r -= 1 / x;
	double f = 1 / (x * x);
	return r + log(x) - 0.5 / x -
	       f * (1.0 / 12 - f * (1.0 / 120 - f * (1.0 / 252 - f * (1.0 / 240 - f * (1.0 / 132)))));
}

/* The Hurwitz zeta function zeta(x, q) = sum over k >= 0 of (k + q)^-x
 * (MindSpore's Zeta, Eigen's and Cephes' algorithm): the first terms summed
 * directly until k + q > 9 (and at least 9 of them), then the tail by
 * Euler-Maclaurin's formula, its terms B_2j / (2j)! x (x + 1) ... / a^(x + 2j - 1)
 * (the table's denominators are (2j)! / B_2j). Infinite at x == 1 and at q a
 * non-positive integer, NaN for x < 1 and for q < 0 with x not an integer. */
static double sc_zeta(double x, double q)
{
	static const double den[12] = {12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9,
	                               7.47242496e10, -2.950130727918164224e12, 1.1646782814350067249e14,
	                               -4.5979787224074726105e15, 1.8152105401943546773e17,
	                               -7.1661652561756670113e18};
	if (x == 1)
		return INFINITY;
	if (!(x > 1) || q != q)
		return NAN;
	if (q <= 0) {
		if (q == floor(q))
			return INFINITY;
		if (x != floor(x))
			return NAN;
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

/* ---- elementwise ---- */

static float binop(sc_binop op, float a, float b)
{
	switch (op) {
	case SC_ADD: return a + b;
	case SC_SUB: return a - b;
	case SC_MUL: return a * b;
	case SC_DIV: return a / b;
	case SC_MAXIMUM: return SC_MAX_NAN(a, b);
	case SC_MINIMUM: return SC_MIN_NAN(a, b);
	case SC_POW: return powf(a, b);
	case SC_FLOOR_DIV: return floorf(a / b);
	case SC_FLOOR_MOD: {
		float r = fmodf(a, b);
		return r != 0 && (r < 0) != (b < 0) ? r + b : r;
	}
	case SC_MOD: return fmodf(a, b);
	case SC_SQUARED_DIFF: return (a - b) * (a - b);
	case SC_DIV_NO_NAN: return b == 0 ? 0 : a / b;
	case SC_ATAN2: return atan2f(a, b);
	case SC_SIGMOID_CE: return fmaxf(a, 0) - a * b + log1pf(expf(-fabsf(a)));
	case SC_XLOGY: return a == 0 ? 0 : a * logf(b);
	case SC_XDIVY: return a == 0 ? 0 : a / b;
	case SC_MUL_NO_NAN: return b == 0 ? 0 : a * b;
	case SC_TRUNCATE_DIV: return truncf(a / b);
	case SC_TRUNCATE_MOD: return fmodf(a, b);
	case SC_HYPOT: return hypotf(a, b);
	case SC_NEXT_AFTER: return nextafterf(a, b);
	case SC_ZETA: return (float)sc_zeta(a, b);
	}
	SC_DIE("bad binary op %d", (int)op);
}

/* a and b broadcast to y's dims, in as few dims as it takes: y's dims of
 * size 1 dropped, neighbours merged where each operand's elements stay
 * evenly spaced across them. The last dim's strides are then 0 or 1, so
 * the kernels walk the outer dims and run a plain loop along the last. */
typedef struct {
	int ndim;                   /* at least 1 */
	int64_t dims[SC_MAX_DIMS];  /* (ndim) */
	int64_t sa[SC_MAX_DIMS];    /* (ndim) a's strides, 0 where broadcast */
	int64_t sb[SC_MAX_DIMS];    /* (ndim) b's */
} Bcast;

static void bcast_collapse(const char *what_a, const char *what_b, const int64_t *a_dims, int a_ndim,
                           const int64_t *b_dims, int b_ndim, const int64_t *y_dims, int y_ndim, Bcast *c)
{
	int64_t sa[SC_MAX_DIMS], sb[SC_MAX_DIMS];
	sc_bcast_strides(what_a, a_dims, a_ndim, y_dims, y_ndim, sa);
	sc_bcast_strides(what_b, b_dims, b_ndim, y_dims, y_ndim, sb);
	int n = 0;
	for (int d = 0; d < y_ndim; d++) {
		if (y_dims[d] == 1)
			continue;
		if (n > 0 && c->sa[n - 1] == sa[d] * y_dims[d] && c->sb[n - 1] == sb[d] * y_dims[d]) {
			c->dims[n - 1] *= y_dims[d];
			c->sa[n - 1] = sa[d];
			c->sb[n - 1] = sb[d];
			continue;
		}
		c->dims[n] = y_dims[d];
		c->sa[n] = sa[d];
		c->sb[n] = sb[d];
		n++;
	}
	if (n == 0) {   /* one element */
		c->dims[0] = 1;
		c->sa[0] = c->sb[0] = 0;
		n = 1;
	}
	c->ndim = n;
}

/* y[j] = a[j sa] op b[j sb] for j < n, with sa and sb 0 or 1: one loop per
 * operator and stride pair, so that each is a plain loop. */
SC_VECTOR_CLONES
static void binary_row(sc_binop op, const float *a, int64_t sa, const float *b, int64_t sb, float *y, int64_t n)
{
	if (sa && sb) {
		switch (op) {
		case SC_ADD: for (int64_t j = 0; j < n; j++) y[j] = a[j] + b[j]; return;
		case SC_SUB: for (int64_t j = 0; j < n; j++) y[j] = a[j] - b[j]; return;
		case SC_MUL: for (int64_t j = 0; j < n; j++) y[j] = a[j] * b[j]; return;
		case SC_DIV: for (int64_t j = 0; j < n; j++) y[j] = a[j] / b[j]; return;
		case SC_MAXIMUM: for (int64_t j = 0; j < n; j++) y[j] = SC_MAX_NAN(a[j], b[j]); return;
		case SC_MINIMUM: for (int64_t j = 0; j < n; j++) y[j] = SC_MIN_NAN(a[j], b[j]); return;
		default: for (int64_t j = 0; j < n; j++) y[j] = binop(op, a[j], b[j]); return;   /* Pow and after */
		}
	} else if (sa) {
		float v = b[0];
		switch (op) {
		case SC_ADD: for (int64_t j = 0; j < n; j++) y[j] = a[j] + v; return;
		case SC_SUB: for (int64_t j = 0; j < n; j++) y[j] = a[j] - v; return;
		case SC_MUL: for (int64_t j = 0; j < n; j++) y[j] = a[j] * v; return;
		case SC_DIV: for (int64_t j = 0; j < n; j++) y[j] = a[j] / v; return;
		case SC_MAXIMUM: for (int64_t j = 0; j < n; j++) y[j] = SC_MAX_NAN(a[j], v); return;
		case SC_MINIMUM: for (int64_t j = 0; j < n; j++) y[j] = SC_MIN_NAN(a[j], v); return;
		default: for (int64_t j = 0; j < n; j++) y[j] = binop(op, a[j], v); return;
		}
	} else if (sb) {
		float v = a[0];
		switch (op) {
		case SC_ADD: for (int64_t j = 0; j < n; j++) y[j] = v + b[j]; return;
		case SC_SUB: for (int64_t j = 0; j < n; j++) y[j] = v - b[j]; return;
		case SC_MUL: for (int64_t j = 0; j < n; j++) y[j] = v * b[j]; return;
		case SC_DIV: for (int64_t j = 0; j < n; j++) y[j] = v / b[j]; return;
		case SC_MAXIMUM: for (int64_t j = 0; j < n; j++) y[j] = SC_MAX_NAN(v, b[j]); return;
		case SC_MINIMUM: for (int64_t j = 0; j < n; j++) y[j] = SC_MIN_NAN(v, b[j]); return;
		default: for (int64_t j = 0; j < n; j++) y[j] = binop(op, v, b[j]); return;
		}
	} else {   /* y larger than both: one value repeated */
		float v = binop(op, a[0], b[0]);
		for (int64_t j = 0; j < n; j++)
			y[j] = v;
		return;
	}
	SC_DIE("bad binary op %d", (int)op);
}

/* One row of y (its index r) from a's and b's elements at strides sa and sb,
 * 0 or 1: binary_row or compare_row with its operator and y in ctx. */
typedef void (*BcastRow)(const void *ctx, int64_t r, const float *a, int64_t sa, const float *b, int64_t sb,
                         int64_t len);

/* a and b broadcast to y_dims, row by row: each thread a block of rows, its
 * walk started where the block starts. */
static void bcast_rows(const char *what_a, const char *what_b, const float *a, const int64_t *a_dims, int a_ndim,
                       const float *b, const int64_t *b_dims, int b_ndim, const int64_t *y_dims, int y_ndim,
                       BcastRow row, const void *ctx)
{
	Bcast c;
	bcast_collapse(what_a, what_b, a_dims, a_ndim, b_dims, b_ndim, y_dims, y_ndim, &c);
	int last = c.ndim - 1;
	int64_t len = c.dims[last], rows = sc_numel(c.dims, last);
#pragma omp parallel if (rows * len >= SC_PAR_MIN)
	{
		int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
		int64_t r0 = rows * t / nt, r1 = rows * (t + 1) / nt;
		Walk w;
		walk_init(&w, c.dims, last, 2, c.sa, c.sb, NULL);
		walk_seek(&w, r0);
		for (int64_t r = r0; r < r1; r++, walk_next(&w))
			row(ctx, r, a + w.off[0], c.sa[last], b + w.off[1], c.sb[last], len);
	}
}

typedef struct {
	int op;    /* an sc_binop or an sc_cmpop */
	void *y;
	float p;   /* an sc_cmpop's parameter (ApproximateEqual's tolerance) */
} RowOut;

static void binary_out_row(const void *ctx, int64_t r, const float *a, int64_t sa, const float *b, int64_t sb,
                           int64_t len)
{
	const RowOut *o = ctx;
	binary_row((sc_binop)o->op, a, sa, b, sb, (float *)o->y + r * len, len);
}

void sc_cpu_binary(sc_binop op, const float *a, const int64_t *a_dims, int a_ndim, const float *b,
                   const int64_t *b_dims, int b_ndim, float *y, const int64_t *y_dims, int y_ndim)
{
	RowOut o = {op, y, 0};
	bcast_rows("binary a", "binary b", a, a_dims, a_ndim, b, b_dims, b_ndim, y_dims, y_ndim, binary_out_row, &o);
}

/* y[j] = a[j sa] op b[j sb] for j < n, with sa and sb 0 or 1 (binary_row's
 * walk), 1 where true: the rows of SC_COMPARE_TABLE, p their parameter. */
static void compare_row(sc_cmpop op, float p, const float *x, int64_t sa, const float *z, int64_t sb, uint8_t *y,
                        int64_t n)
{
	switch (op) {
#define COMPARE_ROW(name, test)                    \
	case SC_CMP_##name:                            \
		for (int64_t j = 0; j < n; j++) {          \
			float a = x[j * sa], b = z[j * sb];    \
			y[j] = (test);                         \
		}                                          \
		return;
	SC_COMPARE_TABLE(COMPARE_ROW)
#undef COMPARE_ROW
	case SC_CMP_COUNT: break;
	}
	SC_DIE("bad comparison %d", (int)op);
}

static void compare_out_row(const void *ctx, int64_t r, const float *a, int64_t sa, const float *b, int64_t sb,
                            int64_t len)
{
	const RowOut *o = ctx;
	compare_row((sc_cmpop)o->op, o->p, a, sa, b, sb, (uint8_t *)o->y + r * len, len);
}

void sc_cpu_compare(sc_cmpop op, float p, const float *a, const int64_t *a_dims, int a_ndim, const float *b,
                    const int64_t *b_dims, int b_ndim, uint8_t *y, const int64_t *y_dims, int y_ndim)
{
	RowOut o = {op, y, p};
	bcast_rows("compare a", "compare b", a, a_dims, a_ndim, b, b_dims, b_ndim, y_dims, y_ndim, compare_out_row, &o);
}

void sc_cpu_logical(sc_logop op, const uint8_t *a, const int64_t *a_dims, int a_ndim, const uint8_t *b,
                    const int64_t *b_dims, int b_ndim, uint8_t *y, const int64_t *y_dims, int y_ndim)
{
	if (op == SC_L_NOT)   /* a alone: walked as both operands */
		b = a, b_dims = a_dims, b_ndim = a_ndim;
	Bcast c;
	bcast_collapse("logical a", "logical b", a_dims, a_ndim, b_dims, b_ndim, y_dims, y_ndim, &c);
	int last = c.ndim - 1;
	int64_t len = c.dims[last], rows = sc_numel(c.dims, last), sa = c.sa[last], sb = c.sb[last];
	Walk w;
	walk_init(&w, c.dims, last, 2, c.sa, c.sb, NULL);
	for (int64_t r = 0; r < rows; r++, walk_next(&w))
		for (int64_t j = 0; j < len; j++)
			y[r * len + j] = (uint8_t)SC_LOGICAL(op, a[w.off[0] + j * sa], b[w.off[1] + j * sb]);
}

void sc_cpu_is_finite(const float *x, uint8_t *y, int64_t n)
{
#pragma omp parallel for if (n >= SC_PAR_MIN) schedule(static)
	for (int64_t i = 0; i < n; i++)
		y[i] = (uint8_t)isfinite(x[i]);
}

/* One integer operator on a and b of a width of bits (32 or 64), sign
 * extended into int64_t (sc_int_math's rules). */
static int64_t int_op(sc_intop op, int64_t a, int64_t b, int bits)
{
	uint64_t mask = bits == 64 ? ~(uint64_t)0 : ((uint64_t)1 << bits) - 1;
	switch (op) {
	case SC_INT_INVERT: return ~a;
	case SC_INT_POPCOUNT: {
		int c = 0;
		for (uint64_t u = (uint64_t)a & mask; u; u &= u - 1)
			c++;
		return c;
	}
	case SC_INT_LEFT_SHIFT: case SC_INT_RIGHT_SHIFT: {
		if (b > bits || b < -bits)
			b %= bits;
		if (b < 0 || b >= bits)
			return op == SC_INT_LEFT_SHIFT ? 0 : a < 0 ? -1 : 0;
		if (op == SC_INT_RIGHT_SHIFT)
			return a >> b;   /* sign extended: the width's arithmetic shift */
		uint64_t u = ((uint64_t)a << b) & mask;
		return bits == 64 ? (int64_t)u : (int64_t)(int32_t)(uint32_t)u;
	}
	}
	SC_DIE("bad integer op %d", (int)op);
}

void sc_cpu_int_math(sc_intop op, sc_dtype dt, const void *a, const int64_t *a_dims, int a_ndim, const void *b,
                     const int64_t *b_dims, int b_ndim, void *y, const int64_t *y_dims, int y_ndim)
{
	if (dt != SC_I32 && dt != SC_I64)
		SC_DIE("sc_int_math on dtype %d: Int32 or Int64 only", (int)dt);
	if (!b)   /* a alone: walked as both operands */
		b = a, b_dims = a_dims, b_ndim = a_ndim;
	Bcast c;
	bcast_collapse("int_math a", "int_math b", a_dims, a_ndim, b_dims, b_ndim, y_dims, y_ndim, &c);
	int last = c.ndim - 1, bits = dt == SC_I64 ? 64 : 32;
	int64_t len = c.dims[last], rows = sc_numel(c.dims, last), sa = c.sa[last], sb = c.sb[last];
	Walk w;
	walk_init(&w, c.dims, last, 2, c.sa, c.sb, NULL);
	for (int64_t r = 0; r < rows; r++, walk_next(&w))
		for (int64_t j = 0; j < len; j++) {
			int64_t ia = w.off[0] + j * sa, ib = w.off[1] + j * sb, i = r * len + j;
			if (bits == 64)
				((int64_t *)y)[i] = int_op(op, ((const int64_t *)a)[ia], ((const int64_t *)b)[ib], 64);
			else
				((int32_t *)y)[i] = (int32_t)int_op(op, ((const int32_t *)a)[ia], ((const int32_t *)b)[ib], 32);
		}
}

void sc_cpu_reverse(const float *x, float *y, const int64_t *dims, int ndim, unsigned rev)
{
	int64_t n = sc_numel(dims, ndim);
#pragma omp parallel for if (n >= SC_PAR_MIN) schedule(static)
	for (int64_t i = 0; i < n; i++) {
		int64_t r = i, src = 0, stride = 1;
		for (int d = ndim - 1; d >= 0; d--) {
			int64_t k = r % dims[d];
			r /= dims[d];
			src += ((rev >> d) & 1 ? dims[d] - 1 - k : k) * stride;
			stride *= dims[d];
		}
		y[i] = x[src];
	}
}

void sc_cpu_trace(const float *x, float *y, const int64_t *dims, int ndim, int a1, int a2, int64_t offset)
{
	sc_diag g;
	sc_diag_init(&g, dims, ndim, a1, a2, offset);
#pragma omp parallel for if (g.n * g.len >= SC_PAR_MIN) schedule(static)
	for (int64_t j = 0; j < g.n; j++) {
		int64_t base = sc_diag_base(&g, j);
		double s = 0;
		for (int64_t i = 0; i < g.len; i++)
			s += x[base + i * g.step];
		y[j] = (float)s;
	}
}

void sc_cpu_trace_grad(const float *dy, float *dx, const int64_t *dims, int ndim, int a1, int a2, int64_t offset)
{
	sc_diag g;
	sc_diag_init(&g, dims, ndim, a1, a2, offset);
	memset(dx, 0, sizeof *dx * (size_t)sc_numel(dims, ndim));
	for (int64_t j = 0; j < g.n; j++) {
		int64_t base = sc_diag_base(&g, j);
		for (int64_t i = 0; i < g.len; i++)
			dx[base + i * g.step] = dy[j];
	}
}

SC_VECTOR_CLONES
void sc_cpu_bias_add(const float *x, const float *bias, float *y, int64_t rows, int64_t c)
{
#pragma omp parallel for if (rows * c >= SC_PAR_MIN) schedule(static)
	for (int64_t r = 0; r < rows; r++)
		for (int64_t j = 0; j < c; j++)
			y[r * c + j] = x[r * c + j] + bias[j];
}

/* PReLU: the channel of element (o, j, i) is j (wn == c) or 0 (wn == 1). */
void sc_cpu_prelu(const float *x, const float *w, float *y, int64_t outer, int64_t c, int64_t inner, int64_t wn)
{
#pragma omp parallel for collapse(2) if (outer * c * inner >= SC_PAR_MIN) schedule(static)
	for (int64_t o = 0; o < outer; o++)
		for (int64_t j = 0; j < c; j++) {
			const float wj = w[wn == 1 ? 0 : j];
			const float *xr = x + (o * c + j) * inner;
			float *yr = y + (o * c + j) * inner;
			for (int64_t i = 0; i < inner; i++)
				yr[i] = xr[i] < 0 ? wj * xr[i] : xr[i];
		}
}

/* dx elementwise; dw a channel's sum in memory order, in double, each
 * thread its channels (one thread for wn == 1), so that the thread count
 * does not change it. */
void sc_cpu_prelu_grad(const float *x, const float *w, const float *dy, float *dx, float *dw, int64_t outer, int64_t c,
                       int64_t inner, int64_t wn)
{
	if (dx) {
#pragma omp parallel for collapse(2) if (outer * c * inner >= SC_PAR_MIN) schedule(static)
		for (int64_t o = 0; o < outer; o++)
			for (int64_t j = 0; j < c; j++) {
				const float wj = w[wn == 1 ? 0 : j];
				int64_t at = (o * c + j) * inner;
				for (int64_t i = 0; i < inner; i++)
					dx[at + i] = x[at + i] <= 0 ? wj * dy[at + i] : dy[at + i];
			}
	}
	if (!dw)
		return;
	if (wn == 1) {
		double acc = 0;
		for (int64_t e = 0; e < outer * c * inner; e++)
			acc += x[e] < 0 ? (double)x[e] * dy[e] : 0.0;
		dw[0] = (float)acc;
		return;
	}
#pragma omp parallel for if (outer * c * inner >= SC_PAR_MIN) schedule(static)
	for (int64_t j = 0; j < c; j++) {
		double acc = 0;
		for (int64_t o = 0; o < outer; o++) {
			int64_t at = (o * c + j) * inner;
			for (int64_t i = 0; i < inner; i++)
				acc += x[at + i] < 0 ? (double)x[at + i] * dy[at + i] : 0.0;
		}
		dw[j] = (float)acc;
	}
}

/* exp(y) for y <= 0, written out so that loops calling it vectorize (libm's
 * expf is a call a value): y = k ln2 + r with |r| <= ln2/2, exp(r) a degree-7
 * polynomial (truncation 5e-9), 2^k put in the exponent bits; below -87 the
 * result is 0 (expf's would be under 1.6e-38). Only + - * and integer bit
 * moves, so a vector lane and the scalar tail give the same bits, and the
 * thread count does not change results. Within 2 float roundings of expf.
 * The two choices (y below -87, y NaN) are bit masks, not branches: GCC's
 * jump threading turns ?: on y into control flow that the AVX loops of
 * SC_VECTOR_CLONES then refuse to vectorize. */
static inline int32_t float_bits(float f)
{
	int32_t i;
	memcpy(&i, &f, sizeof i);
	return i;
}

static inline float bits_float(int32_t i)
{
	float f;
	memcpy(&f, &i, sizeof f);
	return f;
}

static inline float sc_exp_nonpos(float y)
{
	int32_t in = -(int32_t)(y > -87.0f), nan = -(int32_t)(y != y);   /* all ones where true */
	float c = bits_float((float_bits(y) & in) | (float_bits(-87.0f) & ~in));
	int32_t k = (int32_t)(c * 1.4426950408889634f - 0.5f);   /* round(c / ln2), c <= 0 */
	float r = (c - (float)k * 0.693145751953125f) - (float)k * 1.428606765330187e-06f;   /* ln2 in two parts */
	float p = 1 + r * (1 + r * (1.0f / 2 + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120 + r * (1.0f / 720 + r * (1.0f / 5040)))))));
	float e = p * bits_float((k + 127) * (1 << 23));   /* k in [-126, 0] */
	return bits_float((float_bits(e) & in) | (float_bits(y) & nan));   /* NaN stays NaN */
}

/* GeLU's tanh (SC_UNARY_TABLE): tanh u = sign(u) (1 - e) / (1 + e) with
 * e = exp(-2|u|) from sc_exp_nonpos, so that the loop vectorizes: libm's
 * tanhf was 30% of the GPT layer's forward pass. Its error is absolute,
 * below 2e-7: GeLU adds it to 1, so that is a relative error of GeLU below
 * 2e-7 too (Tanh, the operator, keeps libm's tanhf for its small values).
 * From |u| = 9 on, e is below half a float step of 1 and the result 1. */
static inline float sc_gelu_tanh(float u)
{
	float e = sc_exp_nonpos(-2 * fabsf(u));
	return copysignf((1 - e) / (1 + e), u);
}

/* GeLU's derivative at t (SC_UNARY_TABLE): tanh once. */
static inline float sc_gelu_slope(float t)
{
	float th = sc_gelu_tanh(SC_GELU_U(t));
	return 0.5f * (1 + th) + 0.5f * t * (1 - th * th) * SC_GELU_DU(t);
}

/* erf's inverse (SC_UNARY_TABLE's Erfinv; CUDA has erfinvf, C does not):
 * M. Giles' single-precision polynomials in w = -log(1 - x^2) ("Approximating
 * the erfinv function", GPU Computing Gems, 2011), then one Newton step on
 * erf(y) = x, which brings it to Float32's rounding. +-1 give +-infinity,
 * outside [-1, 1] NaN. */
static inline float sc_erfinv(float x)
{
	if (!(x > -1 && x < 1))
		return x == 1 ? INFINITY : x == -1 ? -INFINITY : NAN;
	float w = -logf((1 - x) * (1 + x)), p;
	if (w < 5) {
		w -= 2.5f;
		p = 2.81022636e-08f;
		p = 3.43273939e-07f + p * w;
		p = -3.5233877e-06f + p * w;
		p = -4.39150654e-06f + p * w;
		p = 0.00021858087f + p * w;
		p = -0.00125372503f + p * w;
		p = -0.00417768164f + p * w;
		p = 0.246640727f + p * w;
		p = 1.50140941f + p * w;
	} else {
		w = sqrtf(w) - 3;
		p = -0.000200214257f;
		p = 0.000100950558f + p * w;
		p = 0.00134934322f + p * w;
		p = -0.00367342844f + p * w;
		p = 0.00573950773f + p * w;
		p = -0.0076224613f + p * w;
		p = 0.00943887047f + p * w;
		p = 1.00167406f + p * w;
		p = 2.83297682f + p * w;
	}
	float y = p * x;
	return y - (erff(y) - x) / (1.1283791671f * expf(-y * y));   /* 2 / sqrt(pi) e^(-y^2): erf's slope */
}

/* SiLU's derivative at t (SC_UNARY_TABLE): sigmoid once. */
static inline float sc_silu_slope(float t)
{
	float s = 1 / (1 + expf(-t));
	return s * (1 + t * (1 - s));
}

/* Mish's derivative at t (SC_UNARY_TABLE): tanh and sigmoid once. */
static inline float sc_mish_slope(float t)
{
	float th = tanhf(SC_SOFTPLUS(t));
	return th + t * (1 - th * th) / (1 + expf(-t));
}

/* BiasAdd then a unary operator in one pass (compiler/fuse.c): one loop an
 * operator, each row's pre-activation kept when pre is not NULL. */
SC_VECTOR_CLONES
void sc_cpu_bias_unary(sc_unop op, float p, const float *xs, const float *bias, float *pre, float *y, int64_t rows,
                       int64_t c)
{
	switch (op) {
#define CASE(name, t, fwd, grad)                                                       \
	case SC_U_##name:                                                                  \
		_Pragma("omp parallel for if (rows * c >= SC_PAR_MIN) schedule(static)")      \
		for (int64_t r = 0; r < rows; r++) {                                           \
			const float *xr = xs + r * c;                                              \
			float *yr = y + r * c, *pr = pre ? pre + r * c : NULL;                     \
			if (pr)                                                                    \
				for (int64_t j = 0; j < c; j++)                                        \
					pr[j] = xr[j] + bias[j];                                           \
			_Pragma("omp simd")                                                        \
			for (int64_t j = 0; j < c; j++) {                                          \
				float x = xr[j] + bias[j];                                             \
				yr[j] = (fwd);                                                         \
			}                                                                          \
		}                                                                              \
		break;
		SC_UNARY_TABLE(CASE)
#undef CASE
	default: SC_DIE("bad unary op %d", (int)op);
	}
}

/* BiasAdd then the Add that reads it in one pass (compiler/fuse.c): each
 * sum rounded to Float32 as its own kernel rounds it (a + b is b + a). */
SC_VECTOR_CLONES
void sc_cpu_bias_add_residual(const float *xs, const float *bias, float *pre, const float *r, float *y, int64_t rows,
                              int64_t c)
{
#pragma omp parallel for if (rows * c >= SC_PAR_MIN) schedule(static)
	for (int64_t i = 0; i < rows; i++) {
		const float *xr = xs + i * c, *rr = r + i * c;
		float *yr = y + i * c;
		float *pr = pre ? pre + i * c : NULL;
		if (pr)
			for (int64_t j = 0; j < c; j++)
				pr[j] = xr[j] + bias[j];
#pragma omp simd
		for (int64_t j = 0; j < c; j++) {
			float x = xr[j] + bias[j];
			yr[j] = rr[j] + x;
		}
	}
}

/* ---- elementwise chains (compiler/fuse.c) ----
 * A block of up to EW_BLOCK elements of one row at a time, each value of
 * the chain a small array, so that every step is one plain loop (the
 * separate kernels' loops, on a block). Values the chain reads as they are
 * (a float32 operand) are pointers into it; the rest live in the block. */
enum { EW_BLOCK = 256, EW_NV = SC_EW_MAX_INS + SC_EW_MAX_STEPS };

/* v rounded to bfloat16 and widened back: sc_bf16_from_float's bits, as a
 * float, written so that the loops vectorize (half.c's is a call). */
static inline float ew_round_bf16(float v)
{
	uint32_t u;
	memcpy(&u, &v, sizeof u);
	uint32_t r = (u + 0x7fffu + (u >> 16 & 1u)) & 0xffff0000u;
	uint32_t q = (u & 0x80000000u) | 0x7fc00000u;   /* NaN: the quiet NaN of its sign */
	u = (u & 0x7fffffffu) > 0x7f800000u ? q : r;
	memcpy(&v, &u, sizeof v);
	return v;
}

static void ew_load(const sc_ew_operand *in, int64_t at, float *v, int64_t n)
{
	if (in->bcast == SC_EW_SCALAR) {
		float s;
		sc_host_widen(in->p, in->dt, &s, 1);
		for (int64_t j = 0; j < n; j++)
			v[j] = s;
		return;
	}
	if (in->dt == SC_BF16) {
		const uint16_t *h = (const uint16_t *)in->p + at;
#pragma omp simd
		for (int64_t j = 0; j < n; j++) {
			uint32_t u = (uint32_t)h[j] << 16;
			memcpy(&v[j], &u, sizeof u);
		}
	} else
		sc_host_widen((const uint16_t *)in->p + at, in->dt, v, n);
}

SC_VECTOR_CLONES
static void ew_step(const sc_ew_step *st, const float *const *val, float *y, int64_t n, int64_t at)
{
	const float *a = val[st->a];
	switch (st->kind) {
	case SC_EW_UNARY: {
		const float p = st->p;   /* the row's parameter */
		switch ((sc_unop)st->op) {
#define CASE(name, t, fwd, grad)                                                       \
		case SC_U_##name:                                                              \
			_Pragma("omp simd")                                                        \
			for (int64_t j = 0; j < n; j++) {                                          \
				float x = a[j];                                                        \
				y[j] = (fwd);                                                          \
			}                                                                          \
			return;
			SC_UNARY_TABLE(CASE)
#undef CASE
		default: break;
		}
		break;
	}
	case SC_EW_BINARY:
		binary_row((sc_binop)st->op, a, 1, val[st->b], 1, y, n);
		return;
	case SC_EW_UNARY_GRAD: {   /* as sc_cpu_unary_grad: t = value a, dy = value b */
		const float *dy = val[st->b], p = st->p;
		switch ((sc_unop)st->op) {
#define CASE(name, t_, fwd, grad)                                                      \
		case SC_U_##name:                                                              \
			_Pragma("omp simd")                                                        \
			for (int64_t j = 0; j < n; j++) {                                          \
				float t = a[j], g = dy[j];                                             \
				(void)t;                                                               \
				y[j] = (grad);                                                         \
			}                                                                          \
			return;
			SC_UNARY_TABLE(CASE)
#undef CASE
		default: break;
		}
		break;
	}
	case SC_EW_ROUND:
		if (st->dt == SC_BF16) {
#pragma omp simd
			for (int64_t j = 0; j < n; j++)
				y[j] = ew_round_bf16(a[j]);
			return;
		}
		if (st->dt == SC_F16) {
			for (int64_t j = 0; j < n; j++)
				y[j] = sc_f16_to_float(sc_f16_from_double(a[j]));
			return;
		}
		break;
	case SC_EW_STORE:
		if (st->dt == SC_F32) {
			memcpy((float *)st->out + at, a, (size_t)n * sizeof *a);
			return;
		}
		if (st->dt == SC_BF16) {
			uint16_t *h = (uint16_t *)st->out + at;
#pragma omp simd
			for (int64_t j = 0; j < n; j++) {
				float r = ew_round_bf16(a[j]);
				uint32_t u;
				memcpy(&u, &r, sizeof u);
				h[j] = (uint16_t)(u >> 16);
			}
			return;
		}
		if (st->dt == SC_F16) {
			sc_host_narrow(a, (uint16_t *)st->out + at, SC_F16, n);
			return;
		}
		break;
	}
	SC_DIE("sc_ew_chain: bad step (kind %d, op %d, dtype %s)", (int)st->kind, st->op, sc_dtype_name(st->dt));
}

void sc_cpu_ew_chain(const sc_ew_step *steps, int nsteps, const sc_ew_operand *ins, int nin, int64_t rows,
                     int64_t cols)
{
	if (nsteps < 1 || nsteps > SC_EW_MAX_STEPS || nin < 0 || nin > SC_EW_MAX_INS)
		SC_DIE("sc_ew_chain: %d steps, %d operands (at most %d and %d)", nsteps, nin, SC_EW_MAX_STEPS,
		       SC_EW_MAX_INS);
	for (int k = 0; k < nsteps; k++) {
		const sc_ew_step *st = &steps[k];
		bool two = st->kind == SC_EW_BINARY || st->kind == SC_EW_UNARY_GRAD;
		if (st->a < 0 || st->a >= nin + k || (two && (st->b < 0 || st->b >= nin + k)))
			SC_DIE("sc_ew_chain: step %d reads a value not yet computed", k);
	}
	for (int k = 0; k < nin; k++)
		if (ins[k].dt != SC_F32 && !sc_is_half(ins[k].dt))
			SC_DIE("sc_ew_chain: operand %d is %s, not a float type", k, sc_dtype_name(ins[k].dt));
	int64_t nb = (cols + EW_BLOCK - 1) / EW_BLOCK, tasks = rows * nb;
#pragma omp parallel if (rows * cols >= SC_PAR_MIN)
	{
		float block[EW_NV][EW_BLOCK];
		const float *val[EW_NV];
		for (int k = 0; k < nin; k++)   /* a scalar is the same block everywhere */
			if (ins[k].bcast == SC_EW_SCALAR)
				ew_load(&ins[k], 0, block[k], EW_BLOCK);
#pragma omp for schedule(static)
		for (int64_t t = 0; t < tasks; t++) {
			int64_t r = t / nb, c0 = t % nb * EW_BLOCK, n = cols - c0 < EW_BLOCK ? cols - c0 : EW_BLOCK;
			int64_t at = r * cols + c0;
			for (int k = 0; k < nin; k++) {
				const sc_ew_operand *in = &ins[k];
				int64_t off = in->bcast == SC_EW_FULL ? at : c0;
				if (in->bcast == SC_EW_SCALAR)
					val[k] = block[k];
				else if (in->dt == SC_F32)
					val[k] = (const float *)in->p + off;
				else {
					ew_load(in, off, block[k], n);
					val[k] = block[k];
				}
			}
			for (int k = 0; k < nsteps; k++) {
				const sc_ew_step *st = &steps[k];
				if (st->kind == SC_EW_STORE) {
					ew_step(st, val, NULL, n, at);
					val[nin + k] = val[st->a];
				} else {
					ew_step(st, val, block[nin + k], n, at);
					val[nin + k] = block[nin + k];
				}
			}
		}
	}
}

/* One loop an operator, the switch outside it, so that each loop can be
 * vectorized. */
SC_VECTOR_CLONES
void sc_cpu_unary(sc_unop op, float p, const float *xs, float *y, int64_t n)
{
	switch (op) {
#define CASE(name, t, fwd, grad)                                                       \
	case SC_U_##name:                                                                  \
		_Pragma("omp parallel for simd if (n >= SC_PAR_MIN) schedule(static)")         \
		for (int64_t i = 0; i < n; i++) {                                              \
			float x = xs[i];                                                           \
			y[i] = (fwd);                                                              \
		}                                                                              \
		break;
		SC_UNARY_TABLE(CASE)
#undef CASE
	default: SC_DIE("bad unary op %d", (int)op);
	}
}

SC_VECTOR_CLONES
void sc_cpu_unary_grad(sc_unop op, float p, const float *ts, const float *dy, float *dx, int64_t n)
{
	const float *tv = ts ? ts : dy;   /* a row reading nothing ignores t: no load under a condition */
	switch (op) {
#define CASE(name, t_, fwd, grad)                                                      \
	case SC_U_##name:                                                                  \
		_Pragma("omp parallel for simd if (n >= SC_PAR_MIN) schedule(static)")         \
		for (int64_t i = 0; i < n; i++) {                                              \
			float t = tv[i], g = dy[i];                                                \
			(void)t;                                                                   \
			dx[i] = (grad);                                                            \
		}                                                                              \
		break;
		SC_UNARY_TABLE(CASE)
#undef CASE
	default: SC_DIE("bad unary op %d", (int)op);
	}
}

void sc_cpu_scale(const float *x, float *y, int64_t n, double alpha)
{
	float a = (float)alpha;
#pragma omp parallel for if (n >= SC_PAR_MIN) schedule(static)
	for (int64_t i = 0; i < n; i++)
		y[i] = a * x[i];
}

/* ---- softmax ---- */

/* One softmax row of len elements, stride apart (1: the last axis, which
 * GCC then reads as contiguous vectors), of x * scale + m with m the mask's
 * row, ms apart (0: one value; mr NULL: no mask). Always inlined: into each
 * of softmax_of_scaled's clones, so that it gets their vector width, and at
 * each call, so that stride 1 and a missing mask are constants there. */
__attribute__((always_inline)) static inline float softmax_in(const float *xr, float scale, const float *mr,
                                                              int64_t ms, int64_t k, int64_t stride)
{
	float v = xr[k * stride] * scale;   /* rounded as the Mul rounded it (no contraction in C11 mode) */
	return mr ? v + mr[k * ms] : v;
}

__attribute__((always_inline)) static inline void softmax_row(const float *xr, float scale, const float *mr,
                                                              int64_t ms, float *yr, int64_t len, int64_t stride,
                                                              int is_log)
{
	float mx = -INFINITY;
#pragma omp simd reduction(max : mx)
	for (int64_t k = 0; k < len; k++) {
		float v = softmax_in(xr, scale, mr, ms, k, stride);
		mx = v > mx ? v : mx;   /* any order gives the same max; NaNs give NaN rows either way */
	}
	/* y holds exp(x - max) until the sum is known */
#pragma omp simd
	for (int64_t k = 0; k < len; k++)
		yr[k * stride] = sc_exp_nonpos(softmax_in(xr, scale, mr, ms, k, stride) - mx);
	/* eight partial sums in a fixed order, whatever the vector width */
	double part[8] = {0};
	int64_t k8 = len / 8 * 8;
	for (int64_t k = 0; k < k8; k += 8)
		for (int q = 0; q < 8; q++)
			part[q] += yr[(k + q) * stride];
	for (int64_t k = k8; k < len; k++)
		part[k - k8] += yr[k * stride];
	double sum = ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
	if (is_log) {
		double lse = log(sum);
		for (int64_t k = 0; k < len; k++)
			yr[k * stride] = (float)((double)softmax_in(xr, scale, mr, ms, k, stride) - mx - lse);
		return;
	}
	double inv = 1 / sum;
#pragma omp simd
	for (int64_t k = 0; k < len; k++)
		yr[k * stride] = (float)(yr[k * stride] * inv);
}

/* x is read as x * scale, each product rounded to Float32 as a Mul before
 * the softmax would round it (scale 1 changes nothing). */
SC_VECTOR_CLONES
static void softmax_of_scaled(const float *x, float scale, float *y, const int64_t *dims, int ndim, int axis, int is_log)
{
	int64_t outer, len, inner;
	sc_check_dims("softmax", dims, ndim);
	sc_split3(dims, ndim, sc_norm_axis("softmax", axis, ndim), &outer, &len, &inner);
	if (inner == 1) {
#pragma omp parallel for if (outer * len >= SC_PAR_MIN) schedule(static)
		for (int64_t o = 0; o < outer; o++)
			softmax_row(x + o * len, scale, NULL, 0, y + o * len, len, 1, is_log);
		return;
	}
#pragma omp parallel for collapse(2) if (outer * len * inner >= SC_PAR_MIN) schedule(static)
	for (int64_t o = 0; o < outer; o++)
		for (int64_t i = 0; i < inner; i++)
			softmax_row(x + o * len * inner + i, scale, NULL, 0, y + o * len * inner + i, len, inner, is_log);
}

void sc_cpu_softmax(const float *x, float *y, const int64_t *dims, int ndim, int axis, int is_log)
{
	softmax_of_scaled(x, 1, y, dims, ndim, axis, is_log);
}

void sc_cpu_softmax_scaled(const float *x, const float *scale, float *y, const int64_t *dims, int ndim, int axis)
{
	softmax_of_scaled(x, scale[0], y, dims, ndim, axis, 0);
}

/* The last axis's rows of x * scale + mask, the mask broadcast to x (its
 * rows found by walking x's outer dims with the mask's strides). */
SC_VECTOR_CLONES
void sc_cpu_softmax_masked(const float *x, const float *scale, const float *mask, const int64_t *mask_dims,
                           int mask_ndim, float *y, const int64_t *dims, int ndim)
{
	int64_t ms[SC_MAX_DIMS];
	sc_check_dims("softmax", dims, ndim);
	if (ndim < 1)
		SC_DIE("softmax_masked: a scalar has no axis");
	sc_bcast_strides("softmax mask", mask_dims, mask_ndim, dims, ndim, ms);
	float s = scale ? scale[0] : 1;
	int64_t len = dims[ndim - 1], rows = sc_numel(dims, ndim - 1);
#pragma omp parallel if (rows * len >= SC_PAR_MIN)
	{
		int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
		int64_t lo = rows * t / nt, hi = rows * (t + 1) / nt;
		Walk w;
		walk_init(&w, dims, ndim - 1, 1, ms, NULL, NULL);
		walk_seek(&w, lo);
		for (int64_t r = lo; r < hi; r++, walk_next(&w)) {
			if (ms[ndim - 1])
				softmax_row(x + r * len, s, mask + w.off[0], 1, y + r * len, len, 1, 0);
			else
				softmax_row(x + r * len, s, mask + w.off[0], 0, y + r * len, len, 1, 0);
		}
	}
}

SC_VECTOR_CLONES
void sc_cpu_softmax_grad(const float *y, const float *dy, float *dx, const int64_t *dims, int ndim, int axis,
                         int is_log)
{
	int64_t outer, len, inner;
	sc_check_dims("softmax_grad", dims, ndim);
	sc_split3(dims, ndim, sc_norm_axis("softmax_grad", axis, ndim), &outer, &len, &inner);
#pragma omp parallel for collapse(2) if (outer * len * inner >= SC_PAR_MIN) schedule(static)
	for (int64_t o = 0; o < outer; o++)
		for (int64_t i = 0; i < inner; i++) {
			int64_t base = o * len * inner + i;
			double s = 0;
			for (int64_t k = 0; k < len; k++)
				s += is_log ? (double)dy[base + k * inner] : (double)dy[base + k * inner] * y[base + k * inner];
			for (int64_t k = 0; k < len; k++) {
				int64_t j = base + k * inner;
				dx[j] = is_log ? (float)(dy[j] - exp((double)y[j]) * s) : (float)(y[j] * (dy[j] - s));
			}
		}
}

/* ---- reductions ---- */

void sc_cpu_reduce(sc_reduce_kind kind, const float *x, float *y, const int64_t *dims, int ndim, const int *axes,
                   int naxes)
{
	int64_t os[SC_MAX_DIMS];
	int64_t nout = reduce_strides("reduce", dims, ndim, axes, naxes, os);
	int64_t n = sc_numel(dims, ndim);
	double *acc = xcalloc((size_t)nout, sizeof *acc);
	if (kind == SC_R_MAX || kind == SC_R_MIN || kind == SC_R_PROD)
		for (int64_t o = 0; o < nout; o++)
			acc[o] = kind == SC_R_MAX ? -INFINITY : kind == SC_R_MIN ? INFINITY : 1;
	Walk w;
	walk_init(&w, dims, ndim, 1, os, NULL, NULL);
	for (int64_t i = 0; i < n; i++, walk_next(&w))
		if (kind == SC_R_MAX)   /* a NaN kept (fmax would drop it), as numpy's max */
			acc[w.off[0]] = SC_MAX_NAN(acc[w.off[0]], x[i]);
		else if (kind == SC_R_MIN)
			acc[w.off[0]] = SC_MIN_NAN(acc[w.off[0]], x[i]);
		else if (kind == SC_R_PROD)
			acc[w.off[0]] *= x[i];
		else
			acc[w.off[0]] += x[i];
	double count = (double)(n / nout);
	for (int64_t o = 0; o < nout; o++)
		y[o] = (float)(kind == SC_R_MEAN ? acc[o] / count : acc[o]);
	free(acc);
}

void sc_cpu_reduce_bool(int any, const uint8_t *x, uint8_t *y, const int64_t *dims, int ndim, const int *axes,
                        int naxes)
{
	int64_t os[SC_MAX_DIMS];
	int64_t nout = reduce_strides(any ? "reduce_any" : "reduce_all", dims, ndim, axes, naxes, os);
	int64_t n = sc_numel(dims, ndim);
	for (int64_t o = 0; o < nout; o++)
		y[o] = !any;
	Walk w;
	walk_init(&w, dims, ndim, 1, os, NULL, NULL);
	for (int64_t i = 0; i < n; i++, walk_next(&w))
		if ((x[i] != 0) == any)   /* one true decides Any, one false All */
			y[w.off[0]] = (uint8_t)any;
}

/* P, the product of the nonzero elements, and Z, how many are zero, of each
 * output (y's dims), in double. */
static void prod_stats(const float *x, double *P, int64_t *Z, const int64_t *dims, int ndim, const int64_t *os,
                       int64_t nout)
{
	for (int64_t o = 0; o < nout; o++)
		P[o] = 1, Z[o] = 0;
	Walk w;
	walk_init(&w, dims, ndim, 1, os, NULL, NULL);
	for (int64_t i = 0, n = sc_numel(dims, ndim); i < n; i++, walk_next(&w))
		if (x[i] == 0)
			Z[w.off[0]]++;
		else
			P[w.off[0]] *= x[i];
}

void sc_cpu_reduce_prod_stat(const float *x, int k, float *y, const int64_t *dims, int ndim, const int *axes,
                             int naxes)
{
	int64_t os[SC_MAX_DIMS];
	int64_t nout = reduce_strides("reduce_prod_stat", dims, ndim, axes, naxes, os);
	double *P = xcalloc((size_t)nout, sizeof *P);
	int64_t *Z = xcalloc((size_t)nout, sizeof *Z);
	prod_stats(x, P, Z, dims, ndim, os, nout);
	for (int64_t o = 0; o < nout; o++)
		y[o] = (float)(k ? (double)Z[o] : P[o]);
	free(P);
	free(Z);
}

void sc_cpu_reduce_prod_grad(const float *x, const float *dy, const float *prod, const float *zeros, float *dx,
                             const int64_t *dims, int ndim, const int *axes, int naxes)
{
	int64_t os[SC_MAX_DIMS];
	int64_t nout = reduce_strides("reduce_prod_grad", dims, ndim, axes, naxes, os);
	int64_t n = sc_numel(dims, ndim);
	double *P = xcalloc((size_t)nout, sizeof *P);
	int64_t *Z = xcalloc((size_t)nout, sizeof *Z);
	if (prod)
		for (int64_t o = 0; o < nout; o++)
			P[o] = prod[o], Z[o] = (int64_t)zeros[o];
	else
		prod_stats(x, P, Z, dims, ndim, os, nout);
	Walk w;
	walk_init(&w, dims, ndim, 1, os, NULL, NULL);
	for (int64_t i = 0; i < n; i++, walk_next(&w)) {
		int64_t o = w.off[0], others = Z[o] - (x[i] == 0);   /* the zeros among the other elements */
		dx[i] = others ? 0 : (float)(dy[o] * (x[i] == 0 ? P[o] : P[o] / x[i]));
	}
	free(P);
	free(Z);
}

/* One line of a scan: n elements `step` apart from p (the first in scan
 * order), started from c (0 or 1 plain; a split axis's carry). */
static void scan_line(int prod, const float *x, float *y, int64_t n, int64_t step, int exclusive, float c)
{
	float acc = c;
	for (int64_t t = 0; t < n; t++) {
		float v = x[t * step];
		if (exclusive)
			y[t * step] = acc;
		acc = prod ? acc * v : acc + v;
		if (!exclusive)
			y[t * step] = acc;
	}
}

/* CumProd's gradient on one line, dy scaled by c (a split axis's carry), in
 * scan order t: with A_t the product of the x before t and B_t = g_t +
 * x_(t+1) B_(t+1) (exclusive: B_t = g_(t+1) + x_(t+1) B_(t+1), B_last 0),
 * dx_t = A_t B_t. No division: exact at zeros. */
static void cumprod_grad_line(const float *x, const float *dy, float *dx, int64_t n, int64_t step, int exclusive,
                              float c)
{
	float b = 0, next_dy = 0, next_x = 0;
	for (int64_t t = n - 1; t >= 0; t--) {
		float g = dy[t * step] * c;
		b = exclusive ? (t == n - 1 ? 0 : next_dy + next_x * b) : (t == n - 1 ? g : g + next_x * b);
		next_dy = g;
		next_x = x[t * step];
		dx[t * step] = b;
	}
	float a = 1;
	for (int64_t t = 0; t < n; t++) {
		dx[t * step] *= a;
		a *= x[t * step];
	}
}

/* Line l of (outer, n, inner): its first element in scan order and the step. */
static int64_t scan_first(int64_t l, int64_t n, int64_t inner, int reverse, int64_t *step)
{
	*step = reverse ? -inner : inner;
	return (l / inner) * n * inner + l % inner + (reverse ? (n - 1) * inner : 0);
}

/* The carry of slice r of k along a split axis: the totals g (outer, k,
 * inner) of the slices before it (after it, reverse) summed (multiplied),
 * leaving slice `skip` out (-1: none). */
static float scan_carry(int prod, const float *g, int64_t l, int64_t k, int64_t inner, int64_t r, int reverse,
                        int64_t skip)
{
	float c = prod ? 1.0f : 0.0f;
	const float *gl = g + (l / inner) * k * inner + l % inner;
	for (int64_t q = reverse ? r + 1 : 0; q < (reverse ? k : r); q++)
		if (q != skip)
			c = prod ? c * gl[q * inner] : c + gl[q * inner];
	return c;
}

void sc_cpu_cumsum(int prod, const float *x, float *y, int64_t outer, int64_t n, int64_t inner, int exclusive,
                   int reverse)
{
	sc_cpu_cumsum_part(prod, x, NULL, y, 0, 1, outer, n, inner, exclusive, reverse);
}

void sc_cpu_cumsum_part(int prod, const float *x, const float *totals, float *y, int64_t offset, int64_t k,
                        int64_t outer, int64_t n, int64_t inner, int exclusive, int reverse)
{
	int64_t lines = outer * inner, r = n ? offset / n : 0;
#pragma omp parallel for if (lines * n >= SC_PAR_MIN) schedule(static)
	for (int64_t l = 0; l < lines; l++) {
		int64_t step, f = scan_first(l, n, inner, reverse, &step);
		float c = totals ? scan_carry(prod, totals, l, k, inner, r, reverse, -1) : prod ? 1.0f : 0.0f;
		scan_line(prod, x + f, y + f, n, step, exclusive, c);
	}
}

void sc_cpu_cumsum_grad(int prod, const float *x, const float *dy, float *dx, int64_t outer, int64_t n, int64_t inner,
                        int exclusive, int reverse)
{
	sc_cpu_cumsum_part_grad(prod, x, NULL, dy, dx, NULL, 0, 1, outer, n, inner, exclusive, reverse);
}

void sc_cpu_cumsum_part_grad(int prod, const float *x, const float *totals, const float *dy, float *dx, float *dtotals,
                             int64_t offset, int64_t k, int64_t outer, int64_t n, int64_t inner, int exclusive,
                             int reverse)
{
	int64_t lines = outer * inner, r = n ? offset / n : 0;
#pragma omp parallel for if (lines * n >= SC_PAR_MIN) schedule(static)
	for (int64_t l = 0; l < lines; l++) {
		int64_t step, f = scan_first(l, n, inner, reverse, &step);
		float c = totals ? scan_carry(prod, totals, l, k, inner, r, reverse, -1) : 1.0f;
		if (dx && prod)
			cumprod_grad_line(x + f, dy + f, dx + f, n, step, exclusive, c);
		else if (dx) {   /* the other way's scan of dy, from its far end */
			int64_t back = f + (n - 1) * step;
			scan_line(0, dy + back, dx + back, n, -step, exclusive, 0.0f);
		}
		if (!dtotals)
			continue;
		/* each earlier slice's total reaches every element of this one:
		 * dy times the local scan (CumProd) and the other carried totals */
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
}

/* count (y's dims) = how many elements of x along the reduced axes equal y */
void sc_cpu_count_equal(const float *x, const float *y, float *count, const int64_t *dims, int ndim, const int *axes,
                        int naxes)
{
	int64_t os[SC_MAX_DIMS];
	int64_t nout = reduce_strides("count_equal", dims, ndim, axes, naxes, os);
	int64_t n = sc_numel(dims, ndim);
	int64_t *ties = xcalloc((size_t)nout, sizeof *ties);
	Walk w;
	walk_init(&w, dims, ndim, 1, os, NULL, NULL);
	for (int64_t i = 0; i < n; i++, walk_next(&w))
		ties[w.off[0]] += x[i] == y[w.off[0]];
	for (int64_t o = 0; o < nout; o++)
		count[o] = (float)ties[o];
	free(ties);
}

void sc_cpu_reduce_max_grad(const float *x, const float *y, const float *dy, const float *count, float *dx,
                            const int64_t *dims, int ndim, const int *axes, int naxes)
{
	int64_t os[SC_MAX_DIMS];
	int64_t nout = reduce_strides("reduce_max_grad", dims, ndim, axes, naxes, os);
	int64_t n = sc_numel(dims, ndim);
	float *ties = NULL;
	if (!count) {
		ties = xcalloc((size_t)nout, sizeof *ties);
		sc_cpu_count_equal(x, y, ties, dims, ndim, axes, naxes);
		count = ties;
	}
	Walk w;
	walk_init(&w, dims, ndim, 1, os, NULL, NULL);
	for (int64_t i = 0; i < n; i++, walk_next(&w)) {
		int64_t o = w.off[0];
		dx[i] = x[i] == y[o] && count[o] > 0 ? dy[o] / count[o] : 0;
	}
	free(ties);
}

void sc_cpu_where_equal(const float *x, const float *y, const float *dy, float *dx, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		dx[i] = x[i] == y[i] ? dy[i] : 0;
}

void sc_cpu_select(const uint8_t *cond, const float *a, const float *b, float *y, int64_t n)
{
#pragma omp parallel for if (n >= SC_PAR_MIN) schedule(static)
	for (int64_t i = 0; i < n; i++)
		y[i] = cond[i] ? (a ? a[i] : 0) : (b ? b[i] : 0);
}

void sc_cpu_rotary(int64_t mode, int transpose, const float *x, const int64_t *n, const float *cos,
                   const int64_t *cos_dims, const float *sin, const int64_t *sin_dims, float *y)
{
	int64_t cs[4], ss[4], total = n[0] * n[1] * n[2] * n[3];
	sc_bcast_strides("rotary cos", cos_dims, 4, n, 4, cs);
	sc_bcast_strides("rotary sin", sin_dims, 4, n, 4, ss);
#pragma omp parallel for if (total >= SC_PAR_MIN) schedule(static)
	for (int64_t i = 0; i < total; i++) {
		int64_t off = SC_ROTARY_OFFSET(mode, i % n[3], n[3]), at = SC_ROTARY_AT(i, n, ss);
		float c = cos ? cos[SC_ROTARY_AT(i, n, cs)] : 0.0f, r = off > 0 ? -x[i + off] : x[i + off];
		float s = !sin ? 0.0f : transpose ? -sin[at + off] : sin[at];   /* -r(x sin): its partner's sin */
		y[i] = x[i] * c + r * s;
	}
}

/* ---- FlashAttentionScore: FlashAttention-2's tiles, online softmax ---- */

enum { FA_BR = 64, FA_BC = 128 };   /* a tile's query rows and keys: its scores (FA_BR, FA_BC) */

typedef struct {
	const float *q, *k, *v;   /* q (B, N, S, D), k and v (B, N_kv, T, D), in the layout's order (strides below) */
	const void *mask;
	int mask_float, causal;
	int64_t ms[3];            /* the mask's strides over b, h and i */
	int64_t n, s, t, d;       /* heads, queries, keys (S_kv), head dim */
	int64_t nkv, group;       /* key heads, and query heads a key head serves (1 but in GQA and MQA) */
	int64_t qs[3], ks[3];     /* strides over b, h and row of q, o, dout, dq; of k, v, dk, dv (sc_fa_strides) */
	float scale;
} FaArgs;

static FaArgs fa_args(const float *q, const float *k, const float *v, const void *mask, int mask_float,
                      const int64_t *mask_dims, const int64_t *dims, float scale, int causal, int layout)
{
	FaArgs a = {q, k, v, mask, mask_float, causal, {0, 0, 0}, dims[1], dims[2], dims[3], dims[4], dims[5],
	            dims[1] / dims[5], {0, 0, 0}, {0, 0, 0}, scale};
	if (dims[5] < 1 || dims[1] % dims[5])
		SC_DIE("flash_attention: %lld key heads do not divide %lld query heads", (long long)dims[5],
		       (long long)dims[1]);
	sc_fa_strides(layout, dims[1], dims[2], dims[4], a.qs);
	sc_fa_strides(layout, dims[5], dims[3], dims[4], a.ks);
	if (mask)
		SC_FA_MASK_STRIDES(mask_dims, a.ms);
	return a;
}

/* Where row i of query head bh = (b, h) starts in q (o, dout, dq alike). */
static int64_t fa_q(const FaArgs *a, int64_t bh, int64_t i)
{
	return bh / a->n * a->qs[0] + bh % a->n * a->qs[1] + i * a->qs[2];
}

/* Where row j of key head kh = (b, h) starts in k (v, dk, dv alike). */
static int64_t fa_k(const FaArgs *a, int64_t kh, int64_t j)
{
	return kh / a->nkv * a->ks[0] + kh % a->nkv * a->ks[1] + j * a->ks[2];
}

/* The key head (b, h / group) that query head bh = (b, h) reads. */
static int64_t fa_kv(const FaArgs *a, int64_t bh)
{
	return bh / a->n * a->nkv + bh % a->n / a->group;
}

/* The keys [0, end) query rows [i0, i0 + br) can see at all: causal stops at the last row. */
static int64_t fa_keys_end(const FaArgs *a, int64_t i0, int64_t br)
{
	return a->causal && i0 + br < a->t ? i0 + br : a->t;
}

/* sc (br, bc) = scale q k^T of head bh's rows [i0, i0 + br) and keys [j0,
 * j0 + bc), -inf where hidden. */
static void fa_scores(const FaArgs *a, int64_t bh, int64_t i0, int br, int64_t j0, int bc, float *sc)
{
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, br, bc, (int)a->d, a->scale, a->q + fa_q(a, bh, i0),
	            (int)a->qs[2], a->k + fa_k(a, fa_kv(a, bh), j0), (int)a->ks[2], 0.0f, sc, bc);
	if (!a->mask && (!a->causal || j0 + bc - 1 <= i0))   /* nothing hidden: below the diagonal, causal */
		return;
	int64_t b = bh / a->n, h = bh % a->n;
	for (int r = 0; r < br; r++)
		for (int c = 0; c < bc; c++)
			if (SC_FA_HIDDEN(a->mask, a->mask_float, a->ms, b, h, i0 + r, j0 + c, a->causal))
				sc[r * bc + c] = -INFINITY;
}

/* One row of a tile in the online softmax: p (n scores) becomes exp(p -
 * m'), m' the new running maximum; m and l (the running sum) move on and
 * the row's output o (d, when not NULL) is rescaled to m'. A row that has
 * seen no key yet (m' -inf) keeps weight 0. Sums in eight lanes, a fixed
 * order whatever the vector width. */
SC_VECTOR_CLONES
static void fa_row(float *p, int n, float *m, float *l, float *o, int d)
{
	float mx = *m;
#pragma omp simd reduction(max : mx)
	for (int c = 0; c < n; c++)
		mx = p[c] > mx ? p[c] : mx;
	if (mx == -INFINITY) {
		memset(p, 0, sizeof(float) * (size_t)n);
		return;
	}
	float alpha = sc_exp_nonpos(*m - mx);   /* 0 from -inf */
#pragma omp simd
	for (int c = 0; c < n; c++)
		p[c] = sc_exp_nonpos(p[c] - mx);
	float part[8] = {0};
	int n8 = n / 8 * 8;
	for (int c = 0; c < n8; c += 8)
		for (int q = 0; q < 8; q++)
			part[q] += p[c + q];
	for (int c = n8; c < n; c++)
		part[c - n8] += p[c];
	*l = *l * alpha + (((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7])));
	*m = mx;
	if (o && alpha != 1.0f)
#pragma omp simd
		for (int e = 0; e < d; e++)
			o[e] *= alpha;
}

/* br rows of d floats, ld apart, set to 0 */
static void fa_zero_rows(float *x, int br, int64_t d, int64_t ld)
{
	for (int r = 0; r < br; r++)
		memset(x + r * ld, 0, sizeof(float) * (size_t)d);
}

/* Rows [i0, i0 + br) of head bh: o (when not NULL: the first row's output,
 * rows qs[2] apart) the attention, lse each row's log-sum-exp of its scores
 * (+inf for a row that sees no key, so that its probabilities exp(s - lse)
 * are 0). sc: a tile (FA_BR, FA_BC). */
static void fa_rows(const FaArgs *a, int64_t bh, int64_t i0, int br, float *o, float *lse, float *sc)
{
	float m[FA_BR], l[FA_BR];
	int d = (int)a->d;
	int64_t ld = a->qs[2];
	for (int r = 0; r < br; r++)
		m[r] = -INFINITY, l[r] = 0.0f;
	if (o)
		fa_zero_rows(o, br, d, ld);
	int64_t end = fa_keys_end(a, i0, br);
	for (int64_t j0 = 0; j0 < end; j0 += FA_BC) {
		int bc = (int)(end - j0 < FA_BC ? end - j0 : FA_BC);
		fa_scores(a, bh, i0, br, j0, bc, sc);
		for (int r = 0; r < br; r++)
			fa_row(sc + r * bc, bc, &m[r], &l[r], o ? o + r * ld : NULL, d);
		if (o)
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, br, d, bc, 1.0f, sc, bc,
			            a->v + fa_k(a, fa_kv(a, bh), j0), (int)a->ks[2], 1.0f, o, (int)ld);
	}
	for (int r = 0; r < br; r++) {
		if (lse)
			lse[r] = l[r] > 0 ? m[r] + logf(l[r]) : INFINITY;
		if (o)
			for (int e = 0; e < d; e++)
				o[r * ld + e] = l[r] > 0 ? o[r * ld + e] / l[r] : 0.0f;
	}
}

void sc_cpu_flash_attention(const float *q, const float *k, const float *v, const void *mask, int mask_float,
                            const int64_t *mask_dims, float *o, const int64_t *dims, float scale, int causal,
                            int layout)
{
	FaArgs a = fa_args(q, k, v, mask, mask_float, mask_dims, dims, scale, causal, layout);
	int64_t nb = (a.s + FA_BR - 1) / FA_BR, tasks = dims[0] * a.n * nb;
#pragma omp parallel if (tasks > 1)
	{
		float *sc = malloc(sizeof(float) * FA_BR * FA_BC);
#pragma omp for schedule(dynamic)
		for (int64_t t = 0; t < tasks; t++) {
			int64_t bh = t / nb, i0 = t % nb * FA_BR;
			int br = (int)(a.s - i0 < FA_BR ? a.s - i0 : FA_BR);
			fa_rows(&a, bh, i0, br, o + fa_q(&a, bh, i0), NULL, sc);
		}
		free(sc);
	}
}

/* A tile's P = exp(s - lse) in p from its scores, row r's lse at lse[r] */
SC_VECTOR_CLONES
static void fa_probs(float *p, const float *lse, int br, int bc)
{
	for (int r = 0; r < br; r++)
#pragma omp simd
		for (int c = 0; c < bc; c++)
			p[r * bc + c] = sc_exp_nonpos(p[r * bc + c] - lse[r]);
}

/* ds = P (dP - D) from a tile's P and dP (in dp, overwritten), row r's D at dd[r] */
SC_VECTOR_CLONES
static void fa_ds(const float *p, float *dp, const float *dd, int br, int bc)
{
	for (int r = 0; r < br; r++)
#pragma omp simd
		for (int c = 0; c < bc; c++)
			dp[r * bc + c] = p[r * bc + c] * (dp[r * bc + c] - dd[r]);
}

void sc_cpu_flash_attention_grad(const float *q, const float *k, const float *v, const void *mask, int mask_float,
                                 const int64_t *mask_dims, const float *o, const float *dout, float *dq, float *dk,
                                 float *dv, const int64_t *dims, float scale, int causal, int layout)
{
	FaArgs a = fa_args(q, k, v, mask, mask_float, mask_dims, dims, scale, causal, layout);
	int64_t bhs = dims[0] * a.n, rows = bhs * a.s, nq = (a.s + FA_BR - 1) / FA_BR, nk = (a.t + FA_BC - 1) / FA_BC;
	int d = (int)a.d, lq = (int)a.qs[2], lk = (int)a.ks[2];
	/* each query row's lse and D = rowsum(dO o): (B N S) each, O(S) */
	float *lse = malloc(sizeof(float) * (size_t)(2 * rows + 1)), *dd = lse + rows;
#pragma omp parallel if (bhs * nq > 1)
	{
		float *sc = malloc(sizeof(float) * FA_BR * FA_BC), *dp = malloc(sizeof(float) * FA_BR * FA_BC);
#pragma omp for schedule(dynamic)
		for (int64_t t = 0; t < bhs * nq; t++) {
			int64_t bh = t / nq, i0 = t % nq * FA_BR;
			int br = (int)(a.s - i0 < FA_BR ? a.s - i0 : FA_BR);
			fa_rows(&a, bh, i0, br, NULL, lse + bh * a.s + i0, sc);
			for (int r = 0; r < br; r++) {
				const float *x = o + fa_q(&a, bh, i0 + r), *g = dout + fa_q(&a, bh, i0 + r);
				float sum = 0.0f;
				for (int e = 0; e < d; e++)
					sum += x[e] * g[e];
				dd[bh * a.s + i0 + r] = sum;
			}
		}
		if (dq) {   /* dQ = scale dS K, a query block at a time */
#pragma omp for schedule(dynamic)
			for (int64_t t = 0; t < bhs * nq; t++) {
				int64_t bh = t / nq, i0 = t % nq * FA_BR, end = fa_keys_end(&a, i0, FA_BR);
				int br = (int)(a.s - i0 < FA_BR ? a.s - i0 : FA_BR);
				float *g = dq + fa_q(&a, bh, i0);
				fa_zero_rows(g, br, d, lq);
				for (int64_t j0 = 0; j0 < end; j0 += FA_BC) {
					int bc = (int)(end - j0 < FA_BC ? end - j0 : FA_BC);
					fa_scores(&a, bh, i0, br, j0, bc, sc);
					fa_probs(sc, lse + bh * a.s + i0, br, bc);
					cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, br, bc, d, 1.0f, dout + fa_q(&a, bh, i0), lq,
					            v + fa_k(&a, fa_kv(&a, bh), j0), lk, 0.0f, dp, bc);
					fa_ds(sc, dp, dd + bh * a.s + i0, br, bc);
					cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, br, d, bc, scale, dp, bc,
					            k + fa_k(&a, fa_kv(&a, bh), j0), lk, 1.0f, g, lq);
				}
			}
		}
		if (dk || dv) {   /* dV = P^T dO and dK = scale dS^T Q, a key block at a time, summed over the query heads
		                   * the key head serves (one but in GQA and MQA), in head order */
#pragma omp for schedule(dynamic)
			for (int64_t t = 0; t < dims[0] * a.nkv * nk; t++) {
				int64_t kvh = t / nk, j0 = t % nk * FA_BC;
				int bc = (int)(a.t - j0 < FA_BC ? a.t - j0 : FA_BC);
				float *gk = dk ? dk + fa_k(&a, kvh, j0) : NULL, *gv = dv ? dv + fa_k(&a, kvh, j0) : NULL;
				if (gk)
					fa_zero_rows(gk, bc, d, lk);
				if (gv)
					fa_zero_rows(gv, bc, d, lk);
				for (int64_t bh = kvh / a.nkv * a.n + kvh % a.nkv * a.group, last = bh + a.group; bh < last; bh++)
					for (int64_t i0 = causal ? j0 / FA_BR * FA_BR : 0; i0 < a.s; i0 += FA_BR) {
						int br = (int)(a.s - i0 < FA_BR ? a.s - i0 : FA_BR);
						const float *rows_do = dout + fa_q(&a, bh, i0);
						fa_scores(&a, bh, i0, br, j0, bc, sc);
						fa_probs(sc, lse + bh * a.s + i0, br, bc);
						if (gv)
							cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, bc, d, br, 1.0f, sc, bc, rows_do, lq,
							            1.0f, gv, lk);
						if (!gk)
							continue;
						cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, br, bc, d, 1.0f, rows_do, lq,
						            v + fa_k(&a, kvh, j0), lk, 0.0f, dp, bc);
						fa_ds(sc, dp, dd + bh * a.s + i0, br, bc);
						cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, bc, d, br, scale, dp, bc,
						            q + fa_q(&a, bh, i0), lq, 1.0f, gk, lk);
					}
			}
		}
		free(sc);
		free(dp);
	}
	free(lse);
}

/* ---- computed constants ---- */

void sc_cpu_arange(void *y, sc_dtype dt, int64_t n, int64_t first, double start, double step)
{
	int64_t s = (int64_t)start, st = (int64_t)step;   /* exact: an integer range has integer start and step */
	switch (dt) {
	case SC_F32:
		for (int64_t i = 0; i < n; i++)
			((float *)y)[i] = (float)(start + (double)(first + i) * step);
		return;
	case SC_I32:
		for (int64_t i = 0; i < n; i++)
			((int32_t *)y)[i] = (int32_t)(s + (first + i) * st);
		return;
	case SC_I64:
		for (int64_t i = 0; i < n; i++)
			((int64_t *)y)[i] = s + (first + i) * st;
		return;
	case SC_BOOL: case SC_F16: case SC_BF16:
		break;
	}
	SC_DIE("sc_arange: %s is not Float32, Int32 or Int64", sc_dtype_name(dt));
}

/* The draw of element i of the whole under key k, in [0, 1) on a 2^-24 grid:
 * Dropout keeps the element where it is below keep_prob, DropoutGenMask
 * stores that, UniformReal the draw itself. */
static double dropout_u(uint64_t k, uint64_t i)
{
	return (double)(sc_splitmix64(k + i) >> 40) * 0x1p-24;
}

void sc_cpu_uniform_real(float *y, const int64_t *gdims, int ndim, const int64_t *start, const int64_t *ldims,
                         uint64_t k)
{
	int64_t gstride[SC_MAX_DIMS], idx[SC_MAX_DIMS] = {0}, n = 1, s = 1;
	for (int d = ndim - 1; d >= 0; d--) {
		gstride[d] = s;
		s *= gdims[d];
		n *= ldims[d];
	}
	for (int64_t l = 0; l < n; l++) {   /* sc_cpu_dropout's draw, exact in Float32 */
		uint64_t i = 0;
		for (int d = 0; d < ndim; d++)
			i += (uint64_t)((start[d] + idx[d]) * gstride[d]);
		y[l] = (float)dropout_u(k, i);
		for (int d = ndim - 1; d >= 0 && ++idx[d] == ldims[d]; d--)
			idx[d] = 0;
	}
}

void sc_cpu_dropout(const float *x, float *y, const int64_t *gdims, int ndim, const int64_t *start,
                    const int64_t *ldims, uint64_t k, double keep_prob)
{
	int64_t gstride[SC_MAX_DIMS], idx[SC_MAX_DIMS] = {0}, n = 1, s = 1;
	for (int d = ndim - 1; d >= 0; d--) {
		gstride[d] = s;
		s *= gdims[d];
		n *= ldims[d];
	}
	float scale = (float)(1.0 / (double)(float)keep_prob);
	for (int64_t l = 0; l < n; l++) {
		uint64_t i = 0;
		for (int d = 0; d < ndim; d++)
			i += (uint64_t)((start[d] + idx[d]) * gstride[d]);
		double u = dropout_u(k, i);
		y[l] = u < (double)(float)keep_prob ? x[l] * scale : 0.0f;
		for (int d = ndim - 1; d >= 0 && ++idx[d] == ldims[d]; d--)
			idx[d] = 0;
	}
}

void sc_cpu_dropout_gen_mask(uint8_t *m, const int64_t *gdims, int ndim, const int64_t *start, const int64_t *ldims,
                             uint64_t k, double keep_prob)
{
	int64_t gstride[SC_MAX_DIMS], idx[SC_MAX_DIMS] = {0}, n = 1, s = 1;
	for (int d = ndim - 1; d >= 0; d--) {
		gstride[d] = s;
		s *= gdims[d];
		n *= ldims[d];
	}
	for (int64_t l = 0; l < n; l++) {   /* sc_cpu_dropout's draw */
		uint64_t i = 0;
		for (int d = 0; d < ndim; d++)
			i += (uint64_t)((start[d] + idx[d]) * gstride[d]);
		double u = dropout_u(k, i);
		m[l] = u < (double)(float)keep_prob;
		for (int d = ndim - 1; d >= 0 && ++idx[d] == ldims[d]; d--)
			idx[d] = 0;
	}
}

void sc_cpu_dropout_do_mask(const float *x, const uint8_t *m, float *y, int64_t n, double keep_prob)
{
	float scale = (float)(1.0 / (double)(float)keep_prob);   /* sc_cpu_dropout's */
#pragma omp parallel for if (n >= SC_PAR_MIN) schedule(static)
	for (int64_t l = 0; l < n; l++)
		y[l] = m[l] ? x[l] * scale : 0.0f;
}

void sc_cpu_causal_mask(void *y, sc_dtype dt, int64_t lead, int64_t rows, int64_t cols, int64_t row0, int64_t col0,
                        double fill)
{
	if (dt != SC_F32 && dt != SC_BOOL)
		SC_DIE("sc_causal_mask: %s is not Float32 or Bool", sc_dtype_name(dt));
	float f = (float)fill;
#pragma omp parallel for if (lead * rows * cols >= SC_PAR_MIN) schedule(static)
	for (int64_t r = 0; r < lead * rows; r++) {
		int64_t row = row0 + r % rows;
		for (int64_t j = 0; j < cols; j++) {
			int masked = col0 + j > row;
			if (dt == SC_F32)
				((float *)y)[r * cols + j] = masked ? f : 0.0f;
			else
				((uint8_t *)y)[r * cols + j] = !masked;
		}
	}
}

void sc_cpu_eye(void *y, sc_dtype dt, int64_t rows, int64_t cols, int64_t row0, int64_t col0)
{
	for (int64_t i = 0; i < rows * cols; i++) {
		int one = row0 + i / cols == col0 + i % cols;
		switch (dt) {
		case SC_F32: ((float *)y)[i] = (float)one; break;
		case SC_I32: ((int32_t *)y)[i] = one; break;
		case SC_I64: ((int64_t *)y)[i] = one; break;
		case SC_BOOL: ((uint8_t *)y)[i] = (uint8_t)one; break;
		case SC_F16: case SC_BF16: SC_DIE("sc_eye: %s is not Float32, Int32, Int64 or Bool", sc_dtype_name(dt));
		}
	}
}

void sc_cpu_lin_space(float *y, int64_t n, int64_t first, float start, float stop, int64_t num)
{
	float step = num > 1 ? (stop - start) / (float)(num - 1) : 0.0f;
	for (int64_t i = 0; i < n; i++) {
		float t = step * (float)(first + i);   /* MindSpore's start + step * i, two roundings */
		y[i] = num > 1 ? start + t : start;
	}
}

void sc_cpu_rope(float *y, int is_sin, int64_t lead, int64_t rows, int64_t cols, int64_t row0, int64_t col0,
                 int64_t d, double theta)
{
#pragma omp parallel for if (lead * rows * cols >= SC_PAR_MIN) schedule(static)
	for (int64_t r = 0; r < lead * rows; r++) {
		float pos = (float)(row0 + r % rows);
		for (int64_t j = 0; j < cols; j++) {
			float angle = pos * SC_ROPE_FREQ(col0 + j, d, theta);
			y[r * cols + j] = (float)(is_sin ? sin((double)angle) : cos((double)angle));
		}
	}
}

/* ---- data movement ---- */

static void copy_elem(char *dst, const char *src, size_t es)
{
	switch (es) {
	case 1: *dst = *src; break;
	case 2: memcpy(dst, src, 2); break;
	case 4: memcpy(dst, src, 4); break;
	case 8: memcpy(dst, src, 8); break;
	default: memcpy(dst, src, es);
	}
}

/* y[i ys + j] = x[i + j xs] for i < rows, j < cols, in es-byte elements:
 * one 2-D transpose, in tiles that fit in L1 on both sides. */
static void transpose_2d(size_t es, const char *x, int64_t xs, char *y, int64_t ys, int64_t rows, int64_t cols)
{
	enum { T = 16 };
	for (int64_t i0 = 0; i0 < rows; i0 += T)
		for (int64_t j0 = 0; j0 < cols; j0 += T) {
			int64_t i1 = i0 + T < rows ? i0 + T : rows, j1 = j0 + T < cols ? j0 + T : cols;
			switch (es) {
			case 1:
				for (int64_t i = i0; i < i1; i++)
					for (int64_t j = j0; j < j1; j++)
						((uint8_t *)y)[i * ys + j] = ((const uint8_t *)x)[i + j * xs];
				break;
			case 2:
				for (int64_t i = i0; i < i1; i++)
					for (int64_t j = j0; j < j1; j++)
						((uint16_t *)y)[i * ys + j] = ((const uint16_t *)x)[i + j * xs];
				break;
			case 4:
				for (int64_t i = i0; i < i1; i++)
					for (int64_t j = j0; j < j1; j++)
						((uint32_t *)y)[i * ys + j] = ((const uint32_t *)x)[i + j * xs];
				break;
			case 8:
				for (int64_t i = i0; i < i1; i++)
					for (int64_t j = j0; j < j1; j++)
						((uint64_t *)y)[i * ys + j] = ((const uint64_t *)x)[i + j * xs];
				break;
			default:
				for (int64_t i = i0; i < i1; i++)
					for (int64_t j = j0; j < j1; j++)
						memcpy(y + (size_t)(i * ys + j) * es, x + (size_t)(i + j * xs) * es, es);
			}
		}
}

/* The permutation is first reduced to as few dims as it takes: y's dims of
 * size 1 dropped, neighbours merged where they are neighbours in x too
 * (perm (0, 2, 1, 3) on (B, S, H, D) stays 4 dims; (1, 0, 2) on (A, B, C)
 * would too; (2, 0, 1) on (A, B, C) becomes the 2-D (A B, C) -> (C, A B)).
 * Then either y's last dim is x's last (rows of x copied whole, one memcpy
 * each), or x's last dim sits at some p in y, and each slice over y's dims
 * p and last is a 2-D transpose. */
void sc_cpu_transpose(sc_dtype dt, const void *x, void *y, const int64_t *dims, int ndim, const int *perm)
{
	sc_check_dims("transpose", dims, ndim);
	int64_t xs[SC_MAX_DIMS], s[SC_MAX_DIMS], ydims[SC_MAX_DIMS];
	bool seen[SC_MAX_DIMS] = {0};
	row_strides(dims, ndim, xs);
	int nd = 0;
	for (int i = 0; i < ndim; i++) {
		if (perm[i] < 0 || perm[i] >= ndim || seen[perm[i]])
			SC_DIE("transpose: perm is not a permutation of 0..%d", ndim - 1);
		seen[perm[i]] = true;
		int64_t d = dims[perm[i]], st = xs[perm[i]];
		if (d == 1)
			continue;
		if (nd > 0 && s[nd - 1] == st * d) {
			ydims[nd - 1] *= d;
			s[nd - 1] = st;
			continue;
		}
		ydims[nd] = d;
		s[nd] = st;
		nd++;
	}
	size_t es = sc_dtype_size(dt);
	int64_t n = sc_numel(dims, ndim);
	if (nd == 0 || s[nd - 1] == 1) {   /* y's rows are x's rows */
		int64_t len = nd ? ydims[nd - 1] : 1, rows = n / len;
		Walk w;
		walk_init(&w, ydims, nd ? nd - 1 : 0, 1, s, NULL, NULL);
		for (int64_t r = 0; r < rows; r++, walk_next(&w))
			memcpy((char *)y + (size_t)(r * len) * es, (const char *)x + (size_t)w.off[0] * es, (size_t)len * es);
		return;
	}
	/* p: x's last dim (stride 1) in y. The others, without p and the last,
	 * are walked with x's strides and y's. */
	int p = 0;
	while (s[p] != 1)
		p++;
	int64_t ys[SC_MAX_DIMS], odims[SC_MAX_DIMS], oxs[SC_MAX_DIMS], oys[SC_MAX_DIMS];
	row_strides(ydims, nd, ys);
	int no = 0;
	for (int d = 0; d < nd - 1; d++)
		if (d != p) {
			odims[no] = ydims[d];
			oxs[no] = s[d];
			oys[no] = ys[d];
			no++;
		}
	int64_t slices = sc_numel(odims, no);
	Walk w;
	walk_init(&w, odims, no, 2, oxs, oys, NULL);
	for (int64_t k = 0; k < slices; k++, walk_next(&w))
		transpose_2d(es, (const char *)x + (size_t)w.off[0] * es, s[nd - 1], (char *)y + (size_t)w.off[1] * es, ys[p],
		             ydims[p], ydims[nd - 1]);
}

void sc_cpu_gather_axis(const float *table, int64_t outer, int64_t rows, int64_t row, const void *idx, sc_dtype idx_dt,
                        int64_t nidx, int64_t offset, float *y)
{
	for (int64_t o = 0; o < outer; o++, table += rows * row, y += nidx * row)
		for (int64_t i = 0; i < nidx; i++) {
			int64_t r = sc_index_at(idx, idx_dt, i) - offset;
			if (r >= 0 && r < rows)
				memcpy(y + i * row, table + r * row, (size_t)row * sizeof *y);
			else
				memset(y + i * row, 0, (size_t)row * sizeof *y);
		}
}

void sc_cpu_one_hot(const void *idx, sc_dtype idx_dt, int64_t outer, int64_t depth, int64_t inner, int64_t offset,
                    float on, float off, float *y)
{
	for (int64_t o = 0; o < outer; o++)
		for (int64_t i = 0; i < inner; i++) {
			int64_t c = sc_index_at(idx, idx_dt, o * inner + i) - offset;
			for (int64_t j = 0; j < depth; j++)
				y[(o * depth + j) * inner + i] = j == c ? on : off;
		}
}

void sc_cpu_gather(const float *table, int64_t rows, int64_t row, const void *idx, sc_dtype idx_dt, int64_t nidx,
                   int64_t offset, float *y)
{
	sc_cpu_gather_axis(table, 1, rows, row, idx, idx_dt, nidx, offset, y);
}

/* The row id reads in its slice, -1 for none: past limit, or outside [offset, offset + rows). */
static int64_t lookup_row(const void *idx, sc_dtype idx_dt, int64_t i, int64_t offset, int64_t limit, int64_t rows)
{
	int64_t id = sc_index_at(idx, idx_dt, i), r = id - offset;
	return id < limit && r >= 0 && r < rows ? r : -1;
}

void sc_cpu_embedding_lookup(const float *table, int64_t rows, int64_t row, const void *idx, sc_dtype idx_dt,
                             int64_t nidx, int64_t offset, int64_t limit, float *y)
{
	for (int64_t i = 0; i < nidx; i++) {
		int64_t r = lookup_row(idx, idx_dt, i, offset, limit, rows);
		if (r >= 0)
			memcpy(y + i * row, table + r * row, (size_t)row * sizeof *y);
		else
			memset(y + i * row, 0, (size_t)row * sizeof *y);
	}
}

void sc_cpu_embedding_lookup_grad(const float *dy, const void *idx, sc_dtype idx_dt, int64_t nidx, int64_t offset,
                                  int64_t limit, float *dtable, int64_t rows, int64_t row)
{
	memset(dtable, 0, (size_t)(rows * row) * sizeof *dtable);
	for (int64_t i = 0; i < nidx; i++) {
		int64_t r = lookup_row(idx, idx_dt, i, offset, limit, rows);
		for (int64_t j = 0; r >= 0 && j < row; j++)
			dtable[r * row + j] += dy[i * row + j];
	}
}

void sc_cpu_gather_axis_grad(const float *dy, const void *idx, sc_dtype idx_dt, int64_t nidx, int64_t offset,
                             float *dtable, int64_t outer, int64_t rows, int64_t row)
{
	memset(dtable, 0, (size_t)(outer * rows * row) * sizeof *dtable);
	for (int64_t o = 0; o < outer; o++, dtable += rows * row, dy += nidx * row)
		for (int64_t i = 0; i < nidx; i++) {
			int64_t r = sc_index_at(idx, idx_dt, i) - offset;
			if (r >= 0 && r < rows)
				for (int64_t j = 0; j < row; j++)
					dtable[r * row + j] += dy[i * row + j];
		}
}

void sc_cpu_gather_grad(const float *dy, const void *idx, sc_dtype idx_dt, int64_t nidx, int64_t offset,
                        float *dtable, int64_t rows, int64_t row)
{
	sc_cpu_gather_axis_grad(dy, idx, idx_dt, nidx, offset, dtable, 1, rows, row);
}

/* Element i of the index (dims idims) names x's element at that index
 * (less offset: x's slice along dim) along dim and i's own coordinates
 * elsewhere: its place in x (dims xdims), or -1 when the index lies outside
 * x's dim. */
static int64_t gather_d_at(const void *idx, sc_dtype idx_dt, const int64_t *idims, const int64_t *xdims, int ndim,
                           int dim, int64_t offset, int64_t i)
{
	int64_t r = sc_index_at(idx, idx_dt, i) - offset, off = 0, stride = 1;
	if (r < 0 || r >= xdims[dim])
		return -1;
	for (int d = ndim - 1; d >= 0; d--) {
		off += (d == dim ? r : i % idims[d]) * stride;
		i /= idims[d];
		stride *= xdims[d];
	}
	return off;
}

void sc_cpu_gather_d(const float *x, const int64_t *xdims, const void *idx, sc_dtype idx_dt, const int64_t *idims,
                     int ndim, int dim, int64_t offset, float *y)
{
	int64_t n = sc_numel(idims, ndim);
#pragma omp parallel for if (n > 65536)
	for (int64_t i = 0; i < n; i++) {
		int64_t at = gather_d_at(idx, idx_dt, idims, xdims, ndim, dim, offset, i);
		y[i] = at < 0 ? 0.0f : x[at];
	}
}

void sc_cpu_gather_d_grad(const float *dy, const void *idx, sc_dtype idx_dt, const int64_t *idims, float *dx,
                          const int64_t *xdims, int ndim, int dim, int64_t offset)
{
	int64_t n = sc_numel(idims, ndim);
	memset(dx, 0, (size_t)sc_numel(xdims, ndim) * sizeof *dx);
	for (int64_t i = 0; i < n; i++) {   /* serial: indices may repeat */
		int64_t at = gather_d_at(idx, idx_dt, idims, xdims, ndim, dim, offset, i);
		if (at >= 0)
			dx[at] += dy[i];
	}
}

/* x (dims[0..n), inner): the number of its slices, dims' product. */
static int64_t nd_rows(const int64_t *dims, int n)
{
	return sc_numel(dims, n);
}

void sc_cpu_gather_nd(const float *x, const int64_t *dims, int n, int64_t inner, const void *idx, sc_dtype idx_dt,
                      int64_t m, float *y)
{
#pragma omp parallel for if (m * inner > 65536)
	for (int64_t i = 0; i < m; i++) {
		int64_t r = sc_nd_row(idx, idx_dt, i, dims, n);
		for (int64_t j = 0; j < inner; j++)
			y[i * inner + j] = r < 0 ? 0.0f : x[r * inner + j];
	}
}

void sc_cpu_gather_nd_grad(const float *dy, const void *idx, sc_dtype idx_dt, int64_t m, float *dx,
                           const int64_t *dims, int n, int64_t inner)
{
	memset(dx, 0, (size_t)(nd_rows(dims, n) * inner) * sizeof *dx);
	for (int64_t i = 0; i < m; i++) {   /* serial, in order: indices may repeat */
		int64_t r = sc_nd_row(idx, idx_dt, i, dims, n);
		for (int64_t j = 0; r >= 0 && j < inner; j++)
			dx[r * inner + j] += dy[i * inner + j];
	}
}

/* One update u applied to an element a of x (sc_scatter_op's, the CUDA kernel's scatter_apply). */
static float scatter_apply(sc_scatter_op op, float a, float u)
{
	switch (op) {
	case SC_SCATTER_UPDATE: return u;
	case SC_SCATTER_ADD: return a + u;
	case SC_SCATTER_SUB: return a - u;
	case SC_SCATTER_MUL: return a * u;
	case SC_SCATTER_DIV: return a / u;
	case SC_SCATTER_MAX: return fmaxf(a, u);
	case SC_SCATTER_MIN: return fminf(a, u);
	}
	return a;
}

void sc_cpu_tensor_scatter(sc_scatter_op op, const float *x, const void *idx, sc_dtype idx_dt, int64_t m,
                           const float *upd, float *y, const int64_t *start, const int64_t *ldims, int n,
                           int64_t inner)
{
	if (y != x)
		memcpy(y, x, (size_t)(nd_rows(ldims, n) * inner) * sizeof *y);
	for (int64_t i = 0; i < m; i++) {   /* in order: the last of repeated indices wins an update */
		int64_t r = sc_nd_piece_row(idx, idx_dt, i, start, ldims, n);
		for (int64_t j = 0; r >= 0 && j < inner; j++)
			y[r * inner + j] = scatter_apply(op, y[r * inner + j], upd[i * inner + j]);
	}
}

/* Max's and Min's ties (MindSpore's TensorScatterPossibleReplacement):
 * for each element of x's piece, 1 where x equals y, plus the updates
 * equal to y there; (rows, inner), the caller frees it. */
static int64_t *scatter_ties(const float *x, const float *upd, const float *y, const void *idx, sc_dtype idx_dt,
                             int64_t m, const int64_t *start, const int64_t *ldims, int n, int64_t inner)
{
	int64_t total = nd_rows(ldims, n) * inner;
	int64_t *ties = xcalloc((size_t)total, sizeof *ties);
	for (int64_t e = 0; e < total; e++)
		ties[e] = x[e] == y[e];
	for (int64_t i = 0; i < m; i++) {
		int64_t r = sc_nd_piece_row(idx, idx_dt, i, start, ldims, n);
		for (int64_t j = 0; r >= 0 && j < inner; j++)
			ties[r * inner + j] += upd[i * inner + j] == y[r * inner + j];
	}
	return ties;
}

void sc_cpu_tensor_scatter_grad(sc_scatter_op op, int k, const float *dy, const float *x, const float *upd,
                                const float *y, const void *idx, sc_dtype idx_dt, int64_t m, float *dx,
                                const int64_t *start, const int64_t *ldims, int n, int64_t inner)
{
	int64_t *ties = op == SC_SCATTER_MAX || op == SC_SCATTER_MIN
	                ? scatter_ties(x, upd, y, idx, idx_dt, m, start, ldims, n, inner) : NULL;
	if (k == 0) {   /* x's: dy, its slices zeroed, scaled by the updates, or where x won, shared by the ties */
		int64_t total = nd_rows(ldims, n) * inner;
		if (ties)
			for (int64_t e = 0; e < total; e++)
				dx[e] = ties[e] ? (x[e] == y[e] ? dy[e] : 0.0f) / (float)ties[e] : 0.0f;   /* 0 ties: NaNs */
		else if (dx != dy)
			memcpy(dx, dy, (size_t)total * sizeof *dx);
		for (int64_t i = 0; !ties && op != SC_SCATTER_ADD && op != SC_SCATTER_SUB && i < m; i++) {
			int64_t r = sc_nd_piece_row(idx, idx_dt, i, start, ldims, n);
			for (int64_t j = 0; r >= 0 && j < inner; j++) {   /* Update's: the forward with 0 for every update */
				float u = op == SC_SCATTER_UPDATE ? 0.0f : upd[i * inner + j];
				dx[r * inner + j] = scatter_apply(op, dx[r * inner + j], u);
			}
		}
		free(ties);
		return;
	}
	for (int64_t i = 0; i < m; i++) {   /* updates': dy's slices (times what the op says), 0 at another rank's */
		int64_t r = sc_nd_piece_row(idx, idx_dt, i, start, ldims, n);
		for (int64_t j = 0; j < inner; j++) {
			int64_t e = r * inner + j;
			float u = upd ? upd[i * inner + j] : 0.0f, g = r < 0 ? 0.0f : dy[e];
			dx[i * inner + j] = r < 0 ? 0.0f
			                    : op == SC_SCATTER_SUB ? -g
			                    : op == SC_SCATTER_MUL ? x[e] * g
			                    : op == SC_SCATTER_DIV ? g * (x[e] / -(u * u))
			                    : ties ? (ties[e] ? (u == y[e] ? g : 0.0f) / (float)ties[e] : 0.0f) : g;
		}
	}
	free(ties);
}

/* Row (o, i) of x (outer, n, inner) along n: its sum of squares, given or summed. */
static double l2_sumsq(const float *x, const float *sumsq, int64_t n, int64_t inner, int64_t o, int64_t i)
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

void sc_cpu_l2_normalize(const float *x, const float *sumsq, float *y, int64_t outer, int64_t n, int64_t inner,
                         double eps)
{
#pragma omp parallel for collapse(2) if (outer * n * inner > 65536)
	for (int64_t o = 0; o < outer; o++)
		for (int64_t i = 0; i < inner; i++) {
			double s = l2_sumsq(x, sumsq, n, inner, o, i), r = sqrt(s > eps ? s : eps);
			for (int64_t j = 0; j < n; j++) {
				int64_t at = (o * n + j) * inner + i;
				y[at] = (float)(x[at] / r);
			}
		}
}

void sc_cpu_l2_normalize_grad(const float *x, const float *sumsq, const float *dy, float *dx, float *dsumsq,
                              int64_t outer, int64_t n, int64_t inner, double eps)
{
#pragma omp parallel for collapse(2) if (outer * n * inner > 65536)
	for (int64_t o = 0; o < outer; o++)
		for (int64_t i = 0; i < inner; i++) {
			double s = l2_sumsq(x, sumsq, n, inner, o, i), m = s > eps ? s : eps, r = sqrt(m), dot = 0;
			for (int64_t j = 0; j < n; j++)
				dot += (double)dy[(o * n + j) * inner + i] * x[(o * n + j) * inner + i];
			double ds = s >= eps ? -0.5 * dot / (m * r) : 0;   /* below eps the norm is constant */
			if (dsumsq)
				dsumsq[o * inner + i] = (float)ds;
			for (int64_t j = 0; dx && j < n; j++) {
				int64_t at = (o * n + j) * inner + i;
				dx[at] = (float)(dy[at] / r + (sumsq ? 0 : 2 * x[at] * ds));
			}
		}
}

/* BatchNorm: channel ch's mean and biased variance over x (n, c, hw), in double; the given ones when mean is not
 * NULL. */
static void bn_stats(const float *x, const float *mean, const float *var, int64_t n, int64_t c, int64_t hw, int64_t ch,
                     double *m, double *v)
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

void sc_cpu_batch_norm(const float *x, const float *scale, const float *bias, float *moving_mean, float *moving_var,
                       const float *batch_mean, const float *batch_var, float *y, int64_t n, int64_t c, int64_t hw,
                       double eps, double momentum, int64_t count, int mode)
{
#pragma omp parallel for if (n * c * hw > 65536)
	for (int64_t ch = 0; ch < c; ch++) {
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
		if (mode == SC_BN_TRAIN) {   /* MindSpore's update, the variance unbiased */
			moving_mean[ch] = (float)((1 - momentum) * moving_mean[ch] + momentum * m);
			moving_var[ch] = (float)((1 - momentum) * moving_var[ch] + momentum * v * (double)count / (double)(count - 1));
		}
	}
}

void sc_cpu_batch_norm_grad(const float *x, const float *dy, const float *scale, const float *mean, const float *var,
                            float *dx, float *dscale, float *dbias, float *dmean, float *dvar, int64_t n, int64_t c,
                            int64_t hw, double eps)
{
#pragma omp parallel for if (n * c * hw > 65536)
	for (int64_t ch = 0; ch < c; ch++) {
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

/* rows, cols of the normalization and the size of gamma */
static void norm_shape(const int64_t *dims, int ndim, int bna, int bpa, int64_t *rows, int64_t *cols, int64_t *np)
{
	sc_check_dims("norm", dims, ndim);
	bna = sc_norm_axis("norm begin_norm_axis", bna, ndim);
	bpa = sc_norm_axis("norm begin_params_axis", bpa, ndim);
	*rows = sc_numel(dims, bna);
	*cols = sc_numel(dims + bna, ndim - bna);
	*np = sc_numel(dims + bpa, ndim - bpa);
}

/* the centre (the mean, or 0 when not centered) and 1/std of one row; four
 * partial sums each, so that the double adds do not wait on one another.
 * Not centered, the second pass sums (x - 0)^2: the mean square. */
SC_VECTOR_CLONES
static void row_stats(const float *xr, int64_t cols, int centered, double eps, double *mean, double *rstd)
{
	double s[4] = {0}, v[4] = {0}, m = 0;
	int64_t j, n4 = cols / 4 * 4;
	if (centered) {
		for (j = 0; j < n4; j += 4)
			for (int k = 0; k < 4; k++)
				s[k] += xr[j + k];
		for (; j < cols; j++)
			s[0] += xr[j];
		m = (s[0] + s[1] + s[2] + s[3]) / (double)cols;
	}
	for (j = 0; j < n4; j += 4)
		for (int k = 0; k < 4; k++)
			v[k] += (xr[j + k] - m) * (xr[j + k] - m);
	for (; j < cols; j++)
		v[0] += (xr[j] - m) * (xr[j] - m);
	*mean = m;
	*rstd = 1.0 / sqrt((v[0] + v[1] + v[2] + v[3]) / (double)cols + eps);
}

/* gamma and beta repeat every np elements of x, np a multiple of cols or a
 * divisor of it: row r's piece j0.. (span long) reads them from (r cols +
 * j0) % np on. */
static int64_t norm_span(int64_t cols, int64_t np)
{
	return np < cols ? np : cols;
}

SC_VECTOR_CLONES
void sc_cpu_norm(int centered, const float *x, const float *gamma, const float *beta, float *y, const int64_t *dims,
                 int ndim, int begin_norm_axis, int begin_params_axis, double eps)
{
	int64_t rows, cols, np;
	norm_shape(dims, ndim, begin_norm_axis, begin_params_axis, &rows, &cols, &np);
	int64_t span = norm_span(cols, np);
#pragma omp parallel for if (rows * cols >= SC_PAR_MIN) schedule(static)
	for (int64_t r = 0; r < rows; r++) {
		double mean, rstd;
		const float *xr = x + r * cols;
		float *yr = y + r * cols;
		row_stats(xr, cols, centered, eps, &mean, &rstd);
		for (int64_t j0 = 0; j0 < cols; j0 += span) {
			int64_t p0 = (r * cols + j0) % np;
			const float *g = gamma + p0;
			if (beta) {
				const float *be = beta + p0;
				for (int64_t q = 0; q < span; q++)
					yr[j0 + q] = (float)((xr[j0 + q] - mean) * rstd * g[q] + be[q]);
			} else {
				for (int64_t q = 0; q < span; q++)
					yr[j0 + q] = (float)((xr[j0 + q] - mean) * rstd * g[q]);
			}
		}
	}
}

/* Two passes, each split over threads without changing a sum's order: the
 * rows (each row's dx from its own sums), then the parameters (each one's
 * dgamma and dbeta summed over the rows in order, as one thread would). Not
 * centered, dx has no mean(g gamma) term (m1 is 0). */
SC_VECTOR_CLONES
void sc_cpu_norm_grad(int centered, const float *dy, const float *x, const float *gamma, float *dx, float *dgamma,
                      float *dbeta, const int64_t *dims, int ndim, int begin_norm_axis, int begin_params_axis,
                      double eps)
{
	int64_t rows, cols, np;
	norm_shape(dims, ndim, begin_norm_axis, begin_params_axis, &rows, &cols, &np);
	int64_t span = norm_span(cols, np);
	double *mean = xcalloc((size_t)(2 * rows), sizeof *mean), *rstd = mean + rows;
	int par = rows * cols >= SC_PAR_MIN;
#pragma omp parallel for if (par) schedule(static)
	for (int64_t r = 0; r < rows; r++) {
		const float *xr = x + r * cols, *dyr = dy + r * cols;
		row_stats(xr, cols, centered, eps, &mean[r], &rstd[r]);
		if (!dx)
			continue;
		double m1 = 0, m2 = 0;
		for (int64_t j0 = 0; j0 < cols; j0 += span) {
			const float *g = gamma + (r * cols + j0) % np;
			for (int64_t q = 0; q < span; q++) {
				double xh = (xr[j0 + q] - mean[r]) * rstd[r], gq = (double)dyr[j0 + q] * g[q];
				m1 += gq;
				m2 += gq * xh;
			}
		}
		m1 = centered ? m1 / (double)cols : 0;
		m2 /= (double)cols;
		float *dxr = dx + r * cols;
		for (int64_t j0 = 0; j0 < cols; j0 += span) {
			const float *g = gamma + (r * cols + j0) % np;
			for (int64_t q = 0; q < span; q++) {
				double xh = (xr[j0 + q] - mean[r]) * rstd[r], gq = (double)dyr[j0 + q] * g[q];
				dxr[j0 + q] = (float)(rstd[r] * (gq - m1 - xh * m2));
			}
		}
	}
	if (dgamma || dbeta) {
		double *dg = xcalloc((size_t)(2 * np), sizeof *dg), *db = dg + np;
#pragma omp parallel if (par)
		{
			int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
			int64_t lo = np * t / nt, hi = np * (t + 1) / nt;
			for (int64_t r = 0; r < rows; r++) {
				const float *xr = x + r * cols, *dyr = dy + r * cols;
				for (int64_t j0 = 0; j0 < cols; j0 += span) {
					int64_t p0 = (r * cols + j0) % np;
					int64_t q0 = lo > p0 ? lo - p0 : 0, q1 = hi - p0 < span ? hi - p0 : span;
					for (int64_t q = q0; q < q1; q++) {
						double xh = (xr[j0 + q] - mean[r]) * rstd[r];
						dg[p0 + q] += dyr[j0 + q] * xh;
						db[p0 + q] += dyr[j0 + q];
					}
				}
			}
			for (int64_t p = lo; p < hi; p++) {
				if (dgamma)
					dgamma[p] = (float)dg[p];
				if (dbeta)
					dbeta[p] = (float)db[p];
			}
		}
		free(dg);
	}
	free(mean);
}

void sc_cpu_norm_part(int centered, const float *x, const float *gamma, const float *beta, const float *mean,
                      const float *var, float *y, int64_t rows, int64_t cols, double eps)
{
	for (int64_t r = 0; r < rows; r++) {
		double rstd = 1 / sqrt((double)var[r] + eps), m = centered ? (double)mean[r] : 0;
		for (int64_t j = 0; j < cols; j++)
			y[r * cols + j] = (float)((x[r * cols + j] - m) * rstd * gamma[j] + (beta ? beta[j] : 0));
	}
}

/* dx is g gamma rstd either way (the statistics held fixed); dvar is
 * -rstd^3 / 2 sum(g gamma (x - mean)), the mean 0 when not centered. */
void sc_cpu_norm_part_grad(int centered, const float *dy, const float *x, const float *gamma, const float *mean,
                           const float *var, float *dx, float *dgamma, float *dbeta, float *dmean, float *dvar,
                           int64_t rows, int64_t cols, double eps)
{
	double *dg = xcalloc((size_t)cols, sizeof *dg), *db = xcalloc((size_t)cols, sizeof *db);
	for (int64_t r = 0; r < rows; r++) {
		double rstd = 1 / sqrt((double)var[r] + eps), m = centered ? (double)mean[r] : 0, s1 = 0, s2 = 0;
		for (int64_t j = 0; j < cols; j++) {
			int64_t i = r * cols + j;
			double xc = x[i] - m, g = (double)dy[i] * gamma[j];
			s1 += g;
			s2 += g * xc;
			dg[j] += dy[i] * xc * rstd;
			db[j] += dy[i];
			if (dx)
				dx[i] = (float)(g * rstd);
		}
		if (dmean)
			dmean[r] = (float)(-rstd * s1);
		if (dvar)
			dvar[r] = (float)(-0.5 * rstd * rstd * rstd * s2);
	}
	for (int64_t j = 0; j < cols; j++) {
		if (dgamma)
			dgamma[j] = (float)dg[j];
		if (dbeta)
			dbeta[j] = (float)db[j];
	}
	free(dg);
	free(db);
}

void sc_cpu_concat(sc_dtype dt, const void *const *xs, const int64_t *axis_sizes, int nx, void *y,
                   const int64_t *y_dims, int ndim, int axis)
{
	sc_check_dims("concat", y_dims, ndim);
	axis = sc_norm_axis("concat", axis, ndim);
	int64_t outer, len, inner, sum = 0;
	sc_split3(y_dims, ndim, axis, &outer, &len, &inner);
	for (int k = 0; k < nx; k++)
		sum += axis_sizes[k];
	if (sum != len)
		SC_DIE("concat: the inputs' sizes along axis %d add to %lld, the output has %lld", axis, (long long)sum,
		       (long long)len);
	size_t es = sc_dtype_size(dt);
	for (int64_t o = 0; o < outer; o++) {
		int64_t at = 0;
		for (int k = 0; k < nx; k++) {
			size_t chunk = (size_t)(axis_sizes[k] * inner) * es;
			memcpy((char *)y + (size_t)((o * len + at) * inner) * es, (const char *)xs[k] + (size_t)o * chunk, chunk);
			at += axis_sizes[k];
		}
	}
}

/* The walk over a slice: output dims, each output dim's stride in x, and
 * the box of the output that lies in x (real); whether the slice reaches
 * past x somewhere comes back in past. */
static int64_t slice_walk(const int64_t *dims, int ndim, const int64_t *begin, const int64_t *end,
                          const int64_t *strides, int64_t *odims, int64_t *step, int64_t *real, bool *past)
{
	int64_t b[SC_MAX_DIMS], xs[SC_MAX_DIMS], base = 0;
	*past = sc_slice_norm(dims, ndim, begin, end, strides, b, odims, real);
	row_strides(dims, ndim, xs);
	for (int d = 0; d < ndim; d++) {
		base += b[d] * xs[d];
		step[d] = strides[d] * xs[d];
	}
	return base;
}

void sc_cpu_strided_slice(sc_dtype dt, const void *x, void *y, const int64_t *dims, int ndim, const int64_t *begin,
                          const int64_t *end, const int64_t *strides)
{
	int64_t odims[SC_MAX_DIMS], step[SC_MAX_DIMS], real[SC_MAX_DIMS], ys[SC_MAX_DIMS];
	bool past;
	int64_t base = slice_walk(dims, ndim, begin, end, strides, odims, step, real, &past);
	size_t es = sc_dtype_size(dt);
	Walk w;
	if (!past) {
		int64_t n = sc_numel(odims, ndim);
		walk_init(&w, odims, ndim, 1, step, NULL, NULL);
		for (int64_t i = 0; i < n; i++, walk_next(&w))
			copy_elem((char *)y + (size_t)i * es, (const char *)x + (size_t)(base + w.off[0]) * es, es);
		return;
	}
	/* Past x: zeros (all-zero bytes are 0, +0 and false in every dtype),
	 * then the box that lies in x, at its place in y. */
	memset(y, 0, (size_t)sc_numel(odims, ndim) * es);
	int64_t n = sc_numel(real, ndim);
	row_strides(odims, ndim, ys);
	walk_init(&w, real, ndim, 2, step, ys, NULL);
	for (int64_t i = 0; i < n; i++, walk_next(&w))
		copy_elem((char *)y + (size_t)w.off[1] * es, (const char *)x + (size_t)(base + w.off[0]) * es, es);
}

void sc_cpu_strided_slice_grad(const float *dy, float *dx, const int64_t *dims, int ndim, const int64_t *begin,
                               const int64_t *end, const int64_t *strides)
{
	int64_t odims[SC_MAX_DIMS], step[SC_MAX_DIMS], real[SC_MAX_DIMS], ys[SC_MAX_DIMS];
	bool past;
	int64_t base = slice_walk(dims, ndim, begin, end, strides, odims, step, real, &past);
	memset(dx, 0, (size_t)sc_numel(dims, ndim) * sizeof *dx);
	Walk w;
	if (!past) {
		int64_t n = sc_numel(odims, ndim);
		walk_init(&w, odims, ndim, 1, step, NULL, NULL);
		for (int64_t i = 0; i < n; i++, walk_next(&w))
			dx[base + w.off[0]] = dy[i];
		return;
	}
	/* dy's part past x has no place in dx: only the box in x is placed. */
	int64_t n = sc_numel(real, ndim);
	row_strides(odims, ndim, ys);
	walk_init(&w, real, ndim, 2, step, ys, NULL);
	for (int64_t i = 0; i < n; i++, walk_next(&w))
		dx[base + w.off[0]] = dy[w.off[1]];
}

/* element i of a float tensor (float32, float16, bfloat16) as float32, exactly */
static float float_at(const void *x, sc_dtype dt, int64_t i)
{
	return dt == SC_F32 ? ((const float *)x)[i]
	     : dt == SC_F16 ? sc_f16_to_float(((const uint16_t *)x)[i]) : sc_bf16_to_float(((const uint16_t *)x)[i]);
}

void sc_cpu_round(float *x, sc_dtype dt, int64_t n)
{
	enum { CHUNK = 1 << 12 };
	if (!sc_is_half(dt))
		SC_DIE("sc_round: to %s, not a half type", sc_dtype_name(dt));
#pragma omp parallel for if (n >= SC_PAR_MIN) schedule(static)
	for (int64_t i = 0; i < n; i += CHUNK) {   /* through a half buffer on the stack, a chunk at a time */
		uint16_t h[CHUNK];
		int64_t m = n - i < CHUNK ? n - i : CHUNK;
		sc_host_narrow(x + i, h, dt, m);
		sc_host_widen(h, dt, x + i, m);
	}
}

/* Row r of a matrix keeps the columns j with j - r - row0 + col0 at most
 * diagonal (Tril: [0, end)) or at least diagonal (Triu: [begin, cols)); a
 * zero of every dtype is all bits 0. diagonal lies in [-rows, cols] of the
 * whole (emit_args.c), so nothing here overflows. */
void sc_cpu_triangle(int upper, const void *x, void *y, sc_dtype dt, int64_t lead, int64_t rows, int64_t cols,
                     int64_t row0, int64_t col0, int64_t diagonal)
{
	size_t es = sc_dtype_size(dt);
#pragma omp parallel for if (lead * rows * cols >= SC_PAR_MIN) schedule(static)
	for (int64_t r = 0; r < lead * rows; r++) {
		int64_t edge = diagonal + row0 + r % rows - col0;   /* the last column Tril keeps, the first Triu does */
		int64_t lo = upper ? edge : 0, hi = upper ? cols : edge + 1;
		lo = lo < 0 ? 0 : lo > cols ? cols : lo;
		hi = hi < lo ? lo : hi > cols ? cols : hi;
		char *yr = (char *)y + (size_t)(r * cols) * es;
		const char *xr = (const char *)x + (size_t)(r * cols) * es;
		memset(yr, 0, (size_t)lo * es);
		if (x != y)
			memcpy(yr + (size_t)lo * es, xr + (size_t)lo * es, (size_t)(hi - lo) * es);
		memset(yr + (size_t)hi * es, 0, (size_t)(cols - hi) * es);
	}
}

/* y filled with value, then each row of x (its last dim) copied whole to
 * its place in y: the row's index split over x's other dims, each at lo
 * further in y. */
void sc_cpu_pad(sc_dtype dt, const void *x, void *y, const int64_t *dims, const int64_t *ydims, int ndim,
                const int64_t *lo, double value)
{
	int64_t ys[SC_MAX_DIMS], base = 0, cols = dims[ndim - 1], rows = sc_numel(dims, ndim) / cols;
	size_t es = sc_dtype_size(dt);
	row_strides(ydims, ndim, ys);
	for (int d = 0; d < ndim; d++)
		base += lo[d] * ys[d];
	sc_cpu_fill(y, dt, sc_numel(ydims, ndim), value);
#pragma omp parallel for if (rows * cols >= SC_PAR_MIN) schedule(static)
	for (int64_t r = 0; r < rows; r++) {
		int64_t off = base, rest = r;
		for (int d = ndim - 2; d >= 0; d--) {
			off += rest % dims[d] * ys[d];
			rest /= dims[d];
		}
		memcpy((char *)y + (size_t)off * es, (const char *)x + (size_t)(r * cols) * es, (size_t)cols * es);
	}
}

void sc_cpu_fill_pad(const void *x, void *y, sc_dtype dt, int64_t outer, int64_t mid, int64_t inner, int64_t real,
                     double value)
{
	size_t es = sc_dtype_size(dt), row = (size_t)(mid * inner) * es, keep = (size_t)(real * inner) * es;
	for (int64_t o = 0; o < outer; o++) {
		char *yo = (char *)y + (size_t)o * row;
		if (x != y)
			memcpy(yo, (const char *)x + (size_t)o * row, keep);
		sc_cpu_fill(yo + keep, dt, (mid - real) * inner, value);
	}
}

void sc_cpu_cast(const void *x, sc_dtype x_dt, void *y, sc_dtype y_dt, int64_t n)
{
	/* Between Float32 and a half type (every half operand, in mixed precision
	 * every cast weight and activation): half.c's loops, which inline the
	 * conversion, instead of a dispatch per element. */
	enum { CHUNK = 1 << 14 };
	if (sc_is_half(x_dt) && y_dt == SC_F32) {
#pragma omp parallel for if (n >= SC_PAR_MIN) schedule(static)
		for (int64_t i = 0; i < n; i += CHUNK)
			sc_host_widen((const uint16_t *)x + i, x_dt, (float *)y + i, n - i < CHUNK ? n - i : CHUNK);
		return;
	}
	if (x_dt == SC_F32 && sc_is_half(y_dt)) {
#pragma omp parallel for if (n >= SC_PAR_MIN) schedule(static)
		for (int64_t i = 0; i < n; i += CHUNK)
			sc_host_narrow((const float *)x + i, (uint16_t *)y + i, y_dt, n - i < CHUNK ? n - i : CHUNK);
		return;
	}
	for (int64_t i = 0; i < n; i++) {
		if (x_dt == SC_F32 || sc_is_half(x_dt)) {
			float v = float_at(x, x_dt, i);
			switch (y_dt) {
			case SC_F32: ((float *)y)[i] = v; break;
			case SC_F16: ((uint16_t *)y)[i] = sc_f16_from_double(v); break;
			case SC_BF16: ((uint16_t *)y)[i] = sc_bf16_from_float(v); break;
			case SC_I32: ((int32_t *)y)[i] = v != v ? 0 : v >= 2147483647.0f ? INT32_MAX
			                               : v <= -2147483648.0f ? INT32_MIN : (int32_t)v; break;
			case SC_I64: ((int64_t *)y)[i] = v != v ? 0 : v >= 9.2233720e18f ? INT64_MAX
			                               : v <= -9.2233720e18f ? INT64_MIN : (int64_t)v; break;
			case SC_BOOL: ((uint8_t *)y)[i] = v != 0; break;
			}
			continue;
		}
		int64_t v = x_dt == SC_I32 ? ((const int32_t *)x)[i] : x_dt == SC_I64 ? ((const int64_t *)x)[i]
		          : x_dt == SC_BOOL ? ((const uint8_t *)x)[i] != 0 : 0;
		switch (y_dt) {
		case SC_F32: ((float *)y)[i] = (float)v; break;
		case SC_F16: ((uint16_t *)y)[i] = sc_f16_from_double((double)v); break;
		case SC_BF16: ((uint16_t *)y)[i] = sc_bf16_from_double((double)v); break;
		case SC_I32: ((int32_t *)y)[i] = (int32_t)v; break;
		case SC_I64: ((int64_t *)y)[i] = v; break;
		case SC_BOOL: ((uint8_t *)y)[i] = v != 0; break;
		}
	}
}

/* ---- losses ---- */

/* log-sum-exp and max of one row of logits */
static double row_lse(const float *x, int64_t c, float *mx)
{
	*mx = -INFINITY;
	for (int64_t j = 0; j < c; j++)
		*mx = fmaxf(*mx, x[j]);
	double s = 0;
	for (int64_t j = 0; j < c; j++)
		s += exp((double)x[j] - *mx);
	return log(s);
}

void sc_cpu_sparse_softmax_ce(const float *logits, const void *labels, sc_dtype label_dt, float *loss, int64_t n,
                              int64_t c)
{
	double total = 0;
	for (int64_t i = 0; i < n; i++) {
		int64_t l = sc_index_at(labels, label_dt, i);
		if (l < 0 || l >= c)
			continue;
		float mx;
		double lse = row_lse(logits + i * c, c, &mx);
		total += lse - ((double)logits[i * c + l] - mx);
	}
	loss[0] = (float)(total / (double)n);
}

void sc_cpu_sparse_softmax_ce_grad(const float *logits, const void *labels, sc_dtype label_dt, const float *dloss,
                                   float *dlogits, int64_t n, int64_t c)
{
	double scale = (dloss ? dloss[0] : 1.0) / (double)n;
	for (int64_t i = 0; i < n; i++) {
		int64_t l = sc_index_at(labels, label_dt, i);
		float mx;
		const float *x = logits + i * c;
		double lse = row_lse(x, c, &mx);
		for (int64_t j = 0; j < c; j++)
			dlogits[i * c + j] = l < 0 || l >= c ? 0 : (float)((exp((double)x[j] - mx - lse) - (j == l)) * scale);
	}
}

void sc_cpu_sparse_softmax_ce_part(const float *logits, const void *labels, sc_dtype label_dt, const float *max,
                                   const float *sum, float *loss, int64_t n, int64_t c, int64_t offset)
{
	for (int64_t i = 0; i < n; i++) {
		int64_t l = sc_index_at(labels, label_dt, i) - offset;
		loss[i] = l >= 0 && l < c ? (float)(log((double)sum[i]) + max[i] - logits[i * c + l]) : 0;
	}
}

void sc_cpu_sparse_softmax_ce_part_grad(const float *logits, const void *labels, sc_dtype label_dt,
                                        const float *max, const float *sum, const float *dloss, float *dlogits,
                                        int64_t n, int64_t c, int64_t offset, int64_t classes)
{
	for (int64_t i = 0; i < n; i++) {
		int64_t label = sc_index_at(labels, label_dt, i), l = label - offset;
		double dy = label >= 0 && label < classes ? dloss[i] : 0;
		for (int64_t j = 0; j < c; j++)
			dlogits[i * c + j] = (float)((exp((double)logits[i * c + j] - max[i]) / sum[i] - (j == l)) * dy);
	}
}

void sc_cpu_softmax_ce(const float *logits, const float *labels, float *loss, int64_t n, int64_t c)
{
	for (int64_t i = 0; i < n; i++) {
		const float *x = logits + i * c, *t = labels + i * c;
		float mx;
		double lse = row_lse(x, c, &mx), s = 0;
		for (int64_t j = 0; j < c; j++)
			s += (double)t[j] * (lse - ((double)x[j] - mx));
		loss[i] = (float)s;
	}
}

void sc_cpu_softmax_ce_grad(const float *logits, const float *labels, const float *dloss, float *dlogits, int64_t n,
                            int64_t c)
{
	for (int64_t i = 0; i < n; i++) {
		const float *x = logits + i * c, *t = labels + i * c;
		double dy = dloss ? dloss[i] : 1.0;
		float mx;
		double lse = row_lse(x, c, &mx);
		for (int64_t j = 0; j < c; j++)   /* x[j] and t[j] read before dlogits[j] is written (in place) */
			dlogits[i * c + j] = (float)((exp((double)x[j] - mx - lse) - t[j]) * dy);
	}
}

void sc_cpu_softmax_ce_part(const float *logits, const float *labels, const float *max, const float *sum, float *loss,
                            int64_t n, int64_t c)
{
	for (int64_t i = 0; i < n; i++) {
		double lse = log((double)sum[i]) + max[i], s = 0;
		for (int64_t j = 0; j < c; j++)
			s += (double)labels[i * c + j] * (lse - logits[i * c + j]);
		loss[i] = (float)s;
	}
}

void sc_cpu_softmax_ce_part_grad(const float *logits, const float *labels, const float *max, const float *sum,
                                 const float *dloss, float *dlogits, int64_t n, int64_t c)
{
	for (int64_t i = 0; i < n; i++) {
		double dy = dloss ? dloss[i] : 1.0;
		for (int64_t j = 0; j < c; j++)
			dlogits[i * c + j] =
				(float)((exp((double)logits[i * c + j] - max[i]) / sum[i] - labels[i * c + j]) * dy);
	}
}

void sc_cpu_mse_loss(const float *pred, const float *target, float *loss, int64_t n)
{
	double s = 0;
	for (int64_t i = 0; i < n; i++)
		s += ((double)pred[i] - target[i]) * ((double)pred[i] - target[i]);
	loss[0] = (float)(s / (double)n);
}

void sc_cpu_mse_loss_grad(const float *pred, const float *target, const float *dloss, float *dpred, int64_t n)
{
	double scale = 2.0 * (dloss ? dloss[0] : 1.0) / (double)n;
	for (int64_t i = 0; i < n; i++)
		dpred[i] = (float)(((double)pred[i] - target[i]) * scale);
}

void sc_cpu_l2_loss(const float *x, float *loss, int64_t n)
{
	double s = 0;
	for (int64_t i = 0; i < n; i++)
		s += (double)x[i] * x[i];
	loss[0] = (float)(s / 2);
}

void sc_cpu_l2_loss_grad(const float *x, const float *dloss, float *dx, int64_t n)
{
	double g = dloss ? dloss[0] : 1.0;
	for (int64_t i = 0; i < n; i++)
		dx[i] = (float)(x[i] * g);
}

/* MindSpore's KLDivLoss element in Float32: y (log y - x), 0 where NaN (y 0) */
static float kldiv_elem(float x, float y)
{
	float v = (logf(y) - x) * y;
	return isnan(v) ? 0.0f : v;
}

void sc_cpu_kldiv_loss(const float *x, const float *y, float *out, int64_t n, int reduce, double scale)
{
	if (!reduce) {
		for (int64_t i = 0; i < n; i++)
			out[i] = kldiv_elem(x[i], y[i]);
		return;
	}
	double s = 0;
	for (int64_t i = 0; i < n; i++)
		s += (double)kldiv_elem(x[i], y[i]);
	out[0] = (float)(s * scale);
}

void sc_cpu_kldiv_loss_grad(const float *y, const float *dout, float *dx, int64_t n, int reduce, double scale)
{
	if (!reduce) {
		for (int64_t i = 0; i < n; i++)
			dx[i] = -(y[i] * dout[i]);
		return;
	}
	float g = (float)(-scale * (dout ? dout[0] : 1.0));
	for (int64_t i = 0; i < n; i++)
		dx[i] = y[i] * g;
}

/* ---- Lerp ---- */

/* Lerp's three operands' strides over y's dims (0 where broadcast). */
static void lerp_strides(const int64_t *s_dims, int s_ndim, const int64_t *e_dims, int e_ndim, const int64_t *w_dims,
                         int w_ndim, const int64_t *y_dims, int y_ndim, int64_t st[3][SC_MAX_DIMS])
{
	sc_bcast_strides("lerp start", s_dims, s_ndim, y_dims, y_ndim, st[0]);
	sc_bcast_strides("lerp end", e_dims, e_ndim, y_dims, y_ndim, st[1]);
	sc_bcast_strides("lerp weight", w_dims, w_ndim, y_dims, y_ndim, st[2]);
}

void sc_cpu_lerp(const float *start, const int64_t *s_dims, int s_ndim, const float *end, const int64_t *e_dims,
                 int e_ndim, const float *w, const int64_t *w_dims, int w_ndim, float *y, const int64_t *y_dims,
                 int y_ndim)
{
	int64_t st[3][SC_MAX_DIMS], n = sc_numel(y_dims, y_ndim);
	lerp_strides(s_dims, s_ndim, e_dims, e_ndim, w_dims, w_ndim, y_dims, y_ndim, st);
	Walk k;
	walk_init(&k, y_dims, y_ndim, 3, st[0], st[1], st[2]);
	for (int64_t i = 0; i < n; i++, walk_next(&k)) {
		float a = start[k.off[0]], b = end[k.off[1]];
		y[i] = a + w[k.off[2]] * (b - a);
	}
}

/* Operand k's terms summed in double over the elements of y that read each
 * of its own, in y's order, then rounded once. */
void sc_cpu_lerp_grad(int which, const float *start, const int64_t *s_dims, int s_ndim, const float *end,
                      const int64_t *e_dims, int e_ndim, const float *w, const int64_t *w_dims, int w_ndim,
                      const float *dy, const int64_t *y_dims, int y_ndim, float *dx)
{
	int64_t st[3][SC_MAX_DIMS], n = sc_numel(y_dims, y_ndim);
	const int64_t *dims[3] = {s_dims, e_dims, w_dims};
	int ndims[3] = {s_ndim, e_ndim, w_ndim};
	if (which < 0 || which > 2)
		SC_DIE("lerp_grad: operand %d is not start (0), end (1) or weight (2)", which);
	int64_t nx = sc_numel(dims[which], ndims[which]);
	lerp_strides(s_dims, s_ndim, e_dims, e_ndim, w_dims, w_ndim, y_dims, y_ndim, st);
	double *acc = xcalloc((size_t)nx, sizeof *acc);
	Walk k;
	walk_init(&k, y_dims, y_ndim, 3, st[0], st[1], st[2]);
	for (int64_t i = 0; i < n; i++, walk_next(&k)) {
		double g = dy[i], t = w[k.off[2]];
		acc[k.off[which]] += which == 0 ? g * (1 - t) : which == 1 ? g * t : g * ((double)end[k.off[1]] - start[k.off[0]]);
	}
	for (int64_t i = 0; i < nx; i++)
		dx[i] = (float)acc[i];
	free(acc);
}

void sc_cpu_masked_fill(const float *x, const int64_t *x_dims, int x_ndim, const uint8_t *mask, const int64_t *m_dims,
                        int m_ndim, const float *value, float *y, const int64_t *y_dims, int y_ndim)
{
	int64_t sx[SC_MAX_DIMS], sm[SC_MAX_DIMS], n = sc_numel(y_dims, y_ndim);
	sc_bcast_strides("masked_fill x", x_dims, x_ndim, y_dims, y_ndim, sx);
	sc_bcast_strides("masked_fill mask", m_dims, m_ndim, y_dims, y_ndim, sm);
	Walk k;
	walk_init(&k, y_dims, y_ndim, 2, sx, sm, NULL);
	for (int64_t i = 0; i < n; i++, walk_next(&k))
		y[i] = mask[k.off[1]] ? value[0] : x[k.off[0]];
}

/* x's or value's terms summed in double over the elements of y that read
 * each of its own, in y's order, then rounded once. */
void sc_cpu_masked_fill_grad(int which, const int64_t *x_dims, int x_ndim, const uint8_t *mask, const int64_t *m_dims,
                             int m_ndim, const float *dy, const int64_t *y_dims, int y_ndim, float *dx)
{
	if (which != 0 && which != 2)
		SC_DIE("masked_fill_grad: operand %d is not x (0) or value (2)", which);
	int64_t sx[SC_MAX_DIMS], sm[SC_MAX_DIMS], n = sc_numel(y_dims, y_ndim);
	int64_t nx = which == 0 ? sc_numel(x_dims, x_ndim) : 1;
	sc_bcast_strides("masked_fill_grad x", x_dims, x_ndim, y_dims, y_ndim, sx);
	sc_bcast_strides("masked_fill_grad mask", m_dims, m_ndim, y_dims, y_ndim, sm);
	double *acc = xcalloc((size_t)nx, sizeof *acc);
	Walk k;
	walk_init(&k, y_dims, y_ndim, 2, sx, sm, NULL);
	for (int64_t i = 0; i < n; i++, walk_next(&k))
		if ((mask[k.off[1]] != 0) == (which == 2))
			acc[which == 0 ? k.off[0] : 0] += dy[i];
	for (int64_t i = 0; i < nx; i++)
		dx[i] = (float)acc[i];
	free(acc);
}

void sc_cpu_l1_loss(const float *pred, const float *target, float *loss, int64_t n)
{
	double s = 0;
	for (int64_t i = 0; i < n; i++)
		s += fabs((double)pred[i] - target[i]);
	loss[0] = (float)(s / (double)n);
}

void sc_cpu_l1_loss_grad(const float *pred, const float *target, const float *dloss, float *dpred, int64_t n)
{
	double scale = (dloss ? dloss[0] : 1.0) / (double)n;
	for (int64_t i = 0; i < n; i++)
		dpred[i] = (float)((pred[i] > target[i] ? 1 : pred[i] < target[i] ? -1 : 0) * scale);
}

/* ---- broadcasting gradients ---- */

/* The gradients of the operators past Minimum, dy times dy/da and dy/db,
 * in double: Pow's b a^(b-1) and a^b log a, the latter 0 where a <= 0 (log
 * a undefined; MindSpore's and PyTorch's exponent gradient of a
 * non-positive base); FloorDiv's and TruncateDiv's 0 (MindSpore's);
 * FloorMod's, Mod's and TruncateMod's 1 and minus the quotient they cut
 * (floor, trunc, trunc: MindSpore's); SquaredDifference's 2 (a - b),
 * -2 (a - b); DivNoNan's 1 / b and -(a / b) / b, both 0 where b == 0
 * (MindSpore's: dy DivNoNan'd by b, then times minus the result); Atan2's
 * b / (a^2 + b^2) and -a / (a^2 + b^2) (MindSpore's, NaN at (0, 0));
 * SigmoidCrossEntropyWithLogits' sigmoid(a) - b and -a. The rest take dy
 * into their masks, as MindSpore's bprops do: Xlogy's Xlogy(dy, b) (0 where
 * dy == 0, even where log b is infinite), 0 where a == 0 and b <= 0, and
 * dy a / b; Xdivy's dy / b and -dy a / b^2, 0 where a == 0; MulNoNan's
 * MulNoNan(dy, b) and MulNoNan(a, dy) (0 where the second factor is 0);
 * Hypot's dy a / hypot and dy b / hypot (NaN at (0, 0), MindSpore's);
 * NextAfter's dy and 0; Zeta's 0 and -a zeta(a + 1, b) dy (MindSpore's). */
static double term_a(sc_binop op, double g, double a, double b)
{
	switch (op) {
	case SC_POW: return g * (b * pow(a, b - 1));
	case SC_FLOOR_MOD: case SC_MOD: case SC_TRUNCATE_MOD: return g;
	case SC_SQUARED_DIFF: return g * (2 * (a - b));
	case SC_DIV_NO_NAN: return g * (b == 0 ? 0 : 1 / b);
	case SC_ATAN2: return g * (b / (a * a + b * b));
	case SC_SIGMOID_CE: return g * (1 / (1 + exp(-a)) - b);
	case SC_XLOGY: return g == 0 || (a == 0 && b <= 0) ? 0 : g * log(b);
	case SC_XDIVY: return g * (a == 0 ? 0 : 1 / b);
	case SC_MUL_NO_NAN: return b == 0 ? 0 : g * b;
	case SC_HYPOT: return g * (a / hypot(a, b));
	case SC_NEXT_AFTER: return g;
	default: return 0;
	}
}

static double term_b(sc_binop op, double g, double a, double b)
{
	switch (op) {
	case SC_POW: return g * (a > 0 ? pow(a, b) * log(a) : 0);
	case SC_FLOOR_MOD: return g * -floor(a / b);
	case SC_MOD: case SC_TRUNCATE_MOD: return g * -trunc(a / b);
	case SC_SQUARED_DIFF: return g * (-2 * (a - b));
	case SC_DIV_NO_NAN: return g * (b == 0 ? 0 : -(a / b) / b);
	case SC_ATAN2: return g * (-a / (a * a + b * b));
	case SC_SIGMOID_CE: return g * -a;
	case SC_XLOGY: return g * a / b;
	case SC_XDIVY: return g * (a == 0 ? 0 : -a / (b * b));
	case SC_MUL_NO_NAN: return g == 0 ? 0 : a * g;
	case SC_HYPOT: return g * (b / hypot(a, b));
	case SC_ZETA: return g * -a * sc_zeta(a + 1, b);
	default: return 0;
	}
}

/* da and db where a, b and y have one shape: one term each, no sums */
SC_VECTOR_CLONES
static void binary_grad_same(sc_binop op, const float *a, const float *b, const float *dy, float *da, float *db,
                             int64_t n)
{
#pragma omp parallel for if (n >= SC_PAR_MIN) schedule(static)
	for (int64_t i = 0; i < n; i++) {
		double g = dy[i];
		if (da)
			switch (op) {
			case SC_ADD: case SC_SUB: da[i] = (float)g; break;
			case SC_MUL: da[i] = (float)(g * b[i]); break;
			case SC_DIV: da[i] = (float)(g / b[i]); break;
			case SC_MAXIMUM: da[i] = a[i] > b[i] ? (float)g : a[i] == b[i] ? (float)(g / 2) : 0; break;
			case SC_MINIMUM: da[i] = a[i] < b[i] ? (float)g : a[i] == b[i] ? (float)(g / 2) : 0; break;
			default: da[i] = (float)term_a(op, g, a[i], b[i]); break;
			}
		if (db)
			switch (op) {
			case SC_ADD: db[i] = (float)g; break;
			case SC_SUB: db[i] = (float)-g; break;
			case SC_MUL: db[i] = (float)(g * a[i]); break;
			case SC_DIV: db[i] = (float)-(g * a[i] / ((double)b[i] * b[i])); break;
			case SC_MAXIMUM: db[i] = a[i] < b[i] ? (float)g : a[i] == b[i] ? (float)(g / 2) : 0; break;
			case SC_MINIMUM: db[i] = a[i] > b[i] ? (float)g : a[i] == b[i] ? (float)(g / 2) : 0; break;
			default: db[i] = (float)term_b(op, g, a[i], b[i]); break;
			}
	}
}

/* The gradient of the operand of y's shape when the other is one element
 * and has none asked for (attention's scores times its scale): no sum, so
 * one pass on the threads, each element the general path's bits (its
 * double starts at +0, hence the 0 + and 0 - ). */
SC_VECTOR_CLONES
static void scalar_operand_grad(sc_binop op, const float *a, const float *b, const float *dy, float *da, float *db,
                                int64_t n)
{
	float *d = da ? da : db;
	const float *full = da ? a : b;
	double v = da ? b[0] : a[0];
#pragma omp parallel for simd if (n >= SC_PAR_MIN) schedule(static)
	for (int64_t i = 0; i < n; i++) {
		double g = dy[i], r;
		switch (op) {
		case SC_ADD: r = 0 + g; break;
		case SC_SUB: r = da ? 0 + g : 0 - g; break;
		case SC_MUL: r = 0 + g * v; break;
		case SC_DIV: r = da ? 0 + g / v : 0 - g * v / ((double)full[i] * full[i]); break;
		case SC_MAXIMUM: case SC_MINIMUM: r = NAN; break;   /* they take the general path */
		default: r = 0 + (da ? term_a(op, g, full[i], v) : term_b(op, g, v, full[i])); break;
		}
		d[i] = (float)r;
	}
}

void sc_cpu_binary_grad(sc_binop op, const float *a, const int64_t *a_dims, int a_ndim, const float *b,
                        const int64_t *b_dims, int b_ndim, const float *dy, const int64_t *y_dims, int y_ndim,
                        float *da, float *db)
{
	Bcast c;
	bcast_collapse("binary_grad a", "binary_grad b", a_dims, a_ndim, b_dims, b_ndim, y_dims, y_ndim, &c);
	int last = c.ndim - 1;
	int64_t len = c.dims[last], rows = sc_numel(c.dims, last);
	int64_t na = sc_numel(a_dims, a_ndim), nb = sc_numel(b_dims, b_ndim);
	if (c.ndim == 1 && c.sa[0] == 1 && c.sb[0] == 1) {
		binary_grad_same(op, a, b, dy, da, db, len);
		return;
	}
	if (op != SC_MAXIMUM && op != SC_MINIMUM &&
	    ((!db && na == rows * len && nb == 1) || (!da && nb == rows * len && na == 1))) {
		scalar_operand_grad(op, a, b, dy, da, db, rows * len);
		return;
	}
	/* sums over the broadcast dims, in double, in y's order */
	double *ga = xcalloc((size_t)na, sizeof *ga), *gb = xcalloc((size_t)nb, sizeof *gb);
	int64_t sa = c.sa[last], sb = c.sb[last];
	Walk w;
	walk_init(&w, c.dims, last, 2, c.sa, c.sb, NULL);
	for (int64_t r = 0; r < rows; r++, walk_next(&w)) {
		for (int64_t j = 0, ia = w.off[0], ib = w.off[1]; j < len; j++, ia += sa, ib += sb) {
			double g = dy[r * len + j];
			switch (op) {
			case SC_ADD: ga[ia] += g; gb[ib] += g; break;
			case SC_SUB: ga[ia] += g; gb[ib] -= g; break;
			case SC_MUL: ga[ia] += g * b[ib]; gb[ib] += g * a[ia]; break;
			case SC_DIV: ga[ia] += g / b[ib]; gb[ib] -= g * a[ia] / ((double)b[ib] * b[ib]); break;
			default: ga[ia] += term_a(op, g, a[ia], b[ib]); gb[ib] += term_b(op, g, a[ia], b[ib]); break;
			case SC_MAXIMUM: case SC_MINIMUM:   /* a tie splits the gradient evenly */
				if (a[ia] == b[ib]) {
					ga[ia] += g / 2;
					gb[ib] += g / 2;
				} else if ((a[ia] > b[ib]) == (op == SC_MAXIMUM))
					ga[ia] += g;
				else
					gb[ib] += g;
				break;
			}
		}
	}
	for (int64_t i = 0; da && i < na; i++)
		da[i] = (float)ga[i];
	for (int64_t i = 0; db && i < nb; i++)
		db[i] = (float)gb[i];
	free(ga);
	free(gb);
}

void sc_cpu_sum_to_shape(const float *x, const int64_t *x_dims, int x_ndim, float *y, const int64_t *y_dims,
                         int y_ndim)
{
	int64_t sy[SC_MAX_DIMS];
	sc_bcast_strides("sum_to_shape", y_dims, y_ndim, x_dims, x_ndim, sy);
	int64_t n = sc_numel(x_dims, x_ndim), ny = sc_numel(y_dims, y_ndim);
	double *acc = xcalloc((size_t)ny, sizeof *acc);
	Walk w;
	walk_init(&w, x_dims, x_ndim, 1, sy, NULL, NULL);
	for (int64_t i = 0; i < n; i++, walk_next(&w))
		acc[w.off[0]] += x[i];
	for (int64_t i = 0; i < ny; i++)
		y[i] = (float)acc[i];
	free(acc);
}

void sc_cpu_broadcast_to(const float *x, const int64_t *x_dims, int x_ndim, float *y, const int64_t *y_dims,
                         int y_ndim)
{
	int64_t sx[SC_MAX_DIMS];
	sc_bcast_strides("broadcast_to", x_dims, x_ndim, y_dims, y_ndim, sx);
	int64_t n = sc_numel(y_dims, y_ndim);
	Walk w;
	walk_init(&w, y_dims, y_ndim, 1, sx, NULL, NULL);
	for (int64_t i = 0; i < n; i++, walk_next(&w))
		y[i] = x[w.off[0]];
}

/* Each column summed over the rows in order, as one thread would; the rows
 * are walked in memory order (a row of sums), each thread its block of
 * columns. */
SC_VECTOR_CLONES
void sc_cpu_bias_add_grad(const float *dy, float *dbias, int64_t rows, int64_t c)
{
	double *acc = xcalloc((size_t)c, sizeof *acc);
#pragma omp parallel if (rows * c >= SC_PAR_MIN)
	{
		int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
		int64_t j0 = c * t / nt, j1 = c * (t + 1) / nt;
		for (int64_t r = 0; r < rows; r++)
			for (int64_t j = j0; j < j1; j++)
				acc[j] += dy[r * c + j];
		for (int64_t j = j0; j < j1; j++)
			dbias[j] = (float)acc[j];
	}
	free(acc);
}

/* ---- optimizers ---- */

SC_VECTOR_CLONES
void sc_cpu_sgd(float *p, const float *g, float *accum, int64_t n, double lr, double momentum, double dampening,
                double weight_decay, int nesterov, int64_t step)
{
	float l = (float)lr, mu = (float)momentum, damp = (float)(1 - dampening), wd = (float)weight_decay;
	if (momentum > 0 && !accum)
		SC_DIE("sgd: momentum %g needs an accumulation buffer", momentum);
#pragma omp parallel for if (n >= SC_PAR_MIN) schedule(static)
	for (int64_t i = 0; i < n; i++) {
		float gi = g[i] + wd * p[i];
		if (momentum > 0) {
			accum[i] = step <= 1 ? gi : mu * accum[i] + damp * gi;
			gi = nesterov ? gi + mu * accum[i] : accum[i];
		}
		p[i] -= l * gi;
	}
}

SC_VECTOR_CLONES
void sc_cpu_momentum(float *p, const float *g, float *v, int64_t n, double lr, double momentum, double weight_decay,
                     int nesterov)
{
	float l = (float)lr, mu = (float)momentum, wd = (float)weight_decay;
#pragma omp parallel for if (n >= SC_PAR_MIN) schedule(static)
	for (int64_t i = 0; i < n; i++) {
		float gi = g[i] + wd * p[i];
		v[i] = mu * v[i] + gi;
		p[i] -= nesterov ? l * gi + l * mu * v[i] : l * v[i];
	}
}

SC_VECTOR_CLONES
void sc_cpu_adam(float *p, const float *g, float *m, float *v, int64_t n, double lr, double beta1, double beta2,
                 double eps, double weight_decay, int64_t step)
{
	if (step < 1)
		SC_DIE("adam: step %lld (steps count from 1)", (long long)step);
	float b1 = (float)beta1, b2 = (float)beta2, e = (float)eps, wd = (float)weight_decay;
	float lr_t = (float)(lr * sqrt(1 - pow(beta2, (double)step)) / (1 - pow(beta1, (double)step)));
#pragma omp parallel for if (n >= SC_PAR_MIN) schedule(static)
	for (int64_t i = 0; i < n; i++) {
		float gi = g[i] + wd * p[i];
		m[i] += (1 - b1) * (gi - m[i]);
		v[i] += (1 - b2) * (gi * gi - v[i]);
		p[i] -= lr_t * m[i] / (sqrtf(v[i]) + e);
	}
}

SC_VECTOR_CLONES
void sc_cpu_adam_weight_decay(float *p, const float *g, float *m, float *v, int64_t n, double lr, double beta1,
                              double beta2, double eps, double weight_decay)
{
	float l = (float)lr, b1 = (float)beta1, b2 = (float)beta2, e = (float)eps, wd = (float)weight_decay;
#pragma omp parallel for if (n >= SC_PAR_MIN) schedule(static)
	for (int64_t i = 0; i < n; i++) {
		m[i] = b1 * m[i] + (1 - b1) * g[i];
		v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
		p[i] -= l * (m[i] / (sqrtf(v[i]) + e) + wd * p[i]);
	}
}

/* nn.Lamb's bias corrections 1 - b^t, in Float32 as MindSpore's kernel takes them. */
static void lamb_corrections(double beta1, double beta2, int64_t step, float *c1, float *c2)
{
	if (step < 1)
		SC_DIE("lamb: step %lld (steps count from 1)", (long long)step);
	*c1 = (float)(1 - pow(beta1, (double)step));
	*c2 = (float)(1 - pow(beta2, (double)step));
}

/* Lamb's update of one element from this step's m and v (LambApplyOptimizerAssign). */
static inline float lamb_update(float p, float m, float v, float c1, float c2, float e, float wd)
{
	return (m / c1) / (sqrtf(v / c2) + e) + wd * p;
}

void sc_cpu_lamb_norms(const float *p, const float *g, const float *m, const float *v, int64_t n, double beta1,
                       double beta2, double eps, double weight_decay, int64_t step, float *out)
{
	float c1, c2, b1 = (float)beta1, b2 = (float)beta2, e = (float)eps, wd = (float)weight_decay;
	lamb_corrections(beta1, beta2, step, &c1, &c2);
	double sw = 0, su = 0;   /* in order, as sc_cpu_sum_squares: the same sums on any thread count */
	for (int64_t i = 0; i < n; i++) {
		float mi = b1 * m[i] + (1 - b1) * g[i], vi = b2 * v[i] + (1 - b2) * g[i] * g[i];
		float u = lamb_update(p[i], mi, vi, c1, c2, e, wd);
		sw += (double)p[i] * p[i];
		su += (double)u * u;
	}
	out[0] = (float)sw;
	out[1] = (float)su;
}

SC_VECTOR_CLONES
void sc_cpu_lamb(float *p, const float *g, float *m, float *v, int64_t n, double lr, double beta1, double beta2,
                 double eps, double weight_decay, int64_t step, const float *norms)
{
	float c1, c2, b1 = (float)beta1, b2 = (float)beta2, e = (float)eps, wd = (float)weight_decay, l = (float)lr;
	lamb_corrections(beta1, beta2, step, &c1, &c2);
	float wn = sqrtf(norms[0]), un = sqrtf(norms[1]);
	float r = wn > 0 && un > 0 ? wn / (un + FLT_MIN) : 1;   /* 2^-126, as MindSpore's divisor */
#pragma omp parallel for if (n >= SC_PAR_MIN) schedule(static)
	for (int64_t i = 0; i < n; i++) {
		m[i] = b1 * m[i] + (1 - b1) * g[i];
		v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
		p[i] -= lamb_update(p[i], m[i], v[i], c1, c2, e, wd) * l * r;
	}
}

/* ---- gradient clipping ---- */

void sc_cpu_sum_squares(const float *const *xs, const int64_t *ns, int nx, float *out)
{
	double s = 0;
	for (int k = 0; k < nx; k++)
		for (int64_t i = 0; i < ns[k]; i++)
			s += (double)xs[k][i] * xs[k][i];
	out[0] = (float)s;
}

void sc_cpu_clip_by_norm(const float *x, float *y, int64_t n, const float *sqnorm, double clip)
{
	double norm = sqrt((double)sqnorm[0]);
	float scale = (float)(clip / (norm > clip ? norm : clip));
	for (int64_t i = 0; i < n; i++)
		y[i] = x[i] * scale;
}

/* ---- picking along an axis: ArgMaxWithValue, Argmax, TopK ----
 * The order they pick in: the larger value first (is_min: the smaller), a
 * NaN before every number (numpy's argmax and argmin return the first NaN),
 * and among equals the lower index. */
static int pick_before(float a, int64_t ia, float b, int64_t ib, int is_min)
{
	int an = isnan(a), bn = isnan(b);
	if (an != bn)
		return an;
	if (!an && a != b)
		return is_min ? a < b : a > b;
	return ia < ib;
}

/* The index along n of (o, i)'s pick in x viewed (outer, n, inner). */
static int64_t arg_pick(const float *x, int64_t o, int64_t n, int64_t inner, int64_t i, int is_min)
{
	const float *p = x + o * n * inner + i;
	int64_t best = 0;
	for (int64_t j = 1; j < n; j++)
		if (pick_before(p[j * inner], j, p[best * inner], best, is_min))
			best = j;
	return best;
}

void sc_cpu_arg_reduce(const float *x, int64_t outer, int64_t n, int64_t inner, int is_min, int32_t *idx, float *val)
{
	for (int64_t o = 0; o < outer; o++)
		for (int64_t i = 0; i < inner; i++) {
			int64_t j = arg_pick(x, o, n, inner, i, is_min);
			if (idx)
				idx[o * inner + i] = (int32_t)j;
			if (val)
				val[o * inner + i] = x[(o * n + j) * inner + i];
		}
}

void sc_cpu_arg_reduce_grad(const float *x, const float *dy, int64_t outer, int64_t n, int64_t inner, int is_min,
                            float *dx)
{
	memset(dx, 0, sizeof(float) * (size_t)(outer * n * inner));
	for (int64_t o = 0; o < outer; o++)
		for (int64_t i = 0; i < inner; i++)
			dx[(o * n + arg_pick(x, o, n, inner, i, is_min)) * inner + i] = dy[o * inner + i];
}

/* Row r's pick after (pv, pi) in the order (the first when pi < 0): the
 * k picks of a row one after another, without scratch, in O(n) each. */
static int64_t topk_next(const float *row, int64_t n, float pv, int64_t pi)
{
	int64_t best = -1;
	for (int64_t j = 0; j < n; j++)
		if ((pi < 0 || pick_before(pv, pi, row[j], j, 0)) && (best < 0 || pick_before(row[j], j, row[best], best, 0)))
			best = j;
	return best;
}

void sc_cpu_topk(const float *x, int64_t rows, int64_t n, int64_t k, float *val, int32_t *idx)
{
	for (int64_t r = 0; r < rows; r++) {
		const float *row = x + r * n;
		int64_t j = -1;
		for (int64_t t = 0; t < k; t++) {
			j = topk_next(row, n, j < 0 ? 0 : row[j], j);
			if (val)
				val[r * k + t] = row[j];
			if (idx)
				idx[r * k + t] = (int32_t)j;
		}
	}
}

void sc_cpu_topk_grad(const float *x, const float *dy, int64_t rows, int64_t n, int64_t k, float *dx)
{
	memset(dx, 0, sizeof(float) * (size_t)(rows * n));
	for (int64_t r = 0; r < rows; r++) {
		const float *row = x + r * n;
		int64_t j = -1;
		for (int64_t t = 0; t < k; t++) {
			j = topk_next(row, n, j < 0 ? 0 : row[j], j);
			dx[r * n + j] = dy[r * k + t];
		}
	}
}

/* ---- windowed operators: Conv2D (im2col and GEMMs), MaxPool, AvgPool ---- */

/* Image x (c, h, w) as the matrix (c kh kw, ho wo): row (ci, i, j), column
 * (oh, ow) holds x[ci][oh sh - pt + i dh][ow sw - pl + j dw], 0 outside x. */
static void im2col(const sc_window *g, const float *x, float *col)
{
	int64_t cols = g->ho * g->wo;
#pragma omp parallel for collapse(3) if (g->c * g->kh * g->kw * cols >= SC_PAR_MIN) schedule(static)
	for (int64_t ci = 0; ci < g->c; ci++)
		for (int64_t i = 0; i < g->kh; i++)
			for (int64_t j = 0; j < g->kw; j++) {
				float *row = col + ((ci * g->kh + i) * g->kw + j) * cols;
				for (int64_t oh = 0; oh < g->ho; oh++) {
					int64_t r = oh * g->sh - g->pt + i * g->dh;
					for (int64_t ow = 0; ow < g->wo; ow++) {
						int64_t s = ow * g->sw - g->pl + j * g->dw;
						row[oh * g->wo + ow] = r >= 0 && r < g->h && s >= 0 && s < g->w ? x[(ci * g->h + r) * g->w + s]
						                                                                  : 0.0f;
					}
				}
			}
}

/* dx (c, h, w) = the sum of col's entries over the positions each reads
 * (im2col's adjoint), each element summing its own in a fixed order. */
static void col2im(const sc_window *g, const float *col, float *dx)
{
	int64_t cols = g->ho * g->wo;
#pragma omp parallel for collapse(2) if (g->c * g->h * g->w >= SC_PAR_MIN) schedule(static)
	for (int64_t ci = 0; ci < g->c; ci++)
		for (int64_t r = 0; r < g->h; r++)
			for (int64_t s = 0; s < g->w; s++) {
				float acc = 0;
				for (int64_t i = 0; i < g->kh; i++) {
					int64_t t = r + g->pt - i * g->dh;   /* oh sh */
					if (t < 0 || t % g->sh || t / g->sh >= g->ho)
						continue;
					for (int64_t j = 0; j < g->kw; j++) {
						int64_t u = s + g->pl - j * g->dw;
						if (u < 0 || u % g->sw || u / g->sw >= g->wo)
							continue;
						acc += col[((ci * g->kh + i) * g->kw + j) * cols + t / g->sh * g->wo + u / g->sw];
					}
				}
				dx[(ci * g->h + r) * g->w + s] = acc;
			}
}

static float *col_buffer(const sc_window *g)
{
	int64_t n = g->c * g->kh * g->kw * g->ho * g->wo;
	float *col = malloc((size_t)(n > 0 ? n : 1) * sizeof *col);
	if (!col)
		SC_DIE("out of memory");
	return col;
}

void sc_cpu_conv2d(const sc_window *g, const float *x, const float *w, float *y)
{
	sc_window gg = sc_window_group(g);
	int64_t k = gg.c * g->kh * g->kw, cols = g->ho * g->wo, plane = g->h * g->w;
	float *col = col_buffer(&gg);
	for (int64_t b = 0; b < g->n; b++)
		for (int64_t q = 0; q < gg.groups; q++) {
			im2col(&gg, x + (b * g->c + q * gg.c) * plane, col);
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)gg.o, (int)cols, (int)k, 1.0f,
			            w + q * gg.o * k, (int)k, col, (int)cols, 0.0f, y + (b * g->o + q * gg.o) * cols, (int)cols);
		}
	free(col);
}

void sc_cpu_conv2d_grad(const sc_window *g, const float *x, const float *w, const float *dy, float *dx, float *dw)
{
	sc_window gg = sc_window_group(g);
	int64_t k = gg.c * g->kh * g->kw, cols = g->ho * g->wo, plane = g->h * g->w;
	float *col = col_buffer(&gg);
	if (dw && g->n == 0)
		memset(dw, 0, (size_t)(g->o * k) * sizeof *dw);
	for (int64_t b = 0; b < g->n; b++)
		for (int64_t q = 0; q < gg.groups; q++) {
			const float *dyb = dy + (b * g->o + q * gg.o) * cols;
			if (dw) {   /* dw += dy_b col_b^T */
				im2col(&gg, x + (b * g->c + q * gg.c) * plane, col);
				cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)gg.o, (int)k, (int)cols, 1.0f, dyb,
				            (int)cols, col, (int)cols, b ? 1.0f : 0.0f, dw + q * gg.o * k, (int)k);
			}
			if (dx) {   /* dcol = w^T dy_b, folded back */
				cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)k, (int)cols, (int)gg.o, 1.0f,
				            w + q * gg.o * k, (int)k, dyb, (int)cols, 0.0f, col, (int)cols);
				col2im(&gg, col, dx + (b * g->c + q * gg.c) * plane);
			}
		}
	free(col);
}

/* Output (plane p, oh, ow)'s window inside x: rows [r0, r1), columns [s0, s1). */
static void pool_window(const sc_window *g, int64_t oh, int64_t ow, int64_t *r0, int64_t *r1, int64_t *s0, int64_t *s1)
{
	*r0 = oh * g->sh - g->pt;
	*s0 = ow * g->sw - g->pl;
	*r1 = *r0 + g->kh < g->h ? *r0 + g->kh : g->h;
	*s1 = *s0 + g->kw < g->w ? *s0 + g->kw : g->w;
	*r0 = *r0 > 0 ? *r0 : 0;
	*s0 = *s0 > 0 ? *s0 : 0;
}

/* The offset in the plane of a window's first maximum (row-major order;
 * a NaN wins, as numpy's max propagates it); -1 for an empty window. */
static int64_t pool_argmax(const sc_window *g, const float *xp, int64_t oh, int64_t ow)
{
	int64_t r0, r1, s0, s1, best = -1;
	pool_window(g, oh, ow, &r0, &r1, &s0, &s1);
	for (int64_t r = r0; r < r1; r++)
		for (int64_t s = s0; s < s1; s++) {
			float v = xp[r * g->w + s];
			if (best < 0 || v > xp[best] || (isnan(v) && !isnan(xp[best])))
				best = r * g->w + s;
		}
	return best;
}

void sc_cpu_pool(sc_pool_kind k, const sc_window *g, const float *x, float *y)
{
#pragma omp parallel for if (g->n * g->c * g->ho * g->wo >= SC_PAR_MIN) schedule(static)
	for (int64_t p = 0; p < g->n * g->c; p++) {
		const float *xp = x + p * g->h * g->w;
		for (int64_t oh = 0; oh < g->ho; oh++)
			for (int64_t ow = 0; ow < g->wo; ow++) {
				float *out = y + (p * g->ho + oh) * g->wo + ow;
				if (k == SC_POOL_MAX) {
					int64_t at = pool_argmax(g, xp, oh, ow);
					*out = at >= 0 ? xp[at] : 0.0f;
					continue;
				}
				int64_t r0, r1, s0, s1;
				pool_window(g, oh, ow, &r0, &r1, &s0, &s1);
				float acc = 0;
				for (int64_t r = r0; r < r1; r++)
					for (int64_t s = s0; s < s1; s++)
						acc += xp[r * g->w + s];
				int64_t count = (r1 - r0) * (s1 - s0);
				*out = count > 0 ? acc / (float)count : 0.0f;
			}
	}
}

void sc_cpu_pool_grad(sc_pool_kind k, const sc_window *g, const float *x, const float *dy, float *dx)
{
#pragma omp parallel for if (g->n * g->c * g->h * g->w >= SC_PAR_MIN) schedule(static)
	for (int64_t p = 0; p < g->n * g->c; p++) {
		const float *xp = x ? x + p * g->h * g->w : NULL, *dyp = dy + p * g->ho * g->wo;
		float *dxp = dx + p * g->h * g->w;
		memset(dxp, 0, (size_t)(g->h * g->w) * sizeof *dxp);
		for (int64_t oh = 0; oh < g->ho; oh++)   /* windows in order: each input's sum in a fixed order */
			for (int64_t ow = 0; ow < g->wo; ow++) {
				float d = dyp[oh * g->wo + ow];
				if (k == SC_POOL_MAX) {
					int64_t at = pool_argmax(g, xp, oh, ow);
					if (at >= 0)
						dxp[at] += d;
					continue;
				}
				int64_t r0, r1, s0, s1;
				pool_window(g, oh, ow, &r0, &r1, &s0, &s1);
				int64_t count = (r1 - r0) * (s1 - s0);
				for (int64_t r = r0; r < r1; r++)
					for (int64_t s = s0; s < s1; s++)
						dxp[r * g->w + s] += d / (float)count;
			}
	}
}

/* ---- the unsorted segment reductions ---- */

/* The segment of row i (its id), or -1 when the id is outside [0, segments): dropped. */
static int64_t segment_of(const void *ids, sc_dtype ids_dt, int64_t i, int64_t segments)
{
	int64_t s = sc_index_at(ids, ids_dt, i);
	return s >= 0 && s < segments ? s : -1;
}

void sc_cpu_unsorted_segment(sc_segment_op op, const float *x, const void *ids, sc_dtype ids_dt, float *y,
                             int64_t rows, int64_t inner, int64_t segments, sc_dtype dt)
{
	int64_t n = segments * inner;
	if (op == SC_SEG_MAX || op == SC_SEG_MIN) {
		float init = op == SC_SEG_MAX ? -SC_SEGMENT_BIG(dt) : SC_SEGMENT_BIG(dt);
		for (int64_t j = 0; j < n; j++)
			y[j] = init;
		for (int64_t i = 0; i < rows; i++) {
			int64_t s = segment_of(ids, ids_dt, i, segments);
			for (int64_t c = 0; s >= 0 && c < inner; c++) {
				float v = x[i * inner + c], *o = &y[s * inner + c];
				if (op == SC_SEG_MAX ? v > *o : v < *o)
					*o = v;
			}
		}
		return;
	}
	double *acc = malloc((size_t)(n > 0 ? n : 1) * sizeof *acc);   /* in double, in row order */
	if (!acc)
		SC_DIE("out of memory");
	for (int64_t j = 0; j < n; j++)
		acc[j] = op == SC_SEG_PROD ? 1.0 : 0.0;
	for (int64_t i = 0; i < rows; i++) {
		int64_t s = segment_of(ids, ids_dt, i, segments);
		for (int64_t c = 0; s >= 0 && c < inner; c++) {
			if (op == SC_SEG_PROD)
				acc[s * inner + c] *= x[i * inner + c];
			else
				acc[s * inner + c] += x[i * inner + c];
		}
	}
	for (int64_t j = 0; j < n; j++)
		y[j] = (float)acc[j];
	free(acc);
}

void sc_cpu_unsorted_segment_stat(sc_segment_op op, const float *x, const void *ids, sc_dtype ids_dt, const float *y,
                                  int k, float *stat, int64_t rows, int64_t inner, int64_t segments)
{
	int64_t n = segments * inner;
	double *acc = malloc((size_t)(n > 0 ? n : 1) * sizeof *acc);
	if (!acc)
		SC_DIE("out of memory");
	bool product = op == SC_SEG_PROD && k == 0;
	for (int64_t j = 0; j < n; j++)
		acc[j] = product ? 1.0 : 0.0;
	for (int64_t i = 0; i < rows; i++) {
		int64_t s = segment_of(ids, ids_dt, i, segments);
		for (int64_t c = 0; s >= 0 && c < inner; c++) {
			float v = x[i * inner + c];
			if (product)
				acc[s * inner + c] *= v != 0.0f ? v : 1.0;
			else if (op == SC_SEG_PROD)
				acc[s * inner + c] += v == 0.0f;
			else
				acc[s * inner + c] += v == y[s * inner + c];
		}
	}
	for (int64_t j = 0; j < n; j++)
		stat[j] = (float)acc[j];
	free(acc);
}

void sc_cpu_unsorted_segment_grad(sc_segment_op op, const float *x, const void *ids, sc_dtype ids_dt, const float *y,
                                  const float *dy, const float *stat0, const float *stat1, float *dx, int64_t rows,
                                  int64_t inner, int64_t segments)
{
	float *own = NULL;   /* the statistics of these rows, when not given */
	int64_t n = segments * inner;
	if (op != SC_SEG_SUM && !stat0) {
		own = malloc(sizeof *own * (size_t)(2 * n > 0 ? 2 * n : 1));
		if (!own)
			SC_DIE("out of memory");
		sc_cpu_unsorted_segment_stat(op, x, ids, ids_dt, y, 0, own, rows, inner, segments);
		if (op == SC_SEG_PROD)
			sc_cpu_unsorted_segment_stat(op, x, ids, ids_dt, y, 1, own + n, rows, inner, segments);
		stat0 = own;
		stat1 = own + n;
	}
	for (int64_t i = 0; i < rows; i++) {
		int64_t s = segment_of(ids, ids_dt, i, segments);
		for (int64_t c = 0; c < inner; c++) {
			int64_t at = s * inner + c;
			float g = 0.0f;
			if (s >= 0)
				g = SC_SEGMENT_GRAD(op, x ? x[i * inner + c] : 0.0f, y ? y[at] : 0.0f, dy[at],
				                    stat0 ? stat0[at] : 0.0f, stat1 ? stat1[at] : 0.0f);
			dx[i * inner + c] = g;
		}
	}
	free(own);
}

/* ---- ResizeNearestNeighbor, ResizeBilinearV2 (MindSpore's coordinates) ---- */

/* MindSpore's Scaling, in Float32 */
static float resize_scale(int64_t in, int64_t out, int align_corners)
{
	return align_corners && out > 1 ? (float)(in - 1) / (float)(out - 1) : (float)in / (float)out;
}

/* the source index output index o reads (MindSpore's nearest: round with
 * align_corners, floor without; (o + 0.5) scale with half_pixel_centers) */
static int64_t resize_nearest_at(int64_t o, float scale, int64_t in, int align_corners, int half_pixel_centers)
{
	float s = half_pixel_centers ? ((float)o + 0.5f) * scale : (float)o * scale;
	int64_t i = (int64_t)(align_corners ? roundf(s) : floorf(s));
	return i < 0 ? 0 : i < in - 1 ? i : in - 1;
}

/* the rows (or columns) output index o mixes and its weight on *hi
 * (MindSpore's ComputeInterpolationWeights) */
static void resize_linear_at(int64_t o, float scale, int64_t in, int half_pixel_centers, int64_t *lo, int64_t *hi,
                             float *t)
{
	float s = half_pixel_centers ? ((float)o + 0.5f) * scale - 0.5f : (float)o * scale;
	float f = floorf(s);
	int64_t c = (int64_t)ceilf(s);
	*lo = f < 0 ? 0 : (int64_t)f;
	*hi = c < in - 1 ? c : in - 1;
	*t = s - f;
}

void sc_cpu_resize(int bilinear, const float *x, float *y, int64_t nc, int64_t in_h, int64_t in_w, int64_t out_h,
                   int64_t out_w, int align_corners, int half_pixel_centers)
{
	float sh = resize_scale(in_h, out_h, align_corners), sw = resize_scale(in_w, out_w, align_corners);
#pragma omp parallel for if (nc * out_h * out_w >= SC_PAR_MIN) schedule(static)
	for (int64_t r = 0; r < nc * out_h; r++) {
		int64_t p = r / out_h, oh = r % out_h, y0, y1;
		const float *xp = x + p * in_h * in_w;
		float *yr = y + r * out_w, ty;
		if (!bilinear) {
			const float *xr = xp + resize_nearest_at(oh, sh, in_h, align_corners, half_pixel_centers) * in_w;
			for (int64_t ow = 0; ow < out_w; ow++)
				yr[ow] = xr[resize_nearest_at(ow, sw, in_w, align_corners, half_pixel_centers)];
			continue;
		}
		resize_linear_at(oh, sh, in_h, half_pixel_centers, &y0, &y1, &ty);
		for (int64_t ow = 0; ow < out_w; ow++) {
			int64_t x0, x1;
			float tx;
			resize_linear_at(ow, sw, in_w, half_pixel_centers, &x0, &x1, &tx);
			float tl = xp[y0 * in_w + x0], tr = xp[y0 * in_w + x1], bl = xp[y1 * in_w + x0], br = xp[y1 * in_w + x1];
			float top = tl + (tr - tl) * tx, bottom = bl + (br - bl) * tx;
			yr[ow] = top + (bottom - top) * ty;
		}
	}
}

void sc_cpu_resize_grad(int bilinear, const float *dy, float *dx, int64_t nc, int64_t in_h, int64_t in_w,
                        int64_t out_h, int64_t out_w, int align_corners, int half_pixel_centers)
{
	float sh = resize_scale(in_h, out_h, align_corners), sw = resize_scale(in_w, out_w, align_corners);
	memset(dx, 0, (size_t)(nc * in_h * in_w) * sizeof *dx);
#pragma omp parallel for if (nc * out_h * out_w >= SC_PAR_MIN) schedule(static)
	for (int64_t p = 0; p < nc; p++) {   /* a plane per thread: its additions in one order */
		float *dp = dx + p * in_h * in_w;
		for (int64_t oh = 0; oh < out_h; oh++) {
			const float *g = dy + (p * out_h + oh) * out_w;
			int64_t y0, y1;
			float ty;
			if (!bilinear) {
				float *dr = dp + resize_nearest_at(oh, sh, in_h, align_corners, half_pixel_centers) * in_w;
				for (int64_t ow = 0; ow < out_w; ow++)
					dr[resize_nearest_at(ow, sw, in_w, align_corners, half_pixel_centers)] += g[ow];
				continue;
			}
			resize_linear_at(oh, sh, in_h, half_pixel_centers, &y0, &y1, &ty);
			for (int64_t ow = 0; ow < out_w; ow++) {
				int64_t x0, x1;
				float tx, top = g[ow] * (1 - ty), bottom = g[ow] * ty;
				resize_linear_at(ow, sw, in_w, half_pixel_centers, &x0, &x1, &tx);
				dp[y0 * in_w + x0] += top * (1 - tx);
				dp[y0 * in_w + x1] += top * tx;
				dp[y1 * in_w + x0] += bottom * (1 - tx);
				dp[y1 * in_w + x1] += bottom * tx;
			}
		}
	}
}
