/* test_rt_kernels.c: the forward kernels and optimizers (cpu_kernels.h)
 * against values worked out by hand (or with numpy, quoted in the comments)
 * and against naive loops written here. No MPI: the kernels take no
 * runtime. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <float.h>
#include <math.h>
#include <omp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_kernels.h"
#include "rt_test.h"

#define CLOSE(got, want, n, what) cr_assert(t_close(what, got, want, n, 1e-6, 1e-5))

/* ---- matmul ---- */

/* c = op(a) op(b), naive, a and b as stored */
static void naive_mm(const float *a, const float *b, float *c, int m, int n, int k, int ta, int tb)
{
	for (int i = 0; i < m; i++)
		for (int j = 0; j < n; j++) {
			double s = 0;
			for (int p = 0; p < k; p++)
				s += (double)(ta ? a[p * m + i] : a[i * k + p]) * (tb ? b[j * k + p] : b[p * n + j]);
			c[i * n + j] = (float)s;
		}
}

Test(matmul, by_hand)
{
	const float a[6] = {1, 2, 3, 4, 5, 6};      /* (2, 3) */
	const float b[6] = {7, 8, 9, 10, 11, 12};   /* (3, 2) */
	float c[4];
	sc_cpu_matmul(a, b, c, 2, 2, 3, 0, 0);
	CLOSE(c, ((const float[]){58, 64, 139, 154}), 4, "a @ b");
	sc_cpu_matmul(a, a, c, 2, 2, 3, 0, 1);   /* a a^T */
	CLOSE(c, ((const float[]){14, 32, 32, 77}), 4, "a @ a^T");
}

Test(matmul, every_transpose)
{
	uint64_t s = 1;
	float a[5 * 7], b[7 * 3], c[5 * 3], want[5 * 3];
	t_fill(a, 35, &s, -1, 1);
	t_fill(b, 21, &s, -1, 1);
	for (int ta = 0; ta < 2; ta++)
		for (int tb = 0; tb < 2; tb++) {
			sc_cpu_matmul(a, b, c, 5, 3, 7, ta, tb);
			naive_mm(a, b, want, 5, 3, 7, ta, tb);
			cr_assert(t_close("matmul", c, want, 15, 1e-5, 1e-5), "ta %d tb %d", ta, tb);
		}
}

Test(matmul, batch_broadcast)
{
	/* a (2, 1, 2, 3), b (3, 3, 2): c (2, 3, 2, 2) */
	uint64_t s = 2;
	float a[2 * 2 * 3], b[3 * 3 * 2], c[2 * 3 * 4], want[2 * 3 * 4];
	t_fill(a, 12, &s, -1, 1);
	t_fill(b, 18, &s, -1, 1);
	sc_cpu_batch_matmul(a, (const int64_t[]){2, 1}, 2, b, (const int64_t[]){3}, 1, c, (const int64_t[]){2, 3}, 2, 2,
	                    2, 3, 0, 0);
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 3; j++)
			naive_mm(a + i * 6, b + j * 6, want + (i * 3 + j) * 4, 2, 2, 3, 0, 0);
	CLOSE(c, want, 24, "batch_matmul");
	/* transposed operands, equal batches */
	sc_cpu_batch_matmul(a, (const int64_t[]){2}, 1, b, (const int64_t[]){2}, 1, c, (const int64_t[]){2}, 1, 3, 3, 2,
	                    1, 1);
	for (int i = 0; i < 2; i++)
		naive_mm(a + i * 6, b + i * 6, want + i * 9, 3, 3, 2, 1, 1);
	CLOSE(c, want, 18, "batch_matmul transposed");
}

/* Attention's layout: q (B, S, H, D) read as (B, H, S, D) through strides,
 * the product written back as (B, S, H, ...) through strides, equals
 * Transpose, batched product, Transpose, bit for bit, for every pair of
 * transpose flags; one thread or many. */
Test(matmul, strided_views_are_transposes)
{
	enum { B = 3, S = 5, H = 4, D = 7 };
	uint64_t s = 3;
	static float q[B * S * H * D], k[B * S * H * D], qt[B * H * S * D], kt[B * H * S * D];
	static float c[B * H * S * S], want[B * H * S * S], o[B * S * H * D], ot[B * H * S * D], owant[B * S * H * D];
	t_fill(q, B * S * H * D, &s, -1, 1);
	t_fill(k, B * S * H * D, &s, -1, 1);
	const int64_t dims[4] = {B, S, H, D};
	const int perm[4] = {0, 2, 1, 3};
	sc_cpu_transpose(SC_F32, q, qt, dims, 4, perm);
	sc_cpu_transpose(SC_F32, k, kt, dims, 4, perm);
	const int64_t view[3] = {S * H * D, D, H * D};   /* (B, H) batches, rows S apart by H D */
	for (int threads = 1; threads <= 2; threads++) {
		omp_set_num_threads(threads);
		/* c = q k^T as (B, H, S, S), both operands views */
		sc_cpu_batch_matmul(qt, (const int64_t[]){B, H}, 2, kt, (const int64_t[]){B, H}, 2, want,
		                    (const int64_t[]){B, H}, 2, S, S, D, 0, 1);
		sc_cpu_batch_matmul_strided(q, view, k, view, c, (const int64_t[]){H * S * S, S * S, S},
		                            (const int64_t[]){B, H}, 2, S, S, D, 0, 1);
		cr_assert(!memcmp(c, want, sizeof c), "q k^T through strides, %d threads", threads);
		/* o = c^T q (B, H, S, D), q a view, o written as (B, S, H, D) */
		sc_cpu_batch_matmul(c, (const int64_t[]){B, H}, 2, qt, (const int64_t[]){B, H}, 2, ot,
		                    (const int64_t[]){B, H}, 2, S, D, S, 1, 0);
		sc_cpu_transpose(SC_F32, ot, owant, (const int64_t[]){B, H, S, D}, 4, perm);
		sc_cpu_batch_matmul_strided(c, (const int64_t[]){H * S * S, S * S, S}, q, view, o, view,
		                            (const int64_t[]){B, H}, 2, S, D, S, 1, 0);
		cr_assert(!memcmp(o, owant, sizeof o), "written through strides, %d threads", threads);
	}
	omp_set_num_threads(omp_get_num_procs());
}

/* ---- elementwise ---- */

Test(binary, broadcast_by_hand)
{
	const float a[6] = {1, 2, 3, 4, 5, 6};   /* (2, 3) */
	const float b[3] = {10, 20, 30};         /* (3,) */
	const float col[2] = {-1, 2};            /* (2, 1) */
	float y[6];
	const int64_t ad[2] = {2, 3}, bd[1] = {3}, cd[2] = {2, 1};
	sc_cpu_binary(SC_ADD, a, ad, 2, b, bd, 1, y, ad, 2);
	CLOSE(y, ((const float[]){11, 22, 33, 14, 25, 36}), 6, "add");
	sc_cpu_binary(SC_SUB, b, bd, 1, a, ad, 2, y, ad, 2);
	CLOSE(y, ((const float[]){9, 18, 27, 6, 15, 24}), 6, "sub");
	sc_cpu_binary(SC_MUL, a, ad, 2, col, cd, 2, y, ad, 2);
	CLOSE(y, ((const float[]){-1, -2, -3, 8, 10, 12}), 6, "mul");
	sc_cpu_binary(SC_DIV, a, ad, 2, col, cd, 2, y, ad, 2);
	CLOSE(y, ((const float[]){-1, -2, -3, 2, 2.5f, 3}), 6, "div");
	sc_cpu_binary(SC_MAXIMUM, a, ad, 2, (const float[]){3.5f}, NULL, 0, y, ad, 2);
	CLOSE(y, ((const float[]){3.5f, 3.5f, 3.5f, 4, 5, 6}), 6, "maximum with a scalar");
	sc_cpu_binary(SC_MINIMUM, a, ad, 2, (const float[]){3.5f}, NULL, 0, y, ad, 2);
	CLOSE(y, ((const float[]){1, 2, 3, 3.5f, 3.5f, 3.5f}), 6, "minimum with a scalar");
	/* (2, 1) op (3,) -> (2, 3): both broadcast */
	sc_cpu_binary(SC_ADD, col, cd, 2, b, bd, 1, y, ad, 2);
	CLOSE(y, ((const float[]){9, 19, 29, 12, 22, 32}), 6, "outer add");
}

Test(binary, in_place)
{
	float a[6] = {1, 2, 3, 4, 5, 6};
	const int64_t ad[2] = {2, 3};
	sc_cpu_binary(SC_MUL, a, ad, 2, (const float[]){1, 10, 100}, (const int64_t[]){3}, 1, a, ad, 2);
	CLOSE(a, ((const float[]){1, 20, 300, 4, 50, 600}), 6, "y = a * b in place");
}

Test(binary, bad_broadcast_dies, .signal = SIGABRT, .init = cr_redirect_stderr)
{
	float y[6] = {0};
	sc_cpu_binary(SC_ADD, y, (const int64_t[]){2, 3}, 2, y, (const int64_t[]){2}, 1, y, (const int64_t[]){2, 3}, 2);
}

/* a op b as docs/operators.md says it, one element at a time (the rules restated
 * with t_unravel, not the kernel's strides) */
static float naive_op(sc_binop op, float u, float v)
{
	switch (op) {
	case SC_ADD: return u + v;
	case SC_SUB: return u - v;
	case SC_MUL: return u * v;
	case SC_DIV: return u / v;
	case SC_MAXIMUM: return u >= v ? u : v;
	case SC_MINIMUM: return u <= v ? u : v;
	case SC_POW: return powf(u, v);
	case SC_FLOOR_DIV: return floorf(u / v);
	case SC_FLOOR_MOD: {   /* fmod's remainder taken to the divisor's sign (numpy's mod) */
		float r = fmodf(u, v);
		return r != 0 && (r < 0) != (v < 0) ? r + v : r;
	}
	case SC_MOD: return fmodf(u, v);
	case SC_SQUARED_DIFF: return (u - v) * (u - v);
	case SC_DIV_NO_NAN: return v == 0 ? 0 : u / v;
	case SC_ATAN2: return atan2f(u, v);
	case SC_SIGMOID_CE: return fmaxf(u, 0) - u * v + log1pf(expf(-fabsf(u)));
	case SC_XLOGY: return u == 0 ? 0 : u * logf(v);
	case SC_XDIVY: return u == 0 ? 0 : u / v;
	case SC_MUL_NO_NAN: return v == 0 ? 0 : u * v;
	case SC_TRUNCATE_DIV: return truncf(u / v);
	case SC_TRUNCATE_MOD: return fmodf(u, v);
	case SC_HYPOT: return hypotf(u, v);
	case SC_NEXT_AFTER: return nextafterf(u, v);
	case SC_ZETA: break;   /* against known values: special_functions, below */
	}
	return NAN;
}

Test(binary, every_broadcast_case_against_naive)
{
	enum { N = 4 * 8 * 16 * 16 };
	static float a[N], b[N], y[N], want[N];
	uint64_t s = 11;
	for (int k = 0; k < t_n_bcast_cases; k++) {
		const t_bcast_case *c = &t_bcast_cases[k];
		int64_t na = t_numel(c->ad, c->an), nb = t_numel(c->bd, c->bn), ny = t_numel(c->yd, c->yn);
		t_fill(a, na, &s, -2, 2);
		t_fill(b, nb, &s, 0.5f, 2);
		a[0] = b[0];   /* a tie for maximum and minimum */
		for (sc_binop op = SC_ADD; op <= SC_BINOP_LAST; op++) {
			if (op == SC_ZETA)
				continue;
			if (op == SC_POW)   /* a positive base (a negative one's power is NaN) */
				for (int64_t i = 0; i < na; i++)
					a[i] = fabsf(a[i]) + 0.1f;
			sc_cpu_binary(op, a, c->ad, c->an, b, c->bd, c->bn, y, c->yd, c->yn);
			int64_t yi[SC_MAX_DIMS];
			for (int64_t i = 0; i < ny; i++) {
				t_unravel(i, c->yd, c->yn, yi);
				want[i] = naive_op(op, a[t_bcast_index(yi, c->yn, c->ad, c->an)],
				                   b[t_bcast_index(yi, c->yn, c->bd, c->bn)]);
			}
			/* one float operation each: the same bits */
			cr_assert(t_close(c->what, y, want, ny, 0, 0), "%s, op %d", c->what, op);
		}
	}
}

/* The comparisons: one byte an element, 1 where true; a NaN compares false
 * but for NotEqual (IEEE's, numpy's, MindSpore's); a scalar either side.
 * ApproximateEqual with tolerance 1.5: |a - b| < 1.5 (1 and 2 are, 5 and 2
 * are not; NaN and infinities not). */
Test(compare, each_operator)
{
	const float a[6] = {1, 2, NAN, -0.0f, 5, -INFINITY}, b[3] = {2, 2, 2};
	const int64_t ad[2] = {2, 3}, bd[1] = {3};
	static const uint8_t want[SC_CMP_COUNT][6] = {
		[SC_CMP_EQUAL] = {0, 1, 0, 0, 0, 0},         [SC_CMP_NOT_EQUAL] = {1, 0, 1, 1, 1, 1},
		[SC_CMP_GREATER] = {0, 0, 0, 0, 1, 0},       [SC_CMP_GREATER_EQUAL] = {0, 1, 0, 0, 1, 0},
		[SC_CMP_LESS] = {1, 0, 0, 1, 0, 1},          [SC_CMP_LESS_EQUAL] = {1, 1, 0, 1, 0, 1},
		[SC_CMP_APPROXIMATE_EQUAL] = {1, 1, 0, 0, 0, 0},
	};
	uint8_t y[6];
	for (sc_cmpop op = 0; op < SC_CMP_COUNT; op++) {
		memset(y, 7, sizeof y);
		sc_cpu_compare(op, op == SC_CMP_APPROXIMATE_EQUAL ? 1.5f : 0, a, ad, 2, b, bd, 1, y, ad, 2);
		cr_assert(memcmp(y, want[op], 6) == 0, "op %d", op);
	}
	/* a number either side: -0 equals 0; 0 > x where x < 0 */
	sc_cpu_compare(SC_CMP_EQUAL, 0, a, ad, 2, (const float[]){0}, NULL, 0, y, ad, 2);
	cr_assert(memcmp(y, ((const uint8_t[]){0, 0, 0, 1, 0, 0}), 6) == 0, "equal to a scalar");
	sc_cpu_compare(SC_CMP_GREATER, 0, (const float[]){0}, NULL, 0, a, ad, 2, y, ad, 2);
	cr_assert(memcmp(y, ((const uint8_t[]){0, 0, 0, 0, 0, 1}), 6) == 0, "a scalar greater");
}

Test(compare, bad_broadcast_dies, .signal = SIGABRT, .init = cr_redirect_stderr)
{
	float x[6] = {0};
	uint8_t y[6];
	sc_cpu_compare(SC_CMP_LESS, 0, x, (const int64_t[]){2, 3}, 2, x, (const int64_t[]){2}, 1, y,
	               (const int64_t[]){2, 3}, 2);
}

/* LogicalNot, LogicalAnd, LogicalOr on Bool bytes (any non-zero true),
 * broadcast every way against a naive loop; IsFinite */
Test(logical, every_broadcast_case_and_is_finite)
{
	enum { N = 4 * 8 * 16 * 16 };
	static uint8_t a[N], b[N], y[N];
	uint64_t s = 17;
	for (int k = 0; k < t_n_bcast_cases; k++) {
		const t_bcast_case *c = &t_bcast_cases[k];
		int64_t na = t_numel(c->ad, c->an), nb = t_numel(c->bd, c->bn), ny = t_numel(c->yd, c->yn);
		for (int64_t i = 0; i < na; i++)
			a[i] = (uint8_t)(t_rand(&s) * 3);   /* 2: true, though not 1 */
		for (int64_t i = 0; i < nb; i++)
			b[i] = (uint8_t)(t_rand(&s) * 2);
		for (sc_logop op = SC_L_AND; op <= SC_L_OR; op++) {
			sc_cpu_logical(op, a, c->ad, c->an, b, c->bd, c->bn, y, c->yd, c->yn);
			int64_t yi[SC_MAX_DIMS];
			for (int64_t i = 0; i < ny; i++) {
				t_unravel(i, c->yd, c->yn, yi);
				bool u = a[t_bcast_index(yi, c->yn, c->ad, c->an)], v = b[t_bcast_index(yi, c->yn, c->bd, c->bn)];
				cr_assert_eq(y[i], op == SC_L_AND ? (u && v) : (u || v), "%s, op %d, element %lld", c->what, op,
				             (long long)i);
			}
		}
	}
	sc_cpu_logical(SC_L_NOT, (const uint8_t[]){0, 1, 2}, (const int64_t[]){3}, 1, NULL, NULL, 0, y,
	               (const int64_t[]){3}, 1);
	cr_assert(y[0] == 1 && y[1] == 0 && y[2] == 0, "not: %d %d %d", y[0], y[1], y[2]);
	sc_cpu_is_finite((const float[]){1, -INFINITY, NAN, INFINITY, -0.0f, 3e38f}, y, 6);
	cr_assert(memcmp(y, ((const uint8_t[]){1, 0, 0, 0, 1, 1}), 6) == 0, "is_finite");
}

/* p: ApproximateEqual's tolerance */
static uint8_t naive_compare(sc_cmpop op, float p, float u, float v)
{
	switch (op) {
	case SC_CMP_EQUAL: return u == v;
	case SC_CMP_NOT_EQUAL: return u != v;
	case SC_CMP_GREATER: return u > v;
	case SC_CMP_GREATER_EQUAL: return u >= v;
	case SC_CMP_LESS: return u < v;
	case SC_CMP_LESS_EQUAL: return u <= v;
	case SC_CMP_APPROXIMATE_EQUAL: return fabsf(u - v) < p;
	case SC_CMP_COUNT: break;
	}
	return 2;
}

Test(compare, every_broadcast_case_against_naive)
{
	enum { N = 4 * 8 * 16 * 16 };
	static float a[N], b[N];
	static uint8_t y[N], want[N];
	uint64_t s = 13;
	for (int k = 0; k < t_n_bcast_cases; k++) {
		const t_bcast_case *c = &t_bcast_cases[k];
		int64_t na = t_numel(c->ad, c->an), nb = t_numel(c->bd, c->bn), ny = t_numel(c->yd, c->yn);
		t_fill(a, na, &s, -1, 1);
		t_fill(b, nb, &s, -1, 1);
		for (int64_t i = 0; i < na; i += 3)   /* ties: a third of a's elements one of b's */
			a[i] = b[i % nb];
		for (sc_cmpop op = 0; op < SC_CMP_COUNT; op++) {
			sc_cpu_compare(op, 0.5f, a, c->ad, c->an, b, c->bd, c->bn, y, c->yd, c->yn);
			int64_t yi[SC_MAX_DIMS];
			for (int64_t i = 0; i < ny; i++) {
				t_unravel(i, c->yd, c->yn, yi);
				want[i] = naive_compare(op, 0.5f, a[t_bcast_index(yi, c->yn, c->ad, c->an)],
				                              b[t_bcast_index(yi, c->yn, c->bd, c->bn)]);
			}
			cr_assert(memcmp(y, want, (size_t)ny) == 0, "%s, op %d", c->what, op);
		}
	}
}

/* A NaN stays NaN through ReLU, HSwish, HSigmoid, Maximum, Minimum (either
 * operand) and ReduceMax/ReduceMin, as numpy's: a diverged value must reach
 * the loss, whose NaN stops the run (fmaxf and friends would drop it). */
Test(elementwise, nan_propagates)
{
	const float x[3] = {NAN, 1, -1};
	float y[3];
	for (sc_unop op = SC_U_RELU; op < SC_U_COUNT; op++) {
		if (op == SC_U_FLOOR || op == SC_U_CEIL || op == SC_U_ROUND || op == SC_U_SIGN || op == SC_U_ABS ||
		    op == SC_U_RINT)
			continue;   /* NaN in their own math, not through a max */
		sc_cpu_unary(op, T_UNARY_P, x, y, 3);
		if (op == SC_U_ZEROS_LIKE || op == SC_U_ONES_LIKE)   /* a constant whatever x holds */
			cr_assert(y[0] == (op == SC_U_ONES_LIKE) && y[2] == y[0], "unary %d of NaN gave %g", op, y[0]);
		else
			cr_assert(isnan(y[0]), "unary %d of NaN gave %g", op, y[0]);
	}
	/* DivNoNan: 0 where the divisor is 0, whatever the dividend */
	sc_cpu_binary(SC_DIV_NO_NAN, (const float[]){NAN, 1, -2}, (const int64_t[]){3}, 1, (const float[]){0, 0, 4},
	              (const int64_t[]){3}, 1, y, (const int64_t[]){3}, 1);
	cr_assert(y[0] == 0 && y[1] == 0 && y[2] == -0.5f, "div_no_nan: %g %g %g", y[0], y[1], y[2]);
	for (sc_binop op = SC_MAXIMUM; op <= SC_MINIMUM; op++) {
		sc_cpu_binary(op, x, (const int64_t[]){3}, 1, (const float[]){3}, NULL, 0, y, (const int64_t[]){3}, 1);
		cr_assert(isnan(y[0]) && !isnan(y[1]), "binary %d (NaN, 3)", op);
		sc_cpu_binary(op, (const float[]){3}, NULL, 0, x, (const int64_t[]){3}, 1, y, (const int64_t[]){3}, 1);
		cr_assert(isnan(y[0]) && !isnan(y[1]), "binary %d (3, NaN)", op);
	}
	for (sc_reduce_kind k = SC_R_MAX; k <= SC_R_MIN; k++) {
		sc_cpu_reduce(k, (const float[]){1, NAN, 2, 3, 4, 5}, y, (const int64_t[]){2, 3}, 2, (const int[]){1}, 1);
		cr_assert(isnan(y[0]) && y[1] == (k == SC_R_MAX ? 5 : 3), "reduce %d: %g %g", k, y[0], y[1]);
	}
}

/* Xlogy and Xdivy: 0 where the first operand is 0, whatever the second
 * (0, NaN); MulNoNan: 0 where the second is 0, even times inf or NaN;
 * TruncateDiv and TruncateMod round toward 0 (the dividend's sign) */
Test(binary, zero_masks_and_truncation)
{
	float y[4];
	const float z[4] = {0, 0, 2, -7}, w[4] = {0, NAN, 0, 2}, inf_nan[4] = {INFINITY, NAN, 3, 2};
	const float n[4] = {-7, 7, -7, 7}, d[4] = {2, -2, -2, 2};
	const int64_t d4[1] = {4};
	sc_cpu_binary(SC_XLOGY, z, d4, 1, w, d4, 1, y, d4, 1);
	cr_assert(y[0] == 0 && y[1] == 0 && y[2] == -INFINITY && y[3] == -7 * logf(2), "xlogy: %g %g %g %g", y[0], y[1],
	          y[2], y[3]);
	sc_cpu_binary(SC_XDIVY, z, d4, 1, w, d4, 1, y, d4, 1);
	cr_assert(y[0] == 0 && y[1] == 0 && y[2] == INFINITY && y[3] == -3.5f, "xdivy: %g %g %g %g", y[0], y[1], y[2],
	          y[3]);
	sc_cpu_binary(SC_MUL_NO_NAN, inf_nan, d4, 1, w, d4, 1, y, d4, 1);
	cr_assert(y[0] == 0 && isnan(y[1]) && y[2] == 0 && y[3] == 4, "mul_no_nan: %g %g %g %g", y[0], y[1], y[2], y[3]);
	sc_cpu_binary(SC_TRUNCATE_DIV, n, d4, 1, d, d4, 1, y, d4, 1);
	cr_assert(y[0] == -3 && y[1] == -3 && y[2] == 3 && y[3] == 3, "truncate_div: %g %g %g %g", y[0], y[1], y[2], y[3]);
	sc_cpu_binary(SC_TRUNCATE_MOD, n, d4, 1, d, d4, 1, y, d4, 1);
	cr_assert(y[0] == -1 && y[1] == 1 && y[2] == -1 && y[3] == 1, "truncate_mod: %g %g %g %g", y[0], y[1], y[2], y[3]);
}

/* MaskedFill: the value where the mask is true (even over inf and NaN),
 * else x; x (2, 1, 3) and the mask (2, 1) broadcast to (2, 2, 3). */
Test(elementwise, masked_fill)
{
	const float x[6] = {1, INFINITY, NAN, 4, 5, 6}, v = -1;
	const uint8_t m[2] = {1, 0};
	float y[12];
	sc_cpu_masked_fill(x, (const int64_t[]){2, 1, 3}, 3, m, (const int64_t[]){2, 1}, 2, &v, y,
	                   (const int64_t[]){2, 2, 3}, 3);
	const float want[12] = {-1, -1, -1, 1, INFINITY, 0, -1, -1, -1, 4, 5, 6};
	for (int i = 0; i < 12; i++)
		cr_assert(i == 5 ? isnan(y[i]) : y[i] == want[i], "masked_fill y[%d] = %g", i, y[i]);
}

Test(elementwise, bias_add_and_scale)
{
	const float x[6] = {1, 2, 3, 4, 5, 6};
	float y[6];
	sc_cpu_bias_add(x, (const float[]){1, -1, 0.5f}, y, 2, 3);
	CLOSE(y, ((const float[]){2, 1, 3.5f, 5, 4, 6.5f}), 6, "bias_add");
	sc_cpu_scale(x, y, 6, -0.5);
	CLOSE(y, ((const float[]){-0.5f, -1, -1.5f, -2, -2.5f, -3}), 6, "scale");
}

/* Select: cond ? a : b; NULL reads zeros (its gradients); in place. */
Test(elementwise, select)
{
	const uint8_t c[4] = {1, 0, 2, 0};   /* any byte but 0 is true */
	float a[4] = {1, 2, 3, 4}, b[4] = {-1, -2, -3, -4}, y[4];
	sc_cpu_select(c, a, b, y, 4);
	CLOSE(y, ((const float[]){1, -2, 3, -4}), 4, "select");
	sc_cpu_select(c, a, NULL, y, 4);
	CLOSE(y, ((const float[]){1, 0, 3, 0}), 4, "select, zeros for false");
	sc_cpu_select(c, NULL, b, y, 4);
	CLOSE(y, ((const float[]){0, -2, 0, -4}), 4, "select, zeros for true");
	sc_cpu_select(c, a, b, a, 4);
	CLOSE(a, ((const float[]){1, -2, 3, -4}), 4, "select in place");
}

Test(elementwise, unary_by_hand)
{
	const float x[3] = {-0.5f, 0, 1};
	float y[3];
	sc_cpu_unary(SC_U_RELU, 0, x, y, 3);
	CLOSE(y, ((const float[]){0, 0, 1}), 3, "relu");
	sc_cpu_unary(SC_U_GELU, 0, x, y, 3);   /* numpy: tanh form */
	CLOSE(y, ((const float[]){-0.15428599f, 0, 0.84119199f}), 3, "gelu");
	sc_cpu_unary(SC_U_GELU_ERF, 0, x, y, 3);   /* 0.5*x*(1+math.erf(x/math.sqrt(2))) */
	CLOSE(y, ((const float[]){-0.15426877f, 0, 0.84134475f}), 3, "gelu erf form");
	sc_cpu_unary(SC_U_TANH, 0, x, y, 3);
	CLOSE(y, ((const float[]){-0.46211716f, 0, 0.76159416f}), 3, "tanh");
	sc_cpu_unary(SC_U_SIGMOID, 0, x, y, 3);
	CLOSE(y, ((const float[]){0.37754067f, 0.5f, 0.73105858f}), 3, "sigmoid");
	sc_cpu_unary(SC_U_EXP, 0, x, y, 3);
	CLOSE(y, ((const float[]){0.60653066f, 1, 2.71828183f}), 3, "exp");
	sc_cpu_unary(SC_U_NEG, 0, x, y, 3);
	CLOSE(y, ((const float[]){0.5f, 0, -1}), 3, "neg");
	sc_cpu_unary(SC_U_SQUARE, 0, x, y, 3);
	CLOSE(y, ((const float[]){0.25f, 0, 1}), 3, "square");
	const float p[3] = {0.25f, 1, 2.71828183f};
	sc_cpu_unary(SC_U_SQRT, 0, p, y, 3);
	CLOSE(y, ((const float[]){0.5f, 1, 1.64872127f}), 3, "sqrt");
	sc_cpu_unary(SC_U_LOG, 0, p, y, 3);
	CLOSE(y, ((const float[]){-1.38629436f, 0, 1}), 3, "log");
	sc_cpu_unary(SC_U_RSQRT, 0, p, y, 3);   /* numpy: 1 / np.sqrt(p) */
	CLOSE(y, ((const float[]){2, 1, 0.60653066f}), 3, "rsqrt");
	sc_cpu_unary(SC_U_SILU, 0, x, y, 3);    /* numpy: x / (1 + np.exp(-x)) */
	CLOSE(y, ((const float[]){-0.18877033f, 0, 0.73105858f}), 3, "silu");
}

/* LeakyReLU (p its alpha): x above 0, alpha x below; at a NaN, NaN */
Test(elementwise, leaky_relu_by_hand)
{
	const float x[5] = {-2, -0.5f, 0, 3, NAN};
	float y[5];
	sc_cpu_unary(SC_U_LEAKY_RELU, 0.2f, x, y, 5);
	CLOSE(y, ((const float[]){-0.4f, -0.1f, 0, 3}), 4, "leaky_relu 0.2");
	cr_assert(isnan(y[4]));
	sc_cpu_unary(SC_U_LEAKY_RELU, 2, x, y, 4);   /* above 1: MindSpore's Minimum(alpha x, x), the same */
	CLOSE(y, ((const float[]){-4, -1, 0, 3}), 4, "leaky_relu 2");
	sc_cpu_unary(SC_U_LEAKY_RELU, -0.5f, x, y, 4);
	CLOSE(y, ((const float[]){1, 0.25f, 0, 3}), 4, "leaky_relu -0.5");
}

/* PReLU: x (outer, c, inner), a weight per channel or one; x < 0 ? w x : x */
Test(elementwise, prelu_by_hand)
{
	const float x[8] = {-1, 2, -3, 4, 5, -6, 0, -8}, w[2] = {0.5f, -0.25f};
	float y[8];
	sc_cpu_prelu(x, w, y, 2, 2, 2, 2);   /* (2, 2, 2): channels of 2 elements */
	CLOSE(y, ((const float[]){-0.5f, 2, 0.75f, 4, 5, -3, 0, 2}), 8, "prelu per channel");
	sc_cpu_prelu(x, w, y, 1, 1, 8, 1);   /* one weight for all */
	CLOSE(y, ((const float[]){-0.5f, 2, -1.5f, 4, 5, -3, 0, -4}), 8, "prelu one weight");
	float z[8];
	memcpy(z, x, sizeof z);
	sc_cpu_prelu(z, w, z, 2, 2, 2, 2);   /* in place */
	CLOSE(z, ((const float[]){-0.5f, 2, 0.75f, 4, 5, -3, 0, 2}), 8, "prelu in place");
	/* dx = x <= 0 ? w dy : dy; dw[c] = the sum of x dy where x < 0 */
	const float dy[8] = {1, 1, 1, 1, 2, 2, 2, 2};
	float dx[8], dw[2];
	sc_cpu_prelu_grad(x, w, dy, dx, dw, 2, 2, 2, 2);
	CLOSE(dx, ((const float[]){0.5f, 1, -0.25f, 1, 2, 1, -0.5f, -0.5f}), 8, "prelu dx");
	CLOSE(dw, ((const float[]){-1 - 12, -3 - 16}), 2, "prelu dw");
}

/* ---- softmax, reductions ---- */

Test(softmax, both_axes)
{
	const float x[6] = {1, 2, 3, 1, 1, 1};   /* (2, 3) */
	float y[6];
	const int64_t d[2] = {2, 3};
	sc_cpu_softmax(x, y, d, 2, -1, 0);       /* numpy */
	CLOSE(y, ((const float[]){0.09003057f, 0.24472847f, 0.66524096f, 1 / 3.f, 1 / 3.f, 1 / 3.f}), 6, "softmax -1");
	sc_cpu_softmax(x, y, d, 2, -1, 1);
	CLOSE(y, ((const float[]){-2.40760596f, -1.40760596f, -0.40760596f, -1.09861229f, -1.09861229f, -1.09861229f}), 6,
	      "log_softmax -1");
	sc_cpu_softmax(x, y, d, 2, 0, 0);        /* columns: (1,1) (2,1) (3,1) */
	CLOSE(y, ((const float[]){0.5f, 0.73105858f, 0.88079708f, 0.5f, 0.26894142f, 0.11920292f}), 6, "softmax 0");
}

Test(softmax, large_values_stay_finite)
{
	const float x[3] = {1000, 1001, 1002};
	float y[3];
	sc_cpu_softmax(x, y, (const int64_t[]){3}, 1, 0, 0);
	CLOSE(y, ((const float[]){0.09003057f, 0.24472847f, 0.66524096f}), 3, "softmax of large logits");
}

/* softmax and log_softmax of float32 logits, in double */
static void naive_softmax(const float *x, double *y, const int64_t *dims, int nd, int axis, int is_log)
{
	int64_t len = dims[axis], inner = t_numel(dims + axis + 1, nd - axis - 1), n = t_numel(dims, nd);
	for (int64_t i = 0; i < n; i++) {
		int64_t base = i / (len * inner) * len * inner + i % inner;
		double mx = -INFINITY, sum = 0;
		for (int64_t k = 0; k < len; k++)
			mx = fmax(mx, x[base + k * inner]);
		for (int64_t k = 0; k < len; k++)
			sum += exp(x[base + k * inner] - mx);
		y[i] = is_log ? x[i] - mx - log(sum) : exp(x[i] - mx) / sum;
	}
}

Test(softmax, against_double_reference)
{
	/* logits up to 30 apart. expf's argument x - max is rounded to float32,
	 * so softmax's relative error grows with it: under (|x - max| + 2)
	 * 2^-24, 2e-6 here; log_softmax's absolute error is an ulp of 30 */
	enum { N = 3 * 37 * 5 };
	const int64_t d[3] = {3, 37, 5};
	float x[N], y[N], want[N];
	double ref[N];
	uint64_t s = 9;
	t_fill(x, N, &s, -15, 15);
	for (int axis = 0; axis < 3; axis++)
		for (int lg = 0; lg < 2; lg++) {
			sc_cpu_softmax(x, y, d, 3, axis, lg);
			naive_softmax(x, ref, d, 3, axis, lg);
			for (int i = 0; i < N; i++)
				want[i] = (float)ref[i];
			cr_assert(t_close(lg ? "log_softmax" : "softmax", y, want, N, lg ? 4e-6 : 1e-9, lg ? 0 : 4e-6),
			          "axis %d", axis);
		}
}

Test(reduce, by_hand)
{
	float x[24], y[8];
	for (int i = 0; i < 24; i++)
		x[i] = (float)i;   /* (2, 3, 4): x[i][j][k] = 12 i + 4 j + k */
	const int64_t d[3] = {2, 3, 4};
	sc_cpu_reduce(SC_R_SUM, x, y, d, 3, (const int[]){0, -1}, 2);
	CLOSE(y, ((const float[]){60, 92, 124}), 3, "sum over (0, 2)");
	sc_cpu_reduce(SC_R_MEAN, x, y, d, 3, (const int[]){2, 0}, 2);
	CLOSE(y, ((const float[]){7.5f, 11.5f, 15.5f}), 3, "mean over (0, 2)");
	sc_cpu_reduce(SC_R_MAX, x, y, d, 3, (const int[]){0, 2}, 2);
	CLOSE(y, ((const float[]){15, 19, 23}), 3, "max over (0, 2)");
	sc_cpu_reduce(SC_R_SUM, x, y, d, 3, (const int[]){1}, 1);
	CLOSE(y, ((const float[]){12, 15, 18, 21, 48, 51, 54, 57}), 6, "sum over 1");
	sc_cpu_reduce(SC_R_MAX, x, y, d, 3, (const int[]){0, 1, 2}, 3);
	CLOSE(y, ((const float[]){23}), 1, "max over all");
	sc_cpu_reduce(SC_R_MIN, x, y, d, 3, (const int[]){2, 0}, 2);
	CLOSE(y, ((const float[]){0, 4, 8}), 3, "min over (0, 2)");
	sc_cpu_reduce(SC_R_MIN, x, y, d, 3, (const int[]){-2}, 1);
	CLOSE(y, ((const float[]){0, 1, 2, 3, 12, 13, 14, 15}), 8, "min over 1");
	sc_cpu_reduce(SC_R_MIN, x, y, d, 3, (const int[]){0, 1, 2}, 3);
	CLOSE(y, ((const float[]){0}), 1, "min over all");
	for (int i = 0; i < 24; i++)
		x[i] = -(float)i;   /* all negative: the minimum is not the start of 0 */
	sc_cpu_reduce(SC_R_MIN, x, y, d, 3, (const int[]){0, 2}, 2);
	CLOSE(y, ((const float[]){-15, -19, -23}), 3, "min of negatives over (0, 2)");
	sc_cpu_reduce(SC_R_MAX, x, y, d, 3, (const int[]){1}, 1);
	CLOSE(y, ((const float[]){0, -1, -2, -3, -12, -13, -14, -15}), 8, "max of negatives over 1");
	for (int i = 0; i < 24; i++)
		x[i] = (float)(i % 5) - 1.5f;   /* -1.5 -0.5 0.5 1.5 2.5 -1.5 ... */
	sc_cpu_reduce(SC_R_PROD, x, y, d, 3, (const int[]){2}, 1);
	float want[6];
	for (int r = 0; r < 6; r++) {
		double p = 1;
		for (int k = 0; k < 4; k++)
			p *= x[4 * r + k];
		want[r] = (float)p;
	}
	CLOSE(y, want, 6, "prod over 2");
	sc_cpu_reduce(SC_R_PROD, x, y, d, 3, (const int[]){0, 1}, 2);
	for (int k = 0; k < 4; k++) {
		double p = 1;
		for (int r = 0; r < 6; r++)
			p *= x[4 * r + k];
		want[k] = (float)p;
	}
	CLOSE(y, want, 4, "prod over (0, 1)");
}

/* ReduceAll and ReduceAny on bytes: any nonzero byte is true, results 0 or 1. */
Test(reduce, all_any_bytes)
{
	const uint8_t x[6] = {1, 0, 2, 1, 1, 7};   /* (2, 3) */
	uint8_t y[3];
	const int64_t d[2] = {2, 3};
	sc_cpu_reduce_bool(0, x, y, d, 2, (const int[]){1}, 1);
	cr_assert(y[0] == 0 && y[1] == 1, "all over 1: %d %d", y[0], y[1]);
	sc_cpu_reduce_bool(1, x, y, d, 2, (const int[]){1}, 1);
	cr_assert(y[0] == 1 && y[1] == 1);
	sc_cpu_reduce_bool(0, x, y, d, 2, (const int[]){0}, 1);
	cr_assert(y[0] == 1 && y[1] == 0 && y[2] == 1, "all over 0: %d %d %d", y[0], y[1], y[2]);
	const uint8_t z[4] = {0, 0, 0, 3};
	sc_cpu_reduce_bool(1, z, y, (const int64_t[]){2, 2}, 2, (const int[]){0}, 1);
	cr_assert(y[0] == 0 && y[1] == 1, "any over 0: %d %d", y[0], y[1]);
	sc_cpu_reduce_bool(0, z, y, (const int64_t[]){2, 2}, 2, (const int[]){0, 1}, 2);
	cr_assert(y[0] == 0, "all over both");
}

/* ---- data movement ---- */

Test(transpose, against_loops)
{
	float x[24], y[24];
	for (int i = 0; i < 24; i++)
		x[i] = (float)i;
	const int64_t d[3] = {2, 3, 4};
	sc_cpu_transpose(SC_F32, x, y, d, 3, (const int[]){2, 0, 1});   /* y (4, 2, 3) */
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 3; j++)
			for (int k = 0; k < 4; k++)
				cr_assert_eq(y[(k * 2 + i) * 3 + j], x[(i * 3 + j) * 4 + k]);
	int64_t xi[24], yi[24];
	for (int i = 0; i < 24; i++)
		xi[i] = 1000 + i;
	sc_cpu_transpose(SC_I64, xi, yi, (const int64_t[]){4, 6}, 2, (const int[]){1, 0});
	cr_assert_eq(yi[1], 1006);
	cr_assert_eq(yi[6 * 4 - 1], 1023);
}

/* y = x transposed, one element at a time, es bytes each */
static void naive_transpose(size_t es, const uint8_t *x, uint8_t *y, const int64_t *dims, int nd, const int *perm)
{
	int64_t yd[SC_MAX_DIMS], yi[SC_MAX_DIMS], xi[SC_MAX_DIMS];
	for (int k = 0; k < nd; k++)
		yd[k] = dims[perm[k]];
	for (int64_t i = 0; i < t_numel(dims, nd); i++) {
		t_unravel(i, yd, nd, yi);
		for (int k = 0; k < nd; k++)
			xi[perm[k]] = yi[k];
		memcpy(y + i * es, x + t_ravel(xi, dims, nd) * es, es);
	}
}

Test(transpose, every_perm_and_element_size)
{
	/* every perm of 4 dims, on shapes with a dim of 1 (dropped), with dims
	 * past the kernel's 16-element tiles, and (B, S, H, D) attention heads;
	 * bool, float16, float32 and int64 elements */
	static const int64_t shapes[][4] = {{2, 3, 4, 5}, {3, 1, 17, 19}, {20, 2, 1, 33}, {2, 16, 4, 8}};
	const sc_dtype dts[] = {SC_BOOL, SC_F16, SC_F32, SC_I64};
	const size_t ess[] = {1, 2, 4, 8};
	enum { N = 20 * 2 * 33 * 8 };
	static uint8_t x[N], y[N], want[N];
	uint64_t s = 5;
	for (int i = 0; i < N; i++)
		x[i] = (uint8_t)(t_rand(&s) * 256);
	int perms = 0;
	for (int p0 = 0; p0 < 4; p0++)
		for (int p1 = 0; p1 < 4; p1++)
			for (int p2 = 0; p2 < 4; p2++) {
				int p3 = 6 - p0 - p1 - p2;
				if (p0 == p1 || p0 == p2 || p1 == p2 || p3 < 0 || p3 == p0 || p3 == p1 || p3 == p2)
					continue;
				const int perm[4] = {p0, p1, p2, p3};
				perms++;
				for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++)
					for (size_t t = 0; t < sizeof dts / sizeof dts[0]; t++) {
						size_t es = ess[t], bytes = (size_t)t_numel(shapes[k], 4) * es;
						sc_cpu_transpose(dts[t], x, y, shapes[k], 4, perm);
						naive_transpose(es, x, want, shapes[k], 4, perm);
						cr_assert(memcmp(y, want, bytes) == 0, "shape %zu perm (%d %d %d %d) %zu-byte elements", k,
						          p0, p1, p2, p3, es);
					}
			}
	cr_assert_eq(perms, 24);
	/* a 2-D one over several tiles; rank 1 and rank 0 are copies */
	sc_cpu_transpose(SC_F32, x, y, (const int64_t[]){37, 41}, 2, (const int[]){1, 0});
	naive_transpose(4, x, want, (const int64_t[]){37, 41}, 2, (const int[]){1, 0});
	cr_assert(memcmp(y, want, 37 * 41 * 4) == 0, "(37, 41) transposed");
	sc_cpu_transpose(SC_I32, x, y, (const int64_t[]){5}, 1, (const int[]){0});
	cr_assert(memcmp(y, x, 5 * 4) == 0, "rank 1");
	sc_cpu_transpose(SC_I64, x, y, NULL, 0, NULL);
	cr_assert(memcmp(y, x, 8) == 0, "rank 0");
}

Test(gather, offset_rows)
{
	/* rows 4..6 of a table whose global row r is (r, -r) */
	const float table[6] = {4, -4, 5, -5, 6, -6};
	float y[10];
	sc_cpu_gather(table, 3, 2, (const int32_t[]){4, 6, 2, 7, 5}, SC_I32, 5, 4, y);
	CLOSE(y, ((const float[]){4, -4, 6, -6, 0, 0, 0, 0, 5, -5}), 10, "gather with offset");
	sc_cpu_gather(table, 3, 2, (const int64_t[]){2, 0}, SC_I64, 2, 0, y);
	CLOSE(y, ((const float[]){6, -6, 4, -4}), 4, "gather int64 indices");
}

Test(gather, axis_1_offset)
{
	/* a (2, 3, 2) slice of columns 5..7 along axis 1: entry (o, c, j) = 100 o + 10 c + j */
	const float table[12] = {50, 51, 60, 61, 70, 71, 150, 151, 160, 161, 170, 171};
	float y[12], dt[12];
	sc_cpu_gather_axis(table, 2, 3, 2, (const int32_t[]){7, 4, 5}, SC_I32, 3, 5, y);
	CLOSE(y, ((const float[]){70, 71, 0, 0, 50, 51, 170, 171, 0, 0, 150, 151}), 12, "gather along axis 1");
	const float dy[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	sc_cpu_gather_axis_grad(dy, (const int64_t[]){6, 6}, SC_I64, 2, 5, dt, 2, 3, 2);
	CLOSE(dt, ((const float[]){0, 0, 4, 6, 0, 0, 0, 0, 12, 14, 0, 0}), 12, "repeated ids add up in each slice");
}

Test(embedding_lookup, offset_and_limit)
{
	/* rows 4..6 of a table whose global row r is (r, -r), its ids offset by 1 (MindSpore's offset 1): id i reads
	 * row i - 1; the whole table has 6 rows, so ids from 7 on (limit) read zeros even where the slice holds
	 * a row there (an uneven split's padding) */
	const float table[6] = {4, -4, 5, -5, 0, 0};   /* row 6 is padding */
	float y[12], dt[6];
	const int32_t ids[6] = {5, 7, 3, 8, 6, -1};
	sc_cpu_embedding_lookup(table, 3, 2, ids, SC_I32, 6, 5, 7, y);
	CLOSE(y, ((const float[]){4, -4, 0, 0, 0, 0, 0, 0, 5, -5, 0, 0}), 12, "embedding lookup, offset and limit");
	const float dy[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
	sc_cpu_embedding_lookup_grad(dy, ids, SC_I32, 6, 5, 7, dt, 3, 2);
	CLOSE(dt, ((const float[]){1, 2, 9, 10, 0, 0}), 6, "no gradient past the limit: the padding row stays 0");
	sc_cpu_embedding_lookup(table, 3, 2, (const int64_t[]){6, 6}, SC_I64, 2, 4, 100, y);
	CLOSE(y, ((const float[]){0, 0, 0, 0}), 4, "int64 ids, the padding row read as it is");
	sc_cpu_embedding_lookup_grad(dy, (const int64_t[]){5, 5}, SC_I64, 2, 4, 100, dt, 3, 2);
	CLOSE(dt, ((const float[]){0, 0, 4, 6, 0, 0}), 6, "repeated ids add up");
}

Test(gather_d, by_hand)
{
	/* x (2, 3), out[i][j] = x[i][idx[i][j]] along dim 1; 3 is outside: 0 */
	const float x[6] = {10, 11, 12, 20, 21, 22};
	float y[4], dx[6];
	sc_cpu_gather_d(x, (const int64_t[]){2, 3}, (const int32_t[]){2, 0, 1, 3}, SC_I32, (const int64_t[]){2, 2}, 2, 1,
	                0, y);
	CLOSE(y, ((const float[]){12, 10, 21, 0}), 4, "gather_d along dim 1");
	/* x the slice [1, 4) of a dim of 4 (offset 1): index 0 is another rank's, 0 here */
	sc_cpu_gather_d(x, (const int64_t[]){2, 3}, (const int32_t[]){3, 0, 1, 2}, SC_I32, (const int64_t[]){2, 2}, 2, 1,
	                1, y);
	CLOSE(y, ((const float[]){12, 0, 20, 21}), 4, "gather_d of a slice along dim 1");
	/* along dim 0, an index shorter than x on dim 1: out[i][j] = x[idx[i][j]][j] */
	sc_cpu_gather_d(x, (const int64_t[]){2, 3}, (const int64_t[]){1, 0}, SC_I64, (const int64_t[]){1, 2}, 2, 0, 0, y);
	CLOSE(y, ((const float[]){20, 11}), 2, "gather_d along dim 0");
	sc_cpu_gather_d_grad((const float[]){1, 2, 3, 4}, (const int32_t[]){2, 2, 1, 3}, SC_I32, (const int64_t[]){2, 2},
	                     dx, (const int64_t[]){2, 3}, 2, 1, 0);
	CLOSE(dx, ((const float[]){0, 0, 3, 0, 3, 0}), 6, "repeated indices add up, outside ones vanish");
}

Test(gather_nd, by_hand)
{
	/* x (2, 3, 2): index (1, 2) names the row {x[1][2][0], x[1][2][1]}; repeated (0, 1) */
	const float x[12] = {0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15};
	const int32_t idx[6] = {1, 2, 0, 1, 0, 1};
	float y[6], dx[12];
	sc_cpu_gather_nd(x, (const int64_t[]){2, 3}, 2, 2, idx, SC_I32, 3, y);
	CLOSE(y, ((const float[]){14, 15, 2, 3, 2, 3}), 6, "gather_nd of rows");
	sc_cpu_gather_nd_grad((const float[]){1, 2, 3, 4, 5, 6}, idx, SC_I32, 3, dx, (const int64_t[]){2, 3}, 2, 2);
	CLOSE(dx, ((const float[]){0, 0, 8, 10, 0, 0, 0, 0, 0, 0, 1, 2}), 12, "repeated indices add up");
	sc_cpu_gather_nd(x, (const int64_t[]){2, 3}, 2, 2, (const int64_t[]){1, 3}, SC_I64, 1, y);   /* the caller checks */
	CLOSE(y, ((const float[]){0, 0}), 2, "an index outside x reads no slice");
}

Test(tensor_scatter, by_hand)
{
	/* x (4, 2), rows 2, 0, 2 updated: the last of the repeated 2 wins; Add and Sub sum them */
	const float x[8] = {0, 1, 2, 3, 4, 5, 6, 7}, u[6] = {10, 11, 20, 21, 30, 31};
	const int64_t idx[3] = {2, 0, 2}, d[1] = {4};
	float y[8], g[8];
	sc_cpu_tensor_scatter(SC_SCATTER_UPDATE, x, idx, SC_I64, 3, u, y, NULL, d, 1, 2);
	CLOSE(y, ((const float[]){20, 21, 2, 3, 30, 31, 6, 7}), 8, "the last update wins");
	sc_cpu_tensor_scatter(SC_SCATTER_ADD, x, idx, SC_I64, 3, u, y, NULL, d, 1, 2);
	CLOSE(y, ((const float[]){20, 22, 2, 3, 44, 47, 6, 7}), 8, "repeats add up");
	sc_cpu_tensor_scatter(SC_SCATTER_SUB, x, idx, SC_I64, 3, u, y, (const int64_t[]){2}, (const int64_t[]){2}, 1, 2);
	CLOSE(y, ((const float[]){-40, -41, 2, 3}), 4, "the piece [2, 4): row 0 another rank's");
	sc_cpu_tensor_scatter_grad(SC_SCATTER_UPDATE, 0, x, NULL, NULL, NULL, idx, SC_I64, 3, g, NULL, d, 1, 2);
	CLOSE(g, ((const float[]){0, 0, 2, 3, 0, 0, 6, 7}), 8, "x's gradient: the replaced rows zeroed");
	sc_cpu_tensor_scatter_grad(SC_SCATTER_SUB, 2, x, NULL, NULL, NULL, idx, SC_I64, 3, g, (const int64_t[]){2},
	                           (const int64_t[]){2}, 1, 2);
	CLOSE(g, ((const float[]){-0, -1, 0, 0, -0, -1}), 6, "updates' gradient: -dy's rows, 0 for another rank's");
}

Test(tensor_scatter, mul_div_max_min)
{
	/* x (3,) at elements 0, 2, 0 (0 twice: applied in turn); dy {1, 10, 100}; MindSpore's bprops */
	const float x[3] = {2, 3, 5}, dy[3] = {1, 10, 100}, u[3] = {2, 4, 0.5f};
	const float umax[3] = {2, 4, 2}, umin[3] = {1, 7, 2};   /* Max: x and both updates tie at 0; Min: 1 wins */
	const int32_t idx[3] = {0, 2, 0};
	const int64_t d[1] = {3};
	float y[3], g[3];
	sc_cpu_tensor_scatter(SC_SCATTER_MUL, x, idx, SC_I32, 3, u, y, NULL, d, 1, 1);
	CLOSE(y, ((const float[]){2, 3, 20}), 3, "Mul: repeats multiply in turn");
	sc_cpu_tensor_scatter_grad(SC_SCATTER_MUL, 0, dy, x, u, y, idx, SC_I32, 3, g, NULL, d, 1, 1);
	CLOSE(g, ((const float[]){1, 10, 400}), 3, "Mul's x: TensorScatterMul of dy");
	sc_cpu_tensor_scatter_grad(SC_SCATTER_MUL, 2, dy, x, u, y, idx, SC_I32, 3, g, NULL, d, 1, 1);
	CLOSE(g, ((const float[]){2, 500, 2}), 3, "Mul's updates: x dy at their slices");
	sc_cpu_tensor_scatter(SC_SCATTER_DIV, x, idx, SC_I32, 3, u, y, NULL, d, 1, 1);
	CLOSE(y, ((const float[]){2, 3, 1.25f}), 3, "Div: repeats divide in turn");
	sc_cpu_tensor_scatter_grad(SC_SCATTER_DIV, 0, dy, x, u, y, idx, SC_I32, 3, g, NULL, d, 1, 1);
	CLOSE(g, ((const float[]){1, 10, 25}), 3, "Div's x: TensorScatterDiv of dy");
	sc_cpu_tensor_scatter_grad(SC_SCATTER_DIV, 2, dy, x, u, y, idx, SC_I32, 3, g, NULL, d, 1, 1);
	CLOSE(g, ((const float[]){-0.5f, -31.25f, -8}), 3, "Div's updates: dy x / -u^2");
	sc_cpu_tensor_scatter(SC_SCATTER_MAX, x, idx, SC_I32, 3, umax, y, NULL, d, 1, 1);
	CLOSE(y, ((const float[]){2, 3, 5}), 3, "Max");
	sc_cpu_tensor_scatter_grad(SC_SCATTER_MAX, 0, dy, x, umax, y, idx, SC_I32, 3, g, NULL, d, 1, 1);
	CLOSE(g, ((const float[]){1.0f / 3, 10, 100}), 3, "Max's x: dy shared by the three ties at 0");
	sc_cpu_tensor_scatter_grad(SC_SCATTER_MAX, 2, dy, x, umax, y, idx, SC_I32, 3, g, NULL, d, 1, 1);
	CLOSE(g, ((const float[]){1.0f / 3, 0, 1.0f / 3}), 3, "Max's updates: where they won, shared");
	sc_cpu_tensor_scatter(SC_SCATTER_MIN, x, idx, SC_I32, 3, umin, y, NULL, d, 1, 1);
	CLOSE(y, ((const float[]){1, 3, 5}), 3, "Min");
	sc_cpu_tensor_scatter_grad(SC_SCATTER_MIN, 0, dy, x, umin, y, idx, SC_I32, 3, g, NULL, d, 1, 1);
	CLOSE(g, ((const float[]){0, 10, 100}), 3, "Min's x: 0 where an update won");
	sc_cpu_tensor_scatter_grad(SC_SCATTER_MIN, 2, dy, x, umin, y, idx, SC_I32, 3, g, NULL, d, 1, 1);
	CLOSE(g, ((const float[]){1, 0, 0}), 3, "Min's updates: the one that won");
	const int64_t st[1] = {2}, ld[1] = {1};   /* x's piece [2, 3): element 2 alone */
	sc_cpu_tensor_scatter(SC_SCATTER_MUL, x + 2, idx, SC_I32, 3, u, y, st, ld, 1, 1);
	CLOSE(y, ((const float[]){20}), 1, "Mul on a piece: the others' updates skipped");
	sc_cpu_tensor_scatter_grad(SC_SCATTER_MUL, 2, dy + 2, x + 2, u, y, idx, SC_I32, 3, g, st, ld, 1, 1);
	CLOSE(g, ((const float[]){0, 500, 0}), 3, "Mul's updates on a piece: 0 for another rank's");
}

Test(unsorted_segment, by_hand)
{
	/* x (4, 2) into 3 segments by ids {1, -1, 1, 7}: -1 and 7 dropped, segments 0 and 2 empty */
	const float x[8] = {1, -2, 3, 0.5f, -1, 4, 9, 9};
	const int64_t ids[4] = {1, -1, 1, 7};
	float y[6];
	sc_cpu_unsorted_segment(SC_SEG_SUM, x, ids, SC_I64, y, 4, 2, 3, SC_F32);
	CLOSE(y, ((const float[]){0, 0, 0, 2, 0, 0}), 6, "segment sum, empty 0");
	sc_cpu_unsorted_segment(SC_SEG_PROD, x, ids, SC_I64, y, 4, 2, 3, SC_F32);
	CLOSE(y, ((const float[]){1, 1, -1, -8, 1, 1}), 6, "segment prod, empty 1");
	sc_cpu_unsorted_segment(SC_SEG_MAX, x, ids, SC_I64, y, 4, 2, 3, SC_F16);
	CLOSE(y, ((const float[]){-65504, -65504, 1, 4, -65504, -65504}), 6, "segment max, empty Float16's lowest");
	sc_cpu_unsorted_segment(SC_SEG_MIN, x, ids, SC_I64, y, 4, 2, 3, SC_BF16);
	CLOSE(y, ((const float[]){3.38953139e38f, 3.38953139e38f, -1, -2, 3.38953139e38f, 3.38953139e38f}), 6,
	      "segment min, empty BFloat16's largest");
	sc_cpu_unsorted_segment(SC_SEG_MAX, x, ids, SC_I64, y, 4, 2, 3, SC_F32);
	cr_assert(y[0] == -FLT_MAX, "segment max, empty Float32's lowest: %g", y[0]);
	float dx[8];
	sc_cpu_unsorted_segment_grad(SC_SEG_SUM, NULL, ids, SC_I64, NULL, (const float[]){1, 2, 3, 4, 5, 6}, NULL, NULL,
	                             dx, 4, 2, 3);
	CLOSE(dx, ((const float[]){3, 4, 0, 0, 3, 4, 0, 0}), 8, "segment sum grad: dy gathered, 0 where dropped");
}

Test(l2_normalize, by_hand)
{
	/* (2, 2) along axis 1: rows (3, 4) and (0.003, 0.004), the second below epsilon 1e-4 */
	const float x[4] = {3, 4, 0.003f, 0.004f};
	float y[4];
	sc_cpu_l2_normalize(x, NULL, y, 2, 2, 1, 1e-4);
	CLOSE(y, ((const float[]){0.6f, 0.8f, 0.3f, 0.4f}), 4, "l2_normalize, a row below epsilon divided by 0.01");
	sc_cpu_l2_normalize(x, (const float[]){100, 1}, y, 2, 2, 1, 1e-4);   /* the sums given: a slice's piece */
	CLOSE(y, ((const float[]){0.3f, 0.4f, 0.003f, 0.004f}), 4, "l2_normalize with the sums given");
}

Test(triangle, by_hand_and_as_pieces)
{
	/* x (3, 4) = 1..12: Tril diagonal 1 keeps column <= row + 1, Triu diagonal -1 column >= row - 1 */
	const float x[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
	float y[12], piece[4];
	sc_cpu_triangle(0, x, y, SC_F32, 1, 3, 4, 0, 0, 1);
	CLOSE(y, ((const float[]){1, 2, 0, 0, 5, 6, 7, 0, 9, 10, 11, 12}), 12, "tril, diagonal 1");
	sc_cpu_triangle(1, x, y, SC_F32, 1, 3, 4, 0, 0, -1);
	CLOSE(y, ((const float[]){1, 2, 3, 4, 5, 6, 7, 8, 0, 10, 11, 12}), 12, "triu, diagonal -1");
	sc_cpu_triangle(0, x, y, SC_F32, 1, 3, 4, 0, 0, -3);
	CLOSE(y, ((const float[]){0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}), 12, "tril below every element");
	/* rows 1..2, columns 2..3 of the whole as a piece (2, 2) from (1, 2): the whole's Triu, diagonal 1 */
	const float xp[4] = {7, 8, 11, 12};
	sc_cpu_triangle(1, xp, piece, SC_F32, 1, 2, 2, 1, 2, 1);
	CLOSE(piece, ((const float[]){7, 8, 0, 12}), 4, "triu piece from row 1, column 2");
	/* two matrices (2, 1, 3) as one lead dim, Int32 and Bool by their bytes, in place */
	int32_t xi[6] = {1, 2, 3, 4, 5, 6};
	uint8_t xb[6] = {1, 1, 1, 1, 1, 1};
	sc_cpu_triangle(0, xi, xi, SC_I32, 2, 1, 3, 0, 0, 1);
	cr_assert(!memcmp(xi, ((const int32_t[]){1, 2, 0, 4, 5, 0}), sizeof xi), "tril of Int32 in place");
	sc_cpu_triangle(1, xb, xb, SC_BOOL, 2, 1, 3, 0, 1, 2);
	cr_assert(!memcmp(xb, ((const uint8_t[]){0, 1, 1, 0, 1, 1}), sizeof xb), "triu of Bool from column 1, diagonal 2");
}

Test(resize, by_hand)
{
	/* x (1, 1, 2, 2) = [[0, 1], [2, 3]]: nearest to (4, 4) repeats each element 2 x 2 */
	const float x[4] = {0, 1, 2, 3};
	float y[16];
	sc_cpu_resize(0, x, y, 1, 2, 2, 4, 4, 0, 0);
	CLOSE(y, ((const float[]){0, 0, 1, 1, 0, 0, 1, 1, 2, 2, 3, 3, 2, 2, 3, 3}), 16, "nearest 2 x 2 to 4 x 4");
	/* nearest with align_corners to (3, 3): scale 1/2, round(0.5) is 1 (MindSpore's roundf, half away from 0) */
	sc_cpu_resize(0, x, y, 1, 2, 2, 3, 3, 1, 0);
	CLOSE(y, ((const float[]){0, 1, 1, 2, 3, 3, 2, 3, 3}), 9, "nearest align_corners to 3 x 3");
	/* nearest with half_pixel_centers to (1, 4): row floor(0.5 * 2) = 1, columns floor((o + 0.5) / 2) */
	sc_cpu_resize(0, x, y, 1, 2, 2, 1, 4, 0, 1);
	CLOSE(y, ((const float[]){2, 2, 3, 3}), 4, "nearest half_pixel_centers to 1 x 4");
	/* bilinear with align_corners to (3, 3): the corners kept, the midpoints means */
	sc_cpu_resize(1, x, y, 1, 2, 2, 3, 3, 1, 0);
	CLOSE(y, ((const float[]){0, 0.5f, 1, 1, 1.5f, 2, 2, 2.5f, 3}), 9, "bilinear align_corners to 3 x 3");
	/* bilinear to (2, 4): scale 1/2, the last column past x's clamped to it */
	sc_cpu_resize(1, x, y, 1, 2, 2, 2, 4, 0, 0);
	CLOSE(y, ((const float[]){0, 0.5f, 1, 1, 2, 2.5f, 3, 3}), 8, "bilinear to 2 x 4");
	/* bilinear with half_pixel_centers to (1, 4) of row [0, 1]: s = -0.25 (both rows 0), 0.25, 0.75, 1.25 (row 1) */
	sc_cpu_resize(1, x, y, 1, 1, 2, 1, 4, 0, 1);
	CLOSE(y, ((const float[]){0, 0.25f, 0.75f, 1}), 4, "bilinear half_pixel_centers to 1 x 4");
	/* the gradients: nearest 2 x 2 to 4 x 4 of ones gives 4 each; bilinear to (2, 4) of ones gives the column sums */
	const float ones[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
	float g[4];
	sc_cpu_resize_grad(0, ones, g, 1, 2, 2, 4, 4, 0, 0);
	CLOSE(g, ((const float[]){4, 4, 4, 4}), 4, "nearest's gradient");
	sc_cpu_resize_grad(1, ones, g, 1, 2, 2, 2, 4, 0, 0);
	CLOSE(g, ((const float[]){1.5f, 2.5f, 1.5f, 2.5f}), 4, "bilinear's gradient");
}

Test(pad, by_hand)
{
	/* x (2, 3) = 1..6 padded (1, 0) along dim 0 and (2, 1) along dim 1 with 0.5: y (3, 6) */
	const float x[6] = {1, 2, 3, 4, 5, 6};
	float y[18];
	sc_cpu_pad(SC_F32, x, y, (const int64_t[]){2, 3}, (const int64_t[]){3, 6}, 2, (const int64_t[]){1, 2}, 0.5);
	CLOSE(y, ((const float[]){0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 1, 2, 3, 0.5f, 0.5f, 0.5f, 4, 5, 6,
	                          0.5f}), 18, "pad (1, 0), (2, 1) with 0.5");
	/* no padding: a copy; Int32 with -1 after its last dim; Float16's 0.1 rounded as sc_fill rounds it */
	sc_cpu_pad(SC_F32, x, y, (const int64_t[]){2, 3}, (const int64_t[]){2, 3}, 2, (const int64_t[]){0, 0}, 9);
	CLOSE(y, x, 6, "pad by nothing");
	const int32_t xi[4] = {1, 2, 3, 4};
	int32_t yi[6];
	sc_cpu_pad(SC_I32, xi, yi, (const int64_t[]){2, 2}, (const int64_t[]){2, 3}, 2, (const int64_t[]){0, 0}, -1);
	cr_assert(!memcmp(yi, ((const int32_t[]){1, 2, -1, 3, 4, -1}), sizeof yi), "pad of Int32 after the last dim");
	uint16_t hx[1] = {0x3c00}, hy[3], want[1];   /* Float16 1.0 */
	sc_cpu_fill(want, SC_F16, 1, 0.1);
	sc_cpu_pad(SC_F16, hx, hy, (const int64_t[]){1}, (const int64_t[]){3}, 1, (const int64_t[]){1}, 0.1);
	cr_assert(hy[0] == want[0] && hy[1] == 0x3c00 && hy[2] == want[0], "pad of Float16 with 0.1 rounded once");
}

Test(one_hot, slice_of_classes)
{
	/* classes 2..3 of a OneHot: the indices outside them give rows of off */
	float y[12];
	sc_cpu_one_hot((const int32_t[]){2, 3, 0, -1, 4, 3}, SC_I32, 6, 2, 1, 2, 1.0f, -0.5f, y);
	CLOSE(y, ((const float[]){1, -0.5f, -0.5f, 1, -0.5f, -0.5f, -0.5f, -0.5f, -0.5f, -0.5f, -0.5f, 1}), 12,
	      "one_hot, last axis, offset 2");
	/* axis 0 of 3 indices, 2 classes: y (2, 3) */
	sc_cpu_one_hot((const int64_t[]){1, 0, 7}, SC_I64, 1, 2, 3, 0, 0.9f, 0.1f, y);
	CLOSE(y, ((const float[]){0.1f, 0.9f, 0.1f, 0.9f, 0.1f, 0.1f}), 6, "one_hot, axis 0, int64");
}

Test(arg_reduce, first_pick)
{
	/* x (2, 3, 2) along dim 1: ties give the first index, a NaN is picked first */
	const float x[12] = {1, 5, 4, 5, 4, -1, NAN, 0, 2, 0, NAN, 0};
	int32_t idx[4];
	float val[4];
	sc_cpu_arg_reduce(x, 2, 3, 2, 0, idx, val);
	cr_assert(idx[0] == 1 && idx[1] == 0 && idx[2] == 0 && idx[3] == 0, "argmax %d %d %d %d", idx[0], idx[1],
	          idx[2], idx[3]);
	cr_assert(val[0] == 4 && val[1] == 5 && isnan(val[2]) && val[3] == 0);
	sc_cpu_arg_reduce(x, 2, 3, 2, 1, idx, NULL);
	cr_assert(idx[0] == 0 && idx[1] == 2 && idx[2] == 0 && idx[3] == 0, "argmin %d %d %d %d", idx[0], idx[1],
	          idx[2], idx[3]);
	sc_cpu_arg_reduce(x, 1, 12, 1, 1, NULL, val);   /* the whole as one row: the first NaN */
	cr_assert(isnan(val[0]));
}

Test(topk, order)
{
	/* rows of 5, k 3: largest first, equals by index, NaN first */
	const float x[10] = {2, 7, 7, -1, 3, 1, NAN, 9, NAN, 9};
	float val[6];
	int32_t idx[6];
	sc_cpu_topk(x, 2, 5, 3, val, idx);
	const int32_t want[6] = {1, 2, 4, 1, 3, 2};
	for (int i = 0; i < 6; i++)
		cr_assert(idx[i] == want[i], "topk index %d: %d, want %d", i, idx[i], want[i]);
	cr_assert(val[0] == 7 && val[1] == 7 && val[2] == 3 && isnan(val[3]) && isnan(val[4]) && val[5] == 9);
}

Test(layernorm, by_hand)
{
	const float x[8] = {1, 2, 3, 4, 2, 2, 2, 2};
	float y[8];
	const float g4[4] = {2, 2, 2, 2}, b4[4] = {0.5f, 0.5f, 0.5f, 0.5f};
	sc_cpu_norm(1, x, g4, b4, y, (const int64_t[]){2, 4}, 2, 1, 1, 1e-5);   /* numpy */
	CLOSE(y, ((const float[]){-2.18327084f, -0.39442361f, 1.39442361f, 3.18327084f, 0.5f, 0.5f, 0.5f, 0.5f}), 8,
	      "LayerNorm");
	/* gamma over both dims (begin_params_axis 0), normalizing rows */
	const float g8[8] = {1, 1, 1, 1, 0, 0, 0, 0}, b8[8] = {0, 0, 0, 0, 1, 2, 3, 4};
	sc_cpu_norm(1, x, g8, b8, y, (const int64_t[]){2, 4}, 2, -1, 0, 1e-5);
	CLOSE(y, ((const float[]){-1.34163303f, -0.44721101f, 0.44721101f, 1.34163303f, 1, 2, 3, 4}), 8,
	      "LayerNorm with (2, 4) params");
}

/* The normalized dim split in two slices: given the whole rows' mean and
 * variance, the pieces are the whole LayerNorm, and their gradients, the
 * mean's and variance's taken back through mean = sum(x) / cols and var =
 * sum((x - mean)^2) / cols, add up to the whole gradient. */
Test(layernorm, part_slices_make_the_whole)
{
	const float x[8] = {1, 2, 3, 4, 2, -1, 0.5f, 2}, g[4] = {1.5f, 0.5f, 1, 2}, b[4] = {0.5f, -0.5f, 0, 1};
	const float dy[8] = {0.3f, -0.2f, 0.1f, 0.4f, -0.5f, 0.2f, 0.7f, -0.1f};
	float y[8], dx[8], dg[4], db[4], mean[2], var[2];
	sc_cpu_norm(1, x, g, b, y, (const int64_t[]){2, 4}, 2, 1, 1, 1e-3);
	sc_cpu_norm_grad(1, dy, x, g, dx, dg, db, (const int64_t[]){2, 4}, 2, 1, 1, 1e-3);
	for (int r = 0; r < 2; r++) {
		mean[r] = (x[4 * r] + x[4 * r + 1] + x[4 * r + 2] + x[4 * r + 3]) / 4;
		var[r] = 0;
		for (int j = 0; j < 4; j++)
			var[r] += (x[4 * r + j] - mean[r]) * (x[4 * r + j] - mean[r]) / 4;
	}
	float py[8], pdx[8], pdg[4], pdb[4], dmean[2] = {0, 0}, dvar[2] = {0, 0};
	for (int s = 0; s < 2; s++) {
		float xs[4], dys[4], ys[4], dxs[4], dms[2], dvs[2];
		for (int r = 0; r < 2; r++)
			for (int j = 0; j < 2; j++)
				xs[2 * r + j] = x[4 * r + 2 * s + j], dys[2 * r + j] = dy[4 * r + 2 * s + j];
		sc_cpu_norm_part(1, xs, g + 2 * s, b + 2 * s, mean, var, ys, 2, 2, 1e-3);
		sc_cpu_norm_part_grad(1, dys, xs, g + 2 * s, mean, var, dxs, pdg + 2 * s, pdb + 2 * s, dms, dvs, 2, 2,
		                      1e-3);
		for (int r = 0; r < 2; r++) {
			dmean[r] += dms[r];
			dvar[r] += dvs[r];
			for (int j = 0; j < 2; j++)
				py[4 * r + 2 * s + j] = ys[2 * r + j], pdx[4 * r + 2 * s + j] = dxs[2 * r + j];
		}
	}
	for (int r = 0; r < 2; r++)
		for (int j = 0; j < 4; j++)
			pdx[4 * r + j] += dmean[r] / 4 + dvar[r] * 2 * (x[4 * r + j] - mean[r]) / 4;
	CLOSE(py, y, 8, "the slices' pieces are the whole LayerNorm");
	CLOSE(pdx, dx, 8, "the pieces' gradients through the statistics are the whole gradient");
	CLOSE(pdg, dg, 4, "gamma's gradient");
	CLOSE(pdb, db, 4, "beta's gradient");
}

/* gamma and beta of size np repeat every np elements (np a divisor or a
 * multiple of the normalized block): every begin_norm_axis and
 * begin_params_axis of a (2, 3, 8), against the formula in doubles; beta
 * NULL adds none */
static void every_axis_pair(int centered, int with_beta)
{
	enum { N = 2 * 3 * 8 };
	const int64_t d[3] = {2, 3, 8};
	float x[N], g[N], b[N], y[N], want[N];
	uint64_t s = 3;
	t_fill(x, N, &s, -2, 2);
	t_fill(g, N, &s, 0.5f, 1.5f);
	t_fill(b, N, &s, -1, 1);
	for (int bna = 0; bna < 3; bna++)
		for (int bpa = 0; bpa < 3; bpa++) {
			int64_t cols = t_numel(d + bna, 3 - bna), np = t_numel(d + bpa, 3 - bpa);
			for (int64_t r = 0; r < N / cols; r++) {
				double mean = 0, var = 0;
				for (int64_t j = 0; centered && j < cols; j++)
					mean += x[r * cols + j] / (double)cols;
				for (int64_t j = 0; j < cols; j++)
					var += (x[r * cols + j] - mean) * (x[r * cols + j] - mean) / (double)cols;
				for (int64_t j = 0; j < cols; j++) {
					int64_t i = r * cols + j;
					want[i] = (float)((x[i] - mean) / sqrt(var + 1e-5) * g[i % np] + (with_beta ? b[i % np] : 0));
				}
			}
			sc_cpu_norm(centered, x, g, with_beta ? b : NULL, y, d, 3, bna, bpa, 1e-5);
			cr_assert(t_close(centered ? "LayerNorm" : "RmsNorm", y, want, N, 1e-6, 1e-6),
			          "begin_norm_axis %d begin_params_axis %d beta %d", bna, bpa, with_beta);
		}
}

Test(layernorm, every_axis_pair_against_double_reference) { every_axis_pair(1, 1); }

Test(rmsnorm, by_hand)
{
	/* x / sqrt(mean(x^2) + eps) gamma: rows' mean squares 7.5 and 4 */
	const float x[8] = {1, 2, 3, 4, 2, 2, 2, 2};
	float y[8];
	const float g4[4] = {2, 2, 2, 2};
	sc_cpu_norm(0, x, g4, NULL, y, (const int64_t[]){2, 4}, 2, 1, 1, 1e-5);
	CLOSE(y, ((const float[]){0.73029626f, 1.46059251f, 2.19088877f, 2.92118503f, 1.9999975f, 1.9999975f, 1.9999975f,
	                          1.9999975f}),
	      8, "RmsNorm");
	const float g8[8] = {1, 1, 1, 1, 0, 0, 0, 0}, b8[8] = {0, 0, 0, 0, 1, 2, 3, 4};
	sc_cpu_norm(0, x, g8, b8, y, (const int64_t[]){2, 4}, 2, -1, 0, 1e-5);
	CLOSE(y, ((const float[]){0.36514813f, 0.73029626f, 1.09544438f, 1.46059251f, 1, 2, 3, 4}), 8,
	      "RmsNorm with (2, 4) params and a beta");
}

Test(rmsnorm, every_axis_pair_against_double_reference)
{
	every_axis_pair(0, 0);
	every_axis_pair(0, 1);
}

/* As for LayerNorm: given the whole rows' mean square, the slices' pieces
 * are the whole RmsNorm (no beta), and their gradients, the mean square's
 * taken back through ms = sum(x^2) / cols, add up to the whole gradient. */
Test(rmsnorm, part_slices_make_the_whole)
{
	const float x[8] = {1, 2, 3, 4, 2, -1, 0.5f, 2}, g[4] = {1.5f, 0.5f, 1, 2};
	const float dy[8] = {0.3f, -0.2f, 0.1f, 0.4f, -0.5f, 0.2f, 0.7f, -0.1f};
	float y[8], dx[8], dg[4], ms[2];
	sc_cpu_norm(0, x, g, NULL, y, (const int64_t[]){2, 4}, 2, 1, 1, 1e-3);
	sc_cpu_norm_grad(0, dy, x, g, dx, dg, NULL, (const int64_t[]){2, 4}, 2, 1, 1, 1e-3);
	for (int r = 0; r < 2; r++) {
		ms[r] = 0;
		for (int j = 0; j < 4; j++)
			ms[r] += x[4 * r + j] * x[4 * r + j] / 4;
	}
	float py[8], pdx[8], pdg[4], dms[2] = {0, 0};
	for (int s = 0; s < 2; s++) {
		float xs[4], dys[4], ys[4], dxs[4], dvs[2];
		for (int r = 0; r < 2; r++)
			for (int j = 0; j < 2; j++)
				xs[2 * r + j] = x[4 * r + 2 * s + j], dys[2 * r + j] = dy[4 * r + 2 * s + j];
		sc_cpu_norm_part(0, xs, g + 2 * s, NULL, NULL, ms, ys, 2, 2, 1e-3);
		sc_cpu_norm_part_grad(0, dys, xs, g + 2 * s, NULL, ms, dxs, pdg + 2 * s, NULL, NULL, dvs, 2, 2, 1e-3);
		for (int r = 0; r < 2; r++) {
			dms[r] += dvs[r];
			for (int j = 0; j < 2; j++)
				py[4 * r + 2 * s + j] = ys[2 * r + j], pdx[4 * r + 2 * s + j] = dxs[2 * r + j];
		}
	}
	for (int r = 0; r < 2; r++)
		for (int j = 0; j < 4; j++)
			pdx[4 * r + j] += dms[r] * 2 * x[4 * r + j] / 4;
	CLOSE(py, y, 8, "the slices' pieces are the whole RmsNorm");
	CLOSE(pdx, dx, 8, "the pieces' gradients through the mean square are the whole gradient");
	CLOSE(pdg, dg, 4, "gamma's gradient");
}

Test(concat, along_axis_1)
{
	const float a[2] = {1, 2}, b[4] = {3, 4, 5, 6};   /* (2, 1), (2, 2) */
	float y[6];
	sc_cpu_concat(SC_F32, (const void *const[]){a, b}, (const int64_t[]){1, 2}, 2, y, (const int64_t[]){2, 3}, 2, 1);
	CLOSE(y, ((const float[]){1, 3, 4, 2, 5, 6}), 6, "concat axis 1");
	sc_cpu_concat(SC_F32, (const void *const[]){b, a}, (const int64_t[]){2, 1}, 2, y, (const int64_t[]){3, 2}, 2, 0);
	cr_assert_eq(y[4], 1);
}

Test(strided_slice, numpy_rules)
{
	float x[20], y[6];
	for (int i = 0; i < 20; i++)
		x[i] = (float)i;   /* (4, 5) */
	const int64_t d[2] = {4, 5};
	/* x[1:4:2, -4:5:2] */
	sc_cpu_strided_slice(SC_F32, x, y, d, 2, (const int64_t[]){1, -4}, (const int64_t[]){4, 5},
	                     (const int64_t[]){2, 2});
	CLOSE(y, ((const float[]){6, 8, 16, 18}), 4, "x[1:4:2, -4:5:2]");
	/* x[-10:2, 1:-1] clamps the begin */
	sc_cpu_strided_slice(SC_F32, x, y, d, 2, (const int64_t[]){-10, 1}, (const int64_t[]){2, -1},
	                     (const int64_t[]){1, 1});
	CLOSE(y, ((const float[]){1, 2, 3, 6, 7, 8}), 6, "x[-10:2, 1:-1]");
}

/* An uneven split's pieces: x of n along a dim split k ways, piece s is
 * [s c, s c + c) with c = ceil(n / k); what lies at or past n reads 0. */
Test(strided_slice, past_the_end_f32)
{
	float x[15], y[12];
	for (int i = 0; i < 15; i++)
		x[i] = (float)(i + 1);   /* (5, 3): no element is 0, so a 0 is padding */
	const int64_t d[2] = {5, 3};
	/* dim 0 split 2 ways: c = 3, the last piece [3, 6) */
	sc_cpu_strided_slice(SC_F32, x, y, d, 2, (const int64_t[]){3, 0}, (const int64_t[]){6, 3},
	                     (const int64_t[]){1, 1});
	CLOSE(y, ((const float[]){10, 11, 12, 13, 14, 15, 0, 0, 0}), 9, "x[3:6, :] of (5, 3) is (3, 3)");
	/* (3, 5, 2) split 3 ways along the middle dim: c = 2, the last piece [4, 6) */
	float z[30];
	for (int i = 0; i < 30; i++)
		z[i] = (float)(i + 1);
	sc_cpu_strided_slice(SC_F32, z, y, (const int64_t[]){3, 5, 2}, 3, (const int64_t[]){0, 4, 0},
	                     (const int64_t[]){3, 6, 2}, (const int64_t[]){1, 1, 1});
	CLOSE(y, ((const float[]){9, 10, 0, 0, 19, 20, 0, 0, 29, 30, 0, 0}), 12, "z[:, 4:6, :] is (3, 2, 2)");
	/* a stride past the end: x[1:8:3, 1:3] reads rows 1 and 4, row 7 is padding */
	sc_cpu_strided_slice(SC_F32, x, y, d, 2, (const int64_t[]){1, 1}, (const int64_t[]){8, 3},
	                     (const int64_t[]){3, 1});
	CLOSE(y, ((const float[]){5, 6, 14, 15, 0, 0}), 6, "x[1:8:3, 1:3] of (5, 3) is (3, 2)");
}

Test(strided_slice, wholly_past_the_end)
{
	/* 2 rows split 4 ways: c = 1, pieces 2 and 3 hold only padding */
	float x[6] = {1, 2, 3, 4, 5, 6}, y[3] = {7, 7, 7};
	for (int64_t s = 2; s < 4; s++) {
		sc_cpu_strided_slice(SC_F32, x, y, (const int64_t[]){2, 3}, 2, (const int64_t[]){s, 0},
		                     (const int64_t[]){s + 1, 3}, (const int64_t[]){1, 1});
		CLOSE(y, ((const float[]){0, 0, 0}), 3, "a piece wholly past x is zeros");
		y[0] = y[1] = y[2] = 7;
	}
	int32_t xi[6] = {1, 2, 3, 4, 5, 6}, yi[4] = {-1, -1, -1, -1};
	sc_cpu_strided_slice(SC_I32, xi, yi, (const int64_t[]){3, 2}, 2, (const int64_t[]){0, 5},
	                     (const int64_t[]){2, 7}, (const int64_t[]){1, 1});
	for (int i = 0; i < 4; i++)
		cr_assert_eq(yi[i], 0, "xi[0:2, 5:7] of (3, 2): element %d", i);
}

Test(strided_slice, past_the_end_bf16_i32)
{
	/* bfloat16 -0 (0x8000) and NaN (0x7fc1) move as they are; padding is +0 */
	const uint16_t h[6] = {0x3f80, 0x4000, 0x4040, 0x4080, 0x8000, 0x7fc1};   /* (3, 2) */
	uint16_t hy[8];
	memset(hy, 0xff, sizeof hy);
	sc_cpu_strided_slice(SC_BF16, h, hy, (const int64_t[]){3, 2}, 2, (const int64_t[]){2, 0},
	                     (const int64_t[]){4, 2}, (const int64_t[]){1, 1});
	const uint16_t want0[4] = {0x8000, 0x7fc1, 0, 0};
	for (int i = 0; i < 4; i++)
		cr_assert_eq(hy[i], want0[i], "h[2:4, :] element %d: %#x", i, hy[i]);
	/* (2, 3, 2) split 2 ways along the middle dim: c = 2, the last piece [2, 4) */
	uint16_t g[12];
	for (int i = 0; i < 12; i++)
		g[i] = (uint16_t)(0x3f80 + i);
	memset(hy, 0xff, sizeof hy);
	sc_cpu_strided_slice(SC_BF16, g, hy, (const int64_t[]){2, 3, 2}, 3, (const int64_t[]){0, 2, 0},
	                     (const int64_t[]){2, 4, 2}, (const int64_t[]){1, 1, 1});
	const uint16_t want1[8] = {0x3f84, 0x3f85, 0, 0, 0x3f8a, 0x3f8b, 0, 0};
	for (int i = 0; i < 8; i++)
		cr_assert_eq(hy[i], want1[i], "g[:, 2:4, :] element %d: %#x", i, hy[i]);
	int32_t xi[12], yi[8];
	for (int i = 0; i < 12; i++)
		xi[i] = -(i + 1);
	memset(yi, 0xff, sizeof yi);
	sc_cpu_strided_slice(SC_I32, xi, yi, (const int64_t[]){2, 3, 2}, 3, (const int64_t[]){0, 2, 0},
	                     (const int64_t[]){2, 4, 2}, (const int64_t[]){1, 1, 1});
	const int32_t wanti[8] = {-5, -6, 0, 0, -11, -12, 0, 0};
	for (int i = 0; i < 8; i++)
		cr_assert_eq(yi[i], wanti[i], "xi[:, 2:4, :] element %d: %d", i, yi[i]);
	/* dim 0 of (5,) split 2 ways: [3, 6) */
	memset(yi, 0xff, sizeof yi);
	sc_cpu_strided_slice(SC_I32, xi, yi, (const int64_t[]){5}, 1, (const int64_t[]){3}, (const int64_t[]){6},
	                     (const int64_t[]){1});
	cr_assert(yi[0] == -4 && yi[1] == -5 && yi[2] == 0 && yi[3] == -1, "xi[3:6] of (5,), yi[3] untouched");
}

/* A slice inside x is what it was: the first pieces of an uneven split, and
 * an end exactly at dims, agree with a naive loop and leave y's tail alone. */
Test(strided_slice, in_range_unchanged)
{
	float x[15], y[10], want[10];
	for (int i = 0; i < 15; i++)
		x[i] = (float)(i + 1);   /* (5, 3) */
	const int64_t d[2] = {5, 3};
	for (int64_t b = 0; b < 3; b += 2) {   /* pieces [0, 3) and [2, 5) */
		for (int i = 0; i < 10; i++)
			y[i] = want[i] = -1;
		for (int r = 0; r < 3; r++)
			for (int c = 0; c < 3; c++)
				want[r * 3 + c] = x[(b + r) * 3 + c];
		sc_cpu_strided_slice(SC_F32, x, y, d, 2, (const int64_t[]){b, 0}, (const int64_t[]){b + 3, 3},
		                     (const int64_t[]){1, 1});
		CLOSE(y, want, 10, "x[b:b+3, :] is (3, 3), y[9] untouched");
	}
	/* a negative begin keeps numpy's clamp of the end: x[-2:9, 0:1] is (2, 1) */
	y[2] = -1;
	sc_cpu_strided_slice(SC_F32, x, y, d, 2, (const int64_t[]){-2, 0}, (const int64_t[]){9, 1},
	                     (const int64_t[]){1, 1});
	CLOSE(y, ((const float[]){10, 13, -1}), 3, "x[-2:9, 0:1] clamps: (2, 1)");
}

Test(strided_slice, grad_drops_past_the_end)
{
	float dx[15];
	const int64_t d[2] = {5, 3};
	/* the last piece [3, 6) of dim 0: dy's row 2 has no place in dx */
	const float dy0[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
	for (int i = 0; i < 15; i++)
		dx[i] = 99;
	sc_cpu_strided_slice_grad(dy0, dx, d, 2, (const int64_t[]){3, 0}, (const int64_t[]){6, 3},
	                          (const int64_t[]){1, 1});
	CLOSE(dx, ((const float[]){0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6}), 15, "dx of x[3:6, :]");
	/* the middle dim of (2, 3, 2), [2, 4): dy (2, 2, 2) */
	const float dy1[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	float dz[12];
	sc_cpu_strided_slice_grad(dy1, dz, (const int64_t[]){2, 3, 2}, 3, (const int64_t[]){0, 2, 0},
	                          (const int64_t[]){2, 4, 2}, (const int64_t[]){1, 1, 1});
	CLOSE(dz, ((const float[]){0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 5, 6}), 12, "dz of z[:, 2:4, :]");
	/* wholly past: dx is all zeros */
	for (int i = 0; i < 15; i++)
		dx[i] = 99;
	sc_cpu_strided_slice_grad(dy0, dx, d, 2, (const int64_t[]){5, 0}, (const int64_t[]){8, 3},
	                          (const int64_t[]){1, 1});
	for (int i = 0; i < 15; i++)
		cr_assert_eq(dx[i], 0, "dx[%d] of x[5:8, :]", i);
	/* the slice and its gradient are adjoint: <slice(x), dy> == <x, grad(dy)> */
	float x[15], y[9];
	for (int i = 0; i < 15; i++)
		x[i] = (float)(i + 1);
	sc_cpu_strided_slice(SC_F32, x, y, d, 2, (const int64_t[]){3, 0}, (const int64_t[]){6, 3},
	                     (const int64_t[]){1, 1});
	sc_cpu_strided_slice_grad(dy0, dx, d, 2, (const int64_t[]){3, 0}, (const int64_t[]){6, 3},
	                          (const int64_t[]){1, 1});
	double a = 0, b = 0;
	for (int i = 0; i < 9; i++)
		a += (double)y[i] * dy0[i];
	for (int i = 0; i < 15; i++)
		b += (double)x[i] * dx[i];
	cr_assert_eq(a, b, "<slice(x), dy> %g, <x, grad(dy)> %g", a, b);
}

Test(cast, every_way)
{
	const float f[4] = {-1.7f, 2.9f, 0, 3e9f};
	int32_t i[4];
	int64_t l[4];
	uint8_t b[4];
	float back[4];
	sc_cpu_cast(f, SC_F32, i, SC_I32, 4);
	cr_assert(i[0] == -1 && i[1] == 2 && i[2] == 0 && i[3] == INT32_MAX);
	sc_cpu_cast(f, SC_F32, b, SC_BOOL, 4);
	cr_assert(b[0] == 1 && b[1] == 1 && b[2] == 0);
	sc_cpu_cast(i, SC_I32, l, SC_I64, 4);
	cr_assert(l[0] == -1 && l[3] == INT32_MAX);
	sc_cpu_cast(l, SC_I64, back, SC_F32, 3);
	CLOSE(back, ((const float[]){-1, 2, 0}), 3, "int64 to float");
	sc_cpu_cast(b, SC_BOOL, back, SC_F32, 3);
	CLOSE(back, ((const float[]){1, 1, 0}), 3, "bool to float");
}

/* Float16 and BFloat16 bits from numpy (np.float16; tools/ref_eval.py's
 * round_bf16 for bfloat16) of these float32s */
static const float HX[8] = {1.0f / 3, 65504, 65520, 6e-8f, -2.5f, 1e-3f, -1.7f, 2.9f};
static const uint16_t HX_F16[8] = {0x3555, 0x7bff, 0x7c00, 0x0001, 0xc100, 0x1419, 0xbecd, 0x41cd};
static const uint16_t HX_BF16[8] = {0x3eab, 0x4780, 0x4780, 0x3381, 0xc020, 0x3a83, 0xbfda, 0x403a};

Test(cast, float16_and_bfloat16)
{
	uint16_t h[8], b[8], hb[8], bh[8];
	float back[8];
	sc_cpu_cast(HX, SC_F32, h, SC_F16, 8);
	sc_cpu_cast(HX, SC_F32, b, SC_BF16, 8);
	cr_assert_eq(memcmp(h, HX_F16, sizeof h), 0, "float32 to float16 as numpy");
	cr_assert_eq(memcmp(b, HX_BF16, sizeof b), 0, "float32 to bfloat16 as ref_eval.py");
	sc_cpu_cast(h, SC_F16, back, SC_F32, 8);
	cr_assert_eq(memcmp(back, ((const float[]){0.333251953125f, 65504, INFINITY, 0x1p-24f, -2.5f,
	                                           0.0010004043579101562f, -1.7001953125f, 2.900390625f}), sizeof back),
	             0, "float16 to float32, exact");
	sc_cpu_cast(b, SC_BF16, back, SC_F32, 8);
	cr_assert_eq(memcmp(back, ((const float[]){0.333984375f, 65536, 65536, 6.007030606269836e-08f, -2.5f,
	                                           0.00099945068359375f, -1.703125f, 2.90625f}), sizeof back),
	             0, "bfloat16 to float32, exact");
	/* one to the other goes through float32 (numpy) */
	sc_cpu_cast(h, SC_F16, hb, SC_BF16, 8);
	cr_assert_eq(memcmp(hb, ((const uint16_t[]){0x3eab, 0x4780, 0x7f80, 0x3380, 0xc020, 0x3a83, 0xbfda, 0x403a}),
	                    sizeof hb), 0, "float16 to bfloat16");
	sc_cpu_cast(b, SC_BF16, bh, SC_F16, 8);
	cr_assert_eq(memcmp(bh, ((const uint16_t[]){0x3558, 0x7c00, 0x7c00, 0x0001, 0xc100, 0x1418, 0xbed0, 0x41d0}),
	                    sizeof bh), 0, "bfloat16 to float16");
	/* to integers: through float32, truncated toward zero, saturated, NaN 0; to bool: != 0 */
	const uint16_t hs[6] = {0xbecd, 0x41cd, 0x7bff, 0x7c00, 0x7e00, 0x8000};   /* -1.7 2.9 65504 inf NaN -0 */
	int32_t i[6];
	int64_t l[6];
	uint8_t t[6];
	sc_cpu_cast(hs, SC_F16, i, SC_I32, 6);
	cr_assert(i[0] == -1 && i[1] == 2 && i[2] == 65504 && i[3] == INT32_MAX && i[4] == 0 && i[5] == 0);
	sc_cpu_cast(hs, SC_F16, l, SC_I64, 6);
	cr_assert(l[0] == -1 && l[1] == 2 && l[2] == 65504 && l[3] == INT64_MAX && l[4] == 0);
	sc_cpu_cast(hs, SC_F16, t, SC_BOOL, 6);
	cr_assert(t[0] == 1 && t[1] == 1 && t[3] == 1 && t[4] == 1 && t[5] == 0);
	sc_cpu_cast(b, SC_BF16, i, SC_I32, 6);
	cr_assert(i[0] == 0 && i[1] == 65536 && i[4] == -2 && i[5] == 0);
	/* from integers (numpy: through float64) and bool */
	sc_cpu_cast((const int32_t[]){1, -3, 65519, 70000, 2049, 2051, -2051}, SC_I32, h, SC_F16, 7);
	cr_assert_eq(memcmp(h, ((const uint16_t[]){0x3c00, 0xc200, 0x7bff, 0x7c00, 0x6800, 0x6802, 0xe802}), 14), 0,
	             "int32 to float16: ties to even, overflow to inf");
	sc_cpu_cast((const int64_t[]){257, 259, 1ll << 40, -(1ll << 20) - (1 << 12)}, SC_I64, b, SC_BF16, 4);
	cr_assert_eq(memcmp(b, ((const uint16_t[]){0x4380, 0x4382, 0x5380, 0xc980}), 8), 0, "int64 to bfloat16");
	sc_cpu_cast((const uint8_t[]){1, 0}, SC_BOOL, h, SC_F16, 2);
	cr_assert(h[0] == 0x3c00 && h[1] == 0);
}

Test(cast, every_half_value_round_trips)
{
	static uint16_t h[65536], back[65536];
	static float f[65536];
	for (int k = 0; k < 2; k++) {
		sc_dtype dt = k ? SC_BF16 : SC_F16;
		uint16_t inf = k ? 0x7f80 : 0x7c00;
		for (int i = 0; i < 65536; i++)
			h[i] = (uint16_t)i;
		sc_cpu_cast(h, dt, f, SC_F32, 65536);
		sc_cpu_cast(f, SC_F32, back, dt, 65536);
		int bad = 0;
		for (int i = 0; i < 65536; i++) {
			bool nan = (h[i] & 0x7fff) > inf;
			bad += nan ? !isnan(f[i]) || (back[i] & 0x7fff) <= inf : back[i] != h[i];
		}
		cr_assert_eq(bad, 0, "%s: %d values do not survive float32 and back", k ? "bfloat16" : "float16", bad);
	}
	/* integers of float16's exact range survive a trip through it */
	static int32_t n[4097], nb[4097];
	for (int i = 0; i < 4097; i++)
		n[i] = i - 2048;
	sc_cpu_cast(n, SC_I32, h, SC_F16, 4097);
	sc_cpu_cast(h, SC_F16, nb, SC_I32, 4097);
	cr_assert_eq(memcmp(n, nb, sizeof n), 0);
}

Test(fill, dtypes)
{
	float f[3];
	int32_t i[3];
	uint16_t h[3], b[3];
	sc_cpu_fill(f, SC_F32, 3, 0.25);
	sc_cpu_fill(i, SC_I32, 3, 7);
	cr_assert(f[2] == 0.25f && i[0] == 7 && i[2] == 7);
	sc_cpu_fill(h, SC_F16, 3, 0.1);   /* numpy: float16(0.1) 0x2e66, bfloat16 0x3dcd */
	sc_cpu_fill(b, SC_BF16, 3, 0.1);
	cr_assert(h[0] == 0x2e66 && h[2] == 0x2e66 && b[1] == 0x3dcd);
	sc_cpu_fill(h, SC_F16, 1, 1e6);
	cr_assert_eq(h[0], 0x7c00, "a constant past float16's range is inf");
}

Test(movement, two_byte_elements)
{
	/* transpose, concat and strided slice move 2-byte elements as they are (any bits, NaNs included) */
	uint16_t x[24], y[24], z[24];
	for (int i = 0; i < 24; i++)
		x[i] = (uint16_t)(0x7c01 + 1000 * i);
	const int64_t d[3] = {2, 3, 4};
	sc_cpu_transpose(SC_F16, x, y, d, 3, (const int[]){2, 0, 1});   /* y (4, 2, 3) */
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 3; j++)
			for (int k = 0; k < 4; k++)
				cr_assert_eq(y[(k * 2 + i) * 3 + j], x[(i * 3 + j) * 4 + k]);
	/* (2, 3, 4) as (2, 1, 4) and (2, 2, 4) along axis 1 */
	uint16_t a[8], b[16];
	for (int i = 0; i < 2; i++) {
		memcpy(a + 4 * i, x + 12 * i, 8);
		memcpy(b + 8 * i, x + 12 * i + 4, 16);
	}
	sc_cpu_concat(SC_BF16, (const void *const[]){a, b}, (const int64_t[]){1, 2}, 2, z, d, 3, 1);
	cr_assert_eq(memcmp(z, x, sizeof x), 0, "concat");
	/* x[:, 1:, ::3] of (2, 3, 4): (2, 2, 2) */
	sc_cpu_strided_slice(SC_F16, x, y, d, 3, (const int64_t[]){0, 1, 0}, (const int64_t[]){2, 3, 4},
	                     (const int64_t[]){1, 1, 3});
	const int want[8] = {4, 7, 8, 11, 16, 19, 20, 23};
	for (int i = 0; i < 8; i++)
		cr_assert_eq(y[i], x[want[i]]);
}

/* ---- losses ---- */

Test(loss, sparse_softmax_ce)
{
	const float logits[6] = {1, 2, 3, 1, 1, 1};
	float loss;
	sc_cpu_sparse_softmax_ce(logits, (const int32_t[]){2, 0}, SC_I32, &loss, 2, 3);
	CLOSE(&loss, ((const float[]){0.75310913f}), 1, "mean of -log p[label]");   /* numpy */
	sc_cpu_sparse_softmax_ce(logits, (const int64_t[]){2, 5}, SC_I64, &loss, 2, 3);
	CLOSE(&loss, ((const float[]){0.40760596f / 2}), 1, "a label out of range adds nothing");
}

/* Classes split in two slices: the pieces, given each row's maximum and sum
 * over all the classes, add up to each row's loss, and their gradients are
 * the whole gradient (rows' dloss 1/n: the mean's). */
Test(loss, sparse_softmax_ce_part)
{
	const float logits[8] = {1, 2, 3, 0, 1, 1, 1, 5};   /* 2 rows of 4 classes */
	const int32_t labels[2] = {2, 0};
	const int64_t labels64[2] = {2, 0};
	float mx[2], sum[2] = {0, 0}, whole, rows[2][2], g[8], part[2][4];
	for (int i = 0; i < 2; i++) {
		mx[i] = fmaxf(fmaxf(logits[4 * i], logits[4 * i + 1]), fmaxf(logits[4 * i + 2], logits[4 * i + 3]));
		for (int j = 0; j < 4; j++)
			sum[i] += expf(logits[4 * i + j] - mx[i]);
	}
	sc_cpu_sparse_softmax_ce(logits, labels, SC_I32, &whole, 2, 4);
	const float dl = 1, drows[2] = {0.5f, 0.5f};
	sc_cpu_sparse_softmax_ce_grad(logits, labels64, SC_I64, &dl, g, 2, 4);
	for (int s = 0; s < 2; s++) {
		float slice[4] = {logits[2 * s], logits[2 * s + 1], logits[4 + 2 * s], logits[4 + 2 * s + 1]};
		sc_cpu_sparse_softmax_ce_part(slice, labels, SC_I32, mx, sum, rows[s], 2, 2, 2 * s);
		sc_cpu_sparse_softmax_ce_part_grad(slice, labels64, SC_I64, mx, sum, drows, part[s], 2, 2, 2 * s, 4);
	}
	const float mean = (rows[0][0] + rows[1][0] + rows[0][1] + rows[1][1]) / 2;
	CLOSE(&mean, &whole, 1, "the slices' rows add up to the loss");
	cr_expect(rows[0][0] == 0 && rows[1][1] == 0, "a slice without the label adds nothing");
	const float joined[8] = {part[0][0], part[0][1], part[1][0], part[1][1], part[0][2], part[0][3], part[1][2],
	                         part[1][3]};
	CLOSE(joined, g, 8, "the slices' gradients are the whole gradient");
}

Test(loss, softmax_ce)
{
	const float logits[6] = {1, 2, 3, 1, 1, 1}, labels[6] = {0, 0, 1, 0.5f, 0.25f, 0.25f}, dl[2] = {0.5f, -2};
	float loss[2], g[6], in_place[6];
	sc_cpu_softmax_ce(logits, labels, loss, 2, 3);
	CLOSE(loss, ((const float[]){0.40760596f, 1.0986123f}), 2, "-sum labels log p, each row");   /* numpy */
	sc_cpu_softmax_ce_grad(logits, labels, dl, g, 2, 3);
	memcpy(in_place, logits, sizeof logits);
	sc_cpu_softmax_ce_grad(in_place, labels, dl, in_place, 2, 3);
	CLOSE(in_place, g, 6, "the gradient written over the logits");
	CLOSE(g + 3, ((const float[]){1.f / 3, -1.f / 6, -1.f / 6}), 3, "(softmax - labels) dloss");
}

Test(loss, kldiv_by_hand)
{
	/* y (log y - x): y 0 gives 0 (MindSpore's NaN made 0), y 1 gives -x */
	const float x[4] = {-1.0f, -2.0f, 0.5f, -0.25f}, y[4] = {0.0f, 1.0f, 0.5f, 2.0f};
	float e[4], s, g[4], dl = 2.0f;
	const float want[4] = {0.0f, 2.0f, 0.5f * (logf(0.5f) - 0.5f), 2.0f * (logf(2.0f) + 0.25f)};
	sc_cpu_kldiv_loss(x, y, e, 4, 0, 1);
	CLOSE(e, want, 4, "kldiv none");
	sc_cpu_kldiv_loss(x, y, &s, 4, 1, 0.25);
	float mean = (want[0] + want[1] + want[2] + want[3]) / 4;
	CLOSE(&s, &mean, 1, "kldiv mean");
	sc_cpu_kldiv_loss_grad(y, &dl, g, 4, 1, 0.25);
	CLOSE(g, ((const float[]){0, -0.5f, -0.25f, -1.0f}), 4, "kldiv mean gradient: -y dy / 4");
	sc_cpu_kldiv_loss_grad(y, y, g, 4, 0, 1);
	CLOSE(g, ((const float[]){0, -1.0f, -0.25f, -4.0f}), 4, "kldiv none gradient: -y dy");
}

Test(loss, mse_l1)
{
	const float p[3] = {1, 2, 3}, t[3] = {1, 0, 0};
	float loss;
	sc_cpu_mse_loss(p, t, &loss, 3);
	CLOSE(&loss, ((const float[]){13.f / 3}), 1, "mse");
	sc_cpu_l1_loss(p, t, &loss, 3);
	CLOSE(&loss, ((const float[]){5.f / 3}), 1, "l1");
}

/* ---- optimizers ---- */

Test(optimizer, sgd_momentum)
{
	float p[2] = {1, -2}, v[2] = {0.5f, 0};
	const float g[2] = {0.1f, -0.4f};
	sc_cpu_sgd(p, g, NULL, 2, 0.5, 0, 0, 0, 0, 1);
	CLOSE(p, ((const float[]){0.95f, -1.8f}), 2, "sgd");
	sc_cpu_sgd(p, g, NULL, 2, 0.5, 0, 0, 0.1, 0, 2);   /* g + 0.1 p */
	CLOSE(p, ((const float[]){0.95f - 0.5f * (0.1f + 0.095f), -1.8f - 0.5f * (-0.4f - 0.18f)}), 2, "sgd decay");
	p[0] = 1, p[1] = -2;
	sc_cpu_momentum(p, g, v, 2, 0.2, 0.9, 0, 0);   /* v = 0.9 v + g; p -= 0.2 v */
	CLOSE(v, ((const float[]){0.55f, -0.4f}), 2, "momentum v");
	CLOSE(p, ((const float[]){0.89f, -1.92f}), 2, "momentum p");
	p[0] = 1, p[1] = -2, v[0] = 0.5f, v[1] = 0;
	sc_cpu_momentum(p, g, v, 2, 0.2, 0.9, 0.1, 1);   /* g' = g + 0.1 p; v = 0.9 v + g'; p -= 0.2 (g' + 0.9 v) */
	CLOSE(v, ((const float[]){0.65f, -0.6f}), 2, "nesterov momentum v");
	CLOSE(p, ((const float[]){1 - 0.2f * (0.2f + 0.9f * 0.65f), -2 - 0.2f * (-0.6f - 0.9f * 0.6f)}), 2,
	      "nesterov momentum p");
}

Test(optimizer, sgd_options_match_mindspore_kernel)
{
	/* nn.SGD(momentum 0.9, dampening 0.1, weight_decay 0.01) and with nesterov
	 * (dampening 0), three steps against the SGD kernel's loop in double:
	 * the first step sets the accumulation to the gradient. */
	for (int nesterov = 0; nesterov <= 1; nesterov++) {
		float p[3] = {1, -0.5f, 0.2f}, a[3] = {7, 7, 7};
		double pd[3] = {1, -0.5, 0.2}, ad[3];
		const double lr = 0.1, mu = 0.9, damp = nesterov ? 0 : 0.1, wd = 0.01;
		for (int t = 1; t <= 3; t++) {
			float g[3] = {0.5f * t, -0.25f, 0.01f * t};
			sc_cpu_sgd(p, g, a, 3, lr, mu, damp, wd, nesterov, t);
			for (int i = 0; i < 3; i++) {
				double gi = g[i] + wd * pd[i];
				ad[i] = t == 1 ? gi : mu * ad[i] + (1 - damp) * gi;
				gi = nesterov ? gi + mu * ad[i] : ad[i];
				pd[i] -= lr * gi;
			}
		}
		float want[3] = {(float)pd[0], (float)pd[1], (float)pd[2]};
		CLOSE(p, want, 3, nesterov ? "sgd nesterov" : "sgd momentum dampening");
	}
}

Test(optimizer, adam_weight_decay_has_no_bias_correction)
{
	float p[3] = {1, -0.5f, 0.2f}, m[3] = {0}, v[3] = {0};
	double pd[3] = {1, -0.5, 0.2}, md[3] = {0}, vd[3] = {0};
	const double lr = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-6, wd = 0.1;
	for (int t = 1; t <= 3; t++) {
		float g[3] = {0.5f * t, -0.25f, 0.01f * t};
		sc_cpu_adam_weight_decay(p, g, m, v, 3, lr, b1, b2, eps, wd);
		for (int i = 0; i < 3; i++) {
			md[i] = b1 * md[i] + (1 - b1) * g[i];
			vd[i] = b2 * vd[i] + (1 - b2) * g[i] * g[i];
			pd[i] -= lr * (md[i] / (sqrt(vd[i]) + eps) + wd * pd[i]);
		}
	}
	float want[3] = {(float)pd[0], (float)pd[1], (float)pd[2]};
	CLOSE(p, want, 3, "adamw after 3 steps");
	/* without bias correction the first step is lr (1-b1)/sqrt(1-b2) ~ 3.16 lr */
	float q = 1, mq = 0, vq = 0;
	sc_cpu_adam_weight_decay(&q, (const float[]){1}, &mq, &vq, 1, 0.01, 0.9, 0.999, 1e-6, 0);
	cr_assert(fabsf(q - (1 - 0.01f * 0.1f / sqrtf(0.001f))) < 1e-5f);
}

/* nn.Lamb against its formula in double: the norms over a parameter split
 * in two pieces (the two sums added, as the AllReduce adds the ranks'),
 * then each piece updated with the whole's trust ratio; a zero parameter's
 * ratio is 1 (MindSpore's LambApplyWeightAssign). */
Test(optimizer, lamb_trust_ratio_over_pieces)
{
	float p[4] = {1, -0.5f, 0.2f, 0.3f}, m[4] = {0}, v[4] = {0};
	double pd[4] = {1, -0.5, 0.2, 0.3}, md[4] = {0}, vd[4] = {0};
	const double lr = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-6, wd = 0.1;
	for (int t = 1; t <= 3; t++) {
		float g[4] = {0.5f * t, -0.25f, 0.01f * t, 0.2f}, a[2], b[2], sums[2];
		sc_cpu_lamb_norms(p, g, m, v, 3, b1, b2, eps, wd, t, a);           /* piece 0: elements 0..2 */
		sc_cpu_lamb_norms(p + 3, g + 3, m + 3, v + 3, 1, b1, b2, eps, wd, t, b);
		sums[0] = a[0] + b[0];
		sums[1] = a[1] + b[1];
		sc_cpu_lamb(p, g, m, v, 3, lr, b1, b2, eps, wd, t, sums);
		sc_cpu_lamb(p + 3, g + 3, m + 3, v + 3, 1, lr, b1, b2, eps, wd, t, sums);
		double u[4], wn = 0, un = 0;
		for (int i = 0; i < 4; i++) {
			md[i] = b1 * md[i] + (1 - b1) * g[i];
			vd[i] = b2 * vd[i] + (1 - b2) * g[i] * g[i];
			u[i] = md[i] / (1 - pow(b1, t)) / (sqrt(vd[i] / (1 - pow(b2, t))) + eps) + wd * pd[i];
			wn += pd[i] * pd[i];
			un += u[i] * u[i];
		}
		for (int i = 0; i < 4; i++)
			pd[i] -= lr * sqrt(wn) / sqrt(un) * u[i];
	}
	float want[4] = {(float)pd[0], (float)pd[1], (float)pd[2], (float)pd[3]};
	CLOSE(p, want, 4, "lamb after 3 steps");
	/* a zero parameter (both norms of a zero gradient 0 too): ratio 1, the update lr u */
	float z[2] = {0, 0}, mz[2] = {0}, vz[2] = {0}, gz[2] = {1, -1}, s[2];
	sc_cpu_lamb_norms(z, gz, mz, vz, 2, 0.9, 0.999, 1e-6, 0, 1, s);
	cr_assert(s[0] == 0 && fabsf(s[1] - 2) < 1e-4f, "sums %g %g", s[0], s[1]);   /* u = 1 in Float32 rounding */
	sc_cpu_lamb(z, gz, mz, vz, 2, 0.1, 0.9, 0.999, 1e-6, 0, 1, s);
	CLOSE(z, ((const float[]){-0.1f, 0.1f}), 2, "zero norm: ratio 1");
	sc_cpu_lamb_norms(p, gz, mz, vz, 0, 0.9, 0.999, 1e-6, 0, 1, s);   /* not the first copy: 0 elements */
	cr_assert(s[0] == 0 && s[1] == 0);
}

Test(optimizer, clip_by_global_norm)
{
	const float a[2] = {3, 0}, b[1] = {4};
	float sq, y[2];
	sc_cpu_sum_squares((const float *const[]){a, b}, (const int64_t[]){2, 1}, 2, &sq);
	cr_assert(sq == 25);
	sc_cpu_clip_by_norm(a, y, 2, &sq, 1.0);   /* norm 5 > 1: scaled by 1/5 */
	CLOSE(y, ((const float[]){0.6f, 0}), 2, "clipped");
	sc_cpu_clip_by_norm(a, y, 2, &sq, 10.0);  /* norm 5 <= 10: unchanged */
	CLOSE(y, a, 2, "not clipped");
}

Test(optimizer, adam_matches_mindspore_formula)
{
	/* three steps against the ops.Adam update in double */
	float p[3] = {1, -0.5f, 0.2f}, m[3] = {0}, v[3] = {0};
	double pd[3] = {1, -0.5, 0.2}, md[3] = {0}, vd[3] = {0};
	const double lr = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0.01;
	for (int t = 1; t <= 3; t++) {
		float g[3] = {0.5f * t, -0.25f, 0.01f * t};
		sc_cpu_adam(p, g, m, v, 3, lr, b1, b2, eps, wd, t);
		double lr_t = lr * sqrt(1 - pow(b2, t)) / (1 - pow(b1, t));
		for (int i = 0; i < 3; i++) {
			double gi = g[i] + wd * pd[i];
			md[i] = b1 * md[i] + (1 - b1) * gi;
			vd[i] = b2 * vd[i] + (1 - b2) * gi * gi;
			pd[i] -= lr_t * md[i] / (sqrt(vd[i]) + eps);
		}
	}
	float want[3] = {(float)pd[0], (float)pd[1], (float)pd[2]};
	CLOSE(p, want, 3, "adam after 3 steps");
	/* first step moves each weight by about lr against its gradient */
	cr_assert(fabsf(want[0] - (1 - 3 * 0.01f)) < 2e-3f);
}

/* GeLU's tanh is written out so that it vectorizes (kernels.c): over a dense
 * grid it is as close to the double formula as libm's tanhf was (1.25e-7 of
 * |x|), and so is its slope; the erf form is as close to its own. */
Test(elementwise, gelu_against_double)
{
	enum { N = 240001 };
	float *x = malloc(3 * N * sizeof *x), *y = x + N, *g = x + 2 * N;
	for (int i = 0; i < N; i++)
		x[i] = -12 + 24.0f * (float)i / (N - 1);
	sc_cpu_unary(SC_U_GELU, 0, x, y, N);
	for (int i = 0; i < N; i++)
		g[i] = 1;
	sc_cpu_unary_grad(SC_U_GELU, 0, x, g, g, N);
	double worst_y = 0, worst_g = 0;
	for (int i = 0; i < N; i++) {
		double v = x[i], th = tanh(0.7978845608028654 * (v + 0.044715 * v * v * v));
		double want_y = 0.5 * v * (1 + th);
		double want_g = 0.5 * (1 + th) + 0.5 * v * (1 - th * th) * 0.7978845608028654 * (1 + 3 * 0.044715 * v * v);
		worst_y = fmax(worst_y, fabs(y[i] - want_y) / fmax(fabs(v), 1e-3));
		worst_g = fmax(worst_g, fabs(g[i] - want_g) / fmax(fabs(v), 1));
	}
	cr_expect(worst_y < 2.5e-7, "gelu: error %g of |x|", worst_y);
	cr_expect(worst_g < 4e-7, "gelu slope: error %g", worst_g);
	/* the erf form (approximate: "none"), from libm's erff and expf */
	sc_cpu_unary(SC_U_GELU_ERF, 0, x, y, N);
	for (int i = 0; i < N; i++)
		g[i] = 1;
	sc_cpu_unary_grad(SC_U_GELU_ERF, 0, x, g, g, N);
	worst_y = worst_g = 0;
	for (int i = 0; i < N; i++) {
		double v = x[i], e = erf(v / sqrt(2));
		double want_y = 0.5 * v * (1 + e), want_g = 0.5 * (1 + e) + v * exp(-0.5 * v * v) / 2.5066282746310002;   /* sqrt(2 pi) */
		worst_y = fmax(worst_y, fabs(y[i] - want_y) / fmax(fabs(v), 1e-3));
		worst_g = fmax(worst_g, fabs(g[i] - want_g) / fmax(fabs(v), 1));
	}
	cr_expect(worst_y < 2.5e-7, "gelu erf form: error %g of |x|", worst_y);
	cr_expect(worst_g < 4e-7, "gelu erf form slope: error %g", worst_g);
	free(x);
}

/* The hot loops are built for several vector widths (SC_VECTOR_CLONES) and
 * each runs a scalar tail after its vector body: a value gives the same bits
 * in every lane and in the tail (no FMA contraction, no reassociation), so
 * the width this CPU picked changes nothing. 67 elements: 64 in the vector
 * body of every width, 3 in the tail, the tail's values repeated in it. */
Test(elementwise, vector_lanes_and_tail_same_bits)
{
	enum { N = 67 };
	float x[N], y[N], g[N], d[N], b[N], pre[N], yb[N];
	const float tail[3] = {-3.71f, 0.4142f, 11.5f};
	for (int i = 0; i < N; i++) {
		x[i] = tail[i < N - 3 ? i % 3 : i - (N - 3)];
		d[i] = 0.75f;
		b[i] = 0.25f;
	}
	for (sc_unop op = 0; op < SC_U_COUNT; op++) {
		sc_cpu_unary(op, T_UNARY_P, x, y, N);
		sc_cpu_unary_grad(op, T_UNARY_P, x, d, g, N);
		for (int i = 0; i < N - 3; i++)
			cr_assert(!memcmp(&y[i], &y[N - 3 + i % 3], sizeof *y) && !memcmp(&g[i], &g[N - 3 + i % 3], sizeof *g),
			          "unary op %d: element %d differs from the tail's", (int)op, i);
	}
	sc_cpu_bias_unary(SC_U_GELU, 0, x, b, pre, yb, 1, N);
	for (int i = 0; i < N - 3; i++)
		cr_assert(!memcmp(&yb[i], &yb[N - 3 + i % 3], sizeof *yb), "bias + gelu: element %d", i);
}

/* Softmax's exp is written out so that it vectorizes (kernels.c): against
 * the double formula over a wide range, -inf gives exactly 0 and a NaN a
 * NaN row, as expf did. */
Test(elementwise, softmax_against_double)
{
	enum { L = 1201 };
	static float x[2 * L], y[2 * L];
	for (int i = 0; i < L; i++)
		x[i] = -110 + 120.0f * (float)i / (L - 1);
	x[7] = -INFINITY;
	for (int i = 0; i < L; i++)
		x[L + i] = (float)i / L;
	x[L + 5] = NAN;
	sc_cpu_softmax(x, y, (const int64_t[]){2, L}, 2, 1, 0);
	double sum = 0, worst = 0;   /* x - max is a float, as in the kernel */
	for (int i = 0; i < L; i++)
		sum += exp((double)(x[i] - 10.0f));
	/* relative, and absolute below 1e-30 (exps under e^-87 are 0, where expf
	 * gave subnormal floats) */
	for (int i = 0; i < L; i++) {
		double want = exp((double)(x[i] - 10.0f)) / sum;
		worst = fmax(worst, fabs(y[i] - want) / fmax(want, 1e-30));
	}
	cr_expect(worst < 5e-7, "softmax: relative error %g", worst);
	cr_expect(y[7] == 0, "softmax of -inf: %g, not 0", y[7]);
	for (int i = 0; i < L; i++)
		cr_expect(isnan(y[L + i]), "a row with a NaN: y[%d] = %g", i, y[L + i]);
}

/* softmax_scaled is a Mul by one element then the softmax, bit for bit: the
 * program is the same with and without fusion (compiler/fuse.c). */
Test(elementwise, softmax_scaled_is_mul_then_softmax)
{
	enum { N = 3 * 50 * 7 };
	static float x[N], xs[N], y1[N], y2[N];
	const int64_t d[] = {3, 50, 7};
	const float s = 0.35355339f;   /* 1 / sqrt(8) */
	uint64_t seed = 3;
	t_fill(x, N, &seed, -20, 20);
	for (int i = 0; i < N; i++)
		xs[i] = x[i] * s;
	for (int axis = 0; axis < 3; axis++) {
		sc_cpu_softmax(xs, y1, d, 3, axis, 0);
		sc_cpu_softmax_scaled(x, &s, y2, d, 3, axis);
		cr_expect(memcmp(y1, y2, sizeof y1) == 0, "axis %d: softmax_scaled differs from Mul then softmax", axis);
	}
}

/* softmax_masked is the Mul by one element (or none), the Add of a mask
 * broadcast as numpy would, then the last axis's softmax, bit for bit. */
Test(elementwise, softmax_masked_is_mul_add_then_softmax)
{
	enum { N = 3 * 50 * 37 };
	static float x[N], xs[N], m[N], z[N], y1[N], y2[N];
	const int64_t d[] = {3, 50, 37};
	static const int64_t md[][3] = {{50, 37}, {3, 1, 37}, {3, 50, 1}, {1}};
	static const int mn[] = {2, 3, 3, 1};
	const float s = 0.125f * 1.3f;
	uint64_t seed = 5;
	t_fill(x, N, &seed, -20, 20);
	t_fill(m, N, &seed, -1e4, 10);   /* large negative entries: a mask's -10000 */
	for (int i = 0; i < N; i++)
		xs[i] = x[i] * s;
	for (int k = 0; k < 4; k++)
		for (int scaled = 0; scaled < 2; scaled++) {
			sc_cpu_binary(SC_ADD, scaled ? xs : x, d, 3, m, md[k], mn[k], z, d, 3);
			sc_cpu_softmax(z, y1, d, 3, -1, 0);
			sc_cpu_softmax_masked(x, scaled ? &s : NULL, m, md[k], mn[k], y2, d, 3);
			cr_expect(memcmp(y1, y2, sizeof y1) == 0, "mask %d, scaled %d: differs from Mul, Add, softmax", k,
			          scaled);
		}
}

/* bias_unary is BiasAdd then the unary operator, bit for bit, the sum kept
 * or not. */
Test(elementwise, bias_unary_is_bias_add_then_unary)
{
	enum { R = 70, C = 513, N = R * C };
	static float x[N], b[C], s1[N], y1[N], s2[N], y2[N], y3[N];
	uint64_t seed = 5;
	t_fill(x, N, &seed, -4, 4);
	t_fill(b, C, &seed, -1, 1);
	for (sc_unop op = 0; op < SC_U_COUNT; op++) {
		sc_cpu_bias_add(x, b, s1, R, C);
		sc_cpu_unary(op, T_UNARY_P, s1, y1, N);
		sc_cpu_bias_unary(op, T_UNARY_P, x, b, s2, y2, R, C);
		sc_cpu_bias_unary(op, T_UNARY_P, x, b, NULL, y3, R, C);
		cr_expect(memcmp(s1, s2, sizeof s1) == 0, "op %d: the kept sum differs", (int)op);
		cr_expect(memcmp(y1, y2, sizeof y1) == 0 && memcmp(y1, y3, sizeof y1) == 0, "op %d: y differs", (int)op);
	}
}

/* bias_add_residual is BiasAdd then Add, bit for bit, the sum kept or not. */
Test(elementwise, bias_add_residual_is_bias_add_then_add)
{
	enum { R = 70, C = 513, N = R * C };
	static float x[N], b[C], r[N], s1[N], y1[N], s2[N], y2[N], y3[N];
	uint64_t seed = 9;
	t_fill(x, N, &seed, -4, 4);
	t_fill(b, C, &seed, -1, 1);
	t_fill(r, N, &seed, -3, 3);
	sc_cpu_bias_add(x, b, s1, R, C);
	sc_cpu_binary(SC_ADD, r, (const int64_t[]){R, C}, 2, s1, (const int64_t[]){R, C}, 2, y1, (const int64_t[]){R, C},
	              2);
	sc_cpu_bias_add_residual(x, b, s2, r, y2, R, C);
	sc_cpu_bias_add_residual(x, b, NULL, r, y3, R, C);
	cr_expect(memcmp(s1, s2, sizeof s1) == 0, "the kept sum differs");
	cr_expect(memcmp(y1, y2, sizeof y1) == 0 && memcmp(y1, y3, sizeof y1) == 0, "y differs");
}

/* An elementwise chain (sc_ew_chain) is its operators' kernels run one
 * after another, each half result widened, computed on, rounded back
 * (sc_cast), bit for bit: the bf16 MLP (h + bias, rounded, GeLU, rounded,
 * the sum kept), a float32 mask, scale and unary chain with a scalar and a
 * row operand, and f16, on odd sizes (a block tail, rows of 513 or 1). */
static void ew_half(sc_dtype dt, float *x, int64_t n)   /* x rounded to dt, in place */
{
	uint16_t *h = malloc((size_t)n * 2);
	sc_cpu_cast(x, SC_F32, h, dt, n);
	sc_cpu_cast(h, dt, x, SC_F32, n);
	free(h);
}

Test(elementwise, ew_chain_is_its_kernels)
{
	enum { R = 7, C = 513, N = R * C };
	static float x[N], bias[C], r[N], m[N], s1[N], y1[N], t[N], y2f[N], pre2f[N];
	static uint16_t xh[N], bh[C], y2[N], pre2[N], want[N], wpre[N];
	uint64_t seed = 13;
	t_fill(x, N, &seed, -4, 4);
	t_fill(bias, C, &seed, -1, 1);
	t_fill(r, N, &seed, -3, 3);
	t_fill(m, N, &seed, -2, 2);
	for (int h = 0; h < 2; h++) {   /* BFloat16, Float16: h + bias, GeLU, the sum kept */
		sc_dtype dt = h ? SC_F16 : SC_BF16;
		sc_cpu_cast(x, SC_F32, xh, dt, N);
		sc_cpu_cast(bias, SC_F32, bh, dt, C);
		float *xw = malloc(N * 4), *bw = malloc(C * 4);   /* the unfused program: widen, add, round, ... */
		sc_cpu_cast(xh, dt, xw, SC_F32, N);
		sc_cpu_cast(bh, dt, bw, SC_F32, C);
		sc_cpu_bias_add(xw, bw, s1, R, C);
		sc_cpu_cast(s1, SC_F32, wpre, dt, N);
		sc_cpu_cast(wpre, dt, s1, SC_F32, N);
		sc_cpu_unary(SC_U_GELU, 0, s1, y1, N);
		sc_cpu_cast(y1, SC_F32, want, dt, N);
		const sc_ew_operand ins[] = {{xh, dt, SC_EW_FULL}, {bh, dt, SC_EW_ROW}};
		const sc_ew_step st[] = {
			{SC_EW_BINARY, SC_ADD, 0, 1, SC_F32, NULL, 0}, /* 2 */
			{SC_EW_ROUND, 0, 2, 0, dt, NULL, 0},           /* 3 */
			{SC_EW_STORE, 0, 3, 0, dt, pre2, 0},           /* 4 */
			{SC_EW_UNARY, SC_U_GELU, 3, 0, SC_F32, NULL, 0}, /* 5 */
			{SC_EW_STORE, 0, 5, 0, dt, y2, 0},
		};
		sc_cpu_ew_chain(st, 5, ins, 2, R, C);
		cr_expect(memcmp(pre2, wpre, sizeof wpre) == 0, "%s: the kept sum differs", h ? "f16" : "bf16");
		cr_expect(memcmp(y2, want, sizeof want) == 0, "%s: y differs", h ? "f16" : "bf16");
		free(xw), free(bw);
	}
	/* Float32: (x + m) * s, then Tanh, r - that, and the product kept; one row of N */
	float s = 0.37f;
	sc_cpu_binary(SC_ADD, x, (const int64_t[]){N}, 1, m, (const int64_t[]){N}, 1, t, (const int64_t[]){N}, 1);
	sc_cpu_binary(SC_MUL, t, (const int64_t[]){N}, 1, &s, (const int64_t[]){1}, 1, s1, (const int64_t[]){N}, 1);
	sc_cpu_unary(SC_U_TANH, 0, s1, t, N);
	sc_cpu_binary(SC_SUB, r, (const int64_t[]){N}, 1, t, (const int64_t[]){N}, 1, y1, (const int64_t[]){N}, 1);
	const sc_ew_operand fins[] = {{x, SC_F32, SC_EW_FULL}, {m, SC_F32, SC_EW_FULL}, {&s, SC_F32, SC_EW_SCALAR},
	                              {r, SC_F32, SC_EW_FULL}};
	const sc_ew_step fst[] = {
		{SC_EW_BINARY, SC_ADD, 0, 1, SC_F32, NULL, 0},    /* 4 */
		{SC_EW_BINARY, SC_MUL, 4, 2, SC_F32, NULL, 0},    /* 5 */
		{SC_EW_STORE, 0, 5, 0, SC_F32, pre2f, 0},         /* 6 */
		{SC_EW_UNARY, SC_U_TANH, 6, 0, SC_F32, NULL, 0},  /* 7 */
		{SC_EW_BINARY, SC_SUB, 3, 7, SC_F32, NULL, 0},    /* 8 */
		{SC_EW_STORE, 0, 8, 0, SC_F32, y2f, 0},
	};
	sc_cpu_ew_chain(fst, 6, fins, 4, 1, N);
	cr_expect(memcmp(pre2f, s1, sizeof s1) == 0, "f32: the kept product differs");
	cr_expect(memcmp(y2f, y1, sizeof y1) == 0, "f32: y differs");
	/* every unary operator after a row operand (bias_unary's math), rounded to bfloat16 between */
	for (sc_unop op = 0; op < SC_U_COUNT; op++) {
		sc_cpu_bias_add(x, bias, s1, R, C);
		ew_half(SC_BF16, s1, N);
		sc_cpu_unary(op, T_UNARY_P, s1, y1, N);
		const sc_ew_operand uins[] = {{x, SC_F32, SC_EW_FULL}, {bias, SC_F32, SC_EW_ROW}};
		const sc_ew_step ust[] = {
			{SC_EW_BINARY, SC_ADD, 1, 0, SC_F32, NULL, 0},
			{SC_EW_ROUND, 0, 2, 0, SC_BF16, NULL, 0},
			{SC_EW_UNARY, (int)op, 3, 0, SC_F32, NULL, T_UNARY_P},
			{SC_EW_STORE, 0, 4, 0, SC_F32, y2f, 0},
		};
		sc_cpu_ew_chain(ust, 4, uins, 2, R, C);
		cr_expect(memcmp(y2f, y1, sizeof y1) == 0, "op %d: y differs", (int)op);
		/* its gradient (SC_EW_UNARY_GRAD) from t = x and dy = r: sc_cpu_unary_grad's bits */
		sc_cpu_unary_grad(op, T_UNARY_P, x, r, y1, N);
		const sc_ew_operand gins[] = {{r, SC_F32, SC_EW_FULL}, {x, SC_F32, SC_EW_FULL}};
		const sc_ew_step gst[] = {
			{SC_EW_UNARY_GRAD, (int)op, 1, 0, SC_F32, NULL, T_UNARY_P},
			{SC_EW_STORE, 0, 2, 0, SC_F32, y2f, 0},
		};
		sc_cpu_ew_chain(gst, 2, gins, 2, R, C);
		cr_expect(memcmp(y2f, y1, sizeof y1) == 0, "op %d: the gradient differs", (int)op);
	}
}

/* ---- threads ----
 * The kernels' OpenMP loops (long enough tensors) give the same bits on 1
 * thread and on 4: every element is computed as in one thread. */

typedef void (*KernelRun)(const float *x, float *y, float *state);

static void run_unary(const float *x, float *y, float *state)
{
	(void)state;
	sc_cpu_unary(SC_U_GELU, 0, x, y, 1 << 16);
	sc_cpu_unary_grad(SC_U_GELU, 0, x, x + 7, y + (1 << 16), 1 << 16);
}

static void run_rows(const float *x, float *y, float *state)
{
	(void)state;
	const int64_t dims[] = {64, 16, 64};
	sc_cpu_softmax(x, y, dims, 3, 1, 0);                      /* along a middle axis */
	sc_cpu_softmax_grad(y, x + 11, y + (1 << 16), dims, 3, -1, 1);
	sc_cpu_norm(1, x, x + 100, x + 200, y + (2 << 16), (const int64_t[]){256, 256}, 2, 1, 1, 1e-5);
	sc_cpu_norm(0, x, x + 100, NULL, state + (1 << 15), (const int64_t[]){128, 256}, 2, 1, 1, 1e-5);   /* RmsNorm */
	sc_cpu_bias_add(x, x + 300, y + (3 << 16), 256, 256);
	sc_cpu_scale(x, y + (4 << 16), 1 << 16, 0.3);
	/* broadcast along a middle dim, so the blocks of rows start mid-walk */
	sc_cpu_binary(SC_MUL, x, (const int64_t[]){8, 64, 128}, 3, x + 500, (const int64_t[]){8, 1, 128}, 3,
	              y + (5 << 16), (const int64_t[]){8, 64, 128}, 3);
	uint16_t *h = (uint16_t *)state;                             /* casts through bfloat16 and back */
	sc_cpu_cast(x, SC_F32, h, SC_BF16, 1 << 16);
	sc_cpu_cast(h, SC_BF16, y + (1 << 16) + 3, SC_F32, (1 << 16) - 3);
}

static void run_optimizers(const float *x, float *y, float *state)
{
	const int64_t n = 1 << 16;
	memcpy(y, x, sizeof(float) * (size_t)n);                   /* the parameters */
	memset(state, 0, sizeof(float) * 2 * (size_t)n);
	sc_cpu_adam(y, x + 5, state, state + n, n, 1e-3, 0.9, 0.999, 1e-8, 0.01, 1);
	sc_cpu_adam_weight_decay(y, x + 9, state, state + n, n, 1e-3, 0.9, 0.999, 1e-8, 0.01);
	sc_cpu_sgd(y, x + 3, state, n, 0.1, 0.9, 0.1, 0.01, 1, 2);
	sc_cpu_momentum(y, x + 1, state + n, n, 0.1, 0.9, 0.01, 1);
	float sums[2];
	sc_cpu_lamb_norms(y, x + 7, state, state + n, n, 0.9, 0.999, 1e-6, 0.01, 2, sums);
	sc_cpu_lamb(y, x + 7, state, state + n, n, 1e-3, 0.9, 0.999, 1e-6, 0.01, 2, sums);
}

static void run_grads(const float *x, float *y, float *state)
{
	const int64_t d2[] = {256, 256}, d3[] = {64, 16, 64}, n[] = {1 << 16};
	sc_cpu_norm_grad(1, x + 1, x, x + 100, y, y + (1 << 16), y + (1 << 16) + 256, d2, 2, 1, 1, 1e-5);
	sc_cpu_norm_grad(0, x + 1, x, x + 100, y + (5 << 16), state + 2048, NULL, d2, 2, 1, 1, 1e-5);   /* RmsNorm */
	/* gamma over the last two dims: 1024 of them, each row a window of 64 */
	sc_cpu_norm_grad(1, x + 3, x, x + 200, y + (1 << 16) + 512, state, state + 1024, d3, 3, 2, 1, 1e-5);
	sc_cpu_bias_add_grad(x + 5, y + (2 << 16), 256, 256);
	sc_cpu_binary_grad(SC_MUL, x, n, 1, x + 7, n, 1, x + 9, n, 1, y + (3 << 16), y + (4 << 16));
	/* PReLU's: dx, a weight per channel's sums and one weight's */
	sc_cpu_prelu_grad(x, x + 13, x + 17, state + (1 << 16), state + 4096, 16, 64, 64, 64);
	sc_cpu_prelu_grad(x + 2, x + 13, x + 17, NULL, state + 4096 + 64, 16, 64, 64, 1);
}

static void same_on_threads(KernelRun run, const char *what)
{
	enum { N = 6 << 16 };
	static float x[N], y1[N], y4[N], s1[2 << 16], s4[2 << 16];
	uint64_t seed = 7;
	t_fill(x, N, &seed, -2, 2);
	omp_set_num_threads(1);
	run(x, y1, s1);
	omp_set_num_threads(4);
	run(x, y4, s4);
	cr_assert(memcmp(y1, y4, sizeof y1) == 0 && memcmp(s1, s4, sizeof s1) == 0, "%s: 4 threads differ from 1", what);
}

Test(threads, elementwise_same_bits) { same_on_threads(run_unary, "unary"); }
Test(threads, rows_same_bits) { same_on_threads(run_rows, "softmax, LayerNorm, RmsNorm, bias, scale"); }
Test(threads, optimizers_same_bits) { same_on_threads(run_optimizers, "optimizers"); }
Test(threads, gradients_same_bits) { same_on_threads(run_grads, "LayerNorm, RmsNorm, bias, binary and PReLU gradients"); }

/* ---- computed constants: a piece from where it starts in the whole ---- */

Test(constants, arange_by_hand)
{
	float f[4];
	int32_t i32[3];
	int64_t i64[3];
	sc_cpu_arange(f, SC_F32, 4, 2, 0.5, 0.25);   /* elements 2..5 of 0.5, 0.75, ... */
	CLOSE(f, ((const float[]){1, 1.25f, 1.5f, 1.75f}), 4, "float32 range");
	sc_cpu_arange(i32, SC_I32, 3, 1, 10, -2);
	cr_assert(i32[0] == 8 && i32[1] == 6 && i32[2] == 4, "int32 range, descending");
	sc_cpu_arange(i64, SC_I64, 3, 5, 0, 3);
	cr_assert(i64[0] == 15 && i64[1] == 18 && i64[2] == 21, "int64 range");
}

Test(constants, eye_and_lin_space_by_hand)
{
	float e[2 * 3], l[3];
	int32_t ei[2 * 3];
	sc_cpu_eye(e, SC_F32, 2, 3, 1, 0);   /* rows 1..2, columns 0..2 of a (3, 3) identity */
	CLOSE(e, ((const float[]){0, 1, 0, 0, 0, 1}), 6, "eye float32 piece");
	sc_cpu_eye(ei, SC_I32, 2, 3, 0, 1);   /* rows 0..1, columns 1..3 */
	cr_assert(ei[0] == 0 && ei[1] == 0 && ei[2] == 0 && ei[3] == 1 && ei[4] == 0 && ei[5] == 0, "eye int32 piece");
	sc_cpu_lin_space(l, 3, 2, 1.0f, 10.0f, 5);   /* elements 2..4 of 1, 3.25, 5.5, 7.75, 10 */
	CLOSE(l, ((const float[]){5.5f, 7.75f, 10.0f}), 3, "lin_space piece");
	sc_cpu_lin_space(l, 1, 0, -2.5f, 4.0f, 1);
	cr_assert(l[0] == -2.5f, "lin_space num 1: start");
}

Test(constants, causal_mask_pieces_make_the_whole)
{
	enum { S = 6, T = 7 };
	float whole[S * T], piece[2 * 3 * 4];
	uint8_t bwhole[S * T], bpiece[2 * 3 * 4];
	sc_cpu_causal_mask(whole, SC_F32, 1, S, T, 0, 0, -1e9);
	sc_cpu_causal_mask(bwhole, SC_BOOL, 1, S, T, 0, 0, 0);
	for (int i = 0; i < S; i++)
		for (int j = 0; j < T; j++) {
			cr_assert_eq(whole[i * T + j], j > i ? -1e9f : 0.0f, "(%d, %d)", i, j);
			cr_assert_eq(bwhole[i * T + j], j <= i, "bool (%d, %d)", i, j);
		}
	/* rows 2..4, columns 3..6, twice (two leading elements: the one mask each) */
	sc_cpu_causal_mask(piece, SC_F32, 2, 3, 4, 2, 3, -1e9);
	sc_cpu_causal_mask(bpiece, SC_BOOL, 2, 3, 4, 2, 3, 0);
	for (int l = 0; l < 2; l++)
		for (int i = 0; i < 3; i++)
			for (int j = 0; j < 4; j++) {
				cr_assert_eq(piece[(l * 3 + i) * 4 + j], whole[(2 + i) * T + 3 + j]);
				cr_assert_eq(bpiece[(l * 3 + i) * 4 + j], bwhole[(2 + i) * T + 3 + j]);
			}
}

Test(constants, rope_by_hand_and_pieces)
{
	enum { S = 8, D = 8 };
	float c[S * D], s[S * D], piece[2 * 4 * 4];
	sc_cpu_rope(c, 0, 1, S, D, 0, 0, D, 10000.0);
	sc_cpu_rope(s, 1, 1, S, D, 0, 0, D, 10000.0);
	/* frequencies 10000^(-2k/8): 1, 0.1, 0.01, 0.001, both halves alike */
	CLOSE(c + 1 * D, ((const float[]){0.54030231f, 0.99500417f, 0.99995f, 0.9999995f, 0.54030231f, 0.99500417f,
	                                  0.99995f, 0.9999995f}), D, "cos, position 1");
	CLOSE(s + 2 * D, ((const float[]){0.90929743f, 0.19866933f, 0.019998667f, 0.0019999987f, 0.90929743f,
	                                  0.19866933f, 0.019998667f, 0.0019999987f}), D, "sin, position 2");
	for (int j = 0; j < D; j++)
		cr_assert_eq(c[j], 1.0f, "position 0: cos 1");
	/* positions 4..7, columns 2..5, twice: bit for bit the whole's */
	sc_cpu_rope(piece, 1, 2, 4, 4, 4, 2, D, 10000.0);
	for (int l = 0; l < 2; l++)
		for (int i = 0; i < 4; i++)
			for (int j = 0; j < 4; j++)
				cr_assert_eq(piece[(l * 4 + i) * 4 + j], s[(4 + i) * D + 2 + j], "(%d, %d)", i, j);
}

/* ---- Dropout: a counter-based mask of the whole value ---- */

/* The generator of docs/operators.md pinned: name "d", seed 7, keep 0.5,
 * 16 elements (tools/ref_eval.py's dropout_keep gives the same bits). */
Test(dropout, mask_by_hand)
{
	static const char *want[2] = {"1111000100001100", "1010100000110010"};   /* steps 1 and 2 */
	float x[16], y[16];
	for (int i = 0; i < 16; i++)
		x[i] = (float)i + 1;
	for (int t = 1; t <= 2; t++) {
		sc_dropout(NULL, x, y, (const int64_t[]){16}, 1, (const int64_t[]){0}, (const int64_t[]){16}, "d", 7, t, 0.5);
		for (int i = 0; i < 16; i++)
			cr_assert(y[i] == (want[t - 1][i] == '1' ? 2 * x[i] : 0), "step %d element %d: %g", t, i, y[i]);
	}
}

/* Pieces of a (4, 6, 10) whole, as 2 x 3 x 2 ranks hold them, draw the whole's
 * mask; the gradient (dy in place of x) the same; keep_prob 1 the identity. */
Test(dropout, pieces_make_the_whole)
{
	enum { A = 4, B = 6, C = 10, N = A * B * C };
	const int64_t g[3] = {A, B, C}, l[3] = {A / 2, B / 3, C / 2};
	float x[N], whole[N], piece[N], dx[N];
	int kept = 0;
	for (int i = 0; i < N; i++)
		x[i] = 0.25f * (float)(i % 17) - 1.5f;
	sc_dropout(NULL, x, whole, g, 3, (const int64_t[]){0, 0, 0}, g, "layer.0.drop", 3, 5, 0.7);
	for (int i = 0; i < N; i++) {
		cr_assert(whole[i] == 0 || whole[i] == x[i] * (float)(1.0 / (double)0.7f), "element %d", i);
		kept += whole[i] != 0 || x[i] == 0;
	}
	cr_assert(kept > N * 6 / 10 && kept < N * 8 / 10, "kept %d of %d at keep_prob 0.7", kept, N);
	for (int p = 0; p < 2 * 3 * 2; p++) {
		int64_t s[3] = {p / 6 * l[0], p / 2 % 3 * l[1], p % 2 * l[2]};
		float xs[N];
		int n = 0;
		for (int a = 0; a < l[0]; a++)
			for (int b = 0; b < l[1]; b++)
				for (int c = 0; c < l[2]; c++)
					xs[n++] = x[((s[0] + a) * B + s[1] + b) * C + s[2] + c];
		sc_dropout(NULL, xs, piece, g, 3, s, l, "layer.0.drop", 3, 5, 0.7);
		n = 0;
		for (int a = 0; a < l[0]; a++)
			for (int b = 0; b < l[1]; b++)
				for (int c = 0; c < l[2]; c++, n++)
					cr_assert(piece[n] == whole[((s[0] + a) * B + s[1] + b) * C + s[2] + c], "piece %d", p);
	}
	sc_dropout(NULL, whole, dx, g, 3, (const int64_t[]){0, 0, 0}, g, "layer.0.drop", 3, 5, 0.7);
	for (int i = 0; i < N; i++)   /* the same mask again: kept twice, or 0 */
		cr_assert((dx[i] != 0) == (whole[i] != 0), "gradient mask at %d", i);
	sc_dropout(NULL, x, dx, g, 3, (const int64_t[]){0, 0, 0}, g, "layer.0.drop", 3, 6, 0.7);
	int same = 0;
	for (int i = 0; i < N; i++)
		same += (dx[i] != 0) == (whole[i] != 0);
	cr_assert(same < N, "step 6 draws another mask");
	sc_dropout(NULL, x, dx, g, 3, (const int64_t[]){0, 0, 0}, g, "layer.0.drop", 3, 5, 1.0);
	cr_assert(memcmp(dx, x, sizeof x) == 0, "keep_prob 1: the identity");
}

/* DropoutGenMask and DropoutDoMask: the mask of each piece of a (4, 6, 10)
 * whole (and of an uneven piece, (3, 4) at (3, 4) of a (5, 7) whole) is
 * the one a Dropout of the mask's name keeps, and DropoutDoMask of it is
 * that Dropout bit for bit, forward and gradient; the padding false. */
Test(dropout, masks_make_dropout)
{
	enum { A = 4, B = 6, C = 10, N = A * B * C };
	const int64_t g[3] = {A, B, C}, l[3] = {A / 2, B / 3, C / 2}, z[3] = {0, 0, 0};
	float x[N], drop[N], y[N];
	uint8_t m[N];
	for (int i = 0; i < N; i++)
		x[i] = 0.37f * (float)(i % 23) - 3.1f;
	sc_dropout(NULL, x, drop, g, 3, z, g, "mask", 9, 2, 0.85);
	sc_dropout_gen_mask(NULL, m, g, 3, z, g, "mask", 9, 2, 0.85);
	sc_dropout_do_mask(NULL, x, m, y, N, 0.85);
	cr_assert(memcmp(y, drop, sizeof y) == 0, "DropoutDoMask of DropoutGenMask's mask is Dropout");
	for (int p = 0; p < 2 * 3 * 2; p++) {
		int64_t s[3] = {p / 6 * l[0], p / 2 % 3 * l[1], p % 2 * l[2]};
		sc_dropout_gen_mask(NULL, m, g, 3, s, l, "mask", 9, 2, 0.85);
		int n = 0;
		for (int a = 0; a < l[0]; a++)
			for (int b = 0; b < l[1]; b++)
				for (int c = 0; c < l[2]; c++, n++) {
					int64_t i = ((s[0] + a) * B + s[1] + b) * C + s[2] + c;
					cr_assert_eq(m[n], drop[i] != 0 || x[i] == 0, "piece %d element %lld", p, (long long)i);
				}
	}
	sc_dropout_gen_mask(NULL, m, g, 3, z, g, "mask", 9, 2, 1.0);
	sc_dropout_do_mask(NULL, x, m, y, N, 1.0);
	cr_assert(memcmp(y, x, sizeof y) == 0, "keep_prob 1: every element kept, the identity");
	const int64_t ug[2] = {5, 7}, st[2] = {3, 4}, ld[2] = {3, 4};
	float w[35], wd[35];
	for (int i = 0; i < 35; i++)
		w[i] = 1.0f + (float)i;
	sc_dropout(NULL, w, wd, ug, 2, z, ug, "u", 2, 4, 0.5);
	sc_dropout_gen_mask(NULL, m, ug, 2, st, ld, "u", 2, 4, 0.5);
	for (int i = 0; i < 12; i++) {
		int64_t gi = st[0] + i / 4, gj = st[1] + i % 4;
		cr_assert_eq(m[i], gi < 5 && gj < 7 && wd[gi * 7 + gj] != 0, "padded piece (%d, %d)", i / 4, i % 4);
	}
}

/* UniformReal: each piece of a (4, 6, 10) whole draws the whole's values at
 * its place, in [0, 1) on the 2^-24 grid, below keep_prob exactly where
 * DropoutGenMask of the same name keeps the element; a padded piece's
 * padding is 0; another name, seed or step draws other values. */
Test(uniform_real, pieces_are_the_whole_and_dropout_draws)
{
	enum { A = 4, B = 6, C = 10, N = A * B * C };
	const int64_t g[3] = {A, B, C}, l[3] = {A / 2, B / 3, C / 2}, z[3] = {0, 0, 0};
	float whole[N], piece[N], other[N];
	uint8_t m[N];
	sc_uniform_real(NULL, whole, g, 3, z, g, "u", 9, 2);
	sc_dropout_gen_mask(NULL, m, g, 3, z, g, "u", 9, 2, 0.3);
	for (int i = 0; i < N; i++) {
		cr_assert(whole[i] >= 0.0f && whole[i] < 1.0f, "element %d is %g", i, whole[i]);
		cr_assert_eq(whole[i] * 16777216.0f, floorf(whole[i] * 16777216.0f), "element %d off the 2^-24 grid", i);
		cr_assert_eq(m[i], whole[i] < 0.3f, "element %d: the mask is the draw below keep_prob", i);
	}
	for (int p = 0; p < 2 * 3 * 2; p++) {
		int64_t s[3] = {p / 6 * l[0], p / 2 % 3 * l[1], p % 2 * l[2]};
		sc_uniform_real(NULL, piece, g, 3, s, l, "u", 9, 2);
		int n = 0;
		for (int a = 0; a < l[0]; a++)
			for (int b = 0; b < l[1]; b++)
				for (int c = 0; c < l[2]; c++, n++)
					cr_assert_eq(piece[n], whole[((s[0] + a) * B + s[1] + b) * C + s[2] + c], "piece %d", p);
	}
	const int64_t ug[2] = {5, 7}, st[2] = {3, 4}, ld[2] = {3, 4};
	float w[35], wp[12];
	sc_uniform_real(NULL, w, ug, 2, z, ug, "v", 2, 4);
	sc_uniform_real(NULL, wp, ug, 2, st, ld, "v", 2, 4);
	for (int i = 0; i < 12; i++) {
		int64_t gi = st[0] + i / 4, gj = st[1] + i % 4;
		cr_assert_eq(wp[i], gi < 5 && gj < 7 ? w[gi * 7 + gj] : 0.0f, "padded piece (%d, %d)", i / 4, i % 4);
	}
	int same = 0;
	sc_uniform_real(NULL, other, g, 3, z, g, "u", 9, 3);
	for (int i = 0; i < N; i++)
		same += other[i] == whole[i];
	cr_assert_lt(same, 4, "the next step draws other values (%d equal)", same);
}

/* An uneven shard's piece: (3, 4) at (3, 4) of a (5, 7) whole holds (2, 3)
 * real elements. They get the 1-rank run's mask; the padding gets 0, whatever
 * x holds there. */
Test(dropout, padded_piece_is_the_whole_then_zeros)
{
	const int64_t g[2] = {5, 7}, st[2] = {3, 4}, ld[2] = {3, 4};
	float x[35], whole[35], xs[12], piece[12];
	for (int i = 0; i < 35; i++)
		x[i] = 0.5f * (float)i + 1;
	sc_dropout(NULL, x, whole, g, 2, (const int64_t[]){0, 0}, g, "d", 2, 4, 0.5);
	for (int i = 0; i < 12; i++) {
		int64_t gi = st[0] + i / 4, gj = st[1] + i % 4;
		xs[i] = gi < 5 && gj < 7 ? x[gi * 7 + gj] : 99.0f;
	}
	sc_dropout(NULL, xs, piece, g, 2, st, ld, "d", 2, 4, 0.5);
	int kept = 0;
	for (int i = 0; i < 12; i++) {
		int64_t gi = st[0] + i / 4, gj = st[1] + i % 4;
		bool real = gi < 5 && gj < 7;
		cr_assert_eq(piece[i], real ? whole[gi * 7 + gj] : 0.0f, "(%d, %d)", i / 4, i % 4);
		kept += real && piece[i] != 0;
	}
	cr_assert(kept > 0 && kept < 6, "the mask keeps some of the 6 real elements: %d", kept);
}

/* ---- sc_fill_pad: the padding of an unevenly split dim ---- */

/* x (3, 4, 2) with 2 real elements along dim 1 (a middle dim) and 2 along
 * dim 0, float32 and bfloat16 (-inf and 0.1 rounded to it), apart and in
 * place: everything before real is x, the rest value. */
Test(fill_pad, float32_and_bfloat16_any_dim)
{
	const int64_t dims[3] = {3, 4, 2};
	for (int dim = 0; dim < 2; dim++)
		for (int half = 0; half < 2; half++)
			for (int inplace = 0; inplace < 2; inplace++) {
				sc_dtype dt = half ? SC_BF16 : SC_F32;
				size_t es = half ? 2 : 4;
				double value = dim ? -INFINITY : 0.1;
				float xf[24];
				char x[24 * 4], y[24 * 4], v[4];
				for (int i = 0; i < 24; i++)
					xf[i] = (float)i - 5.5f;
				if (half)
					sc_cpu_cast(xf, SC_F32, x, SC_BF16, 24);
				else
					memcpy(x, xf, sizeof xf);
				sc_cpu_fill(v, dt, 1, value);
				char *out = inplace ? x : y;
				if (inplace) {
					memcpy(y, x, sizeof x);   /* y keeps x */
					sc_fill_pad(NULL, x, x, dt, dims, 3, dim, 2, value);
				} else {
					memset(y, 0x33, sizeof y);
					sc_fill_pad(NULL, x, y, dt, dims, 3, dim, 2, value);
				}
				const char *orig = inplace ? y : x;
				for (int i = 0; i < 24; i++) {
					int64_t at = dim ? i / 2 % 4 : i / 8;
					const char *want = at >= 2 ? v : orig + (size_t)i * es;
					cr_assert_eq(memcmp(out + (size_t)i * es, want, es), 0, "dim %d %s %s: element %d", dim,
					             half ? "bf16" : "f32", inplace ? "in place" : "apart", i);
				}
			}
	uint16_t v;
	sc_cpu_fill(&v, SC_BF16, 1, -INFINITY);
	cr_assert_eq(v, 0xff80, "-inf as bfloat16");
	sc_cpu_fill(&v, SC_BF16, 1, 0.1);
	cr_assert_eq(v, 0x3dcd, "0.1 as bfloat16, nearest");
}

/* real 0: all value; real the whole dim: a copy; negative dims count from the end. */
Test(fill_pad, edges)
{
	const int64_t dims[2] = {2, 3};
	const float x[6] = {1, 2, 3, 4, 5, 6};
	float y[6];
	sc_fill_pad(NULL, x, y, SC_F32, dims, 2, -1, 0, 7);
	for (int i = 0; i < 6; i++)
		cr_assert_eq(y[i], 7.0f);
	sc_fill_pad(NULL, x, y, SC_F32, dims, 2, 0, 2, 7);
	cr_assert_eq(memcmp(y, x, sizeof x), 0);
	sc_fill_pad(NULL, x, y, SC_F32, dims, 2, -1, 1, -1);
	cr_assert_arr_eq(y, ((const float[]){1, -1, -1, 4, -1, -1}), sizeof y);
}

/* CumSum and CumProd by hand, every exclusive and reverse, along the last
 * dim and the first; a split axis's pieces (the totals of 2 slices carried)
 * give the whole's values. */
Test(scan, by_hand)
{
	const float x[4] = {1, 2, 3, 4};
	const float sums[4][4] = {{1, 3, 6, 10}, {0, 1, 3, 6}, {10, 9, 7, 4}, {9, 7, 4, 0}};
	const float prods[4][4] = {{1, 2, 6, 24}, {1, 1, 2, 6}, {24, 24, 12, 4}, {24, 12, 4, 1}};
	float y[4];
	for (int mode = 0; mode < 4; mode++) {   /* exclusive bit 0, reverse bit 1 */
		sc_cpu_cumsum(0, x, y, 1, 4, 1, mode & 1, mode >> 1);
		cr_assert(t_close("cumsum", y, sums[mode], 4, 0, 0));
		sc_cpu_cumsum(1, x, y, 4, 1, 1, mode & 1, mode >> 1);   /* four lines of one */
		cr_assert(t_close("cumsum of one", y, (mode & 1) ? (const float[]){1, 1, 1, 1} : x, 4, 0, 0));
		sc_cpu_cumsum(1, x, y, 1, 4, 1, mode & 1, mode >> 1);
		cr_assert(t_close("cumprod", y, prods[mode], 4, 0, 0));
		/* as (1, 2) slices of 2: totals (3, 7) sum, (2, 12) product */
		float ys[4];
		sc_cpu_cumsum_part(0, x, (const float[]){3, 7}, ys, 0, 2, 1, 2, 1, mode & 1, mode >> 1);
		sc_cpu_cumsum_part(0, x + 2, (const float[]){3, 7}, ys + 2, 2, 2, 1, 2, 1, mode & 1, mode >> 1);
		cr_assert(t_close("cumsum in slices", ys, sums[mode], 4, 0, 0));
		sc_cpu_cumsum_part(1, x, (const float[]){2, 12}, ys, 0, 2, 1, 2, 1, mode & 1, mode >> 1);
		sc_cpu_cumsum_part(1, x + 2, (const float[]){2, 12}, ys + 2, 2, 2, 1, 2, 1, mode & 1, mode >> 1);
		cr_assert(t_close("cumprod in slices", ys, prods[mode], 4, 0, 0));
	}
	/* (2, 2) along dim 0: columns (1, 3) and (2, 4) */
	sc_cpu_cumsum(0, x, y, 1, 2, 2, 0, 0);
	cr_assert(t_close("cumsum along dim 0", y, (const float[]){1, 2, 4, 6}, 4, 0, 0));
}

/* Zeta, Lgamma and its slope against mpmath's values (zeta(x, q), digamma(x),
 * log |Gamma(x)|), within Float32's rounding; Zeta's poles and domain. */
Test(special_functions, zeta_lgamma_digamma)
{
	const float zx[5] = {2, 3, 1.5f, 4.5f, 2}, zq[5] = {1, 2, 0.5f, 3.25f, -1.5f};
	const double zw[5] = {1.64493406684823, 0.202056903159594, 4.77653794755483, 0.00764789380252909,
	                      9.37924664498912};
	float y[5];
	sc_cpu_binary(SC_ZETA, zx, (const int64_t[]){5}, 1, zq, (const int64_t[]){5}, 1, y, (const int64_t[]){5}, 1);
	for (int i = 0; i < 5; i++)
		cr_assert(fabs(y[i] - zw[i]) <= 2e-6 * fabs(zw[i]), "zeta(%g, %g) = %.9g, want %.9g", zx[i], zq[i], y[i],
		          zw[i]);
	const float px[4] = {1, 0.9f, 2, 0.5f}, pq[4] = {1, -2, 0, 1};
	sc_cpu_binary(SC_ZETA, px, (const int64_t[]){4}, 1, pq, (const int64_t[]){4}, 1, y, (const int64_t[]){4}, 1);
	cr_assert(isinf(y[0]) && isnan(y[1]) && isinf(y[2]) && isnan(y[3]), "zeta's poles and domain: %g %g %g %g", y[0],
	          y[1], y[2], y[3]);
	const float dx[5] = {1, 0.5f, -0.5f, 7.3f, -2.6f}, ones[5] = {1, 1, 1, 1, 1};
	const double dw[5] = {-0.577215664901533, -1.96351002602142, 0.0364899739785765, 1.91782033563799,
	                      0.114897506696934};
	sc_cpu_unary_grad(SC_U_LGAMMA, 0, dx, ones, y, 5);
	for (int i = 0; i < 5; i++)
		cr_assert(fabs(y[i] - dw[i]) <= 1e-5 * (1 + fabs(dw[i])), "digamma(%g) = %.9g, want %.9g", dx[i], y[i], dw[i]);
	const float lx[2] = {0.3f, -2.6f};
	sc_cpu_unary(SC_U_LGAMMA, 0, lx, y, 2);
	cr_assert(fabs(y[0] - 1.09579799481808) < 1e-5 && fabs(y[1] + 0.118011632805397) < 1e-5, "lgamma %g %g", y[0],
	          y[1]);
}

/* The integer operators at both widths: Invert, PopulationCount (a negative
 * Int32's 32 bits), the shifts broadcasting a row of counts, MindSpore's
 * modulo of a count past the width, and shardc's 0 or sign where C leaves
 * the shift undefined. */
Test(int_math, by_hand)
{
	const int32_t k[2][4] = {{5, -6, 1, -1}, {7, 1 << 30, -8, 3}}, s[4] = {1, 2, 33, -1};
	const int64_t kd[2] = {2, 4}, sd[1] = {4};
	int32_t y[8];
	sc_cpu_int_math(SC_INT_INVERT, SC_I32, k, kd, 2, NULL, NULL, 0, y, kd, 2);
	cr_assert(y[0] == -6 && y[1] == 5 && y[3] == 0 && y[6] == 7, "invert %d %d %d %d", y[0], y[1], y[3], y[6]);
	sc_cpu_int_math(SC_INT_POPCOUNT, SC_I32, k, kd, 2, NULL, NULL, 0, y, kd, 2);
	cr_assert(y[0] == 2 && y[1] == 30 && y[3] == 32 && y[5] == 1, "popcount %d %d %d %d", y[0], y[1], y[3], y[5]);
	sc_cpu_int_math(SC_INT_LEFT_SHIFT, SC_I32, k, kd, 2, s, sd, 1, y, kd, 2);
	/* 5 << 1, -6 << 2, 1 << (33 % 32), -1 << -1 (undefined in C: 0); 7 << 1, 2^30 << 2 wraps to 0 */
	cr_assert(y[0] == 10 && y[1] == -24 && y[2] == 2 && y[3] == 0 && y[4] == 14 && y[5] == 0,
	          "left shift %d %d %d %d %d %d", y[0], y[1], y[2], y[3], y[4], y[5]);
	sc_cpu_int_math(SC_INT_RIGHT_SHIFT, SC_I32, k, kd, 2, s, sd, 1, y, kd, 2);
	/* 5 >> 1, -6 >> 2 (arithmetic: -2), 1 >> 1, -1 >> -1 (its sign: -1); -8 >> 33 % 32 */
	cr_assert(y[0] == 2 && y[1] == -2 && y[2] == 0 && y[3] == -1 && y[6] == -4, "right shift %d %d %d %d %d", y[0],
	          y[1], y[2], y[3], y[6]);
	const int64_t big[2] = {-1, (int64_t)1 << 40}, bs[2] = {40, 64};
	int64_t z[2];
	sc_cpu_int_math(SC_INT_POPCOUNT, SC_I64, big, (const int64_t[]){2}, 1, NULL, NULL, 0, z, (const int64_t[]){2}, 1);
	cr_assert(z[0] == 64 && z[1] == 1, "popcount64 %lld %lld", (long long)z[0], (long long)z[1]);
	sc_cpu_int_math(SC_INT_LEFT_SHIFT, SC_I64, big, (const int64_t[]){2}, 1, bs, (const int64_t[]){2}, 1, z,
	                (const int64_t[]){2}, 1);
	cr_assert(z[0] == -((int64_t)1 << 40) && z[1] == 0, "left shift64 %lld %lld", (long long)z[0], (long long)z[1]);
}

/* ReverseV2 along dims 0 and 2 of (2, 2, 3); TraceV2 of (2, 3, 4) along
 * dims 2 and 1 with offsets 1, -1 and 5 (past the matrix: 0), and its
 * gradient dy on those diagonals. */
Test(reverse_trace, by_hand)
{
	float x[24], y[24];
	for (int i = 0; i < 24; i++)
		x[i] = (float)i;
	sc_cpu_reverse(x, y, (const int64_t[]){2, 2, 3}, 3, 5u);
	const float rw[12] = {8, 7, 6, 11, 10, 9, 2, 1, 0, 5, 4, 3};
	cr_assert(memcmp(y, rw, sizeof rw) == 0, "reverse %g %g %g", y[0], y[1], y[3]);
	const int64_t d[3] = {2, 3, 4};
	sc_cpu_trace(x, y, d, 3, 2, 1, 1);   /* x[b, i + 1, i] (i along dim 2) */
	cr_assert(y[0] == 4 + 9 && y[1] == 16 + 21, "trace +1: %g %g", y[0], y[1]);
	sc_cpu_trace(x, y, d, 3, 1, 2, -1);   /* x[b, i, i - 1]: the same diagonal */
	cr_assert(y[0] == 4 + 9 && y[1] == 16 + 21, "trace -1: %g %g", y[0], y[1]);
	sc_cpu_trace(x, y, d, 3, 1, 2, 5);
	cr_assert(y[0] == 0 && y[1] == 0, "trace past: %g %g", y[0], y[1]);
	float dx[24];
	sc_cpu_trace_grad((const float[]){1, 2}, dx, d, 3, 2, 1, 1);
	float sum = 0;
	for (int i = 0; i < 24; i++)
		sum += dx[i];
	cr_assert(dx[4] == 1 && dx[9] == 1 && dx[16] == 2 && dx[21] == 2 && sum == 6, "trace grad");
}
