/* stages.c: which pipeline stage runs each operator (docs/language.md,
 * Pipeline parallelism).
 *
 * Requires the graph flattened. With pipeline_stages P > 1 the ranks form P
 * groups of device_num each, and each operator runs on one group, its stage:
 * - an operator with pipeline_stage (its own, or its Call's: flatten.c) runs
 *   on that stage;
 * - one without runs on the latest stage of the operators whose results it
 *   reads, so a layer written without stages follows the layer before it;
 * - one that reads no operator's result (a computed constant; autocast's
 *   Cast of a parameter) runs on the earliest stage of its readers, so a
 *   constant is computed where it is used instead of sent there;
 * - an input or parameter lives on the earliest stage of its readers;
 *   a later stage that reads it gets it sent (lower.c).
 * With no pipeline_stage written anywhere, the stages split the graph's
 * operators, in order, into P runs of about equal work (split_evenly): a
 * boundary goes where the fewest bytes cross it, among the places within a
 * tenth of a stage's work of the even split (so between layers, where one
 * activation crosses, rather than inside one); or, where the search places
 * the stages (search_stages.c), as its split says: split_by_cost's, whose
 * slowest stage under the searched plan's seconds is the least of any.
 * Values flow from earlier stages to later ones: check_stages refuses an
 * operator that reads a value of a later stage. */
#include "shardc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The stage written on n (its own, or its Call's), -1: none. An inserted
 * operator (autocast's Casts) has none written, whatever its Attrs hold. */
static int written_stage(const Node *n)
{
	return n->a.present & ATTR_BIT(ATTR_PIPELINE_STAGE) ? (int)n->a.pipeline_stage : -1;
}

/* Operator i's work: its op-dim points (a multiply and an add each for a
 * product), or without a strategy its result's elements. */
static double node_work(const FlatGraph *f, const Strategies *st, int i)
{
	const Node *n = &f->g->nodes[i];
	double w = 1;
	if (st && st->node[i].has_dims) {
		const OpDims *od = st->node[i].od;
		for (int o = 0; o < od->nod; o++)
			w *= (double)od->size[o];
		return op_info[n->op].rule == R_MATMUL ? 2 * w : n->op == OP_FLASH_ATTENTION ? 4 * w : w;
	}
	const Type *t = &f->g->values[n->result].type;
	for (int d = 0; d < t->rank; d++)
		w *= (double)t->dims[d];
	return w;
}

/* A computed constant (Arange, CausalMask, RoPE's tables): no operand, and
 * every stage can compute its own copy. */
static bool constant_node(const Node *n)
{
	return n->nin == 0 && op_is_constant(n->op);
}

/* cross[i] (i in 0..nn): what crosses a cut before operator i, summed over
 * the computed values made before it and read at or after it: each value's
 * per_value, or without it its bytes. */
static double *crossing(const FlatGraph *f, const double *per_value)
{
	const Graph *g = f->g;
	int nn = g->nnodes;
	double *cross = xcalloc((size_t)nn + 2, sizeof(double));
	int *last = xmalloc(sizeof(int) * (size_t)(g->nvalues ? g->nvalues : 1));
	for (int v = 0; v < g->nvalues; v++)
		last[v] = -1;
	for (int i = 0; i < nn; i++)
		for (int k = 0; k < g->nodes[i].nin; k++)
			last[g->nodes[i].in[k]] = i;
	for (int v = g->nparams; v < g->nvalues; v++) {   /* made by operator d, last read by r: crosses cuts d+1 .. r */
		int d = g->values[v].node;
		if (d < 0 || last[v] <= d || constant_node(&g->nodes[d]))   /* a constant: computed on each stage */
			continue;
		double x = per_value ? per_value[v] : (double)dtype_bytes(g->values[v].type.dtype);
		for (int k = 0; !per_value && k < g->values[v].type.rank; k++)
			x *= (double)g->values[v].type.dims[k];
		cross[d + 1] += x;
		cross[last[v] + 1] -= x;
	}
	for (int i = 1; i <= nn; i++)
		cross[i] += cross[i - 1];
	free(last);
	return cross;
}

/* node_stage: the operators in order cut into `stages` runs of about equal
 * work, each cut where the fewest bytes of computed values cross it. */
static void split_evenly(const FlatGraph *f, const Strategies *st, int64_t stages, int *node_stage)
{
	int nn = f->g->nnodes;
	double *work = xcalloc((size_t)nn + 1, sizeof(double));   /* work[i]: of the operators before i */
	for (int i = 0; i < nn; i++)
		work[i + 1] = work[i] + node_work(f, st, i);
	double *cross = crossing(f, NULL);
	int from = 0;   /* the stage being filled starts at operator from */
	for (int64_t s = 1; s < stages; s++) {
		double target = work[nn] * (double)s / (double)stages, slack = work[nn] / (double)stages / 10;
		int best = -1;
		for (int i = from + 1; i < nn; i++) {
			if (work[i] < target - slack || work[i] > target + slack)
				continue;
			if (best < 0 || cross[i] < cross[best] ||
			    (cross[i] == cross[best] && fabs(work[i] - target) < fabs(work[best] - target)))
				best = i;
		}
		if (best < 0) {   /* one operator holds the target: the nearest place after the last cut */
			best = from + 1;
			while (best < nn - 1 && work[best + 1] <= target)
				best++;
		}
		for (int i = from; i < best && i < nn; i++)
			node_stage[i] = (int)s - 1;
		from = best < nn ? best : nn;
	}
	for (int i = from; i < nn; i++)
		node_stage[i] = (int)stages - 1;
	free(work);
	free(cross);
}

/* Whether the run of operators a..b-1 as a stage, its operators' seconds
 * and the sends across both its ends, keeps within `bound` (written so that
 * a sweep over b can keep the best a). */
static bool within(const double *sum, const double *cut, int a, int b, double bound)
{
	return a < b && sum[b] + cut[b] - bound <= sum[a] - cut[a];
}

/* Whether the operators split into `stages` nonempty runs each within
 * `bound`. ends (stages x (nn + 1)): ends[k][b], the operators before b
 * split into k + 1 such runs; one sweep a row, keeping the most of
 * sum[a] - cut[a] over the ends a of the row before. */
static bool fits_within(const double *sum, const double *cut, int nn, int64_t stages, double bound, bool *ends)
{
	for (int b = 0; b <= nn; b++)
		ends[b] = within(sum, cut, 0, b, bound);
	for (int64_t k = 1; k < stages; k++) {
		const bool *before = ends + (k - 1) * (nn + 1);
		bool *next = ends + k * (nn + 1);
		double most = -INFINITY;   /* of sum[a] - cut[a], a < b an end of the row before */
		for (int b = 0; b <= nn; b++) {
			next[b] = sum[b] + cut[b] - bound <= most;
			if (before[b])
				most = fmax(most, sum[b] - cut[b]);
		}
	}
	return ends[(stages - 1) * (nn + 1) + nn];
}

void split_by_cost(const FlatGraph *f, const double *seconds, const double *send, int64_t stages, int *node_stage)
{
	int nn = f->g->nnodes;
	double *sum = xcalloc((size_t)nn + 1, sizeof(double));   /* sum[i]: of the operators before i */
	for (int i = 0; i < nn; i++)
		sum[i + 1] = sum[i] + seconds[i];
	double *cut = crossing(f, send), most = 0;
	cut[0] = cut[nn] = 0;
	for (int i = 0; i <= nn; i++)
		most = cut[i] > most ? cut[i] : most;
	/* The least bound some split keeps every stage within (bisection: hi
	 * always fits; every split into nonempty runs fits the first). */
	bool *ends = xmalloc(sizeof(bool) * (size_t)stages * (size_t)(nn + 1));
	double lo = 0, hi = sum[nn] + 2 * most;
	for (int it = 0; it < 100 && hi - lo > 1e-9 * hi; it++) {
		double mid = (lo + hi) / 2;
		*(fits_within(sum, cut, nn, stages, mid, ends) ? &hi : &lo) = mid;
	}
	/* Of the splits within it, an even one: the stages placed from the last
	 * back, each ending where the one after starts and starting where the
	 * operators before it split into the stages before within the bound,
	 * near an equal share of the seconds left: at the fewest seconds sent
	 * within a tenth of a share of it, as split_evenly cuts. */
	fits_within(sum, cut, nn, stages, hi, ends);
	int *start = xmalloc(sizeof(int) * (size_t)(stages + 1));
	start[stages] = nn;
	for (int64_t s = stages - 1; s > 0; s--) {
		const bool *before = ends + (s - 1) * (nn + 1);
		int b = start[s + 1], best = -1;
		double target = sum[b] - sum[b] / (double)(s + 1), slack = sum[nn] / (double)stages / 10;
		for (int a = b - 1; a > 0; a--) {
			if (!before[a] || !within(sum, cut, a, b, hi))
				continue;
			bool near = fabs(sum[a] - target) <= slack, best_near = best >= 0 && fabs(sum[best] - target) <= slack;
			if (best < 0 || (near && !best_near) || (near && cut[a] < cut[best]) ||
			    (!near && !best_near && fabs(sum[a] - target) < fabs(sum[best] - target)))
				best = a;
		}
		if (best < 0)   /* fits_within's sweep and `within` compare the same sums */
			die("split_by_cost: no start for stage %lld within %g", (long long)s, hi);
		start[s] = best;   /* one exists: b ends s + 1 runs within the bound */
	}
	start[0] = 0;
	for (int64_t s = 0; s < stages; s++)
		for (int i = start[s]; i < start[s + 1]; i++)
			node_stage[i] = (int)s;
	free(ends);
	free(start);
	free(sum);
	free(cut);
}

bool stages_written(const FlatGraph *f)
{
	for (int i = 0; i < f->g->nnodes; i++)
		if (written_stage(&f->g->nodes[i]) >= 0)
			return true;
	return false;
}

void assign_stages(const FlatGraph *f, const Strategies *st, int64_t stages, int *node_stage, int *value_stage)
{
	const Graph *g = f->g;
	if (stages <= 1) {   /* one stage (stand_alone too): every operator on it, whatever pipeline_stage says */
		memset(node_stage, 0, sizeof(int) * (size_t)g->nnodes);
		memset(value_stage, 0, sizeof(int) * (size_t)g->nvalues);
		return;
	}
	int *given = xmalloc(sizeof(int) * (size_t)(g->nnodes ? g->nnodes : 1));   /* written, or the split's; -1 */
	bool written = false;
	for (int i = 0; i < g->nnodes; i++)
		written |= (given[i] = written_stage(&g->nodes[i])) >= 0;
	if (!written && st && st->split)   /* the split is the search's (search_stages.c) */
		memcpy(given, st->split, sizeof(int) * (size_t)g->nnodes);
	else if (!written && st)   /* the split is the compiler's: every operator's stage fixed */
		split_evenly(f, st, stages, given);
	int *want = xmalloc(sizeof(int) * (size_t)(g->nvalues ? g->nvalues : 1));   /* its readers' earliest */
	for (int v = 0; v < g->nvalues; v++)
		value_stage[v] = want[v] = -1;
	for (int i = 0; i < g->nnodes; i++) {   /* given, or the latest of its operands' (-1: none yet) */
		const Node *n = &g->nodes[i];
		int s = given[i];
		for (int k = 0; given[i] < 0 && k < n->nin; k++)
			s = value_stage[n->in[k]] > s ? value_stage[n->in[k]] : s;
		node_stage[i] = value_stage[n->result] = s;
	}
	for (int i = g->nnodes - 1; i >= 0; i--) {   /* the rest, and the inputs: their readers' earliest */
		const Node *n = &g->nodes[i];
		if (node_stage[i] < 0)
			node_stage[i] = value_stage[n->result] = want[n->result] >= 0 ? want[n->result] : 0;
		for (int k = 0; k < n->nin; k++) {
			int v = n->in[k];
			if (value_stage[v] < 0 || v < g->nparams)
				want[v] = want[v] < 0 || node_stage[i] < want[v] ? node_stage[i] : want[v];
		}
	}
	for (int v = 0; v < g->nparams; v++)
		value_stage[v] = want[v] >= 0 ? want[v] : 0;
	/* A computed constant read on several stages is computed on every stage's ranks (-1): its piece is a
	 * function of the rank's place in its stage, so each computes what a send would bring. */
	for (int v = 0; v < g->nvalues; v++)
		want[v] = -2;   /* the stage of v's readers; -1: more than one */
	for (int i = 0; i < g->nnodes; i++)
		for (int k = 0; k < g->nodes[i].nin; k++) {
			int v = g->nodes[i].in[k];
			want[v] = want[v] == -2 || want[v] == node_stage[i] ? node_stage[i] : -1;
		}
	for (int i = 0; i < g->nnodes; i++)
		if (constant_node(&g->nodes[i]) && want[g->nodes[i].result] == -1)
			node_stage[i] = value_stage[g->nodes[i].result] = -1;
	free(want);
	free(given);
}

/* Who gives operator i its stage, for a message: "%x's operator", or, when
 * it took its Call's pipeline_stage, "the Call %l1" (the Call of the module
 * named as the last part of the prefix flatten gave i's value: `l1` of
 * `%l1.a`), whose span *at then holds. */
static void stage_giver(const Module *m, const FlatGraph *f, int i, StrBuf *who, Span *at)
{
	const char *name = f->g->values[f->g->nodes[i].result].name, *dot = strrchr(name, '.'), *from = dot;
	while (from && from > name && from[-1] != '.')
		from--;
	for (int k = 0; dot && !(f->orig[i]->a.present & ATTR_BIT(ATTR_PIPELINE_STAGE)) && k < m->ngraphs; k++)
		for (int j = 0; j < m->graphs[k]->nnodes; j++) {
			const Node *c = &m->graphs[k]->nodes[j];
			const char *cn = m->graphs[k]->values[c->result].name;
			if (c->op == OP_CALL && (c->a.present & ATTR_BIT(ATTR_PIPELINE_STAGE)) &&
			    strlen(cn) == (size_t)(dot - from) && !strncmp(cn, from, (size_t)(dot - from))) {
				sb_printf(who, "the Call %%%s", cn);
				*at = c->span;
				return;
			}
		}
	sb_printf(who, "%%%s's operator", name);
}

bool check_stages(const Module *m, const FlatGraph *f, Diag *d)
{
	const Graph *g = f->g;
	if (m->ctx.stages == 1)
		return true;
	int *ns = xmalloc(sizeof(int) * (size_t)(g->nnodes ? g->nnodes : 1));
	int *vs = xmalloc(sizeof(int) * (size_t)(g->nvalues ? g->nvalues : 1));
	assign_stages(f, NULL, m->ctx.stages, ns, vs);
	bool ok = true;
	for (int i = 0; i < g->nnodes && ok; i++) {
		const Node *n = &g->nodes[i];
		for (int k = 0; k < n->nin && ok; k++) {
			int v = n->in[k];
			if (v < g->nparams || vs[v] <= ns[i])
				continue;
			StrBuf who = {0}, from = {0};   /* where each stage is written: the error points at the reader's */
			Span at = n->span, from_at;
			stage_giver(m, f, i, &who, &at);
			stage_giver(m, f, g->values[v].node, &from, &from_at);
			diag_error(d, m->src, at, "%%%s = %s runs on pipeline stage %d but reads %%%s, computed on stage %d: "
			           "values flow from earlier stages to later ones (give %s pipeline_stage %d or later, or %s an "
			           "earlier one)", g->values[n->result].name, op_info[n->op].name, ns[i], g->values[v].name,
			           vs[v], who.data, vs[v], from.data);
			sb_free(&who);
			sb_free(&from);
			ok = false;
		}
	}
	free(ns);
	free(vs);
	return ok;
}
