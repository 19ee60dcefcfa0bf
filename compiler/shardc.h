/* shardc.h: the compiler's one internal header, a section per module.
 *
 * A Module owns everything through its arena. Graph values have dense ids (parameters first, then one per
 * statement), so passes keep side tables in arrays indexed by id. */
#ifndef SHARDC_H
#define SHARDC_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "util.h"

enum { MAX_DIMS = 8 };       /* tensor rank limit */
enum { MAX_AXES = 16 };      /* device-matrix axes: an operator's matrix has one per split op dim */
enum { MAX_ERRORS = 50 };    /* diagnostics printed before giving up */
#define ELEMENT_LIMIT (INT64_C(1) << 40)   /* elements in one tensor */
#define FLAT_LIMIT INT64_C(10000000)       /* operators in the entry graph once Calls are inlined */

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
	int value_offset;        /* > 0: a command-line value wrapped for parsing; name is its flag */
} Source;

typedef struct {
	FILE *out;               /* stderr, or a memstream in tests */
	int nerrors;
	bool caret;              /* print the source line and a caret */
} Diag;

void diag_error(Diag *d, const Source *src, Span at, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* A setting that does nothing here, said where it is written; not an error. */
void diag_warning(Diag *d, const Source *src, Span at, const char *fmt, ...)
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
	const char *s;           /* STR, VALUE, GRAPH, IDENT, APPLY callee; a number operand's text as written */
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
void init_print(StrBuf *b, const Lit *init);   /* `normal(0.01)`, or `zeros` without parentheses */
void print_quoted(StrBuf *b, const char *s);   /* "...", with \" and \\ escapes */
void print_float(StrBuf *b, double f);         /* shortest text that reads back as f */
void type_print(StrBuf *b, const Type *t);
void ints_print(StrBuf *b, const int64_t *v, int n);   /* (2, 4), (8,), () */
const char *dtype_name(DType t);
extern const char *const dtype_names[DT_BOOL + 1];   /* dtype_name of each, in order */
bool dtype_from_name(const char *s, DType *out);
bool dtype_is_float(DType t);
bool dtype_is_half(DType t);                   /* Float16, BFloat16 */
double dtype_max(DType t);                     /* the largest finite value of a float type */
double dtype_round(double v, DType t);         /* v rounded to float type t (to nearest, ties to even) */
int64_t dtype_bytes(DType t);                  /* bytes of one element */
bool type_equal(const Type *a, const Type *b);  /* dtype and dims, kind ignored */

/* ---- ir.c: the graph --------------------------------------------------- */

#define OP_ENUM(e, ...) OP_##e,
#include "ops.h"
typedef enum { ALL_OPS(OP_ENUM) OP_COUNT } OpKind;
#define ATTR_ENUM(e, name, kind) ATTR_##e,
typedef enum { ATTR_TABLE(ATTR_ENUM) ATTR_COUNT } AttrKind;
/* A set of attributes: bit ATTR_x for each. 128 bits (GCC's and Clang's
   unsigned __int128): one integer keeps the operator table's masks constant
   expressions and every test a plain &. */
__extension__ typedef unsigned __int128 AttrMask;
#define ATTR_BIT(k) ((AttrMask)1 << (k))
_Static_assert(ATTR_COUNT <= 128, "AttrMask holds 128 attributes");

typedef enum {
	AK_BOOL, AK_INT, AK_FLOAT, AK_INTS, AK_AXES, AK_DTYPE, AK_REDUCE_OP, AK_APPROXIMATE, AK_STRING,
	AK_GRAPH, AK_SHARD, AK_STRATEGY,
} AttrValueKind;

/* An operator's classes: its row of ops.h says what each means. */
typedef enum { SH_SAME, SH_FLOAT, SH_BROADCAST, SH_COMPARE, SH_LOGICAL, SH_MATMUL, SH_REDUCE, SH_OWN } ShapeClass;
typedef enum { R_ELEMWISE, R_BROADCAST, R_MATMUL, R_REDUCE, R_OWN } RuleClass;
typedef enum { GR_NONE = 0, GR_X = 1, GR_Y = 2, GR_XY = GR_X | GR_Y } GradReads;   /* bits: inputs, result */
typedef enum { PREC_LOW, PREC_F32, PREC_FOLLOW, PREC_ASIS } PrecClass;
typedef enum { V_COPY, V_VIEW } ViewClass;

typedef struct {
	const char *name;
	int min_inputs, max_inputs;  /* max -1: any number */
	AttrMask attrs;              /* mask of ATTR_BIT(ATTR_x) */
	ShapeClass shape;
	RuleClass rule;
	const char *kernel;          /* SC_U_X (sc_unary), SC_X (sc_binary), SC_CMP_X (sc_compare), SC_N_X (sc_norm); NULL: own */
	GradReads grad;              /* what its adjoint reads beside dy */
	unsigned nograd;             /* mask of the inputs that carry no gradient */
	PrecClass prec;              /* what mixed precision computes it in */
	ViewClass view;              /* V_VIEW: its result is its input's bytes */
} OpInfo;

typedef struct {
	const char *name;
	AttrValueKind kind;
} AttrInfo;

extern const OpInfo op_info[OP_COUNT];
extern const AttrInfo attr_info[ATTR_COUNT];
bool op_from_name(const char *s, OpKind *out);   /* the language's operators: never a fused one */
bool op_in_language(OpKind k);   /* a row of OP_TABLE: neither lowering's SendRecv nor fuse.c's */
bool op_is_fused(OpKind k);      /* a row of FUSED_OPS: made by fuse.c alone */
bool op_is_comm(OpKind k);       /* AllReduce, AllGather, ReduceScatter, AllToAll */
bool op_slices(OpKind k);        /* StridedSlice, Split, Slice: a slice of x, its begin/end/strides (shape inference) */
bool op_is_unary(OpKind k);      /* a row of UNARY_OPS */
bool op_is_binary(OpKind k);     /* a row of BINARY_OPS */
bool op_is_compare(OpKind k);    /* a row of COMPARE_OPS */
bool op_is_norm(OpKind k);       /* a row of NORM_OPS */
bool op_is_segment(OpKind k);    /* a row of SEGMENT_OPS: UnsortedSegmentSum, Max, Min, Prod */
bool op_is_tensor_scatter(OpKind k);   /* a row of TENSOR_SCATTER_OPS: TensorScatterUpdate .. Min */
bool op_writes_state(OpKind k);   /* a row of STATE_OPS: ScatterUpdate .. AssignSub, x a state Parameter */
bool norm_centered(OpKind k);    /* a normalizer subtracting the row mean (its SC_NORM_TABLE row) */
bool op_is_constant(OpKind k);   /* a computed constant (Arange, CausalMask, RopeCos, RopeSin): no operands */
bool op_is_triangle(OpKind k);   /* Tril, Triu: x's last two dims zeroed above or below a diagonal */
/* Whether input k (of dtype in) of an operator with a result of dtype out
 * carries a gradient: floats into a float, not an index or label. autodiff.c
 * differentiates exactly these inputs and the search prices their adjoints. */
bool op_input_has_grad(OpKind op, int k, DType in, DType out);

/* How partial results combine. mean (sum, then divide by the group size) is
 * what a ReduceMean or a mean loss over a split dim leaves: equal slices make
 * the mean of the slices' means the global mean; min what a ReduceMin leaves, prod a ReduceProd. */
typedef enum { REDUCE_SUM_OP, REDUCE_MAX_OP, REDUCE_MEAN_OP, REDUCE_MIN_OP, REDUCE_PROD_OP } ReduceOp;

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

/* Integers of value v that reach a Gather's indices or a cross-entropy's labels, unchanged (through Reshape,
 * Flatten, Transpose, StridedSlice, Concat, integer Casts, collectives), must lie in [0, bound): the table's
 * rows, the classes (not a per-rank graph's slice of them, with its offset: the whole is not known there);
 * the least such bound, its operator in *user. -1: v reaches none. */
int64_t index_bound(const Graph *g, int v, int *user);
/* What bounds them, for messages: "they index Gather %h's table %wte, which
 * has 50257 rows". */
void index_bound_text(StrBuf *b, const Graph *g, int user, int64_t bound);

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
	bool exclusive, reverse; /* CumSum, CumProd: each element leaves itself out; the scan runs from the end */
	bool pad;                /* StridedSlice: an end past x's reads zeros there (an uneven split's last pieces) */
	bool recompute;          /* recompute: true (recompute.c) */
	int64_t pipeline_stage;  /* pipeline_stage: k, the stage (0 first) the operator or Call runs on; -1: not given */
	bool has_axis;
	int naxes;               /* axis given as an int: 1 entry, axis_is_tuple false */
	bool axis_is_tuple;
	int64_t axes[MAX_DIMS];
	int nshape;              /* Reshape's target (one -1 allowed), BroadcastTo's; Tile's multiples; Slice's size */
	int64_t shape[MAX_DIMS];  /* and Conv2DTranspose's input_size (N, C, H, W); Eye's (n, m), LinSpace's (num) */
	int nperm;
	int64_t perm[MAX_DIMS];
	int64_t begin_norm_axis, begin_params_axis;
	double epsilon;
	DType dtype;             /* Cast, Arange and the like; Argmax's and Argmin's output_type */
	int nbegin, nend, nstrides;
	int64_t begin[MAX_DIMS], end[MAX_DIMS], strides[MAX_DIMS];   /* StridedSlice's entries (slice.c); its masks: */
	int64_t begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask;   /* bit i for entry i */
	ReduceOp reduce_op;
	int ngroup;
	int64_t *group;          /* global ranks, in order */
	int64_t split_axis, concat_axis;
	int64_t offset;          /* Gather: the first row this table holds (a row-split shard) */
	bool gelu_erf;           /* GeLU's approximate: "none": the erf form (op_kernel); "tanh", the default */
	double start, stop, step;/* Arange's range (step 1, start 0 by default) */
	double fill;             /* CausalMask's masked value, when present; else its dtype's lowest finite value */
	double theta;            /* RopeCos's and RopeSin's frequency base, 10000 by default */
	int64_t seed, seed2, maxlen;   /* UniformReal's seeds (both 0: the module's); Range's (Arange's) longest length */
	double keep_prob;        /* Dropout's chance of keeping an element, in (0, 1]; 0.5 by default (MindSpore's) */
	double alpha;            /* Elu: its negative side's scale, 1 (MindSpore's only value) */
	double lambd;            /* HShrink, SoftShrink: the half-width of the band they zero (0.5) */
	double tolerance;        /* ApproximateEqual: |x - y| below it is equal (1e-5, MindSpore's default) */
	int64_t output_num;      /* Split: the number of equal pieces along axis (1 by default, MindSpore's) */
	int64_t output_index;    /* Split, SplitV: which piece is its result (shape.c also sets begin/end/strides: its slice) */
	int nsize_splits;        /* SplitV: the pieces' lengths along split_dim, one -1 (the rest) allowed */
	int64_t *size_splits;
	int64_t split_dim, num_split;   /* SplitV: the dim it cuts; the number of pieces (size_splits' count) */
	int npaddings;           /* PadV3: pairs (before, after), the last dim's first, as torch's F.pad (pad_v3.c) */
	int64_t paddings[2 * MAX_DIMS];
	bool paddings_contiguous;   /* PadV3: true by default; false: the befores, then the afters (MindSpore's) */
	bool align_corners, half_pixel_centers;   /* ResizeNearestNeighbor, ResizeBilinearV2 (resize.c); size in shape */
	int nindices; int64_t *indices;   /* InplaceAdd, Sub, Update: the rows of x's dim 0 they write, in order */
	int64_t mode;            /* RotaryPositionEmbedding: 0 rotate-half (GPT-NeoX, LLaMA), 1 interleaved pairs (GPT-J); KLDivLoss: its reduction, KL_MEAN... (ops.h) */
	int64_t head_num;        /* FlashAttentionScore: N, q's dim 1 (required) */
	int64_t depth;           /* OneHot: the number of classes (required) */
	int64_t topk;            /* TopK: k, how many of the last dim's largest it keeps (required) */
	bool sorted;             /* TopK: the k largest in descending order (true, the only value shardc takes) */
	int64_t dim;             /* GatherD: the dim of x the index picks along (required) */
	int64_t diagonal;        /* Tril, Triu: the diagonal kept, 0 the main one, k > 0 above it, k < 0 below (0 by default) */
	int64_t axis1, axis2;    /* TraceV2: the dims whose diagonal it sums (MindSpore's defaults 1 and 0; int_math.c) */
	int64_t num_segments;    /* the unsorted segment reductions: the result's rows (required) */
	bool is_training;        /* BatchNorm: normalize by the batch's statistics and update the moving ones (false) */
	double momentum;         /* BatchNorm: moving = (1 - momentum) moving + momentum batch (0.1) */
	double scale_value;      /* FlashAttentionScore: the scores' factor, 1 by default (MindSpore's) */
	int64_t sparse_mode;     /* FlashAttentionScore: 0 the mask as given, 2 or 3 causal (key j seen by query i when j <= i) */
	int64_t input_layout;    /* FlashAttentionScore: FA_BNSD (the default), FA_BSND or FA_BSH (flash_dims) */
	int64_t out_channel;     /* Conv2D: O, the weight's dim 0 (required) */
	int64_t kernel[2], stride[2], dilation[2];   /* Conv2D and the pools: (h, w) each, 1 by default (conv.c) */
	int64_t pad_list[4];     /* Conv2D's pad: top, bottom, left, right (pad_mode "pad") */
	int64_t pad_mode, groups;/* Conv2D and the pools: PAD_VALID (the default), PAD_SAME, PAD_PAD; Conv2D's group (1) */
	Graph *callee;           /* Call */
	ShardSpec *shard;        /* Call with shard */
	Strategy in_strategy, out_strategy;
	AttrMask present;        /* mask of ATTR_BIT(ATTR_x) written */
} Attrs;

/* A reduction's axes (axis attribute), non-negative; all rank of them when none are named. */
int reduce_axes(const Attrs *a, int rank, int64_t *axes);
int pad_axis(const Attrs *a, int rank);   /* PadFill's axis, non-negative (the last by default) */
int gather_axis(const Attrs *a, int rank);   /* Gather's axis, non-negative (0 by default) */

/* Where a normalizer starts normalizing x and where gamma's dims start, as the model says them (negative
 * counts from the end): LayerNorm's begin_norm_axis and begin_params_axis; a row without those attributes
 * (RmsNorm, as MindSpore's) normalizes the dims gamma covers, both x_rank - gamma_rank. */
void norm_begin(OpKind op, const Attrs *a, int x_rank, int gamma_rank, int64_t *norm, int64_t *params);
/* An elementwise operator's kernel: its row's, but SC_U_GELU_ERF for a GeLU
 * with approximate: "none". Emission and fusion name kernels through it. */
const char *op_kernel(OpKind op, const Attrs *a);
/* The parameter an elementwise operator's kernel takes (SC_UNARY_TABLE's p),
 * computing on type t: LeakyReLU's alpha as MindSpore multiplies by it, and
 * HShrink's and SoftShrink's lambd as they compare with it, cast to t (a
 * Float32 scalar first); 0 for every other row. */
double op_kernel_param(OpKind op, const Attrs *a, DType t);

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
	Lit *operands;           /* tuple of LIT_VALUE, LIT_INT and LIT_FLOAT (a number) as written */
	Lit *attr_lit;           /* LIT_DICT or NULL */
	Signature *sig;
	Attrs a;
} Node;

typedef struct {
	const char *name;        /* without % */
	Span span;
	Type type;
	int node;                /* defining node, -1 for a parameter or a literal */
	Lit *init;               /* parameters only: initializer or NULL */
	const Lit *literal;      /* a number written as an operand, `<result>#<k>` (parse.c, flatten.c), or NULL */
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
	bool contains_shard;     /* calls, directly or through callees, a graph with shard */
	int64_t nflat;           /* operators and numbers once Calls are inlined (check_names), saturating */
	int64_t nliterals;       /* the numbers (Value.literal) among them */
};

/* Whether value v of g is a state Parameter: a BatchNorm's mean or variance (operand 3 or 4) or a STATE_OPS
 * operator's x (operand 0), which it updates in place and the optimizer never does (docs/language.md, Moving
 * statistics and State parameters). The one place that decides it. */
bool param_is_moving_stat(const Graph *g, int v);

struct LayoutDecl {
	const char *name;
	Span span;
	int ndims;
	int64_t dims[MAX_DIMS];  /* device matrix, most significant axis first */
	const char *alias[MAX_DIMS];
	bool searched;           /* made by the search (copies on the slowest axis), not declared by the model */
};

typedef enum { PM_STAND_ALONE, PM_DATA_PARALLEL, PM_SEMI_AUTO, PM_AUTO } ParallelMode;
typedef enum { SM_PROPAGATION, SM_RECURSIVE } SearchMode;
typedef enum { DS_FULL_BATCH, DS_DATA_PARALLEL, DS_TUPLE } DatasetMode;

/* The order a pipeline stage runs its micro-batches' forward and backward passes in. */
typedef enum { SCHED_1F1B, SCHED_GPIPE } PipelineScheduler;

typedef struct {
	Lit *lit;                /* the context dict as written, overrides merged in */
	/* The devices every layout spans: device_num as written, or with
	 * pipeline_stages P > 1 one stage's share of it (context_stages) */
	int64_t device_num;
	int64_t ranks;           /* the processes: device_num as written (pipeline_stages x one stage's devices) */
	int64_t pipeline_stages; /* P as written: pipeline_stage attributes lie in [0, P) */
	int64_t stages;          /* the stages the programs run as: P, or 1 on one device (stand_alone) */
	PipelineScheduler scheduler; /* pipeline_scheduler */
	ParallelMode parallel_mode;
	SearchMode search_mode;
	DatasetMode dataset_mode;
	Lit *dataset_tuple;      /* DS_TUPLE: one strategy per entry input */
	TensorStrategy *dataset; /* DS_TUPLE, decoded by check_strategies: one per Tensor input, in order */
	const Source *dataset_src;  /* where dataset_tuple was written */
	int64_t seed;
	DType precision;         /* precision: "bf16"/"fp16": the type autocast.c computes in; DT_F32: off */
	/* Optimizer parallelism (MindSpore's enable_parallel_optimizer and its
	 * parallel_optimizer_config): trained parameters, their gradients and
	 * their optimizer state stored as slices over the ranks holding copies
	 * (lower.c, "optimizer parallelism"). */
	bool parallel_optimizer; /* enable_parallel_optimizer */
	int optimizer_level;     /* optimizer_level "level1".."level3": 1..3 (default 1) */
	int64_t optimizer_shard_size; /* optimizer_weight_shard_size: ranks a slice group spans; -1: all copies */
} Context;

/* What the backward pass recomputes instead of keeping (checkpoint.c). */
typedef enum { RECOMPUTE_NONE, RECOMPUTE_SELECTIVE, RECOMPUTE_LAYERS } RecomputePolicy;

/* MindSpore's nn.SGD, nn.Momentum, nn.Adam, nn.AdamWeightDecay, nn.Lamb (docs/language.md, Training). */
typedef enum { OPT_SGD, OPT_MOMENTUM, OPT_ADAM, OPT_ADAM_WEIGHT_DECAY, OPT_LAMB } OptimizerKind;

/* The optimizer's learning_rate: a number, or a schedule (docs/language.md,
 * Training); the runtime's sc_lr_schedule in the same order. */
typedef enum { LR_CONSTANT, LR_WARMUP, LR_COSINE, LR_POLYNOMIAL, LR_EXPONENTIAL, LR_COSINE_WARMUP } LrSchedule;
enum { MAX_LR_ARGS = 5 };

typedef struct {
	Lit *lit;                /* as written */
	Span span;
	int loss;                /* value id in the entry graph */
	OptimizerKind optimizer;
	double learning_rate, momentum, dampening, beta1, beta2, eps, weight_decay;
	LrSchedule lr_schedule;  /* LR_CONSTANT: learning_rate */
	double lr_args[MAX_LR_ARGS]; /* the schedule's arguments in sc_learning_rate's order (shardc_rt.h) */
	int lr_nargs;
	bool nesterov;           /* SGD's nesterov, Momentum's use_nesterov */
	double clip_global_norm; /* > 0: gradients scaled by clip / max(global norm, clip) first; 0: off */
	int64_t steps;
	int64_t accumulate_steps;/* micro-batches a step, their gradients summed before one update (1: off) */
	bool micro_auto;         /* micro_batches: "auto": the graph is the step's batch, the search picks the count */
	DType precision;         /* the train block's precision, else the context's (check_train makes them one) */
	/* precision "fp16": dynamic loss scaling (MindSpore's DynamicLossScaleManager). */
	double init_loss_scale, scale_factor;
	int64_t scale_window;
	RecomputePolicy recompute; /* recompute: true (layers), "selective"; --recompute (checkpoint.c) */
	bool *decays;            /* weight_decay_params: (entry nparams) the parameters weight_decay applies to; NULL:
	                            MindSpore's default filter (names with beta or gamma skipped, but in SGD) */
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
Lit *parse_value_text(const char *flag, const char *text, Module **holder);

/* ---- check.c: names, attributes, context, train, strategies' form ------ */

/* Requires: parsed. Decodes the context block over the defaults. */
bool check_context(Module *m, Diag *d);
/* Sets one context entry (a file entry or a command-line override); on a bad
 * value returns false with *err saying what is expected. */
bool context_apply(Context *c, const char *key, const Lit *v, const char **err);
/* Requires the context and its overrides applied: with pipeline_stages P > 1,
 * device_num becomes one stage's devices (ranks keeps the world); false,
 * with an error, when P does not divide the devices. */
bool context_stages(Module *m, Diag *d);
/* The devices a strategy divides, for messages: "device_num 8", or on a
 * pipeline "a pipeline stage's 4 devices (device_num 8 over pipeline_stages 2)". */
const char *devices_phrase(const Context *c, char *buf, size_t n);
/* Requires: parsed. Resolves value and graph names, decodes attributes;
 * refuses an entry that inlines to more than FLAT_LIMIT operators. */
bool check_names(Module *m, Diag *d);
/* Requires: names checked and shapes inferred. Strategies, layouts, shard, train. */
bool check_strategies(Module *m, Diag *d);

/* ---- shape.c: shape and dtype inference -------------------------------- */

/* Requires: names checked. Infers every value's type; checks signatures. */
bool infer_shapes(Module *m, Diag *d);
/* One graph's (a flat one again: rebatch.c); `signatures`: check them too. */
bool infer_graph(Module *m, Graph *g, Diag *d, bool signatures);
/* FlashAttentionScore's dims {B, N, S, S_kv, D, N_kv} from q and k as laid out (a: input_layout, head_num). */
void flash_dims(const Attrs *a, const Type *q, const Type *k, int64_t dims[6]);

/* ---- print.c: canonical IR text ---------------------------------------- */

void print_module(StrBuf *b, const Module *m);
void print_context(StrBuf *b, const Module *m);           /* `context {...}`, effective values */
void print_layout_decl(StrBuf *b, const LayoutDecl *l);   /* `layout L = Layout(...)` */

#include "layout.h"   /* layouts, operator rules, redistribution */

/* ---- flatten.c: Calls inlined ------------------------------------------ */

/* The entry graph with every Call inlined: parameters first (the entry's, in
 * order), callee values renamed `<call>.<name>`. Nodes are copies that keep
 * their attributes and spans. */
typedef struct {
	Graph *g;
	int nentry;                    /* values [0, nentry): the entry's inputs; [nentry, nparams): numbers (Value.literal) */
	const Node **orig;             /* (g->nnodes) the node each copies */
	const ShardSpec **shard;       /* (g->nnodes) shard of the Call that brought it in, or NULL */
	int *of_entry;                 /* (entry nvalues) the flat value of each entry-graph value */
	bool *inserted;                /* (g->nnodes) a Cast autocast.c inserted; NULL when it did nothing */
	int64_t *step_rows;            /* rebatch.c: (nentry) an input's dim 0 in the step's batch, of which micro-batch
	                                  k takes rows [k d, (k + 1) d), d its dims[0]; 0: not split; NULL: no rebatch */
} FlatGraph;

/* Requires shapes inferred and strategies checked. */
FlatGraph *flatten(Module *m);

/* ---- rebatch.c: the step's batch run as micro-batches ------------------ */

/* Requires the flat graph as written, for the step's batch (micro_batches
 * "auto"). Splits dim 0 of each input of more than one row `micro` ways, and
 * each Reshape of the batch (f->step_rows); false, the reason in d, where
 * the batch does not stay dim 0 of every value it reaches. */
bool rebatch(Module *m, FlatGraph *f, int64_t micro, Diag *d);

/* ---- schedule.c: a pipeline stage's order of passes -------------------- */

#define PIPE_FORWARD(m) (2 * (m))        /* an entry of a stage's list: micro-batch m's forward pass */
#define PIPE_BACKWARD(m) (2 * (m) + 1)   /* and its backward pass */
/* Stage `stage`'s list (2 x micro entries) into act; returns its length. */
int pipeline_actions(PipelineScheduler sched, int64_t stages, int64_t micro, int64_t stage, int64_t *act);
/* The activations `stage` holds at once: micro-batches forward but not yet backward. */
int64_t pipeline_in_flight(PipelineScheduler sched, int64_t stages, int64_t micro, int64_t stage);
/* A step's turns of the slowest stage, M + P - 1 (either schedule): the bubble is (P - 1) / turns. */
double pipeline_turns(int64_t stages, int64_t micro);

/* ---- autocast.c: the train block's precision (mixed precision) -------- */

/* Requires the graph flattened. With a train block's precision, rewrites the flat graph as MindSpore's AMP O2
 * and PyTorch's autocast do: Float32 parameters stay the master copies and are cast to the compute type where
 * used; matrix products and elementwise operators compute in it; Softmax, LayerNorm, the losses, reductions,
 * Exp, Log and Sqrt in Float32; Casts are inserted where a value's type differs from what its user computes
 * in, and returned values and the loss are cast back to their declared types. Does nothing without a
 * precision. */
void autocast(Module *m, FlatGraph *f);
enum { MAX_WIDENED = 8 };   /* half values a Float32 kernel runs on copies of (plan.c); a longer AddN: Float32 */

/* ---- check_kernels.c: what the runtime computes ------------------------ */

/* Requires autocast run. The last model checks: operators computing on integers, clip_global_norm on half
 * parameters. Warns of recompute: "selective" that selects nothing. Every later stage takes what passes. */
bool check_kernels(const Module *m, const FlatGraph *f, Diag *d);

/* ---- strategy.c: strategies by parallel mode --------------------------- */

/* One operator's strategy. The records are interned (equal ones shared), so
 * a deep stack of equal layers costs a few pointers per operator. */
typedef struct {
	bool has_dims;           /* false: Reshape (no strategy), or a collective in a one-device model */
	bool user;               /* from the user's in_strategy; the search may replace the others */
	bool has_out_strategy;
	const OpDims *od;        /* has_dims: the operator's op dims */
	const OpSplit *split;    /* has_dims: its strategy on them */
	const TensorLayout *delivered;  /* has_out_strategy: the out_strategy's layout */
} NodeStrategy;

typedef struct {
	int64_t device_num;      /* 1 in stand_alone */
	NodeStrategy *node;      /* (flat nnodes) */
	TensorLayout *home;      /* (nparams) where inputs and planned parameters live */
	bool *home_fixed;        /* (nparams) false: the parameter lives where its first user wants it */
	Interner *intern;        /* the shared OpDims, OpSplit and layout records */
	int *split;              /* (flat nnodes) each operator's stage as search_stages split them; NULL: by work */
} Strategies;

int64_t strategy_devices(const Module *m);
/* Requires the graph flattened. Reports bad strategies at their spans. */
bool assign_strategies(Module *m, const FlatGraph *f, Strategies *s, Diag *d);
const Graph *shard_callee(const Module *m, const ShardSpec *sh);   /* the graph a shard's Call runs */
bool node_in_graph(const Graph *c, const Node *n);
/* The layout a forward graph's returned value (whole dims dims) is delivered in, as
 * MindSpore's VirtualOutput delivers it: in semi_auto and auto_parallel on
 * several devices, with dataset_strategy "full_batch" whole on every rank,
 * with "data_parallel" split along dim 0 over every device (whole when the
 * devices do not divide it). False where results stay as computed: with a
 * train block (the loss), a dataset tuple, one device, the other modes. */
bool result_layout(const Module *m, int rank, const int64_t *dims, TensorLayout *l);
/* Requires copies x product(split) to divide device_num. The strategy of one node's devices (device_num /
 * copies of them, op_split_from_splits's matrix: the op dims' slices, the node's copies last) repeated on
 * `copies` nodes, their axis first (slowest): the devices that split the work are neighbours and the copies
 * lie across the nodes. A tuple cannot say that, so the strategy is a Layout the search declares,
 * `copies_first_8x2x4` (LayoutDecl.searched, interned here; its axes "copies", "a1", ...). False when copies
 * <= 1 or the matrix would pass MAX_DIMS axes. */
bool strategy_copies_first(Strategies *s, const OpDims *od, const int64_t *split, int64_t copies, OpSplit *out);
/* The Layouts the search declared that node strategies use, in node order,
 * each once; returns the count (out has room for nnodes). */
int strategy_searched_layouts(const Strategies *s, int nnodes, const LayoutDecl **out);
/* Node i's strategy becomes `split` (interned here); the caller keeps `user`. */
void strategy_set_split(Strategies *s, int i, const OpSplit *split);
/* Node i delivers its output in `l` (an out_strategy); NULL: as computed. */
void strategy_set_delivered(Strategies *s, int i, const TensorLayout *l);
/* autocast.c: requires strategies assigned (and searched). Each Cast autocast inserted takes its first user's
 * matrix and the axes that user splits that input over, so the Cast moves no data and a parameter lives where
 * its real user wants it. */
void autocast_strategies(const Module *m, const FlatGraph *f, Strategies *s);
/* Requires strategies assigned (and searched), after autocast_strategies. A computed constant
 * (op_is_constant) takes the layout its readers take it in, so each rank computes its piece and nothing is
 * sent; whole when they differ, when it is returned or the loss, or when a Reshape reads it. */
void constant_layouts(const Module *m, const FlatGraph *f, Strategies *s);

/* ---- stages.c: the pipeline stage of every operator -------------------- */

/* Requires the graph flattened. node_stage (nnodes): the stage of `stages` each operator runs on;
 * value_stage (nvalues): where each value is made, an input's or parameter's the earliest stage
 * that reads it (the top of stages.c); all 0 with one stage. With no pipeline_stage written, st's
 * split, else one that balances the operators' work under their strategies st (NULL: all on 0). */
void assign_stages(const FlatGraph *f, const Strategies *st, int64_t stages, int *node_stage, int *value_stage);
/* node_stage: the operators cut into `stages` runs whose slowest is least, a run's cost its
 * operators' seconds and the sends of the values crossing its ends (send, per value). */
void split_by_cost(const FlatGraph *f, const double *seconds, const double *send, int64_t stages, int *node_stage);
/* With pipeline_stages > 1: false, with an error, where an operator reads a value of a later stage. */
bool check_stages(const Module *m, const FlatGraph *f, Diag *d);
bool stages_written(const FlatGraph *f);   /* whether an operator has a pipeline_stage (or its Call) */

/* ---- cost.c: the cost model of the strategy search --------------------- */

/* The devices and links (--cluster FILE: docs/output.md, "The cluster file"; the cost model: docs/internals.md). */
typedef struct {
	int64_t devices_per_node;   /* ranks 0..n-1 share node 0, and so on */
	double intra_bw, inter_bw;  /* bytes/s one rank sends inside a node, across nodes */
	double intra_lat, inter_lat;/* seconds per step of a collective */
	double flops;               /* FLOP/s of one device */
	double memory;              /* bytes of one device */
	double bucket_bytes;        /* gradient AllReduces packed up to this many bytes a call (bucket.c); 0: none */
} Cluster;

typedef struct CostModel CostModel;

/* 8 GPUs a node: NVLink-class inside (150 GB/s, 5 us), InfiniBand-class
 * between (25 GB/s, 20 us), 100 TFLOP/s and 80 GB a device. */
void cluster_default(Cluster *c);
/* The defaults overridden by FILE's keys. 0 ok; 1 the contents are wrong
 * (FILE:LINE:COL: error: ... printed to err); 2 the file cannot be read. */
int cluster_load(const char *path, Cluster *c, FILE *err);
/* How the redistribution plans weigh a step under c: devices_per_node and
 * the intra-node bandwidth over the inter-node one, rounded, at least 1. */
RedistLinks cluster_links(const Cluster *c);
/* The model's queries: cost.h (the search's files and dot.c include it). */

typedef struct Compilation Compilation;   /* pipeline.c */

/* ---- search.c: the strategy search of auto_parallel -------------------- */
/* (its parts in search_graph.c, price.c, propagate.c, polish.c, rec_search.c,
 * search_run.c and savings.c, sharing search_internal.h) */

typedef struct {
	Cluster cluster;
	bool explain;            /* print every operator's choice, cost and runner-up */
	FILE *out;               /* where --explain goes (NULL: stdout) */
	bool results_only;       /* --strategy-in: only lay out shard results; no search, no memory check */
	bool quick;              /* pricing a pipeline stage count (search_stages.c): D-Rec's starts, no polish */
	/* The pipeline's stages from lowering to the memory plan, run on a
	 * compilation the search fills (pipeline_run; set by the pipeline, which
	 * calls the search: a pointer, so that no file calls back up). */
	bool (*plan)(Compilation *c);
} SearchOptions;

/* Requires strategies assigned. In auto_parallel, replaces every strategy the user did not give by
 * search_mode's choice and lays shard results out by dataset_strategy (only the latter with results_only);
 * elsewhere does nothing. False (reported) when the strategies do not fit the devices' memory. */
bool search_strategies(Module *m, const FlatGraph *f, Strategies *s, const SearchOptions *o, Diag *d);
/* And the plan's total cost (price.c's total) and memory a device (its slab); 0: not priced. */
bool search_priced(Module *m, const FlatGraph *f, Strategies *s, const SearchOptions *o, Diag *d, double *cost,
                   double *memory);
/* Pipeline stages the search places: the context set to the count chosen, s assigned with its split. */
bool search_stages(Module *m, FlatGraph *f, Strategies *s, const SearchOptions *o, Diag *d);
/* price.c: the cost (seconds) of strategies s under cluster c: what the searches minimize. And
 * per operator (nnodes) a micro-batch's seconds (turn) and its once-a-step reductions' (once);
 * per value (nvalues) the seconds to send it to another stage and its gradient back (send). */
double strategies_cost(const Module *m, const FlatGraph *f, const Strategies *s, const Cluster *c);
void strategies_seconds(const Module *m, const FlatGraph *f, const Strategies *s, const Cluster *c, double *turn,
                        double *once, double *send);
/* price.c: an operator's candidate op-dim splits over device_num devices, the
 * batch-parallel default first, then by devices used (most first), then
 * splitting earlier op dims more; uneven splits where op_dim_takes allows
 * them; at most max. Returns the count. */
int op_candidates(const Node *node, const OpDims *od, int64_t device_num, int64_t (*out)[MAX_OPDIMS], int max);

/* ---- strategy_file.c: --strategy-in ------------------------------------ */

/* Requires strategies assigned. Replaces every operator's strategy by the one the file (a
 * strategy.json) gives. 0 ok; 1 the file contradicts the model (reported through d at the file's
 * positions); 2 it cannot be read. strategy_stages, before strategies are assigned: the file's
 * pipeline stages (the count, for "auto"; *split, each operator's; NULL with one). */
int strategy_load(const char *path, const Module *m, const FlatGraph *f, Strategies *s, Diag *d);
int strategy_stages(const char *path, Module *m, FlatGraph *f, int **split, Diag *d);

/* ---- checkpoint.c: which operators the backward pass recomputes ------- */

/* Requires the graph flattened. marked (flat nnodes): the nodes `policy`
 * recomputes (see the top of checkpoint.c); the rest false. */
void recompute_policy(const Module *m, const FlatGraph *f, RecomputePolicy policy, bool *marked);

/* ---- lower.c: one SPMD program of local operators ---------------------- */

typedef struct {
	const char *name;        /* without %; redistributed versions are <name>.<k> */
	Type type;               /* this rank's piece */
	int64_t global[MAX_DIMS];/* (type.rank) the whole tensor's dims */
	TensorLayout layout;     /* where the pieces lie; partial until reduced */
	int param;               /* entry parameter index, -1 otherwise */
	int origin;              /* the value whose name this one versions */
	int nderived;            /* versions handed out, on an origin */
	int reuse;               /* lower.c's list of this value's redistributed forms, -1: none */
	int stage;               /* the pipeline stage whose ranks hold it (stages.c; 0 without pipeline_stages) */
	int sent;                /* lower.c's list of its copies sent to other stages, -1: none */
} LValue;

/* What a backward operator computes (autodiff.c); forward ones are GRAD_NONE. */
typedef enum {
	GRAD_NONE,               /* a forward operator, or a collective/slice moving a gradient */
	GRAD_SEED,               /* the loss's gradient: ones */
	GRAD_ZERO,               /* a parameter the loss does not reach: zeros */
	GRAD_ADJOINT,            /* in[0] is the gradient of ops[of]'s result; result: of its input k */
	GRAD_ACCUM,              /* in[0] + in[1] */
	GRAD_SCALE,              /* in[0] * scale (the adjoint of a mean) */
	GRAD_MAX_MASK,           /* in[2] where in[0] (partial maxima, minima) equals in[1] (their max, min), else 0 */
	GRAD_TIE_COUNT,          /* how many of in[0] (ops[of]'s ReduceMax/Min input) equal in[1]; ReduceProd: its stat k */
	GRAD_SQNORM,             /* the sum of squares of the in[] this rank holds first copies of (a partial sum) */
	GRAD_CLIP,               /* in[0] * clip / max(sqrt(in[1]), clip), clip the train block's clip_global_norm */
	GRAD_LAMB_NORMS,         /* Lamb: in[0..n) the parameters, in[n..2n) their gradients; result (2n): per
	                            parameter the sums of squares of the pieces this rank holds first copies of, of
	                            the parameter and of its update (a partial sum) */
} GradKind;

typedef struct {
	OpKind op;               /* GRAD_ADJOINT: ops[of].op (or the fused kind computing it, fuse.c);
	                            GRAD_ACCUM/SCALE/...: the kernel's nearest op */
	GradKind grad;
	int of, k;               /* GRAD_ADJOINT (ReduceMax/Min: in[1], when present, counts the ties); GRAD_TIE_COUNT: of */
	double scale;            /* GRAD_SCALE */
	int result;              /* LValue id */
	int nin;
	int *in;                 /* (nin) LValue ids */
	Attrs a;                 /* local attributes; lowered_rank_attrs adds the rank's own */
	int node;                /* the flat node it computes; -1: inserted by redistribution */
	const RedistStep *step;  /* inserted: its step (group axes, slice bounds) */
	const TensorLayout *table; /* Gather: the table's layout, for a row-split table's offset */
	const char *why;         /* inserted: which edge or rule, which layouts */
	int64_t bytes;           /* sent by every rank */
	/* A piece of an operator split along its normalized axis (lower.c,
	 * "statistics"): its inputs' and result's layouts on the operator's
	 * matrix, (nin + 1), for the adjoint; NULL for a whole operator. */
	const TensorLayout *lay;
	unsigned nograd;         /* inputs that carry no gradient (mask): a softmax's maximum */
	int stage;               /* the pipeline stage whose ranks run it; SendRecv: the receiving one */
	int from_stage;          /* SendRecv: the sending stage */
} LOp;

typedef struct {
	Arena *arena;            /* everything lowered, and the later passes' additions (lowered_free) */
	Module *m;               /* read only: the program lives in its own arena */
	const FlatGraph *flat;
	const Strategies *st;
	int64_t device_num;      /* the devices a layout spans: one pipeline stage's */
	int64_t stages;          /* pipeline_stages: the ranks are stages x device_num, stage s's from s x device_num */
	int *node_stage, *value_stage;  /* (flat nnodes), (flat nvalues) each one's stage (stages.c; 0 with one) */
	LValue *values;          /* the first nparams are the entry's parameters, in order */
	int nvalues, cap_values, nparams;
	LOp *ops;
	int nops, cap_ops;
	int *rets;               /* (nret) LValue ids */
	int nret;
	TensorLayout *home;      /* (nparams) where each input and parameter lives */
	TensorLayout **node_in;  /* (flat nnodes, nin) the layout each operator took its inputs in */
	TensorLayout *node_out;  /* (flat nnodes) its output, partial included */
	int64_t comm_bytes;      /* sent by every rank in one run of the graph (one training step) */
	int nfwd;                /* ops[0, nfwd) are the forward graph; the rest its backward pass */
	int64_t fwd_bytes;       /* sent by the forward graph */
	int loss;                /* train: the loss, whole on every rank; -1 without train */
	int *grad;               /* train: (nparams) each Parameter's gradient in its home layout, -1 otherwise */
	int overflow;            /* loss scaling: the gradients' squared global norm, whole on every rank (inf or
	                          * NaN: an overflow); -1 without */
	int lamb_norms;          /* Lamb: (2 x the trained parameters) their squared norms and their updates', whole on
	                          * every rank (autodiff.c, lamb_norms); -1 without */
	struct Lowering *lowering; /* lower.c's state (reusable redistributions), which differentiate extends */
	/* What the passes after lowering know of the operator at each position,
	 * side tables (nops each) carried along when a pass moves operators:
	 * NULL until the pass that fills them runs (see op_recomputes,
	 * op_shadow, op_bucket). */
	int *recomputes;         /* recompute.c: a clone of forward operator ops[recomputes[i]]; -1 */
	bool *shadow;            /* recompute.c: a clone of a kept operator whose operands are recomputed:
	                            not run (no code, its result the forward one's); the adjoint that
	                            points at it reads the recomputed operands through it */
	int *bucket;             /* bucket.c: an AllReduce of gradients: n > 1 on the first of n
	                            consecutive members sent in one call, -1 on the others, 0 alone */
	bool *once;              /* accumulate.c: (nops) run once a step, on the micro-batches' summed gradients
	                            (the rest run every micro-batch); NULL without accumulate_steps */
	bool *accumulated;       /* accumulate.c: (nvalues) summed over the micro-batches where the tail begins */
	struct Fusion *fusion;   /* (nops) fuse.c's side table; NULL before fuse_operators */
	int *strided;            /* (nvalues) fuse.c: the TransposeFolded laying a value out with strides, -1;
	                            NULL before fuse_operators */
} Lowered;

/* uneven.c (where a split that does not divide its dim is sound): uneven.h */

/* Reshape of a value laid out `in` (global dims idims) to out_t: the layout its split carries over to, when
 * every group of dims keeps its pieces contiguous; else false, bad[] marking the input dims that must be
 * gathered first. The search prices a Reshape with it. */
bool carry_reshape(const TensorLayout *in, const int64_t *idims, const Type *out_t, TensorLayout *out, bool *bad);
/* Requires strategies assigned. Redistributions are planned as the cost
 * model prices them: their steps weighed by cluster's links (cluster_links;
 * NULL: bytes alone). */
Lowered *lower(Module *m, const FlatGraph *f, const Strategies *st, const Cluster *cluster);
void lowered_free(Lowered *l);
/* The processes the programs run as: device_num x stages. */
int64_t lowered_ranks(const Lowered *l);
/* A pipeline whose stages overlap their micro-batches: stages and
 * micro-batches (accumulate_steps, after accumulate.c) both above 1. */
bool pipelined(const Lowered *l);
/* An input a step's batch may stream into (run.sh --data): the entry's own
 * inputs but parameters and the numbers written as operands. */
bool may_stream(const Lowered *l, int v);
/* Input v's rows in the step's batch, which its micro-batches split (rebatch.c); 0: not split. */
int64_t step_rows(const Lowered *l, int v);
/* ---- autodiff.c: the backward pass ------------------------------------ */

/* Requires a Lowered program of a module with a train block. Appends the backward pass of the loss: every
 * Parameter's gradient in its home layout (l->grad), the redistributions' adjoints, clipping by global norm. */
void differentiate(Lowered *l);

/* ---- recompute.c: forward values recomputed in the backward pass ----- */

/* Requires differentiate. Which forward operators (l->nfwd entries, malloc'd; NULL when none) the model asks
 * to recompute: the train block's recompute policy (checkpoint.c), then each operator's own `recompute:`, and
 * with optimizer_level 3 the AllGathers of sliced parameters. */
bool *recompute_marks(const Lowered *l);
/* Requires differentiate, before bucket_gradients. marked: (l->nfwd) the forward operators to recompute; an
 * inserted redistribution joins them when every forward operator reading its result is marked. Each backward
 * operator that reads a marked operator's result (through in[], or an adjoint through ops[of]) reads a clone
 * instead, computed just before the first such reader (op_recomputes); the forward values then die at their
 * last forward reader. A recomputed collective's bytes are sent again (comm_bytes). Returned values and the
 * loss are never recomputed. */
void recompute_forward(Lowered *l, const bool *marked);
/* The pipeline's stage: recompute_forward of recompute_marks, if any. */
void recompute(Lowered *l);
/* The forward operator the operator at position i recomputes, -1 when it
 * is no clone; whether it is a shadow (Lowered.shadow). */
int op_recomputes(const Lowered *l, int i);
bool op_shadow(const Lowered *l, int i);

/* ---- accumulate.c: gradient accumulation ------------------------------ */

/* Requires differentiate and recompute, before bucket_gradients. With the train block's accumulate_steps N
 * > 1: which backward operators run once a step on the gradients summed over N micro-batches (Lowered.once:
 * the parameters' gradient collectives and what follows them) and which values are summed where they begin
 * (Lowered.accumulated); comm_bytes and fwd_bytes become a step's, the rest sent N times. Else nothing. */
void accumulate_gradients(Lowered *l);
/* Whether operator i runs once a step (Lowered.once); how many times a step
 * it runs: accumulate_steps for the others, 1 without accumulation. */
bool op_once(const Lowered *l, int i);
int64_t op_runs(const Lowered *l, int i);

/* ---- bucket.c: gradient AllReduces in buckets ------------------------- */

/* Requires differentiate. The backward pass's AllReduces over one group,
 * dtype and reduction packed into buckets of up to bucket_bytes, each sent
 * once just before the first reader of one of its results (op_bucket); the
 * bytes sent do not change. bucket_bytes 0: one call per AllReduce. */
void bucket_gradients(Lowered *l, int64_t bucket_bytes);
/* Operator i's bucket: n > 1 on the first of n members sent in one call,
 * -1 on the others, 0 alone (Lowered.bucket). */
int op_bucket(const Lowered *l, int i);

/* ---- fuse.c: operators one kernel computes together -------------------- */

/* Requires bucket_gradients (every reader in place). Rewrites, in Float32: each Softmax along a whole axis
 * reading a Mul by a one-element tensor that nothing else reads into a SoftmaxScaled, a last-axis one
 * reading a mask's Add (of such a Mul, or not) into a SoftmaxMasked; each unary elementwise operator or
 * residual Add first reading a BiasAdd into a BiasUnary or a BiasAddResidual (the sum kept when something
 * later reads it); a normalizer's adjoints into one NormGrad. Then, in any float type, chains of
 * elementwise operators and Casts, each first read by the next, into one ElementwiseChain (sc_ew_chain).
 * Each operator a fused kernel computes becomes a Fused placeholder at its place. Last, each Transpose
 * keeping the last axis that only BatchMatMuls read or write on one side into a TransposeFolded (no copy),
 * and the BatchMatMuls (and adjoints) reading or writing its strided value into BatchMatMulStrided. */
void fuse_operators(Lowered *l);

/* How a TransposeFolded lays its two values in one buffer. */
typedef enum {
	FOLD_NONE,
	FOLD_READ,    /* the operand as it is; the result is its bytes, read with strides */
	FOLD_WRITE,   /* the result as it is; the operand was written into it with strides */
} TransposeFold;

/* What fuse.c knows of the operator at a position beyond its kind. */
typedef struct Fusion {
	const LOp *was;          /* rewritten: the operator it was (what its adjoints differentiate and the
	                            dumps print); NULL: as lowered */
	int into;                /* Fused: the position of the fused operator whose kernel computes it; -1 */
	bool writes;             /* Fused: that kernel stores its result too (read later); else no buffer */
	TransposeFold fold;      /* TransposeFolded: which of its two values keeps its layout */
	int first;               /* a fused kernel: its first placeholder (fused_parts), -1 */
	int next;                /* a placeholder: the next one of its kernel, -1 */
	DType rounds;            /* a half MatMul (or adjoint) writing Float32 for the Cast that only widened its
	                            result (fold_widening_casts): the half type it rounds that result to;
	                            DT_F32: none */
} Fusion;

enum { MAX_PARTS = 16 };   /* placeholders one fused kernel computes: a chain's members but its last */
/* The operator at position i as fusion found it (itself when unchanged). */
const LOp *unfused(const Lowered *l, int i);
/* The forward operator adjoint differentiates, as it was before fusion. */
const LOp *differentiated(const Lowered *l, const LOp *adjoint);
/* A MatMul or BatchMatMul (or one's adjoint) on two operands of one half
 * type: the runtime's *_half kernels take them as they are. */
bool matmul_on_halves(const Lowered *l, const LOp *o);
/* The Fused placeholders the kernel at position carrier computes, in
 * order, into at (MAX_PARTS at most); returns how many. */
int fused_parts(const Lowered *l, int carrier, int *at);
/* The TransposeFolded that lays value v out with strides, or NULL when v
 * is row-major in its buffer. */
const LOp *strided_by(const Lowered *l, int v);
/* v's strides in elements, per dim, where strided_by lays it out; its
 * row-major strides otherwise. */
void value_strides(const Lowered *l, int v, int64_t *strides);

/* op's attributes on `rank`: its group (written to members, room for
 * device_num), a slice's bounds, a split table's row offset. */
void lowered_rank_attrs(const Lowered *l, const LOp *op, int64_t rank, Attrs *a, int64_t *members);
/* lowered.c: where rank's piece of v starts in the global tensor: start[d] for each dim. */
void lowered_piece_start(const LValue *v, int64_t rank, int64_t *start);
/* lowered.c: a Tril's or Triu's diagonal on rank's piece of its result y, as MindSpore's TrilInfo and
 * TriuInfo replace it: the whole's, moved by the piece's first row minus its first column. */
int64_t tri_rank_diagonal(const LValue *y, OpKind op, int64_t diagonal, int64_t rank);
int64_t numel(const LValue *v);             /* elements of this rank's piece */
int64_t value_bytes(const LValue *v);       /* its bytes */

/* ---- dump.c: step_parallel_begin and step_parallel_end ---------------- */

void dump_begin(StrBuf *b, const Lowered *l);
void dump_end(StrBuf *b, const Lowered *l, int64_t rank);

/* ---- manifest.c: manifest.json, strategy.json, the operator table ---- */

/* Requires a Lowered program. malloc'd JSON text, the formats described at the top of manifest.c: every
 * input, parameter and output with its global shape, layout and piece (one shape and the rule placing it on
 * each rank), the groups, the collectives and comm_bytes_per_rank; and every operator's final strategy. */
char *manifest_json(const Lowered *l);
char *strategy_json(const Lowered *l);
/* shardc --list-ops: malloc'd text of ops.h's table (the language's
 * operators, not fuse.c's kinds), one line per operator with its columns
 * (docs/output.md), or with json a JSON array of one object per operator
 * (tools/ref_eval.py reads the precision classes from it). */
char *ops_list(bool json);

/* ---- dot.c: --dot FILE ------------------------------------------------- */

/* Requires a Lowered program. malloc'd Graphviz DOT text of the flat graph:
 * every operator with its strategy and its cost under cluster c, every input
 * and parameter with its layout, every edge with the redistribution it needs
 * and its bytes a rank (drawn heavier and redder the more it sends). */
char *dot_graph(const Lowered *l, const Cluster *c);

/* ---- plan.c, emit.c, build_files.c: the per-rank C programs, Makefile and run.sh */
/* (docs/output.md; operators' calls in emit_forward.c and emit_adjoint.c, their
 * arguments in emit_args.c, sharing emit_internal.h) */

typedef struct Program Program;      /* the buffer plan, groups and rank table every rank shares */

/* plan.c. Requires a Lowered program; model: the file named in the programs' comments. */
Program *emit_plan(const Lowered *l, const char *model);
/* The buffers only (the search's memory count: no pass per rank for the tables). */
Program *emit_plan_slab(const Lowered *l);
void emit_free(Program *p);
int64_t emit_slab_bytes(const Program *p);
int64_t emit_offset(const Program *p, int value);   /* where value's buffer starts in the slab */
int emit_view_of(const Program *p, int value);       /* the value whose buffer it shares (a copy not made), -1 none */
int emit_in_place_of(const Program *p, int value);   /* the value its operator overwrites with it, -1 none */
/* emit.c: program.c, the SPMD body every rank runs, reading the rank's numbers
 * from its table; emit_table.c: rank_<r>.c, rank r's table. build_files.c:
 * ranks.c, the tables by rank, the Makefile and run.sh. */
void emit_program(StrBuf *b, const Program *p);
void emit_table(StrBuf *b, const Program *p, int64_t rank);
void emit_ranks(StrBuf *b, const Lowered *l);
/* home: where shardc was built (its runtime/ and build/runtime/). */
void emit_makefile(StrBuf *b, const Lowered *l, const char *home);
void emit_run_sh(StrBuf *b, const Lowered *l);

/* ---- outdir.c: writing OUT ---------------------------------------------- */

/* shardc's exit statuses (docs/output.md, "Exit status"). */
enum { EXIT_MODEL = 1, EXIT_USAGE = 2, EXIT_INTERNAL = 3, EXIT_IO = 4 };

/* Requires a compilation run to its memory plan. Writes manifest.json, strategy.json, rank_<r>.c, Makefile,
 * run.sh (and ir/ with dump_ir; the stages of c->dump_after under ir/after_<stage>) into a staging folder
 * beside OUT and swaps it in whole. 0; EXIT_USAGE when OUT is a file or a folder shardc did not write;
 * EXIT_IO when a write failed (message printed, OUT left as it was). */
int outdir_write(const char *outdir, const Compilation *c, bool dump_ir);

#endif
