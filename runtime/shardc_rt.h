/* shardc_rt.h: the runtime that shardc's per-rank programs link.
 *
 * The compiler decides everything: the schedule, every buffer's offset in a
 * slab, the groups, the order of the collectives. The runtime interprets no
 * graph; it gives a rank its MPI (and NCCL) world, memory, one call per
 * collective and one launcher per kernel. The same header serves two
 * backends: cpu (MPI, OpenBLAS, plain C; pointers are host memory) and cuda
 * (NCCL, cuBLAS, CUDA kernels; slab pointers are device memory). A program
 * picks one at link time: -lshardc_rt_cpu or -lshardc_rt_cuda.
 *
 * Example: y = ReLU(x @ w) with x (16, 32) split along dim 1 over 2 ranks and
 * the partial sums reduced and scattered along dim 0.
 *
 *     #include "shardc_rt.h"
 *     int main(int argc, char **argv)
 *     {
 *         sc_rt *rt = sc_init(&argc, &argv, 2);          // expects mpirun -np 2
 *         int r = sc_rank(rt);
 *         sc_group *g0 = sc_group_new(rt, (const int[]){0, 1}, 2);
 *         char *slab = sc_slab(rt, 4096);                 // zeroed
 *         float *x = (float *)(slab + 0);                 // (16, 16) local of (16, 32)
 *         float *w = (float *)(slab + 1024);              // (16, 8)  local of (32, 8)
 *         float *p = (float *)(slab + 1536);              // (16, 8)  partial sums
 *         float *y = (float *)(slab + 2048);              // (8, 8)
 *         const char *fx = sc_option(rt, "--input", "x");
 *         if (fx)
 *             sc_load_npy(rt, "x", fx, x, SC_F32, (const int64_t[]){16, 32}, 2,
 *                         (const int64_t[]){0, 16 * r}, (const int64_t[]){16, 16});
 *         else
 *             sc_init_uniform(rt, x, SC_F32, "x", 0, (const int64_t[]){16, 32}, 2,
 *                             (const int64_t[]){0, 16 * r}, (const int64_t[]){16, 16}, 0.0, 1.0);
 *         sc_init_normal(rt, w, SC_F32, "w", 0, (const int64_t[]){32, 8}, 2,
 *                        (const int64_t[]){16 * r, 0}, (const int64_t[]){16, 8}, 0.01);
 *         sc_matmul(rt, x, w, p, 16, 8, 16, 0, 0);
 *         sc_reduce_scatter(rt, g0, p, y, SC_F32, (const int64_t[]){16, 8}, 2, 0, SC_SUM);
 *         sc_unary(rt, SC_U_RELU, 0, y, y, 64);
 *         sc_save_npy(rt, sc_option(rt, "--output-dir", NULL), "output_0.npy", y, SC_F32,
 *                     (const int64_t[]){16, 8}, 2, (const int64_t[]){8 * r, 0}, (const int64_t[]){8, 8});
 *         sc_finalize(rt);                                // "rank 0: comm bytes sent 256" ...
 *         return 0;
 *     }
 *
 * Conventions.
 * - Tensors are dense, row-major (C order). Dims arrays, axes and perms are
 *   host memory; tensor pointers are slab memory (device memory on cuda).
 * - Every kernel overwrites its output (gradients included); accumulate with
 *   sc_binary(SC_ADD). Elementwise kernels (same n in and out) may run in
 *   place; every other kernel needs its output apart from its inputs.
 * - Axes may be negative (counted from the end), as in the IR.
 * - SC_F16 and SC_BF16: copies, sc_fill, sc_transpose, sc_concat,
 *   sc_strided_slice, sc_cast, the collectives, the initializers and .npy
 *   take them; arithmetic kernels take float32 (emitted programs sc_cast half
 *   operands to float32 scratch, run the kernel, and round the result once),
 *   but for sc_ew_chain, which reads and writes them itself.
 * - Collectives, sc_group_new, sc_load_npy, sc_save_npy, the checks
 *   (sc_output_dir, sc_check_loss, sc_check_loss_host, sc_check_skips),
 *   sc_broadcast_host, sc_pipeline_report, sc_safetensors_open, sc_load_safetensors and
 *   sc_safetensors_write are collective: every rank of the group (of the
 *   world, for all but the collectives) makes the same calls in the same
 *   order. Point-to-point calls are not: sc_p2p_exchange involves only the
 *   ranks it names, each in its own call at the same point of the schedule;
 *   sc_p2p_send and sc_p2p_recv only the two ranks.
 * - Any error (a bad argument, an MPI/CUDA/NCCL/cuBLAS failure) prints
 *   `shardc runtime: rank R: FILE:LINE: message` and aborts the whole job
 *   (MPI_Abort), so nothing hangs. Bad input files and an output folder or
 *   file that cannot be written are not errors of the program: every rank
 *   exits 1 after one clear message (sc_load_npy, sc_output_dir,
 *   sc_save_npy); a training that diverged exits 3 (sc_check_loss,
 *   sc_check_skips).
 * - Byte counting (docs/output.md): each collective adds what this rank sends in a
 *   ring algorithm over its group of n: AllReduce 2*B*(n-1)/n of the tensor's
 *   B bytes, AllGather B*(n-1)/n of the output, ReduceScatter and AllToAll
 *   B*(n-1)/n of the input, in integer arithmetic; a point-to-point send
 *   its B bytes (receives nothing). sc_finalize prints the totals, rank 0
 *   one line per rank. */
#ifndef SHARDC_RT_H
#define SHARDC_RT_H

#include <stddef.h>
#include <stdint.h>

enum { SC_MAX_DIMS = 8 };                 /* tensor rank limit, as the compiler's */

typedef struct sc_rt sc_rt;               /* one per process: MPI world, backend, byte count */
typedef struct sc_group sc_group;         /* an ordered set of ranks taking part in collectives */

typedef enum {
	SC_F32,                                /* float,   '<f4' */
	SC_I32,                                /* int32_t, '<i4' */
	SC_I64,                                /* int64_t, '<i8' */
	SC_BOOL,                               /* uint8_t 0/1, '|b1' */
	SC_F16,                                /* IEEE binary16 bits in a uint16_t, '<f2' */
	SC_BF16,                               /* bfloat16 bits (a float32's top half) in a uint16_t;
	                                          .npy '<f4' holding bfloat16-exact values */
} sc_dtype;

typedef enum {
	SC_SUM,
	SC_MAX,
	SC_MEAN,                               /* sum, then divide by the group size */
	SC_MIN,
	SC_PROD,                               /* on floats; SC_BOOL takes SC_MIN and SC_MAX only */
} sc_redop;

typedef enum {
	SC_ADD, SC_SUB, SC_MUL, SC_DIV, SC_MAXIMUM, SC_MINIMUM,
	SC_POW,                                /* a^b; its db is 0 where a <= 0 (log a undefined) */
	SC_FLOOR_DIV,                          /* floor(a / b), no gradient (MindSpore's zeros) */
	SC_FLOOR_MOD,                          /* a - b floor(a / b): the sign of b, numpy's mod */
	SC_MOD,                                /* fmod(a, b): the sign of a, MindSpore's Mod */
	SC_SQUARED_DIFF,                       /* (a - b)^2 */
	SC_DIV_NO_NAN,                         /* a / b, 0 where b == 0 (MindSpore's DivNoNan) */
	SC_ATAN2,                              /* atan2(a, b): the angle of (b, a) */
	SC_SIGMOID_CE,                         /* max(a, 0) - a b + log(1 + exp(-|a|)): logits a, labels b
	                                        * (MindSpore's SigmoidCrossEntropyWithLogits); da sigmoid(a) - b,
	                                        * db -a (the compiler asks for none: MindSpore's zeros) */
	SC_XLOGY,                              /* a log b, 0 where a == 0 (MindSpore's Xlogy) */
	SC_XDIVY,                              /* a / b, 0 where a == 0 (MindSpore's Xdivy) */
	SC_MUL_NO_NAN,                         /* a b, 0 where b == 0 even if a is inf or NaN (MulNoNan) */
	SC_TRUNCATE_DIV,                       /* trunc(a / b), no gradient (MindSpore's zeros) */
	SC_TRUNCATE_MOD,                       /* fmod(a, b): the sign of a (MindSpore's TruncateMod) */
	SC_HYPOT,                              /* sqrt(a^2 + b^2) without overflow (hypotf) */
	SC_NEXT_AFTER,                         /* the next float after a toward b (nextafterf); da dy, db 0
	                                        * (MindSpore's NextAfter bprop) */
	SC_ZETA,                               /* Hurwitz zeta(a, b) = sum over k >= 0 of (k + b)^-a, sc_zeta;
	                                        * da 0, db -a zeta(a + 1, b) dy (MindSpore's Zeta bprop) */
	SC_BINOP_LAST = SC_ZETA                /* the last row, for tests that walk them all */
} sc_binop;

/* The comparisons, one row each: C(NAME, the test of floats a and b, p the
 * operator's parameter). Both kernels (CPU and CUDA) expand the test, so
 * IEEE's rules hold on either: a NaN compares false but for NOT_EQUAL.
 * APPROXIMATE_EQUAL is MindSpore's ApproximateEqual, p its tolerance; the
 * others take no parameter (p 0). */
#define SC_COMPARE_TABLE(C)                    \
	C(EQUAL, a == b)                           \
	C(NOT_EQUAL, a != b)                       \
	C(GREATER, a > b)                          \
	C(GREATER_EQUAL, a >= b)                   \
	C(LESS, a < b)                             \
	C(LESS_EQUAL, a <= b)                      \
	C(APPROXIMATE_EQUAL, fabsf(a - b) < p)

typedef enum {
#define SC_CMP_ENUM(name, test) SC_CMP_##name,
	SC_COMPARE_TABLE(SC_CMP_ENUM)
#undef SC_CMP_ENUM
	SC_CMP_COUNT
} sc_cmpop;

/* The logical operators on Bool bytes (0 false, anything else true), the
 * result 0 or 1: MindSpore's LogicalNot (a alone), LogicalAnd, LogicalOr. */
typedef enum { SC_L_NOT, SC_L_AND, SC_L_OR } sc_logop;
#define SC_LOGICAL(op, a, b) ((op) == SC_L_NOT ? !(a) : (op) == SC_L_AND ? (a) && (b) : (a) || (b))

/* ---- process ---- */

/* MPI_Init (and, on cuda, the GPU and NCCL). Exits 1 on every rank when the
 * job has not expected_ranks ranks or the command line has an option other
 * than those sc_option knows. */
sc_rt *sc_init(int *argc, char ***argv, int expected_ranks);
/* Prints the bytes each rank sent (rank 0, in rank order), frees everything,
 * MPI_Finalize. */
void sc_finalize(sc_rt *rt);
int sc_rank(const sc_rt *rt);
int sc_size(const sc_rt *rt);
int64_t sc_comm_bytes(const sc_rt *rt);   /* sent by this rank so far */
/* `--steps K` (K >= 1), else default_steps; a bad K exits 1 on every rank. */
int64_t sc_steps(sc_rt *rt, int64_t default_steps);
/* Every `flag NAME=FILE` (flag "--input" or "--param") must name one of
 * names[0..n); otherwise one message lists them and every rank exits 1. */
void sc_check_names(sc_rt *rt, const char *flag, const char *const *names, int n);
/* The graph's inputs names[0..n), inits[k] the initializer input k runs on
 * without a file (`uniform(0, 1)`). Those no `--input NAME=FILE` gives run
 * on their initializers: rank 0 prints one warning naming them; with
 * `--strict-inputs` every rank exits 1 after one message naming them
 * instead. Collective. */
void sc_check_inputs(sc_rt *rt, const char *const *names, const char *const *inits, int n);
/* Seconds since an arbitrary point, after the device's queued work ends. */
double sc_time(sc_rt *rt);
/* Learning-rate schedules (docs/language.md, Training): sc_learning_rate's
 * a[] holds, in order, CONSTANT: learning_rate; WARMUP (nn.WarmUpLR):
 * learning_rate, warmup_steps; COSINE (nn.CosineDecayLR): min_lr, max_lr,
 * decay_steps; POLYNOMIAL (nn.PolynomialDecayLR): learning_rate,
 * end_learning_rate, decay_steps, power, update_decay_steps (0 or 1);
 * EXPONENTIAL (nn.ExponentialDecayLR): learning_rate, decay_rate,
 * decay_steps, is_stair (0 or 1); COSINE_WARMUP (MindFormers'
 * CosineWithWarmUpLR): learning_rate, warmup_steps, total_steps, lr_end,
 * warmup_lr_init. global_step is MindSpore's: 0 at the first update. */
typedef enum {
	SC_LR_CONSTANT, SC_LR_WARMUP, SC_LR_COSINE, SC_LR_POLYNOMIAL, SC_LR_EXPONENTIAL, SC_LR_COSINE_WARMUP,
} sc_lr_schedule;
double sc_learning_rate(sc_lr_schedule s, const double *a, int64_t global_step);
/* Rank 0 prints the progress of step (of steps, the loop started at t0,
 * sc_time's): `step: S, loss is L, lr R`
 * (L the loss as the shortest decimal that reads back as the same float32,
 * numpy's str), then `, grad norm N` when sqnorm (the squared global norm)
 * is not -1 (inf or nan print so), `, X unit/s` (items a step: samples or tokens), `, T
 * ms/step` (since the last line) and `, eta H:MM:SS`; every step, or with
 * `--log-every K` every K-th, the first and the last. `--log FILE` writes
 * the same as JSON lines. Collective (the options are read at the first
 * call). */
void sc_print_step(sc_rt *rt, int64_t step, int64_t steps, double t0, float loss, double lr, float sqnorm,
                   double items, const char *unit);
/* Stops the run when the loss at step (a float32 every rank holds whole) is
 * NaN or inf, before the step's update and before anything is written:
 * every rank exits 3 and the lowest that saw it prints
 * `shardc: step 7: the loss is inf (the run diverged: lower the learning
 * rate, or clip gradients with clip_global_norm)`. Collective. */
void sc_check_loss(sc_rt *rt, int64_t step, const float *loss);
/* The same on a loss every rank holds on the host (a pipeline's, which the
 * last stage computes and sc_broadcast_host gives the others). Collective. */
void sc_check_loss_host(sc_rt *rt, int64_t step, float loss);
/* Dynamic loss scaling (precision "fp16") skipped step, its gradients
 * overflowing with the loss scale at 1, and `skipped` steps in a row so: at
 * SC_MAX_SKIPS_AT_1 every rank exits 3 after one message (the scale cannot
 * fall further, so the steps to come would be skipped too). Collective. */
enum { SC_MAX_SKIPS_AT_1 = 10 };
void sc_check_skips(sc_rt *rt, int64_t step, int64_t skipped);
/* `--output-dir DIR` (NULL when absent: the current directory), checked
 * before the first step: rank 0 creates DIR, then a file in it, and removes
 * the file. When it cannot, every rank exits 1 after one message:
 * `shardc: cannot write to the output folder out/res: Not a directory`. */
const char *sc_output_dir(sc_rt *rt);
/* The command line of run.sh: `--input NAME=FILE`, `--param NAME=FILE`,
 * `--data NAME=FILE[:S]` (key NAME), `--params FILE`, `--param-names FILE`,
 * `--output-dir DIR`, `--steps K`, `--labels NAME`, `--shuffle SEED` (key
 * NULL); `--flag value` or `--flag=value`; the bare flag `--strict-inputs`
 * gives "". NULL when absent; the last one wins. */
const char *sc_option(sc_rt *rt, const char *flag, const char *key);

/* ---- memory ---- */

/* bytes of zeroed memory, 256-byte aligned, alive until sc_finalize. */
void *sc_slab(sc_rt *rt, size_t bytes);
void sc_to_host(sc_rt *rt, void *host, const void *src, size_t bytes);
void sc_from_host(sc_rt *rt, void *dst, const void *host, size_t bytes);
void sc_copy(sc_rt *rt, void *dst, const void *src, size_t bytes);   /* Reshape, Flatten */
/* zeros, ones, constant(v): value rounded to dt (nearest; 2-byte floats ties to even) */
void sc_fill(sc_rt *rt, void *dst, sc_dtype dt, int64_t n, double value);

/* ---- groups and collectives ---- */

/* A group of the given global ranks; member i has index i in every
 * collective. Every rank calls every sc_group_new, members or not. */
sc_group *sc_group_new(sc_rt *rt, const int *members, int n);
/* One partition of the world into groups, each rank naming only the group it
 * belongs to (its members in order, itself among them): one call per
 * partition instead of one per group. Every rank makes every call. */
sc_group *sc_group_split(sc_rt *rt, const int *members, int n);
/* sc_group_split with the members a grid: first + i_0 stride[0] + ... +
 * i_(k-1) stride[k-1] for 0 <= i_j < size[j], i_0 the most significant (a
 * group over axes of a row-major device matrix), so that a rank's program
 * holds a few numbers, not the thousands of ranks of a data-parallel group. */
sc_group *sc_group_split_grid(sc_rt *rt, int first, int k, const int *size, const int *stride);

/* Collectives take float32, float16, bfloat16, int32 and int64; AllGather
 * and AllToAll move bool too (the reductions refuse it).
 * Sum, max, min and mean of SC_F16/SC_BF16 widen to float32, reduce (mean: divide)
 * in float32 and round once to the element type; the byte count is still
 * that of the 2-byte tensor. */

/* in and out hold count elements; in == out is allowed. */
void sc_all_reduce(sc_rt *rt, sc_group *g, const void *in, void *out, sc_dtype dt, int64_t count, sc_redop op);
/* in has dims (ndim of them); out has dims with dims[axis] * n: the members'
 * tensors concatenated along axis in member order. */
void sc_all_gather(sc_rt *rt, sc_group *g, const void *in, void *out, sc_dtype dt,
                   const int64_t *dims, int ndim, int axis);
/* in has dims, dims[axis] divisible by n; member i keeps the i-th slice along
 * axis of the reduction. */
void sc_reduce_scatter(sc_rt *rt, sc_group *g, const void *in, void *out, sc_dtype dt,
                       const int64_t *dims, int ndim, int axis, sc_redop op);
/* in has dims, dims[split_axis] divisible by n. Member i sends its j-th slice
 * along split_axis to member j; out is the received pieces concatenated along
 * concat_axis in member order. */
void sc_all_to_all(sc_rt *rt, sc_group *g, const void *in, void *out, sc_dtype dt,
                   const int64_t *dims, int ndim, int split_axis, int concat_axis);

/* n AllReduces over g in one call: in[k] and out[k] hold counts[k]
 * elements (in[k] == out[k] allowed); pack (slab memory) holds their sum.
 * They are copied into pack, reduced at once and copied out, so n tensors
 * pay one collective's latency; each counts its bytes as its own
 * sc_all_reduce would. */
void sc_all_reduce_bucket(sc_rt *rt, sc_group *g, int n, const void *const *in, void *const *out,
                          const int64_t *counts, sc_dtype dt, sc_redop op, void *pack);

/* ---- point-to-point: activations and their gradients between pipeline stages ---- */

typedef enum {
	SC_SEND,                               /* buf's count elements go to peer */
	SC_RECV,                               /* count elements from peer land in buf */
} sc_p2p_dir;

typedef struct {
	sc_p2p_dir dir;
	int peer;                              /* a rank of the world, not this one */
	void *buf;                             /* (count) slab memory: read by a send, written by a receive */
	sc_dtype dt;                           /* any: the bytes move as they are */
	int64_t count;                         /* elements; 0 moves nothing */
} sc_p2p;

/* Posts every send and receive of ops[0..n) at once and returns when all
 * have completed (on cuda: queued on the stream, as the collectives are), so
 * two ranks that send to each other in one call (Megatron's
 * send_forward_recv_backward) cannot deadlock, and one call may talk to
 * several peers. Each peer lists the matching operations (same dt and
 * count) in its own call; between two ranks the k-th send one lists meets
 * the k-th receive the other lists. Receive buffers overlap neither each
 * other nor a send's. A peer outside [0, sc_size) or this rank is an
 * error. Each send adds its count * element size bytes to sc_comm_bytes. */
void sc_p2p_exchange(sc_rt *rt, const sc_p2p *ops, int n);

/* One message at a time, for schedules (1F1B) in which two neighbouring
 * stages may each send to the other before either receives. sc_p2p_send
 * posts the send of buf's count elements of dt to peer and returns at
 * once: the message is copied (to the host, on cuda after the stream's
 * queued work), so buf may be overwritten right after, and no send waits
 * for its receiver. sc_p2p_recv returns when peer's message is in buf (on
 * cuda: copied in on the stream, as sc_from_host does). From one rank to
 * another messages arrive in the order sent: its k-th sc_p2p_send to the
 * other meets the other's k-th sc_p2p_recv from it, which names the same
 * dt and count. A message sc_p2p_send sends is
 * received by sc_p2p_recv, never by an sc_p2p_exchange, nor the other way
 * round (cuda: these go through host memory and MPI, with or without NCCL).
 * The checks and the byte count are sc_p2p_exchange's: peer in [0,
 * sc_size) and not this rank, count >= 0, buf when count > 0; a send adds
 * count * element size bytes, a receive nothing. */
void sc_p2p_send(sc_rt *rt, int peer, const void *buf, sc_dtype dt, int64_t count);
void sc_p2p_recv(sc_rt *rt, int peer, void *buf, sc_dtype dt, int64_t count);
/* Waits until every send this rank posted has completed (a large message:
 * until its receiver took it) and frees their copies; sc_p2p_recv frees
 * those of completed sends before it blocks. Call it at the end of each
 * training step; sc_finalize calls it too. */
void sc_p2p_flush(sc_rt *rt);
/* bytes of host memory from world rank root to host on every rank (MPI_Bcast
 * on the world): the loss the last pipeline stage computed, for
 * sc_print_step and sc_check_loss_host on every rank. Collective over the
 * world; counts no bytes in sc_comm_bytes (a host value, not a tensor). */
void sc_broadcast_host(sc_rt *rt, void *host, size_t bytes, int root);
/* A pipeline's run on rank 0, one line a stage of `stages` (the world's
 * ranks in stages of equal size, in order): the share of `seconds` (the
 * run's training steps) its longest-waiting rank spent blocked in
 * sc_p2p_recv, waiting for another stage, beside `bubble`, the schedule's
 * idle share ((P - 1) / (M + P - 1)): `pipeline stage 0 (ranks 0-3): idle
 * 31.2% of the run, waiting for other stages (the schedule's bubble:
 * 20.0%)`. Collective. */
void sc_pipeline_report(sc_rt *rt, int stages, double seconds, double bubble);

/* ---- inputs, parameters, outputs ---- */

/* The initializers of docs/output.md, for this rank's slice only: gdims is the global
 * shape, start the slice's first element, ldims its shape.
 * Pieces of uneven shards: in every call taking (gdims, ndim, start, ldims)
 * a piece may reach past gdims (a dim of n split k ways in pieces of
 * ceil(n/k)), even lie wholly past it. What lies past is padding: the
 * initializers and loaders give it 0 (its real elements get what they
 * would in a piece inside the whole), the writers (sc_save_npy,
 * sc_safetensors_add, sc_checkpoint_add) leave it out, and the real parts
 * must cover the tensor. The initializers do nothing for dst NULL (a
 * rank that holds none of the tensor: another pipeline stage's). */
void sc_init_uniform(sc_rt *rt, void *dst, sc_dtype dt, const char *name, uint64_t seed, const int64_t *gdims,
                     int ndim, const int64_t *start, const int64_t *ldims, double lo, double hi);
void sc_init_normal(sc_rt *rt, void *dst, sc_dtype dt, const char *name, uint64_t seed, const int64_t *gdims,
                    int ndim, const int64_t *start, const int64_t *ldims, double std);
void sc_init_randint(sc_rt *rt, void *dst, sc_dtype dt, const char *name, uint64_t seed, const int64_t *gdims,
                     int ndim, const int64_t *start, const int64_t *ldims, int64_t lo, int64_t hi);
/* Reads this rank's slice of the .npy file at path ('<f4' '<f2' '<i4' '<i8'
 * '|b1', C order, format 1.0/2.0/3.0), which must have dtype dt and shape
 * gdims. npy has no bfloat16: SC_BF16 reads a '<f4' file and rounds each
 * value to the nearest bfloat16 (ties to even), as tools/ref_eval.py does.
 * On any problem every rank exits 1 and one message names the input:
 * `shardc: input 'x': x.npy has shape (3, 4), expected (16, 32)`.
 * dst NULL: check the file only. */
void sc_load_npy(sc_rt *rt, const char *name, const char *path, void *dst, sc_dtype dt, const int64_t *gdims,
                 int ndim, const int64_t *start, const int64_t *ldims);
/* sc_load_npy of Int32 or Int64 indices (token ids, labels) that must lie in
 * [0, bound): one outside is a bad input too, named with its value and
 * place, and `what` says what bounds them:
 * `shardc: input 'ids': ids.npy holds 50300 at (3, 17), outside [0, 50257):
 * token ids index Gather %h's table %wte, which has 50257 rows`. */
void sc_load_indices(sc_rt *rt, const char *name, const char *path, void *dst, sc_dtype dt, const int64_t *gdims,
                     int ndim, const int64_t *start, const int64_t *ldims, int64_t bound, const char *what);
/* Inputs that stream (run.sh --data, --labels, --shuffle; docs/output.md,
 * Data that streams): a new batch every step, read by a thread while the
 * step before computes. sc_data_input registers each input (the arguments
 * of sc_load_indices; bound -1 and what NULL for one that indexes nothing)
 * and says whether a --data option feeds it; sc_data_start checks the
 * options and files against the inputs (every rank exits 1 after one
 * message on a problem: `shardc: input 'x': --data x.npy has shape (81,
 * 32), expected (N, 32) with N a multiple of 16, ...`) and starts reading
 * step `first`'s batch (1; a resumed run's first step); sc_data_step(step),
 * first in each step, makes the step's pieces the inputs' (a token id
 * outside [0, bound) ends the run there with status 1) and starts reading
 * the next; then sc_data_at(d, k) is where the k-th input registered is
 * this step: on the cpu backend the reader's buffer for the step itself (no
 * copy: the program's pointer moves to it), on cuda its slab bytes, which
 * sc_data_step copied the piece into (also where no --data feeds it: dst),
 * and sc_data_fed(d, k) whether a --data option feeds it. sc_data_close prints, on rank 0, the reader's time against a step's and
 * frees what the pointers no longer need. Start, step and close are
 * collective; with no --data they do nothing. With accumulate_steps N the
 * program counts micro-batches as steps: start gets steps * N, and
 * micro-batch m (from 0) of step s asks for (s - 1) N + m + 1. */
typedef struct sc_data sc_data;
sc_data *sc_data_new(sc_rt *rt);
int sc_data_input(sc_data *d, const char *name, void *dst, sc_dtype dt, const int64_t *gdims, int ndim,
                  const int64_t *start, const int64_t *ldims, int64_t bound, const char *what);
void sc_data_start(sc_rt *rt, sc_data *d, int64_t first, int64_t steps);
void sc_data_step(sc_rt *rt, sc_data *d, int64_t step);
void *sc_data_at(const sc_data *d, int k);
int sc_data_fed(const sc_data *d, int k);
void sc_data_close(sc_rt *rt, sc_data *d);
/* A safetensors checkpoint (run.sh --params FILE.safetensors; docs/output.md):
 * sc_safetensors_open parses the header of the file the command line's
 * `option` names (its messages name the option: --params, --resume; path
 * NULL: returns NULL, and exits
 * 1 on every rank if renames is not NULL); renames, when not NULL, is a JSON
 * file {"parameter": "tensor"} naming the tensor a parameter reads, each key
 * one of names[0..n) (the model's parameters); the others read the tensor of
 * their own name. sc_load_safetensors reads this rank's slice of the
 * parameter's tensor, converting F64, F32, F16 and BF16 to dt when it is a
 * float type (rounded once, to nearest even; I64, I32 and BOOL only to their
 * own type). A bad file, rename file or tensor (missing, of another shape,
 * of a dtype not read as dt, truncated) ends every rank with status 1 and
 * one message naming the file and the tensor: `shardc: parameter 'wq':
 * tensor 'h.0.attn.wq' of gpt.safetensors has shape (3, 4), expected (256,
 * 256)`. Open and load are collective, as sc_load_npy; close takes NULL. */
typedef struct sc_safetensors sc_safetensors;
sc_safetensors *sc_safetensors_open(sc_rt *rt, const char *option, const char *path, const char *renames,
                                    const char *const *names, int n);
void sc_load_safetensors(sc_rt *rt, sc_safetensors *st, const char *name, void *dst, sc_dtype dt,
                         const int64_t *gdims, int ndim, const int64_t *start, const int64_t *ldims);
void sc_safetensors_close(sc_safetensors *st);
/* Writing one: create, then add each tensor's piece on this rank (the
 * arguments of sc_save_npy; src must stay valid until the write), then
 * sc_safetensors_write, which is collective: rank 0 writes DIR/FILE.tmp (DIR
 * exists; NULL: the current directory), the tensors in the order added, in
 * their own dtype (BF16 as BF16), assembling one at a time, and renames it
 * to DIR/FILE; it frees the writer. A file that cannot be written ends every
 * rank with status 1. */
typedef struct sc_safetensors_writer sc_safetensors_writer;
sc_safetensors_writer *sc_safetensors_create(const char *dir, const char *file);
void sc_safetensors_add(sc_safetensors_writer *w, const char *name, const void *src, sc_dtype dt,
                        const int64_t *gdims, int ndim, const int64_t *start, const int64_t *ldims);
void sc_safetensors_write(sc_rt *rt, sc_safetensors_writer *w);
/* A run's checkpoint (checkpoint.c; docs/output.md, Checkpoints of a run):
 * begin, then add every tensor's piece on this rank in one order on every
 * rank (the arguments of sc_safetensors_add; src NULL: this rank holds none
 * of it; src must stay valid until the end) and the run's counters by key,
 * then sc_checkpoint_end, which is collective: DIR/step-<S>.tmp is written
 * (model.safetensors, every tensor whole, each rank writing its own slices
 * at their places, a slice several ranks hold by the lowest; state.json),
 * synced and renamed DIR/step-<S> (DIR made if missing), and all but the
 * `keep` newest step folders removed (keep 0: none). A checkpoint that
 * cannot be written ends every rank with status 1 and one message. */
typedef struct sc_checkpoint sc_checkpoint;
/* run.sh's --checkpoint DIR (checked writable before step 1), --save-every
 * K (K >= 1; without it, at the end only), --keep N (N >= 0, default 5,
 * MindSpore's keep_checkpoint_max; 0 keeps all), --resume DIR. A bad value,
 * --save-every/--keep without --checkpoint, or --checkpoint/--resume in a
 * program that does not train (trains 0), ends every rank with status 1 and
 * a message. Collective. */
typedef struct {
	const char *dir;             /* NULL: no checkpoints */
	int64_t every;               /* 0: at the end only */
	int keep;
	const char *resume;          /* NULL: start from step 1 */
} sc_checkpointing;
sc_checkpointing sc_checkpoint_options(sc_rt *rt, int trains);
/* Whether step ends with a checkpoint (1) or not (0): every K-th and the last, with a DIR. */
int sc_checkpoint_due(const sc_checkpointing *c, int64_t step, int64_t steps);
sc_checkpoint *sc_checkpoint_begin(const char *dir, int64_t step);
void sc_checkpoint_add(sc_checkpoint *c, const char *name, const void *src, sc_dtype dt, const int64_t *gdims,
                       int ndim, const int64_t *start, const int64_t *ldims);
void sc_checkpoint_value(sc_checkpoint *c, const char *key, double v);
void sc_checkpoint_end(sc_rt *rt, sc_checkpoint *c, int keep);
/* Resuming from DIR's newest checkpoint (collective): its step, its tensor
 * file (read with sc_safetensors_open: each rank its own slices, whatever
 * plan wrote it), its counters. No checkpoint in DIR, a state.json without
 * the step or a key, or a checkpoint at or past the run's last step
 * (sc_steps) ends every rank with status 1 and a message. */
typedef struct sc_resume sc_resume;
sc_resume *sc_resume_open(sc_rt *rt, const char *dir);
int64_t sc_resume_step(const sc_resume *r);
const char *sc_resume_file(const sc_resume *r, char *buf, size_t n);
double sc_resume_value(sc_rt *rt, const sc_resume *r, const char *key);
void sc_resume_close(sc_resume *r);
/* Assembles the global tensor on rank 0 from every rank's slice and writes
 * DIR/FILE (DIR created; NULL: the current directory); SC_BF16 is written as
 * '<f4' (exact). Ranks holding the
 * same slice may all pass it (one copy travels); src NULL: this rank holds
 * nothing. Aborts if the slices do not cover the tensor. The file is
 * written whole under a temporary name in DIR, `.FILE.PID.tmp`, flushed to
 * the disk and renamed to FILE, so FILE is either what it was or the whole
 * tensor: when a write fails (a full disk) the temporary file is removed
 * and every rank exits 1 after `shardc: cannot write DIR/FILE: REASON`. */
void sc_save_npy(sc_rt *rt, const char *dir, const char *file, const void *src, sc_dtype dt,
                 const int64_t *gdims, int ndim, const int64_t *start, const int64_t *ldims);

/* ---- kernels (float32 unless a dtype is named) ---- */

/* How many of a piece's `len` elements along a dim are the whole's, the
 * piece starting at `start` of the dim's `whole`: the rest are an uneven
 * split's padding (docs/language.md, Uneven splits). */
static inline int64_t sc_real_len(int64_t whole, int64_t start, int64_t len)
{
	int64_t real = whole - start;
	return real < 0 ? 0 : real > len ? len : real;
}

/* c (m, n) = op(a) op(b): a is (m, k), or (k, m) when transpose_a; b is
 * (k, n), or (n, k) when transpose_b. */
void sc_matmul(sc_rt *rt, const float *a, const float *b, float *c, int64_t m, int64_t n, int64_t k,
               int transpose_a, int transpose_b);
/* The same product of two Float16 or BFloat16 matrices (both of type dt),
 * summed in Float32 and written as c_dt: SC_F32, or dt, the Float32 result
 * rounded once (to nearest, ties to even) as sc_cast would round it, with no
 * Float32 copy in memory. cuBLAS's GemmEx with Float32 compute (tensor
 * cores) on cuda; on cpu the operands are widened (exactly) to Float32 and
 * multiplied as sc_matmul does, so the result is sc_matmul's on the widened
 * operands bit for bit (then rounded). */
void sc_matmul_half(sc_rt *rt, sc_dtype dt, const void *a, const void *b, void *c, sc_dtype c_dt, int64_t m,
                    int64_t n, int64_t k, int transpose_a, int transpose_b);
/* Batched matmul; the batch dims (a_nb, b_nb, c_nb of them, the leading
 * dims without the last two) broadcast as numpy's. */
void sc_batch_matmul(sc_rt *rt, const float *a, const int64_t *a_bdims, int a_nb, const float *b,
                     const int64_t *b_bdims, int b_nb, float *c, const int64_t *c_bdims, int c_nb, int64_t m,
                     int64_t n, int64_t k, int transpose_a, int transpose_b);
/* The same on two half operands of type dt, as sc_matmul_half: Float32
 * sums, the result written as c_dt, SC_F32 or dt (cublasGemmStridedBatchedEx
 * on cuda; widened on cpu). */
void sc_batch_matmul_half(sc_rt *rt, sc_dtype dt, const void *a, const int64_t *a_bdims, int a_nb, const void *b,
                          const int64_t *b_bdims, int b_nb, void *c, sc_dtype c_dt, const int64_t *c_bdims, int c_nb,
                          int64_t m, int64_t n, int64_t k, int transpose_a, int transpose_b);
/* Batched matmul on operands laid out by strides, in elements: batch index
 * (i_0 .. i_nb-1) of bdims finds a's matrix at sum i_d a_st[d] (0 repeats
 * it), and a_st[nb] is the distance between that matrix's rows, whose
 * elements are adjacent; b and c likewise. A Transpose that keeps the last
 * axis last is read or written this way, in place of a copy (fuse.c). */
void sc_batch_matmul_strided(sc_rt *rt, const float *a, const int64_t *a_st, const float *b, const int64_t *b_st,
                             float *c, const int64_t *c_st, const int64_t *bdims, int nb, int64_t m, int64_t n,
                             int64_t k, int transpose_a, int transpose_b);
/* The same on two half operands of type dt, as sc_batch_matmul_half (c of
 * c_dt, SC_F32 or dt). */
void sc_batch_matmul_half_strided(sc_rt *rt, sc_dtype dt, const void *a, const int64_t *a_st, const void *b,
                                  const int64_t *b_st, void *c, sc_dtype c_dt, const int64_t *c_st,
                                  const int64_t *bdims, int nb, int64_t m, int64_t n, int64_t k, int transpose_a,
                                  int transpose_b);

/* y = a op b with numpy broadcasting (dims right-aligned, size 1 repeats). */
void sc_binary(sc_rt *rt, sc_binop op, const float *a, const int64_t *a_dims, int a_ndim, const float *b,
               const int64_t *b_dims, int b_ndim, float *y, const int64_t *y_dims, int y_ndim);
/* y = a op b with numpy broadcasting, as sc_binary, y SC_BOOL (a byte, 1
 * where true, else 0): MindSpore's Equal, NotEqual, Greater, GreaterEqual,
 * Less, LessEqual and ApproximateEqual (p its tolerance; 0 for the rest). */
void sc_compare(sc_rt *rt, sc_cmpop op, float p, const float *a, const int64_t *a_dims, int a_ndim, const float *b,
                const int64_t *b_dims, int b_ndim, uint8_t *y, const int64_t *y_dims, int y_ndim);
/* y = op(a, b) on SC_BOOL operands with numpy broadcasting, as sc_compare,
 * y SC_BOOL: LogicalAnd, LogicalOr; SC_L_NOT reads a alone (b NULL, a of
 * y's dims): LogicalNot. */
void sc_logical(sc_rt *rt, sc_logop op, const uint8_t *a, const int64_t *a_dims, int a_ndim, const uint8_t *b,
                const int64_t *b_dims, int b_ndim, uint8_t *y, const int64_t *y_dims, int y_ndim);
/* MindSpore's integer operators on SC_I32 or SC_I64 tensors (dt; a, b and
 * y all of it), b broadcast against a as sc_binary's, NULL (b_ndim 0) for
 * the unary ones: SC_INT_INVERT ~a; SC_INT_POPCOUNT the 1 bits of a's
 * two's complement (of dt's width); SC_INT_LEFT_SHIFT and
 * SC_INT_RIGHT_SHIFT a shifted by b (arithmetic right), b first taken
 * modulo the width where |b| exceeds it (MindSpore's CPU kernels), then a
 * count below 0 or at the width gives 0 (left) or a's sign, 0 or -1
 * (right), where C leaves the shift undefined. */
typedef enum { SC_INT_INVERT, SC_INT_POPCOUNT, SC_INT_LEFT_SHIFT, SC_INT_RIGHT_SHIFT } sc_intop;
void sc_int_math(sc_rt *rt, sc_intop op, sc_dtype dt, const void *a, const int64_t *a_dims, int a_ndim,
                 const void *b, const int64_t *b_dims, int b_ndim, void *y, const int64_t *y_dims, int y_ndim);
/* y = x reversed along the dims whose bit rev sets (MindSpore's ReverseV2;
 * its own gradient); x and y of dims, not overlapping. */
void sc_reverse(sc_rt *rt, const float *x, float *y, const int64_t *dims, int ndim, unsigned rev);
/* y = the sums of x's diagonals x[.., i (dim a1), .., i + offset (dim a2), ..],
 * y of x's other dims in order (MindSpore's TraceV2, numpy's trace); an
 * offset past the matrix sums nothing, 0. sc_trace_grad: dx zeros but dy on
 * those diagonals. */
void sc_trace(sc_rt *rt, const float *x, float *y, const int64_t *dims, int ndim, int a1, int a2, int64_t offset);
void sc_trace_grad(sc_rt *rt, const float *dy, float *dx, const int64_t *dims, int ndim, int a1, int a2,
                   int64_t offset);
/* y = 1 where x is finite (not an infinity, not NaN), else 0, n elements
 * each, y SC_BOOL: MindSpore's IsFinite. */
void sc_is_finite(sc_rt *rt, const float *x, uint8_t *y, int64_t n);
void sc_bias_add(sc_rt *rt, const float *x, const float *bias, float *y, int64_t rows, int64_t c);
/* y = x < 0 ? w x : x (MindSpore's PReLU), x (outer, c, inner) with its
 * channels along c, w wn weights: one a channel (wn == c) or one for all
 * (wn == 1). May run in place. */
void sc_prelu(sc_rt *rt, const float *x, const float *w, float *y, int64_t outer, int64_t c, int64_t inner,
              int64_t wn);
/* PReLU's gradients, as MindSpore's PReLUGrad: dx = x <= 0 ? w dy : dy, and
 * dw = the sum of x dy where x < 0 over the channel's elements (over all,
 * wn == 1), in double, rounded once; dx or dw NULL: not computed. */
void sc_prelu_grad(sc_rt *rt, const float *x, const float *w, const float *dy, float *dx, float *dw, int64_t outer,
                   int64_t c, int64_t inner, int64_t wn);
/* A windowed operator's geometry (MindSpore's Conv2D, MaxPool, AvgPool on
 * NCHW): x (n, c, h, w), the window (kh, kw) dilated by (dh, dw), moved by
 * (sh, sw), x padded by pt rows above and pl columns left (the rest below
 * and right as the result's size needs), the result (n, o, ho, wo); a
 * pool's o is c. */
typedef struct {
	int64_t n, c, h, w, o, kh, kw, sh, sw, dh, dw, pt, pl, ho, wo;
	int64_t groups;                        /* Conv2D's group: channels c / groups in, o / groups out each */
} sc_window;
typedef enum { SC_POOL_MAX, SC_POOL_AVG } sc_pool_kind;
/* y = Conv2D(x, w), w (o, c / groups, kh, kw), padding zeros: per image and
 * group, w's rows times x's im2col matrix (c / groups kh kw, ho wo) (a GEMM). */
void sc_conv2d(sc_rt *rt, const sc_window *g, const float *x, const float *w, float *y);
/* Its gradients: dx (col2im of w^T dy) and dw (the images' dy times their
 * im2col^T, summed); dx or dw NULL: not computed, x NULL with dw (dx reads
 * no x). dx alone is Conv2DTranspose(dy, w), its dw Conv2DTranspose's
 * weight gradient with x its result's gradient and dy its dout. */
void sc_conv2d_grad(sc_rt *rt, const sc_window *g, const float *x, const float *w, const float *dy, float *dx,
                    float *dw);
/* y = MaxPool(x) (each window's maximum over its elements inside x) or
 * AvgPool(x) (their mean: padding not counted, MindSpore's SAME). */
void sc_pool(sc_rt *rt, sc_pool_kind k, const sc_window *g, const float *x, float *y);
/* dx: MaxPool's dy to each window's first maximum (summed where windows
 * overlap); AvgPool's dy over the window's elements inside x, each its share. */
void sc_pool_grad(sc_rt *rt, sc_pool_kind k, const sc_window *g, const float *x, const float *dy, float *dx);
/* y = cond ? a : b elementwise, n elements each (MindSpore's Select): cond
 * SC_BOOL (a byte, true when not 0); a or b NULL reads zeros, which gives
 * Select's gradients, cond ? dy : 0 and cond ? 0 : dy. May run in place. */
void sc_select(sc_rt *rt, const uint8_t *cond, const float *a, const float *b, float *y, int64_t n);

/* The elementwise unary kernels, one row each: U(NAME, T, y of x, dx of t
 * and g). T is what the gradient reads: X the input, Y the output, N nothing
 * (t is then NULL); g is dy. p is the kernel's parameter, a float every call
 * passes (sc_unary's p, an sc_ew_step's p): LeakyReLU's alpha, which the other
 * rows ignore (0 is passed for them). The math is C that the CPU (float) and
 * CUDA (device) kernels both expand, so adding a kernel is adding a row here.
 * GeLU's tanh is sc_gelu_tanh and its slope, 0.5 (1 + th) + 0.5 t (1 - th^2) du
 * with th = tanh(u(t)), is sc_gelu_slope, which both kernel files define: the
 * slope computes tanh once (an expression would compute it three times: a math
 * call is not merged, since it may set errno), and the CPU's tanh is one that
 * vectorizes (kernels.c). SiLU's slope, s (1 + t (1 - s)) with s = sigmoid(t),
 * is sc_silu_slope, defined beside them for the same reason (exp once), and
 * Mish's, th + t (1 - th^2) sigmoid(t) with th = tanh(softplus(t)) (MindSpore's
 * Mish bprop), sc_mish_slope. Erfinv's sc_erfinv is CUDA's erfinvf there and
 * its own polynomial here (C has none). Lgamma's slope sc_digamma (C has no
 * digamma) is the recurrence up to x >= 6, then the asymptotic series, in
 * double on both (reflection below 0; NaN at the poles 0, -1, ...).
 * GELU_ERF is GeLU's exact form (approximate: "none"), whose slope is
 * 0.5 (1 + erf(t / sqrt 2)) + t exp(-t^2 / 2) / sqrt(2 pi). */
#define SC_GELU_U(v) (0.7978845608028654f * ((v) + 0.044715f * (v) * (v) * (v)))   /* sqrt(2/pi) (v + 0.044715 v^3) */
#define SC_GELU_DU(v) (0.7978845608028654f * (1 + 3 * 0.044715f * (v) * (v)))
#define SC_SQRT1_2 0.7071067811865476f   /* 1 / sqrt(2): GeLU's erf form, 0.5 x (1 + erf(x / sqrt 2)) */
/* max and min keeping a NaN of either operand, as numpy's maximum and
 * minimum (fmaxf and fminf drop it); a tie gives a. SC_RELU6 is
 * min(max(v, 0), 6) alike. */
#define SC_MAX_NAN(a, b) ((a) >= (b) || (a) != (a) ? (a) : (b))
#define SC_MIN_NAN(a, b) ((a) <= (b) || (a) != (a) ? (a) : (b))
#define SC_RELU6(v) ((v) <= 0 ? 0 : (v) >= 6 ? 6 : (v))
/* log(1 + e^v) without overflow for large v (Softplus, Mish, LogSigmoid) */
#define SC_SOFTPLUS(v) ((v) > 0 ? (v) + log1pf(expf(-(v))) : log1pf(expf(v)))
/* LeakyReLU's dx (p its alpha): MindSpore's nn.LeakyReLU is Maximum(alpha x,
 * x) (Minimum when alpha > 1), whose gradient gives dy to the larger operand
 * and dy / 2 to each at a tie (MaximumGrad): dy for x > 0, alpha dy below 0,
 * (dy + alpha dy) / 2 at 0, and 0 at a NaN, which neither operand wins. */
#define SC_LEAKY_SLOPE(t, g, p) ((t) > 0 ? (g) : (t) < 0 ? (p) * (g) : (t) == 0 ? 0.5f * ((g) + (p) * (g)) : 0.0f)
/* SeLU's constants (Klambauer et al., MindSpore's SeLU) */
#define SC_SELU_SCALE 1.0507009873554805f
#define SC_SELU_ALPHA 1.6732632423543772f
#define SC_UNARY_TABLE(U)                                                                                      \
	U(RELU, X, x > 0 || x != x ? x : 0, t > 0 ? g : 0)   /* NaN stays NaN, as numpy's maximum */              \
	U(GELU, X, 0.5f * x * (1 + sc_gelu_tanh(SC_GELU_U(x))), g * sc_gelu_slope(t))   /* tanh form */        \
	U(GELU_ERF, X, 0.5f * x * (1 + erff(x * SC_SQRT1_2)),   /* erf form: approximate "none" */                 \
	  g * (0.5f * (1 + erff(t * SC_SQRT1_2)) + 0.3989422804014327f * t * expf(-0.5f * t * t)))                 \
	U(TANH, Y, tanhf(x), g * (1 - t * t))                                                                      \
	U(SIGMOID, Y, 1 / (1 + expf(-x)), g * t * (1 - t))                                                         \
	U(EXP, Y, expf(x), g * t)                                                                                  \
	U(LOG, X, logf(x), g / t)                                                                                  \
	U(NEG, N, -x, -g)                                                                                          \
	U(SQRT, Y, sqrtf(x), g / (2 * t))                                                                          \
	U(RSQRT, Y, 1 / sqrtf(x), -0.5f * g * t * t * t)                                                           \
	U(SILU, X, x / (1 + expf(-x)), g * sc_silu_slope(t))                                                       \
	U(SQUARE, X, x * x, 2 * t * g)                                                                             \
	U(ABS, X, fabsf(x), t > 0 ? g : t < 0 ? -g : 0)   /* MindSpore's AbsGrad: dy sign(x), 0 at 0 */          \
	U(SIN, X, sinf(x), g * cosf(t))                                                                            \
	U(COS, X, cosf(x), -g * sinf(t))                                                                           \
	U(ERF, X, erff(x), g * 1.1283791671f * expf(-t * t))   /* 2 / sqrt(pi) */                                  \
	U(RECIPROCAL, Y, 1 / x, -g * t * t)                                                                        \
	U(LOG1P, X, log1pf(x), g / (1 + t))                                                                        \
	U(EXPM1, Y, expm1f(x), g * (t + 1))                                                                        \
	U(SOFTPLUS, X, SC_SOFTPLUS(x), g / (1 + expf(-t)))   /* log(1 + e^x) */                                   \
	U(FLOOR, N, floorf(x), ((void)g, 0.0f))   /* Floor, Sign: MindSpore's zero gradient, whatever dy */      \
	U(SIGN, N, x > 0 ? 1.0f : x < 0 ? -1.0f : 0.0f * x, ((void)g, 0.0f))   /* 0 * x: NaN stays NaN */    \
	U(CEIL, N, ceilf(x), ((void)g, 0.0f))                                                                      \
	U(ROUND, N, rintf(x), ((void)g, 0.0f))   /* half to even, as MindSpore's Round and numpy's */              \
	U(TAN, Y, tanf(x), g * (1 + t * t))                                                                        \
	U(ATAN, X, atanf(x), g / (1 + t * t))                                                                      \
	U(SINH, X, sinhf(x), g * coshf(t))                                                                         \
	U(COSH, X, coshf(x), g * sinhf(t))                                                                         \
	U(HSWISH, X, x * SC_RELU6(x + 3) / 6,   /* MindSpore's HSwish and HSigmoid: relu6(x + 3) / 6 */           \
	  t <= -3 ? 0 : t >= 3 ? g : g * (2 * t + 3) / 6)                                                      \
	U(HSIGMOID, X, SC_RELU6(x + 3) / 6, t > -3 && t < 3 ? g / 6 : 0)                                           \
	U(ERFC, X, erfcf(x), g * -1.1283791671f * expf(-t * t))   /* 1 - erf(x), without its cancellation */     \
	U(INV, Y, 1 / x, -g * t * t)   /* MindSpore's Inv and InvGrad: Reciprocal's */                             \
	U(ACOS, X, acosf(x), -g / sqrtf(1 - t * t))                                                                \
	U(ASIN, X, asinf(x), g / sqrtf(1 - t * t))                                                                 \
	U(ATANH, X, atanhf(x), g / (1 - t * t))                                                                    \
	U(ASINH, Y, asinhf(x), g / coshf(t))   /* MindSpore's AsinhGrad and AcoshGrad read y */                   \
	U(ACOSH, Y, acoshf(x), g / sinhf(t))                                                                       \
	U(RINT, N, rintf(x), ((void)g, 0.0f))   /* half to even, as Round */                                      \
	U(ELU, Y, x > 0 ? x : expm1f(x), t < 0 ? g * (t + 1) : g)   /* alpha 1 (MindSpore's only); EluGrad */    \
	U(MISH, X, x * tanhf(SC_SOFTPLUS(x)), g * sc_mish_slope(t))                                                \
	U(SELU, Y, x > 0 ? SC_SELU_SCALE * x : SC_SELU_SCALE * SC_SELU_ALPHA * expm1f(x),                          \
	  SC_SELU_SCALE * (t < 0 ? g * (t + 1) : g))   /* MindSpore's: scale times EluGrad(dy, y) */              \
	U(LOG_SIGMOID, X, -SC_SOFTPLUS(-x), g / (1 + expf(t)))   /* log(1 / (1 + e^-x)); dy sigmoid(-x) */        \
	U(ZEROS_LIKE, N, ((void)x, 0.0f), ((void)g, 0.0f))   /* whatever x holds, NaN too */                     \
	U(ONES_LIKE, N, ((void)x, 1.0f), ((void)g, 0.0f))                                                        \
	U(LEAKY_RELU, X, x > 0 ? x : p * x, SC_LEAKY_SLOPE(t, g, p))                                                \
	U(RELU6, X, SC_RELU6(x), t > 0 && t < 6 ? g : 0)   /* MindSpore's ReLU6Grad: dy inside (0, 6) */          \
	U(SOFTSIGN, X, x / (1 + fabsf(x)), g / ((1 + fabsf(t)) * (1 + fabsf(t))))                                  \
	U(FAST_GELU, X, x / (1 + expf(-1.702f * x)),   /* x sigmoid(1.702 x), MindSpore's FastGeLU */            \
	  g * sc_silu_slope(1.702f * t))   /* its slope: SiLU's at 1.702 x */                                      \
	U(TRUNC, N, truncf(x), ((void)g, 0.0f))   /* toward 0; MindSpore's zero gradient */                       \
	U(ERFINV, Y, sc_erfinv(x), g * 0.8862269254527580f * expf(t * t))   /* sqrt(pi) / 2 e^(y^2) */              \
	U(HSHRINK, X, x >= -p && x <= p ? 0 : x, t >= -p && t <= p ? 0 : g)   /* p: lambd; NaN stays NaN */       \
	U(SOFT_SHRINK, X, x > p ? x - p : x < -p ? x + p : x == x ? 0 : x, t >= -p && t <= p ? 0 : g)   /* NaN kept */ \
	U(LGAMMA, X, lgammaf(x), g * sc_digamma(t))   /* log |Gamma(x)|; MindSpore's bprop: dy digamma(x) */

typedef enum {
#define SC_U_ENUM(name, t, fwd, grad) SC_U_##name,
	SC_UNARY_TABLE(SC_U_ENUM)
#undef SC_U_ENUM
	SC_U_COUNT
} sc_unop;

/* y = op(x) elementwise; dx = op's gradient at t (x, y or NULL as its row
 * says) times dy; p the row's parameter (LeakyReLU's alpha; 0 for the rest). */
void sc_unary(sc_rt *rt, sc_unop op, float p, const float *x, float *y, int64_t n);
void sc_unary_grad(sc_rt *rt, sc_unop op, float p, const float *t, const float *dy, float *dx, int64_t n);
/* pre = x + bias (rows of c; pre NULL: not kept), y = op(pre): a BiasAdd
 * fused into the unary operator that reads it (compiler/fuse.c), the same
 * values as the two calls, bit for bit. */
/* pre = x + bias (rows of c; pre NULL: not kept), y = r + pre: a BiasAdd
 * fused into the Add that reads it (compiler/fuse.c; the residual after an
 * MLP or a projection), the same values as the two calls, bit for bit. */
void sc_bias_add_residual(sc_rt *rt, const float *x, const float *bias, float *pre, const float *r, float *y,
                          int64_t rows, int64_t c);
void sc_bias_unary(sc_rt *rt, sc_unop op, float p, const float *x, const float *bias, float *pre, float *y,
                   int64_t rows, int64_t c);
void sc_scale(sc_rt *rt, const float *x, float *y, int64_t n, double alpha);   /* y = alpha x */

/* A chain of elementwise operators in one pass (compiler/fuse.c): steps run
 * in order on every element of a (rows, cols) tensor, each value a float32.
 * The values are numbered: the nin operands first, then one per step (a
 * store's is its operand's). An operand is read as float32 (a half exactly)
 * at the element's index (SC_EW_FULL), at its column (SC_EW_ROW: a bias, a
 * vector along the last axis) or at 0 (SC_EW_SCALAR). Each step computes
 * what its own kernel would: SC_EW_UNARY sc_unary's op (and its p) of value a,
 * SC_EW_BINARY sc_binary's op of values a and b, SC_EW_UNARY_GRAD
 * sc_unary_grad's op from t = value a and dy = value b, SC_EW_ROUND value a
 * rounded to the half type dt and widened back (sc_cast there and back),
 * SC_EW_STORE value a written to out in dt (an exact store when the value
 * was rounded to dt); so the chain gives its kernels' results bit for bit.
 * At most SC_EW_MAX_STEPS steps and SC_EW_MAX_INS operands; no out may
 * overlap an operand. */
enum { SC_EW_MAX_STEPS = 16, SC_EW_MAX_INS = 8 };
typedef enum { SC_EW_FULL, SC_EW_ROW, SC_EW_SCALAR } sc_ew_bcast;
typedef enum { SC_EW_UNARY, SC_EW_BINARY, SC_EW_ROUND, SC_EW_STORE, SC_EW_UNARY_GRAD } sc_ew_kind;
typedef struct {
	const void *p;                         /* slab memory */
	sc_dtype dt;                           /* SC_F32, SC_F16 or SC_BF16 */
	sc_ew_bcast bcast;
} sc_ew_operand;
typedef struct {
	sc_ew_kind kind;
	int op;                                /* UNARY, UNARY_GRAD: an sc_unop; BINARY: an sc_binop */
	int a, b;                              /* value numbers (b: BINARY, UNARY_GRAD only), earlier than this step's */
	sc_dtype dt;                           /* ROUND: the half type; STORE: out's type */
	void *out;                             /* STORE: slab memory, (rows, cols) */
	float p;                               /* UNARY, UNARY_GRAD: the row's parameter (sc_unary's p); else 0 */
} sc_ew_step;
void sc_ew_chain(sc_rt *rt, const sc_ew_step *steps, int nsteps, const sc_ew_operand *ins, int nin, int64_t rows,
                 int64_t cols);

void sc_softmax(sc_rt *rt, const float *x, float *y, const int64_t *dims, int ndim, int axis);
void sc_log_softmax(sc_rt *rt, const float *x, float *y, const int64_t *dims, int ndim, int axis);
/* softmax(x * scale[0]), scale one element where the tensors live: a Mul by a
 * scalar fused into the softmax (compiler/fuse.c), each product rounded to
 * Float32 as the Mul would, so the result is the two kernels' bit for bit. */
void sc_softmax_scaled(sc_rt *rt, const float *x, const float *scale, float *y, const int64_t *dims, int ndim, int axis);
/* softmax(x * scale[0] + mask) along the last axis, the mask broadcast to x
 * as numpy would (attention's (S, S) mask over (B, H, S, S) scores), scale
 * NULL for none: a Mul by a scalar and an Add of a mask fused into the
 * softmax (compiler/fuse.c), each step rounded to Float32 as its own kernel
 * rounds it, so the result is the three calls' bit for bit. */
void sc_softmax_masked(sc_rt *rt, const float *x, const float *scale, const float *mask, const int64_t *mask_dims,
                       int mask_ndim, float *y, const int64_t *dims, int ndim);

/* y holds x's dims without the reduced axes (keep_dims changes no memory). */
void sc_reduce_sum(sc_rt *rt, const float *x, float *y, const int64_t *dims, int ndim, const int *axes, int naxes);
void sc_reduce_mean(sc_rt *rt, const float *x, float *y, const int64_t *dims, int ndim, const int *axes, int naxes);
void sc_reduce_max(sc_rt *rt, const float *x, float *y, const int64_t *dims, int ndim, const int *axes, int naxes);
void sc_reduce_min(sc_rt *rt, const float *x, float *y, const int64_t *dims, int ndim, const int *axes, int naxes);
void sc_reduce_prod(sc_rt *rt, const float *x, float *y, const int64_t *dims, int ndim, const int *axes, int naxes);
/* MindSpore's ReduceAll and ReduceAny: x and y SC_BOOL (a byte an element,
 * true when not 0; y 1 or 0). */
void sc_reduce_all(sc_rt *rt, const uint8_t *x, uint8_t *y, const int64_t *dims, int ndim, const int *axes,
                   int naxes);
void sc_reduce_any(sc_rt *rt, const uint8_t *x, uint8_t *y, const int64_t *dims, int ndim, const int *axes,
                   int naxes);

/* MindSpore's Tril (upper 0) and Triu (upper 1) on x (lead, rows, cols),
 * lead the leading dims (each matrix alike): y = x where the element's
 * column less its row in the whole, (col0 + j) - (row0 + i), is at most
 * diagonal (Tril) or at least diagonal (Triu), 0 elsewhere. A rank holding
 * a piece passes where it starts (row0, col0); the gradient is the same
 * call on dy. Any dtype; y may be x. */
void sc_triangle(sc_rt *rt, int upper, const void *x, void *y, sc_dtype dt, int64_t lead, int64_t rows, int64_t cols,
                 int64_t row0, int64_t col0, int64_t diagonal);
/* y dims[i] = dims[perm[i]]; dims are x's. */
void sc_transpose(sc_rt *rt, sc_dtype dt, const void *x, void *y, const int64_t *dims, int ndim, const int *perm);
/* y (nidx, row) = table rows idx - offset; rows outside [0, rows) give zeros
 * (a table split by rows passes its first row's global index as offset). */
void sc_gather(sc_rt *rt, const float *table, int64_t rows, int64_t row, const void *idx, sc_dtype idx_dt,
               int64_t nidx, int64_t offset, float *y);
/* Along another axis: the table (outer, rows, row), y (outer, nidx, row)
 * = for each of the outer slices, its rows idx - offset (zeros outside). */
void sc_gather_axis(sc_rt *rt, const float *table, int64_t outer, int64_t rows, int64_t row, const void *idx,
                    sc_dtype idx_dt, int64_t nidx, int64_t offset, float *y);
/* MindSpore's EmbeddingLookup: y (nidx, row) = table rows idx - offset, zeros
 * where that falls outside [0, rows) or idx is limit or more. A rank holding
 * a slice of the rows passes its first row's global index plus MindSpore's
 * offset as offset, and the whole table's rows plus that offset as limit:
 * an id past the table reads zeros on every rank, the padding of an uneven
 * split included, so its gradient never reaches the padding. */
void sc_embedding_lookup(sc_rt *rt, const float *table, int64_t rows, int64_t row, const void *idx, sc_dtype idx_dt,
                         int64_t nidx, int64_t offset, int64_t limit, float *y);
/* MindSpore's unsorted segment reductions, in compiler/ops.h's order. */
typedef enum { SC_SEG_SUM, SC_SEG_MAX, SC_SEG_MIN, SC_SEG_PROD } sc_segment_op;
/* UnsortedSegmentSum/Max/Min/Prod on x seen as (rows, inner) with one id a
 * row (ids: rows of Int32 or Int64): y (segments, inner), y[s] the sum,
 * maximum, minimum or product of the rows whose id is s; an id outside
 * [0, segments) is dropped (MindSpore's). An empty segment is 0 (sum), 1
 * (prod), the lowest (max) or largest (min) finite value of dt, the
 * result's type (SC_F32, SC_F16, SC_BF16; y holds floats). Sums and
 * products run in double, in row order. */
void sc_unsorted_segment(sc_rt *rt, sc_segment_op op, const float *x, const void *ids, sc_dtype ids_dt, float *y,
                         int64_t rows, int64_t inner, int64_t segments, sc_dtype dt);
/* stat (segments, inner), over these rows alone (a rank's piece of split
 * ids, summed or multiplied over the ranks by the caller): max, min: how
 * many rows of the segment equal y (the completed result; k 0); prod: the
 * product of the nonzero rows (k 0, 1 when none) or how many are zero (k 1),
 * y NULL. */
void sc_unsorted_segment_stat(sc_rt *rt, sc_segment_op op, const float *x, const void *ids, sc_dtype ids_dt,
                              const float *y, int k, float *stat, int64_t rows, int64_t inner, int64_t segments);
/* dx (rows, inner), MindSpore's bprops, 0 for a dropped id: sum dy[id];
 * max, min dy[id] / ties where x equals y[id], else 0, the ties (stat0) the
 * segment's rows equal to y (NULL: counted here); prod dy[id] times the
 * product of the segment's other rows: P / x with no zero, P at the one
 * zero, else 0, with P the nonzero rows' product and Z the zeros (stat0,
 * stat1; NULL: here). x and y NULL where not read (sum: both; prod: y). */
void sc_unsorted_segment_grad(sc_rt *rt, sc_segment_op op, const float *x, const void *ids, sc_dtype ids_dt,
                              const float *y, const float *dy, const float *stat0, const float *stat1, float *dx,
                              int64_t rows, int64_t inner, int64_t segments);
/* MindSpore's GatherD: y (idims) = x (xdims) at index along dim, every other
 * coordinate y's own (idims no larger than xdims there); an index outside
 * [0, xdims[dim]) gives 0 (run.sh checks the ids it reads, --unchecked-ids
 * makes them -1). */
void sc_gather_d(sc_rt *rt, const float *x, const int64_t *xdims, const void *idx, sc_dtype idx_dt,
                 const int64_t *idims, int ndim, int dim, int64_t offset, float *y);
/* MindSpore's GatherNd and TensorScatterUpdate/Add/Sub/Mul/Div/Max/Min see x as (dims[0],
 * ..., dims[n-1], inner) and the indices as (m, n), Int32 or Int64: row i
 * names x's slice idx[i] of inner elements. An index outside dims stops the
 * run with a message naming `what` (the operator), the index and its row:
 * every rank holds x's indexed dims whole, so no index is another rank's.
 * GatherNd: y (m, inner) = those slices. */
void sc_gather_nd(sc_rt *rt, const float *x, const int64_t *dims, int n, int64_t inner, const void *idx,
                  sc_dtype idx_dt, int64_t m, float *y, const char *what);
typedef enum {
	SC_SCATTER_UPDATE, SC_SCATTER_ADD, SC_SCATTER_SUB, SC_SCATTER_MUL, SC_SCATTER_DIV, SC_SCATTER_MAX, SC_SCATTER_MIN
} sc_scatter_op;
/* y = x, then slice idx[i] of y replaced by (plus, less, times, divided by,
 * the larger of (fmaxf), the smaller of (fminf)) row i of upd (m, inner),
 * for i in order: of duplicate indices the last update wins
 * (TensorScatterUpdate), or all apply in turn. x (ldims[0..n), inner) may
 * be a piece of the whole (gdims[0..n), inner) starting at start[0..n)
 * (Add, Sub, Mul and Div split along the indexed dims): an index inside the
 * whole but outside the piece is another rank's and skipped; start NULL:
 * the whole. */
void sc_tensor_scatter(sc_rt *rt, sc_scatter_op op, const float *x, const void *idx, sc_dtype idx_dt, int64_t m,
                       const float *upd, float *y, const int64_t *gdims, const int64_t *start, const int64_t *ldims,
                       int n, int64_t inner, const char *what);
/* MindSpore's L2Normalize on x (outer, n, inner) along n: y = x /
 * sqrt(max(sum x^2, eps)); sumsq (outer, 1, inner), when not NULL, are the
 * sums of squares completed over the ranks that split n (a slice's piece). */
void sc_l2_normalize(sc_rt *rt, const float *x, const float *sumsq, float *y, int64_t outer, int64_t n,
                     int64_t inner, double eps);
/* MindSpore's BatchNorm on x (n, c, hw) per channel: y = (x - mean) /
 * sqrt(var + eps) * scale + bias, every pointer but x and y (c,) Float32.
 * mode SC_BN_INFER: mean and var the moving ones, nothing written to them;
 * SC_BN_TRAIN: the batch's mean and (biased) variance, batch_mean and
 * batch_var when given (completed over the ranks that split n or hw: a
 * slice's piece), else x's own, and the moving ones updated in place,
 * moving = (1 - momentum) moving + momentum batch, the variance's unbiased by
 * count / (count - 1) (count the values a channel has over every rank);
 * SC_BN_TRAIN_KEEP: as SC_BN_TRAIN, the moving ones left alone (a
 * recomputation: the step's forward pass has updated them). */
enum { SC_BN_INFER, SC_BN_TRAIN, SC_BN_TRAIN_KEEP };
void sc_batch_norm(sc_rt *rt, const float *x, const float *scale, const float *bias, float *moving_mean,
                   float *moving_var, const float *batch_mean, const float *batch_var, float *y, int64_t n, int64_t c,
                   int64_t hw, double eps, double momentum, int64_t count, int mode);
/* y (outer, depth, inner): on_value where class c + offset is the index
 * (outer, inner) names, off_value elsewhere, so an index outside
 * [offset, offset + depth) gives a row of off_value (MindSpore's OneHot; a
 * rank holding a slice of the classes passes its first class as offset).
 * on and off point at one float each, where the backend keeps tensors. */
void sc_one_hot(sc_rt *rt, const void *idx, sc_dtype idx_dt, int64_t outer, int64_t depth, int64_t inner,
                int64_t offset, const float *on, const float *off, float *y);
/* ---- picking along an axis: ArgMaxWithValue, ArgMinWithValue, Argmax,
 * Argmin, TopK ----
 * The order they pick in: the larger value first (is_min: the smaller), a
 * NaN before every number (numpy's argmax and argmin give the first NaN),
 * among equals the lower index. */
/* x viewed (outer, n, inner): each (outer, inner)'s first pick along n, its
 * Int32 index into idx and its value into val (outer, inner); either NULL. */
void sc_arg_reduce(sc_rt *rt, const float *x, int64_t outer, int64_t n, int64_t inner, int is_min, int32_t *idx,
                   float *val);
/* dx (outer, n, inner): dy (outer, inner) at each one's pick, zeros elsewhere. */
void sc_arg_reduce_grad(sc_rt *rt, const float *x, const float *dy, int64_t outer, int64_t n, int64_t inner,
                        int is_min, float *dx);
/* Each of x's rows of n: its k first picks (the k largest, descending), the
 * values into val and their Int32 indices into idx (rows, k); either NULL. */
void sc_topk(sc_rt *rt, const float *x, int64_t rows, int64_t n, int64_t k, float *val, int32_t *idx);
/* dx (rows, n): dy (rows, k) at the k picks of each row, zeros elsewhere. */
void sc_topk_grad(sc_rt *rt, const float *x, const float *dy, int64_t rows, int64_t n, int64_t k, float *dx);
/* ---- normalizers over a row: y = (x - c) rstd gamma [+ beta] ----
 * SC_NORM_TABLE(N): N(NAME, CENTERED), one row per normalizing operator.
 *   CENTERED 1: c is the row's mean and rstd = 1 / sqrt(var + eps), var the
 *              biased variance (LayerNorm);
 *            0: c = 0 and rstd = 1 / sqrt(mean(x^2) + eps), the root mean
 *              square (RmsNorm).
 * A row is normalized over dims[begin_norm_axis:]; gamma (and beta, where the
 * operator has one; else NULL) have the shape dims[begin_params_axis:]. The
 * CPU and CUDA kernels both read the row, so a normalizer of this family is a
 * row here and its operator's row in compiler/ops.h. */
#define SC_NORM_TABLE(N) \
	N(LAYER_NORM, 1)     \
	N(RMS_NORM, 0)

typedef enum {
#define SC_N_ENUM(name, centered) SC_N_##name,
	SC_NORM_TABLE(SC_N_ENUM)
#undef SC_N_ENUM
	SC_N_COUNT
} sc_norm_kind;

/* 1 when the row's mean is subtracted (the CENTERED column). */
static inline int sc_norm_centered(sc_norm_kind k)
{
#define SC_N_CENTERED(name, centered) centered,   /* in the enum's order */
	static const int centered[SC_N_COUNT] = {SC_NORM_TABLE(SC_N_CENTERED)};
#undef SC_N_CENTERED
	return centered[k];
}

void sc_norm(sc_rt *rt, sc_norm_kind k, const float *x, const float *gamma, const float *beta, float *y,
             const int64_t *dims, int ndim, int begin_norm_axis, int begin_params_axis, double eps);
/* A slice of the normalized dims, given each row's statistics over all of
 * them: mean (NULL when the kind is not centered) and var (the biased
 * variance, or the mean square when not centered): y (rows, cols) =
 * (x - mean) / sqrt(var + eps) * gamma [+ beta], gamma and beta (cols). */
void sc_norm_part(sc_rt *rt, sc_norm_kind k, const float *x, const float *gamma, const float *beta,
                  const float *mean, const float *var, float *y, int64_t rows, int64_t cols, double eps);
/* xs[i] has y's dims with axis_sizes[i] at axis. */
void sc_concat(sc_rt *rt, sc_dtype dt, const void *const *xs, const int64_t *axis_sizes, int nx, void *y,
               const int64_t *y_dims, int ndim, int axis);
/* numpy's x[begin:end:strides] per dim (negative begin/end count from the
 * end, then clamp; strides positive); dims are x's. Where begin >= 0 and
 * end > dims the slice reaches past x's end, an uneven split's padding: it
 * keeps its (end - begin) / strides (rounded up) elements, those past x
 * reading as 0. */
void sc_strided_slice(sc_rt *rt, sc_dtype dt, const void *x, void *y, const int64_t *dims, int ndim,
                      const int64_t *begin, const int64_t *end, const int64_t *strides);
/* Any pair of dtypes. To SC_F16/SC_BF16: nearest, ties to even (overflow to
 * inf, subnormals kept, NaN stays NaN); from them: exact, through float32.
 * Float to int truncates toward zero (NaN 0, saturating), anything to bool
 * is != 0, integers to 2-byte floats go through double. */
void sc_cast(sc_rt *rt, const void *x, sc_dtype x_dt, void *y, sc_dtype y_dt, int64_t n);
/* Each of n Float32 values rounded, in place, to the nearest value of the
 * half type dt (ties to even), as sc_cast to dt and back would leave it: a
 * half product written as Float32 for a Float32 reader (compiler/fuse.c,
 * the half result a Cast only widened) without a half copy in memory. */
void sc_round(sc_rt *rt, float *x, sc_dtype dt, int64_t n);
/* y = x (dims), but each element whose index along dim is real or more
 * gets value (rounded to dt as sc_fill rounds it): the padding of an
 * unevenly split dim (a piece ceil(n/k) long holding fewer real elements)
 * masked before a reduction along it, e.g. -INFINITY in the cross entropy's
 * classes, and 0 in its adjoint. 0 <= real <= dims[dim]; any dtype; y may
 * be x (in place). */
void sc_fill_pad(sc_rt *rt, const void *x, void *y, sc_dtype dt, const int64_t *dims, int ndim, int dim,
                 int64_t real, double value);
/* MindSpore's PadV3 in its constant mode (torch's F.pad): y, dims[d] +
 * lo[d] + hi[d] long along each dim d, is x (dims) in the box starting at
 * lo and value (rounded to dt as sc_fill rounds it) everywhere else. lo
 * and hi are 0 or more (a crop is a slice); any dtype. Its gradient is
 * sc_strided_slice of dy over that box. */
void sc_pad(sc_rt *rt, sc_dtype dt, const void *x, void *y, const int64_t *dims, int ndim, const int64_t *lo,
            const int64_t *hi, double value);

/* ---- computed constants (docs/operators.md, Computed constants) ----
 * Each writes one rank's piece of a value the program computes instead of
 * reading it: the elements from where the piece starts in the whole value,
 * so a rank holding a slice computes only its slice. */

/* y[i] = start + (first + i) * step, i < n: numpy's arange from its first-th
 * element. SC_F32: computed in double, rounded once; SC_I32, SC_I64: in
 * int64 (start and step integers). */
void sc_arange(sc_rt *rt, void *y, sc_dtype dt, int64_t n, int64_t first, double start, double step);
/* A causal mask's piece (lead, rows, cols), lead the leading dims (the same
 * mask each): element (i, j) is the whole mask's (row0 + i, col0 + j),
 * masked where its column exceeds its row. SC_F32: 0 where allowed, fill
 * where masked (the additive form); SC_BOOL: 1 where allowed, 0 where masked
 * (Select's condition; fill unused). */
void sc_causal_mask(sc_rt *rt, void *y, sc_dtype dt, int64_t lead, int64_t rows, int64_t cols, int64_t row0,
                    int64_t col0, double fill);
/* MindSpore's Eye's piece (rows, cols): element (i, j) is the whole's
 * (row0 + i, col0 + j), 1 where they are equal, else 0. SC_F32, SC_I32,
 * SC_I64 or SC_BOOL. */
void sc_eye(sc_rt *rt, void *y, sc_dtype dt, int64_t rows, int64_t cols, int64_t row0, int64_t col0);
/* MindSpore's LinSpace from its first-th element, n of them: y[i] = start +
 * step (first + i) in Float32, step = (stop - start) / (num - 1) (Float32,
 * no FMA: MindSpore's CPU kernel); num 1: start. */
void sc_lin_space(sc_rt *rt, float *y, int64_t n, int64_t first, float start, float stop, int64_t num);
/* A RoPE table's piece (lead, rows, cols) of the whole (positions, d), in
 * the rotate-half layout (LLaMA's, Hugging Face's): element (s, c) of the
 * whole is cos (or with is_sin, sin) of the angle s * f, f the frequency
 * theta^(-2k / d) of k = c mod d/2, rounded to float32 (SC_ROPE_FREQ); the
 * angle is that float32 product, its cosine rounded once to float32. */
void sc_rope(sc_rt *rt, float *y, int is_sin, int64_t lead, int64_t rows, int64_t cols, int64_t row0, int64_t col0,
             int64_t d, double theta);
/* The frequency of column c of a head dim d, the rotate-half layout's: both
 * halves have the same, k = c mod d/2. Computed in double and rounded once to
 * float32, the same on every backend (a float32 powf is not). */
#define SC_ROPE_FREQ(c, d, theta) \
	((float)(1.0 / pow((double)(theta), (double)(2 * ((c) % ((d) / 2))) / (double)(d))))

/* RotaryPositionEmbedding (MindSpore's ops.rotary_position_embedding): x of
 * dims[4], the last (D) even; cos and sin of cos_dims and sin_dims, each dim
 * 1 or x's and the last D, broadcast to x; a NULL cos or sin reads zeros.
 * y = x cos + r(x) sin, r the rotation of mode 0 (rotate-half: r(x) =
 * (-x[D/2:], x[:D/2]), GPT-NeoX's and LLaMA's) or 1 (interleaved pairs:
 * (x0, x1) -> (-x1, x0), GPT-J's), in float32. With transpose, y = x cos -
 * r(x sin): x's gradient when x is dy (r's transpose is -r). cos's and sin's
 * gradients are the forward with dy for one of them and zeros (NULL) for the
 * other, summed down to their shapes. y apart from x. */
void sc_rotary(sc_rt *rt, int64_t mode, int transpose, const float *x, const int64_t *dims, const float *cos,
               const int64_t *cos_dims, const float *sin, const int64_t *sin_dims, float *y);
/* The offset from column j of d to its partner in the rotation of mode; r(x)
 * at j is x at j + offset, negated when the offset is positive. */
#define SC_ROTARY_OFFSET(mode, j, d) ((mode) ? ((j) % 2 ? -1 : 1) : (j) < (d) / 2 ? (d) / 2 : -((d) / 2))
/* Element i of a 4-D x of dims n in an operand broadcast to it, st its
 * strides (0 along its dims of size 1). */
#define SC_ROTARY_AT(i, n, st)                                                                              \
	((i) / ((n)[1] * (n)[2] * (n)[3]) * (st)[0] + (i) / ((n)[2] * (n)[3]) % (n)[1] * (st)[1] +                \
	 (i) / (n)[3] % (n)[2] * (st)[2] + (i) % (n)[3] * (st)[3])

/* FlashAttentionScore (MindSpore's ops.flash_attention_score, layout BNSD):
 * dims {B, N, S, S_kv, D, N_kv}; q (B, N, S, D), k and v (B, N_kv, S_kv, D),
 * o (B, N, S, D), all float32, N_kv dividing N: query head n reads key head
 * n / (N / N_kv) (grouped-query attention; N_kv 1: multi-query; N_kv N:
 * multi-head). The four dims lie in memory in `layout`'s order (sc_fa_layout:
 * q, o, dout and dq alike; k, v, dk and dv alike, with their N_kv and S_kv).
 * o = softmax(scale q k^T + hidden(-inf)) v per (b, n),
 * where key j is hidden from query i when causal and j > i, or when mask
 * (mask_dims {B or 1, N or 1, S, S_kv}, uint8 or, with mask_float, float32;
 * NULL: none) is nonzero there (MindSpore's: 1 masks out). A query that sees
 * no key gets zeros. Tiled with an online softmax (FlashAttention-2): no
 * (S, S_kv) buffer. The gradients dq, dk and dv (each NULL when not wanted)
 * from o and dout, in one call (FlashAttention-2's backward, the row
 * statistics recomputed blockwise from q and k once for the three). */
typedef enum {
	SC_FA_BNSD,   /* (B, N, S, D): each head's rows together */
	SC_FA_BSND,   /* (B, S, N, D), MindSpore's BSND and BSH (H = N D): each row's heads together */
} sc_fa_layout;
void sc_flash_attention(sc_rt *rt, const float *q, const float *k, const float *v, const void *mask, int mask_float,
                        const int64_t *mask_dims, float *o, const int64_t *dims, float scale, int causal, int layout);
void sc_flash_attention_grad(sc_rt *rt, const float *q, const float *k, const float *v, const void *mask,
                             int mask_float, const int64_t *mask_dims, const float *o, const float *dout, float *dq,
                             float *dk, float *dv, const int64_t *dims, float scale, int causal, int layout);
/* The strides (in floats) over batch, head and row of a (B, heads, rows, D)
 * operand laid out in `layout`. */
static inline void sc_fa_strides(int layout, int64_t heads, int64_t rows, int64_t d, int64_t *st)
{
	st[0] = heads * rows * d;
	st[1] = layout == SC_FA_BSND ? d : rows * d;
	st[2] = layout == SC_FA_BSND ? heads * d : d;
}
/* Whether query i of head (b, h) does not see key j: ms the mask's strides
 * over (b, h, i) (0 where it broadcasts), its rows S_kv long. */
#define SC_FA_HIDDEN(mask, mask_float, ms, b, h, i, j, causal)                                               \
	(((causal) && (j) > (i)) ||                                                                              \
	 ((mask) && ((mask_float) ? ((const float *)(mask))[(b) * (ms)[0] + (h) * (ms)[1] + (i) * (ms)[2] + (j)] != 0.0f \
	                          : ((const uint8_t *)(mask))[(b) * (ms)[0] + (h) * (ms)[1] + (i) * (ms)[2] + (j)] != 0)))
/* The mask's strides ms[3] from its dims md[4] (each of the first two 1 or
 * B, N) */
#define SC_FA_MASK_STRIDES(md, ms)                                                     \
	((ms)[2] = (md)[3], (ms)[1] = (md)[1] == 1 ? 0 : (md)[2] * (md)[3],                \
	 (ms)[0] = (md)[0] == 1 ? 0 : (md)[1] * (md)[2] * (md)[3])

/* Dropout (docs/operators.md): y = x * keep / keep_prob (keep_prob rounded
 * to float32 first) over one rank's piece, ldims from start of the whole
 * gdims; x = dy, y = dx is the gradient, the same mask. Element i of the whole
 * (its row-major index) is kept when (splitmix64(k + i) >> 40) 2^-24 <
 * keep_prob, k = splitmix64((fnv1a64(name) ^ seed 0x9e3779b97f4a7c15) + step):
 * a counter, so any piece draws the whole's mask and each step another one.
 * A piece's padding (past gdims) gets 0. */
void sc_dropout(sc_rt *rt, const float *x, float *y, const int64_t *gdims, int ndim, const int64_t *start,
                const int64_t *ldims, const char *name, uint64_t seed, int64_t step, double keep_prob);
/* DropoutGenMask: sc_dropout's mask of one rank's piece as Bool, 1 where a
 * Dropout named name keeps the element (the same draw, bit for bit), its
 * padding 0. DropoutDoMask: y = mask ? x * (1 / keep_prob) : 0 over n
 * elements, the factor as sc_dropout's; x = dy, y = dx is the gradient. So
 * sc_dropout_do_mask of sc_dropout_gen_mask's mask is sc_dropout. */
void sc_dropout_gen_mask(sc_rt *rt, uint8_t *mask, const int64_t *gdims, int ndim, const int64_t *start,
                         const int64_t *ldims, const char *name, uint64_t seed, int64_t step, double keep_prob);
void sc_dropout_do_mask(sc_rt *rt, const float *x, const uint8_t *mask, float *y, int64_t n, double keep_prob);
/* UniformReal (MindSpore's): one rank's piece of the whole gdims of Float32
 * values in [0, 1), element i the draw (splitmix64(k + i) >> 40) 2^-24 that
 * sc_dropout compares with keep_prob, k keyed by name, seed and step as
 * sc_dropout's (exact in Float32); its padding 0. */
void sc_uniform_real(sc_rt *rt, float *y, const int64_t *gdims, int ndim, const int64_t *start, const int64_t *ldims,
                     const char *name, uint64_t seed, int64_t step);

/* Scalar losses: the mean over n (rows, for the cross entropy). Labels
 * outside [0, c) add nothing. */
void sc_sparse_softmax_ce(sc_rt *rt, const float *logits, const void *labels, sc_dtype label_dt, float *loss,
                          int64_t n, int64_t c);
/* The cross entropy of a slice of the classes, [offset, offset + c), given
 * each row's maximum and sum of exp(logit - maximum) over all the classes:
 * loss[i] (n of them) = log sum + max - the label's logit for the rows whose
 * label the slice holds, 0 for the others; summed over the slices, each
 * row's loss. */
void sc_sparse_softmax_ce_part(sc_rt *rt, const float *logits, const void *labels, sc_dtype label_dt,
                               const float *max, const float *sum, float *loss, int64_t n, int64_t c,
                               int64_t offset);
/* MindSpore's SoftmaxCrossEntropyWithLogits (its loss output): each row's
 * loss[i] (n of them) = -sum_j labels[i, j] log_softmax(logits[i, :])[j],
 * labels (n, c) as the logits (probabilities or one-hot rows). */
void sc_softmax_ce(sc_rt *rt, const float *logits, const float *labels, float *loss, int64_t n, int64_t c);
/* The same over a slice of the classes, given each row's maximum and sum of
 * exp(logit - maximum) over all the classes: loss[i] = sum_j labels[i, j]
 * (log sum + max - logits[i, j]) over the slice's j; summed over the
 * slices, each row's loss. */
void sc_softmax_ce_part(sc_rt *rt, const float *logits, const float *labels, const float *max, const float *sum,
                        float *loss, int64_t n, int64_t c);
void sc_mse_loss(sc_rt *rt, const float *pred, const float *target, float *loss, int64_t n);
void sc_l1_loss(sc_rt *rt, const float *pred, const float *target, float *loss, int64_t n);
/* MindSpore's L2Loss: loss[0] = sum x^2 / 2 over x's n elements (summed in
 * double on cpu, Float32 on cuda). */
void sc_l2_loss(sc_rt *rt, const float *x, float *loss, int64_t n);
/* MindSpore's KLDivLoss over n elements of logits x and labels y: the
 * element y (log y - x), 0 where that is NaN (y 0). reduce 0: out[i] the
 * elements; 1: out[0] = scale times their sum (summed in double on cpu,
 * Float32 on cuda; scale 1 / count for "mean", 1 / batch for "batchmean"). */
void sc_kldiv_loss(sc_rt *rt, const float *x, const float *y, float *out, int64_t n, int reduce, double scale);
/* MindSpore's Lerp: y = start + w (end - start), the three broadcast to
 * y_dims as numpy's (dims right-aligned, size 1 repeats). */
void sc_lerp(sc_rt *rt, const float *start, const int64_t *s_dims, int s_ndim, const float *end,
             const int64_t *e_dims, int e_ndim, const float *w, const int64_t *w_dims, int w_ndim, float *y,
             const int64_t *y_dims, int y_ndim);
/* MindSpore's MaskedFill: y = value[0] where the SC_BOOL mask is true, else
 * x; x and mask broadcast to y_dims as numpy's. */
void sc_masked_fill(sc_rt *rt, const float *x, const int64_t *x_dims, int x_ndim, const uint8_t *mask,
                    const int64_t *m_dims, int m_ndim, const float *value, float *y, const int64_t *y_dims, int y_ndim);
/* MindSpore's ResizeNearestNeighbor (bilinear 0) and ResizeBilinearV2
 * (bilinear 1) on nc planes: x (nc, in_h, in_w) to y (nc, out_h, out_w).
 * A scale is in / out, or (in - 1) / (out - 1) with align_corners (and out
 * above 1), in Float32; an output index o reads the source coordinate
 * s = o scale, or (o + 0.5) scale with half_pixel_centers (bilinear: less
 * 0.5). Nearest: round(s) with align_corners, else floor(s), at most in - 1.
 * Bilinear: rows floor(s) (at least 0) and ceil(s) (at most in - 1) mixed
 * by s - floor(s), MindSpore's CPU kernel's lerps. */
void sc_resize(sc_rt *rt, int bilinear, const float *x, float *y, int64_t nc, int64_t in_h, int64_t in_w,
               int64_t out_h, int64_t out_w, int align_corners, int half_pixel_centers);

/* ---- backward kernels ----
 * dy is the gradient of the output, dx of the input. Matmul gradients are
 * sc_matmul with transposes; a loss's dloss points to its
 * scalar gradient (NULL: 1). */

/* da, db (either may be NULL) take a's and b's shapes: broadcast dims summed.
 * Maximum sends dy to a where a > b, Minimum where a < b, and a tie gives
 * each operand half of dy (MindSpore's MaximumGrad). */
void sc_binary_grad(sc_rt *rt, sc_binop op, const float *a, const int64_t *a_dims, int a_ndim, const float *b,
                    const int64_t *b_dims, int b_ndim, const float *dy, const int64_t *y_dims, int y_ndim, float *da,
                    float *db);
/* y = x's gradient summed down to y_dims, which broadcast to x_dims. */
void sc_sum_to_shape(sc_rt *rt, const float *x, const int64_t *x_dims, int x_ndim, float *y, const int64_t *y_dims,
                     int y_ndim);
/* y = x broadcast to y_dims (ReduceSum/Mean backward with x in keep_dims form). */
void sc_broadcast_to(sc_rt *rt, const float *x, const int64_t *x_dims, int x_ndim, float *y, const int64_t *y_dims,
                     int y_ndim);
void sc_bias_add_grad(sc_rt *rt, const float *dy, float *dbias, int64_t rows, int64_t c);

void sc_softmax_grad(sc_rt *rt, const float *y, const float *dy, float *dx, const int64_t *dims, int ndim, int axis);
void sc_log_softmax_grad(sc_rt *rt, const float *y, const float *dy, float *dx, const int64_t *dims, int ndim,
                         int axis);
/* dy in y's layout; the ties share the gradient equally: dx = dy / count where
 * x equals y, count[o] the ties of output o (y's dims). count NULL: the ties
 * in x; a reduced dim split over ranks passes the ties of every rank's piece
 * (sc_count_equal, then an AllReduce sum). ReduceMin's is the same, y the
 * minimum (one kernel; the profile names each). */
void sc_reduce_max_grad(sc_rt *rt, const float *x, const float *y, const float *dy, const float *count, float *dx,
                        const int64_t *dims, int ndim, const int *axes, int naxes);
void sc_reduce_min_grad(sc_rt *rt, const float *x, const float *y, const float *dy, const float *count, float *dx,
                        const int64_t *dims, int ndim, const int *axes, int naxes);
/* ReduceProd's gradient, the product of the other elements, exact at zeros:
 * with P the product of the nonzero elements along the reduced axes and Z
 * how many are zero, dx = dy P / x where Z is 0, dy P at the one zero where
 * Z is 1, else 0. prod and zeros (y's dims) NULL: P and Z of x's elements; a
 * reduced dim split over ranks passes every rank's (sc_reduce_prod_stat,
 * then an AllReduce prod and an AllReduce sum). */
void sc_reduce_prod_grad(sc_rt *rt, const float *x, const float *dy, const float *prod, const float *zeros, float *dx,
                         const int64_t *dims, int ndim, const int *axes, int naxes);
/* y (y's dims) = the product of x's nonzero elements along axes (k 0), or
 * how many are zero (k 1). */
void sc_reduce_prod_stat(sc_rt *rt, const float *x, int k, float *y, const int64_t *dims, int ndim, const int *axes,
                         int naxes);
/* MindSpore's CumSum (prod 0) and CumProd (prod 1) along the middle dim of
 * (outer, n, inner), accumulated in Float32: y[i] = x[0] + ... + x[i] (x[0]
 * ... x[i]); exclusive leaves x[i] out (y[0] = 0, or 1), reverse scans from
 * the end. */
void sc_cumsum(sc_rt *rt, int prod, const float *x, float *y, int64_t outer, int64_t n, int64_t inner, int exclusive,
               int reverse);
/* Their gradient: CumSum's the scan of dy the other way (exclusive kept);
 * CumProd's, dx[j] = sum over the i that x[j] reaches of dy[i] times the
 * product of the other x in y[i], in two passes (no division: exact at
 * zeros). x is read by CumProd's only. */
void sc_cumsum_grad(sc_rt *rt, int prod, const float *x, const float *dy, float *dx, int64_t outer, int64_t n,
                    int64_t inner, int exclusive, int reverse);
/* A rank's piece of a scan whose axis is split into k even slices, this
 * rank's starting at element `offset` of the axis (its slice is offset / n):
 * totals (outer, k, inner) holds every slice's total (sum or product, as
 * gathered); the piece's scan starts from the totals of the slices before it
 * (after it, reverse) summed (multiplied). Its gradient: dx (NULL: not
 * wanted), and dtotals (NULL: not wanted), this rank's term of the totals'
 * gradient (summed over the ranks by the caller): for each carried slice,
 * the sum of dy (CumSum) or of dy times the local scan and the other carried
 * totals (CumProd, no division). x NULL for CumSum's. */
void sc_cumsum_part(sc_rt *rt, int prod, const float *x, const float *totals, float *y, int64_t offset, int64_t k,
                    int64_t outer, int64_t n, int64_t inner, int exclusive, int reverse);
void sc_cumsum_part_grad(sc_rt *rt, int prod, const float *x, const float *totals, const float *dy, float *dx,
                         float *dtotals, int64_t offset, int64_t k, int64_t outer, int64_t n, int64_t inner,
                         int exclusive, int reverse);
/* count (y's dims, as floats) = how many elements of x along axes equal y. */
void sc_count_equal(sc_rt *rt, const float *x, const float *y, float *count, const int64_t *dims, int ndim,
                    const int *axes, int naxes);
/* dx = dy where x equals y, else 0 (the adjoint of a max or min over ranks:
 * the ranks whose partial maximum (minimum) is the whole's pass the gradient on). */
void sc_where_equal(sc_rt *rt, const float *x, const float *y, const float *dy, float *dx, int64_t n);
/* dtable (rows, row) = rows of dy added at idx - offset (others zero). */
void sc_gather_grad(sc_rt *rt, const float *dy, const void *idx, sc_dtype idx_dt, int64_t nidx, int64_t offset,
                    float *dtable, int64_t rows, int64_t row);
/* dtable (rows, row) = zeros, row i of dy added where sc_embedding_lookup read row i from. */
void sc_embedding_lookup_grad(sc_rt *rt, const float *dy, const void *idx, sc_dtype idx_dt, int64_t nidx,
                              int64_t offset, int64_t limit, float *dtable, int64_t rows, int64_t row);
/* dtable (outer, rows, row) = dy (outer, nidx, row) added at idx - offset in each outer slice. */
void sc_gather_axis_grad(sc_rt *rt, const float *dy, const void *idx, sc_dtype idx_dt, int64_t nidx, int64_t offset,
                         float *dtable, int64_t outer, int64_t rows, int64_t row);
/* GatherNd's adjoint: dx (dims, inner) = zeros, row i of dy (m, inner)
 * added into slice idx[i], in order of i (repeated indices add up). */
void sc_gather_nd_grad(sc_rt *rt, const float *dy, const void *idx, sc_dtype idx_dt, int64_t m, float *dx,
                       const int64_t *dims, int n, int64_t inner);
/* The tensor scatters' adjoints (MindSpore's bprops), k the input, x, upd
 * and y the forward's (x and upd read by Mul, Div, Max and Min, y by Max
 * and Min; NULL for the others). k 0, dx (ldims, inner): dy, with the
 * slices the indices name zeroed (Update), multiplied (Mul) or divided
 * (Div) by upd's rows in turn (the forward applied to dy); Max, Min: dy
 * where x[e] == y[e], divided by the ties, 1 + the updates equal to y[e],
 * else 0. k 2, dupd (m, inner): dy's slice idx[i] (negated for Sub;
 * Mul: times x's slice; Div: times x's / -(upd * upd); Max, Min: divided
 * by the ties where upd == y's slice, else 0), 0 where it is another
 * rank's piece's (start as sc_tensor_scatter's). Mul's and Div's updates'
 * gradients are MindSpore's: each read as if its index were the only one. */
void sc_tensor_scatter_grad(sc_rt *rt, sc_scatter_op op, int k, const float *dy, const float *x, const float *upd,
                            const float *y, const void *idx, sc_dtype idx_dt, int64_t m, float *dx,
                            const int64_t *start, const int64_t *ldims, int n, int64_t inner);
/* dx (xdims) = zeros, dy (idims) added at index along dim (GatherD's adjoint). */
void sc_gather_d_grad(sc_rt *rt, const float *dy, const void *idx, sc_dtype idx_dt, const int64_t *idims, float *dx,
                      const int64_t *xdims, int ndim, int dim, int64_t offset);
/* L2Normalize's: without sumsq, dx = dy / r - x sum(dy x) / r^3, r =
 * sqrt(max(S, eps)), the second term 0 where S < eps (the norm constant
 * there); with sumsq (a slice's piece), dx = dy / r alone and dsumsq = -sum(dy
 * x) / (2 r^3) (0 where S < eps), summed over the slices by the caller. dx and
 * dsumsq may each be NULL. */
void sc_l2_normalize_grad(sc_rt *rt, const float *x, const float *sumsq, const float *dy, float *dx, float *dsumsq,
                          int64_t outer, int64_t n, int64_t inner, double eps);
/* BatchNorm's (MindSpore's BatchNormGrad) on x (n, c, hw): mean and var
 * NULL, the whole operator in training (the batch's statistics recomputed
 * from x, and dx through them: scale r / M (M dy - sum dy - xhat sum(dy
 * xhat)), M = n hw); else the statistics fixed (inference's moving ones, or
 * a slice's piece's batch ones): dx = dy scale r, dmean = -scale r sum dy,
 * dvar = -scale r^3 sum(dy (x - mean)) / 2. dscale = sum(dy xhat), dbias =
 * sum dy, each over this rank's slice. Any output may be NULL. */
void sc_batch_norm_grad(sc_rt *rt, const float *x, const float *dy, const float *scale, const float *mean,
                        const float *var, float *dx, float *dscale, float *dbias, float *dmean, float *dvar, int64_t n,
                        int64_t c, int64_t hw, double eps);
/* Recomputes the statistics from x; dx, dgamma, dbeta may each be NULL. */
void sc_norm_grad(sc_rt *rt, sc_norm_kind k, const float *dy, const float *x, const float *gamma, float *dx,
                  float *dgamma, float *dbeta, const int64_t *dims, int ndim, int begin_norm_axis,
                  int begin_params_axis, double eps);
/* sc_norm_part's gradients with respect to x (the statistics held fixed),
 * gamma, beta, the mean and var (rows); each may be NULL (dmean is when the
 * kind is not centered). */
void sc_norm_part_grad(sc_rt *rt, sc_norm_kind k, const float *dy, const float *x, const float *gamma,
                       const float *mean, const float *var, float *dx, float *dgamma, float *dbeta, float *dmean,
                       float *dvar, int64_t rows, int64_t cols, double eps);
/* dx (x's dims, zeros elsewhere) = dy placed where the slice took it. A
 * slice that reaches past x's end (sc_strided_slice: an uneven split's
 * padding) drops the gradient of its elements past x. */
void sc_strided_slice_grad(sc_rt *rt, const float *dy, float *dx, const int64_t *dims, int ndim,
                           const int64_t *begin, const int64_t *end, const int64_t *strides);
void sc_sparse_softmax_ce_grad(sc_rt *rt, const float *logits, const void *labels, sc_dtype label_dt,
                               const float *dloss, float *dlogits, int64_t n, int64_t c);
/* Its gradient on the slice, rows' dloss given: dloss[i] * (softmax - one-hot of the label) for the rows
 * whose label is a class, [0, classes); 0 for the others. */
void sc_sparse_softmax_ce_part_grad(sc_rt *rt, const float *logits, const void *labels, sc_dtype label_dt,
                                    const float *max, const float *sum, const float *dloss, float *dlogits,
                                    int64_t n, int64_t c, int64_t offset, int64_t classes);
/* MindSpore's bprop (its backprop output): dlogits = (softmax(logits) - labels) dloss[i], the rows'
 * dloss (NULL: 1 each); the gradient when each label row sums to 1. Either may write over the logits
 * (in place): each row is read whole before it is written. */
void sc_softmax_ce_grad(sc_rt *rt, const float *logits, const float *labels, const float *dloss, float *dlogits,
                        int64_t n, int64_t c);
/* Its gradient on a slice of the classes, the rows' statistics given. */
void sc_softmax_ce_part_grad(sc_rt *rt, const float *logits, const float *labels, const float *max,
                             const float *sum, const float *dloss, float *dlogits, int64_t n, int64_t c);
void sc_mse_loss_grad(sc_rt *rt, const float *pred, const float *target, const float *dloss, float *dpred,
                      int64_t n);
void sc_l1_loss_grad(sc_rt *rt, const float *pred, const float *target, const float *dloss, float *dpred,
                     int64_t n);
/* dx = x dloss[0] (dloss NULL: 1), MindSpore's L2Loss bprop; may run in place. */
void sc_l2_loss_grad(sc_rt *rt, const float *x, const float *dloss, float *dx, int64_t n);
/* KLDivLoss's logits gradient (MindSpore's KLDivLossGrad): reduce 0: dx[i]
 * = -y[i] dout[i]; 1: dx[i] = y[i] (-scale dout[0]) (dout NULL: 1). */
void sc_kldiv_loss_grad(sc_rt *rt, const float *y, const float *dout, float *dx, int64_t n, int reduce, double scale);
/* Lerp's gradient for operand k (0 start: dy (1 - w), 1 end: dy w, 2 the
 * weight: dy (end - start); MindSpore's bprop), summed over the dims that
 * operand is broadcast along into dx of its shape. */
void sc_lerp_grad(sc_rt *rt, int k, const float *start, const int64_t *s_dims, int s_ndim, const float *end,
                  const int64_t *e_dims, int e_ndim, const float *w, const int64_t *w_dims, int w_ndim,
                  const float *dy, const int64_t *y_dims, int y_ndim, float *dx);
/* MaskedFill's gradient (MindSpore's bprop): k 0, x's: dy where the mask is
 * false, summed over the dims x is broadcast along into dx of x_dims; k 2,
 * value's: the sum of dy where it is true, one element. */
void sc_masked_fill_grad(sc_rt *rt, int k, const int64_t *x_dims, int x_ndim, const uint8_t *mask,
                         const int64_t *m_dims, int m_ndim, const float *dy, const int64_t *y_dims, int y_ndim,
                         float *dx);
/* sc_resize's gradient (MindSpore's ResizeNearestNeighborGrad and
 * ResizeBilinearGrad): dx (nc, in_h, in_w) zeroed, then each dy element
 * added onto the x elements its y element read, times their weights. */
void sc_resize_grad(sc_rt *rt, int bilinear, const float *dy, float *dx, int64_t nc, int64_t in_h, int64_t in_w,
                    int64_t out_h, int64_t out_w, int align_corners, int half_pixel_centers);

/* ---- optimizers (MindSpore's formulas; g' = g + weight_decay p) ----
 * The compiler passes weight_decay 0 for a parameter the decay filter skips. */

/* nn.SGD: with momentum > 0, a = g' on step 1, else momentum a + (1 - dampening) g',
 * then g' = nesterov ? g' + momentum a : a (accum holds a; NULL when momentum
 * is 0); p -= lr g'. */
void sc_sgd(sc_rt *rt, float *p, const float *g, float *accum, int64_t n, double lr, double momentum,
            double dampening, double weight_decay, int nesterov, int64_t step);
/* nn.Momentum: v = momentum v + g'; p -= lr v, or with nesterov
 * p -= lr g' + lr momentum v */
void sc_momentum(sc_rt *rt, float *p, const float *g, float *v, int64_t n, double lr, double momentum,
                 double weight_decay, int nesterov);
/* nn.Adam, step t >= 1: m += (1-b1)(g'-m); v += (1-b2)(g'^2-v);
 * p -= lr sqrt(1-b2^t)/(1-b1^t) m/(sqrt(v)+eps) */
void sc_adam(sc_rt *rt, float *p, const float *g, float *m, float *v, int64_t n, double lr, double beta1,
             double beta2, double eps, double weight_decay, int64_t step);
/* nn.AdamWeightDecay (no bias correction; the decay is not in m and v):
 * m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2; p -= lr (m/(sqrt(v)+eps) + weight_decay p) */
void sc_adam_weight_decay(sc_rt *rt, float *p, const float *g, float *m, float *v, int64_t n, double lr,
                          double beta1, double beta2, double eps, double weight_decay);

/* nn.Lamb, step t >= 1, in two calls around the AllReduce of the norms.
 * This step's m' = b1 m + (1-b1) g and v' = b2 v + (1-b2) g^2, bias
 * corrected, give the update u = m'/(1-b1^t) / (sqrt(v'/(1-b2^t)) + eps)
 * + weight_decay p. sc_lamb_norms: out[0] = the sum of p^2 and out[1] of u^2
 * over the n elements (n 0: both 0; m and v not written). sc_lamb: m = m',
 * v = v', p -= lr r u, r the trust ratio from the whole parameter's sums
 * (norms[0] of p^2, norms[1] of u^2): ||p|| / (||u|| + 2^-126), or 1 when
 * either norm is 0 (MindSpore's LambApplyWeightAssign). */
void sc_lamb_norms(sc_rt *rt, const float *p, const float *g, const float *m, const float *v, int64_t n,
                   double beta1, double beta2, double eps, double weight_decay, int64_t step, float *out);
void sc_lamb(sc_rt *rt, float *p, const float *g, float *m, float *v, int64_t n, double lr, double beta1,
             double beta2, double eps, double weight_decay, int64_t step, const float *norms);

/* ---- gradient clipping by global norm ---- */

/* out (one float) = the sum of the squares of xs[k] (ns[k] elements each). */
void sc_sum_squares(sc_rt *rt, const float *const *xs, const int64_t *ns, int nx, float *out);
/* y = x clip / max(sqrt(*sqnorm), clip) (ops.clip_by_global_norm); may run in place. */
void sc_clip_by_norm(sc_rt *rt, const float *x, float *y, int64_t n, const float *sqnorm, double clip);

#endif
