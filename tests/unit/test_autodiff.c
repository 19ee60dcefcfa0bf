/* test_autodiff.c: the backward pass (autodiff.c).
 *
 * Small models lowered and differentiated (lower_run, stopping after
 * differentiate): every trained parameter's gradient, complete, in its home
 * layout; a zero gradient where the loss does not reach; contributions
 * summed where a value is read twice; the seed; the adjoints of the
 * collectives the forward pass inserted (an AllGather's, of a partial
 * gradient, a ReduceScatter; of a complete one, a slice; a mean's, a
 * scale); clipping by the global norm. */
#include <criterion/criterion.h>
#include <string.h>

#include "harness.h"

static Lowered *diff(const char *text, Run **run)
{
	Run *r = compile(text);
	expect_clean(r);
	*run = r;
	return lower_run(r, NULL, STAGE_DIFFERENTIATE);
}

static int param(const Lowered *l, const char *name)
{
	for (int p = 0; p < l->nparams; p++)
		if (!strcmp(l->values[p].name, name))
			return p;
	cr_assert_fail("no parameter %%%s", name);
	return -1;
}

/* The operator computing value v, -1 none. */
static int producer(const Lowered *l, int v)
{
	for (int i = 0; i < l->nops; i++)
		if (l->ops[i].result == v)
			return i;
	return -1;
}

/* Whether value v is a gradient of the forward value named `of`. */
static bool grad_of(const Lowered *l, int v, const char *of)
{
	const char *n = l->values[v].name;
	size_t len = strlen(of);
	return !strncmp(n, "grad_", 5) && !strncmp(n + 5, of, len) && (n[5 + len] == 0 || n[5 + len] == '.');
}

static int count_grad(const Lowered *l, GradKind k)
{
	int n = 0;
	for (int i = l->nfwd; i < l->nops; i++)
		n += l->ops[i].grad == k;
	return n;
}

/* Megatron's MLP on 8 devices, dp 2 x mp 4, with a bias and a LayerNorm. */
static const char mlp[] =
	"context {device_num: 8, parallel_mode: \"semi_auto_parallel\"}\n"
	"graph @mlp(%x: <Tensor[Float32], (16, 32)> = uniform(-1, 1), %t: <Tensor[Float32], (16, 32)> = zeros,\n"
	"           %w1: <Parameter[Float32], (32, 64)> = normal(0.1), %b1: <Parameter[Float32], (64,)> = zeros,\n"
	"           %w2: <Parameter[Float32], (64, 32)> = normal(0.1), %g: <Parameter[Float32], (32,)> = ones,\n"
	"           %be: <Parameter[Float32], (32,)> = zeros) {\n"
	"  %h = MatMul(%x, %w1) {in_strategy: ((2, 1), (1, 4))}\n"
	"  %hb = BiasAdd(%h, %b1) {in_strategy: ((2, 4), (4,))}\n"
	"  %a = GeLU(%hb) {in_strategy: ((2, 4),)}\n"
	"  %y = MatMul(%a, %w2) {in_strategy: ((2, 4), (4, 1))}\n"
	"  %n = LayerNorm(%y, %g, %be) {begin_norm_axis: -1, begin_params_axis: -1, in_strategy: ((2, 1), (1,), (1,))}\n"
	"  %loss = MSELoss(%n, %t)\n"
	"  return %loss\n"
	"}\n"
	"train {loss: %loss, optimizer: SGD(learning_rate: 0.1)}\n";

/* Each Parameter's gradient: complete, laid out as the parameter lives, of
 * its piece's shape; the Tensors have none. */
Test(autodiff, every_parameter_gets_its_gradient_at_home)
{
	Run *r;
	Lowered *l = diff(mlp, &r);
	int nfwd = l->nfwd;
	cr_assert_gt(l->nops, nfwd, "no backward pass");
	for (int p = 0; p < l->nparams; p++) {
		const LValue *v = &l->values[p];
		if (!l->flat->g->values[p].type.is_param) {
			cr_assert_eq(l->grad[p], -1, "Tensor %%%s has a gradient", v->name);
			continue;
		}
		int g = l->grad[p];
		cr_assert_geq(g, 0, "%%%s has no gradient", v->name);
		const LValue *gv = &l->values[g];
		cr_assert(grad_of(l, g, v->name), "%%%s's gradient is %%%s", v->name, gv->name);
		cr_assert_eq(gv->layout.partial, 0u, "%%%s's gradient is partial", v->name);
		cr_assert(layout_equal(&gv->layout, &l->home[p]), "%%%s's gradient is not laid out at home", v->name);
		cr_assert_eq(gv->type.rank, v->type.rank);
		for (int d = 0; d < v->type.rank; d++)
			cr_assert_eq(gv->type.dims[d], v->type.dims[d], "%%%s dim %d", v->name, d);
		cr_assert_geq(producer(l, g), nfwd, "%%%s's gradient computed forward", v->name);
	}
	/* w1 is column-split (1, 4): its gradient too, and the two data-parallel
	 * halves are summed by an AllReduce over the dp axis */
	int w1 = param(l, "w1"), gw1 = l->grad[w1];
	cr_assert_eq(layout_dim_split(&l->values[gw1].layout, 1), 4);
	const LOp *sum = &l->ops[producer(l, gw1)];
	cr_assert(sum->step && sum->step->kind == STEP_ALL_REDUCE, "%%w1's gradient by %s", op_info[sum->op].name);
	run_free(r);
}

/* The seed: ones in the loss's layout, the backward pass's first operator. */
Test(autodiff, loss_gradient_is_the_seed)
{
	Run *r;
	Lowered *l = diff(mlp, &r);
	cr_assert_eq(count_grad(l, GRAD_SEED), 1);
	const LOp *seed = &l->ops[l->nfwd];
	cr_assert_eq(seed->grad, GRAD_SEED);
	cr_assert_eq(seed->nin, 0);
	cr_assert(grad_of(l, seed->result, "loss"), "the seed is %%%s", l->values[seed->result].name);
	cr_assert(layout_equal(&l->values[seed->result].layout, &l->values[l->loss].layout));
	cr_assert_eq(l->values[seed->result].type.rank, 0);
	/* the loss is the mean AllReduce of MSELoss's partial means (its default
	 * strategy splits the batch in 8): the seed is scaled by 1 / 8, then goes
	 * into MSELoss's adjoint */
	const LOp *scale = &l->ops[l->nfwd + 1];
	cr_assert(scale->grad == GRAD_SCALE && scale->in[0] == seed->result, "the seed read by a %s",
	          op_info[scale->op].name);
	cr_assert_float_eq(scale->scale, 1.0 / 8, 1e-15);
	const LOp *mse = &l->ops[l->nfwd + 2];
	cr_assert(mse->grad == GRAD_ADJOINT && l->ops[mse->of].op == OP_MSE_LOSS && mse->in[0] == scale->result);
	run_free(r);
}

/* A parameter the loss does not reach (it only feeds a returned value) gets
 * zeros; one the loss never reads either. */
Test(autodiff, unreached_parameter_gets_zero)
{
	Run *r;
	Lowered *l = diff("graph @m(%x: <Tensor[Float32], (4, 8)> = ones, %w: <Parameter[Float32], (8, 8)> = ones,\n"
	                  "         %u: <Parameter[Float32], (8, 8)> = ones, %v: <Parameter[Float32], (3,)> = ones) {\n"
	                  "  %y = MatMul(%x, %w)\n  %z = MatMul(%x, %u)\n"
	                  "  %loss = ReduceMean(%y) {axis: (0, 1)}\n  return %loss, %z\n}\n"
	                  "train {loss: %loss}\n", &r);
	static const char *const unreached[] = {"u", "v"};
	for (size_t i = 0; i < 2; i++) {
		int p = param(l, unreached[i]);
		cr_assert_geq(l->grad[p], 0);
		const LOp *o = &l->ops[producer(l, l->grad[p])];
		cr_assert_eq(o->grad, GRAD_ZERO, "%%%s's gradient from a %s", unreached[i], op_info[o->op].name);
		cr_assert_eq(o->nin, 0);
		cr_assert(layout_equal(&l->values[l->grad[p]].layout, &l->home[p]));
	}
	int w = param(l, "w");
	cr_assert_neq(l->ops[producer(l, l->grad[w])].grad, GRAD_ZERO);
	cr_assert_eq(count_grad(l, GRAD_ZERO), 2);
	/* nothing differentiates the MatMul whose result the loss never reads */
	for (int i = l->nfwd; i < l->nops; i++)
		cr_assert(!(l->ops[i].grad == GRAD_ADJOINT && l->values[l->ops[l->ops[i].of].result].name[0] == 'z'),
		          "an adjoint of %%z");
	run_free(r);
}

/* A value read twice (h by ReLU and Tanh) and a parameter read twice: their
 * contributions are summed, one GRAD_ACCUM each. */
Test(autodiff, value_read_twice_accumulates)
{
	Run *r;
	Lowered *l = diff("graph @m(%x: <Tensor[Float32], (4, 8)> = ones, %w: <Parameter[Float32], (8, 8)> = ones) {\n"
	                  "  %h = MatMul(%x, %w)\n  %a = ReLU(%h)\n  %b = Tanh(%h)\n  %s = Add(%a, %b)\n"
	                  "  %y = MatMul(%s, %w)\n  %loss = ReduceSum(%y) {axis: (0, 1)}\n  return %loss\n}\n"
	                  "train {loss: %loss}\n", &r);
	int h = 0, w = 0;
	for (int i = l->nfwd; i < l->nops; i++) {
		const LOp *o = &l->ops[i];
		if (o->grad != GRAD_ACCUM)
			continue;
		cr_assert_eq(o->nin, 2);
		cr_assert_eq(o->op, OP_ADD);
		for (int k = 0; k < 2; k++) {
			int p = producer(l, o->in[k]);
			cr_assert(p >= l->nfwd && p < i, "summand %d computed after the sum", k);
			cr_assert_eq(l->ops[p].grad, GRAD_ADJOINT);
		}
		if (grad_of(l, o->result, "h")) {
			h++;
			/* one from the ReLU, one from the Tanh */
			OpKind a = l->ops[l->ops[producer(l, o->in[0])].of].op, b = l->ops[l->ops[producer(l, o->in[1])].of].op;
			cr_assert((a == OP_RELU && b == OP_TANH) || (a == OP_TANH && b == OP_RELU), "%s and %s", op_info[a].name,
			          op_info[b].name);
		} else if (grad_of(l, o->result, "w")) {
			w++;
			cr_assert_eq(o->result, l->grad[param(l, "w")]);
		}
	}
	cr_assert_eq(h, 1, "%d sums for %%h", h);
	cr_assert_eq(w, 1, "%d sums for %%w", w);
	cr_assert_eq(count_grad(l, GRAD_ACCUM), 2);
	run_free(r);
}

/* r is batch-split and read whole by a MatMul that splits its columns over
 * 8 devices, or by a Softmax on every rank: the forward pass gathers r. The
 * MatMul's gradient for r is partial over the column axis, so the
 * AllGather's adjoint is one ReduceScatter back to r's slices (not an
 * AllReduce, then a slice); the Softmax's is complete, and the adjoint is a
 * free slice. */
static const char gathered[] =
	"context {device_num: 8, parallel_mode: \"semi_auto_parallel\"}\n"
	"graph @m(%%x: <Tensor[Float32], (64, 32)> = uniform(-1, 1), %%w1: <Parameter[Float32], (32, 32)> = normal(0.1),\n"
	"         %%w2: <Parameter[Float32], (32, 64)> = normal(0.1)) {\n"
	"  %%h = MatMul(%%x, %%w1) {in_strategy: ((8, 1), (1, 1))}\n"
	"  %%r = ReLU(%%h) {in_strategy: ((8, 1),)}\n"
	"%s"
	"  return %%loss\n"
	"}\n"
	"train {loss: %%loss}\n";

/* The gradients of r the backward pass redistributes: how many of each step. */
static void gathered_adjoint(const char *reader, StepKind want)
{
	char text[2048];
	snprintf(text, sizeof text, gathered, reader);
	Run *r;
	Lowered *l = diff(text, &r);
	int rv = -1, gathers = 0;
	for (int i = 0; i < l->nfwd; i++)
		if (l->ops[i].op == OP_RELU)
			rv = l->ops[i].result;
	cr_assert_geq(rv, 0);
	for (int i = 0; i < l->nfwd; i++)
		gathers += l->ops[i].step && l->ops[i].step->kind == STEP_ALL_GATHER && l->ops[i].in[0] == rv;
	cr_assert_eq(gathers, 1, "r is gathered %d times", gathers);
	int n = 0;
	for (int i = l->nfwd; i < l->nops; i++) {
		const LOp *o = &l->ops[i];
		if (!o->step || !grad_of(l, o->result, "r"))
			continue;
		const LValue *v = &l->values[o->result];
		cr_assert_eq(o->step->kind, want, "%%%s: step %d (%s)", v->name, o->step->kind, o->why);
		cr_assert_eq(layout_dim_split(&v->layout, 0), 8, "back to r's slices");
		cr_assert_eq(v->layout.partial, 0u);
		cr_assert_eq((bool)l->values[o->in[0]].layout.partial, want == STEP_REDUCE_SCATTER);
		n++;
	}
	cr_assert_eq(n, 1, "%d redistributions of r's gradient", n);
	run_free(r);
}

Test(autodiff, all_gather_of_partial_gradient_is_reduce_scatter)
{
	gathered_adjoint("  %y = MatMul(%r, %w2) {in_strategy: ((1, 1), (1, 8))}\n"
	                 "  %loss = ReduceMean(%y) {axis: (0, 1), in_strategy: ((1, 8),)}\n",
	                 STEP_REDUCE_SCATTER);
}

Test(autodiff, all_gather_of_complete_gradient_is_slice)
{
	gathered_adjoint("  %s = Softmax(%r) {axis: -1, in_strategy: ((1, 1),)}\n"
	                 "  %y = MatMul(%s, %w2) {in_strategy: ((1, 1), (1, 1))}\n"
	                 "  %loss = ReduceSum(%y) {axis: (0, 1), in_strategy: ((1, 1),)}\n",
	                 STEP_SLICE);
}

/* A mean over a batch-split dim is completed by a mean AllReduce; its
 * adjoint scales the gradient by 1 / 8. */
Test(autodiff, mean_all_reduce_adjoint_scales)
{
	Run *r;
	Lowered *l = diff("context {device_num: 8, parallel_mode: \"data_parallel\"}\n"
	                  "graph @m(%x: <Tensor[Float32], (64, 16)> = ones, %w: <Parameter[Float32], (16, 8)> = ones) {\n"
	                  "  %y = MatMul(%x, %w)\n  %loss = ReduceMean(%y) {axis: (0, 1)}\n  return %loss\n}\n"
	                  "train {loss: %loss}\n", &r);
	bool mean = false;
	for (int i = 0; i < l->nfwd; i++)
		mean |= l->ops[i].step && l->ops[i].step->kind == STEP_ALL_REDUCE && l->ops[i].step->op == REDUCE_MEAN_OP;
	cr_assert(mean, "no mean AllReduce forward");
	cr_assert_eq(count_grad(l, GRAD_SCALE), 1);
	for (int i = l->nfwd; i < l->nops; i++)
		if (l->ops[i].grad == GRAD_SCALE)
			cr_assert_float_eq(l->ops[i].scale, 1.0 / 8, 1e-15);
	/* the replicated weight's gradient: summed over the 8 ranks */
	int w = param(l, "w");
	const LOp *sum = &l->ops[producer(l, l->grad[w])];
	cr_assert(sum->step && sum->step->kind == STEP_ALL_REDUCE && sum->step->op == REDUCE_SUM_OP);
	run_free(r);
}

/* clip_global_norm: one squared norm over every gradient, made whole on
 * every rank, and each gradient scaled by it (the clipped ones are the
 * gradients the optimizer reads). */
Test(autodiff, clip_global_norm)
{
	char text[sizeof mlp + 64];
	strcpy(text, mlp);
	char *at = strstr(text, "optimizer:");
	memmove(at + 23, at, strlen(at) + 1);
	memcpy(at, "clip_global_norm: 1.0, ", 23);
	Run *r;
	Lowered *l = diff(text, &r);
	cr_assert_eq(r->m->train->clip_global_norm, 1.0);
	cr_assert_eq(count_grad(l, GRAD_SQNORM), 1);
	int sq = -1, nparam = 0;
	for (int i = l->nfwd; i < l->nops; i++)
		if (l->ops[i].grad == GRAD_SQNORM)
			sq = i;
	for (int p = 0; p < l->nparams; p++)
		nparam += l->grad[p] >= 0;
	cr_assert_eq(nparam, 5);
	cr_assert_eq(l->ops[sq].nin, nparam, "the norm of %d gradients of %d", l->ops[sq].nin, nparam);
	cr_assert_eq(l->values[l->ops[sq].result].type.rank, 0);
	cr_assert(l->values[l->ops[sq].result].layout.partial, "each rank's sum of squares is partial");
	cr_assert_eq(count_grad(l, GRAD_CLIP), nparam);
	for (int p = 0; p < l->nparams; p++) {
		if (l->grad[p] < 0)
			continue;
		int c = producer(l, l->grad[p]);
		const LOp *o = &l->ops[c];
		cr_assert_eq(o->grad, GRAD_CLIP, "%%%s's gradient from %s", l->values[p].name, op_info[o->op].name);
		cr_assert_gt(c, sq, "clipped before the norm");
		cr_assert_eq(o->nin, 2);
		cr_assert(layout_equal(&l->values[o->result].layout, &l->home[p]));
		const LValue *norm = &l->values[o->in[1]];
		cr_assert(norm->type.rank == 0 && norm->layout.partial == 0, "the norm is whole");
		bool in_sq = false;   /* the unclipped gradient was one of the norm's terms */
		for (int k = 0; k < l->ops[sq].nin; k++)
			in_sq |= l->ops[sq].in[k] == o->in[0];
		cr_assert(in_sq);
	}
	run_free(r);
}

/* Lamb: after clipping, one op sums per rank the squares of each trained
 * parameter's pieces and of its update's (in[] the parameters, then their
 * final gradients), a partial (2n) made whole on every rank by one
 * AllReduce, whose bytes the step's count includes. */
Test(autodiff, lamb_norms_one_all_reduce)
{
	char text[sizeof mlp + 64];
	strcpy(text, mlp);
	char *at = strstr(text, "SGD(learning_rate: 0.1)");
	memmove(at + 24, at + 23, strlen(at + 23) + 1);
	memcpy(at, "Lamb(learning_rate: 0.1)", 24);
	Run *r, *r_sgd;
	Lowered *l = diff(text, &r), *sgd = diff(mlp, &r_sgd);
	cr_assert_eq(r->m->train->optimizer, OPT_LAMB);
	cr_assert_eq(count_grad(l, GRAD_LAMB_NORMS), 1);
	cr_assert_eq(count_grad(sgd, GRAD_LAMB_NORMS), 0);
	cr_assert_eq(sgd->lamb_norms, -1);
	int ln = -1, n = 0;
	for (int i = l->nfwd; i < l->nops; i++)
		if (l->ops[i].grad == GRAD_LAMB_NORMS)
			ln = i;
	const LOp *o = &l->ops[ln];
	for (int p = 0; p < l->nparams; p++)
		if (l->grad[p] >= 0) {
			cr_assert_eq(o->in[n], p, "input %d is %%%s", n, l->values[o->in[n]].name);
			n++;
		}
	cr_assert_eq(n, 5);
	cr_assert_eq(o->nin, 2 * n);
	for (int p = 0, k = 0; p < l->nparams; p++)
		if (l->grad[p] >= 0)
			cr_assert_eq(o->in[n + k++], l->grad[p], "not %%%s's final gradient", l->values[p].name);
	const LValue *partial = &l->values[o->result];
	cr_assert(partial->type.rank == 1 && partial->type.dims[0] == 2 * n);
	cr_assert(partial->layout.partial, "each rank's sums are partial");
	cr_assert_geq(l->lamb_norms, 0);
	const LOp *sum = &l->ops[producer(l, l->lamb_norms)];
	cr_assert(sum->step && sum->step->kind == STEP_ALL_REDUCE && sum->step->op == REDUCE_SUM_OP);
	cr_assert_eq(sum->in[0], o->result);
	cr_assert_eq(l->values[l->lamb_norms].layout.partial, 0u, "the norms are whole");
	cr_assert_gt(sum->bytes, 0);
	cr_assert_eq(l->comm_bytes, sgd->comm_bytes + sum->bytes, "Lamb sends %lld, SGD %lld, the AllReduce %lld",
	             (long long)l->comm_bytes, (long long)sgd->comm_bytes, (long long)sum->bytes);
	run_free(r);
	run_free(r_sgd);
}

/* An index carries no gradient: Gather differentiates its table only. */
Test(autodiff, indices_carry_no_gradient)
{
	Run *r;
	Lowered *l = diff("graph @m(%i: <Tensor[Int32], (6,)> = randint(0, 16), %t: <Parameter[Float32], (16, 8)> = ones) {\n"
	                  "  %g = Gather(%t, %i) {axis: 0}\n  %loss = ReduceSum(%g) {axis: (0, 1)}\n  return %loss\n}\n"
	                  "train {loss: %loss}\n", &r);
	int adj = 0;
	for (int i = l->nfwd; i < l->nops; i++)
		if (l->ops[i].grad == GRAD_ADJOINT && l->ops[l->ops[i].of].op == OP_GATHER) {
			cr_assert_eq(l->ops[i].k, 0, "a gradient of the indices");
			adj++;
		}
	cr_assert_eq(adj, 1);
	cr_assert_eq(l->grad[param(l, "i")], -1);
	cr_assert_geq(l->grad[param(l, "t")], 0);
	run_free(r);
}

static bool collective(OpKind op)
{
	return op == OP_ALL_REDUCE || op == OP_ALL_GATHER || op == OP_REDUCE_SCATTER || op == OP_ALL_TO_ALL;
}

/* Megatron's vocab-parallel embedding (tests/e2e/vocab_embedding.ir): the
 * table split on its rows 4 ways, the ids on their batch 2 ways. The lookup
 * sends exactly one AllReduce (over the 4 table ranks: 2 x 3/4 of the rank's
 * (4, 4, 16) piece), and its consumers, batch 2 ways, take it as it is: the
 * forward pass's only other collective is the loss's mean. Backward, each
 * rank scatters its own rows' gradient: the only collectives are the
 * parameters' data-parallel AllReduces, one each, the table's included. */
Test(autodiff, vocab_parallel_embedding_sends_one_all_reduce)
{
	Run *r;
	Lowered *l = diff(
		"context {device_num: 8, parallel_mode: \"semi_auto_parallel\"}\n"
		"graph @emb(%ids: <Tensor[Int32], (8, 4)> = randint(0, 64), %labels: <Tensor[Int32], (32,)> = randint(0, 8),\n"
		"           %wte: <Parameter[Float32], (64, 16)> = normal(0.3), %wpe: <Parameter[Float32], (4, 16)> = normal(0.3),\n"
		"           %gamma: <Parameter[Float32], (16,)> = ones, %beta: <Parameter[Float32], (16,)> = zeros,\n"
		"           %w: <Parameter[Float32], (16, 8)> = normal(0.3)) {\n"
		"  %tok = Gather(%wte, %ids) {axis: 0, in_strategy: ((4, 1), (2, 1))}\n"
		"  %e = Add(%tok, %wpe) {in_strategy: ((2, 1, 1), (1, 1))}\n"
		"  %h = LayerNorm(%e, %gamma, %beta) {begin_norm_axis: 2, begin_params_axis: 2, in_strategy: ((2, 1, 1), (1,), (1,))}\n"
		"  %f = Reshape(%h) {shape: (32, 16)}\n"
		"  %logits = MatMul(%f, %w) {in_strategy: ((2, 1), (1, 1))}\n"
		"  %loss = SparseSoftmaxCrossEntropyWithLogits(%logits, %labels) {in_strategy: ((2, 1), (2,))}\n"
		"  return %loss\n}\n"
		"train {loss: %loss, optimizer: SGD(learning_rate: 0.5)}\n",
		&r);
	int gather = -1, fwd = 0, lookup = 0;
	for (int i = 0; i < l->nfwd; i++) {
		const LOp *o = &l->ops[i];
		if (o->op == OP_GATHER)
			gather = o->result;
		if (!collective(o->op))
			continue;
		fwd++;
		if (o->in[0] == gather) {
			cr_assert_eq(o->op, OP_ALL_REDUCE, "the lookup completed by a %s", op_info[o->op].name);
			cr_assert_eq(o->bytes, 2 * 4 * 4 * 16 * 4 * 3 / 4, "the lookup's AllReduce sends %lld bytes",
			             (long long)o->bytes);
			lookup++;
		}
	}
	cr_assert_eq(lookup, 1, "%d collectives after the lookup", lookup);
	cr_assert_eq(fwd, 2, "%d collectives in the forward pass (the lookup's and the loss's)", fwd);
	int bwd = 0;
	for (int i = l->nfwd; i < l->nops; i++) {
		const LOp *o = &l->ops[i];
		if (!collective(o->op))
			continue;
		bwd++;
		cr_assert_eq(o->op, OP_ALL_REDUCE, "a %s in the backward pass", op_info[o->op].name);
		bool reduces_a_grad = false;
		for (int p = 0; p < l->nparams; p++)
			reduces_a_grad |= l->grad[p] == o->result;
		cr_assert(reduces_a_grad, "the backward pass's %%%s is no parameter's reduction", l->values[o->result].name);
	}
	cr_assert_eq(bwd, 5, "%d collectives in the backward pass (one a parameter)", bwd);
	run_free(r);
}
