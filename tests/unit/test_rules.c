/* test_rules.c: what an operator's strategy means (rules.c).
 *
 * Each model is one or two operators compiled through check_strategies; the
 * operator's op dims come from op_dims and its strategy from
 * op_split_from_strategy, as assign_strategies asks for them. The tests
 * check which op dim each input and output dim follows, what the output
 * leaves partial, the device matrix and the layouts the strategy gives, and
 * that a strategy the rule cannot take is refused with a message. */
#include <criterion/criterion.h>
#include <string.h>

#include "harness.h"

/* The entry graph's node computing %name. */
static const Node *node_of(Run *r, const char *name)
{
	const Graph *g = module_entry(r->m);
	int v = graph_value(g, name);
	cr_assert(v >= g->nparams, "no operator computes %%%s", name);
	return &g->nodes[g->values[v].node];
}

/* %name's op dims and its in_strategy (the default when it has none). */
static bool rule(Run *r, const char *name, OpDims *od, OpSplit *s)
{
	const Node *n = node_of(r, name);
	const Graph *g = module_entry(r->m);
	cr_assert(op_dims(g, n, od), "%%%s has no op dims", name);
	if (!n->a.in_strategy.n) {
		op_split_default(od, r->m->ctx.device_num, s);
		return true;
	}
	return op_split_from_strategy(od, n, &n->a.in_strategy, r->m->ctx.device_num, s, &r->d, r->m->src);
}

static void expect_dims(const int8_t *got, int n, const int *want, const char *what)
{
	for (int d = 0; d < n; d++)
		cr_assert_eq(got[d], want[d], "%s: dim %d follows op dim %d, not %d", what, d, got[d], want[d]);
}

/* The one axis splitting dim d of l, -1 when it is whole. */
static int axis_of(const TensorLayout *l, int d)
{
	cr_assert_leq(l->nmap[d], 1, "dim %d split over %d axes", d, l->nmap[d]);
	return l->nmap[d] ? l->map[d][0] : -1;
}

#define CTX8 "context {device_num: 8, parallel_mode: \"semi_auto_parallel\"}\n"

Test(rules, matmul)
{
	Run *r = compile(CTX8 "graph @n(%x: <Tensor[Float32], (16, 32)>, %w: <Parameter[Float32], (32, 8)>) {\n"
	                 "  %y = MatMul(%x, %w) {in_strategy: ((2, 4), (4, 1))}\n  return %y\n}\n");
	expect_clean(r);
	OpDims od;
	OpSplit s;
	cr_assert(rule(r, "y", &od, &s), "%s", msgs(r));
	cr_assert_eq(od.nod, 3);
	char buf[24];
	cr_assert_str_eq(op_dim_name(&od, 0, buf, sizeof buf), "i");
	cr_assert_str_eq(op_dim_name(&od, 1, buf, sizeof buf), "k");
	cr_assert_str_eq(op_dim_name(&od, 2, buf, sizeof buf), "j");
	cr_assert(od.size[0] == 16 && od.size[1] == 32 && od.size[2] == 8);
	expect_dims(od.in_dim[0], 2, (int[]){0, 1}, "x");
	expect_dims(od.in_dim[1], 2, (int[]){1, 2}, "w");
	cr_assert_eq(od.out_rank, 2);
	expect_dims(od.out_dim, 2, (int[]){0, 2}, "y");
	cr_assert_eq(od.reduced, 1u << 1, "k is summed over");
	cr_assert_eq(od.reduce_op, REDUCE_SUM_OP);
	cr_assert_eq(od.batch, 0);
	/* the matrix is the op dims' splits, 1s kept; 2 x 4 x 1 uses all 8 devices */
	cr_assert_eq(s.ndev, 3);
	cr_assert(s.dev[0] == 2 && s.dev[1] == 4 && s.dev[2] == 1);
	cr_assert(s.split[0] == 2 && s.split[1] == 4 && s.split[2] == 1);
	TensorLayout x, w, y;
	op_in_layout(&od, &s, 0, &x);
	op_in_layout(&od, &s, 1, &w);
	op_out_layout(&od, &s, &y);
	cr_assert(axis_of(&x, 0) == 0 && axis_of(&x, 1) == 1);
	cr_assert(axis_of(&w, 0) == 1 && axis_of(&w, 1) == -1);
	cr_assert(axis_of(&y, 0) == 0 && axis_of(&y, 1) == -1);
	cr_assert_eq(y.partial, 1u << 1, "y is partial over k's axis");
	cr_assert_eq(y.partial_op, REDUCE_SUM_OP);
	int64_t split[MAX_DIMS];
	op_in_split(&od, &s, 1, split);
	cr_assert(split[0] == 4 && split[1] == 1);
	run_free(r);
}

/* transpose_a: x is (k, i); transpose_b: w is (j, k). */
Test(rules, matmul_transposed)
{
	Run *r = compile(CTX8 "graph @n(%x: <Tensor[Float32], (32, 16)>, %w: <Parameter[Float32], (8, 32)>) {\n"
	                 "  %a = MatMul(%x, %w) {transpose_a: true, transpose_b: true, in_strategy: ((4, 2), (1, 4))}\n"
	                 "  return %a\n}\n");
	expect_clean(r);
	OpDims od;
	OpSplit s;
	cr_assert(rule(r, "a", &od, &s), "%s", msgs(r));
	cr_assert(od.size[0] == 16 && od.size[1] == 32 && od.size[2] == 8, "i %lld k %lld j %lld", (long long)od.size[0],
	          (long long)od.size[1], (long long)od.size[2]);
	expect_dims(od.in_dim[0], 2, (int[]){1, 0}, "x");
	expect_dims(od.in_dim[1], 2, (int[]){2, 1}, "w");
	cr_assert(s.split[0] == 2 && s.split[1] == 4 && s.split[2] == 1, "i %lld k %lld j %lld", (long long)s.split[0],
	          (long long)s.split[1], (long long)s.split[2]);
	TensorLayout y;
	op_out_layout(&od, &s, &y);
	cr_assert_eq(axis_of(&y, 0), 0);
	cr_assert_eq(y.partial, 1u << 1);
	run_free(r);
}

/* Batch dims line up from the right; a rank-2 operand has none, a batch dim
 * of size 1 is broadcast. */
Test(rules, batch_matmul)
{
	Run *r = compile(CTX8 "graph @n(%a: <Tensor[Float32], (4, 16, 32)>, %b: <Tensor[Float32], (32, 8)>,\n"
	                 "         %c: <Tensor[Float32], (1, 32, 8)>) {\n"
	                 "  %y = BatchMatMul(%a, %b) {in_strategy: ((4, 2, 1), (1, 1))}\n"
	                 "  %z = BatchMatMul(%a, %c)\n  return %y, %z\n}\n");
	expect_clean(r);
	OpDims od;
	OpSplit s;
	cr_assert(rule(r, "y", &od, &s), "%s", msgs(r));
	cr_assert_eq(od.nod, 4);
	cr_assert(od.size[0] == 4 && od.size[1] == 16 && od.size[2] == 32 && od.size[3] == 8);
	expect_dims(od.in_dim[0], 3, (int[]){0, 1, 2}, "a");
	cr_assert_eq(od.in_rank[1], 2);
	expect_dims(od.in_dim[1], 2, (int[]){2, 3}, "b");
	cr_assert_eq(od.out_rank, 3);
	expect_dims(od.out_dim, 3, (int[]){0, 1, 3}, "y");
	cr_assert_eq(od.reduced, 1u << 2);
	cr_assert_eq(od.batch, 0, "the batch-parallel default splits the first batch dim");
	TensorLayout b, y;
	op_in_layout(&od, &s, 1, &b);
	op_out_layout(&od, &s, &y);
	cr_assert(axis_of(&b, 0) == -1 && axis_of(&b, 1) == -1, "b is whole on every rank");
	cr_assert(axis_of(&y, 0) == 0 && axis_of(&y, 1) == 1 && axis_of(&y, 2) == -1 && y.partial == 0);
	cr_assert(rule(r, "z", &od, &s), "%s", msgs(r));
	expect_dims(od.in_dim[1], 3, (int[]){-1, 2, 3}, "c");
	cr_assert_eq(s.split[0], 4, "default: the batch dim split by 4, the largest divisor of 8 that cuts it");
	cr_assert_eq(s.ndev, 5);
	cr_assert_eq(s.dev[4], 2, "the repeated axis appended last");
	run_free(r);
}

Test(rules, bias_add)
{
	Run *r = compile(CTX8 "graph @n(%x: <Tensor[Float32], (16, 32)>, %b: <Parameter[Float32], (32,)>) {\n"
	                 "  %y = BiasAdd(%x, %b) {in_strategy: ((2, 4), (4,))}\n  return %y\n}\n");
	expect_clean(r);
	OpDims od;
	OpSplit s;
	cr_assert(rule(r, "y", &od, &s), "%s", msgs(r));
	cr_assert_eq(od.nod, 2);
	cr_assert_eq(od.in_rank[1], 1);
	cr_assert_eq(od.in_dim[1][0], 1, "the bias follows the last dim");
	expect_dims(od.out_dim, 2, (int[]){0, 1}, "y");
	cr_assert_eq(od.reduced, 0);
	TensorLayout b, y;
	op_in_layout(&od, &s, 1, &b);
	op_out_layout(&od, &s, &y);
	cr_assert_eq(axis_of(&b, 0), 1);
	cr_assert(axis_of(&y, 0) == 0 && axis_of(&y, 1) == 1 && y.partial == 0);
	run_free(r);
}

/* Split against its axis, a Softmax is local; along it, its statistics are
 * completed (normalized), never partial. */
Test(rules, softmax_along_and_against_axis)
{
	Run *r = compile(CTX8 "graph @n(%x: <Tensor[Float32], (8, 16, 32)>) {\n"
	                 "  %a = Softmax(%x) {axis: -1, in_strategy: ((8, 1, 1),)}\n"
	                 "  %b = Softmax(%x) {axis: -1, in_strategy: ((1, 1, 8),)}\n"
	                 "  %c = LogSoftmax(%x) {axis: 1}\n  return %a, %b, %c\n}\n");
	expect_clean(r);
	OpDims od;
	OpSplit s;
	TensorLayout y;
	cr_assert(rule(r, "a", &od, &s), "%s", msgs(r));
	cr_assert_eq(od.normalized, 1u << 2);
	cr_assert(od.nstats_fwd == 2 && od.nstats_bwd == 1);
	cr_assert_eq(od.reduced, 0);
	cr_assert_eq(od.whole, 0);
	op_out_layout(&od, &s, &y);
	cr_assert(axis_of(&y, 0) == 0 && axis_of(&y, 2) == -1 && y.partial == 0);
	cr_assert(rule(r, "b", &od, &s), "%s", msgs(r));
	cr_assert_eq(s.split[2], 8);
	op_out_layout(&od, &s, &y);
	cr_assert(axis_of(&y, 2) == 2 && y.partial == 0, "split along its axis: the output split alike, complete");
	cr_assert(rule(r, "c", &od, &s), "%s", msgs(r));
	cr_assert_eq(od.normalized, 1u << 1, "axis 1");
	run_free(r);
}

/* CumSum and CumProd: the scanned axis may be split, evenly (its slices'
 * totals gathered: a normalized dim); the default leaves it whole; a rank's
 * piece takes the totals with the axis whole. */
Test(rules, scan_axis_split_evenly)
{
	Run *r = compile(CTX8 "graph @n(%x: <Tensor[Float32], (8, 16)>, %t: <Tensor[Float32], (8, 4)>) {\n"
	                 "  %a = CumSum(%x) {axis: 1, in_strategy: ((2, 4),)}\n"
	                 "  %b = CumProd(%x) {axis: 0, exclusive: true}\n"
	                 "  %c = CumSum(%x, %t) {axis: 1, offset: 4}\n  return %a, %b, %c\n}\n");
	expect_clean(r);
	OpDims od;
	OpSplit s;
	TensorLayout y;
	cr_assert(rule(r, "a", &od, &s), "%s", msgs(r));
	cr_assert_eq(od.normalized, 1u << 1);
	cr_assert(od.nstats_fwd == 1 && od.nstats_bwd == 1);
	cr_assert_eq(od.also[1], 16, "the scanned axis splits evenly");
	cr_assert_eq(od.batch, 0);
	op_out_layout(&od, &s, &y);
	cr_assert(axis_of(&y, 0) == 0 && axis_of(&y, 1) == 1 && y.partial == 0);
	cr_assert(rule(r, "b", &od, &s), "%s", msgs(r));
	cr_assert_eq(od.batch, 1, "the default splits dim 1, not the scanned dim 0");
	cr_assert(s.split[0] == 1 && s.split[1] == 8);
	cr_assert(rule(r, "c", &od, &s), "%s", msgs(r));
	cr_assert(od.normalized == 0 && od.in_dim[1][1] == -1 && od.in_dim[1][0] == 0, "a piece: the totals' axis whole");
	run_free(r);
	r = compile(CTX8 "graph @n(%x: <Tensor[Float32], (8, 12)>) {\n"
	            "  %a = CumSum(%x) {axis: 1, in_strategy: ((1, 8),)}\n  return %a\n}\n");
	cr_assert(!rule(r, "a", &od, &s), "an uneven split of the scanned axis is refused");
	cr_assert(strstr(msgs(r), "the scanned axis is split into 8, which does not divide 12"), "%s", msgs(r));
	run_free(r);
}

/* keep_dims keeps the reduced dim (following no op dim); a split reduced dim
 * leaves partial sums, maxima, minima or means. */
Test(rules, reduce_keep_dims)
{
	Run *r = compile(CTX8 "graph @n(%x: <Tensor[Float32], (8, 16)>) {\n"
	                 "  %k = ReduceSum(%x) {axis: 1, keep_dims: true, in_strategy: ((2, 4),)}\n"
	                 "  %d = ReduceSum(%x) {axis: 1, in_strategy: ((2, 4),)}\n"
	                 "  %m = ReduceMax(%x) {axis: 0, in_strategy: ((8, 1),)}\n"
	                 "  %e = ReduceMean(%x) {axis: (0, 1)}\n"
	                 "  %n = ReduceMin(%x) {axis: 1, in_strategy: ((2, 4),)}\n  return %k, %d, %m, %e, %n\n}\n");
	expect_clean(r);
	OpDims od;
	OpSplit s;
	TensorLayout y;
	cr_assert(rule(r, "k", &od, &s), "%s", msgs(r));
	cr_assert_eq(od.reduced, 1u << 1);
	cr_assert_eq(od.out_rank, 2);
	expect_dims(od.out_dim, 2, (int[]){0, -1}, "keep_dims");
	op_out_layout(&od, &s, &y);
	cr_assert(y.rank == 2 && axis_of(&y, 0) == 0 && axis_of(&y, 1) == -1);
	cr_assert(y.partial == 1u << 1 && y.partial_op == REDUCE_SUM_OP);
	cr_assert(rule(r, "d", &od, &s), "%s", msgs(r));
	cr_assert_eq(od.out_rank, 1);
	expect_dims(od.out_dim, 1, (int[]){0}, "no keep_dims");
	cr_assert(rule(r, "m", &od, &s), "%s", msgs(r));
	op_out_layout(&od, &s, &y);
	cr_assert(y.partial == 1u << 0 && y.partial_op == REDUCE_MAX_OP);
	cr_assert(rule(r, "e", &od, &s), "%s", msgs(r));
	cr_assert_eq(od.reduced, 3u);
	cr_assert_eq(od.reduce_op, REDUCE_MEAN_OP);
	cr_assert_eq(od.out_rank, 0);
	op_out_layout(&od, &s, &y);
	cr_assert(y.partial != 0 && y.partial_op == REDUCE_MEAN_OP, "the default splits dim 0: partial means");
	cr_assert(rule(r, "n", &od, &s), "%s", msgs(r));
	cr_assert_eq(od.reduce_op, REDUCE_MIN_OP);
	op_out_layout(&od, &s, &y);
	cr_assert(y.rank == 1 && axis_of(&y, 0) == 0);
	cr_assert(y.partial == 1u << 1 && y.partial_op == REDUCE_MIN_OP, "partial minima over the axis splitting dim 1");
	run_free(r);
}

/* ReduceProd leaves partial products; ReduceAll and ReduceAny a Bool's
 * partial minima and maxima. */
Test(rules, reduce_prod_all_any_partials)
{
	Run *r = compile("context {device_num: 8, parallel_mode: \"semi_auto_parallel\"}\n"
	                 "graph @g(%x: <Tensor[Float32], (8, 16)>) {\n"
	                 "  %p = ReduceProd(%x) {axis: 1, in_strategy: ((2, 4),)}\n"
	                 "  %c = Greater(%x, 0.0)\n"
	                 "  %a = ReduceAll(%c) {axis: (0, 1), in_strategy: ((2, 4),)}\n"
	                 "  %n = ReduceAny(%c) {axis: 0, keep_dims: true, in_strategy: ((8, 1),)}\n"
	                 "  return %p, %a, %n\n}\n");
	expect_clean(r);
	OpDims od;
	OpSplit s;
	TensorLayout y;
	cr_assert(rule(r, "p", &od, &s), "%s", msgs(r));
	cr_assert_eq(od.reduce_op, REDUCE_PROD_OP);
	op_out_layout(&od, &s, &y);
	cr_assert(y.rank == 1 && axis_of(&y, 0) == 0);
	cr_assert(y.partial == 1u << 1 && y.partial_op == REDUCE_PROD_OP, "partial products over the axis splitting dim 1");
	cr_assert(rule(r, "a", &od, &s), "%s", msgs(r));
	op_out_layout(&od, &s, &y);
	cr_assert(y.partial == 3u && y.partial_op == REDUCE_MIN_OP, "All: partial minima over both axes");
	cr_assert(rule(r, "n", &od, &s), "%s", msgs(r));
	op_out_layout(&od, &s, &y);
	cr_assert(y.partial == 1u && y.partial_op == REDUCE_MAX_OP, "Any: partial maxima");
	run_free(r);
}

/* Reshape has no op dims (no strategy of its own); Transpose's output dims
 * follow its permutation. */
Test(rules, reshape_and_transpose)
{
	Run *r = compile(CTX8 "graph @n(%x: <Tensor[Float32], (4, 8, 16)>) {\n"
	                 "  %r = Reshape(%x) {shape: (32, 16)}\n"
	                 "  %t = Transpose(%x) {perm: (1, 0, 2), in_strategy: ((2, 4, 1),)}\n  return %r, %t\n}\n");
	expect_clean(r);
	OpDims od;
	cr_assert(!op_dims(module_entry(r->m), node_of(r, "r"), &od));
	OpSplit s;
	cr_assert(rule(r, "t", &od, &s), "%s", msgs(r));
	expect_dims(od.in_dim[0], 3, (int[]){0, 1, 2}, "x");
	expect_dims(od.out_dim, 3, (int[]){1, 0, 2}, "t");
	TensorLayout x, t;
	op_in_layout(&od, &s, 0, &x);
	op_out_layout(&od, &s, &t);
	cr_assert(axis_of(&x, 0) == 0 && axis_of(&x, 1) == 1);
	cr_assert(axis_of(&t, 0) == 1 && axis_of(&t, 1) == 0 && axis_of(&t, 2) == -1, "the splits move with the dims");
	run_free(r);
}

/* Gather: op dims the index dims, then v, h; a row-split table leaves
 * partial sums (each shard fills its rows). The ids' splits take the device
 * matrix's slow axes and the rows' the fast ones (Megatron's vocab-parallel
 * embedding: the table's ranks neighbours, the output split on the batch
 * over the axes a batch-first consumer splits it on). */
Test(rules, gather)
{
	Run *r = compile(CTX8 "graph @n(%t: <Parameter[Float32], (16, 8)>, %i: <Tensor[Int32], (4, 6)>) {\n"
	                 "  %g = Gather(%t, %i) {axis: 0, in_strategy: ((2, 1), (4, 1))}\n  return %g\n}\n");
	expect_clean(r);
	OpDims od;
	OpSplit s;
	cr_assert(rule(r, "g", &od, &s), "%s", msgs(r));
	char buf[24];
	cr_assert_eq(od.nod, 4);
	cr_assert_str_eq(op_dim_name(&od, 2, buf, sizeof buf), "v");
	cr_assert_str_eq(op_dim_name(&od, 3, buf, sizeof buf), "h");
	cr_assert(od.size[0] == 4 && od.size[1] == 6 && od.size[2] == 16 && od.size[3] == 8);
	expect_dims(od.in_dim[0], 2, (int[]){2, 3}, "table");
	expect_dims(od.in_dim[1], 2, (int[]){0, 1}, "indices");
	cr_assert_eq(od.out_rank, 3);
	expect_dims(od.out_dim, 3, (int[]){0, 1, 3}, "g");
	cr_assert_eq(od.reduced, 1u << 2);
	cr_assert_eq(od.batch, 0, "the batch-parallel default splits the indices' first dim");
	cr_assert(s.ax[0][0] == 0 && s.ax[2][0] == 2 && s.dev[0] == 4 && s.dev[2] == 2,
	          "the ids' axis first (slow), the rows' after it");
	TensorLayout g;
	op_out_layout(&od, &s, &g);
	cr_assert(axis_of(&g, 0) == 0 && axis_of(&g, 1) == -1 && axis_of(&g, 2) == -1);
	cr_assert(g.partial == 1u << 2 && g.partial_op == REDUCE_SUM_OP, "row-split table: partial sums over v's axis");
	run_free(r);
}

/* Gather on another axis: the index dims, then the table's in order (v the
 * gathered one, h the last), as MindSpore's device matrix; the result's dims
 * are the table's before the axis, the indices', the table's after it. */
Test(rules, gather_axis_1)
{
	Run *r = compile(CTX8 "graph @n(%t: <Parameter[Float32], (4, 16, 8)>, %i: <Tensor[Int32], (6,)>) {\n"
	                 "  %g = Gather(%t, %i) {axis: -2, in_strategy: ((2, 4, 1), (1,))}\n  return %g\n}\n");
	expect_clean(r);
	OpDims od;
	OpSplit s;
	cr_assert(rule(r, "g", &od, &s), "%s", msgs(r));
	char buf[24];
	cr_assert_eq(od.nod, 4);
	cr_assert_str_eq(op_dim_name(&od, 2, buf, sizeof buf), "v");
	cr_assert_str_eq(op_dim_name(&od, 3, buf, sizeof buf), "h");
	cr_assert(od.size[0] == 6 && od.size[1] == 4 && od.size[2] == 16 && od.size[3] == 8);
	expect_dims(od.in_dim[0], 3, (int[]){1, 2, 3}, "table");
	expect_dims(od.in_dim[1], 1, (int[]){0}, "indices");
	cr_assert_eq(od.out_rank, 3);
	expect_dims(od.out_dim, 3, (int[]){1, 0, 3}, "g");
	cr_assert_eq(od.reduced, 1u << 2, "the gathered dim split: partial sums");
	cr_assert_eq(od.batch, 0);
	TensorLayout g;
	op_out_layout(&od, &s, &g);
	cr_assert(s.ax[1][0] == 1 && s.ax[2][0] == 2 && s.dev[1] == 2 && s.dev[2] == 4, "the table's first dim, then v");
	cr_assert(axis_of(&g, 0) == 1 && axis_of(&g, 1) == -1 && axis_of(&g, 2) == -1);
	cr_assert(g.partial == 1u << 2, "partial sums over v's axis, the faster one");
	run_free(r);
}

/* LayerNorm: gamma and beta follow the dims from begin_params_axis; the
 * normalized dims are split only when the two axes agree. */
Test(rules, layer_norm)
{
	Run *r = compile(CTX8 "graph @n(%x: <Tensor[Float32], (8, 16, 32)>, %g: <Parameter[Float32], (32,)>,\n"
	                 "         %b: <Parameter[Float32], (32,)>, %g2: <Parameter[Float32], (16, 32)>,\n"
	                 "         %b2: <Parameter[Float32], (16, 32)>) {\n"
	                 "  %a = LayerNorm(%x, %g, %b) {begin_norm_axis: -1, begin_params_axis: -1, in_strategy: ((2, 1, 4), (4,), (4,))}\n"
	                 "  %c = LayerNorm(%x, %g2, %b2) {begin_norm_axis: 1, begin_params_axis: 1}\n"
	                 "  %d = LayerNorm(%x, %g, %b) {begin_norm_axis: 1, begin_params_axis: -1}\n"
	                 "  return %a, %c, %d\n}\n");
	expect_clean(r);
	OpDims od;
	OpSplit s;
	cr_assert(rule(r, "a", &od, &s), "%s", msgs(r));
	cr_assert(od.in_rank[1] == 1 && od.in_dim[1][0] == 2 && od.in_rank[2] == 1 && od.in_dim[2][0] == 2);
	cr_assert_eq(od.normalized, 1u << 2);
	cr_assert(od.nstats_fwd == 2 && od.nstats_bwd == 3);
	cr_assert_eq(od.whole, 0);
	TensorLayout g, y;
	op_in_layout(&od, &s, 1, &g);
	op_out_layout(&od, &s, &y);
	cr_assert_eq(axis_of(&g, 0), 2, "gamma split as the normalized dim");
	cr_assert(axis_of(&y, 2) == 2 && y.partial == 0);
	cr_assert(rule(r, "c", &od, &s), "%s", msgs(r));
	cr_assert_eq(od.normalized, (1u << 1) | (1u << 2));
	expect_dims(od.in_dim[1], 2, (int[]){1, 2}, "gamma (16, 32)");
	cr_assert(rule(r, "d", &od, &s), "%s", msgs(r));
	cr_assert_eq(od.normalized, 0);
	cr_assert_eq(od.whole, (1u << 1) | (1u << 2), "gamma would cover rows: the normalized dims stay whole");
	cr_assert_eq(od.nstats_fwd, 0);
	run_free(r);
}

/* RmsNorm: gamma covers x's last dims, those normalized; split, one
 * statistic (the mean square) forward and one row sum backward. */
Test(rules, rms_norm)
{
	Run *r = compile(CTX8 "graph @n(%x: <Tensor[Float32], (8, 16, 32)>, %g: <Parameter[Float32], (32,)>,\n"
	                 "         %g2: <Parameter[Float32], (16, 32)>) {\n"
	                 "  %a = RmsNorm(%x, %g) {in_strategy: ((2, 1, 4), (4,))}\n"
	                 "  %c = RmsNorm(%x, %g2)\n"
	                 "  return %a, %c\n}\n");
	expect_clean(r);
	OpDims od;
	OpSplit s;
	cr_assert(rule(r, "a", &od, &s), "%s", msgs(r));
	cr_assert(od.in_rank[1] == 1 && od.in_dim[1][0] == 2);
	cr_assert_eq(od.normalized, 1u << 2);
	cr_assert(od.nstats_fwd == 1 && od.nstats_bwd == 1);
	TensorLayout g;
	op_in_layout(&od, &s, 1, &g);
	cr_assert_eq(axis_of(&g, 0), 2, "gamma split as the normalized dim");
	cr_assert(rule(r, "c", &od, &s), "%s", msgs(r));
	cr_assert_eq(od.normalized, (1u << 1) | (1u << 2));
	expect_dims(od.in_dim[1], 2, (int[]){1, 2}, "gamma (16, 32)");
	run_free(r);
}

/* Broadcasting Add: operands line up from the right; a rank-1 operand
 * follows the last op dim; a size-1 dim against a larger one follows none. */
Test(rules, broadcast_add)
{
	Run *r = compile(CTX8 "graph @n(%x: <Tensor[Float32], (16, 32)>, %v: <Tensor[Float32], (32,)>,\n"
	                 "         %o: <Tensor[Float32], (1, 32)>) {\n"
	                 "  %a = Add(%x, %v) {in_strategy: ((2, 4), (4,))}\n"
	                 "  %b = Add(%x, %o) {in_strategy: ((2, 4), (1, 4))}\n  return %a, %b\n}\n");
	expect_clean(r);
	OpDims od;
	OpSplit s;
	cr_assert(rule(r, "a", &od, &s), "%s", msgs(r));
	cr_assert_eq(od.nod, 2);
	cr_assert_eq(od.in_rank[1], 1);
	cr_assert_eq(od.in_dim[1][0], 1);
	TensorLayout v, y;
	op_in_layout(&od, &s, 1, &v);
	op_out_layout(&od, &s, &y);
	cr_assert(v.rank == 1 && axis_of(&v, 0) == 1);
	cr_assert(axis_of(&y, 0) == 0 && axis_of(&y, 1) == 1 && y.partial == 0);
	cr_assert(rule(r, "b", &od, &s), "%s", msgs(r));
	expect_dims(od.in_dim[1], 2, (int[]){-1, 1}, "(1, 32)");
	op_in_layout(&od, &s, 1, &v);
	cr_assert(axis_of(&v, 0) == -1 && axis_of(&v, 1) == 1);
	/* a broadcast dim split is refused, with a strategy that would do */
	Strategy bad = node_of(r, "b")->a.in_strategy;
	TensorStrategy t[2] = {bad.t[0], bad.t[1]};
	t[1].split[0] = 2;
	bad.t = t;
	cr_assert(!op_split_from_strategy(&od, node_of(r, "b"), &bad, 8, &s, &r->d, r->m->src));
	expect_msg(r, "dim 0 of input 1 has size 1 and is broadcast, so it cannot be split");
	expect_msg(r, "e.g. in_strategy ((2, 4), (1, 4))");
	run_free(r);
}

/* Select: its three operands follow the op dims one to one, so a strategy
 * splits them alike; one that splits them differently is refused. */
Test(rules, select)
{
	Run *r = compile(CTX8 "graph @n(%c: <Tensor[Bool], (16, 32)>, %x: <Tensor[Float32], (16, 32)>,\n"
	                 "         %y: <Tensor[Float32], (16, 32)>) {\n"
	                 "  %s = Select(%c, %x, %y) {in_strategy: ((2, 4), (2, 4), (2, 4))}\n"
	                 "  %t = Select(%c, %x, %y)\n"
	                 "  %u = Select(%c, %x, %y) {in_strategy: ((2, 4), (2, 4), (4, 2))}\n"
	                 "  return %s, %t, %u\n}\n");
	OpDims od;
	OpSplit s;
	cr_assert(rule(r, "s", &od, &s), "%s", msgs(r));
	cr_assert_eq(od.nod, 2);
	for (int k = 0; k < 3; k++) {
		cr_assert_eq(od.in_rank[k], 2);
		expect_dims(od.in_dim[k], 2, (int[]){0, 1}, "an operand");
		TensorLayout in;
		op_in_layout(&od, &s, k, &in);
		cr_assert(axis_of(&in, 0) == 0 && axis_of(&in, 1) == 1, "operand %d split as the op dims", k);
	}
	TensorLayout y;
	op_out_layout(&od, &s, &y);
	cr_assert(axis_of(&y, 0) == 0 && axis_of(&y, 1) == 1 && y.partial == 0);
	cr_assert(rule(r, "t", &od, &s), "%s", msgs(r));
	cr_assert(s.split[0] == 8 && s.split[1] == 1, "the default: batch-parallel");
	cr_assert(!rule(r, "u", &od, &s), "operands split differently accepted");
	expect_msg(r, "Select: input 2 splits dim 0 into 4 but input 1 splits it into 2; every input must split dim 0 "
	              "alike, e.g. in_strategy ((2, 4), (2, 4), (2, 4))");
	run_free(r);
}

/* RotaryPositionEmbedding: x's four dims, the head dim whole; cos and sin
 * follow the dims they do not broadcast over (their size-1 dims map to none),
 * so splitting the sequence splits the tables by rows and the batch not. */
Test(rules, rotary)
{
	Run *r = compile(CTX8 "graph @n(%x: <Tensor[Float32], (4, 2, 8, 16)>, %c: <Tensor[Float32], (1, 1, 8, 16)>,\n"
	                 "         %s: <Tensor[Float32], (4, 1, 8, 16)>) {\n"
	                 "  %y = RotaryPositionEmbedding(%x, %c, %s) {in_strategy: ((2, 2, 2, 1), (1, 1, 2, 1), (2, 1, 2, 1))}\n"
	                 "  %z = RotaryPositionEmbedding(%x, %c, %s) {mode: 1, in_strategy: ((2, 1, 2, 2), (1, 1, 2, 2), "
	                 "(2, 1, 2, 2))}\n"
	                 "  return %y, %z\n}\n");
	OpDims od;
	OpSplit s;
	cr_assert(rule(r, "y", &od, &s), "%s", msgs(r));
	cr_assert_eq(od.nod, 4);
	expect_dims(od.in_dim[0], 4, (int[]){0, 1, 2, 3}, "x");
	expect_dims(od.in_dim[1], 4, (int[]){-1, -1, 2, 3}, "cos");
	expect_dims(od.in_dim[2], 4, (int[]){0, -1, 2, 3}, "sin");
	cr_assert(od.whole == 1u << 3, "the head dim whole, the others free");
	TensorLayout c;
	op_in_layout(&od, &s, 1, &c);
	cr_assert(axis_of(&c, 0) < 0 && axis_of(&c, 2) >= 0, "cos split by rows only");
	cr_assert(!rule(r, "z", &od, &s), "a split head dim accepted");
	expect_msg(r, "the head dim, whose halves (or pairs) the rotation mixes");
	run_free(r);
}

/* FlashAttentionScore: op dims B, N, S, S_kv, D; q and the result (B, N, S,
 * D), k and v (B, N, S_kv, D), a 4-D mask its B and N where not 1, a 2-D
 * one (S, S_kv); S, S_kv and D whole, so batch and heads split. */
Test(rules, flash_attention)
{
	Run *r = compile(CTX8 "graph @n(%q: <Tensor[Float32], (4, 2, 8, 16)>, %k: <Tensor[Float32], (4, 2, 12, 16)>,\n"
	                 "         %v: <Tensor[Float32], (4, 2, 12, 16)>, %m: <Tensor[Bool], (4, 1, 8, 12)>,\n"
	                 "         %m2: <Tensor[Float32], (8, 12)>) {\n"
	                 "  %y = FlashAttentionScore(%q, %k, %v, %m) {head_num: 2, in_strategy: ((4, 2, 1, 1), (4, 2, 1, 1), "
	                 "(4, 2, 1, 1), (4, 1, 1, 1))}\n"
	                 "  %z = FlashAttentionScore(%q, %k, %v, %m2) {head_num: 2, in_strategy: ((2, 2, 2, 1), (2, 2, 1, 1), "
	                 "(2, 2, 1, 1), (2, 1))}\n"
	                 "  return %y, %z\n}\n");
	OpDims od;
	OpSplit s;
	cr_assert(rule(r, "y", &od, &s), "%s", msgs(r));
	cr_assert_eq(od.nod, 5);
	cr_assert_eq(od.size[3], 12);
	expect_dims(od.in_dim[0], 4, (int[]){0, 1, 2, 4}, "q");
	expect_dims(od.in_dim[1], 4, (int[]){0, 1, 3, 4}, "k");
	expect_dims(od.in_dim[2], 4, (int[]){0, 1, 3, 4}, "v");
	expect_dims(od.in_dim[3], 4, (int[]){0, -1, 2, 3}, "mask");
	expect_dims(od.out_dim, 4, (int[]){0, 1, 2, 4}, "result");
	cr_assert(od.whole == (1u << 2 | 1u << 3 | 1u << 4), "S, S_kv and D whole, B and N free");
	TensorLayout m;
	op_in_layout(&od, &s, 3, &m);
	cr_assert(axis_of(&m, 0) >= 0 && axis_of(&m, 1) < 0, "the mask split by batch only");
	cr_assert(!rule(r, "z", &od, &s), "a split query sequence accepted");
	expect_msg(r, "the queries' sequence, whole in this version");
	run_free(r);
}

/* Split: x's dims, the split axis whole (its slice, as StridedSlice's cut
 * dims); Dropout: elementwise, any split. */
Test(rules, split_and_dropout)
{
	Run *r = compile(CTX8 "graph @n(%x: <Tensor[Float32], (8, 4, 48)>) {\n"
	                 "  %a = Split(%x) {axis: 2, output_num: 3, index: 1, in_strategy: ((2, 4, 1),)}\n"
	                 "  %b = Dropout(%x) {keep_prob: 0.5, in_strategy: ((1, 2, 4),)}\n"
	                 "  %c = Split(%x) {axis: 2, output_num: 3, index: 2, in_strategy: ((2, 1, 4),)}\n"
	                 "  return %a, %b, %c\n}\n");
	OpDims od;
	OpSplit s;
	cr_assert(rule(r, "a", &od, &s), "%s", msgs(r));
	cr_assert_eq(od.whole, 1u << 2, "the split axis stays whole");
	TensorLayout y;
	op_out_layout(&od, &s, &y);
	cr_assert(axis_of(&y, 0) == 0 && axis_of(&y, 1) == 1 && axis_of(&y, 2) < 0 && y.partial == 0);
	cr_assert(rule(r, "b", &od, &s), "%s", msgs(r));
	cr_assert_eq(od.whole, 0u, "Dropout: any dim may be split");
	cr_assert(!rule(r, "c", &od, &s), "the split axis split accepted");
	expect_msg(r, "Split: dim 2 (the split axis) is split into 4");
	run_free(r);
}

/* DropoutDoMask: elementwise over x and its mask; MindSpore's one-entry
 * strategy (x's) lays the mask out as x, and so does the two-entry form. */
Test(rules, dropout_do_mask_one_entry)
{
	Run *r = compile(CTX8 "graph @n(%x: <Tensor[Float32], (8, 16)>) {\n"
	                 "  %m = DropoutGenMask() {shape: (8, 16), keep_prob: 0.9}\n"
	                 "  %a = DropoutDoMask(%x, %m) {keep_prob: 0.9, in_strategy: ((2, 4),)}\n"
	                 "  %b = DropoutDoMask(%x, %m) {keep_prob: 0.9, in_strategy: ((4, 2), (4, 2))}\n"
	                 "  return %a, %b\n}\n");
	OpDims od;
	OpSplit s;
	for (int k = 0; k < 2; k++) {
		cr_assert(rule(r, k ? "b" : "a", &od, &s), "%s", msgs(r));
		cr_assert_eq(od.whole, 0u, "any dim may be split");
		TensorLayout x, m;
		op_in_layout(&od, &s, 0, &x);
		op_in_layout(&od, &s, 1, &m);
		cr_assert(axis_of(&x, 0) >= 0 && axis_of(&x, 1) >= 0, "x split both ways");
		cr_assert(axis_of(&m, 0) == axis_of(&x, 0) && axis_of(&m, 1) == axis_of(&x, 1), "the mask follows x");
	}
	run_free(r);
}

/* GatherD: the index's dims and x's dim along dim, x and index split alike,
 * the index's dim and a dim where it is shorter than x whole (MindSpore's
 * GatherDInfo), x's dim split leaving a partial sum; L2Normalize: x's dims,
 * its axis split with the sums of squares completed. */
Test(rules, gather_d_and_l2_normalize)
{
	Run *r = compile(CTX8 "graph @n(%x: <Tensor[Float32], (8, 16, 4)>, %i: <Tensor[Int32], (8, 5, 4)>,\n"
	                 "           %j: <Tensor[Int32], (8, 16, 2)>) {\n"
	                 "  %a = GatherD(%x, %i) {dim: 1, in_strategy: ((2, 1, 4), (2, 1, 4))}\n"
	                 "  %b = GatherD(%x, %i) {dim: 1, in_strategy: ((2, 2, 2), (2, 2, 2))}\n"
	                 "  %c = GatherD(%x, %j) {dim: 0, in_strategy: ((1, 2, 2), (1, 2, 2))}\n"
	                 "  %d = L2Normalize(%x) {axis: 1, in_strategy: ((2, 4, 1),)}\n"
	                 "  %e = GatherD(%x, %i) {dim: 1, in_strategy: ((2, 2, 2), (2, 1, 2))}\n"
	                 "  return %a, %b, %c, %d, %e\n}\n");
	OpDims od;
	OpSplit s;
	cr_assert(rule(r, "a", &od, &s), "%s", msgs(r));
	cr_assert_eq(od.nod, 4, "the index's dims, then x's along dim");
	cr_assert(od.in_dim[0][1] == 3 && od.reduced == 1u << 3, "x's dim 1 its own op dim, a partial sum when split");
	cr_assert_eq(od.whole, 1u << 1, "dim stays whole");
	TensorLayout y;
	op_out_layout(&od, &s, &y);
	cr_assert(axis_of(&y, 0) >= 0 && axis_of(&y, 1) < 0 && axis_of(&y, 2) >= 0 && y.partial == 0);
	cr_assert(!rule(r, "b", &od, &s), "GatherD's dim split accepted");
	expect_msg(r, "GatherD: dim 1 (GatherD's dim");
	cr_assert(!rule(r, "c", &od, &s), "a dim where the index is shorter split accepted");
	expect_msg(r, "GatherD: dim 2 (a dim where the index is shorter than x");
	cr_assert(rule(r, "d", &od, &s), "%s", msgs(r));
	cr_assert_eq(od.normalized, 1u << 1, "the axis: its sums of squares completed");
	cr_assert_eq(od.whole, 0u, "any dim may be split");
	cr_assert(rule(r, "e", &od, &s), "%s", msgs(r));
	op_out_layout(&od, &s, &y);
	cr_assert(y.partial != 0 && y.partial_op == REDUCE_SUM_OP, "x split along dim: the result a partial sum");
	run_free(r);
}

/* GatherNd: the indices' dims (the last whole), x's (all whole, MindSpore's
 * GatherNdInfo), the result the indices' leading dims and x's trailing ones;
 * the tensor scatters: x's dims, the indices' (whole), updates following
 * both; Update keeps x's indexed dims whole, Add splits them with no
 * partial result (each rank applies the updates in its piece). */
Test(rules, gather_nd_and_tensor_scatter)
{
	Run *r = compile(CTX8 "graph @n(%x: <Tensor[Float32], (8, 4, 6)>, %i: <Tensor[Int32], (8, 3, 2)>,\n"
	                 "           %u: <Tensor[Float32], (8, 3, 6)>) {\n"
	                 "  %a = GatherNd(%x, %i) {in_strategy: ((1, 1, 1), (4, 2, 1))}\n"
	                 "  %b = GatherNd(%x, %i) {in_strategy: ((1, 1, 2), (4, 1, 1))}\n"
	                 "  %c = TensorScatterUpdate(%x, %i, %u) {in_strategy: ((1, 1, 2), (1, 1, 1), (1, 1, 2))}\n"
	                 "  %d = TensorScatterUpdate(%x, %i, %u) {in_strategy: ((2, 1, 4), (1, 1, 1), (1, 1, 4))}\n"
	                 "  %e = TensorScatterAdd(%x, %i, %u) {in_strategy: ((2, 2, 2), (1, 1, 1), (1, 1, 2))}\n"
	                 "  %f = TensorScatterSub(%x, %i, %u) {in_strategy: ((1, 1, 2), (2, 1, 1), (2, 1, 2))}\n"
	                 "  return %a, %b, %c, %d, %e, %f\n}\n");
	OpDims od;
	OpSplit s;
	cr_assert(rule(r, "a", &od, &s), "%s", msgs(r));
	cr_assert_eq(od.nod, 6, "the indices' dims, then x's");
	cr_assert_eq(od.whole, 0x3cu, "the indices' last dim and x's stay whole");
	cr_assert(od.out_rank == 3 && od.out_dim[0] == 0 && od.out_dim[1] == 1 && od.out_dim[2] == 5);
	TensorLayout y;
	op_out_layout(&od, &s, &y);
	cr_assert(axis_of(&y, 0) >= 0 && axis_of(&y, 1) >= 0 && axis_of(&y, 2) < 0 && y.partial == 0);
	cr_assert(!rule(r, "b", &od, &s), "x split accepted");
	expect_msg(r, "GatherNd: x's dim 2 (x, which MindSpore's GatherNdInfo never splits");
	cr_assert(rule(r, "c", &od, &s), "%s", msgs(r));
	cr_assert_eq(od.nod, 6, "x's dims, then the indices'");
	cr_assert_eq(od.whole, 0x3bu, "x's indexed dims and the indices' stay whole");
	cr_assert(od.in_rank[2] == 3 && od.in_dim[2][0] == 3 && od.in_dim[2][1] == 4 && od.in_dim[2][2] == 2);
	cr_assert(!rule(r, "d", &od, &s), "Update's indexed dim split accepted");
	expect_msg(r, "TensorScatterUpdate: dim 0 (a dim of x the indices name");
	cr_assert(rule(r, "e", &od, &s), "%s", msgs(r));
	cr_assert_eq(od.whole, 0x38u, "Add: only the indices whole");
	op_out_layout(&od, &s, &y);
	cr_assert(axis_of(&y, 0) >= 0 && axis_of(&y, 1) >= 0 && y.partial == 0, "no partial result");
	cr_assert(!rule(r, "f", &od, &s), "split indices accepted");
	expect_msg(r, "TensorScatterSub: an indices' dim (the indices and the updates' leading dims");
	run_free(r);
}

/* TensorScatterMul and Div split x's indexed dims as Add does (MindSpore's
 * ScatterNdMulDivBaseInfo), no partial result; Max and Min keep them whole
 * (TensorScatterMaxInfo and TensorScatterMinInfo are TensorScatterUpdateInfo's). */
Test(rules, tensor_scatter_mul_div_max_min)
{
	Run *r = compile(CTX8 "graph @n(%x: <Tensor[Float32], (8, 4, 6)>, %i: <Tensor[Int32], (8, 3, 2)>,\n"
	                 "           %u: <Tensor[Float32], (8, 3, 6)>) {\n"
	                 "  %a = TensorScatterMul(%x, %i, %u) {in_strategy: ((2, 2, 2), (1, 1, 1), (1, 1, 2))}\n"
	                 "  %b = TensorScatterDiv(%x, %i, %u) {in_strategy: ((4, 2, 1), (1, 1, 1), (1, 1, 1))}\n"
	                 "  %c = TensorScatterMax(%x, %i, %u) {in_strategy: ((1, 1, 2), (1, 1, 1), (1, 1, 2))}\n"
	                 "  %d = TensorScatterMin(%x, %i, %u) {in_strategy: ((1, 2, 2), (1, 1, 1), (1, 1, 2))}\n"
	                 "  return %a, %b, %c, %d\n}\n");
	OpDims od;
	OpSplit s;
	TensorLayout y;
	cr_assert(rule(r, "a", &od, &s), "%s", msgs(r));
	cr_assert_eq(od.whole, 0x38u, "Mul: only the indices whole");
	op_out_layout(&od, &s, &y);
	cr_assert(axis_of(&y, 0) >= 0 && axis_of(&y, 1) >= 0 && y.partial == 0, "no partial result");
	cr_assert(rule(r, "b", &od, &s), "%s", msgs(r));
	cr_assert_eq(od.whole, 0x38u, "Div: only the indices whole");
	cr_assert(rule(r, "c", &od, &s), "%s", msgs(r));
	cr_assert_eq(od.whole, 0x3bu, "Max: x's indexed dims and the indices whole");
	cr_assert(!rule(r, "d", &od, &s), "Min's indexed dim split accepted");
	expect_msg(r, "TensorScatterMin: dim 1 (a dim of x the indices name, whole as MindSpore's TensorScatterMaxInfo");
	run_free(r);
}

/* The in-place scatters (scatter_state.c): ScatterUpdate, Max, Min keep x's
 * dim 0 whole (MindSpore's ScatterOpsInfo), ScatterAdd .. Div split it
 * (ScatterMathOpsInfo); the indices whole, the updates their dims then x's
 * trailing ones; ScatterNd* as the tensor scatters; AssignAdd broadcasts. */
Test(rules, state_scatters)
{
	Run *r = compile(CTX8 "graph @n(%x: <Parameter[Float32], (8, 6)> = ones, %y: <Parameter[Float32], (8, 6)> = ones,\n"
	                 "           %z: <Parameter[Float32], (8, 6)> = ones, %w: <Parameter[Float32], (8, 6)> = ones,\n"
	                 "           %i: <Tensor[Int32], (4, 2)>, %u: <Tensor[Float32], (4, 2, 6)>,\n"
	                 "           %n: <Tensor[Int32], (4, 1)>, %v: <Tensor[Float32], (4, 6)>) {\n"
	                 "  %a = ScatterUpdate(%x, %i, %u) {in_strategy: ((1, 2), (1, 1), (1, 1, 2))}\n"
	                 "  %b = ScatterAdd(%y, %i, %u) {in_strategy: ((4, 2), (1, 1), (1, 1, 2))}\n"
	                 "  %c = ScatterMax(%z, %i, %u) {in_strategy: ((2, 1), (1, 1), (1, 1, 1))}\n"
	                 "  %d = ScatterNdAdd(%w, %n, %v) {in_strategy: ((2, 2), (1, 1), (1, 2))}\n"
	                 "  return %a, %b, %c, %d\n}\n");
	OpDims od;
	OpSplit s;
	TensorLayout y;
	cr_assert(rule(r, "a", &od, &s), "%s", msgs(r));
	cr_assert_eq(od.whole, 0xdu, "Update: x's dim 0 and the indices whole");
	cr_assert_eq(od.in_rank[2], 3);
	cr_assert(od.in_dim[2][0] == 2 && od.in_dim[2][1] == 3 && od.in_dim[2][2] == 1, "updates: indices' dims, x's dim 1");
	cr_assert(rule(r, "b", &od, &s), "%s", msgs(r));
	cr_assert_eq(od.whole, 0xcu, "Add: only the indices whole");
	op_out_layout(&od, &s, &y);
	cr_assert(axis_of(&y, 0) >= 0 && axis_of(&y, 1) >= 0 && y.partial == 0, "no partial result");
	cr_assert(!rule(r, "c", &od, &s), "Max's dim 0 split accepted");
	expect_msg(r, "ScatterMax: x's dim 0 (the rows the indices name, whole as MindSpore's ScatterUpdateInfo");
	cr_assert(rule(r, "d", &od, &s), "%s", msgs(r));
	run_free(r);
}

/* The unsorted segment reductions: the ids' dims (reduced), the segments
 * (whole), x's trailing dims; split ids dims leave partial sums, maxima,
 * minima or products (MindSpore's UnsortedSegment*Info AllReduce), a split
 * trailing dim none; the ids' strategy must be x's first entries. */
Test(rules, unsorted_segment)
{
	Run *r = compile(CTX8 "graph @n(%x: <Tensor[Float32], (8, 4, 6)>, %i: <Tensor[Int32], (8, 4)>,\n"
	                 "           %j: <Tensor[Int64], (8,)>) {\n"
	                 "  %a = UnsortedSegmentSum(%x, %i) {num_segments: 5, in_strategy: ((2, 2, 2), (2, 2))}\n"
	                 "  %b = UnsortedSegmentMax(%x, %j) {num_segments: 3, in_strategy: ((4, 1, 2), (4,))}\n"
	                 "  %c = UnsortedSegmentMin(%x, %j) {num_segments: 3, in_strategy: ((1, 4, 2), (1,))}\n"
	                 "  %d = UnsortedSegmentProd(%x, %i) {num_segments: 5, in_strategy: ((2, 2, 1), (2, 4))}\n"
	                 "  %e = UnsortedSegmentProd(%x, %j) {num_segments: 3, in_strategy: ((8, 1, 1), (8,))}\n"
	                 "  return %a, %b, %c, %d, %e\n}\n");
	OpDims od;
	OpSplit s;
	TensorLayout y;
	cr_assert(rule(r, "a", &od, &s), "%s", msgs(r));
	cr_assert_eq(od.nod, 4, "the ids' two dims, the segments, x's last");
	cr_assert(od.reduced == 3u && od.whole == 1u << 2 && od.reduce_op == REDUCE_SUM_OP);
	cr_assert(od.in_dim[0][2] == 3 && od.in_dim[1][1] == 1 && od.out_rank == 2 && od.out_dim[0] == 2);
	op_out_layout(&od, &s, &y);
	cr_assert(axis_of(&y, 0) < 0 && axis_of(&y, 1) >= 0 && y.partial != 0, "segments whole, partial sums");
	cr_assert(rule(r, "b", &od, &s), "%s", msgs(r));
	op_out_layout(&od, &s, &y);
	cr_assert(y.partial != 0 && y.partial_op == REDUCE_MAX_OP, "partial maxima");
	cr_assert(rule(r, "c", &od, &s), "%s", msgs(r));
	op_out_layout(&od, &s, &y);
	cr_assert(y.partial == 0 && axis_of(&y, 1) >= 0 && axis_of(&y, 2) >= 0, "trailing dims only: no partial");
	cr_assert(!rule(r, "d", &od, &s), "an ids strategy unlike x's accepted");
	expect_msg(r, "input 1 splits dim 1 into 4 but input 0 splits it into 2");
	cr_assert(rule(r, "e", &od, &s), "%s", msgs(r));
	op_out_layout(&od, &s, &y);
	cr_assert(y.partial != 0 && y.partial_op == REDUCE_PROD_OP, "partial products");
	run_free(r);
}

/* Stack: the operands' dims, one strategy for all, the new dim (a negative
 * axis from the result's rank) following no op dim; Lerp: a weight
 * broadcast against start, a number's strategy (); L2Loss: every dim split
 * leaves a partial sum; SigmoidCrossEntropyWithLogits: both operands split
 * alike. */
Test(rules, stack_lerp_losses)
{
	Run *r = compile(CTX8 "graph @n(%x: <Tensor[Float32], (8, 16)>, %y: <Tensor[Float32], (8, 16)>,\n"
	                 "           %e: <Tensor[Float32], (16,)>, %w: <Tensor[Float32], (8, 1)>) {\n"
	                 "  %a = Stack(%x, %y, %x) {axis: -2, in_strategy: ((4, 2), (4, 2), (4, 2))}\n"
	                 "  %b = Lerp(%x, %e, %w) {in_strategy: ((2, 4), (4,), (2, 1))}\n"
	                 "  %c = Lerp(%x, %e, 0.5) {in_strategy: ((2, 4), (4,), ())}\n"
	                 "  %d = L2Loss(%x) {in_strategy: ((4, 2),)}\n"
	                 "  %f = SigmoidCrossEntropyWithLogits(%x, %y) {in_strategy: ((2, 4), (2, 4))}\n"
	                 "  %g = Lerp(%x, %e, %w) {in_strategy: ((2, 4), (2,), (2, 1))}\n"
	                 "  return %a, %b, %c, %d, %f, %g\n}\n");
	OpDims od;
	OpSplit s;
	TensorLayout y;
	cr_assert(rule(r, "a", &od, &s), "%s", msgs(r));
	cr_assert_eq(od.nod, 2, "the operands' dims");
	cr_assert(od.in_rank[2] == 2 && od.in_dim[2][0] == 0 && od.in_dim[2][1] == 1, "every operand follows them");
	cr_assert(od.out_rank == 3 && od.out_dim[0] == 0 && od.out_dim[1] == -1 && od.out_dim[2] == 1,
	          "the new dim (axis -2 of the result's 3) follows no op dim");
	op_out_layout(&od, &s, &y);
	cr_assert(axis_of(&y, 0) >= 0 && axis_of(&y, 1) < 0 && axis_of(&y, 2) >= 0 && y.partial == 0);
	cr_assert(rule(r, "b", &od, &s), "%s", msgs(r));
	cr_assert(od.in_dim[1][0] == 1 && od.in_dim[2][0] == 0 && od.in_dim[2][1] == -1,
	          "end follows the columns, the weight the rows, its dim of 1 broadcast");
	cr_assert(rule(r, "c", &od, &s), "%s", msgs(r));
	cr_assert_eq(od.in_rank[2], 0, "a number: rank 0, strategy ()");
	cr_assert(rule(r, "d", &od, &s), "%s", msgs(r));
	op_out_layout(&od, &s, &y);
	cr_assert(y.partial != 0 && y.partial_op == REDUCE_SUM_OP, "L2Loss split: partial sums");
	cr_assert(rule(r, "f", &od, &s), "%s", msgs(r));
	cr_assert(od.in_dim[1][0] == 0 && od.in_dim[1][1] == 1, "labels split as the logits");
	cr_assert(!rule(r, "g", &od, &s), "end split unlike start's columns accepted");
	run_free(r);
}

/* SquareSumAll: x's dims, y split alike, every split a partial sum (and y
 * split unlike x refused, MindSpore's SquareSumAllInfo); MaskedFill: the
 * mask broadcast as a binary operand, the value's strategy (); Identity: any
 * split, the result as the input. */
Test(rules, square_sum_all_masked_fill_identity)
{
	Run *r = compile(CTX8 "graph @n(%x: <Tensor[Float32], (8, 16)>, %y: <Tensor[Float32], (8, 16)>,\n"
	                 "           %m: <Tensor[Bool], (1, 16)>) {\n"
	                 "  %a = SquareSumAll(%x, %y) {index: 1, in_strategy: ((2, 4), (2, 4))}\n"
	                 "  %b = SquareSumAll(%x, %y) {index: 0, in_strategy: ((2, 4), (4, 2))}\n"
	                 "  %c = MaskedFill(%x, %m, 0.5) {in_strategy: ((2, 4), (1, 4), ())}\n"
	                 "  %d = MaskedFill(%x, %m, 0.5) {in_strategy: ((2, 4), (2, 4), ())}\n"
	                 "  %e = Identity(%x) {in_strategy: ((4, 2),)}\n"
	                 "  return %a, %b, %c, %d, %e\n}\n");
	OpDims od;
	OpSplit s;
	TensorLayout y;
	cr_assert(rule(r, "a", &od, &s), "%s", msgs(r));
	cr_assert(od.in_dim[1][0] == 0 && od.in_dim[1][1] == 1, "y follows x's dims");
	op_out_layout(&od, &s, &y);
	cr_assert(y.partial != 0 && y.partial_op == REDUCE_SUM_OP && od.out_rank == 0, "a scalar of partial sums");
	cr_assert(!rule(r, "b", &od, &s), "y split unlike x accepted");
	cr_assert(rule(r, "c", &od, &s), "%s", msgs(r));
	cr_assert(od.in_dim[1][0] == -1 && od.in_dim[1][1] == 1 && od.in_rank[2] == 0,
	          "the mask's dim of 1 broadcast, its columns split with x's; value () ");
	op_out_layout(&od, &s, &y);
	cr_assert(axis_of(&y, 0) >= 0 && axis_of(&y, 1) >= 0 && y.partial == 0);
	cr_assert(!rule(r, "d", &od, &s), "the mask's broadcast dim split accepted");
	cr_assert(rule(r, "e", &od, &s), "%s", msgs(r));
	op_out_layout(&od, &s, &y);
	cr_assert(axis_of(&y, 0) >= 0 && axis_of(&y, 1) >= 0 && y.partial == 0, "Identity's result as its input");
	run_free(r);
}

/* KLDivLoss (MindSpore's KLDivLossInfo): x's dims, y split alike; "none"
 * the result as x, a reduction a scalar of partial sums; Eye and LinSpace
 * any split, their result the op dims. */
Test(rules, kldiv_loss_eye_lin_space)
{
	Run *r = compile(CTX8 "graph @n(%x: <Tensor[Float32], (8, 16)>, %y: <Tensor[Float32], (8, 16)>) {\n"
	                 "  %a = KLDivLoss(%x, %y) {reduction: \"none\", in_strategy: ((2, 4), (2, 4))}\n"
	                 "  %b = KLDivLoss(%x, %y) {reduction: \"batchmean\", in_strategy: ((4, 2), (4, 2))}\n"
	                 "  %c = KLDivLoss(%x, %y) {in_strategy: ((2, 4), (4, 2))}\n"
	                 "  %e = Eye() {n: 8, m: 16}\n"
	                 "  %l = LinSpace() {start: 0.0, stop: 1.0, num: 16}\n"
	                 "  return %a, %b, %c, %e, %l\n}\n");
	OpDims od;
	OpSplit s;
	TensorLayout y;
	cr_assert(rule(r, "a", &od, &s), "%s", msgs(r));
	cr_assert(od.in_dim[1][0] == 0 && od.in_dim[1][1] == 1, "y follows x's dims");
	op_out_layout(&od, &s, &y);
	cr_assert(axis_of(&y, 0) >= 0 && axis_of(&y, 1) >= 0 && y.partial == 0, "none: the result as x");
	cr_assert(rule(r, "b", &od, &s), "%s", msgs(r));
	op_out_layout(&od, &s, &y);
	cr_assert(y.partial != 0 && y.partial_op == REDUCE_SUM_OP && od.out_rank == 0, "a scalar of partial sums");
	cr_assert(!rule(r, "c", &od, &s), "y split unlike x accepted");
	cr_assert(rule(r, "e", &od, &s) && od.nod == 2 && od.out_rank == 2, "%s", msgs(r));
	cr_assert(rule(r, "l", &od, &s) && od.nod == 1 && od.out_rank == 1, "%s", msgs(r));
	run_free(r);
}

/* StridedSlice with MindSpore's masks: the op dims are x's (the strategy
 * has x's rank); a new axis is a result dim no op dim follows, a shrunk dim
 * none of the result's and kept whole, as a cut dim is. */
Test(rules, strided_slice_masks)
{
	Run *r = compile(CTX8 "graph @n(%x: <Tensor[Float32], (2, 4, 8, 16)>) {\n"
	                 "  %a = StridedSlice(%x) {begin: (1, 1), end: (2, 4), strides: (1, 1), new_axis_mask: 6, "
	                 "shrink_axis_mask: 1, in_strategy: ((1, 2, 2, 2),)}\n"
	                 "  %b = StridedSlice(%x) {begin: (0, 0), end: (2, 3), strides: (1, 1), in_strategy: ((2, 1, 4, 1),)}\n"
	                 "  %c = StridedSlice(%x) {begin: (1,), end: (2,), strides: (1,), shrink_axis_mask: 1, "
	                 "in_strategy: ((2, 1, 1, 4),)}\n"
	                 "  %d = StridedSlice(%x) {begin: (0, 0), end: (2, 3), strides: (1, 1), in_strategy: ((1, 2, 1, 1),)}\n"
	                 "  return %a, %b, %c, %d\n}\n");
	OpDims od;
	OpSplit s;
	cr_assert(rule(r, "a", &od, &s), "%s", msgs(r));
	cr_assert_eq(od.nod, 4, "x's dims");
	cr_assert_eq(od.whole, 1u << 0, "the shrunk dim stays whole");
	cr_assert_eq(od.out_rank, 4);
	cr_assert(od.out_dim[0] == -1 && od.out_dim[1] == 1 && od.out_dim[2] == 2 && od.out_dim[3] == 3,
	          "(new axis, x's dims 1 to 3)");
	TensorLayout y;
	op_out_layout(&od, &s, &y);
	cr_assert(axis_of(&y, 0) < 0 && axis_of(&y, 1) >= 0 && axis_of(&y, 2) >= 0 && axis_of(&y, 3) >= 0);
	cr_assert(rule(r, "b", &od, &s), "%s", msgs(r));
	cr_assert_eq(od.whole, 1u << 1, "the cut dim stays whole, the others past the entries may split");
	cr_assert(!rule(r, "c", &od, &s), "a shrunk dim split accepted");
	expect_msg(r, "StridedSlice: dim 0 (a dim shrink_axis_mask drops) is split into 2");
	cr_assert(!rule(r, "d", &od, &s), "a cut dim split accepted");
	expect_msg(r, "StridedSlice: dim 1 (a dim the slice cuts) is split into 2");
	run_free(r);
}

/* Strategies the rule cannot take: inputs that split k differently, the
 * concat axis split, more devices than device_num divides into. */
Test(rules, invalid_strategies_refused)
{
	static const struct {
		const char *stmt, *msg;
	} cases[] = {
		{"%y = MatMul(%x, %w) {in_strategy: ((2, 4), (2, 1))}",
		 "MatMul: input 1 splits k into 2 but input 0 splits it into 4; every input must split k alike, "
		 "e.g. in_strategy ((2, 4), (4, 1))"},
		{"%y = Concat(%x, %x) {axis: 1, in_strategy: ((1, 2), (1, 2))}",
		 "Concat: dim 1 (the concat axis) is split into 2 but must stay whole"},
		{"%y = MatMul(%x, %w) {in_strategy: ((4, 2), (2, 2))}",
		 "MatMul: the strategy splits i 4 x k 2 x j 2, 16 devices in all, which does not divide device_num 8"},
		{"%y = LayerNorm(%x, %g, %g) {begin_norm_axis: 0, begin_params_axis: 1, in_strategy: ((1, 8), (8,), (8,))}",
		 "LayerNorm: dim 1 (a normalized dim, with begin_params_axis other than begin_norm_axis) is split"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char text[1024];
		snprintf(text, sizeof text,
		         CTX8 "graph @n(%%x: <Tensor[Float32], (16, 32)>, %%w: <Parameter[Float32], (32, 8)>,\n"
		              "         %%g: <Parameter[Float32], (32,)>) {\n  %s\n  return %%y\n}\n",
		         cases[i].stmt);
		Run *r = compile(text);
		expect_clean(r);
		OpDims od;
		OpSplit s;
		cr_assert(!rule(r, "y", &od, &s), "accepted: %s", cases[i].stmt);
		cr_assert_eq(r->d.nerrors, 1, "%s", msgs(r));
		expect_msg(r, cases[i].msg);
		run_free(r);
	}
}

/* Layout strategies: the declared matrix is the operator's; the inputs must
 * agree on the axes of a shared op dim, and an axis splits one op dim. */
Test(rules, layouts)
{
	Run *r = compile(CTX8 "layout L = Layout((2, 4), (\"dp\", \"mp\"))\n"
	                 "graph @n(%x: <Tensor[Float32], (16, 32)>, %w: <Parameter[Float32], (32, 8)>) {\n"
	                 "  %y = MatMul(%x, %w) {in_strategy: (L(\"dp\", \"mp\"), L(\"mp\", \"None\"))}\n"
	                 "  %z = MatMul(%x, %w) {in_strategy: (L(\"dp\", \"mp\"), L(\"dp\", \"None\"))}\n"
	                 "  %u = MatMul(%x, %w) {in_strategy: (L(\"dp\", \"None\"), L(\"None\", \"dp\"))}\n"
	                 "  return %y, %z, %u\n}\n");
	expect_clean(r);
	OpDims od;
	OpSplit s;
	cr_assert(rule(r, "y", &od, &s), "%s", msgs(r));
	cr_assert(!s.tuple && s.decl && s.ndev == 2 && s.dev[0] == 2 && s.dev[1] == 4);
	cr_assert(s.split[0] == 2 && s.split[1] == 4 && s.split[2] == 1);
	TensorLayout y;
	op_out_layout(&od, &s, &y);
	cr_assert(axis_of(&y, 0) == 0 && y.partial == 1u << 1);
	cr_assert(!rule(r, "z", &od, &s));
	expect_msg(r, "MatMul: input 1 lays k over other device axes than input 0 does");
	cr_assert(!rule(r, "u", &od, &s));
	expect_msg(r, "MatMul: device axis 'dp' splits two different dims of the operator");
	run_free(r);
}

/* A computed constant's op dims are its result's, with no batch dim (its
 * default is whole); after the strategies it takes the layout its readers
 * take it in (constant_layouts), whole when they differ or when a Reshape
 * reads it; no collective moves it, and each rank's begin and end
 * (lowered_rank_attrs) are where its piece lies. */
Test(rules, constants_take_their_readers_layout)
{
	Run *r = compile(CTX8 "graph @n(%s: <Tensor[Float32], (2, 4, 8, 8)>, %t: <Tensor[Float32], (8, 8)>) {\n"
	                 "  %mask = CausalMask() {shape: (8, 8)}\n"
	                 "  %a = Add(%s, %mask) {in_strategy: ((2, 1, 4, 1), (4, 1))}\n"
	                 "  %two = CausalMask() {shape: (8, 8), fill: -1e4}\n"
	                 "  %b = Add(%t, %two) {in_strategy: ((8, 1), (8, 1))}\n"
	                 "  %c = Add(%t, %two) {in_strategy: ((1, 8), (1, 8))}\n"
	                 "  %pos = Arange() {stop: 64}\n"
	                 "  %p2 = Reshape(%pos) {shape: (8, 8)}\n"
	                 "  return %a, %b, %c, %p2\n}\n");
	OpDims od;
	OpSplit s;
	cr_assert(rule(r, "mask", &od, &s), "%s", msgs(r));
	cr_assert(od.nod == 2 && od.nin == 0 && od.batch == -1, "the result's dims, no batch dim");
	cr_assert(s.split[0] == 1 && s.split[1] == 1, "whole by default");
	Lowered *l = lower_run(r, NULL, STAGE_LOWER);
	for (int i = 0; i < l->nops; i++) {
		const LOp *o = &l->ops[i];
		const LValue *y = &l->values[o->result];
		if (o->step && o->step->kind != STEP_SLICE)   /* a local slice sends nothing */
			cr_assert(strcmp(l->values[o->in[0]].name, "mask") && strcmp(l->values[o->in[0]].name, "two"),
			          "%s moves a constant: %s", op_info[o->op].name, o->why);
		if (!op_is_constant(o->op))
			continue;
		if (!strcmp(y->name, "mask")) {
			cr_assert(layout_dim_split(&y->layout, 0) == 4 && layout_dim_split(&y->layout, 1) == 1,
			          "split by rows as the Add reads it");
			cr_assert_eq(y->type.dims[0], 2);
			int64_t members[8];
			Attrs a;
			lowered_rank_attrs(l, o, 3, &a, members);   /* rank 3: batch 0, rows 6..8 */
			cr_assert(a.begin[0] == 6 && a.end[0] == 8 && a.begin[1] == 0 && a.end[1] == 8,
			          "rank 3's piece: [%lld, %lld)", (long long)a.begin[0], (long long)a.end[0]);
		} else {   /* read split two ways, or by a Reshape: whole */
			for (int d = 0; d < y->type.rank; d++)
				cr_assert_eq(layout_dim_split(&y->layout, d), 1, "%%%s dim %d", y->name, d);
		}
	}
	run_free(r);
}

/* Tril's and Triu's op dims are x's, any split, the output following them
 * (no partial result); each rank's diagonal (lowered_rank_attrs) is its
 * piece's, as MindSpore's test_auto_parallel_triu checks it: rank 4 of
 * (1, 2, 4) on (16, 64, 32) starts at row 32 (diagonal 0 + 32, clipped to
 * the piece's 8 columns), rank 7 of (2, 1, 4) at column 24 (-2 - 24). A
 * Tril split unevenly, (2, 4) on a (6, 7) matrix in pieces (3, 2): rank 7
 * starts at row 3, column 6 (1 + 3 - 6). A split of the batch alone keeps
 * the diagonal as written. */
Test(rules, triangle_diagonal_per_piece)
{
	Run *r = compile(CTX8 "graph @n(%x: <Tensor[Float32], (16, 64, 32)>, %m: <Tensor[Float32], (6, 7)>) {\n"
	                 "  %u = Triu(%x) {in_strategy: ((1, 2, 4),)}\n"
	                 "  %v = Triu(%x) {diagonal: -2, in_strategy: ((2, 1, 4),)}\n"
	                 "  %t = Tril(%m) {diagonal: 1, in_strategy: ((2, 4),)}\n"
	                 "  %w = Tril(%x) {diagonal: 3, in_strategy: ((8, 1, 1),)}\n"
	                 "  return %u, %v, %t, %w\n}\n");
	expect_clean(r);
	OpDims od;
	OpSplit s;
	cr_assert(rule(r, "u", &od, &s), "%s", msgs(r));
	cr_assert(od.nod == 3 && od.batch == 0 && !od.whole && !od.reduced, "x's dims, any split");
	expect_dims(od.out_dim, 3, (const int[]){0, 1, 2}, "the result");
	cr_assert(s.split[0] == 1 && s.split[1] == 2 && s.split[2] == 4);
	Lowered *l = lower_run(r, NULL, STAGE_LOWER);
	int seen = 0;
	for (int i = 0; i < l->nops; i++) {
		const LOp *o = &l->ops[i];
		if (!op_is_triangle(o->op))
			continue;
		const char *name = l->values[o->result].name;
		int64_t members[8], rank = !strcmp(name, "u") ? 4 : 7;
		int64_t want = !strcmp(name, "u") ? 8 : !strcmp(name, "v") ? -26 : !strcmp(name, "t") ? -2 : 3;
		Attrs a;
		lowered_rank_attrs(l, o, rank, &a, members);
		cr_assert_eq(a.diagonal, want, "%%%s on rank %lld: diagonal %lld", name, (long long)rank, (long long)a.diagonal);
		cr_assert(a.present & ATTR_BIT(ATTR_DIAGONAL), "%%%s shows its diagonal", name);
		seen++;
	}
	cr_assert_eq(seen, 4);
	run_free(r);
}

/* BatchNorm: x's dims, any split (MindSpore's BatchNormInfo), scale, bias,
 * mean and variance following C; in training N, H and W are normalized (the
 * batch's statistics completed over the ranks splitting them, two forward
 * and three backward), in inference nothing is; a statistic split unlike C
 * is refused. */
Test(rules, batch_norm)
{
	Run *r = compile(CTX8 "graph @n(%x: <Tensor[Float32], (8, 4, 6, 6)>, %y: <Tensor[Float32], (8, 4)>,\n"
	                 "           %g: <Parameter[Float32], (4,)>, %b: <Parameter[Float32], (4,)>,\n"
	                 "           %m: <Parameter[Float32], (4,)>, %v: <Parameter[Float32], (4,)>,\n"
	                 "           %m2: <Parameter[Float32], (4,)>, %v2: <Parameter[Float32], (4,)>,\n"
	                 "           %m3: <Parameter[Float32], (4,)>, %v3: <Parameter[Float32], (4,)>) {\n"
	                 "  %a = BatchNorm(%x, %g, %b, %m, %v) {is_training: true,\n"
	                 "                                   in_strategy: ((2, 2, 2, 1), (2,), (2,), (2,), (2,))}\n"
	                 "  %c = BatchNorm(%y, %g, %b, %m2, %v2) {in_strategy: ((4, 2), (2,), (2,), (2,), (2,))}\n"
	                 "  %d = BatchNorm(%x, %g, %b, %m3, %v3) {is_training: true,\n"
	                 "                                     in_strategy: ((2, 2, 1, 1), (2,), (1,), (2,), (2,))}\n"
	                 "  return %a, %c, %d\n}\n");
	OpDims od;
	OpSplit s;
	cr_assert(rule(r, "a", &od, &s), "%s", msgs(r));
	cr_assert_eq(od.nod, 4, "x's dims");
	cr_assert(od.in_rank[1] == 1 && od.in_dim[1][0] == 1 && od.in_dim[4][0] == 1, "the four follow C");
	cr_assert_eq(od.normalized, 1u << 0 | 1u << 2 | 1u << 3, "N, H and W: the batch's statistics completed");
	cr_assert(od.nstats_fwd == 2 && od.nstats_bwd == 3 && od.whole == 0u);
	cr_assert(s.split[0] == 2 && s.split[1] == 2 && s.split[2] == 2);
	cr_assert(rule(r, "c", &od, &s), "%s", msgs(r));
	cr_assert_eq(od.normalized, 0u, "inference: the given statistics, nothing completed");
	TensorLayout y;
	op_out_layout(&od, &s, &y);
	cr_assert(axis_of(&y, 0) >= 0 && axis_of(&y, 1) >= 0 && y.partial == 0, "y split as x, whole values");
	cr_assert(!rule(r, "d", &od, &s), "a bias split unlike C accepted");
	expect_msg(r, "BatchNorm: input 2 splits dim 1 into 1 but input 1 splits it into 2");
	run_free(r);
}

/* PadV3's op dims are x's; a dim the paddings lengthen stays whole (as
 * MindSpore's PadV3Info refuses to split it), the others split freely,
 * unevenly too, the result following them; the constant (a number) has no
 * dim. The batch op dim is the first dim it does not pad. */
Test(rules, pad_v3_padded_dims_whole)
{
	Run *r = compile(CTX8 "graph @n(%x: <Tensor[Float32], (32, 5, 8)>) {\n"
	                 "  %a = PadV3(%x, 0.5) {paddings: (2, 2), in_strategy: ((2, 4, 1), ())}\n"
	                 "  %b = PadV3(%x) {paddings: (0, 0, 0, 0, 1, 2), in_strategy: ((1, 2, 4),)}\n"
	                 "  return %a, %b\n}\n");
	expect_clean(r);
	OpDims od;
	OpSplit s;
	cr_assert(rule(r, "a", &od, &s), "%s", msgs(r));
	cr_assert(od.nod == 3 && od.whole == 1u << 2 && od.batch == 0 && !od.reduced, "the last dim whole");
	cr_assert(od.in_rank[0] == 3 && od.in_rank[1] == 0, "x's dims; the constant none");
	expect_dims(od.out_dim, 3, (const int[]){0, 1, 2}, "the result");
	cr_assert(s.split[0] == 2 && s.split[1] == 4 && s.split[2] == 1, "dim 1 (5) split 4 ways unevenly");
	cr_assert(rule(r, "b", &od, &s), "%s", msgs(r));
	cr_assert(od.whole == 1u << 0 && od.batch == 1, "dim 0 whole; the batch op dim the first unpadded one");
	run_free(r);
	r = compile(CTX8 "graph @n(%x: <Tensor[Float32], (32, 16, 8)>) {\n"
	            "  %a = PadV3(%x, 0.5) {paddings: (0, 0, 1, 2), in_strategy: ((2, 4, 1), ())}\n"
	            "  return %a\n}\n");
	OpDims od2;
	OpSplit s2;
	cr_assert(!rule(r, "a", &od2, &s2), "a padded dim split is refused");
	cr_assert(strstr(msgs(r), "PadV3: dim 1 (a dim the paddings lengthen) is split into 4 but must stay whole"),
	          "%s", msgs(r));
	run_free(r);
}

/* Conv2DTranspose: op dims N, C_out (summed), H, W, C_in as MindSpore's
 * device matrix (n, o, h, w, i); dout follows the result's H and W where no
 * window crosses a piece (2x2 stride 2, no padding), else it is whole along
 * them (3x3 "same" stride 2) while the strategy still splits the op dim;
 * H's split must divide dout's rows too. */
Test(rules, conv2d_transpose)
{
	Run *r = compile(CTX8 "graph @n(%d: <Tensor[Float32], (4, 8, 6, 6)>, %w: <Parameter[Float32], (8, 2, 2, 2)>,\n"
	                 "         %v: <Parameter[Float32], (8, 2, 3, 3)>) {\n"
	                 "  %y = Conv2DTranspose(%d, %w) {out_channel: 8, kernel_size: 2, stride: 2, input_size: (4, 2, 12, "
	                 "12), in_strategy: ((2, 2, 2, 1), (2, 1, 1, 1))}\n"
	                 "  %z = Conv2DTranspose(%d, %v) {out_channel: 8, kernel_size: 3, stride: 2, pad_mode: \"same\",\n"
	                 "                               input_size: (4, 2, 12, 12), in_strategy: ((1, 1, 2, 2), (1, 2, 1, "
	                 "1))}\n  return %y, %z\n}\n");
	expect_clean(r);
	OpDims od;
	OpSplit s;
	cr_assert(rule(r, "y", &od, &s), "%s", msgs(r));
	char buf[24];
	cr_assert_eq(od.nod, 7);
	cr_assert_str_eq(op_dim_name(&od, 1, buf, sizeof buf), "C_out");
	cr_assert_str_eq(op_dim_name(&od, 4, buf, sizeof buf), "C_in");
	cr_assert(od.size[2] == 12 && od.also[2] == 6, "H: the result's 12 rows, dout's 6");
	expect_dims(od.in_dim[0], 4, (int[]){0, 1, 2, 3}, "dout");
	expect_dims(od.in_dim[1], 4, (int[]){1, 4, 5, 6}, "w");
	expect_dims(od.out_dim, 4, (int[]){0, 4, 2, 3}, "y");
	cr_assert_eq(od.reduced, 1u << 1, "C_out is summed over");
	cr_assert(s.split[0] == 2 && s.split[1] == 2 && s.split[2] == 2 && s.split[4] == 1);
	TensorLayout y;
	op_out_layout(&od, &s, &y);
	cr_assert(axis_of(&y, 0) >= 0 && axis_of(&y, 1) == -1 && axis_of(&y, 2) >= 0);
	cr_assert(y.partial, "y is partial over C_out's axis");
	cr_assert(rule(r, "z", &od, &s), "%s", msgs(r));
	expect_dims(od.in_dim[0], 4, (int[]){0, 1, -1, -1}, "dout of the overlapping windows");
	cr_assert(s.split[2] == 2 && s.split[3] == 2 && s.split[4] == 2);
	TensorLayout d, z;
	op_in_layout(&od, &s, 0, &d);
	op_out_layout(&od, &s, &z);
	cr_assert(axis_of(&d, 2) == -1 && axis_of(&z, 2) >= 0 && axis_of(&z, 1) >= 0);
	cr_assert(!z.partial);
	run_free(r);
	/* 12 rows split 4 ways, dout's 6 rows not */
	r = compile(CTX8 "graph @n(%d: <Tensor[Float32], (4, 8, 6, 6)>, %w: <Parameter[Float32], (8, 2, 3, 3)>) {\n"
	            "  %y = Conv2DTranspose(%d, %w) {out_channel: 8, kernel_size: 3, stride: 2, pad_mode: \"same\",\n"
	            "                               input_size: (4, 2, 12, 12), in_strategy: ((1, 1, 4, 1), (1, 1, 1, 1))}\n"
	            "  return %y\n}\n");
	expect_clean(r);
	cr_assert(!rule(r, "y", &od, &s), "accepted a split of dout's 6 rows into 4");
	cr_assert_eq(r->d.nerrors, 1, "%s", msgs(r));
	run_free(r);
}

/* EmbeddingLookup: Gather's op dims on axis 0 (the ids' dims, v, h), a split
 * of v leaving a partial sum; the splits MindSpore's EmbeddingLookupInfo
 * refuses together refused (the ids split with the rows outside its
 * shard-batch-and-axis modes, rows and columns over part of the devices),
 * and none of those among the search's candidates. */
Test(rules, embedding_lookup)
{
	Run *r = compile(CTX8 "graph @n(%t: <Parameter[Float32], (16, 8)>, %i: <Tensor[Int32], (4, 6)>) {\n"
	                 "  %a = EmbeddingLookup(%t, %i) {offset: 2, in_strategy: ((8, 1), (1, 1))}\n"
	                 "  %b = EmbeddingLookup(%t, %i) {in_strategy: ((2, 1), (4, 1))}\n"
	                 "  %c = EmbeddingLookup(%t, %i) {in_strategy: ((2, 1), (2, 2))}\n"
	                 "  %d = EmbeddingLookup(%t, %i) {in_strategy: ((2, 4), (1, 1))}\n"
	                 "  %e = EmbeddingLookup(%t, %i) {in_strategy: ((2, 1), (2, 1))}\n"
	                 "  %f = EmbeddingLookup(%t, %i) {in_strategy: ((2, 2), (1, 1))}\n"
	                 "  return %a, %b, %c, %d, %e, %f\n}\n");
	OpDims od;
	OpSplit s;
	cr_assert(rule(r, "a", &od, &s), "%s", msgs(r));
	cr_assert_eq(od.nod, 4, "the ids' dims, then the table's rows and columns");
	cr_assert(od.reduced == 1u << 2 && od.out_rank == 3 && od.out_dim[2] == 3);
	TensorLayout y;
	op_out_layout(&od, &s, &y);
	cr_assert(y.partial != 0, "a row split leaves a partial sum");
	cr_assert(rule(r, "b", &od, &s), "shard batch and axis: %s", msgs(r));
	cr_assert(rule(r, "c", &od, &s), "shard batch, axis and sp: %s", msgs(r));
	cr_assert(rule(r, "d", &od, &s), "rows and columns over every device: %s", msgs(r));
	cr_assert(!rule(r, "e", &od, &s), "the ids split with the rows on 4 of 8 accepted");
	expect_msg(r, "EmbeddingLookup: the table's rows are split into 2 and the indices too, (2, 1)");
	cr_assert(!rule(r, "f", &od, &s), "rows and columns on 4 of 8 accepted");
	expect_msg(r, "EmbeddingLookup: the table's rows and columns are both split, (2, 2), on 4 of the 8 devices");
	const Node *n = node_of(r, "a");
	cr_assert(op_dims(module_entry(r->m), n, &od));
	int64_t cand[64][MAX_OPDIMS];
	int nc = op_candidates(n, &od, 8, cand, 64), rows = 0;
	for (int k = 0; k < nc; k++) {
		cr_assert(op_split_allowed(n, &od, cand[k], 8, NULL), "candidate %d refused", k);
		rows += cand[k][2] > 1;
	}
	cr_assert(rows > 0, "no candidate splits the rows");
	run_free(r);
}

/* The resizes' op dims are x's (N, C, H, W): N and C split freely, C (of 3)
 * unevenly too, the result following them. Bilinear's H and W stay whole,
 * with a message naming what MindSpore does there (W by a neighbour
 * exchange), and nearest's with align_corners; nearest's split without it,
 * as MindSpore's, evenly in x and the result, and only where every output
 * index reads x in its rank's piece (x's H of 6 to 74 split 2 ways: output
 * row 37 reads row 2 in Float32, 37 * 6 / 74 rounding below 3). */
Test(rules, resize_n_c_split_h_w_whole)
{
	Run *r = compile(CTX8 "graph @n(%x: <Tensor[Float32], (8, 3, 4, 4)>) {\n"
	                 "  %a = ResizeNearestNeighbor(%x) {size: (8, 8), in_strategy: ((4, 2, 1, 1),)}\n"
	                 "  %b = ResizeBilinearV2(%x) {size: (6, 5), align_corners: true, in_strategy: ((8, 1, 1, 1),)}\n"
	                 "  return %a, %b\n}\n");
	expect_clean(r);
	OpDims od;
	OpSplit s;
	cr_assert(rule(r, "a", &od, &s), "%s", msgs(r));
	cr_assert(od.nod == 4 && !od.whole && od.batch == 0 && !od.reduced, "nearest: no dim whole");
	expect_dims(od.out_dim, 4, (const int[]){0, 1, 2, 3}, "the result");
	cr_assert(s.split[0] == 4 && s.split[1] == 2 && s.split[2] == 1 && s.split[3] == 1, "C (3) split 2 ways unevenly");
	cr_assert(rule(r, "b", &od, &s), "%s", msgs(r));
	cr_assert(od.whole == ((1u << 2) | (1u << 3)) && s.split[0] == 8, "N split 8 ways");
	run_free(r);
	r = compile(CTX8 "graph @n(%x: <Tensor[Float32], (8, 3, 4, 4)>) {\n"
	            "  %a = ResizeNearestNeighbor(%x) {size: (6, 8), half_pixel_centers: true, in_strategy: ((2, 1, 2, 2),)}\n"
	            "  return %a\n}\n");
	expect_clean(r);
	cr_assert(rule(r, "a", &od, &s), "%s", msgs(r));
	cr_assert(!od.whole && s.split[2] == 2 && s.split[3] == 2, "nearest's H and W split without align_corners");
	run_free(r);
	static const char *const cases[][2] = {
		{"ResizeNearestNeighbor(%x) {size: (6, 6), in_strategy: ((1, 1, 1, 4),)}",
		 "ResizeNearestNeighbor: W is split into 4, which must divide both x's 4 and the result's 6"},
		{"ResizeNearestNeighbor(%y) {size: (74, 4), in_strategy: ((4, 1, 2, 1),)}",
		 "ResizeNearestNeighbor: H split into 2: the result's H 37 reads x's 2, which a rank resizing its own piece "
		 "would not read"},
		{"ResizeNearestNeighbor(%x) {size: (8, 8), align_corners: true, in_strategy: ((2, 2, 1, 2),)}",
		 "dim 3 (W, which MindSpore's ResizeNearestNeighbor keeps whole with align_corners) is split into 2"},
		{"ResizeBilinearV2(%x) {size: (8, 8), in_strategy: ((2, 2, 1, 2),)}",
		 "ResizeBilinearV2: dim 3 (W, which shardc keeps whole: MindSpore's ResizeBilinearV2 splits it with a "
		 "neighbour exchange shardc lacks) is split into 2 but must stay whole"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char text[500];
		snprintf(text, sizeof text, CTX8 "graph @n(%%x: <Tensor[Float32], (8, 3, 4, 4)>, "
		         "%%y: <Tensor[Float32], (8, 3, 6, 4)>) {\n  %%a = %s\n"
		         "  return %%a\n}\n", cases[i][0]);
		r = compile(text);
		cr_assert(!rule(r, "a", &od, &s), "case %zu: an H or W split is refused", i);
		cr_assert(strstr(msgs(r), cases[i][1]), "case %zu: %s", i, msgs(r));
		run_free(r);
	}
}

/* ReverseV2: x's dims, the reversed ones whole (MindSpore's ReverseV2Info,
 * Softmax's rule), the result as x; TraceV2: x's dims, axis1 and axis2 whole
 * (TraceV2Info), the result the others (no partial sums); the integer
 * shifts broadcast as any binary operator (LeftShiftInfo: Xdivy's). */
Test(rules, reverse_v2_trace_v2_shifts)
{
	Run *r = compile(CTX8 "graph @n(%x: <Tensor[Float32], (6, 4, 8)>, %k: <Tensor[Int32], (4, 8)>,\n"
	                 "         %s: <Tensor[Int32], (8,)>) {\n"
	                 "  %a = ReverseV2(%x) {axis: (1,), in_strategy: ((4, 1, 2),)}\n"
	                 "  %b = TraceV2(%x) {offset: 1, axis1: 2, axis2: 0, in_strategy: ((1, 4, 1),)}\n"
	                 "  %c = LeftShift(%k, %s) {in_strategy: ((2, 4), (4,))}\n"
	                 "  return %a, %b, %c\n}\n");
	expect_clean(r);
	OpDims od;
	OpSplit s;
	cr_assert(rule(r, "a", &od, &s), "%s", msgs(r));
	cr_assert(od.nod == 3 && od.whole == 1u << 1 && od.batch == 0 && !od.reduced, "the reversed dim whole");
	expect_dims(od.out_dim, 3, (const int[]){0, 1, 2}, "the result");
	cr_assert(s.split[0] == 4 && s.split[2] == 2, "dim 0 (6) split 4 ways unevenly, dim 2 2 ways");
	cr_assert(rule(r, "b", &od, &s), "%s", msgs(r));
	cr_assert(od.nod == 3 && od.whole == (1u << 0 | 1u << 2) && od.batch == 1 && !od.reduced, "the diagonal's dims");
	expect_dims(od.out_dim, 1, (const int[]){1}, "the result: dim 1");
	cr_assert(s.split[1] == 4, "dim 1 split 4 ways");
	cr_assert(rule(r, "c", &od, &s), "%s", msgs(r));
	cr_assert(od.in_rank[1] == 1 && od.in_dim[1][0] == 1 && s.split[0] == 2 && s.split[1] == 4, "s follows k's dim 1");
	run_free(r);
	r = compile(CTX8 "graph @n(%x: <Tensor[Float32], (8, 4, 8)>) {\n"
	            "  %b = TraceV2(%x) {in_strategy: ((2, 1, 4),)}\n"
	            "  return %b\n}\n");
	OpDims od2;
	OpSplit s2;
	cr_assert(!rule(r, "b", &od2, &s2), "axis2 (MindSpore's default 0) split is refused");
	cr_assert(strstr(msgs(r), "TraceV2: dim 0 (a dim of the diagonal it sums, whole in MindSpore's TraceV2Info)"),
	          "%s", msgs(r));
	run_free(r);
}
