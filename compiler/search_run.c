/* search_run.c: one run of search_mode's search from the user's strategies.
 *
 * Requires strategies assigned. run_search sets a Search up, lays shard
 * results out by dataset_strategy (shard_results), runs sharding
 * propagation (propagate.c) or the double-recursive search (rec_search.c)
 * and puts the choices into the Strategies. The entry runs it once, and
 * savings.c again with each memory saving switched on. */
#include "search_internal.h"


/* Whether the entry graph returns value v, as it is or through a Cast
 * (mixed precision casts a result back to its declared type). */
static bool returned(const Graph *g, int v)
{
	for (int k = 0; k < g->nret; k++)
		if (g->ret[k] == v)
			return true;
	for (int i = 0; i < g->nnodes; i++)
		if (g->nodes[i].op == OP_CAST && g->nodes[i].in[0] == v && returned(g, g->nodes[i].result))
			return true;
	return false;
}

/* The node computing a shard Call's result lays it out by dataset_strategy
 * (data_parallel: dim 0 split over every device when it divides; full_batch:
 * whole, when the graph returns it: what the caller gets back; a result only
 * the graph reads on is left to the search, since nothing asks for it
 * whole). It becomes the node's out_strategy, written into its attributes so
 * that step_parallel_begin carries it. */
void shard_results(Search *x)
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
		if (x->m->ctx.dataset_mode != DS_DATA_PARALLEL && !returned(g, g->nodes[v].result))
			continue;   /* whole only for the caller: what the graph reads on is the search's */
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
		nd->a.present |= ATTR_BIT(ATTR_OUT_STRATEGY);
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

/* search_mode's search from the strategies the user gave, its choices put
 * into s. Returns the plan's cost; x stays set up for pricing it. */
double run_search(Search *x, Module *m, const FlatGraph *f, Strategies *s, const SearchOptions *o)
{
	search_init(x, m, f, s, &o->cluster);
	x->plan = o->plan;
	x->quick = o->quick;
	shard_results(x);
	if (m->ctx.search_mode == SM_RECURSIVE)
		recursive(x);
	else if (m->train)
		propagate_trained(x, s);
	else   /* forward only: MindSpore's propagation, as it is */
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
