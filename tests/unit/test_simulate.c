/* test_simulate.c: every sample's per-rank programs, run in one process by
 * the simulator, against the serial graph, on 1, 2, 4, 8 and 6 devices; the
 * seed's MatMul -> ReLU case byte for byte; bad strategies. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "simulate.h"

/* A model compiled down to its lowered program. */
typedef struct {
	Run *run;
	Lowered *low;
	bool dropped;            /* the user's strategies did not fit and were dropped */
} Build;

/* Forgets every strategy the user wrote, so the model compiles on any
 * device count with the defaults. */
static void drop_strategies(Module *m)
{
	for (int i = 0; i < m->ngraphs; i++)
		for (int j = 0; j < m->graphs[i]->nnodes; j++) {
			Node *n = &m->graphs[i]->nodes[j];
			n->a.in_strategy.n = 0;
			n->a.out_strategy.n = 0;
			if (n->a.shard) {
				for (int k = 0; k < n->a.shard->in.n; k++)
					n->a.shard->in.t[k].given = false;
				n->a.shard->nplan = 0;
			}
		}
	m->nlayouts = 0;
	if (m->ctx.dataset_mode == DS_TUPLE)
		m->ctx.dataset_mode = DS_FULL_BATCH;
}

static bool batches_divide(const Module *m, int64_t n)
{
	const Graph *g = module_entry(m);
	for (int p = 0; p < g->nparams; p++)
		if (!g->values[p].type.is_param && g->values[p].type.rank > 0 && g->values[p].type.dims[0] % n)
			return false;
	return true;
}

/* Compiles text on `devices` devices (0: as written). With `drop`, the
 * user's strategies go first; data_parallel batches that do not divide fall
 * back to full_batch. */
static Build build(const char *name, const char *text, int64_t devices, bool drop, int mode)
{
	static const char *const modes[] = {"stand_alone", "data_parallel", "semi_auto_parallel", "auto_parallel"};
	char dev[24];
	snprintf(dev, sizeof dev, "%lld", (long long)devices);
	Override o[2];
	int n = 0;
	if (devices)
		o[n++] = (Override){"device_num", "--device-num", dev};
	if (mode >= 0)
		o[n++] = (Override){"parallel_mode", "--parallel-mode", modes[mode]};
	Build b = {run_pipeline(name, text, strlen(text), STAGE_INFER, o, n), NULL, false};
	Module *m = b.run->m;
	bool ok = b.run->ok;
	if (ok && drop) {
		drop_strategies(m);
		b.dropped = true;
	}
	if (ok && !batches_divide(m, m->ctx.device_num)) {
		if (m->ctx.parallel_mode == PM_DATA_PARALLEL && !drop)
			ok = false;   /* the compiler reports it: nothing to simulate */
		else if (m->ctx.parallel_mode == PM_DATA_PARALLEL)
			m->ctx.parallel_mode = PM_SEMI_AUTO;
		if (m->ctx.dataset_mode == DS_DATA_PARALLEL)
				m->ctx.dataset_mode = DS_FULL_BATCH;
	}
	if (ok)
		run_resume(b.run, STAGE_VALIDATE, STAGE_BUCKET);
	b.low = ok && b.run->ok ? b.run->c.low : NULL;
	return b;
}

static char *slurp(const char *path)
{
	size_t len;
	char *t = read_file(path, &len);
	cr_assert(t, "cannot read %s", path);
	return t;
}

static void expect_equal(const Lowered *l, const char *what)
{
	SimResult r;
	sim_run(l, &r);
	cr_assert(r.ok, "%s: %s", what, r.why);
	cr_assert(r.max_err < 1e-9, "%s: outputs differ from the serial graph by %g", what, r.max_err);
	cr_assert_eq(r.max_bytes, l->fwd_bytes, "%s: ranks send %lld bytes by the per-rank graphs, the compiler says %lld",
	             what, (long long)r.max_bytes, (long long)l->fwd_bytes);
	cr_assert_eq(r.min_bytes, r.max_bytes, "%s: ranks send different byte counts", what);
}

/* The dataset tuple holds x whole, as full_batch would, and leaves the
 * result as the ReLU computes it (full_batch would hand it over whole). */
static const char seed[] =
	"context {device_num: 8, parallel_mode: \"semi_auto_parallel\", dataset_strategy: ((1, 1),)}\n"
	"graph @net(%x: <Tensor[Float32], (16, 32)>, %w: <Parameter[Float32], (32, 16)>) {\n"
	"  %1 = MatMul(%x, %w) {in_strategy: ((2, 4), (4, 1))}\n"
	"  %2 = ReLU(%1)\n"
	"  return %2\n"
	"}\n";

/* The MatMul -> ReLU sample's check: MatMul (2, 4), (4, 1) -> ReLU on 8 devices. */
Test(simulate, seed_matmul_relu_reduce_scatter)
{
	Build b = build("seed.ir", seed, 0, false, -1);
	cr_assert(b.low, "%s", msgs(b.run));
	StrBuf t = {0};
	dump_end(&t, b.low, 0);
	cr_assert(strstr(t.data, "%1 = MatMul(%x.1, %w) : (<Tensor[Float32], (8, 8)>, <Parameter[Float32], (8, 16)>) "
	                         "-> (<Tensor[Float32], (8, 16)>)"), "%s", t.data);
	cr_assert(strstr(t.data, "= ReduceScatter(%1) {axis: 0, op: \"sum\", group: (0, 1, 2, 3)}"), "%s", t.data);
	cr_assert_null(strstr(t.data, "AllReduce"));
	sb_free(&t);
	/* 8 x 16 floats reduce-scattered over 4: 3/4 of 512 bytes, half of AllReduce's 2 x 3/4 x 512. */
	cr_assert_eq(b.low->comm_bytes, 384);
	cr_assert_eq(2 * b.low->comm_bytes, redist_step_bytes(STEP_ALL_REDUCE, 8 * 16 * 4, 4));
	expect_equal(b.low, "seed");
	run_free(b.run);
}

/* Every sample as written (count 0), then on 1, 2, 4, 8 and 6 devices: as
 * written where its strategies fit, with the defaults where they do not, and
 * in data_parallel and stand_alone modes. One test a count, so that
 * Criterion's jobs run them side by side. */
ParameterizedTestParameters(simulate, every_sample_on_every_device_count)
{
	static int64_t counts[] = {0, 1, 2, 4, 8, 6};
	return cr_make_param_array(int64_t, counts, sizeof counts / sizeof *counts);
}

ParameterizedTest(int64_t *count, simulate, every_sample_on_every_device_count, .timeout = 600)
{
	DIR *dir = opendir("ir-samples");
	cr_assert(dir);
	struct dirent *e;
	int samples = 0, runs = 0, dropped = 0;
	while ((e = readdir(dir))) {
		size_t n = strlen(e->d_name);
		if (n < 4 || strcmp(e->d_name + n - 3, ".ir"))
			continue;
		char path[512];
		snprintf(path, sizeof path, "ir-samples/%s", e->d_name);
		char *text = slurp(path);
		samples++;
		if (*count == 0) {
			Build b = build(path, text, 0, false, -1);
			cr_assert(b.low, "%s does not compile: %s", path, msgs(b.run));
			expect_equal(b.low, path);
			run_free(b.run);
			runs++;
			free(text);
			continue;
		}
		char what[600];
		Build b = build(path, text, *count, false, -1);
		if (!b.low) {
			run_free(b.run);
			b = build(path, text, *count, true, -1);
			dropped++;
		}
		snprintf(what, sizeof what, "%s on %lld devices%s", path, (long long)*count,
		         b.dropped ? " (defaults)" : "");
		cr_assert(b.low, "%s does not compile: %s", what, msgs(b.run));
		expect_equal(b.low, what);
		run_free(b.run);
		runs++;
		for (int mode = PM_STAND_ALONE; mode <= PM_DATA_PARALLEL; mode++) {
			b = build(path, text, *count, false, mode);
			snprintf(what, sizeof what, "%s on %lld devices in %s", path, (long long)*count,
			         parallel_mode_name((ParallelMode)mode));
			if (b.low) {
				expect_equal(b.low, what);
				runs++;
			}
			run_free(b.run);
		}
		free(text);
	}
	closedir(dir);
	if (*count)
		cr_log_info("simulated %d compilations on %lld devices (%d with the user's strategies dropped)", runs,
		            (long long)*count, dropped);
	else
		cr_log_info("simulated %d samples as written", runs);
	cr_assert_gt(samples, 10);
	cr_assert_geq(runs, samples);
}

/* One case per operator rule, on 4 devices, with strategies that split every
 * dim the rule allows, including the partial-result ones. */
Test(simulate, operator_rules)
{
	static const char *const cases[] = {
		/* MatMul with transposes and a split k, BatchMatMul with broadcast batch */
		"%x: <Tensor[Float32], (8, 16)>, %w: <Parameter[Float32], (4, 16)>) {\n"
		"  %1 = MatMul(%x, %w) {transpose_b: true, in_strategy: ((2, 2), (1, 2))}\n  return %1",
		"%x: <Tensor[Float32], (4, 8, 16)>, %w: <Parameter[Float32], (16, 4)>) {\n"
		"  %1 = BatchMatMul(%x, %w) {in_strategy: ((2, 1, 2), (2, 1))}\n  return %1",
		/* broadcasting elementwise, BiasAdd */
		"%x: <Tensor[Float32], (8, 16)>, %b: <Parameter[Float32], (1, 16)>) {\n"
		"  %1 = Add(%x, %b) {in_strategy: ((2, 2), (1, 2))}\n  %2 = Mul(%1, %x)\n  return %2",
		"%x: <Tensor[Float32], (8, 16)>, %b: <Parameter[Float32], (16,)>) {\n"
		"  %1 = BiasAdd(%x, %b) {in_strategy: ((1, 4), (4,))}\n  %2 = GeLU(%1)\n  return %2",
		/* PReLU: a weight per channel split with them, then one for all over every dim; LeakyReLU */
		"%x: <Tensor[Float32], (4, 8, 6)>, %w: <Parameter[Float32], (8,)>, %v: <Parameter[Float32], (1,)>) {\n"
		"  %1 = PReLU(%x, %w) {in_strategy: ((1, 2, 2), (2,))}\n  %2 = LeakyReLU(%1) {alpha: 0.3, "
		"in_strategy: ((2, 1, 2),)}\n  %3 = PReLU(%2, %v) {in_strategy: ((2, 2, 1), (1,))}\n  return %3",
		/* reductions over split dims: sum, mean (sum then divide), max, min */
		"%x: <Tensor[Float32], (8, 16)>) {\n  %1 = ReduceSum(%x) {axis: 1, in_strategy: ((2, 2),)}\n  return %1",
		"%x: <Tensor[Float32], (8, 16)>) {\n  %1 = ReduceMean(%x) {axis: (0, 1), keep_dims: true, "
		"in_strategy: ((2, 2),)}\n  return %1",
		"%x: <Tensor[Float32], (8, 16)>) {\n  %1 = ReduceMax(%x) {axis: 0, in_strategy: ((4, 1),)}\n  return %1",
		"%x: <Tensor[Float32], (8, 16)>) {\n  %1 = ReduceMin(%x) {axis: 1, in_strategy: ((1, 4),)}\n"
		"  %2 = ReduceMin(%x) {axis: (0, 1), in_strategy: ((2, 2),)}\n  %3 = Add(%1, %2)\n  return %3",
		/* prod (partial products), all and any (a Bool's partial min and max) */
		"%x: <Tensor[Float32], (8, 16)>) {\n  %1 = ReduceProd(%x) {axis: 1, in_strategy: ((1, 4),)}\n"
		"  %2 = ReduceProd(%x) {axis: (0, 1), keep_dims: true, in_strategy: ((2, 2),)}\n  %3 = Add(%1, %2)\n"
		"  return %3",
		"%x: <Tensor[Float32], (8, 16)>, %y: <Tensor[Float32], (8, 16)>) {\n  %1 = Greater(%x, %y)\n"
		"  %2 = ReduceAll(%1) {axis: 1, in_strategy: ((1, 4),)}\n"
		"  %3 = ReduceAny(%1) {axis: 0, keep_dims: true, in_strategy: ((2, 2),)}\n  return %2, %3",
		/* softmax with its axis whole, layernorm, transpose, flatten, concat, slice, cast */
		"%x: <Tensor[Float32], (8, 16)>) {\n  %1 = Softmax(%x) {in_strategy: ((4, 1),)}\n  %2 = LogSoftmax(%1)\n"
		"  return %2",
		"%x: <Tensor[Float32], (8, 16)>, %g: <Parameter[Float32], (16,)>, %b: <Parameter[Float32], (16,)>) {\n"
		"  %1 = LayerNorm(%x, %g, %b) {begin_norm_axis: -1, in_strategy: ((4, 1), (1,), (1,))}\n  return %1",
		"%x: <Tensor[Float32], (8, 16, 4)>) {\n  %1 = Transpose(%x) {perm: (2, 0, 1), in_strategy: ((2, 2, 1),)}\n"
		"  %2 = Flatten(%1)\n  return %2",
		"%x: <Tensor[Float32], (8, 16)>, %y: <Tensor[Float32], (8, 4)>) {\n"
		"  %1 = Concat(%x, %y) {axis: 1, in_strategy: ((4, 1), (4, 1))}\n"
		"  %2 = StridedSlice(%1) {begin: (0, 2), end: (8, 18), strides: (1, 2), in_strategy: ((4, 1),)}\n"
		"  %3 = Cast(%2) {dtype: Float16}\n  return %3",
		/* Gather: a row-split table (mask and reduce), split indices */
		"%t: <Parameter[Float32], (16, 8)>, %i: <Tensor[Int32], (4, 6)> = randint(0, 16)) {\n"
		"  %1 = Gather(%t, %i) {axis: 0, in_strategy: ((4, 1), (1, 1))}\n  return %1",
		"%t: <Parameter[Float32], (16, 8)>, %i: <Tensor[Int32], (4, 6)> = randint(0, 16)) {\n"
		"  %1 = Gather(%t, %i) {axis: 0, in_strategy: ((2, 1), (2, 1))}\n  return %1",
		/* a user's offset on a split table: the rank's first row added to it */
		"%t: <Parameter[Float32], (16, 8)>, %i: <Tensor[Int32], (4, 6)> = randint(0, 20)) {\n"
		"  %1 = Gather(%t, %i) {axis: 0, offset: 3, in_strategy: ((4, 1), (1, 1))}\n  return %1",
		"%t: <Parameter[Float32], (8, 16)>, %i: <Tensor[Int32], (8, 3)> = randint(0, 18)) {\n"
		"  %1 = GatherD(%t, %i) {dim: 1, offset: 2, in_strategy: ((1, 4), (1, 1))}\n  return %1",
		"%i: <Tensor[Int32], (8,)> = randint(0, 14)) {\n"
		"  %1 = OneHot(%i, 2.0, 1.0) {depth: 12, offset: 2, in_strategy: ((1, 4), (), ())}\n  return %1",
		/* windows split along h and w where x is not: each rank's rows of the whole result (begin, end) */
		"%x: <Tensor[Float32], (2, 3, 12, 10)>, %w: <Parameter[Float32], (4, 3, 3, 3)>) {\n"
		"  %1 = Conv2D(%x, %w) {out_channel: 4, kernel_size: 3, pad_mode: \"same\", in_strategy: ((1, 1, 2, 2), "
		"(1, 1, 1, 1))}\n  return %1",
		"%x: <Tensor[Float32], (2, 4, 12, 12)>) {\n"
		"  %1 = MaxPool(%x) {kernel_size: 3, strides: 2, pad_mode: \"SAME\", in_strategy: ((1, 1, 2, 2),)}\n"
		"  %2 = AvgPool(%x) {kernel_size: 3, strides: 1, pad_mode: \"same\", in_strategy: ((1, 1, 4, 1),)}\n"
		"  return %1, %2",
		"%d: <Tensor[Float32], (2, 4, 6, 6)>, %w: <Parameter[Float32], (4, 2, 3, 3)>) {\n"
		"  %1 = Conv2DTranspose(%d, %w) {out_channel: 4, kernel_size: 3, pad_mode: \"same\", stride: 2, "
		"input_size: (2, 2, 12, 12), in_strategy: ((1, 1, 2, 2), (1, 1, 1, 1))}\n  return %1",
		/* losses: partial means */
		"%x: <Tensor[Float32], (8, 10)>, %l: <Tensor[Int32], (8,)> = randint(0, 10)) {\n"
		"  %1 = SparseSoftmaxCrossEntropyWithLogits(%x, %l) {in_strategy: ((4, 1), (4,))}\n  return %1",
		"%x: <Tensor[Float32], (8, 10)>, %y: <Tensor[Float32], (8, 10)>) {\n"
		"  %1 = MSELoss(%x, %y) {in_strategy: ((2, 2), (2, 2))}\n  %2 = L1Loss(%x, %y)\n"
		"  %3 = Add(%1, %2)\n  return %3",
		/* split along the normalized axis: statistics completed across the group */
		"%x: <Tensor[Float32], (8, 16)>) {\n  %1 = Softmax(%x) {in_strategy: ((2, 2),)}\n"
		"  %2 = LogSoftmax(%1) {axis: 1, in_strategy: ((1, 4),)}\n  return %2",
		"%x: <Tensor[Float32], (8, 16)>, %g: <Parameter[Float32], (16,)>, %b: <Parameter[Float32], (16,)>) {\n"
		"  %1 = LayerNorm(%x, %g, %b) {begin_norm_axis: -1, begin_params_axis: -1, in_strategy: ((1, 4), (4,), (4,))}\n"
		"  return %1",
		"%x: <Tensor[Float32], (2, 4, 8)>, %g: <Parameter[Float32], (4, 8)>, %b: <Parameter[Float32], (4, 8)>) {\n"
		"  %1 = LayerNorm(%x, %g, %b) {begin_norm_axis: 1, begin_params_axis: 1, in_strategy: ((1, 2, 2), (2, 2), "
		"(2, 2))}\n  return %1",
		"%x: <Tensor[Float32], (8, 12)>, %l: <Tensor[Int32], (8,)> = randint(0, 12)) {\n"
		"  %1 = SparseSoftmaxCrossEntropyWithLogits(%x, %l) {in_strategy: ((2, 2), (2,))}\n  return %1",
		"%x: <Tensor[Float32], (8, 12)>, %l: <Tensor[Int32], (8,)> = randint(0, 12)) {\n"
		"  %1 = SparseSoftmaxCrossEntropyWithLogits(%x, %l) {in_strategy: ((1, 4), (1,))}\n  return %1",
		"%x: <Tensor[Float32], (8, 12)>, %t: <Tensor[Float32], (8, 12)> = uniform(0, 1)) {\n"
		"  %1 = SoftmaxCrossEntropyWithLogits(%x, %t) {in_strategy: ((2, 2), (2, 2))}\n  return %1",
		"%x: <Tensor[Float32], (8, 12)>, %t: <Tensor[Float32], (8, 12)> = uniform(0, 1)) {\n"
		"  %1 = SoftmaxCrossEntropyWithLogits(%x, %t) {in_strategy: ((1, 4), (1, 4))}\n  %2 = ReduceMean(%1)\n"
		"  return %2",
		"%x: <Tensor[Float32], (6, 10)>, %t: <Tensor[Float32], (6, 10)> = uniform(0, 1)) {\n"
		"  %1 = SoftmaxCrossEntropyWithLogits(%x, %t) {in_strategy: ((4, 1), (4, 1))}\n  return %1",
		/* Reshapes that carry the split and one that cannot */
		"%x: <Tensor[Float32], (8, 4, 6)>) {\n  %1 = ReLU(%x) {in_strategy: ((4, 1, 1),)}\n"
		"  %2 = Reshape(%1) {shape: (32, 6)}\n  %3 = Reshape(%2) {shape: (2, 4, 4, 6)}\n  return %3",
		"%x: <Tensor[Float32], (8, 4, 6)>) {\n  %1 = ReLU(%x) {in_strategy: ((1, 4, 1),)}\n"
		"  %2 = Reshape(%1) {shape: (8, 24)}\n  %3 = Reshape(%2) {shape: (192,)}\n  return %3",
		/* out_strategy asking for ReduceScatter, and a layout strategy */
		"%x: <Tensor[Float32], (8, 16)>, %w: <Parameter[Float32], (16, 8)>) {\n"
		"  %1 = MatMul(%x, %w) {in_strategy: ((1, 4), (4, 1)), out_strategy: ((4, 1),)}\n  return %1",
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		StrBuf t = {0};
		sb_printf(&t, "context {device_num: 4, parallel_mode: \"semi_auto_parallel\"}\ngraph @g(%s\n}\n", cases[i]);
		Build b = build("case.ir", t.data, 0, false, -1);
		cr_assert(b.low, "case %zu does not compile: %s\n%s", i, msgs(b.run), t.data);
		char what[32];
		snprintf(what, sizeof what, "case %zu", i);
		expect_equal(b.low, what);
		run_free(b.run);
		sb_free(&t);
	}
}

/* The e2e models that split Softmax, LogSoftmax, LayerNorm and the
 * cross-entropy along their normalized axis, on 2, 4 and 8 devices: as
 * written where their strategies fit. */
Test(simulate, normalized_axis_splits)
{
	static const char *const models[] = {"tests/e2e/softmax_split.ir", "tests/e2e/layernorm_split.ir",
	                                     "tests/e2e/vocab_parallel_gpt.ir", "tests/e2e/norm_split_2.ir",
	                                     "tests/e2e/norm_split_4.ir"};
	int as_written = 0;
	for (size_t i = 0; i < sizeof models / sizeof *models; i++) {
		char *text = slurp(models[i]);
		static const int64_t counts[] = {2, 4, 8};
		for (int c = 0; c < 3; c++) {
			char what[600];
			Build b = build(models[i], text, counts[c], false, -1);
			as_written += b.low != NULL;
			if (!b.low) {
				run_free(b.run);
				b = build(models[i], text, counts[c], true, -1);
			}
			snprintf(what, sizeof what, "%s on %lld devices", models[i], (long long)counts[c]);
			cr_assert(b.low, "%s does not compile: %s", what, msgs(b.run));
			expect_equal(b.low, what);
			run_free(b.run);
		}
		free(text);
	}
	cr_assert_eq(as_written, 8, "as written: norm_split_2 on 2, 4, 8, norm_split_4 on 4, 8, the others on 8");
}

/* A model (its file's name and text) as written on 4 and 8 devices, equal
 * to the serial graph. */
static void expect_text_on_4_and_8(const char *path, const char *text)
{
	static const int64_t counts[] = {4, 8};
	for (int c = 0; c < 2; c++) {
		char what[100];
		Build b = build(path, text, counts[c], false, -1);
		snprintf(what, sizeof what, "%s on %lld devices", path, (long long)counts[c]);
		cr_assert(b.low, "%s does not compile: %s", what, msgs(b.run));
		expect_equal(b.low, what);
		run_free(b.run);
	}
}

/* An e2e model as written on 4 and 8 devices, equal to the serial graph. */
static void expect_model_on_4_and_8(const char *path)
{
	char *text = slurp(path);
	expect_text_on_4_and_8(path, text);
	free(text);
}

/* CumSum and CumProd split along the scanned axis: each rank's piece from
 * the gathered totals of the slices before it (tests/e2e/cumsum.ir), as
 * written on 4 and 8 devices, equal to the serial graph. */
Test(simulate, scan_axis_splits)
{
	expect_model_on_4_and_8("tests/e2e/cumsum.ir");
}

/* Tril and Triu split along their matrix dims (tests/e2e/tril_triu.ir's
 * even splits; the simulator takes no uneven piece): each rank's graph
 * carries its piece's diagonal, positive, zero and negative, clipped where
 * a piece keeps all or none; on 4 devices as written and on 8, equal to
 * the serial graph. */
Test(simulate, triangle_pieces)
{
	const char *text =
		"context {device_num: 4, parallel_mode: \"semi_auto_parallel\"}\n"
		"graph @g(%x: <Tensor[Float32], (2, 6, 8)> = uniform(-1, 1), %w: <Parameter[Float32], (6, 8)> = ones) {\n"
		"  %h = Mul(%x, %w)\n"
		"  %a = Tril(%h) {diagonal: 1, in_strategy: ((1, 2, 2),)}\n"
		"  %b = Triu(%h) {diagonal: -2, in_strategy: ((1, 2, 2),)}\n"
		"  %c = Tril(%h) {in_strategy: ((2, 1, 2),)}\n"
		"  %d = Triu(%h) {diagonal: 3, in_strategy: ((1, 1, 4),)}\n"
		"  %e = Triu(%h) {diagonal: 7, in_strategy: ((1, 2, 2),)}\n"
		"  %p = Mul(%a, %b)\n  %q = Add(%p, %c)\n  %r = Add(%q, %d)\n  %s = Add(%r, %e)\n"
		"  %loss = ReduceSum(%s)\n  return %loss, %a, %d\n}\n"
		"train {loss: %loss, optimizer: SGD(learning_rate: 0.01)}\n";
	expect_text_on_4_and_8("triangles.ir", text);
}

/* PadV3 (tests/e2e/pad_v3.ir's even splits, with no constant: the
 * simulator takes no uneven piece and fills no number operand): the last
 * dim padded while the others split, dim 1 padded while dim 0 splits, both
 * in MindSpore's non-contiguous order; on 4 devices as written and on 8,
 * equal to the serial graph. */
Test(simulate, pad_v3_pieces)
{
	const char *text =
		"context {device_num: 4, parallel_mode: \"semi_auto_parallel\"}\n"
		"graph @g(%x: <Tensor[Float32], (4, 6, 8)> = uniform(-1, 1), %w: <Parameter[Float32], (4, 6, 8)> = ones) {\n"
		"  %h = Add(%x, %w) {in_strategy: ((2, 2, 1), (2, 2, 1))}\n"
		"  %a = PadV3(%h) {paddings: (2, 1), in_strategy: ((2, 2, 1),)}\n"
		"  %b = PadV3(%h) {paddings: (0, 0, 1, 2), in_strategy: ((4, 1, 1),)}\n"
		"  %c = PadV3(%h) {paddings: (1, 0, 2, 1), paddings_contiguous: false, in_strategy: ((4, 1, 1),)}\n"
		"  %p = Mul(%a, %a)\n  %q = Mul(%b, %b)\n  %r = Mul(%c, %c)\n"
		"  %l1 = ReduceSum(%p)\n  %l2 = ReduceSum(%q)\n  %l3 = ReduceSum(%r)\n"
		"  %s = Add(%l1, %l2)\n  %loss = Add(%s, %l3)\n  return %loss, %a, %b, %c\n}\n"
		"train {loss: %loss, optimizer: SGD(learning_rate: 0.01)}\n";
	static const int64_t counts[] = {4, 8};
	for (int c = 0; c < 2; c++) {
		char what[100];
		Build b = build("pad_v3.ir", text, counts[c], false, -1);
		snprintf(what, sizeof what, "PadV3 pieces on %lld devices", (long long)counts[c]);
		cr_assert(b.low, "%s does not compile: %s", what, msgs(b.run));
		expect_equal(b.low, what);
		run_free(b.run);
	}
}

/* The resizes (tests/e2e/resize.ir's even splits): nearest and bilinear,
 * each with align_corners and half_pixel_centers, N and C split, and
 * nearest's W split 4 ways (each rank resizing its piece); on 4 devices as
 * written and on 8, equal to the serial graph. */
Test(simulate, resize_pieces)
{
	const char *text =
		"context {device_num: 4, parallel_mode: \"semi_auto_parallel\"}\n"
		"graph @g(%x: <Tensor[Float32], (4, 2, 3, 4)> = uniform(-1, 1), %w: <Parameter[Float32], (4, 2, 3, 4)> = ones) {\n"
		"  %h = Add(%x, %w) {in_strategy: ((2, 2, 1, 1), (2, 2, 1, 1))}\n"
		"  %a = ResizeNearestNeighbor(%h) {size: (6, 8), in_strategy: ((2, 2, 1, 1),)}\n"
		"  %b = ResizeNearestNeighbor(%h) {size: (5, 7), align_corners: true, in_strategy: ((4, 1, 1, 1),)}\n"
		"  %c = ResizeBilinearV2(%h) {size: (7, 5), half_pixel_centers: true, in_strategy: ((1, 2, 1, 1),)}\n"
		"  %d = ResizeBilinear(%h) {size: (2, 3), align_corners: true, in_strategy: ((4, 1, 1, 1),)}\n"
		"  %e = ResizeNearestNeighbor(%h) {size: (6, 8), half_pixel_centers: true, in_strategy: ((1, 1, 1, 4),)}\n"
		"  %p = Mul(%a, %a)\n  %q = Mul(%b, %b)\n  %r = Mul(%c, %c)\n  %t = Mul(%d, %d)\n  %u = Mul(%e, %e)\n"
		"  %l1 = ReduceSum(%p)\n  %l2 = ReduceSum(%q)\n  %l3 = ReduceSum(%r)\n  %l4 = ReduceSum(%t)\n"
		"  %l5 = ReduceSum(%u)\n  %s = Add(%l1, %l2)\n  %s2 = Add(%s, %l3)\n  %s3 = Add(%s2, %l4)\n"
		"  %loss = Add(%s3, %l5)\n  return %loss, %a, %b, %c, %d, %e\n}\n"
		"train {loss: %loss, optimizer: SGD(learning_rate: 0.01)}\n";
	static const int64_t counts[] = {4, 8};
	for (int c = 0; c < 2; c++) {
		char what[100];
		Build b = build("resize.ir", text, counts[c], false, -1);
		snprintf(what, sizeof what, "resize pieces on %lld devices", (long long)counts[c]);
		cr_assert(b.low, "%s does not compile: %s", what, msgs(b.run));
		expect_equal(b.low, what);
		run_free(b.run);
	}
}

/* The unsorted segment reductions (tests/e2e/segment_ops.ir): the ids' dims
 * split, each rank's partial segments completed by an AllReduce sum, max,
 * min or prod, dropped ids and empty segments, as written on 4 and 8
 * devices, equal to the serial graph. */
Test(simulate, segment_splits)
{
	expect_model_on_4_and_8("tests/e2e/segment_ops.ir");
}

/* Xlogy, Xdivy, MulNoNan, TruncateDiv, TruncateMod, Hypot and
 * ApproximateEqual (tests/e2e/binary_tail.ir's even splits, without its
 * numbers as operands: the simulator fills none), each split its own way, a
 * trained row broadcast along the rows; ReLU's zeros give Xlogy's and
 * Xdivy's 0, and ApproximateEqual's mask (x against ReLU(x), tolerance 0.5)
 * picks through Select. On 4 devices as written and on 8, equal to the
 * serial graph. */
Test(simulate, binary_tail)
{
	const char *text =
		"context {device_num: 4, parallel_mode: \"semi_auto_parallel\"}\n"
		"graph @g(%x: <Tensor[Float32], (8, 8)> = uniform(-2, 2), %v: <Parameter[Float32], (8, 8)> = uniform(0.5, 2),\n"
		"         %r: <Parameter[Float32], (8,)> = uniform(0.5, 1.5)) {\n"
		"  %hr = ReLU(%x)\n"
		"  %a = Xlogy(%hr, %r) {in_strategy: ((2, 2), (2,))}\n"
		"  %b = Xdivy(%hr, %v) {in_strategy: ((1, 4), (1, 4))}\n"
		"  %c = MulNoNan(%x, %v) {in_strategy: ((4, 1), (4, 1))}\n"
		"  %d = TruncateDiv(%x, %v) {in_strategy: ((2, 2), (2, 2))}\n"
		"  %e = TruncateMod(%x, %r) {in_strategy: ((2, 2), (2,))}\n"
		"  %f = Hypot(%x, %v) {in_strategy: ((1, 4), (1, 4))}\n"
		"  %ae = ApproximateEqual(%x, %hr) {tolerance: 0.5, in_strategy: ((4, 1), (4, 1))}\n"
		"  %g = Select(%ae, %f, %d)\n"
		"  %s = AddN(%a, %b, %c, %d, %e, %f, %g)\n"
		"  %loss = ReduceSum(%s)\n  return %loss, %s\n}\n"
		"train {loss: %loss, optimizer: SGD(learning_rate: 0.01)}\n";
	expect_text_on_4_and_8("binary_tail.ir", text);
}

/* Identity, Depend, SquareSumAll and MaskedFill (tests/e2e/misc_tail.ir's
 * even splits, its numbers as operands left out): a view, a value waiting
 * for another, both sums of squares completed across the ranks, a trained
 * 0-d value filled where a broadcast row mask holds. On 4 devices as
 * written and on 8, equal to the serial graph. */
Test(simulate, misc_tail)
{
	const char *text =
		"context {device_num: 4, parallel_mode: \"semi_auto_parallel\"}\n"
		"graph @g(%x: <Tensor[Float32], (8, 8)> = uniform(-1, 1), %r: <Tensor[Float32], (8,)> = uniform(-1, 1),\n"
		"         %w: <Parameter[Float32], (8, 8)> = normal(0.5), %v: <Parameter[Float32], ()> = constant(0.3)) {\n"
		"  %h = Mul(%x, %w) {in_strategy: ((2, 2), (2, 2))}\n"
		"  %hi = Identity(%h) {in_strategy: ((4, 1),)}\n"
		"  %m = Greater(%r, %x)\n"
		"  %mf = MaskedFill(%hi, %m, %v) {in_strategy: ((1, 4), (1, 4), ())}\n"
		"  %z = Sigmoid(%h)\n"
		"  %d = Depend(%mf, %z)\n"
		"  %s0 = SquareSumAll(%d, %h) {index: 0, in_strategy: ((2, 2), (2, 2))}\n"
		"  %s1 = SquareSumAll(%d, %h) {index: 1, in_strategy: ((4, 1), (4, 1))}\n"
		"  %loss = Add(%s0, %s1)\n  return %loss, %d\n}\n"
		"train {loss: %loss, optimizer: SGD(learning_rate: 0.01)}\n";
	expect_text_on_4_and_8("misc_tail.ir", text);
}

/* KLDivLoss "none" and "sum" split with Eye and LinSpace read on split
 * layouts (tests/e2e/kldiv_eye_linspace.ir's even parts): each rank's
 * identity piece at its global rows and columns, its LinSpace piece from its
 * first element, the sum's pieces completed across the ranks. ("mean" and
 * "batchmean" scale a rank's sum by the whole's count, which a per-rank
 * graph's node does not show the simulator: the e2e model checks them.) On
 * 4 devices as written and on 8, equal to the serial graph. */
Test(simulate, kldiv_eye_lin_space)
{
	const char *text =
		"context {device_num: 4, parallel_mode: \"semi_auto_parallel\"}\n"
		"graph @g(%x: <Tensor[Float32], (8, 8)> = uniform(-1, 1), %t: <Tensor[Float32], (8, 8)> = uniform(0, 1),\n"
		"         %w: <Parameter[Float32], (8, 8)> = normal(0.5)) {\n"
		"  %h = Mul(%x, %w) {in_strategy: ((2, 2), (2, 2))}\n"
		"  %e = Eye() {n: 8, m: 8}\n"
		"  %a = Add(%h, %e) {in_strategy: ((2, 2), (2, 2))}\n"
		"  %l = LinSpace() {start: 0.5, stop: 2.0, num: 8}\n"
		"  %b = Mul(%a, %l) {in_strategy: ((1, 4), (4,))}\n"
		"  %k = KLDivLoss(%b, %t) {reduction: \"none\", in_strategy: ((2, 2), (2, 2))}\n"
		"  %ks = ReduceSum(%k) {in_strategy: ((4, 1),)}\n"
		"  %s = KLDivLoss(%b, %t) {reduction: \"sum\", in_strategy: ((4, 1), (4, 1))}\n"
		"  %loss = Add(%ks, %s)\n  return %loss, %b\n}\n"
		"train {loss: %loss, optimizer: SGD(learning_rate: 0.01)}\n";
	expect_text_on_4_and_8("kldiv_eye_lin_space.ir", text);
}

/* A Layout strategy: the seed's L("mp", ("sp", "dp")) example compiled and run. */
Test(simulate, layout_strategies)
{
	const char *text =
		"context {device_num: 8, parallel_mode: \"semi_auto_parallel\"}\n"
		"layout L = Layout((2, 2, 2), (\"dp\", \"sp\", \"mp\"))\n"
		"graph @g(%x: <Tensor[Float32], (8, 16)>, %w: <Parameter[Float32], (16, 8)>) {\n"
		"  %1 = MatMul(%x, %w) {in_strategy: (L(\"mp\", (\"sp\", \"dp\")), L((\"sp\", \"dp\"), \"None\"))}\n"
		"  %2 = ReLU(%1)\n"
		"  return %2\n}\n";
	Build b = build("layout.ir", text, 0, false, -1);
	cr_assert(b.low, "%s", msgs(b.run));
	expect_equal(b.low, "layout");
	run_free(b.run);
}

/* BatchNorm in training split along N, along N and H (the batch's mean and
 * variance completed over the ranks splitting them), along C (each rank
 * its channels), and in inference split along N and C: each rank's y on 4
 * devices as written and on 8, equal to the serial graph. */
Test(simulate, batch_norm_splits)
{
	const char *text =
		"context {device_num: 4, parallel_mode: \"semi_auto_parallel\"}\n"
		"graph @g(%x: <Tensor[Float32], (8, 4, 4, 2)> = normal(1.0), %t: <Tensor[Float32], (8, 4)> = normal(1.0),\n"
		"         %g: <Parameter[Float32], (4,)> = normal(1.0), %b: <Parameter[Float32], (4,)> = normal(1.0),\n"
		"         %m1: <Parameter[Float32], (4,)> = zeros, %v1: <Parameter[Float32], (4,)> = ones,\n"
		"         %m2: <Parameter[Float32], (4,)> = zeros, %v2: <Parameter[Float32], (4,)> = ones,\n"
		"         %m3: <Parameter[Float32], (4,)> = zeros, %v3: <Parameter[Float32], (4,)> = ones,\n"
		"         %m4: <Parameter[Float32], (4,)> = normal(0.5), %v4: <Parameter[Float32], (4,)> = uniform(1, 2)) {\n"
		"  %a = BatchNorm(%x, %g, %b, %m1, %v1) {is_training: true, in_strategy: ((4, 1, 1, 1), (1,), (1,), (1,), (1,))}\n"
		"  %c = BatchNorm(%x, %g, %b, %m2, %v2) {is_training: true, in_strategy: ((2, 1, 2, 1), (1,), (1,), (1,), (1,))}\n"
		"  %d = BatchNorm(%t, %g, %b, %m3, %v3) {is_training: true, in_strategy: ((1, 4), (4,), (4,), (4,), (4,))}\n"
		"  %e = BatchNorm(%t, %g, %b, %m4, %v4) {in_strategy: ((2, 2), (2,), (2,), (2,), (2,))}\n"
		"  %p = Add(%a, %c)\n  %q = Add(%d, %e)\n  %s = ReduceSum(%p)\n  %u = ReduceSum(%q)\n"
		"  %loss = Add(%s, %u)\n  return %loss, %a, %c, %d, %e\n}\n"
		"train {loss: %loss, optimizer: SGD(learning_rate: 0.01)}\n";
	static const int64_t counts[] = {4, 8};
	for (int c = 0; c < 2; c++) {
		char what[100];
		Build b = build("batch_norm.ir", text, counts[c], false, -1);
		snprintf(what, sizeof what, "BatchNorm pieces on %lld devices", (long long)counts[c]);
		cr_assert(b.low, "%s does not compile: %s", what, msgs(b.run));
		expect_equal(b.low, what);
		run_free(b.run);
	}
}
