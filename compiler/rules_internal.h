/* rules_internal.h: the builders of an operator's op dims (OpDims, op_dims.c), which
 * rules.c's op_dims and the operator files that describe their own
 * operators' dims (conv.c) share. */
#ifndef SHARDC_RULES_INTERNAL_H
#define SHARDC_RULES_INTERNAL_H

#include "shardc.h"

/* A new op dim of size `size` (name: what messages call it, NULL for "dim k"); its index. */
int add_dim(OpDims *od, int64_t size, const char *name);
/* Op dim `dim` never splits; why says so in messages. */
void keep_whole(OpDims *od, int dim, const char *why);
/* Input k follows the op dims one to one. */
void identity_input(OpDims *od, int k, int rank);
/* The result follows the op dims one to one. */
void identity_output(OpDims *od, int rank);

#endif
