/* test_pipeline.c: the one pipeline (pipeline.c), the verifier between its
 * stages (verify.c), the pipeline stages' split (stages.c) and the step's
 * batch split into micro-batches (rebatch.c).
 *
 * A run stops where it is asked to, or at the first stage that finds an
 * error, and makes nothing after it; a run resumed goes on as one run
 * would; the search's memory count leaves the module as it was; the texts
 * asked for are kept; and a lowered program broken in any of the ways the
 * verifier knows aborts naming the stage. */
#include <criterion/criterion.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static const char mlp[] =
	"context {device_num: 8, parallel_mode: \"semi_auto_parallel\"}\n"
	"graph @net(%x: <Tensor[Float32], (16, 32)>, %w: <Parameter[Float32], (32, 64)>,\n"
	"           %y: <Tensor[Float32], (16, 64)>) {\n"
	"  %h = MatMul(%x, %w) {in_strategy: ((2, 1), (1, 4))}\n"
	"  %r = ReLU(%h)\n"
	"  %loss = MSELoss(%r, %y)\n"
	"  return %loss\n"
	"}\n"
	"train { loss: %loss, optimizer: SGD(learning_rate: 0.1), steps: 1 }\n";

static Run *mlp_to(Stage stop)
{
	return run_pipeline("t.ir", mlp, strlen(mlp), stop, NULL, 0);
}

Test(pipeline, stops_where_asked)
{
	Run *r = mlp_to(STAGE_FLATTEN);
	expect_clean(r);
	cr_assert_eq(r->c.reached, STAGE_FLATTEN);
	cr_assert_not_null(r->c.flat);
	cr_assert_null(r->c.low);
	run_resume(r, STAGE_AUTOCAST, STAGE_LOWER);
	expect_clean(r);
	cr_assert_not_null(r->c.low);
	cr_assert_eq(r->c.low->nops, r->c.low->nfwd, "lowering alone has no backward pass");
	cr_assert_null(r->c.plan);
	run_resume(r, STAGE_DIFFERENTIATE, STAGE_PLAN);
	expect_clean(r);
	cr_assert_gt(r->c.low->nops, r->c.low->nfwd);
	cr_assert_not_null(r->c.plan);
	cr_assert_gt(emit_slab_bytes(r->c.plan), 0);
	run_free(r);
}

/* A run resumed stage by stage makes the program one run makes. */
Test(pipeline, resumed_equals_whole)
{
	Run *whole = mlp_to(STAGE_PLAN), *steps = mlp_to(STAGE_PARSE);
	for (Stage s = STAGE_CHECK; s <= STAGE_PLAN; s++)
		run_resume(steps, s, s);
	expect_clean(whole);
	expect_clean(steps);
	StrBuf a = {0}, b = {0};
	emit_program(&a, whole->c.plan);
	emit_program(&b, steps->c.plan);
	cr_assert_str_eq(a.data, b.data);
	cr_assert_eq(whole->c.low->comm_bytes, steps->c.low->comm_bytes);
	sb_free(&a);
	sb_free(&b);
	run_free(whole);
	run_free(steps);
}

/* The first stage that finds an error is the last run; its status says a
 * bad model; nothing after it is made. */
Test(pipeline, stops_at_the_first_error)
{
	static const char bad[] =
		"graph @net(%x: <Tensor[Float32], (16, 32)>, %w: <Parameter[Float32], (16, 64)>) {\n"
		"  %h = MatMul(%x, %w)\n"
		"  return %h\n"
		"}\n";
	Run *r = run_pipeline("t.ir", bad, strlen(bad), STAGE_PLAN, NULL, 0);
	cr_assert_not(r->ok);
	cr_assert_eq(r->c.reached, STAGE_INFER);
	cr_assert_eq(r->c.status, EXIT_MODEL);
	cr_assert_null(r->c.flat);
	cr_assert_null(r->c.low);
	expect_msg(r, "t.ir:2:");
	run_free(r);
}

/* A command-line setting that is no value stops the check stage with the
 * usage status. */
Test(pipeline, bad_override_is_a_usage_error)
{
	Override o = {"device_num", "--device-num", "(1, 2"};
	Run *r = run_pipeline("t.ir", mlp, strlen(mlp), STAGE_PLAN, &o, 1);
	cr_assert_not(r->ok);
	cr_assert_eq(r->c.reached, STAGE_CHECK);
	cr_assert_eq(r->c.status, EXIT_USAGE);
	expect_msg(r, "--device-num");
	run_free(r);
}

/* The search lowers and plans many candidates through the pipeline's own
 * stages; the module it searches keeps its arena's size and its settings. */
Test(pipeline, search_leaves_the_module)
{
	Override o = {"parallel_mode", "--parallel-mode", "auto_parallel"};
	Run *r = run_pipeline("t.ir", mlp, strlen(mlp), STAGE_STRATEGIES, &o, 1);
	expect_clean(r);
	size_t before = arena_bytes(r->m->arena);
	Context ctx = r->m->ctx;
	run_resume(r, STAGE_SEARCH, STAGE_SEARCH);
	expect_clean(r);
	cr_assert_eq(arena_bytes(r->m->arena), before, "the search grew the module's arena by %zu bytes",
	             arena_bytes(r->m->arena) - before);
	cr_assert_eq(r->m->ctx.parallel_optimizer, ctx.parallel_optimizer);
	run_free(r);
}

/* dump_after keeps the texts of the stages asked for, as they leave them:
 * lowering's program has no backward operator, differentiation's has. */
Test(pipeline, keeps_the_texts_asked_for)
{
	Run *r = mlp_to(STAGE_VALIDATE);
	r->c.dump_after = 1u << STAGE_LOWER | 1u << STAGE_DIFFERENTIATE | 1u << STAGE_SEARCH;
	run_resume(r, STAGE_FLATTEN, STAGE_FUSE);
	expect_clean(r);
	cr_assert_eq(r->c.dumps[STAGE_LOWER].n, 8);
	cr_assert_eq(r->c.dumps[STAGE_DIFFERENTIATE].n, 8);
	cr_assert_eq(r->c.dumps[STAGE_SEARCH].n, 1);
	cr_assert_eq(r->c.dumps[STAGE_FUSE].n, 0);
	cr_assert_null(strstr(r->c.dumps[STAGE_LOWER].text[3].data, "backward"));
	cr_assert_not_null(strstr(r->c.dumps[STAGE_DIFFERENTIATE].text[3].data, "backward"));
	cr_assert_not_null(strstr(r->c.dumps[STAGE_SEARCH].text[0].data, "step_parallel_begin"));
	run_free(r);
}

/* ---- the verifier: each broken invariant aborts ---- */

/* A collective the model wrote names ranks of its context's devices, even
 * lowered stand_alone (for one device): no invariant broken (fuzz_pipeline
 * found the verifier bounding them by the program's device count). */
Test(verify, written_group_ranks_of_the_context)
{
	static const char text[] = "context {device_num: 8}\n"
	                           "graph @g(%x: <Tensor[Float32], (8,)>) {\n"
	                           "  %1 = AllReduce(%x) {op: \"sum\", group: (0, 4)}\n"
	                           "  return %1\n}\n";
	Run *r = run_pipeline("t.ir", text, strlen(text), STAGE_PLAN, NULL, 0);
	expect_clean(r);
	cr_assert_eq(r->c.low->device_num, 1);
	run_free(r);
}

static Lowered *verified(void)
{
	Run *r = mlp_to(STAGE_FUSE);   /* left to the process, which the abort ends */
	expect_clean(r);
	verify_lowered(r->c.low, "test");   /* the program as made passes */
	return r->c.low;
}

/* The checks exist in the builds with SHARDC_VERIFY: the tests' build. */
Test(verify, a_clean_program_passes)
{
	Run *r = mlp_to(STAGE_FUSE);
	expect_clean(r);
	verify_lowered(r->c.low, "test");
	run_free(r);
}

Test(verify, operand_read_before_defined, .signal = SIGABRT)
{
	Lowered *l = verified();
	l->ops[0].in[0] = l->ops[l->nops - 1].result;
	verify_lowered(l, "test");
}

Test(verify, adjoint_before_its_operator, .signal = SIGABRT)
{
	Lowered *l = verified();
	for (int i = l->nfwd; i < l->nops; i++)
		if (l->ops[i].grad == GRAD_ADJOINT) {
			l->ops[i].of = i;
			break;
		}
	verify_lowered(l, "test");
}

Test(verify, local_dims_not_the_split_global, .signal = SIGABRT)
{
	Lowered *l = verified();
	for (int v = 0; v < l->nvalues; v++)
		if (l->values[v].type.rank > 0 && layout_dim_split(&l->values[v].layout, 0) > 1) {
			l->values[v].type.dims[0] = l->values[v].global[0];
			break;
		}
	verify_lowered(l, "test");
}

Test(verify, layout_over_other_devices, .signal = SIGABRT)
{
	Lowered *l = verified();
	TensorLayout *t = &l->values[0].layout;
	cr_assert_gt(t->ndev, 0);
	t->dev[0] *= 2;
	verify_lowered(l, "test");
}

Test(verify, collective_group_outside_its_matrix, .signal = SIGABRT)
{
	Lowered *l = verified();
	for (int i = 0; i < l->nops; i++)
		if (l->ops[i].step && l->ops[i].step->kind != STEP_SLICE) {
			RedistStep *s = (RedistStep *)l->ops[i].step;
			s->axes = 1u << s->from.ndev;
			break;
		}
	verify_lowered(l, "test");
}

Test(verify, operator_on_no_stage, .signal = SIGABRT)
{
	Lowered *l = verified();   /* one stage: an operator on stage 1 (a pipeline_stage kept on one device) */
	l->ops[0].stage = 1;
	verify_lowered(l, "test");
}

/* split_by_cost (stages.c): on a chain of operators with random seconds and
 * random sends between them, the slowest stage of its split costs what the
 * slowest stage of the best split does (every split tried), each stage
 * nonempty and in order. */
Test(stages, split_by_cost_is_least)
{
	enum { OPS = 10 };
	char text[2048];
	int at = snprintf(text, sizeof text, "graph @net(%%x: <Tensor[Float32], (4, 4)>) {\n  %%a0 = ReLU(%%x)\n");
	for (int i = 1; i < OPS; i++)
		at += snprintf(text + at, sizeof text - (size_t)at, "  %%a%d = ReLU(%%a%d)\n", i, i - 1);
	snprintf(text + at, sizeof text - (size_t)at, "  return %%a%d\n}\n", OPS - 1);
	Run *r = run_pipeline("t.ir", text, strlen(text), STAGE_FLATTEN, NULL, 0);
	expect_clean(r);
	const Graph *g = r->c.flat->g;
	cr_assert_eq(g->nnodes, OPS);
	unsigned seed = 7;
	for (int trial = 0; trial < 200; trial++) {
		double seconds[OPS], send[OPS + 1] = {0}, cut[OPS + 1] = {0};
		for (int i = 0; i < OPS; i++)
			seconds[i] = (double)(rand_r(&seed) % 1000) / 100;
		for (int v = g->nparams; v < g->nvalues; v++)
			send[v] = (double)(rand_r(&seed) % 300) / 100;
		for (int i = 1; i < OPS; i++)   /* the cut before operator i: its operand, made by operator i - 1 */
			cut[i] = send[g->nodes[i].in[0]];
		int stages = 2 + trial % 3, split[OPS];
		split_by_cost(r->c.flat, seconds, send, stages, split);
		double slowest = 0, stage = 0;
		cr_assert_eq(split[0], 0);
		cr_assert_eq(split[OPS - 1], stages - 1);
		for (int i = 0; i < OPS; i++) {
			stage += seconds[i];
			if (i + 1 < OPS && split[i + 1] == split[i])
				continue;
			cr_assert(i + 1 == OPS || split[i + 1] == split[i] + 1, "stages in order, none empty");
			int first = i;
			while (first > 0 && split[first - 1] == split[i])
				first--;
			stage += cut[first] + cut[i + 1];
			slowest = stage > slowest ? stage : slowest;
			stage = 0;
		}
		double best = INFINITY;   /* every split: stages - 1 cuts among OPS - 1 places, as a bit mask */
		for (unsigned mask = 0; mask < 1u << (OPS - 1); mask++) {
			if (__builtin_popcount(mask) != stages - 1)
				continue;
			double most = 0, run = 0;
			int first = 0;
			for (int i = 0; i < OPS; i++) {
				run += seconds[i];
				if (i + 1 < OPS && !(mask >> i & 1))
					continue;
				run += cut[first] + cut[i + 1];
				most = run > most ? run : most;
				run = 0, first = i + 1;
			}
			best = most < best ? most : best;
		}
		cr_assert(slowest <= best * (1 + 1e-6), "trial %d, %d stages: slowest stage %g, the best split's %g", trial,
		          stages, slowest, best);
	}
	run_free(r);
}

/* rebatch.c: the step's batch (16 rows) in 4 micro-batches. The inputs of
 * more than one row take 4 rows each and remember 16; the scale of one row
 * stays whole; a Reshape of the batch to (4, 4, 8) and back takes its 1/4
 * (1, 4, 8), and the mean loss stays a scalar. */
static const char batched[] =
	"graph @net(%x: <Tensor[Float32], (16, 8)>, %s: <Tensor[Float32], (1,)>, %w: <Parameter[Float32], (8, 8)>,\n"
	"           %y: <Tensor[Float32], (16, 8)>) {\n"
	"  %h = MatMul(%x, %w)\n"
	"  %g = Mul(%h, %s)\n"
	"  %r3 = Reshape(%g) {shape: (4, 4, 8)}\n"
	"  %r = Reshape(%r3) {shape: (16, 8)}\n"
	"  %loss = MSELoss(%r, %y)\n"
	"  return %loss\n"
	"}\n"
	"train { loss: %loss, optimizer: SGD(learning_rate: 0.1), micro_batches: \"auto\" }\n";

static int flat_value(const FlatGraph *f, const char *name)
{
	for (int v = 0; v < f->g->nvalues; v++)
		if (f->g->values[v].name && !strcmp(f->g->values[v].name, name))
			return v;
	cr_assert_fail("no value %%%s", name);
	return -1;
}

Test(rebatch, splits_the_batch_and_keeps_a_row)
{
	Run *r = run_pipeline("t.ir", batched, strlen(batched), STAGE_KERNELS, NULL, 0);
	expect_clean(r);
	FlatGraph *f = r->c.flat;
	cr_assert(r->m->train->micro_auto);
	cr_assert(rebatch(r->m, f, 4, &r->d), "%s", msgs(r));
	const Value *x = &f->g->values[flat_value(f, "x")], *s = &f->g->values[flat_value(f, "s")];
	cr_assert_eq(x->type.dims[0], 4);
	cr_assert_eq(f->step_rows[flat_value(f, "x")], 16);
	cr_assert_eq(s->type.dims[0], 1, "an input of one row is every micro-batch's");
	cr_assert_eq(f->step_rows[flat_value(f, "s")], 0);
	const Type *r3 = &f->g->values[flat_value(f, "r3")].type;
	cr_assert(r3->rank == 3 && r3->dims[0] == 1 && r3->dims[1] == 4 && r3->dims[2] == 8);
	cr_assert_eq(f->g->values[flat_value(f, "r")].type.dims[0], 4);
	cr_assert_eq(f->g->values[flat_value(f, "loss")].type.rank, 0);
	run_free(r);
}

/* 16 rows do not split 3 ways; a Reshape's dim 0 of 4 does not split 8 ways. */
Test(rebatch, refuses_a_count_that_does_not_divide)
{
	Run *r = run_pipeline("t.ir", batched, strlen(batched), STAGE_KERNELS, NULL, 0);
	expect_clean(r);
	cr_assert_not(rebatch(r->m, r->c.flat, 3, &r->d));
	cr_assert(strstr(msgs(r), "input %x has 16 rows, which 3 micro-batches do not split evenly"), "%s", msgs(r));
	run_free(r);
	r = run_pipeline("t.ir", batched, strlen(batched), STAGE_KERNELS, NULL, 0);
	cr_assert_not(rebatch(r->m, r->c.flat, 8, &r->d));
	cr_assert(strstr(msgs(r), "the target dim 0 of Reshape %r3, 4, holds the batch, which 8 micro-batches do not "
	                          "split evenly"), "%s", msgs(r));
	run_free(r);
}

/* A Transpose that moves the batch off dim 0: shapes that still agree, but
 * the micro-batches would not compute the step's values. */
Test(rebatch, refuses_a_batch_moved_off_dim_0)
{
	static const char moved[] =
		"graph @net(%x: <Tensor[Float32], (8, 4, 16)>, %t: <Tensor[Float32], (8, 4, 16)>,\n"
		"           %w: <Parameter[Float32], (4, 16, 16)>) {\n"
		"  %xt = Transpose(%x) {perm: (1, 0, 2)}\n"
		"  %y = BatchMatMul(%xt, %w)\n"
		"  %tt = Transpose(%t) {perm: (1, 0, 2)}\n"
		"  %loss = MSELoss(%y, %tt)\n"
		"  return %loss\n"
		"}\n"
		"train { loss: %loss, optimizer: SGD(learning_rate: 0.1), micro_batches: \"auto\" }\n";
	Run *r = run_pipeline("t.ir", moved, strlen(moved), STAGE_KERNELS, NULL, 0);
	expect_clean(r);
	cr_assert_not(rebatch(r->m, r->c.flat, 2, &r->d));
	cr_assert(strstr(msgs(r), "in 2 micro-batches %xt is (4, 4, 16) where the step's batch makes it (4, 8, 16)"), "%s",
	          msgs(r));
	run_free(r);
}

/* assign_stages (stages.c): a computed constant read on two stages is
 * computed on each (stage -1), not sent; one read on one stage stays there. */
Test(stages, a_constant_read_on_two_stages_is_on_every_stage)
{
	static const char two[] =
		"context {device_num: 2, parallel_mode: \"semi_auto_parallel\", pipeline_stages: 2}\n"
		"graph @net(%x: <Tensor[Float32], (4, 8)>, %w: <Parameter[Float32], (8, 8)>) {\n"
		"  %pos = Arange() {stop: 8, dtype: Float32}\n"
		"  %one = Arange() {stop: 8, dtype: Float32}\n"
		"  %a = Add(%x, %pos) {pipeline_stage: 0}\n"
		"  %h = MatMul(%a, %w) {pipeline_stage: 1}\n"
		"  %b = Add(%h, %pos) {pipeline_stage: 1}\n"
		"  %c = Add(%b, %one) {pipeline_stage: 1}\n"
		"  %loss = ReduceMean(%c) {pipeline_stage: 1}\n"
		"  return %loss\n"
		"}\n"
		"train { loss: %loss, optimizer: SGD(learning_rate: 0.1), micro_batches: 2 }\n";
	Run *r = run_pipeline("t.ir", two, strlen(two), STAGE_KERNELS, NULL, 0);
	expect_clean(r);
	const FlatGraph *f = r->c.flat;
	int ns[16], vs[32];
	cr_assert(f->g->nnodes <= 16 && f->g->nvalues <= 32);
	assign_stages(f, NULL, 2, ns, vs);
	cr_assert_eq(ns[0], -1, "%%pos, read on stages 0 and 1: computed on each");
	cr_assert_eq(vs[f->g->nodes[0].result], -1);
	cr_assert_eq(ns[1], 1, "%%one, read on stage 1 only: there");
	cr_assert_eq(ns[2], 0);
	cr_assert_eq(ns[3], 1);
	run_free(r);
}
