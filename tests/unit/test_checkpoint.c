/* test_checkpoint.c: the recomputation policies (checkpoint.c) on a GPT
 * stack: every layer keeps its two residual sums and recomputes the rest;
 * selective recomputation takes attention's scores, their scaling and
 * Softmax only. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static bool *marks(const char *path, RecomputePolicy policy, Run **run, FlatGraph **flat)
{
	size_t len;
	char *text = read_file(path, &len);
	cr_assert_not_null(text, "cannot read %s (make writes it)", path);
	Run *r = run_passes(path, text, len, PASSES_ALL);
	free(text);
	cr_assert(r->ok, "%s", msgs(r));
	FlatGraph *f = flatten(r->m);
	bool *marked = xcalloc((size_t)f->g->nnodes, sizeof *marked);
	recompute_policy(r->m, f, policy, marked);
	*run = r;
	*flat = f;
	return marked;
}

/* The node computing value `name` (a flat value name such as l1.res1). */
static int node_named(const FlatGraph *f, const char *name)
{
	for (int i = 0; i < f->g->nnodes; i++)
		if (!strcmp(f->g->values[f->g->nodes[i].result].name, name))
			return i;
	cr_assert_fail("no value %s", name);
	return -1;
}

/* Layer 1 keeps its two residual sums and recomputes the rest; in layer 0,
 * whose residual is the graph's input (always kept), every value after the
 * attention's last read of an earlier one is a cut point too. */
Test(checkpoint, layers_keep_the_residual_sums)
{
	Run *r;
	FlatGraph *f;
	bool *m = marks("tests/unit/data/gpt2_train.ir", RECOMPUTE_LAYERS, &r, &f);
	StrBuf kept = {0};
	for (int i = 0; i < f->g->nnodes; i++)
		if (!m[i])
			sb_printf(&kept, " %s", f->g->values[f->g->nodes[i].result].name);
	cr_assert_str_eq(kept.data, " l0.ln1 l0.ctx l0.ctxt l0.ctx2 l0.attn l0.res1 l0.out l1.res1 l1.out loss");
	sb_free(&kept);
	free(m);
	run_free(r);
}

Test(checkpoint, selective_takes_attention_scores)
{
	Run *r;
	FlatGraph *f;
	bool *m = marks("tests/unit/data/gpt2_train.ir", RECOMPUTE_SELECTIVE, &r, &f);
	int n = 0;
	for (int i = 0; i < f->g->nnodes; i++)
		n += m[i];
	for (int l = 0; l < 2; l++) {
		static const char *const names[] = {"scores", "scaled", "probs"};
		for (int k = 0; k < 3; k++) {
			char name[32];
			snprintf(name, sizeof name, "l%d.%s", l, names[k]);
			cr_assert(m[node_named(f, name)], "%s recomputed", name);
		}
	}
	cr_assert_eq(n, 6, "scores, scaled and probs of 2 layers, nothing else: %d", n);
	free(m);
	run_free(r);
}

Test(checkpoint, none_marks_nothing)
{
	Run *r;
	FlatGraph *f;
	bool *m = marks("tests/unit/data/gpt2_train.ir", RECOMPUTE_NONE, &r, &f);
	for (int i = 0; i < f->g->nnodes; i++)
		cr_assert(!m[i]);
	free(m);
	run_free(r);
}
