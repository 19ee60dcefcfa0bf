/* lower_pad.c: lowering's PadFills, the padding of an uneven piece
 * (docs/language.md, Uneven splits) made what its reader needs: 0 under a
 * sum, a mean, a loss or a contraction, the lowest float under a maximum,
 * the highest under a minimum, 1 (true) under a product and ReduceAll,
 * 1 under Log, Sqrt, Rsqrt, Inv and a divisor, 2 under Acosh, 0 after a
 * computed constant. uneven.c checks the result. */
#include "lower_internal.h"
#include "uneven.h"

#include <float.h>

/* A PadFill's attributes: the padding along dim set to fill. */
void lower_pad_fill_attrs(Attrs *a, int dim, double fill)
{
	a->has_axis = true;
	a->naxes = 1;
	a->axes[0] = dim;
	a->fill = fill;
	a->present = ATTR_BIT(ATTR_AXIS) | ATTR_BIT(ATTR_FILL);
}

/* v with its padding along dim set to `fill` (PadFill), a piece of flat node
 * `node`: its layouts kept for the adjoint, which sets dy's padding to 0.
 * An earlier reader's PadFill of the same is reused. */
static int fill_padding(Lowering *x, int node, int v, int dim, double fill, const char *name, const char *why)
{
	for (int j = x->l->nops - 1; j >= 0; j--) {
		const LOp *p = &x->l->ops[j];
		if (p->op == OP_PAD_FILL && p->in[0] == v && pad_axis(&p->a, x->l->values[v].type.rank) == dim &&
		    p->a.fill == fill)
			return p->result;
	}
	TensorLayout *lay = arena_alloc(x->a, 2 * sizeof *lay);
	lay[0] = lay[1] = x->l->values[v].layout;
	Type t = lower_global_type(&x->l->values[v]);
	int r = lower_value(x, name, &t, &lay[1]);
	LOp *o = lower_op(x, OP_PAD_FILL, 1, why);
	o->node = node;
	o->in[0] = v;
	o->result = r;
	o->lay = lay;
	lower_pad_fill_attrs(&o->a, dim, fill);
	return r;
}

/* v with its padding along each of `axes` (non-negative) that is split
 * unevenly made `fill`: a PadFill each, pieces of flat node `node`, whose
 * comments begin with `what`. */
int lower_fill_uneven(Lowering *x, int node, int v, const int64_t *axes, int naxes, double fill, const char *what)
{
	for (int k = 0; k < naxes; k++) {
		const LValue *val = &x->l->values[v];
		int d = (int)axes[k];
		if (!layout_uneven(&val->layout, val->global, d))
			continue;
		StrBuf w = {0};
		if (fill <= -FLT_MAX || fill >= FLT_MAX)
			sb_printf(&w, "%s: the padding of this rank's piece made the %s float", what,
			          fill < 0 ? "lowest" : "highest");
		else
			sb_printf(&w, "%s: the padding of this rank's piece made %g", what, fill);
		v = fill_padding(x, node, v, d, fill, lower_suffixed_name(x, val->name, "masked"), arena_strdup(x->a, w.data));
		sb_free(&w);
	}
	return v;
}

/* A MatMul's or BatchMatMul's operands along the dim they contract, where
 * it is uneven: the padding made 0 where it may not be (an activation's),
 * so that it adds nothing to the sums. */
static void fill_contracted(Lowering *x, int i, int *ins)
{
	const Graph *g = x->l->flat->g;
	const Node *n = &g->nodes[i];
	const NodeStrategy *ns = &x->l->st->node[i];
	if (!ns->has_dims)
		return;
	const OpDims *od = ns->od;
	for (int k = 0; k < n->nin && k < od->nin; k++)
		for (int d = 0; d < x->l->values[ins[k]].type.rank; d++) {
			const LValue *v = &x->l->values[ins[k]];
			int o = od->in_dim[k][d];
			if (o < 0 || !(od->reduced & (1u << o)) || !layout_uneven(&v->layout, v->global, d) ||
			    uneven_padding_zero(x->l, ins[k], d))
				continue;
			StrBuf w = {0};
			sb_printf(&w, "%s %%%s contracting an uneven dim", op_info[n->op].name, g->values[n->result].name);
			ins[k] = lower_fill_uneven(x, i, ins[k], (const int64_t[]){d}, 1, 0, arena_strdup(x->a, w.data));
			sb_free(&w);
		}
}

/* The operands of flat node i whose padding along an uneven dim must hold
 * a given value (docs/language.md, Uneven splits), PadFilled in `ins`: a
 * reduction's and a loss's over the dims they reduce (0, or the lowest
 * float under a maximum, the highest under a minimum, 1 under a product
 * and ReduceAll: true), a contraction's (0),
 * and what Log, Sqrt, Rsqrt and Div's divisor read (slope_pad: 1, or 2 under
 * Acosh: their value and slope stay finite there, the gradient 0 as dy's). */
void lower_fill_operands(Lowering *x, int i, int *ins)
{
	const Graph *g = x->l->flat->g;
	const Node *n = &g->nodes[i];
	int64_t axes[MAX_DIMS];
	int na = 0, first = 0, last = -1;   /* the operands to fill: [first, last] */
	double fill = 0;
	bool reduction = n->op == OP_REDUCE_SUM || n->op == OP_REDUCE_MEAN || n->op == OP_REDUCE_MAX ||
	                 n->op == OP_REDUCE_MIN || n->op == OP_REDUCE_PROD || n->op == OP_REDUCE_ALL ||
	                 n->op == OP_REDUCE_ANY;
	if (n->op == OP_MATMUL || n->op == OP_BATCH_MATMUL) {
		fill_contracted(x, i, ins);
		return;
	}
	if (reduction) {
		na = reduce_axes(&n->a, x->l->values[ins[0]].type.rank, axes);
		fill = n->op == OP_REDUCE_MAX                                ? -FLT_MAX
		       : n->op == OP_REDUCE_MIN                              ? FLT_MAX
		       : n->op == OP_REDUCE_PROD || n->op == OP_REDUCE_ALL ? 1 : 0;   /* Any: false, a Bool's 0 */
		last = 0;
	} else if (n->op == OP_MSE_LOSS || n->op == OP_L1_LOSS || n->op == OP_L2_LOSS || n->op == OP_SQUARE_SUM_ALL ||
	           (n->op == OP_KL_DIV_LOSS && n->a.mode != KL_NONE))   /* the difference, x (and y): 0 there */
		last = n->op == OP_L2_LOSS ? 0 : 1;   /* KLDivLoss: labels 0 add 0 (kldiv_loss.c) */
	else if (slope_pad(n->op, 0) || slope_pad(n->op, 1)) {   /* Zeta's both, each its own value */
		first = slope_pad(n->op, 0) ? 0 : 1;
		last = slope_pad(n->op, 1) ? 1 : 0;
	}
	for (int k = first; k <= last; k++) {
		const LValue *v = &x->l->values[ins[k]];
		if (!reduction && last >= first && slope_pad(n->op, k))
			fill = slope_pad(n->op, k);
		if (!reduction)
			for (na = 0; na < v->type.rank; na++)
				axes[na] = na;
		StrBuf w = {0};
		sb_printf(&w, "%s %%%s split unevenly along %s", op_info[n->op].name, g->values[n->result].name,
		          reduction || n->op == OP_MSE_LOSS || n->op == OP_L1_LOSS || n->op == OP_L2_LOSS ||
		          n->op == OP_SQUARE_SUM_ALL || n->op == OP_KL_DIV_LOSS ? "a reduced dim" :
		          "a dim of what it reads");
		ins[k] = lower_fill_uneven(x, i, ins[k], axes, na, fill, arena_strdup(x->a, w.data));
		sb_free(&w);
	}
}

/* A computed constant's result (Arange, CausalMask, RopeCos, RopeSin, FillV2),
 * computed past the whole's end too: its padding made 0, as a loaded
 * input's is (a position past the end would otherwise index a table).
 * DropoutGenMask's kernel writes false there itself. */
int lower_fill_result(Lowering *x, int i, int v)
{
	const Graph *g = x->l->flat->g;
	const Node *n = &g->nodes[i];
	if (!op_is_constant(n->op) || n->op == OP_DROPOUT_GEN_MASK || n->op == OP_UNIFORM_REAL)
		return v;
	int64_t all[MAX_DIMS];
	int rank = x->l->values[v].type.rank;
	for (int d = 0; d < rank; d++)
		all[d] = d;
	StrBuf w = {0};
	sb_printf(&w, "%s %%%s split unevenly", op_info[n->op].name, g->values[n->result].name);
	v = lower_fill_uneven(x, i, v, all, rank, 0, arena_strdup(x->a, w.data));
	sb_free(&w);
	return v;
}
