/* lowered.c: a lowered program's values and operators: appending them
 * (lower.c, lower_pad.c, autodiff.c) and the facts of one value's piece. */
#include "lower_internal.h"

#include <string.h>

static void local_type(const Type *global, const TensorLayout *l, Type *out)
{
	*out = *global;
	for (int d = 0; d < global->rank; d++)
		out->dims[d] = layout_piece_len(l, global->dims, d);
}

int lower_value(Lowering *x, const char *name, const Type *global, const TensorLayout *layout)
{
	Lowered *l = x->l;
	LValue *v = ARENA_PUSH(x->a, l->values, l->nvalues, l->cap_values);
	memset(v, 0, sizeof *v);
	v->name = name;
	v->layout = *layout;
	memcpy(v->global, global->dims, sizeof v->global);
	local_type(global, layout, &v->type);
	v->param = -1;
	v->origin = l->nvalues - 1;
	v->reuse = -1;
	v->stage = x->stage;
	v->sent = -1;
	return l->nvalues - 1;
}

Type lower_global_type(const LValue *v)
{
	Type t = v->type;
	memcpy(t.dims, v->global, sizeof t.dims);
	return t;
}

LOp *lower_op(Lowering *x, OpKind op, int nin, const char *why)
{
	Lowered *l = x->l;
	LOp *o = ARENA_PUSH(x->a, l->ops, l->nops, l->cap_ops);
	memset(o, 0, sizeof *o);
	o->op = op;
	o->nin = nin;
	o->in = arena_alloc(x->a, sizeof(int) * (size_t)(nin ? nin : 1));
	o->node = -1;
	o->why = why;
	o->stage = o->from_stage = x->stage;
	return o;
}

void lowered_piece_start(const LValue *v, int64_t rank, int64_t *start)
{
	for (int d = 0; d < v->type.rank; d++)
		start[d] = layout_shard_index(&v->layout, rank, d) * v->type.dims[d];
}

/* The whole's diagonal first held to [-rows, cols] of the whole (the same
 * elements kept, no overflow), then moved; held again to where the piece
 * still keeps (Tril) or drops (Triu) the same elements, as MindSpore clips
 * it. A piece of whole rows and columns keeps the diagonal as written. */
int64_t tri_rank_diagonal(const LValue *y, OpKind op, int64_t diagonal, int64_t rank)
{
	int r = y->type.rank;
	int64_t start[MAX_DIMS], rows = y->type.dims[r - 2], cols = y->type.dims[r - 1];
	int64_t grows = y->global[r - 2], gcols = y->global[r - 1];
	if (rows == grows && cols == gcols)
		return diagonal;
	lowered_piece_start(y, rank, start);
	int64_t d = diagonal < -grows ? -grows : diagonal > gcols ? gcols : diagonal;
	d += start[r - 2] - start[r - 1];
	int64_t lo = op == OP_TRIU ? 1 - rows : -rows, hi = op == OP_TRIU ? cols : cols - 1;
	return d < lo ? lo : d > hi ? hi : d;
}

int64_t numel(const LValue *v)
{
	int64_t n = 1;
	for (int d = 0; d < v->type.rank; d++)
		n *= v->type.dims[d];
	return n;
}

int64_t value_bytes(const LValue *v)
{
	return numel(v) * dtype_bytes(v->type.dtype);
}

int64_t lowered_ranks(const Lowered *l)
{
	return l->device_num * l->stages;
}

bool may_stream(const Lowered *l, int v)
{
	const Value *gv = &l->flat->g->values[v];
	return v < l->nparams && !gv->type.is_param && !gv->literal;
}

int64_t step_rows(const Lowered *l, int v)
{
	const FlatGraph *f = l->flat;
	return f->step_rows && v < f->nentry ? f->step_rows[v] : 0;
}

bool pipelined(const Lowered *l)
{
	return l->stages > 1 && l->once;
}
