/* util.c: arena, string buffer, allocation wrappers, die(). */
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Small allocations are bumped out of shared chunks. A large one gets a chunk
 * of its own on a doubly linked list, so that growing it (a node array that
 * doubles) reallocates in place instead of leaving dead copies behind. */
typedef struct Chunk {
	struct Chunk *next, *prev;
	size_t size, used;
	bool big;                /* holds one large allocation */
	_Alignas(16) unsigned char data[];
} Chunk;

struct Arena {
	Chunk *head;             /* shared chunks, newest first */
	Chunk *big;              /* large allocations */
	size_t reserved;
};

enum { CHUNK_MIN = 64 * 1024, BIG = 16 * 1024 };

Arena *arena_new(void)
{
	return xcalloc(1, sizeof(Arena));
}

void arena_free(Arena *a)
{
	if (!a)
		return;
	for (Chunk *c = a->head, *next; c; c = next) {
		next = c->next;
		free(c);
	}
	for (Chunk *c = a->big, *next; c; c = next) {
		next = c->next;
		free(c);
	}
	free(a);
}

static void link_big(Arena *a, Chunk *c)
{
	c->prev = NULL;
	c->next = a->big;
	if (a->big)
		a->big->prev = c;
	a->big = c;
}

static void *alloc_big(Arena *a, size_t size)
{
	Chunk *c = xmalloc(sizeof(Chunk) + size);
	c->size = c->used = size;
	c->big = true;
	link_big(a, c);
	a->reserved += size;
	memset(c->data, 0, size);
	return c->data;
}

void *arena_alloc(Arena *a, size_t size)
{
	size = (size + 15) & ~(size_t)15;
	if (size >= BIG)
		return alloc_big(a, size);
	Chunk *c = a->head;
	if (!c || c->size - c->used < size) {
		size_t want = size > CHUNK_MIN ? size : CHUNK_MIN;
		if (c && c->size * 2 > want && c->size < 16 * 1024 * 1024)
			want = c->size * 2;
		c = xmalloc(sizeof(Chunk) + want);
		c->size = want;
		c->used = 0;
		c->next = a->head;
		a->head = c;
		a->reserved += want;
	}
	void *p = c->data + c->used;
	c->used += size;
	memset(p, 0, size);
	return p;
}

void *arena_grow(Arena *a, void *old, size_t oldsize, size_t newsize)
{
	if (old && oldsize >= BIG && newsize > oldsize) {
		Chunk *c = (Chunk *)((unsigned char *)old - offsetof(Chunk, data));
		if (c->prev)
			c->prev->next = c->next;
		else
			a->big = c->next;
		if (c->next)
			c->next->prev = c->prev;
		a->reserved += newsize - c->size;
		c = xrealloc(c, sizeof(Chunk) + newsize);
		memset(c->data + c->size, 0, newsize - c->size);
		c->size = c->used = newsize;
		link_big(a, c);
		return c->data;
	}
	void *p = arena_alloc(a, newsize);
	if (old && oldsize)
		memcpy(p, old, oldsize < newsize ? oldsize : newsize);
	return p;
}

void arena_reserve(Arena *a, void *arrp, int len, int *cap, size_t elsize)
{
	if (len < *cap)
		return;
	void *old;
	memcpy(&old, arrp, sizeof old);
	int newcap = *cap ? 2 * *cap : 4;
	void *arr = arena_grow(a, old, elsize * (size_t)*cap, elsize * (size_t)newcap);
	memcpy(arrp, &arr, sizeof arr);
	*cap = newcap;
}

struct Interner {
	Arena *a;
	const void **slot;       /* open addressing; NULL empty */
	size_t *size;            /* (nslot) the bytes of each slot's record */
	size_t nslot, n;
};

Interner *interner_new(Arena *a)
{
	Interner *t = arena_alloc(a, sizeof *t);
	t->a = a;
	return t;
}

static uint64_t hash_bytes(const void *p, size_t size)
{
	const unsigned char *b = p;
	uint64_t h = 0xcbf29ce484222325ull ^ size;
	size_t i = 0;
	for (; i + 8 <= size; i += 8) {   /* a word at a time: records are a kilobyte */
		uint64_t w;
		memcpy(&w, b + i, 8);
		h = (h ^ w) * 0x100000001b3ull;
		h ^= h >> 29;
	}
	for (; i < size; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static void interner_grow(Interner *t)
{
	size_t old = t->nslot, nslot = old ? 2 * old : 64;
	/* Old tables stay in the arena: all of them together are smaller than the last. */
	const void **slot = arena_alloc(t->a, nslot * sizeof *slot);
	size_t *size = arena_alloc(t->a, nslot * sizeof *size);
	for (size_t i = 0; i < old; i++) {
		if (!t->slot[i])
			continue;
		size_t at = hash_bytes(t->slot[i], t->size[i]) & (nslot - 1);
		while (slot[at])
			at = (at + 1) & (nslot - 1);
		slot[at] = t->slot[i];
		size[at] = t->size[i];
	}
	t->slot = slot;
	t->size = size;
	t->nslot = nslot;
}

const void *intern_bytes(Interner *t, const void *p, size_t size)
{
	if (2 * (t->n + 1) > t->nslot)
		interner_grow(t);
	size_t at = hash_bytes(p, size) & (t->nslot - 1);
	for (; t->slot[at]; at = (at + 1) & (t->nslot - 1))
		if (t->size[at] == size && memcmp(t->slot[at], p, size) == 0)
			return t->slot[at];
	void *copy = arena_alloc(t->a, size);
	memcpy(copy, p, size);
	t->slot[at] = copy;
	t->size[at] = size;
	t->n++;
	return copy;
}

static void merge_pass(char *a, char *tmp, size_t n, size_t size, int (*cmp)(const void *, const void *, void *),
                       void *ctx)
{
	if (n < 2)
		return;
	size_t h = n / 2;
	merge_pass(a, tmp, h, size, cmp, ctx);
	merge_pass(a + h * size, tmp, n - h, size, cmp, ctx);
	size_t i = 0, j = h, k = 0;
	while (i < h && j < n) {
		if (cmp(a + j * size, a + i * size, ctx) < 0)
			memcpy(tmp + k++ * size, a + j++ * size, size);
		else
			memcpy(tmp + k++ * size, a + i++ * size, size);
	}
	while (i < h)
		memcpy(tmp + k++ * size, a + i++ * size, size);
	while (j < n)
		memcpy(tmp + k++ * size, a + j++ * size, size);
	memcpy(a, tmp, n * size);
}

void sort_r(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *, void *), void *ctx)
{
	if (n < 2)
		return;
	char *tmp = xmalloc(n * size);
	merge_pass(base, tmp, n, size, cmp, ctx);
	free(tmp);
}

char *arena_strndup(Arena *a, const char *s, size_t n)
{
	char *p = arena_alloc(a, n + 1);
	memcpy(p, s, n);
	p[n] = 0;
	return p;
}

char *arena_strdup(Arena *a, const char *s)
{
	return arena_strndup(a, s, strlen(s));
}

size_t arena_bytes(const Arena *a)
{
	return a->reserved;
}

void sb_vprintf(StrBuf *b, const char *fmt, va_list ap)
{
	va_list ap2;
	va_copy(ap2, ap);
	int n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (n < 0)
		die("vsnprintf failed");
	if (b->len + (size_t)n + 1 > b->cap) {
		b->cap = (b->len + (size_t)n + 1) * 2;
		b->data = xrealloc(b->data, b->cap);
	}
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
}

void sb_printf(StrBuf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	sb_vprintf(b, fmt, ap);
	va_end(ap);
}

void sb_putc(StrBuf *b, char c)
{
	if (b->len + 2 > b->cap) {
		b->cap = b->cap ? 2 * b->cap : 64;
		b->data = xrealloc(b->data, b->cap);
	}
	b->data[b->len++] = c;
	b->data[b->len] = 0;
}

void sb_c_comment(StrBuf *b, const char *s)
{
	for (const char *c = s; *c; c++) {
		unsigned char u = (unsigned char)*c;
		if (*c == '\\')
			sb_puts(b, "\\\\");
		else if (*c == '\n')
			sb_puts(b, "\\n");
		else if (u < 0x20 || u == 0x7f)
			sb_printf(b, "\\%03o", u);
		else if (*c == '/' && c > s && c[-1] == '*')
			sb_puts(b, "\\/");
		else if (*c == '*' && c > s && c[-1] == '/')
			sb_puts(b, "\\*");
		else if (*c == '?' && c[1] == '?')
			sb_puts(b, "?\\");
		else
			sb_putc(b, *c);
	}
}

void sb_puts(StrBuf *b, const char *s)
{
	size_t n = strlen(s);
	if (b->len + n + 1 > b->cap) {
		b->cap = (b->len + n + 1) * 2;
		b->data = xrealloc(b->data, b->cap);
	}
	memcpy(b->data + b->len, s, n + 1);
	b->len += n;
}

void sb_free(StrBuf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

void sb_join(StrBuf *b, const char *const *items, int n, const char *last)
{
	for (int i = 0; i < n; i++)
		sb_printf(b, "%s%s", i == 0 ? "" : i == n - 1 ? last : ", ", items[i]);
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		die("out of memory (%zu bytes)", n);
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		die("out of memory");
	return p;
}

void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		die("out of memory (%zu bytes)", n);
	return p;
}

char *xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	return memcpy(xmalloc(n), s, n);
}

noreturn void die_(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "shardc: internal error at %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 1 << 16, n = 0;
	char *buf = xmalloc(cap);
	for (;;) {
		if (n + 1 >= cap)
			buf = xrealloc(buf, cap *= 2);
		size_t got = fread(buf + n, 1, cap - n - 1, f);
		n += got;
		if (got == 0)
			break;
	}
	int err = ferror(f);
	fclose(f);
	if (err) {
		free(buf);
		errno = EIO;
		return NULL;
	}
	buf[n] = 0;
	*len = n;
	return buf;
}

bool write_bytes(const char *path, const char *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	bool ok = f && fwrite(data, 1, len, f) == len;
	int err = errno;
	if (f && fclose(f) != 0 && ok) {
		ok = false;
		err = errno;
	}
	errno = err;
	return ok;
}

bool write_file(const char *path, const char *data, size_t len)
{
	StrBuf tmp = {0};
	sb_printf(&tmp, "%s.tmp.%ld", path, (long)getpid());
	bool ok = write_bytes(tmp.data, data, len);
	int err = errno;
	if (ok && rename(tmp.data, path) != 0) {
		ok = false;
		err = errno;
	}
	if (!ok)
		remove(tmp.data);
	sb_free(&tmp);
	errno = err;
	return ok;
}

const char *human_bytes(char *buf, double b)
{
	static const char *const unit[] = {"bytes", "kB", "MB", "GB", "TB"};
	int u = 0;
	while (b >= 1000 && u < 4)
		b /= 1000, u++;
	snprintf(buf, 32, u ? "%.3g %s" : "%.0f %s", b, unit[u]);
	return buf;
}

enum { HINT_NAME = 64 };   /* longer names are no misspelling of the language's */

/* Edit distance of a and b (each at most HINT_NAME bytes), case ignored:
 * insertions, deletions, substitutions and swaps of neighbours (Int23). */
static int distance(const char *a, const char *b)
{
	int la = (int)strlen(a), lb = (int)strlen(b);
	static const int W = HINT_NAME + 1;
	int d[(HINT_NAME + 1) * (HINT_NAME + 1)];
	for (int i = 0; i <= la; i++)
		for (int j = 0; j <= lb; j++) {
			if (!i || !j) {
				d[i * W + j] = i + j;
				continue;
			}
			char x = (char)tolower((unsigned char)a[i - 1]), y = (char)tolower((unsigned char)b[j - 1]);
			int best = d[(i - 1) * W + j - 1] + (x != y);
			if (d[(i - 1) * W + j] + 1 < best)
				best = d[(i - 1) * W + j] + 1;
			if (d[i * W + j - 1] + 1 < best)
				best = d[i * W + j - 1] + 1;
			if (i > 1 && j > 1 && x == tolower((unsigned char)b[j - 2]) && y == tolower((unsigned char)a[i - 2]) &&
			    d[(i - 2) * W + j - 2] + 1 < best)
				best = d[(i - 2) * W + j - 2] + 1;
			d[i * W + j] = best;
		}
	return d[la * W + lb];
}

const char *did_you_mean(char *buf, size_t size, const char *name, const char *const *names, int n)
{
	buf[0] = 0;
	size_t len = strlen(name);
	if (len == 0 || len > HINT_NAME)
		return buf;
	const char *best = NULL;
	int best_d = 3;
	for (int k = 0; k < n && best_d > 0; k++) {
		if (strlen(names[k]) > HINT_NAME)
			continue;
		int d = distance(name, names[k]);
		if (d < best_d && 3 * d <= (int)len) {
			best = names[k];
			best_d = d;
		}
	}
	if (best && strcmp(best, name) != 0)
		snprintf(buf, size, " (did you mean '%s'?)", best);
	return buf;
}
