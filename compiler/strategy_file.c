/* strategy_file.c: --strategy-in, every operator's strategy read back from
 * the strategy.json a compile wrote (its format: manifest.c).
 *
 * Requires strategies assigned (and searched). Each operator of the flat
 * graph must appear once, by name, with the same operator; its in_strategy
 * (slice counts, or Layout entries naming a declared Layout) is checked by
 * the same rules as a strategy written in the model and replaces the one
 * assigned; out_strategy and `user` likewise. Parameter homes and input
 * layouts follow from the model (its plans, its dataset_strategy) as they
 * did when the file was written, so the per-rank programs come out byte for
 * byte the same. A file that contradicts the model is reported at the
 * operator's entry (FILE:LINE:COL, found by its name in the text, since
 * jansson keeps no positions); one that cannot be read is a command-line
 * error. The jansson values stay in this file. */
#include "shardc.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
	const Module *m;
	const Graph *g;
	Strategies *s;
	Source src;              /* the JSON file, for positions */
	Diag *d;
	int *by_name;            /* node indices sorted by result name */
	bool *seen;
	json_t *layouts;         /* the file's "layouts" */
	const LayoutDecl **made; /* those read so far that the model does not declare */
	int nmade, cap_made;
} Loader;

static int name_cmp(const void *a, const void *b, void *ctx)
{
	const Graph *g = ctx;
	return strcmp(g->values[g->nodes[*(const int *)a].result].name, g->values[g->nodes[*(const int *)b].result].name);
}

static int find_node(const Loader *x, const char *name)
{
	int lo = 0, hi = x->g->nnodes - 1;
	while (lo <= hi) {
		int mid = (lo + hi) / 2, v = x->by_name[mid];
		int c = strcmp(name, x->g->values[x->g->nodes[v].result].name);
		if (c == 0)
			return v;
		if (c < 0)
			hi = mid - 1;
		else
			lo = mid + 1;
	}
	return -1;
}

/* Where `"name": "NAME"` is written (the operator's entry), else the start. */
static Span entry_span(const Loader *x, const char *name)
{
	StrBuf b = {0};
	sb_printf(&b, "\"name\": \"%s\"", name);
	const char *at = strstr(x->src.text, b.data);
	int off = at ? (int)(at - x->src.text) : 0;
	Span sp = {off, off + (at ? (int)b.len : 1)};
	sb_free(&b);
	return sp;
}

#define ERR(x, sp, ...) diag_error((x)->d, &(x)->src, (sp), __VA_ARGS__)

/* A Layout the file declares and the model does not: the search's
 * copies_first_... (strategy_copies_first), made once from the file's
 * "layouts" entry {"name", "dev", "alias"}. NULL when there is none. */
static const LayoutDecl *file_layout(Loader *x, const char *name, Span sp)
{
	for (int i = 0; i < x->nmade; i++)
		if (strcmp(x->made[i]->name, name) == 0)
			return x->made[i];
	for (size_t i = 0; i < json_array_size(x->layouts); i++) {
		json_t *o = json_array_get(x->layouts, i), *jn = json_object_get(o, "name");
		if (!json_is_string(jn) || strcmp(json_string_value(jn), name) != 0)
			continue;
		json_t *dev = json_object_get(o, "dev"), *alias = json_object_get(o, "alias");
		size_t n = json_array_size(dev);
		if (!json_is_array(dev) || n < 1 || n > MAX_DIMS || !json_is_array(alias) || json_array_size(alias) != n) {
			ERR(x, sp, "Layout '%s': \"dev\" needs 1 to %d axis sizes and \"alias\" a name for each", name, MAX_DIMS);
			return NULL;
		}
		LayoutDecl *d = arena_alloc(x->m->arena, sizeof *d);
		memset(d, 0, sizeof *d);
		d->name = arena_strdup(x->m->arena, name);
		d->ndims = (int)n;
		d->searched = true;
		int64_t product = 1;
		for (size_t a = 0; a < n; a++) {
			json_t *size = json_array_get(dev, a), *al = json_array_get(alias, a);
			if (!json_is_integer(size) || json_integer_value(size) < 1 || json_integer_value(size) > 1048576 ||
			    !json_is_string(al)) {
				ERR(x, sp, "Layout '%s': axis %zu needs a positive size and a name", name, a);
				return NULL;
			}
			d->dims[a] = json_integer_value(size);
			d->alias[a] = arena_strdup(x->m->arena, json_string_value(al));
			product *= d->dims[a];
		}
		if (product != x->s->device_num) {
			ERR(x, sp, "Layout '%s' covers %lld devices, the model runs on %lld", name, (long long)product,
			    (long long)x->s->device_num);
			return NULL;
		}
		*ARENA_PUSH(x->m->arena, x->made, x->nmade, x->cap_made) = d;
		return d;
	}
	return NULL;
}

/* One tensor's strategy: [2, 4] or {"layout": "L", "dev": [...], "map": [[...], ...]}. */
static bool tensor_strategy(Loader *x, json_t *j, int rank, Span sp, const char *what, TensorStrategy *t)
{
	memset(t, 0, sizeof *t);
	t->span = sp;
	t->rank = rank;
	if (json_is_array(j)) {
		if ((int)json_array_size(j) != rank) {
			ERR(x, sp, "%s has %d numbers but the tensor has %d dims", what, (int)json_array_size(j), rank);
			return false;
		}
		for (int d = 0; d < rank; d++) {
			json_t *v = json_array_get(j, (size_t)d);
			if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 1048576) {
				ERR(x, sp, "%s: dim %d must be a positive slice count", what, d);
				return false;
			}
			t->split[d] = json_integer_value(v);
		}
		t->given = true;
		return true;
	}
	json_t *name = json_object_get(j, "layout"), *map = json_object_get(j, "map");
	const LayoutDecl *decl = json_is_string(name) ? module_layout(x->m, json_string_value(name)) : NULL;
	if (!decl && json_is_string(name)) {
		int before = x->d->nerrors;
		decl = file_layout(x, json_string_value(name), sp);
		if (x->d->nerrors != before)
			return false;
	}
	if (!decl) {
		ERR(x, sp, "%s must be slice counts or {\"layout\": a Layout the model or the file's \"layouts\" declare, "
		    "\"map\": ...}", what);
		return false;
	}
	if (!json_is_array(map) || (int)json_array_size(map) != rank) {
		ERR(x, sp, "%s: \"map\" needs one list of device axes per dim (%d)", what, rank);
		return false;
	}
	t->layout = decl;
	uint32_t used = 0;
	for (int d = 0; d < rank; d++) {
		json_t *axes = json_array_get(map, (size_t)d);
		t->split[d] = 1;
		if (!json_is_array(axes) || json_array_size(axes) > MAX_DIMS) {
			ERR(x, sp, "%s: map entry %d must be a list of device axes", what, d);
			return false;
		}
		for (size_t k = 0; k < json_array_size(axes); k++) {
			json_t *a = json_array_get(axes, k);
			int64_t ax = json_is_integer(a) ? json_integer_value(a) : -1;
			if (ax < 0 || ax >= decl->ndims || (used & (1u << ax))) {
				ERR(x, sp, "%s: map entry %d names device axis %lld, which %s", what, d, (long long)ax,
				    ax < 0 || ax >= decl->ndims ? "the Layout does not have" : "is used twice");
				return false;
			}
			used |= 1u << ax;
			t->axes[d][t->naxes[d]++] = (int)ax;
			t->split[d] *= decl->dims[ax];
		}
	}
	t->given = true;
	return true;
}

static bool load_operator(Loader *x, json_t *o)
{
	json_t *jname = json_object_get(o, "name");
	if (!json_is_string(jname)) {
		ERR(x, ((Span){0, 1}), "every operator needs a \"name\"");
		return false;
	}
	const char *name = json_string_value(jname);
	Span sp = entry_span(x, name);
	int v = find_node(x, name);
	if (v < 0) {
		ERR(x, sp, "operator '%%%s' is not in the model", name);
		return false;
	}
	const Node *n = &x->g->nodes[v];
	json_t *jop = json_object_get(o, "op");
	if (!json_is_string(jop) || strcmp(json_string_value(jop), op_info[n->op].name) != 0) {
		ERR(x, sp, "'%%%s' is a %s in the model, not a %s", name, op_info[n->op].name,
		    json_is_string(jop) ? json_string_value(jop) : "(no \"op\")");
		return false;
	}
	if (x->seen[v]) {
		ERR(x, sp, "operator '%%%s' appears twice", name);
		return false;
	}
	x->seen[v] = true;
	NodeStrategy *ns = &x->s->node[v];
	json_t *in = json_object_get(o, "in_strategy"), *out = json_object_get(o, "out_strategy");
	if (!ns->has_dims) {
		if (in && !json_is_null(in)) {
			ERR(x, sp, "'%%%s' (%s) has no strategy of its own; its in_strategy must be null", name,
			    op_info[n->op].name);
			return false;
		}
		return true;
	}
	if (!json_is_array(in) || (int)json_array_size(in) != n->nin) {
		ERR(x, sp, "'%%%s' needs an in_strategy with one entry per input (%d)", name, n->nin);
		return false;
	}
	Strategy st = {n->nin, arena_alloc(x->m->arena, sizeof(TensorStrategy) * (size_t)n->nin), sp};
	for (int k = 0; k < n->nin; k++) {
		char what[64];
		const int8_t *dims;   /* OneHot's indices and Tile's x: the result's dims (rules.c) */
		int rank = (ns->od->strategy_out & (1u << k)) ? op_strategy_dims(ns->od, k, &dims)
		         : x->g->values[n->in[k]].type.rank;
		snprintf(what, sizeof what, "in_strategy of input %d", k);
		if (!tensor_strategy(x, json_array_get(in, (size_t)k), rank, sp, what, &st.t[k]))
			return false;
	}
	OpSplit split;
	if (!op_split_from_strategy(ns->od, n, &st, x->s->device_num, &split, x->d, &x->src))
		return false;
	strategy_set_split(x->s, v, &split);
	json_t *user = json_object_get(o, "user");
	ns->user = json_is_true(user);
	bool has_out = out && !json_is_null(out);
	if (has_out != ns->has_out_strategy) {
		ERR(x, sp, "'%%%s' has %s out_strategy in the model but %s in the file", name, ns->has_out_strategy ? "an" : "no",
		    has_out ? "one" : "none");
		return false;
	}
	if (has_out) {
		TensorStrategy t;
		TensorLayout l;
		if (!json_is_array(out) || json_array_size(out) != 1 ||
		    !tensor_strategy(x, json_array_get(out, 0), x->g->values[n->result].type.rank, sp, "out_strategy", &t))
			return false;
		memset(&l, 0, sizeof l);
		if (!layout_from_strategy(&t, x->s->device_num, &l)) {
			ERR(x, sp, "'%%%s': its out_strategy does not fit %lld devices", name, (long long)x->s->device_num);
			return false;
		}
		strategy_set_delivered(x->s, v, &l);
	}
	return true;
}

/* The file read and parsed into x (x->src its text); NULL (reported) when
 * it cannot be read (*usage set: a command-line error) or is no JSON object
 * with "operators". */
static json_t *load_file(Loader *x, const char *path, bool *usage)
{
	size_t len;
	char *text = read_file(path, &len);
	if (!text) {
		fprintf(x->d->out, "shardc: cannot read strategy file %s: %s\n", path, strerror(errno));
		*usage = true;
		return NULL;
	}
	x->src = (Source){.name = path, .text = text, .len = (int)len};
	json_error_t je;
	json_t *root = json_loadb(text, len, 0, &je);
	if (!root) {
		int off = je.position > 0 ? je.position - 1 : 0;
		ERR(x, ((Span){off, off + 1}), "%s", je.text);
	} else if (!json_is_array(json_object_get(root, "operators"))) {
		ERR(x, ((Span){0, 1}), "a strategy file is an object with \"operators\": [...] (what --strategy-out writes)");
		json_decref(root);
		root = NULL;
	}
	return root;
}

static void loader_done(Loader *x, json_t *root)
{
	json_decref(root);
	free(x->by_name);
	free(x->seen);
	free(x->src.line_starts);
	free((char *)x->src.text);
}

/* x->by_name: the flat graph's operators sorted by result name (find_node). */
static void index_names(Loader *x)
{
	int nn = x->g->nnodes;
	x->by_name = xmalloc(sizeof(int) * (size_t)(nn ? nn : 1));
	x->seen = xcalloc((size_t)(nn ? nn : 1), sizeof(bool));
	for (int v = 0; v < nn; v++)
		x->by_name[v] = v;
	sort_r(x->by_name, (size_t)nn, sizeof(int), name_cmp, (void *)x->g);
}

int strategy_stages(const char *path, Module *m, FlatGraph *f, int **split, Diag *d)
{
	Loader x = {.m = m, .g = f->g, .d = d};
	int before = d->nerrors;
	bool usage = false;
	*split = NULL;
	json_t *root = load_file(&x, path, &usage);
	if (!root)
		return usage ? 2 : 1;
	if (m->train && m->train->micro_auto) {   /* the count the search picked, the batch split so */
		json_t *jm = json_object_get(root, "micro_batches");
		int64_t micro = json_is_integer(jm) ? json_integer_value(jm) : 0;
		if (micro < 1 || micro > 1000000)
			ERR(&x, ((Span){0, 1}), "\"micro_batches\" is the count of micro-batches the strategies are for (the "
			    "model's micro_batches is \"auto\"), a positive integer");
		else if ((m->train->accumulate_steps = micro) > 1 && !rebatch(m, f, micro, d))
			ERR(&x, ((Span){0, 1}), "the model's batch does not split into the file's %lld micro-batches (above)",
			    (long long)micro);
		if (d->nerrors != before) {
			loader_done(&x, root);
			return 1;
		}
	}
	json_t *jp = json_object_get(root, "pipeline_stages"), *ops = json_object_get(root, "operators");
	int64_t stages = jp ? (json_is_integer(jp) ? json_integer_value(jp) : 0) : 1;
	if (stages < 1 || stages > m->ctx.ranks || m->ctx.ranks % stages)
		ERR(&x, ((Span){0, 1}), "\"pipeline_stages\" is a count of stages dividing the model's %lld devices",
		    (long long)m->ctx.ranks);
	else if (m->ctx.pipeline_stages && stages != m->ctx.stages)
		ERR(&x, ((Span){0, 1}), "the file's strategies are for %lld pipeline stages, the model has %lld",
		    (long long)stages, (long long)m->ctx.stages);
	else if (m->ctx.pipeline_stages == 0)   /* "auto": the count the search picked when it wrote the file */
		m->ctx.stages = stages, m->ctx.device_num = m->ctx.ranks / stages;
	if (stages > 1 && d->nerrors == before) {
		index_names(&x);
		int *st = arena_alloc(m->arena, sizeof(int) * (size_t)(f->g->nnodes ? f->g->nnodes : 1));
		for (int i = 0; i < f->g->nnodes; i++)
			st[i] = -2;   /* not in the file */
		for (size_t i = 0; i < json_array_size(ops) && d->nerrors == before; i++) {
			json_t *o = json_array_get(ops, i), *jname = json_object_get(o, "name");
			int v = json_is_string(jname) ? find_node(&x, json_string_value(jname)) : -1;
			if (v < 0)
				continue;   /* strategy_load says what is wrong with the entry */
			json_t *js = json_object_get(o, "stage");
			int lowest = op_is_constant(f->g->nodes[v].op) ? -1 : 0;   /* -1: a constant every stage computes */
			if (!json_is_integer(js) || json_integer_value(js) < lowest || json_integer_value(js) >= stages)
				ERR(&x, entry_span(&x, json_string_value(jname)), "'%%%s' needs a \"stage\" from 0 to %lld "
				    "(the pipeline stage it runs on)", json_string_value(jname), (long long)stages - 1);
			else
				st[v] = (int)json_integer_value(js);
		}
		/* Stages the model writes stand: the file must agree with them. */
		int *written = NULL, *value_stage = NULL;
		if (stages_written(f)) {
			written = xmalloc(sizeof(int) * (size_t)f->g->nnodes);
			value_stage = xmalloc(sizeof(int) * (size_t)(f->g->nvalues ? f->g->nvalues : 1));
			assign_stages(f, NULL, stages, written, value_stage);
		}
		for (int i = 0; i < f->g->nnodes && d->nerrors == before; i++) {
			const Node *n = &f->g->nodes[i];
			const char *name = f->g->values[n->result].name;
			if (st[i] == -2) {
				ERR(&x, ((Span){0, 1}), "operator '%%%s' (%s) of the model is not in the file", name,
				    op_info[n->op].name);
				break;
			}
			if (written && written[i] != st[i]) {
				ERR(&x, entry_span(&x, name), "'%%%s' runs on stage %d as the model's pipeline_stage attributes "
				    "place it, not on stage %d as the file says", name, written[i], st[i]);
				break;
			}
			for (int k = 0; k < n->nin; k++) {
				int made = f->g->values[n->in[k]].node;
				if (made >= 0 && st[made] > st[i]) {
					ERR(&x, entry_span(&x, name), "'%%%s' runs on stage %d but reads '%%%s', on stage %d: values "
					    "flow from earlier stages to later ones", name, st[i], f->g->values[n->in[k]].name, st[made]);
					break;
				}
			}
		}
		free(written);
		free(value_stage);
		*split = st;
	}
	loader_done(&x, root);
	return d->nerrors == before ? 0 : 1;
}

int strategy_load(const char *path, const Module *m, const FlatGraph *f, Strategies *s, Diag *d)
{
	Loader x = {.m = m, .g = f->g, .s = s, .d = d};
	int before = d->nerrors;
	bool usage = false;
	json_t *root = load_file(&x, path, &usage);
	if (!root)
		return usage ? 2 : 1;
	json_t *ops = json_object_get(root, "operators"), *dn = json_object_get(root, "device_num");
	x.layouts = json_object_get(root, "layouts");
	if (!json_is_integer(dn) || json_integer_value(dn) != m->ctx.ranks) {
		ERR(&x, ((Span){0, 1}), "the file's strategies are for %lld devices, the model runs on %lld",
		    json_is_integer(dn) ? (long long)json_integer_value(dn) : 0LL, (long long)m->ctx.ranks);
	} else {
		int nn = f->g->nnodes;
		index_names(&x);
		for (size_t i = 0; i < json_array_size(ops) && d->nerrors == before; i++) {
			json_t *o = json_array_get(ops, i);
			if (!json_is_object(o))
				ERR(&x, ((Span){0, 1}), "operator entry %zu is not an object", i);
			else
				load_operator(&x, o);
		}
		for (int v = 0; v < nn && d->nerrors == before; v++)
			if (!x.seen[v])
				ERR(&x, ((Span){0, 1}), "operator '%%%s' (%s) of the model is not in the file",
				    f->g->values[f->g->nodes[v].result].name, op_info[f->g->nodes[v].op].name);
	}
	loader_done(&x, root);
	return d->nerrors == before ? 0 : 1;
}
