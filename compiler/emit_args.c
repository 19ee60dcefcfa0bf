/* emit_args.c: how a runtime call's arguments are written (docs/output.md).
 *
 * Requires a Program (plan.c). A value passes as its C name, dims and rank;
 * dims and lists as compound literals; a number that differs between ranks
 * (a slice's bounds, a split table's offset) as T[k] from the rank's table,
 * or as the number itself where every rank has the same; a MatMul's dims
 * and its half or strided form (a folded Transpose's operand, fuse.c) as
 * the runtime's matmul calls take them. Calls only plan.c. */
#include "emit_internal.h"
#include "slice.h"
#include "segment.h"
#include "scatter_nd.h"
#include "scatter_state.h"
#include "pad_v3.h"
#include "misc_ops.h"

/* ---- text helpers ---- */

void dims_lit(StrBuf *b, const int64_t *dims, int rank)
{
	sb_puts(b, "(const int64_t[]){");
	for (int d = 0; d < rank; d++)
		sb_printf(b, d ? ", %lld" : "%lld", (long long)dims[d]);
	sb_puts(b, rank ? "}" : "1}");
}

void ints_lit(StrBuf *b, const int64_t *v, int n)
{
	sb_puts(b, "(const int[]){");
	for (int d = 0; d < n; d++)
		sb_printf(b, d ? ", %lld" : "%lld", (long long)v[d]);
	sb_puts(b, n ? "}" : "0}");
}

const char *sc_dtype_name(DType t)
{
	switch (t) {
	case DT_I32: return "SC_I32";
	case DT_I64: return "SC_I64";
	case DT_BOOL: return "SC_BOOL";
	case DT_F16: return "SC_F16";
	case DT_BF16: return "SC_BF16";
	default: return "SC_F32";
	}
}

const char *c_type(DType t)
{
	switch (t) {
	case DT_I32: return "int32_t";
	case DT_I64: return "int64_t";
	case DT_BOOL: return "uint8_t";
	case DT_F16: case DT_BF16: return "uint16_t";   /* the bits; the runtime converts */
	default: return "float";
	}
}

/* `<name>, <dims>, <rank>` of a value: how most kernels take a tensor. */
void tensor_arg(StrBuf *b, const Program *p, int v)
{
	const LValue *x = &p->l->values[v];
	sb_printf(b, "%s, ", p->cname[v]);
	dims_lit(b, x->type.dims, x->type.rank);
	sb_printf(b, ", %d", x->type.rank);
}

int64_t arg_bytes(const Program *p, int v)
{
	const LValue *x = &p->l->values[v];
	for (int j = 0; p->widened && j < p->widened->n; j++)
		if (p->widened->value[j] == v)
			return numel(x) * (int64_t)sizeof(float);
	return value_bytes(x);
}

int tile_view(const Type *x, const Type *y, int64_t *xd, int64_t *yd)
{
	int n = 0;
	bool copy = false;   /* the last entry's kind: x's dim kept (else repeats of a dim of 1) */
	for (int i = 0; i < y->rank; i++) {
		int j = i - (y->rank - x->rank);
		int64_t d = j >= 0 ? x->dims[j] : 1, m = y->dims[i] / d;
		if (m > 1) {   /* the repeats: a dim of 1 in x */
			if (n && !copy)
				yd[n - 1] *= m;
			else {
				xd[n] = 1;
				yd[n++] = m;
			}
			copy = false;
		}
		if (d > 1) {   /* x's own dim */
			if (n && copy) {
				xd[n - 1] *= d;
				yd[n - 1] *= d;
			} else {
				xd[n] = yd[n] = d;
				n++;
			}
			copy = true;
		}
	}
	if (n > MAX_DIMS)
		die("Tile's view has %d dims (shape.c bounds it)", n);
	if (!n)
		xd[n] = yd[n] = 1, n++;
	return n;
}

int arg_view(OpKind op, const Attrs *a, const Type *x, int64_t *outer, int64_t *n, int64_t *inner)
{
	bool wv = op == OP_ARGMAX_WITH_VALUE || op == OP_ARGMIN_WITH_VALUE;
	int ax = op == OP_TOPK ? x->rank - 1 : (int)norm_axis(a->has_axis && a->naxes ? a->axes[0] : wv ? 0 : -1, x->rank);
	*outer = *inner = 1;
	for (int d = 0; d < x->rank; d++)
		if (d != ax)
			*(d < ax ? outer : inner) *= x->dims[d];
	*n = x->dims[ax];
	return op == OP_ARGMIN_WITH_VALUE || op == OP_ARGMIN;
}

/* RotaryPositionEmbedding's kernel on values x, cos and sin (-1: zeros, in
 * x's shape), into y (a name): y = x cos + rotate(x) sin, or with
 * transpose x cos - rotate(x sin), its gradient for x. */
void emit_rotary(StrBuf *b, const Program *p, int64_t mode, int transpose, int x, int cos, int sin, const char *y)
{
	const LValue *xv = &p->l->values[x];
	sb_printf(b, "sc_rotary(rt, %lld, %d, %s, ", (long long)mode, transpose, p->cname[x]);
	dims_lit(b, xv->type.dims, xv->type.rank);
	for (int k = 0; k < 2; k++) {
		int v = k ? sin : cos;
		sb_printf(b, ", %s, ", v < 0 ? "NULL" : p->cname[v]);
		dims_lit(b, (v < 0 ? xv : &p->l->values[v])->type.dims, xv->type.rank);
	}
	sb_printf(b, ", %s);", y);
}

/* FlashAttentionScore's kernel for forward operator f (q, k, v[,
 * attn_mask], attributes a): its forward into y (a name) when grads is
 * NULL, else the gradients into grads[0..3) (names, "NULL" for those not
 * wanted: q's, k's, v's) from f's result and dy. The mask goes as 4-D
 * dims, a 2-D (S, S_kv) one as (1, 1, S, S_kv). */
void emit_flash_attention(StrBuf *b, const Program *p, const LOp *f, const Attrs *a, const char *const *grads,
                          const char *dy, const char *y)
{
	const Lowered *l = p->l;
	const LValue *q = &l->values[f->in[0]], *k = &l->values[f->in[1]];
	sb_puts(b, grads ? "sc_flash_attention_grad(rt, " : "sc_flash_attention(rt, ");
	sb_printf(b, "%s, %s, %s, ", p->cname[f->in[0]], p->cname[f->in[1]], p->cname[f->in[2]]);
	if (f->nin == 4) {
		const LValue *m = &l->values[f->in[3]];
		int64_t md[4] = {1, 1, 1, 1};
		for (int d = 0; d < m->type.rank; d++)
			md[d + 4 - m->type.rank] = m->type.dims[d];
		sb_printf(b, "%s, %d, ", p->cname[f->in[3]], m->type.dtype != DT_BOOL);
		dims_lit(b, md, 4);
		sb_puts(b, ", ");
	} else
		sb_puts(b, "NULL, 0, NULL, ");
	if (grads)
		sb_printf(b, "%s, %s, %s, %s, %s, ", p->cname[f->result], dy, grads[0], grads[1], grads[2]);
	else
		sb_printf(b, "%s, ", y);
	int64_t dims[6];
	flash_dims(a, &q->type, &k->type, dims);   /* a: the local operator's, its head_num this rank's */
	dims_lit(b, dims, 6);
	sb_printf(b, ", %.9g, %d, %s);", (double)(float)a->scale_value, a->sparse_mode != 0,
	          a->input_layout == FA_BNSD ? "SC_FA_BNSD" : "SC_FA_BSND");
}

/* y = a op b, numpy broadcasting: values a, b and y; call sc_binary,
 * sc_compare or sc_logical (a Bool y), which take them alike. */
void emit_binary(StrBuf *b, const Program *p, const char *call, const char *op, int a, int bb, int y)
{
	sb_printf(b, "%s(rt, %s, ", call, op);
	tensor_arg(b, p, a);
	sb_puts(b, ", ");
	tensor_arg(b, p, bb);
	sb_puts(b, ", ");
	tensor_arg(b, p, y);
	sb_puts(b, ");");
}

const char *redop_name(ReduceOp op)
{
	return op == REDUCE_MAX_OP    ? "SC_MAX"
	       : op == REDUCE_MIN_OP  ? "SC_MIN"
	       : op == REDUCE_PROD_OP ? "SC_PROD"
	       : op == REDUCE_MEAN_OP ? "SC_MEAN" : "SC_SUM";
}

bool uneven_mean(const LValue *x, const int64_t *axes, int naxes, double *scale)
{
	double split = 1, whole = 1;
	bool uneven = false;
	for (int k = 0; k < naxes; k++) {
		int d = (int)axes[k];
		split *= (double)layout_dim_split(&x->layout, d);
		whole *= (double)x->global[d];
		uneven |= layout_uneven(&x->layout, x->global, d);
	}
	*scale = split / whole;
	return uneven;
}

bool uneven_mean_factor(const LValue *x, const int64_t *axes, int naxes, double *factor)
{
	if (!uneven_mean(x, axes, naxes, factor))
		return false;
	int64_t count = 1;
	for (int k = 0; k < naxes; k++)
		count *= x->type.dims[axes[k]];
	*factor *= (double)count;
	return true;
}

bool loss_uneven_scale(const LValue *x, double *scale)
{
	int64_t axes[MAX_DIMS] = {0};
	for (int d = 0; d < x->type.rank; d++)
		axes[d] = d;
	return uneven_mean_factor(x, axes, x->type.rank, scale);
}

int64_t norm_axis(int64_t axis, int rank)
{
	return axis < 0 ? axis + rank : axis;
}

/* Numbers [k, k + n) of entry e: `T + pos` (array) or `T[pos]`, or the
 * numbers themselves where every rank has the same. */
void entry_ref(StrBuf *b, const Entry *e, int k, int n, bool array)
{
	if (e->pos >= 0)
		sb_printf(b, array ? "T + %lld" : "T[%lld]", (long long)(e->pos + k));
	else if (array)
		dims_lit(b, e->lit + k, n);
	else
		sb_printf(b, "%lld", (long long)e->lit[k]);
}

/* `gdims, ndim, start, ldims` of value v's piece; where the rank's piece
 * starts is in the table. */
void piece_args(StrBuf *b, const Program *p, int v)
{
	const LValue *x = &p->l->values[v];
	dims_lit(b, x->global, x->type.rank);
	sb_printf(b, ", %d, ", x->type.rank);
	if (x->type.rank)
		entry_ref(b, &p->entry[p->value_entry[v]], 0, x->type.rank, true);
	else
		dims_lit(b, x->type.dims, 0);
	sb_puts(b, ", ");
	dims_lit(b, x->type.dims, x->type.rank);
}

void step_piece_args(StrBuf *b, const Program *p, int v)
{
	const LValue *x = &p->l->values[v];
	const Entry *e = &p->entry[p->value_entry[v]];
	int64_t gdims[MAX_DIMS];
	for (int d = 0; d < x->type.rank; d++)
		gdims[d] = d ? x->global[d] : step_rows(p->l, v);
	dims_lit(b, gdims, x->type.rank);
	sb_printf(b, ", %d, (const int64_t[]){", x->type.rank);
	for (int d = 0; d < x->type.rank; d++) {
		sb_puts(b, d ? ", " : "");
		entry_ref(b, e, d, 1, false);
		if (!d)
			sb_printf(b, " + micro * %lld", (long long)x->global[0]);
	}
	sb_puts(b, "}, ");
	dims_lit(b, x->type.dims, x->type.rank);
}

void held_arg(StrBuf *b, const Program *p, int v, const char *ptr)
{
	if (p->l->stages > 1)
		sb_printf(b, "stage == %d ? %s : NULL", p->l->values[v].stage, ptr);
	else
		sb_puts(b, ptr);
}

/* `dims, ndim, dim, real` of value v's piece for sc_fill_pad: how many of
 * its elements along dim are the whole's (the rest padding), from where the
 * rank's piece starts. */
void pad_args(StrBuf *b, const Program *p, int v, int dim)
{
	const LValue *x = &p->l->values[v];
	dims_lit(b, x->type.dims, x->type.rank);
	sb_printf(b, ", %d, %d, sc_real_len(%lld, ", x->type.rank, dim, (long long)x->global[dim]);
	entry_ref(b, &p->entry[p->value_entry[v]], dim, 1, false);
	sb_printf(b, ", %lld)", (long long)x->type.dims[dim]);
}

/* `lead, rows, cols, row0, col0, diagonal` of Tril or Triu f (forward):
 * its piece as (lead, rows, cols), lead the leading dims; where the piece
 * starts in the whole's rows and columns (the table's); the diagonal as
 * written, held to [-rows, cols] of the whole (the same elements kept). */
void triangle_args(StrBuf *b, const Program *p, const LOp *f)
{
	const LValue *y = &p->l->values[f->result];
	if (p->value_entry[f->result] < 0)
		die("%s %%%s has no piece in the rank table", op_info[f->op].name, y->name);
	const Entry *e = &p->entry[p->value_entry[f->result]];
	int r = y->type.rank;
	int64_t lead = 1, d = f->a.diagonal, rows = y->global[r - 2], cols = y->global[r - 1];
	for (int k = 0; k < r - 2; k++)
		lead *= y->type.dims[k];
	sb_printf(b, "%lld, %lld, %lld, ", (long long)lead, (long long)y->type.dims[r - 2], (long long)y->type.dims[r - 1]);
	entry_ref(b, e, r - 2, 1, false);
	sb_puts(b, ", ");
	entry_ref(b, e, r - 1, 1, false);
	sb_printf(b, ", %lld", (long long)(d < -rows ? -rows : d > cols ? cols : d));
}

/* A Dropout's mask (docs/operators.md, Dropout): `gdims, ndim, start, ldims,
 * "name", seed, step, keep_prob` of forward operator f's piece (with
 * accumulate_steps the micro-batch's number, batch, for the step), the name its
 * result has in the flat graph (the same in a recomputed clone and for the
 * adjoint, so all three draw one mask). Without a train block keep_prob is 1:
 * the identity, as nn.Dropout in eval mode. */
static void mask_key_args(StrBuf *b, const Program *p, const LOp *f, double keep_prob)
{
	const Lowered *l = p->l;
	const Graph *g = l->flat->g;
	sb_printf(b, ", \"%s\", %lluu, %s, %.17g", g->values[g->nodes[f->node].result].name,
	          (unsigned long long)l->m->ctx.seed, l->once ? "batch" : "step", l->m->train ? keep_prob : 1.0);
}

void dropout_args(StrBuf *b, const Program *p, const LOp *f, double keep_prob)
{
	const Lowered *l = p->l;
	if (f->node < 0 || (p->value_entry[f->result] < 0 && l->values[f->result].type.rank))
		die("Dropout %%%s has no flat node or no piece in the rank table", l->values[f->result].name);
	piece_args(b, p, f->result);
	mask_key_args(b, p, f, keep_prob);
}

/* DropoutGenMask's and UniformReal's (docs/operators.md, DropoutGenMask, DropoutDoMask; UniformReal): Dropout's
 * arguments for the rank's piece of the whole mask `shape`, which starts where
 * the table says (the constant's E_SLICE: begin, then end), keyed by its
 * result's flat name as a Dropout of that name would be. */
void gen_mask_args(StrBuf *b, const Program *p, const LOp *f, const Attrs *a)
{
	const LValue *y = &p->l->values[f->result];
	const Entry *e = op_table(p, f);
	if (f->node < 0 || !e || e->kind != E_SLICE)
		die("DropoutGenMask %%%s has no flat node or no piece in the rank table", y->name);
	dims_lit(b, a->shape, a->nshape);
	sb_printf(b, ", %d, ", y->type.rank);
	entry_ref(b, e, 0, y->type.rank, true);
	sb_puts(b, ", ");
	dims_lit(b, y->type.dims, y->type.rank);
	if (f->op != OP_UNIFORM_REAL) {
		mask_key_args(b, p, f, a->keep_prob);
		return;
	}
	const Graph *g = p->l->flat->g;   /* UniformReal's: Dropout's key, its seeds for the model's when given */
	sb_printf(b, ", \"%s\", %lluu, %s", g->values[g->nodes[f->node].result].name,
	          (unsigned long long)uniform_real_seed(a, p->l->m->ctx.seed), p->l->once ? "batch" : "step");
}

/* The table entry of operator o, or NULL. */
const Entry *op_table(const Program *p, const LOp *o)
{
	int e = p->op_entry[o - p->l->ops];
	return e >= 0 ? &p->entry[e] : NULL;
}

/* StridedSlice's begin, end and strides for every dim (missing ones: whole);
 * a slice redistribution's bounds are the rank's, from the table. */
void slice_args(StrBuf *b, const Program *p, const LOp *o, const Attrs *a, const LValue *x)
{
	int64_t strides[MAX_DIMS];
	const Entry *e = op_table(p, o);
	if (e && e->kind == E_SLICE) {
		for (int d = 0; d < x->type.rank; d++)
			strides[d] = 1;
		entry_ref(b, e, 0, x->type.rank, true);
		sb_puts(b, ", ");
		entry_ref(b, e, x->type.rank, x->type.rank, true);
		sb_puts(b, ", ");
		dims_lit(b, strides, x->type.rank);
		return;
	}
	SliceForm f;   /* one slice per dim of x, the masks resolved: the result's bytes (slice.c) */
	if (slice_form(a, x->type.dims, x->type.rank, &f) != SLICE_OK)
		die("emit: a StridedSlice shape.c did not take");
	dims_lit(b, f.begin, x->type.rank);
	sb_puts(b, ", ");
	dims_lit(b, f.end, x->type.rank);
	sb_puts(b, ", ");
	dims_lit(b, f.strides, x->type.rank);
}


/* Gather's offset (a split table's first row) and a class-split cross
 * entropy's (its first class) are the rank's, from the table. */
void offset_arg(char *buf, size_t size, const Program *p, const LOp *o, const Attrs *a)
{
	const Entry *e = op_table(p, o);
	if (e && e->kind == E_OFFSET && e->pos >= 0)
		snprintf(buf, size, "T[%lld]", (long long)e->pos);
	else if (e && e->kind == E_OFFSET)
		snprintf(buf, size, "%lld", (long long)e->lit[0]);
	else
		snprintf(buf, size, "%lld", (long long)((a->present & (ATTR_BIT(ATTR_OFFSET))) ? a->offset : 0));
}

void gather_dims(const LValue *x, const Attrs *a, int64_t *outer, int64_t *rows, int64_t *row)
{
	int axis = gather_axis(a, x->type.rank);
	*outer = *row = 1;
	for (int d = 0; d < x->type.rank; d++)
		*(d < axis ? outer : row) *= d == axis ? 1 : x->type.dims[d];
	*rows = x->type.dims[axis];
}

void nd_shape_args(StrBuf *b, const Lowered *l, int x, int idx)
{
	NdView v;
	nd_view(&l->values[x].type, &l->values[idx].type, &v);
	dims_lit(b, v.dims, v.n);
	sb_printf(b, ", %d, %lld", v.n, (long long)v.inner);
}

void nd_index_args(StrBuf *b, const Program *p, int x, int idx)
{
	const Lowered *l = p->l;
	NdView v;
	nd_view(&l->values[x].type, &l->values[idx].type, &v);
	sb_printf(b, "%s, %s, %lld", p->cname[idx], sc_dtype_name(l->values[idx].type.dtype), (long long)v.m);
}

void scatter_shape_args(StrBuf *b, const Program *p, const LOp *f, bool global)
{
	const LValue *x = &p->l->values[f->in[0]];
	NdView v;
	nd_view(&x->type, &p->l->values[f->in[1]].type, &v);
	if (global) {
		dims_lit(b, x->global, v.n);
		sb_puts(b, ", ");
	}
	if (p->value_entry[f->result] >= 0)   /* x's piece's start: its indexed dims may be split (Add, Sub) */
		entry_ref(b, &p->entry[p->value_entry[f->result]], 0, v.n, true);
	else
		sb_puts(b, "NULL");
	sb_puts(b, ", ");
	dims_lit(b, v.dims, v.n);
	sb_printf(b, ", %d, %lld", v.n, (long long)v.inner);
}

void state_index_args(StrBuf *b, const Program *p, const LOp *f)
{
	const Lowered *l = p->l;
	NdView v;
	state_view(f->op, &l->values[f->in[0]].type, &l->values[f->in[1]].type, &v);
	sb_printf(b, "%s, %s, %lld", p->cname[f->in[1]], sc_dtype_name(l->values[f->in[1]].type.dtype), (long long)v.m);
}

void state_shape_args(StrBuf *b, const Program *p, const LOp *f, bool global)
{
	const LValue *x = &p->l->values[f->in[0]];
	NdView v;
	state_view(f->op, &x->type, &p->l->values[f->in[1]].type, &v);
	if (global) {
		dims_lit(b, x->global, v.n);
		sb_puts(b, ", ");
	}
	if (p->value_entry[f->in[0]] >= 0)   /* x's piece's start, a parameter's: its indexed dims may be split */
		entry_ref(b, &p->entry[p->value_entry[f->in[0]]], 0, v.n, true);
	else
		sb_puts(b, "NULL");
	sb_puts(b, ", ");
	dims_lit(b, v.dims, v.n);
	sb_printf(b, ", %d, %lld", v.n, (long long)v.inner);
}

const char *scatter_kernel(OpKind op)
{
	static const char *const names[] = {"SC_SCATTER_UPDATE", "SC_SCATTER_ADD", "SC_SCATTER_SUB", "SC_SCATTER_MUL",
	                                    "SC_SCATTER_DIV", "SC_SCATTER_MAX", "SC_SCATTER_MIN"};   /* ops.h's order */
	_Static_assert(OP_TENSOR_SCATTER_ADD == OP_TENSOR_SCATTER_UPDATE + 1 &&
	               OP_TENSOR_SCATTER_SUB == OP_TENSOR_SCATTER_UPDATE + 2 &&
	               OP_TENSOR_SCATTER_MUL == OP_TENSOR_SCATTER_UPDATE + 3 &&
	               OP_TENSOR_SCATTER_DIV == OP_TENSOR_SCATTER_UPDATE + 4 &&
	               OP_TENSOR_SCATTER_MAX == OP_TENSOR_SCATTER_UPDATE + 5 &&
	               OP_TENSOR_SCATTER_MIN == OP_TENSOR_SCATTER_UPDATE + 6, "the scatters' rows follow one another");
	return names[op - OP_TENSOR_SCATTER_UPDATE];
}

/* Conv2DTranspose's: Conv2D's geometry with x the rank's piece of the
 * result y (n, c, h, w) and its output the piece of dout (n, o, ho, wo);
 * where y splits a dim dout is whole along, the rank's rows of y from its
 * first: the padding plus the piece's first row (window k of dout's row j
 * reads y's global row j s - pt + k d, its local row that less the first). */
static void transpose_window_arg(StrBuf *b, const Program *p, const Attrs *a, const LValue *dout, const LValue *yv,
                                 int y)
{
	Window g;
	window_of(OP_CONV2D_TRANSPOSE, a, a->shape, &g);   /* the padding: the whole result's */
	sb_printf(b, "&(const sc_window){%lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, ",
	          (long long)yv->type.dims[0], (long long)yv->type.dims[1], (long long)yv->type.dims[2],
	          (long long)yv->type.dims[3], (long long)dout->type.dims[1], (long long)g.kh, (long long)g.kw,
	          (long long)g.sh, (long long)g.sw, (long long)g.dh, (long long)g.dw);
	int64_t pad[2] = {g.pt, g.pl}, full[2] = {g.ho, g.wo};
	for (int s = 0; s < 2; s++) {
		if (yv->type.dims[2 + s] == yv->global[2 + s] || dout->type.dims[2 + s] != full[s]) {
			sb_printf(b, "%lld, ", (long long)pad[s]);   /* whole, or split with dout (no padding then) */
			continue;
		}
		if (p->value_entry[y] < 0)
			die("Conv2DTranspose's piece of the result has no rank-table entry");
		sb_printf(b, "%lld + ", (long long)pad[s]);   /* y's local row r is the global r + first */
		entry_ref(b, &p->entry[p->value_entry[y]], 2 + s, 1, false);
		sb_puts(b, ", ");
	}
	sb_printf(b, "%lld, %lld, %lld}", (long long)dout->type.dims[2], (long long)dout->type.dims[3],
	          (long long)g.groups);
}

void window_arg(StrBuf *b, const Program *p, OpKind op, const Attrs *a, const LValue *x, int y)
{
	const LValue *yv = &p->l->values[y];
	if (op == OP_CONV2D_TRANSPOSE) {
		transpose_window_arg(b, p, a, x, yv, y);
		return;
	}
	Window g;
	window_of(op, a, x->type.dims, &g);
	g.o = yv->type.dims[1];   /* Conv2D's out_channel split: the rank's filters */
	sb_printf(b, "&(const sc_window){%lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, ", (long long)g.n,
	          (long long)g.c, (long long)g.h, (long long)g.w, (long long)g.o, (long long)g.kh, (long long)g.kw,
	          (long long)g.sh, (long long)g.sw, (long long)g.dh, (long long)g.dw);
	int64_t pad[2] = {g.pt, g.pl}, full[2] = {g.ho, g.wo}, stride[2] = {g.sh, g.sw};
	for (int s = 0; s < 2; s++) {   /* x whole along a split result dim: the rank's rows from its first (rules.c) */
		if (full[s] == yv->type.dims[2 + s]) {
			sb_printf(b, "%lld, ", (long long)pad[s]);
			continue;
		}
		if (p->value_entry[y] < 0 || full[s] != yv->global[2 + s])
			die("%s's piece: x %lldx%lld gives %lldx%lld, not the result's", op_info[op].name, (long long)g.h,
			    (long long)g.w, (long long)g.ho, (long long)g.wo);
		sb_printf(b, "%lld - %lld * ", (long long)pad[s], (long long)stride[s]);
		entry_ref(b, &p->entry[p->value_entry[y]], 2 + s, 1, false);
		sb_puts(b, ", ");
	}
	sb_printf(b, "%lld, %lld, %lld}", (long long)yv->type.dims[2], (long long)yv->type.dims[3], (long long)g.groups);
}

void batch_norm_dims(const LValue *x, int64_t dims[3], int64_t *count)
{
	dims[0] = x->type.dims[0], dims[1] = x->type.dims[1], dims[2] = 1;
	*count = x->global[0];
	for (int d = 2; d < x->type.rank; d++)
		dims[2] *= x->type.dims[d], *count *= x->global[d];
}

void l2_normalize_dims(const LValue *x, const Attrs *a, int64_t dims[3])
{
	int axis = (int)norm_axis(a->has_axis && a->naxes ? a->axes[0] : 0, x->type.rank);
	dims[0] = dims[1] = dims[2] = 1;
	for (int d = 0; d < x->type.rank; d++)
		dims[d < axis ? 0 : d > axis ? 2 : 1] *= x->type.dims[d];
}

const char *segment_kernel(OpKind op)
{
	static const char *const names[] = {"SC_SEG_SUM", "SC_SEG_MAX", "SC_SEG_MIN", "SC_SEG_PROD"};   /* ops.h's order */
	_Static_assert(OP_UNSORTED_SEGMENT_MAX == OP_UNSORTED_SEGMENT_SUM + 1 &&
	               OP_UNSORTED_SEGMENT_PROD == OP_UNSORTED_SEGMENT_SUM + 3, "the segment rows follow one another");
	return names[op - OP_UNSORTED_SEGMENT_SUM];
}

/* The segment kernels' common arguments around `what` (their middle): `k, x, ids, ids_dt, what, rows, inner,
 * segments`, f the forward operator (its dims), x and ids the values read (x -1: NULL). */
void segment_args(StrBuf *b, const Program *p, const LOp *f, int x, int ids, const char *what)
{
	const Lowered *l = p->l;
	const LValue *xv = &l->values[f->in[0]], *iv = &l->values[ids], *y = &l->values[f->result];
	int64_t rows, inner;
	segment_view(&xv->type, iv->type.rank, &rows, &inner);
	sb_printf(b, "%s, %s, %s, %s, %s, %lld, %lld, %lld", segment_kernel(f->op), x >= 0 ? p->cname[x] : "NULL",
	          p->cname[ids], sc_dtype_name(iv->type.dtype), what, (long long)rows, (long long)inner,
	          (long long)y->type.dims[0]);
}

void prelu_dims(const LValue *x, int64_t *outer, int64_t *c, int64_t *inner)
{
	int r = x->type.rank;
	*outer = r >= 2 ? x->type.dims[0] : 1;
	*c = r >= 2 ? x->type.dims[1] : 1;
	*inner = 1;
	for (int d = r >= 2 ? 2 : 0; d < r; d++)
		*inner *= x->type.dims[d];
}

void scan_args(StrBuf *b, const LValue *x, const Attrs *a)
{
	int r = x->type.rank, axis = (int)(a->axes[0] < 0 ? a->axes[0] + r : a->axes[0]);
	int64_t outer = 1, inner = 1;
	for (int d = 0; d < r; d++)
		*(d < axis ? &outer : &inner) *= d == axis ? 1 : x->type.dims[d];
	sb_printf(b, "%lld, %lld, %lld, %d, %d);", (long long)outer, (long long)x->type.dims[axis], (long long)inner,
	          a->exclusive, a->reverse);
}

int64_t scan_slices(const LValue *totals, const Attrs *a)
{
	int r = totals->type.rank;
	return totals->type.dims[a->axes[0] < 0 ? a->axes[0] + r : a->axes[0]];
}

void emit_matmul_dims(const LOp *f, const Lowered *l, int64_t *m, int64_t *n, int64_t *k)
{
	const LValue *a = &l->values[f->in[0]], *y = &l->values[f->result];
	int ra = a->type.rank, ry = y->type.rank;
	*m = y->type.dims[ry - 2];
	*n = y->type.dims[ry - 1];
	*k = f->a.transpose_a ? a->type.dims[ra - 2] : a->type.dims[ra - 1];
}

/* `sc_matmul(rt, ` or, on half operands, `sc_matmul_half(rt, SC_BF16, `;
 * sc_batch_matmul likewise. */
void matmul_call(StrBuf *b, const Lowered *l, const LOp *o, bool batch)
{
	const char *f = batch ? "sc_batch_matmul" : "sc_matmul";
	if (matmul_on_halves(l, o))
		sb_printf(b, "%s_half(rt, %s, ", f, sc_dtype_name(l->values[o->in[0]].type.dtype));
	else
		sb_printf(b, "%s(rt, ", f);
}

void matmul_out(StrBuf *b, const Lowered *l, const LOp *o, const char *c)
{
	sb_puts(b, c);
	if (matmul_on_halves(l, o))
		sb_printf(b, ", %s", sc_dtype_name(matmul_rounds(l, o) ? l->values[o->result].type.dtype : DT_F32));
}

static void operand_strides(StrBuf *b, const Lowered *l, int v, int nb)
{
	const LValue *x = &l->values[v];
	int64_t st[MAX_DIMS], out[MAX_DIMS + 1];
	value_strides(l, v, st);
	int xb = x->type.rank - 2;
	for (int d = 0; d < nb; d++) {
		int dx = d - (nb - xb);
		out[d] = dx < 0 || x->type.dims[dx] == 1 ? 0 : st[dx];
	}
	out[nb] = st[xb];
	dims_lit(b, out, nb + 1);
}

void strided_bmm_call(StrBuf *b, const Program *p, const LOp *o, const int v[3], const char *c,
                      const LValue *y, int64_t m, int64_t n, int64_t k, int ta, int tb)
{
	const Lowered *l = p->l;
	int nb = y->type.rank - 2;
	if (matmul_on_halves(l, o))
		sb_printf(b, "sc_batch_matmul_half_strided(rt, %s, %s, ", sc_dtype_name(l->values[v[0]].type.dtype),
		          p->cname[v[0]]);
	else
		sb_printf(b, "sc_batch_matmul_strided(rt, %s, ", p->cname[v[0]]);
	operand_strides(b, l, v[0], nb);
	sb_printf(b, ", %s, ", p->cname[v[1]]);
	operand_strides(b, l, v[1], nb);
	sb_puts(b, ", ");
	matmul_out(b, l, o, c);
	sb_puts(b, ", ");
	operand_strides(b, l, v[2], nb);
	sb_puts(b, ", ");
	dims_lit(b, y->type.dims, nb);
	sb_printf(b, ", %d, %lld, %lld, %lld, %d, %d);", nb, (long long)m, (long long)n, (long long)k, ta, tb);
}

/* Whether operator o (of the program's list) has code of its own
 * (emit_op): not a shadow, a Fused placeholder, a TransposeFolded or a view. */
static bool has_code(const Program *p, const LOp *o)
{
	return !op_shadow(p->l, (int)(o - p->l->ops)) && o->op != OP_FUSED && o->op != OP_TRANSPOSE_FOLDED &&
	       p->view[o->result] < 0;
}

/* The values program.c names: what an operator with code may pass (its
 * operands and result, the placeholders' results a fused kernel writes,
 * what a differentiated operator's adjoint reads as its row's grad column
 * says, or widens),
 * the inputs and parameters, and what is read after the operators. A value
 * between two operators without code (a Reshape of a folded Transpose's
 * operand) has a buffer but no name: a pointer to it would go unused. */
bool *named_values(const Program *p)
{
	const Lowered *l = p->l;
	bool *named = xcalloc((size_t)(l->nvalues ? l->nvalues : 1), sizeof *named);
	for (int i = 0; i < l->nops; i++) {
		const LOp *o = &l->ops[i];
		if (!has_code(p, o))
			continue;
		named[o->result] = true;
		for (int k = 0; k < o->nin; k++)
			named[o->in[k]] = true;
		int at[MAX_PARTS], nat = fused_parts(l, i, at);   /* results written with this one's */
		for (int j = 0; j < nat; j++)
			named[l->ops[at[j]].result] = true;
		const LOp *f = o->grad == GRAD_ADJOINT ? differentiated(l, o) : NULL;
		GradReads r = f ? op_info[f->op].grad : GR_NONE;   /* what it reads beside dy (ops.h) */
		for (int k = 0; (r & GR_X) && k < f->nin; k++)
			named[f->in[k]] = true;
		if (r & GR_Y)
			named[f->result] = true;
		Widened w;   /* and the half values it widens, read or not */
		widened(l, o, 0, &w);
		for (int j = 0; j < w.n; j++)
			named[w.value[j]] = true;
	}
	for (int v = 0; v < l->nparams; v++)
		named[v] = true;
	for (int k = 0; k < l->nret; k++)
		named[l->rets[k]] = true;
	if (l->loss >= 0)
		named[l->loss] = true;
	if (l->overflow >= 0)
		named[l->overflow] = true;
	for (int v = 0; l->grad && v < l->nparams; v++)
		if (l->grad[v] >= 0)
			named[l->grad[v]] = true;
	return named;
}

/* PadV3 f's paddings on its pieces (the dims it pads are whole): forward,
 * `dims, ndim, lo, hi, value` of sc_pad on x's piece; backward, `dims, ndim,
 * begin, end, strides` of sc_strided_slice on dy's piece, the box x fills. */
void pad_v3_args(StrBuf *b, const Program *p, const LOp *f, const Attrs *a, bool grad)
{
	const LValue *x = &p->l->values[f->in[0]], *y = &p->l->values[f->result];
	int r = x->type.rank;
	int64_t lo[MAX_DIMS], hi[MAX_DIMS], end[MAX_DIMS], ones[MAX_DIMS];
	pad_v3_bounds(a, r, lo, hi);
	for (int d = 0; d < r; d++)
		end[d] = lo[d] + x->type.dims[d], ones[d] = 1;
	dims_lit(b, (grad ? y : x)->type.dims, r);
	sb_printf(b, ", %d, ", r);
	dims_lit(b, lo, r);
	sb_puts(b, ", ");
	dims_lit(b, grad ? end : hi, r);
	if (grad) {
		sb_puts(b, ", ");
		dims_lit(b, ones, r);
	} else
		sb_printf(b, ", %.17g", pad_v3_value(p->l, f));
}
