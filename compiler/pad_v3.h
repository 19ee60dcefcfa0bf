/* pad_v3.h: MindSpore's PadV3 in its constant mode (pad_v3.c): its
 * attributes, as check.c decodes and dump.c prints them, its paddings per
 * dim, its constant and its op dims. */
#ifndef SHARDC_PAD_V3_H
#define SHARDC_PAD_V3_H

#include "shardc.h"

/* Whether pad_v3.c decodes attribute k of op: PadV3's paddings,
 * paddings_contiguous and mode (a string here, where the table's mode is
 * RotaryPositionEmbedding's integer). */
bool pad_v3_attr(OpKind op, AttrKind k);
/* Attribute k of a PadV3 into a; false with a message in err and where it points in *at. */
bool pad_v3_decode_attr(OpKind op, AttrKind k, const Lit *v, Attrs *a, StrBuf *err, Span *at);
/* Attribute k as the IR writes it, when pad_v3.c decodes it; false otherwise. */
bool pad_v3_print_attr(StrBuf *b, OpKind op, const Attrs *a, AttrKind k);
/* The elements added before (lo) and after (hi) each of a rank-r x's dims,
 * paddings read from the last dim back (paddings_contiguous, or all the
 * befores, then all the afters); 0 on the dims it does not name. */
void pad_v3_bounds(const Attrs *a, int rank, int64_t *lo, int64_t *hi);
/* The constant of PadV3 o in the lowered program: its number operand, 0 without one. */
double pad_v3_value(const Lowered *l, const LOp *o);
/* Its op dims (rules.c's op_dims) on x: x's dims, those it pads whole. */
void pad_v3_dims(const Type *x, const Node *n, OpDims *od);

#endif
