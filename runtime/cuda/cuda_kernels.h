/* cuda_kernels.h: the launchers of kernels.cu, callable from C.
 *
 * Each launcher queues its kernel on stream s and returns cudaGetLastError()
 * for the caller's check macro; kernels.cu knows nothing of MPI or the
 * runtime. Shapes arrive already reduced to what a kernel walks: a walk (the
 * output's dims and, per operand, its element stride along each), or a
 * reduction plan (kept dims and reduced dims, each with strides into x). The
 * op numbers are those of cpu_kernels.h, so a kernel and its CPU twin take
 * the same op. */
#ifndef CUDA_KERNELS_H
#define CUDA_KERNELS_H

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "cpu_kernels.h"

typedef struct {
	int ndim;
	int64_t dims[SC_MAX_DIMS];   /* the iteration space, row-major */
	int64_t s0[SC_MAX_DIMS];     /* element strides of operand 0 along each dim */
	int64_t s1[SC_MAX_DIMS];     /* of operand 1 */
} sc_cu_walk;

typedef struct {
	int nk, nr;
	int64_t kdims[SC_MAX_DIMS], kstride[SC_MAX_DIMS];   /* kept: the output, row-major */
	int64_t rdims[SC_MAX_DIMS], rstride[SC_MAX_DIMS];   /* reduced, for each output */
} sc_cu_plan;

cudaError_t sc_cu_fill(void *dst, sc_dtype dt, int64_t n, double value, cudaStream_t s);
/* sc_triangle on elements of es bytes (1, 2, 4 or 8; else cudaErrorInvalidValue) */
cudaError_t sc_cu_triangle(int upper, const void *x, void *y, size_t es, int64_t lead, int64_t rows, int64_t cols,
                           int64_t row0, int64_t col0, int64_t diagonal, cudaStream_t s);
cudaError_t sc_cu_fill_pad(const void *x, void *y, sc_dtype dt, int64_t outer, int64_t mid, int64_t inner,
                           int64_t real, double value, cudaStream_t s);
cudaError_t sc_cu_swap01(const void *src, void *dst, int64_t A, int64_t B, int64_t C, size_t es, cudaStream_t s);
cudaError_t sc_cu_divide(void *buf, sc_dtype dt, int64_t n, int div, cudaStream_t s);

cudaError_t sc_cu_binary(sc_binop op, const float *a, const float *b, float *y, const sc_cu_walk *w, cudaStream_t s);
cudaError_t sc_cu_compare(sc_cmpop op, float p, const float *a, const float *b, uint8_t *y, const sc_cu_walk *w,
                          cudaStream_t s);
cudaError_t sc_cu_logical(sc_logop op, const uint8_t *a, const uint8_t *b, uint8_t *y, const sc_cu_walk *w,
                          cudaStream_t s);
cudaError_t sc_cu_is_finite(const float *x, uint8_t *y, int64_t n, cudaStream_t s);
/* sc_int_math on a and b walked by w (b a again for the unary ones); sc_reverse over d's dims (its strides
 * unused); sc_trace, or with grad sc_trace_grad's diagonals (dx zeroed before) */
cudaError_t sc_cu_int_math(sc_intop op, sc_dtype dt, const void *a, const void *b, void *y, const sc_cu_walk *w,
                           cudaStream_t s);
cudaError_t sc_cu_reverse(const float *x, float *y, const sc_cu_walk *d, unsigned rev, cudaStream_t s);
cudaError_t sc_cu_trace(const float *x, float *y, const sc_diag *g, int grad, cudaStream_t s);
/* ga, gb (y-shaped, either NULL): each output's share of da, db before summing */
cudaError_t sc_cu_binary_grad_full(sc_binop op, const float *a, const float *b, const float *dy, float *ga,
                                   float *gb, const sc_cu_walk *w, cudaStream_t s);
cudaError_t sc_cu_bias_add(const float *x, const float *bias, float *y, int64_t rows, int64_t c, cudaStream_t s);
cudaError_t sc_cu_unary(sc_unop op, float p, const float *x, float *y, int64_t n, cudaStream_t s);
/* PReLU on x (n / (c inner), c, inner), and its dx and the products x dy where x < 0 (prod, summed into dw by
 * the caller): sc_prelu, sc_prelu_grad */
cudaError_t sc_cu_prelu(const float *x, const float *w, float *y, int64_t n, int64_t c, int64_t inner, int64_t wn,
                        cudaStream_t s);
/* One image's im2col matrix (c kh kw, ho wo) and its adjoint (col2im, dx's
 * elements each summing their entries in the CPU twin's order); the pools'
 * forward and gradient (each dx element gathering its windows in order) */
cudaError_t sc_cu_im2col(const sc_window *g, const float *x, float *col, cudaStream_t s);
cudaError_t sc_cu_col2im(const sc_window *g, const float *col, float *dx, cudaStream_t s);
cudaError_t sc_cu_pool(sc_pool_kind k, const sc_window *g, const float *x, float *y, cudaStream_t s);
cudaError_t sc_cu_pool_grad(sc_pool_kind k, const sc_window *g, const float *x, const float *dy, float *dx,
                            cudaStream_t s);
cudaError_t sc_cu_prelu_grad(const float *x, const float *w, const float *dy, float *dx, float *prod, int64_t n,
                             int64_t c, int64_t inner, int64_t wn, cudaStream_t s);
cudaError_t sc_cu_bias_add_residual(const float *x, const float *bias, float *pre, const float *r, float *y,
                                   int64_t rows, int64_t c, cudaStream_t s);
cudaError_t sc_cu_bias_unary(sc_unop op, float p, const float *x, const float *bias, float *pre, float *y,
                             int64_t rows, int64_t c, cudaStream_t s);
cudaError_t sc_cu_unary_grad(sc_unop op, float p, const float *t, const float *dy, float *dx, int64_t n,
                             cudaStream_t s);
cudaError_t sc_cu_scale(const float *x, float *y, int64_t n, float alpha, cudaStream_t s);

/* rows of len along the last axis; the mask's row r at walk_off(r, mw), mlast apart */
cudaError_t sc_cu_softmax_masked(const float *x, const float *scale, const float *mask, const sc_cu_walk *mw,
                                 int64_t mlast, float *y, int64_t rows, int64_t len, cudaStream_t s);
cudaError_t sc_cu_softmax(const float *x, const float *scale, float *y, int64_t outer, int64_t len, int64_t inner,
                          int is_log, cudaStream_t s);
cudaError_t sc_cu_softmax_grad(const float *y, const float *dy, float *dx, int64_t outer, int64_t len, int64_t inner,
                               int is_log, cudaStream_t s);
/* Launchers that take scratch need device memory of the size their _scratch
 * function gives (0: none, scratch may be NULL), not touched by other work
 * queued on s meanwhile. Their sums go in a fixed order, so results repeat. */
size_t sc_cu_reduce_scratch(const sc_cu_plan *p);
cudaError_t sc_cu_reduce(sc_reduce_kind kind, const float *x, float *y, const sc_cu_plan *p, void *scratch,
                         cudaStream_t s);
/* ReduceMax's gradient and ReduceMin's: dy to the elements of x equal to y */
cudaError_t sc_cu_reduce_max_grad(const float *x, const float *y, const float *dy, const float *count, float *dx,
                                  const sc_cu_plan *p, cudaStream_t s);
cudaError_t sc_cu_count_equal(const float *x, const float *y, float *count, const sc_cu_plan *p, cudaStream_t s);
/* ReduceProd (k -1), its nonzero product (k 0) and zero count (k 1); its gradient; ReduceAll (any 0), ReduceAny */
cudaError_t sc_cu_reduce_prod(const float *x, int k, float *y, const sc_cu_plan *p, cudaStream_t s);
cudaError_t sc_cu_reduce_prod_grad(const float *x, const float *dy, const float *prod, const float *zeros, float *dx,
                                   const sc_cu_plan *p, cudaStream_t s);
/* CumSum (prod 0), CumProd (prod 1) along the middle dim of (outer, n, inner), and their gradient; a split
 * axis's piece with the slices' totals (outer, k, inner), else totals NULL, offset 0, k 1 (sc_cumsum_part) */
cudaError_t sc_cu_cumsum(int prod, const float *x, const float *totals, float *y, int64_t offset, int64_t k,
                         int64_t outer, int64_t n, int64_t inner, int exclusive, int reverse, cudaStream_t s);
cudaError_t sc_cu_cumsum_grad(int prod, const float *x, const float *totals, const float *dy, float *dx,
                              float *dtotals, int64_t offset, int64_t k, int64_t outer, int64_t n, int64_t inner,
                              int exclusive, int reverse, cudaStream_t s);
cudaError_t sc_cu_reduce_bool(int any, const uint8_t *x, uint8_t *y, const sc_cu_plan *p, cudaStream_t s);
cudaError_t sc_cu_where_equal(const float *x, const float *y, const float *dy, float *dx, int64_t n, cudaStream_t s);
cudaError_t sc_cu_select(const uint8_t *cond, const float *a, const float *b, float *y, int64_t n, cudaStream_t s);
/* RotaryPositionEmbedding over w's 4 dims (x's), w.s0 cos's strides, w.s1 sin's (sc_rotary) */
cudaError_t sc_cu_rotary(int64_t mode, int transpose, const float *x, const float *cos, const float *sin, float *y,
                         const sc_cu_walk *w, cudaStream_t s);
/* FlashAttentionScore (sc_flash_attention, _grad); the gradient's scratch
 * (device) holds each query row's lse and D = rowsum(dO o) */
cudaError_t sc_cu_flash_attention(const float *q, const float *k, const float *v, const void *mask, int mask_float,
                                  const int64_t *mask_dims, float *o, const int64_t *dims, float scale, int causal,
                                  int layout, cudaStream_t s);
size_t sc_cu_flash_attention_grad_scratch(const int64_t *dims);
cudaError_t sc_cu_flash_attention_grad(const float *q, const float *k, const float *v, const void *mask,
                                       int mask_float, const int64_t *mask_dims, const float *o, const float *dout,
                                       float *dq, float *dk, float *dv, const int64_t *dims, float scale, int causal,
                                       int layout, void *scratch, cudaStream_t s);
/* Dropout of a piece: w's dims the piece's, s0 the whole's strides; base the index of its first
 * element; k the step's key */
cudaError_t sc_cu_dropout(const float *x, float *y, const sc_cu_walk *w, int64_t base, uint64_t k, double keep_prob,
                          cudaStream_t s);
/* DropoutGenMask's mask of a piece (sc_cu_dropout's walk, base and key); DropoutDoMask over n */
cudaError_t sc_cu_dropout_gen_mask(uint8_t *m, const sc_cu_walk *w, int64_t base, uint64_t k, double keep_prob,
                                   cudaStream_t s);
cudaError_t sc_cu_dropout_do_mask(const float *x, const uint8_t *m, float *y, int64_t n, double keep_prob,
                                  cudaStream_t s);
/* UniformReal's values of a piece: sc_cu_dropout's draws (its walk, base and key) */
cudaError_t sc_cu_uniform_real(float *y, const sc_cu_walk *w, int64_t base, uint64_t k, cudaStream_t s);
/* The computed constants; a dtype the kernel does not write: cudaErrorInvalidValue */
cudaError_t sc_cu_arange(void *y, sc_dtype dt, int64_t n, int64_t first, double start, double step, cudaStream_t s);
cudaError_t sc_cu_causal_mask(void *y, sc_dtype dt, int64_t lead, int64_t rows, int64_t cols, int64_t row0,
                              int64_t col0, double fill, cudaStream_t s);
cudaError_t sc_cu_eye(void *y, sc_dtype dt, int64_t rows, int64_t cols, int64_t row0, int64_t col0, cudaStream_t s);
cudaError_t sc_cu_lin_space(float *y, int64_t n, int64_t first, float start, float stop, int64_t num, cudaStream_t s);
cudaError_t sc_cu_rope(float *y, int is_sin, int64_t lead, int64_t rows, int64_t cols, int64_t row0, int64_t col0,
                       int64_t d, double theta, cudaStream_t s);

/* y[i] = x[base + walk offset of i] (es-byte elements): transpose, slice, broadcast */
cudaError_t sc_cu_strided_copy(const void *x, void *y, int64_t base, const sc_cu_walk *w, size_t es, cudaStream_t s);
/* x[base + walk offset of i] = y[i] */
cudaError_t sc_cu_strided_scatter(const float *y, float *x, int64_t base, const sc_cu_walk *w, cudaStream_t s);
/* The same with y walked too (operand 1): y[offset 1] = x[base + offset 0]
 * and back, for the box of a slice that lies in x when the slice reaches
 * past x (the caller zeroes the rest). */
cudaError_t sc_cu_box_copy(const void *x, void *y, int64_t base, const sc_cu_walk *w, size_t es, cudaStream_t s);
cudaError_t sc_cu_box_scatter(const float *y, float *x, int64_t base, const sc_cu_walk *w, cudaStream_t s);

/* sc_arg_reduce and sc_topk; with dx (zeroed by the caller) dy placed at the picks instead. */
cudaError_t sc_cu_arg_reduce(const float *x, int64_t outer, int64_t n, int64_t inner, int is_min, int32_t *idx,
                             float *val, const float *dy, float *dx, cudaStream_t s);
cudaError_t sc_cu_topk(const float *x, int64_t rows, int64_t n, int64_t k, float *val, int32_t *idx, const float *dy,
                       float *dx, cudaStream_t s);
cudaError_t sc_cu_one_hot(const void *idx, int idx64, int64_t outer, int64_t depth, int64_t inner, int64_t offset,
                          const float *on, const float *off, float *y, cudaStream_t s);
/* the table (outer, rows, row), y (outer, nidx, row) */
cudaError_t sc_cu_gather(const float *table, int64_t outer, int64_t rows, int64_t row, const void *idx, int idx64,
                         int64_t nidx, int64_t offset, int64_t limit, float *y, cudaStream_t s);
/* dtable zeroed here, then rows added; ids of limit or more (EmbeddingLookup's) read and add nothing, Gather's
 * limit INT64_MAX */
cudaError_t sc_cu_gather_grad(const float *dy, const void *idx, int idx64, int64_t nidx, int64_t offset,
                              int64_t limit, float *dtable, int64_t outer, int64_t rows, int64_t row, cudaStream_t s);
/* GatherD: y (idims) from x (xdims) at the index along dim; its gradient zeroes dx here, then adds */
cudaError_t sc_cu_gather_d(const float *x, const int64_t *xdims, const void *idx, int idx64, const int64_t *idims,
                           int ndim, int dim, int64_t offset, float *y, cudaStream_t s);
cudaError_t sc_cu_gather_d_grad(const float *dy, const void *idx, int idx64, const int64_t *idims, float *dx,
                                const int64_t *xdims, int ndim, int dim, int64_t offset, cudaStream_t s);
/* GatherNd, its gradient and the tensor scatters (op an sc_scatter_op) on x (dims[0..n), inner), the indices
 * (m, n) inside dims (checked on the host); the scatters and the gradients walk the indices in order, a thread
 * per inner element, so repeated indices give the CPU twin's values */
cudaError_t sc_cu_gather_nd(const float *x, const int64_t *dims, int n, int64_t inner, const void *idx, int idx64,
                            int64_t m, float *y, cudaStream_t s);
cudaError_t sc_cu_gather_nd_grad(const float *dy, const void *idx, int idx64, int64_t m, float *dx,
                                 const int64_t *dims, int n, int64_t inner, cudaStream_t s);
cudaError_t sc_cu_tensor_scatter(int op, const float *x, const void *idx, int idx64, int64_t m, const float *upd,
                                 float *y, const int64_t *start, const int64_t *ldims, int n, int64_t inner,
                                 cudaStream_t s);
cudaError_t sc_cu_tensor_scatter_grad(int op, int k, const float *dy, const float *x, const float *upd,
                                      const float *y, const void *idx, int idx64, int64_t m, float *dx,
                                      const int64_t *start, const int64_t *ldims, int n, int64_t inner, cudaStream_t s);
/* The unsorted segment reductions (op an sc_segment_op; big SC_SEGMENT_BIG of the result's type), their
 * statistics and gradient (sc_unsorted_segment*) */
cudaError_t sc_cu_unsorted_segment(int op, const float *x, const void *ids, int ids64, float *y, int64_t rows,
                                   int64_t inner, int64_t segments, float big, cudaStream_t s);
cudaError_t sc_cu_unsorted_segment_stat(int op, const float *x, const void *ids, int ids64, const float *y, int k,
                                        float *stat, int64_t rows, int64_t inner, int64_t segments, cudaStream_t s);
cudaError_t sc_cu_unsorted_segment_grad(int op, const float *x, const void *ids, int ids64, const float *y,
                                        const float *dy, const float *stat0, const float *stat1, float *dx,
                                        int64_t rows, int64_t inner, int64_t segments, cudaStream_t s);
/* BatchNorm on x (n, c, hw) per channel (sc_batch_norm*) */
cudaError_t sc_cu_batch_norm(const float *x, const float *scale, const float *bias, float *moving_mean,
                             float *moving_var, const float *batch_mean, const float *batch_var, float *y, int64_t n,
                             int64_t c, int64_t hw, double eps, double momentum, int64_t count, int mode,
                             cudaStream_t s);
cudaError_t sc_cu_batch_norm_grad(const float *x, const float *dy, const float *scale, const float *mean,
                                  const float *var, float *dx, float *dscale, float *dbias, float *dmean, float *dvar,
                                  int64_t n, int64_t c, int64_t hw, double eps, cudaStream_t s);
/* L2Normalize on x (outer, n, inner) along n; sumsq, dx and dsumsq may be NULL (sc_l2_normalize*) */
cudaError_t sc_cu_l2_normalize(const float *x, const float *sumsq, float *y, int64_t outer, int64_t n, int64_t inner,
                               double eps, cudaStream_t s);
cudaError_t sc_cu_l2_normalize_grad(const float *x, const float *sumsq, const float *dy, float *dx, float *dsumsq,
                                    int64_t outer, int64_t n, int64_t inner, double eps, cudaStream_t s);
/* the normalizers: centered is sc_norm_centered(kind); beta may be NULL, and
 * mean and dmean are when not centered */
cudaError_t sc_cu_norm(int centered, const float *x, const float *gamma, const float *beta, float *y, int64_t rows,
                       int64_t cols, int64_t np, float eps, cudaStream_t s);
/* any of dx, dgamma, dbeta may be NULL */
size_t sc_cu_norm_grad_scratch(int64_t rows, int64_t cols, int64_t np);
cudaError_t sc_cu_norm_grad(int centered, const float *dy, const float *x, const float *gamma, float *dx,
                            float *dgamma, float *dbeta, int64_t rows, int64_t cols, int64_t np, float eps,
                            void *scratch, cudaStream_t s);
cudaError_t sc_cu_norm_part(int centered, const float *x, const float *gamma, const float *beta, const float *mean,
                            const float *var, float *y, int64_t rows, int64_t cols, float eps, cudaStream_t s);
size_t sc_cu_norm_part_grad_scratch(int64_t rows, int64_t cols);
cudaError_t sc_cu_norm_part_grad(int centered, const float *dy, const float *x, const float *gamma, const float *mean,
                                 const float *var, float *dx, float *dgamma, float *dbeta, float *dmean, float *dvar,
                                 int64_t rows, int64_t cols, float eps, void *scratch, cudaStream_t s);
/* sc_ew_chain's steps and operands, by value (the kernel's parameters) */
typedef struct {
	sc_ew_step steps[SC_EW_MAX_STEPS];
	sc_ew_operand ins[SC_EW_MAX_INS];
	int nsteps, nin;
} sc_cu_chain;
cudaError_t sc_cu_ew_chain(const sc_cu_chain *ch, int64_t rows, int64_t cols, cudaStream_t s);
cudaError_t sc_cu_cast(const void *x, sc_dtype x_dt, void *y, sc_dtype y_dt, int64_t n, cudaStream_t s);
cudaError_t sc_cu_round(float *x, sc_dtype dt, int64_t n, cudaStream_t s);

cudaError_t sc_cu_sparse_ce(const float *logits, const void *labels, int label64, float *loss, int64_t n, int64_t c,
                            cudaStream_t s);
cudaError_t sc_cu_sparse_ce_grad(const float *logits, const void *labels, int label64, const float *dloss,
                                 float *dlogits, int64_t n, int64_t c, cudaStream_t s);
cudaError_t sc_cu_sparse_ce_part(const float *logits, const void *labels, int label64, const float *max,
                                 const float *sum, float *loss, int64_t n, int64_t c, int64_t offset,
                                 cudaStream_t s);
cudaError_t sc_cu_sparse_ce_part_grad(const float *logits, const void *labels, int label64, const float *max,
                                      const float *sum, const float *dloss, float *dlogits, int64_t n, int64_t c,
                                      int64_t offset, int64_t classes, cudaStream_t s);
cudaError_t sc_cu_softmax_ce(const float *logits, const float *labels, float *loss, int64_t n, int64_t c,
                             cudaStream_t s);
cudaError_t sc_cu_softmax_ce_grad(const float *logits, const float *labels, const float *dloss, float *dlogits,
                                  int64_t n, int64_t c, cudaStream_t s);
cudaError_t sc_cu_softmax_ce_part(const float *logits, const float *labels, const float *max, const float *sum,
                                  float *loss, int64_t n, int64_t c, cudaStream_t s);
cudaError_t sc_cu_softmax_ce_part_grad(const float *logits, const float *labels, const float *max, const float *sum,
                                       const float *dloss, float *dlogits, int64_t n, int64_t c, cudaStream_t s);
/* l1 0: mean squared error, 1: mean absolute error */
cudaError_t sc_cu_l2_loss(const float *x, float *loss, int64_t n, cudaStream_t s);
cudaError_t sc_cu_l2_loss_grad(const float *x, const float *dloss, float *dx, int64_t n, cudaStream_t s);
cudaError_t sc_cu_kldiv_loss(const float *x, const float *y, float *out, int64_t n, int reduce, double scale,
                             cudaStream_t s);
cudaError_t sc_cu_kldiv_loss_grad(const float *y, const float *dout, float *dx, int64_t n, int reduce, double scale,
                                  cudaStream_t s);
/* Lerp over sw's iteration space (y's): start and end at sw's strides, the weight at ww's first */
cudaError_t sc_cu_lerp(const float *start, const float *end, const float *w, float *y, const sc_cu_walk *sw,
                       const sc_cu_walk *ww, cudaStream_t s);
/* operand k's term at every element of y, into g (y's size) */
cudaError_t sc_cu_lerp_grad_full(int k, const float *start, const float *end, const float *w, const float *dy,
                                 float *g, const sc_cu_walk *sw, const sc_cu_walk *ww, cudaStream_t s);
cudaError_t sc_cu_masked_fill(const float *x, const uint8_t *m, const float *v, float *y, const sc_cu_walk *w,
                              cudaStream_t s);
cudaError_t sc_cu_masked_fill_grad_full(int k, const uint8_t *m, const float *dy, float *g, const sc_cu_walk *w,
                                        cudaStream_t s);
/* sc_resize (bilinear 0: nearest) on nc planes, and its gradient into dx zeroed first (twins: sc_cpu_resize, _grad) */
cudaError_t sc_cu_resize(int bilinear, const float *x, float *y, int64_t nc, int64_t in_h, int64_t in_w, int64_t out_h,
                         int64_t out_w, int align_corners, int half_pixel_centers, cudaStream_t s);
cudaError_t sc_cu_resize_grad(int bilinear, const float *dy, float *dx, int64_t nc, int64_t in_h, int64_t in_w,
                              int64_t out_h, int64_t out_w, int align_corners, int half_pixel_centers, cudaStream_t s);
cudaError_t sc_cu_pair_loss(int l1, const float *pred, const float *target, float *loss, int64_t n, cudaStream_t s);
cudaError_t sc_cu_pair_loss_grad(int l1, const float *pred, const float *target, const float *dloss, float *dpred,
                                 int64_t n, cudaStream_t s);

cudaError_t sc_cu_sgd(float *p, const float *g, float *accum, int64_t n, float lr, float mu, float damp, float wd,
                      int nesterov, int first, cudaStream_t s);
cudaError_t sc_cu_momentum(float *p, const float *g, float *v, int64_t n, float lr, float mu, float wd, int nesterov,
                           cudaStream_t s);
cudaError_t sc_cu_adam(float *p, const float *g, float *m, float *v, int64_t n, float lr_t, float b1, float b2,
                       float eps, float wd, cudaStream_t s);
cudaError_t sc_cu_adam_weight_decay(float *p, const float *g, float *m, float *v, int64_t n, float lr, float b1,
                                    float b2, float eps, float wd, cudaStream_t s);
/* Lamb (c1, c2 the bias corrections 1 - b^t): out[0..1] = this piece's sums of p^2 and of the update's squares;
 * then the update with the trust ratio of norms[0..1] (device), the whole parameter's sums */
cudaError_t sc_cu_lamb_norms(const float *p, const float *g, const float *m, const float *v, int64_t n, float b1,
                             float b2, float c1, float c2, float eps, float wd, float *out, cudaStream_t s);
cudaError_t sc_cu_lamb(float *p, const float *g, float *m, float *v, int64_t n, float lr, float b1, float b2,
                       float c1, float c2, float eps, float wd, const float *norms, cudaStream_t s);
/* out = the sum of the squares of xs[k] (device pointers; ns host) */
cudaError_t sc_cu_sum_squares(const float *const *xs, const int64_t *ns, int nx, float *out, cudaStream_t s);
cudaError_t sc_cu_clip_by_norm(const float *x, float *y, int64_t n, const float *sqnorm, float clip, cudaStream_t s);

#ifdef __cplusplus
}
#endif

#endif
