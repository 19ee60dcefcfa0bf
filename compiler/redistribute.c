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
 * search over the roles finds the cheapest sequence (in bytes; with
 * RedistLinks, a step whose groups cross nodes counts its bytes times the
 * links' weight), ties going to fewer steps and then to the order above, so
 * the plan is deterministic. Partial
 * sums feeding a split consumer thus become one ReduceScatter (half of an
 * AllReduce's bytes), never an AllReduce and a slice. Matrices with no common
 * refinement ((2, 3) against (3, 2)) and searches past STATE_CAP states fall
 * back to completing, gathering and slicing, which is always possible.
 *
 * The search is the expense of the strategy search at many devices (up to
 * ten axes of size 2 and STATE_CAP states), and its time is memory: so a
 * state is its roles packed in 16 bytes, what an offer compares (roles,
 * cost, steps, popped) apart from what only the path back reads, its hash
 * table 8 bytes a slot (the state and a tag) growing with the states, the
 * moves of a state listed and their slots prefetched before they are
 * offered, a layout built only for the steps of the plan found (from the
 * start, by the moves that first reached each state, as the search would
 * have built it), and a cost model keeps its searches to resume them for
 * the next goal (RedistCache). The heap's operations are the ones it has
 * always done, an improved state pushed again while its entries already
 * in the heap take its new key in place without a sift, so that ties and
 * pops, and so every plan, stay the same (such a heap can pop a little out
 * of order: the plans are what they were, not always the fewest bytes). */
#include "shardc.h"

#include <stdlib.h>
#include <string.h>

enum { STATE_CAP = 20000 };
/* The table grows past 5/8 full: 32,768 slots hold a search at its cap. */
enum { LOAD_NUM = 5, LOAD_DEN = 8 };

/* A state's roles packed, one byte an axis (axis a in byte a % 8 of w[a / 8]):
 * 0 copies, PARTIAL, else (d + 1) << 4 | its place in dim d's map. Every
 * axis has one role, so two states have the same roles iff their words
 * are equal. */
enum { PARTIAL = 0xf0 };
typedef struct {
	uint64_t w[2];
} Roles;

typedef struct {
	uint8_t kind;            /* StepKind */
	uint8_t axis;
	int8_t dim, dim2;        /* as in RedistStep; -1 unused */
} Move;

/* What an offer compares, by state: an offer to a state already met reads
 * its slot and this, nothing else. */
typedef struct {
	Roles r;
	int64_t cost;
	uint16_t nsteps;         /* a path visits each state once: under STATE_CAP */
	bool done;               /* popped: its cost is final */
} Hot;

/* What only the path back and the heap read. */
typedef struct {
	int prev;                /* state index, -1 for the start */
	Move step;               /* the step from prev */
	int maker;               /* the state that first offered this one (-1: the start) */
	Move made;               /* by this move: the layout a step names is maker's with it applied */
} State;

/* A slot of the table: the state and its hash's top 32 bits, so that a
 * probe compares roles only when those agree, and the table (8 bytes a
 * slot) stays small enough to stay in a cache. */
typedef struct {
	uint32_t tag;
	int32_t state;           /* -1: empty */
} Slot;

/* A heap entry is its state: it is ordered by the state's cost, steps and
 * index now. The heap it replaces held those in each entry and, when a
 * state improved, set them in every entry of the state still in the heap
 * (in place, without a sift) before pushing a new one: so an entry's values
 * were always its state's, and the same comparisons see the same order. */
typedef uint16_t Entry;
_Static_assert(STATE_CAP <= 65535, "heap entries hold states in 16 bits");

/* The arrays a cache's searches gave back, for the next ones to take: the
 * same few sizes come and go (each array doubles from the same start), and
 * memory the process holds already costs no page faults. A block comes
 * back to the pool when its search grows past it or is dropped. */
enum { POOL_BLOCKS = 64, POOL_BYTES = 32 << 20 };

typedef struct {
	void *p[POOL_BLOCKS];
	size_t size[POOL_BLOCKS];
	int n;
	size_t bytes;            /* held */
} Pool;

/* A block of `size` bytes from pl (NULL: none kept), else a new one. */
static void *pool_get(Pool *pl, size_t size)
{
	for (int i = 0; pl && i < pl->n; i++)
		if (pl->size[i] == size) {
			void *b = pl->p[i];
			pl->bytes -= size;
			pl->p[i] = pl->p[--pl->n];
			pl->size[i] = pl->size[pl->n];
			return b;
		}
	return xmalloc(size);
}

static void pool_put(Pool *pl, void *b, size_t size)
{
	if (!b)
		return;
	if (!pl || pl->n == POOL_BLOCKS || pl->bytes + size > POOL_BYTES) {
		free(b);
		return;
	}
	pl->p[pl->n] = b;
	pl->size[pl->n++] = size;
	pl->bytes += size;
}

/* b (of `had` bytes, `used` in use) moved into a block of `size` bytes. */
static void *pool_grow(Pool *pl, void *b, size_t had, size_t used, size_t size)
{
	void *nb = pool_get(pl, size);
	if (used)
		memcpy(nb, b, used);
	pool_put(pl, b, had);
	return nb;
}

/* One Dijkstra from a start, run as far as the goals asked so far needed:
 * the pops do not depend on the goal (it only ends them), so a later goal
 * from the same start goes on from where the last one stopped. */
typedef struct {
	Pool *pool;              /* where its arrays come from and go (its cache's); NULL: malloc */
	TensorLayout start[1];
	int64_t global[MAX_DIMS];
	int64_t elem_bytes;
	int64_t weight[MAX_AXES];   /* a step over start's axis a costs its bytes times weight[a] (RedistLinks) */
	Hot *hot;                /* (n) by state */
	State *s;                /* (n) */
	int n, cap;
	Slot *table;             /* open addressing over the states' roles; at most LOAD_NUM / LOAD_DEN full */
	int table_size, shift;   /* 1 << (64 - shift) slots: a state's home is its hash's top bits */
	Entry *heap;
	int nheap, heap_cap;
	int pending;             /* the last goal: popped, not expanded yet; -1 none */
	bool dead;               /* STATE_CAP reached or every state popped: no goal not yet done is reached */
} Search;

static int role(Roles r, int a)
{
	return (int)(r.w[a >> 3] >> (8 * (a & 7)) & 0xff);
}

static Roles with_role(Roles r, int a, int v)
{
	int sh = 8 * (a & 7);
	uint64_t keep = ~(0xffull << sh), put = (uint64_t)v << sh;
	if (a < 8)   /* not w[a >> 3]: an indexed store to one word and a load of both stall */
		r.w[0] = (r.w[0] & keep) | put;
	else
		r.w[1] = (r.w[1] & keep) | put;
	return r;
}

static int in_dim(int d, int place)
{
	return (d + 1) << 4 | place;
}

/* A layout's roles; every axis has at most one (layout_check). */
static Roles pack(const TensorLayout *l)
{
	Roles r = {{0, 0}};
	for (int d = 0; d < l->rank; d++)
		for (int k = 0; k < l->nmap[d]; k++) {
			if (role(r, l->map[d][k]))
				die("device axis %d plays two roles", l->map[d][k]);
			r = with_role(r, l->map[d][k], in_dim(d, k));
		}
	for (int a = 0; a < l->ndev; a++)
		if (l->partial & (1u << a)) {
			if (role(r, a))
				die("device axis %d is partial and splits a dim", a);
			r = with_role(r, a, PARTIAL);
		}
	return r;
}

static bool same_roles(Roles a, Roles b)
{
	return a.w[0] == b.w[0] && a.w[1] == b.w[1];
}

static uint64_t hash_roles(Roles r)
{
	uint64_t h = r.w[0] ^ (r.w[1] * 0x9e3779b97f4a7c15ull);
	h = (h ^ h >> 30) * 0xbf58476d1ce4e5b9ull;
	h = (h ^ h >> 27) * 0x94d049bb133111ebull;
	return h ^ h >> 31;
}

static int64_t local_elems(const TensorLayout *l, const int64_t *global)
{
	int64_t n = 1;
	for (int d = 0; d < l->rank; d++)
		n *= layout_piece_len(l, global, d);
	return n;
}

int redist_step_order(const RedistStep *s, int *order)
{
	const TensorLayout *l = s->kind == STEP_REDUCE_SCATTER ? &s->to : &s->from;
	int n = 0;
	uint32_t left = s->axes;
	if (s->kind != STEP_ALL_REDUCE && s->dim >= 0 && s->dim < l->rank)
		for (int k = 0; k < l->nmap[s->dim]; k++)
			if (left >> l->map[s->dim][k] & 1) {
				order[n++] = l->map[s->dim][k];
				left &= ~(1u << l->map[s->dim][k]);
			}
	for (int a = 0; a < s->from.ndev; a++)
		if (left >> a & 1)
			order[n++] = a;
	return n;
}

bool redist_same_group(const RedistStep *a, const RedistStep *b)
{
	const TensorLayout *x = &a->from, *y = &b->from;
	int oa[MAX_AXES], ob[MAX_AXES], n = redist_step_order(a, oa);
	return a->axes == b->axes && x->ndev == y->ndev && !memcmp(x->dev, y->dev, sizeof(int64_t) * (size_t)x->ndev) &&
	       n == redist_step_order(b, ob) && !memcmp(oa, ob, sizeof(int) * (size_t)n);
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

/* Without branches: which of two entries comes first is what a branch
 * would guess wrong half the time. */
static bool heap_less(const Search *x, int a, int b)
{
	const Hot *p = &x->hot[a], *q = &x->hot[b];
	uint32_t ta = (uint32_t)p->nsteps << 16 | (uint32_t)a, tb = (uint32_t)q->nsteps << 16 | (uint32_t)b;
	return (p->cost < q->cost) | ((p->cost == q->cost) & (ta < tb));
}

/* The sifts move the hole, not the entry: the same comparisons, and the
 * same places, as swapping it along. */
static void heap_push(Search *x, int i)
{
	if (x->nheap == x->heap_cap) {
		size_t had = sizeof(Entry) * (size_t)x->heap_cap;
		x->heap = pool_grow(x->pool, x->heap, had, had, 2 * had);
		x->heap_cap *= 2;
	}
	int at = x->nheap++;
	while (at > 0 && heap_less(x, i, x->heap[(at - 1) / 2])) {
		int up = (at - 1) / 2;
		x->heap[at] = x->heap[up];
		at = up;
	}
	x->heap[at] = (Entry)i;
}

static int heap_pop(Search *x)
{
	int top = x->heap[0], n = --x->nheap;
	if (n == 0)
		return top;
	int e = x->heap[n], at = 0;
	for (;;) {
		int l = 2 * at + 1, r = l + 1;
		if (l >= n)
			break;
		int c = r < n && heap_less(x, x->heap[r], x->heap[l]) ? r : l;
		if (!heap_less(x, x->heap[c], e))
			break;
		x->heap[at] = x->heap[c];
		at = c;
	}
	x->heap[at] = (Entry)e;
	return top;
}

/* The slot holding roles r (hash h), or the empty slot where they would go. */
static Slot *lookup(Search *x, Roles r, uint64_t h)
{
	size_t mask = (size_t)x->table_size - 1;
	uint32_t tag = (uint32_t)(h >> 32);
	for (size_t i = h >> x->shift;; i = (i + 1) & mask) {
		Slot *sl = &x->table[i];
		if (sl->state < 0 || (sl->tag == tag && same_roles(x->hot[sl->state].r, r)))
			return sl;
	}
}

static Slot *new_table(Pool *pl, int size)
{
	Slot *t = pool_get(pl, sizeof(Slot) * (size_t)size);
	memset(t, 0xff, sizeof(Slot) * (size_t)size);   /* state -1: empty */
	return t;
}

/* Twice the slots. A state's home is its tag's top bits, so the slots are
 * read in order and written nearly in order. */
static void grow_table(Search *x)
{
	Slot *old = x->table;
	int old_size = x->table_size;
	x->table_size *= 2;
	x->shift--;
	x->table = new_table(x->pool, x->table_size);
	size_t mask = (size_t)x->table_size - 1;
	for (int i = 0; i < old_size; i++) {
		if (old[i].state < 0)
			continue;
		size_t at = (size_t)old[i].tag >> (x->shift - 32);
		while (x->table[at].state >= 0)
			at = (at + 1) & mask;
		x->table[at] = old[i];
	}
	pool_put(x->pool, old, sizeof(Slot) * (size_t)old_size);
}

/* Offers roles r (hash h), reached from state `from` (cost fcost in fsteps
 * steps) by move m sending `bytes`, weighed by its axis; false when the cap
 * is hit. */
static bool offer(Search *x, int from, int64_t fcost, int fsteps, Roles r, uint64_t h, Move m, int64_t bytes)
{
	int64_t cost = fcost + bytes * x->weight[m.axis];
	int nsteps = fsteps + 1;
	if (LOAD_DEN * (x->n + 1) > LOAD_NUM * x->table_size)
		grow_table(x);
	Slot *sl = lookup(x, r, h);
	if (sl->state >= 0) {
		Hot *old = &x->hot[sl->state];
		if (old->done || old->cost < cost || (old->cost == cost && old->nsteps <= nsteps))
			return true;
		old->cost = cost;
		old->nsteps = (uint16_t)nsteps;
		x->s[sl->state].prev = from;
		x->s[sl->state].step = m;
		heap_push(x, sl->state);   /* the stale entry is skipped when popped: done is set first */
		return true;
	}
	if (x->n == STATE_CAP)
		return false;
	if (x->n == x->cap) {
		size_t hot = sizeof(Hot) * (size_t)x->cap, st = sizeof(State) * (size_t)x->cap;
		x->hot = pool_grow(x->pool, x->hot, hot, hot, 2 * hot);
		x->s = pool_grow(x->pool, x->s, st, st, 2 * st);
		x->cap *= 2;
	}
	*sl = (Slot){(uint32_t)(h >> 32), x->n};
	x->hot[x->n] = (Hot){r, cost, (uint16_t)nsteps, false};
	x->s[x->n] = (State){from, m, from, m};
	heap_push(x, x->n++);
	return true;
}

/* Does n (>= 1) divide k (>= 0)? Device axes are mostly powers of 2. */
static bool divides(int64_t n, int64_t k)
{
	return (n & (n - 1)) == 0 ? (k & (n - 1)) == 0 : k % n == 0;
}

/* A move from the state being expanded, before it is offered. */
typedef struct {
	Roles r;
	uint64_t h;
	Move m;
	int64_t bytes;
} Next;

enum { MAX_NEXT = MAX_AXES * (MAX_DIMS + 1) + MAX_DIMS * MAX_DIMS };

/* Every one-axis move from state i, in the order ties prefer. They are
 * listed first and their slots prefetched, then offered in that order (the
 * list depends on i alone, so the offers are the same). */
static bool expand(Search *x, int i)
{
	const TensorLayout *l = x->start;
	const Hot *me = &x->hot[i];
	Roles r = me->r;
	int64_t fcost = me->cost;
	int fsteps = me->nsteps;
	int nd = l->ndev, rank = l->rank;
	int v[MAX_AXES], nmap[MAX_DIMS], last[MAX_DIMS];
	int64_t split[MAX_DIMS], local[MAX_DIMS];
	for (int d = 0; d < rank; d++)
		split[d] = 1, nmap[d] = 0;
	for (int a = 0; a < nd; a++) {
		v[a] = role(r, a);
		if (v[a] && v[a] != PARTIAL) {
			int d = (v[a] >> 4) - 1;
			split[d] *= l->dev[a];
			nmap[d]++;
		}
	}
	for (int a = 0; a < nd; a++)
		if (v[a] && v[a] != PARTIAL && (v[a] & 15) == nmap[(v[a] >> 4) - 1] - 1)
			last[(v[a] >> 4) - 1] = a;
	int64_t elems = 1;
	for (int d = 0; d < rank; d++) {
		local[d] = x->global[d] / split[d];
		elems *= local[d];
	}
	int64_t in_bytes = elems * x->elem_bytes;
	Next next[MAX_NEXT];
	int nn = 0;
	for (int a = 0; a < nd; a++) {
		int64_t n = l->dev[a];
		if (v[a] == PARTIAL) {
			int64_t rs = redist_step_bytes(STEP_REDUCE_SCATTER, in_bytes, n);
			for (int d = 0; d < rank; d++)
				if (divides(n, local[d]))
					next[nn++] = (Next){with_role(r, a, in_dim(d, nmap[d])), 0,
					                    (Move){STEP_REDUCE_SCATTER, (uint8_t)a, (int8_t)d, -1}, rs};
			next[nn++] = (Next){with_role(r, a, 0), 0, (Move){STEP_ALL_REDUCE, (uint8_t)a, -1, -1},
			                    redist_step_bytes(STEP_ALL_REDUCE, in_bytes, n)};
		} else if (!v[a]) {
			for (int d = 0; d < rank; d++)
				if (divides(n, local[d]))
					next[nn++] = (Next){with_role(r, a, in_dim(d, nmap[d])), 0,
					                    (Move){STEP_SLICE, (uint8_t)a, (int8_t)d, -1}, 0};
		}
	}
	for (int d = 0; d < rank; d++) {
		if (!nmap[d])
			continue;
		int a = last[d];
		int64_t n = l->dev[a], a2a = redist_step_bytes(STEP_ALL_TO_ALL, in_bytes, n);
		for (int d2 = 0; d2 < rank; d2++)
			if (d2 != d && divides(n, local[d2]))
				next[nn++] = (Next){with_role(r, a, in_dim(d2, nmap[d2])), 0,
				                    (Move){STEP_ALL_TO_ALL, (uint8_t)a, (int8_t)d, (int8_t)d2}, a2a};
		next[nn++] = (Next){with_role(r, a, 0), 0, (Move){STEP_ALL_GATHER, (uint8_t)a, (int8_t)d, -1},
		                    redist_step_bytes(STEP_ALL_GATHER, in_bytes, n)};
	}
	for (int k = 0; k < nn; k++) {
		next[k].h = hash_roles(next[k].r);
		__builtin_prefetch(&x->table[next[k].h >> x->shift]);
	}
	for (int k = 0; k < nn; k++)
		if (!offer(x, i, fcost, fsteps, next[k].r, next[k].h, next[k].m, next[k].bytes))
			return false;
	return true;
}

static void map_append(TensorLayout *l, int d, int a)
{
	l->map[d][l->nmap[d]++] = (int8_t)a;
}

/* The layout state i was first offered with, as the search once built it
 * move by move from the start (stale map entries past nmap included). */
static void layout_of(const Search *x, int i, TensorLayout *l)
{
	int depth = 0;
	for (int j = i; x->s[j].maker >= 0; j = x->s[j].maker)
		depth++;
	int *chain = xmalloc(sizeof(int) * (size_t)(depth + 1));
	for (int j = i, k = depth; x->s[j].maker >= 0; j = x->s[j].maker)
		chain[--k] = j;
	*l = *x->start;
	for (int k = 0; k < depth; k++) {
		Move m = x->s[chain[k]].made;
		switch ((StepKind)m.kind) {
		case STEP_REDUCE_SCATTER: l->partial &= ~(1u << m.axis); map_append(l, m.dim, m.axis); break;
		case STEP_ALL_REDUCE: l->partial &= ~(1u << m.axis); break;
		case STEP_SLICE: map_append(l, m.dim, m.axis); break;
		case STEP_ALL_TO_ALL: l->nmap[m.dim]--; map_append(l, m.dim2, m.axis); break;
		case STEP_ALL_GATHER: l->nmap[m.dim]--; break;
		}
	}
	free(chain);
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

/* Axis a's groups span [base, base + span) with span the product of a and
 * the faster axes; they all stay inside nodes when a node is a multiple of
 * span (spans tile the nodes), else some cross (and with span > node, all). */
static void weigh_axes(Search *x, const RedistLinks *links)
{
	const TensorLayout *l = x->start;
	int64_t node = links ? links->devices_per_node : 0, span = 1;
	bool one_node = node <= 0 || layout_ndevices(l) <= node;
	for (int a = l->ndev - 1; a >= 0; a--) {
		span *= l->dev[a];
		x->weight[a] = !one_node && l->dev[a] > 1 && node % span ? links->inter_weight : 1;
	}
}

static Search *search_new(Pool *pool, const TensorLayout *from, const int64_t *global, int64_t elem_bytes,
                          const RedistLinks *links)
{
	Search *x = xcalloc(1, sizeof *x);
	x->pool = pool;
	*x->start = *from;
	memcpy(x->global, global, sizeof(int64_t) * (size_t)from->rank);
	x->elem_bytes = elem_bytes;
	weigh_axes(x, links);
	x->cap = 64;
	x->table_size = 256;
	x->shift = 64 - 8;
	x->heap_cap = 256;
	x->pending = -1;
	x->hot = pool_get(pool, sizeof(Hot) * (size_t)x->cap);
	x->s = pool_get(pool, sizeof(State) * (size_t)x->cap);
	x->table = new_table(pool, x->table_size);
	x->heap = pool_get(pool, sizeof(Entry) * (size_t)x->heap_cap);
	Roles r = pack(from);
	uint64_t h = hash_roles(r);
	*lookup(x, r, h) = (Slot){(uint32_t)(h >> 32), 0};
	x->hot[0] = (Hot){r, 0, 0, false};
	x->s[0] = (State){-1, {STEP_SLICE, 0, -1, -1}, -1, {STEP_SLICE, 0, -1, -1}};
	x->n = 1;
	heap_push(x, 0);
	return x;
}

static void search_free(Search *x)
{
	if (!x)
		return;
	pool_put(x->pool, x->hot, sizeof(Hot) * (size_t)x->cap);
	pool_put(x->pool, x->s, sizeof(State) * (size_t)x->cap);
	pool_put(x->pool, x->table, sizeof(Slot) * (size_t)x->table_size);
	pool_put(x->pool, x->heap, sizeof(Entry) * (size_t)x->heap_cap);
	free(x);
}

/* A search that ended answers only for the states it popped, and their
 * paths back (prev, maker) pass through popped states only: the others
 * are dropped, the popped ones renumbered in order (a search at its cap
 * keeps a third of its states, so the cache keeps three times the ended
 * searches). */
static void keep_popped(Search *x)
{
	int *to = xmalloc(sizeof(int) * (size_t)x->n), m = 0;
	for (int i = 0; i < x->n; i++)
		to[i] = x->hot[i].done ? m++ : -1;
	for (int i = 0; i < x->n; i++) {
		if (to[i] < 0)
			continue;
		State st = x->s[i];
		st.prev = st.prev >= 0 ? to[st.prev] : -1;
		st.maker = st.maker >= 0 ? to[st.maker] : -1;
		x->hot[to[i]] = x->hot[i];
		x->s[to[i]] = st;
	}
	free(to);
	int cap = 64;
	while (cap < m)
		cap *= 2;
	size_t had = (size_t)x->cap, kept = (size_t)m, size = (size_t)cap;
	x->hot = pool_grow(x->pool, x->hot, sizeof(Hot) * had, sizeof(Hot) * kept, sizeof(Hot) * size);
	x->s = pool_grow(x->pool, x->s, sizeof(State) * had, sizeof(State) * kept, sizeof(State) * size);
	x->n = m, x->cap = cap;
	pool_put(x->pool, x->table, sizeof(Slot) * (size_t)x->table_size);
	x->table_size = 256, x->shift = 64 - 8;
	while (LOAD_DEN * m > LOAD_NUM * x->table_size)
		x->table_size *= 2, x->shift--;
	x->table = new_table(x->pool, x->table_size);
	for (int i = 0; i < m; i++) {
		uint64_t h = hash_roles(x->hot[i].r);
		*lookup(x, x->hot[i].r, h) = (Slot){(uint32_t)(h >> 32), i};
	}
}

/* The state with roles `goal` as the Dijkstra from x's start pops it, or
 * -1 when the search ends first (past STATE_CAP, or every state popped). */
static int search_to(Search *x, Roles goal)
{
	Slot *sl = lookup(x, goal, hash_roles(goal));
	if (sl->state >= 0 && x->hot[sl->state].done)
		return sl->state;
	if (x->dead)
		return -1;
	if (x->pending >= 0) {
		int i = x->pending;
		x->pending = -1;
		if (!expand(x, i))
			x->nheap = 0;
	}
	while (x->nheap) {
		int i = heap_pop(x);
		Hot *at = &x->hot[i];
		if (at->done)
			continue;
		at->done = true;
		if (same_roles(at->r, goal)) {
			x->pending = i;
			return i;
		}
		if (!expand(x, i))
			break;
	}
	x->dead = true;
	pool_put(x->pool, x->heap, sizeof(Entry) * (size_t)x->heap_cap);   /* no more pops */
	x->heap = NULL;
	x->nheap = x->heap_cap = 0;
	keep_popped(x);
	return -1;
}

/* The steps from the start to state `goal`, each from its state's layout to the next one's. */
static void plan_path(const Search *x, int goal, RedistPlan *plan)
{
	int path[MAX_STEPS], n = 0;
	for (int i = goal; x->s[i].prev >= 0; i = x->s[i].prev) {
		if (n == MAX_STEPS)
			die("redistribution of more than %d steps", MAX_STEPS);
		path[n++] = i;
	}
	for (int k = n - 1; k >= 0; k--) {
		const State *s = &x->s[path[k]];
		TensorLayout pl, sl;
		layout_of(x, s->prev, &pl);
		layout_of(x, path[k], &sl);
		int64_t bytes = redist_step_bytes(s->step.kind, local_elems(&pl, x->global) * x->elem_bytes, pl.dev[s->step.axis]);
		push_step(plan, s->step.kind, x->start->partial_op, 1u << s->step.axis, s->step.dim, s->step.dim2, &pl, &sl, bytes);
	}
}

/* ---- the searches kept (RedistCache) ---- */

/* A cost model asks for plans from one layout to many: the searches from
 * each start are kept, up to CACHE_STATES states in all, the least recently
 * used dropped first. A start is the common matrix's layout, its dims and
 * element size, compared byte for byte. */
enum { CACHE_STATES = 1 << 19 };

typedef struct {
	uint64_t hash;
	TensorLayout start;
	int64_t global[MAX_DIMS], elem_bytes;
	Search *x;
	int64_t used;            /* the tick of its last use */
} Kept;

struct RedistCache {
	Kept *k;
	int n, cap;
	int64_t states, tick;
	Pool pool;               /* the arrays of searches grown or dropped */
	bool linked;
	RedistLinks links;       /* linked: how its searches weigh a step */
};

RedistCache *redist_cache_new(const RedistLinks *links)
{
	RedistCache *c = xcalloc(1, sizeof(RedistCache));
	c->linked = links != NULL;
	if (links)
		c->links = *links;
	return c;
}

void redist_cache_free(RedistCache *c)
{
	if (!c)
		return;
	for (int i = 0; i < c->n; i++)
		search_free(c->k[i].x);
	for (int i = 0; i < c->pool.n; i++)
		free(c->pool.p[i]);
	free(c->k);
	free(c);
}

static uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

/* The kept search from `from` (made when there is none). */
static Kept *kept(RedistCache *c, const TensorLayout *from, const int64_t *global, int64_t elem_bytes)
{
	int64_t g[MAX_DIMS] = {0};
	memcpy(g, global, sizeof(int64_t) * (size_t)from->rank);
	uint64_t h = hash_bytes(0xcbf29ce484222325ull, from, sizeof *from);
	h = hash_bytes(h, g, sizeof g);
	h = hash_bytes(h, &elem_bytes, sizeof elem_bytes);
	c->tick++;
	for (int i = 0; i < c->n; i++) {
		Kept *k = &c->k[i];
		if (k->hash == h && k->elem_bytes == elem_bytes && !memcmp(&k->start, from, sizeof *from) &&
		    !memcmp(k->global, g, sizeof g)) {
			k->used = c->tick;
			return k;
		}
	}
	if (c->n == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 64;
		c->k = xrealloc(c->k, sizeof(Kept) * (size_t)c->cap);
	}
	Kept *k = &c->k[c->n++];
	*k = (Kept){h, *from, {0}, elem_bytes,
	            search_new(&c->pool, from, global, elem_bytes, c->linked ? &c->links : NULL), c->tick};
	memcpy(k->global, g, sizeof g);
	c->states += 1;
	return k;
}

/* Drops the least recently used searches but `keep` while over CACHE_STATES. */
static void trim(RedistCache *c, const Search *keep)
{
	while (c->states > CACHE_STATES && c->n > 1) {
		int old = -1;
		for (int i = 0; i < c->n; i++)
			if (c->k[i].x != keep && (old < 0 || c->k[i].used < c->k[old].used))
				old = i;
		c->states -= c->k[old].x->n;
		search_free(c->k[old].x);
		c->k[old] = c->k[--c->n];
	}
}

/* Partial results completed in place: an AllReduce over the partial axes. */
static void push_completion(RedistPlan *plan, TensorLayout *cur, const int64_t *global, int64_t elem_bytes)
{
	if (!cur->partial)
		return;
	TensorLayout next = *cur;
	next.partial = 0;
	int64_t n = 1;
	for (int a = 0; a < cur->ndev; a++)
		if (cur->partial & (1u << a))
			n *= cur->dev[a];
	push_step(plan, STEP_ALL_REDUCE, cur->partial_op, cur->partial, -1, -1, cur, &next,
	          redist_step_bytes(STEP_ALL_REDUCE, local_elems(cur, global) * elem_bytes, n));
	*cur = next;
}

/* Dim d gathered whole in one AllGather over all its axes: an uneven dim's
 * pieces must come together at once (a part of its axes gathered would be
 * pieces of another, uneven, length). */
static void push_whole_gather(RedistPlan *plan, TensorLayout *cur, int d, const int64_t *global, int64_t elem_bytes)
{
	uint32_t axes = 0;
	int64_t n = 1;
	for (int k = 0; k < cur->nmap[d]; k++) {
		axes |= 1u << cur->map[d][k];
		n *= cur->dev[cur->map[d][k]];
	}
	TensorLayout next = *cur;
	next.nmap[d] = 0;
	push_step(plan, STEP_ALL_GATHER, REDUCE_SUM_OP, axes, d, -1, cur, &next,
	          redist_step_bytes(STEP_ALL_GATHER, local_elems(cur, global) * elem_bytes, n));
	*cur = next;
}

/* Always possible: complete, gather everything (an even dim an axis at a
 * time, an uneven one at once), slice what `to` wants. */
static void fallback(const TensorLayout *from, const TensorLayout *to, const int64_t *global, int64_t elem_bytes,
                     RedistPlan *plan)
{
	TensorLayout cur, next;
	layout_normalize(from, &cur);
	push_completion(plan, &cur, global, elem_bytes);
	for (int d = 0; d < cur.rank; d++) {
		if (cur.nmap[d] && layout_uneven(&cur, global, d))
			push_whole_gather(plan, &cur, d, global, elem_bytes);
		while (cur.nmap[d]) {
			int a = cur.map[d][cur.nmap[d] - 1];
			next = cur;
			next.nmap[d]--;
			push_step(plan, STEP_ALL_GATHER, REDUCE_SUM_OP, 1u << a, d, -1, &cur, &next,
			          redist_step_bytes(STEP_ALL_GATHER, local_elems(&cur, global) * elem_bytes, cur.dev[a]));
			cur = next;
		}
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

static void plan_once(RedistCache *c, const TensorLayout *from, const TensorLayout *to, const int64_t *global,
                      int64_t elem_bytes, RedistPlan *plan)
{
	memset(plan, 0, sizeof *plan);
	if (to->partial)
		die("redistribution to a partial layout");
	if (layout_equal(from, to))
		return;
	TensorLayout a, b;
	int goal = -1;
	if (layout_common_matrix(from, to, &a, &b)) {
		Kept *k = c ? kept(c, &a, global, elem_bytes) : NULL;
		Search *x = k ? k->x : search_new(NULL, &a, global, elem_bytes, NULL);
		int before = x->n;
		goal = search_to(x, pack(&b));
		if (goal >= 0)
			plan_path(x, goal, plan);
		if (k) {
			c->states += x->n - before;
			trim(c, x);
		} else
			search_free(x);
	}
	if (goal < 0)
		fallback(from, to, global, elem_bytes, plan);
	merge_slices(plan);
}

/* A plan that runs on uneven pieces where the cheapest does not (it would
 * move an uneven dim between two splits): partial results completed, each
 * uneven dim gathered whole, then the cheapest plan from there, which cuts
 * them from whole, or, when that is not sound either, the fallback. */
static void through_whole(RedistCache *c, const TensorLayout *from, const TensorLayout *to, const int64_t *global,
                          int64_t elem_bytes, RedistPlan *plan)
{
	RedistPlan out = {0}, rest;
	TensorLayout cur;
	layout_normalize(from, &cur);
	push_completion(&out, &cur, global, elem_bytes);
	for (int d = 0; d < cur.rank; d++)
		if (cur.nmap[d] && layout_uneven(&cur, global, d))
			push_whole_gather(&out, &cur, d, global, elem_bytes);
	plan_once(c, &cur, to, global, elem_bytes, &rest);
	if (!redist_sound(&rest, global)) {
		memset(&rest, 0, sizeof rest);
		fallback(&cur, to, global, elem_bytes, &rest);
	}
	if (!redist_sound(&out, global) || !redist_sound(&rest, global) || out.n + rest.n > MAX_STEPS)
		return;   /* left as it was: uneven.c refuses it */
	for (int k = 0; k < rest.n; k++)
		out.step[out.n++] = rest.step[k];
	out.bytes += rest.bytes;
	*plan = out;
}

void redist_plan_kept(RedistCache *c, const TensorLayout *from, const TensorLayout *to, const int64_t *global,
                      int64_t elem_bytes, RedistPlan *plan)
{
	plan_once(c, from, to, global, elem_bytes, plan);
	if (!redist_sound(plan, global))
		through_whole(c, from, to, global, elem_bytes, plan);
}

void redist_plan(const TensorLayout *from, const TensorLayout *to, const int64_t *global, int64_t elem_bytes,
                 RedistPlan *plan)
{
	redist_plan_kept(NULL, from, to, global, elem_bytes, plan);
}

/* Whether dim d's pieces lie on other ranks after the step: another split,
 * or the same one over other axes (a slice may renumber them). */
static bool dim_moves(const TensorLayout *from, const TensorLayout *to, int d)
{
	if (layout_dim_split(from, d) != layout_dim_split(to, d))
		return true;
	TensorLayout a, b;
	if (!layout_common_matrix(from, to, &a, &b))
		return true;
	layout_canonical(&a, &a);
	layout_canonical(&b, &b);
	return a.ndev != b.ndev || memcmp(a.dev, b.dev, sizeof a.dev) != 0 || a.nmap[d] != b.nmap[d] ||
	       memcmp(a.map[d], b.map[d], sizeof a.map[d]) != 0;
}

bool redist_step_sound(const RedistStep *s, const int64_t *global, int *dim)
{
	if (s->kind == STEP_ALL_REDUCE)   /* elementwise over pieces of one shape */
		return true;
	for (int d = 0; d < s->from.rank; d++) {
		bool moved = d == s->dim || (s->kind == STEP_ALL_TO_ALL && d == s->dim2) || dim_moves(&s->from, &s->to, d);
		bool uneven = layout_uneven(&s->from, global, d) || layout_uneven(&s->to, global, d);
		bool whole_after = layout_dim_split(&s->to, d) == 1, whole_before = layout_dim_split(&s->from, d) == 1;
		/* gathered whole (lower.c cuts the padding off after), or cut or
		 * scattered from whole (the slice pads it: lower.c, repad) */
		bool gathered = (s->kind == STEP_ALL_GATHER || s->kind == STEP_ALL_TO_ALL) && d == s->dim && whole_after;
		bool scattered = ((s->kind == STEP_REDUCE_SCATTER && d == s->dim) ||
		                  (s->kind == STEP_ALL_TO_ALL && d == s->dim2) || s->kind == STEP_SLICE) &&
		                 whole_before;
		if (moved && uneven && !gathered && !scattered) {
			*dim = d;
			return false;
		}
	}
	return true;
}

bool redist_sound(const RedistPlan *plan, const int64_t *global)
{
	int d;
	for (int k = 0; k < plan->n; k++)
		if (!redist_step_sound(&plan->step[k], global, &d))
			return false;
	return true;
}

void redist_slice_bounds(const RedistStep *s, int64_t rank, const int64_t *global, int64_t *begin, int64_t *end)
{
	for (int d = 0; d < s->from.rank; d++) {
		int64_t lf = layout_piece_len(&s->from, global, d), lt = layout_piece_len(&s->to, global, d);
		int64_t start_f = layout_shard_index(&s->from, rank, d) * lf;
		int64_t start_t = layout_shard_index(&s->to, rank, d) * lt;
		begin[d] = start_t - start_f;
		end[d] = begin[d] + lt;   /* past lf: a whole dim cut unevenly, its last pieces padded (sc_strided_slice) */
		if (begin[d] < 0 || (end[d] > lf && !(layout_dim_split(&s->from, d) == 1 && layout_uneven(&s->to, global, d))))
			die("slice of rank %lld dim %d: [%lld, %lld) is not inside its %lld elements", (long long)rank, d,
			    (long long)begin[d], (long long)end[d], (long long)lf);
	}
}
