/* lit.c: literal values and types: building, looking up, printing.
 *
 * Printing is canonical: one space after commas and colons, 1-tuples as
 * `(x,)`, floats in the shortest form that reads back to the same double and
 * always with a `.` or an exponent, strings re-escaped. */
#include "shardc.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

Lit *lit_new(Arena *a, LitKind kind, Span span)
{
	Lit *l = arena_alloc(a, sizeof *l);
	l->kind = kind;
	l->span = span;
	return l;
}

void lit_push(Arena *a, Lit *list, Lit *key, Lit *item)
{
	if (list->nitems == list->cap) {
		int cap = list->cap ? 2 * list->cap : 4;
		list->items = arena_grow(a, list->items, sizeof(Lit *) * (size_t)list->cap, sizeof(Lit *) * (size_t)cap);
		list->keys = arena_grow(a, list->keys, sizeof(Lit *) * (size_t)list->cap, sizeof(Lit *) * (size_t)cap);
		list->cap = cap;
	}
	list->keys[list->nitems] = key;
	list->items[list->nitems++] = item;
}

Lit *lit_dict_get(const Lit *dict, const char *key)
{
	if (!dict)
		return NULL;
	for (int i = 0; i < dict->nitems; i++)
		if (dict->keys[i] && strcmp(dict->keys[i]->s, key) == 0)
			return dict->items[i];
	return NULL;
}

const char *lit_kind_name(LitKind k)
{
	static const char *names[] = {
		[LIT_INT] = "an integer", [LIT_FLOAT] = "a float", [LIT_STR] = "a string",
		[LIT_BOOL] = "a boolean", [LIT_NONE] = "None", [LIT_VALUE] = "a value name",
		[LIT_GRAPH] = "a graph name", [LIT_IDENT] = "an identifier", [LIT_TUPLE] = "a tuple",
		[LIT_DICT] = "a dict", [LIT_APPLY] = "a call", [LIT_TYPE] = "a type",
	};
	return names[k];
}

bool lit_is_number(const Lit *l)
{
	return l->kind == LIT_INT || l->kind == LIT_FLOAT;
}

double lit_number(const Lit *l)
{
	return l->kind == LIT_INT ? (double)l->i : l->f;
}

void print_float(StrBuf *b, double f)
{
	char buf[64];
	double mag = fabs(f);
	bool plain = mag == 0 || (mag >= 1e-4 && mag < 1e15);   /* 2500.0, not 2.5e+03 */
	for (int prec = plain ? 0 : 1; prec <= (plain ? 22 : 17); prec++) {   /* 1e-4 needs 4 + 17 */
		snprintf(buf, sizeof buf, plain ? "%.*f" : "%.*g", prec, f);
		if (strtod(buf, NULL) == f)
			break;
	}
	if (!strpbrk(buf, ".en"))
		strcat(buf, ".0");
	sb_puts(b, buf);
}

void print_quoted(StrBuf *b, const char *s)
{
	sb_putc(b, '"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			sb_putc(b, '\\');
		sb_putc(b, *s);
	}
	sb_putc(b, '"');
}

static void print_items(StrBuf *b, const Lit *l, bool with_keys)
{
	for (int i = 0; i < l->nitems; i++) {
		if (i)
			sb_puts(b, ", ");
		if (with_keys && l->keys[i]) {
			lit_print(b, l->keys[i]);
			sb_puts(b, ": ");
		}
		lit_print(b, l->items[i]);
	}
}

void init_print(StrBuf *b, const Lit *init)
{
	if (init->nitems)
		lit_print(b, init);
	else
		sb_puts(b, init->s);   /* `zeros`, as docs/language.md writes it */
}

void lit_print(StrBuf *b, const Lit *l)
{
	switch (l->kind) {
	case LIT_INT: sb_printf(b, "%lld", (long long)l->i); break;
	case LIT_FLOAT: print_float(b, l->f); break;
	case LIT_STR: print_quoted(b, l->s); break;
	case LIT_BOOL: sb_puts(b, l->i ? "true" : "false"); break;
	case LIT_NONE: sb_puts(b, "None"); break;
	case LIT_VALUE: sb_printf(b, "%%%s", l->s); break;
	case LIT_GRAPH: sb_printf(b, "@%s", l->s); break;
	case LIT_IDENT: sb_puts(b, l->s); break;
	case LIT_TUPLE:
		sb_putc(b, '(');
		print_items(b, l, false);
		if (l->nitems == 1)
			sb_putc(b, ',');
		sb_putc(b, ')');
		break;
	case LIT_DICT:
		sb_putc(b, '{');
		print_items(b, l, true);
		sb_putc(b, '}');
		break;
	case LIT_APPLY:
		sb_printf(b, "%s(", l->s);
		print_items(b, l, true);
		sb_putc(b, ')');
		break;
	case LIT_TYPE: type_print(b, l->type); break;
	}
}

#define DTYPE_TABLE(X) X(DT_F32, "Float32") X(DT_F16, "Float16") X(DT_BF16, "BFloat16") \
	X(DT_I32, "Int32") X(DT_I64, "Int64") X(DT_BOOL, "Bool")

const char *const dtype_names[DT_BOOL + 1] = {
#define X(e, s) [e] = s,
	DTYPE_TABLE(X)
#undef X
};

const char *dtype_name(DType t)
{
	switch (t) {
#define X(e, s) case e: return s;
	DTYPE_TABLE(X)
#undef X
	}
	die("bad dtype %d", (int)t);
}

bool dtype_from_name(const char *s, DType *out)
{
#define X(e, n) if (strcmp(s, n) == 0) { *out = e; return true; }
	DTYPE_TABLE(X)
#undef X
	return false;
}

bool dtype_is_float(DType t)
{
	return t == DT_F32 || t == DT_F16 || t == DT_BF16;
}

bool dtype_is_half(DType t)
{
	return t == DT_F16 || t == DT_BF16;
}

double dtype_max(DType t)
{
	return t == DT_F16 ? 65504.0 : t == DT_BF16 ? 3.3895313892515355e38 : FLT_MAX;
}

double dtype_round(double v, DType t)
{
	if (t == DT_F32)
		return (float)v;
	if (!dtype_is_half(t) || v == 0 || !isfinite(v))
		return v;
	int bits = t == DT_F16 ? 11 : 8, emin = t == DT_F16 ? -13 : -125;   /* precision; frexp's exponent of the
	                                                                          * smallest normal */
	int e;
	frexp(v, &e);
	int q = (e < emin ? emin : e) - bits;   /* the spacing there: 2^q */
	double r = ldexp(nearbyint(ldexp(v, -q)), q);   /* ties to even */
	return fabs(r) > dtype_max(t) ? copysign(INFINITY, v) : r;
}

int64_t dtype_bytes(DType t)
{
	switch (t) {
	case DT_F32: case DT_I32: return 4;
	case DT_F16: case DT_BF16: return 2;
	case DT_I64: return 8;
	case DT_BOOL: return 1;
	}
	return 4;
}

void ints_print(StrBuf *b, const int64_t *v, int n)
{
	sb_putc(b, '(');
	for (int i = 0; i < n; i++)
		sb_printf(b, i ? ", %lld" : "%lld", (long long)v[i]);
	sb_puts(b, n == 1 ? ",)" : ")");
}

void type_print(StrBuf *b, const Type *t)
{
	sb_printf(b, "<%s[%s], ", t->is_param ? "Parameter" : "Tensor", dtype_name(t->dtype));
	ints_print(b, t->dims, t->rank);
	sb_putc(b, '>');
}

bool type_equal(const Type *a, const Type *b)
{
	if (a->dtype != b->dtype || a->rank != b->rank)
		return false;
	for (int i = 0; i < a->rank; i++)
		if (a->dims[i] != b->dims[i])
			return false;
	return true;
}
