/* test_autocast.c: mixed precision (autocast.c).
 *
 * A model with one of each kind of operator, compiled with precision bf16
 * or fp16 and lowered (lower_run): which results compute in the half type
 * (matrix products, elementwise operators, BiasAdd), which in Float32
 * (Softmax, LayerNorm, losses, ReduceSum/ReduceMean, Exp, Log, Sqrt), which
 * follow their input (Transpose, ReduceMax, ReduceMin, the comparisons, whose
 * result stays Bool); the Casts inserted, one per
 * value and type; Float32 parameters kept as master weights, with Float32
 * gradients; returned values and the loss in their declared types. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"

static const char model[] =
	"context {device_num: %d, parallel_mode: \"semi_auto_parallel\"%s}\n"
	"graph @n(%%x: <Tensor[Float32], (8, 16)> = uniform(-1, 1), %%t: <Tensor[Float32], (8, 32)> = zeros,\n"
	"         %%q: <Tensor[Float32], (4, 8, 16)> = uniform(-1, 1), %%h16: <Tensor[Float16], (8, 32)> = zeros,\n"
	"         %%w: <Parameter[Float32], (16, 32)> = normal(0.1), %%b: <Parameter[Float32], (32,)> = zeros,\n"
	"         %%g: <Parameter[Float32], (32,)> = ones, %%be: <Parameter[Float32], (32,)> = zeros,\n"
	"         %%k: <Parameter[Float32], (4, 16, 8)> = normal(0.1)) {\n"
	"  %%h = MatMul(%%x, %%w)%s\n"
	"  %%hb = BiasAdd(%%h, %%b)\n"
	"  %%r = ReLU(%%hb)\n"
	"  %%ln = LayerNorm(%%r, %%g, %%be) {begin_norm_axis: -1, begin_params_axis: -1}\n"
	"  %%s = Softmax(%%ln) {axis: -1}\n"
	"  %%e = Exp(%%s)\n"
	"  %%m = Mul(%%e, %%r)\n"
	"  %%tr = Transpose(%%m) {perm: (1, 0)}\n"
	"  %%mx = ReduceMax(%%tr) {axis: 1}\n"
	"  %%mn = ReduceMin(%%tr) {axis: 0}\n"
	"  %%bm = BatchMatMul(%%q, %%k)\n"
	"  %%rs = ReduceSum(%%bm) {axis: (0, 2)}\n"
	"  %%h2 = ReLU(%%h16)\n"
	"  %%l1 = MSELoss(%%m, %%t)\n"
	"  %%l2 = ReduceMean(%%rs) {axis: 0}\n"
	"  %%loss = Add(%%l1, %%l2)\n"
	"  return %%loss, %%r, %%mx, %%h2, %%mn\n"
	"}\n"
	"train {loss: %%loss, optimizer: SGD(learning_rate: 0.1)}\n";

/* The model on `devices` with the context's extra keys, lowered up to `upto`. */
static Lowered *lower_model(int devices, const char *keys, const char *mm_attrs, Stage upto, Run **run)
{
	char text[4096];
	snprintf(text, sizeof text, model, devices, keys, mm_attrs);
	Run *r = compile(text);
	expect_clean(r);
	*run = r;
	return lower_run(r, NULL, upto);
}

/* The flat graph's value named `name` (without %). */
static const Value *flat_value(const Lowered *l, const char *name)
{
	int v = graph_value(l->flat->g, name);
	cr_assert_geq(v, 0, "no value %%%s", name);
	return &l->flat->g->values[v];
}

static DType dtype_of(const Lowered *l, const char *name)
{
	return flat_value(l, name)->type.dtype;
}

/* The operator computing %name in the flat graph. */
static const Node *flat_node(const Lowered *l, const char *name)
{
	const Value *v = flat_value(l, name);
	cr_assert_geq(v->node, 0, "%%%s is a parameter", name);
	return &l->flat->g->nodes[v->node];
}

/* Whether %name is an inserted Cast of %from to dt. */
static void expect_cast(const Lowered *l, const char *name, const char *from, DType dt)
{
	const Node *n = flat_node(l, name);
	const Graph *g = l->flat->g;
	cr_assert_eq(n->op, OP_CAST, "%%%s is a %s", name, op_info[n->op].name);
	cr_assert(l->flat->inserted && l->flat->inserted[n - g->nodes], "%%%s was not inserted", name);
	cr_assert_str_eq(g->values[n->in[0]].name, from);
	cr_assert_eq(n->a.dtype, dt);
	cr_assert_eq(g->values[n->result].type.dtype, dt);
}

/* How many inserted Casts read %from. */
static int casts_of(const Lowered *l, const char *from)
{
	const Graph *g = l->flat->g;
	int v = graph_value(g, from), n = 0;
	for (int i = 0; i < g->nnodes; i++)
		n += l->flat->inserted[i] && g->nodes[i].in[0] == v;
	return n;
}

static void expect_policy(DType half, const char *keys)
{
	Run *r;
	Lowered *l = lower_model(1, keys, "", STAGE_LOWER, &r);
	static const char *const low[] = {"h", "hb", "r", "m", "bm", "loss"};
	static const char *const f32[] = {"ln", "s", "e", "rs", "l1", "l2"};
	for (size_t i = 0; i < sizeof low / sizeof *low; i++)
		cr_assert_eq(dtype_of(l, low[i]), half, "%%%s is %s", low[i], dtype_name(dtype_of(l, low[i])));
	for (size_t i = 0; i < sizeof f32 / sizeof *f32; i++)
		cr_assert_eq(dtype_of(l, f32[i]), DT_F32, "%%%s is %s", f32[i], dtype_name(dtype_of(l, f32[i])));
	/* Transpose, ReduceMax and ReduceMin follow their input, which is half */
	cr_assert_eq(dtype_of(l, "tr"), half);
	cr_assert_eq(dtype_of(l, "mx"), half);
	cr_assert_eq(dtype_of(l, "mn"), half);
	/* a Float16 value the user wrote computes as written */
	cr_assert_eq(dtype_of(l, "h2"), DT_F16);
	cr_assert_eq(flat_node(l, "h2")->op, OP_RELU);
	/* every input of a half operator is half, of a Float32 one Float32 */
	const Graph *g = l->flat->g;
	for (int i = 0; i < g->nnodes; i++) {
		const Node *n = &g->nodes[i];
		DType rd = g->values[n->result].type.dtype;
		if (n->op == OP_CAST || n->op == OP_TRANSPOSE || n->op == OP_REDUCE_MAX || n->op == OP_REDUCE_MIN ||
		    !dtype_is_float(rd))
			continue;
		for (int k = 0; k < n->nin; k++)
			cr_assert_eq(g->values[n->in[k]].type.dtype, rd, "%%%s (%s) reads %%%s (%s)",
			             g->values[n->result].name, dtype_name(rd), g->values[n->in[k]].name,
			             dtype_name(g->values[n->in[k]].type.dtype));
	}
	run_free(r);
}

Test(autocast, bf16_policy)
{
	expect_policy(DT_BF16, ", precision: \"bf16\"");
}

Test(autocast, fp16_policy)
{
	expect_policy(DT_F16, ", precision: \"fp16\"");
}

/* Casts where a value's type changes, one per value and type, shared by its
 * users; the parameters stay Float32. */
Test(autocast, casts_inserted)
{
	Run *r;
	Lowered *l = lower_model(1, ", precision: \"bf16\"", "", STAGE_LOWER, &r);
	const char suffix[] = "bf16";
	char name[32];
	static const char *const params[] = {"x", "w", "b", "q", "k"};   /* read by half operators */
	for (size_t i = 0; i < sizeof params / sizeof *params; i++) {
		snprintf(name, sizeof name, "%s.%s", params[i], suffix);
		expect_cast(l, name, params[i], DT_BF16);
		cr_assert_eq(casts_of(l, params[i]), 1, "%%%s cast %d times", params[i], casts_of(l, params[i]));
	}
	/* LayerNorm computes in Float32: its half input is cast up, its Float32
	 * gamma and beta read as they are; ReLU's result, read by the
	 * LayerNorm and by the Mul (half), is cast once, up */
	expect_cast(l, "r.f32", "r", DT_F32);
	cr_assert_eq(casts_of(l, "r"), 1);
	cr_assert_eq(casts_of(l, "g"), 0);
	cr_assert_eq(casts_of(l, "be"), 0);
	expect_cast(l, "e.bf16", "e", DT_BF16);   /* Exp's Float32 result into the Mul */
	expect_cast(l, "m.f32", "m", DT_F32);     /* the Mul's half result into the loss */
	cr_assert_eq(casts_of(l, "s"), 0, "Softmax's result, read by Exp, stays Float32");
	expect_cast(l, "bm.f32", "bm", DT_F32);   /* into ReduceSum */
	cr_assert_eq(casts_of(l, "h16"), 0, "a Float16 input is not autocast's");
	const Graph *g = l->flat->g;
	for (int p = 0; p < g->nparams; p++)
		cr_assert_eq(g->values[p].type.dtype, module_entry(r->m)->values[p].type.dtype,
		             "%%%s changed type", g->values[p].name);
	cr_assert(g->values[graph_value(g, "w")].type.is_param && g->values[graph_value(g, "w")].type.dtype == DT_F32,
	          "master weights stay Float32 Parameters");
	cr_assert(!g->values[graph_value(g, "w.bf16")].type.is_param, "a Cast's result is a Tensor");
	run_free(r);
}

/* Returned values and the loss come back in their declared types. */
Test(autocast, results_in_declared_types)
{
	Run *r;
	Lowered *l = lower_model(1, ", precision: \"bf16\"", "", STAGE_LOWER, &r);
	const Graph *e = module_entry(r->m), *g = l->flat->g;
	cr_assert_eq(g->nret, e->nret);
	for (int k = 0; k < e->nret; k++)
		cr_assert_eq(g->values[g->ret[k]].type.dtype, e->values[e->ret[k]].type.dtype, "result %d is %s", k,
		             dtype_name(g->values[g->ret[k]].type.dtype));
	cr_assert_str_eq(g->values[g->ret[1]].name, "r.f32", "the half ReLU returned through its Cast up");
	cr_assert_str_eq(g->values[g->ret[2]].name, "mx.f32");
	cr_assert_str_eq(g->values[g->ret[4]].name, "mn.f32");
	/* the loss (an Add of the two losses, in bf16) comes back through a Cast */
	cr_assert_eq(dtype_of(l, "loss"), DT_BF16);
	cr_assert_eq(l->values[l->loss].type.dtype, DT_F32);
	cr_assert_str_eq(l->values[l->loss].name, "loss.f32");
	for (int k = 0; k < l->nret; k++)
		cr_assert_eq(l->values[l->rets[k]].type.dtype, e->values[e->ret[k]].type.dtype);
	run_free(r);
}

/* Trained: every Float32 parameter's gradient is Float32, in its home
 * layout; with fp16, dynamic loss scaling checks the norm for overflow. */
Test(autocast, gradients_of_master_weights)
{
	Run *r;
	Lowered *l = lower_model(1, ", precision: \"bf16\"", "", STAGE_FUSE, &r);
	int n = 0;
	for (int p = 0; p < l->nparams; p++) {
		if (!l->flat->g->values[p].type.is_param)
			continue;
		cr_assert_geq(l->grad[p], 0, "%%%s has no gradient", l->values[p].name);
		cr_assert_eq(l->values[l->grad[p]].type.dtype, DT_F32, "%%%s's gradient is %s", l->values[p].name,
		             dtype_name(l->values[l->grad[p]].type.dtype));
		n++;
	}
	cr_assert_eq(n, 5);
	cr_assert_eq(l->overflow, -1, "bf16 has no loss scaling");
	run_free(r);
	l = lower_model(1, ", precision: \"fp16\"", "", STAGE_DIFFERENTIATE, &r);
	cr_assert_geq(l->overflow, 0, "fp16: the overflow check");
	cr_assert_eq(l->values[l->overflow].type.dtype, DT_F32);
	run_free(r);
}

/* Without a precision nothing changes: no Cast, every type as written. */
Test(autocast, off_without_precision)
{
	Run *r;
	Lowered *l = lower_model(1, "", "", STAGE_LOWER, &r);
	cr_assert_null(l->flat->inserted);
	const Graph *g = l->flat->g;
	for (int i = 0; i < g->nnodes; i++)
		cr_assert_neq(g->nodes[i].op, OP_CAST);
	cr_assert_eq(dtype_of(l, "h"), DT_F32);
	cr_assert_eq(dtype_of(l, "m"), DT_F32);
	run_free(r);
}

/* On 8 devices, a weight's Cast takes its user's layout: the column-split
 * MatMul's weight lives split, and the forward pass moves nothing for it. */
Test(autocast, casts_laid_out_as_their_users)
{
	Run *r;
	Lowered *l = lower_model(8, ", precision: \"bf16\"", " {in_strategy: ((2, 1), (1, 4))}", STAGE_LOWER, &r);
	int w = graph_value(l->flat->g, "w");
	cr_assert_eq(layout_dim_split(&l->home[w], 0), 1);
	cr_assert_eq(layout_dim_split(&l->home[w], 1), 4, "w lives as its MatMul reads it");
	for (int i = 0; i < l->nfwd; i++) {
		const LOp *o = &l->ops[i];
		cr_assert(!(o->step && (o->in[0] == w || o->result == w)), "%s of %%w: %s", op_info[o->op].name, o->why);
		if (o->op == OP_CAST && o->in[0] == w) {
			const LValue *c = &l->values[o->result];
			cr_assert_eq(layout_dim_split(&c->layout, 1), 4);
			cr_assert_eq(c->type.dims[1], 8, "a rank's piece of the Cast");
		}
	}
	run_free(r);
}

/* A number written as an operand takes the compute type itself when the
 * operator reading it computes in it (no Cast between them), and keeps its
 * type beside a value written in another (a Float16 one); the flat graph
 * holds one for each number in each inlined copy, as inputs after the
 * entry's own. */
Test(autocast, numbers_take_the_compute_type)
{
	Run *r = compile("context {device_num: 2, parallel_mode: \"semi_auto_parallel\", precision: \"bf16\"}\n"
	                 "graph @f(%a: <Tensor[Float32], (8, 16)>) {\n"
	                 "  %m = Mul(%a, 0.5)\n  %e = MSELoss(%m, %a)\n  %s = Add(%e, 1e-3)\n  return %s\n}\n"
	                 "graph @n(%x: <Tensor[Float32], (8, 16)> = uniform(-1, 1), %w: <Parameter[Float32], (16, 16)>) {\n"
	                 "  %h = MatMul(%x, %w)\n  %y = Mul(%h, 0.125)\n  %z = Sub(1.0, %y)\n"
	                 "  %c = Call(%z) {graph: @f}\n  %d = Call(%y) {graph: @f}\n  %loss = Add(%c, %d)\n"
	                 "  %k = Cast(%x) {dtype: Float16}\n  %q = Mul(%k, 2.0)\n  return %loss, %q\n}\n"
	                 "train {loss: %loss}\n");
	expect_clean(r);
	Lowered *l = lower_run(r, NULL, STAGE_LOWER);
	const Graph *g = l->flat->g;
	cr_assert_eq(l->flat->nentry, 2);
	static const char *const names[] = {"y#1", "z#0", "c.m#1", "c.s#1", "d.m#1", "d.s#1", "q#1"};
	cr_assert_eq(g->nparams, 9, "the numbers after the entry's inputs, one for each copy");
	for (int p = 2; p < g->nparams; p++) {
		const Value *v = &g->values[p];
		cr_assert(v->literal && v->type.rank == 0, "%%%s", v->name);
		cr_assert_str_eq(v->name, names[p - 2]);
		cr_assert_eq(v->type.dtype, p == 8 ? DT_F16 : DT_BF16, "%s", v->literal->s);
	}
	for (int i = 0; i < g->nnodes; i++)
		if (g->nodes[i].op == OP_CAST)
			cr_assert(!g->values[g->nodes[i].in[0]].literal, "a Cast of a number");
	cr_assert_eq(dtype_of(l, "y"), DT_BF16);
	run_free(r);
}

/* A computed constant has no input to follow: it takes the compute type
 * when every operator reading it computes in it (a mask read by the Add
 * before a Softmax: BFloat16, its fill BFloat16's lowest), else stays
 * Float32 (a table read by Exp, which computes in Float32; one returned),
 * and is cast where a reader wants the other type. */
Test(autocast, constants_take_their_readers_type)
{
	Run *r = compile("context {device_num: 2, parallel_mode: \"semi_auto_parallel\", precision: \"bf16\"}\n"
	                 "graph @n(%x: <Tensor[Float32], (8, 8)> = uniform(-1, 1), %w: <Parameter[Float32], (8, 8)>) {\n"
	                 "  %h = MatMul(%x, %w)\n  %mask = CausalMask() {shape: (8, 8)}\n  %a = Add(%h, %mask)\n"
	                 "  %s = Softmax(%a)\n  %c = RopeCos() {shape: (8, 8)}\n  %e = Exp(%c)\n  %m = Mul(%s, %e)\n"
	                 "  %t = RopeSin() {shape: (8, 8)}\n  %loss = MSELoss(%m, %x)\n  return %loss, %t\n}\n"
	                 "train {loss: %loss}\n");
	expect_clean(r);
	Lowered *l = lower_run(r, NULL, STAGE_LOWER);
	cr_assert_eq(flat_value(l, "mask")->type.dtype, DT_BF16, "read by a BFloat16 Add only");
	cr_assert_eq(flat_value(l, "c")->type.dtype, DT_F32, "read by Exp, which computes in Float32");
	cr_assert_eq(flat_value(l, "t")->type.dtype, DT_F32, "returned as written");
	for (int i = 0; i < l->flat->g->nnodes; i++) {
		const Node *n = &l->flat->g->nodes[i];
		if (n->op == OP_CAST)
			cr_assert(strcmp(l->flat->g->values[n->in[0]].name, "mask"), "a Cast of the mask");
	}
	run_free(r);
}

/* A comparison follows its operands and keeps its Bool result: two
 * BFloat16 values (two MatMuls') compared as they are, no Cast; one beside
 * a number (Float32: a comparison does not compute in the compute type)
 * widened, both compared in Float32, the threshold as written; a Float32
 * input beside a parameter's master copy as written. */
Test(autocast, comparisons_follow_their_operands)
{
	Run *r = compile("context {device_num: 2, parallel_mode: \"semi_auto_parallel\", precision: \"bf16\"}\n"
	                 "graph @n(%x: <Tensor[Float32], (8, 16)> = uniform(-1, 1), %w: <Parameter[Float32], (16, 16)>,\n"
	                 "         %v: <Parameter[Float32], (16,)>) {\n"
	                 "  %h = MatMul(%x, %w)\n  %k = MatMul(%x, %w) {transpose_b: true}\n  %l = Less(%h, %k)\n"
	                 "  %g = Greater(%h, 0.1)\n  %e = LessEqual(%x, %v)\n  %y = Select(%l, %h, %k)\n"
	                 "  %f = Cast(%g) {dtype: Float32}\n  %z = Mul(%y, %f)\n  %loss = MSELoss(%z, %x)\n"
	                 "  return %loss, %e\n}\n"
	                 "train {loss: %loss}\n");
	expect_clean(r);
	Lowered *l = lower_run(r, NULL, STAGE_LOWER);
	const Graph *g = l->flat->g;
	static const struct { const char *name; DType in; } want[] = {{"l", DT_BF16}, {"g", DT_F32}, {"e", DT_F32}};
	for (int i = 0; i < 3; i++) {
		const Node *n = flat_node(l, want[i].name);
		cr_assert_eq(dtype_of(l, want[i].name), DT_BOOL, "%%%s", want[i].name);
		for (int k = 0; k < 2; k++)
			cr_assert_eq(g->values[n->in[k]].type.dtype, want[i].in, "%%%s operand %d is %s", want[i].name, k,
			             dtype_name(g->values[n->in[k]].type.dtype));
	}
	cr_assert_str_eq(g->values[flat_node(l, "l")->in[0]].name, "h", "no Cast before Less");
	expect_cast(l, "h.f32", "h", DT_F32);
	cr_assert(g->values[flat_node(l, "g")->in[1]].literal, "the number itself, as written");
	cr_assert_str_eq(g->values[flat_node(l, "e")->in[1]].name, "v", "the master copy");
	run_free(r);
}
