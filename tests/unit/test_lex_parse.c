/* test_lex_parse.c: the lexer and parser (grammar/, parse.c) through parse_module.
 *
 * Tokens are looked at through the context dict, which takes any key and any
 * value; graphs, layouts and the train block through the Module. Errors are
 * read back from a memstream as `t.ir:LINE:COL: error: message`. */
#include <criterion/criterion.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "shardc.h"

/* ---- helpers ---- */

static int count(const char *hay, const char *needle)
{
	int n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* The context entry `key`, asserted present and of kind `kind`. */
static Lit *ctx(Run *r, const char *key, LitKind kind)
{
	cr_assert_not_null(r->m->context_lit, "no context block; errors:\n%s", msgs(r));
	Lit *v = lit_dict_get(r->m->context_lit, key);
	cr_assert_not_null(v, "context has no key '%s'", key);
	cr_assert_eq(v->kind, kind, "'%s' is %s, expected %s", key, lit_kind_name(v->kind), lit_kind_name(kind));
	return v;
}

static void expect_at(Run *r, Span s, int line, int col)
{
	int l, c;
	source_line_col(r->m->src, s.start, &l, &c);
	cr_assert(l == line && c == col, "span at %d:%d, expected %d:%d", l, c, line, col);
}

static Node *node_of(Graph *g, const char *value)
{
	int id = graph_value(g, value);
	cr_assert_geq(id, 0, "no value %%%s in @%s", value, g->name);
	cr_assert_geq(g->values[id].node, 0, "%%%s is a parameter", value);
	return &g->nodes[g->values[id].node];
}

/* ---- tokens ---- */

Test(tokens, integers_including_int64_extremes)
{
	Run *r = parse("context {a: 0, b: -3, c: 42, max: 9223372036854775807, min: -9223372036854775808}");
	expect_clean(r);
	cr_assert_eq(ctx(r, "a", LIT_INT)->i, 0);
	cr_assert_eq(ctx(r, "b", LIT_INT)->i, -3);
	cr_assert_eq(ctx(r, "c", LIT_INT)->i, 42);
	cr_assert_eq(ctx(r, "max", LIT_INT)->i, INT64_MAX);
	cr_assert_eq(ctx(r, "min", LIT_INT)->i, INT64_MIN);
	run_free(r);
}

Test(tokens, floats_in_every_form)
{
	Run *r = parse("context {a: 0.5, b: 1e-5, c: -2.5E3, d: .25, e: 3., f: 1E+2, g: -0.0, h: 2.0}");
	expect_clean(r);
	cr_assert_eq(ctx(r, "a", LIT_FLOAT)->f, 0.5);
	cr_assert_eq(ctx(r, "b", LIT_FLOAT)->f, 1e-5);
	cr_assert_eq(ctx(r, "c", LIT_FLOAT)->f, -2500.0);
	cr_assert_eq(ctx(r, "d", LIT_FLOAT)->f, 0.25);
	cr_assert_eq(ctx(r, "e", LIT_FLOAT)->f, 3.0);
	cr_assert_eq(ctx(r, "f", LIT_FLOAT)->f, 100.0);
	cr_assert_eq(ctx(r, "g", LIT_FLOAT)->f, 0.0);
	cr_assert_eq(ctx(r, "h", LIT_FLOAT)->f, 2.0, "2.0 stays a float, not an integer");
	run_free(r);
}

Test(tokens, strings_with_escapes)
{
	Run *r = parse("context {s: \"a\\\"b\\\\c\", e: \"\", dp: \"dp\", hash: \"#x\"}");
	expect_clean(r);
	cr_assert_str_eq(ctx(r, "s", LIT_STR)->s, "a\"b\\c");
	cr_assert_str_eq(ctx(r, "e", LIT_STR)->s, "");
	cr_assert_str_eq(ctx(r, "dp", LIT_STR)->s, "dp");
	cr_assert_str_eq(ctx(r, "hash", LIT_STR)->s, "#x", "'#' inside a string is not a comment");
	run_free(r);
}

Test(tokens, true_false_none)
{
	Run *r = parse("context {t: true, f: false, n: None}");
	expect_clean(r);
	cr_assert_eq(ctx(r, "t", LIT_BOOL)->i, 1);
	cr_assert_eq(ctx(r, "f", LIT_BOOL)->i, 0);
	ctx(r, "n", LIT_NONE);
	run_free(r);
}

Test(tokens, value_graph_and_identifier_names)
{
	Run *r = parse("context {v: %fc1.weight, n: %1, g: @dense_relu, h: @block.1, i: Float16}");
	expect_clean(r);
	cr_assert_str_eq(ctx(r, "v", LIT_VALUE)->s, "fc1.weight");
	cr_assert_str_eq(ctx(r, "n", LIT_VALUE)->s, "1");
	cr_assert_str_eq(ctx(r, "g", LIT_GRAPH)->s, "dense_relu");
	cr_assert_str_eq(ctx(r, "h", LIT_GRAPH)->s, "block.1");
	cr_assert_str_eq(ctx(r, "i", LIT_IDENT)->s, "Float16");
	run_free(r);
}

Test(tokens, token_spans)
{
	Run *r = parse("context {\n  abc: -12,\n    s: \"x\"}");
	expect_clean(r);
	Lit *v = ctx(r, "abc", LIT_INT);
	expect_at(r, v->span, 2, 8);
	cr_assert_eq(v->span.end - v->span.start, 3, "'-12' is 3 bytes");
	Lit *s = ctx(r, "s", LIT_STR);
	expect_at(r, s->span, 3, 8);
	cr_assert_eq(s->span.end - s->span.start, 3, "the span covers both quotes");
	expect_at(r, r->m->context_lit->keys[1]->span, 3, 5);
	run_free(r);
}

Test(tokens, comments_are_dropped)
{
	Run *r = parse("# a file comment\n"
	               "context {  # after a brace\n"
	               "  a: 1  # } ) not code\n"
	               "  # b: 2\n"
	               "}\n"
	               "#last line without newline");
	expect_clean(r);
	cr_assert_eq(r->m->context_lit->nitems, 1);
	ctx(r, "a", LIT_INT);
	cr_assert_null(lit_dict_get(r->m->context_lit, "b"));
	run_free(r);
}

/* ---- tuples, dicts, calls ---- */

Test(literals, one_tuple_paren_and_empty)
{
	Run *r = parse("context {one: (8,), paren: (8), empty: (), two: (1, 2), trail: (1, 2,), nest: ((8, 1), (8,))}");
	expect_clean(r);
	Lit *one = ctx(r, "one", LIT_TUPLE), *paren = ctx(r, "paren", LIT_TUPLE);
	cr_assert_eq(one->nitems, 1);
	cr_assert_eq(one->items[0]->i, 8);
	cr_assert_eq(paren->nitems, 1, "(8) is a 1-tuple too (grammar/IR.txt)");
	cr_assert_eq(paren->items[0]->i, 8);
	cr_assert_eq(ctx(r, "empty", LIT_TUPLE)->nitems, 0);
	cr_assert_eq(ctx(r, "two", LIT_TUPLE)->nitems, 2);
	Lit *trail = ctx(r, "trail", LIT_TUPLE);
	cr_assert_eq(trail->nitems, 2);
	cr_assert_eq(trail->items[1]->i, 2);
	Lit *nest = ctx(r, "nest", LIT_TUPLE);
	cr_assert_eq(nest->nitems, 2);
	cr_assert_eq(nest->items[0]->kind, LIT_TUPLE);
	cr_assert_eq(nest->items[0]->nitems, 2);
	cr_assert_eq(nest->items[1]->nitems, 1);
	run_free(r);
}

Test(literals, dicts_with_without_and_trailing_commas)
{
	Run *r = parse("context {a: 1 b: 2, c: 3,\n d: {x: 1 y: 2}, e: {}, f: {\"w1\": (8, 1),}}");
	expect_clean(r);
	Lit *c = r->m->context_lit;
	cr_assert_eq(c->kind, LIT_DICT);
	cr_assert_eq(c->nitems, 6);
	const char *keys[] = {"a", "b", "c", "d", "e", "f"};
	for (int i = 0; i < 6; i++)
		cr_assert_str_eq(c->keys[i]->s, keys[i]);
	Lit *d = ctx(r, "d", LIT_DICT);
	cr_assert_eq(d->nitems, 2);
	cr_assert_eq(lit_dict_get(d, "y")->i, 2);
	cr_assert_eq(ctx(r, "e", LIT_DICT)->nitems, 0);
	Lit *f = ctx(r, "f", LIT_DICT);
	cr_assert_eq(f->nitems, 1);
	cr_assert_eq(f->keys[0]->kind, LIT_STR, "a quoted key stays a string key");
	cr_assert_str_eq(f->keys[0]->s, "w1");
	run_free(r);
}

Test(literals, keywords_as_dict_keys)
{
	Run *r = parse("context {graph: @f, context: 1, layout: 2, train: 3, return: 4}");
	expect_clean(r);
	Lit *c = r->m->context_lit;
	const char *keys[] = {"graph", "context", "layout", "train", "return"};
	cr_assert_eq(c->nitems, 5);
	for (int i = 0; i < 5; i++) {
		cr_assert_eq(c->keys[i]->kind, LIT_IDENT);
		cr_assert_str_eq(c->keys[i]->s, keys[i]);
	}
	cr_assert_str_eq(ctx(r, "graph", LIT_GRAPH)->s, "f");
	run_free(r);
}

Test(literals, named_and_positional_call_arguments)
{
	Run *r = parse("context {opt: Momentum(learning_rate: 0.2, momentum: 0.1),\n"
	               "         lay: L(\"dp\", (\"sp\", \"mp\")), mix: f(1, k: 2), none: zeros()}");
	expect_clean(r);
	Lit *opt = ctx(r, "opt", LIT_APPLY);
	cr_assert_str_eq(opt->s, "Momentum");
	cr_assert_eq(opt->nitems, 2);
	cr_assert_str_eq(opt->keys[0]->s, "learning_rate");
	cr_assert_eq(opt->items[0]->f, 0.2);
	cr_assert_str_eq(opt->keys[1]->s, "momentum");
	cr_assert_eq(opt->items[1]->f, 0.1);
	Lit *lay = ctx(r, "lay", LIT_APPLY);
	cr_assert_eq(lay->nitems, 2);
	cr_assert_null(lay->keys[0]);
	cr_assert_str_eq(lay->items[0]->s, "dp");
	cr_assert_eq(lay->items[1]->kind, LIT_TUPLE);
	Lit *mix = ctx(r, "mix", LIT_APPLY);
	cr_assert_null(mix->keys[0]);
	cr_assert_str_eq(mix->keys[1]->s, "k");
	cr_assert_eq(ctx(r, "none", LIT_APPLY)->nitems, 0);
	run_free(r);
}

/* ---- module pieces ---- */

Test(module, context_block)
{
	Run *r = parse("\ncontext {device_num: 8, parallel_mode: \"semi_auto_parallel\"}\n");
	expect_clean(r);
	cr_assert_eq(r->m->context_lit->nitems, 2);
	expect_at(r, r->m->context_span, 2, 1);
	cr_assert_eq(r->m->ngraphs, 0);
	run_free(r);
}

Test(module, second_context_block_is_an_error)
{
	Run *r = parse("context {seed: 1}\ncontext {seed: 2}\n");
	expect_msg(r, "t.ir:2:1: error: a module has at most one context block");
	cr_assert_eq(r->d.nerrors, 1);
	cr_assert_eq(ctx(r, "seed", LIT_INT)->i, 1, "the first block is kept");
	run_free(r);
}

Test(module, layout_declaration)
{
	Run *r = parse("layout L = Layout((2, 2, 2), (\"dp\", \"sp\", \"mp\"))\n"
	               "layout One = Layout((8,), (\"all\",))\n");
	expect_clean(r);
	cr_assert_eq(r->m->nlayouts, 2);
	const LayoutDecl *l = module_layout(r->m, "L");
	cr_assert_not_null(l);
	cr_assert_eq(l->ndims, 3);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(l->dims[i], 2);
	cr_assert_str_eq(l->alias[0], "dp");
	cr_assert_str_eq(l->alias[1], "sp");
	cr_assert_str_eq(l->alias[2], "mp");
	const LayoutDecl *one = module_layout(r->m, "One");
	cr_assert_eq(one->ndims, 1);
	cr_assert_eq(one->dims[0], 8);
	cr_assert_str_eq(one->alias[0], "all");
	cr_assert_null(module_layout(r->m, "M"));
	run_free(r);
}

Test(module, layout_declaration_errors)
{
	Run *r = parse("layout A = Grid((2,), (\"x\",))\n"
	               "layout B = Layout((2, 4), (\"x\",))\n"
	               "layout C = Layout((2, 2), (\"x\", \"x\"))\n"
	               "layout D = Layout((0,), (\"x\",))\n"
	               "layout E = Layout((2,), (\"None\",))\n"
	               "layout F = Layout((2,), (\"x\",))\n"
	               "layout F = Layout((2,), (\"y\",))\n");
	expect_msg(r, "t.ir:1:12: error: expected 'Layout(device_matrix, alias_names)', found 'Grid'");
	expect_msg(r, "t.ir:2:27: error: the device matrix has 2 axes but 1 alias names are given");
	expect_msg(r, "t.ir:3:33: error: alias \"x\" names two axes");
	expect_msg(r, "t.ir:4:20: error: a device matrix axis must be a positive integer");
	expect_msg(r, "t.ir:5:26: error: an axis alias must be a non-empty string other than \"None\"");
	expect_msg(r, "t.ir:7:8: error: layout 'F' is declared twice");
	cr_assert_eq(r->d.nerrors, 6);
	cr_assert_eq(r->m->nlayouts, 1, "only F is declared");
	run_free(r);
}

Test(module, graph_with_params_and_initializers)
{
	Run *r = parse("graph @net(%x: <Tensor[Float32], (16, 32)> = uniform(-1, 1),\n"
	               "           %w: <Parameter[BFloat16], (32, 16)> = normal(0.01),\n"
	               "           %b: <Parameter[Float32], (16,)> = zeros,\n"
	               "           %l: <Tensor[Int32], (16)>,\n"
	               "           %s: <Tensor[Bool], ()>) {\n"
	               "  %y = MatMul(%x, %w)\n"
	               "  return %y\n"
	               "}\n");
	expect_clean(r);
	cr_assert_eq(r->m->ngraphs, 1);
	Graph *g = module_entry(r->m);
	cr_assert_str_eq(g->name, "net");
	expect_at(r, g->name_span, 1, 7);
	cr_assert_eq(g->nparams, 5);
	cr_assert_eq(g->nvalues, 6);
	cr_assert_eq(g->nnodes, 1);

	Value *x = &g->values[0], *w = &g->values[1], *b = &g->values[2], *l = &g->values[3], *s = &g->values[4];
	cr_assert_str_eq(x->name, "x");
	cr_assert_not(x->type.is_param);
	cr_assert_eq(x->type.dtype, DT_F32);
	cr_assert_eq(x->type.rank, 2);
	cr_assert_eq(x->type.dims[0], 16);
	cr_assert_eq(x->type.dims[1], 32);
	cr_assert_eq(x->node, -1);
	cr_assert_str_eq(x->init->s, "uniform");
	cr_assert_eq(x->init->nitems, 2);
	cr_assert_eq(x->init->items[0]->i, -1);
	cr_assert_eq(x->init->items[1]->i, 1);

	cr_assert(w->type.is_param);
	cr_assert_eq(w->type.dtype, DT_BF16);
	cr_assert_str_eq(w->init->s, "normal");
	cr_assert_eq(w->init->items[0]->f, 0.01);

	cr_assert_eq(b->type.rank, 1);
	cr_assert_eq(b->type.dims[0], 16);
	cr_assert_str_eq(b->init->s, "zeros");
	cr_assert_eq(b->init->nitems, 0);

	cr_assert_eq(l->type.dtype, DT_I32);
	cr_assert_eq(l->type.rank, 1, "(16) is a 1-tuple");
	cr_assert_null(l->init);
	cr_assert_eq(s->type.dtype, DT_BOOL);
	cr_assert_eq(s->type.rank, 0, "() is a scalar");
	run_free(r);
}

Test(module, statement_with_attributes_and_signature)
{
	Run *r = parse("graph @g(%a: <Tensor[Float32], (4, 8)>, %b: <Tensor[Float32], (4, 8)>) {\n"
	               "  %c = MatMul(%a, %b) {transpose_b: true, in_strategy: ((2, 1), (1, 1))}\n"
	               "      : (<Tensor[Float32], (4, 8)>, <Tensor[Float32], (4, 8)>) -> (<Tensor[Float32], (4, 4)>)\n"
	               "  %d = Foo(%c)\n"
	               "  return %d\n"
	               "}\n");
	expect_clean(r);
	Graph *g = module_entry(r->m);
	Node *n = node_of(g, "c");
	cr_assert_eq(n->op, OP_MATMUL);
	cr_assert_str_eq(n->op_name, "MatMul");
	expect_at(r, n->span, 2, 3);
	expect_at(r, n->op_span, 2, 8);
	cr_assert_eq(n->nin, 2);
	cr_assert_str_eq(n->operands->items[0]->s, "a");
	cr_assert_str_eq(n->operands->items[1]->s, "b");
	cr_assert_eq(n->attr_lit->kind, LIT_DICT);
	cr_assert_eq(n->attr_lit->nitems, 2);
	cr_assert_eq(lit_dict_get(n->attr_lit, "transpose_b")->kind, LIT_BOOL);
	cr_assert_eq(lit_dict_get(n->attr_lit, "in_strategy")->nitems, 2);
	cr_assert_not_null(n->sig);
	cr_assert_eq(n->sig->ins->nitems, 2);
	cr_assert_eq(n->sig->outs->nitems, 1);
	Type *out = n->sig->outs->items[0]->type;
	cr_assert_eq(out->rank, 2);
	cr_assert_eq(out->dims[0], 4);
	cr_assert_eq(out->dims[1], 4);
	expect_at(r, n->sig->span, 3, 7);

	Node *foo = node_of(g, "d");
	cr_assert_eq(foo->op, OP_COUNT, "an unknown operator parses; check_names reports it");
	cr_assert_str_eq(foo->op_name, "Foo");
	cr_assert_null(foo->attr_lit);
	cr_assert_null(foo->sig);
	run_free(r);
}

Test(module, unknown_operator_reported_by_check_names)
{
	Run *r = parse("graph @g(%x: <Tensor[Float32], (2,)>) {\n"
	               "  %y = ReLU(%x)\n"
	               "  %z = Foo(%y)\n"
	               "  return %z\n"
	               "}\n");
	expect_clean(r);
	cr_assert(check_context(r->m, &r->d));
	cr_assert_not(check_names(r->m, &r->d));
	expect_msg(r, "t.ir:3:8: error: unknown operator 'Foo'");
	cr_assert_eq(r->d.nerrors, 1);
	run_free(r);
}

Test(module, return_of_several_values)
{
	Run *r = parse("graph @g(%x: <Tensor[Float32], (2,)>) {\n"
	               "  %a = ReLU(%x)\n"
	               "  %b = Neg(%x)\n"
	               "  return %a, %x, %b\n"
	               "}\n");
	expect_clean(r);
	Graph *g = module_entry(r->m);
	cr_assert_eq(g->rets->nitems, 3);
	cr_assert_str_eq(g->rets->items[0]->s, "a");
	cr_assert_str_eq(g->rets->items[1]->s, "x");
	cr_assert_str_eq(g->rets->items[2]->s, "b");
	expect_at(r, g->rets->span, 4, 10);
	run_free(r);
}

Test(module, entry_is_the_last_graph)
{
	Run *r = parse("graph @f(%x: <Tensor[Float32], (2,)>) {\n  %y = ReLU(%x)\n  return %y\n}\n"
	               "graph @main(%x: <Tensor[Float32], (2,)>) {\n  %y = Call(%x) {graph: @f}\n  return %y\n}\n");
	expect_clean(r);
	cr_assert_eq(r->m->ngraphs, 2);
	cr_assert_str_eq(r->m->graphs[0]->name, "f");
	cr_assert_str_eq(module_entry(r->m)->name, "main");
	cr_assert_eq(module_graph(r->m, "f"), r->m->graphs[0]);
	Node *call = node_of(module_entry(r->m), "y");
	cr_assert_eq(call->op, OP_CALL);
	cr_assert_str_eq(lit_dict_get(call->attr_lit, "graph")->s, "f");
	run_free(r);
}

Test(module, train_block)
{
	Run *r = parse("graph @g(%x: <Tensor[Float32], (2,)>) {\n  %y = ReLU(%x)\n  return %y\n}\n"
	               "train {\n"
	               "  loss: %y,\n"
	               "  optimizer: Momentum(learning_rate: 0.2, momentum: 0.1)\n"
	               "  steps: 20\n"
	               "}\n");
	expect_clean(r);
	Train *t = r->m->train;
	cr_assert_not_null(t);
	expect_at(r, t->span, 5, 1);
	cr_assert_eq(t->lit->nitems, 3);
	cr_assert_str_eq(lit_dict_get(t->lit, "loss")->s, "y");
	Lit *opt = lit_dict_get(t->lit, "optimizer");
	cr_assert_eq(opt->kind, LIT_APPLY);
	cr_assert_str_eq(opt->s, "Momentum");
	cr_assert_eq(lit_dict_get(t->lit, "steps")->i, 20);
	cr_assert_eq(t->loss, -1, "resolved later, by check_names");
	run_free(r);
}

Test(module, second_train_block_is_an_error)
{
	Run *r = parse("train {loss: %a}\ntrain {loss: %b}\n");
	expect_msg(r, "t.ir:2:1: error: a module has at most one train block");
	cr_assert_eq(r->d.nerrors, 1);
	cr_assert_str_eq(lit_dict_get(r->m->train->lit, "loss")->s, "a", "the first block is kept");
	run_free(r);
}

Test(module, graph_without_statements)
{
	Run *r = parse("graph @id(%x: <Tensor[Float32], (2,)>,) {\n  return %x\n}\n");
	expect_clean(r);
	Graph *g = module_entry(r->m);
	cr_assert_eq(g->nparams, 1, "a trailing comma after the parameters is allowed");
	cr_assert_eq(g->nnodes, 0);
	cr_assert_str_eq(g->rets->items[0]->s, "x");
	run_free(r);
}

Test(module, items_in_any_order)
{
	Run *r = parse("train {loss: %y}\n"
	               "graph @g(%x: <Tensor[Float32], (2,)>) {\n  %y = ReLU(%x)\n  return %y\n}\n"
	               "layout L = Layout((1,), (\"a\",))\n"
	               "context {seed: 3}\n");
	expect_clean(r);
	cr_assert_not_null(r->m->train);
	cr_assert_eq(r->m->ngraphs, 1);
	cr_assert_eq(r->m->nlayouts, 1);
	cr_assert_not_null(r->m->context_lit);
	run_free(r);
}

Test(module, empty_text)
{
	Run *r = parse("");
	expect_clean(r);
	cr_assert_eq(r->m->ngraphs, 0);
	cr_assert_null(r->m->context_lit);
	cr_assert_null(r->m->train);
	run_free(r);
}

/* ---- lexical errors ---- */

Test(lex_errors, unterminated_string)
{
	Run *r = parse("context {s: \"abc\n}\n");
	expect_msg(r, "t.ir:1:13: error: unterminated string");
	cr_assert_eq(r->d.nerrors, 1);
	run_free(r);
}

Test(lex_errors, unterminated_string_at_end_of_file)
{
	Run *r = parse("context {s: \"ab\\");
	expect_msg(r, "t.ir:1:13: error: unterminated string");
	run_free(r);
}

Test(lex_errors, bad_escape)
{
	Run *r = parse("context {s: \"a\\nb\"}\n");
	expect_msg(r, "t.ir:1:15: error: unknown escape in string (only \\\" and \\\\ are allowed)");
	cr_assert_eq(r->d.nerrors, 1);
	run_free(r);
}

Test(lex_errors, integer_out_of_range)
{
	Run *r = parse("context {\n  a: 99999999999999999999,\n  b: -9223372036854775809,\n  c: 9223372036854775808\n}\n");
	expect_msg(r, "t.ir:2:6: error: integer literal out of range (64-bit)");
	expect_msg(r, "t.ir:3:6: error: integer literal out of range (64-bit)");
	expect_msg(r, "t.ir:4:6: error: integer literal out of range (64-bit)");
	cr_assert_eq(r->d.nerrors, 3);
	run_free(r);
}

Test(lex_errors, float_out_of_range)
{
	Run *r = parse("context {a: 1e999, b: 1e-999}\n");
	expect_msg(r, "t.ir:1:13: error: float literal out of range");
	cr_assert_eq(r->d.nerrors, 1, "underflow to zero is not an error:\n%s", msgs(r));
	run_free(r);
}

Test(lex_errors, bad_bytes)
{
	Run *r = parse("context {a: 1}\n\x01\n  $\n");
	expect_msg(r, "t.ir:2:1: error: unexpected byte 0x01");
	expect_msg(r, "t.ir:3:3: error: unexpected character '$'");
	cr_assert_eq(r->d.nerrors, 2, "one message per bad byte, got:\n%s", msgs(r));
	run_free(r);
}

Test(lex_errors, lone_sigils)
{
	Run *r = parse("context {a: % , b: @ }\n");
	expect_msg(r, "t.ir:1:13: error: '%' must be followed by a value name");
	expect_msg(r, "t.ir:1:20: error: '@' must be followed by a graph name");
	run_free(r);
}

Test(lex_errors, nul_byte_between_tokens)
{
	static const char text[] = "context {seed: 1}\0\n"
	                           "graph @g(%x: <Tensor[Float32], (2,)>) {\n"
	                           "  %y = ReLU(%x) $\n"
	                           "  return %y\n"
	                           "}\n";
	Run *r = parse_len(text, sizeof text - 1);
	expect_msg(r, "t.ir:1:18: error: unexpected byte 0x00");
	expect_msg(r, "t.ir:3:17: error: unexpected character '$'");
	cr_assert_eq(r->d.nerrors, 2, "the text after the NUL is still read:\n%s", msgs(r));
	run_free(r);
}

/* A NUL inside a string literal must not silently cut the string short. */
Test(lex_errors, nul_byte_inside_a_string)
{
	static const char text[] = "context {s: \"a\0b\"}\n";
	Run *r = parse_len(text, sizeof text - 1);
	cr_assert_eq(r->d.nerrors, 1, "a NUL byte inside a string is accepted without a word (the string becomes \"%s\")",
	             r->m->context_lit ? lit_dict_get(r->m->context_lit, "s")->s : "?");
	expect_msg(r, "t.ir:1:15: error:");
	run_free(r);
}

/* ---- syntax errors ---- */

Test(syntax_errors, missing_closing_brace)
{
	Run *r = parse("graph @g(%x: <Tensor[Float32], (2,)>) {\n  %y = ReLU(%x)\n  return %y\n");
	expect_msg(r, "t.ir:3:12: error: syntax error, unexpected end of file");
	cr_assert_eq(r->d.nerrors, 1);
	cr_assert_eq(r->m->ngraphs, 0, "a graph cut short stays out of the module");
	run_free(r);
}

Test(syntax_errors, missing_closing_brace_of_context)
{
	Run *r = parse("context {seed: 1\n");
	expect_msg(r, "syntax error, unexpected end of file");
	cr_assert_eq(r->d.nerrors, 1);
	run_free(r);
}

Test(syntax_errors, two_errors_in_two_graphs)
{
	Run *r = parse("graph @f(%x: <Tensor[Float32], (2,)>) {\n"
	               "  %y = ReLU(%x) )\n"
	               "  return %y\n"
	               "}\n"
	               "graph @g(%x: <Tensor[Float32], (2,)>) {\n"
	               "  %y = = ReLU(%x)\n"
	               "  return %y\n"
	               "}\n");
	cr_assert_eq(r->d.nerrors, 2, "got:\n%s", msgs(r));
	expect_msg(r, "t.ir:2:17: error: syntax error, unexpected ')'");
	expect_msg(r, "t.ir:6:8: error: syntax error, unexpected '='");
	run_free(r);
}

Test(syntax_errors, duplicate_dict_key)
{
	Run *r = parse("context {seed: 1, device_num: 2, seed: 3}\n");
	expect_msg(r, "t.ir:1:34: error: duplicate key 'seed'");
	cr_assert_eq(r->d.nerrors, 1);
	run_free(r);
}

Test(syntax_errors, bad_types)
{
	Run *r = parse("graph @g(%a: <Tensr[Float32], (2,)>,\n"
	               "         %b: <Tensor[Float64], (2,)>,\n"
	               "         %c: <Tensor[Float32], (2, 0)>,\n"
	               "         %d: <Tensor[Float32], (1, 1, 1, 1, 1, 1, 1, 1, 1)>,\n"
	               "         %e: <Tensor[Float32], (1099511627776, 2)>) {\n"
	               "  %y = ReLU(%a)\n"
	               "  return %y\n"
	               "}\n");
	expect_msg(r, "t.ir:1:15: error: unknown type 'Tensr' (expected Tensor or Parameter)");
	expect_msg(r, "t.ir:2:22: error: unknown element type 'Float64'");
	expect_msg(r, "t.ir:3:36: error: a dimension must be a positive integer");
	expect_msg(r, "t.ir:4:32: error: a tensor has at most 8 dimensions, this one has 9");
	expect_msg(r, "t.ir:5:48: error: tensor too large (more than 2^40 elements)");
	cr_assert_eq(r->d.nerrors, 5);
	run_free(r);
}

Test(syntax_errors, signature_without_results)
{
	Run *r = parse("graph @g(%x: <Tensor[Float32], (2,)>) {\n"
	               "  %y = ReLU(%x) : (<Tensor[Float32], (2,)>) -> ()\n"
	               "  return %y\n"
	               "}\n");
	expect_msg(r, "t.ir:2:17: error: a signature names at least one result type");
	cr_assert_eq(r->d.nerrors, 1);
	run_free(r);
}

Test(syntax_errors, deep_nesting_does_not_crash)
{
	enum { DEPTH = 100000 };
	char *text = malloc(DEPTH + 32);
	int n = sprintf(text, "context {a: ");
	memset(text + n, '(', DEPTH);
	strcpy(text + n + DEPTH, "}");
	Run *r = parse(text);
	free(text);
	expect_msg(r, "error: nested too deeply");
	cr_assert_eq(r->d.nerrors, 1, "got:\n%s", msgs(r));
	run_free(r);
}

Test(syntax_errors, megabyte_of_junk_stops_at_max_errors, .timeout = 60)
{
	static const char junk[] = "(){}<>[],:=%@$\x01\x7f?!;-+ *&^~`|/";
	enum { SIZE = 1 << 20 };
	char *text = malloc(SIZE + 1);
	uint32_t s = 12345;
	for (int i = 0; i < SIZE; i++) {
		s = s * 1103515245u + 12345u;
		text[i] = junk[(s >> 16) % (sizeof junk - 1)];
	}
	text[SIZE] = 0;
	Run *r = parse_len(text, SIZE);
	free(text);
	const char *out = msgs(r);
	cr_assert_gt(r->d.nerrors, MAX_ERRORS);
	cr_assert_eq(count(out, ": error: "), MAX_ERRORS, "printed %d errors", count(out, ": error: "));
	cr_assert_eq(count(out, "t.ir: too many errors, stopping here\n"), 1);
	size_t tail = strlen("t.ir: too many errors, stopping here\n");
	cr_assert_str_eq(out + strlen(out) - tail, "t.ir: too many errors, stopping here\n", "it is the last line");
	cr_assert_lt(strlen(out), 64 * 1024, "messages stay short on a long line");
	run_free(r);
}

/* ---- no global state ---- */

Test(reentrant, two_modules_interleaved)
{
	Run *a = parse("context {device_num: 4}\n"
	               "graph @fa(%x: <Tensor[Float32], (4, 8)>) {\n  %y = ReLU(%x)\n  return %y\n}\n");
	Run *b = parse("graph @gb(%p: <Tensor[Int32], (3,)>) {\n  %q = Neg(%p) )\n  return %q\n}\n");
	cr_assert_eq(a->d.nerrors, 0, "%s", msgs(a));
	cr_assert_eq(b->d.nerrors, 1);
	cr_assert_str_eq(msgs(a), "");
	expect_msg(b, "t.ir:2:16: error: syntax error");

	Run *c = parse("graph @gc(%p: <Tensor[Int32], (3,)>) {\n  %q = Neg(%p)\n  return %q\n}\n");
	cr_assert(check_context(a->m, &a->d));
	cr_assert(check_context(c->m, &c->d));
	cr_assert(check_names(c->m, &c->d));
	cr_assert(check_names(a->m, &a->d));
	cr_assert(infer_shapes(a->m, &a->d));
	cr_assert(infer_shapes(c->m, &c->d));
	cr_assert_eq(a->m->ctx.device_num, 4);
	cr_assert_eq(c->m->ctx.device_num, 1);
	cr_assert_str_eq(module_entry(a->m)->name, "fa");
	cr_assert_str_eq(module_entry(c->m)->name, "gc");
	Graph *ga = module_entry(a->m), *gc = module_entry(c->m);
	cr_assert_eq(ga->values[1].type.dims[1], 8);
	cr_assert_eq(gc->values[1].type.dtype, DT_I32);
	cr_assert_eq(gc->values[1].type.dims[0], 3);
	run_free(b);
	cr_assert_str_eq(module_entry(a->m)->values[1].name, "y", "freeing one module leaves the other whole");
	run_free(a);
	run_free(c);
}

enum { THREADS = 4, ROUNDS = 50 };

/* Each thread parses its own text many times and checks what it got. */
static void *parse_many(void *arg)
{
	intptr_t k = (intptr_t)arg;
	char text[256];
	snprintf(text, sizeof text,
	         "context {seed: %d}\ngraph @g%d(%%x: <Tensor[Float32], (%d, 3)>) {\n  %%y%d = ReLU(%%x) $\n  return %%y%d\n}\n",
	         (int)k, (int)k, (int)k + 1, (int)k, (int)k);
	for (int i = 0; i < ROUNDS; i++) {
		FILE *f = fopen("/dev/null", "w");
		Diag d = {.out = f};
		Module *m = parse_module("t.ir", text, (int)strlen(text), &d);
		char want[8];
		snprintf(want, sizeof want, "g%d", (int)k);
		bool ok = d.nerrors == 1 && m->ngraphs == 1 && strcmp(m->graphs[0]->name, want) == 0 &&
		          m->graphs[0]->values[0].type.dims[0] == k + 1 && lit_dict_get(m->context_lit, "seed")->i == k;
		module_free(m);
		fclose(f);
		if (!ok)
			return (void *)1;
	}
	return NULL;
}

Test(reentrant, parsing_in_threads_at_once)
{
	pthread_t t[THREADS];
	for (intptr_t k = 0; k < THREADS; k++)
		cr_assert_eq(pthread_create(&t[k], NULL, parse_many, (void *)k), 0);
	for (int k = 0; k < THREADS; k++) {
		void *res;
		pthread_join(t[k], &res);
		cr_assert_null(res, "thread %d saw another thread's module", k);
	}
	cr_assert_eq(leak_check(), 0);
}
