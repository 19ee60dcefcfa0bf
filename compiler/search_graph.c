/* search_graph.c: the graph as the strategy search sees it (search_internal.h).
 *
 * Requires strategies assigned. search_init builds, from the flat graph, what
 * pricing reads without walking the graph again: each operator input's
 * source (a parameter, or the producing node through the Reshapes between,
 * which carry a layout), each node's consumers and each parameter's users,
 * the values that carry a gradient, the layouts a shard's in_strategy
 * fixes, and which nodes keep the user's strategy. search_done frees it.
 * Calls no other file of the search. */
#include "search_internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- the graph as the search sees it ---- */

static Src source(Search *x, int value)
{
	const Graph *g = x->g;
	int start = x->nchain;
	while (value >= g->nparams && g->nodes[g->values[value].node].op == OP_RESHAPE) {
		*ARENA_PUSH(x->a, x->chain, x->nchain, x->cap_chain) = g->values[value].node;
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

bool searchable(const Search *x, int v)
{
	return x->st->node[v].has_dims;
}

/* Indices, labels and integer values carry no gradient: autodiff.c's own test. */
bool differentiable(const Graph *g, const Node *nd, int k)
{
	return op_input_has_grad(nd->op, k, g->values[nd->in[k]].type.dtype, g->values[nd->result].type.dtype);
}

static void build(Search *x)
{
	Arena *a = x->a;
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
		x->needs[p] = g->values[p].type.is_param && dtype_is_float(g->values[p].type.dtype) &&
		              !param_is_moving_stat(g, p);
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
	free(x->terms.t);
}

static int send_cmp(const void *pa, const void *pb)
{
	const int *a = pa, *b = pb;
	return a[0] != b[0] ? a[0] - b[0] : a[1] - b[1];
}

/* x->sends: each (value, later stage reading it), once (the pipeline's
 * point-to-point sends, priced by total). */
static void find_sends(Search *x)
{
	const Graph *g = x->g;
	int n = 0;
	for (int i = 0; i < g->nnodes; i++)
		n += g->nodes[i].nin;
	int (*pair)[2] = xmalloc(sizeof *pair * (size_t)(n ? n : 1));
	n = 0;
	for (int i = 0; i < g->nnodes; i++)
		for (int k = 0; k < g->nodes[i].nin; k++) {
			int v = g->nodes[i].in[k];
			if (x->value_stage[v] >= 0 && x->value_stage[v] < x->node_stage[i])   /* -1: every stage computes it */
				pair[n][0] = v, pair[n++][1] = x->node_stage[i];
		}
	qsort(pair, (size_t)n, sizeof *pair, send_cmp);
	x->sends = arena_alloc(x->a, sizeof *x->sends * (size_t)(n ? n : 1));
	x->nsends = 0;
	for (int i = 0; i < n; i++)
		if (!i || send_cmp(pair[i], pair[i - 1]))
			x->sends[x->nsends].value = pair[i][0], x->sends[x->nsends++].stage = pair[i][1];
	free(pair);
}

void search_init(Search *x, const Module *m, const FlatGraph *f, Strategies *s, const Cluster *c)
{
	memset(x, 0, sizeof *x);
	x->m = m;
	x->a = arena_new();
	x->f = f;
	x->g = f->g;
	x->st = s;
	x->n = s->device_num;
	bool train = m->train != NULL;
	x->cm = cost_new(c, s->device_num, train);
	/* parameters, gradients and the optimizer's state (SGD's with momentum, Momentum's v, Adam's, AdamWeightDecay's
	 * and Lamb's m and v); Lamb's norms' AllReduce (2 floats a parameter, whatever the plan) is not priced */
	const Train *t = m->train;
	x->mem_factor = !train ? 1
	              : t->optimizer == OPT_SGD ? (t->momentum > 0 ? 3 : 2)
	              : t->optimizer == OPT_MOMENTUM ? 3 : 4;
	build(x);
	x->stages = m->ctx.stages;
	x->node_stage = arena_alloc(x->a, sizeof(int) * (size_t)(x->g->nnodes ? x->g->nnodes : 1));
	x->value_stage = arena_alloc(x->a, sizeof(int) * (size_t)(x->g->nvalues ? x->g->nvalues : 1));
	assign_stages(f, s, x->stages, x->node_stage, x->value_stage);
	if (x->stages > 1)
		find_sends(x);
}

void search_done(Search *x)
{
	search_free(x);
	cost_free(x->cm);
	arena_free(x->a);
}
