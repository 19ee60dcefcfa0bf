/* place.c: where each buffer lies in the slab, from the operators it lives
 * between (place_lives, emit_internal.h). Calls nothing of the emitter's:
 * plan.c gives it sizes and lives and takes offsets back. */
#include "emit_internal.h"

#include <stdlib.h>
#include <string.h>

/* Offline placement (greedy by size, as TensorFlow Lite's arena planner
 * does): every buffer's life [def, last] is known before any is placed, so
 * the largest go first, each at the lowest offset where it overlaps no
 * placed buffer alive at the same time. */
typedef struct {
	int64_t size, off;
	int def, last, value;
} Buffer;

static int larger_first(const void *a, const void *b)
{
	const Buffer *x = a, *y = b;
	if (x->size != y->size)
		return x->size < y->size ? 1 : -1;
	if (x->def != y->def)
		return x->def < y->def ? -1 : 1;
	return (x->value > y->value) - (x->value < y->value);
}

/* Finding that offset by walking every placed buffer below it takes time
 * quadratic in the model: a 1,000-layer GPT keeps thousands of checkpoints
 * and gradients alive across each operator, and a walk over offsets meets
 * every buffer below, alive or not. So the placed buffers are filed by
 * their lives in a segment tree over operator positions: a buffer's life is
 * a few whole nodes (its cover) and the nodes above them, which it only
 * partly fills. A life [def, last] then meets exactly the buffers in the
 * cover and part of its own cover's nodes and in the cover of their
 * ancestors, each of them alive with it, so none needs its life read. Each
 * node keeps its buffers on a shelf in offset order, in runs of up to RUN
 * with the highest end of each run: a run lying wholly below the candidate's
 * top raises it to that end in one step. */
enum { RUN = 64 };
typedef struct {
	int n;
	int64_t off[RUN], end[RUN];
	int64_t max_end;   /* the highest end in the run */
	int64_t hole;      /* the widest gap its buffers leave between its first offset and max_end */
} Run;

/* Sets u's max_end and hole from its entries. */
static void run_span(Run *u)
{
	int64_t top = 0, hole = 0;
	for (int j = 0; j < u->n; j++) {
		if (j && u->off[j] > top && u->off[j] - top > hole)
			hole = u->off[j] - top;
		top = u->end[j] > top ? u->end[j] : top;
	}
	u->max_end = top, u->hole = hole;
}

typedef struct {
	Run **runs;
	int n, cap;
} Shelf;

/* Drops entry j of run r, and the run when it empties. */
static void shelf_drop(Shelf *s, int r, int j)
{
	Run *u = s->runs[r];
	memmove(u->off + j, u->off + j + 1, sizeof(int64_t) * (size_t)(u->n - j - 1));
	memmove(u->end + j, u->end + j + 1, sizeof(int64_t) * (size_t)(u->n - j - 1));
	if (--u->n) {
		run_span(u);
		return;
	}
	free(u);
	memmove(&s->runs[r], &s->runs[r + 1], sizeof(Run *) * (size_t)(s->n - r - 1));
	s->n--;
}

/* Entry j of run r reaches end: it takes in the entries after it that
 * start at or below that. */
static void shelf_extend(Shelf *s, int r, int j, int64_t end)
{
	Run *u = s->runs[r];
	for (;;) {
		int nr = r, nj = j + 1;
		if (nj == u->n)
			nr = r + 1, nj = 0;
		if (nr == s->n || s->runs[nr]->off[nj] > end)
			break;
		end = s->runs[nr]->end[nj] > end ? s->runs[nr]->end[nj] : end;
		shelf_drop(s, nr, nj);
	}
	u->end[j] = end > u->end[j] ? end : u->end[j];
	run_span(u);
}

/* Files [off, end) on shelf s. A shelf only answers where its buffers lie
 * together, so it keeps their union: pieces in offset order, each apart
 * from the next, in runs of up to RUN (a full run is split in two). */
static void shelf_put(Shelf *s, int64_t off, int64_t end)
{
	if (!s->n) {
		s->cap = 4;
		s->runs = xmalloc(sizeof(Run *) * (size_t)s->cap);
		s->runs[s->n++] = xcalloc(1, sizeof(Run));
	}
	int lo = 0, hi = s->n;   /* the last run whose first offset is at or below off */
	while (lo < hi) {
		int mid = (lo + hi) / 2;
		if (s->runs[mid]->off[0] <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	int r = lo > 0 ? lo - 1 : 0;
	Run *u = s->runs[r];
	int j = u->n;   /* the first entry starting above off */
	while (j > 0 && u->off[j - 1] > off)
		j--;
	if (j > 0 && u->end[j - 1] >= off) {   /* the piece before reaches it */
		shelf_extend(s, r, j - 1, end);
		return;
	}
	if (j == 0 && r > 0 && s->runs[r - 1]->end[s->runs[r - 1]->n - 1] >= off) {
		shelf_extend(s, r - 1, s->runs[r - 1]->n - 1, end);
		return;
	}
	if (j < u->n && u->off[j] <= end) {   /* it reaches the piece after */
		u->off[j] = off;
		shelf_extend(s, r, j, end);
		return;
	}
	if (u->n == RUN) {   /* the upper half into a new run after it */
		if (s->n == s->cap) {
			s->cap *= 2;
			s->runs = xrealloc(s->runs, sizeof(Run *) * (size_t)s->cap);
		}
		Run *v = xcalloc(1, sizeof(Run));
		int h = RUN / 2;
		v->n = RUN - h;
		memcpy(v->off, u->off + h, sizeof(int64_t) * (size_t)v->n);
		memcpy(v->end, u->end + h, sizeof(int64_t) * (size_t)v->n);
		u->n = h;
		run_span(u);
		run_span(v);
		memmove(&s->runs[r + 2], &s->runs[r + 1], sizeof(Run *) * (size_t)(s->n - r - 1));
		s->runs[r + 1] = v;
		s->n++;
		if (j >= h)
			u = v, j -= h;
	}
	memmove(u->off + j + 1, u->off + j, sizeof(int64_t) * (size_t)(u->n - j));
	memmove(u->end + j + 1, u->end + j, sizeof(int64_t) * (size_t)(u->n - j));
	u->off[j] = off, u->end[j] = end;
	u->n++;
	run_span(u);
}

/* Where a walk up one shelf stands: run r, entry j, and that entry's offset. */
typedef struct {
	const Shelf *s;
	int r, j;
	int64_t next;
} Cursor;

static bool cursor_start(Cursor *c, const Shelf *s)
{
	*c = (Cursor){s, 0, 0, 0};
	if (!s->n || !s->runs[0]->n)
		return false;
	c->next = s->runs[0]->off[0];
	return true;
}

/* Raises *at past c's next run or entry; returns whether the shelf has
 * more. The whole run, when all of it starts below *at + size, or when it
 * leaves no gap of size bytes: it starts below *at + size, so no place
 * between its first offset and its top is free. */
static bool cursor_step(Cursor *c, int64_t *at, int64_t size)
{
	const Run *u = c->s->runs[c->r];
	if (c->j == 0 && (u->off[u->n - 1] < *at + size || u->hole < size)) {
		*at = u->max_end > *at ? u->max_end : *at;
		c->j = u->n;
	} else {
		*at = u->end[c->j] > *at ? u->end[c->j] : *at;
		c->j++;
	}
	if (c->j == u->n) {
		if (++c->r == c->s->n)
			return false;
		c->j = 0;
		u = c->s->runs[c->r];
	}
	c->next = u->off[c->j];
	return true;
}

/* A min-heap of cursors by next offset. */
static void heap_down(Cursor *h, int n, int i)
{
	for (;;) {
		int m = i, a = 2 * i + 1, b = a + 1;
		if (a < n && h[a].next < h[m].next)
			m = a;
		if (b < n && h[b].next < h[m].next)
			m = b;
		if (m == i)
			return;
		Cursor t = h[i];
		h[i] = h[m], h[m] = t;
		i = m;
	}
}

/* The lowest offset at which size bytes overlap none of the buffers on the
 * n shelves (all alive with the buffer being placed): the shelves merged in
 * offset order, raising the candidate past each buffer that starts below its
 * top, until the next starts at or above it. */
static int64_t lowest_fit(const Shelf *const *shelf, int n, int64_t size, Cursor *h)
{
	int nh = 0;
	for (int i = 0; i < n; i++)
		if (cursor_start(&h[nh], shelf[i]))
			nh++;
	for (int i = nh / 2 - 1; i >= 0; i--)
		heap_down(h, nh, i);
	int64_t at = 0;
	while (nh && h[0].next < at + size) {
		if (!cursor_step(&h[0], &at, size))
			h[0] = h[--nh];
		heap_down(h, nh, 0);
	}
	return at;
}

/* The segment tree's nodes that together are exactly [a, b] (leaves from
 * base); returns how many. */
static int cover_nodes(int base, int a, int b, int *node)
{
	int n = 0;
	for (int lo = a + base, hi = b + base + 1; lo < hi; lo >>= 1, hi >>= 1) {
		if (lo & 1)
			node[n++] = lo++;
		if (hi & 1)
			node[n++] = --hi;
	}
	return n;
}

/* The proper ancestors of the n nodes, each once (seen[] marks them with
 * stamp); returns how many. */
static int ancestors(const int *node, int n, int *seen, int stamp, int *out)
{
	int k = 0;
	for (int i = 0; i < n; i++)
		for (int x = node[i] >> 1; x >= 1 && seen[x] != stamp; x >>= 1)
			seen[x] = stamp, out[k++] = x;
	return k;
}

static int64_t place_buffers(Buffer *buf, int n)
{
	qsort(buf, (size_t)n, sizeof *buf, larger_first);
	int span = 1;   /* operator positions: lives lie in [0, span) */
	for (int k = 0; k < n; k++)
		span = buf[k].last + 1 > span ? buf[k].last + 1 : span;
	int base = 1;
	while (base < span)
		base *= 2;
	Shelf *cover = xcalloc((size_t)(2 * base), sizeof(Shelf));   /* lives covering the node */
	Shelf *part = xcalloc((size_t)(2 * base), sizeof(Shelf));    /* lives partly in it */
	int *seen = xcalloc((size_t)(2 * base), sizeof(int));
	int node[2 * 64], above[2 * 64];   /* at most 2 per level */
	const Shelf *shelf[4 * 64];
	Cursor heap[4 * 64];
	int64_t peak = 0;
	for (int k = 0; k < n; k++) {
		int64_t size = buf[k].size;
		int def = buf[k].def, last = buf[k].last;
		if (def < 0 || def > last)
			die("buffer of value %d lives [%d, %d]: plan_buffers' lives are its bug", buf[k].value, def, last);
		int nn = cover_nodes(base, def, last, node);
		int na = ancestors(node, nn, seen, k + 1, above);
		int ns = 0;
		for (int i = 0; i < nn; i++)
			shelf[ns++] = &cover[node[i]], shelf[ns++] = &part[node[i]];
		for (int i = 0; i < na; i++)
			shelf[ns++] = &cover[above[i]];
		int64_t at = lowest_fit(shelf, ns, size, heap);
		buf[k].off = at;
		peak = at + size > peak ? at + size : peak;
		if (size <= 0)
			continue;
		for (int i = 0; i < nn; i++)
			shelf_put(&cover[node[i]], at, at + size);
		for (int i = 0; i < na; i++)
			shelf_put(&part[above[i]], at, at + size);
	}
	for (int x = 0; x < 2 * base; x++) {
		for (int r = 0; r < cover[x].n; r++)
			free(cover[x].runs[r]);
		for (int r = 0; r < part[x].n; r++)
			free(part[x].runs[r]);
		free(cover[x].runs);
		free(part[x].runs);
	}
	free(cover);
	free(part);
	free(seen);

	return peak;
}

int64_t place_lives(int n, const int64_t *size, const int *def, const int *last, int64_t *off)
{
	Buffer *buf = xmalloc(sizeof *buf * (size_t)(n ? n : 1));
	for (int k = 0; k < n; k++)
		buf[k] = (Buffer){size[k], 0, def[k], last[k], k};
	int64_t peak = place_buffers(buf, n);
	for (int k = 0; k < n; k++)
		off[buf[k].value] = buf[k].off;
	free(buf);
	return peak;
}

int64_t place_lives_grouped(int n, const int64_t *size, const int *def, const int *last, const int *group, int ngroups,
                            int64_t *off)
{
	int *pick = xmalloc(sizeof(int) * (size_t)(n ? n : 1)), *pd = xmalloc(sizeof(int) * (size_t)(n ? n : 1));
	int *pl = xmalloc(sizeof(int) * (size_t)(n ? n : 1));
	int64_t *ps = xmalloc(sizeof(int64_t) * (size_t)(n ? n : 1)), *po = xmalloc(sizeof(int64_t) * (size_t)(n ? n : 1));
	int64_t base = 0, most = 0;
	for (int g = -1; g < ngroups; g++) {
		int m = 0;
		for (int k = 0; k < n; k++)
			if (group[k] == g)
				pick[m] = k, ps[m] = size[k], pd[m] = def[k], pl[m++] = last[k];
		int64_t used = place_lives(m, ps, pd, pl, po);
		for (int j = 0; j < m; j++)
			off[pick[j]] = po[j] + base;
		if (g < 0)
			base = used;
		else
			most = used > most ? used : most;
	}
	free(pick);
	free(pd);
	free(pl);
	free(ps);
	free(po);
	return base + most;
}
