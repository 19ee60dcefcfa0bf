/* test_rt_data.c: the data streams' sources (data.c) on host buffers, no MPI
 * (tests/run_data.sh runs them end to end).
 *
 * The generator and the batch order against values computed independently
 * with Python integers (tools/ref_eval.py's data_draw and batch_order, the
 * formulas of docs/output.md) and quoted here; each token file format told
 * apart and its refusals; a rank's piece of a batch (rows, and tokens cut
 * into samples, whole or split inside a sample) against the same elements
 * picked out of the whole file by index arithmetic written here; the
 * sequential starts wrapping, the drawn ones in range; ids outside the
 * vocabulary named with their place in the file. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rt_internal.h"
#include "rt_test.h"

/* A temporary file holding n bytes; its path in path (a static buffer per call site is the caller's). */
static void temp_file(char *path, const void *bytes, size_t n)
{
	strcpy(path, "/tmp/test_rt_data.XXXXXX");
	int fd = mkstemp(path);
	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, bytes, n), (ssize_t)n);
	close(fd);
}

/* A .npy of dt and dims holding data, written by the runtime's own writer. */
static void temp_npy(char *path, sc_dtype dt, const int64_t *dims, int ndim, const void *data)
{
	strcpy(path, "/tmp/test_rt_data.XXXXXX");
	int fd = mkstemp(path);
	cr_assert(fd >= 0);
	FILE *f = fdopen(fd, "wb");
	cr_assert(sc_npy_write(f, dt, dims, ndim, data));
	fclose(f);
}

/* An llm.c .bin: the 256-int32 header (magic, version, count), then uint16 tokens. */
static void temp_llmc(char *path, const uint16_t *tok, int32_t n, int32_t magic, int32_t version, int32_t count)
{
	size_t bytes = 1024 + 2 * (size_t)n;
	char *buf = calloc(1, bytes);
	int32_t head[3] = {magic, version, count};
	memcpy(buf, head, sizeof head);
	memcpy(buf + 1024, tok, 2 * (size_t)n);
	temp_file(path, buf, bytes);
	free(buf);
}

/* A stream of 41 tokens of 1 but t16[bad] = 50 (outside a vocabulary of 50),
 * written to a temporary file; spec names it with 4 tokens a sample. */
static void ones_but(char *path, char *spec, size_t n, uint16_t *t16, int bad)
{
	for (int i = 0; i < 41; i++)
		t16[i] = 1;
	t16[bad] = 50;
	temp_file(path, t16, 41 * sizeof *t16);
	snprintf(spec, n, "%s:4", path);
}

static sc_feed feed(const char *name, sc_dtype dt, int ndim, const int64_t *gdims, const int64_t *start,
                    const int64_t *ldims, int64_t bound)
{
	sc_feed f = {.name = name, .dt = dt, .ndim = ndim, .bound = bound, .what = "they index a table", .src = -1};
	memcpy(f.gdims, gdims, (size_t)ndim * sizeof *gdims);
	memcpy(f.start, start, (size_t)ndim * sizeof *start);
	memcpy(f.ldims, ldims, (size_t)ndim * sizeof *ldims);
	f.bytes = (size_t)t_numel(ldims, ndim) * sc_dtype_size(dt);
	f.host[0] = calloc(1, f.bytes + 1);
	f.host[1] = calloc(1, f.bytes + 1);
	return f;
}

static void feed_free(sc_feed *f)
{
	free(f->host[0]);
	free(f->host[1]);
}

/* ---- the rules ---- */

Test(data, draws_and_batch_order_as_python_computes_them)
{
	cr_assert_eq(sc_data_draw(0, 0), 0xe220a8397b1dcdafull);   /* splitmix64's first output from state 0 */
	cr_assert_eq(sc_data_draw(7, 3), 0xe3830d21dc859216ull);
	cr_assert_eq(sc_data_draw(UINT64_MAX, 12345), 0xf36cf1164265dd51ull);
	int64_t p[10];
	const int64_t e0[5] = {0, 4, 3, 2, 1}, e1[5] = {1, 3, 4, 2, 0}, e4[10] = {7, 6, 2, 3, 4, 1, 0, 5, 9, 8};
	sc_data_perm(7, 0, 5, p);
	cr_assert_arr_eq(p, e0, sizeof e0);
	sc_data_perm(7, 1, 5, p);
	cr_assert_arr_eq(p, e1, sizeof e1);
	sc_data_perm(123, 4, 10, p);
	cr_assert_arr_eq(p, e4, sizeof e4);
}

/* ---- batch datasets ---- */

/* (30, 3, 4) float32 rows, value 1000 row + 10 j + k, for an input (6, 3, 4):
 * 5 batches. A piece split along dims 0 and 2 reads its elements of the
 * step's batch; shuffled, of the batch the epoch's order names. */
Test(data, rows_piece_of_each_batch)
{
	char path[64], err[512];
	float *x = malloc(30 * 12 * sizeof *x);
	for (int r = 0; r < 30; r++)
		for (int j = 0; j < 12; j++)
			x[r * 12 + j] = (float)(1000 * r + 10 * (j / 4) + j % 4);
	temp_npy(path, SC_F32, (const int64_t[]){30, 3, 4}, 3, x);
	for (int shuffle = 0; shuffle < 2; shuffle++) {
		sc_feed f = feed("x", SC_F32, 3, (const int64_t[]){6, 3, 4}, (const int64_t[]){3, 0, 2},
		                 (const int64_t[]){3, 3, 2}, -1);
		sc_src s;
		cr_assert(sc_src_open(&s, path, &f, NULL, shuffle, 7, err, sizeof err), "%s", err);
		cr_assert_eq(s.kind, SC_SRC_ROWS);
		cr_assert_eq(s.n, 30);
		cr_assert_eq(s.batch, 6);
		int64_t perm[5];
		for (int64_t step = 1; step <= 12; step++) {
			sc_data_perm(7, (step - 1) / 5, 5, perm);
			int64_t b = shuffle ? perm[(step - 1) % 5] : (step - 1) % 5;
			cr_assert_eq(sc_src_batch(&s, step), b);
			cr_assert(sc_src_read(&s, step, (int)(step & 1), err, sizeof err), "%s", err);
			const float *got = f.at[step & 1];
			for (int i = 0; i < 3; i++)
				for (int j = 0; j < 3; j++)
					for (int k = 0; k < 2; k++)
						cr_assert_eq(got[(i * 3 + j) * 2 + k], (float)(1000 * (b * 6 + 3 + i) + 10 * j + 2 + k),
						             "step %lld (%d, %d, %d)", (long long)step, i, j, k);
		}
		sc_src_close(&s);
		feed_free(&f);
	}
	unlink(path);
	free(x);
}

/* A piece that is one run of the file (a batch split along dim 0 only) is
 * the mapped file's bytes, no copy; one of several runs is read into host[]. */
Test(data, rows_one_run_mapped)
{
	char path[64], err[512];
	float x[30 * 12];
	for (int i = 0; i < 30 * 12; i++)
		x[i] = (float)i;
	temp_npy(path, SC_F32, (const int64_t[]){30, 3, 4}, 3, x);
	for (int split = 0; split < 2; split++) {   /* dim 0 only; dims 0 and 1 */
		sc_feed f = feed("x", SC_F32, 3, (const int64_t[]){6, 3, 4}, (const int64_t[]){3, split, 0},
		                 (const int64_t[]){3, 3 - 2 * split, 4}, -1);
		sc_src s;
		cr_assert(sc_src_open(&s, path, &f, NULL, true, 5, err, sizeof err), "%s", err);
		cr_assert_eq(s.map != NULL, split == 0);
		for (int64_t step = 1; step <= 7; step++) {
			cr_assert(sc_src_read(&s, step, (int)(step & 1), err, sizeof err), "%s", err);
			const float *got = f.at[step & 1];
			cr_assert_eq(got == f.host[step & 1], split == 1);
			int64_t b = sc_src_batch(&s, step), nj = 3 - 2 * split;
			for (int i = 0; i < 3; i++)
				for (int j = 0; j < nj; j++)
					for (int k = 0; k < 4; k++)
						cr_assert_eq(got[(i * nj + j) * 4 + k], x[((b * 6 + 3 + i) * 3 + split + j) * 4 + k],
						             "split %d step %lld (%d, %d, %d)", split, (long long)step, i, j, k);
		}
		sc_src_close(&s);
		feed_free(&f);
	}
	unlink(path);
}

/* A BFloat16 input reads '<f4' rows rounded to bfloat16; ids are checked
 * against their bound, the bad one named by its place in the file. */
Test(data, rows_bf16_and_ids_outside)
{
	char path[64], err[512];
	const float v[4] = {1.0f, 1.00390625f, 1.01171875f, -2.0f};   /* step 2 reads the last two */
	temp_npy(path, SC_F32, (const int64_t[]){4, 1}, 2, v);
	sc_feed f = feed("h", SC_BF16, 2, (const int64_t[]){2, 1}, (const int64_t[]){0, 0}, (const int64_t[]){2, 1}, -1);
	sc_src s;
	cr_assert(sc_src_open(&s, path, &f, NULL, false, 0, err, sizeof err), "%s", err);
	cr_assert(sc_src_read(&s, 2, 0, err, sizeof err), "%s", err);
	const uint16_t *h = f.at[0];
	cr_assert_eq(h[0], 0x3f82);   /* 1 + 1.5 2^-7, halfway: to even, 1 + 2^-6 */
	cr_assert_eq(h[1], 0xc000);
	sc_src_close(&s);
	feed_free(&f);
	unlink(path);

	const int32_t ids[6] = {1, 2, 3, 4, 9, 5};
	temp_npy(path, SC_I32, (const int64_t[]){6}, 1, ids);
	f = feed("ids", SC_I32, 1, (const int64_t[]){2}, (const int64_t[]){0}, (const int64_t[]){2}, 8);
	cr_assert(sc_src_open(&s, path, &f, NULL, false, 0, err, sizeof err), "%s", err);
	cr_assert(sc_src_read(&s, 2, 0, err, sizeof err), "%s", err);
	cr_assert(!sc_src_read(&s, 3, 1, err, sizeof err));
	cr_assert_str_eq(err, "holds 9 at (4,) (read for step 3), outside [0, 8): they index a table");
	sc_src_close(&s);
	feed_free(&f);
	unlink(path);
}

/* An uneven shard's piece: rows 4 and 5 of a batch of 5 (pieces of 2 over
 * 3 ranks), row 5 padding. It is read, not mapped, though one run: its real
 * row from the file, its padding 0 every step; an id outside the bound is
 * named by its place in the file; the padding is never checked. */
Test(data, rows_uneven_piece_padding)
{
	char path[64], err[512];
	int32_t ids[20 * 3];
	for (int i = 0; i < 60; i++)
		ids[i] = (i + 1) % 50;
	ids[9 * 3 + 2] = 77;   /* batch 1's row 4: step 2's real row */
	temp_npy(path, SC_I32, (const int64_t[]){20, 3}, 2, ids);
	sc_feed f = feed("ids", SC_I32, 2, (const int64_t[]){5, 3}, (const int64_t[]){4, 0}, (const int64_t[]){2, 3}, 50);
	memset(f.host[0], 0x7f, f.bytes);
	memset(f.host[1], 0x7f, f.bytes);
	sc_src s;
	cr_assert(sc_src_open(&s, path, &f, NULL, false, 0, err, sizeof err), "%s", err);
	cr_assert_null(s.map);
	for (int64_t step = 3; step <= 5; step++) {   /* batches 2, 3, 0 */
		cr_assert(sc_src_read(&s, step, (int)(step & 1), err, sizeof err), "%s", err);
		const int32_t *got = f.at[step & 1];
		int64_t row = sc_src_batch(&s, step) * 5 + 4;
		for (int j = 0; j < 3; j++) {
			cr_assert_eq(got[j], ids[row * 3 + j], "step %lld (0, %d)", (long long)step, j);
			cr_assert_eq(got[3 + j], 0, "step %lld: padding (1, %d)", (long long)step, j);
		}
	}
	cr_assert(!sc_src_read(&s, 2, 0, err, sizeof err));
	cr_assert_str_eq(err, "holds 77 at (9, 2) (read for step 2), outside [0, 50): they index a table");
	sc_src_close(&s);
	feed_free(&f);
	unlink(path);
}

/* run.sh --unchecked-ids: an id outside the bound is read as -1 (the kernels'
 * outside), not refused, from a .npy of rows (whose one-run piece is then
 * read, not mapped, since marking writes) and from a token stream. */
Test(data, unchecked_ids_marked)
{
	char path[64], spec[80], err[512];
	int32_t ids[8 * 3];
	for (int i = 0; i < 24; i++)
		ids[i] = i % 50;
	ids[2 * 3 + 1] = 77;   /* batch 1's row 0 */
	temp_npy(path, SC_I32, (const int64_t[]){8, 3}, 2, ids);
	sc_feed f = feed("ids", SC_I32, 2, (const int64_t[]){2, 3}, (const int64_t[]){0, 0}, (const int64_t[]){2, 3}, 50);
	f.unchecked = true;
	sc_src s;
	cr_assert(sc_src_open(&s, path, &f, NULL, false, 0, err, sizeof err), "%s", err);
	cr_assert_null(s.map);
	cr_assert(sc_src_read(&s, 2, 0, err, sizeof err), "%s", err);   /* batch 1: rows 2, 3 */
	const int32_t *got = f.at[0];
	for (int j = 0; j < 6; j++)
		cr_assert_eq(got[j], j == 1 ? -1 : ids[6 + j], "(%d, %d)", j / 3, j % 3);
	sc_src_close(&s);
	feed_free(&f);
	unlink(path);
	uint16_t t16[41];
	ones_but(path, spec, sizeof spec, t16, 21);   /* step 3 reads tokens 16..24 */
	sc_feed in = feed("ids", SC_I32, 2, (const int64_t[]){2, 4}, (const int64_t[]){0, 0}, (const int64_t[]){2, 4}, 50);
	in.unchecked = true;
	cr_assert(sc_src_open(&s, spec, &in, NULL, false, 0, err, sizeof err), "%s", err);
	cr_assert(sc_src_read(&s, 3, 1, err, sizeof err), "%s", err);
	got = in.at[1];
	for (int j = 0; j < 8; j++)
		cr_assert_eq(got[j], 16 + j == 21 ? -1 : 1, "token %d", 16 + j);
	sc_src_close(&s);
	unlink(path);
	feed_free(&in);
}

/* Files that do not fit the input: each refused with what it is and what is expected. */
Test(data, rows_refusals)
{
	char path[64], err[512];
	float z[81 * 4] = {0};
	sc_feed f = feed("x", SC_F32, 2, (const int64_t[]){16, 4}, (const int64_t[]){0, 0}, (const int64_t[]){16, 4}, -1);
	sc_src s;
	temp_npy(path, SC_F32, (const int64_t[]){81, 4}, 2, z);
	cr_assert(!sc_src_open(&s, path, &f, NULL, false, 0, err, sizeof err));
	cr_assert_str_eq(err, "has shape (81, 4), expected (N, 4) with N a multiple of 16, the batch of the input, which "
	                      "is (16, 4)");
	sc_src_close(&s);
	unlink(path);
	temp_npy(path, SC_F32, (const int64_t[]){32, 3}, 2, z);
	cr_assert(!sc_src_open(&s, path, &f, NULL, false, 0, err, sizeof err));
	cr_assert_str_eq(err, "has shape (32, 3), expected (N, 4) with N a multiple of 16, the batch of the input, which "
	                      "is (16, 4)");
	sc_src_close(&s);
	unlink(path);
	temp_npy(path, SC_I32, (const int64_t[]){32, 4}, 2, z);
	cr_assert(!sc_src_open(&s, path, &f, NULL, false, 0, err, sizeof err));
	cr_assert_str_eq(err, "has dtype int32 ('<i4'), expected float32 ('<f4')");
	sc_src_close(&s);
	unlink(path);
	cr_assert(!sc_src_open(&s, "/nonexistent/x.npy", &f, NULL, false, 0, err, sizeof err));
	cr_assert_str_eq(err, "cannot be opened: No such file or directory");
	sc_src_close(&s);
	temp_file(path, "not numpy", 9);
	cr_assert(!sc_src_open(&s, path, &f, NULL, false, 0, err, sizeof err));
	cr_assert_str_eq(err, "is not a .npy file (a token stream is given as FILE:S)");
	sc_src_close(&s);
	unlink(path);
	feed_free(&f);
}

/* ---- token streams ---- */

/* Token t of the test streams: (7 t + 3) mod 50. */
static uint16_t tok(int64_t t)
{
	return (uint16_t)((7 * t + 3) % 50);
}

/* Each format: llm.c's header, headerless uint16, a 1-D int32 .npy. */
Test(data, token_formats)
{
	char path[64], spec[80], err[512];
	uint16_t t16[100];
	int32_t t32[100];
	for (int i = 0; i < 100; i++)
		t32[i] = t16[i] = tok(i);
	sc_feed f = feed("ids", SC_I32, 2, (const int64_t[]){2, 4}, (const int64_t[]){0, 0}, (const int64_t[]){2, 4}, 50);
	const char *formats[3] = {"llm.c .bin, uint16", "headerless .bin, uint16", ".npy, int32"};
	for (int k = 0; k < 3; k++) {
		if (k == 0)
			temp_llmc(path, t16, 100, 20240520, 1, 100);
		else if (k == 1)
			temp_file(path, t16, sizeof t16);
		else
			temp_npy(path, SC_I32, (const int64_t[]){100}, 1, t32);
		snprintf(spec, sizeof spec, "%s:4", path);
		sc_src s;
		cr_assert(sc_src_open(&s, spec, &f, NULL, false, 0, err, sizeof err), "%s: %s", formats[k], err);
		cr_assert_str_eq(s.format, formats[k]);
		cr_assert_eq(s.n, 100);
		cr_assert(sc_src_read(&s, 3, 1, err, sizeof err), "%s", err);
		for (int i = 0; i < 8; i++)   /* step 3: samples 4 and 5, at tokens 16 and 20 */
			cr_assert_eq(((const int32_t *)f.at[1])[i], tok(16 + i), "%s: %d", formats[k], i);
		sc_src_close(&s);
		unlink(path);
	}
	feed_free(&f);
}

/* A token input (3, 4) in pieces of 2 samples: the second piece holds sample
 * 2 and a row of padding, 0 on every step, and its labels likewise. */
Test(data, token_uneven_piece_padding)
{
	char path[64], spec[80], err[512];
	uint16_t t16[100];
	for (int i = 0; i < 100; i++)
		t16[i] = tok(i);
	temp_file(path, t16, sizeof t16);
	snprintf(spec, sizeof spec, "%s:4", path);
	sc_feed in = feed("ids", SC_I32, 2, (const int64_t[]){3, 4}, (const int64_t[]){2, 0}, (const int64_t[]){2, 4}, 50);
	sc_feed lab = feed("labels", SC_I64, 2, (const int64_t[]){3, 4}, (const int64_t[]){2, 0}, (const int64_t[]){2, 4},
	                   50);
	memset(in.host[1], 0x7f, in.bytes);
	memset(lab.host[1], 0x7f, lab.bytes);
	sc_src s;
	cr_assert(sc_src_open(&s, spec, &in, &lab, false, 0, err, sizeof err), "%s", err);
	cr_assert(sc_src_read(&s, 1, 1, err, sizeof err), "%s", err);
	const int32_t *x = in.at[1];
	const int64_t *y = lab.at[1];
	int64_t first = sc_src_sample_start(&s, 1, 2);
	for (int j = 0; j < 4; j++) {
		cr_assert_eq(x[j], tok(first + j), "ids (0, %d)", j);
		cr_assert_eq(y[j], tok(first + j + 1), "labels (0, %d)", j);
		cr_assert_eq(x[4 + j], 0, "ids padding (1, %d)", j);
		cr_assert_eq(y[4 + j], 0, "labels padding (1, %d)", j);
	}
	sc_src_close(&s);
	feed_free(&in);
	feed_free(&lab);
	unlink(path);
}

/* ids (4, 6) split (2, 3) at (2, 3), labels (24,) split 3 ways at 8:
 * pieces that cut samples; S = 6 then S = 3 (two samples a row). Each
 * element against the stream: ids (i, j) is token start(sample) + position,
 * labels one further; sequential starts wrap after (n - 1) / S samples,
 * drawn ones stay in [0, n - S). */
Test(data, token_pieces_cut_samples)
{
	char path[64], spec[80], err[512];
	uint16_t t16[60];
	for (int i = 0; i < 60; i++)
		t16[i] = tok(i);
	temp_llmc(path, t16, 60, 20240520, 1, 60);
	for (int S = 6; S >= 3; S -= 3)
		for (int shuffle = 0; shuffle < 2; shuffle++) {
			sc_feed in = feed("ids", SC_I64, 2, (const int64_t[]){4, 6}, (const int64_t[]){2, 3},
			                  (const int64_t[]){2, 3}, 50);
			sc_feed lab = feed("labels", SC_I32, 1, (const int64_t[]){24}, (const int64_t[]){8}, (const int64_t[]){8},
			                   50);
			snprintf(spec, sizeof spec, "%s:%d", path, S);
			sc_src s;
			cr_assert(sc_src_open(&s, spec, &in, &lab, shuffle, 11, err, sizeof err), "%s", err);
			cr_assert_eq(s.batch, 24 / S);
			for (int64_t step = 1; step <= 7; step++) {
				cr_assert(sc_src_read(&s, step, 0, err, sizeof err), "%s", err);
				for (int64_t i = 0; i < s.batch; i++) {
					int64_t q = (step - 1) * s.batch + i, st = sc_src_sample_start(&s, step, i);
					if (shuffle)
						cr_assert(st >= 0 && st < 60 - S && st == (int64_t)(sc_data_draw(11, (uint64_t)q) % (60u - S)));
					else
						cr_assert_eq(st, q % (59 / S) * S);   /* 59 / S samples of S + 1 fit */
				}
				for (int a = 0; a < 2; a++)
					for (int b = 0; b < 3; b++) {
						int64_t g = (2 + a) * 6 + 3 + b;   /* the element's flat index in ids */
						int64_t want = tok(sc_src_sample_start(&s, step, g / S) + g % S);
						cr_assert_eq(((const int64_t *)in.at[0])[a * 3 + b], want, "S %d step %lld ids (%d, %d)", S,
						             (long long)step, 2 + a, 3 + b);
					}
				for (int k = 0; k < 8; k++) {
					int64_t g = 8 + k;
					cr_assert_eq(((const int32_t *)lab.at[0])[k], tok(sc_src_sample_start(&s, step, g / S) + g % S + 1),
					             "S %d step %lld labels %lld", S, (long long)step, (long long)g);
				}
			}
			sc_src_close(&s);
			feed_free(&in);
			feed_free(&lab);
		}
	unlink(path);
}

/* A token outside the vocabulary is named by its place in the file. */
Test(data, token_outside_vocabulary)
{
	char path[64], spec[80], err[512];
	uint16_t t16[41];
	ones_but(path, spec, sizeof spec, t16, 21);   /* step 3 reads tokens 16..24 */
	sc_feed in = feed("ids", SC_I32, 2, (const int64_t[]){2, 4}, (const int64_t[]){0, 0}, (const int64_t[]){2, 4}, 50);
	sc_feed lab = feed("labels", SC_I32, 2, (const int64_t[]){2, 4}, (const int64_t[]){0, 0}, (const int64_t[]){2, 4},
	                   50);
	sc_src s;
	cr_assert(sc_src_open(&s, spec, &in, &lab, false, 0, err, sizeof err), "%s", err);
	cr_assert(sc_src_read(&s, 1, 1, err, sizeof err), "%s", err);
	cr_assert(sc_src_read(&s, 2, 0, err, sizeof err), "%s", err);   /* tokens 8..16 */
	cr_assert(!sc_src_read(&s, 3, 1, err, sizeof err));
	cr_assert_str_eq(err, "holds 50 at token 21 (read for step 3), outside [0, 50): they index a table");
	cr_assert_eq(s.bad_feed, 0);
	t16[21] = 1;
	t16[24] = 50;   /* only the labels read token 24 */
	sc_src_close(&s);
	unlink(path);
	temp_file(path, t16, sizeof t16);
	snprintf(spec, sizeof spec, "%s:4", path);
	cr_assert(sc_src_open(&s, spec, &in, &lab, false, 0, err, sizeof err), "%s", err);
	cr_assert(!sc_src_read(&s, 3, 1, err, sizeof err));
	cr_assert_str_eq(err, "holds 50 at token 24 (read for step 3), outside [0, 50): they index a table");
	cr_assert_eq(s.bad_feed, 1);
	sc_src_close(&s);
	unlink(path);
	feed_free(&in);
	feed_free(&lab);
}

/* Token files and inputs that do not go together. */
Test(data, token_refusals)
{
	char path[64], spec[80], err[512];
	uint16_t t16[40] = {0};
	sc_feed in = feed("ids", SC_I32, 2, (const int64_t[]){2, 4}, (const int64_t[]){0, 0}, (const int64_t[]){2, 4}, 50);
	sc_feed lab = feed("labels", SC_I32, 1, (const int64_t[]){7}, (const int64_t[]){0}, (const int64_t[]){7}, 50);
	sc_feed x = feed("x", SC_F32, 2, (const int64_t[]){2, 4}, (const int64_t[]){0, 0}, (const int64_t[]){2, 4}, -1);
	sc_src s;
	struct {
		int kind;                /* 0 headerless, 1 llm.c with the given header, 2 float .npy */
		int32_t magic, version, count;
		int ntok, S;
		sc_feed *in, *labels;
		const char *want;
	} cases[] = {
		{0, 0, 0, 0, 8, 4, &in, NULL,
		 "holds 8 tokens (headerless .bin, uint16), too few for one step: 2 samples of 5 tokens need 9"},
		{1, 20240520, 2, 8, 8, 4, &in, NULL, "is an llm.c .bin of version 2 (version 1, uint16 tokens, is read)"},
		{1, 20240520, 1, 9, 8, 4, &in, NULL, "has 1040 bytes, but its llm.c header says 9 tokens (1042 bytes)"},
		{1, 20240801, 7, 8, 8, 4, &in, NULL,
		 "is llm.c's Llama 3 format (magic 20240801, uint32 tokens), which is not read: GPT-2's (magic 20240520, "
		 "uint16 tokens) is"},
		{2, 0, 0, 0, 8, 4, &in, NULL, "is a .npy of float32 (8,): a token stream .npy is 1-D int32 ('<i4')"},
		{0, 0, 0, 0, 40, 3, &in, NULL,
		 "cannot be cut into samples of 3 tokens for 'ids', which is (2, 4) (8 elements, not a multiple of 3)"},
		{0, 0, 0, 0, 40, 4, &in, &lab, "gives 'ids' 8 tokens a step, but its labels 'labels' are (7,) (7 elements)"},
		{0, 0, 0, 0, 40, 4, &x, NULL, "is a token stream, which feeds Int32 or Int64 inputs; 'x' is float32"},
		{0, 0, 0, 0, 40, 0, &in, NULL, "has sample length '0': expected a positive integer"},
	};
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		if (cases[k].kind == 0) {
			temp_file(path, t16, 2 * (size_t)cases[k].ntok);
		} else if (cases[k].kind == 1) {
			temp_llmc(path, t16, cases[k].ntok, cases[k].magic, cases[k].version, cases[k].count);
		} else {
			float z[8] = {0};
			temp_npy(path, SC_F32, (const int64_t[]){8}, 1, z);
		}
		snprintf(spec, sizeof spec, "%s:%d", path, cases[k].S);
		cr_assert(!sc_src_open(&s, spec, cases[k].in, cases[k].labels, false, 0, err, sizeof err), "case %zu", k);
		cr_assert_str_eq(err, cases[k].want, "case %zu", k);
		sc_src_close(&s);
		unlink(path);
	}
	temp_file(path, t16, 17);
	snprintf(spec, sizeof spec, "%s:4", path);
	cr_assert(!sc_src_open(&s, spec, &in, NULL, false, 0, err, sizeof err));
	cr_assert_str_eq(err, "has an odd number of bytes (17): not uint16 tokens (nor a .npy, nor llm.c's .bin)");
	sc_src_close(&s);
	unlink(path);
	feed_free(&in);
	feed_free(&lab);
	feed_free(&x);
}
