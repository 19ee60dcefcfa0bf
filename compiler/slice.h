/* StridedSlice's attributes resolved against x's dims (slice.c): what each
 * dim of x gives the result, and where each result dim comes from. */
#ifndef SHARDC_SLICE_H
#define SHARDC_SLICE_H

#include "shardc.h"

typedef struct {
	int64_t begin[MAX_DIMS], end[MAX_DIMS], strides[MAX_DIMS];   /* per x dim, as sc_strided_slice takes them */
	int64_t dims[MAX_DIMS];   /* the slice's length along each x dim (1 for a shrunk one) */
	int8_t entry[MAX_DIMS];   /* x dim d's entry of begin/end/strides; -1: past them, taken whole */
	uint32_t shrunk;          /* x dims shrink_axis_mask drops from the result */
	int out_rank;
	int8_t out_dim[MAX_DIMS]; /* result dim j: the x dim it slices; -1 a new axis (size 1) */
	int bad, bad_dim;         /* on failure: the entry at fault and its x dim */
} SliceForm;

typedef enum {
	SLICE_OK,
	SLICE_LENGTHS,     /* begin, end and strides of different lengths */
	SLICE_ENTRIES,     /* more entries slicing dims (not new axes) than x has dims */
	SLICE_STRIDE,      /* a stride of 0 */
	SLICE_NEGATIVE,    /* a negative stride: not supported */
	SLICE_EMPTY,       /* a dim would come out empty */
	SLICE_INDEX,       /* a shrunk dim's index outside the dim */
	SLICE_RANK,        /* the result would have more than MAX_DIMS dims */
} SliceError;

/* Resolves a's begin, end, strides and masks (MindSpore's, TensorFlow's:
 * bit i of a mask for entry i, bits past the entries ignored, a new axis
 * winning over a shrink of the same entry, x's dims past the entries taken
 * whole) against x's dims; what is wrong with a slice it cannot take. */
SliceError slice_form(const Attrs *a, const int64_t *xdims, int xrank, SliceForm *f);

/* Whether x dim d must stay whole under f: a dim the slice cuts or shrinks. */
bool slice_cuts(const SliceForm *f, const int64_t *xdims, int d);

#endif
