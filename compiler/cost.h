/* cost.h: the cost model's queries (cost.c), for the strategy search's
 * files (search_internal.h) and --dot (dot.c); the cluster it prices is in
 * shardc.h, since the search's options carry it. */
#ifndef COST_H
#define COST_H

#include "shardc.h"

/* Requires device_num >= 1. With `train`, gradients are counted. */
CostModel *cost_new(const Cluster *c, int64_t device_num, bool train);
void cost_free(CostModel *cm);
const Cluster *cost_cluster(const CostModel *cm);
/* Seconds of one collective over `axes` of l sending `bytes` per rank. */
double cost_collective(CostModel *cm, const TensorLayout *l, uint32_t axes, int64_t bytes);
/* Seconds of one send of `bytes` between pipeline stages of `ranks` ranks in all. */
double cost_p2p(const CostModel *cm, double bytes, int64_t ranks);
/* Requires what redist_plan requires. The plan cost_redist prices and
 * lowering emits: redist_plan's, its steps weighed by the cluster's links. */
void cost_plan(CostModel *cm, const TensorLayout *from, const TensorLayout *to, const int64_t *global,
               int64_t elem_bytes, RedistPlan *plan);
/* Requires what redist_plan requires. Seconds of cost_plan's plan; its bytes
 * per rank in *bytes when not NULL. Cached. */
double cost_redist(CostModel *cm, const TensorLayout *from, const TensorLayout *to, const int64_t *global,
                   int64_t elem_bytes, int64_t *bytes);
/* While on, cost_redist answers a redistribution it has not cached with a
 * lower bound on its cost (what a rank must receive, one latency) instead
 * of planning it: the search prunes candidates with it. */
void cost_bound_only(CostModel *cm, bool on);
/* With a train block, the adjoint of redistributing from `from` to `to`:
 * the gradient's plan back from `to` to `from`, both made complete (autodiff.c
 * redistributes each step's gradient back so). 0 without training. */
double cost_redist_back(CostModel *cm, const TensorLayout *from, const TensorLayout *to, const int64_t *global,
                        int64_t elem_bytes);
/* Seconds of the operator's slice under op-dim splits `split`. */
double cost_compute(const CostModel *cm, const Node *n, const OpDims *od, const int64_t *split);
/* With a train block, what the backward pass sends for one operator input:
 * the AllReduce of the input's gradient over the device axes that split the
 * operator's output (or leave it partial) but not the input; `in` and `out`
 * on the operator's matrix. 0 without training. */
double cost_input_gradient(CostModel *cm, const TensorLayout *in, const TensorLayout *out, const int64_t *global,
                           int64_t elem_bytes);
/* Seconds of the AllReduces completing the statistics of an operator split
 * along a dim it normalizes (od->normalized; lower.c): one element a row each,
 * od->nstats_fwd of them, and with training nstats_bwd more. 0 when unsplit. */
double cost_statistics(CostModel *cm, const OpDims *od, const OpSplit *s, int64_t elem_bytes);
/* With training, seconds of `count` AllReduces of the result's piece over
 * the axes that split the reduced dims (the backward pass's statistics of
 * a split UnsortedSegmentMax, Min or Prod: the ties, or the nonzero product
 * and the zeros; autodiff.c). 0 when they are whole or without training. */
double cost_reduced_stats(CostModel *cm, const OpDims *od, const OpSplit *s, int count, int64_t elem_bytes);
/* Bytes of one rank's piece (complete layouts). */
int64_t cost_slice_bytes(const TensorLayout *l, const int64_t *global, int64_t elem_bytes);
void cost_stats(const CostModel *cm, int64_t *hits, int64_t *misses);

#endif
