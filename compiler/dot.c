/* dot.c: --dot FILE, the graph after strategy inference as Graphviz DOT.
 *
 * Requires a Lowered program. One node per flat operator, labelled
 *
 *   %1 = MatMul
 *   in_strategy ((2, 4), (4, 1))
 *   compute 0.164 us, comm 0.42 us
 *
 * (the cost model's figures, cost.c, in microseconds: compute is the
 * forward slice's work; comm the redistributions of the operator's inputs
 * and its out_strategy delivery), one box per input and parameter showing
 * where it lives (layout_print's form) and its bytes a rank, and a `return`
 * node. Each edge is labelled with the plan redist_plan gives from the
 * producer's layout to the consumer's (`AllReduce + Slice`), the bytes every
 * rank sends and the plan's seconds (cost_redist); an edge whose value was
 * already redistributed to the same layout for an earlier consumer reads
 * `shared` (lowering redistributes a value once per layout) and counts no
 * bytes. Edges are drawn 1 + 4 x bytes / (the heaviest edge's bytes) wide,
 * grey when they send nothing, from orange to red as they get heavier.
 * The graph's label gives the whole assignment's cost (strategies_cost: what
 * the search minimizes, the backward pass included with a train block) and
 * comm_bytes. With pipeline stages each stage is a cluster box (its
 * operators, and the inputs and parameters that live on it), and an edge
 * from another stage says so: `SendRecv from stage s` and the slice each
 * rank sends. Output depends only on the model and the cluster. */
#include "cost.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
	int from_node;           /* DOT node id: producer node, or -1 - parameter */
	const TensorLayout *from, *to;
	int to_node;             /* consuming node; nnodes: return */
	int value;               /* flat value carried */
	int nsteps;
	uint8_t step[MAX_STEPS]; /* (nsteps) the plan's StepKinds */
	int64_t bytes;           /* sent by every rank */
	double seconds;
	int shared_with;         /* the earlier edge whose identical redistribution this one reuses, -1 none */
	int next;                /* the previous edge from the same value, -1 none */
} Edge;

static const char *step_name(StepKind k)
{
	switch (k) {
	case STEP_ALL_REDUCE: return "AllReduce";
	case STEP_REDUCE_SCATTER: return "ReduceScatter";
	case STEP_ALL_GATHER: return "AllGather";
	case STEP_ALL_TO_ALL: return "AllToAll";
	case STEP_SLICE: return "Slice";
	}
	return "";
}

/* s inside a DOT string: quotes escaped (labels use \n for line breaks). */
static void put_escaped(StrBuf *b, const char *s)
{
	for (; *s; s++) {
		if (*s == '"')
			sb_putc(b, '\\');
		sb_putc(b, *s);
	}
}

static void put_us(StrBuf *b, double seconds)
{
	sb_printf(b, "%.3g us", seconds * 1e6);
}

/* Where the value lies as its consumers take it: a parameter's home, an
 * operator's output (delivered by its out_strategy when it has one). */
static const TensorLayout *value_layout(const Lowered *l, int value)
{
	const Graph *g = l->flat->g;
	if (value < g->nparams)
		return &l->home[value];
	int u = g->values[value].node;
	const NodeStrategy *ns = &l->st->node[u];
	return ns->has_out_strategy ? ns->delivered : &l->node_out[u];
}

static void put_node_id(StrBuf *b, int id)
{
	if (id < 0)
		sb_printf(b, "p%d", -1 - id);
	else
		sb_printf(b, "n%d", id);
}

static void put_strategy(StrBuf *b, const Lowered *l, int v)
{
	const Node *nd = &l->flat->g->nodes[v];
	const NodeStrategy *ns = &l->st->node[v];
	sb_puts(b, "in_strategy (");
	for (int k = 0; k < nd->nin; k++) {
		int64_t split[MAX_DIMS];
		int rank = op_in_split(ns->od, ns->split, k, split);
		if (k)
			sb_puts(b, ", ");
		ints_print(b, split, rank);
	}
	sb_puts(b, nd->nin == 1 ? ",)" : ")");
	if (!ns->split->tuple)
		sb_puts(b, " (a Layout)");
	if (ns->user)
		sb_puts(b, " (user)");
}

char *dot_graph(const Lowered *l, const Cluster *c)
{
	const Module *m = l->m;
	const Graph *g = l->flat->g;
	CostModel *cm = cost_new(c, l->device_num, m->train != NULL);
	StrBuf b = {0};
	char buf[32];

	/* The edges, in graph order, with their plans. */
	int nedges = 0;
	for (int v = 0; v < g->nnodes; v++)
		nedges += g->nodes[v].nin;
	nedges += g->nret;
	Edge *e = xcalloc((size_t)(nedges ? nedges : 1), sizeof *e);
	int *last = xmalloc(sizeof(int) * (size_t)(g->nvalues ? g->nvalues : 1));
	for (int i = 0; i < g->nvalues; i++)
		last[i] = -1;
	double *comm = xcalloc((size_t)(g->nnodes ? g->nnodes : 1), sizeof *comm);
	int64_t max_bytes = 0;
	RedistPlan *plan = xmalloc(sizeof *plan);   /* 40 KB: one, reused */
	int stages = (int)l->stages;
	const int *node_stage = l->node_stage, *value_stage = l->value_stage;
	StrBuf *in_stage = NULL;   /* with stages: each stage's boxes, drawn as a cluster */
	if (stages > 1)
		in_stage = xcalloc((size_t)stages, sizeof *in_stage);
	int ne = 0;
	for (int v = 0; v <= g->nnodes; v++) {
		bool ret = v == g->nnodes;
		const Node *nd = ret ? NULL : &g->nodes[v];
		int nin = ret ? g->nret : nd->nin;
		for (int k = 0; k < nin; k++) {
			int value = ret ? g->ret[k] : nd->in[k];
			Edge *ed = &e[ne];
			ed->value = value;
			ed->to_node = v;
			ed->from_node = value < g->nparams ? -1 - value : g->values[value].node;
			ed->from = value_layout(l, value);
			if (ret)
				ed->to = &l->values[l->rets[k]].layout;
			else if (l->st->node[v].has_dims || nd->op == OP_RESHAPE)
				ed->to = &l->node_in[v][k];
			else
				ed->to = ed->from;   /* a collective as written in a one-device model */
			ed->shared_with = -1;
			for (int i = last[value]; i >= 0; i = e[i].next)
				if (layout_equal(e[i].to, ed->to) && e[i].nsteps > 0) {
					ed->shared_with = i;
					break;
				}
			ed->next = last[value];
			last[value] = ne;
			const int64_t *dims = g->values[value].type.dims;
			int64_t eb = dtype_bytes(g->values[value].type.dtype);
			if (ed->shared_with < 0) {
				cost_plan(cm, ed->from, ed->to, dims, eb, plan);
				ed->nsteps = plan->n;
				for (int i = 0; i < plan->n; i++)
					ed->step[i] = (uint8_t)plan->step[i].kind;
				ed->seconds = cost_redist(cm, ed->from, ed->to, dims, eb, &ed->bytes);
				if (!ret)
					comm[v] += ed->seconds;
				if (ed->bytes > max_bytes)
					max_bytes = ed->bytes;
			}
			ne++;
		}
	}

	sb_puts(&b, "digraph \"");
	put_escaped(&b, g->name);
	sb_puts(&b, "\" {\n\tgraph [rankdir=TB, fontname=\"Helvetica\", labelloc=t, label=\"@");
	put_escaped(&b, g->name);
	sb_printf(&b, ": %s, %lld devices", parallel_mode_name(m->ctx.parallel_mode), (long long)l->device_num);
	if (m->ctx.parallel_mode == PM_AUTO)
		sb_printf(&b, ", %s", search_mode_name(m->ctx.search_mode));
	sb_puts(&b, "\\ncost model total ");
	put_us(&b, strategies_cost(m, l->flat, l->st, c));
	sb_printf(&b, "%s, sends %s a rank%s\"];\n", m->train ? " (forward and backward)" : "",
	          human_bytes(buf, (double)l->comm_bytes), m->train ? " (one training step)" : "");
	sb_puts(&b, "\tnode [fontname=\"Helvetica\", fontsize=10];\n\tedge [fontname=\"Helvetica\", fontsize=9];\n");

	for (int p = 0; p < g->nparams; p++) {
		const Value *pv = &g->values[p];
		StrBuf lb = {0};
		if (pv->literal)   /* a number written as an operand */
			sb_printf(&lb, "%s: ", pv->literal->s);
		else
			sb_printf(&lb, "%%%s: ", pv->name);
		type_print(&lb, &pv->type);
		sb_puts(&lb, "\\n");
		layout_print(&lb, &l->home[p]);
		sb_printf(&lb, "\\n%s a rank",
		          human_bytes(buf, (double)cost_slice_bytes(&l->home[p], pv->type.dims, dtype_bytes(pv->type.dtype))));
		StrBuf *into = stages > 1 ? &in_stage[value_stage[p]] : &b;
		sb_printf(into, "%sp%d [shape=box, style=\"rounded,filled\", fillcolor=\"%s\", label=\"",
		          stages > 1 ? "\t\t" : "\t", p, pv->type.is_param ? "lightyellow" : "lightblue");
		put_escaped(into, lb.data);
		sb_puts(into, "\"];\n");
		sb_free(&lb);
	}
	for (int v = 0; v < g->nnodes; v++) {
		const Node *nd = &g->nodes[v];
		const NodeStrategy *ns = &l->st->node[v];
		const Value *res = &g->values[nd->result];
		StrBuf lb = {0};
		sb_printf(&lb, "%%%s = %s\\n", res->name, op_info[nd->op].name);
		double compute = 0;
		if (ns->has_dims) {
			put_strategy(&lb, l, v);
			compute = cost_compute(cm, nd, ns->od, ns->split->split);
			comm[v] += cost_statistics(cm, ns->od, ns->split, dtype_bytes(g->values[nd->in[0]].type.dtype));
			if (ns->has_out_strategy)
				comm[v] += cost_redist(cm, &l->node_out[v], ns->delivered, res->type.dims,
				                       dtype_bytes(res->type.dtype), NULL);
		} else
			sb_puts(&lb, nd->op == OP_RESHAPE ? "carries its input's layout" : "as written");
		sb_puts(&lb, "\\nout ");
		layout_print(&lb, value_layout(l, nd->result));
		sb_puts(&lb, "\\ncompute ");
		put_us(&lb, compute);
		sb_puts(&lb, ", comm ");
		put_us(&lb, comm[v]);
		bool every = stages > 1 && node_stage[v] < 0;   /* a constant every stage computes: outside the boxes */
		StrBuf *into = stages > 1 && !every ? &in_stage[node_stage[v]] : &b;
		if (every)
			sb_puts(&lb, "\non every stage");
		sb_printf(into, "%sn%d [shape=%s, label=\"", stages > 1 && !every ? "\t\t" : "\t", v,
		          ns->has_dims ? "ellipse" : "box");
		put_escaped(into, lb.data);
		sb_puts(into, "\"];\n");
		sb_free(&lb);
	}
	for (int s = 0; s < stages && stages > 1; s++) {
		int64_t per = l->device_num;
		sb_printf(&b, "\tsubgraph cluster_stage%d {\n\t\tlabel=\"pipeline stage %d: ranks %lld-%lld\";\n"
		          "\t\tstyle=dashed;\n", s, s, (long long)(s * per), (long long)((s + 1) * per - 1));
		sb_puts(&b, in_stage[s].data ? in_stage[s].data : "");
		sb_puts(&b, "\t}\n");
		sb_free(&in_stage[s]);
	}
	sb_puts(&b, "\treturn [shape=doublecircle, label=\"return\"];\n");

	for (int i = 0; i < ne; i++) {
		const Edge *ed = &e[i];
		StrBuf lb = {0};
		int64_t bytes = ed->shared_with < 0 ? ed->bytes : 0;
		int from_stage = stages > 1 ? value_stage[ed->value] : 0;
		if (stages > 1 && ed->to_node < g->nnodes && from_stage >= 0 && from_stage != node_stage[ed->to_node]) {
			bool sent = false;   /* once a value and stage: to an earlier reader on the same stage */
			for (int j = ed->next; j >= 0 && !sent; j = e[j].next)
				sent = e[j].to_node < g->nnodes && node_stage[e[j].to_node] == node_stage[ed->to_node];
			const Value *val = &g->values[ed->value];
			if (sent)
				sb_printf(&lb, "from stage %d, sent once\n", from_stage);
			else
				sb_printf(&lb, "SendRecv from stage %d: %s a rank\n", from_stage, human_bytes(buf,
				          (double)cost_slice_bytes(ed->from, val->type.dims, dtype_bytes(val->type.dtype))));
		}
		if (ed->shared_with >= 0) {
			int w = e[ed->shared_with].to_node;
			sb_puts(&lb, "shared with ");
			if (w == g->nnodes)
				sb_puts(&lb, "return");
			else
				sb_printf(&lb, "%%%s", g->values[g->nodes[w].result].name);
		} else if (ed->nsteps > 0) {
			for (int k = 0; k < ed->nsteps; k++)
				sb_printf(&lb, "%s%s", k ? " + " : "", step_name((StepKind)ed->step[k]));
			if (bytes > 0) {
				sb_printf(&lb, " %s\\n", human_bytes(buf, (double)bytes));
				put_us(&lb, ed->seconds);
			}
		}
		double frac = max_bytes > 0 ? (double)bytes / (double)max_bytes : 0;
		sb_puts(&b, "\t");
		put_node_id(&b, ed->from_node);
		sb_puts(&b, " -> ");
		if (ed->to_node == g->nnodes)
			sb_puts(&b, "return");
		else
			put_node_id(&b, ed->to_node);
		sb_printf(&b, " [penwidth=%.2f, color=", 1 + 4 * frac);
		if (bytes > 0)
			sb_printf(&b, "\"%.3f 1.000 0.900\"", 0.1 * (1 - frac));
		else
			sb_puts(&b, "gray40");
		if (lb.len) {
			sb_puts(&b, ", label=\"");
			put_escaped(&b, lb.data);
			sb_puts(&b, "\"");
		}
		sb_puts(&b, "];\n");
		sb_free(&lb);
	}
	sb_puts(&b, "}\n");
	free(plan);
	free(in_stage);
	free(e);
	free(last);
	free(comm);
	cost_free(cm);
	return b.data;
}
