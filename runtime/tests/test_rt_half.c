/* test_rt_half.c: Float16 and BFloat16 rounding and widening (half.c), and
 * arithmetic on them as emitted programs do it (widen, float32 kernel, round).
 *
 * Known values were computed with numpy (/usr/bin/python3): np.float16 of
 * the double for Float16, tools/ref_eval.py's round_bf16 for BFloat16, and
 * are quoted as bits. Then exhaustive checks that need no reference: every
 * one of the 65536 bit patterns widens to the value its fields say and
 * narrows back to itself, and every midpoint between neighbours rounds to
 * the even one (a hair above or below it, to the nearer one). */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "cpu_kernels.h"
#include "rt_internal.h"

typedef struct {
	double v;
	uint16_t bits;
} Known;

static uint32_t float_bits(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	return u;
}

Test(f16, known_values_from_numpy)
{
	const Known k[] = {
		{1.0 / 3, 0x3555},
		{65504, 0x7bff},                 /* the largest finite */
		{65519, 0x7bff},
		{65520, 0x7c00},                 /* the midpoint to 2^16 rounds to even: inf */
		{-65520, 0xfc00},
		{1e10, 0x7c00},
		{INFINITY, 0x7c00},
		{6e-8, 0x0001},                  /* the least subnormal, 2^-24 */
		{0x1p-25, 0x0000},               /* half of it: ties to even, 0 */
		{0x1.8p-24, 0x0002},             /* 1.5 units: ties up to 2 */
		{0x1.4p-23, 0x0002},             /* 2.5 units: ties down to 2 */
		{0x1p-14 - 0x1p-25, 0x0400},     /* between the largest subnormal and 2^-14: carries into the exponent */
		{0x1p-14, 0x0400},
		{0.1, 0x2e66},
		{1 + 0x1p-11, 0x3c00},           /* a tie at 1: to 1 */
		{1 + 0x3p-11, 0x3c02},           /* a tie at 1 + 2^-10: to 1 + 2^-9 */
		{-0.0, 0x8000},
		{0.0, 0x0000},
	};
	for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
		cr_expect_eq(sc_f16_from_double(k[i].v), k[i].bits, "f16(%a) = %#x, numpy says %#x", k[i].v,
		             sc_f16_from_double(k[i].v), k[i].bits);
	cr_expect_eq(sc_f16_from_double(NAN), 0x7e00);
	cr_expect_eq(sc_f16_from_double(-NAN), 0xfe00);
	cr_expect(isnan(sc_f16_to_float(0x7e00)));
	cr_expect_eq(float_bits(sc_f16_to_float(0x7c01)), 0x7fc02000u, "a signalling NaN is quieted, payload kept");
	cr_expect_eq(float_bits(sc_f16_to_float(0x8000)), 0x80000000u, "-0 stays -0");
	cr_expect_eq(sc_f16_to_float(0x3555), 0.333251953125f);
	cr_expect_eq(sc_f16_to_float(0x0001), 0x1p-24f);
	cr_expect_eq(sc_f16_to_float(0xfc00), -INFINITY);
}

Test(bf16, known_values_from_ref_eval)
{
	const Known k[] = {
		{1.0 / 3, 0x3eab},
		{1 + 0x1p-8, 0x3f80},            /* a tie at 1: to 1 */
		{1 + 0x3p-8, 0x3f82},            /* a tie at 1 + 2^-7: to 1 + 2^-6 */
		{0x1.fep127, 0x7f7f},            /* the largest finite, 3.3895e38 */
		{0x1.ffp127, 0x7f80},            /* its midpoint to 2^128: inf */
		{3.4028234663852886e38, 0x7f80}, /* FLT_MAX rounds up to inf */
		{0x1p-133, 0x0001},              /* the least subnormal */
		{0x1p-134, 0x0000},              /* half of it: ties to even, 0 */
		{0x3p-134, 0x0002},
		{1e-40, 0x0001},
		{0x1p-126, 0x0080},
		{-2.5, 0xc020},
		{0.1, 0x3dcd},
		{65520, 0x4780},
		{-0.0, 0x8000},
	};
	for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
		cr_expect_eq(sc_bf16_from_double(k[i].v), k[i].bits, "bf16(%a) = %#x, ref_eval says %#x", k[i].v,
		             sc_bf16_from_double(k[i].v), k[i].bits);
	cr_expect_eq(sc_bf16_from_double(NAN), 0x7fc0);
	cr_expect_eq(sc_bf16_from_double(-NAN), 0xffc0);
	cr_expect_eq(float_bits(sc_bf16_to_float(0x7f81)), 0x7f810000u, "widening is the top half, NaN included");
	cr_expect_eq(sc_bf16_to_float(0x3eab), 0.333984375f);
}

/* the value of bits in a format of m mantissa bits and bias b, from its fields */
static double value_of(uint16_t h, int m, int bias)
{
	int e = h >> m & ((1 << (15 - m)) - 1), f = h & ((1 << m) - 1);
	double v = e == 0 ? ldexp(f, 1 - bias - m) : e == (2 * bias + 1) ? (f ? NAN : INFINITY)
	                                                               : ldexp(f + (1 << m), e - bias - m);
	return h & 0x8000 ? -v : v;
}

static void every_pattern(const char *name, uint16_t (*narrow)(double), float (*widen)(uint16_t), int m, int bias)
{
	int bad = 0;
	for (uint32_t i = 0; i < 65536; i++) {
		uint16_t h = (uint16_t)i;
		double want = value_of(h, m, bias);
		float w = widen(h);
		if (isnan(want)) {
			bad += !isnan(w) || !isnan(value_of(narrow(w), m, bias));
			continue;
		}
		if (w != want || !signbit(w) != !signbit(want) || narrow(w) != h) {
			if (bad++ < 5)
				cr_log_error("%s %#06x: widened %a (want %a), narrowed back %#06x", name, h, (double)w, want,
				             narrow(w));
		}
	}
	cr_assert_eq(bad, 0, "%s: %d bit patterns do not round trip", name, bad);
}

Test(f16, every_pattern_widens_and_narrows_back)
{
	every_pattern("f16", sc_f16_from_double, sc_f16_to_float, 10, 15);
}

Test(bf16, every_pattern_widens_and_narrows_back)
{
	every_pattern("bf16", sc_bf16_from_double, sc_bf16_to_float, 7, 127);
}

/* Between each positive finite h and h + 1: the midpoint (exact in double)
 * goes to whichever is even, a hair off it to the nearer; the same
 * mirrored for negatives. */
static void every_midpoint(const char *name, uint16_t (*narrow)(double), int m, int bias)
{
	uint16_t top = (uint16_t)((2 * bias + 1) << m);   /* inf: the last step rounds to it */
	int bad = 0;
	for (uint16_t h = 0; h < top; h++) {
		double lo = value_of(h, m, bias), hi = h + 1 == top ? ldexp(1, bias + 1) : value_of(h + 1, m, bias);
		double mid = (lo + hi) / 2, eps = (hi - lo) / 1024;
		uint16_t even = h % 2 == 0 ? h : (uint16_t)(h + 1);
		const struct {
			double v;
			uint16_t want;
		} c[] = {{mid, even}, {mid - eps, h}, {mid + eps, (uint16_t)(h + 1)}};
		for (int k = 0; k < 3; k++)
			for (int s = 0; s < 2; s++) {
				uint16_t got = narrow(s ? -c[k].v : c[k].v), want = (uint16_t)(c[k].want | (s ? 0x8000 : 0));
				if (got != want && bad++ < 5)
					cr_log_error("%s(%a) = %#06x, want %#06x", name, s ? -c[k].v : c[k].v, got, want);
			}
	}
	cr_assert_eq(bad, 0, "%s: %d midpoints misrounded", name, bad);
}

/* The bit-level float path equals the double path on float32 patterns: a
 * stride over all 2^32 (every exponent, sign and low-bit pattern), every tie
 * and its neighbours, the largest floats, infinities and NaNs. */
Test(bf16, from_float_equals_from_double)
{
	for (uint64_t u = 0; u < (1ull << 32); u += 65521) {
		float f;
		uint32_t w = (uint32_t)u;
		memcpy(&f, &w, sizeof f);
		if (isnan(f)) {
			cr_assert_eq(sc_bf16_from_float(f) & 0x7fff, 0x7fc0, "NaN %08x", w);
			continue;
		}
		cr_assert_eq(sc_bf16_from_float(f), sc_bf16_from_double(f), "%08x", w);
	}
	for (uint32_t h = 0; h < 0x10000; h++)
		for (uint32_t low = 0x7ffe; low <= 0x8002; low++) {
			uint32_t w = h << 16 | low;
			float f;
			memcpy(&f, &w, sizeof f);
			if (!isnan(f))
				cr_assert_eq(sc_bf16_from_float(f), sc_bf16_from_double(f), "%08x", w);
		}
	float edge[] = {INFINITY, -INFINITY, 3.4028235e38f, -3.4028235e38f, 0.0f, -0.0f, 1e-45f};
	for (size_t i = 0; i < sizeof edge / sizeof *edge; i++)
		cr_assert_eq(sc_bf16_from_float(edge[i]), sc_bf16_from_double(edge[i]), "%g", (double)edge[i]);
	cr_assert_eq(sc_bf16_from_float(3.4028235e38f), 0x7f80);   /* past the largest bfloat16: inf */
	cr_assert_eq(sc_bf16_from_float(-NAN), 0xffc0);
}

Test(f16, every_midpoint_ties_to_even)
{
	every_midpoint("f16", sc_f16_from_double, 10, 15);
}

Test(bf16, every_midpoint_ties_to_even)
{
	every_midpoint("bf16", sc_bf16_from_double, 7, 127);
}

Test(half, bulk_widen_and_narrow)
{
	const float x[4] = {1.0f / 3, 65520, -0x1p-24f, 2.5f};
	uint16_t h[4], b[4];
	float back[4];
	sc_host_narrow(x, h, SC_F16, 4);
	cr_assert(h[0] == 0x3555 && h[1] == 0x7c00 && h[2] == 0x8001 && h[3] == 0x4100);
	sc_host_narrow(x, b, SC_BF16, 4);
	cr_assert(b[0] == 0x3eab && b[1] == 0x4780 && b[3] == 0x4020);
	sc_host_widen(h, SC_F16, back, 4);
	cr_assert(back[0] == 0.333251953125f && back[1] == INFINITY && back[2] == -0x1p-24f && back[3] == 2.5f);
	cr_assert(sc_is_half(SC_F16) && sc_is_half(SC_BF16) && !sc_is_half(SC_F32));
	cr_assert(sc_dtype_size(SC_F16) == 2 && sc_dtype_size(SC_BF16) == 2);
	cr_assert_str_eq(sc_dtype_name(SC_F16), "float16");
	cr_assert_str_eq(sc_dtype_name(SC_BF16), "bfloat16");
}

/* sc_cpu_round leaves each Float32 value as a cast to the half type and
 * back would: every value a hair either side of each midpoint of a range of
 * neighbours, infinities, NaN, beyond the chunk it works in. */
Test(half, round_in_place_is_a_cast_there_and_back)
{
	enum { N = 5000 };
	static float x[N], want[N];
	static uint16_t h[N];
	for (sc_dtype dt = SC_F16; dt <= SC_BF16; dt++) {
		for (int i = 0; i < N; i++)
			x[i] = (float)(sin(0.731 * i) * (i % 7 == 0 ? 70000.0 : 3.0));
		x[0] = INFINITY, x[1] = -INFINITY, x[2] = NAN, x[3] = 1.0f + 0x1p-11f, x[4] = 1.0f + 0x1p-8f;
		sc_cpu_cast(x, SC_F32, h, dt, N);
		sc_cpu_cast(h, dt, want, SC_F32, N);
		sc_cpu_round(x, dt, N);
		cr_assert(isnan(x[2]));
		x[2] = want[2] = 0;
		cr_assert_arr_eq(x, want, sizeof x, "%s", sc_dtype_name(dt));
	}
	cr_assert_eq(x[3], 1.0f);   /* bfloat16, the last: 1 + 2^-11 is below the midpoint */
	cr_assert_eq(x[4], 1.0f);   /* 1 + 2^-8 is the midpoint: to even, 1 */
}

/* ---- arithmetic on half values: the emitted programs' pattern ----
 * An operator on Float16/BFloat16 operands is widen (sc_cast), the float32
 * kernel, narrow (sc_cast) once. Against the exact (double) result rounded
 * once: equal, or one ulp off where float32's own rounding of the result (a
 * second rounding, 2^-24 relative) or of a sum crosses a half's midpoint. */

static int64_t half_ulps(uint16_t a, uint16_t b)
{
	/* both finite, same sign here: neighbours differ by one in their bits */
	return a > b ? a - b : b - a;
}

static void half_pattern(sc_dtype dt, uint16_t (*from_double)(double))
{
	enum { M = 4, K = 64, N = 3 };
	uint16_t a[M * K], b[K * N], c[M * N], s[M * N];
	float aw[M * K], bw[K * N], cw[M * N], sw[M * N];
	for (int i = 0; i < M * K; i++)
		a[i] = from_double(sin(0.37 * i) * 1.5);
	for (int i = 0; i < K * N; i++)
		b[i] = from_double(cos(0.11 * i + 0.5));
	sc_cpu_cast(a, dt, aw, SC_F32, M * K);
	sc_cpu_cast(b, dt, bw, SC_F32, K * N);
	sc_cpu_matmul(aw, bw, cw, M, N, K, 0, 0);
	sc_cpu_cast(cw, SC_F32, c, dt, M * N);
	sc_cpu_softmax(cw, sw, (const int64_t[]){M, N}, 2, -1, 0);
	sc_cpu_cast(sw, SC_F32, s, dt, M * N);
	int exact = 0;
	for (int i = 0; i < M; i++) {
		double row[N], max = -INFINITY, sum = 0;
		for (int j = 0; j < N; j++) {
			double acc = 0;   /* from the half operands, exactly */
			for (int p = 0; p < K; p++)
				acc += (double)aw[i * K + p] * bw[p * N + j];
			uint16_t want = from_double(acc);
			cr_expect(half_ulps(c[i * N + j], want) <= 1 && (c[i * N + j] ^ want) < 0x8000,
			          "%s matmul (%d, %d): 0x%04x, want 0x%04x", sc_dtype_name(dt), i, j, c[i * N + j], want);
			exact += c[i * N + j] == want;
			row[j] = cw[i * N + j];   /* softmax of the float32 product, as the kernel saw it */
			max = row[j] > max ? row[j] : max;
		}
		for (int j = 0; j < N; j++)
			sum += exp(row[j] - max);
		for (int j = 0; j < N; j++) {
			uint16_t want = from_double(exp(row[j] - max) / sum);
			cr_expect(half_ulps(s[i * N + j], want) <= 1, "%s softmax (%d, %d): 0x%04x, want 0x%04x",
			          sc_dtype_name(dt), i, j, s[i * N + j], want);
			exact += s[i * N + j] == want;
		}
	}
	cr_expect(exact >= 2 * M * N - 2, "%s: only %d of %d results are the exact value rounded once",
	          sc_dtype_name(dt), exact, 2 * M * N);
}

Test(half, f16_arithmetic_is_float32_rounded_once)
{
	half_pattern(SC_F16, sc_f16_from_double);
}

Test(half, bf16_arithmetic_is_float32_rounded_once)
{
	half_pattern(SC_BF16, sc_bf16_from_double);
}

/* sc_matmul_half on the cpu backend is the Float32 product of the widened
 * operands, bit for bit, for every transpose, and written as the half type
 * that product cast (rounded once) (the cuda one is GemmEx on tensor cores:
 * cuda_twins compares it with this). */
Test(half, matmul_half_is_the_widened_float32_product)
{
	enum { M = 5, K = 37, N = 6 };
	uint16_t a[M * K], b[K * N];
	float aw[M * K], bw[K * N], want[M * N], got[M * N];
	uint16_t want_h[M * N], got_h[M * N];
	for (sc_dtype dt = SC_F16; dt <= SC_BF16; dt++)
		for (int ta = 0; ta < 2; ta++)
			for (int tb = 0; tb < 2; tb++) {
				for (int i = 0; i < M * K; i++)
					aw[i] = (float)(sin(0.29 * i + ta) * 2);
				for (int i = 0; i < K * N; i++)
					bw[i] = (float)cos(0.13 * i + tb);
				sc_cpu_cast(aw, SC_F32, a, dt, M * K);
				sc_cpu_cast(bw, SC_F32, b, dt, K * N);
				sc_cpu_cast(a, dt, aw, SC_F32, M * K);
				sc_cpu_cast(b, dt, bw, SC_F32, K * N);
				sc_cpu_matmul(aw, bw, want, M, N, K, ta, tb);
				sc_matmul_half(NULL, dt, a, b, got, SC_F32, M, N, K, ta, tb);
				cr_expect(memcmp(got, want, sizeof want) == 0, "%s %c%c: the product differs",
				          sc_dtype_name(dt), ta ? 'T' : 'N', tb ? 'T' : 'N');
				sc_cpu_cast(want, SC_F32, want_h, dt, M * N);
				sc_matmul_half(NULL, dt, a, b, got_h, dt, M, N, K, ta, tb);
				cr_expect(memcmp(got_h, want_h, sizeof want_h) == 0, "%s %c%c: the product rounded differs",
				          sc_dtype_name(dt), ta ? 'T' : 'N', tb ? 'T' : 'N');
			}
}

/* sc_batch_matmul_half likewise, with a batch dim broadcast. */
Test(half, batch_matmul_half_is_the_widened_float32_product)
{
	enum { B = 3, M = 4, K = 9, N = 5 };
	uint16_t a[B * M * K], b[K * N];
	float aw[B * M * K], bw[K * N], want[B * M * N], got[B * M * N];
	uint16_t want_h[B * M * N], got_h[B * M * N];
	const int64_t ab[] = {B}, bb[] = {1}, cb[] = {B};
	for (sc_dtype dt = SC_F16; dt <= SC_BF16; dt++)
		for (int ta = 0; ta < 2; ta++)
			for (int tb = 0; tb < 2; tb++) {
				for (int i = 0; i < B * M * K; i++)
					aw[i] = (float)(sin(0.31 * i + tb) * 3);
				for (int i = 0; i < K * N; i++)
					bw[i] = (float)cos(0.17 * i + ta);
				sc_cpu_cast(aw, SC_F32, a, dt, B * M * K);
				sc_cpu_cast(bw, SC_F32, b, dt, K * N);
				sc_cpu_cast(a, dt, aw, SC_F32, B * M * K);
				sc_cpu_cast(b, dt, bw, SC_F32, K * N);
				sc_cpu_batch_matmul(aw, ab, 1, bw, bb, 1, want, cb, 1, M, N, K, ta, tb);
				sc_batch_matmul_half(NULL, dt, a, ab, 1, b, bb, 1, got, SC_F32, cb, 1, M, N, K, ta, tb);
				cr_expect(memcmp(got, want, sizeof want) == 0, "%s %c%c: the product differs",
				          sc_dtype_name(dt), ta ? 'T' : 'N', tb ? 'T' : 'N');
				sc_cpu_cast(want, SC_F32, want_h, dt, B * M * N);
				sc_batch_matmul_half(NULL, dt, a, ab, 1, b, bb, 1, got_h, dt, cb, 1, M, N, K, ta, tb);
				cr_expect(memcmp(got_h, want_h, sizeof want_h) == 0, "%s %c%c: the product rounded differs",
				          sc_dtype_name(dt), ta ? 'T' : 'N', tb ? 'T' : 'N');
			}
}

/* sc_batch_matmul_half_strided writing a half c laid out with gaps (rows
 * LDC apart, batches CB apart): the Float32 product rounded once where the
 * product lands, every other element as it was. */
Test(half, batch_matmul_half_strided_rounds_into_its_strides)
{
	enum { B = 2, M = 3, K = 7, N = 4, LDC = 6, CB = 20, CN = CB * B };
	uint16_t a[B * M * K], b[B * K * N], got_h[CN], want_h[CN];
	float aw[B * M * K], bw[B * K * N], got[CN], want[B * M * N];
	const int64_t bd[] = {B}, ast[] = {M * K, K}, bst[] = {K * N, N}, cst[] = {CB, LDC}, dst[] = {M * N, N};
	for (sc_dtype dt = SC_F16; dt <= SC_BF16; dt++) {
		for (int i = 0; i < B * M * K; i++)
			aw[i] = (float)(sin(0.37 * i) * 2);
		for (int i = 0; i < B * K * N; i++)
			bw[i] = (float)cos(0.11 * i);
		sc_cpu_cast(aw, SC_F32, a, dt, B * M * K);
		sc_cpu_cast(bw, SC_F32, b, dt, B * K * N);
		sc_cpu_cast(a, dt, aw, SC_F32, B * M * K);
		sc_cpu_cast(b, dt, bw, SC_F32, B * K * N);
		sc_cpu_batch_matmul_strided(aw, ast, bw, bst, want, dst, bd, 1, M, N, K, 0, 0);
		for (int i = 0; i < CN; i++)
			got_h[i] = want_h[i] = (uint16_t)(0x1234 + i);
		for (int bi = 0; bi < B; bi++)
			for (int i = 0; i < M; i++)
				sc_cpu_cast(want + (bi * M + i) * N, SC_F32, want_h + bi * CB + i * LDC, dt, N);
		sc_batch_matmul_half_strided(NULL, dt, a, ast, b, bst, got_h, dt, cst, bd, 1, M, N, K, 0, 0);
		cr_expect(memcmp(got_h, want_h, sizeof want_h) == 0, "%s: the strided product rounded differs",
		          sc_dtype_name(dt));
		sc_batch_matmul_half_strided(NULL, dt, a, ast, b, bst, got, SC_F32, cst, bd, 1, M, N, K, 0, 0);
		for (int bi = 0; bi < B; bi++)
			for (int i = 0; i < M; i++)
				cr_expect(memcmp(got + bi * CB + i * LDC, want + (bi * M + i) * N, N * sizeof(float)) == 0,
				          "%s: the strided Float32 product differs (batch %d row %d)", sc_dtype_name(dt), bi, i);
	}
}
