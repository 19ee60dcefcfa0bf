/* test_recompute.c: forward operators recomputed in the backward pass.
 *
 * Models go through the driver's pipeline (lower, differentiate, recompute,
 * bucket_gradients, fuse_operators). The clones sit in the backward pass
 * before their first reader; no backward operator reads a recomputed
 * operator's forward value, through in[] or through an adjoint's ops[of];
 * the slab shrinks where activations dominate; a recomputed collective's
 * bytes are sent again, and only those. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

/* The pipeline up to fusion; recompute_forward with marks when `on`
 * (*marks: recompute_marks' answer, which the caller frees). */
static Lowered *lower_model(const char *name, const char *text, bool on, bool **marks, Run **run)
{
	Run *r = run_pipeline(name, text, strlen(text), STAGE_DIFFERENTIATE, NULL, 0);
	expect_clean(r);
	Lowered *l = r->c.low;
	bool *m = recompute_marks(l);
	if (on)
		recompute_forward(l, m);
	run_resume(r, STAGE_BUCKET, STAGE_FUSE);
	expect_clean(r);
	if (marks)
		*marks = m;
	else
		free(m);
	*run = r;
	return l;
}

static char *slurp(const char *path)
{
	size_t len;
	char *t = read_file(path, &len);
	cr_assert_not_null(t, "cannot read %s (run the tests from the repository root)", path);
	return t;
}

/* Every clone before its first reader, every reader of a marked operator's
 * value a clone or a forward operator. */
static void expect_recomputed(const Lowered *l, const bool *marked, const char *what)
{
	int nclones = 0;
	for (int i = 0; i < l->nops; i++) {
		const LOp *o = &l->ops[i];
		if (op_recomputes(l, i) < 0)
			continue;
		nclones++;
		cr_assert_geq(i, l->nfwd, "%s: clone %%%s in the forward graph", what, l->values[o->result].name);
		cr_assert_lt(op_recomputes(l, i), l->nfwd, "%s: %%%s recomputes no forward operator", what,
		             l->values[o->result].name);
		cr_assert_eq(o->grad, GRAD_NONE);
		cr_assert_eq(unfused(l, i)->op, unfused(l, op_recomputes(l, i))->op);   /* as written: fusion may differ */
		if (op_shadow(l, i)) {   /* a kept operator, not run: its adjoint, after it, reads recomputed operands through it */
			cr_assert(!marked[op_recomputes(l, i)], "%s: shadow of a recomputed %%%s", what, l->values[o->result].name);
			cr_assert_eq(o->result, l->ops[op_recomputes(l, i)].result);
			int adjoint = -1;
			for (int j = i + 1; j < l->nops && adjoint < 0; j++)
				adjoint = l->ops[j].grad == GRAD_ADJOINT && l->ops[j].of == i ? j : -1;
			cr_assert_gt(adjoint, i, "%s: no adjoint reads the shadow of %%%s", what, l->values[o->result].name);
			continue;
		}
		int first = -1;
		for (int j = 0; j < l->nops && first < 0; j++) {
			const LOp *u = &l->ops[j];
			for (int k = 0; k < u->nin; k++)
				first = u->in[k] == o->result ? j : first;
			if (u->grad == GRAD_ADJOINT && u->of == i)
				first = j;
			if (l->fusion && l->fusion[i].into == j)   /* the fused kernel computing it */
				first = j;
		}
		cr_assert_gt(first, i, "%s: %%%s is read at %d, made at %d", what, l->values[o->result].name, first, i);
	}
	cr_assert_gt(nclones, 0, "%s: nothing recomputed", what);
	for (int j = 0; j < l->nfwd; j++) {
		if (!marked[j])
			continue;
		int v = l->ops[j].result;
		for (int i = l->nfwd; i < l->nops; i++) {
			const LOp *o = &l->ops[i];
			for (int k = 0; k < o->nin; k++)
				cr_assert_neq(o->in[k], v, "%s: backward %%%s reads %%%s", what, l->values[o->result].name,
				              l->values[v].name);
			if (o->grad != GRAD_ADJOINT)
				continue;
			const LOp *f = &l->ops[o->of];
			cr_assert_neq(f->result, v, "%s: adjoint %%%s reads %%%s's result", what, l->values[o->result].name,
			              l->values[v].name);
			for (int k = 0; k < f->nin; k++)
				cr_assert_neq(f->in[k], v, "%s: adjoint %%%s reads %%%s", what, l->values[o->result].name,
				              l->values[v].name);
		}
	}
}

/* A two-layer MLP with recompute: true on its hidden operators. */
static const char mlp[] =
	"graph @mlp(%x: <Tensor[Float32], (64, 16)> = uniform(-1, 1), %t: <Tensor[Float32], (64, 16)> = zeros,\n"
	"           %w1: <Parameter[Float32], (16, 32)> = normal(0.1), %b1: <Parameter[Float32], (32,)> = zeros,\n"
	"           %w2: <Parameter[Float32], (32, 16)> = normal(0.1)) {\n"
	"  %h = MatMul(%x, %w1) {recompute: true}\n"
	"  %hb = BiasAdd(%h, %b1) {recompute: true}\n"
	"  %a = GeLU(%hb) {recompute: true}\n"
	"  %s = Softmax(%a) {axis: -1, recompute: true}\n"
	"  %y = MatMul(%s, %w2)\n"
	"  %loss = MSELoss(%y, %t)\n"
	"  return %loss\n"
	"}\n"
	"train {loss: %loss, optimizer: SGD(learning_rate: 0.1)}\n";

Test(recompute, attribute_marks_clones_before_readers)
{
	Run *r;
	bool *marks;
	Lowered *l = lower_model("mlp.ir", mlp, true, &marks, &r);
	cr_assert_not_null(marks);
	int n = 0;
	for (int i = 0; i < l->nfwd; i++)
		n += marks[i];
	cr_assert_eq(n, 4, "%d operators marked", n);
	expect_recomputed(l, marks, "mlp");
	free(marks);
	run_free(r);
}

/* recompute: false is no; on a Call it is refused (the train block recomputes layers). */
Test(recompute, attribute_false_and_call)
{
	Run *r = compile("graph @f(%x: <Tensor[Float32], (4,)>) {\n  %y = ReLU(%x) {recompute: false}\n  return %y\n}\n"
	                 "graph @g(%x: <Tensor[Float32], (4,)>) {\n  %y = Call(%x) {graph: @f, recompute: true}\n"
	                 "  return %y\n}\n");
	cr_assert_eq(r->d.nerrors, 1, "%s", msgs(r));
	cr_assert(strstr(msgs(r), "Call has no attribute 'recompute'"), "%s", msgs(r));
	run_free(r);
}

/* The train block's recompute: every operator but the cut points (each
 * layer's residual sums, which every path to the loss passes through), the
 * entry's own operators before the first layer, and the loss. */
Test(recompute, train_key_marks_layers_but_their_outputs)
{
	char *text = slurp("tests/e2e/recompute_layers.ir");
	Run *r;
	bool *marks;
	Lowered *l = lower_model("recompute_layers.ir", text, true, &marks, &r);
	const Graph *g = l->flat->g;
	for (int i = 0; i < l->nfwd; i++) {
		const LOp *o = &l->ops[i];
		if (o->node < 0)
			continue;
		const char *name = g->values[g->nodes[o->node].result].name;
		bool layer = !strncmp(name, "y1.", 3) || !strncmp(name, "y2.", 3);
		bool output = !strcmp(name, "y1.y") || !strcmp(name, "y2.y") || !strcmp(name, "y1.res") ||
		              !strcmp(name, "y2.res");
		cr_assert_eq(marks[i], layer && !output, "%%%s: marked %d", name, marks[i]);
	}
	expect_recomputed(l, marks, "recompute_layers");
	free(marks);
	free(text);
	run_free(r);
}

/* The k-split MatMul's AllReduce and the attention's AllGather inside each
 * layer are recomputed: comm_bytes grows by their bytes exactly, and no
 * bucket takes them. */
Test(recompute, recomputed_collectives_send_again)
{
	char *text = slurp("tests/e2e/recompute_layers.ir");
	Run *r0, *r1;
	Lowered *plain = lower_model("recompute_layers.ir", text, false, NULL, &r0);
	Lowered *re = lower_model("recompute_layers.ir", text, true, NULL, &r1);
	int64_t again = 0;
	int reduces = 0;
	for (int i = 0; i < re->nops; i++) {
		const LOp *o = &re->ops[i];
		if (op_recomputes(re, i) < 0)
			continue;
		again += o->bytes;
		reduces += o->op == OP_ALL_REDUCE;
		cr_assert_eq(op_bucket(re, i), 0, "a recomputed %s in a bucket", op_info[o->op].name);
		cr_assert_eq(o->bytes, re->ops[op_recomputes(re, i)].bytes);
	}
	cr_assert_eq(reduces, 2, "%d AllReduces recomputed", reduces);
	cr_assert_gt(again, 0);
	cr_assert_eq(re->comm_bytes, plain->comm_bytes + again, "%lld = %lld + %lld", (long long)re->comm_bytes,
	             (long long)plain->comm_bytes, (long long)again);
	cr_assert_eq(re->fwd_bytes, plain->fwd_bytes);
	free(text);
	run_free(r0);
	run_free(r1);
}

/* Four wide layers on a large batch: their hidden activations dominate, and
 * recomputing them takes the slab down. */
static const char wide[] =
	"graph @layer(%x: <Tensor[Float32], (2048, 64)>, %w1: <Tensor[Float32], (64, 256)>,\n"
	"             %w2: <Tensor[Float32], (256, 64)>) {\n"
	"  %h = MatMul(%x, %w1)\n  %a = ReLU(%h)\n  %y = MatMul(%a, %w2)\n  %o = Add(%x, %y)\n  return %o\n}\n"
	"graph @net(%x: <Tensor[Float32], (2048, 64)> = uniform(-1, 1), %t: <Tensor[Float32], (2048, 64)> = zeros,\n"
	"           %a1: <Parameter[Float32], (64, 256)> = normal(0.1), %b1: <Parameter[Float32], (256, 64)> = normal(0.1),\n"
	"           %a2: <Parameter[Float32], (64, 256)> = normal(0.1), %b2: <Parameter[Float32], (256, 64)> = normal(0.1),\n"
	"           %a3: <Parameter[Float32], (64, 256)> = normal(0.1), %b3: <Parameter[Float32], (256, 64)> = normal(0.1),\n"
	"           %a4: <Parameter[Float32], (64, 256)> = normal(0.1), %b4: <Parameter[Float32], (256, 64)> = normal(0.1)) {\n"
	"  %l1 = Call(%x, %a1, %b1) {graph: @layer}\n  %l2 = Call(%l1, %a2, %b2) {graph: @layer}\n"
	"  %l3 = Call(%l2, %a3, %b3) {graph: @layer}\n  %l4 = Call(%l3, %a4, %b4) {graph: @layer}\n"
	"  %loss = MSELoss(%l4, %t)\n  return %loss\n}\n"
	"train {loss: %loss, optimizer: SGD(learning_rate: 0.1), recompute: true}\n";

Test(recompute, slab_shrinks_when_activations_dominate)
{
	Run *r0, *r1;
	bool *marks;
	Lowered *plain = lower_model("wide.ir", wide, false, NULL, &r0);
	Lowered *re = lower_model("wide.ir", wide, true, &marks, &r1);
	expect_recomputed(re, marks, "wide");
	Program *p0 = emit_plan(plain, "wide.ir"), *p1 = emit_plan(re, "wide.ir");
	int64_t s0 = emit_slab_bytes(p0), s1 = emit_slab_bytes(p1);
	/* four layers' h and a (2 MB each) were alive at the turn; now one layer's at a time */
	cr_assert_lt(s1 * 10, s0 * 7, "slab %lld with recompute, %lld without", (long long)s1, (long long)s0);
	cr_assert_eq(re->comm_bytes, plain->comm_bytes);
	emit_free(p0);
	emit_free(p1);
	free(marks);
	run_free(r0);
	run_free(r1);
}

/* Without marks nothing changes: the same operators, in the same order. */
Test(recompute, no_marks_no_change)
{
	static const char text[] =
		"graph @m(%x: <Tensor[Float32], (8, 4)> = ones, %w: <Parameter[Float32], (4, 4)> = ones) {\n"
		"  %y = MatMul(%x, %w)\n  %loss = ReduceMean(%y) {axis: (0, 1)}\n  return %loss\n}\n"
		"train {loss: %loss}\n";
	Run *r0, *r1;
	Lowered *a = lower_model("m.ir", text, false, NULL, &r0);
	bool *marks;
	Lowered *b = lower_model("m.ir", text, true, &marks, &r1);
	cr_assert_null(marks);
	cr_assert_eq(a->nops, b->nops);
	for (int i = 0; i < a->nops; i++)
		cr_assert(a->ops[i].op == b->ops[i].op && op_recomputes(a, i) == -1 && op_recomputes(b, i) == -1);
	run_free(r0);
	run_free(r1);
}
