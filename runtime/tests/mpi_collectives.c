/* mpi_collectives.c: the collectives under mpirun -np 4, against answers
 * computed here from their definitions (docs/operators.md), element by element.
 *
 * Every member's tensor holds values that name the member and the element,
 * so a slice from the wrong member or the wrong place shows. Each collective
 * runs on every axis of a 3-D tensor (every split/concat pair for AllToAll),
 * over the world, pairs of neighbours, the non-contiguous pairs (0, 2) and
 * (1, 3), and groups given out of rank order ((3, 1), (3, 2, 1, 0)), for
 * float32, int32, float16 and bfloat16 (2-byte elements; their sums and
 * means, small integers and quarters, are exact in either). The bytes each rank sent are checked after every call
 * against the ring formulas, and a few against numbers worked out by hand.
 * Built against either library: with SC_TEST_CUDA the buffers are device
 * memory and the copies go through sc_from_host/sc_to_host. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef SC_TEST_CUDA
#include <cuda_runtime_api.h>
#endif

#include "rt_internal.h"
#include "rt_test.h"

static sc_rt *rt;
static int me, checks, failures;
static int64_t expect_bytes;

enum { SLAB = 1 << 22 };

static void check(bool ok, const char *fmt, const char *what)
{
	checks++;
	if (!ok) {
		failures++;
		fprintf(stderr, "rank %d: FAILED: %s %s\n", me, fmt, what);
	}
}

/* the value member rank r holds at element i (salt tells tensors apart) */
static double val(int r, int64_t i, int salt)
{
	return (double)(((r + 1) * 37 + i * 13 + salt * 5) % 101) - 50;
}

static void put(void *buf, sc_dtype dt, int64_t i, double v)
{
	switch (dt) {
	case SC_F32: ((float *)buf)[i] = (float)v; break;
	case SC_I32: ((int32_t *)buf)[i] = (int32_t)v; break;
	case SC_F16: ((uint16_t *)buf)[i] = sc_f16_from_double(v); break;
	case SC_BF16: ((uint16_t *)buf)[i] = sc_bf16_from_double(v); break;
	case SC_BOOL: ((uint8_t *)buf)[i] = v > 0; break;
	default: abort();
	}
}

static double get(const void *buf, sc_dtype dt, int64_t i)
{
	switch (dt) {
	case SC_F32: return ((const float *)buf)[i];
	case SC_I32: return ((const int32_t *)buf)[i];
	case SC_F16: return sc_f16_to_float(((const uint16_t *)buf)[i]);
	case SC_BF16: return sc_bf16_to_float(((const uint16_t *)buf)[i]);
	case SC_BOOL: return ((const uint8_t *)buf)[i];
	default: abort();
	}
}

/* v as an element of dt holds it (a bool: v > 0) */
static double stored(sc_dtype dt, double v)
{
	char one[4];
	put(one, dt, 0, v);
	return get(one, dt, 0);
}

/* a mean as the runtime computes it: int32 divides; floats divide in
 * float32 and round to their type */
static double mean_of(sc_dtype dt, double sum, int n)
{
	if (dt == SC_I32)
		return (double)((int32_t)sum / n);
	char one[4];
	put(one, dt, 0, (double)((float)sum / (float)n));
	return get(one, dt, 0);
}

/* what a reduction by op makes of s and the next member's v, from start_of(op) */
static double start_of(sc_redop op)
{
	return op == SC_MAX ? -1e30 : op == SC_MIN ? 1e30 : op == SC_PROD ? 1 : 0;
}

static double combine(sc_redop op, double s, double v)
{
	return op == SC_MAX ? (v > s ? v : s) : op == SC_MIN ? (v < s ? v : s) : op == SC_PROD ? s * v : s + v;
}

static const char *opname(sc_redop op)
{
	return op == SC_SUM ? "sum" : op == SC_MAX ? "max" : op == SC_MIN ? "min" : op == SC_PROD ? "prod" : "mean";
}

/* this rank's input on device, from val() */
static void *make_input(sc_dtype dt, int64_t n, int salt)
{
	size_t es = sc_dtype_size(dt);
	void *h = malloc((size_t)n * es), *d = t_slab((size_t)n * es);
	for (int64_t i = 0; i < n; i++)
		put(h, dt, i, val(me, i, salt));
	sc_from_host(rt, d, h, (size_t)n * es);
	free(h);
	return d;
}

static void *fetch(const void *d, sc_dtype dt, int64_t n)
{
	void *h = malloc((size_t)n * sc_dtype_size(dt));
	sc_to_host(rt, h, d, (size_t)n * sc_dtype_size(dt));
	return h;
}

static void compare(const char *what, const void *got, const double *want, sc_dtype dt, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		if (get(got, dt, i) != want[i]) {
			char msg[256];
			snprintf(msg, sizeof msg, "(element %lld: got %g, want %g)", (long long)i, get(got, dt, i), want[i]);
			check(false, what, msg);
			return;
		}
	check(true, what, "");
}

static void check_bytes(const char *what)
{
	char msg[128];
	snprintf(msg, sizeof msg, "(counted %lld bytes, expected %lld)", (long long)sc_comm_bytes(rt),
	         (long long)expect_bytes);
	check(sc_comm_bytes(rt) == expect_bytes, what, msg);
}

typedef struct {
	const char *name;
	int n;
	int members[4];
	sc_group *g;
} Group;

static int index_in(const Group *g)
{
	for (int i = 0; i < g->n; i++)
		if (g->members[i] == me)
			return i;
	return -1;
}

static const char *dtname(sc_dtype dt)
{
	return dt == SC_F32 ? "f32" : dt == SC_I32 ? "i32" : dt == SC_F16 ? "f16" : dt == SC_BF16 ? "bf16" : "bool";
}

static void test_all_reduce(Group *g, sc_dtype dt, sc_redop op, bool in_place)
{
	int64_t n = 24;
	int64_t es = (int64_t)sc_dtype_size(dt);
	void *in = make_input(dt, n, 1), *out = in_place ? in : t_slab((size_t)(n * es));
	sc_all_reduce(rt, g->g, in, out, dt, n, op);
	expect_bytes += 2 * n * es * (g->n - 1) / g->n;
	double want[24];
	for (int64_t i = 0; i < n; i++) {
		double s = start_of(op);
		for (int m = 0; m < g->n; m++)
			s = combine(op, s, val(g->members[m], i, 1));
		if (op == SC_MEAN)
			s = mean_of(dt, s, g->n);
		want[i] = stored(dt, s);   /* a product past Float16's range is inf; a bool's extreme is 0 or 1 */
	}
	void *got = fetch(out, dt, n);
	char what[128];
	snprintf(what, sizeof what, "all_reduce %s %s over %s%s", dtname(dt), opname(op), g->name,
	         in_place ? " in place" : "");
	compare(what, got, want, dt, n);
	free(got);
}

/* Three tensors of 24, 5 and 11 elements in one call (one in place): each
 * as its own all_reduce would give, and bytes counted per tensor. */
static void test_all_reduce_bucket(Group *g, sc_dtype dt, sc_redop op)
{
	enum { N = 3 };
	const int64_t counts[N] = {24, 5, 11};
	int64_t es = (int64_t)sc_dtype_size(dt);
	const void *in[N];
	void *out[N];
	for (int k = 0; k < N; k++) {
		in[k] = make_input(dt, counts[k], 2 + k);
		out[k] = k == 1 ? (void *)in[k] : t_slab((size_t)(counts[k] * es));
		expect_bytes += 2 * counts[k] * es * (g->n - 1) / g->n;
	}
	sc_all_reduce_bucket(rt, g->g, N, in, out, counts, dt, op, t_slab((size_t)(40 * es)));
	for (int k = 0; k < N; k++) {
		double want[24];
		for (int64_t i = 0; i < counts[k]; i++) {
			double s = start_of(op);
			for (int m = 0; m < g->n; m++)
				s = combine(op, s, val(g->members[m], i, 2 + k));
			want[i] = op == SC_MEAN ? mean_of(dt, s, g->n) : stored(dt, s);
		}
		void *got = fetch(out[k], dt, counts[k]);
		char what[128];
		snprintf(what, sizeof what, "all_reduce_bucket %s %s over %s, tensor %d", dtname(dt), opname(op), g->name, k);
		compare(what, got, want, dt, counts[k]);
		free(got);
	}
}

static const int64_t D3[3] = {4, 8, 12};   /* divisible by 2 and 4 on every axis */

static void test_all_gather(Group *g, sc_dtype dt, int axis)
{
	const int64_t ld[3] = {2, 3, 4};
	int64_t n = t_numel(ld, 3), od[3] = {ld[0], ld[1], ld[2]};
	od[axis] *= g->n;
	int64_t es = (int64_t)sc_dtype_size(dt);
	void *in = make_input(dt, n, 2 + axis), *out = t_slab((size_t)(n * g->n * es));
	sc_all_gather(rt, g->g, in, out, dt, ld, 3, axis);
	expect_bytes += n * g->n * es * (g->n - 1) / g->n;
	double *want = malloc((size_t)(n * g->n) * sizeof *want);
	for (int64_t i = 0; i < n * g->n; i++) {
		int64_t idx[3];
		t_unravel(i, od, 3, idx);
		int j = (int)(idx[axis] / ld[axis]);
		idx[axis] %= ld[axis];
		want[i] = stored(dt, val(g->members[j], t_ravel(idx, ld, 3), 2 + axis));
	}
	void *got = fetch(out, dt, n * g->n);
	char what[128];
	snprintf(what, sizeof what, "all_gather %s axis %d over %s", dtname(dt), axis, g->name);
	compare(what, got, want, dt, n * g->n);
	free(got);
	free(want);
}

static void test_reduce_scatter(Group *g, sc_dtype dt, int axis, sc_redop op)
{
	int64_t n = t_numel(D3, 3), od[3] = {D3[0], D3[1], D3[2]};
	od[axis] /= g->n;
	int k = index_in(g);
	int64_t es = (int64_t)sc_dtype_size(dt);
	void *in = make_input(dt, n, 7 + axis), *out = t_slab((size_t)(n / g->n * es));
	sc_reduce_scatter(rt, g->g, in, out, dt, D3, 3, axis, op);
	expect_bytes += n * es * (g->n - 1) / g->n;
	double *want = malloc((size_t)(n / g->n) * sizeof *want);
	for (int64_t i = 0; i < n / g->n; i++) {
		int64_t idx[3];
		t_unravel(i, od, 3, idx);
		idx[axis] += k * od[axis];
		int64_t src = t_ravel(idx, D3, 3);
		double s = start_of(op);
		for (int m = 0; m < g->n; m++)
			s = combine(op, s, val(g->members[m], src, 7 + axis));
		if (op == SC_MEAN)
			s = mean_of(dt, s, g->n);
		want[i] = stored(dt, s);
	}
	void *got = fetch(out, dt, n / g->n);
	char what[128];
	snprintf(what, sizeof what, "reduce_scatter %s %s axis %d over %s", dtname(dt), opname(op), axis, g->name);
	compare(what, got, want, dt, n / g->n);
	free(got);
	free(want);
}

static void test_all_to_all(Group *g, sc_dtype dt, int split, int concat)
{
	int64_t n = t_numel(D3, 3), pd[3] = {D3[0], D3[1], D3[2]};
	pd[split] /= g->n;
	int64_t od[3] = {pd[0], pd[1], pd[2]};
	od[concat] *= g->n;
	int k = index_in(g);
	int64_t es = (int64_t)sc_dtype_size(dt);
	void *in = make_input(dt, n, 11 + 3 * split + concat), *out = t_slab((size_t)(n * es));
	sc_all_to_all(rt, g->g, in, out, dt, D3, 3, split, concat);
	expect_bytes += n * es * (g->n - 1) / g->n;
	double *want = malloc((size_t)n * sizeof *want);
	for (int64_t i = 0; i < n; i++) {
		int64_t idx[3];
		t_unravel(i, od, 3, idx);
		int j = (int)(idx[concat] / pd[concat]);   /* the piece came from member j */
		idx[concat] %= pd[concat];
		idx[split] += k * pd[split];               /* member j's k-th slice along split */
		want[i] = stored(dt, val(g->members[j], t_ravel(idx, D3, 3), 11 + 3 * split + concat));
	}
	void *got = fetch(out, dt, n);
	char what[128];
	snprintf(what, sizeof what, "all_to_all %s split %d concat %d over %s", dtname(dt), split, concat, g->name);
	compare(what, got, want, dt, n);
	free(got);
	free(want);
}

int main(int argc, char **argv)
{
#ifdef SC_TEST_CUDA
	int ndev = 0;
	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
		printf("mpi_collectives: no CUDA device; skipped\n");
		return 0;
	}
#endif
	rt = sc_init(&argc, &argv, 4);
	me = sc_rank(rt);
	t_slab_init(sc_slab(rt, SLAB), SLAB, "mpi_collectives");
	Group groups[] = {
		{"(0, 1, 2, 3)", 4, {0, 1, 2, 3}, NULL},
		{"(3, 2, 1, 0)", 4, {3, 2, 1, 0}, NULL},
		{"(0, 1)", 2, {0, 1}, NULL},
		{"(2, 3)", 2, {2, 3}, NULL},
		{"(0, 2)", 2, {0, 2}, NULL},
		{"(3, 1)", 2, {3, 1}, NULL},
		{"(1, 3)", 2, {1, 3}, NULL},
	};
	int ngroups = (int)(sizeof groups / sizeof groups[0]);
	for (int i = 0; i < ngroups; i++)
		groups[i].g = sc_group_new(rt, groups[i].members, groups[i].n);

	/* by hand: 24 floats (96 bytes) over 4 send 2 * 96 * 3/4 = 144 bytes */
	test_all_reduce(&groups[0], SC_F32, SC_SUM, false);
	check(sc_comm_bytes(rt) == 144, "bytes after one all_reduce of 96 bytes over 4 members", "(want 144)");
	/* a (2, 3, 4) float tensor gathered over 4: output 384 bytes, 288 sent */
	test_all_gather(&groups[0], SC_F32, 1);
	check(sc_comm_bytes(rt) == 144 + 288, "bytes after an all_gather to 384 bytes over 4", "(want 432)");

	/* a (2, 3, 4) float16 tensor gathered over 4: output 192 bytes, 144 sent */
	int64_t before = sc_comm_bytes(rt);
	test_all_gather(&groups[0], SC_F16, 2);
	check(sc_comm_bytes(rt) - before == 144, "bytes of an all_gather to 192 bytes over 4", "(want 144)");

	const sc_dtype dts[] = {SC_F32, SC_I32, SC_F16, SC_BF16};
	for (int gi = 0; gi < ngroups; gi++) {
		Group *g = &groups[gi];
		for (size_t di = 0; di < sizeof dts / sizeof dts[0]; di++) {
			sc_dtype dt = dts[di];
			if (index_in(g) < 0)
				continue;
			for (sc_redop op = SC_SUM; op <= SC_PROD; op++) {   /* sum, max, mean, min, prod */
				test_all_reduce(g, dt, op, op == SC_MAX || op == SC_MIN);
				test_all_reduce_bucket(g, dt, op);
			}
			for (int axis = 0; axis < 3; axis++) {
				test_all_gather(g, dt, axis);
				for (sc_redop op = SC_SUM; op <= SC_PROD; op++)
					test_reduce_scatter(g, dt, axis, op);
				for (int c = 0; c < 3; c++)
					test_all_to_all(g, dt, axis, c);
			}
			t_slab_reset();
			check_bytes(g->name);
		}
	}
	/* bool is moved (AllGather and AllToAll: a Select's condition laid out anew) and reduced by min and max
	 * (ReduceAll's and ReduceAny's partial results) */
	for (int gi = 0; gi < ngroups; gi++) {
		Group *g = &groups[gi];
		if (index_in(g) < 0)
			continue;
		for (sc_redop op = SC_MAX; op <= SC_MIN; op += SC_MIN - SC_MAX) {
			test_all_reduce(g, SC_BOOL, op, op == SC_MIN);
			test_all_reduce_bucket(g, SC_BOOL, op);
		}
		for (int axis = 0; axis < 3; axis++) {
			test_all_gather(g, SC_BOOL, axis);
			test_reduce_scatter(g, SC_BOOL, axis, SC_MIN);
			test_reduce_scatter(g, SC_BOOL, axis, SC_MAX);
			for (int c = 0; c < 3; c++)
				test_all_to_all(g, SC_BOOL, axis, c);
		}
		t_slab_reset();
		check_bytes(g->name);
	}
	t_slab_reset();

	/* the tally of every rank's checks is itself an int32 all_reduce of 8 bytes: 2 * 8 * 3/4 = 12 sent */
	sc_group *world = groups[0].g;
	int32_t *tally = t_slab(8);
	before = sc_comm_bytes(rt);
	sc_all_reduce(rt, world, tally, tally, SC_I32, 2, SC_SUM);
	check(sc_comm_bytes(rt) - before == 12, "bytes of an all_reduce of 8 bytes over 4", "(want 12)");
	int32_t h[2] = {checks, failures};
	sc_from_host(rt, tally, h, 8);
	sc_all_reduce(rt, world, tally, tally, SC_I32, 2, SC_SUM);
	sc_to_host(rt, h, tally, 8);
	if (me == 0)
		printf("mpi_collectives: %d checks on %d ranks, %d failed\n", h[0], sc_size(rt), h[1]);
	sc_finalize(rt);
	return h[1] ? 1 : 0;
}
