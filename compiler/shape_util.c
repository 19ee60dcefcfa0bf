/* shape_util.c: what shape.c's cases share to read an operator's operands
 * and attributes and to word their messages (shape_internal.h). Requires
 * the Infer of the operator being inferred. */
#include "shape_internal.h"

#include <stdio.h>

/* A type's dims as text in a caller's buffer, so messages can take several. */
const char *dims_text(const Type *t, char *buf, size_t size)
{
	StrBuf b = {0};
	ints_print(&b, t->dims, t->rank);
	snprintf(buf, size, "%s", b.data);
	sb_free(&b);
	return buf;
}

const Type *in_type(Infer *x, int k)
{
	return &x->g->values[x->n->in[k]].type;
}

Span in_span(Infer *x, int k)
{
	return x->n->operands->items[k]->span;
}

/* Operand k as a message names it, in b: '%name', or a number as written. */
const char *in_name(Infer *x, int k, StrBuf *b)
{
	const Value *v = &x->g->values[x->n->in[k]];
	sb_printf(b, v->literal ? "%s" : "'%%%s'", v->literal ? v->literal->s : v->name);
	return b->data;
}

const char *opname(Infer *x)
{
	return op_info[x->n->op].name;
}

bool need_attr(Infer *x, AttrKind k)
{
	if (x->n->a.present & ATTR_BIT(k))
		return true;
	ERR(x, x->n->op_span, "%s needs the attribute '%s'", opname(x), attr_info[k].name);
	return false;
}

bool same_dtype(Infer *x, int a, int b)
{
	const Type *ta = in_type(x, a), *tb = in_type(x, b);
	if (ta->dtype == tb->dtype)
		return true;
	int k = ta->dtype == DT_BOOL ? a : b, f = a + b - k;   /* a Bool (a comparison's mask) beside a float */
	if (in_type(x, k)->dtype == DT_BOOL && dtype_is_float(in_type(x, f)->dtype)) {   /* no number is Bool */
		StrBuf bk = {0}, bf = {0};
		const char *t = dtype_name(in_type(x, f)->dtype);
		ERR(x, in_span(x, k), "%s: %s is Bool and %s %s; Cast the Bool first: Cast(%%%s) {dtype: %s}", opname(x),
		    in_name(x, k, &bk), in_name(x, f, &bf), t, x->g->values[x->n->in[k]].name, t);
		sb_free(&bk);
		sb_free(&bf);
		return false;
	}
	ERR(x, in_span(x, b), "%s: operands have different element types, %s and %s (use Cast)", opname(x),
	    dtype_name(ta->dtype), dtype_name(tb->dtype));
	return false;
}

bool need_float(Infer *x, int k)
{
	if (dtype_is_float(in_type(x, k)->dtype))
		return true;
	StrBuf b = {0};
	ERR(x, in_span(x, k), "%s needs a floating-point operand, %s is %s", opname(x), in_name(x, k, &b),
	    dtype_name(in_type(x, k)->dtype));
	sb_free(&b);
	return false;
}

bool need_bool(Infer *x, int k)
{
	if (in_type(x, k)->dtype == DT_BOOL)
		return true;
	StrBuf b = {0};
	ERR(x, in_span(x, k), "%s needs Bool operands (a comparison's or IsFinite's mask), %s is %s", opname(x),
	    in_name(x, k, &b), dtype_name(in_type(x, k)->dtype));
	sb_free(&b);
	return false;
}

/* Where attribute `name` is written, for messages; the operator when it is not. */
Span attr_span(Infer *x, const char *name)
{
	const Lit *v = lit_dict_get(x->n->attr_lit, name);
	return v ? v->span : x->n->op_span;
}

/* Normalizes axis `a` of a rank-r tensor into [0, r); false if out of range. */
bool infer_axis(Infer *x, int64_t a, int r, int64_t *out)
{
	if (a < -r || a >= (r ? r : 1) || (r == 0 && a != 0 && a != -1)) {
		ERR(x, x->n->attr_lit ? x->n->attr_lit->span : x->n->op_span,
		    "%s: axis %lld is out of range for a tensor of rank %d", opname(x), (long long)a, r);
		return false;
	}
	*out = a < 0 ? a + r : a;
	return true;
}
