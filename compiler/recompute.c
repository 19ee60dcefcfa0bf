/* recompute.c: forward values recomputed in the backward pass (activation
 * checkpointing: MindSpore's recompute, PyTorch's checkpoint).
 *
 * Requires differentiate (the backward pass in place) and runs before
 * bucket_gradients. A training step keeps every forward value its backward
 * pass reads alive from the forward operator that makes it to that reader;
 * for the activations of a deep model that is most of the memory. Here a set
 * S of forward operators is recomputed instead: before the first backward
 * operator that reads a value of S, a clone of the operator that made it is
 * inserted (its inputs of S cloned first), and every later backward reader
 * shares that clone. The forward values of S are then read by forward
 * operators only and die at their last forward reader (plan.c's liveness
 * does that by itself). A clone is its forward operator copied: the same
 * kernel on the same (recomputed) inputs, so the numbers are bit for bit
 * those of the run without recomputation; a recomputed collective sends its
 * bytes again.
 *
 * Backward operators read forward values two ways: through in[], and an
 * adjoint (GRAD_ADJOINT) through ops[of], whose in[] and result its kernel
 * reads. An adjoint whose operator is in S, or reads a value of S, gets a
 * clone of that operator as its `of`; for an operator outside S the clone is
 * a shadow (op_shadow): never run, its result the kept forward one, its
 * operands the recomputed values, so a kept MatMul is not run twice.
 *
 * Which operators (recompute_marks): the train block's policy (checkpoint.c:
 * `recompute: true` or --recompute keeps the values between layers and
 * recomputes the rest, `"selective"` attention's scores and Softmax), then
 * each operator's own `recompute: true` or `false`; with optimizer_level 3
 * the AllGather of every sliced parameter (ZeRO-3: gathered again for the
 * backward pass instead of kept). An inserted redistribution joins S when
 * every forward operator reading its result is in S. Returned values and the
 * loss are never recomputed: they are kept anyway; nor a value another
 * pipeline stage sent (SendRecv), which its backward pass reads as kept. */
#include "lower_internal.h"

#include <stdlib.h>
#include <string.h>

bool *recompute_marks(const Lowered *l)
{
	const FlatGraph *f = l->flat;
	const Graph *g = f->g;
	const Module *m = l->m;
	const Train *t = m->train;
	int nn = g->nnodes;
	bool *node = xcalloc((size_t)(nn ? nn : 1), sizeof *node);
	if (t)
		recompute_policy(m, f, t->recompute, node);
	for (int i = 0; i < nn; i++) {
		const Node *n = &g->nodes[i];
		if (n->a.present & (ATTR_BIT(ATTR_RECOMPUTE)))
			node[i] = n->a.recompute;
	}
	bool regather = t && m->ctx.parallel_optimizer && m->ctx.optimizer_level == 3;
	bool *marked = xcalloc((size_t)(l->nfwd ? l->nfwd : 1), sizeof *marked);
	bool any = false;
	for (int i = 0; i < l->nfwd; i++) {
		const LOp *o = &l->ops[i];
		marked[i] = o->node >= 0 && node[o->node];
		/* optimizer_level 3: a sliced parameter gathered again for the backward */
		marked[i] |= regather && o->node < 0 && o->step && o->step->kind == STEP_ALL_GATHER &&
		             l->values[o->in[0]].param >= 0;
		any |= marked[i];
	}
	free(node);
	if (!any) {
		free(marked);
		return NULL;
	}
	return marked;
}

typedef struct {
	Lowered *l;
	const LOp *old;          /* the program before: ops[0, nfwd) stay where they are */
	LOp *ops;                /* the new program */
	int nops, cap;
	bool *s;                 /* (nfwd) S */
	int *producer;           /* (values before) the forward operator making a value, -1 */
	int *clone;              /* (nfwd) the new index of a forward operator's clone, -1 */
	int *stack, nstack, cap_stack;
	const char **names;      /* a hash set of every value's name */
	int hcap;
} Recompute;

static uint64_t hash_str(const char *s)
{
	uint64_t h = 0xcbf29ce484222325u;
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 0x100000001b3u;
	return h;
}

/* Adds name to the set; false when it was there. */
static bool name_add(Recompute *x, const char *name)
{
	int at = (int)(hash_str(name) & (uint64_t)(x->hcap - 1));
	while (x->names[at]) {
		if (!strcmp(x->names[at], name))
			return false;
		at = (at + 1) & (x->hcap - 1);
	}
	x->names[at] = name;
	return true;
}

/* `<name>.re`, or `.re2`, `.re3`... when the name is taken. */
static const char *clone_name(Recompute *x, const char *name)
{
	Arena *a = x->l->lowering->a;
	for (int k = 1;; k++) {
		StrBuf b = {0};
		sb_printf(&b, k == 1 ? "%s.re" : "%s.re%d", name, k);
		const char *s = arena_strdup(a, b.data);
		sb_free(&b);
		if (name_add(x, s))
			return s;
	}
}

/* The value a backward reader takes for forward value v: its clone's. */
static int current(const Recompute *x, int v)
{
	int p = v < 0 ? -1 : x->producer[v];
	return p >= 0 && x->s[p] ? x->ops[x->clone[p]].result : v;
}

/* Forward operator f cloned into the new program (its inputs' clones first). */
static void make_clone(Recompute *x, int f)
{
	Lowered *l = x->l;
	const LOp *o = &x->old[f];
	bool shadow = !x->s[f];   /* kept: its adjoint needs only its recomputed operands, not a second run */
	int r = o->result;
	if (!shadow) {
		const LValue *y = &l->values[o->result];
		Type gt = lower_global_type(y);
		TensorLayout layout = y->layout;
		l->lowering->stage = y->stage;   /* on the pipeline stage of the value it recomputes */
		r = lower_value(l->lowering, clone_name(x, y->name), &gt, &layout);
	}
	LOp *c = ARENA_PUSH(l->lowering->a, x->ops, x->nops, x->cap);
	*c = *o;
	c->in = arena_alloc(l->lowering->a, sizeof(int) * (size_t)(o->nin ? o->nin : 1));
	for (int k = 0; k < o->nin; k++)
		c->in[k] = current(x, o->in[k]);
	c->result = r;
	x->clone[f] = x->nops - 1;   /* recomputes and shadow go into the side tables at the end */
	if (!shadow)
		l->comm_bytes += o->bytes;
}

/* Clones forward operator f unless it has one, depth first over its inputs
 * of S (an explicit stack: a model without Calls may chain thousands). */
static void ensure(Recompute *x, int f)
{
	x->nstack = 0;
	x->stack[x->nstack++] = f;
	while (x->nstack) {
		int q = x->stack[x->nstack - 1];
		if (x->clone[q] >= 0) {
			x->nstack--;
			continue;
		}
		bool pending = false;
		const LOp *o = &x->old[q];
		for (int k = 0; k < o->nin; k++) {
			int p = x->producer[o->in[k]];
			if (p >= 0 && x->s[p] && x->clone[p] < 0) {
				if (x->nstack == x->cap_stack) {
					x->cap_stack *= 2;
					x->stack = xrealloc(x->stack, sizeof(int) * (size_t)x->cap_stack);
				}
				x->stack[x->nstack++] = p;
				pending = true;
			}
		}
		if (pending)
			continue;
		x->nstack--;
		make_clone(x, q);
	}
}

/* An adjoint of forward operator f reads a value of S through ops[of]. */
static bool reads_s(const Recompute *x, int f)
{
	if (x->s[f])
		return true;
	const LOp *o = &x->old[f];
	for (int k = 0; k < o->nin; k++) {
		int p = x->producer[o->in[k]];
		if (p >= 0 && x->s[p])
			return true;
	}
	return false;
}

void recompute_forward(Lowered *l, const bool *marked)
{
	int nfwd = l->nfwd, nops = l->nops, nv = l->nvalues;
	if (!marked || nfwd == nops)
		return;
	bool *s = xmalloc(sizeof(bool) * (size_t)(nfwd ? nfwd : 1));
	int *producer = xmalloc(sizeof(int) * (size_t)nv);
	bool *kept = xcalloc((size_t)nv, sizeof *kept);
	int *readers = xcalloc((size_t)nv, sizeof *readers);
	bool *all = xmalloc(sizeof(bool) * (size_t)nv);   /* every forward reader in S */
	for (int v = 0; v < nv; v++) {
		producer[v] = -1;
		all[v] = true;
	}
	for (int k = 0; k < l->nret; k++)
		kept[l->rets[k]] = true;
	if (l->loss >= 0)
		kept[l->loss] = true;
	bool any = false;
	for (int i = nfwd - 1; i >= 0; i--) {   /* readers come after: each op's are settled when it is reached */
		const LOp *o = &l->ops[i];
		producer[o->result] = i;
		s[i] = marked[i] || (o->node < 0 && readers[o->result] > 0 && all[o->result]);
		s[i] &= !kept[o->result] && o->op != OP_SEND_RECV && !op_writes_state(o->op);   /* a state update: once */   /* a stage's received value is kept: a resend would
		                                                      * meet the other stage's passes in another order */
		any |= s[i];
		for (int k = 0; k < o->nin; k++) {
			readers[o->in[k]]++;
			all[o->in[k]] &= s[i];
		}
	}
	free(kept);
	free(readers);
	free(all);
	if (!any) {
		free(s);
		free(producer);
		return;
	}
	Recompute x = {l, l->ops, NULL, 0, 0, s, producer, NULL, NULL, 0, 64, NULL, 0};
	x.clone = xmalloc(sizeof(int) * (size_t)nfwd);
	x.stack = xmalloc(sizeof(int) * (size_t)x.cap_stack);
	for (int i = 0; i < nfwd; i++)
		x.clone[i] = -1;
	x.hcap = 16;
	while (x.hcap < 4 * nv + 4 * nfwd)
		x.hcap *= 2;
	x.names = xcalloc((size_t)x.hcap, sizeof *x.names);
	for (int v = 0; v < nv; v++)
		name_add(&x, l->values[v].name);
	x.cap = nops + nfwd;
	x.ops = arena_alloc(l->lowering->a, sizeof(LOp) * (size_t)x.cap);
	memcpy(x.ops, l->ops, sizeof(LOp) * (size_t)nfwd);
	x.nops = nfwd;
	for (int i = nfwd; i < nops; i++) {
		const LOp *o = &x.old[i];
		bool of = o->grad == GRAD_ADJOINT && reads_s(&x, o->of);
		for (int k = 0; k < o->nin; k++) {
			int p = producer[o->in[k]];
			if (p >= 0 && s[p])
				ensure(&x, p);
		}
		if (of)
			ensure(&x, o->of);
		LOp *c = ARENA_PUSH(l->lowering->a, x.ops, x.nops, x.cap);
		*c = *o;
		c->in = arena_alloc(l->lowering->a, sizeof(int) * (size_t)(o->nin ? o->nin : 1));
		for (int k = 0; k < o->nin; k++)
			c->in[k] = current(&x, o->in[k]);
		if (of)
			c->of = x.clone[o->of];
	}
	l->ops = x.ops;
	l->nops = x.nops;
	l->cap_ops = x.cap;
	l->recomputes = arena_alloc(l->arena, sizeof(int) * (size_t)l->nops);
	l->shadow = arena_alloc(l->arena, sizeof(bool) * (size_t)l->nops);
	for (int i = 0; i < l->nops; i++)
		l->recomputes[i] = -1;
	for (int f = 0; f < nfwd; f++)
		if (x.clone[f] >= 0) {
			l->recomputes[x.clone[f]] = f;
			l->shadow[x.clone[f]] = !s[f];
		}
	free(x.clone);
	free(x.stack);
	free(x.names);
	free(s);
	free(producer);
}

int op_recomputes(const Lowered *l, int i)
{
	return l->recomputes ? l->recomputes[i] : -1;
}

bool op_shadow(const Lowered *l, int i)
{
	return l->shadow && l->shadow[i];
}

void recompute(Lowered *l)
{
	bool *marked = recompute_marks(l);
	recompute_forward(l, marked);
	free(marked);
}
