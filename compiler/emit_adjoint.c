/* emit_adjoint.c: the runtime call of one adjoint (autodiff.c's GRAD_ADJOINT).
 *
 * Requires a Program (plan.c). The gradient of input o->k of forward
 * operator ops[o->of] (as it was before fusion: differentiated) from dy
 * (o->in[0]), by the adjoint's kind: a MatMul's as one more product, the
 * others by the runtime's *_grad kernels, a NormGrad's gradients in
 * one call, a BatchMatMulStrided's through strides (fuse.c). Scratch the
 * kernel needs starts at scratch_off. */
#include "emit_internal.h"
#include "kldiv_loss.h"
#include "resize.h"
#include "embedding_lookup.h"
#include "int_math.h"
#include "scatter_state.h"

#include <string.h>

/* A MatMul gradient as one more product: y = op(a) op(b) is (m, n) over k;
 * da = dy op(b)^T, or its transpose op(b) dy^T when transpose_a; db =
 * op(a)^T dy, or dy^T op(a) when transpose_b. The product of the other
 * operand and dy, in the order dy_first says, with its own dims and flags. */
typedef struct {
	bool dy_first;
	int64_t m, n, k;
	int ta, tb;
} MatmulGrad;

static void matmul_grad_form(const Attrs *fa, int input, int64_t m, int64_t n, int64_t k, MatmulGrad *g)
{
	if (input == 0 && !fa->transpose_a)
		*g = (MatmulGrad){true, m, k, n, 0, !fa->transpose_b};
	else if (input == 0)
		*g = (MatmulGrad){false, k, m, n, fa->transpose_b, 1};
	else if (!fa->transpose_b)
		*g = (MatmulGrad){false, k, n, m, !fa->transpose_a, 0};
	else
		*g = (MatmulGrad){true, n, k, m, 1, fa->transpose_a};
}

/* A segment reduction's statistic over this rank's rows (ops[o->of]'s
 * GRAD_TIE_COUNT, autodiff.c): Max/Min: how many rows equal the completed
 * result in[1] (ids in[2]); Prod: k 0 the nonzero product, k 1 the zeros
 * (ids in[1]). */
void emit_segment_stat(StrBuf *b, const Program *p, const LOp *o)
{
	const LOp *f = differentiated(p->l, o);
	bool prod = f->op == OP_UNSORTED_SEGMENT_PROD;
	StrBuf w = {0};
	sb_printf(&w, "%s, %d, %s", prod ? "NULL" : p->cname[o->in[1]], o->k, p->cname[o->result]);
	sb_puts(b, "sc_unsorted_segment_stat(rt, ");
	segment_args(b, p, f, o->in[0], o->in[prod ? 1 : 2], w.data);
	sb_puts(b, ");");
	sb_free(&w);
}

/* The gradient of input o->k of forward operator f, from dy. */
void emit_adjoint(StrBuf *b, const Program *p, const LOp *o, const Attrs *fa, int64_t scratch_off)
{
	const Lowered *l = p->l;
	const LOp *f = differentiated(l, o);
	int k = o->k;
	const char *dy = p->cname[o->in[0]], *dx = p->cname[o->result];
	const LValue *x = &l->values[f->in[0]], *y = &l->values[f->result], *dxv = &l->values[o->result];
	const char *x0 = p->cname[f->in[0]], *x1 = f->nin > 1 ? p->cname[f->in[1]] : NULL, *yn = p->cname[f->result];
	int64_t n = numel(dxv), m, nn, kk, axes[MAX_DIMS];
	/* A two-input operator's other operand (MatMul's); a normalizer's and
	 * Concat's inputs past the second have none. */
	const char *other_in = f->nin == 2 ? p->cname[f->in[1 - k]] : NULL;
	MatmulGrad mg;
	switch (o->op) {   /* f's kind, or the fused kind computing its gradient (fuse.c) */
	OP_CASES(UNARY_OPS) {   /* from the input, the output or dy alone, as its row says */
		GradReads r = op_info[f->op].grad;
		sb_printf(b, "sc_unary_grad(rt, %s, %.9g, %s, %s, %s, %lld);", op_kernel(f->op, fa),
		          op_kernel_param(f->op, fa, x->type.dtype), r == GR_X ? x0 : r == GR_Y ? yn : "NULL", dy, dx,
		          (long long)n);
		return;
	}
	case OP_MATMUL:
		emit_matmul_dims(f, l, &m, &nn, &kk);
		matmul_grad_form(fa, k, m, nn, kk, &mg);
		matmul_call(b, l, o, false);
		sb_printf(b, "%s, %s, ", mg.dy_first ? dy : other_in, mg.dy_first ? other_in : dy);
		matmul_out(b, l, o, dx);
		sb_printf(b, ", %lld, %lld, %lld, %d, %d);", (long long)mg.m, (long long)mg.n, (long long)mg.k, mg.ta, mg.tb);
		return;
	case OP_BATCH_MATMUL_STRIDED: {   /* reading or writing a folded Transpose's value, direct (fuse.c) */
		emit_matmul_dims(f, l, &m, &nn, &kk);
		matmul_grad_form(fa, k, m, nn, kk, &mg);
		int dy_v = o->in[0], other_v = f->in[1 - k];
		int v[3] = {mg.dy_first ? dy_v : other_v, mg.dy_first ? other_v : dy_v, o->result};
		strided_bmm_call(b, p, o, v, dx, y, mg.m, mg.n, mg.k, mg.ta, mg.tb);
		return;
	}
	case OP_BATCH_MATMUL: {
		emit_matmul_dims(f, l, &m, &nn, &kk);
		matmul_grad_form(fa, k, m, nn, kk, &mg);
		const LValue *in = &l->values[f->in[k]], *other = &l->values[f->in[1 - k]];
		int yb = y->type.rank - 2, ib = in->type.rank - 2, ob = other->type.rank - 2;
		bool direct = !bmm_grad_summed(l, o);
		StrBuf dst = {0};
		if (direct)
			sb_puts(&dst, dx);
		else   /* a broadcast input: its gradient is summed down to its shape */
			sb_printf(&dst, "(float *)(slab + %lld)", (long long)scratch_off);
		const char *p0 = mg.dy_first ? dy : other_in, *p1 = mg.dy_first ? other_in : dy;
		const LValue *v0 = mg.dy_first ? y : other, *v1 = mg.dy_first ? other : y;
		int64_t M = mg.m, N = mg.n, K = mg.k;
		int t0 = mg.ta, t1 = mg.tb;
		int n0 = v0 == y ? yb : ob, n1 = v1 == y ? yb : ob;
		matmul_call(b, l, o, true);
		sb_printf(b, "%s, ", p0);
		dims_lit(b, v0->type.dims, n0);
		sb_printf(b, ", %d, %s, ", n0, p1);
		dims_lit(b, v1->type.dims, n1);
		sb_printf(b, ", %d, ", n1);
		matmul_out(b, l, o, dst.data);
		sb_puts(b, ", ");
		dims_lit(b, y->type.dims, yb);
		sb_printf(b, ", %d, %lld, %lld, %lld, %d, %d);", yb, (long long)M, (long long)N, (long long)K, t0, t1);
		if (!direct) {
			int64_t full[MAX_DIMS];
			memcpy(full, y->type.dims, sizeof(int64_t) * (size_t)yb);
			full[yb] = in->type.dims[ib];
			full[yb + 1] = in->type.dims[ib + 1];
			sb_printf(b, "\n\t\tsc_sum_to_shape(rt, %s, ", dst.data);
			dims_lit(b, full, yb + 2);
			sb_printf(b, ", %d, ", yb + 2);
			tensor_arg(b, p, o->result);
			sb_puts(b, ");");
		}
		sb_free(&dst);
		return;
	}
	OP_CASES(BINARY_OPS)
		sb_printf(b, "sc_binary_grad(rt, %s, ", op_info[f->op].kernel);
		tensor_arg(b, p, f->in[0]);
		sb_puts(b, ", ");
		tensor_arg(b, p, f->in[1]);
		sb_printf(b, ", %s, ", dy);
		dims_lit(b, y->type.dims, y->type.rank);
		sb_printf(b, ", %d, %s, %s);", y->type.rank, k == 0 ? dx : "NULL", k == 1 ? dx : "NULL");
		return;
	case OP_DROPOUT:   /* dy * mask / keep_prob: the same mask, drawn again from its key (nothing kept) */
		sb_printf(b, "sc_dropout(rt, %s, %s, ", dy, dx);
		dropout_args(b, p, f, fa->keep_prob);
		sb_puts(b, ");");
		return;
	case OP_DROPOUT_DO_MASK:   /* dy * mask / keep_prob, the forward's kernel on dy; the mask has none */
		sb_printf(b, "sc_dropout_do_mask(rt, %s, %s, %s, %lld, %.17g);", dy, x1, dx, (long long)n,
		          l->m->train ? fa->keep_prob : 1.0);
		return;
	case OP_PAD_FILL:   /* dy, its padding 0 */
		sb_printf(b, "sc_fill_pad(rt, %s, %s, %s, ", dy, dx, sc_dtype_name(dxv->type.dtype));
		pad_args(b, p, f->result, pad_axis(fa, dxv->type.rank));
		sb_puts(b, ", 0);");
		return;
	case OP_SELECT:   /* x's: cond ? dy : 0; y's: cond ? 0 : dy (the condition has none) */
		sb_printf(b, "sc_select(rt, %s, %s, %s, %s, %lld);", x0, k == 1 ? dy : "NULL", k == 2 ? dy : "NULL", dx,
		          (long long)n);
		return;
	case OP_FLASH_ATTENTION: case OP_FLASH_ATTENTION_GRAD: {
		/* FlashAttention-2's backward, the row statistics recomputed: this
		 * gradient, and those of the placeholders it computes too (fuse.c) */
		const char *g[3] = {"NULL", "NULL", "NULL"};
		g[k] = dx;
		int at[MAX_PARTS], nat = o->op == OP_FLASH_ATTENTION_GRAD ? fused_parts(l, (int)(o - l->ops), at) : 0;
		for (int j = 0; j < nat; j++)
			g[l->ops[at[j]].k] = p->cname[l->ops[at[j]].result];
		emit_flash_attention(b, p, f, fa, g, dy, NULL);
		return;
	}
	case OP_ROTARY: {
		/* dx = dy cos - rotate(dy sin): the rotation's transpose is its
		 * negation. dcos = dy x and dsin = dy rotate(x), each summed down
		 * to its shape (straight into dx when it is x's). */
		if (k == 0) {
			emit_rotary(b, p, fa->mode, 1, o->in[0], f->in[1], f->in[2], dx);
			return;
		}
		bool direct = numel(dxv) == numel(y);
		char tmp[64];
		snprintf(tmp, sizeof tmp, "(float *)(slab + %lld)", (long long)scratch_off);
		emit_rotary(b, p, fa->mode, 0, f->in[0], k == 1 ? o->in[0] : -1, k == 2 ? o->in[0] : -1, direct ? dx : tmp);
		if (!direct) {
			sb_printf(b, "\n\t\tsc_sum_to_shape(rt, %s, ", tmp);
			dims_lit(b, y->type.dims, y->type.rank);
			sb_printf(b, ", %d, ", y->type.rank);
			tensor_arg(b, p, o->result);
			sb_puts(b, ");");
		}
		return;
	}
	case OP_BIAS_ADD: {
		int64_t c = x->type.rank ? x->type.dims[x->type.rank - 1] : 1;
		if (k == 0)
			sb_printf(b, "sc_copy(rt, %s, %s, %lld);", dx, dy, (long long)arg_bytes(p, o->result));
		else
			sb_printf(b, "sc_bias_add_grad(rt, %s, %s, %lld, %lld);", dy, dx, (long long)(numel(x) / c), (long long)c);
		return;
	}
	case OP_CONV2D:   /* x's (col2im of w^T dy) or w's (dy im2col^T over the rank's images) */
		sb_puts(b, "sc_conv2d_grad(rt, ");
		window_arg(b, p, f->op, fa, x, f->result);
		sb_printf(b, ", %s, %s, %s, %s, %s);", x0, x1, dy, k == 0 ? dx : "NULL", k == 1 ? dx : "NULL");
		return;
	case OP_CONV2D_TRANSPOSE:   /* dout's: Conv2D(dy, w); w's: Conv2D's dw with x = dy and dy = dout */
		sb_puts(b, k == 0 ? "sc_conv2d(rt, " : "sc_conv2d_grad(rt, ");
		window_arg(b, p, f->op, fa, x, f->result);
		if (k == 0)
			sb_printf(b, ", %s, %s, %s);", dy, x1, dx);
		else
			sb_printf(b, ", %s, NULL, %s, NULL, %s);", dy, x0, dx);
		return;
	case OP_MAX_POOL: case OP_AVG_POOL:   /* dy to each window's first maximum, or spread over its elements */
		sb_printf(b, "sc_pool_grad(rt, %s, ", f->op == OP_MAX_POOL ? "SC_POOL_MAX" : "SC_POOL_AVG");
		window_arg(b, p, f->op, fa, x, f->result);
		sb_printf(b, ", %s, %s, %s);", f->op == OP_MAX_POOL ? x0 : "NULL", dy, dx);
		return;
	case OP_PRELU: {   /* x's: x <= 0 ? w dy : dy; w's: x dy where x < 0, summed over its channel's elements */
		int64_t outer, c, inner;
		prelu_dims(x, &outer, &c, &inner);
		sb_printf(b, "sc_prelu_grad(rt, %s, %s, %s, %s, %s, %lld, %lld, %lld, %lld);", x0, x1, dy, k == 0 ? dx : "NULL",
		          k == 1 ? dx : "NULL", (long long)outer, (long long)c, (long long)inner,
		          (long long)numel(&l->values[f->in[1]]));
		return;
	}
	case OP_BROADCAST_TO:   /* dy summed over the dims x was broadcast along */
		sb_puts(b, "sc_sum_to_shape(rt, ");
		tensor_arg(b, p, o->in[0]);
		sb_puts(b, ", ");
		tensor_arg(b, p, o->result);
		sb_puts(b, ");");
		return;
	case OP_TILE: {   /* dy summed over the repeats: the forward's view read back */
		int64_t xd[MAX_DIMS], yd[MAX_DIMS];
		int r = tile_view(&x->type, &y->type, xd, yd);
		sb_printf(b, "sc_sum_to_shape(rt, %s, ", dy);
		dims_lit(b, yd, r);
		sb_printf(b, ", %d, %s, ", r, dx);
		dims_lit(b, xd, r);
		sb_printf(b, ", %d);", r);
		return;
	}
	case OP_SOFTMAX: case OP_LOG_SOFTMAX:
		sb_printf(b, "sc_%s_grad(rt, %s, %s, %s, ", f->op == OP_SOFTMAX ? "softmax" : "log_softmax", yn, dy, dx);
		dims_lit(b, y->type.dims, y->type.rank);
		sb_printf(b, ", %d, %lld);", y->type.rank, (long long)(fa->has_axis && fa->naxes ? fa->axes[0] : -1));
		return;
	case OP_REDUCE_SUM: case OP_REDUCE_MEAN: {
		int na = reduce_axes(fa, x->type.rank, axes);
		int64_t kept[MAX_DIMS], count = 1;
		memcpy(kept, x->type.dims, sizeof kept);
		for (int j = 0; j < na; j++) {
			count *= kept[axes[j]];
			kept[axes[j]] = 1;
		}
		sb_printf(b, "sc_broadcast_to(rt, %s, ", dy);
		dims_lit(b, kept, x->type.rank);
		sb_printf(b, ", %d, ", x->type.rank);
		tensor_arg(b, p, o->result);
		sb_puts(b, ");");
		double scale;
		if (f->op == OP_REDUCE_MEAN && uneven_mean(x, axes, na, &scale))   /* the whole's count, not the piece's */
			sb_printf(b, "\n\t\tsc_scale(rt, %s, %s, %lld, %.17g);", dx, dx, (long long)n, scale);
		else if (f->op == OP_REDUCE_MEAN)
			sb_printf(b, "\n\t\tsc_scale(rt, %s, %s, %lld, 1.0 / %lld);", dx, dx, (long long)n, (long long)count);
		return;
	}
	case OP_REDUCE_MAX: case OP_REDUCE_MIN: {   /* in[1]: the ties over every rank, when the reduced dims are split */
		int na = reduce_axes(fa, x->type.rank, axes);
		sb_printf(b, "sc_reduce_%s_grad(rt, %s, %s, %s, %s, %s, ", f->op == OP_REDUCE_MIN ? "min" : "max", x0, yn, dy,
		          o->nin > 1 ? p->cname[o->in[1]] : "NULL", dx);
		dims_lit(b, x->type.dims, x->type.rank);
		sb_printf(b, ", %d, ", x->type.rank);
		ints_lit(b, axes, na);
		sb_printf(b, ", %d);", na);
		return;
	}
	case OP_REDUCE_PROD: {   /* dy times the product of the others; in[1], in[2]: the stats over every rank, when split */
		int na = reduce_axes(fa, x->type.rank, axes);
		sb_printf(b, "sc_reduce_prod_grad(rt, %s, %s, %s, %s, %s, ", x0, dy, o->nin > 2 ? p->cname[o->in[1]] : "NULL",
		          o->nin > 2 ? p->cname[o->in[2]] : "NULL", dx);
		dims_lit(b, x->type.dims, x->type.rank);
		sb_printf(b, ", %d, ", x->type.rank);
		ints_lit(b, axes, na);
		sb_printf(b, ", %d);", na);
		return;
	}
	case OP_CUMSUM: case OP_CUMPROD:   /* the scan of dy the other way; CumProd's exact at zeros */
		if (f->nin == 2) {   /* a split axis's piece: x's gradient, or this rank's term of the totals' */
			char off[32];
			offset_arg(off, sizeof off, p, f, fa);
			bool prod = f->op == OP_CUMPROD;   /* CumSum's reads neither x nor the totals (GR_NONE) */
			sb_printf(b, "sc_cumsum_part_grad(rt, %d, %s, %s, %s, %s, %s, %s, %lld, ", prod, prod ? x0 : "NULL",
			          prod ? x1 : "NULL", dy, k == 0 ? dx : "NULL", k == 1 ? dx : "NULL", off,
			          (long long)scan_slices(&l->values[f->in[1]], fa));
		} else
			sb_printf(b, "sc_cumsum_grad(rt, %d, %s, %s, %s, ", f->op == OP_CUMPROD, f->op == OP_CUMPROD ? x0 : "NULL",
			          dy, dx);
		scan_args(b, x, fa);
		return;
	case OP_PAD_V3:   /* MindSpore's bprop: dy's box where x went (StridedSlice's slice); none to the constant */
		sb_printf(b, "sc_strided_slice(rt, %s, %s, %s, ", sc_dtype_name(dxv->type.dtype), dy, dx);
		pad_v3_args(b, p, f, fa, true);
		sb_puts(b, ");");
		return;
	case OP_RESIZE_NEAREST: case OP_RESIZE_BILINEAR:   /* MindSpore's Resize*Grad: dy added back onto x's grid */
		sb_puts(b, "sc_resize_grad(rt, ");
		resize_args(b, p, f, dy, dx);
		sb_puts(b, ");");
		return;
	case OP_REVERSE_V2: case OP_TRACE_V2:   /* MindSpore's bprops: dy reversed alike; dy on the diagonal of zeros */
		sb_printf(b, "sc_%s(rt, %s, %s, ", f->op == OP_REVERSE_V2 ? "reverse" : "trace_grad", dy, dx);
		int_math_args(b, f->op, &x->type, fa);
		return;
	case OP_TRIL: case OP_TRIU:   /* MindSpore's bprop: the same triangle of dy */
		sb_printf(b, "sc_triangle(rt, %d, %s, %s, %s, ", f->op == OP_TRIU, dy, dx, sc_dtype_name(dxv->type.dtype));
		triangle_args(b, p, f);
		sb_puts(b, ");");
		return;
	case OP_TRANSPOSE: {
		int64_t inv[MAX_DIMS];
		for (int d = 0; d < fa->nperm; d++)
			inv[fa->perm[d]] = d;
		sb_printf(b, "sc_transpose(rt, %s, %s, %s, ", sc_dtype_name(dxv->type.dtype), dy, dx);
		dims_lit(b, y->type.dims, y->type.rank);
		sb_printf(b, ", %d, ", y->type.rank);
		ints_lit(b, inv, fa->nperm);
		sb_puts(b, ");");
		return;
	}
	case OP_ARGMAX_WITH_VALUE: case OP_ARGMIN_WITH_VALUE: case OP_TOPK: {   /* the values': dy at the picks */
		int64_t outer, len, inner;
		int is_min = arg_view(f->op, fa, &x->type, &outer, &len, &inner);
		if (f->op == OP_TOPK)
			sb_printf(b, "sc_topk_grad(rt, %s, %s, %lld, %lld, %lld, %s);", x0, dy, (long long)outer, (long long)len,
			          (long long)fa->topk, dx);
		else
			sb_printf(b, "sc_arg_reduce_grad(rt, %s, %s, %lld, %lld, %lld, %d, %s);", x0, dy, (long long)outer,
			          (long long)len, (long long)inner, is_min, dx);
		return;
	}
	case OP_GATHER: {   /* dy scattered-added back along the axis: sc_gather_grad along the first dim */
		const LValue *idx = &l->values[f->in[1]];
		int64_t outer, rows, row;
		gather_dims(x, fa, &outer, &rows, &row);
		char off[32];
		offset_arg(off, sizeof off, p, f, fa);
		sb_printf(b, "sc_gather%s_grad(rt, %s, %s, %s, %lld, %s, %s, ", outer == 1 ? "" : "_axis", dy, x1,
		          sc_dtype_name(idx->type.dtype), (long long)numel(idx), off, dx);
		if (outer != 1)
			sb_printf(b, "%lld, ", (long long)outer);
		sb_printf(b, "%lld, %lld);", (long long)rows, (long long)row);
		return;
	}
	case OP_EMBEDDING_LOOKUP: {   /* dy added into the rows read: sc_embedding_lookup_grad */
		const LValue *idx = &l->values[f->in[1]];
		int64_t outer, rows, row;
		gather_dims(x, fa, &outer, &rows, &row);
		char off[32];
		offset_arg(off, sizeof off, p, f, fa);
		sb_printf(b, "sc_embedding_lookup_grad(rt, %s, %s, %s, %lld, %s, %lld, %s, %lld, %lld);", dy, x1,
		          sc_dtype_name(idx->type.dtype), (long long)numel(idx), off, (long long)embedding_lookup_limit(l, f),
		          dx, (long long)rows, (long long)row);
		return;
	}
	case OP_GATHER_D: {   /* dy added into zeros of x's shape (its slice: offset) at the index along dim */
		char off[32];
		offset_arg(off, sizeof off, p, f, fa);
		sb_printf(b, "sc_gather_d_grad(rt, %s, %s, %s, ", dy, x1, sc_dtype_name(l->values[f->in[1]].type.dtype));
		dims_lit(b, l->values[f->in[1]].type.dims, x->type.rank);
		sb_printf(b, ", %s, ", dx);
		dims_lit(b, x->type.dims, x->type.rank);
		sb_printf(b, ", %d, %d, %s);", x->type.rank, (int)norm_axis(fa->dim, x->type.rank), off);
		return;
	}
	case OP_GATHER_ND:   /* dy added into zeros of x's shape at the slices it was read from (MindSpore's ScatterNd) */
		sb_printf(b, "sc_gather_nd_grad(rt, %s, ", dy);
		nd_index_args(b, p, f->in[0], f->in[1]);
		sb_printf(b, ", %s, ", dx);
		nd_shape_args(b, l, f->in[0], f->in[1]);
		sb_puts(b, ");");
		return;
	OP_CASES(TENSOR_SCATTER_OPS) {   /* MindSpore's bprops: Mul's and Div's read x and updates, Max's and Min's y */
		GradReads r = op_info[f->op].grad;
		bool reads_x = f->op != OP_TENSOR_SCATTER_UPDATE && f->op != OP_TENSOR_SCATTER_ADD &&
		               f->op != OP_TENSOR_SCATTER_SUB;
		sb_printf(b, "sc_tensor_scatter_grad(rt, %s, %d, %s, %s, %s, %s, ", scatter_kernel(f->op), k, dy,
		          reads_x ? x0 : "NULL", reads_x ? p->cname[f->in[2]] : "NULL", r == GR_XY ? yn : "NULL");
		nd_index_args(b, p, f->in[0], f->in[1]);
		sb_printf(b, ", %s, ", dx);
		scatter_shape_args(b, p, f, false);
		sb_puts(b, ");");
		return;
	}
	OP_CASES(STATE_OPS)   /* MindSpore's bprops: updates' dy's slices (Sub's negated), value's dy summed; x is state */
		if (k == 0 || (k == 2 && (f->op == OP_SCATTER_MUL || f->op == OP_SCATTER_DIV)))
			die("%s's operand %d has no gradient", op_info[f->op].name, k);
		if (state_scatter_kind(f->op) == OP_COUNT) {
			sb_printf(b, "sc_binary_grad(rt, %s, ", op_info[f->op == OP_ASSIGN_ADD ? OP_ADD : OP_SUB].kernel);
			tensor_arg(b, p, f->in[0]);
			sb_puts(b, ", ");
			tensor_arg(b, p, f->in[1]);
			sb_printf(b, ", %s, ", dy);
			dims_lit(b, y->type.dims, y->type.rank);
			sb_printf(b, ", %d, NULL, %s);", y->type.rank, dx);
			return;
		}
		sb_printf(b, "sc_tensor_scatter_grad(rt, %s, 2, %s, NULL, NULL, NULL, ",
		          f->op == OP_SCATTER_SUB || f->op == OP_SCATTER_ND_SUB ? "SC_SCATTER_SUB" : "SC_SCATTER_ADD", dy);
		state_index_args(b, p, f);
		sb_printf(b, ", %s, ", dx);
		state_shape_args(b, p, f, false);
		sb_puts(b, ");");
		return;
	OP_CASES(INPLACE_OPS)   /* MindSpore's bprops return zeros: no operand has a gradient */
		die("%s has no gradient", op_info[f->op].name);
	OP_CASES(SEGMENT_OPS) {   /* dy gathered back by the ids: Max/Min to the ties, Prod times the other factors */
		StrBuf w = {0};   /* in[1] (and in[2], Prod's): the statistics over every rank, when the ids are split */
		sb_printf(&w, "%s, %s, %s, %s, %s", op_info[f->op].grad == GR_XY ? yn : "NULL", dy,
		          o->nin > 1 ? p->cname[o->in[1]] : "NULL", o->nin > 2 ? p->cname[o->in[2]] : "NULL", dx);
		sb_puts(b, "sc_unsorted_segment_grad(rt, ");
		segment_args(b, p, f, f->op != OP_UNSORTED_SEGMENT_SUM ? f->in[0] : -1, f->in[1], w.data);
		sb_puts(b, ");");
		sb_free(&w);
		return;
	}
	case OP_L2_NORMALIZE: {   /* x's gradient; a slice's piece's: x's direct one (k 0), the sums of squares' (k 1) */
		int64_t d3[3];
		l2_normalize_dims(x, fa, d3);
		sb_printf(b, "sc_l2_normalize_grad(rt, %s, %s, %s, %s, %s, %lld, %lld, %lld, %.17g);", x0,
		          f->nin > 1 ? x1 : "NULL", dy, k == 0 ? dx : "NULL", k == 1 ? dx : "NULL", (long long)d3[0],
		          (long long)d3[1], (long long)d3[2], fa->epsilon);
		return;
	}
	case OP_BATCH_NORM: {   /* input k's gradient: x, scale, bias; a slice's piece's batch mean (5), variance (6) */
		int64_t d3[3], count;
		batch_norm_dims(x, d3, &count);
		const char *g[7] = {"NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL"}, *st = "NULL", *sv = "NULL";
		g[k] = dx;
		if (f->nin > 5 || !fa->is_training)   /* the statistics fixed: the batch's given, or the moving ones */
			st = p->cname[f->in[f->nin > 5 ? 5 : 3]], sv = p->cname[f->in[f->nin > 5 ? 6 : 4]];
		sb_printf(b, "sc_batch_norm_grad(rt, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %lld, %lld, %lld, %.17g);", x0, dy,
		          x1, st, sv, g[0], g[1], g[2], g[5], g[6], (long long)d3[0], (long long)d3[1], (long long)d3[2],
		          fa->epsilon);
		return;
	}
	OP_CASES(NORM_OPS) case OP_NORM_GRAD: {
		/* this gradient, and those of the placeholders a NormGrad computes too
		 * (fuse.c); g[k] is input k's: x, gamma, [beta,] and a slice's piece's
		 * [mean,] variance */
		const char *g[5] = {"NULL", "NULL", "NULL", "NULL", "NULL"};
		g[k] = dx;
		int at[MAX_PARTS], nat = fused_parts(l, (int)(o - l->ops), at);
		for (int j = 0; j < nat; j++)
			g[l->ops[at[j]].k] = p->cname[l->ops[at[j]].result];
		int nparams = op_info[f->op].min_inputs - 1;   /* gamma, beta */
		const char *beta = nparams == 2 ? g[2] : "NULL";
		int64_t bn, bp;
		norm_begin(f->op, fa, x->type.rank, l->values[f->in[1]].type.rank, &bn, &bp);
		if (f->nin > 1 + nparams) {   /* a slice of the normalized dims (lower.c) */
			bool centered = norm_centered(f->op);
			int64_t rows = 1, nd = norm_axis(bn, x->type.rank);
			for (int d = 0; d < nd; d++)
				rows *= x->type.dims[d];
			sb_printf(b, "sc_norm_part_grad(rt, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %lld, %lld, %.17g);",
			          op_info[f->op].kernel, dy, x0, x1, centered ? p->cname[f->in[1 + nparams]] : "NULL",
			          p->cname[f->in[f->nin - 1]], g[0], g[1], beta, centered ? g[1 + nparams] : "NULL",
			          g[f->nin - 1], (long long)rows, (long long)(numel(x) / rows), fa->epsilon);
			return;
		}
		sb_printf(b, "sc_norm_grad(rt, %s, %s, %s, %s, %s, %s, %s, ", op_info[f->op].kernel, dy, x0, x1, g[0], g[1], beta);
		dims_lit(b, x->type.dims, x->type.rank);
		sb_printf(b, ", %d, %lld, %lld, %.17g);", x->type.rank, (long long)bn, (long long)bp, fa->epsilon);
		return;
	}
	case OP_ADD_N:   /* each operand's gradient is dy */
		sb_printf(b, "sc_copy(rt, %s, %s, %lld);", dx, dy, (long long)arg_bytes(p, o->result));
		return;
	case OP_CONCAT: case OP_STACK: {   /* its slice of dy; Stack's the k-th along the new dim */
		int axis = (int)norm_axis(fa->has_axis && fa->naxes ? fa->axes[0] : 0, y->type.rank);
		int64_t begin[MAX_DIMS] = {0}, end[MAX_DIMS], strides[MAX_DIMS];
		for (int d = 0; d < y->type.rank; d++)
			end[d] = y->type.dims[d], strides[d] = 1;
		for (int j = 0; j < k; j++)
			begin[axis] += f->op == OP_STACK ? 1 : l->values[f->in[j]].type.dims[axis];
		end[axis] = begin[axis] + (f->op == OP_STACK ? 1 : l->values[f->in[k]].type.dims[axis]);
		sb_printf(b, "sc_strided_slice(rt, %s, %s, %s, ", sc_dtype_name(dxv->type.dtype), dy, dx);
		dims_lit(b, y->type.dims, y->type.rank);
		sb_printf(b, ", %d, ", y->type.rank);
		dims_lit(b, begin, y->type.rank);
		sb_puts(b, ", ");
		dims_lit(b, end, y->type.rank);
		sb_puts(b, ", ");
		dims_lit(b, strides, y->type.rank);
		sb_puts(b, ");");
		return;
	}
	case OP_STRIDED_SLICE: case OP_SPLIT: case OP_SPLIT_V: case OP_SLICE:
		sb_printf(b, "sc_strided_slice_grad(rt, %s, %s, ", dy, dx);
		dims_lit(b, x->type.dims, x->type.rank);
		sb_printf(b, ", %d, ", x->type.rank);
		slice_args(b, p, f, fa, x);
		sb_puts(b, ");");
		return;
	case OP_SPARSE_SOFTMAX_CE:
		if (f->nin == 4) {
			char off[32];
			offset_arg(off, sizeof off, p, f, fa);
			sb_printf(b, "sc_sparse_softmax_ce_part_grad(rt, %s, %s, %s, %s, %s, %s, %s, %lld, %lld, %s, %lld);", x0,
			          x1, sc_dtype_name(l->values[f->in[1]].type.dtype), p->cname[f->in[2]], p->cname[f->in[3]], dy, dx,
			          (long long)x->type.dims[0], (long long)x->type.dims[1], off, (long long)x->global[1]);
		} else
			sb_printf(b, "sc_sparse_softmax_ce_grad(rt, %s, %s, %s, %s, %s, %lld, %lld);", x0, x1,
			          sc_dtype_name(l->values[f->in[1]].type.dtype), dy, dx, (long long)x->type.dims[0],
			          (long long)x->type.dims[1]);
		return;
	case OP_SOFTMAX_CE:   /* MindSpore's: (softmax - labels) dloss[n]; the labels' is none (ops.h) */
		if (f->nin == 4)
			sb_printf(b, "sc_softmax_ce_part_grad(rt, %s, %s, %s, %s, %s, %s, %lld, %lld);", x0, x1,
			          p->cname[f->in[2]], p->cname[f->in[3]], dy, dx, (long long)x->type.dims[0],
			          (long long)x->type.dims[1]);
		else
			sb_printf(b, "sc_softmax_ce_grad(rt, %s, %s, %s, %s, %lld, %lld);", x0, x1, dy, dx,
			          (long long)x->type.dims[0], (long long)x->type.dims[1]);
		return;
	case OP_KL_DIV_LOSS:   /* MindSpore's bprop (KLDivLossGrad): -y dy, dy scaled as the forward; y's none (ops.h) */
		sb_printf(b, "sc_kldiv_loss_grad(rt, %s, %s, %s, %lld, %d, %.17g);", x1, dy, dx, (long long)n,
		          fa->mode != KL_NONE, kldiv_loss_scale(fa->mode, x->global, x->type.rank));
		return;
	case OP_L2_LOSS:   /* MindSpore's bprop: x dy */
		sb_printf(b, "sc_l2_loss_grad(rt, %s, %s, %s, %lld);", x0, dy, dx, (long long)n);
		return;
	case OP_MASKED_FILL: {   /* MindSpore's bprop: x's dy where the mask is false, value's the sum where true */
		const LValue *mv = &l->values[f->in[1]];
		sb_printf(b, "sc_masked_fill_grad(rt, %d, ", k);
		dims_lit(b, x->type.dims, x->type.rank);
		sb_printf(b, ", %d, %s, ", x->type.rank, p->cname[f->in[1]]);
		dims_lit(b, mv->type.dims, mv->type.rank);
		sb_printf(b, ", %d, %s, ", mv->type.rank, dy);
		dims_lit(b, y->type.dims, y->type.rank);
		sb_printf(b, ", %d, %s);", y->type.rank, dx);
		return;
	}
	case OP_SQUARE_SUM_ALL:   /* MindSpore's bprop: 2 x dy for the operand its sum is of, zeros for the other */
		if (k == fa->output_index)
			sb_printf(b, "sc_l2_loss_grad(rt, %s, %s, %s, %lld);\n\t\tsc_scale(rt, %s, %s, %lld, 2.0);",
			          p->cname[f->in[k]], dy, dx, (long long)n, dx, dx, (long long)n);
		else
			sb_printf(b, "sc_fill(rt, %s, SC_F32, %lld, 0.0);", dx, (long long)n);
		return;
	case OP_LERP:   /* MindSpore's bprop, operand k's term summed over its broadcast dims */
		sb_printf(b, "sc_lerp_grad(rt, %d, ", k);
		for (int j = 0; j < 3; j++) {
			tensor_arg(b, p, f->in[j]);
			sb_puts(b, ", ");
		}
		sb_printf(b, "%s, ", dy);
		dims_lit(b, y->type.dims, y->type.rank);
		sb_printf(b, ", %d, %s);", y->type.rank, dx);
		return;
	case OP_MSE_LOSS: case OP_L1_LOSS: {
		double scale;
		sb_printf(b, "sc_%s_loss_grad(rt, %s, %s, %s, %s, %lld);", f->op == OP_MSE_LOSS ? "mse" : "l1", x0, x1, dy, dx,
		          (long long)n);
		if (loss_uneven_scale(x, &scale))   /* the whole's count, not the piece's */
			sb_printf(b, "\n\t\tsc_scale(rt, %s, %s, %lld, %.17g);", dx, dx, (long long)n, scale);
		if (k == 1)   /* the target's gradient is the prediction's, negated */
			sb_printf(b, "\n\t\tsc_unary(rt, SC_U_NEG, %s, %s, %lld);", dx, dx, (long long)n);
		return;
	}
	case OP_CAST:   /* back to the input's float type */
		sb_printf(b, "sc_cast(rt, %s, %s, %s, %s, %lld);", dy, sc_dtype_name(y->type.dtype), dx,
		          sc_dtype_name(dxv->type.dtype), (long long)n);
		return;
	case OP_RESHAPE: case OP_FLATTEN: case OP_EXPAND_DIMS: case OP_SQUEEZE: case OP_IDENTITY:   /* the identity */
	case OP_ALL_REDUCE: case OP_ALL_GATHER: case OP_REDUCE_SCATTER: case OP_ALL_TO_ALL:   /* one device */
		sb_printf(b, "sc_copy(rt, %s, %s, %lld);", dx, dy, (long long)arg_bytes(p, o->result));
		return;
	case OP_SOFTMAX_SCALED: case OP_SOFTMAX_MASKED: case OP_BIAS_UNARY: case OP_BIAS_ADD_RESIDUAL: case OP_EW_CHAIN:
	case OP_TRANSPOSE_FOLDED: case OP_FUSED:   /* forward kernels; a fold and a placeholder have no code */
	case OP_SEND_RECV:   /* its adjoint is a SendRecv back (autodiff.c) */
	case OP_STAGE_SUM:   /* of the norm, which has no gradient */
		die("%s is no adjoint's call", op_info[o->op].name);
	case OP_ARANGE: case OP_CAUSAL_MASK: case OP_ROPE_COS: case OP_ROPE_SIN: case OP_FILL_V2: case OP_EYE:
	case OP_LIN_SPACE:   /* no operands, no gradient */
	case OP_DROPOUT_GEN_MASK: case OP_UNIFORM_REAL:
		die("%s has no operand to differentiate", op_info[f->op].name);
	OP_CASES(COMPARE_OPS) OP_CASES(LOGICAL_OPS) case OP_IS_FINITE:   /* a Bool result: op_input_has_grad */
	OP_CASES(INT_MATH_OPS)   /* integers: op_input_has_grad */
	case OP_REDUCE_ALL: case OP_REDUCE_ANY:
	case OP_ONE_HOT:   /* its inputs all carry none */
	case OP_ARGMAX: case OP_ARGMIN:   /* Int32 results */
		die("%s has no gradient", op_info[f->op].name);
	case OP_CALL: case OP_DEPEND: case OP_COUNT:   /* inlined (Depend: its value) by flatten; rejected by check_names */
		die("no %s operator is left to differentiate", f->op == OP_CALL ? "Call" : "unknown");
	}
}
