/* data.c: inputs that stream, a new batch every step (run.sh --data; docs/output.md,
 * Data that streams).
 *
 * Two kinds of source. A batch dataset, `--data NAME=FILE.npy`: a .npy of
 * shape (N, rest...) feeding an input of shape (B, rest...), N a multiple of
 * B; step s reads the N/B batches in turn (rows [kB, (k+1)B), wrapping),
 * or, with --shuffle, epoch by epoch in a permutation of the batches. A
 * token stream, `--data NAME=FILE:S`: tokens (llm.c's .bin, a headerless
 * uint16 .bin, a 1-D int32 .npy) cut into samples of S+1 consecutive
 * tokens, input NAME taking the first S of each and `--labels LNAME` the
 * last S; sample starts are sequential, or drawn with --shuffle. Every
 * choice is a function of (SEED, step, sample) alone (sc_data_draw), so the
 * batches are the same on any rank count and plan, and tools/ref_eval.py
 * reproduces them.
 *
 * Each rank reads only its piece of each batch, with pread: the runs of
 * contiguous elements the piece is made of (sc_slice_runs), or, of a token
 * stream, the stretch of each sample the piece holds. One reader thread per
 * program reads step s+1's pieces into host buffers while step s computes
 * (double buffering, by the step's parity); sc_data_step waits for it, agrees
 * with the other ranks on any problem the reader met (a short read, a token
 * id outside the vocabulary), hands the pieces to the program and asks for
 * the next batch. On the cpu backend the host buffers are slab memory and
 * the program's input pointers move onto the step's (sc_data_at: nothing
 * is copied, the step reads what pread wrote); on cuda sc_data_step copies
 * them into the slab. The reader makes no MPI call (sc_init asks MPI for
 * MPI_THREAD_FUNNELED). The sc_src_* functions are pure host code, so the
 * unit tests call them without MPI. */
#include "rt_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum {
	LLMC_MAGIC = 20240520,         /* llm.c's GPT-2 token files: header[0] */
	LLMC_MAGIC_LLAMA3 = 20240801,  /* its Llama 3 files (uint32 tokens): refused */
	LLMC_HEADER = 256 * 4,         /* 256 int32: magic, version 1, token count, zeros */
};

static void *xmalloc0(size_t n)
{
	void *p = calloc(n ? n : 1, 1);
	if (!p)
		SC_DIE("out of memory");
	return p;
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ---- the rules: which batch, which samples ---- */

uint64_t sc_data_draw(uint64_t seed, uint64_t j)
{
	return sc_splitmix64(seed * 0x9e3779b97f4a7c15ull + j);
}

void sc_data_perm(uint64_t seed, int64_t epoch, int64_t nb, int64_t *perm)
{
	for (int64_t i = 0; i < nb; i++)
		perm[i] = i;
	for (int64_t i = nb - 1; i > 0; i--) {   /* Fisher-Yates, from the last */
		int64_t j = (int64_t)(sc_data_draw(seed, (uint64_t)(epoch * nb + i)) % (uint64_t)(i + 1)), t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
}

int64_t sc_src_batch(sc_src *s, int64_t step)
{
	int64_t nb = s->n / s->batch, k = (step - 1) % nb, epoch = (step - 1) / nb;
	if (!s->shuffle)
		return k;
	if (s->epoch != epoch) {
		sc_data_perm(s->seed, epoch, nb, s->perm);
		s->epoch = epoch;
	}
	return s->perm[k];
}

int64_t sc_src_sample_start(const sc_src *s, int64_t step, int64_t i)
{
	int64_t q = (step - 1) * s->batch + i;   /* the sample's index in the run */
	if (s->shuffle)
		return (int64_t)(sc_data_draw(s->seed, (uint64_t)q) % (uint64_t)(s->n - s->S));
	return q % ((s->n - 1) / s->S) * s->S;
}

/* ---- opening a source ---- */

/* Whether a --data value is a token stream, FILE:S (S digits after the last colon). */
static bool is_token_spec(const char *spec)
{
	const char *colon = strrchr(spec, ':');
	return colon && colon[1] && strspn(colon + 1, "0123456789") == strlen(colon + 1);
}

/* path opened for reading (a regular file), its size in *size; -1 and why. */
static int open_file(const char *path, int64_t *size, char *err, size_t n)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0) {
		sc_fail(err, n, "cannot be opened: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		sc_fail(err, n, "is %s, not a file", S_ISDIR(st.st_mode) ? "a directory" : S_ISFIFO(st.st_mode) ? "a FIFO"
		     : "not a regular file");
		close(fd);
		return -1;
	}
	*size = (int64_t)st.st_size;
	return fd;
}

/* The .npy header of fd, read through a FILE on a copy of it. */
static bool npy_header(int fd, sc_npy_header *h, char *err, size_t n)
{
	int fd2 = dup(fd);
	FILE *f = fd2 >= 0 ? fdopen(fd2, "rb") : NULL;
	if (!f) {
		if (fd2 >= 0)
			close(fd2);
		return sc_fail(err, n, "cannot be read: %s", strerror(errno));
	}
	bool ok = sc_npy_read_header(f, h, err, n);
	fclose(f);
	return ok;
}

static bool read_at(int fd, void *dst, size_t bytes, int64_t at, char *err, size_t n)
{
	char *p = dst;
	while (bytes) {
		ssize_t k = pread(fd, p, bytes, (off_t)at);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return sc_fail(err, n, "cannot be read at byte %lld: %s", (long long)at, k < 0 ? strerror(errno)
			            : "the file ends there");
		p += k;
		at += k;
		bytes -= (size_t)k;
	}
	return true;
}

/* The real part of f's piece (sc_piece_real): what is read; the rest is
 * padding, 0. */
static bool feed_real(const sc_feed *f, int64_t *real)
{
	return sc_piece_real(f->name, f->gdims, f->ndim, f->start, f->ldims, real);
}

static bool is_npy(int fd, int64_t size)
{
	char magic[6];
	return size >= 6 && pread(fd, magic, 6, 0) == 6 && memcmp(magic, "\x93NUMPY", 6) == 0;
}

/* A batch dataset: shape (N, rest...) against the input's (B, rest...). */
static bool open_rows(sc_src *s, int64_t size, char *err, size_t n)
{
	const sc_feed *f = s->feed[0];
	sc_npy_header h;
	char a[256], b[256], c[256];
	if (!is_npy(s->fd, size))
		return sc_fail(err, n, "is not a .npy file (a token stream is given as FILE:S)");
	if (!npy_header(s->fd, &h, err, n))
		return false;
	if (h.dt != sc_npy_file_dt(f->dt))
		return sc_fail(err, n, "has dtype %s ('%s'), expected %s ('%s'%s)", sc_dtype_name(h.dt), sc_npy_descr(h.dt),
		            sc_dtype_name(f->dt), sc_npy_descr(f->dt), f->dt == SC_BF16 ? ": float32 holding bfloat16 values"
		            : "");
	if (f->ndim == 0)
		return sc_fail(err, n, "cannot feed a scalar input, which has no batch dim");
	bool same = h.ndim == f->ndim;
	for (int d = 1; same && d < f->ndim; d++)
		same = h.dims[d] == f->gdims[d];
	if (!same || h.dims[0] == 0 || h.dims[0] % f->gdims[0]) {
		int at = snprintf(b, sizeof b, "(N");
		for (int d = 1; d < f->ndim; d++)
			at += snprintf(b + at, sizeof b - (size_t)at, ", %lld", (long long)f->gdims[d]);
		snprintf(b + at, sizeof b - (size_t)at, f->ndim == 1 ? ",)" : ")");
		return sc_fail(err, n, "has shape %s, expected %s with N a multiple of %lld, the batch of the input, which is %s",
		            sc_dims_str(a, sizeof a, h.dims, h.ndim), b, (long long)f->gdims[0],
		            sc_dims_str(c, sizeof c, f->gdims, f->ndim));
	}
	s->offset = h.data_offset;
	s->fdt = h.dt;
	s->n = h.dims[0];
	s->batch = f->gdims[0];
	s->row = sc_numel(f->gdims + 1, f->ndim - 1);
	int64_t need = s->n * s->row * (int64_t)sc_dtype_size(h.dt);
	if (size - s->offset < need)
		return sc_fail(err, n, "is truncated: %lld bytes of data, expected %lld", (long long)(size - s->offset),
		            (long long)need);
	int64_t run, nruns, real[SC_MAX_DIMS];
	bool padded = feed_real(f, real);
	int k = sc_slice_runs(f->gdims, f->ndim, real, &run, &nruns);
	s->run[0] = run;
	s->nruns[0] = nruns;
	s->runs[0] = xmalloc0((size_t)nruns * sizeof(int64_t));
	for (int64_t r = 0; r < nruns; r++)
		s->runs[0][r] = sc_run_offset(f->gdims, f->ndim, f->start, real, k, r);
	s->raw = f->dt == SC_BF16 ? xmalloc0((size_t)(run * nruns) * sc_dtype_size(h.dt)) : NULL;
	/* A piece that is one run of the file's own bytes, aligned for its type (a
	 * batch split along dim 0 only): mapped, the program reads it in place.
	 * bfloat16 is rounded and bool normalized on the way, and a piece with
	 * padding is spread over its layout, so those are read. */
	if (nruns == 1 && !padded && f->dt != SC_BF16 && f->dt != SC_BOOL && !(f->bound >= 0 && f->unchecked) &&
	    s->offset % (int64_t)sc_dtype_size(h.dt) == 0) {
		void *m = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, s->fd, 0);
		if (m != MAP_FAILED) {   /* else pread, as for any other piece */
			s->map = m;
			s->map_bytes = (size_t)size;
			s->touched = xmalloc0((size_t)(s->n / s->batch) * sizeof *s->touched);
		}
	}
	s->perm = s->shuffle ? xmalloc0((size_t)(s->n / s->batch) * sizeof(int64_t)) : NULL;
	return true;
}

/* Where the tokens are (docs/output.md): a .npy (its magic) must be 1-D
 * int32; a file whose first int32 is 20240520 is llm.c's (a header of 256
 * int32: the magic, version 1, the token count; then uint16 tokens); any
 * other file is uint16 tokens from its first byte (nanoGPT's). */
static bool token_format(sc_src *s, int64_t size, char *err, size_t n)
{
	if (is_npy(s->fd, size)) {
		sc_npy_header h;
		char a[256];
		if (!npy_header(s->fd, &h, err, n))
			return false;
		if (h.dt != SC_I32 || h.ndim != 1)
			return sc_fail(err, n, "is a .npy of %s %s: a token stream .npy is 1-D int32 ('<i4')", sc_dtype_name(h.dt),
			            sc_dims_str(a, sizeof a, h.dims, h.ndim));
		s->format = ".npy, int32";
		s->tok_bytes = 4;
		s->offset = h.data_offset;
		s->n = h.dims[0];
		if (size - s->offset < 4 * s->n)
			return sc_fail(err, n, "is truncated: %lld bytes of data, expected %lld", (long long)(size - s->offset),
			            (long long)(4 * s->n));
		return true;
	}
	int32_t head[3] = {0, 0, 0};
	if (size >= 12 && !read_at(s->fd, head, sizeof head, 0, err, n))
		return false;
	s->tok_bytes = 2;
	if (head[0] == LLMC_MAGIC_LLAMA3)
		return sc_fail(err, n, "is llm.c's Llama 3 format (magic %d, uint32 tokens), which is not read: GPT-2's "
		            "(magic %d, uint16 tokens) is", LLMC_MAGIC_LLAMA3, LLMC_MAGIC);
	if (head[0] == LLMC_MAGIC) {
		if (head[1] != 1)
			return sc_fail(err, n, "is an llm.c .bin of version %d (version 1, uint16 tokens, is read)", head[1]);
		if (size != LLMC_HEADER + 2 * (int64_t)head[2] || head[2] < 0)
			return sc_fail(err, n, "has %lld bytes, but its llm.c header says %d tokens (%lld bytes)", (long long)size,
			            head[2], (long long)(LLMC_HEADER + 2 * (int64_t)head[2]));
		s->format = "llm.c .bin, uint16";
		s->offset = LLMC_HEADER;
		s->n = head[2];
		return true;
	}
	if (size % 2)
		return sc_fail(err, n, "has an odd number of bytes (%lld): not uint16 tokens (nor a .npy, nor llm.c's .bin)",
		            (long long)size);
	s->format = "headerless .bin, uint16";
	s->offset = 0;
	s->n = size / 2;
	return true;
}

/* The segments of feed f's piece: for each run of its elements (in the
 * global flat order, sample i holding [iS, (i+1)S)), the part in each
 * sample, as (sample, position in the sample, length, place in the piece). */
static void token_segments(sc_src *s, int which)
{
	const sc_feed *f = s->feed[which];
	int64_t run, nruns, cap = 16, nseg = 0, *seg = xmalloc0((size_t)cap * 4 * sizeof *seg), real[SC_MAX_DIMS];
	feed_real(f, real);   /* places in the real part, packed */
	int k = sc_slice_runs(f->gdims, f->ndim, real, &run, &nruns);
	for (int64_t r = 0; r < nruns; r++) {
		int64_t a = sc_run_offset(f->gdims, f->ndim, f->start, real, k, r), left = run, at = r * run;
		while (left > 0) {
			int64_t i = a / s->S, pos = a % s->S, len = s->S - pos < left ? s->S - pos : left;
			int64_t *last = nseg ? seg + 4 * (nseg - 1) : NULL;
			if (last && last[0] == i && last[1] + last[2] == pos && last[3] + last[2] == at) {
				last[2] += len;   /* runs that continue one another in a sample */
			} else {
				if (nseg == cap) {
					cap *= 2;
					seg = realloc(seg, (size_t)cap * 4 * sizeof *seg);
					if (!seg)
						SC_DIE("out of memory");
				}
				int64_t *e = seg + 4 * nseg++;
				e[0] = i, e[1] = pos, e[2] = len, e[3] = at;
			}
			a += len;
			at += len;
			left -= len;
		}
	}
	s->runs[which] = seg;
	s->nruns[which] = nseg;
}

/* A token stream: the format, then the inputs it feeds (integers, numel a
 * multiple of S, the labels as many) and one step's tokens at least. */
static bool open_tokens(sc_src *s, int64_t size, char *err, size_t n)
{
	const sc_feed *f = s->feed[0], *l = s->feed[1];
	char a[256];
	for (int w = 0; w < 2; w++) {
		const sc_feed *g = s->feed[w];
		if (g && g->dt != SC_I32 && g->dt != SC_I64)
			return sc_fail(err, n, "is a token stream, which feeds Int32 or Int64 inputs; '%s' is %s", g->name,
			            sc_dtype_name(g->dt));
	}
	int64_t count = sc_numel(f->gdims, f->ndim);
	if (count % s->S)
		return sc_fail(err, n, "cannot be cut into samples of %lld tokens for '%s', which is %s (%lld elements, not a "
		            "multiple of %lld)", (long long)s->S, f->name, sc_dims_str(a, sizeof a, f->gdims, f->ndim),
		            (long long)count, (long long)s->S);
	if (l && sc_numel(l->gdims, l->ndim) != count)
		return sc_fail(err, n, "gives '%s' %lld tokens a step, but its labels '%s' are %s (%lld elements)", f->name,
		            (long long)count, l->name, sc_dims_str(a, sizeof a, l->gdims, l->ndim),
		            (long long)sc_numel(l->gdims, l->ndim));
	if (!token_format(s, size, err, n))
		return false;
	s->batch = count / s->S;
	if (s->n < s->batch * s->S + 1)
		return sc_fail(err, n, "holds %lld tokens (%s), too few for one step: %lld samples of %lld tokens need %lld",
		            (long long)s->n, s->format, (long long)s->batch, (long long)s->S + 1,
		            (long long)(s->batch * s->S + 1));
	int64_t most = 0;
	for (int w = 0; w < 2; w++)
		if (s->feed[w]) {
			token_segments(s, w);
			int64_t c = sc_numel(s->feed[w]->ldims, s->feed[w]->ndim);
			most = c > most ? c : most;
		}
	s->raw = xmalloc0((size_t)most * (size_t)s->tok_bytes);
	return true;
}

bool sc_src_open(sc_src *s, const char *spec, sc_feed *in, sc_feed *labels, bool shuffle, uint64_t seed, char *err,
                 size_t n)
{
	memset(s, 0, sizeof *s);
	s->fd = -1;
	s->epoch = -1;
	s->feed[0] = in;
	s->feed[1] = labels;
	s->shuffle = shuffle;
	s->seed = seed;
	const char *colon = strrchr(spec, ':');
	bool tokens = is_token_spec(spec);
	size_t plen = tokens ? (size_t)(colon - spec) : strlen(spec);
	s->path = xmalloc0(plen + 1);
	memcpy(s->path, spec, plen);
	s->kind = tokens ? SC_SRC_TOKENS : SC_SRC_ROWS;
	if (tokens) {
		errno = 0;
		long long S = strtoll(colon + 1, NULL, 10);
		if (errno || S < 1)
			return sc_fail(err, n, "has sample length '%s': expected a positive integer", colon + 1);
		s->S = S;
	}
	int64_t size;
	if ((s->fd = open_file(s->path, &size, err, n)) < 0)
		return false;
	return tokens ? open_tokens(s, size, err, n) : open_rows(s, size, err, n);
}

void sc_src_close(sc_src *s)
{
	if (s->map)
		munmap((void *)(uintptr_t)s->map, s->map_bytes);
	free(s->touched);
	if (s->fd >= 0)
		close(s->fd);
	for (int w = 0; w < 2; w++)
		free(s->runs[w]);
	free(s->raw);
	free(s->perm);
	free(s->path);
	memset(s, 0, sizeof *s);
	s->fd = -1;
}

/* ---- reading a step's batch ---- */

/* Faults in the pages of [p, p + bytes) of a mapping, here and not in the
 * step. Once a batch's are in, they stay (unless memory runs short: then the
 * step faults them in again, slower but right), so each batch is touched in
 * the first epoch only. */
static void touch(const char *p, size_t bytes)
{
	static long page;
	if (!page)
		page = sysconf(_SC_PAGESIZE);
	uintptr_t first = (uintptr_t)p / (uintptr_t)page * (uintptr_t)page;
	posix_madvise((void *)first, (size_t)((uintptr_t)p + bytes - first), POSIX_MADV_WILLNEED);
	volatile char sink = 0;
	for (size_t i = 0; i < bytes; i += (size_t)page)
		sink ^= p[i];
	(void)sink;
}

static bool read_rows(sc_src *s, int64_t step, int parity, char *err, size_t n)
{
	sc_feed *f = s->feed[0];
	size_t es = sc_dtype_size(s->fdt);
	int64_t b = sc_src_batch(s, step), base = b * s->batch * s->row, run = s->run[0], count = run * s->nruns[0];
	int64_t real[SC_MAX_DIMS];   /* the runs are its; read packed, spread over the piece once checked */
	feed_real(f, real);
	const void *dst;
	if (s->map) {   /* one run: the piece is the file's bytes */
		dst = f->at[parity] = s->map + s->offset + (base + s->runs[0][0]) * (int64_t)es;
		if (!s->touched[b])
			touch(dst, (size_t)count * es);
		s->touched[b] = true;
	} else {
		dst = f->at[parity] = f->host[parity];
		char *raw = f->dt == SC_BF16 ? s->raw : f->host[parity];   /* bfloat16 is read as float32, then rounded */
		for (int64_t r = 0; r < s->nruns[0]; r++)
			if (!read_at(s->fd, raw + (size_t)(r * run) * es, (size_t)run * es,
			             s->offset + (base + s->runs[0][r]) * (int64_t)es, err, n))
				return false;
	}
	if (f->dt == SC_BF16)
		sc_host_narrow(s->raw, f->host[parity], SC_BF16, count);
	else if (f->dt == SC_BOOL)   /* normalized to 0/1 */
		for (int64_t i = 0; i < count; i++)
			((unsigned char *)f->host[parity])[i] = ((unsigned char *)f->host[parity])[i] != 0;
	int64_t bad = f->bound >= 0 ? sc_indices_outside((void *)dst, f->dt, count, f->bound, f->unchecked) : -1;
	if (bad < 0) {   /* (marking writes: a feed of unchecked ids is never mapped, open_rows) */
		if (!s->map)
			sc_piece_pad(f->host[parity], sc_dtype_size(f->dt), f->ndim, real, f->ldims);
		return true;
	}
	int64_t at[SC_MAX_DIMS], rest = bad;
	for (int d = f->ndim - 1; d >= 0; d--) {
		at[d] = f->start[d] + rest % real[d];
		rest /= real[d];
	}
	at[0] += b * s->batch;   /* the row in the file */
	char where[256];
	return sc_fail(err, n, "holds %lld at %s (read for step %lld), outside [0, %lld): %s",
	            (long long)sc_index_at(dst, f->dt, bad), sc_dims_str(where, sizeof where, at, f->ndim), (long long)step,
	            (long long)f->bound, f->what);
}

static bool read_tokens(sc_src *s, int which, int64_t step, void *dst, char *err, size_t n)
{
	const sc_feed *f = s->feed[which];
	const int64_t *seg = s->runs[which];
	int64_t tb = s->tok_bytes;
	for (int64_t k = 0; k < s->nruns[which];) {   /* segments whose tokens follow one another: one read */
		int64_t first = sc_src_sample_start(s, step, seg[4 * k]) + seg[4 * k + 1] + which, len = seg[4 * k + 2];
		int64_t at = seg[4 * k + 3], j = k + 1;
		for (; j < s->nruns[which]; j++) {
			const int64_t *e = seg + 4 * j;
			if (e[3] != at + len || sc_src_sample_start(s, step, e[0]) + e[1] + which != first + len)
				break;
			len += e[2];
		}
		if (!read_at(s->fd, (char *)s->raw + at * tb, (size_t)(len * tb), s->offset + first * tb, err, n))
			return false;
		k = j;
	}
	int64_t real[SC_MAX_DIMS];   /* the segments' places are in it, packed */
	feed_real(f, real);
	int64_t count = sc_numel(real, f->ndim);
	for (int64_t i = 0; i < count; i++) {
		int64_t v = tb == 2 ? (int64_t)((const uint16_t *)s->raw)[i] : (int64_t)((const int32_t *)s->raw)[i];
		if (f->dt == SC_I64)
			((int64_t *)dst)[i] = v;
		else
			((int32_t *)dst)[i] = (int32_t)v;
	}
	int64_t bad = f->bound >= 0 ? sc_indices_outside(dst, f->dt, count, f->bound, f->unchecked) : -1;
	if (bad < 0) {
		sc_piece_pad(dst, sc_dtype_size(f->dt), f->ndim, real, f->ldims);
		return true;
	}
	for (int64_t k = 0; k < s->nruns[which]; k++) {   /* the token's place in the file */
		const int64_t *e = seg + 4 * k;
		if (bad >= e[3] && bad < e[3] + e[2])
			return sc_fail(err, n, "holds %lld at token %lld (read for step %lld), outside [0, %lld): %s",
			            (long long)sc_index_at(dst, f->dt, bad),
			            (long long)(sc_src_sample_start(s, step, e[0]) + e[1] + which + bad - e[3]), (long long)step,
			            (long long)f->bound, f->what);
	}
	SC_DIE("token %lld of the piece is in no segment", (long long)bad);
}

bool sc_src_read(sc_src *s, int64_t step, int parity, char *err, size_t n)
{
	s->bad_feed = 0;
	if (s->kind == SC_SRC_ROWS)
		return read_rows(s, step, parity, err, n);
	for (int w = 0; w < 2; w++) {
		if (!s->feed[w])
			continue;
		s->feed[w]->at[parity] = s->feed[w]->host[parity];
		if (!read_tokens(s, w, step, s->feed[w]->host[parity], err, n)) {
			s->bad_feed = w;
			return false;
		}
	}
	return true;
}

/* ---- the program's side: registering, the reader thread, each step ---- */

struct sc_data {
	sc_rt *rt;
	sc_feed *feeds;              /* every input the program registered; streamed ones have src >= 0 */
	int nfeeds, capfeeds;
	sc_src *srcs;
	int nsrcs;
	int64_t steps;
	pthread_t reader;
	bool running;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int64_t want, ready;         /* the step whose batch is asked for, the last one read */
	bool stop;
	char err[1200];              /* the reader's problem, at step ready (err[0]: none) */
	int err_src;                 /* the source it concerns */
	double busy, waited, copied; /* seconds: the reader's; the steps' waiting for it, copying the pieces in */
	double first, last;          /* when the first and the last step began */
	int64_t first_step;          /* the first step read: 1, or after a resumed checkpoint's */
	int parity;                  /* the step's (sc_data_step): which of a feed's host buffers is its */
};

sc_data *sc_data_new(sc_rt *rt)
{
	sc_data *d = xmalloc0(sizeof *d);
	d->rt = rt;
	return d;
}

/* The labels input (--labels), else NULL. */
static const char *labels_name(sc_data *d)
{
	return sc_option(d->rt, "--labels", NULL);
}

int sc_data_input(sc_data *d, const char *name, void *dst, sc_dtype dt, const int64_t *gdims, int ndim,
                  const int64_t *start, const int64_t *ldims, int64_t bound, const char *what)
{
	if (ndim < 0 || ndim > SC_MAX_DIMS)
		SC_DIE("sc_data_input: %d dims", ndim);
	if (d->nfeeds == d->capfeeds) {
		d->capfeeds = d->capfeeds ? 2 * d->capfeeds : 8;
		d->feeds = realloc(d->feeds, (size_t)d->capfeeds * sizeof *d->feeds);
		if (!d->feeds)
			SC_DIE("out of memory");
	}
	sc_feed *f = &d->feeds[d->nfeeds++];
	memset(f, 0, sizeof *f);
	f->name = name;
	f->dst = dst;
	f->dt = dt;
	f->ndim = ndim;
	memcpy(f->gdims, gdims, (size_t)ndim * sizeof *gdims);
	memcpy(f->start, start, (size_t)ndim * sizeof *start);
	memcpy(f->ldims, ldims, (size_t)ndim * sizeof *ldims);
	f->bound = bound;
	f->unchecked = sc_option(d->rt, "--unchecked-ids", NULL) != NULL;
	f->what = what ? what : "";
	f->src = -1;
	const char *l = labels_name(d);
	return sc_option(d->rt, "--data", name) || (l && strcmp(l, name) == 0);
}

static sc_feed *find_feed(sc_data *d, const char *name, size_t len)
{
	for (int i = 0; i < d->nfeeds; i++)
		if (strlen(d->feeds[i].name) == len && strncmp(d->feeds[i].name, name, len) == 0)
			return &d->feeds[i];
	return NULL;
}

static void *reader_main(void *arg)
{
	sc_data *d = arg;
	pthread_mutex_lock(&d->mu);
	for (;;) {
		while (!d->stop && d->want <= d->ready)
			pthread_cond_wait(&d->cv, &d->mu);
		if (d->stop)
			break;
		int64_t step = d->want;
		pthread_mutex_unlock(&d->mu);
		double t0 = now();
		char err[sizeof d->err] = "";
		int bad = -1;
		for (int i = 0; i < d->nsrcs && bad < 0; i++)
			if (!sc_src_read(&d->srcs[i], step, (int)(step & 1), err, sizeof err))
				bad = i;
		double t = now() - t0;
		pthread_mutex_lock(&d->mu);
		d->busy += t;
		if (bad >= 0) {
			memcpy(d->err, err, sizeof err);
			d->err_src = bad;
		}
		d->ready = step;
		pthread_cond_broadcast(&d->cv);
	}
	pthread_mutex_unlock(&d->mu);
	return NULL;
}

/* "shardc: input 'x': --data x.npy " for a message about source s (the
 * input its last read failed for). */
static int src_prefix(char *msg, size_t n, const sc_src *s)
{
	char c1[SC_NAME_BUF], c2[SC_NAME_BUF];
	const char *name = s->feed[s->bad_feed] ? s->feed[s->bad_feed]->name : "?";
	return snprintf(msg, n, "shardc: input '%s': --data %s ", sc_cut(c1, name, strlen(name)),
	                sc_cut(c2, s->path ? s->path : "", s->path ? strlen(s->path) : 0));
}

/* The command line's --data, --labels and --shuffle against the inputs; one
 * message for the first problem ("" when none). */
static void check_options(sc_data *d, uint64_t *seed, bool *shuffle, char *msg, size_t n)
{
	char c1[SC_NAME_BUF], c2[SC_NAME_BUF];
	msg[0] = '\0';
	int ntok = 0;
	const char *v;
	for (int i = 0; (v = sc_option_next(d->rt, "--data", &i));) {
		const char *eq = strchr(v, '=');
		sc_feed *f = find_feed(d, v, (size_t)(eq - v));
		if (!f) {
			int at = snprintf(msg, n, "shardc: --data %s: the model has no input named '%s' (it has:",
			                  sc_cut(c1, v, strlen(v)), sc_cut(c2, v, (size_t)(eq - v)));
			for (int j = 0; j < d->nfeeds && at > 0 && (size_t)at < n; j++)
				at += snprintf(msg + at, n - (size_t)at, " %s", sc_cut(c1, d->feeds[j].name,
				                                                         strlen(d->feeds[j].name)));
			if (at > 0 && (size_t)at < n)
				snprintf(msg + at, n - (size_t)at, "%s)", d->nfeeds ? "" : " none");
			return;
		}
		if (sc_option(d->rt, "--input", f->name)) {
			snprintf(msg, n, "shardc: input '%s' is given by both --input and --data", sc_cut(c1, f->name,
			                                                                                    strlen(f->name)));
			return;
		}
		ntok += is_token_spec(eq + 1);
	}
	const char *l = labels_name(d);
	if (l) {
		const char *data = sc_option(d->rt, "--data", l);
		if (!find_feed(d, l, strlen(l)))
			snprintf(msg, n, "shardc: --labels %s: the model has no input named '%s'", sc_cut(c1, l, strlen(l)),
			         sc_cut(c2, l, strlen(l)));
		else if (sc_option(d->rt, "--input", l) || data)
			snprintf(msg, n, "shardc: --labels %s: that input is given by --%s too (the token stream feeds it)",
			         sc_cut(c1, l, strlen(l)), data ? "data" : "input");
		else if (ntok != 1)
			snprintf(msg, n, "shardc: --labels %s needs exactly one token stream (--data NAME=FILE:S), not %d",
			         sc_cut(c1, l, strlen(l)), ntok);
		if (msg[0])
			return;
	}
	const char *sv = sc_option(d->rt, "--shuffle", NULL);
	*shuffle = sv != NULL;
	if (sv) {
		char *end;
		errno = 0;
		*seed = strtoull(sv, &end, 10);
		if (*sv < '0' || *sv > '9' || errno || *end)
			snprintf(msg, n, "shardc: --shuffle '%s': expected a seed, an integer in [0, 2^64)",
			         sc_cut(c1, sv, strlen(sv)));
		else if (!sc_option(d->rt, "--data", NULL))
			snprintf(msg, n, "shardc: --shuffle %s without --data: nothing to shuffle", sc_cut(c1, sv, strlen(sv)));
	}
}

void sc_data_start(sc_rt *rt, sc_data *d, int64_t first, int64_t steps)
{
	char msg[1600];
	uint64_t seed = 0;
	bool shuffle = false;
	check_options(d, &seed, &shuffle, msg, sizeof msg);
	sc_agree_or_exit(rt, msg[0] == '\0', msg);
	d->steps = steps;
	d->first_step = first;
	d->srcs = xmalloc0((size_t)(d->nfeeds ? d->nfeeds : 1) * sizeof *d->srcs);
	const char *l = labels_name(d);
	bool ok = true;
	for (int i = 0; i < d->nfeeds && ok; i++) {   /* one source per --data, in the inputs' order */
		sc_feed *f = &d->feeds[i];
		const char *spec = sc_option(rt, "--data", f->name);
		if (!spec)
			continue;
		sc_feed *lf = is_token_spec(spec) && l ? find_feed(d, l, strlen(l)) : NULL;
		sc_src *s = &d->srcs[d->nsrcs++];
		char why[1024];
		ok = sc_src_open(s, spec, f, lf, shuffle, seed, why, sizeof why);
		if (!ok) {
			int at = src_prefix(msg, sizeof msg, s);
			snprintf(msg + at, sizeof msg - (size_t)at, "%s", why);
		}
		for (int w = 0; ok && w < 2; w++)
			if (s->feed[w]) {
				s->feed[w]->src = d->nsrcs - 1;
				size_t bytes = (size_t)sc_numel(s->feed[w]->ldims, s->feed[w]->ndim) * sc_dtype_size(s->feed[w]->dt);
				s->feed[w]->bytes = bytes;
				for (int k = 0; k < 2 && !s->map; k++)   /* slab memory on the cpu: the program reads it there */
					s->feed[w]->host[k] = sc_be_host_memory ? sc_slab(rt, bytes) : xmalloc0(bytes);
			}
	}
	sc_agree_or_exit(rt, ok, msg);
	/* .npy datasets read batch s together (and, shuffled, in one order): an
	 * input and its labels must hold as many batches, or they would pair
	 * batches that do not belong together once the shorter one wraps */
	const sc_src *first_rows = NULL;
	for (int i = 0; i < d->nsrcs && ok; i++) {
		const sc_src *s = &d->srcs[i];
		if (s->kind != SC_SRC_ROWS)
			continue;
		if (first_rows && s->n / s->batch != first_rows->n / first_rows->batch) {
			char c1[SC_NAME_BUF], c2[SC_NAME_BUF];
			int64_t a = first_rows->n / first_rows->batch, b = s->n / s->batch;
			snprintf(msg, sizeof msg, "shardc: --data %s holds %lld batches of %lld rows but --data %s holds %lld of "
			         "%lld: the datasets a step reads together (an input and its labels) must hold as many batches, "
			         "or their batches would pair up wrongly; give both the same number (e.g. the first %lld of "
			         "each)", sc_cut(c1, first_rows->path, strlen(first_rows->path)), (long long)a,
			         (long long)first_rows->batch, sc_cut(c2, s->path, strlen(s->path)), (long long)b,
			         (long long)s->batch, (long long)(a < b ? a : b));
			ok = false;
		}
		first_rows = first_rows ? first_rows : s;
	}
	sc_agree_or_exit(rt, ok, msg);
	if (!d->nsrcs)
		return;
	pthread_mutex_init(&d->mu, NULL);
	pthread_cond_init(&d->cv, NULL);
	d->want = first;   /* the first step's batch, while the program goes on to its loop */
	if (pthread_create(&d->reader, NULL, reader_main, d) != 0)
		SC_DIE("cannot start the data reader thread");
	d->running = true;
}

void sc_data_step(sc_rt *rt, sc_data *d, int64_t step)
{
	if (!d->running)
		return;
	double t0 = now();
	if (step == d->first_step)
		d->first = t0;
	d->last = t0;
	pthread_mutex_lock(&d->mu);
	if (d->want != step)
		SC_DIE("sc_data_step: step %lld, but the reader was asked for %lld", (long long)step, (long long)d->want);
	while (d->ready < step)
		pthread_cond_wait(&d->cv, &d->mu);
	pthread_mutex_unlock(&d->mu);
	d->waited += now() - t0;
	char msg[1600] = "";
	if (d->err[0]) {
		int at = src_prefix(msg, sizeof msg, &d->srcs[d->err_src]);
		snprintf(msg + at, sizeof msg - (size_t)at, "%s", d->err);
	}
	sc_agree_or_exit(rt, !d->err[0], msg);
	d->parity = (int)(step & 1);
	double t2 = now();
	for (int i = 0; i < d->nfeeds && !sc_be_host_memory; i++)
		if (d->feeds[i].src >= 0)
			sc_from_host(rt, d->feeds[i].dst, d->feeds[i].at[d->parity], d->feeds[i].bytes);
	d->copied += now() - t2;
	if (step < d->steps) {   /* the next batch, read while this step computes */
		pthread_mutex_lock(&d->mu);
		d->want = step + 1;
		pthread_cond_signal(&d->cv);
		pthread_mutex_unlock(&d->mu);
	}
}

void *sc_data_at(const sc_data *d, int k)
{
	if (k < 0 || k >= d->nfeeds)
		SC_DIE("sc_data_at: input %d of %d", k, d->nfeeds);
	const sc_feed *f = &d->feeds[k];
	/* A mapped file's bytes are read-only: the program writes no input. */
	return f->src >= 0 && sc_be_host_memory ? (void *)(uintptr_t)f->at[d->parity] : f->dst;
}

int sc_data_fed(const sc_data *d, int k)
{
	if (k < 0 || k >= d->nfeeds)
		SC_DIE("sc_data_fed: input %d of %d", k, d->nfeeds);
	return d->feeds[k].src >= 0;
}

void sc_data_close(sc_rt *rt, sc_data *d)
{
	if (d->running) {
		pthread_mutex_lock(&d->mu);
		d->stop = true;
		pthread_cond_signal(&d->cv);
		pthread_mutex_unlock(&d->mu);
		pthread_join(d->reader, NULL);
		pthread_mutex_destroy(&d->mu);
		pthread_cond_destroy(&d->cv);
		/* The slowest rank's figures, a batch each; a step is rank 0's time from the
		 * first step's start to the last's. */
		double mine[3] = {d->busy, d->waited, d->copied}, most[3];
		SC_MPI_CHECK(MPI_Reduce(mine, most, 3, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD));
		double n = (double)(d->ready - d->first_step + 1), step = n > 1 ? (d->last - d->first) / (n - 1) : 0;
		if (rt->rank == 0) {
			printf("data: %lld batches; the reader thread took %.4g ms a batch", (long long)d->ready,
			       1e3 * most[0] / n);
			if (step > 0)
				printf(" (%.3g%% of a step, %.4g ms)", 100 * most[0] / n / step, 1e3 * step);
			printf("; a step waited %.4g ms for it and took %.4g ms to put its batch in place (the slowest rank's)\n",
			       1e3 * most[1] / n, 1e3 * most[2] / n);
			fflush(stdout);
		}
	}
	for (int i = 0; i < d->nsrcs; i++) {
		if (sc_be_host_memory)   /* the program's input pointers may still be in it (its results): mapped till exit */
			d->srcs[i].map = NULL;
		sc_src_close(&d->srcs[i]);
	}
	for (int i = 0; i < d->nfeeds && !sc_be_host_memory; i++) {   /* slab memory stays: the program may still read it */
		free(d->feeds[i].host[0]);
		free(d->feeds[i].host[1]);
	}
	free(d->srcs);
	free(d->feeds);
	free(d);
}
