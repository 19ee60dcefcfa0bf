/* scatter_state.c: MindSpore's Ref operators that update a Parameter in
 * place and return the updated value (docs/language.md, State parameters):
 * ScatterUpdate, Add, Sub, Mul, Div, Max, Min(x, indices, updates), indices
 * of any shape naming rows of x's dim 0 and updates of shape indices.shape +
 * x.shape[1:]; ScatterNdUpdate, Add, Sub(x, indices, updates) as the tensor
 * scatters (scatter_nd.c); AssignAdd, AssignSub(x, value), x plus or less
 * value (broadcast to x's shape). Each computes what its tensor scatter (or
 * Add, Sub) would and the program then writes the result into x, a
 * Parameter of the entry graph that no other operand reads (ir.c's
 * param_is_moving_stat makes it state: no gradient, no optimizer). Their
 * result shapes (shape.c), op dims (rules.c) as MindSpore's ScatterOpsInfo,
 * ScatterMathOpsInfo and ScatterNdOpsInfo split them, and the checks on
 * their state (check_kernels.c). */
#include "shape_internal.h"
#include "rules_internal.h"
#include "scatter_state.h"

#include <stdlib.h>
#include <string.h>

static bool scatter_rows(OpKind op)   /* the Scatter rows: indices name x's dim 0 */
{
	return op >= OP_SCATTER_UPDATE && op <= OP_SCATTER_MIN;
}

OpKind state_scatter_kind(OpKind op)
{
	_Static_assert(OP_SCATTER_MIN == OP_SCATTER_UPDATE + 6 && OP_TENSOR_SCATTER_MIN == OP_TENSOR_SCATTER_UPDATE + 6 &&
	               OP_SCATTER_ND_SUB == OP_SCATTER_ND_UPDATE + 2, "the scatters' rows follow one another");
	if (scatter_rows(op))
		return (OpKind)(OP_TENSOR_SCATTER_UPDATE + (op - OP_SCATTER_UPDATE));
	if (op >= OP_SCATTER_ND_UPDATE && op <= OP_SCATTER_ND_SUB)
		return (OpKind)(OP_TENSOR_SCATTER_UPDATE + (op - OP_SCATTER_ND_UPDATE));
	return OP_COUNT;
}

void state_view(OpKind op, const Type *x, const Type *indices, NdView *v)
{
	if (!scatter_rows(op)) {
		nd_view(x, indices, v);
		return;
	}
	v->n = 1;
	v->dims[0] = x->dims[0];
	v->inner = v->m = 1;
	for (int d = 1; d < x->rank; d++)
		v->inner *= x->dims[d];
	for (int d = 0; d < indices->rank; d++)
		v->m *= indices->dims[d];
}

/* ScatterUpdate .. ScatterMin: indices Int32 or Int64 of any shape, x of
 * one dim or more, updates indices.shape + x.shape[1:] of x's type. */
static bool infer_scatter_rows(Infer *x, const Type *in, Type *out)
{
	const Type *idx = in_type(x, 1), *upd = in_type(x, 2);
	StrBuf b = {0};
	bool ok = false;
	Type s = {.rank = 0};
	for (int d = 0; d < idx->rank; d++)
		s.dims[s.rank++] = idx->dims[d];
	for (int d = 1; d < in->rank && s.rank < MAX_DIMS; d++)
		s.dims[s.rank++] = in->dims[d];
	if (idx->dtype != DT_I32 && idx->dtype != DT_I64)
		ERR(x, in_span(x, 1), "%s: the indices %s are %s; they must be Int32 or Int64 (Cast them)", opname(x),
		    in_name(x, 1, &b), dtype_name(idx->dtype));
	else if (in->rank < 1)
		ERR(x, in_span(x, 0), "%s: x %s is a scalar; it needs one dim or more, the rows the indices name", opname(x),
		    in_name(x, 0, &b));
	else if (idx->rank + in->rank - 1 > MAX_DIMS)
		ERR(x, x->n->op_span, "%s: updates would have more than %d dims", opname(x), MAX_DIMS);
	else if (!same_dtype(x, 0, 2))
		;
	else if (upd->rank != s.rank || memcmp(upd->dims, s.dims, sizeof(int64_t) * (size_t)s.rank))
		ERR(x, in_span(x, 2), "%s: updates %s are %s; they must be indices.shape + x.shape[1:], %s, one row of x "
		    "for each index", opname(x), in_name(x, 2, &b), DIMS(upd), DIMS(&s));
	else
		ok = true;
	sb_free(&b);
	*out = *in;
	out->is_param = false;
	return ok;
}

/* AssignAdd, AssignSub: value of x's type, broadcast (numpy's rule) to x's
 * shape, which the result keeps. */
static bool infer_assign(Infer *x, const Type *in, Type *out)
{
	const Type *v = in_type(x, 1);
	*out = *in;
	out->is_param = false;
	if (!same_dtype(x, 0, 1))
		return false;
	bool fits = v->rank <= in->rank;
	for (int d = 1; fits && d <= v->rank; d++)
		fits = v->dims[v->rank - d] == 1 || v->dims[v->rank - d] == in->dims[in->rank - d];
	if (!fits) {
		StrBuf b = {0};
		ERR(x, in_span(x, 1), "%s: value %s is %s, which does not broadcast to x's shape %s: x is updated in place, "
		    "so its shape is the result's", opname(x), in_name(x, 1, &b), DIMS(v), DIMS(in));
		sb_free(&b);
	}
	return fits;
}

/* InplaceAdd, Sub, Update: v of x's type and shape (len(indices),) +
 * x.shape[1:], each index a row of x's dim 0. */
static bool infer_inplace(Infer *x, const Type *in, Type *out)
{
	const Type *v = in_type(x, 1);
	const Attrs *a = &x->n->a;
	*out = *in;
	out->is_param = false;
	if (!same_dtype(x, 0, 1) || !need_attr(x, ATTR_INDICES))
		return false;
	StrBuf b = {0};
	bool ok = false;
	Type s = *in;
	if (in->rank >= 1)
		s.dims[0] = a->nindices;
	if (in->rank < 1)
		ERR(x, in_span(x, 0), "%s: x %s is a scalar; it needs one dim or more, the rows indices names", opname(x),
		    in_name(x, 0, &b));
	else if (v->rank != s.rank || memcmp(v->dims, s.dims, sizeof(int64_t) * (size_t)s.rank))
		ERR(x, in_span(x, 1), "%s: v %s is %s; it must be (len(indices),) + x.shape[1:], %s, one row for each index",
		    opname(x), in_name(x, 1, &b), DIMS(v), DIMS(&s));
	else
		ok = true;
	for (int i = 0; ok && i < a->nindices; i++)
		if (a->indices[i] < 0 || a->indices[i] >= in->dims[0]) {
			ERR(x, attr_span(x, "indices"), "%s: index %lld names no row of x %s, whose dim 0 has %lld: keep the "
			    "indices in [0, %lld)", opname(x), (long long)a->indices[i], DIMS(in), (long long)in->dims[0],
			    (long long)in->dims[0]);
			ok = false;
		}
	sb_free(&b);
	return ok;
}

bool infer_state(Infer *x, const Type *in, Type *out)
{
	OpKind op = x->n->op;
	if (op == OP_INPLACE_ADD || op == OP_INPLACE_SUB || op == OP_INPLACE_UPDATE)
		return infer_inplace(x, in, out);
	if (op == OP_ASSIGN_ADD || op == OP_ASSIGN_SUB)
		return infer_assign(x, in, out);
	if (scatter_rows(op))
		return infer_scatter_rows(x, in, out);
	return infer_tensor_scatter(x, in, out);
}

static const char *const x_dims[MAX_DIMS] = {"x's dim 0", "x's dim 1", "x's dim 2", "x's dim 3",
                                             "x's dim 4", "x's dim 5", "x's dim 6", "x's dim 7"};

void state_scatter_dims(OpKind op, const Type *x, const Type *indices, OpDims *od)
{
	if (!scatter_rows(op)) {
		tensor_scatter_dims(state_scatter_kind(op), x, indices, od);
		return;
	}
	int r = indices->rank;
	for (int d = 0; d < x->rank; d++)
		add_dim(od, x->dims[d], x_dims[d]);
	if (op == OP_SCATTER_UPDATE || op == OP_SCATTER_MAX || op == OP_SCATTER_MIN)
		keep_whole(od, 0, "the rows the indices name, whole as MindSpore's ScatterUpdateInfo, "
		           "ScatterMaxInfo and ScatterMinInfo keep it: split x's other dims instead");
	for (int d = 0; d < r; d++) {
		int o = add_dim(od, indices->dims[d], "an indices' dim");
		keep_whole(od, o, "the indices and the updates' leading dims, which MindSpore's ScatterOpsInfo never splits");
	}
	identity_input(od, 0, x->rank);
	od->in_rank[1] = r;
	for (int d = 0; d < r; d++)
		od->in_dim[1][d] = (int8_t)(x->rank + d);
	od->in_rank[2] = r + x->rank - 1;
	for (int d = 0; d < od->in_rank[2]; d++)
		od->in_dim[2][d] = (int8_t)(d < r ? x->rank + d : d - r + 1);
	identity_output(od, x->rank);
	od->batch = -1;   /* MindSpore's: no batch split */
}

void inplace_dims(const Type *x, const Type *v, OpDims *od)
{
	for (int d = 0; d < x->rank; d++)
		add_dim(od, x->dims[d], x_dims[d]);
	keep_whole(od, 0, "the rows the indices name, whole as MindSpore's InplaceAddInfo, InplaceSubInfo and "
	           "InplaceUpdateInfo keep x's and v's first dims: split the others, alike");
	int o = add_dim(od, v->dims[0], "v's dim 0");
	keep_whole(od, o, "v's rows, one for each index, whole as MindSpore keeps them");
	identity_input(od, 0, x->rank);
	od->in_rank[1] = v->rank;
	od->in_dim[1][0] = (int8_t)o;
	for (int d = 1; d < v->rank; d++)
		od->in_dim[1][d] = (int8_t)d;
	identity_output(od, x->rank);
	od->batch = -1;
}

/* The values that depend on a Parameter the optimizer trains (a float one
 * that is not state), in order of the flat graph's nodes. */
static bool *trained_reach(const Graph *g)
{
	bool *r = calloc((size_t)g->nvalues, sizeof(bool));
	if (!r)
		die("out of memory");
	for (int v = 0; v < g->nparams; v++)
		r[v] = g->values[v].type.is_param && dtype_is_float(g->values[v].type.dtype) && !param_is_moving_stat(g, v);
	for (int i = 0; i < g->nnodes; i++)
		for (int k = 0; k < g->nodes[i].nin; k++)
			if (op_input_has_grad(g->nodes[i].op, k, DT_F32, DT_F32) || g->nodes[i].op == OP_CALL)
				r[g->nodes[i].result] |= r[g->nodes[i].in[k]];
	return r;
}

int state_writer(const Graph *g, int v)
{
	for (int i = 0; i < g->nnodes; i++)
		if (op_writes_state(g->nodes[i].op) && g->nodes[i].in[0] == v)
			return i;
	return -1;
}

void check_state_writers(const Module *m, const Graph *g, Diag *d)
{
	bool *reach = NULL;
	for (int i = 0; i < g->nnodes; i++) {
		const Node *n = &g->nodes[i];
		if (!op_writes_state(n->op))
			continue;
		const char *name = op_info[n->op].name;
		int v = n->in[0];
		OpKind base = state_scatter_kind(n->op);
		if (v >= g->nparams || !g->values[v].type.is_param) {
			diag_error(d, m->src, n->op_span, "%s updates its x in place, so '%%%s' must be a Parameter of the entry "
			           "graph (MindSpore's Ref input); it is computed or a Tensor input: use the functional %s "
			           "instead, which returns the updated copy", name, g->values[v].name,
			           base != OP_COUNT ? op_info[base].name : n->op == OP_ASSIGN_ADD ? "Add" : "Sub");
			continue;
		}
		int uses = 0;
		for (int j = 0; j < g->nnodes; j++)
			for (int q = 0; q < g->nodes[j].nin; q++)
				uses += g->nodes[j].in[q] == v;
		if (uses > 1)
			diag_error(d, m->src, n->op_span, "'%%%s' is state %s updates in place: no other operand may read it (it "
			           "is read %d times), nor may a second operator update it; read the updated value through "
			           "%s's result, and give each state operator its own Parameter", g->values[v].name, name, uses,
			           name);
		if (m->train && (n->op == OP_SCATTER_MUL || n->op == OP_SCATTER_DIV)) {
			if (!reach)
				reach = trained_reach(g);
			if (reach[n->in[2]])
				diag_error(d, m->src, n->op_span, "%s's updates '%%%s' depend on a trained Parameter, but "
				           "MindSpore registers no gradient for %s: compute the updates from inputs alone, or use "
				           "the functional %s, whose gradient exists", name, g->values[n->in[2]].name, name,
				           op_info[base].name);
		}
	}
	free(reach);
}

bool check_state_layouts(const Lowered *l, Diag *d)
{
	bool ok = true;
	for (int i = 0; i < l->nfwd; i++) {
		const LOp *o = &l->ops[i];
		if (!op_writes_state(o->op) || o->node < 0 || l->values[o->in[0]].param >= 0)
			continue;
		ok = false;
		if (!d)   /* the search's own lowering: the plan is refused */
			continue;
		const Node *n = &l->flat->g->nodes[o->node];
		const char *name = op_info[o->op].name;
		diag_error(d, l->m->src, n->op_span, "%s updates '%%%s' in place where the Parameter lives, but its layout "
		           "of x is another (%s); give %s a strategy that holds x as the Parameter is held%s", name,
		           l->flat->g->values[n->in[0]].name,
		           l->m->ctx.parallel_mode == PM_DATA_PARALLEL ? "data_parallel keeps every Parameter whole on every "
		           "rank and splits the operator with the batch, so each rank would update its copy with its own "
		           "rows" : "the Parameter's first reader places it, and this operator's strategy splits x otherwise",
		           name, l->m->ctx.parallel_mode == PM_DATA_PARALLEL ? " (semi_auto_parallel, x's strategy all 1s)" : "");
	}
	return ok;
}
