/* verify.c: the lowered program's invariants, checked between the stages
 * (pipeline.c) in the sanitized and fuzz builds, which define SHARDC_VERIFY.
 * A broken invariant is our bug, never the user's: it aborts, naming the
 * stage after which it was found, the operator and the value.
 *
 * The invariants: every value an operator reads (its operands, and for an
 * adjoint the operator it differentiates) is a parameter or the result of an
 * earlier operator; every value's layout is consistent (layout_check), over
 * the program's device count, with its local dims the global dims divided by
 * its splits; every collective inserted by redistribution has a group of
 * the axes of its matrix, and every collective the model wrote a group of
 * distinct ranks of its context. Fused kinds appear only once fuse.c has run (its side
 * table with them); a Fused placeholder names a later fused operator that
 * computes it; an adjoint has the kind of the operator it differentiates,
 * or a fused one. With accumulate_steps, nothing run every micro-batch reads
 * what runs once a step. */
#include "pipeline.h"

#include <stdlib.h>

#ifdef SHARDC_VERIFY
static noreturn void broken(const Lowered *l, const char *stage, int i, const char *what, int v)
{
	const LOp *o = i >= 0 ? &l->ops[i] : NULL;
	die("after stage %s: %s%s%s (operator %d%s%s, value %d %%%s)", stage, what, o ? ": " : "", o ? op_info[o->op].name : "",
	    i, o && o->why ? ", " : "", o && o->why ? o->why : "", v, v >= 0 && v < l->nvalues ? l->values[v].name : "?");
}

static void check_layouts(const Lowered *l, const char *stage)
{
	for (int v = 0; v < l->nvalues; v++) {
		const LValue *x = &l->values[v];
		char why[160];
		if (!layout_check(&x->layout, x->global, why, sizeof why))
			broken(l, stage, -1, why, v);
		if (x->layout.rank != x->type.rank)
			broken(l, stage, -1, "a layout's rank differs from its value's", v);
		if (l->device_num > 1 && layout_ndevices(&x->layout) != l->device_num)
			broken(l, stage, -1, "a layout over another number of devices", v);
		for (int d = 0; d < x->type.rank; d++)
			if (x->type.dims[d] != layout_piece_len(&x->layout, x->global, d))
				broken(l, stage, -1, "local dims are not the global ones over the splits, rounded up", v);
	}
}

static void check_group(const Lowered *l, const char *stage, int i)
{
	const LOp *o = &l->ops[i];
	if (o->step) {
		uint32_t all = o->step->from.ndev >= 32 ? ~0u : (1u << o->step->from.ndev) - 1;
		if (o->step->kind != STEP_SLICE && (o->step->axes == 0 || (o->step->axes & ~all)))
			broken(l, stage, i, "a collective's group names axes outside its matrix", o->result);
		return;
	}
	if (!(o->a.present & ATTR_BIT(ATTR_GROUP)))
		return;
	/* A model's own collective names global ranks of its context, however
	 * many devices the program is lowered for (stand_alone: one). */
	int64_t ranks = l->m->ctx.device_num > l->device_num ? l->m->ctx.device_num : l->device_num;
	for (int k = 0; k < o->a.ngroup; k++) {
		if (o->a.group[k] < 0 || o->a.group[k] >= ranks)
			broken(l, stage, i, "a collective's group names a rank outside the devices", o->result);
		for (int j = 0; j < k; j++)
			if (o->a.group[j] == o->a.group[k])
				broken(l, stage, i, "a collective's group names a rank twice", o->result);
	}
}

static void check_fused(const Lowered *l, const char *stage, int i)
{
	const LOp *o = &l->ops[i];
	if (op_is_fused(o->op) && !l->fusion)
		broken(l, stage, i, "a fused operator before fusion", o->result);
	if (o->op == OP_FUSED) {
		int c = l->fusion[i].into;
		if (c <= i || c >= l->nops || !op_is_fused(l->ops[c].op) || l->ops[c].op == OP_FUSED)
			broken(l, stage, i, "a placeholder no later fused operator computes", o->result);
	}
	if (o->grad == GRAD_ADJOINT && !op_is_fused(o->op) && o->op != differentiated(l, o)->op)
		broken(l, stage, i, "an adjoint of another kind than its operator", o->result);
}

/* accumulate_steps: what runs every micro-batch reads nothing the last one
 * alone computes (accumulate.c), and a bucket is all one or the other. */
static void check_once(const Lowered *l, const char *stage)
{
	if (!l->once)
		return;
	bool *once = xcalloc((size_t)(l->nvalues ? l->nvalues : 1), sizeof *once);
	for (int i = 0; i < l->nops; i++) {
		const LOp *o = &l->ops[i];
		for (int k = 0; !l->once[i] && k < o->nin; k++)
			if (once[o->in[k]])
				broken(l, stage, i, "an operator run every micro-batch reads what runs once a step", o->in[k]);
		if (op_bucket(l, i) > 1)
			for (int j = i + 1; j < i + op_bucket(l, i); j++)
				if (l->once[j] != l->once[i])
					broken(l, stage, j, "a bucket of once-a-step and every-micro-batch collectives", l->ops[j].result);
		once[o->result] |= l->once[i] && !op_shadow(l, i);
	}
	free(once);
}

/* Pipeline stages: every operator and value on one of the program's stages
 * (or a value held by every stage, -1); an operator reads and makes values
 * of its own stage; a SendRecv reads its sending stage's. */
static void check_pipeline_stages(const Lowered *l, const char *stage)
{
	for (int v = 0; v < l->nvalues; v++)
		if (l->values[v].stage < -1 || l->values[v].stage >= l->stages)
			broken(l, stage, -1, "a value on no stage of the program", v);
	for (int i = 0; i < l->nops; i++)
		if (l->ops[i].stage < -1 || l->ops[i].stage >= l->stages)
			broken(l, stage, i, "an operator on no stage of the program", l->ops[i].result);
	for (int i = 0; l->stages > 1 && i < l->nops; i++) {
		const LOp *o = &l->ops[i];
		if (op_shadow(l, i) || o->op == OP_FUSED)
			continue;
		int want = o->op == OP_SEND_RECV ? o->from_stage : o->stage;
		for (int k = 0; k < o->nin; k++)
			if (l->values[o->in[k]].stage != want && l->values[o->in[k]].stage >= 0 && want >= 0)
				broken(l, stage, i, "an operator reading a value of another pipeline stage", o->in[k]);
		if (l->values[o->result].stage != o->stage)
			broken(l, stage, i, "an operator making a value of another pipeline stage", o->result);
	}
}

void verify_lowered(const Lowered *l, const char *stage)
{
	bool *defined = xcalloc((size_t)(l->nvalues ? l->nvalues : 1), sizeof *defined);
	for (int p = 0; p < l->nparams; p++)
		defined[p] = true;
	for (int i = 0; i < l->nops; i++) {
		const LOp *o = &l->ops[i];
		for (int k = 0; k < o->nin; k++)
			if (o->in[k] < 0 || o->in[k] >= l->nvalues || !defined[o->in[k]])
				broken(l, stage, i, "an operand read before it is defined", o->in[k]);
		if (o->grad == GRAD_ADJOINT && (o->of < 0 || o->of >= i))
			broken(l, stage, i, "an adjoint of an operator that does not come before it", o->result);
		if (o->result < 0 || o->result >= l->nvalues)
			broken(l, stage, i, "a result that is no value", o->result);
		defined[o->result] = true;
		if (op_is_comm(o->op))
			check_group(l, stage, i);
		check_fused(l, stage, i);
	}
	for (int k = 0; k < l->nret; k++)
		if (!defined[l->rets[k]])
			broken(l, stage, -1, "a returned value no operator defines", l->rets[k]);
	free(defined);
	check_layouts(l, stage);
	check_once(l, stage);
	check_pipeline_stages(l, stage);
}
#else
void verify_lowered(const Lowered *l, const char *stage)
{
	(void)l;
	(void)stage;
}
#endif
