/* pipeline.h: the driver's view of the compiler (pipeline.c): the stages in
 * order, a compilation and what it made, and the verifier run between the
 * stages (verify.c). The driver, the search's memory count, the unit tests
 * and the fuzz targets include it; the passes themselves do not. */
#ifndef PIPELINE_H
#define PIPELINE_H

#include "shardc.h"

/* ---- pipeline.c: the stages in order ------------------------------------ */

typedef enum {
	STAGE_PARSE,             /* parse_module */
	STAGE_CHECK,             /* check_context, the command line's overrides, check_names */
	STAGE_INFER,             /* infer_shapes */
	STAGE_VALIDATE,          /* the checks that need shapes: check_strategies */
	STAGE_FLATTEN,           /* Calls inlined */
	STAGE_AUTOCAST,          /* mixed precision's Casts */
	STAGE_KERNELS,           /* what the runtime computes: check_kernels, the last model checks */
	STAGE_STRATEGIES,        /* each operator's strategy, as given or by default */
	STAGE_SEARCH,            /* auto_parallel's search; --strategy-in; the Casts' strategies */
	STAGE_LOWER,             /* one SPMD program with its redistributions */
	STAGE_DIFFERENTIATE,     /* training: the backward pass */
	STAGE_RECOMPUTE,         /* training: recomputed activations */
	STAGE_ACCUMULATE,        /* training: what runs once a step with accumulate_steps */
	STAGE_BUCKET,            /* training: gradient AllReduces in buckets */
	STAGE_FUSE,              /* operators one kernel computes */
	STAGE_PLAN,              /* the programs' buffer plan */
	STAGE_COUNT
} Stage;

extern const char *const stage_names[STAGE_COUNT];   /* as --time prints them */
/* A stage's one-word name, as --dump-after takes it and OUT/ir/after_<word>
 * names its text: stage_names', "plan" for "plan memory". */
const char *stage_word(Stage s);
/* The stage a name (stage_word's, or stage_names') stands for; STAGE_COUNT: none. */
Stage stage_named(const char *name);
/* Whether a stage's program has a text: the module from check (whose context
 * is complete) to validate, the lowered program's per-rank text from lower
 * on, step_parallel_begin for search; parse's is the input, and the flat
 * graph in between has none of its own. */
bool stage_dumpable(Stage s);

/* A command-line setting of a context key, applied after check_context. */
typedef struct {
	const char *key;         /* the context key */
	const char *flag;        /* the option as typed, for messages */
	const char *text;        /* its value: IR text, a bare word taken as a string */
} Override;

/* A stage's program as text (dump_after): n texts, one for the module or
 * step_parallel_begin, one per rank for a lowered stage. */
typedef struct {
	int n;
	StrBuf *text;
} StageDump;

struct Compilation {
	/* what to run: from start to stop, in order */
	Stage start, stop;       /* start PARSE: from text; later: what the stages before start make is given */
	const char *name;        /* the model's file name, for messages and the programs' comments */
	const char *text;        /* the model's text (start PARSE) */
	int len;
	Diag *d;
	const Override *overrides;
	int noverrides;
	bool recompute;          /* --recompute */
	const char *strategy_in; /* --strategy-in FILE */
	SearchOptions search;    /* its cluster's bucket_bytes also sizes the buckets */
	unsigned dump_after;     /* bit s: keep stage s's text in dumps[s] */
	bool slab_only;          /* plan memory: the slab only (the search's count), no rank tables */
	/* what it made (compilation_free frees what it made) */
	Module *m;
	FlatGraph *flat;
	Strategies st;
	Lowered *low;
	Program *plan;
	StageDump dumps[STAGE_COUNT];
	Stage reached;           /* the last stage run */
	bool owns_module;        /* m was parsed here (compilation_free frees it) */
	int status;              /* 0, or the exit status of a failure (EXIT_MODEL, EXIT_USAGE) */
	double seconds[STAGE_COUNT];
	Module *holders[16];     /* the overrides' parsed values */
	int nholders;
};

/* Runs the stages from c->start to c->stop, each only when the ones before
 * it found no error (reported through c->d; c->status set). With
 * SHARDC_VERIFY, the lowered program is verified after each stage. */
bool pipeline_run(Compilation *c);
/* Frees what the run made: the plan, the lowered program, the module when
 * it parsed it, the dumps. */
void compilation_free(Compilation *c);

/* ---- verify.c: the lowered program's invariants ------------------------ */

/* With SHARDC_VERIFY: every value defined before it is read, every layout
 * consistent with its shape and the device count, every collective's group
 * well formed; a broken one aborts naming `stage`, the pass that broke it.
 * Without: nothing. */
void verify_lowered(const Lowered *l, const char *stage);

#endif
