/* test_redistribute.c: property tests of the redistribution planner.
 *
 * Thousands of random (from, to) layout pairs on random device matrices of 2
 * to 64 devices, partial sums, maxima and means included: each plan is
 * executed rank by rank on real arrays with the simulator's collectives, the
 * result compared with `to`'s pieces of the tensor, and its bytes checked
 * against what the test can prove: never less than what some rank must
 * receive (its target piece minus what it already holds), never more than
 * the plan that completes, gathers everything and slices, and exactly one
 * collective's cost where one collective is enough. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "simulate.h"

enum { CASES = 2000 };

static uint64_t next(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return *s >> 33;
}

static int64_t pick(uint64_t *s, int64_t n)
{
	return (int64_t)(next(s) % (uint64_t)n);
}

/* A random factorization of n into axes, most significant first. */
static int random_matrix(uint64_t *s, int64_t n, int64_t *dev)
{
	int nd = 0;
	while (n > 1 && nd < MAX_AXES) {
		int64_t f[64];
		int nf = 0;
		for (int64_t d = 2; d <= n && nf < 64; d++)
			if (n % d == 0)
				f[nf++] = d;
		dev[nd] = pick(s, 3) == 0 ? n : f[pick(s, nf)];
		n /= dev[nd++];
	}
	return nd;
}

/* Each axis: copies, a split of a random dim (appended to its map), or, when
 * allowed, partial. */
static void random_layout(uint64_t *s, int64_t n, int rank, bool partial_ok, ReduceOp op, TensorLayout *l)
{
	memset(l, 0, sizeof *l);
	l->ndev = random_matrix(s, n, l->dev);
	l->rank = rank;
	l->partial_op = op;
	for (int a = 0; a < l->ndev; a++) {
		int64_t r = pick(s, 4);
		if (r == 0 && partial_ok)
			l->partial |= 1u << a;
		else if (r >= 2 && rank > 0) {
			int d = (int)pick(s, rank);
			l->map[d][l->nmap[d]++] = (int8_t)a;
		}
	}
	if (!l->partial)
		l->partial_op = REDUCE_SUM_OP;
}

/* Rank r's piece of `from`: partial values built so that combining them over
 * the partial group by `op` gives the whole value, each member different. */
static SimTensor from_piece(const SimTensor *global, const TensorLayout *from, int64_t r)
{
	SimTensor p = sim_piece(global, from, r);
	if (!from->partial)
		return p;
	int64_t coords[MAX_AXES], j = 0, n = 1;
	layout_coords(from, r, coords);
	for (int a = 0; a < from->ndev; a++)
		if (from->partial & (1u << a)) {
			j = j * from->dev[a] + coords[a];
			n *= from->dev[a];
		}
	for (int64_t e = 0; e < p.size; e++) {
		double x = p.data[e];
		if (from->partial_op == REDUCE_MAX_OP)
			p.data[e] = x - (double)j;                              /* member 0 holds the max */
		else if (from->partial_op == REDUCE_MIN_OP)
			p.data[e] = x + (double)j;                              /* member 0 holds the min */
		else if (from->partial_op == REDUCE_PROD_OP)
			p.data[e] = (j ? 1 : x) * pow(2.0, (double)j - (double)(n - 1) / 2);   /* the factors multiply to 1 */
		else if (from->partial_op == REDUCE_MEAN_OP)
			p.data[e] = x * 2.0 * (double)(j + 1) / (double)(n + 1); /* the mean of the factors is 1 */
		else
			p.data[e] = x * (double)(j + 1) / (double)(n * (n + 1) / 2); /* the factors sum to 1 */
	}
	return p;
}

/* Runs every step of the plan on every rank. */
static SimTensor *execute(const RedistPlan *plan, SimTensor *pieces, int64_t n, const int64_t *global)
{
	int64_t *members = malloc(sizeof(int64_t) * (size_t)n);
	for (int k = 0; k < plan->n; k++) {
		const RedistStep *s = &plan->step[k];
		SimTensor *next = calloc((size_t)n, sizeof *next);
		for (int64_t r = 0; r < n; r++) {
			if (s->kind == STEP_SLICE) {
				int64_t begin[MAX_DIMS], end[MAX_DIMS];
				redist_slice_bounds(s, r, global, begin, end);
				next[r] = sim_slice(&pieces[r], begin, end);
				continue;
			}
			int m = layout_group(&s->from, r, s->axes, members), me = 0;
			SimTensor *in = calloc((size_t)m, sizeof *in);
			for (int i = 0; i < m; i++) {
				in[i] = pieces[members[i]];
				if (members[i] == r)
					me = i;
			}
			switch (s->kind) {
			case STEP_ALL_REDUCE: next[r] = sim_all_reduce(in, m, s->op); break;
			case STEP_REDUCE_SCATTER: next[r] = sim_reduce_scatter(in, m, s->op, s->dim, me); break;
			case STEP_ALL_GATHER: next[r] = sim_all_gather(in, m, s->dim); break;
			case STEP_ALL_TO_ALL: next[r] = sim_all_to_all(in, m, s->dim2, s->dim, me); break;
			case STEP_SLICE: break;
			}
			free(in);
		}
		for (int64_t r = 0; r < n; r++)
			sim_tensor_free(&pieces[r]);
		free(pieces);
		pieces = next;
	}
	free(members);
	return pieces;
}

/* The elements of rank r's `to` piece that its complete `from` piece lacks. */
static int64_t missing(const TensorLayout *from, const TensorLayout *to, const int64_t *global, int64_t r)
{
	int64_t want = 1, have = 1;
	for (int d = 0; d < to->rank; d++) {
		int64_t lf = global[d] / layout_dim_split(from, d), lt = global[d] / layout_dim_split(to, d);
		int64_t f0 = layout_shard_index(from, r, d) * lf, t0 = layout_shard_index(to, r, d) * lt;
		int64_t lo = f0 > t0 ? f0 : t0, hi = f0 + lf < t0 + lt ? f0 + lf : t0 + lt;
		want *= lt;
		have *= hi > lo ? hi - lo : 0;
	}
	return want - have;
}

/* Complete, gather every split, slice: the plan any layout pair allows. */
static int64_t naive_bytes(const TensorLayout *from, const int64_t *global, int64_t e)
{
	TensorLayout cur = *from;
	int64_t bytes = 0, local = e;
	for (int d = 0; d < cur.rank; d++)
		local *= global[d] / layout_dim_split(&cur, d);
	if (cur.partial) {
		int64_t n = 1;
		for (int a = 0; a < cur.ndev; a++)
			if (cur.partial & (1u << a))
				n *= cur.dev[a];
		bytes += redist_step_bytes(STEP_ALL_REDUCE, local, n);
	}
	for (int d = 0; d < cur.rank; d++)
		for (int k = cur.nmap[d] - 1; k >= 0; k--) {
			int64_t n = cur.dev[cur.map[d][k]];
			bytes += redist_step_bytes(STEP_ALL_GATHER, local, n);
			local *= n;
		}
	return bytes;
}

Test(redistribute, random_pairs_executed_and_bounded, .timeout = 600)
{
	uint64_t seed = 20261121;
	int cases = 0, at_bound = 0, partial_cases = 0;
	for (int t = 0; t < CASES; t++) {
		int64_t n = 2 + pick(&seed, 63);
		int rank = 1 + (int)pick(&seed, n <= 16 ? 3 : 2);   /* at most 64 x 128 x 128 doubles in all */
		int64_t global[MAX_DIMS];
		for (int d = 0; d < rank; d++)
			global[d] = n * (1 + pick(&seed, 2));   /* every split of n devices divides it */
		ReduceOp op = (ReduceOp)pick(&seed, 5);   /* sum, max, mean, min, prod */
		TensorLayout from, to;
		random_layout(&seed, n, rank, true, op, &from);
		random_layout(&seed, n, rank, false, op, &to);
		char why[128];
		cr_assert(layout_check(&from, global, why, sizeof why), "%s", why);
		cr_assert(layout_check(&to, global, why, sizeof why), "%s", why);
		RedistPlan plan;
		redist_plan(&from, &to, global, 4, &plan);

		SimTensor whole = sim_tensor_new(rank, global);
		for (int64_t e = 0; e < whole.size; e++)
			whole.data[e] = (double)(next(&seed) % 1000) / 10.0 - 50.0;
		SimTensor *pieces = calloc((size_t)n, sizeof *pieces);
		for (int64_t r = 0; r < n; r++)
			pieces[r] = from_piece(&whole, &from, r);
		pieces = execute(&plan, pieces, n, global);
		for (int64_t r = 0; r < n; r++) {
			SimTensor want = sim_piece(&whole, &to, r);
			cr_assert_eq(pieces[r].size, want.size, "case %d rank %lld: %lld elements, want %lld", t, (long long)r,
			             (long long)pieces[r].size, (long long)want.size);
			for (int64_t e = 0; e < want.size; e++)
				cr_assert(fabs(pieces[r].data[e] - want.data[e]) <= 1e-9 * (1 + fabs(want.data[e])),
				          "case %d (%lld devices) rank %lld element %lld: %g, want %g", t, (long long)n,
				          (long long)r, (long long)e, pieces[r].data[e], want.data[e]);
			sim_tensor_free(&want);
			sim_tensor_free(&pieces[r]);
		}
		free(pieces);
		sim_tensor_free(&whole);

		/* Bytes: what the test can prove about the cheapest plan. */
		int64_t upper = naive_bytes(&from, global, 4);
		cr_assert_leq(plan.bytes, upper, "case %d: %lld bytes, more than completing and gathering (%lld)", t,
		              (long long)plan.bytes, (long long)upper);
		if (!from.partial) {
			int64_t lower = 0;
			for (int64_t r = 0; r < n; r++) {
				int64_t m = missing(&from, &to, global, r) * 4;
				lower = m > lower ? m : lower;
			}
			cr_assert_geq(plan.bytes, lower, "case %d: %lld bytes, less than a rank must receive (%lld)", t,
			              (long long)plan.bytes, (long long)lower);
			at_bound += plan.bytes == lower;
		} else
			partial_cases++;
		cases++;
	}
	cr_log_info("%d random redistributions executed and correct; %d of the %d from complete layouts meet the "
	            "receive lower bound exactly (proven cheapest); %d from partial layouts", cases, at_bound,
	            cases - partial_cases, partial_cases);
}

static TensorLayout mk(int ndev, const int64_t *dev, int rank, const int8_t (*map)[MAX_AXES + 1], uint32_t partial)
{
	TensorLayout l = {.ndev = ndev, .rank = rank, .partial = partial};
	memcpy(l.dev, dev, sizeof(int64_t) * (size_t)ndev);
	for (int d = 0; d < rank; d++)
		for (int k = 0; map[d][k] >= 0; k++)
			l.map[d][l.nmap[d]++] = map[d][k];
	return l;
}

/* One collective is enough, and the plan is exactly that collective. */
Test(redistribute, single_collectives)
{
	const int64_t g[2] = {16, 16};
	const int64_t d24[2] = {2, 4}, d8[1] = {8};
	RedistPlan p;
	/* partial over the 4-axis, split on dim 0 wanted: ReduceScatter, not AllReduce + slice */
	TensorLayout from = mk(2, d24, 2, (const int8_t[][MAX_AXES + 1]){{0, -1}, {-1}}, 2u);
	TensorLayout to = mk(1, d8, 2, (const int8_t[][MAX_AXES + 1]){{0, -1}, {-1}}, 0);
	redist_plan(&from, &to, g, 4, &p);
	cr_assert_eq(p.n, 1);
	cr_assert_eq(p.step[0].kind, STEP_REDUCE_SCATTER);
	cr_assert_eq(p.bytes, 8 * 16 * 4 * 3 / 4);
	/* the same partial wanted whole: AllReduce */
	to = mk(2, d24, 2, (const int8_t[][MAX_AXES + 1]){{0, -1}, {-1}}, 0);
	redist_plan(&from, &to, g, 4, &p);
	cr_assert_eq(p.n, 1);
	cr_assert_eq(p.step[0].kind, STEP_ALL_REDUCE);
	/* a split moved from dim 0 to dim 1: one AllToAll */
	from = mk(1, d8, 2, (const int8_t[][MAX_AXES + 1]){{0, -1}, {-1}}, 0);
	to = mk(1, d8, 2, (const int8_t[][MAX_AXES + 1]){{-1}, {0, -1}}, 0);
	redist_plan(&from, &to, g, 4, &p);
	cr_assert_eq(p.n, 1);
	cr_assert_eq(p.step[0].kind, STEP_ALL_TO_ALL);
	cr_assert_eq(p.bytes, 2 * 16 * 4 * 7 / 8);
	/* replicated to split: a free slice; split to replicated: one AllGather */
	from = mk(1, d8, 2, (const int8_t[][MAX_AXES + 1]){{-1}, {-1}}, 0);
	redist_plan(&from, &to, g, 4, &p);
	cr_assert_eq(p.n, 1);
	cr_assert_eq(p.step[0].kind, STEP_SLICE);
	cr_assert_eq(p.bytes, 0);
	redist_plan(&to, &from, g, 4, &p);
	cr_assert_eq(p.n, 1);
	cr_assert_eq(p.step[0].kind, STEP_ALL_GATHER);
	cr_assert_eq(p.bytes, 16 * 16 * 4 * 7 / 8);
	/* equal layouts on differently shaped matrices: nothing to do */
	from = mk(2, d24, 2, (const int8_t[][MAX_AXES + 1]){{0, 1, -1}, {-1}}, 0);
	to = mk(1, d8, 2, (const int8_t[][MAX_AXES + 1]){{0, -1}, {-1}}, 0);
	redist_plan(&from, &to, g, 4, &p);
	cr_assert_eq(p.n, 0);
}

/* A partial sum over the 4 ranks of a node, copied on 8 nodes: in bytes
 * alone the cheapest plan slices it 8 ways over the copies, sums the slices
 * and gathers them back across the nodes; weighed by the links (a step
 * across nodes 6 times its bytes) it is the AllReduce inside the node. */
Test(redistribute, links_keep_steps_inside_a_node)
{
	const int64_t g[2] = {1024, 1024};
	const int64_t d[3] = {8, 2, 4};
	TensorLayout from = mk(3, d, 2, (const int8_t[][MAX_AXES + 1]){{1, -1}, {-1}}, 4u);
	TensorLayout to = mk(3, d, 2, (const int8_t[][MAX_AXES + 1]){{1, -1}, {-1}}, 0);
	RedistPlan bytes, linked;
	redist_plan(&from, &to, g, 4, &bytes);
	cr_assert_gt(bytes.n, 1);
	cr_assert_lt(bytes.bytes, 2 * 512 * 1024 * 4 * 3 / 4);
	RedistLinks links = {8, 6};
	RedistCache *c = redist_cache_new(&links);
	redist_plan_kept(c, &from, &to, g, 4, &linked);
	redist_cache_free(c);
	cr_assert_eq(linked.n, 1);
	cr_assert_eq(linked.step[0].kind, STEP_ALL_REDUCE);
	cr_assert_eq(linked.step[0].axes, 4u);
	cr_assert_eq(linked.bytes, 2 * 512 * 1024 * 4 * 3 / 4);
	/* on one node (8 devices here) the weights change nothing */
	const int64_t d1[2] = {2, 4};
	from = mk(2, d1, 2, (const int8_t[][MAX_AXES + 1]){{0, -1}, {-1}}, 2u);
	to = mk(2, d1, 2, (const int8_t[][MAX_AXES + 1]){{0, -1}, {-1}}, 0);
	redist_plan(&from, &to, g, 4, &bytes);
	c = redist_cache_new(&links);
	redist_plan_kept(c, &from, &to, g, 4, &linked);
	redist_cache_free(c);
	cr_assert_eq(linked.n, bytes.n);
	cr_assert_eq(linked.bytes, bytes.bytes);
}

/* Matrices that share no refinement still redistribute correctly. */
Test(redistribute, no_common_refinement)
{
	const int64_t g[2] = {6, 6};
	const int64_t d23[2] = {2, 3}, d32[2] = {3, 2};
	TensorLayout from = mk(2, d23, 2, (const int8_t[][MAX_AXES + 1]){{0, -1}, {1, -1}}, 0);
	TensorLayout to = mk(2, d32, 2, (const int8_t[][MAX_AXES + 1]){{0, -1}, {1, -1}}, 0);
	TensorLayout a, b;
	cr_assert(!layout_common_matrix(&from, &to, &a, &b));
	RedistPlan p;
	redist_plan(&from, &to, g, 4, &p);
	SimTensor whole = sim_tensor_new(2, g);
	for (int64_t e = 0; e < whole.size; e++)
		whole.data[e] = (double)e;
	SimTensor *pieces = calloc(6, sizeof *pieces);
	for (int r = 0; r < 6; r++)
		pieces[r] = sim_piece(&whole, &from, r);
	pieces = execute(&p, pieces, 6, g);
	for (int r = 0; r < 6; r++) {
		SimTensor want = sim_piece(&whole, &to, r);
		for (int64_t e = 0; e < want.size; e++)
			cr_assert_eq(pieces[r].data[e], want.data[e]);
		sim_tensor_free(&want);
		sim_tensor_free(&pieces[r]);
	}
	free(pieces);
	sim_tensor_free(&whole);
}
