/* check_internal.h: what check.c shares with context.c, which decodes the
 * context block, check_train.c, which decodes the train block, and
 * check_strategies.c, which decodes the strategies and checks their form once
 * shapes are known. check.c calls context.c's helpers, check_train and
 * check_strategies.c's decoders; none calls back. */
#ifndef CHECK_INTERNAL_H
#define CHECK_INTERNAL_H

#include "shardc.h"

struct NameMap;

typedef struct {
	Module *m;
	Diag *d;
	const Source *src;       /* where the spans point: the file, or the command line */
	const struct NameMap *graphs;  /* check_names: graph name to index in m->graphs */
} Checker;

#define ERR(c, span, ...) diag_error((c)->d, (c)->src, (span), __VA_ARGS__)

/* ---- context.c ---- */

bool str_is(const Lit *v, const char *s);   /* a string literal equal to s */
/* "bf16", "fp16", "fp32": the compute type of mixed precision (DT_F32: off). */
bool precision_of(const Lit *v, DType *t);

/* ---- check_train.c ---- */

/* The train block into c->m->train (entry graph's names resolved). */
void check_train(Checker *c);

/* ---- check_strategies.c ---- */

/* One tensor's strategy as written: a tuple of slice counts, a layout
 * application or None (not given); false, reported, when it is none of them. */
bool decode_tensor_strategy(Checker *c, const Lit *v, TensorStrategy *t);
/* An in_strategy or out_strategy (what, for messages): one tensor strategy
 * per tensor, all tuples or all applications of one Layout. */
bool decode_strategy(Checker *c, const Lit *v, Strategy *s, const char *what);

#endif
