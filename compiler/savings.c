/* savings.c: memory, when the searched plan does not fit a device.
 *
 * Requires a Search that ran (search_run.c). least_memory bounds what any
 * strategy needs; save_memory switches on optimizer parallelism and
 * recomputation, cheapest first, and searches again with each until a plan
 * fits (recompute_cost: what recomputation adds to a step);
 * report_memory says what would fit when none does; explain_savings is
 * --explain's account of what was switched on. A plan's slab is price.c's
 * slab_memory. */
#include "search_internal.h"

#include <stdlib.h>

/* The least any strategy can need a device: every parameter (with its
 * optimizer state) and every operator output split over all devices.
 * *batched: the part that grows with the batch, the outputs computed from an
 * input (all of them, as if each grew in proportion: so a batch that this
 * says cannot fit does not). */
double least_memory(const Search *x, const bool *recomputed, double *batched)
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
		mem += param_mem_factor(x, p) * elems * (double)dtype_bytes(t->dtype) / (double)x->n;
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
void report_memory(Search *x, double mem, const char *saved, const SearchOptions *o, Diag *d)
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

/* What recomputation adds to a step: the forward compute the train
 * block's recompute policy runs again, the recomputed operators' own cost
 * under the current strategies, and the collectives the backward pass sends
 * again (recomputed ones, ZeRO-3's second AllGathers), from the plan
 * slab_memory lowered last (call it first). */
double recompute_cost(const Search *x)
{
	const Graph *g = x->g;
	bool *marked = xcalloc((size_t)(g->nnodes ? g->nnodes : 1), sizeof *marked);
	recompute_policy(x->m, x->f, x->m->train->recompute, marked);
	double *stage = xcalloc((size_t)x->stages, sizeof(double)), c = 0;   /* each stage's, a micro-batch */
	for (int v = 0; v < g->nnodes; v++)
		for (int64_t s = 0; marked[v] && searchable(x, v) && s < x->stages; s++)   /* -1: on every stage */
			if (x->node_stage[v] == s || x->node_stage[v] < 0)
				stage[s] += cost_compute(x->cm, &g->nodes[v], x->st->node[v].od, x->st->node[v].split->split);
	for (int s = 0; s < x->stages; s++)   /* on a pipeline, the slowest stage's, as total() counts */
		c = stage[s] > c ? stage[s] : c;
	free(stage);
	free(marked);
	if (x->stages == 1)
		return c + x->slab_again;
	/* the collectives sent again taken as spread evenly over the stages */
	double m = (double)x->m->train->accumulate_steps;
	return (c + x->slab_again / (double)x->stages) * pipeline_turns(x->stages, (int64_t)m) / m;
}

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
const char *save_memory(Search *x, Module *m, const FlatGraph *f, Strategies *s, const SearchOptions *o,
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
void explain_savings(Search *x, const char *saved, FILE *out)
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
	Compilation c = search_lowering(x, STAGE_LOWER);
	const Lowered *l = c.low;
	/* a rank holds its own stage's parameters: each stage's sums, the largest stage's shown */
	double *whole_of = xcalloc((size_t)l->stages, sizeof(double)), *sliced_of = xcalloc((size_t)l->stages, sizeof(double));
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
		int s = l->values[p].stage > 0 ? l->values[p].stage : 0;
		whole_of[s] += bytes;
		sliced_of[s] += piece;
	}
	for (int s = 0; s < l->stages; s++)
		if (sliced_of[s] > sliced || (sliced_of[s] == sliced && whole_of[s] > whole))
			whole = whole_of[s], sliced = sliced_of[s];
	free(whole_of);
	free(sliced_of);
	lowered_free(c.low);   /* all the compilation made */
	char a[32], b[32];
	human_bytes(a, whole);
	human_bytes(b, sliced);
	fprintf(out, "# sliced over the ranks that sum their gradients: %d of %d parameters; parameters on the "
	        "largest rank %s -> %s (optimizer state and gradients alike)\n", nsliced, ntrained, a, b);
}
