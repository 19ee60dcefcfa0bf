/* check_strategies.c: the strategies as written (tuples of slice counts or
 * layout applications, decoded when check.c checks the names) and their
 * form once shapes are known.
 *
 * The second part requires names checked (strategies and layouts decoded, check.c) and shapes
 * inferred. One strategy per input, one number per dim, no more slices than
 * elements (whether an uneven split works is uneven.c's to say), the
 * device counts (in semi_auto_parallel and auto_parallel), layouts' device
 * matrices, dataset_strategy, and the train block's loss. Operator-specific
 * rules (MatMul's k, unsplit softmax axes) belong to the parallel core. */
#include "check_internal.h"

#include <string.h>

/* ---- strategies as written (check.c decodes them with the names) ---- */

static bool decode_layout_dim(Checker *c, const LayoutDecl *l, const Lit *a, TensorStrategy *t, int dim,
                              unsigned *used)
{
	const Lit *one = a;
	int n = a->kind == LIT_TUPLE ? a->nitems : 1;
	if (a->kind == LIT_TUPLE && n == 0) {
		ERR(c, a->span, "an empty tuple names no device axis; write \"None\" to leave a dim whole");
		return false;
	}
	t->naxes[dim] = 0;
	t->split[dim] = 1;
	for (int k = 0; k < n; k++) {
		one = a->kind == LIT_TUPLE ? a->items[k] : a;
		if (one->kind != LIT_STR) {
			ERR(c, one->span, "a layout dim is an axis alias, a tuple of aliases or \"None\", not %s",
			    lit_kind_name(one->kind));
			return false;
		}
		if (strcmp(one->s, "None") == 0) {
			if (n > 1) {
				ERR(c, one->span, "\"None\" cannot be combined with other axes");
				return false;
			}
			return true;
		}
		int axis = -1;
		for (int i = 0; i < l->ndims; i++)
			if (strcmp(l->alias[i], one->s) == 0)
				axis = i;
		if (axis < 0) {
			StrBuf names = {0};
			for (int i = 0; i < l->ndims; i++)
				sb_printf(&names, "%s\"%s\"", i ? ", " : "", l->alias[i]);
			ERR(c, one->span, "layout '%s' has no axis \"%s\" (its axes are %s)%s", l->name, one->s, names.data,
			    DID_YOU_MEAN(one->s, (const char *const *)l->alias, l->ndims));
			sb_free(&names);
			return false;
		}
		if (*used & (1u << axis)) {
			ERR(c, one->span, "axis \"%s\" is used twice in one tensor layout", one->s);
			return false;
		}
		*used |= 1u << axis;
		t->axes[dim][t->naxes[dim]++] = axis;
		t->split[dim] *= l->dims[axis];
	}
	return true;
}

bool decode_tensor_strategy(Checker *c, const Lit *v, TensorStrategy *t)
{
	memset(t, 0, sizeof *t);
	t->span = v->span;
	if (v->kind == LIT_NONE)
		return true;
	t->given = true;
	if (v->kind == LIT_TUPLE) {
		if (v->nitems > MAX_DIMS) {
			ERR(c, v->span, "a strategy has at most %d numbers", MAX_DIMS);
			return false;
		}
		t->rank = v->nitems;
		for (int i = 0; i < v->nitems; i++) {
			const Lit *x = v->items[i];
			if (x->kind != LIT_INT || x->i < 1 || x->i > (1 << 20)) {
				ERR(c, x->span, "a strategy number is a positive integer: how many slices that dim is cut into");
				return false;
			}
			t->split[i] = x->i;
		}
		return true;
	}
	if (v->kind == LIT_APPLY || v->kind == LIT_IDENT) {
		const LayoutDecl *l = module_layout(c->m, v->s);
		if (!l) {
			ERR(c, v->span, "'%s' is not a declared layout", v->s);
			return false;
		}
		if (v->kind == LIT_IDENT || v->nitems == 0) {
			ERR(c, v->span, "apply layout '%s' to one alias per tensor dim, as %s(\"%s\", \"None\")", l->name,
			    l->name, l->alias[0]);
			return false;
		}
		if (v->nitems > MAX_DIMS) {
			ERR(c, v->span, "a tensor layout has at most %d dims", MAX_DIMS);
			return false;
		}
		t->layout = l;
		t->rank = v->nitems;
		unsigned used = 0;
		for (int i = 0; i < v->nitems; i++) {
			if (v->keys[i]) {
				ERR(c, v->keys[i]->span, "layout arguments are positional");
				return false;
			}
			if (!decode_layout_dim(c, l, v->items[i], t, i, &used))
				return false;
		}
		return true;
	}
	ERR(c, v->span, "a tensor strategy is a tuple of slice counts, a layout application or None, not %s",
	    lit_kind_name(v->kind));
	return false;
}

bool decode_strategy(Checker *c, const Lit *v, Strategy *s, const char *what)
{
	s->span = v->span;
	if (v->kind != LIT_TUPLE) {
		ERR(c, v->span, "%s is a tuple with one entry per tensor, e.g. ((2, 4), (4, 1)), not %s", what,
		    lit_kind_name(v->kind));
		return false;
	}
	if (v->nitems == 0) {
		ERR(c, v->span, "%s is empty", what);
		return false;
	}
	s->n = v->nitems;
	s->t = arena_alloc(c->m->arena, sizeof *s->t * (size_t)s->n);
	const LayoutDecl *layout = NULL;
	bool tuples = false;
	for (int i = 0; i < v->nitems; i++) {
		if (!decode_tensor_strategy(c, v->items[i], &s->t[i]))
			return false;
		if (!s->t[i].given)
			continue;
		if (s->t[i].layout) {
			if (layout && layout != s->t[i].layout) {
				ERR(c, v->items[i]->span, "all layouts of one %s must come from one Layout ('%s' and '%s' differ)",
				    what, layout->name, s->t[i].layout->name);
				return false;
			}
			layout = s->t[i].layout;
		} else
			tuples = true;
		if (layout && tuples) {
			ERR(c, v->items[i]->span, "%s mixes layouts and tuples of slice counts; use one form", what);
			return false;
		}
	}
	return true;
}

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
	/* MindSpore's DropoutDoMaskInfo takes x's entry alone: the mask follows x's layout */
	bool x_alone = n->op == OP_DROPOUT_DO_MASK && in->n == 1;
	if (in->n && in->n != n->nin && !x_alone)
		ERR(c, in->span, "%s has %d input%s but in_strategy gives %d%s%s%s", op, n->nin, n->nin == 1 ? "" : "s",
		    in->n, numbers ? " (a number operand's entry is ())" : "", n->op == OP_PAD_V3 ? "; MindSpore's entry for "
		    "the paddings goes, as they are an attribute here: ((x's), (1,), ()) is " : "",
		    n->op != OP_PAD_V3 ? n->op == OP_DROPOUT_DO_MASK ? "; write ((x's), (x's)) or MindSpore's ((x's),): the "
		    "mask follows x's layout" : ""
		    : n->nin == 2 ? "((x's), ())" : "((x's),) without a constant");
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
		else if (n->op == OP_RESIZE_NEAREST || n->op == OP_RESIZE_BILINEAR)   /* as MindSpore refuses it */
			ERR(c, out->span, "%s takes no out_strategy (MindSpore's %s raises on one): its result is split as "
			    "x; drop it and give the operator reading the result the in_strategy you want", op, op);
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
