/* op_dims.c: the builders of an operator's op dims (OpDims, rules_internal.h),
 * which rules.c and the operator files that describe their own operators'
 * dims (conv.c) share. */
#include "rules_internal.h"

int add_dim(OpDims *od, int64_t size, const char *name)
{
	od->size[od->nod] = size;
	od->name[od->nod] = name;
	od->whole_why[od->nod] = NULL;
	return od->nod++;
}

void keep_whole(OpDims *od, int dim, const char *why)
{
	od->whole |= 1u << dim;
	od->whole_why[dim] = why;
}

void identity_input(OpDims *od, int k, int rank)
{
	od->in_rank[k] = rank;
	for (int d = 0; d < rank; d++)
		od->in_dim[k][d] = (int8_t)d;
}

void identity_output(OpDims *od, int rank)
{
	od->out_rank = rank;
	for (int d = 0; d < rank; d++)
		od->out_dim[d] = (int8_t)d;
}
