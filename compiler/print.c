/* print.c: a module as canonical IR text.
 *
 * Order: context (every key, effective values), layouts, graphs in file order,
 * train. Comments are dropped and spacing is fixed, so printing what this
 * prints gives the same text again; a number operand keeps the text it was
 * written with. */
#include "shardc.h"

void print_context(StrBuf *b, const Module *m)
{
	const Context *c = &m->ctx;
	sb_printf(b, "context {\n  device_num: %lld,\n  parallel_mode: \"%s\",\n  search_mode: \"%s\",\n  dataset_strategy: ",
	          (long long)c->ranks, parallel_mode_name(c->parallel_mode), search_mode_name(c->search_mode));
	if (c->dataset_mode == DS_TUPLE)
		lit_print(b, c->dataset_tuple);
	else
		sb_puts(b, c->dataset_mode == DS_FULL_BATCH ? "\"full_batch\"" : "\"data_parallel\"");
	sb_printf(b, ",\n  seed: %lld", (long long)c->seed);
	if (c->parallel_optimizer)
		sb_printf(b, ",\n  enable_parallel_optimizer: true,\n  optimizer_level: \"level%d\",\n  "
		          "optimizer_weight_shard_size: %lld", c->optimizer_level, (long long)c->optimizer_shard_size);
	if (c->pipeline_stages == 0 && c->stages == 1)   /* "auto", not picked yet (or picked 1) */
		sb_printf(b, ",\n  pipeline_stages: \"auto\",\n  pipeline_scheduler: \"%s\"",
		          c->scheduler == SCHED_GPIPE ? "gpipe" : "1f1b");
	else if (c->stages > 1 || c->pipeline_stages > 1)   /* as the search picked it, when "auto" */
		sb_printf(b, ",\n  pipeline_stages: %lld,\n  pipeline_scheduler: \"%s\"",
		          (long long)(c->stages > 1 ? c->stages : c->pipeline_stages),
		          c->scheduler == SCHED_GPIPE ? "gpipe" : "1f1b");
	sb_puts(b, "\n}\n");
}

void print_layout_decl(StrBuf *b, const LayoutDecl *l)
{
	sb_printf(b, "layout %s = Layout((", l->name);
	for (int i = 0; i < l->ndims; i++)
		sb_printf(b, i ? ", %lld" : "%lld", (long long)l->dims[i]);
	sb_puts(b, l->ndims == 1 ? ",), (" : "), (");
	for (int i = 0; i < l->ndims; i++) {
		if (i)
			sb_puts(b, ", ");
		print_quoted(b, l->alias[i]);
	}
	sb_puts(b, l->ndims == 1 ? ",))\n" : "))\n");
}

/* A signature's type list: `(T)` for one type, as docs/language.md writes it. */
static void print_types(StrBuf *b, const Lit *types)
{
	sb_putc(b, '(');
	for (int k = 0; k < types->nitems; k++) {
		if (k)
			sb_puts(b, ", ");
		lit_print(b, types->items[k]);
	}
	sb_putc(b, ')');
}

static void print_graph(StrBuf *b, const Graph *g)
{
	sb_printf(b, "\ngraph @%s(", g->name);
	for (int k = 0; k < g->nparams; k++) {
		const Value *v = &g->values[k];
		sb_printf(b, "%s%%%s: ", k ? ",\n    " : "", v->name);
		type_print(b, &v->type);
		if (v->init) {
			sb_puts(b, " = ");
			init_print(b, v->init);
		}
	}
	sb_puts(b, ") {\n");
	for (int i = 0; i < g->nnodes; i++) {
		const Node *n = &g->nodes[i];
		sb_printf(b, "  %%%s = %s(", g->values[n->result].name, op_info[n->op].name);
		for (int k = 0; k < n->nin; k++) {
			const Lit *o = n->operands->items[k];   /* a number as written */
			sb_printf(b, o->kind == LIT_VALUE ? "%s%%%s" : "%s%s", k ? ", " : "", o->s);
		}
		sb_putc(b, ')');
		if (n->attr_lit && n->attr_lit->nitems) {
			sb_putc(b, ' ');
			lit_print(b, n->attr_lit);
		}
		if (n->sig) {
			sb_puts(b, " : ");
			print_types(b, n->sig->ins);
			sb_puts(b, " -> ");
			print_types(b, n->sig->outs);
		}
		sb_putc(b, '\n');
	}
	sb_puts(b, "  return ");
	for (int k = 0; k < g->rets->nitems; k++)
		sb_printf(b, k ? ", %%%s" : "%%%s", g->rets->items[k]->s);
	sb_puts(b, "\n}\n");
}

void print_module(StrBuf *b, const Module *m)
{
	print_context(b, m);
	for (int i = 0; i < m->nlayouts; i++)
		print_layout_decl(b, m->layouts[i]);
	for (int i = 0; i < m->ngraphs; i++)
		print_graph(b, m->graphs[i]);
	if (m->train) {
		sb_puts(b, "\ntrain ");
		lit_print(b, m->train->lit);
		sb_putc(b, '\n');
	}
}
