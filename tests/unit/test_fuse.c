/* test_fuse.c: operators a later kernel computes as it reads (fuse.c).
 *
 * Small models lowered up to fusion (lower_run) and, where it says more,
 * just before it: a Mul by a scalar read only by a Softmax rides on it
 * (fused_scale_operand), a BiasAdd on the unary operator or the residual Add
 * that first reads it, a mask's Add (and its scaling Mul) on a last-axis
 * Softmax (fused_mask_operand); elementwise chains run as one call
 * (chain_members); a Transpose keeping the last axis between BatchMatMuls
 * needs no copy (strided_by, value_strides). And where none of that may
 * happen: a result someone else reads, a mask on another axis, a Softmax
 * split along its axis, a Transpose moving the last axis. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"

static Lowered *fused(const char *text, Run **run)
{
	Run *r = compile(text);
	expect_clean(r);
	*run = r;
	return lower_run(r, NULL, STAGE_FUSE);
}

/* The position of the forward operator computing %name. */
static int op_named(const Lowered *l, const char *name)
{
	for (int i = 0; i < l->nfwd; i++)
		if (!strcmp(l->values[l->ops[i].result].name, name))
			return i;
	cr_assert_fail("no operator computes %%%s", name);
	return -1;
}

static const LOp *op_of(const Lowered *l, const char *name)
{
	return &l->ops[op_named(l, name)];
}

/* Nothing fused, chained or folded. */
static void expect_unfused(const Lowered *l, const char *name)
{
	const LOp *o = op_of(l, name);
	cr_assert(!o->fused && !o->fused_writes && o->fuse_from < 0 && o->chain < 0 && o->fold == FOLD_NONE,
	          "%%%s: fused %d writes %d from %d chain %d fold %d", name, o->fused, o->fused_writes, o->fuse_from,
	          o->chain, o->fold);
}

static void expect_carries(const Lowered *l, const char *carrier, const char *from, bool writes)
{
	const LOp *c = op_of(l, carrier), *f = op_of(l, from);
	cr_assert_eq(c->fuse_from, op_named(l, from), "%%%s carries %d, not %%%s", carrier, c->fuse_from, from);
	cr_assert(f->fused, "%%%s is not fused", from);
	cr_assert_eq(f->fused_writes, writes, "%%%s fused_writes %d", from, f->fused_writes);
}

#define GRAPH(params, body, rets) "graph @m(" params ") {\n" body "  return " rets "\n}\n"

/* attention's scaling: the Mul rides on the Softmax, whichever operand the
 * scale is; before fusion, nothing. */
Test(fuse, scale_into_softmax)
{
	static const char text[] = GRAPH("%x: <Tensor[Float32], (4, 16, 16)>, %s: <Tensor[Float32], (1,)>",
	                                 "  %a = Mul(%x, %s)\n  %p = Softmax(%a) {axis: -1}\n"
	                                 "  %b = Mul(%s, %x)\n  %q = Softmax(%b) {axis: -1}\n",
	                                 "%p, %q");
	Run *r = compile(text);
	expect_clean(r);
	Lowered *l = lower_run(r, NULL, STAGE_BUCKET);
	cr_assert_eq(op_of(l, "p")->fuse_from, -1);
	cr_assert_eq(fused_scale_operand(l, op_of(l, "p")), -1);
	run_free(r);
	l = fused(text, &r);
	expect_carries(l, "p", "a", false);
	expect_carries(l, "q", "b", false);
	cr_assert_eq(fused_scale_operand(l, op_of(l, "p")), 1);
	cr_assert_eq(fused_scale_operand(l, op_of(l, "q")), 0);
	cr_assert_eq(fused_mask_operand(l, op_of(l, "p")), -1);
	cr_assert_eq(op_of(l, "a")->chain, -1, "a fused Mul in no chain");
	run_free(r);
}

/* Training: the Mul's adjoint reads its operands, not its result, so the
 * forward Mul still rides on the Softmax, writing nothing. */
Test(fuse, scale_into_softmax_training)
{
	Run *r;
	Lowered *l = fused(GRAPH("%x: <Tensor[Float32], (4, 16)> = ones, %s: <Tensor[Float32], ()> = ones, "
	                         "%w: <Parameter[Float32], (16, 16)> = ones",
	                         "  %h = MatMul(%x, %w)\n  %a = Mul(%h, %s)\n  %p = Softmax(%a) {axis: -1}\n"
	                         "  %loss = ReduceSum(%p) {axis: (0, 1)}\n", "%loss")
	                   "train {loss: %loss}\n", &r);
	expect_carries(l, "p", "a", false);
	cr_assert_eq(fused_scale_operand(l, op_of(l, "p")), 1);
	run_free(r);
}

/* The Mul's result read by someone else, or a Mul that does not scale by one
 * element: no fusion. */
Test(fuse, scale_not_fused_when_read_elsewhere)
{
	Run *r;
	Lowered *l = fused(GRAPH("%x: <Tensor[Float32], (4, 16)>, %s: <Tensor[Float32], (1,)>, %y: <Tensor[Float32], (4, 16)>",
	                         "  %a = Mul(%x, %s)\n  %p = Softmax(%a) {axis: -1}\n  %n = Neg(%a)\n"
	                         "  %b = Mul(%x, %y)\n  %q = Softmax(%b) {axis: -1}\n",
	                         "%p, %n, %q"),
	                   &r);
	cr_assert_eq(op_of(l, "p")->fuse_from, -1);
	cr_assert(!op_of(l, "a")->fused);
	cr_assert_eq(fused_scale_operand(l, op_of(l, "p")), -1);
	cr_assert_eq(op_of(l, "q")->fuse_from, -1, "x * y is no scaling");
	cr_assert(!op_of(l, "b")->fused);
	run_free(r);
}

/* A Softmax along an axis it holds whole reads x * scale, the last axis or
 * not; split along its axis (its statistics completed across ranks), it
 * does not. */
Test(fuse, scale_on_other_axis_and_split_softmax)
{
	Run *r;
	Lowered *l = fused(GRAPH("%x: <Tensor[Float32], (4, 16)>, %s: <Tensor[Float32], (1,)>",
	                         "  %a = Mul(%x, %s)\n  %p = Softmax(%a) {axis: 0}\n", "%p"),
	                   &r);
	expect_carries(l, "p", "a", false);
	run_free(r);
	l = fused("context {device_num: 8, parallel_mode: \"semi_auto_parallel\"}\n"
	          GRAPH("%x: <Tensor[Float32], (4, 16)>, %s: <Tensor[Float32], (1,)>",
	                "  %a = Mul(%x, %s) {in_strategy: ((1, 8), (1,))}\n"
	                "  %p = Softmax(%a) {axis: -1, in_strategy: ((1, 8),)}\n", "%p"),
	          &r);
	cr_assert_not_null(op_of(l, "p")->lay, "the Softmax is not split along its axis");
	cr_assert_eq(op_of(l, "p")->fuse_from, -1);
	cr_assert(!op_of(l, "a")->fused);
	run_free(r);
}

/* BiasAdd then ReLU: one kernel; the sum has no buffer in inference, and is
 * written in training, where the ReLU's adjoint reads it. */
Test(fuse, bias_add_relu)
{
	static const char text[] =
		GRAPH("%x: <Tensor[Float32], (8, 16)> = ones, %w: <Parameter[Float32], (16, 32)> = ones, "
		      "%b: <Parameter[Float32], (32,)> = ones",
		      "  %h = MatMul(%x, %w)\n  %hb = BiasAdd(%h, %b)\n  %r = ReLU(%hb)\n"
		      "  %loss = ReduceSum(%r) {axis: (0, 1)}\n", "%loss");
	Run *r;
	Lowered *l = fused(text, &r);
	expect_carries(l, "r", "hb", false);
	run_free(r);
	char train[1024];
	snprintf(train, sizeof train, "%strain {loss: %%loss}\n", text);
	l = fused(train, &r);
	expect_carries(l, "r", "hb", true);
	run_free(r);
}

/* A BiasAdd first read by a MatMul (no elementwise operator) stays. */
Test(fuse, bias_add_before_matmul_stays)
{
	Run *r;
	Lowered *l = fused(GRAPH("%x: <Tensor[Float32], (8, 16)>, %b: <Tensor[Float32], (16,)>, %w: <Tensor[Float32], (16, 4)>",
	                         "  %hb = BiasAdd(%x, %b)\n  %y = MatMul(%hb, %w)\n  %r = ReLU(%hb)\n", "%y, %r"),
	                   &r);
	expect_unfused(l, "hb");
	cr_assert_eq(op_of(l, "y")->fuse_from, -1);
	cr_assert_eq(op_of(l, "r")->fuse_from, -1, "the ReLU reads hb second");
	run_free(r);
}

/* A BiasAdd then the residual Add: one kernel adds both; an Add that
 * broadcasts is no residual. */
Test(fuse, bias_add_residual)
{
	Run *r;
	Lowered *l = fused(GRAPH("%x: <Tensor[Float32], (8, 16)>, %f: <Tensor[Float32], (8, 16)>, "
	                         "%b: <Tensor[Float32], (16,)>, %v: <Tensor[Float32], (16,)>",
	                         "  %fb = BiasAdd(%f, %b)\n  %o = Add(%x, %fb)\n"
	                         "  %gb = BiasAdd(%f, %b)\n  %p = Add(%gb, %v)\n",
	                         "%o, %p"),
	                   &r);
	expect_carries(l, "o", "fb", false);
	cr_assert(!op_of(l, "gb")->fused || op_of(l, "gb")->chain >= 0, "a broadcasting Add carries the BiasAdd");
	cr_assert_eq(op_of(l, "p")->fuse_from, -1);
	run_free(r);
}

/* softmax(x * scale + mask), the mask broadcast: the Add rides on the
 * Softmax, the Mul on the Add. Along axis 1, nothing. */
Test(fuse, masked_softmax)
{
	static const char text[] =
		GRAPH("%x: <Tensor[Float32], (4, 16, 16)>, %s: <Tensor[Float32], (1,)>, %mask: <Tensor[Float32], (16, 16)>",
		      "  %a = Mul(%x, %s)\n  %m = Add(%a, %mask)\n  %p = Softmax(%m) {axis: %d}\n", "%p");
	char text0[1024];
	snprintf(text0, sizeof text0, "%s", text);
	char *at = strstr(text0, "%d");
	at[0] = '-';
	at[1] = '1';
	Run *r;
	Lowered *l = fused(text0, &r);
	expect_carries(l, "p", "m", false);
	expect_carries(l, "m", "a", false);
	cr_assert_eq(fused_mask_operand(l, op_of(l, "p")), 1);
	cr_assert_eq(fused_scale_operand(l, op_of(l, "p")), 1);
	run_free(r);
	at[0] = ' ';
	at[1] = '1';
	l = fused(text0, &r);
	cr_assert_eq(op_of(l, "p")->fuse_from, -1);
	cr_assert_eq(fused_mask_operand(l, op_of(l, "p")), -1);
	expect_unfused(l, "m");
	expect_unfused(l, "a");
	run_free(r);
}

/* A mask Add without a scale: the Add alone, its mask the first operand. */
Test(fuse, masked_softmax_without_scale)
{
	Run *r;
	Lowered *l = fused(GRAPH("%x: <Tensor[Float32], (4, 16)>, %mask: <Tensor[Float32], (16,)>",
	                         "  %m = Add(%mask, %x)\n  %p = Softmax(%m) {axis: -1}\n", "%p"),
	                   &r);
	expect_carries(l, "p", "m", false);
	cr_assert_eq(op_of(l, "m")->fuse_from, -1);
	cr_assert_eq(fused_mask_operand(l, op_of(l, "p")), 0);
	cr_assert_eq(fused_scale_operand(l, op_of(l, "p")), -1);
	run_free(r);
}

/* Exp, Mul by a last-axis vector, Tanh, each first read by the next: one
 * chain ending at the Tanh, the others with no buffer. */
Test(fuse, elementwise_chain)
{
	Run *r;
	Lowered *l = fused(GRAPH("%x: <Tensor[Float32], (8, 16)>, %v: <Tensor[Float32], (16,)>",
	                         "  %a = Exp(%x)\n  %b = Mul(%a, %v)\n  %c = Tanh(%b)\n", "%c"),
	                   &r);
	int end = op_named(l, "c"), m[MAX_CHAIN];
	int n = chain_members(l, end, m);
	cr_assert_eq(n, 3, "a chain of %d", n);
	cr_assert(m[0] == op_named(l, "a") && m[1] == op_named(l, "b") && m[2] == end);
	for (int k = 0; k < 3; k++)
		cr_assert_eq(l->ops[m[k]].chain, end);
	cr_assert(op_of(l, "a")->fused && !op_of(l, "a")->fused_writes);
	cr_assert(op_of(l, "b")->fused && !op_of(l, "b")->fused_writes);
	cr_assert(!op_of(l, "c")->fused, "the chain's last operator makes the call");
	int ins[2 * MAX_CHAIN];
	cr_assert_eq(chain_operands(l, m, n, ins), 2);
	cr_assert_str_eq(l->values[ins[0]].name, "x");
	cr_assert_str_eq(l->values[ins[1]].name, "v");
	cr_assert_eq(chain_members(l, op_named(l, "a"), m), 0, "no chain ends at its first member");
	run_free(r);
}

/* A member's result read outside the chain: read after the chain, it is
 * stored too; read between two members, the chain stops before it. */
Test(fuse, chain_with_outside_readers)
{
	Run *r;
	Lowered *l = fused(GRAPH("%x: <Tensor[Float32], (8, 16)>, %y: <Tensor[Float32], (8, 16)>",
	                         "  %a = Exp(%x)\n  %b = Mul(%a, %y)\n  %c = Tanh(%b)\n  %d = Sqrt(%a)\n", "%c, %d"),
	                   &r);
	int m[MAX_CHAIN];
	cr_assert_eq(chain_members(l, op_named(l, "c"), m), 3);
	cr_assert(op_of(l, "a")->fused && op_of(l, "a")->fused_writes, "a is read by the Sqrt after the chain");
	cr_assert(op_of(l, "b")->fused && !op_of(l, "b")->fused_writes);
	cr_assert_eq(op_of(l, "d")->chain, -1);
	run_free(r);
	l = fused(GRAPH("%x: <Tensor[Float32], (8, 16)>, %y: <Tensor[Float32], (8, 16)>",
	                "  %a = Exp(%x)\n  %b = Mul(%a, %y)\n  %d = Sqrt(%a)\n  %c = Tanh(%b)\n", "%c, %d"),
	          &r);
	int end = op_named(l, "b");
	cr_assert_eq(chain_members(l, end, m), 2, "the Sqrt reads a between the Mul and the Tanh");
	cr_assert(op_of(l, "a")->fused && op_of(l, "a")->fused_writes);
	cr_assert_eq(op_of(l, "c")->chain, -1);
	cr_assert(!op_of(l, "b")->fused);
	run_free(r);
}

/* In bf16 the Float32 patterns do not apply, chains do, Casts included:
 * x's Cast down, the BiasAdd, the ReLU and the returned value's Cast back
 * up, one call. A chain follows first readers from where it starts, so the
 * bias's Cast (computed after x's) stays out: its result is an operand. */
Test(fuse, half_chain_with_casts)
{
	Run *r;
	Lowered *l = fused("context {precision: \"bf16\"}\n"
	                   GRAPH("%x: <Tensor[Float32], (8, 16)>, %b: <Tensor[Float32], (16,)>",
	                         "  %hb = BiasAdd(%x, %b)\n  %r = ReLU(%hb)\n", "%r"),
	                   &r);
	cr_assert_eq(l->values[op_of(l, "r")->result].type.dtype, DT_BF16);
	cr_assert_eq(op_of(l, "r")->fuse_from, -1, "bias_unary is Float32's");
	int end = op_of(l, "r")->chain, m[MAX_CHAIN];
	cr_assert_geq(end, 0, "the ReLU in no chain");
	int n = chain_members(l, end, m), casts = 0;
	for (int k = 0; k < n; k++)
		casts += l->ops[m[k]].op == OP_CAST;
	cr_assert_eq(n, 4, "a chain of %d", n);
	cr_assert_eq(casts, 2, "x cast down, r back up");
	cr_assert_eq(l->ops[m[0]].op, OP_CAST);
	cr_assert_str_eq(l->values[l->ops[m[0]].in[0]].name, "x");
	int ins[2 * MAX_CHAIN], nin = chain_operands(l, m, n, ins);
	cr_assert_eq(nin, 2);
	cr_assert_str_eq(l->values[ins[0]].name, "x");
	cr_assert_str_eq(l->values[ins[1]].name, "b.bf16");
	cr_assert_eq(l->ops[end].op, OP_CAST);
	cr_assert_eq(l->values[l->ops[end].result].type.dtype, DT_F32);
	cr_assert_eq(l->rets[0], l->ops[end].result);
	run_free(r);
}

/* Attention's Transpose between two BatchMatMuls, keeping the last axis: no
 * copy, the second BatchMatMul reads the first's result with strides. */
Test(fuse, transpose_folded_between_batch_matmuls)
{
	Run *r;
	Lowered *l = fused(GRAPH("%q: <Tensor[Float32], (4, 8, 16, 32)>, %k: <Tensor[Float32], (4, 8, 16, 32)>, "
	                         "%v: <Tensor[Float32], (4, 16, 16, 32)>",
	                         "  %s = BatchMatMul(%q, %k) {transpose_b: true}\n"
	                         "  %t = Transpose(%s) {perm: (0, 2, 1, 3)}\n"
	                         "  %o = BatchMatMul(%t, %v)\n", "%o"),
	                   &r);
	const LOp *t = op_of(l, "t");
	cr_assert_eq(t->fold, FOLD_READ);
	cr_assert_eq(strided_by(l, t->result), t);
	cr_assert_null(strided_by(l, t->in[0]), "s stays row-major");
	int64_t st[MAX_DIMS];
	value_strides(l, t->result, st);   /* s is (4, 8, 16, 16): strides (2048, 256, 16, 1), t its (0, 2, 1, 3) */
	cr_assert(st[0] == 2048 && st[1] == 16 && st[2] == 256 && st[3] == 1, "(%lld, %lld, %lld, %lld)",
	          (long long)st[0], (long long)st[1], (long long)st[2], (long long)st[3]);
	value_strides(l, t->in[0], st);
	cr_assert(st[0] == 2048 && st[1] == 256 && st[2] == 16 && st[3] == 1);
	run_free(r);
}

/* The Transpose's result returned (read by something else): the first
 * BatchMatMul writes its result with strides into the Transpose's buffer. */
Test(fuse, transpose_folded_into_producer)
{
	Run *r;
	Lowered *l = fused(GRAPH("%q: <Tensor[Float32], (4, 8, 16, 32)>, %k: <Tensor[Float32], (4, 8, 16, 32)>",
	                         "  %s = BatchMatMul(%q, %k) {transpose_b: true}\n"
	                         "  %t = Transpose(%s) {perm: (0, 2, 1, 3)}\n", "%t"),
	                   &r);
	const LOp *t = op_of(l, "t");
	cr_assert_eq(t->fold, FOLD_WRITE);
	cr_assert_eq(strided_by(l, t->in[0]), t);
	cr_assert_null(strided_by(l, t->result));
	int64_t st[MAX_DIMS];
	value_strides(l, t->in[0], st);   /* s's axis perm[d] laid as t's axis d: t (4, 16, 8, 16) row-major */
	cr_assert(st[0] == 2048 && st[1] == 16 && st[2] == 128 && st[3] == 1, "(%lld, %lld, %lld, %lld)",
	          (long long)st[0], (long long)st[1], (long long)st[2], (long long)st[3]);
	run_free(r);
}

/* No fold: a Transpose that moves the last axis, one of an input, one
 * whose operand and result both have other readers. */
Test(fuse, transpose_not_folded)
{
	Run *r;
	Lowered *l = fused(GRAPH("%q: <Tensor[Float32], (4, 8, 16, 16)>, %k: <Tensor[Float32], (4, 8, 16, 16)>, "
	                         "%k2: <Tensor[Float32], (4, 16, 16, 16)>",
	                         "  %s = BatchMatMul(%q, %k)\n"
	                         "  %t = Transpose(%s) {perm: (0, 1, 3, 2)}\n  %o = BatchMatMul(%t, %k)\n"
	                         "  %u = Transpose(%q) {perm: (0, 2, 1, 3)}\n  %p = BatchMatMul(%u, %k2)\n"
	                         "  %w = Transpose(%s) {perm: (0, 2, 1, 3)}\n  %n = Neg(%w)\n",
	                         "%o, %p, %n, %s"),
	                   &r);
	cr_assert_eq(op_of(l, "t")->fold, FOLD_NONE, "the last axis moves");
	cr_assert_eq(op_of(l, "u")->fold, FOLD_NONE, "an input's Transpose");
	cr_assert_eq(op_of(l, "w")->fold, FOLD_NONE, "s and w both read by others");
	for (int v = 0; v < l->nvalues; v++)
		cr_assert_null(strided_by(l, v), "%%%s strided", l->values[v].name);
	run_free(r);
}

/* A Float32 LayerNorm's three adjoints run as one call, at the last one's
 * place: the two before it are fused and written by it. */
Test(fuse, layer_norm_gradients_together)
{
	Run *r;
	Lowered *l = fused(GRAPH("%x: <Tensor[Float32], (8, 16)> = ones, %w: <Parameter[Float32], (16, 16)> = ones, "
	                         "%g: <Parameter[Float32], (16,)> = ones, %b: <Parameter[Float32], (16,)> = zeros",
	                         "  %h = MatMul(%x, %w)\n"
	                         "  %n = LayerNorm(%h, %g, %b) {begin_norm_axis: -1, begin_params_axis: -1}\n"
	                         "  %loss = ReduceSum(%n) {axis: (0, 1)}\n", "%loss")
	                   "train {loss: %loss}\n", &r);
	int ln = op_named(l, "n"), carrier = -1, nadj = 0;
	for (int i = l->nfwd; i < l->nops; i++)
		if (l->ops[i].grad == GRAD_ADJOINT && l->ops[i].of == ln) {
			nadj++;
			if (!l->ops[i].fused)
				carrier = i;
		}
	cr_assert_eq(nadj, 3);
	cr_assert_geq(carrier, 0);
	int at[4];
	cr_assert_eq(fused_gradients(l, carrier, at), 2);
	for (int k = 0; k < 2; k++) {
		cr_assert(l->ops[at[k]].fused && l->ops[at[k]].fused_writes);
		cr_assert_lt(at[k], carrier);
		cr_assert_eq(l->ops[at[k]].of, ln);
	}
	run_free(r);
}
