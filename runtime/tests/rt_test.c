/* rt_test.c: helpers of rt_test.h. */
#include "rt_test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

double t_rand(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return (double)(z >> 11) * 0x1p-53;
}

void t_fill(float *x, int64_t n, uint64_t *state, float lo, float hi)
{
	for (int64_t i = 0; i < n; i++)
		x[i] = lo + (hi - lo) * (float)t_rand(state);
}

int64_t t_numel(const int64_t *dims, int nd)
{
	int64_t n = 1;
	for (int i = 0; i < nd; i++)
		n *= dims[i];
	return n;
}

void t_unravel(int64_t i, const int64_t *dims, int nd, int64_t *idx)
{
	for (int d = nd - 1; d >= 0; d--) {
		idx[d] = i % dims[d];
		i /= dims[d];
	}
}

int64_t t_ravel(const int64_t *idx, const int64_t *dims, int nd)
{
	int64_t i = 0;
	for (int d = 0; d < nd; d++)
		i = i * dims[d] + idx[d];
	return i;
}

const t_bcast_case t_bcast_cases[] = {
	{3, 3, 3, {3, 5, 7}, {3, 5, 7}, {3, 5, 7}, "same shapes"},
	{2, 0, 2, {6, 9}, {0}, {6, 9}, "b a scalar"},
	{1, 2, 2, {1}, {6, 9}, {6, 9}, "a of shape (1,)"},
	{2, 1, 2, {6, 9}, {9}, {6, 9}, "b (c,) along rows"},
	{2, 2, 2, {6, 9}, {1, 9}, {6, 9}, "b (1, c)"},
	{2, 2, 2, {6, 9}, {6, 1}, {6, 9}, "b (rows, 1)"},
	{2, 2, 2, {6, 1}, {6, 9}, {6, 9}, "a (rows, 1)"},
	{3, 3, 3, {4, 3, 5}, {4, 1, 5}, {4, 3, 5}, "b repeated along the middle dim"},
	{2, 2, 2, {4, 1}, {1, 5}, {4, 5}, "both broadcast: an outer sum"},
	{3, 1, 3, {3, 1, 5}, {5}, {3, 1, 5}, "y with a dim of 1"},
	{1, 1, 2, {1}, {1}, {2, 3}, "y larger than both"},
	{4, 4, 4, {2, 1, 3, 1}, {1, 4, 1, 5}, {2, 4, 3, 5}, "alternating"},
	{4, 2, 4, {4, 8, 16, 16}, {16, 1}, {4, 8, 16, 16}, "a column of a batch"},
};
const int t_n_bcast_cases = sizeof t_bcast_cases / sizeof t_bcast_cases[0];

int64_t t_bcast_index(const int64_t *yi, int yn, const int64_t *dims, int nd)
{
	int64_t idx[8];
	for (int d = 0; d < nd; d++)
		idx[d] = dims[d] == 1 ? 0 : yi[yn - nd + d];
	return t_ravel(idx, dims, nd);
}

bool t_close(const char *what, const float *got, const float *want, int64_t n, double atol, double rtol)
{
	int64_t bad = -1, nbad = 0;
	double worst = 0;
	for (int64_t i = 0; i < n; i++) {
		if (isnan(got[i]) && isnan(want[i]))   /* both "no number" (log of a negative): the sign bit is the libm's */
			continue;
		double d = fabs((double)got[i] - want[i]);
		if (!(d <= atol + rtol * fabs((double)want[i]))) {
			if (bad < 0)
				bad = i;
			nbad++;
		}
		if (d > worst || d != d)
			worst = d;
	}
	if (bad >= 0)
		fprintf(stderr, "%s: %lld of %lld differ; first at %lld: got %.9g, want %.9g; largest difference %.3g\n",
		        what, (long long)nbad, (long long)n, (long long)bad, got[bad], want[bad], worst);
	return bad < 0;
}

static int failures;

void t_expect(bool ok, int rank, const char *what)
{
	if (!ok) {
		failures++;
		fprintf(stderr, "rank %d: FAILED: %s\n", rank, what);
	}
}

int t_failures(void)
{
	return failures;
}

static char *t_slab_base;
static size_t t_slab_size, t_slab_used;
static const char *t_slab_who;

void t_slab_init(void *slab, size_t size, const char *who)
{
	t_slab_base = slab;
	t_slab_size = size;
	t_slab_used = 0;
	t_slab_who = who;
}

void *t_slab(size_t bytes)
{
	void *p = t_slab_base + t_slab_used;
	t_slab_used += (bytes + 255) / 256 * 256;
	if (t_slab_used > t_slab_size) {
		fprintf(stderr, "%s: test slab too small\n", t_slab_who);
		exit(2);
	}
	return p;
}

void t_slab_reset(void)
{
	t_slab_used = 0;
}
