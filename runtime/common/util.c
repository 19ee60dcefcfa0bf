/* util.c: errors and shape arithmetic shared by both backends.
 *
 * Errors of the program (a bad argument from emitted code, a failing MPI
 * call) abort the whole job with MPI_Abort so no rank waits forever; errors
 * of the user's input files go through sc_agree_or_exit instead, which ends
 * every rank with status 1 after one message (a run that diverged:
 * sc_agree_or_stop, status 3). The pieces of uneven shards are clipped to
 * their real part here alone (sc_piece_real). Nothing here allocates. */
#include "rt_internal.h"
#include "cpu_kernels.h"   /* sc_diag */

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

_Noreturn void sc_fatal(const char *file, int line, const char *fmt, ...)
{
	int inited = 0, finalized = 0, rank = -1;
	MPI_Initialized(&inited);
	MPI_Finalized(&finalized);
	if (inited && !finalized)
		MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (rank >= 0)
		fprintf(stderr, "shardc runtime: rank %d: %s:%d: %s\n", rank, file, line, msg);
	else
		fprintf(stderr, "shardc runtime: %s:%d: %s\n", file, line, msg);
	fflush(stderr);
	if (inited && !finalized)
		MPI_Abort(MPI_COMM_WORLD, 1);
	abort();
}

void sc_mpi_check(int err, const char *call, const char *file, int line)
{
	if (err == MPI_SUCCESS)
		return;
	char s[MPI_MAX_ERROR_STRING];
	int len = 0;
	if (MPI_Error_string(err, s, &len) != MPI_SUCCESS)
		snprintf(s, sizeof s, "MPI error %d", err);
	sc_fatal(file, line, "%s: %s", call, s);
}

void sc_agree_or_exit(sc_rt *rt, bool ok, const char *msg)
{
	sc_agree_or_stop(rt, ok, 1, msg);
}

void sc_agree_or_stop(sc_rt *rt, bool ok, int status, const char *msg)
{
	/* the lowest failing rank, or size when none failed */
	int mine = ok ? rt->size : rt->rank, first = rt->size;
	SC_MPI_CHECK(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
	if (first == rt->size)
		return;
	if (rt->rank == first) {
		fprintf(stderr, "%s\n", msg);
		fflush(stderr);
	}
	/* A clean exit of every rank: mpirun reports the status, nobody hangs. */
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	exit(status);
}

size_t sc_dtype_size(sc_dtype dt)
{
	switch (dt) {
	case SC_F32: case SC_I32: return 4;
	case SC_I64: return 8;
	case SC_F16: case SC_BF16: return 2;
	case SC_BOOL: return 1;
	}
	SC_DIE("bad dtype %d", (int)dt);
}

const char *sc_dtype_name(sc_dtype dt)
{
	switch (dt) {
	case SC_F32: return "float32";
	case SC_I32: return "int32";
	case SC_I64: return "int64";
	case SC_BOOL: return "bool";
	case SC_F16: return "float16";
	case SC_BF16: return "bfloat16";
	}
	SC_DIE("bad dtype %d", (int)dt);
}

sc_window sc_window_group(const sc_window *g)
{
	sc_window gg = *g;
	gg.groups = g->groups > 1 ? g->groups : 1;
	gg.c = g->c / gg.groups;
	gg.o = g->o / gg.groups;
	return gg;
}

int64_t sc_numel(const int64_t *dims, int ndim)
{
	int64_t n = 1;
	for (int i = 0; i < ndim; i++)
		n *= dims[i];
	return n;
}

void sc_check_dims(const char *what, const int64_t *dims, int ndim)
{
	if (ndim < 0 || ndim > SC_MAX_DIMS)
		SC_DIE("%s: rank %d (the limit is %d)", what, ndim, SC_MAX_DIMS);
	for (int i = 0; i < ndim; i++)
		if (dims[i] < 1)
			SC_DIE("%s: dim %d is %lld", what, i, (long long)dims[i]);
}

void sc_pad_dims(const int64_t *dims, int ndim, const int64_t *lo, const int64_t *hi, int64_t *ydims)
{
	sc_check_dims("sc_pad", dims, ndim);
	if (ndim < 1)
		SC_DIE("sc_pad: x is a scalar; it pads one dim or more");
	for (int d = 0; d < ndim; d++) {
		if (lo[d] < 0 || hi[d] < 0)
			SC_DIE("sc_pad: dim %d pads %lld before and %lld after; a padding is 0 or more", d, (long long)lo[d],
			       (long long)hi[d]);
		ydims[d] = dims[d] + lo[d] + hi[d];
	}
}

void sc_diag_init(sc_diag *g, const int64_t *dims, int ndim, int a1, int a2, int64_t offset)
{
	sc_check_dims("sc_trace", dims, ndim);
	if (ndim < 2 || a1 < 0 || a2 < 0 || a1 >= ndim || a2 >= ndim || a1 == a2)
		SC_DIE("sc_trace: axes %d and %d of %d dims; two different dims", a1, a2, ndim);
	int64_t str[SC_MAX_DIMS], s = 1;
	for (int d = ndim - 1; d >= 0; d--) {
		str[d] = s;
		s *= dims[d];
	}
	g->n = 1;
	g->nother = 0;
	for (int d = 0; d < ndim; d++)
		if (d != a1 && d != a2) {
			g->odims[g->nother] = dims[d];
			g->ostr[g->nother++] = str[d];
			g->n *= dims[d];
		}
	int64_t i0 = offset < 0 ? -offset : 0, j0 = offset > 0 ? offset : 0;
	int64_t l1 = dims[a1] - i0, l2 = dims[a2] - j0;
	g->len = l1 < l2 ? l1 : l2;
	if (g->len < 0)
		g->len = 0;
	g->start = g->len ? i0 * str[a1] + j0 * str[a2] : 0;
	g->step = str[a1] + str[a2];
}

int64_t sc_diag_base(const sc_diag *g, int64_t j)
{
	int64_t off = g->start;
	for (int d = g->nother - 1; d >= 0; d--) {
		off += j % g->odims[d] * g->ostr[d];
		j /= g->odims[d];
	}
	return off;
}

int sc_norm_axis(const char *what, int axis, int ndim)
{
	int a = axis < 0 ? axis + ndim : axis;
	if (a < 0 || a >= ndim)
		SC_DIE("%s: axis %d out of range for rank %d", what, axis, ndim);
	return a;
}

int sc_norm_check(const char *what, sc_norm_kind k)
{
	if ((int)k < 0 || (int)k >= SC_N_COUNT)
		SC_DIE("%s: kind %d is no normalizer of SC_NORM_TABLE (0 to %d)", what, (int)k, SC_N_COUNT - 1);
	return sc_norm_centered(k);
}

int sc_norm_part_check(const char *what, sc_norm_kind k, const float *mean, const float *dmean)
{
	static const char *const names[SC_N_COUNT] = {
#define SC_N_NAME(name, centered) #name,
		SC_NORM_TABLE(SC_N_NAME)
#undef SC_N_NAME
	};
	int centered = sc_norm_check(what, k);
	if (centered && !mean)
		SC_DIE("%s: %s is centered: the rows' mean must be given", what, names[k]);
	if (!centered && (mean || dmean))
		SC_DIE("%s: %s is not centered: %s must be NULL", what, names[k], mean ? "mean" : "dmean");
	return centered;
}

void sc_split3(const int64_t *dims, int ndim, int axis, int64_t *outer, int64_t *mid, int64_t *inner)
{
	*outer = sc_numel(dims, axis);
	*mid = dims[axis];
	*inner = sc_numel(dims + axis + 1, ndim - axis - 1);
}

bool sc_piece_real(const char *what, const int64_t *gdims, int ndim, const int64_t *start, const int64_t *ldims,
                   int64_t *real)
{
	sc_check_dims(what, gdims, ndim);
	sc_check_dims(what, ldims, ndim);
	bool padded = false;
	for (int d = 0; d < ndim; d++) {
		if (start[d] < 0)
			SC_DIE("%s: the piece starts at %lld along dim %d", what, (long long)start[d], d);
		int64_t left = gdims[d] - start[d];
		real[d] = left < 0 ? 0 : left < ldims[d] ? left : ldims[d];
		padded |= real[d] < ldims[d];
	}
	return padded;
}

/* Row p of a piece (its rows: the last dim) as a row of its real part,
 * packed; -1 when the row is padding. */
static int64_t packed_row(int64_t p, int ndim, const int64_t *real, const int64_t *ldims)
{
	int64_t c = 0, stride = 1;
	for (int d = ndim - 2; d >= 0; d--) {
		int64_t i = p % ldims[d];
		p /= ldims[d];
		if (i >= real[d])
			return -1;
		c += i * stride;
		stride *= real[d];
	}
	return c;
}

static bool whole_piece(int ndim, const int64_t *real, const int64_t *ldims)
{
	for (int d = 0; d < ndim; d++)
		if (real[d] != ldims[d])
			return false;
	return true;
}

/* Last row first: a row's place in the piece is never below its packed
 * place, and the rows still to move lie below both, so nothing is
 * overwritten before it moves. */
void sc_piece_pad(void *buf, size_t es, int ndim, const int64_t *real, const int64_t *ldims)
{
	if (whole_piece(ndim, real, ldims))
		return;
	char *b = buf;
	size_t L = (size_t)ldims[ndim - 1] * es, R = (size_t)real[ndim - 1] * es;
	for (int64_t p = sc_numel(ldims, ndim - 1) - 1; p >= 0; p--) {
		int64_t c = packed_row(p, ndim, real, ldims);
		size_t keep = c < 0 ? 0 : R;
		if (keep)
			memmove(b + (size_t)p * L, b + (size_t)c * R, R);
		memset(b + (size_t)p * L + keep, 0, L - keep);
	}
}

/* First row first, the mirror of sc_piece_pad. */
void sc_piece_unpad(void *buf, size_t es, int ndim, const int64_t *real, const int64_t *ldims)
{
	if (whole_piece(ndim, real, ldims))
		return;
	char *b = buf;
	size_t L = (size_t)ldims[ndim - 1] * es, R = (size_t)real[ndim - 1] * es;
	int64_t rows = sc_numel(ldims, ndim - 1);
	for (int64_t p = 0; p < rows && R; p++) {
		int64_t c = packed_row(p, ndim, real, ldims);
		if (c >= 0)
			memmove(b + (size_t)c * R, b + (size_t)p * L, R);
	}
}

void sc_pad_zero(sc_rt *rt, void *y, sc_dtype dt, const int64_t *ldims, int ndim, const int64_t *real)
{
	for (int d = 0; d < ndim; d++)
		if (real[d] < ldims[d])
			sc_fill_pad(rt, y, y, dt, ldims, ndim, d, real[d], 0.0);
}

void sc_bcast_strides(const char *what, const int64_t *in_dims, int in_ndim, const int64_t *out_dims, int out_ndim,
                      int64_t *strides)
{
	sc_check_dims(what, in_dims, in_ndim);
	sc_check_dims(what, out_dims, out_ndim);
	if (in_ndim > out_ndim)
		SC_DIE("%s: rank %d does not broadcast to rank %d", what, in_ndim, out_ndim);
	int64_t s = 1;
	for (int i = out_ndim - 1; i >= 0; i--) {
		int j = i - (out_ndim - in_ndim);
		if (j < 0) {
			strides[i] = 0;
			continue;
		}
		if (in_dims[j] == out_dims[i])
			strides[i] = in_dims[j] == 1 ? 0 : s;
		else if (in_dims[j] == 1)
			strides[i] = 0;
		else {
			char a[128], b[128];
			SC_DIE("%s: %s does not broadcast to %s", what, sc_dims_str(a, sizeof a, in_dims, in_ndim),
			       sc_dims_str(b, sizeof b, out_dims, out_ndim));
		}
		s *= in_dims[j];
	}
}

bool sc_slice_norm(const int64_t *dims, int ndim, const int64_t *begin, const int64_t *end, const int64_t *strides,
                   int64_t *b, int64_t *out_dims, int64_t *real)
{
	bool past = false;
	sc_check_dims("strided_slice", dims, ndim);
	for (int i = 0; i < ndim; i++) {
		int64_t d = dims[i], bb = begin[i], e = end[i], s = strides[i];
		if (s < 1)
			SC_DIE("strided_slice: stride %lld in dim %d", (long long)s, i);
		if (bb >= 0 && e > d) {
			/* An uneven split's last pieces: the slice keeps its length, and
			 * what lies at or past d is padding. */
			b[i] = bb < d ? bb : 0;   /* nothing read when bb >= d: 0 keeps the callers' base in x */
			out_dims[i] = (e - bb - 1) / s + 1;   /* (e - bb + s - 1) / s without overflow */
			real[i] = bb < d ? (d - bb - 1) / s + 1 : 0;
			past = true;
			continue;
		}
		bb = bb < 0 ? bb + d : bb;
		e = e < 0 ? e + d : e;
		bb = bb < 0 ? 0 : bb > d ? d : bb;
		e = e < 0 ? 0 : e > d ? d : e;
		if (e <= bb)
			SC_DIE("strided_slice: dim %d is empty", i);
		b[i] = bb;
		out_dims[i] = real[i] = (e - bb - 1) / s + 1;
	}
	return past;
}

const char *sc_dims_str(char *buf, size_t n, const int64_t *dims, int ndim)
{
	size_t k = 0;
	k += (size_t)snprintf(buf + k, n - k, "(");
	for (int i = 0; i < ndim && k < n; i++)
		k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? ", " : "", (long long)dims[i]);
	if (k < n)
		snprintf(buf + k, n - k, ndim == 1 ? ",)" : ")");
	return buf;
}

const char *sc_cut(char buf[SC_NAME_BUF], const char *s, size_t len)
{
	if (len <= SC_NAME_SHOWN + 16)
		snprintf(buf, SC_NAME_BUF, "%.*s", (int)len, s);
	else
		snprintf(buf, SC_NAME_BUF, "%.*s... (%zu bytes)", SC_NAME_SHOWN, s, len);
	return buf;
}

void sc_host_swap01(const void *src, void *dst, int64_t A, int64_t B, int64_t C, size_t es)
{
	const char *s = src;
	char *d = dst;
	size_t row = (size_t)C * es;
	for (int64_t a = 0; a < A; a++)
		for (int64_t b = 0; b < B; b++)
			memcpy(d + ((size_t)b * (size_t)A + (size_t)a) * row, s + ((size_t)a * (size_t)B + (size_t)b) * row, row);
}

bool sc_fail(char *err, size_t n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, n, fmt, ap);
	va_end(ap);
	return false;
}

char *sc_strdup(const char *s)
{
	char *d = strdup(s);
	if (!d)
		SC_DIE("out of memory");
	return d;
}

int64_t sc_nd_row(const void *idx, sc_dtype dt, int64_t i, const int64_t *dims, int n)
{
	int64_t row = 0;
	for (int d = 0; d < n; d++) {
		int64_t v = sc_index_at(idx, dt, i * n + d);
		if (v < 0 || v >= dims[d])
			return -1;
		row = row * dims[d] + v;
	}
	return row;
}

int64_t sc_nd_piece_row(const void *idx, sc_dtype dt, int64_t i, const int64_t *start, const int64_t *ldims, int n)
{
	int64_t row = 0;
	for (int d = 0; d < n; d++) {
		int64_t v = sc_index_at(idx, dt, i * n + d) - (start ? start[d] : 0);
		if (v < 0 || v >= ldims[d])
			return -1;
		row = row * ldims[d] + v;
	}
	return row;
}

void sc_nd_check(const void *idx, sc_dtype dt, int64_t m, const int64_t *dims, int n, const char *what)
{
	if (dt != SC_I32 && dt != SC_I64)
		SC_DIE("%s: indices must be int32 or int64, not %s", what, sc_dtype_name(dt));
	for (int64_t i = 0; i < m; i++) {
		if (sc_nd_row(idx, dt, i, dims, n) >= 0)
			continue;
		int64_t at[SC_MAX_DIMS];
		for (int d = 0; d < n; d++)
			at[d] = sc_index_at(idx, dt, i * n + d);
		char a[256], b[256];
		int rank = -1;
		MPI_Comm_rank(MPI_COMM_WORLD, &rank);
		fprintf(stderr, "shardc: rank %d: %s: index %s (row %lld of its rank's indices) lies outside x's indexed "
		        "dims %s; each coordinate must be in [0, dim)\n", rank, what, sc_dims_str(a, sizeof a, at, n),
		        (long long)i, sc_dims_str(b, sizeof b, dims, n));
		fflush(stderr);
		MPI_Abort(MPI_COMM_WORLD, 1);   /* bad input, not our bug: status 1; other ranks may be mid-collective */
		exit(1);
	}
}

int64_t sc_indices_outside(void *x, sc_dtype dt, int64_t count, int64_t bound, bool mark)
{
	for (int64_t i = 0; i < count; i++) {
		int64_t v = sc_index_at(x, dt, i);
		if (v >= 0 && v < bound)
			continue;
		if (!mark)
			return i;
		if (dt == SC_I64)
			((int64_t *)x)[i] = -1;
		else
			((int32_t *)x)[i] = -1;
	}
	return -1;
}
