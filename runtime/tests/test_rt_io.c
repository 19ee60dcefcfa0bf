/* test_rt_io.c: .npy reading and writing, the initializers of docs/output.md,
 * sc_option's command line and the learning-rate schedules, on host buffers
 * (no MPI; run_mpi_io.sh covers the collective side).
 *
 * Round trips of every dtype and rank (bfloat16 as the '<f4' convention of
 * tools/ref_eval.py), slices against the whole, headers as numpy writes them
 * (1.0, 2.0, 3.0, odd spacing), and broken files, each with the reason it
 * gives; saving through a temporary file renamed into place, a write that
 * fails mid-way leaving the old file. Initializer values were computed independently
 * with numpy (/usr/bin/python3, the formulas of docs/output.md in Python
 * integers) and are quoted here. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rt_internal.h"
#include "rt_test.h"

/* ---- .npy ---- */

static FILE *write_tmp(const void *bytes, size_t n)
{
	FILE *f = tmpfile();
	cr_assert(f);
	cr_assert_eq(fwrite(bytes, 1, n, f), n);
	rewind(f);
	return f;
}

/* A file with this header text (padded as given) and data bytes. */
static FILE *npy_with(int major, const char *dict, const void *data, size_t n)
{
	unsigned char buf[4096];
	size_t len = strlen(dict), pre = major == 1 ? 10 : 12;
	memcpy(buf, "\x93NUMPY", 6);
	buf[6] = (unsigned char)major;
	buf[7] = 0;
	for (size_t i = 0; i < pre - 8; i++)
		buf[8 + i] = (unsigned char)(len >> (8 * i));
	memcpy(buf + pre, dict, len);
	memcpy(buf + pre + len, data, n);
	return write_tmp(buf, pre + len + n);
}

Test(npy, round_trip_every_dtype)
{
	const float f[6] = {1.5f, -2, 0, 3, 4, 5};
	const int32_t i4[3] = {-1, 7, 2147483647};
	const int64_t i8[2] = {-5, 1ll << 40};
	const uint8_t b[4] = {1, 0, 0, 1};
	const uint16_t hf[5] = {0x3555, 0x7bff, 0x0001, 0x8000, 0x7c00};   /* 1/3, 65504, 2^-24, -0, inf */
	struct {
		sc_dtype dt;
		const void *data;
		int ndim;
		int64_t dims[3];
	} cases[] = {
		{SC_F32, f, 2, {2, 3}}, {SC_I32, i4, 1, {3}}, {SC_I64, i8, 3, {1, 2, 1}}, {SC_BOOL, b, 2, {2, 2}},
		{SC_F32, f, 0, {0}}, {SC_F16, hf, 1, {5}},
	};
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		FILE *f2 = tmpfile();
		cr_assert(sc_npy_write(f2, cases[k].dt, cases[k].dims, cases[k].ndim, cases[k].data));
		long size = ftell(f2);
		rewind(f2);
		sc_npy_header h;
		char err[256];
		cr_assert(sc_npy_read_header(f2, &h, err, sizeof err), "%s", err);
		cr_assert_eq(h.dt, cases[k].dt);
		cr_assert_eq(h.ndim, cases[k].ndim);
		cr_assert_eq(h.data_offset % 64, 0, "numpy aligns the data to 64 bytes");
		size_t bytes = (size_t)t_numel(cases[k].dims, cases[k].ndim) * sc_dtype_size(cases[k].dt);
		cr_assert_eq((size_t)size, (size_t)h.data_offset + bytes);
		char back[64];
		int64_t zero[3] = {0};
		cr_assert(sc_npy_read_slice(f2, &h, zero, cases[k].dims, back, err, sizeof err), "%s", err);
		cr_assert_eq(memcmp(back, cases[k].data, bytes), 0);
		fclose(f2);
	}
}

Test(npy, slices_of_a_3d_tensor)
{
	float x[4 * 5 * 6];
	for (int i = 0; i < 120; i++)
		x[i] = (float)i;
	const int64_t g[3] = {4, 5, 6};
	FILE *f = tmpfile();
	cr_assert(sc_npy_write(f, SC_F32, g, 3, x));
	sc_npy_header h;
	char err[256];
	rewind(f);
	cr_assert(sc_npy_read_header(f, &h, err, sizeof err));
	const int64_t starts[][3] = {{0, 0, 0}, {2, 0, 0}, {1, 2, 3}, {0, 4, 0}, {3, 1, 5}};
	const int64_t sizes[][3] = {{4, 5, 6}, {2, 5, 6}, {2, 3, 3}, {4, 1, 6}, {1, 4, 1}};
	for (int k = 0; k < 5; k++) {
		float got[120], want[120];
		int64_t n = t_numel(sizes[k], 3), idx[3];
		for (int64_t i = 0; i < n; i++) {
			t_unravel(i, sizes[k], 3, idx);
			for (int d = 0; d < 3; d++)
				idx[d] += starts[k][d];
			want[i] = x[t_ravel(idx, g, 3)];
		}
		cr_assert(sc_npy_read_slice(f, &h, starts[k], sizes[k], got, err, sizeof err), "%s", err);
		cr_assert(t_close("slice", got, want, n, 0, 0), "slice %d", k);
	}
	fclose(f);
}

Test(npy, headers_numpy_may_write)
{
	const float d[2] = {1, 2};
	char err[256];
	sc_npy_header h;
	/* version 2.0 and 3.0, double quotes, no trailing comma, keys in another order */
	FILE *f = npy_with(2, "{\"shape\": (2,), \"fortran_order\": False, \"descr\": \"<f4\"}   \n", d, 8);
	cr_assert(sc_npy_read_header(f, &h, err, sizeof err), "%s", err);
	cr_assert(h.ndim == 1 && h.dims[0] == 2 && h.dt == SC_F32);
	fclose(f);
	f = npy_with(3, "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2), }\n", d, 8);
	cr_assert(sc_npy_read_header(f, &h, err, sizeof err), "%s", err);
	cr_assert(h.ndim == 2 && h.dims[1] == 2);
	fclose(f);
	f = npy_with(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (), }\n", d, 4);
	cr_assert(sc_npy_read_header(f, &h, err, sizeof err), "%s", err);
	cr_assert_eq(h.ndim, 0);
	fclose(f);
}

static void expect_bad(FILE *f, const char *want)
{
	sc_npy_header h;
	char err[256] = "";
	int64_t zero[SC_MAX_DIMS] = {0};
	float buf[64];
	bool ok = sc_npy_read_header(f, &h, err, sizeof err) && sc_npy_read_slice(f, &h, zero, h.dims, buf, err, sizeof err);
	cr_assert(!ok, "accepted a file that should fail with: %s", want);
	cr_assert(strstr(err, want), "error '%s' does not say '%s'", err, want);
	fclose(f);
}

Test(npy, broken_files)
{
	const float d[4] = {0};
	expect_bad(write_tmp("hello world", 11), "is not a .npy file");
	expect_bad(write_tmp("\x93NUMPY\x01", 7), "is not a .npy file");
	expect_bad(write_tmp("\x93NUMPY\x04\x00\x10\x00", 10), "format version 4.0");
	expect_bad(write_tmp("\x93NUMPY\x01\x00\x40\x00{'descr'", 18), "truncated inside its .npy header");
	expect_bad(npy_with(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }\n", d, 16), "dtype '<f8'");
	expect_bad(npy_with(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }\n", d, 8), "dtype '>f4'");
	expect_bad(npy_with(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }\n", d, 8), "Fortran order");
	expect_bad(npy_with(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n", d, 16),
	           "truncated: 16 bytes of data, expected 24");
	expect_bad(npy_with(1, "{'descr': '<f4', 'shape': (2,), }\n", d, 8), "not {'descr'");
	expect_bad(npy_with(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, x), }\n", d, 8), "not {'descr'");
	expect_bad(npy_with(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }\n", d, 8),
	           "not {'descr'");
	expect_bad(npy_with(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}\n", d, 8), "not {'descr'");
	expect_bad(npy_with(1, "['descr']\n", d, 8), "not {'descr'");
}

/* the whole file f as a string (headers are text) */
static void file_text(FILE *f, char *buf, size_t n)
{
	rewind(f);
	size_t k = fread(buf, 1, n - 1, f);
	buf[k] = '\0';
	for (size_t i = 0; i < k; i++)
		if (buf[i] == '\0')
			buf[i] = ' ';
}

Test(npy, float16_is_f2_and_bfloat16_is_f4)
{
	char text[512], err[256];
	sc_npy_header h;
	const uint16_t f16[3] = {0x3555, 0xfc00, 0x0400};
	FILE *f = tmpfile();
	cr_assert(sc_npy_write(f, SC_F16, (const int64_t[]){3}, 1, f16));
	file_text(f, text, sizeof text);
	cr_assert(strstr(text, "{'descr': '<f2', 'fortran_order': False, 'shape': (3,), }"), "%s", text);
	fclose(f);
	/* bfloat16 is saved as the float32 of the same value: 1, 1/3 rounded, -2.5, inf, 2^-133 */
	const uint16_t bf[5] = {0x3f80, 0x3eab, 0xc020, 0x7f80, 0x0001};
	f = tmpfile();
	cr_assert(sc_npy_write(f, SC_BF16, (const int64_t[]){5, 1}, 2, bf));
	file_text(f, text, sizeof text);
	cr_assert(strstr(text, "{'descr': '<f4', 'fortran_order': False, 'shape': (5, 1), }"), "%s", text);
	rewind(f);
	cr_assert(sc_npy_read_header(f, &h, err, sizeof err), "%s", err);
	cr_assert_eq(h.dt, SC_F32);
	float back[5];
	cr_assert(sc_npy_read_slice(f, &h, (const int64_t[]){0, 0}, h.dims, back, err, sizeof err), "%s", err);
	cr_assert_eq(memcmp(back, ((const float[]){1, 0.333984375f, -2.5f, INFINITY, 0x1p-133f}), sizeof back), 0);
	uint16_t again[5];
	sc_host_narrow(back, again, SC_BF16, 5);
	cr_assert_eq(memcmp(again, bf, sizeof bf), 0, "bfloat16 -> '<f4' -> bfloat16 is the identity");
	fclose(f);
	/* as numpy writes float16 */
	f = npy_with(1, "{'descr': '<f2', 'fortran_order': False, 'shape': (2,), }\n", f16, 4);
	cr_assert(sc_npy_read_header(f, &h, err, sizeof err), "%s", err);
	cr_assert(h.dt == SC_F16 && h.ndim == 1 && h.dims[0] == 2);
	fclose(f);
	expect_bad(npy_with(1, "{'descr': '>f2', 'fortran_order': False, 'shape': (2,), }\n", f16, 4),
	           "has dtype '>f2' (read: '<f4' float32, '<f2' float16,");
}

/* ---- saving a file: a temporary name, then a rename ---- */

static int by_name(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* the names in dir, sorted, joined by spaces ("" when empty) */
static void dir_names(const char *dir, char *out, size_t n)
{
	char names[16][256];
	int k = 0;
	DIR *d = opendir(dir);
	cr_assert(d, "%s: %s", dir, strerror(errno));
	for (struct dirent *e; (e = readdir(d)) && k < 16;)
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			snprintf(names[k++], sizeof names[0], "%s", e->d_name);
	closedir(d);
	qsort(names, (size_t)k, sizeof names[0], by_name);
	out[0] = '\0';
	for (int i = 0; i < k; i++)
		snprintf(out + strlen(out), n - strlen(out), "%s%s", i ? " " : "", names[i]);
}

/* the float32 tensor of n elements in path, whose shape must be (n,) */
static void read_back(const char *path, float *x, int64_t n)
{
	FILE *f = fopen(path, "rb");
	cr_assert(f, "%s: %s", path, strerror(errno));
	sc_npy_header h;
	char err[256];
	cr_assert(sc_npy_read_header(f, &h, err, sizeof err), "%s", err);
	cr_assert(h.dt == SC_F32 && h.ndim == 1 && h.dims[0] == n);
	cr_assert(sc_npy_read_slice(f, &h, (const int64_t[]){0}, h.dims, x, err, sizeof err), "%s", err);
	fclose(f);
}

Test(save, a_temporary_file_renamed_into_place)
{
	char root[] = "/tmp/test_rt_io.XXXXXX", dir[64], path[128], names[512], err[256];
	cr_assert(mkdtemp(root));
	snprintf(dir, sizeof dir, "%s/a/b", root);
	static float x[4096], back[4096];
	const int64_t n[1] = {4096};
	for (int i = 0; i < 4096; i++)
		x[i] = (float)i;
	cr_assert(sc_npy_check_dir(dir, err, sizeof err), "%s", err);   /* created, probed, left empty */
	dir_names(dir, names, sizeof names);
	cr_assert_str_eq(names, "");
	cr_assert(sc_npy_save_file(dir, "w.npy", SC_F32, n, 1, x, err, sizeof err), "%s", err);
	dir_names(dir, names, sizeof names);
	cr_assert_str_eq(names, "w.npy", "no temporary file is left");
	snprintf(path, sizeof path, "%s/w.npy", dir);
	read_back(path, back, 4096);
	cr_assert_eq(memcmp(back, x, sizeof x), 0);

	/* a write that fails mid-way (the file size limit: as a full disk does) leaves w.npy as it was */
	static float y[8192];
	pid_t pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		signal(SIGXFSZ, SIG_IGN);
		struct rlimit lim = {8192, 8192};
		setrlimit(RLIMIT_FSIZE, &lim);
		bool ok = sc_npy_save_file(dir, "w.npy", SC_F32, (const int64_t[]){8192}, 1, y, err, sizeof err);
		_exit(!ok && strcmp(err, "File too large") == 0 ? 0 : 1);
	}
	int status;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the failed write is reported as 'File too large'");
	dir_names(dir, names, sizeof names);
	cr_assert_str_eq(names, "w.npy", "the temporary file is removed");
	read_back(path, back, 4096);
	cr_assert_eq(memcmp(back, x, sizeof x), 0, "w.npy is untouched");

	/* a rename that fails (FILE is a folder) removes the temporary file */
	char sub[160];
	snprintf(sub, sizeof sub, "%s/d.npy", dir);
	cr_assert_eq(mkdir(sub, 0777), 0);
	snprintf(sub, sizeof sub, "%s/d.npy/keep", dir);
	cr_assert_eq(mkdir(sub, 0777), 0);
	cr_assert(!sc_npy_save_file(dir, "d.npy", SC_F32, n, 1, x, err, sizeof err));
	cr_assert(strcmp(err, "Is a directory") == 0 || strcmp(err, "Directory not empty") == 0, "%s", err);
	dir_names(dir, names, sizeof names);
	cr_assert_str_eq(names, "d.npy w.npy");

	/* a folder under a regular file: refused before any step, and by the save (root too) */
	snprintf(sub, sizeof sub, "%s/w.npy/out", dir);
	cr_assert(!sc_npy_check_dir(sub, err, sizeof err));
	cr_assert_str_eq(err, "Not a directory");
	cr_assert(!sc_npy_save_file(sub, "v.npy", SC_F32, n, 1, x, err, sizeof err));
	cr_assert_str_eq(err, "Not a directory");

	snprintf(sub, sizeof sub, "rm -rf '%s'", root);
	cr_assert_eq(system(sub), 0);
}

/* ---- initializers ---- */

Test(init, values_from_numpy)
{
	/* uniform(0, 1) of "x", seed 0, elements 0 1 2 100 of a (10, 11) tensor */
	float x[110];
	const int64_t g[2] = {10, 11}, z[2] = {0, 0};
	sc_init_host(x, SC_F32, SC_INIT_UNIFORM, "x", 0, g, 2, z, g, 0, 1);
	cr_assert(t_close("uniform x", (float[]){x[0], x[1], x[2], x[100]},
	                  (const float[]){0.201208233833313f, 0.5109687447547913f, 0.9408048391342163f, 0.4704093933105469f},
	                  4, 0, 0));
	/* normal(0.01) of "w1", seed 1: elements 0, 5, 77 */
	float w[80];
	sc_init_host(w, SC_F32, SC_INIT_NORMAL, "w1", 1, (const int64_t[]){80}, 1, (const int64_t[]){0},
	             (const int64_t[]){80}, 0.01, 0);
	cr_assert(t_close("normal w1", (float[]){w[0], w[5], w[77]},
	                  (const float[]){0.006420786492526531f, 0.0002848338335752487f, 0.019471585750579834f}, 3, 0, 0));
	/* randint(0, 10) of "labels", seed 7 */
	int32_t l[6];
	sc_init_host(l, SC_I32, SC_INIT_RANDINT, "labels", 7, (const int64_t[]){6}, 1, (const int64_t[]){0},
	             (const int64_t[]){6}, 0, 10);
	const int32_t want[6] = {4, 9, 1, 1, 5, 4};
	cr_assert_eq(memcmp(l, want, sizeof want), 0);
}

Test(init, float16_and_bfloat16_round_the_double_once)
{
	/* numpy: np.float16 of the initializer's double, and ref_eval.py's round_bf16 of it. uniform(0, 1) of "x",
	 * seed 0, elements 0 1 2 100: 0.201208233833313 0.5109687447547913 0.9408048391342163 0.4704093933105469 */
	uint16_t h[110], b[110];
	const int64_t g[2] = {10, 11}, z[2] = {0, 0};
	sc_init_host(h, SC_F16, SC_INIT_UNIFORM, "x", 0, g, 2, z, g, 0, 1);
	sc_init_host(b, SC_BF16, SC_INIT_UNIFORM, "x", 0, g, 2, z, g, 0, 1);
	cr_assert(h[0] == 0x3270 && h[1] == 0x3816 && h[2] == 0x3b87 && h[100] == 0x3787);
	cr_assert(b[0] == 0x3e4e && b[1] == 0x3f03 && b[2] == 0x3f71 && b[100] == 0x3ef1);
	/* normal(0.01) of "w1", seed 1, elements 0 5 77: 0.006420786683109876 0.00028483382363319774
	 * (a float16 subnormal) 0.019471586105641085 */
	uint16_t w[80], wb[80];
	const int64_t g1[1] = {80}, z1[1] = {0};
	sc_init_host(w, SC_F16, SC_INIT_NORMAL, "w1", 1, g1, 1, z1, g1, 0.01, 0);
	sc_init_host(wb, SC_BF16, SC_INIT_NORMAL, "w1", 1, g1, 1, z1, g1, 0.01, 0);
	cr_assert(w[0] == 0x1e93 && w[5] == 0x0cab && w[77] == 0x24fc);
	cr_assert(wb[0] == 0x3bd2 && wb[5] == 0x3995 && wb[77] == 0x3ca0);
	/* normal(1) of "w1", seed 1: elements whose float32 lands on a tie, so rounding through float32 would
	 * differ: 3336 is 0.10379028467037058 (float16 0x2ea5, not 0x2ea4), 177469 is 2.0859374692608643
	 * (bfloat16 0x4005, not 0x4006) */
	const int64_t big[1] = {200000};
	uint16_t one;
	sc_init_host(&one, SC_F16, SC_INIT_NORMAL, "w1", 1, big, 1, (const int64_t[]){3336}, (const int64_t[]){1}, 1, 0);
	cr_assert_eq(one, 0x2ea5);
	sc_init_host(&one, SC_BF16, SC_INIT_NORMAL, "w1", 1, big, 1, (const int64_t[]){177469}, (const int64_t[]){1}, 1,
	             0);
	cr_assert_eq(one, 0x4005);
	/* randint(0, 10) of "labels", seed 7, as float16: small integers are exact */
	uint16_t l[6];
	sc_init_host(l, SC_F16, SC_INIT_RANDINT, "labels", 7, (const int64_t[]){6}, 1, z1, (const int64_t[]){6}, 0, 10);
	cr_assert_eq(memcmp(l, ((const uint16_t[]){0x4400, 0x4880, 0x3c00, 0x3c00, 0x4500, 0x4400}), sizeof l), 0,
	             "4 9 1 1 5 4");
}

Test(init, a_slice_is_the_same_elements)
{
	/* uniform(-2, 3) of "b", seed 0: global elements 3 and 11 of a (4, 4) tensor */
	float s[4];
	const int64_t g[2] = {4, 4};
	sc_init_host(s, SC_F32, SC_INIT_UNIFORM, "b", 0, g, 2, (const int64_t[]){0, 3}, (const int64_t[]){4, 1}, -2, 3);
	cr_assert(t_close("uniform b column 3", (float[]){s[0], s[2]},
	                  (const float[]){1.605724573135376f, -1.903303623199463f}, 2, 0, 0));
	/* every slice of a 3-D tensor equals the same part of the whole */
	float whole[60], part[60];
	const int64_t g3[3] = {3, 4, 5}, st[3] = {1, 1, 2}, ld[3] = {2, 2, 3};
	sc_init_host(whole, SC_F32, SC_INIT_NORMAL, "t", 9, g3, 3, (const int64_t[]){0, 0, 0}, g3, 1.0, 0);
	sc_init_host(part, SC_F32, SC_INIT_NORMAL, "t", 9, g3, 3, st, ld, 1.0, 0);
	for (int64_t i = 0; i < 12; i++) {
		int64_t idx[3];
		t_unravel(i, ld, 3, idx);
		for (int d = 0; d < 3; d++)
			idx[d] += st[d];
		cr_assert_eq(part[i], whole[t_ravel(idx, g3, 3)]);
	}
}

/* Uneven shards: a (5, 7) whole in pieces of (3, 4) (2 x 2 ranks), the last
 * piece reaching past both dims, and a piece wholly past the end. Each real
 * element is the whole's, in every dtype; the padding is 0. */
Test(init, a_piece_past_the_whole_is_padded_with_zeros)
{
	enum { R = 5, C = 7 };
	const int64_t g[2] = {R, C}, z[2] = {0, 0}, ld[2] = {3, 4};
	static const sc_dtype dts[3] = {SC_F32, SC_BF16, SC_I32};
	static const sc_init_kind kinds[3] = {SC_INIT_NORMAL, SC_INIT_UNIFORM, SC_INIT_RANDINT};
	for (int k = 0; k < 3; k++) {
		size_t es = sc_dtype_size(dts[k]);
		char whole[R * C * 4], piece[12 * 4], zeros[12 * 4] = {0};
		sc_init_host(whole, dts[k], kinds[k], "w", 5, g, 2, z, g, -3, 9);
		for (int p = 0; p < 4; p++) {
			const int64_t st[2] = {3 * (p / 2), 4 * (p % 2)};
			memset(piece, 0x5a, sizeof piece);
			sc_init_host(piece, dts[k], kinds[k], "w", 5, g, 2, st, ld, -3, 9);
			for (int i = 0; i < 3; i++)
				for (int j = 0; j < 4; j++) {
					int64_t gi = st[0] + i, gj = st[1] + j;
					const char *want = gi < R && gj < C ? whole + (size_t)(gi * C + gj) * es : zeros;
					cr_assert_eq(memcmp(piece + (size_t)(i * 4 + j) * es, want, es), 0, "dtype %d piece %d (%d, %d)",
					             (int)dts[k], p, i, j);
				}
		}
		memset(piece, 0x5a, sizeof piece);
		sc_init_host(piece, dts[k], kinds[k], "w", 5, g, 2, (const int64_t[]){6, 0}, ld, -3, 9);
		cr_assert_eq(memcmp(piece, zeros, 12 * es), 0, "a piece past the end: all padding");
	}
}

/* sc_piece_real clips each dim; sc_piece_pad spreads a packed real part
 * over the piece in place, zeros around it, and sc_piece_unpad packs it
 * back. A (4, 3, 5) piece at (2, 0, 6) of (5, 3, 8): real (3, 3, 2). */
Test(init, piece_real_pad_unpad)
{
	const int64_t g[3] = {5, 3, 8}, st[3] = {2, 0, 6}, ld[3] = {4, 3, 5};
	int64_t real[3];
	cr_assert(sc_piece_real("t", g, 3, st, ld, real));
	cr_assert(real[0] == 3 && real[1] == 3 && real[2] == 2);
	cr_assert(!sc_piece_real("t", g, 3, (const int64_t[]){1, 0, 3}, ld, real), "a piece inside the whole");
	cr_assert(real[0] == 4 && real[1] == 3 && real[2] == 5);
	cr_assert(sc_piece_real("t", g, 3, (const int64_t[]){8, 0, 0}, ld, real));
	cr_assert(real[0] == 0 && real[1] == 3 && real[2] == 5, "past the end: no real rows");
	sc_piece_real("t", g, 3, st, ld, real);
	int32_t buf[60];
	for (int i = 0; i < 60; i++)
		buf[i] = i < 18 ? 100 + i : -1;   /* the packed (3, 3, 2), then garbage */
	sc_piece_pad(buf, sizeof *buf, 3, real, ld);
	for (int i = 0; i < 60; i++) {
		int64_t idx[3];
		t_unravel(i, ld, 3, idx);
		bool in = idx[0] < 3 && idx[2] < 2;
		cr_assert_eq(buf[i], in ? 100 + (idx[0] * 3 + idx[1]) * 2 + idx[2] : 0, "element %d", i);
	}
	sc_piece_unpad(buf, sizeof *buf, 3, real, ld);
	for (int i = 0; i < 18; i++)
		cr_assert_eq(buf[i], 100 + i, "packed again: %d", i);
}

Test(init, seed_and_name_change_the_stream)
{
	float a[4], b[4], c[4];
	const int64_t g[1] = {4}, z[1] = {0};
	sc_init_host(a, SC_F32, SC_INIT_UNIFORM, "w", 0, g, 1, z, g, 0, 1);
	sc_init_host(b, SC_F32, SC_INIT_UNIFORM, "w", 1, g, 1, z, g, 0, 1);
	sc_init_host(c, SC_F32, SC_INIT_UNIFORM, "v", 0, g, 1, z, g, 0, 1);
	cr_assert(memcmp(a, b, sizeof a) != 0 && memcmp(a, c, sizeof a) != 0);
	cr_assert_eq(sc_fnv1a64(""), 0xcbf29ce484222325ull);
	cr_assert_eq(sc_fnv1a64("a"), 0xaf63dc4c8601ec8cull);   /* the FNV-1a test vector */
}

/* ---- the command line ---- */

Test(options, forms_and_keys)
{
	char *argv[] = {"prog", "--input", "x=a.npy", "--param=w1=b.npy", "--output-dir=out", "--input", "y=c=d.npy",
	                "--input", "x=e.npy", "--steps", "5", NULL};
	sc_rt rt = {.argc = 11, .argv = argv};
	cr_assert_str_eq(sc_option(&rt, "--input", "x"), "e.npy", "the last one wins");
	cr_assert_str_eq(sc_option(&rt, "--input", "y"), "c=d.npy");
	cr_assert_str_eq(sc_option(&rt, "--param", "w1"), "b.npy");
	cr_assert_str_eq(sc_option(&rt, "--output-dir", NULL), "out");
	cr_assert_str_eq(sc_option(&rt, "--steps", NULL), "5");
	cr_assert_null(sc_option(&rt, "--input", "w1"));
	cr_assert_null(sc_option(&rt, "--param", "x"));
}

Test(options, log_and_log_every)
{
	char *argv[] = {"prog", "--log-every", "4", "--log=out/log.jsonl", NULL};
	sc_rt rt = {.argc = 4, .argv = argv};
	cr_assert_str_eq(sc_option(&rt, "--log-every", NULL), "4");
	cr_assert_str_eq(sc_option(&rt, "--log", NULL), "out/log.jsonl", "--log is not --log-every's prefix");
}

/* ---- learning-rate schedules ---- */

/* sc_learning_rate at MindSpore's global_step, against its docstrings'
 * examples (global_step 2) and values worked out by hand. */
Test(schedules, mindspore_values)
{
	const double eps = 1e-12;
	cr_assert_float_eq(sc_learning_rate(SC_LR_CONSTANT, (const double[]){0.3}, 7), 0.3, eps);
	/* nn.CosineDecayLR(0.01, 0.1, 4) at 2: 0.01 + 0.045 * (1 + cos(pi / 2)) = 0.055; held at min_lr after 4 */
	cr_assert_float_eq(sc_learning_rate(SC_LR_COSINE, (const double[]){0.01, 0.1, 4}, 2), 0.055, eps);
	cr_assert_float_eq(sc_learning_rate(SC_LR_COSINE, (const double[]){0.01, 0.1, 4}, 9), 0.01, eps);
	/* nn.WarmUpLR(0.1, 2): 0, 0.05, 0.1, 0.1 */
	cr_assert_float_eq(sc_learning_rate(SC_LR_WARMUP, (const double[]){0.1, 2}, 0), 0.0, eps);
	cr_assert_float_eq(sc_learning_rate(SC_LR_WARMUP, (const double[]){0.1, 2}, 1), 0.05, eps);
	cr_assert_float_eq(sc_learning_rate(SC_LR_WARMUP, (const double[]){0.1, 2}, 5), 0.1, eps);
	/* nn.PolynomialDecayLR(0.1, 0.01, 4, 0.5) at 2: 0.09 * sqrt(0.5) + 0.01; with update_decay_steps
	 * at 6: decay over 8, 0.09 * (1 - 6 / 8)^0.5 + 0.01 = 0.055 */
	cr_assert_float_eq(sc_learning_rate(SC_LR_POLYNOMIAL, (const double[]){0.1, 0.01, 4, 0.5, 0}, 2),
	                   0.09 * sqrt(0.5) + 0.01, eps);
	cr_assert_float_eq(sc_learning_rate(SC_LR_POLYNOMIAL, (const double[]){0.1, 0.01, 4, 0.5, 1}, 6), 0.055, eps);
	cr_assert_float_eq(sc_learning_rate(SC_LR_POLYNOMIAL, (const double[]){0.1, 0.01, 4, 0.5, 1}, 0), 0.1, eps);
	/* nn.ExponentialDecayLR(0.1, 0.9, 4) at 2: 0.1 * 0.9^0.5; is_stair: 0.1 until 4, then 0.09 */
	cr_assert_float_eq(sc_learning_rate(SC_LR_EXPONENTIAL, (const double[]){0.1, 0.9, 4, 0}, 2), 0.1 * sqrt(0.9), eps);
	cr_assert_float_eq(sc_learning_rate(SC_LR_EXPONENTIAL, (const double[]){0.1, 0.9, 4, 1}, 3), 0.1, eps);
	cr_assert_float_eq(sc_learning_rate(SC_LR_EXPONENTIAL, (const double[]){0.1, 0.9, 4, 1}, 4), 0.09, eps);
	/* CosineWithWarmUpLR(1e-3, warmup 2, total 6, lr_end 1e-5, init 1e-4): 1e-4, 5.5e-4, then 1e-3 at 2,
	 * halfway (4) 5.05e-4, lr_end from 6 on */
	const double *cw = (const double[]){1e-3, 2, 6, 1e-5, 1e-4};
	cr_assert_float_eq(sc_learning_rate(SC_LR_COSINE_WARMUP, cw, 0), 1e-4, eps);
	cr_assert_float_eq(sc_learning_rate(SC_LR_COSINE_WARMUP, cw, 1), 5.5e-4, eps);
	cr_assert_float_eq(sc_learning_rate(SC_LR_COSINE_WARMUP, cw, 2), 1e-3, eps);
	cr_assert_float_eq(sc_learning_rate(SC_LR_COSINE_WARMUP, cw, 4), 5.05e-4, eps);
	cr_assert_float_eq(sc_learning_rate(SC_LR_COSINE_WARMUP, cw, 9), 1e-5, eps);
}
