/* test_cost.c: the cost model of the strategy search (cost.c).
 *
 * On the default cluster (8 ranks a node; 150 GB/s and 5 us inside, 25 GB/s
 * and 20 us across; 1e14 FLOP/s), a collective over n ranks costs
 * steps x latency + bytes / bandwidth, steps ceil(log2 n) below 256 KiB a
 * rank (a tree) and n - 1 from there (a ring), an operator's slice its work over
 * the FLOP/s (twice its multiply-adds for a matrix product). The tests
 * check those numbers where the formula is simple, and how they move:
 * with bytes, group size, crossing nodes, splitting the work. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cost.h"
#include "harness.h"

/* Within a relative 1e-12: the same formula, maybe in another order. */
static void expect_seconds(double got, double want, const char *what)
{
	cr_assert(fabs(got - want) <= 1e-12 * fabs(want) + 1e-300, "%s: %.17g s, expected %.17g s", what, got, want);
}

/* A layout of `rank` dims laid by slice counts over device_num ranks. */
static TensorLayout split_layout(const int64_t *split, int rank, int64_t device_num)
{
	TensorLayout l;
	cr_assert(layout_from_split(split, rank, device_num, &l));
	return l;
}

/* The default cluster's figures, as README "Cost model" gives them. */
Test(cost, default_cluster)
{
	Cluster c;
	cluster_default(&c);
	cr_assert_eq(c.devices_per_node, 8);
	cr_assert(c.intra_bw == 150e9 && c.intra_lat == 5e-6 && c.inter_bw == 25e9 && c.inter_lat == 2e-5);
	cr_assert(c.flops == 1e14 && c.memory == 80e9 && c.bucket_bytes == 25e6);
}

Test(cost, collective_formula_inside_a_node)
{
	Cluster c;
	cluster_default(&c);
	CostModel *cm = cost_new(&c, 8, false);
	TensorLayout l;
	layout_replicated(2, 8, &l);
	expect_seconds(cost_collective(cm, &l, 1u, 1 << 20), 7 * 5e-6 + (double)(1 << 20) / 150e9, "8 ranks, 1 MiB: a ring");
	expect_seconds(cost_collective(cm, &l, 1u, 0), 3 * 5e-6, "8 ranks, no bytes: a tree's latency alone");
	expect_seconds(cost_collective(cm, &l, 1u, 256 * 1024 - 1), 3 * 5e-6 + (double)(256 * 1024 - 1) / 150e9,
	               "8 ranks, just under 256 KiB: a tree");
	expect_seconds(cost_collective(cm, &l, 1u, 256 * 1024), 7 * 5e-6 + (double)(256 * 1024) / 150e9,
	               "8 ranks, 256 KiB: a ring");
	cr_assert_eq(cost_collective(cm, &l, 0u, 1 << 20), 0.0, "a group of one rank is free");
	cost_free(cm);
}

/* More bytes cost more; a larger group costs more for the same bytes. */
Test(cost, collective_grows_with_bytes_and_group)
{
	Cluster c;
	cluster_default(&c);
	CostModel *cm = cost_new(&c, 8, false);
	TensorLayout l = split_layout((int64_t[]){2, 4}, 2, 8);   /* dev (2, 4) */
	double prev = 0;
	for (int64_t bytes = 1024; bytes <= (INT64_C(1) << 30); bytes *= 8) {
		double t = cost_collective(cm, &l, 2u, bytes);
		cr_assert_gt(t, prev, "%lld bytes cost %g s, less bytes %g s", (long long)bytes, t, prev);
		prev = t;
	}
	double two = cost_collective(cm, &l, 1u, 4096), four = cost_collective(cm, &l, 2u, 4096),
	       eight = cost_collective(cm, &l, 3u, 4096);
	cr_assert(two < four && four < eight, "2 ranks %g s, 4 ranks %g s, 8 ranks %g s", two, four, eight);
	expect_seconds(two, 5e-6 + 4096 / 150e9, "2 ranks");
	expect_seconds(four, 2 * 5e-6 + 4096 / 150e9, "4 ranks: a tree");
	expect_seconds(eight, 3 * 5e-6 + 4096 / 150e9, "8 ranks: a tree");
	cost_free(cm);
}

/* A group spanning two nodes takes the inter-node link's figures. */
Test(cost, collective_across_nodes)
{
	Cluster c;
	cluster_default(&c);
	CostModel *cm = cost_new(&c, 16, false);
	TensorLayout l = split_layout((int64_t[]){2, 8}, 2, 16);   /* dev (2, 8): axis 1 inside a node */
	int64_t bytes = 1 << 16;
	expect_seconds(cost_collective(cm, &l, 2u, bytes), 3 * 5e-6 + (double)bytes / 150e9, "8 ranks of one node");
	expect_seconds(cost_collective(cm, &l, 1u, bytes), 2e-5 + (double)bytes / 25e9, "ranks 0 and 8");
	expect_seconds(cost_collective(cm, &l, 3u, bytes), 3 * 5e-6 + 2e-5 + (double)bytes / 25e9,
	               "all 16 ranks: a tree, whose one round between the two nodes is slow");
	expect_seconds(cost_collective(cm, &l, 3u, 1 << 20), 15 * 2e-5 + (double)(1 << 20) / 25e9, "all 16, 1 MiB: a ring");
	CostModel *four = cost_new(&c, 32, false);
	TensorLayout w = split_layout((int64_t[]){4, 8}, 2, 32);   /* 4 nodes of 8 */
	expect_seconds(cost_collective(four, &w, 3u, bytes), 3 * 5e-6 + 2 * 2e-5 + (double)bytes / 25e9,
	               "32 ranks on 4 nodes: recursive doubling's last 2 rounds pair nodes");
	expect_seconds(cost_collective(four, &w, 1u, bytes), 2 * 2e-5 + (double)bytes / 25e9, "one rank a node");
	cost_free(four);
	c.devices_per_node = 16;
	CostModel *one = cost_new(&c, 16, false);
	expect_seconds(cost_collective(one, &l, 1u, bytes), 5e-6 + (double)bytes / 150e9, "one node of 16");
	cost_free(one);
	cost_free(cm);
}

Test(cost, slice_bytes)
{
	int64_t global[] = {16, 32};
	TensorLayout l = split_layout((int64_t[]){2, 4}, 2, 8);
	cr_assert_eq(cost_slice_bytes(&l, global, 4), 8 * 8 * 4);
	cr_assert_eq(cost_slice_bytes(&l, global, 2), 8 * 8 * 2);
	TensorLayout r;
	layout_replicated(2, 8, &r);
	cr_assert_eq(cost_slice_bytes(&r, global, 4), 16 * 32 * 4, "a copy on every rank: the whole tensor");
	l = split_layout((int64_t[]){8, 1}, 2, 8);
	cr_assert_eq(cost_slice_bytes(&l, global, 4), 2 * 32 * 4);
	TensorLayout s;
	layout_replicated(0, 8, &s);
	cr_assert_eq(cost_slice_bytes(&s, global, 4), 4, "a scalar");
}

static const char matmul_relu[] =
	"context {device_num: 8, parallel_mode: \"semi_auto_parallel\"}\n"
	"graph @n(%x: <Tensor[Float32], (64, 32)>, %w: <Parameter[Float32], (32, 16)>) {\n"
	"  %y = MatMul(%x, %w)\n  %r = ReLU(%y)\n  return %r\n}\n";

static const Node *node_of(Run *r, const char *name, OpDims *od)
{
	const Graph *g = module_entry(r->m);
	int v = graph_value(g, name);
	cr_assert_geq(v, g->nparams);
	const Node *n = &g->nodes[g->values[v].node];
	cr_assert(op_dims(g, n, od));
	return n;
}

/* 2 x multiply-adds over FLOP/s for a MatMul, elements for the rest; a split
 * in two halves it. */
Test(cost, compute)
{
	Run *r = compile(matmul_relu);
	expect_clean(r);
	Cluster c;
	cluster_default(&c);
	CostModel *cm = cost_new(&c, 8, false);
	OpDims od;
	const Node *mm = node_of(r, "y", &od);
	int64_t whole[] = {1, 1, 1}, half_i[] = {2, 1, 1}, half_k[] = {1, 2, 1}, eight[] = {8, 1, 1};
	double t = cost_compute(cm, mm, &od, whole);
	expect_seconds(t, 2.0 * 64 * 32 * 16 / 1e14, "MatMul whole");
	expect_seconds(cost_compute(cm, mm, &od, half_i), t / 2, "i in two");
	expect_seconds(cost_compute(cm, mm, &od, half_k), t / 2, "k in two");
	expect_seconds(cost_compute(cm, mm, &od, eight), t / 8, "i in eight");
	const Node *relu = node_of(r, "r", &od);
	int64_t two[] = {2, 1};
	expect_seconds(cost_compute(cm, relu, &od, whole), 64.0 * 16 / 1e14, "ReLU whole: one per element");
	expect_seconds(cost_compute(cm, relu, &od, two), 32.0 * 16 / 1e14, "ReLU in two");
	c.flops = 2e14;
	CostModel *fast = cost_new(&c, 8, false);
	mm = node_of(r, "y", &od);
	expect_seconds(cost_compute(fast, mm, &od, whole), t / 2, "twice the FLOP/s");
	cost_free(fast);
	cost_free(cm);
	run_free(r);
}

/* A batch-split input gathered whole: one AllGather over the 8 ranks, its
 * bytes and seconds by the formula; asked again, the cache answers. */
Test(cost, redist_all_gather_and_cache)
{
	Cluster c;
	cluster_default(&c);
	CostModel *cm = cost_new(&c, 8, true);
	int64_t global[] = {64, 32};
	TensorLayout from = split_layout((int64_t[]){8, 1}, 2, 8), to;
	layout_replicated(2, 8, &to);
	int64_t bytes = -1;
	double t = cost_redist(cm, &from, &to, global, 4, &bytes);
	int64_t want = redist_step_bytes(STEP_ALL_GATHER, 8 * 32 * 4, 8);
	cr_assert_eq(bytes, want, "%lld bytes, expected %lld", (long long)bytes, (long long)want);
	cr_assert_eq(want, 7 * 8 * 32 * 4, "each rank sends its slice to the 7 others");
	expect_seconds(t, 3 * 5e-6 + (double)want / 150e9, "AllGather: under 256 KiB, a tree");
	int64_t hits, misses;
	cost_stats(cm, &hits, &misses);
	cr_assert(hits == 0 && misses == 1);
	bytes = -1;
	cr_assert_eq(cost_redist(cm, &from, &to, global, 4, &bytes), t);
	cr_assert_eq(bytes, want);
	cost_stats(cm, &hits, &misses);
	cr_assert(hits == 1 && misses == 1, "hits %lld misses %lld", (long long)hits, (long long)misses);
	/* the way back (the gradient of the gather) is a free slice */
	cr_assert_eq(cost_redist_back(cm, &from, &to, global, 4), 0.0);
	cr_assert_eq(cost_redist(cm, &from, &from, global, 4, &bytes), 0.0, "already there");
	cr_assert_eq(bytes, 0);
	cost_free(cm);
}

/* The backward edge of slicing a replicated value is the AllGather back;
 * without training it costs nothing. */
Test(cost, redist_back)
{
	Cluster c;
	cluster_default(&c);
	int64_t global[] = {64, 32};
	TensorLayout whole, rows = split_layout((int64_t[]){8, 1}, 2, 8);
	layout_replicated(2, 8, &whole);
	CostModel *train = cost_new(&c, 8, true), *infer = cost_new(&c, 8, false);
	double back = cost_redist_back(train, &whole, &rows, global, 4);
	expect_seconds(back, cost_redist(train, &rows, &whole, global, 4, NULL), "back = the gather");
	cr_assert_gt(back, 0);
	cr_assert_eq(cost_redist_back(infer, &whole, &rows, global, 4), 0.0);
	cost_free(train);
	cost_free(infer);
}

/* A replicated weight under a batch-split MatMul: its gradient is summed
 * over the 8 ranks (an AllReduce of the whole weight); a column-split
 * weight's gradient is nobody else's. */
Test(cost, input_gradient)
{
	Cluster c;
	cluster_default(&c);
	CostModel *cm = cost_new(&c, 8, true), *infer = cost_new(&c, 8, false);
	Run *r = compile(matmul_relu);
	expect_clean(r);
	OpDims od;
	node_of(r, "y", &od);
	int64_t global[] = {32, 16};
	OpSplit dp, mp;
	op_split_from_splits(&od, (int64_t[]){8, 1, 1}, 8, &dp);
	op_split_from_splits(&od, (int64_t[]){1, 1, 8}, 8, &mp);
	TensorLayout in, out;
	op_in_layout(&od, &dp, 1, &in);
	op_out_layout(&od, &dp, &out);
	double t = cost_input_gradient(cm, &in, &out, global, 4);
	int64_t bytes = redist_step_bytes(STEP_ALL_REDUCE, 32 * 16 * 4, 8);
	cr_assert_eq(bytes, 2 * 32 * 16 * 4 * 7 / 8);
	expect_seconds(t, 3 * 5e-6 + (double)bytes / 150e9, "data-parallel weight gradient");
	cr_assert_eq(cost_input_gradient(infer, &in, &out, global, 4), 0.0, "no training, no gradient");
	op_in_layout(&od, &mp, 1, &in);
	op_out_layout(&od, &mp, &out);
	cr_assert_eq(cost_input_gradient(cm, &in, &out, global, 4), 0.0, "column-split weight");
	cost_free(cm);
	cost_free(infer);
	run_free(r);
}

/* A Softmax split along its axis completes two statistics a row forward
 * (one element each), one more backward; unsplit, nothing. */
Test(cost, statistics)
{
	Cluster c;
	cluster_default(&c);
	CostModel *cm = cost_new(&c, 8, false), *train = cost_new(&c, 8, true);
	Run *r = compile("context {device_num: 8, parallel_mode: \"semi_auto_parallel\"}\n"
	                 "graph @n(%x: <Tensor[Float32], (16, 32)>) {\n  %s = Softmax(%x) {axis: -1}\n  return %s\n}\n");
	expect_clean(r);
	OpDims od;
	node_of(r, "s", &od);
	OpSplit along, against;
	op_split_from_splits(&od, (int64_t[]){1, 8}, 8, &along);
	op_split_from_splits(&od, (int64_t[]){8, 1}, 8, &against);
	double one = 3 * 5e-6 + (double)redist_step_bytes(STEP_ALL_REDUCE, 16 * 4, 8) / 150e9;
	expect_seconds(cost_statistics(cm, &od, &along, 4), 2 * one, "forward: max and sum");
	expect_seconds(cost_statistics(train, &od, &along, 4), 3 * one, "with the backward sum");
	cr_assert_eq(cost_statistics(cm, &od, &against, 4), 0.0);
	cost_free(cm);
	cost_free(train);
	run_free(r);
}

/* A data-parallel MatMul on the default cluster: its slice's compute alone
 * (the input arrives batch-split, the weight lives where it is used, the
 * result is returned as it is); trained, twice the compute (the weight's
 * gradient) and the weight gradient's AllReduce, then the loss's compute
 * (twice) and the AllReduce completing the mean. */
Test(cost, data_parallel_matmul)
{
	static const char infer[] =
		"context {device_num: 8, parallel_mode: \"data_parallel\"}\n"
		"graph @n(%x: <Tensor[Float32], (64, 16)>, %w: <Parameter[Float32], (16, 32)>) {\n"
		"  %y = MatMul(%x, %w)\n  return %y\n}\n";
	static const char train[] =
		"context {device_num: 8, parallel_mode: \"data_parallel\"}\n"
		"graph @n(%x: <Tensor[Float32], (64, 16)>, %w: <Parameter[Float32], (16, 32)>) {\n"
		"  %y = MatMul(%x, %w)\n  %loss = ReduceMean(%y) {axis: (0, 1)}\n  return %loss\n}\n"
		"train {loss: %loss}\n";
	Cluster c;
	cluster_default(&c);
	double mm = 2.0 * (64 / 8) * 16 * 32 / 1e14;
	Run *r = compile(infer);
	Lowered *l = lower_run(r, NULL, STAGE_LOWER);
	expect_seconds(strategies_cost(r->m, l->flat, l->st, &c), mm, "inference");
	run_free(r);
	r = compile(train);
	l = lower_run(r, NULL, STAGE_LOWER);
	double grad = 3 * 5e-6 + (double)redist_step_bytes(STEP_ALL_REDUCE, 16 * 32 * 4, 8) / 150e9;
	double mean = 2.0 * (64 / 8) * 32 / 1e14;
	double loss = 3 * 5e-6 + (double)redist_step_bytes(STEP_ALL_REDUCE, 4, 8) / 150e9;
	expect_seconds(strategies_cost(r->m, l->flat, l->st, &c), 2 * mm + grad + mean + loss, "training");
	c.flops = 1e13;
	expect_seconds(strategies_cost(r->m, l->flat, l->st, &c), 20 * mm + grad + 10 * mean + loss,
	               "a tenth of the FLOP/s");
	run_free(r);
}

/* --cluster FILE: the keys override the defaults; a wrong key or value is
 * reported at its line and column. */
Test(cost, cluster_file)
{
	char path[] = "/tmp/test_cost_XXXXXX";
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	static const char good[] = "{\"devices_per_node\": 4,\n \"inter_node_bandwidth\": 1e10, \"gradient_bucket_bytes\": 0}\n";
	cr_assert_eq(write(fd, good, sizeof good - 1), (ssize_t)(sizeof good - 1));
	close(fd);
	Cluster c;
	char *out = NULL;
	size_t len = 0;
	FILE *err = open_memstream(&out, &len);
	cr_assert_eq(cluster_load(path, &c, err), 0);
	cr_assert(c.devices_per_node == 4 && c.inter_bw == 1e10 && c.bucket_bytes == 0);
	cr_assert(c.intra_bw == 150e9 && c.flops == 1e14, "the other keys keep their defaults");
	/* with 4 ranks a node, a group of 8 crosses nodes */
	CostModel *cm = cost_new(&c, 8, false);
	TensorLayout l;
	layout_replicated(1, 8, &l);
	expect_seconds(cost_collective(cm, &l, 1u, 1000), 2 * 5e-6 + 2e-5 + 1000 / 1e10,
	               "8 ranks over two nodes: 2 rounds inside them, 1 between");
	cost_free(cm);
	static const char bad[] = "{\"device_flops\": 1e14,\n \"device_flop\": 2}\n";
	FILE *f = fopen(path, "w");
	fputs(bad, f);
	fclose(f);
	cr_assert_eq(cluster_load(path, &c, err), 1);
	static const char zero[] = "{\"intra_node_bandwidth\": 0}";
	f = fopen(path, "w");
	fputs(zero, f);
	fclose(f);
	cr_assert_eq(cluster_load(path, &c, err), 1);
	unlink(path);
	cr_assert_eq(cluster_load(path, &c, err), 2, "a file that cannot be read");
	fclose(err);
	cr_assert(strstr(out, ":2:2: error: unknown cluster key 'device_flop'"), "%s", out);
	cr_assert(strstr(out, ":1:2: error: 'intra_node_bandwidth' must be a positive number"), "%s", out);
	free(out);
}
