/* diag.c: `file:line:col: error: message` (or `warning:`, which is no
 * error: the compilation goes on and exits 0), the source line and a caret.
 *
 * Locations travel as byte spans; lines and columns are computed only here,
 * from a table of line starts built on the first error. Columns count bytes
 * from 1. Very long lines are shown as a window around the column. */
#include "shardc.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>

static void build_lines(Source *src)
{
	int n = 1;
	for (int i = 0; i < src->len; i++)
		n += src->text[i] == '\n';
	src->line_starts = xmalloc(sizeof(int) * (size_t)n);
	src->nlines = 0;
	src->line_starts[src->nlines++] = 0;
	for (int i = 0; i < src->len; i++)
		if (src->text[i] == '\n')
			src->line_starts[src->nlines++] = i + 1;
}

void source_line_col(Source *src, int offset, int *line, int *col)
{
	if (!src->line_starts)
		build_lines(src);
	if (offset < 0)
		offset = 0;
	if (offset > src->len)
		offset = src->len;
	int lo = 0, hi = src->nlines - 1;
	while (lo < hi) {
		int mid = (lo + hi + 1) / 2;
		if (src->line_starts[mid] <= offset)
			lo = mid;
		else
			hi = mid - 1;
	}
	*line = lo + 1;
	*col = offset - src->line_starts[lo] + 1;
}

enum { WINDOW = 120 };

/* Length of the well-formed multi-byte UTF-8 sequence at s, or 0. */
static int utf8_length(const char *s, int avail)
{
	unsigned char c = (unsigned char)s[0];
	int n = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
	if (c >= 0xf5 || n > avail)
		return 0;
	for (int k = 1; k < n; k++)
		if (((unsigned char)s[k] & 0xc0) != 0x80)
			return 0;
	return n;
}   /* bytes of a long line shown around the caret */

static void print_caret(FILE *out, Source *src, int line, int col)
{
	int start = src->line_starts[line - 1];
	int end = start;
	while (end < src->len && src->text[end] != '\n')
		end++;
	int from = start, to = end;
	if (col - 1 > WINDOW / 2)
		from = start + col - 1 - WINDOW / 2;
	if (to - from > WINDOW)
		to = from + WINDOW;
	StrBuf b = {0};
	sb_puts(&b, "  ");
	for (int i = from; i < to;) {
		int n = utf8_length(src->text + i, to - i);
		if (n == 0) {
			unsigned char c = (unsigned char)src->text[i];
			sb_putc(&b, c == '\t' || (c >= 0x20 && c < 0x7f) ? (char)c : '?');
			i++;
		} else {
			for (int k = 0; k < n; k++)
				sb_putc(&b, src->text[i++]);
		}
	}
	sb_puts(&b, "\n  ");
	for (int i = from; i < start + col - 1 && i < to; i++)
		sb_putc(&b, src->text[i] == '\t' ? '\t' : ' ');
	sb_puts(&b, "^\n");
	fputs(b.data, out);
	sb_free(&b);
}

enum { NAME_SHOWN = 64 };   /* bytes of a long name a message shows */

/* The message, with every name (a run of [A-Za-z0-9_.]) longer than
 * NAME_SHOWN + 16 bytes cut to its first NAME_SHOWN, "..." and its length:
 * a 100 MB identifier gives a short message. */
static void put_message(FILE *out, const char *fmt, va_list ap)
{
	StrBuf b = {0}, m = {0};
	sb_vprintf(&b, fmt, ap);
	for (size_t i = 0; i < b.len;) {
		size_t j = i;
		while (j < b.len && (isalnum((unsigned char)b.data[j]) || b.data[j] == '_' || b.data[j] == '.'))
			j++;
		if (j - i > NAME_SHOWN + 16) {
			sb_printf(&m, "%.*s... (%zu bytes)", NAME_SHOWN, b.data + i, j - i);
			i = j;
		} else if (j > i) {
			sb_printf(&m, "%.*s", (int)(j - i), b.data + i);
			i = j;
		} else
			sb_putc(&m, b.data[i++]);
	}
	sb_putc(&m, '\n');
	fputs(m.data, out);
	sb_free(&b);
	sb_free(&m);
}

/* One message: where, what kind, the message, the caret. */
static void report(Diag *d, const Source *csrc, Span at, const char *kind, const char *fmt, va_list ap)
{
	Source *src = (Source *)csrc;   /* the line table is a cache */
	FILE *out = d->out ? d->out : stderr;
	if (src->value_offset) {   /* a command-line value: name the flag, not a line */
		int n = src->len - src->value_offset - 1;
		fprintf(out, "shardc: %s '%.*s': %s: ", src->name, n, src->text + src->value_offset, kind);
		put_message(out, fmt, ap);
		return;
	}
	int line, col;
	source_line_col(src, at.start, &line, &col);
	fprintf(out, "%s:%d:%d: %s: ", src->name, line, col, kind);
	put_message(out, fmt, ap);
	if (d->caret)
		print_caret(out, src, line, col);
}

void diag_error(Diag *d, const Source *src, Span at, const char *fmt, ...)
{
	d->nerrors++;
	if (d->nerrors > MAX_ERRORS)
		return;
	va_list ap;
	va_start(ap, fmt);
	report(d, src, at, "error", fmt, ap);
	va_end(ap);
	if (d->nerrors == MAX_ERRORS && !src->value_offset)
		fprintf(d->out ? d->out : stderr, "%s: too many errors, stopping here\n", src->name);
}

void diag_warning(Diag *d, const Source *src, Span at, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	report(d, src, at, "warning", fmt, ap);
	va_end(ap);
}
