/* bucket.c: gradient AllReduces packed into buckets, as PyTorch DDP and XLA do.
 *
 * Requires a Lowered program with its backward pass (differentiate). The
 * backward pass completes each parameter's gradient with its own AllReduce
 * (the data-parallel sum), so a training step makes one collective call per
 * parameter, and the latency of each call adds up with the layers. Here the
 * AllReduces of the backward pass that go over the same group, with the same
 * dtype and reduction, are gathered into buckets of up to bucket_bytes: a
 * bucket's members move, in order, to one place in the schedule, and the
 * emitter makes one runtime call of them (sc_all_reduce_bucket: packed, one
 * reduction, unpacked). A member waits for the bucket only as long as nothing
 * reads its result: a bucket goes out when it is full, just before the first
 * operator that reads one of its results, or at the end of the backward pass
 * (the optimizer's updates read the gradients after every operator). So the
 * AllReduces of activation gradients, read at once, stay alone, and the
 * parameters' gradient sums share calls. The bytes each rank sends do not
 * change: the runtime counts every member as its own AllReduce. */
#include "shardc.h"

#include <stdlib.h>

typedef struct {
	int *member;             /* old indices, in order */
	int n, cap;
	int64_t bytes;
	bool open;
} Bucket;

typedef struct {
	const Lowered *l;
	LOp *ops;                /* the new order */
	int *bucket;             /* and each one's bucket (op_bucket) */
	int nops;
	int *waiting;            /* value -> the open bucket whose member produces it, -1 */
	int *moved;              /* (nops) each operator's new index */
	Bucket *b;
	int nb, capb;
} Bucketing;

static bool candidate(const Lowered *l, int i)
{
	const LOp *o = &l->ops[i];
	return i >= l->nfwd && o->grad == GRAD_NONE && op_recomputes(l, i) < 0 && o->step && o->step->kind == STEP_ALL_REDUCE &&
	       dtype_is_float(l->values[o->result].type.dtype);
}

/* One group (of one pipeline stage), reduction and dtype; and with
 * accumulation, all run every micro-batch or all once a step (accumulate.c). */
static bool fits(const Lowered *l, const Bucket *b, int i)
{
	const LOp *a = &l->ops[b->member[0]], *o = &l->ops[i];
	return redist_same_group(a->step, o->step) && a->stage == o->stage && a->step->op == o->step->op &&
	       l->values[a->result].type.dtype == l->values[o->result].type.dtype && op_once(l, b->member[0]) == op_once(l, i);
}

static void place(Bucketing *x, const LOp *o, int bucket)
{
	x->moved[o - x->l->ops] = x->nops;
	x->ops[x->nops] = *o;
	x->bucket[x->nops++] = bucket;
}

/* The bucket's members into the schedule here: one call when more than one. */
static void flush(Bucketing *x, int k)
{
	Bucket *b = &x->b[k];
	for (int j = 0; j < b->n; j++) {
		const LOp *o = &x->l->ops[b->member[j]];
		x->waiting[o->result] = -1;
		place(x, o, b->n == 1 ? 0 : j == 0 ? b->n : -1);
	}
	b->open = false;
}

void bucket_gradients(Lowered *l, int64_t bucket_bytes)
{
	if (bucket_bytes <= 0 || l->nfwd == l->nops)
		return;
	Arena *a = l->arena;
	Bucketing x = {l, arena_alloc(a, sizeof(LOp) * (size_t)l->nops), arena_alloc(a, sizeof(int) * (size_t)l->nops), 0,
	               xmalloc(sizeof(int) * (size_t)l->nvalues), xmalloc(sizeof(int) * (size_t)l->nops), NULL, 0, 0};
	for (int v = 0; v < l->nvalues; v++)
		x.waiting[v] = -1;
	for (int i = 0; i < l->nops; i++) {
		const LOp *o = &l->ops[i];
		for (int k = 0; k < o->nin; k++)   /* a reader of a waiting result sends its bucket first */
			if (x.waiting[o->in[k]] >= 0)
				flush(&x, x.waiting[o->in[k]]);
		if (!candidate(l, i)) {
			place(&x, o, 0);
			continue;
		}
		int k = 0;
		while (k < x.nb && !(x.b[k].open && fits(l, &x.b[k], i)))
			k++;
		if (k == x.nb)
			*ARENA_PUSH(a, x.b, x.nb, x.capb) = (Bucket){.open = true};
		Bucket *b = &x.b[k];
		*ARENA_PUSH(a, b->member, b->n, b->cap) = i;
		b->bytes += value_bytes(&l->values[o->result]);
		x.waiting[o->result] = k;
		if (b->bytes >= bucket_bytes)
			flush(&x, k);
	}
	for (int k = 0; k < x.nb; k++)   /* the rest, in the order they opened, before the updates */
		if (x.b[k].open)
			flush(&x, k);
	for (int i = l->nfwd; i < l->nops; i++)   /* an adjoint of a recomputed operator (recompute.c) */
		if ((x.ops[i].grad == GRAD_ADJOINT || x.ops[i].grad == GRAD_TIE_COUNT) && x.ops[i].of >= l->nfwd)
			x.ops[i].of = x.moved[x.ops[i].of];
	if (l->recomputes) {   /* recompute.c's side tables follow their operators */
		int *rec = arena_alloc(a, sizeof(int) * (size_t)l->nops);
		bool *shadow = arena_alloc(a, sizeof(bool) * (size_t)l->nops);
		for (int i = 0; i < l->nops; i++) {   /* the forward operators they name stay where they are */
			rec[x.moved[i]] = l->recomputes[i];
			shadow[x.moved[i]] = l->shadow[i];
		}
		l->recomputes = rec;
		l->shadow = shadow;
	}
	if (l->once) {   /* and accumulate.c's */
		bool *once = arena_alloc(a, sizeof(bool) * (size_t)l->nops);
		for (int i = 0; i < l->nops; i++)
			once[x.moved[i]] = l->once[i];
		l->once = once;
	}
	free(x.waiting);
	free(x.moved);
	l->ops = x.ops;
	l->bucket = x.bucket;
	l->cap_ops = l->nops;
}

int op_bucket(const Lowered *l, int i)
{
	return l->bucket ? l->bucket[i] : 0;
}
