/* test_eval.c: the simulator's reference evaluator (tests/sim/eval.c):
 * every computing operator of docs/operators.md against values computed by hand (or,
 * for transcendental ones, by numpy, as noted), its refusals, and the
 * deterministic initializers of docs/output.md against an independent Python
 * implementation.
 *
 * A test writes a graph as IR text, runs the passes up to infer_shapes,
 * feeds the graph's inputs, evaluates every node in order and compares a
 * value's shape as the IR writes it, e.g. `(2, 3)`, and its elements. */
#include <criterion/criterion.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eval.h"
#include "harness.h"
#include "shardc.h"

/* ---- helpers ---- */

/* A compiled graph and a value per value id: inputs as fed, zeros until
 * then, and each node's result once evaluated. */
typedef struct {
	Run *r;
	Graph *g;
	SimTensor *v;            /* (g->nvalues) */
} Sim;

#define V(...) ((const double[]){__VA_ARGS__})

static Sim *sim_text(const char *text)
{
	Sim *s = calloc(1, sizeof *s);
	s->r = run_passes("t.ir", text, strlen(text), PASSES_SHAPES);
	expect_clean(s->r);
	s->g = module_entry(s->r->m);
	s->v = calloc((size_t)s->g->nvalues, sizeof *s->v);
	for (int i = 0; i < s->g->nparams; i++)
		s->v[i] = sim_tensor_new(s->g->values[i].type.rank, s->g->values[i].type.dims);
	return s;
}

/* One statement `%y = STMT` over the inputs PARAMS. */
static Sim *sim_op(const char *params, const char *stmt)
{
	char text[2048];
	snprintf(text, sizeof text, "context {device_num: 2}\ngraph @g(%s) {\n  %%y = %s\n  return %%y\n}\n", params,
	         stmt);
	return sim_text(text);
}

static int id_of(Sim *s, const char *name)
{
	int id = graph_value(s->g, name);
	cr_assert_geq(id, 0, "no value %%%s", name);
	return id;
}

/* Sets input NAME to VALS, as many as its type holds. */
static void feed(Sim *s, const char *name, const double *vals)
{
	SimTensor *t = &s->v[id_of(s, name)];
	memcpy(t->data, vals, sizeof(double) * (size_t)t->size);
}

/* Evaluates node i; false with the evaluator's message in err. */
static bool eval_node(Sim *s, int i, char *err, size_t n)
{
	const Node *node = &s->g->nodes[i];
	SimTensor ins[8];
	cr_assert_leq(node->nin, 8);
	for (int k = 0; k < node->nin; k++)
		ins[k] = s->v[node->in[k]];
	sim_tensor_free(&s->v[node->result]);
	return sim_eval_node(s->g, node, ins, &s->v[node->result], err, n);
}

static void eval_all(Sim *s)
{
	for (int i = 0; i < s->g->nnodes; i++) {
		char err[512] = "";
		cr_assert(eval_node(s, i, err, sizeof err), "node %d failed: %s", i, err);
	}
}

/* Evaluates the graph's last node, which must fail, and returns its message
 * (in the caller's buffer); the result is left empty. */
static const char *eval_error(Sim *s, char *err, size_t n)
{
	int last = s->g->nnodes - 1;
	cr_assert_not(eval_node(s, last, err, n), "node %d evaluated without complaint", last);
	const SimTensor *y = &s->v[s->g->nodes[last].result];
	cr_assert(y->data == NULL && y->size == 0, "a failed evaluation leaves its result empty");
	return err;
}

/* The relative tolerance of a double reference whose expected values were
 * printed to 17 digits. */
static void expect_near(double got, double want, const char *what, int64_t i)
{
	if (isnan(want) || isinf(want))
		cr_assert(isnan(want) ? isnan(got) : got == want, "%s[%lld] = %.17g, expected %.17g", what, (long long)i, got,
		          want);
	else
		cr_assert(fabs(got - want) <= 1e-12 * fmax(1, fabs(want)), "%s[%lld] = %.17g, expected %.17g", what,
		          (long long)i, got, want);
}

/* Value NAME has shape DIMS, as the IR writes it, and the elements WANT. */
static void expect_value(Sim *s, const char *name, const char *dims, const double *want)
{
	const SimTensor *t = &s->v[id_of(s, name)];
	cr_assert_not_null(t->data, "%%%s was not evaluated", name);
	StrBuf b = {0};
	ints_print(&b, t->dims, t->rank);
	bool same = strcmp(b.data, dims) == 0;
	sb_free(&b);
	cr_assert(same, "%%%s does not have the shape %s", name, dims);
	for (int64_t i = 0; i < t->size; i++)
		expect_near(t->data[i], want[i], name, i);
}

static void sim_done(Sim *s)
{
	for (int i = 0; i < s->g->nvalues; i++)
		sim_tensor_free(&s->v[i]);
	free(s->v);
	Run *r = s->r;
	free(s);
	run_free(r);
}

/* `%y = STMT` over PARAMS with the inputs %a (and %b when B is not NULL)
 * gives Y of shape DIMS. */
static void expect_op(const char *params, const char *stmt, const double *a, const double *b, const char *dims,
                      const double *y)
{
	Sim *s = sim_op(params, stmt);
	feed(s, "a", a);
	if (b)
		feed(s, "b", b);
	eval_all(s);
	expect_value(s, "y", dims, y);
	sim_done(s);
}

#define T(dims) "<Tensor[Float32], " dims ">"
#define AB(da, db) "%a: " T(da) ", %b: " T(db)

/* ---- tensors ---- */

Test(tensor, new_copy_free)
{
	SimTensor t = sim_tensor_new(2, (int64_t[]){2, 3});
	cr_assert_eq(t.size, 6);
	for (int i = 0; i < 6; i++)
		cr_assert_eq(t.data[i], 0);
	t.data[4] = 7;
	SimTensor c = sim_tensor_copy(&t);
	t.data[4] = 1;
	cr_assert_eq(c.data[4], 7, "a copy owns its data");
	cr_assert_eq(c.rank, 2);
	cr_assert_eq(c.dims[1], 3);
	SimTensor scalar = sim_tensor_new(0, NULL);
	cr_assert_eq(scalar.size, 1);
	sim_tensor_free(&t);
	sim_tensor_free(&c);
	sim_tensor_free(&scalar);
	cr_assert_null(t.data);
	sim_tensor_free(&t);   /* freeing twice is harmless: the first left it empty */
	cr_assert_eq(leak_check(), 0);
}

/* ---- MatMul and BatchMatMul ---- */

/* [[1, 2, 3], [4, 5, 6]] times [[1, 0], [0, 1], [1, 1]], each operand
 * written transposed when its flag says so. */
Test(matmul, every_transpose_gives_the_same_product)
{
	const double *a = V(1, 2, 3, 4, 5, 6), *at = V(1, 4, 2, 5, 3, 6);
	const double *b = V(1, 0, 0, 1, 1, 1), *bt = V(1, 0, 1, 0, 1, 1);
	const double *y = V(4, 5, 10, 11);
	expect_op(AB("(2, 3)", "(3, 2)"), "MatMul(%a, %b)", a, b, "(2, 2)", y);
	expect_op(AB("(3, 2)", "(3, 2)"), "MatMul(%a, %b) {transpose_a: true}", at, b, "(2, 2)", y);
	expect_op(AB("(2, 3)", "(2, 3)"), "MatMul(%a, %b) {transpose_b: true}", a, bt, "(2, 2)", y);
	expect_op(AB("(3, 2)", "(2, 3)"), "MatMul(%a, %b) {transpose_a: true, transpose_b: true}", at, bt, "(2, 2)", y);
}

Test(matmul, non_square)
{
	/* (1, 3) x (3, 4): a row times a matrix */
	expect_op(AB("(1, 3)", "(3, 4)"), "MatMul(%a, %b)", V(1, 2, 3), V(1, 0, 0, 1, 0, 1, 0, 1, 0, 0, 1, 1), "(1, 4)",
	          V(1, 2, 3, 6));
}

Test(batch_matmul, a_missing_batch_dim_broadcasts)
{
	/* [[1, 2], [3, 4]] and [[0, 1], [1, 0]], each times [[1, 1], [0, 2]] */
	expect_op(AB("(2, 2, 2)", "(2, 2)"), "BatchMatMul(%a, %b)", V(1, 2, 3, 4, 0, 1, 1, 0), V(1, 1, 0, 2),
	          "(2, 2, 2)", V(1, 5, 3, 11, 0, 2, 1, 1));
}

Test(batch_matmul, batch_dims_of_one_broadcast_both_ways)
{
	/* a: rows [1, 2], [3, 4] over batch (2, 1); b: columns (1, 0), (0, 1),
	 * (1, 1) over batch (3,): every row with every column */
	expect_op(AB("(2, 1, 1, 2)", "(3, 2, 1)"), "BatchMatMul(%a, %b)", V(1, 2, 3, 4), V(1, 0, 0, 1, 1, 1),
	          "(2, 3, 1, 1)", V(1, 2, 3, 3, 4, 7));
}

Test(batch_matmul, transposes)
{
	/* [[1, 2], [3, 4]]^T times [[1, 0], [1, 1]]^T = [[1, 3], [2, 4]] [[1, 1], [0, 1]] */
	expect_op(AB("(1, 2, 2)", "(1, 2, 2)"), "BatchMatMul(%a, %b) {transpose_a: true, transpose_b: true}",
	          V(1, 2, 3, 4), V(1, 0, 1, 1), "(1, 2, 2)", V(1, 4, 2, 6));
}

/* ---- elementwise binary operators ---- */

Test(binary, add_broadcasts_a_row)
{
	expect_op(AB("(2, 3)", "(3,)"), "Add(%a, %b)", V(1, 2, 3, 4, 5, 6), V(10, 20, 30), "(2, 3)",
	          V(11, 22, 33, 14, 25, 36));
}

Test(binary, sub_broadcasts_a_column_against_a_row)
{
	expect_op(AB("(2, 1)", "(1, 3)"), "Sub(%a, %b)", V(1, 2), V(1, 2, 3), "(2, 3)", V(0, -1, -2, 1, 0, -1));
}

Test(binary, mul_by_a_scalar_on_either_side)
{
	expect_op(AB("(2, 2)", "()"), "Mul(%a, %b)", V(1, 2, 3, 4), V(2), "(2, 2)", V(2, 4, 6, 8));
	expect_op(AB("(2, 2)", "()"), "Mul(%b, %a)", V(1, 2, 3, 4), V(-1), "(2, 2)", V(-1, -2, -3, -4));
}

Test(binary, div)
{
	expect_op(AB("(2, 2)", "(2, 1)"), "Div(%a, %b)", V(1, 2, 3, 4), V(2, 4), "(2, 2)", V(0.5, 1, 0.75, 1));
}

Test(binary, maximum_and_minimum)
{
	expect_op(AB("(3,)", "(2, 1)"), "Maximum(%a, %b)", V(1, 5, -2), V(0, 3), "(2, 3)", V(1, 5, 0, 3, 5, 3));
	expect_op(AB("(3,)", "(2, 1)"), "Minimum(%a, %b)", V(1, 5, -2), V(0, 3), "(2, 3)", V(0, 0, -2, 1, 3, -2));
}

Test(binary, maximum_and_minimum_propagate_nan)
{
	/* numpy: np.maximum(nan, 0) is nan */
	expect_op(AB("(2,)", "(2,)"), "Maximum(%a, %b)", V(NAN, 1), V(0, 2), "(2,)", V(NAN, 2));
	expect_op(AB("(2,)", "(2,)"), "Minimum(%a, %b)", V(1, 3), V(NAN, 2), "(2,)", V(NAN, 2));
}

Test(binary, integer_division_truncates_and_saturates)
{
	/* Int32 results: 7 / 2 -> 3, -7 / 2 -> -3 (toward zero), 1 / 0 -> the largest Int32 */
	expect_op("%a: <Tensor[Int32], (3,)>, %b: <Tensor[Int32], (3,)>", "Div(%a, %b)", V(7, -7, 1), V(2, 2, 0), "(3,)",
	          V(3, -3, 2147483647));
}

/* The comparisons: Bool results, 1 or 0, broadcast as numpy's; a NaN
 * compares false but unequal; a scalar on the left. */
Test(binary, comparisons)
{
	const char *ab = AB("(3,)", "(2, 1)");
	expect_op(ab, "Equal(%a, %b)", V(1, 2, NAN), V(2, 1), "(2, 3)", V(0, 1, 0, 1, 0, 0));
	expect_op(ab, "NotEqual(%a, %b)", V(1, 2, NAN), V(2, 1), "(2, 3)", V(1, 0, 1, 0, 1, 1));
	expect_op(ab, "Greater(%a, %b)", V(1, 2, NAN), V(2, 1), "(2, 3)", V(0, 0, 0, 0, 1, 0));
	expect_op(ab, "GreaterEqual(%a, %b)", V(1, 2, NAN), V(2, 1), "(2, 3)", V(0, 1, 0, 1, 1, 0));
	expect_op(ab, "Less(%a, %b)", V(1, 2, NAN), V(2, 1), "(2, 3)", V(1, 0, 0, 0, 0, 0));
	expect_op(ab, "LessEqual(%a, %b)", V(1, 2, NAN), V(2, 1), "(2, 3)", V(1, 1, 0, 1, 0, 0));
	expect_op(AB("(3,)", "()"), "Less(%b, %a)", V(0, 0.5, 1), V(0.5), "(3,)", V(0, 0, 1));
}

Test(bias_add, adds_along_the_last_axis)
{
	expect_op(AB("(2, 2, 3)", "(3,)"), "BiasAdd(%a, %b)", V(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11), V(1, 10, 100),
	          "(2, 2, 3)", V(1, 11, 102, 4, 14, 105, 7, 17, 108, 10, 20, 111));
}

/* ---- elementwise unary operators ---- */

#define X4 "%a: " T("(4,)")
#define IN4 V(-1, 0, 0.5, 2)

Test(unary, relu_neg_square)
{
	expect_op(X4, "ReLU(%a)", IN4, NULL, "(4,)", V(0, 0, 0.5, 2));
	expect_op(X4, "Neg(%a)", IN4, NULL, "(4,)", V(1, 0, -0.5, -2));
	expect_op(X4, "Square(%a)", IN4, NULL, "(4,)", V(1, 0, 0.25, 4));
}

/* Expected values from numpy on x = [-1, 0, 0.5, 2]:
 *   0.5*x*(1+np.tanh(math.sqrt(2/math.pi)*(x+0.044715*x**3))), np.tanh(x),
 *   1/(1+np.exp(-x)), np.exp(x) */
Test(unary, gelu_tanh_form)
{
	expect_op(X4, "GeLU(%a)", IN4, NULL, "(4,)", V(-0.1588080093917233, 0.0, 0.34571400982514394, 1.954597694087775));
}

/* approximate: "none": 0.5*x*(1+math.erf(x/math.sqrt(2))) on the same x */
Test(unary, gelu_erf_form)
{
	expect_op(X4, "GeLU(%a) {approximate: \"none\"}", IN4, NULL, "(4,)",
	          V(-0.15865525393145707, 0.0, 0.34573123063700656, 1.9544997361036416));
	expect_op(X4, "GeLU(%a) {approximate: \"tanh\"}", IN4, NULL, "(4,)",
	          V(-0.1588080093917233, 0.0, 0.34571400982514394, 1.954597694087775));
}

Test(unary, tanh_sigmoid_exp)
{
	expect_op(X4, "Tanh(%a)", IN4, NULL, "(4,)", V(-0.7615941559557649, 0.0, 0.46211715726000974, 0.9640275800758169));
	expect_op(X4, "Sigmoid(%a)", IN4, NULL, "(4,)", V(0.2689414213699951, 0.5, 0.6224593312018546, 0.8807970779778825));
	expect_op(X4, "Exp(%a)", IN4, NULL, "(4,)", V(0.3678794411714424, 1.0, 1.6487212707001282, 7.38905609893065));
}

Test(unary, log_sqrt)
{
	/* ln 4 = 2 ln 2 = 1.3862943611198906, ln 0.5 = -0.6931471805599453 */
	expect_op("%a: " T("(3,)"), "Log(%a)", V(1, 4, 0.5), NULL, "(3,)", V(0, 1.3862943611198906, -0.6931471805599453));
	expect_op("%a: " T("(3,)"), "Sqrt(%a)", V(1, 4, 0.5), NULL, "(3,)", V(1, 2, 0.7071067811865476));
	expect_op("%a: " T("(2,)"), "Log(%a)", V(-1, 0), NULL, "(2,)", V(NAN, -INFINITY));
}

/* numpy: 1/np.sqrt(x) on [1, 4, 0.5]; x/(1+np.exp(-x)) on x = [-1, 0, 0.5, 2] */
Test(unary, rsqrt_silu)
{
	expect_op("%a: " T("(3,)"), "Rsqrt(%a)", V(1, 4, 0.5), NULL, "(3,)", V(1, 0.5, 1.414213562373095));
	expect_op(X4, "SiLU(%a)", IN4, NULL, "(4,)", V(-0.2689414213699951, 0.0, 0.3112296656009273, 1.761594155955765));
}

/* ---- Select: numpy's where(c, a, b) ---- */

Test(select, picks_by_the_condition)
{
	Sim *s = sim_op("%c: <Tensor[Bool], (2, 3)>, %a: " T("(2, 3)") ", %b: " T("(2, 3)"), "Select(%c, %a, %b)");
	feed(s, "c", V(1, 0, 0, 1, 1, 0));
	feed(s, "a", V(1, 2, 3, 4, 5, 6));
	feed(s, "b", V(-1, -2, -3, -4, -5, -6));
	eval_all(s);
	expect_value(s, "y", "(2, 3)", V(1, -2, -3, 4, 5, -6));
	sim_done(s);
}

/* ---- Softmax and LogSoftmax ---- */

/* Expected values from numpy on s = [[1, 2, 3], [1, 1, 4]]:
 *   e = np.exp(s - s.max(axis, keepdims=True)); e / e.sum(axis, keepdims=True)
 *   s - m - np.log(np.exp(s - m).sum(axis, keepdims=True)), m the max */
#define S23 "%a: " T("(2, 3)")
#define SIN V(1, 2, 3, 1, 1, 4)

Test(softmax, default_axis_is_the_last)
{
	const double *y = V(0.09003057317038043, 0.24472847105479767, 0.6652409557748218, 0.04527850074362906,
	                    0.04527850074362906, 0.9094429985127419);
	expect_op(S23, "Softmax(%a)", SIN, NULL, "(2, 3)", y);
	expect_op(S23, "Softmax(%a) {axis: 1}", SIN, NULL, "(2, 3)", y);
}

Test(softmax, axis_zero)
{
	expect_op(S23, "Softmax(%a) {axis: 0}", SIN, NULL, "(2, 3)",
	          V(0.5, 0.7310585786300049, 0.26894142136999516, 0.5, 0.26894142136999516, 0.7310585786300049));
}

Test(softmax, large_values_do_not_overflow)
{
	expect_op("%a: " T("(2,)"), "Softmax(%a)", V(1000, 1000), NULL, "(2,)", V(0.5, 0.5));
}

Test(log_softmax, default_and_negative_axis)
{
	expect_op(S23, "LogSoftmax(%a)", SIN, NULL, "(2, 3)",
	          V(-2.4076059644443806, -1.4076059644443804, -0.40760596444438035, -3.094922956420961, -3.094922956420961,
	            -0.09492295642096091));
	expect_op(S23, "LogSoftmax(%a) {axis: -2}", SIN, NULL, "(2, 3)",
	          V(-0.6931471805599453, -0.3132616875182228, -1.3132616875182228, -0.6931471805599453,
	            -1.3132616875182228, -0.3132616875182228));
}

/* ---- reductions ---- */

#define R23 "%a: " T("(2, 3)")
#define R223 "%a: " T("(2, 2, 3)")
#define IOTA12 V(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)

Test(reduce, sum_of_everything_without_an_axis)
{
	expect_op(R23, "ReduceSum(%a)", V(1, 2, 3, 4, 5, 6), NULL, "()", V(21));
	expect_op(R23, "ReduceSum(%a) {axis: ()}", V(1, 2, 3, 4, 5, 6), NULL, "()", V(21));
	expect_op(R23, "ReduceSum(%a) {keep_dims: true}", V(1, 2, 3, 4, 5, 6), NULL, "(1, 1)", V(21));
}

Test(reduce, sum_over_one_axis)
{
	expect_op(R23, "ReduceSum(%a) {axis: 1}", V(1, 2, 3, 4, 5, 6), NULL, "(2,)", V(6, 15));
	expect_op(R23, "ReduceSum(%a) {axis: -2, keep_dims: true}", V(1, 2, 3, 4, 5, 6), NULL, "(1, 3)", V(5, 7, 9));
}

Test(reduce, sum_over_a_tuple_of_axes)
{
	/* x[i][j][k] = 6i + 3j + k; over i and k: j = 0 gives 0+1+2+6+7+8 */
	expect_op(R223, "ReduceSum(%a) {axis: (0, 2)}", IOTA12, NULL, "(2,)", V(24, 42));
	expect_op(R223, "ReduceSum(%a) {axis: (2, 0), keep_dims: true}", IOTA12, NULL, "(1, 2, 1)", V(24, 42));
}

Test(reduce, mean)
{
	expect_op(R223, "ReduceMean(%a) {axis: (-1, 0)}", IOTA12, NULL, "(2,)", V(4, 7));
	expect_op(R223, "ReduceMean(%a) {keep_dims: true}", IOTA12, NULL, "(1, 1, 1)", V(5.5));
	expect_op(R23, "ReduceMean(%a) {axis: 0}", V(1, 2, 3, 4, 5, 6), NULL, "(3,)", V(2.5, 3.5, 4.5));
}

Test(reduce, max_of_negative_numbers)
{
	expect_op(R23, "ReduceMax(%a) {axis: 1}", V(-1, -5, -3, -7, -2, -9), NULL, "(2,)", V(-1, -2));
	expect_op(R23, "ReduceMax(%a)", V(-1, -5, -3, -7, -2, -9), NULL, "()", V(-1));
	expect_op(R23, "ReduceMax(%a) {axis: -2, keep_dims: true}", V(-1, -5, -3, -7, -2, -9), NULL, "(1, 3)",
	          V(-1, -2, -3));
}

Test(reduce, max_propagates_nan)
{
	expect_op("%a: " T("(3,)"), "ReduceMax(%a)", V(1, NAN, 2), NULL, "()", V(NAN));
}

Test(reduce, min_of_positive_numbers)
{
	expect_op(R23, "ReduceMin(%a) {axis: 1}", V(1, 5, 3, 7, 2, 9), NULL, "(2,)", V(1, 2));
	expect_op(R23, "ReduceMin(%a)", V(1, 5, 3, 7, 2, 9), NULL, "()", V(1));
	expect_op(R23, "ReduceMin(%a) {axis: -2, keep_dims: true}", V(1, 5, 3, 7, 2, 9), NULL, "(1, 3)", V(1, 2, 3));
}

Test(reduce, min_propagates_nan)
{
	expect_op("%a: " T("(3,)"), "ReduceMin(%a)", V(1, NAN, 2), NULL, "()", V(NAN));
}

Test(reduce, integer_mean_truncates)
{
	expect_op("%a: <Tensor[Int32], (3,)>", "ReduceMean(%a)", V(1, 2, 4), NULL, "()", V(2));
}

/* ---- data movement ---- */

Test(reshape, keeps_the_row_major_data)
{
	expect_op(R23, "Reshape(%a) {shape: (3, -1)}", V(1, 2, 3, 4, 5, 6), NULL, "(3, 2)", V(1, 2, 3, 4, 5, 6));
	expect_op(R23, "Reshape(%a) {shape: (6,)}", V(1, 2, 3, 4, 5, 6), NULL, "(6,)", V(1, 2, 3, 4, 5, 6));
}

Test(flatten, keeps_the_first_dim)
{
	expect_op(R223, "Flatten(%a)", IOTA12, NULL, "(2, 6)", IOTA12);
}

Test(transpose, two_d)
{
	expect_op(R23, "Transpose(%a) {perm: (1, 0)}", V(1, 2, 3, 4, 5, 6), NULL, "(3, 2)", V(1, 4, 2, 5, 3, 6));
}

Test(transpose, three_d)
{
	/* x (2, 3, 4) holds 12b + 4c + a at [b][c][a]; y[a][b][c] = x[b][c][a] */
	Sim *s = sim_op("%a: " T("(2, 3, 4)"), "Transpose(%a) {perm: (2, 0, 1)}");
	double x[24];
	for (int i = 0; i < 24; i++)
		x[i] = i;
	feed(s, "a", x);
	eval_all(s);
	expect_value(s, "y", "(4, 2, 3)",
	             V(0, 4, 8, 12, 16, 20, 1, 5, 9, 13, 17, 21, 2, 6, 10, 14, 18, 22, 3, 7, 11, 15, 19, 23));
	sim_done(s);
}

Test(concat, axis_one)
{
	expect_op(AB("(2, 1)", "(2, 2)"), "Concat(%a, %b) {axis: 1}", V(1, 2), V(3, 4, 5, 6), "(2, 3)",
	          V(1, 3, 4, 2, 5, 6));
}

Test(concat, default_axis_is_zero)
{
	expect_op(AB("(1, 2)", "(2, 2)"), "Concat(%a, %b)", V(1, 2), V(3, 4, 5, 6), "(3, 2)", V(1, 2, 3, 4, 5, 6));
}

Test(concat, three_operands_negative_axis)
{
	Sim *s = sim_op("%a: " T("(2, 1)") ", %b: " T("(2, 1)") ", %c: " T("(2, 2)"), "Concat(%a, %b, %c) {axis: -1}");
	feed(s, "a", V(1, 2));
	feed(s, "b", V(3, 4));
	feed(s, "c", V(5, 6, 7, 8));
	eval_all(s);
	expect_value(s, "y", "(2, 4)", V(1, 3, 5, 6, 2, 4, 7, 8));
	sim_done(s);
}

/* ---- Gather ---- */

#define TABLE V(0, 1, 10, 11, 20, 21, 30, 31)   /* row r is (10r, 10r + 1) */

Test(gather, looks_up_rows)
{
	expect_op("%a: " T("(4, 2)") ", %b: <Tensor[Int32], (2, 2)>", "Gather(%a, %b)", TABLE, V(3, 0, 1, 1),
	          "(2, 2, 2)", V(30, 31, 0, 1, 10, 11, 10, 11));
	expect_op("%a: " T("(4, 2)") ", %b: <Tensor[Int64], ()>", "Gather(%a, %b) {axis: 0}", TABLE, V(2), "(2,)",
	          V(20, 21));
}

Test(gather, along_axis_1_and_the_last)
{
	/* TABLE as (2, 4): row o is 0, 1, 10, 11 and 20, 21, 30, 31 */
	expect_op("%a: " T("(2, 4)") ", %b: <Tensor[Int32], (3,)>", "Gather(%a, %b) {axis: 1}", TABLE, V(3, 0, 3),
	          "(2, 3)", V(11, 0, 11, 31, 20, 31));
	expect_op("%a: " T("(2, 2, 2)") ", %b: <Tensor[Int32], (1, 2)>", "Gather(%a, %b) {axis: -1, offset: 1}", TABLE,
	          V(1, 3), "(2, 2, 1, 2)", V(0, 0, 10, 0, 20, 0, 30, 0));
}

Test(gather, offset_shard_masks_rows_it_does_not_hold)
{
	/* the shard holds rows 2 and 3 of TABLE: index 0 and 5 are elsewhere */
	expect_op("%a: " T("(2, 2)") ", %b: <Tensor[Int32], (4,)>", "Gather(%a, %b) {offset: 2}", V(20, 21, 30, 31),
	          V(0, 2, 3, 5), "(4, 2)", V(0, 0, 20, 21, 30, 31, 0, 0));
}

Test(gather, out_of_range_and_negative_indices_give_zeros)
{
	/* no numpy wrap-around: -1 is a row no shard holds, so zeros */
	expect_op("%a: " T("(4, 1)") ", %b: <Tensor[Int64], (4,)>", "Gather(%a, %b)", V(5, 6, 7, 8), V(3, -1, 0, 4),
	          "(4, 1)", V(8, 0, 5, 0));
}

Test(gather, shards_sum_to_the_whole_lookup)
{
	/* two row shards of TABLE, evaluated with their offsets and added,
	 * equal the serial lookup: what AllReduce after a split Gather relies on */
	const char *text = "graph @g(%t0: " T("(2, 2)") ", %t1: " T("(2, 2)") ", %t: " T("(4, 2)")
	                   ", %i: <Tensor[Int32], (3,)>) {\n"
	                   "  %p0 = Gather(%t0, %i)\n  %p1 = Gather(%t1, %i) {offset: 2}\n"
	                   "  %sum = Add(%p0, %p1)\n  %y = Gather(%t, %i)\n  return %sum, %y\n}\n";
	Sim *s = sim_text(text);
	feed(s, "t0", V(0, 1, 10, 11));
	feed(s, "t1", V(20, 21, 30, 31));
	feed(s, "t", TABLE);
	feed(s, "i", V(3, 0, 2));
	eval_all(s);
	expect_value(s, "sum", "(3, 2)", V(30, 31, 0, 1, 20, 21));
	expect_value(s, "y", "(3, 2)", V(30, 31, 0, 1, 20, 21));
	sim_done(s);
}

/* ---- LayerNorm ---- */

/* Expected values from numpy: m = x.mean(axes, keepdims=True),
 * v = x.var(axes, keepdims=True) (biased), (x - m) / np.sqrt(v + eps) * g + b */

Test(layer_norm, defaults_normalize_the_last_axis)
{
	Sim *s = sim_op("%x: " T("(2, 3)") ", %g: " T("(3,)") ", %b: " T("(3,)"), "LayerNorm(%x, %g, %b)");
	feed(s, "x", V(1, 2, 4, -1, 0, 3));
	feed(s, "g", V(1, 2, 0.5));
	feed(s, "b", V(0, 1, -1));
	eval_all(s);
	expect_value(s, "y", "(2, 3)",
	             V(-1.0690415314502977, 0.46547923427485094, -0.3318490428435641, -0.9805789785364644,
	               0.2155368171708285, -0.3135947150244749));
	sim_done(s);
}

#define X222 V(0, 1, 4, 9, 16, 25, 36, 49)   /* np.arange(8.0).reshape(2, 2, 2) ** 2 */

Test(layer_norm, two_normalized_axes_and_params_from_axis_one)
{
	Sim *s = sim_op("%x: " T("(2, 2, 2)") ", %g: " T("(2, 2)") ", %b: " T("(2, 2)"),
	                "LayerNorm(%x, %g, %b) {begin_norm_axis: 1, begin_params_axis: 1, epsilon: 0.1}");
	feed(s, "x", X222);
	feed(s, "g", V(1, 2, 3, 4));
	feed(s, "b", V(0.5, 0, 0, -0.5));
	eval_all(s);
	expect_value(s, "y", "(2, 2, 2)",
	             V(-0.49594318814282634, -1.4227759830611806, 0.42683279491835413, 5.760214325469194,
	               -0.7557710560416624, -1.0532273373252652, 1.0937360810685446, 5.171224124059121));
	sim_done(s);
}

/* ---- RmsNorm: x / np.sqrt((x * x).mean(axes, keepdims=True) + eps) * g, the
 * axes those gamma covers ---- */

Test(rms_norm, the_dims_gamma_covers_default_epsilon)
{
	Sim *s = sim_op("%x: " T("(2, 3)") ", %g: " T("(3,)"), "RmsNorm(%x, %g)");
	feed(s, "x", V(1, 2, 4, -1, 0, 3));
	feed(s, "g", V(1, 2, 0.5));
	eval_all(s);
	expect_value(s, "y", "(2, 3)",
	             V(0.3779644460117677, 1.5118577840470708, 0.7559288920235354, -0.547722475346801, 0.0,
	               0.8215837130202015));
	sim_done(s);
}

Test(rms_norm, two_normalized_axes)
{
	Sim *s = sim_op("%x: " T("(2, 2, 2)") ", %g: " T("(2, 2)"), "RmsNorm(%x, %g) {epsilon: 0.1}");
	feed(s, "x", X222);
	feed(s, "g", V(1, 2, 3, 4));
	eval_all(s);
	expect_value(s, "y", "(2, 2, 2)",
	             V(0.0, 0.4032389192727559, 2.4194335156365354, 7.258300546909607, 0.4729259140148446,
	               1.4778934812963893, 3.1922499196002008, 5.793342446681846));
	sim_done(s);
}

Test(layer_norm, params_on_fewer_dims_than_normalized)
{
	/* normalized over (1, 2), gamma and beta over the last dim only */
	Sim *s = sim_op("%x: " T("(2, 2, 2)") ", %g: " T("(2,)") ", %b: " T("(2,)"),
	                "LayerNorm(%x, %g, %b) {begin_norm_axis: 1}");
	feed(s, "x", X222);
	feed(s, "g", V(2, -1));
	feed(s, "b", V(1, 0));
	eval_all(s);
	expect_value(s, "y", "(2, 2, 2)",
	             V(-0.9999991836739692, 0.7142854227407033, 1.2857141690962814, -1.5714279300295473,
	               -1.5123667027586976, 0.5267865667074689, 1.7293967846718798, -1.4182715257508778));
	sim_done(s);
}

Test(layer_norm, params_on_more_dims_than_normalized)
{
	/* normalized over the last dim, gamma and beta over (1, 2) */
	Sim *s = sim_op("%x: " T("(2, 2, 2)") ", %g: " T("(2, 2)") ", %b: " T("(2, 2)"),
	                "LayerNorm(%x, %g, %b) {begin_norm_axis: -1, begin_params_axis: -2}");
	feed(s, "x", X222);
	feed(s, "g", V(1, 2, 3, 4));
	feed(s, "b", V(0.5, 0, 0, -0.5));
	eval_all(s);
	expect_value(s, "y", "(2, 2, 2)",
	             V(-0.49998000059997993, 1.9999600011999599, -2.99999760000288, 3.49999680000384,
	               -0.49999975308651123, 1.9999995061730225, -2.9999996449704773, 3.499999526627303));
	sim_done(s);
}

/* ---- Cast ---- */

Test(cast, to_integers_truncates_toward_zero)
{
	expect_op("%a: " T("(5,)"), "Cast(%a) {dtype: Int32}", V(-2.7, -0.5, 0, 1.9, 3), NULL, "(5,)", V(-2, 0, 0, 1, 3));
	expect_op("%a: " T("(2,)"), "Cast(%a) {dtype: Int64}", V(-1e12 - 0.5, 7.99), NULL, "(2,)", V(-1e12, 7));
}

Test(cast, to_int32_saturates)
{
	expect_op("%a: " T("(3,)"), "Cast(%a) {dtype: Int32}", V(3e10, -3e10, NAN), NULL, "(3,)",
	          V(2147483647, -2147483648.0, 0));
}

Test(cast, to_bool_is_nonzero)
{
	expect_op("%a: " T("(4,)"), "Cast(%a) {dtype: Bool}", V(-2.5, 0, 0.25, 3), NULL, "(4,)", V(1, 0, 1, 1));
	expect_op("%a: <Tensor[Int32], (3,)>", "Cast(%a) {dtype: Bool}", V(1, 0, -4), NULL, "(3,)", V(1, 0, 1));
}

Test(cast, to_floats_keeps_the_double)
{
	expect_op("%a: <Tensor[Int32], (3,)>", "Cast(%a) {dtype: Float32}", V(1, 0, -4), NULL, "(3,)", V(1, 0, -4));
	expect_op("%a: " T("(1,)"), "Cast(%a) {dtype: Float16}", V(0.1), NULL, "(1,)", V(0.1));
	expect_op("%a: <Tensor[Bool], (2,)>", "Cast(%a) {dtype: Int64}", V(1, 0), NULL, "(2,)", V(1, 0));
}

/* ---- StridedSlice ---- */

#define X34 "%a: " T("(3, 4)")   /* fed IOTA12: x[r][c] = 4r + c */

Test(strided_slice, positive_strides)
{
	expect_op(X34, "StridedSlice(%a) {begin: (0, 1), end: (3, 4), strides: (2, 2)}", IOTA12, NULL, "(2, 2)",
	          V(1, 3, 9, 11));
}

Test(strided_slice, negative_begin_and_end_count_from_the_end)
{
	expect_op(X34, "StridedSlice(%a) {begin: (-2, 0), end: (3, -1), strides: (1, 1)}", IOTA12, NULL, "(2, 3)",
	          V(4, 5, 6, 8, 9, 10));
}

Test(strided_slice, ends_and_strides_beyond_the_dim)
{
	expect_op(X34, "StridedSlice(%a) {begin: (0, -10), end: (10, 10), strides: (5, 1)}", IOTA12, NULL, "(1, 4)",
	          V(0, 1, 2, 3));
}

/* MindSpore's masks: a new axis (1), a shrunk dim (gone), entries fewer than the dims (the rest whole). */
Test(strided_slice, masks)
{
	expect_op(X34, "StridedSlice(%a) {begin: (-2, 9), end: (0, 1), strides: (1, 2), shrink_axis_mask: 1, "
	          "begin_mask: 2}", IOTA12, NULL, "(1,)", V(4));
	expect_op(X34, "StridedSlice(%a) {begin: (0, 2), end: (1, 3), strides: (1, 1), new_axis_mask: 1}", IOTA12, NULL,
	          "(1, 1, 4)", V(8, 9, 10, 11));
	expect_op(X34, "StridedSlice(%a) {begin: (1,), end: (3,), strides: (1,)}", IOTA12, NULL, "(2, 4)",
	          V(4, 5, 6, 7, 8, 9, 10, 11));
	expect_op(X34, "StridedSlice(%a) {begin: (0, 0, 3), end: (0, 1, 0), strides: (1, 1, 1), begin_mask: 1, "
	          "end_mask: 1, new_axis_mask: 2, shrink_axis_mask: 6}", IOTA12, NULL, "(3, 1)", V(3, 7, 11));
}

/* The compiler accepts only positive strides (shape.c), so these tests
 * compile a slice of the right shape and then give the node negative ones. */
static void expect_negative_slice(const char *params, const char *stmt, const int64_t *begin, const int64_t *end,
                                  const int64_t *strides, const double *x, const char *dims, const double *y)
{
	Sim *s = sim_op(params, stmt);
	Node *n = &s->g->nodes[0];
	memcpy(n->a.begin, begin, sizeof(int64_t) * (size_t)n->a.nbegin);
	memcpy(n->a.end, end, sizeof(int64_t) * (size_t)n->a.nend);
	memcpy(n->a.strides, strides, sizeof(int64_t) * (size_t)n->a.nstrides);
	feed(s, "a", x);
	eval_all(s);
	expect_value(s, "y", dims, y);
	sim_done(s);
}

#define I64(...) ((const int64_t[]){__VA_ARGS__})

Test(strided_slice, negative_strides_reverse)
{
	/* numpy: np.arange(12).reshape(3, 4)[2:-4:-1, 3:-5:-1] reverses both dims
	 * (an end of -4 or -5 is -1 after adding the dim: before the first) */
	expect_negative_slice(X34, "StridedSlice(%a) {begin: (0, 0), end: (3, 4), strides: (1, 1)}", I64(2, 3),
	                      I64(-4, -5), I64(-1, -1), IOTA12, "(3, 4)", V(11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0));
	/* x[2:0:-1, 3::-2]: rows 2, 1 (0 excluded), columns 3, 1 */
	expect_negative_slice(X34, "StridedSlice(%a) {begin: (0, 0), end: (2, 2), strides: (1, 1)}", I64(2, 3),
	                      I64(0, -5), I64(-1, -2), IOTA12, "(2, 2)", V(11, 9, 7, 5));
}

Test(strided_slice, negative_strides_clamp_like_numpy)
{
	/* x = [0..4]: x[-1:-3:-1] = [4, 3]; x[10:0:-3] = [4, 1]; x[4::-7] = [4] */
	const char *p = "%a: " T("(5,)");
	expect_negative_slice(p, "StridedSlice(%a) {begin: (0,), end: (2,), strides: (1,)}", I64(-1), I64(-3), I64(-1),
	                      V(0, 1, 2, 3, 4), "(2,)", V(4, 3));
	expect_negative_slice(p, "StridedSlice(%a) {begin: (0,), end: (2,), strides: (1,)}", I64(10), I64(0), I64(-3),
	                      V(0, 1, 2, 3, 4), "(2,)", V(4, 1));
	expect_negative_slice(p, "StridedSlice(%a) {begin: (0,), end: (1,), strides: (1,)}", I64(4), I64(-6), I64(-7),
	                      V(0, 1, 2, 3, 4), "(1,)", V(4));
	expect_negative_slice(p, "StridedSlice(%a) {begin: (0,), end: (1,), strides: (1,)}", I64(4), I64(-6),
	                      I64(INT64_MIN), V(0, 1, 2, 3, 4), "(1,)", V(4));
}

/* ---- losses ---- */

Test(sparse_softmax_ce, mean_of_the_labels_negative_log_softmax)
{
	/* numpy: l = [[1, 2, 3], [0.5, -1, 2]], labels [2, 0];
	 * np.mean([-(l[i] - m[i] - np.log(np.exp(l[i] - m[i]).sum()))[lab[i]] for i in 0, 1]) */
	expect_op("%a: " T("(2, 3)") ", %b: <Tensor[Int32], (2,)>", "SparseSoftmaxCrossEntropyWithLogits(%a, %b)",
	          V(1, 2, 3, 0.5, -1, 2), V(2, 0), "()", V(1.0744586305507688));
}

Test(sparse_softmax_ce, uniform_logits_give_log_c)
{
	expect_op("%a: " T("(1, 4)") ", %b: <Tensor[Int64], (1,)>", "SparseSoftmaxCrossEntropyWithLogits(%a, %b)",
	          V(7, 7, 7, 7), V(3), "()", V(1.3862943611198906));
}

Test(softmax_ce, each_rows_loss_of_the_labels_distribution)
{
	/* numpy: l as above, t = [[0, 0, 1], [0.5, 0.25, 0.25]]; -(t * log_softmax(l)).sum(axis=1) */
	expect_op("%a: " T("(2, 3)") ", %b: " T("(2, 3)"), "SoftmaxCrossEntropyWithLogits(%a, %b)",
	          V(1, 2, 3, 0.5, -1, 2), V(0, 0, 1, 0.5, 0.25, 0.25), "(2,)", V(0.40760596444438035, 1.7413112966571571));
}

Test(losses, mse_and_l1)
{
	/* differences 0, 2, 0, -3 */
	expect_op(AB("(2, 2)", "(2, 2)"), "MSELoss(%a, %b)", V(1, 2, 3, 4), V(1, 0, 3, 7), "()", V(3.25));
	expect_op(AB("(2, 2)", "(2, 2)"), "L1Loss(%a, %b)", V(1, 2, 3, 4), V(1, 0, 3, 7), "()", V(1.25));
}

/* ---- a chain of nodes ---- */

Test(graph, dense_relu_mean)
{
	/* x W = [[-2, -2], [2, 4]]; + b = [[-1, -2], [3, 4]]; ReLU; mean 7/4 */
	Sim *s = sim_text("graph @g(%x: " T("(2, 2)") ", %w: <Parameter[Float32], (2, 2)>, %b: " T("(2,)") ") {\n"
	                  "  %h = MatMul(%x, %w)\n  %hb = BiasAdd(%h, %b)\n  %r = ReLU(%hb)\n  %y = ReduceMean(%r)\n"
	                  "  return %y\n}\n");
	feed(s, "x", V(1, -1, 2, 0));
	feed(s, "w", V(1, 2, 3, 4));
	feed(s, "b", V(1, 0));
	eval_all(s);
	expect_value(s, "hb", "(2, 2)", V(-1, -2, 3, 4));
	expect_value(s, "y", "()", V(1.75));
	sim_done(s);
}

/* ---- refusals ---- */

Test(refuse, collectives)
{
	Sim *s = sim_op("%a: " T("(2,)"), "AllReduce(%a) {op: \"sum\", group: (0, 1)}");
	char err[256];
	cr_assert_str_eq(eval_error(s, err, sizeof err),
	                 "%y = AllReduce: not evaluated here (collectives and Call are the simulator's)");
	sim_done(s);
}

Test(refuse, call)
{
	Sim *s = sim_text("graph @f(%x: " T("(2,)") ") {\n  %r = Neg(%x)\n  return %r\n}\n"
	                  "graph @g(%a: " T("(2,)") ") {\n  %y = Call(%a) {graph: @f}\n  return %y\n}\n");
	char err[256];
	cr_assert(strstr(eval_error(s, err, sizeof err), "%y = Call: not evaluated here"), "got: %s", err);
	sim_done(s);
}

Test(refuse, an_operand_of_the_wrong_shape)
{
	Sim *s = sim_op(AB("(2, 3)", "(3,)"), "Add(%a, %b)");
	int b = id_of(s, "b");
	sim_tensor_free(&s->v[b]);
	s->v[b] = sim_tensor_new(1, (int64_t[]){4});
	char err[256];
	cr_assert_str_eq(eval_error(s, err, sizeof err), "%y = Add: operand 1 holds (4,) but %b is (3,)");
	sim_done(s);
}

Test(refuse, a_result_type_the_operands_do_not_give)
{
	/* as a lowering that wrote the wrong local shape would */
	Sim *s = sim_op(AB("(2, 3)", "(3, 2)"), "MatMul(%a, %b)");
	s->g->values[id_of(s, "y")].type.dims[1] = 3;
	char err[256];
	cr_assert_str_eq(eval_error(s, err, sizeof err),
	                 "%y = MatMul: the result type says (2, 3) but the operands give (2, 2)");
	sim_done(s);
}

Test(refuse, a_label_out_of_range)
{
	Sim *s = sim_op("%a: " T("(2, 3)") ", %b: <Tensor[Int32], (2,)>", "SparseSoftmaxCrossEntropyWithLogits(%a, %b)");
	feed(s, "b", V(0, 3));
	char err[256];
	cr_assert_str_eq(eval_error(s, err, sizeof err),
	                 "%y = SparseSoftmaxCrossEntropyWithLogits: label 3 of row 1 is not a class in [0, 3)");
	sim_done(s);
}

Test(refuse, a_zero_stride)
{
	Sim *s = sim_op(X34, "StridedSlice(%a) {begin: (0, 0), end: (3, 4), strides: (1, 1)}");
	s->g->nodes[0].a.strides[1] = 0;
	char err[256];
	cr_assert_str_eq(eval_error(s, err, sizeof err), "%y = StridedSlice: stride 0 in dim 1");
	sim_done(s);
}

/* ---- initializers (docs/output.md) ---- */

/* Expected values from an independent implementation of docs/output.md's initializers in Python
 * (run with /usr/bin/python3, numpy only for float32 rounding):
 *
 *   M = (1 << 64) - 1
 *   def fnv1a64(s):
 *       h = 0xcbf29ce484222325
 *       for c in s.encode(): h = ((h ^ c) * 0x100000001b3) & M
 *       return h
 *   def splitmix64(z):
 *       z = (z + 0x9e3779b97f4a7c15) & M
 *       z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M
 *       z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M
 *       return z ^ (z >> 31)
 *   def u(name, seed, j):
 *       key = fnv1a64(name) ^ ((seed * 0x9e3779b97f4a7c15) & M)
 *       return (splitmix64((key + j) & M) >> 40) * 2.0**-24
 *   f32 = lambda v: float(np.float32(v))
 *   uniform:  f32(lo + (hi - lo) * u(name, seed, i))
 *   normal:   f32(std * math.sqrt(-2 * math.log(1 - u(name, seed, 2*i)))
 *                  * math.cos(2 * math.pi * u(name, seed, 2*i + 1)))
 *   randint:  lo + math.floor(u(name, seed, i) * (hi - lo))
 */
static const char init_graph[] =
	"graph @g(%x: <Tensor[Float32], (2, 3)>, %w1: <Parameter[Float32], (2, 2)>,\n"
	"         %emb: <Parameter[Float16], (5,)> = uniform(-1, 2), %labels: <Tensor[Int32], (6,)> = randint(0, 10),\n"
	"         %b: <Parameter[BFloat16], (3,)> = normal(0.5), %k: <Tensor[Int64], (2,)> = randint(-5, 5),\n"
	"         %c: <Tensor[Int32], (2,)> = constant(-2.7), %cf: <Tensor[Float32], (1,)> = constant(0.1),\n"
	"         %z: <Tensor[Float32], (2,)> = zeros, %o: <Tensor[Bool], (2,)> = ones,\n"
	"         %cb: <Tensor[Bool], (1,)> = constant(0.5)) {\n"
	"  %y = ReLU(%x)\n  return %y\n}\n";

/* Initializes input NAME as the graph declares it, with SEED. */
static void init_value(Sim *s, const char *name, int64_t seed)
{
	const Value *v = &s->g->values[id_of(s, name)];
	sim_init(&s->v[id_of(s, name)], name, v->init, v->type.is_param, v->type.dtype, seed);
}

/* Element i of NAME is WANT exactly: the arithmetic is the same, and
 * rounding to float absorbs any last-bit difference of log and cos. */
static void expect_elem(Sim *s, const char *name, int64_t i, double want)
{
	double got = s->v[id_of(s, name)].data[i];
	cr_assert_eq(got, want, "%s[%lld] = %.17g, expected %.17g", name, (long long)i, got, want);
}

Test(init, default_input_is_uniform_0_1)
{
	Sim *s = sim_text(init_graph);
	init_value(s, "x", 0);
	expect_elem(s, "x", 0, 0.201208233833313);
	expect_elem(s, "x", 1, 0.5109687447547913);
	expect_elem(s, "x", 2, 0.9408048391342163);
	expect_elem(s, "x", 5, 0.535817563533783);
	sim_done(s);
}

Test(init, default_parameter_is_normal_0_01)
{
	Sim *s = sim_text(init_graph);
	init_value(s, "w1", 1);
	expect_elem(s, "w1", 0, 0.006420786492526531);
	expect_elem(s, "w1", 1, -0.015455629676580429);
	expect_elem(s, "w1", 3, 0.018301203846931458);
	sim_done(s);
}

Test(init, uniform_and_normal_with_arguments)
{
	Sim *s = sim_text(init_graph);
	init_value(s, "emb", 7);
	init_value(s, "b", -3);   /* a negative seed wraps like any other */
	expect_elem(s, "emb", 0, -0.22112351655960083);
	expect_elem(s, "emb", 4, 1.3297317028045654);
	expect_elem(s, "b", 0, -0.02734336256980896);
	expect_elem(s, "b", 2, -0.18128593266010284);
	sim_done(s);
}

Test(init, randint)
{
	Sim *s = sim_text(init_graph);
	init_value(s, "labels", 0);
	init_value(s, "k", 2);
	const double labels[] = {0, 7, 2, 3, 7, 9};
	for (int i = 0; i < 6; i++)
		expect_elem(s, "labels", i, labels[i]);
	expect_elem(s, "k", 0, -2);
	expect_elem(s, "k", 1, -2);
	sim_done(s);
}

Test(init, constants_round_to_the_element_type)
{
	Sim *s = sim_text(init_graph);
	const char *names[] = {"c", "cf", "z", "o", "cb"};
	for (int i = 0; i < 5; i++)
		init_value(s, names[i], 0);
	expect_elem(s, "c", 1, -2);           /* Int32 truncates toward zero */
	expect_elem(s, "cf", 0, (float)0.1);  /* Float32 rounds through float */
	expect_elem(s, "z", 1, 0);
	expect_elem(s, "o", 1, 1);
	expect_elem(s, "cb", 0, 1);           /* Bool: nonzero */
	sim_done(s);
}

Test(init, the_seed_and_the_name_change_the_numbers)
{
	Sim *s = sim_text(init_graph);
	init_value(s, "x", 0);
	double first = s->v[id_of(s, "x")].data[0];
	init_value(s, "x", 1);
	cr_assert_neq(s->v[id_of(s, "x")].data[0], first);
	sim_init(&s->v[id_of(s, "x")], "x2", NULL, false, DT_F32, 0);
	cr_assert_neq(s->v[id_of(s, "x")].data[0], first);
	sim_done(s);
}

/* Conv2DTranspose: each dout element times the weight, scattered onto its
 * window of the result (by hand); stride 2 places the windows apart,
 * stride 1 overlaps them and the overlaps add. */
Test(conv2d_transpose, windows_scattered_and_summed)
{
	expect_op("%a: <Tensor[Float32], (1, 1, 2, 2)>, %b: <Tensor[Float32], (1, 1, 2, 2)>",
	          "Conv2DTranspose(%a, %b) {out_channel: 1, kernel_size: 2, stride: 2, input_size: (1, 1, 4, 4)}",
	          V(1, 2, 3, 4), V(1, 10, 100, 1000), "(1, 1, 4, 4)",
	          V(1, 10, 2, 20, 100, 1000, 200, 2000, 3, 30, 4, 40, 300, 3000, 400, 4000));
	expect_op("%a: <Tensor[Float32], (1, 1, 1, 2)>, %b: <Tensor[Float32], (1, 1, 2, 2)>",
	          "Conv2DTranspose(%a, %b) {out_channel: 1, kernel_size: 2, input_size: (1, 1, 2, 3)}", V(1, 2),
	          V(1, 10, 100, 1000), "(1, 1, 2, 3)", V(1, 12, 20, 100, 1200, 2000));
}
