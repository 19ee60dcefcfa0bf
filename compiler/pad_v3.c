/* pad_v3.c: MindSpore's PadV3 in its constant mode (torch's F.pad):
 * y = PadV3(x[, value]) {paddings: (before, after, ...)}, each dim of y x's
 * lengthened by its pair, x in the box starting at the befores and value (0
 * when absent) everywhere else. MindSpore's paddings input is an attribute
 * here, its pairs the last dim's first; its constant_value a number operand
 * typed by x (shape.c's type_literals), which the kernel takes as it is
 * written rather than reading a tensor back from the device. Its attributes
 * (mode a string, where the table's mode is RotaryPositionEmbedding's
 * integer), its result shape for shape.c and its op dims for rules.c: a dim
 * the padding lengthens stays whole, as MindSpore's PadV3Info refuses to
 * split it; the others split freely, the result as x. */
#include "shape_internal.h"
#include "rules_internal.h"
#include "pad_v3.h"

#include <string.h>

bool pad_v3_attr(OpKind op, AttrKind k)
{
	return op == OP_PAD_V3 && (k == ATTR_PADDINGS || k == ATTR_PADDINGS_CONTIGUOUS || k == ATTR_MODE);
}

bool pad_v3_decode_attr(OpKind op, AttrKind k, const Lit *v, Attrs *a, StrBuf *err, Span *at)
{
	(void)op;
	*at = v->span;
	switch (k) {
	case ATTR_PADDINGS: {
		bool ok = v->kind == LIT_TUPLE && v->nitems <= 2 * MAX_DIMS;
		for (int i = 0; ok && i < v->nitems; i++)
			if ((ok = v->items[i]->kind == LIT_INT))
				a->paddings[i] = v->items[i]->i;
		if (!ok) {
			sb_printf(err, "PadV3's paddings is a tuple of at most %d integers, pairs (before, after) from the last "
			          "dim back, as torch's F.pad: (1, 2) pads the last dim with 1 element before and 2 after",
			          2 * MAX_DIMS);
			return false;
		}
		a->npaddings = v->nitems;
		return true;
	}
	case ATTR_PADDINGS_CONTIGUOUS:
		if (v->kind != LIT_BOOL) {
			sb_printf(err, "PadV3's paddings_contiguous is true (paddings in pairs (before, after), the default) or "
			          "false (all the befores, then all the afters)");
			return false;
		}
		a->paddings_contiguous = v->i;
		return true;
	case ATTR_MODE:
		if (v->kind == LIT_STR && !strcmp(v->s, "constant"))
			return true;
		if (v->kind == LIT_STR && (!strcmp(v->s, "reflect") || !strcmp(v->s, "edge") || !strcmp(v->s, "circular")))
			sb_printf(err, "PadV3's mode \"%s\" is not supported: shardc pads with a constant only, as MindSpore's "
			          "parallel PadV3 does (its PadV3Info refuses the other modes); leave mode out or write "
			          "\"constant\"", v->s);
		else
			sb_printf(err, "PadV3's mode is \"constant\" (the default, and the only mode shardc takes)");
		return false;
	default:
		die("pad_v3_decode_attr: %s is the table's", attr_info[k].name);
	}
}

bool pad_v3_print_attr(StrBuf *b, OpKind op, const Attrs *a, AttrKind k)
{
	if (!pad_v3_attr(op, k))
		return false;
	switch (k) {
	case ATTR_PADDINGS: ints_print(b, a->paddings, a->npaddings); break;
	case ATTR_PADDINGS_CONTIGUOUS: sb_puts(b, a->paddings_contiguous ? "true" : "false"); break;
	case ATTR_MODE: sb_puts(b, "\"constant\""); break;
	default: die("pad_v3_print_attr: %s", attr_info[k].name);
	}
	return true;
}

void pad_v3_bounds(const Attrs *a, int rank, int64_t *lo, int64_t *hi)
{
	int pairs = a->npaddings / 2;
	for (int d = 0; d < rank; d++)
		lo[d] = hi[d] = 0;
	for (int i = 0; i < pairs && i < rank; i++) {
		lo[rank - 1 - i] = a->paddings[a->paddings_contiguous ? 2 * i : i];
		hi[rank - 1 - i] = a->paddings[a->paddings_contiguous ? 2 * i + 1 : pairs + i];
	}
}

double pad_v3_value(const Lowered *l, const LOp *o)
{
	if (o->nin < 2)
		return 0;
	const Lit *n = o->in[1] < l->nparams ? l->flat->g->values[o->in[1]].literal : NULL;
	if (!n)
		die("PadV3 %%%s: its constant is no number (shape.c refuses a value)", l->values[o->result].name);
	return lit_number(n);
}

/* x of one dim or more, of any type; paddings an even count of at most
 * twice x's rank, none negative; the constant a number (typed by x), not a
 * value. The result: x's type, each dim lengthened by its pair. */
bool infer_pad_v3(Infer *x, const Type *in, Type *out)
{
	const Attrs *a = &x->n->a;
	StrBuf b = {0};
	bool ok = false;
	if (!(a->present & ATTR_BIT(ATTR_PADDINGS)))
		ERR(x, x->n->op_span, "PadV3 needs the attribute 'paddings' (MindSpore's second input, an attribute here): "
		    "PadV3(%%x) {paddings: (1, 1)} pads the last dim with 1 element on each side");
	else if (x->n->nin == 2 && !x->g->values[x->n->in[1]].literal)
		ERR(x, in_span(x, 1), "PadV3: the constant %s is a tensor; write it as a number, PadV3(%%x, 0.5) (the "
		    "kernel takes the number as the program is built instead of reading a tensor back from the device)",
		    in_name(x, 1, &b));
	else if (in->rank < 1)
		ERR(x, in_span(x, 0), "PadV3: x %s is a scalar; it needs one dim or more to pad", in_name(x, 0, &b));
	else if (a->npaddings % 2)
		ERR(x, attr_span(x, "paddings"), "PadV3: paddings has %d entries; it takes pairs (before, after), one per "
		    "dim from the last back, so an even count", a->npaddings);
	else if (a->npaddings > 2 * in->rank)
		ERR(x, attr_span(x, "paddings"), "PadV3: paddings has %d entries, pairs for %d dims, but x %s %s has %d",
		    a->npaddings, a->npaddings / 2, in_name(x, 0, &b), DIMS(in), in->rank);
	else
		ok = true;
	for (int i = 0; ok && i < a->npaddings; i++)
		if (a->paddings[i] < 0) {
			ERR(x, attr_span(x, "paddings"), "PadV3: paddings entry %d is %lld; a negative padding crops, which "
			    "shardc does not take: cut x with StridedSlice or Slice instead, then pad what is left", i,
			    (long long)a->paddings[i]);
			ok = false;
		}
	sb_free(&b);
	if (!ok)
		return false;
	int64_t lo[MAX_DIMS], hi[MAX_DIMS];
	pad_v3_bounds(a, in->rank, lo, hi);
	*out = *in;
	out->is_param = false;
	for (int d = 0; d < in->rank; d++)
		out->dims[d] += lo[d] + hi[d];
	return true;
}

void pad_v3_dims(const Type *x, const Node *n, OpDims *od)
{
	int64_t lo[MAX_DIMS], hi[MAX_DIMS];
	pad_v3_bounds(&n->a, x->rank, lo, hi);
	od->batch = -1;   /* the first dim it does not pad, if any */
	for (int d = 0; d < x->rank; d++) {
		add_dim(od, x->dims[d], NULL);
		if (lo[d] || hi[d])
			keep_whole(od, d, "a dim the paddings lengthen");
		else if (od->batch < 0)
			od->batch = d;
	}
	identity_input(od, 0, x->rank);   /* the constant, a number: no dim (in_rank 0) */
}
