/* manifest.c: OUTDIR/manifest.json and OUTDIR/strategy.json (docs/output.md),
 * and ops.h's table as `shardc --list-ops [--json]` prints it.
 *
 * Requires a Lowered program (but the table). Both files are built as jansson values and
 * dumped here; no json_t leaves this file. Objects keep insertion order, and a
 * container that fits on one line of 100 columns is written on one line, so
 * `"shape": [16, 32]` and a layout read as one line each; a longer list of
 * numbers (a group of many ranks) fills its lines.
 *
 * manifest.json: what the runtime and any checker need to feed, slice and
 * assemble the program's tensors without redoing the layout algebra.
 *
 *   {"device_num": 8, "parallel_mode": "semi_auto_parallel", "graph": "net", "seed": 0,
 *    "micro_batches": 4,            with micro_batches "auto": the count the search chose
 *    "inputs":     [TENSOR...],     the entry graph's Tensor parameters, in order
 *    "parameters": [TENSOR...],     its Parameters, in order
 *    "outputs":    [TENSOR...],     the returned values; "index" k is output_<k>.npy
 *    "groups": [[0, 1, 2, 3], [4, 5, 6, 7]],   every distinct group of an inserted
 *                                   collective, ranks in group order, the list sorted
 *    "collectives": [{"op": "ReduceScatter", "value": "1.1", "bytes_per_rank": 384,
 *                     "call": 0, "group": GRID, "why": "..."}],
 *                                   every inserted collective in program order;
 *                                   "call": k, the runtime call it goes out in (a
 *                                   bucket of gradient AllReduces shares one, bucket.c)
 *    "collective_calls": 7,         runtime collective calls a run (a training step) makes
 *    "comm_bytes_per_rank": [384, ...],   docs/output.md, one entry per rank
 *    "pipeline": {"stages": 2, "devices_per_stage": 4, "micro_batches": 4,
 *                 "scheduler": "1f1b", "stage_ranks": [[0, 3], [4, 7]] (first, last),
 *                 "schedule": [["F0", "F1", "B0", ...], ...] (each stage's passes),
 *                 "p2p_bytes_per_rank": [...] (a step's SendRecv bytes)}
 *                                   with pipeline_stages only; then device_num counts
 *                                   every stage's ranks, a layout spans one stage's
 *                                   devices, and a tensor's "stage" holds it
 *
 * Besides comm_bytes_per_rank and the groups' members (each rank once per
 * distinct GRID), nothing is listed per rank: a piece and a collective's group
 * are rules over the ranks' coordinates on a device matrix, so the file grows
 * with the model, not with device_num.
 *
 *   TENSOR = {"name": "w" (no %), "dtype": "Float32", "shape": [32, 16] (global),
 *             "init": "normal(0.01)" as IR text, or null for the default
 *             (inputs uniform(0, 1), parameters normal(0.01)); outputs have no init,
 *             "layout": LAYOUT, "piece": [8, 16], "copies": [0]}
 *             (with micro_batches "auto" a split input adds "step_shape": the
 *             shape a step's batch has, as written; "shape" is a micro-batch's)
 *   piece: the local shape, the block every rank holds; rank r's block starts at
 *   start[d] = s * piece[d], s the number whose digits are r's coordinates (row-
 *   major over dev) on the axes map[d], most significant first (0 for an
 *   unsplit dim). Pieces are always even: layout_check wants every split to
 *   divide its dim. copies: the axes no dim is split over; ranks differing
 *   only there hold the same block.
 *
 *   LAYOUT = {"dev": [2, 4, 1], "map": [[1], []], "partial": []}
 *   dev: the device matrix, ranks row-major over it (docs/language.md); map[d]: the
 *   device axes (indices into dev) splitting dim d, most significant first;
 *   partial: the axes over which the values are partial results (never for an
 *   input, parameter or output). strategy.json's layouts add "partial_op":
 *   "sum", "max", "min", "prod", "mean", or null when nothing is partial. The manifest's
 *   layouts drop size-1 axes; their dev multiplies to device_num.
 *
 *   GRID = {"dev": [2, 4], "axes": [1]}
 *   rank r's group: the ranks whose coordinates on dev equal r's off the listed
 *   axes, in ascending order (row-major over those axes). Size-1 axes dropped
 *   and neighbours on the same side of "axes" merged, so one partition of the
 *   ranks is always written the same way.
 *
 * strategy.json: every operator's final strategy, written so that a later
 * `--strategy-in` can reproduce them (operators are found by "name", the
 * result value's name in the flat graph, Calls inlined as `<call>.<name>`):
 *
 *   {"device_num": 8, "parallel_mode": "semi_auto_parallel", "graph": "net",
 *    "layouts": [{"name": "L", "dev": [2, 2, 2], "alias": ["dp", "sp", "mp"]}],
 *    "operators": [{"name": "1", "op": "MatMul", "user": true,
 *                   "in_strategy": [[2, 4], [4, 1]], "out_strategy": null,
 *                   "device_matrix": [2, 4, 1], "out_layout": LAYOUT}, ...]}
 *
 *   user: the user's in_strategy (else a default or a search chose it).
 *   in_strategy: slice counts per input (None inputs filled in with what was
 *   inferred), MindSpore's tuple form, from which the device matrix follows;
 *   for a strategy given as Layouts, one {"layout": "L", "dev": [...], "map":
 *   [[...], ...]} per input instead, map indexing the declared matrix; null for
 *   Reshape (no strategy of its own) and for a collective in a one-device model.
 *   out_strategy: null, or the out_strategy given, in the in_strategy's form.
 *   device_matrix: null where in_strategy is. out_layout: the output as the
 *   operator leaves it, partial results included. */
#include "shardc.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { LINE_WIDTH = 100 };

/* ---- building values ---- */

static void set(json_t *obj, const char *key, json_t *v)
{
	if (!v || json_object_set_new(obj, key, v))
		die("out of memory building JSON");
}

static void push(json_t *arr, json_t *v)
{
	if (!v || json_array_append_new(arr, v))
		die("out of memory building JSON");
}

/* Names come from the source, which need not be valid UTF-8: such bytes become '?'. */
static json_t *jstr(const char *s)
{
	if (!s)
		return json_null();
	json_t *v = json_string(s);
	if (v)
		return v;
	char *t = xstrdup(s);
	for (char *p = t; *p; p++)
		if ((unsigned char)*p >= 0x80)
			*p = '?';
	v = json_string(t);
	free(t);
	return v;
}

static json_t *jints(const int64_t *v, int n)
{
	json_t *a = json_array();
	for (int i = 0; i < n; i++)
		push(a, json_integer(v[i]));
	return a;
}

static json_t *jmask(uint32_t mask, int n)
{
	json_t *a = json_array();
	for (int i = 0; i < n; i++)
		if (mask & (1u << i))
			push(a, json_integer(i));
	return a;
}

static const char *reduce_name(ReduceOp op)
{
	return op == REDUCE_MAX_OP ? "max" : op == REDUCE_MIN_OP ? "min" : op == REDUCE_PROD_OP ? "prod" : op == REDUCE_MEAN_OP ? "mean" : "sum";
}

static json_t *jmap(const TensorLayout *l)
{
	json_t *map = json_array();
	for (int d = 0; d < l->rank; d++) {
		json_t *axes = json_array();
		for (int k = 0; k < l->nmap[d]; k++)
			push(axes, json_integer(l->map[d][k]));
		push(map, axes);
	}
	return map;
}

/* LAYOUT: dev, map, partial, and with_op the partial_op. */
static json_t *jlayout(const TensorLayout *l, bool with_op)
{
	json_t *o = json_object();
	set(o, "dev", jints(l->dev, l->ndev));
	set(o, "map", jmap(l));
	set(o, "partial", jmask(l->partial, l->ndev));
	if (with_op)
		set(o, "partial_op", l->partial ? json_string(reduce_name(l->partial_op)) : json_null());
	return o;
}

/* {"layout": "L", "dev": [...], "map": [...]}: a layout given as L(...). */
static json_t *jdecl_layout(const LayoutDecl *decl, const TensorLayout *l)
{
	json_t *o = json_object();
	set(o, "layout", jstr(decl->name));
	set(o, "dev", jints(l->dev, l->ndev));
	set(o, "map", jmap(l));
	return o;
}

/* TENSOR; an output has an index and no init_of, an input or parameter its
 * Value (for the initializer) and index -1. */
static json_t *jtensor(const Lowered *l, int index, const char *name, const LValue *v, const Value *init_of)
{
	json_t *o = json_object();
	if (index >= 0)
		set(o, "index", json_integer(index));
	set(o, "name", jstr(name));
	set(o, "dtype", json_string(dtype_name(v->type.dtype)));
	set(o, "shape", jints(v->global, v->type.rank));
	int64_t rows = init_of ? step_rows(l, (int)(init_of - l->flat->g->values)) : 0;
	if (rows) {   /* micro_batches "auto": shape is a micro-batch's; a step's batch (an --input file) holds rows */
		int64_t step[MAX_DIMS];
		memcpy(step, v->global, sizeof step);
		step[0] = rows;
		set(o, "step_shape", jints(step, v->type.rank));
	}
	if (init_of) {
		const Lit *init = init_of->init;
		if (init) {
			StrBuf b = {0};
			init_print(&b, init);
			set(o, "init", jstr(b.data));
			sb_free(&b);
		} else
			set(o, "init", json_null());
	}
	/* Size-1 axes dropped: the same placement reads the same however the
	 * operator that chose it factored its matrix. */
	TensorLayout norm;
	layout_normalize(&v->layout, &norm);
	if (layout_ndevices(&norm) != l->device_num)
		die("%s: a layout over %lld devices in a %lld-device model", name, (long long)layout_ndevices(&norm),
		    (long long)l->device_num);
	set(o, "layout", jlayout(&norm, false));
	set(o, "piece", jints(v->type.dims, v->type.rank));
	set(o, "copies", jmask(layout_replica_axes(&norm), norm.ndev));
	if (l->stages > 1)   /* the stage whose ranks hold it (rank r's piece: as rank r mod devices_per_stage's) */
		set(o, "stage", json_integer(v->stage));
	return o;
}

/* With pipeline stages: the stages, their ranks, the schedule and the bytes
 * each rank sends point to point (SendRecv) a training step. */
static json_t *jpipeline(const Lowered *l)
{
	const Train *t = l->m->train;
	int64_t n = t && l->once ? t->accumulate_steps : 1, d = l->device_num;
	json_t *o = json_object(), *ranks = json_array(), *sched = json_array(), *p2p = json_array();
	set(o, "stages", json_integer(l->stages));
	set(o, "devices_per_stage", json_integer(d));
	set(o, "micro_batches", json_integer(n));
	set(o, "scheduler", json_string(l->m->ctx.scheduler == SCHED_GPIPE ? "gpipe" : "1f1b"));
	int64_t *act = xmalloc(sizeof(int64_t) * (size_t)(2 * n));
	for (int64_t s = 0; s < l->stages; s++) {
		int64_t first_last[2] = {s * d, s * d + d - 1};
		push(ranks, jints(first_last, 2));
		json_t *list = json_array();
		int na = pipeline_actions(l->m->ctx.scheduler, l->stages, n, s, act);
		for (int k = 0; t && k < na; k++) {
			char e[32];
			snprintf(e, sizeof e, "%c%lld", act[k] % 2 ? 'B' : 'F', (long long)(act[k] / 2));
			push(list, json_string(e));
		}
		push(sched, list);
	}
	free(act);
	int64_t *sent = xcalloc((size_t)l->stages, sizeof(int64_t));   /* each rank of stage s the same */
	for (int i = 0; i < l->nops; i++)
		if (l->ops[i].op == OP_SEND_RECV)
			sent[l->ops[i].from_stage] += l->ops[i].bytes * op_runs(l, i);
	for (int64_t r = 0; r < lowered_ranks(l); r++)
		push(p2p, json_integer(sent[r / d]));
	free(sent);
	set(o, "stage_ranks", ranks);
	set(o, "schedule", sched);
	set(o, "p2p_bytes_per_rank", p2p);
	return o;
}

/* ---- writing: one line when it fits ---- */

typedef struct {
	char *buf;
	size_t len, cap;
	bool overflow;           /* a piece did not fit: the line is not the value */
} Fit;

/* Refuses the piece that does not fit, and remembers it: jansson does not
 * always stop on a refusal (it drops a refused object key and goes on), so
 * its return value alone cannot say the line holds the whole value. */
static int fit_cb(const char *s, size_t n, void *data)
{
	Fit *f = data;
	if (f->overflow || f->len + n > f->cap) {
		f->overflow = true;
		return -1;
	}
	memcpy(f->buf + f->len, s, n);
	f->len += n;
	return 0;
}

static bool numbers(const json_t *arr)
{
	for (size_t i = 0; i < json_array_size(arr); i++)
		if (!json_is_number(json_array_get(arr, i)))
			return false;
	return true;
}

static void emit(StrBuf *b, const json_t *v, int indent, int col)
{
	const size_t flags = JSON_ENCODE_ANY | JSON_PRESERVE_ORDER;
	bool container = json_is_object(v) || json_is_array(v);
	if (!container) {
		char *s = json_dumps(v, flags);
		if (!s)
			die("out of memory writing JSON");
		sb_puts(b, s);
		free(s);
		return;
	}
	char line[LINE_WIDTH];
	Fit f = {line, 0, col < LINE_WIDTH ? (size_t)(LINE_WIDTH - col) : 0, false};
	if (json_dump_callback(v, fit_cb, &f, flags) == 0 && !f.overflow) {
		sb_printf(b, "%.*s", (int)f.len, line);
		return;
	}
	int inner = indent + 2;
	if (json_is_array(v) && numbers(v)) {   /* a long list of ranks or bytes: lines filled */
		sb_putc(b, '[');
		int at = LINE_WIDTH;
		for (size_t i = 0; i < json_array_size(v); i++) {
			char *s = json_dumps(json_array_get(v, i), flags);
			if (!s)
				die("out of memory writing JSON");
			int w = (int)strlen(s) + 1;   /* and its comma, or the line's last column unused */
			if (at + 1 + w > LINE_WIDTH) {
				sb_printf(b, "\n%*s", inner, "");
				at = inner;
			} else {
				sb_putc(b, ' ');
				at++;
			}
			sb_printf(b, "%s%s", s, i + 1 < json_array_size(v) ? "," : "");
			at += w;
			free(s);
		}
		sb_printf(b, "\n%*s]", indent, "");
	} else if (json_is_array(v)) {
		sb_putc(b, '[');
		for (size_t i = 0; i < json_array_size(v); i++) {
			sb_printf(b, "%s\n%*s", i ? "," : "", inner, "");
			emit(b, json_array_get(v, i), inner, inner);
		}
		sb_printf(b, "\n%*s]", indent, "");
	} else {
		sb_putc(b, '{');
		const char *key;
		const json_t *item;
		bool first = true;
		json_object_foreach((json_t *)v, key, item) {
			sb_printf(b, "%s\n%*s\"%s\": ", first ? "" : ",", inner, "", key);   /* our own keys: no escapes */
			emit(b, item, inner, inner + (int)strlen(key) + 4);
			first = false;
		}
		sb_printf(b, "\n%*s}", indent, "");
	}
}

static char *finish(json_t *root)
{
	StrBuf b = {0};
	emit(&b, root, 0, 0);
	sb_putc(&b, '\n');
	json_decref(root);
	return b.data;
}

/* ---- manifest.json ---- */

/* GRID: a collective's groups as a rule. Its step's groups are layout_group
 * over `from`'s matrix along `axes`; dropping size-1 axes and merging two
 * neighbours on the same side of `axes` (the merged coordinate holds both
 * digits) changes neither a rank's coordinates elsewhere nor the order of a
 * group, so the groups are the same. */
typedef struct {
	TensorLayout m;          /* the matrix alone: ndev, dev */
	uint32_t axes;           /* the group's axes of m */
} Grid;

static Grid grid_of(const RedistStep *s)
{
	Grid g;
	memset(&g, 0, sizeof g);
	for (int a = 0; a < s->from.ndev; a++) {
		if (s->from.dev[a] == 1)
			continue;
		bool in = s->axes & (1u << a);
		if (g.m.ndev && (bool)(g.axes & (1u << (g.m.ndev - 1))) == in)
			g.m.dev[g.m.ndev - 1] *= s->from.dev[a];
		else {
			g.axes |= (uint32_t)in << g.m.ndev;
			g.m.dev[g.m.ndev++] = s->from.dev[a];
		}
	}
	return g;
}

static bool grid_equal(const Grid *a, const Grid *b)
{
	if (a->m.ndev != b->m.ndev || a->axes != b->axes)
		return false;
	for (int i = 0; i < a->m.ndev; i++)
		if (a->m.dev[i] != b->m.dev[i])
			return false;
	return true;
}

static json_t *jgrid(const Grid *g)
{
	json_t *o = json_object();
	set(o, "dev", jints(g->m.dev, g->m.ndev));
	set(o, "axes", jmask(g->axes, g->m.ndev));
	return o;
}

typedef struct {
	int64_t *members;        /* (n) ranks in group order */
	int n;
} Group;

static int group_cmp(const void *pa, const void *pb)
{
	const Group *a = pa, *b = pb;
	for (int i = 0; i < a->n && i < b->n; i++)
		if (a->members[i] != b->members[i])
			return a->members[i] < b->members[i] ? -1 : 1;
	return (a->n > b->n) - (a->n < b->n);
}

static bool inserted_collective(const LOp *op)
{
	return op->step && op->step->kind != STEP_SLICE;
}

/* "groups", "collectives" and "collective_calls". The groups are listed once
 * per distinct grid, each group from its first member (coordinate 0 on the
 * grid's axes): linear in device_num per grid, however many collectives share
 * it. */
static void add_collectives(json_t *root, const Lowered *l)
{
	int64_t n = l->device_num;
	Grid *grids = NULL;
	int ngrids = 0, gcap = 0;
	for (int i = 0; i < l->nops; i++) {
		if (!inserted_collective(&l->ops[i]))
			continue;
		Grid g = grid_of(l->ops[i].step);
		if (layout_ndevices(&g.m) != n)
			die("%s: a group over %lld devices in a %lld-device model", l->values[l->ops[i].result].name,
			    (long long)layout_ndevices(&g.m), (long long)n);
		int k = 0;
		while (k < ngrids && !grid_equal(&grids[k], &g))
			k++;
		if (k < ngrids)
			continue;
		if (ngrids == gcap) {
			gcap = gcap ? 2 * gcap : 8;
			grids = xrealloc(grids, sizeof *grids * (size_t)gcap);
		}
		grids[ngrids++] = g;
	}
	Group *groups = NULL;
	int ngroups = 0, cap = 0;
	int64_t *members = xmalloc(sizeof(int64_t) * (size_t)n);
	for (int k = 0; k < ngrids; k++) {
		for (int64_t r = 0; r < n; r++) {
			int64_t coords[MAX_AXES];
			layout_coords(&grids[k].m, r, coords);
			bool first = true;
			for (int a = 0; a < grids[k].m.ndev; a++)
				first &= !(grids[k].axes & (1u << a)) || coords[a] == 0;
			if (!first)
				continue;
			int size = layout_group(&grids[k].m, r, grids[k].axes, members);
			if (ngroups == cap) {
				cap = cap ? 2 * cap : 16;
				groups = xrealloc(groups, sizeof *groups * (size_t)cap);
			}
			groups[ngroups].n = size;
			groups[ngroups].members = xmalloc(sizeof(int64_t) * (size_t)size);
			memcpy(groups[ngroups].members, members, sizeof(int64_t) * (size_t)size);
			ngroups++;
		}
	}
	if (ngroups)
		qsort(groups, (size_t)ngroups, sizeof *groups, group_cmp);
	json_t *jgroups = json_array();
	for (int k = 0; k < ngroups; k++)
		if (k == 0 || group_cmp(&groups[k - 1], &groups[k]) != 0)
			push(jgroups, jints(groups[k].members, groups[k].n));
	set(root, "groups", jgroups);

	json_t *colls = json_array();
	int calls = 0;
	int64_t step_calls = 0;   /* a step's: with accumulate_steps, a micro-batch's N times (op_runs) */
	for (int i = 0; i < l->nops; i++) {
		const LOp *op = &l->ops[i];
		if (!inserted_collective(op))
			continue;
		step_calls += (op_bucket(l, i) >= 0) * op_runs(l, i);
		json_t *o = json_object();
		set(o, "op", json_string(op_info[op->op].name));
		set(o, "value", jstr(l->values[op->result].name));
		set(o, "bytes_per_rank", json_integer(op->bytes));
		calls += op_bucket(l, i) >= 0;
		set(o, "call", json_integer(calls - 1));
		if (l->once)   /* accumulate_steps: a micro-batch's collectives run N times a step */
			set(o, "runs", json_integer(op_runs(l, i)));
		Grid g = grid_of(op->step);
		set(o, "group", jgrid(&g));
		set(o, "why", jstr(op->why));
		push(colls, o);
	}
	set(root, "collectives", colls);
	set(root, "collective_calls", json_integer(step_calls));

	for (int k = 0; k < ngroups; k++)
		free(groups[k].members);
	free(groups);
	free(grids);
	free(members);
}

char *manifest_json(const Lowered *l)
{
	const Graph *g = l->flat->g;
	json_t *root = json_object();
	set(root, "device_num", json_integer(lowered_ranks(l)));
	set(root, "parallel_mode", json_string(parallel_mode_name(l->m->ctx.parallel_mode)));
	set(root, "graph", jstr(g->name));
	set(root, "seed", json_integer(l->m->ctx.seed));
	if (l->m->train && l->m->train->micro_auto)   /* the search's count (the pipeline's too) */
		set(root, "micro_batches", json_integer(l->m->train->accumulate_steps));
	json_t *inputs = json_array(), *params = json_array();
	for (int p = 0; p < l->flat->nentry; p++) {   /* the numbers written as operands are the program's own */
		const Value *v = &g->values[p];
		push(v->type.is_param ? params : inputs, jtensor(l, -1, v->name, &l->values[p], v));
	}
	set(root, "inputs", inputs);
	set(root, "parameters", params);
	json_t *outs = json_array();
	for (int k = 0; k < l->nret; k++)
		push(outs, jtensor(l, k, g->values[g->ret[k]].name, &l->values[l->rets[k]], NULL));
	set(root, "outputs", outs);
	add_collectives(root, l);
	/* Summed per rank, though every rank sends alike today (one SPMD program):
	 * only the operators that send anything are visited. */
	int *sending = xmalloc(sizeof(int) * (size_t)(l->nops ? l->nops : 1));
	int nsending = 0;
	for (int i = 0; i < l->nops; i++)
		if (l->ops[i].bytes)
			sending[nsending++] = i;
	json_t *per_rank = json_array();
	for (int64_t r = 0; r < lowered_ranks(l); r++) {   /* a pipeline stage's ranks send its operators' bytes */
		int64_t sent = 0;
		for (int k = 0; k < nsending; k++)
			if (l->ops[sending[k]].from_stage == r / l->device_num || l->ops[sending[k]].from_stage < 0)
				sent += l->ops[sending[k]].bytes * op_runs(l, sending[k]);
		push(per_rank, json_integer(sent));
	}
	free(sending);
	set(root, "comm_bytes_per_rank", per_rank);
	if (l->stages > 1)
		set(root, "pipeline", jpipeline(l));
	return finish(root);
}

/* ---- strategy.json ---- */

/* in_strategy or out_strategy as the user would write it. */
static json_t *jin_strategy(const Lowered *l, int i)
{
	const Node *n = &l->flat->g->nodes[i];
	const NodeStrategy *ns = &l->st->node[i];
	json_t *a = json_array();
	for (int k = 0; k < n->nin; k++) {
		/* OneHot's indices and Tile's x: the result's dims, as the strategy names them (rules.c) */
		const TensorLayout *in = (ns->od->strategy_out & (1u << k)) ? &l->node_out[i] : &l->node_in[i][k];
		if (ns->split->tuple) {
			int64_t split[MAX_DIMS];
			push(a, jints(split, op_in_split(ns->od, ns->split, k, split)));
		} else
			push(a, jdecl_layout(ns->split->decl, in));
	}
	return a;
}

static json_t *jout_strategy(const Lowered *l, int i)
{
	const NodeStrategy *ns = &l->st->node[i];
	if (!ns->has_out_strategy)
		return json_null();
	const TensorStrategy *t = &l->flat->g->nodes[i].a.out_strategy.t[0];
	json_t *a = json_array();
	push(a, t->layout ? jdecl_layout(t->layout, ns->delivered) : jints(t->split, t->rank));
	return a;
}

char *strategy_json(const Lowered *l)
{
	const Module *m = l->m;
	const Graph *g = l->flat->g;
	json_t *root = json_object();
	set(root, "device_num", json_integer(lowered_ranks(l)));
	set(root, "parallel_mode", json_string(parallel_mode_name(m->ctx.parallel_mode)));
	if (l->stages > 1)   /* and each operator's stage: --strategy-in splits the same way */
		set(root, "pipeline_stages", json_integer(l->stages));
	if (m->train && m->train->micro_auto)   /* --strategy-in splits the batch as this program did */
		set(root, "micro_batches", json_integer(m->train->accumulate_steps));
	set(root, "graph", jstr(g->name));
	json_t *decls = json_array();
	const LayoutDecl **all = xmalloc(sizeof *all * (size_t)(m->nlayouts + g->nnodes + 1));
	for (int i = 0; i < m->nlayouts; i++)
		all[i] = m->layouts[i];
	int nall = m->nlayouts + strategy_searched_layouts(l->st, g->nnodes, all + m->nlayouts);
	for (int i = 0; i < nall; i++) {
		const LayoutDecl *d = all[i];
		json_t *o = json_object(), *alias = json_array();
		for (int a = 0; a < d->ndims; a++)
			push(alias, jstr(d->alias[a]));
		set(o, "name", jstr(d->name));
		set(o, "dev", jints(d->dims, d->ndims));
		set(o, "alias", alias);
		push(decls, o);
	}
	free(all);
	set(root, "layouts", decls);
	json_t *ops = json_array();
	for (int i = 0; i < g->nnodes; i++) {
		const Node *n = &g->nodes[i];
		const NodeStrategy *ns = &l->st->node[i];
		json_t *o = json_object();
		set(o, "name", jstr(g->values[n->result].name));
		set(o, "op", json_string(op_info[n->op].name));
		set(o, "user", json_boolean(ns->user));
		set(o, "in_strategy", ns->has_dims ? jin_strategy(l, i) : json_null());
		set(o, "out_strategy", jout_strategy(l, i));
		set(o, "device_matrix", ns->has_dims ? jints(ns->split->dev, ns->split->ndev) : json_null());
		set(o, "out_layout", jlayout(&l->node_out[i], true));
		if (l->stages > 1)
			set(o, "stage", json_integer(l->node_stage[i]));
		push(ops, o);
	}
	set(root, "operators", ops);
	return finish(root);
}

/* ---- shardc --list-ops: the operator table ---- */

/* Each class's name: its enumerator's, lowercased, without the prefix. */
static const char *const shape_names[] = {"same", "float", "broadcast", "compare", "logical", "matmul", "reduce",
                                            "own"};
static const char *const rule_names[] = {"elemwise", "broadcast", "matmul", "reduce", "own"};
static const char *const grad_names[] = {[GR_NONE] = "none", [GR_X] = "x", [GR_Y] = "y", [GR_XY] = "xy"};
static const char *const prec_names[] = {"low", "f32", "follow", "asis"};

static const char *kernel_name(const OpInfo *o)
{
	return o->kernel ? o->kernel : "own";
}

static json_t *op_row_json(const OpInfo *o)
{
	json_t *r = json_object(), *attrs = json_array(), *nograd = json_array();
	for (int a = 0; a < ATTR_COUNT; a++)
		if (o->attrs & ATTR_BIT(a))
			push(attrs, json_string(attr_info[a].name));
	for (int k = 0; k < 32; k++)
		if (o->nograd & (1u << k))
			push(nograd, json_integer(k));
	set(r, "name", json_string(o->name));
	set(r, "min_inputs", json_integer(o->min_inputs));
	set(r, "max_inputs", o->max_inputs < 0 ? json_null() : json_integer(o->max_inputs));
	set(r, "precision", json_string(prec_names[o->prec]));
	set(r, "grad_reads", json_string(grad_names[o->grad]));
	set(r, "view", json_boolean(o->view == V_VIEW));
	set(r, "shape", json_string(shape_names[o->shape]));
	set(r, "rule", json_string(rule_names[o->rule]));
	set(r, "kernel", json_string(kernel_name(o)));
	set(r, "nograd", nograd);
	set(r, "attributes", attrs);
	return r;
}

char *ops_list(bool json)
{
	if (json) {
		json_t *root = json_array();
		for (int k = 0; k < OP_COUNT; k++)
			if (op_in_language((OpKind)k))   /* the language's operators; lowering's and fuse.c's kinds are no user's */
				push(root, op_row_json(&op_info[k]));
		return finish(root);
	}
	StrBuf b = {0};
	sb_printf(&b, "%-36s %-6s %-9s %-4s %-4s %-9s %-9s %-12s %-6s %s\n", "operator", "inputs", "precision", "grad",
	          "view", "shape", "rule", "kernel", "nograd", "attributes");
	for (int k = 0; k < OP_COUNT; k++) {
		if (!op_in_language((OpKind)k))
			continue;
		const OpInfo *o = &op_info[k];
		char in[16], ng[32] = "-";
		if (o->max_inputs < 0)
			snprintf(in, sizeof in, "%d+", o->min_inputs);
		else if (o->max_inputs != o->min_inputs)
			snprintf(in, sizeof in, "%d-%d", o->min_inputs, o->max_inputs);
		else
			snprintf(in, sizeof in, "%d", o->min_inputs);
		for (int i = 0, n = 0; i < 32; i++)
			if (o->nograd & (1u << i))
				n += snprintf(ng + n, sizeof ng - (size_t)n, "%s%d", n ? "," : "", i);
		sb_printf(&b, "%-36s %-6s %-9s %-4s %-4s %-9s %-9s %-12s %-6s", o->name, in, prec_names[o->prec],
		          grad_names[o->grad], o->view == V_VIEW ? "yes" : "-", shape_names[o->shape], rule_names[o->rule],
		          kernel_name(o), ng);
		const char *sep = " ";
		for (int a = 0; a < ATTR_COUNT; a++)
			if (o->attrs & ATTR_BIT(a)) {
				sb_printf(&b, "%s%s", sep, attr_info[a].name);
				sep = ",";
			}
		while (b.len && b.data[b.len - 1] == ' ')   /* no attributes: no padding left at the end */
			b.data[--b.len] = '\0';
		sb_putc(&b, '\n');
	}
	return b.data;
}
