/* layout.h: tensor layouts, what an operator's strategy means for them, and
 * the cheapest way between two (layout.c, rules.c, redistribute.c). Part of
 * shardc.h, which includes it where the graph's types are declared: include
 * shardc.h. */
#ifndef SHARDC_LAYOUT_H
#define SHARDC_LAYOUT_H

/* ---- layout.c: tensor layouts over a device matrix ---------------------- */

/* Where each piece of a tensor lives (docs/language.md, Layouts). Ranks are numbered
 * row-major over the device matrix dev[0..ndev): axis 0 most significant, the
 * last fastest. Every device axis plays one of three roles: it splits one
 * tensor dim (it appears in exactly one map[d]), it holds partial results
 * (its bit is in `partial`), or it holds copies (a replica axis: neither).
 * A dim split over several axes takes its shard index from them in map order,
 * the first the most significant. Axes of size 1 are allowed (MindSpore keeps
 * them so that axis i of a strategy's matrix is dim i); they change nothing. */
typedef struct {
	int ndev;                        /* device axes, 0..MAX_AXES; 0: one device */
	int64_t dev[MAX_AXES];           /* (ndev) axis sizes, most significant first */
	int rank;                        /* tensor rank (dims), 0..MAX_DIMS */
	int8_t nmap[MAX_DIMS];           /* (rank) device axes splitting each dim; 0: whole */
	int8_t map[MAX_DIMS][MAX_AXES];  /* (rank, nmap[d]) those axes, most significant first */
	uint32_t partial;                /* bit a: the values are partial along axis a */
	ReduceOp partial_op;             /* how partials combine; meaningful when partial != 0 */
} TensorLayout;

/* Requires split[0..rank) >= 1, 0 <= rank <= MAX_DIMS, device_num >= 1.
 * MindSpore's matrix for a strategy tuple: the tuple itself, 1s included, dim i
 * split over axis i, then the repeated axis device_num / product appended last
 * (fastest, so neighbouring ranks hold the copies) when product < device_num.
 * False when the product does not divide device_num. */
bool layout_from_split(const int64_t *split, int rank, int64_t device_num, TensorLayout *out);
/* Requires t->given (a None strategy has no layout yet). A tuple goes through
 * layout_from_split; a layout application takes its LayoutDecl's matrix and
 * t->axes as the maps. False when the devices do not fit: see
 * layout_from_split, or the declared matrix's product is not device_num. */
bool layout_from_strategy(const TensorStrategy *t, int64_t device_num, TensorLayout *out);
/* Requires device_num >= 1. The whole tensor on every rank: dev (device_num). */
void layout_replicated(int rank, int64_t device_num, TensorLayout *out);
/* Requires a layout that passes layout_check (dims aside). Product of dev. */
int64_t layout_ndevices(const TensorLayout *l);
/* Requires 0 <= dim < l->rank. How many slices `dim` is cut into. */
int64_t layout_dim_split(const TensorLayout *l, int dim);
/* Requires 0 <= rank < layout_ndevices(l); coords has room for ndev. */
void layout_coords(const TensorLayout *l, int64_t rank, int64_t *coords);
/* Requires 0 <= coords[a] < dev[a]. The inverse of layout_coords. */
int64_t layout_rank_of(const TensorLayout *l, const int64_t *coords);
/* Requires a valid rank and 0 <= dim < l->rank. Which slice of `dim` the rank
 * holds, 0..split-1, mixed radix over the dim's axes, the first most significant. */
int64_t layout_shard_index(const TensorLayout *l, int64_t rank, int dim);
/* Requires global[dim] >= 1. How many elements of `dim` each rank's piece
 * holds: ceil(global / split) (docs/language.md, Uneven splits). Shard s
 * holds [s * len, (s + 1) * len) of the whole; where that reaches past the
 * dim (an uneven split: the last shards) the rest of the piece is padding. */
int64_t layout_piece_len(const TensorLayout *l, const int64_t *global, int dim);
/* Whether `dim`'s split does not divide it: its pieces end in padding. */
bool layout_uneven(const TensorLayout *l, const int64_t *global, int dim);
/* local[d] = layout_piece_len(l, global, d) for every dim. */
void layout_local_shape(const TensorLayout *l, const int64_t *global, int64_t *local);
/* Requires a valid rank, `axes` within the matrix, and members with room for
 * the product of those axes' sizes. The ranks that agree with `rank` on every
 * axis outside `axes`, ordered row-major by their coordinates on `axes` (ascending rank order):
 * the member order of a collective over those axes in matrix order
 * (layout_group_ordered for another).
 * Returns the count; axes 0 gives just `rank`. */
int layout_group(const TensorLayout *l, int64_t rank, uint32_t axes, int64_t *members);
/* layout_group with the members ordered by their coordinates on the n axes
 * of `order`, the first the most significant (a gather along a dim split
 * over those axes in that order concatenates the pieces so). */
int layout_group_ordered(const TensorLayout *l, int64_t rank, const int *order, int n, int64_t *members);
/* Mask of the axes that hold copies: used by no dim and not partial. */
uint32_t layout_replica_axes(const TensorLayout *l);
/* The other axes: those splitting some dim or holding partial results. */
uint32_t layout_busy_axes(const TensorLayout *l);
/* The device axes over which an operator's gradient for an input (layout
 * `in`) is partial: those splitting its output (`out`, or leaving it partial)
 * but not the input. autodiff.c makes the gradient so; the search prices
 * their AllReduce (cost.c). */
uint32_t grad_partial_axes(const TensorLayout *in, const TensorLayout *out);
/* Requires 0 <= index[d] < global[d]. The
 * ranks whose shard holds element `index` (its whole value, or a partial of
 * it when the layout is partial), in ascending order; at most `max` are
 * written, and the full count is returned: the product of the sizes of the
 * replica and partial axes. */
int64_t layout_owner_of(const TensorLayout *l, const int64_t *global, const int64_t *index, int64_t *ranks,
                        int max);
/* Drops size-1 device axes, renumbering the maps and the partial mask (a
 * partial over one device is complete). in and out may be the same. */
void layout_normalize(const TensorLayout *in, TensorLayout *out);
/* layout_normalize, then merges each pair of neighbouring axes that play one
 * role: both replica, both partial, or consecutive in one dim's map. Two
 * layouts place every element on the same ranks iff their canonical forms are
 * identical. in and out may be the same. */
void layout_canonical(const TensorLayout *in, TensorLayout *out);
/* Requires valid layouts. Same tensor rank, same number of devices, and the
 * same slice (and partial state) of the tensor on every rank, however the
 * device matrices are factored. */
bool layout_equal(const TensorLayout *a, const TensorLayout *b);
/* l made whole (no partial axes) the cheapest way: its partial axes scatter
 * into the first dim whose piece (piece: this rank's dims under l) they
 * divide, half an AllReduce's bytes; else they are summed in place. */
void layout_completed(const TensorLayout *l, const int64_t *piece, TensorLayout *out);
/* Consistency: sizes in range, every axis used at most once, partial disjoint
 * from the used axes and within the matrix, and, when global is not NULL,
 * every dim at least as large as its split (a split that does not divide
 * its dim is uneven: layout_piece_len). False with a one-line reason in why[0..n). */
bool layout_check(const TensorLayout *l, const int64_t *global, char *why, size_t n);
/* Appends `dev (2, 2, 2) map ((2), (1)) partial sum (0)`: the device matrix,
 * then for each dim the axes it is split over (`()`: whole), then, only when
 * some axis is partial, the reduce op (sum or max) and the partial axes. Lists
 * never take a trailing comma, so one-element lists read `(8)`. */
void layout_print(StrBuf *b, const TensorLayout *l);
/* Requires layouts over the same number of devices. Rewrites both onto one
 * matrix, the coarsest that refines both, with neighbouring axes that play
 * one role in both merged. False when the two matrices share no refinement
 * ((2, 3) and (3, 2): rank digits that cut across each other). */
bool layout_common_matrix(const TensorLayout *a, const TensorLayout *b, TensorLayout *ra, TensorLayout *rb);
/* l on m's device matrix (the same layout, its axes those of m), when m's
 * matrix refines l's; false otherwise. */
bool layout_on_matrix(const TensorLayout *l, const TensorLayout *m, TensorLayout *out);

/* Appends what to do about dim i of `type`, which splits[i] slices do not
 * cut (evenly, with `even`), for messages refusing the split: `: pad it to
 * ..., or cut dim j instead ..., or cut dim i into ...`; never to cut a dim
 * of `keep` (a bit each: dims the operator keeps whole). */
void split_advice(StrBuf *b, const Type *type, const int64_t *splits, int i, int64_t devices, bool even,
                  uint32_t keep);
/* Each of split[0..n) cut to the largest count, at most it, that the
 * devices the splits before it leave divide: a strategy that fits, for
 * messages suggesting one. */
void splits_fit_devices(int64_t *split, int n, int64_t devices);

/* ---- rules.c: what an operator's strategy means ------------------------- */

enum { MAX_OPDIMS = 2 * MAX_DIMS };   /* BatchMatMul: batch dims + i, k, j; Gather: v, h + index dims */
enum { MAX_RULE_INPUTS = 7 };         /* inputs described one by one (BatchNorm piece's seven); Concat's later ones repeat the last */

/* An operator's iteration space ("op dims") and which op dim each dim of its
 * inputs and output follows. A strategy splits op dims. */
typedef struct {
	int nod;
	int64_t size[MAX_OPDIMS];            /* (nod) */
	const char *name[MAX_OPDIMS];        /* (nod) "i", "k", "j"...; NULL: "dim N" */
	int nin;
	int in_rank[MAX_RULE_INPUTS];
	int8_t in_dim[MAX_RULE_INPUTS][MAX_DIMS];  /* op dim of input k's dim d; -1: broadcast, never split */
	int out_rank;
	int8_t out_dim[MAX_DIMS];            /* (out_rank) op dim each output dim follows; -1: none */
	uint32_t reduced;                    /* op dims the output drops: split ones leave partials */
	ReduceOp reduce_op;                  /* how those partials combine */
	uint32_t normalized;                 /* op dims a softmax normalizes over: split, their statistics are
	                                      * completed across the group (lower.c) */
	int8_t nstats_fwd, nstats_bwd;       /* those statistics' AllReduces, forward and in the backward pass */
	uint32_t whole;                      /* op dims the operator keeps whole */
	uint32_t gathered;                   /* of those, the ones a strategy may split all the same: lowering
	                                      * gathers them before the operator (the search never splits them) */
	int64_t also[MAX_OPDIMS];            /* a split must divide this evenly too (0: nothing): the key heads of
	                                      * grouped-query attention, which follow the query heads' op dim */
	const char *whole_why[MAX_OPDIMS];   /* "the softmax axis" */
	int batch;                           /* op dim the batch-parallel default splits; -1: none */
	uint8_t strategy_out;                /* inputs (a bit each) whose in_strategy entry names the output's dims,
	                                      * as MindSpore's OneHot (indices) and Tile (x) take it */
	bool strategy_named;                 /* input 0's in_strategy entry names the op dims in named[], not
	                                      * in_dim[0]'s: a windowed operator's x, whole along a split H or W */
	int8_t named[MAX_DIMS];
} OpDims;

/* A strategy resolved onto op dims: the operator's device matrix and the
 * device axes splitting each op dim. */
typedef struct {
	int ndev;
	int64_t dev[MAX_AXES];               /* (ndev) MindSpore's matrix, most significant first */
	int8_t nax[MAX_OPDIMS];
	int8_t ax[MAX_OPDIMS][MAX_AXES];     /* (nod, nax) axes splitting each op dim, most significant first */
	int64_t split[MAX_OPDIMS];           /* (nod) slices per op dim */
	bool tuple;                          /* from slice counts (else from a Layout) */
	const LayoutDecl *decl;              /* the Layout, when not a tuple */
} OpSplit;

/* Requires shapes inferred. False for operators without op dims: Reshape
 * (no strategy of its own), Call, the collectives. */
bool op_dims(const Graph *g, const Node *n, OpDims *od);
const char *op_dim_name(const OpDims *od, int dim, char *buf, size_t size);
/* MindSpore's default, batch parallel: od->batch split by the largest divisor
 * of device_num that divides it (all devices when they do), the rest whole. */
void op_split_default(const OpDims *od, int64_t device_num, OpSplit *out);
/* parallel_mode data_parallel's: od->batch split over all device_num
 * devices, unevenly where they do not divide it and the operator takes that
 * (op_dim_takes); else op_split_default. */
void op_split_data_parallel(const Node *n, const OpDims *od, int64_t device_num, OpSplit *out);
/* Requires the product of split[] to divide device_num. Matrix: the op dims'
 * splits in order, 1s kept, the repeated axis appended last. */
void op_split_from_splits(const OpDims *od, const int64_t *split, int64_t device_num, OpSplit *out);
/* Requires check_strategies passed. Resolves the user's in_strategy (tuples
 * or Layouts, None inputs inferred), reporting a wrong one at its span with a
 * strategy that would be right. */
bool op_split_from_strategy(const OpDims *od, const Node *n, const Strategy *s, int64_t device_num, OpSplit *out,
                            Diag *d, Source *src);
/* False, with the reason in why (NULL: none), where the operator's MindSpore Info refuses op-dim splits `split`
 * together though each alone is right (EmbeddingLookup's); the search proposes none of those. */
bool op_split_allowed(const Node *n, const OpDims *od, const int64_t *split, int64_t device_num, StrBuf *why);
void op_in_layout(const OpDims *od, const OpSplit *s, int k, TensorLayout *out);   /* how input k must arrive */
void op_out_layout(const OpDims *od, const OpSplit *s, TensorLayout *out);        /* the output, partial included */
/* Input k's in_strategy entry: its slice counts, or the output's where
 * od->strategy_out names it; returns its length. */
int op_in_split(const OpDims *od, const OpSplit *s, int k, int64_t *split);
/* The op dims input k's in_strategy entry names, one per entry (-1 none), in
 * *dims; returns its length. */
int op_strategy_dims(const OpDims *od, int k, const int8_t **dims);

/* ---- redistribute.c: the cheapest way between two layouts -------------- */

typedef enum { STEP_ALL_REDUCE, STEP_REDUCE_SCATTER, STEP_ALL_GATHER, STEP_ALL_TO_ALL, STEP_SLICE } StepKind;
enum { MAX_STEPS = 64 };

typedef struct {
	StepKind kind;
	ReduceOp op;             /* AllReduce, ReduceScatter */
	int dim;                 /* dim gathered or scattered; AllToAll: the dim the axis leaves (concat) */
	int dim2;                /* AllToAll: the dim the axis joins (split) */
	uint32_t axes;           /* the group: these axes of from's matrix; 0 for a slice */
	TensorLayout from, to;   /* before and after (a slice may change matrices) */
	int64_t bytes;           /* sent by every rank */
} RedistStep;

typedef struct {
	int n;
	RedistStep step[MAX_STEPS];
	int64_t bytes;           /* sent by every rank, all steps */
} RedistPlan;

/* How a plan's steps are weighed: the bytes a rank sends, times inter_weight
 * for a step whose groups span more than one node of devices_per_node ranks
 * (the intra-node bandwidth over the inter-node one), so that a plan keeps
 * traffic off the slow links where that costs less time, not only where it
 * sends fewer bytes. {0, 1}: bytes alone (redist_plan's). */
typedef struct {
	int64_t devices_per_node;
	int64_t inter_weight;
} RedistLinks;

/* Whether two collective steps go over the same groups of ranks, listed in
 * the same order. */
bool redist_same_group(const RedistStep *a, const RedistStep *b);
/* The axes of a collective step's group in the order its members are listed
 * (into order; returns how many), the first the most significant: as the
 * dim it gathers (or scatters, for a ReduceScatter) is split over them, so
 * that the pieces meet in the dim's order; ascending where that says
 * nothing (an AllReduce). */
int redist_step_order(const RedistStep *s, int *order);
/* Bytes a rank sends in one step over n members, in_bytes its input (docs/output.md). */
int64_t redist_step_bytes(StepKind kind, int64_t in_bytes, int64_t n);
/* Requires layouts over one device count, `to` complete, global divisible by
 * both. The cheapest plan in bytes; empty when they already agree. */
void redist_plan(const TensorLayout *from, const TensorLayout *to, const int64_t *global, int64_t elem_bytes,
                 RedistPlan *plan);
/* The searches redist_plan runs, kept between calls (a cost model asks for
 * plans from one layout to many): the same plans, found sooner; their steps
 * weighed by `links` (NULL: bytes alone). */
typedef struct RedistCache RedistCache;
RedistCache *redist_cache_new(const RedistLinks *links);
void redist_cache_free(RedistCache *c);
/* redist_plan, with the searches kept in c and weighed by its links (NULL:
 * none kept, bytes alone). */
void redist_plan_kept(RedistCache *c, const TensorLayout *from, const TensorLayout *to, const int64_t *global,
                      int64_t elem_bytes, RedistPlan *plan);
/* Whether step s can run on pieces split unevenly (docs/language.md, Uneven
 * splits): it moves no dim split unevenly before or after it but to gather
 * one whole (AllGather, AllToAll's concat dim: lower.c then leaves the
 * padding out) or to cut or scatter a whole one (a slice, ReduceScatter,
 * AllToAll's split dim: padded with zeros first). False with the dim in *dim. */
bool redist_step_sound(const RedistStep *s, const int64_t *global, int *dim);
/* Whether every step of the cheapest plan from `from` to `to` is sound. */
bool redist_sound(const RedistPlan *plan, const int64_t *global);
/* Requires a STEP_SLICE. Where rank's piece of `to` lies in its piece of `from`. */
void redist_slice_bounds(const RedistStep *s, int64_t rank, const int64_t *global, int64_t *begin, int64_t *end);

#endif
