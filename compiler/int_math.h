/* int_math.h: MindSpore's integer operators (Invert, PopulationCount,
 * LeftShift, RightShift), ReverseV2 and TraceV2 (int_math.c): their result
 * types for shape.c, their op dims for rules.c. */
#ifndef SHARDC_INT_MATH_H
#define SHARDC_INT_MATH_H

#include "shardc.h"

/* TraceV2's diagonal dims of a rank-r x, non-negative: *a1 along which the
 * diagonal's index i runs, *a2 where it is i + offset. */
void trace_v2_axes(const Attrs *a, int rank, int *a1, int *a2);
/* Whether ReverseV2 with attributes a reverses dim d of a rank-r x. */
bool reverse_v2_reverses(const Attrs *a, int rank, int d);
/* Their op dims (rules.c's op_dims) on x: ReverseV2's x's dims, the reversed
 * ones whole (MindSpore's ReverseV2Info, Softmax's rule); TraceV2's x's dims,
 * axis1 and axis2 whole (TraceV2Info), the result the others. */
void reverse_v2_dims(const Type *x, const Node *n, OpDims *od);
void trace_v2_dims(const Type *x, const Node *n, OpDims *od);
/* Emission's (emit_forward.c, emit_adjoint.c): after "sc_reverse(rt, x, y, "
 * or "sc_trace(rt, x, y, " x's dims, its rank and the operator's own
 * arguments, closing the call; an integer operator's sc_intop. */
void int_math_args(StrBuf *b, OpKind op, const Type *x, const Attrs *a);
const char *int_math_kernel(OpKind op);

#endif
