/* check_kernels.c: what the runtime's kernels compute, and the settings
 * that do nothing for this model.
 *
 * Requires the graph flattened and autocast run (the types lowering sees).
 * The last of the checks: every model error is found here or before, so that
 * --check accepts exactly what -o compiles; what a later stage cannot do is
 * the compiler's bug. The runtime's kernels compute on Float32, and on
 * Float16 and BFloat16 widened to Float32 around them (plan.c, "half
 * types"); operators that only move elements (Reshape, Transpose, Concat,
 * StridedSlice, Cast, the collectives, Tril, Triu, PadV3 and PadFill) take every type, the logical ones
 * Bool, and index and label operands are integers. Integer arithmetic the runtime has none of.
 *
 * BatchNorm's moving statistics are Parameters only it reads.
 * Token ids and labels an initializer or an Arange gives lie inside what
 * they index.
 * A warning, which stops nothing: recompute: "selective" when it selects no
 * operator (checkpoint.c). */
#include "shardc.h"
#include "scatter_state.h"

#include <stdlib.h>
#include <string.h>

/* Operators that move elements of any type; the rest compute on floats. */
static bool moves_elements(OpKind op)
{
	return op_info[op].view == V_VIEW || op == OP_TRANSPOSE || op == OP_CONCAT || op == OP_STACK ||
	       op_slices(op) || op == OP_CAST || op_is_comm(op) || op_is_triangle(op) || op == OP_PAD_V3 ||
	       op == OP_PAD_FILL;   /* an uneven piece's padding, an integer Arange's too (lower.c) */
}

static void check_operands(const Module *m, const Graph *g, Diag *d)
{
	for (int i = 0; i < g->nnodes; i++) {
		const Node *n = &g->nodes[i];
		if (moves_elements(n->op) || op_info[n->op].shape == SH_LOGICAL)   /* the logical ones: Bool (shape.c) */
			continue;
		for (int k = 0; k < n->nin; k++) {
			bool index = op_info[n->op].nograd & (1u << k);   /* indices, labels */
			DType t = g->values[n->in[k]].type.dtype;
			if (!index && t != DT_F32 && !dtype_is_half(t)) {
				diag_error(d, m->src, n->op_span, "%s on %s: shardc's runtime computes %s on Float32, Float16 "
				           "and BFloat16 only; Cast '%%%s' to Float32 first", op_info[n->op].name, dtype_name(t),
				           op_info[n->op].name, g->values[n->in[k]].name);
				break;
			}
		}
	}
}

/* clip_global_norm scales Float32 gradients by their global norm. */
static void check_clip(const Module *m, const Graph *g, Diag *d)
{
	const Train *t = m->train;
	for (int v = 0; t && t->clip_global_norm > 0 && v < g->nparams; v++)
		if (g->values[v].type.is_param && dtype_is_half(g->values[v].type.dtype)) {
			const Lit *at = lit_dict_get(t->lit, "clip_global_norm");
			diag_error(d, m->src, at ? at->span : t->span, "clip_global_norm with a %s parameter ('%%%s'): the global norm is "
			           "computed on Float32 gradients only; keep the parameters in Float32 and Cast them",
			           dtype_name(g->values[v].type.dtype), g->values[v].name);
			return;
		}
}

/* Lamb's trust ratio reads the parameter, its gradient and its m and v in
 * Float32 (sc_lamb_norms); a half parameter would need Float32 copies of
 * all four at once. */
static void check_lamb(const Module *m, const Graph *g, Diag *d)
{
	const Train *t = m->train;
	for (int v = 0; t && t->optimizer == OPT_LAMB && v < g->nparams; v++)
		if (g->values[v].type.is_param && dtype_is_half(g->values[v].type.dtype)) {
			const Lit *at = lit_dict_get(t->lit, "optimizer");
			diag_error(d, m->src, at ? at->span : t->span, "Lamb with a %s parameter ('%%%s'): not yet (its norms are "
			           "taken in Float32); keep the parameters in Float32 and use precision: \"bf16\" (BFloat16 "
			           "compute, Float32 master weights)", dtype_name(g->values[v].type.dtype), g->values[v].name);
			return;
		}
}

static void dims_text(StrBuf *b, const Type *t)
{
	sb_putc(b, '(');
	for (int k = 0; k < t->rank; k++)
		sb_printf(b, k ? ", %lld" : "%lld", (long long)t->dims[k]);
	sb_puts(b, t->rank == 1 ? ",)" : ")");
}

/* recompute: "selective" picks BatchMatMuls whose result outweighs their
 * inputs (attention's scores, (batch, heads, seq, seq) from two (batch,
 * heads, seq, head dim): heavier once seq > 2 head dim) and what reads them;
 * on a model with none it recomputes nothing. recompute: true recomputes
 * what lies between the cut points: nothing in a plain chain. Either says
 * so when it recomputes nothing. */
static void warn_recompute_nothing(const Module *m, const FlatGraph *f, Diag *d)
{
	const Train *t = m->train;
	if (!t || t->recompute == RECOMPUTE_NONE)
		return;
	const Graph *g = f->g;
	bool *marked = xcalloc((size_t)(g->nnodes ? g->nnodes : 1), sizeof *marked);
	recompute_policy(m, f, t->recompute, marked);
	bool any = false;
	for (int i = 0; i < g->nnodes; i++)
		any |= marked[i];
	free(marked);
	if (any)
		return;
	const Lit *v = lit_dict_get(t->lit, "recompute");
	Span at = v ? v->span : t->span;   /* --recompute: no key; the train block */
	if (t->recompute == RECOMPUTE_LAYERS) {   /* a chain: every value is a layer's boundary, kept */
		diag_warning(d, m->src, at, "recompute: true recomputes nothing here: every value the backward pass reads "
		             "is a boundary between layers (each path from the inputs to the loss goes through it), which "
		             "recomputation keeps; it saves memory where a layer holds values inside it (two branches, "
		             "attention, a residual)");
		return;
	}
	const Node *bmm = NULL;
	for (int i = 0; i < g->nnodes && !bmm; i++)
		if (g->nodes[i].op == OP_BATCH_MATMUL && g->nodes[i].nin == 2)
			bmm = &g->nodes[i];
	if (!bmm) {
		diag_warning(d, m->src, at, "recompute: \"selective\" recomputes nothing here: the model has no "
		             "BatchMatMul (attention's scores), which it recomputes with the cheap operators reading it");
		return;
	}
	const Type *y = &g->values[bmm->result].type, *a = &g->values[bmm->in[0]].type;
	bool ta = bmm->a.transpose_a;
	int64_t seq = y->rank ? y->dims[y->rank - 1] : 1;
	int64_t k = a->rank >= 2 ? a->dims[a->rank - (ta ? 2 : 1)] : 1;
	StrBuf ys = {0};
	dims_text(&ys, y);
	diag_warning(d, m->src, at, "recompute: \"selective\" recomputes nothing here: no BatchMatMul's result outweighs "
	             "its inputs (%%%s %s: sequence length %lld, head dim %lld); attention's scores do when the sequence "
	             "is longer than twice the head dim", g->values[bmm->result].name, ys.data, (long long)seq,
	             (long long)k);
	sb_free(&ys);
}

/* An input of token ids or labels drawn by randint(lo, hi) takes values in
 * [lo, hi), which must lie inside what they index (index_bound); a file's
 * values are checked as the program reads them (sc_load_indices). */
static void check_index_inits(const Module *m, const Graph *g, Diag *d)
{
	for (int v = 0; v < g->nparams; v++) {
		const Lit *init = g->values[v].init;
		int user;
		if (!init || init->kind != LIT_APPLY || strcmp(init->s, "randint") || init->nitems < 2)
			continue;
		int64_t bound = index_bound(g, v, &user);
		int64_t lo = (int64_t)lit_number(init->items[0]), hi = (int64_t)lit_number(init->items[1]);
		if (bound < 0 || (lo >= 0 && hi <= bound))
			continue;
		StrBuf why = {0};
		index_bound_text(&why, g, user, bound);
		diag_error(d, m->src, init->span, "randint(%lld, %lld) draws '%%%s' from [%lld, %lld), but %s: use "
		           "randint(0, %lld) or a smaller range inside it", (long long)lo, (long long)hi, g->values[v].name,
		           (long long)lo, (long long)hi, why.data, (long long)bound);
		sb_free(&why);
	}
}

/* An integer Arange, FillV2 or Eye (0 and 1) that reaches a Gather's indices or a
 * cross-entropy's labels (index_bound) must stay inside what it indexes, as
 * randint must. */
static void check_index_aranges(const Module *m, const Graph *g, Diag *d)
{
	for (int i = 0; i < g->nnodes; i++) {
		const Node *n = &g->nodes[i];
		int user;
		if (n->op != OP_ARANGE && n->op != OP_FILL_V2 && n->op != OP_EYE)
			continue;
		int64_t bound = index_bound(g, n->result, &user);
		const Attrs *a = &n->a;
		bool fill = n->op == OP_FILL_V2, eye = n->op == OP_EYE;
		double first = eye ? 0 : fill ? a->fill : a->start + (double)((a->present & (ATTR_BIT(ATTR_BEGIN))) ? a->begin[0] : 0) * a->step;
		double last = eye ? 1 : fill ? a->fill : first + (double)(g->values[n->result].type.dims[0] - 1) * a->step;
		double lo = first < last ? first : last, hi = first < last ? last : first;
		if (bound < 0 || (lo >= 0 && hi < (double)bound))
			continue;
		StrBuf why = {0};
		index_bound_text(&why, g, user, bound);
		diag_error(d, m->src, n->op_span, "%s gives '%%%s' values from %lld to %lld, but %s: keep them in [0, %lld)",
		           op_info[n->op].name, g->values[n->result].name, (long long)first, (long long)last, why.data,
		           (long long)bound);
		sb_free(&why);
	}
}

/* BatchNorm's moving mean and variance (docs/language.md, Moving statistics): in training the operator writes
 * them in place, so they are Parameters; a Parameter it reads there takes no gradient and no optimizer, so no
 * other operator (nor a second operand of one) may read it. */
static void check_moving_stats(const Module *m, const Graph *g, Diag *d)
{
	for (int i = 0; i < g->nnodes; i++) {
		const Node *n = &g->nodes[i];
		for (int k = 3; n->op == OP_BATCH_NORM && k < 5 - (n->in[3] == n->in[4]); k++) {
			int v = n->in[k];
			const char *what = k == 3 ? "mean" : "variance";
			if (n->a.is_training && !param_is_moving_stat(g, v)) {
				diag_error(d, m->src, n->op_span, "BatchNorm in training updates its moving %s in place, so '%%%s' must "
				           "be a Parameter of the entry graph (MindSpore's moving_%s, requires_grad=False); it is "
				           "computed or a Tensor input", what, g->values[v].name, what);
				continue;
			}
			int uses = 0;
			for (int j = 0; j < g->nnodes; j++)
				for (int q = 0; q < g->nodes[j].nin; q++)
					uses += g->nodes[j].in[q] == v;
			if (param_is_moving_stat(g, v) && uses > 1)
				diag_error(d, m->src, n->op_span, "'%%%s' is BatchNorm's moving %s: the operator updates it and nothing "
				           "trains it, so no other operand may read it (it is read %d times); give each BatchNorm its "
				           "own moving mean and variance, and read the statistics nowhere else", g->values[v].name,
				           what, uses);
		}
	}
}

/* A parameter_plan fixing where a moving statistic lives would have BatchNorm update a redistributed copy of it:
 * it lives where its BatchNorm wants it (the entry graph's Calls name the flat graph's parameters). */
static void check_moving_plans(const Module *m, const Graph *g, Diag *d)
{
	const Graph *entry = m->graphs[m->ngraphs - 1];
	for (int i = 0; i < entry->nnodes; i++) {
		const ShardSpec *s = entry->nodes[i].op == OP_CALL ? entry->nodes[i].a.shard : NULL;
		for (int j = 0; s && j < s->nplan; j++)
			for (int v = 0; v < g->nparams; v++)
				if (!strcmp(g->values[v].name, s->plan_names[j]) && param_is_moving_stat(g, v)) {
					int w = state_writer(g, v);
					diag_error(d, m->src, s->plan_spans[j], "parameter_plan places '%%%s', %s%s, which the operator "
					           "updates in place where its strategy %s; leave it out of the plan", s->plan_names[j],
					           w < 0 ? "a BatchNorm's moving statistic" : "the state of ",
					           w < 0 ? "" : op_info[g->nodes[w].op].name, w < 0 ? "splits C" : "puts x");
				}
	}
}

bool check_kernels(const Module *m, const FlatGraph *f, Diag *d)
{
	int before = d->nerrors;
	check_operands(m, f->g, d);
	check_clip(m, f->g, d);
	check_lamb(m, f->g, d);
	check_index_inits(m, f->g, d);
	check_index_aranges(m, f->g, d);
	check_moving_stats(m, f->g, d);
	check_moving_plans(m, f->g, d);
	check_state_writers(m, f->g, d);
	if (d->nerrors == before)
		warn_recompute_nothing(m, f, d);
	return d->nerrors == before;
}
