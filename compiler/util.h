/* util.h: containers and helpers that know nothing of the IR.
 *
 * Arena: bump allocator; everything a module owns lives in one and is freed at
 * once. StrBuf: a growable string. die(): an internal invariant broke (our bug),
 * print where and abort. */
#ifndef SHARDC_UTIL_H
#define SHARDC_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdnoreturn.h>

typedef struct Arena Arena;

Arena *arena_new(void);
void arena_free(Arena *a);
void *arena_alloc(Arena *a, size_t size);              /* zeroed, 16-byte aligned */
void *arena_grow(Arena *a, void *old, size_t oldsize, size_t newsize);
char *arena_strndup(Arena *a, const char *s, size_t n);
char *arena_strdup(Arena *a, const char *s);
size_t arena_bytes(const Arena *a);                    /* bytes reserved so far */

/* Make room for one more element in the arena-backed array *arrp (a pointer
 * to the array pointer) of len elements, doubling *cap when full. */
void arena_reserve(Arena *a, void *arrp, int len, int *cap, size_t elsize);
#define ARENA_PUSH(arena, arr, len, cap) \
	(arena_reserve((arena), &(arr), (len), &(cap), sizeof *(arr)), &(arr)[(len)++])

/* Interner: one arena copy of each distinct byte string, so that many equal
 * records (strategies of the layers of a deep stack) share one copy. Callers
 * zero padding (memset) before interning structs. Lives in the arena. */
typedef struct Interner Interner;

Interner *interner_new(Arena *a);
const void *intern_bytes(Interner *t, const void *p, size_t size);

typedef struct {
	char *data;
	size_t len, cap;
} StrBuf;

void sb_putc(StrBuf *b, char c);
void sb_puts(StrBuf *b, const char *s);
void sb_printf(StrBuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sb_vprintf(StrBuf *b, const char *fmt, va_list ap);
void sb_free(StrBuf *b);
/* items[0..n) separated by ", ", with `last` (", ", " or ") before the last one. */
void sb_join(StrBuf *b, const char *const *items, int n, const char *last);
/* s as text safe inside a C block comment: no star-slash or slash-star, no control
 * characters (escaped as in a C string: \n, \ooo), no trigraph; backslash
 * doubled. Text with none of these is appended unchanged. */
void sb_c_comment(StrBuf *b, const char *s);

/* ` (did you mean 'X'?)`, appended to the message about an unknown `name`,
 * when X among names[0..n) is likely what was meant: X equal to it but for
 * case, else the nearest by edit distance (case ignored) within two edits
 * and a third of name's length, the first in order on a tie; "" otherwise.
 * The text is written to buf (DID_YOU_MEAN gives one). */
const char *did_you_mean(char *buf, size_t size, const char *name, const char *const *names, int n);
#define DID_YOU_MEAN(name, names, n) did_you_mean((char[128]){0}, 128, (name), (names), (n))

/* Stable merge sort with a context argument (qsort has none). */
void sort_r(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *, void *), void *ctx);

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);

noreturn void die_(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
#define die(...) die_(__FILE__, __LINE__, __VA_ARGS__)

/* Read a whole file; NULL and errno set on failure. Appends a NUL not counted in *len. */
char *read_file(const char *path, size_t *len);
/* Write len bytes to path (created or truncated); false and errno set on failure. */
bool write_bytes(const char *path, const char *data, size_t len);
/* Write len bytes to path through a temporary file beside it and rename, so
 * no half-written file is ever seen; false and errno set on failure (the
 * temporary removed). */
bool write_file(const char *path, const char *data, size_t len);
/* b bytes as `512 bytes`, `2.56 kB`, `1.5 MB` (powers of 1000) in buf (32 bytes); returns buf. */
const char *human_bytes(char *buf, double b);

#endif
