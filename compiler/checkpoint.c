/* checkpoint.c: which forward operators the backward pass recomputes under a
 * policy (docs/language.md, Training: recompute).
 *
 * Requires the graph flattened. Two policies, both on the flat graph, so
 * they see through Calls:
 *
 * - RECOMPUTE_LAYERS (the train block's `recompute: true`, MindSpore's
 *   Cell.recompute() on every layer, PyTorch's checkpoint per block): the
 *   kept values are the graph's cut points, the values every path from the
 *   inputs to the loss passes through (a transformer's residual sums, one or
 *   two a layer); every other operator computed from the inputs is
 *   recomputed, so the backward pass rebuilds one segment between two cut
 *   points at a time, from the cut point before it. In topological order a
 *   node is a cut point when no value computed earlier is read after it.
 * - RECOMPUTE_SELECTIVE (`recompute: "selective"`, Megatron's selective
 *   activation recomputation): an operator whose result outweighs its
 *   inputs together, such as attention's Q K^T of (batch, heads, seq, seq)
 *   from two (batch, heads, seq, head dim), and the cheap operators that read
 *   such a result (scale, mask, Softmax, Casts, elementwise): the big
 *   products of few FLOPs an element, rebuilt from kept inputs.
 *
 * Values returned or used as the loss, parameters, inputs and what is
 * computed from parameters alone are always kept. */
#include "shardc.h"

#include <stdlib.h>

static int64_t graph_value_bytes(const Graph *g, int v)
{
	const Type *t = &g->values[v].type;
	int64_t n = dtype_bytes(t->dtype);
	for (int d = 0; d < t->rank; d++)
		n *= t->dims[d];
	return n;
}

/* Operators that cost a few FLOPs an element of their result. */
static bool cheap(OpKind op)
{
	RuleClass r = op_info[op].rule;
	return r == R_ELEMWISE || r == R_BROADCAST || op == OP_SOFTMAX || op == OP_LOG_SOFTMAX || op == OP_CAST;
}

void recompute_policy(const Module *m, const FlatGraph *f, RecomputePolicy policy, bool *marked)
{
	const Graph *g = f->g;
	int nv = g->nvalues, nn = g->nnodes;
	for (int i = 0; i < nn; i++)
		marked[i] = false;
	if (policy == RECOMPUTE_NONE || !nn)
		return;
	bool *data = xcalloc((size_t)nv, sizeof *data);       /* computed from an input */
	bool *kept = xcalloc((size_t)nv, sizeof *kept);       /* returned, or the loss */
	int *node_of = xmalloc(sizeof(int) * (size_t)nv);     /* defining node, -1 for parameters */
	int *last = xmalloc(sizeof(int) * (size_t)nv);        /* last reading node */
	for (int v = 0; v < nv; v++) {
		node_of[v] = last[v] = -1;
		data[v] = v < g->nparams && !g->values[v].type.is_param && !g->values[v].literal;   /* a number is no data */
	}
	for (int k = 0; k < g->nret; k++)
		kept[g->ret[k]] = true;
	if (m->train)
		kept[f->of_entry[m->train->loss]] = true;
	for (int i = 0; i < nn; i++) {
		const Node *n = &g->nodes[i];
		node_of[n->result] = i;
		for (int k = 0; k < n->nin; k++) {
			data[n->result] |= data[n->in[k]];
			last[n->in[k]] = i;
		}
	}
	if (policy == RECOMPUTE_LAYERS) {
		int reach = -1;   /* the last reader of any value computed from the inputs so far */
		for (int i = 0; i < nn; i++) {
			int r = g->nodes[i].result;
			if (!data[r])
				continue;
			bool cut = reach <= i;
			marked[i] = !cut && !kept[r];
			if (last[r] > reach)
				reach = last[r];
		}
	} else {
		for (int i = 0; i < nn; i++) {
			const Node *n = &g->nodes[i];
			if (!data[n->result] || kept[n->result])
				continue;
			int64_t in = 0;
			bool follows = false;
			for (int k = 0; k < n->nin; k++) {
				in += graph_value_bytes(g, n->in[k]);
				follows |= node_of[n->in[k]] >= 0 && marked[node_of[n->in[k]]];
			}
			marked[i] = (n->op == OP_BATCH_MATMUL && graph_value_bytes(g, n->result) > in) || (follows && cheap(n->op));
		}
	}
	free(data);
	free(kept);
	free(node_of);
	free(last);
}
