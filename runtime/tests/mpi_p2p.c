/* mpi_p2p.c: sc_p2p_exchange, sc_p2p_send, sc_p2p_recv, sc_p2p_flush and
 * sc_broadcast_host under mpirun (any world of 2 ranks or more), every
 * received message compared bit for bit with what its sender wrote.
 *
 * A message's bytes are a function of its sender and a salt both sides
 * agree on, so a message from the wrong rank, or the second one of a pair
 * taken for the first, shows. The first elements of the 2-byte floats and
 * of int64 are their edge cases (infinities, -0, subnormals, NaNs with
 * payloads, the extreme integers), the rest random bits: any conversion on
 * the way would change some. Each call checks the bytes counter grew by
 * exactly the bytes this rank sent. Exchange cases: a ring shift, two ranks
 * sending 1 MiB to each other in one call (past any eager limit: a
 * blocking send would deadlock), two messages to one peer kept in order, a
 * message of no elements, one call talking to every other rank in every
 * dtype. Send and receive cases: a ring in which every rank sends 1 MiB to
 * the next, overwrites its buffer at once and receives from the previous
 * into that same buffer; a 1F1B-like run between ranks 2k and 2k+1, each
 * sending two messages ahead before its first receive, then one send per
 * receive, all of one size so only their order tells them apart; a flush,
 * then more traffic (a message of no elements among it) and ping-pongs
 * whose completed sends must be freed without a flush; the last rank's
 * bytes broadcast to every rank, and sc_check_loss_host on them.
 * `--fault NAME` instead makes one bad call, which must end the job with its
 * message (run_mpi_p2p.sh checks that): exchange-past, exchange-negative,
 * exchange-self (an exchange naming a peer past the world, negative, or
 * itself), send-past, send-negative, send-self, recv-self, broadcast-root
 * (sc_broadcast_host from rank size), inf-loss (sc_check_loss_host on an
 * inf the last rank broadcast: every rank exits 3).
 * Built against either library: with SC_TEST_CUDA the buffers are device
 * memory. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef SC_TEST_CUDA
#include <cuda_runtime_api.h>
#endif

#include "rt_internal.h"
#include "rt_test.h"

static sc_rt *rt;
static int me, np, checks, failures;
static int64_t expect_bytes;   /* what this rank has sent so far, summed here */

enum { SLAB = 1 << 23, BIG = 1 << 18 };

static void check(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void check(bool ok, const char *fmt, ...)
{
	checks++;
	if (ok)
		return;
	failures++;
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "rank %d: FAILED: ", me);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
}

static uint64_t mix(uint64_t z)
{
	z += 0x9e3779b97f4a7c15;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9;
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb;
	return z ^ (z >> 31);
}

/* The message salt of sender holds, count elements of dt, into h. */
static void payload(void *h, sc_dtype dt, int64_t count, int sender, int salt)
{
	static const uint16_t f16_edges[] = {0x7c00, 0xfc00, 0x8000, 0x0001, 0x7e01, 0x7d00, 0x7bff, 0x03ff};
	static const uint16_t bf16_edges[] = {0x7f80, 0xff80, 0x8000, 0x0001, 0x7fc1, 0x7f81, 0x7f7f, 0x007f};
	static const int64_t i64_edges[] = {INT64_MIN, INT64_MAX, -1, (INT64_C(1) << 53) + 1};
	size_t es = sc_dtype_size(dt);
	for (int64_t i = 0; i < count; i++) {
		uint64_t z = mix(((uint64_t)sender << 48) ^ ((uint64_t)salt << 32) ^ (uint64_t)i);
		if (dt == SC_BOOL)
			z &= 1;
		else if (dt == SC_F16 && i < 8)
			z = f16_edges[i];
		else if (dt == SC_BF16 && i < 8)
			z = bf16_edges[i];
		else if (dt == SC_I64 && i < 4)
			z = (uint64_t)i64_edges[i];
		memcpy((char *)h + (size_t)i * es, &z, es);   /* little-endian: the low bytes */
	}
}

/* One operation as the test describes it: the sc_p2p, and the salt the two
 * sides agree on. */
typedef struct {
	sc_p2p_dir dir;
	int peer;
	sc_dtype dt;
	int64_t count;
	int salt;
} Op;

/* Runs ops in one sc_p2p_exchange: sends filled from payload(), receive
 * buffers filled with 0xa5 first; then every receive must hold its sender's
 * payload, every send be as it was, and the counter have grown by the bytes
 * sent. A message of no elements gets no buffer (NULL). */
static void run(const char *what, const Op *ops, int n)
{
	sc_p2p p[16];
	void *want[16];
	int64_t sent = 0;
	if (n > 16)
		abort();
	for (int k = 0; k < n; k++) {
		size_t bytes = (size_t)ops[k].count * sc_dtype_size(ops[k].dt);
		want[k] = malloc(bytes + 1);
		payload(want[k], ops[k].dt, ops[k].count, ops[k].dir == SC_SEND ? me : ops[k].peer, ops[k].salt);
		p[k] = (sc_p2p){ops[k].dir, ops[k].peer, ops[k].count ? t_slab(bytes) : NULL, ops[k].dt, ops[k].count};
		if (ops[k].dir == SC_SEND) {
			sc_from_host(rt, p[k].buf, want[k], bytes);
			sent += (int64_t)bytes;
		} else if (bytes) {
			void *junk = malloc(bytes);
			memset(junk, 0xa5, bytes);
			sc_from_host(rt, p[k].buf, junk, bytes);
			free(junk);
		}
	}
	int64_t before = sc_comm_bytes(rt);
	sc_p2p_exchange(rt, n ? p : NULL, n);
	expect_bytes += sent;
	check(sc_comm_bytes(rt) - before == sent, "%s: the counter grew by %lld bytes, want %lld", what,
	      (long long)(sc_comm_bytes(rt) - before), (long long)sent);
	for (int k = 0; k < n; k++) {
		size_t bytes = (size_t)ops[k].count * sc_dtype_size(ops[k].dt);
		void *got = malloc(bytes + 1);
		sc_to_host(rt, got, p[k].buf, bytes);
		check(memcmp(got, want[k], bytes) == 0, "%s: operation %d (%s rank %d, %lld %s) %s", what, k,
		      ops[k].dir == SC_SEND ? "send to" : "receive from", ops[k].peer, (long long)ops[k].count,
		      sc_dtype_name(ops[k].dt),
		      ops[k].dir == SC_SEND ? "changed its buffer" : "does not hold the sender's bytes");
		free(got);
		free(want[k]);
	}
	t_slab_reset();
}

static void ring_shift(void)
{
	int next = (me + 1) % np, prev = (me + np - 1) % np;
	/* by hand: 1000 floats are 4000 bytes */
	int64_t before = sc_comm_bytes(rt);
	run("ring shift", (const Op[]){{SC_SEND, next, SC_F32, 1000, 1}, {SC_RECV, prev, SC_F32, 1000, 1}}, 2);
	check(sc_comm_bytes(rt) - before == 4000, "ring shift: 1000 floats sent count 4000 bytes");
	/* the 2-byte floats and int64, bit for bit */
	run("ring shift of float16, bfloat16, int64",
	    (const Op[]){{SC_SEND, next, SC_F16, 300, 2}, {SC_SEND, next, SC_BF16, 300, 3},
	                 {SC_SEND, next, SC_I64, 300, 4}, {SC_RECV, prev, SC_F16, 300, 2},
	                 {SC_RECV, prev, SC_BF16, 300, 3}, {SC_RECV, prev, SC_I64, 300, 4}},
	    6);
}

/* Ranks 2i and 2i+1 pair up; with an odd world the last rank makes an empty call. */
static void pairs(void)
{
	int partner = me ^ 1;
	if (partner >= np) {
		run("no operations", NULL, 0);
		return;
	}
	/* each sends first: with blocking sends of 1 MiB both would wait forever */
	run("1 MiB both ways, sends listed first",
	    (const Op[]){{SC_SEND, partner, SC_F32, BIG, 5}, {SC_RECV, partner, SC_F32, BIG, 5}}, 2);
	/* one side lists its receive first: the order within a call does not matter */
	const Op mixed[2][2] = {{{SC_SEND, partner, SC_F32, BIG, 6}, {SC_RECV, partner, SC_F32, BIG, 6}},
	                        {{SC_RECV, partner, SC_F32, BIG, 6}, {SC_SEND, partner, SC_F32, BIG, 6}}};
	run("1 MiB both ways, one side receiving first", mixed[me & 1], 2);
	/* two messages of one type and size each way: only their order tells them apart */
	run("two messages to one peer, in order",
	    (const Op[]){{SC_SEND, partner, SC_I32, 64, 7}, {SC_RECV, partner, SC_I32, 64, 7},
	                 {SC_SEND, partner, SC_I32, 64, 8}, {SC_RECV, partner, SC_I32, 64, 8}},
	    4);
	/* a message of no elements (no buffer), then one that must still meet its receive */
	run("a message of no elements",
	    (const Op[]){{SC_SEND, partner, SC_F32, 0, 9}, {SC_SEND, partner, SC_F32, 16, 10},
	                 {SC_RECV, partner, SC_F32, 0, 9}, {SC_RECV, partner, SC_F32, 16, 10}},
	    4);
}

/* One call to the next k ranks and from the previous k, k = min(np - 1, 7):
 * every other rank up to 8 ranks. From s to r a message of dtype
 * dts[(s np + r) % 6] and 37 + s + 3 r elements, so the 12 directions of 4
 * ranks carry every dtype. */
static void every_peer(void)
{
	static const sc_dtype dts[] = {SC_F32, SC_I32, SC_I64, SC_BOOL, SC_F16, SC_BF16};
	Op ops[14];
	int n = 0;
	for (int d = 1; d < np && d <= 7; d++) {
		int to = (me + d) % np, from = (me + np - d) % np;
		ops[n++] = (Op){SC_SEND, to, dts[(me * np + to) % 6], 37 + me + 3 * to, 11};
		ops[n++] = (Op){SC_RECV, from, dts[(from * np + me) % 6], 37 + from + 3 * me, 11};
	}
	run("several peers in one call", ops, n);
}

/* sc_p2p_send of the message salt (count elements of dt) from buf, which is
 * then overwritten at once: the runtime must have taken its copy. */
static void send_msg(const char *what, int peer, void *buf, sc_dtype dt, int64_t count, int salt)
{
	size_t bytes = (size_t)count * sc_dtype_size(dt);
	void *h = malloc(bytes + 1);
	payload(h, dt, count, me, salt);
	if (bytes)
		sc_from_host(rt, buf, h, bytes);
	int64_t before = sc_comm_bytes(rt);
	sc_p2p_send(rt, peer, bytes ? buf : NULL, dt, count);
	expect_bytes += (int64_t)bytes;
	check(sc_comm_bytes(rt) - before == (int64_t)bytes, "%s: a send of %zu bytes grew the counter by %lld", what,
	      bytes, (long long)(sc_comm_bytes(rt) - before));
	memset(h, 0x5a, bytes);
	if (bytes)
		sc_from_host(rt, buf, h, bytes);
	free(h);
}

/* sc_p2p_recv of peer's message salt into buf (filled with 0xa5 first),
 * which must then hold its bytes; the counter does not move. */
static void recv_msg(const char *what, int peer, void *buf, sc_dtype dt, int64_t count, int salt)
{
	size_t bytes = (size_t)count * sc_dtype_size(dt);
	void *want = malloc(bytes + 1), *got = malloc(bytes + 1);
	payload(want, dt, count, peer, salt);
	memset(got, 0xa5, bytes);
	if (bytes)
		sc_from_host(rt, buf, got, bytes);
	int64_t before = sc_comm_bytes(rt);
	sc_p2p_recv(rt, peer, bytes ? buf : NULL, dt, count);
	check(sc_comm_bytes(rt) == before, "%s: a receive moved the counter", what);
	if (bytes)
		sc_to_host(rt, got, buf, bytes);
	check(memcmp(got, want, bytes) == 0, "%s: message %d (%lld %s) from rank %d does not hold its bytes", what,
	      salt, (long long)count, sc_dtype_name(dt), peer);
	free(want);
	free(got);
}

/* Every rank sends 1 MiB to the next before any receives (blocking sends
 * would wait for ever), overwrites the buffer and receives the previous
 * rank's message into it. */
static void send_ring(void)
{
	int next = (me + 1) % np, prev = (me + np - 1) % np;
	float *buf = t_slab((size_t)BIG * sizeof *buf);
	send_msg("send ring", next, buf, SC_F32, BIG, 40);
	recv_msg("send ring", prev, buf, SC_F32, BIG, 40);
	/* the 2-byte floats and int64 in one direction each, bit for bit */
	send_msg("send ring of float16, bfloat16, int64", next, buf, SC_F16, 300, 41);
	send_msg("send ring of float16, bfloat16, int64", next, buf, SC_BF16, 300, 42);
	send_msg("send ring of float16, bfloat16, int64", next, buf, SC_I64, 300, 43);
	recv_msg("send ring of float16, bfloat16, int64", prev, buf, SC_F16, 300, 41);
	recv_msg("send ring of float16, bfloat16, int64", prev, buf, SC_BF16, 300, 42);
	recv_msg("send ring of float16, bfloat16, int64", prev, buf, SC_I64, 300, 43);
	t_slab_reset();
}

/* Ranks 2k and 2k+1 as two pipeline stages under 1F1B: each posts AHEAD
 * sends (512 KiB each, past the eager limit) before its first receive, then
 * a send after each receive while any remain; one send buffer serves them
 * all. Every message has the same dtype and size, so a receive that took
 * the wrong one shows only by its salt. With an odd world the last rank
 * sits it out. */
static void one_f_one_b(void)
{
	enum { ROUNDS = 6, AHEAD = 2, N = BIG / 2 };
	int partner = me ^ 1;
	if (partner >= np)
		return;
	float *out = t_slab((size_t)N * sizeof *out), *in = t_slab((size_t)N * sizeof *in);
	for (int r = 0; r < AHEAD; r++)
		send_msg("1F1B", partner, out, SC_F32, N, 50 + r);
	for (int r = 0; r < ROUNDS; r++) {
		recv_msg("1F1B", partner, in, SC_F32, N, 50 + r);
		if (r + AHEAD < ROUNDS)
			send_msg("1F1B", partner, out, SC_F32, N, 50 + r + AHEAD);
	}
	t_slab_reset();
}

/* sc_p2p_flush waits for every send and frees every copy; traffic goes on
 * after it. Then ping-pongs of small messages between 2k and 2k+1: a send
 * is complete once its reply came back, so sc_p2p_recv (and the next
 * sc_p2p_send) must have freed it: a handful at most stay listed, not one
 * per round. */
static void flush_and_more(void)
{
	sc_p2p_flush(rt);
	check(rt->nsends == 0, "flush: %d sends still listed", rt->nsends);
	int next = (me + 1) % np, prev = (me + np - 1) % np;
	int32_t *buf = t_slab(64 * sizeof *buf);
	send_msg("after a flush", next, buf, SC_I32, 64, 60);
	send_msg("after a flush, no elements", next, buf, SC_I32, 0, 61);
	send_msg("after a flush", next, buf, SC_I32, 16, 62);
	recv_msg("after a flush", prev, buf, SC_I32, 64, 60);
	recv_msg("after a flush, no elements", prev, buf, SC_I32, 0, 61);
	recv_msg("after a flush", prev, buf, SC_I32, 16, 62);
	int partner = me ^ 1, most = 0;
	for (int r = 0; r < 32 && partner < np; r++) {
		if (me & 1) {
			recv_msg("ping-pong", partner, buf, SC_I32, 16, 70 + r);
			send_msg("ping-pong", partner, buf, SC_I32, 16, 70 + r);
		} else {
			send_msg("ping-pong", partner, buf, SC_I32, 16, 70 + r);
			recv_msg("ping-pong", partner, buf, SC_I32, 16, 70 + r);
		}
		most = rt->nsends > most ? rt->nsends : most;
	}
	check(most <= 4, "ping-pong: up to %d sends listed, their copies not freed by the receives", most);
	sc_p2p_flush(rt);
	check(rt->nsends == 0, "second flush: %d sends still listed", rt->nsends);
	t_slab_reset();
}

/* The last rank's loss (and a few more bytes) to every rank; nothing counted. */
static void broadcast(void)
{
	struct {
		float loss;
		int32_t from;
		char tag[8];
	} h = {0}, want = {2.5f + 0.25f * (float)np, np - 1, "stage"};
	if (me == np - 1)
		h = want;
	int64_t before = sc_comm_bytes(rt);
	sc_broadcast_host(rt, &h, sizeof h, np - 1);
	check(memcmp(&h, &want, sizeof h) == 0, "broadcast: got loss %g from %d, want %g from %d", (double)h.loss, h.from,
	      (double)want.loss, want.from);
	check(sc_comm_bytes(rt) == before, "broadcast: counted %lld bytes", (long long)(sc_comm_bytes(rt) - before));
	sc_broadcast_host(rt, NULL, 0, 0);   /* nothing, from rank 0 */
	sc_check_loss_host(rt, 3, h.loss);    /* finite: returns on every rank */
}

/* --fault NAME: one bad call on every rank, which must end the job before
 * anything is posted. An exchange lists a good receive, then a send to a
 * bad peer. */
static int fault(const char *name)
{
	float *buf = t_slab(2 * sizeof *buf);
	const char *which = strchr(name, '-') ? strchr(name, '-') + 1 : "";
	int peer = strcmp(which, "past") == 0 ? np : strcmp(which, "negative") == 0 ? -1 : me;
	if (strncmp(name, "exchange-", 9) == 0) {
		sc_p2p ops[2] = {{SC_RECV, (me + 1) % np, buf, SC_F32, 1}, {SC_SEND, peer, buf + 1, SC_F32, 1}};
		sc_p2p_exchange(rt, ops, 2);
	} else if (strncmp(name, "send-", 5) == 0) {
		sc_p2p_send(rt, peer, buf, SC_F32, 1);
	} else if (strncmp(name, "recv-", 5) == 0) {
		sc_p2p_recv(rt, peer, buf, SC_F32, 1);
	} else if (strcmp(name, "broadcast-root") == 0) {
		sc_broadcast_host(rt, buf, sizeof *buf, np);
	} else if (strcmp(name, "inf-loss") == 0) {
		float loss = me == np - 1 ? INFINITY : 0;
		sc_broadcast_host(rt, &loss, sizeof loss, np - 1);
		sc_check_loss_host(rt, 7, loss);
	} else {
		fprintf(stderr, "mpi_p2p: no fault named %s\n", name);
		sc_finalize(rt);
		return 2;
	}
	fprintf(stderr, "mpi_p2p: --fault %s went through\n", name);
	sc_finalize(rt);
	return 0;
}

int main(int argc, char **argv)
{
#ifdef SC_TEST_CUDA
	int ndev = 0;
	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
		printf("mpi_p2p: no CUDA device; skipped\n");
		return 0;
	}
#endif
	const char *bad = NULL;
	if (argc >= 3 && strcmp(argv[1], "--fault") == 0) {   /* ours, not an option sc_init knows */
		bad = argv[2];
		argv[2] = argv[0];
		argv += 2;
		argc -= 2;
	}
	rt = sc_init(&argc, &argv, 0);
	me = sc_rank(rt);
	np = sc_size(rt);
	t_slab_init(sc_slab(rt, SLAB), SLAB, "mpi_p2p");
	if (np < 2) {
		fprintf(stderr, "mpi_p2p: needs 2 ranks or more, has %d\n", np);
		sc_finalize(rt);
		return 1;
	}
	if (bad)
		return fault(bad);

	ring_shift();
	pairs();
	every_peer();
	send_ring();
	one_f_one_b();
	flush_and_more();
	broadcast();
	check(sc_comm_bytes(rt) == expect_bytes, "the counter holds %lld bytes, the sends add up to %lld",
	      (long long)sc_comm_bytes(rt), (long long)expect_bytes);

	sc_group *world = sc_group_split_grid(rt, 0, 1, (const int[]){np}, (const int[]){1});
	int32_t *tally = t_slab(8), h[2] = {checks, failures};
	sc_from_host(rt, tally, h, 8);
	sc_all_reduce(rt, world, tally, tally, SC_I32, 2, SC_SUM);
	sc_to_host(rt, h, tally, 8);
	if (me == 0)
		printf("mpi_p2p: %d checks on %d ranks, %d failed\n", h[0], np, h[1]);
	sc_finalize(rt);
	return h[1] ? 1 : 0;
}
