/* test_rt_grads.c: every backward kernel against central finite differences
 * of its forward kernel.
 *
 * For a forward y = f(x) and random weights w, L(x) = sum w y; the backward
 * kernel given dy = w must return dL/dx, which we estimate as
 * (L(x + h e_i) - L(x - h e_i)) / 2h for each element i. Inputs stay away
 * from kinks (ReLU at 0, L1 at equality, Maximum at ties) so the estimate is
 * good to the tolerance. Matmul gradients are shown to be sc_matmul with
 * transposes, as the header promises. The broadcasting binary gradient is
 * also checked against its sums written out, on every broadcast case of
 * rt_test.h. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_kernels.h"
#include "rt_test.h"

enum { MAXN = 512 };

/* y = f(x) for the operand being differentiated; ctx holds the rest */
typedef void (*Fwd)(const float *x, float *y, const void *ctx);

static double objective(Fwd f, const float *x, const void *ctx, const float *w, int ny)
{
	float y[MAXN];
	f(x, y, ctx);
	double s = 0;
	for (int i = 0; i < ny; i++)
		s += (double)w[i] * y[i];
	return s;
}

/* checks grad against finite differences of sum w f(x) */
static void check_grad(const char *what, Fwd f, const float *x, int nx, const void *ctx, const float *w, int ny,
                       const float *grad)
{
	float xp[MAXN], num[MAXN];
	const float h = 1e-2f;
	memcpy(xp, x, (size_t)nx * sizeof *x);
	for (int i = 0; i < nx; i++) {
		xp[i] = x[i] + h;
		double lp = objective(f, xp, ctx, w, ny);
		xp[i] = x[i] - h;
		double lm = objective(f, xp, ctx, w, ny);
		xp[i] = x[i];
		num[i] = (float)((lp - lm) / (2.0 * ((double)(x[i] + h) - (double)x[i])));
	}
	cr_assert(t_close(what, grad, num, nx, 2e-3, 1e-2));
}

static void rand_fill(float *x, int n, uint64_t seed, float lo, float hi)
{
	uint64_t s = seed;
	t_fill(x, n, &s, lo, hi);
}

/* ---- unary ---- */

typedef struct {
	sc_unop op;
	int n;
} UnCtx;

static void un_fwd(const float *x, float *y, const void *c)
{
	const UnCtx *u = c;
	sc_cpu_unary(u->op, T_UNARY_P, x, y, u->n);
}

Test(grad, unary)
{
	static const struct {
		sc_unop op;
		const char *name;
		float lo, hi;
	} ops[] = {
		{SC_U_RELU, "relu", -2, 2}, {SC_U_GELU, "gelu", -3, 3}, {SC_U_GELU_ERF, "gelu_erf", -3, 3},
		{SC_U_TANH, "tanh", -2, 2},
		{SC_U_SIGMOID, "sigmoid", -3, 3}, {SC_U_EXP, "exp", -1, 1.5f}, {SC_U_LOG, "log", 0.5f, 3},
		{SC_U_NEG, "neg", -2, 2}, {SC_U_SQRT, "sqrt", 0.5f, 3}, {SC_U_RSQRT, "rsqrt", 0.5f, 3},
		{SC_U_SILU, "silu", -4, 4}, {SC_U_SQUARE, "square", -2, 2}, {SC_U_ABS, "abs", -2, 2},
		{SC_U_SIN, "sin", -3, 3}, {SC_U_COS, "cos", -3, 3}, {SC_U_ERF, "erf", -2, 2},
		{SC_U_RECIPROCAL, "reciprocal", 0.5f, 3}, {SC_U_LOG1P, "log1p", -0.5f, 3}, {SC_U_EXPM1, "expm1", -2, 1.5f},
		{SC_U_SOFTPLUS, "softplus", -4, 4}, {SC_U_FLOOR, "floor", 0.1f, 0.9f}, {SC_U_SIGN, "sign", -2, 2},
		{SC_U_CEIL, "ceil", 0.1f, 0.9f}, {SC_U_ROUND, "round", 0.1f, 0.4f}, {SC_U_TAN, "tan", -1.2f, 1.2f},
		{SC_U_ATAN, "atan", -3, 3}, {SC_U_SINH, "sinh", -2, 2}, {SC_U_COSH, "cosh", -2, 2},
		{SC_U_HSWISH, "hswish", -2.9f, 2.9f}, {SC_U_HSIGMOID, "hsigmoid", -2.9f, 2.9f},
		{SC_U_ERFC, "erfc", -2, 2}, {SC_U_INV, "inv", 0.5f, 3}, {SC_U_ACOS, "acos", -0.9f, 0.9f},
		{SC_U_ASIN, "asin", -0.9f, 0.9f}, {SC_U_ATANH, "atanh", -0.9f, 0.9f}, {SC_U_ASINH, "asinh", -3, 3},
		{SC_U_ACOSH, "acosh", 1.2f, 4}, {SC_U_RINT, "rint", 0.1f, 0.4f}, {SC_U_ELU, "elu", -3, 3},
		{SC_U_MISH, "mish", -4, 4}, {SC_U_SELU, "selu", 0.05f, 3},   /* x < 0: MindSpore's slope, below */
		{SC_U_LOG_SIGMOID, "log_sigmoid", -4, 4}, {SC_U_ZEROS_LIKE, "zeros_like", -2, 2},
		{SC_U_ONES_LIKE, "ones_like", -2, 2}, {SC_U_LEAKY_RELU, "leaky_relu", -2, 2},   /* alpha T_UNARY_P */
		{SC_U_RELU6, "relu6", 0.1f, 5.9f}, {SC_U_SOFTSIGN, "softsign", -3, 3}, {SC_U_FAST_GELU, "fast_gelu", -3, 3},
		{SC_U_TRUNC, "trunc", 0.1f, 0.9f}, {SC_U_ERFINV, "erfinv", -0.9f, 0.9f},
		{SC_U_HSHRINK, "hshrink", 0.35f, 2}, {SC_U_SOFT_SHRINK, "soft_shrink", 0.35f, 2},   /* lambd T_UNARY_P */
		{SC_U_LGAMMA, "lgamma", 0.3f, 4},
	};
	bool listed[SC_U_COUNT] = {0};   /* every row of SC_UNARY_TABLE is here */
	for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++)
		listed[ops[k].op] = true;
	for (int op = 0; op < SC_U_COUNT; op++)
		cr_assert(listed[op], "unary kernel %d has no finite-difference case here", op);
	const char reads[] = {   /* X, Y or N: what each gradient reads */
#define READS(name, t, fwd, grad) [SC_U_##name] = #t[0],
		SC_UNARY_TABLE(READS)
#undef READS
	};
	for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
		float x[40], y[40], w[40], dx[40];
		rand_fill(x, 40, 10 + k, ops[k].lo, ops[k].hi);
		for (int i = 0; i < 40; i++)   /* keep relu away from its kink */
			if (fabsf(x[i]) < 0.05f)
				x[i] = 0.1f;
		rand_fill(w, 40, 50 + k, -1, 1);
		UnCtx c = {ops[k].op, 40};
		sc_cpu_unary(ops[k].op, T_UNARY_P, x, y, 40);
		char r = reads[ops[k].op];
		sc_cpu_unary_grad(ops[k].op, T_UNARY_P, r == 'Y' ? y : r == 'X' ? x : NULL, w, dx, 40);
		check_grad(ops[k].name, un_fwd, x, 40, &c, w, 40, dx);
	}
	/* SeLU below 0: MindSpore's bprop is scale EluGrad(dy, y), scale dy (y + 1),
	 * not the slope scale alpha e^x that finite differences would find */
	float x[8], y[8], w[8], dx[8];
	rand_fill(x, 8, 3, -3, -0.05f);
	rand_fill(w, 8, 4, -1, 1);
	sc_cpu_unary(SC_U_SELU, 0, x, y, 8);
	sc_cpu_unary_grad(SC_U_SELU, 0, y, w, dx, 8);
	for (int i = 0; i < 8; i++) {
		double want = 1.0507009873554805 * w[i] * (1.0507009873554805 * 1.6732632423543772 * expm1(x[i]) + 1);
		cr_assert(fabs(dx[i] - want) <= 1e-5 * (1 + fabs(want)), "selu dx[%d] %g, want %g", i, dx[i], want);
	}
}

/* ---- select: with respect to a (true) and b (false); its gradients are
 * sc_select with dy on one side and zeros (NULL) on the other ---- */

typedef struct {
	const uint8_t *cond;
	const float *a, *b;
	int wrt;   /* 0: a, 1: b */
} SelCtx;

static void sel_fwd(const float *v, float *y, const void *c)
{
	const SelCtx *s = c;
	sc_cpu_select(s->cond, s->wrt == 0 ? v : s->a, s->wrt == 1 ? v : s->b, y, 40);
}

Test(grad, select)
{
	uint8_t cond[40];
	float a[40], b[40], w[40], da[40], db[40];
	for (int i = 0; i < 40; i++)
		cond[i] = (uint8_t)(i % 3 != 1);
	rand_fill(a, 40, 80, -2, 2);
	rand_fill(b, 40, 81, -2, 2);
	rand_fill(w, 40, 82, -1, 1);
	sc_cpu_select(cond, w, NULL, da, 40);
	sc_cpu_select(cond, NULL, w, db, 40);
	SelCtx c = {cond, a, b, 0};
	check_grad("select da", sel_fwd, a, 40, &c, w, 40, da);
	c.wrt = 1;
	check_grad("select db", sel_fwd, b, 40, &c, w, 40, db);
}

/* ---- rotary: x (2, 2, 3, 4), cos (1, 1, 3, 4) broadcast, sin (2, 1, 3, 4);
 * dx is the transposed kernel on dy, dcos and dsin the forward with dy for
 * one table and zeros for the other, summed down to the table's shape ---- */

typedef struct {
	int mode, wrt;   /* 0: x, 1: cos, 2: sin */
	const float *x, *cos, *sin;
} RotCtx;

static const int64_t rot_x[4] = {2, 2, 3, 4}, rot_c[4] = {1, 1, 3, 4}, rot_s[4] = {2, 1, 3, 4};

static void rot_fwd(const float *v, float *y, const void *c)
{
	const RotCtx *r = c;
	sc_cpu_rotary(r->mode, 0, r->wrt == 0 ? v : r->x, rot_x, r->wrt == 1 ? v : r->cos, rot_c, r->wrt == 2 ? v : r->sin,
	              rot_s, y);
}

Test(grad, rotary)
{
	float x[48], cs[12], sn[24], w[48], dx[48], full[48], dc[12], ds[24];
	rand_fill(x, 48, 90, -2, 2);
	rand_fill(cs, 12, 91, -1, 1);
	rand_fill(sn, 24, 92, -1, 1);
	rand_fill(w, 48, 93, -1, 1);
	for (int mode = 0; mode < 2; mode++) {
		RotCtx c = {mode, 0, x, cs, sn};
		sc_cpu_rotary(mode, 1, w, rot_x, cs, rot_c, sn, rot_s, dx);
		check_grad(mode ? "rotary dx, interleaved" : "rotary dx", rot_fwd, x, 48, &c, w, 48, dx);
		sc_cpu_rotary(mode, 0, x, rot_x, w, rot_x, NULL, rot_x, full);
		sc_cpu_sum_to_shape(full, rot_x, 4, dc, rot_c, 4);
		c.wrt = 1;
		check_grad(mode ? "rotary dcos, interleaved" : "rotary dcos", rot_fwd, cs, 12, &c, w, 48, dc);
		sc_cpu_rotary(mode, 0, x, rot_x, NULL, rot_x, w, rot_x, full);
		sc_cpu_sum_to_shape(full, rot_x, 4, ds, rot_s, 4);
		c.wrt = 2;
		check_grad(mode ? "rotary dsin, interleaved" : "rotary dsin", rot_fwd, sn, 24, &c, w, 48, ds);
	}
}

/* ---- FlashAttentionScore: each gradient against finite differences on
 * small shapes (one with S past a 64-query tile and S_kv past a 128-key
 * one), and the forward and gradients against attention written out with
 * its (S, S_kv) probabilities in double precision, masks of both kinds and
 * causal, a row that sees no key included, and fewer key heads than query
 * heads (grouped-query and multi-query attention) ---- */

typedef struct {
	int wrt, causal, mask_float;
	const float *q, *k, *v;
	const void *mask;
	const int64_t *md, *dims;
	float scale;
} FaCtx;

static void fa_fwd(const float *x, float *y, const void *c)
{
	const FaCtx *a = c;
	sc_cpu_flash_attention(a->wrt == 0 ? x : a->q, a->wrt == 1 ? x : a->k, a->wrt == 2 ? x : a->v, a->mask,
	                       a->mask_float, a->md, y, a->dims, a->scale, a->causal, SC_FA_BNSD);
}

/* o and the gradients dq, dk, dv from g, with the probabilities stored */
static void fa_naive(const FaCtx *a, const float *g, float *o, float *dq, float *dk, float *dv)
{
	int64_t B = a->dims[0], N = a->dims[1], S = a->dims[2], T = a->dims[3], D = a->dims[4], NK = a->dims[5];
	int64_t ms[3] = {0, 0, 0};
	if (a->mask)
		SC_FA_MASK_STRIDES(a->md, ms);
	double *p = malloc(sizeof(double) * (size_t)(S * T)), *dp = malloc(sizeof(double) * (size_t)(S * T));
	memset(dk, 0, sizeof(float) * (size_t)(B * NK * T * D));
	memset(dv, 0, sizeof(float) * (size_t)(B * NK * T * D));
	for (int64_t b = 0; b < B; b++)
		for (int64_t h = 0; h < N; h++) {
			int64_t bh = b * N + h, kh = b * NK + h / (N / NK);   /* the key head query head h reads */
			const float *q = a->q + bh * S * D, *k = a->k + kh * T * D, *v = a->v + kh * T * D, *gg = g + bh * S * D;
			for (int64_t i = 0; i < S; i++) {
				double mx = -INFINITY, sum = 0;
				for (int64_t j = 0; j < T; j++) {
					double sc = 0;
					for (int64_t e = 0; e < D; e++)
						sc += (double)q[i * D + e] * k[j * D + e];
					p[i * T + j] = SC_FA_HIDDEN(a->mask, a->mask_float, ms, b, h, i, j, a->causal) ? -INFINITY : sc * a->scale;
					mx = fmax(mx, p[i * T + j]);
				}
				for (int64_t j = 0; j < T; j++)
					sum += p[i * T + j] = mx == -INFINITY ? 0 : exp(p[i * T + j] - mx);
				for (int64_t j = 0; j < T; j++)
					p[i * T + j] = sum > 0 ? p[i * T + j] / sum : 0;
				for (int64_t e = 0; e < D; e++) {
					double acc = 0;
					for (int64_t j = 0; j < T; j++)
						acc += p[i * T + j] * v[j * D + e];
					o[(bh * S + i) * D + e] = (float)acc;
				}
				double di = 0;
				for (int64_t j = 0; j < T; j++) {
					double x = 0;
					for (int64_t e = 0; e < D; e++)
						x += (double)gg[i * D + e] * v[j * D + e];
					dp[i * T + j] = x;
					di += x * p[i * T + j];
				}
				for (int64_t j = 0; j < T; j++)
					dp[i * T + j] = p[i * T + j] * (dp[i * T + j] - di);   /* dS */
			}
			for (int64_t i = 0; i < S; i++)
				for (int64_t e = 0; e < D; e++) {
					double acc = 0;
					for (int64_t j = 0; j < T; j++)
						acc += dp[i * T + j] * k[j * D + e];
					dq[(bh * S + i) * D + e] = (float)(a->scale * acc);
				}
			for (int64_t j = 0; j < T; j++)
				for (int64_t e = 0; e < D; e++) {
					double ak = 0, av = 0;
					for (int64_t i = 0; i < S; i++) {
						ak += dp[i * T + j] * q[i * D + e];
						av += p[i * T + j] * gg[i * D + e];
					}
					dk[(kh * T + j) * D + e] += (float)(a->scale * ak);   /* summed over the heads it serves */
					dv[(kh * T + j) * D + e] += (float)av;
				}
		}
	free(p);
	free(dp);
}

Test(grad, flash_attention_fd)
{
	static const struct {
		int64_t dims[6];   /* B, N, S, S_kv, D, N_kv */
		int causal, mask;   /* mask: 0 none, 1 float (S, S_kv), 2 Bool (B, 1, S, S_kv) */
	} cases[] = {
		{{1, 2, 5, 7, 3, 2}, 0, 1}, {{2, 1, 4, 4, 3, 1}, 1, 0}, {{2, 2, 6, 5, 2, 2}, 0, 2}, {{1, 1, 70, 130, 3, 1}, 0, 0},
		{{1, 1, 130, 130, 2, 1}, 1, 1}, {{2, 4, 5, 6, 3, 2}, 1, 2}, {{1, 3, 4, 7, 2, 1}, 0, 1},
	};
	for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
		const int64_t *d = cases[c].dims;
		int nq = (int)(d[0] * d[1] * d[2] * d[4]), nk = (int)(d[0] * d[5] * d[3] * d[4]);
		int64_t md[4] = {cases[c].mask == 2 ? d[0] : 1, 1, d[2], d[3]};
		float q[MAXN], k[MAXN], v[MAXN], w[MAXN], o[MAXN], g[MAXN];
		float *mf = malloc(sizeof(float) * (size_t)(md[0] * d[2] * d[3]));
		uint8_t *mb = malloc((size_t)(md[0] * d[2] * d[3]));
		rand_fill(q, nq, 100 + c, -1, 1);
		rand_fill(k, nk, 200 + c, -1, 1);
		rand_fill(v, nk, 300 + c, -1, 1);
		rand_fill(w, nq, 400 + c, -1, 1);
		for (int i = 0; i < md[0] * d[2] * d[3]; i++)
			mf[i] = (float)(mb[i] = i % 3 == 1);
		FaCtx a = {0, cases[c].causal, cases[c].mask == 1, q, k, v, cases[c].mask == 1 ? (void *)mf : cases[c].mask ? (void *)mb : NULL,
		           md, d, 0.7f};
		sc_cpu_flash_attention(q, k, v, a.mask, a.mask_float, md, o, d, a.scale, a.causal, SC_FA_BNSD);
		for (int wrt = 0; wrt < 3; wrt++) {
			char what[80];
			snprintf(what, sizeof what, "flash_attention d%c, case %zu", "qkv"[wrt], c);
			sc_cpu_flash_attention_grad(q, k, v, a.mask, a.mask_float, md, o, w, wrt == 0 ? g : NULL, wrt == 1 ? g : NULL,
			                            wrt == 2 ? g : NULL, d, a.scale, a.causal, SC_FA_BNSD);
			a.wrt = wrt;
			check_grad(what, fa_fwd, wrt ? wrt == 1 ? k : v : q, wrt ? nk : nq, &a, w, nq, g);
		}
		free(mf);
		free(mb);
	}
}

Test(grad, flash_attention_naive)
{
	static const struct {
		int64_t dims[6];   /* B, N, S, S_kv, D, N_kv */
		int causal, mask;
	} cases[] = {
		{{2, 3, 100, 150, 16, 3}, 0, 2}, {{1, 2, 200, 200, 8, 2}, 1, 0}, {{2, 2, 65, 129, 32, 2}, 0, 1},
		{{1, 1, 300, 300, 64, 1}, 1, 2}, {{1, 1, 64, 128, 5, 1}, 0, 0}, {{2, 6, 70, 140, 8, 2}, 1, 2},
		{{1, 4, 90, 90, 16, 1}, 0, 1},
	};
	for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
		const int64_t *d = cases[c].dims;
		int64_t nq = d[0] * d[1] * d[2] * d[4], nk = d[0] * d[5] * d[3] * d[4], nm = d[0] * d[2] * d[3];
		int64_t md[4] = {cases[c].mask == 2 ? d[0] : 1, 1, d[2], d[3]};
		float *q = malloc(sizeof(float) * (size_t)nq), *k = malloc(sizeof(float) * (size_t)nk);
		float *v = malloc(sizeof(float) * (size_t)nk), *g = malloc(sizeof(float) * (size_t)nq);
		float *o = malloc(sizeof(float) * (size_t)nq), *ow = malloc(sizeof(float) * (size_t)nq);
		float *gx = malloc(sizeof(float) * (size_t)(nq > nk ? nq : nk)), *dq = malloc(sizeof(float) * (size_t)nq);
		float *dk = malloc(sizeof(float) * (size_t)nk), *dv = malloc(sizeof(float) * (size_t)nk);
		float *mf = malloc(sizeof(float) * (size_t)nm);
		uint8_t *mb = malloc((size_t)nm);
		rand_fill(q, (int)nq, 500 + c, -2, 2);
		rand_fill(k, (int)nk, 600 + c, -2, 2);
		rand_fill(v, (int)nk, 700 + c, -1, 1);
		rand_fill(g, (int)nq, 800 + c, -1, 1);
		for (int64_t i = 0; i < nm; i++)   /* row 3 of each sees no key */
			mf[i] = (float)(mb[i] = i % 5 == 2 || i / d[3] % d[2] == 3);
		FaCtx a = {0, cases[c].causal, cases[c].mask == 1, q, k, v, cases[c].mask == 1 ? (void *)mf : cases[c].mask ? (void *)mb : NULL,
		           md, d, 0.125f};
		fa_naive(&a, g, ow, dq, dk, dv);
		sc_cpu_flash_attention(q, k, v, a.mask, a.mask_float, md, o, d, a.scale, a.causal, SC_FA_BNSD);
		char what[80];
		snprintf(what, sizeof what, "flash_attention forward, case %zu", c);
		cr_assert(t_close(what, o, ow, nq, 1e-5, 1e-4));
		float *g3[3] = {malloc(sizeof(float) * (size_t)nq), malloc(sizeof(float) * (size_t)nk),
		                malloc(sizeof(float) * (size_t)nk)};
		sc_cpu_flash_attention_grad(q, k, v, a.mask, a.mask_float, md, o, g, g3[0], g3[1], g3[2], d, a.scale, a.causal,
		                            SC_FA_BNSD);
		for (int wrt = 0; wrt < 3; wrt++) {   /* the three in one call, then each alone: the same bits */
			int64_t n = wrt ? nk : nq;
			snprintf(what, sizeof what, "flash_attention d%c against the naive, case %zu", "qkv"[wrt], c);
			cr_assert(t_close(what, g3[wrt], wrt == 0 ? dq : wrt == 1 ? dk : dv, n, 1e-4, 1e-3));
			sc_cpu_flash_attention_grad(q, k, v, a.mask, a.mask_float, md, o, g, wrt == 0 ? gx : NULL, wrt == 1 ? gx : NULL,
			                            wrt == 2 ? gx : NULL, d, a.scale, a.causal, SC_FA_BNSD);
			cr_assert(memcmp(gx, g3[wrt], sizeof(float) * (size_t)n) == 0, "%s: alone differs from together", what);
			free(g3[wrt]);
		}
		free(q), free(k), free(v), free(g), free(o), free(ow), free(gx), free(dq), free(dk), free(dv), free(mf), free(mb);
	}
}

/* (B, heads, rows, D) in BNSD order to BSND's (B, rows, heads, D), or back (back != 0) */
static void to_bsnd(const float *x, float *y, int64_t b, int64_t h, int64_t r, int64_t d, int back)
{
	for (int64_t i = 0; i < b * h * r * d; i++) {
		int64_t e = i % d, row = i / d % r, hd = i / (d * r) % h, bb = i / (d * r * h);
		int64_t j = ((bb * r + row) * h + hd) * d + e;
		if (back)
			y[i] = x[j];
		else
			y[j] = x[i];
	}
}

/* BSND (MindSpore's BSND and BSH): the forward and the three gradients equal
 * BNSD's on the same numbers, transposed, GQA and a mask included */
Test(grad, flash_attention_bsnd)
{
	static const struct {
		int64_t dims[6];
		int causal, mask;
	} cases[] = {{{2, 4, 70, 90, 8, 2}, 0, 2}, {{1, 3, 65, 65, 16, 3}, 1, 0}, {{2, 2, 20, 30, 4, 1}, 0, 1}};
	for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
		const int64_t *d = cases[c].dims;
		int64_t nq = d[0] * d[1] * d[2] * d[4], nk = d[0] * d[5] * d[3] * d[4], nm = d[0] * d[2] * d[3];
		int64_t md[4] = {cases[c].mask == 2 ? d[0] : 1, 1, d[2], d[3]};
		float *buf = malloc(sizeof(float) * (size_t)(20 * (nq > nk ? nq : nk) + 2 * nm));
		float *q = buf, *k = q + nq, *v = k + nk, *g = v + nk, *o = g + nq, *dq = o + nq, *dk = dq + nq, *dv = dk + nk;
		float *tq = dv + nk, *tk = tq + nq, *tv = tk + nk, *tg = tv + nk, *to = tg + nq, *tdq = to + nq, *tdk = tdq + nq;
		float *tdv = tdk + nk, *back = tdv + nk, *mf = back + (nq > nk ? nq : nk);
		uint8_t *mb = (uint8_t *)(mf + nm);
		rand_fill(q, (int)nq, 900 + c, -2, 2);
		rand_fill(k, (int)nk, 910 + c, -2, 2);
		rand_fill(v, (int)nk, 920 + c, -1, 1);
		rand_fill(g, (int)nq, 930 + c, -1, 1);
		for (int64_t i = 0; i < nm; i++)
			mf[i] = (float)(mb[i] = i % 5 == 2);
		const void *mask = cases[c].mask == 1 ? (void *)mf : cases[c].mask ? (void *)mb : NULL;
		int mfl = cases[c].mask == 1, causal = cases[c].causal;
		to_bsnd(q, tq, d[0], d[1], d[2], d[4], 0);
		to_bsnd(k, tk, d[0], d[5], d[3], d[4], 0);
		to_bsnd(v, tv, d[0], d[5], d[3], d[4], 0);
		to_bsnd(g, tg, d[0], d[1], d[2], d[4], 0);
		sc_cpu_flash_attention(q, k, v, mask, mfl, md, o, d, 0.3f, causal, SC_FA_BNSD);
		sc_cpu_flash_attention(tq, tk, tv, mask, mfl, md, to, d, 0.3f, causal, SC_FA_BSND);
		sc_cpu_flash_attention_grad(q, k, v, mask, mfl, md, o, g, dq, dk, dv, d, 0.3f, causal, SC_FA_BNSD);
		sc_cpu_flash_attention_grad(tq, tk, tv, mask, mfl, md, to, tg, tdq, tdk, tdv, d, 0.3f, causal, SC_FA_BSND);
		const float *got[4] = {to, tdq, tdk, tdv}, *want[4] = {o, dq, dk, dv};
		for (int w = 0; w < 4; w++) {
			int64_t n = w < 2 ? nq : nk;
			char what[80];
			to_bsnd(got[w], back, d[0], w < 2 ? d[1] : d[5], w < 2 ? d[2] : d[3], d[4], 1);
			snprintf(what, sizeof what, "flash_attention BSND %s, case %zu", w ? w == 1 ? "dq" : w == 2 ? "dk" : "dv" : "o", c);
			cr_assert(t_close(what, back, want[w], n, 1e-6, 1e-6));
		}
		free(buf);
	}
}

/* ---- softmax ---- */

typedef struct {
	const int64_t *dims;
	int ndim, axis, log;
} SmCtx;

static void sm_fwd(const float *x, float *y, const void *c)
{
	const SmCtx *s = c;
	sc_cpu_softmax(x, y, s->dims, s->ndim, s->axis, s->log);
}

Test(grad, softmax_log_softmax)
{
	const int64_t d[3] = {2, 3, 4};
	for (int axis = 0; axis < 3; axis++)
		for (int lg = 0; lg < 2; lg++) {
			float x[24], y[24], w[24], dx[24];
			rand_fill(x, 24, 3 + axis, -2, 2);
			rand_fill(w, 24, 7 + lg, -1, 1);
			SmCtx c = {d, 3, axis, lg};
			sc_cpu_softmax(x, y, d, 3, axis, lg);
			sc_cpu_softmax_grad(y, w, dx, d, 3, axis, lg);
			check_grad(lg ? "log_softmax" : "softmax", sm_fwd, x, 24, &c, w, 24, dx);
		}
}

/* ---- the normalizers: with respect to x, gamma, beta ---- */

typedef struct {
	int centered;              /* sc_norm_centered: 1 LayerNorm, 0 RmsNorm */
	const float *x, *gamma, *beta;   /* beta NULL: none */
	const int64_t *dims;
	int ndim, bna, bpa, wrt;   /* wrt 0: x, 1: gamma, 2: beta */
} LnCtx;

static void ln_fwd(const float *v, float *y, const void *c)
{
	const LnCtx *l = c;
	sc_cpu_norm(l->centered, l->wrt == 0 ? v : l->x, l->wrt == 1 ? v : l->gamma, l->wrt == 2 ? v : l->beta, y,
	            l->dims, l->ndim, l->bna, l->bpa, 1e-5);
}

/* Every begin_norm_axis and begin_params_axis pair of a (2, 3, 4); RmsNorm
 * without a beta, so with no dbeta. */
static void norm_grads(int centered)
{
	static const struct {
		int bna, bpa;
	} cases[] = {{2, 2}, {1, 2}, {2, 1}, {1, 1}, {-1, -1}, {0, 2}, {2, 0}, {0, 0}};
	char what[3][32];
	static const char *const names[3] = {"dx", "dgamma", "dbeta"};
	for (int j = 0; j < 3; j++)
		snprintf(what[j], sizeof what[j], "%s %s", centered ? "LayerNorm" : "RmsNorm", names[j]);
	const int64_t d[3] = {2, 3, 4};
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		int bpa = cases[k].bpa < 0 ? cases[k].bpa + 3 : cases[k].bpa;
		int np = (int)t_numel(d + bpa, 3 - bpa);
		float x[24], g[24], b[24], w[24], dx[24], dg[24], db[24];
		rand_fill(x, 24, 20 + k, -2, 2);
		rand_fill(g, np, 30 + k, 0.5f, 1.5f);
		rand_fill(b, np, 40 + k, -1, 1);
		rand_fill(w, 24, 60 + k, -1, 1);
		float *dbeta = centered ? db : NULL;
		sc_cpu_norm_grad(centered, w, x, g, dx, dg, dbeta, d, 3, cases[k].bna, cases[k].bpa, 1e-5);
		LnCtx c = {centered, x, g, centered ? b : NULL, d, 3, cases[k].bna, cases[k].bpa, 0};
		check_grad(what[0], ln_fwd, x, 24, &c, w, 24, dx);
		c.wrt = 1;
		check_grad(what[1], ln_fwd, g, np, &c, w, 24, dg);
		if (centered) {
			c.wrt = 2;
			check_grad(what[2], ln_fwd, b, np, &c, w, 24, db);
		}
		sc_cpu_norm_grad(centered, w, x, g, NULL, dg, NULL, d, 3, cases[k].bna, cases[k].bpa, 1e-5);   /* NULLs skip */
		/* each gradient alone is the one computed with the others, bit for bit
		 * (compiler/fuse.c computes a LayerNorm's gradients in one call) */
		float one[24];
		float *all[3] = {dx, dg, db};
		int n[3] = {24, np, np};
		for (int j = 0; j < (centered ? 3 : 2); j++) {
			sc_cpu_norm_grad(centered, w, x, g, j == 0 ? one : NULL, j == 1 ? one : NULL, j == 2 ? one : NULL, d, 3,
			                 cases[k].bna, cases[k].bpa, 1e-5);
			cr_assert(!memcmp(one, all[j], sizeof(float) * (size_t)n[j]), "%s case %zu: gradient %d alone differs",
			          what[0], k, j);
		}
	}
}

Test(grad, layernorm) { norm_grads(1); }
Test(grad, rmsnorm) { norm_grads(0); }

/* ---- the normalizers' _part forms: with respect to x (the statistics
 * held), gamma, beta, the rows' mean and their var (the mean square when
 * not centered) ---- */

typedef struct {
	int centered;
	const float *v[5];   /* x, gamma, beta, mean, var; beta and mean may be NULL */
	int wrt;             /* the index in v differentiated */
} PartCtx;

enum { PROWS = 3, PCOLS = 5 };

static void part_fwd(const float *v, float *y, const void *c)
{
	const PartCtx *p = c;
	const float *a[5];
	for (int i = 0; i < 5; i++)
		a[i] = i == p->wrt ? v : p->v[i];
	sc_cpu_norm_part(p->centered, a[0], a[1], a[2], a[3], a[4], y, PROWS, PCOLS, 1e-5);
}

static void part_grads(int centered, int with_beta)
{
	float x[PROWS * PCOLS], g[PCOLS], b[PCOLS], mean[PROWS], var[PROWS], w[PROWS * PCOLS];
	float dx[PROWS * PCOLS], dg[PCOLS], db[PCOLS], dm[PROWS], dv[PROWS];
	rand_fill(x, PROWS * PCOLS, 70, -2, 2);
	rand_fill(g, PCOLS, 71, 0.5f, 1.5f);
	rand_fill(b, PCOLS, 72, -1, 1);
	rand_fill(mean, PROWS, 73, -0.5f, 0.5f);
	rand_fill(var, PROWS, 74, 0.5f, 1.5f);
	rand_fill(w, PROWS * PCOLS, 75, -1, 1);
	sc_cpu_norm_part_grad(centered, w, x, g, centered ? mean : NULL, var, dx, dg, with_beta ? db : NULL,
	                      centered ? dm : NULL, dv, PROWS, PCOLS, 1e-5);
	PartCtx c = {centered, {x, g, with_beta ? b : NULL, centered ? mean : NULL, var}, 0};
	const float *grads[5] = {dx, dg, db, dm, dv};
	const int n[5] = {PROWS * PCOLS, PCOLS, PCOLS, PROWS, PROWS};
	static const char *const names[5] = {"dx", "dgamma", "dbeta", "dmean", "dvar"};
	for (int i = 0; i < 5; i++) {
		if (!c.v[i])
			continue;
		char what[64];
		snprintf(what, sizeof what, "%s_part %s", centered ? "LayerNorm" : "RmsNorm", names[i]);
		c.wrt = i;
		check_grad(what, part_fwd, c.v[i], n[i], &c, w, PROWS * PCOLS, grads[i]);
	}
}

Test(grad, layernorm_part) { part_grads(1, 1); }
Test(grad, rmsnorm_part)
{
	part_grads(0, 0);
	part_grads(0, 1);
}

/* ---- broadcasting binary ops: with respect to a and b ---- */

typedef struct {
	sc_binop op;
	const float *a, *b;
	const int64_t *ad, *bd, *yd;
	int an, bn, yn, wrt;
} BinCtx;

static void bin_fwd(const float *v, float *y, const void *c)
{
	const BinCtx *p = c;
	sc_cpu_binary(p->op, p->wrt ? p->a : v, p->ad, p->an, p->wrt ? v : p->b, p->bd, p->bn, y, p->yd, p->yn);
}

Test(grad, binary_broadcast)
{
	const int64_t ad[3] = {2, 3, 4}, bd[2] = {3, 1}, yd[3] = {2, 3, 4};
	const char *names[] = {"add", "sub", "mul", "div", "maximum", "minimum", "pow", "floor_div", "floor_mod", "mod",
	                       "squared_difference", "div_no_nan", "atan2", "sigmoid_ce", "xlogy", "xdivy",
	                       "mul_no_nan", "truncate_div", "truncate_mod", "hypot", "next_after", "zeta"};
	for (sc_binop op = SC_ADD; op <= SC_BINOP_LAST; op++) {
		float a[24], b[3], w[24], da[24], db[3];
		if (op == SC_FLOOR_DIV || op == SC_FLOOR_MOD || op == SC_MOD || op == SC_TRUNCATE_DIV ||
		    op == SC_TRUNCATE_MOD || op == SC_ZETA)   /* steps: against sums, below; Zeta: its own case */
			continue;
		rand_fill(a, 24, 70 + op, op == SC_POW ? 0.2f : -2, 2);   /* Pow: a base whose log is defined */
		rand_fill(b, 3, 80 + op, 0.5f, 1.5f);
		for (int i = 0; i < 24; i++)   /* no ties for maximum and minimum */
			for (int j = 0; j < 3; j++)
				if (fabsf(a[i] - b[j]) < 0.05f)
					a[i] += 0.1f;
		rand_fill(w, 24, 90 + op, -1, 1);
		sc_cpu_binary_grad(op, a, ad, 3, b, bd, 2, w, yd, 3, da, db);
		BinCtx c = {op, a, b, ad, bd, yd, 3, 2, 3, 0};
		check_grad(names[op], bin_fwd, a, 24, &c, w, 24, da);
		c.wrt = 1;
		check_grad(names[op], bin_fwd, b, 3, &c, w, 24, db);
	}
	/* the operand that is broadcast may be a (scalar a) */
	float a = 0.7f, b[6], w[6], da, db[6];
	rand_fill(b, 6, 5, 1, 2);
	rand_fill(w, 6, 6, -1, 1);
	sc_cpu_binary_grad(SC_DIV, &a, NULL, 0, b, (const int64_t[]){2, 3}, 2, w, (const int64_t[]){2, 3}, 2, &da, db);
	BinCtx c = {SC_DIV, &a, b, NULL, (const int64_t[]){2, 3}, (const int64_t[]){2, 3}, 0, 2, 2, 0};
	check_grad("div with scalar a", bin_fwd, &a, 1, &c, w, 6, &da);
}

/* Zeta(a, b): finite differences along q (b, broadcast (3, 1)), none to x
 * (MindSpore's bprop gives x zeros, not its slope). */
Test(grad, zeta)
{
	const int64_t ad[3] = {2, 3, 4}, bd[2] = {3, 1}, yd[3] = {2, 3, 4};
	float a[24], b[3], w[24], da[24], db[3];
	rand_fill(a, 24, 7, 1.5f, 3);
	rand_fill(b, 3, 8, 0.5f, 1.5f);
	rand_fill(w, 24, 9, -1, 1);
	sc_cpu_binary_grad(SC_ZETA, a, ad, 3, b, bd, 2, w, yd, 3, da, db);
	BinCtx c = {SC_ZETA, a, b, ad, bd, yd, 3, 2, 3, 1};
	check_grad("zeta wrt q", bin_fwd, b, 3, &c, w, 24, db);
	for (int i = 0; i < 24; i++)
		cr_assert(da[i] == 0, "zeta's dx[%d] %g, want 0", i, da[i]);
}

/* ReverseV2 (its own adjoint) and TraceV2 (dy on the diagonals) by finite
 * differences. */
typedef struct {
	const int64_t *d;
	int nd, trace;
} RtCtx;

static void rt_fwd(const float *x, float *y, const void *c)
{
	const RtCtx *r = c;
	if (r->trace)
		sc_cpu_trace(x, y, r->d, r->nd, 2, 0, -1);
	else
		sc_cpu_reverse(x, y, r->d, r->nd, 6u);
}

Test(grad, reverse_trace)
{
	const int64_t d[3] = {4, 2, 3};
	float x[24], w[24], dx[24];
	rand_fill(x, 24, 11, -1, 1);
	rand_fill(w, 24, 12, -1, 1);
	RtCtx c = {d, 3, 0};
	sc_cpu_reverse(w, dx, d, 3, 6u);
	check_grad("reverse", rt_fwd, x, 24, &c, w, 24, dx);
	c.trace = 1;   /* x[i - 1 (dim 0), j, i (dim 2)]: the result (2,) */
	sc_cpu_trace_grad(w, dx, d, 3, 2, 0, -1);
	check_grad("trace", rt_fwd, x, 24, &c, w, 2, dx);
}

/* Lerp: start (2, 3, 4), end (3, 1), weight (2, 1, 4), each operand's
 * gradient summed over its broadcast dims; L2Loss's x dy */
typedef struct {
	const float *in[3];
	int wrt;
} LerpCtx;

static const int64_t lerp_d[3][3] = {{2, 3, 4}, {3, 1}, {2, 1, 4}};

static void lerp_fwd(const float *v, float *y, const void *c)
{
	const LerpCtx *l = c;
	const float *in[3] = {l->in[0], l->in[1], l->in[2]};
	in[l->wrt] = v;
	sc_cpu_lerp(in[0], lerp_d[0], 3, in[1], lerp_d[1], 2, in[2], lerp_d[2], 3, y, lerp_d[0], 3);
}

static void l2_loss_fwd(const float *v, float *y, const void *c)
{
	sc_cpu_l2_loss(v, y, *(const int *)c);
}

Test(grad, lerp_and_l2_loss)
{
	static const char *const names[3] = {"lerp start", "lerp end", "lerp weight"};
	float s[24], e[3], wt[8], w[24], g[24];
	rand_fill(s, 24, 3, -2, 2);
	rand_fill(e, 3, 4, -1, 1);
	rand_fill(wt, 8, 5, 0, 1);
	rand_fill(w, 24, 6, -1, 1);
	LerpCtx c = {{s, e, wt}, 0};
	const int sizes[3] = {24, 3, 8};
	for (int k = 0; k < 3; k++) {
		c.wrt = k;
		sc_cpu_lerp_grad(k, s, lerp_d[0], 3, e, lerp_d[1], 2, wt, lerp_d[2], 3, w, lerp_d[0], 3, g);
		check_grad(names[k], lerp_fwd, c.in[k], sizes[k], &c, w, 24, g);
	}
	float dl = 0.7f;
	int n = 24;
	sc_cpu_l2_loss_grad(s, &dl, g, n);
	check_grad("l2_loss", l2_loss_fwd, s, n, &n, &dl, 1, g);
}

typedef struct {
	const float *y;
	int n, reduce;
	double scale;
} KlCtx;

static void kldiv_fwd(const float *v, float *y, const void *c)
{
	const KlCtx *k = c;
	sc_cpu_kldiv_loss(v, k->y, y, k->n, k->reduce, k->scale);
}

/* KLDivLoss's logits gradient against finite differences: "none" (weights
 * per element) and a scaled sum ("mean" over 24), labels with zeros among them. */
Test(grad, kldiv_loss)
{
	float x[24], y[24], w[24], g[24], dl = 0.7f;
	rand_fill(x, 24, 7, -2, 0);
	rand_fill(y, 24, 8, 0, 1);
	rand_fill(w, 24, 9, -1, 1);
	y[3] = y[10] = 0;
	KlCtx c = {y, 24, 0, 1};
	sc_cpu_kldiv_loss_grad(y, w, g, 24, 0, 1);
	check_grad("kldiv_loss none", kldiv_fwd, x, 24, &c, w, 24, g);
	c.reduce = 1, c.scale = 1.0 / 24;
	sc_cpu_kldiv_loss_grad(y, &dl, g, 24, 1, 1.0 / 24);
	check_grad("kldiv_loss mean", kldiv_fwd, x, 24, &c, &dl, 1, g);
}

/* MaskedFill: x (2, 3, 4) against a mask (3, 1) broadcast, value a
 * scalar: x's gradient dy where the mask is false, value's the sum where
 * true, against finite differences; then x broadcast (3, 1) against a mask
 * (2, 3, 4), its gradient summed over the dims it repeats. */
typedef struct {
	const float *x, *v;
	const uint8_t *m;
	const int64_t *xd, *md, *yd;
	int xn, mn, yn, wrt;
} MaskCtx;

static void mask_fwd(const float *v, float *y, const void *c)
{
	const MaskCtx *p = c;
	sc_cpu_masked_fill(p->wrt ? p->x : v, p->xd, p->xn, p->m, p->md, p->mn, p->wrt ? v : p->v, y, p->yd, p->yn);
}

Test(grad, masked_fill)
{
	const int64_t xd[3] = {2, 3, 4}, md[2] = {3, 1}, x2[2] = {3, 1};
	const uint8_t m[3] = {1, 0, 1}, m2[24] = {1, 0, 0, 1, 1, 1, 0, 0, 1, 0, 1, 0, 0, 0, 1, 1, 0, 1, 1, 0, 0, 1, 0, 1};
	float x[24], v = 0.4f, w[24], g[24];
	rand_fill(x, 24, 11, -2, 2);
	rand_fill(w, 24, 12, -1, 1);
	MaskCtx c = {x, &v, m, xd, md, xd, 3, 2, 3, 0};
	sc_cpu_masked_fill_grad(0, xd, 3, m, md, 2, w, xd, 3, g);
	check_grad("masked_fill x", mask_fwd, x, 24, &c, w, 24, g);
	c.wrt = 1;
	sc_cpu_masked_fill_grad(2, xd, 3, m, md, 2, w, xd, 3, g);
	check_grad("masked_fill value", mask_fwd, &v, 1, &c, w, 24, g);
	MaskCtx b = {x, &v, m2, x2, xd, xd, 2, 3, 3, 0};
	sc_cpu_masked_fill_grad(0, x2, 2, m2, xd, 3, w, xd, 3, g);
	check_grad("masked_fill broadcast x", mask_fwd, x, 3, &b, w, 24, g);
}

/* The resizes' gradients against finite differences: x (2, 3, 4) planes to
 * (5, 7) and down to (2, 3), each mode. */
typedef struct {
	int bilinear, align, half;
	int64_t oh, ow;
} ResizeCtx;

static void resize_fwd(const float *x, float *y, const void *c)
{
	const ResizeCtx *r = c;
	sc_cpu_resize(r->bilinear, x, y, 2, 3, 4, r->oh, r->ow, r->align, r->half);
}

Test(grad, resize)
{
	float x[24], w[70], g[24];
	rand_fill(x, 24, 31, -2, 2);
	rand_fill(w, 70, 32, -1, 1);
	for (int k = 0; k < 12; k++) {
		ResizeCtx c = {k / 6, k % 3 == 1, k % 3 == 2, k % 2 ? 2 : 5, k % 2 ? 3 : 7};
		char what[96];
		snprintf(what, sizeof what, "resize %s align_corners %d half_pixel_centers %d to (%lld, %lld)",
		         c.bilinear ? "bilinear" : "nearest", c.align, c.half, (long long)c.oh, (long long)c.ow);
		sc_cpu_resize_grad(c.bilinear, w, g, 2, 3, 4, c.oh, c.ow, c.align, c.half);
		check_grad(what, resize_fwd, x, 24, &c, w, (int)(2 * c.oh * c.ow), g);
	}
}

static void lookup_fwd(const float *t, float *y, const void *c)
{
	const int32_t *ids = c;   /* a slice of 5 rows of 3 from row 2 of a table of 6 (offset 1 too): limit 7 */
	sc_cpu_embedding_lookup(t, 5, 3, ids, SC_I32, 7, 3, 7, y);
}

Test(grad, embedding_lookup)
{
	const int32_t ids[7] = {4, 9, 3, 7, 4, 2, 6};   /* 9 and 2 outside the slice, 7 past the table */
	float t[15], w[21], g[15];
	rand_fill(t, 15, 21, -2, 2);
	rand_fill(w, 21, 22, -1, 1);
	sc_cpu_embedding_lookup_grad(w, ids, SC_I32, 7, 3, 7, g, 5, 3);
	check_grad("embedding_lookup table", lookup_fwd, t, 15, ids, w, 21, g);
	for (int j = 0; j < 3; j++)
		cr_assert(g[12 + j] == 0, "row 4 (id 7, past the table) has no gradient");
}

/* DropoutDoMask: x's gradient dy * mask / keep_prob, the forward's kernel on
 * dy, against finite differences. */
static void do_mask_fwd(const float *v, float *y, const void *c)
{
	sc_cpu_dropout_do_mask(v, c, y, 24, 0.6);
}

Test(grad, dropout_do_mask)
{
	uint8_t m[24];
	float x[24], w[24], g[24];
	rand_fill(x, 24, 13, -2, 2);
	rand_fill(w, 24, 14, -1, 1);
	for (int i = 0; i < 24; i++)
		m[i] = i % 3 != 1;
	sc_cpu_dropout_do_mask(w, m, g, 24, 0.6);
	check_grad("dropout_do_mask x", do_mask_fwd, x, 24, m, w, 24, g);
}

Test(grad, binary_every_broadcast_case_against_sums)
{
	enum { N = 4 * 8 * 16 * 16 };
	static float a[N], b[N], dy[N], da[N], db[N], wa[N], wb[N];
	static double ga[N], gb[N];
	uint64_t s = 13;
	for (int k = 0; k < t_n_bcast_cases; k++) {
		const t_bcast_case *c = &t_bcast_cases[k];
		int64_t na = t_numel(c->ad, c->an), nb = t_numel(c->bd, c->bn), ny = t_numel(c->yd, c->yn);
		t_fill(a, na, &s, -2, 2);
		t_fill(b, nb, &s, 0.5f, 2);
		t_fill(dy, ny, &s, -1, 1);
		a[0] = b[0];
		for (sc_binop op = SC_ADD; op <= SC_BINOP_LAST; op++) {
			if (op == SC_ZETA)   /* u < 1 here (NaN): its own case, grad zeta */
				continue;
			if (op == SC_POW)   /* a base whose log is defined (and a positive dividend after it) */
				for (int64_t i = 0; i < na; i++)
					a[i] = fabsf(a[i]) + 0.1f;
			memset(ga, 0, (size_t)na * sizeof *ga);
			memset(gb, 0, (size_t)nb * sizeof *gb);
			int64_t yi[SC_MAX_DIMS];
			for (int64_t i = 0; i < ny; i++) {
				t_unravel(i, c->yd, c->yn, yi);
				int64_t ia = t_bcast_index(yi, c->yn, c->ad, c->an), ib = t_bcast_index(yi, c->yn, c->bd, c->bn);
				double g = dy[i], u = a[ia], v = b[ib];
				switch (op) {
				case SC_ADD: ga[ia] += g; gb[ib] += g; break;
				case SC_SUB: ga[ia] += g; gb[ib] -= g; break;
				case SC_MUL: ga[ia] += g * v; gb[ib] += g * u; break;
				case SC_DIV: ga[ia] += g / v; gb[ib] -= g * u / (v * v); break;
				case SC_POW: ga[ia] += g * v * pow(u, v - 1); gb[ib] += g * pow(u, v) * log(u); break;
				case SC_FLOOR_DIV: break;
				case SC_FLOOR_MOD: ga[ia] += g; gb[ib] -= g * floor(u / v); break;
				case SC_MOD: ga[ia] += g; gb[ib] -= g * trunc(u / v); break;
				case SC_SQUARED_DIFF: ga[ia] += 2 * g * (u - v); gb[ib] -= 2 * g * (u - v); break;
				case SC_DIV_NO_NAN: ga[ia] += g / v; gb[ib] -= g * u / (v * v); break;   /* v != 0 here */
				case SC_ATAN2: ga[ia] += g * v / (u * u + v * v); gb[ib] -= g * u / (u * u + v * v); break;
				case SC_SIGMOID_CE: ga[ia] += g * (1 / (1 + exp(-u)) - v); gb[ib] -= g * u; break;
				case SC_XLOGY: ga[ia] += g * log(v); gb[ib] += g * u / v; break;   /* v > 0 here */
				case SC_XDIVY: ga[ia] += g / v; gb[ib] -= g * u / (v * v); break;   /* u != 0 but by chance */
				case SC_MUL_NO_NAN: ga[ia] += g * v; gb[ib] += g * u; break;   /* v != 0 */
				case SC_TRUNCATE_DIV: break;
				case SC_TRUNCATE_MOD: ga[ia] += g; gb[ib] -= g * trunc(u / v); break;
				case SC_HYPOT: ga[ia] += g * u / hypot(u, v); gb[ib] += g * v / hypot(u, v); break;
				case SC_NEXT_AFTER: ga[ia] += g; break;   /* MindSpore's bprop: dy and 0 */
				case SC_ZETA: break;   /* skipped above */
				case SC_MAXIMUM: case SC_MINIMUM:   /* a tie (a[0] = b[0]) splits evenly */
					if (u == v)
						ga[ia] += g / 2, gb[ib] += g / 2;
					else if ((u > v) == (op == SC_MAXIMUM))
						ga[ia] += g;
					else
						gb[ib] += g;
					break;
				}
			}
			for (int64_t i = 0; i < na; i++)
				wa[i] = (float)ga[i];
			for (int64_t i = 0; i < nb; i++)
				wb[i] = (float)gb[i];
			sc_cpu_binary_grad(op, a, c->ad, c->an, b, c->bd, c->bn, dy, c->yd, c->yn, da, db);
			cr_assert(t_close("binary_grad da", da, wa, na, 1e-6, 1e-6), "%s, op %d", c->what, op);
			cr_assert(t_close("binary_grad db", db, wb, nb, 1e-6, 1e-6), "%s, op %d", c->what, op);
			/* one gradient alone (a one-element other operand takes a shortcut
			 * then): the bits of the call that computes both */
			memcpy(wa, da, (size_t)na * sizeof *da);
			memcpy(wb, db, (size_t)nb * sizeof *db);
			sc_cpu_binary_grad(op, a, c->ad, c->an, b, c->bd, c->bn, dy, c->yd, c->yn, NULL, db);   /* NULL skips */
			cr_assert(!memcmp(db, wb, (size_t)nb * sizeof *db), "binary_grad db alone: %s, op %d", c->what, op);
			sc_cpu_binary_grad(op, a, c->ad, c->an, b, c->bd, c->bn, dy, c->yd, c->yn, da, NULL);
			cr_assert(!memcmp(da, wa, (size_t)na * sizeof *da), "binary_grad da alone: %s, op %d", c->what, op);
		}
	}
}

/* The masks MindSpore's bprops put around dy: Xlogy's da is Xlogy(dy, b)
 * (0 where dy == 0 though log 0 is -inf), 0 where a == 0 and b <= 0 (db,
 * dy a / b, is NaN at b == 0 as MindSpore's);
 * MulNoNan's da is MulNoNan(dy, b) (0 where b == 0 though dy is inf) and
 * db MulNoNan(a, dy) (0 where dy == 0 though a is inf); Xdivy's both 0
 * where a == 0. */
Test(grad, binary_masks)
{
	const int64_t d[1] = {3};
	float da[3], db[3];
	sc_cpu_binary_grad(SC_XLOGY, (const float[]){2, 0, 0}, d, 1, (const float[]){0, -1, 0}, d, 1,
	                   (const float[]){0, 1, 1}, d, 1, da, db);
	cr_assert(da[0] == 0 && da[1] == 0 && da[2] == 0, "xlogy da: %g %g %g", da[0], da[1], da[2]);
	cr_assert(isnan(db[0]) && db[1] == 0 && isnan(db[2]), "xlogy db: %g %g %g", db[0], db[1], db[2]);
	sc_cpu_binary_grad(SC_MUL_NO_NAN, (const float[]){INFINITY, 3, 2}, d, 1, (const float[]){5, 0, 4}, d, 1,
	                   (const float[]){0, INFINITY, 1}, d, 1, da, db);
	cr_assert(da[0] == 0 && da[1] == 0 && da[2] == 4, "mul_no_nan da: %g %g %g", da[0], da[1], da[2]);
	cr_assert(db[0] == 0 && db[1] == INFINITY && db[2] == 2, "mul_no_nan db: %g %g %g", db[0], db[1], db[2]);
	sc_cpu_binary_grad(SC_XDIVY, (const float[]){0, 0, 3}, d, 1, (const float[]){0, 2, 2}, d, 1,
	                   (const float[]){1, 1, 1}, d, 1, da, db);
	cr_assert(da[0] == 0 && da[1] == 0 && da[2] == 0.5f, "xdivy da: %g %g %g", da[0], da[1], da[2]);
	cr_assert(db[0] == 0 && db[1] == 0 && db[2] == -0.75f, "xdivy db: %g %g %g", db[0], db[1], db[2]);
}

/* ---- broadcast_to and its adjoint sum_to_shape; bias_add ---- */

typedef struct {
	const int64_t *xd, *yd;
	int xn, yn;
} BcCtx;

static void bc_fwd(const float *x, float *y, const void *c)
{
	const BcCtx *p = c;
	sc_cpu_broadcast_to(x, p->xd, p->xn, y, p->yd, p->yn);
}

Test(grad, sum_to_shape_is_broadcast_adjoint)
{
	const int64_t xd[3] = {2, 1, 4}, yd[4] = {3, 2, 5, 4};
	float x[8], w[120], g[8];
	rand_fill(x, 8, 1, -1, 1);
	rand_fill(w, 120, 2, -1, 1);
	sc_cpu_sum_to_shape(w, yd, 4, g, xd, 3);
	BcCtx c = {xd, yd, 3, 4};
	check_grad("sum_to_shape", bc_fwd, x, 8, &c, w, 120, g);
}

typedef struct {
	const float *x;
	int rows, c;
} BiasCtx;

static void bias_fwd(const float *bias, float *y, const void *c)
{
	const BiasCtx *p = c;
	sc_cpu_bias_add(p->x, bias, y, p->rows, p->c);
}

Test(grad, bias_add)
{
	float x[15], bias[5], w[15], db[5];
	rand_fill(x, 15, 1, -1, 1);
	rand_fill(bias, 5, 2, -1, 1);
	rand_fill(w, 15, 3, -1, 1);
	sc_cpu_bias_add_grad(w, db, 3, 5);
	BiasCtx c = {x, 3, 5};
	check_grad("bias_add", bias_fwd, bias, 5, &c, w, 15, db);
}

/* ---- reductions ---- */

typedef struct {
	sc_reduce_kind kind;
	const int64_t *dims;
	int ndim, naxes;
	const int *axes;
} RedCtx;

static void red_fwd(const float *x, float *y, const void *c)
{
	const RedCtx *r = c;
	sc_cpu_reduce(r->kind, x, y, r->dims, r->ndim, r->axes, r->naxes);
}

Test(grad, reductions)
{
	const int64_t d[3] = {2, 3, 4}, kd[3] = {1, 3, 1};   /* kept dims of axes (0, 2) */
	const int axes[2] = {0, 2};
	float x[24], y[3], w[3], dx[24];
	for (int i = 0; i < 24; i++)   /* distinct values: no ties for max */
		x[i] = (float)((i * 7) % 24) * 0.1f - 1;
	rand_fill(w, 3, 4, -1, 1);
	RedCtx c = {SC_R_SUM, d, 3, 2, axes};
	sc_cpu_broadcast_to(w, kd, 3, dx, d, 3);   /* ReduceSum backward */
	check_grad("reduce_sum", red_fwd, x, 24, &c, w, 3, dx);
	c.kind = SC_R_MEAN;
	sc_cpu_broadcast_to(w, kd, 3, dx, d, 3);   /* ReduceMean backward: then scale by 1/8 */
	sc_cpu_scale(dx, dx, 24, 1.0 / 8);
	check_grad("reduce_mean", red_fwd, x, 24, &c, w, 3, dx);
	c.kind = SC_R_MAX;
	sc_cpu_reduce(SC_R_MAX, x, y, d, 3, axes, 2);
	sc_cpu_reduce_max_grad(x, y, w, NULL, dx, d, 3, axes, 2);
	check_grad("reduce_max", red_fwd, x, 24, &c, w, 3, dx);
	/* ties share the gradient */
	const float tie[4] = {1, 3, 3, 0};
	float ty = 3, tdx[4];
	sc_cpu_reduce_max_grad(tie, &ty, (const float[]){1}, NULL, tdx, (const int64_t[]){4}, 1, (const int[]){0}, 1);
	cr_assert(t_close("tied max", tdx, (const float[]){0, 0.5f, 0.5f, 0}, 4, 0, 0));
	/* a dim split over ranks: the ties of every piece (here 5), counted apart */
	float count;
	sc_cpu_count_equal(tie, &ty, &count, (const int64_t[]){4}, 1, (const int[]){0}, 1);
	cr_assert(count == 2);
	count = 5;
	sc_cpu_reduce_max_grad(tie, &ty, (const float[]){1}, &count, tdx, (const int64_t[]){4}, 1, (const int[]){0}, 1);
	cr_assert(t_close("tied max over ranks", tdx, (const float[]){0, 0.2f, 0.2f, 0}, 4, 0, 0));
	/* the adjoint of the max over ranks: the gradient where the partial max is the max */
	float mdx[3];
	sc_cpu_where_equal((const float[]){1, 3, 2}, (const float[]){3, 3, 3}, (const float[]){4, 5, 6}, mdx, 3);
	cr_assert(t_close("where equal", mdx, (const float[]){0, 5, 0}, 3, 0, 0));
}

/* ReduceMin: its gradient is ReduceMax's kernel (dy to the elements equal to
 * y) given the minimum; ties share it, over one piece or over the ranks. */
Test(grad, reduce_min)
{
	const int64_t d[3] = {2, 3, 4};
	const int axes[2] = {2, 0};
	float x[24], y[3], w[3], dx[24];
	for (int i = 0; i < 24; i++)   /* distinct values: no ties */
		x[i] = (float)((i * 7) % 24) * 0.1f - 1;
	rand_fill(w, 3, 5, -1, 1);
	RedCtx c = {SC_R_MIN, d, 3, 2, axes};
	sc_cpu_reduce(SC_R_MIN, x, y, d, 3, axes, 2);
	sc_cpu_reduce_max_grad(x, y, w, NULL, dx, d, 3, axes, 2);
	check_grad("reduce_min", red_fwd, x, 24, &c, w, 3, dx);
	int hits = 0;
	for (int i = 0; i < 24; i++)
		hits += dx[i] != 0;
	cr_assert_eq(hits, 3, "one minimum per output");
	const float tie[5] = {1, -2, 3, -2, -2};
	float ty, tdx[5], count;
	sc_cpu_reduce(SC_R_MIN, tie, &ty, (const int64_t[]){5}, 1, (const int[]){0}, 1);
	cr_assert(ty == -2);
	sc_cpu_reduce_max_grad(tie, &ty, (const float[]){3}, NULL, tdx, (const int64_t[]){5}, 1, (const int[]){0}, 1);
	cr_assert(t_close("tied min", tdx, (const float[]){0, 1, 0, 1, 1}, 5, 0, 0));
	sc_cpu_count_equal(tie, &ty, &count, (const int64_t[]){5}, 1, (const int[]){0}, 1);
	cr_assert(count == 3);
	count = 6;   /* a dim split over ranks: every piece's ties */
	sc_cpu_reduce_max_grad(tie, &ty, (const float[]){3}, &count, tdx, (const int64_t[]){5}, 1, (const int[]){0}, 1);
	cr_assert(t_close("tied min over ranks", tdx, (const float[]){0, 0.5f, 0, 0.5f, 0.5f}, 5, 0, 0));
	/* the adjoint of the min over ranks: the gradient where the partial min is the min */
	float mdx[3];
	sc_cpu_where_equal((const float[]){1, -3, 2}, (const float[]){-3, -3, -3}, (const float[]){4, 5, 6}, mdx, 3);
	cr_assert(t_close("where equal the min", mdx, (const float[]){0, 5, 0}, 3, 0, 0));
}

/* ReduceProd: dy times the product of the others, by finite differences
 * away from zero and exactly at one zero and at two; a reduced dim split
 * over ranks passes the nonzero product and zero count of every piece. */
Test(grad, reduce_prod)
{
	const int64_t d[3] = {2, 3, 4};
	const int axes[2] = {2, 0};
	float x[24], w[3], dx[24];
	for (int i = 0; i < 24; i++)   /* away from zero, of either sign */
		x[i] = ((i * 7) % 24 < 12 ? 1 : -1) * (0.5f + (float)((i * 5) % 7) * 0.1f);
	rand_fill(w, 3, 6, -1, 1);
	RedCtx c = {SC_R_PROD, d, 3, 2, axes};
	sc_cpu_reduce_prod_grad(x, w, NULL, NULL, dx, d, 3, axes, 2);
	check_grad("reduce_prod", red_fwd, x, 24, &c, w, 3, dx);
	/* zeros: one in the first row (the rest's product), two in the second (all 0) */
	const float z[8] = {2, 0, 3, -1, 0, 5, 0, 2};
	float zdx[8], P[2], Z[2];
	const int64_t zd[2] = {2, 4};
	sc_cpu_reduce_prod_grad(z, (const float[]){1, 1}, NULL, NULL, zdx, zd, 2, (const int[]){1}, 1);
	cr_assert(t_close("prod at zeros", zdx, (const float[]){0, -6, 0, 0, 0, 0, 0, 0}, 8, 0, 0));
	sc_cpu_reduce_prod_stat(z, 0, P, zd, 2, (const int[]){1}, 1);
	sc_cpu_reduce_prod_stat(z, 1, Z, zd, 2, (const int[]){1}, 1);
	cr_assert(t_close("nonzero product", P, (const float[]){-6, 10}, 2, 0, 0));
	cr_assert(t_close("zero count", Z, (const float[]){1, 2}, 2, 0, 0));
	/* over ranks: another piece's factors 4 (no zero) and 0.5 with one zero, so row 0 has two zeros */
	sc_cpu_reduce_prod_grad(z, (const float[]){1, 1}, (const float[]){-24, 5}, (const float[]){1, 3}, zdx, zd, 2,
	                        (const int[]){1}, 1);
	cr_assert(t_close("prod at a zero over ranks", zdx, (const float[]){0, -24, 0, 0, 0, 0, 0, 0}, 8, 0, 0));
	sc_cpu_reduce_prod_grad(z, (const float[]){1, 1}, (const float[]){-6, 10}, (const float[]){2, 2}, zdx, zd, 2,
	                        (const int[]){1}, 1);
	cr_assert(t_close("two zeros over ranks", zdx, (const float[]){0, 0, 0, 0, 0, 0, 0, 0}, 8, 0, 0));
}

Test(grad, maximum_minimum_ties_split_evenly)
{
	/* MindSpore's MaximumGrad: a tie gives each operand half, also when broadcast */
	const float a[3] = {1, 2, 3}, b[3] = {2, 2, 2}, dy[3] = {1, 1, 1};
	float da[3], db[3];
	sc_cpu_binary_grad(SC_MAXIMUM, a, (const int64_t[]){3}, 1, b, (const int64_t[]){3}, 1, dy,
	                   (const int64_t[]){3}, 1, da, db);
	cr_assert(t_close("maximum da", da, (const float[]){0, 0.5f, 1}, 3, 0, 0));
	cr_assert(t_close("maximum db", db, (const float[]){1, 0.5f, 0}, 3, 0, 0));
	sc_cpu_binary_grad(SC_MINIMUM, a, (const int64_t[]){3}, 1, b, (const int64_t[]){3}, 1, dy,
	                   (const int64_t[]){3}, 1, da, db);
	cr_assert(t_close("minimum da", da, (const float[]){1, 0.5f, 0}, 3, 0, 0));
	cr_assert(t_close("minimum db", db, (const float[]){0, 0.5f, 1}, 3, 0, 0));
	float bs = 2, dbs;
	sc_cpu_binary_grad(SC_MAXIMUM, a, (const int64_t[]){3}, 1, &bs, NULL, 0, dy, (const int64_t[]){3}, 1, da, &dbs);
	cr_assert(t_close("maximum da, b broadcast", da, (const float[]){0, 0.5f, 1}, 3, 0, 0));
	cr_assert(dbs == 1.5f);
}

/* LeakyReLU is MindSpore's Maximum(alpha x, x) (Minimum when alpha > 1):
 * at x = 0 the two tie and MaximumGrad gives each half, so dx is
 * (1 + alpha) dy / 2 there, exactly as the two kernels' gradients summed;
 * a NaN, which neither wins, gets none. */
Test(grad, leaky_relu_is_maximum_of_alpha_x_and_x)
{
	const float x[6] = {-1.5f, -0.25f, 0, 0.5f, 2, NAN}, dy[6] = {1, -2, 3, 0.5f, -1, 1};
	for (int k = 0; k < 3; k++) {
		const float alpha = k == 0 ? 0.2f : k == 1 ? 1.5f : -0.3f;   /* Minimum above 1; a negative slope */
		float y[6], dx[6], ax[6], m[6], da[6], db[6];
		sc_cpu_unary(SC_U_LEAKY_RELU, alpha, x, y, 6);
		sc_cpu_unary_grad(SC_U_LEAKY_RELU, alpha, x, dy, dx, 6);
		for (int i = 0; i < 6; i++)
			ax[i] = alpha * x[i];
		sc_binop op = alpha > 1 ? SC_MINIMUM : SC_MAXIMUM;
		sc_cpu_binary(op, ax, (const int64_t[]){6}, 1, x, (const int64_t[]){6}, 1, m, (const int64_t[]){6}, 1);
		sc_cpu_binary_grad(op, ax, (const int64_t[]){6}, 1, x, (const int64_t[]){6}, 1, dy, (const int64_t[]){6}, 1,
		                   da, db);
		for (int i = 0; i < 5; i++) {
			float want = alpha * da[i] + db[i];   /* through alpha x, and x itself */
			cr_assert(y[i] == m[i], "alpha %g: y[%d] %g, the Maximum's %g", alpha, i, y[i], m[i]);
			cr_assert(fabsf(dx[i] - want) <= 1e-6f, "alpha %g: dx[%d] %g, want %g", alpha, i, dx[i], want);
		}
		cr_assert(isnan(y[5]) && dx[5] == 0, "alpha %g: NaN gave y %g, dx %g", alpha, y[5], dx[5]);
		cr_assert(dx[2] == 0.5f * (dy[2] + alpha * dy[2]), "alpha %g: the tie at 0", alpha);
	}
}

/* ---- PReLU: x (outer, c, inner) with a weight per channel, or one ---- */

typedef struct {
	const float *x, *w;
	int64_t outer, c, inner, wn;
	int wrt;   /* 0: x, 1: w */
} PreluCtx;

static void prelu_fwd(const float *v, float *y, const void *ctx)
{
	const PreluCtx *p = ctx;
	sc_cpu_prelu(p->wrt ? p->x : v, p->wrt ? v : p->w, y, p->outer, p->c, p->inner, p->wn);
}

Test(grad, prelu)
{
	for (int wn1 = 0; wn1 < 2; wn1++) {
		const int64_t outer = 2, c = 3, inner = 4, n = outer * c * inner, wn = wn1 ? 1 : c;
		float x[24], w[3], dy[24], dx[24], dw[3];
		rand_fill(x, (int)n, 7, -2, 2);
		for (int i = 0; i < n; i++)   /* away from the kink */
			if (fabsf(x[i]) < 0.05f)
				x[i] = 0.1f;
		rand_fill(w, (int)wn, 8, -0.5f, 0.9f);
		rand_fill(dy, (int)n, 9, -1, 1);
		sc_cpu_prelu_grad(x, w, dy, dx, dw, outer, c, inner, wn);
		PreluCtx px = {x, w, outer, c, inner, wn, 0}, pw = {x, w, outer, c, inner, wn, 1};
		check_grad(wn1 ? "prelu dx, one weight" : "prelu dx", prelu_fwd, x, (int)n, &px, dy, (int)n, dx);
		check_grad(wn1 ? "prelu dw, one weight" : "prelu dw", prelu_fwd, w, (int)wn, &pw, dy, (int)n, dw);
		float dx2[24], dw2[3];   /* each alone, as the adjoints call it */
		sc_cpu_prelu_grad(x, w, dy, dx2, NULL, outer, c, inner, wn);
		sc_cpu_prelu_grad(x, w, dy, NULL, dw2, outer, c, inner, wn);
		cr_assert(memcmp(dx, dx2, sizeof dx) == 0 && memcmp(dw, dw2, (size_t)wn * sizeof *dw) == 0);
	}
	/* at 0, MindSpore's PReLUGrad: dx = w dy (x <= 0), and nothing to dw (x < 0) */
	const float x0[2] = {0, -1}, w0[1] = {0.25f}, dy0[2] = {2, 2};
	float dx0[2], dw0[1];
	sc_cpu_prelu_grad(x0, w0, dy0, dx0, dw0, 1, 1, 2, 1);
	cr_assert(dx0[0] == 0.5f && dx0[1] == 0.5f && dw0[0] == -2, "at 0: dx %g %g, dw %g", dx0[0], dx0[1], dw0[0]);
}

/* ---- Conv2D, MaxPool, AvgPool: stride, dilation, padding, groups, a piece's rows ---- */

typedef struct {
	const sc_window *g;
	const float *x, *w;
	int op;    /* 0 Conv2D, 1 MaxPool, 2 AvgPool */
	int wrt;   /* 0: x, 1: w */
} WinCtx;

static void win_fwd(const float *v, float *y, const void *ctx)
{
	const WinCtx *c = ctx;
	if (c->op == 0)
		sc_cpu_conv2d(c->g, c->wrt ? c->x : v, c->wrt ? v : c->w, y);
	else
		sc_cpu_pool(c->op == 1 ? SC_POOL_MAX : SC_POOL_AVG, c->g, v, y);
}

Test(grad, windows)
{
	static const sc_window gs[] = {
		{2, 2, 5, 4, 3, 3, 3, 1, 1, 1, 1, 1, 1, 5, 4, 1},   /* "same" */
		{1, 4, 6, 5, 4, 2, 3, 2, 1, 2, 1, 1, 2, 3, 4, 2},   /* strides, dilation, padding, two groups */
		{1, 2, 7, 4, 2, 3, 2, 1, 2, 1, 1, -2, 0, 3, 2, 1},  /* a piece's rows: from the third row of x */
	};
	for (size_t t = 0; t < sizeof gs / sizeof gs[0]; t++) {
		const sc_window *g = &gs[t];
		int nx = (int)(g->n * g->c * g->h * g->w), nw = (int)(g->o * g->c / g->groups * g->kh * g->kw);
		int ny = (int)(g->n * g->o * g->ho * g->wo);
		float x[MAXN], w[MAXN], dy[MAXN], dx[MAXN], dw[MAXN];
		rand_fill(x, nx, 11 + t, -1, 1);
		rand_fill(w, nw, 12 + t, -1, 1);
		rand_fill(dy, ny, 13 + t, -1, 1);
		sc_cpu_conv2d_grad(g, x, w, dy, dx, dw);
		WinCtx cx = {g, x, w, 0, 0}, cw = {g, x, w, 0, 1};
		check_grad("conv2d dx", win_fwd, x, nx, &cx, dy, ny, dx);
		check_grad("conv2d dw", win_fwd, w, nw, &cw, dy, ny, dw);
		sc_window p = *g;
		p.o = p.c;
		p.groups = 1;
		int np = (int)(p.n * p.c * p.ho * p.wo);
		for (int i = 0; i < nx; i++)   /* distinct values 0.05 apart: no ties within a step */
			x[i] = 0.05f * (float)((i * 37) % nx) - 1;
		for (int op = 1; op < 3; op++) {
			WinCtx cp = {&p, NULL, NULL, op, 0};
			sc_cpu_pool_grad(op == 1 ? SC_POOL_MAX : SC_POOL_AVG, &p, x, dy, dx);
			check_grad(op == 1 ? "max_pool dx" : "avg_pool dx", win_fwd, x, nx, &cp, dy, np, dx);
		}
	}
	/* MaxPool's ties: the first maximum of each window takes its dy */
	const sc_window t = {1, 1, 2, 3, 1, 2, 2, 1, 1, 1, 1, 0, 0, 1, 2, 1};
	const float z[6] = {0}, g2[2] = {1, 2};
	float d[6];
	sc_cpu_pool_grad(SC_POOL_MAX, &t, z, g2, d);
	cr_assert(d[0] == 1 && d[1] == 2 && d[2] == 0 && d[3] == 0 && d[4] == 0 && d[5] == 0, "ties: %g %g", d[0], d[1]);
}

/* ---- gather, strided slice, transpose ---- */

typedef struct {
	const int32_t *idx;
	int nidx, rows, row, offset;
} GaCtx;

static void ga_fwd(const float *table, float *y, const void *c)
{
	const GaCtx *g = c;
	sc_cpu_gather(table, g->rows, g->row, g->idx, SC_I32, g->nidx, g->offset, y);
}

Test(grad, gather_scatter_add)
{
	const int32_t idx[6] = {3, 5, 3, 9, 4, 3};   /* rows 3..5 here (offset 3); 9 elsewhere */
	float table[9], w[18], dt[9];
	rand_fill(table, 9, 1, -1, 1);
	rand_fill(w, 18, 2, -1, 1);
	sc_cpu_gather_grad(w, idx, SC_I32, 6, 3, dt, 3, 3);
	GaCtx c = {idx, 6, 3, 3, 3};
	check_grad("gather", ga_fwd, table, 9, &c, w, 18, dt);
}

static void gd_fwd(const float *x, float *y, const void *c)
{
	sc_cpu_gather_d(x, (const int64_t[]){3, 4}, c, SC_I32, (const int64_t[]){2, 4}, 2, 0, 0, y);
}

Test(grad, gather_d_scatter_add)
{
	const int32_t idx[8] = {2, 0, 2, 5, 2, 1, 0, -1};   /* along dim 0 of x (3, 4); 5 and -1 outside */
	float x[12], w[8], dx[12];
	rand_fill(x, 12, 1, -1, 1);
	rand_fill(w, 8, 2, -1, 1);
	sc_cpu_gather_d_grad(w, idx, SC_I32, (const int64_t[]){2, 4}, dx, (const int64_t[]){3, 4}, 2, 0, 0);
	check_grad("gather_d", gd_fwd, x, 12, idx, w, 8, dx);
}

static void gnd_fwd(const float *x, float *y, const void *c)
{
	sc_cpu_gather_nd(x, (const int64_t[]){3, 2}, 2, 2, c, SC_I32, 4, y);
}

Test(grad, gather_nd_scatter_add)
{
	const int32_t idx[8] = {2, 1, 0, 0, 2, 1, 1, 0};   /* rows of x (3, 2, 2); (2, 1) twice */
	float x[12], w[8], dx[12];
	rand_fill(x, 12, 1, -1, 1);
	rand_fill(w, 8, 2, -1, 1);
	sc_cpu_gather_nd_grad(w, idx, SC_I32, 4, dx, (const int64_t[]){3, 2}, 2, 2);
	check_grad("gather_nd", gnd_fwd, x, 12, idx, w, 8, dx);
}

/* TensorScatterMul and Div of x (3, 2, 2) at 3 distinct (row, col) indices
 * of (3, 2) updates, whole and on x's piece [1, 3) of its dim 0: the
 * gradients of x and of the updates (MindSpore's bprops, exact for distinct
 * indices). */
typedef struct {
	sc_scatter_op op;
	const float *x, *upd;   /* the operand not differentiated */
	const int64_t *start, *ldims;
} ScatterCtx;

static const int32_t scatter_idx[6] = {2, 1, 0, 0, 1, 1};

static void scatter_x_fwd(const float *x, float *y, const void *c)
{
	const ScatterCtx *s = c;
	sc_cpu_tensor_scatter(s->op, x, scatter_idx, SC_I32, 3, s->upd, y, s->start, s->ldims, 2, 2);
}

static void scatter_u_fwd(const float *u, float *y, const void *c)
{
	const ScatterCtx *s = c;
	sc_cpu_tensor_scatter(s->op, s->x, scatter_idx, SC_I32, 3, u, y, s->start, s->ldims, 2, 2);
}

Test(grad, tensor_scatter_mul_div)
{
	float x[12], u[6], w[12], y[12], g[12];
	rand_fill(x, 12, 1, -1, 1);
	rand_fill(u, 6, 2, 0.5f, 2);   /* away from 0: Div */
	rand_fill(w, 12, 3, -1, 1);
	const int64_t whole[2] = {3, 2}, start[2] = {1, 0}, piece[2] = {2, 2};
	for (int op = SC_SCATTER_MUL; op <= SC_SCATTER_DIV; op++)
		for (int p = 0; p < 2; p++) {
			ScatterCtx c = {(sc_scatter_op)op, x, u, p ? start : NULL, p ? piece : whole};
			int nx = p ? 8 : 12;
			sc_cpu_tensor_scatter(c.op, x, scatter_idx, SC_I32, 3, u, y, c.start, c.ldims, 2, 2);
			sc_cpu_tensor_scatter_grad(c.op, 0, w, x, u, y, scatter_idx, SC_I32, 3, g, c.start, c.ldims, 2, 2);
			check_grad(op == SC_SCATTER_MUL ? "tensor_scatter_mul x" : "tensor_scatter_div x", scatter_x_fwd, x, nx,
			           &c, w, nx, g);
			sc_cpu_tensor_scatter_grad(c.op, 2, w, x, u, y, scatter_idx, SC_I32, 3, g, c.start, c.ldims, 2, 2);
			check_grad(op == SC_SCATTER_MUL ? "tensor_scatter_mul updates" : "tensor_scatter_div updates",
			           scatter_u_fwd, u, 6, &c, w, nx, g);
		}
}

/* Max and Min away from ties: dy where x or an update won. */
Test(grad, tensor_scatter_max_min)
{
	float x[12], u[6], w[12], y[12], g[12];
	rand_fill(x, 12, 4, -1, 1);
	rand_fill(u, 6, 5, -1, 1);
	rand_fill(w, 12, 6, -1, 1);
	const int64_t whole[2] = {3, 2};
	for (int op = SC_SCATTER_MAX; op <= SC_SCATTER_MIN; op++) {
		ScatterCtx c = {(sc_scatter_op)op, x, u, NULL, whole};
		sc_cpu_tensor_scatter(c.op, x, scatter_idx, SC_I32, 3, u, y, NULL, whole, 2, 2);
		sc_cpu_tensor_scatter_grad(c.op, 0, w, x, u, y, scatter_idx, SC_I32, 3, g, NULL, whole, 2, 2);
		check_grad("tensor_scatter_max/min x", scatter_x_fwd, x, 12, &c, w, 12, g);
		sc_cpu_tensor_scatter_grad(c.op, 2, w, x, u, y, scatter_idx, SC_I32, 3, g, NULL, whole, 2, 2);
		check_grad("tensor_scatter_max/min updates", scatter_u_fwd, u, 6, &c, w, 12, g);
	}
}

/* The unsorted segment reductions of x (6 rows of 2) into 3 segments, ids
 * with -1 and 3 dropped: finite differences away from ties and zeros; then
 * the ties and zeros exactly, whole and given the statistics of every rank
 * (a split ids dim). */
typedef struct {
	sc_segment_op op;
	const int32_t *ids;
} SegCtx;

static void seg_fwd(const float *x, float *y, const void *c)
{
	const SegCtx *s = c;
	sc_cpu_unsorted_segment(s->op, x, s->ids, SC_I32, y, 6, 2, 3, SC_F32);
}

Test(grad, unsorted_segment)
{
	static const int32_t ids[6] = {2, 0, -1, 2, 1, 3};
	float x[12], w[6], dx[12], y[6];
	for (int i = 0; i < 12; i++)   /* distinct, away from zero */
		x[i] = ((i * 5) % 12 < 6 ? 1 : -1) * (0.5f + (float)((i * 7) % 12) * 0.1f);
	rand_fill(w, 6, 9, -1, 1);
	static const char *const names[4] = {"segment_sum", "segment_max", "segment_min", "segment_prod"};
	for (int op = SC_SEG_SUM; op <= SC_SEG_PROD; op++) {
		SegCtx c = {(sc_segment_op)op, ids};
		sc_cpu_unsorted_segment((sc_segment_op)op, x, ids, SC_I32, y, 6, 2, 3, SC_F32);
		sc_cpu_unsorted_segment_grad((sc_segment_op)op, x, ids, SC_I32, y, w, NULL, NULL, dx, 6, 2, 3);
		check_grad(names[op], seg_fwd, x, 12, &c, w, 6, dx);
		cr_assert(dx[4] == 0 && dx[5] == 0 && dx[10] == 0 && dx[11] == 0, "%s: dropped rows get 0", names[op]);
	}
	/* ties: rows 0, 1, 3 of segment 0 share the maximum 2 (one column), row 2's id is dropped */
	const float t[4] = {2, 2, 1, 2};
	const int32_t tid[4] = {0, 0, 5, 0};
	float ty[2], tdx[4], ties[2];
	sc_cpu_unsorted_segment(SC_SEG_MAX, t, tid, SC_I32, ty, 4, 1, 2, SC_F32);
	cr_assert(ty[0] == 2 && ty[1] == -FLT_MAX, "max %g, empty %g", ty[0], ty[1]);
	sc_cpu_unsorted_segment_grad(SC_SEG_MAX, t, tid, SC_I32, ty, (const float[]){6, 1}, NULL, NULL, tdx, 4, 1, 2);
	cr_assert(t_close("max ties", tdx, (const float[]){2, 2, 0, 2}, 4, 0, 0));
	sc_cpu_unsorted_segment_stat(SC_SEG_MAX, t, tid, SC_I32, ty, 0, ties, 4, 1, 2);
	cr_assert(t_close("max tie count", ties, (const float[]){3, 0}, 2, 0, 0));
	/* over ranks: three more ties in another piece */
	sc_cpu_unsorted_segment_grad(SC_SEG_MAX, t, tid, SC_I32, ty, (const float[]){6, 1}, (const float[]){6, 1}, NULL,
	                             tdx, 4, 1, 2);
	cr_assert(t_close("max ties over ranks", tdx, (const float[]){1, 1, 0, 1}, 4, 0, 0));
	/* Prod: one zero in segment 0 (the others' product), two in segment 1 (all 0) */
	const float z[6] = {2, 0, 3, 0, 0, 5};
	const int32_t zid[6] = {0, 0, 0, 1, 1, 1};
	float zy[2], zdx[6], P[2], Z[2];
	sc_cpu_unsorted_segment(SC_SEG_PROD, z, zid, SC_I32, zy, 6, 1, 2, SC_F32);
	sc_cpu_unsorted_segment_grad(SC_SEG_PROD, z, zid, SC_I32, NULL, (const float[]){1, 1}, NULL, NULL, zdx, 6, 1, 2);
	cr_assert(t_close("segment prod at zeros", zdx, (const float[]){0, 6, 0, 0, 0, 0}, 6, 0, 0));
	sc_cpu_unsorted_segment_stat(SC_SEG_PROD, z, zid, SC_I32, NULL, 0, P, 6, 1, 2);
	sc_cpu_unsorted_segment_stat(SC_SEG_PROD, z, zid, SC_I32, NULL, 1, Z, 6, 1, 2);
	cr_assert(t_close("segment nonzero product", P, (const float[]){6, 5}, 2, 0, 0));
	cr_assert(t_close("segment zero count", Z, (const float[]){1, 2}, 2, 0, 0));
	/* over ranks: another piece with factor -2 in segment 0 and none zero: the zero gets -12 */
	sc_cpu_unsorted_segment_grad(SC_SEG_PROD, z, zid, SC_I32, NULL, (const float[]){1, 1}, (const float[]){-12, 5},
	                             (const float[]){1, 2}, zdx, 6, 1, 2);
	cr_assert(t_close("segment prod over ranks", zdx, (const float[]){0, -12, 0, 0, 0, 0}, 6, 0, 0));
}

/* L2Normalize of x (2, 3, 2) along dim 1, whole; its piece given the sums */
static void l2_fwd(const float *x, float *y, const void *c)
{
	(void)c;
	sc_cpu_l2_normalize(x, NULL, y, 2, 3, 2, 1e-4);
}

static void l2_piece_fwd(const float *s, float *y, const void *c)
{
	sc_cpu_l2_normalize(c, s, y, 2, 3, 2, 1e-4);
}

Test(grad, l2_normalize)
{
	float x[12], w[12], dx[12], s[4] = {0.7f, 1.3f, 2e-5f, 0.4f}, ds[4];   /* s[2] below epsilon */
	rand_fill(x, 12, 3, -1, 1);
	rand_fill(w, 12, 4, -1, 1);
	sc_cpu_l2_normalize_grad(x, NULL, w, dx, NULL, 2, 3, 2, 1e-4);
	check_grad("l2_normalize", l2_fwd, x, 12, NULL, w, 12, dx);
	sc_cpu_l2_normalize_grad(x, s, w, NULL, ds, 2, 3, 2, 1e-4);
	float s_above[4] = {0.7f, 1.3f, 0.9f, 0.4f}, ds_above[4];   /* the finite difference away from the kink */
	sc_cpu_l2_normalize_grad(x, s_above, w, NULL, ds_above, 2, 3, 2, 1e-4);
	check_grad("l2_normalize sums", l2_piece_fwd, s_above, 4, x, w, 12, ds_above);
	cr_assert(ds[2] == 0, "below epsilon the norm is constant: dsumsq %g", ds[2]);
}

static void ga_axis_fwd(const float *table, float *y, const void *c)
{
	const GaCtx *g = c;
	sc_cpu_gather_axis(table, 2, g->rows, g->row, g->idx, SC_I32, g->nidx, g->offset, y);
}

Test(grad, gather_axis_scatter_add)
{
	const int32_t idx[6] = {3, 5, 3, 9, 4, 3};   /* a (2, 3, 2) table along axis 1, entries 3..5 here */
	float table[12], w[24], dt[12];
	rand_fill(table, 12, 3, -1, 1);
	rand_fill(w, 24, 4, -1, 1);
	sc_cpu_gather_axis_grad(w, idx, SC_I32, 6, 3, dt, 2, 3, 2);
	GaCtx c = {idx, 6, 3, 2, 3};
	check_grad("gather axis 1", ga_axis_fwd, table, 12, &c, w, 24, dt);
}

typedef struct {
	const int64_t *dims, *begin, *end, *strides;
} SlCtx;

static void sl_fwd(const float *x, float *y, const void *c)
{
	const SlCtx *s = c;
	sc_cpu_strided_slice(SC_F32, x, y, s->dims, 3, s->begin, s->end, s->strides);
}

Test(grad, strided_slice)
{
	const int64_t d[3] = {3, 4, 5}, b[3] = {1, 0, -4}, e[3] = {3, 4, 5}, st[3] = {1, 3, 2};   /* (2, 2, 2) */
	float x[60], w[8], dx[60];
	rand_fill(x, 60, 1, -1, 1);
	rand_fill(w, 8, 2, -1, 1);
	sc_cpu_strided_slice_grad(w, dx, d, 3, b, e, st);
	SlCtx c = {d, b, e, st};
	check_grad("strided_slice", sl_fwd, x, 60, &c, w, 8, dx);
}

static void tr_fwd(const float *x, float *y, const void *c)
{
	(void)c;
	sc_cpu_transpose(SC_F32, x, y, (const int64_t[]){2, 3, 4}, 3, (const int[]){1, 2, 0});
}

Test(grad, transpose_by_inverse_perm)
{
	float x[24], w[24], dx[24];
	rand_fill(x, 24, 1, -1, 1);
	rand_fill(w, 24, 2, -1, 1);
	/* y dims (3, 4, 2); the inverse of (1, 2, 0) is (2, 0, 1) */
	sc_cpu_transpose(SC_F32, w, dx, (const int64_t[]){3, 4, 2}, 3, (const int[]){2, 0, 1});
	check_grad("transpose", tr_fwd, x, 24, NULL, w, 24, dx);
}

/* ---- matmul: gradients are matmuls with transposes ---- */

typedef struct {
	const float *a, *b;
	int m, n, k, ta, tb, wrt;
} MmCtx;

static void mm_fwd(const float *v, float *y, const void *c)
{
	const MmCtx *p = c;
	sc_cpu_matmul(p->wrt ? p->a : v, p->wrt ? v : p->b, y, p->m, p->n, p->k, p->ta, p->tb);
}

Test(grad, matmul_by_transposes)
{
	enum { M = 3, N = 4, K = 5 };
	float a[M * K], b[K * N], w[M * N], da[M * K], db[K * N];
	rand_fill(a, M * K, 1, -1, 1);
	rand_fill(b, K * N, 2, -1, 1);
	rand_fill(w, M * N, 3, -1, 1);
	/* c = a b: da = dc b^T (M, K), db = a^T dc (K, N) */
	sc_cpu_matmul(w, b, da, M, K, N, 0, 1);
	sc_cpu_matmul(a, w, db, K, N, M, 1, 0);
	MmCtx c = {a, b, M, N, K, 0, 0, 0};
	check_grad("matmul da", mm_fwd, a, M * K, &c, w, M * N, da);
	c.wrt = 1;
	check_grad("matmul db", mm_fwd, b, K * N, &c, w, M * N, db);
	/* c = a b^T with b stored (N, K): db = dc^T a (N, K) */
	sc_cpu_matmul(w, a, db, N, K, M, 1, 0);
	MmCtx t = {a, b, M, N, K, 0, 1, 1};
	check_grad("matmul transpose_b db", mm_fwd, b, N * K, &t, w, M * N, db);
}

/* ---- losses ---- */

typedef struct {
	const void *labels;
	const float *target;
	int n, c, kind;   /* 0 sparse ce, 1 mse, 2 l1 */
} LossCtx;

static void loss_fwd(const float *x, float *y, const void *c)
{
	const LossCtx *l = c;
	if (l->kind == 0)
		sc_cpu_sparse_softmax_ce(x, l->labels, SC_I32, y, l->n, l->c);
	else if (l->kind == 1)
		sc_cpu_mse_loss(x, l->target, y, l->n);
	else
		sc_cpu_l1_loss(x, l->target, y, l->n);
}

Test(grad, losses)
{
	const int32_t labels[4] = {2, 0, 4, 1};
	const float dl = 0.7f;
	float x[20], t[20], dx[20];
	rand_fill(x, 20, 1, -2, 2);
	rand_fill(t, 20, 2, -2, 2);
	for (int i = 0; i < 20; i++)   /* L1 away from its kink */
		if (fabsf(x[i] - t[i]) < 0.05f)
			t[i] += 0.1f;
	LossCtx c = {labels, t, 4, 5, 0};
	sc_cpu_sparse_softmax_ce_grad(x, labels, SC_I32, &dl, dx, 4, 5);
	check_grad("sparse_softmax_ce", loss_fwd, x, 20, &c, &dl, 1, dx);
	c = (LossCtx){NULL, t, 20, 0, 1};
	sc_cpu_mse_loss_grad(x, t, &dl, dx, 20);
	check_grad("mse", loss_fwd, x, 20, &c, &dl, 1, dx);
	c.kind = 2;
	sc_cpu_l1_loss_grad(x, t, NULL, dx, 20);   /* NULL dloss is 1 */
	check_grad("l1", loss_fwd, x, 20, &c, (const float[]){1}, 1, dx);
}

/* ---- the dense labels' cross-entropy: each row's loss ---- */

enum { CE_N = 4, CE_C = 6, CE_H = 2 };   /* rows, classes, and a slice's share: [0, 2) and [2, 6) */

/* Label rows of probabilities, each summing to 1 (MindSpore's gradient is the
 * loss's only then), one of them one-hot. */
static void ce_labels(float *t)
{
	rand_fill(t, CE_N * CE_C, 5, 0.05f, 1);
	for (int i = 0; i < CE_N; i++) {
		double s = 0;
		for (int j = 0; j < CE_C; j++)
			s += t[i * CE_C + j] = i == 2 ? (j == 4) : t[i * CE_C + j];
		for (int j = 0; j < CE_C; j++)
			t[i * CE_C + j] = (float)(t[i * CE_C + j] / s);
	}
}

static void dense_ce_fwd(const float *x, float *y, const void *c)
{
	sc_cpu_softmax_ce(x, c, y, CE_N, CE_C);
}

/* The classes split in two slices, as lowering splits them: the rows'
 * maximum and sum from the whole, each slice's piece, the pieces added. */
static void slice(const float *x, float *a, float *b)
{
	for (int i = 0; i < CE_N; i++)
		for (int j = 0; j < CE_C; j++)
			*(j < CE_H ? a++ : b++) = x[i * CE_C + j];
}

static void row_stats(const float *x, float *mx, float *sum)
{
	for (int i = 0; i < CE_N; i++) {
		mx[i] = x[i * CE_C];
		for (int j = 1; j < CE_C; j++)
			mx[i] = fmaxf(mx[i], x[i * CE_C + j]);
		double s = 0;
		for (int j = 0; j < CE_C; j++)
			s += exp((double)x[i * CE_C + j] - mx[i]);
		sum[i] = (float)s;
	}
}

static void dense_ce_parts_fwd(const float *x, float *y, const void *c)
{
	float xa[CE_N * CE_H], xb[CE_N * (CE_C - CE_H)], ta[CE_N * CE_H], tb[CE_N * (CE_C - CE_H)];
	float mx[CE_N], sum[CE_N], ya[CE_N], yb[CE_N];
	slice(x, xa, xb);
	slice(c, ta, tb);
	row_stats(x, mx, sum);
	sc_cpu_softmax_ce_part(xa, ta, mx, sum, ya, CE_N, CE_H);
	sc_cpu_softmax_ce_part(xb, tb, mx, sum, yb, CE_N, CE_C - CE_H);
	for (int i = 0; i < CE_N; i++)
		y[i] = ya[i] + yb[i];
}

Test(grad, softmax_ce)
{
	float x[CE_N * CE_C], t[CE_N * CE_C], dx[CE_N * CE_C], w[CE_N];
	rand_fill(x, CE_N * CE_C, 1, -2, 2);
	rand_fill(w, CE_N, 3, -1, 1);
	ce_labels(t);
	sc_cpu_softmax_ce_grad(x, t, w, dx, CE_N, CE_C);
	check_grad("softmax_ce", dense_ce_fwd, x, CE_N * CE_C, t, w, CE_N, dx);
	sc_cpu_softmax_ce_grad(x, t, NULL, dx, CE_N, CE_C);   /* NULL dloss: 1 each row */
	check_grad("softmax_ce dloss NULL", dense_ce_fwd, x, CE_N * CE_C, t, (const float[]){1, 1, 1, 1}, CE_N, dx);
	/* the pieces: each slice's gradient from the whole's statistics, joined, is the gradient */
	float xa[CE_N * CE_H], xb[CE_N * (CE_C - CE_H)], ta[CE_N * CE_H], tb[CE_N * (CE_C - CE_H)];
	float ga[CE_N * CE_H], gb[CE_N * (CE_C - CE_H)], mx[CE_N], sum[CE_N];
	slice(x, xa, xb);
	slice(t, ta, tb);
	row_stats(x, mx, sum);
	sc_cpu_softmax_ce_part_grad(xa, ta, mx, sum, w, ga, CE_N, CE_H);
	sc_cpu_softmax_ce_part_grad(xb, tb, mx, sum, w, gb, CE_N, CE_C - CE_H);
	for (int i = 0, a = 0, b = 0; i < CE_N; i++)
		for (int j = 0; j < CE_C; j++)
			dx[i * CE_C + j] = j < CE_H ? ga[a++] : gb[b++];
	check_grad("softmax_ce_part", dense_ce_parts_fwd, x, CE_N * CE_C, t, w, CE_N, dx);
}

/* ArgMaxWithValue's and TopK's values: dy at the picks, by finite
 * differences (distinct values, no ties within h); ties and NaN exactly. */
typedef struct {
	int64_t outer, n, inner, k;
	int is_min;
} PickCtx;

static void arg_fwd(const float *x, float *y, const void *c)
{
	const PickCtx *p = c;
	sc_cpu_arg_reduce(x, p->outer, p->n, p->inner, p->is_min, NULL, y);
}

static void topk_fwd(const float *x, float *y, const void *c)
{
	const PickCtx *p = c;
	sc_cpu_topk(x, p->outer, p->n, p->k, y, NULL);
}

Test(grad, arg_reduce_topk)
{
	float x[24], w[8], dx[24];
	for (int i = 0; i < 24; i++)   /* distinct, at least 0.1 apart */
		x[i] = (float)((i * 7) % 24) * 0.1f - 1.0f;
	rand_fill(w, 8, 9, -1, 1);
	for (int is_min = 0; is_min < 2; is_min++) {   /* (2, 3, 4) along dim 1 */
		PickCtx c = {2, 3, 4, 0, is_min};
		sc_cpu_arg_reduce_grad(x, w, 2, 3, 4, is_min, dx);
		check_grad(is_min ? "arg_min" : "arg_max", arg_fwd, x, 24, &c, w, 8, dx);
	}
	PickCtx t = {4, 6, 1, 2, 0};   /* (4, 6), k 2 */
	sc_cpu_topk_grad(x, w, 4, 6, 2, dx);
	check_grad("topk", topk_fwd, x, 24, &t, w, 8, dx);
	/* ties: the first index alone takes dy; NaN is picked first */
	const float tie[5] = {1, 3, -2, 3, 3};
	float tdx[5];
	sc_cpu_arg_reduce_grad(tie, (const float[]){2}, 1, 5, 1, 0, tdx);
	cr_assert(t_close("first max", tdx, (const float[]){0, 2, 0, 0, 0}, 5, 0, 0));
	sc_cpu_topk_grad(tie, (const float[]){5, 6, 7}, 1, 5, 3, tdx);
	cr_assert(t_close("topk ties in index order", tdx, (const float[]){0, 5, 0, 6, 7}, 5, 0, 0));
	const float nan[4] = {1, NAN, 4, NAN};
	sc_cpu_arg_reduce_grad(nan, (const float[]){2}, 1, 4, 1, 1, tdx);
	cr_assert(t_close("first NaN, min too", tdx, (const float[]){0, 2, 0, 0}, 4, 0, 0));
}

/* CumSum and CumProd along the middle dim of (2, 8, 2), every exclusive and
 * reverse, whole and as 2 slices of 4 (each slice's total, gathered, carried
 * into the other's scan: lower.c's pieces); the pieces' gradients (x's, and
 * the totals' reaching each slice's ReduceSum or ReduceProd) summed must be
 * the whole's, by finite differences. CumProd at zeros exactly. */
typedef struct {
	int prod, exclusive, reverse, split;
} ScanCtx;

/* slice r of x (2, 8, 2) along dim 1, 4 of 8, as its own (2, 4, 2) */
static void scan_slice(const float *x, int r, float *s)
{
	for (int o = 0; o < 2; o++)
		for (int t = 0; t < 4; t++)
			for (int i = 0; i < 2; i++)
				s[(o * 4 + t) * 2 + i] = x[(o * 8 + r * 4 + t) * 2 + i];
}

static void scan_unslice(const float *s, int r, float *x)
{
	for (int o = 0; o < 2; o++)
		for (int t = 0; t < 4; t++)
			for (int i = 0; i < 2; i++)
				x[(o * 8 + r * 4 + t) * 2 + i] = s[(o * 4 + t) * 2 + i];
}

/* each slice's total (2, 1, 2) into totals (2, 2, 2) at slice r */
static void scan_totals(int prod, const float *x, float *totals)
{
	const int64_t sd[3] = {2, 4, 2};
	for (int r = 0; r < 2; r++) {
		float s[16], t[4];
		scan_slice(x, r, s);
		sc_cpu_reduce(prod ? SC_R_PROD : SC_R_SUM, s, t, sd, 3, (const int[]){1}, 1);
		for (int o = 0; o < 2; o++)
			for (int i = 0; i < 2; i++)
				totals[(o * 2 + r) * 2 + i] = t[o * 2 + i];
	}
}

static void scan_fwd(const float *x, float *y, const void *c)
{
	const ScanCtx *s = c;
	if (!s->split) {
		sc_cpu_cumsum(s->prod, x, y, 2, 8, 2, s->exclusive, s->reverse);
		return;
	}
	float totals[8];
	scan_totals(s->prod, x, totals);
	for (int r = 0; r < 2; r++) {
		float xs[16], ys[16];
		scan_slice(x, r, xs);
		sc_cpu_cumsum_part(s->prod, xs, totals, ys, r * 4, 2, 2, 4, 2, s->exclusive, s->reverse);
		scan_unslice(ys, r, y);
	}
}

/* the pieces' gradient, as the backward pass runs it: x's of each piece,
 * the totals' terms summed over the pieces, then each total's gradient */
static void scan_split_grad(const ScanCtx *s, const float *x, const float *dy, float *dx)
{
	const int64_t sd[3] = {2, 4, 2};
	float totals[8], dtot[8] = {0};
	scan_totals(s->prod, x, totals);
	for (int r = 0; r < 2; r++) {
		float xs[16], dys[16], dxs[16], dt[8];
		scan_slice(x, r, xs);
		scan_slice(dy, r, dys);
		sc_cpu_cumsum_part_grad(s->prod, s->prod ? xs : NULL, totals, dys, dxs, dt, r * 4, 2, 2, 4, 2, s->exclusive,
		                        s->reverse);
		scan_unslice(dxs, r, dx);
		for (int j = 0; j < 8; j++)
			dtot[j] += dt[j];
	}
	for (int r = 0; r < 2; r++) {   /* each slice's total: its ReduceSum's or ReduceProd's gradient */
		float xs[16], dxs[16], dxt[16], g[4];
		scan_slice(x, r, xs);
		scan_slice(dx, r, dxs);
		for (int o = 0; o < 2; o++)
			for (int i = 0; i < 2; i++)
				g[o * 2 + i] = dtot[(o * 2 + r) * 2 + i];
		if (s->prod)
			sc_cpu_reduce_prod_grad(xs, g, NULL, NULL, dxt, sd, 3, (const int[]){1}, 1);
		else
			for (int j = 0; j < 16; j++)
				dxt[j] = g[(j / 8) * 2 + j % 2];
		for (int j = 0; j < 16; j++)
			dxs[j] += dxt[j];
		scan_unslice(dxs, r, dx);
	}
}

Test(grad, cumsum_cumprod)
{
	float x[32], w[32], dx[32], y[32], yw[32];
	for (int i = 0; i < 32; i++)   /* near 1 in size, either sign: products stay moderate */
		x[i] = ((i * 5) % 32 < 16 ? 1 : -1) * (0.7f + (float)((i * 7) % 9) * 0.06f);
	rand_fill(w, 32, 9, -1, 1);
	for (int prod = 0; prod < 2; prod++)
		for (int mode = 0; mode < 4; mode++)
			for (int split = 0; split < 2; split++) {
				ScanCtx c = {prod, mode & 1, mode >> 1, split};
				char what[64];
				snprintf(what, sizeof what, "%s exclusive %d reverse %d%s", prod ? "cumprod" : "cumsum", c.exclusive,
				         c.reverse, split ? ", 2 slices" : "");
				if (split) {
					scan_split_grad(&c, x, w, dx);
					ScanCtx whole = c;   /* the pieces compute the whole's scan */
					whole.split = 0;
					scan_fwd(x, y, &c);
					scan_fwd(x, yw, &whole);
					cr_assert(t_close(what, y, yw, 32, 1e-5, 1e-6));
				} else
					sc_cpu_cumsum_grad(prod, x, w, dx, 2, 8, 2, c.exclusive, c.reverse);
				check_grad(what, scan_fwd, x, 32, &c, w, 32, dx);
			}
	/* CumProd at zeros: y = (2, 0, 0, 0); dx_j sums dy_i times the product of y_i's other factors */
	const float z[4] = {2, 0, 3, 0.5f}, ones[4] = {1, 1, 1, 1};
	float zdx[4];
	sc_cpu_cumsum_grad(1, z, ones, zdx, 1, 4, 1, 0, 0);
	cr_assert(t_close("cumprod at a zero", zdx, (const float[]){1, 11, 0, 0}, 4, 0, 0));
	sc_cpu_cumsum_grad(1, z, ones, zdx, 1, 4, 1, 1, 0);   /* exclusive: y = (1, 2, 0, 0) */
	cr_assert(t_close("exclusive cumprod at a zero", zdx, (const float[]){1, 8, 0, 0}, 4, 0, 0));
	sc_cpu_cumsum_grad(1, z, ones, zdx, 1, 4, 1, 0, 1);   /* reverse: y = (0, 0, 1.5, 0.5) */
	cr_assert(t_close("reverse cumprod at a zero", zdx, (const float[]){0, 4.5f, 0.5f, 4}, 4, 0, 0));
}

/* BatchNorm of x (3, 2, 4) per channel: in training through the batch's
 * statistics (the whole operator), the piece given the statistics (x's
 * direct gradient, the batch mean's and variance's), and scale's and
 * bias's; the moving statistics are left alone by SC_BN_TRAIN_KEEP. */
static const float bn_scale[2] = {1.5f, -0.7f}, bn_bias[2] = {0.2f, -0.4f};

static void bn_fwd(const float *x, float *y, const void *c)
{
	float mm[2] = {0, 0}, mv[2] = {1, 1};
	sc_cpu_batch_norm(x, bn_scale, bn_bias, mm, mv, NULL, NULL, y, 3, 2, 4, 1e-5, 0.1, 12,
	                  c ? SC_BN_INFER : SC_BN_TRAIN_KEEP);
}

static void bn_stats_fwd(const float *s, float *y, const void *c)
{
	float mm[2] = {0, 0}, mv[2] = {1, 1};
	sc_cpu_batch_norm(c, bn_scale, bn_bias, mm, mv, s, s + 2, y, 3, 2, 4, 1e-5, 0.1, 12, SC_BN_TRAIN_KEEP);
}

static void bn_scale_fwd(const float *p, float *y, const void *c)
{
	float mm[2] = {0, 0}, mv[2] = {1, 1};
	sc_cpu_batch_norm(c, p, p + 2, mm, mv, NULL, NULL, y, 3, 2, 4, 1e-5, 0.1, 12, SC_BN_TRAIN_KEEP);
}

Test(grad, batch_norm)
{
	float x[24], w[24], dx[24], ds[4], dp[4], s[4] = {0.3f, -0.2f, 0.8f, 1.4f}, p[4];
	rand_fill(x, 24, 5, -1, 1);
	rand_fill(w, 24, 6, -1, 1);
	sc_cpu_batch_norm_grad(x, w, bn_scale, NULL, NULL, dx, dp, dp + 2, NULL, NULL, 3, 2, 4, 1e-5);
	check_grad("batch_norm training", bn_fwd, x, 24, NULL, w, 24, dx);
	memcpy(p, bn_scale, sizeof bn_scale);
	memcpy(p + 2, bn_bias, sizeof bn_bias);
	check_grad("batch_norm scale, bias", bn_scale_fwd, p, 4, x, w, 24, dp);
	sc_cpu_batch_norm_grad(x, w, bn_scale, s, s + 2, NULL, NULL, NULL, ds, ds + 2, 3, 2, 4, 1e-5);
	check_grad("batch_norm batch statistics", bn_stats_fwd, s, 4, x, w, 24, ds);
	float zeros[2] = {0, 0}, ones[2] = {1, 1};   /* inference at mean 0, variance 1: dx = dy scale r */
	sc_cpu_batch_norm_grad(x, w, bn_scale, zeros, ones, dx, NULL, NULL, NULL, NULL, 3, 2, 4, 1e-5);
	check_grad("batch_norm inference", bn_fwd, x, 24, x, w, 24, dx);
}

/* The moving statistics: SC_BN_TRAIN updates them (the variance unbiased by
 * count / (count - 1)), SC_BN_INFER normalizes by them and leaves them. */
Test(grad, batch_norm_moving)
{
	const float x[4] = {1, 10, 3, 20};   /* (2, 2, 1): channel 0 {1, 3}, channel 1 {10, 20} */
	float mm[2] = {1, 2}, mv[2] = {4, 8}, y[4];
	sc_cpu_batch_norm(x, (const float[]){1, 1}, (const float[]){0, 0}, mm, mv, NULL, NULL, y, 2, 2, 1, 0, 0.25, 2,
	                  SC_BN_TRAIN);
	cr_assert(t_close("batch_norm y", y, (const float[]){-1, -1, 1, 1}, 4, 1e-6, 1e-6));
	cr_assert(t_close("moving mean", mm, (const float[]){0.75f * 1 + 0.25f * 2, 0.75f * 2 + 0.25f * 15}, 2, 1e-6, 0));
	cr_assert(t_close("moving variance", mv, (const float[]){0.75f * 4 + 0.25f * 2, 0.75f * 8 + 0.25f * 50}, 2, 1e-6,
	                  0));
	sc_cpu_batch_norm(x, (const float[]){1, 1}, (const float[]){0, 0}, mm, mv, NULL, NULL, y, 2, 2, 1, 0, 0.25, 2,
	                  SC_BN_INFER);
	cr_assert(t_close("batch_norm inference", y, (const float[]){(1 - 1.25f) / sqrtf(3.5f), (10 - 5.25f) / sqrtf(18.5f),
	                                                             (3 - 1.25f) / sqrtf(3.5f), (20 - 5.25f) / sqrtf(18.5f)},
	                  4, 1e-6, 1e-6));
	cr_assert(mm[0] == 1.25f && mv[1] == 18.5f, "inference leaves the moving statistics");
}
