/* resize.c: MindSpore's image resizes on NCHW, y = ResizeNearestNeighbor(x)
 * and y = ResizeBilinearV2(x) {size: (h, w), align_corners, half_pixel_centers}:
 * y (N, C, h, w) samples each (N, C) plane of x (N, C, H, W) with
 * MindSpore's coordinates (runtime sc_resize, docs/operators.md). Its
 * result shape for shape.c, its op dims for rules.c and its kernel
 * arguments for emit_forward.c and emit_adjoint.c. MindSpore's
 * ResizeBilinearV2 takes size as a second input; here it is an attribute,
 * as ResizeNearestNeighbor's. N and C split as MindSpore's
 * ResizeBilinearV2Info and ResizeNearestNeighborInfo split them; H and W
 * stay whole (MindSpore splits bilinear's W with a neighbour exchange and
 * nearest's H and W without align_corners, which shardc does not do). */
#include "shape_internal.h"
#include "rules_internal.h"
#include "emit_internal.h"
#include "resize.h"

/* x a 4-d float (N, C, H, W); size two positive integers; align_corners
 * and half_pixel_centers not both (MindSpore refuses them together). */
bool infer_resize(Infer *x, const Type *in, Type *out)
{
	const Attrs *a = &x->n->a;
	const char *op = op_info[x->n->op].name;
	StrBuf b = {0};
	bool ok = false;
	if (!need_float(x, 0))
		;
	else if (in->rank != 4)
		ERR(x, in_span(x, 0), "%s: x %s %s has %d dims; it resizes NCHW images, 4 dims (N, C, H, W)", op,
		    in_name(x, 0, &b), DIMS(in), in->rank);
	else if (!(a->present & ATTR_BIT(ATTR_SIZE)))
		ERR(x, x->n->op_span, "%s needs the attribute 'size', the result's (height, width): %s(%%x) {size: (16, "
		    "16)}%s", op, op, x->n->op == OP_RESIZE_BILINEAR ? " (MindSpore's second input, an attribute here)" : "");
	else if (a->nshape != 2 || a->shape[0] < 1 || a->shape[1] < 1)
		ERR(x, attr_span(x, "size"), "%s: size is the result's (height, width), two integers of 1 or more; it "
		    "has %d entr%s%s", op, a->nshape, a->nshape == 1 ? "y" : "ies", a->nshape == 2 ? ", not both positive" : "");
	else if (a->align_corners && a->half_pixel_centers)
		ERR(x, attr_span(x, "half_pixel_centers"), "%s: align_corners and half_pixel_centers are both true; "
		    "MindSpore takes one or the other: drop one of them", op);
	else
		ok = true;
	sb_free(&b);
	if (!ok)
		return false;
	*out = *in;
	out->is_param = false;
	out->dims[2] = a->shape[0];
	out->dims[3] = a->shape[1];
	return true;
}

void resize_dims(const Type *x, const Node *n, OpDims *od)
{
	for (int d = 0; d < x->rank; d++)
		add_dim(od, x->dims[d], NULL);
	od->batch = 0;
	if (n->op == OP_RESIZE_BILINEAR) {
		keep_whole(od, 2, "H, which MindSpore's ResizeBilinearV2 never splits");
		keep_whole(od, 3, "W, which shardc keeps whole: MindSpore's ResizeBilinearV2 splits it with a neighbour "
		           "exchange shardc lacks");
	} else if (n->a.align_corners) {
		keep_whole(od, 2, "H, which MindSpore's ResizeNearestNeighbor keeps whole with align_corners");
		keep_whole(od, 3, "W, which MindSpore's ResizeNearestNeighbor keeps whole with align_corners");
	} else {
		keep_whole(od, 2, "H, which shardc keeps whole: MindSpore's ResizeNearestNeighbor splits it without "
		           "align_corners, each rank resizing its piece");
		keep_whole(od, 3, "W, which shardc keeps whole: MindSpore's ResizeNearestNeighbor splits it without "
		           "align_corners, each rank resizing its piece");
	}
	identity_input(od, 0, x->rank);
}

void resize_args(StrBuf *b, const Program *p, const LOp *f, const char *x, const char *y)
{
	const LValue *xv = &p->l->values[f->in[0]], *yv = &p->l->values[f->result];
	const int64_t *xd = xv->type.dims, *yd = yv->type.dims;
	sb_printf(b, "%d, %s, %s, %lld, %lld, %lld, %lld, %lld, %d, %d", f->op == OP_RESIZE_BILINEAR, x, y,
	          (long long)(xd[0] * xd[1]), (long long)xd[2], (long long)xd[3], (long long)yd[2], (long long)yd[3],
	          f->a.align_corners, f->a.half_pixel_centers);
}
