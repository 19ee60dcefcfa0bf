/* test_optimizer_parallel.c: optimizer parallelism (lower.c, "optimizer
 * parallelism"; docs/language.md).
 *
 * A data-parallel MLP and a Megatron-style one, lowered with and without
 * enable_parallel_optimizer: a parameter whose gradient the data-parallel
 * ranks sum lives as a slice, every forward user gathers it, its gradient
 * reaches the slice by one ReduceScatter where the plain program
 * AllReduces, the bytes sent are the same and the slab shrinks; a weight
 * whose copies compute the same gradient stays whole. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static const char mlp[] =
	"context { device_num: 8, parallel_mode: \"semi_auto_parallel\"%s }\n"
	"graph @mlp(%%x: <Tensor[Float32], (64, 32)> = uniform(-1, 1),\n"
	"           %%w1: <Parameter[Float32], (32, 256)> = normal(0.1),\n"
	"           %%b1: <Parameter[Float32], (256,)> = zeros,\n"
	"           %%w2: <Parameter[Float32], (256, 16)> = normal(0.1)) {\n"
	"  %%h = MatMul(%%x, %%w1) {in_strategy: ((%s), (1, %s))}\n"
	"  %%hb = BiasAdd(%%h, %%b1) {in_strategy: ((%s, %s), (%s,))}\n"
	"  %%a = ReLU(%%hb)\n"
	"  %%o = MatMul(%%a, %%w2)\n"
	"  %%loss = ReduceMean(%%o) {axis: (0, 1)}\n"
	"  return %%loss\n"
	"}\n"
	"train { loss: %%loss, optimizer: Adam(learning_rate: 0.01), steps: 2 }\n";

/* The MLP on 8 devices, its first MatMul split (dp, 1) x (1, mp), with the
 * context's extra keys. */
static Lowered *lower_mlp(const char *keys, int dp, int mp, Run **run)
{
	char text[2048], x[16], d[16], m[16];
	snprintf(x, sizeof x, "%d, 1", dp);
	snprintf(d, sizeof d, "%d", dp);
	snprintf(m, sizeof m, "%d", mp);
	snprintf(text, sizeof text, mlp, keys, x, m, d, m, m);
	Run *r = run_pipeline("t.ir", text, strlen(text), STAGE_FUSE, NULL, 0);
	cr_assert(r->ok, "%s\n%s", msgs(r), text);
	*run = r;
	return r->c.low;
}

/* How many collectives of `kind` read parameter p directly (forward) or
 * write its gradient (backward). */
static int steps_of(const Lowered *l, StepKind kind, bool backward, int p)
{
	int n = 0;
	for (int i = backward ? l->nfwd : 0; i < (backward ? l->nops : l->nfwd); i++) {
		const LOp *o = &l->ops[i];
		if (o->step && o->step->kind == kind && (backward ? o->result == l->grad[p] : o->in[0] == p))
			n++;
	}
	return n;
}

Test(optimizer_parallel, data_parallel_parameters_live_as_slices)
{
	Run *r0, *r1;
	Lowered *plain = lower_mlp("", 8, 1, &r0);
	Lowered *zero = lower_mlp(", enable_parallel_optimizer: true", 8, 1, &r1);
	for (int p = 1; p < zero->nparams; p++) {   /* w1, b1, w2: replicated, gradients summed over 8 ranks */
		cr_assert_eq(numel(&zero->values[p]) * 8, numel(&plain->values[p]), "%s", zero->values[p].name);
		cr_assert_eq(steps_of(zero, STEP_ALL_GATHER, false, p), 1, "%s gathered once", zero->values[p].name);
		cr_assert_eq(steps_of(zero, STEP_REDUCE_SCATTER, true, p), 1, "%s: its gradient reduce-scattered",
		             zero->values[p].name);
		cr_assert_eq(numel(&zero->values[zero->grad[p]]), numel(&zero->values[p]));
	}
	for (int i = zero->nfwd; i < zero->nops; i++)
		cr_assert(!zero->ops[i].step || zero->ops[i].step->kind != STEP_ALL_REDUCE, "no gradient AllReduce: %s",
		          zero->ops[i].why);
	cr_assert_eq(zero->comm_bytes, plain->comm_bytes, "a ReduceScatter and an AllGather send what an AllReduce did");
	Program *p0 = emit_plan(plain, "t.ir"), *p1 = emit_plan(zero, "t.ir");
	cr_assert_lt(emit_slab_bytes(p1), emit_slab_bytes(p0));
	emit_free(p0);
	emit_free(p1);
	run_free(r0);
	run_free(r1);
}

Test(optimizer_parallel, shard_size_groups_neighbouring_ranks)
{
	Run *r;
	Lowered *l = lower_mlp(", enable_parallel_optimizer: true, optimizer_weight_shard_size: 2", 8, 1, &r);
	const LValue *w1 = &l->values[1];
	cr_assert_eq(w1->type.dims[0], 16, "w1 (32, 256) in halves: %lld", (long long)w1->type.dims[0]);
	int64_t members[8];
	for (int i = 0; i < l->nfwd; i++)
		if (l->ops[i].step && l->ops[i].in[0] == 1) {
			Attrs a;
			lowered_rank_attrs(l, &l->ops[i], 5, &a, members);
			cr_assert_eq(a.ngroup, 2);
			cr_assert(members[0] == 4 && members[1] == 5, "rank 5 gathers with rank 4: %lld %lld",
			          (long long)members[0], (long long)members[1]);
		}
	run_free(r);
}

Test(optimizer_parallel, model_parallel_copies_stay_whole)
{
	Run *r;
	/* w1 split (1, 8): no copies; b1 split (8,): none either */
	Lowered *l = lower_mlp(", enable_parallel_optimizer: true", 1, 8, &r);
	cr_assert_eq(l->values[1].type.dims[1], 32);
	cr_assert_eq(l->values[1].type.dims[0], 32, "w1 keeps its whole column slice");
	cr_assert_eq(steps_of(l, STEP_ALL_GATHER, false, 1), 0);
	run_free(r);
}

Test(optimizer_parallel, levels_and_bad_values)
{
	static const char *const bad[] = {
		"enable_parallel_optimizer: 1", "optimizer_level: \"level4\"", "optimizer_weight_shard_size: 0",
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		char text[256];
		snprintf(text, sizeof text, "context { %s }\ngraph @g(%%x: <Tensor[Float32], (2,)>) {\n  return %%x\n}\n",
		         bad[i]);
		Run *r = run_passes("t.ir", text, strlen(text), PASSES_SHAPES);
		cr_assert(!r->ok && r->d.nerrors == 1, "%s: %s", bad[i], msgs(r));
		run_free(r);
	}
	Run *r;
	Lowered *l = lower_mlp(", enable_parallel_optimizer: true, optimizer_level: \"level3\"", 8, 1, &r);
	cr_assert_eq(r->m->ctx.optimizer_level, 3);
	cr_assert_eq(l->values[1].type.dims[0], 4);
	run_free(r);
}

/* level3 (ZeRO-3): each sliced parameter's AllGather runs again in the
 * backward pass, its bytes counted once more; the operators reading it are
 * not run again (their adjoints read the regathered value through a
 * shadow). */
Test(optimizer_parallel, level3_gathers_again_for_the_backward)
{
	Run *r1, *r3;
	Lowered *l1 = lower_mlp(", enable_parallel_optimizer: true", 8, 1, &r1);
	Lowered *l3 = lower_mlp(", enable_parallel_optimizer: true, optimizer_level: \"level3\"", 8, 1, &r3);
	int64_t again = 0;
	int gathers = 0;
	for (int i = l3->nfwd; i < l3->nops; i++) {
		const LOp *o = &l3->ops[i];
		if (op_recomputes(l3, i) < 0)
			continue;
		if (o->step) {
			cr_assert_eq(o->step->kind, STEP_ALL_GATHER);
			cr_assert_geq(l3->values[o->in[0]].param, 0, "a parameter's slice is gathered");
			gathers++;
			again += o->bytes;
		} else {
			cr_assert(op_shadow(l3, i), "%%%s = %s runs again", l3->values[o->result].name, op_info[o->op].name);
		}
	}
	cr_assert_eq(gathers, 3, "w1, b1 and w2 gathered again: %d", gathers);
	cr_assert_eq(l3->comm_bytes, l1->comm_bytes + again);
	Program *p1 = emit_plan(l1, "t.ir"), *p3 = emit_plan(l3, "t.ir");
	cr_assert_leq(emit_slab_bytes(p3), emit_slab_bytes(p1));
	emit_free(p1);
	emit_free(p3);
	run_free(r1);
	run_free(r3);
}
