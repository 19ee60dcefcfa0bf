/* strategy.c: every operator's strategy, and where inputs and parameters live.
 *
 * Requires check_strategies passed and the graph flattened. By parallel mode
 * (docs/language.md, Context):
 *   stand_alone         one device; strategies ignored.
 *   data_parallel       every operator batch parallel, user strategies
 *                       ignored; inputs split on dim 0 over all devices
 *                       (one of a single row, a scale broadcast over the
 *                       batch, held whole), parameters replicated.
 *   semi_auto_parallel  the user's in_strategy where given, else the
 *                       batch-parallel default; inputs by dataset_strategy.
 *   auto_parallel       as semi_auto until the strategy search fills in the
 *                       unconfigured operators: the seam is search_strategies,
 *                       called last, which may overwrite any NodeStrategy
 *                       whose `user` is false.
 * Reshape gets no strategy (lower.c carries its input's split through). A
 * computed constant, after the search, takes its readers' layout
 * (constant_layouts).
 * Parameters not fixed by a parameter_plan live where their first user wants
 * them (lower.c decides that as it meets the use). */
#include "shardc.h"

#include <string.h>

#define ERR(d, src, span, ...) diag_error((d), (src), (span), __VA_ARGS__)

int64_t strategy_devices(const Module *m)
{
	return m->ctx.parallel_mode == PM_STAND_ALONE ? 1 : m->ctx.device_num;
}

static void dataset_layouts(const Module *m, const FlatGraph *f, Strategies *s, Diag *d)
{
	const Graph *g = f->g;
	int64_t n = s->device_num;
	DatasetMode mode = m->ctx.parallel_mode == PM_DATA_PARALLEL ? DS_DATA_PARALLEL : m->ctx.dataset_mode;
	if (n == 1)
		mode = DS_FULL_BATCH;
	for (int k = 0, j = 0; k < g->nparams; k++) {
		const Value *v = &g->values[k];
		layout_replicated(v->type.rank, n, &s->home[k]);
		if (v->type.is_param) {
			s->home_fixed[k] = m->ctx.parallel_mode == PM_DATA_PARALLEL;
			continue;
		}
		s->home_fixed[k] = true;
		if (v->literal)   /* a number written as an operand: shape (), whole on every rank */
			continue;
		if (mode == DS_TUPLE) {
			if (!layout_from_strategy(&m->ctx.dataset[j], n, &s->home[k]))
				die("dataset strategy passed its check but has no layout");
		} else if (mode == DS_DATA_PARALLEL && v->type.rank > 0 && v->type.dims[0] > 1) {
			/* One row (a scale, a bias broadcast over the batch) is held whole: it broadcasts, it is no batch.
			 * A batch that n does not divide is split unevenly (docs/language.md, Uneven splits). */
			if (v->type.dims[0] < n && m->ctx.parallel_mode == PM_DATA_PARALLEL)
				ERR(d, m->src, v->span, "parallel_mode data_parallel splits dim 0 of every input of more than one "
				    "row over the %lld devices, but '%%%s' has %lld rows, fewer than the devices; use a batch of at "
				    "least %lld, or parallel_mode \"semi_auto_parallel\", whose dataset_strategy \"full_batch\" "
				    "holds the inputs whole", (long long)n, v->name, (long long)v->type.dims[0], (long long)n);
			else if (v->type.dims[0] < n)
				ERR(d, m->src, v->span, "dataset_strategy data_parallel splits dim 0 of every input of more than one "
				    "row over the %lld devices, but '%%%s' has %lld rows, fewer than the devices; use a batch of at "
				    "least %lld, or dataset_strategy \"full_batch\"", (long long)n, v->name,
				    (long long)v->type.dims[0], (long long)n);
			else {
				int64_t split[MAX_DIMS] = {n};
				for (int i = 1; i < v->type.rank; i++)
					split[i] = 1;
				layout_from_split(split, v->type.rank, n, &s->home[k]);
			}
		}
		j++;
	}
}

bool result_layout(const Module *m, int rank, const int64_t *dims, TensorLayout *l)
{
	int64_t n = m->ctx.device_num;
	if (m->train || n == 1 || m->ctx.dataset_mode == DS_TUPLE ||
	    (m->ctx.parallel_mode != PM_SEMI_AUTO && m->ctx.parallel_mode != PM_AUTO))
		return false;
	int64_t split[MAX_DIMS];
	for (int d = 0; d < rank; d++)
		split[d] = 1;
	if (m->ctx.dataset_mode == DS_DATA_PARALLEL && rank > 0 && dims[0] % n == 0)
		split[0] = n;
	layout_from_split(split, rank, n, l);
	return true;
}

bool strategy_copies_first(Strategies *s, const OpDims *od, const int64_t *split, int64_t copies, OpSplit *out)
{
	static const char *const alias[MAX_DIMS] = {"copies", "a1", "a2", "a3", "a4", "a5", "a6", "a7"};
	if (copies <= 1)
		return false;
	int64_t product = 1;
	for (int o = 0; o < od->nod; o++)
		product *= split[o];
	LayoutDecl decl;
	memset(&decl, 0, sizeof decl);   /* interned: padding included */
	memset(out, 0, sizeof *out);
	decl.dims[decl.ndims++] = copies;
	for (int o = 0; o < od->nod; o++) {
		out->split[o] = split[o];
		if (split[o] == 1)
			continue;
		if (decl.ndims == MAX_DIMS)
			return false;
		out->ax[o][out->nax[o]++] = (int8_t)decl.ndims;
		decl.dims[decl.ndims++] = split[o];
	}
	if (copies * product < s->device_num) {   /* the node's own copies, fastest */
		if (decl.ndims == MAX_DIMS)
			return false;
		decl.dims[decl.ndims++] = s->device_num / (copies * product);
	}
	StrBuf name = {0};
	sb_puts(&name, "copies_first");
	for (int a = 0; a < decl.ndims; a++) {
		sb_printf(&name, "%c%lld", a ? 'x' : '_', (long long)decl.dims[a]);
		decl.alias[a] = alias[a];
	}
	decl.name = intern_bytes(s->intern, name.data, name.len + 1);
	sb_free(&name);
	decl.searched = true;
	out->decl = intern_bytes(s->intern, &decl, sizeof decl);
	out->ndev = decl.ndims;
	memcpy(out->dev, decl.dims, sizeof decl.dims);
	return true;
}

int strategy_searched_layouts(const Strategies *s, int nnodes, const LayoutDecl **out)
{
	int n = 0;
	for (int i = 0; i < nnodes; i++) {
		const NodeStrategy *ns = &s->node[i];
		const LayoutDecl *d = ns->has_dims ? ns->split->decl : NULL;
		if (!d || !d->searched)
			continue;
		int j = 0;
		while (j < n && out[j] != d)
			j++;
		if (j == n)
			out[n++] = d;
	}
	return n;
}

void strategy_set_split(Strategies *s, int i, const OpSplit *split)
{
	s->node[i].split = intern_bytes(s->intern, split, sizeof *split);
}

void strategy_set_delivered(Strategies *s, int i, const TensorLayout *l)
{
	s->node[i].has_out_strategy = l != NULL;
	s->node[i].delivered = l ? intern_bytes(s->intern, l, sizeof *l) : NULL;
}

static bool node_strategy(const Module *m, const Graph *g, int i, Strategies *s, Diag *d)
{
	const Node *n = &g->nodes[i];
	int64_t devices = s->device_num;
	NodeStrategy *ns = &s->node[i];
	memset(ns, 0, sizeof *ns);
	if (op_is_comm(n->op)) {
		if (devices > 1) {
			ERR(d, m->src, n->op_span, "%s belongs in per-rank graphs (step_parallel_end); in a model the compiler "
			    "inserts the communication itself", op_info[n->op].name);
			return false;
		}
		return true;
	}
	OpDims od;
	ns->has_dims = op_dims(g, n, &od);
	if (!ns->has_dims)
		return true;
	ns->od = intern_bytes(s->intern, &od, sizeof od);
	OpSplit split;
	const Strategy *in = &n->a.in_strategy;
	bool use_user = m->ctx.parallel_mode == PM_SEMI_AUTO || m->ctx.parallel_mode == PM_AUTO;
	if (use_user && in->n) {
		ns->user = true;
		if (!op_split_from_strategy(&od, n, in, devices, &split, d, m->src))
			return false;
	} else if (m->ctx.parallel_mode == PM_DATA_PARALLEL)
		op_split_data_parallel(n, &od, devices, &split);
	else
		op_split_default(&od, devices, &split);
	strategy_set_split(s, i, &split);
	const Strategy *out = &n->a.out_strategy;
	if (use_user && out->n && out->t[0].given) {
		TensorLayout l;
		memset(&l, 0, sizeof l);
		if (!layout_from_strategy(&out->t[0], devices, &l))
			die("out_strategy passed its check but has no layout");
		strategy_set_delivered(s, i, &l);
	}
	return true;
}

/* Merges into split[] (0: no input has said yet) the op dims' splits that
 * input k of an operator with op dims od takes when laid out as l; false
 * when l splits a dim the operator keeps whole or broadcasts, or an op dim
 * another input split differently. */
static bool splits_from_input(const OpDims *od, int k, const TensorLayout *l, int64_t *split)
{
	int r = k < MAX_RULE_INPUTS ? k : MAX_RULE_INPUTS - 1;
	for (int dim = 0; dim < od->in_rank[r]; dim++) {
		int o = od->in_dim[r][dim];
		int64_t want = layout_dim_split(l, dim);
		if (o < 0 || (od->whole & (1u << o))) {
			if (want != 1)
				return false;
		} else if (split[o] && split[o] != want)
			return false;
		else
			split[o] = want;
	}
	return true;
}

/* Node u's strategy becomes split[] (0s taken as 1) when the devices take it. */
static bool set_splits(Strategies *s, int u, int64_t *split)
{
	const OpDims *od = s->node[u].od;
	int64_t product = 1;
	for (int o = 0; o < od->nod; o++) {
		split[o] = split[o] ? split[o] : 1;
		product *= split[o];
	}
	if (s->device_num % product)
		return false;
	OpSplit os;
	op_split_from_splits(od, split, s->device_num, &os);
	strategy_set_split(s, u, &os);
	return true;
}

/* A planned parameter's first user, when its strategy is only the default,
 * takes the split the plan gives that input (as MindSpore infers an
 * operator's strategy from a parameter's layout), so the parameter is used
 * where it lives. This also makes the plan visible in step_parallel_begin,
 * which has no Calls to carry parameter_plan: there it is the user's
 * in_strategy. */
static void follow_plan(const Graph *g, Strategies *s, int p)
{
	for (int u = 0; u < g->nnodes; u++) {
		const Node *n = &g->nodes[u];
		int k = 0;
		while (k < n->nin && n->in[k] != p)
			k++;
		if (k == n->nin)
			continue;
		NodeStrategy *ns = &s->node[u];
		if (ns->user || !ns->has_dims)
			return;
		int64_t split[MAX_OPDIMS] = {0};
		if (splits_from_input(ns->od, k, &s->home[p], split))   /* the plan's home: a tuple or a Layout */
			set_splits(s, u, split);
		return;
	}
}

const Graph *shard_callee(const Module *m, const ShardSpec *sh)
{
	for (int i = 0; i < m->ngraphs; i++)
		for (int j = 0; j < m->graphs[i]->nnodes; j++)
			if (m->graphs[i]->nodes[j].a.shard == sh)
				return m->graphs[i]->nodes[j].a.callee;
	return NULL;
}

bool node_in_graph(const Graph *c, const Node *n)
{
	return c && n >= c->nodes && n < c->nodes + c->nnodes;
}

/* A shard's in_strategy (docs/language.md, Functional shard): an operator of
 * the callee without its own in_strategy that reads the callee's inputs the
 * shard gives layouts takes the split those layouts give it, as configured
 * (so the search keeps it and propagates from it, as MindSpore's shard
 * seeds sharding propagation), when the inputs agree on it. */
static void shard_inputs(const Module *m, const FlatGraph *f, Strategies *s)
{
	const Graph *g = f->g;
	for (int u = 0; u < g->nnodes; u++) {
		const ShardSpec *sh = f->shard[u];
		NodeStrategy *ns = &s->node[u];
		const Graph *callee = sh ? shard_callee(m, sh) : NULL;
		if (!sh || ns->user || !ns->has_dims || !node_in_graph(callee, f->orig[u]))
			continue;
		const Node *orig = f->orig[u];
		int64_t split[MAX_OPDIMS] = {0};
		bool any = false, ok = true;
		for (int k = 0; k < orig->nin && ok; k++) {
			int p = orig->in[k];
			TensorLayout l;
			if (p >= callee->nparams || p >= sh->in.n || !sh->in.t[p].given)
				continue;
			ok = layout_from_strategy(&sh->in.t[p], s->device_num, &l) && splits_from_input(ns->od, k, &l, split);
			any = true;
		}
		if (any && ok && set_splits(s, u, split))
			ns->user = true;
	}
}

/* parameter_plan (docs/language.md, Functional shard) fixes where named parameters live; requires
 * the operators' strategies assigned, which the plan then adapts. */
static void planned_parameters(const Module *m, const FlatGraph *f, Strategies *s)
{
	const Graph *g = f->g, *entry = module_entry(m);
	for (int i = 0; i < g->nnodes; i++) {
		const ShardSpec *sh = f->shard[i];
		for (int j = 0; sh && j < sh->nplan; j++) {
			int id = graph_value(entry, sh->plan_names[j]);
			if (id < 0 || id >= entry->nparams || s->home_fixed[id] || !sh->plan[j].given ||
			    !layout_from_strategy(&sh->plan[j], s->device_num, &s->home[id]))
				continue;
			s->home_fixed[id] = true;
			follow_plan(g, s, id);
		}
	}
}

bool assign_strategies(Module *m, const FlatGraph *f, Strategies *s, Diag *d)
{
	const Graph *g = f->g;
	int before = d->nerrors;
	s->device_num = strategy_devices(m);
	s->node = arena_alloc(m->arena, sizeof(NodeStrategy) * (size_t)(g->nnodes ? g->nnodes : 1));
	s->home = arena_alloc(m->arena, sizeof(TensorLayout) * (size_t)(g->nparams ? g->nparams : 1));
	s->home_fixed = arena_alloc(m->arena, sizeof(bool) * (size_t)(g->nparams ? g->nparams : 1));
	s->intern = interner_new(m->arena);
	dataset_layouts(m, f, s, d);
	for (int i = 0; i < g->nnodes; i++)
		node_strategy(m, g, i, s, d);
	if (m->ctx.parallel_mode == PM_SEMI_AUTO || m->ctx.parallel_mode == PM_AUTO) {
		shard_inputs(m, f, s);
		planned_parameters(m, f, s);
	}
	return d->nerrors == before;
}

/* True when node i's value must stay whole: it is returned or the loss, an
 * operator without op dims reads it (a Reshape carries its input's layout
 * on), its readers take it in different layouts, or nothing reads it. Else
 * false, *want the layout every reader takes it in. */
static bool readers_layout(const Module *m, const FlatGraph *f, const Strategies *s, int i, TensorLayout *want)
{
	const Graph *g = f->g;
	int r = g->nodes[i].result;
	for (int k = 0; k < g->nret; k++)
		if (g->ret[k] == r)
			return true;
	if (m->train && f->of_entry[m->train->loss] == r)
		return true;
	bool any = false;
	for (int u = i + 1; u < g->nnodes; u++) {
		const Node *n = &g->nodes[u];
		for (int k = 0; k < n->nin; k++) {
			if (n->in[k] != r)
				continue;
			const NodeStrategy *us = &s->node[u];
			TensorLayout l;
			if (!us->has_dims)
				return true;
			op_in_layout(us->od, us->split, k, &l);
			if (any && !layout_equal(&l, want))
				return true;
			*want = l;
			any = true;
		}
	}
	return !any;
}

void constant_layouts(const Module *m, const FlatGraph *f, Strategies *s)
{
	const Graph *g = f->g;
	for (int i = 0; i < g->nnodes; i++) {
		NodeStrategy *ns = &s->node[i];
		if (!op_is_constant(g->nodes[i].op) || !ns->has_dims)
			continue;
		const OpDims *od = ns->od;
		OpSplit os;
		TensorLayout want;
		if (readers_layout(m, f, s, i, &want)) {
			int64_t split[MAX_OPDIMS];
			for (int o = 0; o < od->nod; o++)
				split[o] = 1;
			op_split_from_splits(od, split, s->device_num, &os);
		} else {   /* the readers' matrix and axes: dim d is op dim d */
			memset(&os, 0, sizeof os);
			os.ndev = want.ndev;
			memcpy(os.dev, want.dev, sizeof os.dev);
			os.tuple = true;
			for (int o = 0; o < od->nod; o++) {
				os.split[o] = 1;
				os.nax[o] = want.nmap[o];
				memcpy(os.ax[o], want.map[o], (size_t)want.nmap[o]);
				for (int j = 0; j < want.nmap[o]; j++)
					os.split[o] *= want.dev[want.map[o][j]];
			}
		}
		strategy_set_split(s, i, &os);
	}
}
