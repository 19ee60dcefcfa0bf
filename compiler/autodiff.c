/* autodiff.c: the backward pass of a lowered program (docs/language.md, Training).
 *
 * Reverse-mode differentiation of the per-rank program itself, so the
 * backward pass communicates exactly what its layouts require. The
 * convention that makes this local: the gradient a rank holds for a value is
 * the gradient of the loss with respect to the rank's own piece, laid out as
 * the value is, with two refinements.
 *
 * - Partial values (a MatMul whose k is split, before its AllReduce): a sum's
 *   every term has the whole sum's gradient, so the gradient of a partial sum
 *   is complete. A mean's terms get 1/n of it and a max's (min's) only the
 *   maximal (minimal) terms: the adjoint of the collective that completes
 *   them scales or masks. Tied maxima (minima) share the gradient evenly over
 *   the whole reduced extent, as on one device: a ReduceMax or ReduceMin whose
 *   reduced dims are split counts the ties of its piece that equal the
 *   completed maximum (minimum), and one AllReduce sums the counts over the
 *   ranks that split those dims. A product's partials pass dy on unchanged;
 *   the ReduceProd's adjoint multiplies by the other ranks' factors, from the
 *   nonzero product and zero count of the whole reduced extent (prod_stat).
 *   UnsortedSegmentMax, Min and Prod whose ids' dims are split do the same
 *   per segment (their statistics counted by the ids).
 * - A local operator's gradient for input k is itself partial over the device
 *   axes that split the operator's output (or leave it partial) but not input
 *   k: those ranks used the same piece of k for different parts of the
 *   output, so their contributions add up. For a replicated parameter under a
 *   batch-split operator this is the data-parallel gradient sum; for a
 *   column-split weight it is nothing.
 *
 * Walking the forward program backwards, each forward value's contributions
 * are summed when its producer is reached: those sharing a layout are added
 * first, then each sum is redistributed (the cheapest plan, as in the forward
 * pass) to the value's layout made complete. A forward redistribution step's
 * adjoint is the redistribution back, from the gradient's layout to the
 * step's input layout made complete, which needs no rule per collective: an
 * AllGather's adjoint comes out as a free slice, a ReduceScatter's as an
 * AllGather, an AllToAll's as the AllToAll back. The parameters' gradients
 * end in their home layouts, complete, where the optimizer uses them. With
 * clip_global_norm, one more AllReduce sums the squares of the gradients'
 * distinct pieces over every rank, and each gradient is scaled by
 * clip / max(norm, clip). */
#include "lower_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
	Lowering *x;
	bool lazy;               /* gradients stay partial sums until a value needs them whole */
	bool *sole_copy;         /* (forward values) a Cast of a parameter nothing else reads (autocast's half copy) */
	bool *needs;             /* (forward values) depends on a trained parameter */
	int *head;               /* (forward values) first contribution, -1: none */
	int *cvalue, *cnext;     /* contributions: the gradient piece, the next one */
	int ncontrib, cap;
} Diff;

/* Indices, labels and integer results carry no gradient (op_input_has_grad,
 * which the search's pricing of the backward pass shares). */
static bool differentiable(const Lowered *l, const LOp *op, int k)
{
	return !(op->nograd & (1u << k)) &&
	       op_input_has_grad(op->op, k, l->values[op->in[k]].type.dtype, l->values[op->result].type.dtype);
}

static void add_contrib(Diff *d, int value, int grad)
{
	if (d->ncontrib == d->cap) {
		d->cap = d->cap ? 2 * d->cap : 256;
		d->cvalue = xrealloc(d->cvalue, sizeof(int) * (size_t)d->cap);
		d->cnext = xrealloc(d->cnext, sizeof(int) * (size_t)d->cap);
	}
	d->cvalue[d->ncontrib] = grad;
	d->cnext[d->ncontrib] = d->head[value];
	d->head[value] = d->ncontrib++;
}

static const char *grad_name(Diff *d, int v)
{
	StrBuf b = {0};
	sb_printf(&b, "grad_%s", d->x->l->values[v].name);
	const char *s = arena_strdup(d->x->a, b.data);
	sb_free(&b);
	return s;
}

/* A new gradient value for forward value v, laid out as `layout` (copied
 * first: it may point into the values that lower_value grows). */
static int grad_value(Diff *d, int v, const TensorLayout *layout)
{
	Type gt = lower_global_type(&d->x->l->values[v]);
	TensorLayout l = *layout;
	return lower_value(d->x, grad_name(d, v), &gt, &l);
}

static LOp *grad_op(Diff *d, GradKind kind, OpKind op, int nin, int result)
{
	LOp *o = lower_op(d->x, op, nin, NULL);
	o->grad = kind;
	o->result = result;
	return o;
}

static int accum(Diff *d, int v, int a, int b)
{
	int r = grad_value(d, v, &d->x->l->values[a].layout);
	LOp *o = grad_op(d, GRAD_ACCUM, OP_ADD, 2, r);
	o->in[0] = a;
	o->in[1] = b;
	return r;
}

static const char *why(Diff *d, int v, const char *what)
{
	StrBuf b = {0};
	sb_printf(&b, "gradient of %%%s, %s", d->x->l->values[v].name, what);
	const char *s = arena_strdup(d->x->a, b.data);
	sb_free(&b);
	return s;
}

/* The gradient of forward value v in v's layout, complete; -1 when the loss
 * does not reach v. With keep_partial, contributions that share one layout
 * are summed and left partial: an AllGather's adjoint then goes from the
 * partial sum straight to the slices, one ReduceScatter where completing
 * first would AllReduce and then slice (optimizer parallelism's gradients).
 * Lazily (Diff.lazy), a sum of contributions sharing one layout that is v's
 * but partial over axes v holds copies on stays so (never a parameter's, nor
 * that of a half copy only one Cast makes of a parameter: summed in the half
 * type it sends half the bytes):
 * every adjoint is linear in its dy, so the operators before v can pass the
 * partial sum on, and it is completed where a value needs it whole. */
static int finalize(Diff *d, int v, bool keep_partial)
{
	int n = 0;
	for (int c = d->head[v]; c >= 0; c = d->cnext[c])
		n++;
	if (!n)
		return -1;
	int *g = xmalloc(sizeof(int) * (size_t)n);
	n = 0;
	for (int c = d->head[v]; c >= 0; c = d->cnext[c])
		g[n++] = d->cvalue[c];
	TensorLayout want = d->x->l->values[v].layout;
	want.partial = 0;
	for (int i = 1; keep_partial && i < n; i++)
		keep_partial = layout_equal(&d->x->l->values[g[i]].layout, &d->x->l->values[g[0]].layout);
	/* lazily: one layout, v's on v's matrix but partial over axes v holds copies on */
	const TensorLayout *vl = &d->x->l->values[v].layout;
	TensorLayout first;
	bool lazy = !keep_partial && d->lazy && v >= d->x->l->nparams && !d->sole_copy[v] &&
	            layout_on_matrix(&d->x->l->values[g[0]].layout, vl, &first) &&
	            first.partial_op == REDUCE_SUM_OP && !(first.partial & ~layout_replica_axes(vl));
	for (int i = 1; lazy && i < n; i++)
		lazy = layout_equal(&d->x->l->values[g[i]].layout, &first);
	if (lazy) {
		TensorLayout whole = first;
		whole.partial = 0;
		lazy = layout_equal(&whole, &want);
	}
	if (keep_partial || lazy) {   /* the contributions summed, left partial */
		int sum = g[n - 1];
		for (int i = n - 2; i >= 0; i--)
			sum = accum(d, v, sum, g[i]);
		free(g);
		return sum;
	}
	int total = -1;
	for (int i = n - 1; i >= 0; i--) {   /* in program order: contributions were pushed last first */
		if (g[i] < 0)
			continue;
		int sum = g[i];
		for (int j = i - 1; j >= 0; j--)
			if (g[j] >= 0 && layout_equal(&d->x->l->values[g[j]].layout, &d->x->l->values[sum].layout)) {
				sum = accum(d, v, sum, g[j]);
				g[j] = -1;
			}
		sum = lower_redistribute(d->x, sum, &want, why(d, v, "summed over the ranks that shared the value"));
		total = total < 0 ? sum : accum(d, v, total, sum);
	}
	free(g);
	return total;
}

/* The adjoint of a forward redistribution step: the gradient redistributed
 * back, then a mean's 1/n or a max's (min's) mask. */
static void adjoint_step(Diff *d, int i, int dy)
{
	Lowered *l = d->x->l;
	const LOp op = l->ops[i];
	int u = op.in[0];
	if (!d->needs[u])
		return;
	TensorLayout pad;
	bool one_matrix = op.step->from.ndev == op.step->to.ndev &&   /* a slice may change matrices: then axes differ */
	                  !memcmp(op.step->from.dev, op.step->to.dev, sizeof(int64_t) * (size_t)op.step->from.ndev);
	if (d->lazy && op.step->kind == STEP_SLICE && one_matrix &&
	    layout_on_matrix(&l->values[dy].layout, &op.step->to, &pad)) {
		/* Each rank's slice of the gradient in place, zeros around it: a partial
		 * sum over the axes the slice split (sc_strided_slice_grad), where
		 * gathering the slices would send (n-1)/n of the value. */
		uint32_t partial = pad.partial;
		pad = op.step->from;
		pad.partial = partial | (layout_busy_axes(&op.step->to) & ~layout_busy_axes(&pad));
		pad.partial_op = REDUCE_SUM_OP;
		int g = grad_value(d, u, &pad);
		LOp *o = grad_op(d, GRAD_ADJOINT, op.op, 1, g);
		o->of = i;
		o->k = 0;
		o->in[0] = dy;
		add_contrib(d, u, g);
		return;
	}
	TensorLayout want = l->values[u].layout;
	want.partial = 0;
	int g = lower_redistribute(d->x, dy, &want, why(d, u, "the adjoint of a redistribution"));
	if (memcmp(l->values[g].global, l->values[u].global, sizeof(int64_t) * (size_t)l->values[u].type.rank)) {
		/* the gradient of a gathered uneven dim's pieces, padding included, back on the pieces: the same
		 * local pieces, typed as u's (so that a later gather of it leaves the padding out) */
		Type gt = lower_global_type(&l->values[u]);
		g = lower_repad(d->x, g, &gt, why(d, u, "the adjoint of a redistribution"), "the pieces typed as the whole's");
	}
	StepKind kind = op.step->kind;
	/* a product's partials pass dy on: the ReduceProd's adjoint multiplies by the other ranks' factors */
	if ((kind == STEP_ALL_REDUCE || kind == STEP_REDUCE_SCATTER) && op.step->op != REDUCE_SUM_OP &&
	    op.step->op != REDUCE_PROD_OP) {
		int64_t n = 1;
		for (int a = 0; a < op.step->from.ndev; a++)
			if (op.step->axes & (1u << a))
				n *= op.step->from.dev[a];
		int r = grad_value(d, u, &want);
		if (op.step->op == REDUCE_MEAN_OP) {
			LOp *o = grad_op(d, GRAD_SCALE, OP_MUL, 1, r);
			o->in[0] = g;
			o->scale = 1.0 / (double)n;
		} else {   /* max, min: only the ranks holding the maximum (minimum) pass the gradient on */
			const char *what = op.step->op == REDUCE_MIN_OP ? "the minimum, to mask the gradient"
			                                                : "the maximum, to mask the gradient";
			int w = lower_redistribute(d->x, op.result, &want, why(d, u, what));
			LOp *o = grad_op(d, GRAD_MAX_MASK, OP_MAXIMUM, 3, r);
			o->in[0] = u;
			o->in[1] = w;
			o->in[2] = g;
		}
		g = r;
	}
	add_contrib(d, u, g);
}

/* The adjoint of a value sent between pipeline stages: its gradient sent
 * back, from the ranks that received it to those that sent it. */
static void adjoint_send(Diff *d, int i, int dy)
{
	int u = d->x->l->ops[i].in[0];
	if (!d->needs[u])
		return;
	d->x->stage = d->x->l->ops[i].from_stage;
	add_contrib(d, u, lower_on_stage(d->x, dy));
}

/* The ties of a ReduceMax or ReduceMin (ops[i]) whose reduced dims are
 * split: for each output element, how many elements of the whole reduced
 * extent equal the maximum (minimum), on every rank. It comes back from the
 * forward pass's completion of the partial maxima (minima) (the mask of the
 * collective's adjoint asked for the same, so it is reused); each rank counts
 * its piece's ties and an AllReduce sums the counts over the partial axes. */
static int global_ties(Diff *d, int i)
{
	Lowered *l = d->x->l;
	const LOp op = l->ops[i];
	int u = op.result;
	TensorLayout whole = l->values[u].layout, partial = whole;
	whole.partial = 0;
	partial.partial_op = REDUCE_SUM_OP;
	int done = l->values[u].reuse >= 0 ? d->x->reuse[l->values[u].reuse].result : u;
	bool min = op.op == OP_REDUCE_MIN || op.op == OP_UNSORTED_SEGMENT_MIN;
	const char *what = min ? "the minimum, to count the ties" : "the maximum, to count the ties";
	int max = lower_redistribute(d->x, done, &whole, why(d, u, what));
	Type ct = lower_global_type(&l->values[u]);
	ct.dtype = DT_F32;
	StrBuf name = {0};
	sb_printf(&name, "ties_%s", l->values[u].name);
	int c = lower_value(d->x, arena_strdup(d->x->a, name.data), &ct, &partial);
	sb_free(&name);
	bool segment = op_is_segment(op.op);   /* an UnsortedSegmentMax's (Min's) ties in each segment: by its ids */
	LOp *o = grad_op(d, GRAD_TIE_COUNT, op.op, segment ? 3 : 2, c);
	o->of = i;
	o->in[0] = op.in[0];
	o->in[1] = max;
	if (segment)
		o->in[2] = op.in[1];
	return lower_redistribute(d->x, c, &whole, why(d, u, "the ties counted over the ranks that split the reduced dims"));
}

/* The statistics a ReduceProd (ops[i]) whose reduced dims are split needs
 * for its gradient, the product of the others, safely at zeros: for each
 * output element, the product of the nonzero elements of the whole reduced
 * extent (k 0: partial products completed by an AllReduce prod) and how many
 * are zero (k 1: counts completed by an AllReduce sum), on every rank. */
static int prod_stat(Diff *d, int i, int k)
{
	Lowered *l = d->x->l;
	const LOp op = l->ops[i];
	int u = op.result;
	TensorLayout whole = l->values[u].layout, partial = whole;
	whole.partial = 0;
	partial.partial_op = k ? REDUCE_SUM_OP : REDUCE_PROD_OP;
	Type ct = lower_global_type(&l->values[u]);
	StrBuf name = {0};
	sb_printf(&name, "%s_%s", k ? "zeros" : "nonzero_prod", l->values[u].name);
	int c = lower_value(d->x, arena_strdup(d->x->a, name.data), &ct, &partial);
	sb_free(&name);
	bool segment = op_is_segment(op.op);   /* an UnsortedSegmentProd's, in each segment: by its ids */
	LOp *o = grad_op(d, GRAD_TIE_COUNT, op.op, segment ? 2 : 1, c);
	o->of = i;
	o->k = k;
	o->in[0] = op.in[0];
	if (segment)
		o->in[1] = op.in[1];
	return lower_redistribute(d->x, c, &whole, why(d, u, k ? "the zeros counted over the ranks that split the reduced dims"
	                                                       : "the nonzero factors' product over the ranks that split "
	                                                         "the reduced dims"));
}

/* The adjoint of a local operator, one gradient per input that needs one. */
static void adjoint_local(Diff *d, int i, int dy)
{
	Lowered *l = d->x->l;
	const LOp op = l->ops[i];
	if (op_is_comm(op.op)) {   /* as written in a one-device model: the identity */
		if (d->needs[op.in[0]])
			add_contrib(d, op.in[0], dy);
		return;
	}
	/* The operator's own layouts: its inputs and output on one device matrix
	 * (a value it reads may be laid out on an equal but other matrix). */
	const TensorLayout *out = op.lay ? &op.lay[op.nin] : &l->node_out[op.node];
	/* A gradient left partial (finalize, lazily) passes through when the
	 * operator's every operand holds copies on its axes: each rank's adjoint
	 * of its term, summed, is the adjoint of the sum. Else it is completed. */
	uint32_t lazy = 0;
	if (l->values[dy].layout.partial) {
		TensorLayout on;   /* dy on the operator's matrix, its partial axes numbered as the operator's */
		bool complete = !layout_on_matrix(&l->values[dy].layout, out, &on);
		lazy = complete ? 0 : on.partial;
		complete |= (layout_busy_axes(out) & lazy) != 0;
		for (int k = 0; k < op.nin; k++)
			complete |= (layout_busy_axes(op.lay ? &op.lay[k] : &l->node_in[op.node][k]) & lazy) != 0;
		if (complete) {
			TensorLayout whole = l->values[dy].layout;
			whole.partial = 0;
			dy = lower_redistribute(d->x, dy, &whole, why(d, op.result, "completed for the operator that made it"));
			lazy = 0;
		}
	}
	for (int k = 0; k < op.nin; k++) {
		int u = op.in[k];
		if (!d->needs[u] || !differentiable(l, &op, k))
			continue;
		TensorLayout gl = op.lay ? op.lay[k] : l->node_in[op.node][k];
		gl.partial = grad_partial_axes(&gl, out) | lazy;
		gl.partial_op = REDUCE_SUM_OP;
		bool picks = op.op == OP_REDUCE_MAX || op.op == OP_REDUCE_MIN || op.op == OP_UNSORTED_SEGMENT_MAX ||
		             op.op == OP_UNSORTED_SEGMENT_MIN;
		bool multiplies = op.op == OP_REDUCE_PROD || op.op == OP_UNSORTED_SEGMENT_PROD;
		bool split_pick = picks && l->values[op.result].layout.partial;
		bool split_prod = multiplies && l->values[op.result].layout.partial;
		int ties = split_pick ? global_ties(d, i) : -1;
		int prod = split_prod ? prod_stat(d, i, 0) : -1, zeros = split_prod ? prod_stat(d, i, 1) : -1;
		int g = grad_value(d, u, &gl);
		LOp *o = grad_op(d, GRAD_ADJOINT, op.op, split_pick ? 2 : split_prod ? 3 : 1, g);
		o->of = i;
		o->k = k;
		o->in[0] = dy;
		if (split_pick)
			o->in[1] = ties;
		if (split_prod)
			o->in[1] = prod, o->in[2] = zeros;
		add_contrib(d, u, g);
	}
}

/* The squared global norm of the n gradients, whole on every rank. Each rank
 * sums the squares of the gradient pieces it holds the first copy of (a
 * replicated piece counts once), so the partial sums add up to the global
 * norm's square over all ranks: one AllReduce of a scalar. */
static int squared_norm(Diff *d, int n, const char *why)
{
	Lowered *l = d->x->l;
	TensorLayout partial, whole;
	layout_replicated(0, l->device_num, &whole);
	partial = whole;
	if (l->device_num > 1)
		partial.partial = 1;   /* a sum over the one axis of every rank */
	Type st = {false, DT_F32, 0, {0}};
	d->x->stage = -1;   /* on a pipeline, every stage: each sums its own gradients' squares */
	int s = lower_value(d->x, "grad_sqnorm", &st, &partial);
	LOp *o = grad_op(d, GRAD_SQNORM, OP_SQUARE, n, s);
	for (int p = 0, k = 0; p < l->nparams; p++)
		if (l->grad[p] >= 0)
			o->in[k++] = l->grad[p];
	s = lower_redistribute(d->x, s, &whole, why);
	if (l->stages == 1)
		return s;
	LOp *sum = lower_op(d->x, OP_STAGE_SUM, 1, "the stages' squared norms summed: each rank with those at its place "
	                    "in the other stages");
	sum->in[0] = s;
	sum->bytes = redist_step_bytes(STEP_ALL_REDUCE, value_bytes(&l->values[s]), l->stages);
	l->comm_bytes += sum->bytes;
	sum->result = lower_value(d->x, "grad_sqnorm_stages", &st, &whole);
	return sum->result;
}

/* The parameters the step trains: those with a gradient. */
static int trained_params(const Lowered *l)
{
	int n = 0;
	for (int p = 0; p < l->nparams; p++)
		n += l->grad[p] >= 0;
	return n;
}

/* clip_global_norm: every gradient scaled by clip / max(global norm, clip). */
static void clip_gradients(Diff *d)
{
	Lowered *l = d->x->l;
	int n = trained_params(l);
	if (!n)
		return;
	int s = squared_norm(d, n, "the gradients' squared global norm, for clip_global_norm: summed over every rank");
	for (int p = 0; p < l->nparams; p++) {
		if (l->grad[p] < 0)
			continue;
		d->x->stage = l->values[p].stage;
		int c = grad_value(d, p, &l->values[l->grad[p]].layout);
		LOp *clip = grad_op(d, GRAD_CLIP, OP_MUL, 2, c);
		clip->in[0] = l->grad[p];
		clip->in[1] = s;
		l->grad[p] = c;
	}
}

/* Lamb's trust ratio ||w|| / ||update|| takes each norm over the whole
 * parameter, whose pieces a strategy's split or optimizer parallelism's
 * slice leaves on several ranks. Each rank sums the squares of the pieces
 * it holds the first copy of (a copy counts once), per trained parameter
 * two numbers: of the parameter and of the update it computes from the
 * gradient and its m and v (sc_lamb_norms); one AllReduce of them all over
 * every rank completes every parameter's at once, as clip_global_norm's
 * does its one number. On a pipeline each stage's ranks hold all of its
 * parameters' pieces: the AllReduce over them is enough (the other stages'
 * parameters count 0 there, the E_SQNORM table's sizes). */
static void lamb_norms(Diff *d)
{
	Lowered *l = d->x->l;
	int n = trained_params(l);
	if (!n)
		return;
	TensorLayout partial, whole;
	layout_replicated(1, l->device_num, &whole);
	partial = whole;
	if (l->device_num > 1)
		partial.partial = 1;   /* a sum over the one axis of every rank */
	Type st = {false, DT_F32, 1, {2 * (int64_t)n}};
	d->x->stage = -1;   /* on a pipeline, every stage, each over its own parameters (the others' sizes 0) */
	int s = lower_value(d->x, "lamb_norms", &st, &partial);
	LOp *o = grad_op(d, GRAD_LAMB_NORMS, OP_SQUARE, 2 * n, s);
	for (int p = 0, k = 0; p < l->nparams; p++)
		if (l->grad[p] >= 0) {
			o->in[k] = p;
			o->in[n + k++] = l->grad[p];
		}
	l->lamb_norms = lower_redistribute(d->x, s, &whole, l->stages > 1
	                                   ? "Lamb's squared norms of each parameter and of its update, for the trust "
	                                     "ratio: summed over every rank of the stage (its parameters')"
	                                   : "Lamb's squared norms of each parameter and of its update, for the trust "
	                                     "ratio: summed over every rank");
}

/* Per forward value (the program holds the forward pass only): a Cast of a
 * parameter that no other operator reads (autocast's half copy of a weight),
 * malloc'd. Its gradient is best completed in the half type; a Cast of a
 * parameter other operators read too (an embedding tied to the output
 * layer, in mixed precision) is where completing lazily merges the copy's
 * gradient into the parameter's one reduction. */
static bool *sole_copies(const Lowered *l)
{
	int *readers = xcalloc((size_t)(l->nparams ? l->nparams : 1), sizeof(int));
	bool *sole = xcalloc((size_t)l->nvalues, sizeof(bool));
	for (int i = 0; i < l->nops; i++)
		for (int k = 0; k < l->ops[i].nin; k++)
			if (l->ops[i].in[k] < l->nparams)
				readers[l->ops[i].in[k]]++;
	for (int i = 0; i < l->nops; i++) {
		const LOp *o = &l->ops[i];
		if (o->op == OP_CAST && !o->step && o->in[0] < l->nparams && readers[o->in[0]] == 1)
			sole[o->result] = true;
	}
	free(readers);
	return sole;
}

/* The backward pass, gradients completed eagerly or lazily (Diff.lazy). */
static void backward(Lowered *l, bool lazy)
{
	Lowering *x = l->lowering;
	const Graph *g = l->flat->g;
	int nv = l->nvalues, nfwd = l->nops;
	Diff d = {x, lazy, sole_copies(l), xcalloc((size_t)nv, sizeof(bool)), xmalloc(sizeof(int) * (size_t)nv), NULL,
	          NULL, 0, 0};
	for (int v = 0; v < nv; v++)
		d.head[v] = -1;
	for (int p = 0; p < l->nparams; p++)
		d.needs[p] = g->values[p].type.is_param && dtype_is_float(g->values[p].type.dtype) &&
		             !param_is_moving_stat(g, p);   /* BatchNorm updates it; no gradient, no optimizer */
	for (int i = 0; i < nfwd; i++) {
		const LOp *op = &l->ops[i];
		for (int k = 0; k < op->nin; k++)
			d.needs[op->result] |= d.needs[op->in[k]] && (op->step || differentiable(l, op, k));
	}
	if (d.needs[l->loss]) {
		x->stage = l->values[l->loss].stage;
		int seed = grad_value(&d, l->loss, &l->values[l->loss].layout);
		grad_op(&d, GRAD_SEED, OP_ADD, 0, seed);
		add_contrib(&d, l->loss, seed);
	}
	for (int i = nfwd - 1; i >= 0; i--) {
		int y = l->ops[i].result;
		if (!d.needs[y])
			continue;
		const RedistStep *step = l->ops[i].step;
		x->stage = l->ops[i].stage;
		int dy = finalize(&d, y, step && step->kind == STEP_ALL_GATHER);
		if (dy < 0)
			continue;
		if (l->ops[i].op == OP_SEND_RECV)
			adjoint_send(&d, i, dy);
		else if (l->ops[i].step)
			adjoint_step(&d, i, dy);
		else
			adjoint_local(&d, i, dy);
	}
	l->grad = arena_alloc(x->a, sizeof(int) * (size_t)(l->nparams ? l->nparams : 1));
	for (int p = 0; p < l->nparams; p++) {
		l->grad[p] = -1;
		if (!d.needs[p])
			continue;
		x->stage = l->values[p].stage;
		l->grad[p] = finalize(&d, p, false);
		if (l->grad[p] < 0) {   /* the loss does not reach it: a zero gradient, as the reference */
			l->grad[p] = grad_value(&d, p, &l->values[p].layout);
			grad_op(&d, GRAD_ZERO, OP_ADD, 0, l->grad[p]);
		}
	}
	if (l->m->train->clip_global_norm > 0)
		clip_gradients(&d);
	if (l->m->train->optimizer == OPT_LAMB)   /* of the clipped gradients, as nn.Lamb gets them */
		lamb_norms(&d);
	int n = 0;
	for (int p = 0; p < l->nparams; p++)
		n += l->grad[p] >= 0;
	if (l->m->train->precision == DT_F16 && n)   /* dynamic loss scaling: inf or NaN anywhere shows in the norm */
		l->overflow = squared_norm(&d, n, "the scaled gradients' squared global norm, for loss scaling's "
		                           "overflow check: summed over every rank");
	free(d.sole_copy);
	free(d.needs);
	free(d.head);
	free(d.cvalue);
	free(d.cnext);
}

/* Whether completing lazily can save bytes: a forward slice step carries a
 * gradient from values the ranks hold copies of (its adjoint pads instead of
 * gathering), or a parameter is read by a Cast and by other operators (its
 * half copy's gradient joins the parameter's one reduction). */
static bool lazy_may_help(const Lowered *l)
{
	bool *sole = sole_copies(l), tied = false;
	for (int i = 0; i < l->nops && !tied; i++) {
		const LOp *o = &l->ops[i];
		tied = o->op == OP_CAST && !o->step && o->in[0] < l->nparams && !sole[o->result];
	}
	free(sole);
	if (tied)
		return true;
	bool *needs = xcalloc((size_t)l->nvalues, sizeof(bool));
	bool any = false;
	for (int p = 0; p < l->nparams; p++)
		needs[p] = l->flat->g->values[p].type.is_param && dtype_is_float(l->flat->g->values[p].type.dtype) &&
		           !param_is_moving_stat(l->flat->g, p);
	for (int i = 0; i < l->nops && !any; i++) {
		const LOp *op = &l->ops[i];
		for (int k = 0; k < op->nin; k++)
			needs[op->result] |= needs[op->in[k]] && (op->step || differentiable(l, op, k));
		any = op->step && op->step->kind == STEP_SLICE && needs[op->in[0]];
	}
	free(needs);
	return any;
}

/* What the backward pass appends, to try it twice: the forward values (their
 * derived-name counters and reuse lists change), the counts and the bytes. */
typedef struct {
	LValue *values;
	int nvalues, nops, nreuse;
	int64_t comm_bytes;
} Mark;

static Mark mark(const Lowered *l)
{
	Mark m = {xmalloc(sizeof(LValue) * (size_t)l->nvalues), l->nvalues, l->nops, l->lowering->nreuse, l->comm_bytes};
	memcpy(m.values, l->values, sizeof(LValue) * (size_t)l->nvalues);
	return m;
}

static void rewind_to(Lowered *l, const Mark *m)
{
	memcpy(l->values, m->values, sizeof(LValue) * (size_t)m->nvalues);
	l->nvalues = m->nvalues;
	l->nops = m->nops;
	l->lowering->nreuse = m->nreuse;
	l->comm_bytes = m->comm_bytes;
	l->overflow = -1;
	l->lamb_norms = -1;
}

/* Eagerly, every gradient is completed at the value it belongs to (as
 * Megatron's f and g do); lazily, as MindSpore's AllReduce adjoints do, a
 * partial gradient is completed only where a value is needed whole, and a
 * slice's adjoint pads instead of gathering. Each wins on some models (a
 * Megatron layer whose loss splits the rows further: lazily the gathered
 * gradient is absorbed by the AllReduce the layer does anyway; an FFN whose
 * partial gradient would reach a parameter over more ranks: eagerly): the
 * pass keeps the one that sends fewer bytes a rank, eagerly on a tie. */
void differentiate(Lowered *l)
{
	if (!lazy_may_help(l)) {
		backward(l, false);
		return;
	}
	Mark m = mark(l);
	backward(l, true);
	int64_t lazy = l->comm_bytes;
	rewind_to(l, &m);
	backward(l, false);
	if (lazy < l->comm_bytes) {
		rewind_to(l, &m);
		backward(l, true);
	}
	free(m.values);
}
