/* harness.h: what the unit tests share for compiling IR text in memory and
 * looking at the result.
 *
 * A Run is one module: its text, the compiler's messages (read back from a
 * memstream as `NAME:LINE:COL: error: message`), and how far the passes got.
 * Runs not yet freed stay reachable, so a test that fails an assertion
 * before run_free reports no leak; run_free itself asks LeakSanitizer for a
 * leak check, since its report at exit does not fail a Criterion test. */
#ifndef HARNESS_H
#define HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "pipeline.h"

/* One module and what the compiler said about it. */
typedef struct {
	char *text;              /* owned copy: the module points into it */
	char *out;               /* diagnostics, from a memstream */
	size_t outlen;
	FILE *f;
	Diag d;
	Compilation c;           /* the pipeline's run (pipeline.c): what it made */
	Module *m;               /* c.m */
	bool ok;                 /* every pass the run asked for succeeded */
	StrBuf printed;          /* print_module's text, for PASSES_PRINT */
	StrBuf type;             /* scratch for a test's type printing */
} Run;

/* How far run_passes goes, in the driver's order; it stops at the first
 * pass that fails. */
typedef enum {
	PASSES_PARSE,            /* parse_module only */
	PASSES_SHAPES,           /* ... check_context, check_names, infer_shapes */
	PASSES_ALL,              /* ... and check_strategies */
	PASSES_PRINT,            /* every pass, then print_module if they all succeeded */
} Passes;

/* Copies LEN bytes of TEXT and runs the pipeline (pipeline_run) on it as the
 * file NAME up to STOP, with the N command-line settings O (NULL: none) and
 * the default cluster. ok: every stage run succeeded. Free with run_free. */
Run *run_pipeline(const char *name, const char *text, size_t len, Stage stop, const Override *o, int n);

/* Runs the stages FROM to STOP of a run stopped before FROM (a test looks
 * at, or changes, the program in between); ok as run_pipeline's. */
void run_resume(Run *r, Stage from, Stage stop);

/* Copies LEN bytes of TEXT, parses them as the file NAME and runs the
 * passes up to UPTO. Free the result with run_free. */
Run *run_passes(const char *name, const char *text, size_t len, Passes upto);

/* Parses LEN bytes of TEXT (which may hold NULs) as t.ir; no other pass. */
Run *parse_len(const char *text, size_t len);

/* parse_len on a NUL-terminated TEXT. */
Run *parse(const char *text);

/* Parses TEXT as t.ir and runs every check up to check_strategies. */
Run *compile(const char *text);

/* The messages so far, NUL-terminated (owned by the run). */
const char *msgs(Run *r);

/* Frees the run; the test fails if anything the compiler allocated is left. */
void run_free(Run *r);

/* Asks LeakSanitizer for a leak check now: nonzero if it found a leak
 * (always 0 in a build without AddressSanitizer). */
int leak_check(void);

/* Requires a run through the validate stage (compile, or run_passes up to
 * PASSES_ALL) without errors. Resumes the pipeline from flatten up to UPTO
 * (STAGE_LOWER .. STAGE_PLAN) under cluster C (NULL: cluster_default; its
 * bucket_bytes sizes the buckets); asserts every stage succeeds. run_free
 * frees the program. */
Lowered *lower_run(Run *r, const Cluster *c, Stage upto);

/* Asserts no errors so far, and that every pass the run asked for succeeded. */
void expect_clean(Run *r);

/* Asserts WANT is among the messages. */
void expect_msg(Run *r, const char *want);

#endif
