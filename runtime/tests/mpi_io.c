/* mpi_io.c: loading, initializing and saving slices across 4 ranks.
 *
 * run_mpi_io.sh writes the .npy inputs with numpy, runs this program, and
 * checks what it saved against numpy and against its own implementation of
 * the initializers of docs/output.md; it also runs it with bad inputs, expecting one
 * message and status 1 on every rank. Here every rank loads its slice of each
 * input, checks the values it can predict, and saves slices back: split 2x2,
 * split by rows with two copies of each row block, replicated on every rank,
 * and held by rank 0 alone; and uneven shards, pieces reaching past the
 * whole (loads and initializers giving the padding 0, saves writing the
 * real parts). Float16 travels as '<f2'; BFloat16 is read from
 * '<f4' (rounded to nearest even) and saved as '<f4'. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "rt_test.h"
#include "shardc_rt.h"


int main(int argc, char **argv)
{
	sc_rt *rt = sc_init(&argc, &argv, 4);
	int r = sc_rank(rt);
	const char *out = sc_option(rt, "--output-dir", NULL);
	char *slab = sc_slab(rt, 1 << 16);
	float host[48];

	/* the command line: known names, --steps, a parameter from a file */
	static const char *const inputs[] = {"x", "x2", "y", "m", "h", "hb", "u", "ids"}, *const params[] = {"p"};
	sc_check_names(rt, "--input", inputs, 8);
	sc_check_names(rt, "--param", params, 1);
	t_expect(sc_steps(rt, 1) >= 1, r, "--steps");

	/* x (6, 8) float32, x[i][j] = (8 i + j) / 2 - 3, split 2x2 over the ranks */
	const int64_t g[2] = {6, 8}, st[2] = {3 * (r / 2), 4 * (r % 2)}, ld[2] = {3, 4}, zero[2] = {0, 0};
	float *x = (float *)slab;
	sc_load_npy(rt, "x", sc_option(rt, "--input", "x"), x, SC_F32, g, 2, st, ld);
	sc_to_host(rt, host, x, 12 * sizeof(float));
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 4; j++)
			t_expect(host[4 * i + j] == (float)((8 * (st[0] + i) + st[1] + j) * 0.5 - 3), r, "x slice value");
	sc_save_npy(rt, out, "x_split.npy", x, SC_F32, g, 2, st, ld);

	/* p: x again, given as --param when the test wants a parameter's message */
	const char *fp = sc_option(rt, "--param", "p");
	if (fp)
		sc_load_npy(rt, "p", fp, slab + 16384, SC_F32, g, 2, zero, g);

	/* x2: the same values in a format 2.0 file, whole on every rank */
	float *x2 = (float *)(slab + 256);
	sc_load_npy(rt, "x2", sc_option(rt, "--input", "x2"), x2, SC_F32, g, 2, zero, g);
	sc_save_npy(rt, out, "x_rep.npy", x2, SC_F32, g, 2, zero, g);
	/* rows 0-2 on ranks 0 and 1, rows 3-5 on ranks 2 and 3 */
	const int64_t rst[2] = {3 * (r / 2), 0}, rld[2] = {3, 8};
	sc_save_npy(rt, out, "x_rows.npy", x2 + 24 * (r / 2), SC_F32, g, 2, rst, rld);

	/* y (6,) int64, split in 3 along dim 0 on ranks 0-2, rank 3 a copy of rank 0's */
	const int64_t yg[1] = {6}, yst[1] = {2 * (r % 3)}, yld[1] = {2};
	int64_t *y = (int64_t *)(slab + 512), yh[2];
	sc_load_npy(rt, "y", sc_option(rt, "--input", "y"), y, SC_I64, yg, 1, yst, yld);
	sc_to_host(rt, yh, y, sizeof yh);
	t_expect(yh[0] == 10 * yst[0] - 7 && yh[1] == 10 * (yst[0] + 1) - 7, r, "y slice values");
	sc_save_npy(rt, out, "y_copy.npy", y, SC_I64, yg, 1, yst, yld);

	/* m (2, 3) bool, on rank 0 alone; the others only check the file */
	const int64_t mg[2] = {2, 3};
	void *m = slab + 768;
	sc_load_npy(rt, "m", sc_option(rt, "--input", "m"), r == 0 ? m : NULL, SC_BOOL, mg, 2, zero, mg);
	sc_save_npy(rt, out, "m_copy.npy", r == 0 ? m : NULL, SC_BOOL, mg, 2, zero, mg);

	/* initializers, each rank its slice */
	const int64_t wg[2] = {8, 12}, wst[2] = {0, 3 * r}, wld[2] = {8, 3};
	float *w = (float *)(slab + 1024);
	sc_init_uniform(rt, w, SC_F32, "w", 3, wg, 2, wst, wld, -1.0, 1.0);
	sc_save_npy(rt, out, "w_uniform.npy", w, SC_F32, wg, 2, wst, wld);
	const int64_t ng[3] = {4, 2, 6}, nst[3] = {r, 0, 0}, nld[3] = {1, 2, 6};
	float *nrm = (float *)(slab + 2048);
	sc_init_normal(rt, nrm, SC_F32, "layer.0.w", 1, ng, 3, nst, nld, 0.5);
	sc_save_npy(rt, out, "n_normal.npy", nrm, SC_F32, ng, 3, nst, nld);
	const int64_t ig[1] = {16}, ist[1] = {4 * r}, ild[1] = {4};
	int32_t *ri = (int32_t *)(slab + 3072);
	sc_init_randint(rt, ri, SC_I32, "labels", 2, ig, 1, ist, ild, -3, 7);
	sc_save_npy(rt, out, "r_randint.npy", ri, SC_I32, ig, 1, ist, ild);
	float *s = (float *)(slab + 4096);
	sc_init_uniform(rt, s, SC_F32, "s", 0, NULL, 0, NULL, NULL, 2.0, 3.0);
	sc_save_npy(rt, out, "s_scalar.npy", s, SC_F32, NULL, 0, NULL, NULL);

	/* h (4, 6) float16, a row per rank; hb (4, 6) bfloat16 from float32 values
	 * that are not all bfloat16, whole on every rank */
	const int64_t hg[2] = {4, 6}, hst[2] = {r, 0}, hld[2] = {1, 6};
	void *h = slab + 5120, *hb = slab + 5376;
	sc_load_npy(rt, "h", sc_option(rt, "--input", "h"), h, SC_F16, hg, 2, hst, hld);
	sc_save_npy(rt, out, "h_copy.npy", h, SC_F16, hg, 2, hst, hld);
	sc_load_npy(rt, "hb", sc_option(rt, "--input", "hb"), hb, SC_BF16, hg, 2, zero, hg);
	uint16_t hbh[24];
	sc_to_host(rt, hbh, hb, sizeof hbh);
	t_expect(hbh[0] == 0x3eab, r, "1/3 as bfloat16 is 0x3eab");
	sc_save_npy(rt, out, "hb_round.npy", hb, SC_BF16, hg, 2, zero, hg);
	/* the cast of the loaded bfloat16 to float16, each rank its row */
	void *hc = slab + 5632;
	sc_cast(rt, (char *)hb + 12 * r, SC_BF16, hc, SC_F16, 6);
	sc_save_npy(rt, out, "hb_as_f16.npy", hc, SC_F16, hg, 2, hst, hld);

	/* initializers as float16 and bfloat16 */
	void *wh = slab + 6144, *nb = slab + 6400;
	sc_init_uniform(rt, wh, SC_F16, "w", 3, wg, 2, wst, wld, -1.0, 1.0);
	sc_save_npy(rt, out, "w_uniform_f16.npy", wh, SC_F16, wg, 2, wst, wld);
	sc_init_normal(rt, nb, SC_BF16, "layer.0.w", 1, ng, 3, nst, nld, 0.5);
	sc_save_npy(rt, out, "n_normal_bf16.npy", nb, SC_BF16, ng, 3, nst, nld);
	sc_fill(rt, wh, SC_F16, 3, 0.1);
	sc_save_npy(rt, out, "c_fill_f16.npy", r == 0 ? wh : NULL, SC_F16, (const int64_t[]){3}, 1,
	            (const int64_t[]){0}, (const int64_t[]){3});

	/* Uneven shards: pieces of ceil(n/4) along a dim of n, past the whole on the last ranks.
	 * u (10, 3) float32, u[i][j] = (3 i + j) / 4 - 1, in pieces of 3 rows (3, 3, 3, 1 real);
	 * ids (5, 2) int32, (2 i + j) mod 7 below 7, in pieces of 2 rows (2, 2, 1, 0 real). The
	 * garbage left in the slab must become 0; saved, the real parts make the whole. */
	const int64_t ug[2] = {10, 3}, ust[2] = {3 * r, 0}, uld[2] = {3, 3};
	float *u = (float *)(slab + 7168), uh[9];
	sc_fill(rt, u, SC_F32, 9, 42.0);
	sc_load_npy(rt, "u", sc_option(rt, "--input", "u"), u, SC_F32, ug, 2, ust, uld);
	sc_to_host(rt, uh, u, sizeof uh);
	for (int i = 0; i < 9; i++)
		t_expect(uh[i] == (3 * r + i / 3 < 10 ? (float)(9 * r + i) * 0.25f - 1 : 0), r, "u piece: real rows, then 0");
	sc_save_npy(rt, out, "u_uneven.npy", u, SC_F32, ug, 2, ust, uld);
	const int64_t dg[2] = {5, 2}, dst[2] = {2 * r, 0}, dld[2] = {2, 2};
	int32_t *ids = (int32_t *)(slab + 7424), idh[4];
	sc_fill(rt, ids, SC_I32, 4, 99);
	sc_load_indices(rt, "ids", sc_option(rt, "--input", "ids"), ids, SC_I32, dg, 2, dst, dld, 7,
	                "they index a table of 7 rows");
	sc_to_host(rt, idh, ids, sizeof idh);
	for (int i = 0; i < 4; i++)
		t_expect(idh[i] == (4 * r + i < 10 ? (4 * r + i) % 7 : 0), r, "ids piece: real rows, then 0");
	sc_save_npy(rt, out, "ids_uneven.npy", ids, SC_I32, dg, 2, dst, dld);
	/* initializers: v (10, 5) normal in pieces of 3 rows; k (5,) randint in pieces of 2 (rank 3:
	 * padding alone); wb (4, 7) bfloat16 uniform in pieces of 2 columns (2, 2, 2, 1 real) */
	const int64_t vg[2] = {10, 5}, vst[2] = {3 * r, 0}, vld[2] = {3, 5};
	float *v = (float *)(slab + 7680), vh[15];
	sc_fill(rt, v, SC_F32, 15, 42.0);
	sc_init_normal(rt, v, SC_F32, "v", 4, vg, 2, vst, vld, 1.0);
	sc_to_host(rt, vh, v, sizeof vh);
	for (int i = 0; i < 15; i++)
		t_expect(3 * r + i / 5 < 10 ? vh[i] != 0 && vh[i] != 42 : vh[i] == 0, r, "v piece: drawn, then 0");
	sc_save_npy(rt, out, "v_normal_uneven.npy", v, SC_F32, vg, 2, vst, vld);
	const int64_t kg[1] = {5}, kst[1] = {2 * r}, kld[1] = {2};
	int32_t *kk = (int32_t *)(slab + 7936), kh[2];
	sc_fill(rt, kk, SC_I32, 2, 99);
	sc_init_randint(rt, kk, SC_I32, "k", 5, kg, 1, kst, kld, 0, 100);
	sc_to_host(rt, kh, kk, sizeof kh);
	t_expect(r < 2 || kh[1] == 0, r, "k piece: padding 0");
	sc_save_npy(rt, out, "k_randint_uneven.npy", kk, SC_I32, kg, 1, kst, kld);
	const int64_t bg[2] = {4, 7}, bst[2] = {0, 2 * r}, bld[2] = {4, 2};
	void *wb = slab + 8192;
	sc_init_uniform(rt, wb, SC_BF16, "wb", 6, bg, 2, bst, bld, -1.0, 1.0);
	sc_save_npy(rt, out, "wb_uniform_bf16_uneven.npy", wb, SC_BF16, bg, 2, bst, bld);

	if (t_failures())
		fprintf(stderr, "rank %d: %d failures\n", r, t_failures());
	sc_finalize(rt);
	return t_failures() ? 1 : 0;
}
