/* conv.h: the windowed operators (Conv2D, MaxPool, AvgPool): their
 * attributes, as conv.c decodes and prints them, and their geometry. */
#ifndef SHARDC_CONV_H
#define SHARDC_CONV_H

#include "shardc.h"

/* Conv2D's and the pools' pad_mode (MindSpore's, any case): Attrs.pad_mode. */
typedef enum { PAD_VALID, PAD_SAME, PAD_PAD } PadMode;

/* One windowed operator on its x (n, c, h, w) (NCHW): the window, its
 * stride, dilation and padding, and the result's (n, o, ho, wo). */
typedef struct {
	int64_t n, c, h, w, o;   /* x's dims; o: Conv2D's out_channel, a pool's c */
	int64_t kh, kw, sh, sw, dh, dw, groups;   /* groups: Conv2D's group, each its C / groups channels */
	int64_t pt, pb, pl, pr;  /* padding: top, bottom, left, right */
	int64_t ho, wo;          /* the result's height and width (< 1: x too small) */
} Window;

bool op_is_window(OpKind op);   /* Conv2D, Conv2DTranspose, MaxPool, AvgPool */
bool op_is_conv(OpKind op);     /* Conv2D, Conv2DTranspose */
/* Whether conv.c decodes attribute k of op (its kinds differ from the table's: pad, group, strides). */
bool window_attr(OpKind op, AttrKind k);
/* Attribute k of a windowed operator into a; false with a message in err and where it points in *at. */
bool window_decode_attr(OpKind op, AttrKind k, const Lit *v, Attrs *a, StrBuf *err, Span *at);
/* Its attributes' defaults (MindSpore's). */
void window_defaults(Attrs *a);
/* Attribute k as the IR writes it, when conv.c decodes it; false otherwise. */
bool window_print_attr(StrBuf *b, OpKind op, const Attrs *a, AttrKind k);
/* Its geometry on an x of dims x_dims (rank 4), MindSpore's output sizes and padding. */
void window_of(OpKind op, const Attrs *a, const int64_t *x_dims, Window *g);
/* Its op dims (rules.c's op_dims) on x and the result out. */
void window_dims(const Type *x, const Type *out, const Node *n, OpDims *od);

#endif
