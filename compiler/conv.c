/* conv.c: the windowed operators, MindSpore's Conv2D, Conv2DTranspose
 * (Conv2D's gradient with respect to x, its geometry Conv2D's on the
 * result), MaxPool and AvgPool on NCHW tensors: their attributes (whose forms differ from the table's
 * kinds: Conv2D's pad is a number or four, its group a number, the pools'
 * strides a number or a pair), their geometry (the output sizes and the
 * padding as MindSpore computes them), their result shapes for shape.c and
 * their op dims for rules.c. Everything else reads the geometry through
 * window_of. */
#include "shape_internal.h"
#include "conv.h"
#include "rules_internal.h"

#include <ctype.h>
#include <string.h>

bool op_is_window(OpKind op)
{
	return op_is_conv(op) || op == OP_MAX_POOL || op == OP_AVG_POOL;
}

bool op_is_conv(OpKind op)
{
	return op == OP_CONV2D || op == OP_CONV2D_TRANSPOSE;
}

bool window_attr(OpKind op, AttrKind k)
{
	if (op == OP_BATCH_NORM)   /* its data_format, decoded as Conv2D's */
		return k == ATTR_DATA_FORMAT;
	if (!op_is_window(op))
		return false;
	switch (k) {
	case ATTR_OUT_CHANNEL: case ATTR_KERNEL_SIZE: case ATTR_MODE: case ATTR_PAD_MODE: case ATTR_PAD: case ATTR_STRIDE:
	case ATTR_STRIDES: case ATTR_DILATION: case ATTR_GROUP: case ATTR_DATA_FORMAT: case ATTR_INPUT_SIZE:
		return true;
	default:   /* an attribute, not an operator: the others are the table's */
		return false;
	}
}

void window_defaults(Attrs *a)
{
	for (int i = 0; i < 2; i++)
		a->kernel[i] = a->stride[i] = a->dilation[i] = 1;
	a->pad_mode = PAD_VALID;
	a->groups = 1;
}

/* A number or a pair (or MindSpore's four, (1, 1, h, w)) of integers of at least lo, into out[2]. */
static bool pair(const Lit *v, int64_t lo, int64_t out[2], const char *name, StrBuf *err, Span *at)
{
	int64_t w[4];
	int n = 0;
	if (v->kind == LIT_INT)
		w[n++] = v->i;
	for (int i = 0; v->kind == LIT_TUPLE && i < v->nitems && i < 4; i++) {
		if (v->items[i]->kind != LIT_INT)
			break;
		w[n++] = v->items[i]->i;
	}
	bool ok = v->kind == LIT_INT || (v->kind == LIT_TUPLE && n == v->nitems && (n == 2 || (n == 4 && w[0] == 1 &&
	                                                                                      w[1] == 1)));
	for (int i = 0; ok && i < n; i++)
		ok = w[i] >= lo;
	if (!ok) {
		sb_printf(err, "%s is an integer of at least %lld or a pair (h, w) of them (or (1, 1, h, w), MindSpore's "
		          "four), e.g. %s: 3 or %s: (3, 3)", name, (long long)lo, name, name);
		*at = v->span;
		return false;
	}
	out[0] = w[n == 4 ? 2 : 0];
	out[1] = w[n == 4 ? 3 : n == 2 ? 1 : 0];
	return true;
}

static bool str_ieq(const char *a, const char *b)
{
	for (; *a && *b; a++, b++)
		if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
			return false;
	return *a == *b;
}

bool window_decode_attr(OpKind op, AttrKind k, const Lit *v, Attrs *a, StrBuf *err, Span *at)
{
	const char *opn = op_info[op].name;
	*at = v->span;
	switch (k) {
	case ATTR_OUT_CHANNEL:
		if (v->kind != LIT_INT || v->i < 1) {
			sb_printf(err, "%s's out_channel, %s, is a positive integer", opn, op == OP_CONV2D ?
			          "the result's channels (the weight's dim 0)" : "dout's channels and the weight's dim 0");
			return false;
		}
		a->out_channel = v->i;
		return true;
	case ATTR_KERNEL_SIZE: return pair(v, 1, a->kernel, "kernel_size", err, at);
	case ATTR_STRIDE: case ATTR_STRIDES: return pair(v, 1, a->stride, attr_info[k].name, err, at);
	case ATTR_DILATION: return pair(v, 1, a->dilation, "dilation", err, at);
	case ATTR_PAD: {
		int n = v->kind == LIT_INT ? 1 : v->kind == LIT_TUPLE ? v->nitems : 0;
		bool ok = n == 1 || n == 4;
		for (int i = 0; ok && i < n; i++) {
			const Lit *p = v->kind == LIT_INT ? v : v->items[i];
			ok = p->kind == LIT_INT && p->i >= 0;
			if (ok)
				a->pad_list[i] = p->i;
		}
		if (!ok) {
			sb_printf(err, "%s's pad is a non-negative integer or four of them, (top, bottom, left, right)", opn);
			return false;
		}
		for (int i = n; i < 4; i++)
			a->pad_list[i] = a->pad_list[0];
		return true;
	}
	case ATTR_PAD_MODE: {
		bool conv = op_is_conv(op);
		if (v->kind == LIT_STR && (str_ieq(v->s, "valid") || str_ieq(v->s, "same") || (conv && str_ieq(v->s, "pad")))) {
			a->pad_mode = str_ieq(v->s, "valid") ? PAD_VALID : str_ieq(v->s, "same") ? PAD_SAME : PAD_PAD;
			return true;
		}
		sb_printf(err, "%s's pad_mode is %s", opn, conv ? "\"valid\", \"same\" or \"pad\"" : "\"VALID\" or \"SAME\"");
		return false;
	}
	case ATTR_MODE:
		if (v->kind != LIT_INT || v->i != 1) {
			sb_printf(err, "%s's mode is 1 (MindSpore's only mode, a plain convolution); leave it out", opn);
			return false;
		}
		return true;
	case ATTR_GROUP:
		if (v->kind != LIT_INT || v->i < 1) {
			sb_printf(err, "%s's group, the number of channel groups convolved apart, is a positive integer", opn);
			return false;
		}
		a->groups = v->i;
		return true;
	case ATTR_DATA_FORMAT:
		if (v->kind != LIT_STR || strcmp(v->s, "NCHW") != 0) {
			sb_printf(err, "%s's data_format must be \"NCHW\" (x (N, C, H, W)); NHWC is not supported: Transpose x "
			          "with perm (0, 3, 1, 2) first", opn);
			return false;
		}
		return true;
	case ATTR_INPUT_SIZE: {   /* MindSpore's third input, a constant tuple: here an attribute */
		bool ok = v->kind == LIT_TUPLE && v->nitems == 4;
		for (int i = 0; ok && i < 4; i++) {
			ok = v->items[i]->kind == LIT_INT && v->items[i]->i >= 1;
			if (ok)
				a->shape[i] = v->items[i]->i;
		}
		if (!ok) {
			sb_printf(err, "Conv2DTranspose's input_size, its result's shape (the convolution's x's), is four positive "
			          "integers (N, C, H, W), e.g. input_size: (32, 16, 8, 8)");
			return false;
		}
		a->nshape = 4;
		return true;
	}
	default:
		die("window_decode_attr: %s is the table's", attr_info[k].name);
	}
}

static void pair_print(StrBuf *b, const int64_t *v)
{
	sb_printf(b, "(%lld, %lld)", (long long)v[0], (long long)v[1]);
}

bool window_print_attr(StrBuf *b, OpKind op, const Attrs *a, AttrKind k)
{
	static const char *const conv_modes[] = {"\"valid\"", "\"same\"", "\"pad\""}, *const pool_modes[] = {"\"VALID\"",
	                                                                                                  "\"SAME\""};
	if (!window_attr(op, k))
		return false;
	switch (k) {
	case ATTR_OUT_CHANNEL: sb_printf(b, "%lld", (long long)a->out_channel); break;
	case ATTR_KERNEL_SIZE: pair_print(b, a->kernel); break;
	case ATTR_STRIDE: case ATTR_STRIDES: pair_print(b, a->stride); break;
	case ATTR_DILATION: pair_print(b, a->dilation); break;
	case ATTR_PAD: ints_print(b, a->pad_list, 4); break;
	case ATTR_INPUT_SIZE: ints_print(b, a->shape, 4); break;
	case ATTR_PAD_MODE: sb_puts(b, (op_is_conv(op) ? conv_modes : pool_modes)[a->pad_mode]); break;
	case ATTR_MODE: sb_puts(b, "1"); break;
	case ATTR_GROUP: sb_printf(b, "%lld", (long long)a->groups); break;
	case ATTR_DATA_FORMAT: sb_puts(b, "\"NCHW\""); break;
	default: die("window_print_attr: %s", attr_info[k].name);
	}
	return true;
}

/* One spatial dim: its size x, window k (dilated), stride s; the output size and the padding before and after. */
static void spatial(PadMode mode, int64_t x, int64_t k, int64_t s, const int64_t *pad, int64_t *out, int64_t *lo,
                    int64_t *hi)
{
	*lo = *hi = 0;
	switch (mode) {
	case PAD_VALID:
		*out = x >= k ? (x - k) / s + 1 : 0;
		return;
	case PAD_SAME: {   /* ceil(x / s), the padding split with the odd one after (MindSpore's, TensorFlow's) */
		*out = (x + s - 1) / s;
		int64_t need = (*out - 1) * s + k - x;
		need = need > 0 ? need : 0;
		*lo = need / 2;
		*hi = need - *lo;
		return;
	}
	case PAD_PAD:
		*lo = pad[0];
		*hi = pad[1];
		*out = x + *lo + *hi >= k ? (x + *lo + *hi - k) / s + 1 : 0;
		return;
	}
}

void window_of(OpKind op, const Attrs *a, const int64_t *x_dims, Window *g)
{
	memset(g, 0, sizeof *g);
	g->n = x_dims[0];
	g->c = x_dims[1];
	g->h = x_dims[2];
	g->w = x_dims[3];
	g->o = op_is_conv(op) ? a->out_channel : g->c;
	g->groups = op_is_conv(op) ? a->groups : 1;
	g->kh = a->kernel[0];
	g->kw = a->kernel[1];
	g->sh = a->stride[0];
	g->sw = a->stride[1];
	g->dh = op_is_conv(op) ? a->dilation[0] : 1;
	g->dw = op_is_conv(op) ? a->dilation[1] : 1;
	PadMode m = op_is_conv(op) ? (PadMode)a->pad_mode : a->pad_mode == PAD_SAME ? PAD_SAME : PAD_VALID;
	spatial(m, g->h, g->dh * (g->kh - 1) + 1, g->sh, a->pad_list, &g->ho, &g->pt, &g->pb);
	spatial(m, g->w, g->dw * (g->kw - 1) + 1, g->sw, a->pad_list + 2, &g->wo, &g->pl, &g->pr);
}

/* x (N, C, H, W), a float; false after a message. */
static bool need_nchw(Infer *x)
{
	const Type *t = in_type(x, 0);
	if (!need_float(x, 0))
		return false;
	if (t->rank != 4) {
		ERR(x, in_span(x, 0), "%s: %s must be 4-D (N, C, H, W) (data_format \"NCHW\"), not %s", opname(x),
		    x->n->op == OP_CONV2D_TRANSPOSE ? "dout" : "x", DIMS(t));
		return false;
	}
	return true;
}

/* A per-rank graph's piece of the result along h and w: begin and end,
 * two entries each, pick rows [begin, end) of the whole's dims (whole[0],
 * whole[1]), the piece the rank computes when its result is split there
 * and its input is not (emit_args.c, window_arg); it may run past the end,
 * as an uneven split's last piece does. dims[0..1] become the piece's.
 * False after a message. */
static bool window_piece(Infer *x, const int64_t *whole, int64_t *dims)
{
	const Attrs *a = &x->n->a;
	bool has_b = a->present & ATTR_BIT(ATTR_BEGIN), has_e = a->present & ATTR_BIT(ATTR_END);
	if (!has_b && !has_e)
		return true;
	if (!has_b || !has_e || a->nbegin != 2 || a->nend != 2) {
		ERR(x, attr_span(x, has_b ? "begin" : "end"), "%s: begin and end come together, two entries each (h, w): "
		    "the rows and columns of the whole result a per-rank graph's piece computes", opname(x));
		return false;
	}
	for (int s = 0; s < 2; s++) {
		int64_t b = a->begin[s], e = a->end[s];
		if (b < 0 || b >= e || e - b > whole[s]) {
			ERR(x, attr_span(x, "begin"), "%s: begin and end pick the piece [begin, end) of the whole result's %s, "
			    "[0, %lld); [%lld, %lld) is not one (0 <= begin < end, at most %lld long)", opname(x),
			    s ? "w" : "h", (long long)whole[s], (long long)b, (long long)e, (long long)whole[s]);
			return false;
		}
		dims[s] = e - b;
	}
	return true;
}

/* The result (n, o, ho, wo); false after a message when the window does not fit. */
static bool window_result(Infer *x, const Type *in, Type *out)
{
	Window g;
	window_of(x->n->op, &x->n->a, in->dims, &g);
	if (g.ho < 1 || g.wo < 1) {
		ERR(x, in_span(x, 0), "%s: x %s is smaller than the window (%lld, %lld)%s: the result would be empty; use "
		    "pad_mode \"%s\" or a smaller kernel_size", opname(x), DIMS(in), (long long)(g.dh * (g.kh - 1) + 1),
		    (long long)(g.dw * (g.kw - 1) + 1), g.dh > 1 || g.dw > 1 ? " (dilated)" : "",
		    x->n->op == OP_CONV2D ? "same" : "SAME");
		return false;
	}
	*out = *in;
	out->is_param = false;
	out->dims[1] = g.o;
	out->dims[2] = g.ho;
	out->dims[3] = g.wo;
	return window_piece(x, (const int64_t[]){g.ho, g.wo}, out->dims + 2);
}

/* Conv2D's and Conv2DTranspose's attributes and weight against the
 * convolution's x (N, C, H, W) (the transpose's result, input_size): pad
 * only with pad_mode "pad", group dividing C and out_channel, w (out_channel,
 * C / group, kh, kw); false after a message. */
static bool conv_checks(Infer *x, const int64_t *conv_x)
{
	const Attrs *a = &x->n->a;
	const char *xs = x->n->op == OP_CONV2D ? "x's" : "input_size's";
	bool padded = a->pad_list[0] || a->pad_list[1] || a->pad_list[2] || a->pad_list[3];
	if (padded && a->pad_mode != PAD_PAD) {
		ERR(x, attr_span(x, "pad"), "%s: pad (%lld, %lld, %lld, %lld) needs pad_mode \"pad\" (MindSpore's rule: "
		    "with \"valid\" or \"same\" pad must be 0)", opname(x), (long long)a->pad_list[0],
		    (long long)a->pad_list[1], (long long)a->pad_list[2], (long long)a->pad_list[3]);
		return false;
	}
	const Type *w = in_type(x, 1);
	if (conv_x[1] % a->groups || a->out_channel % a->groups) {
		ERR(x, attr_span(x, "group"), "%s: group %lld must divide %s channels (%lld) and out_channel (%lld)",
		    opname(x), (long long)a->groups, xs, (long long)conv_x[1], (long long)a->out_channel);
		return false;
	}
	if (w->rank != 4 || w->dims[0] != a->out_channel || w->dims[1] != conv_x[1] / a->groups ||
	    w->dims[2] != a->kernel[0] || w->dims[3] != a->kernel[1]) {
		ERR(x, in_span(x, 1), "%s: the weight must be (out_channel, C / group, kh, kw) = (%lld, %lld, %lld, %lld) "
		    "for %.*s (%lld, %lld, %lld, %lld), out_channel %lld, group %lld and kernel_size (%lld, %lld); it is %s",
		    opname(x), (long long)a->out_channel, (long long)(conv_x[1] / a->groups), (long long)a->kernel[0],
		    (long long)a->kernel[1], (int)(strlen(xs) - 2), xs, (long long)conv_x[0], (long long)conv_x[1],
		    (long long)conv_x[2], (long long)conv_x[3], (long long)a->out_channel, (long long)a->groups,
		    (long long)a->kernel[0], (long long)a->kernel[1], DIMS(w));
		return false;
	}
	return true;
}

/* Conv2D(x (N, C, H, W), w (out_channel, C / group, kh, kw)), MindSpore's. */
bool infer_conv2d(Infer *x, const Type *in, Type *out)
{
	if (!need_attr(x, ATTR_OUT_CHANNEL) || !need_attr(x, ATTR_KERNEL_SIZE) || !need_nchw(x) || !same_dtype(x, 0, 1))
		return false;
	return conv_checks(x, in->dims) && window_result(x, in, out);
}

/* Conv2DTranspose(dout, w) with input_size (N, C, H, W): the gradient of
 * Conv2D(x of input_size, w) with respect to x, given dout, the
 * convolution's output (N, out_channel, ho, wo) that input_size's geometry
 * gives (MindSpore's Conv2DBackpropInput). */
bool infer_conv2d_transpose(Infer *x, const Type *in, Type *out)
{
	const Attrs *a = &x->n->a;
	if (!need_attr(x, ATTR_OUT_CHANNEL) || !need_attr(x, ATTR_KERNEL_SIZE) || !need_attr(x, ATTR_INPUT_SIZE) ||
	    !need_nchw(x) || !same_dtype(x, 0, 1) || !conv_checks(x, a->shape))
		return false;
	Window g;
	window_of(x->n->op, a, a->shape, &g);
	if (g.ho < 1 || g.wo < 1) {
		ERR(x, attr_span(x, "input_size"), "Conv2DTranspose: input_size (%lld, %lld, %lld, %lld) is smaller than the "
		    "window (%lld, %lld): a convolution of it would be empty; use pad_mode \"same\" or a smaller kernel_size",
		    (long long)g.n, (long long)g.c, (long long)g.h, (long long)g.w, (long long)(g.dh * (g.kh - 1) + 1),
		    (long long)(g.dw * (g.kw - 1) + 1));
		return false;
	}
	if (in->dims[0] != g.n || in->dims[1] != g.o || in->dims[2] != g.ho || in->dims[3] != g.wo) {
		ERR(x, in_span(x, 0), "Conv2DTranspose: dout must be the convolution's output for input_size (%lld, %lld, "
		    "%lld, %lld): (N, out_channel, ho, wo) = (%lld, %lld, %lld, %lld) with this kernel_size, stride, "
		    "dilation and padding; it is %s", (long long)g.n, (long long)g.c, (long long)g.h, (long long)g.w,
		    (long long)g.n, (long long)g.o, (long long)g.ho, (long long)g.wo, DIMS(in));
		return false;
	}
	*out = *in;
	out->is_param = false;
	for (int d = 0; d < 4; d++)
		out->dims[d] = a->shape[d];
	return window_piece(x, a->shape + 2, out->dims + 2);
}

/* MaxPool(x), AvgPool(x): x (N, C, H, W), each channel's windows. */
bool infer_pool(Infer *x, const Type *in, Type *out)
{
	return need_nchw(x) && window_result(x, in, out);
}

/* Whether a windowed operator's spatial dim (x's size x, the dilated
 * window k, the stride s) splits with x: each window lies in one rank's
 * piece when it is no wider than the stride and x divides into strides (no
 * padding then, in "same" mode too), as MindSpore's Conv2DInfo splits with
 * no exchange. */
static bool window_splits(int64_t x, int64_t k, int64_t s, int64_t pad)
{
	return k <= s && x % s == 0 && pad == 0;
}

/* Conv2DTranspose: op dims n, o, h, w, i as MindSpore's device matrix for
 * it (n, o, h, w, i), then the kernel's. dout (n, o, ho, wo), w (o, i, kh,
 * kw), the result (n, i, h, w); o, the convolution's output channels, is
 * summed over (partial sums of the result, completed by an AllReduce). The
 * result's h and w split evenly, dout's ho and wo then too (MindSpore's
 * rule); dout splits with them where each piece of the result takes only
 * its own piece's windows (window_splits: the convolution's relation
 * between x and its output is the same), else it arrives whole along the
 * dim and each rank computes its rows of the result, the padding shifted
 * by its piece's first row (emit_args.c, window_arg). The strategy names
 * dout's dims. */
static void transpose_dims(const Type *dout, const Type *out, const Node *n, OpDims *od)
{
	Window w;
	window_of(n->op, &n->a, out->dims, &w);
	int64_t pads[2] = {w.pt + w.pb, w.pl + w.pr}, ks[2] = {w.dh * (w.kh - 1) + 1, w.dw * (w.kw - 1) + 1};
	int64_t ss[2] = {w.sh, w.sw}, xs[2] = {w.h, w.w};
	add_dim(od, dout->dims[0], "N");
	add_dim(od, dout->dims[1], "C_out");
	identity_input(od, 0, 4);
	for (int s = 0; s < 2; s++) {
		int o = add_dim(od, out->dims[2 + s], s ? "W" : "H");
		od->also[o] = dout->dims[2 + s];
		od->whole_why[o] = s ? "dout's columns split with the result's" : "dout's rows split with the result's";
		if (!window_splits(xs[s], ks[s], ss[s], pads[s]))
			od->in_dim[0][2 + s] = -1;   /* dout whole along it: a piece's rows take windows of others */
	}
	od->strategy_named = true;
	for (int d = 0; d < 4; d++)
		od->named[d] = (int8_t)d;
	identity_output(od, 4);
	od->batch = 0;
	int ci = add_dim(od, out->dims[1], "C_in");
	int kh = add_dim(od, w.kh, "the kernel's height"), kw = add_dim(od, w.kw, "the kernel's width");
	keep_whole(od, kh, "a kernel dim, which every output position sums over");
	keep_whole(od, kw, "a kernel dim, which every output position sums over");
	od->in_rank[1] = 4;
	od->in_dim[1][0] = 1;
	od->in_dim[1][1] = (int8_t)ci;
	od->in_dim[1][2] = (int8_t)kh;
	od->in_dim[1][3] = (int8_t)kw;
	od->out_dim[1] = (int8_t)ci;
	od->reduced = 1u << 1;
	od->reduce_op = REDUCE_SUM_OP;
	if (w.groups > 1) {   /* MindSpore's Conv2DInfo: with group > 1 neither channel dim splits */
		keep_whole(od, 1, "the output channels of a grouped convolution (group > 1), dout's");
		keep_whole(od, ci, "the input channels of a grouped convolution (group > 1), the result's");
	}
}

/* Conv2D: op dims n, c, h, w, o as MindSpore's device matrix (n, i, h, w, o),
 * then the kernel's; the pools: n, c, h, w. x (n, c, h, w), w (o, c, kh, kw),
 * the result (n, o, h, w); Conv2D's c is summed over (partial sums over its
 * axes, as MatMul's k). The result's h and w split evenly; x splits with
 * them where no window crosses a piece's edge (window_splits), else it
 * arrives whole along that dim (gathered) and each rank computes its rows
 * of the result from their first (emit_args.c, window_arg): its gradient
 * then partial over those ranks, summed. The strategy still names x's h
 * and w as the result's (named). */
void window_dims(const Type *x, const Type *out, const Node *n, OpDims *od)
{
	if (n->op == OP_CONV2D_TRANSPOSE) {
		transpose_dims(x, out, n, od);
		return;
	}
	bool conv = n->op == OP_CONV2D;
	Window w;
	window_of(n->op, &n->a, x->dims, &w);
	int64_t pads[2] = {w.pt + w.pb, w.pl + w.pr}, ks[2] = {w.dh * (w.kh - 1) + 1, w.dw * (w.kw - 1) + 1};
	int64_t ss[2] = {w.sh, w.sw}, xs[2] = {w.h, w.w};
	add_dim(od, x->dims[0], "N");
	add_dim(od, x->dims[1], conv ? "C_in" : "C");
	identity_input(od, 0, 4);
	for (int s = 0; s < 2; s++) {
		int o = add_dim(od, out->dims[2 + s], s ? "W" : "H");
		od->also[o] = out->dims[2 + s];
		od->whole_why[o] = s ? "each rank computes whole columns of the result" : "each rank computes whole rows of "
		                   "the result";
		if (!window_splits(xs[s], ks[s], ss[s], pads[s]))
			od->in_dim[0][2 + s] = -1;   /* x whole along it: the windows overlap the pieces */
	}
	od->strategy_named = true;
	for (int d = 0; d < 4; d++)
		od->named[d] = (int8_t)d;
	identity_output(od, 4);
	od->batch = 0;
	if (!conv)
		return;
	int oc = add_dim(od, out->dims[1], "C_out");
	int kh = add_dim(od, w.kh, "the kernel's height"), kw = add_dim(od, w.kw, "the kernel's width");
	keep_whole(od, kh, "a kernel dim, which every output position sums over");
	keep_whole(od, kw, "a kernel dim, which every output position sums over");
	od->in_rank[1] = 4;
	od->in_dim[1][0] = (int8_t)oc;
	od->in_dim[1][1] = 1;
	od->in_dim[1][2] = (int8_t)kh;
	od->in_dim[1][3] = (int8_t)kw;
	od->out_dim[1] = (int8_t)oc;
	od->reduced = 1u << 1;
	od->reduce_op = REDUCE_SUM_OP;
	if (w.groups > 1) {   /* MindSpore's Conv2DInfo: with group > 1 neither channel dim splits */
		keep_whole(od, 1, "the input channels of a grouped convolution (group > 1)");
		keep_whole(od, oc, "the output channels of a grouped convolution (group > 1)");
	}
}
