/* resize.c: MindSpore's image resizes on NCHW, y = ResizeNearestNeighbor(x)
 * and y = ResizeBilinearV2(x) {size: (h, w), align_corners, half_pixel_centers}:
 * y (N, C, h, w) samples each (N, C) plane of x (N, C, H, W) with
 * MindSpore's coordinates (runtime sc_resize, docs/operators.md). Its
 * result shape for shape.c, its op dims for rules.c and its kernel
 * arguments for emit_forward.c and emit_adjoint.c. MindSpore's
 * ResizeBilinearV2 takes size as a second input; here it is an attribute,
 * as ResizeNearestNeighbor's. N and C split as MindSpore's
 * ResizeBilinearV2Info and ResizeNearestNeighborInfo split them. Nearest's
 * H and W split too without align_corners, as MindSpore's, evenly (in and
 * out), each rank resizing its piece: exact when every output row of a
 * piece reads a row of the same piece, which resize_split_ok checks with
 * the kernel's own Float32 arithmetic. Bilinear's H and W stay whole
 * (MindSpore splits its W with a neighbour exchange shardc lacks). */
#include "shape_internal.h"
#include "rules_internal.h"
#include "emit_internal.h"
#include "resize.h"

#include <math.h>

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
	}   /* else nearest's H and W split as resize_split_ok allows */
	identity_input(od, 0, x->rank);
}

/* sc_cpu_resize's nearest index, in its Float32 arithmetic */
static int64_t nearest_at(int64_t o, int64_t in, int64_t out, bool half)
{
	float scale = (float)in / (float)out;
	float s = half ? ((float)o + 0.5f) * scale : (float)o * scale;
	int64_t i = (int64_t)floorf(s);
	return i < in - 1 ? i : in - 1;
}

bool resize_split_ok(const Node *n, const OpDims *od, const int64_t *split, StrBuf *why)
{
	if (n->op != OP_RESIZE_NEAREST)
		return true;
	for (int s = 0; s < 2; s++) {
		int64_t k = split[2 + s], in = od->size[2 + s], out = n->a.shape[s];
		const char *dim = s ? "W" : "H";
		if (k <= 1)
			continue;
		if (in % k || out % k) {
			if (why)
				sb_printf(why, "ResizeNearestNeighbor: %s is split into %lld, which must divide both x's %lld and "
				          "the result's %lld (each rank resizes its even piece, as MindSpore's "
				          "ResizeNearestNeighborInfo); split it by a common divisor or keep it whole (1)", dim,
				          (long long)k, (long long)in, (long long)out);
			return false;
		}
		int64_t pin = in / k, pout = out / k;
		for (int64_t o = 0; o < out; o++) {
			int64_t want = nearest_at(o, in, out, n->a.half_pixel_centers);
			if (want == o / pout * pin + nearest_at(o % pout, pin, pout, n->a.half_pixel_centers))
				continue;
			if (why)
				sb_printf(why, "ResizeNearestNeighbor: %s split into %lld: the result's %s %lld reads x's %lld, "
				          "which a rank resizing its own piece would not read (Float32 rounding of the scale "
				          "%lld / %lld); keep %s whole (1)", dim, (long long)k, dim, (long long)o, (long long)want,
				          (long long)in, (long long)out, dim);
			return false;
		}
	}
	return true;
}

void resize_args(StrBuf *b, const Program *p, const LOp *f, const char *x, const char *y)
{
	const LValue *xv = &p->l->values[f->in[0]], *yv = &p->l->values[f->result];
	const int64_t *xd = xv->type.dims, *yd = yv->type.dims;
	sb_printf(b, "%d, %s, %s, %lld, %lld, %lld, %lld, %lld, %d, %d", f->op == OP_RESIZE_BILINEAR, x, y,
	          (long long)(xd[0] * xd[1]), (long long)xd[2], (long long)xd[3], (long long)yd[2], (long long)yd[3],
	          f->a.align_corners, f->a.half_pixel_centers);
}
