/* lower_internal.h: what lower.c shares with autodiff.c, which extends the
 * same program with its backward pass (through Lowered.lowering). */
#ifndef LOWER_INTERNAL_H
#define LOWER_INTERNAL_H

#include "shardc.h"

typedef struct {
	TensorLayout to;
	int result;              /* LValue holding the source in layout `to` */
	int next;                /* the source's next Reuse, -1 at the end */
} Reuse;

typedef struct {
	int stage;               /* where the copy is */
	int result;              /* the copy: a SendRecv's result */
	int next;                /* the source's next Sent, -1 at the end */
} Sent;

typedef struct Lowering {
	Lowered *l;
	Arena *a;
	int *vmap;               /* flat value id -> LValue id of its delivered form */
	Reuse *reuse;
	int nreuse, cap_reuse;
	RedistCache *plans;      /* the redistributions' searches, weighed as the cost model weighs them */
	int stage;               /* the pipeline stage the operators and values made now belong to */
	Sent *sent;              /* lower_on_stage's copies, listed from their sources (LValue.sent) */
	int nsent, cap_sent;
} Lowering;

/* A new LValue: the piece of a tensor of type `global` laid out by `layout`. */
int lower_value(Lowering *x, const char *name, const Type *global, const TensorLayout *layout);
/* A new operator appended to the program, its result still to be set. */
LOp *lower_op(Lowering *x, OpKind op, int nin, const char *why);
/* src in layout `want` (complete; it may point into the values): the cheapest redistribution appended,
 * each step an operator that says why (`user`), reused by later requests. */
int lower_redistribute(Lowering *x, int src, const TensorLayout *want, const char *user);
/* Value v as the ranks of the current stage (x->stage) hold it: v, or its
 * copy sent there from v's stage (a SendRecv, made once per value and stage). */
int lower_on_stage(Lowering *x, int v);
/* The global type of a value's tensor. */
const char *lower_suffixed_name(Lowering *x, const char *base, const char *suffix);
Type lower_global_type(const LValue *v);
/* v (its dims whole where this changes its pieces) as a value of global
 * type gt: a local StridedSlice that cuts an uneven dim's gathered pieces
 * (their padding last: piece s holds [s len, (s + 1) len) of the padded dim)
 * to the whole's size, or reaches past the whole's end to pad it to a
 * multiple of the split a collective scatters it into (the runtime reads
 * zeros there); where a split dim's pieces keep their length (the padded
 * dim and the whole split alike), a copy that only retypes them. No
 * communication; `what` ends the operator's comment. */
int lower_repad(Lowering *x, int v, const Type *gt, const char *user, const char *what);

/* ---- lower_pad.c: the padding of uneven pieces ---- */
/* A PadFill's attributes: the padding along dim set to fill. */
void lower_pad_fill_attrs(Attrs *a, int dim, double fill);
/* v with its padding along each of `axes` that is split unevenly made `fill`
 * (PadFills, pieces of flat node `node`; `what` says whose). */
int lower_fill_uneven(Lowering *x, int node, int v, const int64_t *axes, int naxes, double fill, const char *what);
/* Flat node i's operands `ins` PadFilled where its padding must hold a value. */
void lower_fill_operands(Lowering *x, int i, int *ins);
/* Flat node i's result v, PadFilled where the node is a computed constant. */
int lower_fill_result(Lowering *x, int i, int v);

#endif
