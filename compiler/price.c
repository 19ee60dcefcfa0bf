/* price.c: what a strategy costs under the current choices (cost.c's model).
 *
 * Requires a Search (search_graph.c). set_current makes a strategy node v's
 * current one; local_cost is exactly the part of strategies_cost that v's
 * strategy changes: its compute, its inputs' redistributions from their
 * sources (carried through Reshapes; an edge another decided reader shares
 * costs once), its consumers', the completion of a returned partial value,
 * out_strategy's delivery and, with a train block, the gradient reductions
 * (grad_cost); local_cost_under, the same when it is under a limit, plans
 * no more than it must. The candidate a scan in order ends on
 * (scan_priced), an operator's candidates (op_candidates), those cheaper
 * than a bound (cheaper_candidates), and a whole plan's cost (total) and
 * memory as the program allocates it (slab_memory: the strategies lowered
 * and the slab planned). The bottom of the search: it calls no other file
 * of it but search_graph.c. */
#include "search_internal.h"
#include "uneven.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- costs ---- */

static int64_t elem_bytes(const Search *x, int value)
{
	return dtype_bytes(x->g->values[value].type.dtype);
}

/* The layouts a strategy gives node v: its inputs, its output (partial
 * included), the output as consumers see it. */
void layouts(const Search *x, int v, const OpSplit *s, TensorLayout *in, TensorLayout *raw, TensorLayout *out)
{
	const NodeStrategy *ns = &x->st->node[v];
	for (int k = 0; k < x->g->nodes[v].nin; k++)
		op_in_layout(ns->od, s, k, &in[k]);
	op_out_layout(ns->od, s, raw);
	*out = ns->has_out_strategy ? *ns->delivered : *raw;
}

void set_current(Search *x, int v, const OpSplit *s)
{
	x->cur[v] = *s;
	layouts(x, v, s, x->in[v], &x->raw[v], &x->out[v]);
	for (int k = 0; x->version && k < x->g->nodes[v].nin; k++)
		x->version[x->g->nodes[v].in[k]]++;
}

int64_t copies_first(const OpSplit *s)
{
	return s->decl && s->decl->searched ? s->decl->dims[0] : 1;
}

void search_split(Search *x, const OpDims *od, const int64_t *split, int64_t copies, OpSplit *out)
{
	if (copies <= 1 || x->n % (copies * product_of(split, od->nod)) ||
	    !strategy_copies_first(x->st, od, split, copies, out))
		op_split_from_splits(od, split, x->n, out);
}

/* cost_redist, or with `back` cost_redist_back; while local_cost_under
 * bounds a sum (x->terms.on), each one is noted to be planned later. */
static double redist(Search *x, const TensorLayout *from, const TensorLayout *to, const int64_t *global,
                     int64_t elem, bool back)
{
	double c = back ? cost_redist_back(x->cm, from, to, global, elem) : cost_redist(x->cm, from, to, global, elem, NULL);
	Terms *t = &x->terms;
	if (t->on) {
		if (t->n == t->cap) {
			t->cap = t->cap ? 2 * t->cap : 16;
			t->t = xrealloc(t->t, sizeof *t->t * (size_t)t->cap);
		}
		t->t[t->n++] = (Term){*from, *to, global, elem, back, c, 0};
	}
	return c;
}

/* From layout `from` of value `value` through the Reshapes of `s` to `to`;
 * with a train block and a value that needs a gradient, the adjoint too (a
 * gather before a Reshape has a free slice for adjoint). With `sum` (what
 * the caller has summed so far) and `limit`: once sum + the cost so far
 * reaches limit, the rest is not priced (local_cost_under). */
static double carry_cost_under(Search *x, TensorLayout from, int value, const Src *s, const TensorLayout *to,
                               double sum, double limit)
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
			c += redist(x, &from, &gathered, vin->type.dims, elem_bytes(x, r->in[0]), false);
			memset(bad, 0, sizeof bad);
			if (!carry_reshape(&gathered, vin->type.dims, &g->values[r->result].type, &next, bad))
				die("an unsplit reshape group does not carry");
		}
		from = next;
		value = r->result;
	}
	if (sum + c < limit)
		c += redist(x, &from, to, g->values[value].type.dims, elem_bytes(x, value), false);
	if (back && sum + c < limit)
		c += redist(x, &from, to, g->values[value].type.dims, elem_bytes(x, value), true);
	return c;
}

/* Where parameter p lives, given the current strategies; NULL: not known yet. */
const TensorLayout *home(const Search *x, int p)
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
bool shared(const Search *x, int v, int k, const TensorLayout *to, int64_t grad_axes, bool before)
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
static double in_cost(Search *x, int v, int k, const TensorLayout *to, bool before, double sum, double limit)
{
	const Src *s = &x->src[v][k];
	if (!x->fixed[v][k] && shared(x, v, k, to, -1, before))
		return 0;
	if (x->fixed[v][k])
		return redist(x, x->fixed[v][k], to, x->g->values[s->id].type.dims, elem_bytes(x, s->id), false);
	if (s->kind == SRC_OP)
		return x->decided[s->id] ? carry_cost_under(x, x->out[s->id], x->g->nodes[s->id].result, s, to, sum, limit) : 0;
	if (s->kind != SRC_PARAM ||
	    (x->first_node[s->id] == v && x->first_in[s->id] == k && !x->st->home_fixed[s->id]))
		return 0;   /* a free home lives where its first user wants it; a fixed one (an input's dataset layout) is delivered */
	const TensorLayout *h = home(x, s->id);
	return h ? carry_cost_under(x, *h, s->id, s, to, sum, limit) : 0;
}

/* A returned value completed, or delivered in its result_layout, as lower.c
 * does it. */
static double complete_cost(Search *x, int v, const TensorLayout *out)
{
	const Value *val = &x->g->values[x->g->nodes[v].result];
	TensorLayout to;
	if (!result_layout(x->m, val->type.rank, val->type.dims, &to)) {
		if (!out->partial)
			return 0;
		int64_t piece[MAX_DIMS];
		for (int d = 0; d < val->type.rank; d++)
			piece[d] = layout_piece_len(out, val->type.dims, d);
		layout_completed(out, piece, &to);
	}
	return redist(x, out, &to, val->type.dims, elem_bytes(x, x->g->nodes[v].result), false);
}

double param_mem_factor(const Search *x, int p)
{
	bool moving = x->m->train && dtype_is_float(x->g->values[p].type.dtype) && !x->needs[p];
	return moving ? 1 : x->mem_factor;
}

bool is_param(const Search *x, int p)
{
	return x->g->values[p].type.is_param;
}

/* With accumulate_steps N, whether the reduction of a gradient from source
 * s goes out once a step (accumulate.c) while the rest of a step's costs
 * are N micro-batches': a trained parameter's, or its copy's in another type
 * (a Cast of it), but with optimizer_level 2, which reduce-scatters every
 * micro-batch. */
static bool reduced_once(const Search *x, const Src *s)
{
	const Context *ctx = &x->m->ctx;
	if (ctx->parallel_optimizer && ctx->optimizer_level == 2)
		return false;
	if (s->kind == SRC_OP && x->g->nodes[s->id].op == OP_CAST)
		s = &x->src[s->id][0];
	return s->kind == SRC_PARAM && is_param(x, s->id);
}

/* With a train block, the backward pass's reduction of input k's gradient
 * (cost_input_gradient) when that input needs one: a trained parameter or an
 * operator's float result (indices and labels carry none). With
 * accumulate_steps N, a reduction that goes out once a step is priced at
 * 1/N of its cost: the costs are a micro-batch's share of a step. */
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
	double c = cost_input_gradient(x->cm, in, raw, val->type.dims, dtype_bytes(val->type.dtype));
	int64_t n = x->m->train ? x->m->train->accumulate_steps : 1;
	return n > 1 && reduced_once(x, s) ? c / (double)n : c;
}

/* v's compute under s, forward and, with a train block, backward: one
 * adjoint of the operator's size per input that needs a gradient; and the
 * AllReduces of statistics when s splits a normalized dim (cost_statistics),
 * or a split segment reduction's backward statistics (cost_reduced_stats). */
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
	int64_t stat_bytes = nd->op == OP_BATCH_NORM ? 4 : dtype_bytes(t->dtype);   /* BatchNorm's in Float32 */
	c = c * passes(x, v) + cost_statistics(x->cm, x->st->node[v].od, s, stat_bytes);
	if (op_is_segment(nd->op) && nd->op != OP_UNSORTED_SEGMENT_SUM && x->needs[nd->in[0]])
		c += cost_reduced_stats(x->cm, x->st->node[v].od, s, nd->op == OP_UNSORTED_SEGMENT_PROD ? 2 : 1, 4);
	return c;
}

/* The memory v's own part needs under s: its output's slice, and the
 * parameters it is the first user of (with their optimizer state). */
static double own_memory(const Search *x, int v, const TensorLayout *ins, const TensorLayout *raw)
{
	const Graph *g = x->g;
	const Node *nd = &g->nodes[v];
	const Value *res = &g->values[nd->result];
	double mem = (double)cost_slice_bytes(raw, res->type.dims, dtype_bytes(res->type.dtype));
	for (int k = 0; k < nd->nin; k++) {
		const Src *sr = &x->src[v][k];
		if (sr->kind != SRC_PARAM || x->first_node[sr->id] != v || x->first_in[sr->id] != k ||
		    x->st->home_fixed[sr->id] || !is_param(x, sr->id))
			continue;
		const Value *pv = &g->values[sr->id];
		mem += param_mem_factor(x, sr->id) *
		       (double)cost_slice_bytes(&ins[k], pv->type.dims, dtype_bytes(pv->type.dtype));
	}
	return mem;
}

double local_memory(const Search *x, int v, const OpSplit *s)
{
	int nin = x->g->nodes[v].nin;
	TensorLayout in[MAX_RULE_INPUTS + 8], raw, out;
	TensorLayout *ins = nin <= (int)(sizeof in / sizeof in[0]) ? in : xmalloc(sizeof(TensorLayout) * (size_t)nin);
	layouts(x, v, s, ins, &raw, &out);
	double mem = own_memory(x, v, ins, &raw);
	if (ins != in)
		free(ins);
	return mem;
}

/* The terms in the order local_cost has always summed them (the sum is
 * bit for bit the same); each is priced only while the sum is under
 * `limit`. Every term is >= 0 and a floating-point sum never falls when a
 * term >= 0 is added, so a sum that reached the limit ends there too. */
static double local_cost_sum(Search *x, int v, const OpSplit *s, double limit, double *bytes)
{
	const Graph *g = x->g;
	const Node *nd = &g->nodes[v];
	const NodeStrategy *ns = &x->st->node[v];
	TensorLayout in[MAX_RULE_INPUTS + 8], raw, out;
	TensorLayout *ins = nd->nin <= (int)(sizeof in / sizeof in[0]) ? in : xmalloc(sizeof(TensorLayout) * (size_t)nd->nin);
	layouts(x, v, s, ins, &raw, &out);
	double c = compute_cost(x, v, s);
	const Value *res = &g->values[nd->result];
	for (int k = 0; k < nd->nin; k++) {
		if (c < limit) {
			double t = in_cost(x, v, k, &ins[k], false, c, limit);
			if (c + t < limit)
				t += grad_cost(x, v, k, &ins[k], &raw, false);
			c += t;
		}
		const Src *sr = &x->src[v][k];
		if (sr->kind != SRC_PARAM || x->first_node[sr->id] != v || x->first_in[sr->id] != k ||
		    x->st->home_fixed[sr->id])
			continue;
		int p = sr->id;
		for (int i = x->pstart[p]; i < x->pstart[p + 1]; i++) {
			int w = x->pnode[i];
			if (c < limit && x->decided[w] && !shared(x, w, x->pin[i], &x->in[w][x->pin[i]], -1, true))
				c += carry_cost_under(x, ins[k], p, &x->src[w][x->pin[i]], &x->in[w][x->pin[i]], c, limit);
		}
	}
	if (ns->has_out_strategy && c < limit)
		c += redist(x, &raw, ns->delivered, res->type.dims, dtype_bytes(res->type.dtype), false);
	for (int i = x->cstart[v]; i < x->cstart[v + 1]; i++) {
		int w = x->cnode[i];
		if (c < limit && x->decided[w] && !shared(x, w, x->cin[i], &x->in[w][x->cin[i]], -1, true))
			c += carry_cost_under(x, out, nd->result, &x->src[w][x->cin[i]], &x->in[w][x->cin[i]], c, limit);
	}
	if (x->returned[v] && !x->propagating && c < limit)
		c += complete_cost(x, v, &out);
	*bytes = own_memory(x, v, ins, &raw);
	if (ins != in)
		free(ins);
	return c;
}

/* No strategy whose cost has the lower bound `least` (local_cost with each
 * redistribution not planned yet bounded, cost_bound_only) costs under
 * `limit` when least reaches it: every bound is at most its plan's cost and
 * a floating-point sum never falls when a term grows. The margin covers a
 * bound's rounding against its plan's sum of steps (some 1e-16 a step). */
static bool out_of_reach(double least, double limit)
{
	return least * (1 - 1e-12) >= limit;
}

/* With a finite limit, the whole sum bounded first (each redistribution
 * not planned yet by a lower bound, cost_bound_only): a strategy that
 * cannot get under the limit plans nothing. Else the bounded terms are
 * planned, the smallest searches first (fewest axes on the pair's common
 * matrix, then least bound), until the sum with the rest still bounded
 * reaches the limit: a pair over many axes is the one whose search may run
 * to its cap, and is often not needed. A strategy that gets under the
 * limit is summed again in local_cost's order, every term now cached, so
 * its cost is bit for bit local_cost's. */
double local_cost_under(Search *x, int v, const OpSplit *s, double limit, double *bytes)
{
	if (limit < INFINITY && limit > -INFINITY) {
		Terms *t = &x->terms;
		cost_bound_only(x->cm, true);
		t->on = true, t->n = 0;
		double least = local_cost_sum(x, v, s, INFINITY, bytes);
		t->on = false;
		cost_bound_only(x->cm, false);
		if (out_of_reach(least, limit))
			return least;
		for (int i = 0; i < t->n; i++) {   /* the size of its search: the axes of the common matrix */
			TensorLayout a, b;
			Term *e = &t->t[i];
			const TensorLayout *start = e->back ? &e->to : &e->from, *goal = e->back ? &e->from : &e->to;
			e->axes = layout_common_matrix(start, goal, &a, &b) ? a.ndev : MAX_AXES;
		}
		for (int i = 1; i < t->n; i++)   /* by axes, then bound, stable: insertion sort of a few */
			for (int j = i; j > 0 && (t->t[j].axes < t->t[j - 1].axes ||
			                          (t->t[j].axes == t->t[j - 1].axes && t->t[j].bound < t->t[j - 1].bound)); j--) {
				Term tmp = t->t[j];
				t->t[j] = t->t[j - 1];
				t->t[j - 1] = tmp;
			}
		for (int i = 0; i < t->n; i++) {
			const Term *e = &t->t[i];
			least += redist(x, &e->from, &e->to, e->global, e->elem_bytes, e->back) - e->bound;
			if (out_of_reach(least, limit))
				return least;
		}
	}
	return local_cost_sum(x, v, s, limit, bytes);
}

double local_cost(Search *x, int v, const OpSplit *s, double *bytes)
{
	return local_cost_under(x, v, s, INFINITY, bytes);
}

/* Lower by more than rounding: what a move must gain, and what --explain
 * calls cheaper. */
double below(double now)
{
	return now - 1e-9 * fabs(now);
}

/* The candidate a scan of n candidates in order ends on, the scan taking
 * a candidate when it costs under the best so far (below(best) with
 * `margin`, else strictly under), the first one whatever it costs with
 * `first` (there is no best yet; else the best so far starts at `best`).
 * Pricing is the search's expense, and such a scan prices most candidates
 * against a best that a later one beats by far; so this finds the same
 * candidate pricing only what can change it. Each candidate has a lower
 * bound (p->least), or its cost once priced. The scan is replayed on what
 * is known: a candidate known is taken or not as the scan would; one whose
 * bound reaches the scan's limit is not taken; before one not known, the
 * cheapest known ahead, q, is taken whatever the scan does in between when
 * it costs under the limit of the least of the best and the bounds (or
 * costs) of the candidates in between: any of them taken costs at least
 * that. Else the replay stops, the least bounded candidate not known from
 * there is priced under the limit there (the best there is final:
 * everything before it was decided; the best only falls, so a candidate
 * at or over it is never taken), and the replay starts over. */
int scan_priced(const Priceable *p, int n, double best, bool first, bool margin, double *cost)
{
	double *lower = xmalloc(sizeof(double) * (size_t)(n ? n : 1));
	bool *known = xcalloc((size_t)(n ? n : 1), sizeof(bool));
	for (int i = 0; i < n; i++)
		lower[i] = p->least(p->ctx, i);
	for (;;) {
		bool have = !first;
		double b = best, lim = INFINITY;
		int taken = -1, need = -1;
		for (int j = 0; j < n;) {
			lim = !have ? INFINITY : margin ? below(b) : b;
			if (isnan(lim))   /* below(infinity): nothing is under it, nothing more is taken */
				break;
			if (known[j] || (have && lower[j] >= lim)) {   /* lower[j] is the cost when known */
				if (known[j] && (!have || lower[j] < lim))
					b = lower[j], have = true, taken = j;
				j++;
				continue;
			}
			int q = -1;
			for (int m = j + 1; m < n; m++)
				if (known[m] && (q < 0 || lower[m] < lower[q]))
					q = m;
			double floor = have ? b : INFINITY;
			for (int m = j; m < q; m++)
				floor = lower[m] < floor ? lower[m] : floor;
			/* (not before a first taken whatever it costs, under a margin:
			 * taken at an infinite cost, it leaves no limit to be under) */
			if (q >= 0 && (have || !margin) && lower[q] < (margin ? below(floor) : floor)) {
				b = lower[q], have = true, taken = q, j = q + 1;
				continue;
			}
			need = j;
			for (int m = j + 1; m < n; m++)
				if (!known[m] && lower[m] < lower[need])
					need = m;
			break;
		}
		if (need < 0) {
			free(lower);
			free(known);
			*cost = b;
			return taken;
		}
		double c = p->price(p->ctx, need, lim);
		if (c < lim || lim == INFINITY)
			lower[need] = c, known[need] = true;
		else
			lower[need] = lim;
	}
}

typedef struct {
	Search *x;
	int v;
	const OpSplit *cand;
} Scan;

/* A lower bound of local_cost with nothing planned: the sum with every
 * redistribution not planned yet bounded (cost_bound_only), less the
 * rounding a bound may have over its plan's sum of steps. */
static double scan_least(void *ctx, int i)
{
	Scan *sc = ctx;
	double mem;
	cost_bound_only(sc->x->cm, true);
	double least = local_cost(sc->x, sc->v, &sc->cand[i], &mem);
	cost_bound_only(sc->x->cm, false);
	return least * (1 - 1e-12);
}

static double scan_price(void *ctx, int i, double limit)
{
	Scan *sc = ctx;
	double mem;
	return local_cost_under(sc->x, sc->v, &sc->cand[i], limit, &mem);
}

int scan_candidates(Search *x, int v, const OpSplit *cand, int n, double best, bool first, bool margin,
                    double *cost)
{
	Scan sc = {x, v, cand};
	return scan_priced(&(Priceable){scan_least, scan_price, &sc}, n, best, first, margin, cost);
}

/* ---- candidates ---- */

typedef struct {
	int64_t (*split)[MAX_OPDIMS];
	int n, max;
	const Node *node;
	const OpDims *od;
	int64_t devices;
	int generated;
} Gen;

bool op_dim_used(const OpDims *od, int o)
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
		if (!op_split_allowed(g->node, g->od, cur, g->devices, NULL))
			return;
		g->generated++;
		if (g->n < g->max)
			memcpy(g->split[g->n++], cur, sizeof(int64_t) * MAX_OPDIMS);
		return;
	}
	int64_t left = g->devices / product;
	bool free_dim = !(g->od->whole & (1u << o)) && op_dim_used(g->od, o);
	for (int64_t s = 1; s <= left; s++) {
		if (left % s || (s > 1 && (!free_dim || !op_dim_takes(g->node, g->od, o, s))))
			continue;
		cur[o] = s;
		gen(g, o + 1, cur, product * s);
	}
	cur[o] = 1;
}

int64_t product_of(const int64_t *s, int n)
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

int op_candidates(const Node *node, const OpDims *od, int64_t device_num, int64_t (*out)[MAX_OPDIMS], int max)
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
	Gen g = {rest, 0, max, node, od, device_num, 0};
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

int cost_cmp(const void *pa, const void *pb, void *ctx)
{
	const double *cost = ctx;
	int a = *(const int *)pa, b = *(const int *)pb;
	if (cost[a] != cost[b])
		return cost[a] < cost[b] ? -1 : 1;
	return a - b;
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
int cheaper_candidates(Search *x, int v, double bound, Priced *out, int max)
{
	const OpDims *od = x->st->node[v].od;
	if (!x->cand)
		x->cand = xmalloc(sizeof *x->cand * MAX_CANDIDATES);
	int64_t (*cand)[MAX_OPDIMS] = x->cand;
	int nc = op_candidates(&x->g->nodes[v], od, x->n, cand, MAX_CANDIDATES), n = 0;
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
		search_split(x, od, cand[i], copies_first(&x->cur[v]), &s);
		if (memcmp(s.split, x->cur[v].split, sizeof s.split) == 0 || compute_cost(x, v, &s) >= bound)
			continue;
		double mem, c = local_cost_under(x, v, &s, bound, &mem);
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

/* ---- a whole plan: its cost, and its memory as the program allocates it ---- */

/* A value's point-to-point send, as it is laid out where it is made
 * (lower.c's SendRecv), and its gradient back when it carries one: the
 * seconds each way (0: not sent). */
static double send_cost(Search *x, int id)
{
	const Graph *g = x->g;
	int made = g->values[id].node;
	const TensorLayout *l = made >= 0 ? &x->raw[made] : home(x, id);
	if (!l)
		return 0;
	const Type *t = &g->values[id].type;
	return cost_p2p(x->cm, (double)cost_slice_bytes(l, t->dims, dtype_bytes(t->dtype)), x->n * x->stages);
}

/* The point-to-point sends of a micro-batch (search_init's x->sends: each
 * value read on a later stage, once per reading stage). A send is charged
 * to the stage that waits on it: the reader forward, the sender backward. */
static void p2p_costs(Search *x, double *stage_cost)
{
	for (int i = 0; i < x->nsends; i++) {
		int id = x->sends[i].value;
		double one = send_cost(x, id);
		stage_cost[x->sends[i].stage] += one;
		if (x->needs[id])
			stage_cost[x->value_stage[id]] += one;
	}
}

/* Operator v's seconds under the current strategies: a micro-batch's
 * compute and redistributions, forward and backward, into *turn; with
 * pipeline stages the gradient reductions that go out once a step into
 * *once (without, they are in *turn at 1/N each: grad_cost). */
static void node_seconds(Search *x, int v, double *turn, double *once)
{
	const Node *nd = &x->g->nodes[v];
	const NodeStrategy *ns = &x->st->node[v];
	const Value *res = &x->g->values[nd->result];
	*turn += compute_cost(x, v, &x->cur[v]);
	for (int k = 0; k < nd->nin; k++) {
		double in = in_cost(x, v, k, &x->in[v][k], true, 0, INFINITY);
		double r = grad_cost(x, v, k, &x->in[v][k], &x->raw[v], true);
		if (x->stages > 1 && x->m->train && reduced_once(x, &x->src[v][k]))
			*turn += in, *once += r;
		else
			*turn += in + r;
	}
	if (ns->has_out_strategy)
		*turn += cost_redist(x->cm, &x->raw[v], ns->delivered, res->type.dims, dtype_bytes(res->type.dtype), NULL);
	if (x->returned[v])
		*turn += complete_cost(x, v, &x->out[v]);
}

static void decide_all(Search *x)
{
	for (int v = 0; v < x->g->nnodes; v++)
		if (searchable(x, v))
			x->decided[v] = true;
}

/* The total cost and per-device memory of the current strategies: a
 * micro-batch's share of a step's seconds. Without pipeline stages, the sum
 * of every operator's seconds (node_seconds). With P stages and M
 * micro-batches the stages run at once, each its own operators and the
 * point-to-point sends it waits on (p2p_costs): a step takes M + P - 1
 * turns of the slowest stage (the schedule's bubble, GPipe's and 1F1B's
 * alike), then the slowest stage's once-a-step reductions. */
double total(Search *x, double *memory)
{
	const Graph *g = x->g;
	double mem = 0, one = 0, *turn = &one, *once = &one;   /* per stage: a micro-batch's seconds; once a step */
	if (x->stages > 1) {
		turn = xcalloc((size_t)x->stages, sizeof(double));
		once = xcalloc((size_t)x->stages, sizeof(double));
	}
	decide_all(x);
	for (int v = 0; v < g->nnodes; v++) {
		if (!searchable(x, v))
			continue;
		const Value *res = &g->values[g->nodes[v].result];
		if (x->node_stage[v] >= 0)
			node_seconds(x, v, &turn[x->node_stage[v]], &once[x->node_stage[v]]);
		else   /* a constant every stage computes */
			for (int64_t s = 0; s < x->stages; s++)
				node_seconds(x, v, &turn[s], &once[s]);
		mem += (double)cost_slice_bytes(&x->raw[v], res->type.dims, dtype_bytes(res->type.dtype));
	}
	for (int p = 0; p < g->nparams; p++) {
		const TensorLayout *h = home(x, p);
		const Value *pv = &g->values[p];
		if (!h || !is_param(x, p))
			continue;
		mem += param_mem_factor(x, p) * (double)cost_slice_bytes(h, pv->type.dims, dtype_bytes(pv->type.dtype));
	}
	double c = one;
	if (x->stages > 1) {
		p2p_costs(x, turn);
		double slowest = 0, reduce = 0;
		for (int s = 0; s < x->stages; s++) {
			slowest = turn[s] > slowest ? turn[s] : slowest;
			reduce = once[s] > reduce ? once[s] : reduce;
		}
		double m = (double)(x->m->train ? x->m->train->accumulate_steps : 1);
		c = slowest * pipeline_turns(x->stages, (int64_t)m) / m + reduce;
		free(turn);
		free(once);
	}
	*memory = mem;
	return c;
}

void search_given(Search *x, const Module *m, const FlatGraph *f, const Strategies *s, const Cluster *c)
{
	search_init(x, m, f, (Strategies *)s, c);
	for (int v = 0; v < f->g->nnodes; v++)
		if (searchable(x, v))
			set_current(x, v, s->node[v].split);
}

double strategies_cost(const Module *m, const FlatGraph *f, const Strategies *s, const Cluster *c)
{
	Search x;
	search_given(&x, m, f, s, c);
	double mem, t = total(&x, &mem);
	search_done(&x);
	return t;
}

void strategies_seconds(const Module *m, const FlatGraph *f, const Strategies *s, const Cluster *c, double *turn,
                        double *once, double *send)
{
	Search x;
	search_given(&x, m, f, s, c);
	decide_all(&x);
	for (int v = 0; v < f->g->nnodes; v++) {
		turn[v] = once[v] = 0;
		if (searchable(&x, v))
			node_seconds(&x, v, &turn[v], &once[v]);
	}
	for (int v = 0; v < f->g->nvalues; v++)
		send[v] = send_cost(&x, v) * (x.needs[v] ? 2 : 1);
	search_done(&x);
}

/* The bytes a device needs under the current strategies, counted the way
 * the program allocates them: the strategies lowered (redistributions and,
 * with a train block, the backward pass included) and the generated
 * program's slab planned (emit_plan: parameters, inputs and optimizer state,
 * then every buffer placed by liveness, then the largest scratch), by the
 * pipeline's own stages (x->plan), whose program is freed here; the strategies' splits are
 * put back as they were. The last plan's slab is kept: asked again, it is
 * not planned again. The strategies lowered are the search's with what the
 * search stage sets after it (pipeline.c): mixed precision's Casts laid out
 * as their readers take them, computed constants as theirs (in a copy,
 * x->lowered_nodes, valid until the next call). */
Compilation search_lowering(Search *x, Stage stop)
{
	Compilation c = {.start = STAGE_LOWER, .stop = stop, .name = "", .m = (Module *)x->m,   /* read, not changed */
	                 .flat = (FlatGraph *)x->f, .st = *x->st, .slab_only = true};
	size_t size = sizeof(NodeStrategy) * (size_t)(x->g->nnodes ? x->g->nnodes : 1);
	if (!x->lowered_nodes)
		x->lowered_nodes = arena_alloc(x->a, size);
	memcpy(x->lowered_nodes, x->st->node, size);
	c.st.node = x->lowered_nodes;
	autocast_strategies(x->m, x->f, &c.st);
	constant_layouts(x->m, x->f, &c.st);
	c.search.cluster = *cost_cluster(x->cm);
	if (!x->plan(&c) && c.reached > STAGE_DIFFERENTIATE)
		die("a plan the search priced did not lower");
	return c;   /* c.status: uneven.c refused it (strategies the user fixed), c.low as far as it got */
}

double slab_memory(Search *x)
{
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
	Compilation c = search_lowering(x, STAGE_PLAN);
	if (c.status) {   /* refused (uneven.c): no figure, and nothing to save; the pipeline's lowering says why */
		lowered_free(c.low);
		for (int v = 0; v < g->nnodes; v++)
			x->st->node[v].split = was[v];
		free(was);
		return x->slab = 0;
	}
	const Lowered *l = c.low;
	double slab = (double)emit_slab_bytes(c.plan);
	x->slab_again = 0;
	for (int i = l->nfwd; i < l->nops; i++) {
		const LOp *o = &l->ops[i];
		if (op_recomputes(l, i) >= 0 && !op_shadow(l, i) && o->step && o->step->kind != STEP_SLICE)
			x->slab_again += cost_collective(x->cm, &o->step->from, o->step->axes, o->bytes);
	}
	emit_free(c.plan);   /* all the compilation made (not compilation_free: pipeline.c sits above the search) */
	lowered_free(c.low);
	for (int v = 0; v < g->nnodes; v++)
		x->st->node[v].split = was[v];
	free(was);
	return x->slab = slab;
}
