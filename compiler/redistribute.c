/* redistribute.c: the cheapest way from one tensor layout to another.
 *
 * Both layouts are first rewritten onto one device matrix (their common
 * refinement, layout_common_matrix). There every device axis plays a role in
 * each layout: it splits a dim (at some place in that dim's map), it holds
 * partial results, or it holds copies. A redistribution changes roles one
 * axis at a time, each change one collective over that axis's groups:
 *
 *   partial -> copies          AllReduce        2(n-1)/n of the tensor
 *   partial -> splits dim d    ReduceScatter    (n-1)/n of the input
 *   splits d -> copies         AllGather        (n-1)/n of the output
 *   splits d -> splits d2      AllToAll         (n-1)/n of the input
 *   copies -> splits d         StridedSlice     free
 *
 * (docs/output.md counts bytes so.) A split axis can only leave its dim as the
 * innermost (last) axis of the dim's map, and a new split always comes in
 * innermost: those are the moves whose pieces are contiguous. A Dijkstra
 * search over the roles finds the cheapest sequence, ties going to fewer
 * steps and then to the order above, so the plan is deterministic. Partial
 * sums feeding a split consumer thus become one ReduceScatter (half of an
 * AllReduce's bytes), never an AllReduce and a slice. Matrices with no common
 * refinement ((2, 3) against (3, 2)) and searches past STATE_CAP states fall
 * back to completing, gathering and slicing, which is always possible. */
#include "shardc.h"

#include <stdlib.h>
#include <string.h>

enum { STATE_CAP = 20000 };

typedef struct {
	TensorLayout l;
	int64_t cost;
	int nsteps;
	int prev;                /* state index, -1 for the start */
	StepKind kind;           /* the step from prev */
	int axis, dim, dim2;
	bool done;
} State;

typedef struct {
	const int64_t *global;
	int64_t elem_bytes;
	State *s;
	int n, cap;
	int *table;              /* open addressing over state indices, -1 empty */
	int table_size;
	int *heap;
	int nheap, heap_cap;
} Search;

static uint64_t hash_roles(const TensorLayout *l)
{
	uint64_t h = 0xcbf29ce484222325ull ^ l->partial;
	for (int d = 0; d < l->rank; d++) {
		h = (h ^ (uint64_t)(l->nmap[d] + 1)) * 0x100000001b3ull;
		for (int k = 0; k < l->nmap[d]; k++)
			h = (h ^ (uint64_t)l->map[d][k]) * 0x100000001b3ull;
	}
	return h;
}

/* Same roles on the same matrix (the search never changes the matrix). */
static bool same_roles(const TensorLayout *a, const TensorLayout *b)
{
	if (a->partial != b->partial)
		return false;
	for (int d = 0; d < a->rank; d++)
		if (a->nmap[d] != b->nmap[d] || memcmp(a->map[d], b->map[d], (size_t)a->nmap[d]) != 0)
			return false;
	return true;
}

static int64_t local_elems(const TensorLayout *l, const int64_t *global)
{
	int64_t n = 1;
	for (int d = 0; d < l->rank; d++)
		n *= global[d] / layout_dim_split(l, d);
	return n;
}

bool redist_same_group(const RedistStep *a, const RedistStep *b)
{
	const TensorLayout *x = &a->from, *y = &b->from;
	return a->axes == b->axes && x->ndev == y->ndev && !memcmp(x->dev, y->dev, sizeof(int64_t) * (size_t)x->ndev);
}

int64_t redist_step_bytes(StepKind kind, int64_t in_bytes, int64_t n)
{
	switch (kind) {
	case STEP_ALL_REDUCE: return 2 * in_bytes * (n - 1) / n;
	case STEP_ALL_GATHER: return in_bytes * n * (n - 1) / n;
	case STEP_REDUCE_SCATTER: case STEP_ALL_TO_ALL: return in_bytes * (n - 1) / n;
	case STEP_SLICE: return 0;
	}
	return 0;
}

static int heap_less(const Search *x, int a, int b)
{
	const State *p = &x->s[a], *q = &x->s[b];
	if (p->cost != q->cost)
		return p->cost < q->cost;
	if (p->nsteps != q->nsteps)
		return p->nsteps < q->nsteps;
	return a < b;
}

static void heap_push(Search *x, int i)
{
	if (x->nheap == x->heap_cap) {
		x->heap_cap *= 2;
		x->heap = xrealloc(x->heap, sizeof(int) * (size_t)x->heap_cap);
	}
	int at = x->nheap++;
	x->heap[at] = i;
	while (at > 0 && heap_less(x, x->heap[at], x->heap[(at - 1) / 2])) {
		int up = (at - 1) / 2, t = x->heap[up];
		x->heap[up] = x->heap[at];
		x->heap[at] = t;
		at = up;
	}
}

static int heap_pop(Search *x)
{
	int top = x->heap[0];
	x->heap[0] = x->heap[--x->nheap];
	for (int at = 0;;) {
		int l = 2 * at + 1, r = l + 1, m = at;
		if (l < x->nheap && heap_less(x, x->heap[l], x->heap[m]))
			m = l;
		if (r < x->nheap && heap_less(x, x->heap[r], x->heap[m]))
			m = r;
		if (m == at)
			return top;
		int t = x->heap[m];
		x->heap[m] = x->heap[at];
		x->heap[at] = t;
		at = m;
	}
}

/* Index of the state with l's roles, or the empty slot where it would go. */
static int *lookup(Search *x, const TensorLayout *l)
{
	size_t mask = (size_t)x->table_size - 1;
	for (size_t i = hash_roles(l) & mask;; i = (i + 1) & mask)
		if (x->table[i] < 0 || same_roles(&x->s[x->table[i]].l, l))
			return &x->table[i];
}

/* Offers `l`, reached from state `from` by one step; false when the cap is hit. */
static bool offer(Search *x, int from, const TensorLayout *l, StepKind kind, int axis, int dim, int dim2)
{
	const State *f = &x->s[from];
	int64_t n = f->l.dev[axis];
	int64_t cost = f->cost + redist_step_bytes(kind, local_elems(&f->l, x->global) * x->elem_bytes, n);
	int nsteps = f->nsteps + 1;   /* f is not used below: x->s may move */
	int *slot = lookup(x, l);
	if (*slot >= 0) {
		State *old = &x->s[*slot];
		if (old->done || old->cost < cost || (old->cost == cost && old->nsteps <= nsteps))
			return true;
		old->cost = cost;
		old->nsteps = nsteps;
		old->prev = from;
		old->kind = kind;
		old->axis = axis, old->dim = dim, old->dim2 = dim2;
		heap_push(x, *slot);   /* the stale entry is skipped when popped: done is set first */
		return true;
	}
	if (x->n == STATE_CAP)
		return false;
	if (x->n == x->cap) {
		x->cap *= 2;
		x->s = xrealloc(x->s, sizeof(State) * (size_t)x->cap);
	}
	*slot = x->n;
	x->s[x->n] = (State){*l, cost, nsteps, from, kind, axis, dim, dim2, false};
	heap_push(x, x->n++);
	return true;
}

static void map_append(TensorLayout *l, int d, int a)
{
	l->map[d][l->nmap[d]++] = (int8_t)a;
}

/* Every one-axis move from state i, in the order ties prefer. */
static bool expand(Search *x, int i)
{
	TensorLayout cur = x->s[i].l, next;
	uint32_t used = 0;
	for (int d = 0; d < cur.rank; d++)
		for (int k = 0; k < cur.nmap[d]; k++)
			used |= 1u << cur.map[d][k];
	for (int a = 0; a < cur.ndev; a++) {
		int64_t n = cur.dev[a];
		if (cur.partial & (1u << a)) {
			for (int d = 0; d < cur.rank; d++)
				if ((x->global[d] / layout_dim_split(&cur, d)) % n == 0) {
					next = cur;
					next.partial &= ~(1u << a);
					map_append(&next, d, a);
					if (!offer(x, i, &next, STEP_REDUCE_SCATTER, a, d, -1))
						return false;
				}
			next = cur;
			next.partial &= ~(1u << a);
			if (!offer(x, i, &next, STEP_ALL_REDUCE, a, -1, -1))
				return false;
		} else if (!(used & (1u << a))) {
			for (int d = 0; d < cur.rank; d++)
				if ((x->global[d] / layout_dim_split(&cur, d)) % n == 0) {
					next = cur;
					map_append(&next, d, a);
					if (!offer(x, i, &next, STEP_SLICE, a, d, -1))
						return false;
				}
		}
	}
	for (int d = 0; d < cur.rank; d++) {
		if (!cur.nmap[d])
			continue;
		int a = cur.map[d][cur.nmap[d] - 1];
		int64_t n = cur.dev[a];
		for (int d2 = 0; d2 < cur.rank; d2++)
			if (d2 != d && (x->global[d2] / layout_dim_split(&cur, d2)) % n == 0) {
				next = cur;
				next.nmap[d]--;
				map_append(&next, d2, a);
				if (!offer(x, i, &next, STEP_ALL_TO_ALL, a, d, d2))
					return false;
			}
		next = cur;
		next.nmap[d]--;
		if (!offer(x, i, &next, STEP_ALL_GATHER, a, d, -1))
			return false;
	}
	return true;
}

static void push_step(RedistPlan *p, StepKind kind, ReduceOp op, uint32_t axes, int dim, int dim2,
                      const TensorLayout *from, const TensorLayout *to, int64_t bytes)
{
	if (p->n == MAX_STEPS)
		die("redistribution of more than %d steps", MAX_STEPS);
	RedistStep *s = &p->step[p->n++];
	*s = (RedistStep){kind, op, dim, dim2, axes, *from, *to, bytes};
	p->bytes += bytes;
}

/* Dijkstra from `from` to `to`, both on one matrix. False past STATE_CAP. */
static bool search(const TensorLayout *from, const TensorLayout *to, const int64_t *global, int64_t elem_bytes,
                   RedistPlan *plan)
{
	/* The table stays under a third full at STATE_CAP states. */
	Search x = {global, elem_bytes, NULL, 0, 64, NULL, 1 << 16, NULL, 0, 256};
	x.s = xmalloc(sizeof(State) * (size_t)x.cap);
	x.table = xmalloc(sizeof(int) * (size_t)x.table_size);
	x.heap = xmalloc(sizeof(int) * (size_t)x.heap_cap);
	memset(x.table, -1, sizeof(int) * (size_t)x.table_size);
	x.s[0] = (State){*from, 0, 0, -1, STEP_SLICE, -1, -1, -1, false};
	*lookup(&x, from) = 0;
	x.n = 1;
	heap_push(&x, 0);
	int goal = -1;
	bool ok = true;
	while (x.nheap && ok) {
		int i = heap_pop(&x);
		if (x.s[i].done)
			continue;
		x.s[i].done = true;
		if (same_roles(&x.s[i].l, to)) {
			goal = i;
			break;
		}
		ok = expand(&x, i);
	}
	if (goal >= 0) {
		int path[MAX_STEPS], n = 0;
		for (int i = goal; x.s[i].prev >= 0; i = x.s[i].prev) {
			if (n == MAX_STEPS)
				die("redistribution of more than %d steps", MAX_STEPS);
			path[n++] = i;
		}
		for (int k = n - 1; k >= 0; k--) {
			const State *s = &x.s[path[k]], *p = &x.s[s->prev];
			int64_t bytes = redist_step_bytes(s->kind, local_elems(&p->l, global) * elem_bytes, p->l.dev[s->axis]);
			push_step(plan, s->kind, from->partial_op, 1u << s->axis, s->dim, s->dim2, &p->l, &s->l, bytes);
		}
	}
	free(x.s);
	free(x.table);
	free(x.heap);
	return goal >= 0;
}

/* Always possible: complete, gather everything, slice what `to` wants. */
static void fallback(const TensorLayout *from, const TensorLayout *to, const int64_t *global, int64_t elem_bytes,
                     RedistPlan *plan)
{
	TensorLayout cur, next;
	layout_normalize(from, &cur);
	if (cur.partial) {
		next = cur;
		next.partial = 0;
		int64_t n = 1;
		for (int a = 0; a < cur.ndev; a++)
			if (cur.partial & (1u << a))
				n *= cur.dev[a];
		push_step(plan, STEP_ALL_REDUCE, cur.partial_op, cur.partial, -1, -1, &cur, &next,
		          redist_step_bytes(STEP_ALL_REDUCE, local_elems(&cur, global) * elem_bytes, n));
		cur = next;
	}
	for (int d = 0; d < cur.rank; d++)
		while (cur.nmap[d]) {
			int a = cur.map[d][cur.nmap[d] - 1];
			next = cur;
			next.nmap[d]--;
			push_step(plan, STEP_ALL_GATHER, REDUCE_SUM_OP, 1u << a, d, -1, &cur, &next,
			          redist_step_bytes(STEP_ALL_GATHER, local_elems(&cur, global) * elem_bytes, cur.dev[a]));
			cur = next;
		}
	layout_normalize(to, &next);
	if (!layout_equal(&cur, &next))
		push_step(plan, STEP_SLICE, REDUCE_SUM_OP, 0, -1, -1, &cur, &next, 0);
}

/* Consecutive slices are one StridedSlice. */
static void merge_slices(RedistPlan *p)
{
	int n = 0;
	for (int i = 0; i < p->n; i++) {
		if (n && p->step[i].kind == STEP_SLICE && p->step[n - 1].kind == STEP_SLICE)
			p->step[n - 1].to = p->step[i].to;
		else
			p->step[n++] = p->step[i];
	}
	p->n = n;
}

void redist_plan(const TensorLayout *from, const TensorLayout *to, const int64_t *global, int64_t elem_bytes,
                 RedistPlan *plan)
{
	memset(plan, 0, sizeof *plan);
	if (to->partial)
		die("redistribution to a partial layout");
	if (layout_equal(from, to))
		return;
	TensorLayout a, b;
	if (!layout_common_matrix(from, to, &a, &b) || !search(&a, &b, global, elem_bytes, plan)) {
		memset(plan, 0, sizeof *plan);
		fallback(from, to, global, elem_bytes, plan);
	}
	merge_slices(plan);
}

void redist_slice_bounds(const RedistStep *s, int64_t rank, const int64_t *global, int64_t *begin, int64_t *end)
{
	for (int d = 0; d < s->from.rank; d++) {
		int64_t lf = global[d] / layout_dim_split(&s->from, d), lt = global[d] / layout_dim_split(&s->to, d);
		int64_t start_f = layout_shard_index(&s->from, rank, d) * lf;
		int64_t start_t = layout_shard_index(&s->to, rank, d) * lt;
		begin[d] = start_t - start_f;
		end[d] = begin[d] + lt;
		if (begin[d] < 0 || end[d] > lf)
			die("slice of rank %lld dim %d: [%lld, %lld) is not inside its %lld elements", (long long)rank, d,
			    (long long)begin[d], (long long)end[d], (long long)lf);
	}
}
