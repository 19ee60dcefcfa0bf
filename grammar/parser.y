/* parser.y: grammar of the shardc IR (docs/language.md, Grammar; see grammar/IR.txt).
 * Pure and reentrant. Every action is one call to a builder in parse.c;
 * `error` productions let one run report independent syntax errors. */
%define api.pure full
%define api.prefix {ir_}
%define parse.error detailed
%define parse.lac full
%define api.location.type {Span}
%locations
%expect 0
%param {void *scanner}
%parse-param {struct Parser *p}

%code requires {
#include "shardc.h"
struct Parser;
#define YYLLOC_DEFAULT(cur, rhs, n)                                    \
	do {                                                               \
		if (n) {                                                       \
			(cur).start = YYRHSLOC(rhs, 1).start;                      \
			(cur).end = YYRHSLOC(rhs, n).end;                          \
		} else {                                                       \
			(cur).start = (cur).end = YYRHSLOC(rhs, 0).end;            \
		}                                                              \
	} while (0)
}

%code {
#include "parse_internal.h"
int ir_lex(IR_STYPE *lval, Span *lloc, void *scanner);
static void ir_error(Span *loc, void *scanner, struct Parser *p, const char *msg)
{
	(void)scanner;
	parse_syntax_error(p, *loc, msg);
}
}

%union {
	int64_t i;
	double f;
	const char *s;
	Lit *lit;
	Signature *sig;
}

%token <i> INT "integer"
%token <f> FLOAT "float"
%token <s> STRING "string"
%token <s> VALUE "value name"
%token <s> GRAPH "graph name"
%token <s> IDENT "identifier"
%token KW_CONTEXT "'context'" KW_LAYOUT "'layout'" KW_GRAPH "'graph'"
%token KW_TRAIN "'train'" KW_RETURN "'return'"
%token KW_TRUE "'true'" KW_FALSE "'false'" KW_NONE "'None'"
%token ARROW "'->'"
%token ERROR "bad token"

%type <lit> value tuple tuple_items dict dict_entries key args
%type <lit> type types operands operand_list operand values attrs_opt arg_list
%type <lit> init_opt
%type <sig> sig_opt
%type <s> keyword

%%

module:
	  %empty
	| module item
	;

item:
	  KW_CONTEXT dict                                { build_context(p, $2, @$); }
	| KW_LAYOUT IDENT '=' IDENT '(' args ')'         { build_layout(p, $2, @2, $4, @4, $6, @$); }
	| graph
	| KW_TRAIN dict                                  { build_train(p, $2, @$); }
	| error '}'                                      { build_end_graph(p); }
	;

graph:
	  KW_GRAPH GRAPH                                 { build_graph(p, $2, @2); }
	  '(' params_opt ')' '{' stmts KW_RETURN values '}'
	                                                 { build_return(p, $10, @10); build_end_graph(p); }
	;

params_opt:
	  %empty
	| param_list
	| param_list ','
	;

param_list:
	  param
	| param_list ',' param
	;

param:
	  VALUE ':' type init_opt                        { build_param(p, $1, @1, $3, $4); }
	;

init_opt:
	  %empty                                         { $$ = NULL; }
	| '=' IDENT                                      { $$ = lit_apply(p, $2, NULL, @2); }
	| '=' IDENT '(' args ')'                         { $$ = lit_apply(p, $2, $4, (Span){@2.start, @5.end}); }
	;

stmts:
	  %empty
	| stmts stmt
	;

stmt:
	  VALUE '=' IDENT '(' operands ')' attrs_opt sig_opt
	                                                 { build_stmt(p, $1, @1, $3, @3, $5, $7, $8, @$); }
	| error                                          { }
	;

operands:
	  %empty                                         { $$ = lit_list(p, @$); }
	| operand_list
	;

operand_list:
	  operand                                        { $$ = lit_append(p, NULL, NULL, $1); }
	| operand_list ',' operand                       { $$ = lit_append(p, $1, NULL, $3); }
	;

operand:
	  VALUE                                          { $$ = lit_name(p, LIT_VALUE, $1, @$); }
	| INT                                            { $$ = lit_operand(p, lit_int(p, LIT_INT, $1, @$)); }
	| FLOAT                                          { $$ = lit_operand(p, lit_float(p, $1, @$)); }
	;

values:
	  VALUE                                          { $$ = lit_append(p, NULL, NULL, lit_name(p, LIT_VALUE, $1, @1)); }
	| values ',' VALUE                               { $$ = lit_append(p, $1, NULL, lit_name(p, LIT_VALUE, $3, @3)); }
	;

attrs_opt:
	  %empty                                         { $$ = NULL; }
	| dict
	;

sig_opt:
	  %empty                                         { $$ = NULL; }
	| ':' '(' types ')' ARROW '(' types ')'          { $$ = build_sig(p, $3, $7, @$); }
	;

types:
	  %empty                                         { $$ = lit_list(p, @$); }
	| type                                           { $$ = lit_append(p, NULL, NULL, $1); }
	| types ',' type                                 { $$ = lit_append(p, $1, NULL, $3); }
	;

type:
	  '<' IDENT '[' IDENT ']' ',' tuple '>'          { $$ = build_type(p, $2, @2, $4, @4, $7, @$); }
	;

value:
	  INT                                            { $$ = lit_int(p, LIT_INT, $1, @$); }
	| FLOAT                                          { $$ = lit_float(p, $1, @$); }
	| STRING                                         { $$ = lit_name(p, LIT_STR, $1, @$); }
	| KW_TRUE                                        { $$ = lit_int(p, LIT_BOOL, 1, @$); }
	| KW_FALSE                                       { $$ = lit_int(p, LIT_BOOL, 0, @$); }
	| KW_NONE                                        { $$ = lit_int(p, LIT_NONE, 0, @$); }
	| VALUE                                          { $$ = lit_name(p, LIT_VALUE, $1, @$); }
	| GRAPH                                          { $$ = lit_name(p, LIT_GRAPH, $1, @$); }
	| tuple
	| dict
	| IDENT                                          { $$ = lit_name(p, LIT_IDENT, $1, @$); }
	| IDENT '(' args ')'                             { $$ = lit_apply(p, $1, $3, @$); }
	;

tuple:
	  '(' ')'                                        { $$ = lit_tuple(p, NULL, @$); }
	| '(' tuple_items ')'                            { $$ = lit_tuple(p, $2, @$); }
	| '(' tuple_items ',' ')'                        { $$ = lit_tuple(p, $2, @$); }
	;

tuple_items:
	  value                                          { $$ = lit_append(p, NULL, NULL, $1); }
	| tuple_items ',' value                          { $$ = lit_append(p, $1, NULL, $3); }
	;

dict:
	  '{' '}'                                        { $$ = lit_dict(p, NULL, @$); }
	| '{' dict_entries '}'                           { $$ = lit_dict(p, $2, @$); }
	| '{' dict_entries ',' '}'                       { $$ = lit_dict(p, $2, @$); }
	;

dict_entries:
	  key ':' value                                  { $$ = lit_append(p, NULL, $1, $3); }
	| dict_entries ',' key ':' value                 { $$ = lit_append(p, $1, $3, $5); }
	| dict_entries key ':' value                     { $$ = lit_append(p, $1, $2, $4); }
	;

key:
	  IDENT                                          { $$ = lit_name(p, LIT_IDENT, $1, @$); }
	| STRING                                         { $$ = lit_name(p, LIT_STR, $1, @$); }
	| keyword                                        { $$ = lit_name(p, LIT_IDENT, $1, @$); }
	;

keyword:
	  KW_CONTEXT { $$ = "context"; } | KW_LAYOUT { $$ = "layout"; } | KW_GRAPH { $$ = "graph"; }
	| KW_TRAIN { $$ = "train"; } | KW_RETURN { $$ = "return"; }
	;

args:
	  %empty                                         { $$ = NULL; }
	| arg_list
	;

arg_list:
	  value                                          { $$ = lit_append(p, NULL, NULL, $1); }
	| IDENT ':' value                                { $$ = lit_append(p, NULL, lit_name(p, LIT_IDENT, $1, @1), $3); }
	| arg_list ',' value                             { $$ = lit_append(p, $1, NULL, $3); }
	| arg_list ',' IDENT ':' value                   { $$ = lit_append(p, $1, lit_name(p, LIT_IDENT, $3, @3), $5); }
	;

%%
