/* misc_ops.h: MindSpore's Range and UniformReal (misc_ops.c): Range's
 * operands made Arange's attributes as the parser builds the statement,
 * their attributes decoded for check.c, UniformReal's whole shape for
 * shape_constants.c. */
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

/* LpNorm(x) and ClipByNorm(x, clip_norm), MindSpore's, written as the
 * operators that compute them (docs/operators.md): the statement `name`
 * becomes its pieces, `name#piece`, built through add_stmt, the last one
 * name itself. False, and nothing built, for any other operator. */
struct Parser;
bool expand_composite(struct Parser *p, const char *name, Span at, const char *op, Span op_at, Lit *operands,
                      Lit *attrs, Signature *sig, Span stmt_at);

#endif
