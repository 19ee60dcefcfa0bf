/* search_internal.h: what the strategy search's files share: the Search
 * (the graph as the search sees it, the current strategies and the caches
 * that price them) and the functions one file calls in another.
 *
 * The files, bottom up; each calls only those before it:
 *   search_graph.c  the graph as the search sees it, built and freed
 *   price.c         what a candidate costs under the current choices; the
 *                   candidates; a whole plan's cost and slab (slab_memory)
 *   propagate.c     sharding propagation
 *   polish.c        local moves to the fixed point, and their memo
 *   rec_search.c    the double-recursive search and its further starts
 *   search_run.c    one run of search_mode's search; shard results' layouts
 *   savings.c       memory: bounds, the savings switched on, the report
 *   search.c        the entry (search_strategies) and --explain */
#ifndef SEARCH_INTERNAL_H
#define SEARCH_INTERNAL_H

#include "pipeline.h"   /* the search counts a plan's memory with the pipeline's own stages */
#include "cost.h"


enum { SRC_NONE, SRC_PARAM, SRC_OP };
enum { MAX_CANDIDATES = 4096, GEN_LIMIT = 100000 };

typedef struct {
	int kind;                /* SRC_NONE: a node without dims feeds it (a collective) */
	int id;                  /* the parameter, or the producing node */
	int chain, nchain;       /* the Reshapes in between, source side first: x->chain[chain..] */
} Src;

/* A candidate strategy and its local_cost. */
typedef struct {
	OpSplit s;
	double cost;
	int at;                  /* its place among the candidates: ties go to the first */
} Priced;

/* What an operator's choice depends on, as integers (context_key). */
typedef struct {
	int64_t *k;
	int n, cap;
} Key;

/* Keys seen and the move best_move answered for them. */
typedef struct {
	int64_t *key;            /* NULL: an empty slot */
	int nkey;
	bool found;
	Priced best;
} Memo;

typedef struct {
	Memo *slot;
	size_t nslot, n;
	Arena *a;                /* the keys */
} MemoTable;

/* The distinct layouts (with gradient axes) a value's readers take it in,
 * and how many readers each: for a value with many readers, kept and summed
 * again only after a reader's strategy changed. */
typedef struct {
	int64_t epoch, version;  /* Search's epoch and the value's version when summed */
	Key k;                   /* the entries' ints, one entry after another */
	int *start, *count;      /* (n + 1) where each entry's ints start; (n) its readers */
	int n, cap;
} Readers;

/* A redistribution in a sum that local_cost_under bounded: planned later,
 * while the sum can still get under its limit. */
typedef struct {
	TensorLayout from, to;
	const int64_t *global;   /* the value's dims (the graph's) */
	int64_t elem_bytes;
	bool back;               /* cost_redist_back */
	double bound;            /* what the bound pass summed */
	int axes;                /* of the two layouts' common matrix: how large its search may grow */
} Term;

typedef struct {
	Term *t;
	int n, cap;
	bool on;                 /* noting each redistribution priced */
} Terms;

typedef struct {
	const Module *m;
	Arena *a;                /* the search's own tables (the module's arena is not touched) */
	const Graph *g;
	const FlatGraph *f;
	Strategies *st;
	CostModel *cm;
	int64_t n;               /* device_num (a pipeline stage's) */
	int64_t stages;          /* pipeline stages (1: none) */
	int *node_stage, *value_stage;  /* (nnodes), (nvalues) assign_stages'; all 0 with one stage */
	struct { int value, stage; } *sends;  /* the values read on a later stage and each such stage, once */
	int nsends;
	double mem_factor;       /* parameter bytes held per parameter byte */
	OpSplit *cur;            /* (nnodes) the current strategy of each node with dims */
	TensorLayout **in;       /* (nnodes, nin) the layouts cur needs */
	TensorLayout *raw;       /* (nnodes) cur's output, partial included */
	TensorLayout *out;       /* (nnodes) as consumers see it: delivered, else raw */
	bool *decided;           /* (nnodes) */
	Src **src;               /* (nnodes, nin) */
	const TensorLayout ***fixed;  /* (nnodes, nin) a shard's in_strategy for that input, or NULL */
	int *chain;
	int nchain, cap_chain;
	int *cstart, *cnode, *cin;    /* consumers of node u: (cnode, cin)[cstart[u]..cstart[u+1]) */
	int *pstart, *pnode, *pin;    /* users of parameter p but its first */
	int *first_node, *first_in;   /* (nparams) the first use of each parameter, -1 none */
	bool *needs;             /* (nvalues) with a train block, depends on a trained parameter */
	bool *returned;          /* (nnodes) */
	bool propagating;        /* in decide (propagate.c): a returned value's completion and hand-over are no
	                          * neighbours, so local_cost leaves them out */
	bool *fixed_node;        /* (nnodes) a user strategy, or a planned parameter's first user */
	int64_t tmpl_dp, tmpl_mp;  /* a Megatron template's propagation (0: off): decide takes only dp x mp candidates */
	int64_t copies_first;    /* > 1 in a template start of one node's devices: its strategies put this many
	                          * copies on the slowest axis (strategy_copies_first) */
	bool (*plan)(Compilation *c);   /* SearchOptions.plan: the pipeline from lowering to the memory plan */
	bool quick;              /* SearchOptions.quick: D-Rec's starts, a few slabs counted, no polish */
	const OpSplit **slab_plan;  /* (nnodes) the interned strategies slab_memory planned last, or NULL */
	double slab;             /* and their slab */
	NodeStrategy *lowered_nodes;  /* (nnodes) search_lowering's strategies */
	double slab_again;       /* and the seconds of the collectives their backward pass sends again (recompute.c:
	                          * recomputed ones, ZeRO-3's second AllGathers) */
	MemoTable memo;          /* best_move's answers by context_key */
	Key key, entry;
	Readers *readers;        /* (nvalues) summed readers of values with many */
	int64_t *version;        /* (nvalues) bumped when a reader of the value changes strategy */
	int64_t epoch;           /* bumped as refine or polish starts: readers summed before are stale */
	int64_t (*cand)[MAX_OPDIMS];  /* (MAX_CANDIDATES) scratch for op_candidates */
	Terms terms;             /* local_cost_under's bounded sum */
} Search;

enum { MOVE_PRIME, MOVE_ANY };   /* best_move's kinds: refine's, polish's */

/* ---- search_graph.c ---- */

bool searchable(const Search *x, int v);
/* Indices, labels and integer values carry no gradient: autodiff.c's own test. */
bool differentiable(const Graph *g, const Node *nd, int k);
void search_init(Search *x, const Module *m, const FlatGraph *f, Strategies *s, const Cluster *c);
void search_done(Search *x);

/* ---- price.c ---- */

/* The layouts a strategy gives node v: its inputs, its output (partial
 * included), the output as consumers see it. */
void layouts(const Search *x, int v, const OpSplit *s, TensorLayout *in, TensorLayout *raw, TensorLayout *out);
void set_current(Search *x, int v, const OpSplit *s);
/* The copies s puts on the slowest axis (strategy_copies_first); 1: none. */
int64_t copies_first(const OpSplit *s);
/* The strategy of slice counts `split`: strategy_copies_first's with
 * `copies` when that many copies fit beside the split, else
 * op_split_from_splits'. A move keeps an operator's family where it can: a
 * candidate for v takes copies_first(&x->cur[v]). */
void search_split(Search *x, const OpDims *od, const int64_t *split, int64_t copies, OpSplit *out);
/* Where parameter p lives, given the current strategies; NULL: not known yet. */
const TensorLayout *home(const Search *x, int p);
/* Does another decided operator w than v (w < v with `before`) read input k
 * of v's value in layout `to` (and, grad_axes >= 0, leave its gradient
 * partial over the same axes)? Lowering redistributes a value once per
 * layout, and autodiff.c sums the gradient contributions of one layout
 * before completing them: such an edge costs once. */
bool shared(const Search *x, int v, int k, const TensorLayout *to, int64_t grad_axes, bool before);
bool is_param(const Search *x, int p);
/* The bytes parameter p holds per byte of it: mem_factor (its gradient and optimizer state in training),
 * 1 for a moving statistic (BatchNorm's: neither). */
double param_mem_factor(const Search *x, int p);
/* What depends on v's strategy s: its compute, its inputs' and its
 * consumers' redistributions (decided neighbours only), its completion or
 * delivery, the parameters it is the first user of (their gradients and
 * other users). *bytes: the memory its own part needs. Whatever this and
 * the functions it calls read about v's surroundings, context_key must put
 * in the key (best_move's memo). */
double local_cost(Search *x, int v, const OpSplit *s, double *bytes);
/* local_cost when it is under `limit`; else some value >= limit, with no
 * plan made when the sum with every redistribution not planned yet
 * replaced by a lower bound (cost_bound_only) reaches limit, and else the
 * redistributions past the point where the sum reached it not priced (a
 * caller that only takes a strategy costing less than limit asks fewer
 * plans). */
double local_cost_under(Search *x, int v, const OpSplit *s, double limit, double *bytes);
/* local_cost's *bytes alone, no redistribution priced. */
double local_memory(const Search *x, int v, const OpSplit *s);
bool op_dim_used(const OpDims *od, int o);
int64_t product_of(const int64_t *s, int n);
/* The bytes a device needs under the current strategies, counted the way
 * the program allocates them: the strategies lowered (redistributions and,
 * with a train block, the backward pass included) and the generated
 * program's slab planned (emit_plan: parameters, inputs and optimizer state,
 * then every buffer placed by liveness, then the largest scratch). The
 * lowering lives in a scratch arena, freed here; the strategies' splits are
 * put back as they were. The last plan's slab is kept: asked again, it is
 * not planned again. */
double slab_memory(Search *x);
/* The current strategies through the pipeline's stages from lowering to
 * stop (x->plan), in a compilation of the search's own; its caller frees
 * what it made (emit_free, lowered_free). status is not 0 when uneven.c
 * refused the plan (strategies the user fixed: the pipeline reports them). */
Compilation search_lowering(Search *x, Stage stop);
int cost_cmp(const void *pa, const void *pb, void *ctx);
/* v's candidates other than its current strategy costing less than `bound`
 * (local_cost), cheapest first (ties: less compute, then candidate order).
 * Pricing is the search's expense (a redistribution plan per new pair of
 * layouts), so candidates are bounded first: taken in order of compute, a
 * lower bound of local_cost (its other parts are >= 0), they stop where
 * that reaches `bound`; then local_cost with every redistribution not yet
 * planned replaced by a lower bound (cost_bound_only) skips one that cannot
 * get under it. With max 1, the cheapest only, the bound tightening as it
 * goes. */
int cheaper_candidates(Search *x, int v, double bound, Priced *out, int max);
/* The total cost and per-device memory of the current strategies. */
double total(Search *x, double *memory);
/* search_init with s's strategies current (priced as given, not searched); search_done frees it. */
void search_given(Search *x, const Module *m, const FlatGraph *f, const Strategies *s, const Cluster *c);
/* Lower by more than rounding: what a move must gain, and what --explain
 * calls cheaper. */
double below(double now);
/* What a scan of candidates needs of them: a lower bound of each one's
 * cost, and its price under a limit (the cost when under it, else a value
 * at or over it that the cost is not under). */
typedef struct {
	double (*least)(void *ctx, int i);
	double (*price)(void *ctx, int i, double limit);
	void *ctx;
} Priceable;
/* The candidate a scan of n candidates in order ends on, the scan taking a
 * candidate that costs under the best so far (under below(best) with
 * `margin`, else strictly), and with `first` the first one whatever it
 * costs (else the best so far starts at `best`); -1 when it takes none,
 * and *cost the cost of the one taken, as priced. The same candidate as
 * pricing each in turn, most of them not priced: a candidate is priced
 * only when its lower bound does not rule it out, and the most promising
 * one ahead, priced first, can make the ones before it not matter. */
int scan_priced(const Priceable *p, int n, double best, bool first, bool margin, double *cost);
/* scan_priced over v's strategies cand[0..n) (local_cost; bounds with
 * cost_bound_only). */
int scan_candidates(Search *x, int v, const OpSplit *cand, int n, double best, bool first, bool margin,
                    double *cost);

/* ---- propagate.c ---- */

/* v takes the least-cost candidate against its decided neighbours; one
 * that fits in memory before one that does not. */
void decide(Search *x, int v, int64_t (*cand)[MAX_OPDIMS]);
void propagate(Search *x, int seed, const OpSplit *seed_split);

/* ---- polish.c ---- */

bool best_move(Search *x, int v, int kind, Priced *out);
/* From the current strategies, sweeps in weight order in which an operator
 * takes its cheapest candidate (all of op_candidates, not only refine's
 * moves) when that lowers the total, until none does: the fixed point. The
 * first sweep prices every operator (an operator whose surroundings equal
 * one priced before is answered from the memo), the next ones those whose
 * surroundings changed (touch). Memory: the plan's slab may not exceed
 * `limit`. The moves are checked together, once, when no operator has one
 * left; if they do not fit, they are cut back to their longest prefix that
 * does (bisection on the slab), and from then on each move is checked
 * alone: an operator tries its cheaper candidates, cheapest first, and
 * takes the first that fits; one left with cheaper candidates that do not
 * fit is tried again after any move (the slab is the whole plan's). So at
 * the end no single operator's change that fits lowers the total: a
 * cheaper --explain runner-up is one that does not fit. Each move lowers
 * the total, so the sweeps end. */
void polish(Search *x, const int *order, int norder, double limit);
/* The searched operators the user did not fix, heaviest first (FLOPs
 * unsplit; ties in graph order) into order; returns how many. */
int weight_order(const Search *x, int *order);
/* sharding_propagation with a train block (rec_search.c): propagation's
 * plan and the dp x mp templates as starts, the cheapest that fits polished
 * to the fixed point; s: the defaults of operators propagation leaves. */
void propagate_trained(Search *x, const Strategies *s);
/* The cheapest of the data-parallel (dp x 1) and dp x mp templates that
 * split (for --explain when a plan splits nothing), its degrees in *dp and
 * *mp; x's current plan is left as it was. */
double cheapest_split(Search *x, int64_t *dp, int64_t *mp);
/* Every searched operator computed whole on every device (x's plan)? */
bool splits_nothing(const Search *x);

/* ---- rec_search.c ---- */

void recursive(Search *x);

/* ---- search_run.c ---- */

/* The node computing a shard Call's result lays it out by dataset_strategy
 * (full_batch: whole; data_parallel: dim 0 split over every device when it
 * divides). It becomes the node's out_strategy, written into its attributes
 * so that step_parallel_begin carries it. */
void shard_results(Search *x);
/* search_mode's search from the strategies the user gave, its choices put
 * into s. Returns the plan's cost; x stays set up for pricing it. */
double run_search(Search *x, Module *m, const FlatGraph *f, Strategies *s, const SearchOptions *o);

/* ---- savings.c ---- */

/* The least any strategy can need a device: every parameter (with its
 * optimizer state) and every operator output split over all devices.
 * *batched: the part that grows with the batch, the outputs computed from an
 * input (all of them, as if each grew in proportion: so a batch that this
 * says cannot fit does not). */
double least_memory(const Search *x, const bool *recomputed, double *batched);
/* The strategies need `mem` a device, more than the cluster gives. Whether
 * more devices or a smaller batch are needed (even everything split over
 * all of them does not fit: then how many devices, doubling the count, and
 * the largest global batch that could fit on these), or a better plan: the
 * double-recursive search's, when propagation chose and D-Rec's plan fits,
 * else in_strategy on the large operators. */
void report_memory(Search *x, double mem, const char *saved, const SearchOptions *o, Diag *d);
/* What recomputation adds to a step: the forward compute the train
 * block's recompute policy runs again, the recomputed operators' own cost
 * under the current strategies, and the collectives the backward pass sends
 * again (recomputed ones, ZeRO-3's second AllGathers), from the plan
 * slab_memory lowered last (call it first). */
double recompute_cost(const Search *x);
/* When the searched plan does not fit a device, the memory savings of
 * docs/language.md (Context: optimizer parallelism; Training: recompute)
 * are switched on one at a time, cheapest first, and the search run again
 * with each, until a plan fits: the optimizer's state, gradients and
 * parameters as slices over the ranks that sum their gradients (no extra
 * bytes or work), then attention's scores and Softmax recomputed (a few
 * FLOPs an element), then every layer recomputed (the forward pass again),
 * then parameters gathered again for the backward (ZeRO-3: their bytes
 * again). The module keeps what was switched on, so the program the driver
 * lowers is the plan priced here. Returns what was switched on (NULL:
 * nothing was left to try); *cost and *mem are the last plan's. */
const char *save_memory(Search *x, Module *m, const FlatGraph *f, Strategies *s, const SearchOptions *o,
                        bool planned, double *cost, double *mem);
/* --explain's account of save_memory: what was switched on, which
 * parameters live as slices and which operators are recomputed. */
void explain_savings(Search *x, const char *saved, FILE *out);

#endif
