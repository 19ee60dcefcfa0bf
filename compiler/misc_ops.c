/* misc_ops.c: MindSpore's Range and UniformReal, two computed constants.
 *
 * Range(start, limit, delta) is Arange: the parser's builder moves its three
 * numbers into Arange's attributes (start, stop: limit, step: delta), so one
 * operator computes both and Range needs no row of its own; maxlen,
 * MindSpore's longest result (1000000), bounds either. UniformReal() {shape,
 * seed, seed2} draws Float32 values in [0, 1) with Dropout's counter-based
 * generator (sc_uniform_real), keyed by its result's flat name: every plan
 * draws the one-device program's values. Its whole shape is in
 * shape_constants.c beside the other constants'. */
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
