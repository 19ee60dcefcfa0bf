/* segment.c: MindSpore's unsorted segment reductions, UnsortedSegmentSum,
 * UnsortedSegmentMax, UnsortedSegmentMin and UnsortedSegmentProd:
 * y = op(x, segment_ids) {num_segments: S}, segment_ids of x's first k dims,
 * y (S,) + x's dims after them, row s reducing every slice of x whose id is
 * s (ids outside [0, S) dropped). Their result shapes (shape.c) and their op
 * dims (rules.c): the ids' dims split leave each rank partial segments, which
 * an AllReduce of the operator's reduction completes, as MindSpore's
 * UnsortedSegmentSumInfo, ...MinInfo, ...MaxInfo and ...ProdInfo do. */
#include "shape_internal.h"
#include "segment.h"

#include <string.h>

ReduceOp segment_reduce_op(OpKind op)
{
	return op == OP_UNSORTED_SEGMENT_MAX ? REDUCE_MAX_OP : op == OP_UNSORTED_SEGMENT_MIN ? REDUCE_MIN_OP
	       : op == OP_UNSORTED_SEGMENT_PROD ? REDUCE_PROD_OP : REDUCE_SUM_OP;
}

void segment_view(const Type *x, int ids_rank, int64_t *rows, int64_t *inner)
{
	*rows = *inner = 1;
	for (int d = 0; d < x->rank; d++)
		*(d < ids_rank ? rows : inner) *= x->dims[d];
}

/* x a float tensor, segment_ids Int32 or Int64 with x's first dims (one or
 * more), num_segments given: the result (num_segments,) + x's other dims. */
bool infer_segment(Infer *x, const Type *in, Type *out)
{
	const Type *ids = in_type(x, 1);
	if (!need_attr(x, ATTR_NUM_SEGMENTS) || !need_float(x, 0))
		return false;
	StrBuf b = {0};
	bool ok = false;
	if (ids->dtype != DT_I32 && ids->dtype != DT_I64)
		ERR(x, in_span(x, 1), "%s: segment_ids %s is %s; it must be Int32 or Int64 (Cast it)", opname(x),
		    in_name(x, 1, &b), dtype_name(ids->dtype));
	else if (ids->rank < 1 || ids->rank > in->rank)
		ERR(x, in_span(x, 1), "%s: segment_ids %s has %d dim%s and x %s has %d; the ids must be x's first dims, "
		    "one or more", opname(x), in_name(x, 1, &b), ids->rank, ids->rank == 1 ? "" : "s", DIMS(in), in->rank);
	else if (memcmp(ids->dims, in->dims, sizeof(int64_t) * (size_t)ids->rank))
		ERR(x, in_span(x, 1), "%s: segment_ids %s %s must be x's first %d dim%s, %s's", opname(x), in_name(x, 1, &b),
		    DIMS(ids), ids->rank, ids->rank == 1 ? "" : "s", DIMS(in));
	else
		ok = true;
	sb_free(&b);
	if (!ok)
		return false;
	out->is_param = false;
	out->dtype = in->dtype;
	out->rank = 1 + in->rank - ids->rank;
	out->dims[0] = x->n->a.num_segments;
	for (int d = ids->rank; d < in->rank; d++)
		out->dims[1 + d - ids->rank] = in->dims[d];
	return true;
}

void segment_dims(const Type *x, const Type *ids, const Node *n, OpDims *od)
{
	int k = ids->rank;
	for (int d = 0; d < k; d++) {
		od->size[od->nod] = x->dims[d];
		od->name[od->nod] = NULL;
		od->whole_why[od->nod++] = NULL;
	}
	int seg = od->nod++;
	od->size[seg] = n->a.num_segments;
	od->name[seg] = "the segments";
	od->whole_why[seg] = "the segments, to which any rank's ids may send a row; split x's or the ids' dims instead";
	od->whole |= 1u << seg;
	static const char *const trailing[MAX_DIMS] = {"x's dim 0", "x's dim 1", "x's dim 2", "x's dim 3",
	                                               "x's dim 4", "x's dim 5", "x's dim 6", "x's dim 7"};
	for (int d = k; d < x->rank; d++) {   /* op dim d + 1: named as x's dim */
		od->size[od->nod] = x->dims[d];
		od->name[od->nod] = trailing[d];
		od->whole_why[od->nod++] = NULL;
	}
	od->in_rank[0] = x->rank;
	od->in_rank[1] = k;
	for (int d = 0; d < x->rank; d++)
		od->in_dim[0][d] = (int8_t)(d < k ? d : d + 1);
	for (int d = 0; d < k; d++)
		od->in_dim[1][d] = (int8_t)d;
	od->out_rank = 1 + x->rank - k;
	for (int d = 0; d < od->out_rank; d++)
		od->out_dim[d] = (int8_t)(k + d);
	od->reduced = (1u << k) - 1;   /* split: partial segments, completed by an AllReduce */
	od->reduce_op = segment_reduce_op(n->op);
	od->batch = 0;
}
