/* dump.c: the two stages a person reads and diffs (docs/output.md, IR dumps).
 *
 * step_parallel_begin is the flat global graph after strategy inference:
 * every operator with its final in_strategy (a tuple, or the Layout it was
 * given), every input and parameter with its layout in a comment, and each
 * operator's device matrix and output layout in a comment at the end of its
 * line. Fed back to shardc it compiles to the same per-rank programs.
 * step_parallel_end is one rank's program: local shapes in every signature,
 * parameters as the rank's slices, and the inserted collectives and slices
 * with their groups, each saying in its comment which edge or rule put it
 * there and between which layouts. It reads back with `shardc --check`. */
#include "shardc.h"
#include "conv.h"
#include "pad_v3.h"

#include <stdlib.h>
#include <string.h>

/* An integral number as an integer (Arange's range of an integer type
 * reads back so), any other as print_float writes it. */
static void print_number(StrBuf *b, double v)
{
	if (v > -9007199254740992.0 && v < 9007199254740992.0 && v == (double)(int64_t)v)
		sb_printf(b, "%lld", (long long)v);
	else
		print_float(b, v);
}

/* The attributes' entries as the IR writes them, in the table's order,
 * without braces; false when there are none. */
static bool print_attr_entries(StrBuf *b, OpKind op, const Attrs *a)
{
	AttrMask mask = (op_info[op].attrs | (op != OP_CALL ? ATTR_BIT(ATTR_RECOMPUTE) : 0) | ATTR_BIT(ATTR_PIPELINE_STAGE)) &
	                a->present;
	mask &= ~(ATTR_BIT(ATTR_IN_STRATEGY) | ATTR_BIT(ATTR_OUT_STRATEGY) | ATTR_BIT(ATTR_GRAPH) | ATTR_BIT(ATTR_SHARD));
	static const char *const reduce_names[] = {"\"sum\"", "\"max\"", "\"mean\"", "\"min\"", "\"prod\""};   /* ReduceOp's order */
	bool first = true;
	for (int k = 0; k < ATTR_COUNT; k++) {
		if (!(mask & ATTR_BIT(k)))
			continue;
		sb_printf(b, "%s%s: ", first ? "" : ", ", attr_info[k].name);
		first = false;
		if (window_print_attr(b, op, a, (AttrKind)k) || pad_v3_print_attr(b, op, a, (AttrKind)k))   /* conv.c's, pad_v3.c's */
			continue;
		switch ((AttrKind)k) {
		case ATTR_TRANSPOSE_A: sb_puts(b, a->transpose_a ? "true" : "false"); break;
		case ATTR_TRANSPOSE_B: sb_puts(b, a->transpose_b ? "true" : "false"); break;
		case ATTR_KEEP_DIMS: sb_puts(b, a->keep_dims ? "true" : "false"); break;
		case ATTR_EXCLUSIVE: sb_puts(b, a->exclusive ? "true" : "false"); break;
		case ATTR_REVERSE: sb_puts(b, a->reverse ? "true" : "false"); break;
		case ATTR_ALIGN_CORNERS: sb_puts(b, a->align_corners ? "true" : "false"); break;
		case ATTR_HALF_PIXEL_CENTERS: sb_puts(b, a->half_pixel_centers ? "true" : "false"); break;
		case ATTR_PAD: sb_puts(b, a->pad ? "true" : "false"); break;
		case ATTR_AXIS:
			if (a->axis_is_tuple)
				ints_print(b, a->axes, a->naxes);
			else
				sb_printf(b, "%lld", (long long)a->axes[0]);
			break;
		case ATTR_SHAPE: case ATTR_MULTIPLES: case ATTR_SIZE: ints_print(b, a->shape, a->nshape); break;
		case ATTR_PERM: ints_print(b, a->perm, a->nperm); break;
		case ATTR_BEGIN_NORM_AXIS: sb_printf(b, "%lld", (long long)a->begin_norm_axis); break;
		case ATTR_BEGIN_PARAMS_AXIS: sb_printf(b, "%lld", (long long)a->begin_params_axis); break;
		case ATTR_EPSILON: print_float(b, a->epsilon); break;
		case ATTR_DTYPE: case ATTR_OUTPUT_TYPE: sb_puts(b, dtype_name(a->dtype)); break;
		case ATTR_K: sb_printf(b, "%lld", (long long)a->topk); break;
		case ATTR_SORTED: sb_puts(b, a->sorted ? "true" : "false"); break;
		case ATTR_BEGIN: ints_print(b, a->begin, a->nbegin); break;
		case ATTR_END: ints_print(b, a->end, a->nend); break;
		case ATTR_STRIDES: ints_print(b, a->strides, a->nstrides); break;
		case ATTR_BEGIN_MASK: sb_printf(b, "%lld", (long long)a->begin_mask); break;
		case ATTR_END_MASK: sb_printf(b, "%lld", (long long)a->end_mask); break;
		case ATTR_ELLIPSIS_MASK: sb_printf(b, "%lld", (long long)a->ellipsis_mask); break;
		case ATTR_NEW_AXIS_MASK: sb_printf(b, "%lld", (long long)a->new_axis_mask); break;
		case ATTR_SHRINK_AXIS_MASK: sb_printf(b, "%lld", (long long)a->shrink_axis_mask); break;
		case ATTR_REDUCE_OP: sb_puts(b, reduce_names[a->reduce_op]); break;
		case ATTR_GROUP: ints_print(b, a->group, a->ngroup); break;
		case ATTR_SPLIT_AXIS: sb_printf(b, "%lld", (long long)a->split_axis); break;
		case ATTR_SIZE_SPLITS: ints_print(b, a->size_splits, a->nsize_splits); break;
		case ATTR_INDICES: ints_print(b, a->indices, a->nindices); break;
		case ATTR_SPLIT_DIM: sb_printf(b, "%lld", (long long)a->split_dim); break;
		case ATTR_NUM_SPLIT: sb_printf(b, "%lld", (long long)a->num_split); break;
		case ATTR_CONCAT_AXIS: sb_printf(b, "%lld", (long long)a->concat_axis); break;
		case ATTR_OFFSET: sb_printf(b, "%lld", (long long)a->offset); break;
		case ATTR_APPROXIMATE: sb_puts(b, a->gelu_erf ? "\"none\"" : "\"tanh\""); break;
		case ATTR_RECOMPUTE: sb_puts(b, a->recompute ? "true" : "false"); break;
		case ATTR_PIPELINE_STAGE: sb_printf(b, "%lld", (long long)a->pipeline_stage); break;
		case ATTR_START: print_number(b, a->start); break;
		case ATTR_STOP: print_number(b, a->stop); break;
		case ATTR_STEP: print_number(b, a->step); break;
		case ATTR_FILL: print_float(b, a->fill); break;
		case ATTR_THETA: print_float(b, a->theta); break;
		case ATTR_KEEP_PROB: print_float(b, a->keep_prob); break;
		case ATTR_ALPHA: print_float(b, a->alpha); break;
		case ATTR_LAMBD: print_float(b, a->lambd); break;
		case ATTR_TOLERANCE: print_float(b, a->tolerance); break;
		case ATTR_REDUCTION: sb_puts(b, (const char *[]){"\"mean\"", "\"none\"", "\"batchmean\"", "\"sum\""}[a->mode]); break;
		case ATTR_N: case ATTR_M: case ATTR_NUM: sb_printf(b, "%lld", (long long)a->shape[k == ATTR_M]); break;
		case ATTR_OUTPUT_NUM: sb_printf(b, "%lld", (long long)a->output_num); break;
		case ATTR_OUTPUT_INDEX: sb_printf(b, "%lld", (long long)a->output_index); break;
		case ATTR_MODE: sb_printf(b, "%lld", (long long)a->mode); break;
		case ATTR_HEAD_NUM: sb_printf(b, "%lld", (long long)a->head_num); break;
		case ATTR_DEPTH: sb_printf(b, "%lld", (long long)a->depth); break;
		case ATTR_DIM: sb_printf(b, "%lld", (long long)a->dim); break;
		case ATTR_DIAGONAL: sb_printf(b, "%lld", (long long)a->diagonal); break;
		case ATTR_MAXLEN: sb_printf(b, "%lld", (long long)a->maxlen); break;
		case ATTR_SEED: sb_printf(b, "%lld", (long long)a->seed); break;
		case ATTR_SEED2: sb_printf(b, "%lld", (long long)a->seed2); break;
		case ATTR_AXIS1: sb_printf(b, "%lld", (long long)a->axis1); break;
		case ATTR_AXIS2: sb_printf(b, "%lld", (long long)a->axis2); break;
		case ATTR_NUM_SEGMENTS: sb_printf(b, "%lld", (long long)a->num_segments); break;
		case ATTR_IS_TRAINING: sb_puts(b, a->is_training ? "true" : "false"); break;
		case ATTR_MOMENTUM: print_float(b, a->momentum); break;
		case ATTR_SCALE_VALUE: print_float(b, a->scale_value); break;
		case ATTR_SPARSE_MODE: sb_printf(b, "%lld", (long long)a->sparse_mode); break;
		case ATTR_INPUT_LAYOUT:
			sb_puts(b, a->input_layout == FA_BSH ? "\"BSH\"" : a->input_layout == FA_BSND ? "\"BSND\"" : "\"BNSD\"");
			break;
		case ATTR_OUT_CHANNEL: case ATTR_KERNEL_SIZE: case ATTR_PAD_MODE: case ATTR_STRIDE: case ATTR_DILATION:
		case ATTR_DATA_FORMAT: case ATTR_PADDINGS: case ATTR_PADDINGS_CONTIGUOUS: case ATTR_INPUT_SIZE:   /* window_print_attr's, pad_v3's */
		case ATTR_GRAPH: case ATTR_SHARD: case ATTR_IN_STRATEGY: case ATTR_OUT_STRATEGY: case ATTR_COUNT: break;
		}
	}
	return !first;
}

/* ` {entries}`, or nothing when there are none. */
static void print_attrs(StrBuf *b, OpKind op, const Attrs *a)
{
	StrBuf e = {0};
	if (print_attr_entries(&e, op, a))
		sb_printf(b, " {%s}", e.data);
	sb_free(&e);
}

/* `%name`, or the number written for a literal (Value.literal) as it was written. */
static void print_operand(StrBuf *b, const Graph *g, int v, bool comma)
{
	const Lit *l = g->values[v].literal;
	sb_printf(b, l ? "%s%s" : "%s%%%s", comma ? ", " : "", l ? l->s : g->values[v].name);
}

/* ---- step_parallel_begin ---- */

/* Input k's layout as a Layout application: L("mp", ("sp", "dp"), "None"). */
static void print_layout_apply(StrBuf *b, const OpSplit *s, const TensorLayout *in)
{
	const LayoutDecl *decl = s->decl;
	sb_printf(b, "%s(", decl->name);
	for (int d = 0; d < in->rank; d++) {
		if (d)
			sb_puts(b, ", ");
		if (in->nmap[d] == 0)
			sb_puts(b, "\"None\"");
		else if (in->nmap[d] == 1)
			print_quoted(b, decl->alias[in->map[d][0]]);
		else {
			sb_putc(b, '(');
			for (int k = 0; k < in->nmap[d]; k++) {
				if (k)
					sb_puts(b, ", ");
				print_quoted(b, decl->alias[in->map[d][k]]);
			}
			sb_putc(b, ')');
		}
	}
	sb_putc(b, ')');
}

static void print_in_strategy(StrBuf *b, const Lowered *l, int i)
{
	const Node *n = &l->flat->g->nodes[i];
	const NodeStrategy *ns = &l->st->node[i];
	sb_puts(b, "in_strategy: (");
	for (int k = 0; k < n->nin; k++) {
		if (k)
			sb_puts(b, ", ");
		if (ns->split->tuple) {
			int64_t split[MAX_DIMS];
			ints_print(b, split, op_in_split(ns->od, ns->split, k, split));
		} else
			print_layout_apply(b, ns->split, (ns->od->strategy_out & (1u << k)) ? &l->node_out[i] : &l->node_in[i][k]);
	}
	sb_puts(b, n->nin == 1 ? ",)" : ")");
}

static void print_begin_node(StrBuf *b, const Lowered *l, int i, const bool *recomputed, const int *stage)
{
	const Graph *g = l->flat->g;
	const Node *n = &g->nodes[i];
	Attrs na = n->a;   /* recompute as decided (recompute.c), not as written */
	na.present &= ~(ATTR_BIT(ATTR_RECOMPUTE));
	if (recomputed && recomputed[i]) {
		na.present |= ATTR_BIT(ATTR_RECOMPUTE);
		na.recompute = true;
	}
	if (stage && stage[i] >= 0) {   /* the stage as assigned, written or not */
		na.present |= ATTR_BIT(ATTR_PIPELINE_STAGE);
		na.pipeline_stage = stage[i];
	}
	const NodeStrategy *ns = &l->st->node[i];
	sb_printf(b, "  %%%s = %s(", g->values[n->result].name, op_info[n->op].name);
	for (int k = 0; k < n->nin; k++)
		print_operand(b, g, n->in[k], k > 0);
	sb_putc(b, ')');
	/* The node's own attributes, then the strategy it ended with. */
	StrBuf attrs = {0};
	bool any = print_attr_entries(&attrs, n->op, &na);
	bool strategy = ns->has_dims && l->device_num > 1 && !op_is_constant(n->op);   /* a constant takes none */
	if (any || strategy) {
		sb_puts(b, " {");
		if (any)
			sb_puts(b, attrs.data);
		if (strategy) {
			sb_puts(b, any ? ", " : "");
			print_in_strategy(b, l, i);
			const Lit *out = n->attr_lit ? lit_dict_get(n->attr_lit, "out_strategy") : NULL;
			if (ns->has_out_strategy && out) {
				sb_puts(b, ", out_strategy: ");
				lit_print(b, out);
			}
		}
		sb_putc(b, '}');
	}
	sb_free(&attrs);
	if (l->device_num > 1) {
		sb_puts(b, "  # ");
		if (ns->has_dims) {
			sb_puts(b, "dev ");
			ints_print(b, ns->split->dev, ns->split->ndev);
			sb_puts(b, "; out ");
		} else if (n->op == OP_RESHAPE)
			sb_puts(b, "no strategy of its own: in ");
		if (n->op == OP_RESHAPE) {
			layout_print(b, &l->node_in[i][0]);
			sb_puts(b, "; out ");
		}
		layout_print(b, &l->node_out[i]);
	}
	sb_putc(b, '\n');
}

void dump_begin(StrBuf *b, const Lowered *l)
{
	const Module *m = l->m;
	const Graph *g = l->flat->g;
	sb_printf(b, "# step_parallel_begin: @%s after strategy inference, on %lld device%s.\n", g->name,
	          (long long)l->device_num, l->device_num == 1 ? "" : "s");
	sb_puts(b, "# Each operator carries its final in_strategy; the comment after it gives its device matrix\n"
	           "# (dev) and its output layout: the device axes splitting each dim, and the axes over which\n"
	           "# it is still partial. Inputs and parameters show where they live. Calls are inlined.\n");
	print_context(b, m);
	for (int i = 0; i < m->nlayouts; i++)
		print_layout_decl(b, m->layouts[i]);
	const LayoutDecl **searched = xmalloc(sizeof *searched * (size_t)(g->nnodes ? g->nnodes : 1));
	int nsearched = strategy_searched_layouts(l->st, g->nnodes, searched);
	if (nsearched)
		sb_puts(b, "# declared by the search: one node's strategy repeated on every node, the copies first\n");
	for (int i = 0; i < nsearched; i++)
		print_layout_decl(b, searched[i]);
	free(searched);
	sb_printf(b, "\ngraph @%s(", g->name);
	int nentry = l->flat->nentry;   /* the numbers written as operands are no parameters */
	for (int p = 0; p < nentry; p++) {
		const Value *v = &g->values[p];
		/* With a comment after each parameter, the comma goes before it. */
		bool comment = l->device_num > 1;
		sb_printf(b, "%s%%%s: ", !p ? "" : comment ? "\n    " : ",\n    ", v->name);
		type_print(b, &v->type);
		if (v->init) {
			sb_puts(b, " = ");
			init_print(b, v->init);
		}
		if (comment) {
			sb_puts(b, p + 1 < nentry ? ",  # " : ") {  # ");
			layout_print(b, &l->home[p]);
		}
	}
	sb_puts(b, nentry && l->device_num > 1 ? "\n" : ") {\n");
	/* Each operator recompute.c recomputes says so itself; the train
	 * block's recompute, which chose them by their Calls, is left out (the
	 * Calls are inlined here). */
	bool *marks = recompute_marks(l), *recomputed = NULL;
	if (marks) {
		recomputed = xcalloc((size_t)g->nnodes, sizeof *recomputed);
		for (int i = 0; i < l->nfwd; i++)
			if (marks[i] && l->ops[i].node >= 0)
				recomputed[l->ops[i].node] = true;
	}
	int *stage = NULL;   /* on a pipeline, each operator's stage as assigned (stages.c), written on it */
	if (l->stages > 1) {
		stage = xmalloc(sizeof(int) * (size_t)(g->nnodes ? g->nnodes : 1));
		for (int i = 0; i < g->nnodes; i++)
			stage[i] = -1;
		for (int i = 0; i < l->nfwd; i++)
			if (l->ops[i].node >= 0)
				stage[l->ops[i].node] = l->ops[i].stage;
	}
	for (int i = 0; i < g->nnodes; i++)
		print_begin_node(b, l, i, recomputed, stage);
	free(stage);
	free(marks);
	free(recomputed);
	sb_puts(b, "  return ");
	for (int k = 0; k < g->nret; k++)
		sb_printf(b, k ? ", %%%s" : "%%%s", g->values[g->ret[k]].name);
	sb_puts(b, "\n}\n");
	if (m->train) {
		sb_puts(b, "\ntrain ");
		Lit t = *m->train->lit;   /* without recompute */
		t.keys = xmalloc(sizeof(Lit *) * (size_t)(t.nitems + 1));
		t.items = xmalloc(sizeof(Lit *) * (size_t)(t.nitems + 1));
		t.nitems = 0;
		for (int k = 0; k < m->train->lit->nitems; k++)
			if (strcmp(m->train->lit->keys[k]->s, "recompute") != 0) {
				t.keys[t.nitems] = m->train->lit->keys[k];
				t.items[t.nitems++] = m->train->lit->items[k];
			}
		lit_print(b, &t);
		free(t.keys);
		free(t.items);
		sb_putc(b, '\n');
	}
}

/* ---- step_parallel_end ---- */

/* widened (nvalues, or NULL): the half type a MatMul's result has in the
 * graph where the MatMul writes Float32 for the Cast that widens it
 * (fuse.c, fold_widening_casts), DT_F32 elsewhere: the graph prints as written. */
static void print_type_list(StrBuf *b, const Lowered *l, const int *ids, int n, const DType *widened)
{
	sb_putc(b, '(');
	for (int k = 0; k < n; k++) {
		if (k)
			sb_puts(b, ", ");
		Type t = l->values[ids[k]].type;
		if (widened && widened[ids[k]] != DT_F32)
			t.dtype = widened[ids[k]];
		type_print(b, &t);
	}
	sb_putc(b, ')');
}

/* `rows 0:8 of (16, 32)`: where a rank's piece lies in the whole tensor. */
static void print_piece(StrBuf *b, const LValue *v, int64_t local)
{
	int64_t start[MAX_DIMS];
	lowered_piece_start(v, local, start);
	sb_puts(b, "[");
	for (int d = 0; d < v->type.rank; d++)
		sb_printf(b, "%s%lld:%lld", d ? ", " : "", (long long)start[d], (long long)(start[d] + v->type.dims[d]));
	sb_puts(b, "] of ");
	ints_print(b, v->global, v->type.rank);
}

/* The fusion mark of operator i (fuse.c), by its kind, if any: a comment
 * after its line in the graph, or a clause of its line in the list of
 * recomputed ones. The line itself is the operator as fusion found it. */
static void fusion_mark(StrBuf *b, const Lowered *l, int i, bool clause)
{
	const LOp *o = &l->ops[i];
	const char *lead = clause ? "; " : "  # ";
	int at[MAX_PARTS], n;
	if (l->fusion && l->fusion[i].rounds != DT_F32) {   /* fuse.c, fold_widening_casts: the graph's type printed */
		sb_printf(b, "%sthe kernel writes the product in Float32 for the Cast that widens it (not rounded to %s)",
		          lead, dtype_name(l->fusion[i].rounds));
		return;
	}
	switch (o->op) {
	case OP_FUSED: {
		const Fusion *f = &l->fusion[i];
		const char *buffer = f->writes ? "which writes it too" : "no buffer of its own";
		if (l->ops[f->into].op == OP_EW_CHAIN)
			sb_printf(b, "%sfused: in the elementwise chain that %%%s's kernel computes, %s", lead,
			          l->values[l->ops[f->into].result].name, buffer);
		else if (clause)
			sb_printf(b, "; fused: computed by the operator that reads it");
		else
			sb_printf(b, "  # fused: computed by the %s that reads it, %s", op_info[unfused(l, f->into)->op].name, buffer);
		break;
	}
	case OP_EW_CHAIN:
		n = fused_parts(l, i, at);
		sb_printf(b, "%sfused: one elementwise kernel (sc_ew_chain) computing", lead);
		for (int k = 0; k < n; k++)
			sb_printf(b, "%s %%%s = %s", k ? "," : "", l->values[l->ops[at[k]].result].name, op_info[unfused(l, at[k])->op].name);
		sb_puts(b, " and this");
		break;
	case OP_SOFTMAX_SCALED: case OP_SOFTMAX_MASKED: case OP_BIAS_UNARY: case OP_BIAS_ADD_RESIDUAL:
		n = fused_parts(l, i, at);   /* the last is the one this operator read */
		if (clause)
			sb_printf(b, "; fused: one kernel with %%%s", l->values[l->ops[at[n - 1]].result].name);
		else
			sb_printf(b, "  # fused: one kernel with %%%s = %s, reading its operands",
			          l->values[l->ops[at[n - 1]].result].name, op_info[unfused(l, at[n - 1])->op].name);
		break;
	case OP_TRANSPOSE_FOLDED:
		sb_printf(b, l->fusion[i].fold == FOLD_READ ? "%sfolded: no copy; BatchMatMuls read %%%s through strides"
		                                            : "%sfolded: no copy; a BatchMatMul wrote %%%s through strides",
		          lead, l->values[l->fusion[i].fold == FOLD_READ ? o->result : o->in[0]].name);
		break;
	case OP_BATCH_MATMUL_STRIDED: case OP_NORM_GRAD: case OP_FLASH_ATTENTION_GRAD:   /* no mark: the operators around say it */
	OP_CASES(OP_TABLE) OP_CASES(PIPELINE_OPS)                 /* the language's and lowering's: nothing fused */
	case OP_COUNT:
		break;
	}
}

/* The attributes that name the whole's shape where the rank computes a
 * piece, printed as the piece's, so that the per-rank graph reads back
 * (--check): BroadcastTo's target, Tile's multiples, a convolution's
 * filters and Conv2DTranspose's result, a windowed operator's rows of the
 * whole result (begin, end) where x is whole along a split result dim, and
 * a computed constant's type where mixed precision made it a half one. The
 * program computes from the types (emit_forward.c), not from these. */
static void piece_printed_attrs(const Lowered *l, const LOp *o, int64_t rank, Attrs *a)
{
	const Type *y = &l->values[o->result].type, *x = o->nin ? &l->values[o->in[0]].type : NULL;
	if (o->op == OP_BROADCAST_TO) {
		a->nshape = y->rank;
		memcpy(a->shape, y->dims, sizeof(int64_t) * (size_t)y->rank);
	} else if (o->op == OP_TILE) {   /* x's dims lined up from the right, 1 before them */
		a->nshape = y->rank;
		for (int d = 0; d < y->rank; d++) {
			int64_t xd = d >= y->rank - x->rank ? x->dims[d - (y->rank - x->rank)] : 1;
			a->shape[d] = xd ? y->dims[d] / xd : 0;
		}
	} else if (op_is_conv(o->op) || o->op == OP_MAX_POOL || o->op == OP_AVG_POOL) {
		if (op_is_conv(o->op))
			a->out_channel = l->values[o->in[1]].type.dims[0];
		if (o->op == OP_CONV2D_TRANSPOSE)
			memcpy(a->shape, y->dims, sizeof(int64_t) * 4);
		/* the result split along h or w where x is whole: the rank's rows of the whole's */
		const LValue *yv = &l->values[o->result], *xv = &l->values[o->in[0]];
		int64_t start[MAX_DIMS];
		lowered_piece_start(yv, rank, start);
		bool piece = false;
		for (int s = 0; s < 2; s++) {
			bool rows = yv->type.dims[2 + s] != yv->global[2 + s] && xv->type.dims[2 + s] == xv->global[2 + s];
			a->begin[s] = rows ? start[2 + s] : 0;
			a->end[s] = a->begin[s] + yv->type.dims[2 + s];
			if (rows && o->op == OP_CONV2D_TRANSPOSE)
				a->shape[2 + s] = yv->global[2 + s];   /* input_size: the whole result's rows */
			piece |= rows;
		}
		if (piece) {
			a->nbegin = a->nend = 2;
			a->present |= ATTR_BIT(ATTR_BEGIN) | ATTR_BIT(ATTR_END);
		}
	} else if (op_is_constant(o->op) && dtype_is_half(y->dtype)) {
		a->dtype = y->dtype;
		a->present |= ATTR_BIT(ATTR_DTYPE);
	}
}

/* `%y = Op(%a, %b) {rank's attributes} : (types) -> (type)` after indent,
 * no newline: one lowered operator as rank sees it. */
static void print_lowered_op(StrBuf *b, const Lowered *l, const LOp *o, int64_t rank, int64_t *members,
                             const char *indent, const DType *widened)
{
	Attrs a;
	int64_t local = rank % l->device_num;   /* on a pipeline: its place in its stage */
	lowered_rank_attrs(l, o, local, &a, members);
	piece_printed_attrs(l, o, local, &a);
	for (int k = 0; k < a.ngroup && a.group == members; k++)   /* a group: of the rank's stage's ranks */
		members[k] += rank - local;
	sb_printf(b, "%s%%%s = %s(", indent, l->values[o->result].name, op_info[o->op].name);
	for (int k = 0; k < o->nin; k++) {
		if (o->in[k] < l->nparams && l->flat->g->values[o->in[k]].literal)
			print_operand(b, l->flat->g, o->in[k], k > 0);
		else
			sb_printf(b, k ? ", %%%s" : "%%%s", l->values[o->in[k]].name);
	}
	sb_putc(b, ')');
	print_attrs(b, o->op, &a);
	sb_puts(b, " : ");
	print_type_list(b, l, o->in, o->nin, widened);
	sb_puts(b, " -> ");
	print_type_list(b, l, &o->result, 1, widened);
}

/* Whether backward operator o reads a value of a clone (is_clone: by value). */
static bool reads_clone(const Lowered *l, const LOp *o, const bool *is_clone)
{
	for (int k = 0; k < o->nin; k++)
		if (is_clone[o->in[k]])
			return true;
	return o->grad == GRAD_ADJOINT && op_recomputes(l, o->of) >= 0;
}

/* The forward operators the backward pass runs again (recompute.c), in
 * order, as comments: the graph above stays the forward program. Each clone
 * names the forward value it recomputes and the backward operator it was
 * made for (the first after it that reads a clone). */
static void dump_recomputed(StrBuf *b, const Lowered *l, int64_t rank)
{
	int n = 0;
	int stage = l->stages > 1 ? (int)(rank / l->device_num) : -1;   /* a pipeline rank's: its stage's only */
	for (int i = l->nfwd; i < l->nops; i++)
		n += op_recomputes(l, i) >= 0 && !op_shadow(l, i) && (stage < 0 || l->ops[i].stage == stage);
	if (!n)
		return;
	bool *is_clone = xcalloc((size_t)l->nvalues, sizeof *is_clone);
	for (int i = l->nfwd; i < l->nops; i++)
		is_clone[l->ops[i].result] = op_recomputes(l, i) >= 0;
	int64_t *members = xmalloc(sizeof(int64_t) * (size_t)l->device_num);
	sb_printf(b, "\n# Backward: recomputed forward operators (%d; recompute.c). Each runs again before the first\n"
	          "# backward operator that reads its value, which the forward value is then not kept for.\n", n);
	for (int i = l->nfwd; i < l->nops; i++) {
		const LOp *o = unfused(l, i);
		if (op_recomputes(l, i) < 0 || op_shadow(l, i) || (stage >= 0 && l->ops[i].stage != stage))
			continue;   /* a shadow is not run: nothing to list */
		print_lowered_op(b, l, o, rank, members, "#   ", NULL);
		sb_printf(b, "  # recomputes %%%s", l->values[l->ops[op_recomputes(l, i)].result].name);
		int r = i + 1;
		while (r < l->nops && (op_recomputes(l, r) >= 0 || !reads_clone(l, &l->ops[r], is_clone)))
			r++;
		if (r < l->nops)
			sb_printf(b, " for the backward's first reader %%%s", l->values[l->ops[r].result].name);
		if (o->bytes)
			sb_printf(b, ", sending %lld bytes again", (long long)o->bytes);
		fusion_mark(b, l, i, true);
		sb_putc(b, '\n');
	}
	free(members);
	free(is_clone);
}

/* On a pipeline (stage >= 0), whether a value or an operator of stage st is
 * in the rank's program: its stage's, or every stage's (-1). */
static bool on_rank_stage(int stage, int st)
{
	return stage < 0 || st < 0 || st == stage;
}

void dump_end(StrBuf *b, const Lowered *l, int64_t rank)
{
	const Module *m = l->m;
	const Graph *g = l->flat->g;
	int stage = l->stages > 1 ? (int)(rank / l->device_num) : -1;
	sb_printf(b, "# step_parallel_end: rank %lld of %lld. Local shapes in every signature; parameters are this\n"
	          "# rank's slices; every inserted operator says why it is there. This rank sends %lld bytes\n"
	          "# per run (docs/output.md, Communication bytes). One rank's program: "
	          "it reads back with `shardc --check`.\n",
	          (long long)rank, (long long)lowered_ranks(l), (long long)l->fwd_bytes);
	if (stage >= 0)
		sb_printf(b, "# Pipeline stage %d of %lld: its operators only; the values other stages send it are inputs,\n"
		          "# those it sends are returned (SendRecv; the bytes above are every stage's).\n", stage,
		          (long long)l->stages);
	if (l->nfwd < l->nops)
		sb_printf(b, "# Training: the backward pass, which the C emitter derives from this graph (autodiff.c),\n"
		          "# sends %lld bytes more per step.\n", (long long)(l->comm_bytes - l->fwd_bytes));
	if (l->once)
		sb_printf(b, "# accumulate_steps %lld: a step runs this graph and the backward pass once a micro-batch, the\n"
		          "# parameters' gradient collectives once, on the sums (accumulate.c); the bytes above are a step's.\n",
		          (long long)m->train->accumulate_steps);
	sb_printf(b, "context {\n  device_num: %lld,\n  parallel_mode: \"stand_alone\",\n  seed: %lld\n}\n",
	          (long long)lowered_ranks(l), (long long)m->ctx.seed);   /* the groups name ranks of every stage */
	sb_printf(b, "\ngraph @%s(", g->name);
	int nentry = l->flat->nentry;   /* the numbers written as operands are no parameters */
	int *in = xmalloc(sizeof(int) * (size_t)(nentry + l->nfwd + 1)), nin = 0;   /* entry values, then received ones */
	for (int p = 0; p < nentry; p++)
		if (on_rank_stage(stage, l->values[p].stage))
			in[nin++] = p;
	for (int i = 0; stage >= 0 && i < l->nfwd; i++)
		if (l->ops[i].op == OP_SEND_RECV && l->ops[i].stage == stage)
			in[nin++] = l->ops[i].result;
	for (int k = 0; k < nin; k++) {
		int p = in[k];
		const LValue *v = &l->values[p];
		const Value *gv = p < nentry ? &g->values[p] : NULL;
		sb_printf(b, "%s%%%s: ", k ? "\n    " : "", v->name);
		if (gv)
			type_print(b, &v->type);
		else {   /* received: a Tensor input of this rank's program */
			Type t = v->type;
			t.is_param = false;
			type_print(b, &t);
		}
		if (gv && gv->init) {
			sb_puts(b, " = ");
			init_print(b, gv->init);
		}
		sb_puts(b, k + 1 < nin ? ",  # " : ") {  # ");
		if (!gv)
			sb_puts(b, "received from another stage: ");
		print_piece(b, v, rank % l->device_num);
	}
	sb_puts(b, nin ? "\n" : ") {\n");
	free(in);
	int64_t *members = xmalloc(sizeof(int64_t) * (size_t)l->device_num);
	DType *widened = xcalloc((size_t)l->nvalues, sizeof *widened);
	for (int i = 0; l->fusion && i < l->nfwd; i++)
		widened[l->ops[i].result] = l->fusion[i].rounds;
	int nsent = 0;
	for (int i = 0; i < l->nfwd; i++) {   /* the backward pass is the emitter's (autodiff.c) */
		const LOp *o = unfused(l, i);   /* as written; fusion_mark says what runs */
		if (stage >= 0 && (l->ops[i].op == OP_SEND_RECV || !on_rank_stage(stage, l->ops[i].stage))) {
			nsent += l->ops[i].op == OP_SEND_RECV && l->ops[i].from_stage == stage;
			continue;
		}
		print_lowered_op(b, l, o, rank, members, "  ", widened);
		const TensorLayout *out = &l->values[o->result].layout;
		if (o->why)
			sb_printf(b, "  # %s", o->why);
		else if (out->partial && l->device_num > 1) {
			int np = layout_group(out, rank % l->device_num, out->partial, members);
			for (int k = 0; k < np; k++)
				members[k] += rank - rank % l->device_num;
			static const char *const names[] = {"sum", "max", "mean", "min", "prod"};   /* ReduceOp's order */
			sb_printf(b, "  # partial %s over ranks ", names[out->partial_op]);
			ints_print(b, members, np);
		}
		fusion_mark(b, l, i, false);
		sb_putc(b, '\n');
	}
	free(members);
	free(widened);
	sb_puts(b, "  return ");
	int nret = 0;
	for (int k = 0; k < l->nret; k++)
		if (on_rank_stage(stage, l->values[l->rets[k]].stage))
			sb_printf(b, nret++ ? ", %%%s" : "%%%s", l->values[l->rets[k]].name);
	for (int i = 0; nsent && i < l->nfwd; i++) {   /* what this stage sends, its results to the others, once each */
		const LOp *o = &l->ops[i];
		bool again = false;
		for (int j = 0; j < i && !again; j++)
			again = l->ops[j].op == OP_SEND_RECV && l->ops[j].in[0] == o->in[0];
		if (o->op == OP_SEND_RECV && o->from_stage == stage && !again)
			sb_printf(b, nret++ ? ", %%%s" : "%%%s", l->values[o->in[0]].name);
	}
	sb_puts(b, "\n}\n");
	dump_recomputed(b, l, rank);
}
