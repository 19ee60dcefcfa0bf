/* scatter_nd.c: MindSpore's GatherNd(x, indices) and its tensor scatters
 * TensorScatterUpdate, Add, Sub, Mul, Div, Max, Min(x, indices, updates).
 * indices has shape (..., n): each of its rows names a slice x[i0, ..,
 * i(n-1)] of x's trailing dims. GatherNd's result stacks those slices,
 * indices.shape[:-1] + x.shape[n:]; a scatter's is x with them replaced by
 * (added to, less, times, divided by, the larger or smaller of) updates, of
 * shape indices.shape[:-1] + x.shape[n:]. Their result shapes (shape.c) and
 * op dims (rules.c), as MindSpore's GatherNdInfo and ScatterNdOpsInfo split
 * them: GatherNd's x and the indexed dims of TensorScatterUpdate, Max and
 * Min (TensorScatterUpdateInfo and its subclasses) stay whole, so every rank
 * holds every slice an index may name (no partial results to complete);
 * Add, Sub, Mul and Div may split them, each rank applying the updates in
 * its piece (MindSpore masks the others' to 0, or to 1 for Mul and Div:
 * ScatterNdMulDivBaseInfo). The kernels check every index against the whole
 * x: one outside it is an error, never a zero. */
#include "shape_internal.h"
#include "rules_internal.h"
#include "scatter_nd.h"

#include <string.h>

void nd_view(const Type *x, const Type *indices, NdView *v)
{
	v->n = indices->rank ? (int)indices->dims[indices->rank - 1] : 0;
	v->inner = v->m = 1;
	for (int d = 0; d < x->rank; d++)
		if (d < v->n)
			v->dims[d] = x->dims[d];
		else
			v->inner *= x->dims[d];
	for (int d = 0; d + 1 < indices->rank; d++)
		v->m *= indices->dims[d];
}

/* indices Int32 or Int64 of rank 1 or more, its last dim n in [1, x's rank]. */
static bool check_indices(Infer *x, const Type *in, const Type *idx)
{
	StrBuf b = {0};
	bool ok = false;
	if (idx->dtype != DT_I32 && idx->dtype != DT_I64)
		ERR(x, in_span(x, 1), "%s: the indices %s are %s; they must be Int32 or Int64 (Cast them)", opname(x),
		    in_name(x, 1, &b), dtype_name(idx->dtype));
	else if (in->rank < 1)
		ERR(x, in_span(x, 0), "%s: x %s is a scalar; it needs one dim or more", opname(x), in_name(x, 0, &b));
	else if (idx->rank < 1)
		ERR(x, in_span(x, 1), "%s: the indices %s are a scalar; they need a last dim, the coordinates of each "
		    "index into x", opname(x), in_name(x, 1, &b));
	else if (idx->dims[idx->rank - 1] < 1 || idx->dims[idx->rank - 1] > in->rank)
		ERR(x, in_span(x, 1), "%s: the indices %s %s have %lld coordinates each (their last dim), x %s %d dim%s; "
		    "use 1 to %d", opname(x), in_name(x, 1, &b), DIMS(idx), (long long)idx->dims[idx->rank - 1], DIMS(in),
		    in->rank, in->rank == 1 ? "" : "s", in->rank);
	else if (idx->rank - 1 + in->rank - (int)idx->dims[idx->rank - 1] > MAX_DIMS)
		ERR(x, x->n->op_span, "%s: the slices would have more than %d dims", opname(x), MAX_DIMS);
	else
		ok = true;
	sb_free(&b);
	return ok;
}

/* The slices' shape, indices.shape[:-1] + x.shape[n:], in *s. */
static void slices_type(const Type *in, const Type *idx, Type *s)
{
	int n = (int)idx->dims[idx->rank - 1];
	s->rank = 0;
	for (int d = 0; d + 1 < idx->rank; d++)
		s->dims[s->rank++] = idx->dims[d];
	for (int d = n; d < in->rank; d++)
		s->dims[s->rank++] = in->dims[d];
}

bool infer_gather_nd(Infer *x, const Type *in, Type *out)
{
	if (!check_indices(x, in, in_type(x, 1)))
		return false;
	*out = *in;
	out->is_param = false;
	slices_type(in, in_type(x, 1), out);
	return true;
}

bool infer_tensor_scatter(Infer *x, const Type *in, Type *out)
{
	const Type *idx = in_type(x, 1), *upd = in_type(x, 2);
	if (!check_indices(x, in, idx) || !same_dtype(x, 0, 2))
		return false;
	Type s;
	slices_type(in, idx, &s);
	if (upd->rank != s.rank || memcmp(upd->dims, s.dims, sizeof(int64_t) * (size_t)s.rank)) {
		StrBuf b = {0};
		ERR(x, in_span(x, 2), "%s: updates %s are %s; they must be indices.shape[:-1] + x.shape[%lld:], %s, "
		    "one slice of x for each index", opname(x), in_name(x, 2, &b), DIMS(upd), (long long)idx->dims[idx->rank - 1],
		    DIMS(&s));
		sb_free(&b);
		return false;
	}
	*out = *in;
	out->is_param = false;
	return true;
}

static const char *const x_dim_names[MAX_DIMS] = {"x's dim 0", "x's dim 1", "x's dim 2", "x's dim 3",
                                                  "x's dim 4", "x's dim 5", "x's dim 6", "x's dim 7"};

void gather_nd_dims(const Type *x, const Type *indices, OpDims *od)
{
	int r = indices->rank, n = (int)indices->dims[r - 1];
	for (int d = 0; d < r; d++)
		add_dim(od, indices->dims[d], NULL);
	keep_whole(od, r - 1, "the last dim of the indices, each index's coordinates (MindSpore's GatherNdInfo)");
	for (int d = 0; d < x->rank; d++) {
		int o = add_dim(od, x->dims[d], x_dim_names[d]);
		keep_whole(od, o, "x, which MindSpore's GatherNdInfo never splits: any index may name any of its slices; "
		           "split the indices instead");
	}
	identity_input(od, 1, r);
	od->in_rank[0] = x->rank;
	for (int d = 0; d < x->rank; d++)
		od->in_dim[0][d] = (int8_t)(r + d);
	od->out_rank = 0;
	for (int d = 0; d + 1 < r; d++)
		od->out_dim[od->out_rank++] = (int8_t)d;
	for (int d = n; d < x->rank; d++)
		od->out_dim[od->out_rank++] = (int8_t)(r + d);
	od->batch = r > 1 ? 0 : -1;   /* MindSpore's batch strategy splits the indices */
}

void tensor_scatter_dims(OpKind op, const Type *x, const Type *indices, OpDims *od)
{
	int r = indices->rank, n = (int)indices->dims[r - 1];
	for (int d = 0; d < x->rank; d++) {
		add_dim(od, x->dims[d], NULL);
		if (d < n && op == OP_TENSOR_SCATTER_UPDATE)
			keep_whole(od, d, "a dim of x the indices name, whole as MindSpore's TensorScatterUpdateInfo keeps it: "
			           "split x's trailing dims instead");
		else if (d < n && (op == OP_TENSOR_SCATTER_MAX || op == OP_TENSOR_SCATTER_MIN))
			keep_whole(od, d, "a dim of x the indices name, whole as MindSpore's TensorScatterMaxInfo and "
			           "TensorScatterMinInfo (TensorScatterUpdateInfo's) keep it: split x's trailing dims instead");
	}
	for (int d = 0; d < r; d++) {
		int o = add_dim(od, indices->dims[d], d + 1 < r ? "an indices' dim" : "the indices' last dim");
		keep_whole(od, o, "the indices and the updates' leading dims, which MindSpore's ScatterNdOpsInfo never splits");
	}
	identity_input(od, 0, x->rank);
	od->in_rank[1] = r;
	for (int d = 0; d < r; d++)
		od->in_dim[1][d] = (int8_t)(x->rank + d);
	od->in_rank[2] = r - 1 + x->rank - n;
	for (int d = 0; d < od->in_rank[2]; d++)
		od->in_dim[2][d] = (int8_t)(d + 1 < r ? x->rank + d : n + d - (r - 1));
	identity_output(od, x->rank);
	od->batch = -1;   /* MindSpore's: no batch split */
}
