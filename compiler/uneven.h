/* uneven.h: where a split that does not divide its dim is sound (uneven.c),
 * for lowering, the search and the padding's fill (lower_pad.c). */
#ifndef UNEVEN_H
#define UNEVEN_H

#include "shardc.h"

/* Requires a lowered program. False, with an error at the first operator from ops[from] on an uneven split of
 * which would count its padding or let a gradient reach it (see uneven.c), saying which split would work: the
 * forward program after lowering (from 0), the backward pass's redistributions after differentiation (from
 * nfwd). */
bool check_uneven(const Lowered *l, int from, Diag *d);
/* Whether op dim o of node n may be cut into `split` slices: evenly, or unevenly where uneven.c accepts that
 * for every operator of its kind (the search proposes uneven splits only there). */
bool op_dim_takes(const Node *n, const OpDims *od, int o, int64_t split);
/* Whether v's padding along dim d holds zeros, on the forward program lowered so far (lowering asks before an
 * uneven contraction). */
bool uneven_padding_zero(const Lowered *l, int v, int d);
/* What operand k of op needs its padding along an uneven split to hold (lower_pad.c) where its value or slope at 0 is
 * not finite, else 0: 1 for Log, Sqrt, Rsqrt, Reciprocal, Inv, a divisor, Atan2's x, Xlogy's y, Hypot's x, Pow's
 * base; 2 for Acosh. */
double slope_pad(OpKind op, int k);

#endif
