/* misc_ops.c: MindSpore's Range, UniformReal, LpNorm, ClipByNorm and IOU.
 *
 * Range(start, limit, delta) is Arange: the parser's builder moves its three
 * numbers into Arange's attributes (start, stop: limit, step: delta), so one
 * operator computes both and Range needs no row of its own; maxlen,
 * MindSpore's longest result (1000000), bounds either. UniformReal() {shape,
 * seed, seed2} draws Float32 values in [0, 1) with Dropout's counter-based
 * generator (sc_uniform_real), keyed by its result's flat name: every plan
 * draws the one-device program's values. Its whole shape is in
 * shape_constants.c beside the other constants'. LpNorm, ClipByNorm and IOU
 * are written as the operators that compute them (expand_composite): the
 * parser adds the pieces this file lists instead of the statement, so they
 * split, pad, differentiate and run as those do. Nothing here knows a
 * shape: what needs one (an axis in range, broadcasting) the pieces' own
 * checks report, at the statement. */
#include "misc_ops.h"

#include <string.h>

void range_as_arange(Arena *a, Lit **operands, Lit **attrs, Span at)
{
	static const char *const keys[] = {"start", "stop", "step"};
	Lit *ops = *operands;
	if (ops->nitems != 3)
		return;
	for (int k = 0; k < 3; k++)
		if (ops->items[k]->kind == LIT_VALUE || (*attrs && lit_dict_get(*attrs, keys[k])))
			return;
	Lit *d = *attrs ? *attrs : lit_new(a, LIT_DICT, at);
	for (int k = 0; k < 3; k++) {
		Lit *key = lit_new(a, LIT_IDENT, ops->items[k]->span);
		key->s = keys[k];
		lit_push(a, d, key, ops->items[k]);
	}
	*attrs = d;
	*operands = lit_new(a, LIT_TUPLE, ops->span);
}

bool is_range(const Node *n)
{
	return n->op == OP_ARANGE && !strcmp(n->op_name, "Range");
}

uint64_t uniform_real_seed(const Attrs *a, uint64_t model_seed)
{
	return a->seed || a->seed2 ? (uint64_t)a->seed << 32 | (uint64_t)a->seed2 : model_seed;
}

bool decode_misc_attr(Diag *d, const Source *src, Node *n, AttrKind k, const Lit *v)
{
	Attrs *a = &n->a;
	if (k == ATTR_MAXLEN) {
		if (v->i < 1) {
			diag_error(d, src, v->span, "maxlen %lld: the longest range Range may compute is 1 or more "
			           "(MindSpore's; 1000000 when left out)", (long long)v->i);
			return false;
		}
		a->maxlen = v->i;
		return true;
	}
	if (v->i < 0 || v->i > INT32_MAX) {
		diag_error(d, src, v->span, "%s %lld: UniformReal's seeds are integers from 0 to 2^31 - 1 (MindSpore's; both "
		           "0, the default, take the model's seed)", attr_info[k].name, (long long)v->i);
		return false;
	}
	*(k == ATTR_SEED ? &a->seed : &a->seed2) = v->i;
	return true;
}

/* ---- LpNorm, ClipByNorm: written as the operators that compute them ---- */

/* One statement being expanded: where its pieces point, and what they share. */
typedef struct {
	Arena *ar;
	Diag *d;
	const Source *src;
	Piece *pieces;           /* what the statement becomes, in order */
	int npieces, cap;
	const char *name;        /* the statement's result; the pieces' are `name.prefix_piece` */
	const char *prefix;      /* lp_norm, clip_by_norm or iou */
	Span op_at;
	Lit *shared;             /* recompute and pipeline_stage as written, given to every piece */
	Lit *none;               /* (): a number operand's strategy entry */
} Expand;

static Lit *value_ref(Expand *e, const char *name)
{
	Lit *l = lit_new(e->ar, LIT_VALUE, e->op_at);
	l->s = name;
	return l;
}

/* A number operand, its text as shardc prints it. */
static Lit *number(Expand *e, double v)
{
	Lit *l = lit_new(e->ar, LIT_FLOAT, e->op_at);
	StrBuf b = {0};
	print_float(&b, v);
	l->f = v;
	l->s = arena_strdup(e->ar, b.data);
	sb_free(&b);
	return l;
}

static Lit *tuple(Expand *e, int n, Lit **items)
{
	Lit *t = lit_new(e->ar, LIT_TUPLE, e->op_at);
	for (int k = 0; k < n; k++)
		lit_push(e->ar, t, NULL, items[k]);
	return t;
}

static void put(Expand *e, Lit *d, const char *key, Lit *v)
{
	Lit *k = lit_new(e->ar, LIT_IDENT, v ? v->span : e->op_at);
	k->s = key;
	lit_push(e->ar, d, k, v);
}

/* Piece `piece` (NULL: the statement's own result) = op(a, b, c) (b and c
 * NULL when it takes fewer) {attrs}, the shared attributes added; strategy
 * (one entry per operand, or NULL) its in_strategy. */
static Lit *piece(Expand *e, const char *piece, const char *op, Lit *a, Lit *b, Lit *c, Lit *attrs, Lit *strategy,
                  Signature *sig)
{
	Arena *ar = e->ar;
	Lit *d = attrs ? attrs : lit_new(ar, LIT_DICT, e->op_at);
	for (int k = 0; e->shared && k < e->shared->nitems; k++)
		lit_push(ar, d, e->shared->keys[k], e->shared->items[k]);
	if (strategy)
		put(e, d, "in_strategy", strategy);
	Lit *ops[3] = {a, b, c};
	const char *name = e->name;
	if (piece) {
		StrBuf n = {0};
		sb_printf(&n, "%s.%s_%s", e->name, e->prefix, piece);
		name = arena_strdup(ar, n.data);
		sb_free(&n);
	}
	Piece *pc = ARENA_PUSH(ar, e->pieces, e->npieces, e->cap);
	*pc = (Piece){name, op, tuple(e, c ? 3 : b ? 2 : a ? 1 : 0, ops), d->nitems ? d : NULL, sig};
	return value_ref(e, name);
}

/* The attributes of an expanded statement: those it takes into out (by
 * name, in keys' order), recompute and pipeline_stage into e->shared; false
 * after a message naming any other. */
static bool take_attrs(Expand *e, const char *op, const Lit *attrs, const char *const *keys, int nkeys, Lit **out)
{
	bool ok = true;
	e->shared = lit_new(e->ar, LIT_DICT, e->op_at);
	for (int i = 0; attrs && i < attrs->nitems; i++) {
		const char *key = attrs->keys[i]->s;
		int k = 0;
		while (k < nkeys && strcmp(keys[k], key))
			k++;
		if (k < nkeys)
			out[k] = attrs->items[i];
		else if (!strcmp(key, "recompute") || !strcmp(key, "pipeline_stage"))
			lit_push(e->ar, e->shared, attrs->keys[i], attrs->items[i]);
		else {
			StrBuf b = {0};
			sb_join(&b, keys, nkeys, ", ");
			diag_error(e->d, e->src, attrs->keys[i]->span, "%s has no attribute '%s' (it takes: %s, "
			           "recompute, pipeline_stage)", op, key, b.data);
			sb_free(&b);
			ok = false;
		}
	}
	return ok;
}

/* Entry k of in_strategy s as a one-operand strategy, or with a () for a
 * number beside it; NULL when s does not give it (no strategy, a Layout's). */
static Lit *entry(Expand *e, const Lit *s, int k, bool number_beside)
{
	if (!s || s->kind != LIT_TUPLE || k >= s->nitems)
		return NULL;
	Lit *items[2] = {s->items[k], e->none};
	return tuple(e, number_beside ? 2 : 1, items);
}

/* LpNorm(x) {axis, p: 2, keep_dims: false, epsilon: 1e-12}, MindSpore's:
 * max((sum over axis of |x|^p)^(1/p), epsilon), as Abs (Square for p 2),
 * Pow, ReduceSum and Pow (Sqrt), then Maximum. */
static void expand_lp_norm(Expand *e, Lit *x, const Lit *attrs, Signature *sig)
{
	static const char *const keys[] = {"axis", "p", "keep_dims", "epsilon", "in_strategy"};
	Lit *v[5] = {0};
	if (!take_attrs(e, "LpNorm", attrs, keys, 5, v))
		return;
	if (!v[0]) {
		diag_error(e->d, e->src, e->op_at, "LpNorm needs the attribute 'axis', the dim or dims it reduces "
		           "(MindSpore's): LpNorm(%%x) {axis: 1, p: 2}");
		return;
	}
	int64_t p = v[1] ? v[1]->i : 2;
	if (v[1] && (v[1]->kind != LIT_INT || p < 1 || p > 64)) {
		diag_error(e->d, e->src, v[1]->span, "LpNorm's p, the norm's order, is an integer from 1 to 64 "
		           "here (MindSpore's is an integer from 0; p 0, the count of nonzero elements, has no gradient: "
		           "write NotEqual, Cast and ReduceSum)");
		return;
	}
	double eps = v[3] && lit_is_number(v[3]) ? lit_number(v[3]) : 1e-12;
	if (v[3] && (!lit_is_number(v[3]) || !(eps >= 0))) {
		diag_error(e->d, e->src, v[3]->span, "LpNorm's epsilon, the least norm it returns, is a number, "
		           "0 or more (MindSpore's; 1e-12 when left out)");
		return;
	}
	Lit *s1 = entry(e, v[4], 0, false), *s2 = entry(e, v[4], 0, true);
	if (v[4] && !s1)
		s1 = v[4];   /* as written: the first piece's check reports it */
	Lit *a = p == 2 ? piece(e, "square", "Square", x, NULL, NULL, NULL, s1, NULL)
	                : piece(e, "abs", "Abs", x, NULL, NULL, NULL, s1, NULL);
	if (p > 2)
		a = piece(e, "pow", "Pow", a, number(e, (double)p), NULL, NULL, s2, NULL);
	Lit *sum = lit_new(e->ar, LIT_DICT, e->op_at);
	put(e, sum, "axis", v[0]);
	if (v[2])
		put(e, sum, "keep_dims", v[2]);
	Lit *n = piece(e, "sum", "ReduceSum", a, NULL, NULL, sum, s1, NULL);
	if (p == 2)
		n = piece(e, "root", "Sqrt", n, NULL, NULL, NULL, NULL, NULL);
	else if (p > 2)
		n = piece(e, "root", "Pow", n, number(e, 1.0 / (double)p), NULL, NULL, NULL, NULL);
	piece(e, NULL, "Maximum", n, number(e, eps), NULL, NULL, NULL, sig);
}

/* ClipByNorm(x, clip_norm) {axis}, MindSpore's: x clip_norm / max(l2, clip_norm),
 * l2 the L2 norm over axis (every dim without it) kept as size-1 dims; a zero
 * norm taken as 0 without a square root of 0 (nn.ClipByNorm's select), so
 * its gradient stays finite. */
static void expand_clip_by_norm(Expand *e, Lit *x, Lit *c, const Lit *attrs, Signature *sig)
{
	static const char *const keys[] = {"axis", "in_strategy"};
	Lit *v[2] = {0};
	if (!take_attrs(e, "ClipByNorm", attrs, keys, 2, v))
		return;
	Lit *s1 = entry(e, v[1], 0, false);
	if (v[1] && !s1)
		s1 = v[1];
	Lit *sum = lit_new(e->ar, LIT_DICT, e->op_at), *yes = lit_new(e->ar, LIT_BOOL, e->op_at);
	yes->i = 1;
	if (v[0])
		put(e, sum, "axis", v[0]);
	put(e, sum, "keep_dims", yes);
	Lit *sq = piece(e, "square", "Square", x, NULL, NULL, NULL, s1, NULL);
	Lit *ss = piece(e, "sum", "ReduceSum", sq, NULL, NULL, sum, s1, NULL);
	Lit *pos = piece(e, "positive", "Greater", ss, number(e, 0), NULL, NULL, NULL, NULL);
	Lit *one = piece(e, "one", "OnesLike", ss, NULL, NULL, NULL, NULL, NULL);
	Lit *safe = piece(e, "safe", "Select", pos, ss, one, NULL, NULL, NULL);
	Lit *root = piece(e, "root", "Sqrt", safe, NULL, NULL, NULL, NULL, NULL);
	Lit *l2 = piece(e, "norm", "Select", pos, root, ss, NULL, NULL, NULL);
	Lit *both = v[1] && v[1]->kind == LIT_TUPLE && v[1]->nitems == 2 ? v[1] : NULL;
	Lit *xc = piece(e, "scaled", "Mul", x, c, NULL, NULL, both, NULL);
	Lit *most = piece(e, "max", "Maximum", l2, c, NULL, NULL, NULL, NULL);
	piece(e, NULL, "Div", xc, most, NULL, NULL, NULL, sig);
}

static Lit *int_lit(Expand *e, int64_t v)
{
	Lit *l = lit_new(e->ar, LIT_INT, e->op_at);
	l->i = v;
	return l;
}

static Lit *ints(Expand *e, int n, const int64_t *v)
{
	Lit *items[4];
	for (int k = 0; k < n; k++)
		items[k] = int_lit(e, v[k]);
	return tuple(e, n, items);
}

/* A strategy of one or two entries, each a pair (d0, d1) of slice counts; a
 * negative d1 in the second: (), the entry of a number. NULL when the IOU has none. */
static Lit *pairs(Expand *e, bool on, int64_t a0, int64_t a1, int64_t b0, int64_t b1)
{
	if (!on)
		return NULL;
	Lit *items[2] = {ints(e, 2, (int64_t[]){a0, a1}), b1 < 0 ? e->none : ints(e, 2, (int64_t[]){b0, b1})};
	return tuple(e, b0 ? 2 : 1, items);
}

/* IOU(anchor_boxes (N, 4), gt_boxes (M, 4)) {mode: "iou"}, MindSpore's CPU
 * kernel's: the (M, N) overlaps, each box's sides 1 longer than x1 - x0
 * (its + 1), over the union (iou) or the gt box's area (iof), plus 1e-10.
 * Pieces: each coordinate row of the transposed anchors, (1, N), and
 * column of the gts, (M, 1), broadcast against each other. in_strategy
 * ((a, 1), (b, 1)) (MindSpore's IOUInfo: only dim 0 split) lays the (M, N)
 * pieces out (b, a). */
static void expand_iou(Expand *e, Lit *anchors, Lit *gts, const Lit *attrs, Signature *sig)
{
	static const char *const keys[] = {"mode", "in_strategy"};
	Lit *v[2] = {0};
	if (!take_attrs(e, "IOU", attrs, keys, 2, v))
		return;
	bool iof = false;
	if (v[0]) {
		iof = v[0]->kind == LIT_STR && !strcmp(v[0]->s, "iof");
		if (!iof && !(v[0]->kind == LIT_STR && !strcmp(v[0]->s, "iou"))) {
			diag_error(e->d, e->src, v[0]->span, "IOU's mode is \"iou\" (intersection over union, the "
			           "default) or \"iof\" (intersection over the gt box's area), MindSpore's");
			return;
		}
	}
	int64_t a = 0, b = 0;   /* the anchors' and the gts' slice counts; 0: no strategy */
	const Lit *st = v[1];
	if (st) {
		bool ok = st->kind == LIT_TUPLE && st->nitems == 2;
		for (int k = 0; ok && k < 2; k++) {
			const Lit *t = st->items[k];
			ok = t->kind == LIT_TUPLE && t->nitems == 2 && t->items[0]->kind == LIT_INT && t->items[1]->kind == LIT_INT;
			if (ok && t->items[1]->i != 1) {
				diag_error(e->d, e->src, t->span, "IOU splits only dim 0 of each input, the boxes (MindSpore's "
				           "IOUInfo); their 4 coordinates stay whole: ((%lld, 1), ...)", (long long)t->items[0]->i);
				return;
			}
		}
		if (!ok) {
			diag_error(e->d, e->src, st->span, "IOU's in_strategy is two pairs of slice counts, the anchors' "
			           "and the gt boxes': ((a, 1), (b, 1)), MindSpore's IOUInfo (a Layout is not taken here)");
			return;
		}
		a = st->items[0]->items[0]->i;
		b = st->items[1]->items[0]->i;
	}
	bool on = st != NULL;
	/* Each input plus a (1, 4) Float32 zero: a box of other than 4
	 * coordinates, or another type, is an error at the statement (the
	 * pieces know no shape before inference). */
	Lit *box[2];
	for (int k = 0; k < 2; k++) {
		Lit *z = lit_new(e->ar, LIT_DICT, e->op_at);
		put(e, z, "shape", ints(e, 2, (int64_t[]){1, 4}));
		put(e, z, "fill", number(e, 0));
		Lit *zero = piece(e, k ? "gts_zero" : "anchors_zero", "FillV2", NULL, NULL, NULL, z, NULL, NULL);
		box[k] = piece(e, k ? "gts4" : "anchors4", "Add", k ? gts : anchors, zero, NULL, NULL,
		               pairs(e, on, k ? b : a, 1, 1, 1), NULL);
	}
	anchors = box[0];
	gts = box[1];
	Lit *perm = lit_new(e->ar, LIT_DICT, e->op_at);
	put(e, perm, "perm", ints(e, 2, (int64_t[]){1, 0}));
	Lit *at = piece(e, "anchors_t", "Transpose", anchors, NULL, NULL, perm, pairs(e, on, a, 1, 0, 0), NULL);
	Lit *ac[4], *gc[4];
	static const char *const an[] = {"ax0", "ay0", "ax1", "ay1"}, *const gn[] = {"gx0", "gy0", "gx1", "gy1"};
	for (int k = 0; k < 4; k++) {
		Lit *d = lit_new(e->ar, LIT_DICT, e->op_at);
		put(e, d, "begin", ints(e, 2, (int64_t[]){k, 0}));
		put(e, d, "end", ints(e, 2, (int64_t[]){k + 1, 0}));
		put(e, d, "strides", ints(e, 2, (int64_t[]){1, 1}));
		put(e, d, "end_mask", int_lit(e, 2));
		ac[k] = piece(e, an[k], "StridedSlice", at, NULL, NULL, d, pairs(e, on, 1, a, 0, 0), NULL);
		d = lit_new(e->ar, LIT_DICT, e->op_at);
		put(e, d, "begin", ints(e, 2, (int64_t[]){0, k}));
		put(e, d, "end", ints(e, 2, (int64_t[]){0, k + 1}));
		put(e, d, "strides", ints(e, 2, (int64_t[]){1, 1}));
		put(e, d, "begin_mask", int_lit(e, 1));
		put(e, d, "end_mask", int_lit(e, 1));
		gc[k] = piece(e, gn[k], "StridedSlice", gts, NULL, NULL, d, pairs(e, on, b, 1, 0, 0), NULL);
	}
	Lit *sides[2];
	for (int k = 0; k < 2; k++) {   /* the overlap's width (k 0) and height: max(0, min(x1) - max(x0) + 1) */
		Lit *lo = piece(e, k ? "iy0" : "ix0", "Maximum", gc[k], ac[k], NULL, NULL, pairs(e, on, b, 1, 1, a), NULL);
		Lit *hi = piece(e, k ? "iy1" : "ix1", "Minimum", gc[k + 2], ac[k + 2], NULL, NULL, pairs(e, on, b, 1, 1, a), NULL);
		Lit *d = piece(e, k ? "ih" : "iw", "Sub", hi, lo, NULL, NULL, pairs(e, on, b, a, b, a), NULL);
		d = piece(e, k ? "ih1" : "iw1", "Add", d, number(e, 1), NULL, NULL, pairs(e, on, b, a, 1, -1), NULL);
		sides[k] = piece(e, k ? "ihc" : "iwc", "ReLU", d, NULL, NULL, NULL, pairs(e, on, b, a, 0, 0), NULL);
	}
	Lit *over = piece(e, "overlap", "Mul", sides[0], sides[1], NULL, NULL, pairs(e, on, b, a, b, a), NULL);
	Lit *area[2];
	for (int k = 0; k < 2; k++) {   /* the anchors' areas (1, N), the gts' (M, 1) */
		Lit **c = k ? gc : ac;
		int64_t d0 = k ? b : 1, d1 = k ? 1 : a;
		Lit *w = piece(e, k ? "gw" : "aw", "Sub", c[2], c[0], NULL, NULL, pairs(e, on, d0, d1, d0, d1), NULL);
		w = piece(e, k ? "gw1" : "aw1", "Add", w, number(e, 1), NULL, NULL, pairs(e, on, d0, d1, 1, -1), NULL);
		Lit *h = piece(e, k ? "gh" : "ah", "Sub", c[3], c[1], NULL, NULL, pairs(e, on, d0, d1, d0, d1), NULL);
		h = piece(e, k ? "gh1" : "ah1", "Add", h, number(e, 1), NULL, NULL, pairs(e, on, d0, d1, 1, -1), NULL);
		area[k] = piece(e, k ? "garea" : "aarea", "Mul", w, h, NULL, NULL, pairs(e, on, d0, d1, d0, d1), NULL);
	}
	Lit *den;
	if (iof)
		den = piece(e, "den", "Add", area[1], number(e, 1e-10), NULL, NULL, pairs(e, on, b, 1, 1, -1), NULL);
	else {
		Lit *both = piece(e, "areas", "Add", area[1], area[0], NULL, NULL, pairs(e, on, b, 1, 1, a), NULL);
		Lit *uni = piece(e, "union", "Sub", both, over, NULL, NULL, pairs(e, on, b, a, b, a), NULL);
		den = piece(e, "den", "Add", uni, number(e, 1e-10), NULL, NULL, pairs(e, on, b, a, 1, -1), NULL);
	}
	piece(e, NULL, "Div", over, den, NULL, NULL, pairs(e, on, b, a, b, iof ? 1 : a), sig);
}

int expand_composite(Arena *ar, Diag *d, const Source *src, const char *name, const char *op, Span op_at,
                     Lit *operands, Lit *attrs, Signature *sig, Piece **out)
{
	bool lp = !strcmp(op, "LpNorm"), clip = !strcmp(op, "ClipByNorm"), iou = !strcmp(op, "IOU");
	if (!lp && !clip && !iou)
		return -1;
	Expand e = {.ar = ar, .d = d, .src = src, .name = name, .op_at = op_at,
	            .prefix = lp ? "lp_norm" : clip ? "clip_by_norm" : "iou"};
	e.none = lit_new(ar, LIT_TUPLE, op_at);
	int want = lp ? 1 : 2;   /* IOU's two too */
	if (operands->nitems != want || operands->items[0]->kind != LIT_VALUE ||
	    (iou && operands->items[1]->kind != LIT_VALUE)) {
		diag_error(d, src, op_at, "%s takes %s, %d operand%s given", op,
		           lp ? "one tensor operand, x: LpNorm(%x) {axis: 1, p: 2}"
		           : iou ? "two tensors, anchor_boxes (N, 4) and gt_boxes (M, 4): IOU(%anchors, %gts) {mode: \"iou\"}"
		              : "two operands, x and clip_norm (a tensor or a number): ClipByNorm(%x, 1.0) {axis: 1}",
		           operands->nitems, operands->nitems == 1 ? "" : "s");
		return 0;
	}
	if (iou)
		expand_iou(&e, operands->items[0], operands->items[1], attrs, sig);
	else if (lp)
		expand_lp_norm(&e, operands->items[0], attrs, sig);
	else
		expand_clip_by_norm(&e, operands->items[0], operands->items[1], attrs, sig);
	*out = e.pieces;
	return e.npieces;
}
