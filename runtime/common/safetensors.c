/* safetensors.c: parameters from a safetensors checkpoint, each rank reading
 * only its slices, and the trained parameters written as one.
 *
 * The format (Hugging Face's safetensors): N, the header's length, in 8 bytes
 * little-endian; N bytes of JSON, {"NAME": {"dtype": "F32", "shape": [2, 3],
 * "data_offsets": [BEGIN, END]}, ..., "__metadata__": {"KEY": "VALUE"}};
 * then the data, each tensor's elements in C order, little-endian, at bytes
 * [BEGIN, END) counted from the header's end. jansson parses and writes the
 * JSON; its values never leave this file.
 *
 * Reading: every rank parses the header into a table (sorted by name) and
 * reads its slice of each parameter with pread, one run of contiguous
 * elements at a time and at most BLOCK bytes a call, converting F64, F32,
 * F16 and BF16 to the parameter's float type as it goes (rounded once, to
 * nearest even; I64, I32 and BOOL are read as their own type only). So no
 * rank reads the whole file, nor holds more of it than its slice and one
 * block. Each load is collective, as sc_load_npy's: a bad file or tensor
 * ends every rank with one message and status 1.
 *
 * Writing: every rank lists its pieces (sc_safetensors_add); then rank 0
 * writes the header, and assembles and appends the tensors one at a time
 * (one copy of each distinct slice travelling, as sc_save_npy does), to
 * FILE.tmp, renamed to FILE when whole. Assumes a little-endian host, as
 * npy.c does. */
#include "rt_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum {
	BLOCK = 1 << 20,                 /* bytes a pread brings at most */
	MAX_HEADER = 100000000,          /* the safetensors library's limit on N */
};

/* The dtypes read: the floats convert to any float type, the others only to their own. */
enum { K_F64, K_F32, K_F16, K_BF16, K_I64, K_I32, K_BOOL, NKINDS };
static const struct {
	const char *name;
	size_t size;
	bool is_float;
	sc_dtype dt;                     /* the sc_dtype it is exactly (K_F64: none, unused) */
} kinds[NKINDS] = {
	[K_F64] = {"F64", 8, true, SC_F32}, [K_F32] = {"F32", 4, true, SC_F32}, [K_F16] = {"F16", 2, true, SC_F16},
	[K_BF16] = {"BF16", 2, true, SC_BF16}, [K_I64] = {"I64", 8, false, SC_I64}, [K_I32] = {"I32", 4, false, SC_I32},
	[K_BOOL] = {"BOOL", 1, false, SC_BOOL},
};

static int kind_of(const char *dtype)
{
	for (int k = 0; k < NKINDS; k++)
		if (strcmp(dtype, kinds[k].name) == 0)
			return k;
	return -1;
}

/* the kind an sc_dtype is written as */
static int kind_of_dt(sc_dtype dt)
{
	for (int k = K_F32; k < NKINDS; k++)
		if (kinds[k].dt == dt)
			return k;
	SC_DIE("bad dtype %d", (int)dt);
}

/* ---- the header ---- */

static int by_name(const void *a, const void *b)
{
	return strcmp(((const sc_st_tensor *)a)->name, ((const sc_st_tensor *)b)->name);
}

/* a JSON integer in [0, INT64_MAX] */
static bool count_of(const json_t *j, int64_t *v)
{
	if (!json_is_integer(j) || json_integer_value(j) < 0)
		return false;
	*v = (int64_t)json_integer_value(j);
	return true;
}

/* One entry of the header into t; false: why says what is wrong with it. */
static bool read_entry(const char *key, json_t *v, int64_t data_bytes, sc_st_tensor *t, char *why, size_t n)
{
	char cut[SC_NAME_BUF];
	const char *name = sc_cut(cut, key, strlen(key));
	json_t *dtype = json_object_get(v, "dtype"), *shape = json_object_get(v, "shape"),
	       *offs = json_object_get(v, "data_offsets");
	if (!json_is_object(v) || !json_is_string(dtype))
		return sc_fail(why, n, "has a header whose tensor '%s' has no \"dtype\" string", name);
	snprintf(t->dtype, sizeof t->dtype, "%s", json_string_value(dtype));
	if (!json_is_array(shape))
		return sc_fail(why, n, "has a header whose tensor '%s' has no \"shape\" list", name);
	size_t nd = json_array_size(shape);
	t->ndim = nd > SC_MAX_DIMS ? SC_MAX_DIMS + 1 : (int)nd;
	for (size_t d = 0; d < nd; d++) {
		int64_t x;
		if (!count_of(json_array_get(shape, d), &x))
			return sc_fail(why, n, "has a header whose tensor '%s' has a \"shape\" that is not a list of sizes", name);
		if (d < SC_MAX_DIMS)
			t->dims[d] = x;
	}
	if (!json_is_array(offs) || json_array_size(offs) != 2 || !count_of(json_array_get(offs, 0), &t->begin) ||
	    !count_of(json_array_get(offs, 1), &t->end) || t->end < t->begin)
		return sc_fail(why, n, "has a header whose tensor '%s' has no \"data_offsets\" [begin, end] with begin <= end",
		            name);
	if (t->end > data_bytes)
		return sc_fail(why, n, "is truncated: tensor '%s' ends at byte %lld of the data, which holds %lld bytes", name,
		            (long long)t->end, (long long)data_bytes);
	return true;
}

bool sc_st_read_header(int fd, int64_t size, sc_st_header *h, char *err, size_t errlen)
{
	memset(h, 0, sizeof *h);
	unsigned char len[8];
	if (size < 8 || pread(fd, len, 8, 0) != 8)
		return sc_fail(err, errlen, "is truncated: %lld bytes, less than the header's 8-byte length", (long long)size);
	uint64_t hlen = 0;
	for (int i = 7; i >= 0; i--)
		hlen = hlen << 8 | len[i];
	if (hlen > MAX_HEADER)
		return sc_fail(err, errlen, "has a header of %llu bytes (at most %d are read): not a safetensors file?",
		            (unsigned long long)hlen, MAX_HEADER);
	if ((int64_t)hlen > size - 8)
		return sc_fail(err, errlen, "is truncated: its header is %llu bytes, and %lld follow its length",
		            (unsigned long long)hlen, (long long)(size - 8));
	char *text = malloc(hlen + 1);
	if (!text)
		SC_DIE("out of memory");
	ssize_t got = pread(fd, text, (size_t)hlen, 8);
	if (got != (ssize_t)hlen) {
		free(text);
		return sc_fail(err, errlen, "cannot be read: %s", got < 0 ? strerror(errno) : "short read");
	}
	h->data_start = 8 + (int64_t)hlen;
	h->data_bytes = size - h->data_start;
	json_error_t je;
	json_t *root = json_loadb(text, (size_t)hlen, JSON_REJECT_DUPLICATES, &je);
	free(text);
	if (!root)
		return sc_fail(err, errlen, "has a header that is not JSON: line %d, column %d: %s", je.line, je.column, je.text);
	bool ok = json_is_object(root);
	if (!ok)
		sc_fail(err, errlen, "has a header that is not a JSON object");
	h->t = calloc(json_object_size(root) + 1, sizeof *h->t);
	if (!h->t)
		SC_DIE("out of memory");
	const char *key;
	json_t *v;
	json_object_foreach(root, key, v) {
		if (!ok)
			break;
		if (strcmp(key, "__metadata__") == 0) {
			if (!(ok = json_is_object(v)))
				sc_fail(err, errlen, "has a header whose \"__metadata__\" is not an object");
			continue;
		}
		sc_st_tensor *t = &h->t[h->n];
		if ((ok = read_entry(key, v, h->data_bytes, t, err, errlen)))
			t->name = sc_strdup(key);
		h->n += ok;
	}
	json_decref(root);
	if (!ok) {
		sc_st_header_free(h);
		return false;
	}
	qsort(h->t, (size_t)h->n, sizeof *h->t, by_name);
	return true;
}

void sc_st_header_free(sc_st_header *h)
{
	for (int i = 0; i < h->n; i++)
		free(h->t[i].name);
	free(h->t);
	h->t = NULL;
	h->n = 0;
}

const sc_st_tensor *sc_st_find(const sc_st_header *h, const char *name)
{
	sc_st_tensor key = {.name = (char *)name};
	return h->n ? bsearch(&key, h->t, (size_t)h->n, sizeof *h->t, by_name) : NULL;
}

/* ---- a slice: runs of contiguous elements, converted ---- */

/* n elements of kind k at src written as dt at dst (kind k reads as dt). */
static void convert(const void *src, int k, void *dst, sc_dtype dt, int64_t n)
{
	if (k != K_F64 && kinds[k].dt == dt) {
		memcpy(dst, src, (size_t)n * kinds[k].size);
		if (dt == SC_BOOL)   /* normalize to 0/1 */
			for (int64_t i = 0; i < n; i++)
				((unsigned char *)dst)[i] = ((unsigned char *)dst)[i] != 0;
		return;
	}
	for (int64_t i = 0; i < n; i++) {
		double v = k == K_F64 ? ((const double *)src)[i] : k == K_F32 ? ((const float *)src)[i]
		           : k == K_F16 ? sc_f16_to_float(((const uint16_t *)src)[i]) : sc_bf16_to_float(((const uint16_t *)src)[i]);
		if (dt == SC_F32)
			((float *)dst)[i] = (float)v;   /* exact but from F64: to nearest */
		else
			((uint16_t *)dst)[i] = dt == SC_F16 ? sc_f16_from_double(v) : sc_bf16_from_double(v);
	}
}

/* bytes [off, off + n) of fd into buf; false on an error or the file's end */
static bool read_at(int fd, void *buf, size_t n, int64_t off)
{
	for (size_t done = 0; done < n;) {
		ssize_t got = pread(fd, (char *)buf + done, n - done, (off_t)(off + (int64_t)done));
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return false;
		done += (size_t)got;
	}
	return true;
}

bool sc_st_read_slice(int fd, const sc_st_header *h, const sc_st_tensor *t, sc_dtype dt, const int64_t *gdims,
                      int ndim, const int64_t *start, const int64_t *ldims, void *dst, char *err, size_t errlen)
{
	char a[256], b[256];
	int k = kind_of(t->dtype);
	if (k < 0 || (kinds[k].is_float ? !sc_is_half(dt) && dt != SC_F32 : kinds[k].dt != dt))
		return sc_fail(err, errlen, "has dtype %s, which is not read as %s (%s)", t->dtype, sc_dtype_name(dt),
		            sc_is_half(dt) || dt == SC_F32 ? "F64, F32, F16 and BF16 are"
		            : dt == SC_I64 ? "I64 is" : dt == SC_I32 ? "I32 is" : "BOOL is");
	bool same = t->ndim == ndim;
	for (int d = 0; same && d < ndim; d++)
		same = t->dims[d] == gdims[d];
	if (!same)
		return sc_fail(err, errlen, "has shape %s, expected %s",
		            t->ndim > SC_MAX_DIMS ? "of more than 8 dims" : sc_dims_str(a, sizeof a, t->dims, t->ndim),
		            sc_dims_str(b, sizeof b, gdims, ndim));
	size_t fes = kinds[k].size, des = sc_dtype_size(dt);
	int64_t numel = sc_numel(gdims, ndim);
	if (t->end - t->begin != numel * (int64_t)fes)
		return sc_fail(err, errlen, "has data_offsets [%lld, %lld]: %lld bytes, but %s of %s is %lld",
		            (long long)t->begin, (long long)t->end, (long long)(t->end - t->begin), t->dtype,
		            sc_dims_str(a, sizeof a, gdims, ndim), (long long)numel * (long long)fes);
	if (!dst)
		return true;
	/* ldims[kc:] whole: a run spans ldims[kc:] (kc the last cut dim, or the first) */
	int kc = ndim;
	while (kc > 0 && ldims[kc - 1] == gdims[kc - 1])
		kc--;
	kc -= kc > 0;
	int64_t run = sc_numel(ldims + kc, ndim - kc), nruns = sc_numel(ldims, kc), per = BLOCK / (int64_t)fes;
	char *buf = malloc((size_t)(run < per ? run : per) * fes + 1);
	if (!buf)
		SC_DIE("out of memory");
	bool ok = true;
	errno = 0;
	for (int64_t r = 0; r < nruns && ok; r++) {
		int64_t off = 0, stride = 1, rest = r;   /* the run's first element in the whole tensor */
		for (int d = ndim - 1; d >= 0; d--) {
			int64_t i = start[d];
			if (d < kc) {
				i += rest % ldims[d];
				rest /= ldims[d];
			}
			off += i * stride;
			stride *= gdims[d];
		}
		for (int64_t done = 0; done < run && ok; done += per) {
			int64_t m = run - done < per ? run - done : per;
			ok = read_at(fd, buf, (size_t)m * fes, h->data_start + t->begin + (off + done) * (int64_t)fes);
			if (ok)
				convert(buf, k, (char *)dst + (size_t)(r * run + done) * des, dt, m);
		}
	}
	free(buf);
	return ok || sc_fail(err, errlen, "cannot be read: %s", errno ? strerror(errno) : "short read");
}

/* ---- collective reading ---- */

struct sc_safetensors {
	char *path;                  /* for messages */
	int fd;
	sc_st_header h;
	char *renames;               /* the --param-names file, NULL: none */
	char **from, **to;           /* (nren): parameter from[i] is tensor to[i] */
	int nren;
};

/* The rename file, {"ir_name": "file_name"}, into st; every key must be one of names[0..n). */
static bool read_renames(sc_safetensors *st, const char *path, const char *const *names, int n, char *why,
                         size_t len)
{
	json_error_t je;
	json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
	if (!root)
		return je.line < 0 ? sc_fail(why, len, "cannot be read: %s", je.text)
		                   : sc_fail(why, len, "is not JSON: line %d, column %d: %s", je.line, je.column, je.text);
	bool ok = json_is_object(root);
	if (!ok)
		sc_fail(why, len, "is not a JSON object {\"parameter\": \"tensor\", ...}");
	st->from = calloc(json_object_size(root) + 1, sizeof *st->from);
	st->to = calloc(json_object_size(root) + 1, sizeof *st->to);
	if (!st->from || !st->to)
		SC_DIE("out of memory");
	const char *key;
	json_t *v;
	json_object_foreach(root, key, v) {
		char c1[SC_NAME_BUF];
		bool known = false;
		for (int j = 0; j < n && !known; j++)
			known = strcmp(key, names[j]) == 0;
		if (!json_is_string(v)) {
			ok = sc_fail(why, len, "maps '%s' to a %s, not a tensor's name", sc_cut(c1, key, strlen(key)),
			          json_is_object(v) ? "object" : json_is_array(v) ? "list" : json_is_number(v) ? "number" : "non-string");
			break;
		}
		if (!known) {
			int at = snprintf(why, len, "renames '%s', but the model has no parameter of that name (it has:",
			                  sc_cut(c1, key, strlen(key)));
			for (int j = 0; j < n && at > 0 && (size_t)at < len; j++)
				at += snprintf(why + at, len - (size_t)at, " %s", sc_cut(c1, names[j], strlen(names[j])));
			if (at > 0 && (size_t)at < len)
				snprintf(why + at, len - (size_t)at, "%s)", n ? "" : " none");
			ok = false;
			break;
		}
		st->from[st->nren] = sc_strdup(key);
		st->to[st->nren++] = sc_strdup(json_string_value(v));
	}
	json_decref(root);
	return ok;
}

sc_safetensors *sc_safetensors_open(sc_rt *rt, const char *option, const char *path, const char *renames,
                                    const char *const *names, int n)
{
	char why[1024] = "", msg[1400], c1[SC_NAME_BUF], c2[SC_NAME_BUF];
	if (!path) {   /* every rank has the same command line */
		if (renames) {
			snprintf(msg, sizeof msg, "shardc: --param-names %s needs --params FILE.safetensors",
			         sc_cut(c1, renames, strlen(renames)));
			sc_agree_or_exit(rt, false, msg);
		}
		return NULL;
	}
	sc_safetensors *st = calloc(1, sizeof *st);
	if (!st)
		SC_DIE("out of memory");
	st->path = sc_strdup(path);
	st->renames = renames ? sc_strdup(renames) : NULL;
	/* O_NONBLOCK: a FIFO would block every rank in open; a directory reads as garbage */
	struct stat sb = {0};
	st->fd = open(path, O_RDONLY | O_NONBLOCK);
	bool ok = st->fd >= 0 && fstat(st->fd, &sb) == 0;
	if (!ok)
		snprintf(why, sizeof why, "cannot be opened: %s", strerror(errno));
	else if (!(ok = S_ISREG(sb.st_mode)))
		snprintf(why, sizeof why, "is %s, not a safetensors file", S_ISDIR(sb.st_mode) ? "a directory"
		         : S_ISFIFO(sb.st_mode) ? "a FIFO (named pipe)" : "not a regular file");
	ok = ok && sc_st_read_header(st->fd, (int64_t)sb.st_size, &st->h, why, sizeof why);
	snprintf(msg, sizeof msg, "shardc: %s %s %s", option, sc_cut(c1, path, strlen(path)), why);
	sc_agree_or_exit(rt, ok, msg);
	ok = !renames || read_renames(st, renames, names, n, why, sizeof why);
	snprintf(msg, sizeof msg, "shardc: --param-names %s %s", renames ? sc_cut(c2, renames, strlen(renames)) : "", why);
	sc_agree_or_exit(rt, ok, msg);
	return st;
}

void sc_load_safetensors(sc_rt *rt, sc_safetensors *st, const char *name, void *dst, sc_dtype dt,
                         const int64_t *gdims, int ndim, const int64_t *start, const int64_t *ldims)
{
	int64_t real[SC_MAX_DIMS];   /* read packed, then spread over the piece with its padding 0 */
	sc_piece_real("sc_load_safetensors", gdims, ndim, start, ldims, real);
	const char *tensor = name;
	for (int i = 0; i < st->nren; i++)
		if (strcmp(st->from[i], name) == 0)
			tensor = st->to[i];
	char why[512] = "", msg[1024], c1[SC_NAME_BUF], c2[SC_NAME_BUF], c3[SC_NAME_BUF], c4[SC_NAME_BUF];
	const sc_st_tensor *t = sc_st_find(&st->h, tensor);
	int64_t n = sc_numel(ldims, ndim);
	void *host = dst ? malloc((size_t)n * sc_dtype_size(dt) + 1) : NULL;
	if (dst && !host)
		SC_DIE("out of memory");
	bool ok = t && sc_st_read_slice(st->fd, &st->h, t, dt, gdims, ndim, start, real, host, why, sizeof why);
	sc_cut(c1, name, strlen(name));
	sc_cut(c2, st->path, strlen(st->path));
	sc_cut(c3, tensor, strlen(tensor));
	if (!t && tensor != name)
		snprintf(msg, sizeof msg, "shardc: parameter '%s': %s has no tensor '%s' (its name in %s)", c1, c2, c3,
		         sc_cut(c4, st->renames, strlen(st->renames)));
	else if (!t) {   /* the names the file holds, and how to map them (a checkpoint's own file has the model's) */
		int at = snprintf(msg, sizeof msg, "shardc: parameter '%s': %s has no tensor '%s' (it holds", c1, c2, c3);
		for (int i = 0; i < st->h.n && i < 6 && at > 0 && (size_t)at < sizeof msg; i++)
			at += snprintf(msg + at, sizeof msg - (size_t)at, "%s '%s'", i ? "," : "",
			               sc_cut(c4, st->h.t[i].name, strlen(st->h.t[i].name)));
		if (at > 0 && (size_t)at < sizeof msg)
			snprintf(msg + at, sizeof msg - (size_t)at, "%s)%s", st->h.n > 6 ? ", ..." : st->h.n ? "" : " none",
			         st->renames ? "" : "; where its names differ from the model's, --param-names FILE.json maps "
			         "them");
	} else
		snprintf(msg, sizeof msg, "shardc: parameter '%s': tensor '%s' of %s %s", c1, c3, c2, why);
	sc_agree_or_exit(rt, ok, msg);
	if (dst) {
		sc_piece_pad(host, sc_dtype_size(dt), ndim, real, ldims);
		sc_from_host(rt, dst, host, (size_t)n * sc_dtype_size(dt));
	}
	free(host);
}

void sc_safetensors_close(sc_safetensors *st)
{
	if (!st)
		return;
	if (st->fd >= 0)
		close(st->fd);
	sc_st_header_free(&st->h);
	for (int i = 0; i < st->nren; i++) {
		free(st->from[i]);
		free(st->to[i]);
	}
	free(st->from);
	free(st->to);
	free(st->renames);
	free(st->path);
	free(st);
}

/* ---- writing ---- */

bool sc_st_write_header(FILE *f, const sc_st_piece *p, int n)
{
	json_t *root = json_object();
	int64_t at = 0;
	for (int i = 0; i < n; i++) {
		json_t *shape = json_array();
		for (int d = 0; d < p[i].ndim; d++)
			json_array_append_new(shape, json_integer(p[i].gdims[d]));
		int64_t bytes = sc_numel(p[i].gdims, p[i].ndim) * (int64_t)sc_dtype_size(p[i].dt);
		json_object_set_new(root, p[i].name, json_pack("{s:s, s:o, s:[I, I]}", "dtype", kinds[kind_of_dt(p[i].dt)].name,
		                                               "shape", shape, "data_offsets", (json_int_t)at,
		                                               (json_int_t)(at + bytes)));
		at += bytes;
	}
	json_object_set_new(root, "__metadata__", json_pack("{s:s}", "format", "pt"));
	char *text = json_dumps(root, JSON_COMPACT);
	json_decref(root);
	if (!text)
		SC_DIE("out of memory");
	size_t len = strlen(text), padded = (len + 7) / 8 * 8;   /* the data starts 8-byte aligned */
	unsigned char head[8];
	for (int i = 0; i < 8; i++)
		head[i] = (unsigned char)((uint64_t)padded >> (8 * i));
	bool ok = fwrite(head, 1, 8, f) == 8 && fwrite(text, 1, len, f) == len;
	for (size_t i = len; ok && i < padded; i++)
		ok = fputc(' ', f) != EOF;
	free(text);
	return ok;
}

struct sc_safetensors_writer {
	char *dir, *file;
	sc_st_piece *p;              /* (n): this rank's pieces, in the file's order */
	int n, cap;
};

sc_safetensors_writer *sc_safetensors_create(const char *dir, const char *file)
{
	sc_safetensors_writer *w = calloc(1, sizeof *w);
	if (!w)
		SC_DIE("out of memory");
	w->dir = dir ? sc_strdup(dir) : NULL;
	w->file = sc_strdup(file);
	return w;
}

void sc_st_piece_add(sc_st_piece **p, int *n, int *cap, const char *what, const char *name, const void *src,
                     sc_dtype dt, const int64_t *gdims, int ndim, const int64_t *start, const int64_t *ldims)
{
	int64_t real[SC_MAX_DIMS];   /* the checks; the writers clip the piece again */
	char cut[SC_NAME_BUF], named[SC_NAME_BUF + 64];
	snprintf(named, sizeof named, "%s: %s", what, sc_cut(cut, name, strlen(name)));
	sc_piece_real(named, gdims, ndim, start, ldims, real);
	if (*n == *cap) {
		*cap = *cap ? 2 * *cap : 16;
		if (!(*p = realloc(*p, (size_t)*cap * sizeof **p)))
			SC_DIE("out of memory");
	}
	sc_st_piece *q = &(*p)[(*n)++];
	*q = (sc_st_piece){.name = sc_strdup(name), .src = src, .dt = dt, .ndim = ndim};
	for (int d = 0; d < ndim; d++) {
		q->gdims[d] = gdims[d];
		q->start[d] = start[d];
		q->ldims[d] = ldims[d];
	}
}

void sc_st_pieces_free(sc_st_piece *p, int n)
{
	for (int i = 0; i < n; i++)
		free(p[i].name);
	free(p);
}

void sc_safetensors_add(sc_safetensors_writer *w, const char *name, const void *src, sc_dtype dt,
                        const int64_t *gdims, int ndim, const int64_t *start, const int64_t *ldims)
{
	sc_st_piece_add(&w->p, &w->n, &w->cap, "sc_safetensors_add", name, src, dt, gdims, ndim, start, ldims);
}

/* The whole tensor of piece p on rank 0 (malloc'd; NULL on the others). */
static char *gather_whole(sc_rt *rt, const sc_st_piece *p)
{
	char what[512];
	snprintf(what, sizeof what, "sc_safetensors_write: %s", p->name);
	return sc_gather_whole(rt, what, p->src, p->dt, p->gdims, p->ndim, p->start, p->ldims);
}

void sc_safetensors_write(sc_rt *rt, sc_safetensors_writer *w)
{
	char path[4096], tmp[4200], msg[4600] = "";
	snprintf(path, sizeof path, "%s%s%s", w->dir ? w->dir : "", w->dir && *w->dir ? "/" : "", w->file);
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	FILE *f = rt->rank == 0 ? fopen(tmp, "wb") : NULL;
	bool ok = rt->rank != 0 || (f && sc_st_write_header(f, w->p, w->n));
	if (!ok)
		snprintf(msg, sizeof msg, "shardc: cannot write %s: %s", tmp, strerror(errno));
	for (int i = 0; i < w->n; i++) {   /* every rank takes part in every gather, whatever failed */
		char *whole = gather_whole(rt, &w->p[i]);
		size_t bytes = (size_t)sc_numel(w->p[i].gdims, w->p[i].ndim) * sc_dtype_size(w->p[i].dt);
		if (whole && ok && fwrite(whole, 1, bytes, f) != bytes) {
			ok = false;
			snprintf(msg, sizeof msg, "shardc: cannot write %s: %s", tmp, strerror(errno));
		}
		free(whole);
	}
	if (f && fclose(f) != 0 && ok) {
		ok = false;
		snprintf(msg, sizeof msg, "shardc: cannot write %s: %s", tmp, strerror(errno));
	}
	if (rt->rank == 0 && ok && rename(tmp, path) != 0) {
		ok = false;
		snprintf(msg, sizeof msg, "shardc: cannot write %s (renaming %s.tmp): %s", path, w->file, strerror(errno));
	}
	if (rt->rank == 0 && !ok && f)
		unlink(tmp);
	sc_st_pieces_free(w->p, w->n);
	free(w->dir);
	free(w->file);
	free(w);
	sc_agree_or_exit(rt, ok, msg);
}
