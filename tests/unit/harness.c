/* harness.c: the shared unit-test harness; see harness.h. */
#include "harness.h"

#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>

#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/lsan_interface.h>
#endif

/* Runs not yet freed: a test that fails an assertion stops before run_free,
 * and what it holds stays reachable instead of showing up as a leak. */
static Run *live[8];

static void keep(Run *r, bool on)
{
	for (int i = 0; i < 8; i++)
		if (on ? !live[i] : live[i] == r) {
			live[i] = on ? r : NULL;
			return;
		}
}

Run *run_pipeline(const char *name, const char *text, size_t len, Stage stop, const Override *o, int n)
{
	Run *r = calloc(1, sizeof *r);
	keep(r, true);
	r->text = malloc(len + 1);
	memcpy(r->text, text, len);
	r->text[len] = 0;
	r->f = open_memstream(&r->out, &r->outlen);
	r->d = (Diag){.out = r->f};
	r->c = (Compilation){.stop = stop, .name = name, .text = r->text, .len = (int)len, .d = &r->d,
	                     .overrides = o, .noverrides = n, .search = {.out = r->f}};
	cluster_default(&r->c.search.cluster);
	r->ok = pipeline_run(&r->c);
	r->m = r->c.m;
	return r;
}

void run_resume(Run *r, Stage from, Stage stop)
{
	r->c.start = from;
	r->c.stop = stop;
	r->ok = pipeline_run(&r->c);
}

Run *run_passes(const char *name, const char *text, size_t len, Passes upto)
{
	static const Stage stop[] = {
		[PASSES_PARSE] = STAGE_PARSE, [PASSES_SHAPES] = STAGE_INFER,
		[PASSES_ALL] = STAGE_VALIDATE, [PASSES_PRINT] = STAGE_VALIDATE,
	};
	Run *r = run_pipeline(name, text, len, stop[upto], NULL, 0);
	if (upto >= PASSES_PRINT && r->ok)
		print_module(&r->printed, r->m);
	return r;
}

Run *parse_len(const char *text, size_t len)
{
	return run_passes("t.ir", text, len, PASSES_PARSE);
}

Run *parse(const char *text)
{
	return parse_len(text, strlen(text));
}

Run *compile(const char *text)
{
	return run_passes("t.ir", text, strlen(text), PASSES_ALL);
}

/* The stage list, as main.c runs it (the one place the tests write it). */
Lowered *lower_run(Run *r, const Cluster *c, Stage upto)
{
	expect_clean(r);
	if (c)
		r->c.search.cluster = *c;
	run_resume(r, STAGE_FLATTEN, upto);
	cr_assert(r->ok, "the pipeline stopped before %s:\n%s", stage_names[upto], msgs(r));
	return r->c.low;
}

const char *msgs(Run *r)
{
	fflush(r->f);
	return r->out;
}

int leak_check(void)
{
#ifdef __SANITIZE_ADDRESS__
	return __lsan_do_recoverable_leak_check();
#else
	return 0;
#endif
}

void run_free(Run *r)
{
	keep(r, false);
	compilation_free(&r->c);
	fclose(r->f);
	free(r->out);
	free(r->text);
	sb_free(&r->printed);
	sb_free(&r->type);
	free(r);
	cr_assert_eq(leak_check(), 0, "memory leaked (LeakSanitizer report above)");
}

void expect_clean(Run *r)
{
	cr_assert(r->ok && r->d.nerrors == 0, "expected no errors, got:\n%s", msgs(r));
}

void expect_msg(Run *r, const char *want)
{
	cr_assert(strstr(msgs(r), want), "expected the message\n  %s\ngot:\n%s", want, msgs(r));
}
