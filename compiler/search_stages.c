/* search_stages.c: where the search places the pipeline stages (docs/language.md, Pipeline
 * parallelism): with pipeline_stages "auto", how many; with a count given or chosen, where
 * the stages split; with micro_batches "auto", how many micro-batches a step runs.
 *
 * Requires the graph flattened and checked, auto_parallel and a train block (else the
 * strategies are assigned as usual); with pipeline_stage written, the split is the user's and
 * only micro_batches "auto" is left to choose. Each stage count P (the one given, or with
 * "auto" every P dividing the ranks, up to MAX_AUTO_STAGES and the operators there are) is
 * tried as if written: the context's stages and a stage's devices set, the strategies
 * assigned and searched over a stage's devices quickly (SearchOptions.quick: the search's
 * starts, a few of them lowered for their memory, no polish; with the memory savings it
 * switches on when a plan does not fit) over the split by work (stages.c's split_evenly). A
 * plan's price is price.c's total, which counts the slowest stage M + P - 1 times for M
 * micro-batches (the bubble), the point-to-point sends each stage waits on and the slowest
 * stage's gradient reductions, a micro-batch's share, so a step's is M times it; its memory is
 * its slab, which holds a stage's own parameters and the activations of the micro-batches it
 * has in flight. The micro-batch count is the train block's; with "auto" the graph is the
 * step's batch, and each P tries M = P, 2P, 4P (1, 2, 4 for one stage: the hand 3-D plans'
 * choices), then 8P, 16P, 32P while no plan of any count has fit a device or while this P's
 * plans fit and get cheaper, with the batch split M ways (rebatch.c), in that order until a
 * plan that fits costs more than the one before it (more micro-batches shrink the bubble and
 * the activations in flight, but each runs smaller matrices and pays the latencies and
 * per-micro-batch gathers again) or the batch does not split into M. The counts go from the most stages down: their plans search quickest and
 * fit likeliest, so the fewer stages, slow to search, seldom climb past 4P (the 175B row
 * compiles in under a minute). A tie goes to the fewer stages. The best plan of each P
 * is then searched over the split that balances its seconds (split_by_cost) too, the better
 * kept, unless it does not fit where another count's plan does (the two splits' memory
 * differs by a few percent). The cheapest step that fits a device wins (none fits: the one needing the least
 * memory, which the search stage then reports); its split travels in Strategies.split, and the
 * search stage searches it in full.
 *
 * Each trial starts from the same module: the context, the train block and the flat graph's
 * types and attributes are put back between trials (start_over). */
#include "shardc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_AUTO_STAGES = 64, MICRO_TRIES = 6, MICRO_SURE = 3 };

typedef struct {
	int64_t stages, micro;
	bool tried;              /* false: the strategies could not be assigned */
	bool fits;
	double cost, memory;     /* a step's */
	bool chosen;
	bool unsplit;            /* not tried: the batch does not split into `micro` micro-batches, */
	char why[400];           /* as rebatch.c said */
	bool resplit;            /* a split by seconds was searched too */
	double work_cost, work_memory;   /* resplit: the split by work's plan */
	int *by_seconds;         /* the split that balances the plan by work's seconds (m's arena); NULL: the same */
	int *split;              /* by_seconds when it won, else NULL: by work */
} Trial;

/* What every trial starts from: the module as the user wrote it (a search
 * writes its choices into the context, the train block and the flat graph's
 * attributes: a shard's results get an out_strategy, memory savings switch
 * on optimizer parallelism and recomputation; rebatch.c its types). */
typedef struct {
	Context ctx;
	Train train;
	Attrs *attrs;
	Lit **lits;
	Type *types;
} Start;

/* The module as written, with `stages` stages and `micro` micro-batches (with
 * micro_batches "auto" the step's batch split so); false where it does not split. */
static bool start_over(Module *m, FlatGraph *f, const Start *st, int64_t stages, int64_t micro, Diag *d)
{
	m->ctx = st->ctx;
	*m->train = st->train;
	for (int i = 0; i < f->g->nnodes; i++)
		f->g->nodes[i].a = st->attrs[i], f->g->nodes[i].attr_lit = st->lits[i];
	for (int v = 0; v < f->g->nvalues; v++)
		f->g->values[v].type = st->types[v];
	f->step_rows = NULL;
	m->ctx.stages = stages;
	m->ctx.device_num = st->ctx.ranks / stages;
	m->train->accumulate_steps = micro;
	return !st->train.micro_auto || micro == 1 || rebatch(m, f, micro, d);
}

static int by_count(const void *a, const void *b)
{
	const Trial *x = a, *y = b;
	return x->stages != y->stages ? (x->stages > y->stages) - (x->stages < y->stages)
	                              : (x->micro > y->micro) - (x->micro < y->micro);
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

/* A plan's price and memory, its cost a step's. */
static bool priced(Module *m, const FlatGraph *f, Strategies *st, const SearchOptions *q, Diag *quiet, double *cost,
                   double *memory)
{
	bool fits = search_priced(m, f, st, q, quiet, cost, memory);
	*cost *= (double)m->train->accumulate_steps;
	return fits;
}

/* One stage count and micro-batch count's plan: the split by work searched
 * quickly, and with several stages (and no pipeline_stage written) the split
 * that plan's seconds balance (tr->by_seconds, searched by try_split). */
static void try_count(Module *m, FlatGraph *f, const Start *start, const SearchOptions *q, Diag *quiet, Trial *tr)
{
	quiet->nerrors = 0;
	if (!start_over(m, f, start, tr->stages, tr->micro, quiet)) {
		tr->unsplit = true;
		return;
	}
	Strategies st = {0};
	if (!assign_strategies(m, f, &st, quiet))
		return;
	tr->tried = true;
	tr->fits = priced(m, f, &st, q, quiet, &tr->cost, &tr->memory);
	if (tr->stages > 1 && !stages_written(f))
		tr->by_seconds = split_by_seconds(m, f, &st, &q->cluster, tr->stages);
}

/* Trial tr's split by seconds searched too, the better of its two splits kept
 * (the cheaper that fits, else the smaller). */
static void try_split(Module *m, FlatGraph *f, const Start *start, const SearchOptions *q, Diag *quiet, Trial *tr)
{
	if (!tr->by_seconds)
		return;
	start_over(m, f, start, tr->stages, tr->micro, quiet);
	Strategies by_seconds = {0};
	if (!assign_strategies(m, f, &by_seconds, quiet))
		return;
	by_seconds.split = tr->by_seconds;
	double cost, memory;
	bool fits = priced(m, f, &by_seconds, q, quiet, &cost, &memory);
	tr->resplit = true;
	tr->work_cost = tr->cost, tr->work_memory = tr->memory;
	if (better(fits, cost, memory, tr))
		tr->fits = fits, tr->cost = cost, tr->memory = memory, tr->split = tr->by_seconds;
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

static void explain(const Module *m, bool written, const Trial *t, int nt, int best, FILE *out)
{
	bool micro_auto = m->train->micro_auto;
	fprintf(out, "# pipeline stages (%s) and micro-batches (", m->ctx.pipeline_stages ? "as given" : "\"auto\"");
	if (micro_auto)
		fputs("\"auto\"", out);
	else
		fprintf(out, "%lld, the train block's", (long long)m->train->accumulate_steps);
	fprintf(out, ") on %lld ranks: each plan's cost a step\n", (long long)m->ctx.ranks);
	for (int i = 0; i < nt; i++) {
		int64_t p = t[i].stages, d = m->ctx.ranks / t[i].stages;
		fprintf(out, "#   %lld stage%s of %lld device%s, %lld micro-batch%s: ", (long long)p, p > 1 ? "s" : "",
		        (long long)d, d > 1 ? "s" : "", (long long)t[i].micro, t[i].micro > 1 ? "es" : "");
		if (!t[i].tried) {
			fprintf(out, "%s\n", t[i].unsplit ? t[i].why : "the strategies do not fit the stage's devices");
			continue;
		}
		double bubble = (double)(p - 1) / pipeline_turns(p, t[i].micro);
		fprintf(out, "cost %.4g s, needs %.4g B a device (%s), bubble %.0f%%", t[i].cost, t[i].memory,
		        t[i].fits ? "fits" : "does not fit", 100 * bubble);
		if (t[i].resplit)
			fprintf(out, "; split by %s (by %s: cost %.4g s, needs %.4g B)", t[i].split ? "seconds" : "work",
			        t[i].split ? "work" : "seconds", t[i].split ? t[i].work_cost : t[i].cost,
			        t[i].split ? t[i].work_memory : t[i].memory);
		fprintf(out, "%s\n", i == best ? ": chosen" : "");
	}
	const Trial *b = &t[best];
	if (micro_auto)
		fprintf(out, "# chose %lld micro-batch%s a step of the graph's batch\n", (long long)b->micro,
		        b->micro > 1 ? "es" : "");
	if (b->stages == 1)
		fprintf(out, "# chose 1 stage: no split into stages costs less%s\n",
		        b->fits ? "" : " (and none fits a device)");
	else
		fprintf(out, "# chose %lld stages: %s; the stages split the operators %s:\n", (long long)b->stages,
		        written ? "as written" : m->ctx.pipeline_stages ? "as given" :
		        b->fits ? "the cheapest plan that fits a device" :
		        "no plan fits a device; the one needing the least memory",
		        b->split ? "so that the slowest stage's seconds (its operators' and its sends') are least" :
		        "by work, each boundary where the fewest bytes cross");
}

/* The micro-batch counts to try for `stages` stages: the train block's, or with
 * "auto" P, 2P, 4P, ... 32P (1, 2, 4, ... for one stage: gradient accumulation);
 * search_stages goes past MICRO_SURE of them only where more may help. */
static int micro_counts(const Module *m, int64_t stages, int64_t *micro)
{
	if (!m->train->micro_auto) {
		micro[0] = m->train->accumulate_steps;
		return 1;
	}
	for (int k = 0; k < MICRO_TRIES; k++)
		micro[k] = stages << k;
	return MICRO_TRIES;
}

bool search_stages(Module *m, FlatGraph *f, Strategies *s, const SearchOptions *o, Diag *d)
{
	const Graph *g = f->g;
	bool written = stages_written(f);
	if (!m->train || (!m->train->micro_auto && (m->ctx.pipeline_stages == 1 || written)))   /* nothing to place */
		return assign_strategies(m, f, s, d);
	Start start = {.ctx = m->ctx, .train = *m->train};
	start.attrs = xmalloc(sizeof(Attrs) * (size_t)(g->nnodes ? g->nnodes : 1));
	start.lits = xmalloc(sizeof(Lit *) * (size_t)(g->nnodes ? g->nnodes : 1));
	start.types = xmalloc(sizeof(Type) * (size_t)(g->nvalues ? g->nvalues : 1));
	for (int i = 0; i < g->nnodes; i++)
		start.attrs[i] = g->nodes[i].a, start.lits[i] = g->nodes[i].attr_lit;
	for (int v = 0; v < g->nvalues; v++)
		start.types[v] = g->values[v].type;
	char *sink = NULL;
	size_t sink_len = 0;
	FILE *quiet_out = open_memstream(&sink, &sink_len);
	if (!quiet_out)
		die("out of memory");
	Diag quiet = {.out = quiet_out};
	SearchOptions q = *o;
	q.explain = false;
	q.quick = true;   /* the tries ranked by D-Rec's starts; the chosen count is searched in full after */

	Trial t[MAX_AUTO_STAGES * MICRO_TRIES];
	int nt = 0, best = -1;
	bool any_fit = false;
	int64_t ranks = start.ctx.ranks;
	/* The most stages first: their plans are the quickest to search and the likeliest to fit, which
	 * bounds the micro-batch counts the fewer stages try. */
	for (int64_t p = ranks; p >= 1; p--) {
		if (ranks % p || p > MAX_AUTO_STAGES || p > g->nnodes ||
		    (start.ctx.pipeline_stages && p != start.ctx.pipeline_stages))
			continue;
		int64_t micro[MICRO_TRIES];
		int nm = micro_counts(m, p, micro);
		const Trial *last_fit = NULL;
		int best_here = -1;
		/* Past MICRO_SURE counts only while nothing fits, or while this P's plans fit and get cheaper. */
		for (int k = 0; k < nm && (k < MICRO_SURE || !any_fit || (last_fit && last_fit == &t[nt - 1])); k++) {
			Trial *tr = &t[nt++];
			*tr = (Trial){.stages = p, .micro = micro[k]};
			fflush(quiet_out);
			size_t said = sink_len;
			try_count(m, f, &start, &q, &quiet, tr);
			fflush(quiet_out);
			const char *why = tr->unsplit && sink ? strstr(sink + said, "error: ") : NULL;
			if (why)
				snprintf(tr->why, sizeof tr->why, "%.*s", (int)strcspn(why + 7, "\n"), why + 7);
			if (tr->tried && (best_here < 0 || better(tr->fits, tr->cost, tr->memory, &t[best_here])))
				best_here = nt - 1;
			if (tr->unsplit)   /* nor will twice as many */
				break;
			if (tr->tried && tr->fits) {   /* more micro-batches cost more from here on */
				any_fit = true;
				if (last_fit && tr->cost >= last_fit->cost)
					break;
				last_fit = tr;
			}
		}
		if (best_here < 0)
			continue;
		Trial *b = &t[best_here];
		if (b->fits || !any_fit)   /* the split by seconds moves little memory: not for a count that cannot win */
			try_split(m, f, &start, &q, &quiet, b);   /* this count's best, split by seconds too */
		if (best < 0 || better(b->fits, b->cost, b->memory, &t[best]) ||
		    (!better(t[best].fits, t[best].cost, t[best].memory, b) && b->stages < t[best].stages))
			best = best_here;   /* a tie: the fewer stages */
	}
	if (best >= 0) {   /* in order of stages, then micro-batches, for --explain */
		t[best].chosen = true;
		qsort(t, (size_t)nt, sizeof *t, by_count);
		for (best = 0; !t[best].chosen; best++)
			;
	}
	fclose(quiet_out);
	free(sink);
	/* none took the strategies: the first count, whose errors the user sees */
	int64_t stages = best >= 0 ? t[best].stages : start.ctx.pipeline_stages ? start.ctx.pipeline_stages : 1;
	bool ok = start_over(m, f, &start, stages, best >= 0 ? t[best].micro : start.train.accumulate_steps, d);
	free(start.attrs);
	free(start.lits);
	free(start.types);
	if (!ok)
		return false;
	if (best < 0)
		return assign_strategies(m, f, s, d);
	ok = assign_strategies(m, f, s, d);
	s->split = t[best].split;
	if (ok && o->explain) {
		FILE *out = o->out ? o->out : stdout;
		explain(m, written, t, nt, best, out);
		if (t[best].stages > 1)
			explain_boundaries(f, s, t[best].stages, out);
	}
	return ok;
}
