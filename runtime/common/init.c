/* init.c: the deterministic initializers (docs/output.md, Initializers).
 *
 * Element i (row-major index into the global tensor) of the tensor named name
 * is a function of (name, seed, i) alone, so a rank computes only its own
 * slice and a serial run, a parallel run and an independent checker agree.
 * Values are computed in double on the host, rounded once to the element
 * type (float16 and bfloat16 to nearest even, from the double), then copied
 * to the slab (device memory on cuda). */
#include "rt_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

uint64_t sc_fnv1a64(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

uint64_t sc_splitmix64(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

uint64_t sc_dropout_key(const char *name, uint64_t seed, int64_t step)
{
	return sc_splitmix64((sc_fnv1a64(name) ^ (seed * 0x9e3779b97f4a7c15ull)) + (uint64_t)step);
}

double sc_init_u(uint64_t key, uint64_t j)
{
	return (double)(sc_splitmix64(key + j) >> 40) * 0x1p-24;
}

void sc_store_as(void *dst, sc_dtype dt, int64_t i, double v)
{
	switch (dt) {
	case SC_F32:
		((float *)dst)[i] = (float)v;
		return;
	case SC_I32:
		v = nearbyint(v);
		((int32_t *)dst)[i] = v >= 2147483647.0 ? INT32_MAX : v <= -2147483648.0 ? INT32_MIN : (int32_t)v;
		return;
	case SC_I64:
		v = nearbyint(v);
		((int64_t *)dst)[i] = v >= 9223372036854775807.0 ? INT64_MAX : v <= -9223372036854775808.0 ? INT64_MIN
		                                                                                            : (int64_t)v;
		return;
	case SC_BOOL:
		((uint8_t *)dst)[i] = v != 0;
		return;
	case SC_F16:
		((uint16_t *)dst)[i] = sc_f16_from_double(v);
		return;
	case SC_BF16:
		((uint16_t *)dst)[i] = sc_bf16_from_double(v);
		return;
	}
	SC_DIE("bad dtype %d", (int)dt);
}

void sc_init_host(void *dst, sc_dtype dt, sc_init_kind kind, const char *name, uint64_t seed, const int64_t *gdims,
                  int ndim, const int64_t *start, const int64_t *ldims, double p0, double p1)
{
	uint64_t key = sc_fnv1a64(name) ^ (seed * 0x9e3779b97f4a7c15ull);
	int64_t real[SC_MAX_DIMS];
	sc_piece_real(name, gdims, ndim, start, ldims, real);
	int64_t gstride[SC_MAX_DIMS], idx[SC_MAX_DIMS] = {0}, n = sc_numel(real, ndim), s = 1;
	for (int d = ndim - 1; d >= 0; d--) {
		gstride[d] = s;
		s *= gdims[d];
	}
	for (int64_t l = 0; l < n; l++) {
		uint64_t i = 0;
		for (int d = 0; d < ndim; d++)
			i += (uint64_t)((start[d] + idx[d]) * gstride[d]);
		double v;
		switch (kind) {
		case SC_INIT_UNIFORM:
			v = p0 + (p1 - p0) * sc_init_u(key, i);
			break;
		case SC_INIT_NORMAL:
			v = p0 * sqrt(-2.0 * log(1.0 - sc_init_u(key, 2 * i))) *
			    cos(2.0 * 3.14159265358979323846 * sc_init_u(key, 2 * i + 1));
			break;
		case SC_INIT_RANDINT:
			v = p0 + floor(sc_init_u(key, i) * (p1 - p0));
			break;
		default:
			SC_DIE("bad initializer %d", (int)kind);
		}
		sc_store_as(dst, dt, l, v);
		for (int d = ndim - 1; d >= 0 && ++idx[d] == real[d]; d--)
			idx[d] = 0;
	}
	sc_piece_pad(dst, sc_dtype_size(dt), ndim, real, ldims);
}

static void init_slice(sc_rt *rt, void *dst, sc_dtype dt, sc_init_kind kind, const char *name, uint64_t seed,
                       const int64_t *gdims, int ndim, const int64_t *start, const int64_t *ldims, double p0,
                       double p1)
{
	if (!dst)   /* this rank holds none of it (another pipeline stage's parameter) */
		return;
	size_t bytes = (size_t)sc_numel(ldims, ndim) * sc_dtype_size(dt);
	void *tmp = malloc(bytes ? bytes : 1);
	if (!tmp)
		SC_DIE("out of memory");
	sc_init_host(tmp, dt, kind, name, seed, gdims, ndim, start, ldims, p0, p1);
	sc_from_host(rt, dst, tmp, bytes);
	free(tmp);
}

void sc_init_uniform(sc_rt *rt, void *dst, sc_dtype dt, const char *name, uint64_t seed, const int64_t *gdims,
                     int ndim, const int64_t *start, const int64_t *ldims, double lo, double hi)
{
	init_slice(rt, dst, dt, SC_INIT_UNIFORM, name, seed, gdims, ndim, start, ldims, lo, hi);
}

void sc_init_normal(sc_rt *rt, void *dst, sc_dtype dt, const char *name, uint64_t seed, const int64_t *gdims,
                    int ndim, const int64_t *start, const int64_t *ldims, double std)
{
	init_slice(rt, dst, dt, SC_INIT_NORMAL, name, seed, gdims, ndim, start, ldims, std, 0);
}

void sc_init_randint(sc_rt *rt, void *dst, sc_dtype dt, const char *name, uint64_t seed, const int64_t *gdims,
                     int ndim, const int64_t *start, const int64_t *ldims, int64_t lo, int64_t hi)
{
	if (hi <= lo)
		SC_DIE("randint(%lld, %lld) of '%s': empty range", (long long)lo, (long long)hi, name);
	init_slice(rt, dst, dt, SC_INIT_RANDINT, name, seed, gdims, ndim, start, ldims, (double)lo, (double)hi);
}
