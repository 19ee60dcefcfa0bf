/* rt_test.c: helpers of rt_test.h. */
#include "rt_test.h"

#include <math.h>
#include <stdio.h>

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

bool t_close(const char *what, const float *got, const float *want, int64_t n, double atol, double rtol)
{
	int64_t bad = -1, nbad = 0;
	double worst = 0;
	for (int64_t i = 0; i < n; i++) {
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
