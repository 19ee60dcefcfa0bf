/* accumulate.c: gradient accumulation (the train block's accumulate_steps,
 * MindSpore's GradAccumulation; docs/language.md, Training).
 *
 * Requires differentiate and recompute, and runs before bucket_gradients.
 * With accumulate_steps N > 1 a training step runs the forward and backward
 * passes N times, one micro-batch each, and updates once. The backward pass
 * splits in two: what every micro-batch computes (the adjoints, and the
 * collectives moving activations' gradients, which later adjoints read),
 * and the tail that completes the parameters' gradients, run once a step on
 * the micro-batches' sum: the collectives summing a parameter's gradient
 * over its copies, what follows them, clipping's and loss scaling's squared
 * norms. Each value where the tail begins (a parameter's local gradient
 * before its collectives, or its gradient when it needs none) is
 * accumulated: micro-batch m adds it to a Float32 buffer of its size (plan.c
 * places them with the optimizer state, emit.c writes the additions), and
 * the last writes the sum back into it before the tail reads it. The seed is
 * 1/N, so the gradients are those of the mean loss over the N micro-batches.
 *
 * The tail is found on the program: the backward operators that only move a
 * gradient toward a parameter's (sums of contributions, redistributions,
 * the half copy's Cast back, clipping, the norms), whose results nothing but
 * such operators and the update read; of those, a collective that sends
 * bytes (but a ReduceScatter with optimizer_level 2, which slices the
 * gradients every micro-batch as MindSpore's level2 does, so the buffers
 * are the slices), a Cast's adjoint, a squared norm or a clip, and all that
 * reads their results. Nothing here changes a program without accumulation. */
#include "shardc.h"

#include <stdlib.h>

/* A backward operator that moves a gradient toward a parameter's, linearly
 * but for the norms: what the tail may hold. */
static bool moves_gradient(const Lowered *l, int i)
{
	const LOp *o = &l->ops[i];
	if (op_recomputes(l, i) >= 0 || op_shadow(l, i))
		return false;
	switch (o->grad) {
	case GRAD_NONE: return o->step != NULL || o->op == OP_STAGE_SUM;   /* StageSum: the norm's, summed over stages */
	case GRAD_ACCUM: case GRAD_ZERO: case GRAD_CLIP: case GRAD_SQNORM: case GRAD_LAMB_NORMS: return true;
	case GRAD_ADJOINT: return l->ops[o->of].op == OP_CAST;
	default: return false;
	}
}

/* Where the tail starts: a collective that sends (but level2's
 * ReduceScatter), a squared norm, a clip, and the Cast back of a
 * parameter's copy in another type (mixed precision's half copy): its
 * gradient is summed in Float32 and rounded once to the copy's type, as the
 * kernels of a batch N times larger round it, on any number of ranks (a
 * half collective before it rounds there too). */
static bool starts_tail(const Lowered *l, int i)
{
	const LOp *o = &l->ops[i];
	if (o->grad == GRAD_SQNORM || o->grad == GRAD_CLIP || o->grad == GRAD_LAMB_NORMS || o->grad == GRAD_ADJOINT)
		return true;   /* (moves_gradient: an adjoint there is a Cast's) */
	if (o->grad != GRAD_NONE || !o->step || !o->bytes)
		return false;
	return !(o->step->kind == STEP_REDUCE_SCATTER && l->m->ctx.parallel_optimizer && l->m->ctx.optimizer_level == 2);
}

void accumulate_gradients(Lowered *l)
{
	const Train *t = l->m->train;
	if (!t || t->accumulate_steps <= 1 || l->nfwd == l->nops)
		return;
	int nv = l->nvalues, nops = l->nops;
	bool *final = xcalloc((size_t)nv, sizeof(bool));   /* read by the update */
	bool *read = xcalloc((size_t)nv, sizeof(bool)), *other = xcalloc((size_t)nv, sizeof(bool));
	bool *toward = xcalloc((size_t)nops, sizeof(bool));
	int *producer = xmalloc(sizeof(int) * (size_t)nv);
	for (int v = 0; v < nv; v++)
		producer[v] = -1;
	for (int p = 0; p < l->nparams; p++)
		if (l->grad[p] >= 0)
			final[l->grad[p]] = true;
	if (l->overflow >= 0)
		final[l->overflow] = true;
	if (l->lamb_norms >= 0)
		final[l->lamb_norms] = true;
	for (int i = nops - 1; i >= l->nfwd; i--) {   /* readers come after their operands */
		const LOp *o = &l->ops[i];
		int y = o->result;
		toward[i] = moves_gradient(l, i) && (final[y] || (read[y] && !other[y]));
		for (int k = 0; k < o->nin; k++) {
			read[o->in[k]] = true;
			other[o->in[k]] |= !toward[i];
		}
	}
	for (int i = 0; i < nops; i++)
		if (!op_shadow(l, i))
			producer[l->ops[i].result] = i;
	/* once: a tail start, or a reader of what the tail computed or of what it
	 * reads (a gradient read by the tail and by an operator beside it) */
	bool *once = arena_alloc(l->arena, sizeof(bool) * (size_t)nops);
	bool *tail_reads = xcalloc((size_t)nv, sizeof(bool));
	for (int i = 0; i < nops; i++)
		once[i] = false;
	for (bool changed = true; changed;) {
		changed = false;
		for (int i = l->nfwd; i < nops; i++) {
			const LOp *o = &l->ops[i];
			if (!toward[i] || once[i])
				continue;
			bool on = starts_tail(l, i);
			for (int k = 0; k < o->nin && !on; k++)
				on = tail_reads[o->in[k]] || (producer[o->in[k]] >= 0 && once[producer[o->in[k]]]);
			if (!on)
				continue;
			once[i] = changed = true;
			for (int k = 0; k < o->nin; k++)   /* a parameter (Lamb's norms read them) is the step's already */
				tail_reads[o->in[k]] |= o->in[k] >= l->nparams;
		}
	}
	/* accumulated: where the tail starts, and the gradients no tail computes */
	bool *acc = arena_alloc(l->arena, sizeof(bool) * (size_t)nv);
	for (int v = 0; v < nv; v++) {
		int at = producer[v];
		acc[v] = (tail_reads[v] || final[v]) && !(at >= 0 && once[at]);
		if (acc[v] && at < l->nfwd)
			die("accumulate: %%%s starts the tail but the backward pass does not compute it", l->values[v].name);
		if (acc[v] && !dtype_is_float(l->values[v].type.dtype))
			die("accumulate: %%%s is no float", l->values[v].name);
	}
	for (int i = l->nfwd; i < nops; i++)   /* every reader of an accumulated value is in the tail */
		for (int k = 0; !once[i] && k < l->ops[i].nin; k++)
			if (acc[l->ops[i].in[k]])
				die("accumulate: %%%s is read by a micro-batch's operator", l->values[l->ops[i].in[k]].name);
	/* the bytes of a step: every micro-batch's, the tail's once */
	int64_t n = t->accumulate_steps, fwd = 0, all = 0;
	for (int i = 0; i < nops; i++) {
		int64_t b = l->ops[i].bytes * (once[i] ? 1 : n);
		all += b;
		fwd += i < l->nfwd ? b : 0;
	}
	l->comm_bytes = all;
	l->fwd_bytes = fwd;
	l->once = once;
	l->accumulated = acc;
	free(final);
	free(read);
	free(other);
	free(toward);
	free(producer);
	free(tail_reads);
}

bool op_once(const Lowered *l, int i)
{
	return l->once && l->once[i];
}

int64_t op_runs(const Lowered *l, int i)
{
	return l->once && !l->once[i] ? l->m->train->accumulate_steps : 1;
}
