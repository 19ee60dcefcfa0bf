/* StridedSlice as MindSpore writes it (ops.StridedSlice with its five masks)
 * resolved into one slice per dim of x, which is what the runtime's
 * sc_strided_slice and its gradient take, and a map from the result's dims
 * to x's. The masks only change the result's shape by dims of size 1 (a
 * new axis adds one, a shrunk dim drops one), so the slice's bytes are the
 * result's: shape inference, the split rules, lowering and emission all
 * read this one form. Positive strides only: MindSpore's operator-parallel
 * tests use none other, and its StridedSliceInfo refuses a split dim with a
 * stride other than 1. */
#include "slice.h"

#include <string.h>

SliceError slice_form(const Attrs *a, const int64_t *xdims, int xrank, SliceForm *f)
{
	memset(f, 0, sizeof *f);
	f->bad = f->bad_dim = -1;
	int n = a->nbegin;
	if (a->nend != n || a->nstrides != n)
		return SLICE_LENGTHS;
	uint64_t live = ((uint64_t)1 << n) - 1;   /* bits past the entries do nothing (n <= MAX_DIMS) */
	uint64_t new_axis = (uint64_t)a->new_axis_mask & live;
	uint64_t shrink = (uint64_t)a->shrink_axis_mask & live & ~new_axis;   /* a new axis wins */
	int slicing = 0;
	for (int i = 0; i < n; i++)
		slicing += !(new_axis >> i & 1);
	if (slicing > xrank) {
		f->bad = n - 1;
		return SLICE_ENTRIES;
	}
	int d = 0;
	for (int i = 0; i < n; i++) {
		if (new_axis >> i & 1) {
			if (f->out_rank == MAX_DIMS)
				return SLICE_RANK;
			f->out_dim[f->out_rank++] = -1;
			continue;
		}
		int64_t dim = xdims[d], s = a->strides[i];
		int64_t b = (a->begin_mask >> i & 1) ? 0 : a->begin[i];
		int64_t e = (a->end_mask >> i & 1) ? dim : a->end[i];
		f->bad = i, f->bad_dim = d;
		f->entry[d] = (int8_t)i;
		if (s == 0)
			return SLICE_STRIDE;
		if (shrink >> i & 1) {   /* the one element at begin; end and strides do not matter */
			b = b < 0 ? b + dim : b;
			if (b < 0 || b >= dim)
				return SLICE_INDEX;
			f->begin[d] = b, f->end[d] = b + 1, f->strides[d] = 1, f->dims[d] = 1;
			f->shrunk |= 1u << d;
			d++;
			continue;
		}
		if (s < 0)
			return SLICE_NEGATIVE;
		int64_t nb = b < 0 ? b + dim : b, ne = e < 0 ? e + dim : e;
		nb = nb < 0 ? 0 : nb > dim && !a->pad ? dim : nb;
		ne = ne < 0 ? 0 : ne > dim && !a->pad ? dim : ne;   /* pad: past the end is zeros, not cut off */
		if (ne <= nb)
			return SLICE_EMPTY;
		f->begin[d] = b;
		f->end[d] = e > dim && !a->pad ? dim : e;   /* numpy's clamp: the runtime pads past the end */
		f->strides[d] = s;
		f->dims[d] = (ne - nb - 1) / s + 1;
		if (f->out_rank == MAX_DIMS)
			return SLICE_RANK;
		f->out_dim[f->out_rank++] = (int8_t)d;
		d++;
	}
	f->bad = f->bad_dim = -1;
	for (; d < xrank; d++) {   /* past the entries: whole */
		f->begin[d] = 0, f->end[d] = xdims[d], f->strides[d] = 1, f->dims[d] = xdims[d];
		f->entry[d] = -1;
		if (f->out_rank == MAX_DIMS)
			return SLICE_RANK;
		f->out_dim[f->out_rank++] = (int8_t)d;
	}
	return SLICE_OK;
}

bool slice_cuts(const SliceForm *f, const int64_t *xdims, int d)
{
	return f->dims[d] != xdims[d] || (f->shrunk >> d & 1);
}
