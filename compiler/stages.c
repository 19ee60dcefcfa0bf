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
 * Values flow from earlier stages to later ones: check_stages refuses an
 * operator that reads a value of a later stage. */
#include "shardc.h"

#include <stdlib.h>

/* The stage written on n (its own, or its Call's), -1: none. An inserted
 * operator (autocast's Casts) has none written, whatever its Attrs hold. */
static int written_stage(const Node *n)
{
	return n->a.present & ATTR_BIT(ATTR_PIPELINE_STAGE) ? (int)n->a.pipeline_stage : -1;
}

void assign_stages(const FlatGraph *f, int *node_stage, int *value_stage)
{
	const Graph *g = f->g;
	int *want = xmalloc(sizeof(int) * (size_t)(g->nvalues ? g->nvalues : 1));   /* its readers' earliest */
	for (int v = 0; v < g->nvalues; v++)
		value_stage[v] = want[v] = -1;
	for (int i = 0; i < g->nnodes; i++) {   /* given, or the latest of its operands' (-1: none yet) */
		const Node *n = &g->nodes[i];
		int s = written_stage(n);
		for (int k = 0; written_stage(n) < 0 && k < n->nin; k++)
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
	free(want);
}

bool check_stages(const Module *m, const FlatGraph *f, Diag *d)
{
	const Graph *g = f->g;
	if (m->ctx.stages == 1)
		return true;
	int *ns = xmalloc(sizeof(int) * (size_t)(g->nnodes ? g->nnodes : 1));
	int *vs = xmalloc(sizeof(int) * (size_t)(g->nvalues ? g->nvalues : 1));
	assign_stages(f, ns, vs);
	bool ok = true;
	for (int i = 0; i < g->nnodes && ok; i++) {
		const Node *n = &g->nodes[i];
		for (int k = 0; k < n->nin && ok; k++) {
			int v = n->in[k];
			if (v < g->nparams || vs[v] <= ns[i])
				continue;
			diag_error(d, m->src, n->span, "%%%s = %s runs on pipeline stage %d but reads %%%s, computed "
			           "on stage %d: values flow from earlier stages to later ones (give %%%s's operator "
			           "pipeline_stage %d or later, or %%%s's an earlier one)", g->values[n->result].name,
			           op_info[n->op].name, ns[i], g->values[v].name, vs[v], g->values[n->result].name, vs[v],
			           g->values[v].name);
			ok = false;
		}
	}
	free(ns);
	free(vs);
	return ok;
}
