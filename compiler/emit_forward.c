/* emit_forward.c: the runtime call of one forward operator or collective.
 *
 * Requires a Program (plan.c). One statement per operator of the lowered
 * program, its operands named by p->cname (emit.c points them at a half
 * value's Float32 copies around the call); a collective over its group
 * g<k>, a gradient AllReduce bucket (bucket.c) as one call. */
#include "emit_internal.h"
#include "kldiv_loss.h"
#include "resize.h"
#include "embedding_lookup.h"
#include "int_math.h"
#include "scatter_state.h"

void emit_collective(StrBuf *b, const Program *p, const LOp *o, int i)
{
	const Lowered *l = p->l;
	const LValue *x = &l->values[o->in[0]];
	const char *in = p->cname[o->in[0]], *out = p->cname[o->result], *dt = sc_dtype_name(x->type.dtype);
	int g = p->partition[i], bucket = op_bucket(l, i);
	switch (o->step->kind) {
	case STEP_ALL_REDUCE:
		if (bucket < 0) {
			sb_puts(b, "/* in the bucket above */");
		} else if (bucket > 0) {   /* o and the members after it, one call */
			StrBuf ins = {0}, outs = {0}, counts = {0};
			for (int j = 0; j < bucket; j++) {
				const LOp *m = o + j;
				sb_printf(&ins, j ? ", %s" : "%s", p->cname[m->in[0]]);
				sb_printf(&outs, j ? ", %s" : "%s", p->cname[m->result]);
				sb_printf(&counts, j ? ", %lld" : "%lld", (long long)numel(&l->values[m->in[0]]));
			}
			sb_printf(b, "sc_all_reduce_bucket(rt, g%d, %d, (const void *const[]){%s}, (void *const[]){%s}, "
			          "(const int64_t[]){%s}, %s, %s, slab + %lld);", g, bucket, ins.data, outs.data, counts.data,
			          dt, redop_name(o->step->op), (long long)op_scratch(p, o));
			sb_free(&ins);
			sb_free(&outs);
			sb_free(&counts);
		} else {
			sb_printf(b, "sc_all_reduce(rt, g%d, %s, %s, %s, %lld, %s);", g, in, out, dt, (long long)numel(x),
			          redop_name(o->step->op));
		}
		break;
	case STEP_ALL_GATHER:
		sb_printf(b, "sc_all_gather(rt, g%d, %s, %s, %s, ", g, in, out, dt);
		dims_lit(b, x->type.dims, x->type.rank);
		sb_printf(b, ", %d, %d);", x->type.rank, o->step->dim);
		break;
	case STEP_REDUCE_SCATTER:
		sb_printf(b, "sc_reduce_scatter(rt, g%d, %s, %s, %s, ", g, in, out, dt);
		dims_lit(b, x->type.dims, x->type.rank);
		sb_printf(b, ", %d, %d, %s);", x->type.rank, o->step->dim, redop_name(o->step->op));
		break;
	case STEP_ALL_TO_ALL:
		sb_printf(b, "sc_all_to_all(rt, g%d, %s, %s, %s, ", g, in, out, dt);
		dims_lit(b, x->type.dims, x->type.rank);
		sb_printf(b, ", %d, %d, %d);", x->type.rank, o->step->dim2, o->step->dim);
		break;
	case STEP_SLICE:
		break;
	}
}

/* The ElementwiseChain at position i (fuse.c) as one sc_ew_chain call:
 * its operands the values from outside the chain, each member's operator
 * (the placeholders it computes, then itself, as they were) a step, a half
 * result rounded, its result and the placeholders it writes stored. */
static void emit_chain(StrBuf *b, const Program *p, int i)
{
	const Lowered *l = p->l;
	int m[MAX_PARTS + 1], nm = fused_parts(l, i, m);
	m[nm++] = i;
	const LValue *y = &l->values[l->ops[i].result];
	int64_t n = numel(y), c = y->type.rank ? y->type.dims[y->type.rank - 1] : 1;
	const int *ins = l->ops[i].in;
	int nin = l->ops[i].nin, num[MAX_PARTS + 1];   /* each member's value number */
	sb_puts(b, "/* elementwise chain (fused):");
	for (int j = 0; j < nm; j++)
		sb_printf(b, "%s %%%s = %s", j ? "," : "", l->values[l->ops[m[j]].result].name, op_info[unfused(l, m[j])->op].name);
	sb_puts(b, " */\n\t\tsc_ew_chain(rt, (const sc_ew_step[]){");
	int nsteps = 0;
	for (int j = 0; j < nm; j++) {
		const LOp *o = unfused(l, m[j]);
		int a[2];
		for (int k = 0; k < o->nin; k++) {
			int v = o->in[k], q = 0;
			while (q < nin && ins[q] != v)
				q++;
			if (q < nin)
				a[k] = q;
			else {
				for (q = 0; l->ops[m[q]].result != v; q++)
					;
				a[k] = num[q];
			}
		}
		const char *sep = nsteps ? ", " : "";
		if (op_is_unary(o->op))   /* with its kernel's p */
			sb_printf(b, "%s{SC_EW_UNARY, %s, %d, 0, SC_F32, NULL, %.9g}", sep, op_kernel(o->op, &o->a), a[0],
			          op_kernel_param(o->op, &o->a, l->values[o->in[0]].type.dtype));
		else if (o->op != OP_CAST)
			sb_printf(b, "%s{SC_EW_BINARY, %s, %d, %d, SC_F32, NULL, 0}", sep,
			          o->op == OP_BIAS_ADD ? "SC_ADD" : op_info[o->op].kernel, a[0], a[1]);
		num[j] = o->op == OP_CAST ? a[0] : nin + nsteps++;
		DType t = l->values[o->result].type.dtype;
		bool same = o->op == OP_CAST && l->values[o->in[0]].type.dtype == t;
		if (dtype_is_half(t) && !same) {
			sb_printf(b, "%s{SC_EW_ROUND, 0, %d, 0, %s, NULL, 0}", nsteps ? ", " : "", num[j], sc_dtype_name(t));
			num[j] = nin + nsteps++;
		}
		if (m[j] == i || l->fusion[m[j]].writes) {
			sb_printf(b, "%s{SC_EW_STORE, 0, %d, 0, %s, %s, 0}", nsteps ? ", " : "", num[j], sc_dtype_name(t),
			          p->cname[o->result]);
			num[j] = nin + nsteps++;
		}
	}
	sb_printf(b, "}, %d, (const sc_ew_operand[]){", nsteps);
	for (int k = 0; k < nin; k++) {
		const LValue *x = &l->values[ins[k]];
		sb_printf(b, "%s{%s, %s, %s}", k ? ", " : "", p->cname[ins[k]], sc_dtype_name(x->type.dtype),
		          ew_bcast(x, n, c));   /* fuse.c chained only operands it can read */
	}
	sb_printf(b, "}, %d, %lld, %lld);", nin, (long long)(n / c), (long long)c);
}

/* A computed constant: the rank's piece, which starts where the table
 * says (E_SLICE: its begin, then its end). A half result is computed in
 * Float32 and rounded once (emit.c passes its Float32 copy). */
static void emit_constant(StrBuf *b, const Program *p, const LOp *o, const Attrs *a)
{
	const LValue *y = &p->l->values[o->result];
	const Entry *e = op_table(p, o);
	int r = y->type.rank;
	DType t = y->type.dtype;
	const char *dt = sc_dtype_name(dtype_is_half(t) ? DT_F32 : t);
	if (!e || e->kind != E_SLICE)
		die("%s %%%s has no piece in the rank table", op_info[o->op].name, y->name);
	if (o->op == OP_DROPOUT_GEN_MASK) {   /* Dropout's mask of the piece: true where kept */
		sb_printf(b, "sc_dropout_gen_mask(rt, %s, ", p->cname[o->result]);
		gen_mask_args(b, p, o, a);
		sb_puts(b, ");");
		return;
	}
	if (o->op == OP_UNIFORM_REAL) {   /* Dropout's draws of the piece, in [0, 1) */
		sb_printf(b, "sc_uniform_real(rt, %s, ", p->cname[o->result]);
		gen_mask_args(b, p, o, a);
		sb_puts(b, ");");
		return;
	}
	if (o->op == OP_FILL_V2) {   /* every element fill, wherever the piece lies */
		sb_printf(b, "sc_fill(rt, %s, %s, %lld, %.17g);", p->cname[o->result], dt, (long long)numel(y), a->fill);
		return;
	}
	if (o->op == OP_LIN_SPACE) {   /* MindSpore's start + i step in Float32, from the piece's first */
		sb_printf(b, "sc_lin_space(rt, %s, %lld, ", p->cname[o->result], (long long)numel(y));
		entry_ref(b, e, 0, 1, false);
		sb_printf(b, ", %.9g, %.9g, %lld);", (float)a->start, (float)a->stop, (long long)a->shape[0]);
		return;
	}
	if (o->op == OP_EYE) {   /* ones where the whole's row and column meet */
		sb_printf(b, "sc_eye(rt, %s, %s, %lld, %lld, ", p->cname[o->result], dt, (long long)y->type.dims[0],
		          (long long)y->type.dims[1]);
		entry_ref(b, e, 0, 1, false);
		sb_puts(b, ", ");
		entry_ref(b, e, 1, 1, false);
		sb_puts(b, ");");
		return;
	}
	if (o->op == OP_ARANGE) {   /* start + (begin + i) step */
		sb_printf(b, "sc_arange(rt, %s, %s, %lld, ", p->cname[o->result], dt, (long long)numel(y));
		entry_ref(b, e, 0, 1, false);
		sb_printf(b, ", %.17g, %.17g);", a->start, a->step);
		return;
	}
	int64_t lead = 1;
	for (int d = 0; d < r - 2; d++)
		lead *= y->type.dims[d];
	if (o->op == OP_CAUSAL_MASK)
		sb_printf(b, "sc_causal_mask(rt, %s, %s, ", p->cname[o->result], dt);
	else
		sb_printf(b, "sc_rope(rt, %s, %d, ", p->cname[o->result], o->op == OP_ROPE_SIN);   /* Float32 */
	sb_printf(b, "%lld, %lld, %lld, ", (long long)lead, (long long)y->type.dims[r - 2], (long long)y->type.dims[r - 1]);
	entry_ref(b, e, r - 2, 1, false);
	sb_puts(b, ", ");
	entry_ref(b, e, r - 1, 1, false);
	if (o->op == OP_CAUSAL_MASK)   /* masked: fill, else the type's lowest finite value (docs/operators.md) */
		sb_printf(b, ", %.17g);", t == DT_BOOL ? 0 : (a->present & (ATTR_BIT(ATTR_FILL))) ? a->fill : -dtype_max(t));
	else   /* the head dim: the whole table's last dim */
		sb_printf(b, ", %lld, %.17g);", (long long)a->shape[a->nshape - 1], a->theta);
}

void emit_forward(StrBuf *b, const Program *p, const LOp *o, const Attrs *a)
{
	const Lowered *l = p->l;
	const char *y = p->cname[o->result];
	const LValue *yv = &l->values[o->result], *x = o->nin ? &l->values[o->in[0]] : NULL;
	const char *x0 = o->nin ? p->cname[o->in[0]] : NULL, *x1 = o->nin > 1 ? p->cname[o->in[1]] : NULL;
	int64_t m, n, k, axes[MAX_DIMS];
	switch (o->op) {
	OP_CASES(UNARY_OPS)
		sb_printf(b, "sc_unary(rt, %s, %.9g, %s, %s, %lld);", op_kernel(o->op, a),
		          op_kernel_param(o->op, a, x->type.dtype), x0, y, (long long)numel(yv));
		break;
	case OP_MATMUL:
		emit_matmul_dims(o, l, &m, &n, &k);
		matmul_call(b, l, o, false);
		sb_printf(b, "%s, %s, ", x0, x1);
		matmul_out(b, l, o, y);
		sb_printf(b, ", %lld, %lld, %lld, %d, %d);", (long long)m, (long long)n, (long long)k, a->transpose_a,
		          a->transpose_b);
		break;
	case OP_BATCH_MATMUL_STRIDED:   /* a folded Transpose's value read or written in place (fuse.c) */
		emit_matmul_dims(o, l, &m, &n, &k);
		strided_bmm_call(b, p, o, (const int[]){o->in[0], o->in[1], o->result}, y, yv, m, n, k, a->transpose_a,
		                 a->transpose_b);
		break;
	case OP_BATCH_MATMUL: {
		emit_matmul_dims(o, l, &m, &n, &k);
		const LValue *bv = &l->values[o->in[1]];
		matmul_call(b, l, o, true);
		sb_printf(b, "%s, ", x0);
		dims_lit(b, x->type.dims, x->type.rank - 2);
		sb_printf(b, ", %d, %s, ", x->type.rank - 2, x1);
		dims_lit(b, bv->type.dims, bv->type.rank - 2);
		sb_printf(b, ", %d, ", bv->type.rank - 2);
		matmul_out(b, l, o, y);
		sb_puts(b, ", ");
		dims_lit(b, yv->type.dims, yv->type.rank - 2);
		sb_printf(b, ", %d, %lld, %lld, %lld, %d, %d);", yv->type.rank - 2, (long long)m, (long long)n, (long long)k,
		          a->transpose_a, a->transpose_b);
		break;
	}
	OP_CASES(BINARY_OPS)
		emit_binary(b, p, "sc_binary", op_info[o->op].kernel, o->in[0], o->in[1], o->result);
		break;
	OP_CASES(COMPARE_OPS) {   /* its Bool result one byte an element; p ApproximateEqual's tolerance, as a Float32 */
		char op[80];
		snprintf(op, sizeof op, "%s, %.9g", op_info[o->op].kernel,
		         o->op == OP_APPROXIMATE_EQUAL ? (double)(float)a->tolerance : 0.0);
		emit_binary(b, p, "sc_compare", op, o->in[0], o->in[1], o->result);
		break;
	}
	case OP_LOGICAL_NOT:
		sb_printf(b, "sc_logical(rt, SC_L_NOT, ");
		tensor_arg(b, p, o->in[0]);
		sb_puts(b, ", NULL, NULL, 0, ");
		tensor_arg(b, p, o->result);
		sb_puts(b, ");");
		break;
	case OP_LOGICAL_AND: case OP_LOGICAL_OR:   /* Bool operands, broadcasting as a binary operator's */
		emit_binary(b, p, "sc_logical", op_info[o->op].kernel, o->in[0], o->in[1], o->result);
		break;
	case OP_IS_FINITE:
		sb_printf(b, "sc_is_finite(rt, %s, %s, %lld);", x0, y, (long long)numel(yv));
		break;
	case OP_DROPOUT_DO_MASK:   /* x * mask / keep_prob as Dropout scales; the identity without a train block */
		sb_printf(b, "sc_dropout_do_mask(rt, %s, %s, %s, %lld, %.17g);", x0, x1, y, (long long)numel(yv),
		          l->m->train ? a->keep_prob : 1.0);
		break;
	case OP_DROPOUT:   /* x * mask / keep_prob, the mask drawn from the element's global index */
		sb_printf(b, "sc_dropout(rt, %s, %s, ", x0, y);
		dropout_args(b, p, o, a->keep_prob);
		sb_puts(b, ");");
		break;
	case OP_PAD_FILL:   /* x, the padding of the rank's piece along axis set to fill (lower.c) */
		sb_printf(b, "sc_fill_pad(rt, %s, %s, %s, ", x0, y, sc_dtype_name(yv->type.dtype));
		pad_args(b, p, o->result, pad_axis(a, yv->type.rank));
		sb_printf(b, ", %.17g);", (a->present & ATTR_BIT(ATTR_FILL)) ? a->fill : 0.0);
		break;
	case OP_SELECT:   /* cond ? x : y, one shape */
		sb_printf(b, "sc_select(rt, %s, %s, %s, %s, %lld);", x0, x1, p->cname[o->in[2]], y, (long long)numel(yv));
		break;
	case OP_FLASH_ATTENTION:   /* softmax(scale q k^T, masked) v, tiled: no (S, S_kv) buffer */
		emit_flash_attention(b, p, o, a, NULL, NULL, y);
		break;
	case OP_ROTARY:   /* x cos + rotate(x) sin, cos and sin broadcast */
		emit_rotary(b, p, a->mode, 0, o->in[0], o->in[1], o->in[2], y);
		break;
	case OP_BIAS_UNARY: case OP_BIAS_ADD_RESIDUAL: {   /* u(x + b), x + b + r: one pass (fuse.c) */
		int i = (int)(o - l->ops), at[MAX_PARTS];
		fused_parts(l, i, at);   /* the BiasAdd, its sum stored when read later */
		const char *sum = l->fusion[at[0]].writes ? p->cname[l->ops[at[0]].result] : "NULL";
		int64_t c = x->type.rank ? x->type.dims[x->type.rank - 1] : 1;
		const LOp *u = unfused(l, i);   /* the unary operator (or the Add), as it was */
		if (o->op == OP_BIAS_UNARY)
			sb_printf(b, "sc_bias_unary(rt, %s, %.9g, %s, %s, %s, %s, %lld, %lld);", op_kernel(u->op, &u->a),
			          op_kernel_param(u->op, &u->a, x->type.dtype), x0, x1, sum, y, (long long)(numel(x) / c),
			          (long long)c);
		else
			sb_printf(b, "sc_bias_add_residual(rt, %s, %s, %s, %s, %s, %lld, %lld);", x0, x1, sum, p->cname[o->in[2]], y,
			          (long long)(numel(x) / c), (long long)c);
		break;
	}
	case OP_EW_CHAIN:
		emit_chain(b, p, (int)(o - l->ops));
		break;
	case OP_BIAS_ADD: {
		int64_t c = x->type.rank ? x->type.dims[x->type.rank - 1] : 1;
		sb_printf(b, "sc_bias_add(rt, %s, %s, %s, %lld, %lld);", x0, x1, y, (long long)(numel(x) / c), (long long)c);
		break;
	}
	case OP_CONV2D:   /* the rank's images, input channels (partial sums when split) and filters */
		sb_puts(b, "sc_conv2d(rt, ");
		window_arg(b, p, o->op, a, x, o->result);
		sb_printf(b, ", %s, %s, %s);", x0, x1, y);
		break;
	case OP_CONV2D_TRANSPOSE:   /* Conv2D's dx: col2im of w^T dout, the rank's rows of the result (x unread) */
		sb_puts(b, "sc_conv2d_grad(rt, ");
		window_arg(b, p, o->op, a, x, o->result);
		sb_printf(b, ", NULL, %s, %s, %s, NULL);", x1, x0, y);
		break;
	case OP_MAX_POOL: case OP_AVG_POOL:
		sb_printf(b, "sc_pool(rt, %s, ", o->op == OP_MAX_POOL ? "SC_POOL_MAX" : "SC_POOL_AVG");
		window_arg(b, p, o->op, a, x, o->result);
		sb_printf(b, ", %s, %s);", x0, y);
		break;
	case OP_PRELU: {   /* x < 0 ? w x : x, the rank's piece (outer, channels, inner) and its weights */
		int64_t outer, c, inner;
		prelu_dims(x, &outer, &c, &inner);
		sb_printf(b, "sc_prelu(rt, %s, %s, %s, %lld, %lld, %lld, %lld);", x0, x1, y, (long long)outer, (long long)c,
		          (long long)inner, (long long)numel(&l->values[o->in[1]]));
		break;
	}
	case OP_SOFTMAX_MASKED: {   /* softmax([x * scale] + mask): (x, [scale,] mask) (fuse.c) */
		const LValue *mv = &l->values[o->in[o->nin - 1]];
		sb_printf(b, "sc_softmax_masked(rt, %s, %s, %s, ", x0, o->nin == 3 ? x1 : "NULL", p->cname[o->in[o->nin - 1]]);
		dims_lit(b, mv->type.dims, mv->type.rank);
		sb_printf(b, ", %d, %s, ", mv->type.rank, y);
		dims_lit(b, x->type.dims, x->type.rank);
		sb_printf(b, ", %d);", x->type.rank);
		break;
	}
	case OP_SOFTMAX: case OP_LOG_SOFTMAX: case OP_SOFTMAX_SCALED:
		if (o->op == OP_SOFTMAX_SCALED)   /* softmax(x * scale): (x, scale) (fuse.c) */
			sb_printf(b, "sc_softmax_scaled(rt, %s, %s, %s, ", x0, x1, y);
		else
			sb_printf(b, "sc_%s(rt, %s, %s, ", o->op == OP_SOFTMAX ? "softmax" : "log_softmax", x0, y);
		dims_lit(b, x->type.dims, x->type.rank);
		sb_printf(b, ", %d, %lld);", x->type.rank, (long long)(a->has_axis && a->naxes ? a->axes[0] : -1));
		break;
	case OP_REDUCE_SUM: case OP_REDUCE_MEAN: case OP_REDUCE_MAX: case OP_REDUCE_MIN: case OP_REDUCE_PROD:
	case OP_REDUCE_ALL: case OP_REDUCE_ANY: {   /* All, Any: Bool to Bool, a byte an element */
		int na = reduce_axes(a, x->type.rank, axes);
		static const char *const names[] = {"sum", "mean", "max", "min", "prod", "all", "any"};   /* ops.h's order */
		_Static_assert(OP_REDUCE_MEAN == OP_REDUCE_SUM + 1 && OP_REDUCE_MIN == OP_REDUCE_SUM + 3 &&
		               OP_REDUCE_ANY == OP_REDUCE_SUM + 6, "the reductions' rows follow one another in ops.h");
		sb_printf(b, "sc_reduce_%s(rt, %s, %s, ", names[o->op - OP_REDUCE_SUM], x0, y);
		dims_lit(b, x->type.dims, x->type.rank);
		sb_printf(b, ", %d, ", x->type.rank);
		ints_lit(b, axes, na);
		sb_printf(b, ", %d);", na);
		double factor;
		if (o->op == OP_REDUCE_MEAN && uneven_mean_factor(x, axes, na, &factor))   /* the local count includes padding */
			sb_printf(b, "\n\t\tsc_scale(rt, %s, %s, %lld, %.17g);", y, y, (long long)numel(yv), factor);
		break;
	}
	case OP_CUMSUM: case OP_CUMPROD:
		if (o->nin == 2) {   /* a split axis's piece: the slices' totals and its offset (lower.c) */
			char off[32];
			offset_arg(off, sizeof off, p, o, a);
			sb_printf(b, "sc_cumsum_part(rt, %d, %s, %s, %s, %s, %lld, ", o->op == OP_CUMPROD, x0, x1, y, off,
			          (long long)scan_slices(&l->values[o->in[1]], a));
		} else
			sb_printf(b, "sc_cumsum(rt, %d, %s, %s, ", o->op == OP_CUMPROD, x0, y);
		scan_args(b, x, a);
		break;
	case OP_RESHAPE: case OP_FLATTEN: case OP_EXPAND_DIMS: case OP_SQUEEZE: case OP_IDENTITY:
		sb_printf(b, "sc_copy(rt, %s, %s, %lld);", y, x0, (long long)arg_bytes(p, o->result));
		break;
	case OP_BROADCAST_TO:
		sb_puts(b, "sc_broadcast_to(rt, ");
		tensor_arg(b, p, o->in[0]);
		sb_puts(b, ", ");
		tensor_arg(b, p, o->result);
		sb_puts(b, ");");
		break;
	case OP_TILE: {   /* x broadcast to the result, its repeats a dim of their own */
		int64_t xd[MAX_DIMS], yd[MAX_DIMS];
		int r = tile_view(&x->type, &yv->type, xd, yd);
		sb_printf(b, "sc_broadcast_to(rt, %s, ", x0);
		dims_lit(b, xd, r);
		sb_printf(b, ", %d, %s, ", r, y);
		dims_lit(b, yd, r);
		sb_printf(b, ", %d);", r);
		break;
	}
	case OP_ARGMAX_WITH_VALUE: case OP_ARGMIN_WITH_VALUE: case OP_ARGMAX: case OP_ARGMIN: {   /* one result: idx or val */
		int64_t outer, len, inner;
		int is_min = arg_view(o->op, a, &x->type, &outer, &len, &inner);
		bool idx = yv->type.dtype == DT_I32;
		sb_printf(b, "sc_arg_reduce(rt, %s, %lld, %lld, %lld, %d, %s, %s);", x0, (long long)outer, (long long)len,
		          (long long)inner, is_min, idx ? y : "NULL", idx ? "NULL" : y);
		break;
	}
	case OP_TOPK: {   /* index 0 the values, 1 the indices */
		int64_t outer, len, inner;
		arg_view(o->op, a, &x->type, &outer, &len, &inner);
		bool idx = yv->type.dtype == DT_I32;
		sb_printf(b, "sc_topk(rt, %s, %lld, %lld, %lld, %s, %s);", x0, (long long)outer, (long long)len,
		          (long long)a->topk, idx ? "NULL" : y, idx ? y : "NULL");
		break;
	}
	case OP_ONE_HOT: {   /* the rank's slice of the classes from its first (offset_arg) */
		int ax = (int)norm_axis(a->has_axis && a->naxes ? a->axes[0] : -1, yv->type.rank);
		int64_t outer = 1, inner = 1;
		char off[32];
		for (int d = 0; d < yv->type.rank; d++)
			*(d < ax ? &outer : &inner) *= d == ax ? 1 : yv->type.dims[d];
		offset_arg(off, sizeof off, p, o, a);
		sb_printf(b, "sc_one_hot(rt, %s, %s, %lld, %lld, %lld, %s, %s, %s, %s);", x0, sc_dtype_name(x->type.dtype),
		          (long long)outer, (long long)yv->type.dims[ax], (long long)inner, off, x1, p->cname[o->in[2]], y);
		break;
	}
	OP_CASES(INT_MATH_OPS)   /* on Int32 or Int64 (int_math.c); Invert's and PopulationCount's b NULL */
		sb_printf(b, "sc_int_math(rt, %s, %s, ", int_math_kernel(o->op), sc_dtype_name(x->type.dtype));
		tensor_arg(b, p, o->in[0]);
		sb_puts(b, ", ");
		if (o->nin == 2)
			tensor_arg(b, p, o->in[1]);
		else
			sb_puts(b, "NULL, NULL, 0");
		sb_puts(b, ", ");
		tensor_arg(b, p, o->result);
		sb_puts(b, ");");
		break;
	case OP_REVERSE_V2: case OP_TRACE_V2:   /* x reversed along the marked dims; the sums of its diagonal */
		sb_printf(b, "sc_%s(rt, %s, %s, ", o->op == OP_REVERSE_V2 ? "reverse" : "trace", x0, y);
		int_math_args(b, o->op, &x->type, a);
		break;
	case OP_PAD_V3:   /* the constant everywhere, x into the box at the befores */
		sb_printf(b, "sc_pad(rt, %s, %s, %s, ", sc_dtype_name(x->type.dtype), x0, y);
		pad_v3_args(b, p, o, a, false);
		sb_puts(b, ");");
		break;
	case OP_RESIZE_NEAREST: case OP_RESIZE_BILINEAR:   /* each (N, C) plane of the piece, H and W whole (resize.c) */
		sb_puts(b, "sc_resize(rt, ");
		resize_args(b, p, o, x0, y);
		sb_puts(b, ");");
		break;
	case OP_TRIL: case OP_TRIU:   /* x where its column less its row in the whole is at most (least) diagonal */
		sb_printf(b, "sc_triangle(rt, %d, %s, %s, %s, ", o->op == OP_TRIU, x0, y, sc_dtype_name(x->type.dtype));
		triangle_args(b, p, o);
		sb_puts(b, ");");
		break;
	case OP_TRANSPOSE:
		sb_printf(b, "sc_transpose(rt, %s, %s, %s, ", sc_dtype_name(x->type.dtype), x0, y);
		dims_lit(b, x->type.dims, x->type.rank);
		sb_printf(b, ", %d, ", x->type.rank);
		ints_lit(b, a->perm, a->nperm);
		sb_puts(b, ");");
		break;
	case OP_GATHER: {   /* sc_gather a table gathered along its first dim, else sc_gather_axis */
		const LValue *idx = &l->values[o->in[1]];
		int64_t outer, rows, row;
		gather_dims(x, a, &outer, &rows, &row);
		char off[32];
		offset_arg(off, sizeof off, p, o, a);
		if (outer == 1)
			sb_printf(b, "sc_gather(rt, %s, ", x0);
		else
			sb_printf(b, "sc_gather_axis(rt, %s, %lld, ", x0, (long long)outer);
		sb_printf(b, "%lld, %lld, %s, %s, %lld, %s, %s);", (long long)rows, (long long)row, x1,
		          sc_dtype_name(idx->type.dtype), (long long)numel(idx), off, y);
		break;
	}
	case OP_EMBEDDING_LOOKUP: {   /* Gather's rows from the rank's offset, ids past the whole table zeros */
		const LValue *idx = &l->values[o->in[1]];
		int64_t outer, rows, row;
		gather_dims(x, a, &outer, &rows, &row);
		char off[32];
		offset_arg(off, sizeof off, p, o, a);
		sb_printf(b, "sc_embedding_lookup(rt, %s, %lld, %lld, %s, %s, %lld, %s, %lld, %s);", x0, (long long)rows,
		          (long long)row, x1, sc_dtype_name(idx->type.dtype), (long long)numel(idx), off,
		          (long long)embedding_lookup_limit(l, o), y);
		break;
	}
	case OP_GATHER_D: {   /* x's element at the index along dim, for each of the index's (sc_gather_d) */
		char off[32];   /* x split along dim: its slice's first entry */
		offset_arg(off, sizeof off, p, o, a);
		sb_printf(b, "sc_gather_d(rt, %s, ", x0);
		dims_lit(b, x->type.dims, x->type.rank);
		sb_printf(b, ", %s, %s, ", x1, sc_dtype_name(l->values[o->in[1]].type.dtype));
		dims_lit(b, l->values[o->in[1]].type.dims, x->type.rank);
		sb_printf(b, ", %d, %d, %s, %s);", x->type.rank, (int)norm_axis(a->dim, x->type.rank), off, y);
		break;
	}
	case OP_GATHER_ND:   /* x's slices the indices name (sc_gather_nd), x whole (scatter_nd.c) */
		sb_printf(b, "sc_gather_nd(rt, %s, ", x0);
		nd_shape_args(b, l, o->in[0], o->in[1]);
		sb_puts(b, ", ");
		nd_index_args(b, p, o->in[0], o->in[1]);
		sb_printf(b, ", %s, \"GatherNd %%%s\");", y, l->values[o->result].name);
		break;
	OP_CASES(TENSOR_SCATTER_OPS)   /* x with the slices the indices name replaced (added to, ..., the smaller of) */
		sb_printf(b, "sc_tensor_scatter(rt, %s, %s, ", scatter_kernel(o->op), x0);
		nd_index_args(b, p, o->in[0], o->in[1]);
		sb_printf(b, ", %s, %s, ", p->cname[o->in[2]], y);
		scatter_shape_args(b, p, o, true);
		sb_printf(b, ", \"%s %%%s\");", op_info[o->op].name, l->values[o->result].name);
		break;
	OP_CASES(STATE_OPS) {   /* the tensor scatter's kernel (AssignAdd, Sub: Add's, Sub's), then x, state, updated */
		OpKind base = state_scatter_kind(o->op);
		if (l->values[o->in[0]].param < 0)
			die("%s's x is no parameter here: its update would be lost", op_info[o->op].name);
		if (base == OP_COUNT) {
			emit_binary(b, p, "sc_binary", op_info[o->op == OP_ASSIGN_ADD ? OP_ADD : OP_SUB].kernel, o->in[0], o->in[1],
			            o->result);
		} else {
			sb_printf(b, "sc_tensor_scatter(rt, %s, %s, ", scatter_kernel(base), x0);
			state_index_args(b, p, o);
			sb_printf(b, ", %s, %s, ", p->cname[o->in[2]], y);
			state_shape_args(b, p, o, true);
			sb_printf(b, ", \"%s %%%s\");", op_info[o->op].name, l->values[o->result].name);
		}
		if (op_recomputes(l, (int)(o - l->ops)) < 0)   /* once per forward pass, never by a recomputation */
			sb_printf(b, "\n\t\tsc_copy(rt, %s, %s, %lld);   /* the state's update */", x0, y,
			          (long long)(numel(&l->values[o->result]) * dtype_bytes(l->values[o->result].type.dtype)));
		break;
	}
	OP_CASES(INPLACE_OPS) {   /* the tensor scatter's kernel on the indices attribute's rows (x's dim 0 whole) */
		const LValue *xv = &l->values[o->in[0]];
		int64_t rows = xv->type.dims[0], inner = rows ? numel(xv) / rows : 0;
		sb_printf(b, "sc_tensor_scatter(rt, %s, %s, ", o->op == OP_INPLACE_ADD ? "SC_SCATTER_ADD" :
		          o->op == OP_INPLACE_SUB ? "SC_SCATTER_SUB" : "SC_SCATTER_UPDATE", x0);
		dims_lit(b, a->indices, a->nindices);
		sb_printf(b, ", SC_I64, %d, %s, %s, (const int64_t[]){%lld}, NULL, (const int64_t[]){%lld}, 1, %lld, \"%s %%%s\");",
		          a->nindices, x1, y, (long long)rows, (long long)rows, (long long)inner, op_info[o->op].name,
		          l->values[o->result].name);
		break;
	}
	case OP_L2_NORMALIZE: {   /* x (outer, n, inner) along n; a slice's piece given the sums of squares (lower.c) */
		int64_t dims[3];
		l2_normalize_dims(x, a, dims);
		sb_printf(b, "sc_l2_normalize(rt, %s, %s, %s, %lld, %lld, %lld, %.17g);", x0, o->nin > 1 ? x1 : "NULL", y,
		          (long long)dims[0], (long long)dims[1], (long long)dims[2], a->epsilon);
		break;
	}
	case OP_BATCH_NORM: {   /* x (n, c, hw); a slice's piece given the batch's statistics (lower.c) */
		int64_t d3[3], count;
		batch_norm_dims(x, d3, &count);
		const char *const *c = p->cname;
		bool kept = op_recomputes(l, (int)(o - l->ops)) >= 0;   /* a recomputation: updated once, by the forward */
		if (a->is_training && (l->values[o->in[3]].param < 0 || l->values[o->in[4]].param < 0))
			die("BatchNorm's moving statistics are no parameters here: their update would be lost");
		sb_printf(b, "sc_batch_norm(rt, %s, %s, %s, %s, %s, %s, %s, %s, %lld, %lld, %lld, %.17g, %.17g, %lld, %s);", x0,
		          x1, c[o->in[2]], c[o->in[3]], c[o->in[4]], o->nin > 5 ? c[o->in[5]] : "NULL",
		          o->nin > 5 ? c[o->in[6]] : "NULL", y, (long long)d3[0], (long long)d3[1], (long long)d3[2], a->epsilon,
		          a->momentum, (long long)count, !a->is_training ? "SC_BN_INFER" : kept ? "SC_BN_TRAIN_KEEP" : "SC_BN_TRAIN");
		break;
	}
	OP_CASES(SEGMENT_OPS)   /* x's rows into the segments their ids name; an empty one the type's identity */
		sb_puts(b, "sc_unsorted_segment(rt, ");
		segment_args(b, p, o, o->in[0], o->in[1], y);
		sb_printf(b, ", %s);", sc_dtype_name(l->values[o->result].type.dtype));
		break;
	OP_CASES(NORM_OPS) {   /* sc_norm of the operator's SC_NORM_TABLE row */
		int nparams = op_info[o->op].min_inputs - 1;   /* gamma, beta */
		const char *beta = nparams == 2 ? p->cname[o->in[2]] : "NULL";
		int64_t bn, bp;
		norm_begin(o->op, a, x->type.rank, l->values[o->in[1]].type.rank, &bn, &bp);
		if (o->nin > 1 + nparams) {   /* a slice of the normalized dims (lower.c): the rows' statistics given */
			int64_t rows = 1, nd = norm_axis(bn, x->type.rank);
			for (int d = 0; d < nd; d++)
				rows *= x->type.dims[d];
			sb_printf(b, "sc_norm_part(rt, %s, %s, %s, %s, %s, %s, %s, %lld, %lld, %.17g);", op_info[o->op].kernel, x0,
			          x1, beta, norm_centered(o->op) ? p->cname[o->in[1 + nparams]] : "NULL",
			          p->cname[o->in[o->nin - 1]], y, (long long)rows, (long long)(numel(x) / rows), a->epsilon);
			break;
		}
		sb_printf(b, "sc_norm(rt, %s, %s, %s, %s, %s, ", op_info[o->op].kernel, x0, x1, beta, y);
		dims_lit(b, x->type.dims, x->type.rank);
		sb_printf(b, ", %d, %lld, %lld, %.17g);", x->type.rank, (long long)bn, (long long)bp, a->epsilon);
		break;
	}
	case OP_ADD_N:   /* x0 + x1, then each next added in place */
		for (int j = 1; j < o->nin; j++) {
			sb_puts(b, j > 1 ? "\n\t\t" : "");
			emit_binary(b, p, "sc_binary", "SC_ADD", j > 1 ? o->result : o->in[0], o->in[j], o->result);
		}
		break;
	case OP_CONCAT: case OP_STACK: {   /* Stack: its operands joined as pieces of 1 along the new dim */
		int axis = (int)norm_axis(a->has_axis && a->naxes ? a->axes[0] : 0, yv->type.rank);
		sb_printf(b, "sc_concat(rt, %s, (const void *const[]){", sc_dtype_name(yv->type.dtype));
		for (int j = 0; j < o->nin; j++)
			sb_printf(b, j ? ", %s" : "%s", p->cname[o->in[j]]);
		sb_puts(b, "}, (const int64_t[]){");
		for (int j = 0; j < o->nin; j++)
			sb_printf(b, j ? ", %lld" : "%lld",
			          o->op == OP_STACK ? 1LL : (long long)l->values[o->in[j]].type.dims[axis]);
		sb_printf(b, "}, %d, %s, ", o->nin, y);
		dims_lit(b, yv->type.dims, yv->type.rank);
		sb_printf(b, ", %d, %d);", yv->type.rank, axis);
		break;
	}
	case OP_CAST:
		sb_printf(b, "sc_cast(rt, %s, %s, %s, %s, %lld);", x0, sc_dtype_name(x->type.dtype), y,
		          sc_dtype_name(yv->type.dtype), (long long)numel(x));
		break;
	case OP_STRIDED_SLICE: case OP_SPLIT: case OP_SPLIT_V: case OP_SLICE:
		sb_printf(b, "sc_strided_slice(rt, %s, %s, %s, ", sc_dtype_name(x->type.dtype), x0, y);
		dims_lit(b, x->type.dims, x->type.rank);
		sb_printf(b, ", %d, ", x->type.rank);
		slice_args(b, p, o, a, x);
		sb_puts(b, ");");
		break;
	case OP_ARANGE: case OP_CAUSAL_MASK: case OP_ROPE_COS: case OP_ROPE_SIN: case OP_FILL_V2: case OP_EYE: case OP_LIN_SPACE:
	case OP_DROPOUT_GEN_MASK: case OP_UNIFORM_REAL:
		emit_constant(b, p, o, a);
		break;
	case OP_SPARSE_SOFTMAX_CE:
		if (o->nin == 4) {   /* a class slice's piece (lower.c); its first class from the table */
			char off[32];
			offset_arg(off, sizeof off, p, o, a);
			sb_printf(b, "sc_sparse_softmax_ce_part(rt, %s, %s, %s, %s, %s, %s, %lld, %lld, %s);", x0, x1,
			          sc_dtype_name(l->values[o->in[1]].type.dtype), p->cname[o->in[2]], p->cname[o->in[3]], y,
			          (long long)x->type.dims[0], (long long)x->type.dims[1], off);
		} else
			sb_printf(b, "sc_sparse_softmax_ce(rt, %s, %s, %s, %s, %lld, %lld);", x0, x1,
			          sc_dtype_name(l->values[o->in[1]].type.dtype), y, (long long)x->type.dims[0],
			          (long long)x->type.dims[1]);
		break;
	case OP_SOFTMAX_CE:
		if (o->nin == 4)   /* a class slice's piece (lower.c): the rows' statistics given */
			sb_printf(b, "sc_softmax_ce_part(rt, %s, %s, %s, %s, %s, %lld, %lld);", x0, x1, p->cname[o->in[2]],
			          p->cname[o->in[3]], y, (long long)x->type.dims[0], (long long)x->type.dims[1]);
		else
			sb_printf(b, "sc_softmax_ce(rt, %s, %s, %s, %lld, %lld);", x0, x1, y, (long long)x->type.dims[0],
			          (long long)x->type.dims[1]);
		break;
	case OP_KL_DIV_LOSS:   /* "none" elementwise, else the piece's sum scaled, completed by an AllReduce (rules.c) */
		sb_printf(b, "sc_kldiv_loss(rt, %s, %s, %s, %lld, %d, %.17g);", x0, x1, y, (long long)numel(x),
		          a->mode != KL_NONE, kldiv_loss_scale(a->mode, x->global, x->type.rank));
		break;
	case OP_L2_LOSS:   /* its pieces' sums completed by an AllReduce (rules.c) */
		sb_printf(b, "sc_l2_loss(rt, %s, %s, %lld);", x0, y, (long long)numel(x));
		break;
	case OP_MASKED_FILL:   /* value a scalar: its one element */
		sb_puts(b, "sc_masked_fill(rt, ");
		tensor_arg(b, p, o->in[0]);
		sb_puts(b, ", ");
		tensor_arg(b, p, o->in[1]);
		sb_printf(b, ", %s, ", p->cname[o->in[2]]);
		tensor_arg(b, p, o->result);
		sb_puts(b, ");");
		break;
	case OP_SQUARE_SUM_ALL:   /* twice L2Loss's sum x^2 / 2 (exact), of the operand index names; partial sums */
		sb_printf(b, "sc_l2_loss(rt, %s, %s, %lld);\n\t\tsc_scale(rt, %s, %s, 1, 2.0);", p->cname[o->in[a->output_index]],
		          y, (long long)numel(x), y, y);
		break;
	case OP_LERP:
		sb_puts(b, "sc_lerp(rt, ");
		for (int j = 0; j < 4; j++) {
			tensor_arg(b, p, j < 3 ? o->in[j] : o->result);
			sb_puts(b, j < 3 ? ", " : ");");
		}
		break;
	case OP_MSE_LOSS: case OP_L1_LOSS: {
		double scale;
		sb_printf(b, "sc_%s_loss(rt, %s, %s, %s, %lld);", o->op == OP_MSE_LOSS ? "mse" : "l1", x0, x1, y,
		          (long long)numel(x));
		if (loss_uneven_scale(x, &scale))   /* the local count includes padding */
			sb_printf(b, "\n\t\tsc_scale(rt, %s, %s, 1, %.17g);", y, y, scale);
		break;
	}
	case OP_SEND_RECV: {   /* between pipeline stages: each rank with the one at its place in the other stage */
		long long hop = (long long)(o->stage - o->from_stage) * (long long)l->device_num;
		const char *dt = sc_dtype_name(yv->type.dtype), *up = hop > 0 ? "+" : "-", *down = hop > 0 ? "-" : "+";
		hop = hop > 0 ? hop : -hop;
		sb_printf(b, "if (stage == %d)\n\t\t\tsc_p2p_send(rt, sc_rank(rt) %s %lld, %s, %s, %lld);\n\t\telse if (stage == %d)"
		          "\n\t\t\tsc_p2p_recv(rt, sc_rank(rt) %s %lld, %s, %s, %lld);", o->from_stage, up, hop, x0, dt,
		          (long long)numel(yv), o->stage, down, hop, y, dt, (long long)numel(yv));
		break;
	}
	case OP_STAGE_SUM:   /* over `across`, the ranks at this rank's place in every stage (emit.c) */
		sb_printf(b, "sc_all_reduce(rt, across, %s, %s, %s, %lld, SC_SUM);", x0, y, sc_dtype_name(yv->type.dtype),
		          (long long)numel(yv));
		break;
	case OP_ALL_REDUCE: case OP_ALL_GATHER: case OP_REDUCE_SCATTER: case OP_ALL_TO_ALL:
		/* a collective written in a one-device model: a group of one */
		sb_printf(b, "sc_copy(rt, %s, %s, %lld);", y, x0, (long long)arg_bytes(p, o->result));
		break;
	case OP_TRANSPOSE_FOLDED: case OP_FUSED:   /* no code (emit.c says why) */
	case OP_NORM_GRAD: case OP_FLASH_ATTENTION_GRAD:   /* adjoints */
		die("%s has no forward call", op_info[o->op].name);
	case OP_CALL: case OP_DEPEND: case OP_COUNT:   /* inlined (Depend: its value) by flatten; rejected by check_names */
		die("no %s operator is left to emit", o->op == OP_CALL ? "Call" : "unknown");
	}
}
