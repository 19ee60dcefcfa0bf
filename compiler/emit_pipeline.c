/* emit_pipeline.c: what program.c holds for pipeline stages (docs/output.md,
 * Pipeline stages): each operator under its stage's guard, a step's
 * micro-batch inputs in their slots, and the passes in the order of the
 * stage's schedule (schedule.c). */
#include "emit_internal.h"

#include <stdlib.h>
#include <string.h>

void indent(StrBuf *b, const StrBuf *text)
{
	for (size_t i = 0; i < text->len; i++) {
		if ((i == 0 || text->data[i - 1] == '\n') && text->data[i] != '\n')
			sb_putc(b, '\t');
		sb_putc(b, text->data[i]);
	}
}

/* text, whole lines indented alike, run only by the ranks of pipeline stage
 * `stage`: an `if (stage == s)` around it (none without pipeline stages, or
 * where text is only a comment). */
void on_stage(StrBuf *b, const Program *p, int stage, StrBuf *text)
{
	size_t tabs = 0;
	while (tabs < text->len && text->data[tabs] == '\t')
		tabs++;
	bool code = false;   /* a line that is not a comment */
	for (const char *line = text->data; line && *line && !code; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
		line += strspn(line, "\t");
		code = *line != '\n' && strncmp(line, "/*", 2) != 0;
	}
	if (p->l->stages == 1 || stage < 0 || !code) {
		sb_puts(b, text->data ? text->data : "");
		return;
	}
	const char *nl = strchr(text->data, '\n');
	sb_printf(b, "%.*sif (stage == %d)", (int)tabs, text->data, stage);
	if (nl && nl[1] == '\0') {   /* one line */
		sb_printf(b, " %s", text->data + tabs);
		return;
	}
	sb_puts(b, " {\n");
	indent(b, text);
	sb_printf(b, "%.*s}\n", (int)tabs, text->data);
}

/* A pipeline's step begins with its micro-batches' inputs, each in its own
 * slot: under the schedule a stage runs micro-batch m's backward pass after
 * later micro-batches' forward passes, and reads m's inputs then. */
void emit_pipeline_inputs(StrBuf *b, const Program *p, int64_t n)
{
	const Lowered *l = p->l;
	sb_printf(b, "\t\tfor (int64_t micro = 0; micro < %lld; micro++) {   /* the micro-batches' inputs, one slot each */\n"
	          "\t\t\tsc_data_step(rt, data, (step - 1) * %lld + micro + 1);   /* --data: the run's micro-batch, from 1 */\n",
	          (long long)n, (long long)n);
	for (int v = 0, k = 0; v < l->nparams; v++)
		if (may_stream(l, v)) {
			if (step_rows(l, v))   /* without --data each slot holds its rows of the step's batch (emit_input) */
				sb_printf(b, "\t\t\tif (sc_data_fed(data, %d) && sc_data_at(data, %d) != (void *)(slab + %lld + micro * "
				          "%lld))\n", k, k, (long long)p->offset[v], (long long)p->stride[v]);
			else
				sb_printf(b, "\t\t\tif (sc_data_at(data, %d) != (void *)(slab + %lld + micro * %lld))   /* slot 0 is "
				          "read into */\n", k, (long long)p->offset[v], (long long)p->stride[v]);
			sb_printf(b, "\t\t\t\tsc_copy(rt, slab + %lld + micro * %lld, sc_data_at(data, %d), %lld);\n",
			          (long long)p->offset[v], (long long)p->stride[v], k, (long long)value_bytes(&l->values[v]));
			k++;
		}
	sb_puts(b, "\t\t}\n");
}

/* The passes of a pipeline's step, in its stage's order: each entry of
 * schedule[stage] one micro-batch's forward or backward pass (schedule.c),
 * after the values it holds one of per micro-batch point at its slot. */
void emit_pipeline_passes(StrBuf *b, const Program *p, int64_t n, const StrBuf *forward, const StrBuf *backward)
{
	const Lowered *l = p->l;
	int64_t *act = xmalloc(sizeof(int64_t) * (size_t)(2 * n));
	sb_printf(b, "\t\tstatic const int64_t schedule[%lld][%lld] = {   /* 2m: micro-batch m's forward pass; 2m + 1: "
	          "its backward pass */\n", (long long)l->stages, (long long)(2 * n));
	for (int64_t s = 0; s < l->stages; s++) {
		int na = pipeline_actions(l->m->ctx.scheduler, l->stages, n, s, act);
		sb_puts(b, "\t\t\t{");
		for (int k = 0; k < na; k++)
			sb_printf(b, k ? ", %lld" : "%lld", (long long)act[k]);
		sb_printf(b, "},   /* stage %lld:", (long long)s);
		for (int k = 0; k < na; k++)
			sb_printf(b, " %c%lld", act[k] % 2 ? 'B' : 'F', (long long)(act[k] / 2));
		sb_puts(b, " */\n");
	}
	free(act);
	sb_printf(b, "\t\t};\n\t\tfor (int64_t pass = 0; pass < %lld; pass++) {   /* %s */\n"
	          "\t\t\tconst int64_t micro = schedule[stage][pass] / 2;\n\t\t\tconst int last_micro = micro == %lld;\n"
	          "\t\t\tconst int64_t batch = (step - 1) * %lld + micro + 1;   /* the run's micro-batches, from 1 */\n"
	          "\t\t\t(void)batch;\n",
	          (long long)(2 * n), l->m->ctx.scheduler == SCHED_GPIPE ? "GPipe: every forward pass, then every backward pass"
	          : "1F1B: warm-up forward passes, one forward and one backward, the backward passes left",
	          (long long)(n - 1), (long long)n);
	bool *named = named_values(p);
	for (int v = 0; v < l->nvalues; v++)
		if (p->slots[v] > 1 && p->offset[v] >= 0 && named[v])
			sb_printf(b, "\t\t\t%s = (%s *)(slab + %lld + micro %% %d * %lld);\n", p->cname[v],
			          c_type(l->values[v].type.dtype), (long long)p->offset[v], p->slots[v], (long long)p->stride[v]);
	free(named);
	StrBuf once = {0};
	sb_puts(b, "\t\t\tif (schedule[stage][pass] % 2 == 0) {   /* micro-batch micro's forward pass */\n");
	indent(&once, forward);
	indent(b, &once);
	once.len = 0;
	sb_puts(b, "\t\t\t} else {   /* its backward pass */\n");
	indent(&once, backward);
	indent(b, &once);
	sb_puts(b, "\t\t\t}\n");
	sb_free(&once);
}
