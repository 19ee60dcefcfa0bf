/* search_stages.c: pipeline_stages "auto" (docs/language.md, Pipeline
 * parallelism): the search picks how many stages.
 *
 * Requires the graph flattened and checked, pipeline_stages "auto" (the
 * context's stages 1 until here). Every stage count P that divides the
 * ranks (up to MAX_AUTO_STAGES and the operators there are) is tried as if
 * written: the context's stages and a stage's devices set, the stages split
 * by work (stages.c's split_evenly), the strategies assigned and searched
 * over a stage's devices quickly (SearchOptions.quick: the search's starts,
 * a few of them lowered for their memory, no polish; with the memory
 * savings it switches on when a plan does not fit), and the plan priced:
 * price.c's total, which
 * counts the slowest stage M + P - 1 times for M micro-batches (the
 * bubble), the point-to-point sends each stage waits on and the slowest
 * stage's gradient reductions; and its slab, which holds a stage's own
 * parameters and the activations of the micro-batches it has in flight.
 * The cheapest plan that fits a device wins (none fits: the one needing the
 * least memory, which the search stage then reports), and the search stage
 * searches the chosen count in full. The micro-batch count
 * stays the train block's: the graph is one micro-batch, so another count
 * would train on another batch.
 *
 * Each trial starts from the same module: the context, the train block and
 * the flat graph's attributes (a shard's results get an out_strategy from
 * the search) are put back between trials. */
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
} Trial;

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
	fprintf(out, "# pipeline stages (\"auto\", %lld micro-batches a step, %lld ranks): each stage count's plan, "
	        "the cost a micro-batch's share of a step\n", (long long)micro, (long long)m->ctx.ranks);
	for (int i = 0; i < nt; i++) {
		if (!t[i].tried) {
			fprintf(out, "#   %lld stages: the strategies do not fit %lld devices a stage\n", (long long)t[i].stages,
			        (long long)(m->ctx.ranks / t[i].stages));
			continue;
		}
		double bubble = (double)(t[i].stages - 1) / pipeline_turns(t[i].stages, micro);
		fprintf(out, "#   %lld stage%s of %lld device%s: cost %.4g s, needs %.4g B a device (%s), bubble %.0f%%%s\n",
		        (long long)t[i].stages, t[i].stages > 1 ? "s" : "", (long long)(m->ctx.ranks / t[i].stages),
		        m->ctx.ranks / t[i].stages > 1 ? "s" : "", t[i].cost, t[i].memory,
		        t[i].fits ? "fits" : "does not fit", 100 * bubble, i == best ? ": chosen" : "");
	}
	const Trial *b = &t[best];
	if (b->stages == 1)
		fprintf(out, "# chose 1 stage: no split into stages costs less%s\n",
		        b->fits ? "" : " (and none fits a device)");
	else
		fprintf(out, "# chose %lld stages: %s; the stages split the operators by work, each boundary where the "
		        "fewest bytes cross:\n", (long long)b->stages,
		        b->fits ? "the cheapest plan that fits a device" : "no plan fits a device; the one needing the least memory");
}

bool search_stages(Module *m, const FlatGraph *f, Strategies *s, const SearchOptions *o, Diag *d)
{
	const Graph *g = f->g;
	Context ctx = m->ctx;
	Train train = *m->train;
	Attrs *attrs = xmalloc(sizeof(Attrs) * (size_t)(g->nnodes ? g->nnodes : 1));
	Lit **lits = xmalloc(sizeof(Lit *) * (size_t)(g->nnodes ? g->nnodes : 1));
	for (int i = 0; i < g->nnodes; i++)
		attrs[i] = g->nodes[i].a, lits[i] = g->nodes[i].attr_lit;
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
	for (int64_t p = 1; p <= ctx.ranks && p <= MAX_AUTO_STAGES && p <= g->nnodes; p++) {
		if (ctx.ranks % p)
			continue;
		m->ctx = ctx;
		*m->train = train;
		for (int i = 0; i < g->nnodes; i++)
			g->nodes[i].a = attrs[i], g->nodes[i].attr_lit = lits[i];
		m->ctx.stages = p;
		m->ctx.device_num = ctx.ranks / p;
		Trial *tr = &t[nt++];
		*tr = (Trial){.stages = p};
		Strategies st = {0};
		quiet.nerrors = 0;
		if (!assign_strategies(m, f, &st, &quiet))
			continue;
		tr->tried = true;
		tr->fits = search_priced(m, f, &st, &q, &quiet, &tr->cost, &tr->memory);
		if (best < 0 || (tr->fits && !t[best].fits) ||
		    (tr->fits == t[best].fits && (tr->fits ? tr->cost < t[best].cost : tr->memory < t[best].memory)))
			best = nt - 1;
	}
	fclose(quiet_out);
	free(sink);
	m->ctx = ctx;
	*m->train = train;
	for (int i = 0; i < g->nnodes; i++)
		g->nodes[i].a = attrs[i], g->nodes[i].attr_lit = lits[i];
	free(attrs);
	free(lits);
	if (best < 0)   /* no count took the strategies: one stage, whose errors the user sees */
		return assign_strategies(m, f, s, d);
	m->ctx.stages = t[best].stages;
	m->ctx.device_num = ctx.ranks / t[best].stages;
	bool ok = assign_strategies(m, f, s, d);
	if (ok && o->explain) {
		FILE *out = o->out ? o->out : stdout;
		explain(m, t, nt, best, out);
		if (t[best].stages > 1)
			explain_boundaries(f, s, t[best].stages, out);
	}
	return ok;
}
