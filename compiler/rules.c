/* rules.c: what each operator's strategy means (docs/operators.md).
 *
 * Every computing operator is described by its iteration space, the "op dims"
 * (MatMul's i, k, j), and by which op dim each dim of each input and of the
 * output follows. A strategy splits op dims; a tensor dim is split exactly as
 * its op dim is. That one description gives everything the later passes need:
 * the operator's device matrix (MindSpore's: the op dims' splits in order, the
 * repeated axis appended last), the layout each input must arrive in, the
 * output's layout, and its partial results (an op dim split but absent from
 * the output leaves partial sums, maxima, minima or means over its device axes).
 * Reshape has no op dims: it has no strategy of its own (lower.c carries its
 * input's split over when it can). The checks here report at the operator's
 * strategy, say what is wrong and show a strategy that would be right. */
#include "shardc.h"
#include "uneven.h"
#include "slice.h"
#include "conv.h"
#include "segment.h"
#include "scatter_nd.h"
#include "scatter_state.h"
#include "pad_v3.h"
#include "resize.h"
#include "int_math.h"
#include "kldiv_loss.h"
#include "embedding_lookup.h"
#include "rules_internal.h"

#include <string.h>

#define ERR(d, src, span, ...) diag_error((d), (src), (span), __VA_ARGS__)

static const Type *operand(const Graph *g, const Node *n, int k)
{
	return &g->values[n->in[k]].type;
}

static int64_t norm(int64_t axis, int rank)
{
	return axis < 0 ? axis + rank : axis;
}

/* A cross-entropy's piece on a slice of the classes (lowering's, a rank's
 * program read back): inputs 2 and 3 the rows' maxima and sums (n, 1), its
 * result summed over the slices of the classes. */
static void row_stats_inputs(OpDims *od)
{
	for (int k = 2; k < 4; k++) {
		od->in_rank[k] = 2;
		od->in_dim[k][0] = 0;
		od->in_dim[k][1] = -1;
	}
	od->reduced = 1u << 1;
	od->reduce_op = REDUCE_SUM_OP;
}

/* Op dims = the output of a numpy broadcast; each input's dims line up from
 * the right, and a dim of size 1 against a larger one is broadcast: it maps to
 * no op dim, so it is never split. */
static void broadcast_dims(const Graph *g, const Node *n, OpDims *od, int rank, const int64_t *dims)
{
	for (int d = 0; d < rank; d++)
		add_dim(od, dims[d], NULL);
	for (int k = 0; k < n->nin && k < MAX_RULE_INPUTS; k++) {   /* Lerp's three */
		const Type *t = operand(g, n, k);
		od->in_rank[k] = t->rank;
		for (int d = 0; d < t->rank; d++) {
			int o = rank - t->rank + d;
			od->in_dim[k][d] = (int8_t)(t->dims[d] == dims[o] ? o : -1);
		}
	}
}

static void matmul_dims(const Graph *g, const Node *n, OpDims *od)
{
	const Type *a = operand(g, n, 0), *b = operand(g, n, 1), *out = &g->values[n->result].type;
	int nb = out->rank - 2;   /* BatchMatMul's batch dims, 0 for MatMul */
	for (int d = 0; d < nb; d++)
		add_dim(od, out->dims[d], NULL);
	int i = add_dim(od, out->dims[nb], "i");
	int k = add_dim(od, a->dims[a->rank - (n->a.transpose_a ? 2 : 1)], "k");
	int j = add_dim(od, out->dims[nb + 1], "j");
	const Type *in[2] = {a, b};
	for (int x = 0; x < 2; x++) {
		const Type *t = in[x];
		od->in_rank[x] = t->rank;
		for (int d = 0; d < t->rank - 2; d++) {
			int o = nb - (t->rank - 2) + d;
			od->in_dim[x][d] = (int8_t)(t->dims[d] == out->dims[o] ? o : -1);
		}
		bool tr = x == 0 ? n->a.transpose_a : n->a.transpose_b;
		int rows = x == 0 ? i : k, cols = x == 0 ? k : j;
		od->in_dim[x][t->rank - 2] = (int8_t)(tr ? cols : rows);
		od->in_dim[x][t->rank - 1] = (int8_t)(tr ? rows : cols);
	}
	od->out_rank = out->rank;
	for (int d = 0; d < nb; d++)
		od->out_dim[d] = (int8_t)d;
	od->out_dim[nb] = (int8_t)i;
	od->out_dim[nb + 1] = (int8_t)j;
	od->reduced = 1u << k;
	od->reduce_op = REDUCE_SUM_OP;
	od->batch = nb ? 0 : i;
}

static void reduce_dims(const Graph *g, const Node *n, OpDims *od)
{
	const Type *x = operand(g, n, 0);
	const Attrs *a = &n->a;
	for (int d = 0; d < x->rank; d++)
		add_dim(od, x->dims[d], NULL);
	identity_input(od, 0, x->rank);
	if (!a->has_axis || (a->axis_is_tuple && a->naxes == 0))
		od->reduced = x->rank ? (1u << x->rank) - 1 : 0;
	for (int i = 0; a->has_axis && i < a->naxes; i++)
		od->reduced |= 1u << norm(a->axes[i], x->rank);
	od->out_rank = 0;
	for (int d = 0; d < x->rank; d++)
		if (!(od->reduced & (1u << d)))
			od->out_dim[od->out_rank++] = (int8_t)d;
		else if (a->keep_dims)
			od->out_dim[od->out_rank++] = -1;
	/* ReduceAll and ReduceAny: a Bool's minimum and maximum */
	od->reduce_op = n->op == OP_REDUCE_MAX || n->op == OP_REDUCE_ANY   ? REDUCE_MAX_OP
	              : n->op == OP_REDUCE_MIN || n->op == OP_REDUCE_ALL ? REDUCE_MIN_OP
	              : n->op == OP_REDUCE_PROD                          ? REDUCE_PROD_OP
	              : n->op == OP_REDUCE_MEAN                          ? REDUCE_MEAN_OP : REDUCE_SUM_OP;
}

bool op_dims(const Graph *g, const Node *n, OpDims *od)
{
	memset(od, 0, sizeof *od);
	od->batch = 0;
	od->nin = n->nin;
	const Type *x = n->nin ? operand(g, n, 0) : NULL, *out = &g->values[n->result].type;
	switch (n->op < OP_COUNT ? op_info[n->op].rule : R_OWN) {
	case R_ELEMWISE:   /* every input of x's shape (shape.c): Select's three */
		for (int d = 0; d < x->rank; d++)
			add_dim(od, x->dims[d], NULL);
		for (int k = 0; k < n->nin; k++)
			identity_input(od, k, x->rank);
		identity_output(od, out->rank);
		return true;
	case R_BROADCAST:
		broadcast_dims(g, n, od, out->rank, out->dims);
		identity_output(od, out->rank);
		return true;
	case R_MATMUL:
		matmul_dims(g, n, od);
		return true;
	case R_REDUCE:
		reduce_dims(g, n, od);
		return true;
	case R_OWN:
		break;
	}
	switch (n->op) {
	OP_CASES(UNARY_OPS) OP_CASES(BINARY_OPS) OP_CASES(COMPARE_OPS) OP_CASES(LOGICAL_OPS) case OP_IS_FINITE: case OP_LERP:
	case OP_IDENTITY: case OP_MASKED_FILL: case OP_DROPOUT_DO_MASK: case OP_ASSIGN_ADD: case OP_ASSIGN_SUB:
	case OP_CAST: case OP_SELECT: case OP_DROPOUT: case OP_PAD_FILL: case OP_MATMUL: case OP_BATCH_MATMUL: case OP_REDUCE_SUM:
	OP_CASES(INT_MATH_OPS)
	case OP_TRIL: case OP_TRIU:   /* any dim split, each rank its piece's diagonal (lowered_rank_attrs) */
	case OP_REDUCE_MEAN: case OP_REDUCE_MAX: case OP_REDUCE_MIN: case OP_REDUCE_PROD: case OP_REDUCE_ALL: case OP_REDUCE_ANY:
		die("%s has its rule class", op_info[n->op].name);
	case OP_MSE_LOSS: case OP_L1_LOSS: case OP_L2_LOSS: case OP_SQUARE_SUM_ALL:
		broadcast_dims(g, n, od, x->rank, x->dims);   /* the two shapes are equal (shape.c) */
		od->reduced = x->rank ? (1u << x->rank) - 1 : 0;
		od->reduce_op = n->op == OP_L2_LOSS || n->op == OP_SQUARE_SUM_ALL ? REDUCE_SUM_OP   /* partial sums */
		                                                                  : REDUCE_MEAN_OP;
		return true;
	case OP_BIAS_ADD:
		for (int d = 0; d < x->rank; d++)
			add_dim(od, x->dims[d], NULL);
		identity_input(od, 0, x->rank);
		od->in_rank[1] = 1;
		od->in_dim[1][0] = (int8_t)(x->rank - 1);
		break;
	case OP_PRELU: {
		/* x's dims, any of them split (MindSpore's PReLUInfo: the device
		 * matrix is x's strategy); a weight per channel follows dim 1, so
		 * it is split with x's channels, and one weight for all (1,) is
		 * whole on every rank. */
		const Type *w = operand(g, n, 1);
		for (int d = 0; d < x->rank; d++)
			add_dim(od, x->dims[d], d == 1 ? "the channels" : NULL);
		identity_input(od, 0, x->rank);
		od->in_rank[1] = 1;
		od->in_dim[1][0] = (int8_t)(x->rank >= 2 && w->dims[0] == x->dims[1] ? 1 : -1);
		break;
	}
	case OP_CONV2D: case OP_CONV2D_TRANSPOSE: case OP_MAX_POOL: case OP_AVG_POOL:
		window_dims(operand(g, n, 0), &g->values[n->result].type, n, od);
		return true;
	case OP_ROTARY:   /* x's dims; cos and sin follow those they do not broadcast over (shape.c) */
		for (int d = 0; d < x->rank; d++)
			add_dim(od, x->dims[d], NULL);
		identity_input(od, 0, x->rank);
		for (int k = 1; k < 3; k++) {
			const Type *t = operand(g, n, k);
			od->in_rank[k] = t->rank;
			for (int d = 0; d < t->rank; d++)
				od->in_dim[k][d] = (int8_t)(t->dims[d] == x->dims[d] ? d : -1);
		}
		keep_whole(od, x->rank - 1, "the head dim, whose halves (or pairs) the rotation mixes");
		break;
	case OP_FLASH_ATTENTION: {   /* op dims B, N, S, S_kv, D; q and the result's dims and k's and v's by layout */
		const Type *k = operand(g, n, 1);
		static const int8_t qd[3][4] = {{0, 1, 2, 4}, {0, 2, 1, 4}, {0, 2, 1}}, kd[3][4] = {{0, 1, 3, 4}, {0, 3, 1, 4},
		                                                                                  {0, 3, 1}};
		static const char *const names[5] = {"B", "N", "S", "S_kv", "D"};
		int64_t l = n->a.input_layout, fd[6], rank = l == FA_BSH ? 3 : 4, heads = l == FA_BNSD ? 1 : 2;
		flash_dims(&n->a, x, k, fd);
		for (int d = 0; d < 5; d++)   /* BSH's D has no dim of its own: its hidden dim (N, D) follows N */
			add_dim(od, fd[d], names[d]);
		for (int j = 0; j < 3; j++) {
			od->in_rank[j] = (int)rank;
			memcpy(od->in_dim[j], j ? kd[l] : qd[l], sizeof qd[l]);
		}
		if (fd[5] != fd[1])   /* N_kv < N: each key head serves N / N_kv query heads */
			for (int j = 1; j < 3; j++)   /* one key head (MQA) on every rank, as a broadcast dim */
				od->in_dim[j][heads] = (int8_t)(fd[5] == 1 ? -1 : 1);
		/* GQA: the groups split with the heads; BSH: whole heads of its hidden dim */
		od->also[1] = fd[5] > 1 && fd[5] < fd[1] ? fd[5] : l == FA_BSH ? fd[1] : 0;
		if (n->nin == 4) {   /* the mask (S, S_kv) or (B or 1, N or 1, S, S_kv): its dims of size 1 broadcast */
			const Type *m = operand(g, n, 3);
			od->in_rank[3] = m->rank;
			for (int d = 0; d < m->rank; d++) {
				int o = d + 4 - m->rank;
				od->in_dim[3][d] = (int8_t)(o < 2 && m->dims[d] != fd[o] ? -1 : o);
			}
		}
		keep_whole(od, 2, "the queries' sequence, whole in this version");
		keep_whole(od, 3, "the keys' sequence, over which each query's softmax runs");
		keep_whole(od, 4, "the head dim, which q k^T sums over");
		od->out_rank = (int)rank;
		memcpy(od->out_dim, qd[l], sizeof qd[l]);
		return true;
	}
	case OP_SOFTMAX: case OP_LOG_SOFTMAX:
		for (int d = 0; d < x->rank; d++)
			add_dim(od, x->dims[d], NULL);
		identity_input(od, 0, x->rank);
		if (x->rank) {   /* split: the row maxima and sums completed; backward, sum(dy * y) or log's */
			od->normalized = 1u << norm(n->a.has_axis ? n->a.axes[0] : -1, x->rank);
			od->nstats_fwd = 2;
			od->nstats_bwd = 1;
		}
		break;
	case OP_CUMSUM: case OP_CUMPROD: {
		/* x's dims, any of them split. The scanned axis split (MindSpore's
		 * CumSumInfo refuses it): each rank scans its slice, then adds (or
		 * multiplies by) the totals of the slices before it, gathered over
		 * the ranks that split the axis (lower.c), so its slices are even.
		 * A rank's piece (a program read back) takes those totals, the
		 * axis whole. */
		int axis = (int)norm(n->a.axes[0], x->rank);
		for (int d = 0; d < x->rank; d++)
			add_dim(od, x->dims[d], d == axis ? "the scanned axis" : NULL);
		identity_input(od, 0, x->rank);
		od->batch = axis == 0 ? (x->rank > 1 ? 1 : -1) : 0;   /* the default leaves the scanned axis whole */
		if (n->nin == 2) {
			identity_input(od, 1, x->rank);
			od->in_dim[1][axis] = -1;
			break;
		}
		od->also[axis] = x->dims[axis];
		od->whole_why[axis] = "each rank scans an even slice, then takes the totals of the slices before it";
		od->normalized = 1u << axis;
		od->nstats_fwd = 1;   /* the slices' totals gathered; backward, their gradients */
		od->nstats_bwd = 1;
		break;
	}
	OP_CASES(NORM_OPS) {
		for (int d = 0; d < x->rank; d++)
			add_dim(od, x->dims[d], NULL);
		identity_input(od, 0, x->rank);
		int64_t begin, params;
		norm_begin(n->op, &n->a, x->rank, operand(g, n, 1)->rank, &begin, &params);
		begin = norm(begin, x->rank);
		params = norm(params, x->rank);
		for (int k = 1; k < op_info[n->op].min_inputs; k++) {   /* gamma, beta */
			od->in_rank[k] = x->rank - (int)params;
			for (int d = 0; d < od->in_rank[k]; d++)
				od->in_dim[k][d] = (int8_t)(params + d);
		}
		for (int d = (int)begin; d < x->rank; d++) {
			if (params != begin)   /* gamma would cover rows too: not split (lower.c) */
				keep_whole(od, d, "a normalized dim, with begin_params_axis other than begin_norm_axis");
			od->normalized |= params == begin ? 1u << d : 0;
		}
		if (od->normalized) {   /* the rows' statistics; backward, their gradients (and the mean's again) */
			od->nstats_fwd = norm_centered(n->op) ? 2 : 1;
			od->nstats_bwd = norm_centered(n->op) ? 3 : 1;
		}
		break;
	}
	case OP_L2_NORMALIZE: {
		/* x's dims, any of them split. MindSpore's L2NormalizeInfo keeps the
		 * axis whole; here a split axis has its sums of squares completed
		 * (lower.c, as RmsNorm's), and lowering's piece on a slice of it
		 * takes them as input 1 (the axis 1). */
		int64_t axis = norm(n->a.has_axis ? n->a.axes[0] : 0, x->rank);
		for (int d = 0; d < x->rank; d++)
			add_dim(od, x->dims[d], NULL);
		identity_input(od, 0, x->rank);
		if (n->nin == 2) {
			identity_input(od, 1, x->rank);
			od->in_dim[1][axis] = -1;
		} else {   /* split: the sums of squares completed; backward, the gradient of the sums */
			od->normalized = 1u << axis;
			od->nstats_fwd = 1;
			od->nstats_bwd = 1;
		}
		break;
	}
	case OP_GATHER_ND:   /* scatter_nd.c: the indices split, x whole */
		gather_nd_dims(x, operand(g, n, 1), od);
		return true;
	OP_CASES(TENSOR_SCATTER_OPS)   /* scatter_nd.c: x split (Update: its trailing dims), updates as x */
		tensor_scatter_dims(n->op, x, operand(g, n, 1), od);
		return true;
	case OP_SCATTER_UPDATE: case OP_SCATTER_ADD: case OP_SCATTER_SUB: case OP_SCATTER_MUL: case OP_SCATTER_DIV:
	case OP_SCATTER_MAX: case OP_SCATTER_MIN: case OP_SCATTER_ND_UPDATE: case OP_SCATTER_ND_ADD: case OP_SCATTER_ND_SUB:
		state_scatter_dims(n->op, x, operand(g, n, 1), od);   /* scatter_state.c */
		return true;
	OP_CASES(INPLACE_OPS)
		inplace_dims(x, operand(g, n, 1), od);   /* scatter_state.c */
		return true;
	case OP_BATCH_NORM: {
		/* x's dims, any of them split, as MindSpore's BatchNormInfo: scale,
		 * bias, mean and variance follow C. In training a split N, H or W has
		 * the batch's mean and variance completed over the ranks splitting
		 * them (lower.c, as the centered normalizers'; SyncBatchNorm's sums),
		 * and lowering's piece takes them as inputs 5 and 6 (C alone). */
		for (int d = 0; d < x->rank; d++)
			add_dim(od, x->dims[d], NULL);
		identity_input(od, 0, x->rank);
		for (int k = 1; k < n->nin; k++) {
			identity_input(od, k, k < 5 ? 1 : x->rank);
			for (int d = 0; d < od->in_rank[k]; d++)
				od->in_dim[k][d] = (int8_t)(k < 5 || d == 1 ? 1 : -1);
		}
		if (n->a.is_training && n->nin == 5) {
			od->normalized = x->rank == 4 ? 1u << 0 | 1u << 2 | 1u << 3 : 1u << 0;
			od->nstats_fwd = 2;
			od->nstats_bwd = 3;
		}
		break;
	}
	OP_CASES(SEGMENT_OPS)   /* segment.c: the ids' dims leave partial segments */
		segment_dims(x, operand(g, n, 1), n, od);
		return true;
	case OP_KL_DIV_LOSS:   /* kldiv_loss.c: x's dims, y as x; the result as x or a partial sum */
		kldiv_loss_dims(x, n, od);
		return true;
	case OP_PAD_V3:   /* pad_v3.c: x's dims, a padded one whole; the result as x */
		pad_v3_dims(x, n, od);
		break;
	case OP_RESIZE_NEAREST: case OP_RESIZE_BILINEAR:   /* resize.c: N and C split, H and W whole; the result as x */
		resize_dims(x, n, od);
		break;
	case OP_REVERSE_V2: case OP_TRACE_V2:   /* int_math.c: the reversed dims, the diagonal's, whole */
		(n->op == OP_REVERSE_V2 ? reverse_v2_dims : trace_v2_dims)(x, n, od);
		return true;
	case OP_GATHER_D: {
		/* index's dims (the result's), then x's dim (v), as MindSpore's
		 * GatherDInfo: x and index split alike, but the index never along
		 * dim (each entry may name any of x's), nor along a dim where it is
		 * shorter than x (the pieces would not line up). x split along dim:
		 * each rank reads its slice (its offset, lower.c), zeros for the
		 * others' entries, a partial sum over v's axes completed by an
		 * AllReduce, as Gather's split table. */
		const Type *idx = operand(g, n, 1);
		int dim = (int)norm(n->a.dim, x->rank);
		for (int d = 0; d < idx->rank; d++)
			add_dim(od, idx->dims[d], NULL);
		identity_input(od, 0, x->rank);
		identity_input(od, 1, idx->rank);
		od->in_dim[0][dim] = (int8_t)add_dim(od, x->dims[dim], "x's dim along dim");
		od->reduced = 1u << od->in_dim[0][dim];
		od->reduce_op = REDUCE_SUM_OP;
		keep_whole(od, dim, "GatherD's dim of the index, each entry of which may name any of x's; x's may be split");
		for (int d = 0; d < idx->rank; d++)
			if (d != dim && idx->dims[d] != x->dims[d])
				keep_whole(od, d, "a dim where the index is shorter than x, whose pieces would not line up");
		od->batch = dim == 0 ? (idx->rank > 1 ? 1 : -1) : 0;
		break;
	}
	case OP_TRANSPOSE:
		for (int d = 0; d < x->rank; d++)
			add_dim(od, x->dims[d], NULL);
		identity_input(od, 0, x->rank);
		od->out_rank = x->rank;
		for (int d = 0; d < x->rank; d++)
			od->out_dim[d] = (int8_t)n->a.perm[d];
		return true;
	case OP_FLATTEN:
		for (int d = 0; d < x->rank; d++)
			add_dim(od, x->dims[d], NULL);
		identity_input(od, 0, x->rank);
		/* The flattened dim 1 takes dim 1's split as its most significant
		 * part; a split of a later dim would interleave, so they stay whole. */
		for (int d = 2; d < x->rank; d++)
			keep_whole(od, d, "a dim Flatten folds into dim 1 after the first");
		od->out_rank = 2;
		od->out_dim[0] = 0;
		od->out_dim[1] = (int8_t)(x->rank > 1 ? 1 : -1);
		return true;
	case OP_BROADCAST_TO:   /* its one input as a broadcasting operator's */
		broadcast_dims(g, n, od, out->rank, out->dims);
		identity_output(od, out->rank);
		return true;
	case OP_TILE: {
		/* The result's dims; x's dim (lined up from the right) follows its
		 * own where it is not repeated. Where it is, x is whole on every
		 * rank and a split of the result cuts the repeats: each rank makes
		 * whole tiles (MindSpore's TileInfo), so the split divides the
		 * multiple. The strategy names the result's dims. */
		const Attrs *a = &n->a;
		for (int d = 0; d < out->rank; d++)
			add_dim(od, out->dims[d], NULL);
		od->in_rank[0] = x->rank;
		for (int j = 0; j < x->rank; j++) {
			int d = j + out->rank - x->rank, m = d - (out->rank - a->nshape);
			int64_t mult = m >= 0 ? a->shape[m] : 1;
			od->in_dim[0][j] = (int8_t)(mult == 1 ? d : -1);
		}
		for (int d = 0; d < out->rank; d++) {
			int m = d - (out->rank - a->nshape);
			if (m >= 0 && a->shape[m] > 1) {
				od->also[d] = a->shape[m];
				od->whole_why[d] = "x's repeats along it: each rank makes whole tiles";
			}
		}
		od->strategy_out = 1u << 0;
		break;
	}
	case OP_ONE_HOT: {
		/* The result's dims; the indices' follow them but the classes'
		 * (axis). A split of the classes gives each rank its slice of them
		 * (lowering passes its first class, lower.c): evenly, as MindSpore's
		 * OneHotInfo. The indices' strategy names the result's dims. */
		int axis = (int)norm(n->a.has_axis ? n->a.axes[0] : -1, out->rank);
		for (int d = 0; d < out->rank; d++)
			add_dim(od, out->dims[d], d == axis ? "the classes' dim" : NULL);
		od->in_rank[0] = x->rank;
		for (int j = 0; j < x->rank; j++)
			od->in_dim[0][j] = (int8_t)(j < axis ? j : j + 1);
		od->also[axis] = out->dims[axis];
		od->whole_why[axis] = "each rank takes an even slice of the classes";
		od->batch = axis == 0 ? (out->rank > 1 ? 1 : -1) : 0;
		od->strategy_out = 1u << 0;
		break;
	}
	case OP_EXPAND_DIMS: case OP_SQUEEZE: {
		/* Dims of size 1 added or dropped: the result's other dims are the
		 * input's in order; one of size 1 follows none (no split has it). */
		for (int d = 0; d < x->rank; d++)
			add_dim(od, x->dims[d], NULL);
		identity_input(od, 0, x->rank);
		od->out_rank = out->rank;
		for (int d = 0, i = 0; d < out->rank; d++) {
			while (out->dims[d] > 1 && x->dims[i] == 1)
				i++;
			od->out_dim[d] = (int8_t)(out->dims[d] > 1 ? i++ : -1);
		}
		return true;
	}
	case OP_GATHER: case OP_EMBEDDING_LOOKUP: {   /* EmbeddingLookup: Gather's on axis 0 (embedding_lookup.c) */
		/* The index dims come first, then the table's in order (the one
		 * gathered along is v; the last, when another, h), as MindSpore's
		 * device matrix for Gather. The ids' dims take the slow axes and
		 * the gathered dim's the faster ones, as Megatron's
		 * VocabParallelEmbedding: each rank looks its ids up in its slice
		 * of v (zeros for the others) and one AllReduce over v's axes
		 * completes the output, which is then split on the ids' dims over
		 * the same axes as a consumer's batch-first strategy splits them
		 * (an output with v's axes slowest would need AllToAlls). */
		const Type *idx = operand(g, n, 1);
		int axis = gather_axis(&n->a, x->rank), v = idx->rank + axis;
		od->in_rank[1] = idx->rank;
		for (int d = 0; d < idx->rank; d++)
			od->in_dim[1][d] = (int8_t)add_dim(od, idx->dims[d], NULL);
		od->in_rank[0] = x->rank;
		for (int d = 0; d < x->rank; d++)
			od->in_dim[0][d] = (int8_t)add_dim(od, x->dims[d], d == axis ? "v" : d == x->rank - 1 ? "h" : NULL);
		od->out_rank = 0;
		for (int d = 0; d < x->rank; d++)
			for (int j = 0; j < (d == axis ? idx->rank : 1); j++)
				od->out_dim[od->out_rank++] = (int8_t)(d == axis ? j : idx->rank + d);
		od->reduced = 1u << v;   /* a table split along v: each shard fills its entries, zeros elsewhere */
		od->reduce_op = REDUCE_SUM_OP;
		od->batch = idx->rank ? 0 : -1;   /* MindSpore's batch strategy splits the ids' first dim */
		return true;
	}
	case OP_ADD_N: case OP_STACK: {   /* one strategy for all (MindSpore's AddNInfo, StackInfo); Stack's new dim: none */
		int axis = n->op == OP_STACK ? (int)norm(n->a.has_axis ? n->a.axes[0] : 0, out->rank) : out->rank;
		for (int d = 0; d < x->rank; d++)
			add_dim(od, x->dims[d], NULL);
		for (int k = 0; k < n->nin && k < MAX_RULE_INPUTS; k++)
			identity_input(od, k, x->rank);
		od->out_rank = out->rank;
		for (int d = 0; d < out->rank; d++)
			od->out_dim[d] = (int8_t)(d < axis ? d : d == axis ? -1 : d - 1);
		return true;
	}
	case OP_CONCAT: {
		int64_t axis = norm(n->a.has_axis ? n->a.axes[0] : 0, x->rank);
		for (int d = 0; d < out->rank; d++)
			add_dim(od, out->dims[d], NULL);
		for (int k = 0; k < n->nin && k < MAX_RULE_INPUTS; k++)
			identity_input(od, k, x->rank);
		keep_whole(od, (int)axis, "the concat axis");
		break;
	}
	case OP_ARGMAX_WITH_VALUE: case OP_ARGMIN_WITH_VALUE: case OP_ARGMAX: case OP_ARGMIN: case OP_TOPK: {
		/* x's dims; the one it picks along is whole where it computes. TopK
		 * refuses a split of it, as MindSpore's TopkInfo; MindSpore's
		 * ArgMaxWithValueInfo and ArgmaxInfo take one (their indices then
		 * the slice's): here lowering gathers x along it first (lower.c), so
		 * every rank of the group picks from the whole axis, and the search
		 * never splits it. The others split as they come. The result drops
		 * it, or keeps it as a dim of 1 (keep_dims) or of k (TopK), none of
		 * the op dims'. */
		bool topk = n->op == OP_TOPK, wv = n->op == OP_ARGMAX_WITH_VALUE || n->op == OP_ARGMIN_WITH_VALUE;
		int axis = topk ? x->rank - 1 : (int)norm(n->a.has_axis ? n->a.axes[0] : wv ? 0 : -1, x->rank);
		for (int d = 0; d < x->rank; d++)
			add_dim(od, x->dims[d], NULL);
		identity_input(od, 0, x->rank);
		keep_whole(od, axis, topk ? "the last dim, which TopK picks its k largest from, as MindSpore's TopK" :
		           "the axis it picks along, gathered first");
		if (!topk)
			od->gathered = 1u << axis;
		od->out_rank = 0;
		for (int d = 0; d < x->rank; d++)
			if (d != axis)
				od->out_dim[od->out_rank++] = (int8_t)d;
			else if (topk || (wv && n->a.keep_dims))
				od->out_dim[od->out_rank++] = -1;
		od->batch = axis == 0 ? (x->rank > 1 ? 1 : -1) : 0;
		return true;
	}
	case OP_STRIDED_SLICE: case OP_SPLIT: case OP_SPLIT_V: case OP_SLICE: {   /* Split, Slice: their slice (shape_slice.c) */
		/* x's dims, as MindSpore's StridedSliceInfo: the strategy has x's rank; a new axis is a result dim no
		 * op dim splits, a shrunk dim none of the result's (slice.c) */
		SliceForm f;
		if (slice_form(&n->a, x->dims, x->rank, &f) != SLICE_OK)
			die("op_dims: a StridedSlice shape.c did not take");
		for (int d = 0; d < x->rank; d++) {
			add_dim(od, x->dims[d], NULL);
			if (slice_cuts(&f, x->dims, d))
				keep_whole(od, d, n->op == OP_SPLIT || n->op == OP_SPLIT_V ? "the split axis" : (f.shrunk >> d & 1) ?
				           "a dim shrink_axis_mask drops" : "a dim the slice cuts");
		}
		identity_input(od, 0, x->rank);
		od->out_rank = f.out_rank;
		memcpy(od->out_dim, f.out_dim, sizeof f.out_dim);
		return true;
	}
	case OP_SPARSE_SOFTMAX_CE:
		add_dim(od, x->dims[0], "n");
		add_dim(od, x->dims[1], "c");
		identity_input(od, 0, 2);
		od->in_rank[1] = 1;
		od->in_dim[1][0] = 0;
		if (n->nin == 4) {   /* lowering's piece (a rank's program read back): each row's loss */
			row_stats_inputs(od);
			od->out_rank = 1;
			od->out_dim[0] = 0;
			return true;
		}
		od->normalized = 1u << 1;   /* vocab-parallel: the row maxima, sums and losses completed */
		od->nstats_fwd = 3;
		od->reduced = 3;
		od->reduce_op = REDUCE_MEAN_OP;
		return true;
	case OP_SOFTMAX_CE:   /* labels (n, c) as the logits; each row's loss (n) */
		add_dim(od, x->dims[0], "n");
		add_dim(od, x->dims[1], "c");
		identity_input(od, 0, 2);
		identity_input(od, 1, 2);
		od->out_rank = 1;
		od->out_dim[0] = 0;
		if (n->nin == 4) {   /* lowering's piece: each row's share of its loss over the slice */
			row_stats_inputs(od);
			return true;
		}
		od->normalized = 1u << 1;   /* the classes split: the row maxima, sums and losses completed */
		od->nstats_fwd = 3;
		return true;
	case OP_ARANGE: case OP_CAUSAL_MASK: case OP_ROPE_COS: case OP_ROPE_SIN: case OP_FILL_V2: case OP_EYE:
	case OP_LIN_SPACE:
	case OP_DROPOUT_GEN_MASK: case OP_UNIFORM_REAL:   /* MindSpore's UniformRealInfo: its output's dims */
		/* A computed constant: the output's dims, any split, each rank
		 * computing its piece. No batch dim: whole unless constant_layouts
		 * (strategy.c) lays it out as its readers take it. */
		for (int d = 0; d < out->rank; d++)
			add_dim(od, out->dims[d], NULL);
		od->batch = -1;
		break;
	case OP_RESHAPE: case OP_CALL: case OP_DEPEND:   /* Depend: flatten.c makes it its value */
	case OP_ALL_REDUCE: case OP_ALL_GATHER: case OP_REDUCE_SCATTER: case OP_ALL_TO_ALL:
		return false;   /* no op dims */
	OP_CASES(PIPELINE_OPS) OP_CASES(FUSED_OPS)   /* made by lowering and after it (fuse.c) */
	case OP_COUNT:
		die("op_dims of an unknown or fused operator");
	}
	identity_output(od, out->rank);   /* the output follows the op dims one to one */
	return true;
}

/* Input k's description; Concat's inputs beyond the table repeat the last. */
static int rule_input(int k)
{
	return k < MAX_RULE_INPUTS ? k : MAX_RULE_INPUTS - 1;
}

const char *op_dim_name(const OpDims *od, int dim, char *buf, size_t size)
{
	if (od->name[dim])
		snprintf(buf, size, "%s", od->name[dim]);
	else
		snprintf(buf, size, "dim %d", dim);
	return buf;
}

#define DIMNAME(od, dim) op_dim_name((od), (dim), (char[24]){0}, 24)

int op_strategy_dims(const OpDims *od, int k, const int8_t **dims)
{
	int r = rule_input(k);
	if (r == 0 && od->strategy_named) {
		*dims = od->named;
		return od->in_rank[0];
	}
	if (od->strategy_out & (1u << r)) {
		*dims = od->out_dim;
		return od->out_rank;
	}
	*dims = od->in_dim[r];
	return od->in_rank[r];
}

/* The tuple strategy for input k under op-dim splits `split`; its length. */
static int input_split(const OpDims *od, int k, const int64_t *split, int64_t *out)
{
	const int8_t *dims;
	int rank = op_strategy_dims(od, k, &dims);
	for (int d = 0; d < rank; d++)
		out[d] = dims[d] >= 0 ? split[dims[d]] : 1;
	return rank;
}

/* `in_strategy ((2, 4), (4, 1))` for op-dim splits, in a suggestion. */
static void print_suggestion(StrBuf *b, const OpDims *od, const int64_t *split, int nin)
{
	sb_puts(b, "in_strategy (");
	for (int k = 0; k < nin; k++) {
		int64_t s[MAX_DIMS];
		int rank = input_split(od, k, split, s);
		if (k)
			sb_puts(b, ", ");
		ints_print(b, s, rank);
	}
	sb_puts(b, nin == 1 ? ",)" : ")");
}

/* A strategy that keeps what it can of `split`: whole where the rule needs
 * it, the devices a whole dim gave up moved to the batch op dim or another
 * that divides evenly, and each split that would not divide the devices
 * left cut to the largest count below it that does. */
static void repair(const OpDims *od, const int64_t *split, int64_t device_num, int64_t *fixed)
{
	int64_t lost = 1;
	for (int o = 0; o < od->nod; o++) {
		fixed[o] = (od->whole & (1u << o)) ? 1 : split[o];
		lost *= (od->whole & (1u << o)) ? split[o] : 1;
	}
	for (int k = -1; k < od->nod && lost > 1; k++) {   /* the batch op dim first */
		int o = k < 0 ? od->batch : k;
		if (o < 0 || (k >= 0 && o == od->batch) || (od->whole & (1u << o)))
			continue;
		for (int64_t f = lost; f > 1; f--)
			if (lost % f == 0 && od->size[o] % (fixed[o] * f) == 0) {
				fixed[o] *= f;
				lost /= f;
				break;
			}
	}
	splits_fit_devices(fixed, od->nod, device_num);
}

void op_split_default(const OpDims *od, int64_t device_num, OpSplit *out)
{
	int64_t split[MAX_OPDIMS];
	for (int o = 0; o < od->nod; o++)
		split[o] = 1;
	int b = od->batch;
	if (b >= 0 && b < od->nod && !(od->whole & (1u << b))) {
		/* The largest part of the devices that cuts the batch dim evenly:
		 * all of them when they divide it, as MindSpore's default does. */
		for (int64_t s = device_num; s >= 1; s--)
			if (device_num % s == 0 && od->size[b] % s == 0) {
				split[b] = s;
				break;
			}
	}
	op_split_from_splits(od, split, device_num, out);
}

void op_split_data_parallel(const Node *n, const OpDims *od, int64_t device_num, OpSplit *out)
{
	int b = od->batch;
	if (b < 0 || b >= od->nod || (od->whole & (1u << b)) || od->size[b] % device_num == 0 ||
	    !op_dim_takes(n, od, b, device_num)) {
		op_split_default(od, device_num, out);
		return;
	}
	int64_t split[MAX_OPDIMS];
	for (int o = 0; o < od->nod; o++)
		split[o] = o == b ? device_num : 1;
	op_split_from_splits(od, split, device_num, out);
}

void op_split_from_splits(const OpDims *od, const int64_t *split, int64_t device_num, OpSplit *out)
{
	memset(out, 0, sizeof *out);
	out->tuple = true;
	int64_t product = 1;
	for (int o = 0; o < od->nod; o++) {
		out->split[o] = split[o];
		if (split[o] > 1)
			out->ax[o][out->nax[o]++] = (int8_t)out->ndev;
		out->dev[out->ndev++] = split[o];
		product *= split[o];
	}
	if (product < device_num)
		out->dev[out->ndev++] = device_num / product;   /* the repeated axis, fastest */
}

/* False when op dim o, split `split` ways, would cut what a rank must hold
 * whole (Tile's repeats, OneHot's classes: od->also with its reason). */
static bool also_divides(const OpDims *od, int o, int64_t split)
{
	return !od->also[o] || !od->whole_why[o] || (od->whole & (1u << o)) || od->also[o] % split == 0;
}

/* Tuple strategies: each op dim's split comes from the inputs that name it,
 * which must agree; None inputs take what the others decided. */
static bool split_from_tuples(const OpDims *od, const Node *n, const Strategy *s, int64_t device_num, OpSplit *out,
                              Diag *d, Source *src)
{
	const char *op = op_info[n->op].name;
	int64_t split[MAX_OPDIMS];
	int from[MAX_OPDIMS];   /* which input decided each op dim, -1 none */
	for (int o = 0; o < od->nod; o++) {
		split[o] = 1;
		from[o] = -1;
	}
	for (int k = 0; k < s->n; k++) {
		const TensorStrategy *t = &s->t[k];
		if (!t->given)
			continue;
		const int8_t *dims;
		op_strategy_dims(od, k, &dims);
		for (int dim = 0; dim < t->rank; dim++) {
			int o = dims[dim];
			if (o < 0) {
				if (t->split[dim] > 1) {
					int64_t fixed[MAX_OPDIMS];
					StrBuf b = {0};
					repair(od, split, device_num, fixed);
					print_suggestion(&b, od, fixed, n->nin);
					ERR(d, src, t->span, "%s: dim %d of input %d has size 1 and is broadcast, so it cannot be split "
					    "(it is split into %lld); e.g. %s", op, dim, k, (long long)t->split[dim], b.data);
					sb_free(&b);
					return false;
				}
				continue;
			}
			if (from[o] >= 0 && split[o] != t->split[dim]) {
				int64_t fixed[MAX_OPDIMS];
				StrBuf b = {0};
				repair(od, split, device_num, fixed);
				print_suggestion(&b, od, fixed, n->nin);
				ERR(d, src, t->span, "%s: input %d splits %s into %lld but input %d splits it into %lld; every input "
				    "must split %s alike, e.g. %s", op, k, DIMNAME(od, o), (long long)t->split[dim], from[o],
				    (long long)split[o], DIMNAME(od, o), b.data);
				sb_free(&b);
				return false;
			}
			split[o] = t->split[dim];
			from[o] = k;
		}
	}
	int64_t product = 1;
	for (int o = 0; o < od->nod; o++) {
		if (!also_divides(od, o, split[o])) {
			int64_t fixed[MAX_OPDIMS];
			StrBuf b = {0};
			memcpy(fixed, split, sizeof fixed);
			int64_t others = 1;   /* the other op dims' splits: the suggestion's devices divide device_num too */
			for (int j = 0; j < od->nod; j++)
				others *= j == o ? 1 : fixed[j];
			while (fixed[o] > 1 && (od->also[o] % fixed[o] || device_num % (others * fixed[o])))
				fixed[o]--;   /* the largest count below it that divides */
			print_suggestion(&b, od, fixed, n->nin);
			ERR(d, src, s->span, "%s: %s is split into %lld, which does not divide %lld (%s); e.g. %s", op,
			    DIMNAME(od, o), (long long)split[o], (long long)od->also[o], od->whole_why[o], b.data);
			sb_free(&b);
			return false;
		}
		if (split[o] > 1 && (od->whole & ~od->gathered & (1u << o))) {
			int64_t fixed[MAX_OPDIMS];
			StrBuf b = {0};
			repair(od, split, device_num, fixed);
			print_suggestion(&b, od, fixed, n->nin);
			ERR(d, src, s->span, "%s: %s (%s) is split into %lld but must stay whole; e.g. %s", op, DIMNAME(od, o),
			    od->whole_why[o], (long long)split[o], b.data);
			sb_free(&b);
			return false;
		}
		product = product > device_num ? product : product * split[o];
	}
	if (device_num % product != 0) {
		StrBuf b = {0}, e = {0};
		for (int o = 0, first = 1; o < od->nod; o++)
			if (split[o] > 1) {
				sb_printf(&b, "%s%s %lld", first ? "" : " x ", DIMNAME(od, o), (long long)split[o]);
				first = 0;
			}
		int64_t fixed[MAX_OPDIMS];
		repair(od, split, device_num, fixed);
		print_suggestion(&e, od, fixed, n->nin);
		ERR(d, src, s->span, "%s: the strategy splits %s, %lld devices in all, which does not divide device_num %lld; "
		    "e.g. %s", op, b.data, (long long)product, (long long)device_num, e.data);
		sb_free(&b);
		sb_free(&e);
		return false;
	}
	op_split_from_splits(od, split, device_num, out);
	return true;
}

/* Layout strategies: the op's matrix is the declared one; each op dim takes
 * the axes of the inputs that name it, which must agree. */
static bool split_from_layouts(const OpDims *od, const Node *n, const Strategy *s, OpSplit *out, Diag *d,
                               Source *src)
{
	const char *op = op_info[n->op].name;
	const LayoutDecl *decl = NULL;
	memset(out, 0, sizeof *out);
	int from[MAX_OPDIMS];
	for (int o = 0; o < od->nod; o++)
		from[o] = -1;
	for (int k = 0; k < s->n; k++) {
		const TensorStrategy *t = &s->t[k];
		if (!t->given)
			continue;
		if (decl && t->layout != decl) {
			ERR(d, src, t->span, "%s: all inputs' layouts must come from one Layout; input %d uses '%s', an earlier "
			    "one '%s'", op, k, t->layout->name, decl->name);
			return false;
		}
		decl = t->layout;
		const int8_t *dims;
		op_strategy_dims(od, k, &dims);
		for (int dim = 0; dim < t->rank; dim++) {
			int o = dims[dim];
			if (o < 0) {
				if (t->naxes[dim]) {
					ERR(d, src, t->span, "%s: dim %d of input %d has size 1 and is broadcast, so it cannot be split; "
					    "write \"None\" for it", op, dim, k);
					return false;
				}
				continue;
			}
			bool same = from[o] < 0 || out->nax[o] == t->naxes[dim];
			for (int i = 0; same && from[o] >= 0 && i < t->naxes[dim]; i++)
				same = out->ax[o][i] == t->axes[dim][i];
			if (!same) {
				ERR(d, src, t->span, "%s: input %d lays %s over other device axes than input %d does; every input "
				    "must split %s alike", op, k, DIMNAME(od, o), from[o], DIMNAME(od, o));
				return false;
			}
			if (from[o] < 0) {
				out->nax[o] = (int8_t)t->naxes[dim];
				for (int i = 0; i < t->naxes[dim]; i++)
					out->ax[o][i] = (int8_t)t->axes[dim][i];
				from[o] = k;
			}
		}
	}
	uint32_t used = 0;
	for (int o = 0; o < od->nod; o++) {
		if (out->nax[o] && (od->whole & ~od->gathered & (1u << o))) {
			ERR(d, src, s->span, "%s: %s (%s) is split but must stay whole; write \"None\" for it", op,
			    DIMNAME(od, o), od->whole_why[o]);
			return false;
		}
		for (int i = 0; i < out->nax[o]; i++) {
			uint32_t bit = 1u << out->ax[o][i];
			if (used & bit) {
				ERR(d, src, s->span, "%s: device axis '%s' splits two different dims of the operator", op,
				    decl->alias[out->ax[o][i]]);
				return false;
			}
			used |= bit;
		}
	}
	out->decl = decl;
	out->ndev = decl->ndims;
	for (int a = 0; a < decl->ndims; a++)
		out->dev[a] = decl->dims[a];
	for (int o = 0; o < od->nod; o++) {
		out->split[o] = 1;
		for (int i = 0; i < out->nax[o]; i++)
			out->split[o] *= out->dev[out->ax[o][i]];
		if (!also_divides(od, o, out->split[o])) {
			ERR(d, src, s->span, "%s: %s is split into %lld, which does not divide %lld (%s)", op, DIMNAME(od, o),
			    (long long)out->split[o], (long long)od->also[o], od->whole_why[o]);
			return false;
		}
	}
	return true;
}

bool op_split_from_strategy(const OpDims *od, const Node *n, const Strategy *s, int64_t device_num, OpSplit *out,
                            Diag *d, Source *src)
{
	bool layouts = false;
	for (int k = 0; k < s->n; k++)
		layouts |= s->t[k].given && s->t[k].layout;
	if (!(layouts ? split_from_layouts(od, n, s, out, d, src) : split_from_tuples(od, n, s, device_num, out, d, src)))
		return false;
	StrBuf why = {0};
	bool ok = op_split_allowed(n, od, out->split, device_num, &why);
	if (!ok)
		ERR(d, src, s->span, "%s", why.data);
	sb_free(&why);
	return ok;
}

bool op_split_allowed(const Node *n, const OpDims *od, const int64_t *split, int64_t device_num, StrBuf *why)
{
	return (n->op != OP_EMBEDDING_LOOKUP || embedding_lookup_split_ok(od, split, device_num, why)) &&
	       resize_split_ok(n, od, split, why);   /* nearest's H and W */
}

/* A tensor of `rank` dims whose dim i follows op dim dims[i] (-1: none). */
static void follow(const OpSplit *s, const int8_t *dims, int rank, TensorLayout *out)
{
	memset(out, 0, sizeof *out);
	out->ndev = s->ndev;
	memcpy(out->dev, s->dev, sizeof(int64_t) * (size_t)s->ndev);
	out->rank = rank;
	for (int d = 0; d < rank; d++) {
		int o = dims[d];
		if (o < 0)
			continue;
		out->nmap[d] = s->nax[o];
		memcpy(out->map[d], s->ax[o], (size_t)s->nax[o]);
	}
}

void op_in_layout(const OpDims *od, const OpSplit *s, int k, TensorLayout *out)
{
	int r = rule_input(k);
	follow(s, od->in_dim[r], od->in_rank[r], out);
}

void op_out_layout(const OpDims *od, const OpSplit *s, TensorLayout *out)
{
	follow(s, od->out_dim, od->out_rank, out);
	for (int o = 0; o < od->nod; o++)
		if (od->reduced & (1u << o))
			for (int i = 0; i < s->nax[o]; i++)
				out->partial |= 1u << s->ax[o][i];
	out->partial_op = out->partial ? od->reduce_op : REDUCE_SUM_OP;
}

int op_in_split(const OpDims *od, const OpSplit *s, int k, int64_t *split)
{
	return input_split(od, k, s->split, split);
}
