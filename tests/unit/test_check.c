/* test_check.c: the checks of check.c: the context block and command-line
 * overrides, names, attributes, strategies and layouts, shard, dataset_strategy,
 * train and initializers.
 *
 * compile() runs the passes in the driver's order and stops at the first that
 * fails, as the driver does; messages are compared as `t.ir:LINE:COL: error: ...`. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "shardc.h"

/* ---- helpers ---- */

/* compile() on the text of `head` followed by `tail`. */
static Run *compile2(const char *head, const char *tail)
{
	size_t n = strlen(head), m = strlen(tail);
	char *text = malloc(n + m + 1);
	memcpy(text, head, n);
	memcpy(text + n, tail, m + 1);
	Run *r = compile(text);
	free(text);
	return r;
}

/* The run failed, and WANT is among its messages. */
static void expect_error(Run *r, const char *want)
{
	cr_assert_not(r->ok, "expected an error: %s", want);
	expect_msg(r, want);
}

/* Exactly one error, and it is WANT. Frees the run. */
static void expect_only(Run *r, const char *want)
{
	expect_error(r, want);
	cr_assert_eq(r->d.nerrors, 1, "expected one error, got:\n%s", msgs(r));
	run_free(r);
}

static Node *node_of(Graph *g, const char *value)
{
	int id = graph_value(g, value);
	cr_assert_geq(id, 0, "no value %%%s", value);
	return &g->nodes[g->values[id].node];
}

/* A one-statement graph; the statement is line 2 and starts its operator at 2:8. */
#define G1(stmt) \
	"graph @g(%x: <Tensor[Float32], (4, 8)>, %w: <Parameter[Float32], (8, 4)>) {\n  %y = " stmt "\n  return %y\n}\n"

/* MatMul on 8 devices in the given parallel_mode, with attributes ATTRS: the
 * statement is line 3 and `{in_strategy: (` puts the first tuple at 3:38. */
#define MATMUL(mode, attrs)                                                                        \
	"context {device_num: 8, parallel_mode: \"" mode "\"}\n"                                      \
	"graph @g(%x: <Tensor[Float32], (16, 32)>, %w: <Parameter[Float32], (32, 8)>) {\n"            \
	"  %y = MatMul(%x, %w) " attrs "\n"                                                           \
	"  return %y\n"                                                                               \
	"}\n"

/* The same with a layout L = ((2, 2, 2), dp sp mp) on line 2: statement on line 4. */
#define LAYOUT_MATMUL(devices, attrs)                                                              \
	"context {device_num: " devices ", parallel_mode: \"semi_auto_parallel\"}\n"                  \
	"layout L = Layout((2, 2, 2), (\"dp\", \"sp\", \"mp\"))\n"                                    \
	"graph @g(%x: <Tensor[Float32], (16, 32)>, %w: <Parameter[Float32], (32, 8)>) {\n"            \
	"  %y = MatMul(%x, %w) " attrs "\n"                                                           \
	"  return %y\n"                                                                               \
	"}\n"

/* ---- context ---- */

Test(context, defaults)
{
	Run *r = compile(G1("ReLU(%x)"));
	expect_clean(r);
	const Context *c = &r->m->ctx;
	cr_assert_eq(c->device_num, 1);
	cr_assert_eq(c->parallel_mode, PM_STAND_ALONE);
	cr_assert_eq(c->search_mode, SM_PROPAGATION);
	cr_assert_eq(c->dataset_mode, DS_FULL_BATCH);
	cr_assert_null(c->dataset_tuple);
	cr_assert_eq(c->seed, 0);
	run_free(r);
}

Test(context, every_key)
{
	Run *r = compile("context {device_num: 16, parallel_mode: \"auto_parallel\", search_mode: \"recursive_programming\"\n"
	                 "         dataset_strategy: \"data_parallel\", seed: 42}\n" G1("ReLU(%x)"));
	expect_clean(r);
	const Context *c = &r->m->ctx;
	cr_assert_eq(c->device_num, 16);
	cr_assert_eq(c->parallel_mode, PM_AUTO);
	cr_assert_eq(c->search_mode, SM_RECURSIVE);
	cr_assert_eq(c->dataset_mode, DS_DATA_PARALLEL);
	cr_assert_eq(c->seed, 42);
	run_free(r);
}

Test(context, every_parallel_mode)
{
	const char *names[] = {"stand_alone", "data_parallel", "semi_auto_parallel", "auto_parallel"};
	ParallelMode modes[] = {PM_STAND_ALONE, PM_DATA_PARALLEL, PM_SEMI_AUTO, PM_AUTO};
	for (int i = 0; i < 4; i++) {
		char head[128];
		snprintf(head, sizeof head, "context {parallel_mode: \"%s\", search_mode: \"sharding_propagation\"}\n",
		         names[i]);
		Run *r = compile2(head, G1("ReLU(%x)"));
		expect_clean(r);
		cr_assert_eq(r->m->ctx.parallel_mode, modes[i], "%s", names[i]);
		cr_assert_str_eq(parallel_mode_name(modes[i]), names[i]);
		run_free(r);
	}
}

Test(context, dataset_strategy_tuple)
{
	Run *r = compile("context {device_num: 8, dataset_strategy: ((8, 1), (8,))}\n"
	                 "graph @g(%x: <Tensor[Float32], (16, 4)>, %l: <Tensor[Int32], (16,)>,\n"
	                 "         %w: <Parameter[Float32], (4, 4)>) {\n"
	                 "  %y = MatMul(%x, %w)\n"
	                 "  return %y\n"
	                 "}\n");
	expect_clean(r);
	const Context *c = &r->m->ctx;
	cr_assert_eq(c->dataset_mode, DS_TUPLE);
	cr_assert_not_null(c->dataset_tuple);
	cr_assert_eq(c->dataset_tuple->nitems, 2);
	cr_assert_eq(c->dataset_tuple->items[1]->items[0]->i, 8);
	cr_assert_eq(c->dataset_src, r->m->src, "the tuple was written in the file");
	run_free(r);
}

Test(context, bad_values_each_reported_where_written)
{
	Run *r = compile("context {\n"
	                 "  device_num: 0,\n"
	                 "  parallel_mode: \"semi\",\n"
	                 "  search_mode: \"greedy\",\n"
	                 "  dataset_strategy: \"half_batch\",\n"
	                 "  seed: -1,\n"
	                 "  colour: 3\n"
	                 "}\n" G1("ReLU(%x)"));
	expect_error(r, "t.ir:2:15: error: device_num must be an integer from 1 to 1048576");
	expect_error(r, "t.ir:3:18: error: parallel_mode must be \"stand_alone\", \"data_parallel\", \"semi_auto_parallel\" "
	              "or \"auto_parallel\"");
	expect_error(r, "t.ir:4:16: error: search_mode must be \"sharding_propagation\" or \"recursive_programming\"");
	expect_error(r, "t.ir:5:21: error: dataset_strategy must be \"full_batch\", \"data_parallel\" or a tuple of "
	              "strategies, one per input");
	expect_error(r, "t.ir:6:9: error: seed must be a non-negative integer");
	expect_error(r, "t.ir:7:3: error: unknown context key 'colour' (expected device_num, parallel_mode, search_mode, "
	              "dataset_strategy, seed, precision, enable_parallel_optimizer, optimizer_level, "
	              "optimizer_weight_shard_size, pipeline_stages or pipeline_scheduler)");
	cr_assert_eq(r->d.nerrors, 6);
	run_free(r);
}

Test(context, bad_value_kinds)
{
	expect_only(compile("context {device_num: 1048577}\n" G1("ReLU(%x)")),
	            "t.ir:1:22: error: device_num must be an integer from 1 to 1048576");
	expect_only(compile("context {device_num: \"8\"}\n" G1("ReLU(%x)")), "t.ir:1:22: error: device_num must be");
	expect_only(compile("context {device_num: 8.0}\n" G1("ReLU(%x)")), "t.ir:1:22: error: device_num must be");
	expect_only(compile("context {parallel_mode: semi_auto_parallel}\n" G1("ReLU(%x)")),
	            "t.ir:1:25: error: parallel_mode must be");
	expect_only(compile("context {dataset_strategy: ((8, 0),)}\n" G1("ReLU(%x)")),
	            "t.ir:1:28: error: each dataset_strategy entry must be a tuple of positive integers, one per dim");
	expect_only(compile("context {dataset_strategy: ((8, 1), 8)}\n" G1("ReLU(%x)")),
	            "t.ir:1:28: error: each dataset_strategy entry must be a tuple of positive integers");
	expect_only(compile("context {seed: 1.5}\n" G1("ReLU(%x)")), "t.ir:1:16: error: seed must be a non-negative integer");
}

Test(context, check_context_alone)
{
	Run *r = parse("context {device_num: 4, seed: 9}\n");
	cr_assert(check_context(r->m, &r->d));
	cr_assert_eq(r->m->ctx.device_num, 4);
	cr_assert_eq(r->m->ctx.seed, 9);
	Run *bad = parse("context {device_num: -4}\n");
	cr_assert_not(check_context(bad->m, &bad->d));
	cr_assert_eq(bad->m->ctx.device_num, 1, "a bad value leaves the default");
	run_free(bad);
	run_free(r);
}

/* ---- command-line overrides: context_apply on parse_value_text ---- */

Test(overrides, replace_file_values)
{
	Run *r = parse("context {device_num: 8, parallel_mode: \"semi_auto_parallel\"}\n" G1("ReLU(%x)"));
	cr_assert(check_context(r->m, &r->d));
	Module *h1 = NULL, *h2 = NULL, *h3 = NULL;
	const char *err = NULL;
	Lit *v = parse_value_text("--device-num", "2", &h1);
	cr_assert_not_null(v);
	cr_assert(context_apply(&r->m->ctx, "device_num", v, &err), "%s", err);
	cr_assert_eq(r->m->ctx.device_num, 2);
	v = parse_value_text("--parallel-mode", "\"auto_parallel\"", &h2);
	cr_assert(context_apply(&r->m->ctx, "parallel_mode", v, &err), "%s", err);
	cr_assert_eq(r->m->ctx.parallel_mode, PM_AUTO);
	v = parse_value_text("--seed", "123", &h3);
	cr_assert(context_apply(&r->m->ctx, "seed", v, &err), "%s", err);
	cr_assert_eq(r->m->ctx.seed, 123);
	module_free(h1);
	module_free(h2);
	module_free(h3);
	cr_assert(check_names(r->m, &r->d) && infer_shapes(r->m, &r->d) && check_strategies(r->m, &r->d), "%s",
	          msgs(r));
	run_free(r);
}

Test(overrides, bad_values_say_what_is_expected)
{
	Context c = {.device_num = 1};
	Module *h = NULL;
	const char *err = NULL;
	Lit *v = parse_value_text("--device-num", "0", &h);
	cr_assert_not_null(v);
	cr_assert_not(context_apply(&c, "device_num", v, &err));
	cr_assert_str_eq(err, "device_num must be an integer from 1 to 1048576");
	cr_assert_eq(c.device_num, 1);
	module_free(h);

	v = parse_value_text("--parallel-mode", "\"semi\"", &h);
	cr_assert_not(context_apply(&c, "parallel_mode", v, &err));
	cr_assert(strstr(err, "parallel_mode must be"), "%s", err);
	module_free(h);

	v = parse_value_text("--colour", "3", &h);
	cr_assert_not(context_apply(&c, "colour", v, &err));
	cr_assert(strstr(err, "unknown context key"), "%s", err);
	module_free(h);
}

Test(overrides, text_that_is_not_one_value)
{
	const char *bad[] = {"(", "8 9", "", "} graph", "\"open"};
	for (int i = 0; i < 5; i++) {
		Module *h = NULL;
		cr_assert_null(parse_value_text("--seed", bad[i], &h), "'%s' is not one value", bad[i]);
		module_free(h);
	}
}

Test(overrides, device_num_override_reaches_group_check)
{
	Run *r = parse("context {device_num: 8}\n" G1("AllReduce(%x) {op: \"sum\", group: (0, 3)}"));
	cr_assert(check_context(r->m, &r->d));
	Module *h = NULL;
	const char *err = NULL;
	cr_assert(context_apply(&r->m->ctx, "device_num", parse_value_text("--device-num", "2", &h), &err));
	cr_assert_not(check_names(r->m, &r->d));
	cr_assert(strstr(msgs(r), "t.ir:3:45: error: a group member is a rank from 0 to 1"), "%s", msgs(r));
	module_free(h);
	run_free(r);
}

Test(overrides, device_num_override_breaks_a_strategy)
{
	Run *r = parse(MATMUL("semi_auto_parallel", "{in_strategy: ((2, 4), (4, 1))}"));
	cr_assert(check_context(r->m, &r->d));
	Module *h = NULL;
	const char *err = NULL;
	cr_assert(context_apply(&r->m->ctx, "device_num", parse_value_text("--device-num", "4", &h), &err));
	cr_assert(check_names(r->m, &r->d) && infer_shapes(r->m, &r->d));
	cr_assert_not(check_strategies(r->m, &r->d));
	cr_assert(strstr(msgs(r), "t.ir:3:38: error: input 0 of MatMul: the strategy (2, 4) uses 8 devices, which does "
	                          "not divide device_num 4"), "%s", msgs(r));
	module_free(h);
	run_free(r);
}

Test(overrides, dataset_strategy_tuple_is_reported_against_its_flag)
{
	Run *r = parse(G1("ReLU(%x)"));
	cr_assert(check_context(r->m, &r->d));
	Module *h = NULL;
	const char *err = NULL;
	Lit *v = parse_value_text("--dataset-strategy", "((4, 1), (4,))", &h);
	cr_assert(context_apply(&r->m->ctx, "dataset_strategy", v, &err), "%s", err);
	cr_assert_eq(r->m->ctx.dataset_mode, DS_TUPLE);
	cr_assert_eq(r->m->ctx.dataset_tuple, v);
	cr_assert_null(r->m->ctx.dataset_src, "the caller says where the value was written");
	r->m->ctx.dataset_src = h->src;   /* as the driver does */
	cr_assert(check_names(r->m, &r->d) && infer_shapes(r->m, &r->d));
	cr_assert_not(check_strategies(r->m, &r->d));
	cr_assert(strstr(msgs(r), "shardc: --dataset-strategy '((4, 1), (4,))': error: dataset_strategy gives 2 entries "
	                          "but @g has 1 Tensor input"), "%s", msgs(r));
	module_free(h);
	run_free(r);
}

/* ---- names ---- */

Test(names, duplicate_value)
{
	expect_only(compile("graph @g(%x: <Tensor[Float32], (2,)>) {\n"
	                    "  %y = ReLU(%x)\n"
	                    "  %y = Neg(%x)\n"
	                    "  return %y\n"
	                    "}\n"),
	            "t.ir:3:3: error: '%y' is defined twice in @g (first at line 2)");
	expect_only(compile("graph @g(%x: <Tensor[Float32], (2,)>,\n"
	                    "         %x: <Tensor[Float32], (2,)>) {\n"
	                    "  %y = ReLU(%x)\n"
	                    "  return %y\n"
	                    "}\n"),
	            "t.ir:2:10: error: '%x' is defined twice in @g (first at line 1)");
}

Test(names, same_name_in_two_graphs_is_fine)
{
	Run *r = compile("graph @f(%x: <Tensor[Float32], (2,)>) {\n  %y = ReLU(%x)\n  return %y\n}\n"
	                 "graph @g(%x: <Tensor[Float32], (2,)>) {\n  %y = Call(%x) {graph: @f}\n  return %y\n}\n");
	expect_clean(r);
	run_free(r);
}

Test(names, use_before_definition)
{
	expect_only(compile("graph @g(%x: <Tensor[Float32], (2,)>) {\n"
	                    "  %a = Add(%x, %b)\n"
	                    "  %b = Neg(%x)\n"
	                    "  return %a\n"
	                    "}\n"),
	            "t.ir:2:16: error: '%b' is used before it is defined (at line 3)");
	expect_only(compile("graph @g(%x: <Tensor[Float32], (2,)>) {\n"
	                    "  %c = ReLU(%c)\n"
	                    "  return %c\n"
	                    "}\n"),
	            "t.ir:2:13: error: '%c' is used before it is defined (at line 2)");
}

Test(names, undefined_value)
{
	expect_only(compile(G1("ReLU(%q)")), "t.ir:2:13: error: undefined value '%q' in @g");
	expect_only(compile("graph @g(%x: <Tensor[Float32], (2,)>) {\n  %y = ReLU(%x)\n  return %y, %nope\n}\n"),
	            "t.ir:3:14: error: undefined value '%nope' in @g");
}

Test(names, value_of_another_graph_is_undefined)
{
	expect_only(compile("graph @f(%a: <Tensor[Float32], (2,)>) {\n  %b = ReLU(%a)\n  return %b\n}\n"
	                    "graph @g(%x: <Tensor[Float32], (2,)>) {\n  %y = Neg(%b)\n  return %y\n}\n"),
	            "t.ir:6:12: error: undefined value '%b' in @g");
}

Test(names, undefined_graph)
{
	expect_only(compile(G1("Call(%x) {graph: @nope}")), "t.ir:2:25: error: undefined graph '@nope'");
}

Test(names, graph_called_before_defined)
{
	expect_only(compile("graph @main(%x: <Tensor[Float32], (2,)>) {\n  %y = Call(%x) {graph: @f}\n  return %y\n}\n"
	                    "graph @f(%x: <Tensor[Float32], (2,)>) {\n  %y = ReLU(%x)\n  return %y\n}\n"),
	            "t.ir:2:25: error: graph '@f' must be defined before @main calls it");
}

Test(names, graph_calling_itself)
{
	expect_only(compile("graph @g(%x: <Tensor[Float32], (2,)>) {\n  %y = Call(%x) {graph: @g}\n  return %y\n}\n"),
	            "t.ir:2:25: error: graph '@g' must be defined before @g calls it");
}

Test(names, call_without_graph)
{
	expect_only(compile(G1("Call(%x)")), "t.ir:2:8: error: Call needs a 'graph' attribute naming the called graph");
}

Test(names, graph_defined_twice)
{
	Run *r = compile("graph @f(%x: <Tensor[Float32], (2,)>) {\n  %y = ReLU(%x)\n  return %y\n}\n"
	                 "graph @f(%x: <Tensor[Float32], (2,)>) {\n  %y = Neg(%x)\n  return %y\n}\n");
	expect_error(r, "t.ir:5:7: error: graph '@f' is defined twice");
	cr_assert_eq(r->d.nerrors, 1);
	run_free(r);
}

Test(names, module_without_graph)
{
	expect_only(compile("context {device_num: 2}\n"),
	            "t.ir:1:1: error: the module has no graph (the last graph in the file is the entry)");
}

Test(names, unknown_operator)
{
	expect_only(compile("graph @g(%x: <Tensor[Float32], (2,)>) {\n  %y = ReLU(%x)\n  %z = Foo(%y)\n  return %z\n}\n"),
	            "t.ir:3:8: error: unknown operator 'Foo'");
}

/* fuse.c's operators are rows of the table but no names of the language. */
Test(names, fused_operator_unknown)
{
	for (int k = 0; k < OP_COUNT; k++) {
		OpKind got;
		cr_assert_eq(op_from_name(op_info[k].name, &got), op_in_language((OpKind)k), "%s", op_info[k].name);
	}
	expect_only(compile("graph @g(%x: <Tensor[Float32], (2, 4)>, %b: <Tensor[Float32], (4,)>) {\n"
	                    "  %y = BiasUnary(%x, %b)\n  return %y\n}\n"),
	            "t.ir:2:8: error: unknown operator 'BiasUnary'");
}

Test(names, resolved_ids)
{
	Run *r = compile("graph @g(%a: <Tensor[Float32], (2,)>, %b: <Tensor[Float32], (2,)>) {\n"
	                 "  %c = Add(%b, %a)\n"
	                 "  %d = Mul(%c, %c)\n"
	                 "  return %d, %a\n"
	                 "}\n");
	expect_clean(r);
	Graph *g = module_entry(r->m);
	Node *c = node_of(g, "c"), *d = node_of(g, "d");
	cr_assert_eq(c->in[0], 1);
	cr_assert_eq(c->in[1], 0);
	cr_assert_eq(d->in[0], 2);
	cr_assert_eq(d->in[1], 2);
	cr_assert_eq(g->nret, 2);
	cr_assert_eq(g->ret[0], 3);
	cr_assert_eq(g->ret[1], 0);
	run_free(r);
}

/* ---- attributes ---- */

Test(attributes, unknown_attribute_lists_the_allowed_ones)
{
	expect_only(compile(G1("ReLU(%x) {axis: 1}")),
	            "t.ir:2:18: error: ReLU has no attribute 'axis' (it takes: in_strategy, out_strategy, recompute, pipeline_stage)");
	expect_only(compile(G1("MatMul(%x, %w) {transpose: true}")),
	            "t.ir:2:24: error: MatMul has no attribute 'transpose' (it takes: transpose_a, transpose_b, in_strategy, "
	            "out_strategy, recompute, pipeline_stage)");
	expect_only(compile("context {device_num: 2}\n" G1("AllReduce(%x) {op: \"sum\", group: (0, 1), in_strategy: ((1, 1),)}")),
	            "t.ir:3:49: error: AllReduce has no attribute 'in_strategy' (it takes: op, group, recompute, pipeline_stage)");
	expect_only(compile(G1("ReduceSum(%x) {axes: 1}")),
	            "ReduceSum has no attribute 'axes' (it takes: axis, keep_dims, in_strategy, out_strategy, recompute, pipeline_stage)");
	expect_only(compile(G1("ReLU(%x) {recompute: 1}")), "t.ir:2:29: error: attribute 'recompute' of ReLU is true or false");
}

Test(attributes, string_keys_are_not_attribute_names)
{
	expect_only(compile(G1("Softmax(%x) {\"axis\": 1}")),
	            "t.ir:2:21: error: attribute keys are identifiers: write axis, not \"axis\"");
}

Test(attributes, wrong_kind)
{
	expect_only(compile(G1("MatMul(%x, %w) {transpose_a: 1}")),
	            "t.ir:2:37: error: attribute 'transpose_a' of MatMul is true or false");
	expect_only(compile(G1("Reshape(%x) {shape: 32}")), "t.ir:2:28: error: 'shape' is a tuple of integers, not an integer");
	expect_only(compile(G1("Reshape(%x) {shape: (4, 8.0)}")), "t.ir:2:32: error: 'shape' is a tuple of integers");
	expect_only(compile(G1("Cast(%x) {dtype: 3}")),
	            "t.ir:2:25: error: attribute 'dtype' of Cast is an element type such as Float16");
	expect_only(compile(G1("Cast(%x) {dtype: Float64}")), "t.ir:2:25: error: unknown element type 'Float64'");
	expect_only(compile(G1("Softmax(%x) {axis: \"last\"}")),
	            "t.ir:2:27: error: attribute 'axis' of Softmax is an integer or a tuple of integers");
	expect_only(compile(G1("LayerNorm(%x, %x, %x) {epsilon: \"small\"}")),
	            "attribute 'epsilon' of LayerNorm is a number");
	expect_only(compile(G1("LayerNorm(%x, %x, %x) {begin_norm_axis: 1.0}")),
	            "attribute 'begin_norm_axis' of LayerNorm is an integer");
	expect_only(compile(G1("Call(%x) {graph: \"f\"}")),
	            "t.ir:2:25: error: attribute 'graph' of Call is a graph name such as @f");
	expect_only(compile(G1("MatMul(%x, %w) {in_strategy: 4}")),
	            "t.ir:2:37: error: in_strategy is a tuple with one entry per tensor, e.g. ((2, 4), (4, 1)), not an integer");
}

Test(attributes, bad_values)
{
	expect_only(compile(G1("LayerNorm(%x, %x, %x) {epsilon: -0.5}")), "error: epsilon must not be negative");
	expect_only(compile("context {device_num: 4}\n" G1("AllReduce(%x) {op: \"avg\", group: (0, 1)}")),
	            "t.ir:3:27: error: attribute 'op' of AllReduce is \"sum\", \"max\", \"min\", \"prod\" or \"mean\"");
	expect_only(compile("context {device_num: 4}\n" G1("AllReduce(%x) {op: \"sum\", group: (0, 4)}")),
	            "t.ir:3:45: error: a group member is a rank from 0 to 3");
	expect_only(compile("context {device_num: 4}\n" G1("AllReduce(%x) {op: \"sum\", group: (1, 1)}")),
	            "t.ir:3:45: error: rank 1 appears twice in the group");
	expect_only(compile("context {device_num: 4}\n" G1("AllGather(%x) {group: ()}")),
	            "t.ir:3:30: error: 'group' is a non-empty tuple of global ranks");
}

Test(attributes, decoded_values)
{
	Run *r = compile("context {device_num: 4}\n"
	                 "graph @g(%x: <Tensor[Float32], (4, 8)>) {\n"
	                 "  %a = ReduceMean(%x) {axis: (0, -1), keep_dims: true}\n"
	                 "  %b = LayerNorm(%x, %x, %x) {begin_norm_axis: 0, begin_params_axis: 0, epsilon: 0.25}\n"
	                 "  %c = AllReduce(%x) {op: \"max\", group: (3, 1)}\n"
	                 "  %d = Cast(%x) {dtype: \"Int64\"}\n"
	                 "  %e = LayerNorm(%x, %x, %x) {begin_params_axis: 0}\n"
	                 "  %f = AllReduce(%x) {op: \"min\", group: (0, 2)}\n"
	                 "  %h = AllReduce(%x) {op: \"prod\", group: (0, 2)}\n"
	                 "  return %a, %b, %c, %d, %e, %f, %h\n"
	                 "}\n");
	expect_clean(r);
	Graph *g = module_entry(r->m);
	const Attrs *a = &node_of(g, "a")->a, *b = &node_of(g, "b")->a, *c = &node_of(g, "c")->a;
	cr_assert(a->has_axis && a->axis_is_tuple && a->keep_dims);
	cr_assert_eq(a->naxes, 2);
	cr_assert_eq(a->axes[1], -1);
	cr_assert_eq(b->epsilon, 0.25);
	cr_assert_eq(b->begin_norm_axis, 0);
	cr_assert_eq(c->reduce_op, REDUCE_MAX_OP);
	cr_assert_eq(c->ngroup, 2);
	cr_assert_eq(c->group[0], 3);
	cr_assert_eq(c->group[1], 1);
	cr_assert_eq(node_of(g, "d")->a.dtype, DT_I64);
	const Attrs *e = &node_of(g, "e")->a;
	cr_assert_eq(e->epsilon, 1e-5, "epsilon defaults to 1e-5");
	cr_assert_eq(e->begin_norm_axis, -1, "begin_norm_axis defaults to -1");
	cr_assert_eq(node_of(g, "f")->a.reduce_op, REDUCE_MIN_OP);
	cr_assert_eq(node_of(g, "h")->a.reduce_op, REDUCE_PROD_OP);
	run_free(r);
}

Test(attributes, operand_count)
{
	expect_only(compile(G1("MatMul(%x)")), "t.ir:2:8: error: MatMul takes 2 operands, 1 given");
	expect_only(compile(G1("ReLU(%x, %x)")), "t.ir:2:8: error: ReLU takes 1 operand, 2 given");
	expect_only(compile(G1("Concat()")), "t.ir:2:8: error: Concat takes at least 1 operand, 0 given");
	expect_only(compile(G1("LayerNorm(%x)")), "t.ir:2:8: error: LayerNorm takes 3 to 5 operands, 1 given");
}

/* ---- strategies ---- */

Test(strategies, valid_tuples_and_none)
{
	Run *r = compile(MATMUL("semi_auto_parallel", "{in_strategy: ((2, 4), (4, 1)), out_strategy: ((8, 1),)}"));
	expect_clean(r);
	const Attrs *a = &node_of(module_entry(r->m), "y")->a;
	cr_assert_eq(a->in_strategy.n, 2);
	cr_assert(a->in_strategy.t[0].given);
	cr_assert_eq(a->in_strategy.t[0].rank, 2);
	cr_assert_eq(a->in_strategy.t[0].split[0], 2);
	cr_assert_eq(a->in_strategy.t[0].split[1], 4);
	cr_assert_null(a->in_strategy.t[0].layout);
	cr_assert_eq(a->out_strategy.n, 1);
	cr_assert_eq(a->out_strategy.t[0].split[0], 8);
	run_free(r);

	r = compile(MATMUL("auto_parallel", "{in_strategy: ((4, 2), None)}"));
	expect_clean(r);
	a = &node_of(module_entry(r->m), "y")->a;
	cr_assert(a->in_strategy.t[0].given);
	cr_assert_not(a->in_strategy.t[1].given, "None: to be inferred");
	run_free(r);
}

Test(strategies, wrong_number_of_tuples)
{
	expect_only(compile(MATMUL("semi_auto_parallel", "{in_strategy: ((2, 4),)}")),
	            "t.ir:3:37: error: MatMul has 2 inputs but in_strategy gives 1");
	expect_only(compile(MATMUL("semi_auto_parallel", "{in_strategy: ((2, 4), (4, 1), (1, 1))}")),
	            "t.ir:3:37: error: MatMul has 2 inputs but in_strategy gives 3");
}

Test(strategies, wrong_length)
{
	expect_only(compile(MATMUL("semi_auto_parallel", "{in_strategy: ((2, 4), (4,))}")),
	            "t.ir:3:46: error: input 1 of MatMul has 2 dims (32, 8) but its strategy (4,) has 1 entry");
	expect_only(compile(MATMUL("semi_auto_parallel", "{in_strategy: ((2, 4, 1), (4, 1))}")),
	            "t.ir:3:38: error: input 0 of MatMul has 2 dims (16, 32) but its strategy (2, 4, 1) has 3 entries");
}

Test(strategies, more_slices_than_elements)
{
	expect_only(compile(MATMUL("semi_auto_parallel", "{in_strategy: ((1, 1), (1, 16))}")),
	            "t.ir:3:46: error: input 1 of MatMul: dim 1 of (32, 8) (size 8) cannot be cut into 16 slices");
}

/* GPT-2's vocabulary split 8 ways in the lookup: accepted (docs/language.md, Uneven splits). */
Test(strategies, uneven_vocabulary_lookup)
{
	Run *r = compile("context {device_num: 8, parallel_mode: \"semi_auto_parallel\"}\n"
	                 "graph @g(%i: <Tensor[Int32], (8, 4)>, %t: <Parameter[Float32], (50257, 64)>) {\n"
	                 "  %y = Gather(%t, %i) {axis: 0, in_strategy: ((8, 1), (1, 1))}\n  return %y\n}\n");
	expect_clean(r);
	run_free(r);
}

Test(strategies, product_not_dividing_device_num)
{
	expect_only(compile(MATMUL("semi_auto_parallel", "{in_strategy: ((16, 1), (1, 1))}")),
	            "t.ir:3:38: error: input 0 of MatMul: the strategy (16, 1) uses 16 devices, which does not divide "
	            "device_num 8");
	expect_only(compile(MATMUL("auto_parallel", "{in_strategy: ((1, 1), (2, 8))}")),
	            "t.ir:3:46: error: input 1 of MatMul: the strategy (2, 8) uses 16 devices, which does not divide "
	            "device_num 8");
}

Test(strategies, fewer_devices_than_device_num_is_fine)
{
	Run *r = compile(MATMUL("semi_auto_parallel", "{in_strategy: ((2, 2), (2, 1))}"));
	expect_clean(r);
	run_free(r);
}

Test(strategies, stand_alone_skips_the_device_check)
{
	Run *r = compile(MATMUL("stand_alone", "{in_strategy: ((16, 1), (1, 1))}"));
	expect_clean(r);
	run_free(r);
	r = compile(MATMUL("stand_alone", "{in_strategy: ((3, 1), (1, 1))}"));   /* uneven, on one device */
	expect_clean(r);
	run_free(r);
}

Test(strategies, bad_forms)
{
	expect_only(compile(MATMUL("semi_auto_parallel", "{in_strategy: ()}")), "t.ir:3:37: error: in_strategy is empty");
	expect_only(compile(MATMUL("semi_auto_parallel", "{in_strategy: (2, 4)}")),
	            "t.ir:3:38: error: a tensor strategy is a tuple of slice counts, a layout application or None, not an "
	            "integer");
	expect_only(compile(MATMUL("semi_auto_parallel", "{in_strategy: ((0, 1), (1, 1))}")),
	            "t.ir:3:39: error: a strategy number is a positive integer: how many slices that dim is cut into");
}

Test(strategies, out_strategy_count)
{
	expect_only(compile(MATMUL("semi_auto_parallel", "{in_strategy: ((2, 4), (4, 1)), out_strategy: ((2, 1), (2, 1))}")),
	            "t.ir:3:69: error: MatMul has one output but out_strategy gives 2");
	expect_only(compile(MATMUL("semi_auto_parallel", "{out_strategy: ((2, 1),)}")),
	            "t.ir:3:38: error: MatMul: out_strategy needs an in_strategy beside it");
	expect_only(compile(MATMUL("semi_auto_parallel", "{in_strategy: ((2, 4), (4, 1)), out_strategy: ((3, 1),)}")),
	            "t.ir:3:70: error: the output of MatMul: the strategy (3, 1) uses 3 devices, which does not divide "
	            "device_num 8");
}

/* ---- layouts ---- */

Test(layouts, decoded_axes)
{
	Run *r = compile(LAYOUT_MATMUL("8", "{in_strategy: (L(\"dp\", (\"sp\", \"mp\")), L((\"sp\", \"mp\"), \"None\"))}"));
	expect_clean(r);
	const Strategy *s = &node_of(module_entry(r->m), "y")->a.in_strategy;
	const TensorStrategy *x = &s->t[0], *w = &s->t[1];
	cr_assert_eq(x->layout, module_layout(r->m, "L"));
	cr_assert_eq(x->rank, 2);
	cr_assert_eq(x->split[0], 2);
	cr_assert_eq(x->split[1], 4);
	cr_assert_eq(x->naxes[0], 1);
	cr_assert_eq(x->axes[0][0], 0);
	cr_assert_eq(x->naxes[1], 2);
	cr_assert_eq(x->axes[1][0], 1);
	cr_assert_eq(x->axes[1][1], 2);
	cr_assert_eq(w->split[0], 4);
	cr_assert_eq(w->naxes[1], 0, "\"None\" leaves the dim whole");
	cr_assert_eq(w->split[1], 1);
	run_free(r);
}

Test(layouts, unknown_alias)
{
	expect_only(compile(LAYOUT_MATMUL("8", "{in_strategy: (L(\"dp\", \"xx\"), L(\"mp\", \"None\"))}")),
	            "t.ir:4:46: error: layout 'L' has no axis \"xx\" (its axes are \"dp\", \"sp\", \"mp\")");
}

Test(layouts, alias_used_twice)
{
	expect_only(compile(LAYOUT_MATMUL("8", "{in_strategy: (L(\"dp\", (\"sp\", \"dp\")), L(\"mp\", \"None\"))}")),
	            "t.ir:4:53: error: axis \"dp\" is used twice in one tensor layout");
	expect_only(compile(LAYOUT_MATMUL("8", "{in_strategy: (L(\"dp\", \"dp\"), L(\"mp\", \"None\"))}")),
	            "t.ir:4:46: error: axis \"dp\" is used twice in one tensor layout");
}

Test(layouts, device_matrix_product_must_be_device_num)
{
	expect_only(compile(LAYOUT_MATMUL("4", "{in_strategy: (L(\"dp\", \"sp\"), L(\"sp\", \"None\"))}")),
	            "t.ir:2:1: error: layout 'L' has a device matrix of 8 devices but device_num is 4");
}

Test(layouts, mixing_layouts_and_tuples)
{
	expect_only(compile(LAYOUT_MATMUL("8", "{in_strategy: (L(\"dp\", \"mp\"), (4, 1))}")),
	            "t.ir:4:53: error: in_strategy mixes layouts and tuples of slice counts; use one form");
	expect_only(compile(LAYOUT_MATMUL("8", "{in_strategy: ((2, 1), L(\"mp\", \"None\"))}")),
	            "t.ir:4:46: error: in_strategy mixes layouts and tuples of slice counts; use one form");
}

Test(layouts, two_layouts_in_one_strategy)
{
	expect_only(compile("context {device_num: 8, parallel_mode: \"semi_auto_parallel\"}\n"
	                    "layout L = Layout((2, 2, 2), (\"dp\", \"sp\", \"mp\"))\n"
	                    "layout M = Layout((8,), (\"all\",))\n"
	                    "graph @g(%x: <Tensor[Float32], (16, 32)>, %w: <Parameter[Float32], (32, 8)>) {\n"
	                    "  %y = MatMul(%x, %w) {in_strategy: (L(\"dp\", \"mp\"), M(\"all\", \"None\"))}\n"
	                    "  return %y\n"
	                    "}\n"),
	            "t.ir:5:53: error: all layouts of one in_strategy must come from one Layout ('L' and 'M' differ)");
}

Test(layouts, undeclared_layout_and_bad_dims)
{
	expect_only(compile(LAYOUT_MATMUL("8", "{in_strategy: (M(\"dp\", \"mp\"), None)}")),
	            "t.ir:4:38: error: 'M' is not a declared layout");
	expect_only(compile(LAYOUT_MATMUL("8", "{in_strategy: (L((\"dp\", \"None\"), \"mp\"), None)}")),
	            "t.ir:4:47: error: \"None\" cannot be combined with other axes");
	expect_only(compile(LAYOUT_MATMUL("8", "{in_strategy: (L(\"dp\", 2), None)}")),
	            "t.ir:4:46: error: a layout dim is an axis alias, a tuple of aliases or \"None\", not an integer");
	expect_only(compile(LAYOUT_MATMUL("8", "{in_strategy: (L, None)}")),
	            "t.ir:4:38: error: apply layout 'L' to one alias per tensor dim, as L(\"dp\", \"None\")");
}

Test(layouts, layout_split_must_fit_the_dim)
{
	expect_only(compile("context {device_num: 8, parallel_mode: \"semi_auto_parallel\"}\n"
	                    "layout L = Layout((8,), (\"all\",))\n"
	                    "graph @g(%x: <Tensor[Float32], (4, 32)>) {\n"
	                    "  %y = ReLU(%x) {in_strategy: (L(\"all\", \"None\"),)}\n"
	                    "  return %y\n"
	                    "}\n"),
	            "t.ir:4:32: error: input 0 of ReLU: dim 0 of (4, 32) (size 4) cannot be cut into 8 slices");
}

/* ---- shard ---- */

#define SHARD(shard)                                                                                \
	"context {device_num: 8, parallel_mode: \"semi_auto_parallel\"}\n"                            \
	"graph @dense(%x: <Tensor[Float32], (32, 128)>, %w: <Tensor[Float32], (128, 16)>) {\n"         \
	"  %1 = MatMul(%x, %w)\n"                                                                     \
	"  %2 = ReLU(%1)\n"                                                                           \
	"  return %2\n"                                                                               \
	"}\n"                                                                                         \
	"graph @main(%x: <Tensor[Float32], (32, 128)>, %w1: <Parameter[Float32], (128, 16)>) {\n"     \
	"  %r = Call(%x, %w1) {graph: @dense, shard: " shard "}\n"                                   \
	"  return %r\n"                                                                               \
	"}\n"

Test(shard, decoded)
{
	Run *r = compile(SHARD("{in_strategy: ((4, 2), None), parameter_plan: {\"w1\": (8, 1)}}"));
	expect_clean(r);
	Graph *g = module_entry(r->m);
	const Attrs *a = &node_of(g, "r")->a;
	cr_assert_eq(a->callee, module_graph(r->m, "dense"));
	cr_assert_not_null(a->shard);
	cr_assert_eq(a->shard->in.n, 2);
	cr_assert_eq(a->shard->in.t[0].split[0], 4);
	cr_assert_not(a->shard->in.t[1].given);
	cr_assert_eq(a->shard->nplan, 1);
	cr_assert_str_eq(a->shard->plan_names[0], "w1");
	cr_assert_eq(a->shard->plan[0].split[0], 8);
	cr_assert(g->contains_shard);
	cr_assert_not(module_graph(r->m, "dense")->contains_shard);
	run_free(r);
}

Test(shard, in_strategy_count_against_callee_inputs)
{
	expect_only(compile(SHARD("{in_strategy: ((4, 2),)}")),
	            "t.ir:8:59: error: @dense has 2 inputs but the shard in_strategy gives 1");
	expect_only(compile(SHARD("{in_strategy: ((3, 2), None)}")),
	            "t.ir:8:60: error: input 0 of @dense: the strategy (3, 2) uses 6 devices, which does not divide device_num 8");
}

Test(shard, parameter_plan_names_a_parameter)
{
	expect_only(compile(SHARD("{in_strategy: ((4, 2), None), parameter_plan: {\"x\": (8, 1)}}")),
	            "t.ir:8:92: error: parameter_plan names \"x\", which is not a Parameter of @main");
	expect_only(compile(SHARD("{in_strategy: ((4, 2), None), parameter_plan: {\"w\": (8, 1)}}")),
	            "t.ir:8:92: error: parameter_plan names \"w\", which is not a Parameter of @main");
	expect_only(compile(SHARD("{in_strategy: ((4, 2), None), parameter_plan: {w1: (8, 1)}}")),
	            "t.ir:8:92: error: parameter_plan keys are strings: \"w1\"");
	expect_only(compile(SHARD("{in_strategy: ((4, 2), None), parameter_plan: {\"w1\": (3, 1)}}")),
	            "t.ir:8:98: error: parameter 'w1': the strategy (3, 1) uses 3 devices, which does not divide device_num 8");
}

Test(shard, needs_in_strategy_and_known_keys)
{
	expect_only(compile(SHARD("{}")),
	            "t.ir:8:45: error: shard needs an in_strategy, one entry per input of the called graph");
	Run *r = compile(SHARD("{in_strategy: ((4, 2), None), strategy: 1}"));
	expect_error(r, "t.ir:8:75: error: unknown shard key 'strategy' (expected in_strategy, out_strategy, parameter_plan)");
	run_free(r);
}

#define NESTED(mid_call)                                                                            \
	"context {device_num: 8, parallel_mode: \"semi_auto_parallel\"}\n"                            \
	"graph @inner(%x: <Tensor[Float32], (32, 8)>) {\n  %1 = ReLU(%x)\n  return %1\n}\n"            \
	"graph @mid(%x: <Tensor[Float32], (32, 8)>) {\n  %1 = Call(%x) " mid_call "\n  return %1\n}\n" \
	"graph @main(%x: <Tensor[Float32], (32, 8)>) {\n"                                             \
	"  %r = Call(%x) {graph: @mid, shard: {in_strategy: ((8, 1),)}}\n"                            \
	"  return %r\n"                                                                               \
	"}\n"

Test(shard, nested_shard_is_an_error)
{
	expect_only(compile(NESTED("{graph: @inner, shard: {in_strategy: ((8, 1),)}}")),
	            "t.ir:11:38: error: nested shard: @mid already calls a graph with shard");
}

Test(shard, shard_of_a_graph_that_calls_without_shard_is_fine)
{
	Run *r = compile(NESTED("{graph: @inner}"));
	expect_clean(r);
	run_free(r);
}

Test(shard, nested_through_a_plain_call)
{
	expect_only(compile("context {device_num: 8, parallel_mode: \"semi_auto_parallel\"}\n"
	                    "graph @inner(%x: <Tensor[Float32], (32, 8)>) {\n  %1 = ReLU(%x)\n  return %1\n}\n"
	                    "graph @mid(%x: <Tensor[Float32], (32, 8)>) {\n"
	                    "  %1 = Call(%x) {graph: @inner, shard: {in_strategy: ((8, 1),)}}\n  return %1\n}\n"
	                    "graph @outer(%x: <Tensor[Float32], (32, 8)>) {\n  %1 = Call(%x) {graph: @mid}\n  return %1\n}\n"
	                    "graph @main(%x: <Tensor[Float32], (32, 8)>) {\n"
	                    "  %r = Call(%x) {graph: @outer, shard: {in_strategy: ((8, 1),)}}\n"
	                    "  return %r\n"
	                    "}\n"),
	            "t.ir:15:40: error: nested shard: @outer already calls a graph with shard");
}

/* Checking for a nested shard must not walk every call path: n graphs that
 * each call the previous one twice have 2^n paths. 40 graphs would inline to
 * 2^39 operators and are refused (only) for that; 23 inline to 2^22, under
 * the limit, and check clean. */
static char *doubling_graphs(int n)
{
	StrBuf b = {0};
	sb_puts(&b, "graph @g0(%x: <Tensor[Float32], (8,)>) {\n  %y = ReLU(%x)\n  return %y\n}\n");
	for (int i = 1; i < n; i++)
		sb_printf(&b, "graph @g%d(%%x: <Tensor[Float32], (8,)>) {\n  %%a = Call(%%x) {graph: @g%d}\n"
		          "  %%b = Call(%%a) {graph: @g%d}\n  return %%b\n}\n", i, i - 1, i - 1);
	sb_printf(&b, "graph @main(%%x: <Tensor[Float32], (8,)>) {\n"
	              "  %%y = Call(%%x) {graph: @g%d, shard: {in_strategy: ((1,),)}}\n  return %%y\n}\n", n - 1);
	return b.data;
}

Test(shard, nested_check_is_not_exponential, .timeout = 5)
{
	char *text = doubling_graphs(40);
	expect_only(compile(text), "t.ir:122:8: error: inlining @g23 here takes @g24 to 16777216 operators, over the "
	                           "limit of 10000000 (@main would have 549755813888)");
	free(text);
	text = doubling_graphs(23);
	Run *r = compile(text);
	free(text);
	expect_clean(r);
	run_free(r);
}

/* ---- dataset_strategy ---- */

#define DATASET(tuple)                                                                              \
	"context {device_num: 8, parallel_mode: \"semi_auto_parallel\", dataset_strategy: " tuple "}\n" \
	"graph @g(%x: <Tensor[Float32], (16, 32)>, %w: <Parameter[Float32], (32, 8)>,\n"               \
	"         %l: <Tensor[Int32], (16,)>) {\n"                                                    \
	"  %y = MatMul(%x, %w)\n"                                                                     \
	"  return %y, %l\n"                                                                           \
	"}\n"

Test(dataset_strategy, one_entry_per_tensor_input)
{
	Run *r = compile(DATASET("((8, 1), (8,))"));
	expect_clean(r);
	run_free(r);
	expect_only(compile(DATASET("((8, 1),)")),
	            "t.ir:1:80: error: dataset_strategy gives 1 entry but @g has 2 Tensor inputs");
	expect_only(compile(DATASET("((8, 1), (8,), (1, 1))")),
	            "t.ir:1:80: error: dataset_strategy gives 3 entries but @g has 2 Tensor inputs");
}

Test(dataset_strategy, entries_are_checked_against_the_inputs)
{
	expect_only(compile(DATASET("((3, 1), (8,))")),
	            "t.ir:1:81: error: input '%x': the strategy (3, 1) uses 3 devices, which does not divide device_num 8");
	expect_only(compile(DATASET("((8, 1), (8, 1))")),
	            "t.ir:1:89: error: input '%l' has 1 dim (16,) but its strategy (8, 1) has 2 entries");
	expect_only(compile(DATASET("((16, 1), (8,))")),
	            "t.ir:1:81: error: input '%x': the strategy (16, 1) uses 16 devices, which does not divide device_num 8");
}

/* ---- train ---- */

#define TRAIN(graph_body, train)                                                                    \
	"graph @g(%x: <Tensor[Float32], (4, 8)>, %t: <Tensor[Float32], (4, 2)>,\n"                   \
	"         %w: <Parameter[Float32], (8, 2)>) {\n" graph_body "}\n"                             \
	"train " train "\n"

#define MLP "  %y = MatMul(%x, %w)\n  %loss = MSELoss(%y, %t)\n  return %loss\n"

Test(train, decoded_with_defaults)
{
	Run *r = compile(TRAIN(MLP, "{loss: %loss}"));
	expect_clean(r);
	const Train *t = r->m->train;
	cr_assert_eq(t->loss, graph_value(module_entry(r->m), "loss"));
	cr_assert_eq(t->optimizer, OPT_SGD);
	cr_assert_eq(t->learning_rate, 0.1);   /* nn.SGD's default */
	cr_assert_eq(t->steps, 1);
	run_free(r);
}

Test(train, every_optimizer_argument)
{
	Run *r = compile(TRAIN(MLP, "{loss: %loss, steps: 5,\n"
	                            "       optimizer: Adam(learning_rate: 0.001, beta1: 0.8, beta2: 0.99, eps: 1e-7, "
	                            "weight_decay: 1)}"));
	expect_clean(r);
	const Train *t = r->m->train;
	cr_assert_eq(t->optimizer, OPT_ADAM);
	cr_assert_eq(t->learning_rate, 0.001);
	cr_assert_eq(t->beta1, 0.8);
	cr_assert_eq(t->beta2, 0.99);
	cr_assert_eq(t->eps, 1e-7);
	cr_assert_eq(t->weight_decay, 1.0);
	cr_assert_eq(t->steps, 5);
	run_free(r);

	r = compile(TRAIN(MLP, "{loss: %loss, optimizer: Momentum(learning_rate: 0.2, momentum: 0.1)}"));
	expect_clean(r);
	cr_assert_eq(r->m->train->optimizer, OPT_MOMENTUM);
	cr_assert_eq(r->m->train->learning_rate, 0.2);
	cr_assert_eq(r->m->train->momentum, 0.1);
	run_free(r);

	r = compile(TRAIN(MLP, "{loss: %loss, optimizer: SGD}"));
	expect_clean(r);
	cr_assert_eq(r->m->train->optimizer, OPT_SGD);
	run_free(r);
}

/* learning_rate: a schedule, its arguments in sc_learning_rate's order with
 * MindSpore's defaults; bad ones name the argument and the fix. */
Test(train, learning_rate_schedules)
{
	Run *r = compile(TRAIN(MLP, "{loss: %loss, optimizer: Adam(learning_rate: CosineDecayLR(min_lr: 1e-5, max_lr: "
	                            "1e-3, decay_steps: 100))}"));
	expect_clean(r);
	const Train *t = r->m->train;
	cr_assert_eq(t->lr_schedule, LR_COSINE);
	cr_assert_eq(t->lr_nargs, 3);
	cr_assert_eq(t->lr_args[0], 1e-5);
	cr_assert_eq(t->lr_args[1], 1e-3);
	cr_assert_eq(t->lr_args[2], 100.0);
	run_free(r);
	r = compile(TRAIN(MLP, "{loss: %loss, optimizer: SGD(learning_rate: PolynomialDecayLR(learning_rate: 0.1, "
	                       "end_learning_rate: 0.01, decay_steps: 4, power: 2.0))}"));
	expect_clean(r);
	cr_assert_eq(r->m->train->lr_schedule, LR_POLYNOMIAL);
	cr_assert_eq(r->m->train->lr_args[4], 0.0);   /* update_decay_steps: false */
	run_free(r);
	r = compile(TRAIN(MLP, "{loss: %loss, optimizer: SGD(learning_rate: CosineWithWarmUpLR(learning_rate: 0.1, "
	                       "total_steps: 10))}"));
	expect_clean(r);
	cr_assert_eq(r->m->train->lr_schedule, LR_COSINE_WARMUP);
	cr_assert_eq(r->m->train->lr_args[1], 0.0);   /* warmup_steps 0, lr_end 0, warmup_lr_init 0 */
	cr_assert_eq(r->m->train->lr_args[2], 10.0);
	run_free(r);

	expect_only(compile(TRAIN(MLP, "{loss: %loss, optimizer: SGD(learning_rate: CosineDecay(max_lr: 0.1))}")),
	            "t.ir:7:51: error: unknown learning-rate schedule 'CosineDecay' (learning_rate is a number or one of "
	            "WarmUpLR, CosineDecayLR, PolynomialDecayLR, ExponentialDecayLR, CosineWithWarmUpLR) (did you mean "
	            "'CosineDecayLR'?)");
	expect_only(compile(TRAIN(MLP, "{loss: %loss, optimizer: SGD(learning_rate: WarmUpLR(learning_rate: 0.1, "
	                               "warmup_steps: 0))}")),
	            "t.ir:7:94: error: WarmUpLR's 'warmup_steps' is a positive integer (steps)");
	expect_only(compile(TRAIN(MLP, "{loss: %loss, optimizer: SGD(learning_rate: CosineDecayLR(min_lr: 0.1, "
	                               "max_lr: 0.01, decay_steps: 10))}")),
	            "t.ir:7:51: error: CosineDecayLR's max_lr must be greater than its min_lr (it decays from max_lr to "
	            "min_lr)");
	expect_only(compile(TRAIN(MLP, "{loss: %loss, optimizer: SGD(learning_rate: ExponentialDecayLR(learning_rate: "
	                               "0.1))}")),
	            "t.ir:7:51: error: ExponentialDecayLR needs 'decay_rate', 'decay_steps' (MindSpore's has no default), "
	            "e.g. ExponentialDecayLR(learning_rate: 0.1, decay_rate: 0.9, decay_steps: 10)");
}

/* nn.SGD's, nn.Momentum's and nn.AdamWeightDecay's options with MindSpore's
 * defaults, and gradient clipping by global norm. */
Test(train, mindspore_optimizer_options)
{
	Run *r = compile(TRAIN(MLP, "{loss: %loss, optimizer: SGD(learning_rate: 0.2, momentum: 0.9, dampening: 0.1, "
	                            "weight_decay: 0.01)}"));
	expect_clean(r);
	const Train *t = r->m->train;
	cr_assert_eq(t->optimizer, OPT_SGD);
	cr_assert_eq(t->momentum, 0.9);
	cr_assert_eq(t->dampening, 0.1);
	cr_assert_eq(t->weight_decay, 0.01);
	cr_assert_not(t->nesterov);
	cr_assert_eq(t->clip_global_norm, 0);
	run_free(r);

	r = compile(TRAIN(MLP, "{loss: %loss, optimizer: SGD(momentum: 0.9, nesterov: true), clip_global_norm: 1}"));
	expect_clean(r);
	cr_assert(r->m->train->nesterov);
	cr_assert_eq(r->m->train->learning_rate, 0.1);
	cr_assert_eq(r->m->train->dampening, 0);
	cr_assert_eq(r->m->train->clip_global_norm, 1.0);
	run_free(r);

	r = compile(TRAIN(MLP, "{loss: %loss, optimizer: Momentum(learning_rate: 0.1, momentum: 0.9, weight_decay: 1e-4, "
	                       "use_nesterov: true)}"));
	expect_clean(r);
	cr_assert_eq(r->m->train->optimizer, OPT_MOMENTUM);
	cr_assert_eq(r->m->train->weight_decay, 1e-4);
	cr_assert(r->m->train->nesterov);
	run_free(r);

	r = compile(TRAIN(MLP, "{loss: %loss, optimizer: AdamWeightDecay}"));   /* MindSpore's defaults */
	expect_clean(r);
	t = r->m->train;
	cr_assert_eq(t->optimizer, OPT_ADAM_WEIGHT_DECAY);
	cr_assert_eq(t->learning_rate, 1e-3);
	cr_assert_eq(t->beta1, 0.9);
	cr_assert_eq(t->beta2, 0.999);
	cr_assert_eq(t->eps, 1e-6);
	cr_assert_eq(t->weight_decay, 0);
	run_free(r);
}

/* nn.Lamb: learning_rate without a default, beta1 0.9, beta2 0.999, eps 1e-6,
 * weight_decay 0, and _check_param_value's ranges; not yet with loss
 * scaling (its norms would be of the scaled gradients). */
Test(train, lamb_as_mindspore)
{
	Run *r = compile(TRAIN(MLP, "{loss: %loss, optimizer: Lamb(learning_rate: 0.1)}"));
	expect_clean(r);
	const Train *t = r->m->train;
	cr_assert_eq(t->optimizer, OPT_LAMB);
	cr_assert_eq(t->learning_rate, 0.1);
	cr_assert_eq(t->beta1, 0.9);
	cr_assert_eq(t->beta2, 0.999);
	cr_assert_eq(t->eps, 1e-6);
	cr_assert_eq(t->weight_decay, 0);
	run_free(r);
	r = compile(TRAIN(MLP, "{loss: %loss, optimizer: Lamb(learning_rate: 0.01, beta1: 0.8, beta2: 0.99, eps: 1e-8, "
	                       "weight_decay: 0.01)}"));
	expect_clean(r);
	t = r->m->train;
	cr_assert(t->beta1 == 0.8 && t->beta2 == 0.99 && t->eps == 1e-8 && t->weight_decay == 0.01);
	run_free(r);
	expect_only(compile(TRAIN(MLP, "{loss: %loss, optimizer: Lamb}")),
	            "t.ir:7:32: error: Lamb needs learning_rate (MindSpore's nn.Lamb has no default), e.g. "
	            "Lamb(learning_rate: 0.1)");
	expect_only(compile(TRAIN(MLP, "{loss: %loss, optimizer: Lamb(learning_rate: 0.1, beta1: -0.9)}")),
	            "t.ir:7:64: error: Lamb's 'beta1' is between 0 and 1, both excluded");
	expect_only(compile(TRAIN(MLP, "{loss: %loss, optimizer: Lamb(learning_rate: 0.1, beta2: 1.0)}")),
	            "t.ir:7:64: error: Lamb's 'beta2' is between 0 and 1, both excluded");
	expect_only(compile(TRAIN(MLP, "{loss: %loss, optimizer: Lamb(learning_rate: 0.1, eps: 0)}")),
	            "t.ir:7:62: error: Lamb's 'eps' is greater than 0");
	expect_only(compile(TRAIN(MLP, "{loss: %loss, optimizer: Lamb(learning_rate: 0.1, weight_decay: -0.1)}")),
	            "t.ir:7:71: error: Lamb's 'weight_decay' is at least 0");
	expect_only(compile(TRAIN(MLP, "{loss: %loss, optimizer: Lamb(learning_rate: 0.1, momentum: 0.9)}")),
	            "t.ir:7:57: error: Lamb has no argument 'momentum' (it takes learning_rate, beta1, beta2, eps, "
	            "weight_decay)");
	expect_only(compile(TRAIN(MLP, "{loss: %loss, optimizer: Lamb(learning_rate: 0.1), precision: \"fp16\"}")),
	            "t.ir:7:32: error: Lamb with precision: \"fp16\": not yet (its trust ratio's norms would be taken of "
	            "the scaled gradients); use precision: \"bf16\"");
}

Test(train, optimizer_options_checked_as_mindspore_does)
{
	expect_only(compile(TRAIN(MLP, "{loss: %loss, optimizer: SGD(nesterov: true)}")),
	            "t.ir:7:32: error: SGD with nesterov needs momentum > 0 and dampening 0 (as MindSpore's nn.SGD)");
	expect_only(compile(TRAIN(MLP, "{loss: %loss, optimizer: SGD(momentum: 0.9, dampening: 0.5, nesterov: true)}")),
	            "t.ir:7:32: error: SGD with nesterov needs momentum > 0 and dampening 0 (as MindSpore's nn.SGD)");
	expect_only(compile(TRAIN(MLP, "{loss: %loss, optimizer: SGD(nesterov: 1)}")),
	            "t.ir:7:46: error: 'nesterov' is true or false");
	expect_only(compile(TRAIN(MLP, "{loss: %loss, optimizer: SGD(momentum: -0.5)}")),
	            "t.ir:7:46: error: SGD's 'momentum' is at least 0");
	expect_only(compile(TRAIN(MLP, "{loss: %loss, optimizer: Momentum(learning_rate: 0.1, momentum: 0.9, "
	                               "weight_decay: -1)}")),
	            "t.ir:7:90: error: Momentum's 'weight_decay' is at least 0");
	expect_only(compile(TRAIN(MLP, "{loss: %loss, optimizer: AdamWeightDecay(beta1: 1.0)}")),
	            "t.ir:7:55: error: AdamWeightDecay's 'beta1' is between 0 and 1, both excluded");
	expect_only(compile(TRAIN(MLP, "{loss: %loss, optimizer: Adam(eps: 0)}")),
	            "t.ir:7:42: error: Adam's 'eps' is greater than 0");
	expect_only(compile(TRAIN(MLP, "{loss: %loss, clip_global_norm: 0}")),
	            "t.ir:7:39: error: clip_global_norm is a number greater than 0 (the largest global norm of the "
	            "gradients)");
}

Test(train, loss_must_be_a_scalar)
{
	expect_only(compile(TRAIN("  %y = MatMul(%x, %w)\n  return %y\n", "{loss: %y}")),
	            "t.ir:6:14: error: the loss must be a float scalar; '%y' is Float32 (4, 2)");
	expect_only(compile(TRAIN("  %y = MatMul(%x, %w)\n  %s = ReduceSum(%y) {axis: 1}\n  return %s\n", "{loss: %s}")),
	            "t.ir:7:14: error: the loss must be a float scalar; '%s' is Float32 (4,)");
}

Test(train, loss_must_be_in_the_entry_graph)
{
	expect_only(compile(TRAIN(MLP, "{loss: %q}")), "t.ir:7:14: error: loss '%q' is not a value of the entry graph @g");
	expect_only(compile(TRAIN(MLP, "{loss: 3}")), "t.ir:7:14: error: loss is a value of the entry graph, such as %loss");
}

Test(train, missing_loss)
{
	expect_only(compile(TRAIN(MLP, "{steps: 3}")), "t.ir:7:1: error: the train block needs 'loss: %value'");
}

Test(train, unknown_optimizer_argument)
{
	expect_only(compile(TRAIN(MLP, "{loss: %loss, optimizer: Momentum(learning_rate: 0.2, momentum: 0.1, beta1: 0.9)}")),
	            "t.ir:7:76: error: Momentum has no argument 'beta1' (it takes learning_rate, momentum, weight_decay, "
	            "use_nesterov)");
	expect_only(compile(TRAIN(MLP, "{loss: %loss, optimizer: Momentum(momentum: 0.9)}")),
	            "t.ir:7:32: error: Momentum needs learning_rate and momentum (MindSpore's nn.Momentum has no default), "
	            "e.g. Momentum(learning_rate: 0.1, momentum: 0.9)");
	expect_only(compile(TRAIN(MLP, "{loss: %loss, optimizer: SGD(beta1: 0.9)}")),
	            "t.ir:7:36: error: SGD has no argument 'beta1' (it takes learning_rate, momentum, dampening, "
	            "weight_decay, nesterov)");
	expect_only(compile(TRAIN(MLP, "{loss: %loss, optimizer: SGD(0.1)}")),
	            "t.ir:7:36: error: name the optimizer's arguments: SGD(learning_rate: ...)");
	expect_only(compile(TRAIN(MLP, "{loss: %loss, optimizer: SGD(learning_rate: \"fast\")}")),
	            "t.ir:7:51: error: 'learning_rate' is a number or a schedule, such as CosineDecayLR(min_lr: 1e-5, "
	            "max_lr: 1e-3, decay_steps: 100)");
	expect_only(compile(TRAIN(MLP, "{loss: %loss, optimizer: RMSProp(learning_rate: 0.1)}")),
	            "t.ir:7:32: error: optimizer is SGD(...), Momentum(...), Adam(...), AdamWeightDecay(...) or Lamb(...)");
}

/* An argument named twice is a mistake, as in Python; the second must not
 * silently win. */
Test(train, optimizer_argument_named_twice)
{
	Run *r = compile(TRAIN(MLP, "{loss: %loss, optimizer: SGD(learning_rate: 0.1, learning_rate: 0.2)}"));
	cr_assert_not(r->ok, "accepted; learning_rate is %g", r->m->train->learning_rate);
	expect_error(r, "t.ir:7:");
	expect_error(r, "learning_rate");
	run_free(r);
}

Test(train, other_keys)
{
	expect_only(compile(TRAIN(MLP, "{loss: %loss, epochs: 3}")),
	            "t.ir:7:21: error: unknown train key 'epochs' (expected loss, optimizer, steps, accumulate_steps, micro_batches, clip_global_norm, "
	            "precision, init_loss_scale, scale_factor, scale_window, recompute, weight_decay_params)");
	expect_only(compile(TRAIN(MLP, "{loss: %loss, steps: 0}")), "t.ir:7:28: error: steps is a positive integer");
	expect_only(compile(TRAIN(MLP, "{loss: %loss, recompute: 1}")),
	            "t.ir:7:32: error: recompute is true (recompute every layer's operators in the backward pass, keeping "
	            "the values between layers), \"selective\" (only attention's scores and Softmax) or false");
	expect_only(compile(TRAIN(MLP, "{loss: %loss, recompute: \"some\"}")),
	            "t.ir:7:32: error: recompute is true (recompute every layer's operators in the backward pass, keeping "
	            "the values between layers), \"selective\" (only attention's scores and Softmax) or false");
	Run *r = compile(TRAIN(MLP, "{loss: %loss, recompute: \"selective\"}"));
	cr_assert(r->ok, "%s", msgs(r));
	cr_assert_eq(r->m->train->recompute, RECOMPUTE_SELECTIVE);
	run_free(r);
}

Test(train, precision)
{
	Run *r = compile(TRAIN(MLP, "{loss: %loss, precision: \"bf16\"}"));
	cr_assert(r->ok);
	cr_assert_eq(r->m->train->precision, DT_BF16);
	run_free(r);
	r = compile(TRAIN(MLP, "{loss: %loss, precision: \"fp16\", init_loss_scale: 1024, scale_window: 5}"));
	cr_assert(r->ok);
	cr_assert_eq(r->m->train->precision, DT_F16);
	cr_assert_eq(r->m->train->init_loss_scale, 1024);
	cr_assert_eq(r->m->train->scale_factor, 2);   /* DynamicLossScaleManager's defaults */
	cr_assert_eq(r->m->train->scale_window, 5);
	run_free(r);
	expect_only(compile(TRAIN(MLP, "{loss: %loss, precision: \"half\"}")),
	            "t.ir:7:32: error: precision is \"bf16\", \"fp16\" or \"fp32\" (the type matrix products and "
	            "elementwise operators compute in; parameters stay Float32)");
	expect_only(compile(TRAIN(MLP, "{loss: %loss, precision: \"bf16\", scale_window: 5}")),
	            "t.ir:7:54: error: loss scaling is for precision: \"fp16\" (bf16 has Float32's exponent range)");
	expect_only(compile(TRAIN(MLP, "{loss: %loss, precision: \"fp16\", scale_factor: 1}")),
	            "t.ir:7:54: error: scale_factor is a number greater than 1");
	expect_only(compile(TRAIN(MLP, "{loss: %loss, precision: \"fp16\", init_loss_scale: 0.5}")),
	            "t.ir:7:57: error: init_loss_scale is a number at least 1");
	expect_only(compile(TRAIN(MLP, "{loss: %loss, precision: \"fp16\", clip_global_norm: 1}")),
	            "t.ir:7:1: error: clip_global_norm with precision: \"fp16\": not yet (the norm would be taken of the "
	            "scaled gradients)");
}

Test(train, needs_a_parameter)
{
	expect_only(compile("graph @g(%x: <Tensor[Float32], (4,)>) {\n  %l = ReduceSum(%x)\n  return %l\n}\n"
	                    "train {loss: %l}\n"),
	            "t.ir:5:1: error: the train block has nothing to train: @g has no Parameter");
}

/* ---- initializers ---- */

#define INIT(type, init) "graph @g(%x: <" type ", (2,)> = " init ") {\n  %y = Neg(%x)\n  return %y\n}\n"

Test(initializers, every_valid_form)
{
	const char *ok[][2] = {
		{"Tensor[Float32]", "zeros"},           {"Parameter[Float32]", "ones"},
		{"Tensor[Int32]", "constant(3)"},       {"Tensor[Float16]", "uniform(-1, 1.5)"},
		{"Parameter[BFloat16]", "normal(0.1)"}, {"Tensor[Int64]", "randint(0, 10)"},
		{"Tensor[Bool]", "constant(1)"},        {"Tensor[Float32]", "normal(0)"},
	};
	for (int i = 0; i < 8; i++) {
		char text[256];
		snprintf(text, sizeof text, "graph @g(%%x: <%s, (2,)> = %s) {\n  %%y = Neg(%%x)\n  return %%y\n}\n", ok[i][0],
		         ok[i][1]);
		Run *r = compile(text);
		cr_assert(r->ok, "%s on %s:\n%s", ok[i][1], ok[i][0], msgs(r));
		run_free(r);
	}
}

Test(initializers, unknown)
{
	expect_only(compile(INIT("Tensor[Float32]", "gaussian(1)")),
	            "t.ir:1:40: error: unknown initializer 'gaussian' (expected zeros, ones, constant(v), uniform(lo, hi), "
	            "normal(std) or randint(lo, hi))");
}

Test(initializers, wrong_argument_count)
{
	expect_only(compile(INIT("Tensor[Float32]", "uniform(0)")), "t.ir:1:40: error: uniform takes 2 arguments, 1 given");
	expect_only(compile(INIT("Tensor[Float32]", "zeros(1)")), "t.ir:1:40: error: zeros takes 0 arguments, 1 given");
	expect_only(compile(INIT("Tensor[Float32]", "constant")), "t.ir:1:40: error: constant takes 1 argument, 0 given");
}

Test(initializers, kind_of_element_type)
{
	expect_only(compile(INIT("Tensor[Float32]", "randint(0, 10)")),
	            "t.ir:1:40: error: randint does not fit '%x' of type Float32");
	expect_only(compile(INIT("Tensor[Bool]", "randint(0, 2)")), "t.ir:1:37: error: randint does not fit '%x' of type Bool");
	expect_only(compile(INIT("Tensor[Int32]", "uniform(0, 1)")), "t.ir:1:38: error: uniform does not fit '%x' of type Int32");
	expect_only(compile(INIT("Tensor[Int32]", "normal(1)")), "t.ir:1:38: error: normal does not fit '%x' of type Int32");
}

Test(initializers, bad_arguments)
{
	expect_only(compile(INIT("Tensor[Int32]", "randint(5, 5)")), "t.ir:1:38: error: randint(lo, hi) needs lo < hi");
	expect_only(compile(INIT("Tensor[Float32]", "normal(-1)")), "t.ir:1:40: error: normal(std) needs std >= 0");
	expect_only(compile(INIT("Tensor[Float32]", "uniform(lo: 0, 1)")),
	            "t.ir:1:52: error: initializer arguments are plain numbers");
	expect_only(compile(INIT("Tensor[Float32]", "constant(\"one\")")),
	            "t.ir:1:49: error: initializer arguments are plain numbers");
}

Test(initializers, only_on_the_entry_graph)
{
	expect_only(compile("graph @f(%a: <Tensor[Float32], (2,)> = zeros) {\n  %b = Neg(%a)\n  return %b\n}\n"
	                    "graph @g(%x: <Tensor[Float32], (2,)>) {\n  %y = Call(%x) {graph: @f}\n  return %y\n}\n"),
	            "t.ir:1:40: error: only the entry graph's inputs have initializers; @f is called with its inputs");
}

/* ---- did you mean: one helper (diag.c) for every unknown name ---- */

Test(did_you_mean, case_first_then_nearest)
{
	static const char *const ops[] = {"MatMul", "ReLU", "Softmax", "LayerNorm", "Add"};
	cr_assert_str_eq(DID_YOU_MEAN("Relu", ops, 5), " (did you mean 'ReLU'?)");
	cr_assert_str_eq(DID_YOU_MEAN("matmul", ops, 5), " (did you mean 'MatMul'?)");
	cr_assert_str_eq(DID_YOU_MEAN("Sofmax", ops, 5), " (did you mean 'Softmax'?)");
	cr_assert_str_eq(DID_YOU_MEAN("LayerNrom", ops, 5), " (did you mean 'LayerNorm'?)");   /* a swap is one edit */
	cr_assert_str_eq(DID_YOU_MEAN("Ad", ops, 5), "");          /* one edit in two letters is too far */
	cr_assert_str_eq(DID_YOU_MEAN("Frobnicate", ops, 5), "");
	cr_assert_str_eq(DID_YOU_MEAN("", ops, 5), "");
	static const char *const ties[] = {"axes", "axis"};
	cr_assert_str_eq(DID_YOU_MEAN("axiss", ties, 2), " (did you mean 'axis'?)");
	cr_assert_str_eq(DID_YOU_MEAN("axs", ties, 2), " (did you mean 'axes'?)");   /* a tie: the first */
}

Test(did_you_mean, in_the_messages)
{
	expect_only(compile(G1("Relu(%x)")), "t.ir:2:8: error: unknown operator 'Relu' (did you mean 'ReLU'?)");
	expect_only(compile(G1("ReduceSum(%x) {keepdims: true}")),
	            "t.ir:2:23: error: ReduceSum has no attribute 'keepdims' (it takes: axis, keep_dims, in_strategy, "
	            "out_strategy, recompute, pipeline_stage) (did you mean 'keep_dims'?)");
	expect_only(compile("context {sed: 3}\n" G1("ReLU(%x)")),
	            "t.ir:1:10: error: unknown context key 'sed' (expected device_num, parallel_mode, search_mode, "
	            "dataset_strategy, seed, precision, enable_parallel_optimizer, optimizer_level, "
	            "optimizer_weight_shard_size, pipeline_stages or pipeline_scheduler) (did you mean 'seed'?)");
}
