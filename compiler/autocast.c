/* autocast.c: the model's `precision`, from the context or the train block
 * (docs/language.md, The train block), for inference and training alike.
 *
 * Requires the graph flattened. Mixed precision as MindSpore's AMP level O2
 * and PyTorch's autocast do it, written into the flat graph as Casts, so that
 * the strategies, lowering, the backward pass and the emitter see ordinary
 * operators (and step_parallel_begin shows them):
 *   - Float32 parameters stay Float32: the master weights the optimizer
 *     updates, with its state; each is cast to the compute type where an
 *     operator computing in it uses it (one Cast a value, shared by its users);
 *   - each operator computes as its row of ops.h's precision column says
 *     (shardc --list-ops shows them): PREC_LOW (matrix products, most
 *     elementwise operators) in the compute type; PREC_F32 (normalizations,
 *     losses, sums, Exp, Log, Sqrt) in Float32, their half inputs cast up;
 *     PREC_FOLLOW (operators that move or pick elements, and the
 *     comparisons) in its input's type; PREC_ASIS (Casts, collectives) as
 *     written. A comparison (MindSpore's AMP casts none: no list names one)
 *     keeps its Bool result; it compares two half operands as they are, and
 *     a half one beside a Float32 one (a number) both in Float32, so a
 *     threshold is compared as written, never rounded to the half type;
 *   - returned values and the loss are cast back to their declared types.
 * The gradient of a Cast is cast back to its input's type (autodiff.c), so
 * every parameter's gradient arrives in Float32. Only Float32 values change:
 * an operator written on another type (a Float16 model, a user's Cast,
 * integer operators) computes as written, its changed inputs cast back. A
 * number written as an operand (Value.literal) takes the compute type itself
 * when every user computes in it, so no Cast comes between them: it is the
 * number rounded once to that type, as it would be written in a model of
 * that type. So does a computed constant that takes a dtype (Arange,
 * CausalMask, RopeCos, RopeSin, FillV2, Eye: no input to follow), which
 * otherwise stays Float32 (LinSpace computes Float32 only). */
#include "shardc.h"

#include <string.h>

static const char *dtype_suffix(DType t)
{
	return t == DT_BF16 ? "bf16" : t == DT_F16 ? "f16" : "f32";
}

typedef struct {
	Arena *a;
	const Graph *old;
	Graph *g;                /* the new flat graph */
	FlatGraph nf;            /* its side tables as they grow */
	int cap_values, cap_nodes;
	int *cur;                /* (old nvalues) the new value computing each old one */
	int (*cast)[3];          /* (old nvalues) its Cast to Float32, Float16, BFloat16, or -1 */
} Caster;

static int new_value(Caster *x, const Value *like, const char *name, DType dt)
{
	Value copy = *like;   /* like may lie in the array the push moves */
	Value *v = ARENA_PUSH(x->a, x->g->values, x->g->nvalues, x->cap_values);
	*v = copy;
	v->name = name;
	v->type.dtype = dt;
	v->node = -1;
	v->init = NULL;
	return x->g->nvalues - 1;
}

/* Appends node n (its inputs and result already new ids) with its side tables. */
static void push_node(Caster *x, const Node *n, const Node *orig, const ShardSpec *shard, bool inserted)
{
	int at = x->g->nnodes;
	int cap = x->cap_nodes;
	Node *c = ARENA_PUSH(x->a, x->g->nodes, x->g->nnodes, x->cap_nodes);
	*c = *n;
	if (x->cap_nodes != cap) {
		x->nf.orig = arena_grow(x->a, x->nf.orig, sizeof(const Node *) * (size_t)cap,
		                        sizeof(const Node *) * (size_t)x->cap_nodes);
		x->nf.shard = arena_grow(x->a, x->nf.shard, sizeof(const ShardSpec *) * (size_t)cap,
		                         sizeof(const ShardSpec *) * (size_t)x->cap_nodes);
		x->nf.inserted = arena_grow(x->a, x->nf.inserted, sizeof(bool) * (size_t)cap,
		                            sizeof(bool) * (size_t)x->cap_nodes);
	}
	x->nf.orig[at] = orig ? orig : c;   /* an inserted Cast is its own original, in no graph */
	x->nf.shard[at] = shard;
	x->nf.inserted[at] = inserted;
	x->g->values[c->result].node = at;
}

/* Old value ov in type dt: as computed, or through one shared Cast inserted
 * here, before `user` (whose spans it borrows). */
static int value_as(Caster *x, int ov, DType dt, const Node *user)
{
	int v = x->cur[ov];
	const Value *val = &x->g->values[v];
	if (val->type.dtype == dt || !dtype_is_float(dt) || !dtype_is_float(val->type.dtype))
		return v;
	int slot = dt == DT_F32 ? 0 : dt == DT_F16 ? 1 : 2;
	if (x->cast[ov][slot] >= 0)
		return x->cast[ov][slot];
	StrBuf b = {0};
	sb_printf(&b, "%s.%s", x->old->values[ov].name, dtype_suffix(dt));
	const char *name = arena_strdup(x->a, b.data);
	sb_free(&b);
	int r = new_value(x, val, name, dt);
	x->g->values[r].span = user->span;
	x->g->values[r].type.is_param = false;   /* a Cast's result is a Tensor, as shape.c types it */
	Node n;
	memset(&n, 0, sizeof n);
	n.op = OP_CAST;
	n.op_name = op_info[OP_CAST].name;
	n.span = user->span;
	n.op_span = user->op_span;
	n.result = r;
	n.nin = 1;
	n.in = arena_alloc(x->a, sizeof(int));
	n.in[0] = v;
	n.a.dtype = dt;
	n.a.present = ATTR_BIT(ATTR_DTYPE);
	push_node(x, &n, NULL, NULL, true);
	x->cast[ov][slot] = r;
	return r;
}

/* Whether node n's operator changes the type it computes in: a Float32
 * operator of a class that follows the precision, on Float32 or non-float
 * operands; a comparison's result is Bool, but it follows its operands too. */
static bool changes(const Graph *old, const Node *n)
{
	DType r = old->values[n->result].type.dtype;
	bool change = op_info[n->op].prec != PREC_ASIS && (r == DT_F32 || op_is_compare(n->op));
	for (int k = 0; k < n->nin; k++) {
		DType t = old->values[n->in[k]].type.dtype;
		change &= !dtype_is_float(t) || t == DT_F32;
	}
	return change;
}

/* low[v]: some operator reads old value v and every one computes in the
 * compute type, and v is not returned. A number written as an operand
 * (Float32, an old parameter) or a computed constant read so takes the
 * compute type itself: no Cast between them. */
/* ops.h's precision class; an AddN of more half operands than one kernel
 * widens (MAX_WIDENED, its result too) computes in Float32. */
static PrecClass prec_class(const Node *n)
{
	return n->op == OP_ADD_N && n->nin >= MAX_WIDENED ? PREC_F32 : op_info[n->op].prec;
}

static bool *read_in_low(const Graph *old, Arena *a)
{
	size_t nv = (size_t)(old->nvalues ? old->nvalues : 1);
	bool *read = arena_alloc(a, sizeof(bool) * nv), *low = arena_alloc(a, sizeof(bool) * nv);
	for (int v = 0; v < old->nvalues; v++)
		low[v] = true;
	for (int i = 0; i < old->nnodes; i++) {
		const Node *n = &old->nodes[i];
		bool l = prec_class(n) == PREC_LOW && changes(old, n);
		for (int k = 0; k < n->nin; k++) {
			read[n->in[k]] = true;
			low[n->in[k]] &= l;
		}
	}
	for (int k = 0; k < old->nret; k++)
		low[old->ret[k]] = false;
	for (int v = 0; v < old->nvalues; v++)
		low[v] &= read[v] && (v >= old->nparams || (old->values[v].literal && old->values[v].type.dtype == DT_F32));
	return low;
}

static void cast_node(Caster *x, const FlatGraph *f, int i, DType prec, const bool *low)
{
	const Node *n = &x->old->nodes[i];
	const Value *res = &x->old->values[n->result];
	PrecClass cls = prec_class(n);
	bool change = changes(x->old, n);
	/* What each input is wanted in; a follower takes its inputs as they are,
	 * all in Float32 when its float inputs now differ (Concat). */
	DType *want = arena_alloc(x->a, sizeof(DType) * (size_t)(n->nin ? n->nin : 1));
	DType follow = DT_BOOL;
	bool mixed = false;
	for (int k = 0; k < n->nin; k++) {
		int ov = n->in[k];
		DType now = x->g->values[x->cur[ov]].type.dtype;
		want[k] = x->old->values[ov].type.dtype;
		if (!change || !dtype_is_float(now))
			continue;
		if (cls == PREC_LOW)
			want[k] = prec;
		else if (cls == PREC_F32)
			want[k] = DT_F32;
		else {
			mixed |= follow != DT_BOOL && follow != now;
			follow = follow == DT_BOOL ? now : follow;
			want[k] = now;
		}
	}
	Node c = *n;
	c.in = arena_alloc(x->a, sizeof(int) * (size_t)(n->nin ? n->nin : 1));
	for (int k = 0; k < n->nin; k++) {
		DType w = want[k];
		if (mixed && dtype_is_float(w))
			w = DT_F32;
		c.in[k] = value_as(x, n->in[k], w, n);
	}
	DType rd = res->type.dtype;
	if (change && rd == DT_F32)   /* a comparison's Bool stays */
		rd = cls == PREC_LOW ? prec : cls == PREC_F32 ? DT_F32 : mixed || follow == DT_BOOL ? DT_F32 : follow;
	if (change && op_is_constant(n->op))   /* no input to follow: its readers' type when they all compute in it, */
		rd = low[n->result] && (op_info[n->op].attrs & ATTR_BIT(ATTR_DTYPE)) ? prec : DT_F32;   /* if it takes one */
	c.result = new_value(x, res, res->name, rd);
	x->g->values[c.result].init = res->init;
	push_node(x, &c, f->orig[i], f->shard[i], false);
	x->cur[n->result] = c.result;
}

void autocast(Module *m, FlatGraph *f)
{
	DType prec = m->ctx.precision;   /* the train block's too: check_train made them one */
	if (prec == DT_F32)
		return;
	const Graph *old = f->g;
	Caster x;
	memset(&x, 0, sizeof x);
	x.a = m->arena;
	x.old = old;
	x.g = arena_alloc(x.a, sizeof *x.g);
	*x.g = *old;
	x.g->values = NULL, x.g->nvalues = 0;
	x.g->nodes = NULL, x.g->nnodes = 0;
	size_t nv = (size_t)(old->nvalues ? old->nvalues : 1);
	x.cur = arena_alloc(x.a, sizeof(int) * nv);
	x.cast = arena_alloc(x.a, sizeof *x.cast * nv);
	for (int v = 0; v < old->nvalues; v++)
		x.cast[v][0] = x.cast[v][1] = x.cast[v][2] = -1;
	bool *low = read_in_low(old, x.a);
	for (int p = 0; p < old->nparams; p++) {
		Value *v = ARENA_PUSH(x.a, x.g->values, x.g->nvalues, x.cap_values);
		*v = old->values[p];
		if (low[p])
			v->type.dtype = prec;
		x.cur[p] = p;
	}
	for (int i = 0; i < old->nnodes; i++)
		cast_node(&x, f, i, prec, low);
	/* Returned values and the loss in their declared types, after everything else. */
	x.g->ret = arena_alloc(x.a, sizeof(int) * (size_t)(old->nret ? old->nret : 1));
	for (int k = 0; k < old->nret; k++) {
		int ov = old->ret[k];
		const Node *at = ov >= old->nparams ? &old->nodes[old->values[ov].node] : &old->nodes[0];
		x.g->ret[k] = old->nnodes ? value_as(&x, ov, old->values[ov].type.dtype, at) : x.cur[ov];
	}
	const Graph *entry = module_entry(m);
	int loss = m->train ? f->of_entry[m->train->loss] : -1;
	for (int v = 0; v < entry->nvalues; v++)
		f->of_entry[v] = x.cur[f->of_entry[v]];
	if (old->nnodes && loss >= old->nparams)
		f->of_entry[m->train->loss] = value_as(&x, loss, old->values[loss].type.dtype,
		                                       &old->nodes[old->values[loss].node]);
	f->g = x.g;
	f->orig = x.nf.orig;
	f->shard = x.nf.shard;
	f->inserted = x.nf.inserted;
}

void autocast_strategies(const Module *m, const FlatGraph *f, Strategies *s)
{
	(void)m;
	if (!f->inserted)
		return;
	const Graph *g = f->g;
	for (int i = 0; i < g->nnodes; i++) {
		NodeStrategy *ns = &s->node[i];
		if (!f->inserted[i] || !ns->has_dims)
			continue;
		int r = g->nodes[i].result;
		for (int u = i + 1; u < g->nnodes; u++) {
			const Node *n = &g->nodes[u];
			int k = 0;
			while (k < n->nin && n->in[k] != r)
				k++;
			if (k == n->nin)
				continue;
			const NodeStrategy *us = &s->node[u];
			if (!us->has_dims)
				break;
			/* The user's own matrix and axes: the Cast's output is laid out
			 * exactly as the user takes it, so nothing is redistributed. */
			TensorLayout want;
			op_in_layout(us->od, us->split, k, &want);
			OpSplit os;
			memset(&os, 0, sizeof os);
			os.ndev = want.ndev;
			memcpy(os.dev, want.dev, sizeof os.dev);
			os.tuple = true;
			for (int o = 0; o < ns->od->nod; o++)
				os.split[o] = 1;
			for (int d = 0; d < ns->od->in_rank[0] && d < want.rank; d++) {
				int o = ns->od->in_dim[0][d];
				if (o < 0)
					continue;
				os.nax[o] = want.nmap[d];
				memcpy(os.ax[o], want.map[d], (size_t)want.nmap[d]);
				for (int j = 0; j < want.nmap[d]; j++)
					os.split[o] *= want.dev[want.map[d][j]];
			}
			strategy_set_split(s, i, &os);
			break;
		}
	}
}
