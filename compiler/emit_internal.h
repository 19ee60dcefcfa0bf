/* emit_internal.h: what the emitter's files share (plan.c, emit_args.c,
 * emit_forward.c, emit_adjoint.c, emit.c): the Program, the buffer plan and
 * rank table every rank's program.c is written from, and the helpers that
 * write a runtime call's arguments. plan.c is at the bottom and calls none
 * of the others; emit_args.c calls only plan.c; emit_forward.c and
 * emit_adjoint.c call those two; emit.c calls them all. */
#ifndef EMIT_INTERNAL_H
#define EMIT_INTERNAL_H

#include "shardc.h"
#include "conv.h"

enum { ALIGN = 256 };

struct Program {
	const Lowered *l;
	const char *model;       /* the model file, named in comments (sb_c_comment) */
	int64_t *offset;         /* (nvalues) byte offset in the slab */
	int *view;               /* (nvalues) the value whose buffer this one shares (copied_value), -1 none */
	int *in_place;           /* (nvalues) the value whose buffer this one overwrites (plan_in_place), -1 none */
	int64_t *state;          /* (nparams) optimizer state's offset (Adam: m, then v); -1 none */
	int64_t *acc;            /* (nvalues) an accumulated gradient's Float32 sum's offset, -1; NULL without */
	/* A pipeline with micro-batches (pipelined()): a value a micro-batch's
	 * forward pass makes and its backward pass reads has one buffer per
	 * micro-batch its stage holds at once (pipeline_in_flight), micro-batch
	 * m's at offset + (m % slots) x stride; an input one per micro-batch of
	 * the step, filled at the step's start. */
	int *slots;              /* (nvalues) 1: one buffer */
	int64_t common_bytes;    /* on a pipeline: the inputs' and numbers' bytes, held by every rank */
	int64_t *stage_persistent; /* (stages) where each stage's persistent bytes end (its parameters', state's, sums') */
	int64_t *stride;         /* (nvalues) bytes from one slot to the next */
	int64_t slab_bytes, persistent_bytes, scratch;  /* scratch: the temporary after the operators (updates) */
	int64_t *op_scratch;     /* (nops) where operator i's temporary starts (op_scratch()), -1 none */
	const char **cname;      /* (nvalues) C identifiers */
	const char **arg;        /* (nvalues) what an operator passes: cname, or a half value's Float32 copy */
	const struct Widened *widened;   /* while a kernel runs on half values' Float32 copies (emit.c): which */
	int *partition;          /* (nops) index into part[] of a collective's group, -1 none */
	int *part;               /* (npart) an op of each partition of the ranks into groups */
	int npart;
	/* The rank table: what program.c reads as T[pos .. pos + n) */
	struct Entry *entry;     /* (nentry) in table order */
	int nentry;
	int64_t tlen;            /* numbers in a rank's table */
	int64_t *tab;            /* (device_num, tlen) every rank's table */
	int *value_entry;        /* (nvalues) entry of a value's piece start, -1 none */
	int *op_entry;           /* (nops) entry of an op's rank's attributes or pieces, -1 none */
	int *part_entry;         /* (npart) entry of the first member of the rank's group */
	const TensorLayout **mat;   /* (nmat) the device matrices the entries are formulas on */
	int nmat;
};

/* One rank-dependent item of the table, a formula of the rank's row-major
 * coordinates on a device matrix. */
typedef enum {
	E_GROUP,     /* at partition k: the first member of the rank's group (1 number) */
	E_PIECE,     /* at value v: where the rank's piece starts, per dim (rank numbers): an input's, a result's,
	              * and the results of Dropout (its mask), PadFill (its padding), the windows (their first rows),
	              * Tril and Triu (where their diagonal falls), the tensor scatters (x's piece) */
	E_SLICE,     /* at op i, a slice or a computed constant's piece: its begin, then its end, per dim */
	E_OFFSET,    /* at op i, a Gather of a split table: the first row the rank holds (1) */
	E_SQNORM,    /* at op i, a global norm: per gradient piece, its size if the rank
	              * holds its first copy, else 0 (nin numbers) */
} EntryKind;

typedef struct Entry {
	EntryKind kind;
	int at, n;
	int64_t pos;         /* its numbers are T[pos .. pos + n); -1: the same on every rank, lit */
	const int64_t *lit;  /* (n) with pos -1: the numbers, written into program.c */
	int first;           /* the first entry with the same numbers on every rank (it names them) */
	int nsame;           /* on a first entry: how many others share its place */
} Entry;

/* MAX_WIDENED (shardc.h): a normalizer's adjoint widens dy, x, gamma, beta, y and dx */

typedef struct Widened {
	int value[MAX_WIDENED];
	int64_t off[MAX_WIDENED];       /* the Float32 copy's offset in the slab */
	int n, nread;                   /* value[0..nread) are read, the rest written */
	int64_t bytes;                  /* scratch the copies take */
} Widened;

/* ---- emit.c and emit_pipeline.c ---- */

/* text with a tab more on each line. */
void indent(StrBuf *b, const StrBuf *text);
/* text, whole lines indented alike, run only by the ranks of pipeline stage
 * `stage`: an `if (stage == s)` around it (none without stages, for stage
 * -1, or where text is only comments). */
void on_stage(StrBuf *b, const Program *p, int stage, StrBuf *text);
/* A pipeline's step: its n micro-batches' inputs into their slots; then its
 * passes, forward and backward holding the passes' code, in its stage's order. */
void emit_pipeline_inputs(StrBuf *b, const Program *p, int64_t n);
void emit_pipeline_passes(StrBuf *b, const Program *p, int64_t n, const StrBuf *forward, const StrBuf *backward);

/* ---- plan.c: sizes, half operands widened, scratch, groups ---- */

int64_t aligned(int64_t n);                  /* n rounded up to ALIGN */

/* Offsets for n buffers of size[k] bytes alive from operator def[k] to
 * last[k] (def <= last): the largest first (then the earlier, then the
 * lower k), each at the lowest offset where it shares no byte with a placed
 * buffer alive with it. Returns the bytes they span. */
int64_t place_lives(int n, const int64_t *size, const int *def, const int *last, int64_t *off);
/* place_lives for buffers in groups that are never alive on one rank
 * together (pipeline stages): group -1 (every rank's) first, then each of
 * groups 0 .. ngroups-1 from the same offset after it. */
int64_t place_lives_grouped(int n, const int64_t *size, const int *def, const int *last, const int *group, int ngroups,
                            int64_t *off);
/* A BatchMatMul's adjoint for a broadcast input: the product, with the
 * result's batch dims, is summed down to the input's shape (in the kernel's
 * scratch, kernel_scratch). */
bool bmm_grad_summed(const Lowered *l, const LOp *o);
/* A product on halves (matmul_on_halves) that writes its result of their
 * type itself, the Float32 sums rounded once in the kernel: all but a
 * summed gradient's (bmm_grad_summed), whose result has a Float32 copy. */
bool matmul_rounds(const Lowered *l, const LOp *o);
/* Where operator o's temporary starts: the widened copies of its half
 * operands and result, its kernel's scratch (plan.c places it with the
 * values alive while o runs). */
int64_t op_scratch(const Program *p, const LOp *o);
/* The bytes of operator o's temporary (op_scratch): its kernel's, then its
 * half operands' and result's Float32 copies. */
int64_t scratch_bytes(const Lowered *l, const LOp *o);
/* A half elementwise backward operator that one sc_ew_chain computes on the
 * half values themselves, its result rounded once as the widened kernel's
 * would be (no Float32 copies): the sum of two gradients (GRAD_ACCUM), a
 * unary operator's adjoint (from its input or output, as its row says, and
 * dy), and a binary one's for an operand it did not broadcast, when that
 * gradient is dy times or over the other operand (Mul's, Div's first) or dy
 * negated (Sub's second). *other: the operand the chain reads beside
 * o->in[0] (-1: none), and *bcast how (ew_bcast). */
bool half_chain(const Lowered *l, const LOp *o, int *other, const char **bcast);
/* How an sc_ew_chain over n elements of last dim c reads value v: its
 * sc_ew_bcast's C name (SC_EW_FULL, SC_EW_ROW: along the last axis,
 * SC_EW_SCALAR), or NULL: none of these. */
const char *ew_bcast(const LValue *v, int64_t n, int64_t c);
/* The half values operator o reads and writes, their Float32 copies placed
 * from offset base on. */
void widened(const Lowered *l, const LOp *o, int64_t base, Widened *w);
/* The squared norm's (GRAD_SQNORM) Float32 copy of its largest half
 * gradient, aligned; 0 when every gradient is Float32. */
int64_t sqnorm_copy(const Lowered *l, const LOp *o);
/* The temporary a kernel needs: a broadcast BatchMatMul's gradient before
 * it is summed down to its input's shape; a bucket of AllReduces packed. */
int64_t kernel_scratch(const Lowered *l, const LOp *o);
/* The optimizer's state per parameter, in buffers of the parameter's size:
 * SGD's accumulation (with momentum), Momentum's v, Adam's m and v. */
int state_slots(const Train *t);
/* The group of rank for a collective of partition op, as sc_group_split_grid
 * takes it: its first member, then for each run of neighbouring group axes
 * (of the matrix the ranks are numbered row-major over) its size and rank
 * stride; ng runs, n members. Only first depends on the rank. */
int64_t group_grid(const LOp *op, int64_t rank, int64_t *size, int64_t *stride, int *ng, int64_t *n);

/* ---- emit_update.c: the optimizer's step ---- */
/* The weight decay parameter p (value id) takes: weight_decay_params', else MindSpore's default filter. */
double decay_of(const Train *t, int p, const char *name);
/* Parameter v's update in the step loop (its half copies widened around it). */
void emit_update(StrBuf *b, const Program *p, int v);
/* GRAD_LAMB_NORMS: Lamb's per-rank squared norms of each parameter and its update. */
void emit_lamb_norms(StrBuf *b, const Program *p, const LOp *o);

/* ---- emit_checkpoint.c: a training run's checkpoints (docs/output.md) ---- */

/* `ck`, the run's checkpoint options, in every program (one that does not
 * train refuses them). */
void emit_checkpoint_options(StrBuf *b, const Program *p);
/* Requires a train block, after the parameters are loaded and the loss
 * scaling counters declared. `first`, the first step, and with --resume the
 * newest checkpoint's parameters, optimizer state and counters. */
void emit_resume(StrBuf *b, const Program *p);
/* Requires a train block; at the end of a step. The checkpoint when due. */
void emit_checkpoint(StrBuf *b, const Program *p);

/* ---- emit_args.c: a runtime call's arguments ---- */

void dims_lit(StrBuf *b, const int64_t *dims, int rank);
void ints_lit(StrBuf *b, const int64_t *v, int n);
const char *sc_dtype_name(DType t);
const char *c_type(DType t);
/* `<name>, <dims>, <rank>` of a value: how most kernels take a tensor. */
void tensor_arg(StrBuf *b, const Program *p, int v);
/* The bytes of value v as the kernel being emitted sees it: its Float32
 * copy's where it runs on widened half values (Program.widened). */
int64_t arg_bytes(const Program *p, int v);
/* Tile's x and result as a broadcast (sc_broadcast_to, sc_sum_to_shape):
 * a repeated dim of x becomes a new dim of 1 before it, which the result's
 * repeats fill; runs of alike dims merged. The views' dims in xd and yd;
 * returns their rank (at most MAX_DIMS: shape.c's bound). */
int tile_view(const Type *x, const Type *y, int64_t *xd, int64_t *yd);
/* The picking operators' x (ArgMaxWithValue, Argmax, TopK) viewed (outer,
 * n, inner), n the dim they pick along; returns whether they pick the
 * minimum (sc_arg_reduce's is_min). */
int arg_view(OpKind op, const Attrs *a, const Type *x, int64_t *outer, int64_t *n, int64_t *inner);
/* y = a op b, numpy broadcasting: values a, b and y; call sc_binary or sc_compare. */
void emit_binary(StrBuf *b, const Program *p, const char *call, const char *op, int a, int bb, int y);
void emit_rotary(StrBuf *b, const Program *p, int64_t mode, int transpose, int x, int cos, int sin, const char *y);
void emit_flash_attention(StrBuf *b, const Program *p, const LOp *f, const Attrs *a, const char *const *grads,
                          const char *dy, const char *y);
const char *redop_name(ReduceOp op);
/* Reduced axes, non-negative; all of them when none are named. */
int64_t norm_axis(int64_t axis, int rank);
/* Numbers [k, k + n) of entry e: `T + pos` (array) or `T[pos]`, or the
 * numbers themselves where every rank has the same. */
void entry_ref(StrBuf *b, const Entry *e, int k, int n, bool array);
/* The table entry of operator o, or NULL. */
const Entry *op_table(const Program *p, const LOp *o);
void piece_args(StrBuf *b, const Program *p, int v);
/* A state scatter's (STATE_OPS) `idx, dtype, m`, and `[gdims, ]start, ldims, n, inner` of its x (a
 * parameter: its piece's start), as sc_tensor_scatter and its adjoint take them (scatter_state.c's view). */
void state_index_args(StrBuf *b, const Program *p, const LOp *f);
void state_shape_args(StrBuf *b, const Program *p, const LOp *f, bool global);   /* `gdims, ndim, start, ldims` of value v's piece */
/* Those of micro-batch `micro`'s rows of input v as written, where the step's batch is split among the
 * micro-batches (micro_batches "auto", rebatch.c): the step's gdims, the rank's piece moved down micro x rows. */
void step_piece_args(StrBuf *b, const Program *p, int v);
/* The values program.c names (declares a pointer for), malloc'd (nvalues). */
bool *named_values(const Program *p);
/* ptr, the bytes of value v, as a loader's destination or a writer's
 * source: with pipeline stages only the ranks of v's stage hold v, the
 * others pass NULL (none of it). */
void held_arg(StrBuf *b, const Program *p, int v, const char *ptr);
/* A Dropout's mask: its piece, its key and the step (emit_args.c) */
void dropout_args(StrBuf *b, const Program *p, const LOp *f, double keep_prob);
/* DropoutGenMask's: the same for its piece of the whole mask, `shape` (emit_args.c) */
void gen_mask_args(StrBuf *b, const Program *p, const LOp *f, const Attrs *a);
/* StridedSlice's begin, end and strides for every dim (missing ones: whole);
 * a slice redistribution's bounds are the rank's, from the table. */
void slice_args(StrBuf *b, const Program *p, const LOp *o, const Attrs *a, const LValue *x);
/* Gather's offset (a split table's first row) and a class-split cross
 * entropy's (its first class) are the rank's, from the table. */
void offset_arg(char *buf, size_t size, const Program *p, const LOp *o, const Attrs *a);
/* A Gather's table x seen as (outer, rows, row): the dims before its axis, the axis, the dims after */
void gather_dims(const LValue *x, const Attrs *a, int64_t *outer, int64_t *rows, int64_t *row);
/* GatherNd's and the tensor scatters' arguments (scatter_nd.c's view of x
 * and the indices): `{dims}, n, inner` and `idx, idx_dtype, m`; their
 * sc_scatter_op. */
void nd_shape_args(StrBuf *b, const Lowered *l, int x, int idx);
void nd_index_args(StrBuf *b, const Program *p, int x, int idx);
const char *scatter_kernel(OpKind op);
/* A tensor scatter f's `[gdims, ]start, ldims, n, inner`: x's indexed dims
 * in the whole (global), where the rank's piece starts and its own. */
void scatter_shape_args(StrBuf *b, const Program *p, const LOp *f, bool global);
/* `&(const sc_window){...}`: a windowed operator's geometry on the rank's
 * pieces, x (n, c, h, w) and its result value y (n, o, ho, wo) (conv.c's
 * window_of); where x is whole along a dim the result splits, the rank's
 * rows (columns) from its first, the padding shifted by its piece's start */
void window_arg(StrBuf *b, const Program *p, OpKind op, const Attrs *a, const LValue *x, int y);
/* A BatchNorm's x seen as (n, c, hw), this rank's piece; *count the values a channel has in the whole x */
void batch_norm_dims(const LValue *x, int64_t dims[3], int64_t *count);
/* An L2Normalize's x seen as (outer, n, inner): the dims before its axis, the axis, the dims after */
void l2_normalize_dims(const LValue *x, const Attrs *a, int64_t dims[3]);
/* A PReLU's x seen as (outer, channels, inner): dims 0, 1 and the rest; below rank 2, one channel (1, 1, n) */
void prelu_dims(const LValue *x, int64_t *outer, int64_t *c, int64_t *inner);
/* A segment reduction's kernel (sc_segment_op), and its calls' arguments around `what`: the kernel,
 * x (value x, -1 NULL), the ids (value ids), then the view of f (segment.c): rows, inner, segments. */
const char *segment_kernel(OpKind op);
void segment_args(StrBuf *b, const Program *p, const LOp *f, int x, int ids, const char *what);
/* A segment reduction's statistic over the rank's rows (autodiff.c's GRAD_TIE_COUNT of one). */
void emit_segment_stat(StrBuf *b, const Program *p, const LOp *o);
/* CumSum's and CumProd's last arguments: x as (outer, n, inner) around the scanned axis, exclusive, reverse */
void scan_args(StrBuf *b, const LValue *x, const Attrs *a);
int64_t scan_slices(const LValue *totals, const Attrs *a);   /* a split axis's piece: the slices, k */
void pad_args(StrBuf *b, const Program *p, int v, int dim);
/* Tril's and Triu's: their piece (lead, rows, cols), where it starts (row0, col0), the whole's diagonal */
void triangle_args(StrBuf *b, const Program *p, const LOp *f);
/* PadV3's: forward sc_pad's dims, ndim, lo, hi, value; backward (grad) sc_strided_slice's of dy, x's box */
void pad_v3_args(StrBuf *b, const Program *p, const LOp *f, const Attrs *a, bool grad);
/* Whether a mean of x over axes reduces a dim split unevenly; *scale: what
 * a local sum of x (its padding 0) is multiplied by for the rank's share of
 * the whole's mean, which the ranks' partial means then average: the
 * product of the axes' splits over that of their whole sizes. */
bool uneven_mean(const LValue *x, const int64_t *axes, int naxes, double *scale);
/* uneven_mean's scale times the piece's count over `axes`: what turns the
 * piece's mean (its count padded) into its share of the whole's mean. */
bool uneven_mean_factor(const LValue *x, const int64_t *axes, int naxes, double *factor);
/* uneven_mean_factor over every dim of x: MSELoss's and L1Loss's mean. */
bool loss_uneven_scale(const LValue *x, double *scale);
void emit_matmul_dims(const LOp *f, const Lowered *l, int64_t *m, int64_t *n, int64_t *k);
/* `sc_matmul(rt, ` or, on half operands, `sc_matmul_half(rt, SC_BF16, `;
 * sc_batch_matmul likewise. */
void matmul_call(StrBuf *b, const Lowered *l, const LOp *o, bool batch);
/* The product's c: `c`, or on half operands `c, SC_BF16` (matmul_rounds)
 * or `c, SC_F32` (a Float32 product, c a Float32 buffer). */
void matmul_out(StrBuf *b, const Lowered *l, const LOp *o, const char *c);
/* A BatchMatMulStrided (or its adjoint), of which one value is laid out by
 * a TransposeFolded (fuse.c): every operand by its strides, batch dims
 * aligned to the result's (y, nb of them) from the right, 0 where one
 * repeats. */
void strided_bmm_call(StrBuf *b, const Program *p, const LOp *o, const int v[3], const char *c,
                      const LValue *y, int64_t m, int64_t n, int64_t k, int ta, int tb);

/* ---- emit_forward.c and emit_adjoint.c: one operator's runtime call ---- */

void emit_collective(StrBuf *b, const Program *p, const LOp *o, int i);
void emit_forward(StrBuf *b, const Program *p, const LOp *o, const Attrs *a);
/* The gradient of input o->k of forward operator f, from dy. */
void emit_adjoint(StrBuf *b, const Program *p, const LOp *o, const Attrs *fa, int64_t scratch_off);

#endif
