/* cost.c: the cost model the strategy search minimizes.
 *
 * A cluster (--cluster FILE, or the built-in default) is devices grouped
 * into nodes: links inside a node are fast, links between nodes slow. Costs
 * are seconds:
 *
 *   operator       2 x (multiply-adds of its slice) / device FLOP/s for MatMul
 *                  and BatchMatMul, elements of its slice / FLOP/s otherwise
 *   redistribution the plan redist_plan finds (the cheapest in bytes, a step
 *                  across nodes weighed by cluster_links); each
 *                  collective over a group of n ranks costs
 *                  steps x latency + bytes sent per rank / bandwidth,
 *                  steps ceil(log2 n) under 256 KiB sent per rank (NCCL's
 *                  trees, MPI's recursive doubling), of which the
 *                  ceil(log2 m) that pair ranks of the group's m nodes pay
 *                  the inter-node latency, and n - 1 from there (rings), all
 *                  at the slowest link's latency; bytes at the slowest
 *                  link's bandwidth (a slice is free)
 *   gradients      with a train block, as autodiff.c's backward pass: an
 *                  operator's gradient for an input that needs one is
 *                  partial over the device axes splitting its output but
 *                  not that input, and costs their AllReduce (for a
 *                  replicated weight, the data-parallel gradient sum)
 *   backward edges with a train block, every redistribution of a value that
 *                  needs a gradient has its adjoint: the plan back from the
 *                  consumer's layout to the producer's, both made complete
 *                  (a slice's adjoint is an AllGather, an AllReduce's free)
 *
 * Redistribution costs are cached by (from, to, shape, element size): a deep
 * stack of equal layers asks the same few questions again and again. So are
 * the lower bounds the search prunes with (cost_bound_only), until the plan
 * itself is asked for. The plans' searches are kept too (RedistCache): the
 * many questions from one layout to others go on with one search.
 *
 * The cluster file is a JSON object whose keys are all optional, in SI units:
 *
 *   {"devices_per_node": 8,
 *    "intra_node_bandwidth": 150e9, "intra_node_latency": 5e-6,     bytes/s, s
 *    "inter_node_bandwidth": 25e9,  "inter_node_latency": 2e-5,
 *    "device_flops": 1e14, "device_memory": 80e9,                    FLOP/s, bytes
 *    "gradient_bucket_bytes": 25e6}      gradient AllReduces packed per call (bucket.c); 0: none
 *
 * Its jansson values are read into a Cluster here and released at once. */
#include "cost.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void cluster_default(Cluster *c)
{
	*c = (Cluster){
		.devices_per_node = 8,
		.intra_bw = 150e9, .intra_lat = 5e-6,
		.inter_bw = 25e9, .inter_lat = 2e-5,
		.flops = 1e14, .memory = 80e9,
		.bucket_bytes = 25e6,   /* PyTorch DDP's default bucket */
	};
}

/* FILE:LINE:COL of the first `"key"` in the text (jansson keeps no positions
 * of values it parsed), or FILE alone. */
static void where(FILE *err, const char *path, const char *text, const char *key)
{
	char quoted[80];
	snprintf(quoted, sizeof quoted, "\"%s\"", key);
	const char *at = key ? strstr(text, quoted) : NULL;
	if (!at) {
		fprintf(err, "%s: error: ", path);
		return;
	}
	int line = 1, col = 1;
	for (const char *p = text; p < at; p++, col++)
		if (*p == '\n')
			line++, col = 0;
	fprintf(err, "%s:%d:%d: error: ", path, line, col);
}

int cluster_load(const char *path, Cluster *c, FILE *err)
{
	static const struct {
		const char *key;
		size_t offset;
		bool integer;
	} keys[] = {
		{"devices_per_node", offsetof(Cluster, devices_per_node), true},
		{"intra_node_bandwidth", offsetof(Cluster, intra_bw), false},
		{"intra_node_latency", offsetof(Cluster, intra_lat), false},
		{"inter_node_bandwidth", offsetof(Cluster, inter_bw), false},
		{"inter_node_latency", offsetof(Cluster, inter_lat), false},
		{"device_flops", offsetof(Cluster, flops), false},
		{"device_memory", offsetof(Cluster, memory), false},
		{"gradient_bucket_bytes", offsetof(Cluster, bucket_bytes), false},
	};
	enum { NKEYS = sizeof keys / sizeof keys[0] };
	cluster_default(c);
	size_t len;
	char *text = read_file(path, &len);
	if (!text) {
		fprintf(err, "shardc: cannot read cluster file %s: %s\n", path, strerror(errno));
		return 2;
	}
	json_error_t je;
	json_t *root = json_loadb(text, len, 0, &je);
	int status = 0;
	if (!root) {
		fprintf(err, "%s:%d:%d: error: %s\n", path, je.line, je.column, je.text);
		status = 1;
	} else if (!json_is_object(root)) {
		fprintf(err, "%s:1:1: error: a cluster file is one JSON object (see docs/output.md: the cluster file)\n", path);
		status = 1;
	}
	const char *key;
	json_t *v;
	if (status == 0)
		json_object_foreach(root, key, v) {
			int k = 0;
			while (k < NKEYS && strcmp(keys[k].key, key) != 0)
				k++;
			if (k == NKEYS) {
				where(err, path, text, key);
				fprintf(err, "unknown cluster key '%s' (expected devices_per_node, intra_node_bandwidth, "
				        "intra_node_latency, inter_node_bandwidth, inter_node_latency, device_flops, "
				        "device_memory, gradient_bucket_bytes)\n", key);
				status = 1;
				break;
			}
			double x = json_is_number(v) ? json_number_value(v) : -1;
			bool zero_ok = strstr(key, "latency") != NULL || strcmp(key, "gradient_bucket_bytes") == 0;
			if (keys[k].integer) {
				if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 1048576) {
					where(err, path, text, key);
					fprintf(err, "'%s' must be an integer from 1 to 1048576\n", key);
					status = 1;
					break;
				}
				*(int64_t *)((char *)c + keys[k].offset) = json_integer_value(v);
			} else if (!json_is_number(v) || x < 0 || (!zero_ok && x == 0) || x > 1e30) {
				where(err, path, text, key);
				fprintf(err, "'%s' must be a %s number\n", key, zero_ok ? "non-negative" : "positive");
				status = 1;
				break;
			} else
				*(double *)((char *)c + keys[k].offset) = x;
		}
	json_decref(root);
	free(text);
	return status;
}

/* ---- the cache of redistribution costs ---- */

enum { KEY_MAX = 2 * (4 + MAX_AXES + MAX_DIMS * (1 + MAX_AXES)) + MAX_DIMS + 2 };

typedef struct {
	int nkey;
	int64_t *key;
	double seconds;
	int64_t bytes;
	bool planned;            /* else seconds is only redist_bound's lower bound */
} Entry;

struct CostModel {
	Cluster c;
	int64_t device_num;
	bool train;
	RedistPlan *plan;        /* scratch: a plan is 40 KB */
	RedistCache *searches;   /* redist_plan's searches, kept */
	int64_t *members;        /* (device_num) scratch for groups */
	int64_t *node_mark;      /* (nodes) the last group that met each node: nodes_spanned */
	int64_t group_stamp;
	Entry *e;                /* open addressing, nkey 0 empty */
	size_t nslot, n;
	Arena *a;                /* the keys */
	int64_t hits, misses;
	bool bound_only;         /* a redistribution not cached is bounded, not planned (cost_bound_only) */
};

RedistLinks cluster_links(const Cluster *c)
{
	double w = c->inter_bw > 0 ? c->intra_bw / c->inter_bw : 1;
	return (RedistLinks){c->devices_per_node, w > 1 ? (int64_t)(w + 0.5) : 1};
}

CostModel *cost_new(const Cluster *c, int64_t device_num, bool train)
{
	CostModel *cm = xcalloc(1, sizeof *cm);
	cm->c = *c;
	cm->device_num = device_num;
	cm->train = train;
	cm->plan = xmalloc(sizeof *cm->plan);
	RedistLinks links = cluster_links(c);
	cm->searches = redist_cache_new(&links);
	cm->members = xmalloc(sizeof(int64_t) * (size_t)device_num);
	cm->node_mark = xcalloc((size_t)(device_num / c->devices_per_node + 1), sizeof(int64_t));
	cm->a = arena_new();
	return cm;
}

void cost_free(CostModel *cm)
{
	if (!cm)
		return;
	free(cm->plan);
	redist_cache_free(cm->searches);
	free(cm->members);
	free(cm->node_mark);
	free(cm->e);
	arena_free(cm->a);
	free(cm);
}

const Cluster *cost_cluster(const CostModel *cm)
{
	return &cm->c;
}

static int put_layout(int64_t *k, int n, const TensorLayout *l)
{
	k[n++] = l->ndev;
	for (int a = 0; a < l->ndev; a++)
		k[n++] = l->dev[a];
	k[n++] = l->rank;
	for (int d = 0; d < l->rank; d++) {
		k[n++] = l->nmap[d];
		for (int i = 0; i < l->nmap[d]; i++)
			k[n++] = l->map[d][i];
	}
	k[n++] = l->partial;
	k[n++] = l->partial ? l->partial_op : 0;
	return n;
}

static uint64_t hash_key(const int64_t *k, int n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (int i = 0; i < n; i++) {
		h = (h ^ (uint64_t)k[i]) * 0x100000001b3ull;
		h ^= h >> 31;
	}
	return h;
}

static void grow(CostModel *cm)
{
	size_t nslot = cm->nslot ? 2 * cm->nslot : 1024;
	Entry *e = xcalloc(nslot, sizeof *e);
	for (size_t i = 0; i < cm->nslot; i++) {
		if (!cm->e[i].nkey)
			continue;
		size_t at = hash_key(cm->e[i].key, cm->e[i].nkey) & (nslot - 1);
		while (e[at].nkey)
			at = (at + 1) & (nslot - 1);
		e[at] = cm->e[i];
	}
	free(cm->e);
	cm->e = e;
	cm->nslot = nslot;
}

/* How many nodes the group of `rank` over `axes` of l spans. */
static int64_t nodes_spanned(CostModel *cm, const TensorLayout *l, int64_t rank, uint32_t axes)
{
	int n = layout_group(l, rank, axes, cm->members);
	int64_t nodes = 0, stamp = ++cm->group_stamp;
	for (int i = 0; i < n; i++) {
		int64_t *mark = &cm->node_mark[cm->members[i] / cm->c.devices_per_node];
		nodes += *mark != stamp;
		*mark = stamp;
	}
	return nodes;
}

static int64_t ceil_log2(int64_t n)
{
	int64_t k = 0;
	for (int64_t m = 1; m < n; m *= 2)
		k++;
	return k;
}

/* A collective over n ranks on `nodes` nodes, by the algorithm the libraries
 * pick for its size: NCCL and MPI send small messages over trees or by
 * recursive doubling, ceil(log2 n) rounds of which only ceil(log2 nodes)
 * pair ranks on different nodes (the partners of the first rounds are
 * neighbours, and a node's ranks are neighbours), and large ones around a
 * ring, n - 1 rounds each as slow as the ring's slowest link. TREE_BYTES
 * (sent per rank) is where they switch. Bytes go at the slowest link's
 * bandwidth. */
enum { TREE_BYTES = 256 * 1024 };
double cost_collective(CostModel *cm, const TensorLayout *l, uint32_t axes, int64_t bytes)
{
	int64_t n = 1;
	for (int a = 0; a < l->ndev; a++)
		if (axes & (1u << a))
			n *= l->dev[a];
	if (n <= 1)
		return 0;
	int64_t nodes = nodes_spanned(cm, l, 0, axes), last = nodes_spanned(cm, l, layout_ndevices(l) - 1, axes);
	nodes = last > nodes ? last : nodes;
	bool inter = nodes > 1;
	double bw = inter ? cm->c.inter_bw : cm->c.intra_bw;
	if (bytes >= TREE_BYTES)
		return (double)(n - 1) * (inter ? cm->c.inter_lat : cm->c.intra_lat) + (double)bytes / bw;
	int64_t across = ceil_log2(nodes), rounds = ceil_log2(n);
	return (double)across * cm->c.inter_lat + (double)(rounds - across) * cm->c.intra_lat + (double)bytes / bw;
}

double cost_p2p(const CostModel *cm, double bytes, int64_t ranks)
{
	bool inter = ranks > cm->c.devices_per_node;   /* the stages span nodes: some pair's link crosses */
	return (inter ? cm->c.inter_lat : cm->c.intra_lat) + bytes / (inter ? cm->c.inter_bw : cm->c.intra_bw);
}

void cost_bound_only(CostModel *cm, bool on)
{
	cm->bound_only = on;
}

/* The latency rounds every plan from `from` to `to` pays at least, and how
 * many of them at least cross nodes. On the two layouts' common matrix,
 * each axis that holds partial results, or splits a dim in `from` and plays
 * another role in `to`, is in the group of some collective: only an
 * AllReduce or a ReduceScatter ends a partial axis, only an AllGather or
 * an AllToAll moves a split one (a split axis keeps its place in its dim's
 * map until it leaves). A collective over n ranks pays ceil(log2 n) rounds
 * or more (cost_collective), and groups of n1 and n2 ranks ceil(log2 n1) +
 * ceil(log2 n2) >= ceil(log2 n1 n2): so the rounds are at least ceil(log2)
 * of the product of those axes. The fallback's groups (one AllReduce over
 * the partial axes, an AllGather per split axis of `from`) cover the same
 * ranks. When every axis and a node are 2^k devices, a rank's number is
 * its bits, an axis a run of them, and a group crosses nodes exactly when
 * it varies a bit at or above the node's (for every rank, so as
 * cost_collective sees it): each such bit the plan must vary is a round of
 * some collective that crosses, at the inter-node latency, however the
 * plan groups the bits (the common matrix merges neighbouring axes that
 * the fallback gathers one by one). 0 when the matrices have no common
 * refinement. */
static int64_t rounds_at_least(const CostModel *cm, const TensorLayout *from, const TensorLayout *to,
                               int64_t *across)
{
	TensorLayout a, b;
	*across = 0;
	if (!layout_common_matrix(from, to, &a, &b))
		return 0;
	int8_t dim[MAX_AXES], place[MAX_AXES];
	for (int x = 0; x < b.ndev; x++)
		dim[x] = -1, place[x] = -1;
	for (int d = 0; d < b.rank; d++)
		for (int k = 0; k < b.nmap[d]; k++)
			dim[b.map[d][k]] = (int8_t)d, place[b.map[d][k]] = (int8_t)k;
	uint32_t moved = a.partial;
	for (int d = 0; d < a.rank; d++)
		for (int k = 0; k < a.nmap[d]; k++)
			if (dim[a.map[d][k]] != d || place[a.map[d][k]] != k)
				moved |= 1u << a.map[d][k];
	int64_t n = 1;
	bool bits = (cm->c.devices_per_node & (cm->c.devices_per_node - 1)) == 0;
	for (int x = 0; x < a.ndev; x++) {
		bits &= (a.dev[x] & (a.dev[x] - 1)) == 0;
		if (moved & (1u << x))
			n *= a.dev[x];
	}
	if (bits) {
		int64_t node = ceil_log2(cm->c.devices_per_node), lo = 0;
		for (int x = a.ndev - 1; x >= 0; lo += ceil_log2(a.dev[x]), x--)   /* the last axis is the low bits */
			for (int64_t bit = lo; (moved & (1u << x)) && bit < lo + ceil_log2(a.dev[x]); bit++)
				*across += bit >= node;
	}
	return ceil_log2(n);
}

/* No plan from `from` to `to` costs less: rank 0 and the last rank must
 * each receive the part of their slice they do not hold (all of it when
 * `from` is partial: each element sums other ranks' parts too), every
 * collective step sends per rank what a rank receives in it, and the
 * plan pays rounds_at_least latencies (what ranks 0 and the last hold may
 * be all they need while the others' pieces move), one at least when
 * anything is missing, those that cross nodes at the inter-node latency. */
static double redist_bound(const CostModel *cm, const TensorLayout *from, const TensorLayout *to,
                           const int64_t *global, int64_t elem_bytes)
{
	if (layout_ndevices(from) != layout_ndevices(to))
		return 0;
	bool partial = false;
	for (int a = 0; a < from->ndev; a++)
		partial |= (from->partial >> a & 1) && from->dev[a] > 1;
	int64_t last = layout_ndevices(to) - 1, missing = 0;
	for (int64_t rank = 0; rank <= last; rank += last > 0 ? last : 1) {
		int64_t need = 1, have = 1;
		for (int d = 0; d < to->rank; d++) {
			int64_t lf = layout_piece_len(from, global, d), lt = layout_piece_len(to, global, d);
			int64_t f0 = layout_shard_index(from, rank, d) * lf, t0 = layout_shard_index(to, rank, d) * lt;
			int64_t f1 = f0 + lf < global[d] ? f0 + lf : global[d];   /* the real elements: not the padding */
			int64_t t1 = t0 + lt < global[d] ? t0 + lt : global[d];
			int64_t lo = f0 > t0 ? f0 : t0, hi = f1 < t1 ? f1 : t1;
			need *= t1 > t0 ? t1 - t0 : 0;
			have *= hi > lo && !partial ? hi - lo : 0;
		}
		missing = need - have > missing ? need - have : missing;
	}
	int64_t across, rounds = rounds_at_least(cm, from, to, &across);
	if (!missing && !rounds)
		return 0;
	if (rounds < 1)
		rounds = 1;
	double lat = cm->c.intra_lat < cm->c.inter_lat ? cm->c.intra_lat : cm->c.inter_lat;
	double bw = cm->c.intra_bw > cm->c.inter_bw ? cm->c.intra_bw : cm->c.inter_bw;
	return (double)across * cm->c.inter_lat + (double)(rounds - across) * lat + (double)(missing * elem_bytes) / bw;
}

void cost_plan(CostModel *cm, const TensorLayout *from, const TensorLayout *to, const int64_t *global,
               int64_t elem_bytes, RedistPlan *plan)
{
	redist_plan_kept(cm->searches, from, to, global, elem_bytes, plan);
}

double cost_redist(CostModel *cm, const TensorLayout *from, const TensorLayout *to, const int64_t *global,
                   int64_t elem_bytes, int64_t *bytes)
{
	int64_t key[KEY_MAX];
	int nkey = put_layout(key, 0, from);
	nkey = put_layout(key, nkey, to);
	for (int d = 0; d < from->rank; d++)
		key[nkey++] = global[d];
	key[nkey++] = elem_bytes;
	if (2 * (cm->n + 1) > cm->nslot)
		grow(cm);
	size_t at = hash_key(key, nkey) & (cm->nslot - 1);
	Entry *e = NULL;
	for (; cm->e[at].nkey; at = (at + 1) & (cm->nslot - 1))
		if (cm->e[at].nkey == nkey && memcmp(cm->e[at].key, key, sizeof(int64_t) * (size_t)nkey) == 0) {
			e = &cm->e[at];
			break;
		}
	if (e && (e->planned || cm->bound_only)) {
		cm->hits += e->planned;
		if (bytes)
			*bytes = e->bytes;
		return e->seconds;
	}
	if (!e) {
		e = &cm->e[at];
		e->nkey = nkey;
		e->key = arena_alloc(cm->a, sizeof(int64_t) * (size_t)nkey);
		memcpy(e->key, key, sizeof(int64_t) * (size_t)nkey);
		cm->n++;
	}
	if (cm->bound_only) {
		e->seconds = redist_bound(cm, from, to, global, elem_bytes);
		e->bytes = 0;
		e->planned = false;
		if (bytes)
			*bytes = 0;
		return e->seconds;
	}
	cm->misses++;
	RedistPlan *p = cm->plan;
	cost_plan(cm, from, to, global, elem_bytes, p);
	double t = 0;
	for (int i = 0; i < p->n; i++)
		if (p->step[i].kind != STEP_SLICE)
			t += cost_collective(cm, &p->step[i].from, p->step[i].axes, p->step[i].bytes);
	if (!redist_sound(p, global))   /* lowering would refuse it (uneven.c): never chosen */
		t = INFINITY;
	e->seconds = t;
	e->bytes = p->bytes;
	e->planned = true;
	if (bytes)
		*bytes = p->bytes;
	return t;
}

double cost_redist_back(CostModel *cm, const TensorLayout *from, const TensorLayout *to, const int64_t *global,
                        int64_t elem_bytes)
{
	if (!cm->train)
		return 0;
	TensorLayout f = *from, t = *to;
	f.partial = t.partial = 0;
	return cost_redist(cm, &t, &f, global, elem_bytes, NULL);
}

double cost_compute(const CostModel *cm, const Node *n, const OpDims *od, const int64_t *split)
{
	double work = 1;
	for (int o = 0; o < od->nod; o++)
		work *= (double)((od->size[o] + split[o] - 1) / split[o]);   /* an uneven split computes its padding */
	bool conv = n->op == OP_CONV2D || n->op == OP_CONV2D_TRANSPOSE;
	if (op_info[n->op].rule == R_MATMUL || conv)   /* a multiply and an add per op-dim point */
		work *= 2;   /* Conv2D's: 2 N O Ho Wo C kh kw, its op dims' product twice */
	if (n->op == OP_CONV2D_TRANSPOSE)   /* as its Conv2D's: the windows over dout's (ho, wo), not the result's (h, w) */
		work *= (double)(od->also[2] * od->also[3]) / (double)(od->size[2] * od->size[3]);
	if (n->op == OP_MAX_POOL || n->op == OP_AVG_POOL)   /* each output reads its window */
		work *= (double)(n->a.kernel[0] * n->a.kernel[1]);
	if (n->op == OP_FLASH_ATTENTION)   /* two products over (B, N, S, S_kv, D): 4 B N S S_kv D */
		work *= 4;
	/* GatherNd reads one x element a result element, not every x slice for
	 * each: its indices' last dim and x's indexed dims (whole) drop out; a
	 * tensor scatter copies x once, its indices' dims (whole) drop out, as
	 * do the in-place scatters' and InplaceAdd's (scatter_state.c: every op
	 * dim past x's is the indices' or v's rows, whole). */
	bool in_place = (op_writes_state(n->op) && op_info[n->op].rule == R_OWN) ||
	                (n->op >= OP_INPLACE_ADD && n->op <= OP_INPLACE_UPDATE);
	int from = n->op == OP_GATHER_ND ? od->in_rank[1] - 1 : op_is_tensor_scatter(n->op) || in_place ? od->in_rank[0] : 0;
	int to = n->op == OP_GATHER_ND ? od->in_rank[1] + (int)od->size[od->in_rank[1] - 1]
	         : op_is_tensor_scatter(n->op) ? od->in_rank[0] + od->in_rank[1] : in_place ? od->nod : 0;
	for (int o = from; o < to; o++)
		work /= (double)od->size[o];
	return work / cm->c.flops;
}

double cost_input_gradient(CostModel *cm, const TensorLayout *in, const TensorLayout *out, const int64_t *global,
                           int64_t elem_bytes)
{
	if (!cm->train)
		return 0;
	uint32_t axes = grad_partial_axes(in, out);   /* as autodiff.c makes the gradient partial */
	int64_t n = 1, elems = 1;
	for (int a = 0; a < in->ndev; a++)
		if (axes & (1u << a))
			n *= in->dev[a];
	if (n <= 1)
		return 0;
	for (int d = 0; d < in->rank; d++)
		elems *= layout_piece_len(in, global, d);
	return cost_collective(cm, in, axes, redist_step_bytes(STEP_ALL_REDUCE, elems * elem_bytes, n));
}

/* The device axes that split the op dims in mask. */
static uint32_t mask_axes(const OpDims *od, const OpSplit *s, uint32_t mask)
{
	uint32_t axes = 0;
	for (int o = 0; o < od->nod; o++)
		if (mask & (1u << o))
			for (int k = 0; k < s->nax[o]; k++)
				axes |= 1u << s->ax[o][k];
	return axes;
}

/* How many devices those axes span in l. */
static int64_t axes_devices(const TensorLayout *l, uint32_t axes)
{
	int64_t n = 1;
	for (int a = 0; a < l->ndev; a++)
		if (axes & (1u << a))
			n *= l->dev[a];
	return n;
}

double cost_statistics(CostModel *cm, const OpDims *od, const OpSplit *s, int64_t elem_bytes)
{
	uint32_t axes = mask_axes(od, s, od->normalized);
	if (!axes)
		return 0;
	TensorLayout in;
	op_in_layout(od, s, 0, &in);
	int64_t n = axes_devices(&in, axes), rows = 1;
	for (int d = 0; d < od->in_rank[0]; d++) {
		int o = od->in_dim[0][d];
		if (o >= 0 && !(od->normalized & (1u << o)))
			rows *= (od->size[o] + s->split[o] - 1) / s->split[o];
	}
	int count = od->nstats_fwd + (cm->train ? od->nstats_bwd : 0);
	return count * cost_collective(cm, &in, axes, redist_step_bytes(STEP_ALL_REDUCE, rows * elem_bytes, n));
}

double cost_reduced_stats(CostModel *cm, const OpDims *od, const OpSplit *s, int count, int64_t elem_bytes)
{
	uint32_t axes = cm->train ? mask_axes(od, s, od->reduced) : 0;
	if (!axes)
		return 0;
	TensorLayout out;
	op_out_layout(od, s, &out);
	int64_t n = axes_devices(&out, axes), elems = 1;
	for (int d = 0; d < od->out_rank; d++)
		if (od->out_dim[d] >= 0)
			elems *= (od->size[od->out_dim[d]] + s->split[od->out_dim[d]] - 1) / s->split[od->out_dim[d]];
	return count * cost_collective(cm, &out, axes, redist_step_bytes(STEP_ALL_REDUCE, elems * elem_bytes, n));
}

int64_t cost_slice_bytes(const TensorLayout *l, const int64_t *global, int64_t elem_bytes)
{
	int64_t elems = 1;
	for (int d = 0; d < l->rank; d++)
		elems *= layout_piece_len(l, global, d);
	return elems * elem_bytes;
}

void cost_stats(const CostModel *cm, int64_t *hits, int64_t *misses)
{
	*hits = cm->hits;
	*misses = cm->misses;
}
