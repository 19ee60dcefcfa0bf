/* backend.c: the cuda backend: one GPU per rank, NCCL, cuBLAS, the
 * launchers of kernels.cu.
 *
 * Bootstrap as llm.c does it: MPI is up; each rank takes GPU (local rank
 * modulo the node's device count); rank 0 gets an NCCL unique id and
 * MPI_Bcast shares it; ncclCommInitRank makes the world communicator, and a
 * group is ncclCommSplit of it keyed by member index. When ranks share a GPU
 * (more ranks on a node than GPUs; NCCL refuses that), when NCCL was not
 * found at build time (SC_NO_NCCL), or when SHARDC_NO_NCCL=1, collectives
 * copy to host memory and use MPI (comm.c); sc_p2p_send and sc_p2p_recv
 * always do (see "point-to-point"). Every operation is queued on one
 * stream per rank; sc_to_host waits for it. Shapes are turned into walks and
 * plans here, on the host; the kernels only follow them. Float16 and
 * BFloat16 move as ncclFloat16 / ncclBfloat16; their reductions widen to
 * float32 in device scratch, reduce there and round once, as comm.c does. */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifndef SC_NO_NCCL
#include <nccl.h>
#endif

#include "cuda_kernels.h"
#include "profile.h"
#include "rt_internal.h"

static void cuda_check(cudaError_t e, const char *call, const char *file, int line)
{
	if (e != cudaSuccess)
		sc_fatal(file, line, "%s: %s", call, cudaGetErrorString(e));
}
#define SC_CUDA_CHECK(call) cuda_check((call), #call, __FILE__, __LINE__)

static void cublas_check(cublasStatus_t e, const char *call, const char *file, int line)
{
	if (e != CUBLAS_STATUS_SUCCESS)
		sc_fatal(file, line, "%s: %s", call, cublasGetStatusString(e));
}
#define SC_CUBLAS_CHECK(call) cublas_check((call), #call, __FILE__, __LINE__)

#ifndef SC_NO_NCCL
static void nccl_check(ncclResult_t e, const char *call, const char *file, int line)
{
	if (e != ncclSuccess)
		sc_fatal(file, line, "%s: %s", call, ncclGetErrorString(e));
}
#define SC_NCCL_CHECK(call) nccl_check((call), #call, __FILE__, __LINE__)
#endif

typedef struct {
	int device;
	cudaStream_t stream;
	cublasHandle_t blas;
	bool nccl;                   /* collectives through NCCL; else MPI on host copies */
#ifndef SC_NO_NCCL
	ncclComm_t world;
#endif
	void *dev[3];                /* device scratch: 0, 1 packing, 2 the kernels' (SC_KERNEL_SCRATCH) */
	size_t devn[3];
	void *host[2];               /* host scratch for the MPI fallback */
	size_t hostn[2];
	bool tf32;                   /* --tf32: Float32 matrix products on TF32 tensor cores */
	sc_prof *prof;               /* SHARDC_PROFILE=1; else NULL */
} Cuda;

static Cuda *cu(sc_rt *rt)
{
	return rt->be;
}

static void *dev_scratch(sc_rt *rt, int slot, size_t bytes)
{
	Cuda *c = cu(rt);
	if (c->devn[slot] < bytes) {
		SC_CUDA_CHECK(cudaStreamSynchronize(c->stream));
		SC_CUDA_CHECK(cudaFree(c->dev[slot]));
		SC_CUDA_CHECK(cudaMalloc(&c->dev[slot], bytes));
		c->devn[slot] = bytes;
	}
	return c->dev[slot];
}

/* the slot for the partial sums of launchers that take scratch; binary_grad
 * holds slots 0 and 1 while its sums run */
enum { SC_KERNEL_SCRATCH = 2 };

static void reduce_plan(sc_rt *rt, sc_reduce_kind kind, const float *x, float *y, const sc_cu_plan *p)
{
	void *scratch = dev_scratch(rt, SC_KERNEL_SCRATCH, sc_cu_reduce_scratch(p));
	SC_CUDA_CHECK(sc_cu_reduce(kind, x, y, p, scratch, cu(rt)->stream));
}

static void *host_scratch(sc_rt *rt, int slot, size_t bytes)
{
	Cuda *c = cu(rt);
	if (c->hostn[slot] < bytes) {
		free(c->host[slot]);
		if (!(c->host[slot] = malloc(bytes)))
			SC_DIE("out of memory");
		c->hostn[slot] = bytes;
	}
	return c->host[slot];
}

/* ---- the profile (profile.c): PROFILE opens a span that closes when the
 * calling function returns ---- */

typedef struct {
	sc_prof *p;
	int span;
} ProfSpan;

static ProfSpan prof_open(sc_rt *rt, const char *name, double flops, double bytes, sc_peak_kind peak)
{
	sc_prof *p = cu(rt)->prof;
	return (ProfSpan){p, p ? sc_prof_begin(p, name, flops, bytes, peak) : -1};
}

static void prof_close(ProfSpan *s)
{
	if (s->p)
		sc_prof_end(s->p, s->span);
}

#define PROFILE(rt, name, flops, bytes, peak) \
	ProfSpan prof_span_ __attribute__((cleanup(prof_close))) = prof_open(rt, name, flops, bytes, peak)

static sc_peak_kind f32_peak(sc_rt *rt)
{
	return cu(rt)->tf32 ? SC_PEAK_TF32 : SC_PEAK_F32;
}

static double sum_of(const int64_t *ns, int n)
{
	double s = 0;
	for (int i = 0; i < n; i++)
		s += (double)ns[i];
	return s;
}

/* The bytes an elementwise chain reads and writes at least. */
static double chain_bytes(const sc_ew_step *steps, int nsteps, const sc_ew_operand *ins, int nin, int64_t rows,
                          int64_t cols)
{
	double b = 0, n = (double)rows * (double)cols;
	for (int k = 0; k < nin; k++)
		b += (ins[k].bcast == SC_EW_FULL ? n : ins[k].bcast == SC_EW_ROW ? (double)cols : 1) *
		     (double)sc_dtype_size(ins[k].dt);
	for (int k = 0; k < nsteps; k++)
		if (steps[k].kind == SC_EW_STORE)
			b += n * (double)sc_dtype_size(steps[k].dt);
	return b;
}

/* ---- hooks ---- */

void sc_be_init(sc_rt *rt)
{
	Cuda *c = calloc(1, sizeof *c);
	if (!c)
		SC_DIE("out of memory");
	rt->be = c;
	MPI_Comm node;
	int lrank, lsize, ndev = 0;
	SC_MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rt->rank, MPI_INFO_NULL, &node));
	SC_MPI_CHECK(MPI_Comm_rank(node, &lrank));
	SC_MPI_CHECK(MPI_Comm_size(node, &lsize));
	MPI_Comm_free(&node);
	cudaError_t e = cudaGetDeviceCount(&ndev);
	if (e != cudaSuccess || ndev == 0)
		SC_DIE("no CUDA device for the cuda backend (%s); link -lshardc_rt_cpu to run on CPUs",
		       e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
	c->device = lrank % ndev;
	SC_CUDA_CHECK(cudaSetDevice(c->device));
	SC_CUDA_CHECK(cudaStreamCreate(&c->stream));
	SC_CUBLAS_CHECK(cublasCreate(&c->blas));
	SC_CUBLAS_CHECK(cublasSetStream(c->blas, c->stream));
	c->tf32 = sc_option(rt, "--tf32", NULL) != NULL;
	if (c->tf32)
		SC_CUBLAS_CHECK(cublasSetMathMode(c->blas, CUBLAS_TF32_TENSOR_OP_MATH));
	c->prof = sc_prof_new(c->stream, c->device);
	/* Every rank must take the same path: agree on whether any GPU is shared. */
	int shared = lsize > ndev || (getenv("SHARDC_NO_NCCL") && strcmp(getenv("SHARDC_NO_NCCL"), "1") == 0), any;
	SC_MPI_CHECK(MPI_Allreduce(&shared, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
#ifdef SC_NO_NCCL
	c->nccl = false;
	(void)any;
#else
	c->nccl = !any;
	if (c->nccl) {
		ncclUniqueId id;
		if (rt->rank == 0)
			SC_NCCL_CHECK(ncclGetUniqueId(&id));
		SC_MPI_CHECK(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD));
		SC_NCCL_CHECK(ncclCommInitRank(&c->world, rt->size, id, rt->rank));
	}
#endif
}

void sc_be_finalize(sc_rt *rt)
{
	Cuda *c = cu(rt);
	SC_CUDA_CHECK(cudaStreamSynchronize(c->stream));
	sc_prof_report(c->prof, rt->rank == 0 ? stderr : NULL, rt->rank);   /* rank 0's table */
	for (int i = 0; i < 3; i++)
		cudaFree(c->dev[i]);
	for (int i = 0; i < 2; i++)
		free(c->host[i]);
#ifndef SC_NO_NCCL
	if (c->nccl)
		ncclCommDestroy(c->world);
#endif
	cublasDestroy(c->blas);
	cudaStreamDestroy(c->stream);
	free(c);
	rt->be = NULL;
}

void sc_be_group_init(sc_rt *rt, sc_group *g)
{
	g->be = NULL;
#ifndef SC_NO_NCCL
	Cuda *c = cu(rt);
	if (!c->nccl)
		return;
	ncclComm_t comm = NULL;
	SC_NCCL_CHECK(ncclCommSplit(c->world, g->color >= 0 ? g->color : NCCL_SPLIT_NOCOLOR, g->me >= 0 ? g->me : 0, &comm, NULL));
	g->be = comm;
#else
	(void)rt;
#endif
}

void sc_be_step_done(sc_rt *rt, bool first, bool last)
{
	sc_prof_step(cu(rt)->prof, first, last);
}

void sc_be_sync(sc_rt *rt)
{
	SC_CUDA_CHECK(cudaStreamSynchronize(cu(rt)->stream));
}

void sc_be_group_free(sc_rt *rt, sc_group *g)
{
	(void)rt;
#ifndef SC_NO_NCCL
	if (g->be)
		ncclCommDestroy((ncclComm_t)g->be);
#endif
	g->be = NULL;
}

const bool sc_be_host_memory = false;   /* tensors are device memory: --data copies each piece into the slab */

void *sc_be_alloc(sc_rt *rt, size_t bytes)
{
	void *p = NULL;
	SC_CUDA_CHECK(cudaMalloc(&p, bytes));
	SC_CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, cu(rt)->stream));
	SC_CUDA_CHECK(cudaStreamSynchronize(cu(rt)->stream));
	return p;
}

void sc_be_free(sc_rt *rt, void *p)
{
	SC_CUDA_CHECK(cudaStreamSynchronize(cu(rt)->stream));
	SC_CUDA_CHECK(cudaFree(p));
}

/* ---- collectives ---- */

/* The MPI fallback: the whole collective on host copies. */
static void via_host(sc_rt *rt, const void *in, size_t inb, void *out, size_t outb, void **hin, void **hout)
{
	*hin = host_scratch(rt, 0, inb);
	*hout = host_scratch(rt, 1, outb);
	sc_to_host(rt, *hin, in, inb);
	(void)out;
}

static void back_to_device(sc_rt *rt, void *out, const void *hout, size_t outb)
{
	sc_from_host(rt, out, hout, outb);
}

#ifndef SC_NO_NCCL
static ncclDataType_t nccl_type(sc_dtype dt)
{
	switch (dt) {
	case SC_F32: return ncclFloat32;
	case SC_I32: return ncclInt32;
	case SC_I64: return ncclInt64;
	case SC_F16: return ncclFloat16;
	case SC_BF16: return ncclBfloat16;
	case SC_BOOL: return ncclUint8;   /* moved (AllGather, AllToAll), or its min and max */
	}
	SC_DIE("no NCCL type for %s", sc_dtype_name(dt));
}

static ncclRedOp_t nccl_op(sc_redop op)
{
	return op == SC_MAX ? ncclMax : op == SC_MIN ? ncclMin : op == SC_PROD ? ncclProd : ncclSum;   /* a mean: the sum */
}
#endif

void sc_be_all_reduce(sc_rt *rt, sc_group *g, const void *in, void *out, sc_dtype dt, int64_t count, sc_redop op)
{
	PROFILE(rt, "AllReduce", 0, 2.0 * (double)count * (double)sc_dtype_size(dt), SC_PEAK_MEM);
	Cuda *c = cu(rt);
	size_t bytes = (size_t)count * sc_dtype_size(dt);
	if (!c->nccl) {
		void *hin, *hout;
		via_host(rt, in, bytes, out, bytes, &hin, &hout);
		sc_host_all_reduce(g, hin, hout, dt, count, op);
		back_to_device(rt, out, hout, bytes);
		return;
	}
#ifndef SC_NO_NCCL
	if (sc_is_half(dt)) {   /* as the host version: in float32, rounded once */
		float *wide = dev_scratch(rt, 0, (size_t)count * sizeof *wide);
		SC_CUDA_CHECK(sc_cu_cast(in, dt, wide, SC_F32, count, c->stream));
		sc_be_all_reduce(rt, g, wide, wide, SC_F32, count, op);
		SC_CUDA_CHECK(sc_cu_cast(wide, SC_F32, out, dt, count, c->stream));
		return;
	}
	SC_NCCL_CHECK(ncclAllReduce(in, out, (size_t)count, nccl_type(dt), nccl_op(op), (ncclComm_t)g->be, c->stream));
	if (op == SC_MEAN)
		SC_CUDA_CHECK(sc_cu_divide(out, dt, count, g->n, c->stream));
#endif
}

void sc_be_all_gather(sc_rt *rt, sc_group *g, const void *in, void *out, sc_dtype dt, const int64_t *dims, int ndim,
                      int axis)
{
	PROFILE(rt, "AllGather", 0, (double)sc_numel(dims, ndim) * (double)sc_dtype_size(dt) * g->n, SC_PEAK_MEM);
	Cuda *c = cu(rt);
	size_t es = sc_dtype_size(dt);
	int64_t local = sc_numel(dims, ndim), outer, mid, inner;
	if (!c->nccl) {
		void *hin, *hout;
		via_host(rt, in, (size_t)local * es, out, (size_t)(local * g->n) * es, &hin, &hout);
		sc_host_all_gather(g, hin, hout, dt, dims, ndim, axis);
		back_to_device(rt, out, hout, (size_t)(local * g->n) * es);
		return;
	}
#ifndef SC_NO_NCCL
	sc_split3(dims, ndim, axis, &outer, &mid, &inner);
	void *dst = outer == 1 ? out : dev_scratch(rt, 0, (size_t)(local * g->n) * es);
	SC_NCCL_CHECK(ncclAllGather(in, dst, (size_t)local, nccl_type(dt), (ncclComm_t)g->be, c->stream));
	if (outer > 1)
		SC_CUDA_CHECK(sc_cu_swap01(dst, out, g->n, outer, mid * inner, es, c->stream));
#else
	(void)outer, (void)mid, (void)inner;
#endif
}

void sc_be_reduce_scatter(sc_rt *rt, sc_group *g, const void *in, void *out, sc_dtype dt, const int64_t *dims,
                          int ndim, int axis, sc_redop op)
{
	PROFILE(rt, "ReduceScatter", 0, (double)sc_numel(dims, ndim) * (double)sc_dtype_size(dt), SC_PEAK_MEM);
	Cuda *c = cu(rt);
	size_t es = sc_dtype_size(dt);
	int64_t total = sc_numel(dims, ndim), outer, mid, inner;
	if (!c->nccl) {
		void *hin, *hout;
		via_host(rt, in, (size_t)total * es, out, (size_t)(total / g->n) * es, &hin, &hout);
		sc_host_reduce_scatter(g, hin, hout, dt, dims, ndim, axis, op);
		back_to_device(rt, out, hout, (size_t)(total / g->n) * es);
		return;
	}
#ifndef SC_NO_NCCL
	if (sc_is_half(dt)) {   /* as the host version: in float32, rounded once */
		float *wide = dev_scratch(rt, 1, (size_t)(total + total / g->n) * sizeof *wide);
		SC_CUDA_CHECK(sc_cu_cast(in, dt, wide, SC_F32, total, c->stream));
		sc_be_reduce_scatter(rt, g, wide, wide + total, SC_F32, dims, ndim, axis, op);
		SC_CUDA_CHECK(sc_cu_cast(wide + total, SC_F32, out, dt, total / g->n, c->stream));
		return;
	}
	sc_split3(dims, ndim, axis, &outer, &mid, &inner);
	const void *src = in;
	if (outer > 1) {
		void *tmp = dev_scratch(rt, 0, (size_t)total * es);
		SC_CUDA_CHECK(sc_cu_swap01(in, tmp, outer, g->n, mid / g->n * inner, es, c->stream));
		src = tmp;
	}
	SC_NCCL_CHECK(ncclReduceScatter(src, out, (size_t)(total / g->n), nccl_type(dt), nccl_op(op), (ncclComm_t)g->be,
	                                c->stream));
	if (op == SC_MEAN)
		SC_CUDA_CHECK(sc_cu_divide(out, dt, total / g->n, g->n, c->stream));
#else
	(void)outer, (void)mid, (void)inner;
#endif
}

void sc_be_all_to_all(sc_rt *rt, sc_group *g, const void *in, void *out, sc_dtype dt, const int64_t *dims, int ndim,
                      int split_axis, int concat_axis)
{
	PROFILE(rt, "AllToAll", 0, 2.0 * (double)sc_numel(dims, ndim) * (double)sc_dtype_size(dt), SC_PEAK_MEM);
	Cuda *c = cu(rt);
	size_t es = sc_dtype_size(dt);
	int64_t total = sc_numel(dims, ndim), outer, mid, inner;
	if (!c->nccl) {
		void *hin, *hout;
		via_host(rt, in, (size_t)total * es, out, (size_t)total * es, &hin, &hout);
		sc_host_all_to_all(g, hin, hout, dt, dims, ndim, split_axis, concat_axis);
		back_to_device(rt, out, hout, (size_t)total * es);
		return;
	}
#ifndef SC_NO_NCCL
	int n = g->n;
	size_t piece = (size_t)(total / n);
	char *send = dev_scratch(rt, 0, (size_t)total * es), *recv = dev_scratch(rt, 1, (size_t)total * es);
	sc_split3(dims, ndim, split_axis, &outer, &mid, &inner);
	SC_CUDA_CHECK(sc_cu_swap01(in, send, outer, n, mid / n * inner, es, c->stream));
	SC_NCCL_CHECK(ncclGroupStart());
	for (int j = 0; j < n; j++) {
		SC_NCCL_CHECK(ncclSend(send + j * piece * es, piece, nccl_type(dt), j, (ncclComm_t)g->be, c->stream));
		SC_NCCL_CHECK(ncclRecv(recv + j * piece * es, piece, nccl_type(dt), j, (ncclComm_t)g->be, c->stream));
	}
	SC_NCCL_CHECK(ncclGroupEnd());
	int64_t pdims[SC_MAX_DIMS];
	memcpy(pdims, dims, (size_t)ndim * sizeof *dims);
	pdims[split_axis] /= n;
	sc_split3(pdims, ndim, concat_axis, &outer, &mid, &inner);
	SC_CUDA_CHECK(sc_cu_swap01(recv, out, n, outer, mid * inner, es, c->stream));
#else
	(void)outer, (void)mid, (void)inner;
#endif
}

/* ---- point-to-point ---- */

static size_t op_bytes(const sc_p2p *o)
{
	return (size_t)o->count * sc_dtype_size(o->dt);
}

/* An operation's room in the fallback's host buffers: a multiple of 8 bytes,
 * so the next piece is aligned for any element. */
static size_t host_room(const sc_p2p *o)
{
	return (op_bytes(o) + 7) / 8 * 8;
}

/* The MPI fallback: the sends copied into one host buffer, the receives
 * landing in another, then copied back to the device. */
static void p2p_via_host(sc_rt *rt, const sc_p2p *ops, int n)
{
	size_t sent = 0, received = 0;
	for (int k = 0; k < n; k++) {
		if (ops[k].dir == SC_SEND)
			sent += host_room(&ops[k]);
		else
			received += host_room(&ops[k]);
	}
	/* a byte more, so that no piece is an offset from a NULL buffer */
	char *hs = host_scratch(rt, 0, sent + 1), *hr = host_scratch(rt, 1, received + 1);
	sc_p2p *h = malloc((size_t)(n ? n : 1) * sizeof *h);
	if (!h)
		SC_DIE("out of memory");
	sent = received = 0;
	for (int k = 0; k < n; k++) {
		h[k] = ops[k];
		if (ops[k].dir == SC_SEND) {
			h[k].buf = hs + sent;
			sc_to_host(rt, h[k].buf, ops[k].buf, op_bytes(&ops[k]));
			sent += host_room(&ops[k]);
		} else {
			h[k].buf = hr + received;
			received += host_room(&ops[k]);
		}
	}
	sc_host_p2p_exchange(h, n);
	for (int k = 0; k < n; k++)
		if (ops[k].dir == SC_RECV)
			sc_from_host(rt, ops[k].buf, h[k].buf, op_bytes(&ops[k]));
	free(h);
}

void sc_be_p2p_exchange(sc_rt *rt, const sc_p2p *ops, int n)
{
	double moved = 0;   /* sent and received: what this GPU's memory gives and takes */
	for (int k = 0; k < n; k++)
		moved += (double)op_bytes(&ops[k]);
	PROFILE(rt, "SendRecv", 0, moved, SC_PEAK_MEM);
	Cuda *c = cu(rt);
	if (!c->nccl) {
		p2p_via_host(rt, ops, n);
		return;
	}
#ifndef SC_NO_NCCL
	/* One group: NCCL progresses its calls together (no deadlock between two
	 * ranks sending to each other) and runs those to one peer in order. A
	 * count of 0 is left out on both sides alike. */
	SC_NCCL_CHECK(ncclGroupStart());
	for (int k = 0; k < n; k++) {
		const sc_p2p *o = &ops[k];
		if (o->count == 0)
			continue;
		if (o->dir == SC_SEND)
			SC_NCCL_CHECK(ncclSend(o->buf, (size_t)o->count, nccl_type(o->dt), o->peer, c->world, c->stream));
		else
			SC_NCCL_CHECK(ncclRecv(o->buf, (size_t)o->count, nccl_type(o->dt), o->peer, c->world, c->stream));
	}
	SC_NCCL_CHECK(ncclGroupEnd());
#endif
}

/* sc_p2p_send, sc_p2p_recv and sc_p2p_flush are comm.c's on this backend
 * too, with NCCL or without: a send copies the message to the host
 * (sc_to_host, after the stream's queued work) and posts an MPI_Isend of
 * the copy; a receive is MPI_Recv into a host buffer, then sc_from_host.
 * Why not ncclSend on a stream of its own, the compute stream waiting only
 * for the copy into a device buffer: in a 1F1B schedule both neighbours
 * send before they receive, so the receive each then queues must run while
 * its send still waits for the other's receive, and NCCL does not promise
 * that two of its operations make progress together (NVIDIA/nccl issues
 * 195 and 217: "make sure things will still work even if one blocks the
 * other"); within one communicator it runs them in the order they were
 * queued. Through MPI the send never waits for its receiver, on the host
 * or on the device, and this rank blocks only where the cpu backend, whose
 * code it is, would. The price is a stream synchronization and two host
 * copies a message. UNTESTED ON A GPU: written where none was; make
 * runtime-cuda-test runs mpi_p2p's send and receive cases on this library
 * where one is. */

/* ---- memory ---- */

void sc_to_host(sc_rt *rt, void *host, const void *src, size_t bytes)
{
	PROFILE(rt, "to host", 0, (double)bytes, SC_PEAK_MEM);
	if (!bytes)
		return;
	SC_CUDA_CHECK(cudaMemcpyAsync(host, src, bytes, cudaMemcpyDeviceToHost, cu(rt)->stream));
	SC_CUDA_CHECK(cudaStreamSynchronize(cu(rt)->stream));
}

void sc_from_host(sc_rt *rt, void *dst, const void *host, size_t bytes)
{
	PROFILE(rt, "from host", 0, (double)bytes, SC_PEAK_MEM);
	if (!bytes)
		return;
	SC_CUDA_CHECK(cudaMemcpyAsync(dst, host, bytes, cudaMemcpyHostToDevice, cu(rt)->stream));
	SC_CUDA_CHECK(cudaStreamSynchronize(cu(rt)->stream));   /* the host buffer may go */
}

void sc_copy(sc_rt *rt, void *dst, const void *src, size_t bytes)
{
	PROFILE(rt, "Copy", 0, 2.0 * (double)bytes, SC_PEAK_MEM);
	if (bytes && dst != src)
		SC_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, cu(rt)->stream));
}

void sc_fill(sc_rt *rt, void *dst, sc_dtype dt, int64_t n, double value)
{
	PROFILE(rt, "Fill", 0, (double)n * (double)sc_dtype_size(dt), SC_PEAK_MEM);
	SC_CUDA_CHECK(sc_cu_fill(dst, dt, n, value, cu(rt)->stream));
}

void sc_fill_pad(sc_rt *rt, const void *x, void *y, sc_dtype dt, const int64_t *dims, int ndim, int dim,
                 int64_t real, double value)
{
	int64_t outer, mid, inner;
	sc_check_dims("sc_fill_pad", dims, ndim);
	sc_split3(dims, ndim, sc_norm_axis("sc_fill_pad", dim, ndim), &outer, &mid, &inner);
	if (real < 0 || real > mid)
		SC_DIE("sc_fill_pad: %lld real elements of %lld", (long long)real, (long long)mid);
	PROFILE(rt, "FillPad", 0, 2.0 * (double)sc_numel(dims, ndim) * (double)sc_dtype_size(dt), SC_PEAK_MEM);
	SC_CUDA_CHECK(sc_cu_fill_pad(x, y, dt, outer, mid, inner, real, value, cu(rt)->stream));
}

/* ---- shapes into walks and plans ---- */

static void row_strides(const int64_t *dims, int ndim, int64_t *s)
{
	int64_t v = 1;
	for (int d = ndim - 1; d >= 0; d--) {
		s[d] = v;
		v *= dims[d];
	}
}

/* The walk over out_dims of operands a (and b) broadcast to it. */
static sc_cu_walk bcast_walk(const char *what, const int64_t *a_dims, int a_ndim, const int64_t *b_dims, int b_ndim,
                             const int64_t *out_dims, int out_ndim)
{
	sc_cu_walk w;
	memset(&w, 0, sizeof w);
	w.ndim = out_ndim;
	memcpy(w.dims, out_dims, (size_t)out_ndim * sizeof *out_dims);
	sc_bcast_strides(what, a_dims, a_ndim, out_dims, out_ndim, w.s0);
	if (b_dims || b_ndim == 0)
		sc_bcast_strides(what, b_dims, b_ndim, out_dims, out_ndim, w.s1);
	return w;
}

/* Reduce x (dims) over the axes marked in red; the output is row-major over the rest. */
static sc_cu_plan make_plan(const int64_t *dims, int ndim, const bool *red)
{
	sc_cu_plan p;
	int64_t xs[SC_MAX_DIMS];
	memset(&p, 0, sizeof p);
	row_strides(dims, ndim, xs);
	for (int d = 0; d < ndim; d++)
		if (red[d]) {
			p.rdims[p.nr] = dims[d];
			p.rstride[p.nr++] = xs[d];
		} else {
			p.kdims[p.nk] = dims[d];
			p.kstride[p.nk++] = xs[d];
		}
	return p;
}

static sc_cu_plan axes_plan(const char *what, const int64_t *dims, int ndim, const int *axes, int naxes)
{
	bool red[SC_MAX_DIMS] = {0};
	sc_check_dims(what, dims, ndim);
	for (int i = 0; i < naxes; i++) {
		int a = sc_norm_axis(what, axes[i], ndim);
		if (red[a])
			SC_DIE("%s: axis %d named twice", what, a);
		red[a] = true;
	}
	return make_plan(dims, ndim, red);
}

/* sum x (x_dims) down to y_dims, which broadcast to x_dims */
static sc_cu_plan sum_plan(const int64_t *x_dims, int x_ndim, const int64_t *y_dims, int y_ndim)
{
	int64_t s[SC_MAX_DIMS];
	bool red[SC_MAX_DIMS] = {0};
	sc_bcast_strides("sum_to_shape", y_dims, y_ndim, x_dims, x_ndim, s);
	for (int d = 0; d < x_ndim; d++) {
		int j = d - (x_ndim - y_ndim);
		red[d] = j < 0 || y_dims[j] != x_dims[d];
	}
	return make_plan(x_dims, x_ndim, red);
}

/* ---- kernels ---- */

static int blas_int(int64_t v)
{
	if (v < 0 || v > 2147483647)
		SC_DIE("matmul: dim %lld out of cuBLAS's int range", (long long)v);
	return (int)v;
}

/* Row-major c = op(a) op(b) is column-major c^T = op(b)^T op(a)^T. */
void sc_matmul(sc_rt *rt, const float *a, const float *b, float *c, int64_t m, int64_t n, int64_t k,
               int transpose_a, int transpose_b)
{
	PROFILE(rt, "MatMul", 2.0 * m * n * k, 4.0 * (m * k + k * n + m * n), f32_peak(rt));
	const float one = 1, zero = 0;
	SC_CUBLAS_CHECK(cublasSgemm(cu(rt)->blas, transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N,
	                            transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N, blas_int(n), blas_int(m), blas_int(k), &one, b,
	                            blas_int(transpose_b ? k : n), a, blas_int(transpose_a ? m : k), &zero, c, blas_int(n)));
}

/* cuBLAS's name for a float type */
static cudaDataType_t blas_type(sc_dtype dt)
{
	return dt == SC_BF16 ? CUDA_R_16BF : dt == SC_F16 ? CUDA_R_16F : CUDA_R_32F;
}

/* Tensor cores: half operands, Float32 sums; the result Float32 or, of the
 * operands' type, rounded once by cuBLAS's epilogue (no Float32 copy). */
void sc_matmul_half(sc_rt *rt, sc_dtype dt, const void *a, const void *b, void *c, sc_dtype c_dt, int64_t m,
                    int64_t n, int64_t k, int transpose_a, int transpose_b)
{
	PROFILE(rt, "MatMul half", 2.0 * m * n * k, 2.0 * (m * k + k * n) + (double)sc_dtype_size(c_dt) * m * n,
	        SC_PEAK_HALF);
	sc_check_half_product("sc_matmul_half", dt, c_dt);
	const float one = 1, zero = 0;
	cudaDataType_t t = blas_type(dt);
	SC_CUBLAS_CHECK(cublasGemmEx(cu(rt)->blas, transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N,
	                             transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N, blas_int(n), blas_int(m), blas_int(k), &one,
	                             b, t, blas_int(transpose_b ? k : n), a, t, blas_int(transpose_a ? m : k), &zero, c,
	                             blas_type(c_dt), blas_int(n), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

/* all batch strides 0 (broadcast) or all equal to the contiguous ones */
static bool uniform_batch(const int64_t *s, const int64_t *dims, int nb, int64_t *stride)
{
	int64_t want[SC_MAX_DIMS];
	bool zero = true, full = true;
	row_strides(dims, nb, want);
	for (int d = 0; d < nb; d++) {
		zero = zero && (s[d] == 0 || dims[d] == 1);
		full = full && (s[d] == want[d] || dims[d] == 1);
	}
	*stride = zero ? 0 : 1;
	return zero || full;
}

/* Batched c = op(a) op(b) with a and b of type dt (Float32: Sgemm; a half
 * type: GemmEx with Float32 sums), c of c_dt (Float32, or dt): one
 * strided-batched call when both operands' batches are evenly spaced (or
 * broadcast whole), else one call a batch. */
static void batch_gemm(sc_rt *rt, sc_dtype dt, const void *a, const int64_t *a_bdims, int a_nb, const void *b,
                       const int64_t *b_bdims, int b_nb, void *c, sc_dtype c_dt, const int64_t *c_bdims, int c_nb,
                       int64_t m, int64_t n, int64_t k, int transpose_a, int transpose_b)
{
	sc_cu_walk w = bcast_walk("batch_matmul", a_bdims, a_nb, b_bdims, b_nb, c_bdims, c_nb);
	int64_t batches = sc_numel(c_bdims, c_nb), sa, sb, es = (int64_t)sc_dtype_size(dt);
	int64_t ces = (int64_t)sc_dtype_size(c_dt);
	const float one = 1, zero = 0;
	cublasHandle_t h = cu(rt)->blas;
	cublasOperation_t ob = transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N, oa = transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
	int ldb = blas_int(transpose_b ? k : n), lda = blas_int(transpose_a ? m : k);
	int bn = blas_int(n), bm = blas_int(m), bk = blas_int(k);
	cudaDataType_t t = blas_type(dt), ct = blas_type(c_dt);
	if (uniform_batch(w.s0, c_bdims, c_nb, &sa) && uniform_batch(w.s1, c_bdims, c_nb, &sb)) {
		if (dt == SC_F32)
			SC_CUBLAS_CHECK(cublasSgemmStridedBatched(h, ob, oa, bn, bm, bk, &one, b, ldb, sb * k * n, a, lda,
			                                          sa * m * k, &zero, (float *)c, bn, m * n, blas_int(batches)));
		else
			SC_CUBLAS_CHECK(cublasGemmStridedBatchedEx(h, ob, oa, bn, bm, bk, &one, b, t, ldb, sb * k * n, a, t, lda,
			                                           sa * m * k, &zero, c, ct, bn, m * n, blas_int(batches),
			                                           CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
		return;
	}
	int64_t idx[SC_MAX_DIMS] = {0};
	for (int64_t i = 0; i < batches; i++) {
		int64_t oa_off = 0, ob_off = 0;
		for (int d = 0; d < c_nb; d++) {
			oa_off += idx[d] * w.s0[d];
			ob_off += idx[d] * w.s1[d];
		}
		const char *bi = (const char *)b + ob_off * k * n * es, *ai = (const char *)a + oa_off * m * k * es;
		char *ci = (char *)c + i * m * n * ces;
		if (dt == SC_F32)
			SC_CUBLAS_CHECK(cublasSgemm(h, ob, oa, bn, bm, bk, &one, (const float *)bi, ldb, (const float *)ai, lda,
			                            &zero, (float *)ci, bn));
		else
			SC_CUBLAS_CHECK(cublasGemmEx(h, ob, oa, bn, bm, bk, &one, bi, t, ldb, ai, t, lda, &zero, ci, ct, bn,
			                             CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
		for (int d = c_nb - 1; d >= 0 && ++idx[d] == c_bdims[d]; d--)
			idx[d] = 0;
	}
}

void sc_batch_matmul(sc_rt *rt, const float *a, const int64_t *a_bdims, int a_nb, const float *b,
                     const int64_t *b_bdims, int b_nb, float *c, const int64_t *c_bdims, int c_nb, int64_t m,
                     int64_t n, int64_t k, int transpose_a, int transpose_b)
{
	PROFILE(rt, "BatchMatMul", 2.0 * (double)sc_numel(c_bdims, c_nb) * m * n * k,
	        4.0 * (double)sc_numel(c_bdims, c_nb) * (m * k + k * n + m * n), f32_peak(rt));
	batch_gemm(rt, SC_F32, a, a_bdims, a_nb, b, b_bdims, b_nb, c, SC_F32, c_bdims, c_nb, m, n, k, transpose_a,
	           transpose_b);
}

void sc_batch_matmul_half(sc_rt *rt, sc_dtype dt, const void *a, const int64_t *a_bdims, int a_nb, const void *b,
                          const int64_t *b_bdims, int b_nb, void *c, sc_dtype c_dt, const int64_t *c_bdims, int c_nb,
                          int64_t m, int64_t n, int64_t k, int transpose_a, int transpose_b)
{
	PROFILE(rt, "BatchMatMul half", 2.0 * (double)sc_numel(c_bdims, c_nb) * m * n * k,
	        (double)sc_numel(c_bdims, c_nb) * (2.0 * (m * k + k * n) + (double)sc_dtype_size(c_dt) * m * n), SC_PEAK_HALF);
	sc_check_half_product("sc_batch_matmul_half", dt, c_dt);
	batch_gemm(rt, dt, a, a_bdims, a_nb, b, b_bdims, b_nb, c, c_dt, c_bdims, c_nb, m, n, k, transpose_a,
	           transpose_b);
}

/* Strided operands: the last batch dim in one strided-batched call, the
 * ones before it walked here (a view of attention's heads: a call a batch).
 * a and b of type dt (Float32: Sgemm; a half type: GemmEx with Float32
 * sums), c of c_dt (Float32, or dt). */
static void strided_gemm(sc_rt *rt, sc_dtype dt, const void *a, const int64_t *a_st, const void *b,
                         const int64_t *b_st, void *c, sc_dtype c_dt, const int64_t *c_st, const int64_t *bdims,
                         int nb, int64_t m, int64_t n, int64_t k, int transpose_a, int transpose_b)
{
	sc_check_dims("batch_matmul", bdims, nb);
	const float one = 1, zero = 0;
	cublasHandle_t h = cu(rt)->blas;
	cublasOperation_t ob = transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N, oa = transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
	cudaDataType_t t = blas_type(dt), ct = blas_type(c_dt);
	int64_t es = (int64_t)sc_dtype_size(dt), ces = (int64_t)sc_dtype_size(c_dt);
	int lda = blas_int(a_st[nb]), ldb = blas_int(b_st[nb]), ldc = blas_int(c_st[nb]);
	int bn = blas_int(n), bm = blas_int(m), bk = blas_int(k);
	int inner = nb ? blas_int(bdims[nb - 1]) : 1, outer_nb = nb ? nb - 1 : 0;
	int64_t sa = nb ? a_st[nb - 1] : 0, sb = nb ? b_st[nb - 1] : 0, sc = nb ? c_st[nb - 1] : 0;
	int64_t idx[SC_MAX_DIMS] = {0}, outer = sc_numel(bdims, outer_nb);
	for (int64_t i = 0; i < outer; i++) {
		int64_t oa_off = 0, ob_off = 0, oc_off = 0;
		for (int d = 0; d < outer_nb; d++) {
			oa_off += idx[d] * a_st[d];
			ob_off += idx[d] * b_st[d];
			oc_off += idx[d] * c_st[d];
		}
		const char *ai = (const char *)a + oa_off * es, *bi = (const char *)b + ob_off * es;
		char *ci = (char *)c + oc_off * ces;
		if (dt == SC_F32)
			SC_CUBLAS_CHECK(cublasSgemmStridedBatched(h, ob, oa, bn, bm, bk, &one, (const float *)bi, ldb, sb,
			                                          (const float *)ai, lda, sa, &zero, (float *)ci, ldc, sc, inner));
		else
			SC_CUBLAS_CHECK(cublasGemmStridedBatchedEx(h, ob, oa, bn, bm, bk, &one, bi, t, ldb, sb, ai, t, lda, sa,
			                                           &zero, ci, ct, ldc, sc, inner, CUBLAS_COMPUTE_32F,
			                                           CUBLAS_GEMM_DEFAULT));
		for (int d = outer_nb - 1; d >= 0 && ++idx[d] == bdims[d]; d--)
			idx[d] = 0;
	}
}

void sc_batch_matmul_strided(sc_rt *rt, const float *a, const int64_t *a_st, const float *b, const int64_t *b_st,
                             float *c, const int64_t *c_st, const int64_t *bdims, int nb, int64_t m, int64_t n,
                             int64_t k, int transpose_a, int transpose_b)
{
	PROFILE(rt, "BatchMatMul", 2.0 * (double)sc_numel(bdims, nb) * m * n * k,
	        4.0 * (double)sc_numel(bdims, nb) * (m * k + k * n + m * n), f32_peak(rt));
	strided_gemm(rt, SC_F32, a, a_st, b, b_st, c, SC_F32, c_st, bdims, nb, m, n, k, transpose_a, transpose_b);
}

void sc_batch_matmul_half_strided(sc_rt *rt, sc_dtype dt, const void *a, const int64_t *a_st, const void *b,
                                  const int64_t *b_st, void *c, sc_dtype c_dt, const int64_t *c_st,
                                  const int64_t *bdims, int nb, int64_t m, int64_t n, int64_t k, int transpose_a,
                                  int transpose_b)
{
	PROFILE(rt, "BatchMatMul half", 2.0 * (double)sc_numel(bdims, nb) * m * n * k,
	        (double)sc_numel(bdims, nb) * (2.0 * (m * k + k * n) + (double)sc_dtype_size(c_dt) * m * n), SC_PEAK_HALF);
	sc_check_half_product("sc_batch_matmul_half_strided", dt, c_dt);
	strided_gemm(rt, dt, a, a_st, b, b_st, c, c_dt, c_st, bdims, nb, m, n, k, transpose_a, transpose_b);
}

void sc_binary(sc_rt *rt, sc_binop op, const float *a, const int64_t *a_dims, int a_ndim, const float *b,
               const int64_t *b_dims, int b_ndim, float *y, const int64_t *y_dims, int y_ndim)
{
	PROFILE(rt, "Binary", 0, 12.0 * (double)sc_numel(y_dims, y_ndim), SC_PEAK_MEM);
	sc_cu_walk w = bcast_walk("binary", a_dims, a_ndim, b_dims, b_ndim, y_dims, y_ndim);
	SC_CUDA_CHECK(sc_cu_binary(op, a, b, y, &w, cu(rt)->stream));
}

void sc_compare(sc_rt *rt, sc_cmpop op, float p, const float *a, const int64_t *a_dims, int a_ndim, const float *b,
                const int64_t *b_dims, int b_ndim, uint8_t *y, const int64_t *y_dims, int y_ndim)
{
	PROFILE(rt, "Compare", 0, 9.0 * (double)sc_numel(y_dims, y_ndim), SC_PEAK_MEM);
	sc_cu_walk w = bcast_walk("compare", a_dims, a_ndim, b_dims, b_ndim, y_dims, y_ndim);
	SC_CUDA_CHECK(sc_cu_compare(op, p, a, b, y, &w, cu(rt)->stream));
}

void sc_logical(sc_rt *rt, sc_logop op, const uint8_t *a, const int64_t *a_dims, int a_ndim, const uint8_t *b,
                const int64_t *b_dims, int b_ndim, uint8_t *y, const int64_t *y_dims, int y_ndim)
{
	PROFILE(rt, "Logical", 0, 3.0 * (double)sc_numel(y_dims, y_ndim), SC_PEAK_MEM);
	if (op == SC_L_NOT)   /* a alone: walked as both operands */
		b = a, b_dims = a_dims, b_ndim = a_ndim;
	sc_cu_walk w = bcast_walk("logical", a_dims, a_ndim, b_dims, b_ndim, y_dims, y_ndim);
	SC_CUDA_CHECK(sc_cu_logical(op, a, b, y, &w, cu(rt)->stream));
}

void sc_int_math(sc_rt *rt, sc_intop op, sc_dtype dt, const void *a, const int64_t *a_dims, int a_ndim,
                 const void *b, const int64_t *b_dims, int b_ndim, void *y, const int64_t *y_dims, int y_ndim)
{
	PROFILE(rt, "IntMath", 0, 3.0 * (double)sc_numel(y_dims, y_ndim) * (double)sc_dtype_size(dt), SC_PEAK_MEM);
	if (!b)   /* a alone: walked as both operands */
		b = a, b_dims = a_dims, b_ndim = a_ndim;
	sc_cu_walk w = bcast_walk("int_math", a_dims, a_ndim, b_dims, b_ndim, y_dims, y_ndim);
	SC_CUDA_CHECK(sc_cu_int_math(op, dt, a, b, y, &w, cu(rt)->stream));
}

void sc_reverse(sc_rt *rt, const float *x, float *y, const int64_t *dims, int ndim, unsigned rev)
{
	PROFILE(rt, "ReverseV2", 0, 8.0 * (double)sc_numel(dims, ndim), SC_PEAK_MEM);
	sc_check_dims("sc_reverse", dims, ndim);
	sc_cu_walk w = bcast_walk("reverse", dims, ndim, dims, ndim, dims, ndim);
	SC_CUDA_CHECK(sc_cu_reverse(x, y, &w, rev, cu(rt)->stream));
}

void sc_trace(sc_rt *rt, const float *x, float *y, const int64_t *dims, int ndim, int a1, int a2, int64_t offset)
{
	sc_diag g;
	sc_diag_init(&g, dims, ndim, a1, a2, offset);
	PROFILE(rt, "TraceV2", (double)(g.n * g.len), 4.0 * (double)(g.n * (g.len + 1)), SC_PEAK_MEM);
	SC_CUDA_CHECK(sc_cu_trace(x, y, &g, 0, cu(rt)->stream));
}

void sc_trace_grad(sc_rt *rt, const float *dy, float *dx, const int64_t *dims, int ndim, int a1, int a2,
                   int64_t offset)
{
	sc_diag g;
	sc_diag_init(&g, dims, ndim, a1, a2, offset);
	PROFILE(rt, "TraceV2Grad", 0, 4.0 * (double)sc_numel(dims, ndim), SC_PEAK_MEM);
	SC_CUDA_CHECK(sc_cu_fill(dx, SC_F32, sc_numel(dims, ndim), 0, cu(rt)->stream));
	SC_CUDA_CHECK(sc_cu_trace(dy, dx, &g, 1, cu(rt)->stream));
}

void sc_is_finite(sc_rt *rt, const float *x, uint8_t *y, int64_t n)
{
	PROFILE(rt, "IsFinite", 0, 5.0 * (double)n, SC_PEAK_MEM);
	SC_CUDA_CHECK(sc_cu_is_finite(x, y, n, cu(rt)->stream));
}

void sc_bias_unary(sc_rt *rt, sc_unop op, float p, const float *x, const float *bias, float *pre, float *y,
                   int64_t rows, int64_t c)
{
	PROFILE(rt, "BiasAdd+unary", 0, 12.0 * rows * c, SC_PEAK_MEM);
	SC_CUDA_CHECK(sc_cu_bias_unary(op, p, x, bias, pre, y, rows, c, cu(rt)->stream));
}

void sc_bias_add_residual(sc_rt *rt, const float *x, const float *bias, float *pre, const float *r, float *y,
                          int64_t rows, int64_t c)
{
	PROFILE(rt, "BiasAdd+residual", 0, 16.0 * rows * c, SC_PEAK_MEM);
	SC_CUDA_CHECK(sc_cu_bias_add_residual(x, bias, pre, r, y, rows, c, cu(rt)->stream));
}

/* The profile's row for a chain of n elements: by size class, so that the
 * chains over a transformer's (seq x seq) scores and those over its
 * activations are told apart. */
static const char *chain_kind(double n)
{
	return n >= 0x1p27 ? "elementwise chain >= 2^27" : n >= 0x1p25 ? "elementwise chain 2^25..2^27"
	     : n >= 0x1p23 ? "elementwise chain 2^23..2^25" : "elementwise chain < 2^23";
}

static const char *cast_kind(double n)   /* likewise for casts */
{
	return n >= 0x1p27 ? "Cast >= 2^27" : n >= 0x1p23 ? "Cast 2^23..2^27" : "Cast < 2^23";
}

void sc_ew_chain(sc_rt *rt, const sc_ew_step *steps, int nsteps, const sc_ew_operand *ins, int nin, int64_t rows,
                 int64_t cols)
{
	PROFILE(rt, chain_kind((double)rows * (double)cols), 0, chain_bytes(steps, nsteps, ins, nin, rows, cols),
	        SC_PEAK_MEM);
	if (nsteps < 1 || nsteps > SC_EW_MAX_STEPS || nin < 0 || nin > SC_EW_MAX_INS)
		SC_DIE("sc_ew_chain: %d steps, %d operands (at most %d and %d)", nsteps, nin, SC_EW_MAX_STEPS,
		       SC_EW_MAX_INS);
	sc_cu_chain ch = {.nsteps = nsteps, .nin = nin};
	for (int k = 0; k < nsteps; k++) {
		const sc_ew_step *st = &steps[k];
		bool two = st->kind == SC_EW_BINARY || st->kind == SC_EW_UNARY_GRAD;
		if (st->a < 0 || st->a >= nin + k || (two && (st->b < 0 || st->b >= nin + k)))
			SC_DIE("sc_ew_chain: step %d reads a value not yet computed", k);
		if ((st->kind == SC_EW_ROUND && !sc_is_half(st->dt)) ||
		    (st->kind == SC_EW_STORE && st->dt != SC_F32 && !sc_is_half(st->dt)))
			SC_DIE("sc_ew_chain: step %d: bad dtype %s", k, sc_dtype_name(st->dt));
		ch.steps[k] = *st;
	}
	for (int k = 0; k < nin; k++) {
		if (ins[k].dt != SC_F32 && !sc_is_half(ins[k].dt))
			SC_DIE("sc_ew_chain: operand %d is %s, not a float type", k, sc_dtype_name(ins[k].dt));
		ch.ins[k] = ins[k];
	}
	SC_CUDA_CHECK(sc_cu_ew_chain(&ch, rows, cols, cu(rt)->stream));
}

void sc_bias_add(sc_rt *rt, const float *x, const float *bias, float *y, int64_t rows, int64_t c)
{
	PROFILE(rt, "BiasAdd", 0, 8.0 * rows * c, SC_PEAK_MEM);
	SC_CUDA_CHECK(sc_cu_bias_add(x, bias, y, rows, c, cu(rt)->stream));
}

void sc_prelu(sc_rt *rt, const float *x, const float *w, float *y, int64_t outer, int64_t c, int64_t inner,
              int64_t wn)
{
	PROFILE(rt, "PReLU", 0, 12.0 * outer * c * inner, SC_PEAK_MEM);
	SC_CUDA_CHECK(sc_cu_prelu(x, w, y, outer * c * inner, c, inner, wn, cu(rt)->stream));
}

/* Conv2D per image: im2col into scratch, then y_b = w col (row-major: the
 * column-major product col^T w^T). */
void sc_conv2d(sc_rt *rt, const sc_window *g, const float *x, const float *w, float *y)
{
	sc_window gg = sc_window_group(g);
	int64_t k = gg.c * g->kh * g->kw, cols = g->ho * g->wo, plane = g->h * g->w;
	PROFILE(rt, "Conv2D", 2.0 * g->n * g->o * cols * k, 4.0 * (g->n * (g->c * plane + g->o * cols) + g->o * k),
	        f32_peak(rt));
	float *col = dev_scratch(rt, 0, (size_t)(k * cols > 0 ? k * cols : 1) * sizeof(float));
	const float one = 1, zero = 0;
	for (int64_t b = 0; b < g->n; b++)
		for (int64_t q = 0; q < gg.groups; q++) {
			SC_CUDA_CHECK(sc_cu_im2col(&gg, x + (b * g->c + q * gg.c) * plane, col, cu(rt)->stream));
			SC_CUBLAS_CHECK(cublasSgemm(cu(rt)->blas, CUBLAS_OP_N, CUBLAS_OP_N, blas_int(cols), blas_int(gg.o),
			                            blas_int(k), &one, col, blas_int(cols), w + q * gg.o * k, blas_int(k), &zero,
			                            y + (b * g->o + q * gg.o) * cols, blas_int(cols)));
		}
}

/* dw += dy_b col_b^T and dcol = w^T dy_b folded back (col2im), per image. */
void sc_conv2d_grad(sc_rt *rt, const sc_window *g, const float *x, const float *w, const float *dy, float *dx,
                    float *dw)
{
	sc_window gg = sc_window_group(g);
	int64_t k = gg.c * g->kh * g->kw, cols = g->ho * g->wo, plane = g->h * g->w;
	PROFILE(rt, "Conv2D grad", 2.0 * g->n * g->o * cols * k * ((dx != NULL) + (dw != NULL)),
	        4.0 * (g->n * (g->c * plane + g->o * cols) + g->o * k), f32_peak(rt));
	float *col = dev_scratch(rt, 0, (size_t)(k * cols > 0 ? k * cols : 1) * sizeof(float));
	const float one = 1, zero = 0;
	if (dw && g->n == 0)
		SC_CUDA_CHECK(cudaMemsetAsync(dw, 0, (size_t)(g->o * k) * sizeof(float), cu(rt)->stream));
	for (int64_t b = 0; b < g->n; b++)
		for (int64_t q = 0; q < gg.groups; q++) {
			const float *dyb = dy + (b * g->o + q * gg.o) * cols, *wq = w + q * gg.o * k;
			if (dw) {   /* row-major dw (o, k) = dy_b col^T: column-major dw^T = col dy_b^T */
				SC_CUDA_CHECK(sc_cu_im2col(&gg, x + (b * g->c + q * gg.c) * plane, col, cu(rt)->stream));
				SC_CUBLAS_CHECK(cublasSgemm(cu(rt)->blas, CUBLAS_OP_T, CUBLAS_OP_N, blas_int(k), blas_int(gg.o),
				                            blas_int(cols), &one, col, blas_int(cols), dyb, blas_int(cols),
				                            b ? &one : &zero, dw + q * gg.o * k, blas_int(k)));
			}
			if (dx) {   /* row-major dcol (k, cols) = w^T dy_b: column-major dcol^T = dy_b^T w */
				SC_CUBLAS_CHECK(cublasSgemm(cu(rt)->blas, CUBLAS_OP_N, CUBLAS_OP_T, blas_int(cols), blas_int(k),
				                            blas_int(gg.o), &one, dyb, blas_int(cols), wq, blas_int(k), &zero, col,
				                            blas_int(cols)));
				SC_CUDA_CHECK(sc_cu_col2im(&gg, col, dx + (b * g->c + q * gg.c) * plane, cu(rt)->stream));
			}
		}
}

void sc_pool(sc_rt *rt, sc_pool_kind k, const sc_window *g, const float *x, float *y)
{
	PROFILE(rt, k == SC_POOL_MAX ? "MaxPool" : "AvgPool", (double)g->n * g->c * g->ho * g->wo * g->kh * g->kw,
	        4.0 * g->n * g->c * (g->h * g->w + g->ho * g->wo), SC_PEAK_MEM);
	SC_CUDA_CHECK(sc_cu_pool(k, g, x, y, cu(rt)->stream));
}

void sc_pool_grad(sc_rt *rt, sc_pool_kind k, const sc_window *g, const float *x, const float *dy, float *dx)
{
	PROFILE(rt, k == SC_POOL_MAX ? "MaxPool grad" : "AvgPool grad", (double)g->n * g->c * g->ho * g->wo * g->kh * g->kw,
	        4.0 * g->n * g->c * (2 * g->h * g->w + g->ho * g->wo), SC_PEAK_MEM);
	SC_CUDA_CHECK(sc_cu_pool_grad(k, g, x, dy, dx, cu(rt)->stream));
}

/* dw: the products x dy (x < 0) in scratch, summed per channel (or all of
 * them) by the reduction's fixed order. */
void sc_prelu_grad(sc_rt *rt, const float *x, const float *w, const float *dy, float *dx, float *dw, int64_t outer,
                   int64_t c, int64_t inner, int64_t wn)
{
	PROFILE(rt, "PReLU grad", 0, 16.0 * outer * c * inner, SC_PEAK_MEM);
	int64_t n = outer * c * inner;
	float *prod = dw ? dev_scratch(rt, 0, (size_t)(n > 0 ? n : 1) * sizeof(float)) : NULL;
	SC_CUDA_CHECK(sc_cu_prelu_grad(x, w, dy, dx, prod, n, c, inner, wn, cu(rt)->stream));
	if (!dw)
		return;
	sc_cu_plan p;
	memset(&p, 0, sizeof p);
	p.nk = 1;
	if (wn == 1) {   /* one weight: every element */
		p.kdims[0] = 1;
		p.nr = 1;
		p.rdims[0] = n;
		p.rstride[0] = 1;
	} else {   /* a channel's: over outer and inner */
		p.kdims[0] = c;
		p.kstride[0] = inner;
		p.nr = 2;
		p.rdims[0] = outer;
		p.rstride[0] = c * inner;
		p.rdims[1] = inner;
		p.rstride[1] = 1;
	}
	reduce_plan(rt, SC_R_SUM, prod, dw, &p);
}

void sc_unary(sc_rt *rt, sc_unop op, float p, const float *x, float *y, int64_t n)
{
	PROFILE(rt, "unary", 0, 8.0 * n, SC_PEAK_MEM);
	SC_CUDA_CHECK(sc_cu_unary(op, p, x, y, n, cu(rt)->stream));
}

void sc_unary_grad(sc_rt *rt, sc_unop op, float p, const float *t, const float *dy, float *dx, int64_t n)
{
	PROFILE(rt, "unary grad", 0, 12.0 * n, SC_PEAK_MEM);
	SC_CUDA_CHECK(sc_cu_unary_grad(op, p, t, dy, dx, n, cu(rt)->stream));
}

void sc_scale(sc_rt *rt, const float *x, float *y, int64_t n, double alpha)
{
	PROFILE(rt, "Scale", 0, 8.0 * n, SC_PEAK_MEM);
	SC_CUDA_CHECK(sc_cu_scale(x, y, n, (float)alpha, cu(rt)->stream));
}

/* dy: the gradient, for grad; else the scale x is read times (NULL: 1). */
static void softmax(sc_rt *rt, const float *x, const float *dy, float *y, const int64_t *dims, int ndim, int axis,
                    int is_log, bool grad)
{
	int64_t outer, len, inner;
	sc_check_dims("softmax", dims, ndim);
	sc_split3(dims, ndim, sc_norm_axis("softmax", axis, ndim), &outer, &len, &inner);
	if (grad)
		SC_CUDA_CHECK(sc_cu_softmax_grad(x, dy, y, outer, len, inner, is_log, cu(rt)->stream));
	else
		SC_CUDA_CHECK(sc_cu_softmax(x, dy, y, outer, len, inner, is_log, cu(rt)->stream));
}

void sc_softmax_scaled(sc_rt *rt, const float *x, const float *scale, float *y, const int64_t *dims, int ndim, int axis)
{
	PROFILE(rt, "Softmax", 0, 8.0 * (double)sc_numel(dims, ndim), SC_PEAK_MEM);
	softmax(rt, x, scale, y, dims, ndim, axis, 0, false);
}

void sc_softmax_masked(sc_rt *rt, const float *x, const float *scale, const float *mask, const int64_t *mask_dims,
                       int mask_ndim, float *y, const int64_t *dims, int ndim)
{
	PROFILE(rt, "Softmax", 0, 8.0 * (double)sc_numel(dims, ndim), SC_PEAK_MEM);
	sc_check_dims("softmax", dims, ndim);
	if (ndim < 1)
		SC_DIE("softmax_masked: a scalar has no axis");
	sc_cu_walk w = bcast_walk("softmax mask", mask_dims, mask_ndim, NULL, -1, dims, ndim);
	int64_t mlast = w.s0[ndim - 1];
	w.ndim = ndim - 1;   /* the rows: x's dims before the last */
	SC_CUDA_CHECK(sc_cu_softmax_masked(x, scale, mask, &w, mlast, y, sc_numel(dims, ndim - 1), dims[ndim - 1],
	                                   cu(rt)->stream));
}

void sc_softmax(sc_rt *rt, const float *x, float *y, const int64_t *dims, int ndim, int axis)
{
	PROFILE(rt, "Softmax", 0, 8.0 * (double)sc_numel(dims, ndim), SC_PEAK_MEM);
	softmax(rt, x, NULL, y, dims, ndim, axis, 0, false);
}

void sc_log_softmax(sc_rt *rt, const float *x, float *y, const int64_t *dims, int ndim, int axis)
{
	PROFILE(rt, "LogSoftmax", 0, 8.0 * (double)sc_numel(dims, ndim), SC_PEAK_MEM);
	softmax(rt, x, NULL, y, dims, ndim, axis, 1, false);
}

void sc_softmax_grad(sc_rt *rt, const float *y, const float *dy, float *dx, const int64_t *dims, int ndim, int axis)
{
	PROFILE(rt, "Softmax grad", 0, 12.0 * (double)sc_numel(dims, ndim), SC_PEAK_MEM);
	softmax(rt, y, dy, dx, dims, ndim, axis, 0, true);
}

void sc_log_softmax_grad(sc_rt *rt, const float *y, const float *dy, float *dx, const int64_t *dims, int ndim,
                         int axis)
{
	PROFILE(rt, "LogSoftmax grad", 0, 12.0 * (double)sc_numel(dims, ndim), SC_PEAK_MEM);
	softmax(rt, y, dy, dx, dims, ndim, axis, 1, true);
}

static void reduce(sc_rt *rt, sc_reduce_kind kind, const float *x, float *y, const int64_t *dims, int ndim,
                   const int *axes, int naxes)
{
	sc_cu_plan p = axes_plan("reduce", dims, ndim, axes, naxes);
	reduce_plan(rt, kind, x, y, &p);
}

void sc_reduce_sum(sc_rt *rt, const float *x, float *y, const int64_t *dims, int ndim, const int *axes, int naxes)
{
	PROFILE(rt, "ReduceSum", 0, 4.0 * (double)sc_numel(dims, ndim), SC_PEAK_MEM);
	reduce(rt, SC_R_SUM, x, y, dims, ndim, axes, naxes);
}

void sc_reduce_mean(sc_rt *rt, const float *x, float *y, const int64_t *dims, int ndim, const int *axes, int naxes)
{
	PROFILE(rt, "ReduceMean", 0, 4.0 * (double)sc_numel(dims, ndim), SC_PEAK_MEM);
	reduce(rt, SC_R_MEAN, x, y, dims, ndim, axes, naxes);
}

void sc_reduce_max(sc_rt *rt, const float *x, float *y, const int64_t *dims, int ndim, const int *axes, int naxes)
{
	PROFILE(rt, "ReduceMax", 0, 4.0 * (double)sc_numel(dims, ndim), SC_PEAK_MEM);
	reduce(rt, SC_R_MAX, x, y, dims, ndim, axes, naxes);
}

void sc_reduce_min(sc_rt *rt, const float *x, float *y, const int64_t *dims, int ndim, const int *axes, int naxes)
{
	PROFILE(rt, "ReduceMin", 0, 4.0 * (double)sc_numel(dims, ndim), SC_PEAK_MEM);
	reduce(rt, SC_R_MIN, x, y, dims, ndim, axes, naxes);
}

void sc_reduce_prod(sc_rt *rt, const float *x, float *y, const int64_t *dims, int ndim, const int *axes, int naxes)
{
	PROFILE(rt, "ReduceProd", 0, 4.0 * (double)sc_numel(dims, ndim), SC_PEAK_MEM);
	sc_cu_plan p = axes_plan("reduce_prod", dims, ndim, axes, naxes);
	SC_CUDA_CHECK(sc_cu_reduce_prod(x, -1, y, &p, cu(rt)->stream));
}

void sc_reduce_all(sc_rt *rt, const uint8_t *x, uint8_t *y, const int64_t *dims, int ndim, const int *axes,
                   int naxes)
{
	PROFILE(rt, "ReduceAll", 0, (double)sc_numel(dims, ndim), SC_PEAK_MEM);
	sc_cu_plan p = axes_plan("reduce_all", dims, ndim, axes, naxes);
	SC_CUDA_CHECK(sc_cu_reduce_bool(0, x, y, &p, cu(rt)->stream));
}

void sc_reduce_any(sc_rt *rt, const uint8_t *x, uint8_t *y, const int64_t *dims, int ndim, const int *axes,
                   int naxes)
{
	PROFILE(rt, "ReduceAny", 0, (double)sc_numel(dims, ndim), SC_PEAK_MEM);
	sc_cu_plan p = axes_plan("reduce_any", dims, ndim, axes, naxes);
	SC_CUDA_CHECK(sc_cu_reduce_bool(1, x, y, &p, cu(rt)->stream));
}

void sc_reduce_prod_stat(sc_rt *rt, const float *x, int k, float *y, const int64_t *dims, int ndim, const int *axes,
                         int naxes)
{
	PROFILE(rt, "ReduceProd stat", 0, 4.0 * (double)sc_numel(dims, ndim), SC_PEAK_MEM);
	sc_cu_plan p = axes_plan("reduce_prod_stat", dims, ndim, axes, naxes);
	SC_CUDA_CHECK(sc_cu_reduce_prod(x, k, y, &p, cu(rt)->stream));
}

void sc_reduce_prod_grad(sc_rt *rt, const float *x, const float *dy, const float *prod, const float *zeros, float *dx,
                         const int64_t *dims, int ndim, const int *axes, int naxes)
{
	PROFILE(rt, "ReduceProd grad", 0, 12.0 * (double)sc_numel(dims, ndim), SC_PEAK_MEM);
	sc_cu_plan p = axes_plan("reduce_prod_grad", dims, ndim, axes, naxes);
	SC_CUDA_CHECK(sc_cu_reduce_prod_grad(x, dy, prod, zeros, dx, &p, cu(rt)->stream));
}

void sc_cumsum(sc_rt *rt, int prod, const float *x, float *y, int64_t outer, int64_t n, int64_t inner, int exclusive,
               int reverse)
{
	sc_cumsum_part(rt, prod, x, NULL, y, 0, 1, outer, n, inner, exclusive, reverse);
}

void sc_cumsum_grad(sc_rt *rt, int prod, const float *x, const float *dy, float *dx, int64_t outer, int64_t n,
                    int64_t inner, int exclusive, int reverse)
{
	sc_cumsum_part_grad(rt, prod, x, NULL, dy, dx, NULL, 0, 1, outer, n, inner, exclusive, reverse);
}

void sc_cumsum_part(sc_rt *rt, int prod, const float *x, const float *totals, float *y, int64_t offset, int64_t k,
                    int64_t outer, int64_t n, int64_t inner, int exclusive, int reverse)
{
	PROFILE(rt, prod ? "CumProd" : "CumSum", 0, 8.0 * (double)(outer * n * inner), SC_PEAK_MEM);
	SC_CUDA_CHECK(sc_cu_cumsum(prod, x, totals, y, offset, k, outer, n, inner, exclusive, reverse, cu(rt)->stream));
}

void sc_cumsum_part_grad(sc_rt *rt, int prod, const float *x, const float *totals, const float *dy, float *dx,
                         float *dtotals, int64_t offset, int64_t k, int64_t outer, int64_t n, int64_t inner,
                         int exclusive, int reverse)
{
	PROFILE(rt, prod ? "CumProd grad" : "CumSum grad", 0, (prod ? 12.0 : 8.0) * (double)(outer * n * inner),
	        SC_PEAK_MEM);
	SC_CUDA_CHECK(sc_cu_cumsum_grad(prod, x, totals, dy, dx, dtotals, offset, k, outer, n, inner, exclusive, reverse,
	                                cu(rt)->stream));
}

void sc_reduce_max_grad(sc_rt *rt, const float *x, const float *y, const float *dy, const float *count, float *dx,
                        const int64_t *dims, int ndim, const int *axes, int naxes)
{
	PROFILE(rt, "ReduceMax grad", 0, 12.0 * (double)sc_numel(dims, ndim), SC_PEAK_MEM);
	sc_cu_plan p = axes_plan("reduce_max_grad", dims, ndim, axes, naxes);
	SC_CUDA_CHECK(sc_cu_reduce_max_grad(x, y, dy, count, dx, &p, cu(rt)->stream));
}

void sc_reduce_min_grad(sc_rt *rt, const float *x, const float *y, const float *dy, const float *count, float *dx,
                        const int64_t *dims, int ndim, const int *axes, int naxes)
{
	PROFILE(rt, "ReduceMin grad", 0, 12.0 * (double)sc_numel(dims, ndim), SC_PEAK_MEM);
	sc_cu_plan p = axes_plan("reduce_min_grad", dims, ndim, axes, naxes);
	SC_CUDA_CHECK(sc_cu_reduce_max_grad(x, y, dy, count, dx, &p, cu(rt)->stream));   /* equality alone: one kernel */
}

void sc_count_equal(sc_rt *rt, const float *x, const float *y, float *count, const int64_t *dims, int ndim,
                    const int *axes, int naxes)
{
	PROFILE(rt, "count equal", 0, 8.0 * (double)sc_numel(dims, ndim), SC_PEAK_MEM);
	sc_cu_plan p = axes_plan("count_equal", dims, ndim, axes, naxes);
	SC_CUDA_CHECK(sc_cu_count_equal(x, y, count, &p, cu(rt)->stream));
}

void sc_where_equal(sc_rt *rt, const float *x, const float *y, const float *dy, float *dx, int64_t n)
{
	PROFILE(rt, "where equal", 0, 16.0 * n, SC_PEAK_MEM);
	SC_CUDA_CHECK(sc_cu_where_equal(x, y, dy, dx, n, cu(rt)->stream));
}

void sc_select(sc_rt *rt, const uint8_t *cond, const float *a, const float *b, float *y, int64_t n)
{
	PROFILE(rt, "Select", 0, 13.0 * n, SC_PEAK_MEM);
	SC_CUDA_CHECK(sc_cu_select(cond, a, b, y, n, cu(rt)->stream));
}

void sc_rotary(sc_rt *rt, int64_t mode, int transpose, const float *x, const int64_t *dims, const float *cos,
               const int64_t *cos_dims, const float *sin, const int64_t *sin_dims, float *y)
{
	PROFILE(rt, "RotaryEmbedding", 0, 0, SC_PEAK_MEM);
	sc_cu_walk w = bcast_walk("rotary", cos_dims, 4, sin_dims, 4, dims, 4);   /* s0 cos's strides, s1 sin's */
	SC_CUDA_CHECK(sc_cu_rotary(mode, transpose, x, cos, sin, y, &w, cu(rt)->stream));
}

void sc_flash_attention(sc_rt *rt, const float *q, const float *k, const float *v, const void *mask, int mask_float,
                        const int64_t *mask_dims, float *o, const int64_t *dims, float scale, int causal, int layout)
{
	SC_CUDA_CHECK(sc_cu_flash_attention(q, k, v, mask, mask_float, mask_dims, o, dims, scale, causal, layout,
	                                    cu(rt)->stream));
}

void sc_flash_attention_grad(sc_rt *rt, const float *q, const float *k, const float *v, const void *mask,
                             int mask_float, const int64_t *mask_dims, const float *o, const float *dout, float *dq,
                             float *dk, float *dv, const int64_t *dims, float scale, int causal, int layout)
{
	void *scratch = dev_scratch(rt, SC_KERNEL_SCRATCH, sc_cu_flash_attention_grad_scratch(dims));
	SC_CUDA_CHECK(sc_cu_flash_attention_grad(q, k, v, mask, mask_float, mask_dims, o, dout, dq, dk, dv, dims, scale,
	                                         causal, layout, scratch, cu(rt)->stream));
}

void sc_arange(sc_rt *rt, void *y, sc_dtype dt, int64_t n, int64_t first, double start, double step)
{
	PROFILE(rt, "Arange", 0, (double)n * (double)sc_dtype_size(dt), SC_PEAK_MEM);
	if (dt != SC_F32 && dt != SC_I32 && dt != SC_I64)
		SC_DIE("sc_arange: %s is not Float32, Int32 or Int64", sc_dtype_name(dt));
	SC_CUDA_CHECK(sc_cu_arange(y, dt, n, first, start, step, cu(rt)->stream));
}

/* A piece's walk for the dropout draws: its dims, the whole's strides;
 * returns its first element's index in the whole. */
static int64_t dropout_walk(sc_cu_walk *w, const int64_t *gdims, int ndim, const int64_t *start, const int64_t *ldims)
{
	memset(w, 0, sizeof *w);
	w->ndim = ndim;
	int64_t base = 0, s = 1;
	for (int d = ndim - 1; d >= 0; d--) {
		w->dims[d] = ldims[d];
		w->s0[d] = s;
		base += start[d] * s;
		s *= gdims[d];
	}
	return base;
}

void sc_dropout(sc_rt *rt, const float *x, float *y, const int64_t *gdims, int ndim, const int64_t *start,
                const int64_t *ldims, const char *name, uint64_t seed, int64_t step, double keep_prob)
{
	PROFILE(rt, "Dropout", 0, 8.0 * (double)sc_numel(ldims, ndim), SC_PEAK_MEM);
	int64_t real[SC_MAX_DIMS];
	bool padded = sc_piece_real(name, gdims, ndim, start, ldims, real);
	sc_cu_walk w;
	int64_t base = dropout_walk(&w, gdims, ndim, start, ldims);
	SC_CUDA_CHECK(sc_cu_dropout(x, y, &w, base, sc_dropout_key(name, seed, step), keep_prob, cu(rt)->stream));
	if (padded)
		sc_pad_zero(rt, y, SC_F32, ldims, ndim, real);
}

void sc_dropout_gen_mask(sc_rt *rt, uint8_t *mask, const int64_t *gdims, int ndim, const int64_t *start,
                         const int64_t *ldims, const char *name, uint64_t seed, int64_t step, double keep_prob)
{
	PROFILE(rt, "DropoutGenMask", 0, (double)sc_numel(ldims, ndim), SC_PEAK_MEM);
	int64_t real[SC_MAX_DIMS];
	bool padded = sc_piece_real(name, gdims, ndim, start, ldims, real);
	sc_cu_walk w;
	int64_t base = dropout_walk(&w, gdims, ndim, start, ldims);
	SC_CUDA_CHECK(sc_cu_dropout_gen_mask(mask, &w, base, sc_dropout_key(name, seed, step), keep_prob, cu(rt)->stream));
	if (padded)
		sc_pad_zero(rt, mask, SC_BOOL, ldims, ndim, real);
}

void sc_uniform_real(sc_rt *rt, float *y, const int64_t *gdims, int ndim, const int64_t *start, const int64_t *ldims,
                     const char *name, uint64_t seed, int64_t step)
{
	PROFILE(rt, "UniformReal", 0, 4.0 * (double)sc_numel(ldims, ndim), SC_PEAK_MEM);
	int64_t real[SC_MAX_DIMS];
	bool padded = sc_piece_real(name, gdims, ndim, start, ldims, real);
	sc_cu_walk w;
	int64_t base = dropout_walk(&w, gdims, ndim, start, ldims);
	SC_CUDA_CHECK(sc_cu_uniform_real(y, &w, base, sc_dropout_key(name, seed, step), cu(rt)->stream));
	if (padded)
		sc_pad_zero(rt, y, SC_F32, ldims, ndim, real);
}

void sc_dropout_do_mask(sc_rt *rt, const float *x, const uint8_t *mask, float *y, int64_t n, double keep_prob)
{
	PROFILE(rt, "DropoutDoMask", 0, 9.0 * (double)n, SC_PEAK_MEM);
	SC_CUDA_CHECK(sc_cu_dropout_do_mask(x, mask, y, n, keep_prob, cu(rt)->stream));
}

void sc_causal_mask(sc_rt *rt, void *y, sc_dtype dt, int64_t lead, int64_t rows, int64_t cols, int64_t row0,
                    int64_t col0, double fill)
{
	PROFILE(rt, "CausalMask", 0, (double)lead * rows * cols * (double)sc_dtype_size(dt), SC_PEAK_MEM);
	if (dt != SC_F32 && dt != SC_BOOL)
		SC_DIE("sc_causal_mask: %s is not Float32 or Bool", sc_dtype_name(dt));
	SC_CUDA_CHECK(sc_cu_causal_mask(y, dt, lead, rows, cols, row0, col0, fill, cu(rt)->stream));
}

void sc_eye(sc_rt *rt, void *y, sc_dtype dt, int64_t rows, int64_t cols, int64_t row0, int64_t col0)
{
	PROFILE(rt, "Eye", 0, (double)rows * cols * (double)sc_dtype_size(dt), SC_PEAK_MEM);
	if (dt != SC_F32 && dt != SC_I32 && dt != SC_I64 && dt != SC_BOOL)
		SC_DIE("sc_eye: %s is not Float32, Int32, Int64 or Bool", sc_dtype_name(dt));
	SC_CUDA_CHECK(sc_cu_eye(y, dt, rows, cols, row0, col0, cu(rt)->stream));
}

void sc_lin_space(sc_rt *rt, float *y, int64_t n, int64_t first, float start, float stop, int64_t num)
{
	PROFILE(rt, "LinSpace", 0, 4.0 * n, SC_PEAK_MEM);
	SC_CUDA_CHECK(sc_cu_lin_space(y, n, first, start, stop, num, cu(rt)->stream));
}

void sc_rope(sc_rt *rt, float *y, int is_sin, int64_t lead, int64_t rows, int64_t cols, int64_t row0, int64_t col0,
             int64_t d, double theta)
{
	PROFILE(rt, "RoPE table", 0, 4.0 * lead * rows * cols, SC_PEAK_MEM);
	SC_CUDA_CHECK(sc_cu_rope(y, is_sin, lead, rows, cols, row0, col0, d, theta, cu(rt)->stream));
}

void sc_triangle(sc_rt *rt, int upper, const void *x, void *y, sc_dtype dt, int64_t lead, int64_t rows, int64_t cols,
                 int64_t row0, int64_t col0, int64_t diagonal)
{
	PROFILE(rt, upper ? "Triu" : "Tril", 0, 2.0 * (double)lead * rows * cols * (double)sc_dtype_size(dt), SC_PEAK_MEM);
	SC_CUDA_CHECK(sc_cu_triangle(upper, x, y, sc_dtype_size(dt), lead, rows, cols, row0, col0, diagonal,
	                             cu(rt)->stream));
}

void sc_transpose(sc_rt *rt, sc_dtype dt, const void *x, void *y, const int64_t *dims, int ndim, const int *perm)
{
	PROFILE(rt, "Transpose", 0, 2.0 * (double)sc_numel(dims, ndim) * (double)sc_dtype_size(dt), SC_PEAK_MEM);
	sc_check_dims("transpose", dims, ndim);
	int64_t xs[SC_MAX_DIMS];
	bool seen[SC_MAX_DIMS] = {0};
	sc_cu_walk w;
	memset(&w, 0, sizeof w);
	w.ndim = ndim;
	row_strides(dims, ndim, xs);
	for (int i = 0; i < ndim; i++) {
		if (perm[i] < 0 || perm[i] >= ndim || seen[perm[i]])
			SC_DIE("transpose: perm is not a permutation of 0..%d", ndim - 1);
		seen[perm[i]] = true;
		w.dims[i] = dims[perm[i]];
		w.s0[i] = xs[perm[i]];
	}
	SC_CUDA_CHECK(sc_cu_strided_copy(x, y, 0, &w, sc_dtype_size(dt), cu(rt)->stream));
}

void sc_gather_axis(sc_rt *rt, const float *table, int64_t outer, int64_t rows, int64_t row, const void *idx,
                    sc_dtype idx_dt, int64_t nidx, int64_t offset, float *y)
{
	PROFILE(rt, "Gather", 0, 8.0 * outer * nidx * row, SC_PEAK_MEM);
	if (idx_dt != SC_I32 && idx_dt != SC_I64)
		SC_DIE("gather: indices must be int32 or int64");
	SC_CUDA_CHECK(sc_cu_gather(table, outer, rows, row, idx, idx_dt == SC_I64, nidx, offset, INT64_MAX, y,
	                           cu(rt)->stream));
}

void sc_one_hot(sc_rt *rt, const void *idx, sc_dtype idx_dt, int64_t outer, int64_t depth, int64_t inner,
                int64_t offset, const float *on, const float *off, float *y)
{
	PROFILE(rt, "OneHot", 0, 4.0 * outer * depth * inner, SC_PEAK_MEM);
	if (idx_dt != SC_I32 && idx_dt != SC_I64)
		SC_DIE("one_hot: indices must be int32 or int64");
	SC_CUDA_CHECK(sc_cu_one_hot(idx, idx_dt == SC_I64, outer, depth, inner, offset, on, off, y, cu(rt)->stream));
}

void sc_arg_reduce(sc_rt *rt, const float *x, int64_t outer, int64_t n, int64_t inner, int is_min, int32_t *idx,
                   float *val)
{
	PROFILE(rt, "ArgReduce", 0, 4.0 * outer * n * inner, SC_PEAK_MEM);
	SC_CUDA_CHECK(sc_cu_arg_reduce(x, outer, n, inner, is_min, idx, val, NULL, NULL, cu(rt)->stream));
}

void sc_arg_reduce_grad(sc_rt *rt, const float *x, const float *dy, int64_t outer, int64_t n, int64_t inner,
                        int is_min, float *dx)
{
	PROFILE(rt, "ArgReduceGrad", 0, 4.0 * outer * n * inner, SC_PEAK_MEM);
	SC_CUDA_CHECK(cudaMemsetAsync(dx, 0, (size_t)(outer * n * inner) * sizeof *dx, cu(rt)->stream));
	SC_CUDA_CHECK(sc_cu_arg_reduce(x, outer, n, inner, is_min, NULL, NULL, dy, dx, cu(rt)->stream));
}

void sc_topk(sc_rt *rt, const float *x, int64_t rows, int64_t n, int64_t k, float *val, int32_t *idx)
{
	PROFILE(rt, "TopK", 0, 4.0 * rows * n * k, SC_PEAK_MEM);
	SC_CUDA_CHECK(sc_cu_topk(x, rows, n, k, val, idx, NULL, NULL, cu(rt)->stream));
}

void sc_topk_grad(sc_rt *rt, const float *x, const float *dy, int64_t rows, int64_t n, int64_t k, float *dx)
{
	PROFILE(rt, "TopKGrad", 0, 4.0 * rows * n * k, SC_PEAK_MEM);
	SC_CUDA_CHECK(cudaMemsetAsync(dx, 0, (size_t)(rows * n) * sizeof *dx, cu(rt)->stream));
	SC_CUDA_CHECK(sc_cu_topk(x, rows, n, k, NULL, NULL, dy, dx, cu(rt)->stream));
}

void sc_gather_d(sc_rt *rt, const float *x, const int64_t *xdims, const void *idx, sc_dtype idx_dt,
                 const int64_t *idims, int ndim, int dim, int64_t offset, float *y)
{
	PROFILE(rt, "GatherD", 0, 8.0 * sc_numel(idims, ndim), SC_PEAK_MEM);
	if (idx_dt != SC_I32 && idx_dt != SC_I64)
		SC_DIE("gather_d: indices must be int32 or int64");
	if (ndim < 1 || ndim > SC_MAX_DIMS || dim < 0 || dim >= ndim)
		SC_DIE("gather_d: dim %d of a rank %d tensor", dim, ndim);
	SC_CUDA_CHECK(sc_cu_gather_d(x, xdims, idx, idx_dt == SC_I64, idims, ndim, dim, offset, y, cu(rt)->stream));
}

void sc_gather_d_grad(sc_rt *rt, const float *dy, const void *idx, sc_dtype idx_dt, const int64_t *idims, float *dx,
                      const int64_t *xdims, int ndim, int dim, int64_t offset)
{
	PROFILE(rt, "GatherD grad", 0, 8.0 * sc_numel(idims, ndim), SC_PEAK_MEM);
	if (idx_dt != SC_I32 && idx_dt != SC_I64)
		SC_DIE("gather_d_grad: indices must be int32 or int64");
	if (ndim < 1 || ndim > SC_MAX_DIMS || dim < 0 || dim >= ndim)
		SC_DIE("gather_d_grad: dim %d of a rank %d tensor", dim, ndim);
	SC_CUDA_CHECK(sc_cu_gather_d_grad(dy, idx, idx_dt == SC_I64, idims, dx, xdims, ndim, dim, offset,
	                                  cu(rt)->stream));
}

static void segment_ids_check(const char *what, sc_dtype ids_dt)
{
	if (ids_dt != SC_I32 && ids_dt != SC_I64)
		SC_DIE("%s: segment ids must be int32 or int64", what);
}

/* The indices (m, n) copied to the host and checked inside dims (sc_nd_check):
 * a bad index stops the run with its value, not a silent zero. */
static void nd_check(sc_rt *rt, const void *idx, sc_dtype idx_dt, int64_t m, const int64_t *dims, int n,
                     const char *what)
{
	if (idx_dt != SC_I32 && idx_dt != SC_I64)
		SC_DIE("%s: indices must be int32 or int64", what);
	size_t bytes = (size_t)(m * n) * sc_dtype_size(idx_dt);
	void *h = host_scratch(rt, 0, bytes ? bytes : 1);
	SC_CUDA_CHECK(cudaMemcpyAsync(h, idx, bytes, cudaMemcpyDeviceToHost, cu(rt)->stream));
	SC_CUDA_CHECK(cudaStreamSynchronize(cu(rt)->stream));
	sc_nd_check(h, idx_dt, m, dims, n, what);
}

void sc_gather_nd(sc_rt *rt, const float *x, const int64_t *dims, int n, int64_t inner, const void *idx,
                  sc_dtype idx_dt, int64_t m, float *y, const char *what)
{
	PROFILE(rt, "GatherNd", 0, 8.0 * m * inner, SC_PEAK_MEM);
	nd_check(rt, idx, idx_dt, m, dims, n, what);
	SC_CUDA_CHECK(sc_cu_gather_nd(x, dims, n, inner, idx, idx_dt == SC_I64, m, y, cu(rt)->stream));
}

void sc_gather_nd_grad(sc_rt *rt, const float *dy, const void *idx, sc_dtype idx_dt, int64_t m, float *dx,
                       const int64_t *dims, int n, int64_t inner)
{
	PROFILE(rt, "GatherNd grad", 0, 8.0 * m * inner, SC_PEAK_MEM);
	if (idx_dt != SC_I32 && idx_dt != SC_I64)
		SC_DIE("gather_nd_grad: indices must be int32 or int64");
	SC_CUDA_CHECK(sc_cu_gather_nd_grad(dy, idx, idx_dt == SC_I64, m, dx, dims, n, inner, cu(rt)->stream));
}

void sc_tensor_scatter(sc_rt *rt, sc_scatter_op op, const float *x, const void *idx, sc_dtype idx_dt, int64_t m,
                       const float *upd, float *y, const int64_t *gdims, const int64_t *start, const int64_t *ldims,
                       int n, int64_t inner, const char *what)
{
	PROFILE(rt, "TensorScatter", 0, 4.0 * (sc_numel(ldims, n) + 2 * m) * inner, SC_PEAK_MEM);
	nd_check(rt, idx, idx_dt, m, gdims, n, what);
	SC_CUDA_CHECK(sc_cu_tensor_scatter((int)op, x, idx, idx_dt == SC_I64, m, upd, y, start, ldims, n, inner,
	                                   cu(rt)->stream));
}

void sc_tensor_scatter_grad(sc_rt *rt, sc_scatter_op op, int k, const float *dy, const float *x, const float *upd,
                            const float *y, const void *idx, sc_dtype idx_dt, int64_t m, float *dx,
                            const int64_t *start, const int64_t *ldims, int n, int64_t inner)
{
	PROFILE(rt, "TensorScatter grad", 0, 8.0 * (k ? m : sc_numel(ldims, n)) * inner, SC_PEAK_MEM);
	if (idx_dt != SC_I32 && idx_dt != SC_I64)
		SC_DIE("tensor_scatter_grad: indices must be int32 or int64");
	SC_CUDA_CHECK(sc_cu_tensor_scatter_grad((int)op, k, dy, x, upd, y, idx, idx_dt == SC_I64, m, dx, start, ldims, n,
	                                        inner, cu(rt)->stream));
}

void sc_unsorted_segment(sc_rt *rt, sc_segment_op op, const float *x, const void *ids, sc_dtype ids_dt, float *y,
                         int64_t rows, int64_t inner, int64_t segments, sc_dtype dt)
{
	PROFILE(rt, "UnsortedSegment", 0, 4.0 * (double)(rows * inner + segments * inner), SC_PEAK_MEM);
	segment_ids_check("unsorted_segment", ids_dt);
	SC_CUDA_CHECK(sc_cu_unsorted_segment((int)op, x, ids, ids_dt == SC_I64, y, rows, inner, segments,
	                                     SC_SEGMENT_BIG(dt), cu(rt)->stream));
}

void sc_unsorted_segment_stat(sc_rt *rt, sc_segment_op op, const float *x, const void *ids, sc_dtype ids_dt,
                              const float *y, int k, float *stat, int64_t rows, int64_t inner, int64_t segments)
{
	PROFILE(rt, "UnsortedSegment stat", 0, 4.0 * (double)(rows * inner + segments * inner), SC_PEAK_MEM);
	segment_ids_check("unsorted_segment_stat", ids_dt);
	SC_CUDA_CHECK(sc_cu_unsorted_segment_stat((int)op, x, ids, ids_dt == SC_I64, y, k, stat, rows, inner, segments,
	                                          cu(rt)->stream));
}

void sc_unsorted_segment_grad(sc_rt *rt, sc_segment_op op, const float *x, const void *ids, sc_dtype ids_dt,
                              const float *y, const float *dy, const float *stat0, const float *stat1, float *dx,
                              int64_t rows, int64_t inner, int64_t segments)
{
	PROFILE(rt, "UnsortedSegment grad", 0, 8.0 * (double)(rows * inner), SC_PEAK_MEM);
	segment_ids_check("unsorted_segment_grad", ids_dt);
	SC_CUDA_CHECK(sc_cu_unsorted_segment_grad((int)op, x, ids, ids_dt == SC_I64, y, dy, stat0, stat1, dx, rows, inner,
	                                          segments, cu(rt)->stream));
}

void sc_batch_norm(sc_rt *rt, const float *x, const float *scale, const float *bias, float *moving_mean,
                   float *moving_var, const float *batch_mean, const float *batch_var, float *y, int64_t n, int64_t c,
                   int64_t hw, double eps, double momentum, int64_t count, int mode)
{
	PROFILE(rt, "BatchNorm", 5.0 * n * c * hw, 8.0 * n * c * hw, SC_PEAK_MEM);
	SC_CUDA_CHECK(sc_cu_batch_norm(x, scale, bias, moving_mean, moving_var, batch_mean, batch_var, y, n, c, hw, eps,
	                               momentum, count, mode, cu(rt)->stream));
}

void sc_batch_norm_grad(sc_rt *rt, const float *x, const float *dy, const float *scale, const float *mean,
                        const float *var, float *dx, float *dscale, float *dbias, float *dmean, float *dvar, int64_t n,
                        int64_t c, int64_t hw, double eps)
{
	PROFILE(rt, "BatchNorm grad", 8.0 * n * c * hw, 12.0 * n * c * hw, SC_PEAK_MEM);
	SC_CUDA_CHECK(sc_cu_batch_norm_grad(x, dy, scale, mean, var, dx, dscale, dbias, dmean, dvar, n, c, hw, eps,
	                                    cu(rt)->stream));
}

void sc_l2_normalize(sc_rt *rt, const float *x, const float *sumsq, float *y, int64_t outer, int64_t n,
                     int64_t inner, double eps)
{
	PROFILE(rt, "L2Normalize", 3.0 * outer * n * inner, 8.0 * outer * n * inner, SC_PEAK_MEM);
	SC_CUDA_CHECK(sc_cu_l2_normalize(x, sumsq, y, outer, n, inner, eps, cu(rt)->stream));
}

void sc_l2_normalize_grad(sc_rt *rt, const float *x, const float *sumsq, const float *dy, float *dx, float *dsumsq,
                          int64_t outer, int64_t n, int64_t inner, double eps)
{
	PROFILE(rt, "L2Normalize grad", 6.0 * outer * n * inner, 12.0 * outer * n * inner, SC_PEAK_MEM);
	SC_CUDA_CHECK(sc_cu_l2_normalize_grad(x, sumsq, dy, dx, dsumsq, outer, n, inner, eps, cu(rt)->stream));
}

void sc_gather(sc_rt *rt, const float *table, int64_t rows, int64_t row, const void *idx, sc_dtype idx_dt,
               int64_t nidx, int64_t offset, float *y)
{
	sc_gather_axis(rt, table, 1, rows, row, idx, idx_dt, nidx, offset, y);
}

void sc_gather_axis_grad(sc_rt *rt, const float *dy, const void *idx, sc_dtype idx_dt, int64_t nidx, int64_t offset,
                         float *dtable, int64_t outer, int64_t rows, int64_t row)
{
	PROFILE(rt, "Gather grad", 0, 8.0 * outer * nidx * row, SC_PEAK_MEM);
	if (idx_dt != SC_I32 && idx_dt != SC_I64)
		SC_DIE("gather_grad: indices must be int32 or int64");
	SC_CUDA_CHECK(sc_cu_gather_grad(dy, idx, idx_dt == SC_I64, nidx, offset, INT64_MAX, dtable, outer, rows, row,
	                                cu(rt)->stream));
}

void sc_embedding_lookup(sc_rt *rt, const float *table, int64_t rows, int64_t row, const void *idx, sc_dtype idx_dt,
                         int64_t nidx, int64_t offset, int64_t limit, float *y)
{
	PROFILE(rt, "EmbeddingLookup", 0, 8.0 * nidx * row, SC_PEAK_MEM);
	if (idx_dt != SC_I32 && idx_dt != SC_I64)
		SC_DIE("embedding_lookup: indices must be int32 or int64");
	SC_CUDA_CHECK(sc_cu_gather(table, 1, rows, row, idx, idx_dt == SC_I64, nidx, offset, limit, y, cu(rt)->stream));
}

void sc_embedding_lookup_grad(sc_rt *rt, const float *dy, const void *idx, sc_dtype idx_dt, int64_t nidx,
                              int64_t offset, int64_t limit, float *dtable, int64_t rows, int64_t row)
{
	PROFILE(rt, "EmbeddingLookup grad", 0, 8.0 * nidx * row, SC_PEAK_MEM);
	if (idx_dt != SC_I32 && idx_dt != SC_I64)
		SC_DIE("embedding_lookup_grad: indices must be int32 or int64");
	SC_CUDA_CHECK(sc_cu_gather_grad(dy, idx, idx_dt == SC_I64, nidx, offset, limit, dtable, 1, rows, row,
	                                cu(rt)->stream));
}

void sc_gather_grad(sc_rt *rt, const float *dy, const void *idx, sc_dtype idx_dt, int64_t nidx, int64_t offset,
                    float *dtable, int64_t rows, int64_t row)
{
	sc_gather_axis_grad(rt, dy, idx, idx_dt, nidx, offset, dtable, 1, rows, row);
}

static void norm_shape(const int64_t *dims, int ndim, int bna, int bpa, int64_t *rows, int64_t *cols, int64_t *np)
{
	sc_check_dims("norm", dims, ndim);
	bna = sc_norm_axis("norm begin_norm_axis", bna, ndim);
	bpa = sc_norm_axis("norm begin_params_axis", bpa, ndim);
	*rows = sc_numel(dims, bna);
	*cols = sc_numel(dims + bna, ndim - bna);
	*np = sc_numel(dims + bpa, ndim - bpa);
}

void sc_norm(sc_rt *rt, sc_norm_kind k, const float *x, const float *gamma, const float *beta, float *y,
             const int64_t *dims, int ndim, int begin_norm_axis, int begin_params_axis, double eps)
{
	PROFILE(rt, "Norm", 0, 8.0 * (double)sc_numel(dims, ndim), SC_PEAK_MEM);
	int64_t rows, cols, np;
	int centered = sc_norm_check("sc_norm", k);
	norm_shape(dims, ndim, begin_norm_axis, begin_params_axis, &rows, &cols, &np);
	SC_CUDA_CHECK(sc_cu_norm(centered, x, gamma, beta, y, rows, cols, np, (float)eps, cu(rt)->stream));
}

void sc_norm_grad(sc_rt *rt, sc_norm_kind k, const float *dy, const float *x, const float *gamma, float *dx,
                  float *dgamma, float *dbeta, const int64_t *dims, int ndim, int begin_norm_axis,
                  int begin_params_axis, double eps)
{
	PROFILE(rt, "Norm grad", 0, 12.0 * (double)sc_numel(dims, ndim), SC_PEAK_MEM);
	int64_t rows, cols, np;
	int centered = sc_norm_check("sc_norm_grad", k);
	norm_shape(dims, ndim, begin_norm_axis, begin_params_axis, &rows, &cols, &np);
	void *scratch = dev_scratch(rt, SC_KERNEL_SCRATCH, sc_cu_norm_grad_scratch(rows, cols, np));
	SC_CUDA_CHECK(sc_cu_norm_grad(centered, dy, x, gamma, dx, dgamma, dbeta, rows, cols, np, (float)eps, scratch,
	                              cu(rt)->stream));
}

void sc_norm_part(sc_rt *rt, sc_norm_kind k, const float *x, const float *gamma, const float *beta,
                  const float *mean, const float *var, float *y, int64_t rows, int64_t cols, double eps)
{
	PROFILE(rt, "Norm (part)", 0, 8.0 * rows * cols, SC_PEAK_MEM);
	int centered = sc_norm_part_check("sc_norm_part", k, mean, NULL);
	SC_CUDA_CHECK(sc_cu_norm_part(centered, x, gamma, beta, mean, var, y, rows, cols, (float)eps, cu(rt)->stream));
}

void sc_norm_part_grad(sc_rt *rt, sc_norm_kind k, const float *dy, const float *x, const float *gamma,
                       const float *mean, const float *var, float *dx, float *dgamma, float *dbeta, float *dmean,
                       float *dvar, int64_t rows, int64_t cols, double eps)
{
	PROFILE(rt, "Norm grad (part)", 0, 12.0 * rows * cols, SC_PEAK_MEM);
	int centered = sc_norm_part_check("sc_norm_part_grad", k, mean, dmean);
	void *scratch = dev_scratch(rt, SC_KERNEL_SCRATCH, sc_cu_norm_part_grad_scratch(rows, cols));
	SC_CUDA_CHECK(sc_cu_norm_part_grad(centered, dy, x, gamma, mean, var, dx, dgamma, dbeta, dmean, dvar, rows, cols,
	                                   (float)eps, scratch, cu(rt)->stream));
}

void sc_concat(sc_rt *rt, sc_dtype dt, const void *const *xs, const int64_t *axis_sizes, int nx, void *y,
               const int64_t *y_dims, int ndim, int axis)
{
	PROFILE(rt, "Concat", 0, 2.0 * (double)sc_numel(y_dims, ndim) * (double)sc_dtype_size(dt), SC_PEAK_MEM);
	sc_check_dims("concat", y_dims, ndim);
	axis = sc_norm_axis("concat", axis, ndim);
	int64_t outer, len, inner, at = 0;
	sc_split3(y_dims, ndim, axis, &outer, &len, &inner);
	size_t es = sc_dtype_size(dt);
	for (int k = 0; k < nx; k++) {
		size_t chunk = (size_t)(axis_sizes[k] * inner) * es;
		SC_CUDA_CHECK(cudaMemcpy2DAsync((char *)y + (size_t)(at * inner) * es, (size_t)(len * inner) * es, xs[k],
		                                chunk, chunk, (size_t)outer, cudaMemcpyDeviceToDevice, cu(rt)->stream));
		at += axis_sizes[k];
	}
	if (at != len)
		SC_DIE("concat: the inputs' sizes along axis %d add to %lld, the output has %lld", axis, (long long)at,
		       (long long)len);
}

/* The walk over a slice: operand 0 is x (from base), operand 1 y's row
 * strides. When the slice reaches past x (*past), the walk covers only the
 * box of y that lies in x, for the box launchers; odims are y's dims. */
static sc_cu_walk slice_walk(const int64_t *dims, int ndim, const int64_t *begin, const int64_t *end,
                             const int64_t *strides, int64_t *base, int64_t *odims, bool *past)
{
	int64_t b[SC_MAX_DIMS], xs[SC_MAX_DIMS], real[SC_MAX_DIMS];
	sc_cu_walk w;
	memset(&w, 0, sizeof w);
	w.ndim = ndim;
	*past = sc_slice_norm(dims, ndim, begin, end, strides, b, odims, real);
	memcpy(w.dims, *past ? real : odims, (size_t)ndim * sizeof *odims);
	row_strides(dims, ndim, xs);
	row_strides(odims, ndim, w.s1);
	*base = 0;
	for (int d = 0; d < ndim; d++) {
		*base += b[d] * xs[d];
		w.s0[d] = strides[d] * xs[d];
	}
	return w;
}

void sc_strided_slice(sc_rt *rt, sc_dtype dt, const void *x, void *y, const int64_t *dims, int ndim,
                      const int64_t *begin, const int64_t *end, const int64_t *strides)
{
	PROFILE(rt, "StridedSlice", 0, 0, SC_PEAK_MEM);
	int64_t base, odims[SC_MAX_DIMS];
	bool past;
	sc_cu_walk w = slice_walk(dims, ndim, begin, end, strides, &base, odims, &past);
	size_t es = sc_dtype_size(dt);
	if (!past) {
		SC_CUDA_CHECK(sc_cu_strided_copy(x, y, base, &w, es, cu(rt)->stream));
		return;
	}
	/* zero bytes are 0, +0 and false in every dtype; then the box in x */
	SC_CUDA_CHECK(cudaMemsetAsync(y, 0, (size_t)sc_numel(odims, ndim) * es, cu(rt)->stream));
	SC_CUDA_CHECK(sc_cu_box_copy(x, y, base, &w, es, cu(rt)->stream));
}

/* value everywhere, then x walked into the box of y at lo (the twin: sc_cpu_pad) */
void sc_pad(sc_rt *rt, sc_dtype dt, const void *x, void *y, const int64_t *dims, int ndim, const int64_t *lo,
            const int64_t *hi, double value)
{
	int64_t ydims[SC_MAX_DIMS], base = 0;
	sc_pad_dims(dims, ndim, lo, hi, ydims);
	size_t es = sc_dtype_size(dt);
	PROFILE(rt, "PadV3", 0, (double)(sc_numel(ydims, ndim) + sc_numel(dims, ndim)) * (double)es, SC_PEAK_MEM);
	sc_cu_walk w;
	memset(&w, 0, sizeof w);
	w.ndim = ndim;
	memcpy(w.dims, dims, (size_t)ndim * sizeof *dims);
	row_strides(dims, ndim, w.s0);
	row_strides(ydims, ndim, w.s1);
	for (int d = 0; d < ndim; d++)
		base += lo[d] * w.s1[d];
	SC_CUDA_CHECK(sc_cu_fill(y, dt, sc_numel(ydims, ndim), value, cu(rt)->stream));
	SC_CUDA_CHECK(sc_cu_box_copy(x, (char *)y + (size_t)base * es, 0, &w, es, cu(rt)->stream));
}

void sc_strided_slice_grad(sc_rt *rt, const float *dy, float *dx, const int64_t *dims, int ndim,
                           const int64_t *begin, const int64_t *end, const int64_t *strides)
{
	PROFILE(rt, "StridedSlice grad", 0, 0, SC_PEAK_MEM);
	int64_t base, odims[SC_MAX_DIMS];
	bool past;
	sc_cu_walk w = slice_walk(dims, ndim, begin, end, strides, &base, odims, &past);
	SC_CUDA_CHECK(cudaMemsetAsync(dx, 0, (size_t)sc_numel(dims, ndim) * sizeof *dx, cu(rt)->stream));
	if (!past)
		SC_CUDA_CHECK(sc_cu_strided_scatter(dy, dx, base, &w, cu(rt)->stream));
	else   /* dy's part past x has no place in dx */
		SC_CUDA_CHECK(sc_cu_box_scatter(dy, dx, base, &w, cu(rt)->stream));
}

void sc_cast(sc_rt *rt, const void *x, sc_dtype x_dt, void *y, sc_dtype y_dt, int64_t n)
{
	PROFILE(rt, cast_kind((double)n), 0, (double)n * (double)(sc_dtype_size(x_dt) + sc_dtype_size(y_dt)), SC_PEAK_MEM);
	SC_CUDA_CHECK(sc_cu_cast(x, x_dt, y, y_dt, n, cu(rt)->stream));
}

void sc_round(sc_rt *rt, float *x, sc_dtype dt, int64_t n)
{
	PROFILE(rt, cast_kind((double)n), 0, 8.0 * (double)n, SC_PEAK_MEM);
	if (!sc_is_half(dt))
		SC_DIE("sc_round: to %s, not a half type", sc_dtype_name(dt));
	SC_CUDA_CHECK(sc_cu_round(x, dt, n, cu(rt)->stream));
}

static int label64(sc_dtype dt)
{
	if (dt != SC_I32 && dt != SC_I64)
		SC_DIE("labels must be int32 or int64, not %s", sc_dtype_name(dt));
	return dt == SC_I64;
}

void sc_sparse_softmax_ce(sc_rt *rt, const float *logits, const void *labels, sc_dtype label_dt, float *loss,
                          int64_t n, int64_t c)
{
	PROFILE(rt, "cross entropy", 0, 4.0 * n * c, SC_PEAK_MEM);
	SC_CUDA_CHECK(sc_cu_sparse_ce(logits, labels, label64(label_dt), loss, n, c, cu(rt)->stream));
}

void sc_sparse_softmax_ce_grad(sc_rt *rt, const float *logits, const void *labels, sc_dtype label_dt,
                               const float *dloss, float *dlogits, int64_t n, int64_t c)
{
	PROFILE(rt, "cross entropy grad", 0, 8.0 * n * c, SC_PEAK_MEM);
	SC_CUDA_CHECK(sc_cu_sparse_ce_grad(logits, labels, label64(label_dt), dloss, dlogits, n, c, cu(rt)->stream));
}

void sc_sparse_softmax_ce_part(sc_rt *rt, const float *logits, const void *labels, sc_dtype label_dt,
                               const float *max, const float *sum, float *loss, int64_t n, int64_t c,
                               int64_t offset)
{
	PROFILE(rt, "cross entropy", 0, 4.0 * n * c, SC_PEAK_MEM);
	SC_CUDA_CHECK(sc_cu_sparse_ce_part(logits, labels, label64(label_dt), max, sum, loss, n, c, offset,
	                                   cu(rt)->stream));
}

void sc_sparse_softmax_ce_part_grad(sc_rt *rt, const float *logits, const void *labels, sc_dtype label_dt,
                                    const float *max, const float *sum, const float *dloss, float *dlogits,
                                    int64_t n, int64_t c, int64_t offset, int64_t classes)
{
	PROFILE(rt, "cross entropy grad", 0, 8.0 * n * c, SC_PEAK_MEM);
	SC_CUDA_CHECK(sc_cu_sparse_ce_part_grad(logits, labels, label64(label_dt), max, sum, dloss, dlogits, n, c, offset,
	                                        classes, cu(rt)->stream));
}

void sc_softmax_ce(sc_rt *rt, const float *logits, const float *labels, float *loss, int64_t n, int64_t c)
{
	PROFILE(rt, "cross entropy", 0, 8.0 * n * c, SC_PEAK_MEM);   /* the logits and labels read */
	SC_CUDA_CHECK(sc_cu_softmax_ce(logits, labels, loss, n, c, cu(rt)->stream));
}

void sc_softmax_ce_grad(sc_rt *rt, const float *logits, const float *labels, const float *dloss, float *dlogits,
                        int64_t n, int64_t c)
{
	PROFILE(rt, "cross entropy grad", 0, 12.0 * n * c, SC_PEAK_MEM);
	SC_CUDA_CHECK(sc_cu_softmax_ce_grad(logits, labels, dloss, dlogits, n, c, cu(rt)->stream));
}

void sc_softmax_ce_part(sc_rt *rt, const float *logits, const float *labels, const float *max, const float *sum,
                        float *loss, int64_t n, int64_t c)
{
	PROFILE(rt, "cross entropy", 0, 8.0 * n * c, SC_PEAK_MEM);
	SC_CUDA_CHECK(sc_cu_softmax_ce_part(logits, labels, max, sum, loss, n, c, cu(rt)->stream));
}

void sc_softmax_ce_part_grad(sc_rt *rt, const float *logits, const float *labels, const float *max,
                             const float *sum, const float *dloss, float *dlogits, int64_t n, int64_t c)
{
	PROFILE(rt, "cross entropy grad", 0, 12.0 * n * c, SC_PEAK_MEM);
	SC_CUDA_CHECK(sc_cu_softmax_ce_part_grad(logits, labels, max, sum, dloss, dlogits, n, c, cu(rt)->stream));
}

void sc_mse_loss(sc_rt *rt, const float *pred, const float *target, float *loss, int64_t n)
{
	PROFILE(rt, "loss", 0, 8.0 * n, SC_PEAK_MEM);
	SC_CUDA_CHECK(sc_cu_pair_loss(0, pred, target, loss, n, cu(rt)->stream));
}

void sc_mse_loss_grad(sc_rt *rt, const float *pred, const float *target, const float *dloss, float *dpred,
                      int64_t n)
{
	PROFILE(rt, "loss grad", 0, 12.0 * n, SC_PEAK_MEM);
	SC_CUDA_CHECK(sc_cu_pair_loss_grad(0, pred, target, dloss, dpred, n, cu(rt)->stream));
}

void sc_l1_loss(sc_rt *rt, const float *pred, const float *target, float *loss, int64_t n)
{
	PROFILE(rt, "loss", 0, 8.0 * n, SC_PEAK_MEM);
	SC_CUDA_CHECK(sc_cu_pair_loss(1, pred, target, loss, n, cu(rt)->stream));
}

void sc_l1_loss_grad(sc_rt *rt, const float *pred, const float *target, const float *dloss, float *dpred,
                     int64_t n)
{
	PROFILE(rt, "loss grad", 0, 12.0 * n, SC_PEAK_MEM);
	SC_CUDA_CHECK(sc_cu_pair_loss_grad(1, pred, target, dloss, dpred, n, cu(rt)->stream));
}

void sc_l2_loss(sc_rt *rt, const float *x, float *loss, int64_t n)
{
	PROFILE(rt, "loss", 0, 4.0 * n, SC_PEAK_MEM);
	SC_CUDA_CHECK(sc_cu_l2_loss(x, loss, n, cu(rt)->stream));
}

void sc_l2_loss_grad(sc_rt *rt, const float *x, const float *dloss, float *dx, int64_t n)
{
	PROFILE(rt, "loss grad", 0, 8.0 * n, SC_PEAK_MEM);
	SC_CUDA_CHECK(sc_cu_l2_loss_grad(x, dloss, dx, n, cu(rt)->stream));
}

void sc_kldiv_loss(sc_rt *rt, const float *x, const float *y, float *out, int64_t n, int reduce, double scale)
{
	PROFILE(rt, "loss", 0, (reduce ? 8.0 : 12.0) * n, SC_PEAK_MEM);
	SC_CUDA_CHECK(sc_cu_kldiv_loss(x, y, out, n, reduce, scale, cu(rt)->stream));
}

void sc_kldiv_loss_grad(sc_rt *rt, const float *y, const float *dout, float *dx, int64_t n, int reduce, double scale)
{
	PROFILE(rt, "loss grad", 0, (reduce ? 8.0 : 12.0) * n, SC_PEAK_MEM);
	SC_CUDA_CHECK(sc_cu_kldiv_loss_grad(y, dout, dx, n, reduce, scale, cu(rt)->stream));
}

void sc_lerp(sc_rt *rt, const float *start, const int64_t *s_dims, int s_ndim, const float *end,
             const int64_t *e_dims, int e_ndim, const float *w, const int64_t *w_dims, int w_ndim, float *y,
             const int64_t *y_dims, int y_ndim)
{
	PROFILE(rt, "Lerp", 0, 16.0 * (double)sc_numel(y_dims, y_ndim), SC_PEAK_MEM);
	sc_cu_walk sw = bcast_walk("lerp", s_dims, s_ndim, e_dims, e_ndim, y_dims, y_ndim);
	sc_cu_walk ww = bcast_walk("lerp weight", w_dims, w_ndim, NULL, -1, y_dims, y_ndim);
	SC_CUDA_CHECK(sc_cu_lerp(start, end, w, y, &sw, &ww, cu(rt)->stream));
}

/* As sc_binary_grad: an operand as large as y takes its terms straight, a
 * broadcast one's are summed down from scratch. */
void sc_masked_fill(sc_rt *rt, const float *x, const int64_t *x_dims, int x_ndim, const uint8_t *mask,
                    const int64_t *m_dims, int m_ndim, const float *value, float *y, const int64_t *y_dims, int y_ndim)
{
	PROFILE(rt, "MaskedFill", 0, 9.0 * (double)sc_numel(y_dims, y_ndim), SC_PEAK_MEM);
	sc_cu_walk w = bcast_walk("masked_fill", x_dims, x_ndim, m_dims, m_ndim, y_dims, y_ndim);
	SC_CUDA_CHECK(sc_cu_masked_fill(x, mask, value, y, &w, cu(rt)->stream));
}

/* MindSpore's resizes on nc planes (the twins: sc_cpu_resize, _grad) */
void sc_resize(sc_rt *rt, int bilinear, const float *x, float *y, int64_t nc, int64_t in_h, int64_t in_w,
               int64_t out_h, int64_t out_w, int align_corners, int half_pixel_centers)
{
	PROFILE(rt, bilinear ? "ResizeBilinearV2" : "ResizeNearestNeighbor", bilinear ? 7.0 * (double)(nc * out_h * out_w) : 0,
	        4.0 * (double)(nc * (in_h * in_w + out_h * out_w)), SC_PEAK_MEM);
	SC_CUDA_CHECK(sc_cu_resize(bilinear, x, y, nc, in_h, in_w, out_h, out_w, align_corners, half_pixel_centers,
	                           cu(rt)->stream));
}

void sc_resize_grad(sc_rt *rt, int bilinear, const float *dy, float *dx, int64_t nc, int64_t in_h, int64_t in_w,
                    int64_t out_h, int64_t out_w, int align_corners, int half_pixel_centers)
{
	PROFILE(rt, bilinear ? "ResizeBilinearGrad" : "ResizeNearestNeighborGrad", bilinear ? 8.0 * (double)(nc * out_h * out_w) : 0,
	        4.0 * (double)(nc * (in_h * in_w + out_h * out_w)), SC_PEAK_MEM);
	SC_CUDA_CHECK(sc_cu_resize_grad(bilinear, dy, dx, nc, in_h, in_w, out_h, out_w, align_corners, half_pixel_centers,
	                                cu(rt)->stream));
}

/* Each element's term into scratch, then summed down to x's dims (k 0) or
 * to one element (k 2, value's). */
void sc_masked_fill_grad(sc_rt *rt, int k, const int64_t *x_dims, int x_ndim, const uint8_t *mask,
                         const int64_t *m_dims, int m_ndim, const float *dy, const int64_t *y_dims, int y_ndim,
                         float *dx)
{
	PROFILE(rt, "MaskedFill grad", 0, 9.0 * (double)sc_numel(y_dims, y_ndim), SC_PEAK_MEM);
	if (k != 0 && k != 2)
		SC_DIE("masked_fill_grad: operand %d is not x (0) or value (2)", k);
	sc_cu_walk w = bcast_walk("masked_fill_grad", x_dims, x_ndim, m_dims, m_ndim, y_dims, y_ndim);
	float *g = dev_scratch(rt, 0, (size_t)sc_numel(y_dims, y_ndim) * sizeof(float));
	SC_CUDA_CHECK(sc_cu_masked_fill_grad_full(k, mask, dy, g, &w, cu(rt)->stream));
	sc_cu_plan p = k == 0 ? sum_plan(y_dims, y_ndim, x_dims, x_ndim) : sum_plan(y_dims, y_ndim, NULL, 0);
	reduce_plan(rt, SC_R_SUM, g, dx, &p);
}

void sc_lerp_grad(sc_rt *rt, int k, const float *start, const int64_t *s_dims, int s_ndim, const float *end,
                  const int64_t *e_dims, int e_ndim, const float *w, const int64_t *w_dims, int w_ndim,
                  const float *dy, const int64_t *y_dims, int y_ndim, float *dx)
{
	PROFILE(rt, "Lerp grad", 0, 16.0 * (double)sc_numel(y_dims, y_ndim), SC_PEAK_MEM);
	const int64_t *dims[3] = {s_dims, e_dims, w_dims};
	int ndims[3] = {s_ndim, e_ndim, w_ndim};
	if (k < 0 || k > 2)
		SC_DIE("lerp_grad: operand %d is not start (0), end (1) or weight (2)", k);
	sc_cu_walk sw = bcast_walk("lerp_grad", s_dims, s_ndim, e_dims, e_ndim, y_dims, y_ndim);
	sc_cu_walk ww = bcast_walk("lerp_grad weight", w_dims, w_ndim, NULL, -1, y_dims, y_ndim);
	int64_t ny = sc_numel(y_dims, y_ndim);
	bool whole = sc_numel(dims[k], ndims[k]) == ny;
	float *g = whole ? dx : dev_scratch(rt, 0, (size_t)ny * sizeof(float));
	SC_CUDA_CHECK(sc_cu_lerp_grad_full(k, start, end, w, dy, g, &sw, &ww, cu(rt)->stream));
	if (!whole) {
		sc_cu_plan p = sum_plan(y_dims, y_ndim, dims[k], ndims[k]);
		reduce_plan(rt, SC_R_SUM, g, dx, &p);
	}
}

void sc_binary_grad(sc_rt *rt, sc_binop op, const float *a, const int64_t *a_dims, int a_ndim, const float *b,
                    const int64_t *b_dims, int b_ndim, const float *dy, const int64_t *y_dims, int y_ndim, float *da,
                    float *db)
{
	PROFILE(rt, "Binary grad", 0, 16.0 * (double)sc_numel(y_dims, y_ndim), SC_PEAK_MEM);
	sc_cu_walk w = bcast_walk("binary_grad", a_dims, a_ndim, b_dims, b_ndim, y_dims, y_ndim);
	/* An operand as large as the result takes its gradient straight; a
	 * broadcast one's is summed down from scratch. */
	int64_t ny = sc_numel(y_dims, y_ndim);
	bool a_whole = sc_numel(a_dims, a_ndim) == ny, b_whole = sc_numel(b_dims, b_ndim) == ny;
	float *ga = !da || a_whole ? da : dev_scratch(rt, 0, (size_t)ny * sizeof(float));
	float *gb = !db || b_whole ? db : dev_scratch(rt, 1, (size_t)ny * sizeof(float));
	SC_CUDA_CHECK(sc_cu_binary_grad_full(op, a, b, dy, ga, gb, &w, cu(rt)->stream));
	if (da && !a_whole) {
		sc_cu_plan p = sum_plan(y_dims, y_ndim, a_dims, a_ndim);
		reduce_plan(rt, SC_R_SUM, ga, da, &p);
	}
	if (db && !b_whole) {
		sc_cu_plan p = sum_plan(y_dims, y_ndim, b_dims, b_ndim);
		reduce_plan(rt, SC_R_SUM, gb, db, &p);
	}
}

void sc_sum_to_shape(sc_rt *rt, const float *x, const int64_t *x_dims, int x_ndim, float *y, const int64_t *y_dims,
                     int y_ndim)
{
	PROFILE(rt, "sum to shape", 0, 4.0 * (double)sc_numel(x_dims, x_ndim), SC_PEAK_MEM);
	sc_cu_plan p = sum_plan(x_dims, x_ndim, y_dims, y_ndim);
	reduce_plan(rt, SC_R_SUM, x, y, &p);
}

void sc_broadcast_to(sc_rt *rt, const float *x, const int64_t *x_dims, int x_ndim, float *y, const int64_t *y_dims,
                     int y_ndim)
{
	PROFILE(rt, "broadcast", 0, 4.0 * (double)sc_numel(y_dims, y_ndim), SC_PEAK_MEM);
	sc_cu_walk w = bcast_walk("broadcast_to", x_dims, x_ndim, NULL, -1, y_dims, y_ndim);
	SC_CUDA_CHECK(sc_cu_strided_copy(x, y, 0, &w, sizeof(float), cu(rt)->stream));
}

void sc_bias_add_grad(sc_rt *rt, const float *dy, float *dbias, int64_t rows, int64_t c)
{
	PROFILE(rt, "BiasAdd grad", 0, 4.0 * rows * c, SC_PEAK_MEM);
	sc_cu_plan p;
	memset(&p, 0, sizeof p);
	p.nk = p.nr = 1;
	p.kdims[0] = c;
	p.kstride[0] = 1;
	p.rdims[0] = rows;
	p.rstride[0] = c;
	reduce_plan(rt, SC_R_SUM, dy, dbias, &p);
}

void sc_sgd(sc_rt *rt, float *p, const float *g, float *accum, int64_t n, double lr, double momentum,
            double dampening, double weight_decay, int nesterov, int64_t step)
{
	PROFILE(rt, "optimizer", 0, 20.0 * n, SC_PEAK_MEM);
	if (momentum > 0 && !accum)
		SC_DIE("sgd: momentum %g needs an accumulation buffer", momentum);
	SC_CUDA_CHECK(sc_cu_sgd(p, g, accum, n, (float)lr, momentum > 0 ? (float)momentum : 0.0f,
	                        (float)(1 - dampening), (float)weight_decay, nesterov, step <= 1, cu(rt)->stream));
}

void sc_momentum(sc_rt *rt, float *p, const float *g, float *v, int64_t n, double lr, double momentum,
                 double weight_decay, int nesterov)
{
	PROFILE(rt, "optimizer", 0, 20.0 * n, SC_PEAK_MEM);
	SC_CUDA_CHECK(sc_cu_momentum(p, g, v, n, (float)lr, (float)momentum, (float)weight_decay, nesterov,
	                             cu(rt)->stream));
}

void sc_adam(sc_rt *rt, float *p, const float *g, float *m, float *v, int64_t n, double lr, double beta1,
             double beta2, double eps, double weight_decay, int64_t step)
{
	PROFILE(rt, "optimizer", 0, 28.0 * n, SC_PEAK_MEM);
	if (step < 1)
		SC_DIE("adam: step %lld (steps count from 1)", (long long)step);
	double lr_t = lr * sqrt(1 - pow(beta2, (double)step)) / (1 - pow(beta1, (double)step));
	SC_CUDA_CHECK(sc_cu_adam(p, g, m, v, n, (float)lr_t, (float)beta1, (float)beta2, (float)eps, (float)weight_decay,
	                         cu(rt)->stream));
}

void sc_adam_weight_decay(sc_rt *rt, float *p, const float *g, float *m, float *v, int64_t n, double lr,
                          double beta1, double beta2, double eps, double weight_decay)
{
	PROFILE(rt, "optimizer", 0, 28.0 * n, SC_PEAK_MEM);
	SC_CUDA_CHECK(sc_cu_adam_weight_decay(p, g, m, v, n, (float)lr, (float)beta1, (float)beta2, (float)eps,
	                                      (float)weight_decay, cu(rt)->stream));
}

/* Lamb's bias corrections 1 - b^t in Float32, as sc_cpu_lamb's. */
static void lamb_corrections(double beta1, double beta2, int64_t step, float *c1, float *c2)
{
	if (step < 1)
		SC_DIE("lamb: step %lld (steps count from 1)", (long long)step);
	*c1 = (float)(1 - pow(beta1, (double)step));
	*c2 = (float)(1 - pow(beta2, (double)step));
}

void sc_lamb_norms(sc_rt *rt, const float *p, const float *g, const float *m, const float *v, int64_t n,
                   double beta1, double beta2, double eps, double weight_decay, int64_t step, float *out)
{
	PROFILE(rt, "optimizer", 0, 24.0 * n, SC_PEAK_MEM);
	float c1, c2;
	lamb_corrections(beta1, beta2, step, &c1, &c2);
	SC_CUDA_CHECK(sc_cu_lamb_norms(p, g, m, v, n, (float)beta1, (float)beta2, c1, c2, (float)eps, (float)weight_decay,
	                               out, cu(rt)->stream));
}

void sc_lamb(sc_rt *rt, float *p, const float *g, float *m, float *v, int64_t n, double lr, double beta1,
             double beta2, double eps, double weight_decay, int64_t step, const float *norms)
{
	PROFILE(rt, "optimizer", 0, 28.0 * n, SC_PEAK_MEM);
	float c1, c2;
	lamb_corrections(beta1, beta2, step, &c1, &c2);
	SC_CUDA_CHECK(sc_cu_lamb(p, g, m, v, n, (float)lr, (float)beta1, (float)beta2, c1, c2, (float)eps,
	                         (float)weight_decay, norms, cu(rt)->stream));
}

void sc_sum_squares(sc_rt *rt, const float *const *xs, const int64_t *ns, int nx, float *out)
{
	PROFILE(rt, "sum of squares", 0, 4.0 * (double)sum_of(ns, nx), SC_PEAK_MEM);
	SC_CUDA_CHECK(sc_cu_sum_squares(xs, ns, nx, out, cu(rt)->stream));
}

void sc_clip_by_norm(sc_rt *rt, const float *x, float *y, int64_t n, const float *sqnorm, double clip)
{
	PROFILE(rt, "ClipByNorm", 0, 8.0 * n, SC_PEAK_MEM);
	SC_CUDA_CHECK(sc_cu_clip_by_norm(x, y, n, sqnorm, (float)clip, cu(rt)->stream));
}
