/* mpi_checkpoint.c: a run's checkpoints across 4 ranks, under the sanitizers
 * (runtime-test).
 *
 * x (6, 8) float32, x[i][j] = 8 i + j + step, split 2x2 over the ranks;
 * h (4, 6) bfloat16 held whole by every rank (rank 0 writes it); z (8,)
 * int32 split in two, each half held by two ranks (ranks 0 and 2 write).
 * Checkpoints at steps 3, 6 and 9 with keep 2, a stale step-000000012.tmp
 * left as a crash would leave it before the last: after it, DIR holds
 * step-000000006 and step-000000009 alone. Then resuming finds step 9, its
 * counters, and every tensor read back as another plan would (x by rows, h
 * and z whole); u, v and q, uneven pieces whose padding holds -1 (those of
 * mpi_safetensors.c), read back whole and v in its padded pieces. Every
 * rank checks; the exit status says whether all agree. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <dirent.h>

#include "rt_test.h"
#include "shardc_rt.h"


int main(int argc, char **argv)
{
	sc_rt *rt = sc_init(&argc, &argv, 4);
	int r = sc_rank(rt);
	const char *out = sc_option(rt, "--output-dir", NULL);
	char dir[4096], path[4300];
	snprintf(dir, sizeof dir, "%s/ckpt", out ? out : ".");
	char *slab = sc_slab(rt, 1 << 14);
	float host[48];
	uint16_t half[24];
	int32_t ints[8];

	const int64_t g[2] = {6, 8}, st[2] = {3 * (r / 2), 4 * (r % 2)}, ld[2] = {3, 4}, zero[2] = {0, 0};
	const int64_t hg[2] = {4, 6}, zg[1] = {8}, zst[1] = {4 * (r / 2)}, zld[1] = {4};
	float *x = (float *)slab;
	uint16_t *h = (uint16_t *)(slab + 256);
	int32_t *z = (int32_t *)(slab + 512);
	for (int i = 0; i < 24; i++)
		half[i] = (uint16_t)(0x3f80 + i);
	sc_from_host(rt, h, half, sizeof half);
	for (int i = 0; i < 4; i++)
		ints[i] = (int32_t)(100 * (zst[0] + i));
	sc_from_host(rt, z, ints, 4 * sizeof *ints);
	/* uneven shards: u (10, 3) float32, u[i][j] = 3 i + j, in pieces of 3 rows (3, 3, 3, 1 real);
	 * v (5,) int32, v[i] = 10 i, in pieces of 2 (2, 2, 1, 0: rank 3's is padding alone); the
	 * padding holds -1, which must not reach the file */
	const int64_t ug[2] = {10, 3}, ust[2] = {3 * r, 0}, uld[2] = {3, 3}, vg[1] = {5}, vst[1] = {2 * r}, vld[1] = {2};
	float *u = (float *)(slab + 8192);
	int32_t *v = (int32_t *)(slab + 8448);
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
	for (int64_t step = 3; step <= 9; step += 3) {
		for (int i = 0; i < 3; i++)
			for (int j = 0; j < 4; j++)
				host[4 * i + j] = (float)(8 * (st[0] + i) + st[1] + j + step);
		sc_from_host(rt, x, host, 12 * sizeof *host);
		if (step == 9 && r == 0) {
			snprintf(path, sizeof path, "%s/step-000000012.tmp", dir);
			t_expect(mkdir(path, 0755) == 0, r, "making a stale .tmp folder");
		}
		sc_checkpoint *c = sc_checkpoint_begin(dir, step);
		sc_checkpoint_add(c, "x", x, SC_F32, g, 2, st, ld);
		sc_checkpoint_add(c, "adam_m/h", h, SC_BF16, hg, 2, zero, hg);
		sc_checkpoint_add(c, "z", z, SC_I32, zg, 1, zst, zld);
		sc_checkpoint_add(c, "u", u, SC_F32, ug, 2, ust, uld);
		sc_checkpoint_add(c, "v", v, SC_I32, vg, 1, vst, vld);
		sc_checkpoint_add(c, "q", q, SC_F32, qg, 2, qst, qld);
		sc_checkpoint_value(c, "updates", (double)step - 1);
		sc_checkpoint_value(c, "loss_scale", 65536.5);
		sc_checkpoint_end(rt, c, 2);
	}
	if (r == 0) {   /* what the folder holds */
		int n = 0, six = 0, nine = 0;
		DIR *d = opendir(dir);
		struct dirent *e;
		while (d && (e = readdir(d)))
			if (e->d_name[0] != '.') {
				n++;
				six += strcmp(e->d_name, "step-000000006") == 0;
				nine += strcmp(e->d_name, "step-000000009") == 0;
			}
		if (d)
			closedir(d);
		t_expect(n == 2 && six && nine, r, "DIR holds step-000000006 and step-000000009 alone");
	}

	sc_resume *res = sc_resume_open(rt, dir);
	t_expect(sc_resume_step(res) == 9, r, "the newest checkpoint is step 9");
	t_expect(sc_resume_value(rt, res, "updates") == 8, r, "updates");
	t_expect(sc_resume_value(rt, res, "loss_scale") == 65536.5, r, "loss_scale");
	static const char *const names[] = {"x", "adam_m/h", "z", "u", "v", "q"};
	sc_safetensors *ck = sc_safetensors_open(rt, "--resume", sc_resume_file(res, path, sizeof path), NULL, names, 6);
	const int64_t rst[2] = {r < 2 ? 3 * r : 0, 0}, rld[2] = {r < 2 ? 3 : 6, 8};
	float *xr = (float *)(slab + 1024);
	sc_load_safetensors(rt, ck, "x", xr, SC_F32, g, 2, rst, rld);
	sc_to_host(rt, host, xr, (size_t)(rld[0] * 8) * sizeof *host);
	for (int i = 0; i < rld[0] * 8; i++)
		t_expect(host[i] == (float)(8 * rst[0] + i + 9), r, "x by rows");
	uint16_t *hr = (uint16_t *)(slab + 2048);
	sc_load_safetensors(rt, ck, "adam_m/h", hr, SC_BF16, hg, 2, zero, hg);
	sc_to_host(rt, half, hr, sizeof half);
	for (int i = 0; i < 24; i++)
		t_expect(half[i] == 0x3f80 + i, r, "adam_m/h");
	int32_t *zr = (int32_t *)(slab + 4096);
	sc_load_safetensors(rt, ck, "z", zr, SC_I32, zg, 1, (const int64_t[]){0}, zg);
	sc_to_host(rt, ints, zr, sizeof ints);
	for (int i = 0; i < 8; i++)
		t_expect(ints[i] == 100 * i, r, "z whole");
	sc_load_safetensors(rt, ck, "u", xr, SC_F32, ug, 2, zero, ug);
	sc_to_host(rt, host, xr, 30 * sizeof *host);
	for (int i = 0; i < 30; i++)
		t_expect(host[i] == (float)i, r, "u whole, from uneven pieces");
	sc_load_safetensors(rt, ck, "q", xr, SC_F32, qg, 2, zero, qg);
	sc_to_host(rt, host, xr, 15 * sizeof *host);
	for (int i = 0; i < 15; i++)
		t_expect(host[i] == (float)i, r, "q whole, from pieces padded along both dims");
	sc_load_safetensors(rt, ck, "v", zr, SC_I32, vg, 1, (const int64_t[]){0}, vg);
	sc_to_host(rt, ints, zr, 5 * sizeof *ints);
	for (int i = 0; i < 5; i++)
		t_expect(ints[i] == 10 * i, r, "v whole, from uneven pieces");
	sc_fill(rt, zr, SC_I32, 2, 42.0);   /* resumed into the same uneven pieces: the padding 0 */
	sc_load_safetensors(rt, ck, "v", zr, SC_I32, vg, 1, vst, vld);
	sc_to_host(rt, ints, zr, 2 * sizeof *ints);
	for (int i = 0; i < 2; i++)
		t_expect(ints[i] == (2 * r + i < 5 ? 10 * (2 * r + i) : 0), r, "v resumed in pieces of 2");
	sc_safetensors_close(ck);
	sc_resume_close(res);

	if (t_failures())
		fprintf(stderr, "rank %d: %d failures\n", r, t_failures());
	else if (r == 0)
		printf("mpi_checkpoint: 3 checkpoints written from slices on 4 ranks, 2 kept, resumed: all equal\n");
	sc_finalize(rt);
	return t_failures() ? 1 : 0;
}
