/* emit_update.c: the optimizer's step on each trained parameter (nn.SGD,
 * nn.Momentum, nn.Adam, nn.AdamWeightDecay, nn.Lamb; docs/language.md,
 * Training), and Lamb's squared norms before it.
 *
 * Requires the plan (plan.c: each parameter's state slots, the scratch a
 * half parameter's Float32 copies take). The update runs on the rank's
 * piece of the parameter (its slice, with optimizer parallelism), its
 * gradient complete there; the state sits in the slab beside it. Lamb alone
 * looks past the piece: its trust ratio takes the whole parameter's norms,
 * which the backward pass's GRAD_LAMB_NORMS sums per rank and one AllReduce
 * completes (autodiff.c, lamb_norms). */
#include "emit_internal.h"

#include <string.h>

/* The parameters weight_decay_params names (MindSpore's group parameters);
 * without it, those not named like LayerNorm's (MindSpore's default decay
 * filter for ungrouped parameters), except in nn.SGD, whose SGD kernel
 * decays every parameter. */
double decay_of(const Train *t, int p, const char *name)
{
	if (t->decays)
		return t->decays[p] ? t->weight_decay : 0.0;
	if (t->optimizer != OPT_SGD && (strstr(name, "beta") || strstr(name, "gamma")))
		return 0.0;
	return t->weight_decay;
}

/* Which of the trained parameters v is (its place in Lamb's norms). */
static int trained_index(const Lowered *l, int v)
{
	int k = 0;
	for (int q = 0; q < v; q++)
		k += l->grad[q] >= 0;
	return k;
}

/* The optimizer's call on parameter v: the names of the parameter, its
 * gradient and its state (Momentum's v; Adam's, AdamWeightDecay's and Lamb's m, then v). */
static void emit_optimizer(StrBuf *b, const Program *p, int v, const char *c, const char *g, const char *s0,
                           const char *s1)
{
	const Lowered *l = p->l;
	const Train *t = l->m->train;
	long long n = (long long)numel(&l->values[v]);
	double wd = decay_of(t, v, l->flat->g->values[v].name);
	const char *count = l->overflow >= 0 ? "updates" : "step";   /* loss scaling skips steps: count updates */
	switch (t->optimizer) {   /* lr: this step's learning rate (emit_main) */
	case OPT_SGD:
		if (t->momentum > 0)
			sb_printf(b, "\t\tsc_sgd(rt, %s, %s, %s, %lld, lr, %.17g, %.17g, %.17g, %d, %s);\n", c, g, s0, n,
			          t->momentum, t->dampening, wd, t->nesterov, count);
		else
			sb_printf(b, "\t\tsc_sgd(rt, %s, %s, NULL, %lld, lr, 0, %.17g, %.17g, 0, %s);\n", c, g, n, t->dampening,
			          wd, count);
		break;
	case OPT_MOMENTUM:
		sb_printf(b, "\t\tsc_momentum(rt, %s, %s, %s, %lld, lr, %.17g, %.17g, %d);\n", c, g, s0, n, t->momentum, wd,
		          t->nesterov);
		break;
	case OPT_ADAM:
		sb_printf(b, "\t\tsc_adam(rt, %s, %s, %s, %s, %lld, lr, %.17g, %.17g, %.17g, %.17g, %s);\n", c, g, s0, s1, n,
		          t->beta1, t->beta2, t->eps, wd, count);
		break;
	case OPT_ADAM_WEIGHT_DECAY:
		sb_printf(b, "\t\tsc_adam_weight_decay(rt, %s, %s, %s, %s, %lld, lr, %.17g, %.17g, %.17g, %.17g);\n", c, g,
		          s0, s1, n, t->beta1, t->beta2, t->eps, wd);
		break;
	case OPT_LAMB:   /* the trust ratio from the whole parameter's norms (GRAD_LAMB_NORMS, then its AllReduce) */
		sb_printf(b, "\t\tsc_lamb(rt, %s, %s, %s, %s, %lld, lr, %.17g, %.17g, %.17g, %.17g, %s, %s + %d);\n", c, g, s0,
		          s1, n, t->beta1, t->beta2, t->eps, wd, count, p->cname[l->lamb_norms], 2 * trained_index(l, v));
		break;
	}
}

/* A half parameter's update computes on Float32 copies of it, its gradient
 * and its state (kept in the parameter's type), and rounds the parameter
 * and the state once. */
void emit_update(StrBuf *b, const Program *p, int v)
{
	const Lowered *l = p->l;
	const LValue *x = &l->values[v];
	long long st = (long long)p->state[v], state_bytes = (long long)aligned(value_bytes(x));
	int nstate = state_slots(l->m->train);
	StrBuf name[4] = {{0}};
	if (!dtype_is_half(x->type.dtype)) {
		sb_printf(&name[0], "(float *)(slab + %lld)", st);
		sb_printf(&name[1], "(float *)(slab + %lld)", st + state_bytes);
		emit_optimizer(b, p, v, p->cname[v], p->cname[l->grad[v]], name[0].data, name[1].data);
		sb_free(&name[0]);
		sb_free(&name[1]);
		return;
	}
	const char *dt = sc_dtype_name(x->type.dtype);
	long long n = (long long)numel(x), wide = (long long)aligned(numel(x) * 4);
	StrBuf src[4] = {{0}};
	sb_puts(&src[0], p->cname[v]);
	sb_puts(&src[1], p->cname[l->grad[v]]);
	for (int j = 0; j < nstate; j++)
		sb_printf(&src[2 + j], "(uint16_t *)(slab + %lld)", st + j * state_bytes);
	sb_printf(b, "\t\t/* %%%s is %s: updated in Float32, rounded once */\n", x->name, dtype_name(x->type.dtype));
	for (int j = 0; j < 2 + nstate; j++) {
		sb_printf(&name[j], "(float *)(slab + %lld)", (long long)p->scratch + j * wide);
		sb_printf(b, "\t\tsc_cast(rt, %s, %s, %s, SC_F32, %lld);\n", src[j].data, dt, name[j].data, n);
	}
	emit_optimizer(b, p, v, name[0].data, name[1].data, name[2].data, name[3].data);
	for (int j = 0; j < 2 + nstate; j++)
		if (j != 1)
			sb_printf(b, "\t\tsc_cast(rt, %s, SC_F32, %s, %s, %lld);\n", name[j].data, src[j].data, dt, n);
	for (int j = 0; j < 4; j++) {
		sb_free(&name[j]);
		sb_free(&src[j]);
	}
}


/* GRAD_LAMB_NORMS: per trained parameter k, into y[2k] and y[2k + 1], the
 * sums of squares of the parameter and of its Lamb update (this step's m and
 * v, not yet written) over the rank's piece if the rank holds its first copy
 * (the table's size; 0: not counted, the sums 0). */
void emit_lamb_norms(StrBuf *b, const Program *p, const LOp *o)
{
	const Lowered *l = p->l;
	const Train *t = l->m->train;
	const Entry *e = op_table(p, o);
	int n = o->nin / 2;
	for (int k = 0; k < n; k++) {
		int v = o->in[k];
		long long st = (long long)p->state[v], state_bytes = (long long)aligned(value_bytes(&l->values[v]));
		sb_printf(b, "%ssc_lamb_norms(rt, %s, %s, (const float *)(slab + %lld), (const float *)(slab + %lld), ",
		          k ? "\n\t\t" : "", p->cname[v], p->cname[o->in[n + k]], st, st + state_bytes);
		entry_ref(b, e, k, 1, false);
		sb_printf(b, ", %.17g, %.17g, %.17g, %.17g, step, %s + %d);", t->beta1, t->beta2, t->eps,
		          decay_of(t, v, l->flat->g->values[v].name), p->cname[o->result], 2 * k);
	}
}
