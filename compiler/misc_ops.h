/* misc_ops.h: MindSpore's Range, UniformReal, LpNorm, ClipByNorm and IOU
 * (misc_ops.c): Range's operands made Arange's attributes and the other
 * three written as their pieces as the parser builds the statement, the
 * attributes of Range and UniformReal decoded for check.c, UniformReal's
 * seed for emit_args.c. */
#ifndef SHARDC_MISC_OPS_H
#define SHARDC_MISC_OPS_H

#include "shardc.h"

/* MindSpore's P.Range(start, limit, delta) {maxlen}, written with its three
 * numbers as operands: *operands emptied and the numbers put in *attrs as
 * Arange's start, stop and step (their spans kept, so messages point at
 * them). Leaves both as written, for check.c to report, when the operands
 * are not three numbers or the attributes name start, stop or step. */
void range_as_arange(Arena *a, Lit **operands, Lit **attrs, Span at);
/* Whether a statement written `Range(...)` is this rewrite's Arange (check.c's messages). */
bool is_range(const Node *n);
/* UniformReal's generator seed: seed and seed2 as one number when either is
 * given, else the model's (the context's seed), as a Dropout's. */
uint64_t uniform_real_seed(const Attrs *a, uint64_t model_seed);
/* maxlen, seed or seed2 of n into n->a; false after a message. */
bool decode_misc_attr(Diag *d, const Source *src, Node *n, AttrKind k, const Lit *v);

/* One statement an expanded one becomes: name = op(operands) {attrs}. */
typedef struct {
	const char *name, *op;
	Lit *operands, *attrs;   /* a tuple as the parser builds one; a dict or NULL */
	Signature *sig;          /* the written statement's, on its last piece */
} Piece;
/* LpNorm(x), ClipByNorm(x, clip_norm) and IOU(anchors, gts), MindSpore's,
 * written as the operators that compute them (docs/operators.md): the
 * statement `name` as its pieces, `name.lp_norm_abs` and the like (names a
 * model can write, so the dumps read back), the last one name itself,
 * in *out; returns how many (0 after a message), or -1 for any other
 * operator. */
int expand_composite(Arena *ar, Diag *d, const Source *src, const char *name, const char *op, Span op_at,
                     Lit *operands, Lit *attrs, Signature *sig, Piece **out);

#endif
