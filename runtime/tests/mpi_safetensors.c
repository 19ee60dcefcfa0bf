/* mpi_safetensors.c: writing a safetensors checkpoint from slices across 4
 * ranks and reading slices of it back, under the sanitizers (runtime-test).
 *
 * x (6, 8) float32, x[i][j] = 8 i + j, is split 2x2 over the ranks; h (4, 6)
 * bfloat16 is held whole by every rank; s () int64 by rank 0 alone. They are
 * written to DIR/ck.safetensors (DIR: --output-dir, which exists), then read back:
 * x by rows (rank r its row block of 3 when r < 2, the whole on ranks 2 and
 * 3), x again as float16 and bfloat16 (the conversions), h whole, s, and a
 * renamed x. Uneven shards too: u (10, 3) in pieces of 3 rows, v (5,) in
 * pieces of 2 (rank 3's all padding), q (5, 3) in pieces of (3, 2), their
 * padding -1, written and read back whole and in padded pieces (padding
 * 0). Every rank checks what it read; the exit status says whether
 * all agree. run_mpi_io.sh covers the bad-input messages of .npy; those of
 * safetensors are tests/run_safetensors.sh's. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "rt_test.h"
#include "shardc_rt.h"


int main(int argc, char **argv)
{
	sc_rt *rt = sc_init(&argc, &argv, 4);
	int r = sc_rank(rt);
	const char *dir = sc_option(rt, "--output-dir", NULL);
	char *slab = sc_slab(rt, 1 << 14), path[4096], names[4200];
	float host[48];
	uint16_t half[48];

	/* the pieces */
	const int64_t g[2] = {6, 8}, st[2] = {3 * (r / 2), 4 * (r % 2)}, ld[2] = {3, 4};
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 4; j++)
			host[4 * i + j] = (float)(8 * (st[0] + i) + st[1] + j);
	float *x = (float *)slab;
	sc_from_host(rt, x, host, 12 * sizeof *host);
	const int64_t hg[2] = {4, 6}, zero[2] = {0, 0};
	for (int i = 0; i < 24; i++)
		half[i] = (uint16_t)(0x3f80 + i);   /* 1, 1 + 2^-7, ... as bfloat16 */
	uint16_t *h = (uint16_t *)(slab + 256);
	sc_from_host(rt, h, half, 24 * sizeof *half);
	int64_t *s = (int64_t *)(slab + 512), sv = -7;
	sc_from_host(rt, s, &sv, sizeof sv);

	/* uneven shards: u (10, 3) float32, u[i][j] = 3 i + j, in pieces of 3 rows (3, 3, 3, 1 real);
	 * v (5,) int32, v[i] = 10 i, in pieces of 2 (2, 2, 1, 0: rank 3's is padding alone). The
	 * padding holds -1, which must not reach the file. */
	const int64_t ug[2] = {10, 3}, ust[2] = {3 * r, 0}, uld[2] = {3, 3}, vg[1] = {5}, vst[1] = {2 * r}, vld[1] = {2};
	float *u = (float *)(slab + 8192);
	int32_t *v = (int32_t *)(slab + 8448), ints[5];
	for (int i = 0; i < 9; i++)
		host[i] = 9 * r + i < 30 ? (float)(9 * r + i) : -1;
	sc_from_host(rt, u, host, 9 * sizeof *host);
	for (int i = 0; i < 2; i++)
		ints[i] = 2 * r + i < 5 ? 10 * (2 * r + i) : -1;
	sc_from_host(rt, v, ints, 2 * sizeof *ints);
	/* q (5, 3) float32, q[i][j] = 3 i + j, split 2 x 2 in pieces of (3, 2): padding along both
	 * dims, so the real part is not the piece's first elements (rank 3: real (2, 1)) */
	const int64_t qg[2] = {5, 3}, qst[2] = {3 * (r / 2), 2 * (r % 2)}, qld[2] = {3, 2};
	float *q = (float *)(slab + 8704);
	for (int i = 0; i < 6; i++)
		host[i] = qst[0] + i / 2 < 5 && qst[1] + i % 2 < 3 ? (float)(3 * (qst[0] + i / 2) + qst[1] + i % 2) : -1;
	sc_from_host(rt, q, host, 6 * sizeof *host);

	sc_safetensors_writer *w = sc_safetensors_create(dir, "ck.safetensors");
	sc_safetensors_add(w, "x", x, SC_F32, g, 2, st, ld);
	sc_safetensors_add(w, "layer.h", h, SC_BF16, hg, 2, zero, hg);
	sc_safetensors_add(w, "s", r == 0 ? s : NULL, SC_I64, NULL, 0, NULL, NULL);
	sc_safetensors_add(w, "u", u, SC_F32, ug, 2, ust, uld);
	sc_safetensors_add(w, "v", v, SC_I32, vg, 1, vst, vld);
	sc_safetensors_add(w, "q", q, SC_F32, qg, 2, qst, qld);
	sc_safetensors_write(rt, w);

	/* read back; x also under another name */
	snprintf(path, sizeof path, "%s/ck.safetensors", dir ? dir : ".");
	snprintf(names, sizeof names, "%s/names.json", dir ? dir : ".");
	if (r == 0) {
		FILE *f = fopen(names, "w");
		t_expect(f && fputs("{\"y\": \"x\"}\n", f) >= 0 && fclose(f) == 0, r, "writing names.json");
	}
	static const char *const params[] = {"x", "layer.h", "s", "y"};
	sc_safetensors *ck = sc_safetensors_open(rt, "--params", path, names, params, 4);
	const int64_t rst[2] = {r < 2 ? 3 * r : 0, 0}, rld[2] = {r < 2 ? 3 : 6, 8};
	float *xr = (float *)(slab + 1024);
	sc_load_safetensors(rt, ck, "x", xr, SC_F32, g, 2, rst, rld);
	sc_to_host(rt, host, xr, (size_t)(rld[0] * 8) * sizeof *host);
	for (int i = 0; i < rld[0] * 8; i++)
		t_expect(host[i] == (float)(8 * rst[0] + i), r, "x by rows");
	sc_load_safetensors(rt, ck, "y", xr, SC_F32, g, 2, zero, g);
	sc_to_host(rt, host, xr, 48 * sizeof *host);
	for (int i = 0; i < 48; i++)
		t_expect(host[i] == (float)i, r, "y, renamed x");
	uint16_t *xh = (uint16_t *)(slab + 2048);
	sc_load_safetensors(rt, ck, "x", xh, SC_F16, g, 2, zero, g);
	sc_to_host(rt, half, xh, 48 * sizeof *half);
	t_expect(half[0] == 0x0000 && half[1] == 0x3c00 && half[47] == 0x51e0, r, "x as float16 (0, 1, 47)");
	sc_load_safetensors(rt, ck, "x", xh, SC_BF16, g, 2, zero, g);
	sc_to_host(rt, half, xh, 48 * sizeof *half);
	t_expect(half[1] == 0x3f80 && half[47] == 0x423c, r, "x as bfloat16 (1, 47)");
	sc_load_safetensors(rt, ck, "layer.h", xh, SC_BF16, hg, 2, zero, hg);
	sc_to_host(rt, half, xh, 24 * sizeof *half);
	for (int i = 0; i < 24; i++)
		t_expect(half[i] == 0x3f80 + i, r, "layer.h");
	int64_t *sr = (int64_t *)(slab + 4096), got = 0;
	sc_load_safetensors(rt, ck, "s", sr, SC_I64, NULL, 0, NULL, NULL);
	sc_to_host(rt, &got, sr, sizeof got);
	t_expect(got == -7, r, "s");
	/* u and v whole, then u in another plan's pieces (4 rows: 4, 4, 2, 0 real) and v in its own,
	 * over garbage: the real part read, the padding 0 */
	sc_load_safetensors(rt, ck, "u", xr, SC_F32, ug, 2, zero, ug);
	sc_to_host(rt, host, xr, 30 * sizeof *host);
	for (int i = 0; i < 30; i++)
		t_expect(host[i] == (float)i, r, "u whole, from uneven pieces");
	sc_load_safetensors(rt, ck, "q", xr, SC_F32, qg, 2, zero, qg);
	sc_to_host(rt, host, xr, 15 * sizeof *host);
	for (int i = 0; i < 15; i++)
		t_expect(host[i] == (float)i, r, "q whole, from pieces padded along both dims");
	sc_load_safetensors(rt, ck, "v", sr, SC_I32, vg, 1, (const int64_t[]){0}, vg);
	sc_to_host(rt, ints, sr, 5 * sizeof *ints);
	for (int i = 0; i < 5; i++)
		t_expect(ints[i] == 10 * i, r, "v whole, from uneven pieces");
	sc_fill(rt, xr, SC_F32, 12, 42.0);
	sc_load_safetensors(rt, ck, "u", xr, SC_F32, ug, 2, (const int64_t[]){4 * r, 0}, (const int64_t[]){4, 3});
	sc_to_host(rt, host, xr, 12 * sizeof *host);
	for (int i = 0; i < 12; i++)
		t_expect(host[i] == (4 * r + i / 3 < 10 ? (float)(12 * r + i) : 0), r, "u in pieces of 4 rows");
	sc_fill(rt, sr, SC_I32, 2, 42.0);
	sc_load_safetensors(rt, ck, "v", sr, SC_I32, vg, 1, vst, vld);
	sc_to_host(rt, ints, sr, 2 * sizeof *ints);
	for (int i = 0; i < 2; i++)
		t_expect(ints[i] == (2 * r + i < 5 ? 10 * (2 * r + i) : 0), r, "v in pieces of 2");
	sc_safetensors_close(ck);

	if (t_failures())
		fprintf(stderr, "rank %d: %d failures\n", r, t_failures());
	else if (r == 0)
		printf("mpi_safetensors: written from slices on 4 ranks and read back: all equal\n");
	sc_finalize(rt);
	return t_failures() ? 1 : 0;
}
