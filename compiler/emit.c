/* emit.c: program.c, the SPMD body every rank runs, and rank_<r>.c, each
 * rank's table (docs/output.md).
 *
 * Requires a Lowered program and its plan (plan.c). What differs between
 * ranks is a table of numbers per rank: program.c, the one SPMD body every
 * rank runs, reads them as T[k], and rank_<r>.c holds rank r's table and
 * nothing else. So OUT grows with the model, not with the ranks. A person
 * reads program.c top to bottom: its groups, its buffers, its inputs, then
 * one runtime call per operator of the forward graph (step_parallel_end;
 * emit_forward.c), the backward pass (autodiff.c; emit_adjoint.c) and the
 * update. Half operands are widened into Float32 copies around their
 * kernel here (plan.c places the copies). */
#include "emit_internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- one operator ---- */

/* The squared norm of the gradient pieces this rank holds the first copy of
 * (GRAD_SQNORM): the table gives their sizes, else 0. One sc_sum_squares
 * on the Float32 gradients; then each half gradient, however many, widened
 * in turn into the one Float32 copy in the scratch (sqnorm_copy), its sum of
 * squares added to the result. */
static void emit_sum_squares(StrBuf *b, const Program *p, const LOp *o)
{
	const Lowered *l = p->l;
	const Entry *e = op_table(p, o);
	const char *y = p->cname[o->result];
	int64_t copy = op_scratch(p, o), part = copy + sqnorm_copy(l, o);
	StrBuf xs = {0}, ns = {0};
	int nf = 0;
	for (int k = 0; k < o->nin; k++) {
		if (dtype_is_half(l->values[o->in[k]].type.dtype))
			continue;
		sb_printf(&xs, nf ? ", %s" : "%s", p->cname[o->in[k]]);
		sb_puts(&ns, nf++ ? ", " : "");
		entry_ref(&ns, e, k, 1, false);
	}
	if (nf == o->nin) {
		sb_printf(b, "sc_sum_squares(rt, (const float *const[]){%s}, ", xs.data);
		entry_ref(b, e, 0, o->nin, true);
		sb_printf(b, ", %d, %s);", o->nin, y);
	} else if (nf) {
		sb_printf(b, "sc_sum_squares(rt, (const float *const[]){%s}, (const int64_t[]){%s}, %d, %s);", xs.data,
		          ns.data, nf, y);
	} else {
		sb_printf(b, "sc_fill(rt, %s, SC_F32, 1, 0.0);", y);
	}
	for (int k = 0; k < o->nin; k++) {
		const LValue *x = &l->values[o->in[k]];
		if (!dtype_is_half(x->type.dtype))
			continue;
		sb_printf(b, "\n\t\tsc_cast(rt, %s, %s, (float *)(slab + %lld), SC_F32, %lld);", p->cname[o->in[k]],
		          sc_dtype_name(x->type.dtype), (long long)copy, (long long)numel(x));
		sb_printf(b, "\n\t\tsc_sum_squares(rt, (const float *const[]){(float *)(slab + %lld)}, ", (long long)copy);
		entry_ref(b, e, k, 1, true);
		sb_printf(b, ", 1, (float *)(slab + %lld));", (long long)part);
		sb_printf(b, "\n\t\tsc_binary(rt, SC_ADD, %s, (const int64_t[]){1}, 0, (float *)(slab + %lld), "
		          "(const int64_t[]){1}, 0, %s, (const int64_t[]){1}, 0);", y, (long long)part, y);
	}
	sb_free(&xs);
	sb_free(&ns);
}

/* A half backward operator as one sc_ew_chain on the half values
 * (half_chain): values 0 o->in[0] (dy, or a gradient summed) and 1 the
 * other operand (t for a unary operator's adjoint), 2 the result in
 * Float32, 3 rounded, stored. */
static void emit_half_chain(StrBuf *b, const Program *p, const LOp *o, const Attrs *fa, int other, const char *bcast)
{
	const Lowered *l = p->l;
	const LValue *x = &l->values[o->result];
	const LOp *f = o->grad == GRAD_ADJOINT ? differentiated(l, o) : NULL;
	const char *dt = sc_dtype_name(x->type.dtype);
	const LValue *y = f ? &l->values[f->result] : x;   /* the chain's (rows, cols): the forward result's */
	int64_t n = numel(y), cols = y->type.rank > 0 ? y->type.dims[y->type.rank - 1] : 1;
	sb_puts(b, "/* on the half values, rounded once */\n\t\tsc_ew_chain(rt, (const sc_ew_step[]){");
	if (!f)
		sb_puts(b, "{SC_EW_BINARY, SC_ADD, 0, 1, SC_F32, NULL, 0}");
	else if (op_is_unary(f->op))
		sb_printf(b, "{SC_EW_UNARY_GRAD, %s, 1, 0, SC_F32, NULL, %.9g}", op_kernel(f->op, fa),
		          op_kernel_param(f->op, fa, l->values[f->in[0]].type.dtype));
	else if (f->op == OP_SUB)
		sb_puts(b, "{SC_EW_UNARY, SC_U_NEG, 0, 0, SC_F32, NULL, 0}");
	else
		sb_printf(b, "{SC_EW_BINARY, %s, 0, 1, SC_F32, NULL, 0}", op_info[f->op].kernel);
	int nin = other >= 0 ? 2 : 1;
	sb_printf(b, ", {SC_EW_ROUND, 0, %d, 0, %s, NULL, 0}, {SC_EW_STORE, 0, %d, 0, %s, %s, 0}}, 3, (const sc_ew_operand[]){{%s, %s, "
	          "SC_EW_FULL}", nin, dt, nin + 1, dt, p->cname[o->result], p->cname[o->in[0]], dt);
	if (other >= 0)
		sb_printf(b, ", {%s, %s, %s}", p->cname[other], dt, bcast);
	sb_printf(b, "}, %d, %lld, %lld);", nin, (long long)(n / cols), (long long)cols);
}

/* Operator i's kernel call, its operands named by p->cname. */
static void emit_kernel(StrBuf *b, const Program *p, int i, int64_t rank, int64_t *members)
{
	const Lowered *l = p->l;
	const LOp *o = &l->ops[i];
	const LValue *y = &l->values[o->result];
	Attrs a = {0};
	int other;
	const char *bcast;
	if (half_chain(l, o, &other, &bcast)) {
		if (o->grad == GRAD_ADJOINT)
			lowered_rank_attrs(l, differentiated(l, o), rank, &a, members);
		emit_half_chain(b, p, o, &a, other, bcast);
		return;
	}
	switch (o->grad) {
	case GRAD_SEED:
	case GRAD_ZERO: {
		char seed[64] = "1.0";   /* with accumulate_steps N: 1/N, the gradient of the micro-batches' mean loss */
		if (l->once)
			snprintf(seed, sizeof seed, "%s / %lld", l->overflow >= 0 ? "loss_scale" : "1.0",
			         (long long)l->m->train->accumulate_steps);
		else if (l->overflow >= 0)
			snprintf(seed, sizeof seed, "loss_scale");
		sb_printf(b, "sc_fill(rt, %s, %s, %lld, %s);", p->cname[o->result], sc_dtype_name(y->type.dtype),
		          (long long)numel(y), o->grad != GRAD_SEED ? "0.0" : seed);
		break;
	}
	case GRAD_ACCUM:
		emit_binary(b, p, "sc_binary", "SC_ADD", o->in[0], o->in[1], o->result);
		break;
	case GRAD_SCALE:
		sb_printf(b, "sc_scale(rt, %s, %s, %lld, %.17g);", p->cname[o->in[0]], p->cname[o->result],
		          (long long)numel(y), o->scale);
		break;
	case GRAD_MAX_MASK:
		sb_printf(b, "sc_where_equal(rt, %s, %s, %s, %s, %lld);", p->cname[o->in[0]], p->cname[o->in[1]],
		          p->cname[o->in[2]], p->cname[o->result], (long long)numel(y));
		break;
	case GRAD_TIE_COUNT: {   /* a ReduceProd's: its piece's nonzero product (k 0) or zero count (k 1) */
		if (op_is_segment(o->op)) {   /* a segment reduction's, by its ids */
			emit_segment_stat(b, p, o);
			break;
		}
		const LValue *x = &l->values[o->in[0]];
		int64_t axes[MAX_DIMS];
		int na = reduce_axes(&differentiated(l, o)->a, x->type.rank, axes);
		if (o->op == OP_REDUCE_PROD)
			sb_printf(b, "sc_reduce_prod_stat(rt, %s, %d, %s, ", p->cname[o->in[0]], o->k, p->cname[o->result]);
		else
			sb_printf(b, "sc_count_equal(rt, %s, %s, %s, ", p->cname[o->in[0]], p->cname[o->in[1]],
			          p->cname[o->result]);
		dims_lit(b, x->type.dims, x->type.rank);
		sb_printf(b, ", %d, ", x->type.rank);
		ints_lit(b, axes, na);
		sb_printf(b, ", %d);", na);
		break;
	}
	case GRAD_SQNORM:
		emit_sum_squares(b, p, o);
		break;
	case GRAD_LAMB_NORMS:
		emit_lamb_norms(b, p, o);
		break;
	case GRAD_CLIP:
		sb_printf(b, "sc_clip_by_norm(rt, %s, %s, %lld, %s, %.17g);", p->cname[o->in[0]], p->cname[o->result],
		          (long long)numel(y), p->cname[o->in[1]], l->m->train->clip_global_norm);
		break;
	case GRAD_ADJOINT:
		lowered_rank_attrs(l, differentiated(l, o), rank, &a, members);
		emit_adjoint(b, p, o, &a, op_scratch(p, o));
		break;
	case GRAD_NONE:
		lowered_rank_attrs(l, o, rank, &a, members);
		if (o->step && o->step->kind != STEP_SLICE)
			emit_collective(b, p, o, i);
		else
			emit_forward(b, p, o, &a);
		break;
	}
	if (l->fusion && l->fusion[i].rounds != DT_F32)   /* fuse.c, fold_widening_casts */
		sb_printf(b, "\n\t\tsc_round(rt, %s, %s, %lld);   /* the product as its %s result would be */",
		          p->cname[o->result], sc_dtype_name(l->fusion[i].rounds), (long long)numel(y),
		          dtype_name(l->fusion[i].rounds));
}

/* `sc_cast(rt, x, x_dt, y, y_dt, n);` between value v and its Float32 copy at off. */
static void emit_widen(StrBuf *b, const Program *p, int v, int64_t off, bool narrow)
{
	const LValue *x = &p->l->values[v];
	const char *dt = sc_dtype_name(x->type.dtype);
	if (narrow)
		sb_printf(b, "sc_cast(rt, (float *)(slab + %lld), SC_F32, %s, %s, %lld);", (long long)off, p->cname[v], dt,
		          (long long)numel(x));
	else
		sb_printf(b, "sc_cast(rt, %s, %s, (float *)(slab + %lld), SC_F32, %lld);", p->cname[v], dt, (long long)off,
		          (long long)numel(x));
}

static void emit_op_body(StrBuf *b, const Program *p, int i, int64_t rank, int64_t *members);

/* Operator i, under its stage's guard (on_stage). */
static void emit_op(StrBuf *b, const Program *p, int i, int64_t rank, int64_t *members)
{
	StrBuf t = {0};
	sb_putc(&t, '\t');
	emit_op_body(&t, p, i, rank, members);
	on_stage(b, p, p->l->ops[i].op == OP_SEND_RECV ? -1 : p->l->ops[i].stage, &t);
	sb_free(&t);
}

static void emit_op_body(StrBuf *b, const Program *p, int i, int64_t rank, int64_t *members)
{
	const Lowered *l = p->l;
	const LOp *o = &l->ops[i];
	if (o->op == OP_FUSED) {   /* a placeholder: the line says which kernel computes it (fuse.c) */
		const LOp *f = &l->ops[l->fusion[i].into];
		if (f->op == OP_EW_CHAIN)
			sb_printf(b, "\t/* %%%s = %s: computed by %%%s's elementwise chain (fused) */\n", l->values[o->result].name,
			          op_info[unfused(l, i)->op].name, l->values[f->result].name);
		else if (f->op == OP_NORM_GRAD || f->op == OP_FLASH_ATTENTION_GRAD)
			sb_printf(b, "\t/* %%%s: by the kernel below that computes %%%s's gradients together (fused) */\n",
			          l->values[o->result].name, l->values[differentiated(l, o)->result].name);
		else
			sb_printf(b, "\t/* %%%s = %s: computed by the kernel that reads it (fused) */\n", l->values[o->result].name,
			          op_info[unfused(l, i)->op].name);
		return;
	}
	if (o->op == OP_TRANSPOSE_FOLDED) {   /* fuse.c, plan_views */
		if (l->fusion[i].fold == FOLD_READ)
			sb_printf(b, "\t/* %%%s: %%%s's bytes, which BatchMatMuls read with strides (no copy) */\n",
			          l->values[o->result].name, l->values[o->in[0]].name);
		else
			sb_printf(b, "\t/* %%%s: written in place by a BatchMatMul, with strides, as %%%s (no copy) */\n",
			          l->values[o->result].name, l->values[o->in[0]].name);
		return;
	}
	if (p->view[o->result] >= 0) {   /* plan_views */
		sb_printf(b, "\t/* %%%s: %%%s's bytes, in its buffer (no copy) */\n", l->values[o->result].name,
		          l->values[o->in[0]].name);
		return;
	}
	Widened w;
	widened(l, o, op_scratch(p, o) + kernel_scratch(l, o), &w);
	sb_puts(b, "\t");
	if (!w.n) {
		emit_kernel(b, p, i, rank, members);
	} else {   /* half operands: the Float32 kernel on their widened copies */
		sb_printf(b, "/* %s on %s: in Float32%s */\n\t\t", op_info[unfused(l, i)->op].name,
		          dtype_name(l->values[w.value[0]].type.dtype), w.nread < w.n ? ", rounded once" : "");
		for (int j = 0; j < w.nread; j++) {
			emit_widen(b, p, w.value[j], w.off[j], false);
			sb_puts(b, "\n\t\t");
		}
		StrBuf names[MAX_WIDENED] = {{0}};
		for (int j = 0; j < w.n; j++) {
			sb_printf(&names[j], "((float *)(slab + %lld))", (long long)w.off[j]);
			p->arg[w.value[j]] = names[j].data;
		}
		Program q = *p;
		q.cname = p->arg;
		q.widened = &w;
		emit_kernel(b, &q, i, rank, members);
		for (int j = 0; j < w.n; j++) {
			p->arg[w.value[j]] = p->cname[w.value[j]];
			sb_free(&names[j]);
		}
		for (int j = w.nread; j < w.n; j++) {
			sb_puts(b, "\n\t\t");
			emit_widen(b, p, w.value[j], w.off[j], true);
		}
	}
	if (o->why)
		sb_printf(b, "  /* %s */", o->why);
	sb_putc(b, '\n');
}

/* ---- inputs, parameters and results ---- */

static double lit_arg(const Lit *init, int k, double dflt)
{
	return init && init->kind == LIT_APPLY && k < init->nitems && lit_is_number(init->items[k])
	           ? lit_number(init->items[k]) : dflt;
}

/* For token ids and labels: `, bound, "what bounds them"`, the arguments that
 * check them against what they index (index_bound); nothing for other values. */
static void bound_args(StrBuf *b, const Lowered *l, int v)
{
	int user;
	int64_t bound = index_bound(l->flat->g, v, &user);
	if (bound < 0)
		return;
	StrBuf why = {0};
	index_bound_text(&why, l->flat->g, user, bound);
	sb_printf(b, ", %lld, \"%s\"", (long long)bound, why.data);   /* names need no escaping (the grammar's) */
	sb_free(&why);
}

/* Input or parameter v from its file (a parameter: or the checkpoint), else its
 * initializer, into dst (fill_dst for a constant initializer's sc_fill); pieces:
 * `gdims, ndim, start, ldims`; in: the indent of the `else`. */
static void emit_fill(StrBuf *b, const Program *p, int v, const char *dst, const char *fill_dst, const char *pieces,
                      const char *in)
{
	const Lowered *l = p->l;
	const Value *gv = &l->flat->g->values[v];
	const LValue *x = &l->values[v];
	const char *dt = sc_dtype_name(x->type.dtype);
	const Lit *init = gv->init;
	const char *kind = init ? init->s : gv->type.is_param ? "normal" : "uniform";
	StrBuf bound = {0};
	bound_args(&bound, l, v);
	sb_printf(b, "if ((file = sc_option(rt, \"%s\", \"%s\")))\n%s\tsc_load_%s(rt, \"%s\", file, %s, %s, %s%s",
	          gv->type.is_param ? "--param" : "--input", gv->name, in, bound.len ? "indices" : "npy", gv->name, dst, dt,
	          pieces, bound.len ? bound.data : "");
	sb_free(&bound);
	if (gv->type.is_param)   /* a --param file wins over the checkpoint's tensor */
		sb_printf(b, ");\n\telse if (ckpt)\n\t\tsc_load_safetensors(rt, ckpt, \"%s\", %s, %s, %s", gv->name, dst, dt, pieces);
	sb_printf(b, ");\n%selse", in);
	if (!strcmp(kind, "zeros") || !strcmp(kind, "ones") || !strcmp(kind, "constant")) {
		double value = !strcmp(kind, "ones") ? 1 : !strcmp(kind, "constant") ? lit_arg(init, 0, 0) : 0;
		if (gv->type.is_param && l->stages > 1)
			sb_printf(b, " if (stage == %d)", x->stage);
		sb_printf(b, "\n%s\tsc_fill(rt, %s, %s, %lld, %.17g);\n", in, fill_dst, dt, (long long)numel(x), value);
		return;
	}
	sb_printf(b, "\n%s\tsc_init_%s(rt, %s, %s, \"%s\", %lldu, %s", in, kind, dst, dt, gv->name, (long long)l->m->ctx.seed,
	          pieces);
	if (!strcmp(kind, "normal"))
		sb_printf(b, ", %.17g);\n", lit_arg(init, 0, 0.01));
	else if (!strcmp(kind, "randint"))
		sb_printf(b, ", %lld, %lld);\n", (long long)lit_arg(init, 0, 0), (long long)lit_arg(init, 1, 1));
	else
		sb_printf(b, ", %.17g, %.17g);\n", lit_arg(init, 0, 0), lit_arg(init, 1, 1));
}

/* Micro-batch `micro`'s rows of input v (split by the step's batch,
 * rebatch.c) into dst, where no --data feeds it: `in` its indent. */
static void emit_step_fill(StrBuf *b, const Program *p, int v, const char *dst, const char *in)
{
	StrBuf pieces = {0};
	step_piece_args(&pieces, p, v);
	sb_puts(b, in);
	emit_fill(b, p, v, dst, dst, pieces.data, in);
	sb_free(&pieces);
}

/* After sc_data_step: each input that may stream where its piece of the
 * step's batch is (sc_data_at, in the order sc_data_input registered them). */
static void emit_data_at(StrBuf *b, const Program *p, const char *indent)
{
	for (int v = 0, k = 0; v < p->l->nparams; v++)
		if (may_stream(p->l, v)) {
			sb_printf(b, "%s%s = sc_data_at(data, %d);\n", indent, p->cname[v], k);
			if (step_rows(p->l, v)) {   /* no --data: the micro-batch's rows of the step's batch (emit_input) */
				StrBuf in = {0};
				sb_printf(b, "%sif (!sc_data_fed(data, %d)) {\n", indent, k);
				sb_printf(&in, "%s\t", indent);
				emit_step_fill(b, p, v, p->cname[v], in.data);
				sb_printf(b, "%s}\n", indent);
				sb_free(&in);
			}
			k++;
		}
}

static void emit_input(StrBuf *b, const Program *p, int v)
{
	const Lowered *l = p->l;
	const Value *gv = &l->flat->g->values[v];
	const char *c = p->cname[v], *dt = sc_dtype_name(l->values[v].type.dtype);
	if (gv->literal) {   /* a number written as an operand: no file feeds it */
		sb_printf(b, "\tsc_fill(rt, %s, %s, 1, %.17g);  /* %s */\n", c, dt, lit_number(gv->literal), gv->literal->s);
		return;
	}
	if (may_stream(l, v)) {   /* a batch a step from a --data file */
		StrBuf reg = {0};
		sb_printf(&reg, "sc_data_input(data, \"%s\", %s, %s, ", gv->name, c, dt);
		piece_args(&reg, p, v);
		size_t at = reg.len;
		bound_args(&reg, l, v);
		sb_puts(&reg, reg.len > at ? ")" : ", -1, NULL)");
		if (step_rows(l, v) && !pipelined(l)) {   /* emit_data_at fills each micro-batch's rows before its pass */
			sb_printf(b, "\t(void)%s;   /* else each micro-batch's rows of the step's batch, before its pass */\n",
			          reg.data);
			sb_free(&reg);
			return;
		}
		sb_printf(b, "\tif (%s)\n\t\t;   /* read before each step (sc_data_step) */\n\telse ", reg.data);
		sb_free(&reg);
	} else {
		sb_putc(b, '\t');
	}
	if (step_rows(l, v)) {   /* a pipeline: each micro-batch's slot its rows of the step's batch */
		sb_printf(b, "for (int64_t micro = 0; micro < %lld; micro++) {   /* micro-batch micro's rows of the step's "
		          "batch */\n\t\tvoid *slot = slab + %lld + micro * %lld;\n", (long long)l->m->train->accumulate_steps,
		          (long long)p->offset[v], (long long)p->stride[v]);
		emit_step_fill(b, p, v, "slot", "\t\t");
		sb_puts(b, "\t}\n");
		return;
	}
	StrBuf held = {0}, pieces = {0};   /* a parameter's bytes on its stage's ranks (on a pipeline; NULL on the others) */
	held_arg(&held, p, v, c);
	piece_args(&pieces, p, v);
	emit_fill(b, p, v, gv->type.is_param ? held.data : c, c, pieces.data, "\t");
	sb_free(&held);
	sb_free(&pieces);
}

static void emit_save(StrBuf *b, const Program *p, int v, const char *file)
{
	const LValue *x = &p->l->values[v];
	sb_printf(b, "\tsc_save_npy(rt, out_dir, \"%s\", ", file);
	held_arg(b, p, v, p->cname[v]);
	sb_printf(b, ", %s, ", sc_dtype_name(x->type.dtype));
	piece_args(b, p, v);
	sb_puts(b, ");\n");
}

/* Dynamic loss scaling (MindSpore's DynamicLossScaleManager): an inf or NaN
 * in the scaled gradients shows in their squared global norm, which every
 * rank holds whole; then the step is skipped and the scale divided by
 * scale_factor (not below 1), and SC_MAX_SKIPS_AT_1 steps in a row skipped
 * at scale 1 stop the run (shardc_rt.h); else the gradients are unscaled for
 * the update (a half one through its Float32 copy in the scratch, plan.c). */
static void emit_unscale(StrBuf *b, const Program *p)
{
	const Lowered *l = p->l;
	sb_printf(b, "\n\t\t/* Loss scaling: skip the step on an overflow, else unscale the gradients. */\n"
	          "\t\tfloat sqnorm;\n\t\tsc_to_host(rt, &sqnorm, %s, sizeof sqnorm);\n\t\tif (!isfinite(sqnorm)) {\n"
	          "\t\t\tdouble next = loss_scale / %.17g > 1 ? loss_scale / %.17g : 1;\n"
	          "\t\t\tif (sc_rank(rt) == 0)\n\t\t\t\tprintf(\"step: %%lld, overflow, loss scale %%.10g -> %%.10g, step "
	          "skipped\\n\", (long long)step, loss_scale, next);\n"
	          "\t\t\tif (loss_scale == 1)   /* skipped at scale 1: SC_MAX_SKIPS_AT_1 in a row stop the run */\n"
	          "\t\t\t\tsc_check_skips(rt, step, ++skipped_at_1);\n"
	          "\t\t\tloss_scale = next;\n\t\t\tgood_steps = 0;\n\t\t\tgoto step_done;\n\t\t}\n\t\tskipped_at_1 = 0;\n",
	          p->cname[l->overflow], l->m->train->scale_factor, l->m->train->scale_factor);
	for (int v = 0; v < l->nparams; v++) {
		if (l->grad[v] < 0)
			continue;
		const LValue *g = &l->values[l->grad[v]];
		const char *c = p->cname[l->grad[v]];
		long long n = (long long)numel(g), at = (long long)p->scratch;
		if (!dtype_is_half(g->type.dtype)) {
			sb_printf(b, "\t\tsc_scale(rt, %s, %s, %lld, 1.0 / loss_scale);\n", c, c, n);
			continue;
		}
		/* a half gradient: unscaled in Float32 and rounded once */
		const char *dt = sc_dtype_name(g->type.dtype);
		sb_printf(b, "\t\tsc_cast(rt, %s, %s, (float *)(slab + %lld), SC_F32, %lld);\n", c, dt, at, n);
		sb_printf(b, "\t\tsc_scale(rt, (float *)(slab + %lld), (float *)(slab + %lld), %lld, 1.0 / loss_scale);\n",
		          at, at, n);
		sb_printf(b, "\t\tsc_cast(rt, (float *)(slab + %lld), SC_F32, %s, %s, %lld);\n", at, c, dt, n);
	}
	sb_puts(b, "\t\tupdates++;\n");
}

/* The group of partition k: its first member is the rank's, from the table;
 * the grid's shape is every rank's. The line does not grow with the ranks. */
static void emit_group(StrBuf *b, const Program *p, int k)
{
	int64_t size[MAX_AXES], stride[MAX_AXES], n;
	int ng;
	group_grid(&p->l->ops[p->part[k]], 0, size, stride, &ng, &n);
	const Entry *e = &p->entry[p->part_entry[k]];
	sb_printf(b, "\tsc_group *g%d = sc_group_split_grid(rt, %s", k, e->pos >= 0 ? "(int)" : "");
	entry_ref(b, e, 0, 1, false);
	sb_printf(b, ", %d, ", ng);
	ints_lit(b, size, ng);
	sb_puts(b, ", ");
	ints_lit(b, stride, ng);
	sb_printf(b, ");  /* %lld ranks */\n", (long long)n);
}

static void emit_names(StrBuf *b, const Lowered *l, const char *var, bool params)
{
	const Graph *g = l->flat->g;
	int n = 0;
	sb_printf(b, "\tstatic const char *const %s[] = {", var);
	for (int v = 0; v < l->flat->nentry; v++)
		if (g->values[v].type.is_param == params)
			sb_printf(b, n++ ? ", \"%s\"" : "\"%s\"", g->values[v].name);
	sb_printf(b, "%s};\n\tsc_check_names(rt, \"%s\", %s, %d);\n", n ? "" : "NULL", params ? "--param" : "--input",
	          var, n);
}

/* The inputs' initializers, beside input_names: those no --input gives
 * run on them, with a warning, or stop the run with --strict-inputs. */
static void emit_input_inits(StrBuf *b, const Lowered *l)
{
	const Graph *g = l->flat->g;
	int n = 0;
	sb_puts(b, "\tstatic const char *const input_inits[] = {");
	for (int v = 0; v < l->flat->nentry; v++) {
		if (g->values[v].type.is_param)
			continue;
		sb_puts(b, n++ ? ", \"" : "\"");
		if (g->values[v].init)
			init_print(b, g->values[v].init);
		else
			sb_puts(b, "uniform(0, 1)");   /* an input's default (docs/output.md, Initializers) */
		sb_putc(b, '"');
	}
	sb_printf(b, "%s};\n\tsc_check_inputs(rt, %s, input_inits, %d);\n", n ? "" : "NULL", n ? "input_names" : "NULL", n);
}

/* This step's learning rate, lr: the schedule at MindSpore's global_step,
 * the updates made before this one (step - 1, or with loss scaling the
 * updates not skipped). */
static void emit_lr(StrBuf *b, const Program *p)
{
	static const char *const names[] = {"SC_LR_CONSTANT", "SC_LR_WARMUP", "SC_LR_COSINE", "SC_LR_POLYNOMIAL",
	                                    "SC_LR_EXPONENTIAL", "SC_LR_COSINE_WARMUP"};
	const Train *t = p->l->m->train;
	sb_printf(b, "\t\tconst double lr = sc_learning_rate(%s, (const double[]){", names[t->lr_schedule]);
	if (t->lr_schedule == LR_CONSTANT)
		sb_printf(b, "%.17g", t->learning_rate);
	for (int k = 0; t->lr_schedule != LR_CONSTANT && k < t->lr_nargs; k++)
		sb_printf(b, k ? ", %.17g" : "%.17g", t->lr_args[k]);
	sb_printf(b, "}, %s);\n", p->l->overflow >= 0 ? "updates" : "step - 1");
}

/* The step's progress line (sc_print_step), after the backward pass: the
 * loss and the squared global norm (when clip_global_norm or loss scaling
 * computes it; norm says so), copied to the host where they are computed,
 * lr, and the samples a step (dim 0 of the first input, times
 * accumulate_steps) or, for an integer input of rank 2 or more (token ids),
 * the tokens. */
static void emit_progress(StrBuf *b, const Program *p, bool norm)
{
	const Lowered *l = p->l;
	const Graph *g = l->flat->g;
	double items = 0;
	const char *unit = "samples";
	for (int v = 0; v < l->flat->nentry && items == 0; v++) {
		const Type *ty = &g->values[v].type;
		if (ty->is_param || ty->rank < 1)
			continue;
		items = (double)ty->dims[0];
		if ((ty->dtype == DT_I32 || ty->dtype == DT_I64) && ty->rank >= 2) {
			items *= (double)ty->dims[1];
			unit = "tokens";
		}
	}
	if (l->once)   /* a step's micro-batches */
		items *= (double)l->m->train->accumulate_steps;
	sb_printf(b, "\t\tsc_print_step(rt, step, steps, t0, loss_now, lr, %s, %.17g, \"%s\");\n", norm ? "sqnorm_now" : "-1",
	          items, unit);
}

/* text appended to b, each line one tab further in */

/* accumulate_steps: gradient v, where the tail begins (accumulate.c), added
 * to its Float32 sum; the last micro-batch writes the sum into v for the
 * tail and the update (a half v: widened into the scratch, rounded once). */
static void emit_accumulate_body(StrBuf *b, const Program *p, int v)
{
	const LValue *x = &p->l->values[v];
	long long n = (long long)numel(x), acc = (long long)p->acc[v], at = (long long)p->scratch;
	const char *c = p->cname[v];
	if (!dtype_is_half(x->type.dtype)) {
		sb_printf(b, "\t\tsc_binary(rt, SC_ADD, (float *)(slab + %lld), (const int64_t[]){%lld}, 1, %s, (const "
		          "int64_t[]){%lld}, 1, last_micro ? %s : (float *)(slab + %lld), (const int64_t[]){%lld}, 1);  /* %%%s "
		          "summed over the micro-batches */\n", acc, n, c, n, c, acc, n, x->name);
		return;
	}
	const char *dt = sc_dtype_name(x->type.dtype);
	sb_printf(b, "\t\t/* %%%s summed over the micro-batches, in Float32 */\n", x->name);
	sb_printf(b, "\t\tsc_cast(rt, %s, %s, (float *)(slab + %lld), SC_F32, %lld);\n", c, dt, at, n);
	sb_printf(b, "\t\tsc_binary(rt, SC_ADD, (float *)(slab + %lld), (const int64_t[]){%lld}, 1, (float *)(slab + "
	          "%lld), (const int64_t[]){%lld}, 1, last_micro ? (float *)(slab + %lld) : (float *)(slab + %lld), (const "
	          "int64_t[]){%lld}, 1);\n", acc, n, at, n, at, acc, n);
	sb_printf(b, "\t\tif (last_micro)\n\t\t\tsc_cast(rt, (float *)(slab + %lld), SC_F32, %s, %s, %lld);\n", at, c,
	          dt, n);
}

/* emit_accumulate_body under v's stage's guard. */
static void emit_accumulate(StrBuf *b, const Program *p, int v)
{
	StrBuf t = {0};
	emit_accumulate_body(&t, p, v);
	on_stage(b, p, p->l->values[v].stage, &t);
	sb_free(&t);
}

/* The tail's operators gathered in tail (accumulate.c): the sums of the
 * gradients they read first (every micro-batch), then the operators, run by
 * the last micro-batch only. */
static void flush_tail(StrBuf *b, const Program *p, StrBuf *tail, const int *read, int nread, bool *summed)
{
	if (!tail->len)
		return;
	for (int k = 0; k < nread; k++)
		if (p->l->accumulated[read[k]] && !summed[read[k]]) {
			summed[read[k]] = true;
			emit_accumulate(b, p, read[k]);
		}
	sb_puts(b, "\t\tif (last_micro) {   /* once a step, on the gradients summed over the micro-batches */\n");
	indent(b, tail);
	sb_puts(b, "\t\t}\n");
	tail->len = 0;
}

/* The backward pass; whether it computes the squared global norm for
 * clip_global_norm. With accumulate_steps, the operators that run once a
 * step (op_once) wait in `if (last_micro)` blocks, the gradients they read
 * summed before them; the gradients no such operator reads are summed at
 * the end. */
static bool emit_backward(StrBuf *b, const Program *p, int64_t rank, int64_t *members)
{
	const Lowered *l = p->l;
	bool clip = false, *summed = l->once ? xcalloc((size_t)l->nvalues, sizeof(bool)) : NULL;
	StrBuf tail = {0};
	int *read = NULL, nread = 0, cap = 0;   /* what the tail's operators read */
	for (int i = l->nfwd; i < l->nops; i++) {
		if (op_shadow(l, i))   /* no code (recompute.c) */
			continue;
		StrBuf *w = b;
		if (op_once(l, i)) {
			w = &tail;
			for (int k = 0; k < l->ops[i].nin; k++) {
				if (nread == cap)
					read = xrealloc(read, sizeof(int) * (size_t)(cap = cap ? 2 * cap : 64));
				read[nread++] = l->ops[i].in[k];
			}
		} else {
			flush_tail(b, p, &tail, read, nread, summed);
			nread = 0;
		}
		if (l->ops[i].grad == GRAD_CLIP && !clip) {   /* the squared global norm, whole on every rank */
			sb_printf(w, "\t\tsc_to_host(rt, &sqnorm_now, %s, sizeof sqnorm_now);\n", p->cname[l->ops[i].in[1]]);
			clip = true;
		}
		emit_op(w, p, i, rank, members);
	}
	flush_tail(b, p, &tail, read, nread, summed);
	for (int v = 0; l->once && v < l->nvalues; v++)
		if (l->accumulated[v] && !summed[v])
			emit_accumulate(b, p, v);
	sb_free(&tail);
	free(read);
	free(summed);
	return clip;
}

/* program.c's main; rank only feeds lowered_rank_attrs, whose rank-dependent
 * attributes every caller takes from the table instead. */
static void emit_main(StrBuf *b, const Program *p, int64_t rank)
{
	const Lowered *l = p->l;
	const Graph *g = l->flat->g;
	const Train *t = l->m->train;
	int64_t *members = xmalloc(sizeof(int64_t) * (size_t)l->device_num);
	sb_printf(b, "int main(int argc, char **argv)\n{\n\tsc_rt *rt = sc_init(&argc, &argv, %lld);\n",
	          (long long)(l->device_num * l->stages));
	sb_puts(b, "\tconst int64_t *const T = sc_ranks[sc_rank(rt)];   /* this rank's table: rank_<r>.c */\n\t(void)T;\n");
	if (l->stages > 1)
		sb_printf(b, "\tconst int stage = (int)(sc_rank(rt) / %lld);   /* this rank's pipeline stage: ranks stage x %lld "
		          "on */\n", (long long)l->device_num, (long long)l->device_num);
	emit_names(b, l, "input_names", false);
	emit_input_inits(b, l);
	emit_names(b, l, "param_names", true);
	int np = 0;
	for (int v = 0; v < l->nparams; v++)
		np += g->values[v].type.is_param;
	sb_printf(b, "\tsc_safetensors *ckpt = sc_safetensors_open(rt, \"--params\", sc_option(rt, \"--params\", NULL), "
	          "sc_option(rt, \"--param-names\", NULL), param_names, %d);\n", np);
	sb_printf(b, "\tint64_t steps = sc_steps(rt, %lld);\n", (long long)(t ? t->steps : 1));
	sb_puts(b, "\tconst char *out_dir = sc_output_dir(rt), *file = NULL;   /* writable, or every rank stops */\n"
	        "\t(void)file;\n\tsc_data *data = sc_data_new(rt);   /* inputs that stream (--data) */\n");
	emit_checkpoint_options(b, p);
	if (p->npart) {
		sb_puts(b, "\n\t/* Groups: each a partition of the ranks; this rank names its own group. */\n");
		for (int k = 0; k < p->npart; k++)
			emit_group(b, p, k);
	}
	bool across = false;   /* a StageSum: the ranks at this rank's place in every pipeline stage */
	for (int i = 0; i < l->nops && !across; i++)
		across = l->ops[i].op == OP_STAGE_SUM;
	if (across)
		sb_printf(b, "\tsc_group *across = sc_group_split_grid(rt, (int)(sc_rank(rt) %% %lld), 1, (const int[]){%lld}, "
		          "(const int[]){%lld});   /* a rank with those at its place in the other stages */\n",
		          (long long)l->device_num, (long long)l->stages, (long long)l->device_num);
	sb_printf(b, "\n\t/* Memory: parameters, inputs and optimizer state first (%lld bytes), then every\n"
	          "\t * other value placed by liveness: buffers whose lives do not overlap share bytes. */\n"
	          "\tchar *slab = sc_slab(rt, %lld);\n", (long long)p->persistent_bytes, (long long)p->slab_bytes);
	bool *named = named_values(p);
	for (int v = 0; v < l->nvalues; v++) {
		const LValue *x = &l->values[v];
		if (p->offset[v] < 0 || !named[v])   /* fused away, or only views pass through it */
			continue;
		sb_printf(b, "\t%s *%s%s = (%s *)(slab + %lld);  /* %%%s (", c_type(x->type.dtype),
		          may_stream(l, v) || p->slots[v] > 1 ? "" : "const ", p->cname[v], c_type(x->type.dtype),
		          (long long)p->offset[v], x->name);
		for (int d = 0; d < x->type.rank; d++)
			sb_printf(b, d ? ", %lld" : "%lld", (long long)x->type.dims[d]);
		sb_puts(b, x->type.rank == 1 ? ",) */\n" : ") */\n");
	}
	free(named);
	sb_puts(b, "\n\t/* Inputs and parameters: this rank's slice of a batch a step (--data), of a file\n"
	        "\t * (--input, --param), of the checkpoint (--params), or of the initializer. */\n");
	for (int v = 0; v < l->nparams; v++)
		emit_input(b, p, v);
	int64_t n = l->once ? t->accumulate_steps : 1;   /* micro-batches a step */
	sb_puts(b, "\tsc_safetensors_close(ckpt);\n");
	if (t && l->overflow >= 0)
		sb_printf(b, "\tdouble loss_scale = %.17g;   /* dynamic loss scaling (precision fp16) */\n"
		          "\tint64_t good_steps = 0, updates = 0, skipped_at_1 = 0;\n", l->m->train->init_loss_scale);
	if (t)
		emit_resume(b, p);
	else
		sb_puts(b, "\tconst int64_t first = 1;\n");
	if (n > 1)
		sb_printf(b, "\tsc_data_start(rt, data, (first - 1) * %lld + 1, steps * %lld);   /* --data: a batch a "
		          "micro-batch, the first step's first read from here */\n", (long long)n, (long long)n);
	else
		sb_puts(b, "\tsc_data_start(rt, data, first, steps);   /* --data: the first step's batch read from here */\n");
	sb_puts(b, "\n\tdouble t0 = sc_time(rt);\n\tfor (int64_t step = first; step <= steps; step++) {\n");
	if (n == 1) {
		sb_puts(b, "\t\tsc_data_step(rt, data, step);   /* --data: this step's batch in place, the next one read "
		        "meanwhile */\n");
		emit_data_at(b, p, "\t\t");
	}
	if (t)
		emit_lr(b, p);
	StrBuf micro = {0};   /* with accumulate_steps: the body of the micro-batches' loop */
	StrBuf *w = n > 1 ? &micro : b;
	if (n > 1) {
		if (l->stages == 1) {
			int64_t first = p->persistent_bytes;
			for (int v = 0; v < l->nvalues; v++)
				first = p->acc[v] >= 0 && p->acc[v] < first ? p->acc[v] : first;
			sb_printf(b, "\t\tsc_fill(rt, (float *)(slab + %lld), SC_F32, %lld, 0.0);   /* the gradients' sums over the "
			          "micro-batches */\n", (long long)first, (long long)(p->persistent_bytes - first) / 4);
		} else {   /* each stage's sums end its persistent bytes */
			sb_printf(b, "\t\tstatic const int64_t sums[%lld][2] = {", (long long)l->stages);
			for (int s = 0; s < (int)l->stages; s++) {
				int64_t first = p->stage_persistent[s];
				for (int v = 0; v < l->nvalues; v++)
					if (p->acc[v] >= 0 && l->values[v].stage == s && p->acc[v] < first)
						first = p->acc[v];
				sb_printf(b, s ? ", {%lld, %lld}" : "{%lld, %lld}", (long long)first,
				          (long long)(p->stage_persistent[s] - first) / 4);
			}
			sb_puts(b, "};   /* each stage's gradient sums: where, how many floats */\n\t\tsc_fill(rt, (float *)(slab + "
			        "sums[stage][0]), SC_F32, sums[stage][1], 0.0);   /* the gradients' sums over the micro-batches */\n");
		}
		sb_printf(b, "\t\tfloat loss_now, sqnorm_now = -1;   /* printed after the backward pass */\n"
		          "\t\tdouble loss_sum = 0;\n\t\t(void)sqnorm_now;\n");
		if (pipelined(l))
			emit_pipeline_inputs(b, p, n);
		else {
			sb_printf(b, "\t\tfor (int64_t micro = 0; micro < %lld; micro++) {   /* accumulate_steps: micro-batches, one "
			          "update */\n\t\t\tconst int last_micro = micro == %lld;\n"
			          "\t\t\tconst int64_t batch = (step - 1) * %lld + micro + 1;   /* the run's micro-batches, from 1 */\n"
			          "\t\t\tsc_data_step(rt, data, batch);   /* --data: this micro-batch's batch in place, the next one "
			          "read meanwhile */\n", (long long)n, (long long)(n - 1), (long long)n);
			emit_data_at(b, p, "\t\t\t");
		}
	}
	StrBuf backward = {0};   /* a pipeline's: its passes in the order of its stage's schedule */
	for (int i = 0; i < l->nfwd; i++) {
		emit_op(w, p, i, rank, members);
	}
	if (t) {
		const LValue *lv = &l->values[l->loss];
		const char *lf = p->cname[l->loss];   /* the loss as a float32 */
		StrBuf cast = {0}, read = {0};   /* the loss read on the host: on a pipeline, by its stage */
		if (dtype_is_half(lv->type.dtype)) {
			sb_printf(&cast, "(float *)(slab + %lld)", (long long)p->scratch);
			sb_printf(&read, "\t\tsc_cast(rt, %s, %s, %s, SC_F32, 1);\n", lf, sc_dtype_name(lv->type.dtype), cast.data);
			lf = cast.data;
		}
		if (l->stages > 1) {   /* the last stage's loss, given to every rank once the step's passes are done */
			if (n > 1)
				sb_printf(&read, "\t\tsc_to_host(rt, &loss_micro, %s, sizeof loss_micro);\n\t\tloss_sum += loss_micro;\n", lf);
			else
				sb_printf(&read, "\t\tsc_to_host(rt, &loss_now, %s, sizeof loss_now);\n", lf);
			if (n > 1)
				sb_puts(w, "\t\tfloat loss_micro;\n");
			else
				sb_puts(b, "\t\tfloat loss_now = 0, sqnorm_now = -1;   /* printed after the backward pass */\n"
				        "\t\t(void)sqnorm_now;\n");
			on_stage(w, p, lv->stage, &read);
			if (!pipelined(l))
				sb_puts(w, "\n\t\t/* Backward. */\n");
		} else if (n > 1) {
			sb_puts(w, read.data ? read.data : "");
			sb_printf(w, "\t\tsc_check_loss(rt, step, %s);   /* NaN or inf: every rank stops */\n\t\tfloat loss_micro;\n"
			          "\t\tsc_to_host(rt, &loss_micro, %s, sizeof loss_micro);\n\t\tloss_sum += loss_micro;\n\n"
			          "\t\t/* Backward. */\n", lf, lf);
		} else {
			sb_puts(b, read.data ? read.data : "");
			sb_printf(b, "\t\tsc_check_loss(rt, step, %s);   /* NaN or inf: every rank stops */\n\t\tfloat loss_now, "
			          "sqnorm_now = -1;   /* printed after the backward pass */\n\t\tsc_to_host(rt, &loss_now, %s, "
			          "sizeof loss_now);\n\t\t(void)sqnorm_now;\n\n\t\t/* Backward. */\n", lf, lf);
		}
		sb_free(&cast);
		sb_free(&read);
		bool clip = emit_backward(pipelined(l) ? &backward : w, p, rank, members);
		long long root = (long long)lv->stage * (long long)l->device_num;   /* the loss's stage's first rank */
		if (n > 1) {
			if (pipelined(l))
				emit_pipeline_passes(b, p, n, &micro, &backward);
			else
				indent(b, &micro);
			sb_puts(b, "\t\t}\n");
			if (l->stages > 1)
				sb_printf(b, "\t\tsc_broadcast_host(rt, &loss_sum, sizeof loss_sum, %lld);   /* from the last stage */\n"
				          "\t\tsc_check_loss_host(rt, step, (float)loss_sum);   /* NaN or inf: every rank stops */\n", root);
			sb_printf(b, "\t\tloss_now = (float)(loss_sum / %lld);   /* the mean over the micro-batches */\n",
			          (long long)n);
		} else if (l->stages > 1)
			sb_printf(b, "\t\tsc_broadcast_host(rt, &loss_now, sizeof loss_now, %lld);   /* from the last stage */\n"
			          "\t\tsc_check_loss_host(rt, step, loss_now);   /* NaN or inf: every rank stops */\n", root);
		sb_free(&micro);
		sb_free(&backward);
		if (l->overflow >= 0) {   /* loss scaling's squared norm of the scaled gradients, whole on every rank */
			sb_printf(b, "\t\tsc_to_host(rt, &sqnorm_now, %s, sizeof sqnorm_now);\n\t\tsqnorm_now = (float)(sqnorm_now / "
			          "(loss_scale * loss_scale));\n", p->cname[l->overflow]);
			clip = true;
		}
		emit_progress(b, p, clip);
		if (l->overflow >= 0)
			emit_unscale(b, p);
		sb_puts(b, "\n\t\t/* Update. */\n");
		for (int v = 0; v < l->nparams; v++)
			if (l->grad[v] >= 0) {
				StrBuf u = {0};
				emit_update(&u, p, v);
				on_stage(b, p, l->values[v].stage, &u);
				sb_free(&u);
			}
		if (l->overflow >= 0)
			sb_printf(b, "\t\tif (++good_steps == %lld) {   /* scale_window good steps: grow */\n\t\t\tloss_scale *= "
			          "%.17g;\n\t\t\tgood_steps = 0;\n\t\t}\n", (long long)l->m->train->scale_window,
			          l->m->train->scale_factor);
		if (l->stages > 1)
			sb_puts(b, "\t\tsc_p2p_flush(rt);   /* this step's sends to the other stages taken */\n");
		sb_puts(b, l->overflow >= 0 ? "\tstep_done:\n" : "");   /* a skipped step's checkpoint too */
		emit_checkpoint(b, p);
	}
	sb_puts(b, "\t}\n\tdouble t1 = sc_time(rt);\n");
	if (t && l->stages > 1) {   /* each stage's time waiting for the others, beside the schedule's bubble */
		int64_t m = l->once ? t->accumulate_steps : 1;
		sb_printf(b, "\tsc_pipeline_report(rt, %lld, t1 - t0, %.17g);   /* (P - 1) / (M + P - 1) */\n",
		          (long long)l->stages, (double)(l->stages - 1) / pipeline_turns(l->stages, m));
	}
	sb_puts(b, "\tsc_data_close(rt, data);\n\n"
	        "\t/* Results: every rank passes its piece, rank 0 writes. */\n");
	for (int k = 0; k < l->nret; k++) {
		StrBuf f = {0};
		sb_printf(&f, "output_%d.npy", k);
		emit_save(b, p, l->rets[k], f.data);
		sb_free(&f);
	}
	for (int v = 0; t && v < l->nparams; v++)
		if (g->values[v].type.is_param) {
			StrBuf f = {0};
			sb_printf(&f, "param_%s.npy", g->values[v].name);
			emit_save(b, p, v, f.data);
			sb_free(&f);
		}
	if (t) {   /* and all of them in one checkpoint */
		sb_puts(b, "\tsc_safetensors_writer *ckpt_out = sc_safetensors_create(out_dir, \"params.safetensors\");\n");
		for (int v = 0; v < l->nparams; v++)
			if (g->values[v].type.is_param) {
				const LValue *x = &l->values[v];
				sb_printf(b, "\tsc_safetensors_add(ckpt_out, \"%s\", ", g->values[v].name);
				held_arg(b, p, v, p->cname[v]);
				sb_printf(b, ", %s, ", sc_dtype_name(x->type.dtype));
				piece_args(b, p, v);
				sb_puts(b, ");\n");
			}
		sb_puts(b, "\tsc_safetensors_write(rt, ckpt_out);\n");
	}
	sb_printf(b, "\tif (sc_rank(rt) == 0)\n\t\tprintf(\"time: %%lld %s in %%.6f s, %%.6g ms each\\n\", (long long)steps, "
	          "t1 - t0, 1e3 * (t1 - t0) / (double)steps);\n", t ? "steps" : "runs");
	sb_puts(b, "\tsc_finalize(rt);\n\treturn 0;\n}\n");
	free(members);
}

void emit_program(StrBuf *b, const Program *p)
{
	const Lowered *l = p->l;
	const Train *t = l->m->train;
	sb_printf(b, "/* program.c: every rank's program of @%s (%lld ranks), compiled by shardc from %s.\n"
	          " *\n"
	          " * Reads or initializes the rank's slices of the inputs and parameters, runs\n"
	          " * the graph%s, and writes the results (docs/output.md).\n"
	          " * Every number that differs between ranks is read from T, the rank's table:\n"
	          " * rank_<r>.c holds rank r's and says what each T[k] is. With rank r's numbers in\n"
	          " * place of T, the forward operators are those of ir/rank_<r>/step_parallel_end.ir\n"
	          " * (shardc --dump-ir); comments say why each collective is there. Sends %lld bytes\n"
	          " * per %s. Build: make (BACKEND=cpu|cuda); run: ./run.sh. */\n"
	          "#include \"shardc_rt.h\"\n\n#include <stdint.h>\n#include <stdio.h>\n\n"
	          "extern const int64_t *const sc_ranks[];   /* ranks.c: sc_ranks[r] is rank_<r>.c's table */\n\n",
	          l->flat->g->name, (long long)l->device_num, p->model,
	          t ? ", computes the gradients and updates the parameters, step by step" : "",
	          (long long)l->comm_bytes, t ? "training step" : "run");
	if (t && l->overflow >= 0)
		sb_puts(b, "#include <math.h>\n\n");
	size_t at = b->len;
	emit_main(b, p, 0);
	if (l->device_num > 1) {   /* the text must not depend on the rank: the last one's is the same */
		StrBuf other = {0};
		emit_main(&other, p, l->device_num - 1);
		if (other.len != b->len - at || memcmp(other.data, b->data + at, other.len))
			die("program.c depends on the rank: a rank-dependent number is not in the table");
		sb_free(&other);
	}
}
