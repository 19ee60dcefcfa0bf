/* scatter_state.h: MindSpore's Ref operators that update a state Parameter
 * in place (STATE_OPS: ScatterUpdate .. ScatterMin, ScatterNdUpdate, Add,
 * Sub, AssignAdd, AssignSub): their result shapes for shape.c, op dims for
 * rules.c, the checks on their state Parameters for check_kernels.c, and
 * the view emission takes (scatter_state.c). */
#ifndef SHARDC_SCATTER_STATE_H
#define SHARDC_SCATTER_STATE_H

#include "shardc.h"
#include "scatter_nd.h"

struct Infer;

/* The tensor scatter whose kernel a scatter row runs (ScatterAdd and
 * ScatterNdAdd: TensorScatterAdd's); OP_COUNT for AssignAdd and AssignSub. */
OpKind state_scatter_kind(OpKind op);
/* x seen through the indices as the tensor scatters see it: the Scatter
 * rows' indices name x's dim 0 (n 1, m their size), the ScatterNd rows'
 * their last dim's (nd_view). */
void state_view(OpKind op, const Type *x, const Type *indices, NdView *v);
/* The op dims (rules.c). Scatter: x's dims, dim 0 whole for Update, Max,
 * Min (MindSpore's ScatterOpsInfo), split for Add, Sub, Mul, Div
 * (ScatterMathOpsInfo: each rank applies the updates whose index falls in
 * its rows); the indices whole; updates the indices' dims then x's
 * trailing ones. ScatterNd: the tensor scatter's (tensor_scatter_dims). */
void state_scatter_dims(OpKind op, const Type *x, const Type *indices, OpDims *od);
/* InplaceAdd, Sub, Update (rules.c): x's dims, dim 0 whole (MindSpore's
 * InplaceOpBase), v's dim 0 whole and its others split as x's. */
void inplace_dims(const Type *x, const Type *v, OpDims *od);
/* Every state operator's x a Parameter of the entry graph read by it alone;
 * a model that would need ScatterMul's or ScatterDiv's updates' gradient
 * refused (MindSpore registers none). Requires shapes inferred. */
/* The node of g whose x (a STATE_OPS row's operand 0) value v is, -1 none. */
int state_writer(const Graph *g, int v);
void check_state_writers(const Module *m, const Graph *g, Diag *d);
/* Every state operator's x the Parameter itself, where it lives, not a
 * redistributed copy (whose update would be lost); false after a message.
 * Requires the program lowered (pipeline.c, beside check_uneven). */
bool check_state_layouts(const Lowered *l, Diag *d);

#endif
