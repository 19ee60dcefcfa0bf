/* ir.c: the operator and attribute tables, and lookups over a module. */
#include "shardc.h"

#include <stdlib.h>
#include <string.h>

#include "../runtime/shardc_rt.h"   /* the kernels' enums: a row naming a kernel the runtime lacks does not build */

/* The kernel column: its name as emitted, indexed at 0 times the runtime's
 * enum value, so that a name the runtime lacks is an error here. */
#define KERNEL_UNARY(x) (&("SC_U_" #x)[0 * SC_U_##x])
#define KERNEL_BINARY(x) (&("SC_" #x)[0 * SC_##x])
#define KERNEL_COMPARE(x) (&("SC_CMP_" #x)[0 * SC_CMP_##x])
#define KERNEL_LOGICAL(x) (&("SC_L_" #x)[0 * SC_L_##x])
#define KERNEL_NORM(x) (&("SC_N_" #x)[0 * SC_N_##x])
#define KERNEL_OWN NULL
#define OP_INFO(e, name, lo, hi, attrs, shape, rule, kernel, grad, nograd, prec, view) \
	[OP_##e] = {name, lo, hi, attrs, shape, rule, KERNEL_##kernel, grad, nograd, prec, view},
const OpInfo op_info[OP_COUNT] = {ALL_OPS(OP_INFO)};

/* What an elementwise row says its gradient reads must be what its kernel's
 * row of SC_UNARY_TABLE reads (X, Y or N): emit_adjoint.c passes that tensor. */
#define GR_N GR_NONE
#define RT_READS(name, t, fwd, grad) RT_READS_##name = GR_##t,
enum { SC_UNARY_TABLE(RT_READS) };
#define READS_UNARY(x) RT_READS_##x
#define CHECK_READS(e, name, lo, hi, attrs, shape, rule, kernel, grad, nograd, prec, view) \
	_Static_assert((int)grad == (int)READS_##kernel, name ": its grad column and its kernel's row disagree");
UNARY_OPS(CHECK_READS)
/* GeLU with approximate: "none" calls the erf form's kernel (op_kernel),
 * whose gradient must read what GeLU's row says too. */
#define ROW_GRAD(e, name, lo, hi, attrs, shape, rule, kernel, grad, ...) ROW_GRAD_##e = grad,
enum { UNARY_OPS(ROW_GRAD) };
_Static_assert((int)ROW_GRAD_GELU == (int)READS_UNARY(GELU_ERF),
               "GeLU: its grad column and its erf kernel's row disagree");
/* A normalizer's row: whether its kernel centers (SC_NORM_TABLE). */
#define RT_CENTERED(name, centered) RT_CENTERED_##name = centered,
enum { SC_NORM_TABLE(RT_CENTERED) };
#define CENTERED_NORM(x) RT_CENTERED_##x
#define NORM_CENTERED(e, name, lo, hi, attrs, shape, rule, kernel, ...) [OP_##e] = CENTERED_##kernel,
static const bool norm_centered_ops[OP_COUNT] = {NORM_OPS(NORM_CENTERED)};
/* x, gamma and maybe beta; a slice's piece takes the mean too when centered, then the variance */
#define CHECK_NORM_INPUTS(e, name, lo, hi, attrs, shape, rule, kernel, grad, nograd, prec, view) \
	_Static_assert((lo == 2 || lo == 3) && hi == lo + 1 + CENTERED_##kernel,                      \
	               name ": its min and max inputs and its kernel's statistics disagree");
NORM_OPS(CHECK_NORM_INPUTS)
#define ATTR_INFO(e, name, kind) [ATTR_##e] = {name, kind},
const AttrInfo attr_info[ATTR_COUNT] = {ATTR_TABLE(ATTR_INFO)};

bool op_from_name(const char *s, OpKind *out)
{
	/* MindSpore's other names of one operator: TensorAdd is Add's name before
	 * MindSpore 1.1, RealDiv the float division Div is, SparseGatherV2
	 * Gather with a sparse (row) gradient, which shardc computes dense as
	 * Gather's. They are read as the operator (the dumps name it), so fusion
	 * and planning see it too. */
	static const struct {
		const char *name;
		OpKind op;
	} aliases[] = {{"TensorAdd", OP_ADD}, {"RealDiv", OP_DIV}, {"SparseGatherV2", OP_GATHER},
	                {"ResizeBilinear", OP_RESIZE_BILINEAR}};
	for (size_t i = 0; i < sizeof aliases / sizeof *aliases; i++)
		if (strcmp(aliases[i].name, s) == 0) {
			*out = aliases[i].op;
			return true;
		}
	for (int k = 0; k < OP_COUNT; k++)
		if (op_in_language((OpKind)k) && strcmp(op_info[k].name, s) == 0) {
			*out = (OpKind)k;
			return true;
		}
	return false;
}

const char *op_kernel(OpKind op, const Attrs *a)
{
	if (op == OP_GELU && a->gelu_erf)
		return KERNEL_UNARY(GELU_ERF);
	return op_info[op].kernel;
}

double op_kernel_param(OpKind op, const Attrs *a, DType t)
{
	double p = op == OP_LEAKY_RELU ? a->alpha : op == OP_HSHRINK || op == OP_SOFT_SHRINK ? a->lambd : 0;
	return dtype_round(dtype_round(p, DT_F32), t);
}

bool op_is_comm(OpKind k)
{
	return k == OP_ALL_REDUCE || k == OP_ALL_GATHER || k == OP_REDUCE_SCATTER || k == OP_ALL_TO_ALL;
}

bool op_slices(OpKind k)
{
	return k == OP_STRIDED_SLICE || k == OP_SPLIT || k == OP_SPLIT_V || k == OP_SLICE;
}

/* The rows of ops.h's elementwise sub-tables (arrays, not switches: a new row
 * is in them by construction). */
#define IN_TABLE(e, ...) [OP_##e] = true,
static const bool unary_ops[OP_COUNT] = {UNARY_OPS(IN_TABLE)};
static const bool binary_ops[OP_COUNT] = {BINARY_OPS(IN_TABLE)};
static const bool compare_ops[OP_COUNT] = {COMPARE_OPS(IN_TABLE)};
static const bool fused_ops[OP_COUNT] = {FUSED_OPS(IN_TABLE)};
static const bool language_ops[OP_COUNT] = {OP_TABLE(IN_TABLE)};
static const bool norm_ops[OP_COUNT] = {NORM_OPS(IN_TABLE)};
#undef IN_TABLE

bool op_in_language(OpKind k)
{
	return language_ops[k];
}

bool op_is_fused(OpKind k)
{
	return fused_ops[k];
}

bool op_is_unary(OpKind k)
{
	return unary_ops[k];
}

bool op_is_binary(OpKind k)
{
	return binary_ops[k];
}

bool op_is_compare(OpKind k)
{
	return compare_ops[k];
}

bool op_is_norm(OpKind k)
{
	return norm_ops[k];
}

bool op_is_segment(OpKind k)
{
	return k >= OP_UNSORTED_SEGMENT_SUM && k <= OP_UNSORTED_SEGMENT_PROD;   /* consecutive rows (ops.h) */
}

bool op_is_tensor_scatter(OpKind k)
{
	return k >= OP_TENSOR_SCATTER_UPDATE && k <= OP_TENSOR_SCATTER_MIN;   /* consecutive rows (ops.h) */
}

bool op_writes_state(OpKind k)
{
	return k >= OP_SCATTER_UPDATE && k <= OP_ASSIGN_SUB;   /* consecutive rows (ops.h) */
}

/* The rows that take no operand: what they compute comes from their
 * attributes alone (docs/operators.md, Computed constants). */
bool op_is_constant(OpKind k)
{
	return op_info[k].max_inputs == 0;
}

bool op_is_triangle(OpKind k)
{
	return k == OP_TRIL || k == OP_TRIU;
}

bool norm_centered(OpKind k)
{
	return norm_centered_ops[k];
}

void norm_begin(OpKind op, const Attrs *a, int x_rank, int gamma_rank, int64_t *norm, int64_t *params)
{
	if (op_info[op].attrs & (ATTR_BIT(ATTR_BEGIN_NORM_AXIS))) {
		*norm = a->begin_norm_axis;
		*params = a->begin_params_axis;
	} else
		*norm = *params = x_rank - gamma_rank;
}

bool op_input_has_grad(OpKind op, int k, DType in, DType out)
{
	return !(op_info[op].nograd & (1u << k)) && dtype_is_float(in) && dtype_is_float(out);
}

const char *parallel_mode_name(ParallelMode m)
{
	static const char *names[] = {"stand_alone", "data_parallel", "semi_auto_parallel", "auto_parallel"};
	return names[m];
}

const char *search_mode_name(SearchMode m)
{
	return m == SM_PROPAGATION ? "sharding_propagation" : "recursive_programming";
}

Graph *module_entry(const Module *m)
{
	return m->ngraphs ? m->graphs[m->ngraphs - 1] : NULL;
}

Graph *module_graph(const Module *m, const char *name)
{
	for (int i = 0; i < m->ngraphs; i++)
		if (strcmp(m->graphs[i]->name, name) == 0)
			return m->graphs[i];
	return NULL;
}

const LayoutDecl *module_layout(const Module *m, const char *name)
{
	for (int i = 0; i < m->nlayouts; i++)
		if (strcmp(m->layouts[i]->name, name) == 0)
			return m->layouts[i];
	return NULL;
}

int graph_value(const Graph *g, const char *name)
{
	for (int i = 0; i < g->nvalues; i++)
		if (strcmp(g->values[i].name, name) == 0)
			return i;
	return -1;
}

static bool is_index_type(DType t)
{
	return t == DT_I32 || t == DT_I64;
}

/* Operators whose result holds some of their input's elements unchanged. */
static bool keeps_elements(const Node *n)
{
	return op_info[n->op].view == V_VIEW || n->op == OP_TRANSPOSE || op_slices(n->op) || n->op == OP_CONCAT ||
	       n->op == OP_STACK || op_is_comm(n->op);
}

int64_t index_bound(const Graph *g, int v, int *user)
{
	int64_t bound = -1;
	*user = -1;
	if (!is_index_type(g->values[v].type.dtype))
		return -1;
	bool *seen = xcalloc((size_t)g->nvalues, sizeof(bool));
	int *stack = xmalloc(sizeof(int) * (size_t)g->nvalues), top = 0;
	seen[v] = true;
	stack[top++] = v;
	while (top) {
		int u = stack[--top];
		for (int i = 0; i < g->nnodes; i++) {
			const Node *n = &g->nodes[i];
			for (int k = 0; k < n->nin; k++) {
				if (n->in[k] != u)
					continue;
				/* a per-rank graph's slice (its offset): the whole table's rows are not known here */
				bool slice = n->a.present & (ATTR_BIT(ATTR_OFFSET));
				int64_t b = -1;
				const Type *t = &g->values[n->in[0]].type;
				if (n->op == OP_GATHER && k == 1 && !slice)
					b = t->dims[gather_axis(&n->a, t->rank)];   /* the table's entries along the axis */
				else if (n->op == OP_SPARSE_SOFTMAX_CE && k == 1 && !slice)
					b = t->dims[1];   /* the classes */
				else if (n->op == OP_GATHER_D && k == 1 && t->rank > 0 && !slice)
					b = t->dims[n->a.dim < 0 ? n->a.dim + t->rank : n->a.dim];   /* x's entries along dim */
				else if ((keeps_elements(n) || (n->op == OP_CAST && is_index_type(g->values[n->result].type.dtype))) &&
				         !seen[n->result]) {
					seen[n->result] = true;
					stack[top++] = n->result;
				}
				if (b >= 0 && (bound < 0 || b < bound))
					bound = b, *user = i;
			}
		}
	}
	free(seen);
	free(stack);
	return bound;
}

void index_bound_text(StrBuf *b, const Graph *g, int user, int64_t bound)
{
	const Node *n = &g->nodes[user];
	int axis = n->op == OP_GATHER ? gather_axis(&n->a, g->values[n->in[0]].type.rank) : 0;
	if (n->op == OP_GATHER && axis == 0)
		sb_printf(b, "they index Gather %%%s's table %%%s, which has %lld rows", g->values[n->result].name,
		          g->values[n->in[0]].name, (long long)bound);
	else if (n->op == OP_GATHER)
		sb_printf(b, "they index Gather %%%s's table %%%s along its axis %d, of %lld entries",
		          g->values[n->result].name, g->values[n->in[0]].name, axis, (long long)bound);
	else if (n->op == OP_GATHER_D)
		sb_printf(b, "they index GatherD %%%s's x %%%s along its dim %lld, of %lld entries", g->values[n->result].name,
		          g->values[n->in[0]].name, (long long)n->a.dim, (long long)bound);
	else
		sb_printf(b, "they are labels of %s %%%s, whose logits have %lld classes", op_info[n->op].name,
		          g->values[n->result].name, (long long)bound);
}

int reduce_axes(const Attrs *a, int rank, int64_t *axes)
{
	if (!a->has_axis || a->naxes == 0) {
		for (int d = 0; d < rank; d++)
			axes[d] = d;
		return rank;
	}
	for (int k = 0; k < a->naxes; k++)
		axes[k] = a->axes[k] < 0 ? a->axes[k] + rank : a->axes[k];
	return a->naxes;
}

int pad_axis(const Attrs *a, int rank)
{
	int64_t axis = a->has_axis && a->naxes ? a->axes[0] : -1;
	return (int)(axis < 0 ? axis + rank : axis);
}

int gather_axis(const Attrs *a, int rank)
{
	int64_t axis = a->has_axis && a->naxes ? a->axes[0] : 0;
	return (int)(axis < 0 ? axis + rank : axis);
}

bool param_is_moving_stat(const Graph *g, int v)
{
	if (v >= g->nparams || !g->values[v].type.is_param)
		return false;
	for (int i = 0; i < g->nnodes; i++)
		if ((g->nodes[i].op == OP_BATCH_NORM && (g->nodes[i].in[3] == v || g->nodes[i].in[4] == v)) ||
		    (op_writes_state(g->nodes[i].op) && g->nodes[i].in[0] == v))   /* ScatterUpdate .. AssignSub's x */
			return true;
	return false;
}
