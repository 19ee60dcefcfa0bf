/* int_math.c: MindSpore's integer operators, ReverseV2 and TraceV2.
 *
 * Invert(x) is ~x, PopulationCount(x) the number of 1 bits of each element,
 * LeftShift(x, y) and RightShift(x, y) x shifted by y, broadcasting: Int32
 * or Int64 operands (MindSpore's int8..uint64 beside them; shardc has those
 * two integer types), the result x's type (PopulationCount's too, where
 * MindSpore's is UInt8, a type shardc lacks: the counts are the same
 * numbers). Integer values carry no gradient (op_input_has_grad), so a
 * model differentiates through them to nothing: their ops.h rows mark every
 * operand nograd, which also lets them past check_kernels' float rule, and
 * the types are checked here. Their splits are the elementwise and
 * broadcast rules (MindSpore's InvertInfo, PopulationCountInfo: activation
 * like; LeftShiftInfo, RightShiftInfo: Xdivy's broadcast rule).
 *
 * ReverseV2(x) {axis: (...)} reverses x along the named dims (MindSpore's
 * ops.ReverseV2); its ReverseV2Info takes Softmax's rule: the reversed dims
 * whole, the rest split freely. Its bprop reverses dy alike.
 *
 * TraceV2(x) {offset, axis1, axis2, dtype} sums the diagonal x[.., i, ..,
 * i + offset, ..] (i along axis1, i + offset along axis2; numpy's trace),
 * the result x's other dims; MindSpore's defaults offset 0, axis1 1, axis2
 * 0. TraceV2Info keeps axis1 and axis2 whole and splits the rest, which the
 * result keeps: no partial sums. Its bprop (TraceV2Grad) puts dy on the
 * diagonal of zeros. Float operands only (the runtime's sums are Float32;
 * MindSpore's integer trace is Int64), dtype if written the operand's. */
#include "shape_internal.h"
#include "rules_internal.h"
#include "int_math.h"

static int64_t axis_norm(int64_t a, int rank)
{
	return a < 0 ? a + rank : a;
}

void trace_v2_axes(const Attrs *a, int rank, int *a1, int *a2)
{
	*a1 = (int)axis_norm(a->axis1, rank);
	*a2 = (int)axis_norm(a->axis2, rank);
}

bool reverse_v2_reverses(const Attrs *a, int rank, int d)
{
	for (int i = 0; i < a->naxes; i++)
		if (axis_norm(a->axes[i], rank) == d)
			return true;
	return false;
}

static bool need_int(Infer *x, int k)
{
	DType t = in_type(x, k)->dtype;
	if (t == DT_I32 || t == DT_I64)
		return true;
	StrBuf b = {0};
	ERR(x, in_span(x, k), "%s computes on Int32 and Int64 (MindSpore's integer types; shardc has these two): %s is "
	    "%s%s", opname(x), in_name(x, k, &b), dtype_name(t), dtype_is_float(t) ? "; Cast it to Int32 first" : "");
	sb_free(&b);
	return false;
}

static bool infer_reverse_v2(Infer *x, const Type *in, Type *out)
{
	const Attrs *a = &x->n->a;
	if (!need_attr(x, ATTR_AXIS))
		return false;
	if (in->rank < 1) {
		StrBuf b = {0};
		ERR(x, in_span(x, 0), "ReverseV2: x %s is a scalar; it reverses along dims, so it needs one or more",
		    in_name(x, 0, &b));
		sb_free(&b);
		return false;
	}
	uint32_t seen = 0;
	for (int i = 0; i < a->naxes; i++) {
		int64_t d;
		if (!infer_axis(x, a->axes[i], in->rank, &d))
			return false;
		if (seen & (1u << d)) {
			ERR(x, attr_span(x, "axis"), "ReverseV2: axis names dim %lld twice (MindSpore refuses repeated axes); "
			    "name each dim once", (long long)d);
			return false;
		}
		seen |= 1u << d;
	}
	*out = *in;
	return true;
}

static bool infer_trace_v2(Infer *x, const Type *in, Type *out)
{
	const Attrs *a = &x->n->a;
	StrBuf b = {0};
	bool ok = false;
	int64_t a1, a2;
	if (in->rank < 2)
		ERR(x, in_span(x, 0), "TraceV2: x %s is %s; it sums a diagonal of two of its dims, so it needs 2 dims or "
		    "more", in_name(x, 0, &b), DIMS(in));
	else if (!need_float(x, 0))
		;
	else if (!infer_axis(x, a->axis1, in->rank, &a1) || !infer_axis(x, a->axis2, in->rank, &a2))
		;
	else if (a1 == a2)
		ERR(x, x->n->op_span, "TraceV2: axis1 and axis2 are both dim %lld; the diagonal runs along two different "
		    "dims (MindSpore's defaults: axis1 1, axis2 0)", (long long)a1);
	else if ((a->present & ATTR_BIT(ATTR_DTYPE)) && a->dtype != in->dtype)
		ERR(x, attr_span(x, "dtype"), "TraceV2: dtype %s differs from x's %s; shardc sums in x's type: leave dtype "
		    "out and Cast the result", dtype_name(a->dtype), dtype_name(in->dtype));
	else
		ok = true;
	sb_free(&b);
	if (!ok)
		return false;
	*out = *in;
	out->rank = 0;
	for (int d = 0; d < in->rank; d++)
		if (d != a1 && d != a2)
			out->dims[out->rank++] = in->dims[d];
	return true;
}

/* shape.c's for the rows it sends here (no switch with a default: a new
 * operator meets every switch over the operators, run_newop.sh). */
bool infer_int_math(Infer *x, const Type *in, Type *out)
{
	OpKind op = x->n->op;
	if (op == OP_REVERSE_V2)
		return infer_reverse_v2(x, in, out);
	if (op == OP_TRACE_V2)
		return infer_trace_v2(x, in, out);
	*out = *in;   /* Invert, PopulationCount; the shifts, which shape.c broadcasts */
	if (op == OP_LEFT_SHIFT || op == OP_RIGHT_SHIFT)
		return need_int(x, 0) && same_dtype(x, 0, 1);
	return need_int(x, 0);
}

void reverse_v2_dims(const Type *x, const Node *n, OpDims *od)
{
	od->batch = -1;   /* the first dim it does not reverse, if any */
	for (int d = 0; d < x->rank; d++) {
		add_dim(od, x->dims[d], NULL);
		if (reverse_v2_reverses(&n->a, x->rank, d))
			keep_whole(od, d, "a dim it reverses, whole in MindSpore's ReverseV2Info");
		else if (od->batch < 0)
			od->batch = d;
	}
	identity_input(od, 0, x->rank);
	identity_output(od, x->rank);
}

void trace_v2_dims(const Type *x, const Node *n, OpDims *od)
{
	int a1, a2;
	trace_v2_axes(&n->a, x->rank, &a1, &a2);
	od->batch = -1;
	od->out_rank = 0;
	for (int d = 0; d < x->rank; d++) {
		add_dim(od, x->dims[d], NULL);
		if (d == a1 || d == a2) {
			keep_whole(od, d, "a dim of the diagonal it sums, whole in MindSpore's TraceV2Info");
			continue;
		}
		if (od->batch < 0)
			od->batch = d;
		od->out_dim[od->out_rank++] = (int8_t)d;
	}
	identity_input(od, 0, x->rank);
}

/* x's dims and rank, then ReverseV2's mask of reversed dims (a bit each) or
 * TraceV2's axis1, axis2 and offset, closing the call: the arguments
 * sc_reverse and sc_trace (and sc_trace_grad) take after their tensors. */
void int_math_args(StrBuf *b, OpKind op, const Type *x, const Attrs *a)
{
	sb_puts(b, "(const int64_t[]){");
	for (int d = 0; d < x->rank; d++)
		sb_printf(b, d ? ", %lld" : "%lld", (long long)x->dims[d]);
	sb_printf(b, "}, %d, ", x->rank);
	if (op == OP_REVERSE_V2) {
		unsigned mask = 0;
		for (int d = 0; d < x->rank; d++)
			mask |= reverse_v2_reverses(a, x->rank, d) ? 1u << d : 0;
		sb_printf(b, "%uu);", mask);
		return;
	}
	int a1, a2;
	trace_v2_axes(a, x->rank, &a1, &a2);
	sb_printf(b, "%d, %d, %lld);", a1, a2, (long long)a->offset);
}

const char *int_math_kernel(OpKind op)
{
	static const char *const names[] = {"SC_INT_INVERT", "SC_INT_POPCOUNT", "SC_INT_LEFT_SHIFT", "SC_INT_RIGHT_SHIFT"};
	return names[op - OP_INVERT];
}
