/* search_stages.c: where the search places the pipeline stages (docs/language.md, Pipeline
 * parallelism): with pipeline_stages "auto", how many; with a count given or chosen, where
 * the stages split.
 *
 * Requires the graph flattened and checked, auto_parallel, a train block and no pipeline_stage
 * written (else the strategies are assigned as usual). Each stage count P (the one given, or
 * with "auto" every P dividing the ranks, up to MAX_AUTO_STAGES and the operators there are)
 * is tried as if written: the context's stages and a stage's devices set, the strategies
 * assigned and searched over a stage's devices quickly (SearchOptions.quick: the search's
 * starts, a few of them lowered for their memory, no polish; with the memory savings it
 * switches on when a plan does not fit), first over the split by work (stages.c's
 * split_evenly), then over the split that balances that plan's seconds (split_by_cost), the
 * better kept. A plan's price is price.c's total, which counts the slowest stage M + P - 1
 * times for M micro-batches (the bubble), the point-to-point sends each stage waits on and the
 * slowest stage's gradient reductions; its memory is its slab, which holds a stage's own
 * parameters and the activations of the micro-batches it has in flight. The cheapest plan
 * that fits a device wins (none fits: the one needing the least memory, which the search
 * stage then reports); its split travels in Strategies.split, and the search stage searches
 * it in full. The micro-batch count stays the train block's: the graph is one micro-batch, so
 * another count would train on another batch.
 *
 * Each trial starts from the same module: the context, the train block and the flat graph's
 * attributes are put back between trials (start_over). */
#include "shardc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_AUTO_STAGES = 64 };

typedef struct {
	int64_t stages;
	bool tried;              /* false: the strategies could not be assigned */
	bool fits;
	double cost, memory;
	bool resplit;            /* a split by seconds was searched too */
	double work_cost, work_memory;   /* resplit: the split by work's plan */
	int *split;              /* the split by seconds when it won (m's arena), else NULL: by work */
} Trial;

/* What every trial starts from: the module as the user wrote it (a search
 * writes its choices into the context, the train block and the flat graph's
 * attributes: a shard's results get an out_strategy, memory savings switch
 * on optimizer parallelism and recomputation). */
typedef struct {
	Context ctx;
	Train train;
	Attrs *attrs;
	Lit **lits;
} Start;

static void start_over(Module *m, const FlatGraph *f, const Start *st, int64_t stages)
{
	m->ctx = st->ctx;
	*m->train = st->train;
	for (int i = 0; i < f->g->nnodes; i++)
		f->g->nodes[i].a = st->attrs[i], f->g->nodes[i].attr_lit = st->lits[i];
	m->ctx.stages = stages;
	m->ctx.device_num = st->ctx.ranks / stages;
}

static bool better(bool fits, double cost, double memory, const Trial *than)
{
	return (fits && !than->fits) || (fits == than->fits && (fits ? cost < than->cost : memory < than->memory));
}

/* The split that balances the stages' seconds under strategies st, searched
 * for `stages` stages: operator i weighs its micro-batch's seconds and its
 * once-a-step reductions' share of a turn. NULL: the same split as by work. */
static int *split_by_seconds(Module *m, const FlatGraph *f, const Strategies *st, const Cluster *c, int64_t stages)
{
	const Graph *g = f->g;
	int nn = g->nnodes;
	double *turn = xmalloc(sizeof(double) * (size_t)nn), *once = xmalloc(sizeof(double) * (size_t)nn);
	double *send = xmalloc(sizeof(double) * (size_t)(g->nvalues ? g->nvalues : 1));
	strategies_seconds(m, f, st, c, turn, once, send);
	int64_t micro = m->train->accumulate_steps;
	for (int i = 0; i < nn; i++)
		turn[i] += once[i] * (double)micro / (double)pipeline_turns(stages, micro);
	int *split = arena_alloc(m->arena, sizeof(int) * (size_t)nn);
	split_by_cost(f, turn, send, stages, split);
	int *ns = xmalloc(sizeof(int) * (size_t)nn), *vs = xmalloc(sizeof(int) * (size_t)(g->nvalues ? g->nvalues : 1));
	assign_stages(f, st, stages, ns, vs);   /* st's own: the split by work */
	bool same = memcmp(ns, split, sizeof(int) * (size_t)nn) == 0;
	free(turn);
	free(once);
	free(send);
	free(ns);
	free(vs);
	return same ? NULL : split;
}

/* One stage count's plan: the split by work searched quickly; with several
 * stages then the split its plan's seconds balance, searched again, and the
 * better of the two kept (the cheaper that fits, else the smaller). */
static void try_count(Module *m, const FlatGraph *f, const Start *start, const SearchOptions *q, Diag *quiet,
                      Trial *tr)
{
	start_over(m, f, start, tr->stages);
	Strategies st = {0};
	quiet->nerrors = 0;
	if (!assign_strategies(m, f, &st, quiet))
		return;
	tr->tried = true;
	tr->fits = search_priced(m, f, &st, q, quiet, &tr->cost, &tr->memory);
	if (tr->stages == 1 || !m->train)
		return;
	int *split = split_by_seconds(m, f, &st, &q->cluster, tr->stages);
	if (!split)
		return;
	start_over(m, f, start, tr->stages);
	Strategies by_seconds = {0};
	if (!assign_strategies(m, f, &by_seconds, quiet))
		return;
	by_seconds.split = split;
	double cost, memory;
	bool fits = search_priced(m, f, &by_seconds, q, quiet, &cost, &memory);
	tr->resplit = true;
	tr->work_cost = tr->cost, tr->work_memory = tr->memory;
	if (better(fits, cost, memory, tr))
		tr->fits = fits, tr->cost = cost, tr->memory = memory, tr->split = split;
}

/* The boundaries of the chosen split, for --explain: each stage's first and
 * last operator and its share of the work's operators. */
static void explain_boundaries(const FlatGraph *f, const Strategies *s, int64_t stages, FILE *out)
{
	const Graph *g = f->g;
	int *ns = xmalloc(sizeof(int) * (size_t)(g->nnodes ? g->nnodes : 1));
	int *vs = xmalloc(sizeof(int) * (size_t)(g->nvalues ? g->nvalues : 1));
	assign_stages(f, s, stages, ns, vs);
	for (int64_t k = 0; k < stages; k++) {
		int first = -1, last = -1, n = 0;
		for (int i = 0; i < g->nnodes; i++)
			if (ns[i] == k) {
				first = first < 0 ? i : first;
				last = i;
				n++;
			}
		if (first < 0)
			fprintf(out, "#   stage %lld: no operator\n", (long long)k);
		else
			fprintf(out, "#   stage %lld: %d operators, %%%s to %%%s\n", (long long)k, n,
			        g->values[g->nodes[first].result].name, g->values[g->nodes[last].result].name);
	}
	free(ns);
	free(vs);
}

static void explain(const Module *m, const Trial *t, int nt, int best, FILE *out)
{
	int64_t micro = m->train->accumulate_steps;
	fprintf(out, "# pipeline stages (%s, %lld micro-batches a step, %lld ranks): each stage count's plan, "
	        "the cost a micro-batch's share of a step\n", m->ctx.pipeline_stages ? "as given" : "\"auto\"",
	        (long long)micro, (long long)m->ctx.ranks);
	for (int i = 0; i < nt; i++) {
		if (!t[i].tried) {
			fprintf(out, "#   %lld stages: the strategies do not fit %lld devices a stage\n", (long long)t[i].stages,
			        (long long)(m->ctx.ranks / t[i].stages));
			continue;
		}
		double bubble = (double)(t[i].stages - 1) / pipeline_turns(t[i].stages, micro);
		fprintf(out, "#   %lld stage%s of %lld device%s: cost %.4g s, needs %.4g B a device (%s), bubble %.0f%%",
		        (long long)t[i].stages, t[i].stages > 1 ? "s" : "", (long long)(m->ctx.ranks / t[i].stages),
		        m->ctx.ranks / t[i].stages > 1 ? "s" : "", t[i].cost, t[i].memory,
		        t[i].fits ? "fits" : "does not fit", 100 * bubble);
		if (t[i].resplit)
			fprintf(out, "; split by %s (by %s: cost %.4g s, needs %.4g B)", t[i].split ? "seconds" : "work",
			        t[i].split ? "work" : "seconds", t[i].split ? t[i].work_cost : t[i].cost,
			        t[i].split ? t[i].work_memory : t[i].memory);
		fprintf(out, "%s\n", i == best ? ": chosen" : "");
	}
	const Trial *b = &t[best];
	if (b->stages == 1)
		fprintf(out, "# chose 1 stage: no split into stages costs less%s\n",
		        b->fits ? "" : " (and none fits a device)");
	else
		fprintf(out, "# chose %lld stages: %s; the stages split the operators %s:\n", (long long)b->stages,
		        m->ctx.pipeline_stages ? "as given" : b->fits ? "the cheapest plan that fits a device" :
		        "no plan fits a device; the one needing the least memory",
		        b->split ? "so that the slowest stage's seconds (its operators' and its sends') are least" :
		        "by work, each boundary where the fewest bytes cross");
}

bool search_stages(Module *m, const FlatGraph *f, Strategies *s, const SearchOptions *o, Diag *d)
{
	const Graph *g = f->g;
	if (m->ctx.pipeline_stages == 1 || !m->train || stages_written(f))   /* nothing to place */
		return assign_strategies(m, f, s, d);
	Start start = {.ctx = m->ctx, .train = *m->train};
	start.attrs = xmalloc(sizeof(Attrs) * (size_t)(g->nnodes ? g->nnodes : 1));
	start.lits = xmalloc(sizeof(Lit *) * (size_t)(g->nnodes ? g->nnodes : 1));
	for (int i = 0; i < g->nnodes; i++)
		start.attrs[i] = g->nodes[i].a, start.lits[i] = g->nodes[i].attr_lit;
	char *sink = NULL;
	size_t sink_len = 0;
	FILE *quiet_out = open_memstream(&sink, &sink_len);
	if (!quiet_out)
		die("out of memory");
	Diag quiet = {.out = quiet_out};
	SearchOptions q = *o;
	q.explain = false;
	q.quick = true;   /* the tries ranked by D-Rec's starts; the chosen count is searched in full after */

	Trial t[MAX_AUTO_STAGES];
	int nt = 0, best = -1;
	int64_t ranks = start.ctx.ranks;
	for (int64_t p = 1; p <= ranks && p <= MAX_AUTO_STAGES && p <= g->nnodes; p++) {
		if (ranks % p || (start.ctx.pipeline_stages && p != start.ctx.pipeline_stages))
			continue;
		Trial *tr = &t[nt++];
		*tr = (Trial){.stages = p};
		try_count(m, f, &start, &q, &quiet, tr);
		if (tr->tried && (best < 0 || better(tr->fits, tr->cost, tr->memory, &t[best])))
			best = nt - 1;
	}
	fclose(quiet_out);
	free(sink);
	/* none took the strategies: the first count, whose errors the user sees */
	start_over(m, f, &start, best >= 0 ? t[best].stages : start.ctx.pipeline_stages ? start.ctx.pipeline_stages : 1);
	free(start.attrs);
	free(start.lits);
	if (best < 0)
		return assign_strategies(m, f, s, d);
	bool ok = assign_strategies(m, f, s, d);
	s->split = t[best].split;
	if (ok && o->explain) {
		FILE *out = o->out ? o->out : stdout;
		explain(m, t, nt, best, out);
		if (t[best].stages > 1)
			explain_boundaries(f, s, t[best].stages, out);
	}
	return ok;
}
