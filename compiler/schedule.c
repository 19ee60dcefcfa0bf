/* schedule.c: the order each pipeline stage runs its micro-batches' forward
 * and backward passes in (docs/language.md, Pipeline parallelism). The
 * program holds the lists as a table (emit.c), so the dumps and program.c
 * show them.
 *
 * - GPipe: every forward pass, micro-batch 0 first, then every backward
 *   pass: each stage holds all M micro-batches' activations at once.
 * - 1F1B (PipeDream-flush, Megatron-LM's default): stage s of P runs
 *   w = min(P - 1 - s, M) forward passes first (the warm-up), then
 *   alternates one forward and one backward pass until every forward pass
 *   has run (the steady state), then the backward passes left (the
 *   cool-down). The bubble is GPipe's, (P - 1) / (M + P - 1) of the step,
 *   but stage s holds at most w + 1 micro-batches' activations: P at the
 *   first stage, 1 at the last.
 * Either list is a valid order for any P and M: a stage's forward pass of
 * micro-batch m needs the stage before's, its backward pass the stage
 * after's, and no list waits on a later entry of another's. */
#include "shardc.h"

int pipeline_actions(PipelineScheduler sched, int64_t stages, int64_t micro, int64_t stage, int64_t *act)
{
	int64_t n = 0;
	if (sched == SCHED_GPIPE) {
		for (int64_t m = 0; m < micro; m++)
			act[n++] = PIPE_FORWARD(m);
		for (int64_t m = 0; m < micro; m++)
			act[n++] = PIPE_BACKWARD(m);
		return (int)n;
	}
	int64_t warm = stages - 1 - stage < micro ? stages - 1 - stage : micro, f = 0, b = 0;
	while (f < warm)
		act[n++] = PIPE_FORWARD(f++);
	while (f < micro) {
		act[n++] = PIPE_FORWARD(f++);
		act[n++] = PIPE_BACKWARD(b++);
	}
	while (b < micro)
		act[n++] = PIPE_BACKWARD(b++);
	return (int)n;
}

double pipeline_turns(int64_t stages, int64_t micro)
{
	return (double)micro + (double)stages - 1;
}

int64_t pipeline_in_flight(PipelineScheduler sched, int64_t stages, int64_t micro, int64_t stage)
{
	if (sched == SCHED_GPIPE)
		return micro;
	int64_t warm = stages - 1 - stage;
	return warm + 1 < micro ? warm + 1 : micro;
}
