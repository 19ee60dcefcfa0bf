/* kldiv_loss.h: MindSpore's KLDivLoss (kldiv_loss.c): its result shape, its
 * op dims and the factor each rank's partial sum takes. */
#ifndef SHARDC_KLDIV_LOSS_H
#define SHARDC_KLDIV_LOSS_H

#include "shardc.h"

/* Its op dims (rules.c's op_dims) on logits x: x's dims, any split, the
 * labels as x; the result as x with reduction "none", else a scalar whose
 * pieces' partial sums an AllReduce completes. */
void kldiv_loss_dims(const Type *x, const Node *n, OpDims *od);
/* The factor of a rank's sum of y (log y - x) over its piece of x: 1 for
 * "sum", 1 / the whole's element count for "mean", 1 / the whole's dim 0
 * for "batchmean" (global: the whole logits' dims), so that the pieces'
 * sums add up to MindSpore's value (padding adds 0: its labels 0). */
double kldiv_loss_scale(int64_t reduction, const int64_t *global, int rank);

#endif
