/* test_fuse.c: operators one kernel computes together (fuse.c).
 *
 * Small models lowered up to fusion (lower_run) and, where it says more,
 * just before it. Fusion rewrites the program: a Softmax reading a Mul by a
 * scalar becomes a SoftmaxScaled (x, scale), and with a mask's Add a
 * SoftmaxMasked (x[, scale], mask); a unary operator or a residual Add first
 * reading a BiasAdd a BiasUnary or a BiasAddResidual; elementwise chains one
 * ElementwiseChain reading the chain's outside operands; a Transpose keeping
 * the last axis between BatchMatMuls a TransposeFolded (no copy: strided_by,
 * value_strides); a normalizer's adjoints one NormGrad. Each operator a
 * fused kernel computes becomes a Fused placeholder whose side-table entry
 * (Lowered.fusion) names the kernel and says whether it stores the result.
 * And where none of that may happen: a result someone else reads, a mask on
 * another axis, a Softmax split along its axis, a Transpose moving the last
 * axis, a comparison (its Bool result) in a chain. */
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

/* The fused kernel computing %name (a Fused placeholder), -1 when none. */
static int carrier_of(const Lowered *l, const char *name)
{
	int i = op_named(l, name);
	return l->ops[i].op == OP_FUSED ? l->fusion[i].into : -1;
}

/* Nothing fused, chained or folded: the operator as lowered. */
static void expect_unfused(const Lowered *l, const char *name)
{
	int i = op_named(l, name);
	cr_assert(!op_is_fused(l->ops[i].op) && unfused(l, i) == &l->ops[i], "%%%s is a %s", name,
	          op_info[l->ops[i].op].name);
}

/* %from is a Fused placeholder that %carrier's kernel computes, storing
 * its result (writes) or not. */
static void expect_carries(const Lowered *l, const char *carrier, const char *from, bool writes)
{
	int f = op_named(l, from);
	cr_assert_eq(l->ops[f].op, OP_FUSED, "%%%s is a %s, not Fused", from, op_info[l->ops[f].op].name);
	cr_assert_eq(carrier_of(l, from), op_named(l, carrier), "%%%s is computed by operator %d, not %%%s", from,
	             carrier_of(l, from), carrier);
	cr_assert_eq(l->fusion[f].writes, writes, "%%%s writes %d", from, l->fusion[f].writes);
	cr_assert_eq(unfused(l, f)->result, l->ops[f].result);
}

/* The name of operand k of %name. */
static const char *operand(const Lowered *l, const char *name, int k)
{
	const LOp *o = op_of(l, name);
	cr_assert_lt(k, o->nin, "%%%s has %d operands", name, o->nin);
	return l->values[o->in[k]].name;
}

/* The members of the chain %name ends, in order, into m; how many (0: it
 * ends none). */
static int chain_of(const Lowered *l, const char *name, int *m)
{
	int end = op_named(l, name);
	if (l->ops[end].op != OP_EW_CHAIN)
		return 0;
	int n = fused_parts(l, end, m);
	m[n++] = end;
	return n;
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
	cr_assert_eq(op_of(l, "p")->op, OP_SOFTMAX);
	cr_assert_null(l->fusion);
	run_free(r);
	l = fused(text, &r);
	expect_carries(l, "p", "a", false);
	expect_carries(l, "q", "b", false);
	cr_assert_eq(op_of(l, "p")->op, OP_SOFTMAX_SCALED);
	cr_assert_eq(op_of(l, "q")->op, OP_SOFTMAX_SCALED);
	cr_assert_str_eq(operand(l, "p", 0), "x");
	cr_assert_str_eq(operand(l, "p", 1), "s");
	cr_assert_str_eq(operand(l, "q", 0), "x", "the scale is the Mul's first operand: x still first");
	cr_assert_str_eq(operand(l, "q", 1), "s");
	cr_assert_eq(unfused(l, op_named(l, "a"))->op, OP_MUL);
	cr_assert_eq(unfused(l, op_named(l, "p"))->op, OP_SOFTMAX, "the dumps print the Softmax as written");
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
	cr_assert_eq(op_of(l, "p")->op, OP_SOFTMAX_SCALED);
	cr_assert_str_eq(operand(l, "p", 1), "s");
	int p = op_named(l, "p"), adjoints = 0;
	for (int i = l->nfwd; i < l->nops; i++)
		if (l->ops[i].grad == GRAD_ADJOINT && l->ops[i].of == p) {
			adjoints++;
			cr_assert_eq(differentiated(l, &l->ops[i])->op, OP_SOFTMAX, "the adjoint differentiates the Softmax");
		}
	cr_assert_eq(adjoints, 1);
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
	expect_unfused(l, "p");
	expect_unfused(l, "a");
	expect_unfused(l, "q");
	cr_assert_neq(op_of(l, "b")->op, OP_FUSED, "x * y is no scaling");
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
	expect_unfused(l, "p");
	expect_unfused(l, "a");
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
	cr_assert_eq(op_of(l, "r")->op, OP_BIAS_UNARY);
	cr_assert_str_eq(operand(l, "r", 0), "h");
	cr_assert_str_eq(operand(l, "r", 1), "b");
	cr_assert_eq(unfused(l, op_named(l, "r"))->op, OP_RELU, "the unary operator it applies");
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
	expect_unfused(l, "y");
	cr_assert_neq(op_of(l, "r")->op, OP_BIAS_UNARY, "the ReLU reads hb second");
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
	cr_assert_eq(op_of(l, "o")->op, OP_BIAS_ADD_RESIDUAL);
	cr_assert(carrier_of(l, "gb") < 0 || op_of(l, "p")->op == OP_EW_CHAIN,
	          "a broadcasting Add carries the BiasAdd other than in a chain");
	cr_assert_neq(op_of(l, "p")->op, OP_BIAS_ADD_RESIDUAL);
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
	expect_carries(l, "p", "a", false);
	cr_assert_eq(op_of(l, "p")->op, OP_SOFTMAX_MASKED);
	cr_assert_eq(op_of(l, "p")->nin, 3, "x, scale, mask");
	cr_assert_str_eq(operand(l, "p", 0), "x");
	cr_assert_str_eq(operand(l, "p", 1), "s");
	cr_assert_str_eq(operand(l, "p", 2), "mask");
	run_free(r);
	at[0] = ' ';
	at[1] = '1';
	l = fused(text0, &r);
	cr_assert_neq(op_of(l, "p")->op, OP_SOFTMAX_MASKED);
	cr_assert_neq(carrier_of(l, "m"), op_named(l, "p"));
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
	cr_assert_eq(op_of(l, "p")->op, OP_SOFTMAX_MASKED);
	cr_assert_eq(op_of(l, "p")->nin, 2, "x, mask: no scale");
	cr_assert_str_eq(operand(l, "p", 0), "x");
	cr_assert_str_eq(operand(l, "p", 1), "mask", "the mask, the Add's first operand");
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
	int end = op_named(l, "c"), m[MAX_PARTS + 1];
	int n = chain_of(l, "c", m);
	cr_assert_eq(n, 3, "a chain of %d", n);
	cr_assert(m[0] == op_named(l, "a") && m[1] == op_named(l, "b") && m[2] == end);
	expect_carries(l, "c", "a", false);
	expect_carries(l, "c", "b", false);
	cr_assert_eq(unfused(l, end)->op, OP_TANH, "the chain's last operator makes the call");
	cr_assert_eq(op_of(l, "c")->nin, 2, "the chain reads x and v from outside");
	cr_assert_str_eq(operand(l, "c", 0), "x");
	cr_assert_str_eq(operand(l, "c", 1), "v");
	cr_assert_eq(chain_of(l, "a", m), 0, "no chain ends at its first member");
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
	int m[MAX_PARTS + 1];
	cr_assert_eq(chain_of(l, "c", m), 3);
	expect_carries(l, "c", "a", true);   /* read by the Sqrt after the chain */
	expect_carries(l, "c", "b", false);
	cr_assert_eq(carrier_of(l, "d"), -1);
	cr_assert_neq(op_of(l, "d")->op, OP_EW_CHAIN);
	run_free(r);
	l = fused(GRAPH("%x: <Tensor[Float32], (8, 16)>, %y: <Tensor[Float32], (8, 16)>",
	                "  %a = Exp(%x)\n  %b = Mul(%a, %y)\n  %d = Sqrt(%a)\n  %c = Tanh(%b)\n", "%c, %d"),
	          &r);
	cr_assert_eq(chain_of(l, "b", m), 2, "the Sqrt reads a between the Mul and the Tanh");
	expect_carries(l, "b", "a", true);
	cr_assert_eq(carrier_of(l, "c"), -1);
	cr_assert_neq(op_of(l, "c")->op, OP_EW_CHAIN);
	run_free(r);
}

/* A comparison breaks a chain: its Bool result is no float a chain
 * computes, nor does a chain take the Cast of it (Casts between float types
 * only). The Exp before it, first read by it, ends no chain; the Mul by its
 * mask and the Tanh after it are one, reading the Cast's result. */
Test(fuse, comparison_not_chained)
{
	Run *r;
	Lowered *l = fused(GRAPH("%x: <Tensor[Float32], (8, 16)>, %y: <Tensor[Float32], (8, 16)>",
	                         "  %a = Exp(%x)\n  %g = Greater(%a, 1.5)\n  %f = Cast(%g) {dtype: Float32}\n"
	                         "  %b = Mul(%f, %y)\n  %c = Tanh(%b)\n", "%c"),
	                   &r);
	int m[MAX_PARTS + 1];
	expect_unfused(l, "a");
	expect_unfused(l, "g");
	expect_unfused(l, "f");
	cr_assert_eq(op_of(l, "g")->op, OP_GREATER);
	cr_assert_eq(chain_of(l, "c", m), 2);
	expect_carries(l, "c", "b", false);
	cr_assert_str_eq(operand(l, "c", 0), "f");
	cr_assert_str_eq(operand(l, "c", 1), "y");
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
	cr_assert_eq(op_of(l, "r")->op, OP_FUSED, "bias_unary is Float32's: the ReLU is a chain member");
	int end = carrier_of(l, "r"), m[MAX_PARTS + 1];
	cr_assert_geq(end, 0, "the ReLU in no chain");
	cr_assert_eq(l->ops[end].op, OP_EW_CHAIN);
	int n = fused_parts(l, end, m), casts = 0;
	m[n++] = end;
	for (int k = 0; k < n; k++)
		casts += unfused(l, m[k])->op == OP_CAST;
	cr_assert_eq(n, 4, "a chain of %d", n);
	cr_assert_eq(casts, 2, "x cast down, r back up");
	cr_assert_eq(unfused(l, m[0])->op, OP_CAST);
	cr_assert_str_eq(l->values[unfused(l, m[0])->in[0]].name, "x");
	cr_assert_eq(l->ops[end].nin, 2);
	cr_assert_str_eq(l->values[l->ops[end].in[0]].name, "x");
	cr_assert_str_eq(l->values[l->ops[end].in[1]].name, "b.bf16");
	cr_assert_eq(unfused(l, end)->op, OP_CAST);
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
	cr_assert_eq(t->op, OP_TRANSPOSE_FOLDED);
	cr_assert_eq(l->fusion[op_named(l, "t")].fold, FOLD_READ);
	cr_assert_eq(op_of(l, "o")->op, OP_BATCH_MATMUL_STRIDED, "the product reads t with strides");
	cr_assert_eq(op_of(l, "s")->op, OP_BATCH_MATMUL, "s is written row-major");
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
	cr_assert_eq(t->op, OP_TRANSPOSE_FOLDED);
	cr_assert_eq(l->fusion[op_named(l, "t")].fold, FOLD_WRITE);
	cr_assert_eq(op_of(l, "s")->op, OP_BATCH_MATMUL_STRIDED, "the product writes s with strides");
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
	cr_assert_eq(op_of(l, "t")->op, OP_TRANSPOSE, "the last axis moves");
	cr_assert_eq(op_of(l, "u")->op, OP_TRANSPOSE, "an input's Transpose");
	cr_assert_eq(op_of(l, "w")->op, OP_TRANSPOSE, "s and w both read by others");
	for (int v = 0; v < l->nvalues; v++)
		cr_assert_null(strided_by(l, v), "%%%s strided", l->values[v].name);
	run_free(r);
}

/* The three adjoints of forward operator `name` (of kind forward) run as
 * one call of kind carrier_kind at the last one's place: the two before it
 * are fused placeholders it writes. */
static void expect_gradients_together(const Lowered *l, const char *name, OpKind forward, OpKind carrier_kind)
{
	int f = op_named(l, name), carrier = -1, nadj = 0;
	for (int i = l->nfwd; i < l->nops; i++)
		if (l->ops[i].grad == GRAD_ADJOINT && l->ops[i].of == f) {
			nadj++;
			if (l->ops[i].op == carrier_kind)
				carrier = i;
		}
	cr_assert_eq(nadj, 3);
	cr_assert_geq(carrier, 0);
	int at[MAX_PARTS];
	cr_assert_eq(fused_parts(l, carrier, at), 2);
	for (int k = 0; k < 2; k++) {
		cr_assert_eq(l->ops[at[k]].op, OP_FUSED);
		cr_assert(l->fusion[at[k]].writes, "each gradient the kernel writes is stored");
		cr_assert_lt(at[k], carrier);
		cr_assert_eq(l->ops[at[k]].of, f);
		cr_assert_eq(differentiated(l, &l->ops[at[k]])->op, forward);
	}
}

/* A Float32 FlashAttentionScore's three adjoints (q's, k's, v's) run as one
 * call at the last one's place, as a normalizer's (in BFloat16 they are
 * three calls: tests/e2e/flash_attention_half.ir). */
Test(fuse, flash_attention_gradients_together)
{
	Run *r;
	Lowered *l = fused(GRAPH("%q: <Parameter[Float32], (2, 2, 8, 16)> = ones, %k: <Parameter[Float32], (2, 2, 8, 16)> = ones, "
	                         "%v: <Parameter[Float32], (2, 2, 8, 16)> = ones",
	                         "  %a = FlashAttentionScore(%q, %k, %v) {head_num: 2, sparse_mode: 2}\n"
	                         "  %loss = ReduceSum(%a) {axis: (0, 1, 2, 3)}\n", "%loss")
	                   "train {loss: %loss}\n", &r);
	expect_gradients_together(l, "a", OP_FLASH_ATTENTION, OP_FLASH_ATTENTION_GRAD);
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
	expect_gradients_together(l, "n", OP_LAYER_NORM, OP_NORM_GRAD);
	run_free(r);
}
