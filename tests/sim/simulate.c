/* simulate.c: see simulate.h. Test-only: allocation failures abort. */
#include "simulate.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Copies the block `shape` from src at sstart to dst at dstart, a row (a run
 * along the last dim) at a time. */
static void block_copy(double *dst, const int64_t *ddims, const int64_t *dstart, const double *src,
                       const int64_t *sdims, const int64_t *sstart, const int64_t *shape, int rank)
{
	if (rank == 0) {
		dst[0] = src[0];
		return;
	}
	int64_t idx[MAX_DIMS] = {0};
	int64_t rows = 1;
	for (int d = 0; d < rank - 1; d++)
		rows *= shape[d];
	for (int64_t r = 0; r < rows; r++) {
		int64_t so = 0, doff = 0;
		for (int d = 0; d < rank; d++) {
			so = so * sdims[d] + sstart[d] + (d < rank - 1 ? idx[d] : 0);
			doff = doff * ddims[d] + dstart[d] + (d < rank - 1 ? idx[d] : 0);
		}
		memcpy(dst + doff, src + so, sizeof(double) * (size_t)shape[rank - 1]);
		for (int d = rank - 2; d >= 0; d--) {
			if (++idx[d] < shape[d])
				break;
			idx[d] = 0;
		}
	}
}

SimTensor sim_slice(const SimTensor *t, const int64_t *begin, const int64_t *end)
{
	int64_t shape[MAX_DIMS], zero[MAX_DIMS] = {0};
	for (int d = 0; d < t->rank; d++)
		shape[d] = end[d] - begin[d];
	SimTensor out = sim_tensor_new(t->rank, shape);
	block_copy(out.data, out.dims, zero, t->data, t->dims, begin, shape, t->rank);
	return out;
}

void sim_place(SimTensor *dst, const SimTensor *src, const int64_t *start)
{
	int64_t zero[MAX_DIMS] = {0};
	block_copy(dst->data, dst->dims, start, src->data, src->dims, zero, src->dims, src->rank);
}

SimTensor sim_piece(const SimTensor *global, const TensorLayout *layout, int64_t rank)
{
	int64_t begin[MAX_DIMS], end[MAX_DIMS];
	for (int d = 0; d < global->rank; d++) {
		int64_t local = global->dims[d] / layout_dim_split(layout, d);
		begin[d] = layout_shard_index(layout, rank, d) * local;
		end[d] = begin[d] + local;
	}
	return sim_slice(global, begin, end);
}

SimTensor sim_all_reduce(const SimTensor *in, int n, ReduceOp op)
{
	SimTensor out = sim_tensor_copy(&in[0]);
	for (int m = 1; m < n; m++)
		for (int64_t i = 0; i < out.size; i++)
			out.data[i] = op == REDUCE_MAX_OP   ? fmax(out.data[i], in[m].data[i])
			              : op == REDUCE_MIN_OP ? fmin(out.data[i], in[m].data[i])
			              : op == REDUCE_PROD_OP ? out.data[i] * in[m].data[i]
			                                    : out.data[i] + in[m].data[i];
	if (op == REDUCE_MEAN_OP)
		for (int64_t i = 0; i < out.size; i++)
			out.data[i] /= n;
	return out;
}

/* Member i's chunk of t along axis, of n equal chunks. */
static SimTensor chunk(const SimTensor *t, int axis, int n, int i)
{
	int64_t begin[MAX_DIMS] = {0}, end[MAX_DIMS];
	memcpy(end, t->dims, sizeof end);
	int64_t size = t->dims[axis] / n;
	begin[axis] = size * i;
	end[axis] = size * (i + 1);
	return sim_slice(t, begin, end);
}

static SimTensor concat(const SimTensor *parts, int n, int axis)
{
	int64_t dims[MAX_DIMS], start[MAX_DIMS] = {0};
	memcpy(dims, parts[0].dims, sizeof dims);
	dims[axis] *= n;
	SimTensor out = sim_tensor_new(parts[0].rank, dims);
	for (int m = 0; m < n; m++) {
		start[axis] = parts[0].dims[axis] * m;
		sim_place(&out, &parts[m], start);
	}
	return out;
}

SimTensor sim_all_gather(const SimTensor *in, int n, int axis)
{
	return concat(in, n, axis);
}

SimTensor sim_reduce_scatter(const SimTensor *in, int n, ReduceOp op, int axis, int me)
{
	SimTensor whole = sim_all_reduce(in, n, op);
	SimTensor out = chunk(&whole, axis, n, me);
	sim_tensor_free(&whole);
	return out;
}

SimTensor sim_all_to_all(const SimTensor *in, int n, int split_axis, int concat_axis, int me)
{
	SimTensor *parts = xcalloc((size_t)n, sizeof *parts);
	for (int m = 0; m < n; m++)
		parts[m] = chunk(&in[m], split_axis, n, me);
	SimTensor out = concat(parts, n, concat_axis);
	for (int m = 0; m < n; m++)
		sim_tensor_free(&parts[m]);
	free(parts);
	return out;
}

static void fail(SimResult *r, const char *fmt, ...)
{
	if (!r->ok)
		return;
	r->ok = false;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->why, sizeof r->why, fmt, ap);
	va_end(ap);
}

static int64_t elems(const Type *t)
{
	int64_t n = 1;
	for (int d = 0; d < t->rank; d++)
		n *= t->dims[d];
	return n;
}

/* Bytes a rank sends for one collective node of a per-rank graph (docs/output.md). */
static int64_t node_bytes(const Graph *g, const Node *n)
{
	int64_t in = elems(&g->values[n->in[0]].type) * dtype_bytes(g->values[n->in[0]].type.dtype);
	int64_t k = n->a.ngroup;
	switch (n->op) {
	case OP_ALL_REDUCE: return 2 * in * (k - 1) / k;
	case OP_ALL_GATHER: return in * k * (k - 1) / k;
	case OP_REDUCE_SCATTER: case OP_ALL_TO_ALL: return in * (k - 1) / k;
	default: return 0;
	}
}

static int norm_axis(int64_t a, int rank)
{
	return (int)(a < 0 ? a + rank : a);
}

/* One collective node on every rank; vals[r] are rank r's values. */
static void run_collective(Module **rm, SimTensor **vals, int64_t nranks, int i, SimResult *res)
{
	for (int64_t r = 0; r < nranks && res->ok; r++) {
		const Graph *g = module_entry(rm[r]);
		const Node *n = &g->nodes[i];
		int k = n->a.ngroup, me = -1;
		SimTensor *in = xcalloc((size_t)k, sizeof *in);
		for (int m = 0; m < k; m++) {
			int64_t peer = n->a.group[m];
			if (peer == r)
				me = m;
			/* Every member must run the same collective with the same group. */
			const Node *pn = &module_entry(rm[peer])->nodes[i];
			if (pn->op != n->op || pn->a.ngroup != k || memcmp(pn->a.group, n->a.group, sizeof(int64_t) * (size_t)k))
				fail(res, "rank %lld and rank %lld disagree on node %d's group", (long long)r, (long long)peer, i);
			in[m] = vals[peer][n->in[0]];
		}
		if (me < 0)
			fail(res, "rank %lld runs a collective whose group does not hold it", (long long)r);
		if (res->ok) {
			int rank = in[0].rank;
			SimTensor out;
			switch (n->op) {
			case OP_ALL_REDUCE: out = sim_all_reduce(in, k, n->a.reduce_op); break;
			case OP_ALL_GATHER: out = sim_all_gather(in, k, norm_axis(n->a.has_axis ? n->a.axes[0] : 0, rank)); break;
			case OP_REDUCE_SCATTER:
				out = sim_reduce_scatter(in, k, n->a.reduce_op, norm_axis(n->a.has_axis ? n->a.axes[0] : 0, rank), me);
				break;
			default:
				out = sim_all_to_all(in, k, norm_axis(n->a.split_axis, rank), norm_axis(n->a.concat_axis, rank), me);
				break;
			}
			/* Results land after every rank has read its inputs: results
			 * have their own value ids, so writing now is safe. */
			vals[r][n->result] = out;
		}
		free(in);
	}
}

static Module *read_rank(const Lowered *l, int64_t r, SimResult *res)
{
	StrBuf b = {0};
	dump_end(&b, l, r);
	char name[32];
	snprintf(name, sizeof name, "rank_%lld.ir", (long long)r);
	char *msgs = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&msgs, &len);
	Diag d = {.out = f};
	Module *m = parse_module(name, b.data, (int)b.len, &d);
	m->owned_text = b.data;   /* the module keeps its text and frees it */
	bool ok = d.nerrors == 0 && check_context(m, &d) && check_names(m, &d) && infer_shapes(m, &d) &&
	          check_strategies(m, &d);
	fclose(f);
	if (!ok)
		fail(res, "rank %lld's step_parallel_end does not read back: %s", (long long)r, msgs ? msgs : "");
	free(msgs);
	return m;
}

void sim_run(const Lowered *l, SimResult *res)
{
	memset(res, 0, sizeof *res);
	res->ok = true;
	res->min_bytes = INT64_MAX;
	const Graph *g = l->flat->g;
	int64_t nr = l->device_num;
	char err[512];

	/* The serial graph on the whole tensors. */
	SimTensor *serial = xcalloc((size_t)g->nvalues, sizeof *serial);
	for (int p = 0; p < g->nparams; p++) {
		const Value *v = &g->values[p];
		serial[p] = sim_tensor_new(v->type.rank, v->type.dims);
		sim_init(&serial[p], v->name, v->init, v->type.is_param, v->type.dtype, l->m->ctx.seed);
	}
	for (int i = 0; i < g->nnodes && res->ok; i++) {
		const Node *n = &g->nodes[i];
		SimTensor ins[64];
		for (int k = 0; k < n->nin && k < 64; k++)
			ins[k] = serial[n->in[k]];
		if (!sim_eval_node(g, n, ins, &serial[n->result], err, sizeof err))
			fail(res, "serial: %s", err);
	}

	/* Every rank's program, read back from its dump, in lockstep. */
	Module **rm = xcalloc((size_t)nr, sizeof *rm);
	SimTensor **vals = xcalloc((size_t)nr, sizeof *vals);
	for (int64_t r = 0; r < nr && res->ok; r++) {
		rm[r] = read_rank(l, r, res);
		if (!res->ok)
			break;
		const Graph *rg = module_entry(rm[r]);
		vals[r] = xcalloc((size_t)rg->nvalues, sizeof **vals);
		for (int p = 0; p < l->nparams; p++)
			vals[r][p] = sim_piece(&serial[p], &l->values[p].layout, r);
		if (rg->nnodes != module_entry(rm[0])->nnodes)
			fail(res, "rank %lld runs %d operators, rank 0 %d", (long long)r, rg->nnodes,
			     module_entry(rm[0])->nnodes);
	}
	int nops = res->ok ? module_entry(rm[0])->nnodes : 0;
	res->nops = nops;
	int64_t *bytes = xcalloc((size_t)nr, sizeof *bytes);
	for (int i = 0; i < nops && res->ok; i++) {
		const Node *n0 = &module_entry(rm[0])->nodes[i];
		if (op_is_comm(n0->op)) {
			res->ncollectives++;
			for (int64_t r = 0; r < nr; r++)
				bytes[r] += node_bytes(module_entry(rm[r]), &module_entry(rm[r])->nodes[i]);
			run_collective(rm, vals, nr, i, res);
			continue;
		}
		for (int64_t r = 0; r < nr && res->ok; r++) {
			const Graph *rg = module_entry(rm[r]);
			const Node *n = &rg->nodes[i];
			SimTensor ins[64];
			for (int k = 0; k < n->nin && k < 64; k++)
				ins[k] = vals[r][n->in[k]];
			if (!sim_eval_node(rg, n, ins, &vals[r][n->result], err, sizeof err))
				fail(res, "rank %lld: %s", (long long)r, err);
		}
	}
	for (int64_t r = 0; r < nr; r++) {
		res->max_bytes = bytes[r] > res->max_bytes ? bytes[r] : res->max_bytes;
		res->min_bytes = bytes[r] < res->min_bytes ? bytes[r] : res->min_bytes;
	}

	/* Each returned value assembled from the pieces and compared. */
	for (int k = 0; k < l->nret && res->ok; k++) {
		const LValue *lv = &l->values[l->rets[k]];
		const SimTensor *want = &serial[g->ret[k]];
		SimTensor got = sim_tensor_new(want->rank, want->dims);
		bool *seen = xcalloc((size_t)want->size, sizeof *seen);
		if (lv->layout.partial)
			fail(res, "output %d is still partial", k);
		for (int64_t r = 0; r < nr && res->ok; r++) {
			const Graph *rg = module_entry(rm[r]);
			const SimTensor *piece = &vals[r][rg->ret[k]];
			SimTensor expect = sim_piece(want, &lv->layout, r);
			for (int64_t e = 0; e < expect.size; e++) {
				double err_e = fabs(piece->data[e] - expect.data[e]) / (1 + fabs(expect.data[e]));
				if (err_e > res->max_err || isnan(piece->data[e]) != isnan(expect.data[e]))
					res->max_err = isnan(err_e) ? INFINITY : err_e;
			}
			sim_tensor_free(&expect);
			int64_t start[MAX_DIMS];
			for (int d = 0; d < want->rank; d++)
				start[d] = layout_shard_index(&lv->layout, r, d) * piece->dims[d];
			sim_place(&got, piece, start);
			/* Coverage: mark what this rank's piece spans. */
			SimTensor ones = sim_tensor_new(piece->rank, piece->dims), mark = sim_tensor_new(want->rank, want->dims);
			for (int64_t e = 0; e < ones.size; e++)
				ones.data[e] = 1;
			sim_place(&mark, &ones, start);
			for (int64_t e = 0; e < mark.size; e++)
				seen[e] |= mark.data[e] != 0;
			sim_tensor_free(&ones);
			sim_tensor_free(&mark);
		}
		for (int64_t e = 0; e < want->size && res->ok; e++)
			if (!seen[e])
				fail(res, "output %d: element %lld is on no rank", k, (long long)e);
		free(seen);
		sim_tensor_free(&got);
	}

	for (int64_t r = 0; r < nr; r++) {
		if (vals[r]) {
			const Graph *rg = module_entry(rm[r]);
			for (int v = 0; v < rg->nvalues; v++)
				sim_tensor_free(&vals[r][v]);
			free(vals[r]);
		}
		module_free(rm[r]);
	}
	free(vals);
	free(rm);
	free(bytes);
	for (int v = 0; v < g->nvalues; v++)
		sim_tensor_free(&serial[v]);
	free(serial);
	if (res->min_bytes == INT64_MAX)
		res->min_bytes = 0;
}
