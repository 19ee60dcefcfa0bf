/* profile.c: SHARDC_PROFILE=1: GPU time per kind of call (profile.h).
 *
 * Each outermost runtime call records a CUDA event before and after its
 * work on the rank's stream (a call made inside another one is the outer
 * one's time). Spans wait in a pool; when it fills, and at the end, the
 * stream is synchronized and their times are added to their kind's row, so
 * the profile costs one host synchronization per SPANS calls (their
 * time is not counted). The table
 * gives each kind's time, its share, its rate in TFLOP/s and GB/s and the
 * fraction of the GPU's peak that rate is (the larger of arithmetic and
 * bandwidth), and the gaps: time on the stream that no call covers (launch
 * overhead, host work the GPU waited for). Peaks are the datasheet's dense
 * figures for the GPUs named in `peaks`; SHARDC_PEAK="TFLOPS_HALF,GBS"
 * gives others (TF32 is half of TFLOPS_HALF, Float32 without tensor cores
 * a fifteenth, as on the H100). */
#include "profile.h"

#include <stdlib.h>
#include <string.h>

#include "rt_internal.h"

enum { SPANS = 8192, KINDS = 96 };

typedef struct {
	const char *name;
	sc_peak_kind peak;
	long calls;
	double ms, flops, bytes;
} Kind;

typedef struct {
	int kind;
	cudaEvent_t a, b;
} Span;

struct sc_prof {
	cudaStream_t stream;
	Span span[SPANS];
	int n;                       /* spans waiting */
	int depth;                   /* calls open */
	Kind kind[KINDS];
	int nkinds;
	double wall;                 /* ms from each pool's first start to its last end, summed */
	bool stopped;                /* after the last step: spans no longer counted */
	long steps;                  /* steps counted (sc_prof_step) */
	double peak_half, peak_gbs;  /* TFLOP/s on half operands, GB/s; 0: unknown */
	char device[256];
};

static void check(cudaError_t e, const char *call)
{
	if (e != cudaSuccess)
		SC_DIE("profile: %s: %s", call, cudaGetErrorString(e));
}

/* Datasheet dense peaks: BFloat16/Float16 tensor cores (TFLOP/s), memory (GB/s). */
static const struct {
	const char *name;
	double half, gbs;
} peaks[] = {
	{"H100 80GB HBM3", 989.4, 3350},  /* SXM */
	{"H100 PCIe", 756.5, 2000},
	{"H100 NVL", 835.5, 3900},
	{"H200", 989.4, 4800},
	{"A100", 312, 2039},
};

sc_prof *sc_prof_new(cudaStream_t stream, int device)
{
	const char *on = getenv("SHARDC_PROFILE");
	if (!on || strcmp(on, "1") != 0)
		return NULL;
	sc_prof *p = calloc(1, sizeof *p);
	if (!p)
		SC_DIE("out of memory");
	p->stream = stream;
	for (int i = 0; i < SPANS; i++) {
		check(cudaEventCreate(&p->span[i].a), "cudaEventCreate");
		check(cudaEventCreate(&p->span[i].b), "cudaEventCreate");
	}
	struct cudaDeviceProp prop;
	check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
	snprintf(p->device, sizeof p->device, "%s", prop.name);
	for (size_t i = 0; i < sizeof peaks / sizeof peaks[0]; i++)
		if (strstr(prop.name, peaks[i].name)) {
			p->peak_half = peaks[i].half;
			p->peak_gbs = peaks[i].gbs;
			break;
		}
	const char *given = getenv("SHARDC_PEAK");
	if (given && sscanf(given, "%lf,%lf", &p->peak_half, &p->peak_gbs) != 2)
		SC_DIE("SHARDC_PEAK='%s': expected TFLOPS,GBS (the GPU's dense half-precision peak and memory bandwidth)", given);
	return p;
}

static int kind_of(sc_prof *p, const char *name, sc_peak_kind peak)
{
	for (int i = 0; i < p->nkinds; i++)
		if (p->kind[i].name == name || strcmp(p->kind[i].name, name) == 0)
			return i;
	if (p->nkinds == KINDS)
		SC_DIE("profile: more than %d kinds of call", KINDS);
	p->kind[p->nkinds] = (Kind){.name = name, .peak = peak};
	return p->nkinds++;
}

/* Adds the waiting spans' times to their kinds. */
static void flush(sc_prof *p)
{
	if (p->n == 0)
		return;
	check(cudaEventSynchronize(p->span[p->n - 1].b), "cudaEventSynchronize");
	for (int i = 0; i < p->n; i++) {
		float ms;
		check(cudaEventElapsedTime(&ms, p->span[i].a, p->span[i].b), "cudaEventElapsedTime");
		p->kind[p->span[i].kind].ms += ms;
	}
	float wall;
	check(cudaEventElapsedTime(&wall, p->span[0].a, p->span[p->n - 1].b), "cudaEventElapsedTime");
	p->wall += wall;
	p->n = 0;
}

int sc_prof_begin(sc_prof *p, const char *name, double flops, double bytes, sc_peak_kind peak)
{
	if (p->depth++ > 0 || p->stopped)
		return -1;
	if (p->n == SPANS)
		flush(p);
	int k = kind_of(p, name, peak);
	p->kind[k].calls++;
	p->kind[k].flops += flops;
	p->kind[k].bytes += bytes;
	Span *s = &p->span[p->n];
	s->kind = k;
	check(cudaEventRecord(s->a, p->stream), "cudaEventRecord");
	return p->n++;
}

void sc_prof_end(sc_prof *p, int span)
{
	p->depth--;
	if (span >= 0)
		check(cudaEventRecord(p->span[span].b, p->stream), "cudaEventRecord");
}

void sc_prof_step(sc_prof *p, bool first, bool last)
{
	if (!p)
		return;
	flush(p);
	if (first) {   /* start over: the first step and all before it are warm-up */
		for (int i = 0; i < p->nkinds; i++)
			p->kind[i].calls = 0, p->kind[i].ms = p->kind[i].flops = p->kind[i].bytes = 0;
		p->wall = 0;
		p->steps = 0;
	} else {
		p->steps++;
	}
	p->stopped = last && p->steps > 0;
}

static int by_time(const void *a, const void *b)
{
	double x = ((const Kind *)a)->ms, y = ((const Kind *)b)->ms;
	return (x < y) - (x > y);
}

/* The peak a kind's arithmetic runs against, TFLOP/s (0: unknown). */
static double flop_peak(const sc_prof *p, sc_peak_kind k)
{
	switch (k) {
	case SC_PEAK_HALF: return p->peak_half;
	case SC_PEAK_TF32: return p->peak_half / 2;
	case SC_PEAK_F32: return p->peak_half / 15;
	case SC_PEAK_MEM: return 0;
	}
	return 0;
}

static void print_table(sc_prof *p, FILE *f, int rank)
{
	double busy = 0, wall = p->wall;
	for (int i = 0; i < p->nkinds; i++)
		busy += p->kind[i].ms;
	qsort(p->kind, p->nkinds, sizeof p->kind[0], by_time);
	if (p->steps > 0)
		fprintf(f, "profile, rank %d, %s, %ld steps after the first: a step %.3f ms on the stream, %.3f ms in calls, "
		        "%.3f ms in gaps between them\n", rank, p->device, p->steps, wall / p->steps, busy / p->steps,
		        wall > busy ? (wall - busy) / p->steps : 0.0);
	else
		fprintf(f, "profile, rank %d, %s, the whole run: %.3f ms on the stream, %.3f ms in calls, %.3f ms in gaps "
		        "between them\n", rank, p->device, wall, busy, wall > busy ? wall - busy : 0.0);
	if (p->peak_half > 0)
		fprintf(f, "peaks: %.1f TFLOP/s on half operands, %.1f on TF32, %.1f on Float32, %.0f GB/s\n", p->peak_half,
		        p->peak_half / 2, p->peak_half / 15, p->peak_gbs);
	double per = p->steps > 0 ? (double)p->steps : 1;   /* the calls and ms columns: a step's, else the run's */
	fprintf(f, "%-22s %8s %11s %6s %10s %9s %9s %7s\n", "call", p->steps > 0 ? "calls/st" : "calls",
	        p->steps > 0 ? "ms/step" : "ms", "share", "us/call", "TFLOP/s", "GB/s", "of peak");
	for (int i = 0; i < p->nkinds; i++) {
		const Kind *k = &p->kind[i];
		double s = k->ms / 1e3, tf = k->ms > 0 ? k->flops / s / 1e12 : 0, gb = k->ms > 0 ? k->bytes / s / 1e9 : 0;
		double fp = flop_peak(p, k->peak), frac = 0;
		if (fp > 0 && tf / fp > frac)
			frac = tf / fp;
		if (p->peak_gbs > 0 && gb / p->peak_gbs > frac)
			frac = gb / p->peak_gbs;
		char tfs[16] = "-", gbs[16] = "-", fr[16] = "-";
		if (k->flops > 0)
			snprintf(tfs, sizeof tfs, "%.1f", tf);
		if (k->bytes > 0)
			snprintf(gbs, sizeof gbs, "%.0f", gb);
		if (frac > 0)
			snprintf(fr, sizeof fr, "%.1f%%", 100 * frac);
		fprintf(f, "%-22s %8.0f %11.3f %5.1f%% %10.1f %9s %9s %7s\n", k->name, (double)k->calls / per, k->ms / per,
		        busy > 0 ? 100 * k->ms / busy : 0.0, 1e3 * k->ms / (double)k->calls, tfs, gbs, fr);
	}
}

void sc_prof_report(sc_prof *p, FILE *f, int rank)
{
	if (!p)
		return;
	flush(p);
	if (f)
		print_table(p, f, rank);
	for (int i = 0; i < SPANS; i++) {
		cudaEventDestroy(p->span[i].a);
		cudaEventDestroy(p->span[i].b);
	}
	free(p);
}
