/* fuzz_pipeline.c: libFuzzer target for the whole compiler. Feeds any bytes
 * through every stage the driver runs (pipeline_run, parse to the memory
 * plan, with the verifier between the lowered stages), and every output
 * (the dumps, manifest.json, strategy.json, each rank's program, Makefile
 * and run.sh) written into memory, never to disk. Diagnostics go to
 * /dev/null. Any crash, die(), leak or sanitizer report is a bug.
 *
 * Work is capped so that one input stays well under libFuzzer's timeout:
 * inputs of more than MAX_DEVICES devices or MAX_OPS operators once Calls are
 * inlined (nested Calls multiply) stop after the front end, which
 * fuzz_parser.c covers. `make fuzz` runs it after fuzz_parser. */
#include "pipeline.h"

#include <stdlib.h>
#include <string.h>

enum { MAX_DEVICES = 16, MAX_OPS = 64 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Operators after inlining, counted per graph in file order (a callee comes
 * before its callers) and saturated past MAX_OPS. */
static bool small_enough(const Module *m)
{
	if (m->ctx.device_num > MAX_DEVICES || m->ngraphs == 0)
		return false;
	int64_t *ops = xcalloc((size_t)m->ngraphs, sizeof *ops);
	for (int i = 0; i < m->ngraphs; i++) {
		const Graph *g = m->graphs[i];
		for (int j = 0; j < g->nnodes && ops[i] <= MAX_OPS; j++) {
			int64_t add = 1;
			for (int c = 0; g->nodes[j].op == OP_CALL && c < i; c++)
				if (m->graphs[c] == g->nodes[j].a.callee)
					add = ops[c];
			ops[i] += add;
		}
	}
	bool ok = ops[m->ngraphs - 1] <= MAX_OPS;
	free(ops);
	return ok;
}

/* Every output of a compilation run to its memory plan, into memory. */
static void outputs(const Lowered *low, const Program *p)
{
	StrBuf b = {0};
	free(manifest_json(low));
	free(strategy_json(low));
	dump_begin(&b, low);
	for (int64_t r = 0; r < low->device_num; r++) {
		b.len = 0;
		dump_end(&b, low, r);
	}
	emit_program(&b, p);
	for (int64_t r = 0; r < low->device_num; r++) {
		b.len = 0;
		emit_table(&b, p, r);
	}
	b.len = 0;
	emit_ranks(&b, low);
	b.len = 0;
	emit_makefile(&b, low, "/nonexistent");
	emit_run_sh(&b, low);
	sb_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *devnull;
	if (!devnull)
		devnull = fopen("/dev/null", "w");
	char *text = xmalloc(size + 1);
	memcpy(text, data, size);
	text[size] = 0;
	Diag d = {.out = devnull, .caret = true};
	Compilation c = {.stop = STAGE_VALIDATE, .name = "fuzz.ir", .text = text, .len = (int)size, .d = &d,
	                 .search = {.out = devnull}};
	cluster_default(&c.search.cluster);
	if (pipeline_run(&c) && small_enough(c.m)) {
		c.start = STAGE_FLATTEN;
		c.stop = STAGE_PLAN;
		if (pipeline_run(&c))
			outputs(c.low, c.plan);
	}
	compilation_free(&c);
	free(text);
	return 0;
}
