/* kldiv_loss.c: MindSpore's KLDivLoss(logits x, labels y) {reduction}:
 * y (log y - x) elementwise, 0 where that is NaN (y 0, MindSpore's CPU
 * kernel), then "none" (the elements), "mean" (their mean, the default),
 * "batchmean" (their sum over x's dim 0) or "sum". Its result shape for
 * shape.c and its op dims for rules.c, as MindSpore's KLDivLossInfo: x and y
 * split alike along any dim; the result follows them with "none", else each
 * rank sums its piece (scaled by kldiv_loss_scale) and an AllReduce over
 * the ranks splitting them completes the sum. */
#include "shape_internal.h"
#include "rules_internal.h"
#include "kldiv_loss.h"

/* x and y floats of one type and one shape (MindSpore's); "batchmean"
 * divides by x's dim 0, so x has one. */
bool infer_kldiv_loss(Infer *x, const Type *in, Type *out)
{
	const Attrs *a = &x->n->a;
	const Type *y = in_type(x, 1);
	StrBuf b = {0}, c = {0};
	bool ok = false;
	if (!need_float(x, 0) || !same_dtype(x, 0, 1))
		;
	else if (!type_equal(in, y))
		ERR(x, x->n->op_span, "KLDivLoss: logits %s %s and labels %s %s differ in shape; it takes two of one shape "
		    "(MindSpore's)", in_name(x, 0, &b), DIMS(in), in_name(x, 1, &c), DIMS(y));
	else if (a->mode == KL_BATCHMEAN && in->rank == 0)
		ERR(x, attr_span(x, "reduction"), "KLDivLoss: reduction \"batchmean\" divides by the logits' dim 0, but "
		    "%s is a scalar (MindSpore refuses it too); use \"sum\" or \"mean\"", in_name(x, 0, &b));
	else
		ok = true;
	sb_free(&b);
	sb_free(&c);
	if (!ok)
		return false;
	*out = *in;
	out->is_param = false;
	if (a->mode != KL_NONE)
		out->rank = 0;
	return true;
}

void kldiv_loss_dims(const Type *x, const Node *n, OpDims *od)
{
	for (int d = 0; d < x->rank; d++)
		add_dim(od, x->dims[d], NULL);
	identity_input(od, 0, x->rank);
	identity_input(od, 1, x->rank);
	if (n->a.mode == KL_NONE) {
		identity_output(od, x->rank);
		return;
	}
	od->out_rank = 0;
	od->reduced = x->rank ? (1u << x->rank) - 1 : 0;
	od->reduce_op = REDUCE_SUM_OP;   /* the pieces' scaled sums (kldiv_loss_scale) */
}

double kldiv_loss_scale(int64_t reduction, const int64_t *global, int rank)
{
	double count = 1;
	for (int d = 0; d < rank; d++)
		count *= (double)global[d];
	if (reduction < KL_MEAN || reduction > KL_SUM)
		die("KLDivLoss: reduction %lld", (long long)reduction);
	return reduction == KL_MEAN ? 1 / count : reduction == KL_BATCHMEAN ? 1 / (double)global[0] : 1;
}
