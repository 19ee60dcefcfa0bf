/* test_bucket.c: gradient AllReduces packed into buckets (bucket.c).
 *
 * Each model is lowered twice, stopping before bucketing and after it
 * (lower_run). Bucketing only reorders: the same operators, the same bytes,
 * the forward pass untouched, every value defined before it is read. A
 * bucket is n consecutive AllReduces of the backward pass over one group,
 * dtype and reduction (op_bucket: n on the first, -1 on the others), closed
 * once it holds bucket_bytes; bucket_bytes 0 leaves one call each. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static Lowered *lower_at(const char *text, int64_t bucket_bytes, Stage upto, Run **run)
{
	Run *r = compile(text);
	expect_clean(r);
	Cluster c;
	cluster_default(&c);
	c.bucket_bytes = (double)bucket_bytes;
	*run = r;
	return lower_run(r, &c, upto);
}

typedef struct {
	int buckets;             /* of two members or more */
	int members;             /* in them */
	int first;               /* the first bucket's position, -1 */
	int last_end;            /* one past the last bucket's last member */
} Buckets;

/* The program after bucketing against the one before; returns what it found. */
static Buckets expect_bucketed(const Lowered *before, const Lowered *after, int64_t bucket_bytes)
{
	cr_assert_eq(after->nops, before->nops);
	cr_assert_eq(after->nfwd, before->nfwd);
	cr_assert_eq(after->comm_bytes, before->comm_bytes, "bytes sent %lld, before %lld", (long long)after->comm_bytes,
	             (long long)before->comm_bytes);
	int nv = after->nvalues;
	cr_assert_eq(nv, before->nvalues);
	/* the same operators (results are unique), the forward pass in place */
	int *at = malloc(sizeof(int) * (size_t)nv), *def = malloc(sizeof(int) * (size_t)nv);
	for (int v = 0; v < nv; v++)
		at[v] = def[v] = -1;
	for (int i = 0; i < before->nops; i++)
		at[before->ops[i].result] = i;
	for (int i = 0; i < after->nops; i++) {
		const LOp *o = &after->ops[i], *b = &before->ops[at[o->result]];
		cr_assert_geq(at[o->result], 0);
		cr_assert(o->op == b->op && o->grad == b->grad && o->bytes == b->bytes && o->nin == b->nin);
		if (i < after->nfwd)
			cr_assert_eq(at[o->result], i, "forward operator %d moved", i);
		def[o->result] = i;
	}
	for (int i = 0; i < after->nops; i++) {
		const LOp *o = &after->ops[i];
		for (int k = 0; k < o->nin; k++)
			cr_assert(o->in[k] < after->nparams || (def[o->in[k]] >= 0 && def[o->in[k]] < i),
			          "%%%s read at %d, computed at %d", after->values[o->in[k]].name, i, def[o->in[k]]);
		if (o->grad == GRAD_ADJOINT)
			cr_assert_eq(after->ops[o->of].op, o->op, "an adjoint points at another operator");
	}
	Buckets b = {0, 0, -1, -1};
	for (int i = 0; i < after->nops;) {
		const LOp *o = &after->ops[i];
		cr_assert_neq(op_bucket(after, i), -1, "a member without its bucket's first at %d", i);
		if (op_bucket(after, i) == 0) {
			i++;
			continue;
		}
		int n = op_bucket(after, i);
		cr_assert_gt(n, 1);
		cr_assert_leq(i + n, after->nops);
		int64_t bytes = 0;
		for (int j = i; j < i + n; j++) {
			const LOp *m = &after->ops[j];
			cr_assert_eq(op_bucket(after, j), j == i ? n : -1);
			cr_assert(j >= after->nfwd && m->grad == GRAD_NONE && m->step && m->step->kind == STEP_ALL_REDUCE,
			          "%s in a bucket", op_info[m->op].name);
			cr_assert(redist_same_group(o->step, m->step), "two groups in one bucket");
			cr_assert_eq(m->step->op, o->step->op);
			cr_assert_eq(after->values[m->result].type.dtype, after->values[o->result].type.dtype);
			if (j < i + n - 1)
				bytes += value_bytes(&after->values[m->result]);
		}
		cr_assert_lt(bytes, bucket_bytes, "a bucket went on after holding %lld bytes of %lld", (long long)bytes,
		             (long long)bucket_bytes);
		b.buckets++;
		b.members += n;
		b.first = b.first < 0 ? i : b.first;
		b.last_end = i + n;
		i += n;
	}
	free(at);
	free(def);
	return b;
}

/* A data-parallel MLP: every parameter's gradient summed over the 8 ranks,
 * in Float32: four AllReduces of 8192, 256, 4096 and 64 bytes. */
static const char dp_mlp[] =
	"context {device_num: 8, parallel_mode: \"data_parallel\"}\n"
	"graph @mlp(%x: <Tensor[Float32], (64, 32)> = uniform(-1, 1), %t: <Tensor[Float32], (64, 16)> = zeros,\n"
	"           %w1: <Parameter[Float32], (32, 64)> = normal(0.1), %b1: <Parameter[Float32], (64,)> = zeros,\n"
	"           %w2: <Parameter[Float32], (64, 16)> = normal(0.1), %b2: <Parameter[Float32], (16,)> = zeros) {\n"
	"  %h = MatMul(%x, %w1)\n  %hb = BiasAdd(%h, %b1)\n  %a = ReLU(%hb)\n"
	"  %y = MatMul(%a, %w2)\n  %yb = BiasAdd(%y, %b2)\n  %loss = MSELoss(%yb, %t)\n  return %loss\n}\n"
	"train {loss: %loss, optimizer: SGD(learning_rate: 0.1)}\n";

/* The backward AllReduces that bucketing may take, in order. */
static int gradient_reduces(const Lowered *l, int *at)
{
	int n = 0;
	for (int i = l->nfwd; i < l->nops; i++) {
		const LOp *o = &l->ops[i];
		if (o->grad == GRAD_NONE && o->step && o->step->kind == STEP_ALL_REDUCE)
			at[n++] = i;
	}
	return n;
}

/* Large buckets: the four in one call, at the end of the backward pass. */
Test(bucket, one_bucket_at_the_end)
{
	Run *r0, *r1;
	Lowered *before = lower_at(dp_mlp, 25000000, STAGE_RECOMPUTE, &r0);
	Lowered *after = lower_at(dp_mlp, 25000000, STAGE_BUCKET, &r1);
	int at[64];
	cr_assert_eq(gradient_reduces(before, at), 4);
	for (int k = 0; k < 4; k++)
		cr_assert_eq(op_bucket(before, at[k]), 0, "bucketed before bucket_gradients");
	Buckets b = expect_bucketed(before, after, 25000000);
	cr_assert_eq(b.buckets, 1);
	cr_assert_eq(b.members, 4);
	cr_assert_eq(b.last_end, after->nops, "the bucket goes out after the backward pass");
	/* the members in the order they were computed */
	for (int k = 0; k < 4; k++)
		cr_assert_eq(after->ops[b.first + k].result, before->ops[at[k]].result);
	for (int p = 0; p < after->nparams; p++)
		if (after->grad[p] >= 0)
			cr_assert_eq(after->grad[p], before->grad[p]);
	run_free(r0);
	run_free(r1);
}

/* bucket_bytes 0: one call each, the program as it was. */
Test(bucket, zero_bytes_one_call_each)
{
	Run *r0, *r1;
	Lowered *before = lower_at(dp_mlp, 0, STAGE_RECOMPUTE, &r0);
	Lowered *after = lower_at(dp_mlp, 0, STAGE_BUCKET, &r1);
	Buckets b = expect_bucketed(before, after, 1);
	cr_assert_eq(b.buckets, 0);
	for (int i = 0; i < after->nops; i++) {
		cr_assert_eq(after->ops[i].result, before->ops[i].result, "operator %d moved", i);
		cr_assert_eq(op_bucket(after, i), 0);
	}
	run_free(r0);
	run_free(r1);
}

/* Buckets smaller than any gradient: each goes out alone, where it was. */
Test(bucket, tiny_buckets_change_nothing)
{
	Run *r0, *r1;
	Lowered *before = lower_at(dp_mlp, 1, STAGE_RECOMPUTE, &r0);
	Lowered *after = lower_at(dp_mlp, 1, STAGE_BUCKET, &r1);
	Buckets b = expect_bucketed(before, after, 1);
	cr_assert_eq(b.buckets, 0);
	for (int i = 0; i < after->nops; i++)
		cr_assert_eq(after->ops[i].result, before->ops[i].result, "operator %d moved", i);
	run_free(r0);
	run_free(r1);
}

/* A bucket closes once it holds bucket_bytes: with room for the first two
 * gradients and not the third, the four go out as two
 * buckets of two. */
Test(bucket, closes_at_bucket_bytes)
{
	Run *r0;
	Lowered *before = lower_at(dp_mlp, 25000000, STAGE_RECOMPUTE, &r0);
	int at[64];
	cr_assert_eq(gradient_reduces(before, at), 4);
	int64_t sz[4];
	for (int k = 0; k < 4; k++)
		sz[k] = value_bytes(&before->values[before->ops[at[k]].result]);
	/* completed in parameter order, after the backward walk: w1's, b1's,
	 * w2's, b2's gradients, 8192, 256, 4096, 64 bytes */
	cr_assert(sz[0] == 8192 && sz[1] == 256 && sz[2] == 4096 && sz[3] == 64, "%lld %lld %lld %lld",
	          (long long)sz[0], (long long)sz[1], (long long)sz[2], (long long)sz[3]);
	int64_t bytes = sz[0] + sz[1];   /* full after two */
	Run *r1;
	Lowered *after = lower_at(dp_mlp, bytes, STAGE_BUCKET, &r1);
	Buckets b = expect_bucketed(before, after, bytes);
	cr_assert_eq(b.buckets, 2, "%d buckets", b.buckets);
	cr_assert_eq(b.members, 4);
	run_free(r1);
	/* one byte more: the first holds three (12544 bytes: a bucket closes
	 * once it reaches bucket_bytes, so it may hold more, as DDP's do) */
	after = lower_at(dp_mlp, bytes + 1, STAGE_BUCKET, &r1);
	b = expect_bucketed(before, after, bytes + 1);
	cr_assert_eq(b.buckets, 1, "%d buckets", b.buckets);
	cr_assert_eq(b.members, 3);
	cr_assert_eq(op_bucket(after, b.first), 3);
	run_free(r1);
	run_free(r0);
}

/* Megatron dp 2 x mp 4 behind a LayerNorm: the weights' gradients are summed
 * over the dp pairs, the LayerNorm input's over the mp groups, read at once
 * by the LayerNorm's adjoint: buckets never mix groups, and that AllReduce
 * goes out before its reader. */
Test(bucket, groups_kept_apart)
{
	static const char text[] =
		"context {device_num: 8, parallel_mode: \"semi_auto_parallel\"}\n"
		"graph @mlp(%x: <Tensor[Float32], (16, 32)> = uniform(-1, 1), %t: <Tensor[Float32], (16, 32)> = zeros,\n"
		"           %g: <Parameter[Float32], (32,)> = ones, %be: <Parameter[Float32], (32,)> = zeros,\n"
		"           %w1: <Parameter[Float32], (32, 64)> = normal(0.1), %b1: <Parameter[Float32], (64,)> = zeros,\n"
		"           %w2: <Parameter[Float32], (64, 32)> = normal(0.1)) {\n"
		"  %n = LayerNorm(%x, %g, %be) {begin_norm_axis: -1, begin_params_axis: -1, in_strategy: ((2, 1), (1,), (1,))}\n"
		"  %h = MatMul(%n, %w1) {in_strategy: ((2, 1), (1, 4))}\n"
		"  %hb = BiasAdd(%h, %b1) {in_strategy: ((2, 4), (4,))}\n"
		"  %a = GeLU(%hb) {in_strategy: ((2, 4),)}\n"
		"  %y = MatMul(%a, %w2) {in_strategy: ((2, 4), (4, 1))}\n"
		"  %loss = MSELoss(%y, %t)\n  return %loss\n}\n"
		"train {loss: %loss, optimizer: SGD(learning_rate: 0.1)}\n";
	Run *r0, *r1;
	Lowered *before = lower_at(text, 25000000, STAGE_RECOMPUTE, &r0);
	Lowered *after = lower_at(text, 25000000, STAGE_BUCKET, &r1);
	Buckets b = expect_bucketed(before, after, 25000000);
	int at[64], n = gradient_reduces(after, at), groups = 0;
	/* how many distinct groups the gradient AllReduces go over */
	for (int k = 0; k < n; k++) {
		bool seen = false;
		for (int j = 0; j < k && !seen; j++)
			seen = redist_same_group(after->ops[at[j]].step, after->ops[at[k]].step);
		groups += !seen;
	}
	cr_assert_geq(groups, 2, "%d groups", groups);
	cr_assert_geq(b.buckets, 1);
	cr_assert_lt(b.members, n, "every AllReduce in a bucket");
	run_free(r0);
	run_free(r1);
}
