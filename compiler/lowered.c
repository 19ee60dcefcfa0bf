/* lowered.c: a lowered program's values and operators: appending them
 * (lower.c, lower_pad.c, autodiff.c), the facts of one value's piece, and
 * one rank's attributes of an operator (lowered_rank_attrs). */
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

/* `base.suffix`, or `base.suffix_2`, `_3`, ... when a value bears it already
 * (two PadFills of one value, a statistic's pieces on two dims): the
 * per-rank graphs define each name once. Scanned: these are rare. */
const char *lower_suffixed_name(Lowering *x, const char *base, const char *suffix)
{
	StrBuf b = {0};
	for (int k = 1;; k++) {
		b.len = 0;
		sb_printf(&b, "%s.%s", base, suffix);
		if (k > 1)
			sb_printf(&b, "_%d", k);
		bool taken = false;
		for (int v = 0; v < x->l->nvalues && !taken; v++)
			taken = x->l->values[v].name && strcmp(x->l->values[v].name, b.data) == 0;
		if (!taken)
			break;
	}
	const char *s = arena_strdup(x->a, b.data);
	sb_free(&b);
	return s;
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

void lowered_rank_attrs(const Lowered *l, const LOp *op, int64_t rank, Attrs *a, int64_t *members)
{
	*a = op->a;
	if (op->step && op->step->kind != STEP_SLICE) {
		a->group = members;
		int order[MAX_AXES], n = redist_step_order(op->step, order);
		a->ngroup = layout_group_ordered(&op->step->from, rank, order, n, members);
	} else if (op->step) {
		const LValue *x = &l->values[op->in[0]];
		redist_slice_bounds(op->step, rank, x->global, a->begin, a->end);
		for (int d = 0; d < x->type.rank; d++)   /* a whole dim cut unevenly: the last pieces padded */
			a->pad |= a->end[d] > x->type.dims[d];
		if (a->pad)
			a->present |= ATTR_BIT(ATTR_PAD);
	}
	if (op_is_constant(op->op)) {   /* a computed constant: the rank's piece of the whole, [begin, end) */
		const LValue *y = &l->values[op->result];
		int64_t start[MAX_DIMS];
		bool split = false;
		lowered_piece_start(y, rank, start);
		for (int d = 0; d < y->type.rank; d++) {
			a->begin[d] = (op->a.present & (ATTR_BIT(ATTR_BEGIN)) ? op->a.begin[d] : 0) + start[d];
			a->end[d] = a->begin[d] + y->type.dims[d];
			split |= y->type.dims[d] != y->global[d];
		}
		a->nbegin = a->nend = y->type.rank;
		if (split)   /* shown in step_parallel_end; an unsplit one is the whole, as written */
			a->present |= ATTR_BIT(ATTR_BEGIN) | ATTR_BIT(ATTR_END);
	}
	if (op_is_triangle(op->op) && (a->diagonal = tri_rank_diagonal(&l->values[op->result], op->op, a->diagonal, rank)))
		a->present |= ATTR_BIT(ATTR_DIAGONAL);   /* its piece's, as MindSpore's TrilInfo and TriuInfo replace it */
	if (op->table && (a->present & (ATTR_BIT(ATTR_OFFSET)))) {   /* a table's first row; logits' first class */
		const LValue *t = &l->values[op->op == OP_ONE_HOT ? op->result : op->in[0]];   /* OneHot's: its classes' */
		int64_t axis = op->a.axes[0];
		int d = op->op == OP_SPARSE_SOFTMAX_CE ? 1 : op->op == OP_ONE_HOT ? (int)(axis < 0 ? axis + t->type.rank : axis)
		        : op->op == OP_GATHER_D ? (int)(op->a.dim < 0 ? op->a.dim + t->type.rank : op->a.dim)
		        : gather_axis(&op->a, t->type.rank);
		a->offset = op->a.offset +   /* the one written (EmbeddingLookup's, a user's Gather offset), 0 if none */
		            layout_shard_index(op->table, rank, d) * t->type.dims[d];
	}
}
