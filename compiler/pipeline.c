/* pipeline.c: the stages in order, once. Everyone who needs the compiler's
 * work (the driver, the search counting a plan's memory, the unit tests, the
 * fuzz targets) runs this one function with the stages it wants: from `start`
 * (parse; or a later stage, with what the stages before it made: the search
 * brings a module, its flat graph and strategies and starts at lower; a test
 * resumes a compilation after looking at it) to `stop`. A stage runs only when the ones before it found no
 * error. Between the lowered stages, in builds with SHARDC_VERIFY (the
 * sanitized and fuzz builds), verify_lowered checks the program's invariants
 * and names the stage that broke one. The stages a caller asked to see
 * (dump_after) are printed into c->dumps as the stage leaves them. */
#include "pipeline.h"
#include "uneven.h"
#include "scatter_state.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *const stage_names[STAGE_COUNT] = {
	[STAGE_PARSE] = "parse", [STAGE_CHECK] = "check", [STAGE_INFER] = "infer", [STAGE_VALIDATE] = "validate",
	[STAGE_FLATTEN] = "flatten", [STAGE_AUTOCAST] = "autocast", [STAGE_KERNELS] = "kernels", [STAGE_STRATEGIES] = "strategies",
	[STAGE_SEARCH] = "search", [STAGE_LOWER] = "lower", [STAGE_DIFFERENTIATE] = "differentiate",
	[STAGE_RECOMPUTE] = "recompute", [STAGE_ACCUMULATE] = "accumulate", [STAGE_BUCKET] = "bucket", [STAGE_FUSE] = "fuse",
	[STAGE_PLAN] = "plan memory",
};

const char *stage_word(Stage s)
{
	return s == STAGE_PLAN ? "plan" : stage_names[s];
}

Stage stage_named(const char *name)
{
	for (int s = 0; s < STAGE_COUNT; s++)
		if (!strcmp(name, stage_names[s]) || !strcmp(name, stage_word((Stage)s)))
			return (Stage)s;
	return STAGE_COUNT;
}

bool stage_dumpable(Stage s)
{
	return (s >= STAGE_CHECK && s <= STAGE_VALIDATE) || s >= STAGE_SEARCH;
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Command-line values are IR values; bare words are taken as strings. */
static bool apply_overrides(Compilation *c)
{
	for (int i = 0; i < c->noverrides; i++) {
		const Override *o = &c->overrides[i];
		StrBuf b = {0};
		if (o->text[0] == '(' || o->text[0] == '"' || o->text[0] == '-' || (o->text[0] >= '0' && o->text[0] <= '9') ||
		    !strcmp(o->text, "true") || !strcmp(o->text, "false"))
			sb_puts(&b, o->text);
		else
			sb_printf(&b, "\"%s\"", o->text);
		if (c->nholders == (int)(sizeof c->holders / sizeof c->holders[0]))
			die("more than %d command-line settings", c->nholders);
		Module **holder = &c->holders[c->nholders++];
		Lit *v = parse_value_text(o->flag, b.data, holder);
		sb_free(&b);
		const char *err = "not a value";
		if (!v || !context_apply(&c->m->ctx, o->key, v, &err)) {
			fprintf(c->d->out, "shardc: %s '%s': %s\n", o->flag, o->text, err);
			c->status = EXIT_USAGE;
			return false;
		}
		if (c->m->ctx.dataset_tuple == v)
			c->m->ctx.dataset_src = (*holder)->src;
	}
	return true;
}

/* recompute_layers: the train block's recompute: true (--recompute). */
static bool set_recompute(Compilation *c)
{
	if (!c->m->train) {
		fprintf(c->d->out, "shardc: --recompute: %s has no train block (recomputation is for training)\n", c->name);
		c->status = EXIT_USAGE;
		return false;
	}
	c->m->train->recompute = RECOMPUTE_LAYERS;
	return true;
}

/* Runs stage s; false when it found an error. */
static bool run_stage(Compilation *c, Stage s)
{
	Module *m = c->m;
	switch (s) {
	case STAGE_PARSE:
		c->m = parse_module(c->name, c->text, c->len, c->d);
		c->owns_module = true;
		return c->d->nerrors == 0;
	case STAGE_CHECK:
		return check_context(m, c->d) && apply_overrides(c) && context_stages(m, c->d) && check_names(m, c->d) &&
		       (!c->recompute || set_recompute(c));
	case STAGE_INFER:
		return infer_shapes(m, c->d);
	case STAGE_VALIDATE:
		return check_strategies(m, c->d);
	case STAGE_FLATTEN:
		c->flat = flatten(m);
		return true;
	case STAGE_AUTOCAST:
		autocast(m, c->flat);
		return true;
	case STAGE_KERNELS:
		return check_kernels(m, c->flat, c->d) && check_stages(m, c->flat, c->d);
	case STAGE_STRATEGIES: {
		int *split = NULL;
		bool micro_auto = m->train && m->train->micro_auto;
		if (micro_auto && m->ctx.parallel_mode != PM_AUTO && m->ctx.stages > 1)
			diag_warning(c->d, m->src, m->train->span, "micro_batches \"auto\" is the search's (auto_parallel): in %s "
			             "mode the %lld stages run the step's batch as one micro-batch; give micro_batches a count, "
			             "with the graph written for one micro-batch", parallel_mode_name(m->ctx.parallel_mode),
			             (long long)m->ctx.stages);
		if ((m->ctx.pipeline_stages != 1 || micro_auto) && c->strategy_in) {   /* stages, batch as the file's */
			int r = strategy_stages(c->strategy_in, m, c->flat, &split, c->d);
			if (r == 2)
				c->status = EXIT_USAGE;
			if (r)
				return false;
		} else if ((m->ctx.pipeline_stages != 1 || micro_auto) && m->ctx.parallel_mode == PM_AUTO) {
			c->search.plan = pipeline_run;   /* the search places the stages ("auto": each count), picks M */
			return search_stages(m, c->flat, &c->st, &c->search, c->d);
		}
		bool ok = assign_strategies(m, c->flat, &c->st, c->d);
		c->st.split = split;
		return ok;
	}
	case STAGE_SEARCH: {
		c->search.plan = pipeline_run;   /* the search's memory count: its candidates lowered and planned here */
		if (!search_strategies(m, c->flat, &c->st, &c->search, c->d))
			return false;
		if (c->strategy_in) {
			int r = strategy_load(c->strategy_in, m, c->flat, &c->st, c->d);
			if (r == 2)
				c->status = EXIT_USAGE;
			if (r)
				return false;
		}
		autocast_strategies(m, c->flat, &c->st);
		constant_layouts(m, c->flat, &c->st);
		return true;
	}
	case STAGE_LOWER: {
		c->low = lower(m, c->flat, &c->st, &c->search.cluster);
		bool state_ok = check_state_layouts(c->low, c->d);   /* scatter_state.c */
		return check_uneven(c->low, 0, c->d) && state_ok;
	}
	case STAGE_DIFFERENTIATE:
		if (m->train)
			differentiate(c->low);
		return !m->train || check_uneven(c->low, c->low->nfwd, c->d);
	case STAGE_RECOMPUTE:
		if (m->train)
			recompute(c->low);
		return true;
	case STAGE_ACCUMULATE:
		if (m->train)
			accumulate_gradients(c->low);
		return true;
	case STAGE_BUCKET:
		if (m->train)
			bucket_gradients(c->low, (int64_t)c->search.cluster.bucket_bytes);
		return true;
	case STAGE_FUSE:
		fuse_operators(c->low);
		return true;
	case STAGE_PLAN:
		c->plan = c->slab_only ? emit_plan_slab(c->low) : emit_plan(c->low, c->name);
		return true;
	case STAGE_COUNT: break;
	}
	die("no stage %d", (int)s);
}

/* The program as stage s leaves it, when the caller asked to see it: the
 * module's text before flattening, one text per rank once lowered. */
static void dump_stage(Compilation *c, Stage s)
{
	if (!(c->dump_after & 1u << s) || !stage_dumpable(s))
		return;
	StageDump *out = &c->dumps[s];
	if (s <= STAGE_VALIDATE) {
		out->n = 1;
		out->text = xcalloc(1, sizeof(StrBuf));
		print_module(&out->text[0], c->m);
	} else if (s == STAGE_SEARCH) {
		return;   /* step_parallel_begin needs the layouts lowering computes: written after STAGE_LOWER */
	} else {
		if (s == STAGE_LOWER && (c->dump_after & 1u << STAGE_SEARCH)) {
			StageDump *begin = &c->dumps[STAGE_SEARCH];
			begin->n = 1;
			begin->text = xcalloc(1, sizeof(StrBuf));
			dump_begin(&begin->text[0], c->low);
		}
		out->n = (int)lowered_ranks(c->low);
		out->text = xcalloc((size_t)out->n, sizeof(StrBuf));
		for (int r = 0; r < out->n; r++)
			dump_end(&out->text[r], c->low, r);
	}
}

bool pipeline_run(Compilation *c)
{
	double t = now();
	bool ok = true;
	for (Stage s = c->start; s <= c->stop && ok; s++) {
		ok = run_stage(c, s);
		if (ok && s >= STAGE_LOWER)
			verify_lowered(c->low, stage_names[s]);
		if (ok)
			dump_stage(c, s);
		double n = now();
		c->seconds[s] = n - t;
		t = n;
		c->reached = s;
	}
	if (!ok && c->status == 0)
		c->status = EXIT_MODEL;
	return ok;
}

void compilation_free(Compilation *c)
{
	for (int s = 0; s < STAGE_COUNT; s++) {
		for (int r = 0; r < c->dumps[s].n; r++)
			sb_free(&c->dumps[s].text[r]);
		free(c->dumps[s].text);
	}
	if (c->plan)
		emit_free(c->plan);
	if (c->low)
		lowered_free(c->low);
	if (c->owns_module)
		module_free(c->m);
	for (int i = 0; i < c->nholders; i++)
		module_free(c->holders[i]);
	memset(c, 0, sizeof *c);
}
