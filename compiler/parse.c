/* parse.c: text to Module. Runs the generated parser and holds the builders
 * its actions call. Builders check only what is local to the text (a known
 * operator name, a well-formed type or layout); names and meaning are checked
 * later (check.c, shape.c). */
#include "parse_internal.h"
#include "parser.h"
#include "misc_ops.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef void *yyscan_t;
int ir_lex_init_extra(Parser *extra, yyscan_t *scanner);
int ir_lex_destroy(yyscan_t scanner);
struct yy_buffer_state *ir__scan_bytes(const char *bytes, int len, yyscan_t scanner);
int ir_parse(void *scanner, Parser *p);

Module *parse_module(const char *name, const char *text, int len, Diag *d)
{
	Arena *a = arena_new();
	Module *m = arena_alloc(a, sizeof *m);
	m->arena = a;
	m->src = arena_alloc(a, sizeof *m->src);
	m->src->name = arena_strdup(a, name);
	m->src->text = text;
	m->src->len = len;
	Parser p = {.m = m, .d = d};
	yyscan_t scanner;
	if (ir_lex_init_extra(&p, &scanner))
		die("cannot start the lexer");
	ir__scan_bytes(text, len, scanner);
	ir_parse(scanner, &p);
	ir_lex_destroy(scanner);
	if (p.cur)
		build_end_graph(&p);
	return m;
}

void module_free(Module *m)
{
	if (!m)
		return;
	free(m->src->line_starts);
	free(m->owned_text);
	arena_free(m->arena);
}

/* ---- lexer helpers ---- */

int lex_int(Parser *p, const char *text, IR_STYPE *lval, Span at)
{
	errno = 0;
	long long v = strtoll(text, NULL, 10);
	if (errno == ERANGE)
		return lex_bad(p, at, "integer literal out of range (64-bit)");
	lval->i = v;
	return INT;
}

int lex_float(Parser *p, const char *text, IR_STYPE *lval, Span at)
{
	errno = 0;
	double v = strtod(text, NULL);
	if (errno == ERANGE && (v > 1 || v < -1))
		return lex_bad(p, at, "float literal out of range");
	lval->f = v;
	return FLOAT;
}

int lex_string(Parser *p, const char *text, int len, IR_STYPE *lval, Span at)
{
	char *s = arena_alloc(p->m->arena, (size_t)len);
	int n = 0;
	const char *nul = memchr(text, 0, (size_t)len);
	if (nul) {
		Span at_nul = {at.start + (int)(nul - text), at.start + (int)(nul - text) + 1};
		return lex_bad(p, at_nul, "a string may not contain a NUL byte");
	}
	for (int i = 1; i < len - 1; i++) {
		if (text[i] == '\\') {
			i++;
			if (text[i] != '"' && text[i] != '\\') {
				Span esc = {at.start + i - 1, at.start + i + 1};
				return lex_bad(p, esc, "unknown escape in string (only \\\" and \\\\ are allowed)");
			}
		}
		s[n++] = text[i];
	}
	s[n] = 0;
	lval->s = s;
	return STRING;
}

int lex_bad(Parser *p, Span at, const char *msg)
{
	diag_error(p->d, p->m->src, at, "%s", msg);
	return ERROR;
}

int lex_bad_char(Parser *p, Span at, unsigned char c)
{
	if (c >= 0x20 && c < 0x7f)
		diag_error(p->d, p->m->src, at, "unexpected character '%c'", c);
	else
		diag_error(p->d, p->m->src, at, "unexpected byte 0x%02x", c);
	return ERROR;
}

void parse_syntax_error(Parser *p, Span at, const char *msg)
{
	/* A bad token was already reported by the lexer. */
	if (at.end > at.start && strstr(msg, "unexpected bad token"))
		return;
	if (strcmp(msg, "memory exhausted") == 0)
		msg = "nested too deeply (brackets may nest about 10000 levels)";
	bool list = strncmp(msg, "syntax error, unexpected '['", 28) == 0;   /* Python's [[2, 4], [4, 1]] */
	diag_error(p->d, p->m->src, at, "%s%s", msg, list ? " (tuples and strategies are written with parentheses, "
	           "((2, 4), (4, 1)), as MindSpore's shard takes them; brackets belong to types: <Tensor[Float32], "
	           "(8,)>)" : "");
}

/* ---- literals ---- */

Lit *lit_list(Parser *p, Span at)
{
	return lit_new(p->m->arena, LIT_TUPLE, at);
}

Lit *lit_append(Parser *p, Lit *list, Lit *key, Lit *item)
{
	if (!list)
		list = lit_new(p->m->arena, LIT_TUPLE, item->span);
	lit_push(p->m->arena, list, key, item);
	list->span.end = item->span.end;
	return list;
}

Lit *lit_name(Parser *p, LitKind kind, const char *s, Span at)
{
	Lit *l = lit_new(p->m->arena, kind, at);
	l->s = s;
	return l;
}

Lit *lit_int(Parser *p, LitKind kind, int64_t v, Span at)
{
	Lit *l = lit_new(p->m->arena, kind, at);
	l->i = v;
	return l;
}

Lit *lit_float(Parser *p, double v, Span at)
{
	Lit *l = lit_new(p->m->arena, LIT_FLOAT, at);
	l->f = v;
	return l;
}

Lit *lit_operand(Parser *p, Lit *number)
{
	const char *text = p->m->src->text + number->span.start;
	number->s = arena_strndup(p->m->arena, text, (size_t)(number->span.end - number->span.start));
	return number;
}

static Lit *relabel(Parser *p, Lit *items, LitKind kind, Span at)
{
	if (!items)
		items = lit_new(p->m->arena, kind, at);
	items->kind = kind;
	items->span = at;
	return items;
}

Lit *lit_tuple(Parser *p, Lit *items, Span at)
{
	return relabel(p, items, LIT_TUPLE, at);
}

static void check_duplicate_keys(Parser *p, const Lit *l, const char *what)
{
	for (int i = 0; i < l->nitems; i++)
		for (int j = 0; l->keys[i] && j < i; j++)
			if (l->keys[j] && strcmp(l->keys[i]->s, l->keys[j]->s) == 0) {
				diag_error(p->d, p->m->src, l->keys[i]->span, "duplicate %s '%s'", what, l->keys[i]->s);
				break;
			}
}

Lit *lit_dict(Parser *p, Lit *entries, Span at)
{
	Lit *d = relabel(p, entries, LIT_DICT, at);
	check_duplicate_keys(p, d, "key");
	return d;
}

Lit *lit_apply(Parser *p, const char *callee, Lit *args, Span at)
{
	Lit *l = relabel(p, args, LIT_APPLY, at);
	l->s = callee;
	check_duplicate_keys(p, l, "argument");
	return l;
}

/* ---- module pieces ---- */

void build_context(Parser *p, Lit *dict, Span at)
{
	if (p->m->context_lit) {
		diag_error(p->d, p->m->src, at, "a module has at most one context block");
		return;
	}
	p->m->context_lit = dict;
	p->m->context_span = at;
}

/* layout NAME = Layout((2, 2, 2), ("dp", "sp", "mp")) */
void build_layout(Parser *p, const char *name, Span name_at, const char *ctor, Span ctor_at, Lit *args, Span at)
{
	Module *m = p->m;
	const Source *src = m->src;
	if (strcmp(ctor, "Layout") != 0) {
		diag_error(p->d, src, ctor_at, "expected 'Layout(device_matrix, alias_names)', found '%s'", ctor);
		return;
	}
	if (module_layout(m, name)) {
		diag_error(p->d, src, name_at, "layout '%s' is declared twice", name);
		return;
	}
	if (!args || args->nitems != 2 || args->keys[0] || args->keys[1] ||
	    args->items[0]->kind != LIT_TUPLE || args->items[1]->kind != LIT_TUPLE) {
		diag_error(p->d, src, at, "Layout takes two tuples: the device matrix and one alias per axis");
		return;
	}
	Lit *dims = args->items[0], *names = args->items[1];
	if (dims->nitems == 0 || dims->nitems > MAX_DIMS) {
		diag_error(p->d, src, dims->span, "a device matrix has 1 to %d axes", MAX_DIMS);
		return;
	}
	if (names->nitems != dims->nitems) {
		diag_error(p->d, src, names->span, "the device matrix has %d axes but %d alias names are given",
		           dims->nitems, names->nitems);
		return;
	}
	LayoutDecl *l = arena_alloc(m->arena, sizeof *l);
	l->name = name;
	l->span = at;
	l->ndims = dims->nitems;
	int64_t devices = 1;
	for (int i = 0; i < dims->nitems; i++) {
		Lit *d = dims->items[i], *n = names->items[i];
		if (d->kind != LIT_INT || d->i < 1) {
			diag_error(p->d, src, d->span, "a device matrix axis must be a positive integer");
			return;
		}
		if (d->i > (1 << 20) || (devices *= d->i) > (1 << 20)) {
			diag_error(p->d, src, d->span, "the device matrix has more than 1048576 devices");
			return;
		}
		if (n->kind != LIT_STR || strcmp(n->s, "None") == 0 || !n->s[0]) {
			diag_error(p->d, src, n->span, "an axis alias must be a non-empty string other than \"None\"");
			return;
		}
		for (int j = 0; j < i; j++)
			if (strcmp(l->alias[j], n->s) == 0) {
				diag_error(p->d, src, n->span, "alias \"%s\" names two axes", n->s);
				return;
			}
		l->dims[i] = d->i;
		l->alias[i] = n->s;
	}
	*ARENA_PUSH(m->arena, m->layouts, m->nlayouts, m->cap_layouts) = l;
}

void build_train(Parser *p, Lit *dict, Span at)
{
	if (p->m->train) {
		diag_error(p->d, p->m->src, at, "a module has at most one train block");
		return;
	}
	Train *t = arena_alloc(p->m->arena, sizeof *t);
	t->lit = dict;
	t->span = at;
	t->loss = -1;
	p->m->train = t;
}

void build_graph(Parser *p, const char *name, Span at)
{
	if (p->cur)
		build_end_graph(p);
	Graph *g = arena_alloc(p->m->arena, sizeof *g);
	g->name = name;
	g->name_span = g->span = at;
	p->cur = g;
}

static Value *add_value(Parser *p, const char *name, Span at)
{
	Graph *g = p->cur;
	Value *v = ARENA_PUSH(p->m->arena, g->values, g->nvalues, g->cap_values);
	v->name = name;
	v->span = at;
	v->node = -1;
	v->type.rank = -1;
	return v;
}

void build_param(Parser *p, const char *name, Span at, Lit *type, Lit *init)
{
	if (!p->cur)
		return;
	Value *v = add_value(p, name, at);
	v->type = *type->type;
	v->init = init;
	p->cur->nparams++;
}

static void add_stmt(Parser *p, const char *name, Span at, const char *op, Span op_at, Lit *operands, Lit *attrs,
                     Signature *sig, Span stmt_at);

/* A statement as written; MindSpore's operators misc_ops.c writes as others, as those. */
void build_stmt(Parser *p, const char *name, Span at, const char *op, Span op_at, Lit *operands,
                Lit *attrs, Signature *sig, Span stmt_at)
{
	Piece *pieces;
	int n = p->cur ? expand_composite(p->m->arena, p->d, p->m->src, name, op, op_at, operands, attrs, sig, &pieces)
	               : 0;
	if (n < 0)
		add_stmt(p, name, at, op, op_at, operands, attrs, sig, stmt_at);
	for (int k = 0; k < n; k++)
		add_stmt(p, pieces[k].name, at, pieces[k].op, op_at, pieces[k].operands, pieces[k].attrs, pieces[k].sig,
		         stmt_at);
}

static void add_stmt(Parser *p, const char *name, Span at, const char *op, Span op_at, Lit *operands, Lit *attrs,
                     Signature *sig, Span stmt_at)
{
	Graph *g = p->cur;
	if (!g)
		return;
	OpKind kind = OP_COUNT;   /* unknown: check_names reports it with the other name errors */
	op_from_name(op, &kind);
	if (!strcmp(op, "Range")) {   /* MindSpore's P.Range: Arange, its three numbers Arange's attributes (misc_ops.c) */
		kind = OP_ARANGE;
		range_as_arange(p->m->arena, &operands, &attrs, op_at);
	}
	/* Each number operand is a value of its own (Value.literal), just before
	 * the result, named `<result>#<k>`, which no text can name; shape.c types
	 * it. check_names resolves the value names. */
	int *in = arena_alloc(p->m->arena, sizeof(int) * (size_t)(operands->nitems ? operands->nitems : 1));
	for (int k = 0; k < operands->nitems; k++) {
		const Lit *o = operands->items[k];
		in[k] = -1;
		if (o->kind == LIT_VALUE)
			continue;
		StrBuf b = {0};
		sb_printf(&b, "%s#%d", name, k);
		Value *lv = add_value(p, arena_strdup(p->m->arena, b.data), o->span);
		sb_free(&b);
		lv->literal = o;
		in[k] = g->nvalues - 1;
	}
	Value *v = add_value(p, name, at);
	v->node = g->nnodes;
	Node *n = ARENA_PUSH(p->m->arena, g->nodes, g->nnodes, g->cap_nodes);
	n->op = kind;
	n->op_name = op;
	n->span = stmt_at;
	n->op_span = op_at;
	n->result = g->nvalues - 1;
	n->operands = operands;
	n->nin = operands->nitems;
	n->in = in;
	n->attr_lit = attrs;
	n->sig = sig;
}

void build_return(Parser *p, Lit *values, Span at)
{
	if (!p->cur)
		return;
	p->cur->rets = values;
	p->cur->rets->span = at;
}

void build_end_graph(Parser *p)
{
	Graph *g = p->cur;
	if (!g)
		return;
	p->cur = NULL;
	Module *m = p->m;
	if (!g->rets)   /* cut short by a syntax error: keep it out of the module */
		return;
	*ARENA_PUSH(m->arena, m->graphs, m->ngraphs, m->cap_graphs) = g;
}

Signature *build_sig(Parser *p, Lit *ins, Lit *outs, Span at)
{
	Signature *s = arena_alloc(p->m->arena, sizeof *s);
	s->ins = ins;
	s->outs = outs;
	s->span = at;
	if (outs->nitems == 0)
		diag_error(p->d, p->m->src, at, "a signature names at least one result type");
	return s;
}

Lit *build_type(Parser *p, const char *kind, Span kind_at, const char *dtype, Span dtype_at, Lit *dims, Span at)
{
	Lit *l = lit_new(p->m->arena, LIT_TYPE, at);
	Type *t = l->type = arena_alloc(p->m->arena, sizeof *t);
	t->rank = -1;
	if (strcmp(kind, "Tensor") == 0)
		t->is_param = false;
	else if (strcmp(kind, "Parameter") == 0)
		t->is_param = true;
	else {
		static const char *const kinds[] = {"Tensor", "Parameter"};
		diag_error(p->d, p->m->src, kind_at, "unknown type '%s' (expected Tensor or Parameter)%s", kind,
		           DID_YOU_MEAN(kind, kinds, 2));
		return l;
	}
	if (!dtype_from_name(dtype, &t->dtype)) {
		StrBuf b = {0};
		sb_join(&b, dtype_names, DT_BOOL + 1, " or ");
		diag_error(p->d, p->m->src, dtype_at, "unknown element type '%s' (expected %s)%s", dtype, b.data,
		           DID_YOU_MEAN(dtype, dtype_names, DT_BOOL + 1));
		sb_free(&b);
		return l;
	}
	if (dims->nitems > MAX_DIMS) {
		diag_error(p->d, p->m->src, dims->span, "a tensor has at most %d dimensions, this one has %d",
		           MAX_DIMS, dims->nitems);
		return l;
	}
	int64_t total = 1;
	for (int i = 0; i < dims->nitems; i++) {
		Lit *d = dims->items[i];
		if (d->kind != LIT_INT || d->i < 1) {
			diag_error(p->d, p->m->src, d->span, "a dimension must be a positive integer");
			return l;
		}
		if (d->i > ELEMENT_LIMIT / total) {
			diag_error(p->d, p->m->src, d->span, "tensor too large (more than 2^40 elements)");
			return l;
		}
		total *= d->i;
		t->dims[i] = d->i;
	}
	t->rank = dims->nitems;
	return l;
}

Lit *parse_value_text(const char *flag, const char *text, Module **holder)
{
	static const char prefix[] = "context {v: ";
	StrBuf b = {0};
	sb_printf(&b, "%s%s}", prefix, text);
	FILE *devnull = fopen("/dev/null", "w");
	Diag quiet = {.out = devnull};
	char *owned = b.data;   /* the module's source must outlive it: leak-free via holder */
	Module *m = parse_module(flag, owned, (int)b.len, &quiet);
	m->src->value_offset = (int)sizeof prefix - 1;
	if (devnull)
		fclose(devnull);
	*holder = m;
	m->owned_text = owned;
	if (quiet.nerrors || !m->context_lit || m->context_lit->nitems != 1 || m->ngraphs || m->nlayouts || m->train)
		return NULL;
	return m->context_lit->items[0];
}
