/* shape_internal.h: shape inference's state and the helpers its cases
 * share (shape_util.c), for shape.c, the pass. */
#ifndef SHAPE_INTERNAL_H
#define SHAPE_INTERNAL_H

#include "shardc.h"

typedef struct {
	Module *m;
	Diag *d;
	Graph *g;
	Node *n;                 /* the operator being inferred */
} Infer;

#define ERR(x, span, ...) diag_error((x)->d, (x)->m->src, (span), __VA_ARGS__)

/* A type's dims as text in a caller's buffer, so messages can take several. */
const char *dims_text(const Type *t, char *buf, size_t size);
#define DIMS(t) dims_text((t), (char[200]){0}, 200)   /* 8 dims of up to 21 characters fit */

const Type *in_type(Infer *x, int k);   /* operand k's type */
Span in_span(Infer *x, int k);          /* where operand k is written */
/* Operand k as a message names it, in b: '%name', or a number as written. */
const char *in_name(Infer *x, int k, StrBuf *b);
const char *opname(Infer *x);
/* Each false after its message: the attribute is written, operands a and b
 * have one element type, operand k is a float. */
bool need_attr(Infer *x, AttrKind k);
bool same_dtype(Infer *x, int a, int b);
bool need_float(Infer *x, int k);
bool need_bool(Infer *x, int k);   /* operand k Bool, else an error naming it */
/* Where attribute `name` is written, for messages; the operator when it is not. */
Span attr_span(Infer *x, const char *name);
/* Axis a of a rank-r tensor in [0, r), in *out; false after its message. */
bool infer_axis(Infer *x, int64_t a, int r, int64_t *out);

/* The view operators' result shapes (shape_views.c); false after a message. */
bool infer_reshape(Infer *x, const Type *in, Type *out);
bool infer_transpose(Infer *x, const Type *in, Type *out);
bool infer_flatten(Infer *x, const Type *in, Type *out);
bool infer_expand_dims(Infer *x, const Type *in, Type *out);
bool infer_squeeze(Infer *x, const Type *in, Type *out);
bool infer_stack(Infer *x, const Type *in, Type *out);
/* Tile's and OneHot's (shape_views.c, beside them); BiasAdd's and PReLU's, a vector along one dim of x. */
bool infer_tile(Infer *x, const Type *in, Type *out);
bool infer_one_hot(Infer *x, const Type *in, Type *out);
/* ArgMaxWithValue, ArgMinWithValue, Argmax, Argmin; TopK (shape_views.c). */
bool infer_arg_reduce(Infer *x, const Type *in, Type *out);
bool infer_topk(Infer *x, const Type *in, Type *out);
bool infer_square_sum_all(Infer *x, const Type *in, Type *out);
bool infer_scan(Infer *x, const Type *in, Type *out);   /* CumSum, CumProd */
bool infer_triangle(Infer *x, const Type *in, Type *out);   /* Tril, Triu */
bool infer_bias_add(Infer *x, const Type *in, Type *out);
bool infer_prelu(Infer *x, const Type *in, Type *out);
/* The slicing operators' (shape_slice.c): StridedSlice, Split, Slice. */
bool infer_strided_slice(Infer *x, const Type *in, Type *out);
bool infer_split(Infer *x, const Type *in, Type *out);
bool infer_split_v(Infer *x, const Type *in, Type *out);
bool infer_slice(Infer *x, const Type *in, Type *out);
/* The computed constants' (shape_constants.c): no operands, the value from the attributes. */
bool infer_constant(Infer *x, Type *out);
/* DropoutDoMask's (shape_constants.c, beside DropoutGenMask's): x and the mask DropoutGenMask drew for it. */
bool infer_dropout_do_mask(Infer *x, const Type *in, Type *out);
/* Conv2D's and the pools' (conv.c). */
bool infer_conv2d(Infer *x, const Type *in, Type *out);
bool infer_conv2d_transpose(Infer *x, const Type *in, Type *out);
bool infer_pool(Infer *x, const Type *in, Type *out);
bool infer_batch_norm(Infer *x, const Type *in, Type *out);   /* shape_views.c */
/* The unsorted segment reductions' (segment.c). */
bool infer_segment(Infer *x, const Type *in, Type *out);
bool infer_pad_v3(Infer *x, const Type *in, Type *out);   /* PadV3's (pad_v3.c) */
bool infer_resize(Infer *x, const Type *in, Type *out);   /* ResizeNearestNeighbor's, ResizeBilinearV2's (resize.c) */
/* int_math.c's: Invert, PopulationCount, the shifts (shape.c broadcasts them after), ReverseV2, TraceV2. */
bool infer_int_math(Infer *x, const Type *in, Type *out);
bool infer_kldiv_loss(Infer *x, const Type *in, Type *out);   /* KLDivLoss's (kldiv_loss.c) */
bool infer_embedding_lookup(Infer *x, const Type *in, Type *out);   /* embedding_lookup.c */
/* GatherD's and L2Normalize's. */
bool infer_gather_d(Infer *x, const Type *in, Type *out);
bool infer_l2_normalize(Infer *x, const Type *in, Type *out);
/* GatherNd's and the tensor scatters' (scatter_nd.c). */
bool infer_gather_nd(Infer *x, const Type *in, Type *out);
bool infer_tensor_scatter(Infer *x, const Type *in, Type *out);
bool infer_state(Infer *x, const Type *in, Type *out);   /* STATE_OPS (scatter_state.c) */

#endif
