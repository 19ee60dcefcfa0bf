/* scatter_nd.h: MindSpore's GatherNd and its scatter family,
 * TensorScatterUpdate, Add, Sub, Mul, Div, Max and Min: their result shapes
 * for shape.c, their op dims for rules.c and the (rows, inner) view
 * emission and the simulator take (scatter_nd.c). */
#ifndef SHARDC_SCATTER_ND_H
#define SHARDC_SCATTER_ND_H

#include "shardc.h"

/* x seen through indices (..., n): its first n dims (dims[0..n)) are those
 * an index names, inner the product of the rest; m the indices' rows (the
 * product of their dims but the last). */
typedef struct {
	int n;
	int64_t dims[MAX_DIMS];   /* (n) x's indexed dims */
	int64_t inner, m;
} NdView;
void nd_view(const Type *x, const Type *indices, NdView *v);
/* The op dims (rules.c). GatherNd: the indices' dims but the last (the
 * result's first), the last (whole), x's dims (whole: MindSpore's
 * GatherNdInfo). The scatters: x's dims (the result's), the indices'
 * (whole), updates the indices' but the last, then x's trailing ones
 * (MindSpore's ScatterNdOpsInfo). Update, Max and Min keep x's indexed
 * dims whole (TensorScatterUpdateInfo); Add, Sub, Mul and Div split them:
 * each rank applies the updates whose index falls in its piece (the
 * kernel's start), no communication, and the updates' gradient, 0 for the
 * others' slices, is summed over the ranks that split them. */
void gather_nd_dims(const Type *x, const Type *indices, OpDims *od);
void tensor_scatter_dims(OpKind op, const Type *x, const Type *indices, OpDims *od);

#endif
