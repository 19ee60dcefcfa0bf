/* bench_direct.c: the bench's baseline: the models of make bench computed
 * directly, with OpenBLAS's cblas_sgemm for the matmuls and plain C loops for
 * the rest, as one would write them by hand.
 *
 *   bench_direct matmul_relu M K N [--steps S] [--seed K] [--out FILE.npy]
 *   bench_direct transformer B S H A F [--prefix P] [--steps S] [--seed K] [--out FILE.npy]
 *
 * matmul_relu is the MatMul -> ReLU sample's model (ir-samples/matmul_relu_semi.ir,
 * tools/gen_matmul_relu.py): ReLU(x (M, K) @ w (K, N)). transformer is one
 * pre-LayerNorm block of ir-samples/transformer_block.ir and tools/gen_gpt.py
 * on x (B*S, H), A heads, MLP width F; parameters are named P + "wq" etc. (P is
 * "" for the sample, "l0." for gen_gpt.py). Inputs and parameters get the
 * deterministic initializers of docs/output.md with the given context seed, so the
 * result can be compared with the generated program's output_0.npy.
 *
 * Setup (allocation, initializers) is outside the timed loop, which runs the
 * graph S times, as the generated program's loop does; the program prints
 * "time: S runs in T s" as the generated programs do. OpenBLAS runs one
 * thread unless OPENBLAS_NUM_THREADS says otherwise, as in shardc's cpu
 * runtime. Where the hand-written code naturally differs from the graph it
 * says so: the attention reads Q, K, V per head through strides instead of
 * Reshape + Transpose copies, and the scale is sgemm's alpha. */
#define _POSIX_C_SOURCE 200809L
#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* OpenBLAS's own; cblas.h declares it in OpenBLAS's build but not in every other. */
void openblas_set_num_threads(int);

static void die(const char *msg)
{
	fprintf(stderr, "bench_direct: %s\n", msg);
	exit(2);
}

static float *alloc(int64_t n)
{
	float *p = aligned_alloc(256, ((size_t)n * sizeof(float) + 255) / 256 * 256);
	if (!p)
		die("out of memory");
	memset(p, 0, (size_t)n * sizeof(float));
	return p;
}

/* ---- initializers (docs/output.md) ---- */

static uint64_t fnv1a64(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

static uint64_t splitmix64(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double unit(uint64_t key, uint64_t j)
{
	return (double)(splitmix64(key + j) >> 40) * (1.0 / 16777216.0);
}

static uint64_t init_key(const char *prefix, const char *name, uint64_t seed)
{
	char full[256];
	snprintf(full, sizeof full, "%s%s", prefix, name);
	return fnv1a64(full) ^ (seed * 0x9e3779b97f4a7c15ull);
}

static float *uniform(const char *prefix, const char *name, uint64_t seed, int64_t n, double lo, double hi)
{
	float *p = alloc(n);
	uint64_t key = init_key(prefix, name, seed);
	for (int64_t i = 0; i < n; i++)
		p[i] = (float)(lo + (hi - lo) * unit(key, (uint64_t)i));
	return p;
}

static float *normal(const char *prefix, const char *name, uint64_t seed, int64_t n, double std)
{
	float *p = alloc(n);
	uint64_t key = init_key(prefix, name, seed);
	for (int64_t i = 0; i < n; i++)
		p[i] = (float)(std * sqrt(-2 * log(1 - unit(key, 2 * (uint64_t)i))) *
		               cos(6.283185307179586 * unit(key, 2 * (uint64_t)i + 1)));
	return p;
}

static float *constant(int64_t n, float v)
{
	float *p = alloc(n);
	for (int64_t i = 0; i < n; i++)
		p[i] = v;
	return p;
}

/* ---- output ---- */

static void save_npy(const char *file, const float *p, int64_t rows, int64_t cols)
{
	char hdr[128];
	int len = snprintf(hdr, sizeof hdr, "{'descr': '<f4', 'fortran_order': False, 'shape': (%lld, %lld), }",
	                   (long long)rows, (long long)cols);
	int total = (10 + len + 1 + 63) / 64 * 64;   /* magic, version, length, header, '\n': 64-aligned */
	FILE *f = fopen(file, "wb");
	if (!f)
		die("cannot write the --out file");
	unsigned short hlen = (unsigned short)(total - 10);
	fwrite("\x93NUMPY\x01\x00", 1, 8, f);
	fputc(hlen & 0xff, f);
	fputc(hlen >> 8, f);
	fputs(hdr, f);
	for (int i = 10 + len; i < total - 1; i++)
		fputc(' ', f);
	fputc('\n', f);
	fwrite(p, sizeof *p, (size_t)(rows * cols), f);
	if (fclose(f))
		die("cannot write the --out file");
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- the operators, by hand ---- */

static void matmul(const float *a, const float *b, float *c, int m, int n, int k)
{
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a, k, b, n, 0.0f, c, n);
}

/* y = (x - mean) / sqrt(var + eps) * gamma + beta over each row of cols */
static void layer_norm(const float *x, const float *gamma, const float *beta, float *y, int64_t rows, int64_t cols)
{
	for (int64_t r = 0; r < rows; r++) {
		const float *xr = x + r * cols;
		float *yr = y + r * cols;
		double s = 0, v = 0;
		for (int64_t j = 0; j < cols; j++)
			s += xr[j];
		float mean = (float)(s / (double)cols);
		for (int64_t j = 0; j < cols; j++)
			v += (double)(xr[j] - mean) * (xr[j] - mean);
		float rstd = (float)(1.0 / sqrt(v / (double)cols + 1e-5));
		for (int64_t j = 0; j < cols; j++)
			yr[j] = (xr[j] - mean) * rstd * gamma[j] + beta[j];
	}
}

static void softmax_rows(float *x, int64_t rows, int64_t cols)
{
	for (int64_t r = 0; r < rows; r++) {
		float *xr = x + r * cols, mx = -INFINITY, sum = 0;
		for (int64_t j = 0; j < cols; j++)
			mx = fmaxf(mx, xr[j]);
		for (int64_t j = 0; j < cols; j++)
			sum += xr[j] = expf(xr[j] - mx);
		for (int64_t j = 0; j < cols; j++)
			xr[j] /= sum;
	}
}

static float gelu(float v)
{
	return 0.5f * v * (1 + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
}

/* ---- the models ---- */

typedef struct {
	int64_t steps;
	uint64_t seed;
	const char *prefix, *out;
} Opts;

static double matmul_relu(int m, int k, int n, const Opts *o)
{
	float *x = uniform("", "x", o->seed, (int64_t)m * k, 0, 1);
	float *w = normal("", "w", o->seed, (int64_t)k * n, 0.01);
	float *y = alloc((int64_t)m * n);
	int64_t mn = (int64_t)m * n;
	double t0 = now();
	for (int64_t s = 0; s < o->steps; s++) {
		matmul(x, w, y, m, n, k);
		for (int64_t i = 0; i < mn; i++)
			y[i] = y[i] > 0 ? y[i] : 0;
	}
	double t = now() - t0;
	if (o->out)
		save_npy(o->out, y, m, n);
	return t;
}

static double transformer(int B, int S, int H, int A, int F, const Opts *o)
{
	const char *p = o->prefix;
	int R = B * S, Dh = H / A;
	int64_t RH = (int64_t)R * H, RF = (int64_t)R * F;
	float *x = uniform("", "x", o->seed, RH, -1, 1);
	float scale = (float)(1.0 / sqrt((double)Dh));
	float *g1 = constant(H, 1), *b1 = constant(H, 0), *g2 = constant(H, 1), *b2 = constant(H, 0);
	float *wq = normal(p, "wq", o->seed, (int64_t)H * H, 0.02), *wk = normal(p, "wk", o->seed, (int64_t)H * H, 0.02);
	float *wv = normal(p, "wv", o->seed, (int64_t)H * H, 0.02), *wo = normal(p, "wo", o->seed, (int64_t)H * H, 0.02);
	float *fc1 = normal(p, "fc1.weight", o->seed, (int64_t)H * F, 0.02), *fc1b = constant(F, 0);
	float *fc2 = normal(p, "fc2.weight", o->seed, (int64_t)F * H, 0.02), *fc2b = constant(H, 0);
	float *ln = alloc(RH), *q = alloc(RH), *k = alloc(RH), *v = alloc(RH), *ctx = alloc(RH);
	float *res1 = alloc(RH), *out = alloc(RH), *h = alloc(RF), *sc = alloc((int64_t)S * S);
	double t0 = now();
	for (int64_t step = 0; step < o->steps; step++) {
		layer_norm(x, g1, b1, ln, R, H);
		matmul(ln, wq, q, R, H, H);
		matmul(ln, wk, k, R, H, H);
		matmul(ln, wv, v, R, H, H);
		for (int b = 0; b < B; b++)
			for (int a = 0; a < A; a++) {   /* head a of batch b: rows b*S.., columns a*Dh.. */
				int64_t off = (int64_t)b * S * H + (int64_t)a * Dh;
				cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, S, S, Dh, scale, q + off, H, k + off, H,
				            0.0f, sc, S);
				softmax_rows(sc, S, S);
				cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, S, Dh, S, 1.0f, sc, S, v + off, H, 0.0f,
				            ctx + off, H);
			}
		matmul(ctx, wo, res1, R, H, H);
		for (int64_t i = 0; i < RH; i++)
			res1[i] += x[i];
		layer_norm(res1, g2, b2, ln, R, H);
		matmul(ln, fc1, h, R, F, H);
		for (int64_t r = 0; r < R; r++)
			for (int j = 0; j < F; j++)
				h[r * F + j] = gelu(h[r * F + j] + fc1b[j]);
		matmul(h, fc2, out, R, H, F);
		for (int64_t r = 0; r < R; r++)
			for (int j = 0; j < H; j++)
				out[r * H + j] += fc2b[j] + res1[r * H + j];
	}
	double t = now() - t0;
	if (o->out)
		save_npy(o->out, out, R, H);
	return t;
}

static int pos_int(const char *s)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (*end || v <= 0 || v > 1 << 30)
		die("sizes must be positive integers");
	return (int)v;
}

int main(int argc, char **argv)
{
	Opts o = {.steps = 1, .seed = 0, .prefix = "", .out = NULL};
	const char *pos[8];
	int npos = 0;
	for (int i = 1; i < argc; i++) {
		if (i + 1 < argc && strcmp(argv[i], "--steps") == 0)
			o.steps = pos_int(argv[++i]);
		else if (i + 1 < argc && strcmp(argv[i], "--seed") == 0)
			o.seed = strtoull(argv[++i], NULL, 10);
		else if (i + 1 < argc && strcmp(argv[i], "--prefix") == 0)
			o.prefix = argv[++i];
		else if (i + 1 < argc && strcmp(argv[i], "--out") == 0)
			o.out = argv[++i];
		else if (argv[i][0] == '-' || npos == 8)
			die("usage: bench_direct matmul_relu M K N | transformer B S H A F  [--steps S] [--seed K] "
			    "[--prefix P] [--out FILE.npy]");
		else
			pos[npos++] = argv[i];
	}
	if (!getenv("OPENBLAS_NUM_THREADS"))
		openblas_set_num_threads(1);
	double t;
	if (npos == 4 && strcmp(pos[0], "matmul_relu") == 0)
		t = matmul_relu(pos_int(pos[1]), pos_int(pos[2]), pos_int(pos[3]), &o);
	else if (npos == 6 && strcmp(pos[0], "transformer") == 0) {
		int H = pos_int(pos[3]), A = pos_int(pos[4]);
		if (H % A)
			die("H must divide by A");
		t = transformer(pos_int(pos[1]), pos_int(pos[2]), H, A, pos_int(pos[5]), &o);
	} else
		die("usage: bench_direct matmul_relu M K N | transformer B S H A F  [options]");
	printf("time: %lld runs in %.6f s, %.3f ms each\n", (long long)o.steps, t, 1e3 * t / (double)o.steps);
	return 0;
}
