/* shape_slice.c: the result shapes of the operators that take a slice of
 * their input (StridedSlice, Split, SplitV, Slice), for shape.c. Split, SplitV and Slice
 * set their slice as StridedSlice's begin, end and strides (not present:
 * printed as written), so the passes after take all three alike
 * (op_slices). */
#include "shape_internal.h"
#include "slice.h"

/* StridedSlice with MindSpore's masks (slice.c): the result's dims are the
 * slice's along x's dims, less the shrunk ones, with the new axes' 1s. */
bool infer_strided_slice(Infer *x, const Type *in, Type *out)
{
	const Attrs *a = &x->n->a;
	if (!need_attr(x, ATTR_BEGIN) || !need_attr(x, ATTR_END) || !need_attr(x, ATTR_STRIDES))
		return false;
	SliceForm f;
	SliceError err = slice_form(a, in->dims, in->rank, &f);
	Span at = x->n->attr_lit->span;
	int i = f.bad, d = f.bad_dim;
	switch (err) {
	case SLICE_OK:
		break;
	case SLICE_LENGTHS:
		ERR(x, at, "StridedSlice: begin, end and strides need one entry each per dim they slice, as many in each "
		    "(they have %d, %d and %d; x is %s)", a->nbegin, a->nend, a->nstrides, DIMS(in));
		return false;
	case SLICE_ENTRIES:
		ERR(x, attr_span(x, "begin"), "StridedSlice: begin, end and strides have more entries that slice a dim "
		    "(those not in new_axis_mask) than x %s has dims; give at most one per dim (a mask's bits past the "
		    "entries do nothing)", DIMS(in));
		return false;
	case SLICE_STRIDE: case SLICE_NEGATIVE:
		ERR(x, attr_span(x, "strides"), "StridedSlice: strides must be positive (entry %d, dim %d of %s, has %lld)%s",
		    i, d, DIMS(in), (long long)a->strides[i], err == SLICE_STRIDE ? "" : "; a negative stride (a "
		    "reversal) is not supported yet (MindSpore's StridedSlice parallel tests use none)");
		return false;
	case SLICE_EMPTY:
		ERR(x, at, "StridedSlice: dim %d of %s would be empty (begin %lld, end %lld)", d, DIMS(in),
		    (long long)((a->begin_mask >> i & 1) ? 0 : a->begin[i]),
		    (long long)((a->end_mask >> i & 1) ? in->dims[d] : a->end[i]));
		return false;
	case SLICE_INDEX:
		ERR(x, attr_span(x, "begin"), "StridedSlice: entry %d shrinks dim %d of %s (shrink_axis_mask) to the "
		    "element at begin %lld, which is outside the dim", i, d, DIMS(in), (long long)a->begin[i]);
		return false;
	case SLICE_RANK:
		ERR(x, attr_span(x, "new_axis_mask"), "StridedSlice: the result would have more than %d dims "
		    "(new_axis_mask)", MAX_DIMS);
		return false;
	}
	out->rank = f.out_rank;
	for (int j = 0; j < f.out_rank; j++)
		out->dims[j] = f.out_dim[j] < 0 ? 1 : f.dims[f.out_dim[j]];
	return true;
}

/* Split (MindSpore's ops.Split, one piece of it: the language's operators
 * have one result): piece `index` of `output_num` equal pieces along `axis`.
 * It is StridedSlice's slice [index len / n, (index + 1) len / n) of that
 * axis, which this sets as its begin, end and strides (not present: printed
 * as written), so the passes after take it as the slice. */
bool infer_split(Infer *x, const Type *in, Type *out)
{
	Attrs *a = &x->n->a;
	Span at = x->n->attr_lit ? x->n->attr_lit->span : x->n->op_span;
	if (!need_attr(x, ATTR_AXIS) || !need_attr(x, ATTR_OUTPUT_INDEX))
		return false;
	if (a->axis_is_tuple || a->axes[0] < -in->rank || a->axes[0] >= in->rank) {
		ERR(x, at, "Split: axis must be one dim of %s", DIMS(in));
		return false;
	}
	int axis = (int)(a->axes[0] < 0 ? a->axes[0] + in->rank : a->axes[0]);
	int64_t len = in->dims[axis], n = a->output_num;
	if (len % n) {
		ERR(x, at, "Split: dim %d of %s (%lld) does not divide into output_num %lld equal pieces", axis, DIMS(in),
		    (long long)len, (long long)n);
		return false;
	}
	if (a->output_index >= n) {
		ERR(x, at, "Split: index %lld is not one of the %lld pieces (0 to %lld)", (long long)a->output_index,
		    (long long)n, (long long)(n - 1));
		return false;
	}
	*out = *in;
	a->nbegin = a->nend = a->nstrides = in->rank;
	for (int d = 0; d < in->rank; d++) {
		a->begin[d] = d == axis ? a->output_index * (len / n) : 0;
		a->end[d] = d == axis ? (a->output_index + 1) * (len / n) : in->dims[d];
		a->strides[d] = 1;
	}
	out->dims[axis] = len / n;
	return true;
}

/* SplitV (MindSpore's ops.SplitV, one piece of it, as Split): piece `index`
 * of the pieces of lengths size_splits along split_dim (one length -1: what
 * the others leave), StridedSlice's slice from the lengths before it. */
bool infer_split_v(Infer *x, const Type *in, Type *out)
{
	Attrs *a = &x->n->a;
	if (!need_attr(x, ATTR_SIZE_SPLITS) || !need_attr(x, ATTR_SPLIT_DIM) || !need_attr(x, ATTR_NUM_SPLIT) ||
	    !need_attr(x, ATTR_OUTPUT_INDEX))
		return false;
	if (a->split_dim < -in->rank || a->split_dim >= in->rank) {
		ERR(x, attr_span(x, "split_dim"), "SplitV: split_dim %lld is not a dim of %s (give %d to %d)",
		    (long long)a->split_dim, DIMS(in), -in->rank, in->rank - 1);
		return false;
	}
	int dim = (int)(a->split_dim < 0 ? a->split_dim + in->rank : a->split_dim);
	int64_t len = in->dims[dim], total = 0;
	int rest = -1;
	if (a->num_split != a->nsize_splits) {
		ERR(x, attr_span(x, "num_split"), "SplitV: num_split %lld must be the number of size_splits (%d)",
		    (long long)a->num_split, a->nsize_splits);
		return false;
	}
	for (int i = 0; i < a->nsize_splits; i++) {
		int64_t s = a->size_splits[i];
		if (s == -1 && rest < 0) {
			rest = i;
			continue;
		}
		if (s < 1) {
			ERR(x, attr_span(x, "size_splits"), "SplitV: size_splits entry %d is %lld; each piece has 1 element or "
			    "more, and one entry may be -1 (the rest of the dim)", i, (long long)s);
			return false;
		}
		total += s;
	}
	if (rest < 0 ? total != len : total >= len) {
		ERR(x, attr_span(x, "size_splits"), "SplitV: size_splits add up to %lld%s, but dim %d of %s has %lld elements",
		    (long long)total, rest < 0 ? "" : " before the -1 entry, which would be empty", dim, DIMS(in),
		    (long long)len);
		return false;
	}
	if (a->output_index >= a->nsize_splits) {
		ERR(x, attr_span(x, "index"), "SplitV: index %lld is not one of the %d pieces (0 to %d)",
		    (long long)a->output_index, a->nsize_splits, a->nsize_splits - 1);
		return false;
	}
	int64_t begin = 0;
	for (int i = 0; i < a->output_index; i++)
		begin += i == rest ? len - total : a->size_splits[i];
	int64_t piece = a->output_index == rest ? len - total : a->size_splits[a->output_index];
	*out = *in;
	a->nbegin = a->nend = a->nstrides = in->rank;
	for (int d = 0; d < in->rank; d++) {
		a->begin[d] = d == dim ? begin : 0;
		a->end[d] = d == dim ? begin + piece : in->dims[d];
		a->strides[d] = 1;
	}
	out->dims[dim] = piece;
	return true;
}

/* Slice (MindSpore's ops.Slice(x, begin, size)): `size[d]` elements of dim
 * d from `begin[d]`, a size of -1 the rest of the dim; StridedSlice's slice
 * [begin, begin + size) with strides 1, which this sets as Split does. */
bool infer_slice(Infer *x, const Type *in, Type *out)
{
	Attrs *a = &x->n->a;
	if (!need_attr(x, ATTR_BEGIN) || !need_attr(x, ATTR_SIZE))
		return false;
	if (a->nbegin != in->rank || a->nshape != in->rank) {
		ERR(x, x->n->attr_lit->span, "Slice: begin and size need one entry per dim of x %s (they have %d and %d)",
		    DIMS(in), a->nbegin, a->nshape);
		return false;
	}
	*out = *in;
	for (int d = 0; d < in->rank; d++) {
		int64_t b = a->begin[d], len = a->shape[d] == -1 ? in->dims[d] - b : a->shape[d];
		if (b < 0 || b >= in->dims[d]) {
			ERR(x, attr_span(x, "begin"), "Slice: begin %lld of dim %d is outside the dim (x is %s: 0 to %lld)",
			    (long long)b, d, DIMS(in), (long long)(in->dims[d] - 1));
			return false;
		}
		if (len < 1 || b + len > in->dims[d]) {
			ERR(x, attr_span(x, "size"), "Slice: size %lld of dim %d from begin %lld %s (x is %s); give 1 to %lld, or -1 "
			    "for the rest of the dim", (long long)a->shape[d], d, (long long)b, len < 1 ? "is empty" :
			    "runs past the dim", DIMS(in), (long long)(in->dims[d] - b));
			return false;
		}
		a->end[d] = b + len;
		a->strides[d] = 1;
		out->dims[d] = len;
	}
	a->nend = a->nstrides = in->rank;
	return true;
}
