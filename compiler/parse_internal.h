/* parse_internal.h: what the generated lexer and parser call in parse.c.
 * Each grammar action is one call to one of these builders. */
#ifndef SHARDC_PARSE_INTERNAL_H
#define SHARDC_PARSE_INTERNAL_H

#include "shardc.h"

typedef struct Parser {
	Module *m;
	Diag *d;
	int offset;              /* bytes consumed by the lexer */
	Graph *cur;              /* graph being built, NULL between graphs */
} Parser;

union IR_STYPE;

/* lexer helpers: return the token kind */
int lex_int(Parser *p, const char *text, union IR_STYPE *lval, Span at);
int lex_float(Parser *p, const char *text, union IR_STYPE *lval, Span at);
int lex_string(Parser *p, const char *text, int len, union IR_STYPE *lval, Span at);
int lex_bad(Parser *p, Span at, const char *msg);
int lex_bad_char(Parser *p, Span at, unsigned char c);
void parse_syntax_error(Parser *p, Span at, const char *msg);

/* literals */
Lit *lit_list(Parser *p, Span at);
Lit *lit_append(Parser *p, Lit *list, Lit *key, Lit *item);
Lit *lit_name(Parser *p, LitKind kind, const char *s, Span at);
Lit *lit_int(Parser *p, LitKind kind, int64_t v, Span at);
Lit *lit_float(Parser *p, double v, Span at);
Lit *lit_operand(Parser *p, Lit *number);   /* an operand: keeps its text as written */
Lit *lit_tuple(Parser *p, Lit *items, Span at);
Lit *lit_dict(Parser *p, Lit *entries, Span at);
Lit *lit_apply(Parser *p, const char *callee, Lit *args, Span at);

/* module pieces */
void build_context(Parser *p, Lit *dict, Span at);
void build_layout(Parser *p, const char *name, Span name_at, const char *ctor, Span ctor_at, Lit *args, Span at);
void build_train(Parser *p, Lit *dict, Span at);
void build_graph(Parser *p, const char *name, Span at);
void build_param(Parser *p, const char *name, Span at, Lit *type, Lit *init);
void build_stmt(Parser *p, const char *name, Span at, const char *op, Span op_at, Lit *operands,
                Lit *attrs, Signature *sig, Span stmt_at);
void build_return(Parser *p, Lit *values, Span at);
void build_end_graph(Parser *p);
Signature *build_sig(Parser *p, Lit *ins, Lit *outs, Span at);
Lit *build_type(Parser *p, const char *kind, Span kind_at, const char *dtype, Span dtype_at, Lit *dims, Span at);

#endif
