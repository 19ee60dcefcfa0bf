/* search.c: the strategy search of auto_parallel (docs/language.md, Context, Functional shard).
 *
 * Requires strategies assigned (assign_strategies: user strategies, the
 * batch-parallel defaults, dataset layouts, parameter plans). In
 * auto_parallel it replaces every strategy the user did not give:
 *
 *   sharding_propagation   from the configured operators (and from the
 *       inputs of a shard whose in_strategy fixes their layout) strategies
 *       spread along the graph both ways. A FIFO of decided operators; each
 *       one popped decides its undecided neighbours, producers first (by
 *       input), then consumers (in graph order). A consumer waits until all
 *       its producers are decided; when only waiting operators are left, the
 *       first in graph order is decided. Each decision takes the candidate
 *       with the least cost against the neighbours decided so far (operator
 *       cost plus redistribution, cost.c). Operators no configured one
 *       reaches keep the batch-parallel default.
 *   recursive_programming  MindSpore's double-recursive search (D-Rec):
 *       device_num is factored into primes, largest first (any count, no
 *       cap); at each level every operator, heaviest first (FLOPs, ties in
 *       graph order), cuts one op dim by that factor, the one with the least
 *       cost against its neighbours' current strategies. An operator with no
 *       dim left to cut keeps the copies. User strategies stay fixed.
 *       Then further starts (data-parallel and dp x mp templates, see
 *       recursive), the cheapest whose slab fits kept (or a crossover of it
 *       with a cheaper one that does not fit, choose), and from there the
 *       fixed point (polish): no single operator's change of strategy that
 *       still fits lowers the total cost.
 *
 * Ties go to the candidate listed first. For propagation: the batch-parallel
 * default, then candidates using more devices, then those splitting earlier
 * op dims more. For D-Rec: the batch dim, then the op dims in order.
 *
 * The cost of a whole assignment (strategies_cost) is the sum of every
 * operator's compute, every edge's redistribution (a producer's output, or
 * an input's or parameter's home, carried through Reshapes, to the layout
 * the consumer needs; a Reshape that cannot carry a split gathers it first),
 * the completion of returned partial values, out_strategy deliveries and,
 * with a train block, the backward pass's gradient reductions (grad_cost). A
 * parameter lives where its first user wants it (lower.c), so that edge is
 * free. Both searches minimize it greedily, one operator at a time.
 *
 * Memory: while one operator chooses, its parameters' slices (x2 with SGD's
 * gradient, x3 Momentum, x4 Adam) and its output slice; a candidate whose own
 * part does not fit a device is not chosen. A whole plan's memory is the
 * generated program's slab (slab_memory: lowered and planned by emit_plan),
 * what D-Rec's starts are chosen by, its fixed point is held to and the
 * final check uses; when the final strategies do not fit, the model is
 * reported with what would fit (report_memory). */
#include "shardc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { SRC_NONE, SRC_PARAM, SRC_OP };
enum { MAX_CANDIDATES = 4096, GEN_LIMIT = 100000 };

typedef struct {
	int kind;                /* SRC_NONE: a node without dims feeds it (a collective) */
	int id;                  /* the parameter, or the producing node */
	int chain, nchain;       /* the Reshapes in between, source side first: x->chain[chain..] */
} Src;

/* A candidate strategy and its local_cost. */
typedef struct {
	OpSplit s;
	double cost;
	int at;                  /* its place among the candidates: ties go to the first */
} Priced;

/* What an operator's choice depends on, as integers (context_key). */
typedef struct {
	int64_t *k;
	int n, cap;
} Key;

/* Keys seen and the move best_move answered for them. */
typedef struct {
	int64_t *key;            /* NULL: an empty slot */
	int nkey;
	bool found;
	Priced best;
} Memo;

typedef struct {
	Memo *slot;
	size_t nslot, n;
	Arena *a;                /* the keys */
} MemoTable;

/* The distinct layouts (with gradient axes) a value's readers take it in,
 * and how many readers each: for a value with many readers, kept and summed
 * again only after a reader's strategy changed. */
typedef struct {
	int64_t epoch, version;  /* Search's epoch and the value's version when summed */
	Key k;                   /* the entries' ints, one entry after another */
	int *start, *count;      /* (n + 1) where each entry's ints start; (n) its readers */
	int n, cap;
} Readers;

typedef struct {
	const Module *m;
	const Graph *g;
	const FlatGraph *f;
	Strategies *st;
	CostModel *cm;
	int64_t n;               /* device_num */
	double mem_factor;       /* parameter bytes held per parameter byte */
	OpSplit *cur;            /* (nnodes) the current strategy of each node with dims */
	TensorLayout **in;       /* (nnodes, nin) the layouts cur needs */
	TensorLayout *raw;       /* (nnodes) cur's output, partial included */
	TensorLayout *out;       /* (nnodes) as consumers see it: delivered, else raw */
	bool *decided;           /* (nnodes) */
	Src **src;               /* (nnodes, nin) */
	const TensorLayout ***fixed;  /* (nnodes, nin) a shard's in_strategy for that input, or NULL */
	int *chain;
	int nchain, cap_chain;
	int *cstart, *cnode, *cin;    /* consumers of node u: (cnode, cin)[cstart[u]..cstart[u+1]) */
	int *pstart, *pnode, *pin;    /* users of parameter p but its first */
	int *first_node, *first_in;   /* (nparams) the first use of each parameter, -1 none */
	bool *needs;             /* (nvalues) with a train block, depends on a trained parameter */
	bool *returned;          /* (nnodes) */
	bool *fixed_node;        /* (nnodes) a user strategy, or a planned parameter's first user */
	int64_t tmpl_dp, tmpl_mp;  /* a Megatron template's propagation (0: off): decide takes only dp x mp candidates */
	bool (*plan)(Compilation *c);   /* SearchOptions.plan: the pipeline from lowering to the memory plan */
	const OpSplit **slab_plan;  /* (nnodes) the interned strategies slab_memory planned last, or NULL */
	double slab;             /* and their slab */
	double slab_again;       /* and the seconds of the collectives their backward pass sends again (recompute.c:
	                          * recomputed ones, ZeRO-3's second AllGathers) */
	MemoTable memo;          /* best_move's answers by context_key */
	Key key, entry;
	Readers *readers;        /* (nvalues) summed readers of values with many */
	int64_t *version;        /* (nvalues) bumped when a reader of the value changes strategy */
	int64_t epoch;           /* bumped as refine or polish starts: readers summed before are stale */
	int64_t (*cand)[MAX_OPDIMS];  /* (MAX_CANDIDATES) scratch for op_candidates */
} Search;

/* ---- the graph as the search sees it ---- */

static Src source(Search *x, int value)
{
	const Graph *g = x->g;
	int start = x->nchain;
	while (value >= g->nparams && g->nodes[g->values[value].node].op == OP_RESHAPE) {
		*ARENA_PUSH(x->m->arena, x->chain, x->nchain, x->cap_chain) = g->values[value].node;
		value = g->nodes[g->values[value].node].in[0];
	}
	/* Source side first. */
	for (int a = start, b = x->nchain - 1; a < b; a++, b--) {
		int t = x->chain[a];
		x->chain[a] = x->chain[b];
		x->chain[b] = t;
	}
	Src s = {SRC_NONE, value, start, x->nchain - start};
	if (value < g->nparams)
		s.kind = SRC_PARAM;
	else if (x->st->node[g->values[value].node].has_dims)
		s = (Src){SRC_OP, g->values[value].node, start, x->nchain - start};
	return s;
}

static bool searchable(const Search *x, int v)
{
	return x->st->node[v].has_dims;
}

static const Graph *shard_callee(const Module *m, const ShardSpec *sh)
{
	for (int i = 0; i < m->ngraphs; i++)
		for (int j = 0; j < m->graphs[i]->nnodes; j++)
			if (m->graphs[i]->nodes[j].a.shard == sh)
				return m->graphs[i]->nodes[j].a.callee;
	return NULL;
}

/* Indices, labels and integer values carry no gradient: autodiff.c's own test. */
static bool differentiable(const Graph *g, const Node *nd, int k)
{
	return op_input_has_grad(nd->op, k, g->values[nd->in[k]].type.dtype, g->values[nd->result].type.dtype);
}

static bool node_in_graph(const Graph *c, const Node *n)
{
	return c && n >= c->nodes && n < c->nodes + c->nnodes;
}

static void build(Search *x)
{
	Arena *a = x->m->arena;
	const Graph *g = x->g;
	int nn = g->nnodes, np = g->nparams;
	size_t nz = (size_t)(nn ? nn : 1), pz = (size_t)(np ? np : 1);
	x->cur = xcalloc(nz, sizeof *x->cur);
	x->in = xcalloc(nz, sizeof *x->in);
	x->raw = xcalloc(nz, sizeof *x->raw);
	x->out = xcalloc(nz, sizeof *x->out);
	x->decided = xcalloc(nz, sizeof *x->decided);
	x->src = xcalloc(nz, sizeof *x->src);
	x->fixed = xcalloc(nz, sizeof *x->fixed);
	x->returned = xcalloc(nz, sizeof *x->returned);
	x->needs = xcalloc((size_t)(g->nvalues ? g->nvalues : 1), sizeof *x->needs);
	x->fixed_node = xcalloc(nz, sizeof *x->fixed_node);
	x->version = xcalloc((size_t)(g->nvalues ? g->nvalues : 1), sizeof *x->version);
	x->first_node = xmalloc(sizeof(int) * pz);
	x->first_in = xmalloc(sizeof(int) * pz);
	for (int p = 0; p < np; p++)
		x->first_node[p] = x->first_in[p] = -1;
	int *ncons = xcalloc(nz + 1, sizeof(int)), *nuse = xcalloc(pz + 1, sizeof(int));
	for (int v = 0; v < nn; v++) {
		const Node *nd = &g->nodes[v];
		for (int k = 0; k < nd->nin; k++) {
			int p = nd->in[k];
			if (p < np && x->first_node[p] < 0)
				x->first_node[p] = v, x->first_in[p] = k;
		}
		if (!searchable(x, v))
			continue;
		x->in[v] = xcalloc((size_t)(nd->nin ? nd->nin : 1), sizeof(TensorLayout));
		x->src[v] = xcalloc((size_t)(nd->nin ? nd->nin : 1), sizeof(Src));
		x->fixed[v] = xcalloc((size_t)(nd->nin ? nd->nin : 1), sizeof(TensorLayout *));
		for (int k = 0; k < nd->nin; k++) {
			Src s = source(x, nd->in[k]);
			x->src[v][k] = s;
			if (s.kind == SRC_OP)
				ncons[s.id]++;
		}
	}
	for (int v = 0; v < nn; v++)
		for (int k = 0; searchable(x, v) && k < g->nodes[v].nin; k++) {
			Src s = x->src[v][k];
			if (s.kind == SRC_PARAM && !(x->first_node[s.id] == v && x->first_in[s.id] == k))
				nuse[s.id]++;
		}
	x->cstart = xmalloc(sizeof(int) * (nz + 1));
	x->pstart = xmalloc(sizeof(int) * (pz + 1));
	x->cstart[0] = x->pstart[0] = 0;
	for (int u = 0; u < nn; u++)
		x->cstart[u + 1] = x->cstart[u] + ncons[u];
	for (int p = 0; p < np; p++)
		x->pstart[p + 1] = x->pstart[p] + nuse[p];
	x->cnode = xmalloc(sizeof(int) * (size_t)(x->cstart[nn] + 1));
	x->cin = xmalloc(sizeof(int) * (size_t)(x->cstart[nn] + 1));
	x->pnode = xmalloc(sizeof(int) * (size_t)(x->pstart[np] + 1));
	x->pin = xmalloc(sizeof(int) * (size_t)(x->pstart[np] + 1));
	memset(ncons, 0, sizeof(int) * nz);
	memset(nuse, 0, sizeof(int) * pz);
	for (int v = 0; v < nn; v++)
		for (int k = 0; searchable(x, v) && k < g->nodes[v].nin; k++) {
			Src s = x->src[v][k];
			if (s.kind == SRC_OP) {
				int at = x->cstart[s.id] + ncons[s.id]++;
				x->cnode[at] = v, x->cin[at] = k;
			} else if (s.kind == SRC_PARAM && !(x->first_node[s.id] == v && x->first_in[s.id] == k)) {
				int at = x->pstart[s.id] + nuse[s.id]++;
				x->pnode[at] = v, x->pin[at] = k;
			}
		}
	free(ncons);
	free(nuse);
	/* What needs a gradient, as autodiff.c decides it. */
	for (int p = 0; p < np && x->m->train; p++)
		x->needs[p] = g->values[p].type.is_param && dtype_is_float(g->values[p].type.dtype);
	for (int v = 0; v < nn && x->m->train; v++) {
		const Node *nd = &g->nodes[v];
		for (int k = 0; k < nd->nin; k++)
			if (differentiable(g, nd, k))
				x->needs[nd->result] |= x->needs[nd->in[k]];
	}
	/* A parameter_plan's parameter is used where it lives: its first user
	 * keeps the strategy follow_plan gave it, which step_parallel_begin
	 * then carries (it has no Calls, so no plans). */
	for (int v = 0; v < nn; v++)
		x->fixed_node[v] = searchable(x, v) && x->st->node[v].user;
	for (int p = 0; p < np; p++) {
		int u = x->first_node[p];
		if (u >= 0 && searchable(x, u) && g->values[p].type.is_param && x->st->home_fixed[p] &&
		    x->m->ctx.parallel_mode == PM_AUTO)
			x->fixed_node[u] = true;
	}
	for (int k = 0; k < g->nret; k++) {
		int r = g->ret[k];
		if (r >= np && searchable(x, g->values[r].node))
			x->returned[g->values[r].node] = true;
	}
	/* A shard's in_strategy fixes the layout of the callee's inputs for the
	 * operators inside that take them directly. */
	for (int v = 0; v < nn; v++) {
		const ShardSpec *sh = x->f->shard[v];
		if (!sh || !searchable(x, v))
			continue;
		const Graph *callee = shard_callee(x->m, sh);
		const Node *orig = x->f->orig[v];
		if (!node_in_graph(callee, orig))
			continue;
		for (int k = 0; k < orig->nin; k++) {
			int p = orig->in[k];
			if (p >= callee->nparams || p >= sh->in.n || !sh->in.t[p].given)
				continue;
			TensorLayout *l = arena_alloc(a, sizeof *l);
			if (layout_from_strategy(&sh->in.t[p], x->n, l))
				x->fixed[v][k] = l;
		}
	}
}

static void search_free(Search *x)
{
	for (int v = 0; v < x->g->nnodes; v++) {
		free(x->in[v]);
		free(x->src[v]);
		free(x->fixed[v]);
	}
	free(x->cur);
	free(x->in);
	free(x->raw);
	free(x->out);
	free(x->decided);
	free(x->src);
	free(x->fixed);
	free(x->returned);
	free(x->needs);
	free(x->fixed_node);
	free(x->first_node);
	free(x->first_in);
	free(x->cstart);
	free(x->cnode);
	free(x->cin);
	free(x->pstart);
	free(x->pnode);
	free(x->pin);
	free(x->slab_plan);
	free(x->memo.slot);
	if (x->memo.a)
		arena_free(x->memo.a);
	free(x->key.k);
	free(x->entry.k);
	for (int v = 0; x->readers && v < x->g->nvalues; v++) {
		free(x->readers[v].k.k);
		free(x->readers[v].start);
		free(x->readers[v].count);
	}
	free(x->readers);
	free(x->version);
	free(x->cand);
}

/* ---- costs ---- */

static int64_t elem_bytes(const Search *x, int value)
{
	return dtype_bytes(x->g->values[value].type.dtype);
}

/* The layouts a strategy gives node v: its inputs, its output (partial
 * included), the output as consumers see it. */
static void layouts(const Search *x, int v, const OpSplit *s, TensorLayout *in, TensorLayout *raw, TensorLayout *out)
{
	const NodeStrategy *ns = &x->st->node[v];
	for (int k = 0; k < x->g->nodes[v].nin; k++)
		op_in_layout(ns->od, s, k, &in[k]);
	op_out_layout(ns->od, s, raw);
	*out = ns->has_out_strategy ? *ns->delivered : *raw;
}

static void set_current(Search *x, int v, const OpSplit *s)
{
	x->cur[v] = *s;
	layouts(x, v, s, x->in[v], &x->raw[v], &x->out[v]);
	for (int k = 0; x->version && k < x->g->nodes[v].nin; k++)
		x->version[x->g->nodes[v].in[k]]++;
}

/* From layout `from` of value `value` through the Reshapes of `s` to `to`;
 * with a train block and a value that needs a gradient, the adjoint too (a
 * gather before a Reshape has a free slice for adjoint). */
static double carry_cost(Search *x, TensorLayout from, int value, const Src *s, const TensorLayout *to)
{
	const Graph *g = x->g;
	bool back = x->needs[value];
	double c = 0;
	for (int i = 0; i < s->nchain; i++) {
		const Node *r = &g->nodes[x->chain[s->chain + i]];
		const Value *vin = &g->values[r->in[0]];
		TensorLayout next;
		bool bad[MAX_DIMS] = {0};
		if (!carry_reshape(&from, vin->type.dims, &g->values[r->result].type, &next, bad)) {
			if (from.partial)
				return INFINITY;   /* lowering gathers only complete values before a Reshape */
			TensorLayout gathered = from;
			for (int d = 0; d < from.rank; d++)
				if (bad[d])
					gathered.nmap[d] = 0;
			c += cost_redist(x->cm, &from, &gathered, vin->type.dims, elem_bytes(x, r->in[0]), NULL);
			memset(bad, 0, sizeof bad);
			if (!carry_reshape(&gathered, vin->type.dims, &g->values[r->result].type, &next, bad))
				die("an unsplit reshape group does not carry");
		}
		from = next;
		value = r->result;
	}
	c += cost_redist(x->cm, &from, to, g->values[value].type.dims, elem_bytes(x, value), NULL);
	if (back)
		c += cost_redist_back(x->cm, &from, to, g->values[value].type.dims, elem_bytes(x, value));
	return c;
}

/* Where parameter p lives, given the current strategies; NULL: not known yet. */
static const TensorLayout *home(const Search *x, int p)
{
	int u = x->first_node[p];
	if (x->st->home_fixed[p] || u < 0 || !searchable(x, u))
		return &x->st->home[p];
	return x->decided[u] ? &x->in[u][x->first_in[p]] : NULL;
}

/* Does another decided operator w than v (w < v with `before`) read input k
 * of v's value in layout `to` (and, grad_axes >= 0, leave its gradient
 * partial over the same axes)? Lowering redistributes a value once per
 * layout, and autodiff.c sums the gradient contributions of one layout
 * before completing them: such an edge costs once. */
static bool shared(const Search *x, int v, int k, const TensorLayout *to, int64_t grad_axes, bool before)
{
	const Src *s = &x->src[v][k];
	int value = x->g->nodes[v].in[k], n, *node, *in, first[1], first_in[1];
	if (s->kind == SRC_OP) {
		n = x->cstart[s->id + 1] - x->cstart[s->id];
		node = x->cnode + x->cstart[s->id];
		in = x->cin + x->cstart[s->id];
	} else if (s->kind == SRC_PARAM) {
		n = x->pstart[s->id + 1] - x->pstart[s->id];
		node = x->pnode + x->pstart[s->id];
		in = x->pin + x->pstart[s->id];
	} else
		return false;
	for (int i = -1; i < n; i++) {
		int w, j;
		if (i < 0) {   /* a parameter's first user */
			if (s->kind != SRC_PARAM || x->first_node[s->id] < 0)
				continue;
			first[0] = x->first_node[s->id], first_in[0] = x->first_in[s->id];
			w = first[0], j = first_in[0];
		} else
			w = node[i], j = in[i];
		if (w == v || (before && w > v) || !x->decided[w] || !searchable(x, w) || x->g->nodes[w].in[j] != value)
			continue;
		if (!layout_equal(&x->in[w][j], to))
			continue;
		if (grad_axes >= 0 && (int64_t)(layout_busy_axes(&x->raw[w]) & ~layout_busy_axes(&x->in[w][j])) != grad_axes)
			continue;
		return true;
	}
	return false;
}

/* Input k of v arriving in `to`; 0 when its source is not decided yet, or
 * another operator reads it so (ahead of v with `before`). An input (or a
 * planned parameter) is carried from where dataset_strategy (or the plan)
 * puts it, its first user included. */
static double in_cost(Search *x, int v, int k, const TensorLayout *to, bool before)
{
	const Src *s = &x->src[v][k];
	if (!x->fixed[v][k] && shared(x, v, k, to, -1, before))
		return 0;
	if (x->fixed[v][k])
		return cost_redist(x->cm, x->fixed[v][k], to, x->g->values[s->id].type.dims, elem_bytes(x, s->id), NULL);
	if (s->kind == SRC_OP)
		return x->decided[s->id] ? carry_cost(x, x->out[s->id], x->g->nodes[s->id].result, s, to) : 0;
	if (s->kind != SRC_PARAM ||
	    (x->first_node[s->id] == v && x->first_in[s->id] == k && !x->st->home_fixed[s->id]))
		return 0;   /* a free home lives where its first user wants it; a fixed one (an input's dataset layout) is delivered */
	const TensorLayout *h = home(x, s->id);
	return h ? carry_cost(x, *h, s->id, s, to) : 0;
}

/* A returned value completed as lower.c completes it. */
static double complete_cost(Search *x, int v, const TensorLayout *out)
{
	if (!out->partial)
		return 0;
	const Value *val = &x->g->values[x->g->nodes[v].result];
	TensorLayout to = *out;
	to.partial = 0;
	int64_t n = 1;
	for (int a = 0; a < to.ndev; a++)
		if (out->partial & (1u << a))
			n *= to.dev[a];
	for (int d = 0; d < to.rank; d++)
		if ((val->type.dims[d] / layout_dim_split(out, d)) % n == 0) {
			for (int a = 0; a < to.ndev; a++)
				if (out->partial & (1u << a))
					to.map[d][to.nmap[d]++] = (int8_t)a;
			break;
		}
	return cost_redist(x->cm, out, &to, val->type.dims, elem_bytes(x, x->g->nodes[v].result), NULL);
}

static bool is_param(const Search *x, int p)
{
	return x->g->values[p].type.is_param;
}

/* With a train block, the backward pass's reduction of input k's gradient
 * (cost_input_gradient) when that input needs one: a trained parameter or an
 * operator's float result (indices and labels carry none). */
static double grad_cost(Search *x, int v, int k, const TensorLayout *in, const TensorLayout *raw, bool before)
{
	const Node *nd = &x->g->nodes[v];
	const Src *s = &x->src[v][k];
	if (s->kind == SRC_NONE || !differentiable(x->g, nd, k))
		return 0;
	int id = s->kind == SRC_OP ? x->g->nodes[s->id].result : s->id;
	if (!x->needs[id])
		return 0;
	if (shared(x, v, k, in, grad_partial_axes(in, raw), before))
		return 0;
	const Value *val = &x->g->values[id];
	return cost_input_gradient(x->cm, in, raw, val->type.dims, dtype_bytes(val->type.dtype));
}

/* v's compute under s, forward and, with a train block, backward: one
 * adjoint of the operator's size per input that needs a gradient; and the
 * AllReduces of statistics when s splits a normalized dim (cost_statistics). */
static double passes(const Search *x, int v)
{
	const Node *nd = &x->g->nodes[v];
	double n = 1;
	for (int k = 0; k < nd->nin; k++)
		if (x->needs[nd->in[k]] && differentiable(x->g, nd, k))
			n++;
	return n;
}

static double compute_cost(Search *x, int v, const OpSplit *s)
{
	const Node *nd = &x->g->nodes[v];
	double c = cost_compute(x->cm, nd, x->st->node[v].od, s->split);
	const Type *t = &x->g->values[nd->in[0]].type;
	return c * passes(x, v) + cost_statistics(x->cm, x->st->node[v].od, s, dtype_bytes(t->dtype));
}

/* What depends on v's strategy s: its compute, its inputs' and its
 * consumers' redistributions (decided neighbours only), its completion or
 * delivery, the parameters it is the first user of (their gradients and
 * other users). *bytes: the memory its own part needs. Whatever this and
 * the functions it calls read about v's surroundings, context_key must put
 * in the key (best_move's memo). */
static double local_cost(Search *x, int v, const OpSplit *s, double *bytes)
{
	const Graph *g = x->g;
	const Node *nd = &g->nodes[v];
	const NodeStrategy *ns = &x->st->node[v];
	TensorLayout in[MAX_RULE_INPUTS + 8], raw, out;
	TensorLayout *ins = nd->nin <= (int)(sizeof in / sizeof in[0]) ? in : xmalloc(sizeof(TensorLayout) * (size_t)nd->nin);
	layouts(x, v, s, ins, &raw, &out);
	double c = compute_cost(x, v, s);
	const Value *res = &g->values[nd->result];
	double mem = (double)cost_slice_bytes(&raw, res->type.dims, dtype_bytes(res->type.dtype));
	for (int k = 0; k < nd->nin; k++) {
		c += in_cost(x, v, k, &ins[k], false) + grad_cost(x, v, k, &ins[k], &raw, false);
		const Src *sr = &x->src[v][k];
		if (sr->kind != SRC_PARAM || x->first_node[sr->id] != v || x->first_in[sr->id] != k ||
		    x->st->home_fixed[sr->id])
			continue;
		int p = sr->id;
		const Value *pv = &g->values[p];
		if (is_param(x, p))
			mem += x->mem_factor * (double)cost_slice_bytes(&ins[k], pv->type.dims, dtype_bytes(pv->type.dtype));
		for (int i = x->pstart[p]; i < x->pstart[p + 1]; i++) {
			int w = x->pnode[i];
			if (x->decided[w] && !shared(x, w, x->pin[i], &x->in[w][x->pin[i]], -1, true))
				c += carry_cost(x, ins[k], p, &x->src[w][x->pin[i]], &x->in[w][x->pin[i]]);
		}
	}
	if (ns->has_out_strategy)
		c += cost_redist(x->cm, &raw, ns->delivered, res->type.dims, dtype_bytes(res->type.dtype), NULL);
	for (int i = x->cstart[v]; i < x->cstart[v + 1]; i++) {
		int w = x->cnode[i];
		if (x->decided[w] && !shared(x, w, x->cin[i], &x->in[w][x->cin[i]], -1, true))
			c += carry_cost(x, out, nd->result, &x->src[w][x->cin[i]], &x->in[w][x->cin[i]]);
	}
	if (x->returned[v])
		c += complete_cost(x, v, &out);
	if (ins != in)
		free(ins);
	*bytes = mem;
	return c;
}

/* ---- candidates ---- */

typedef struct {
	int64_t (*split)[MAX_OPDIMS];
	int n, max;
	const OpDims *od;
	int64_t devices;
	int generated;
} Gen;

static bool op_dim_used(const OpDims *od, int o)
{
	for (int k = 0; k < od->nin && k < MAX_RULE_INPUTS; k++)
		for (int d = 0; d < od->in_rank[k]; d++)
			if (od->in_dim[k][d] == o)
				return true;
	return false;
}

static void gen(Gen *g, int o, int64_t *cur, int64_t product)
{
	if (g->generated >= GEN_LIMIT)
		return;
	if (o == g->od->nod) {
		g->generated++;
		if (g->n < g->max)
			memcpy(g->split[g->n++], cur, sizeof(int64_t) * MAX_OPDIMS);
		return;
	}
	int64_t left = g->devices / product;
	bool free_dim = !(g->od->whole & (1u << o)) && op_dim_used(g->od, o);
	for (int64_t s = 1; s <= left; s++) {
		if (left % s || (s > 1 && (!free_dim || g->od->size[o] % s)))
			continue;
		cur[o] = s;
		gen(g, o + 1, cur, product * s);
	}
	cur[o] = 1;
}

static int64_t product_of(const int64_t *s, int n)
{
	int64_t p = 1;
	for (int i = 0; i < n; i++)
		p *= s[i];
	return p;
}

static int cand_cmp(const void *pa, const void *pb, void *ctx)
{
	const int64_t *a = pa, *b = pb;
	int nod = *(const int *)ctx;
	int64_t x = product_of(a, nod), y = product_of(b, nod);
	if (x != y)
		return x > y ? -1 : 1;
	for (int o = 0; o < nod; o++)
		if (a[o] != b[o])
			return a[o] > b[o] ? -1 : 1;
	return 0;
}

int op_candidates(const OpDims *od, int64_t device_num, int64_t (*out)[MAX_OPDIMS], int max)
{
	if (max < 1)
		return 0;
	OpSplit def;
	op_split_default(od, device_num, &def);
	memset(out[0], 0, sizeof(int64_t) * MAX_OPDIMS);
	memcpy(out[0], def.split, sizeof(int64_t) * (size_t)od->nod);
	int64_t (*rest)[MAX_OPDIMS] = xmalloc(sizeof *rest * (size_t)max);
	int64_t cur[MAX_OPDIMS] = {0};
	for (int o = 0; o < od->nod; o++)
		cur[o] = 1;
	Gen g = {rest, 0, max, od, device_num, 0};
	gen(&g, 0, cur, 1);
	int nod = od->nod;
	sort_r(rest, (size_t)g.n, sizeof *rest, cand_cmp, &nod);
	int n = 1;
	for (int i = 0; i < g.n && n < max; i++)
		if (memcmp(rest[i], out[0], sizeof(int64_t) * (size_t)od->nod) != 0)
			memcpy(out[n++], rest[i], sizeof(int64_t) * MAX_OPDIMS);
	free(rest);
	return n;
}

/* ---- sharding propagation ---- */

/* v takes the least-cost candidate against its decided neighbours; one
 * that fits in memory before one that does not. */
static int template_candidates(const Search *x, const OpDims *od, int64_t (*cand)[MAX_OPDIMS]);

static void decide(Search *x, int v, int64_t (*cand)[MAX_OPDIMS])
{
	const OpDims *od = x->st->node[v].od;
	int nc = x->tmpl_dp ? template_candidates(x, od, cand) : op_candidates(od, x->n, cand, MAX_CANDIDATES);
	double memory = cost_cluster(x->cm)->memory, best = INFINITY;
	bool best_fits = false;
	OpSplit best_split;
	for (int i = 0; i < nc; i++) {
		OpSplit s;
		op_split_from_splits(od, cand[i], x->n, &s);
		double mem, c = local_cost(x, v, &s, &mem);
		if (x->tmpl_dp) {   /* a template pass prices partials now: their completion, not their consumers' choice */
			TensorLayout in[MAX_RULE_INPUTS + 8], raw, out;
			if (x->g->nodes[v].nin <= (int)(sizeof in / sizeof in[0])) {
				layouts(x, v, &s, in, &raw, &out);
				if (out.partial) {
					TensorLayout done = out;
					done.partial = 0;
					const Value *res = &x->g->values[x->g->nodes[v].result];
					c += cost_redist(x->cm, &out, &done, res->type.dims, dtype_bytes(res->type.dtype), NULL);
				}
			}
		}
		bool fits = mem <= memory;
		if (i == 0 || (fits && !best_fits) || (fits == best_fits && c < best))
			best = c, best_split = s, best_fits = fits;
	}
	set_current(x, v, &best_split);
	x->decided[v] = true;
}

static bool producers_decided(const Search *x, int v)
{
	for (int k = 0; k < x->g->nodes[v].nin; k++) {
		const Src *s = &x->src[v][k];
		if (s->kind == SRC_OP && !x->decided[s->id])
			return false;
	}
	return true;
}

static bool has_decided_neighbour(const Search *x, int v)
{
	for (int k = 0; k < x->g->nodes[v].nin; k++) {
		const Src *s = &x->src[v][k];
		if ((s->kind == SRC_OP && x->decided[s->id]) || x->fixed[v][k])
			return true;
	}
	for (int i = x->cstart[v]; i < x->cstart[v + 1]; i++)
		if (x->decided[x->cnode[i]])
			return true;
	return false;
}

static void propagate(Search *x, int seed, const OpSplit *seed_split)
{
	int nn = x->g->nnodes;
	int *queue = xmalloc(sizeof(int) * (size_t)(nn ? nn : 1)), head = 0, tail = 0;
	int64_t (*cand)[MAX_OPDIMS] = xmalloc(sizeof *cand * MAX_CANDIDATES);
	for (int v = 0; v < nn; v++)
		if (x->fixed_node[v]) {
			set_current(x, v, x->st->node[v].split);
			x->decided[v] = true;
			queue[tail++] = v;
		}
	if (seed >= 0) {
		set_current(x, seed, seed_split);
		x->decided[seed] = true;
		queue[tail++] = seed;
	}
	/* Operators taking a shard's fixed inputs are seeds too. */
	for (int v = 0; v < nn; v++) {
		bool fixed = false;
		for (int k = 0; searchable(x, v) && k < x->g->nodes[v].nin; k++)
			fixed |= x->fixed[v][k] != NULL;
		if (fixed && !x->decided[v] && producers_decided(x, v)) {
			decide(x, v, cand);
			queue[tail++] = v;
		}
	}
	for (;;) {
		while (head < tail) {
			int u = queue[head++];
			const Node *nd = &x->g->nodes[u];
			for (int k = 0; k < nd->nin; k++) {
				const Src *s = &x->src[u][k];
				if (s->kind == SRC_OP && !x->decided[s->id]) {
					decide(x, s->id, cand);
					queue[tail++] = s->id;
				}
			}
			for (int i = x->cstart[u]; i < x->cstart[u + 1]; i++) {
				int w = x->cnode[i];
				if (!x->decided[w] && producers_decided(x, w)) {
					decide(x, w, cand);
					queue[tail++] = w;
				}
			}
		}
		int next = -1;
		for (int v = 0; v < nn && next < 0; v++)
			if (searchable(x, v) && !x->decided[v] && has_decided_neighbour(x, v))
				next = v;
		if (next < 0)
			break;
		decide(x, next, cand);
		queue[tail++] = next;
	}
	free(queue);
	free(cand);
}

/* ---- the double-recursive search ---- */

/* After D-Rec, sweeps of local moves: an operator moves one prime factor of
 * its devices from one op dim (or from its copies) to another, when that
 * lowers the cost against its final neighbours. local_cost is exactly the
 * part of strategies_cost an operator's strategy changes, so every move
 * lowers the total; at most REFINE_SWEEPS sweeps, in weight order. An
 * operator whose surroundings equal one's priced before takes the same move
 * without pricing (best_move's memo): the layers of a deep stack past the
 * first few. */
enum { REFINE_SWEEPS = 3 };

enum { MOVE_PRIME, MOVE_ANY };   /* best_move's kinds: refine's, polish's */

static bool best_move(Search *x, int v, int kind, Priced *out);

/* v's cheapest move of one prime factor from its current strategy, if one
 * lowers its cost; one whose own part does not fit a device is not taken
 * while the current one fits. */
static bool prime_move(Search *x, int v, Priced *out)
{
	double memory = cost_cluster(x->cm)->memory;
	const OpDims *od = x->st->node[v].od;
	double mem, best = local_cost(x, v, &x->cur[v], &mem);
	bool fits = mem <= memory, found = false;
	int64_t split[MAX_OPDIMS];
	memcpy(split, x->cur[v].split, sizeof split);
	int64_t rep = x->n / product_of(split, od->nod);
	for (int a = 0; a <= od->nod; a++) {
		int64_t have = a < od->nod ? split[a] : rep;
		for (int64_t p = 2; p <= have; p++) {
			if (have % p)
				continue;
			bool prime = true;
			for (int64_t q = 2; q * q <= p && prime; q++)
				prime = p % q != 0;
			if (!prime)
				continue;
			for (int b = 0; b <= od->nod; b++) {
				if (b == a || (b < od->nod && ((od->whole & (1u << b)) || !op_dim_used(od, b) ||
				                               od->size[b] % (split[b] * p))))
					continue;
				int64_t s2[MAX_OPDIMS];
				memcpy(s2, split, sizeof s2);
				if (a < od->nod)
					s2[a] /= p;
				if (b < od->nod)
					s2[b] *= p;
				OpSplit s;
				op_split_from_splits(od, s2, x->n, &s);
				double m2, c = local_cost(x, v, &s, &m2);
				if ((m2 <= memory || !fits) && c < best - 1e-9 * fabs(best))
					best = c, *out = (Priced){s, c, 0}, found = true;
			}
		}
	}
	return found;
}

static void refine(Search *x, const int *order, int norder)
{
	x->epoch++;   /* every operator is decided: readers summed from here on stay right (put_readers) */
	for (int sweep = 0; sweep < REFINE_SWEEPS; sweep++) {
		bool changed = false;
		for (int i = 0; i < norder; i++) {
			Priced p;
			for (int moves = 0; moves < 8 && best_move(x, order[i], MOVE_PRIME, &p); moves++) {
				set_current(x, order[i], &p.s);
				changed = true;
			}
		}
		if (!changed)
			break;
	}
}

static int weight_cmp(const void *pa, const void *pb, void *ctx)
{
	const double *weight = ctx;
	int a = *(const int *)pa, b = *(const int *)pb;
	if (weight[a] != weight[b])
		return weight[a] > weight[b] ? -1 : 1;
	return a - b;
}

static void drec(Search *x, int *order, int *norder_out)
{
	int nn = x->g->nnodes, norder = 0;
	double *weight = xcalloc((size_t)(nn ? nn : 1), sizeof(double));
	int64_t ones[MAX_OPDIMS];
	for (int o = 0; o < MAX_OPDIMS; o++)
		ones[o] = 1;
	for (int v = 0; v < nn; v++) {
		if (!searchable(x, v))
			continue;
		const NodeStrategy *ns = &x->st->node[v];
		x->decided[v] = true;
		if (x->fixed_node[v]) {
			set_current(x, v, ns->split);
			continue;
		}
		OpSplit s;
		op_split_from_splits(ns->od, ones, x->n, &s);
		set_current(x, v, &s);
		weight[v] = cost_compute(x->cm, &x->g->nodes[v], ns->od, ones);
		order[norder++] = v;
	}
	sort_r(order, (size_t)norder, sizeof(int), weight_cmp, weight);
	int64_t factor[64];
	int nf = 0;
	for (int64_t rest = x->n, p = 2; rest > 1;) {
		if (p * p > rest)
			p = rest;
		if (rest % p == 0) {
			factor[nf++] = p;
			rest /= p;
		} else
			p++;
	}
	for (int a = 0, b = nf - 1; a < b; a++, b--) {   /* largest first */
		int64_t t = factor[a];
		factor[a] = factor[b];
		factor[b] = t;
	}
	double memory = cost_cluster(x->cm)->memory;
	for (int f = 0; f < nf; f++) {
		int64_t p = factor[f];
		for (int i = 0; i < norder; i++) {
			int v = order[i];
			const OpDims *od = x->st->node[v].od;
			int64_t split[MAX_OPDIMS];
			memcpy(split, x->cur[v].split, sizeof split);
			int best = -1;
			double best_cost = INFINITY;
			bool best_fits = false;
			OpSplit best_split;
			for (int j = -1; j < od->nod; j++) {
				int o = j < 0 ? od->batch : j;
				if (o < 0 || (j >= 0 && o == od->batch) || (od->whole & (1u << o)) || !op_dim_used(od, o) ||
				    od->size[o] % (split[o] * p))
					continue;
				int64_t s2[MAX_OPDIMS];
				memcpy(s2, split, sizeof s2);
				s2[o] *= p;
				OpSplit s;
				op_split_from_splits(od, s2, x->n, &s);
				double mem, c = local_cost(x, v, &s, &mem);
				bool fits = mem <= memory;
				if (best < 0 || (fits && !best_fits) || (fits == best_fits && c < best_cost)) {
					best = o, best_cost = c, best_fits = fits, best_split = s;
				}
			}
			if (best >= 0)
				set_current(x, v, &best_split);
		}
	}
	*norder_out = norder;
	free(weight);
}

static double total(Search *x, double *memory);
static void propagate(Search *x, int seed, const OpSplit *seed_split);
static double recompute_cost(const Search *x);

/* The bytes a device needs under the current strategies, counted the way
 * the program allocates them: the strategies lowered (redistributions and,
 * with a train block, the backward pass included) and the generated
 * program's slab planned (emit_plan: parameters, inputs and optimizer state,
 * then every buffer placed by liveness, then the largest scratch), by the
 * pipeline's own stages (x->plan), whose program is freed here; the strategies' splits are
 * put back as they were. The last plan's slab is kept: asked again, it is
 * not planned again. */
static double slab_memory(Search *x)
{
	Module *m = (Module *)x->m;   /* read, not changed: the program lives in the compilation's arena */
	const Graph *g = x->g;
	const OpSplit **was = xmalloc(sizeof(OpSplit *) * (size_t)(g->nnodes ? g->nnodes : 1));
	bool same = x->slab_plan != NULL;
	for (int v = 0; v < g->nnodes; v++) {
		was[v] = x->st->node[v].split;
		if (searchable(x, v) && x->decided[v] && !x->fixed_node[v])
			strategy_set_split(x->st, v, &x->cur[v]);
		same = same && x->slab_plan[v] == x->st->node[v].split;   /* interned: equal strategies, one pointer */
	}
	if (same) {
		for (int v = 0; v < g->nnodes; v++)
			x->st->node[v].split = was[v];
		free(was);
		return x->slab;
	}
	if (!x->slab_plan)
		x->slab_plan = xmalloc(sizeof(OpSplit *) * (size_t)(g->nnodes ? g->nnodes : 1));
	for (int v = 0; v < g->nnodes; v++)
		x->slab_plan[v] = x->st->node[v].split;
	Compilation c = {.start = STAGE_LOWER, .stop = STAGE_PLAN, .name = "", .m = m, .flat = (FlatGraph *)x->f, .st = *x->st};
	c.search.cluster = *cost_cluster(x->cm);
	if (!x->plan(&c))
		die("a plan the search priced did not lower");
	const Lowered *l = c.low;
	double slab = (double)emit_slab_bytes(c.plan);
	x->slab_again = 0;
	for (int i = l->nfwd; i < l->nops; i++) {
		const LOp *o = &l->ops[i];
		if (o->recomputes >= 0 && !o->shadow && o->step && o->step->kind != STEP_SLICE)
			x->slab_again += cost_collective(x->cm, &o->step->from, o->step->axes, o->bytes);
	}
	compilation_free(&c);
	for (int v = 0; v < g->nnodes; v++)
		x->st->node[v].split = was[v];
	free(was);
	return x->slab = slab;
}

static int cost_cmp(const void *pa, const void *pb, void *ctx)
{
	const double *cost = ctx;
	int a = *(const int *)pa, b = *(const int *)pb;
	if (cost[a] != cost[b])
		return cost[a] < cost[b] ? -1 : 1;
	return a - b;
}

/* ---- the fixed point: no single operator's change that fits lowers the cost ---- */

/* Lower by more than rounding: what a move must gain, and what --explain
 * calls cheaper. */
static double below(double now)
{
	return now - 1e-9 * fabs(now);
}

static int priced_cmp(const void *pa, const void *pb, void *ctx)
{
	const Priced *a = pa, *b = pb;
	(void)ctx;
	if (a->cost != b->cost)
		return a->cost < b->cost ? -1 : 1;
	return a->at - b->at;
}

/* v's candidates other than its current strategy costing less than `bound`
 * (local_cost), cheapest first (ties: less compute, then candidate order).
 * Pricing is the search's expense (a redistribution plan per new pair of
 * layouts), so candidates are bounded first: taken in order of compute, a
 * lower bound of local_cost (its other parts are >= 0), they stop where
 * that reaches `bound`; then local_cost with every redistribution not yet
 * planned replaced by a lower bound (cost_bound_only) skips one that cannot
 * get under it. With max 1, the cheapest only, the bound tightening as it
 * goes. */
static int cheaper_candidates(Search *x, int v, double bound, Priced *out, int max)
{
	const OpDims *od = x->st->node[v].od;
	if (!x->cand)
		x->cand = xmalloc(sizeof *x->cand * MAX_CANDIDATES);
	int64_t (*cand)[MAX_OPDIMS] = x->cand;
	int nc = op_candidates(od, x->n, cand, MAX_CANDIDATES), n = 0;
	double *work = xmalloc(sizeof(double) * (size_t)nc), k = passes(x, v);
	int *ix = xmalloc(sizeof(int) * (size_t)nc);
	for (int i = 0; i < nc; i++) {
		work[i] = cost_compute(x->cm, &x->g->nodes[v], od, cand[i]) * k;
		ix[i] = i;
	}
	sort_r(ix, (size_t)nc, sizeof(int), cost_cmp, work);
	for (int j = 0; j < nc && work[ix[j]] < bound; j++) {
		int i = ix[j];
		OpSplit s;
		op_split_from_splits(od, cand[i], x->n, &s);
		if (memcmp(s.split, x->cur[v].split, sizeof s.split) == 0 || compute_cost(x, v, &s) >= bound)
			continue;
		double mem;
		cost_bound_only(x->cm, true);
		double least = local_cost(x, v, &s, &mem);
		cost_bound_only(x->cm, false);
		if (least >= bound)
			continue;
		double c = local_cost(x, v, &s, &mem);
		if (!(c < bound))
			continue;
		if (max == 1)
			n = 0, bound = c;
		if (n < max)
			out[n++] = (Priced){s, c, j};
	}
	sort_r(out, (size_t)n, sizeof *out, priced_cmp, NULL);
	free(work);
	free(ix);
	return n;
}

typedef struct {
	int v;
	const OpSplit *was, *now;   /* interned */
} Move;

/* The first `to` moves of log applied, the rest undone; *at: how many are. */
static void replay(Search *x, const Move *log, int *at, int to)
{
	for (; *at > to; --*at)
		set_current(x, log[*at - 1].v, log[*at - 1].was);
	for (; *at < to; ++*at)
		set_current(x, log[*at].v, log[*at].now);
}

/* What v's strategy enters the local cost of: v, its producers and their
 * other consumers (shared redistributions), the other users of its
 * parameters, its consumers. */
static void touch(const Search *x, int v, bool *dirty)
{
	const Node *nd = &x->g->nodes[v];
	dirty[v] = true;
	for (int k = 0; k < nd->nin; k++) {
		const Src *s = &x->src[v][k];
		if (s->kind == SRC_OP) {
			dirty[s->id] = true;
			for (int i = x->cstart[s->id]; i < x->cstart[s->id + 1]; i++)
				dirty[x->cnode[i]] = true;
		} else if (s->kind == SRC_PARAM) {
			if (x->first_node[s->id] >= 0)
				dirty[x->first_node[s->id]] = true;
			for (int i = x->pstart[s->id]; i < x->pstart[s->id + 1]; i++)
				dirty[x->pnode[i]] = true;
		}
	}
	for (int i = x->cstart[v]; i < x->cstart[v + 1]; i++)
		dirty[x->cnode[i]] = true;
}

/* ---- the memo of the sweeps: operators in equal surroundings ---- */

/* Everything local_cost reads for operator v, whatever the candidate, as
 * integers: v's operator, op dims, values and current strategy; per input
 * its source's layout (or home), the Reshapes between, a fixed layout, and
 * the layouts other decided readers take it in (shared); the other users of
 * a parameter v places, and its consumers, with their layouts and whether
 * an earlier reader shares theirs. Two operators with equal keys price
 * every candidate alike: in a deep stack of equal layers, the layers past
 * the first few are not priced again (memo). local_cost and the functions
 * it calls must not read anything this leaves out. */
static void put(Key *k, int64_t v)
{
	if (k->n == k->cap) {
		k->cap = k->cap ? 2 * k->cap : 256;
		k->k = xrealloc(k->k, sizeof(int64_t) * (size_t)k->cap);
	}
	k->k[k->n++] = v;
}

static void put_layout(Key *k, const TensorLayout *l)
{
	put(k, l->ndev);
	for (int a = 0; a < l->ndev; a++)
		put(k, l->dev[a]);
	put(k, l->rank);
	for (int d = 0; d < l->rank; d++) {
		put(k, l->nmap[d]);
		for (int i = 0; i < l->nmap[d]; i++)
			put(k, l->map[d][i]);
	}
	put(k, l->partial);
	put(k, l->partial ? (int64_t)l->partial_op : 0);
}

static void put_value(Key *k, const Search *x, int value)
{
	const Type *t = &x->g->values[value].type;
	put(k, t->rank);
	for (int d = 0; d < t->rank; d++)
		put(k, t->dims[d]);
	put(k, t->dtype);
	put(k, t->is_param);
	put(k, x->needs[value]);
}

static void put_chain(Key *k, const Search *x, const Src *s)
{
	put(k, s->nchain);
	for (int i = 0; i < s->nchain; i++)
		put_value(k, x, x->g->nodes[x->chain[s->chain + i]].result);
}

enum { KEY_FANOUT = 16 };

/* The readers of input k of v: (*node, *in)[0..*n), and a parameter's first
 * user (*first, -1 none) besides. */
static void readers_of(const Search *x, int v, int k, int *n, const int **node, const int **in, int *first)
{
	const Src *s = &x->src[v][k];
	*n = 0, *first = -1;
	if (s->kind == SRC_OP) {
		*n = x->cstart[s->id + 1] - x->cstart[s->id];
		*node = x->cnode + x->cstart[s->id];
		*in = x->cin + x->cstart[s->id];
	} else if (s->kind == SRC_PARAM) {
		*n = x->pstart[s->id + 1] - x->pstart[s->id];
		*node = x->pnode + x->pstart[s->id];
		*in = x->pin + x->pstart[s->id];
		*first = x->first_node[s->id];
	}
}

/* Reader w's entry for input j: the layout and gradient axes shared() compares. */
static void put_reader(Key *k, const Search *x, int w, int j)
{
	put_layout(k, &x->in[w][j]);
	put(k, (int64_t)(layout_busy_axes(&x->raw[w]) & ~layout_busy_axes(&x->in[w][j])));
}

static bool is_reader(const Search *x, int w, int j, int value)
{
	return w >= 0 && x->decided[w] && searchable(x, w) && x->g->nodes[w].in[j] == value;
}

/* The entry equal to the one in e, or -1. */
static int find_entry(const Readers *r, const Key *e)
{
	for (int i = 0; i < r->n; i++)
		if (r->start[i + 1] - r->start[i] == e->n &&
		    memcmp(r->k.k + r->start[i], e->k, sizeof(int64_t) * (size_t)e->n) == 0)
			return i;
	return -1;
}

/* The readers of input kin's value other than v (shared, with before false):
 * the layouts and gradient axes they take it in, each once. With more than
 * KEY_FANOUT readers, from the value's sum (Readers), less v's own. */
static void put_readers(Key *k, Search *x, int v, int kin)
{
	int value = x->g->nodes[v].in[kin], n, first;
	const int *node = NULL, *in = NULL;
	readers_of(x, v, kin, &n, &node, &in, &first);
	if (n <= KEY_FANOUT) {
		int last = -1;
		for (int i = first >= 0 ? -1 : 0; i < n; i++) {   /* -1: a parameter's first user */
			int w = i < 0 ? first : node[i], j = i < 0 ? x->first_in[x->src[v][kin].id] : in[i];
			if (w == v || !is_reader(x, w, j, value))
				continue;
			int at = k->n;
			put_reader(k, x, w, j);
			if (last >= 0 && at - last == k->n - at &&
			    memcmp(k->k + last, k->k + at, sizeof(int64_t) * (size_t)(at - last)) == 0)
				k->n = at;
			else
				last = at;
		}
		put(k, -1);
		return;
	}
	if (!x->readers) {
		x->readers = xcalloc((size_t)x->g->nvalues, sizeof *x->readers);
		for (int u = 0; u < x->g->nvalues; u++)
			x->readers[u].epoch = -1;
	}
	Readers *r = &x->readers[value];
	if (r->epoch != x->epoch || r->version != x->version[value]) {
		r->k.n = r->n = 0;
		for (int i = first >= 0 ? -1 : 0; i < n; i++) {
			int w = i < 0 ? first : node[i], j = i < 0 ? x->first_in[x->src[v][kin].id] : in[i];
			if (!is_reader(x, w, j, value))
				continue;
			x->entry.n = 0;
			put_reader(&x->entry, x, w, j);
			int e = find_entry(r, &x->entry);
			if (e < 0) {
				if (r->n == r->cap) {
					r->cap = r->cap ? 2 * r->cap : 4;
					r->start = xrealloc(r->start, sizeof(int) * (size_t)(r->cap + 1));
					r->count = xrealloc(r->count, sizeof(int) * (size_t)r->cap);
				}
				r->start[r->n] = r->k.n;
				for (int t = 0; t < x->entry.n; t++)
					put(&r->k, x->entry.k[t]);
				e = r->n++;
				r->start[r->n] = r->k.n;
				r->count[e] = 0;
			}
			r->count[e]++;
		}
		r->epoch = x->epoch, r->version = x->version[value];
	}
	int mine[MAX_RULE_INPUTS + 8], nmine = 0;   /* v's own entries */
	for (int j = 0; j < x->g->nodes[v].nin && nmine < (int)(sizeof mine / sizeof mine[0]); j++)
		if (is_reader(x, v, j, value)) {
			x->entry.n = 0;
			put_reader(&x->entry, x, v, j);
			mine[nmine++] = find_entry(r, &x->entry);
		}
	put(k, -2);
	for (int i = 0; i < r->n; i++) {
		int c = r->count[i];
		for (int t = 0; t < nmine; t++)
			c -= mine[t] == i;
		for (int t = r->start[i]; c > 0 && t < r->start[i + 1]; t++)
			put(k, r->k.k[t]);
	}
	put(k, -1);
}

/* A consumer w (input j) of what v places or produces: whether it is decided
 * and, if so, the layout it reads, the chain that brings it, and whether the
 * move is shared. */
static void put_consumer(Key *k, const Search *x, int w, int j)
{
	put(k, x->decided[w]);
	if (!x->decided[w])
		return;
	put_layout(k, &x->in[w][j]);
	put_chain(k, x, &x->src[w][j]);
	put(k, shared(x, w, j, &x->in[w][j], -1, true));
}

/* False, with no key, when v's result or a parameter v places has more than
 * KEY_FANOUT readers: the key would list them all (its one producer is
 * priced each time instead). */
static bool context_key(Search *x, int v, int kind, Key *k)
{
	const Graph *g = x->g;
	const Node *nd = &g->nodes[v];
	const NodeStrategy *ns = &x->st->node[v];
	const OpDims *od = ns->od;
	k->n = 0;
	if (x->cstart[v + 1] - x->cstart[v] > KEY_FANOUT || nd->nin > MAX_RULE_INPUTS + 8)
		return false;
	for (int kin = 0; kin < nd->nin; kin++) {
		const Src *s = &x->src[v][kin];
		if (s->kind == SRC_PARAM && x->first_node[s->id] == v && x->first_in[s->id] == kin &&
		    x->pstart[s->id + 1] - x->pstart[s->id] > KEY_FANOUT)
			return false;
	}
	put(k, kind);
	put(k, nd->op);
	put(k, nd->nin);
	put_value(k, x, nd->result);
	put(k, x->returned[v]);
	put(k, ns->has_out_strategy);
	if (ns->has_out_strategy)
		put_layout(k, ns->delivered);
	put(k, od->nod);
	for (int o = 0; o < od->nod; o++)
		put(k, od->size[o]), put(k, x->cur[v].split[o]);
	put(k, od->whole), put(k, od->normalized), put(k, od->reduced), put(k, od->reduce_op), put(k, od->batch);
	put(k, od->nstats_fwd), put(k, od->nstats_bwd), put(k, od->nin), put(k, od->out_rank);
	for (int d = 0; d < od->out_rank; d++)
		put(k, od->out_dim[d]);
	for (int i = 0; i < od->nin && i < MAX_RULE_INPUTS; i++) {
		put(k, od->in_rank[i]);
		for (int d = 0; d < od->in_rank[i]; d++)
			put(k, od->in_dim[i][d]);
	}
	for (int kin = 0; kin < nd->nin; kin++) {
		const Src *s = &x->src[v][kin];
		put_value(k, x, nd->in[kin]);
		put(k, differentiable(g, nd, kin));
		put(k, s->kind);
		put_chain(k, x, s);
		put(k, x->fixed[v][kin] != NULL);
		if (x->fixed[v][kin]) {
			put_layout(k, x->fixed[v][kin]);
			put_value(k, x, s->id);
		}
		put_readers(k, x, v, kin);
		if (s->kind == SRC_OP) {
			put_value(k, x, g->nodes[s->id].result);
			put(k, x->decided[s->id]);
			if (x->decided[s->id])
				put_layout(k, &x->out[s->id]);
		} else if (s->kind == SRC_PARAM) {
			int p = s->id;
			bool places = x->first_node[p] == v && x->first_in[p] == kin && !x->st->home_fixed[p];
			put_value(k, x, p);
			put(k, places);
			if (!places) {
				const TensorLayout *h = home(x, p);
				put(k, h != NULL);
				if (h)
					put_layout(k, h);
				continue;
			}
			for (int i = x->pstart[p]; i < x->pstart[p + 1]; i++)
				put_consumer(k, x, x->pnode[i], x->pin[i]);
			put(k, -1);
		}
	}
	for (int i = x->cstart[v]; i < x->cstart[v + 1]; i++)
		put_consumer(k, x, x->cnode[i], x->cin[i]);
	put(k, -1);
	return true;
}

static uint64_t key_hash(const Key *k)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (int i = 0; i < k->n; i++) {
		h = (h ^ (uint64_t)k->k[i]) * 0x100000001b3ull;
		h ^= h >> 29;
	}
	return h;
}

/* The slot of key k: its entry, or the empty one to fill. */
static Memo *memo_slot(MemoTable *t, const Key *k)
{
	if (2 * (t->n + 1) > t->nslot) {
		size_t nslot = t->nslot ? 2 * t->nslot : 1024;
		Memo *slot = xcalloc(nslot, sizeof *slot);
		for (size_t i = 0; i < t->nslot; i++)
			if (t->slot[i].key) {
				Key old = {t->slot[i].key, t->slot[i].nkey, 0};
				size_t at = key_hash(&old) & (nslot - 1);
				while (slot[at].key)
					at = (at + 1) & (nslot - 1);
				slot[at] = t->slot[i];
			}
		free(t->slot);
		t->slot = slot;
		t->nslot = nslot;
	}
	size_t at = key_hash(k) & (t->nslot - 1);
	for (; t->slot[at].key; at = (at + 1) & (t->nslot - 1))
		if (t->slot[at].nkey == k->n && memcmp(t->slot[at].key, k->k, sizeof(int64_t) * (size_t)k->n) == 0)
			return &t->slot[at];
	return &t->slot[at];
}

/* v's best move from its current strategy, or false: MOVE_PRIME, refine's
 * (one prime factor of the devices moved between two op dims or the
 * copies); MOVE_ANY, polish's (the cheapest of all candidates). Answered
 * from the memo when an operator with v's key asked before; the memo is
 * emptied past MEMO_MAX keys (a graph without repeats gains nothing from
 * it). */
enum { MEMO_MAX = 1 << 14 };

static bool find_move(Search *x, int v, int kind, Priced *out)
{
	if (kind == MOVE_PRIME)
		return prime_move(x, v, out);
	double mem, now = local_cost(x, v, &x->cur[v], &mem);
	return cheaper_candidates(x, v, below(now), out, 1) > 0;
}

static bool best_move(Search *x, int v, int kind, Priced *out)
{
	if (!context_key(x, v, kind, &x->key))
		return find_move(x, v, kind, out);
	if (!x->memo.a || x->memo.n == MEMO_MAX) {
		free(x->memo.slot);
		if (x->memo.a)
			arena_free(x->memo.a);
		x->memo = (MemoTable){NULL, 0, 0, arena_new()};
	}
	Memo *m = memo_slot(&x->memo, &x->key);
	if (m->key) {
		*out = m->best;
		return m->found;
	}
	bool found = find_move(x, v, kind, out);
	m->key = arena_alloc(x->memo.a, sizeof(int64_t) * (size_t)x->key.n);
	memcpy(m->key, x->key.k, sizeof(int64_t) * (size_t)x->key.n);
	m->nkey = x->key.n;
	m->found = found;
	if (found)
		m->best = *out;
	x->memo.n++;
	return found;
}

enum { POLISH_MOVES = 64 };   /* a guard: moves per operator */

/* From the current strategies, sweeps in weight order in which an operator
 * takes its cheapest candidate (all of op_candidates, not only refine's
 * moves) when that lowers the total, until none does: the fixed point. The
 * first sweep prices every operator (an operator whose surroundings equal
 * one priced before is answered from the memo), the next ones those whose
 * surroundings changed (touch). Memory: the plan's slab may not exceed
 * `limit`. The moves are checked together, once, when no operator has one
 * left; if they do not fit, they are cut back to their longest prefix that
 * does (bisection on the slab), and from then on each move is checked
 * alone: an operator tries its cheaper candidates, cheapest first, and
 * takes the first that fits; one left with cheaper candidates that do not
 * fit is tried again after any move (the slab is the whole plan's). So at
 * the end no single operator's change that fits lowers the total: a
 * cheaper --explain runner-up is one that does not fit. Each move lowers
 * the total, so the sweeps end. */
static void polish(Search *x, const int *order, int norder, double limit)
{
	int nn = x->g->nnodes, nlog = 0, cap = 0;
	Priced *pr = xmalloc(sizeof *pr * MAX_CANDIDATES);
	Move *log = NULL;
	bool *dirty = xcalloc((size_t)(nn ? nn : 1), sizeof(bool)), *blocked = xcalloc((size_t)(nn ? nn : 1), sizeof(bool));
	Arena *a = arena_new();
	Interner *splits = interner_new(a);
	for (int v = 0; v < nn; v++)
		x->decided[v] = searchable(x, v);
	x->epoch++;
	for (int i = 0; i < norder; i++)
		dirty[order[i]] = true;
	bool tight = false, more = true;
	int64_t moves = 0, most = (int64_t)POLISH_MOVES * norder;
	while (more) {
		more = false;
		for (int i = 0; i < norder; i++) {
			int v = order[i];
			if (!dirty[v] || moves == most)
				continue;
			dirty[v] = false;
			if (!tight) {
				if (best_move(x, v, MOVE_ANY, pr)) {
					if (nlog == cap) {
						cap = cap ? 2 * cap : 256;
						log = xrealloc(log, sizeof *log * (size_t)cap);
					}
					log[nlog++] = (Move){v, intern_bytes(splits, &x->cur[v], sizeof(OpSplit)),
					                     intern_bytes(splits, &pr[0].s, sizeof(OpSplit))};
					set_current(x, v, &pr[0].s);
					touch(x, v, dirty);
					more = true;
					moves++;
				}
				continue;
			}
			OpSplit was = x->cur[v];
			double mem, now = local_cost(x, v, &x->cur[v], &mem);
			int n = cheaper_candidates(x, v, below(now), pr, MAX_CANDIDATES);
			bool took = false;
			for (int j = 0; j < n && !took; j++) {
				set_current(x, v, &pr[j].s);
				took = slab_memory(x) <= limit;
				if (!took)
					set_current(x, v, &was);
			}
			blocked[v] = n > 0 && !took;
			if (took) {
				for (int w = 0; w < nn; w++)
					dirty[w] |= blocked[w];
				touch(x, v, dirty);
				more = true;
				moves++;
			}
		}
		if (more || tight || !nlog || slab_memory(x) <= limit)
			continue;
		int lo = 0, hi = nlog, at = nlog;   /* none of the moves fits; all do not */
		while (hi - lo > 1) {
			int mid = lo + (hi - lo) / 2;
			replay(x, log, &at, mid);
			if (slab_memory(x) <= limit)
				lo = mid;
			else
				hi = mid;
		}
		replay(x, log, &at, lo);
		for (int j = 0; j < nlog; j++)
			touch(x, log[j].v, dirty);
		tight = more = true;
	}
	free(pr);
	free(log);
	free(dirty);
	free(blocked);
	arena_free(a);
}

/* The starts' results, kept to choose among them once all are known. */
typedef struct {
	OpSplit **keep;
	double *cost;
	int n, cap;
} Starts;

static void consider(Search *x, Starts *b)
{
	size_t size = sizeof(OpSplit) * (size_t)(x->g->nnodes ? x->g->nnodes : 1);
	for (int i = 0; i < b->n; i++)
		if (memcmp(b->keep[i], x->cur, size) == 0)
			return;
	if (b->n == b->cap) {
		b->cap = b->cap ? 2 * b->cap : 16;
		b->keep = xrealloc(b->keep, sizeof(OpSplit *) * (size_t)b->cap);
		b->cost = xrealloc(b->cost, sizeof(double) * (size_t)b->cap);
	}
	double mem;
	b->cost[b->n] = total(x, &mem);
	b->keep[b->n] = xmalloc(size);
	memcpy(b->keep[b->n++], x->cur, size);
}

static void set_plan(Search *x, const OpSplit *plan)
{
	for (int v = 0; v < x->g->nnodes; v++)
		if (searchable(x, v))
			set_current(x, v, &plan[v]);
}

enum { CROSSOVERS = 3 };

/* The cheapest start whose program fits a device (slab_memory, tried in
 * order of cost); when none fits, the one that needs the least. When
 * cheaper starts do not fit, crossovers too: with f one of the CROSSOVERS
 * cheapest of those and s the fitting one, the hybrid that takes s's
 * strategies for the searched operators before graph position k and f's
 * from there, for the least k that fits (bisection on the slab): f's speed
 * in as many layers as memory allows. The cheapest that fits is left
 * current. Returns the memory the plan may need: the device's, or when
 * none fits, what the one left needs. */
static double choose(Search *x, Starts *b)
{
	int nn = x->g->nnodes, *idx = xmalloc(sizeof(int) * (size_t)(b->n ? b->n : 1)), pick = -1, j = 0;
	for (int i = 0; i < b->n; i++)
		idx[i] = i;
	sort_r(idx, (size_t)b->n, sizeof(int), cost_cmp, b->cost);
	double least = INFINITY, memory = cost_cluster(x->cm)->memory;
	for (; j < b->n; j++) {
		set_plan(x, b->keep[idx[j]]);
		double mem = slab_memory(x);
		if (mem <= memory) {
			pick = idx[j];
			break;
		}
		if (mem < least)
			least = mem, pick = idx[j];
	}
	size_t size = sizeof(OpSplit) * (size_t)(nn ? nn : 1);
	OpSplit *best = xmalloc(size);
	if (pick >= 0)
		memcpy(best, b->keep[pick], size);
	double best_cost = pick >= 0 ? b->cost[pick] : 0;
	int *pos = xmalloc(sizeof(int) * (size_t)(nn ? nn : 1)), npos = 0;
	for (int v = 0; v < nn; v++)
		if (searchable(x, v))
			pos[npos++] = v;
	for (int f = 0; j < b->n && f < j && f < CROSSOVERS; f++) {
		const OpSplit *fit = b->keep[pick], *fast = b->keep[idx[f]];
		int lo = 0, hi = npos;   /* fast's from pos[lo] on does not fit; from pos[hi] (none) does */
		while (hi - lo > 1) {
			int mid = lo + (hi - lo) / 2;
			for (int i = 0; i < npos; i++)
				set_current(x, pos[i], i < mid ? &fit[pos[i]] : &fast[pos[i]]);
			if (slab_memory(x) <= memory)
				hi = mid;
			else
				lo = mid;
		}
		for (int i = 0; i < npos; i++)
			set_current(x, pos[i], i < hi ? &fit[pos[i]] : &fast[pos[i]]);
		double mem, c = total(x, &mem);
		if (c < best_cost)
			best_cost = c, memcpy(best, x->cur, size);
	}
	if (pick >= 0)
		set_plan(x, best);
	for (int i = 0; i < b->n; i++)
		free(b->keep[i]);
	free(b->keep);
	free(b->cost);
	free(idx);
	free(pos);
	free(best);
	return j < b->n ? memory : least;
}

/* Operators left undecided take their default (whole: computed whole on
 * every device); fixed ones their own. */
static void settle(Search *x, bool whole)
{
	for (int v = 0; v < x->g->nnodes; v++)
		if (searchable(x, v) && !x->decided[v]) {
			const OpSplit *s = x->st->node[v].split;
			OpSplit w;
			if (whole && !x->fixed_node[v]) {
				int64_t ones[MAX_OPDIMS];
				for (int o = 0; o < MAX_OPDIMS; o++)
					ones[o] = 1;
				op_split_from_splits(x->st->node[v].od, ones, x->n, &w);
				s = &w;
			}
			set_current(x, v, s);
			x->decided[v] = true;
		}
}

/* A Megatron template's candidates for an operator: the batch dim split by
 * the largest divisor of dp dividing it, and no other dim, or one other dim
 * split by mp (data-parallel copies of a column, row or head split); as in
 * Megatron, a normalized dim (Softmax's axis, LayerNorm's) stays whole. Ties go
 * to a dim the output keeps (a column split before a row split's partials). */
static int template_candidates(const Search *x, const OpDims *od, int64_t (*cand)[MAX_OPDIMS])
{
	int nc = 0;
	int64_t bsplit = 1;
	int b = od->batch;
	if (b >= 0 && !(od->whole & (1u << b)) && op_dim_used(od, b))
		for (int64_t d = x->tmpl_dp; d > 1; d--)
			if (x->tmpl_dp % d == 0 && od->size[b] % d == 0) {
				bsplit = d;
				break;
			}
	for (int i = -1; i < 2 * od->nod; i++) {   /* ties: dims the output keeps before reduced ones */
		int o = i < 0 ? -1 : i % od->nod;
		if (i >= 0 && (((od->reduced >> o) & 1) != (i >= od->nod)))
			continue;
		if (o >= 0 && (o == b || ((od->whole | od->normalized) & (1u << o)) || !op_dim_used(od, o) ||
		               od->size[o] % x->tmpl_mp || x->tmpl_mp == 1))
			continue;
		for (int k = 0; k < MAX_OPDIMS; k++)
			cand[nc][k] = 1;
		if (b >= 0)
			cand[nc][b] = bsplit;
		if (o >= 0)
			cand[nc][o] = x->tmpl_mp;
		nc++;
	}
	return nc;
}

/* The data-parallel template of degree dp: every searched operator splits
 * its batch dim by the largest divisor of dp that divides it, the rest of
 * the devices copies. */
static void data_template(Search *x, int64_t dp)
{
	for (int v = 0; v < x->g->nnodes; v++) {
		if (!searchable(x, v))
			continue;
		x->decided[v] = true;
		if (x->fixed_node[v]) {
			set_current(x, v, x->st->node[v].split);
			continue;
		}
		const OpDims *od = x->st->node[v].od;
		int64_t split[MAX_OPDIMS];
		for (int o = 0; o < MAX_OPDIMS; o++)
			split[o] = 1;
		int b = od->batch;
		if (b >= 0 && !(od->whole & (1u << b)) && op_dim_used(od, b))
			for (int64_t d = dp; d > 1; d--)
				if (dp % d == 0 && od->size[b] % d == 0) {
					split[b] = d;
					break;
				}
		OpSplit s;
		op_split_from_splits(od, split, x->n, &s);
		set_current(x, v, &s);
	}
}

/* D-Rec, then local moves (refine); and, beyond MindSpore, further starts,
 * each followed by the same moves, the best kept (one that fits a device
 * before one that does not, then the cheapest): propagation from the
 * defaults; with training, every operator computed whole on every device;
 * the data-parallel templates (every divisor dp of the device count, the
 * batch dims split dp, the rest copies); and the dp x mp
 * templates: for each divisor dp < device_num, every operator in graph order
 * takes the cheapest against its producers of the batch dim split dp with no
 * other dim or one other op dim split mp = device_num / dp (template_candidates).
 * D-Rec's level-by-level choices can lock a deep stack into a local optimum
 * that these starts may avoid. The templates are kept as they are, and the
 * TEMPLATE_REFINES cheapest dp x mp ones also after the local moves. The
 * start choose keeps (or its crossover) is then polished to the fixed point
 * under the device's memory. */
enum { TEMPLATE_REFINES = 2 };

static void recursive(Search *x)
{
	int nn = x->g->nnodes, norder;
	int *order = xmalloc(sizeof(int) * (size_t)(nn ? nn : 1));
	Starts b = {0}, tm = {0};   /* every start; the dp x mp templates as they are */
	drec(x, order, &norder);
	refine(x, order, norder);
	consider(x, &b);
	for (int start = 0; start < (x->m->train ? 2 : 1); start++) {
		memset(x->decided, 0, sizeof(bool) * (size_t)nn);
		if (start == 0)
			propagate(x, -1, NULL);
		settle(x, start == 1);
		refine(x, order, norder);
		consider(x, &b);
	}
	for (int64_t dp = x->n; dp >= 1; dp--) {
		if (x->n % dp)
			continue;
		data_template(x, dp);
		consider(x, &b);   /* itself too: refine trades memory it does not see for speed */
	}
	for (int64_t dp = x->n; dp >= 1; dp--) {
		if (x->n % dp || dp == x->n)
			continue;
		x->tmpl_dp = dp, x->tmpl_mp = x->n / dp;
		memset(x->decided, 0, sizeof(bool) * (size_t)nn);
		for (int v = 0; v < nn; v++)
			if (searchable(x, v)) {
				if (x->fixed_node[v]) {
					set_current(x, v, x->st->node[v].split);
					x->decided[v] = true;
				} else {
					int64_t cand[MAX_OPDIMS + 1][MAX_OPDIMS];
					decide(x, v, cand);
				}
			}
		x->tmpl_dp = x->tmpl_mp = 0;
		consider(x, &b);
		consider(x, &tm);
	}
	/* The local moves from the cheapest templates only: a refine from each
	 * costs most of the search's time at many devices. */
	int *idx = xmalloc(sizeof(int) * (size_t)(tm.n ? tm.n : 1));
	for (int i = 0; i < tm.n; i++)
		idx[i] = i;
	sort_r(idx, (size_t)tm.n, sizeof(int), cost_cmp, tm.cost);
	for (int j = 0; j < tm.n && j < TEMPLATE_REFINES; j++) {
		for (int v = 0; v < nn; v++)
			if (searchable(x, v))
				set_current(x, v, &tm.keep[idx[j]][v]);
		refine(x, order, norder);
		consider(x, &b);
	}
	for (int i = 0; i < tm.n; i++)
		free(tm.keep[i]);
	free(tm.keep);
	free(tm.cost);
	free(idx);
	polish(x, order, norder, choose(x, &b));
	free(order);
}

/* ---- functional shard's result, and the whole ---- */

/* The node computing a shard Call's result lays it out by dataset_strategy
 * (full_batch: whole; data_parallel: dim 0 split over every device when it
 * divides). It becomes the node's out_strategy, written into its attributes
 * so that step_parallel_begin carries it. */
static void shard_results(Search *x)
{
	Arena *a = x->m->arena;
	Graph *g = x->f->g;
	for (int v = 0; v < g->nnodes; v++) {
		const ShardSpec *sh = x->f->shard[v];
		if (!sh || !searchable(x, v) || x->st->node[v].has_out_strategy)
			continue;
		const Graph *callee = shard_callee(x->m, sh);
		const Node *orig = x->f->orig[v];
		if (!node_in_graph(callee, orig) || callee->nret != 1 || orig->result != callee->ret[0])
			continue;
		Node *nd = &g->nodes[v];
		const Type *t = &g->values[nd->result].type;
		TensorStrategy *ts = arena_alloc(a, sizeof *ts);
		ts->given = true;
		ts->rank = t->rank;
		ts->span = nd->span;
		for (int d = 0; d < t->rank; d++)
			ts->split[d] = 1;
		if (x->m->ctx.dataset_mode == DS_DATA_PARALLEL && t->rank > 0 && t->dims[0] % x->n == 0)
			ts->split[0] = x->n;
		TensorLayout l;
		if (!layout_from_strategy(ts, x->n, &l))
			die("a dataset layout of %lld devices does not fit", (long long)x->n);
		strategy_set_delivered(x->st, v, &l);
		nd->a.out_strategy = (Strategy){1, ts, nd->span};
		nd->a.present |= 1u << ATTR_OUT_STRATEGY;
		/* out_strategy: ((s0, s1, ...),) in a copy of the attribute dict. */
		Lit *dict = lit_new(a, LIT_DICT, nd->span), *outer = lit_new(a, LIT_TUPLE, nd->span);
		Lit *inner = lit_new(a, LIT_TUPLE, nd->span);
		for (int d = 0; d < t->rank; d++) {
			Lit *num = lit_new(a, LIT_INT, nd->span);
			num->i = ts->split[d];
			lit_push(a, inner, NULL, num);
		}
		lit_push(a, outer, NULL, inner);
		for (int i = 0; nd->attr_lit && i < nd->attr_lit->nitems; i++)
			lit_push(a, dict, nd->attr_lit->keys[i], nd->attr_lit->items[i]);
		Lit *key = lit_new(a, LIT_IDENT, nd->span);
		key->s = "out_strategy";
		lit_push(a, dict, key, outer);
		nd->attr_lit = dict;
	}
}

static void search_init(Search *x, const Module *m, const FlatGraph *f, Strategies *s, const Cluster *c)
{
	memset(x, 0, sizeof *x);
	x->m = m;
	x->f = f;
	x->g = f->g;
	x->st = s;
	x->n = s->device_num;
	bool train = m->train != NULL;
	x->cm = cost_new(c, s->device_num, train);
	/* parameters, gradients and the optimizer's state (SGD's with momentum, Momentum's v, Adam's m and v) */
	const Train *t = m->train;
	x->mem_factor = !train ? 1
	              : t->optimizer == OPT_SGD ? (t->momentum > 0 ? 3 : 2)
	              : t->optimizer == OPT_MOMENTUM ? 3 : 4;
	build(x);
}

static void search_done(Search *x)
{
	search_free(x);
	cost_free(x->cm);
}

/* The total cost and per-device memory of the current strategies. */
static double total(Search *x, double *memory)
{
	const Graph *g = x->g;
	double c = 0, mem = 0;
	for (int v = 0; v < g->nnodes; v++)
		if (searchable(x, v))
			x->decided[v] = true;
	for (int v = 0; v < g->nnodes; v++) {
		if (!searchable(x, v))
			continue;
		const Node *nd = &g->nodes[v];
		const NodeStrategy *ns = &x->st->node[v];
		const Value *res = &g->values[nd->result];
		c += compute_cost(x, v, &x->cur[v]);
		for (int k = 0; k < nd->nin; k++)
			c += in_cost(x, v, k, &x->in[v][k], true) + grad_cost(x, v, k, &x->in[v][k], &x->raw[v], true);
		if (ns->has_out_strategy)
			c += cost_redist(x->cm, &x->raw[v], ns->delivered, res->type.dims, dtype_bytes(res->type.dtype), NULL);
		if (x->returned[v])
			c += complete_cost(x, v, &x->out[v]);
		mem += (double)cost_slice_bytes(&x->raw[v], res->type.dims, dtype_bytes(res->type.dtype));
	}
	for (int p = 0; p < g->nparams; p++) {
		const TensorLayout *h = home(x, p);
		const Value *pv = &g->values[p];
		if (!h || !is_param(x, p))
			continue;
		mem += x->mem_factor * (double)cost_slice_bytes(h, pv->type.dims, dtype_bytes(pv->type.dtype));
	}
	*memory = mem;
	return c;
}

double strategies_cost(const Module *m, const FlatGraph *f, const Strategies *s, const Cluster *c)
{
	Search x;
	search_init(&x, m, f, (Strategies *)s, c);
	for (int v = 0; v < f->g->nnodes; v++)
		if (searchable(&x, v))
			set_current(&x, v, s->node[v].split);
	double mem, t = total(&x, &mem);
	search_done(&x);
	return t;
}

static void print_split(StrBuf *b, const Search *x, int v, const OpSplit *s)
{
	const Node *nd = &x->g->nodes[v];
	sb_putc(b, '(');
	for (int k = 0; k < nd->nin; k++) {
		int64_t split[MAX_DIMS];
		op_in_split(x->st->node[v].od, s, k, split);
		if (k)
			sb_puts(b, ", ");
		ints_print(b, split, x->in[v][k].rank);
	}
	sb_puts(b, nd->nin == 1 ? ",)" : ")");
}

/* Per operator: the strategy, its cost against its final neighbours, and the
 * best other candidate; when that one is cheaper, the slab of the plan with
 * it instead, which does not fit after D-Rec (polish). */
static void explain(Search *x, double cost, double memory, FILE *out)
{
	const Graph *g = x->g;
	Priced second;
	fprintf(out, "# strategy search (%s, %lld devices): per operator the strategy chosen, its cost against its "
	        "neighbours and the runner-up\n", search_mode_name(x->m->ctx.search_mode), (long long)x->n);
	for (int v = 0; v < g->nnodes; v++) {
		if (!searchable(x, v))
			continue;
		const NodeStrategy *ns = &x->st->node[v];
		StrBuf b = {0};
		double mem, mine = local_cost(x, v, &x->cur[v], &mem);
		sb_printf(&b, "%%%s %s: ", g->values[g->nodes[v].result].name, op_info[g->nodes[v].op].name);
		if (ns->split->tuple)
			print_split(&b, x, v, &x->cur[v]);
		else
			sb_puts(&b, "(a Layout)");
		sb_printf(&b, " cost %.4g s", mine);
		if (x->fixed_node[v])
			sb_puts(&b, ns->user ? " (user)" : " (parameter_plan)");
		else if (cheaper_candidates(x, v, INFINITY, &second, 1)) {
			sb_puts(&b, "; runner-up ");
			print_split(&b, x, v, &second.s);
			sb_printf(&b, " cost %.4g s", second.cost);
			if (second.cost < below(mine)) {
				OpSplit was = x->cur[v];
				char need[32];
				set_current(x, v, &second.s);
				double slab = slab_memory(x);
				set_current(x, v, &was);
				sb_printf(&b, ", %s: needs %.0f B a device (%s)",
				          slab > cost_cluster(x->cm)->memory ? "does not fit" : "fits", slab, human_bytes(need, slab));
			}
		} else
			sb_puts(&b, "; no other candidate");
		fprintf(out, "%s\n", b.data);
		sb_free(&b);
	}
	fprintf(out, "# total cost %.4g s, memory %.4g B a device\n", cost, memory);
}

/* The least any strategy can need a device: every parameter (with its
 * optimizer state) and every operator output split over all devices.
 * *batched: the part that grows with the batch, the outputs computed from an
 * input (all of them, as if each grew in proportion: so a batch that this
 * says cannot fit does not). */
static double least_memory(const Search *x, const bool *recomputed, double *batched)
{
	const Graph *g = x->g;
	bool *data = xcalloc((size_t)(g->nvalues ? g->nvalues : 1), sizeof(bool));
	double mem = 0;
	*batched = 0;
	for (int p = 0; p < g->nparams; p++)
		data[p] = !is_param(x, p);
	for (int v = 0; v < g->nnodes; v++) {
		const Node *nd = &g->nodes[v];
		for (int k = 0; k < nd->nin; k++)
			data[nd->result] |= data[nd->in[k]];
		if (!searchable(x, v) || (recomputed && recomputed[v]))
			continue;
		const Type *t = &g->values[nd->result].type;
		double elems = 1;
		for (int d = 0; d < t->rank; d++)
			elems *= (double)t->dims[d];
		mem += elems * (double)dtype_bytes(t->dtype) / (double)x->n;
		if (data[nd->result])
			*batched += elems * (double)dtype_bytes(t->dtype) / (double)x->n;
	}
	for (int p = 0; p < g->nparams; p++) {
		const Type *t = &g->values[p].type;
		if (!is_param(x, p))
			continue;
		double elems = 1;
		for (int d = 0; d < t->rank; d++)
			elems *= (double)t->dims[d];
		mem += x->mem_factor * elems * (double)dtype_bytes(t->dtype) / (double)x->n;
	}
	free(data);
	return mem;
}

/* The global batch: dim 0 of the largest input (dataset_strategy splits
 * inputs along it); -1 when no input has dims. */
static int batch_input(const Search *x)
{
	int best = -1;
	double most = 0;
	for (int p = 0; p < x->g->nparams; p++) {
		const Type *t = &x->g->values[p].type;
		double elems = 1;
		for (int d = 0; d < t->rank; d++)
			elems *= (double)t->dims[d];
		if (!is_param(x, p) && t->rank > 0 && elems > most)
			best = p, most = elems;
	}
	return best;
}

/* The strategies need `mem` a device, more than the cluster gives. Whether
 * more devices or a smaller batch are needed (even everything split over
 * all of them does not fit: then how many devices, doubling the count, and
 * the largest global batch that could fit on these), or a better plan: the
 * double-recursive search's, when propagation chose and D-Rec's plan fits,
 * else in_strategy on the large operators. */
static void report_memory(Search *x, double mem, const char *saved, const SearchOptions *o, Diag *d)
{
	const Module *m = x->m;
	const Graph *entry = module_entry(m);
	double have = o->cluster.memory, batched, least = least_memory(x, NULL, &batched);
	char need_s[32], have_s[32], least_s[32], drec_s[32];
	human_bytes(need_s, mem);
	human_bytes(have_s, have);
	human_bytes(least_s, least);
	bool prop = m->ctx.search_mode != SM_RECURSIVE;
	const char *who = prop ? "sharding propagation's strategies" : "the double-recursive search's strategies";
	if (saved) {   /* least_memory keeps every activation: no bound once they are recomputed */
		diag_error(d, m->src, entry->name_span, "no strategy fits: even with %s, %s need %s a device (parameters, "
		           "optimizer state and activations), over the %s a device holds; use more devices, a smaller "
		           "batch, or a cluster with more memory (--cluster)", saved, who, need_s, have_s);
		return;
	}
	if (least > have) {
		/* Split the same way over more devices the need shrinks with their
		 * number: the device count, doubled until that bound fits (a bound:
		 * the search's own plan may need more). On these devices, the
		 * batched part shrinks with the batch. */
		int64_t more = x->n;
		while (least * (double)x->n / (double)more > have && more < ((int64_t)1 << 20))
			more *= 2;
		char more_s[32], over_s[32], fixed_s[32];
		human_bytes(more_s, least * (double)x->n / (double)more);
		human_bytes(over_s, least - have);
		human_bytes(fixed_s, least - batched);
		StrBuf batch = {0}, none = {0};
		int in = batch_input(x);
		if (in >= 0 && batched > 0) {
			int64_t now = x->g->values[in].type.dims[0];
			int64_t fit = least - batched < have ? (int64_t)((double)now * (have - (least - batched)) / batched) : 0;
			if (fit >= 1)
				sb_printf(&batch, ", a global batch of at most %lld on these %lld (dim 0 of %%%s, now %lld),",
				          (long long)fit, (long long)x->n, x->g->values[in].name, (long long)now);
			else
				sb_printf(&none, ": on these %lld no batch fits, without activations the model needs %s a device",
				          (long long)x->n, fixed_s);
		}
		diag_error(d, m->src, entry->name_span, "no strategy fits: %s need %s a device (parameters, optimizer "
		           "state and activations), over the %s a device holds, and even with every tensor split over all "
		           "%lld devices the model needs %s, %s too much; it needs at least %lld devices (%s a device split "
		           "over %lld)%s or a cluster with more memory (--cluster)%s", who, need_s, have_s, (long long)x->n,
		           least_s, over_s, (long long)more, more_s, (long long)more, batch.data ? batch.data : "",
		           none.data ? none.data : "");
		sb_free(&batch);
		sb_free(&none);
		return;
	}
	if (prop) {
		recursive(x);
		double drec;
		total(x, &drec);
		drec = slab_memory(x);
		human_bytes(drec_s, drec);
		if (drec <= have) {
			diag_error(d, m->src, entry->name_span, "no strategy fits: %s need %s a device (parameters, "
			           "optimizer state and activations), over the %s a device holds, but the double-recursive "
			           "search finds strategies that need %s; try --search-mode recursive_programming, or "
			           "annotate the large operators with in_strategy", who, need_s, have_s, drec_s);
			return;
		}
	}
	diag_error(d, m->src, entry->name_span, "no strategy fits: %s need %s a device (parameters, optimizer state "
	           "and activations), over the %s a device holds%s%s%s; split over all %lld devices the model would "
	           "need %s: annotate the large operators with in_strategy, or use more devices or a cluster with "
	           "more memory (--cluster)", who, need_s, have_s, prop ? " (the double-recursive search's need " : "",
	           prop ? drec_s : "", prop ? ")" : "", (long long)x->n, least_s);
}

/* search_mode's search from the strategies the user gave, its choices put
 * into s. Returns the plan's cost; x stays set up for pricing it. */
static double run_search(Search *x, Module *m, const FlatGraph *f, Strategies *s, const SearchOptions *o)
{
	search_init(x, m, f, s, &o->cluster);
	x->plan = o->plan;
	shard_results(x);
	if (m->ctx.search_mode == SM_RECURSIVE)
		recursive(x);
	else
		propagate(x, -1, NULL);
	for (int v = 0; v < f->g->nnodes; v++)
		if (searchable(x, v) && !x->fixed_node[v]) {
			if (!x->decided[v])   /* no configured operator reaches it: the default stays */
				set_current(x, v, s->node[v].split);
			else
				strategy_set_split(s, v, &x->cur[v]);
		}
	double mem;
	return total(x, &mem);
}

/* What recomputation adds to a step: the forward compute the train
 * block's recompute policy runs again, the recomputed operators' own cost
 * under the current strategies, and the collectives the backward pass sends
 * again (recomputed ones, ZeRO-3's second AllGathers), from the plan
 * slab_memory lowered last (call it first). */
static double recompute_cost(const Search *x)
{
	const Graph *g = x->g;
	bool *marked = xcalloc((size_t)(g->nnodes ? g->nnodes : 1), sizeof *marked);
	recompute_policy(x->m, x->f, x->m->train->recompute, marked);
	double c = 0;
	for (int v = 0; v < g->nnodes; v++)
		if (marked[v] && searchable(x, v))
			c += cost_compute(x->cm, &g->nodes[v], x->st->node[v].od, x->st->node[v].split->split);
	free(marked);
	return c + x->slab_again;
}

static double least_memory(const Search *x, const bool *recomputed, double *batched);

/* When the searched plan does not fit a device, the memory savings of
 * docs/language.md (Context: optimizer parallelism; Training: recompute)
 * are switched on one at a time, cheapest first, and the search run again
 * with each, until a plan fits: the optimizer's state, gradients and
 * parameters as slices over the ranks that sum their gradients (no extra
 * bytes or work), then attention's scores and Softmax recomputed (a few
 * FLOPs an element), then every layer recomputed (the forward pass again),
 * then parameters gathered again for the backward (ZeRO-3: their bytes
 * again). The module keeps what was switched on, so the program the driver
 * lowers is the plan priced here. Returns what was switched on (NULL:
 * nothing was left to try); *cost and *mem are the last plan's. */
static const char *save_memory(Search *x, Module *m, const FlatGraph *f, Strategies *s, const SearchOptions *o,
                               bool planned, double *cost, double *mem)
{
	static const char *const said[] = {
		"optimizer parallelism (enable_parallel_optimizer, level1)",
		"optimizer parallelism (level1) and selective recomputation (recompute: \"selective\")",
		"optimizer parallelism (level1) and every layer recomputed (recompute: true)",
		"optimizer parallelism (level3) and every layer recomputed (recompute: true)",
	};
	const char *done = NULL;
	for (int step = 0; step < 4 && *mem > o->cluster.memory; step++) {
		Context *c = &m->ctx;
		Train *t = m->train;
		if (step == 0 && c->parallel_optimizer)
			continue;
		c->parallel_optimizer = true;
		if (step == 3)
			c->optimizer_level = 3;
		RecomputePolicy want = step == 1 ? RECOMPUTE_SELECTIVE : step >= 2 ? RECOMPUTE_LAYERS : RECOMPUTE_NONE;
		if (t->recompute < want)
			t->recompute = want;
		else if (step == 1 || step == 2)
			continue;   /* the model asks for as much already */
		done = said[step];
		free(x->slab_plan);   /* the same strategies need less now: plan their slab again */
		x->slab_plan = NULL;
		if (step == 0 && !planned)
			continue;   /* optimizer parallelism alone cannot help: least_memory splits parameters already */
		bool *marked = xcalloc((size_t)(f->g->nnodes ? f->g->nnodes : 1), sizeof *marked);
		recompute_policy(m, f, t->recompute, marked);
		double batched, least = least_memory(x, marked, &batched);
		free(marked);
		if (step < 3 && least > o->cluster.memory)
			continue;   /* what it keeps cannot fit however it is split: try the next saving */
		if (planned && step < 3 && slab_memory(x) > o->cluster.memory)
			continue;   /* not even the plan at hand fits with this much: try the next saving first */
		search_done(x);
		*cost = run_search(x, m, f, s, o);
		planned = true;
		*mem = slab_memory(x);
		*cost += recompute_cost(x);
	}
	return done;
}

/* --explain's account of save_memory: what was switched on, which
 * parameters live as slices and which operators are recomputed. */
static void explain_savings(Search *x, const char *saved, FILE *out)
{
	Module *m = (Module *)x->m;
	const Graph *g = x->g;
	slab_memory(x);   /* the plan itself again: explain priced its runner-ups last */
	fprintf(out, "# memory: the searched plan did not fit a device; switched on %s (the total cost includes "
	        "the recomputation's %.4g s)\n", saved, recompute_cost(x));
	bool *marked = xcalloc((size_t)(g->nnodes ? g->nnodes : 1), sizeof *marked);
	recompute_policy(m, x->f, m->train->recompute, marked);
	int n = 0;
	for (int v = 0; v < g->nnodes; v++)
		n += marked[v];
	fprintf(out, "# recomputed in the backward pass: %d of %d operators%s", n, g->nnodes, n ? ":" : "\n");
	for (int v = 0, shown = 0; v < g->nnodes; v++)
		if (marked[v] && shown++ < 12)
			fprintf(out, " %%%s%s", g->values[g->nodes[v].result].name, shown == 12 && n > 12 ? " ...\n" : "");
	if (n && n <= 12)
		fputc('\n', out);
	free(marked);
	/* the homes as lower.c slices them */
	Compilation c = {.start = STAGE_LOWER, .stop = STAGE_LOWER, .name = "", .m = m, .flat = (FlatGraph *)x->f, .st = *x->st};
	x->plan(&c);
	const Lowered *l = c.low;
	double whole = 0, sliced = 0;
	int nsliced = 0, ntrained = 0;
	for (int p = 0; p < l->nparams; p++) {
		if (!g->values[p].type.is_param)
			continue;
		double bytes = (double)cost_slice_bytes(&x->st->home[p], g->values[p].type.dims,
		                                        dtype_bytes(g->values[p].type.dtype));
		double piece = (double)cost_slice_bytes(&l->values[p].layout, g->values[p].type.dims,
		                                        dtype_bytes(g->values[p].type.dtype));
		ntrained++;
		nsliced += piece < bytes;
		whole += bytes;
		sliced += piece;
	}
	compilation_free(&c);
	char a[32], b[32];
	human_bytes(a, whole);
	human_bytes(b, sliced);
	fprintf(out, "# sliced over the ranks that sum their gradients: %d of %d parameters; parameters on the "
	        "largest rank %s -> %s (optimizer state and gradients alike)\n", nsliced, ntrained, a, b);
}

bool search_strategies(Module *m, const FlatGraph *f, Strategies *s, const SearchOptions *o, Diag *d)
{
	if (s->device_num < 1)
		return true;
	if (m->ctx.parallel_mode != PM_AUTO) {   /* nothing to search; --explain still prices the given strategies */
		if (o->explain && !o->results_only) {
			Search x;
			search_init(&x, m, f, s, &o->cluster);
			x.plan = o->plan;
			for (int v = 0; v < f->g->nnodes; v++)
				if (searchable(&x, v))
					set_current(&x, v, s->node[v].split);
			double mem, cost = total(&x, &mem);
			mem = slab_memory(&x);
			if (m->train)
				cost += recompute_cost(&x);
			fprintf(o->out ? o->out : stdout, "# strategies as given (no search, %lld devices): total cost %.4g s, "
			        "memory %.4g B a device\n", (long long)x.n, cost, mem);
			search_done(&x);
		}
		return true;
	}
	Search x;
	if (o->results_only) {   /* the strategies come from a file: nothing to search or to price */
		search_init(&x, m, f, s, &o->cluster);
		shard_results(&x);
		search_done(&x);
		return true;
	}
	/* A training model that cannot fit even split over every device with its
	 * activations kept (least_memory) needs recomputation: no plan to search
	 * for without it. */
	search_init(&x, m, f, s, &o->cluster);
	x.plan = o->plan;
	double batched, cost = 0, mem = INFINITY;
	bool hopeless = m->train && least_memory(&x, NULL, &batched) > o->cluster.memory;
	if (!hopeless) {
		search_done(&x);
		cost = run_search(&x, m, f, s, o);
		mem = slab_memory(&x);
	}
	const char *saved = NULL;
	if (mem > o->cluster.memory && m->train)
		saved = save_memory(&x, m, f, s, o, !hopeless, &cost, &mem);
	if (o->explain)
		explain(&x, cost, mem, o->out ? o->out : stdout);
	if (o->explain && saved)
		explain_savings(&x, saved, o->out ? o->out : stdout);
	bool ok = mem <= o->cluster.memory;
	if (!ok)
		report_memory(&x, mem, saved, o, d);
	search_done(&x);
	return ok;
}
