/* eval.c: the simulator's reference evaluator (see eval.h).
 *
 * One kernel per computing operator of docs/operators.md, written for clarity, not
 * speed: everything in double, numpy's semantics, and a check before each
 * kernel that the operands and the result type agree with each other, since
 * the per-rank graphs it runs come from the lowering under test and their
 * types are not re-inferred. Attributes are read as check_names decoded them,
 * with the defaults it sets (LayerNorm's axes -1, epsilon 1e-5). */
#include "eval.h"
#include "conv.h"
#include "pad_v3.h"
#include "int_math.h"
#include "scatter_state.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- tensors ---------------------------------------------------------- */

SimTensor sim_tensor_new(int rank, const int64_t *dims)
{
	if (rank < 0 || rank > MAX_DIMS)
		die("sim_tensor_new: rank %d", rank);
	SimTensor t = {.rank = rank, .size = 1};
	for (int i = 0; i < rank; i++) {
		if (dims[i] < 1 || dims[i] > ELEMENT_LIMIT / t.size)
			die("sim_tensor_new: dim %d is %lld", i, (long long)dims[i]);
		t.dims[i] = dims[i];
		t.size *= dims[i];
	}
	t.data = xcalloc((size_t)t.size, sizeof(double));
	return t;
}

SimTensor sim_tensor_copy(const SimTensor *t)
{
	SimTensor c = sim_tensor_new(t->rank, t->dims);
	memcpy(c.data, t->data, sizeof(double) * (size_t)t->size);
	return c;
}

void sim_tensor_free(SimTensor *t)
{
	free(t->data);
	*t = (SimTensor){0};
}

/* ---- element types ------------------------------------------------------ */

/* What an integer element holds: numpy's astype truncates toward zero; the
 * value saturates because converting an out-of-range double is undefined in
 * C, and NaN becomes 0 for the same reason. */
static double to_integer(double v, double lo, double hi)
{
	if (isnan(v))
		return 0;
	v = trunc(v);
	return v < lo ? lo : v > hi ? hi : v;
}

/* A result as its element type holds it. Floating types keep the double:
 * the reference stays more precise than any of them. */
static double round_result(double v, DType t)
{
	switch (t) {
	case DT_F32: case DT_F16: case DT_BF16: return v;
	case DT_I32: return to_integer(v, INT32_MIN, INT32_MAX);
	case DT_I64: return to_integer(v, -0x1p63, 0x1p63 - 1024);   /* the largest double below 2^63 */
	case DT_BOOL: return v != 0;
	}
	die("bad dtype %d", (int)t);
}

/* ---- initializers (docs/output.md) ---------------------------------------- */

static uint64_t fnv1a64(const char *s)
{
	uint64_t h = 0xcbf29ce484222325u;
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3u;
	}
	return h;
}

static uint64_t splitmix64(uint64_t z)
{
	z += 0x9e3779b97f4a7c15u;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	return z ^ (z >> 31);
}

/* u(j): 24 random bits, so every value is exact in float too. */
static double unit(uint64_t key, uint64_t j)
{
	return (double)(splitmix64(key + j) >> 40) * 0x1p-24;
}

void sim_init(SimTensor *t, const char *name, const Lit *init, bool is_param, DType dtype, int64_t seed)
{
	const double pi = 3.14159265358979323846;
	const char *kind = init ? init->s : is_param ? "normal" : "uniform";
	double arg[2] = {is_param ? 0.01 : 0, 1};   /* the defaults' arguments */
	for (int k = 0; init && k < init->nitems && k < 2; k++)
		arg[k] = lit_number(init->items[k]);
	uint64_t key = fnv1a64(name) ^ ((uint64_t)seed * 0x9e3779b97f4a7c15u);
	for (int64_t i = 0; i < t->size; i++) {
		uint64_t j = (uint64_t)i;
		double v;
		if (strcmp(kind, "zeros") == 0)
			v = 0;
		else if (strcmp(kind, "ones") == 0)
			v = 1;
		else if (strcmp(kind, "constant") == 0)
			v = arg[0];
		else if (strcmp(kind, "uniform") == 0)
			v = arg[0] + (arg[1] - arg[0]) * unit(key, j);
		else if (strcmp(kind, "normal") == 0)
			v = arg[0] * sqrt(-2 * log(1 - unit(key, 2 * j))) * cos(2 * pi * unit(key, 2 * j + 1));
		else if (strcmp(kind, "randint") == 0)
			v = arg[0] + floor(unit(key, j) * (arg[1] - arg[0]));
		else
			die("sim_init: unknown initializer '%s' (check_names lets none through)", kind);
		t->data[i] = dtype_is_float(dtype) ? (double)(float)v : round_result(v, dtype);
	}
}

/* ---- evaluation: shared helpers ------------------------------------------ */

typedef struct {
	const Graph *g;
	const Node *n;
	const SimTensor *ins;    /* (n->nin) operand values */
	SimTensor *out;          /* allocated with the result type */
	char *err;
	size_t errlen;
} Eval;

static bool fail(Eval *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prefixes the message with the statement, `%y = Op: `, so that a failing
 * simulation names the node. Always false. */
static bool fail(Eval *e, const char *fmt, ...)
{
	char msg[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	const char *value = e->g->values[e->n->result].name;
	const char *op = e->n->op < OP_COUNT ? op_info[e->n->op].name : e->n->op_name;
	snprintf(e->err, e->errlen, "%%%s = %s: %s", value ? value : "?", op ? op : "?", msg);
	return false;
}

/* dims as the IR writes them, (2, 3), in the caller's buffer. */
static const char *dims_text(int rank, const int64_t *dims, char *buf, size_t size)
{
	StrBuf b = {0};
	ints_print(&b, dims, rank);
	snprintf(buf, size, "%s", b.data);
	sb_free(&b);
	return buf;
}

static bool same_dims(int ra, const int64_t *a, int rb, const int64_t *b)
{
	if (ra != rb)
		return false;
	for (int i = 0; i < ra; i++)
		if (a[i] != b[i])
			return false;
	return true;
}

static int64_t product(const int64_t *dims, int from, int to)
{
	int64_t p = 1;
	for (int i = from; i < to; i++)
		p *= dims[i];
	return p;
}

/* The result type is authoritative for the allocation; this checks that
 * the operands give the same shape, which catches a lowering that wrote a
 * wrong local type. */
static bool expect_out(Eval *e, int rank, const int64_t *dims)
{
	if (same_dims(rank, dims, e->out->rank, e->out->dims))
		return true;
	char a[200], b[200];
	return fail(e, "the result type says %s but the operands give %s", dims_text(e->out->rank, e->out->dims, a, 200),
	            dims_text(rank, dims, b, 200));
}

/* Normalizes axis a of a rank-r tensor into [0, r) (a scalar's only axis is
 * 0, written 0 or -1). */
static bool norm_axis(Eval *e, int64_t a, int r, int *out)
{
	int64_t n = r ? r : 1;
	if (a < -n || a >= n)
		return fail(e, "axis %lld is out of range for rank %d", (long long)a, r);
	*out = (int)(a < 0 ? a + n : a);
	return true;
}

/* The offset of element `flat` of a tensor of shape dims[0..r) in a buffer
 * whose dim i advances by st[i]: a stride of 0 broadcasts, a permuted or
 * scaled stride transposes or slices. */
static int64_t offset_of(int64_t flat, int r, const int64_t *dims, const int64_t *st)
{
	int64_t off = 0;
	for (int i = r - 1; i >= 0; i--) {
		off += flat % dims[i] * st[i];
		flat /= dims[i];
	}
	return off;
}

/* Row-major strides of dims[0..r), in units of `unit` elements. */
static void strides_of(const int64_t *dims, int r, int64_t unit, int64_t *st)
{
	for (int i = r - 1; i >= 0; i--) {
		st[i] = unit;
		unit *= dims[i];
	}
}

/* Strides of dims[0..nd) read as r >= nd dims, right-aligned as numpy
 * broadcasts, with stride 0 along the dims that are 1 or missing. */
static void broadcast_strides(const int64_t *dims, int nd, int r, int64_t unit, int64_t *st)
{
	for (int i = r - 1; i >= 0; i--) {
		int j = i - (r - nd);
		st[i] = j < 0 || dims[j] == 1 ? 0 : unit;
		if (j >= 0)
			unit *= dims[j];
	}
}

static bool broadcast_shape(Eval *e, const int64_t *da, int ra, const int64_t *db, int rb, int *r, int64_t *dims)
{
	*r = ra > rb ? ra : rb;
	for (int i = 0; i < *r; i++) {
		int ia = i - (*r - ra), ib = i - (*r - rb);
		int64_t x = ia >= 0 ? da[ia] : 1, y = ib >= 0 ? db[ib] : 1;
		if (x != y && x != 1 && y != 1) {
			char a[200], b[200];
			return fail(e, "shapes %s and %s do not broadcast", dims_text(ra, da, a, 200), dims_text(rb, db, b, 200));
		}
		dims[i] = x == 1 ? y : x;
	}
	return true;
}

/* Splits x around one axis: `outer` blocks of `len` steps of `inner`. */
static void around_axis(const SimTensor *x, int axis, int64_t *outer, int64_t *len, int64_t *inner)
{
	*outer = product(x->dims, 0, axis);
	*len = x->rank ? x->dims[axis] : 1;
	*inner = x->rank ? product(x->dims, axis + 1, x->rank) : 1;
}

/* ---- kernels ---------------------------------------------------------------- */

static bool eval_matmul(Eval *e)
{
	const SimTensor *a = &e->ins[0], *b = &e->ins[1];
	bool ta = e->n->a.transpose_a, tb = e->n->a.transpose_b;
	bool batch = e->n->op == OP_BATCH_MATMUL;
	if (batch ? a->rank < 2 || b->rank < 2 : a->rank != 2 || b->rank != 2)
		return fail(e, "operands of rank %d and %d", a->rank, b->rank);
	int ra = a->rank, rb = b->rank;
	int64_t m = a->dims[ra - 2], k = a->dims[ra - 1], kb = b->dims[rb - 2], n = b->dims[rb - 1];
	if (ta) {
		int64_t t = m; m = k; k = t;
	}
	if (tb) {
		int64_t t = kb; kb = n; n = t;
	}
	if (k != kb)
		return fail(e, "inner dimensions differ (%lld vs %lld)", (long long)k, (long long)kb);
	int r;
	int64_t dims[MAX_DIMS], sa[MAX_DIMS], sb[MAX_DIMS];
	if (!broadcast_shape(e, a->dims, ra - 2, b->dims, rb - 2, &r, dims))
		return false;
	dims[r] = m;
	dims[r + 1] = n;
	if (!expect_out(e, r + 2, dims))
		return false;
	broadcast_strides(a->dims, ra - 2, r, m * k, sa);
	broadcast_strides(b->dims, rb - 2, r, k * n, sb);
	int64_t nbatch = product(dims, 0, r);
	for (int64_t p = 0; p < nbatch; p++) {
		const double *x = a->data + offset_of(p, r, dims, sa), *y = b->data + offset_of(p, r, dims, sb);
		double *z = e->out->data + p * m * n;
		for (int64_t i = 0; i < m; i++)
			for (int64_t j = 0; j < n; j++) {
				double s = 0;
				for (int64_t l = 0; l < k; l++)
					s += (ta ? x[l * m + i] : x[i * k + l]) * (tb ? y[j * k + l] : y[l * n + j]);
				z[i * n + j] = s;
			}
	}
	return true;
}

/* The Hurwitz zeta function, the sum over k >= 0 of (k + q)^-x: 40 terms,
 * then the tail by Euler-Maclaurin's formula (its first 8 Bernoulli terms);
 * infinite at x == 1 and at q a non-positive integer, NaN for x < 1. */
static double hurwitz_zeta(double x, double q)
{
	static const double b2k[8] = {1.0 / 6, -1.0 / 30, 1.0 / 42, -1.0 / 30, 5.0 / 66, -691.0 / 2730, 7.0 / 6,
	                              -3617.0 / 510};
	if (x == 1 || (q <= 0 && q == floor(q)))
		return INFINITY;
	if (!(x > 1) || (q < 0 && x != floor(x)) || isnan(q))
		return NAN;
	double t = 0, w = 40 + q;
	for (int k = 0; k < 40; k++)
		t += pow(k + q, -x);
	t += pow(w, 1 - x) / (x - 1) + 0.5 * pow(w, -x);
	double fac = x, p = pow(w, -x - 1), f2 = 1;
	for (int j = 0; j < 8; j++) {
		f2 *= (2.0 * j + 1) * (2.0 * j + 2);   /* (2j + 2)! */
		t += b2k[j] / f2 * fac * p;
		fac *= (x + 2 * j + 1) * (x + 2 * j + 2);
		p /= w * w;
	}
	return t;
}

static double binary(OpKind op, double a, double b)
{
	switch (op) {
	case OP_ADD: return a + b;
	case OP_SUB: return a - b;
	case OP_MUL: return a * b;
	case OP_DIV: return a / b;
	/* numpy's maximum and minimum propagate NaN */
	case OP_MAXIMUM: return isnan(a) || isnan(b) ? NAN : a > b ? a : b;
	case OP_MINIMUM: return isnan(a) || isnan(b) ? NAN : a < b ? a : b;
	case OP_POW: return pow(a, b);
	case OP_FLOOR_DIV: return floor(a / b);
	case OP_FLOOR_MOD: {   /* numpy's mod: the divisor's sign */
		double r = fmod(a, b);
		return r != 0 && (r < 0) != (b < 0) ? r + b : r;
	}
	case OP_MOD: return fmod(a, b);
	case OP_SQUARED_DIFFERENCE: return (a - b) * (a - b);
	case OP_DIV_NO_NAN: return b == 0 ? 0 : a / b;
	case OP_ATAN2: return atan2(a, b);
	case OP_SIGMOID_CE: return (a > 0 ? a : 0) - a * b + log1p(exp(-fabs(a)));   /* logits a, labels b */
	case OP_XLOGY: return a == 0 ? 0 : a * log(b);
	case OP_XDIVY: return a == 0 ? 0 : a / b;
	case OP_MUL_NO_NAN: return b == 0 ? 0 : a * b;
	case OP_TRUNCATE_DIV: return trunc(a / b);
	case OP_TRUNCATE_MOD: return fmod(a, b);   /* the dividend's sign, as C's */
	case OP_HYPOT: return hypot(a, b);
	case OP_NEXT_AFTER: return nextafterf((float)a, (float)b);   /* Float32's next */
	case OP_ZETA: return hurwitz_zeta(a, b);
	/* the comparisons: 1 where true (round_result keeps a Bool 0 or 1) */
	case OP_EQUAL: return a == b;
	case OP_NOT_EQUAL: return a != b;
	case OP_GREATER: return a > b;
	case OP_GREATER_EQUAL: return a >= b;
	case OP_LESS: return a < b;
	case OP_LESS_EQUAL: return a <= b;
	case OP_LOGICAL_AND: return a != 0 && b != 0;
	case OP_LOGICAL_OR: return a != 0 || b != 0;
	default: die("not a binary operator");
	}
}

static bool eval_binary(Eval *e)
{
	const SimTensor *a = &e->ins[0], *b = &e->ins[1];
	int r;
	int64_t dims[MAX_DIMS], sa[MAX_DIMS], sb[MAX_DIMS];
	if (!broadcast_shape(e, a->dims, a->rank, b->dims, b->rank, &r, dims) || !expect_out(e, r, dims))
		return false;
	broadcast_strides(a->dims, a->rank, r, 1, sa);
	broadcast_strides(b->dims, b->rank, r, 1, sb);
	for (int64_t j = 0; j < e->out->size; j++) {
		double u = a->data[offset_of(j, r, dims, sa)], v = b->data[offset_of(j, r, dims, sb)];
		e->out->data[j] = e->n->op == OP_APPROXIMATE_EQUAL ? fabs(u - v) < (float)e->n->a.tolerance   /* an attribute */
		                                                   : binary(e->n->op, u, v);
	}
	return true;
}

/* Lerp: start + weight (end - start), the three broadcast as numpy's. */
static bool eval_lerp(Eval *e)
{
	const SimTensor *s = &e->ins[0], *t = &e->ins[1], *w = &e->ins[2];
	int r1, r;
	int64_t d1[MAX_DIMS], dims[MAX_DIMS], st[3][MAX_DIMS];
	if (!broadcast_shape(e, s->dims, s->rank, t->dims, t->rank, &r1, d1) ||
	    !broadcast_shape(e, d1, r1, w->dims, w->rank, &r, dims) || !expect_out(e, r, dims))
		return false;
	for (int k = 0; k < 3; k++)
		broadcast_strides(e->ins[k].dims, e->ins[k].rank, r, 1, st[k]);
	for (int64_t j = 0; j < e->out->size; j++) {
		double a = s->data[offset_of(j, r, dims, st[0])], b = t->data[offset_of(j, r, dims, st[1])];
		e->out->data[j] = a + w->data[offset_of(j, r, dims, st[2])] * (b - a);
	}
	return true;
}

/* MaskedFill: value (a scalar) where the mask is true, else x; x and the
 * mask broadcast as numpy's. */
static bool eval_masked_fill(Eval *e)
{
	const SimTensor *x = &e->ins[0], *m = &e->ins[1], *v = &e->ins[2];
	int r;
	int64_t dims[MAX_DIMS], sx[MAX_DIMS], sm[MAX_DIMS];
	if (v->size != 1)
		return fail(e, "value has %lld elements, not 1", (long long)v->size);
	if (!broadcast_shape(e, x->dims, x->rank, m->dims, m->rank, &r, dims) || !expect_out(e, r, dims))
		return false;
	broadcast_strides(x->dims, x->rank, r, 1, sx);
	broadcast_strides(m->dims, m->rank, r, 1, sm);
	for (int64_t j = 0; j < e->out->size; j++)
		e->out->data[j] = m->data[offset_of(j, r, dims, sm)] != 0 ? v->data[0] : x->data[offset_of(j, r, dims, sx)];
	return true;
}

/* BroadcastTo: x at each element of the result's shape (the compiler's),
 * numpy's broadcasting checked here. */
static bool eval_broadcast_to(Eval *e)
{
	const SimTensor *x = &e->ins[0];
	int r = e->out->rank;
	int64_t sx[MAX_DIMS];
	for (int i = 0; i < r; i++) {
		int j = i - (r - x->rank);
		if (j >= 0 && x->dims[j] != 1 && x->dims[j] != e->out->dims[i])
			return fail(e, "dim %d of x does not broadcast to the result's", j);
	}
	broadcast_strides(x->dims, x->rank, r, 1, sx);
	for (int64_t j = 0; j < e->out->size; j++)
		e->out->data[j] = x->data[offset_of(j, r, e->out->dims, sx)];
	return true;
}

static bool eval_bias_add(Eval *e)
{
	const SimTensor *x = &e->ins[0], *b = &e->ins[1];
	if (x->rank < 1 || b->rank != 1 || b->dims[0] != x->dims[x->rank - 1])
		return fail(e, "the bias must be 1-D with the size of x's last dim");
	if (!expect_out(e, x->rank, x->dims))
		return false;
	for (int64_t j = 0; j < x->size; j++)
		e->out->data[j] = x->data[j] + b->data[j % b->dims[0]];
	return true;
}

/* MindSpore's PReLU: x < 0 ? w x : x, a weight per channel (dim 1; one
 * channel below rank 2) or one for all. */
static bool eval_prelu(Eval *e)
{
	const SimTensor *x = &e->ins[0], *w = &e->ins[1];
	int64_t c = x->rank >= 2 ? x->dims[1] : 1, inner = 1;
	for (int d = 2; d < x->rank; d++)
		inner *= x->dims[d];
	if (w->rank != 1 || (w->dims[0] != c && w->dims[0] != 1))
		return fail(e, "the weight must be 1-D, of x's channels (dim 1) or of 1");
	if (!expect_out(e, x->rank, x->dims))
		return false;
	for (int64_t j = 0; j < x->size; j++) {
		double v = x->data[j], wj = w->data[w->dims[0] == 1 ? 0 : j / inner % c];
		e->out->data[j] = v < 0 ? wj * v : v;
	}
	return true;
}

/* A per-rank graph's piece of a windowed result (conv.c, window_piece): its
 * first row and column of the whole's (ho, wo) and its size; the whole
 * without begin and end. */
static void window_rows(const Attrs *a, int64_t ho, int64_t wo, int64_t *first, int64_t *ph, int64_t *pw)
{
	bool piece = a->present & ATTR_BIT(ATTR_BEGIN);
	first[0] = piece ? a->begin[0] : 0;
	first[1] = piece ? a->begin[1] : 0;
	*ph = piece ? a->end[0] - a->begin[0] : ho;
	*pw = piece ? a->end[1] - a->begin[1] : wo;
}

/* MindSpore's Conv2D, MaxPool and AvgPool on x (n, c, h, w): each output's
 * window over x (zeros outside for Conv2D; MaxPool's first maximum and
 * AvgPool's mean of the elements inside x), the geometry conv.c's. */
static bool eval_window(Eval *e)
{
	const SimTensor *x = &e->ins[0], *w = e->n->op == OP_CONV2D ? &e->ins[1] : NULL;
	Window g;
	if (x->rank == 4)
		window_of(e->n->op, &e->n->a, x->dims, &g);
	if (x->rank != 4 || (w && (w->rank != 4 || w->dims[1] * g.groups != x->dims[1])))
		return fail(e, "x must be (n, c, h, w) and the weight (o, c / group, kh, kw)");
	g.o = w ? w->dims[0] : g.c;
	int64_t cg = g.c / g.groups, og = g.o / g.groups, first[2], ph, pw;
	window_rows(&e->n->a, g.ho, g.wo, first, &ph, &pw);
	if (!expect_out(e, 4, (const int64_t[]){g.n, g.o, ph, pw}))
		return false;
	for (int64_t b = 0; b < g.n; b++)
		for (int64_t o = 0; o < g.o; o++)
			for (int64_t lh = 0; lh < ph; lh++)
				for (int64_t lw = 0; lw < pw; lw++) {
					int64_t oh = first[0] + lh, ow = first[1] + lw;
					double acc = 0, best = 0;
					int64_t count = 0;
					if (oh >= g.ho || ow >= g.wo) {   /* an uneven piece's padding */
						e->out->data[((b * g.o + o) * ph + lh) * pw + lw] = 0;
						continue;
					}
					int64_t c0 = w ? o / og * cg : o;   /* the output's group's input channels; a pool's own */
					for (int64_t c = c0; c < c0 + (w ? cg : 1); c++)
						for (int64_t i = 0; i < g.kh; i++)
							for (int64_t j = 0; j < g.kw; j++) {
								int64_t r = oh * g.sh - g.pt + i * g.dh, s = ow * g.sw - g.pl + j * g.dw;
								if (r < 0 || r >= g.h || s < 0 || s >= g.w)
									continue;
								double v = x->data[((b * g.c + c) * g.h + r) * g.w + s];
								if (w)
									v *= w->data[((o * cg + c - c0) * g.kh + i) * g.kw + j];
								best = count == 0 || v > best ? v : best;
								acc += v;
								count++;
							}
					e->out->data[((b * g.o + o) * ph + lh) * pw + lw] =
						e->n->op == OP_MAX_POOL ? best : e->n->op == OP_AVG_POOL ? acc / (double)count : acc;
				}
	return true;
}

/* MindSpore's Conv2DTranspose(dout, w) with input_size (n, c, h, w): each
 * dout element times the weight scattered back onto its window in the
 * result (Conv2D's x's gradient), the geometry conv.c's on input_size. */
static bool eval_conv_transpose(Eval *e)
{
	const SimTensor *dy = &e->ins[0], *w = &e->ins[1];
	const Attrs *a = &e->n->a;
	Window g;
	window_of(e->n->op, a, a->shape, &g);
	if (dy->rank != 4 || w->rank != 4 || w->dims[1] * g.groups != g.c ||
	    !same_dims(4, dy->dims, 4, (const int64_t[]){g.n, w->dims[0], g.ho, g.wo}))
		return fail(e, "dout must be the convolution's output for input_size and the weight (o, c / group, kh, kw)");
	g.o = w->dims[0];
	int64_t cg = g.c / g.groups, og = g.o / g.groups, first[2], ph, pw;
	window_rows(a, g.h, g.w, first, &ph, &pw);
	if (!expect_out(e, 4, (const int64_t[]){g.n, g.c, ph, pw}))
		return false;
	for (int64_t k = 0; k < g.n * g.c * ph * pw; k++)
		e->out->data[k] = 0;
	for (int64_t b = 0; b < g.n; b++)
		for (int64_t o = 0; o < g.o; o++)
			for (int64_t oh = 0; oh < g.ho; oh++)
				for (int64_t ow = 0; ow < g.wo; ow++) {
					double v = dy->data[((b * g.o + o) * g.ho + oh) * g.wo + ow];
					int64_t c0 = o / og * cg;   /* the output channel's group's input channels */
					for (int64_t c = c0; c < c0 + cg; c++)
						for (int64_t i = 0; i < g.kh; i++)
							for (int64_t j = 0; j < g.kw; j++) {
								int64_t r = oh * g.sh - g.pt + i * g.dh - first[0];   /* the piece's row */
								int64_t s = ow * g.sw - g.pl + j * g.dw - first[1];
								if (r >= 0 && r < ph && r + first[0] < g.h && s >= 0 && s < pw && s + first[1] < g.w)
									e->out->data[((b * g.c + c) * ph + r) * pw + s] +=
										v * w->data[((o * cg + c - c0) * g.kh + i) * g.kw + j];
							}
				}
	return true;
}

static double relu6(double v)   /* a NaN kept, as numpy's clip */
{
	return v <= 0 ? 0 : v >= 6 ? 6 : v;
}

/* a: the operator's attributes (GeLU's approximate). */
/* erf's inverse in double: bisection to a bracket, then Newton's steps on
 * erf(y) = x (the runtime's Float32 kernel is checked against this). */
static double erfinv(double x)
{
	if (!(x > -1 && x < 1))
		return x == 1 ? INFINITY : x == -1 ? -INFINITY : NAN;
	double lo = -6, hi = 6, y = 0;
	for (int i = 0; i < 30; i++) {
		y = (lo + hi) / 2;
		if (erf(y) < x)
			lo = y;
		else
			hi = y;
	}
	for (int i = 0; i < 4; i++)
		y -= (erf(y) - x) / (1.1283791670955126 * exp(-y * y));
	return y;
}

static double unary(OpKind op, const Attrs *a, double x)
{
	const double pi = 3.14159265358979323846;
	switch (op) {
	case OP_RELU: return x < 0 ? 0 : x;   /* NaN stays NaN, as numpy's maximum(x, 0) */
	case OP_GELU:
		if (a->gelu_erf)   /* approximate: "none" */
			return 0.5 * x * (1 + erf(x / sqrt(2)));
		return 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x * x * x)));
	case OP_TANH: return tanh(x);
	case OP_SIGMOID: return 1 / (1 + exp(-x));
	case OP_EXP: return exp(x);
	case OP_LOG: return log(x);
	case OP_NEG: return -x;
	case OP_SQRT: return sqrt(x);
	case OP_RSQRT: return 1 / sqrt(x);
	case OP_SILU: return x / (1 + exp(-x));
	case OP_SQUARE: return x * x;
	case OP_ABS: return fabs(x);
	case OP_SIN: return sin(x);
	case OP_COS: return cos(x);
	case OP_ERF: return erf(x);
	case OP_RECIPROCAL: return 1 / x;
	case OP_LOG1P: return log1p(x);
	case OP_EXPM1: return expm1(x);
	case OP_SOFTPLUS: return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x));
	case OP_FLOOR: return floor(x);
	case OP_SIGN: return x > 0 ? 1 : x < 0 ? -1 : 0 * x;
	case OP_CEIL: return ceil(x);
	case OP_ROUND: return nearbyint(x);   /* half to even in the default rounding mode */
	case OP_TAN: return tan(x);
	case OP_ATAN: return atan(x);
	case OP_SINH: return sinh(x);
	case OP_COSH: return cosh(x);
	case OP_HSWISH: return x * relu6(x + 3) / 6;
	case OP_HSIGMOID: return relu6(x + 3) / 6;
	case OP_ERFC: return erfc(x);
	case OP_INV: return 1 / x;
	case OP_ACOS: return acos(x);
	case OP_ASIN: return asin(x);
	case OP_ATANH: return atanh(x);
	case OP_ASINH: return asinh(x);
	case OP_ACOSH: return acosh(x);
	case OP_RINT: return nearbyint(x);
	case OP_ELU: return x > 0 ? x : a->alpha * expm1(x);
	case OP_MISH: return x * tanh(x > 0 ? x + log1p(exp(-x)) : log1p(exp(x)));
	case OP_SELU: return 1.0507009873554805 * (x > 0 ? x : 1.6732632423543772 * expm1(x));
	case OP_LOG_SIGMOID: return x < 0 ? x - log1p(exp(x)) : -log1p(exp(-x));
	case OP_ZEROS_LIKE: return 0;
	case OP_ONES_LIKE: return 1;
	case OP_LEAKY_RELU: return x > 0 ? x : a->alpha * x;   /* MindSpore's Maximum(alpha x, x); NaN stays NaN */
	case OP_RELU6: return relu6(x);
	case OP_SOFTSIGN: return x / (1 + fabs(x));
	case OP_FAST_GELU: return x / (1 + exp(-1.702 * x));
	case OP_TRUNC: return trunc(x);
	case OP_ERFINV: return erfinv(x);
	case OP_LGAMMA: return x <= 0 && x == floor(x) ? INFINITY : lgamma(x);
	case OP_HSHRINK: return x >= -a->lambd && x <= a->lambd ? 0 : x;
	case OP_SOFT_SHRINK: return x > a->lambd ? x - a->lambd : x < -a->lambd ? x + a->lambd : isnan(x) ? x : 0;
	case OP_LOGICAL_NOT: return x == 0;   /* a Bool is 0 or 1 */
	case OP_IS_FINITE: return isfinite(x);
	default: die("not a unary operator");
	}
}

static bool eval_unary(Eval *e)
{
	const SimTensor *x = &e->ins[0];
	if (!expect_out(e, x->rank, x->dims))
		return false;
	for (int64_t j = 0; j < x->size; j++)
		e->out->data[j] = unary(e->n->op, &e->n->a, x->data[j]);
	return true;
}

/* numpy's where(cond, x, y) on one shape (Select broadcasts nothing). */
static bool eval_select(Eval *e)
{
	const SimTensor *c = &e->ins[0], *x = &e->ins[1], *y = &e->ins[2];
	if (!same_dims(c->rank, c->dims, x->rank, x->dims) || !same_dims(c->rank, c->dims, y->rank, y->dims))
		return fail(e, "the condition, x and y differ in shape");
	if (!expect_out(e, x->rank, x->dims))
		return false;
	for (int64_t j = 0; j < x->size; j++)
		e->out->data[j] = c->data[j] != 0 ? x->data[j] : y->data[j];
	return true;
}

/* RotaryPositionEmbedding: x cos + r(x) sin, r the rotation of the mode
 * (0: rotate-half, (-x2, x1); 1: interleaved pairs, (x0, x1) -> (-x1, x0)),
 * cos and sin broadcast to x. */
static bool eval_rotary(Eval *e)
{
	const SimTensor *x = &e->ins[0], *c = &e->ins[1], *s = &e->ins[2];
	if (x->rank != 4 || x->dims[3] % 2 || c->rank != 4 || s->rank != 4)
		return fail(e, "x, cos and sin must be 4-D, x's last dim even");
	int r;
	int64_t dims[MAX_DIMS], sc[MAX_DIMS], ss[MAX_DIMS];
	if (!broadcast_shape(e, c->dims, 4, x->dims, 4, &r, dims) || !same_dims(r, dims, 4, x->dims) ||
	    !broadcast_shape(e, s->dims, 4, x->dims, 4, &r, dims) || !same_dims(r, dims, 4, x->dims))
		return fail(e, "cos and sin must broadcast to x");
	if (!expect_out(e, 4, x->dims))
		return false;
	broadcast_strides(c->dims, 4, 4, 1, sc);
	broadcast_strides(s->dims, 4, 4, 1, ss);
	int64_t d = x->dims[3], h = d / 2;
	for (int64_t j = 0; j < x->size; j++) {
		int64_t col = j % d, p = e->n->a.mode ? (col % 2 ? j - 1 : j + 1) : col < h ? j + h : j - h;
		double rot = p > j ? -x->data[p] : x->data[p];
		e->out->data[j] = x->data[j] * c->data[offset_of(j, 4, x->dims, sc)] +
		                  rot * s->data[offset_of(j, 4, x->dims, ss)];
	}
	return true;
}

/* FlashAttentionScore, BNSD: softmax(scale q k^T) v over the keys each
 * query sees (the mask nonzero hides one; sparse_mode 2 or 3 the later
 * keys); a query that sees none gets zeros. */
static bool eval_flash_attention(Eval *e)
{
	const SimTensor *q = &e->ins[0], *k = &e->ins[1], *v = &e->ins[2], *m = e->n->nin == 4 ? &e->ins[3] : NULL;
	const Attrs *a = &e->n->a;
	if (q->rank != 4 || k->rank != 4 || !same_dims(k->rank, k->dims, v->rank, v->dims) || k->dims[0] != q->dims[0] ||
	    k->dims[1] != q->dims[1] || k->dims[3] != q->dims[3])
		return fail(e, "q must be (B, N, S, D), k and v (B, N, S_kv, D)");
	int64_t B = q->dims[0], N = q->dims[1], S = q->dims[2], T = k->dims[2], D = q->dims[3], ms[3] = {0, 0, 0};
	if (m) {
		if ((m->rank != 2 && m->rank != 4) || m->dims[m->rank - 2] != S || m->dims[m->rank - 1] != T)
			return fail(e, "attn_mask must be (S, S_kv) or (B or 1, N or 1, S, S_kv)");
		ms[2] = T;
		ms[1] = m->rank == 4 && m->dims[1] != 1 ? S * T : 0;
		ms[0] = m->rank == 4 && m->dims[0] != 1 ? m->dims[1] * S * T : 0;
	}
	if (!expect_out(e, 4, q->dims))
		return false;
	double *p = xcalloc((size_t)T, sizeof(double));
	for (int64_t b = 0; b < B; b++)
		for (int64_t h = 0; h < N; h++)
			for (int64_t i = 0; i < S; i++) {
				const double *qi = q->data + ((b * N + h) * S + i) * D;
				double max = -INFINITY, sum = 0;
				for (int64_t j = 0; j < T; j++) {
					const double *kj = k->data + ((b * N + h) * T + j) * D;
					double dot = 0;
					for (int64_t c = 0; c < D; c++)
						dot += qi[c] * kj[c];
					bool hidden = (a->sparse_mode && j > i) || (m && m->data[b * ms[0] + h * ms[1] + i * ms[2] + j] != 0);
					p[j] = hidden ? -INFINITY : a->scale_value * dot;
					max = p[j] > max ? p[j] : max;
				}
				for (int64_t j = 0; j < T; j++)
					sum += p[j] = max == -INFINITY ? 0 : exp(p[j] - max);
				double *y = e->out->data + ((b * N + h) * S + i) * D;
				for (int64_t c = 0; c < D; c++) {
					double acc = 0;
					for (int64_t j = 0; j < T; j++)
						acc += p[j] * v->data[((b * N + h) * T + j) * D + c];
					y[c] = sum > 0 ? acc / sum : 0;
				}
			}
	free(p);
	return true;
}

/* Dropout: the simulator runs the forward graph as inference does, where
 * Dropout is the identity (docs/operators.md); its training mask is the
 * runtime's and tools/ref_eval.py's. */
static bool eval_dropout(Eval *e)
{
	const SimTensor *x = &e->ins[0];
	if (!expect_out(e, x->rank, x->dims))
		return false;
	memcpy(e->out->data, x->data, sizeof(double) * (size_t)x->size);
	return true;
}

/* A computed constant: its piece [begin, end) of the whole value its
 * attributes describe (a per-rank graph's piece; the whole when no begin). */
static bool eval_constant(Eval *e)
{
	const Attrs *a = &e->n->a;
	const SimTensor *y = e->out;
	int r = y->rank;
	DType t = e->g->values[e->n->result].type.dtype;
	for (int64_t j = 0; j < y->size; j++) {
		int64_t idx[MAX_DIMS], rest = j;
		for (int d = r - 1; d >= 0; d--) {   /* where element j lies in the whole value */
			idx[d] = rest % y->dims[d] + ((a->present & (ATTR_BIT(ATTR_BEGIN))) ? a->begin[d] : 0);
			rest /= y->dims[d];
		}
		double v;
		if (e->n->op == OP_FILL_V2) {
			v = a->fill;
		} else if (e->n->op == OP_DROPOUT_GEN_MASK) {   /* inference keeps every element (eval_dropout) */
			v = 1;
		} else if (e->n->op == OP_UNIFORM_REAL) {   /* not the draws: a value in [0, 1) of the global index */
			int64_t flat = 0;
			for (int d = 0; d < r; d++)
				flat = flat * a->shape[d] + idx[d];
			v = fmod((double)flat * 0.6180339887498949, 1.0);
		} else if (e->n->op == OP_ARANGE) {
			v = a->start + (double)idx[0] * a->step;
		} else if (e->n->op == OP_EYE) {
			v = idx[0] == idx[1];
		} else if (e->n->op == OP_LIN_SPACE) {   /* in double: the math, not MindSpore's Float32 rounding */
			v = a->shape[0] > 1 ? a->start + (double)idx[0] * (a->stop - a->start) / (double)(a->shape[0] - 1) : a->start;
		} else {
			int64_t row = idx[r - 2], col = idx[r - 1], hd = a->shape[a->nshape - 1];
			if (e->n->op == OP_CAUSAL_MASK)
				v = t == DT_BOOL ? col <= row : col > row ? ((a->present & (ATTR_BIT(ATTR_FILL))) ? a->fill : -dtype_max(t)) : 0;
			else {
				double angle = (double)row * pow(a->theta, -2.0 * (double)(col % (hd / 2)) / (double)hd);
				v = e->n->op == OP_ROPE_SIN ? sin(angle) : cos(angle);
			}
		}
		e->out->data[j] = v;
	}
	return true;
}

/* Softmax and LogSoftmax, shifted by the maximum so exp never overflows. */
static bool eval_softmax(Eval *e)
{
	const SimTensor *x = &e->ins[0];
	const Attrs *a = &e->n->a;
	int axis;
	if (a->axis_is_tuple && a->naxes != 1)
		return fail(e, "takes one axis");
	if (!norm_axis(e, a->has_axis ? a->axes[0] : -1, x->rank, &axis) || !expect_out(e, x->rank, x->dims))
		return false;
	int64_t outer, len, inner;
	around_axis(x, axis, &outer, &len, &inner);
	for (int64_t o = 0; o < outer; o++)
		for (int64_t in = 0; in < inner; in++) {
			const double *v = x->data + o * len * inner + in;
			double *y = e->out->data + o * len * inner + in;
			double max = -INFINITY, sum = 0;
			for (int64_t l = 0; l < len; l++)
				if (isnan(v[l * inner]) || v[l * inner] > max)
					max = v[l * inner];
			for (int64_t l = 0; l < len; l++)
				sum += exp(v[l * inner] - max);
			for (int64_t l = 0; l < len; l++)
				y[l * inner] = e->n->op == OP_SOFTMAX ? exp(v[l * inner] - max) / sum : v[l * inner] - max - log(sum);
		}
	return true;
}

/* CumSum and CumProd: each element from its own window, in double precision. */
static bool eval_scan(Eval *e)
{
	const SimTensor *x = &e->ins[0];
	const Attrs *a = &e->n->a;
	int axis;
	if (!a->has_axis || a->axis_is_tuple)
		return fail(e, "takes one axis");
	if (!norm_axis(e, a->axes[0], x->rank, &axis) || !expect_out(e, x->rank, x->dims))
		return false;
	int64_t outer, len, inner;
	around_axis(x, axis, &outer, &len, &inner);
	bool prod = e->n->op == OP_CUMPROD;
	/* a split axis's piece (lower.c): the slices' totals, k along the axis, this one's at offset / len */
	const SimTensor *tot = e->n->nin == 2 ? &e->ins[1] : NULL;
	int64_t k = tot ? tot->dims[axis] : 1, slice = len ? a->offset / len : 0;
	for (int64_t o = 0; o < outer; o++)
		for (int64_t in = 0; in < inner; in++) {
			const double *v = x->data + o * len * inner + in;
			double *y = e->out->data + o * len * inner + in, carry = prod ? 1 : 0;
			for (int64_t q = a->reverse ? slice + 1 : 0; tot && q < (a->reverse ? k : slice); q++) {
				double t = tot->data[(o * k + q) * inner + in];
				carry = prod ? carry * t : carry + t;
			}
			for (int64_t i = 0; i < len; i++) {
				int64_t lo = a->reverse ? i : 0, hi = a->reverse ? len : i + 1;
				double acc = carry;
				for (int64_t j = lo; j < hi; j++)
					if (!(a->exclusive && j == i))
						acc = prod ? acc * v[j * inner] : acc + v[j * inner];
				y[i * inner] = acc;
			}
		}
	return true;
}

static bool eval_reduce(Eval *e)
{
	const SimTensor *x = &e->ins[0];
	const Attrs *a = &e->n->a;
	bool reduced[MAX_DIMS] = {0};
	bool all = !a->has_axis || (a->axis_is_tuple && a->naxes == 0);   /* axis () reduces all, as shape.c */
	for (int i = 0; all && i < x->rank; i++)
		reduced[i] = true;
	for (int i = 0; !all && i < a->naxes; i++) {
		int ax;
		if (!norm_axis(e, a->axes[i], x->rank, &ax))
			return false;
		if (x->rank && reduced[ax])
			return fail(e, "axis %lld is named twice", (long long)a->axes[i]);
		reduced[ax] = x->rank > 0;
	}
	int r = 0;
	int64_t dims[MAX_DIMS], st[MAX_DIMS], count = 1, unit = 1;
	for (int i = 0; i < x->rank; i++)
		if (!reduced[i] || a->keep_dims)
			dims[r++] = reduced[i] ? 1 : x->dims[i];
	if (!expect_out(e, r, dims))
		return false;
	/* each input element lands at its index with the reduced dims dropped */
	for (int i = x->rank - 1; i >= 0; i--) {
		st[i] = reduced[i] ? 0 : unit;
		if (reduced[i])
			count *= x->dims[i];
		else
			unit *= x->dims[i];
	}
	/* ReduceAll and ReduceAny: the minimum and maximum of a Bool's 0s and 1s */
	bool max = e->n->op == OP_REDUCE_MAX || e->n->op == OP_REDUCE_ANY;
	bool min = e->n->op == OP_REDUCE_MIN || e->n->op == OP_REDUCE_ALL, prod = e->n->op == OP_REDUCE_PROD;
	double *y = e->out->data;
	for (int64_t j = 0; j < e->out->size; j++)
		y[j] = max ? -INFINITY : min ? INFINITY : prod ? 1 : 0;
	for (int64_t j = 0; j < x->size; j++) {
		double v = x->data[j], *t = &y[offset_of(j, x->rank, x->dims, st)];
		if (prod)
			*t *= v;
		else if (!max && !min)
			*t += v;
		else if (isnan(v) || (max ? v > *t : v < *t))   /* numpy's max and min propagate NaN */
			*t = v;
	}
	if (e->n->op == OP_REDUCE_MEAN)
		for (int64_t j = 0; j < e->out->size; j++)
			y[j] /= (double)count;
	return true;
}

/* Reshape, Flatten, ExpandDims and Squeeze: the row-major data does not move. */
static bool eval_reshape(Eval *e)
{
	const SimTensor *x = &e->ins[0];
	if (e->n->op == OP_FLATTEN) {
		if (x->rank < 1)
			return fail(e, "needs rank 1 or more");
		int64_t dims[2] = {x->dims[0], product(x->dims, 1, x->rank)};
		if (!expect_out(e, 2, dims))
			return false;
	}
	if (x->size != e->out->size)
		return fail(e, "%lld elements cannot become %lld", (long long)x->size, (long long)e->out->size);
	memcpy(e->out->data, x->data, sizeof(double) * (size_t)x->size);
	return true;
}

static bool eval_transpose(Eval *e)
{
	const SimTensor *x = &e->ins[0];
	const Attrs *a = &e->n->a;
	int64_t dims[MAX_DIMS], st[MAX_DIMS], xst[MAX_DIMS];
	bool seen[MAX_DIMS] = {0};
	if (a->nperm != x->rank)
		return fail(e, "perm has %d entries for rank %d", a->nperm, x->rank);
	strides_of(x->dims, x->rank, 1, xst);
	for (int i = 0; i < x->rank; i++) {
		int64_t p = a->perm[i];
		if (p < 0 || p >= x->rank || seen[p])
			return fail(e, "perm is not a permutation of 0..%d", x->rank - 1);
		seen[p] = true;
		dims[i] = x->dims[p];
		st[i] = xst[p];
	}
	if (!expect_out(e, x->rank, dims))
		return false;
	for (int64_t j = 0; j < e->out->size; j++)
		e->out->data[j] = x->data[offset_of(j, x->rank, dims, st)];
	return true;
}

/* Tile: the result's element i is x's at i modulo x's dims (lined up from
 * the right, 1s before them); the result's dims must be multiples of x's. */
static bool eval_tile(Eval *e)
{
	const SimTensor *x = &e->ins[0];
	int r = e->out->rank;
	if (x->rank > r)
		return fail(e, "x has more dims than the result");
	int64_t xd[MAX_DIMS];
	for (int i = 0; i < r; i++) {
		int j = i - (r - x->rank);
		xd[i] = j >= 0 ? x->dims[j] : 1;
		if (e->out->dims[i] % xd[i])
			return fail(e, "dim %d of the result is no multiple of x's", i);
	}
	for (int64_t p = 0; p < e->out->size; p++) {
		int64_t rest = p, q = 0, stride = 1;
		for (int i = r - 1; i >= 0; i--) {
			q += rest % e->out->dims[i] % xd[i] * stride;
			rest /= e->out->dims[i];
			stride *= xd[i];
		}
		e->out->data[p] = x->data[q];
	}
	return true;
}

/* OneHot: on_value where the class (from the rank's first, the offset) is
 * the index, off_value elsewhere; an index outside the classes a row of
 * off_value. The result's class dim is the rank's slice. */
static bool eval_one_hot(Eval *e)
{
	const SimTensor *idx = &e->ins[0];
	const Attrs *a = &e->n->a;
	int r = idx->rank + 1, axis;
	if (r > MAX_DIMS || e->ins[1].size != 1 || e->ins[2].size != 1)
		return fail(e, "indices of rank %d, on and off values of %lld and %lld elements", idx->rank,
		            (long long)e->ins[1].size, (long long)e->ins[2].size);
	if (!norm_axis(e, a->has_axis && a->naxes ? a->axes[0] : -1, r, &axis))
		return false;
	int64_t dims[MAX_DIMS], depth = e->out->rank == r ? e->out->dims[axis] : 0;
	for (int i = 0, j = 0; i < r; i++)
		dims[i] = i == axis ? depth : idx->dims[j++];
	if (!expect_out(e, r, dims))
		return false;
	int64_t inner = 1, off = (a->present & (ATTR_BIT(ATTR_OFFSET))) ? a->offset : 0;
	for (int i = axis + 1; i < r; i++)
		inner *= dims[i];
	for (int64_t p = 0; p < e->out->size; p++) {
		int64_t c = p / inner % depth, at = p / (inner * depth) * inner + p % inner;
		double v = idx->data[at];
		e->out->data[p] = v == (double)(c + off) ? e->ins[1].data[0] : e->ins[2].data[0];
	}
	return true;
}

/* Tril and Triu: x where column less row is at most (Tril) or at least
 * (Triu) the diagonal, 0 elsewhere; a rank's graph carries its piece's
 * diagonal (step_parallel_end), so the piece is computed as a whole. */
static bool eval_triangle(Eval *e)
{
	const SimTensor *x = &e->ins[0];
	if (x->rank < 2)
		return fail(e, "x of rank %d; Tril and Triu take two dims or more", x->rank);
	if (!expect_out(e, x->rank, x->dims))
		return false;
	int64_t rows = x->dims[x->rank - 2], cols = x->dims[x->rank - 1], d = e->n->a.diagonal;
	for (int64_t p = 0; p < x->size; p++) {
		int64_t j = p % cols, i = p / cols % rows;
		bool keep = e->n->op == OP_TRIU ? j - i >= d : j - i <= d;
		e->out->data[p] = keep ? x->data[p] : 0.0;
	}
	return true;
}

/* PadV3: the constant (the number as written; 0 when absent) everywhere,
 * x in the box at the befores. */
static bool eval_pad_v3(Eval *e)
{
	const SimTensor *x = &e->ins[0];
	int64_t lo[MAX_DIMS], hi[MAX_DIMS], dims[MAX_DIMS];
	pad_v3_bounds(&e->n->a, x->rank, lo, hi);
	for (int d = 0; d < x->rank; d++)
		dims[d] = x->dims[d] + lo[d] + hi[d];
	if (!expect_out(e, x->rank, dims))
		return false;
	const Lit *num = e->n->nin == 2 ? e->g->values[e->n->in[1]].literal : NULL;
	double value = num ? lit_number(num) : e->n->nin == 2 ? e->ins[1].data[0] : 0;
	for (int64_t p = 0; p < e->out->size; p++)
		e->out->data[p] = value;
	for (int64_t p = 0; p < x->size; p++) {   /* element p of x, its index split over x's dims, at lo further */
		int64_t at = 0, rest = p, stride = 1;
		for (int d = x->rank - 1; d >= 0; d--) {
			at += (rest % x->dims[d] + lo[d]) * stride;
			rest /= x->dims[d];
			stride *= dims[d];
		}
		e->out->data[at] = x->data[p];
	}
	return true;
}

/* ResizeNearestNeighbor and ResizeBilinearV2 on x (N, C, H, W) to size:
 * MindSpore's coordinates, computed in Float32 as its kernels compute them
 * (the index an output row reads hangs on their rounding), the values in
 * double. Per axis, out index o reads rows lo and hi, hi weighted t. */
static void resize_axis(int64_t o, int64_t in, int64_t out, const Attrs *a, bool bilinear, int64_t *lo, int64_t *hi,
                        double *t)
{
	float scale = a->align_corners && out > 1 ? (float)(in - 1) / (float)(out - 1) : (float)in / (float)out;
	float s = a->half_pixel_centers ? ((float)o + 0.5f) * scale : (float)o * scale;
	if (!bilinear) {
		float r = a->align_corners ? roundf(s) : floorf(s);
		*lo = *hi = r > (float)(in - 1) ? in - 1 : (int64_t)r;
		*t = 0;
		return;
	}
	if (a->half_pixel_centers)
		s -= 0.5f;
	float f = floorf(s), c = ceilf(s);
	*lo = f < 0 ? 0 : (int64_t)f;
	*hi = c > (float)(in - 1) ? in - 1 : (int64_t)c;
	*t = (double)(s - f);
}

static bool eval_resize(Eval *e)
{
	const SimTensor *x = &e->ins[0];
	const Attrs *a = &e->n->a;
	bool bilinear = e->n->op == OP_RESIZE_BILINEAR;
	int64_t dims[4] = {x->dims[0], x->dims[1], a->shape[0], a->shape[1]};
	if (x->rank != 4)
		return fail(e, "x has %d dims, not 4", x->rank);
	if (!expect_out(e, 4, dims))
		return false;
	int64_t ih = x->dims[2], iw = x->dims[3], oh = dims[2], ow = dims[3];
	for (int64_t p = 0; p < dims[0] * dims[1]; p++)
		for (int64_t i = 0; i < oh; i++)
			for (int64_t j = 0; j < ow; j++) {
				int64_t y0, y1, x0, x1;
				double ty, tx;
				resize_axis(i, ih, oh, a, bilinear, &y0, &y1, &ty);
				resize_axis(j, iw, ow, a, bilinear, &x0, &x1, &tx);
				const double *xp = x->data + p * ih * iw;
				double top = xp[y0 * iw + x0] * (1 - tx) + xp[y0 * iw + x1] * tx;
				double bottom = xp[y1 * iw + x0] * (1 - tx) + xp[y1 * iw + x1] * tx;
				e->out->data[(p * oh + i) * ow + j] = top * (1 - ty) + bottom * ty;
			}
	return true;
}

/* The picking order of ArgMaxWithValue, Argmax and TopK: the larger first
 * (least: the smaller), a NaN before every number, the lower index among
 * equals. */
static bool before(double a, int64_t ia, double b, int64_t ib, bool least)
{
	if (isnan(a) != isnan(b))
		return isnan(a);
	if (!isnan(a) && a != b)
		return least ? a < b : a > b;
	return ia < ib;
}

/* ArgMaxWithValue, ArgMinWithValue (index 0 the indices, 1 the values),
 * Argmax, Argmin: the first pick along the axis, x seen as (outer, n,
 * inner). */
static bool eval_arg_reduce(Eval *e)
{
	const SimTensor *x = &e->ins[0];
	const Attrs *a = &e->n->a;
	OpKind op = e->n->op;
	bool wv = op == OP_ARGMAX_WITH_VALUE || op == OP_ARGMIN_WITH_VALUE;
	bool least = op == OP_ARGMIN_WITH_VALUE || op == OP_ARGMIN, values = wv && a->output_index == 1;
	int axis;
	if (!norm_axis(e, a->has_axis && a->naxes ? a->axes[0] : wv ? 0 : -1, x->rank, &axis))
		return false;
	int64_t dims[MAX_DIMS], outer = 1, inner = 1, n = x->dims[axis];
	int r = 0;
	for (int i = 0; i < x->rank; i++) {
		if (i != axis || (wv && a->keep_dims))
			dims[r++] = i == axis ? 1 : x->dims[i];
		if (i != axis)
			*(i < axis ? &outer : &inner) *= x->dims[i];
	}
	if (!expect_out(e, r, dims))
		return false;
	for (int64_t o = 0; o < outer; o++)
		for (int64_t i = 0; i < inner; i++) {
			const double *p = x->data + o * n * inner + i;
			int64_t best = 0;
			for (int64_t j = 1; j < n; j++)
				if (before(p[j * inner], j, p[best * inner], best, least))
					best = j;
			e->out->data[o * inner + i] = values ? p[best * inner] : (double)best;
		}
	return true;
}

/* TopK: each last-dim row's k picks in order (index 0 the values, 1 the
 * indices). */
static bool eval_topk(Eval *e)
{
	const SimTensor *x = &e->ins[0];
	const Attrs *a = &e->n->a;
	int64_t dims[MAX_DIMS], n = x->rank ? x->dims[x->rank - 1] : 0, k = a->topk;
	if (x->rank < 1 || k < 1 || k > n)
		return fail(e, "k %lld of a last dim of %lld", (long long)k, (long long)n);
	memcpy(dims, x->dims, sizeof dims);
	dims[x->rank - 1] = k;
	if (!expect_out(e, x->rank, dims))
		return false;
	for (int64_t r = 0; r < x->size / n; r++) {
		const double *row = x->data + r * n;
		int64_t prev = -1;
		for (int64_t t = 0; t < k; t++) {
			int64_t best = -1;
			for (int64_t j = 0; j < n; j++)
				if ((prev < 0 || before(row[prev], prev, row[j], j, false)) &&
				    (best < 0 || before(row[j], j, row[best], best, false)))
					best = j;
			prev = best;
			e->out->data[r * k + t] = a->output_index == 1 ? (double)best : row[best];
		}
	}
	return true;
}

/* Index i takes entry i - offset of the table along the axis; an entry
 * outside the table is zeros. With offset 0 that is the serial Gather; a
 * shard split along the axis holds entries [offset, offset + V) and zeros
 * elsewhere, which a sum over the shards turns into the whole lookup. The
 * table is seen as (outer, rows, h): the dims before the axis, the axis,
 * the dims after. */
static bool eval_gather(Eval *e)
{
	const SimTensor *t = &e->ins[0], *idx = &e->ins[1];
	const Attrs *a = &e->n->a;
	int64_t axis = a->has_axis && a->naxes ? a->axes[0] : 0;
	if (a->axis_is_tuple || axis < -t->rank || axis >= t->rank)
		return fail(e, "axis is not one dim of the table");
	axis += axis < 0 ? t->rank : 0;
	if (t->rank < 1 || idx->rank + t->rank - 1 > MAX_DIMS)
		return fail(e, "a table of rank %d with indices of rank %d", t->rank, idx->rank);
	int r = 0;
	int64_t dims[MAX_DIMS], outer = 1, h = 1;
	for (int i = 0; i < t->rank; i++) {
		for (int j = 0; i == axis && j < idx->rank; j++)
			dims[r++] = idx->dims[j];
		if (i != axis)
			dims[r++] = t->dims[i];
		*(i < axis ? &outer : &h) *= i == axis ? 1 : t->dims[i];
	}
	if (!expect_out(e, r, dims))
		return false;
	int64_t rows = t->dims[axis];
	for (int64_t o = 0; o < outer; o++)
		for (int64_t p = 0; p < idx->size; p++) {
			double v = idx->data[p];
			if (!(v >= -0x1p62 && v <= 0x1p62))   /* NaN or far out: no entry, and no overflow below */
				continue;
			int64_t row = (int64_t)v - a->offset;
			if (row >= 0 && row < rows)
				memcpy(e->out->data + (o * idx->size + p) * h, t->data + (o * rows + row) * h,
				       sizeof(double) * (size_t)h);
		}
	return true;
}

/* GatherD: each element of the index names x's entry along dim, its other
 * coordinates its own; an index outside x's dim gives 0. */
static bool eval_gather_d(Eval *e)
{
	const SimTensor *x = &e->ins[0], *idx = &e->ins[1];
	int dim;
	if (idx->rank != x->rank || x->rank < 1 || !norm_axis(e, e->n->a.dim, x->rank, &dim))
		return fail(e, "x of rank %d, an index of rank %d", x->rank, idx->rank);
	if (!expect_out(e, idx->rank, idx->dims))
		return false;
	for (int64_t p = 0; p < idx->size; p++) {
		double v = idx->data[p] - (double)((e->n->a.present & ATTR_BIT(ATTR_OFFSET)) ? e->n->a.offset : 0);
		int64_t rest = p, q = 0, stride = 1;   /* offset: x is the slice of its dim from there */
		if (!(v >= 0 && v < (double)x->dims[dim]))
			continue;
		for (int d = x->rank - 1; d >= 0; d--) {
			int64_t c = rest % idx->dims[d];
			rest /= idx->dims[d];
			if (d != dim && c >= x->dims[d])
				return fail(e, "the index is larger than x on dim %d", d);
			q += (d == dim ? (int64_t)v : c) * stride;
			stride *= x->dims[d];
		}
		e->out->data[p] = x->data[q];
	}
	return true;
}

/* GatherNd's and the tensor scatters' indices (m, n): the slice of x (its
 * first n dims flattened, rows of *inner) that row i names, or -1 after a
 * failure when it lies outside x (the runtime stops there too). */
static int64_t nd_row(Eval *e, const SimTensor *x, const SimTensor *idx, int64_t i, int64_t *inner)
{
	int n = idx->rank ? (int)idx->dims[idx->rank - 1] : 0;
	if (n < 1 || n > x->rank) {
		fail(e, "indices with %d coordinates into x of rank %d", n, x->rank);
		return -1;
	}
	int64_t row = 0;
	*inner = 1;
	for (int d = n; d < x->rank; d++)
		*inner *= x->dims[d];
	for (int d = 0; d < n; d++) {
		double v = idx->data[i * n + d];
		if (!(v >= 0 && v < (double)x->dims[d])) {
			fail(e, "index coordinate %g outside x's dim %d (%lld)", v, d, (long long)x->dims[d]);
			return -1;
		}
		row = row * x->dims[d] + (int64_t)v;
	}
	return row;
}

/* GatherNd: row i of the result is x's slice the indices' row i names. */
static bool eval_gather_nd(Eval *e)
{
	const SimTensor *x = &e->ins[0], *idx = &e->ins[1];
	if (idx->rank < 1 || idx->dims[idx->rank - 1] < 1 || idx->dims[idx->rank - 1] > x->rank)
		return fail(e, "indices of rank %d into x of rank %d", idx->rank, x->rank);
	int n = (int)idx->dims[idx->rank - 1], r = 0;
	int64_t dims[MAX_DIMS], m = idx->size / n, inner = 1;
	for (int d = 0; d + 1 < idx->rank; d++)
		dims[r++] = idx->dims[d];
	for (int d = n; d < x->rank; d++)
		dims[r++] = x->dims[d];
	if (!expect_out(e, r, dims))
		return false;
	for (int64_t i = 0; i < m; i++) {
		int64_t row = nd_row(e, x, idx, i, &inner);
		if (row < 0)
			return false;
		memcpy(e->out->data + i * inner, x->data + row * inner, sizeof(double) * (size_t)inner);
	}
	return true;
}

/* The tensor scatters: x, then the slices the indices name set to (plus,
 * less, times, divided by, the larger of, the smaller of) updates' rows, in
 * order: the last of repeated indices wins an update, the others apply in
 * turn. */
static bool eval_tensor_scatter(Eval *e)
{
	const SimTensor *x = &e->ins[0], *idx = &e->ins[1], *upd = &e->ins[2];
	if (!expect_out(e, x->rank, x->dims))
		return false;
	memcpy(e->out->data, x->data, sizeof(double) * (size_t)x->size);
	int64_t n = idx->rank ? idx->dims[idx->rank - 1] : 0, m = n ? idx->size / n : 0, inner = 1;
	for (int64_t i = 0; i < m; i++) {
		int64_t row = nd_row(e, x, idx, i, &inner);
		if (row < 0)
			return false;
		if ((i + 1) * inner > upd->size)
			return fail(e, "updates of %lld elements for %lld slices of %lld", (long long)upd->size, (long long)m,
			            (long long)inner);
		for (int64_t j = 0; j < inner; j++) {
			double *at = &e->out->data[row * inner + j], u = upd->data[i * inner + j];
			switch (e->n->op) {
			case OP_TENSOR_SCATTER_UPDATE: *at = u; break;
			case OP_TENSOR_SCATTER_ADD: *at += u; break;
			case OP_TENSOR_SCATTER_SUB: *at -= u; break;
			case OP_TENSOR_SCATTER_MUL: *at *= u; break;
			case OP_TENSOR_SCATTER_DIV: *at /= u; break;
			case OP_TENSOR_SCATTER_MAX: *at = fmax(*at, u); break;
			default: *at = fmin(*at, u); break;   /* Min */
			}
		}
	}
	return true;
}

/* The state operators (scatter_state.c): their tensor scatter's (the Scatter
 * rows' indices with a last dim of 1) or Add's, Sub's result; x's update in
 * place is the program's, not the value's. */
static bool eval_state(Eval *e)
{
	Node n = *e->n;
	Eval f = *e;
	SimTensor ins[3];
	f.n = &n;
	if (e->n->op >= OP_INPLACE_ADD && e->n->op <= OP_INPLACE_UPDATE) {   /* the indices attribute's rows */
		const Attrs *a = &e->n->a;
		double *rows = malloc(sizeof(double) * (size_t)(a->nindices ? a->nindices : 1));
		for (int i = 0; i < a->nindices; i++)
			rows[i] = (double)a->indices[i];
		ins[0] = e->ins[0];
		ins[1] = (SimTensor){2, {a->nindices, 1}, a->nindices, rows};
		ins[2] = e->ins[1];
		n.op = e->n->op == OP_INPLACE_ADD ? OP_TENSOR_SCATTER_ADD : e->n->op == OP_INPLACE_SUB ? OP_TENSOR_SCATTER_SUB
		                                                                                      : OP_TENSOR_SCATTER_UPDATE;
		f.ins = ins;
		bool ok = eval_tensor_scatter(&f);
		free(rows);
		return ok;
	}
	n.op = state_scatter_kind(e->n->op);
	if (n.op == OP_COUNT) {
		n.op = e->n->op == OP_ASSIGN_ADD ? OP_ADD : OP_SUB;
		return eval_binary(&f);
	}
	memcpy(ins, e->ins, sizeof ins);
	if (e->n->op <= OP_SCATTER_MIN) {   /* indices naming x's dim 0: one coordinate each */
		if (ins[1].rank >= MAX_DIMS)
			return fail(e, "indices of %d dims", ins[1].rank);
		ins[1].dims[ins[1].rank++] = 1;
	}
	f.ins = ins;
	return eval_tensor_scatter(&f);
}

/* The unsorted segment reductions: row s of the result reduces the rows of
 * x (its first dims, the ids') whose id is s; other ids are dropped. An
 * empty segment is 0 (Sum), 1 (Prod), the type's lowest finite value
 * (Max) or its largest (Min), as MindSpore documents. */
static bool eval_segment(Eval *e)
{
	const SimTensor *x = &e->ins[0], *ids = &e->ins[1];
	OpKind op = e->n->op;
	if (ids->rank < 1 || ids->rank > x->rank || !same_dims(ids->rank, ids->dims, ids->rank, x->dims))
		return fail(e, "segment_ids of rank %d must be x's first dims", ids->rank);
	int r = 1 + x->rank - ids->rank;
	int64_t dims[MAX_DIMS], inner = product(x->dims, ids->rank, x->rank), segs = e->n->a.num_segments;
	dims[0] = segs;
	memcpy(dims + 1, x->dims + ids->rank, sizeof(int64_t) * (size_t)(r - 1));
	if (!expect_out(e, r, dims))
		return false;
	DType t = e->g->values[e->n->result].type.dtype;
	double big = t == DT_F16 ? 65504.0 : t == DT_BF16 ? 3.3895313892515355e38 : 3.4028234663852886e38;
	double init = op == OP_UNSORTED_SEGMENT_MAX ? -big : op == OP_UNSORTED_SEGMENT_MIN ? big
	              : op == OP_UNSORTED_SEGMENT_PROD ? 1 : 0;
	double *y = e->out->data;
	for (int64_t j = 0; j < e->out->size; j++)
		y[j] = init;
	for (int64_t i = 0; i < ids->size; i++) {
		double s = ids->data[i];
		if (!(s >= 0 && s < (double)segs))
			continue;
		for (int64_t c = 0; c < inner; c++) {
			double v = x->data[i * inner + c], *o = &y[(int64_t)s * inner + c];
			if (op == OP_UNSORTED_SEGMENT_SUM)
				*o += v;
			else if (op == OP_UNSORTED_SEGMENT_PROD)
				*o *= v;
			else if (op == OP_UNSORTED_SEGMENT_MAX ? v > *o : v < *o)
				*o = v;
		}
	}
	return true;
}

/* L2Normalize: x / sqrt(max(sum of squares along the axis, epsilon)); a
 * slice's piece (lowering's) takes the completed sums as its second input. */
static bool eval_l2_normalize(Eval *e)
{
	const SimTensor *x = &e->ins[0];
	const Attrs *a = &e->n->a;
	int axis;
	if (!norm_axis(e, a->has_axis && a->naxes ? a->axes[0] : 0, x->rank, &axis) || !expect_out(e, x->rank, x->dims))
		return false;
	int64_t inner = 1, n = x->dims[axis];
	for (int d = axis + 1; d < x->rank; d++)
		inner *= x->dims[d];
	if (e->n->nin == 2 && e->ins[1].size != x->size / n)
		return fail(e, "the sums of squares have %lld elements, not %lld", (long long)e->ins[1].size,
		            (long long)(x->size / n));
	for (int64_t r = 0; r < x->size / n; r++) {
		int64_t o = r / inner, i = r % inner;
		double s = 0;
		for (int64_t j = 0; j < n; j++)
			s += x->data[(o * n + j) * inner + i] * x->data[(o * n + j) * inner + i];
		s = e->n->nin == 2 ? e->ins[1].data[r] : s;
		for (int64_t j = 0; j < n; j++)
			e->out->data[(o * n + j) * inner + i] = x->data[(o * n + j) * inner + i] / sqrt(fmax(s, a->epsilon));
	}
	return true;
}

/* A normalizer (ops.h's NORM_OPS) over the dims from where it normalizes:
 * the mean and biased variance when centered, else the mean square; gamma
 * (and beta) cover the dims from where the parameters start and repeat over
 * the rest. */
static bool eval_norm(Eval *e)
{
	const SimTensor *x = &e->ins[0];
	const OpKind op = e->n->op;
	int nparams = op_info[op].min_inputs - 1, nstats = e->n->nin - 1 - nparams;
	bool centered = norm_centered(op);
	int64_t bn, bp;
	int norm, params;
	norm_begin(op, &e->n->a, x->rank, e->ins[1].rank, &bn, &bp);
	if (!norm_axis(e, bn, x->rank, &norm) || !norm_axis(e, bp, x->rank, &params))
		return false;
	if (x->rank == 0)
		norm = params = 0;   /* a scalar normalizes over nothing */
	for (int k = 1; k <= nparams; k++)
		if (!same_dims(e->ins[k].rank, e->ins[k].dims, x->rank - params, x->dims + params))
			return fail(e, "%s must have x's dims from %d", k == 1 ? "gamma" : "beta", params);
	if (!expect_out(e, x->rank, x->dims))
		return false;
	int64_t len = product(x->dims, norm, x->rank), plen = product(x->dims, params, x->rank);
	const double *gamma = e->ins[1].data, *beta = nparams == 2 ? e->ins[2].data : NULL;
	for (int k = 1 + nparams; k < e->n->nin; k++)
		if (e->ins[k].size != x->size / len || nstats != 1 + centered)
			return fail(e, "a normalized slice's piece needs each row's %s",
			            centered ? "mean and variance" : "mean square");
	for (int64_t base = 0; base < x->size; base += len) {
		const double *v = x->data + base;
		double mean = 0, var = 0;
		for (int64_t i = 0; i < len && centered; i++)
			mean += v[i];
		mean /= (double)len;
		for (int64_t i = 0; i < len; i++)
			var += (v[i] - mean) * (v[i] - mean);
		var /= (double)len;
		if (nstats) {   /* a slice of the normalized dims: the whole rows' statistics given */
			mean = centered ? e->ins[1 + nparams].data[base / len] : 0;
			var = e->ins[e->n->nin - 1].data[base / len];
		}
		double scale = 1 / sqrt(var + e->n->a.epsilon);
		for (int64_t i = 0; i < len; i++) {
			int64_t p = (base + i) % plen;
			e->out->data[base + i] = (v[i] - mean) * scale * gamma[p] + (beta ? beta[p] : 0);
		}
	}
	return true;
}

/* BatchNorm's y on x (N, C) or (N, C, H, W), per channel: in training the
 * batch's mean and biased variance over every dim but C (a slice's piece:
 * inputs 5 and 6, completed by lowering), in inference the given mean and
 * variance. The moving statistics' update, a side effect on parameters,
 * the e2e models compare (param_*.npy against tools/ref_eval.py). */
static bool eval_batch_norm(Eval *e)
{
	const SimTensor *x = &e->ins[0];
	if ((x->rank != 2 && x->rank != 4) || !expect_out(e, x->rank, x->dims))
		return fail(e, "x must be (N, C) or (N, C, H, W)");
	int64_t n = x->dims[0], c = x->dims[1], hw = x->size / (n * c);
	for (int k = 1; k < e->n->nin; k++)
		if (e->ins[k].size != c)
			return fail(e, "operand %d has %lld elements, not C = %lld", k, (long long)e->ins[k].size, (long long)c);
	for (int64_t ch = 0; ch < c; ch++) {
		double m = 0, v = 0;
		for (int64_t i = 0; i < n * hw; i++)
			m += x->data[((i / hw) * c + ch) * hw + i % hw];
		m /= (double)(n * hw);
		for (int64_t i = 0; i < n * hw; i++) {
			double d = x->data[((i / hw) * c + ch) * hw + i % hw] - m;
			v += d * d;
		}
		v /= (double)(n * hw);
		if (e->n->nin == 7)   /* a slice's piece: the whole batch's statistics given */
			m = e->ins[5].data[ch], v = e->ins[6].data[ch];
		else if (!e->n->a.is_training)   /* inference: the moving ones */
			m = e->ins[3].data[ch], v = e->ins[4].data[ch];
		double r = 1 / sqrt(v + e->n->a.epsilon);
		for (int64_t i = 0; i < n * hw; i++) {
			int64_t at = ((i / hw) * c + ch) * hw + i % hw;
			e->out->data[at] = (x->data[at] - m) * r * e->ins[1].data[ch] + e->ins[2].data[ch];
		}
	}
	return true;
}

static bool eval_add_n(Eval *e)
{
	const SimTensor *x = &e->ins[0];
	for (int k = 1; k < e->n->nin; k++) {
		bool ok = e->ins[k].rank == x->rank;
		for (int i = 0; ok && i < x->rank; i++)
			ok = e->ins[k].dims[i] == x->dims[i];
		if (!ok)
			return fail(e, "operand %d's shape is not operand 0's", k);
	}
	if (!expect_out(e, x->rank, x->dims))
		return false;
	int64_t n = product(x->dims, 0, x->rank);
	for (int64_t i = 0; i < n; i++) {
		double s = 0;
		for (int k = 0; k < e->n->nin; k++)
			s += e->ins[k].data[i];
		e->out->data[i] = s;
	}
	return true;
}

static bool eval_concat(Eval *e)
{
	const SimTensor *x = &e->ins[0];
	const Attrs *a = &e->n->a;
	int axis;
	if (a->has_axis && a->naxes != 1)
		return fail(e, "takes one axis");
	if (x->rank < 1)
		return fail(e, "cannot join scalars");
	if (!norm_axis(e, a->has_axis ? a->axes[0] : 0, x->rank, &axis))
		return false;
	int64_t dims[MAX_DIMS];
	memcpy(dims, x->dims, sizeof dims);
	for (int k = 1; k < e->n->nin; k++) {
		const SimTensor *y = &e->ins[k];
		bool ok = y->rank == x->rank;
		for (int i = 0; ok && i < x->rank; i++)
			ok = i == axis || y->dims[i] == x->dims[i];
		if (!ok)
			return fail(e, "operand %d does not match operand 0 outside axis %d", k, axis);
		dims[axis] += y->dims[axis];
	}
	if (!expect_out(e, x->rank, dims))
		return false;
	int64_t outer = product(dims, 0, axis), inner = product(dims, axis + 1, x->rank);
	double *y = e->out->data;
	for (int64_t o = 0; o < outer; o++)
		for (int k = 0; k < e->n->nin; k++) {
			int64_t block = e->ins[k].dims[axis] * inner;
			memcpy(y, e->ins[k].data + o * block, sizeof(double) * (size_t)block);
			y += block;
		}
	return true;
}

/* Stack: the operands, of one shape, as pieces of 1 along a new dim at
 * axis (of the result's rank). */
static bool eval_stack(Eval *e)
{
	const SimTensor *x = &e->ins[0];
	const Attrs *a = &e->n->a;
	int axis, nin = e->n->nin;
	for (int k = 1; k < nin; k++)
		if (!same_dims(e->ins[k].rank, e->ins[k].dims, x->rank, x->dims))
			return fail(e, "operand %d's shape is not operand 0's", k);
	if (x->rank + 1 > MAX_DIMS)
		return fail(e, "the result would have more than %d dims", MAX_DIMS);
	if (!norm_axis(e, a->has_axis ? a->axes[0] : 0, x->rank + 1, &axis))
		return false;
	int64_t dims[MAX_DIMS];
	for (int i = 0, j = 0; i <= x->rank; i++)
		dims[i] = i == axis ? nin : x->dims[j++];
	if (!expect_out(e, x->rank + 1, dims))
		return false;
	int64_t outer = product(x->dims, 0, axis), inner = product(x->dims, axis, x->rank);
	double *y = e->out->data;
	for (int64_t o = 0; o < outer; o++)
		for (int k = 0; k < nin; k++, y += inner)
			memcpy(y, e->ins[k].data + o * inner, sizeof(double) * (size_t)inner);
	return true;
}

/* Cast moves values unchanged; round_result then truncates into an integer
 * type or makes a Bool 0 or 1, and a floating type keeps the double. */
static bool eval_cast(Eval *e)
{
	const SimTensor *x = &e->ins[0];
	if (!expect_out(e, x->rank, x->dims))
		return false;
	memcpy(e->out->data, x->data, sizeof(double) * (size_t)x->size);
	return true;
}

/* numpy's slice(b, e, *s).indices(d) for one dim: where it starts, and the
 * count. A stride beyond the dim takes one element, as a stride of the dim
 * itself does; *s is clamped there, which keeps -s from overflowing. */
static int64_t slice_dim(int64_t d, int64_t b, int64_t end, int64_t *step, int64_t *start)
{
	int64_t s = *step = *step > d ? d : *step < -d ? -d : *step;
	b = b < 0 ? b + d : b;
	end = end < 0 ? end + d : end;
	if (s > 0) {
		b = b < 0 ? 0 : b > d ? d : b;
		end = end < 0 ? 0 : end > d ? d : end;
		*start = b;
		return end > b ? (end - b - 1) / s + 1 : 0;
	}
	b = b < -1 ? -1 : b > d - 1 ? d - 1 : b;
	end = end < -1 ? -1 : end > d - 1 ? d - 1 : end;
	*start = b;
	return b > end ? (b - end - 1) / -s + 1 : 0;
}

static bool eval_strided_slice(Eval *e)
{
	const SimTensor *x = &e->ins[0];
	const Attrs *a = &e->n->a;
	int n = a->nbegin;
	if (a->nend != n || a->nstrides != n || a->ellipsis_mask)
		return fail(e, "begin, end and strides need as many entries each; no ellipsis_mask");
	/* The masks (bit i for entry i, none past the entries) give each dim of x
	 * its slice and the result its dims: a new axis 1, a shrunk dim none. */
	int64_t dims[MAX_DIMS], st[MAX_DIMS], xst[MAX_DIMS], base = 0, odims[2 * MAX_DIMS];
	int64_t begin[MAX_DIMS], end[MAX_DIMS], step[MAX_DIMS];
	int d = 0, orank = 0;
	for (int i = 0; i < n; i++) {
		if (a->new_axis_mask >> i & 1) {
			odims[orank++] = 1;
			continue;
		}
		if (d == x->rank)
			return fail(e, "more entries than x has dims");
		begin[d] = a->begin_mask >> i & 1 ? 0 : a->begin[i];
		end[d] = a->end_mask >> i & 1 ? x->dims[d] : a->end[i];
		step[d] = a->strides[i];
		if (a->shrink_axis_mask >> i & 1) {
			begin[d] += begin[d] < 0 ? x->dims[d] : 0;
			if (begin[d] < 0 || begin[d] >= x->dims[d])
				return fail(e, "shrunk index outside dim %d", d);
			end[d] = begin[d] + 1, step[d] = 1;
			d++;
			continue;
		}
		odims[orank++] = -1 - d;   /* filled below */
		d++;
	}
	for (; d < x->rank; d++) {
		begin[d] = 0, end[d] = x->dims[d], step[d] = 1;
		odims[orank++] = -1 - d;
	}
	strides_of(x->dims, x->rank, 1, xst);
	for (int i = 0; i < x->rank; i++) {
		int64_t start, s = step[i];
		if (s == 0)
			return fail(e, "stride 0 in dim %d", i);
		dims[i] = slice_dim(x->dims[i], begin[i], end[i], &s, &start);
		base += start * xst[i];
		st[i] = s * xst[i];
	}
	for (int j = 0; j < orank; j++)
		odims[j] = odims[j] < 0 ? dims[-1 - odims[j]] : 1;
	if (orank > MAX_DIMS)
		return fail(e, "more than %d dims", MAX_DIMS);
	if (a->pad) {   /* past x's end reads 0: the element's source index along each dim, checked */
		for (int i = 0; i < x->rank; i++)
			dims[i] = (a->end[i] - a->begin[i] - 1) / a->strides[i] + 1;
		if (!expect_out(e, x->rank, dims))
			return false;
		for (int64_t j = 0; j < e->out->size; j++) {
			int64_t rest = j, off = 0;
			bool inside = true;
			for (int i = x->rank - 1; i >= 0; i--) {
				int64_t src = a->begin[i] + rest % dims[i] * a->strides[i];
				rest /= dims[i];
				inside &= src < x->dims[i];
				off += src * xst[i];
			}
			e->out->data[j] = inside ? x->data[off] : 0;
		}
		return true;
	}
	if (!expect_out(e, orank, odims))
		return false;
	for (int64_t j = 0; j < e->out->size; j++)
		e->out->data[j] = x->data[base + offset_of(j, x->rank, dims, st)];
	return true;
}

/* The mean over the batch of -log_softmax(logits)[n, label[n]]. */
static bool eval_sparse_ce(Eval *e)
{
	const SimTensor *x = &e->ins[0], *l = &e->ins[1];
	if (x->rank != 2 || l->rank != 1 || l->dims[0] != x->dims[0])
		return fail(e, "needs logits (N, C) and labels (N,)");
	if (e->n->nin == 4) {   /* a class slice's piece: each row's loss where it holds the label, else 0 */
		const SimTensor *mx = &e->ins[2], *sum = &e->ins[3];
		int64_t c = x->dims[1], off = (e->n->a.present & (ATTR_BIT(ATTR_OFFSET))) ? e->n->a.offset : 0;
		if (mx->size != x->dims[0] || sum->size != x->dims[0])
			return fail(e, "a class slice's piece needs each row's maximum and sum, (N, 1)");
		if (!expect_out(e, 1, x->dims))
			return false;
		for (int64_t i = 0; i < x->dims[0]; i++) {
			double k = l->data[i] - (double)off;
			e->out->data[i] = k >= 0 && k < (double)c ? log(sum->data[i]) + mx->data[i] - x->data[i * c + (int64_t)k] : 0;
		}
		return true;
	}
	if (!expect_out(e, 0, x->dims))
		return false;
	int64_t n = x->dims[0], c = x->dims[1];
	double total = 0;
	for (int64_t i = 0; i < n; i++) {
		const double *v = x->data + i * c;
		double label = l->data[i], max = -INFINITY, sum = 0;
		if (!(label >= 0 && label < (double)c && label == trunc(label)))
			return fail(e, "label %g of row %lld is not a class in [0, %lld)", label, (long long)i, (long long)c);
		for (int64_t k = 0; k < c; k++)
			if (isnan(v[k]) || v[k] > max)
				max = v[k];
		for (int64_t k = 0; k < c; k++)
			sum += exp(v[k] - max);
		total += max + log(sum) - v[(int64_t)label];
	}
	e->out->data[0] = total / (double)n;
	return true;
}

/* Each row's -sum_c labels[n, c] log_softmax(logits)[n, c]; a class
 * slice's piece (lower.c) the same over its classes, the rows' maximum and
 * sum of exponentials given. */
static bool eval_dense_ce(Eval *e)
{
	const SimTensor *x = &e->ins[0], *t = &e->ins[1];
	if (x->rank != 2 || !same_dims(x->rank, x->dims, t->rank, t->dims))
		return fail(e, "needs logits (N, C) and labels (N, C)");
	if (e->n->nin == 4 && (e->ins[2].size != x->dims[0] || e->ins[3].size != x->dims[0]))
		return fail(e, "a class slice's piece needs each row's maximum and sum, (N, 1)");
	if (!expect_out(e, 1, x->dims))
		return false;
	int64_t c = x->dims[1];
	for (int64_t i = 0; i < x->dims[0]; i++) {
		const double *v = x->data + i * c;
		double max = -INFINITY, sum = 0, loss = 0;
		if (e->n->nin == 4)
			max = e->ins[2].data[i], sum = e->ins[3].data[i];
		else {
			for (int64_t k = 0; k < c; k++)
				if (isnan(v[k]) || v[k] > max)
					max = v[k];
			for (int64_t k = 0; k < c; k++)
				sum += exp(v[k] - max);
		}
		for (int64_t k = 0; k < c; k++)
			loss += t->data[i * c + k] * (max + log(sum) - v[k]);
		e->out->data[i] = loss;
	}
	return true;
}

static bool eval_loss(Eval *e)
{
	const SimTensor *a = &e->ins[0], *b = &e->ins[1];
	if (!same_dims(a->rank, a->dims, b->rank, b->dims))
		return fail(e, "prediction and target differ in shape");
	if (!expect_out(e, 0, a->dims))
		return false;
	double sum = 0;
	for (int64_t j = 0; j < a->size; j++) {
		double d = a->data[j] - b->data[j];
		sum += e->n->op == OP_MSE_LOSS ? d * d : fabs(d);
	}
	e->out->data[0] = sum / (double)a->size;
	return true;
}

/* KLDivLoss: y (log y - x), 0 where y is 0; "none" the elements, else
 * their sum over the count ("mean"), dim 0 ("batchmean") or 1 ("sum"). */
static bool eval_kldiv_loss(Eval *e)
{
	const SimTensor *x = &e->ins[0], *y = &e->ins[1];
	int64_t mode = e->n->a.mode;
	if (!same_dims(x->rank, x->dims, y->rank, y->dims))
		return fail(e, "logits and labels differ in shape");
	if (!expect_out(e, mode == KL_NONE ? x->rank : 0, x->dims))
		return false;
	double sum = 0;
	for (int64_t j = 0; j < x->size; j++) {
		double v = y->data[j] * (log(y->data[j]) - x->data[j]);
		v = isnan(v) ? 0 : v;
		if (mode == KL_NONE)
			e->out->data[j] = v;
		sum += v;
	}
	if (mode != KL_NONE)
		e->out->data[0] = sum / (mode == KL_MEAN ? (double)x->size : mode == KL_BATCHMEAN ? (double)x->dims[0] : 1);
	return true;
}

/* L2Loss: sum x^2 / 2, a scalar. */
static bool eval_l2_loss(Eval *e)
{
	const SimTensor *x = &e->ins[0];
	if (!expect_out(e, 0, x->dims))
		return false;
	double sum = 0;
	for (int64_t j = 0; j < x->size; j++)
		sum += x->data[j] * x->data[j];
	e->out->data[0] = sum / 2;
	return true;
}

/* SquareSumAll: the sum of the squares of operand `index`, x and y of one shape. */
static bool eval_square_sum_all(Eval *e)
{
	int64_t k = e->n->a.output_index;
	if (k < 0 || k > 1 || !same_dims(e->ins[0].rank, e->ins[0].dims, e->ins[1].rank, e->ins[1].dims))
		return fail(e, "needs index 0 or 1 and x and y of one shape");
	const SimTensor *x = &e->ins[k];
	if (!expect_out(e, 0, x->dims))
		return false;
	double sum = 0;
	for (int64_t j = 0; j < x->size; j++)
		sum += x->data[j] * x->data[j];
	e->out->data[0] = sum;
	return true;
}

/* Invert, PopulationCount, LeftShift, RightShift on integers of the
 * operand's width (docs/operators.md): each element as a 64-bit integer. */
static int64_t int_math(OpKind op, int64_t a, int64_t b, int bits)
{
	uint64_t mask = bits == 64 ? ~(uint64_t)0 : ((uint64_t)1 << bits) - 1;
	if (op == OP_INVERT)
		return ~a;
	if (op == OP_POPULATION_COUNT) {
		int c = 0;
		for (int k = 0; k < bits; k++)
			c += (int)(((uint64_t)a >> k) & 1);
		return c;
	}
	if (b > bits || b < -bits)
		b %= bits;
	if (b < 0 || b >= bits)
		return op == OP_LEFT_SHIFT ? 0 : a < 0 ? -1 : 0;
	if (op == OP_RIGHT_SHIFT)
		return a >> b;
	uint64_t u = ((uint64_t)a << b) & mask;
	return bits == 64 ? (int64_t)u : (int64_t)(int32_t)(uint32_t)u;
}

static bool eval_int_math(Eval *e)
{
	const SimTensor *a = &e->ins[0], *b = e->n->nin == 2 ? &e->ins[1] : &e->ins[0];
	int r, bits = e->g->values[e->n->in[0]].type.dtype == DT_I64 ? 64 : 32;
	int64_t dims[MAX_DIMS], sa[MAX_DIMS], sb[MAX_DIMS];
	if (!broadcast_shape(e, a->dims, a->rank, b->dims, b->rank, &r, dims) || !expect_out(e, r, dims))
		return false;
	broadcast_strides(a->dims, a->rank, r, 1, sa);
	broadcast_strides(b->dims, b->rank, r, 1, sb);
	for (int64_t j = 0; j < e->out->size; j++)
		e->out->data[j] = (double)int_math(e->n->op, (int64_t)a->data[offset_of(j, r, dims, sa)],
		                                   (int64_t)b->data[offset_of(j, r, dims, sb)], bits);
	return true;
}

/* ReverseV2: x read back to front along the reversed dims. */
static bool eval_reverse_v2(Eval *e)
{
	const SimTensor *x = &e->ins[0];
	if (!expect_out(e, x->rank, x->dims))
		return false;
	for (int64_t j = 0; j < x->size; j++) {
		int64_t r = j, src = 0, stride = 1;
		for (int d = x->rank - 1; d >= 0; d--) {
			int64_t k = r % x->dims[d];
			r /= x->dims[d];
			src += (reverse_v2_reverses(&e->n->a, x->rank, d) ? x->dims[d] - 1 - k : k) * stride;
			stride *= x->dims[d];
		}
		e->out->data[j] = x->data[src];
	}
	return true;
}

/* TraceV2: each result element the sum of its diagonal x[.., i, .., i + offset, ..]. */
static bool eval_trace_v2(Eval *e)
{
	const SimTensor *x = &e->ins[0];
	int a1, a2, r = 0;
	trace_v2_axes(&e->n->a, x->rank, &a1, &a2);
	int64_t dims[MAX_DIMS], str[MAX_DIMS], s = 1, off = e->n->a.offset;
	for (int d = x->rank - 1; d >= 0; d--) {
		str[d] = s;
		s *= x->dims[d];
	}
	for (int d = 0; d < x->rank; d++)
		if (d != a1 && d != a2)
			dims[r++] = x->dims[d];
	if (!expect_out(e, r, dims))
		return false;
	for (int64_t j = 0; j < e->out->size; j++) {
		int64_t rest = j, base = 0;
		for (int d = x->rank - 1; d >= 0; d--)
			if (d != a1 && d != a2) {
				base += rest % x->dims[d] * str[d];
				rest /= x->dims[d];
			}
		double sum = 0;
		for (int64_t i = off < 0 ? -off : 0; i < x->dims[a1] && i + off < x->dims[a2]; i++)
			sum += x->data[base + i * str[a1] + (i + off) * str[a2]];
		e->out->data[j] = sum;
	}
	return true;
}

static bool eval_op(Eval *e)
{
	switch (e->n->op) {
	case OP_MATMUL: case OP_BATCH_MATMUL:
		return eval_matmul(e);
	OP_CASES(BINARY_OPS) OP_CASES(COMPARE_OPS) case OP_LOGICAL_AND: case OP_LOGICAL_OR:
		return eval_binary(e);
	case OP_BIAS_ADD:
		return eval_bias_add(e);
	case OP_PRELU:
		return eval_prelu(e);
	case OP_CONV2D: case OP_MAX_POOL: case OP_AVG_POOL:
		return eval_window(e);
	case OP_CONV2D_TRANSPOSE:
		return eval_conv_transpose(e);
	OP_CASES(UNARY_OPS) case OP_LOGICAL_NOT: case OP_IS_FINITE:
		return eval_unary(e);
	case OP_SELECT:
		return eval_select(e);
	case OP_ROTARY:
		return eval_rotary(e);
	case OP_FLASH_ATTENTION:
		return eval_flash_attention(e);
	case OP_DROPOUT: case OP_DROPOUT_DO_MASK:   /* DropoutDoMask: x, its DropoutGenMask keeping every element */
	case OP_PAD_FILL:   /* the identity on a whole tensor, which has no padding */
		return eval_dropout(e);
	case OP_SOFTMAX: case OP_LOG_SOFTMAX:
		return eval_softmax(e);
	case OP_REDUCE_SUM: case OP_REDUCE_MEAN: case OP_REDUCE_MAX: case OP_REDUCE_MIN: case OP_REDUCE_PROD:
	case OP_REDUCE_ALL: case OP_REDUCE_ANY:
		return eval_reduce(e);
	case OP_CUMSUM: case OP_CUMPROD:
		return eval_scan(e);
	case OP_RESHAPE: case OP_FLATTEN: case OP_EXPAND_DIMS: case OP_SQUEEZE:
	case OP_IDENTITY: case OP_DEPEND:   /* Depend: its value, what it waits for computed before */
		return eval_reshape(e);
	case OP_MASKED_FILL:
		return eval_masked_fill(e);
	case OP_SQUARE_SUM_ALL:
		return eval_square_sum_all(e);
	case OP_BROADCAST_TO:
		return eval_broadcast_to(e);
	case OP_TRANSPOSE:
		return eval_transpose(e);
	case OP_GATHER: case OP_EMBEDDING_LOOKUP:   /* EmbeddingLookup: Gather on axis 0 with its offset */
		return eval_gather(e);
	case OP_GATHER_D:
		return eval_gather_d(e);
	case OP_GATHER_ND:
		return eval_gather_nd(e);
	OP_CASES(TENSOR_SCATTER_OPS)
		return eval_tensor_scatter(e);
	OP_CASES(STATE_OPS) OP_CASES(INPLACE_OPS)
		return eval_state(e);
	case OP_L2_NORMALIZE:
		return eval_l2_normalize(e);
	case OP_BATCH_NORM:
		return eval_batch_norm(e);
	OP_CASES(SEGMENT_OPS)
		return eval_segment(e);
	case OP_TILE:
		return eval_tile(e);
	case OP_ONE_HOT:
		return eval_one_hot(e);
	case OP_ARGMAX_WITH_VALUE: case OP_ARGMIN_WITH_VALUE: case OP_ARGMAX: case OP_ARGMIN:
		return eval_arg_reduce(e);
	case OP_TOPK:
		return eval_topk(e);
	case OP_TRIL: case OP_TRIU:
		return eval_triangle(e);
	OP_CASES(NORM_OPS)
		return eval_norm(e);
	case OP_CONCAT:
		return eval_concat(e);
	case OP_ADD_N:
		return eval_add_n(e);
	case OP_STACK:
		return eval_stack(e);
	case OP_LERP:
		return eval_lerp(e);
	case OP_CAST:
		return eval_cast(e);
	case OP_STRIDED_SLICE: case OP_SPLIT: case OP_SPLIT_V: case OP_SLICE:   /* Split, Slice: their slice (shape_slice.c) */
		return eval_strided_slice(e);
	case OP_PAD_V3:
		return eval_pad_v3(e);
	case OP_RESIZE_NEAREST: case OP_RESIZE_BILINEAR:
		return eval_resize(e);
	OP_CASES(INT_MATH_OPS)
		return eval_int_math(e);
	case OP_REVERSE_V2:
		return eval_reverse_v2(e);
	case OP_TRACE_V2:
		return eval_trace_v2(e);
	case OP_SPARSE_SOFTMAX_CE:
		return eval_sparse_ce(e);
	case OP_SOFTMAX_CE:
		return eval_dense_ce(e);
	case OP_ARANGE: case OP_CAUSAL_MASK: case OP_ROPE_COS: case OP_ROPE_SIN: case OP_FILL_V2: case OP_EYE:
	case OP_LIN_SPACE:
	case OP_DROPOUT_GEN_MASK: case OP_UNIFORM_REAL:
		return eval_constant(e);
	case OP_KL_DIV_LOSS:
		return eval_kldiv_loss(e);
	case OP_MSE_LOSS: case OP_L1_LOSS:
		return eval_loss(e);
	case OP_L2_LOSS:
		return eval_l2_loss(e);
	case OP_ALL_REDUCE: case OP_ALL_GATHER: case OP_REDUCE_SCATTER: case OP_ALL_TO_ALL: case OP_CALL:
	OP_CASES(FUSED_OPS)   /* fuse.c's, never in a graph */
	OP_CASES(PIPELINE_OPS)   /* lowering's, never in a graph */
	case OP_COUNT:
		break;
	}
	return fail(e, "not evaluated here (collectives and Call are the simulator's)");
}

/* ---- entry point -------------------------------------------------------------- */

/* The operands must have their Values' shapes: a mismatch is the caller's
 * bookkeeping going wrong, better caught here than read as a wrong answer. */
static bool check_operands(Eval *e)
{
	const Node *n = e->n;
	for (int k = 0; k < n->nin; k++) {
		if (n->in[k] < 0 || n->in[k] >= e->g->nvalues)
			return fail(e, "operand %d is not resolved", k);
		const Value *v = &e->g->values[n->in[k]];
		const SimTensor *x = &e->ins[k];
		if (!same_dims(x->rank, x->dims, v->type.rank, v->type.dims)) {
			char a[200], b[200];
			return fail(e, "operand %d holds %s but %%%s is %s", k, dims_text(x->rank, x->dims, a, 200), v->name,
			            v->type.rank < 0 ? "of unknown type" : dims_text(v->type.rank, v->type.dims, b, 200));
		}
	}
	return true;
}

bool sim_eval_node(const Graph *g, const Node *n, const SimTensor *ins, SimTensor *out, char *err, size_t errlen)
{
	Eval e = {.g = g, .n = n, .ins = ins, .out = out, .err = err, .errlen = errlen};
	const Type *t = &g->values[n->result].type;
	*out = (SimTensor){0};
	if (op_is_comm(n->op) || n->op == OP_CALL || n->op == OP_COUNT)
		return fail(&e, "not evaluated here (collectives and Call are the simulator's)");
	if (t->rank < 0)
		return fail(&e, "the result type is unknown (run infer_shapes first)");
	if (!check_operands(&e))
		return false;
	*out = sim_tensor_new(t->rank, t->dims);
	if (!eval_op(&e)) {
		sim_tensor_free(out);
		return false;
	}
	for (int64_t j = 0; j < out->size; j++)
		out->data[j] = round_result(out->data[j], t->dtype);
	return true;
}
