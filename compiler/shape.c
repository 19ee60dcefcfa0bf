/* shape.c: shape and dtype inference for every operator (docs/operators.md).
 *
 * Requires check_names. Walks graphs in file order (callees come first), sets
 * each value's Type, and compares written signatures with what it inferred.
 * A value whose type could not be inferred gets rank -1 and its users are
 * skipped silently, so one mistake gives one message. Broadcasting is numpy's. */
#include "shape_internal.h"

#include <math.h>
#include <string.h>

static bool broadcast(Infer *x, const Type *a, const Type *b, Type *out, Span at)
{
	int r = a->rank > b->rank ? a->rank : b->rank;
	out->rank = r;
	for (int i = 0; i < r; i++) {
		int ia = i - (r - a->rank), ib = i - (r - b->rank);
		int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
		if (da != db && da != 1 && db != 1) {
			ERR(x, at, "%s: shapes %s and %s do not broadcast (dim %d: %lld vs %lld)", opname(x), DIMS(a), DIMS(b),
			    i, (long long)da, (long long)db);
			return false;
		}
		out->dims[i] = da == 1 ? db : da;
	}
	return true;
}

static bool infer_matmul(Infer *x, Type *out)
{
	const Type *a = in_type(x, 0), *b = in_type(x, 1);
	const Attrs *at = &x->n->a;
	bool batch = x->n->op == OP_BATCH_MATMUL;
	if (!same_dtype(x, 0, 1))
		return false;
	if (batch ? a->rank < 2 || b->rank < 2 : a->rank != 2 || b->rank != 2) {
		ERR(x, x->n->op_span, "%s needs %s operands, got %s and %s", opname(x),
		    batch ? "operands of rank 2 or more" : "two 2-D", DIMS(a), DIMS(b));
		return false;
	}
	int64_t m = a->dims[a->rank - 2], ka = a->dims[a->rank - 1];
	int64_t kb = b->dims[b->rank - 2], nn = b->dims[b->rank - 1];
	if (at->transpose_a) {
		int64_t t = m; m = ka; ka = t;
	}
	if (at->transpose_b) {
		int64_t t = kb; kb = nn; nn = t;
	}
	if (ka != kb) {
		ERR(x, x->n->op_span, "%s: inner dimensions differ: %s%s times %s%s (%lld vs %lld)", opname(x), DIMS(a),
		    at->transpose_a ? "^T" : "", DIMS(b), at->transpose_b ? "^T" : "", (long long)ka, (long long)kb);
		return false;
	}
	if (batch) {
		Type ba = *a, bb = *b;
		ba.rank -= 2;
		bb.rank -= 2;
		if (!broadcast(x, &ba, &bb, out, x->n->op_span))
			return false;
	} else
		out->rank = 0;
	out->dims[out->rank++] = m;
	out->dims[out->rank++] = nn;
	return true;
}

/* MindSpore's BroadcastTo: x broadcast to `shape` by numpy's rules, a -1
 * there keeping x's dim. */
static bool infer_broadcast_to(Infer *x, const Type *in, Type *out)
{
	const Attrs *a = &x->n->a;
	if (!need_float(x, 0) || !need_attr(x, ATTR_SHAPE))
		return false;
	StrBuf t = {0};
	ints_print(&t, a->shape, a->nshape);
	bool ok = a->nshape >= in->rank;
	for (int i = 0; ok && i < a->nshape; i++) {
		int j = i - (a->nshape - in->rank);   /* x's dim lined up from the right, or none */
		int64_t want = a->shape[i], have = j >= 0 ? in->dims[j] : 1;
		out->dims[i] = want == -1 ? have : want;
		ok = (want == -1 && j >= 0) || (want >= 1 && (have == 1 || have == want));
	}
	if (!ok)
		ERR(x, attr_span(x, "shape"), "BroadcastTo: %s does not broadcast to %s: each of x's dims, lined up from the "
		    "right, is 1 or the target's (-1 keeps x's dim there)", DIMS(in), t.data);
	sb_free(&t);
	out->rank = a->nshape;
	return ok;
}

static bool infer_reduce(Infer *x, const Type *in, Type *out)
{
	const Attrs *a = &x->n->a;
	bool reduced[MAX_DIMS] = {0};
	if ((x->n->op == OP_REDUCE_ALL || x->n->op == OP_REDUCE_ANY) && in->dtype != DT_BOOL) {
		ERR(x, in_span(x, 0), "%s reduces a Bool tensor (a comparison's result); '%%%s' is %s: compare it first, "
		    "e.g. NotEqual(%%%s, 0.0)", opname(x), x->g->values[x->n->in[0]].name, dtype_name(in->dtype),
		    x->g->values[x->n->in[0]].name);
		return false;
	}
	if (!a->has_axis || (a->axis_is_tuple && a->naxes == 0))
		for (int i = 0; i < in->rank; i++)
			reduced[i] = true;
	for (int i = 0; a->has_axis && i < a->naxes; i++) {
		int64_t ax;
		if (!infer_axis(x, a->axes[i], in->rank, &ax))
			return false;
		if (reduced[ax]) {
			ERR(x, x->n->attr_lit->span, "%s: axis %lld is named twice", opname(x), (long long)a->axes[i]);
			return false;
		}
		reduced[ax] = true;
	}
	out->rank = 0;
	for (int i = 0; i < in->rank; i++) {
		if (!reduced[i])
			out->dims[out->rank++] = in->dims[i];
		else if (a->keep_dims)
			out->dims[out->rank++] = 1;
	}
	return true;
}

/* A normalizer (ops.h's NORM_OPS): x, gamma and maybe beta covering x's dims
 * from where the parameters start; a slice's piece (lower.c) takes the rows'
 * statistics too. */
static bool infer_norm(Infer *x, const Type *in, Type *out)
{
	const Node *n = x->n;
	int params_n = op_info[n->op].min_inputs - 1;   /* gamma, beta */
	const Type *gamma = in_type(x, 1);
	int64_t norm, params;
	if (!need_float(x, 0))
		return false;
	if (!(op_info[n->op].attrs & (ATTR_BIT(ATTR_BEGIN_NORM_AXIS))) && (gamma->rank < 1 || gamma->rank > in->rank)) {
		StrBuf b = {0};
		ERR(x, in_span(x, 1), "%s: gamma %s covers x's last dims (1 to %d of them), got %s", opname(x),
		    in_name(x, 1, &b), in->rank, DIMS(gamma));
		sb_free(&b);
		return false;
	}
	norm_begin(n->op, &n->a, in->rank, gamma->rank, &norm, &params);
	if (!infer_axis(x, norm, in->rank, &norm) || !infer_axis(x, params, in->rank, &params))
		return false;
	for (int k = 1; k <= params_n; k++) {
		const Type *p = in_type(x, k);
		bool ok = p->rank == in->rank - params && p->dtype == in->dtype;
		for (int i = 0; ok && i < p->rank; i++)
			ok = p->dims[i] == in->dims[params + i];
		if (!ok) {
			Type want = {.dtype = in->dtype, .rank = in->rank - (int)params};
			memcpy(want.dims, in->dims + params, sizeof(int64_t) * (size_t)want.rank);
			char where[64];
			if (op_info[n->op].attrs & (ATTR_BIT(ATTR_BEGIN_PARAMS_AXIS)))
				snprintf(where, sizeof where, "x's dims from begin_params_axis %lld", (long long)params);
			else
				snprintf(where, sizeof where, "x's last %d dim%s", want.rank, want.rank == 1 ? "" : "s");
			ERR(x, in_span(x, k), "%s: %s must be %s %s (%s), got %s %s", opname(x), k == 1 ? "gamma" : "beta",
			    dtype_name(in->dtype), DIMS(&want), where, dtype_name(p->dtype), DIMS(p));
			return false;
		}
	}
	/* A slice of the normalized dims (lower.c): each row's completed
	 * statistics, x's dims with the normalized ones 1; gamma covers them. */
	for (int k = params_n + 1; k < n->nin; k++) {
		const Type *s = in_type(x, k);
		bool ok = n->nin == op_info[n->op].max_inputs && params == norm && s->rank == in->rank &&
		          s->dtype == in->dtype;
		for (int i = 0; ok && i < s->rank; i++)
			ok = s->dims[i] == (i < norm ? in->dims[i] : 1);
		if (!ok) {
			ERR(x, in_span(x, k), "%s: a normalized slice's piece takes each row's %s, x's dims with the normalized "
			    "ones 1, and gamma covering the normalized dims; got %s %s", opname(x),
			    norm_centered(n->op) ? "mean and variance" : "mean square", dtype_name(s->dtype), DIMS(s));
			return false;
		}
	}
	*out = *in;
	return true;
}

/* AddN (MindSpore's ops.AddN): the sum of its operands, all of one float
 * type and shape (no broadcasting, as MindSpore's). */
static bool infer_add_n(Infer *x, Type *out)
{
	const Type *a = in_type(x, 0);
	if (!need_float(x, 0))
		return false;
	for (int k = 1; k < x->n->nin; k++)
		if (!type_equal(in_type(x, k), a)) {
			const Type *b = in_type(x, k);
			ERR(x, in_span(x, k), "AddN: operand %d is %s %s, operand 0 %s %s; AddN adds operands of one type and "
			    "shape (no broadcasting: BroadcastTo or Add first)", k, dtype_name(b->dtype), DIMS(b),
			    dtype_name(a->dtype), DIMS(a));
			return false;
		}
	*out = *a;
	return true;
}

static bool infer_concat(Infer *x, Type *out)
{
	const Type *a = in_type(x, 0);
	int64_t axis;
	if (x->n->a.axis_is_tuple) {
		ERR(x, x->n->attr_lit->span, "Concat takes one axis");
		return false;
	}
	if (a->rank < 1) {
		ERR(x, in_span(x, 0), "Concat cannot join scalars; its operands need rank 1 or more");
		return false;
	}
	if (!infer_axis(x, x->n->a.has_axis ? x->n->a.axes[0] : 0, a->rank, &axis))
		return false;
	*out = *a;
	for (int k = 1; k < x->n->nin; k++) {
		const Type *b = in_type(x, k);
		bool ok = b->rank == a->rank && b->dtype == a->dtype;
		for (int i = 0; ok && i < a->rank; i++)
			ok = i == axis || b->dims[i] == a->dims[i];
		if (!ok) {
			ERR(x, in_span(x, k), "Concat: operand %d is %s %s, which does not match %s %s outside axis %lld", k,
			    dtype_name(b->dtype), DIMS(b), dtype_name(a->dtype), DIMS(a), (long long)axis);
			return false;
		}
		out->dims[axis] += b->dims[axis];
	}
	return true;
}

/* Select(cond, x, y): cond Bool, x and y of one element type, all three of
 * one shape (the split rule, R_ELEMWISE, cuts them alike; no broadcasting). */
static bool infer_select(Infer *x, Type *out)
{
	const Type *c = in_type(x, 0), *t = in_type(x, 1), *f = in_type(x, 2);
	if (c->dtype != DT_BOOL) {
		ERR(x, in_span(x, 0), "Select: the condition must be Bool, '%%%s' is %s", x->g->values[x->n->in[0]].name,
		    dtype_name(c->dtype));
		return false;
	}
	if (!same_dtype(x, 1, 2))
		return false;
	Type ct = *c, ft = *f;
	ct.dtype = ft.dtype = t->dtype;
	if (!type_equal(&ct, t) || !type_equal(&ft, t)) {
		ERR(x, x->n->op_span, "Select: the condition, x and y must have one shape (no broadcasting); they are %s, %s "
		    "and %s", DIMS(c), DIMS(t), DIMS(f));
		return false;
	}
	*out = *t;
	return true;
}

/* RotaryPositionEmbedding(x, cos, sin): x 4-D float with an even last dim
 * (BNSD, BSND or SBND alike), cos and sin of x's type and rank, each dim 1
 * or x's, the last x's (MindSpore's 11SD, B1SD, 1S1D ... layouts). */
static bool infer_rotary(Infer *x, Type *out)
{
	const Type *t = in_type(x, 0);
	if (!need_float(x, 0) || !same_dtype(x, 0, 1) || !same_dtype(x, 0, 2))
		return false;
	if (t->rank != 4 || t->dims[3] % 2) {
		ERR(x, in_span(x, 0), "RotaryPositionEmbedding: x must be 4-D (B, N, S, D) or (B, S, N, D) with D even; "
		    "it is %s", DIMS(t));
		return false;
	}
	for (int k = 1; k < 3; k++) {
		const Type *c = in_type(x, k);
		bool ok = c->rank == 4 && c->dims[3] == t->dims[3];
		for (int d = 0; ok && d < 3; d++)
			ok = c->dims[d] == 1 || c->dims[d] == t->dims[d];
		if (!ok) {
			const char *name = k == 1 ? "cos" : "sin";
			ERR(x, in_span(x, k), "RotaryPositionEmbedding: %s must be 4-D, each dim 1 or x's and the last x's, "
			    "as (1, 1, S, D) for x (B, N, S, D); x is %s, %s %s", name, DIMS(t), name, DIMS(c));
			return false;
		}
	}
	*out = *t;
	return true;
}

void flash_dims(const Attrs *a, const Type *q, const Type *k, int64_t dims[6])
{
	int64_t l = a->input_layout, d = l == FA_BSH ? (a->head_num > 0 ? q->dims[2] / a->head_num : 0) : q->dims[3];
	dims[0] = q->dims[0];
	dims[1] = l == FA_BNSD ? q->dims[1] : l == FA_BSND ? q->dims[2] : a->head_num;
	dims[2] = l == FA_BNSD ? q->dims[2] : q->dims[1];
	dims[3] = l == FA_BNSD ? k->dims[2] : k->dims[1];
	dims[4] = d;
	dims[5] = l == FA_BNSD ? k->dims[1] : l == FA_BSND ? k->dims[2] : d > 0 ? k->dims[2] / d : 0;
}

/* FlashAttentionScore(q, k, v[, attn_mask]): in BNSD q (B, N, S, D), k and v
 * (B, N_kv, S_kv, D); in BSND (B, S, N, D) and (B, S_kv, N_kv, D); in BSH
 * (B, S, N D) and (B, S_kv, N_kv D), N head_num. One float type, N_kv
 * dividing N, head_num N; attn_mask Bool or float (1 masks out), (S, S_kv)
 * or (B|1, N|1, S, S_kv); a causal sparse_mode wants S == S_kv. */
static bool infer_flash_attention(Infer *x, Type *out)
{
	const Attrs *a = &x->n->a;
	const Type *q = in_type(x, 0), *k = in_type(x, 1), *v = in_type(x, 2), *m = x->n->nin == 4 ? in_type(x, 3) : NULL;
	if (!need_attr(x, ATTR_HEAD_NUM) || !need_float(x, 0) || !same_dtype(x, 0, 1) || !same_dtype(x, 0, 2))
		return false;
	static const char *const layouts[3] = {"BNSD", "BSND", "BSH"}, *const shapes[3] = {
		"q (B, N, S, D) and k and v (B, N_kv, S_kv, D)", "q (B, S, N, D) and k and v (B, S_kv, N_kv, D)",
		"q (B, S, N x D) and k and v (B, S_kv, N_kv x D), N head_num",
	};
	int64_t l = a->input_layout, fd[6] = {0};
	bool ok = q->rank == (l == FA_BSH ? 3 : 4) && k->rank == q->rank && type_equal(k, v);
	if (ok)
		flash_dims(a, q, k, fd);
	ok = ok && k->dims[0] == q->dims[0] && fd[4] > 0 && fd[5] > 0 && fd[1] % fd[5] == 0 &&
	     (l == FA_BSH ? q->dims[2] % a->head_num == 0 && k->dims[2] % fd[4] == 0 : k->dims[3] == q->dims[3]);
	if (!ok) {
		ERR(x, x->n->op_span, "FlashAttentionScore with input_layout \"%s\" takes %s, k and v of one shape with "
		    "q's B and D, N_kv dividing N (N_kv < N: grouped-query attention); q is %s, k %s, v %s", layouts[l],
		    shapes[l], DIMS(q), DIMS(k), DIMS(v));
		return false;
	}
	if (l != FA_BSH && a->head_num != fd[1]) {
		ERR(x, attr_span(x, "head_num"), "FlashAttentionScore: head_num %lld is not q's number of heads, %lld (q %s "
		    "in %s)", (long long)a->head_num, (long long)fd[1], DIMS(q), l == FA_BNSD ? "BNSD" : "BSND");
		return false;
	}
	if (a->sparse_mode && fd[2] != fd[3]) {
		ERR(x, attr_span(x, "sparse_mode"), "FlashAttentionScore: causal sparse_mode %lld wants as many queries as "
		    "keys; S is %lld, S_kv %lld", (long long)a->sparse_mode, (long long)fd[2], (long long)fd[3]);
		return false;
	}
	ok = !m || ((m->rank == 2 || m->rank == 4) && (m->dtype == DT_BOOL || dtype_is_float(m->dtype)));
	for (int d = 0; ok && m && d < m->rank; d++) {
		int e = d + 4 - m->rank;   /* its dim of (B, N, S, S_kv) */
		ok = m->dims[d] == fd[e] || (e < 2 && m->dims[d] == 1);   /* fd[0..3]: B, N, S, S_kv */
	}
	if (!ok) {
		ERR(x, in_span(x, 3), "FlashAttentionScore: attn_mask must be Bool or float (1 masks a key out), (S, S_kv) = "
		    "(%lld, %lld) or (B or 1, N or 1, S, S_kv); it is %s %s", (long long)fd[2], (long long)fd[3],
		    dtype_name(m->dtype), DIMS(m));
		return false;
	}
	*out = *q;
	return true;
}

/* The cross-entropies' rows (N,): a class slice's piece (lower.c) takes
 * each row's completed maximum and sum too, (N, 1) of the logits' type. */
static bool infer_ce_piece(Infer *x, const Type *a, Type *out)
{
	const Node *n = x->n;
	for (int k = 2; k < n->nin; k++) {
		const Type *s = in_type(x, k);
		if (n->nin != 4 || s->rank != 2 || s->dims[0] != a->dims[0] || s->dims[1] != 1 || s->dtype != a->dtype) {
			ERR(x, n->op_span, "%s: a class slice's piece takes each row's maximum and sum, (N, 1) of the "
			    "logits' dtype; got %s %s", opname(x), dtype_name(s->dtype), DIMS(s));
			return false;
		}
	}
	out->rank = 1;
	out->dims[0] = a->dims[0];
	return need_float(x, 0);
}


static bool infer_comm(Infer *x, const Type *in, Type *out)
{
	const Attrs *a = &x->n->a;
	if (!need_attr(x, ATTR_GROUP))
		return false;
	int64_t n = a->ngroup;
	*out = *in;
	int64_t axis;
	if (x->n->op != OP_ALL_REDUCE && in->rank < 1) {
		ERR(x, in_span(x, 0), "%s needs a tensor of rank 1 or more", opname(x));
		return false;
	}
	if (a->axis_is_tuple) {
		ERR(x, x->n->attr_lit->span, "%s takes one axis", opname(x));
		return false;
	}
	switch (x->n->op) {
	case OP_ALL_REDUCE:
		return true;
	case OP_ALL_GATHER:
		if (!infer_axis(x, a->has_axis ? a->axes[0] : 0, in->rank, &axis))
			return false;
		out->dims[axis] *= n;
		return true;
	case OP_REDUCE_SCATTER:
		if (!infer_axis(x, a->has_axis ? a->axes[0] : 0, in->rank, &axis))
			return false;
		if (in->dims[axis] % n) {
			ERR(x, x->n->op_span, "ReduceScatter: dim %lld of %s is not divisible by the group size %lld",
			    (long long)axis, DIMS(in), (long long)n);
			return false;
		}
		out->dims[axis] /= n;
		return true;
	case OP_ALL_TO_ALL: {
		int64_t sa, ca;
		if (!need_attr(x, ATTR_SPLIT_AXIS) || !need_attr(x, ATTR_CONCAT_AXIS) ||
		    !infer_axis(x, a->split_axis, in->rank, &sa) || !infer_axis(x, a->concat_axis, in->rank, &ca))
			return false;
		if (in->dims[sa] % n) {
			ERR(x, x->n->op_span, "AllToAll: split dim %lld of %s is not divisible by the group size %lld",
			    (long long)sa, DIMS(in), (long long)n);
			return false;
		}
		out->dims[sa] /= n;
		out->dims[ca] *= n;
		return true;
	}
	OP_CASES(UNARY_OPS) OP_CASES(BINARY_OPS) OP_CASES(COMPARE_OPS) OP_CASES(LOGICAL_OPS) case OP_IS_FINITE:
	case OP_MATMUL: case OP_BATCH_MATMUL: case OP_BIAS_ADD: case OP_PRELU: case OP_SELECT: case OP_ROTARY: case OP_FLASH_ATTENTION: case OP_DROPOUT: case OP_SOFTMAX: case OP_PAD_FILL:
	case OP_LOG_SOFTMAX: case OP_REDUCE_SUM: case OP_REDUCE_MEAN: case OP_REDUCE_MAX: case OP_REDUCE_MIN: case OP_RESHAPE:
	case OP_REDUCE_PROD: case OP_REDUCE_ALL: case OP_REDUCE_ANY:
	case OP_TRANSPOSE: case OP_FLATTEN: case OP_EXPAND_DIMS: case OP_SQUEEZE: case OP_BROADCAST_TO: case OP_GATHER:
	case OP_EMBEDDING_LOOKUP:
	case OP_TILE: case OP_ONE_HOT: case OP_ARGMAX_WITH_VALUE: case OP_ARGMIN_WITH_VALUE: case OP_ARGMAX: case OP_ARGMIN:
	case OP_TOPK: OP_CASES(NORM_OPS) case OP_CONCAT: case OP_ADD_N: case OP_CAST: case OP_STRIDED_SLICE: case OP_CUMSUM:
	case OP_TRIL: case OP_TRIU: case OP_PAD_V3: case OP_RESIZE_NEAREST: case OP_RESIZE_BILINEAR: OP_CASES(INT_MATH_OPS) case OP_REVERSE_V2: case OP_TRACE_V2:
	case OP_CUMPROD: case OP_CONV2D: case OP_MAX_POOL: case OP_AVG_POOL: case OP_SPLIT: case OP_SPLIT_V: case OP_SLICE: case OP_ARANGE:
	case OP_CONV2D_TRANSPOSE:
	case OP_CAUSAL_MASK: case OP_ROPE_COS: case OP_ROPE_SIN: case OP_FILL_V2: case OP_GATHER_D: case OP_L2_NORMALIZE:
	case OP_EYE: case OP_LIN_SPACE: case OP_KL_DIV_LOSS:
	case OP_GATHER_ND: OP_CASES(TENSOR_SCATTER_OPS) OP_CASES(STATE_OPS) OP_CASES(INPLACE_OPS) case OP_BATCH_NORM:
	OP_CASES(SEGMENT_OPS)
	case OP_SPARSE_SOFTMAX_CE: case OP_SOFTMAX_CE: case OP_MSE_LOSS: case OP_L1_LOSS: case OP_CALL: case OP_COUNT:
	case OP_STACK: case OP_LERP: case OP_L2_LOSS: case OP_IDENTITY: case OP_DEPEND: case OP_SQUARE_SUM_ALL:
	case OP_MASKED_FILL: case OP_DROPOUT_DO_MASK: case OP_DROPOUT_GEN_MASK: case OP_UNIFORM_REAL:
	OP_CASES(PIPELINE_OPS) OP_CASES(FUSED_OPS)
		break;
	}
	die("%s is not a collective", opname(x));
}

static bool infer_call(Infer *x, Type *out)
{
	const Graph *callee = x->n->a.callee;
	if (!callee)
		return false;
	if (x->n->nin != callee->nparams) {
		ERR(x, x->n->op_span, "@%s takes %d input%s, %d given", callee->name, callee->nparams,
		    callee->nparams == 1 ? "" : "s", x->n->nin);
		return false;
	}
	for (int k = 0; k < x->n->nin; k++) {
		const Type *want = &callee->values[k].type, *got = in_type(x, k);
		if (want->rank >= 0 && !type_equal(want, got)) {
			StrBuf b = {0};
			ERR(x, in_span(x, k), "input %d of @%s is %s %s but %s is %s %s", k, callee->name,
			    dtype_name(want->dtype), DIMS(want), in_name(x, k, &b), dtype_name(got->dtype), DIMS(got));
			sb_free(&b);
			return false;
		}
	}
	if (callee->nret != 1) {
		ERR(x, x->n->op_span, "@%s returns %d values; Call takes a graph that returns one", callee->name,
		    callee->nret);
		return false;
	}
	if (callee->ret[0] < 0)
		return false;
	*out = callee->values[callee->ret[0]].type;
	out->is_param = false;
	return out->rank >= 0;
}

static bool infer_node(Infer *x, Type *out)
{
	Node *n = x->n;
	const Type *a = n->nin ? in_type(x, 0) : NULL;
	*out = (Type){.dtype = n->nin ? a->dtype : DT_F32};
	switch (n->op < OP_COUNT ? op_info[n->op].shape : SH_OWN) {
	case SH_SAME:
		*out = *a;
		return true;
	case SH_FLOAT:
		*out = *a;
		return need_float(x, 0);
	case SH_BROADCAST:
		if (n->op == OP_SIGMOID_CE && same_dtype(x, 0, 1) && !type_equal(a, in_type(x, 1))) {   /* MindSpore's */
			ERR(x, n->op_span, "SigmoidCrossEntropyWithLogits: logits %s and labels %s differ in shape; it takes "
			    "two of one shape (no broadcasting: BroadcastTo the labels first)", DIMS(a), DIMS(in_type(x, 1)));
			return false;
		}
		if (n->op == OP_NEXT_AFTER && same_dtype(x, 0, 1) && a->dtype != DT_F32) {   /* a half's next is not Float32's */
			ERR(x, n->op_span, "NextAfter on %s: it steps to the next Float32 (MindSpore's float32 and float64 "
			    "only); Cast the operands to Float32", dtype_name(a->dtype));
			return false;
		}
		return same_dtype(x, 0, 1) && broadcast(x, a, in_type(x, 1), out, n->op_span);
	case SH_COMPARE:
		out->dtype = DT_BOOL;
		if (n->op == OP_APPROXIMATE_EQUAL && same_dtype(x, 0, 1) && !type_equal(a, in_type(x, 1))) {   /* MindSpore's */
			ERR(x, n->op_span, "ApproximateEqual: x %s and y %s differ in shape; it takes two of one shape (no "
			    "broadcasting: BroadcastTo the smaller first)", DIMS(a), DIMS(in_type(x, 1)));
			return false;
		}
		return same_dtype(x, 0, 1) && broadcast(x, a, in_type(x, 1), out, n->op_span);
	case SH_LOGICAL:
		*out = *a;
		return need_bool(x, 0) && (n->nin == 1 || (need_bool(x, 1) && broadcast(x, a, in_type(x, 1), out, n->op_span)));
	case SH_MATMUL:
		return infer_matmul(x, out);
	case SH_REDUCE:
		return infer_reduce(x, a, out);
	case SH_OWN:
		break;
	}
	switch (n->op) {
	OP_CASES(UNARY_OPS) OP_CASES(BINARY_OPS) OP_CASES(COMPARE_OPS) OP_CASES(LOGICAL_OPS)
	case OP_MATMUL: case OP_BATCH_MATMUL: case OP_REDUCE_SUM: case OP_REDUCE_MEAN: case OP_REDUCE_MAX: case OP_REDUCE_MIN:
	case OP_REDUCE_PROD: case OP_REDUCE_ALL: case OP_REDUCE_ANY: case OP_DROPOUT: case OP_IDENTITY:
		die("%s has its shape class", opname(x));
	case OP_DEPEND:   /* its value (flatten.c drops it), whatever it waits for */
		*out = *a;
		return true;
	case OP_IS_FINITE:   /* a float's mask */
		*out = *a;
		out->dtype = DT_BOOL;
		return need_float(x, 0);
	case OP_BIAS_ADD:
		return infer_bias_add(x, a, out);
	case OP_PRELU:
		return infer_prelu(x, a, out);
	case OP_CONV2D:
		return infer_conv2d(x, a, out);
	case OP_CONV2D_TRANSPOSE:
		return infer_conv2d_transpose(x, a, out);
	case OP_MAX_POOL: case OP_AVG_POOL:
		return infer_pool(x, a, out);
	case OP_SELECT:
		return infer_select(x, out);
	case OP_PAD_FILL: {   /* x as it is; its one axis in range */
		int64_t axis = n->a.has_axis && n->a.naxes ? n->a.axes[0] : -1;
		if (n->a.axis_is_tuple && n->a.naxes != 1) {
			ERR(x, n->attr_lit->span, "PadFill takes one axis");
			return false;
		}
		if (a->rank < 1 || axis < -a->rank || axis >= a->rank) {
			ERR(x, n->attr_lit ? n->attr_lit->span : x->n->op_span, "PadFill: axis %lld is outside x's %d dims %s",
			    (long long)axis, a->rank, DIMS(a));
			return false;
		}
		*out = *a;
		return true;
	}
	case OP_ROTARY:
		return infer_rotary(x, out);
	case OP_FLASH_ATTENTION:
		return infer_flash_attention(x, out);
	case OP_SOFTMAX: case OP_LOG_SOFTMAX: {
		int64_t axis;
		if (n->a.axis_is_tuple && n->a.naxes != 1) {
			ERR(x, n->attr_lit->span, "%s takes one axis", opname(x));
			return false;
		}
		*out = *a;
		return need_float(x, 0) && infer_axis(x, n->a.has_axis ? n->a.axes[0] : -1, a->rank, &axis);
	}
	case OP_CUMSUM: case OP_CUMPROD:
		return infer_scan(x, a, out);
	case OP_RESHAPE:
		return infer_reshape(x, a, out);
	case OP_TRANSPOSE:
		return infer_transpose(x, a, out);
	case OP_FLATTEN:
		return infer_flatten(x, a, out);
	case OP_EXPAND_DIMS:
		return infer_expand_dims(x, a, out);
	case OP_SQUEEZE:
		return infer_squeeze(x, a, out);
	case OP_BROADCAST_TO:
		return infer_broadcast_to(x, a, out);
	case OP_TILE:
		return infer_tile(x, a, out);
	case OP_ONE_HOT:
		return infer_one_hot(x, a, out);
	case OP_ARGMAX_WITH_VALUE: case OP_ARGMIN_WITH_VALUE: case OP_ARGMAX: case OP_ARGMIN:
		return infer_arg_reduce(x, a, out);
	case OP_TOPK:
		return infer_topk(x, a, out);
	case OP_TRIL: case OP_TRIU:
		return infer_triangle(x, a, out);
	case OP_GATHER: {
		/* MindSpore's Gather(params, indices, axis): params.shape[:axis] + indices.shape + params.shape[axis+1:] */
		const Type *idx = in_type(x, 1);
		if (idx->dtype != DT_I32 && idx->dtype != DT_I64) {
			StrBuf b = {0};
			ERR(x, in_span(x, 1), "Gather: the indices must be Int32 or Int64, %s is %s", in_name(x, 1, &b),
			    dtype_name(idx->dtype));
			sb_free(&b);
			return false;
		}
		int64_t axis = n->a.has_axis && n->a.naxes ? n->a.axes[0] : 0;
		if (n->a.axis_is_tuple || a->rank == 0 || axis < -a->rank || axis >= a->rank) {
			StrBuf b = {0};
			if (a->rank == 0)
				ERR(x, in_span(x, 0), "Gather: the table %s is a scalar; it needs one dim or more", in_name(x, 0, &b));
			else if (n->a.axis_is_tuple)
				ERR(x, attr_span(x, "axis"), "Gather takes one axis, an integer in [%d, %d), not a tuple", -a->rank,
				    a->rank);
			else
				ERR(x, attr_span(x, "axis"), "Gather: axis %lld is not a dim of the table %s %s; use one in [%d, %d)",
				    (long long)axis, in_name(x, 0, &b), DIMS(a), -a->rank, a->rank);
			sb_free(&b);
			return false;
		}
		axis += axis < 0 ? a->rank : 0;
		if (idx->rank + a->rank - 1 > MAX_DIMS) {
			ERR(x, n->op_span, "Gather: the result would have more than %d dims", MAX_DIMS);
			return false;
		}
		out->rank = 0;
		for (int i = 0; i < a->rank; i++)
			for (int j = 0; j < (i == axis ? idx->rank : 1); j++)
				out->dims[out->rank++] = i == axis ? idx->dims[j] : a->dims[i];
		return true;
	}
	case OP_EMBEDDING_LOOKUP:
		return infer_embedding_lookup(x, a, out);
	case OP_GATHER_D:
		return infer_gather_d(x, a, out);
	case OP_GATHER_ND:
		return infer_gather_nd(x, a, out);
	OP_CASES(TENSOR_SCATTER_OPS)
		return infer_tensor_scatter(x, a, out);
	OP_CASES(STATE_OPS) OP_CASES(INPLACE_OPS)   /* scatter_state.c */
		return infer_state(x, a, out);
	case OP_L2_NORMALIZE:
		return infer_l2_normalize(x, a, out);
	case OP_BATCH_NORM:
		return infer_batch_norm(x, a, out);
	OP_CASES(SEGMENT_OPS)
		return infer_segment(x, a, out);
	OP_CASES(NORM_OPS)
		return infer_norm(x, a, out);
	case OP_CONCAT:
		return infer_concat(x, out);
	case OP_ADD_N:
		return infer_add_n(x, out);
	case OP_STACK:
		return infer_stack(x, a, out);
	case OP_LERP: {   /* start + weight (end - start): one float type, the three broadcast (numpy's) */
		Type se = *a;
		return need_float(x, 0) && same_dtype(x, 0, 1) && same_dtype(x, 0, 2) &&
		       broadcast(x, a, in_type(x, 1), &se, n->op_span) && broadcast(x, &se, in_type(x, 2), out, n->op_span);
	}
	case OP_CAST:
		if (!need_attr(x, ATTR_DTYPE))
			return false;
		*out = *a;
		out->dtype = n->a.dtype;
		return true;
	case OP_STRIDED_SLICE:
		return infer_strided_slice(x, a, out);
	case OP_SPLIT:
		return infer_split(x, a, out);
	case OP_SPLIT_V:
		return infer_split_v(x, a, out);
	case OP_SLICE:
		return infer_slice(x, a, out);
	case OP_PAD_V3:
		return infer_pad_v3(x, a, out);
	case OP_RESIZE_NEAREST: case OP_RESIZE_BILINEAR:
		return infer_resize(x, a, out);
	OP_CASES(INT_MATH_OPS) case OP_REVERSE_V2: case OP_TRACE_V2:
		return infer_int_math(x, a, out) && (n->nin == 1 || broadcast(x, a, in_type(x, 1), out, n->op_span));
	case OP_ARANGE: case OP_CAUSAL_MASK: case OP_ROPE_COS: case OP_ROPE_SIN: case OP_FILL_V2: case OP_EYE:
	case OP_LIN_SPACE: case OP_DROPOUT_GEN_MASK: case OP_UNIFORM_REAL:
		return infer_constant(x, out);
	case OP_KL_DIV_LOSS:
		return infer_kldiv_loss(x, a, out);
	case OP_DROPOUT_DO_MASK:
		return infer_dropout_do_mask(x, a, out);
	case OP_SPARSE_SOFTMAX_CE: {
		const Type *l = in_type(x, 1);
		if (a->rank != 2 || l->rank != 1 || l->dims[0] != a->dims[0] || (l->dtype != DT_I32 && l->dtype != DT_I64)) {
			ERR(x, n->op_span, "%s needs logits (N, C) and Int32 or Int64 labels (N,); got %s and %s %s", opname(x),
			    DIMS(a), dtype_name(l->dtype), DIMS(l));
			return false;
		}
		if (n->nin == 2) {
			if (n->a.present & ATTR_BIT(ATTR_OFFSET)) {   /* the pieces' attribute, which the whole loss does not read */
				ERR(x, attr_span(x, "offset"), "%s: offset is the attribute of a class-split piece (4 operands, "
				    "as step_parallel_end.ir shows it); the whole loss takes labels in [0, C): remove it", opname(x));
				return false;
			}
			out->rank = 0;
			return need_float(x, 0);
		}
		/* A class-split piece (lower.c): the slice's classes from offset, each
		 * row's completed maximum and sum; the rows' losses where it holds the label. */
		return infer_ce_piece(x, a, out);
	}
	case OP_SOFTMAX_CE: {   /* each row's loss; a class-split piece's (lower.c) summed over the slices */
		const Type *l = in_type(x, 1);
		if (a->rank != 2 || !type_equal(a, l)) {
			ERR(x, n->op_span, "%s needs logits (N, C) and labels (N, C) of the same float type; got %s %s and "
			    "%s %s", opname(x), dtype_name(a->dtype), DIMS(a), dtype_name(l->dtype), DIMS(l));
			return false;
		}
		return infer_ce_piece(x, a, out);
	}
	case OP_MSE_LOSS: case OP_L1_LOSS:
		if (!same_dtype(x, 0, 1) || !need_float(x, 0))
			return false;
		if (!type_equal(a, in_type(x, 1))) {
			ERR(x, n->op_span, "%s: prediction %s and target %s differ in shape", opname(x), DIMS(a),
			    DIMS(in_type(x, 1)));
			return false;
		}
		out->rank = 0;
		return true;
	case OP_L2_LOSS:   /* sum x^2 / 2: a scalar */
		out->rank = 0;
		return need_float(x, 0);
	case OP_SQUARE_SUM_ALL:
		return infer_square_sum_all(x, a, out);
	case OP_MASKED_FILL: {   /* value where the mask is true: input and mask broadcast, value a scalar of input's type */
		const Type *v = in_type(x, 2);
		if (v->rank != 0) {
			StrBuf b = {0};
			ERR(x, in_span(x, 2), "MaskedFill: value %s is %s; it is a scalar, a number or a 0-d tensor "
			    "(MindSpore's)", in_name(x, 2, &b), DIMS(v));
			sb_free(&b);
			return false;
		}
		return need_float(x, 0) && need_bool(x, 1) && same_dtype(x, 0, 2) &&
		       broadcast(x, a, in_type(x, 1), out, n->op_span);
	}
	case OP_ALL_REDUCE: case OP_ALL_GATHER: case OP_REDUCE_SCATTER: case OP_ALL_TO_ALL:
		return infer_comm(x, a, out);
	case OP_CALL:
		return infer_call(x, out);
	OP_CASES(PIPELINE_OPS) OP_CASES(FUSED_OPS)   /* no name in the language (op_from_name) */
	case OP_COUNT:
		break;
	}
	return false;
}

/* Types the node's number operands (Value.literal): shape (), the dtype of
 * its first value operand (OneHot's on_value and off_value: of the other
 * one when it is a value, else Float32, as MindSpore's are written). False (reported at the number) when the number
 * does not fit that type, or has none; false silently when the type is not
 * known yet (an earlier error). A Call takes no number: in the flat graph
 * one would stand for the callee's input wherever it is read, where no
 * text can write it (an operator of numbers only). */
static bool type_literals(Infer *x)
{
	Node *n = x->n;
	int first = -1, number = -1, from = n->op == OP_ONE_HOT ? 1 : 0;   /* OneHot's numbers go with its values */
	for (int k = n->nin - 1; k >= 0; k--) {
		if (n->in[k] < 0)   /* an undefined name, reported */
			return false;
		if (x->g->values[n->in[k]].literal)
			number = k;
		else if (k >= from)
			first = k;
	}
	if (number < 0)
		return true;
	if (n->op == OP_CALL) {
		ERR(x, in_span(x, number), "Call: a number cannot be passed to a called graph; write it where the graph "
		    "uses that input, or pass a value");
		return false;
	}
	if (first < 0 && n->op != OP_ONE_HOT) {
		ERR(x, n->op_span, "%s: a number operand takes its type from a value operand, and %s has none", opname(x),
		    opname(x));
		return false;
	}
	if (first >= 0 && in_type(x, first)->rank < 0)
		return false;
	bool ok = true;
	for (int k = 0; k < n->nin; k++) {
		Value *v = &x->g->values[n->in[k]];
		if (!v->literal)
			continue;
		/* OneHot's on_value and off_value: Float32 when neither is a value */
		v->type = (Type){.dtype = first >= 0 ? in_type(x, first)->dtype : DT_F32, .rank = 0};
		const Lit *l = v->literal;
		double f = lit_number(l);
		DType t = v->type.dtype;
		if (t == DT_BOOL) {
			ERR(x, l->span, "%s: the number %s would be Bool, as the operand it goes with; Bool takes no numbers",
			    opname(x), l->s);
			ok = false;
		} else if (!dtype_is_float(t) && l->kind == LIT_FLOAT) {
			ERR(x, l->span, "%s: the number %s is not an integer, but the operand it goes with is %s (write an "
			    "integer, or Cast to a float type)", opname(x), l->s, dtype_name(t));
			ok = false;
		} else if (t == DT_I32 && (l->i < INT32_MIN || l->i > INT32_MAX)) {
			ERR(x, l->span, "%s: the number %s does not fit Int32, the type of the operand it goes with", opname(x),
			    l->s);
			ok = false;
		} else if (dtype_is_float(t) && fabs(f) > dtype_max(t)) {
			ERR(x, l->span, "%s: the number %s does not fit %s (largest %g), the type of the operand it goes with",
			    opname(x), l->s, dtype_name(t), dtype_max(t));
			ok = false;
		}
	}
	return ok;
}

/* The same bound as declared types (parse.c), so later products never overflow. */
static bool within_limit(Infer *x, const Type *t)
{
	int64_t total = 1;
	for (int i = 0; i < t->rank; i++) {
		if (t->dims[i] > ELEMENT_LIMIT / total) {
			ERR(x, x->n->op_span, "%s: the result %s has more than 2^40 elements", opname(x), DIMS(t));
			return false;
		}
		total *= t->dims[i];
	}
	return true;
}

static void check_signature(Infer *x, const Type *got)
{
	const Signature *s = x->n->sig;
	if (s->ins->nitems != x->n->nin) {
		ERR(x, s->span, "the signature lists %d input type%s but %s has %d operand%s", s->ins->nitems,
		    s->ins->nitems == 1 ? "" : "s", opname(x), x->n->nin, x->n->nin == 1 ? "" : "s");
		return;
	}
	for (int k = 0; k < x->n->nin; k++) {
		const Type *w = s->ins->items[k]->type, *t = in_type(x, k);
		if (w->rank >= 0 && !type_equal(w, t)) {
			StrBuf b = {0};
			ERR(x, s->ins->items[k]->span, "signature input %d is %s %s but %s is %s %s", k, dtype_name(w->dtype),
			    DIMS(w), in_name(x, k, &b), dtype_name(t->dtype), DIMS(t));
			sb_free(&b);
		}
	}
	if (s->outs->nitems != 1) {
		ERR(x, s->outs->span, "%s has one result but the signature lists %d", opname(x), s->outs->nitems);
		return;
	}
	const Type *w = s->outs->items[0]->type;
	if (w->rank >= 0 && !type_equal(w, got))
		ERR(x, s->outs->items[0]->span, "the signature says %s returns %s %s, but it returns %s %s", opname(x),
		    dtype_name(w->dtype), DIMS(w), dtype_name(got->dtype), DIMS(got));
}

bool infer_graph(Module *m, Graph *g, Diag *d, bool signatures)
{
	int before = d->nerrors;
	Infer x = {.m = m, .d = d, .g = g};
	for (int i = 0; i < g->nnodes; i++) {
		x.n = &g->nodes[i];
		Value *v = &g->values[x.n->result];
		v->type.rank = -1;
		if (x.n->op == OP_COUNT || !type_literals(&x))
			continue;
		bool inputs_known = true;
		for (int k = 0; k < x.n->nin; k++)
			inputs_known &= x.n->in[k] >= 0 && g->values[x.n->in[k]].type.rank >= 0;
		if (!inputs_known)
			continue;
		Type t;
		if (!infer_node(&x, &t) || !within_limit(&x, &t))
			continue;
		t.is_param = false;
		v->type = t;
		if (x.n->sig && signatures)
			check_signature(&x, &t);
	}
	return d->nerrors == before;
}

bool infer_shapes(Module *m, Diag *d)
{
	int before = d->nerrors;
	for (int gi = 0; gi < m->ngraphs; gi++)
		infer_graph(m, m->graphs[gi], d, true);
	return d->nerrors == before;
}
