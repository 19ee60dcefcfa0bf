/* plan.c: the buffer plan and the rank table every rank's program shares.
 *
 * Requires a Lowered program. Every rank runs the same sequence of operators
 * on pieces of the same local shapes, so one buffer plan serves them all:
 * parameters, inputs, optimizer state and accumulated gradients' sums
 * (accumulate.c) live for the whole run; every other value gets a place in
 * one slab from its definition to its last use
 * (placed offline, largest first, each at the lowest offset free for its
 * whole life), except a value that would only be a copy of another (a
 * Reshape, its adjoint), which is that value's bytes in its buffer (a
 * view: no copy, no second buffer). What differs between
 * ranks, the groups, slice bounds, a split table's row offset, which pieces
 * of the gradients a rank holds the first copy of and where each input's
 * and result's piece starts, is a table of numbers per rank (Program.entry,
 * Program.tab), which emit.c writes as rank_<r>.c. Here too: the C names of
 * the values and the partitions of the ranks into groups. What the
 * runtime computes was checked before lowering (check_kernels.c). The bottom
 * of the emitter: it calls none of the other emit files. */
#include "emit_internal.h"

#include <stdlib.h>
#include <string.h>

int64_t aligned(int64_t n)
{
	return (n + ALIGN - 1) / ALIGN * ALIGN;
}

/* ---- what shardc's runtime computes ---- */

/* Operators that move elements of any type, and the logical ones (Bool); the rest compute on floats. */
static bool any_dtype(OpKind op)
{
	return op_info[op].view == V_VIEW || op_info[op].shape == SH_LOGICAL || op == OP_TRANSPOSE ||
	       op == OP_TRANSPOSE_FOLDED || op == OP_CONCAT || op == OP_STACK || op_slices(op) || op == OP_CAST ||
	       op == OP_PAD_FILL || op == OP_PAD_V3 || op == OP_SEND_RECV || op_is_comm(op) || op_is_triangle(op);
}

/* Backward operators that only move or convert elements, as their forward
 * ones; the rest compute on floats. */
static bool grad_any_dtype(const Lowered *l, const LOp *o)
{
	if (o->grad == GRAD_NONE)
		return true;   /* a collective or slice moving a gradient */
	if (o->grad != GRAD_ADJOINT)
		return false;
	OpKind f = differentiated(l, o)->op;
	if (f == OP_BIAS_ADD && o->k == 0)
		return true;   /* a copy of dy */
	return any_dtype(f) && !op_slices(f);   /* its gradient scatters into zeros */
}

/* check_kernels (check_kernels.c) lets no operator computing on integers
 * through: one here is the compiler's bug. */
static void assert_float_operands(const Lowered *l)
{
	for (int i = 0; i < l->nfwd; i++) {
		const LOp *o = unfused(l, i);   /* the operators as written */
		if (o->node < 0 || any_dtype(o->op))
			continue;
		for (int k = 0; k < o->nin; k++) {
			DType t = l->values[o->in[k]].type.dtype;
			if (!(op_info[o->op].nograd & (1u << k)) && t != DT_F32 && !dtype_is_half(t))
				die("%s on %s reached the emitter (check_kernels refuses it)", op_info[o->op].name, dtype_name(t));
		}
	}
}

/* ---- half types: computed in float32 ----
 *
 * An operator that computes (not one that moves elements) on Float16 or
 * BFloat16 values runs the Float32 kernel between casts: each half value it
 * reads is widened (exactly) into a Float32 copy in the scratch area, the
 * kernel writes its result's Float32 copy there, and one sc_cast rounds it
 * to the result's type (to nearest, ties to even). So every half result is
 * the Float32 computation rounded once, on either backend; sums inside a
 * kernel (MatMul's, a reduction's, LayerNorm's) run in Float32 or wider. */

static bool computes(const Lowered *l, const LOp *o)
{
	if (o->op == OP_FUSED || o->op == OP_EW_CHAIN)   /* no code; sc_ew_chain reads and writes half values itself */
		return false;
	switch (o->grad) {
	case GRAD_NONE: return !any_dtype(o->op);
	case GRAD_SEED: case GRAD_ZERO: case GRAD_LAMB_NORMS: return false;   /* sc_fill: every type; Lamb's: Float32 */
	case GRAD_ACCUM: case GRAD_SCALE: case GRAD_MAX_MASK: case GRAD_TIE_COUNT: case GRAD_CLIP: return true;
	case GRAD_SQNORM: return false;   /* widens its half gradients itself, one at a time (sqnorm_copy) */
	case GRAD_ADJOINT: return !grad_any_dtype(l, o);
	}
	return true;
}

/* A MatMul or BatchMatMul (or one's adjoint) on two operands of one half
 * type (matmul_on_halves, fuse.c) runs on them directly: sc_matmul_half /
 * sc_batch_matmul_half sum in Float32 (tensor cores on cuda) and round the
 * result once into its half buffer themselves (matmul_rounds), so neither
 * its operands nor its result have Float32 copies. A broadcast operand's
 * gradient is the exception: its Float32 product is summed down to the
 * operand's shape first (the kernel's scratch, then the result's Float32
 * copy), and rounded after. */
bool bmm_grad_summed(const Lowered *l, const LOp *o)
{
	if (o->grad != GRAD_ADJOINT || o->op != OP_BATCH_MATMUL)
		return false;
	const LValue *y = &l->values[differentiated(l, o)->result], *x = &l->values[differentiated(l, o)->in[o->k]];
	int nb = y->type.rank - 2;
	return x->type.rank != y->type.rank || memcmp(y->type.dims, x->type.dims, sizeof(int64_t) * (size_t)nb) != 0;
}

bool matmul_rounds(const Lowered *l, const LOp *o)
{
	return matmul_on_halves(l, o) && !bmm_grad_summed(l, o) &&
	       l->values[o->result].type.dtype == l->values[o->in[0]].type.dtype;
}

static void widen_add(const Lowered *l, Widened *w, int v, int64_t *top)
{
	if (!dtype_is_half(l->values[v].type.dtype))
		return;
	for (int i = 0; i < w->n; i++)
		if (w->value[i] == v)
			return;
	if (w->n == MAX_WIDENED)
		die("an operator with more than %d half operands", MAX_WIDENED);
	w->value[w->n] = v;
	w->off[w->n++] = *top;
	*top += aligned(numel(&l->values[v]) * 4);
}

const char *ew_bcast(const LValue *v, int64_t n, int64_t c)
{
	int64_t vn = numel(v);
	if (vn == n)
		return "SC_EW_FULL";
	if (vn == 1)
		return "SC_EW_SCALAR";
	return vn == c && v->type.rank > 0 && v->type.dims[v->type.rank - 1] == c ? "SC_EW_ROW" : NULL;
}

bool half_chain(const Lowered *l, const LOp *o, int *other, const char **bcast)
{
	*other = -1;
	*bcast = NULL;
	DType t = l->values[o->result].type.dtype;
	if (o->grad == GRAD_ACCUM) {
		*other = o->in[1];
		*bcast = "SC_EW_FULL";
		int64_t n = numel(&l->values[o->result]);
		for (int k = 0; k < 2; k++)
			if (l->values[o->in[k]].type.dtype != t || numel(&l->values[o->in[k]]) != n)
				return false;
		return dtype_is_half(t);
	}
	if (o->grad != GRAD_ADJOINT || o->nin != 1)
		return false;
	const LOp *f = differentiated(l, o);
	if (o->op != f->op || !dtype_is_half(t) || l->values[o->in[0]].type.dtype != t)
		return false;
	const LValue *y = &l->values[f->result];
	int64_t n = numel(y), c = y->type.rank > 0 ? y->type.dims[y->type.rank - 1] : 1;
	if (numel(&l->values[o->result]) != n || numel(&l->values[o->in[0]]) != n)
		return false;
	if (op_is_unary(f->op)) {
		GradReads r = op_info[f->op].grad;
		if (r != GR_X && r != GR_Y)
			return false;
		*other = r == GR_X ? f->in[0] : f->result;
		*bcast = "SC_EW_FULL";
		return l->values[*other].type.dtype == t;
	}
	if (!op_is_binary(f->op) || !(f->op == OP_MUL || (f->op == OP_DIV && o->k == 0) || (f->op == OP_SUB && o->k == 1)))
		return false;
	if (f->op == OP_SUB)
		return true;
	*other = f->in[1 - o->k];
	*bcast = ew_bcast(&l->values[*other], n, c);
	return *bcast && l->values[*other].type.dtype == t;
}

/* The half values operator o reads and writes, their Float32 copies placed
 * from offset base on. */
void widened(const Lowered *l, const LOp *o, int64_t base, Widened *w)
{
	int64_t top = base;
	int other;
	const char *bcast;
	w->n = 0;
	bool chain = half_chain(l, o, &other, &bcast);
	if (computes(l, o) && !matmul_on_halves(l, o) && !chain) {
		for (int k = 0; k < o->nin; k++)
			widen_add(l, w, o->in[k], &top);
		if (o->grad == GRAD_ADJOINT) {   /* what it reads beside dy (ops.h's grad column) */
			const LOp *f = differentiated(l, o);
			GradReads r = op_info[f->op].grad;
			for (int k = 0; (r & GR_X) && k < f->nin; k++)
				widen_add(l, w, f->in[k], &top);
			if (r & GR_Y)
				widen_add(l, w, f->result, &top);
		}
	}
	w->nread = w->n;
	if (computes(l, o) && !matmul_rounds(l, o) && !chain)
		widen_add(l, w, o->result, &top);
	w->bytes = top - base;
}

/* ---- the buffer plan ---- */

/* An operator reads its operands (a fused one those its kernel reads from
 * outside its group); a backward operator reads the forward operator it
 * differentiates, as it was before fusion. */
static void mark_uses(const Lowered *l, const LOp *o, int at, int *last)
{
	for (int k = 0; k < o->nin; k++)
		last[o->in[k]] = at;
	if (o->grad == GRAD_ADJOINT) {
		/* f's operands, f's result, as f's row's grad column says (ops.h:
		 * what emit_adjoint.c reads, and all that a half adjoint has widened
		 * for it: plan.c, widened). So a Softmax's input, a Cast's and a
		 * product's result die with their forward readers; a language
		 * model's logits end at the cross-entropy's gradient, which can take
		 * their buffer (plan_in_place). */
		const LOp *f = differentiated(l, o);
		GradReads r = op_info[f->op].grad;
		for (int k = 0; k < f->nin && (r & GR_X); k++)
			last[f->in[k]] = at;
		if (r & GR_Y)
			last[f->result] = at;
	}
}

int64_t sqnorm_copy(const Lowered *l, const LOp *o)
{
	int64_t most = 0;
	for (int k = 0; k < o->nin; k++)
		if (dtype_is_half(l->values[o->in[k]].type.dtype) && numel(&l->values[o->in[k]]) > most)
			most = numel(&l->values[o->in[k]]);
	return most ? aligned(most * 4) : 0;
}

/* The temporary a kernel needs (o of the program's list): a broadcast
 * BatchMatMul input's (bmm_grad_summed) or RotaryPositionEmbedding's cos or
 * sin gradient before it is summed down to its input's shape; a
 * bucket of AllReduces packed; the squared norm's Float32 copy of one half
 * gradient and its sum. */
int64_t kernel_scratch(const Lowered *l, const LOp *o)
{
	if (o->grad == GRAD_SQNORM) {
		int64_t copy = sqnorm_copy(l, o);
		return copy ? copy + ALIGN : 0;
	}
	int bucket = op_bucket(l, (int)(o - l->ops));
	if (bucket > 0) {
		int64_t bytes = 0;
		for (int j = 0; j < bucket; j++)
			bytes += value_bytes(&l->values[o[j].result]);
		return aligned(bytes);
	}
	if (o->grad != GRAD_ADJOINT || (o->op != OP_ROTARY && !bmm_grad_summed(l, o)))
		return 0;
	const LValue *y = &l->values[differentiated(l, o)->result], *x = &l->values[o->result];
	if (o->op == OP_ROTARY)
		return o->k && numel(x) != numel(y) ? aligned(numel(y) * 4) : 0;
	int64_t batch = numel(y) / (y->type.dims[y->type.rank - 2] * y->type.dims[y->type.rank - 1]);
	return aligned(batch * x->type.dims[x->type.rank - 2] * x->type.dims[x->type.rank - 1] * 4);
}

/* The scratch an operator needs: its kernel's, then its half operands'
 * Float32 copies. */
int64_t scratch_bytes(const Lowered *l, const LOp *o)
{
	Widened w;
	int64_t k = kernel_scratch(l, o);
	widened(l, o, k, &w);
	return k + w.bytes;
}

/* Optimizer state, buffers of the parameter's size: SGD's (momentum), Momentum's v, Adam's, AdamW's, Lamb's m, v. */
int state_slots(const Train *t)
{
	if (!t)
		return 0;
	switch (t->optimizer) {
	case OPT_SGD: return t->momentum > 0;
	case OPT_MOMENTUM: return 1;
	case OPT_ADAM: case OPT_ADAM_WEIGHT_DECAY: case OPT_LAMB: return 2;
	}
	return 0;
}

/* A half parameter's update's scratch: Float32 copies of it, its gradient and its optimizer state. */
static int64_t update_scratch(const Lowered *l, int v)
{
	const LValue *x = &l->values[v];
	if (!dtype_is_half(x->type.dtype))
		return 0;
	return aligned(numel(x) * 4) * (2 + state_slots(l->m->train));
}

/* Whether values a and b have one type, shape and layout. */
static bool same_value_kind(const Lowered *l, int a, int b)
{
	const LValue *x = &l->values[a], *y = &l->values[b];
	if (x->type.dtype != y->type.dtype || x->type.rank != y->type.rank || !layout_equal(&x->layout, &y->layout))
		return false;
	for (int d = 0; d < x->type.rank; d++)
		if (x->type.dims[d] != y->type.dims[d])
			return false;
	return true;
}

/* The value operator o's code would only copy into its result, bytes
 * unchanged (a view's, ops.h, and its adjoint; a BiasAdd's adjoint for its
 * input; an Add's adjoint for an operand it did not broadcast, and a Sub's
 * for its first: the residual connections' gradients), or -1. */
static int copied_value(const Lowered *l, const LOp *o)
{
	bool copies = false;
	bool same_type = l->values[o->in[0]].type.dtype == l->values[o->result].type.dtype;   /* a Cast folded */
	if (o->grad == GRAD_NONE && !o->step)
		copies = op_info[o->op].view == V_VIEW || (o->op == OP_CAST && same_type);
	else if (o->grad == GRAD_ADJOINT) {
		OpKind f = differentiated(l, o)->op;
		copies = op_info[f].view == V_VIEW || (f == OP_BIAS_ADD && o->k == 0) || (f == OP_CAST && same_type) ||
		         ((f == OP_ADD || (f == OP_SUB && o->k == 0)) && o->nin == 1 && same_value_kind(l, o->in[0], o->result));
	}
	if (!copies || value_bytes(&l->values[o->in[0]]) != value_bytes(&l->values[o->result]))
		return -1;
	return o->in[0];
}

/* Views: a result that would be a copy of a value computed in this step
 * takes that value's buffer instead (no copy), and the buffer lives until
 * the last reader of either. Nothing writes a value after its operator, so
 * the two never differ. Parameters and inputs are left alone (their buffers
 * are not the step's to lend), and so are fused results, which have none.
 * A TransposeFolded's two values share a buffer the same way (fuse.c), one
 * of them laid out with strides. */
static int shared_value(const Lowered *l, const LOp *o)
{
	if (o->op == OP_TRANSPOSE_FOLDED)
		return o->in[0];
	if (op_shadow(l, (int)(o - l->ops)) || o->op == OP_FUSED)
		return -1;
	return copied_value(l, o);
}

static void plan_views(Program *p, int *last, const bool *unbuffered)
{
	const Lowered *l = p->l;
	for (int v = 0; v < l->nvalues; v++)
		p->view[v] = -1;
	for (int i = 0; i < l->nops; i++) {
		const LOp *o = &l->ops[i];
		int s = shared_value(l, o);
		if (s < l->nparams || unbuffered[s])
			continue;
		p->view[o->result] = p->view[s] >= 0 ? p->view[s] : s;
	}
	for (int v = 0; v < l->nvalues; v++)
		if (p->view[v] >= 0 && last[v] > last[p->view[v]])
			last[p->view[v]] = last[v];
}

/* In place: either cross-entropy's gradient overwrites the logits it is computed from where nothing
 * reads them after (llm.c's fused classifier does the same): its kernels read each row whole before
 * writing it, each element before it is overwritten. The logits are the largest values of a language
 * model's step (rows x vocabulary), so this halves its peak there. p->in_place[v]: the value whose
 * buffer v takes, or -1. */
static void plan_in_place(Program *p, int *last, const bool *unbuffered)
{
	const Lowered *l = p->l;
	int *shared = p->in_place;
	for (int v = 0; v < l->nvalues; v++)
		shared[v] = -1;
	for (int i = 0; i < l->nops; i++) {
		const LOp *o = &l->ops[i];
		if (o->grad != GRAD_ADJOINT || (o->op != OP_SPARSE_SOFTMAX_CE && o->op != OP_SOFTMAX_CE) || o->k != 0 ||
		    op_shadow(l, i))
			continue;
		int x = differentiated(l, o)->in[0], root = p->view[x] >= 0 ? p->view[x] : x;
		if (root < l->nparams || unbuffered[root] || last[root] != i || p->view[o->result] >= 0 ||
		    value_bytes(&l->values[x]) != value_bytes(&l->values[o->result]))
			continue;
		shared[o->result] = root;
		last[root] = last[o->result];
	}
}

/* A value micro-batch m's forward pass makes and its backward pass reads: under a pipeline's schedule other
 * micro-batches' passes run in between, so it takes a slot per micro-batch in flight (Program.slots); but one
 * on every stage (stage -1, a computed constant) is the same in every micro-batch. */
static int value_slots(const Lowered *l, int v, const int *def, const int *read_last)
{
	if (!pipelined(l) || v < l->nparams || def[v] >= l->nfwd || read_last[v] < l->nfwd || v == l->loss ||
	    l->values[v].stage < 0)
		return 1;
	return (int)pipeline_in_flight(l->m->ctx.scheduler, l->stages, l->m->train->accumulate_steps, l->values[v].stage);
}

static void plan_buffers(Program *p)
{
	const Lowered *l = p->l;
	int nv = l->nvalues, nops = l->nops;
	p->offset = xmalloc(sizeof(int64_t) * (size_t)(nv ? nv : 1));
	p->state = xmalloc(sizeof(int64_t) * (size_t)(l->nparams ? l->nparams : 1));
	p->slots = xmalloc(sizeof(int) * (size_t)(nv ? nv : 1));
	p->stride = xmalloc(sizeof(int64_t) * (size_t)(nv ? nv : 1));
	/* On a pipeline every rank holds the inputs and numbers (common); each
	 * stage's parameters, optimizer state and sums start after them at the
	 * same offset: a rank holds only its own stage's. */
	int ns = (int)l->stages;
	int64_t common = 0, *top = xcalloc((size_t)ns, sizeof(int64_t));
	for (int v = 0; v < nv; v++)
		p->slots[v] = 1, p->stride[v] = aligned(value_bytes(&l->values[v]));
	for (int v = 0; v < l->nparams; v++) {   /* a pipeline's inputs: every micro-batch's of the step */
		if (pipelined(l) && may_stream(l, v))
			p->slots[v] = (int)l->m->train->accumulate_steps;
		if (ns > 1 && l->flat->g->values[v].type.is_param)
			continue;
		p->offset[v] = common;
		common += p->stride[v] * p->slots[v];
	}
	for (int k = 0; k < ns; k++)
		top[k] = common;
	for (int v = 0; ns > 1 && v < l->nparams; v++)
		if (l->flat->g->values[v].type.is_param) {
			p->offset[v] = top[l->values[v].stage];
			top[l->values[v].stage] += p->stride[v];
		}
	for (int v = 0; v < l->nparams; v++) {
		p->state[v] = -1;
		int slots = state_slots(l->m->train);
		if (!l->grad || l->grad[v] < 0 || !slots)
			continue;
		int at = ns > 1 ? l->values[v].stage : 0;
		p->state[v] = top[at];
		top[at] += aligned(value_bytes(&l->values[v])) * slots;
	}
	p->acc = NULL;
	if (l->accumulated) {   /* accumulate_steps: a Float32 sum of each gradient where the tail begins */
		p->acc = xmalloc(sizeof(int64_t) * (size_t)nv);
		for (int v = 0; v < nv; v++) {
			p->acc[v] = -1;
			if (!l->accumulated[v])
				continue;
			int at = ns > 1 ? l->values[v].stage : 0;   /* a gradient: on its parameter's stage */
			p->acc[v] = top[at];
			top[at] += aligned(numel(&l->values[v]) * 4);
		}
	}
	p->stage_persistent = xmalloc(sizeof(int64_t) * (size_t)ns);
	int64_t persistent = 0;
	for (int k = 0; k < ns; k++) {
		p->stage_persistent[k] = top[k];
		persistent = top[k] > persistent ? top[k] : persistent;
	}
	free(top);
	p->common_bytes = common;
	p->persistent_bytes = persistent;
	/* Last uses: operators' inputs; the loss is printed after the forward
	 * graph, the gradients feed the update, the results are saved at the end. */
	int *last = xmalloc(sizeof(int) * (size_t)(nv ? nv : 1));
	bool *unbuffered = xcalloc((size_t)(nv ? nv : 1), sizeof *unbuffered);   /* a fused operator's result */
	for (int v = 0; v < nv; v++)
		last[v] = -1;
	for (int i = 0; i < nops; i++) {
		if (op_shadow(l, i))   /* no code: its adjoint reads through it (mark_uses) */
			continue;
		last[l->ops[i].result] = i;
		unbuffered[l->ops[i].result] = l->ops[i].op == OP_FUSED && !l->fusion[i].writes;
		mark_uses(l, &l->ops[i], i, last);
	}
	for (int i = 0; i < nops; i++) {   /* a fused kernel stores a placeholder's result where it runs */
		int into = l->fusion ? l->fusion[i].into : -1, v = l->ops[i].result;
		if (l->ops[i].op == OP_FUSED && l->fusion[i].writes && into > last[v])
			last[v] = into;
	}
	int *read_last = xmalloc(sizeof(int) * (size_t)(nv ? nv : 1));   /* the last operator reading it */
	memcpy(read_last, last, sizeof(int) * (size_t)(nv ? nv : 1));
	if (l->loss >= 0 && last[l->loss] < l->nfwd)
		last[l->loss] = l->nfwd;
	for (int v = 0; l->grad && v < l->nparams; v++)
		if (l->grad[v] >= 0)
			last[l->grad[v]] = nops;
	if (l->lamb_norms >= 0)   /* Lamb's norms: read by the update */
		last[l->lamb_norms] = nops;
	for (int k = 0; k < l->nret; k++)
		last[l->rets[k]] = nops + 1;
	p->view = xmalloc(sizeof(int) * (size_t)(nv ? nv : 1));
	plan_views(p, last, unbuffered);
	p->in_place = xmalloc(sizeof(int) * (size_t)(nv ? nv : 1));
	plan_in_place(p, last, unbuffered);
	const int *shared = p->in_place;
	for (int v = 0; v < nv; v++) {   /* a view or an in-place result read later keeps its buffer's value read */
		int root = shared[v] >= 0 ? shared[v] : p->view[v];
		if (root >= 0 && read_last[v] > read_last[root])
			read_last[root] = read_last[v];
	}
	/* Each buffer's life: from its operator to its last reader. */
	int *def = xcalloc((size_t)(nv ? nv : 1), sizeof *def);   /* 0 for one only a shadow defines: from the start */
	for (int i = 0; i < nops; i++)
		if (!op_shadow(l, i))
			def[l->ops[i].result] = i;
	/* the values with buffers of their own, and each operator's scratch (the
	 * widened copies of its half operands, its kernel's temporary), alive
	 * while it runs, placed among them: buf[k]'s size, life, offset, and
	 * whose (a value, or -1 - i for operator i's scratch) */
	size_t cap = (size_t)nv + (size_t)nops + 1;
	int *value = xmalloc(sizeof(int) * cap), *from = xmalloc(sizeof(int) * cap), *to = xmalloc(sizeof(int) * cap);
	int64_t *size = xmalloc(sizeof(int64_t) * cap), *off = xmalloc(sizeof(int64_t) * cap);
	int n = 0;
	for (int v = l->nparams; v < nv; v++) {
		p->offset[v] = -1;
		if (last[v] < 0 || unbuffered[v] || p->view[v] >= 0 || shared[v] >= 0)
			continue;
		p->slots[v] = value_slots(l, v, def, read_last);
		value[n] = v, size[n] = p->stride[v] * p->slots[v], from[n] = def[v], to[n++] = last[v];
		if (p->slots[v] > 1)   /* alive across every pass of the step: no other buffer takes its bytes */
			from[n - 1] = 0, to[n - 1] = nops + 1;
	}
	p->op_scratch = xmalloc(sizeof(int64_t) * (size_t)(nops ? nops : 1));
	for (int i = 0; i < nops; i++) {
		const LOp *o = &l->ops[i];
		int64_t s = scratch_bytes(l, o);
		p->op_scratch[i] = -1;
		/* a bucket's one call packs, reduces and unpacks into the results of
		 * the members after it, whose lives start at their own places */
		int end = op_bucket(l, i) > 0 ? i + op_bucket(l, i) - 1 : i;
		if (s > 0 && !op_shadow(l, i) && o->op != OP_FUSED && o->op != OP_TRANSPOSE_FOLDED && p->view[o->result] < 0)
			value[n] = -1 - i, size[n] = aligned(s), from[n] = i, to[n++] = end;
	}
	int64_t transient;
	if (ns == 1)
		transient = place_lives(n, size, from, to, off);
	else {   /* on a pipeline: what every stage holds (stage -1), then each stage's from one offset on */
		int *group = xmalloc(sizeof(int) * (size_t)(n ? n : 1));
		for (int k = 0; k < n; k++)
			group[k] = value[k] >= 0 ? l->values[value[k]].stage : l->ops[-1 - value[k]].stage;
		transient = place_lives_grouped(n, size, from, to, group, ns, off);
		free(group);
	}
	for (int k = 0; k < n; k++)
		*(value[k] >= 0 ? &p->offset[value[k]] : &p->op_scratch[-1 - value[k]]) = off[k];
	free(value);
	free(from);
	free(to);
	free(size);
	free(off);
	for (int v = l->nparams; v < nv; v++)   /* before the views: one may be of a value computed in place */
		if (shared[v] >= 0)
			p->offset[v] = p->offset[shared[v]], p->slots[v] = p->slots[shared[v]], p->stride[v] = p->stride[shared[v]];
	for (int v = l->nparams; v < nv; v++)
		if (p->view[v] >= 0)
			p->offset[v] = p->offset[p->view[v]], p->slots[v] = p->slots[p->view[v]], p->stride[v] = p->stride[p->view[v]];
	int64_t scratch = 0;   /* after the operators: the update's, the loss's, the accumulated sums' */
	for (int v = 0; l->grad && v < l->nparams; v++)
		if (l->grad[v] >= 0) {
			int64_t s = update_scratch(l, v);
			const LValue *g = &l->values[l->grad[v]];
			if (l->overflow >= 0 && dtype_is_half(g->type.dtype) && aligned(numel(g) * 4) > s)
				s = aligned(numel(g) * 4);   /* loss scaling: a half gradient unscaled in Float32 */
			scratch = s > scratch ? s : scratch;
		}
	if (l->loss >= 0 && dtype_is_half(l->values[l->loss].type.dtype))
		scratch = scratch > 4 ? scratch : 4;   /* the loss widened for printing */
	for (int v = 0; p->acc && v < nv; v++)   /* a half gradient widened to be added to its sum */
		if (p->acc[v] >= 0 && dtype_is_half(l->values[v].type.dtype) && aligned(numel(&l->values[v]) * 4) > scratch)
			scratch = aligned(numel(&l->values[v]) * 4);
	for (int v = l->nparams; v < nv; v++)
		if (p->offset[v] >= 0)
			p->offset[v] += p->persistent_bytes;
	for (int i = 0; i < nops; i++)
		if (p->op_scratch[i] >= 0)
			p->op_scratch[i] += p->persistent_bytes;
	p->scratch = p->persistent_bytes + transient;
	p->slab_bytes = p->scratch + aligned(scratch);
	free(last);
	free(read_last);
	free(unbuffered);
	free(def);
}

/* ---- C identifiers: the IR names made C, unique ---- */

static const char *const reserved[] = {
	"auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum", "extern",
	"float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return", "short", "signed",
	"sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void", "volatile", "while", "main",
	"argc", "argv", "rt", "slab", "step", "steps", "out_dir", "file", "t0", "t1", "NULL", "int64_t", "int32_t",
	"uint8_t", "printf", "input_names", "param_names", "input_inits", "T", "sc_ranks", "ckpt", "ckpt_out", "data",
	"lr", "loss_now", "sqnorm_now", "sqnorm", "next", "loss_scale", "good_steps", "updates", "skipped_at_1",
	"first", "ckpts", "resumed", "resumed_file", "resumed_st", "saving", "stage", "pass", "schedule", "across", "sums",
};

/* and with accumulate_steps, the micro-batches' loop's (emit.c) */
static const char *const reserved_accumulate[] = {"micro", "last_micro", "batch", "loss_sum", "loss_micro"};

typedef struct {
	const char *name;
	int value;
} NameSlot;

static int slot_cmp(const void *a, const void *b)
{
	const NameSlot *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	return c ? c : (x->value > y->value) - (x->value < y->value);
}

static void name_values(Program *p, Arena *arena)
{
	const Lowered *l = p->l;
	int nv = l->nvalues;
	NameSlot *s = xmalloc(sizeof *s * (size_t)(nv ? nv : 1));
	for (int v = 0; v < nv; v++) {
		const char *n = l->values[v].name;
		StrBuf b = {0};
		if (!((n[0] >= 'a' && n[0] <= 'z') || (n[0] >= 'A' && n[0] <= 'Z') || n[0] == '_'))
			sb_putc(&b, 'v');
		for (const char *c = n; *c; c++)
			sb_putc(&b, (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ? *c : '_');
		bool group = b.data[0] == 'g' && b.data[1] && strspn(b.data + 1, "0123456789") == strlen(b.data + 1);
		for (size_t r = 0; r < sizeof reserved / sizeof *reserved; r++)
			if (!strcmp(b.data, reserved[r]))
				sb_puts(&b, "_");
		if (group)   /* the program's groups are g0, g1, ... (emit.c) */
			sb_puts(&b, "_");
		for (size_t r = 0; l->once && r < sizeof reserved_accumulate / sizeof *reserved_accumulate; r++)
			if (!strcmp(b.data, reserved_accumulate[r]))
				sb_puts(&b, "_");
		s[v] = (NameSlot){arena_strdup(arena, b.data), v};
		sb_free(&b);
	}
	qsort(s, (size_t)nv, sizeof *s, slot_cmp);
	p->cname = arena_alloc(arena, sizeof(char *) * (size_t)(nv ? nv : 1));
	for (int i = 0, run = 0; i < nv; i++) {   /* a repeated name takes _2, _3 ... (the IR has no such names) */
		run = i > 0 && !strcmp(s[i].name, s[i - 1].name) ? run + 1 : 0;
		if (!run) {
			p->cname[s[i].value] = s[i].name;
			continue;
		}
		StrBuf b = {0};
		sb_printf(&b, "%s__%d", s[i].name, run + 1);
		p->cname[s[i].value] = arena_strdup(arena, b.data);
		sb_free(&b);
	}
	free(s);
}

/* ---- groups: one partition of the ranks per (device matrix, axes) ---- */

static void plan_groups(Program *p)
{
	const Lowered *l = p->l;
	p->partition = xmalloc(sizeof(int) * (size_t)(l->nops ? l->nops : 1));
	p->part = xmalloc(sizeof(int) * (size_t)(l->nops ? l->nops : 1));
	p->npart = 0;
	for (int i = 0; i < l->nops; i++) {
		const LOp *o = &l->ops[i];
		p->partition[i] = -1;
		if (!o->step || o->step->kind == STEP_SLICE)
			continue;
		int k = 0;
		while (k < p->npart && !redist_same_group(l->ops[p->part[k]].step, o->step))
			k++;
		if (k == p->npart)
			p->part[p->npart++] = i;
		p->partition[i] = k;
	}
}

/* The group of rank for a collective of partition op, as sc_group_split_grid
 * takes it: its first member, then, over the group's axes in the order it
 * lists them (redist_step_order), for each run of neighbouring axes (of the
 * matrix the ranks are numbered row-major over) its size and rank stride;
 * ng runs, n members. Only first depends on the rank. */
int64_t group_grid(const LOp *op, int64_t rank, int64_t *size, int64_t *stride, int *ng, int64_t *n)
{
	const TensorLayout *m = &op->step->from;
	int64_t coords[MAX_AXES], step[MAX_AXES], first = rank;
	layout_coords(m, rank, coords);
	for (int a = m->ndev - 1; a >= 0; a--)
		step[a] = a == m->ndev - 1 ? 1 : step[a + 1] * m->dev[a + 1];
	*ng = 0;
	*n = 1;
	int order[MAX_AXES], norder = redist_step_order(op->step, order);
	for (int k = 0; k < norder; k++) {
		int a = order[k];
		if (m->dev[a] == 1)
			continue;
		first -= coords[a] * step[a];
		*n *= m->dev[a];
		if (*ng && stride[*ng - 1] == step[a] * m->dev[a]) {
			size[*ng - 1] *= m->dev[a];
			stride[*ng - 1] = step[a];
		} else {
			size[*ng] = m->dev[a];
			stride[(*ng)++] = step[a];
		}
	}
	return first;
}

static int add_entry(Program *p, EntryKind kind, int at, int n)
{
	p->entry[p->nentry] = (Entry){kind, at, n, -1, NULL, p->nentry, 0};
	return p->nentry++;
}

static void entry_values(const Program *p, const Entry *e, int64_t rank, int64_t *out, int64_t *members);

static uint64_t hash_ints(const int64_t *v, int64_t n)
{
	uint64_t h = 0xcbf29ce484222325u;
	for (int64_t i = 0; i < n; i++)
		h = (h ^ (uint64_t)v[i]) * 0x100000001b3u;
	return h;
}

/* Each entry's numbers on every rank: the same on all of them, it is
 * written into program.c; else it takes a place in the table, shared with
 * the entries before it that have the same numbers on every rank (every
 * layer's weight of one shape starts at the same place on a rank). */
static void place_entries(Program *p)
{
	const Lowered *l = p->l;
	int64_t ranks = l->device_num, *members = xmalloc(sizeof(int64_t) * (size_t)ranks);
	int hcap = 1;
	while (hcap < 2 * p->nentry + 2)
		hcap *= 2;
	int *hash = xmalloc(sizeof(int) * (size_t)hcap);   /* entries with a place, by their numbers */
	for (int i = 0; i < hcap; i++)
		hash[i] = -1;
	int64_t **all = xmalloc(sizeof(int64_t *) * (size_t)(p->nentry ? p->nentry : 1));   /* (ranks, n) each */
	for (int i = 0; i < p->nentry; i++) {
		Entry *e = &p->entry[i];
		int64_t n = e->n, *v = xmalloc(sizeof(int64_t) * (size_t)(n * ranks + 1));
		all[i] = v;
		for (int64_t r = 0; r < ranks; r++)
			entry_values(p, e, r, v + r * n, members);
		/* on a pipeline a group's first member differs between stages (emit_table adds the stage's first
		 * rank), and a global norm's sizes (a stage counts its own gradients) */
		bool by_stage = (e->kind == E_GROUP || e->kind == E_SQNORM) && l->stages > 1, same = !by_stage;
		for (int64_t r = 1; r < ranks && same; r++)
			same = !memcmp(v, v + r * n, sizeof(int64_t) * (size_t)n);
		if (same) {
			int64_t *lit = arena_alloc(l->arena, sizeof(int64_t) * (size_t)(n + 1));
			memcpy(lit, v, sizeof(int64_t) * (size_t)n);
			e->lit = lit;
			continue;
		}
		uint64_t h = hash_ints(v, n * ranks) ^ (uint64_t)n;
		int at = (int)(h & (uint64_t)(hcap - 1));
		while (hash[at] >= 0) {
			const Entry *o = &p->entry[hash[at]];
			if (o->n == n && (l->stages == 1 || o->kind == e->kind) &&
			    !memcmp(all[hash[at]], v, sizeof(int64_t) * (size_t)(n * ranks)))
				break;
			at = (at + 1) & (hcap - 1);
		}
		if (hash[at] >= 0) {
			e->pos = p->entry[hash[at]].pos;
			e->first = hash[at];
			p->entry[hash[at]].nsame++;
			continue;
		}
		hash[at] = i;
		e->pos = p->tlen;
		p->tlen += n;
	}
	p->tab = xmalloc(sizeof(int64_t) * (size_t)(p->tlen * ranks + 1));
	for (int i = 0; i < p->nentry; i++) {
		const Entry *e = &p->entry[i];
		if (e->pos < 0 || e->first != i)
			continue;
		for (int64_t r = 0; r < ranks; r++)
			memcpy(p->tab + r * p->tlen + e->pos, all[i] + r * e->n, sizeof(int64_t) * (size_t)e->n);
	}
	for (int i = 0; i < p->nentry; i++)
		free(all[i]);
	free(all);
	free(hash);
	free(members);
}

/* A gradient piece of the global norm that rank holds the first copy of. */
static bool first_copy(const LValue *g, int64_t rank)
{
	int64_t coords[MAX_AXES];
	layout_coords(&g->layout, rank, coords);
	uint32_t copies = layout_replica_axes(&g->layout);
	bool first = true;
	for (int ax = 0; ax < g->layout.ndev; ax++)
		first &= !(copies & (1u << ax)) || coords[ax] == 0;
	return first;
}

/* Device matrices in order of their axes, then their sizes: the tables do
 * not depend on which operator's layout names a matrix first. */
static int matrix_cmp(const TensorLayout *a, const TensorLayout *b)
{
	if (a->ndev != b->ndev)
		return a->ndev < b->ndev ? -1 : 1;
	for (int k = 0; k < a->ndev; k++)
		if (a->dev[k] != b->dev[k])
			return a->dev[k] < b->dev[k] ? -1 : 1;
	return 0;
}

static void add_matrix(Program *p, const TensorLayout *t)
{
	int j = 0;
	while (j < p->nmat && matrix_cmp(p->mat[j], t) < 0)
		j++;
	if (j < p->nmat && !matrix_cmp(p->mat[j], t))
		return;
	if (!(p->nmat & (p->nmat - 1)))
		p->mat = xrealloc(p->mat, sizeof *p->mat * (size_t)(p->nmat ? 2 * p->nmat : 1));
	memmove(&p->mat[j + 1], &p->mat[j], sizeof *p->mat * (size_t)(p->nmat - j));
	p->mat[j] = t;
	p->nmat++;
}

/* The table's entries in the order program.c first reads them: the groups,
 * the inputs' and parameters' pieces, the operators', the results' pieces. */
static void plan_table(Program *p)
{
	const Lowered *l = p->l;
	int nv = l->nvalues, nops = l->nops;
	p->entry = xmalloc(sizeof(Entry) * (size_t)(p->npart + nv + nops + 1));
	p->value_entry = xmalloc(sizeof(int) * (size_t)(nv ? nv : 1));
	p->op_entry = xmalloc(sizeof(int) * (size_t)(nops ? nops : 1));
	p->part_entry = xmalloc(sizeof(int) * (size_t)(p->npart ? p->npart : 1));
	p->nentry = 0;
	p->tlen = 0;
	for (int v = 0; v < nv; v++)
		p->value_entry[v] = -1;
	for (int k = 0; k < p->npart; k++)
		p->part_entry[k] = add_entry(p, E_GROUP, k, 1);
	for (int v = 0; v < l->nparams; v++)
		if (l->values[v].type.rank)
			p->value_entry[v] = add_entry(p, E_PIECE, v, l->values[v].type.rank);
	for (int i = 0; i < nops; i++) {
		const LOp *o = &l->ops[i];
		p->op_entry[i] = -1;
		if (o->grad == GRAD_NONE && o->step && o->step->kind == STEP_SLICE)
			p->op_entry[i] = add_entry(p, E_SLICE, i, 2 * l->values[o->in[0]].type.rank);
		else if (o->grad == GRAD_NONE && op_is_constant(o->op))   /* the rank's piece of a computed constant */
			p->op_entry[i] = add_entry(p, E_SLICE, i, 2 * l->values[o->result].type.rank);
		else if (o->grad == GRAD_NONE && o->table && (o->a.present & (ATTR_BIT(ATTR_OFFSET))))
			p->op_entry[i] = add_entry(p, E_OFFSET, i, 1);
		else if (o->grad == GRAD_SQNORM || o->grad == GRAD_LAMB_NORMS)   /* Lamb's: parameters', then gradients' */
			p->op_entry[i] = add_entry(p, E_SQNORM, i, o->nin);
		if (o->grad == GRAD_NONE && (o->op == OP_DROPOUT || o->op == OP_PAD_FILL || op_is_window(o->op) ||
		    op_is_triangle(o->op) || op_is_tensor_scatter(o->op)) && p->value_entry[o->result] < 0 && l->values[o->result].type.rank)
			p->value_entry[o->result] = add_entry(p, E_PIECE, o->result, l->values[o->result].type.rank);
	}
	for (int k = 0; k < l->nret; k++) {
		int v = l->rets[k];
		if (p->value_entry[v] < 0 && l->values[v].type.rank)
			p->value_entry[v] = add_entry(p, E_PIECE, v, l->values[v].type.rank);
	}
	place_entries(p);
	p->mat = NULL;
	p->nmat = 0;
	for (int i = 0; i < p->nentry; i++) {
		const Entry *e = &p->entry[i];
		if (e->pos < 0 || e->first != i)
			continue;
		const LOp *o = e->kind == E_GROUP ? &l->ops[p->part[e->at]] : e->kind == E_PIECE ? NULL : &l->ops[e->at];
		switch (e->kind) {
		case E_GROUP: add_matrix(p, &o->step->from); break;
		case E_PIECE: add_matrix(p, &l->values[e->at].layout); break;
		case E_SLICE: add_matrix(p, o->step ? &o->step->to : &l->values[o->result].layout); break;
		case E_OFFSET: add_matrix(p, o->table); break;
		case E_SQNORM:
			for (int k = 0; k < o->nin; k++)
				add_matrix(p, &l->values[o->in[k]].layout);
			break;
		}
	}
}

/* Entry e's numbers on rank. */
static void entry_values(const Program *p, const Entry *e, int64_t rank, int64_t *out, int64_t *members)
{
	const Lowered *l = p->l;
	Attrs a;
	switch (e->kind) {
	case E_GROUP: {
		const LOp *op = &l->ops[p->part[e->at]];
		int64_t size[MAX_AXES], stride[MAX_AXES], n;
		int ng;
		out[0] = group_grid(op, rank, size, stride, &ng, &n);
		lowered_rank_attrs(l, op, rank, &a, members);
		for (int i = 0; i < a.ngroup; i++) {   /* the grid names the members lowering put in the group */
			int64_t r = out[0], rest = i;
			for (int j = ng - 1; j >= 0; j--) {
				r += rest % size[j] * stride[j];
				rest /= size[j];
			}
			if (a.ngroup != n || r != a.group[i])
				die("group grid of rank %lld disagrees with its members", (long long)rank);
		}
		return;
	}
	case E_PIECE:
		lowered_piece_start(&l->values[e->at], rank, out);
		return;
	case E_SLICE:
		lowered_rank_attrs(l, &l->ops[e->at], rank, &a, members);
		for (int d = 0; d < e->n / 2; d++) {
			out[d] = a.begin[d];
			out[e->n / 2 + d] = a.end[d];
		}
		return;
	case E_OFFSET:
		lowered_rank_attrs(l, &l->ops[e->at], rank, &a, members);
		out[0] = a.offset;
		return;
	case E_SQNORM: {
		const LOp *o = &l->ops[e->at];
		for (int k = 0; k < o->nin; k++)
			out[k] = first_copy(&l->values[o->in[k]], rank) ? numel(&l->values[o->in[k]]) : 0;
		return;
	}
	}
}

Program *emit_plan_slab(const Lowered *l)
{
	Program *p = arena_alloc(l->arena, sizeof *p);
	p->l = l;
	plan_buffers(p);
	return p;
}

Program *emit_plan(const Lowered *l, const char *model)
{
	assert_float_operands(l);
	Program *p = emit_plan_slab(l);
	StrBuf c = {0};
	sb_c_comment(&c, model);
	p->model = arena_strndup(l->arena, c.data ? c.data : "", c.len);
	sb_free(&c);
	name_values(p, l->arena);
	p->arg = arena_alloc(l->arena, sizeof(char *) * (size_t)(l->nvalues ? l->nvalues : 1));
	memcpy(p->arg, p->cname, sizeof(char *) * (size_t)l->nvalues);
	plan_groups(p);
	plan_table(p);
	return p;
}

void emit_free(Program *p)
{
	free(p->offset);
	free(p->view);
	free(p->in_place);
	free(p->op_scratch);
	free(p->state);
	free(p->acc);
	free(p->slots);
	free(p->stride);
	free(p->stage_persistent);
	free(p->partition);
	free(p->part);
	free(p->entry);
	free(p->value_entry);
	free(p->op_entry);
	free(p->part_entry);
	free(p->mat);
	free(p->tab);
}

int64_t emit_slab_bytes(const Program *p)
{
	return p->slab_bytes;
}

int64_t emit_offset(const Program *p, int value)
{
	return p->offset[value];
}

int64_t op_scratch(const Program *p, const LOp *o)
{
	int64_t at = p->op_scratch[o - p->l->ops];
	return at >= 0 ? at : p->scratch;
}

int emit_in_place_of(const Program *p, int value)
{
	return p->in_place[value];
}

int emit_view_of(const Program *p, int value)
{
	return p->view[value];
}
