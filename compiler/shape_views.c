/* shape_views.c: the result shapes of the operators that view their
 * input's elements in another shape (Reshape, Transpose, Flatten,
 * ExpandDims, Squeeze), of Tile and OneHot, which lay out copies of
 * their input's elements (or a class per index) in a new shape, of
 * BiasAdd and PReLU, which read a vector along one dim of x, of the
 * operators that pick elements along an axis (ArgMaxWithValue, Argmax,
 * TopK), of CumSum and CumProd, which scan x along one, of GatherD, and
 * of L2Normalize, which normalizes x along one, for shape.c. */
#include "shape_internal.h"

#include <string.h>

bool infer_reshape(Infer *x, const Type *in, Type *out)
{
	const Attrs *a = &x->n->a;
	if (!need_attr(x, ATTR_SHAPE))
		return false;
	int64_t total = 1, known = 1;
	for (int i = 0; i < in->rank; i++)
		total *= in->dims[i];
	int infer_at = -1;
	for (int i = 0; i < a->nshape; i++) {
		if (a->shape[i] == -1 && infer_at < 0) {
			infer_at = i;
			continue;
		}
		if (a->shape[i] < 1) {
			ERR(x, x->n->attr_lit->span, "Reshape: each target dim is positive (one may be -1)");
			return false;
		}
		if (a->shape[i] > total / known) {   /* more elements than the input: no overflow */
			known = -1;
			break;
		}
		known *= a->shape[i];
	}
	out->rank = a->nshape;
	memcpy(out->dims, a->shape, sizeof(int64_t) * (size_t)a->nshape);
	if (infer_at >= 0 && known > 0 && total % known == 0)
		out->dims[infer_at] = total / known;
	else if (infer_at >= 0)
		known = -1;
	if ((infer_at < 0 && known != total) || known < 0) {
		double given = 1;   /* the target's known dims, in double: no overflow */
		for (int i = 0; i < a->nshape; i++)
			given *= a->shape[i] == -1 ? 1 : (double)a->shape[i];
		StrBuf t = {0};
		ints_print(&t, a->shape, a->nshape);
		if (infer_at >= 0)
			ERR(x, x->n->attr_lit->span, "Reshape: cannot reshape %s (%lld elements) to %s: its known dims make %.17g, "
			    "which does not divide %lld", DIMS(in), (long long)total, t.data, given, (long long)total);
		else
			ERR(x, x->n->attr_lit->span, "Reshape: cannot reshape %s (%lld elements) to %s (%.17g elements)", DIMS(in),
			    (long long)total, t.data, given);
		sb_free(&t);
		return false;
	}
	return true;
}

bool infer_transpose(Infer *x, const Type *in, Type *out)
{
	const Attrs *a = &x->n->a;
	if (!need_attr(x, ATTR_PERM))
		return false;
	bool seen[MAX_DIMS] = {0};
	bool ok = a->nperm == in->rank;
	for (int i = 0; ok && i < a->nperm; i++) {
		ok = a->perm[i] >= 0 && a->perm[i] < in->rank && !seen[a->perm[i]];
		if (ok)
			seen[a->perm[i]] = true;
	}
	if (!ok) {
		ERR(x, x->n->attr_lit->span, "Transpose: perm must be a permutation of 0..%d for a tensor of shape %s",
		    in->rank - 1, DIMS(in));
		return false;
	}
	out->rank = in->rank;
	for (int i = 0; i < in->rank; i++)
		out->dims[i] = in->dims[a->perm[i]];
	return true;
}

bool infer_flatten(Infer *x, const Type *in, Type *out)
{
	if (in->rank < 1) {
		ERR(x, in_span(x, 0), "Flatten needs a tensor of rank 1 or more");
		return false;
	}
	out->rank = 2;
	out->dims[0] = in->dims[0];
	out->dims[1] = 1;
	for (int i = 1; i < in->rank; i++)
		out->dims[1] *= in->dims[i];
	return true;
}

/* Stack (MindSpore's ops.Stack, formerly Pack): operands of one type and
 * shape, the result a new dim of their count at axis (default 0; a
 * negative one counts from the result's rank: -rank - 1 to rank). */
bool infer_stack(Infer *x, const Type *in, Type *out)
{
	const Attrs *a = &x->n->a;
	if (a->axis_is_tuple) {
		ERR(x, x->n->attr_lit->span, "Stack takes one axis");
		return false;
	}
	for (int k = 1; k < x->n->nin; k++)
		if (!type_equal(in_type(x, k), in)) {
			const Type *b = in_type(x, k);
			ERR(x, in_span(x, k), "Stack: operand %d is %s %s, operand 0 %s %s; Stack joins operands of one type "
			    "and shape (Concat joins along an existing dim)", k, dtype_name(b->dtype), DIMS(b),
			    dtype_name(in->dtype), DIMS(in));
			return false;
		}
	if (in->rank + 1 > MAX_DIMS) {
		ERR(x, in_span(x, 0), "Stack: the result would have %d dims, more than %d", in->rank + 1, MAX_DIMS);
		return false;
	}
	int64_t given = a->has_axis ? a->axes[0] : 0, axis = given < 0 ? given + in->rank + 1 : given;
	if (axis < 0 || axis > in->rank) {
		ERR(x, x->n->attr_lit->span, "Stack: axis %lld is out of range: the new dim of %d goes at %d to %d (the "
		    "operands are %s)", (long long)given, x->n->nin, -in->rank - 1, in->rank, DIMS(in));
		return false;
	}
	out->rank = in->rank + 1;
	for (int i = 0, j = 0; i < out->rank; i++)
		out->dims[i] = i == axis ? x->n->nin : in->dims[j++];
	return true;
}

/* MindSpore's ExpandDims: a dim of size 1 inserted at axis, in [-rank - 1, rank]. */
bool infer_expand_dims(Infer *x, const Type *in, Type *out)
{
	const Attrs *a = &x->n->a;
	int64_t axis;
	if (!need_attr(x, ATTR_AXIS))
		return false;
	if (a->axis_is_tuple) {
		ERR(x, x->n->attr_lit->span, "ExpandDims takes one axis");
		return false;
	}
	if (in->rank + 1 > MAX_DIMS) {
		ERR(x, in_span(x, 0), "ExpandDims: the result would have %d dims, more than %d", in->rank + 1, MAX_DIMS);
		return false;
	}
	axis = a->axes[0] < 0 ? a->axes[0] + in->rank + 1 : a->axes[0];
	if (axis < 0 || axis > in->rank) {
		ERR(x, x->n->attr_lit->span, "ExpandDims: axis %lld is out of range: a dim of %s is inserted at %d to %d",
		    (long long)a->axes[0], DIMS(in), -in->rank - 1, in->rank);
		return false;
	}
	out->rank = in->rank + 1;
	for (int i = 0, j = 0; i < out->rank; i++)
		out->dims[i] = i == axis ? 1 : in->dims[j++];
	return true;
}

/* MindSpore's Squeeze: the dims of size 1 that axis names (an int or a
 * tuple), or every one when it names none. */
bool infer_squeeze(Infer *x, const Type *in, Type *out)
{
	const Attrs *a = &x->n->a;
	bool drop[MAX_DIMS] = {0};
	for (int i = 0; a->has_axis && i < a->naxes; i++) {
		int64_t ax;
		if (!infer_axis(x, a->axes[i], in->rank, &ax))
			return false;
		if (drop[ax]) {
			ERR(x, x->n->attr_lit->span, "Squeeze: axis %lld is named twice", (long long)a->axes[i]);
			return false;
		}
		if (in->dims[ax] != 1) {
			ERR(x, x->n->attr_lit->span, "Squeeze: dim %lld of %s has size %lld, not 1; only dims of size 1 "
			    "can be squeezed", (long long)a->axes[i], DIMS(in), (long long)in->dims[ax]);
			return false;
		}
		drop[ax] = true;
	}
	out->rank = 0;
	for (int i = 0; i < in->rank; i++)
		if (!(a->has_axis && a->naxes ? drop[i] : in->dims[i] == 1))
			out->dims[out->rank++] = in->dims[i];
	return true;
}

/* MindSpore's Tile: x repeated multiples[i] times along dim i; multiples
 * longer than x's rank prepend dims (x's shape lined up from the right with
 * 1s before it), shorter ones are lined up with x's last dims (1s before
 * them). The kernel views x and the result as a broadcast of interleaved
 * dims (emit_args.c), one more for each dim of size over 1 repeated, so
 * that count is bounded by MAX_DIMS here. */
bool infer_tile(Infer *x, const Type *in, Type *out)
{
	const Attrs *a = &x->n->a;
	if (!need_float(x, 0) || !need_attr(x, ATTR_MULTIPLES))
		return false;
	int r = a->nshape > in->rank ? a->nshape : in->rank, view = 0;
	for (int i = 0; i < r; i++) {
		int j = i - (r - in->rank), k = i - (r - a->nshape);   /* x's dim and the multiple lined up, or none */
		int64_t d = j >= 0 ? in->dims[j] : 1, m = k >= 0 ? a->shape[k] : 1;
		if (m < 1) {
			StrBuf t = {0};
			ints_print(&t, a->shape, a->nshape);
			ERR(x, attr_span(x, "multiples"), "Tile: each of the multiples %s is at least 1 (%lld repeats nothing; "
			    "shardc has no empty tensors)", t.data, (long long)m);
			sb_free(&t);
			return false;
		}
		out->dims[i] = d * m;
		view += 1 + (d > 1 && m > 1);
	}
	if (view > MAX_DIMS) {
		ERR(x, attr_span(x, "multiples"), "Tile: x %s repeated along %d of its dims over 1 takes %d dims in the "
		    "kernel, more than its %d; Reshape x to fewer dims first", DIMS(in), view - r, view, MAX_DIMS);
		return false;
	}
	out->rank = r;
	out->dtype = in->dtype;
	return true;
}

/* MindSpore's OneHot(indices, depth, on_value, off_value, axis): the result
 * has a new dim of `depth` classes at `axis` (-1: last); an index names the
 * class holding on_value, the others off_value, and an index outside
 * [0, depth) gives a row of off_value. on_value and off_value are numbers or
 * () values of one float type, the result's. */
bool infer_one_hot(Infer *x, const Type *in, Type *out)
{
	const Attrs *a = &x->n->a;
	if (!need_attr(x, ATTR_DEPTH))
		return false;
	if (in->dtype != DT_I32 && in->dtype != DT_I64) {
		StrBuf b = {0};
		ERR(x, in_span(x, 0), "OneHot: the indices %s are %s; they must be Int32 or Int64 (Cast them)",
		    in_name(x, 0, &b), dtype_name(in->dtype));
		sb_free(&b);
		return false;
	}
	for (int k = 1; k < 3; k++) {
		const Type *t = in_type(x, k);
		if (t->rank != 0 || !dtype_is_float(t->dtype)) {
			StrBuf b = {0};
			ERR(x, in_span(x, k), "OneHot: %s %s is %s %s; it must be a number or a float value of shape ()",
			    k == 1 ? "on_value" : "off_value", in_name(x, k, &b), dtype_name(t->dtype), DIMS(t));
			sb_free(&b);
			return false;
		}
	}
	if (!same_dtype(x, 1, 2))
		return false;
	if (in->rank + 1 > MAX_DIMS) {
		ERR(x, in_span(x, 0), "OneHot: indices %s have %d dims; the result would have more than %d", DIMS(in),
		    in->rank, MAX_DIMS);
		return false;
	}
	if (a->has_axis && a->axis_is_tuple) {
		ERR(x, attr_span(x, "axis"), "OneHot takes one axis, the place of its new dim of classes");
		return false;
	}
	int64_t axis = a->has_axis ? a->axes[0] : -1;
	if (axis < -1 || axis > in->rank) {
		ERR(x, attr_span(x, "axis"), "OneHot: axis %lld is outside -1 to %d: where the classes' dim goes among the "
		    "indices' %d dim%s (-1: last)", (long long)axis, in->rank, in->rank, in->rank == 1 ? "" : "s");
		return false;
	}
	axis = axis < 0 ? in->rank : axis;
	out->rank = in->rank + 1;
	out->dtype = in_type(x, 1)->dtype;
	for (int i = 0, j = 0; i < out->rank; i++)
		out->dims[i] = i == axis ? a->depth : in->dims[j++];
	return true;
}

/* BiasAdd: a bias along x's last dim. */
bool infer_bias_add(Infer *x, const Type *in, Type *out)
{
	const Type *b = in_type(x, 1);
	if (!same_dtype(x, 0, 1))
		return false;
	if (in->rank < 1 || b->rank != 1 || b->dims[0] != in->dims[in->rank - 1]) {
		ERR(x, in_span(x, 1), "BiasAdd: the bias must be 1-D with the size of x's last dim; x is %s, bias %s",
		    DIMS(in), DIMS(b));
		return false;
	}
	*out = *in;
	return true;
}

/* PReLU, MindSpore's: a weight per channel (x's dim 1; below rank 2 one
 * channel, a scalar's too), or one for all. */
bool infer_prelu(Infer *x, const Type *in, Type *out)
{
	const Type *w = in_type(x, 1);
	if (!need_float(x, 0) || !same_dtype(x, 0, 1))
		return false;
	int64_t channels = in->rank >= 2 ? in->dims[1] : 1;
	if (in->rank < 2 && (w->rank != 1 || w->dims[0] != 1)) {
		ERR(x, in_span(x, 1), "PReLU: x %s has no channel dim (dim 1), so one weight serves all: the weight must be "
		    "(1,), not %s", DIMS(in), DIMS(w));
		return false;
	}
	if (w->rank != 1 || (w->dims[0] != channels && w->dims[0] != 1)) {
		ERR(x, in_span(x, 1), "PReLU: the weight must be 1-D, of x's channels (dim 1: %lld) or of 1; x is %s, "
		    "weight %s", (long long)channels, DIMS(in), DIMS(w));
		return false;
	}
	*out = *in;
	return true;
}

/* MindSpore's ArgMaxWithValue and ArgMinWithValue(axis 0, keep_dims false),
 * one result each (index 0: the Int32 indices, 1: the values, x's type), and
 * Argmax and Argmin(axis -1): the indices alone. One axis of a float x is
 * reduced (kept as a dim of 1 with keep_dims). */
bool infer_arg_reduce(Infer *x, const Type *in, Type *out)
{
	const Attrs *a = &x->n->a;
	OpKind op = x->n->op;
	bool with_value = op == OP_ARGMAX_WITH_VALUE || op == OP_ARGMIN_WITH_VALUE;
	if (!need_float(x, 0))
		return false;
	if (with_value && !(a->present & ATTR_BIT(ATTR_OUTPUT_INDEX))) {
		ERR(x, x->n->op_span, "%s needs the attribute 'index', which of MindSpore's two results it is: 0 the "
		    "indices, 1 the values (e.g. {axis: %lld, index: 1})", opname(x), (long long)(a->has_axis ? a->axes[0] : 0));
		return false;
	}
	if (in->rank < 1) {
		ERR(x, in_span(x, 0), "%s needs a tensor of rank 1 or more, not %s", opname(x), DIMS(in));
		return false;
	}
	if (a->has_axis && a->axis_is_tuple) {
		ERR(x, attr_span(x, "axis"), "%s takes one axis (an int), the dim whose %s it finds", opname(x),
		    op == OP_ARGMAX || op == OP_ARGMAX_WITH_VALUE ? "maximum" : "minimum");
		return false;
	}
	if (with_value && a->output_index > 1) {
		ERR(x, attr_span(x, "index"), "%s has two results: index 0 the indices, 1 the values (not %lld)",
		    opname(x), (long long)a->output_index);
		return false;
	}
	int64_t axis;
	if (!infer_axis(x, a->has_axis ? a->axes[0] : with_value ? 0 : -1, in->rank, &axis))
		return false;
	*out = *in;
	out->rank = 0;
	for (int d = 0; d < in->rank; d++)
		if (d != axis || (with_value && a->keep_dims))
			out->dims[out->rank++] = d == axis ? 1 : in->dims[d];
	if (!with_value || a->output_index == 0)
		out->dtype = DT_I32;
	return true;
}

/* MindSpore's TopK(input, k, sorted): the k largest along the last dim, in
 * descending order (the lower index first among equals), one result each
 * (index 0: the values, x's type; 1: their Int32 indices). */
bool infer_topk(Infer *x, const Type *in, Type *out)
{
	const Attrs *a = &x->n->a;
	if (!need_float(x, 0) || !need_attr(x, ATTR_K))
		return false;
	if (!(a->present & ATTR_BIT(ATTR_OUTPUT_INDEX))) {
		ERR(x, x->n->op_span, "TopK needs the attribute 'index', which of MindSpore's two results it is: 0 the "
		    "values, 1 the indices (e.g. {k: %lld, index: 0})", (long long)a->topk);
		return false;
	}
	if (in->rank < 1) {
		ERR(x, in_span(x, 0), "TopK needs a tensor of rank 1 or more, not %s", DIMS(in));
		return false;
	}
	if (a->topk > in->dims[in->rank - 1]) {
		ERR(x, attr_span(x, "k"), "TopK: k %lld is more than the %lld elements of x %s's last dim, which it picks "
		    "from", (long long)a->topk, (long long)in->dims[in->rank - 1], DIMS(in));
		return false;
	}
	if (a->output_index > 1) {
		ERR(x, attr_span(x, "index"), "TopK has two results: index 0 the values, 1 the indices (not %lld)",
		    (long long)a->output_index);
		return false;
	}
	*out = *in;
	out->dims[in->rank - 1] = a->topk;
	if (a->output_index == 1)
		out->dtype = DT_I32;
	return true;
}

/* CumSum, CumProd: x's type; MindSpore's axis (its second input) a required
 * attribute, one dim of x's. */
bool infer_scan(Infer *x, const Type *a, Type *out)
{
	const Node *n = x->n;
	int64_t axis;
	if (n->nin == 2 && x->g->values[n->in[1]].literal) {   /* MindSpore's CumSum(x, axis) */
		StrBuf b = {0};
		ERR(x, in_span(x, 1), "%s takes 1 operand; the axis, MindSpore's second input, is an attribute here: "
		    "%s(%%x) {axis: %s}", opname(x), opname(x), in_name(x, 1, &b));
		sb_free(&b);
		return false;
	}
	if (!(n->a.present & ATTR_BIT(ATTR_AXIS))) {
		ERR(x, n->op_span, "%s needs the attribute 'axis', the dim it scans (MindSpore's second input, an attribute "
		    "here): %s(%%x) {axis: -1}", opname(x), opname(x));
		return false;
	}
	if (n->a.axis_is_tuple) {
		ERR(x, n->attr_lit->span, "%s scans one axis; write one number (axis: %lld)", opname(x),
		    (long long)(n->a.naxes ? n->a.axes[0] : -1));
		return false;
	}
	if (a->rank < 1) {
		ERR(x, in_span(x, 0), "%s needs a tensor of rank 1 or more to scan", opname(x));
		return false;
	}
	*out = *a;
	if (!need_float(x, 0) || !infer_axis(x, n->a.axes[0], a->rank, &axis))
		return false;
	if (n->nin == 1 && (n->a.present & ATTR_BIT(ATTR_OFFSET))) {
		ERR(x, n->attr_lit->span, "%s: offset belongs to a rank's piece of a split axis (its slice's first "
		    "element, beside the slices' totals as a second operand); leave it out", opname(x));
		return false;
	}
	if (n->nin == 2) {   /* a rank's piece (lower.c): the totals of every slice, x's dims with the axis whole */
		const Type *t = in_type(x, 1);
		bool ok = t->rank == a->rank && (t->dtype == a->dtype || t->dtype == DT_F32);
		for (int d = 0; ok && d < a->rank; d++)
			ok = d == axis || t->dims[d] == a->dims[d];
		if (!ok) {
			StrBuf b = {0};
			ERR(x, in_span(x, 1), "%s: a split axis's piece takes the slices' totals, x's dims with the scanned "
			    "axis one per slice, Float32 or x's type; %s is not", opname(x), in_name(x, 1, &b));
			sb_free(&b);
			return false;
		}
	}
	return true;
}

/* MindSpore's Tril and Triu: x of any element type with two dims or more,
 * the last two a matrix (the leading ones a batch); the result is x's type. */
bool infer_triangle(Infer *x, const Type *in, Type *out)
{
	if (in->rank < 2) {
		StrBuf b = {0};
		ERR(x, in_span(x, 0), "%s: x %s %s has %d dim%s; it needs two or more, the last two the matrix whose "
		    "triangle it keeps (Reshape it to (1, n) first)", opname(x), in_name(x, 0, &b), DIMS(in), in->rank,
		    in->rank == 1 ? "" : "s");
		sb_free(&b);
		return false;
	}
	*out = *in;
	out->is_param = false;
	return true;
}

/* MindSpore's GatherD(x, dim, index), dim an attribute here: index an
 * integer tensor of x's rank, no larger than x on the other dims; the result
 * has index's shape and x's type, out[..i..] = x[..index[..i..]..] along dim. */
bool infer_gather_d(Infer *x, const Type *in, Type *out)
{
	const Type *idx = in_type(x, 1);
	if (!need_attr(x, ATTR_DIM))
		return false;
	StrBuf b = {0};
	bool ok = false;
	int64_t dim = x->n->a.dim;
	if (idx->dtype != DT_I32 && idx->dtype != DT_I64)
		ERR(x, in_span(x, 1), "GatherD: the index %s is %s; it must be Int32 or Int64 (Cast it)", in_name(x, 1, &b),
		    dtype_name(idx->dtype));
	else if (in->rank < 1)
		ERR(x, in_span(x, 0), "GatherD: x %s is a scalar; it needs one dim or more", in_name(x, 0, &b));
	else if (idx->rank != in->rank)
		ERR(x, in_span(x, 1), "GatherD: the index %s has %d dim%s %s, x %d %s; they must have the same rank",
		    in_name(x, 1, &b), idx->rank, idx->rank == 1 ? "" : "s", DIMS(idx), in->rank, DIMS(in));
	else if (dim < -in->rank || dim >= in->rank)
		ERR(x, attr_span(x, "dim"), "GatherD: dim %lld is not a dim of x %s; use one in [%d, %d)", (long long)dim,
		    DIMS(in), -in->rank, in->rank);
	else
		ok = true;
	for (int d = 0; ok && d < in->rank; d++)
		if (d != (dim < 0 ? dim + in->rank : dim) && idx->dims[d] > in->dims[d]) {
			ERR(x, in_span(x, 1), "GatherD: the index %s %s is larger than x %s on dim %d (%lld > %lld); only "
			    "along dim (%lld) may it be larger", in_name(x, 1, &b), DIMS(idx), DIMS(in), d,
			    (long long)idx->dims[d], (long long)in->dims[d], (long long)dim);
			ok = false;
		}
	sb_free(&b);
	if (!ok)
		return false;
	*out = *idx;
	out->dtype = in->dtype;
	out->is_param = false;
	return true;
}

/* MindSpore's L2Normalize: x / sqrt(max(sum(x^2 over axis), epsilon)), one
 * axis (an integer or a tuple of one). Lowering's piece on a slice of the
 * axis takes the completed sums of squares as a second input (x's shape,
 * the axis 1). */
bool infer_l2_normalize(Infer *x, const Type *in, Type *out)
{
	const Attrs *a = &x->n->a;
	if (!need_float(x, 0))
		return false;
	if (in->rank < 1) {
		StrBuf b = {0};
		ERR(x, in_span(x, 0), "L2Normalize: x %s is a scalar; it needs one dim or more", in_name(x, 0, &b));
		sb_free(&b);
		return false;
	}
	if (a->has_axis && a->naxes != 1) {
		ERR(x, attr_span(x, "axis"), "L2Normalize takes one axis, an integer or a tuple of one, not %d", a->naxes);
		return false;
	}
	int64_t axis;
	if (!infer_axis(x, a->has_axis ? a->axes[0] : 0, in->rank, &axis))
		return false;
	if (x->n->nin == 2) {
		Type want = *in;
		want.dims[axis] = 1;
		want.is_param = false;
		const Type *s = in_type(x, 1);   /* a half x's sums are Float32 (lower.c) */
		want.dtype = dtype_is_half(in->dtype) ? DT_F32 : in->dtype;
		if (s->dtype != want.dtype || s->rank != in->rank || memcmp(s->dims, want.dims, sizeof(int64_t) * (size_t)in->rank)) {
			StrBuf b = {0};
			ERR(x, in_span(x, 1), "L2Normalize: a second operand is the sums of squares along axis %lld (the form "
			    "lowering gives a rank's slice of the axis; MindSpore's takes x alone), %s %s; %s is %s %s",
			    (long long)axis, dtype_name(want.dtype), DIMS(&want), in_name(x, 1, &b), dtype_name(s->dtype), DIMS(s));
			sb_free(&b);
			return false;
		}
	}
	*out = *in;
	out->is_param = false;
	return true;
}

/* MindSpore's BatchNorm(x, scale, bias, mean, variance): x (N, C) or
 * (N, C, H, W), the other four (C,) in Float32 (the statistics of a half x
 * are Float32, and the moving ones are written in place: no Cast may stand
 * between them and the operator). Lowering's piece on a slice of N, H or W
 * takes the batch's completed mean and variance too, x's rank with every dim
 * but C 1, Float32. The result is x's type. */
bool infer_batch_norm(Infer *x, const Type *in, Type *out)
{
	static const char *const names[] = {"x", "scale", "bias", "mean", "variance", "batch mean", "batch variance"};
	if (!need_float(x, 0))
		return false;
	StrBuf b = {0};
	if (in->rank != 2 && in->rank != 4) {
		ERR(x, in_span(x, 0), "BatchNorm: x %s is %s; it must be (N, C) or (N, C, H, W) (MindSpore's BatchNorm)",
		    in_name(x, 0, &b), DIMS(in));
		sb_free(&b);
		return false;
	}
	if (x->n->nin == 6) {
		ERR(x, in_span(x, 5), "BatchNorm takes 5 operands (x, scale, bias, mean, variance), or 7 (a slice's piece: "
		    "the batch's mean and variance too)");
		return false;
	}
	for (int k = 1; k < x->n->nin; k++) {
		Type want = {.dtype = DT_F32, .rank = k < 5 ? 1 : in->rank};
		for (int d = 0; d < want.rank; d++)
			want.dims[d] = k < 5 ? in->dims[1] : d == 1 ? in->dims[1] : 1;
		const Type *t = in_type(x, k);
		if (t->dtype != DT_F32 || t->rank != want.rank ||
		    memcmp(t->dims, want.dims, sizeof(int64_t) * (size_t)want.rank)) {
			ERR(x, in_span(x, k), "BatchNorm: the %s %s must be Float32 %s (x's C %lld); it is %s %s", names[k],
			    in_name(x, k, &b), DIMS(&want), (long long)in->dims[1], dtype_name(t->dtype), DIMS(t));
			sb_free(&b);
			return false;
		}
	}
	*out = *in;
	out->is_param = false;
	return true;
}

/* MindSpore's SquareSumAll(x, y): (sum x^2, sum y^2), x and y floats of one
 * shape; one result each, as ArgMaxWithValue's (index 0: x's sum, 1: y's). */
bool infer_square_sum_all(Infer *x, const Type *in, Type *out)
{
	const Attrs *a = &x->n->a;
	if (!need_float(x, 0) || !same_dtype(x, 0, 1))
		return false;
	if (!(a->present & ATTR_BIT(ATTR_OUTPUT_INDEX))) {
		ERR(x, x->n->op_span, "SquareSumAll needs the attribute 'index', which of MindSpore's two results it is: 0 "
		    "the sum of x's squares, 1 of y's (e.g. {index: 0})");
		return false;
	}
	if (a->output_index < 0 || a->output_index > 1) {
		ERR(x, attr_span(x, "index"), "SquareSumAll's index %lld: it has two results, 0 (the sum of x's squares) "
		    "and 1 (y's)", (long long)a->output_index);
		return false;
	}
	if (!type_equal(in, in_type(x, 1))) {
		ERR(x, x->n->op_span, "SquareSumAll: x %s and y %s differ in shape; it takes two of one shape (MindSpore's)",
		    DIMS(in), DIMS(in_type(x, 1)));
		return false;
	}
	out->rank = 0;
	return true;
}
