/* test_print.c: canonical printing (print.c, lit.c) and the round trip
 * print -> parse -> print, for literals, whole modules and every file in
 * ir-samples/ (read from disk: the tests run from the repository root). */
#include <criterion/criterion.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "shardc.h"

/* ---- helpers ---- */

/* Command-line values not yet freed stay reachable, so a failed assertion
 * reports no leak. */
static Module *holders[8];

static void hold(Module *h, bool on)
{
	for (int i = 0; i < 8; i++)
		if (on ? !holders[i] : holders[i] == h) {
			holders[i] = on ? h : NULL;
			return;
		}
}

/* Parses `name` (for messages) and runs every pass, then prints the module. */
static Run *compile_named(const char *name, const char *text, size_t len)
{
	return run_passes(name, text, len, PASSES_PRINT);
}

/* compile_named as t.ir. */
static Run *compile_printed(const char *text)
{
	return compile_named("t.ir", text, strlen(text));
}

/* One IR value as lit_print writes it; NULL when `text` is not one value. */
static char *print_value(const char *text)
{
	Module *h = NULL;
	Lit *v = parse_value_text("--value", text, &h);
	hold(h, true);
	char *s = NULL;
	if (v) {
		StrBuf b = {0};
		lit_print(&b, v);
		s = b.data;
	}
	hold(h, false);
	module_free(h);
	return s;
}

/* What expect_value printed: static, so a failed assertion leaves no leak. */
static char *got, *again;

/* `text` prints as `want`, and `want` prints as itself. */
static void expect_value(const char *text, const char *want)
{
	got = print_value(text);
	cr_assert_not_null(got, "'%s' is not one value", text);
	cr_assert_str_eq(got, want, "'%s' printed as '%s', expected '%s'", text, got, want);
	again = print_value(got);
	cr_assert_not_null(again, "the printed '%s' does not parse", got);
	cr_assert_str_eq(again, got, "'%s' printed again as '%s'", got, again);
	free(got);
	free(again);
	got = again = NULL;
}

/* The float `text` prints as `want`, which reads back as the same double. */
static void expect_float(const char *text, const char *want)
{
	expect_value(text, want);
	cr_assert_eq(strtod(want, NULL), strtod(text, NULL), "%s does not read back as %s", want, text);
}

/* The module compiles, prints, and its print compiles to the same print and
 * the same types; `name` says which module in messages. */
static void expect_round_trip(const char *name, const char *text, size_t len)
{
	Run *a = compile_named(name, text, len);
	cr_assert(a->ok, "%s does not compile:\n%s", name, msgs(a));
	Run *b = compile_named("printed.ir", a->printed.data, a->printed.len);
	cr_assert(b->ok, "the print of %s does not compile:\n%s\n--- printed:\n%s", name, msgs(b), a->printed.data);
	cr_assert_str_eq(b->printed.data, a->printed.data, "%s: print -> parse -> print differs", name);
	cr_assert_eq(b->m->ngraphs, a->m->ngraphs);
	cr_assert_eq(b->m->nlayouts, a->m->nlayouts);
	cr_assert_eq(b->m->ctx.device_num, a->m->ctx.device_num);
	cr_assert_eq(b->m->ctx.parallel_mode, a->m->ctx.parallel_mode);
	cr_assert_eq(b->m->ctx.dataset_mode, a->m->ctx.dataset_mode);
	cr_assert_eq(b->m->ctx.seed, a->m->ctx.seed);
	for (int i = 0; i < a->m->ngraphs; i++) {
		Graph *ga = a->m->graphs[i], *gb = b->m->graphs[i];
		cr_assert_str_eq(gb->name, ga->name);
		cr_assert_eq(gb->nvalues, ga->nvalues, "%s: @%s", name, ga->name);
		for (int k = 0; k < ga->nvalues; k++) {
			cr_assert_str_eq(gb->values[k].name, ga->values[k].name);
			cr_assert(type_equal(&gb->values[k].type, &ga->values[k].type), "%s: %%%s changed type", name,
			          ga->values[k].name);
			cr_assert_eq(gb->values[k].type.is_param, ga->values[k].type.is_param);
		}
	}
	run_free(b);
	run_free(a);
}

static void expect_round_trip_text(const char *text)
{
	expect_round_trip("t.ir", text, strlen(text));
}

/* ---- literals ---- */

Test(floats, shortest_form_that_reads_back)
{
	expect_float("0.1", "0.1");
	expect_float("0.5", "0.5");
	expect_float("1e-5", "1e-05");
	expect_float("1E-05", "1e-05");
	expect_float("0.00001", "1e-05");
	expect_float("-2.5E3", "-2500.0");
	expect_float("1e20", "1e+20");
	expect_float("1e-300", "1e-300");
	expect_float("0.30000000000000004", "0.30000000000000004");
	expect_float("123456789.0", "123456789.0");
	expect_float("3.141592653589793", "3.141592653589793");
}

Test(floats, always_a_dot_or_an_exponent)
{
	expect_float("2.0", "2.0");
	expect_float("3.", "3.0");
	expect_float(".25", "0.25");
	expect_float("-0.0", "-0.0");
	expect_float("0.0", "0.0");
	expect_float("100000.0", "100000.0");
	expect_float("0.0001", "0.0001");
	expect_float("1e15", "1e+15");
	expect_float("123456789012345.67", "123456789012345.67");
}

/* Between 1e-4 and 0.1 a double can need more than 17 digits after the point;
 * printing must still give back the same double. */
Test(floats, small_floats_keep_every_digit)
{
	expect_float("0.00012345678901234567", "0.00012345678901234567");
	expect_float("0.0010000000000000002", "0.0010000000000000002");
	expect_float("0.012345678901234568", "0.012345678901234568");
}

Test(ints, as_written)
{
	expect_value("0", "0");
	expect_value("-3", "-3");
	expect_value("9223372036854775807", "9223372036854775807");
	expect_value("-9223372036854775808", "-9223372036854775808");
}

Test(tuples, one_tuples_and_spacing)
{
	expect_value("(8,)", "(8,)");
	expect_value("(8)", "(8,)");
	expect_value("()", "()");
	expect_value("(1,2,)", "(1, 2)");
	expect_value("( 1 ,2 )", "(1, 2)");
	expect_value("((8,1),(8,))", "((8, 1), (8,))");
	expect_value("((),)", "((),)");
}

Test(strings, re_escaped)
{
	expect_value("\"dp\"", "\"dp\"");
	expect_value("\"a\\\"b\\\\c\"", "\"a\\\"b\\\\c\"");
	expect_value("\"\"", "\"\"");
	expect_value("\"#not a comment\"", "\"#not a comment\"");
	expect_value("\"\\\\\"", "\"\\\\\"");
}

Test(dicts, spacing_and_commas)
{
	expect_value("{a:1 b:(2,3),}", "{a: 1, b: (2, 3)}");
	expect_value("{\"w1\": (8, 1)}", "{\"w1\": (8, 1)}");
	expect_value("{}", "{}");
	expect_value("{graph: @f, shard: {in_strategy: ((4, 2), None)}}", "{graph: @f, shard: {in_strategy: ((4, 2), None)}}");
	expect_value("{\"a\\\"b\": 1}", "{\"a\\\"b\": 1}");
}

Test(calls, named_and_positional_arguments)
{
	expect_value("Momentum(learning_rate:0.2,momentum:0.1)", "Momentum(learning_rate: 0.2, momentum: 0.1)");
	expect_value("L(\"dp\",(\"sp\",\"mp\"))", "L(\"dp\", (\"sp\", \"mp\"))");
	expect_value("zeros()", "zeros()");
	expect_value("SGD", "SGD");
}

Test(names, keywords_and_sigils)
{
	expect_value("(true,false,None)", "(true, false, None)");
	expect_value("(%x.y, @g.1, %1, Float16)", "(%x.y, @g.1, %1, Float16)");
}

Test(types, canonical_type_text)
{
	Type t = {.is_param = false, .dtype = DT_F32, .rank = 0};
	StrBuf b = {0};
	type_print(&b, &t);
	cr_assert_str_eq(b.data, "<Tensor[Float32], ()>");
	sb_free(&b);
	t = (Type){.is_param = true, .dtype = DT_BF16, .rank = 1, .dims = {8}};
	type_print(&b, &t);
	cr_assert_str_eq(b.data, "<Parameter[BFloat16], (8,)>");
	sb_free(&b);
	t = (Type){.dtype = DT_I64, .rank = 3, .dims = {2, 3, 4}};
	type_print(&b, &t);
	cr_assert_str_eq(b.data, "<Tensor[Int64], (2, 3, 4)>");
	sb_free(&b);
}

/* ---- whole modules ---- */

static const char *canon_src =
	"# a comment that is dropped\n"
	"context {device_num: 8 parallel_mode: \"semi_auto_parallel\", dataset_strategy: ((8, 1),),}\n"
	"layout L = Layout((2,4),(\"dp\",\"mp\"))\n"
	"graph @f(%a: <Tensor[Float32], (8, 4)>) {\n"
	"  %b = ReLU(%a)  # trailing comment\n"
	"  return %b\n"
	"}\n"
	"graph @main(%x: <Tensor[Float32], (8,4)> = uniform(-1, 1), %w: <Parameter[Float32], (4)> = zeros) {\n"
	"  %y = Call(%x) {graph: @f}\n"
	"  %z = BiasAdd(%y,%w) {in_strategy: (L(\"dp\", \"mp\"), L(\"mp\"))}\n"
	"     : (<Tensor[Float32], (8, 4)>, <Tensor[Float32], (4,)>) -> (<Tensor[Float32], (8, 4)>)\n"
	"  %e = LayerNorm(%z, %w, %w) {epsilon: 1e-5}\n"
	"  %s = ReduceSum(%e) {}\n"
	"  return %s, %z\n"
	"}\n"
	"train {loss: %s optimizer: Momentum(learning_rate: 0.1, momentum: 0.9), steps: 3}\n";

static const char *canon_want =
	"context {\n"
	"  device_num: 8,\n"
	"  parallel_mode: \"semi_auto_parallel\",\n"
	"  search_mode: \"sharding_propagation\",\n"
	"  dataset_strategy: ((8, 1),),\n"
	"  seed: 0\n"
	"}\n"
	"layout L = Layout((2, 4), (\"dp\", \"mp\"))\n"
	"\n"
	"graph @f(%a: <Tensor[Float32], (8, 4)>) {\n"
	"  %b = ReLU(%a)\n"
	"  return %b\n"
	"}\n"
	"\n"
	"graph @main(%x: <Tensor[Float32], (8, 4)> = uniform(-1, 1),\n"
	"    %w: <Parameter[Float32], (4,)> = zeros) {\n"
	"  %y = Call(%x) {graph: @f}\n"
	"  %z = BiasAdd(%y, %w) {in_strategy: (L(\"dp\", \"mp\"), L(\"mp\"))} : (<Tensor[Float32], (8, 4)>, "
	"<Tensor[Float32], (4,)>) -> (<Tensor[Float32], (8, 4)>)\n"
	"  %e = LayerNorm(%z, %w, %w) {epsilon: 1e-05}\n"
	"  %s = ReduceSum(%e)\n"
	"  return %s, %z\n"
	"}\n"
	"\n"
	"train {loss: %s, optimizer: Momentum(learning_rate: 0.1, momentum: 0.9), steps: 3}\n";

Test(modules, canonical_text)
{
	Run *r = compile_printed(canon_src);
	cr_assert(r->ok, "%s", msgs(r));
	cr_assert_str_eq(r->printed.data, canon_want);
	run_free(r);
}

Test(modules, canonical_text_is_a_fixed_point)
{
	Run *r = compile_printed(canon_want);
	cr_assert(r->ok, "%s", msgs(r));
	cr_assert_str_eq(r->printed.data, canon_want);
	run_free(r);
}

Test(modules, defaults_are_printed_without_a_context_block)
{
	Run *r = compile_printed("graph @g(%x: <Tensor[Int32], ()>) {\n  %y = Neg(%x)\n  return %y\n}\n");
	cr_assert(r->ok, "%s", msgs(r));
	cr_assert_str_eq(r->printed.data, "context {\n"
	                                  "  device_num: 1,\n"
	                                  "  parallel_mode: \"stand_alone\",\n"
	                                  "  search_mode: \"sharding_propagation\",\n"
	                                  "  dataset_strategy: \"full_batch\",\n"
	                                  "  seed: 0\n"
	                                  "}\n"
	                                  "\n"
	                                  "graph @g(%x: <Tensor[Int32], ()>) {\n"
	                                  "  %y = Neg(%x)\n"
	                                  "  return %y\n"
	                                  "}\n");
	run_free(r);
}

Test(modules, one_axis_layout_prints_one_tuples)
{
	Run *r = compile_printed("context {device_num: 8, parallel_mode: \"semi_auto_parallel\"}\n"
	                         "layout M = Layout((8), (\"all\"))\n"
	                         "graph @g(%x: <Tensor[Float32], (8,)>) {\n  %y = ReLU(%x) {in_strategy: (M(\"all\"),)}\n"
	                         "  return %y\n}\n");
	cr_assert(r->ok, "%s", msgs(r));
	cr_assert(strstr(r->printed.data, "layout M = Layout((8,), (\"all\",))\n"), "%s", r->printed.data);
	cr_assert(strstr(r->printed.data, "%y = ReLU(%x) {in_strategy: (M(\"all\"),)}\n"), "%s", r->printed.data);
	run_free(r);
}

/* A number written as an operand prints as it was written (1e-6 stays 1e-6,
 * .5 stays .5), so the text reads back to the same numbers. */
Test(modules, numbers_as_operands_print_as_written)
{
	static const char *const stmts =
		"  %a = Mul(%x, 0.125)\n  %b = Add(%a, 1e-6)\n  %c = Sub(1.0, %b)\n  %d = Maximum(%c, 0)\n"
		"  %e = Div(.5, %d)\n  %f = Mul(%e, -2.5E-1)\n";
	StrBuf text = {0};
	sb_printf(&text, "graph @g(%%x: <Tensor[Float32], (2, 4)>) {\n%s  return %%f\n}\n", stmts);
	Run *r = compile_printed(text.data);
	cr_assert(r->ok, "%s", msgs(r));
	cr_assert(strstr(r->printed.data, stmts), "%s", r->printed.data);
	run_free(r);
	expect_round_trip_text(text.data);
	sb_free(&text);
}

Test(round_trip, canonical_module)
{
	expect_round_trip_text(canon_src);
}

Test(round_trip, strings_and_keyword_keys)
{
	expect_round_trip_text("context {dataset_strategy: \"data_parallel\", search_mode: \"recursive_programming\",\n"
	                       "         parallel_mode: \"auto_parallel\", device_num: 4, seed: 11}\n"
	                       "graph @inner(%x: <Tensor[Float32], (8, 4)>, %w: <Tensor[Float32], (4, 4)>) {\n"
	                       "  %1 = MatMul(%x, %w) {transpose_b: true}\n  return %1\n}\n"
	                       "graph @main(%x: <Tensor[Float32], (8, 4)>, %w1: <Parameter[Float32], (4, 4)> = normal(1e-3)) {\n"
	                       "  %r = Call(%x, %w1) {graph: @inner, shard: {in_strategy: ((4, 1), None),\n"
	                       "                                          parameter_plan: {\"w1\": (4, 1)}}}\n"
	                       "  %s = Softmax(%r) {axis: -1}\n"
	                       "  return %s\n"
	                       "}\n");
}

Test(round_trip, every_attribute_kind)
{
	expect_round_trip_text(
		"context {device_num: 4}\n"
		"graph @g(%x: <Tensor[Float32], (4, 6)> = constant(0.5), %i: <Tensor[Int64], (3,)> = randint(-2, 2),\n"
		"         %t: <Parameter[Float32], (10, 6)> = normal(0.02)) {\n"
		"  %a = ReduceMean(%x) {axis: (0,), keep_dims: false}\n"
		"  %b = Cast(%x) {dtype: Float16}\n"
		"  %c = Cast(%x) {dtype: \"BFloat16\"}\n"
		"  %d = StridedSlice(%x) {begin: (-4, 0), end: (4, 6), strides: (2, 3)}\n"
		"  %e = AllToAll(%x) {split_axis: 0, concat_axis: 1, group: (0, 1)}\n"
		"  %f = AllReduce(%x) {op: \"max\", group: (3, 2, 1, 0)}\n"
		"  %g = Gather(%t, %i) {axis: 0}\n"
		"  %h = Transpose(%x) {perm: (1, 0)}\n"
		"  %k = Reshape(%x) {shape: (-1,)}\n"
		"  %l = LayerNorm(%x, %x, %x) {begin_norm_axis: 0, begin_params_axis: 0, epsilon: 0.001}\n"
		"  return %a, %b, %c, %d, %e, %f, %g, %h, %k, %l\n"
		"}\n");
}

Test(round_trip, strategies_and_out_strategy)
{
	expect_round_trip_text("context {device_num: 8, parallel_mode: \"semi_auto_parallel\"}\n"
	                       "layout L = Layout((2, 2, 2), (\"dp\", \"sp\", \"mp\"))\n"
	                       "graph @g(%x: <Tensor[Float32], (8, 16)>, %w: <Tensor[Float32], (16, 8)>) {\n"
	                       "  %y = MatMul(%x, %w) {in_strategy: (L(\"mp\", (\"sp\", \"dp\")), L((\"sp\", \"dp\"), \"None\")),\n"
	                       "                       out_strategy: (L((\"mp\", \"sp\", \"dp\"), \"None\"),)}\n"
	                       "  %z = ReLU(%y) {in_strategy: ((8, 1),), out_strategy: ((8, 1),)}\n"
	                       "  return %z\n"
	                       "}\n");
}

/* A layout alias is a string: it must be printed with its escapes. */
Test(round_trip, layout_alias_with_escapes)
{
	Run *r = compile_printed("layout L = Layout((2,), (\"a\\\"b\",))\n"
	                         "graph @g(%x: <Tensor[Float32], (2,)>) {\n  %y = ReLU(%x)\n  return %y\n}\n");
	cr_assert(r->ok, "%s", msgs(r));
	cr_assert_str_eq(module_layout(r->m, "L")->alias[0], "a\"b");
	cr_assert(strstr(r->printed.data, "layout L = Layout((2,), (\"a\\\"b\",))\n"),
	          "the alias a\"b is printed without its escape:\n%s", r->printed.data);
	run_free(r);
	expect_round_trip_text("layout L = Layout((2,), (\"a\\\"b\",))\n"
	                       "graph @g(%x: <Tensor[Float32], (2,)>) {\n  %y = ReLU(%x)\n  return %y\n}\n");
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

Test(round_trip, every_ir_sample)
{
	DIR *dir = opendir("ir-samples");
	cr_assert_not_null(dir, "run the tests from the repository root (ir-samples/ not found)");
	char *names[256];
	int n = 0;
	for (struct dirent *e; (e = readdir(dir)) && n < 256;) {
		size_t len = strlen(e->d_name);
		if (len > 3 && strcmp(e->d_name + len - 3, ".ir") == 0)
			names[n++] = strdup(e->d_name);
	}
	closedir(dir);
	qsort(names, (size_t)n, sizeof *names, by_name);
	cr_assert_geq(n, 12, "expected the 12 samples of ir-samples/README.md, found %d", n);
	for (int i = 0; i < n; i++) {
		char path[512];
		snprintf(path, sizeof path, "ir-samples/%s", names[i]);
		size_t len;
		char *text = read_file(path, &len);
		cr_assert_not_null(text, "cannot read %s", path);
		expect_round_trip(path, text, len);
		free(text);
		free(names[i]);
	}
}
