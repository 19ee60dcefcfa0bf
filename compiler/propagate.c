/* propagate.c: sharding propagation (search.c's first mode).
 *
 * Requires a Search with priced strategies (price.c). From the configured
 * operators (and the inputs of a shard whose in_strategy fixes their
 * layout) strategies spread along the graph both ways: a FIFO of decided
 * operators; each one popped decides its undecided neighbours, producers
 * first, then consumers, a consumer once all its producers are decided.
 * decide takes the candidate with the least local_cost against the decided
 * neighbours; during a dp x mp template's propagation (rec_search.c) only
 * the template's candidates. */
#include "search_internal.h"

#include <math.h>
#include <stdlib.h>

/* ---- sharding propagation ---- */

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

/* v takes the least-cost candidate against its decided neighbours; one
 * that fits in memory before one that does not. */
void decide(Search *x, int v, int64_t (*cand)[MAX_OPDIMS])
{
	const OpDims *od = x->st->node[v].od;
	int nc = x->tmpl_dp ? template_candidates(x, od, cand) : op_candidates(&x->g->nodes[v], od, x->n, cand, MAX_CANDIDATES);
	double memory = cost_cluster(x->cm)->memory, best = INFINITY;
	bool best_fits = false;
	OpSplit best_split;
	x->propagating = true;
	for (int i = 0; i < nc; i++) {
		OpSplit s;
		search_split(x, od, cand[i], x->copies_first, &s);
		double mem = local_memory(x, v, &s);
		bool fits = mem <= memory, any = i == 0 || (fits && !best_fits);
		double c = local_cost_under(x, v, &s, any ? INFINITY : fits == best_fits ? best : -INFINITY, &mem);
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
		if (any || (fits == best_fits && c < best))
			best = c, best_split = s, best_fits = fits;
	}
	x->propagating = false;
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

void propagate(Search *x, int seed, const OpSplit *seed_split)
{
	int nn = x->g->nnodes;
	int *queue = xmalloc(sizeof(int) * (size_t)(nn ? nn : 1)), head = 0, tail = 0;
	int64_t (*cand)[MAX_OPDIMS] = xmalloc(sizeof *cand * MAX_CANDIDATES);
	bool *shard_in = xcalloc((size_t)(nn ? nn : 1), sizeof(bool));   /* takes a shard's fixed inputs */
	for (int v = 0; v < nn; v++)
		for (int k = 0; searchable(x, v) && k < x->g->nodes[v].nin; k++)
			shard_in[v] |= x->fixed[v][k] != NULL;
	for (int v = 0; v < nn; v++)
		if (x->fixed_node[v] && !shard_in[v]) {
			set_current(x, v, x->st->node[v].split);
			x->decided[v] = true;
			queue[tail++] = v;
		}
	if (seed >= 0) {
		set_current(x, seed, seed_split);
		x->decided[seed] = true;
		queue[tail++] = seed;
	}
	/* Operators taking a shard's fixed inputs are seeds too, after the other
	 * configured ones: those the shard configured (strategy.c) as it says. */
	for (int v = 0; v < nn; v++) {
		if (!shard_in[v] || x->decided[v] || (!x->fixed_node[v] && !producers_decided(x, v)))
			continue;
		if (x->fixed_node[v]) {
			set_current(x, v, x->st->node[v].split);
			x->decided[v] = true;
		} else
			decide(x, v, cand);
		queue[tail++] = v;
	}
	free(shard_in);
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
