/* flatten.c: the entry graph with every Call inlined.
 *
 * Requires shapes inferred. The parallel passes work on one straight-line
 * graph: each called graph's nodes are copied in at the Call, their values
 * renamed `<call result>.<name>` (names may hold dots) so that every name
 * stays unique and says where it came from, and the Call's result becomes the
 * callee's returned value. The copies keep their original attributes and
 * spans, and remember the node they copy and the shard of the Call that
 * brought them in. The entry graph's parameters come first, in order. */
#include "shardc.h"

#include <string.h>

typedef struct {
	Module *m;
	FlatGraph *f;
	int cap_values, cap_nodes, cap_orig;
} Flattener;

static int add_value(Flattener *x, const char *name, const Type *t, Span span)
{
	Graph *g = x->f->g;
	Value *v = ARENA_PUSH(x->m->arena, g->values, g->nvalues, x->cap_values);
	*v = (Value){.name = name, .span = span, .type = *t, .node = -1};
	return g->nvalues - 1;
}

/* Copies graph `src`'s nodes; arg[k] is the flat value of src's parameter k.
 * rets[k] becomes the flat value of src's k-th returned value. */
static void copy_graph(Flattener *x, const Graph *src, const int *arg, const char *prefix, const ShardSpec *shard,
                       int *rets, int **ids)
{
	Arena *a = x->m->arena;
	int *id = arena_alloc(a, sizeof(int) * (size_t)src->nvalues);
	if (ids)
		*ids = id;
	for (int k = 0; k < src->nparams; k++)
		id[k] = arg[k];
	for (int i = 0; i < src->nnodes; i++) {
		const Node *n = &src->nodes[i];
		const Value *res = &src->values[n->result];
		const char *name = res->name;
		if (prefix) {
			StrBuf b = {0};
			sb_printf(&b, "%s.%s", prefix, res->name);
			name = arena_strdup(a, b.data);
			sb_free(&b);
		}
		if (n->op == OP_CALL) {
			int *cargs = arena_alloc(a, sizeof(int) * (size_t)(n->nin ? n->nin : 1));
			for (int k = 0; k < n->nin; k++)
				cargs[k] = id[n->in[k]];
			int r;
			copy_graph(x, n->a.callee, cargs, name, n->a.shard ? n->a.shard : shard, &r, NULL);
			id[n->result] = r;
			continue;
		}
		Graph *g = x->f->g;
		Node *c = ARENA_PUSH(a, g->nodes, g->nnodes, x->cap_nodes);
		*c = *n;
		c->in = arena_alloc(a, sizeof(int) * (size_t)(n->nin ? n->nin : 1));
		for (int k = 0; k < n->nin; k++)
			c->in[k] = id[n->in[k]];
		c->result = add_value(x, name, &res->type, res->span);
		g->values[c->result].node = g->nnodes - 1;
		id[n->result] = c->result;
		int at = x->f->g->nnodes - 1;
		if (at >= x->cap_orig) {
			int cap = x->cap_orig ? 2 * x->cap_orig : 64;
			x->f->orig = arena_grow(a, x->f->orig, sizeof(const Node *) * (size_t)x->cap_orig,
			                        sizeof(const Node *) * (size_t)cap);
			x->f->shard = arena_grow(a, x->f->shard, sizeof(const ShardSpec *) * (size_t)x->cap_orig,
			                         sizeof(const ShardSpec *) * (size_t)cap);
			x->cap_orig = cap;
		}
		x->f->orig[at] = n;
		x->f->shard[at] = shard;
	}
	for (int k = 0; k < src->nret; k++)
		rets[k] = id[src->ret[k]];
}

FlatGraph *flatten(Module *m)
{
	Arena *a = m->arena;
	const Graph *entry = module_entry(m);
	FlatGraph *f = arena_alloc(a, sizeof *f);
	f->g = arena_alloc(a, sizeof *f->g);
	Flattener x = {m, f, 0, 0, 0};
	Graph *g = f->g;
	g->name = entry->name;
	g->span = entry->span;
	g->name_span = entry->name_span;
	int *arg = arena_alloc(a, sizeof(int) * (size_t)(entry->nparams ? entry->nparams : 1));
	for (int k = 0; k < entry->nparams; k++) {
		const Value *v = &entry->values[k];
		arg[k] = add_value(&x, v->name, &v->type, v->span);
		g->values[arg[k]].init = v->init;
	}
	g->nparams = entry->nparams;
	g->nret = entry->nret;
	g->ret = arena_alloc(a, sizeof(int) * (size_t)(entry->nret ? entry->nret : 1));
	copy_graph(&x, entry, arg, NULL, NULL, g->ret, &f->of_entry);
	return f;
}
