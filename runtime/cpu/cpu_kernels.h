/* cpu_kernels.h: the CPU kernels, on host memory, without a runtime.
 *
 * Each sc_cpu_X is the public sc_X of shardc_rt.h without its sc_rt (see
 * there for what it computes). The cpu backend's sc_X calls it; the unit
 * tests call it directly (no MPI); the cuda tests use it as the twin every
 * GPU kernel is checked against. */
#ifndef CPU_KERNELS_H
#define CPU_KERNELS_H

#include "shardc_rt.h"

void sc_cpu_fill(void *dst, sc_dtype dt, int64_t n, double value);
void sc_cpu_matmul(const float *a, const float *b, float *c, int64_t m, int64_t n, int64_t k, int transpose_a,
                   int transpose_b);
void sc_cpu_batch_matmul(const float *a, const int64_t *a_bdims, int a_nb, const float *b, const int64_t *b_bdims,
                         int b_nb, float *c, const int64_t *c_bdims, int c_nb, int64_t m, int64_t n, int64_t k,
                         int transpose_a, int transpose_b);
void sc_cpu_batch_matmul_strided(const float *a, const int64_t *a_st, const float *b, const int64_t *b_st, float *c,
                                 const int64_t *c_st, const int64_t *bdims, int nb, int64_t m, int64_t n, int64_t k,
                                 int transpose_a, int transpose_b);
void sc_cpu_binary(sc_binop op, const float *a, const int64_t *a_dims, int a_ndim, const float *b,
                   const int64_t *b_dims, int b_ndim, float *y, const int64_t *y_dims, int y_ndim);
void sc_cpu_compare(sc_cmpop op, float p, const float *a, const int64_t *a_dims, int a_ndim, const float *b,
                    const int64_t *b_dims, int b_ndim, uint8_t *y, const int64_t *y_dims, int y_ndim);
void sc_cpu_logical(sc_logop op, const uint8_t *a, const int64_t *a_dims, int a_ndim, const uint8_t *b,
                    const int64_t *b_dims, int b_ndim, uint8_t *y, const int64_t *y_dims, int y_ndim);
void sc_cpu_is_finite(const float *x, uint8_t *y, int64_t n);
void sc_cpu_int_math(sc_intop op, sc_dtype dt, const void *a, const int64_t *a_dims, int a_ndim, const void *b,
                     const int64_t *b_dims, int b_ndim, void *y, const int64_t *y_dims, int y_ndim);
void sc_cpu_reverse(const float *x, float *y, const int64_t *dims, int ndim, unsigned rev);
/* sc_trace's walk (both backends): the diagonal of result j starts at
 * sc_diag_base(j) and runs len elements step apart; n results. The other
 * dims' sizes and strides, in x's order, give a result's start. */
typedef struct {
	int64_t n, len, start, step;
	int nother;
	int64_t odims[SC_MAX_DIMS], ostr[SC_MAX_DIMS];
} sc_diag;
void sc_diag_init(sc_diag *g, const int64_t *dims, int ndim, int a1, int a2, int64_t offset);
int64_t sc_diag_base(const sc_diag *g, int64_t j);
void sc_cpu_trace(const float *x, float *y, const int64_t *dims, int ndim, int a1, int a2, int64_t offset);
void sc_cpu_trace_grad(const float *dy, float *dx, const int64_t *dims, int ndim, int a1, int a2, int64_t offset);
void sc_cpu_bias_add(const float *x, const float *bias, float *y, int64_t rows, int64_t c);
void sc_cpu_conv2d(const sc_window *g, const float *x, const float *w, float *y);
void sc_cpu_conv2d_grad(const sc_window *g, const float *x, const float *w, const float *dy, float *dx, float *dw);
void sc_cpu_pool(sc_pool_kind k, const sc_window *g, const float *x, float *y);
void sc_cpu_pool_grad(sc_pool_kind k, const sc_window *g, const float *x, const float *dy, float *dx);
void sc_cpu_prelu(const float *x, const float *w, float *y, int64_t outer, int64_t c, int64_t inner, int64_t wn);
void sc_cpu_prelu_grad(const float *x, const float *w, const float *dy, float *dx, float *dw, int64_t outer, int64_t c,
                       int64_t inner, int64_t wn);

void sc_cpu_unary(sc_unop op, float p, const float *x, float *y, int64_t n);
/* t is what the op's gradient reads: x, y or NULL, as its SC_UNARY_TABLE row says */
void sc_cpu_unary_grad(sc_unop op, float p, const float *t, const float *dy, float *dx, int64_t n);
void sc_cpu_scale(const float *x, float *y, int64_t n, double alpha);

void sc_cpu_softmax(const float *x, float *y, const int64_t *dims, int ndim, int axis, int is_log);
void sc_cpu_bias_unary(sc_unop op, float p, const float *x, const float *bias, float *pre, float *y, int64_t rows,
                       int64_t c);
void sc_cpu_bias_add_residual(const float *x, const float *bias, float *pre, const float *r, float *y, int64_t rows,
                              int64_t c);
void sc_cpu_ew_chain(const sc_ew_step *steps, int nsteps, const sc_ew_operand *ins, int nin, int64_t rows,
                     int64_t cols);
void sc_cpu_softmax_scaled(const float *x, const float *scale, float *y, const int64_t *dims, int ndim, int axis);
void sc_cpu_softmax_masked(const float *x, const float *scale, const float *mask, const int64_t *mask_dims,
                           int mask_ndim, float *y, const int64_t *dims, int ndim);
void sc_cpu_softmax_grad(const float *y, const float *dy, float *dx, const int64_t *dims, int ndim, int axis,
                         int is_log);

typedef enum { SC_R_SUM, SC_R_MEAN, SC_R_MAX, SC_R_MIN, SC_R_PROD } sc_reduce_kind;
void sc_cpu_reduce(sc_reduce_kind kind, const float *x, float *y, const int64_t *dims, int ndim, const int *axes,
                   int naxes);
/* ReduceAll (any 0) and ReduceAny (any 1) of bytes, y 1 or 0 */
void sc_cpu_reduce_bool(int any, const uint8_t *x, uint8_t *y, const int64_t *dims, int ndim, const int *axes,
                        int naxes);
/* CumSum (prod 0) and CumProd (prod 1) and their gradient; a split axis's
 * piece with the slices' totals (shardc_rt.h, sc_cumsum_part) */
void sc_cpu_cumsum(int prod, const float *x, float *y, int64_t outer, int64_t n, int64_t inner, int exclusive,
                   int reverse);
void sc_cpu_cumsum_grad(int prod, const float *x, const float *dy, float *dx, int64_t outer, int64_t n, int64_t inner,
                        int exclusive, int reverse);
void sc_cpu_cumsum_part(int prod, const float *x, const float *totals, float *y, int64_t offset, int64_t k,
                        int64_t outer, int64_t n, int64_t inner, int exclusive, int reverse);
void sc_cpu_cumsum_part_grad(int prod, const float *x, const float *totals, const float *dy, float *dx, float *dtotals,
                             int64_t offset, int64_t k, int64_t outer, int64_t n, int64_t inner, int exclusive,
                             int reverse);
/* ReduceProd's statistics and gradient (shardc_rt.h, sc_reduce_prod_grad) */
void sc_cpu_reduce_prod_stat(const float *x, int k, float *y, const int64_t *dims, int ndim, const int *axes,
                             int naxes);
void sc_cpu_reduce_prod_grad(const float *x, const float *dy, const float *prod, const float *zeros, float *dx,
                             const int64_t *dims, int ndim, const int *axes, int naxes);
void sc_cpu_count_equal(const float *x, const float *y, float *count, const int64_t *dims, int ndim, const int *axes,
                        int naxes);
/* ReduceMax's gradient and ReduceMin's: dy to the elements of x equal to y */
void sc_cpu_reduce_max_grad(const float *x, const float *y, const float *dy, const float *count, float *dx,
                            const int64_t *dims, int ndim, const int *axes, int naxes);
void sc_cpu_where_equal(const float *x, const float *y, const float *dy, float *dx, int64_t n);
void sc_cpu_select(const uint8_t *cond, const float *a, const float *b, float *y, int64_t n);
void sc_cpu_rotary(int64_t mode, int transpose, const float *x, const int64_t *dims, const float *cos,
                   const int64_t *cos_dims, const float *sin, const int64_t *sin_dims, float *y);
void sc_cpu_flash_attention(const float *q, const float *k, const float *v, const void *mask, int mask_float,
                            const int64_t *mask_dims, float *o, const int64_t *dims, float scale, int causal,
                            int layout);
void sc_cpu_flash_attention_grad(const float *q, const float *k, const float *v, const void *mask, int mask_float,
                                 const int64_t *mask_dims, const float *o, const float *dout, float *dq, float *dk,
                                 float *dv, const int64_t *dims, float scale, int causal, int layout);
void sc_cpu_arange(void *y, sc_dtype dt, int64_t n, int64_t first, double start, double step);
/* Dropout of a piece (sc_dropout), k its step's key */
/* DropoutGenMask's mask of a piece (sc_dropout_gen_mask), DropoutDoMask (sc_dropout_do_mask) */
void sc_cpu_dropout_gen_mask(uint8_t *m, const int64_t *gdims, int ndim, const int64_t *start, const int64_t *ldims,
                             uint64_t k, double keep_prob);
void sc_cpu_dropout_do_mask(const float *x, const uint8_t *m, float *y, int64_t n, double keep_prob);
/* UniformReal's values of a piece (sc_uniform_real): sc_cpu_dropout's draws under key k */
void sc_cpu_uniform_real(float *y, const int64_t *gdims, int ndim, const int64_t *start, const int64_t *ldims,
                         uint64_t k);
void sc_cpu_dropout(const float *x, float *y, const int64_t *gdims, int ndim, const int64_t *start,
                    const int64_t *ldims, uint64_t k, double keep_prob);
void sc_cpu_causal_mask(void *y, sc_dtype dt, int64_t lead, int64_t rows, int64_t cols, int64_t row0, int64_t col0,
                        double fill);
void sc_cpu_eye(void *y, sc_dtype dt, int64_t rows, int64_t cols, int64_t row0, int64_t col0);
void sc_cpu_lin_space(float *y, int64_t n, int64_t first, float start, float stop, int64_t num);
void sc_cpu_rope(float *y, int is_sin, int64_t lead, int64_t rows, int64_t cols, int64_t row0, int64_t col0,
                 int64_t d, double theta);

void sc_cpu_transpose(sc_dtype dt, const void *x, void *y, const int64_t *dims, int ndim, const int *perm);
/* sc_triangle: each row's kept columns copied, the rest zeroed */
void sc_cpu_triangle(int upper, const void *x, void *y, sc_dtype dt, int64_t lead, int64_t rows, int64_t cols,
                     int64_t row0, int64_t col0, int64_t diagonal);
void sc_cpu_one_hot(const void *idx, sc_dtype idx_dt, int64_t outer, int64_t depth, int64_t inner, int64_t offset,
                    float on, float off, float *y);
/* Picking along an axis (ArgMaxWithValue, Argmax, TopK; shardc_rt.h's sc_arg_reduce, sc_topk). */
void sc_cpu_arg_reduce(const float *x, int64_t outer, int64_t n, int64_t inner, int is_min, int32_t *idx, float *val);
void sc_cpu_arg_reduce_grad(const float *x, const float *dy, int64_t outer, int64_t n, int64_t inner, int is_min,
                            float *dx);
void sc_cpu_topk(const float *x, int64_t rows, int64_t n, int64_t k, float *val, int32_t *idx);
void sc_cpu_topk_grad(const float *x, const float *dy, int64_t rows, int64_t n, int64_t k, float *dx);
void sc_cpu_gather(const float *table, int64_t rows, int64_t row, const void *idx, sc_dtype idx_dt, int64_t nidx,
                   int64_t offset, float *y);
void sc_cpu_gather_grad(const float *dy, const void *idx, sc_dtype idx_dt, int64_t nidx, int64_t offset,
                        float *dtable, int64_t rows, int64_t row);
/* sc_embedding_lookup's and its gradient's: Gather's with ids of limit or more outside */
void sc_cpu_embedding_lookup(const float *table, int64_t rows, int64_t row, const void *idx, sc_dtype idx_dt,
                             int64_t nidx, int64_t offset, int64_t limit, float *y);
void sc_cpu_embedding_lookup_grad(const float *dy, const void *idx, sc_dtype idx_dt, int64_t nidx, int64_t offset,
                                  int64_t limit, float *dtable, int64_t rows, int64_t row);
/* sc_gather_axis's: the table (outer, rows, row); sc_cpu_gather is its outer = 1 */
void sc_cpu_gather_axis(const float *table, int64_t outer, int64_t rows, int64_t row, const void *idx, sc_dtype idx_dt,
                        int64_t nidx, int64_t offset, float *y);
void sc_cpu_gather_axis_grad(const float *dy, const void *idx, sc_dtype idx_dt, int64_t nidx, int64_t offset,
                             float *dtable, int64_t outer, int64_t rows, int64_t row);
/* sc_unsorted_segment's, its statistics and its gradient. The math both
 * backends expand: the largest finite value of dt (an empty segment's
 * maximum is its negation, its minimum itself), and dx of one element of
 * x (y its segment's result, dy its gradient, s0 and s1 the statistics:
 * Max/Min the ties; Prod the nonzero product and the zeros). */
#define SC_SEGMENT_BIG(dt) ((dt) == SC_F16 ? 65504.0f : (dt) == SC_BF16 ? 3.38953139e38f : 3.40282347e38f)
#define SC_SEGMENT_GRAD(op, x, y, dy, s0, s1)                                                                     \
	((op) == SC_SEG_SUM ? (dy)                                                                                    \
	 : (op) == SC_SEG_PROD                                                                                        \
	     ? ((x) != 0.0f ? ((s1) == 0.0f ? (float)((double)(dy) * (double)(s0) / (double)(x)) : 0.0f)             \
	                    : ((s1) == 1.0f ? (dy) * (s0) : 0.0f))                                                   \
	 : (x) == (y) ? (dy) / (s0) : 0.0f)
void sc_cpu_unsorted_segment(sc_segment_op op, const float *x, const void *ids, sc_dtype ids_dt, float *y,
                             int64_t rows, int64_t inner, int64_t segments, sc_dtype dt);
void sc_cpu_unsorted_segment_stat(sc_segment_op op, const float *x, const void *ids, sc_dtype ids_dt, const float *y,
                                  int k, float *stat, int64_t rows, int64_t inner, int64_t segments);
void sc_cpu_unsorted_segment_grad(sc_segment_op op, const float *x, const void *ids, sc_dtype ids_dt, const float *y,
                                  const float *dy, const float *stat0, const float *stat1, float *dx, int64_t rows,
                                  int64_t inner, int64_t segments);
/* sc_gather_nd's and sc_tensor_scatter's, and their gradients (indices checked by the caller) */
void sc_cpu_gather_nd(const float *x, const int64_t *dims, int n, int64_t inner, const void *idx, sc_dtype idx_dt,
                      int64_t m, float *y);
void sc_cpu_gather_nd_grad(const float *dy, const void *idx, sc_dtype idx_dt, int64_t m, float *dx,
                           const int64_t *dims, int n, int64_t inner);
void sc_cpu_tensor_scatter(sc_scatter_op op, const float *x, const void *idx, sc_dtype idx_dt, int64_t m,
                           const float *upd, float *y, const int64_t *start, const int64_t *ldims, int n,
                           int64_t inner);
void sc_cpu_tensor_scatter_grad(sc_scatter_op op, int k, const float *dy, const float *x, const float *upd,
                                const float *y, const void *idx, sc_dtype idx_dt, int64_t m, float *dx,
                                const int64_t *start, const int64_t *ldims, int n, int64_t inner);
/* sc_batch_norm's and its gradient's */
void sc_cpu_batch_norm(const float *x, const float *scale, const float *bias, float *moving_mean, float *moving_var,
                       const float *batch_mean, const float *batch_var, float *y, int64_t n, int64_t c, int64_t hw,
                       double eps, double momentum, int64_t count, int mode);
void sc_cpu_batch_norm_grad(const float *x, const float *dy, const float *scale, const float *mean, const float *var,
                            float *dx, float *dscale, float *dbias, float *dmean, float *dvar, int64_t n, int64_t c,
                            int64_t hw, double eps);
/* sc_gather_d's and sc_l2_normalize's, and their gradients */
void sc_cpu_gather_d(const float *x, const int64_t *xdims, const void *idx, sc_dtype idx_dt, const int64_t *idims,
                     int ndim, int dim, int64_t offset, float *y);
void sc_cpu_gather_d_grad(const float *dy, const void *idx, sc_dtype idx_dt, const int64_t *idims, float *dx,
                          const int64_t *xdims, int ndim, int dim, int64_t offset);
void sc_cpu_l2_normalize(const float *x, const float *sumsq, float *y, int64_t outer, int64_t n, int64_t inner,
                         double eps);
void sc_cpu_l2_normalize_grad(const float *x, const float *sumsq, const float *dy, float *dx, float *dsumsq,
                              int64_t outer, int64_t n, int64_t inner, double eps);
/* The normalizers take sc_norm_centered(kind) where sc_norm* take the kind
 * (SC_NORM_TABLE). beta may be NULL (none added); not centered, the _part
 * forms' mean is NULL and so must dmean be. */
void sc_cpu_norm(int centered, const float *x, const float *gamma, const float *beta, float *y, const int64_t *dims,
                 int ndim, int begin_norm_axis, int begin_params_axis, double eps);
void sc_cpu_norm_grad(int centered, const float *dy, const float *x, const float *gamma, float *dx, float *dgamma,
                      float *dbeta, const int64_t *dims, int ndim, int begin_norm_axis, int begin_params_axis,
                      double eps);
void sc_cpu_norm_part(int centered, const float *x, const float *gamma, const float *beta, const float *mean,
                      const float *var, float *y, int64_t rows, int64_t cols, double eps);
void sc_cpu_norm_part_grad(int centered, const float *dy, const float *x, const float *gamma, const float *mean,
                           const float *var, float *dx, float *dgamma, float *dbeta, float *dmean, float *dvar,
                           int64_t rows, int64_t cols, double eps);
void sc_cpu_concat(sc_dtype dt, const void *const *xs, const int64_t *axis_sizes, int nx, void *y,
                   const int64_t *y_dims, int ndim, int axis);
void sc_cpu_strided_slice(sc_dtype dt, const void *x, void *y, const int64_t *dims, int ndim, const int64_t *begin,
                          const int64_t *end, const int64_t *strides);
void sc_cpu_strided_slice_grad(const float *dy, float *dx, const int64_t *dims, int ndim, const int64_t *begin,
                               const int64_t *end, const int64_t *strides);
void sc_cpu_cast(const void *x, sc_dtype x_dt, void *y, sc_dtype y_dt, int64_t n);
void sc_cpu_round(float *x, sc_dtype dt, int64_t n);
/* sc_pad, ydims its result's (sc_pad_dims) */
void sc_cpu_pad(sc_dtype dt, const void *x, void *y, const int64_t *dims, const int64_t *ydims, int ndim,
                const int64_t *lo, double value);
/* sc_fill_pad on (outer, mid, inner): mid's elements from real on get value */
void sc_cpu_fill_pad(const void *x, void *y, sc_dtype dt, int64_t outer, int64_t mid, int64_t inner, int64_t real,
                     double value);

void sc_cpu_sparse_softmax_ce(const float *logits, const void *labels, sc_dtype label_dt, float *loss, int64_t n,
                              int64_t c);
void sc_cpu_sparse_softmax_ce_grad(const float *logits, const void *labels, sc_dtype label_dt, const float *dloss,
                                   float *dlogits, int64_t n, int64_t c);
void sc_cpu_sparse_softmax_ce_part(const float *logits, const void *labels, sc_dtype label_dt, const float *max,
                                   const float *sum, float *loss, int64_t n, int64_t c, int64_t offset);
void sc_cpu_sparse_softmax_ce_part_grad(const float *logits, const void *labels, sc_dtype label_dt,
                                        const float *max, const float *sum, const float *dloss, float *dlogits,
                                        int64_t n, int64_t c, int64_t offset, int64_t classes);
void sc_cpu_softmax_ce(const float *logits, const float *labels, float *loss, int64_t n, int64_t c);
void sc_cpu_softmax_ce_grad(const float *logits, const float *labels, const float *dloss, float *dlogits, int64_t n,
                            int64_t c);
void sc_cpu_softmax_ce_part(const float *logits, const float *labels, const float *max, const float *sum, float *loss,
                            int64_t n, int64_t c);
void sc_cpu_softmax_ce_part_grad(const float *logits, const float *labels, const float *max, const float *sum,
                                 const float *dloss, float *dlogits, int64_t n, int64_t c);
void sc_cpu_mse_loss(const float *pred, const float *target, float *loss, int64_t n);
void sc_cpu_l2_loss(const float *x, float *loss, int64_t n);
void sc_cpu_l2_loss_grad(const float *x, const float *dloss, float *dx, int64_t n);
void sc_cpu_kldiv_loss(const float *x, const float *y, float *out, int64_t n, int reduce, double scale);
void sc_cpu_kldiv_loss_grad(const float *y, const float *dout, float *dx, int64_t n, int reduce, double scale);
void sc_cpu_lerp(const float *start, const int64_t *s_dims, int s_ndim, const float *end, const int64_t *e_dims,
                 int e_ndim, const float *w, const int64_t *w_dims, int w_ndim, float *y, const int64_t *y_dims,
                 int y_ndim);
void sc_cpu_lerp_grad(int which, const float *start, const int64_t *s_dims, int s_ndim, const float *end,
                      const int64_t *e_dims, int e_ndim, const float *w, const int64_t *w_dims, int w_ndim,
                      const float *dy, const int64_t *y_dims, int y_ndim, float *dx);
void sc_cpu_masked_fill(const float *x, const int64_t *x_dims, int x_ndim, const uint8_t *mask, const int64_t *m_dims,
                        int m_ndim, const float *value, float *y, const int64_t *y_dims, int y_ndim);
void sc_cpu_masked_fill_grad(int which, const int64_t *x_dims, int x_ndim, const uint8_t *mask, const int64_t *m_dims,
                             int m_ndim, const float *dy, const int64_t *y_dims, int y_ndim, float *dx);
/* sc_resize and sc_resize_grad (ResizeNearestNeighbor, ResizeBilinearV2 on nc planes) */
void sc_cpu_resize(int bilinear, const float *x, float *y, int64_t nc, int64_t in_h, int64_t in_w, int64_t out_h,
                   int64_t out_w, int align_corners, int half_pixel_centers);
void sc_cpu_resize_grad(int bilinear, const float *dy, float *dx, int64_t nc, int64_t in_h, int64_t in_w,
                        int64_t out_h, int64_t out_w, int align_corners, int half_pixel_centers);
void sc_cpu_mse_loss_grad(const float *pred, const float *target, const float *dloss, float *dpred, int64_t n);
void sc_cpu_l1_loss(const float *pred, const float *target, float *loss, int64_t n);
void sc_cpu_l1_loss_grad(const float *pred, const float *target, const float *dloss, float *dpred, int64_t n);

void sc_cpu_binary_grad(sc_binop op, const float *a, const int64_t *a_dims, int a_ndim, const float *b,
                        const int64_t *b_dims, int b_ndim, const float *dy, const int64_t *y_dims, int y_ndim,
                        float *da, float *db);
void sc_cpu_sum_to_shape(const float *x, const int64_t *x_dims, int x_ndim, float *y, const int64_t *y_dims,
                         int y_ndim);
void sc_cpu_broadcast_to(const float *x, const int64_t *x_dims, int x_ndim, float *y, const int64_t *y_dims,
                         int y_ndim);
void sc_cpu_bias_add_grad(const float *dy, float *dbias, int64_t rows, int64_t c);

void sc_cpu_sgd(float *p, const float *g, float *accum, int64_t n, double lr, double momentum, double dampening,
                double weight_decay, int nesterov, int64_t step);
void sc_cpu_momentum(float *p, const float *g, float *v, int64_t n, double lr, double momentum, double weight_decay,
                     int nesterov);
void sc_cpu_adam(float *p, const float *g, float *m, float *v, int64_t n, double lr, double beta1, double beta2,
                 double eps, double weight_decay, int64_t step);
void sc_cpu_adam_weight_decay(float *p, const float *g, float *m, float *v, int64_t n, double lr, double beta1,
                              double beta2, double eps, double weight_decay);
void sc_cpu_lamb_norms(const float *p, const float *g, const float *m, const float *v, int64_t n, double beta1,
                       double beta2, double eps, double weight_decay, int64_t step, float *out);
void sc_cpu_lamb(float *p, const float *g, float *m, float *v, int64_t n, double lr, double beta1, double beta2,
                 double eps, double weight_decay, int64_t step, const float *norms);
void sc_cpu_sum_squares(const float *const *xs, const int64_t *ns, int nx, float *out);
void sc_cpu_clip_by_norm(const float *x, float *y, int64_t n, const float *sqnorm, double clip);

#endif
