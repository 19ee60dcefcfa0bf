/* segment.h: MindSpore's unsorted segment reductions (UnsortedSegmentSum,
 * Max, Min, Prod): their result shapes for shape.c, their op dims for
 * rules.c and the flat view emission and the simulator take (segment.c). */
#ifndef SHARDC_SEGMENT_H
#define SHARDC_SEGMENT_H

#include "shardc.h"

/* How the rows of a segment operator's partial results combine: sum, max,
 * min or prod. */
ReduceOp segment_reduce_op(OpKind op);
/* x seen as (rows, inner): rows the elements of segment_ids (x's first
 * ids_rank dims), inner the product of x's dims after them. */
void segment_view(const Type *x, int ids_rank, int64_t *rows, int64_t *inner);
/* The op dims (rules.c): the ids' dims (reduced: split, each rank holds
 * partial segments), the segments (whole), x's trailing dims. */
void segment_dims(const Type *x, const Type *ids, const Node *n, OpDims *od);

#endif
