/* lower.c: the flat global graph to one SPMD program of local operators.
 *
 * Requires strategies assigned. Every rank runs the same sequence of
 * operators on its own piece of each tensor; what differs between ranks (the
 * members of a collective's group, where a slice starts, which rows of a split
 * table a rank holds) is computed from the layouts by lowered_rank_attrs, so
 * one Lowered serves every rank: the dumps and the C emitter materialize it
 * per rank. Walking the graph in order, each operator asks for its inputs in
 * the layouts its rule needs (rules.c); when a value is laid out otherwise the
 * cheapest redistribution (redistribute.c) is inserted, each of its steps an
 * operator that records why it is there. A redistributed value is reused by
 * every later user that needs the same layout. Partial results stay partial
 * until a user needs them whole or split, so a split user gets a
 * ReduceScatter instead of an AllReduce. Returned values are completed the
 * cheapest way (a ReduceScatter when a dim can take the split: output files are
 * assembled from the ranks' pieces, so any complete layout will do). The
 * forward graph only: differentiate (autodiff.c) appends the backward pass,
 * continuing from the state kept in Lowered.lowering. */
#include "lower_internal.h"
#include "slice.h"

#include <float.h>
#include <stdlib.h>
#include <string.h>

/* `%1.1`, `%1.2`: versions of %1, counted on the value that first bore the name. */
static const char *derived_name(Lowering *x, int src)
{
	LValue *root = &x->l->values[x->l->values[src].origin];
	StrBuf b = {0};
	sb_printf(&b, "%s.%d", root->name, ++root->nderived);
	const char *s = arena_strdup(x->a, b.data);
	sb_free(&b);
	return s;
}

static const char *step_what(const RedistStep *s)
{
	switch (s->kind) {
	case STEP_ALL_REDUCE: return "partial results made whole";
	case STEP_REDUCE_SCATTER: return "partial results reduced straight into a split";
	case STEP_ALL_GATHER: return "a split gathered";
	case STEP_ALL_TO_ALL: return "a split moved to another dim";
	case STEP_SLICE: return "each rank keeps its slice (no communication)";
	}
	return "";
}

int lower_repad(Lowering *x, int v, const Type *gt, const char *user, const char *what)
{
	StrBuf why = {0};
	sb_printf(&why, "%s: %s", user, what);
	LOp *o = lower_op(x, OP_STRIDED_SLICE, 1, arena_strdup(x->a, why.data));
	sb_free(&why);
	o->in[0] = v;
	TensorLayout *lay = arena_alloc(x->a, 2 * sizeof *lay);   /* its input's and result's, for the adjoint */
	lay[0] = lay[1] = x->l->values[v].layout;
	o->lay = lay;
	o->result = lower_value(x, derived_name(x, v), gt, &lay[1]);
	const LValue *y = &x->l->values[o->result];
	x->l->values[o->result].origin = x->l->values[v].origin;
	Attrs *a = &o->a;
	a->nbegin = a->nend = a->nstrides = gt->rank;
	for (int d = 0; d < gt->rank; d++) {
		a->begin[d] = 0;
		a->end[d] = y->type.dims[d];
		a->strides[d] = 1;
		a->pad |= a->end[d] > x->l->values[v].type.dims[d];
	}
	a->present = ATTR_BIT(ATTR_BEGIN) | ATTR_BIT(ATTR_END) | ATTR_BIT(ATTR_STRIDES) | (a->pad ? ATTR_BIT(ATTR_PAD) : 0);
	return o->result;
}

/* t with dim d padded to a multiple of its split under l: the pieces end to end. */
static Type padded_type(const Type *t, const TensorLayout *l, int d)
{
	Type p = *t;
	p.dims[d] = layout_piece_len(l, t->dims, d) * layout_dim_split(l, d);
	return p;
}

int lower_redistribute(Lowering *x, int src, const TensorLayout *want, const char *user)
{
	const TensorLayout to_copy = *want, *to = &to_copy;   /* want may lie in the values that grow below */
	for (int i = x->l->values[src].reuse; i >= 0; i = x->reuse[i].next)   /* on this stage (a constant's: any) */
		if (layout_equal(&x->reuse[i].to, to) &&
		    (x->l->values[x->reuse[i].result].stage == x->stage || x->l->values[x->reuse[i].result].stage < 0))
			return x->reuse[i].result;
	RedistPlan plan;
	Type gt;
	{   /* v only here: the steps below grow the values array it points into */
		const LValue *v = &x->l->values[src];
		if (layout_equal(&v->layout, to))
			return src;
		gt = lower_global_type(v);
		redist_plan_kept(x->plans, &v->layout, to, v->global, dtype_bytes(v->type.dtype), &plan);
	}
	int cur = src;
	for (int k = 0; k < plan.n; k++) {
		const RedistStep *s = &plan.step[k];
		/* An uneven dim a collective scatters into (ReduceScatter's, AllToAll's
		 * split dim), whole before it: padded first, so the pieces are even. */
		int into = s->kind == STEP_REDUCE_SCATTER ? s->dim : s->kind == STEP_ALL_TO_ALL ? s->dim2 : -1;
		int in0 = cur;
		if (into >= 0 && layout_uneven(&s->to, gt.dims, into)) {
			Type pin = padded_type(&gt, &s->to, into);
			cur = lower_repad(x, cur, &pin, user, "padded for the scatter");
		}
		RedistStep *keep = arena_alloc(x->a, sizeof *keep);
		*keep = *s;
		static const OpKind kinds[] = {OP_ALL_REDUCE, OP_REDUCE_SCATTER, OP_ALL_GATHER, OP_ALL_TO_ALL,
		                               OP_STRIDED_SLICE};
		StrBuf why = {0}, lf = {0}, lt = {0};
		layout_print(&lf, &s->from);
		layout_print(&lt, &s->to);
		sb_printf(&why, "%s: %s; %s => %s", user, step_what(s), lf.data, lt.data);
		LOp *o = lower_op(x, kinds[s->kind], 1, arena_strdup(x->a, why.data));
		sb_free(&why);
		sb_free(&lf);
		sb_free(&lt);
		o->in[0] = cur;
		o->step = keep;
		o->bytes = s->bytes;
		if (cur != in0) {   /* padded: the padding travels too */
			int64_t members = 1;
			for (int a = 0; a < s->from.ndev; a++)
				if (s->axes & (1u << a))
					members *= s->from.dev[a];
			o->bytes = keep->bytes = redist_step_bytes(s->kind, value_bytes(&x->l->values[cur]), members);
		}
		Attrs *a = &o->a;
		switch (s->kind) {
		case STEP_ALL_REDUCE:
			a->reduce_op = s->op;
			a->present = ATTR_BIT(ATTR_REDUCE_OP) | ATTR_BIT(ATTR_GROUP);
			break;
		case STEP_REDUCE_SCATTER:
			a->reduce_op = s->op;
			a->has_axis = true, a->naxes = 1, a->axes[0] = s->dim;
			a->present = ATTR_BIT(ATTR_REDUCE_OP) | ATTR_BIT(ATTR_AXIS) | ATTR_BIT(ATTR_GROUP);
			break;
		case STEP_ALL_GATHER:
			a->has_axis = true, a->naxes = 1, a->axes[0] = s->dim;
			a->present = ATTR_BIT(ATTR_AXIS) | ATTR_BIT(ATTR_GROUP);
			break;
		case STEP_ALL_TO_ALL:
			a->split_axis = s->dim2;
			a->concat_axis = s->dim;
			a->present = ATTR_BIT(ATTR_SPLIT_AXIS) | ATTR_BIT(ATTR_CONCAT_AXIS) | ATTR_BIT(ATTR_GROUP);
			break;
		case STEP_SLICE:
			a->nbegin = a->nend = a->nstrides = gt.rank;
			for (int d = 0; d < gt.rank; d++)
				a->strides[d] = 1;
			a->present = ATTR_BIT(ATTR_BEGIN) | ATTR_BIT(ATTR_END) | ATTR_BIT(ATTR_STRIDES);
			break;
		}
		const char *name = derived_name(x, src);
		/* An uneven dim gathered (AllGather's, AllToAll's concat dim): the
		 * pieces end to end, padding included, then cut to the whole. */
		bool gathered = (s->kind == STEP_ALL_GATHER || s->kind == STEP_ALL_TO_ALL) &&
		                layout_uneven(&s->from, gt.dims, s->dim);
		Type pt = gathered ? padded_type(&gt, &s->from, s->dim) : gt;
		o->result = lower_value(x, name, &pt, &s->to);
		x->l->values[o->result].origin = x->l->values[src].origin;
		x->l->comm_bytes += o->bytes;
		cur = o->result;
		if (gathered)
			cur = lower_repad(x, cur, &gt, user, "the gathered pieces' padding left out");
	}
	Reuse *r = ARENA_PUSH(x->a, x->reuse, x->nreuse, x->cap_reuse);
	*r = (Reuse){*to, cur, x->l->values[src].reuse};
	x->l->values[src].reuse = x->nreuse - 1;
	return cur;
}

int lower_on_stage(Lowering *x, int v)
{
	int from = x->l->values[v].stage;
	if (from == x->stage || from < 0)   /* -1: every stage holds it */
		return v;
	for (int k = x->l->values[v].sent; k >= 0; k = x->sent[k].next)
		if (x->sent[k].stage == x->stage)
			return x->sent[k].result;
	StrBuf why = {0};
	sb_printf(&why, "%%%s sent from pipeline stage %d to stage %d: each rank to the one at its place there",
	          x->l->values[v].name, from, x->stage);
	LOp *o = lower_op(x, OP_SEND_RECV, 1, arena_strdup(x->a, why.data));
	sb_free(&why);
	o->in[0] = v;
	o->from_stage = from;
	o->bytes = value_bytes(&x->l->values[v]);
	Type gt = lower_global_type(&x->l->values[v]);
	TensorLayout lay = x->l->values[v].layout;
	o->result = lower_value(x, derived_name(x, v), &gt, &lay);
	x->l->values[o->result].origin = x->l->values[v].origin;
	x->l->comm_bytes += o->bytes;
	Sent *s = ARENA_PUSH(x->a, x->sent, x->nsent, x->cap_sent);
	*s = (Sent){x->stage, o->result, x->l->values[v].sent};
	x->l->values[v].sent = x->nsent - 1;
	return o->result;
}

/* ---- Reshape: carry the input's split through when the pieces line up ---- */

/* Dims of `in` and `out` fall into groups with equal products, in order. A
 * rank's piece of a group is one contiguous run of the group's elements when
 * the dims before the last split one are cut to single rows and the ones
 * after it are whole; the output group then takes the same axes, filling its
 * dims from the most significant, each axis wholly inside one dim. A dim
 * kept as it is keeps its split, even or uneven; a regrouped dim split
 * unevenly does not carry (its padding would land amid the group's
 * elements). False when some group's piece is not a run or the axes do not
 * fit the output dims; bad[] then marks the input dims of those groups. */
bool carry_reshape(const TensorLayout *in, const int64_t *idims, const Type *out_t, TensorLayout *out,
                          bool *bad)
{
	int ri = in->rank, ro = out_t->rank;
	const int64_t *odims = out_t->dims;
	*out = *in;
	out->rank = ro;
	memset(out->nmap, 0, sizeof out->nmap);
	bool ok = true;
	for (int i = 0, j = 0; i < ri || j < ro;) {
		int i0 = i, j0 = j;
		int64_t pi = i < ri ? idims[i++] : 1, pj = j < ro ? odims[j++] : 1;
		while (pi != pj) {
			if (pi < pj && i < ri)
				pi *= idims[i++];
			else if (j < ro)
				pj *= odims[j++];
			else
				break;
		}
		if (i - i0 == 1 && j - j0 == 1) {   /* a dim kept as it is keeps its split, even or uneven */
			out->nmap[j0] = in->nmap[i0];
			memcpy(out->map[j0], in->map[i0], sizeof out->map[j0]);
			continue;
		}
		int last = -1;
		bool group_ok = true;
		for (int d = i0; d < i; d++) {
			if (in->nmap[d])
				last = d;
			group_ok &= !in->nmap[d] || !layout_uneven(in, idims, d);   /* padding would land amid the group */
		}
		for (int d = i0; d < last; d++)
			group_ok &= idims[d] == 1 || layout_dim_split(in, d) == idims[d];
		int8_t axes[MAX_AXES];
		int nax = 0;
		for (int d = i0; d <= last; d++)
			for (int k = 0; k < in->nmap[d]; k++)
				axes[nax++] = in->map[d][k];
		int next = 0;
		for (int d = j0; d < j && group_ok && next < nax; d++) {
			int64_t room = odims[d], used = 1;
			while (next < nax && room % (used * in->dev[axes[next]]) == 0) {
				used *= in->dev[axes[next]];
				out->map[d][out->nmap[d]++] = axes[next++];
				if (used == room)
					break;
			}
			if (next < nax && used != room)
				group_ok = false;   /* an axis would straddle two output dims */
		}
		group_ok &= next == nax;
		if (!group_ok) {
			ok = false;
			for (int d = i0; d < i; d++)
				bad[d] = true;
		}
	}
	return ok;
}

/* The values array grows under lower_value and lower_redistribute: what is
 * needed of a value across those calls is copied out, or fetched again by id. */
static void lower_reshape(Lowering *x, int i)
{
	const Graph *g = x->l->flat->g;
	const Node *n = &g->nodes[i];
	int src = lower_on_stage(x, x->vmap[n->in[0]]);
	const Type *out_t = &g->values[n->result].type;
	int64_t global[MAX_DIMS];
	memcpy(global, x->l->values[src].global, sizeof global);
	TensorLayout in = x->l->values[src].layout, out;
	bool bad[MAX_DIMS] = {0};
	const char *user = NULL;
	if (!carry_reshape(&in, global, out_t, &out, bad)) {
		for (int d = 0; d < in.rank; d++)
			if (bad[d])
				in.nmap[d] = 0;   /* those axes now hold copies: gather them */
		in.partial = 0;           /* and partial results are completed first */
		StrBuf b = {0};
		sb_printf(&b, "%%%s to Reshape %%%s: its split does not survive the reshape", x->l->values[src].name,
		          g->values[n->result].name);
		user = arena_strdup(x->a, b.data);
		sb_free(&b);
		src = lower_redistribute(x, src, &in, user);
		memset(bad, 0, sizeof bad);
		if (!carry_reshape(&in, global, out_t, &out, bad))
			die("an unsplit reshape group does not carry");
	}
	x->l->node_in[i][0] = in;
	x->l->node_out[i] = out;
	LOp *o = lower_op(x, OP_RESHAPE, 1, NULL);
	o->node = i;
	o->in[0] = src;
	o->result = lower_value(x, g->values[n->result].name, out_t, &out);
	o->a.nshape = out_t->rank;
	memcpy(o->a.shape, x->l->values[o->result].type.dims, sizeof o->a.shape);
	o->a.present = ATTR_BIT(ATTR_SHAPE);
	x->vmap[n->result] = o->result;
}

/* ---- computing operators ---- */

/* The node's attributes as the local operator takes them. */
static void local_attrs(const Node *n, const NodeStrategy *ns, const LValue *in0, Attrs *a)
{
	*a = n->a;
	a->present &= ~(ATTR_BIT(ATTR_IN_STRATEGY) | ATTR_BIT(ATTR_OUT_STRATEGY) | ATTR_BIT(ATTR_RECOMPUTE) |
	                ATTR_BIT(ATTR_PIPELINE_STAGE));
	memset(&a->in_strategy, 0, sizeof a->in_strategy);
	memset(&a->out_strategy, 0, sizeof a->out_strategy);
	if (n->op == OP_FLASH_ATTENTION)   /* the rank's heads: q's head dim on this rank (BSH: its hidden dim / D) */
		a->head_num = a->input_layout == FA_BNSD ? in0->type.dims[1] : a->input_layout == FA_BSND ? in0->type.dims[2]
		              : in0->type.dims[2] / (in0->global[2] / n->a.head_num);
	if (op_slices(n->op)) {   /* Split, Slice: their slice (shape_slice.c) */
		SliceForm f;
		if (slice_form(&n->a, in0->global, in0->type.rank, &f) != SLICE_OK)
			die("lower: a StridedSlice shape.c did not take");
		for (int d = 0; d < in0->type.rank; d++)
			if (layout_dim_split(&in0->layout, d) > 1 && f.entry[d] >= 0) {   /* uncut (rules.c): the local range */
				int e = f.entry[d];   /* the entry slicing dim d (its masks say whole too) */
				a->begin[e] = 0;
				a->end[e] = in0->type.dims[d];
				a->strides[e] = 1;
				if (n->op == OP_SLICE)   /* its size, printed */
					a->shape[e] = in0->type.dims[d];
			}
	}
	int v = n->op == OP_GATHER || n->op == OP_EMBEDDING_LOOKUP ? ns->od->in_dim[0][gather_axis(&n->a, ns->od->in_rank[0])]
	        : n->op == OP_GATHER_D ? ns->od->in_dim[0][n->a.dim < 0 ? n->a.dim + ns->od->in_rank[0] : n->a.dim] : -1;
	if (v >= 0 && ns->split->split[v] > 1)   /* the table split along its axis */
		a->present |= ATTR_BIT(ATTR_OFFSET);
}

static const char *user_text(Lowering *x, const Node *n, int k)
{
	const Graph *g = x->l->flat->g;
	StrBuf b = {0};
	sb_printf(&b, "%%%s to %s %%%s input %d", g->values[n->in[k]].name, op_info[n->op].name,
	          g->values[n->result].name, k);
	const char *s = arena_strdup(x->a, b.data);
	sb_free(&b);
	return s;
}

/* ---- statistics: an operator split along the axis it normalizes ----
 *
 * Softmax, LogSoftmax, the normalizers, L2Normalize and the cross-entropies whose
 * normalized axis is split (rules.c, od->normalized) are lowered as a
 * few local pieces: each rank computes its slice's statistic (a row maximum,
 * sum or mean), a partial value over the axes that split the axis, and the
 * ordinary redistribution completes it (an AllReduce of one element a row),
 * so those collectives are priced, counted, dumped and emitted as every
 * other (docs/operators.md, "Statistics across a split axis"). The backward
 * pass differentiates the pieces; the maximum only shifts the exponentials,
 * so it carries no gradient. */

typedef struct {
	Lowering *x;
	int node;
	const Node *n;
	const int *ins;          /* the operator's inputs, laid out as node_in */
	TensorLayout row;        /* the input's layout with the normalized dims whole: a statistic */
	uint32_t axes;           /* the device axes splitting the normalized dims */
	Type xt, rowt;           /* global types: the input, a statistic (normalized dims 1) */
	int64_t axis[MAX_DIMS];  /* the normalized dims */
	int naxis;
	int known[16];           /* the pieces' values, with their layouts on the operator's matrix (a */
	TensorLayout known_lay[16]; /* redistribution may leave an equal layout on another matrix) */
	int nknown;
} Stats;

static void stat_known(Stats *s, int v, const TensorLayout *l)
{
	if (s->nknown == (int)(sizeof s->known / sizeof s->known[0]))
		die("too many pieces in one operator's lowering");
	s->known[s->nknown] = v;
	s->known_lay[s->nknown++] = *l;
}

static const char *stat_text(Stats *s, const char *fmt, const char *what)
{
	const Graph *g = s->x->l->flat->g;
	StrBuf b = {0};
	sb_printf(&b, fmt, op_info[s->n->op].name, g->values[s->n->result].name, what);
	const char *t = arena_strdup(s->x->a, b.data);
	sb_free(&b);
	return t;
}

/* A local piece of the operator: op over in[] into a new value. */
static int stat_piece(Stats *s, OpKind op, int nin, const int *in, const Type *t, const TensorLayout *out,
                      const char *name, const char *why)
{
	Lowered *l = s->x->l;
	TensorLayout *lay = arena_alloc(s->x->a, sizeof(TensorLayout) * (size_t)(nin + 1));
	for (int k = 0; k < nin; k++) {
		lay[k] = l->values[in[k]].layout;
		for (int j = 0; j < s->nknown; j++)
			if (in[k] == s->known[j])
				lay[k] = s->known_lay[j];
		for (int j = 0; j < s->n->nin; j++)
			if (in[k] == s->ins[j])
				lay[k] = l->node_in[s->node][j];   /* the operator's own matrix */
	}
	lay[nin] = *out;
	int r = lower_value(s->x, name, t, out);
	stat_known(s, r, out);
	LOp *o = lower_op(s->x, op, nin, why);
	o->node = s->node;
	memcpy(o->in, in, sizeof(int) * (size_t)nin);
	o->result = r;
	o->lay = lay;
	return r;
}

/* The slice's statistic of `v` (ReduceMax, ReduceSum or ReduceMean over the
 * normalized dims, kept), completed over the group. */
static int stat_reduce(Stats *s, OpKind op, int v, const char *suffix, const char *what)
{
	const Graph *g = s->x->l->flat->g;
	TensorLayout partial = s->row;
	partial.partial = s->axes;
	partial.partial_op = op == OP_REDUCE_MAX ? REDUCE_MAX_OP : op == OP_REDUCE_MEAN ? REDUCE_MEAN_OP : REDUCE_SUM_OP;
	StrBuf name = {0};
	sb_printf(&name, "%s.%s", g->values[s->n->result].name, suffix);
	int r = stat_piece(s, op, 1, &v, &s->rowt, &partial, arena_strdup(s->x->a, name.data),
	                   stat_text(s, "%s %%%s split along its normalized axis: %s of this rank's slice", what));
	sb_free(&name);
	LOp *o = &s->x->l->ops[s->x->l->nops - 1];
	o->a.has_axis = true;
	o->a.axis_is_tuple = s->naxis > 1;
	o->a.naxes = s->naxis;
	memcpy(o->a.axes, s->axis, sizeof o->a.axes);
	o->a.keep_dims = true;
	o->a.present = ATTR_BIT(ATTR_AXIS) | ATTR_BIT(ATTR_KEEP_DIMS);
	int c = lower_redistribute(s->x, r, &s->row, stat_text(s, "%s %%%s: %s, over the ranks that split the axis", what));
	stat_known(s, c, &s->row);
	return c;
}

static const char *stat_name(Stats *s, const char *suffix)
{
	return lower_suffixed_name(s->x, s->x->l->flat->g->values[s->n->result].name, suffix);
}

/* x (laid out `in`) with the padding of each unevenly split normalized dim
 * (docs/language.md, Uneven splits) set to `fill`: the lowest float before a
 * softmax's maximum (it moves none, its exponential is 0, and so is its
 * softmax and its gradient), 0 before a normalizer's means. */
static int mask_padding(Stats *s, int x, const TensorLayout *in, double fill)
{
	const LValue *v = &s->x->l->values[x];
	for (int k = 0; k < s->naxis; k++) {
		int d = s->axis[k];
		if (!layout_uneven(in, v->global, d))
			continue;
		x = stat_piece(s, OP_PAD_FILL, 1, &x, &s->xt, in, stat_name(s, fill ? "masked" : "zeroed"),
		               stat_text(s, "%s %%%s split unevenly along its normalized axis: %s",
		                         fill ? "the padding of this rank's slice made the lowest float"
		                              : "the padding of this rank's slice made 0"));
		lower_pad_fill_attrs(&s->x->l->ops[s->x->l->nops - 1].a, d, fill);
		v = &s->x->l->values[x];
	}
	return x;
}

/* x0 in Float32 for its statistics: a half x's summed in Float32, as the whole operator's kernel sums them. */
static int stat_wide(Stats *s, int x0, const TensorLayout *in)
{
	if (!dtype_is_half(s->xt.dtype))
		return x0;
	s->xt.dtype = s->rowt.dtype = DT_F32;
	int wide = stat_piece(s, OP_CAST, 1, &x0, &s->xt, in, stat_name(s, "wide"), NULL);
	s->x->l->ops[s->x->l->nops - 1].a = (Attrs){.dtype = DT_F32, .present = ATTR_BIT(ATTR_DTYPE)};
	return wide;
}

/* The operator's attributes on a piece: its own, no strategy. */
static void piece_attrs(LOp *o, const Attrs *a)
{
	o->a = *a;
	o->a.present &= ~(ATTR_BIT(ATTR_IN_STRATEGY) | ATTR_BIT(ATTR_OUT_STRATEGY) | ATTR_BIT(ATTR_RECOMPUTE) |
	                  ATTR_BIT(ATTR_PIPELINE_STAGE));
	memset(&o->a.in_strategy, 0, sizeof o->a.in_strategy);
	memset(&o->a.out_strategy, 0, sizeof o->a.out_strategy);
}

/* CumSum and CumProd with the scanned axis split into k even slices: each
 * slice's total (a ReduceSum or ReduceProd kept, one element a slice of
 * the axis, k of them in the whole; Float32 whatever x's type), gathered
 * over the ranks that split the axis (an AllGather), and a piece scanning
 * the rank's slice from the totals of the slices before it (after it,
 * reverse); its offset, the slice's first element along the axis
 * (lowered_rank_attrs), says which. */
static int lower_scan(Stats *s, int x0, const TensorLayout *in, const Type *yt, const TensorLayout *out, const char *y)
{
	Lowered *l = s->x->l;
	int axis = (int)s->axis[0];
	Type tt = s->xt;
	tt.dims[axis] = l->st->node[s->node].split->split[axis];
	int wide = x0;
	if (tt.dtype != DT_F32) {   /* a half x's totals in Float32, as the one-device scan accumulates */
		Type wt = s->xt;
		wt.dtype = tt.dtype = DT_F32;
		wide = stat_piece(s, OP_CAST, 1, &x0, &wt, in, stat_name(s, "wide"), stat_text(s, "%s %%%s split along its "
		                  "scanned axis: %s", "this rank's slice in Float32, for its total"));
		LOp *c = &l->ops[l->nops - 1];
		c->a.dtype = DT_F32;
		c->a.present = ATTR_BIT(ATTR_DTYPE);
	}
	int t = stat_piece(s, s->n->op == OP_CUMSUM ? OP_REDUCE_SUM : OP_REDUCE_PROD, 1, &wide, &tt, in,
	                   stat_name(s, "total"), stat_text(s, "%s %%%s split along its scanned axis: %s",
	                                                    "the total of this rank's slice"));
	LOp *o = &l->ops[l->nops - 1];
	o->a.has_axis = true;
	o->a.naxes = 1;
	o->a.axes[0] = axis;
	o->a.keep_dims = true;
	o->a.present = ATTR_BIT(ATTR_AXIS) | ATTR_BIT(ATTR_KEEP_DIMS);
	TensorLayout whole = *in;
	whole.nmap[axis] = 0;
	int g = lower_redistribute(s->x, t, &whole, stat_text(s, "%s %%%s: %s, over the ranks that split the scanned axis",
	                                                      "every slice's total"));
	stat_known(s, g, &whole);
	int r = stat_piece(s, s->n->op, 2, (int[]){x0, g}, yt, out, y, NULL);
	o = &l->ops[l->nops - 1];
	piece_attrs(o, &s->n->a);
	o->a.present |= ATTR_BIT(ATTR_OFFSET);
	TensorLayout *tab = arena_alloc(s->x->a, sizeof *tab);
	*tab = *in;
	o->table = tab;
	return r;
}

/* Softmax, LogSoftmax, the cross-entropy and the normalizers when an op dim of
 * od->normalized is split; ins the inputs in the operator's layouts, out its
 * output's. Returns the result. The cross-entropy's last piece takes the
 * completed statistics and the slice's first class (its offset): the rank
 * whose slice holds a row's label contributes that row's loss (docs/operators.md). */
static int lower_normalized(Lowering *x, int i, const int *ins, const TensorLayout *out)
{
	Lowered *l = x->l;
	const Graph *g = l->flat->g;
	const Node *n = &g->nodes[i];
	const NodeStrategy *ns = &l->st->node[i];
	const TensorLayout in = l->node_in[i][0];
	Stats s = {x, i, n, ins, in, 0, lower_global_type(&l->values[ins[0]]), {0}, {0}, 0, {0}, {{0}}, 0};
	for (int o = 0; o < ns->od->nod; o++)
		if (ns->od->normalized & (1u << o)) {
			s.axis[s.naxis++] = o;
			s.row.nmap[o] = 0;
			for (int k = 0; k < ns->split->nax[o]; k++)
				s.axes |= 1u << ns->split->ax[o][k];
		}
	s.rowt = s.xt;
	for (int k = 0; k < s.naxis; k++)
		s.rowt.dims[s.axis[k]] = 1;
	const char *y = g->values[n->result].name;
	const Type *yt = &g->values[n->result].type;
	int x0 = ins[0];
	if (n->op == OP_L2_NORMALIZE) {   /* the sums of squares completed, then a piece normalizing the slice */
		x0 = mask_padding(&s, x0, &in, 0);
		int sq = stat_piece(&s, OP_SQUARE, 1, (int[]){stat_wide(&s, x0, &in)}, &s.xt, &in, stat_name(&s, "squared"), NULL);
		int sum = stat_reduce(&s, OP_REDUCE_SUM, sq, "sumsq", "the sums of squares");
		int r = stat_piece(&s, OP_L2_NORMALIZE, 2, (int[]){x0, sum}, yt, out, y, NULL);
		LOp *o = &l->ops[l->nops - 1];
		o->a.present = ATTR_BIT(ATTR_AXIS) | ATTR_BIT(ATTR_EPSILON);
		o->a.has_axis = true;
		o->a.naxes = 1;
		o->a.axes[0] = s.axis[0];
		o->a.epsilon = n->a.epsilon;
		return r;
	}
	if (op_is_norm(n->op) || n->op == OP_BATCH_NORM) {   /* the rows' (channels') statistics, then a piece */
		int piece[7], nin = op_info[n->op].min_inputs, sq;
		memcpy(piece, ins, sizeof(int) * (size_t)nin);   /* x, gamma, beta; BatchNorm's moving mean, variance */
		/* uneven: x and the squares 0 in the padding (the means count the whole's elements; x's gradient 0 there) */
		piece[0] = x0 = mask_padding(&s, x0, &in, 0);
		x0 = n->op == OP_BATCH_NORM ? stat_wide(&s, x0, &in) : x0;   /* a half x's statistics in Float32 */
		if (norm_centered(n->op) || n->op == OP_BATCH_NORM) {   /* the mean; the variance: the centered mean square */
			int mean = stat_reduce(&s, OP_REDUCE_MEAN, x0, "mean", "the row means");
			int c = stat_piece(&s, OP_SUB, 2, (int[]){x0, mean}, &s.xt, &in, stat_name(&s, "centered"), NULL);
			sq = stat_piece(&s, OP_SQUARE, 1, &c, &s.xt, &in, stat_name(&s, "squared"), NULL);
			sq = mask_padding(&s, sq, &in, 0);
			piece[nin++] = mean;
			piece[nin++] = stat_reduce(&s, OP_REDUCE_MEAN, sq, "var", "the row variances");
		} else {
			sq = stat_piece(&s, OP_SQUARE, 1, &x0, &s.xt, &in, stat_name(&s, "squared"), NULL);
			sq = mask_padding(&s, sq, &in, 0);
			piece[nin++] = stat_reduce(&s, OP_REDUCE_MEAN, sq, "meansq", "the row mean squares");
		}
		int r = stat_piece(&s, n->op, nin, piece, yt, out, y, NULL);
		piece_attrs(&l->ops[l->nops - 1], &n->a);
		return r;
	}
	if (n->op == OP_CUMSUM || n->op == OP_CUMPROD)
		return lower_scan(&s, x0, &in, yt, out, y);
	x0 = mask_padding(&s, x0, &in, -FLT_MAX);
	int m = stat_reduce(&s, OP_REDUCE_MAX, x0, "max", "the row maxima");
	int z = stat_piece(&s, OP_SUB, 2, (int[]){x0, m}, &s.xt, &in, stat_name(&s, "shifted"), NULL);
	l->ops[l->nops - 1].nograd = 1u << 1;
	int e = stat_piece(&s, OP_EXP, 1, &z, &s.xt, &in, stat_name(&s, "exp"), NULL);
	int sum = stat_reduce(&s, OP_REDUCE_SUM, e, "sum", "the row sums of the exponentials");
	if (n->op == OP_SOFTMAX)
		return stat_piece(&s, OP_DIV, 2, (int[]){e, sum}, yt, out, y, NULL);
	if (n->op == OP_LOG_SOFTMAX) {
		int ls = stat_piece(&s, OP_LOG, 1, &sum, &s.rowt, &s.row, stat_name(&s, "logsum"), NULL);
		return stat_piece(&s, OP_SUB, 2, (int[]){z, ls}, yt, out, y, NULL);
	}
	if (n->op == OP_SOFTMAX_CE) {   /* each row's loss over the slice (labels 0 in its padding), summed */
		TensorLayout part = *out;
		part.partial = s.axes;
		part.partial_op = REDUCE_SUM_OP;
		int lab = mask_padding(&s, ins[1], &l->node_in[i][1], 0);
		int r = stat_piece(&s, OP_SOFTMAX_CE, 4, (int[]){x0, lab, m, sum}, yt, &part, y,
		                   stat_text(&s, "%s %%%s split along the classes: %s", "each row's loss over this "
		                             "rank's classes"));
		l->ops[l->nops - 1].nograd = 1u << 1 | 1u << 2 | 1u << 3;
		r = lower_redistribute(x, r, out, stat_text(&s, "%s %%%s: %s, over the ranks that split the classes",
		                                            "the rows' losses"));
		stat_known(&s, r, out);
		return r;
	}
	{   /* the cross-entropy: each row's loss, summed over the slices, then their mean */
		Type rt = s.xt;
		rt.rank = 1;
		TensorLayout rows = in, part, mean = in;
		rows.rank = 1;
		rows.nmap[1] = 0;
		rows.partial = 0;
		part = rows;
		part.partial = s.axes;
		part.partial_op = REDUCE_SUM_OP;
		int r = stat_piece(&s, OP_SPARSE_SOFTMAX_CE, 4, (int[]){x0, ins[1], m, sum}, &rt, &part, stat_name(&s, "rows"),
		                   stat_text(&s, "%s %%%s split along the classes: %s", "each row's loss on the rank "
		                             "whose classes hold its label, 0 on the others"));
		LOp *o = &l->ops[l->nops - 1];
		o->nograd = 1u << 1 | 1u << 2 | 1u << 3;
		o->a.present = ATTR_BIT(ATTR_OFFSET);
		TensorLayout *t = arena_alloc(x->a, sizeof *t);
		*t = in;
		o->table = t;
		r = lower_redistribute(x, r, &rows, stat_text(&s, "%s %%%s: %s, over the ranks that split the classes",
		                                              "the rows' losses"));
		stat_known(&s, r, &rows);
		mean.rank = 0;
		mean.nmap[0] = mean.nmap[1] = 0;
		mean.partial = 0;
		for (int k = 0; k < in.nmap[0]; k++)
			mean.partial |= 1u << in.map[0][k];
		mean.partial_op = REDUCE_MEAN_OP;
		l->node_out[i] = mean;
		r = lower_fill_uneven(x, s.node, r, (const int64_t[]){0}, 1, 0,
		                 stat_text(&s, "%s %%%s split unevenly along its rows: %s", "the rows' losses"));
		int res = stat_piece(&s, OP_REDUCE_MEAN, 1, &r, yt, &mean, y, NULL);
		o = &l->ops[l->nops - 1];
		o->a.has_axis = true;
		o->a.naxes = 1;
		o->a.present = ATTR_BIT(ATTR_AXIS);
		return res;
	}
}

/* Input 0's layout `in` with the op dims od->gathered names whole (rules.c:
 * the axis ArgMaxWithValue picks along): a strategy splitting them leaves
 * the redistribution into it to gather them. */
static void gather_picked(const OpDims *od, TensorLayout *in)
{
	for (int d = 0; d < in->rank; d++)
		if (od->in_dim[0][d] >= 0 && (od->gathered & (1u << od->in_dim[0][d])))
			in->nmap[d] = 0;
}

static void lower_node(Lowering *x, int i)
{
	Lowered *l = x->l;
	x->stage = x->l->node_stage[i];
	const Graph *g = l->flat->g;
	const Node *n = &g->nodes[i];
	const NodeStrategy *ns = &l->st->node[i];
	const Type *out_t = &g->values[n->result].type;
	LOp *o;
	if (!ns->has_dims && n->op == OP_RESHAPE) {
		lower_reshape(x, i);
		return;
	}
	int *ins = arena_alloc(x->a, sizeof(int) * (size_t)(n->nin ? n->nin : 1));
	TensorLayout out;
	if (!ns->has_dims) {   /* a collective written in a one-device model: as written */
		for (int k = 0; k < n->nin; k++)
			ins[k] = lower_on_stage(x, x->vmap[n->in[k]]);
		layout_replicated(out_t->rank, 1, &out);
	} else {
		for (int k = 0; k < n->nin; k++) {
			op_in_layout(ns->od, ns->split, k, &l->node_in[i][k]);
			if (k == 0 && ns->od->gathered)
				gather_picked(ns->od, &l->node_in[i][0]);
			ins[k] = lower_redistribute(x, lower_on_stage(x, x->vmap[n->in[k]]), &l->node_in[i][k], user_text(x, n, k));
		}
		op_out_layout(ns->od, ns->split, &out);
	}
	l->node_out[i] = out;
	if (ns->has_dims && ns->od->normalized) {
		bool split = false;
		for (int d = 0; d < ns->od->nod; d++)
			split |= (ns->od->normalized & (1u << d)) && ns->split->split[d] > 1;
		/* the cross-entropy's rows split unevenly: their mean leaves the padding out (lower_normalized) */
		split |= n->op == OP_SPARSE_SOFTMAX_CE && ns->od->size[0] % ns->split->split[0] != 0;
		if (split) {
			int r = lower_normalized(x, i, ins, &out);
			x->vmap[n->result] = r;
			if (ns->has_out_strategy) {
				StrBuf b = {0};
				sb_printf(&b, "out_strategy of %s %%%s", op_info[n->op].name, g->values[n->result].name);
				x->vmap[n->result] = lower_redistribute(x, r, ns->delivered, arena_strdup(x->a, b.data));
				sb_free(&b);
			}
			return;
		}
	}
	lower_fill_operands(x, i, ins);
	o = lower_op(x, n->op, n->nin, NULL);
	o->node = i;
	memcpy(o->in, ins, sizeof(int) * (size_t)n->nin);
	local_attrs(n, ns, n->nin ? &l->values[ins[0]] : NULL, &o->a);
	if (n->op == OP_GATHER || n->op == OP_EMBEDDING_LOOKUP || n->op == OP_GATHER_D ||   /* the split table (GatherD's x); */
	    n->op == OP_ONE_HOT) {
		TensorLayout *t = arena_alloc(x->a, sizeof *t);                          /* OneHot's classes (lowered_rank_attrs) */
		*t = n->op == OP_ONE_HOT ? out : l->node_in[i][0];
		o->table = t;
		if (n->op == OP_ONE_HOT) {
			o->a.present |= ATTR_BIT(ATTR_OFFSET);
			o->a.has_axis = true;   /* the classes' dim, for lowered_rank_attrs */
			o->a.naxes = 1;
			o->a.axes[0] = n->a.has_axis ? n->a.axes[0] : -1;
		}
	}
	o->result = lower_value(x, g->values[n->result].name, out_t, &out);
	if (n->op == OP_ONE_HOT) {   /* the rank's classes, as MindSpore's replacement OneHot takes them */
		const Type *t = &l->values[o->result].type;
		o->a.depth = t->dims[o->a.axes[0] < 0 ? o->a.axes[0] + t->rank : o->a.axes[0]];
	}
	if (n->op == OP_RESIZE_NEAREST || n->op == OP_RESIZE_BILINEAR)   /* its piece's size, as MindSpore's slice_size */
		memcpy(o->a.shape, l->values[o->result].type.dims + 2, 2 * sizeof *o->a.shape);
	int result = o->result;
	result = lower_fill_result(x, i, result);
	if (ns->has_out_strategy) {
		StrBuf b = {0};
		sb_printf(&b, "out_strategy of %s %%%s", op_info[n->op].name, g->values[n->result].name);
		result = lower_redistribute(x, result, ns->delivered, arena_strdup(x->a, b.data));
		sb_free(&b);
	}
	x->vmap[n->result] = result;
}

/* A returned value made whole: its partial axes scatter into the first dim
 * they divide (half an AllReduce's bytes), else they are summed in place;
 * a forward graph's result is handed over in its result_layout. */
static int complete(Lowering *x, int src)
{
	const LValue *v = &x->l->values[src];
	x->stage = v->stage;
	TensorLayout to;
	if (!result_layout(x->l->m, v->type.rank, v->global, &to)) {
		if (!v->layout.partial)
			return src;
		layout_completed(&v->layout, v->type.dims, &to);
	}
	if (layout_equal(&v->layout, &to))
		return src;
	StrBuf b = {0};
	sb_printf(&b, "%%%s returned", v->name);
	int r = lower_redistribute(x, src, &to, arena_strdup(x->a, b.data));
	sb_free(&b);
	return r;
}

/* Splits device axis a of l into (size / inner, inner), the inner part
 * least significant, renumbering the maps. Requires inner to divide the
 * size and room for one more axis. */
static void split_axis(TensorLayout *l, int a, int64_t inner)
{
	for (int b = l->ndev; b > a + 1; b--)
		l->dev[b] = l->dev[b - 1];
	l->dev[a + 1] = inner;
	l->dev[a] /= inner;
	l->ndev++;
	uint32_t low = l->partial & ((1u << (a + 1)) - 1);
	l->partial = low | (l->partial & ~low) << 1;
	for (int d = 0; d < l->rank; d++)
		for (int k = 0; k < l->nmap[d]; k++)
			l->map[d][k] += l->map[d][k] > a;
}

/* Optimizer parallelism (docs/language.md, "Optimizer parallelism"): a
 * trained parameter's home split further over the axes that hold copies of
 * its slice, shard_size ranks of them (-1: all), the fastest axes first so a
 * slice group is neighbouring ranks; an axis is cut in two when only part of
 * it is wanted. The first dim whose local size those ranks divide takes them,
 * after its own axes, so each rank's slice is a contiguous part of the piece
 * the copies hold (MindSpore takes dim 0 only). The parameter stays whole
 * when no dim divides, or the copies do not divide into shard_size groups.
 * Every user then redistributes from the slice, an AllGather, whose adjoint
 * makes the gradient a ReduceScatter into the slice, and the optimizer
 * updates the slice with state of the slice's size. True when it sliced. */
static bool shard_home(TensorLayout *home, const Type *t, uint32_t summed, int64_t shard_size)
{
	TensorLayout h = *home;
	uint32_t copies = layout_replica_axes(&h) & summed, take = 0;
	int64_t want = shard_size, got = 1;
	for (int a = h.ndev - 1; a >= 0 && (want < 0 || got < want); a--) {
		if (!(copies & (1u << a)) || h.dev[a] == 1)
			continue;
		int64_t need = want < 0 ? h.dev[a] : want / got;
		if (want >= 0 && (want % got || (h.dev[a] > need && h.dev[a] % need) || (h.dev[a] < need && need % h.dev[a])))
			return false;
		if (h.dev[a] > need) {
			if (h.ndev == MAX_AXES)
				return false;
			split_axis(&h, a, need);
			take <<= 1;   /* axes after a moved up by one */
			a++;
		}
		take |= 1u << a;
		got *= h.dev[a];
	}
	if (!take || (want >= 0 && got != want))
		return false;
	for (int d = 0; d < t->rank; d++) {
		if (layout_uneven(&h, t->dims, d) || layout_piece_len(&h, t->dims, d) % got)
			continue;
		for (int a = 0; a < h.ndev; a++)
			if (take & (1u << a))
				h.map[d][h.nmap[d]++] = (int8_t)a;
		*home = h;
		return true;
	}
	return false;
}

/* Optimizer parallelism for parameter p, first read as input k of a node
 * with strategy ns: a trained (float) parameter of a training module with
 * enable_parallel_optimizer is sliced over the axes of its home on which
 * that user sums the gradient (grad_partial_axes: the data-parallel ranks),
 * so the ReduceScatter and AllGather send what the AllReduce they replace
 * did. Copies that compute the same gradient redundantly stay: an AllGather
 * there would replace nothing. */
static void shard_optimizer_home(const Lowered *l, const NodeStrategy *ns, int k, int p, TensorLayout *home)
{
	const Module *m = l->m;
	const Type *t = &l->flat->g->values[p].type;
	if (!m->train || !m->ctx.parallel_optimizer || l->device_num == 1 || !t->is_param || !dtype_is_float(t->dtype) ||
	    param_is_moving_stat(l->flat->g, p))   /* no gradient, no optimizer state */
		return;
	TensorLayout in, out, h, summed;
	op_in_layout(ns->od, ns->split, k, &in);
	op_out_layout(ns->od, ns->split, &out);
	in.partial = grad_partial_axes(&in, &out);
	in.partial_op = REDUCE_SUM_OP;
	if (!layout_common_matrix(home, &in, &h, &summed))
		return;   /* a planned home whose matrix cuts across the user's */
	if (shard_home(&h, t, summed.partial, m->ctx.optimizer_shard_size))
		*home = h;
}

/* Where parameters not fixed by a plan live: where their first user wants
 * them (replicated when that user has no strategy); then, every parameter,
 * sliced for optimizer parallelism by that same user. */
static void parameter_homes(const Lowered *l, TensorLayout *home)
{
	const Graph *g = l->flat->g;
	bool *seen = xcalloc((size_t)(g->nparams ? g->nparams : 1), sizeof *seen);
	for (int i = 0; i < g->nnodes; i++) {
		const Node *n = &g->nodes[i];
		const NodeStrategy *ns = &l->st->node[i];
		for (int k = 0; k < n->nin; k++) {
			int p = n->in[k];
			if (p >= g->nparams || seen[p])
				continue;
			seen[p] = true;
			if (!ns->has_dims)
				continue;
			if (!l->st->home_fixed[p])
				op_in_layout(ns->od, ns->split, k, &home[p]);
			shard_optimizer_home(l, ns, k, p, &home[p]);
		}
	}
	free(seen);
}

Lowered *lower(Module *m, const FlatGraph *f, const Strategies *st, const Cluster *cluster)
{
	Arena *a = arena_new();
	const Graph *g = f->g;
	Lowered *l = arena_alloc(a, sizeof *l);
	l->arena = a;
	l->m = m;
	l->flat = f;
	l->st = st;
	l->device_num = st->device_num;
	l->node_in = arena_alloc(a, sizeof(TensorLayout *) * (size_t)(g->nnodes ? g->nnodes : 1));
	l->node_out = arena_alloc(a, sizeof(TensorLayout) * (size_t)(g->nnodes ? g->nnodes : 1));
	for (int i = 0; i < g->nnodes; i++)
		l->node_in[i] = arena_alloc(a, sizeof(TensorLayout) * (size_t)(g->nodes[i].nin ? g->nodes[i].nin : 1));
	Lowering *x = arena_alloc(a, sizeof *x);
	RedistLinks links = cluster ? cluster_links(cluster) : (RedistLinks){0, 1};
	*x = (Lowering){.l = l, .a = a, .plans = redist_cache_new(&links)};
	l->lowering = x;
	x->vmap = arena_alloc(a, sizeof(int) * (size_t)(g->nvalues ? g->nvalues : 1));
	l->home = arena_alloc(a, sizeof(TensorLayout) * (size_t)(g->nparams ? g->nparams : 1));
	for (int p = 0; p < g->nparams; p++)
		l->home[p] = st->home[p];
	parameter_homes(l, l->home);
	l->stages = m->ctx.stages;
	l->node_stage = arena_alloc(a, sizeof(int) * (size_t)(g->nnodes ? g->nnodes : 1));
	l->value_stage = arena_alloc(a, sizeof(int) * (size_t)(g->nvalues ? g->nvalues : 1));
	assign_stages(f, st, l->stages, l->node_stage, l->value_stage);
	for (int p = 0; p < g->nparams; p++) {
		x->stage = l->value_stage[p];
		x->vmap[p] = lower_value(x, g->values[p].name, &g->values[p].type, &l->home[p]);
		l->values[x->vmap[p]].param = p;
	}
	l->nparams = g->nparams;
	for (int i = 0; i < g->nnodes; i++)
		lower_node(x, i);
	l->nret = g->nret;
	l->rets = arena_alloc(a, sizeof(int) * (size_t)(g->nret ? g->nret : 1));
	for (int k = 0; k < g->nret; k++)
		l->rets[k] = complete(x, x->vmap[g->ret[k]]);
	l->loss = -1;
	l->overflow = -1;
	l->lamb_norms = -1;
	if (m->train)
		l->loss = complete(x, x->vmap[f->of_entry[m->train->loss]]);
	l->nfwd = l->nops;
	l->fwd_bytes = l->comm_bytes;
	return l;
}

void lowered_free(Lowered *l)
{
	redist_cache_free(l->lowering->plans);
	arena_free(l->arena);
}
