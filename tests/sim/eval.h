/* eval.h: the simulator's reference evaluator, in double precision.
 *
 * Test-only: the simulator runs the serial graph and every per-rank graph in
 * one process and compares them; this file gives it the initializers of
 * docs/output.md and one kernel per computing operator of docs/operators.md, one node at a
 * time. Collectives and Call are the simulator's own business.
 *
 *     SimTensor ins[2] = {a, b}, y;
 *     char err[200];
 *     if (!sim_eval_node(g, &g->nodes[i], ins, &y, err, sizeof err))
 *         fprintf(stderr, "%s\n", err);
 *     ...
 *     sim_tensor_free(&y);
 *
 * Every value is a double whatever its element type: floating results are
 * never rounded (the reference is more precise than what it checks), integer
 * results are truncated toward zero into their type's range, Bool results
 * are 0 or 1. Integer operands (indices, labels) are held as exact doubles. */
#ifndef SIM_EVAL_H
#define SIM_EVAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shardc.h"

typedef struct {
	int rank;                 /* dims */
	int64_t dims[MAX_DIMS];   /* (rank) */
	int64_t size;             /* elements (1 for a scalar) */
	double *data;             /* (size) row-major, owned (malloc) */
} SimTensor;

/* Zero-filled; dims positive. */
SimTensor sim_tensor_new(int rank, const int64_t *dims);
SimTensor sim_tensor_copy(const SimTensor *t);
/* Frees the data and leaves an empty tensor; a zeroed tensor is fine too. */
void sim_tensor_free(SimTensor *t);

/* docs/output.md, Initializers: fills the whole GLOBAL tensor t (allocated by the caller with the
 * value's global shape) for the input or parameter `name` (without %). init is
 * the Value's initializer (LIT_APPLY such as uniform(0, 1), or LIT_IDENT such
 * as zeros) or NULL for the default: inputs uniform(0, 1), parameters
 * normal(0.01). Requires an initializer check_names accepted. Values are
 * rounded to the element type: through float for Float32, Float16 and
 * BFloat16; truncated toward zero for integers; 0 or 1 for Bool. */
void sim_init(SimTensor *t, const char *name, const Lit *init, bool is_param, DType dtype, int64_t seed);

/* Requires the node's attributes decoded (check_names). Evaluates node n of
 * graph g: ins[k] holds operand k's value, with the shape of its Value's type.
 * *out is allocated here with the node's result type
 * (g->values[n->result].type). False with a one-line message in err, and
 * *out left empty, on an unsupported operator (collectives, Call), operands
 * whose shapes disagree with the graph's types, a result type that disagrees
 * with the operands, or a label out of range. */
bool sim_eval_node(const Graph *g, const Node *n, const SimTensor *ins, SimTensor *out, char *err, size_t errlen);

#endif
