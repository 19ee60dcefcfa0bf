/* rec_search.c: the double-recursive search (search.c's second mode).
 *
 * Requires a Search (search_graph.c). MindSpore's D-Rec (drec): device_num
 * factored into primes, largest first; at each level every operator,
 * heaviest first, cuts one op dim by that factor, the one with the least
 * local_cost. Then local moves (refine), further starts (propagation from
 * the defaults, everything whole, the data-parallel and dp x mp
 * templates), the cheapest whose slab fits kept or crossed with a cheaper
 * one (choose), and the fixed point from there (polish.c). Sharding
 * propagation with a train block shares the starts (propagate_trained). */
#include "search_internal.h"
#include "uneven.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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

static void drec(Search *x, int *order, int *norder_out)
{
	int nn = x->g->nnodes;
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
	}
	int norder = weight_order(x, order);
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
			/* The first candidate that fits, then any that fits and costs
			 * less; when none fits, the first, then any that costs less. */
			OpSplit cand[MAX_OPDIMS], fit[MAX_OPDIMS];
			int n = 0, nfit = 0;
			for (int j = -1; j < od->nod; j++) {
				int o = j < 0 ? od->batch : j;
				if (o < 0 || (j >= 0 && o == od->batch) || (od->whole & (1u << o)) || !op_dim_used(od, o) ||
				    !op_dim_takes(&x->g->nodes[v], od, o, split[o] * p))
					continue;
				int64_t s2[MAX_OPDIMS];
				memcpy(s2, split, sizeof s2);
				s2[o] *= p;
				if (!op_split_allowed(&x->g->nodes[v], od, s2, x->n, NULL))
					continue;
				op_split_from_splits(od, s2, x->n, &cand[n]);
				if (local_memory(x, v, &cand[n]) <= memory)
					fit[nfit++] = cand[n];
				n++;
			}
			double c;
			const OpSplit *from = nfit ? fit : cand;
			int best = scan_candidates(x, v, from, nfit ? nfit : n, INFINITY, true, false, &c);
			if (best >= 0)
				set_current(x, v, &from[best]);
		}
	}
	*norder_out = norder;
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

enum { CROSSOVERS = 3,
       QUICK_SLABS = 4 };   /* a quick search (Search.quick): the starts whose slabs choose counts */

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
	for (; j < b->n && !(x->quick && j == QUICK_SLABS); j++) {
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
	for (int f = 0; j < b->n && f < j && f < CROSSOVERS && !x->quick; f++) {
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
		search_split(x, od, split, x->copies_first, &s);
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

/* The dp x mp template (dp x mp = device_num, or one node's devices with
 * x->copies_first): every operator in graph order the cheapest of
 * template_candidates against its producers; fixed ones their own. */
static void mp_template(Search *x, int64_t dp, int64_t mp)
{
	int nn = x->g->nnodes;
	x->tmpl_dp = dp, x->tmpl_mp = mp;
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
}

/* One node's templates copied across the nodes: with node = the cluster's
 * devices_per_node dividing device_num, the data-parallel templates of
 * every divisor dp > 1 of node and the dp x mp ones with dp x mp = node,
 * their copies on the slowest axis (strategy_copies_first). A slice-count
 * strategy puts its copies on the fastest axis, so a plan splitting fewer
 * ways than device_num splits across the nodes; for a model whose
 * collectives cost more over the slow links than the compute they save,
 * splitting inside a node and computing the same on every node is then the
 * plan that still gains from the devices (at worst the node's own plan:
 * nothing crosses a node). */
static void node_templates(Search *x, Starts *b, Starts *tm)
{
	int64_t node = cost_cluster(x->cm)->devices_per_node;
	if (node <= 1 || node >= x->n || x->n % node)
		return;
	x->copies_first = x->n / node;
	for (int64_t dp = node; dp >= 1; dp--) {
		if (node % dp)
			continue;
		if (dp > 1) {
			data_template(x, dp);
			consider(x, b);
			consider(x, tm);
		}
		if (dp < node) {
			mp_template(x, dp, node / dp);
			consider(x, b);
			consider(x, tm);
		}
	}
	x->copies_first = 0;
}

void recursive(Search *x)
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
		mp_template(x, dp, x->n / dp);
		consider(x, &b);
		consider(x, &tm);
	}
	node_templates(x, &b, &tm);
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
	double limit = choose(x, &b);
	if (!x->quick)
		polish(x, order, norder, limit);
	free(order);
}

/* Sharding propagation with a train block. One greedy pass decides each
 * operator against the neighbours decided before it, so a split that looks
 * cheap forward can cost the backward pass more once the operators after it
 * are decided (a ReduceScatter into a finer split whose adjoint gathers), and
 * single moves from there may not find the plan that splits a whole layer
 * alike. So propagation's plan (operators it does not reach at their
 * default) is one start, the dp x mp templates around the user's strategies
 * the others; the cheapest that fits (choose) is polished to the fixed
 * point, as D-Rec's is. Unless that is cheaper by a meaningful margin (0.1%),
 * propagation's own plan stays: MindSpore's, which users compare with. */
static const double MEANINGFUL = 1e-3;   /* a gain the cost model's rounding and guesses cannot make */

void propagate_trained(Search *x, const Strategies *s)
{
	int nn = x->g->nnodes;
	int *order = xmalloc(sizeof(int) * (size_t)(nn ? nn : 1)), norder = weight_order(x, order);
	Starts b = {0};
	propagate(x, -1, NULL);
	for (int v = 0; v < nn; v++)
		if (searchable(x, v) && !x->fixed_node[v] && !x->decided[v])
			set_current(x, v, s->node[v].split);
	size_t size = sizeof(OpSplit) * (size_t)(nn ? nn : 1);
	OpSplit *greedy = xmalloc(size);
	memcpy(greedy, x->cur, size);
	double mem, greedy_cost = total(x, &mem);
	bool greedy_fits = slab_memory(x) <= cost_cluster(x->cm)->memory;
	consider(x, &b);
	for (int64_t dp = x->n; dp >= 1; dp--)
		if (x->n % dp == 0 && dp < x->n) {
			mp_template(x, dp, x->n / dp);
			consider(x, &b);
		}
	double limit = choose(x, &b);
	if (!x->quick)
		polish(x, order, norder, limit);
	if (greedy_fits && total(x, &mem) > (1 - MEANINGFUL) * greedy_cost)   /* no better: MindSpore's plan */
		set_plan(x, greedy);
	free(greedy);
	free(order);
}

bool splits_nothing(const Search *x)
{
	for (int v = 0; v < x->g->nnodes; v++)
		if (searchable(x, v) && product_of(x->cur[v].split, x->st->node[v].od->nod) > 1)
			return false;
	return true;
}

double cheapest_split(Search *x, int64_t *dp_out, int64_t *mp_out)
{
	int nn = x->g->nnodes;
	size_t size = sizeof(OpSplit) * (size_t)(nn ? nn : 1);
	OpSplit *was = xmalloc(size);
	memcpy(was, x->cur, size);
	double best = INFINITY, mem;
	*dp_out = *mp_out = 0;
	for (int64_t dp = x->n; dp >= 1; dp--) {
		if (x->n % dp)
			continue;
		for (int mp = 0; mp < 2; mp++) {   /* dp x 1 data-parallel, then dp x (n / dp) */
			if (mp ? dp == x->n : dp == 1)
				continue;
			if (mp)
				mp_template(x, dp, x->n / dp);
			else
				data_template(x, dp);
			double c = splits_nothing(x) ? INFINITY : total(x, &mem);
			if (c < best)
				best = c, *dp_out = dp, *mp_out = mp ? x->n / dp : 1;
		}
	}
	set_plan(x, was);
	free(was);
	return best;
}
