/* half.c: Float16 and BFloat16 on the host: rounding to them and widening
 * from them.
 *
 * Both are stored as the 16 bits of their format in a uint16_t: IEEE
 * binary16 (1 sign, 5 exponent, 10 mantissa bits) and bfloat16 (1, 8, 7: the
 * top half of a float32). Narrowing works from a double, which holds every
 * float32 and every integer below 2^53 exactly, so float32 -> 2-byte float
 * rounds once, as numpy's float16 and tools/ref_eval.py's round_bf16 do. The
 * cuda backend's kernels use cuda_fp16.h / cuda_bf16.h and the same NaN
 * rule, and cuda_twins.c checks them against these. Assumes the default
 * rounding mode (to nearest), which the runtime never changes. */
#include "rt_internal.h"

#include <math.h>
#include <string.h>

/* v rounded to a binary format of m mantissa bits and exponent bias `bias`
 * (f16: 10, 15; bf16: 7, 127), as its 16 bits. */
static uint16_t narrow(double v, int m, int bias)
{
	int sign = signbit(v) ? 0x8000 : 0, inf = (2 * bias + 1) << m;
	if (isnan(v))
		return (uint16_t)(sign | inf | 1 << (m - 1));   /* the quiet NaN */
	double a = fabs(v);
	if (a == 0)
		return (uint16_t)sign;
	if (a >= ldexp(1.0, bias + 1))                      /* inf, or beyond the largest exponent */
		return (uint16_t)(sign | inf);
	int e;
	frexp(a, &e);                                       /* a = f 2^e, f in [0.5, 1): a's exponent is e - 1 */
	int exp = e - 1 < 1 - bias ? 1 - bias : e - 1;      /* subnormals take the least exponent */
	int q = (int)nearbyint(ldexp(a, m - exp));          /* the significand in units of its last place */
	/* q in [2^m, 2^(m+1)] for normals, [0, 2^m] for subnormals; a carry out of
	 * q lands in the exponent field, and past the largest finite value, on inf */
	int bits = ((exp + bias - 1) << m) + q;
	return (uint16_t)(sign | (bits < inf ? bits : inf));
}

uint16_t sc_f16_from_double(double v)
{
	return narrow(v, 10, 15);
}

uint16_t sc_bf16_from_double(double v)
{
	return narrow(v, 7, 127);
}

/* A float32 to bfloat16 by its bits: bfloat16 is float32's upper half, so
 * rounding to nearest even adds 0x7fff plus the kept half's lowest bit and
 * drops the lower half (a carry out of the largest finite value lands on
 * inf). Equal to sc_bf16_from_double on every float, a few instructions
 * instead of frexp and ldexp: casts between Float32 and BFloat16 run on
 * every half operand in mixed precision. */
uint16_t sc_bf16_from_float(float v)
{
	uint32_t u;
	memcpy(&u, &v, sizeof u);
	if ((u & 0x7fffffffu) > 0x7f800000u)                 /* NaN: the quiet NaN, as narrow() */
		return (uint16_t)((u >> 16 & 0x8000u) | 0x7fc0u);
	return (uint16_t)((u + 0x7fffu + (u >> 16 & 1u)) >> 16);
}

static float from_bits(uint32_t u)
{
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

float sc_f16_to_float(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = h >> 10 & 0x1f, m = h & 0x3ff;
	if (e == 0) {   /* zero or subnormal: m 2^-24, exact in float */
		float v = (float)m * 0x1p-24f;
		return sign ? -v : v;
	}
	if (e == 31)    /* inf, or NaN with its payload, quieted */
		return from_bits(sign | 0x7f800000u | m << 13 | (m ? 0x400000u : 0));
	return from_bits(sign | (e + 112) << 23 | m << 13);   /* rebias 15 -> 127 */
}

float sc_bf16_to_float(uint16_t h)
{
	return from_bits((uint32_t)h << 16);
}

bool sc_is_half(sc_dtype dt)
{
	return dt == SC_F16 || dt == SC_BF16;
}

void sc_check_half_product(const char *what, sc_dtype dt, sc_dtype c_dt)
{
	if (!sc_is_half(dt))
		SC_DIE("%s: %s is not a half type", what, sc_dtype_name(dt));
	if (c_dt != SC_F32 && c_dt != dt)
		SC_DIE("%s: a product of %s written as %s (Float32 or %s only)", what, sc_dtype_name(dt),
		       sc_dtype_name(c_dt), sc_dtype_name(dt));
}

void sc_host_widen(const void *x, sc_dtype dt, float *y, int64_t n)
{
	const uint16_t *h = x;
	switch (dt) {
	case SC_F32:
		memmove(y, x, (size_t)n * sizeof *y);
		return;
	case SC_F16:
		for (int64_t i = 0; i < n; i++)
			y[i] = sc_f16_to_float(h[i]);
		return;
	case SC_BF16:
		for (int64_t i = 0; i < n; i++)
			y[i] = sc_bf16_to_float(h[i]);
		return;
	default:
		SC_DIE("sc_host_widen: %s is not a float type", sc_dtype_name(dt));
	}
}

void sc_host_narrow(const float *x, void *y, sc_dtype dt, int64_t n)
{
	uint16_t *h = y;
	switch (dt) {
	case SC_F32:
		memmove(y, x, (size_t)n * sizeof *x);
		return;
	case SC_F16:
		for (int64_t i = 0; i < n; i++)
			h[i] = sc_f16_from_double(x[i]);
		return;
	case SC_BF16:
		for (int64_t i = 0; i < n; i++)
			h[i] = sc_bf16_from_float(x[i]);
		return;
	default:
		SC_DIE("sc_host_narrow: %s is not a float type", sc_dtype_name(dt));
	}
}
