/* check_strategies.c: the form of the strategies, once shapes are known.
 *
 * Requires names checked (strategies and layouts decoded, check.c) and shapes
 * inferred. One strategy per input, one number per dim, no more slices than
 * elements (whether an uneven split works is uneven.c's to say), the
 * device counts (in semi_auto_parallel and auto_parallel), layouts' device
 * matrices, dataset_strategy, and the train block's loss. Operator-specific
 * rules (MatMul's k, unsplit softmax axes) belong to the parallel core. */
#include "check_internal.h"

#include <string.h>

static bool devices_matter(const Module *m)
{
	return m->ctx.parallel_mode == PM_SEMI_AUTO || m->ctx.parallel_mode == PM_AUTO;
}

/* One tensor's strategy against its type: rank, slices, devices; keep: its
 * dims the operator keeps whole (no advice to cut them). */
static bool check_tensor_strategy(Checker *c, const TensorStrategy *t, const Type *type, const char *what,
                                  uint32_t keep)
{
	if (!t->given || type->rank < 0)
		return true;
	StrBuf b = {0}, s = {0};
	bool ok = false;
	ints_print(&b, type->dims, type->rank);
	ints_print(&s, t->split, t->rank);
	if (t->rank != type->rank) {
		ERR(c, t->span, "%s has %d dim%s %s but its strategy %s has %d entr%s", what, type->rank,
		    type->rank == 1 ? "" : "s", b.data, s.data, t->rank, t->rank == 1 ? "y" : "ies");
		goto out;
	}
	int64_t product = 1;
	for (int i = 0; i < t->rank; i++) {
		if (type->dims[i] < t->split[i]) {   /* an uneven split is the parallel core's to judge (uneven.c) */
			StrBuf adv = {0};
			split_advice(&adv, type, t->split, i, c->m->ctx.device_num, false, keep);
			ERR(c, t->span, "%s: dim %d of %s (size %lld) cannot be cut into %lld slices%s", what, i, b.data,
			    (long long)type->dims[i], (long long)t->split[i], adv.data);
			sb_free(&adv);
			goto out;
		}
		product *= t->split[i];
	}
	int64_t devices = c->m->ctx.device_num, matrix = 1;
	for (int k = 0; t->layout && k < t->layout->ndims; k++)
		matrix *= t->layout->dims[k];
	if (t->layout && matrix != devices)   /* the Layout's own error says it (check_layouts): not again here */
		goto out;
	if (devices_matter(c->m) && devices % product != 0) {
		char phrase[160];
		int64_t fixed[MAX_DIMS];
		memcpy(fixed, t->split, sizeof(int64_t) * (size_t)t->rank);
		splits_fit_devices(fixed, t->rank, devices);
		StrBuf e = {0};
		ints_print(&e, fixed, t->rank);
		ERR(c, t->span, "%s: the strategy %s uses %lld devices, which does not divide %s; e.g. %s", what, s.data,
		    (long long)product, devices_phrase(&c->m->ctx, phrase, sizeof phrase), e.data);
		sb_free(&e);
		goto out;
	}
	ok = true;
out:
	sb_free(&b);
	sb_free(&s);
	return ok;
}

/* The dims of node n's input k (-1: its result) its operator keeps whole or
 * broadcasts, a bit each: advice never says to cut them. */
static uint32_t kept_dims(const Graph *g, const Node *n, int k)
{
	OpDims od;
	if (!op_dims(g, n, &od))
		return 0;
	const int8_t *dims = od.out_dim;
	int rank = k < 0 ? od.out_rank : op_strategy_dims(&od, k, &dims);
	uint32_t keep = 0;
	for (int d = 0; d < rank; d++) {
		int o = dims[d];
		if (o < 0 || (od.whole & (1u << o)))
			keep |= 1u << d;
	}
	return keep;
}

static void check_node_strategies(Checker *c, Graph *g, Node *n)
{
	const Strategy *in = &n->a.in_strategy, *out = &n->a.out_strategy;
	const char *op = op_info[n->op].name;
	char what[96];
	bool numbers = false;
	for (int k = 0; k < n->nin; k++)
		numbers |= n->operands->items[k]->kind != LIT_VALUE;
	if (in->n && (n->op == OP_RESHAPE || n->op == OP_FLATTEN) && c->m->ctx.parallel_mode != PM_STAND_ALONE &&
	    c->m->ctx.parallel_mode != PM_DATA_PARALLEL)
		diag_warning(c->d, c->src, in->span, "%s has no strategy of its own: its input's split carries through it "
		             "(where the reshape keeps each piece whole; else the input is gathered first), so this "
		             "in_strategy is ignored; give it to the operator that computes %s's input", op, op);
	if (in->n && in->n != n->nin)
		ERR(c, in->span, "%s has %d input%s but in_strategy gives %d%s%s%s", op, n->nin, n->nin == 1 ? "" : "s",
		    in->n, numbers ? " (a number operand's entry is ())" : "", n->op == OP_PAD_V3 ? "; MindSpore's entry for "
		    "the paddings goes, as they are an attribute here: ((x's), (1,), ()) is " : "",
		    n->op != OP_PAD_V3 ? "" : n->nin == 2 ? "((x's), ())" : "((x's),) without a constant");
	else
		for (int k = 0; k < in->n; k++) {
			/* MindSpore's OneHot and Tile: the entry names the result's dims (rules.c) */
			bool names_out = k == 0 && (n->op == OP_ONE_HOT || n->op == OP_TILE);
			snprintf(what, sizeof what, names_out ? "input %d of %s (an entry per dim of its result, MindSpore's): "
			         "the result" : "input %d of %s", k, op);
			check_tensor_strategy(c, &in->t[k], &g->values[names_out ? n->result : n->in[k]].type, what,
			                      kept_dims(g, n, k));
		}
	if (out->n) {
		if (!in->n)
			ERR(c, out->span, "%s: out_strategy needs an in_strategy beside it", op);
		else if (out->n != 1)
			ERR(c, out->span, "%s has one output but out_strategy gives %d", op, out->n);
		else {
			snprintf(what, sizeof what, "the output of %s", op);
			check_tensor_strategy(c, &out->t[0], &g->values[n->result].type, what, kept_dims(g, n, -1));
		}
	}
	const ShardSpec *s = n->a.shard;
	if (s && n->a.callee) {
		const Graph *callee = n->a.callee;
		if (s->in.n != callee->nparams)
			ERR(c, s->in.span, "@%s has %d input%s but the shard in_strategy gives %d", callee->name,
			    callee->nparams, callee->nparams == 1 ? "" : "s", s->in.n);
		else
			for (int k = 0; k < s->in.n; k++) {
				snprintf(what, sizeof what, "input %d of @%s", k, callee->name);
				check_tensor_strategy(c, &s->in.t[k], &callee->values[k].type, what, 0);
			}
		for (int j = 0; j < s->nplan; j++) {
			int id = graph_value(g, s->plan_names[j]);
			snprintf(what, sizeof what, "parameter '%s'", s->plan_names[j]);
			if (id >= 0)
				check_tensor_strategy(c, &s->plan[j], &g->values[id].type, what, 0);
		}
	}
}

static void check_layouts(Checker *c)
{
	for (int i = 0; i < c->m->nlayouts; i++) {
		const LayoutDecl *l = c->m->layouts[i];
		int64_t product = 1;
		for (int k = 0; k < l->ndims; k++)
			product *= l->dims[k];
		if (product != c->m->ctx.device_num)
			ERR(c, l->span, "layout '%s' has a device matrix of %lld devices but device_num is %lld", l->name,
			    (long long)product, (long long)c->m->ctx.device_num);
	}
}

static void check_dataset_strategy(Checker *c)
{
	const Graph *g = module_entry(c->m);
	const Lit *ds = c->m->ctx.dataset_tuple;
	int ninputs = 0;
	for (int k = 0; k < g->nparams; k++)
		ninputs += !g->values[k].type.is_param;
	if (ds->nitems != ninputs) {
		ERR(c, ds->span, "dataset_strategy gives %d entr%s but @%s has %d Tensor input%s", ds->nitems,
		    ds->nitems == 1 ? "y" : "ies", g->name, ninputs, ninputs == 1 ? "" : "s");
		return;
	}
	c->m->ctx.dataset = arena_alloc(c->m->arena, sizeof(TensorStrategy) * (size_t)(ninputs ? ninputs : 1));
	for (int k = 0, j = 0; k < g->nparams; k++) {
		if (g->values[k].type.is_param)
			continue;
		TensorStrategy *t = &c->m->ctx.dataset[j];
		if (!decode_tensor_strategy(c, ds->items[j++], t))
			continue;
		char what[96];
		snprintf(what, sizeof what, "input '%%%s'", g->values[k].name);
		check_tensor_strategy(c, t, &g->values[k].type, what, 0);
	}
}

bool check_strategies(Module *m, Diag *d)
{
	Checker c = {m, d, m->src, NULL};
	int before = d->nerrors;
	if (devices_matter(m))
		check_layouts(&c);
	for (int i = 0; i < m->ngraphs; i++) {
		Graph *g = m->graphs[i];
		for (int j = 0; j < g->nnodes; j++)
			if (g->nodes[j].op != OP_COUNT)
				check_node_strategies(&c, g, &g->nodes[j]);
	}
	if (m->ctx.dataset_mode == DS_TUPLE) {
		Checker cds = {m, d, m->ctx.dataset_src, NULL};
		check_dataset_strategy(&cds);
	}
	Train *t = m->train;
	if (t && t->loss >= 0) {
		const Graph *g = module_entry(m);
		const Type *lt = &g->values[t->loss].type;
		int64_t elems = 1;
		for (int i = 0; i < lt->rank; i++)
			elems *= lt->dims[i];
		if (lt->rank >= 0 && (elems != 1 || !dtype_is_float(lt->dtype))) {
			StrBuf b = {0};
			ints_print(&b, lt->dims, lt->rank);
			ERR(&c, lit_dict_get(t->lit, "loss")->span, "the loss must be a float scalar; '%%%s' is %s %s",
			    g->values[t->loss].name, dtype_name(lt->dtype), b.data);
			sb_free(&b);
		}
		bool any_param = false;
		for (int k = 0; k < g->nparams; k++)
			any_param |= g->values[k].type.is_param;
		if (!any_param)
			ERR(&c, t->span, "the train block has nothing to train: @%s has no Parameter", g->name);
	}
	return d->nerrors == before;
}
