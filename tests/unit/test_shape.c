/* test_shape.c: shape and dtype inference (shape.c) for every operator of
 * docs/operators.md, and its errors.
 *
 * Most tests write one statement `%y = ...` into a graph whose parameters
 * they give, run the passes up to infer_shapes, and compare %y's type as the
 * IR writes it, e.g. `<Tensor[Float32], (4, 5)>`. The statement is on line 3,
 * so an error at its operator is at 3:8. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "shardc.h"

/* ---- helpers ---- */

/* Parses and runs the passes in the driver's order up to infer_shapes,
 * stopping at the first that fails. */
static Run *infer(const char *text)
{
	return run_passes("t.ir", text, strlen(text), PASSES_SHAPES);
}

/* One statement `%y = STMT` over the parameters PARAMS, on 8 devices. */
static Run *op(const char *params, const char *stmt)
{
	char text[2048];
	snprintf(text, sizeof text, "context {device_num: 8}\ngraph @g(%s) {\n  %%y = %s\n  return %%y\n}\n", params,
	         stmt);
	return infer(text);
}

/* The type of `value` in the entry graph, as the IR writes it. */
static const char *type_of(Run *r, const char *value)
{
	Graph *g = module_entry(r->m);
	int id = graph_value(g, value);
	cr_assert_geq(id, 0, "no value %%%s", value);
	const Type *t = &g->values[id].type;
	if (t->rank < 0)
		return "unknown";
	sb_free(&r->type);
	type_print(&r->type, t);
	return r->type.data;
}

/* `%y = STMT` over PARAMS infers without a word and gives WANT. */
static void expect_y(const char *params, const char *stmt, const char *want)
{
	Run *r = op(params, stmt);
	cr_assert(r->ok && r->d.nerrors == 0, "%s: expected no errors, got:\n%s", stmt, msgs(r));
	const char *got = type_of(r, "y");
	cr_assert_str_eq(got, want, "%s: inferred %s, expected %s", stmt, got, want);
	run_free(r);
}

/* `%y = STMT` over PARAMS fails with exactly one error, WANT. */
static void expect_error(const char *params, const char *stmt, const char *want)
{
	Run *r = op(params, stmt);
	cr_assert_not(r->ok, "%s: expected an error", stmt);
	cr_assert(strstr(msgs(r), want), "%s: expected the message\n  %s\ngot:\n%s", stmt, want, msgs(r));
	cr_assert_eq(r->d.nerrors, 1, "one error, got:\n%s", msgs(r));
	run_free(r);
}

/* `%y = STMT` over PARAMS is refused with one error on its line; the
 * wording is left open. */
static void expect_refused(const char *params, const char *stmt)
{
	Run *r = op(params, stmt);
	cr_assert_not(r->ok, "%s: accepted, inferred %s", stmt, type_of(r, "y"));
	cr_assert(strstr(msgs(r), "t.ir:3:"), "%s: expected an error on line 3, got:\n%s", stmt, msgs(r));
	cr_assert_eq(r->d.nerrors, 1, "one error, got:\n%s", msgs(r));
	run_free(r);
}

#define F32(dims) "<Tensor[Float32], " dims ">"

/* ---- MatMul and BatchMatMul ---- */

Test(matmul, plain)
{
	expect_y("%a: <Tensor[Float32], (4, 3)>, %b: <Tensor[Float32], (3, 5)>", "MatMul(%a, %b)", F32("(4, 5)"));
}

Test(matmul, transpose_a)
{
	expect_y("%a: <Tensor[Float32], (3, 4)>, %b: <Tensor[Float32], (3, 5)>", "MatMul(%a, %b) {transpose_a: true}",
	         F32("(4, 5)"));
}

Test(matmul, transpose_b)
{
	expect_y("%a: <Tensor[Float32], (4, 3)>, %b: <Tensor[Float32], (5, 3)>", "MatMul(%a, %b) {transpose_b: true}",
	         F32("(4, 5)"));
}

Test(matmul, transpose_both_and_false)
{
	expect_y("%a: <Tensor[Float32], (3, 4)>, %b: <Tensor[Float32], (5, 3)>",
	         "MatMul(%a, %b) {transpose_a: true, transpose_b: true}", F32("(4, 5)"));
	expect_y("%a: <Tensor[Float32], (4, 3)>, %b: <Tensor[Float32], (3, 5)>",
	         "MatMul(%a, %b) {transpose_a: false, transpose_b: false}", F32("(4, 5)"));
}

Test(matmul, keeps_the_element_type_and_takes_parameters)
{
	expect_y("%a: <Tensor[Float16], (4, 3)>, %w: <Parameter[Float16], (3, 5)>", "MatMul(%a, %w)",
	         "<Tensor[Float16], (4, 5)>");
}

Test(matmul, inner_dimension_mismatch)
{
	expect_error("%a: <Tensor[Float32], (4, 3)>, %b: <Tensor[Float32], (4, 5)>", "MatMul(%a, %b)",
	             "t.ir:3:8: error: MatMul: inner dimensions differ: (4, 3) times (4, 5) (3 vs 4)");
	expect_error("%a: <Tensor[Float32], (4, 3)>, %b: <Tensor[Float32], (3, 5)>", "MatMul(%a, %b) {transpose_b: true}",
	             "t.ir:3:8: error: MatMul: inner dimensions differ: (4, 3) times (3, 5)^T (3 vs 5)");
}

Test(matmul, needs_two_d_operands)
{
	expect_error("%a: <Tensor[Float32], (2, 4, 3)>, %b: <Tensor[Float32], (3, 5)>", "MatMul(%a, %b)",
	             "t.ir:3:8: error: MatMul needs two 2-D operands, got (2, 4, 3) and (3, 5)");
}

Test(matmul, operands_of_different_element_types)
{
	expect_error("%a: <Tensor[Float32], (4, 3)>, %b: <Tensor[Float16], (3, 5)>", "MatMul(%a, %b)",
	             "t.ir:3:19: error: MatMul: operands have different element types, Float32 and Float16 (use Cast)");
}

Test(batch_matmul, same_batch)
{
	expect_y("%a: <Tensor[Float32], (8, 2, 3)>, %b: <Tensor[Float32], (8, 3, 4)>", "BatchMatMul(%a, %b)",
	         F32("(8, 2, 4)"));
}

Test(batch_matmul, broadcasting_batch_dims)
{
	expect_y("%a: <Tensor[Float32], (5, 1, 2, 3)>, %b: <Tensor[Float32], (4, 3, 6)>", "BatchMatMul(%a, %b)",
	         F32("(5, 4, 2, 6)"));
	expect_y("%a: <Tensor[Float32], (8, 2, 3)>, %b: <Tensor[Float32], (3, 4)>", "BatchMatMul(%a, %b)",
	         F32("(8, 2, 4)"));
}

Test(batch_matmul, transposes)
{
	expect_y("%a: <Tensor[Float32], (2, 3, 7)>, %b: <Tensor[Float32], (2, 4, 3)>",
	         "BatchMatMul(%a, %b) {transpose_a: true, transpose_b: true}", F32("(2, 7, 4)"));
}

Test(batch_matmul, batch_dims_that_do_not_broadcast)
{
	expect_error("%a: <Tensor[Float32], (3, 2, 3)>, %b: <Tensor[Float32], (4, 3, 6)>", "BatchMatMul(%a, %b)",
	             "t.ir:3:8: error: BatchMatMul: shapes (3,) and (4,) do not broadcast (dim 0: 3 vs 4)");
}

/* ---- elementwise ---- */

Test(elementwise, broadcasting_every_binary_op)
{
	const char *ops[] = {"Add", "Sub", "Mul", "Div", "Maximum", "Minimum"};
	for (int i = 0; i < 6; i++) {
		char stmt[64];
		snprintf(stmt, sizeof stmt, "%s(%%a, %%b)", ops[i]);
		expect_y("%a: <Tensor[Float32], (4, 1, 3)>, %b: <Tensor[Float32], (5, 1)>", stmt, F32("(4, 5, 3)"));
	}
}

Test(elementwise, rank_extending_and_scalars)
{
	expect_y("%a: <Tensor[Float32], (2, 3)>, %b: <Tensor[Float32], (3,)>", "Add(%a, %b)", F32("(2, 3)"));
	expect_y("%a: <Tensor[Float32], (3,)>, %b: <Tensor[Float32], (2, 1, 3)>", "Mul(%a, %b)", F32("(2, 1, 3)"));
	expect_y("%a: <Tensor[Float32], ()>, %b: <Tensor[Float32], (2, 3)>", "Sub(%a, %b)", F32("(2, 3)"));
	expect_y("%a: <Tensor[Float32], ()>, %b: <Tensor[Float32], ()>", "Div(%a, %b)", F32("()"));
	expect_y("%a: <Tensor[Int32], (1,)>, %b: <Tensor[Int32], (7,)>", "Maximum(%a, %b)", "<Tensor[Int32], (7,)>");
}

Test(elementwise, broadcast_failure)
{
	expect_error("%a: <Tensor[Float32], (2, 3)>, %b: <Tensor[Float32], (4,)>", "Add(%a, %b)",
	             "t.ir:3:8: error: Add: shapes (2, 3) and (4,) do not broadcast (dim 1: 3 vs 4)");
}

Test(elementwise, element_types_differ)
{
	expect_error("%a: <Tensor[Float32], (2, 3)>, %b: <Tensor[Float16], (2, 3)>", "Add(%a, %b)",
	             "t.ir:3:16: error: Add: operands have different element types, Float32 and Float16 (use Cast)");
}

/* The comparisons: the broadcast shape, Bool; their operands of one type;
 * their Bool goes into arithmetic only through a Cast (the message says how). */
Test(elementwise, comparisons_give_bool)
{
	const char *ops[] = {"Equal", "NotEqual", "Greater", "GreaterEqual", "Less", "LessEqual"};
	for (int i = 0; i < 6; i++) {
		char stmt[64];
		snprintf(stmt, sizeof stmt, "%s(%%a, %%b)", ops[i]);
		expect_y("%a: <Tensor[BFloat16], (4, 1, 3)>, %b: <Tensor[BFloat16], (5, 1)>", stmt,
		         "<Tensor[Bool], (4, 5, 3)>");
	}
	expect_y("%a: <Tensor[Float32], (2, 3)>", "Greater(0.5, %a)", "<Tensor[Bool], (2, 3)>");
	expect_error("%a: <Tensor[Float32], (2, 3)>, %b: <Tensor[Float16], (2, 3)>", "Less(%a, %b)",
	             "t.ir:3:17: error: Less: operands have different element types, Float32 and Float16 (use Cast)");
	expect_error("%a: <Tensor[Float32], (2, 3)>, %m: <Tensor[Bool], (2, 3)>", "Mul(%a, %m)",
	             "t.ir:3:16: error: Mul: '%m' is Bool and '%a' Float32; Cast the Bool first: Cast(%m) {dtype: Float32}");
}

Test(elementwise, bias_add)
{
	expect_y("%x: <Tensor[Float32], (2, 3, 4)>, %b: <Parameter[Float32], (4,)>", "BiasAdd(%x, %b)",
	         F32("(2, 3, 4)"));
	expect_error("%x: <Tensor[Float32], (2, 3, 4)>, %b: <Tensor[Float32], (3,)>", "BiasAdd(%x, %b)",
	             "t.ir:3:20: error: BiasAdd: the bias must be 1-D with the size of x's last dim; x is (2, 3, 4), bias (3,)");
}

Test(elementwise, unary_ops)
{
	const char *ops[] = {"ReLU", "GeLU", "Tanh", "Sigmoid", "Exp", "Log", "Neg", "Sqrt", "Rsqrt", "SiLU", "Square"};
	for (int i = 0; i < 11; i++) {
		char stmt[64];
		snprintf(stmt, sizeof stmt, "%s(%%x)", ops[i]);
		expect_y("%x: <Tensor[Float16], (2, 3)>", stmt, "<Tensor[Float16], (2, 3)>");
		expect_y("%x: <Tensor[Float32], ()>", stmt, F32("()"));
	}
}

/* Dropout: x's type, a float; keep_prob in (0, 1] (check.c). */
Test(dropout, shapes)
{
	expect_y("%x: <Tensor[BFloat16], (2, 3)>", "Dropout(%x) {keep_prob: 0.9}", "<Tensor[BFloat16], (2, 3)>");
	expect_y("%x: <Tensor[Float32], (4,)>", "Dropout(%x)", "<Tensor[Float32], (4,)>");
	expect_error("%x: <Tensor[Int32], (2, 3)>", "Dropout(%x)",
	             "error: Dropout needs a floating-point operand, '%x' is Int32");
	expect_error("%x: <Tensor[Float32], (2, 3)>", "Dropout(%x) {keep_prob: 0}",
	             "error: keep_prob, the chance of keeping an element, must be in (0, 1]");
}

/* DropoutGenMask: a Bool mask of shape; shape and keep_prob required. */
Test(dropout, gen_mask_shapes)
{
	const char *in = "%x: <Tensor[Float32], (2, 3)>";
	expect_y(in, "DropoutGenMask() {shape: (2, 3), keep_prob: 0.9}", "<Tensor[Bool], (2, 3)>");
	expect_y(in, "DropoutGenMask() {shape: (4, 6), keep_prob: 0.5, begin: (2, 0), end: (4, 3)}",
	         "<Tensor[Bool], (2, 3)>");
	expect_error(in, "DropoutGenMask() {keep_prob: 0.9}", "error: DropoutGenMask needs the attribute 'shape'");
	expect_error(in, "DropoutGenMask() {shape: (2, 3)}", "error: DropoutGenMask needs the attribute 'keep_prob'");
}

/* Range is Arange from its three numbers; UniformReal a Float32 constant of
 * its shape; LpNorm, ClipByNorm and IOU typed through their pieces. */
Test(misc_ops, shapes)
{
	const char *in = "%x: <Tensor[Float32], (4, 6)>, %c: <Tensor[Float32], (1,)>, %a: <Tensor[Float32], (5, 4)>";
	expect_y(in, "Range(0.0, 4.0, 0.5)", "<Tensor[Float32], (8,)>");
	expect_y(in, "Range(1, 7, 2)", "<Tensor[Int64], (3,)>");
	expect_error(in, "Range(0, 100, 1) {maxlen: 10}", "error: Range: the range has 100 elements, more than maxlen 10");
	expect_y(in, "UniformReal() {shape: (2, 3), seed: 1, seed2: 2}", "<Tensor[Float32], (2, 3)>");
	expect_y(in, "UniformReal() {shape: (4, 6), begin: (2, 0), end: (4, 3)}", "<Tensor[Float32], (2, 3)>");
	expect_y(in, "LpNorm(%x) {axis: 1, p: 3}", "<Tensor[Float32], (4,)>");
	expect_y(in, "LpNorm(%x) {axis: 0, keep_dims: true}", "<Tensor[Float32], (1, 6)>");
	expect_y(in, "ClipByNorm(%x, %c) {axis: 1}", "<Tensor[Float32], (4, 6)>");
	expect_y(in, "ClipByNorm(%x, 2.0)", "<Tensor[Float32], (4, 6)>");
	expect_y(in, "IOU(%a, %a) {mode: \"iof\"}", "<Tensor[Float32], (5, 5)>");
	expect_error(in, "IOU(%x, %a)", "error: ");
}

/* Split: piece index of output_num equal pieces along axis, any type. */
Test(split, shapes)
{
	const char *in = "%x: <Tensor[Float16], (4, 8, 48)>";
	expect_y(in, "Split(%x) {axis: 2, output_num: 3, index: 1}", "<Tensor[Float16], (4, 8, 16)>");
	expect_y(in, "Split(%x) {axis: -2, output_num: 4, index: 3}", "<Tensor[Float16], (4, 2, 48)>");
	expect_y("%i: <Tensor[Int32], (6,)>", "Split(%i) {axis: 0, output_num: 2, index: 0}", "<Tensor[Int32], (3,)>");
	expect_y(in, "Split(%x) {axis: 0, index: 0}", "<Tensor[Float16], (4, 8, 48)>");
	expect_error(in, "Split(%x) {axis: 2, output_num: 5, index: 0}",
	             "error: Split: dim 2 of (4, 8, 48) (48) does not divide into output_num 5 equal pieces");
	expect_error(in, "Split(%x) {axis: 2, output_num: 3, index: 3}",
	             "error: Split: index 3 is not one of the 3 pieces (0 to 2)");
	expect_error(in, "Split(%x) {axis: 3, output_num: 3, index: 0}", "error: Split: axis must be one dim of (4, 8, 48)");
	expect_error(in, "Split(%x) {axis: 1, output_num: 2}", "error: Split needs the attribute 'index'");
}

/* Select(cond, x, y): cond Bool, x and y of one type, all of one shape. */
Test(select, shapes)
{
	const char *in = "%c: <Tensor[Bool], (2, 3)>, %a: <Tensor[BFloat16], (2, 3)>, %b: <Tensor[BFloat16], (2, 3)>";
	expect_y(in, "Select(%c, %a, %b)", "<Tensor[BFloat16], (2, 3)>");
	expect_error("%c: <Tensor[Float32], (2, 3)>, %a: <Tensor[Float32], (2, 3)>, %b: <Tensor[Float32], (2, 3)>",
	             "Select(%c, %a, %b)", "t.ir:3:15: error: Select: the condition must be Bool, '%c' is Float32");
	expect_error("%c: <Tensor[Bool], (2, 3)>, %a: <Tensor[Float32], (2, 3)>, %b: <Tensor[Float16], (2, 3)>",
	             "Select(%c, %a, %b)",
	             "t.ir:3:23: error: Select: operands have different element types, Float32 and Float16 (use Cast)");
	expect_error("%c: <Tensor[Bool], (2, 1)>, %a: <Tensor[Float32], (2, 3)>, %b: <Tensor[Float32], (2, 3)>",
	             "Select(%c, %a, %b)",
	             "t.ir:3:8: error: Select: the condition, x and y must have one shape (no broadcasting); they are "
	             "(2, 1), (2, 3) and (2, 3)");
}

/* GeLU's approximate: "tanh" (the default) or "none" (the erf form). */
Test(elementwise, gelu_approximate)
{
	expect_y("%x: <Tensor[BFloat16], (2, 3)>", "GeLU(%x) {approximate: \"none\"}", "<Tensor[BFloat16], (2, 3)>");
	expect_y("%x: <Tensor[Float32], (2, 3)>", "GeLU(%x) {approximate: \"tanh\"}", F32("(2, 3)"));
	expect_error("%x: <Tensor[Float32], (2, 3)>", "GeLU(%x) {approximate: \"erf\"}",
	             "t.ir:3:31: error: attribute 'approximate' of GeLU is \"tanh\" or \"none\"");
	expect_error("%x: <Tensor[Float32], (2, 3)>", "Tanh(%x) {approximate: \"none\"}",
	             "t.ir:3:18: error: Tanh has no attribute 'approximate' (it takes: in_strategy, out_strategy, recompute, pipeline_stage)");
}

Test(elementwise, integer_operands)
{
	expect_y("%x: <Tensor[Int32], (5,)>", "ReLU(%x)", "<Tensor[Int32], (5,)>");
	expect_y("%x: <Tensor[Int64], (5,)>", "Neg(%x)", "<Tensor[Int64], (5,)>");
	expect_error("%x: <Tensor[Int32], (5,)>", "Exp(%x)", "t.ir:3:12: error: Exp needs a floating-point operand, '%x' is Int32");
	expect_error("%x: <Tensor[Int32], (5,)>", "Rsqrt(%x)", "t.ir:3:14: error: Rsqrt needs a floating-point operand, '%x' is Int32");
	expect_error("%x: <Tensor[Int32], (5,)>", "SiLU(%x)", "t.ir:3:13: error: SiLU needs a floating-point operand, '%x' is Int32");
}

/* ---- Softmax, reductions ---- */

Test(softmax, axes)
{
	expect_y("%x: <Tensor[Float32], (2, 3)>", "Softmax(%x)", F32("(2, 3)"));
	expect_y("%x: <Tensor[Float32], (2, 3)>", "Softmax(%x) {axis: 0}", F32("(2, 3)"));
	expect_y("%x: <Tensor[Float32], (2, 3)>", "LogSoftmax(%x) {axis: -2}", F32("(2, 3)"));
	expect_y("%x: <Tensor[Float32], (2, 3)>", "LogSoftmax(%x) {axis: (1,)}", F32("(2, 3)"));
}

Test(softmax, axis_out_of_range)
{
	expect_error("%x: <Tensor[Float32], (2, 3)>", "Softmax(%x) {axis: 2}",
	             "t.ir:3:20: error: Softmax: axis 2 is out of range for a tensor of rank 2");
	expect_error("%x: <Tensor[Float32], (2, 3)>", "Softmax(%x) {axis: -3}", "Softmax: axis -3 is out of range");
	expect_error("%x: <Tensor[Float32], (2, 3)>", "Softmax(%x) {axis: (0, 1)}",
	             "t.ir:3:20: error: Softmax takes one axis");
}

Test(reduce, int_axis)
{
	expect_y("%x: <Tensor[Float32], (2, 3, 4)>", "ReduceSum(%x) {axis: 1}", F32("(2, 4)"));
	expect_y("%x: <Tensor[Float32], (2, 3, 4)>", "ReduceMean(%x) {axis: -1}", F32("(2, 3)"));
	expect_y("%x: <Tensor[Float32], (2, 3, 4)>", "ReduceMax(%x) {axis: 0, keep_dims: true}", F32("(1, 3, 4)"));
	expect_y("%x: <Tensor[Float32], (2, 3, 4)>", "ReduceMin(%x) {axis: -2}", F32("(2, 4)"));
	expect_y("%x: <Tensor[Float32], (2, 3, 4)>", "ReduceProd(%x) {axis: 1, keep_dims: true}", F32("(2, 1, 4)"));
	expect_y("%x: <Tensor[Bool], (2, 3, 4)>", "ReduceAll(%x) {axis: 0}", "<Tensor[Bool], (3, 4)>");
	expect_y("%x: <Tensor[Bool], (2, 3, 4)>", "ReduceAny(%x) {axis: (0, 2), keep_dims: true}",
	         "<Tensor[Bool], (1, 3, 1)>");
	expect_y("%x: <Tensor[Bool], (2, 3, 4)>", "ReduceAny(%x)", "<Tensor[Bool], ()>");
}

/* ReduceAll and ReduceAny reduce a Bool (a comparison's result) */
Test(reduce, logical_needs_bool)
{
	expect_error("%x: <Tensor[Float32], (2, 3)>", "ReduceAll(%x) {axis: 1}",
	             "t.ir:3:18: error: ReduceAll reduces a Bool tensor (a comparison's result); '%x' is Float32: compare "
	             "it first, e.g. NotEqual(%x, 0.0)");
}

Test(reduce, tuple_axis)
{
	expect_y("%x: <Tensor[Float32], (2, 3, 4)>", "ReduceSum(%x) {axis: (0, 2)}", F32("(3,)"));
	expect_y("%x: <Tensor[Float32], (2, 3, 4)>", "ReduceMean(%x) {axis: (0, -1), keep_dims: true}",
	         F32("(1, 3, 1)"));
	expect_y("%x: <Tensor[Float32], (2, 3, 4)>", "ReduceMax(%x) {axis: (1,)}", F32("(2, 4)"));
	expect_y("%x: <Tensor[Float32], (2, 3, 4)>", "ReduceMin(%x) {axis: (2, 0), keep_dims: true}", F32("(1, 3, 1)"));
}

Test(reduce, default_is_all_axes)
{
	expect_y("%x: <Tensor[Float32], (2, 3, 4)>", "ReduceSum(%x)", F32("()"));
	expect_y("%x: <Tensor[Float32], (2, 3, 4)>", "ReduceMean(%x) {keep_dims: true}", F32("(1, 1, 1)"));
	expect_y("%x: <Tensor[Float32], (2, 3, 4)>", "ReduceMax(%x) {axis: ()}", F32("()"));
	expect_y("%x: <Tensor[Float32], (2, 3, 4)>", "ReduceMin(%x)", F32("()"));
}

Test(reduce, axis_errors)
{
	expect_error("%x: <Tensor[Float32], (2, 3)>", "ReduceSum(%x) {axis: (1, -1)}",
	             "t.ir:3:22: error: ReduceSum: axis -1 is named twice");
	expect_error("%x: <Tensor[Float32], (2, 3)>", "ReduceMin(%x) {axis: (0, -2)}",
	             "t.ir:3:22: error: ReduceMin: axis -2 is named twice");
	expect_error("%x: <Tensor[Float32], (2, 3)>", "ReduceSum(%x) {axis: 5}",
	             "t.ir:3:22: error: ReduceSum: axis 5 is out of range for a tensor of rank 2");
}

/* ---- Reshape, Transpose, Flatten ---- */

Test(reshape, explicit_shape)
{
	expect_y("%x: <Tensor[Float32], (2, 3, 4)>", "Reshape(%x) {shape: (6, 4)}", F32("(6, 4)"));
	expect_y("%x: <Tensor[Float32], (2, 3, 4)>", "Reshape(%x) {shape: (24,)}", F32("(24,)"));
	expect_y("%x: <Tensor[Float32], (1, 1)>", "Reshape(%x) {shape: ()}", F32("()"));
}

Test(reshape, minus_one)
{
	expect_y("%x: <Tensor[Float32], (2, 3, 4)>", "Reshape(%x) {shape: (-1, 4)}", F32("(6, 4)"));
	expect_y("%x: <Tensor[Float32], (2, 3, 4)>", "Reshape(%x) {shape: (2, -1)}", F32("(2, 12)"));
	expect_y("%x: <Tensor[Float32], (2, 3, 4)>", "Reshape(%x) {shape: (-1,)}", F32("(24,)"));
}

Test(reshape, size_mismatch)
{
	expect_error("%x: <Tensor[Float32], (2, 3, 4)>", "Reshape(%x) {shape: (5, 5)}",
	             "t.ir:3:20: error: Reshape: cannot reshape (2, 3, 4) (24 elements) to (5, 5) (25 elements)");
	expect_error("%x: <Tensor[Float32], (2, 3, 4)>", "Reshape(%x) {shape: (5, -1)}",
	             "Reshape: cannot reshape (2, 3, 4) (24 elements) to (5, -1): its known dims make 5, which does not "
	             "divide 24");
	expect_error("%x: <Tensor[Float32], (2,)>", "Reshape(%x) {shape: (2, 4611686018427387904)}",
	             "Reshape: cannot reshape (2,) (2 elements) to (2, 4611686018427387904) (9.2233720368547758e+18 "
	             "elements)");
}

Test(reshape, bad_targets)
{
	expect_error("%x: <Tensor[Float32], (2, 3)>", "Reshape(%x) {shape: (-1, -1)}",
	             "t.ir:3:20: error: Reshape: each target dim is positive (one may be -1)");
	expect_error("%x: <Tensor[Float32], (2, 3)>", "Reshape(%x) {shape: (0, 6)}",
	             "Reshape: each target dim is positive (one may be -1)");
	expect_error("%x: <Tensor[Float32], (2, 3)>", "Reshape(%x)", "t.ir:3:8: error: Reshape needs the attribute 'shape'");
}

Test(transpose, permutes_dims)
{
	expect_y("%x: <Tensor[Float32], (2, 3, 4)>", "Transpose(%x) {perm: (2, 0, 1)}", F32("(4, 2, 3)"));
	expect_y("%x: <Tensor[Float32], (2, 3)>", "Transpose(%x) {perm: (1, 0)}", F32("(3, 2)"));
	expect_y("%x: <Tensor[Float32], (2, 3)>", "Transpose(%x) {perm: (0, 1)}", F32("(2, 3)"));
}

Test(transpose, bad_perm)
{
	expect_error("%x: <Tensor[Float32], (2, 3, 4)>", "Transpose(%x) {perm: (0, 0, 1)}",
	             "t.ir:3:22: error: Transpose: perm must be a permutation of 0..2 for a tensor of shape (2, 3, 4)");
	expect_error("%x: <Tensor[Float32], (2, 3, 4)>", "Transpose(%x) {perm: (1, 0)}",
	             "Transpose: perm must be a permutation of 0..2");
	expect_error("%x: <Tensor[Float32], (2, 3, 4)>", "Transpose(%x) {perm: (0, 1, 3)}",
	             "Transpose: perm must be a permutation of 0..2");
	expect_error("%x: <Tensor[Float32], (2, 3, 4)>", "Transpose(%x) {perm: (0, -1, 1)}",
	             "Transpose: perm must be a permutation of 0..2");
}

Test(flatten, keeps_dim_zero)
{
	expect_y("%x: <Tensor[Float32], (2, 3, 4)>", "Flatten(%x)", F32("(2, 12)"));
	expect_y("%x: <Tensor[Float32], (32, 1, 28, 28)>", "Flatten(%x)", F32("(32, 784)"));
	expect_y("%x: <Tensor[Float32], (2, 3)>", "Flatten(%x)", F32("(2, 3)"));
	expect_error("%x: <Tensor[Float32], ()>", "Flatten(%x)", "t.ir:3:16: error: Flatten needs a tensor of rank 1 or more");
}

/* ---- Gather, LayerNorm, Concat, Cast, StridedSlice ---- */

Test(gather, indices_shape_then_table_rows)
{
	expect_y("%t: <Parameter[Float32], (10, 8)>, %i: <Tensor[Int32], (3, 4)>", "Gather(%t, %i)", F32("(3, 4, 8)"));
	expect_y("%t: <Parameter[Float32], (10, 8)>, %i: <Tensor[Int64], (5,)>", "Gather(%t, %i) {axis: 0}",
	         F32("(5, 8)"));
	expect_y("%t: <Tensor[Float16], (10, 3)>, %i: <Tensor[Int32], (2, 2)>", "Gather(%t, %i)",
	         "<Tensor[Float16], (2, 2, 3)>");
}

Test(gather, wrong_index_dtype)
{
	expect_error("%t: <Parameter[Float32], (10, 8)>, %i: <Tensor[Float32], (3,)>", "Gather(%t, %i)",
	             "t.ir:3:19: error: Gather: the indices must be Int32 or Int64, '%i' is Float32");
	expect_error("%t: <Parameter[Float32], (10, 8)>, %i: <Tensor[Bool], (3,)>", "Gather(%t, %i)",
	             "Gather: the indices must be Int32 or Int64, '%i' is Bool");
}

/* params.shape[:axis] + indices.shape + params.shape[axis+1:], as MindSpore's Gather */
Test(gather, any_rank_any_axis)
{
	expect_y("%t: <Tensor[Float32], (10,)>, %i: <Tensor[Int32], (3, 2)>", "Gather(%t, %i)", F32("(3, 2)"));
	expect_y("%t: <Tensor[Float32], (10, 4, 2)>, %i: <Tensor[Int32], (3,)>", "Gather(%t, %i)", F32("(3, 4, 2)"));
	expect_y("%t: <Parameter[Float32], (10, 8)>, %i: <Tensor[Int32], (3, 5)>", "Gather(%t, %i) {axis: 1}",
	         F32("(10, 3, 5)"));
	expect_y("%t: <Tensor[Float32], (10, 4, 2)>, %i: <Tensor[Int64], (3,)>", "Gather(%t, %i) {axis: -2}",
	         F32("(10, 3, 2)"));
	expect_y("%t: <Tensor[Float32], (10, 4, 2)>, %i: <Tensor[Int64], ()>", "Gather(%t, %i) {axis: 2}",
	         F32("(10, 4)"));
}

Test(gather, bad_table_or_axis)
{
	expect_error("%t: <Tensor[Float32], ()>, %i: <Tensor[Int32], (3,)>", "Gather(%t, %i)",
	             "t.ir:3:15: error: Gather: the table '%t' is a scalar; it needs one dim or more");
	expect_error("%t: <Parameter[Float32], (10, 8)>, %i: <Tensor[Int32], (3,)>", "Gather(%t, %i) {axis: 2}",
	             "t.ir:3:30: error: Gather: axis 2 is not a dim of the table '%t' (10, 8); use one in [-2, 2)");
	expect_error("%t: <Parameter[Float32], (10, 8)>, %i: <Tensor[Int32], (3,)>", "Gather(%t, %i) {axis: -3}",
	             "Gather: axis -3 is not a dim of the table '%t' (10, 8); use one in [-2, 2)");
	expect_error("%t: <Parameter[Float32], (10, 8)>, %i: <Tensor[Int32], (3,)>", "Gather(%t, %i) {axis: (0,)}",
	             "Gather takes one axis, an integer in [-2, 2), not a tuple");
}

Test(layer_norm, default_axes)
{
	expect_y("%x: <Tensor[Float32], (2, 3, 4)>, %g: <Parameter[Float32], (4,)>, %b: <Parameter[Float32], (4,)>",
	         "LayerNorm(%x, %g, %b)", F32("(2, 3, 4)"));
}

Test(layer_norm, begin_axes_and_epsilon)
{
	expect_y("%x: <Tensor[Float32], (2, 3, 4)>, %g: <Parameter[Float32], (3, 4)>, %b: <Parameter[Float32], (3, 4)>",
	         "LayerNorm(%x, %g, %b) {begin_norm_axis: 1, begin_params_axis: 1, epsilon: 1e-6}", F32("(2, 3, 4)"));
	expect_y("%x: <Tensor[Float32], (2, 3, 4)>, %g: <Parameter[Float32], (3, 4)>, %b: <Parameter[Float32], (3, 4)>",
	         "LayerNorm(%x, %g, %b) {begin_params_axis: -2}", F32("(2, 3, 4)"));
}

Test(layer_norm, gamma_shape_mismatch)
{
	expect_error("%x: <Tensor[Float32], (2, 3, 4)>, %g: <Parameter[Float32], (3,)>, %b: <Parameter[Float32], (4,)>",
	             "LayerNorm(%x, %g, %b)",
	             "t.ir:3:22: error: LayerNorm: gamma must be Float32 (4,) (x's dims from begin_params_axis 2), got Float32 (3,)");
}

/* RmsNorm normalizes the dims gamma covers (MindSpore's); a gamma that is
 * not x's last dims names them. */
Test(rms_norm, shapes)
{
	expect_y("%x: <Tensor[Float32], (2, 3, 4)>, %g: <Parameter[Float32], (4,)>", "RmsNorm(%x, %g)", F32("(2, 3, 4)"));
	expect_y("%x: <Tensor[Float32], (2, 3, 4)>, %g: <Parameter[Float32], (3, 4)>", "RmsNorm(%x, %g) {epsilon: 1e-5}",
	         F32("(2, 3, 4)"));
	expect_error("%x: <Tensor[Float32], (2, 3, 4)>, %g: <Parameter[Float32], (3,)>", "RmsNorm(%x, %g)",
	             "t.ir:3:20: error: RmsNorm: gamma must be Float32 (4,) (x's last 1 dim), got Float32 (3,)");
}

Test(concat, three_operands)
{
	expect_y("%a: <Tensor[Float32], (2, 3)>, %b: <Tensor[Float32], (2, 5)>, %c: <Tensor[Float32], (2, 1)>",
	         "Concat(%a, %b, %c) {axis: 1}", F32("(2, 9)"));
	expect_y("%a: <Tensor[Float32], (1, 3)>, %b: <Tensor[Float32], (2, 3)>, %c: <Tensor[Float32], (3, 3)>",
	         "Concat(%a, %b, %c)", F32("(6, 3)"));
	expect_y("%a: <Tensor[Float32], (2, 3)>, %b: <Tensor[Float32], (2, 5)>, %c: <Tensor[Float32], (2, 1)>",
	         "Concat(%a, %b, %c) {axis: -1}", F32("(2, 9)"));
	expect_y("%a: <Tensor[Float32], (2, 3)>", "Concat(%a)", F32("(2, 3)"));
}

Test(concat, mismatch_outside_the_axis)
{
	expect_error("%a: <Tensor[Float32], (2, 3)>, %b: <Tensor[Float32], (3, 5)>", "Concat(%a, %b) {axis: 1}",
	             "t.ir:3:19: error: Concat: operand 1 is Float32 (3, 5), which does not match Float32 (2, 3) outside axis 1");
}

/* numpy and MindSpore refuse to concatenate 0-d tensors: two scalars cannot
 * make one scalar. */
Test(concat, scalars_are_refused)
{
	expect_refused("%a: <Tensor[Float32], ()>, %b: <Tensor[Float32], ()>", "Concat(%a, %b)");
}

/* Concat takes one axis, as Softmax does. */
Test(concat, tuple_axis_is_refused)
{
	expect_refused("%a: <Tensor[Float32], (2, 3)>, %b: <Tensor[Float32], (2, 3)>", "Concat(%a, %b) {axis: (1, 0)}");
}

Test(cast, changes_the_element_type)
{
	expect_y("%x: <Tensor[Float32], (2, 3)>", "Cast(%x) {dtype: Float16}", "<Tensor[Float16], (2, 3)>");
	expect_y("%x: <Tensor[Float32], (2, 3)>", "Cast(%x) {dtype: \"Int32\"}", "<Tensor[Int32], (2, 3)>");
	expect_y("%x: <Tensor[Int64], ()>", "Cast(%x) {dtype: BFloat16}", "<Tensor[BFloat16], ()>");
	expect_y("%x: <Tensor[Float32], (2,)>", "Cast(%x) {dtype: Bool}", "<Tensor[Bool], (2,)>");
	expect_error("%x: <Tensor[Float32], (2, 3)>", "Cast(%x)", "t.ir:3:8: error: Cast needs the attribute 'dtype'");
}

Test(strided_slice, negative_begin_and_stride_two)
{
	expect_y("%x: <Tensor[Float32], (10, 6)>", "StridedSlice(%x) {begin: (-6, 0), end: (10, 6), strides: (2, 1)}",
	         F32("(3, 6)"));
	expect_y("%x: <Tensor[Float32], (10, 6)>", "StridedSlice(%x) {begin: (1, 1), end: (9, 5), strides: (3, 2)}",
	         F32("(3, 2)"));
}

Test(strided_slice, clamps_and_negative_end)
{
	expect_y("%x: <Tensor[Float32], (10, 6)>", "StridedSlice(%x) {begin: (0, -100), end: (100, -1), strides: (1, 1)}",
	         F32("(10, 5)"));
	expect_y("%x: <Tensor[Float32], (10,)>",
	         "StridedSlice(%x) {begin: (0,), end: (10,), strides: (9223372036854775807,)}", F32("(1,)"));
}

Test(strided_slice, errors)
{
	expect_error("%x: <Tensor[Float32], (10, 6)>", "StridedSlice(%x) {begin: (5, 0), end: (5, 6), strides: (1, 1)}",
	             "t.ir:3:25: error: StridedSlice: dim 0 of (10, 6) would be empty (begin 5, end 5)");
	expect_error("%x: <Tensor[Float32], (10, 6)>", "StridedSlice(%x) {begin: (0, 0), end: (5, 6), strides: (1, 0)}",
	             "StridedSlice: strides must be positive (entry 1, dim 1 of (10, 6), has 0)");
	expect_error("%x: <Tensor[Float32], (10, 6)>", "StridedSlice(%x) {begin: (0,), end: (5, 6), strides: (1,)}",
	             "StridedSlice: begin, end and strides need one entry each per dim they slice, as many in each "
	             "(they have 1, 2 and 1; x is (10, 6))");
	expect_error("%x: <Tensor[Float32], (10, 6)>", "StridedSlice(%x) {begin: (0, 0, 0), end: (5, 6, 1), "
	             "strides: (1, 1, 1)}", "StridedSlice: begin, end and strides have more entries that slice a dim");
	expect_error("%x: <Tensor[Float32], (10, 6)>", "StridedSlice(%x) {begin: (0, 10), end: (5, 6), strides: (1, 1), "
	             "shrink_axis_mask: 2}", "StridedSlice: entry 1 shrinks dim 1 of (10, 6) (shrink_axis_mask) to the "
	             "element at begin 10, which is outside the dim");
	expect_error("%x: <Tensor[Float32], (10, 6)>", "StridedSlice(%x) {begin: (9, 0), end: (0, 6), strides: (-1, 1)}",
	             "a negative stride (a reversal) is not supported yet");
}

/* MindSpore's masks, bit i for entry i (its test_stridedslice.py's shapes):
 * entries fewer than x's dims take the rest whole; a new axis inserts a 1
 * and wins over a shrink of the same entry; bits past the entries do
 * nothing; begin_mask and end_mask take the dim from its start, to its end. */
Test(strided_slice, masks)
{
	const char *x = "%x: <Tensor[Float32], (2, 4, 8, 16)>";
	expect_y(x, "StridedSlice(%x) {begin: (0,), end: (1,), strides: (1,)}", F32("(1, 4, 8, 16)"));
	expect_y(x, "StridedSlice(%x) {begin: (0, 0, 0, 0), end: (2, 4, 8, 16), strides: (1, 1, 1, 1), "
	         "new_axis_mask: 7}", F32("(1, 1, 1, 2, 4, 8, 16)"));
	expect_y(x, "StridedSlice(%x) {begin: (0, 0), end: (2, 4), strides: (1, 1), new_axis_mask: 7}",
	         F32("(1, 1, 2, 4, 8, 16)"));
	expect_y(x, "StridedSlice(%x) {begin: (0, 0), end: (2, 4), strides: (1, 1), new_axis_mask: 8}",
	         F32("(2, 4, 8, 16)"));
	expect_y(x, "StridedSlice(%x) {begin: (0, 0, 0, 0), end: (2, 4, 8, 16), strides: (1, 1, 1, 1), "
	         "new_axis_mask: 20}", F32("(2, 4, 1, 8, 16)"));
	expect_y(x, "StridedSlice(%x) {begin: (0, 0, 0, 0), end: (2, 4, 8, 16), strides: (1, 1, 1, 1), "
	         "new_axis_mask: 7, shrink_axis_mask: 7}", F32("(1, 1, 1, 2, 4, 8, 16)"));
	expect_y(x, "StridedSlice(%x) {begin: (0, 0, 0, 0), end: (2, 4, 8, 16), strides: (1, 1, 1, 1), "
	         "shrink_axis_mask: 7}", F32("(16,)"));
	expect_y(x, "StridedSlice(%x) {begin: (1, 1), end: (2, 4), strides: (1, 1), new_axis_mask: 6, "
	         "shrink_axis_mask: 1}", F32("(1, 4, 8, 16)"));
	expect_y(x, "StridedSlice(%x) {begin: (1, 1, 3), end: (2, 4, 8), strides: (1, 1, 1), new_axis_mask: 2, "
	         "shrink_axis_mask: 1, begin_mask: 4}", F32("(1, 4, 8, 16)"));
	expect_y(x, "StridedSlice(%x) {begin: (1, 3, -2), end: (0, 4, 0), strides: (1, 2, 1), begin_mask: 3, "
	         "end_mask: 5}", F32("(2, 2, 2, 16)"));
	expect_error("%x: <Tensor[Float32], (10,)>", "StridedSlice(%x) {begin: (0,), end: (5,)}",
	             "t.ir:3:8: error: StridedSlice needs the attribute 'strides'");
}

/* A dict's entries have no order: strides may be written before begin. */
Test(strided_slice, attribute_order_does_not_matter)
{
	expect_y("%x: <Tensor[Float32], (10, 6)>", "StridedSlice(%x) {strides: (2, 1), begin: (0, 0), end: (10, 6)}",
	         F32("(5, 6)"));
	expect_y("%x: <Tensor[Float32], (10, 6)>", "StridedSlice(%x) {end: (10, 6), strides: (2, 1), begin: (0, 0)}",
	         F32("(5, 6)"));
}

/* A dict's entries have no order: end may come before begin, and its length
 * is still checked against begin's. */
Test(strided_slice, end_length_checked_in_any_order)
{
	Run *r = op("%x: <Tensor[Float32], (10, 6)>", "StridedSlice(%x) {end: (10,), begin: (0, 0), strides: (1, 1)}");
	cr_assert_not(r->ok);
	cr_assert_eq(r->d.nerrors, 1, "got:\n%s", msgs(r));
	cr_assert(strstr(msgs(r), "as many in each (they have 2, 1 and 2; x is (10, 6))"),
	          "expected the lengths of 'end' and 'begin' compared, got:\n%s", msgs(r));
	cr_assert_null(strstr(msgs(r), "would be empty"), "a short 'end' is read as 0, got:\n%s", msgs(r));
	run_free(r);
}

/* ---- losses ---- */

Test(loss, sparse_softmax_cross_entropy_is_a_scalar)
{
	expect_y("%l: <Tensor[Float32], (16, 10)>, %t: <Tensor[Int32], (16,)>",
	         "SparseSoftmaxCrossEntropyWithLogits(%l, %t)", F32("()"));
	expect_y("%l: <Tensor[Float16], (4, 3)>, %t: <Tensor[Int64], (4,)>", "SparseSoftmaxCrossEntropyWithLogits(%l, %t)",
	         "<Tensor[Float16], ()>");
}

Test(loss, sparse_softmax_cross_entropy_errors)
{
	expect_error("%l: <Tensor[Float32], (16, 10)>, %t: <Tensor[Float32], (16,)>",
	             "SparseSoftmaxCrossEntropyWithLogits(%l, %t)",
	             "t.ir:3:8: error: SparseSoftmaxCrossEntropyWithLogits needs logits (N, C) and Int32 or Int64 labels (N,); "
	             "got (16, 10) and Float32 (16,)");
	expect_error("%l: <Tensor[Float32], (16, 10)>, %t: <Tensor[Int32], (8,)>",
	             "SparseSoftmaxCrossEntropyWithLogits(%l, %t)", "got (16, 10) and Int32 (8,)");
}

Test(loss, softmax_cross_entropy_gives_each_rows_loss)
{
	expect_y("%l: <Tensor[Float32], (16, 10)>, %t: <Tensor[Float32], (16, 10)>",
	         "SoftmaxCrossEntropyWithLogits(%l, %t)", F32("(16,)"));
	expect_y("%l: <Tensor[BFloat16], (4, 3)>, %t: <Tensor[BFloat16], (4, 3)>", "SoftmaxCrossEntropyWithLogits(%l, %t)",
	         "<Tensor[BFloat16], (4,)>");
}

Test(loss, softmax_cross_entropy_errors)
{
	expect_error("%l: <Tensor[Float32], (16, 10)>, %t: <Tensor[Int32], (16,)>",
	             "SoftmaxCrossEntropyWithLogits(%l, %t)",
	             "t.ir:3:8: error: SoftmaxCrossEntropyWithLogits needs logits (N, C) and labels (N, C) of the same float "
	             "type; got Float32 (16, 10) and Int32 (16,)");
	expect_error("%l: <Tensor[Float32], (16, 10)>, %t: <Tensor[Float32], (16, 5)>",
	             "SoftmaxCrossEntropyWithLogits(%l, %t)", "got Float32 (16, 10) and Float32 (16, 5)");
	expect_error("%l: <Tensor[Float32], (16, 10)>, %t: <Tensor[Float16], (16, 10)>",
	             "SoftmaxCrossEntropyWithLogits(%l, %t)", "got Float32 (16, 10) and Float16 (16, 10)");
	expect_error("%l: <Tensor[Float32], (4, 2, 3)>, %t: <Tensor[Float32], (4, 2, 3)>",
	             "SoftmaxCrossEntropyWithLogits(%l, %t)", "needs logits (N, C)");
	expect_error("%l: <Tensor[Int32], (4, 3)>, %t: <Tensor[Int32], (4, 3)>", "SoftmaxCrossEntropyWithLogits(%l, %t)",
	             "float");
}

Test(loss, mse_and_l1_are_scalars)
{
	expect_y("%p: <Tensor[Float32], (4, 3)>, %t: <Tensor[Float32], (4, 3)>", "MSELoss(%p, %t)", F32("()"));
	expect_y("%p: <Tensor[Float32], (4, 3)>, %t: <Tensor[Float32], (4, 3)>", "L1Loss(%p, %t)", F32("()"));
	expect_error("%p: <Tensor[Float32], (4, 3)>, %t: <Tensor[Float32], (4, 1)>", "MSELoss(%p, %t)",
	             "t.ir:3:8: error: MSELoss: prediction (4, 3) and target (4, 1) differ in shape");
	expect_error("%p: <Tensor[Int32], (4,)>, %t: <Tensor[Int32], (4,)>", "L1Loss(%p, %t)",
	             "L1Loss needs a floating-point operand, '%p' is Int32");
}

/* ---- communication ---- */

Test(comm, all_reduce_keeps_the_shape)
{
	expect_y("%x: <Tensor[Float32], (4, 3)>", "AllReduce(%x) {op: \"sum\", group: (0, 1, 2, 3)}", F32("(4, 3)"));
	expect_y("%x: <Tensor[Float32], (4, 3)>", "AllReduce(%x) {op: \"max\", group: (7, 0)}", F32("(4, 3)"));
}

Test(comm, all_gather_multiplies_the_axis)
{
	expect_y("%x: <Tensor[Float32], (2, 3)>", "AllGather(%x) {group: (0, 1, 2, 3)}", F32("(8, 3)"));
	expect_y("%x: <Tensor[Float32], (2, 3)>", "AllGather(%x) {axis: 1, group: (4, 5, 6, 7)}", F32("(2, 12)"));
	expect_y("%x: <Tensor[Float32], (2, 3)>", "AllGather(%x) {axis: -1, group: (0, 1)}", F32("(2, 6)"));
}

Test(comm, reduce_scatter_divides_the_axis)
{
	expect_y("%x: <Tensor[Float32], (4, 3)>", "ReduceScatter(%x) {op: \"sum\", group: (0, 1)}", F32("(2, 3)"));
	expect_y("%x: <Tensor[Float32], (4, 3)>", "ReduceScatter(%x) {op: \"sum\", axis: 1, group: (0, 1, 2)}",
	         F32("(4, 1)"));
	expect_error("%x: <Tensor[Float32], (6,)>", "ReduceScatter(%x) {op: \"sum\", group: (0, 1, 2, 3)}",
	             "t.ir:3:8: error: ReduceScatter: dim 0 of (6,) is not divisible by the group size 4");
}

Test(comm, all_to_all_moves_a_factor)
{
	expect_y("%x: <Tensor[Float32], (4, 3)>", "AllToAll(%x) {split_axis: 0, concat_axis: 1, group: (0, 1)}",
	         F32("(2, 6)"));
	expect_y("%x: <Tensor[Float32], (8, 4, 2)>", "AllToAll(%x) {split_axis: 1, concat_axis: 1, group: (0, 1, 2, 3)}",
	         F32("(8, 4, 2)"));
	expect_error("%x: <Tensor[Float32], (3, 4)>", "AllToAll(%x) {split_axis: 0, concat_axis: 1, group: (0, 1)}",
	             "t.ir:3:8: error: AllToAll: split dim 0 of (3, 4) is not divisible by the group size 2");
	expect_error("%x: <Tensor[Float32], (4, 4)>", "AllToAll(%x) {concat_axis: 1, group: (0, 1)}",
	             "t.ir:3:8: error: AllToAll needs the attribute 'split_axis'");
}

/* Gathering a scalar from 4 ranks gives 4 values, not one scalar. */
Test(comm, all_gather_of_a_scalar_is_refused)
{
	expect_refused("%x: <Tensor[Float32], ()>", "AllGather(%x) {group: (0, 1, 2, 3)}");
}

/* A scalar has no dim to scatter over 2 ranks. */
Test(comm, reduce_scatter_of_a_scalar_is_refused)
{
	expect_refused("%x: <Tensor[Float32], ()>", "ReduceScatter(%x) {op: \"sum\", group: (0, 1)}");
}

Test(comm, group_is_required)
{
	expect_error("%x: <Tensor[Float32], (4, 3)>", "AllReduce(%x) {op: \"sum\"}",
	             "t.ir:3:8: error: AllReduce needs the attribute 'group'");
}

/* ---- Call ---- */

static const char *callee =
	"graph @f(%a: <Tensor[Float32], (2, 3)>, %w: <Tensor[Float32], (3, 4)>) {\n"
	"  %b = MatMul(%a, %w)\n"
	"  %c = ReLU(%b)\n"
	"  return %c\n"
	"}\n";

Test(call, takes_the_callee_result_type)
{
	char text[1024];
	snprintf(text, sizeof text,
	         "%sgraph @main(%%x: <Tensor[Float32], (2, 3)>, %%w: <Parameter[Float32], (3, 4)>) {\n"
	         "  %%y = Call(%%x, %%w) {graph: @f}\n"
	         "  %%z = Call(%%x, %%w) {graph: @f}\n"
	         "  %%s = Add(%%y, %%z)\n"
	         "  return %%s\n"
	         "}\n",
	         callee);
	Run *r = infer(text);
	cr_assert(r->ok, "%s", msgs(r));
	cr_assert_str_eq(type_of(r, "y"), F32("(2, 4)"));
	cr_assert_str_eq(type_of(r, "s"), F32("(2, 4)"));
	Graph *g = module_entry(r->m);
	cr_assert_not(g->values[graph_value(g, "y")].type.is_param, "a Call's result is a Tensor");
	run_free(r);
}

Test(call, argument_type_mismatch)
{
	char text[1024];
	snprintf(text, sizeof text,
	         "%sgraph @main(%%x: <Tensor[Float32], (3, 2)>, %%w: <Tensor[Float32], (3, 4)>) {\n"
	         "  %%y = Call(%%x, %%w) {graph: @f}\n"
	         "  return %%y\n"
	         "}\n",
	         callee);
	Run *r = infer(text);
	cr_assert_not(r->ok);
	cr_assert(strstr(msgs(r), "t.ir:7:13: error: input 0 of @f is Float32 (2, 3) but '%x' is Float32 (3, 2)"), "%s",
	          msgs(r));
	cr_assert_eq(r->d.nerrors, 1);
	run_free(r);
}

Test(call, argument_count_and_several_results)
{
	Run *r = infer("graph @two(%a: <Tensor[Float32], (2,)>) {\n  %b = Neg(%a)\n  return %a, %b\n}\n"
	               "graph @main(%x: <Tensor[Float32], (2,)>) {\n"
	               "  %y = Call(%x, %x) {graph: @two}\n"
	               "  %z = Call(%x) {graph: @two}\n"
	               "  return %y, %z\n"
	               "}\n");
	cr_assert(strstr(msgs(r), "t.ir:6:8: error: @two takes 1 input, 2 given"), "%s", msgs(r));
	cr_assert(strstr(msgs(r), "t.ir:7:8: error: @two returns 2 values; Call takes a graph that returns one"), "%s",
	          msgs(r));
	cr_assert_eq(r->d.nerrors, 2);
	run_free(r);
}

/* ---- signatures, and one message per mistake ---- */

Test(signature, matching_signature_is_accepted)
{
	expect_y("%x: <Tensor[Float32], (2, 3)>",
	         "ReLU(%x) : (<Tensor[Float32], (2, 3)>) -> (<Tensor[Float32], (2, 3)>)", F32("(2, 3)"));
	expect_y("%x: <Tensor[Float32], (2, 3)>",
	         "ReLU(%x) : (<Parameter[Float32], (2, 3)>) -> (<Tensor[Float32], (2, 3)>)", F32("(2, 3)"));
}

Test(signature, result_mismatch)
{
	expect_error("%x: <Tensor[Float32], (2, 3)>",
	             "ReLU(%x) : (<Tensor[Float32], (2, 3)>) -> (<Tensor[Float32], (3, 2)>)",
	             "t.ir:3:51: error: the signature says ReLU returns Float32 (3, 2), but it returns Float32 (2, 3)");
	expect_error("%x: <Tensor[Float32], (2, 3)>",
	             "ReLU(%x) : (<Tensor[Float32], (2, 3)>) -> (<Tensor[Float16], (2, 3)>)",
	             "the signature says ReLU returns Float16 (2, 3), but it returns Float32 (2, 3)");
}

Test(signature, input_mismatch_and_counts)
{
	expect_error("%x: <Tensor[Float32], (2, 3)>",
	             "ReLU(%x) : (<Tensor[Float32], (3, 3)>) -> (<Tensor[Float32], (2, 3)>)",
	             "t.ir:3:20: error: signature input 0 is Float32 (3, 3) but '%x' is Float32 (2, 3)");
	expect_error("%x: <Tensor[Float32], (2, 3)>",
	             "ReLU(%x) : (<Tensor[Float32], (2, 3)>, <Tensor[Float32], (2, 3)>) -> (<Tensor[Float32], (2, 3)>)",
	             "t.ir:3:17: error: the signature lists 2 input types but ReLU has 1 operand");
	expect_error("%x: <Tensor[Float32], (2, 3)>",
	             "ReLU(%x) : (<Tensor[Float32], (2, 3)>) -> (<Tensor[Float32], (2, 3)>, <Tensor[Float32], (2, 3)>)",
	             "ReLU has one result but the signature lists 2");
}

Test(cascade, users_of_a_failed_value_are_silent)
{
	Run *r = infer("graph @g(%a: <Tensor[Float32], (4, 3)>, %b: <Tensor[Float32], (4, 5)>) {\n"
	               "  %m = MatMul(%a, %b)\n"
	               "  %r = ReLU(%m) : (<Tensor[Float32], (9, 9)>) -> (<Tensor[Float32], (9, 9)>)\n"
	               "  %s = Add(%r, %a)\n"
	               "  %t = Reshape(%s) {shape: (7,)}\n"
	               "  %u = Neg(%a)\n"
	               "  return %t, %u\n"
	               "}\n");
	cr_assert_not(r->ok);
	cr_assert_eq(r->d.nerrors, 1, "one mistake, one message; got:\n%s", msgs(r));
	cr_assert(strstr(msgs(r), "t.ir:2:8: error: MatMul: inner dimensions differ"), "%s", msgs(r));
	cr_assert_str_eq(type_of(r, "m"), "unknown");
	cr_assert_str_eq(type_of(r, "r"), "unknown");
	cr_assert_str_eq(type_of(r, "t"), "unknown");
	cr_assert_str_eq(type_of(r, "u"), F32("(4, 3)"), "independent values are still inferred");
	run_free(r);
}

Test(cascade, failed_callee_result_is_silent_in_the_caller)
{
	char text[1024];
	snprintf(text, sizeof text,
	         "graph @f(%%a: <Tensor[Float32], (2, 3)>) {\n  %%b = MatMul(%%a, %%a)\n  return %%b\n}\n"
	         "graph @main(%%x: <Tensor[Float32], (2, 3)>) {\n"
	         "  %%y = Call(%%x) {graph: @f}\n"
	         "  %%z = ReLU(%%y)\n"
	         "  return %%z\n"
	         "}\n");
	Run *r = infer(text);
	cr_assert_eq(r->d.nerrors, 1, "got:\n%s", msgs(r));
	cr_assert(strstr(msgs(r), "t.ir:2:8: error: MatMul: inner dimensions differ"), "%s", msgs(r));
	cr_assert_str_eq(type_of(r, "z"), "unknown");
	run_free(r);
}

Test(cascade, every_independent_mistake_is_reported)
{
	Run *r = infer("graph @g(%a: <Tensor[Float32], (4, 3)>) {\n"
	               "  %m = MatMul(%a, %a)\n"
	               "  %n = Transpose(%a) {perm: (0,)}\n"
	               "  %o = Add(%m, %n)\n"
	               "  return %o\n"
	               "}\n");
	cr_assert_eq(r->d.nerrors, 2, "got:\n%s", msgs(r));
	cr_assert(strstr(msgs(r), "t.ir:2:8: error: MatMul"), "%s", msgs(r));
	cr_assert(strstr(msgs(r), "t.ir:3:22: error: Transpose"), "%s", msgs(r));
	run_free(r);
}

/* A declared type may hold at most 2^40 elements (parse.c); an inferred one
 * must not exceed that either, or later products overflow int64. Here the
 * first Add already makes 2^41 elements, and Flatten multiplies to 2^81. */
Test(limits, broadcast_result_larger_than_2_40_elements)
{
	Run *r = infer("graph @g(%a: <Tensor[Float32], (2, 1048576, 1, 1, 1)>, %b: <Tensor[Float32], (1, 1, 1048576, 1, 1)>,\n"
	               "         %c: <Tensor[Float32], (1, 1, 1, 1048576, 1)>, %d: <Tensor[Float32], (1, 1, 1, 1, 1048576)>) {\n"
	               "  %ab = Add(%a, %b)\n"
	               "  %abc = Add(%ab, %c)\n"
	               "  %y = Add(%abc, %d)\n"
	               "  %f = Flatten(%y)\n"
	               "  return %f\n"
	               "}\n");
	cr_assert_not(r->ok, "accepted: %%ab is %s", type_of(r, "ab"));
	cr_assert(strstr(msgs(r), "t.ir:3:9: error:"), "expected an error at the first Add, got:\n%s", msgs(r));
	cr_assert_eq(r->d.nerrors, 1, "got:\n%s", msgs(r));
	run_free(r);
}

Test(limits, all_gather_result_larger_than_2_40_elements)
{
	expect_refused("%x: <Tensor[Float32], (1099511627776,)>", "AllGather(%x) {group: (0, 1)}");
}

Test(values, parameters_keep_their_declared_types)
{
	Run *r = infer("graph @g(%x: <Tensor[Int64], (2, 3)>, %w: <Parameter[BFloat16], (5,)>) {\n"
	               "  %y = Neg(%x)\n"
	               "  return %y\n"
	               "}\n");
	cr_assert(r->ok, "%s", msgs(r));
	cr_assert_str_eq(type_of(r, "x"), "<Tensor[Int64], (2, 3)>");
	cr_assert_str_eq(type_of(r, "w"), "<Parameter[BFloat16], (5,)>");
	cr_assert_str_eq(type_of(r, "y"), "<Tensor[Int64], (2, 3)>");
	run_free(r);
}

/* ---- numbers as operands: shape (), the type of the value beside them ---- */

/* The type of the number written as operand k of %y (the value just before it). */
static const char *number_type(Run *r, int k)
{
	Graph *g = module_entry(r->m);
	int y = graph_value(g, "y");
	const Node *n = &g->nodes[g->values[y].node];
	const Value *v = &g->values[n->in[k]];
	cr_assert(v->literal, "operand %d of %%y is no number", k);
	sb_free(&r->type);
	type_print(&r->type, &v->type);
	return r->type.data;
}

Test(numbers, take_the_other_operands_type)
{
	const char *cases[][3] = {
		{"%a: <Tensor[Float32], (2, 3)>", "Mul(%a, 0.125)", "<Tensor[Float32], ()>"},
		{"%a: <Tensor[Float16], (2, 3)>", "Sub(1.0, %a)", "<Tensor[Float16], ()>"},
		{"%a: <Tensor[BFloat16], (2, 3)>", "Maximum(%a, 0)", "<Tensor[BFloat16], ()>"},
		{"%a: <Tensor[Int64], (3,)>", "Add(%a, -7)", "<Tensor[Int64], ()>"},
	};
	for (int i = 0; i < 4; i++) {
		Run *r = op(cases[i][0], cases[i][1]);
		cr_assert(r->ok, "%s: %s", cases[i][1], msgs(r));
		int k = strstr(cases[i][1], "(%") ? 1 : 0;
		cr_assert_str_eq(number_type(r, k), cases[i][2], "%s", cases[i][1]);
		cr_assert_str_eq(type_of(r, "y"), strchr(cases[i][0], '<'), "%s", cases[i][1]);   /* the value's own */
		run_free(r);
	}
}

Test(numbers, not_passed_to_a_call)
{
	Run *r = infer("graph @f(%a: <Tensor[Float16], (2,)>, %s: <Tensor[Float16], ()>) {\n  %b = Mul(%a, %s)\n"
	               "  return %b\n}\ngraph @g(%x: <Tensor[Float16], (2,)>) {\n  %y = Call(%x, 0.5) {graph: @f}\n"
	               "  return %y\n}\n");
	cr_assert_not(r->ok);
	expect_msg(r, "t.ir:6:17: error: Call: a number cannot be passed to a called graph; write it where the graph "
	           "uses that input, or pass a value");
	run_free(r);
}

Test(numbers, that_do_not_fit)
{
	expect_error("%i: <Tensor[Int32], (4,)>", "Maximum(%i, 0.5)",
	             "t.ir:3:20: error: Maximum: the number 0.5 is not an integer, but the operand it goes with is Int32");
	expect_error("%h: <Tensor[Float16], (4,)>", "Mul(%h, -7e4)",
	             "t.ir:3:16: error: Mul: the number -7e4 does not fit Float16 (largest 65504)");
	expect_error("%x: <Tensor[Float32], (4,)>", "Mul(%x, 1e39)", "the number 1e39 does not fit Float32");
	expect_error("%i: <Tensor[Int32], (4,)>", "Add(%i, -2147483649)", "the number -2147483649 does not fit Int32");
	expect_error("%b: <Tensor[Bool], (4,)>", "Add(%b, 1)", "Add: the number 1 would be Bool");
	expect_error("%x: <Tensor[Float32], (4,)>", "Add(1, 2)",
	             "t.ir:3:8: error: Add: a number operand takes its type from a value operand, and Add has none");
	expect_error("%t: <Tensor[Float32], (4, 2)>", "Gather(%t, 3)",
	             "t.ir:3:19: error: Gather: the indices must be Int32 or Int64, 3 is Float32");
	expect_refused("%x: <Tensor[Float32], (4, 2)>", "MatMul(%x, 2.0)");
}

/* The computed constants: no operands; the whole value from the
 * attributes, then the piece [begin, end) (docs/operators.md). */
Test(constants, shapes_and_types)
{
	const char *none = "%x: <Tensor[Float32], (2,)>";
	expect_y(none, "Arange() {stop: 16}", "<Tensor[Int64], (16,)>");   /* MindSpore's: Int64 from integers */
	expect_y(none, "Arange() {start: 0.5, stop: 4.5, step: 0.25}", F32("(16,)"));
	expect_y(none, "Arange() {start: 10, stop: -6, step: -2, dtype: Int32}", "<Tensor[Int32], (8,)>");
	expect_y(none, "Arange() {stop: 10, step: 3}", "<Tensor[Int64], (4,)>");   /* 0 3 6 9 */
	expect_y(none, "Arange() {stop: 16, begin: (4,), end: (12,)}", "<Tensor[Int64], (8,)>");
	expect_y(none, "CausalMask() {shape: (1, 1, 8, 8)}", F32("(1, 1, 8, 8)"));
	expect_y(none, "CausalMask() {shape: (4, 6), dtype: Bool}", "<Tensor[Bool], (4, 6)>");
	expect_y(none, "CausalMask() {shape: (8, 8), dtype: BFloat16, fill: -1e9}", "<Tensor[BFloat16], (8, 8)>");
	expect_y(none, "RopeCos() {shape: (16, 64), dtype: Float16}", "<Tensor[Float16], (16, 64)>");
	expect_y(none, "RopeSin() {shape: (16, 64), begin: (8, 0), end: (16, 32)}", F32("(8, 32)"));
}

Test(constants, errors)
{
	const char *none = "%x: <Tensor[Float32], (2,)>";
	expect_error(none, "CausalMask() {shape: (8,)}",
	             "t.ir:3:29: error: CausalMask: shape (8,) has rank 1; it needs 2 dims or more, (S, S) or (1, 1, S, S): "
	             "the last two are the query and the key positions");
	expect_error(none, "RopeSin() {shape: (8, 5)}",
	             "t.ir:3:26: error: RopeSin: the last dim, the head dim, must be even (its two halves share the "
	             "frequencies: the rotate-half layout); it is 5");
	expect_error(none, "Arange() {start: 3, stop: 3}",
	             "t.ir:3:8: error: Arange: start 3, stop 3 and step 1 give no element (the range is empty)");
	expect_refused(none, "Arange() {start: 70000.0, stop: 70001.0, dtype: Float16}");   /* past 65504 */
	expect_error(none, "CausalMask(%x) {shape: (2, 2)}", "t.ir:3:8: error: CausalMask takes 0 operands, 1 given");
	expect_error(none, "RopeCos() {shape: (4, 4), end: (4, 4, 4)}",
	             "t.ir:3:39: error: RopeCos: end has 3 entries; it takes one per dim of the whole value (4, 4)");
}

/* Tril and Triu: x's type and shape, any element type, two dims or more;
 * the diagonal an integer attribute (MindSpore's Triu input refused). */
Test(triangle, shapes_types_and_errors)
{
	expect_y("%x: <Tensor[Float32], (2, 3, 4)>", "Tril(%x) {diagonal: -1}", F32("(2, 3, 4)"));
	expect_y("%x: <Tensor[BFloat16], (3, 4)>", "Triu(%x)", "<Tensor[BFloat16], (3, 4)>");
	expect_y("%x: <Tensor[Int32], (4, 4)>", "Tril(%x) {diagonal: 9}", "<Tensor[Int32], (4, 4)>");
	expect_y("%x: <Tensor[Bool], (1, 5)>", "Triu(%x) {diagonal: 2}", "<Tensor[Bool], (1, 5)>");
	expect_y("%x: <Parameter[Float32], (3, 3)>", "Tril(%x)", F32("(3, 3)"));   /* a Tensor, not a Parameter */
	expect_error("%x: <Tensor[Float32], (8,)>", "Tril(%x)",
	             "t.ir:3:13: error: Tril: x '%x' (8,) has 1 dim; it needs two or more, the last two the matrix whose "
	             "triangle it keeps (Reshape it to (1, n) first)");
	expect_error("%x: <Tensor[Float32], (2, 2)>", "Triu(%x, 1)", "Triu takes 1 operand, 2 given; the number after "
	             "them is an attribute here (MindSpore passes it as an input): Triu(...) {diagonal: ...}");
	expect_error("%x: <Tensor[Float32], (2, 2)>", "Tril(%x) {diagonal: 0.5}",
	             "attribute 'diagonal' of Tril is");
}

/* PadV3: each dim of x lengthened by its pair, the pairs from the last dim
 * back (or, paddings_contiguous false, the befores then the afters), any
 * element type; the constant a number of x's type; no crop, no other mode. */
Test(pad_v3, shapes_types_and_errors)
{
	expect_y("%x: <Tensor[Float32], (2, 3, 4)>", "PadV3(%x, 0.5) {paddings: (1, 2)}", F32("(2, 3, 7)"));
	expect_y("%x: <Tensor[Float32], (2, 3, 4)>", "PadV3(%x) {paddings: (0, 0, 1, 2, 3, 0)}", F32("(5, 6, 4)"));
	/* befores (1, 2), afters (3, 0): the last dim 1 + 4 + 3, dim 1 2 + 3 + 0 */
	expect_y("%x: <Tensor[Float32], (2, 3, 4)>", "PadV3(%x) {paddings: (1, 2, 3, 0), paddings_contiguous: false}",
	         F32("(2, 5, 8)"));
	expect_y("%x: <Tensor[Int32], (3,)>", "PadV3(%x, 7) {paddings: (1, 1), mode: \"constant\"}",
	         "<Tensor[Int32], (5,)>");
	expect_y("%x: <Tensor[Bool], (2, 2)>", "PadV3(%x) {paddings: ()}", "<Tensor[Bool], (2, 2)>");
	expect_y("%x: <Parameter[BFloat16], (2, 2)>", "PadV3(%x, 0.1) {paddings: (1, 0)}", "<Tensor[BFloat16], (2, 3)>");
	expect_error("%x: <Tensor[Float32], (2, 3)>", "PadV3(%x) {paddings: (1, 1, 1)}",
	             "t.ir:3:29: error: PadV3: paddings has 3 entries; it takes pairs (before, after)");
	expect_error("%x: <Tensor[Float32], (2, 3)>", "PadV3(%x) {paddings: (1, 1, 1, 1, 1, 1)}",
	             "PadV3: paddings has 6 entries, pairs for 3 dims, but x '%x' (2, 3) has 2");
	expect_error("%x: <Tensor[Float32], (2, 3)>", "PadV3(%x) {paddings: (0, -1)}",
	             "PadV3: paddings entry 1 is -1; a negative padding crops, which shardc does not take: cut x with "
	             "StridedSlice or Slice instead");
	expect_error("%x: <Tensor[Float32], (2, 3)>, %v: <Tensor[Float32], ()>", "PadV3(%x, %v) {paddings: (1, 1)}",
	             "PadV3: the constant '%v' is a tensor; write it as a number, PadV3(%x, 0.5)");
	expect_error("%x: <Tensor[Float32], (2, 3)>", "PadV3(%x)", "PadV3 needs the attribute 'paddings'");
	expect_error("%x: <Tensor[Int32], (2, 3)>", "PadV3(%x, 0.5) {paddings: (1, 1)}",
	             "PadV3: the number 0.5 is not an integer, but the operand it goes with is Int32");
	expect_error("%x: <Tensor[Float32], (2, 3)>", "PadV3(%x) {paddings: (1, 1), mode: \"circular\"}",
	             "PadV3's mode \"circular\" is not supported: shardc pads with a constant only");
}
