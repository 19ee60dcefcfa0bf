/* test_accumulate.c: gradient accumulation's tail (accumulate.c).
 *
 * A data-parallel MLP lowered to its buffer plan with and without
 * accumulate_steps: without it nothing is marked; with it the forward pass
 * and the adjoints run every micro-batch, the parameters' gradient
 * AllReduces once a step, each reading a gradient summed over the
 * micro-batches; a step's bytes count the once-a-step collectives once and
 * the others N times, its memory one micro-batch's and the sums'; with clip_global_norm the norm is taken once a step,
 * of the sums; with ZeRO level2 the ReduceScatters go out every micro-batch
 * and the sums are their slices, with level1 once a step of whole sums. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static char *mlp(const char *ctx, const char *train)
{
	char *text = malloc(4096);
	snprintf(text, 4096,
	         "context {device_num: 4, parallel_mode: \"data_parallel\"%s}\n"
	         "graph @mlp(%%x: <Tensor[Float32], (16, 32)> = uniform(-1, 1), %%t: <Tensor[Float32], (16, 16)> = zeros,\n"
	         "           %%w1: <Parameter[Float32], (32, 64)> = normal(0.1), %%b1: <Parameter[Float32], (64,)> = zeros,\n"
	         "           %%w2: <Parameter[Float32], (64, 16)> = normal(0.1)) {\n"
	         "  %%h = MatMul(%%x, %%w1)\n  %%hb = BiasAdd(%%h, %%b1)\n  %%a = ReLU(%%hb)\n"
	         "  %%y = MatMul(%%a, %%w2)\n  %%loss = MSELoss(%%y, %%t)\n  return %%loss\n}\n"
	         "train {loss: %%loss, optimizer: SGD(learning_rate: 0.1)%s}\n", ctx, train);
	return text;
}

/* The runs to free at the end of a test (run_free checks for leaks). */
static Run *runs[8];
static int nruns;

static void free_runs(void)
{
	while (nruns)
		run_free(runs[--nruns]);
}

/* The model lowered and planned. */
static Lowered *lowered(const char *ctx, const char *train)
{
	char *text = mlp(ctx, train);
	Run *r = compile(text);
	expect_clean(r);
	Lowered *l = lower_run(r, NULL, STAGE_PLAN);
	free(text);
	runs[nruns++] = r;
	return l;
}

static Program *plan_of(const Lowered *l)
{
	for (int k = 0; k < nruns; k++)
		if (runs[k]->c.low == l)
			return runs[k]->c.plan;
	return NULL;
}

static bool is_reduce(const LOp *o, StepKind kind)
{
	return o->grad == GRAD_NONE && o->step && o->step->kind == kind && o->bytes;
}

Test(accumulate, nothing_without_the_key)
{
	Lowered *l = lowered("", "");
	cr_assert_null(l->once);
	cr_assert_null(l->accumulated);
	for (int i = 0; i < l->nops; i++)
		cr_assert_eq(op_runs(l, i), 1);
	Lowered *one = lowered("", ", accumulate_steps: 1");
	cr_assert_null(one->once, "accumulate_steps: 1 is no accumulation");
	free_runs();
}

Test(accumulate, gradient_reductions_once_a_step)
{
	Lowered *plain = lowered("", "");
	Lowered *l = lowered("", ", accumulate_steps: 4");
	cr_assert_not_null(l->once);
	int once = 0, summed = 0;
	int64_t bytes = 0;
	for (int i = 0; i < l->nops; i++) {
		const LOp *o = &l->ops[i];
		bytes += o->bytes * op_runs(l, i);
		if (i < l->nfwd || o->grad == GRAD_ADJOINT || o->grad == GRAD_SEED) {
			cr_assert(!op_once(l, i), "%s at %d runs once a step", op_info[o->op].name, i);
			cr_assert_eq(op_runs(l, i), 4);
			continue;
		}
		if (!is_reduce(o, STEP_ALL_REDUCE))
			continue;
		cr_assert(op_once(l, i), "a gradient AllReduce at %d runs every micro-batch", i);
		once++;
		for (int k = 0; k < o->nin; k++)   /* (a bucket's first reads only its own) */
			summed += l->accumulated[o->in[k]];
	}
	cr_assert_eq(once, 3, "the three parameters' AllReduces");
	cr_assert_eq(summed, 3, "each reads its gradient summed over the micro-batches");
	for (int p = 0; p < l->nparams; p++)
		cr_assert(!l->accumulated[p], "a parameter summed");
	cr_assert_eq(l->comm_bytes, bytes);
	/* the forward pass's bytes 4 times, the backward pass's (the gradients' sums) once */
	cr_assert_eq(l->fwd_bytes, 4 * plain->fwd_bytes);
	cr_assert_eq(l->comm_bytes - l->fwd_bytes, plain->comm_bytes - plain->fwd_bytes);
	/* memory: one micro-batch's, and a Float32 sum of each gradient summed */
	int64_t sums = 0;
	for (int v = 0; v < l->nvalues; v++)
		if (l->accumulated[v]) {   /* Float32, aligned to 256 bytes (plan.c) */
			int64_t n = 4;
			for (int d = 0; d < l->values[v].type.rank; d++)
				n *= l->values[v].type.dims[d];
			sums += (n + 255) / 256 * 256;
		}
	cr_assert_eq(emit_slab_bytes(plan_of(l)), emit_slab_bytes(plan_of(plain)) + sums, "slab %lld, without %lld + sums %lld",
	             (long long)emit_slab_bytes(plan_of(l)), (long long)emit_slab_bytes(plan_of(plain)), (long long)sums);
	free_runs();
}

Test(accumulate, clipping_once_a_step)
{
	Lowered *l = lowered("", ", accumulate_steps: 3, clip_global_norm: 1.0");
	int norms = 0, clips = 0;
	for (int i = l->nfwd; i < l->nops; i++) {
		const LOp *o = &l->ops[i];
		if (o->grad == GRAD_SQNORM || o->grad == GRAD_CLIP) {
			cr_assert(op_once(l, i), "the global norm or a clip every micro-batch");
			norms += o->grad == GRAD_SQNORM;
			clips += o->grad == GRAD_CLIP;
			for (int k = 0; o->grad == GRAD_SQNORM && k < o->nin; k++)
				cr_assert(!l->accumulated[o->in[k]], "the norm of a micro-batch's gradient");
		}
	}
	cr_assert_eq(norms, 1);
	cr_assert_eq(clips, 3);
	free_runs();
}

/* ZeRO: level1 sums whole gradients and reduce-scatters them once a step;
 * level2 reduce-scatters every micro-batch and sums the slices. */
Test(accumulate, zero_levels)
{
	for (int level = 1; level <= 2; level++) {
		char ctx[128];
		snprintf(ctx, sizeof ctx, ", enable_parallel_optimizer: true, optimizer_level: \"level%d\"", level);
		Lowered *l = lowered(ctx, ", accumulate_steps: 2");
		int scatters = 0;
		for (int i = l->nfwd; i < l->nops; i++) {
			const LOp *o = &l->ops[i];
			if (!is_reduce(o, STEP_REDUCE_SCATTER))
				continue;
			scatters++;
			cr_assert_eq(op_once(l, i), level == 1, "level%d: a ReduceScatter %s", level,
			             level == 1 ? "every micro-batch" : "once a step");
			cr_assert_eq(l->accumulated[o->in[0]], level == 1, "level%d: what is summed", level);
			cr_assert_eq(l->accumulated[o->result], level == 2, "level%d: what is summed", level);
		}
		cr_assert_gt(scatters, 0, "level%d: no ReduceScatter", level);
	}
	free_runs();
}

/* The search prices a micro-batch's share of a step: the parameters'
 * gradient reductions at 1/N (once a step), but with level2's
 * ReduceScatters, which go out every micro-batch. */
Test(accumulate, search_prices_reductions_once)
{
	Cluster c;
	cluster_default(&c);
	const char *const level2 = ", enable_parallel_optimizer: true, optimizer_level: \"level2\"";
	double cost[4];
	const char *ctx[4] = {"", "", level2, level2};
	const char *train[4] = {"", ", accumulate_steps: 4", "", ", accumulate_steps: 4"};
	for (int k = 0; k < 4; k++) {
		lowered(ctx[k], train[k]);
		Run *r = runs[nruns - 1];
		cost[k] = strategies_cost(r->c.m, r->c.flat, &r->c.st, &c);
	}
	cr_assert_lt(cost[1], cost[0], "accumulate_steps 4 costs %g, without %g", cost[1], cost[0]);
	cr_assert_eq(cost[3], cost[2], "level2 with accumulate_steps costs %g, without %g", cost[3], cost[2]);
	free_runs();
}
