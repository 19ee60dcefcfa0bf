/* uneven.c: where a split that does not divide its dim is sound.
 *
 * A dim of n elements split k ways gives every rank ceil(n / k) of them
 * (layout_piece_len); the last pieces end in padding (docs/language.md,
 * Uneven splits). The padding must change nothing: no reduction may count
 * it, and no gradient may reach it, so that a Parameter's padding, zero from
 * its initializer or file, stays zero under every optimizer. This pass walks
 * the lowered program (the forward operators, then the backward pass's
 * redistributions) and accepts the operators for which that holds
 * by construction, refusing the rest at the operator with the split that
 * would work instead:
 *   - elementwise operators and Casts, Dropout (its mask drawn from the
 *     whole's index), Transpose, Select, and Softmax, LogSoftmax and the
 *     normalizers over other dims: the padding stays padding, and the
 *     gradient at the padding, dy's 0 times a finite derivative, stays 0
 *     (so an operand broadcast along the dim, summing dy, sums only the real
 *     part); what Log, Sqrt, Rsqrt and Div's divisor read, whose derivative
 *     at a zero padding is infinite, lowering fills with 1 (PadFill);
 *   - the computed constants (Arange, CausalMask, RopeCos, RopeSin), their
 *     padding made 0 by lowering as a loaded input's is by the runtime;
 *   - FlashAttentionScore over its batch and heads, each computed alone (a
 *     padded head's gradient is 0 as dy's is), RotaryPositionEmbedding, and
 *     Concat, StridedSlice and Split along the dims they do not cut, PadV3
 *     along those it does not pad (rules.c keeps those whole);
 *   - MatMul and BatchMatMul, whose contracted dim may be uneven when both
 *     operands hold zeros in its padding (Parameters, and what zeros map to
 *     zeros: tracked below; lowering PadFills the others with 0);
 *   - Gather, its table's gathered dim uneven (an id names a real entry:
 *     the runtime checks them), its other dims or its indices' dims (copied);
 *   - Softmax, LogSoftmax and the cross-entropies split unevenly along their
 *     normalized axis, whose padding lowering masks (PadFill; the dense
 *     labels' 0), the dense cross-entropy along its rows, each alone, and
 *     the reductions (ReduceSum, ReduceMean, ReduceMax, ReduceMin,
 *     ReduceProd, ReduceAll, ReduceAny) and the cross-entropy's mean over
 *     its rows along an uneven dim, whose padding lowering fills (0, false;
 *     the lowest float under a maximum, the highest under a minimum, 1 under
 *     a product, true under ReduceAll; the mean's divisor the whole's count:
 *     emit_forward.c), MSELoss and L1Loss
 *     likewise (both operands' padding 0), and LayerNorm and RmsNorm
 *     normalizing one, whose x and squares lowering makes 0 in their padding
 *     before the means;
 *   - the redistributions redist_step_sound accepts: those that move no
 *     uneven dim, gather one whole (lowering then leaves the padding out),
 *     or cut or scatter one from whole (padded with zeros first); a move
 *     between two uneven splits goes through whole (redistribute.c). */
#include "shardc.h"
#include "uneven.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
	const Lowered *l;
	Diag *d;
	bool *zero;              /* (nvalues * MAX_DIMS) v's padding along d holds zeros */
	int bad;                 /* errors reported */
} Uneven;

static bool uneven(const LValue *v, int d)
{
	return layout_uneven(&v->layout, v->global, d);
}

static bool any_uneven(const LValue *v)
{
	for (int d = 0; d < v->type.rank; d++)
		if (uneven(v, d))
			return true;
	return false;
}

/* The span to blame for operator i: its node's, or for a redistribution the
 * first operator after it that has one (the reader it was made for). */
static Span op_span(const Uneven *u, int i)
{
	const Lowered *l = u->l;
	for (int j = i; j < l->nops; j++)
		if (l->ops[j].node >= 0)
			return l->flat->g->nodes[l->ops[j].node].op_span;
	return (Span){0};
}

/* The dims of v, an operand or the result of lowered operator o, that o's
 * operator keeps whole (rules.c), so that the advice proposes no split of them. */
static uint32_t kept_whole(const Lowered *l, const LOp *o, int v)
{
	if (o->node < 0 || o->lay || !l->st || !l->st->node[o->node].has_dims)
		return 0;
	const OpDims *od = l->st->node[o->node].od;
	uint32_t keep = 0;
	for (int k = -1; k < o->nin && k < od->nin && k < MAX_RULE_INPUTS; k++) {
		if ((k < 0 ? o->result : o->in[k]) != v)
			continue;
		int rank = k < 0 ? od->out_rank : od->in_rank[k];
		const int8_t *map = k < 0 ? od->out_dim : od->in_dim[k];
		for (int d = 0; d < rank; d++)
			keep |= map[d] >= 0 && (od->whole & (1u << map[d])) ? 1u << d : 0;
	}
	return keep;
}

/* Refuses operator i for dim d of value v laid out `lay` (NULL: its own
 * layout): `what` says why. */
static void refuse_in(Uneven *u, int i, int v, const TensorLayout *lay, int d, const char *what)
{
	const Lowered *l = u->l;
	const LValue *x = &l->values[v];
	u->bad++;
	if (!u->d)   /* the search's own lowering: the plan is refused, the pipeline's says why */
		return;
	if (!lay)
		lay = &x->layout;
	int64_t split = layout_dim_split(lay, d), len = layout_piece_len(lay, x->global, d);
	int64_t splits[MAX_DIMS];
	Type whole = x->type;
	for (int k = 0; k < x->type.rank; k++) {
		splits[k] = layout_dim_split(lay, k);
		whole.dims[k] = x->global[k];
	}
	StrBuf adv = {0};
	split_advice(&adv, &whole, splits, d, l->device_num, true, kept_whole(l, &l->ops[i], v));
	const LOp *o = &l->ops[i];
	diag_error(u->d, l->m->src, op_span(u, i),
	           "%s: dim %d of %%%s (size %lld) is split %lld ways unevenly (pieces of %lld, the last ending in "
	           "padding), and %s%s",
	           o->node < 0 ? "a redistribution" : op_info[o->lay ? l->flat->g->nodes[o->node].op : o->op].name, d,
	           x->name, (long long)x->global[d],
	           (long long)split, (long long)len, what, adv.data);
	sb_free(&adv);
}

static void refuse(Uneven *u, int i, int v, int d, const char *what)
{
	refuse_in(u, i, v, NULL, d, what);
}

/* FlashAttentionScore (ops[i]) with its heads split `split` ways where a
 * rank would get part of a head (BSH) or a query head without its key head
 * (grouped-query attention): the splits that would work divide both. */
static void refuse_heads(Uneven *u, int i, const OpDims *od, int64_t split)
{
	const Lowered *l = u->l;
	u->bad++;
	if (!u->d)
		return;
	int64_t n = od->size[1], other = od->also[1];
	bool gqa = other != n;
	StrBuf ok = {0};
	for (int64_t s = 2; s <= other; s++)
		if (n % s == 0 && other % s == 0 && l->device_num % s == 0)
			sb_printf(&ok, "%s%lld", ok.len ? ", " : "", (long long)s);
	if (gqa)
		diag_error(u->d, l->m->src, op_span(u, i), "FlashAttentionScore: grouped-query attention splits its %lld "
		           "query heads and %lld key heads alike (each rank holds the key heads its query heads read), so "
		           "the heads' split, %lld, must divide both; split them %s%s", (long long)n, (long long)other,
		           (long long)split, ok.len ? ok.data : "", ok.len ? " ways, or not at all" :
		           "not at all (no count above 1 divides both and device_num)");
	else
		diag_error(u->d, l->m->src, op_span(u, i), "FlashAttentionScore: its %lld heads split %lld ways would cut "
		           "a head (input_layout \"BSH\" splits whole heads of its hidden dim); split them %s%s",
		           (long long)n, (long long)split, ok.len ? ok.data : "", ok.len ? " ways, or not at all" :
		           "not at all (no count above 1 divides them and device_num)");
	sb_free(&ok);
}

static bool *zero_of(const Uneven *u, int v)
{
	return &u->zero[(size_t)v * MAX_DIMS];
}

/* A redistribution: it may not move an uneven dim (scatter or slice it)
 * but to gather it whole (lower.c leaves the padding out after); what it
 * leaves in place keeps its zeros. */
static void check_step(Uneven *u, int i)
{
	const LOp *o = &u->l->ops[i];
	const RedistStep *s = o->step;
	const LValue *x = &u->l->values[o->in[0]];
	int d;
	if (!redist_step_sound(s, x->global, &d)) {
		const TensorLayout *lay = layout_uneven(&s->from, x->global, d) ? &s->from : &s->to;
		refuse_in(u, i, o->in[0], lay, d, "moving it between layouts (to meet another operator's split of it) is "
		                                  "not done on uneven pieces (give the operators that share it one split "
		                                  "of it)");
		return;
	}
	memcpy(zero_of(u, o->result), zero_of(u, o->in[0]), sizeof(bool) * MAX_DIMS);
	if (s->kind == STEP_SLICE)   /* a whole dim cut unevenly: its padding is the slice's zeros */
		for (d = 0; d < x->type.rank; d++)
			if (layout_dim_split(&s->from, d) == 1 && layout_uneven(&s->to, x->global, d))
				zero_of(u, o->result)[d] = true;
}

double slope_pad(OpKind op, int k)
{
	if (op == OP_DIV || op == OP_FLOOR_DIV || op == OP_FLOOR_MOD || op == OP_MOD || op == OP_TRUNCATE_DIV ||
	    op == OP_TRUNCATE_MOD)   /* the divisor */
		return k == 1;
	if (op == OP_XLOGY)   /* dy x / y is NaN at (0, 0); Xlogy(0, 1) is 0 */
		return k == 1;
	if (op == OP_HYPOT)   /* dy x / hypot is NaN at (0, 0): hypot(1, 0) is 1, its slopes dy and 0 */
		return k == 0;
	if (op == OP_ATAN2)   /* dy / (y^2 + x^2) is NaN at (0, 0); atan2(0, 1) is 0 */
		return k == 1;
	if (op == OP_POW)   /* the base: b a^(b - 1) */
		return k == 0;
	if (op == OP_ACOSH)   /* NaN below 1, dy / sinh(y) infinite at 1 */
		return k == 0 ? 2 : 0;
	if (op == OP_ZETA)   /* zeta(x, q) needs x > 1 and q > 0: zeta(2, 1), finite (its result padding not 0) */
		return k == 0 ? 2 : 1;
	if (op == OP_LGAMMA)   /* a pole at 0; lgamma(1) is 0 */
		return k == 0;
	return k == 0 && (op == OP_LOG || op == OP_SQRT || op == OP_RSQRT || op == OP_RECIPROCAL || op == OP_INV);
}

/* The fill of v's padding along d where a chain of PadFills before
 * operator i set it (lower_pad.c, lower.c), else NAN. */
static double pad_fill_of(const Uneven *u, int i, int v, int d)
{
	for (int j = i - 1; j >= 0; j--) {
		const LOp *o = &u->l->ops[j];
		if (o->result != v)
			continue;
		if (o->op != OP_PAD_FILL)
			return NAN;
		if (pad_axis(&o->a, u->l->values[v].type.rank) == d)
			return o->a.fill;
		v = o->in[0];
	}
	return NAN;
}

static bool maps_zero(OpKind op)
{
	return op != OP_EXP && op != OP_SIGMOID && op != OP_SQRT && op != OP_RSQRT && op != OP_COS && op != OP_SOFTPLUS &&
	       op != OP_RECIPROCAL && op != OP_POW && op != OP_COSH && op != OP_HSIGMOID && op != OP_ERFC &&
	       op != OP_INV && op != OP_ACOS && op != OP_ACOSH && op != OP_LOG_SIGMOID && op != OP_ONES_LIKE &&
	       op != OP_EQUAL && op != OP_GREATER_EQUAL && op != OP_LESS_EQUAL &&   /* 0 == 0: true */
	       op != OP_APPROXIMATE_EQUAL &&   /* |0 - 0| < tolerance: true */
	       op != OP_LOGICAL_NOT && op != OP_IS_FINITE &&
	       op != OP_ONE_HOT &&   /* index 0: on_value in class 0 */
	       op != OP_CUMPROD &&   /* exclusive: 1 first */
	       op != OP_SIGMOID_CE &&   /* log 2 at (0, 0) */
	       op != OP_INVERT && op != OP_ZETA;   /* ~0 is -1; Zeta's padding is zeta(2, 1) (slope_pad) */
}

/* What an operator does with an uneven split of its operands or result:
 * the one list check_op enforces and op_dim_takes proposes from. */
typedef enum {
	UNEVEN_TAKES,      /* computed on the padded pieces, its op dims checked one by one (check_op) */
	UNEVEN_COPIES,     /* a copy of the piece: Reshape keeping the dim (carry_reshape) */
	UNEVEN_REFUSES,    /* not yet: an error naming the split that would work */
} UnevenKind;

static UnevenKind uneven_kind(OpKind op)
{
	switch (op) {
	OP_CASES(UNARY_OPS)
	case OP_CAST: case OP_DROPOUT: case OP_TRANSPOSE: case OP_SELECT:
	case OP_DROPOUT_DO_MASK:   /* the mask's padding false: 0 */
	OP_CASES(BINARY_OPS) OP_CASES(COMPARE_OPS) OP_CASES(LOGICAL_OPS) case OP_IS_FINITE: case OP_BROADCAST_TO:
	case OP_TILE:      /* along dims it does not repeat (rules.c splits repeated ones evenly) */
	case OP_ONE_HOT:   /* along the indices' dims (the classes evenly): a padded index gives a row */
	case OP_BIAS_ADD: case OP_MATMUL: case OP_BATCH_MATMUL: case OP_GATHER: case OP_SOFTMAX: case OP_LOG_SOFTMAX:
	case OP_EMBEDDING_LOOKUP:   /* Gather's; an id past the whole table reads zeros and adds nothing (its limit) */
	case OP_CUMSUM: case OP_CUMPROD:   /* along dims it does not scan (rules.c keeps that one whole) */
	case OP_PRELU:   /* any dim: 0 maps to 0 whatever the weight, and x dy there adds 0 to its gradient */
	case OP_REDUCE_SUM: case OP_REDUCE_MEAN: case OP_REDUCE_MAX: case OP_REDUCE_MIN:   /* other dims, or padding filled */
	case OP_REDUCE_PROD: case OP_REDUCE_ALL: case OP_REDUCE_ANY:
	case OP_ARGMAX_WITH_VALUE: case OP_ARGMIN_WITH_VALUE: case OP_ARGMAX: case OP_ARGMIN:   /* other dims: rows alone */
	case OP_TOPK:
	case OP_FLASH_ATTENTION:   /* its batch and heads (rules.c keeps the rest whole): each computed alone */
	case OP_PAD_FILL: case OP_ROTARY:
	case OP_TRIL: case OP_TRIU:   /* 0 maps to 0; dx the same mask on dy, whose padding is 0 */
	case OP_PAD_V3:   /* along dims it does not pad (rules.c keeps those whole); dx dy's box. Its constant, a
	                   * number with no dim, leaves its padding rows nonzero beside the padded dims */
	case OP_RESIZE_NEAREST: case OP_RESIZE_BILINEAR:   /* along N and C (H, W evenly): a 0 plane resizes to 0 */
	case OP_ADD_N:   /* 0 + 0 */
	case OP_LERP:    /* 0 + 0 (0 - 0) */
	case OP_IDENTITY:   /* the piece as it is */
	case OP_MASKED_FILL:   /* the mask's padding false: input's padding */
	case OP_CONCAT: case OP_STRIDED_SLICE: case OP_SPLIT: case OP_SPLIT_V: case OP_SLICE:   /* along other dims: rules.c keeps theirs whole */
	case OP_STACK:   /* its operands' dims, each piece moved as it is */
	OP_CASES(NORM_OPS) case OP_L2_NORMALIZE:   /* 0 maps to 0; along its axis lowered as pieces, x's padding 0 */
	case OP_ARANGE: case OP_CAUSAL_MASK: case OP_ROPE_COS: case OP_ROPE_SIN: case OP_FILL_V2:   /* their padding made 0 (lower_pad.c) */
	case OP_EYE: case OP_LIN_SPACE:
	case OP_DROPOUT_GEN_MASK:   /* false (sc_dropout_gen_mask) */
	case OP_UNIFORM_REAL:   /* 0 (sc_uniform_real) */
	case OP_MSE_LOSS: case OP_L1_LOSS: case OP_L2_LOSS:   /* their operands' padding made 0 (lower_pad.c) */
	case OP_KL_DIV_LOSS:   /* "none": 0 (log 0 - 0) is 0; its reductions' operands' padding made 0 (lower_pad.c) */
	case OP_SQUARE_SUM_ALL:
	OP_CASES(INT_MATH_OPS)   /* 0 maps to 0 but Invert's -1 (maps_zero) */
	case OP_REVERSE_V2: case OP_TRACE_V2:   /* along dims they keep (rules.c keeps the others whole) */
	case OP_SOFTMAX_CE:   /* its rows, each alone; its classes split are lowered as pieces (lower_normalized) */
		return UNEVEN_TAKES;
	case OP_RESHAPE: case OP_FLATTEN: case OP_EXPAND_DIMS: case OP_SQUEEZE:
	case OP_SEND_RECV: case OP_STAGE_SUM:   /* StageSum: of a whole scalar */
		return UNEVEN_COPIES;
	case OP_CALL: case OP_ALL_REDUCE: case OP_ALL_GATHER: case OP_REDUCE_SCATTER: case OP_ALL_TO_ALL:
	case OP_DEPEND:   /* never lowered: flatten.c makes it its value */
	OP_CASES(FUSED_OPS) case OP_COUNT:
	case OP_SPARSE_SOFTMAX_CE:   /* whole: its uneven splits are lowered as pieces (lower_normalized) */
	case OP_CONV2D: case OP_CONV2D_TRANSPOSE: case OP_MAX_POOL: case OP_AVG_POOL:   /* evenly: a padded piece would reach the windows */
	case OP_BATCH_NORM:   /* not yet: the padding would not map to 0 (bias) nor leave the batch's sums alone */
	case OP_GATHER_D:   /* not yet: its gradient would scatter dy's padding into x's */
	OP_CASES(SEGMENT_OPS)   /* not yet: a padded id 0 would send padding into segment 0 */
	case OP_GATHER_ND:   /* not yet: a padded index row would read (and its gradient add into) x's first slice */
	OP_CASES(TENSOR_SCATTER_OPS)   /* its dims split are x's trailing ones, with updates': not yet padded */
	OP_CASES(STATE_OPS)   /* not yet: x's padding would be state the update writes */
	OP_CASES(INPLACE_OPS)   /* not yet: v's padding would land in x's rows */
		return UNEVEN_REFUSES;
	}
	return UNEVEN_REFUSES;   /* not an operator */
}

static void check_op(Uneven *u, int i)
{
	const Lowered *l = u->l;
	const LOp *o = &l->ops[i];
	bool *zr = zero_of(u, o->result);
	const LValue *y = &l->values[o->result];
	if (o->op == OP_FLASH_ATTENTION && !o->lay && o->node >= 0) {   /* whole heads, each with its key heads */
		const NodeStrategy *fa = &l->st->node[o->node];
		int64_t heads = fa->split->split[1], also = fa->od->also[1];
		if (also && (also % heads || fa->od->size[1] % heads)) {
			refuse_heads(u, i, fa->od, heads);
			return;
		}
	}
	bool touched = any_uneven(y);
	for (int k = 0; k < o->nin; k++)
		touched |= any_uneven(&l->values[o->in[k]]);
	if (!touched)
		return;
	if (o->lay) {   /* a piece of an operator split along its normalized axis (lower.c) */
		if (o->op == OP_REDUCE_MEAN) {   /* a normalizer's statistics, the cross-entropy's mean over its rows */
			const LValue *x = &l->values[o->in[0]];
			int64_t axes[MAX_DIMS];
			int na = reduce_axes(&o->a, x->type.rank, axes);
			for (int k = 0; k < na; k++) {
				int d = (int)axes[k];
				if (uneven(x, d) && !zero_of(u, o->in[0])[d]) {   /* zeros: masked by lowering (lower.c) */
					refuse(u, i, o->in[0], d, "a mean over it (a LayerNorm's or RmsNorm's statistics, the "
					                          "cross-entropy's over its rows) would count the padding; split it "
					                          "evenly");
					return;
				}
			}
		}
		if (o->op == OP_PAD_FILL)
			zr[o->a.axes[0]] = o->a.fill == 0;
		return;   /* the softmaxes' pieces: masked (mask_padding), their padding's gradient 0 */
	}
	const NodeStrategy *ns = o->node >= 0 ? &l->st->node[o->node] : NULL;
	switch (uneven_kind(o->op)) {
	case UNEVEN_TAKES:
		break;
	case UNEVEN_COPIES:   /* a dim kept as it is keeps its split (carry_reshape) */
		return;
	case UNEVEN_REFUSES:
		for (int d = 0; d < y->type.rank; d++)
			if (uneven(y, d)) {
				refuse(u, i, o->result, d, "this operator takes no uneven split yet; split it evenly");
				return;
			}
		for (int k = 0; k < o->nin; k++)
			for (int d = 0; d < l->values[o->in[k]].type.rank; d++)
				if (uneven(&l->values[o->in[k]], d)) {
					refuse(u, i, o->in[k], d, "this operator takes no uneven split yet; split it evenly");
					return;
				}
		return;
	}
	if (!ns || !ns->has_dims)
		die("uneven: %s %%%s has no op dims", op_info[o->op].name, y->name);
	const OpDims *od = ns->od;
	bool zero_od[MAX_OPDIMS], any_od[MAX_OPDIMS];
	int at[MAX_OPDIMS][2];   /* a value and its dim that follows each op dim, for messages */
	for (int k = 0; k < od->nod; k++)
		any_od[k] = false, zero_od[k] = true, at[k][0] = -1;
	for (int k = 0; k < o->nin && k < MAX_RULE_INPUTS; k++) {
		const LValue *x = &l->values[o->in[k]];
		int nk = k < od->nin ? k : od->nin - 1;
		for (int d = 0; d < x->type.rank; d++) {
			int od_d = od->in_dim[nk][d];
			if (od_d < 0)
				continue;
			if (uneven(x, d)) {
				any_od[od_d] = true;
				at[od_d][0] = o->in[k], at[od_d][1] = d;
			}
			zero_od[od_d] &= zero_of(u, o->in[k])[d];
		}
	}
	for (int d = 0; d < y->type.rank; d++)
		if (od->out_dim[d] >= 0 && uneven(y, d)) {
			any_od[od->out_dim[d]] = true;
			if (at[od->out_dim[d]][0] < 0)
				at[od->out_dim[d]][0] = o->result, at[od->out_dim[d]][1] = d;
		}
	for (int k = 0; k < o->nin; k++) {
		if (!slope_pad(o->op, k))
			continue;
		const LValue *x = &l->values[o->in[k]];
		for (int d = 0; d < x->type.rank; d++)
			if (uneven(x, d) && !(pad_fill_of(u, i, o->in[k], d) > 0)) {   /* NAN: no PadFill */
				refuse(u, i, o->in[k], d, "its gradient at the padding would not be finite; split it evenly");
				return;
			}
	}
	bool matmul = o->op == OP_MATMUL || o->op == OP_BATCH_MATMUL;
	for (int k = 0; k < od->nod; k++) {
		if (!any_od[k] || o->op == OP_GATHER || o->op == OP_EMBEDDING_LOOKUP)   /* ids: real rows (or none); rest copied */
			continue;
		int v = at[k][0], d = at[k][1];
		bool sums = matmul || o->op == OP_REDUCE_SUM || o->op == OP_REDUCE_MEAN || o->op == OP_MSE_LOSS ||
		            o->op == OP_L1_LOSS || o->op == OP_L2_LOSS || o->op == OP_SQUARE_SUM_ALL ||
		            o->op == OP_KL_DIV_LOSS;   /* padding made 0 */
		bool masked = (o->op == OP_REDUCE_MAX && pad_fill_of(u, i, v, d) <= -FLT_MAX) ||
		              (o->op == OP_REDUCE_MIN && pad_fill_of(u, i, v, d) >= FLT_MAX) ||   /* the lowest, highest float */
		              (o->op == OP_REDUCE_PROD && pad_fill_of(u, i, v, d) == 1) ||   /* 1 under a product, All */
		              (o->op == OP_REDUCE_ALL && pad_fill_of(u, i, v, d) == 1) ||
		              (o->op == OP_REDUCE_ANY && pad_fill_of(u, i, v, d) == 0);   /* false under Any */
		if ((od->reduced & (1u << k)) && !(sums && zero_od[k]) && !masked) {
			refuse(u, i, v, d, matmul ? "the MatMul contracts it, which needs zeros in both operands' padding (a "
			                            "Parameter's, or what maps zeros to zeros); split it evenly"
			                          : "a reduction over it would count the padding; split it evenly");
			return;
		}
	}
	/* The result's zeros: where an operator mapping zeros to zeros reads
	 * zeros in every operand's padding (a sum), or in one operand's (a
	 * product: Mul, MatMul); an operand broadcast along the dim has none. */
	for (int d = 0; d < y->type.rank; d++) {
		int k = od->out_dim[d];
		if (k < 0 || !uneven(y, d))
			continue;
		bool either = false, all = true;
		for (int j = 0; j < o->nin && j < MAX_RULE_INPUTS; j++) {
			const LValue *x = &l->values[o->in[j]];
			int nj = j < od->nin ? j : od->nin - 1;
			bool zero_here = false;
			for (int e = 0; e < x->type.rank; e++)
				if (od->in_dim[nj][e] == k)
					zero_here |= zero_of(u, o->in[j])[e];
			either |= zero_here;
			all &= zero_here;
		}
		bool product = matmul || o->op == OP_MUL;
		zr[d] = o->op != OP_GATHER && o->op != OP_EMBEDDING_LOOKUP && maps_zero(o->op) && (product ? either : all);
	}
	if (o->op == OP_PAD_FILL) {   /* its axis's padding is its fill */
		int64_t axis = o->a.has_axis && o->a.naxes ? o->a.axes[0] : -1;
		zr[axis < 0 ? axis + y->type.rank : axis] = !(o->a.present & ATTR_BIT(ATTR_FILL)) || o->a.fill == 0;
	}
}

bool op_dim_takes(const Node *n, const OpDims *od, int o, int64_t split)
{
	if (od->also[o] && (od->also[o] % split || od->size[o] % split))   /* GQA's heads: evenly, groups whole */
		return false;
	if (od->size[o] % split == 0)
		return true;
	if (od->size[o] < split)
		return false;
	if (od->normalized & (1u << o))   /* masked by lowering (mask_padding) */
		return true;
	if ((n->op == OP_GATHER || n->op == OP_EMBEDDING_LOOKUP) && (od->reduced & (1u << o)))   /* a real entry or none */
		return true;
	if (n->op == OP_SPARSE_SOFTMAX_CE || n->op == OP_REDUCE_SUM || n->op == OP_REDUCE_MEAN || n->op == OP_REDUCE_MAX ||
	    n->op == OP_REDUCE_MIN || n->op == OP_REDUCE_PROD || n->op == OP_REDUCE_ALL || n->op == OP_REDUCE_ANY ||
	    n->op == OP_MSE_LOSS || n->op == OP_L1_LOSS || n->op == OP_L2_LOSS || n->op == OP_SQUARE_SUM_ALL ||
	    n->op == OP_KL_DIV_LOSS)
		return true;   /* the rows' losses, a reduction's or a loss's operands: their padding filled (lower_pad.c) */
	if (od->reduced & (1u << o))   /* a contraction's operands: their padding made 0 (lower_pad.c) */
		return n->op == OP_MATMUL || n->op == OP_BATCH_MATMUL;
	return uneven_kind(n->op) == UNEVEN_TAKES;
}

/* The walk over ops [from, to) (forward operators before nfwd, every
 * redistribution), stopping at the first refusal where `stop`. */
static void walk(Uneven *u, int from, int to, int nfwd, bool stop)
{
	for (int v = 0; v < u->l->nparams; v++)   /* initialized and read with zeros in their padding (runtime) */
		memset(zero_of(u, v), true, sizeof(bool) * MAX_DIMS);
	for (int i = from; i < to && !(stop && u->bad); i++) {
		if (u->l->ops[i].step)
			check_step(u, i);
		else if (i < nfwd)   /* the backward pass: its operators' adjoints keep the padding's gradient 0 */
			check_op(u, i);
	}
}

bool check_uneven(const Lowered *l, int from, Diag *d)
{
	Uneven u = {l, d, xcalloc((size_t)(l->nvalues ? l->nvalues : 1) * MAX_DIMS, sizeof(bool)), 0};
	walk(&u, from, l->nops, l->nfwd, true);
	free(u.zero);
	return !u.bad;
}

bool uneven_padding_zero(const Lowered *l, int v, int d)
{
	Uneven u = {l, NULL, xcalloc((size_t)(l->nvalues ? l->nvalues : 1) * MAX_DIMS, sizeof(bool)), 0};
	walk(&u, 0, l->nops, l->nops, false);   /* what it would refuse is lowering's to fill: not stopped */
	bool zero = zero_of(&u, v)[d];
	free(u.zero);
	return zero;
}
