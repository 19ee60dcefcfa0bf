/* rt_internal.h: what the runtime's files share and emitted code never sees.
 *
 * Sections: the process and group structs, errors and check macros, small
 * shape helpers, the host-memory collectives (MPI) both backends use, .npy
 * and initializer arithmetic on host buffers (pure, so unit tests call them
 * without MPI), and the hooks each backend provides (sc_be_*). Every symbol
 * keeps the sc_ prefix so nothing clashes with emitted code or other
 * libraries. */
#ifndef RT_INTERNAL_H
#define RT_INTERNAL_H

#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>

#include "shardc_rt.h"

/* ---- process and groups ---- */

struct sc_rt {
	int rank, size;
	int argc;
	char **argv;                 /* the command line, after MPI_Init */
	int64_t bytes_sent;          /* docs/output.md ring formula, summed over collectives */
	int64_t steps;               /* the run's last step (sc_steps); 0: not asked yet */
	int64_t p2p_sent;            /* of them, what sc_p2p_send sent (pipeline stages) */
	void **slabs;                /* freed at sc_finalize */
	int nslabs, capslabs;
	sc_group **groups;
	int ngroups, capgroups;
	void *be;                    /* backend state (cuda: device, streams, handles) */
	/* sc_p2p_send's sends not yet known complete (comm.c): each request and
	 * the host copy of the message it sends, freed when it completes. */
	MPI_Request *send_req;       /* (nsends) */
	void **send_copy;            /* (nsends) */
	int nsends, capsends;
	double recv_wait;            /* seconds sc_p2p_recv blocked: a pipeline stage idle, waiting on another */
	/* Progress (sc_print_step, rank 0): --log-every, --log. */
	int64_t log_every;           /* print every K-th step (and the last); 0: not read yet */
	FILE *log;                   /* --log FILE: JSON lines; NULL: none */
	double started, last_time;   /* MPI_Wtime at the first sc_print_step's call, at the last line */
	int64_t last_step;           /* the step of the last line printed; before the first, the step before it */
	int64_t first_step;          /* the first step run: 1, or after a resumed checkpoint's */
};

struct sc_group {
	MPI_Comm comm;               /* MPI_COMM_NULL on ranks outside the group */
	int n;                       /* members */
	int me;                      /* this rank's member index, -1 outside */
	int color;                   /* the split's color: one per group of a partition; -1 outside */
	int *members;                /* (n) global ranks, in member order */
	void *be;                    /* backend state (cuda: the NCCL communicator) */
};

/* ---- errors ---- */

/* Prints `shardc runtime: rank R: FILE:LINE: message` and aborts the job. */
_Noreturn void sc_fatal(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
#define SC_DIE(...) sc_fatal(__FILE__, __LINE__, __VA_ARGS__)
#define SC_ASSERT(c) ((c) ? (void)0 : SC_DIE("assertion failed: %s", #c))

void sc_mpi_check(int err, const char *call, const char *file, int line);
#define SC_MPI_CHECK(call) sc_mpi_check((call), #call, __FILE__, __LINE__)

/* Every rank knows it failed or not; agree, let the lowest failing rank print
 * msg to stderr, and exit 1 everywhere (a clean error, not an abort). */
void sc_agree_or_exit(sc_rt *rt, bool ok, const char *msg);
/* The same with another exit status (3: the training diverged). */
void sc_agree_or_stop(sc_rt *rt, bool ok, int status, const char *msg);

/* ---- shapes ---- */

size_t sc_dtype_size(sc_dtype dt);
const char *sc_dtype_name(sc_dtype dt);             /* "float32" ... */
int64_t sc_numel(const int64_t *dims, int ndim);
/* A grouped Conv2D's geometry for one group: its c / groups channels in, o / groups out (both backends). */
sc_window sc_window_group(const sc_window *g);
void sc_check_dims(const char *what, const int64_t *dims, int ndim);
/* sc_pad's y dims from x's and the paddings; dies on bad dims or a negative padding (both backends). */
void sc_pad_dims(const int64_t *dims, int ndim, const int64_t *lo, const int64_t *hi, int64_t *ydims);
int sc_norm_axis(const char *what, int axis, int ndim);   /* dies when out of range */
/* sc_norm_centered(k) for the sc_norm* entry points; dies when k is no row
 * of SC_NORM_TABLE. */
int sc_norm_check(const char *what, sc_norm_kind k);
/* The same for the _part forms, which also die unless mean is given exactly
 * when k is centered, and dmean is NULL when it is not. */
int sc_norm_part_check(const char *what, sc_norm_kind k, const float *mean, const float *dmean);
/* prod(dims[:axis]), dims[axis], prod(dims[axis+1:]) */
void sc_split3(const int64_t *dims, int ndim, int axis, int64_t *outer, int64_t *mid, int64_t *inner);
/* Right-aligns in_dims against out_dims and writes each out dim's element
 * stride into in (0 where broadcast or absent). Dies when in does not
 * broadcast to out. */
void sc_bcast_strides(const char *what, const int64_t *in_dims, int in_ndim, const int64_t *out_dims, int out_ndim,
                      int64_t *strides);
/* Uneven shards (GSPMD's): a dim of n split k ways gives every rank a piece
 * ceil(n/k) long, so a piece (start, ldims) of a tensor of gdims may reach
 * past the whole, or lie wholly past it; what lies past is padding. Its
 * real part along dim d is real[d] = clamp(gdims[d] - start[d], 0,
 * ldims[d]) elements, the piece's first. sc_piece_real writes real and
 * says whether the piece has padding; it dies, naming what, on bad dims or
 * a negative start. Readers read the real part packed (row-major over real)
 * and sc_piece_pad spreads it in place over the piece's layout (ldims),
 * zeroing the padding; writers sc_piece_unpad it back, in place, and send
 * or write the packed real part only. sc_pad_zero zeroes the padding of a
 * piece in slab memory (sc_fill_pad along each padded dim). */
bool sc_piece_real(const char *what, const int64_t *gdims, int ndim, const int64_t *start, const int64_t *ldims,
                   int64_t *real);
void sc_piece_pad(void *buf, size_t es, int ndim, const int64_t *real, const int64_t *ldims);
void sc_piece_unpad(void *buf, size_t es, int ndim, const int64_t *real, const int64_t *ldims);
void sc_pad_zero(sc_rt *rt, void *y, sc_dtype dt, const int64_t *ldims, int ndim, const int64_t *real);
/* Index i of an Int32 or Int64 array of ids or labels. */
static inline int64_t sc_index_at(const void *x, sc_dtype dt, int64_t i)
{
	if (dt == SC_I32)
		return ((const int32_t *)x)[i];
	if (dt == SC_I64)
		return ((const int64_t *)x)[i];
	SC_DIE("indices must be int32 or int64, not %s", sc_dtype_name(dt));
}
/* The first of count indices (Int32 or Int64) outside [0, bound), -1 when
 * none; with `mark` (run.sh --unchecked-ids) each one is set to -1 instead,
 * which every kernel takes as outside (a Gather's zero row, a label adding
 * nothing), and -1 is returned. */
int64_t sc_indices_outside(void *x, sc_dtype dt, int64_t count, int64_t bound, bool mark);
/* GatherNd's and the tensor scatters' indices (m, n) into dims[0..n): the
 * slice row i names, or -1 when it lies outside dims. */
int64_t sc_nd_row(const void *idx, sc_dtype dt, int64_t i, const int64_t *dims, int n);
/* The same in a piece of dims ldims starting at start (NULL: 0s): -1 when
 * row i's slice lies outside it. */
int64_t sc_nd_piece_row(const void *idx, sc_dtype dt, int64_t i, const int64_t *start, const int64_t *ldims, int n);
/* Every row of those indices (on the host) inside dims, else a message
 * naming `what`, the index and its row, and every rank stops with status 1
 * (bad input: the indices are the model's). */
void sc_nd_check(const void *idx, sc_dtype dt, int64_t m, const int64_t *dims, int n, const char *what);
/* numpy slice normalization (negative begin/end count from the end, then
 * clamp), except where begin >= 0 and end > dims: the slice keeps its length
 * there, an uneven split's padding, and only its first real[d] of
 * out_dims[d] elements lie in x (0 when begin >= dims). b is the first
 * index read (0 where none is). Returns whether some dim reaches past x, so the callers keep
 * their plain copy for every slice inside x. */
bool sc_slice_norm(const int64_t *dims, int ndim, const int64_t *begin, const int64_t *end, const int64_t *strides,
                   int64_t *b, int64_t *out_dims, int64_t *real);
/* "(3, 4)" into buf */
const char *sc_dims_str(char *buf, size_t n, const int64_t *dims, int ndim);
/* s (its first len bytes) for a message: whole if short, else its first
 * SC_NAME_SHOWN bytes, "..." and its length, so a 100 kB name or argument
 * does not fill the screen or push the message's end out of its buffer. */
enum { SC_NAME_SHOWN = 64, SC_NAME_BUF = SC_NAME_SHOWN + 40 };
const char *sc_cut(char buf[SC_NAME_BUF], const char *s, size_t len);
/* The readers' (npy.c, safetensors.c, data.c) way to refuse a file: the
 * message into err (n bytes), then false for the caller to return. */
bool sc_fail(char *err, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
char *sc_strdup(const char *s);   /* strdup, or dies out of memory */

/* dst[b][a][:] = src[a][b][:] for src (A, B, C) of es-byte elements: the
 * packing and unpacking step of collectives along an inner axis. */
void sc_host_swap01(const void *src, void *dst, int64_t A, int64_t B, int64_t C, size_t es);

/* ---- Float16 and BFloat16 on the host (half.c) ----
 * Narrowing rounds to nearest, ties to even: past the largest finite value
 * to inf, subnormals kept, NaN to the quiet NaN of its sign (0x7e00,
 * 0x7fc0). Widening is exact (a NaN keeps its payload, quieted). */

uint16_t sc_f16_from_double(double v);
uint16_t sc_bf16_from_double(double v);
uint16_t sc_bf16_from_float(float v);   /* the same on a float, by its bits */
float sc_f16_to_float(uint16_t h);
float sc_bf16_to_float(uint16_t h);
/* y (n float32) = x (n elements of dt: SC_F32, SC_F16 or SC_BF16), and back */
void sc_host_widen(const void *x, sc_dtype dt, float *y, int64_t n);
void sc_host_narrow(const float *x, void *y, sc_dtype dt, int64_t n);
bool sc_is_half(sc_dtype dt);                       /* SC_F16 or SC_BF16 */
/* A half product's types (sc_matmul_half and the batched ones): operands of
 * half type dt, a result of c_dt SC_F32 or dt; else aborts, naming what. */
void sc_check_half_product(const char *what, sc_dtype dt, sc_dtype c_dt);

/* ---- collectives on host memory (the cpu backend, and cuda without NCCL) ---- */

MPI_Datatype sc_mpi_type(sc_dtype dt);
void sc_host_all_reduce(sc_group *g, const void *in, void *out, sc_dtype dt, int64_t count, sc_redop op);
void sc_host_all_gather(sc_group *g, const void *in, void *out, sc_dtype dt, const int64_t *dims, int ndim, int axis);
void sc_host_reduce_scatter(sc_group *g, const void *in, void *out, sc_dtype dt, const int64_t *dims, int ndim,
                            int axis, sc_redop op);
void sc_host_all_to_all(sc_group *g, const void *in, void *out, sc_dtype dt, const int64_t *dims, int ndim,
                        int split_axis, int concat_axis);
/* ops on host memory, over MPI_COMM_WORLD (sc_p2p_exchange's checks done) */
void sc_host_p2p_exchange(const sc_p2p *ops, int n);
/* divide count elements by n in place (SC_MEAN) */
void sc_host_divide(void *buf, sc_dtype dt, int64_t count, int n);

/* ---- .npy on host memory ---- */

typedef struct {
	sc_dtype dt;
	int ndim;
	int64_t dims[SC_MAX_DIMS];
	long data_offset;            /* bytes from the file's start to the data */
} sc_npy_header;

/* Parses the header of f (at its start). false: err says why (e.g.
 * "has dtype float64 ('<f8'), expected ..." is the caller's; here "is not a
 * .npy file"). */
bool sc_npy_read_header(FILE *f, sc_npy_header *h, char *err, size_t errlen);
/* The dtype a tensor of dt is stored as in a .npy file (BFloat16: SC_F32),
 * and its descr ('<f4'). */
sc_dtype sc_npy_file_dt(sc_dtype dt);
const char *sc_npy_descr(sc_dtype dt);
/* path opened for reading if it is a regular file (a FIFO would block every
 * rank in open, a directory reads as garbage); else NULL and why says what
 * it is ("cannot be opened: ...", "is a directory, not a .npy file"). */
FILE *sc_open_regular(const char *path, char *why, size_t n);
/* The slice (start, ldims) of a tensor of gdims as *nruns runs of *run
 * contiguous elements, local run r at r * *run; returns k, the runs being
 * indexed over ldims[:k]. sc_run_offset: where run r starts in the whole
 * tensor, in elements. */
int sc_slice_runs(const int64_t *gdims, int ndim, const int64_t *ldims, int64_t *run, int64_t *nruns);
int64_t sc_run_offset(const int64_t *gdims, int ndim, const int64_t *start, const int64_t *ldims, int k, int64_t r);
/* Reads the slice (start, ldims) of the data into dst (ldims row-major). */
bool sc_npy_read_slice(FILE *f, const sc_npy_header *h, const int64_t *start, const int64_t *ldims, void *dst,
                       char *err, size_t errlen);
/* Writes a whole tensor in format 1.0 (the header of 8 dims fits its 64 KiB). */
bool sc_npy_write(FILE *f, sc_dtype dt, const int64_t *dims, int ndim, const void *data);
/* Writes DIR/FILE (dir NULL: FILE; dir created) through `DIR/.FILE.PID.tmp`:
 * written, flushed and fsynced, then renamed over FILE. false: err holds the
 * reason (strerror), the temporary file is gone and FILE is as it was. */
bool sc_npy_save_file(const char *dir, const char *file, sc_dtype dt, const int64_t *dims, int ndim,
                      const void *data, char *err, size_t errlen);
/* Whether a file can be written in dir (NULL: the current directory): dir
 * created, a temporary file made and removed. false: err holds the reason. */
bool sc_npy_check_dir(const char *dir, char *err, size_t errlen);
/* The whole tensor (gdims) on rank 0, assembled from every rank's piece
 * (start, ldims; src NULL: this rank holds none), one sender per distinct
 * piece: malloc'd on rank 0, NULL on the others. Collective. Dies, naming
 * `what`, when the pieces leave an element uncovered. */
char *sc_gather_whole(sc_rt *rt, const char *what, const void *src, sc_dtype dt, const int64_t *gdims, int ndim,
                      const int64_t *start, const int64_t *ldims);

/* ---- safetensors on host memory (safetensors.c) ---- */

typedef struct {
	char *name;                  /* as in the file */
	char dtype[16];              /* as in the file ("F32", "BF16", ...), cut to 15 bytes */
	int ndim;                    /* SC_MAX_DIMS + 1: more dims than the runtime takes */
	int64_t dims[SC_MAX_DIMS];
	int64_t begin, end;          /* data_offsets: bytes from the data's start */
} sc_st_tensor;

typedef struct {
	int64_t data_start;          /* 8 + the header's length: the data's first byte */
	int64_t data_bytes;          /* the file's bytes from there */
	sc_st_tensor *t;             /* (n), sorted by name; __metadata__ is not one */
	int n;
} sc_st_header;

/* Parses and checks the header of fd, a file of size bytes: the JSON, every
 * entry's dtype string, shape and data_offsets within the data. false: err
 * says why ("is truncated: ...", "has a header that is not JSON: ..."). */
bool sc_st_read_header(int fd, int64_t size, sc_st_header *h, char *err, size_t errlen);
void sc_st_header_free(sc_st_header *h);
const sc_st_tensor *sc_st_find(const sc_st_header *h, const char *name);   /* NULL: none */
/* Checks tensor t against a parameter of type dt and shape gdims (a dtype
 * read as dt, the shape, its bytes) and reads the slice (start, ldims) into
 * dst as dt (dst NULL: the checks only). */
bool sc_st_read_slice(int fd, const sc_st_header *h, const sc_st_tensor *t, sc_dtype dt, const int64_t *gdims,
                      int ndim, const int64_t *start, const int64_t *ldims, void *dst, char *err, size_t errlen);

typedef struct {
	char *name;
	const void *src;             /* this rank's slice (slab memory); NULL: it holds none */
	sc_dtype dt;
	int ndim;
	int64_t gdims[SC_MAX_DIMS], start[SC_MAX_DIMS], ldims[SC_MAX_DIMS];
} sc_st_piece;

/* The 8-byte length and the header of the tensors p[0..n) laid end to end in
 * that order (shapes gdims), with __metadata__ {"format": "pt"}, padded with
 * spaces so the data starts at a multiple of 8. */
bool sc_st_write_header(FILE *f, const sc_st_piece *p, int n);
/* Records a piece (the arguments of sc_safetensors_add; name copied) at the
 * end of *p (n of cap, grown); dies, naming `what`, when the slice leaves
 * gdims. The safetensors writer and a run's checkpoint keep their pieces so. */
void sc_st_piece_add(sc_st_piece **p, int *n, int *cap, const char *what, const char *name, const void *src,
                     sc_dtype dt, const int64_t *gdims, int ndim, const int64_t *start, const int64_t *ldims);
void sc_st_pieces_free(sc_st_piece *p, int n);

/* ---- initializers on host memory (docs/output.md) ---- */

typedef enum { SC_INIT_UNIFORM, SC_INIT_NORMAL, SC_INIT_RANDINT } sc_init_kind;
uint64_t sc_fnv1a64(const char *s);
uint64_t sc_splitmix64(uint64_t z);
/* Dropout's key of a step (sc_dropout): its mask's k */
uint64_t sc_dropout_key(const char *name, uint64_t seed, int64_t step);
/* u(j) of docs/output.md, Initializers, for the tensor named name */
double sc_init_u(uint64_t key, uint64_t j);
/* Writes the piece's elements as dt: uniform(p0, p1), normal(p0), randint(p0, p1);
 * its padding (sc_piece_real) 0. */
void sc_init_host(void *dst, sc_dtype dt, sc_init_kind kind, const char *name, uint64_t seed, const int64_t *gdims,
                  int ndim, const int64_t *start, const int64_t *ldims, double p0, double p1);
/* Stores a double as dt (floats: nearest, 2-byte ones ties to even; integers:
 * nearest, saturated; bool: != 0). */
void sc_store_as(void *dst, sc_dtype dt, int64_t i, double v);

/* ---- data streams on host memory (data.c; docs/output.md, Data that streams) ---- */

/* The value of the next `flag` option after argv[*i] (start with *i = 0),
 * *i moved onto it; NULL when there is none. */
const char *sc_option_next(sc_rt *rt, const char *flag, int *i);

typedef struct {                 /* an input of the program, as sc_data_input registered it */
	const char *name;
	void *dst;                   /* its piece in the slab */
	sc_dtype dt;
	int ndim;
	int64_t gdims[SC_MAX_DIMS], start[SC_MAX_DIMS], ldims[SC_MAX_DIMS];
	int64_t bound;               /* indices in [0, bound); -1: not indices */
	bool unchecked;              /* --unchecked-ids: those outside marked -1, not refused */
	const char *what;            /* what bounds them */
	int src;                     /* the source that feeds it; -1: none */
	void *host[2];               /* (ldims) its piece of the batch of an even and an odd step, as read
	                                (slab memory when sc_be_host_memory: the program reads it there) */
	const void *at[2];           /* where that piece is: host[], or the mapped file's own bytes */
	size_t bytes;                /* of the piece */
} sc_feed;

typedef enum {
	SC_SRC_ROWS,                 /* a .npy of (N, rest...): batches of B rows */
	SC_SRC_TOKENS,               /* tokens, cut into samples of S + 1 */
} sc_src_kind;

typedef struct {                 /* one --data file */
	sc_src_kind kind;
	char *path;
	int fd;
	const char *format;          /* tokens: ".npy, int32", "llm.c .bin, uint16", "headerless .bin, uint16" */
	int64_t offset;              /* bytes before the first row or token */
	sc_dtype fdt;                /* rows: the file's element type */
	int tok_bytes;               /* tokens: 2 (uint16) or 4 (int32) */
	int64_t n;                   /* rows, or tokens, in the file */
	int64_t batch;               /* rows: rows a batch (the input's dim 0); tokens: samples a step */
	int64_t row;                 /* rows: elements a row */
	int64_t S;                   /* tokens: tokens a sample */
	bool shuffle;
	uint64_t seed;
	int64_t *perm, epoch;        /* rows, shuffled: epoch's order of the batches (N / B) */
	sc_feed *feed[2];            /* the input; tokens: and its labels (NULL: none) */
	int64_t *runs[2];            /* rows: where each run of the piece starts in a batch; tokens:
	                                (sample, position, length, place in the piece) per segment */
	int64_t nruns[2], run[2];    /* how many; rows: elements a run */
	void *raw;                   /* the piece as read, where the file holds another type (tokens, bfloat16) */
	const char *map;             /* rows: the file mapped read-only where each piece is one run of its own
	                                bytes (no copy: the program reads them there), else NULL */
	size_t map_bytes;
	bool *touched;               /* mapped: (N / B) whether batch b's piece has had its pages faulted in */
	int bad_feed;                /* the feed the last failed read was for */
} sc_src;

/* The j-th draw of the generator seeded with seed: splitmix64(seed *
 * 0x9e3779b97f4a7c15 + j) (docs/output.md). */
uint64_t sc_data_draw(uint64_t seed, uint64_t j);
/* perm (nb): epoch's order of nb batches: the identity, then for i = nb-1
 * down to 1 perm[i] swapped with perm[draw(seed, epoch * nb + i) mod (i+1)]. */
void sc_data_perm(uint64_t seed, int64_t epoch, int64_t nb, int64_t *perm);
/* Opens spec (FILE.npy, or FILE:S for a token stream) for input in (and,
 * for a token stream, labels, or NULL) and checks it against them: format,
 * dtype, shape, length. false: err says why. */
bool sc_src_open(sc_src *s, const char *spec, sc_feed *in, sc_feed *labels, bool shuffle, uint64_t seed, char *err,
                 size_t n);
/* The batch step (from 1) reads (rows), the file's token where sample i of step starts (tokens). */
int64_t sc_src_batch(sc_src *s, int64_t step);
int64_t sc_src_sample_start(const sc_src *s, int64_t step, int64_t i);
/* Reads step's pieces into each feed's host[parity] (at[parity] set to it),
 * or, for a piece that is one run of a mapped file, sets at[parity] to
 * those bytes and touches their pages (so the step does not fault), checking indices
 * against their bound. false: err says why (s->bad_feed: for which feed). */
bool sc_src_read(sc_src *s, int64_t step, int parity, char *err, size_t n);
void sc_src_close(sc_src *s);

/* ---- what each backend provides ---- */

void sc_be_init(sc_rt *rt);                  /* after MPI_Init and the rank checks */
void sc_be_finalize(sc_rt *rt);              /* before MPI_Finalize */
void sc_be_group_init(sc_rt *rt, sc_group *g); /* collective over the world */
void sc_be_group_free(sc_rt *rt, sc_group *g);
void sc_be_sync(sc_rt *rt);                  /* waits for the queued device work */
/* A training step ended (sc_print_step): the first one run, the last one. */
void sc_be_step_done(sc_rt *rt, bool first, bool last);
void *sc_be_alloc(sc_rt *rt, size_t bytes);  /* zeroed */
/* true: a tensor pointer may point at host memory (the cpu backend), so
 * --data hands the program the reader's buffers instead of copying them. */
extern const bool sc_be_host_memory;
void sc_be_free(sc_rt *rt, void *p);
void sc_be_all_reduce(sc_rt *rt, sc_group *g, const void *in, void *out, sc_dtype dt, int64_t count, sc_redop op);
void sc_be_all_gather(sc_rt *rt, sc_group *g, const void *in, void *out, sc_dtype dt, const int64_t *dims, int ndim,
                      int axis);
void sc_be_reduce_scatter(sc_rt *rt, sc_group *g, const void *in, void *out, sc_dtype dt, const int64_t *dims,
                          int ndim, int axis, sc_redop op);
void sc_be_all_to_all(sc_rt *rt, sc_group *g, const void *in, void *out, sc_dtype dt, const int64_t *dims, int ndim,
                      int split_axis, int concat_axis);
void sc_be_p2p_exchange(sc_rt *rt, const sc_p2p *ops, int n);

#endif
