/* npy.c: .npy files: reading a rank's slice of an input, assembling and
 * writing an output.
 *
 * The format (numpy's NEP 1): "\x93NUMPY", a major and minor version, the
 * header length (2 bytes little-endian in 1.0, 4 in 2.0 and 3.0), then a
 * Python dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
 * padded with spaces and a newline, then the data. We read '<f4' '<f2' '<i4'
 * '<i8' '|b1' in C order and write version 1.0 (a header of at most 8 dims is
 * far below its 64 KiB limit), the data aligned to 64 bytes as numpy does.
 * npy has no bfloat16; as tools/ref_eval.py does, a BFloat16 tensor's file is
 * '<f4' holding bfloat16 values: saving widens (exactly), loading rounds each
 * float32 to the nearest bfloat16, ties to even (a file written by us or by
 * ref_eval.py is already exact and reads back unchanged).
 * Loading is collective so every rank learns of a bad file at the same point
 * and exits 1; saving gathers the slices on rank 0, one copy of each
 * distinct slice travelling, and writes a temporary file renamed into place
 * once whole, so a failed write leaves no truncated file. */
#include "rt_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const struct {
	const char *descr;
	sc_dtype dt;
} descrs[] = {
	{"<f4", SC_F32},
	{"<f2", SC_F16},
	{"<i4", SC_I32},
	{"<i8", SC_I64},
	{"|b1", SC_BOOL},
};

sc_dtype sc_npy_file_dt(sc_dtype dt)
{
	return dt == SC_BF16 ? SC_F32 : dt;
}

const char *sc_npy_descr(sc_dtype dt)
{
	dt = sc_npy_file_dt(dt);
	for (size_t i = 0; i < sizeof descrs / sizeof descrs[0]; i++)
		if (descrs[i].dt == dt)
			return descrs[i].descr;
	SC_DIE("bad dtype %d", (int)dt);
}

/* ---- the header's dict ---- */

typedef struct {
	const char *p, *end;
} Cursor;

static void skip_ws(Cursor *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
		c->p++;
}

static bool eat(Cursor *c, char ch)
{
	skip_ws(c);
	if (c->p < c->end && *c->p == ch) {
		c->p++;
		return true;
	}
	return false;
}

static bool parse_str(Cursor *c, char *out, size_t n)
{
	skip_ws(c);
	if (c->p >= c->end || (*c->p != '\'' && *c->p != '"'))
		return false;
	char q = *c->p++;
	size_t k = 0;
	while (c->p < c->end && *c->p != q) {
		if (k + 1 < n)
			out[k++] = *c->p;
		c->p++;
	}
	out[k] = '\0';
	return c->p < c->end && *c->p++ == q;
}

static bool parse_word(Cursor *c, const char *w)
{
	skip_ws(c);
	size_t n = strlen(w);
	if ((size_t)(c->end - c->p) >= n && memcmp(c->p, w, n) == 0) {
		c->p += n;
		return true;
	}
	return false;
}

static bool parse_shape(Cursor *c, int64_t *dims, int *ndim)
{
	*ndim = 0;
	if (!eat(c, '('))
		return false;
	for (;;) {
		if (eat(c, ')'))
			return true;
		skip_ws(c);
		if (c->p >= c->end || *c->p < '0' || *c->p > '9')
			return false;
		int64_t v = 0;
		while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
			if (v > (INT64_MAX - 9) / 10)
				return false;
			v = 10 * v + (*c->p++ - '0');
		}
		if (*ndim == SC_MAX_DIMS)
			return false;
		dims[(*ndim)++] = v;
		if (!eat(c, ',')) {
			if (!eat(c, ')'))
				return false;
			return true;
		}
	}
}

static uint32_t le(const unsigned char *b, int n)
{
	uint32_t v = 0;
	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | b[i];
	return v;
}

bool sc_npy_read_header(FILE *f, sc_npy_header *h, char *err, size_t errlen)
{
	unsigned char pre[12];
	memset(h, 0, sizeof *h);
	if (fread(pre, 1, 8, f) != 8 || memcmp(pre, "\x93NUMPY", 6) != 0)
		return sc_fail(err, errlen, "is not a .npy file (no \\x93NUMPY magic)");
	int major = pre[6], lenbytes = major == 1 ? 2 : major == 2 || major == 3 ? 4 : 0;
	if (!lenbytes)
		return sc_fail(err, errlen, "has .npy format version %d.%d (1.0, 2.0 and 3.0 are read)", pre[6], pre[7]);
	if (fread(pre + 8, 1, (size_t)lenbytes, f) != (size_t)lenbytes)
		return sc_fail(err, errlen, "is truncated inside its .npy header");
	uint32_t hlen = le(pre + 8, lenbytes);
	if (hlen > (1u << 24))
		return sc_fail(err, errlen, "has a .npy header of %u bytes", hlen);
	char *text = malloc(hlen + 1);
	if (!text)
		SC_DIE("out of memory");
	if (fread(text, 1, hlen, f) != hlen) {
		free(text);
		return sc_fail(err, errlen, "is truncated inside its .npy header");
	}
	h->data_offset = 8 + lenbytes + (long)hlen;
	Cursor c = {text, text + hlen};
	char key[32], descr[32] = "";
	bool have_descr = false, have_order = false, have_shape = false, fortran = false, ok = eat(&c, '{');
	while (ok && !eat(&c, '}')) {
		ok = parse_str(&c, key, sizeof key) && eat(&c, ':');
		if (!ok)
			break;
		if (strcmp(key, "descr") == 0)
			ok = have_descr = parse_str(&c, descr, sizeof descr);
		else if (strcmp(key, "fortran_order") == 0) {
			have_order = true;
			fortran = parse_word(&c, "True");
			ok = fortran || parse_word(&c, "False");
		} else if (strcmp(key, "shape") == 0)
			ok = have_shape = parse_shape(&c, h->dims, &h->ndim);
		else
			ok = false;
		if (ok && !eat(&c, ',')) {
			ok = eat(&c, '}');
			break;
		}
	}
	free(text);
	if (!ok || !have_descr || !have_order || !have_shape)
		return sc_fail(err, errlen, "has a .npy header that is not {'descr': ..., 'fortran_order': ..., 'shape': (...)}");
	if (fortran)
		return sc_fail(err, errlen, "is in Fortran order (C order is read)");
	for (size_t i = 0; i < sizeof descrs / sizeof descrs[0]; i++)
		if (strcmp(descr, descrs[i].descr) == 0) {
			h->dt = descrs[i].dt;
			return true;
		}
	return sc_fail(err, errlen,
	            "has dtype '%s' (read: '<f4' float32, '<f2' float16, '<i4' int32, '<i8' int64, '|b1' bool)", descr);
}

/* ---- slices: runs of contiguous elements ---- */

int sc_slice_runs(const int64_t *gdims, int ndim, const int64_t *ldims, int64_t *run, int64_t *nruns)
{
	int k = ndim;   /* ldims[k:] is whole */
	while (k > 0 && ldims[k - 1] == gdims[k - 1])
		k--;
	if (k > 0)
		k--;        /* dim k is cut (or is the first): runs span ldims[k:] */
	*run = sc_numel(ldims + k, ndim - k);
	*nruns = sc_numel(ldims, k);
	return k;
}

int64_t sc_run_offset(const int64_t *gdims, int ndim, const int64_t *start, const int64_t *ldims, int k,
                      int64_t r)
{
	int64_t off = 0, stride = 1;
	for (int d = ndim - 1; d >= 0; d--) {
		int64_t i = start[d];
		if (d < k) {
			i += r % ldims[d];
			r /= ldims[d];
		}
		off += i * stride;
		stride *= gdims[d];
	}
	return off;
}

bool sc_npy_read_slice(FILE *f, const sc_npy_header *h, const int64_t *start, const int64_t *ldims, void *dst,
                       char *err, size_t errlen)
{
	size_t es = sc_dtype_size(h->dt);
	int64_t need = sc_numel(h->dims, h->ndim) * (int64_t)es;
	if (fseek(f, 0, SEEK_END) != 0)
		return sc_fail(err, errlen, "cannot be read: %s", strerror(errno));
	long size = ftell(f);
	if (size < 0 || size - h->data_offset < need)
		return sc_fail(err, errlen, "is truncated: %lld bytes of data, expected %lld", (long long)(size - h->data_offset),
		            (long long)need);
	int64_t run, nruns;
	int k = sc_slice_runs(h->dims, h->ndim, ldims, &run, &nruns);
	for (int64_t r = 0; r < nruns; r++) {
		int64_t off = sc_run_offset(h->dims, h->ndim, start, ldims, k, r);
		if (fseek(f, h->data_offset + (long)(off * (int64_t)es), SEEK_SET) != 0 ||
		    fread((char *)dst + (size_t)(r * run) * es, es, (size_t)run, f) != (size_t)run)
			return sc_fail(err, errlen, "cannot be read: %s", ferror(f) ? strerror(errno) : "short read");
	}
	if (h->dt == SC_BOOL)   /* normalize to 0/1 */
		for (int64_t i = 0; i < run * nruns; i++)
			((unsigned char *)dst)[i] = ((unsigned char *)dst)[i] != 0;
	return true;
}

bool sc_npy_write(FILE *f, sc_dtype dt, const int64_t *dims, int ndim, const void *data)
{
	char shape[SC_MAX_DIMS * 24 + 8], dict[SC_MAX_DIMS * 24 + 128];
	sc_dims_str(shape, sizeof shape, dims, ndim);
	int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", sc_npy_descr(dt),
	                 shape);
	int pre = 10;                                  /* magic, version, 2-byte length */
	int total = (pre + n + 1 + 63) / 64 * 64;      /* header ends with '\n' at a multiple of 64 */
	unsigned char head[16] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
	uint32_t hlen = (uint32_t)(total - pre);
	head[8] = (unsigned char)(hlen & 0xff);
	head[9] = (unsigned char)(hlen >> 8);
	if (fwrite(head, 1, (size_t)pre, f) != (size_t)pre || fwrite(dict, 1, (size_t)n, f) != (size_t)n)
		return false;
	for (int i = pre + n; i < total - 1; i++)
		if (fputc(' ', f) == EOF)
			return false;
	if (fputc('\n', f) == EOF)
		return false;
	size_t count = (size_t)sc_numel(dims, ndim);
	if (dt != SC_BF16)
		return fwrite(data, sc_dtype_size(dt), count, f) == count;
	float buf[1024];
	for (size_t i = 0; i < count; i += 1024) {   /* widened a block at a time */
		size_t k = count - i < 1024 ? count - i : 1024;
		sc_host_widen((const uint16_t *)data + i, SC_BF16, buf, (int64_t)k);
		if (fwrite(buf, sizeof *buf, k, f) != k)
			return false;
	}
	return true;
}

/* ---- collective load and save ---- */

FILE *sc_open_regular(const char *path, char *why, size_t n)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0) {
		snprintf(why, n, "cannot be opened: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	const char *what = S_ISREG(st.st_mode) ? NULL : S_ISDIR(st.st_mode) ? "is a directory"
	                   : S_ISFIFO(st.st_mode) ? "is a FIFO (named pipe)" : S_ISSOCK(st.st_mode) ? "is a socket"
	                   : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "is a device" : "is not a regular file";
	FILE *f = what ? NULL : fdopen(fd, "rb");
	if (what)
		snprintf(why, n, "%s, not a .npy file", what);
	else if (!f)
		snprintf(why, n, "cannot be opened: %s", strerror(errno));
	if (!f)
		close(fd);
	return f;
}

/* The first element of the piece outside [0, bound), its place in the whole
 * tensor written into why; false when there is none (or, with `mark`,
 * when each was marked: sc_indices_outside). */
static bool index_outside(void *piece, sc_dtype dt, int ndim, const int64_t *start, const int64_t *ldims,
                          int64_t bound, bool mark, const char *what, char *why, size_t n)
{
	int64_t i = sc_indices_outside(piece, dt, sc_numel(ldims, ndim), bound, mark);
	if (i < 0)
		return false;
	int64_t v = sc_index_at(piece, dt, i);
	int64_t at[SC_MAX_DIMS], rest = i;
	for (int d = ndim - 1; d >= 0; d--) {
		at[d] = start[d] + rest % ldims[d];
		rest /= ldims[d];
	}
	char where[256];
	snprintf(why, n, "holds %lld at %s, outside [0, %lld): %s", (long long)v,
	         sc_dims_str(where, sizeof where, at, ndim), (long long)bound, what);
	return true;
}

static void load(sc_rt *rt, const char *name, const char *path, void *dst, sc_dtype dt, const int64_t *gdims,
                 int ndim, const int64_t *start, const int64_t *ldims, int64_t bound, const char *what)
{
	int64_t real[SC_MAX_DIMS];   /* read packed, then spread over the piece with its padding 0 */
	sc_piece_real("sc_load_npy", gdims, ndim, start, ldims, real);
	int64_t n = sc_numel(ldims, ndim);
	size_t bytes = (size_t)n * sc_dtype_size(dt), fbytes = (size_t)n * sc_dtype_size(sc_npy_file_dt(dt));
	void *tmp = dst ? malloc(fbytes ? fbytes : 1) : NULL;
	if (dst && !tmp)
		SC_DIE("out of memory");
	char why[512] = "", msg[1024];
	sc_npy_header h;
	FILE *f = path ? sc_open_regular(path, why, sizeof why) : NULL;
	bool ok = f && sc_npy_read_header(f, &h, why, sizeof why);
	if (!path)
		snprintf(why, sizeof why, "cannot be opened: no path");
	if (ok && h.dt != sc_npy_file_dt(dt)) {
		snprintf(why, sizeof why, "has dtype %s ('%s'), expected %s ('%s'%s)", sc_dtype_name(h.dt), sc_npy_descr(h.dt),
		         sc_dtype_name(dt), sc_npy_descr(dt), dt == SC_BF16 ? ": float32 holding bfloat16 values" : "");
		ok = false;
	}
	bool same = ok && h.ndim == ndim;
	for (int d = 0; same && d < ndim; d++)
		same = h.dims[d] == gdims[d];
	if (ok && !same) {
		char a[256], b[256];
		bool batches = h.ndim == ndim && ndim > 0 && gdims[0] > 0 && h.dims[0] > gdims[0] && h.dims[0] % gdims[0] == 0;
		for (int d = 1; batches && d < ndim; d++)
			batches = h.dims[d] == gdims[d];
		bool input = path != sc_option(rt, "--param", name);
		snprintf(why, sizeof why, "has shape %s, expected %s%s", sc_dims_str(a, sizeof a, h.dims, h.ndim),
		         sc_dims_str(b, sizeof b, gdims, ndim), batches && input ? " (a dataset of batches streams a batch a "
		         "step with --data NAME=FILE.npy)" : "");
		ok = false;
	}
	if (ok && tmp)
		ok = sc_npy_read_slice(f, &h, start, real, tmp, why, sizeof why);
	if (ok && tmp && bound >= 0)
		ok = !index_outside(tmp, dt, ndim, start, real, bound, sc_option(rt, "--unchecked-ids", NULL) != NULL, what,
		                    why, sizeof why);
	if (f)
		fclose(f);
	char n1[SC_NAME_BUF], n2[SC_NAME_BUF];
	snprintf(msg, sizeof msg, "shardc: %s '%s': %s %s", path && path == sc_option(rt, "--param", name) ? "parameter" : "input",
	         sc_cut(n1, name, strlen(name)), path ? sc_cut(n2, path, strlen(path)) : "(none)", why);
	sc_agree_or_exit(rt, ok, msg);
	if (dst && dt == SC_BF16) {   /* the float32 values, rounded */
		void *narrow = malloc(bytes ? bytes : 1);
		if (!narrow)
			SC_DIE("out of memory");
		sc_host_narrow(tmp, narrow, SC_BF16, sc_numel(real, ndim));
		free(tmp);
		tmp = narrow;
	}
	if (dst) {
		sc_piece_pad(tmp, sc_dtype_size(dt), ndim, real, ldims);
		sc_from_host(rt, dst, tmp, bytes);
	}
	free(tmp);
}

void sc_load_npy(sc_rt *rt, const char *name, const char *path, void *dst, sc_dtype dt, const int64_t *gdims,
                 int ndim, const int64_t *start, const int64_t *ldims)
{
	load(rt, name, path, dst, dt, gdims, ndim, start, ldims, -1, NULL);
}

void sc_load_indices(sc_rt *rt, const char *name, const char *path, void *dst, sc_dtype dt, const int64_t *gdims,
                     int ndim, const int64_t *start, const int64_t *ldims, int64_t bound, const char *what)
{
	if (dt != SC_I32 && dt != SC_I64)
		SC_DIE("sc_load_indices: indices are int32 or int64, not %s", sc_dtype_name(dt));
	load(rt, name, path, dst, dt, gdims, ndim, start, ldims, bound, what);
}

/* mkdir -p; false with errno set on failure */
static bool make_dirs(const char *dir)
{
	char p[4096];
	size_t n = strlen(dir);
	if (n >= sizeof p) {
		errno = ENAMETOOLONG;
		return false;
	}
	if (n == 0)
		return true;
	memcpy(p, dir, n + 1);
	for (size_t i = 1; i <= n; i++)
		if (p[i] == '/' || p[i] == '\0') {
			char c = p[i];
			p[i] = '\0';
			if (mkdir(p, 0777) != 0 && errno != EEXIST)
				return false;
			p[i] = c;
		}
	return true;
}

/* DIR/FILE (FILE alone when dir is NULL or ""); false when it does not fit. */
static bool join(char *out, size_t n, const char *dir, const char *file)
{
	int k = snprintf(out, n, "%s%s%s", dir ? dir : "", dir && *dir ? "/" : "", file);
	return k >= 0 && (size_t)k < n;
}

/* A new empty file beside DIR/FILE, `DIR/.FILE.PID.tmp` (its name in tmp),
 * opened for writing; -1 with errno set on failure. A file of that name left
 * by a process killed while writing is replaced. */
static int open_temp(const char *dir, const char *file, char *tmp, size_t n)
{
	char base[4200];
	int k = snprintf(base, sizeof base, ".%s.%ld.tmp", file, (long)getpid());
	if (k < 0 || (size_t)k >= sizeof base || !join(tmp, n, dir, base)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0666);
}

bool sc_npy_check_dir(const char *dir, char *err, size_t errlen)
{
	char tmp[4400];
	if (dir && !make_dirs(dir))
		return sc_fail(err, errlen, "%s", strerror(errno));
	int fd = open_temp(dir, "shardc-probe", tmp, sizeof tmp);
	if (fd < 0)
		return sc_fail(err, errlen, "%s", strerror(errno));
	close(fd);
	unlink(tmp);
	return true;
}

bool sc_npy_save_file(const char *dir, const char *file, sc_dtype dt, const int64_t *dims, int ndim,
                      const void *data, char *err, size_t errlen)
{
	char path[4096], tmp[4400];
	if (!join(path, sizeof path, dir, file))
		return sc_fail(err, errlen, "the path is too long");
	if (dir && !make_dirs(dir))
		return sc_fail(err, errlen, "%s", strerror(errno));
	int fd = open_temp(dir, file, tmp, sizeof tmp);
	if (fd < 0)
		return sc_fail(err, errlen, "%s", strerror(errno));
	FILE *f = fdopen(fd, "wb");
	errno = 0;
	bool ok = f && sc_npy_write(f, dt, dims, ndim, data) && fflush(f) == 0 && fsync(fd) == 0;
	int e = errno ? errno : EIO;   /* fwrite may fail without errno */
	if (f ? fclose(f) != 0 : close(fd) != 0) {
		if (ok)
			e = errno;
		ok = false;
	}
	if (ok && rename(tmp, path) != 0) {
		e = errno;
		ok = false;
	}
	if (!ok) {
		unlink(tmp);
		return sc_fail(err, errlen, "%s", strerror(e));
	}
	return true;
}

const char *sc_output_dir(sc_rt *rt)
{
	const char *dir = sc_option(rt, "--output-dir", NULL);
	char why[256] = "", msg[512], cut[SC_NAME_BUF];
	bool ok = rt->rank != 0 || sc_npy_check_dir(dir, why, sizeof why);
	snprintf(msg, sizeof msg, "shardc: cannot write to the output folder %s: %s",
	         dir ? sc_cut(cut, dir, strlen(dir)) : "(the current directory)", why);
	sc_agree_or_exit(rt, ok, msg);
	return dir;
}

enum { INFO = 1 + 2 * SC_MAX_DIMS };   /* has, start[], the real part's dims[] */

char *sc_gather_whole(sc_rt *rt, const char *what, const void *src, sc_dtype dt, const int64_t *gdims, int ndim,
                      const int64_t *start, const int64_t *ldims)
{
	int64_t real[SC_MAX_DIMS];   /* only the real part travels; a piece of padding alone, nothing */
	sc_piece_real(what, gdims, ndim, start, ldims, real);
	size_t es = sc_dtype_size(dt);
	int64_t local = sc_numel(real, ndim);
	void *mine = NULL;
	if (src && local) {
		size_t bytes = (size_t)sc_numel(ldims, ndim) * es;
		if (!(mine = malloc(bytes)))
			SC_DIE("out of memory");
		sc_to_host(rt, mine, src, bytes);
		sc_piece_unpad(mine, es, ndim, real, ldims);
	}
	int64_t info[INFO] = {mine != NULL}, *all = NULL;
	for (int d = 0; d < ndim; d++) {
		info[1 + d] = start[d];
		info[1 + SC_MAX_DIMS + d] = real[d];
	}
	int *send = NULL, sendme = 0;
	if (rt->rank == 0 && (!(all = malloc((size_t)rt->size * INFO * sizeof *all)) ||
	                      !(send = calloc((size_t)rt->size, sizeof *send))))
		SC_DIE("out of memory");
	SC_MPI_CHECK(MPI_Gather(info, INFO, MPI_INT64_T, all, INFO, MPI_INT64_T, 0, MPI_COMM_WORLD));
	if (rt->rank == 0)   /* one sender per distinct slice; rank 0 places its own */
		for (int r = 1; r < rt->size; r++) {
			bool dup = !all[r * INFO];
			for (int q = 0; q < r && !dup; q++)
				dup = (q == 0 || send[q]) && all[q * INFO] &&
				      memcmp(all + r * INFO, all + q * INFO, INFO * sizeof *all) == 0;
			send[r] = !dup;
		}
	SC_MPI_CHECK(MPI_Scatter(send, 1, MPI_INT, &sendme, 1, MPI_INT, 0, MPI_COMM_WORLD));
	if (rt->rank != 0) {
		if (sendme) {
			if ((size_t)local * es > (size_t)INT32_MAX)
				SC_DIE("%s: a slice of %lld elements is too large to send", what, (long long)local);
			SC_MPI_CHECK(MPI_Send(mine, (int)((size_t)local * es), MPI_BYTE, 0, 7, MPI_COMM_WORLD));
		}
		free(mine);
		return NULL;
	}
	int64_t total = sc_numel(gdims, ndim);
	char *out = malloc((size_t)total * es + 1), *covered = calloc((size_t)total + 1, 1), *buf = NULL;
	if (!out || !covered)
		SC_DIE("out of memory");
	for (int r = 0; r < rt->size; r++) {
		if (r == 0 ? !mine : !send[r])
			continue;
		const int64_t *st = all + r * INFO + 1, *ld = all + r * INFO + 1 + SC_MAX_DIMS;
		int64_t n = sc_numel(ld, ndim);
		const char *p = mine;
		if (r > 0) {
			buf = realloc(buf, (size_t)n * es + 1);
			if (!buf)
				SC_DIE("out of memory");
			SC_MPI_CHECK(MPI_Recv(buf, (int)((size_t)n * es), MPI_BYTE, r, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
			p = buf;
		}
		int64_t run, nruns;
		int k = sc_slice_runs(gdims, ndim, ld, &run, &nruns);
		for (int64_t i = 0; i < nruns; i++) {
			int64_t off = sc_run_offset(gdims, ndim, st, ld, k, i);
			memcpy(out + (size_t)off * es, p + (size_t)(i * run) * es, (size_t)run * es);
			memset(covered + off, 1, (size_t)run);
		}
	}
	for (int64_t i = 0; i < total; i++)
		if (!covered[i])
			SC_DIE("%s: no rank holds element %lld of the tensor", what, (long long)i);
	free(covered);
	free(buf);
	free(mine);
	free(all);
	free(send);
	return out;
}

void sc_save_npy(sc_rt *rt, const char *dir, const char *file, const void *src, sc_dtype dt, const int64_t *gdims,
                 int ndim, const int64_t *start, const int64_t *ldims)
{
	char what[512];
	snprintf(what, sizeof what, "sc_save_npy: %s", file);
	char *out = sc_gather_whole(rt, what, src, dt, gdims, ndim, start, ldims);
	if (rt->rank != 0) {
		sc_agree_or_exit(rt, true, "");
		return;
	}
	char path[4096], why[256] = "", msg[4600] = "";   /* why is written only when saving fails */
	bool ok = sc_npy_save_file(dir, file, dt, gdims, ndim, out, why, sizeof why);
	join(path, sizeof path, dir, file);
	if (!ok)
		snprintf(msg, sizeof msg, "shardc: cannot write %s: %s", path, why);
	free(out);
	sc_agree_or_exit(rt, ok, msg);
}
