/* fuzz_pipeline.c: libFuzzer target for the whole compiler. Feeds any bytes
 * through every stage the driver runs: parse, context, names, shapes and
 * strategies, then flatten, strategies by mode and the search, lowering (and
 * the backward pass with a train block), the emit check, and every output
 * (the dumps, manifest.json, strategy.json, each rank's program, Makefile
 * and run.sh) written into memory, never to disk. Diagnostics go to
 * /dev/null. Any crash, die(), leak or sanitizer report is a bug.
 *
 * Work is capped so that one input stays well under libFuzzer's timeout:
 * inputs of more than MAX_DEVICES devices or MAX_OPS operators once Calls are
 * inlined (nested Calls multiply) stop after the front end, which
 * fuzz_parser.c covers. `make fuzz` runs it after fuzz_parser. */
#include "shardc.h"

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

static void back_end(Module *m, Diag *d, FILE *devnull)
{
	FlatGraph *flat = flatten(m);
	Strategies st;
	SearchOptions search = {.out = devnull};
	cluster_default(&search.cluster);
	if (!assign_strategies(m, flat, &st, d) || !search_strategies(m, flat, &st, &search, d))
		return;
	Lowered *low = lower(m, flat, &st);
	if (m->train) {
		differentiate(low);
		recompute(low);
		bucket_gradients(low, (int64_t)search.cluster.bucket_bytes);
	}
	if (!emit_check(low, d))
		return;
	StrBuf b = {0};
	free(manifest_json(low));
	free(strategy_json(low));
	dump_begin(&b, low);
	for (int64_t r = 0; r < low->device_num; r++) {
		b.len = 0;
		dump_end(&b, low, r);
	}
	Program *p = emit_plan(low, "fuzz.ir");
	emit_program(&b, p);
	for (int64_t r = 0; r < low->device_num; r++) {
		b.len = 0;
		emit_table(&b, p, r);
	}
	emit_free(p);
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
	Module *m = parse_module("fuzz.ir", text, (int)size, &d);
	bool ok = d.nerrors == 0 && check_context(m, &d);
	ok = ok && check_names(m, &d);
	ok = ok && infer_shapes(m, &d);
	ok = ok && check_strategies(m, &d);
	if (ok && small_enough(m))
		back_end(m, &d, devnull);
	module_free(m);
	free(text);
	return 0;
}
