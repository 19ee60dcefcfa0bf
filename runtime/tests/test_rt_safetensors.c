/* test_rt_safetensors.c: safetensors headers, slices and dtype conversions
 * on host buffers (no MPI; tests/run_safetensors.sh runs the collective
 * side through generated programs).
 *
 * Files are written here byte by byte as the format says (8-byte length,
 * JSON, data), independently of the writer, which is then checked by
 * reading back what it wrote. Expected conversions were computed with numpy
 * (/usr/bin/python3: astype(float16), and tools/ref_eval.py's round_bf16 on
 * float32, or on the float64 for F64) and are quoted. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "rt_internal.h"
#include "rt_test.h"

/* A temporary file holding an 8-byte length (len, or the JSON's length when
 * len < 0), the JSON and the data; its descriptor, *size its bytes. */
static FILE *st_file(const char *json, long long len, const void *data, size_t n, int64_t *size)
{
	FILE *f = tmpfile();
	cr_assert(f);
	uint64_t hl = len < 0 ? strlen(json) : (uint64_t)len;
	unsigned char head[8];
	for (int i = 0; i < 8; i++)
		head[i] = (unsigned char)(hl >> (8 * i));
	cr_assert_eq(fwrite(head, 1, 8, f), 8);
	cr_assert_eq(fwrite(json, 1, strlen(json), f), strlen(json));
	if (n)
		cr_assert_eq(fwrite(data, 1, n, f), n);
	fflush(f);
	*size = 8 + (int64_t)strlen(json) + (int64_t)n;
	return f;
}

Test(safetensors, header_table)
{
	const float d[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
	int64_t size;
	FILE *f = st_file("{\"__metadata__\": {\"format\": \"pt\"}, \"b.w\": {\"dtype\": \"F32\", \"shape\": [2, 3], "
	                  "\"data_offsets\": [16, 40]}, \"a\": {\"dtype\": \"F32\", \"shape\": [4], \"data_offsets\": [0, 16]},"
	                  " \"s\": {\"dtype\": \"I8\", \"shape\": [], \"data_offsets\": [40, 40]}}   ",
	                  -1, d, sizeof d, &size);
	sc_st_header h;
	char err[256];
	cr_assert(sc_st_read_header(fileno(f), size, &h, err, sizeof err), "%s", err);
	cr_assert_eq(h.n, 3, "three tensors; __metadata__ is none");
	cr_assert_str_eq(h.t[0].name, "a", "sorted by name");
	const sc_st_tensor *t = sc_st_find(&h, "b.w");
	cr_assert(t && t->ndim == 2 && t->dims[0] == 2 && t->dims[1] == 3 && t->begin == 16 && t->end == 40);
	cr_assert_str_eq(t->dtype, "F32");
	cr_assert_eq(h.data_bytes, 40);
	cr_assert_null(sc_st_find(&h, "c"));
	cr_assert_eq(sc_st_find(&h, "s")->ndim, 0);
	float got[6];
	cr_assert(sc_st_read_slice(fileno(f), &h, t, SC_F32, (const int64_t[]){2, 3}, 2, (const int64_t[]){0, 0},
	                           (const int64_t[]){2, 3}, got, err, sizeof err), "%s", err);
	cr_assert_eq(memcmp(got, d + 4, sizeof got), 0);
	sc_st_header_free(&h);
	fclose(f);
}

/* every slice of a (4, 5, 6) float32 tensor, stored at an offset after another tensor */
Test(safetensors, slices_of_a_3d_tensor)
{
	float x[8 + 120];
	for (int i = 0; i < 128; i++)
		x[i] = (float)(i - 8);
	int64_t size;
	FILE *f = st_file("{\"pad\": {\"dtype\": \"F32\", \"shape\": [8], \"data_offsets\": [0, 32]},"
	                  " \"x\": {\"dtype\": \"F32\", \"shape\": [4, 5, 6], \"data_offsets\": [32, 512]}}",
	                  -1, x, sizeof x, &size);
	sc_st_header h;
	char err[256];
	cr_assert(sc_st_read_header(fileno(f), size, &h, err, sizeof err), "%s", err);
	const int64_t g[3] = {4, 5, 6};
	const int64_t starts[][3] = {{0, 0, 0}, {2, 0, 0}, {1, 2, 3}, {0, 4, 0}, {3, 1, 5}, {0, 0, 3}};
	const int64_t sizes[][3] = {{4, 5, 6}, {2, 5, 6}, {2, 3, 3}, {4, 1, 6}, {1, 4, 1}, {4, 5, 3}};
	for (int k = 0; k < 6; k++) {
		float got[120], want[120];
		int64_t n = t_numel(sizes[k], 3), idx[3];
		for (int64_t i = 0; i < n; i++) {
			t_unravel(i, sizes[k], 3, idx);
			for (int d = 0; d < 3; d++)
				idx[d] += starts[k][d];
			want[i] = (float)t_ravel(idx, g, 3);
		}
		cr_assert(sc_st_read_slice(fileno(f), &h, sc_st_find(&h, "x"), SC_F32, g, 3, starts[k], sizes[k], got, err,
		                           sizeof err), "%s", err);
		cr_assert(t_close("slice", got, want, n, 0, 0), "slice %d", k);
	}
	sc_st_header_free(&h);
	fclose(f);
}

/* One tensor of dtype `dtype` holding the bytes data (n of them, count elements), read as dt into out. */
static void read_as(const char *dtype, const void *data, size_t n, int64_t count, sc_dtype dt, void *out)
{
	char json[256], err[256];
	snprintf(json, sizeof json, "{\"t\": {\"dtype\": \"%s\", \"shape\": [%lld], \"data_offsets\": [0, %zu]}}", dtype,
	         (long long)count, n);
	int64_t size;
	FILE *f = st_file(json, -1, data, n, &size);
	sc_st_header h;
	cr_assert(sc_st_read_header(fileno(f), size, &h, err, sizeof err), "%s", err);
	cr_assert(sc_st_read_slice(fileno(f), &h, &h.t[0], dt, (const int64_t[]){count}, 1, (const int64_t[]){0},
	                           (const int64_t[]){count}, out, err, sizeof err), "%s as %s: %s", dtype,
	          sc_dtype_name(dt), err);
	sc_st_header_free(&h);
	fclose(f);
}

Test(safetensors, every_float_dtype_to_every_float_type)
{
	/* 1/3, 65504, 2^-24, -0, inf, -2.5, NaN, 1 + 2^-11 + 2^-30 (just over a float16 tie), 3.4e38 */
	const double d[9] = {1.0 / 3, 65504, 0x1p-24, -0.0, INFINITY, -2.5, NAN, 1 + 0x1p-11 + 0x1p-30, 3.4e38};
	float f4[9];
	for (int i = 0; i < 9; i++)
		f4[i] = (float)d[i];
	const uint16_t f2[9] = {0x3555, 0x7bff, 0x0001, 0x8000, 0x7c00, 0xc100, 0x7e00, 0x3c00, 0x7c00};
	const uint16_t b2[9] = {0x3eab, 0x4780, 0x3380, 0x8000, 0x7f80, 0xc020, 0x7fc0, 0x3f80, 0x7f80};
	float got4[9];
	uint16_t got2[9];
	/* F64: to float32 to nearest, to float16 and bfloat16 straight from the double (1 + 2^-11 + 2^-30 is
	 * float16 0x3c01, where rounding through float32 would give the tie's even 0x3c00) */
	read_as("F64", d, sizeof d, 9, SC_F32, got4);
	cr_assert(memcmp(got4, f4, 6 * sizeof *f4) == 0 && isnan(got4[6]) && got4[7] == f4[7] && got4[8] == f4[8]);
	read_as("F64", d, sizeof d, 9, SC_F16, got2);
	cr_assert_eq(memcmp(got2, ((const uint16_t[]){0x3555, 0x7bff, 0x0001, 0x8000, 0x7c00, 0xc100, 0x7e00, 0x3c01,
	                                             0x7c00}), sizeof got2), 0);
	read_as("F64", d, sizeof d, 9, SC_BF16, got2);
	cr_assert_eq(memcmp(got2, b2, sizeof got2), 0);
	/* F32: itself; float16 and bfloat16 rounded once */
	read_as("F32", f4, sizeof f4, 9, SC_F32, got4);
	cr_assert_eq(memcmp(got4, f4, sizeof f4), 0);
	read_as("F32", f4, sizeof f4, 9, SC_F16, got2);
	cr_assert_eq(memcmp(got2, f2, sizeof got2), 0);
	read_as("F32", f4, sizeof f4, 9, SC_BF16, got2);
	cr_assert_eq(memcmp(got2, b2, sizeof got2), 0);
	/* F16: exact to float32, itself, rounded to bfloat16 (1/3 in float16 is 0.333251953125: bfloat16 0x3eab) */
	read_as("F16", f2, sizeof f2, 9, SC_F32, got4);
	for (int i = 0; i < 9; i++)
		cr_assert(i == 6 ? isnan(got4[i]) : got4[i] == sc_f16_to_float(f2[i]), "element %d", i);
	read_as("F16", f2, sizeof f2, 9, SC_F16, got2);
	cr_assert_eq(memcmp(got2, f2, sizeof got2), 0);
	read_as("F16", f2, sizeof f2, 9, SC_BF16, got2);
	cr_assert_eq(memcmp(got2, ((const uint16_t[]){0x3eab, 0x4780, 0x3380, 0x8000, 0x7f80, 0xc020, 0x7fc0, 0x3f80,
	                                             0x7f80}), sizeof got2), 0);
	/* BF16: exact to float32, itself, rounded to float16 (65536 overflows float16: inf) */
	read_as("BF16", b2, sizeof b2, 9, SC_F32, got4);
	for (int i = 0; i < 9; i++)
		cr_assert(i == 6 ? isnan(got4[i]) : got4[i] == sc_bf16_to_float(b2[i]), "element %d", i);
	read_as("BF16", b2, sizeof b2, 9, SC_BF16, got2);
	cr_assert_eq(memcmp(got2, b2, sizeof got2), 0);
	read_as("BF16", b2, sizeof b2, 9, SC_F16, got2);
	cr_assert_eq(memcmp(got2, ((const uint16_t[]){0x3558, 0x7c00, 0x0001, 0x8000, 0x7c00, 0xc100, 0x7e00, 0x3c00,
	                                             0x7c00}), sizeof got2), 0);
}

Test(safetensors, integers_and_bools_as_themselves)
{
	const int64_t i8[3] = {-5, 1ll << 40, 7};
	const int32_t i4[3] = {-1, 7, 2147483647};
	const uint8_t b[3] = {0, 1, 2};
	int64_t g8[3];
	int32_t g4[3];
	uint8_t gb[3];
	read_as("I64", i8, sizeof i8, 3, SC_I64, g8);
	cr_assert_eq(memcmp(g8, i8, sizeof i8), 0);
	read_as("I32", i4, sizeof i4, 3, SC_I32, g4);
	cr_assert_eq(memcmp(g4, i4, sizeof i4), 0);
	read_as("BOOL", b, sizeof b, 3, SC_BOOL, gb);
	cr_assert(gb[0] == 0 && gb[1] == 1 && gb[2] == 1, "bools normalized to 0/1");
}

/* The header (length len, or the JSON's) and data must fail with want, at the header or at tensor "t"
 * read as dt with shape gdims. */
static void expect_bad(const char *json, long long len, const void *data, size_t n, sc_dtype dt, const int64_t *gdims,
                       int ndim, const char *want)
{
	int64_t size, zero[SC_MAX_DIMS] = {0};
	FILE *f = st_file(json, len, data, n, &size);
	sc_st_header h;
	char err[512] = "";
	float buf[64];
	bool ok = sc_st_read_header(fileno(f), size, &h, err, sizeof err);
	if (ok) {
		const sc_st_tensor *t = sc_st_find(&h, "t");
		cr_assert(t, "no tensor t in %s", json);
		ok = sc_st_read_slice(fileno(f), &h, t, dt, gdims, ndim, zero, gdims, buf, err, sizeof err);
		sc_st_header_free(&h);
	}
	cr_assert(!ok, "accepted a file that should fail with: %s", want);
	cr_assert(strstr(err, want), "error '%s' does not say '%s'", err, want);
	fclose(f);
}

Test(safetensors, broken_files)
{
	const float d[4] = {0};
	const int64_t two[1] = {2}, four[1] = {4}, tt[2] = {2, 2};
	const char *f32x2 = "{\"t\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}}";
	/* the file: shorter than its length; a length past the file; a length that is no header at all */
	int64_t size;
	FILE *f = tmpfile();
	cr_assert_eq(fwrite("\x10\x00\x00", 1, 3, f), 3);
	fflush(f);
	sc_st_header h;
	char err[256] = "";
	cr_assert(!sc_st_read_header(fileno(f), 3, &h, err, sizeof err));
	cr_assert(strstr(err, "is truncated: 3 bytes, less than the header's 8-byte length"), "%s", err);
	fclose(f);
	(void)size;
	expect_bad(f32x2, 200, d, 8, SC_F32, two, 1, "is truncated: its header is 200 bytes, and 69 follow its length");
	expect_bad(f32x2, 1ll << 40, d, 8, SC_F32, two, 1, "has a header of 1099511627776 bytes (at most 100000000");
	expect_bad(f32x2, -1, d, 4, SC_F32, two, 1,
	           "is truncated: tensor 't' ends at byte 8 of the data, which holds 4 bytes");
	/* the JSON */
	expect_bad("{\"t\": {\"dtype\": \"F32\",, }", -1, d, 8, SC_F32, two, 1, "has a header that is not JSON: line 1");
	expect_bad("[1, 2]", -1, d, 8, SC_F32, two, 1, "has a header that is not a JSON object");
	expect_bad("{\"t\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}, \"t\": {}}", -1, d, 8, SC_F32,
	           two, 1, "has a header that is not JSON");   /* a duplicate name */
	expect_bad("{\"t\": {\"shape\": [2], \"data_offsets\": [0, 8]}}", -1, d, 8, SC_F32, two, 1,
	           "tensor 't' has no \"dtype\" string");
	expect_bad("{\"t\": {\"dtype\": \"F32\", \"shape\": [2, -1], \"data_offsets\": [0, 8]}}", -1, d, 8, SC_F32, two, 1,
	           "tensor 't' has a \"shape\" that is not a list of sizes");
	expect_bad("{\"t\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [8, 0]}}", -1, d, 8, SC_F32, two, 1,
	           "tensor 't' has no \"data_offsets\" [begin, end] with begin <= end");
	expect_bad("{\"t\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0]}}", -1, d, 8, SC_F32, two, 1,
	           "no \"data_offsets\"");
	expect_bad("{\"__metadata__\": 3, \"t\": {}}", -1, d, 8, SC_F32, two, 1, "\"__metadata__\" is not an object");
	/* the tensor against the parameter */
	expect_bad(f32x2, -1, d, 8, SC_F32, four, 1, "has shape (2,), expected (4,)");
	expect_bad(f32x2, -1, d, 8, SC_F32, tt, 2, "has shape (2,), expected (2, 2)");
	expect_bad("{\"t\": {\"dtype\": \"F32\", \"shape\": [1,1,1,1,1,1,1,1,2], \"data_offsets\": [0, 8]}}", -1, d, 8,
	           SC_F32, two, 1, "has shape of more than 8 dims, expected (2,)");
	expect_bad("{\"t\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 12]}}", -1, d, 16, SC_F32, two, 1,
	           "has data_offsets [0, 12]: 12 bytes, but F32 of (2,) is 8");
	expect_bad("{\"t\": {\"dtype\": \"I8\", \"shape\": [2], \"data_offsets\": [0, 2]}}", -1, d, 8, SC_F32, two, 1,
	           "has dtype I8, which is not read as float32 (F64, F32, F16 and BF16 are)");
	expect_bad(f32x2, -1, d, 8, SC_I32, two, 1, "has dtype F32, which is not read as int32 (I32 is)");
	expect_bad("{\"t\": {\"dtype\": \"I32\", \"shape\": [2], \"data_offsets\": [0, 8]}}", -1, d, 8, SC_BF16, two, 1,
	           "has dtype I32, which is not read as bfloat16 (F64, F32, F16 and BF16 are)");
}

/* What sc_st_write_header writes reads back: names, dtypes, shapes, contiguous offsets, the padding. */
Test(safetensors, header_written_reads_back)
{
	sc_st_piece p[3] = {
		{.name = "w.b", .dt = SC_BF16, .ndim = 2, .gdims = {3, 5}},
		{.name = "a", .dt = SC_F32, .ndim = 1, .gdims = {7}},
		{.name = "s", .dt = SC_I64, .ndim = 0},
	};
	FILE *f = tmpfile();
	cr_assert(sc_st_write_header(f, p, 3));
	long hl = ftell(f);
	cr_assert_eq(hl % 8, 0, "the data starts 8-byte aligned");
	char zeros[30 + 28 + 8] = {0};
	cr_assert_eq(fwrite(zeros, 1, sizeof zeros, f), sizeof zeros);
	fflush(f);
	char text[512] = "";
	cr_assert_eq(pread(fileno(f), text, (size_t)hl - 8, 8), hl - 8);
	cr_assert(strstr(text, "{\"w.b\":{\"dtype\":\"BF16\",\"shape\":[3,5],\"data_offsets\":[0,30]},\"a\":{\"dtype\":"
	                       "\"F32\",\"shape\":[7],\"data_offsets\":[30,58]},\"s\":{\"dtype\":\"I64\",\"shape\":[],"
	                       "\"data_offsets\":[58,66]},\"__metadata__\":{\"format\":\"pt\"}}"), "%s", text);
	sc_st_header h;
	char err[256];
	cr_assert(sc_st_read_header(fileno(f), hl + (long)sizeof zeros, &h, err, sizeof err), "%s", err);
	cr_assert_eq(h.n, 3);
	const sc_st_tensor *t = sc_st_find(&h, "a");
	cr_assert(t && t->begin == 30 && t->end == 58 && !strcmp(t->dtype, "F32"));
	cr_assert(sc_st_read_slice(fileno(f), &h, sc_st_find(&h, "w.b"), SC_BF16, (const int64_t[]){3, 5}, 2,
	                           (const int64_t[]){0, 0}, (const int64_t[]){3, 5}, NULL, err, sizeof err), "%s", err);
	sc_st_header_free(&h);
	fclose(f);
}
