/* polish.c: local moves to the fixed point, and the memo that answers them.
 *
 * Requires a Search whose every searched operator is decided (price.c).
 * best_move answers an operator's best move from its current strategy:
 * MOVE_PRIME (refine's, rec_search.c: one prime factor of the devices
 * moved between two op dims or the copies) or MOVE_ANY (polish's: the
 * cheapest of all candidates), from a memo keyed by everything local_cost
 * reads about the operator's surroundings (context_key), so the equal
 * layers of a deep stack are priced once. polish sweeps such moves until
 * no single operator's change that fits the device's memory lowers the
 * total. Calls price.c only. */
#include "search_internal.h"
#include "uneven.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- the fixed point: no single operator's change that fits lowers the cost ---- */

typedef struct {
	int v;
	const OpSplit *was, *now;   /* interned */
} Move;

/* The first `to` moves of log applied, the rest undone; *at: how many are. */
static void replay(Search *x, const Move *log, int *at, int to)
{
	for (; *at > to; --*at)
		set_current(x, log[*at - 1].v, log[*at - 1].was);
	for (; *at < to; ++*at)
		set_current(x, log[*at].v, log[*at].now);
}

/* What v's strategy enters the local cost of: v, its producers and their
 * other consumers (shared redistributions), the other users of its
 * parameters, its consumers. */
static void touch(const Search *x, int v, bool *dirty)
{
	const Node *nd = &x->g->nodes[v];
	dirty[v] = true;
	for (int k = 0; k < nd->nin; k++) {
		const Src *s = &x->src[v][k];
		if (s->kind == SRC_OP) {
			dirty[s->id] = true;
			for (int i = x->cstart[s->id]; i < x->cstart[s->id + 1]; i++)
				dirty[x->cnode[i]] = true;
		} else if (s->kind == SRC_PARAM) {
			if (x->first_node[s->id] >= 0)
				dirty[x->first_node[s->id]] = true;
			for (int i = x->pstart[s->id]; i < x->pstart[s->id + 1]; i++)
				dirty[x->pnode[i]] = true;
		}
	}
	for (int i = x->cstart[v]; i < x->cstart[v + 1]; i++)
		dirty[x->cnode[i]] = true;
}

/* ---- the memo of the sweeps: operators in equal surroundings ---- */

/* Everything local_cost reads for operator v, whatever the candidate, as
 * integers: v's operator, op dims, values and current strategy; per input
 * its source's layout (or home), the Reshapes between, a fixed layout, and
 * the layouts other decided readers take it in (shared); the other users of
 * a parameter v places, and its consumers, with their layouts and whether
 * an earlier reader shares theirs. Two operators with equal keys price
 * every candidate alike: in a deep stack of equal layers, the layers past
 * the first few are not priced again (memo). local_cost and the functions
 * it calls must not read anything this leaves out. */
static void put(Key *k, int64_t v)
{
	if (k->n == k->cap) {
		k->cap = k->cap ? 2 * k->cap : 256;
		k->k = xrealloc(k->k, sizeof(int64_t) * (size_t)k->cap);
	}
	k->k[k->n++] = v;
}

static void put_layout(Key *k, const TensorLayout *l)
{
	put(k, l->ndev);
	for (int a = 0; a < l->ndev; a++)
		put(k, l->dev[a]);
	put(k, l->rank);
	for (int d = 0; d < l->rank; d++) {
		put(k, l->nmap[d]);
		for (int i = 0; i < l->nmap[d]; i++)
			put(k, l->map[d][i]);
	}
	put(k, l->partial);
	put(k, l->partial ? (int64_t)l->partial_op : 0);
}

static void put_value(Key *k, const Search *x, int value)
{
	const Type *t = &x->g->values[value].type;
	put(k, t->rank);
	for (int d = 0; d < t->rank; d++)
		put(k, t->dims[d]);
	put(k, t->dtype);
	put(k, t->is_param);
	put(k, x->needs[value]);
}

static void put_chain(Key *k, const Search *x, const Src *s)
{
	put(k, s->nchain);
	for (int i = 0; i < s->nchain; i++)
		put_value(k, x, x->g->nodes[x->chain[s->chain + i]].result);
}

enum { KEY_FANOUT = 16 };

/* The readers of input k of v: (*node, *in)[0..*n), and a parameter's first
 * user (*first, -1 none) besides. */
static void readers_of(const Search *x, int v, int k, int *n, const int **node, const int **in, int *first)
{
	const Src *s = &x->src[v][k];
	*n = 0, *first = -1;
	if (s->kind == SRC_OP) {
		*n = x->cstart[s->id + 1] - x->cstart[s->id];
		*node = x->cnode + x->cstart[s->id];
		*in = x->cin + x->cstart[s->id];
	} else if (s->kind == SRC_PARAM) {
		*n = x->pstart[s->id + 1] - x->pstart[s->id];
		*node = x->pnode + x->pstart[s->id];
		*in = x->pin + x->pstart[s->id];
		*first = x->first_node[s->id];
	}
}

/* Reader w's entry for input j: the layout and gradient axes shared() compares. */
static void put_reader(Key *k, const Search *x, int w, int j)
{
	put_layout(k, &x->in[w][j]);
	put(k, (int64_t)(layout_busy_axes(&x->raw[w]) & ~layout_busy_axes(&x->in[w][j])));
}

static bool is_reader(const Search *x, int w, int j, int value)
{
	return w >= 0 && x->decided[w] && searchable(x, w) && x->g->nodes[w].in[j] == value;
}

/* The entry equal to the one in e, or -1. */
static int find_entry(const Readers *r, const Key *e)
{
	for (int i = 0; i < r->n; i++)
		if (r->start[i + 1] - r->start[i] == e->n &&
		    memcmp(r->k.k + r->start[i], e->k, sizeof(int64_t) * (size_t)e->n) == 0)
			return i;
	return -1;
}

/* The readers of input kin's value other than v (shared, with before false):
 * the layouts and gradient axes they take it in, each once. With more than
 * KEY_FANOUT readers, from the value's sum (Readers), less v's own. */
static void put_readers(Key *k, Search *x, int v, int kin)
{
	int value = x->g->nodes[v].in[kin], n, first;
	const int *node = NULL, *in = NULL;
	readers_of(x, v, kin, &n, &node, &in, &first);
	if (n <= KEY_FANOUT) {
		int last = -1;
		for (int i = first >= 0 ? -1 : 0; i < n; i++) {   /* -1: a parameter's first user */
			int w = i < 0 ? first : node[i], j = i < 0 ? x->first_in[x->src[v][kin].id] : in[i];
			if (w == v || !is_reader(x, w, j, value))
				continue;
			int at = k->n;
			put_reader(k, x, w, j);
			if (last >= 0 && at - last == k->n - at &&
			    memcmp(k->k + last, k->k + at, sizeof(int64_t) * (size_t)(at - last)) == 0)
				k->n = at;
			else
				last = at;
		}
		put(k, -1);
		return;
	}
	if (!x->readers) {
		x->readers = xcalloc((size_t)x->g->nvalues, sizeof *x->readers);
		for (int u = 0; u < x->g->nvalues; u++)
			x->readers[u].epoch = -1;
	}
	Readers *r = &x->readers[value];
	if (r->epoch != x->epoch || r->version != x->version[value]) {
		r->k.n = r->n = 0;
		for (int i = first >= 0 ? -1 : 0; i < n; i++) {
			int w = i < 0 ? first : node[i], j = i < 0 ? x->first_in[x->src[v][kin].id] : in[i];
			if (!is_reader(x, w, j, value))
				continue;
			x->entry.n = 0;
			put_reader(&x->entry, x, w, j);
			int e = find_entry(r, &x->entry);
			if (e < 0) {
				if (r->n == r->cap) {
					r->cap = r->cap ? 2 * r->cap : 4;
					r->start = xrealloc(r->start, sizeof(int) * (size_t)(r->cap + 1));
					r->count = xrealloc(r->count, sizeof(int) * (size_t)r->cap);
				}
				r->start[r->n] = r->k.n;
				for (int t = 0; t < x->entry.n; t++)
					put(&r->k, x->entry.k[t]);
				e = r->n++;
				r->start[r->n] = r->k.n;
				r->count[e] = 0;
			}
			r->count[e]++;
		}
		r->epoch = x->epoch, r->version = x->version[value];
	}
	int mine[MAX_RULE_INPUTS + 8], nmine = 0;   /* v's own entries */
	for (int j = 0; j < x->g->nodes[v].nin && nmine < (int)(sizeof mine / sizeof mine[0]); j++)
		if (is_reader(x, v, j, value)) {
			x->entry.n = 0;
			put_reader(&x->entry, x, v, j);
			mine[nmine++] = find_entry(r, &x->entry);
		}
	put(k, -2);
	for (int i = 0; i < r->n; i++) {
		int c = r->count[i];
		for (int t = 0; t < nmine; t++)
			c -= mine[t] == i;
		for (int t = r->start[i]; c > 0 && t < r->start[i + 1]; t++)
			put(k, r->k.k[t]);
	}
	put(k, -1);
}

/* A consumer w (input j) of what v places or produces: whether it is decided
 * and, if so, the layout it reads, the chain that brings it, and whether the
 * move is shared. */
static void put_consumer(Key *k, const Search *x, int w, int j)
{
	put(k, x->decided[w]);
	if (!x->decided[w])
		return;
	put_layout(k, &x->in[w][j]);
	put_chain(k, x, &x->src[w][j]);
	put(k, shared(x, w, j, &x->in[w][j], -1, true));
}

/* False, with no key, when v's result or a parameter v places has more than
 * KEY_FANOUT readers: the key would list them all (its one producer is
 * priced each time instead). */
static bool context_key(Search *x, int v, int kind, Key *k)
{
	const Graph *g = x->g;
	const Node *nd = &g->nodes[v];
	const NodeStrategy *ns = &x->st->node[v];
	const OpDims *od = ns->od;
	k->n = 0;
	if (x->cstart[v + 1] - x->cstart[v] > KEY_FANOUT || nd->nin > MAX_RULE_INPUTS + 8)
		return false;
	for (int kin = 0; kin < nd->nin; kin++) {
		const Src *s = &x->src[v][kin];
		if (s->kind == SRC_PARAM && x->first_node[s->id] == v && x->first_in[s->id] == kin &&
		    x->pstart[s->id + 1] - x->pstart[s->id] > KEY_FANOUT)
			return false;
	}
	put(k, kind);
	put(k, nd->op);
	put(k, nd->nin);
	put_value(k, x, nd->result);
	put(k, x->returned[v]);
	put(k, ns->has_out_strategy);
	if (ns->has_out_strategy)
		put_layout(k, ns->delivered);
	put(k, od->nod);
	for (int o = 0; o < od->nod; o++)
		put(k, od->size[o]), put(k, x->cur[v].split[o]);
	put(k, copies_first(&x->cur[v]));   /* the family of its moves */
	put(k, od->whole), put(k, od->normalized), put(k, od->reduced), put(k, od->reduce_op), put(k, od->batch);
	put(k, od->nstats_fwd), put(k, od->nstats_bwd), put(k, od->nin), put(k, od->out_rank);
	for (int d = 0; d < od->out_rank; d++)
		put(k, od->out_dim[d]);
	for (int i = 0; i < od->nin && i < MAX_RULE_INPUTS; i++) {
		put(k, od->in_rank[i]);
		for (int d = 0; d < od->in_rank[i]; d++)
			put(k, od->in_dim[i][d]);
	}
	for (int kin = 0; kin < nd->nin; kin++) {
		const Src *s = &x->src[v][kin];
		put_value(k, x, nd->in[kin]);
		put(k, differentiable(g, nd, kin));
		put(k, s->kind);
		put_chain(k, x, s);
		put(k, x->fixed[v][kin] != NULL);
		if (x->fixed[v][kin]) {
			put_layout(k, x->fixed[v][kin]);
			put_value(k, x, s->id);
		}
		put_readers(k, x, v, kin);
		if (s->kind == SRC_OP) {
			put_value(k, x, g->nodes[s->id].result);
			put(k, x->decided[s->id]);
			if (x->decided[s->id])
				put_layout(k, &x->out[s->id]);
		} else if (s->kind == SRC_PARAM) {
			int p = s->id;
			bool places = x->first_node[p] == v && x->first_in[p] == kin && !x->st->home_fixed[p];
			put_value(k, x, p);
			put(k, places);
			if (!places) {
				const TensorLayout *h = home(x, p);
				put(k, h != NULL);
				if (h)
					put_layout(k, h);
				continue;
			}
			for (int i = x->pstart[p]; i < x->pstart[p + 1]; i++)
				put_consumer(k, x, x->pnode[i], x->pin[i]);
			put(k, -1);
		}
	}
	for (int i = x->cstart[v]; i < x->cstart[v + 1]; i++)
		put_consumer(k, x, x->cnode[i], x->cin[i]);
	put(k, -1);
	return true;
}

static uint64_t key_hash(const Key *k)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (int i = 0; i < k->n; i++) {
		h = (h ^ (uint64_t)k->k[i]) * 0x100000001b3ull;
		h ^= h >> 29;
	}
	return h;
}

/* The slot of key k: its entry, or the empty one to fill. */
static Memo *memo_slot(MemoTable *t, const Key *k)
{
	if (2 * (t->n + 1) > t->nslot) {
		size_t nslot = t->nslot ? 2 * t->nslot : 1024;
		Memo *slot = xcalloc(nslot, sizeof *slot);
		for (size_t i = 0; i < t->nslot; i++)
			if (t->slot[i].key) {
				Key old = {t->slot[i].key, t->slot[i].nkey, 0};
				size_t at = key_hash(&old) & (nslot - 1);
				while (slot[at].key)
					at = (at + 1) & (nslot - 1);
				slot[at] = t->slot[i];
			}
		free(t->slot);
		t->slot = slot;
		t->nslot = nslot;
	}
	size_t at = key_hash(k) & (t->nslot - 1);
	for (; t->slot[at].key; at = (at + 1) & (t->nslot - 1))
		if (t->slot[at].nkey == k->n && memcmp(t->slot[at].key, k->k, sizeof(int64_t) * (size_t)k->n) == 0)
			return &t->slot[at];
	return &t->slot[at];
}

/* v's cheapest move of one prime factor from its current strategy, if one
 * lowers its cost; one whose own part does not fit a device is not taken
 * while the current one fits. The moves in their order, each taken when it
 * costs less than the best so far by more than rounding (scan_candidates:
 * the same move, most of them not priced). */
static bool prime_move(Search *x, int v, Priced *out)
{
	double memory = cost_cluster(x->cm)->memory;
	const OpDims *od = x->st->node[v].od;
	double mem, now = local_cost(x, v, &x->cur[v], &mem);
	bool fits = mem <= memory;
	int64_t split[MAX_OPDIMS];
	memcpy(split, x->cur[v].split, sizeof split);
	int64_t rep = x->n / product_of(split, od->nod);
	OpSplit *cand = NULL;
	int n = 0, cap = 0;
	for (int a = 0; a <= od->nod; a++) {
		int64_t have = a < od->nod ? split[a] : rep;
		for (int64_t p = 2; p <= have; p++) {
			if (have % p)
				continue;
			bool prime = true;
			for (int64_t q = 2; q * q <= p && prime; q++)
				prime = p % q != 0;
			if (!prime)
				continue;
			for (int b = 0; b <= od->nod; b++) {
				if (b == a || (b < od->nod && ((od->whole & (1u << b)) || !op_dim_used(od, b) ||
				                               !op_dim_takes(&x->g->nodes[v], od, b, split[b] * p))))
					continue;
				int64_t s2[MAX_OPDIMS];
				memcpy(s2, split, sizeof s2);
				if (a < od->nod)
					s2[a] /= p;
				if (b < od->nod)
					s2[b] *= p;
				if (!op_split_allowed(&x->g->nodes[v], od, s2, x->n, NULL))
					continue;
				if (n == cap) {
					cap = cap ? 2 * cap : 16;
					cand = xrealloc(cand, sizeof *cand * (size_t)cap);
				}
				search_split(x, od, s2, copies_first(&x->cur[v]), &cand[n]);
				if (local_memory(x, v, &cand[n]) <= memory || !fits)   /* else never taken */
					n++;
			}
		}
	}
	double c;
	int i = scan_candidates(x, v, cand, n, now, false, true, &c);
	if (i >= 0)
		*out = (Priced){cand[i], c, 0};
	free(cand);
	return i >= 0;
}

/* v's best move from its current strategy, or false: MOVE_PRIME, refine's
 * (one prime factor of the devices moved between two op dims or the
 * copies); MOVE_ANY, polish's (the cheapest of all candidates). Answered
 * from the memo when an operator with v's key asked before; the memo is
 * emptied past MEMO_MAX keys (a graph without repeats gains nothing from
 * it). */
enum { MEMO_MAX = 1 << 14 };

static bool find_move(Search *x, int v, int kind, Priced *out)
{
	if (kind == MOVE_PRIME)
		return prime_move(x, v, out);
	double mem, now = local_cost(x, v, &x->cur[v], &mem);
	return cheaper_candidates(x, v, below(now), out, 1) > 0;
}

bool best_move(Search *x, int v, int kind, Priced *out)
{
	if (!context_key(x, v, kind, &x->key))
		return find_move(x, v, kind, out);
	if (!x->memo.a || x->memo.n == MEMO_MAX) {
		free(x->memo.slot);
		if (x->memo.a)
			arena_free(x->memo.a);
		x->memo = (MemoTable){NULL, 0, 0, arena_new()};
	}
	Memo *m = memo_slot(&x->memo, &x->key);
	if (m->key) {
		*out = m->best;
		return m->found;
	}
	bool found = find_move(x, v, kind, out);
	m->key = arena_alloc(x->memo.a, sizeof(int64_t) * (size_t)x->key.n);
	memcpy(m->key, x->key.k, sizeof(int64_t) * (size_t)x->key.n);
	m->nkey = x->key.n;
	m->found = found;
	if (found)
		m->best = *out;
	x->memo.n++;
	return found;
}

static int weight_cmp(const void *pa, const void *pb, void *ctx)
{
	const double *weight = ctx;
	int a = *(const int *)pa, b = *(const int *)pb;
	if (weight[a] != weight[b])
		return weight[a] > weight[b] ? -1 : 1;
	return a - b;
}

int weight_order(const Search *x, int *order)
{
	int nn = x->g->nnodes, n = 0;
	double *weight = xcalloc((size_t)(nn ? nn : 1), sizeof(double));
	int64_t ones[MAX_OPDIMS];
	for (int o = 0; o < MAX_OPDIMS; o++)
		ones[o] = 1;
	for (int v = 0; v < nn; v++)
		if (searchable(x, v) && !x->fixed_node[v]) {
			weight[v] = cost_compute(x->cm, &x->g->nodes[v], x->st->node[v].od, ones);
			order[n++] = v;
		}
	sort_r(order, (size_t)n, sizeof(int), weight_cmp, weight);
	free(weight);
	return n;
}

enum { POLISH_MOVES = 64,     /* a guard: moves per operator */
       POLISH_CHECKS = 64 };   /* plans whose slab the moves one at a time may check */

/* From the current strategies, sweeps in weight order in which an operator
 * takes its cheapest candidate (all of op_candidates, not only refine's
 * moves) when that lowers the total, until none does: the fixed point. The
 * first sweep prices every operator (an operator whose surroundings equal
 * one priced before is answered from the memo), the next ones those whose
 * surroundings changed (touch). Memory: the plan's slab may not exceed
 * `limit`. The moves are checked together, once, when no operator has one
 * left; if they do not fit, they are cut back to their longest prefix that
 * does (bisection on the slab), and from then on each move is checked
 * alone: an operator tries its cheaper candidates, cheapest first, and
 * takes the first that fits; one left with cheaper candidates that do not
 * fit is tried again after any move (the slab is the whole plan's). So at
 * the end no single operator's change that fits lowers the total: a
 * cheaper --explain runner-up is one that does not fit. Each move lowers
 * the total, so the sweeps end. Each check lowers and plans the whole
 * program (a fifth of a second at GPT 175B's 96 layers), and an operator
 * left blocked is tried again after every move, so the moves one at a time
 * check at most POLISH_CHECKS plans: a model that needs more keeps the
 * moves made by then (every one fits; a cheaper runner-up that fits may be
 * left, which --explain shows). */
void polish(Search *x, const int *order, int norder, double limit)
{
	int nn = x->g->nnodes, nlog = 0, cap = 0;
	Priced *pr = xmalloc(sizeof *pr * MAX_CANDIDATES);
	Move *log = NULL;
	bool *dirty = xcalloc((size_t)(nn ? nn : 1), sizeof(bool)), *blocked = xcalloc((size_t)(nn ? nn : 1), sizeof(bool));
	Arena *a = arena_new();
	Interner *splits = interner_new(a);
	for (int v = 0; v < nn; v++)
		x->decided[v] = searchable(x, v);
	x->epoch++;
	for (int i = 0; i < norder; i++)
		dirty[order[i]] = true;
	bool tight = false, more = true;
	int checks = 0;
	int64_t moves = 0, most = (int64_t)POLISH_MOVES * norder;
	while (more) {
		more = false;
		for (int i = 0; i < norder; i++) {
			int v = order[i];
			if (!dirty[v] || moves == most)
				continue;
			dirty[v] = false;
			if (!tight) {
				if (best_move(x, v, MOVE_ANY, pr)) {
					if (nlog == cap) {
						cap = cap ? 2 * cap : 256;
						log = xrealloc(log, sizeof *log * (size_t)cap);
					}
					log[nlog++] = (Move){v, intern_bytes(splits, &x->cur[v], sizeof(OpSplit)),
					                     intern_bytes(splits, &pr[0].s, sizeof(OpSplit))};
					set_current(x, v, &pr[0].s);
					touch(x, v, dirty);
					more = true;
					moves++;
				}
				continue;
			}
			if (checks == POLISH_CHECKS)
				continue;
			OpSplit was = x->cur[v];
			double mem, now = local_cost(x, v, &x->cur[v], &mem);
			int n = cheaper_candidates(x, v, below(now), pr, MAX_CANDIDATES);
			bool took = false;
			for (int j = 0; j < n && !took && checks < POLISH_CHECKS; j++, checks++) {
				set_current(x, v, &pr[j].s);
				took = slab_memory(x) <= limit;
				if (!took)
					set_current(x, v, &was);
			}
			blocked[v] = n > 0 && !took && checks < POLISH_CHECKS;
			if (took) {
				for (int w = 0; w < nn; w++)
					dirty[w] |= blocked[w];
				touch(x, v, dirty);
				more = true;
				moves++;
			}
		}
		if (more || tight || !nlog || slab_memory(x) <= limit)
			continue;
		int lo = 0, hi = nlog, at = nlog;   /* none of the moves fits; all do not */
		while (hi - lo > 1) {
			int mid = lo + (hi - lo) / 2;
			replay(x, log, &at, mid);
			if (slab_memory(x) <= limit)
				lo = mid;
			else
				hi = mid;
		}
		replay(x, log, &at, lo);
		for (int j = 0; j < nlog; j++)
			touch(x, log[j].v, dirty);
		tight = more = true;
	}
	free(pr);
	free(log);
	free(dirty);
	free(blocked);
	arena_free(a);
}
