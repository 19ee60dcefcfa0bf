/* shape_constants.c: the computed constants' result shapes (docs/operators.md,
 * Computed constants: Arange, CausalMask, RopeCos, RopeSin, FillV2, Eye,
 * LinSpace), for
 * shape.c: the whole value their attributes describe, then the piece a
 * per-rank graph computes. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "shape_internal.h"

/* Arange's whole range: count elements start + i step, numpy's and
 * MindSpore's ops.arange (stop excluded). An integer type takes integer
 * start, stop and step (exact below 2^53); every element must fit. */
static bool infer_arange(Infer *x, Type *whole)
{
	const Attrs *a = &x->n->a;
	DType t = a->dtype;
	if (!need_attr(x, ATTR_STOP))
		return false;
	if (t == DT_BOOL) {
		ERR(x, attr_span(x, "dtype"), "Arange: dtype Bool holds no range; use Int32, Int64 or a float type");
		return false;
	}
	double len = ceil((a->stop - a->start) / a->step);
	if (!(len >= 1)) {
		ERR(x, x->n->op_span, "Arange: start %.17g, stop %.17g and step %.17g give no element (the range is empty)",
		    a->start, a->stop, a->step);
		return false;
	}
	if (len > (double)ELEMENT_LIMIT) {
		ERR(x, x->n->op_span, "Arange: the range has more than 2^40 elements");
		return false;
	}
	int64_t count = (int64_t)len;
	if (count > a->maxlen) {   /* MindSpore's Range refuses a result past maxlen */
		ERR(x, x->n->op_span, "%s: the range has %lld elements, more than maxlen %lld (MindSpore's Range's bound, "
		    "1000000 by default); raise maxlen or shorten the range", x->n->op_name, (long long)count,
		    (long long)a->maxlen);
		return false;
	}
	double last = a->start + (double)(count - 1) * a->step, big = 9007199254740992.0;   /* 2^53 */
	static const char *const keys[] = {"start", "stop", "step"};
	for (int k = 0; k < 3 && !dtype_is_float(t); k++) {
		const Lit *v = lit_dict_get(x->n->attr_lit, keys[k]);
		if (v && (v->kind != LIT_INT || fabs(lit_number(v)) >= big)) {
			StrBuf b = {0};
			lit_print(&b, v);
			ERR(x, v->span, "Arange: dtype %s takes integer start, stop and step below 2^53; %s is %s (write an "
			    "integer, or a float dtype)", dtype_name(t), keys[k], b.data);
			sb_free(&b);
			return false;
		}
	}
	double lo = t == DT_I32 ? INT32_MIN : t == DT_I64 ? -big : -dtype_max(t);
	double hi = t == DT_I32 ? INT32_MAX : t == DT_I64 ? big : dtype_max(t);
	if (!(a->start >= lo && a->start <= hi && last >= lo && last <= hi)) {
		ERR(x, x->n->op_span, "Arange: its elements run from %.17g to %.17g, which do not fit %s", a->start, last,
		    dtype_name(t));
		return false;
	}
	whole->rank = 1;
	whole->dims[0] = count;
	return true;
}

/* The whole table of CausalMask, RopeCos or RopeSin: the shape attribute,
 * rank 2 or more, the last two dims the positions (the mask: queries by
 * keys; RoPE: positions by the head dim, even). */
static bool infer_table(Infer *x, Type *whole)
{
	const Attrs *a = &x->n->a;
	const char *op = opname(x);
	bool mask = x->n->op == OP_CAUSAL_MASK;
	DType t = a->dtype;
	if (!need_attr(x, ATTR_SHAPE))
		return false;
	if (a->nshape < 2) {
		StrBuf b = {0};
		ints_print(&b, a->shape, a->nshape);
		ERR(x, attr_span(x, "shape"), "%s: shape %s has rank %d; it needs 2 dims or more, %s", op, b.data, a->nshape,
		    mask ? "(S, S) or (1, 1, S, S): the last two are the query and the key positions"
		         : "(S, D) or (1, 1, S, D): the positions, then the head dim");
		sb_free(&b);
		return false;
	}
	whole->rank = a->nshape;
	for (int d = 0; d < a->nshape; d++) {
		if (a->shape[d] < 1) {
			ERR(x, attr_span(x, "shape"), "%s: the dims of shape are positive; dim %d is %lld", op, d,
			    (long long)a->shape[d]);
			return false;
		}
		whole->dims[d] = a->shape[d];
	}
	if (mask && !dtype_is_float(t) && t != DT_BOOL) {
		ERR(x, attr_span(x, "dtype"), "CausalMask is additive, in a float type (0 where allowed, fill where "
		    "masked), or Bool for Select (true where allowed); %s is neither", dtype_name(t));
		return false;
	}
	if (!mask && !dtype_is_float(t)) {
		ERR(x, attr_span(x, "dtype"), "%s computes a float table; %s is not a float type", op, dtype_name(t));
		return false;
	}
	if (mask && (a->present & (ATTR_BIT(ATTR_FILL))) && t == DT_BOOL) {
		ERR(x, attr_span(x, "fill"), "CausalMask: fill is the masked value of an additive (float) mask; a Bool "
		    "mask is true where allowed, false where masked");
		return false;
	}
	if (mask && (a->present & (ATTR_BIT(ATTR_FILL))) && fabs(a->fill) > dtype_max(t)) {
		StrBuf b = {0};
		lit_print(&b, lit_dict_get(x->n->attr_lit, "fill"));
		ERR(x, attr_span(x, "fill"), "CausalMask: fill %s does not fit %s (largest %g); leave fill out for %s's "
		    "lowest finite value", b.data, dtype_name(t), dtype_max(t), dtype_name(t));
		sb_free(&b);
		return false;
	}
	int64_t hd = whole->dims[whole->rank - 1];
	if (!mask && hd % 2) {
		ERR(x, attr_span(x, "shape"), "%s: the last dim, the head dim, must be even (its two halves share the "
		    "frequencies: the rotate-half layout); it is %lld", op, (long long)hd);
		return false;
	}
	return true;
}

/* FillV2's whole value: the shape attribute, every element fill, which the
 * type must hold exactly (an integer type an integer, Bool 0 or 1). */
static bool infer_fill(Infer *x, Type *whole)
{
	const Attrs *a = &x->n->a;
	DType t = whole->dtype;
	if (!need_attr(x, ATTR_SHAPE) || !need_attr(x, ATTR_FILL))
		return false;
	if (a->nshape < 1) {
		ERR(x, attr_span(x, "shape"), "FillV2: shape () has no dim; write the number itself where it is used (a "
		    "number is an operand)");
		return false;
	}
	whole->rank = a->nshape;
	for (int d = 0; d < a->nshape; d++) {
		if (a->shape[d] < 1) {
			ERR(x, attr_span(x, "shape"), "FillV2: the dims of shape are positive; dim %d is %lld", d,
			    (long long)a->shape[d]);
			return false;
		}
		whole->dims[d] = a->shape[d];
	}
	double f = a->fill, big = 9007199254740992.0;   /* 2^53: Int64's exact doubles */
	bool fits = t == DT_BOOL ? f == 0 || f == 1
	            : dtype_is_float(t) ? fabs(f) <= dtype_max(t)
	            : f == floor(f) && (t == DT_I32 ? f >= INT32_MIN && f <= INT32_MAX : fabs(f) < big);
	if (!fits) {
		StrBuf b = {0};
		lit_print(&b, lit_dict_get(x->n->attr_lit, "fill"));
		ERR(x, attr_span(x, "fill"), "FillV2: fill %s does not fit %s%s", b.data, dtype_name(t),
		    t == DT_BOOL ? " (0 or 1)" : dtype_is_float(t) ? "" : " (an integer in its range, below 2^53)");
		sb_free(&b);
		return false;
	}
	return true;
}

/* Eye's whole value: (n, m), MindSpore's ops.Eye(n, m, t), ones on the
 * main diagonal; both required, positive. */
static bool infer_eye(Infer *x, Type *whole)
{
	const Attrs *a = &x->n->a;
	static const AttrKind need[] = {ATTR_N, ATTR_M};
	for (int k = 0; k < 2; k++) {
		if (!(a->present & ATTR_BIT(need[k]))) {
			ERR(x, x->n->op_span, "Eye needs the attributes 'n' and 'm', its rows and columns (MindSpore's "
			    "ops.Eye(n, m, t)): Eye() {n: 4, m: 5, dtype: Float32}");
			return false;
		}
		if (a->shape[k] < 1) {
			ERR(x, attr_span(x, attr_info[need[k]].name), "Eye: %s is %lld; its rows (n) and columns (m) are "
			    "positive", attr_info[need[k]].name, (long long)a->shape[k]);
			return false;
		}
	}
	whole->rank = 2;
	whole->dims[0] = a->shape[0];
	whole->dims[1] = a->shape[1];
	return true;
}

/* LinSpace's whole value: num Float32 elements from start to stop
 * (MindSpore's ops.LinSpace, start and stop its 0-d tensors written as
 * numbers here); start and stop finite in Float32, num at least 1. */
static bool infer_lin_space(Infer *x, Type *whole)
{
	const Attrs *a = &x->n->a;
	static const AttrKind need[] = {ATTR_START, ATTR_STOP, ATTR_NUM};
	for (int k = 0; k < 3; k++)
		if (!(a->present & ATTR_BIT(need[k]))) {
			ERR(x, x->n->op_span, "LinSpace needs the attributes 'start', 'stop' and 'num' (MindSpore's three "
			    "inputs): LinSpace() {start: 1.0, stop: 10.0, num: 5}");
			return false;
		}
	if (whole->dtype != DT_F32) {
		ERR(x, x->n->op_span, "LinSpace computes Float32 here; Cast its result to %s", dtype_name(whole->dtype));
		return false;
	}
	for (int k = 0; k < 2; k++) {
		double v = k ? a->stop : a->start;
		if (!(fabs(v) <= dtype_max(DT_F32))) {
			ERR(x, attr_span(x, k ? "stop" : "start"), "LinSpace: %s %g is no finite Float32 (MindSpore's start "
			    "and stop are Float32 tensors)", k ? "stop" : "start", v);
			return false;
		}
	}
	if (a->shape[0] < 1 || a->shape[0] > ELEMENT_LIMIT) {
		ERR(x, attr_span(x, "num"), "LinSpace: num is %lld; it is the number of elements, 1 or more",
		    (long long)a->shape[0]);
		return false;
	}
	whole->rank = 1;
	whole->dims[0] = a->shape[0];
	return true;
}

/* DropoutGenMask's whole mask: the shape attribute (MindSpore's first input),
 * Bool, keep_prob (its second) required, as MindSpore's inputs are. */
static bool infer_gen_mask(Infer *x, Type *whole)
{
	const Attrs *a = &x->n->a;
	if (!need_attr(x, ATTR_SHAPE) || !need_attr(x, ATTR_KEEP_PROB))
		return false;
	if (a->nshape < 1) {
		ERR(x, attr_span(x, "shape"), "DropoutGenMask: shape () has no dim; the mask has the shape of the value "
		    "DropoutDoMask drops elements of, one dim or more");
		return false;
	}
	whole->dtype = DT_BOOL;
	whole->rank = a->nshape;
	for (int d = 0; d < a->nshape; d++) {
		if (a->shape[d] < 1) {
			ERR(x, attr_span(x, "shape"), "DropoutGenMask: the dims of shape are positive; dim %d is %lld", d,
			    (long long)a->shape[d]);
			return false;
		}
		whole->dims[d] = a->shape[d];
	}
	return true;
}

/* UniformReal's whole value: the shape attribute (MindSpore's input), one
 * dim or more, Float32 (MindSpore's only type: it takes no dtype; seed and
 * seed2 checked as they are decoded). */
static bool infer_uniform_real(Infer *x, Type *whole)
{
	const Attrs *a = &x->n->a;
	if (!need_attr(x, ATTR_SHAPE))
		return false;
	if (a->nshape < 1) {
		ERR(x, attr_span(x, "shape"), "UniformReal: shape () has no dim; give one dim or more: shape: (8, 8)");
		return false;
	}
	whole->rank = a->nshape;
	for (int d = 0; d < a->nshape; d++) {
		if (a->shape[d] < 1) {
			ERR(x, attr_span(x, "shape"), "UniformReal: the dims of shape are positive; dim %d is %lld", d,
			    (long long)a->shape[d]);
			return false;
		}
		whole->dims[d] = a->shape[d];
	}
	return true;
}

/* DropoutDoMask(x, mask): x a float, mask the Bool result of a DropoutGenMask
 * in this graph (MindSpore's DropoutDoMaskInfo takes no other: it rewrites
 * the DropoutGenMask's shape to each rank's slice) of x's shape and keep_prob;
 * or a StridedSlice of one, as a rank's step_parallel_end reads the piece of a
 * mask every rank computes whole (strategy.c, constant_layouts). */
bool infer_dropout_do_mask(Infer *x, const Type *in, Type *out)
{
	const Attrs *a = &x->n->a;
	const Value *m = &x->g->values[x->n->in[1]];
	const Node *gen = m->node >= 0 ? &x->g->nodes[m->node] : NULL;
	while (gen && gen->op == OP_STRIDED_SLICE && gen->nin == 1) {
		int up = x->g->values[gen->in[0]].node;
		gen = up >= 0 ? &x->g->nodes[up] : NULL;
	}
	StrBuf b = {0};
	if (!need_float(x, 0) || !need_attr(x, ATTR_KEEP_PROB))
		return false;
	if (!gen || gen->op != OP_DROPOUT_GEN_MASK) {
		ERR(x, in_span(x, 1), "DropoutDoMask: its mask %s is not a DropoutGenMask's result; as in MindSpore "
		    "(DropoutDoMaskInfo), the mask is DropoutGenMask() {shape: %s, keep_prob: %g} written in this graph, "
		    "or write Dropout(x) {keep_prob: %g}", in_name(x, 1, &b), DIMS(in), a->keep_prob, a->keep_prob);
		sb_free(&b);
		return false;
	}
	if (in->rank != m->type.rank || memcmp(in->dims, m->type.dims, sizeof(int64_t) * (size_t)in->rank)) {
		ERR(x, in_span(x, 1), "DropoutDoMask: the mask %s is %s, x is %s; give its DropoutGenMask x's shape, "
		    "shape: %s", in_name(x, 1, &b), DIMS(&m->type), DIMS(in), DIMS(in));
		sb_free(&b);
		return false;
	}
	if ((float)gen->a.keep_prob != (float)a->keep_prob) {
		ERR(x, attr_span(x, "keep_prob"), "DropoutDoMask: keep_prob %g differs from its mask's, %g (the "
		    "DropoutGenMask %s); the kept elements are scaled by 1 / keep_prob of the draw, so the two must be one",
		    a->keep_prob, gen->a.keep_prob, in_name(x, 1, &b));
		sb_free(&b);
		return false;
	}
	*out = *in;
	return true;
}

/* A computed constant (docs/operators.md, Computed constants): the whole
 * value its attributes describe, then the piece [begin, end) of it this
 * node computes (a per-rank graph's piece; the whole when not written). */
bool infer_constant(Infer *x, Type *out)
{
	const Attrs *a = &x->n->a;
	Type whole = {.dtype = (a->present & (ATTR_BIT(ATTR_DTYPE))) ? a->dtype : DT_F32};
	OpKind op = x->n->op;
	bool ok = op == OP_ARANGE ? infer_arange(x, &whole) : op == OP_FILL_V2 ? infer_fill(x, &whole)
	          : op == OP_EYE ? infer_eye(x, &whole) : op == OP_LIN_SPACE ? infer_lin_space(x, &whole)
	          : op == OP_DROPOUT_GEN_MASK ? infer_gen_mask(x, &whole)
	          : op == OP_UNIFORM_REAL ? infer_uniform_real(x, &whole)
	          : infer_table(x, &whole);
	if (!ok)
		return false;
	*out = whole;
	for (int k = 0; k < 2; k++) {
		AttrKind at = k ? ATTR_END : ATTR_BEGIN;
		int n = k ? a->nend : a->nbegin;
		if ((a->present & ATTR_BIT(at)) && n != whole.rank) {
			ERR(x, attr_span(x, attr_info[at].name), "%s: %s has %d entr%s; it takes one per dim of the whole value %s",
			    opname(x), attr_info[at].name, n, n == 1 ? "y" : "ies", DIMS(&whole));
			return false;
		}
	}
	for (int d = 0; d < whole.rank; d++) {
		int64_t b = (a->present & (ATTR_BIT(ATTR_BEGIN))) ? a->begin[d] : 0;
		int64_t e = (a->present & (ATTR_BIT(ATTR_END))) ? a->end[d] : whole.dims[d];
		/* A piece may run past the end: an uneven split's last pieces, padding
		 * computed by the same formula, which the PadFill after it makes 0. */
		if (b < 0 || b >= e || e - b > whole.dims[d]) {
			ERR(x, attr_span(x, (a->present & (ATTR_BIT(ATTR_BEGIN))) ? "begin" : "end"), "%s: begin and end pick the "
			    "piece [begin, end) of each dim of the whole value %s; dim %d's [%lld, %lld) is not a piece of [0, %lld) "
			    "(0 <= begin < end, at most %lld long; it may run past the end, as an uneven split's last pieces do)",
			    opname(x), DIMS(&whole), d, (long long)b, (long long)e, (long long)whole.dims[d],
			    (long long)whole.dims[d]);
			return false;
		}
		out->dims[d] = e - b;
	}
	return true;
}
