/* comm.c: the collectives and point-to-point messages (the exchange; the
 * sends and receives of pipeline schedules, with their host copies): argument
 * checks, byte counting, host versions; the host broadcast.
 *
 * The public sc_all_reduce etc. check their arguments, add what this rank
 * sends to rt->bytes_sent by the ring formulas of docs/output.md (a
 * point-to-point send: its bytes), and call the backend. The sc_host_*
 * versions do the work on host memory with MPI; the cpu backend is them,
 * and the cuda backend falls back to them when ranks share a GPU. A
 * collective along an inner axis packs or unpacks with one (A, B, C) ->
 * (B, A, C) swap so MPI always moves contiguous blocks:
 * AllGather gathers member-major blocks and swaps them into place,
 * ReduceScatter and AllToAll swap each member's slice into one block first.
 * Float16 and BFloat16 move as MPI_UINT16_T; their sums, maxima and means
 * widen to float32, reduce there and round once (MPI has no 2-byte float). */
#include "rt_internal.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- checks and counting ---- */

static void check_member(const char *what, sc_rt *rt, sc_group *g)
{
	if (!g)
		SC_DIE("%s: no group", what);
	if (g->me < 0)
		SC_DIE("%s: rank %d is not a member of this group", what, rt->rank);
}

/* The reductions' check: bool is moved (AllGather, AllToAll) and reduced
 * only by min and max (ReduceAll's and ReduceAny's partial results: a byte,
 * 0 or 1). */
static void check_dt(const char *what, sc_dtype dt, sc_redop op)
{
	if (dt == SC_BOOL && op != SC_MIN && op != SC_MAX)
		SC_DIE("%s: dtype %s is reduced by min and max only", what, sc_dtype_name(dt));
}

static void count_bytes(sc_rt *rt, sc_group *g, int64_t bytes, int64_t factor)
{
	rt->bytes_sent += factor * bytes * (g->n - 1) / g->n;
}

void sc_all_reduce(sc_rt *rt, sc_group *g, const void *in, void *out, sc_dtype dt, int64_t count, sc_redop op)
{
	check_member("sc_all_reduce", rt, g);
	check_dt("sc_all_reduce", dt, op);
	if (count < 0)
		SC_DIE("sc_all_reduce: count %lld", (long long)count);
	count_bytes(rt, g, count * (int64_t)sc_dtype_size(dt), 2);
	sc_be_all_reduce(rt, g, in, out, dt, count, op);
}

void sc_all_reduce_bucket(sc_rt *rt, sc_group *g, int n, const void *const *in, void *const *out,
                          const int64_t *counts, sc_dtype dt, sc_redop op, void *pack)
{
	check_member("sc_all_reduce_bucket", rt, g);
	check_dt("sc_all_reduce_bucket", dt, op);
	size_t size = sc_dtype_size(dt);
	int64_t total = 0;
	for (int k = 0; k < n; k++) {
		if (counts[k] < 0)
			SC_DIE("sc_all_reduce_bucket: count %lld", (long long)counts[k]);
		count_bytes(rt, g, counts[k] * (int64_t)size, 2);
		sc_copy(rt, (char *)pack + (size_t)total * size, in[k], (size_t)counts[k] * size);
		total += counts[k];
	}
	sc_be_all_reduce(rt, g, pack, pack, dt, total, op);
	total = 0;
	for (int k = 0; k < n; k++) {
		sc_copy(rt, out[k], (const char *)pack + (size_t)total * size, (size_t)counts[k] * size);
		total += counts[k];
	}
}

void sc_all_gather(sc_rt *rt, sc_group *g, const void *in, void *out, sc_dtype dt, const int64_t *dims, int ndim,
                   int axis)
{
	check_member("sc_all_gather", rt, g);
	sc_check_dims("sc_all_gather", dims, ndim);
	axis = sc_norm_axis("sc_all_gather", axis, ndim);
	count_bytes(rt, g, g->n * sc_numel(dims, ndim) * (int64_t)sc_dtype_size(dt), 1);
	sc_be_all_gather(rt, g, in, out, dt, dims, ndim, axis);
}

void sc_reduce_scatter(sc_rt *rt, sc_group *g, const void *in, void *out, sc_dtype dt, const int64_t *dims,
                       int ndim, int axis, sc_redop op)
{
	check_member("sc_reduce_scatter", rt, g);
	check_dt("sc_reduce_scatter", dt, op);
	sc_check_dims("sc_reduce_scatter", dims, ndim);
	axis = sc_norm_axis("sc_reduce_scatter", axis, ndim);
	if (dims[axis] % g->n != 0)
		SC_DIE("sc_reduce_scatter: dim %d (%lld) does not divide among %d members", axis, (long long)dims[axis],
		       g->n);
	count_bytes(rt, g, sc_numel(dims, ndim) * (int64_t)sc_dtype_size(dt), 1);
	sc_be_reduce_scatter(rt, g, in, out, dt, dims, ndim, axis, op);
}

void sc_all_to_all(sc_rt *rt, sc_group *g, const void *in, void *out, sc_dtype dt, const int64_t *dims, int ndim,
                   int split_axis, int concat_axis)
{
	check_member("sc_all_to_all", rt, g);
	sc_check_dims("sc_all_to_all", dims, ndim);
	split_axis = sc_norm_axis("sc_all_to_all", split_axis, ndim);
	concat_axis = sc_norm_axis("sc_all_to_all", concat_axis, ndim);
	if (dims[split_axis] % g->n != 0)
		SC_DIE("sc_all_to_all: split dim %d (%lld) does not divide among %d members", split_axis,
		       (long long)dims[split_axis], g->n);
	count_bytes(rt, g, sc_numel(dims, ndim) * (int64_t)sc_dtype_size(dt), 1);
	sc_be_all_to_all(rt, g, in, out, dt, dims, ndim, split_axis, concat_axis);
}

/* ---- point-to-point ---- */

/* One operation's checks, everything a backend relies on; what names it in
 * a refusal ("sc_p2p_send", "sc_p2p_exchange: operation 1"). */
static void check_op(sc_rt *rt, const char *what, const sc_p2p *o)
{
	if (o->dir != SC_SEND && o->dir != SC_RECV)
		SC_DIE("%s: direction %d is neither SC_SEND nor SC_RECV", what, (int)o->dir);
	if (o->peer < 0 || o->peer >= rt->size)
		SC_DIE("%s: peer %d is not a rank of the world [0, %d)", what, o->peer, rt->size);
	if (o->peer == rt->rank)
		SC_DIE("%s: peer %d is this rank", what, o->peer);
	if (o->count < 0)
		SC_DIE("%s: count %lld", what, (long long)o->count);
	(void)sc_dtype_size(o->dt);   /* dies on a dtype the runtime lacks */
	if (o->count > 0 && !o->buf)
		SC_DIE("%s: no buffer for %lld elements", what, (long long)o->count);
}

static void check_p2p(sc_rt *rt, const sc_p2p *ops, int n)
{
	if (n < 0 || (n > 0 && !ops))
		SC_DIE("sc_p2p_exchange: %d operations%s", n, n > 0 ? " and no list of them" : "");
	for (int k = 0; k < n; k++) {
		char what[64];
		snprintf(what, sizeof what, "sc_p2p_exchange: operation %d", k);
		check_op(rt, what, &ops[k]);
	}
}

void sc_p2p_exchange(sc_rt *rt, const sc_p2p *ops, int n)
{
	check_p2p(rt, ops, n);
	for (int k = 0; k < n; k++)
		if (ops[k].dir == SC_SEND)
			rt->bytes_sent += ops[k].count * (int64_t)sc_dtype_size(ops[k].dt);
	sc_be_p2p_exchange(rt, ops, n);
}

/* ---- host versions ---- */

MPI_Datatype sc_mpi_type(sc_dtype dt)
{
	switch (dt) {
	case SC_F32: return MPI_FLOAT;
	case SC_I32: return MPI_INT32_T;
	case SC_I64: return MPI_INT64_T;
	case SC_F16: case SC_BF16: return MPI_UINT16_T;   /* moved, never reduced */
	case SC_BOOL: return MPI_UINT8_T;                 /* moved, or its min and max */
	}
	SC_DIE("no MPI type for %s", sc_dtype_name(dt));
}

static MPI_Op mpi_op(sc_redop op)
{
	return op == SC_MAX ? MPI_MAX : op == SC_MIN ? MPI_MIN : op == SC_PROD ? MPI_PROD : MPI_SUM;   /* a mean: the sum */
}

static int mpi_count(int64_t n)
{
	if (n > INT_MAX)
		SC_DIE("a message of %lld elements exceeds MPI's int count", (long long)n);
	return (int)n;
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		SC_DIE("out of memory (%zu bytes)", n);
	return p;
}

void sc_host_divide(void *buf, sc_dtype dt, int64_t count, int n)
{
	for (int64_t i = 0; i < count; i++)
		switch (dt) {
		case SC_F32: ((float *)buf)[i] /= (float)n; break;
		case SC_I32: ((int32_t *)buf)[i] /= n; break;
		case SC_I64: ((int64_t *)buf)[i] /= n; break;
		case SC_BOOL: SC_DIE("mean of bool");
		case SC_F16: case SC_BF16: SC_DIE("mean of %s: divided in float32", sc_dtype_name(dt));
		}
}

void sc_host_all_reduce(sc_group *g, const void *in, void *out, sc_dtype dt, int64_t count, sc_redop op)
{
	if (sc_is_half(dt)) {
		float *wide = xmalloc((size_t)count * sizeof *wide);
		sc_host_widen(in, dt, wide, count);
		sc_host_all_reduce(g, wide, wide, SC_F32, count, op);
		sc_host_narrow(wide, out, dt, count);
		free(wide);
		return;
	}
	size_t bytes = (size_t)count * sc_dtype_size(dt);
	if (in != out)
		memcpy(out, in, bytes);
	if (g->n > 1)
		SC_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, out, mpi_count(count), sc_mpi_type(dt), mpi_op(op), g->comm));
	if (op == SC_MEAN)
		sc_host_divide(out, dt, count, g->n);
}

void sc_host_all_gather(sc_group *g, const void *in, void *out, sc_dtype dt, const int64_t *dims, int ndim, int axis)
{
	size_t es = sc_dtype_size(dt);
	int64_t outer, mid, inner, local = sc_numel(dims, ndim);
	sc_split3(dims, ndim, axis, &outer, &mid, &inner);
	if (outer == 1) {
		SC_MPI_CHECK(MPI_Allgather(in, mpi_count(local), sc_mpi_type(dt), out, mpi_count(local), sc_mpi_type(dt),
		                           g->comm));
		return;
	}
	void *tmp = xmalloc((size_t)(g->n * local) * es);   /* (n, outer, mid*inner) */
	SC_MPI_CHECK(MPI_Allgather(in, mpi_count(local), sc_mpi_type(dt), tmp, mpi_count(local), sc_mpi_type(dt),
	                           g->comm));
	sc_host_swap01(tmp, out, g->n, outer, mid * inner, es);
	free(tmp);
}

void sc_host_reduce_scatter(sc_group *g, const void *in, void *out, sc_dtype dt, const int64_t *dims, int ndim,
                            int axis, sc_redop op)
{
	size_t es = sc_dtype_size(dt);
	int64_t outer, mid, inner, total = sc_numel(dims, ndim), piece = total / g->n;
	if (sc_is_half(dt)) {   /* reduce in float32, round once */
		float *wide = xmalloc((size_t)(total + piece) * sizeof *wide);
		sc_host_widen(in, dt, wide, total);
		sc_host_reduce_scatter(g, wide, wide + total, SC_F32, dims, ndim, axis, op);
		sc_host_narrow(wide + total, out, dt, piece);
		free(wide);
		return;
	}
	sc_split3(dims, ndim, axis, &outer, &mid, &inner);
	const void *src = in;
	void *tmp = NULL;
	if (outer > 1) {   /* (outer, n, mid/n*inner) -> (n, outer, mid/n*inner) */
		tmp = xmalloc((size_t)total * es);
		sc_host_swap01(in, tmp, outer, g->n, mid / g->n * inner, es);
		src = tmp;
	}
	if (g->n == 1)
		memcpy(out, src, (size_t)total * es);
	else
		SC_MPI_CHECK(MPI_Reduce_scatter_block(src, out, mpi_count(piece), sc_mpi_type(dt), mpi_op(op), g->comm));
	free(tmp);
	if (op == SC_MEAN)
		sc_host_divide(out, dt, piece, g->n);
}

void sc_host_all_to_all(sc_group *g, const void *in, void *out, sc_dtype dt, const int64_t *dims, int ndim,
                        int split_axis, int concat_axis)
{
	size_t es = sc_dtype_size(dt);
	int n = g->n;
	int64_t total = sc_numel(dims, ndim), piece = total / n;
	int64_t outer, mid, inner;
	void *send = xmalloc((size_t)total * es), *recv = xmalloc((size_t)total * es);
	/* send[j] = the j-th slice along split_axis, as a tensor of its own */
	sc_split3(dims, ndim, split_axis, &outer, &mid, &inner);
	sc_host_swap01(in, send, outer, n, mid / n * inner, es);
	SC_MPI_CHECK(MPI_Alltoall(send, mpi_count(piece), sc_mpi_type(dt), recv, mpi_count(piece), sc_mpi_type(dt),
	                          g->comm));
	/* recv[i] is member i's piece (dims with dims[split_axis] / n); concatenate along concat_axis */
	int64_t pdims[SC_MAX_DIMS];
	memcpy(pdims, dims, (size_t)ndim * sizeof *dims);
	pdims[split_axis] /= n;
	sc_split3(pdims, ndim, concat_axis, &outer, &mid, &inner);
	sc_host_swap01(recv, out, n, outer, mid * inner, es);
	free(send);
	free(recv);
}

/* The exchange's own tag, so its messages never meet sc_gather_whole's (npy.c,
 * tag 7) on the same communicator. */
enum { P2P_TAG = 0x5c };

void sc_host_p2p_exchange(const sc_p2p *ops, int n)
{
	MPI_Request *req = xmalloc((size_t)n * sizeof *req);
	/* Receives first, so a message that arrives finds its buffer posted
	 * instead of waiting in MPI's unexpected queue. MPI matches the messages
	 * of one pair, tag and communicator in the order they were posted, which
	 * keeps the order of the list. */
	for (int pass = 0; pass < 2; pass++)
		for (int k = 0; k < n; k++) {
			const sc_p2p *o = &ops[k];
			if (pass == 0 && o->dir == SC_RECV)
				SC_MPI_CHECK(MPI_Irecv(o->buf, mpi_count(o->count), sc_mpi_type(o->dt), o->peer, P2P_TAG,
				                       MPI_COMM_WORLD, &req[k]));
			else if (pass == 1 && o->dir == SC_SEND)
				SC_MPI_CHECK(MPI_Isend(o->buf, mpi_count(o->count), sc_mpi_type(o->dt), o->peer, P2P_TAG,
				                       MPI_COMM_WORLD, &req[k]));
		}
	SC_MPI_CHECK(MPI_Waitall(n, req, MPI_STATUSES_IGNORE));
	free(req);
}

/* sc_p2p_send and sc_p2p_recv, on both backends: a send copies the message
 * to the host (sc_to_host: a copy on cpu, a device-to-host copy after the
 * stream's queued work on cuda) and posts an MPI_Isend of the copy, kept
 * on rt until it completes; a receive is MPI_Recv, into buf on cpu or into
 * a host buffer copied to the device on cuda. So a send never waits for its
 * receiver, on the host or on the device. Their own tag keeps them apart
 * from sc_p2p_exchange's messages (which go through NCCL on cuda, these
 * through MPI), on both backends alike. MPI keeps the order of one pair's
 * messages of one tag. */
enum { P2P_SEND_TAG = P2P_TAG + 1 };

/* Frees the host copies of the sends that have completed, keeping the
 * others; with wait, waits for every one first. */
static void reap_sends(sc_rt *rt, bool wait)
{
	if (wait)
		SC_MPI_CHECK(MPI_Waitall(rt->nsends, rt->send_req, MPI_STATUSES_IGNORE));
	int kept = 0;
	for (int k = 0; k < rt->nsends; k++) {
		int done = 1;
		if (!wait)
			SC_MPI_CHECK(MPI_Test(&rt->send_req[k], &done, MPI_STATUS_IGNORE));
		if (done) {
			free(rt->send_copy[k]);
			continue;
		}
		rt->send_req[kept] = rt->send_req[k];
		rt->send_copy[kept++] = rt->send_copy[k];
	}
	rt->nsends = kept;
}

void sc_p2p_send(sc_rt *rt, int peer, const void *buf, sc_dtype dt, int64_t count)
{
	check_op(rt, "sc_p2p_send", &(sc_p2p){SC_SEND, peer, (void *)buf, dt, count});
	size_t bytes = (size_t)count * sc_dtype_size(dt);
	rt->bytes_sent += (int64_t)bytes;
	rt->p2p_sent += (int64_t)bytes;
	reap_sends(rt, false);
	if (rt->nsends == rt->capsends) {
		rt->capsends = rt->capsends ? 2 * rt->capsends : 8;
		rt->send_req = realloc(rt->send_req, (size_t)rt->capsends * sizeof *rt->send_req);
		rt->send_copy = realloc(rt->send_copy, (size_t)rt->capsends * sizeof *rt->send_copy);
		if (!rt->send_req || !rt->send_copy)
			SC_DIE("out of memory");
	}
	void *copy = xmalloc(bytes);
	sc_to_host(rt, copy, buf, bytes);
	SC_MPI_CHECK(MPI_Isend(copy, mpi_count(count), sc_mpi_type(dt), peer, P2P_SEND_TAG, MPI_COMM_WORLD,
	                       &rt->send_req[rt->nsends]));
	rt->send_copy[rt->nsends++] = copy;
}

void sc_p2p_recv(sc_rt *rt, int peer, void *buf, sc_dtype dt, int64_t count)
{
	check_op(rt, "sc_p2p_recv", &(sc_p2p){SC_RECV, peer, buf, dt, count});
	reap_sends(rt, false);   /* before blocking: the copies of what has gone need not wait for the flush */
	size_t bytes = (size_t)count * sc_dtype_size(dt);
	void *host = sc_be_host_memory ? buf : xmalloc(bytes);
	double t0 = MPI_Wtime();
	SC_MPI_CHECK(MPI_Recv(host, mpi_count(count), sc_mpi_type(dt), peer, P2P_SEND_TAG, MPI_COMM_WORLD,
	                      MPI_STATUS_IGNORE));
	rt->recv_wait += MPI_Wtime() - t0;
	if (host != buf) {
		sc_from_host(rt, buf, host, bytes);
		free(host);
	}
}

void sc_p2p_flush(sc_rt *rt)
{
	reap_sends(rt, true);
}

void sc_pipeline_report(sc_rt *rt, int stages, double seconds, double bubble)
{
	if (stages < 1 || rt->size % stages)
		SC_DIE("sc_pipeline_report: %d stages of a world of %d ranks", stages, rt->size);
	double *wait = rt->rank == 0 ? xmalloc(sizeof(double) * (size_t)rt->size) : NULL;
	SC_MPI_CHECK(MPI_Gather(&rt->recv_wait, 1, MPI_DOUBLE, wait, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD));
	if (rt->rank != 0)
		return;
	int per = rt->size / stages;
	for (int s = 0; s < stages; s++) {
		double most = 0;   /* the stage's rank that waited longest */
		for (int r = s * per; r < (s + 1) * per; r++)
			most = wait[r] > most ? wait[r] : most;
		printf("pipeline stage %d (ranks %d-%d): idle %.1f%% of the run, waiting for other stages (the schedule's "
		       "bubble: %.1f%%)\n", s, s * per, (s + 1) * per - 1, seconds > 0 ? 100 * most / seconds : 0.0,
		       100 * bubble);
	}
	fflush(stdout);
	free(wait);
}

void sc_broadcast_host(sc_rt *rt, void *host, size_t bytes, int root)
{
	if (root < 0 || root >= rt->size)
		SC_DIE("sc_broadcast_host: root %d is not a rank of the world [0, %d)", root, rt->size);
	if (bytes > 0 && !host)
		SC_DIE("sc_broadcast_host: no buffer for %zu bytes", bytes);
	if (bytes > INT_MAX)
		SC_DIE("sc_broadcast_host: %zu bytes exceed MPI's int count", bytes);
	SC_MPI_CHECK(MPI_Bcast(host, (int)bytes, MPI_BYTE, root, MPI_COMM_WORLD));
}
