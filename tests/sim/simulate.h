/* simulate.h: proof by simulation that a lowered program computes what the
 * serial graph computes.
 *
 * sim_run evaluates the flat global graph once, then reads every rank's
 * step_parallel_end back from its dumped text (so what is checked is what a
 * person reads and what the emitter compiles), gives each rank its slices of
 * the inputs and parameters, and runs all ranks in lockstep in one process:
 * computing operators through the reference evaluator (eval.h), collectives
 * over the group members' buffers. It assembles each returned value from the
 * ranks' pieces (every element covered, copies in agreement) and compares it
 * with the serial value. It also counts, from the per-rank graphs alone, the
 * bytes each rank sends (docs/output.md) for comparison with the compiler's figure. */
#ifndef SIM_SIMULATE_H
#define SIM_SIMULATE_H

#include "eval.h"

typedef struct {
	bool ok;
	char why[512];           /* when not ok: the first thing that went wrong */
	double max_err;          /* largest |parallel - serial| / (1 + |serial|) over all outputs */
	int64_t max_bytes;       /* most bytes any rank sent, counted from the per-rank graphs */
	int64_t min_bytes;       /* fewest */
	int nops;                /* operators per rank */
	int ncollectives;        /* collectives per rank */
} SimResult;

/* Requires a Lowered of a checked module. */
void sim_run(const Lowered *l, SimResult *out);

/* A rank's piece of a global tensor under `layout` (complete layouts only). */
SimTensor sim_piece(const SimTensor *global, const TensorLayout *layout, int64_t rank);

/* Collectives over `n` members' inputs (in group order) as docs/operators.md defines
 * them; `me` is the member whose output is wanted. */
SimTensor sim_all_reduce(const SimTensor *in, int n, ReduceOp op);
SimTensor sim_all_gather(const SimTensor *in, int n, int axis);
SimTensor sim_reduce_scatter(const SimTensor *in, int n, ReduceOp op, int axis, int me);
SimTensor sim_all_to_all(const SimTensor *in, int n, int split_axis, int concat_axis, int me);
/* The sub-block [begin, end) of t (stride 1). */
SimTensor sim_slice(const SimTensor *t, const int64_t *begin, const int64_t *end);
/* Copies src into dst at offset start. */
void sim_place(SimTensor *dst, const SimTensor *src, const int64_t *start);

#endif
