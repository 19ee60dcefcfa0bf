/* flatten.c: the entry graph with every Call inlined.
 *
 * Requires shapes inferred. The parallel passes work on one straight-line
 * graph: each called graph's nodes are copied in at the Call, their values
 * renamed `<call result>.<name>` (names may hold dots) so that every name
 * stays unique and says where it came from, and the Call's result becomes the
 * callee's returned value. A Depend (MindSpore's: its value, once what it
 * waits for is computed) becomes its value: the program is straight-line
 * and computes every operator, so the order it asks for holds. So that names do not grow with the depth of the
 * calls (a chain of 20,000 graphs would make names of 40,000 bytes, and the
 * pass quadratic), a Call nested PREFIX_DEPTH deep starts the prefix over as
 * `<callee>.<n>`, n counting the Calls inlined so far. The copies keep their original attributes and
 * spans, and remember the node they copy and the shard of the Call that
 * brought them in; a copy without a pipeline_stage of its own takes the
 * innermost enclosing Call's that has one. The entry graph's parameters come first, in order; then
 * one input for each number written as an operand (Value.literal) in each
 * inlined copy, in the order the copy meets them, named as the copy names
 * its values: a constant, which no file feeds. So step_parallel_begin, which
 * writes each number where it was, reads back to the same flat graph. */
#include "shardc.h"

#include <stdlib.h>
#include <string.h>

enum { PREFIX_DEPTH = 8 };   /* call results in a prefix before it starts over */

/* One graph being copied. The copy goes depth first with an explicit stack,
 * so that a chain of many thousand Calls does not overflow the C stack. */
typedef struct {
	const Graph *src;
	int *id;                 /* (src->nvalues) the flat value of each of src's values */
	int *rets;               /* (src->nret) where its returned values go */
	const char *prefix;      /* NULL in the entry */
	int depth;               /* call results in prefix */
	const ShardSpec *shard;  /* of the Call that brought it in, or an enclosing one */
	int64_t stage;           /* pipeline_stage of the innermost Call that gives one; -1: none */
	int next;                /* the next node to copy */
} Frame;

typedef struct {
	Module *m;
	FlatGraph *f;
	int next_literal;        /* the next flat input reserved for a number */
	int cap_values, cap_nodes, cap_orig;
	int64_t ncalls;          /* Calls inlined so far */
	Frame *stack;
	int nstack, cap_stack;
} Flattener;

static int add_value(Flattener *x, const char *name, const Type *t, Span span)
{
	Graph *g = x->f->g;
	Value *v = ARENA_PUSH(x->m->arena, g->values, g->nvalues, x->cap_values);
	*v = (Value){.name = name, .span = span, .type = *t, .node = -1};
	return g->nvalues - 1;
}

/* The flat input for the number that module value v of the graph on top of
 * the stack is: the next one reserved, named as the copy names its values. */
static int take_literal(Flattener *x, int v)
{
	Frame *fr = &x->stack[x->nstack - 1];
	const Value *lv = &fr->src->values[v];
	Value *fv = &x->f->g->values[x->next_literal];
	*fv = (Value){.name = lv->name, .span = lv->span, .type = lv->type, .node = -1, .literal = lv->literal};
	if (fr->prefix) {
		StrBuf b = {0};
		sb_printf(&b, "%s.%s", fr->prefix, lv->name);
		fv->name = arena_strdup(x->m->arena, b.data);
		sb_free(&b);
	}
	fr->id[v] = x->next_literal;
	return x->next_literal++;
}

/* Starts copying graph `src`: arg[k] is the flat value of its parameter k. */
static void push_graph(Flattener *x, const Graph *src, const int *arg, int *rets, const char *prefix, int depth,
                       const ShardSpec *shard, int64_t stage)
{
	if (x->nstack == x->cap_stack) {
		x->cap_stack = x->cap_stack ? 2 * x->cap_stack : 16;
		x->stack = xrealloc(x->stack, sizeof *x->stack * (size_t)x->cap_stack);
	}
	int *id = arena_alloc(x->m->arena, sizeof(int) * (size_t)src->nvalues);
	for (int k = 0; k < src->nparams; k++)
		id[k] = arg[k];
	x->stack[x->nstack++] = (Frame){src, id, rets, prefix, depth, shard, stage, 0};
}

/* Copies the next node of the graph on top of the stack, or, when none is
 * left, hands its returned values to the caller. */
static void copy_step(Flattener *x)
{
	Arena *a = x->m->arena;
	Frame *fr = &x->stack[x->nstack - 1];
	const Graph *src = fr->src;
	int *id = fr->id;
	if (fr->next == src->nnodes) {
		for (int k = 0; k < src->nret; k++)
			fr->rets[k] = id[src->ret[k]];
		x->nstack--;
		return;
	}
	const Node *n = &src->nodes[fr->next++];
	for (int k = 0; k < n->nin; k++)
		if (src->values[n->in[k]].literal)
			take_literal(x, n->in[k]);
	const Value *res = &src->values[n->result];
	const char *name = res->name;
	if (fr->prefix) {
		StrBuf b = {0};
		sb_printf(&b, "%s.%s", fr->prefix, res->name);
		name = arena_strdup(a, b.data);
		sb_free(&b);
	}
	if (n->op == OP_CALL) {
		int *args = arena_alloc(a, sizeof(int) * (size_t)(n->nin ? n->nin : 1));
		for (int k = 0; k < n->nin; k++)
			args[k] = id[n->in[k]];
		int depth = fr->depth + 1;
		x->ncalls++;
		if (depth >= PREFIX_DEPTH) {
			StrBuf b = {0};
			sb_printf(&b, "%s.%lld", n->a.callee->name, (long long)x->ncalls);
			name = arena_strdup(a, b.data);
			sb_free(&b);
			depth = 1;
		}
		push_graph(x, n->a.callee, args, &id[n->result], name, depth, n->a.shard ? n->a.shard : fr->shard,
		           n->a.present & ATTR_BIT(ATTR_PIPELINE_STAGE) ? n->a.pipeline_stage : fr->stage);
		return;
	}
	if (n->op == OP_DEPEND) {   /* its value; what it waits for is computed anyway (no pass drops an operator) */
		id[n->result] = id[n->in[0]];
		return;
	}
	Graph *g = x->f->g;
	Node *c = ARENA_PUSH(a, g->nodes, g->nnodes, x->cap_nodes);
	*c = *n;
	if (!(c->a.present & ATTR_BIT(ATTR_PIPELINE_STAGE)) && fr->stage >= 0) {   /* the Call's stage, as written on the copy */
		c->a.pipeline_stage = fr->stage;
		c->a.present |= ATTR_BIT(ATTR_PIPELINE_STAGE);
	}
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
	x->f->shard[at] = fr->shard;
}

FlatGraph *flatten(Module *m)
{
	Arena *a = m->arena;
	const Graph *entry = module_entry(m);
	FlatGraph *f = arena_alloc(a, sizeof *f);
	f->g = arena_alloc(a, sizeof *f->g);
	Flattener x = {.m = m, .f = f};
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
	f->nentry = entry->nparams;
	x.next_literal = g->nvalues;
	for (int64_t k = 0; k < entry->nliterals; k++)   /* reserved: take_literal fills them in order */
		add_value(&x, NULL, &(Type){.rank = 0}, entry->span);
	g->nparams = g->nvalues;
	g->nret = entry->nret;
	g->ret = arena_alloc(a, sizeof(int) * (size_t)(entry->nret ? entry->nret : 1));
	push_graph(&x, entry, arg, g->ret, NULL, 0, NULL, -1);
	f->of_entry = x.stack[0].id;
	while (x.nstack)
		copy_step(&x);
	if (x.next_literal != g->nparams)
		die("%d numbers reserved, %d met", g->nparams - f->nentry, x.next_literal - f->nentry);
	free(x.stack);
	return f;
}
