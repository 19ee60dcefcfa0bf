/* backend.c: the cpu backend: host memory, MPI collectives, the CPU kernels.
 *
 * Slabs are aligned host allocations; collectives are the host versions of
 * comm.c; every public kernel is its sc_cpu_ twin in kernels.c, the rt
 * argument unused. OpenBLAS and the kernels' OpenMP loops get this rank's
 * share of the node's cores (see blas_threads). */
#define _GNU_SOURCE
#include <cblas.h>
#include <omp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu_kernels.h"
#include "rt_internal.h"

/* ---- hooks ---- */

/* The cores of the node shared among the ranks on it (cores / ranks, at
 * least 1), and no more than the cores this process may run on: mpirun binds
 * a rank to one core when the ranks fill the node (run.sh lets them float
 * when there are fewer ranks than cores). SHARDC_THREADS, or OpenBLAS's own
 * OPENBLAS_NUM_THREADS, says otherwise. Collective: every rank calls it. */
static int blas_threads(sc_rt *rt)
{
	MPI_Comm node;
	int on_node = 1;
	SC_MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rt->rank, MPI_INFO_NULL, &node));
	SC_MPI_CHECK(MPI_Comm_size(node, &on_node));
	SC_MPI_CHECK(MPI_Comm_free(&node));
	const char *env = getenv("SHARDC_THREADS");
	if (env && atoi(env) > 0)
		return atoi(env);
	long t = sysconf(_SC_NPROCESSORS_ONLN) / on_node;
	cpu_set_t mine;
	if (sched_getaffinity(0, sizeof mine, &mine) == 0 && CPU_COUNT(&mine) < t)
		t = CPU_COUNT(&mine);
	return t < 1 ? 1 : (int)t;
}

void sc_be_init(sc_rt *rt)
{
	int threads = blas_threads(rt);
	if (!getenv("OPENBLAS_NUM_THREADS") || getenv("SHARDC_THREADS"))
		openblas_set_num_threads(threads);
	if (!getenv("OMP_NUM_THREADS") || getenv("SHARDC_THREADS"))
		omp_set_num_threads(threads);   /* the kernels' own loops (kernels.c) */
}

void sc_be_finalize(sc_rt *rt)
{
	(void)rt;
}

void sc_be_group_init(sc_rt *rt, sc_group *g)
{
	(void)rt;
	(void)g;
}

void sc_be_step_done(sc_rt *rt, bool first, bool last)
{
	(void)rt;
	(void)first;
	(void)last;
}

void sc_be_sync(sc_rt *rt)
{
	(void)rt;
}

void sc_be_group_free(sc_rt *rt, sc_group *g)
{
	(void)rt;
	(void)g;
}

const bool sc_be_host_memory = true;   /* tensors are host memory */

void *sc_be_alloc(sc_rt *rt, size_t bytes)
{
	(void)rt;
	size_t n = (bytes + 255) / 256 * 256;
	void *p = aligned_alloc(256, n);
	if (!p)
		SC_DIE("cannot allocate a slab of %zu bytes", bytes);
	memset(p, 0, n);
	return p;
}

void sc_be_free(sc_rt *rt, void *p)
{
	(void)rt;
	free(p);
}

void sc_be_all_reduce(sc_rt *rt, sc_group *g, const void *in, void *out, sc_dtype dt, int64_t count, sc_redop op)
{
	(void)rt;
	sc_host_all_reduce(g, in, out, dt, count, op);
}

void sc_be_all_gather(sc_rt *rt, sc_group *g, const void *in, void *out, sc_dtype dt, const int64_t *dims, int ndim,
                      int axis)
{
	(void)rt;
	sc_host_all_gather(g, in, out, dt, dims, ndim, axis);
}

void sc_be_reduce_scatter(sc_rt *rt, sc_group *g, const void *in, void *out, sc_dtype dt, const int64_t *dims,
                          int ndim, int axis, sc_redop op)
{
	(void)rt;
	sc_host_reduce_scatter(g, in, out, dt, dims, ndim, axis, op);
}

void sc_be_all_to_all(sc_rt *rt, sc_group *g, const void *in, void *out, sc_dtype dt, const int64_t *dims, int ndim,
                      int split_axis, int concat_axis)
{
	(void)rt;
	sc_host_all_to_all(g, in, out, dt, dims, ndim, split_axis, concat_axis);
}

void sc_be_p2p_exchange(sc_rt *rt, const sc_p2p *ops, int n)
{
	(void)rt;
	sc_host_p2p_exchange(ops, n);
}

/* ---- memory ---- */

void sc_to_host(sc_rt *rt, void *host, const void *src, size_t bytes)
{
	(void)rt;
	if (bytes)
		memmove(host, src, bytes);
}

void sc_from_host(sc_rt *rt, void *dst, const void *host, size_t bytes)
{
	(void)rt;
	if (bytes)
		memmove(dst, host, bytes);
}

void sc_copy(sc_rt *rt, void *dst, const void *src, size_t bytes)
{
	(void)rt;
	if (bytes)
		memmove(dst, src, bytes);
}

void sc_fill(sc_rt *rt, void *dst, sc_dtype dt, int64_t n, double value)
{
	(void)rt;
	sc_cpu_fill(dst, dt, n, value);
}

/* ---- kernels: the CPU twins ---- */

void sc_matmul(sc_rt *rt, const float *a, const float *b, float *c, int64_t m, int64_t n, int64_t k,
               int transpose_a, int transpose_b)
{
	(void)rt;
	sc_cpu_matmul(a, b, c, m, n, k, transpose_a, transpose_b);
}

/* Float32 copies of two half operands of na and nb elements (free the first). */
static float *widen_pair(sc_dtype dt, const void *a, int64_t na, const void *b, int64_t nb, float **wb)
{
	float *wa = malloc((size_t)(na + nb) * sizeof *wa);
	if (!wa)
		SC_DIE("out of memory");
	*wb = wa + na;
	sc_host_widen(a, dt, wa, na);
	sc_host_widen(b, dt, *wb, nb);
	return wa;
}

/* Where a half product writes its Float32 result of n elements: c itself
 * (c_dt SC_F32), or a copy that round_result rounds into c. */
static float *float_result(void *c, sc_dtype c_dt, int64_t n)
{
	if (c_dt == SC_F32)
		return c;
	float *w = malloc((size_t)(n ? n : 1) * sizeof *w);
	if (!w)
		SC_DIE("out of memory");
	return w;
}

/* Elements from an operand's first to its last, by its strides: its batch
 * dims, then rows (ld apart) of cols adjacent elements. */
static int64_t strided_extent(const int64_t *st, const int64_t *bdims, int nb, int64_t rows, int64_t cols)
{
	int64_t last = (rows - 1) * st[nb] + cols - 1;
	for (int d = 0; d < nb; d++)
		last += (bdims[d] - 1) * st[d];
	return last + 1;
}

/* The Float32 result w rounded once into c (as sc_cast rounds), only the
 * rows the product wrote: rows of cols elements, laid out by st over bdims
 * (nb of them) as sc_batch_matmul_strided takes c; contiguous when st is
 * NULL (rows * cols elements in all). w is freed. */
static void round_result(float *w, void *c, sc_dtype c_dt, const int64_t *st, const int64_t *bdims, int nb,
                         int64_t rows, int64_t cols)
{
	if (c_dt == SC_F32)
		return;
	if (!st) {
		sc_cpu_cast(w, SC_F32, c, c_dt, rows * cols);
		free(w);
		return;
	}
	int64_t idx[SC_MAX_DIMS] = {0}, batches = sc_numel(bdims, nb);
	for (int64_t i = 0; i < batches; i++) {
		int64_t off = 0;
		for (int d = 0; d < nb; d++)
			off += idx[d] * st[d];
		for (int64_t r = 0; r < rows; r++)
			sc_host_narrow(w + off + r * st[nb], (uint16_t *)c + off + r * st[nb], c_dt, cols);
		for (int d = nb - 1; d >= 0 && ++idx[d] == bdims[d]; d--)
			idx[d] = 0;
	}
	free(w);
}

void sc_matmul_half(sc_rt *rt, sc_dtype dt, const void *a, const void *b, void *c, sc_dtype c_dt, int64_t m,
                    int64_t n, int64_t k, int transpose_a, int transpose_b)
{
	(void)rt;
	sc_check_half_product("sc_matmul_half", dt, c_dt);
	float *wb, *wa = widen_pair(dt, a, m * k, b, k * n, &wb), *wc = float_result(c, c_dt, m * n);
	sc_cpu_matmul(wa, wb, wc, m, n, k, transpose_a, transpose_b);
	free(wa);
	round_result(wc, c, c_dt, NULL, NULL, 0, m, n);
}

void sc_batch_matmul_half(sc_rt *rt, sc_dtype dt, const void *a, const int64_t *a_bdims, int a_nb, const void *b,
                          const int64_t *b_bdims, int b_nb, void *c, sc_dtype c_dt, const int64_t *c_bdims, int c_nb,
                          int64_t m, int64_t n, int64_t k, int transpose_a, int transpose_b)
{
	(void)rt;
	sc_check_half_product("sc_batch_matmul_half", dt, c_dt);
	int64_t na = sc_numel(a_bdims, a_nb) * m * k, nb = sc_numel(b_bdims, b_nb) * k * n;
	int64_t nc = sc_numel(c_bdims, c_nb) * m;
	float *wb, *wa = widen_pair(dt, a, na, b, nb, &wb), *wc = float_result(c, c_dt, nc * n);
	sc_cpu_batch_matmul(wa, a_bdims, a_nb, wb, b_bdims, b_nb, wc, c_bdims, c_nb, m, n, k, transpose_a, transpose_b);
	free(wa);
	round_result(wc, c, c_dt, NULL, NULL, 0, nc, n);
}

void sc_batch_matmul_half_strided(sc_rt *rt, sc_dtype dt, const void *a, const int64_t *a_st, const void *b,
                                  const int64_t *b_st, void *c, sc_dtype c_dt, const int64_t *c_st,
                                  const int64_t *bdims, int nb, int64_t m, int64_t n, int64_t k, int transpose_a,
                                  int transpose_b)
{
	(void)rt;
	sc_check_half_product("sc_batch_matmul_half_strided", dt, c_dt);
	sc_check_dims("batch_matmul", bdims, nb);
	int64_t na = strided_extent(a_st, bdims, nb, transpose_a ? k : m, transpose_a ? m : k);
	int64_t nbe = strided_extent(b_st, bdims, nb, transpose_b ? n : k, transpose_b ? k : n);
	float *wb, *wa = widen_pair(dt, a, na, b, nbe, &wb);
	float *wc = float_result(c, c_dt, strided_extent(c_st, bdims, nb, m, n));
	sc_cpu_batch_matmul_strided(wa, a_st, wb, b_st, wc, c_st, bdims, nb, m, n, k, transpose_a, transpose_b);
	free(wa);
	round_result(wc, c, c_dt, c_st, bdims, nb, m, n);
}

void sc_batch_matmul(sc_rt *rt, const float *a, const int64_t *a_bdims, int a_nb, const float *b,
                     const int64_t *b_bdims, int b_nb, float *c, const int64_t *c_bdims, int c_nb, int64_t m,
                     int64_t n, int64_t k, int transpose_a, int transpose_b)
{
	(void)rt;
	sc_cpu_batch_matmul(a, a_bdims, a_nb, b, b_bdims, b_nb, c, c_bdims, c_nb, m, n, k, transpose_a, transpose_b);
}

void sc_batch_matmul_strided(sc_rt *rt, const float *a, const int64_t *a_st, const float *b, const int64_t *b_st,
                             float *c, const int64_t *c_st, const int64_t *bdims, int nb, int64_t m, int64_t n,
                             int64_t k, int transpose_a, int transpose_b)
{
	(void)rt;
	sc_cpu_batch_matmul_strided(a, a_st, b, b_st, c, c_st, bdims, nb, m, n, k, transpose_a, transpose_b);
}

void sc_binary(sc_rt *rt, sc_binop op, const float *a, const int64_t *a_dims, int a_ndim, const float *b,
               const int64_t *b_dims, int b_ndim, float *y, const int64_t *y_dims, int y_ndim)
{
	(void)rt;
	sc_cpu_binary(op, a, a_dims, a_ndim, b, b_dims, b_ndim, y, y_dims, y_ndim);
}

void sc_compare(sc_rt *rt, sc_cmpop op, float p, const float *a, const int64_t *a_dims, int a_ndim, const float *b,
                const int64_t *b_dims, int b_ndim, uint8_t *y, const int64_t *y_dims, int y_ndim)
{
	(void)rt;
	sc_cpu_compare(op, p, a, a_dims, a_ndim, b, b_dims, b_ndim, y, y_dims, y_ndim);
}

void sc_logical(sc_rt *rt, sc_logop op, const uint8_t *a, const int64_t *a_dims, int a_ndim, const uint8_t *b,
                const int64_t *b_dims, int b_ndim, uint8_t *y, const int64_t *y_dims, int y_ndim)
{
	(void)rt;
	sc_cpu_logical(op, a, a_dims, a_ndim, b, b_dims, b_ndim, y, y_dims, y_ndim);
}

void sc_int_math(sc_rt *rt, sc_intop op, sc_dtype dt, const void *a, const int64_t *a_dims, int a_ndim,
                 const void *b, const int64_t *b_dims, int b_ndim, void *y, const int64_t *y_dims, int y_ndim)
{
	(void)rt;
	sc_cpu_int_math(op, dt, a, a_dims, a_ndim, b, b_dims, b_ndim, y, y_dims, y_ndim);
}

void sc_reverse(sc_rt *rt, const float *x, float *y, const int64_t *dims, int ndim, unsigned rev)
{
	(void)rt;
	sc_cpu_reverse(x, y, dims, ndim, rev);
}

void sc_trace(sc_rt *rt, const float *x, float *y, const int64_t *dims, int ndim, int a1, int a2, int64_t offset)
{
	(void)rt;
	sc_cpu_trace(x, y, dims, ndim, a1, a2, offset);
}

void sc_trace_grad(sc_rt *rt, const float *dy, float *dx, const int64_t *dims, int ndim, int a1, int a2,
                   int64_t offset)
{
	(void)rt;
	sc_cpu_trace_grad(dy, dx, dims, ndim, a1, a2, offset);
}

void sc_is_finite(sc_rt *rt, const float *x, uint8_t *y, int64_t n)
{
	(void)rt;
	sc_cpu_is_finite(x, y, n);
}

void sc_bias_add(sc_rt *rt, const float *x, const float *bias, float *y, int64_t rows, int64_t c)
{
	(void)rt;
	sc_cpu_bias_add(x, bias, y, rows, c);
}

void sc_conv2d(sc_rt *rt, const sc_window *g, const float *x, const float *w, float *y)
{
	(void)rt;
	sc_cpu_conv2d(g, x, w, y);
}

void sc_conv2d_grad(sc_rt *rt, const sc_window *g, const float *x, const float *w, const float *dy, float *dx,
                    float *dw)
{
	(void)rt;
	sc_cpu_conv2d_grad(g, x, w, dy, dx, dw);
}

void sc_pool(sc_rt *rt, sc_pool_kind k, const sc_window *g, const float *x, float *y)
{
	(void)rt;
	sc_cpu_pool(k, g, x, y);
}

void sc_pool_grad(sc_rt *rt, sc_pool_kind k, const sc_window *g, const float *x, const float *dy, float *dx)
{
	(void)rt;
	sc_cpu_pool_grad(k, g, x, dy, dx);
}

void sc_prelu(sc_rt *rt, const float *x, const float *w, float *y, int64_t outer, int64_t c, int64_t inner,
              int64_t wn)
{
	(void)rt;
	sc_cpu_prelu(x, w, y, outer, c, inner, wn);
}

void sc_prelu_grad(sc_rt *rt, const float *x, const float *w, const float *dy, float *dx, float *dw, int64_t outer,
                   int64_t c, int64_t inner, int64_t wn)
{
	(void)rt;
	sc_cpu_prelu_grad(x, w, dy, dx, dw, outer, c, inner, wn);
}

void sc_unary(sc_rt *rt, sc_unop op, float p, const float *x, float *y, int64_t n)
{
	(void)rt;
	sc_cpu_unary(op, p, x, y, n);
}

void sc_unary_grad(sc_rt *rt, sc_unop op, float p, const float *t, const float *dy, float *dx, int64_t n)
{
	(void)rt;
	sc_cpu_unary_grad(op, p, t, dy, dx, n);
}

void sc_scale(sc_rt *rt, const float *x, float *y, int64_t n, double alpha)
{
	(void)rt;
	sc_cpu_scale(x, y, n, alpha);
}

void sc_softmax(sc_rt *rt, const float *x, float *y, const int64_t *dims, int ndim, int axis)
{
	(void)rt;
	sc_cpu_softmax(x, y, dims, ndim, axis, 0);
}

void sc_log_softmax(sc_rt *rt, const float *x, float *y, const int64_t *dims, int ndim, int axis)
{
	(void)rt;
	sc_cpu_softmax(x, y, dims, ndim, axis, 1);
}

void sc_bias_unary(sc_rt *rt, sc_unop op, float p, const float *x, const float *bias, float *pre, float *y,
                   int64_t rows, int64_t c)
{
	(void)rt;
	sc_cpu_bias_unary(op, p, x, bias, pre, y, rows, c);
}

void sc_bias_add_residual(sc_rt *rt, const float *x, const float *bias, float *pre, const float *r, float *y,
                          int64_t rows, int64_t c)
{
	(void)rt;
	sc_cpu_bias_add_residual(x, bias, pre, r, y, rows, c);
}

void sc_ew_chain(sc_rt *rt, const sc_ew_step *steps, int nsteps, const sc_ew_operand *ins, int nin, int64_t rows,
                 int64_t cols)
{
	(void)rt;
	sc_cpu_ew_chain(steps, nsteps, ins, nin, rows, cols);
}

void sc_softmax_scaled(sc_rt *rt, const float *x, const float *scale, float *y, const int64_t *dims, int ndim, int axis)
{
	(void)rt;
	sc_cpu_softmax_scaled(x, scale, y, dims, ndim, axis);
}

void sc_softmax_masked(sc_rt *rt, const float *x, const float *scale, const float *mask, const int64_t *mask_dims,
                       int mask_ndim, float *y, const int64_t *dims, int ndim)
{
	(void)rt;
	sc_cpu_softmax_masked(x, scale, mask, mask_dims, mask_ndim, y, dims, ndim);
}

void sc_softmax_grad(sc_rt *rt, const float *y, const float *dy, float *dx, const int64_t *dims, int ndim, int axis)
{
	(void)rt;
	sc_cpu_softmax_grad(y, dy, dx, dims, ndim, axis, 0);
}

void sc_log_softmax_grad(sc_rt *rt, const float *y, const float *dy, float *dx, const int64_t *dims, int ndim,
                         int axis)
{
	(void)rt;
	sc_cpu_softmax_grad(y, dy, dx, dims, ndim, axis, 1);
}

void sc_reduce_sum(sc_rt *rt, const float *x, float *y, const int64_t *dims, int ndim, const int *axes, int naxes)
{
	(void)rt;
	sc_cpu_reduce(SC_R_SUM, x, y, dims, ndim, axes, naxes);
}

void sc_reduce_mean(sc_rt *rt, const float *x, float *y, const int64_t *dims, int ndim, const int *axes, int naxes)
{
	(void)rt;
	sc_cpu_reduce(SC_R_MEAN, x, y, dims, ndim, axes, naxes);
}

void sc_reduce_max(sc_rt *rt, const float *x, float *y, const int64_t *dims, int ndim, const int *axes, int naxes)
{
	(void)rt;
	sc_cpu_reduce(SC_R_MAX, x, y, dims, ndim, axes, naxes);
}

void sc_reduce_min(sc_rt *rt, const float *x, float *y, const int64_t *dims, int ndim, const int *axes, int naxes)
{
	(void)rt;
	sc_cpu_reduce(SC_R_MIN, x, y, dims, ndim, axes, naxes);
}

void sc_reduce_prod(sc_rt *rt, const float *x, float *y, const int64_t *dims, int ndim, const int *axes, int naxes)
{
	(void)rt;
	sc_cpu_reduce(SC_R_PROD, x, y, dims, ndim, axes, naxes);
}

void sc_reduce_all(sc_rt *rt, const uint8_t *x, uint8_t *y, const int64_t *dims, int ndim, const int *axes,
                   int naxes)
{
	(void)rt;
	sc_cpu_reduce_bool(0, x, y, dims, ndim, axes, naxes);
}

void sc_reduce_any(sc_rt *rt, const uint8_t *x, uint8_t *y, const int64_t *dims, int ndim, const int *axes,
                   int naxes)
{
	(void)rt;
	sc_cpu_reduce_bool(1, x, y, dims, ndim, axes, naxes);
}

void sc_reduce_prod_stat(sc_rt *rt, const float *x, int k, float *y, const int64_t *dims, int ndim, const int *axes,
                         int naxes)
{
	(void)rt;
	sc_cpu_reduce_prod_stat(x, k, y, dims, ndim, axes, naxes);
}

void sc_reduce_prod_grad(sc_rt *rt, const float *x, const float *dy, const float *prod, const float *zeros, float *dx,
                         const int64_t *dims, int ndim, const int *axes, int naxes)
{
	(void)rt;
	sc_cpu_reduce_prod_grad(x, dy, prod, zeros, dx, dims, ndim, axes, naxes);
}

void sc_cumsum(sc_rt *rt, int prod, const float *x, float *y, int64_t outer, int64_t n, int64_t inner, int exclusive,
               int reverse)
{
	(void)rt;
	sc_cpu_cumsum(prod, x, y, outer, n, inner, exclusive, reverse);
}

void sc_cumsum_grad(sc_rt *rt, int prod, const float *x, const float *dy, float *dx, int64_t outer, int64_t n,
                    int64_t inner, int exclusive, int reverse)
{
	(void)rt;
	sc_cpu_cumsum_grad(prod, x, dy, dx, outer, n, inner, exclusive, reverse);
}

void sc_cumsum_part(sc_rt *rt, int prod, const float *x, const float *totals, float *y, int64_t offset, int64_t k,
                    int64_t outer, int64_t n, int64_t inner, int exclusive, int reverse)
{
	(void)rt;
	sc_cpu_cumsum_part(prod, x, totals, y, offset, k, outer, n, inner, exclusive, reverse);
}

void sc_cumsum_part_grad(sc_rt *rt, int prod, const float *x, const float *totals, const float *dy, float *dx,
                         float *dtotals, int64_t offset, int64_t k, int64_t outer, int64_t n, int64_t inner,
                         int exclusive, int reverse)
{
	(void)rt;
	sc_cpu_cumsum_part_grad(prod, x, totals, dy, dx, dtotals, offset, k, outer, n, inner, exclusive, reverse);
}

void sc_reduce_max_grad(sc_rt *rt, const float *x, const float *y, const float *dy, const float *count, float *dx,
                        const int64_t *dims, int ndim, const int *axes, int naxes)
{
	(void)rt;
	sc_cpu_reduce_max_grad(x, y, dy, count, dx, dims, ndim, axes, naxes);
}

void sc_reduce_min_grad(sc_rt *rt, const float *x, const float *y, const float *dy, const float *count, float *dx,
                        const int64_t *dims, int ndim, const int *axes, int naxes)
{
	(void)rt;
	sc_cpu_reduce_max_grad(x, y, dy, count, dx, dims, ndim, axes, naxes);   /* equality alone: the same kernel */
}

void sc_count_equal(sc_rt *rt, const float *x, const float *y, float *count, const int64_t *dims, int ndim,
                    const int *axes, int naxes)
{
	(void)rt;
	sc_cpu_count_equal(x, y, count, dims, ndim, axes, naxes);
}

void sc_where_equal(sc_rt *rt, const float *x, const float *y, const float *dy, float *dx, int64_t n)
{
	(void)rt;
	sc_cpu_where_equal(x, y, dy, dx, n);
}

void sc_select(sc_rt *rt, const uint8_t *cond, const float *a, const float *b, float *y, int64_t n)
{
	(void)rt;
	sc_cpu_select(cond, a, b, y, n);
}

void sc_rotary(sc_rt *rt, int64_t mode, int transpose, const float *x, const int64_t *dims, const float *cos,
               const int64_t *cos_dims, const float *sin, const int64_t *sin_dims, float *y)
{
	(void)rt;
	sc_cpu_rotary(mode, transpose, x, dims, cos, cos_dims, sin, sin_dims, y);
}

void sc_flash_attention(sc_rt *rt, const float *q, const float *k, const float *v, const void *mask, int mask_float,
                        const int64_t *mask_dims, float *o, const int64_t *dims, float scale, int causal, int layout)
{
	(void)rt;
	sc_cpu_flash_attention(q, k, v, mask, mask_float, mask_dims, o, dims, scale, causal, layout);
}

void sc_flash_attention_grad(sc_rt *rt, const float *q, const float *k, const float *v, const void *mask,
                             int mask_float, const int64_t *mask_dims, const float *o, const float *dout, float *dq,
                             float *dk, float *dv, const int64_t *dims, float scale, int causal, int layout)
{
	(void)rt;
	sc_cpu_flash_attention_grad(q, k, v, mask, mask_float, mask_dims, o, dout, dq, dk, dv, dims, scale, causal,
	                            layout);
}

void sc_arange(sc_rt *rt, void *y, sc_dtype dt, int64_t n, int64_t first, double start, double step)
{
	(void)rt;
	sc_cpu_arange(y, dt, n, first, start, step);
}

void sc_dropout(sc_rt *rt, const float *x, float *y, const int64_t *gdims, int ndim, const int64_t *start,
                const int64_t *ldims, const char *name, uint64_t seed, int64_t step, double keep_prob)
{
	int64_t real[SC_MAX_DIMS];
	bool padded = sc_piece_real(name, gdims, ndim, start, ldims, real);
	sc_cpu_dropout(x, y, gdims, ndim, start, ldims, sc_dropout_key(name, seed, step), keep_prob);
	if (padded)
		sc_pad_zero(rt, y, SC_F32, ldims, ndim, real);
}

void sc_dropout_gen_mask(sc_rt *rt, uint8_t *mask, const int64_t *gdims, int ndim, const int64_t *start,
                         const int64_t *ldims, const char *name, uint64_t seed, int64_t step, double keep_prob)
{
	int64_t real[SC_MAX_DIMS];
	bool padded = sc_piece_real(name, gdims, ndim, start, ldims, real);
	sc_cpu_dropout_gen_mask(mask, gdims, ndim, start, ldims, sc_dropout_key(name, seed, step), keep_prob);
	if (padded)
		sc_pad_zero(rt, mask, SC_BOOL, ldims, ndim, real);
}

void sc_uniform_real(sc_rt *rt, float *y, const int64_t *gdims, int ndim, const int64_t *start, const int64_t *ldims,
                     const char *name, uint64_t seed, int64_t step)
{
	int64_t real[SC_MAX_DIMS];
	bool padded = sc_piece_real(name, gdims, ndim, start, ldims, real);
	sc_cpu_uniform_real(y, gdims, ndim, start, ldims, sc_dropout_key(name, seed, step));
	if (padded)
		sc_pad_zero(rt, y, SC_F32, ldims, ndim, real);
}

void sc_dropout_do_mask(sc_rt *rt, const float *x, const uint8_t *mask, float *y, int64_t n, double keep_prob)
{
	(void)rt;
	sc_cpu_dropout_do_mask(x, mask, y, n, keep_prob);
}

void sc_causal_mask(sc_rt *rt, void *y, sc_dtype dt, int64_t lead, int64_t rows, int64_t cols, int64_t row0,
                    int64_t col0, double fill)
{
	(void)rt;
	sc_cpu_causal_mask(y, dt, lead, rows, cols, row0, col0, fill);
}

void sc_eye(sc_rt *rt, void *y, sc_dtype dt, int64_t rows, int64_t cols, int64_t row0, int64_t col0)
{
	(void)rt;
	sc_cpu_eye(y, dt, rows, cols, row0, col0);
}

void sc_lin_space(sc_rt *rt, float *y, int64_t n, int64_t first, float start, float stop, int64_t num)
{
	(void)rt;
	sc_cpu_lin_space(y, n, first, start, stop, num);
}

void sc_rope(sc_rt *rt, float *y, int is_sin, int64_t lead, int64_t rows, int64_t cols, int64_t row0, int64_t col0,
             int64_t d, double theta)
{
	(void)rt;
	sc_cpu_rope(y, is_sin, lead, rows, cols, row0, col0, d, theta);
}

void sc_transpose(sc_rt *rt, sc_dtype dt, const void *x, void *y, const int64_t *dims, int ndim, const int *perm)
{
	(void)rt;
	sc_cpu_transpose(dt, x, y, dims, ndim, perm);
}

void sc_triangle(sc_rt *rt, int upper, const void *x, void *y, sc_dtype dt, int64_t lead, int64_t rows, int64_t cols,
                 int64_t row0, int64_t col0, int64_t diagonal)
{
	(void)rt;
	sc_cpu_triangle(upper, x, y, dt, lead, rows, cols, row0, col0, diagonal);
}

void sc_one_hot(sc_rt *rt, const void *idx, sc_dtype idx_dt, int64_t outer, int64_t depth, int64_t inner,
                int64_t offset, const float *on, const float *off, float *y)
{
	(void)rt;
	sc_cpu_one_hot(idx, idx_dt, outer, depth, inner, offset, *on, *off, y);
}

void sc_arg_reduce(sc_rt *rt, const float *x, int64_t outer, int64_t n, int64_t inner, int is_min, int32_t *idx,
                   float *val)
{
	(void)rt;
	sc_cpu_arg_reduce(x, outer, n, inner, is_min, idx, val);
}

void sc_arg_reduce_grad(sc_rt *rt, const float *x, const float *dy, int64_t outer, int64_t n, int64_t inner,
                        int is_min, float *dx)
{
	(void)rt;
	sc_cpu_arg_reduce_grad(x, dy, outer, n, inner, is_min, dx);
}

void sc_topk(sc_rt *rt, const float *x, int64_t rows, int64_t n, int64_t k, float *val, int32_t *idx)
{
	(void)rt;
	sc_cpu_topk(x, rows, n, k, val, idx);
}

void sc_topk_grad(sc_rt *rt, const float *x, const float *dy, int64_t rows, int64_t n, int64_t k, float *dx)
{
	(void)rt;
	sc_cpu_topk_grad(x, dy, rows, n, k, dx);
}

void sc_gather(sc_rt *rt, const float *table, int64_t rows, int64_t row, const void *idx, sc_dtype idx_dt,
               int64_t nidx, int64_t offset, float *y)
{
	(void)rt;
	sc_cpu_gather(table, rows, row, idx, idx_dt, nidx, offset, y);
}

void sc_gather_grad(sc_rt *rt, const float *dy, const void *idx, sc_dtype idx_dt, int64_t nidx, int64_t offset,
                    float *dtable, int64_t rows, int64_t row)
{
	(void)rt;
	sc_cpu_gather_grad(dy, idx, idx_dt, nidx, offset, dtable, rows, row);
}

void sc_embedding_lookup(sc_rt *rt, const float *table, int64_t rows, int64_t row, const void *idx, sc_dtype idx_dt,
                         int64_t nidx, int64_t offset, int64_t limit, float *y)
{
	(void)rt;
	sc_cpu_embedding_lookup(table, rows, row, idx, idx_dt, nidx, offset, limit, y);
}

void sc_embedding_lookup_grad(sc_rt *rt, const float *dy, const void *idx, sc_dtype idx_dt, int64_t nidx,
                              int64_t offset, int64_t limit, float *dtable, int64_t rows, int64_t row)
{
	(void)rt;
	sc_cpu_embedding_lookup_grad(dy, idx, idx_dt, nidx, offset, limit, dtable, rows, row);
}

void sc_gather_d(sc_rt *rt, const float *x, const int64_t *xdims, const void *idx, sc_dtype idx_dt,
                 const int64_t *idims, int ndim, int dim, int64_t offset, float *y)
{
	(void)rt;
	sc_cpu_gather_d(x, xdims, idx, idx_dt, idims, ndim, dim, offset, y);
}

void sc_gather_d_grad(sc_rt *rt, const float *dy, const void *idx, sc_dtype idx_dt, const int64_t *idims, float *dx,
                      const int64_t *xdims, int ndim, int dim, int64_t offset)
{
	(void)rt;
	sc_cpu_gather_d_grad(dy, idx, idx_dt, idims, dx, xdims, ndim, dim, offset);
}

void sc_gather_nd(sc_rt *rt, const float *x, const int64_t *dims, int n, int64_t inner, const void *idx,
                  sc_dtype idx_dt, int64_t m, float *y, const char *what)
{
	(void)rt;
	sc_nd_check(idx, idx_dt, m, dims, n, what);
	sc_cpu_gather_nd(x, dims, n, inner, idx, idx_dt, m, y);
}

void sc_gather_nd_grad(sc_rt *rt, const float *dy, const void *idx, sc_dtype idx_dt, int64_t m, float *dx,
                       const int64_t *dims, int n, int64_t inner)
{
	(void)rt;
	sc_cpu_gather_nd_grad(dy, idx, idx_dt, m, dx, dims, n, inner);
}

void sc_tensor_scatter(sc_rt *rt, sc_scatter_op op, const float *x, const void *idx, sc_dtype idx_dt, int64_t m,
                       const float *upd, float *y, const int64_t *gdims, const int64_t *start, const int64_t *ldims,
                       int n, int64_t inner, const char *what)
{
	(void)rt;
	sc_nd_check(idx, idx_dt, m, gdims, n, what);
	sc_cpu_tensor_scatter(op, x, idx, idx_dt, m, upd, y, start, ldims, n, inner);
}

void sc_tensor_scatter_grad(sc_rt *rt, sc_scatter_op op, int k, const float *dy, const float *x, const float *upd,
                            const float *y, const void *idx, sc_dtype idx_dt, int64_t m, float *dx,
                            const int64_t *start, const int64_t *ldims, int n, int64_t inner)
{
	(void)rt;
	sc_cpu_tensor_scatter_grad(op, k, dy, x, upd, y, idx, idx_dt, m, dx, start, ldims, n, inner);
}

void sc_unsorted_segment(sc_rt *rt, sc_segment_op op, const float *x, const void *ids, sc_dtype ids_dt, float *y,
                         int64_t rows, int64_t inner, int64_t segments, sc_dtype dt)
{
	(void)rt;
	sc_cpu_unsorted_segment(op, x, ids, ids_dt, y, rows, inner, segments, dt);
}

void sc_unsorted_segment_stat(sc_rt *rt, sc_segment_op op, const float *x, const void *ids, sc_dtype ids_dt,
                              const float *y, int k, float *stat, int64_t rows, int64_t inner, int64_t segments)
{
	(void)rt;
	sc_cpu_unsorted_segment_stat(op, x, ids, ids_dt, y, k, stat, rows, inner, segments);
}

void sc_unsorted_segment_grad(sc_rt *rt, sc_segment_op op, const float *x, const void *ids, sc_dtype ids_dt,
                              const float *y, const float *dy, const float *stat0, const float *stat1, float *dx,
                              int64_t rows, int64_t inner, int64_t segments)
{
	(void)rt;
	sc_cpu_unsorted_segment_grad(op, x, ids, ids_dt, y, dy, stat0, stat1, dx, rows, inner, segments);
}

void sc_batch_norm(sc_rt *rt, const float *x, const float *scale, const float *bias, float *moving_mean,
                   float *moving_var, const float *batch_mean, const float *batch_var, float *y, int64_t n, int64_t c,
                   int64_t hw, double eps, double momentum, int64_t count, int mode)
{
	(void)rt;
	sc_cpu_batch_norm(x, scale, bias, moving_mean, moving_var, batch_mean, batch_var, y, n, c, hw, eps, momentum, count,
	                  mode);
}

void sc_batch_norm_grad(sc_rt *rt, const float *x, const float *dy, const float *scale, const float *mean,
                        const float *var, float *dx, float *dscale, float *dbias, float *dmean, float *dvar, int64_t n,
                        int64_t c, int64_t hw, double eps)
{
	(void)rt;
	sc_cpu_batch_norm_grad(x, dy, scale, mean, var, dx, dscale, dbias, dmean, dvar, n, c, hw, eps);
}

void sc_l2_normalize(sc_rt *rt, const float *x, const float *sumsq, float *y, int64_t outer, int64_t n,
                     int64_t inner, double eps)
{
	(void)rt;
	sc_cpu_l2_normalize(x, sumsq, y, outer, n, inner, eps);
}

void sc_l2_normalize_grad(sc_rt *rt, const float *x, const float *sumsq, const float *dy, float *dx, float *dsumsq,
                          int64_t outer, int64_t n, int64_t inner, double eps)
{
	(void)rt;
	sc_cpu_l2_normalize_grad(x, sumsq, dy, dx, dsumsq, outer, n, inner, eps);
}

void sc_gather_axis(sc_rt *rt, const float *table, int64_t outer, int64_t rows, int64_t row, const void *idx,
                    sc_dtype idx_dt, int64_t nidx, int64_t offset, float *y)
{
	(void)rt;
	sc_cpu_gather_axis(table, outer, rows, row, idx, idx_dt, nidx, offset, y);
}

void sc_gather_axis_grad(sc_rt *rt, const float *dy, const void *idx, sc_dtype idx_dt, int64_t nidx, int64_t offset,
                         float *dtable, int64_t outer, int64_t rows, int64_t row)
{
	(void)rt;
	sc_cpu_gather_axis_grad(dy, idx, idx_dt, nidx, offset, dtable, outer, rows, row);
}

void sc_norm(sc_rt *rt, sc_norm_kind k, const float *x, const float *gamma, const float *beta, float *y,
             const int64_t *dims, int ndim, int begin_norm_axis, int begin_params_axis, double eps)
{
	(void)rt;
	sc_cpu_norm(sc_norm_check("sc_norm", k), x, gamma, beta, y, dims, ndim, begin_norm_axis, begin_params_axis, eps);
}

void sc_norm_grad(sc_rt *rt, sc_norm_kind k, const float *dy, const float *x, const float *gamma, float *dx,
                  float *dgamma, float *dbeta, const int64_t *dims, int ndim, int begin_norm_axis,
                  int begin_params_axis, double eps)
{
	(void)rt;
	sc_cpu_norm_grad(sc_norm_check("sc_norm_grad", k), dy, x, gamma, dx, dgamma, dbeta, dims, ndim, begin_norm_axis,
	                 begin_params_axis, eps);
}

void sc_norm_part(sc_rt *rt, sc_norm_kind k, const float *x, const float *gamma, const float *beta,
                  const float *mean, const float *var, float *y, int64_t rows, int64_t cols, double eps)
{
	(void)rt;
	sc_cpu_norm_part(sc_norm_part_check("sc_norm_part", k, mean, NULL), x, gamma, beta, mean, var, y, rows, cols,
	                 eps);
}

void sc_norm_part_grad(sc_rt *rt, sc_norm_kind k, const float *dy, const float *x, const float *gamma,
                       const float *mean, const float *var, float *dx, float *dgamma, float *dbeta, float *dmean,
                       float *dvar, int64_t rows, int64_t cols, double eps)
{
	(void)rt;
	sc_cpu_norm_part_grad(sc_norm_part_check("sc_norm_part_grad", k, mean, dmean), dy, x, gamma, mean, var, dx,
	                      dgamma, dbeta, dmean, dvar, rows, cols, eps);
}

void sc_concat(sc_rt *rt, sc_dtype dt, const void *const *xs, const int64_t *axis_sizes, int nx, void *y,
               const int64_t *y_dims, int ndim, int axis)
{
	(void)rt;
	sc_cpu_concat(dt, xs, axis_sizes, nx, y, y_dims, ndim, axis);
}

void sc_strided_slice(sc_rt *rt, sc_dtype dt, const void *x, void *y, const int64_t *dims, int ndim,
                      const int64_t *begin, const int64_t *end, const int64_t *strides)
{
	(void)rt;
	sc_cpu_strided_slice(dt, x, y, dims, ndim, begin, end, strides);
}

void sc_strided_slice_grad(sc_rt *rt, const float *dy, float *dx, const int64_t *dims, int ndim,
                           const int64_t *begin, const int64_t *end, const int64_t *strides)
{
	(void)rt;
	sc_cpu_strided_slice_grad(dy, dx, dims, ndim, begin, end, strides);
}

void sc_cast(sc_rt *rt, const void *x, sc_dtype x_dt, void *y, sc_dtype y_dt, int64_t n)
{
	(void)rt;
	sc_cpu_cast(x, x_dt, y, y_dt, n);
}

void sc_round(sc_rt *rt, float *x, sc_dtype dt, int64_t n)
{
	(void)rt;
	sc_cpu_round(x, dt, n);
}

void sc_pad(sc_rt *rt, sc_dtype dt, const void *x, void *y, const int64_t *dims, int ndim, const int64_t *lo,
            const int64_t *hi, double value)
{
	(void)rt;
	int64_t ydims[SC_MAX_DIMS];
	sc_pad_dims(dims, ndim, lo, hi, ydims);
	sc_cpu_pad(dt, x, y, dims, ydims, ndim, lo, value);
}

void sc_fill_pad(sc_rt *rt, const void *x, void *y, sc_dtype dt, const int64_t *dims, int ndim, int dim,
                 int64_t real, double value)
{
	(void)rt;
	int64_t outer, mid, inner;
	sc_check_dims("sc_fill_pad", dims, ndim);
	sc_split3(dims, ndim, sc_norm_axis("sc_fill_pad", dim, ndim), &outer, &mid, &inner);
	if (real < 0 || real > mid)
		SC_DIE("sc_fill_pad: %lld real elements of %lld", (long long)real, (long long)mid);
	sc_cpu_fill_pad(x, y, dt, outer, mid, inner, real, value);
}

void sc_sparse_softmax_ce(sc_rt *rt, const float *logits, const void *labels, sc_dtype label_dt, float *loss,
                          int64_t n, int64_t c)
{
	(void)rt;
	sc_cpu_sparse_softmax_ce(logits, labels, label_dt, loss, n, c);
}

void sc_sparse_softmax_ce_grad(sc_rt *rt, const float *logits, const void *labels, sc_dtype label_dt,
                               const float *dloss, float *dlogits, int64_t n, int64_t c)
{
	(void)rt;
	sc_cpu_sparse_softmax_ce_grad(logits, labels, label_dt, dloss, dlogits, n, c);
}

void sc_sparse_softmax_ce_part(sc_rt *rt, const float *logits, const void *labels, sc_dtype label_dt,
                               const float *max, const float *sum, float *loss, int64_t n, int64_t c,
                               int64_t offset)
{
	(void)rt;
	sc_cpu_sparse_softmax_ce_part(logits, labels, label_dt, max, sum, loss, n, c, offset);
}

void sc_sparse_softmax_ce_part_grad(sc_rt *rt, const float *logits, const void *labels, sc_dtype label_dt,
                                    const float *max, const float *sum, const float *dloss, float *dlogits,
                                    int64_t n, int64_t c, int64_t offset, int64_t classes)
{
	(void)rt;
	sc_cpu_sparse_softmax_ce_part_grad(logits, labels, label_dt, max, sum, dloss, dlogits, n, c, offset, classes);
}

void sc_softmax_ce(sc_rt *rt, const float *logits, const float *labels, float *loss, int64_t n, int64_t c)
{
	(void)rt;
	sc_cpu_softmax_ce(logits, labels, loss, n, c);
}

void sc_softmax_ce_grad(sc_rt *rt, const float *logits, const float *labels, const float *dloss, float *dlogits,
                        int64_t n, int64_t c)
{
	(void)rt;
	sc_cpu_softmax_ce_grad(logits, labels, dloss, dlogits, n, c);
}

void sc_softmax_ce_part(sc_rt *rt, const float *logits, const float *labels, const float *max, const float *sum,
                        float *loss, int64_t n, int64_t c)
{
	(void)rt;
	sc_cpu_softmax_ce_part(logits, labels, max, sum, loss, n, c);
}

void sc_softmax_ce_part_grad(sc_rt *rt, const float *logits, const float *labels, const float *max,
                             const float *sum, const float *dloss, float *dlogits, int64_t n, int64_t c)
{
	(void)rt;
	sc_cpu_softmax_ce_part_grad(logits, labels, max, sum, dloss, dlogits, n, c);
}

void sc_mse_loss(sc_rt *rt, const float *pred, const float *target, float *loss, int64_t n)
{
	(void)rt;
	sc_cpu_mse_loss(pred, target, loss, n);
}

void sc_mse_loss_grad(sc_rt *rt, const float *pred, const float *target, const float *dloss, float *dpred,
                      int64_t n)
{
	(void)rt;
	sc_cpu_mse_loss_grad(pred, target, dloss, dpred, n);
}

void sc_l1_loss(sc_rt *rt, const float *pred, const float *target, float *loss, int64_t n)
{
	(void)rt;
	sc_cpu_l1_loss(pred, target, loss, n);
}

void sc_l1_loss_grad(sc_rt *rt, const float *pred, const float *target, const float *dloss, float *dpred,
                     int64_t n)
{
	(void)rt;
	sc_cpu_l1_loss_grad(pred, target, dloss, dpred, n);
}

void sc_l2_loss(sc_rt *rt, const float *x, float *loss, int64_t n)
{
	(void)rt;
	sc_cpu_l2_loss(x, loss, n);
}

void sc_l2_loss_grad(sc_rt *rt, const float *x, const float *dloss, float *dx, int64_t n)
{
	(void)rt;
	sc_cpu_l2_loss_grad(x, dloss, dx, n);
}

void sc_kldiv_loss(sc_rt *rt, const float *x, const float *y, float *out, int64_t n, int reduce, double scale)
{
	(void)rt;
	sc_cpu_kldiv_loss(x, y, out, n, reduce, scale);
}

void sc_kldiv_loss_grad(sc_rt *rt, const float *y, const float *dout, float *dx, int64_t n, int reduce, double scale)
{
	(void)rt;
	sc_cpu_kldiv_loss_grad(y, dout, dx, n, reduce, scale);
}

void sc_lerp(sc_rt *rt, const float *start, const int64_t *s_dims, int s_ndim, const float *end,
             const int64_t *e_dims, int e_ndim, const float *w, const int64_t *w_dims, int w_ndim, float *y,
             const int64_t *y_dims, int y_ndim)
{
	(void)rt;
	sc_cpu_lerp(start, s_dims, s_ndim, end, e_dims, e_ndim, w, w_dims, w_ndim, y, y_dims, y_ndim);
}

void sc_lerp_grad(sc_rt *rt, int k, const float *start, const int64_t *s_dims, int s_ndim, const float *end,
                  const int64_t *e_dims, int e_ndim, const float *w, const int64_t *w_dims, int w_ndim,
                  const float *dy, const int64_t *y_dims, int y_ndim, float *dx)
{
	(void)rt;
	sc_cpu_lerp_grad(k, start, s_dims, s_ndim, end, e_dims, e_ndim, w, w_dims, w_ndim, dy, y_dims, y_ndim, dx);
}

void sc_masked_fill(sc_rt *rt, const float *x, const int64_t *x_dims, int x_ndim, const uint8_t *mask,
                    const int64_t *m_dims, int m_ndim, const float *value, float *y, const int64_t *y_dims, int y_ndim)
{
	(void)rt;
	sc_cpu_masked_fill(x, x_dims, x_ndim, mask, m_dims, m_ndim, value, y, y_dims, y_ndim);
}

void sc_masked_fill_grad(sc_rt *rt, int k, const int64_t *x_dims, int x_ndim, const uint8_t *mask,
                         const int64_t *m_dims, int m_ndim, const float *dy, const int64_t *y_dims, int y_ndim,
                         float *dx)
{
	(void)rt;
	sc_cpu_masked_fill_grad(k, x_dims, x_ndim, mask, m_dims, m_ndim, dy, y_dims, y_ndim, dx);
}

void sc_resize(sc_rt *rt, int bilinear, const float *x, float *y, int64_t nc, int64_t in_h, int64_t in_w,
               int64_t out_h, int64_t out_w, int align_corners, int half_pixel_centers)
{
	(void)rt;
	sc_cpu_resize(bilinear, x, y, nc, in_h, in_w, out_h, out_w, align_corners, half_pixel_centers);
}

void sc_resize_grad(sc_rt *rt, int bilinear, const float *dy, float *dx, int64_t nc, int64_t in_h, int64_t in_w,
                    int64_t out_h, int64_t out_w, int align_corners, int half_pixel_centers)
{
	(void)rt;
	sc_cpu_resize_grad(bilinear, dy, dx, nc, in_h, in_w, out_h, out_w, align_corners, half_pixel_centers);
}

void sc_binary_grad(sc_rt *rt, sc_binop op, const float *a, const int64_t *a_dims, int a_ndim, const float *b,
                    const int64_t *b_dims, int b_ndim, const float *dy, const int64_t *y_dims, int y_ndim, float *da,
                    float *db)
{
	(void)rt;
	sc_cpu_binary_grad(op, a, a_dims, a_ndim, b, b_dims, b_ndim, dy, y_dims, y_ndim, da, db);
}

void sc_sum_to_shape(sc_rt *rt, const float *x, const int64_t *x_dims, int x_ndim, float *y, const int64_t *y_dims,
                     int y_ndim)
{
	(void)rt;
	sc_cpu_sum_to_shape(x, x_dims, x_ndim, y, y_dims, y_ndim);
}

void sc_broadcast_to(sc_rt *rt, const float *x, const int64_t *x_dims, int x_ndim, float *y, const int64_t *y_dims,
                     int y_ndim)
{
	(void)rt;
	sc_cpu_broadcast_to(x, x_dims, x_ndim, y, y_dims, y_ndim);
}

void sc_bias_add_grad(sc_rt *rt, const float *dy, float *dbias, int64_t rows, int64_t c)
{
	(void)rt;
	sc_cpu_bias_add_grad(dy, dbias, rows, c);
}

void sc_sgd(sc_rt *rt, float *p, const float *g, float *accum, int64_t n, double lr, double momentum,
            double dampening, double weight_decay, int nesterov, int64_t step)
{
	(void)rt;
	sc_cpu_sgd(p, g, accum, n, lr, momentum, dampening, weight_decay, nesterov, step);
}

void sc_momentum(sc_rt *rt, float *p, const float *g, float *v, int64_t n, double lr, double momentum,
                 double weight_decay, int nesterov)
{
	(void)rt;
	sc_cpu_momentum(p, g, v, n, lr, momentum, weight_decay, nesterov);
}

void sc_adam(sc_rt *rt, float *p, const float *g, float *m, float *v, int64_t n, double lr, double beta1,
             double beta2, double eps, double weight_decay, int64_t step)
{
	(void)rt;
	sc_cpu_adam(p, g, m, v, n, lr, beta1, beta2, eps, weight_decay, step);
}

void sc_adam_weight_decay(sc_rt *rt, float *p, const float *g, float *m, float *v, int64_t n, double lr,
                          double beta1, double beta2, double eps, double weight_decay)
{
	(void)rt;
	sc_cpu_adam_weight_decay(p, g, m, v, n, lr, beta1, beta2, eps, weight_decay);
}

void sc_lamb_norms(sc_rt *rt, const float *p, const float *g, const float *m, const float *v, int64_t n,
                   double beta1, double beta2, double eps, double weight_decay, int64_t step, float *out)
{
	(void)rt;
	sc_cpu_lamb_norms(p, g, m, v, n, beta1, beta2, eps, weight_decay, step, out);
}

void sc_lamb(sc_rt *rt, float *p, const float *g, float *m, float *v, int64_t n, double lr, double beta1,
             double beta2, double eps, double weight_decay, int64_t step, const float *norms)
{
	(void)rt;
	sc_cpu_lamb(p, g, m, v, n, lr, beta1, beta2, eps, weight_decay, step, norms);
}

void sc_sum_squares(sc_rt *rt, const float *const *xs, const int64_t *ns, int nx, float *out)
{
	(void)rt;
	sc_cpu_sum_squares(xs, ns, nx, out);
}

void sc_clip_by_norm(sc_rt *rt, const float *x, float *y, int64_t n, const float *sqnorm, double clip)
{
	(void)rt;
	sc_cpu_clip_by_norm(x, y, n, sqnorm, clip);
}
