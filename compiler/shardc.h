/* shardc.h: the compiler's one internal header, a section per module.
 *
 * A Module owns everything through its arena. Graph values have dense ids
 * (parameters first, then one per statement), so passes keep side tables in
 * arrays indexed by id. */
#ifndef SHARDC_H
#define SHARDC_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "util.h"

enum { MAX_DIMS = 8 };       /* tensor rank limit */
enum { MAX_ERRORS = 50 };    /* diagnostics printed before giving up */

/* ---- diag.c: sources and diagnostics ---------------------------------- */

typedef struct {
	int start, end;          /* byte offsets into the source, end exclusive */
} Span;

typedef struct {
	const char *name;        /* file name as given on the command line */
	const char *text;        /* whole file, NUL after the last byte */
	int len;
	int *line_starts;        /* byte offset of each line, built on first use */
	int nlines;
} Source;

typedef struct {
	FILE *out;               /* stderr, or a memstream in tests */
	int nerrors;
	bool caret;              /* print the source line and a caret */
} Diag;

void diag_error(Diag *d, const Source *src, Span at, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void source_line_col(Source *src, int offset, int *line, int *col);

/* ---- lit.c: literal values (attributes, context, initializers) --------- */

typedef enum {
	LIT_INT, LIT_FLOAT, LIT_STR, LIT_BOOL, LIT_NONE,
	LIT_VALUE,               /* %name */
	LIT_GRAPH,               /* @name */
	LIT_IDENT,               /* Float16, a layout name without arguments */
	LIT_TUPLE,
	LIT_DICT,                /* keys[i] is a LIT_IDENT or LIT_STR */
	LIT_APPLY,               /* s(args): a layout application or a call; keys[i] names an argument or is NULL */
	LIT_TYPE,                /* <Tensor[Float32], (2, 3)> inside a signature */
} LitKind;

typedef enum {
	DT_F32, DT_F16, DT_BF16, DT_I32, DT_I64, DT_BOOL,
} DType;

typedef struct {
	bool is_param;           /* Parameter: a weight, else Tensor */
	DType dtype;
	int rank;                /* -1: unknown because of an earlier error */
	int64_t dims[MAX_DIMS];
} Type;

typedef struct Lit Lit;
struct Lit {
	LitKind kind;
	Span span;
	int64_t i;               /* INT, BOOL */
	double f;                /* FLOAT */
	const char *s;           /* STR, VALUE, GRAPH, IDENT, APPLY callee */
	Lit **items;             /* TUPLE, DICT values, APPLY args */
	Lit **keys;              /* DICT, APPLY */
	int nitems, cap;
	Type *type;              /* TYPE */
};

Lit *lit_new(Arena *a, LitKind kind, Span span);
void lit_push(Arena *a, Lit *list, Lit *key, Lit *item);
Lit *lit_dict_get(const Lit *dict, const char *key);
const char *lit_kind_name(LitKind k);
bool lit_is_number(const Lit *l);
double lit_number(const Lit *l);
void lit_print(StrBuf *b, const Lit *l);
void type_print(StrBuf *b, const Type *t);
const char *dtype_name(DType t);
bool dtype_from_name(const char *s, DType *out);
bool dtype_is_float(DType t);
bool type_equal(const Type *a, const Type *b);  /* dtype and dims, kind ignored */

/* ---- ir.c: the graph --------------------------------------------------- */

#define OP_ENUM(e, name, lo, hi, attrs) OP_##e,
#include "ops.h"
typedef enum { OP_TABLE(OP_ENUM) OP_COUNT } OpKind;
#define ATTR_ENUM(e, name, kind) ATTR_##e,
typedef enum { ATTR_TABLE(ATTR_ENUM) ATTR_COUNT } AttrKind;

typedef enum {
	AK_BOOL, AK_INT, AK_FLOAT, AK_INTS, AK_AXES, AK_DTYPE, AK_REDUCE_OP,
	AK_GRAPH, AK_SHARD, AK_STRATEGY,
} AttrValueKind;

typedef struct {
	const char *name;
	int min_inputs, max_inputs;  /* max -1: any number */
	unsigned attrs;              /* mask of (1 << ATTR_x) */
} OpInfo;

typedef struct {
	const char *name;
	AttrValueKind kind;
} AttrInfo;

extern const OpInfo op_info[OP_COUNT];
extern const AttrInfo attr_info[ATTR_COUNT];
bool op_from_name(const char *s, OpKind *out);
bool op_is_comm(OpKind k);       /* AllReduce, AllGather, ReduceScatter, AllToAll */

typedef enum { REDUCE_SUM_OP, REDUCE_MAX_OP } ReduceOp;

typedef struct LayoutDecl LayoutDecl;

/* How one tensor is laid over the devices, as the user wrote it: either a
 * tuple of slice counts or a layout application. */
typedef struct {
	bool given;              /* false: None, to be inferred */
	Span span;
	int rank;
	int64_t split[MAX_DIMS]; /* slices per dim */
	const LayoutDecl *layout;/* non-NULL for L("dp", ...) */
	int naxes[MAX_DIMS];     /* layout: device axes per dim, most significant first */
	int axes[MAX_DIMS][MAX_DIMS];
} TensorStrategy;

typedef struct {
	int n;                   /* one per input (in_strategy) or output (out_strategy) */
	TensorStrategy *t;
	Span span;
} Strategy;

typedef struct Graph Graph;

typedef struct {
	Span span;
	Strategy in;             /* n == 0: none given */
	Strategy out;
	const char **plan_names; /* parameter_plan keys, calling graph's names */
	TensorStrategy *plan;
	Span *plan_spans;
	int nplan;
} ShardSpec;

/* Decoded attributes; only the ones of the node's operator are meaningful. */
typedef struct {
	bool transpose_a, transpose_b, keep_dims;
	bool has_axis;
	int naxes;               /* axis given as an int: 1 entry, axis_is_tuple false */
	bool axis_is_tuple;
	int64_t axes[MAX_DIMS];
	int nshape;              /* Reshape target; one -1 allowed */
	int64_t shape[MAX_DIMS];
	int nperm;
	int64_t perm[MAX_DIMS];
	int64_t begin_norm_axis, begin_params_axis;
	double epsilon;
	DType dtype;
	int nslice;
	int64_t begin[MAX_DIMS], end[MAX_DIMS], strides[MAX_DIMS];
	ReduceOp reduce_op;
	int ngroup;
	int64_t *group;          /* global ranks, in order */
	int64_t split_axis, concat_axis;
	Graph *callee;           /* Call */
	ShardSpec *shard;        /* Call with shard */
	Strategy in_strategy, out_strategy;
	unsigned present;        /* mask of (1 << ATTR_x) written */
} Attrs;

typedef struct {
	Lit *ins, *outs;         /* tuples of LIT_TYPE */
	Span span;
} Signature;

typedef struct {
	OpKind op;               /* OP_COUNT: unknown name, reported by check_names */
	const char *op_name;     /* as written */
	Span span;               /* the whole statement */
	Span op_span;            /* the operator's name */
	int result;              /* value id */
	int nin;
	int *in;                 /* value ids, filled by resolve */
	Lit *operands;           /* tuple of LIT_VALUE as written */
	Lit *attr_lit;           /* LIT_DICT or NULL */
	Signature *sig;
	Attrs a;
} Node;

typedef struct {
	const char *name;        /* without % */
	Span span;
	Type type;
	int node;                /* defining node, -1 for a parameter */
	Lit *init;               /* parameters only: initializer or NULL */
} Value;

struct Graph {
	const char *name;        /* without @ */
	Span span, name_span;
	Value *values;           /* params first, then one per node */
	int nvalues, cap_values;
	int nparams;
	Node *nodes;
	int nnodes, cap_nodes;
	Lit *rets;               /* tuple of LIT_VALUE */
	int *ret;                /* value ids */
	int nret;
	bool has_call_with_shard;
};

struct LayoutDecl {
	const char *name;
	Span span;
	int ndims;
	int64_t dims[MAX_DIMS];  /* device matrix, most significant axis first */
	const char *alias[MAX_DIMS];
};

typedef enum { PM_STAND_ALONE, PM_DATA_PARALLEL, PM_SEMI_AUTO, PM_AUTO } ParallelMode;
typedef enum { SM_PROPAGATION, SM_RECURSIVE } SearchMode;
typedef enum { DS_FULL_BATCH, DS_DATA_PARALLEL, DS_TUPLE } DatasetMode;

typedef struct {
	Lit *lit;                /* the context dict as written, overrides merged in */
	int64_t device_num;
	ParallelMode parallel_mode;
	SearchMode search_mode;
	DatasetMode dataset_mode;
	Lit *dataset_tuple;      /* DS_TUPLE: one strategy per entry input */
	const Source *dataset_src;  /* where dataset_tuple was written */
	int64_t seed;
} Context;

typedef enum { OPT_SGD, OPT_MOMENTUM, OPT_ADAM } OptimizerKind;

typedef struct {
	Lit *lit;                /* as written */
	Span span;
	int loss;                /* value id in the entry graph */
	OptimizerKind optimizer;
	double learning_rate, momentum, beta1, beta2, eps, weight_decay;
	int64_t steps;
} Train;

typedef struct {
	Arena *arena;
	Source *src;
	Lit *context_lit;        /* NULL when the file has no context block */
	Span context_span;
	Context ctx;
	LayoutDecl **layouts;
	int nlayouts, cap_layouts;
	Graph **graphs;          /* in file order; the entry graph is the last */
	int ngraphs, cap_graphs;
	Train *train;
	char *owned_text;        /* source text the module frees, or NULL */
} Module;

const char *parallel_mode_name(ParallelMode m);
const char *search_mode_name(SearchMode m);
Graph *module_entry(const Module *m);
Graph *module_graph(const Module *m, const char *name);
const LayoutDecl *module_layout(const Module *m, const char *name);
int graph_value(const Graph *g, const char *name);  /* id or -1 */

/* ---- parse.c: text to Module (grammar/ holds the lexer and parser) ----- */

/* Parse `text` (len bytes, NUL-terminated) into a new module. Syntax errors go
 * to `d`; the module is returned even then, holding what parsed. */
Module *parse_module(const char *name, const char *text, int len, Diag *d);
void module_free(Module *m);
/* Parse one IR value written on the command line (`8`, `"data_parallel"`,
 * `((8, 1), (8,))`). NULL if it is not one value; *holder keeps it alive. */
Lit *parse_value_text(const char *text, Module **holder);

/* ---- check.c: names, attributes, context, train, strategies' form ------ */

/* Requires: parsed. Decodes the context block over the defaults. */
bool check_context(Module *m, Diag *d);
/* Sets one context entry (a file entry or a command-line override); on a bad
 * value returns false with *err saying what is expected. */
bool context_apply(Context *c, const char *key, const Lit *v, const char **err);
/* Requires: parsed. Resolves value and graph names, decodes attributes. */
bool check_names(Module *m, Diag *d);
/* Requires: names checked and shapes inferred. Strategies, layouts, shard, train. */
bool check_strategies(Module *m, Diag *d);

/* ---- shape.c: shape and dtype inference -------------------------------- */

/* Requires: names checked. Infers every value's type; checks signatures. */
bool infer_shapes(Module *m, Diag *d);

/* ---- print.c: canonical IR text ---------------------------------------- */

void print_module(StrBuf *b, const Module *m);

#endif
