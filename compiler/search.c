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
 *       reaches keep the batch-parallel default. With a train block that
 *       plan and the dp x mp templates are starts for the fixed point
 *       (rec_search.c, propagate_trained).
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
 * reported with what would fit (report_memory).
 *
 * The search is in files of one concern each, bottom up (search_internal.h):
 * search_graph.c, price.c, propagate.c, polish.c, rec_search.c,
 * search_run.c and savings.c; this file is the entry and --explain. */
#include "search_internal.h"

#include <math.h>

static void print_split(StrBuf *b, const Search *x, int v, const OpSplit *s)
{
	const Node *nd = &x->g->nodes[v];
	sb_putc(b, '(');
	for (int k = 0; k < nd->nin; k++) {
		int64_t split[MAX_DIMS];
		int rank = op_in_split(x->st->node[v].od, s, k, split);
		if (k)
			sb_puts(b, ", ");
		ints_print(b, split, rank);
	}
	sb_puts(b, nd->nin == 1 ? ",)" : ")");
	if (copies_first(s) > 1)
		sb_printf(b, " with %lld copies first", (long long)copies_first(s));
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
		if (ns->split->tuple || copies_first(ns->split) > 1)
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
				bool fits = slab <= cost_cluster(x->cm)->memory;
				sb_printf(&b, ", %s: needs %.0f B a device (%s)", fits ? "fits" : "does not fit", slab,
				          human_bytes(need, slab));
				if (fits && x->m->ctx.search_mode == SM_PROPAGATION)   /* it follows its neighbours, not the cost */
					sb_puts(&b, "; propagation keeps what the configured operators give (the default where "
					        "none reaches)");
			}
		} else
			sb_puts(&b, "; no other candidate");
		fprintf(out, "%s\n", b.data);
		sb_free(&b);
	}
	fprintf(out, "# total cost %.4g s, memory %.4g B a device\n", cost, memory);
	if (x->n > 1 && splits_nothing(x)) {   /* every device computes everything: why */
		int64_t dp, mp;
		double split = cheapest_split(x, &dp, &mp);
		if (split < INFINITY)
			fprintf(out, "# every operator is computed whole on every device: the cheapest plan that splits, %lld x %lld "
			        "(data x model parallel), costs %.4g s against %.4g s, its collectives more than the compute it "
			        "saves at these sizes (a larger batch or hidden size, or fewer devices, change that)\n",
			        (long long)dp, (long long)mp, split, cost);
	}
}

bool search_strategies(Module *m, const FlatGraph *f, Strategies *s, const SearchOptions *o, Diag *d)
{
	double cost, mem;
	return search_priced(m, f, s, o, d, &cost, &mem);
}

bool search_priced(Module *m, const FlatGraph *f, Strategies *s, const SearchOptions *o, Diag *d, double *cost_out,
                   double *mem_out)
{
	*cost_out = 0, *mem_out = 0;
	if (s->device_num < 1)
		return true;
	if (m->ctx.parallel_mode != PM_AUTO) {   /* nothing to search; --explain still prices the given strategies */
		if (o->explain && !o->results_only) {
			Search x;
			search_given(&x, m, f, s, &o->cluster);
			x.plan = o->plan;
			double mem, cost = total(&x, &mem);
			mem = slab_memory(&x);
			if (m->train)
				cost += recompute_cost(&x);
			fprintf(o->out ? o->out : stdout, "# strategies as given (no search, %lld devices): total cost %.4g s, "
			        "memory %.4g B a device\n", (long long)x.n, cost, mem);
			*cost_out = cost, *mem_out = mem;
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
	*cost_out = cost, *mem_out = mem;
	if (!ok)
		report_memory(&x, mem, saved, o, d);
	search_done(&x);
	return ok;
}
