/* rebatch.c: a graph written for the step's batch, run as M micro-batches
 * (micro_batches: "auto"; docs/language.md, Pipeline parallelism).
 *
 * Requires the flat graph as written. The batch is dim 0 of each input that
 * is not a parameter and has more than one row (as MindSpore's PipelineCell
 * slices every input's dim 0; an input of one row, a scale, is every
 * micro-batch's). Those dims are split M ways, and so is the target dim 0 of
 * each Reshape of a value computed from them (its dim 0 holds the batch: the
 * rows of (B, S, H) flattened to (B x S, H), or split back); then every type
 * is inferred again. The batch must then still be dim 0 of every value
 * computed from the inputs, 1/M of it, the other dims as written, or be
 * reduced away (the loss): a value where it moved (a Transpose of dim 0) or
 * that took it whole from elsewhere is an error at its operator, since the
 * micro-batches would not compute the step's batch's values. f->step_rows
 * keeps each split input's rows in the step, for the program, which gives
 * micro-batch k rows [k B / M, (k + 1) B / M) of each. */
#include "shardc.h"

#include <stdlib.h>

/* Whether `now` is `was` with the batch split `micro` ways, or reduced away. */
static bool split_or_reduced(const Type *was, const Type *now, int64_t micro)
{
	if (now->rank != was->rank)
		return false;
	for (int d = 0; d < now->rank; d++)
		if (now->dims[d] != was->dims[d] && (d > 0 || now->dims[0] * micro != was->dims[0]))
			return false;
	return true;
}

bool rebatch(Module *m, FlatGraph *f, int64_t micro, Diag *d)
{
	Graph *g = f->g;
	int nv = g->nvalues;
	bool ok = true;
	Type *was = xmalloc(sizeof(Type) * (size_t)(nv ? nv : 1));
	bool *batch = xcalloc((size_t)(nv ? nv : 1), sizeof(bool));   /* computed from the split inputs */
	for (int v = 0; v < nv; v++)
		was[v] = g->values[v].type;
	f->step_rows = arena_alloc(m->arena, sizeof(int64_t) * (size_t)(f->nentry ? f->nentry : 1));
	for (int v = 0; v < f->nentry; v++) {
		Type *t = &g->values[v].type;
		f->step_rows[v] = 0;
		if (t->is_param || t->rank < 1 || t->dims[0] == 1)
			continue;
		if (t->dims[0] % micro) {
			diag_error(d, m->src, g->values[v].span, "micro_batches \"auto\": input %%%s has %lld rows, which %lld "
			           "micro-batches do not split evenly", g->values[v].name, (long long)t->dims[0], (long long)micro);
			ok = false;
			continue;
		}
		f->step_rows[v] = t->dims[0];
		t->dims[0] /= micro;
		batch[v] = true;
	}
	for (int i = 0; ok && i < g->nnodes; i++) {
		Node *n = &g->nodes[i];
		for (int k = 0; k < n->nin; k++)
			batch[n->result] |= n->in[k] >= 0 && batch[n->in[k]];
		if (n->op != OP_RESHAPE || !batch[n->result] || n->a.nshape < 1 || n->a.shape[0] == -1)
			continue;
		if (n->a.shape[0] % micro) {
			diag_error(d, m->src, n->span, "micro_batches \"auto\": the target dim 0 of Reshape %%%s, %lld, holds "
			           "the batch, which %lld micro-batches do not split evenly", g->values[n->result].name,
			           (long long)n->a.shape[0], (long long)micro);
			ok = false;
		}
		n->a.shape[0] /= micro;
	}
	ok = ok && infer_graph(m, g, d, false);
	for (int i = 0; ok && i < g->nnodes; i++) {
		const Node *n = &g->nodes[i];
		const Value *v = &g->values[n->result];
		if (!batch[n->result] || split_or_reduced(&was[n->result], &v->type, micro))
			continue;
		StrBuf a = {0}, b = {0};
		ints_print(&a, v->type.dims, v->type.rank);
		ints_print(&b, was[n->result].dims, was[n->result].rank);
		diag_error(d, m->src, n->span, "micro_batches \"auto\": in %lld micro-batches %%%s is %s where the step's "
		           "batch makes it %s: the batch (each input's dim 0) must stay dim 0 of every value computed from "
		           "it, or be reduced away; give micro_batches a count, with the graph written for one micro-batch",
		           (long long)micro, v->name, a.data, b.data);
		sb_free(&a);
		sb_free(&b);
		ok = false;
	}
	free(was);
	free(batch);
	return ok;
}
