/* cuda_twins.c: every kernel of the cuda library against its CPU twin.
 *
 * The same random inputs go to sc_X on the GPU (the public API, linked from
 * libshardc_rt_cuda.a) and to sc_cpu_X on the host (cpu/kernels.c); the
 * outputs must agree within a tolerance that scales with the values, as in
 * llm.c's validate_result: |gpu - cpu| <= 1e-4 |cpu| + 1e-5 max|cpu| (looser
 * for matmul and the atomics-summed gradients). Data movement, casts and
 * fills (every dtype, Float16 and BFloat16 included) must agree bit for bit. Where no GPU is present it
 * says so and exits 0; `cuda_twins --has-gpu` exits 0 only where one is.
 * Run under mpirun -np 1 (sc_init needs MPI). */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_kernels.h"
#include "rt_internal.h"
#include "rt_test.h"
#include "shardc_rt.h"

static sc_rt *rt;
static int checks, failures;
static uint64_t seed = 42;

enum { SLAB = 512 << 20 };   /* test_sums: four (8192, 2048) tensors */

/* host random floats and their device copy */
static float *rnd(int64_t n, float lo, float hi, float **d)
{
	float *h = malloc((size_t)n * sizeof *h);
	t_fill(h, n, &seed, lo, hi);
	*d = t_slab((size_t)n * sizeof *h);
	sc_from_host(rt, *d, h, (size_t)n * sizeof *h);
	return h;
}

static void *up(const void *h, size_t bytes)
{
	void *d = t_slab(bytes);
	sc_from_host(rt, d, h, bytes);
	return d;
}

/* compare device result d with the CPU's want */
static void twin(const char *what, const float *d, const float *want, int64_t n, double rtol)
{
	float *got = malloc((size_t)n * sizeof *got);
	sc_to_host(rt, got, d, (size_t)n * sizeof *got);
	double mx = 0;
	for (int64_t i = 0; i < n; i++)
		mx = fmax(mx, fabs(want[i]));
	checks++;
	if (!t_close(what, got, want, n, 1e-5 * (mx > 1 ? mx : 1), rtol))
		failures++;
	free(got);
}

static void twin_bytes(const char *what, const void *d, const void *want, size_t bytes)
{
	char *got = malloc(bytes);
	sc_to_host(rt, got, d, bytes);
	checks++;
	if (memcmp(got, want, bytes) != 0) {
		failures++;
		fprintf(stderr, "%s: bytes differ\n", what);
	}
	free(got);
}

static const char *dtname(sc_dtype dt)
{
	static const char *names[] = {"float32", "int32", "int64", "bool", "float16", "bfloat16"};
	return names[dt];
}

static size_t dtsize(sc_dtype dt)
{
	static const size_t sizes[] = {4, 4, 8, 1, 2, 2};
	return sizes[dt];
}

/* Conv2D (forward, dx, dw) and both pools (forward, dx) on windows with
 * stride, dilation and padding, against the CPU twins. */
static void test_windows(void)
{
	static const sc_window gs[] = {
		{2, 3, 9, 8, 4, 3, 3, 1, 1, 1, 1, 1, 1, 9, 8, 1},   /* "same", stride 1 */
		{2, 3, 9, 8, 5, 3, 2, 2, 3, 2, 1, 1, 0, 4, 3, 1},   /* stride 2, 3; dilation 2, 1; padded */
		{1, 2, 8, 8, 2, 2, 2, 2, 2, 1, 1, 0, 0, 4, 4, 1},   /* windows as wide as the stride */
		{2, 4, 7, 6, 6, 3, 3, 1, 2, 1, 1, -2, 1, 3, 3, 2},   /* two groups; the rows from the third (a piece) */
	};
	for (size_t t = 0; t < sizeof gs / sizeof gs[0]; t++) {
		const sc_window *g = &gs[t];
		int64_t nx = g->n * g->c * g->h * g->w, nw = g->o * g->c / g->groups * g->kh * g->kw;
		int64_t ny = g->n * g->o * g->ho * g->wo;
		int64_t np = g->n * g->c * g->ho * g->wo;
		float *dx, *dw, *ddy, *dpy;
		float *x = rnd(nx, -1, 1, &dx), *w = rnd(nw, -1, 1, &dw), *dy = rnd(ny, -1, 1, &ddy);
		float *y = malloc((size_t)(ny + nx + nw) * sizeof *y), *gx = y + ny, *gw = gx + nx;
		float *dyv = t_slab((size_t)ny * sizeof *dyv), *dgx = t_slab((size_t)nx * sizeof *dgx);
		float *dgw = t_slab((size_t)nw * sizeof *dgw);
		sc_conv2d(rt, g, dx, dw, dyv);
		sc_cpu_conv2d(g, x, w, y);
		twin("conv2d", dyv, y, ny, 1e-5);
		sc_conv2d_grad(rt, g, dx, dw, ddy, dgx, dgw);
		sc_cpu_conv2d_grad(g, x, w, dy, gx, gw);
		twin("conv2d dx", dgx, gx, nx, 1e-5);
		twin("conv2d dw", dgw, gw, nw, 1e-5);
		sc_window p = *g;
		p.o = p.c;
		p.groups = 1;
		free(rnd(np, -1, 1, &dpy));
		for (int k = 0; k < 2; k++) {
			sc_pool(rt, (sc_pool_kind)k, &p, dx, dyv);
			sc_cpu_pool((sc_pool_kind)k, &p, x, y);
			twin(k ? "avg_pool" : "max_pool", dyv, y, np, 1e-6);
			float *pdy = malloc((size_t)np * sizeof *pdy);
			sc_to_host(rt, pdy, dpy, (size_t)np * sizeof *pdy);
			sc_pool_grad(rt, (sc_pool_kind)k, &p, dx, dpy, dgx);
			sc_cpu_pool_grad((sc_pool_kind)k, &p, x, pdy, gx);
			twin(k ? "avg_pool dx" : "max_pool dx", dgx, gx, nx, 1e-6);
			free(pdy);
		}
		free(x);
		free(w);
		free(dy);
		free(y);
	}
}

/* Conv2DTranspose's forward, sc_conv2d_grad's dx alone (x and dw NULL), on
 * a rank's piece of its result: 4 of 12 rows from the fifth ("same" 3x3
 * stride 2: the padding 0 plus the piece's first row 4), every dout row
 * read; and two groups with the whole result. */
static void test_conv_transpose(void)
{
	static const sc_window gs[] = {
		{2, 3, 4, 12, 4, 3, 3, 2, 2, 1, 1, 4, 0, 6, 6, 1},
		{1, 4, 7, 6, 6, 3, 3, 1, 2, 1, 1, 1, 1, 7, 3, 2},
	};
	for (size_t t = 0; t < sizeof gs / sizeof gs[0]; t++) {
		const sc_window *g = &gs[t];
		int64_t nx = g->n * g->c * g->h * g->w, nw = g->o * g->c / g->groups * g->kh * g->kw;
		int64_t ny = g->n * g->o * g->ho * g->wo;
		float *dw, *ddy, *dgx = t_slab((size_t)nx * sizeof *dgx);
		float *w = rnd(nw, -1, 1, &dw), *dy = rnd(ny, -1, 1, &ddy), *gx = malloc((size_t)nx * sizeof *gx);
		sc_conv2d_grad(rt, g, NULL, dw, ddy, dgx, NULL);
		sc_cpu_conv2d_grad(g, NULL, w, dy, gx, NULL);
		twin("conv2d_transpose", dgx, gx, nx, 1e-5);
		free(w);
		free(dy);
		free(gx);
	}
}

static void test_matmul(void)
{
	const int M = 37, N = 29, K = 53;
	float *da, *db, *a = rnd(M * K, -1, 1, &da), *b = rnd(K * N, -1, 1, &db);
	float *c = malloc(M * N * sizeof *c), *dc = t_slab(M * N * sizeof *c);
	for (int ta = 0; ta < 2; ta++)
		for (int tb = 0; tb < 2; tb++) {
			sc_matmul(rt, da, db, dc, M, N, K, ta, tb);
			sc_cpu_matmul(a, b, c, M, N, K, ta, tb);
			twin(ta ? tb ? "matmul TT" : "matmul TN" : tb ? "matmul NT" : "matmul NN", dc, c, M * N, 1e-3);
		}
	/* batches: strided (2, 3) x (3,), and the per-batch loop (2, 1) x (1, 3) */
	float *dba, *dbb, *ba = rnd(6 * 5 * 7, -1, 1, &dba), *bb = rnd(3 * 7 * 4, -1, 1, &dbb);
	float *bc = malloc(6 * 5 * 4 * sizeof *bc), *dbc = t_slab(6 * 5 * 4 * sizeof *bc);
	const int64_t ab[2] = {2, 3}, bbd[1] = {3}, cb[2] = {2, 3};
	sc_batch_matmul(rt, dba, ab, 2, dbb, bbd, 1, dbc, cb, 2, 5, 4, 7, 0, 0);
	sc_cpu_batch_matmul(ba, ab, 2, bb, bbd, 1, bc, cb, 2, 5, 4, 7, 0, 0);
	twin("batch_matmul strided", dbc, bc, 6 * 20, 1e-3);
	const int64_t a2[2] = {2, 1}, b2[2] = {1, 3};
	sc_batch_matmul(rt, dba, a2, 2, dbb, b2, 2, dbc, cb, 2, 5, 4, 7, 1, 1);   /* a (2,1,7,5), b (1,3,4,7) */
	sc_cpu_batch_matmul(ba, a2, 2, bb, b2, 2, bc, cb, 2, 5, 4, 7, 1, 1);
	twin("batch_matmul broadcast", dbc, bc, 6 * 20, 1e-3);
	/* attention's views: q (2, 5, 3, 4) read as (2, 3, 5, 4), k likewise,
	 * and the product o = s v written as (2, 5, 3, 4) */
	enum { B = 2, S = 5, H = 3, D = 4 };
	const int64_t view[3] = {S * H * D, D, H * D}, sst[3] = {H * S * S, S * S, S}, bd[2] = {B, H};
	float *dq, *dk, *q = rnd(B * S * H * D, -1, 1, &dq), *k = rnd(B * S * H * D, -1, 1, &dk);
	float *sc = malloc(B * H * S * S * sizeof *sc), *dsc = t_slab(B * H * S * S * sizeof *sc);
	float *o = malloc(B * S * H * D * sizeof *o), *dout = t_slab(B * S * H * D * sizeof *o);
	sc_batch_matmul_strided(rt, dq, view, dk, view, dsc, sst, bd, 2, S, S, D, 0, 1);
	sc_cpu_batch_matmul_strided(q, view, k, view, sc, sst, bd, 2, S, S, D, 0, 1);
	twin("batch_matmul_strided read", dsc, sc, B * H * S * S, 1e-3);
	sc_batch_matmul_strided(rt, dsc, sst, dk, view, dout, view, bd, 2, S, D, S, 1, 0);
	sc_cpu_batch_matmul_strided(sc, sst, k, view, o, view, bd, 2, S, D, S, 1, 0);
	twin("batch_matmul_strided write", dout, o, B * S * H * D, 1e-3);
	free(q), free(k), free(sc), free(o);
	free(a), free(b), free(c), free(ba), free(bb), free(bc);
}

static void test_elementwise(void)
{
	const int64_t ad[3] = {4, 5, 6}, bd[2] = {5, 1}, yd[3] = {4, 5, 6};
	const int n = 120;
	float *da, *db, *ddy, *a = rnd(n, -2, 2, &da), *b = rnd(5, 0.5f, 1.5f, &db), *dy = rnd(n, -1, 1, &ddy);
	float *y = malloc(n * sizeof *y), *dyv = t_slab(n * sizeof *y), *ga = malloc(n * sizeof *ga), *gb = malloc(5 * 4);
	float *dga = t_slab(n * 4), *dgb = t_slab(5 * 4);
	for (sc_binop op = SC_ADD; op <= SC_BINOP_LAST; op++) {
		char what[64];
		if (op == SC_POW || op == SC_ZETA) {   /* a positive base (a negative one's power is NaN); Zeta's x > 1 */
			for (int i = 0; i < n; i++)
				a[i] = fabsf(a[i]) + (op == SC_ZETA ? 1.1f : 0.1f);
			sc_from_host(rt, da, a, n * sizeof *a);
		}
		snprintf(what, sizeof what, "binary %d", op);
		sc_binary(rt, op, da, ad, 3, db, bd, 2, dyv, yd, 3);
		sc_cpu_binary(op, a, ad, 3, b, bd, 2, y, yd, 3);
		twin(what, dyv, y, n, 1e-5);
		snprintf(what, sizeof what, "binary_grad %d", op);
		sc_binary_grad(rt, op, da, ad, 3, db, bd, 2, ddy, yd, 3, dga, dgb);
		sc_cpu_binary_grad(op, a, ad, 3, b, bd, 2, dy, yd, 3, ga, gb);
		twin(what, dga, ga, n, 1e-4);
		twin(what, dgb, gb, 5, 1e-4);
	}
	/* the comparisons: a against b broadcast, with ties, and a scalar */
	for (int i = 0; i < n; i += 4)
		a[i] = b[i / 6 % 5];
	sc_from_host(rt, da, a, n * sizeof *a);
	uint8_t *cmp = malloc(n), *dcmp = t_slab(n);
	for (sc_cmpop op = 0; op < SC_CMP_COUNT; op++) {
		char what[64];
		snprintf(what, sizeof what, "compare %d", op);
		sc_compare(rt, op, 0.25f, da, ad, 3, db, bd, 2, dcmp, yd, 3);
		sc_cpu_compare(op, 0.25f, a, ad, 3, b, bd, 2, cmp, yd, 3);
		twin_bytes(what, dcmp, cmp, n);
		snprintf(what, sizeof what, "compare %d with a scalar", op);
		sc_compare(rt, op, 0.25f, db, NULL, 0, da, ad, 3, dcmp, yd, 3);
		sc_cpu_compare(op, 0.25f, b, NULL, 0, a, ad, 3, cmp, yd, 3);
		twin_bytes(what, dcmp, cmp, n);
	}
	/* the logical operators on masks (a > 0 against b > 1, broadcast), and IsFinite with infinities and NaN */
	uint8_t *ma = malloc(n), mb[5], *dma, *dmb;
	for (int i = 0; i < n; i++)
		ma[i] = a[i] > 0;
	for (int i = 0; i < 5; i++)
		mb[i] = b[i] > 1;
	dma = up(ma, n), dmb = up(mb, 5);
	for (sc_logop op = SC_L_NOT; op <= SC_L_OR; op++) {
		char what[64];
		snprintf(what, sizeof what, "logical %d", op);
		sc_logical(rt, op, dma, ad, 3, op == SC_L_NOT ? NULL : dmb, bd, 2, dcmp, yd, 3);
		sc_cpu_logical(op, ma, ad, 3, op == SC_L_NOT ? NULL : mb, bd, 2, cmp, yd, 3);
		twin_bytes(what, dcmp, cmp, n);
	}
	float odd[4] = {INFINITY, -INFINITY, NAN, 1};
	for (int i = 0; i < 4; i++)
		a[i * 7] = odd[i];
	sc_from_host(rt, da, a, n * sizeof *a);
	sc_is_finite(rt, da, dcmp, n);
	sc_cpu_is_finite(a, cmp, n);
	twin_bytes("is_finite", dcmp, cmp, n);
	for (int i = 0; i < 4; i++)
		a[i * 7] = 0.5f;
	sc_from_host(rt, da, a, n * sizeof *a);
	free(cmp), free(ma);
	sc_sum_to_shape(rt, ddy, yd, 3, dgb, bd, 2);
	sc_cpu_sum_to_shape(dy, yd, 3, gb, bd, 2);
	twin("sum_to_shape", dgb, gb, 5, 1e-4);
	sc_broadcast_to(rt, db, bd, 2, dyv, yd, 3);
	sc_cpu_broadcast_to(b, bd, 2, y, yd, 3);
	twin("broadcast_to", dyv, y, n, 0);
	/* Select: both branches, then each with zeros on the other side (its gradients) */
	uint8_t cond[120];
	for (int i = 0; i < n; i++)
		cond[i] = (uint8_t)(i % 3 == 0 || i % 7 == 1);
	uint8_t *dcond = up(cond, sizeof cond);
	const char *sel[3] = {"select", "select dx", "select dy"};
	for (int k = 0; k < 3; k++) {
		sc_select(rt, dcond, k != 2 ? da : NULL, k != 1 ? ddy : NULL, dyv, n);
		sc_cpu_select(cond, k != 2 ? a : NULL, k != 1 ? dy : NULL, y, n);
		twin(sel[k], dyv, y, n, 0);
	}
	/* RotaryPositionEmbedding: x (2, 3, 2, 10) of n, cos (1, 1, 2, 10) and
	 * sin (2, 1, 2, 10) from dy's elements, both modes, forward and transposed */
	{
		const int64_t xd[4] = {2, 3, 2, 10}, cd[4] = {1, 1, 2, 10}, sd[4] = {2, 1, 2, 10};
		for (int k = 0; k < 4; k++) {
			sc_rotary(rt, k / 2, k % 2, da, xd, ddy, cd, ddy + 40, sd, dyv);
			sc_cpu_rotary(k / 2, k % 2, a, xd, dy, cd, dy + 40, sd, y);
			twin(k % 2 ? "rotary transposed" : "rotary", dyv, y, 120, 1e-6);
		}
		sc_rotary(rt, 0, 0, da, xd, NULL, cd, ddy, xd, dyv);
		sc_cpu_rotary(0, 0, a, xd, NULL, cd, dy, xd, y);
		twin("rotary, zeros for cos", dyv, y, 120, 1e-6);
	}
	sc_bias_add(rt, da, ddy, dyv, 1, n);
	sc_cpu_bias_add(a, dy, y, 1, n);
	twin("bias_add", dyv, y, n, 1e-6);
	sc_bias_add_grad(rt, ddy, dga, 20, 6);
	sc_cpu_bias_add_grad(dy, ga, 20, 6);
	twin("bias_add_grad", dga, ga, 6, 1e-4);
	sc_scale(rt, da, dyv, n, -0.3);
	sc_cpu_scale(a, y, n, -0.3);
	twin("scale", dyv, y, n, 1e-6);
	/* PReLU on x (4, 5, 6) of n, with b's 5 weights, one a channel, or its first for all; dx and dw */
	for (int k = 0; k < 2; k++) {
		int64_t wn = k ? 1 : 5;
		sc_prelu(rt, da, db, dyv, 4, 5, 6, wn);
		sc_cpu_prelu(a, b, y, 4, 5, 6, wn);
		twin(k ? "prelu, one weight" : "prelu", dyv, y, n, 0);
		sc_prelu_grad(rt, da, db, ddy, dga, dgb, 4, 5, 6, wn);
		sc_cpu_prelu_grad(a, b, dy, ga, gb, 4, 5, 6, wn);
		twin(k ? "prelu dx, one weight" : "prelu dx", dga, ga, n, 0);
		twin(k ? "prelu dw, one weight" : "prelu dw", dgb, gb, wn, 1e-5);
	}

	const char reads[] = {   /* X, Y or N: what each gradient reads */
#define READS(name, t, fwd, grad) [SC_U_##name] = #t[0],
		SC_UNARY_TABLE(READS)
#undef READS
	};
	float *dp, *pos = rnd(n, 0.1f, 3, &dp), *du, *unit = rnd(n, -0.9f, 0.9f, &du), *dab, *above = rnd(n, 1.1f, 4, &dab);
	for (sc_unop op = 0; op < SC_U_COUNT; op++) {   /* each in its domain, no NaN */
		int positive = op == SC_U_LOG || op == SC_U_SQRT || op == SC_U_RSQRT || op == SC_U_LGAMMA;
		int inside = op == SC_U_ACOS || op == SC_U_ASIN || op == SC_U_ATANH || op == SC_U_ERFINV;   /* (-1, 1) */
		const float *x = positive ? pos : inside ? unit : op == SC_U_ACOSH ? above : a;
		const float *dx = positive ? dp : inside ? du : op == SC_U_ACOSH ? dab : da;
		char what[64];
		snprintf(what, sizeof what, "unary %d", op);
		sc_unary(rt, op, T_UNARY_P, dx, dyv, n);
		sc_cpu_unary(op, T_UNARY_P, x, y, n);
		twin(what, dyv, y, n, 1e-5);
		snprintf(what, sizeof what, "unary_grad %d", op);
		sc_unary_grad(rt, op, T_UNARY_P, reads[op] == 'Y' ? dyv : reads[op] == 'X' ? dx : NULL, ddy, dga, n);
		sc_cpu_unary_grad(op, T_UNARY_P, reads[op] == 'Y' ? y : reads[op] == 'X' ? x : NULL, dy, ga, n);
		twin(what, dga, ga, n, 1e-4);
	}
	free(a), free(b), free(dy), free(y), free(ga), free(gb), free(pos), free(unit), free(above);
}

/* FlashAttentionScore: q (2, 6, 70, 24), k and v (2, N_kv, 45, 24) with a
 * Bool (2, 1, 70, 45) mask, or causal (S = S_kv = 70) without one, with 6,
 * 2 (grouped-query) and 1 (multi-query) key heads, in the BNSD and BSND
 * layouts; the forward and the three gradients (S and S_kv not multiples of
 * the tiles) */
static void test_flash_attention(void)
{
	const int64_t B = 2, N = 6, S = 70, D = 24;
	static const int64_t cases[][3] = {   /* causal, N_kv, layout */
		{0, 6, SC_FA_BNSD}, {1, 6, SC_FA_BNSD}, {1, 2, SC_FA_BNSD}, {0, 1, SC_FA_BNSD}, {1, 2, SC_FA_BSND},
		{0, 6, SC_FA_BSND},
	};
	for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
		int causal = (int)cases[c][0], layout = (int)cases[c][2];
		int64_t NK = cases[c][1], T = causal ? S : 45, dims[6] = {B, N, S, T, D, NK}, md[4] = {B, 1, S, T};
		float *dq, *dk, *dv, *ddo, *q = rnd(B * N * S * D, -1, 1, &dq), *k = rnd(B * NK * T * D, -1, 1, &dk);
		float *v = rnd(B * NK * T * D, -1, 1, &dv), *g = rnd(B * N * S * D, -1, 1, &ddo);
		uint8_t *mask = NULL, *dmask = NULL;
		if (!causal) {
			mask = malloc((size_t)(B * S * T));
			for (int64_t i = 0; i < B * S * T; i++)
				mask[i] = i * 7919 % 13 < 4;   /* 4 keys in 13 hidden */
			dmask = up(mask, (size_t)(B * S * T));
		}
		char what[80];
		float *o = malloc((size_t)(B * N * S * D) * 4), *dov = t_slab((size_t)(B * N * S * D) * 4);
		sc_flash_attention(rt, dq, dk, dv, dmask, 0, md, dov, dims, 0.3f, causal, layout);
		sc_cpu_flash_attention(q, k, v, mask, 0, md, o, dims, 0.3f, causal, layout);
		snprintf(what, sizeof what, "flash_attention %s, %lld key heads, %s", causal ? "causal" : "masked", (long long)NK,
		         layout == SC_FA_BSND ? "BSND" : "BNSD");
		twin(what, dov, o, B * N * S * D, 1e-4);
		float *dod = up(o, (size_t)(B * N * S * D) * 4);   /* both gradients from the CPU's o */
		for (int wrt = 0; wrt < 3; wrt++) {
			int64_t n = wrt ? T * B * NK * D : S * B * N * D;
			float *gx = malloc((size_t)n * 4), *dgx = t_slab((size_t)n * 4);
			snprintf(what, sizeof what, "flash_attention_grad %s%s, %lld key heads, %s",
			         wrt == 0 ? "dq" : wrt == 1 ? "dk" : "dv", causal ? " causal" : " masked", (long long)NK,
			         layout == SC_FA_BSND ? "BSND" : "BNSD");
			sc_flash_attention_grad(rt, dq, dk, dv, dmask, 0, md, dod, ddo, wrt == 0 ? dgx : NULL, wrt == 1 ? dgx : NULL,
			                        wrt == 2 ? dgx : NULL, dims, 0.3f, causal, layout);
			sc_cpu_flash_attention_grad(q, k, v, mask, 0, md, o, g, wrt == 0 ? gx : NULL, wrt == 1 ? gx : NULL,
			                            wrt == 2 ? gx : NULL, dims, 0.3f, causal, layout);
			twin(what, dgx, gx, n, 1e-3);
			free(gx);
		}
		free(q), free(k), free(v), free(g), free(o), free(mask);
	}
}

static void test_rows(void)
{
	const int64_t d[3] = {6, 40, 70};
	const int n = 6 * 40 * 70;
	float *dx, *ddy, *x = rnd(n, -3, 3, &dx), *dy = rnd(n, -1, 1, &ddy);
	float *y = malloc(n * 4), *g = malloc(n * 4), *dyv = t_slab(n * 4), *dg = t_slab(n * 4);
	for (int axis = 0; axis < 3; axis++)
		for (int lg = 0; lg < 2; lg++) {
			char what[64];
			snprintf(what, sizeof what, "%s axis %d", lg ? "log_softmax" : "softmax", axis);
			(lg ? sc_log_softmax : sc_softmax)(rt, dx, dyv, d, 3, axis);
			sc_cpu_softmax(x, y, d, 3, axis, lg);
			twin(what, dyv, y, n, 1e-4);
			(lg ? sc_log_softmax_grad : sc_softmax_grad)(rt, dyv, ddy, dg, d, 3, axis);
			sc_cpu_softmax_grad(y, dy, g, d, 3, axis, lg);
			twin(what, dg, g, n, 1e-3);
		}
	/* a BiasAdd fused into a unary operator (compiler/fuse.c) */
	float *dbias, *bias = rnd(70, -1, 1, &dbias);
	for (sc_unop op = 0; op < SC_U_COUNT; op++) {
		char what[64];
		snprintf(what, sizeof what, "bias_unary %d", (int)op);
		sc_bias_unary(rt, op, T_UNARY_P, dx, dbias, dg, dyv, n / 70, 70);
		sc_cpu_bias_unary(op, T_UNARY_P, x, bias, g, y, n / 70, 70);
		twin(what, dg, g, n, 1e-5);
		twin(what, dyv, y, n, 1e-4);
	}
	/* a BiasAdd fused into the residual Add (compiler/fuse.c) */
	float *dr, *r = rnd(n, -2, 2, &dr);
	sc_bias_add_residual(rt, dx, dbias, dg, dr, dyv, n / 70, 70);
	sc_cpu_bias_add_residual(x, bias, g, r, y, n / 70, 70);
	twin("bias_add_residual pre", dg, g, n, 1e-6);
	twin("bias_add_residual", dyv, y, n, 1e-6);
	/* an elementwise chain (sc_ew_chain): BFloat16 x + bias, rounded and
	 * kept, GeLU, times a Float32 scalar, plus a full Float32 operand,
	 * stored in BFloat16, and GeLU's gradient at the kept sum from the
	 * Float32 operand (SC_EW_UNARY_GRAD) stored in BFloat16; its values
	 * widened to compare (a GeLU's tanh may move a result by one bfloat16
	 * step) */
	{
		uint16_t *xh = malloc(n * 2), *bh = malloc(140), *pre = malloc(n * 2), *out = malloc(n * 2);
		uint16_t *gout = malloc(n * 2);
		uint16_t *dxh = t_slab(n * 2), *dbh = t_slab(140), *dpre = t_slab(n * 2), *dout = t_slab(n * 2), *dgout = t_slab(n * 2);
		float *dsc, *sc = rnd(1, 0.5f, 1.5f, &dsc);
		sc_cpu_cast(x, SC_F32, xh, SC_BF16, n);
		sc_cpu_cast(bias, SC_F32, bh, SC_BF16, 70);
		sc_cast(rt, dx, SC_F32, dxh, SC_BF16, n);
		sc_cast(rt, dbias, SC_F32, dbh, SC_BF16, 70);
		for (int d_ = 0; d_ < 2; d_++) {
			const sc_ew_operand ins[] = {{d_ ? (const void *)dxh : xh, SC_BF16, SC_EW_FULL},
			                             {d_ ? (const void *)dbh : bh, SC_BF16, SC_EW_ROW},
			                             {d_ ? (const void *)dsc : sc, SC_F32, SC_EW_SCALAR},
			                             {d_ ? (const void *)dr : r, SC_F32, SC_EW_FULL}};
			const sc_ew_step st[] = {
				{SC_EW_BINARY, SC_ADD, 0, 1, SC_F32, NULL, 0},        /* 4 */
				{SC_EW_ROUND, 0, 4, 0, SC_BF16, NULL, 0},             /* 5 */
				{SC_EW_STORE, 0, 5, 0, SC_BF16, d_ ? dpre : pre, 0},  /* 6 */
				{SC_EW_UNARY, SC_U_GELU, 6, 0, SC_F32, NULL, 0},      /* 7 */
				{SC_EW_BINARY, SC_MUL, 7, 2, SC_F32, NULL, 0},        /* 8 */
				{SC_EW_BINARY, SC_ADD, 3, 8, SC_F32, NULL, 0},        /* 9 */
				{SC_EW_STORE, 0, 9, 0, SC_BF16, d_ ? dout : out, 0},
				{SC_EW_UNARY_GRAD, SC_U_GELU, 6, 3, SC_F32, NULL, 0}, /* 11 */
				{SC_EW_STORE, 0, 11, 0, SC_BF16, d_ ? dgout : gout, 0},
			};
			if (d_)
				sc_ew_chain(rt, st, 9, ins, 4, n / 70, 70);
			else
				sc_cpu_ew_chain(st, 9, ins, 4, n / 70, 70);
		}
		sc_cast(rt, dpre, SC_BF16, dg, SC_F32, n);
		sc_cpu_cast(pre, SC_BF16, g, SC_F32, n);
		twin("ew_chain kept sum", dg, g, n, 1e-6);
		sc_cast(rt, dout, SC_BF16, dyv, SC_F32, n);
		sc_cpu_cast(out, SC_BF16, y, SC_F32, n);
		twin("ew_chain", dyv, y, n, 1e-2);
		sc_cast(rt, dgout, SC_BF16, dyv, SC_F32, n);
		sc_cpu_cast(gout, SC_BF16, y, SC_F32, n);
		twin("ew_chain unary grad", dyv, y, n, 1e-2);
		free(xh), free(bh), free(pre), free(out), free(gout), free(sc);
	}
	/* a chain's steps pass their p (LeakyReLU's alpha) to the row: the
	 * forward and the gradient from t = x, dy, against sc_cpu_unary's */
	{
		float *dlr = t_slab(n * 4), *dlg = t_slab(n * 4);
		const sc_ew_operand ins[] = {{dx, SC_F32, SC_EW_FULL}, {ddy, SC_F32, SC_EW_FULL}};
		const sc_ew_step st[] = {
			{SC_EW_UNARY, SC_U_LEAKY_RELU, 0, 0, SC_F32, NULL, 0.2f},        /* 2 */
			{SC_EW_STORE, 0, 2, 0, SC_F32, dlr, 0},
			{SC_EW_UNARY_GRAD, SC_U_LEAKY_RELU, 0, 1, SC_F32, NULL, 0.2f},   /* 4 */
			{SC_EW_STORE, 0, 4, 0, SC_F32, dlg, 0},
		};
		sc_ew_chain(rt, st, 4, ins, 2, n / 70, 70);
		sc_cpu_unary(SC_U_LEAKY_RELU, 0.2f, x, y, n);
		twin("ew_chain leaky_relu", dlr, y, n, 0);
		sc_cpu_unary_grad(SC_U_LEAKY_RELU, 0.2f, x, dy, g, n);
		twin("ew_chain leaky_relu grad", dlg, g, n, 0);
	}
	/* a Mul by one element fused into the softmax (compiler/fuse.c) */
	float *ds, *s = rnd(1, 0.1f, 0.9f, &ds);
	for (int axis = 0; axis < 3; axis++) {
		char what[64];
		snprintf(what, sizeof what, "softmax_scaled axis %d", axis);
		sc_softmax_scaled(rt, dx, ds, dyv, d, 3, axis);
		sc_cpu_softmax_scaled(x, s, y, d, 3, axis);
		twin(what, dyv, y, n, 1e-4);
	}
	/* and a mask added (40, 70) over (6, 40, 70), or one per row (6, 40, 1) */
	float *dmask, *mk = rnd(6 * 40 * 70, -3, 3, &dmask);
	static const int64_t md[2][3] = {{40, 70}, {6, 40, 1}};
	for (int k = 0; k < 2; k++) {
		sc_softmax_masked(rt, dx, k ? NULL : ds, dmask, md[k], k ? 3 : 2, dyv, d, 3);
		sc_cpu_softmax_masked(x, k ? NULL : s, mk, md[k], k ? 3 : 2, y, d, 3);
		twin(k ? "softmax_masked per row" : "softmax_masked scaled", dyv, y, n, 1e-4);
	}
	free(mk);
	const int axes_sets[][3] = {{0, -1, 0}, {1, 0, 0}, {2, 0, 0}, {0, 1, 2}};
	const int naxes[] = {2, 1, 1, 3};
	for (int k = 0; k < 4; k++)
		for (sc_reduce_kind kind = SC_R_SUM; kind <= SC_R_MIN; kind++) {
			char what[64];
			snprintf(what, sizeof what, "reduce %d over set %d", kind, k);
			void (*f)(sc_rt *, const float *, float *, const int64_t *, int, const int *, int) =
				kind == SC_R_SUM ? sc_reduce_sum : kind == SC_R_MEAN ? sc_reduce_mean
				: kind == SC_R_MAX ? sc_reduce_max : sc_reduce_min;
			/* ReduceMin's gradient: ReduceMax's kernel given the minimum, through its own entry */
			void (*fg)(sc_rt *, const float *, const float *, const float *, const float *, float *,
			           const int64_t *, int, const int *, int) =
				kind == SC_R_MAX ? sc_reduce_max_grad : sc_reduce_min_grad;
			const char *gname = kind == SC_R_MAX ? "reduce_max_grad" : "reduce_min_grad";
			f(rt, dx, dyv, d, 3, axes_sets[k], naxes[k]);
			sc_cpu_reduce(kind, x, y, d, 3, axes_sets[k], naxes[k]);
			int64_t nout = 1;
			for (int i = 0, j; i < 3; i++) {
				for (j = 0; j < naxes[k] && (axes_sets[k][j] + 3) % 3 != i; j++)
					;
				nout *= j < naxes[k] ? 1 : d[i];
			}
			twin(what, dyv, y, nout, 1e-4);
			if (kind == SC_R_MAX || kind == SC_R_MIN) {
				fg(rt, dx, dyv, ddy, NULL, dg, d, 3, axes_sets[k], naxes[k]);
				sc_cpu_reduce_max_grad(x, y, dy, NULL, g, d, 3, axes_sets[k], naxes[k]);
				twin(gname, dg, g, n, 1e-5);
				float *dc = t_slab(sizeof(float) * (size_t)nout), *c = malloc(sizeof(float) * (size_t)nout);
				sc_count_equal(rt, dx, dyv, dc, d, 3, axes_sets[k], naxes[k]);
				sc_cpu_count_equal(x, y, c, d, 3, axes_sets[k], naxes[k]);
				twin("count_equal", dc, c, nout, 0);
				for (int64_t o = 0; o < nout; o++)
					c[o] += 2;   /* ties on other ranks */
				sc_from_host(rt, dc, c, sizeof(float) * (size_t)nout);
				fg(rt, dx, dyv, ddy, dc, dg, d, 3, axes_sets[k], naxes[k]);
				sc_cpu_reduce_max_grad(x, y, dy, c, g, d, 3, axes_sets[k], naxes[k]);
				snprintf(what, sizeof what, "%s with counts", gname);
				twin(what, dg, g, n, 1e-5);
				sc_where_equal(rt, dx, dx, ddy, dg, nout);
				sc_cpu_where_equal(x, x, dy, g, nout);
				twin("where_equal", dg, g, nout, 0);
				free(c);
			}
		}
	/* ReduceProd over (4, 6, 5) values near 1, a zero in some rows and two in others; its statistics and
	 * gradient, local and given every rank's; ReduceAll and ReduceAny of bytes */
	{
		const int64_t pd[3] = {4, 6, 5};
		float *dp, *p = rnd(120, 0.8f, 1.25f, &dp);
		for (int i = 0; i < 120; i += 7)
			p[i] = 0;
		sc_from_host(rt, dp, p, 120 * sizeof *p);
		float *dpy, *py = rnd(30, -1, 1, &dpy), *dpg = t_slab(120 * sizeof(float)), *pg = malloc(120 * sizeof *pg);
		float *dpo = t_slab(30 * sizeof(float)), *po = malloc(30 * sizeof *po);
		float *dst = t_slab(60 * sizeof(float)), *st = malloc(60 * sizeof *st);
		uint8_t bx[120], *by = malloc(30), *dby = t_slab(30);
		for (int i = 0; i < 120; i++)
			bx[i] = (uint8_t)(i % 4 != 0) * (uint8_t)(1 + i % 3);   /* true as any nonzero byte */
		uint8_t *dbx = up(bx, sizeof bx);
		for (int k = 0; k < 3; k++) {
			const int axes[1] = {k};
			int64_t nout = 120 / pd[k];
			char what[64];
			sc_reduce_prod(rt, dp, dpo, pd, 3, axes, 1);
			sc_cpu_reduce(SC_R_PROD, p, po, pd, 3, axes, 1);
			snprintf(what, sizeof what, "reduce_prod over %d", k);
			twin(what, dpo, po, nout, 1e-5);
			for (int stat = 0; stat < 2; stat++) {
				sc_reduce_prod_stat(rt, dp, stat, dst + stat * nout, pd, 3, axes, 1);
				sc_cpu_reduce_prod_stat(p, stat, st + stat * nout, pd, 3, axes, 1);
			}
			snprintf(what, sizeof what, "reduce_prod_stat over %d", k);
			twin(what, dst, st, 2 * nout, 1e-5);
			sc_reduce_prod_grad(rt, dp, dpy, NULL, NULL, dpg, pd, 3, axes, 1);
			sc_cpu_reduce_prod_grad(p, py, NULL, NULL, pg, pd, 3, axes, 1);
			snprintf(what, sizeof what, "reduce_prod_grad over %d", k);
			twin(what, dpg, pg, 120, 1e-5);
			for (int64_t o = 0; o < nout; o++)
				st[o] *= 1.5f, st[nout + o] += (float)(o % 2);   /* other ranks' factors, and zeros in some */
			sc_from_host(rt, dst, st, 2 * (size_t)nout * sizeof *st);
			sc_reduce_prod_grad(rt, dp, dpy, dst, dst + nout, dpg, pd, 3, axes, 1);
			sc_cpu_reduce_prod_grad(p, py, st, st + nout, pg, pd, 3, axes, 1);
			snprintf(what, sizeof what, "reduce_prod_grad over %d, the ranks' statistics", k);
			twin(what, dpg, pg, 120, 1e-5);
			for (int any = 0; any < 2; any++) {
				(any ? sc_reduce_any : sc_reduce_all)(rt, dbx, dby, pd, 3, axes, 1);
				sc_cpu_reduce_bool(any, bx, by, pd, 3, axes, 1);
				snprintf(what, sizeof what, "reduce_%s over %d", any ? "any" : "all", k);
				twin_bytes(what, dby, by, nout);
			}
		}
		free(p), free(py), free(pg), free(po), free(st), free(by);
	}
	/* CumSum and CumProd over (4, 6, 5) along each dim, every exclusive and reverse, a zero in some lines;
	 * their gradients; and a split axis's piece (its slice 1 of 3 along dim 1, the totals given) */
	{
		const int64_t cd[3] = {4, 6, 5};
		float *dc, *c = rnd(120, 0.8f, 1.25f, &dc);
		for (int i = 0; i < 120; i += 11)
			c[i] = 0;
		sc_from_host(rt, dc, c, 120 * sizeof *c);
		float *dcy, *cy = rnd(120, -1, 1, &dcy), *dtot, *tot = rnd(60, 0.5f, 1.5f, &dtot);
		float *dco = t_slab(120 * sizeof(float)), *co = malloc(120 * sizeof *co);
		float *dcg = t_slab(60 * sizeof(float)), *cg = malloc(60 * sizeof *cg);
		for (int prod = 0; prod < 2; prod++)
			for (int mode = 0; mode < 4; mode++) {
				int ex = mode & 1, rev = mode >> 1;
				char what[96];
				for (int k = 0; k < 3; k++) {
					int64_t outer = 1, inner = 1;
					for (int j = 0; j < 3; j++)
						*(j < k ? &outer : &inner) *= j == k ? 1 : cd[j];
					sc_cumsum(rt, prod, dc, dco, outer, cd[k], inner, ex, rev);
					sc_cpu_cumsum(prod, c, co, outer, cd[k], inner, ex, rev);
					snprintf(what, sizeof what, "cumsum prod %d exclusive %d reverse %d along %d", prod, ex, rev, k);
					twin(what, dco, co, 120, 1e-5);
					sc_cumsum_grad(rt, prod, dc, dcy, dco, outer, cd[k], inner, ex, rev);
					sc_cpu_cumsum_grad(prod, c, cy, co, outer, cd[k], inner, ex, rev);
					snprintf(what, sizeof what, "cumsum_grad prod %d exclusive %d reverse %d along %d", prod, ex, rev,
					         k);
					twin(what, dco, co, 120, 1e-5);
				}
				/* (4, 6, 5) as slice 1 of 3 along dim 1: totals (4, 3, 5), offset 6 */
				sc_cumsum_part(rt, prod, dc, dtot, dco, 6, 3, 4, 6, 5, ex, rev);
				sc_cpu_cumsum_part(prod, c, tot, co, 6, 3, 4, 6, 5, ex, rev);
				snprintf(what, sizeof what, "cumsum_part prod %d exclusive %d reverse %d", prod, ex, rev);
				twin(what, dco, co, 120, 1e-5);
				sc_cumsum_part_grad(rt, prod, dc, dtot, dcy, dco, dcg, 6, 3, 4, 6, 5, ex, rev);
				sc_cpu_cumsum_part_grad(prod, c, tot, cy, co, cg, 6, 3, 4, 6, 5, ex, rev);
				snprintf(what, sizeof what, "cumsum_part_grad prod %d exclusive %d reverse %d", prod, ex, rev);
				twin(what, dco, co, 120, 1e-5);
				twin(what, dcg, cg, 60, 1e-5);
			}
		free(c), free(cy), free(tot), free(co), free(cg);
	}
	const struct {
		int bna, bpa;
	} ln[] = {{2, 2}, {1, 2}, {2, 1}, {-1, 0}};
	/* every normalizer of SC_NORM_TABLE; RmsNorm with a beta on odd cases, without on even ones */
	for (int kind = 0; kind < SC_N_COUNT; kind++)
		for (int k = 0; k < 4; k++) {
			sc_norm_kind nk = (sc_norm_kind)kind;
			int c = sc_norm_centered(nk), with_beta = c || k % 2;
			int bpa = ln[k].bpa < 0 ? ln[k].bpa + 3 : ln[k].bpa;
			int64_t np = t_numel(d + bpa, 3 - bpa);
			float *dgam, *dbet, *gam = rnd(np, 0.5f, 1.5f, &dgam), *bet = rnd(np, -1, 1, &dbet);
			float *dgg = t_slab(np * 4), *dbb = t_slab(np * 4), *gg = malloc(np * 4), *bb = malloc(np * 4);
			char what[64];
			snprintf(what, sizeof what, "%s %d", c ? "LayerNorm" : "RmsNorm", k);
			sc_norm(rt, nk, dx, dgam, with_beta ? dbet : NULL, dyv, d, 3, ln[k].bna, ln[k].bpa, 1e-5);
			sc_cpu_norm(c, x, gam, with_beta ? bet : NULL, y, d, 3, ln[k].bna, ln[k].bpa, 1e-5);
			twin(what, dyv, y, n, 1e-4);
			sc_norm_grad(rt, nk, ddy, dx, dgam, dg, dgg, with_beta ? dbb : NULL, d, 3, ln[k].bna, ln[k].bpa, 1e-5);
			sc_cpu_norm_grad(c, dy, x, gam, g, gg, with_beta ? bb : NULL, d, 3, ln[k].bna, ln[k].bpa, 1e-5);
			twin(what, dg, g, n, 1e-3);
			twin(what, dgg, gg, np, 1e-3);
			if (with_beta)
				twin(what, dbb, bb, np, 1e-3);
			free(gam), free(bet), free(gg), free(bb);
		}
	/* cross entropy over rows of x viewed as (240, 70) */
	int32_t lab[240];
	int64_t lab64[240];
	for (int i = 0; i < 240; i++)
		lab64[i] = lab[i] = (i * 37) % 75 - 2;   /* a few out of range */
	float *dlab = up(lab, sizeof lab), *dlab64 = up(lab64, sizeof lab64), loss, *dloss = t_slab(4);
	const float dl = 0.7f;
	float *ddl = up(&dl, 4);
	sc_sparse_softmax_ce(rt, dx, dlab, SC_I32, dloss, 240, 70);
	sc_cpu_sparse_softmax_ce(x, lab, SC_I32, &loss, 240, 70);
	twin("sparse_softmax_ce", dloss, &loss, 1, 1e-4);
	sc_sparse_softmax_ce_grad(rt, dx, dlab64, SC_I64, ddl, dg, 240, 70);
	sc_cpu_sparse_softmax_ce_grad(x, lab64, SC_I64, &dl, g, 240, 70);
	twin("sparse_softmax_ce_grad", dg, g, n, 1e-4);
	/* each normalizer of a slice of 70 of the normalized dims, the rows' statistics given
	 * (RmsNorm: no mean, no beta, var the mean square) */
	for (int kind = 0; kind < SC_N_COUNT; kind++) {
		sc_norm_kind nk = (sc_norm_kind)kind;
		int c = sc_norm_centered(nk);
		float rmean[240], rvar[240], *gam, *dgam, *bet, *dbet, *dm, *dv;
		for (int i = 0; i < 240; i++)
			rmean[i] = 0.01f * (float)(i % 9), rvar[i] = 0.5f + 0.01f * (float)(i % 13);
		gam = rnd(70, 0.5f, 1.5f, &dgam), bet = rnd(70, -1, 1, &dbet);
		float *drmean = up(rmean, sizeof rmean), *drvar = up(rvar, sizeof rvar);
		float *dgg = t_slab(70 * 4), *dbb = t_slab(70 * 4), gg[70], bb[70], mm[240], vv[240];
		dm = t_slab(240 * 4), dv = t_slab(240 * 4);
		char what[5][64];
		static const char *const part[5] = {"", " dx", " dgamma", " dbeta", " dvar"};
		for (int i = 0; i < 5; i++)
			snprintf(what[i], sizeof what[i], "%s_part%s%s", c ? "LayerNorm" : "RmsNorm", i ? "_grad" : "", part[i]);
		sc_norm_part(rt, nk, dx, dgam, c ? dbet : NULL, c ? drmean : NULL, drvar, dyv, 240, 70, 1e-5);
		sc_cpu_norm_part(c, x, gam, c ? bet : NULL, c ? rmean : NULL, rvar, y, 240, 70, 1e-5);
		twin(what[0], dyv, y, n, 1e-4);
		sc_norm_part_grad(rt, nk, ddy, dx, dgam, c ? drmean : NULL, drvar, dg, dgg, c ? dbb : NULL, c ? dm : NULL, dv,
		                  240, 70, 1e-5);
		sc_cpu_norm_part_grad(c, dy, x, gam, c ? rmean : NULL, rvar, g, gg, c ? bb : NULL, c ? mm : NULL, vv, 240, 70,
		                      1e-5);
		twin(what[1], dg, g, n, 1e-4);
		twin(what[2], dgg, gg, 70, 1e-3);
		if (c) {
			twin(what[3], dbb, bb, 70, 1e-3);
			twin("LayerNorm_part_grad dmean", dm, mm, 240, 1e-3);
		}
		twin(what[4], dv, vv, 240, 1e-3);
		free(gam), free(bet);
	}
	/* the same rows as classes [35, 105) of 140: a class slice's pieces, given the rows' statistics */
	float rmax[240], rsum[240], rows[240], drows[240];
	for (int i = 0; i < 240; i++) {
		rmax[i] = x[i * 70];
		for (int j = 1; j < 70; j++)
			rmax[i] = fmaxf(rmax[i], x[i * 70 + j]);
		rsum[i] = 1.5f;   /* the other slices' share */
		for (int j = 0; j < 70; j++)
			rsum[i] += expf(x[i * 70 + j] - rmax[i]);
		drows[i] = 0.01f * (float)(i % 7);
	}
	float *drmax = up(rmax, sizeof rmax), *drsum = up(rsum, sizeof rsum), *ddrows = up(drows, sizeof drows);
	float *drowsout = t_slab(sizeof rows);
	sc_sparse_softmax_ce_part(rt, dx, dlab, SC_I32, drmax, drsum, drowsout, 240, 70, 35);
	sc_cpu_sparse_softmax_ce_part(x, lab, SC_I32, rmax, rsum, rows, 240, 70, 35);
	twin("sparse_softmax_ce_part", drowsout, rows, 240, 1e-4);
	sc_sparse_softmax_ce_part_grad(rt, dx, dlab64, SC_I64, drmax, drsum, ddrows, dg, 240, 70, 35, 140);
	sc_cpu_sparse_softmax_ce_part_grad(x, lab64, SC_I64, rmax, rsum, drows, g, 240, 70, 35, 140);
	twin("sparse_softmax_ce_part_grad", dg, g, n, 1e-4);
	/* the dense labels' cross-entropy over the same rows: probabilities (every 5th row one-hot), each
	 * row's loss and gradient (rows' dloss, and NULL for 1); the slice's pieces with the statistics above */
	float *prob = malloc(n * 4), *dprob, *pl = malloc(240 * 4), *dpl = t_slab(240 * 4);
	for (int i = 0; i < 240; i++) {
		double t = 0;
		for (int j = 0; j < 70; j++)
			t += prob[i * 70 + j] = i % 5 ? 0.1f + (float)((i * 7 + j * 13) % 17) : j == i % 70;
		for (int j = 0; j < 70; j++)
			prob[i * 70 + j] = (float)(prob[i * 70 + j] / t);
	}
	dprob = up(prob, n * 4);
	sc_softmax_ce(rt, dx, dprob, dpl, 240, 70);
	sc_cpu_softmax_ce(x, prob, pl, 240, 70);
	twin("softmax_ce", dpl, pl, 240, 1e-4);
	sc_softmax_ce_grad(rt, dx, dprob, ddrows, dg, 240, 70);
	sc_cpu_softmax_ce_grad(x, prob, drows, g, 240, 70);
	twin("softmax_ce_grad", dg, g, n, 1e-4);
	sc_softmax_ce_grad(rt, dx, dprob, NULL, dg, 240, 70);
	sc_cpu_softmax_ce_grad(x, prob, NULL, g, 240, 70);
	twin("softmax_ce_grad dloss NULL", dg, g, n, 1e-4);
	sc_softmax_ce_part(rt, dx, dprob, drmax, drsum, dpl, 240, 70);
	sc_cpu_softmax_ce_part(x, prob, rmax, rsum, pl, 240, 70);
	twin("softmax_ce_part", dpl, pl, 240, 1e-4);
	sc_softmax_ce_part_grad(rt, dx, dprob, drmax, drsum, ddrows, dg, 240, 70);
	sc_cpu_softmax_ce_part_grad(x, prob, rmax, rsum, drows, g, 240, 70);
	twin("softmax_ce_part_grad", dg, g, n, 1e-4);
	free(prob), free(pl);
	for (int l1 = 0; l1 < 2; l1++) {
		(l1 ? sc_l1_loss : sc_mse_loss)(rt, dx, ddy, dloss, n);
		(l1 ? sc_cpu_l1_loss : sc_cpu_mse_loss)(x, dy, &loss, n);
		twin(l1 ? "l1_loss" : "mse_loss", dloss, &loss, 1, 1e-4);
		(l1 ? sc_l1_loss_grad : sc_mse_loss_grad)(rt, dx, ddy, ddl, dg, n);
		(l1 ? sc_cpu_l1_loss_grad : sc_cpu_mse_loss_grad)(x, dy, &dl, g, n);
		twin(l1 ? "l1_loss_grad" : "mse_loss_grad", dg, g, n, 1e-5);
	}
	sc_l2_loss(rt, dx, dloss, n);
	sc_cpu_l2_loss(x, &loss, n);
	twin("l2_loss", dloss, &loss, 1, 1e-4);
	sc_l2_loss_grad(rt, dx, ddl, dg, n);
	sc_cpu_l2_loss_grad(x, &dl, g, n);
	twin("l2_loss_grad", dg, g, n, 1e-5);
	for (int red = 0; red < 2; red++) {   /* KLDivLoss: x the logits, dy the labels (its negatives NaN: 0) */
		double scale = red ? 1.0 / (double)n : 1.0;
		sc_kldiv_loss(rt, dx, ddy, red ? dloss : dg, n, red, scale);
		sc_cpu_kldiv_loss(x, dy, red ? &loss : g, n, red, scale);
		twin(red ? "kldiv_loss mean" : "kldiv_loss none", red ? dloss : dg, red ? &loss : g, red ? 1 : n, 1e-4);
		sc_kldiv_loss_grad(rt, ddy, red ? ddl : dx, dg, n, red, 0.25);
		sc_cpu_kldiv_loss_grad(dy, red ? &dl : x, g, n, red, 0.25);
		twin(red ? "kldiv_loss_grad mean" : "kldiv_loss_grad none", dg, g, n, 1e-5);
	}
	free(x), free(dy), free(y), free(g), free(r);
}

/* Lerp: start (4, 5, 6), end (5, 1) and a weight (4, 1, 6) broadcast to
 * y, then a number as the weight; each operand's gradient summed down */
static void test_lerp(void)
{
	const int64_t sd[3] = {4, 5, 6}, ed[2] = {5, 1}, wd[3] = {4, 1, 6}, yd[3] = {4, 5, 6};
	const int n = 120, sizes[3] = {120, 5, 24};
	float *ds, *de, *dw, *dn, *ddy, *s = rnd(n, -2, 2, &ds), *e = rnd(5, -1, 1, &de), *w = rnd(24, 0, 1, &dw);
	float *num = rnd(1, 0, 1, &dn), *dy = rnd(n, -1, 1, &ddy), *y = malloc(n * sizeof *y), *g = malloc(n * sizeof *g);
	float *dyv = t_slab(n * sizeof *y), *dg = t_slab(n * sizeof *g);
	sc_lerp(rt, ds, sd, 3, de, ed, 2, dw, wd, 3, dyv, yd, 3);
	sc_cpu_lerp(s, sd, 3, e, ed, 2, w, wd, 3, y, yd, 3);
	twin("lerp", dyv, y, n, 1e-5);
	sc_lerp(rt, ds, sd, 3, de, ed, 2, dn, NULL, 0, dyv, yd, 3);
	sc_cpu_lerp(s, sd, 3, e, ed, 2, num, NULL, 0, y, yd, 3);
	twin("lerp, a number as the weight", dyv, y, n, 1e-5);
	for (int k = 0; k < 3; k++) {
		char what[64];
		snprintf(what, sizeof what, "lerp_grad %d", k);
		sc_lerp_grad(rt, k, ds, sd, 3, de, ed, 2, dw, wd, 3, ddy, yd, 3, dg);
		sc_cpu_lerp_grad(k, s, sd, 3, e, ed, 2, w, wd, 3, dy, yd, 3, g);
		twin(what, dg, g, sizes[k], 1e-4);
	}
	free(s), free(e), free(w), free(num), free(dy), free(y), free(g);
}

/* MaskedFill: x (4, 1, 6) and a mask (5, 1) broadcast to (4, 5, 6), the
 * value one element; x's gradient summed down, value's summed whole */
static void test_masked_fill(void)
{
	const int64_t xd[3] = {4, 1, 6}, md[2] = {5, 1}, yd[3] = {4, 5, 6};
	const int n = 120;
	const uint8_t m[5] = {1, 0, 0, 1, 0};
	float *dx, *dv, *ddy, *x = rnd(24, -2, 2, &dx), *v = rnd(1, -1, 1, &dv), *dy = rnd(n, -1, 1, &ddy);
	float *y = malloc(n * sizeof *y), *g = malloc(24 * sizeof *g), *dyv = t_slab(n * sizeof *y), *dg = t_slab(24 * 4);
	const uint8_t *dm = up(m, sizeof m);
	sc_masked_fill(rt, dx, xd, 3, dm, md, 2, dv, dyv, yd, 3);
	sc_cpu_masked_fill(x, xd, 3, m, md, 2, v, y, yd, 3);
	twin("masked_fill", dyv, y, n, 0);
	for (int k = 0; k <= 2; k += 2) {
		char what[64];
		snprintf(what, sizeof what, "masked_fill_grad %d", k);
		sc_masked_fill_grad(rt, k, xd, 3, dm, md, 2, ddy, yd, 3, dg);
		sc_cpu_masked_fill_grad(k, xd, 3, m, md, 2, dy, yd, 3, g);
		twin(what, dg, g, k == 0 ? 24 : 1, 1e-4);
	}
	free(x), free(v), free(dy), free(y), free(g);
}

/* the resizes: 3 planes of (5, 4) up to (7, 6) and down to (3, 2), each
 * mode; forward bit for bit (no fused multiply-adds), gradients (atomicAdd
 * in any order) within a tolerance */
static void test_resize(void)
{
	const int64_t nc = 3, ih = 5, iw = 4;
	float *dx, *ddy, *x = rnd(nc * ih * iw, -2, 2, &dx), *dy = rnd(nc * 7 * 6, -1, 1, &ddy);
	float *y = malloc(nc * 7 * 6 * sizeof *y), *g = malloc(nc * ih * iw * sizeof *g);
	float *dyv = t_slab(nc * 7 * 6 * sizeof *y), *dg = t_slab(nc * ih * iw * sizeof *g);
	for (int k = 0; k < 12; k++) {
		int bilinear = k / 6, align = k % 3 == 1, half = k % 3 == 2;
		int64_t oh = k % 2 ? 3 : 7, ow = k % 2 ? 2 : 6;
		char what[96];
		snprintf(what, sizeof what, "resize %s align %d half %d to (%lld, %lld)", bilinear ? "bilinear" : "nearest",
		         align, half, (long long)oh, (long long)ow);
		sc_resize(rt, bilinear, dx, dyv, nc, ih, iw, oh, ow, align, half);
		sc_cpu_resize(bilinear, x, y, nc, ih, iw, oh, ow, align, half);
		twin(what, dyv, y, nc * oh * ow, 0);
		sc_resize_grad(rt, bilinear, ddy, dg, nc, ih, iw, oh, ow, align, half);
		sc_cpu_resize_grad(bilinear, dy, g, nc, ih, iw, oh, ow, align, half);
		twin(what, dg, g, nc * ih * iw, 1e-5);
	}
	free(x), free(dy), free(y), free(g);
}

/* The integer operators on (4, 5, 6) against a (5, 1) row of counts
 * (negative and past the width among them), Int32 and Int64: the same bytes;
 * ReverseV2 along dims 0 and 2; TraceV2 of dims 2 and 0 with offset 1, and
 * its gradient. */
static void test_int_math(void)
{
	const int64_t xd[3] = {4, 5, 6}, sd[2] = {5, 1};
	const int n = 120;
	int64_t k64[120], s64[5] = {1, -3, 31, 64, 70}, y64[120];
	int32_t k32[120], s32[5] = {1, -3, 31, 32, 40}, y32[120];
	for (int i = 0; i < n; i++) {
		k64[i] = (int64_t)(i * 2654435761u) - ((int64_t)1 << 31);
		k32[i] = (int32_t)k64[i];
	}
	void *dk32 = up(k32, sizeof k32), *ds32 = up(s32, sizeof s32), *dk64 = up(k64, sizeof k64);
	void *ds64 = up(s64, sizeof s64), *dy = t_slab(sizeof y64);
	for (sc_intop op = SC_INT_INVERT; op <= SC_INT_RIGHT_SHIFT; op++) {
		char what[64];
		int binary = op >= SC_INT_LEFT_SHIFT;
		snprintf(what, sizeof what, "int_math %d, Int32", op);
		sc_int_math(rt, op, SC_I32, dk32, xd, 3, binary ? ds32 : NULL, sd, binary ? 2 : 0, dy, xd, 3);
		sc_cpu_int_math(op, SC_I32, k32, xd, 3, binary ? s32 : NULL, sd, binary ? 2 : 0, y32, xd, 3);
		twin_bytes(what, dy, y32, sizeof y32);
		snprintf(what, sizeof what, "int_math %d, Int64", op);
		sc_int_math(rt, op, SC_I64, dk64, xd, 3, binary ? ds64 : NULL, sd, binary ? 2 : 0, dy, xd, 3);
		sc_cpu_int_math(op, SC_I64, k64, xd, 3, binary ? s64 : NULL, sd, binary ? 2 : 0, y64, xd, 3);
		twin_bytes(what, dy, y64, sizeof y64);
	}
	float *dx, *x = rnd(n, -2, 2, &dx), *y = malloc(n * sizeof *y), *dyv = t_slab(n * sizeof *y);
	sc_reverse(rt, dx, dyv, xd, 3, 5u);
	sc_cpu_reverse(x, y, xd, 3, 5u);
	twin("reverse", dyv, y, n, 0);
	sc_trace(rt, dx, dyv, xd, 3, 2, 0, 1);
	sc_cpu_trace(x, y, xd, 3, 2, 0, 1);
	twin("trace", dyv, y, 5, 0);
	sc_trace_grad(rt, dx, dyv, xd, 3, 2, 0, 1);   /* dy: x's first 5 */
	sc_cpu_trace_grad(x, y, xd, 3, 2, 0, 1);
	twin("trace_grad", dyv, y, n, 0);
	free(x), free(y);
}

static void test_movement(void)
{
	const int64_t d[3] = {5, 6, 7};
	const int n = 210;
	float *dx, *x = rnd(n, -1, 1, &dx), *y = malloc(n * 4), *dyv = t_slab(n * 4);
	const int perms[][3] = {{0, 1, 2}, {2, 0, 1}, {1, 2, 0}, {2, 1, 0}};
	for (int k = 0; k < 4; k++) {
		sc_transpose(rt, SC_F32, dx, dyv, d, 3, perms[k]);
		sc_cpu_transpose(SC_F32, x, y, d, 3, perms[k]);
		twin("transpose", dyv, y, n, 0);
	}
	int64_t l[210], lt[210];
	for (int i = 0; i < n; i++)
		l[i] = (int64_t)i * 1000003;
	void *dl = up(l, sizeof l), *dlt = t_slab(sizeof l);
	sc_transpose(rt, SC_I64, dl, dlt, d, 3, perms[2]);
	sc_cpu_transpose(SC_I64, l, lt, d, 3, perms[2]);
	twin_bytes("transpose int64", dlt, lt, sizeof lt);
	const int64_t b[3] = {1, -5, 0}, e[3] = {5, 6, -1}, s[3] = {2, 3, 2};
	sc_strided_slice(rt, SC_F32, dx, dyv, d, 3, b, e, s);
	sc_cpu_strided_slice(SC_F32, x, y, d, 3, b, e, s);
	twin("strided_slice", dyv, y, 2 * 2 * 3, 0);
	float *g = malloc(n * 4), *dg = t_slab(n * 4);
	sc_strided_slice_grad(rt, dx, dg, d, 3, b, e, s);
	sc_cpu_strided_slice_grad(x, g, d, 3, b, e, s);
	twin("strided_slice_grad", dg, g, n, 0);
	const void *xs[2] = {dx, dx + 5 * 6 * 3};
	const void *hs[2] = {x, x + 5 * 6 * 3};
	const int64_t sizes[2] = {3, 4}, od[3] = {5, 6, 7};
	sc_concat(rt, SC_F32, xs, sizes, 2, dyv, od, 3, 2);
	sc_cpu_concat(SC_F32, hs, sizes, 2, y, od, 3, 2);
	twin("concat", dyv, y, n, 0);
	int32_t idx[9] = {3, 7, 4, 4, 12, 5, 6, 3, -1};
	void *didx = up(idx, sizeof idx);
	sc_gather(rt, dx, 10, 21, didx, SC_I32, 9, 3, dyv);   /* rows 3..12 of a table */
	sc_cpu_gather(x, 10, 21, idx, SC_I32, 9, 3, y);
	twin("gather", dyv, y, 9 * 21, 0);
	sc_gather_grad(rt, dx, didx, SC_I32, 9, 3, dg, 10, 21);
	sc_cpu_gather_grad(x, idx, SC_I32, 9, 3, g, 10, 21);
	twin("gather_grad", dg, g, 210, 1e-5);
	sc_gather_axis(rt, dx, 3, 10, 7, didx, SC_I32, 9, 3, dyv);   /* a (3, 10, 7) table along its axis 1 */
	sc_cpu_gather_axis(x, 3, 10, 7, idx, SC_I32, 9, 3, y);
	twin("gather_axis", dyv, y, 3 * 9 * 7, 0);
	sc_gather_axis_grad(rt, dx, didx, SC_I32, 9, 3, dg, 3, 10, 7);
	sc_cpu_gather_axis_grad(x, idx, SC_I32, 9, 3, g, 3, 10, 7);
	twin("gather_axis_grad", dg, g, 210, 1e-5);
	for (int64_t limit = 13; limit >= 9; limit -= 4) {   /* EmbeddingLookup: rows 3..12, ids from 13 (9) on outside */
		sc_embedding_lookup(rt, dx, 10, 21, didx, SC_I32, 9, 3, limit, dyv);
		sc_cpu_embedding_lookup(x, 10, 21, idx, SC_I32, 9, 3, limit, y);
		twin("embedding_lookup", dyv, y, 9 * 21, 0);
		sc_embedding_lookup_grad(rt, dx, didx, SC_I32, 9, 3, limit, dg, 10, 21);
		sc_cpu_embedding_lookup_grad(x, idx, SC_I32, 9, 3, limit, g, 10, 21);
		twin("embedding_lookup_grad", dg, g, 210, 1e-5);
	}
	int32_t gi[5 * 4 * 7];   /* GatherD of x (5, 6, 7) along dim 1: indices -1..6, two of them outside */
	for (int i = 0; i < 5 * 4 * 7; i++)
		gi[i] = (i * 7 + 3) % 8 - 1;
	void *dgi = up(gi, sizeof gi);
	const int64_t gxd[3] = {5, 6, 7}, gid[3] = {5, 4, 7};
	for (int64_t off = 0; off < 3; off += 2) {   /* x whole, then x the slice [2, 8) of its dim 1 */
		sc_gather_d(rt, dx, gxd, dgi, SC_I32, gid, 3, 1, off, dyv);
		sc_cpu_gather_d(x, gxd, gi, SC_I32, gid, 3, 1, off, y);
		twin("gather_d", dyv, y, 5 * 4 * 7, 0);
		sc_gather_d_grad(rt, dx, dgi, SC_I32, gid, dg, gxd, 3, 1, off);
		sc_cpu_gather_d_grad(x, gi, SC_I32, gid, g, gxd, 3, 1, off);
		twin("gather_d_grad", dg, g, 210, 1e-5);
	}
	/* GatherNd of x (5, 6, 7) at 9 (row, col) indices (two repeats), its gradient; the tensor scatters of
	 * (9, 7) updates into it, whole and as the piece [2, 5) x [3, 6) of a (5, 6) split x, and their gradients
	 * (Update, Add, Sub, Mul, Div, Max, Min; the repeated indices apply in turn, Max's and Min's tie) */
	int32_t ndi[9 * 2] = {4, 5, 0, 0, 2, 3, 4, 5, 1, 2, 3, 1, 0, 0, 2, 4, 4, 5};
	void *dndi = up(ndi, sizeof ndi);
	const int64_t ndd[2] = {5, 6}, nds[2] = {2, 3}, ndl[2] = {3, 3};
	sc_gather_nd(rt, dx, ndd, 2, 7, dndi, SC_I32, 9, dyv, "twins GatherNd");
	sc_cpu_gather_nd(x, ndd, 2, 7, ndi, SC_I32, 9, y);
	twin("gather_nd", dyv, y, 9 * 7, 0);
	sc_gather_nd_grad(rt, dx, dndi, SC_I32, 9, dg, ndd, 2, 7);
	sc_cpu_gather_nd_grad(x, ndi, SC_I32, 9, g, ndd, 2, 7);
	twin("gather_nd_grad", dg, g, 210, 0);   /* in order on both: the same sums */
	float *ddy, *dy = rnd(n, -2, 2, &ddy);   /* the scatters' x and their gradients' dy */
	for (int op = SC_SCATTER_UPDATE; op <= SC_SCATTER_MIN; op++)
		for (int piece = 0; piece < 2; piece++) {
			const int64_t *st = piece ? nds : NULL, *ld = piece ? ndl : ndd;
			int64_t nx = ld[0] * ld[1] * 7;
			sc_tensor_scatter(rt, (sc_scatter_op)op, ddy, dndi, SC_I32, 9, dx, dyv, ndd, st, ld, 2, 7, "twins");
			sc_cpu_tensor_scatter((sc_scatter_op)op, dy, ndi, SC_I32, 9, x, y, st, ld, 2, 7);
			twin("tensor_scatter", dyv, y, nx, 0);
			for (int k = 0; k < 3; k += 2) {
				/* dy the forward's x: Mul's, Div's, Max's and Min's gradients read x, upd and y */
				sc_tensor_scatter_grad(rt, (sc_scatter_op)op, k, ddy, ddy, dx, dyv, dndi, SC_I32, 9, dg, st, ld, 2, 7);
				sc_cpu_tensor_scatter_grad((sc_scatter_op)op, k, dy, dy, x, y, ndi, SC_I32, 9, g, st, ld, 2, 7);
				twin("tensor_scatter_grad", dg, g, k ? 9 * 7 : nx, 0);
			}
		}
	free(dy);
	{   /* Max's and Min's ties: x (4,) and two updates equal at element 0 share dy there */
		const float tx[4] = {1, 2, 3, 4}, tu[4] = {1, 5, 1, 0}, tdy[4] = {1, 10, 100, 1000};
		const int32_t ti[4] = {0, 2, 0, 3};
		const int64_t td[1] = {4};
		float *dtx = up(tx, sizeof tx), *dtu = up(tu, sizeof tu), *dtdy = up(tdy, sizeof tdy);
		void *dti = up(ti, sizeof ti);
		float ty[4], tg[4], *dty = t_slab(16), *dtg = t_slab(16);
		for (int op = SC_SCATTER_MAX; op <= SC_SCATTER_MIN; op++) {
			sc_tensor_scatter(rt, (sc_scatter_op)op, dtx, dti, SC_I32, 4, dtu, dty, td, NULL, td, 1, 1, "twins ties");
			sc_cpu_tensor_scatter((sc_scatter_op)op, tx, ti, SC_I32, 4, tu, ty, NULL, td, 1, 1);
			twin("tensor_scatter ties", dty, ty, 4, 0);
			for (int k = 0; k < 3; k += 2) {
				sc_tensor_scatter_grad(rt, (sc_scatter_op)op, k, dtdy, dtx, dtu, dty, dti, SC_I32, 4, dtg, NULL, td, 1, 1);
				sc_cpu_tensor_scatter_grad((sc_scatter_op)op, k, tdy, tx, tu, ty, ti, SC_I32, 4, tg, NULL, td, 1, 1);
				twin("tensor_scatter_grad ties", dtg, tg, 4, 0);
			}
		}
	}
	/* the unsorted segment reductions of x (30 rows of 7: quarters in [-1, 1], ties and zeros) into 6
	 * segments, ids 0..5 and the dropped -1 and 9, their statistics and gradients, whole and given the
	 * statistics */
	float sx[210], sst[2][6 * 7], *dsst = t_slab(2 * 6 * 7 * 4);
	int32_t sid[30];
	for (int i = 0; i < 210; i++)
		sx[i] = (float)((i * 13) % 9 - 4) * 0.25f;
	for (int i = 0; i < 30; i++)
		sid[i] = i % 7 == 6 ? -1 : i % 5 == 4 ? 9 : i % 6;
	float *dsx = up(sx, sizeof sx);
	void *dsid = up(sid, sizeof sid);
	const char *const seg_names[4] = {"segment_sum", "segment_max", "segment_min", "segment_prod"};
	for (int op = SC_SEG_SUM; op <= SC_SEG_PROD; op++) {
		sc_unsorted_segment(rt, (sc_segment_op)op, dsx, dsid, SC_I32, dyv, 30, 7, 6, SC_BF16);
		sc_cpu_unsorted_segment((sc_segment_op)op, sx, sid, SC_I32, y, 30, 7, 6, SC_BF16);
		twin(seg_names[op], dyv, y, 42, 1e-6);
		for (int k = 0; op != SC_SEG_SUM && k < 1 + (op == SC_SEG_PROD); k++) {
			sc_unsorted_segment_stat(rt, (sc_segment_op)op, dsx, dsid, SC_I32, dyv, k, dsst + k * 42, 30, 7, 6);
			sc_cpu_unsorted_segment_stat((sc_segment_op)op, sx, sid, SC_I32, y, k, sst[k], 30, 7, 6);
			twin("segment_stat", dsst + k * 42, sst[k], 42, 0);
		}
		for (int given = 0; given < 2; given++) {   /* dy: x's first 42 */
			const float *s0 = given && op != SC_SEG_SUM ? dsst : NULL, *s1 = given && op == SC_SEG_PROD ? dsst + 42 : NULL;
			sc_unsorted_segment_grad(rt, (sc_segment_op)op, dsx, dsid, SC_I32, dyv, dx, s0, s1, dg, 30, 7, 6);
			sc_cpu_unsorted_segment_grad((sc_segment_op)op, sx, sid, SC_I32, y, x, s0 ? sst[0] : NULL,
			                             s1 ? sst[1] : NULL, g, 30, 7, 6);
			twin("segment_grad", dg, g, 210, 1e-6);
		}
	}
	float ss[5 * 7], dss[5 * 7];   /* L2Normalize of x (5, 6, 7) along dim 1: whole, then a piece given sums */
	for (int i = 0; i < 5 * 7; i++)
		ss[i] = 0.5f + (float)(i % 4);
	ss[3] = 1e-5f;   /* below epsilon: the norm constant */
	float *dssum = up(ss, sizeof ss), *dds = t_slab(sizeof ss);
	for (int piece = 0; piece < 2; piece++) {
		const float *sd = piece ? dssum : NULL, *sh = piece ? ss : NULL;
		sc_l2_normalize(rt, dx, sd, dyv, 5, 6, 7, 1e-4);
		sc_cpu_l2_normalize(x, sh, y, 5, 6, 7, 1e-4);
		twin(piece ? "l2_normalize piece" : "l2_normalize", dyv, y, n, 1e-5);
		sc_l2_normalize_grad(rt, dx, sd, dx, dg, piece ? dds : NULL, 5, 6, 7, 1e-4);
		sc_cpu_l2_normalize_grad(x, sh, x, g, piece ? dss : NULL, 5, 6, 7, 1e-4);
		twin(piece ? "l2_normalize_grad piece" : "l2_normalize_grad", dg, g, n, 1e-5);
		if (piece)
			twin("l2_normalize_grad sums", dds, dss, 5 * 7, 1e-5);
	}
	float bn[6][6], dbn[3][6], hbn[3][6];   /* BatchNorm of x (5, 6, 7): scale, bias, moving mean, var, batch's */
	for (int k = 0; k < 6; k++)
		for (int ch = 0; ch < 6; ch++)
			bn[k][ch] = k == 3 || k == 5 ? 0.5f + 0.25f * (float)ch : 0.1f * (float)(ch + k) - 0.2f;
	float *dbnp = up(bn, sizeof bn), *dgb = t_slab(sizeof dbn);
	for (int mode = 0; mode < 3; mode++) {   /* inference; training whole; training a piece given the batch's */
		const float *bm = mode == 2 ? dbnp + 24 : NULL, *hm = mode == 2 ? bn[4] : NULL;
		sc_batch_norm(rt, dx, dbnp, dbnp + 6, dbnp + 12, dbnp + 18, bm, bm ? bm + 6 : NULL, dyv, 5, 6, 7, 1e-5, 0.1, 35,
		              mode ? SC_BN_TRAIN : SC_BN_INFER);
		sc_cpu_batch_norm(x, bn[0], bn[1], bn[2], bn[3], hm, hm ? hm + 6 : NULL, y, 5, 6, 7, 1e-5, 0.1, 35,
		                  mode ? SC_BN_TRAIN : SC_BN_INFER);
		twin("batch_norm", dyv, y, n, 1e-5);
		twin("batch_norm moving statistics", dbnp + 12, bn[2], 12, 1e-6);
		const float *gm = mode == 1 ? NULL : mode ? bm : dbnp + 12, *hgm = mode == 1 ? NULL : mode ? hm : bn[2];
		sc_batch_norm_grad(rt, dx, dx, dbnp, gm, gm ? gm + 6 : NULL, dg, dgb, dgb + 6, mode == 2 ? dgb + 12 : NULL,
		                   NULL, 5, 6, 7, 1e-5);
		sc_cpu_batch_norm_grad(x, x, bn[0], hgm, hgm ? hgm + 6 : NULL, g, hbn[0], hbn[1], mode == 2 ? hbn[2] : NULL,
		                       NULL, 5, 6, 7, 1e-5);
		twin("batch_norm_grad", dg, g, n, 1e-5);
		twin("batch_norm_grad scale, bias", dgb, hbn[0], mode == 2 ? 18 : 12, 1e-5);
	}
	const float onoff[2] = {0.9f, -0.1f};
	float *don = up(onoff, sizeof onoff);
	sc_one_hot(rt, didx, SC_I32, 3, 5, 3, 3, don, don + 1, dyv);   /* classes 3..7; 12 and -1 outside */
	sc_cpu_one_hot(idx, SC_I32, 3, 5, 3, 3, onoff[0], onoff[1], y);
	twin("one_hot", dyv, y, 45, 0);
	/* picking along an axis: x (5, 6, 7) along dim 1, its values, indices
	 * and gradient; TopK's k 4 of rows of 7 */
	int32_t pi[35], *dpi = t_slab(sizeof pi);
	for (int is_min = 0; is_min < 2; is_min++) {
		sc_arg_reduce(rt, dx, 5, 6, 7, is_min, dpi, dyv);
		sc_cpu_arg_reduce(x, 5, 6, 7, is_min, pi, y);
		twin(is_min ? "arg_min values" : "arg_max values", dyv, y, 35, 0);
		twin_bytes(is_min ? "arg_min indices" : "arg_max indices", dpi, pi, sizeof pi);
		sc_arg_reduce_grad(rt, dx, dx, 5, 6, 7, is_min, dg);
		sc_cpu_arg_reduce_grad(x, x, 5, 6, 7, is_min, g);
		twin(is_min ? "arg_min_grad" : "arg_max_grad", dg, g, n, 0);
	}
	int32_t ti[120], *dti = t_slab(sizeof ti);
	sc_topk(rt, dx, 30, 7, 4, dyv, dti);
	sc_cpu_topk(x, 30, 7, 4, y, ti);
	twin("topk values", dyv, y, 120, 0);
	twin_bytes("topk indices", dti, ti, sizeof ti);
	sc_topk_grad(rt, dx, dx, 30, 7, 4, dg);
	sc_cpu_topk_grad(x, x, 30, 7, 4, g);
	twin("topk_grad", dg, g, n, 0);
	/* casts between every pair of the six dtypes, bit for bit: values that
	 * round to even in float16 (65520, 2049) and bfloat16 (1 + 2^-8, 257),
	 * overflow, subnormals, NaN of both signs, -0, and integers too large */
	enum { NC = 16 };
	const float src[NC] = {-1.7f, 2.9f, 0, 3e9f, -0.2f, NAN, -NAN, INFINITY, 65520, 1.0f / 3, 6e-8f, -0.0f,
	                       1 + 0x1p-8f, 2049, 257, 1e-40f};
	void *dout = t_slab(NC * 8);
	for (sc_dtype from = SC_F32; from <= SC_BF16; from++) {
		char hin[NC * 8], hout[NC * 8];
		sc_cpu_cast(src, SC_F32, hin, from, NC);
		void *din = up(hin, sizeof hin);
		for (sc_dtype to = SC_F32; to <= SC_BF16; to++) {
			char what[64];
			sc_cast(rt, din, from, dout, to, NC);
			sc_cpu_cast(hin, from, hout, to, NC);
			snprintf(what, sizeof what, "cast %s to %s", dtname(from), dtname(to));
			twin_bytes(what, dout, hout, NC * dtsize(to));
		}
	}
	const double fills[3] = {7, 0.1, 1e6};
	for (sc_dtype dt = SC_F32; dt <= SC_BF16; dt++)
		for (int k = 0; k < 3; k++) {
			char want[3 * 8], what[64];
			sc_cpu_fill(want, dt, 3, fills[k]);
			sc_fill(rt, dout, dt, 3, fills[k]);
			snprintf(what, sizeof what, "fill %s %g", dtname(dt), fills[k]);
			twin_bytes(what, dout, want, 3 * dtsize(dt));
		}
	/* 2-byte elements through transpose, strided slice and concat */
	uint16_t h[210], ht[210];
	for (int i = 0; i < n; i++)
		h[i] = (uint16_t)(0x3c00 + 97 * i);
	void *dh = up(h, sizeof h), *dht = t_slab(sizeof h);
	for (int k = 0; k < 4; k++) {
		sc_transpose(rt, SC_F16, dh, dht, d, 3, perms[k]);
		sc_cpu_transpose(SC_F16, h, ht, d, 3, perms[k]);
		twin_bytes("transpose float16", dht, ht, sizeof ht);
	}
	sc_strided_slice(rt, SC_BF16, dh, dht, d, 3, b, e, s);
	sc_cpu_strided_slice(SC_BF16, h, ht, d, 3, b, e, s);
	twin_bytes("strided_slice bfloat16", dht, ht, 2 * 2 * 3 * 2);
	const void *hxs[2] = {dh, (uint16_t *)dh + 5 * 6 * 3};
	const void *hhs[2] = {h, h + 5 * 6 * 3};
	sc_concat(rt, SC_F16, hxs, sizes, 2, dht, od, 3, 2);
	sc_cpu_concat(SC_F16, hhs, sizes, 2, ht, od, 3, 2);
	twin_bytes("concat float16", dht, ht, sizeof ht);
	/* slices past x's end (an uneven split's last pieces): zeros there,
	 * bit for bit, on outputs filled with 7 first so a zero not written shows */
	static const struct {
		int64_t b[3], e[3], s[3];
		const char *what;
	} past[] = {
		{{3, 0, 0}, {6, 6, 7}, {1, 1, 1}, "dim 0 [3, 6) of 5"},
		{{0, 4, 0}, {5, 8, 7}, {1, 1, 1}, "middle dim [4, 8) of 6"},
		{{0, 6, 0}, {5, 8, 7}, {1, 1, 1}, "wholly past: middle dim [6, 8) of 6"},
		{{1, 2, 0}, {9, 8, 7}, {3, 2, 1}, "strided, past along dims 0 and 1"},
	};
	for (size_t k = 0; k < sizeof past / sizeof *past; k++) {
		int64_t m = 1;
		for (int i = 0; i < 3; i++)
			m *= (past[k].e[i] - past[k].b[i] + past[k].s[i] - 1) / past[k].s[i];
		if (m > n) {   /* y, dy and the device outputs hold n */
			fprintf(stderr, "cuda_twins: %s: %lld elements, the buffers hold %d\n", past[k].what,
			        (long long)m, n);
			exit(2);
		}
		char what[96];
		sc_fill(rt, dyv, SC_F32, n, 7);
		sc_cpu_fill(y, SC_F32, n, 7);
		sc_strided_slice(rt, SC_F32, dx, dyv, d, 3, past[k].b, past[k].e, past[k].s);
		sc_cpu_strided_slice(SC_F32, x, y, d, 3, past[k].b, past[k].e, past[k].s);
		snprintf(what, sizeof what, "strided_slice float32 %s", past[k].what);
		twin_bytes(what, dyv, y, (size_t)n * sizeof *y);
		sc_fill(rt, dht, SC_BF16, n, 7);
		sc_cpu_fill(ht, SC_BF16, n, 7);
		sc_strided_slice(rt, SC_BF16, dh, dht, d, 3, past[k].b, past[k].e, past[k].s);
		sc_cpu_strided_slice(SC_BF16, h, ht, d, 3, past[k].b, past[k].e, past[k].s);
		snprintf(what, sizeof what, "strided_slice bfloat16 %s", past[k].what);
		twin_bytes(what, dht, ht, sizeof ht);
		/* dy: the first m of x's random values */
		sc_fill(rt, dg, SC_F32, n, 7);
		sc_strided_slice_grad(rt, dx, dg, d, 3, past[k].b, past[k].e, past[k].s);
		sc_cpu_strided_slice_grad(x, g, d, 3, past[k].b, past[k].e, past[k].s);
		snprintf(what, sizeof what, "strided_slice_grad %s", past[k].what);
		twin_bytes(what, dg, g, (size_t)n * sizeof *g);
	}
	free(x), free(y), free(g);
}

/* The computed constants: a piece of each (leading dims, an offset start),
 * the ranges and masks bit for bit, the RoPE tables within a float32 ulp
 * or two (double pow and cos differ in their last bits between libraries). */
static void test_constants(void)
{
	char want[2 * 5 * 12 * 8], *d = t_slab(3 * 40 * 32 * sizeof(float));   /* the largest: the RoPE tables */
	static const sc_dtype range_dt[3] = {SC_F32, SC_I32, SC_I64};
	for (int k = 0; k < 3; k++) {
		char what[64];
		sc_arange(rt, d, range_dt[k], 100, 37, k ? 10 : 0.5, k ? -3 : 0.1);
		sc_cpu_arange(want, range_dt[k], 100, 37, k ? 10 : 0.5, k ? -3 : 0.1);
		snprintf(what, sizeof what, "arange %s", dtname(range_dt[k]));
		twin_bytes(what, d, want, 100 * dtsize(range_dt[k]));
	}
	{   /* Dropout: a (2, 3, 4) piece from (1, 2, 5) of a (4, 8, 12) whole, bit for bit */
		float *dx, *x = rnd(24, -2, 2, &dx), *y = malloc(24 * sizeof *y);
		const int64_t g[3] = {4, 8, 12}, s0[3] = {1, 2, 5}, l[3] = {2, 3, 4};
		sc_dropout(rt, dx, (float *)d, g, 3, s0, l, "h.drop", 11, 3, 0.6);
		sc_cpu_dropout(x, y, g, 3, s0, l, sc_dropout_key("h.drop", 11, 3), 0.6);
		twin_bytes("dropout", d, y, 24 * sizeof *y);
		free(x), free(y);
	}
	{   /* an uneven shard's piece: (2, 3, 4) from (3, 6, 5) of (4, 8, 12), real (1, 2, 4); padding 0 */
		float *dx, *x = rnd(24, -2, 2, &dx), *y = malloc(24 * sizeof *y);
		const int64_t g[3] = {4, 8, 12}, s0[3] = {3, 6, 5}, l[3] = {2, 3, 4};
		sc_dropout(rt, dx, (float *)d, g, 3, s0, l, "h.drop", 11, 3, 0.6);
		sc_cpu_dropout(x, y, g, 3, s0, l, sc_dropout_key("h.drop", 11, 3), 0.6);
		sc_cpu_fill_pad(y, y, SC_F32, 1, 2, 12, 1, 0.0);
		sc_cpu_fill_pad(y, y, SC_F32, 2, 3, 4, 2, 0.0);
		twin_bytes("dropout, padded piece", d, y, 24 * sizeof *y);
		free(x), free(y);
	}
	{   /* DropoutGenMask: the uneven piece's mask, its padding false; DropoutDoMask of it is the Dropout above */
		float *dx, *x = rnd(24, -2, 2, &dx), *y = malloc(24 * sizeof *y), *wd = malloc(24 * sizeof *wd);
		const int64_t g[3] = {4, 8, 12}, s0[3] = {3, 6, 5}, l[3] = {2, 3, 4}, real[3] = {1, 2, 4};
		uint8_t m[24], *dm = t_slab(24);
		float *dy = t_slab(24 * sizeof *y);
		sc_dropout_gen_mask(rt, dm, g, 3, s0, l, "h.mask", 11, 3, 0.6);
		sc_cpu_dropout_gen_mask(m, g, 3, s0, l, sc_dropout_key("h.mask", 11, 3), 0.6);
		for (int i = 0; i < 24; i++)   /* padding: past real along a dim */
			if (i / 12 >= real[0] || i / 4 % 3 >= real[1])
				m[i] = 0;
		twin_bytes("dropout_gen_mask, padded piece", dm, m, sizeof m);
		sc_dropout_do_mask(rt, dx, dm, dy, 24, 0.6);
		sc_cpu_dropout(x, wd, g, 3, s0, l, sc_dropout_key("h.mask", 11, 3), 0.6);
		sc_cpu_fill_pad(wd, wd, SC_F32, 1, 2, 12, 1, 0.0);
		sc_cpu_fill_pad(wd, wd, SC_F32, 2, 3, 4, 2, 0.0);
		twin_bytes("dropout_do_mask is dropout", dy, wd, 24 * sizeof *y);
		free(x), free(y), free(wd);
	}
	{   /* UniformReal: the uneven piece's draws, bit for bit, its padding 0 */
		const int64_t g[3] = {4, 8, 12}, s0[3] = {3, 6, 5}, l[3] = {2, 3, 4}, real[3] = {1, 2, 4};
		float u[24], *du = t_slab(24 * sizeof *u);
		sc_uniform_real(rt, du, g, 3, s0, l, "h.u", 11, 3);
		sc_cpu_uniform_real(u, g, 3, s0, l, sc_dropout_key("h.u", 11, 3));
		for (int i = 0; i < 24; i++)
			if (i / 12 >= real[0] || i / 4 % 3 >= real[1])
				u[i] = 0;
		twin_bytes("uniform_real, padded piece", du, u, sizeof u);
	}
	{   /* sc_fill_pad: float32, -inf past 2 of a middle dim of 3; bfloat16 in place, 0.1 past 1 of dim 0 */
		float *dx, *x = rnd(24, -2, 2, &dx), *y = malloc(24 * sizeof *y);
		const int64_t fd[3] = {2, 3, 4};
		sc_fill_pad(rt, dx, d, SC_F32, fd, 3, 1, 2, -INFINITY);
		sc_cpu_fill_pad(x, y, SC_F32, 2, 3, 4, 2, -INFINITY);
		twin_bytes("fill_pad float32", d, y, 24 * sizeof *y);
		uint16_t hx[24], hy[24];
		sc_cpu_cast(x, SC_F32, hx, SC_BF16, 24);
		void *dh = up(hx, sizeof hx);
		sc_fill_pad(rt, dh, dh, SC_BF16, fd, 3, 0, 1, 0.1);
		sc_cpu_fill_pad(hx, hy, SC_BF16, 1, 2, 12, 1, 0.1);
		twin_bytes("fill_pad bfloat16 in place", dh, hy, sizeof hy);
		free(x), free(y);
	}
	{   /* sc_triangle: Tril and Triu of a (2, 5, 7) piece from row 3, column 4 of its whole, diagonals -2 to 2,
	     * float32, bfloat16 and bool (one, two and four bytes an element), bit for bit; Tril in place */
		float *dx, *x = rnd(70, -2, 2, &dx), *y = malloc(70 * sizeof *y);
		uint16_t hx[70], hy[70];
		uint8_t bx[70], by[70];
		sc_cpu_cast(x, SC_F32, hx, SC_BF16, 70);
		for (int i = 0; i < 70; i++)
			bx[i] = x[i] > 0;
		void *dh = up(hx, sizeof hx), *db = up(bx, sizeof bx), *dy = t_slab(70 * sizeof *y);
		for (int upper = 0; upper < 2; upper++)
			for (int64_t diag = -2; diag <= 2; diag++) {
				sc_triangle(rt, upper, dx, dy, SC_F32, 2, 5, 7, 3, 4, diag);
				sc_cpu_triangle(upper, x, y, SC_F32, 2, 5, 7, 3, 4, diag);
				twin_bytes(upper ? "triu float32" : "tril float32", dy, y, 70 * sizeof *y);
				sc_triangle(rt, upper, dh, dy, SC_BF16, 2, 5, 7, 3, 4, diag);
				sc_cpu_triangle(upper, hx, hy, SC_BF16, 2, 5, 7, 3, 4, diag);
				twin_bytes(upper ? "triu bfloat16" : "tril bfloat16", dy, hy, sizeof hy);
				sc_triangle(rt, upper, db, dy, SC_BOOL, 2, 5, 7, 3, 4, diag);
				sc_cpu_triangle(upper, bx, by, SC_BOOL, 2, 5, 7, 3, 4, diag);
				twin_bytes(upper ? "triu bool" : "tril bool", dy, by, sizeof by);
			}
		memcpy(y, x, 70 * sizeof *y);
		sc_triangle(rt, 0, dx, dx, SC_F32, 2, 5, 7, 0, 0, 1);
		sc_cpu_triangle(0, y, y, SC_F32, 2, 5, 7, 0, 0, 1);
		twin_bytes("tril float32 in place", dx, y, 70 * sizeof *y);
		free(x), free(y);
	}
	{   /* sc_pad: a (2, 3, 5) x padded (0, 0), (1, 2), (3, 0) with 0.1 (rounded to each type: float32, bfloat16),
	     * Int32 -7 and Bool 1, and its last dim alone with a rank-1 x; bit for bit */
		const int64_t dims[3] = {2, 3, 5}, lo[3] = {0, 1, 3}, hi[3] = {0, 2, 0}, n = 2 * 6 * 8;
		float *dx, *x = rnd(30, -2, 2, &dx), *y = malloc(n * sizeof *y);
		uint16_t hx[30], hy[2 * 6 * 8];
		int32_t ix[30], iy[2 * 6 * 8];
		uint8_t bx[30], by[2 * 6 * 8];
		sc_cpu_cast(x, SC_F32, hx, SC_BF16, 30);
		for (int i = 0; i < 30; i++)
			ix[i] = (int32_t)(x[i] * 100), bx[i] = x[i] > 0;
		void *dh = up(hx, sizeof hx), *di = up(ix, sizeof ix), *db = up(bx, sizeof bx), *dy = t_slab(n * sizeof *y);
		sc_pad(rt, SC_F32, dx, dy, dims, 3, lo, hi, 0.1);
		sc_cpu_pad(SC_F32, x, y, dims, (const int64_t[]){2, 6, 8}, 3, lo, 0.1);
		twin_bytes("pad float32", dy, y, n * sizeof *y);
		sc_pad(rt, SC_BF16, dh, dy, dims, 3, lo, hi, 0.1);
		sc_cpu_pad(SC_BF16, hx, hy, dims, (const int64_t[]){2, 6, 8}, 3, lo, 0.1);
		twin_bytes("pad bfloat16", dy, hy, sizeof hy);
		sc_pad(rt, SC_I32, di, dy, dims, 3, lo, hi, -7);
		sc_cpu_pad(SC_I32, ix, iy, dims, (const int64_t[]){2, 6, 8}, 3, lo, -7);
		twin_bytes("pad int32", dy, iy, sizeof iy);
		sc_pad(rt, SC_BOOL, db, dy, dims, 3, lo, hi, 1);
		sc_cpu_pad(SC_BOOL, bx, by, dims, (const int64_t[]){2, 6, 8}, 3, lo, 1);
		twin_bytes("pad bool", dy, by, sizeof by);
		sc_pad(rt, SC_F32, dx, dy, (const int64_t[]){30}, 1, (const int64_t[]){2}, (const int64_t[]){5}, -1.5);
		sc_cpu_pad(SC_F32, x, y, (const int64_t[]){30}, (const int64_t[]){37}, 1, (const int64_t[]){2}, -1.5);
		twin_bytes("pad float32 rank 1", dy, y, 37 * sizeof *y);
		free(x), free(y);
	}
	static const sc_dtype eye_dt[4] = {SC_F32, SC_I32, SC_I64, SC_BOOL};
	for (int k = 0; k < 4; k++) {   /* Eye: a (5, 12) piece from (3, 2) of the whole */
		char what[64];
		sc_eye(rt, d, eye_dt[k], 5, 12, 3, 2);
		sc_cpu_eye(want, eye_dt[k], 5, 12, 3, 2);
		snprintf(what, sizeof what, "eye %s", dtname(eye_dt[k]));
		twin_bytes(what, d, want, 5 * 12 * dtsize(eye_dt[k]));
	}
	sc_lin_space(rt, (float *)d, 100, 37, 1.0f, 10.0f, 1000);   /* bit for bit: no FMA on either side */
	sc_cpu_lin_space((float *)want, 100, 37, 1.0f, 10.0f, 1000);
	twin_bytes("lin_space", d, want, 100 * 4);
	sc_causal_mask(rt, d, SC_F32, 2, 5, 12, 3, 2, -3.4028234663852886e38);
	sc_cpu_causal_mask(want, SC_F32, 2, 5, 12, 3, 2, -3.4028234663852886e38);
	twin_bytes("causal_mask float32", d, want, 2 * 5 * 12 * 4);
	sc_causal_mask(rt, d, SC_BOOL, 2, 5, 12, 3, 2, 0);
	sc_cpu_causal_mask(want, SC_BOOL, 2, 5, 12, 3, 2, 0);
	twin_bytes("causal_mask bool", d, want, 2 * 5 * 12);
	for (int k = 0; k < 2; k++) {
		float *y = malloc(3 * 40 * 32 * sizeof *y);
		sc_rope(rt, (float *)d, k, 3, 40, 32, 2000, 32, 64, 10000.0);
		sc_cpu_rope(y, k, 3, 40, 32, 2000, 32, 64, 10000.0);
		twin(k ? "rope sin" : "rope cos", (float *)d, y, 3 * 40 * 32, 3e-7);
		free(y);
	}
}

static void test_optimizers(void)
{
	const int n = 1000;
	float *dp, *dg, *dm, *dv, *p = rnd(n, -1, 1, &dp), *g = rnd(n, -1, 1, &dg), *m = rnd(n, -0.1f, 0.1f, &dm);
	float *v = rnd(n, 0, 0.1f, &dv);
	sc_sgd(rt, dp, dg, NULL, n, 0.1, 0, 0, 0.01, 0, 1);
	sc_cpu_sgd(p, g, NULL, n, 0.1, 0, 0, 0.01, 0, 1);
	twin("sgd", dp, p, n, 1e-6);
	for (int t = 1; t <= 2; t++) {
		sc_sgd(rt, dp, dg, dm, n, 0.1, 0.9, 0.1, 0.01, 0, t);
		sc_cpu_sgd(p, g, m, n, 0.1, 0.9, 0.1, 0.01, 0, t);
		sc_sgd(rt, dp, dg, dv, n, 0.1, 0.9, 0, 0.01, 1, t);
		sc_cpu_sgd(p, g, v, n, 0.1, 0.9, 0, 0.01, 1, t);
	}
	twin("sgd momentum, nesterov", dp, p, n, 1e-6);
	sc_momentum(rt, dp, dg, dm, n, 0.1, 0.9, 0, 0);
	sc_cpu_momentum(p, g, m, n, 0.1, 0.9, 0, 0);
	twin("momentum", dp, p, n, 1e-6);
	sc_momentum(rt, dp, dg, dm, n, 0.1, 0.9, 0.01, 1);
	sc_cpu_momentum(p, g, m, n, 0.1, 0.9, 0.01, 1);
	twin("momentum nesterov", dp, p, n, 1e-6);
	sc_cpu_fill(v, SC_F32, n, 0.05);
	sc_from_host(rt, dv, v, sizeof(float) * n);
	for (int t = 1; t <= 3; t++) {
		sc_adam(rt, dp, dg, dm, dv, n, 0.01, 0.9, 0.999, 1e-8, 0.01, t);
		sc_cpu_adam(p, g, m, v, n, 0.01, 0.9, 0.999, 1e-8, 0.01, t);
	}
	twin("adam", dp, p, n, 1e-5);
	twin("adam m", dm, m, n, 1e-5);
	for (int t = 1; t <= 3; t++) {
		sc_adam_weight_decay(rt, dp, dg, dm, dv, n, 0.01, 0.9, 0.999, 1e-6, 0.01);
		sc_cpu_adam_weight_decay(p, g, m, v, n, 0.01, 0.9, 0.999, 1e-6, 0.01);
	}
	twin("adam_weight_decay", dp, p, n, 1e-5);
	twin("adam_weight_decay v", dv, v, n, 1e-5);
	float *dsums = t_slab(2 * sizeof(float)), sums[2];
	for (int t = 1; t <= 3; t++) {   /* Lamb: the piece's sums, then the update with their trust ratio */
		sc_lamb_norms(rt, dp, dg, dm, dv, n, 0.9, 0.999, 1e-6, 0.01, t, dsums);
		sc_cpu_lamb_norms(p, g, m, v, n, 0.9, 0.999, 1e-6, 0.01, t, sums);
		twin("lamb_norms", dsums, sums, 2, 1e-4);
		sc_lamb(rt, dp, dg, dm, dv, n, 0.01, 0.9, 0.999, 1e-6, 0.01, t, dsums);
		sc_cpu_lamb(p, g, m, v, n, 0.01, 0.9, 0.999, 1e-6, 0.01, t, sums);
	}
	twin("lamb", dp, p, n, 1e-5);
	twin("lamb m", dm, m, n, 1e-5);
	float *dsq = t_slab(sizeof(float)), sq;
	sc_sum_squares(rt, (const float *const[]){dp, dg}, (const int64_t[]){n, n / 2}, 2, dsq);
	sc_cpu_sum_squares((const float *const[]){p, g}, (const int64_t[]){n, n / 2}, 2, &sq);
	twin("sum_squares", dsq, &sq, 1, 1e-5);
	sc_clip_by_norm(rt, dg, dg, n, dsq, 1.0);
	sc_cpu_clip_by_norm(g, g, n, &sq, 1.0);
	twin("clip_by_norm", dg, g, n, 1e-5);
	free(p), free(g), free(m), free(v);
}

/* Half operands as emitted programs compute on them: widen (sc_cast), the
 * float32 kernel, round once. GPU and CPU sum in other orders, so a result
 * may sit one ulp apart where float32's sum lands by a half's midpoint.
 * bound (NULL: none), for sums: each result's float32 sums may differ by up
 * to bound[i] (2 K u sum |terms|, two orders' error bounds), which near zero
 * is many ulps of a small half result, Float16's subnormals the more (seen
 * on an H200, 2026-11-28: 1 of 2448 broadcast products); such a result
 * passes when within bound[i] and one ulp of the CPU's. */
static void twin_half(const char *what, sc_dtype dt, const void *d, const uint16_t *want, int64_t n,
                      const float *bound)
{
	uint16_t *got = malloc((size_t)n * sizeof *got), next;
	sc_to_host(rt, got, d, (size_t)n * sizeof *got);
	int64_t bad = 0;
	for (int64_t i = 0; i < n; i++) {
		if (abs((int)got[i] - (int)want[i]) <= 1 && (got[i] ^ want[i]) < 0x8000)
			continue;
		float g, w, w1;
		next = (uint16_t)(want[i] + 1);
		sc_cpu_cast(&got[i], dt, &g, SC_F32, 1);
		sc_cpu_cast(&want[i], dt, &w, SC_F32, 1);
		sc_cpu_cast(&next, dt, &w1, SC_F32, 1);
		bad += !bound || !(fabsf(g - w) <= bound[i] + fabsf(w1 - w));
	}
	checks++;
	if (bad) {
		failures++;
		fprintf(stderr, "%s %s: %lld of %lld results more than one ulp off%s\n", what, dtname(dt), (long long)bad,
		        (long long)n, bound ? " and past the float32 sums' bound" : "");
	}
	free(got);
}

static void test_half(void)
{
	const int M = 17, N = 13, K = 64;
	for (sc_dtype dt = SC_F16; dt <= SC_BF16; dt++) {
		float *da, *db, *a = rnd(M * K, -1, 1, &da), *b = rnd(K * N, -1, 1, &db);
		uint16_t *ha = malloc(M * K * 2), *hb = malloc(K * N * 2), *hc = malloc(M * N * 2), *hs = malloc(M * N * 2);
		float *wa = malloc(M * K * 4), *wb = malloc(K * N * 4), *wc = malloc(M * N * 4);
		sc_cpu_cast(a, SC_F32, ha, dt, M * K);
		sc_cpu_cast(b, SC_F32, hb, dt, K * N);
		void *dha = up(ha, M * K * 2), *dhb = up(hb, K * N * 2), *dhc = t_slab(M * N * 2), *dhs = t_slab(M * N * 2);
		float *dwc = t_slab(M * N * 4);
		sc_cast(rt, dha, dt, da, SC_F32, M * K);   /* the widened copies, over the float32 operands */
		sc_cast(rt, dhb, dt, db, SC_F32, K * N);
		sc_matmul(rt, da, db, dwc, M, N, K, 0, 0);
		sc_cast(rt, dwc, SC_F32, dhc, dt, M * N);
		sc_unary(rt, SC_U_SIGMOID, 0, dwc, dwc, M * N);
		sc_cast(rt, dwc, SC_F32, dhs, dt, M * N);
		sc_cpu_cast(ha, dt, wa, SC_F32, M * K);
		sc_cpu_cast(hb, dt, wb, SC_F32, K * N);
		sc_cpu_matmul(wa, wb, wc, M, N, K, 0, 0);
		sc_cpu_cast(wc, SC_F32, hc, dt, M * N);
		sc_cpu_unary(SC_U_SIGMOID, 0, wc, wc, M * N);
		sc_cpu_cast(wc, SC_F32, hs, dt, M * N);
		twin_half("half matmul", dt, dhc, hc, M * N, NULL);
		twin_half("half sigmoid", dt, dhs, hs, M * N, NULL);
		float *dr, *r = rnd(M * K, -300, 300, &dr);   /* in place: the values as the half type has them */
		sc_round(rt, dr, dt, M * K);
		sc_cpu_round(r, dt, M * K);
		twin("round to half", dr, r, M * K, 0);
		free(r);
		free(a), free(b), free(ha), free(hb), free(hc), free(hs), free(wa), free(wb), free(wc);
		t_slab_reset();
	}
}

/* sc_matmul_half (GemmEx on tensor cores, Float32 sums) against the CPU's
 * Float32 product of the widened operands, every transpose: the sums run in
 * another order, so the matmul tolerance; written as the half type, within
 * an ulp of the CPU's product rounded once. */
static void test_matmul_half(void)
{
	const int M = 33, N = 47, K = 128;
	for (sc_dtype dt = SC_F16; dt <= SC_BF16; dt++)
		for (int ta = 0; ta < 2; ta++)
			for (int tb = 0; tb < 2; tb++) {
				float *da, *db, *a = rnd(M * K, -1, 1, &da), *b = rnd(K * N, -1, 1, &db);
				uint16_t *ha = malloc(M * K * 2), *hb = malloc(K * N * 2);
				float *wa = malloc(M * K * 4), *wb = malloc(K * N * 4), *c = malloc(M * N * 4);
				sc_cpu_cast(a, SC_F32, ha, dt, M * K);
				sc_cpu_cast(b, SC_F32, hb, dt, K * N);
				sc_cpu_cast(ha, dt, wa, SC_F32, M * K);
				sc_cpu_cast(hb, dt, wb, SC_F32, K * N);
				void *dha = up(ha, M * K * 2), *dhb = up(hb, K * N * 2);
				float *dc = t_slab(M * N * 4);
				void *dhc = t_slab(M * N * 2);
				uint16_t *hc = malloc(M * N * 2);
				sc_matmul_half(rt, dt, dha, dhb, dc, SC_F32, M, N, K, ta, tb);
				sc_matmul_half(rt, dt, dha, dhb, dhc, dt, M, N, K, ta, tb);
				sc_cpu_matmul(wa, wb, c, M, N, K, ta, tb);
				sc_cpu_cast(c, SC_F32, hc, dt, M * N);
				char what[64];
				snprintf(what, sizeof what, "matmul_half %s %c%c", dtname(dt), ta ? 'T' : 'N', tb ? 'T' : 'N');
				twin(what, dc, c, M * N, 1e-3);
				twin_half(what, dt, dhc, hc, M * N, NULL);
				free(a), free(b), free(ha), free(hb), free(wa), free(wb), free(c), free(hc);
				t_slab_reset();
			}
}

/* sc_batch_matmul_half against the CPU's batched product of the widened
 * operands: evenly spaced batches (one strided-batched GemmEx) and a
 * broadcast that is not (one GemmEx a batch); Float32 and half results. */
static void test_batch_matmul_half(void)
{
	static const int64_t a_even[] = {2, 3}, b_even[] = {2, 3}, a_cast[] = {2, 1}, b_cast[] = {1, 3}, c_b[] = {2, 3};
	const int M = 17, N = 24, K = 40, A = 6 * M * K, B = 6 * K * N, C = 6 * M * N;
	for (sc_dtype dt = SC_F16; dt <= SC_BF16; dt++)
		for (int bcast = 0; bcast < 2; bcast++) {
			float *da, *db, *a = rnd(A, -1, 1, &da), *b = rnd(B, -1, 1, &db);
			uint16_t *ha = malloc(A * 2), *hb = malloc(B * 2);
			float *wa = malloc(A * 4), *wb = malloc(B * 4), *c = malloc(C * 4);
			uint16_t *hc = malloc(C * 2);
			sc_cpu_cast(a, SC_F32, ha, dt, A);
			sc_cpu_cast(b, SC_F32, hb, dt, B);
			sc_cpu_cast(ha, dt, wa, SC_F32, A);
			sc_cpu_cast(hb, dt, wb, SC_F32, B);
			void *dha = up(ha, A * 2), *dhb = up(hb, B * 2), *dhc = t_slab(C * 2);
			float *dc = t_slab(C * 4);
			const int64_t *ab = bcast ? a_cast : a_even, *bb = bcast ? b_cast : b_even;
			sc_batch_matmul_half(rt, dt, dha, ab, 2, dhb, bb, 2, dc, SC_F32, c_b, 2, M, N, K, bcast, !bcast);
			sc_batch_matmul_half(rt, dt, dha, ab, 2, dhb, bb, 2, dhc, dt, c_b, 2, M, N, K, bcast, !bcast);
			sc_cpu_batch_matmul(wa, ab, 2, wb, bb, 2, c, c_b, 2, M, N, K, bcast, !bcast);
			sc_cpu_cast(c, SC_F32, hc, dt, C);
			float *aa = malloc(A * 4), *ab_ = malloc(B * 4), *bound = malloc(C * 4);   /* sum |a b| per result */
			for (int i = 0; i < A; i++)
				aa[i] = fabsf(wa[i]);
			for (int i = 0; i < B; i++)
				ab_[i] = fabsf(wb[i]);
			sc_cpu_batch_matmul(aa, ab, 2, ab_, bb, 2, bound, c_b, 2, M, N, K, bcast, !bcast);
			for (int i = 0; i < C; i++)
				bound[i] *= 2.0f * K * 0x1p-24f;
			char what[64];
			snprintf(what, sizeof what, "batch_matmul_half %s %s", dtname(dt), bcast ? "broadcast" : "strided");
			twin(what, dc, c, C, 1e-3);
			twin_half(what, dt, dhc, hc, C, bound);
			if (!bcast) {   /* a read as (3, 2) batches of its (2, 3) ones, b as stored: through strides */
				const int64_t sa[3] = {M * K, 3 * M * K, K}, sb[3] = {2 * K * N, K * N, N};
				const int64_t sc[3] = {2 * M * N, M * N, N}, bd[2] = {3, 2};
				sc_batch_matmul_half_strided(rt, dt, dha, sa, dhb, sb, dc, SC_F32, sc, bd, 2, M, N, K, 0, 0);
				sc_batch_matmul_half_strided(rt, dt, dha, sa, dhb, sb, dhc, dt, sc, bd, 2, M, N, K, 0, 0);
				sc_cpu_batch_matmul_strided(wa, sa, wb, sb, c, sc, bd, 2, M, N, K, 0, 0);
				sc_cpu_cast(c, SC_F32, hc, dt, C);
				sc_cpu_batch_matmul_strided(aa, sa, ab_, sb, bound, sc, bd, 2, M, N, K, 0, 0);
				for (int i = 0; i < C; i++)
					bound[i] *= 2.0f * K * 0x1p-24f;
				snprintf(what, sizeof what, "batch_matmul_half_strided %s", dtname(dt));
				twin(what, dc, c, C, 1e-3);
				twin_half(what, dt, dhc, hc, C, bound);
			}
			free(a), free(b), free(ha), free(hb), free(wa), free(wb), free(c), free(hc), free(aa), free(ab_), free(bound);
			t_slab_reset();
		}
}

/* the outputs of reducing dims (nd) over axes */
static int64_t kept(const int64_t *dims, int nd, const int *axes, int naxes)
{
	int64_t n = 1;
	for (int i = 0; i < nd; i++) {
		int j = 0;
		while (j < naxes && (axes[j] + nd) % nd != i)
			j++;
		n *= j < naxes ? 1 : dims[i];
	}
	return n;
}

/* Sums across rows at a GPT layer's sizes (8192 rows of 2048) and odd ones
 * around them, so that every path of reduce.cu runs: column sums in one pass
 * and in two (through scratch, batched over a leading dim too), a thread, a
 * warp or a block an output; the normalizers' dgamma and dbeta with np equal
 * to, a divisor of and a multiple of cols, and bit for bit on a second run;
 * and softmax rows in registers (lengths 7 to 1024) and past them (1500). */
static void test_sums(void)
{
	enum { R = 8192, C = 2048 };
	const int64_t n = (int64_t)R * C;
	float *dx, *ddy, *x = rnd(n, -3, 3, &dx), *dy = rnd(n, -1, 1, &ddy);
	float *y = malloc((size_t)n * 4), *g = malloc((size_t)n * 4), *dyv = t_slab((size_t)n * 4), *dg = t_slab((size_t)n * 4);
	char what[96];
	static const int64_t bias[][2] = {{R, C}, {7, 5}, {300, 37}, {5000, 3}, {33, 2048}, {R, 1}};
	for (int k = 0; k < 6; k++) {
		snprintf(what, sizeof what, "bias_add_grad (%lld, %lld)", (long long)bias[k][0], (long long)bias[k][1]);
		sc_bias_add_grad(rt, ddy, dg, bias[k][0], bias[k][1]);
		sc_cpu_bias_add_grad(dy, g, bias[k][0], bias[k][1]);
		twin(what, dg, g, bias[k][1], 1e-4);
	}
	static const struct {
		int nd, naxes;
		int64_t d[3];
		int axes[3];
	} red[] = {
		{2, 1, {R, C}, {0}},          {2, 1, {R, C}, {1}},          {2, 2, {R, C}, {0, 1}},
		{3, 1, {16, 512, 96}, {1}},   {3, 2, {16, 512, 96}, {0, 1}}, {3, 1, {16, 512, 96}, {2}},
		{3, 2, {16, 512, 96}, {0, 2}}, {3, 2, {64, 100, 64}, {0, 2}}, {3, 1, {3, 5000, 3}, {1}},
	};
	for (int k = 0; k < (int)(sizeof red / sizeof red[0]); k++)
		for (sc_reduce_kind kind = SC_R_SUM; kind <= SC_R_MIN; kind++) {
			snprintf(what, sizeof what, "reduce %d of (%lld, %lld, %lld) case %d", kind, (long long)red[k].d[0],
			         (long long)red[k].d[1], (long long)(red[k].nd > 2 ? red[k].d[2] : 1), k);
			void (*f)(sc_rt *, const float *, float *, const int64_t *, int, const int *, int) =
				kind == SC_R_SUM ? sc_reduce_sum : kind == SC_R_MEAN ? sc_reduce_mean
				: kind == SC_R_MAX ? sc_reduce_max : sc_reduce_min;
			f(rt, dx, dyv, red[k].d, red[k].nd, red[k].axes, red[k].naxes);
			sc_cpu_reduce(kind, x, y, red[k].d, red[k].nd, red[k].axes, red[k].naxes);
			twin(what, dyv, y, kept(red[k].d, red[k].nd, red[k].axes, red[k].naxes), 1e-4);
		}
	/* sum_to_shape over leading rows, and over the ends (a column of a 3-d tensor) */
	const int64_t rc[2] = {R, C}, row[1] = {C}, big[3] = {8, 1024, 2048}, col[2] = {1024, 1};
	sc_sum_to_shape(rt, ddy, rc, 2, dg, row, 1);
	sc_cpu_sum_to_shape(dy, rc, 2, g, row, 1);
	twin("sum_to_shape (8192, 2048) to (2048)", dg, g, C, 1e-4);
	sc_sum_to_shape(rt, ddy, big, 3, dg, col, 2);
	sc_cpu_sum_to_shape(dy, big, 3, g, col, 2);
	twin("sum_to_shape (8, 1024, 2048) to (1024, 1)", dg, g, 1024, 1e-4);
	/* binary_grad of a row broadcast: its db a column sum */
	{
		const int64_t ad[2] = {64, C}, bd[1] = {C};
		float *ga = malloc(64 * C * 4), *gb = malloc(C * 4), *dga = t_slab(64 * C * 4), *dgb = t_slab(C * 4);
		sc_binary_grad(rt, SC_MUL, dx, ad, 2, dx + 64 * C, bd, 1, ddy, ad, 2, dga, dgb);
		sc_cpu_binary_grad(SC_MUL, x, ad, 2, x + 64 * C, bd, 1, dy, ad, 2, ga, gb);
		twin("binary_grad (64, 2048) * (2048) da", dga, ga, 64 * C, 1e-4);
		twin("binary_grad (64, 2048) * (2048) db", dgb, gb, C, 1e-4);
		free(ga), free(gb);
	}
	/* the normalizers: (8, 1024, 2048) over the last axis, and np a multiple
	 * (384 of cols 96) and a divisor (96 of cols 384) of cols */
	static const struct {
		int64_t d[3];
		int bna, bpa;
	} ln[] = {{{8, 1024, 2048}, 2, 2}, {{512, 4, 96}, 2, 1}, {{512, 4, 96}, 1, 2}};
	for (int kind = 0; kind < SC_N_COUNT; kind++)
		for (int k = 0; k < 3; k++) {
			sc_norm_kind nk = (sc_norm_kind)kind;
			int c = sc_norm_centered(nk);
			int64_t np = t_numel(ln[k].d + ln[k].bpa, 3 - ln[k].bpa), m = t_numel(ln[k].d, 3);
			float *dgam, *gam = rnd(np, 0.5f, 1.5f, &dgam), *gg = malloc(np * 4), *bb = malloc(np * 4);
			float *dgg = t_slab(np * 4), *dbb = t_slab(np * 4);
			snprintf(what, sizeof what, "%s_grad (%lld, %lld, %lld) %d %d", c ? "LayerNorm" : "RmsNorm",
			         (long long)ln[k].d[0], (long long)ln[k].d[1], (long long)ln[k].d[2], ln[k].bna, ln[k].bpa);
			sc_norm_grad(rt, nk, ddy, dx, dgam, dg, dgg, dbb, ln[k].d, 3, ln[k].bna, ln[k].bpa, 1e-5);
			sc_cpu_norm_grad(c, dy, x, gam, g, gg, bb, ln[k].d, 3, ln[k].bna, ln[k].bpa, 1e-5);
			twin(what, dg, g, m, 1e-3);
			twin(what, dgg, gg, np, 1e-3);
			twin(what, dbb, bb, np, 1e-3);
			if (k == 0) {   /* the same sums again, bit for bit */
				float *first = malloc(np * 4);
				sc_to_host(rt, first, dgg, np * 4);
				sc_norm_grad(rt, nk, ddy, dx, dgam, NULL, dgg, NULL, ln[k].d, 3, ln[k].bna, ln[k].bpa, 1e-5);
				twin_bytes("norm_grad dgamma repeats", dgg, first, np * 4);
				free(first);
			}
			free(gam), free(gg), free(bb);
		}
	/* norm_part_grad of (4096, 300), the statistics given: two passes */
	for (int kind = 0; kind < SC_N_COUNT; kind++) {
		enum { PR = 4096, PC = 300 };
		sc_norm_kind nk = (sc_norm_kind)kind;
		int c = sc_norm_centered(nk);
		float *rmean = malloc(PR * 4), *rvar = malloc(PR * 4), *mm = malloc(PR * 4), *vv = malloc(PR * 4);
		for (int i = 0; i < PR; i++)
			rmean[i] = 0.01f * (float)(i % 9), rvar[i] = 0.5f + 0.01f * (float)(i % 13);
		float *dgam, *gam = rnd(PC, 0.5f, 1.5f, &dgam), *drmean = up(rmean, PR * 4), *drvar = up(rvar, PR * 4);
		float *dgg = t_slab(PC * 4), *dbb = t_slab(PC * 4), *dm = t_slab(PR * 4), *dv = t_slab(PR * 4), gg[PC], bb[PC];
		sc_norm_part_grad(rt, nk, ddy, dx, dgam, c ? drmean : NULL, drvar, dg, dgg, dbb, c ? dm : NULL, dv, PR, PC,
		                  1e-5);
		sc_cpu_norm_part_grad(c, dy, x, gam, c ? rmean : NULL, rvar, g, gg, bb, c ? mm : NULL, vv, PR, PC, 1e-5);
		snprintf(what, sizeof what, "%s_part_grad (4096, 300)", c ? "LayerNorm" : "RmsNorm");
		twin(what, dg, g, PR * PC, 1e-4);
		twin(what, dgg, gg, PC, 1e-3);
		twin(what, dbb, bb, PC, 1e-3);
		twin(what, dv, vv, PR, 1e-3);
		free(rmean), free(rvar), free(mm), free(vv), free(gam);
	}
	/* softmax rows along the last axis: in registers up to 1024, past that not */
	static const int64_t sm[][2] = {{64, 1024}, {32, 300}, {100, 7}, {16, 513}, {8, 1500}};
	for (int k = 0; k < 5; k++)
		for (int lg = 0; lg < 2; lg++) {
			snprintf(what, sizeof what, "%s (%lld, %lld)", lg ? "log_softmax" : "softmax", (long long)sm[k][0],
			         (long long)sm[k][1]);
			int64_t m = sm[k][0] * sm[k][1];
			(lg ? sc_log_softmax : sc_softmax)(rt, dx, dyv, sm[k], 2, -1);
			sc_cpu_softmax(x, y, sm[k], 2, -1, lg);
			twin(what, dyv, y, m, 1e-4);
			(lg ? sc_log_softmax_grad : sc_softmax_grad)(rt, dyv, ddy, dg, sm[k], 2, -1);
			sc_cpu_softmax_grad(y, dy, g, sm[k], 2, -1, lg);
			twin(what, dg, g, m, 1e-3);
			if (lg)
				continue;
			float *ds, *sc = rnd(1, 0.1f, 0.9f, &ds);   /* scaled and masked by a (len) row */
			snprintf(what, sizeof what, "softmax_masked (%lld, %lld)", (long long)sm[k][0], (long long)sm[k][1]);
			sc_softmax_masked(rt, dx, ds, ddy, sm[k] + 1, 1, dyv, sm[k], 2);
			sc_cpu_softmax_masked(x, sc, dy, sm[k] + 1, 1, y, sm[k], 2);
			twin(what, dyv, y, m, 1e-4);
			free(sc);
		}
	/* casts four a thread: n odd, and ends not aligned to four */
	{
		enum { NH = 1001 };
		uint16_t *h = malloc(NH * 2), *dh = t_slab(NH * 2 + 8);
		for (int off = 0; off < 2; off++)
			for (sc_dtype dt = SC_F16; dt <= SC_BF16; dt++) {
				snprintf(what, sizeof what, "cast float32 to %s and back, %d off", dtname(dt), off);
				sc_cast(rt, dx + off, SC_F32, dh + off, dt, NH);
				sc_cpu_cast(x + off, SC_F32, h, dt, NH);
				twin_bytes(what, dh + off, h, NH * 2);
				sc_cast(rt, dh + off, dt, dg, SC_F32, NH);
				sc_cpu_cast(h, dt, g, SC_F32, NH);
				twin_bytes(what, dg, g, NH * 4);
			}
		free(h);
	}
	free(x), free(dy), free(y), free(g);
}

int main(int argc, char **argv)
{
	int ndev = 0;
	cudaError_t e = cudaGetDeviceCount(&ndev);
	if (argc > 1 && strcmp(argv[1], "--has-gpu") == 0)
		return e == cudaSuccess && ndev > 0 ? 0 : 1;
	if (e != cudaSuccess || ndev == 0) {
		printf("cuda_twins: no CUDA device (%s); skipped\n", e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
		return 0;
	}
	rt = sc_init(&argc, &argv, 0);
	t_slab_init(sc_slab(rt, SLAB), SLAB, "cuda_twins");
	test_matmul();
	test_windows();
	test_conv_transpose();
	test_matmul_half();
	test_batch_matmul_half();
	t_slab_reset();
	test_elementwise();
	t_slab_reset();
	test_lerp();
	test_masked_fill();
	test_int_math();
	t_slab_reset();
	test_resize();
	t_slab_reset();
	test_rows();
	t_slab_reset();
	test_flash_attention();
	t_slab_reset();
	test_movement();
	t_slab_reset();
	test_constants();
	t_slab_reset();
	test_optimizers();
	t_slab_reset();
	test_half();
	t_slab_reset();
	test_sums();
	printf("cuda_twins: %d comparisons, %d failed\n", checks, failures);
	sc_finalize(rt);
	return failures ? 1 : 0;
}
