/* emit.c: the per-rank C programs, their Makefile and run.sh (docs/output.md).
 *
 * Requires a Lowered program. Every rank runs the same sequence of operators
 * on pieces of the same local shapes, so one buffer plan serves them all:
 * parameters, inputs and optimizer state live for the whole run; every other
 * value gets a place in one slab from its definition to its last use
 * (placed offline, largest first, each at the lowest offset free for its
 * whole life), except a value that would only be a copy of another (a
 * Reshape, its adjoint), which is that value's bytes in its buffer (a
 * view: no copy, no second buffer). What differs between
 * ranks, the groups, slice bounds, a split table's row offset, which pieces
 * of the gradients a rank holds the first copy of and where each input's
 * and result's piece starts, is a table of numbers per rank: program.c, the
 * one SPMD body every rank runs, reads them as T[k], and rank_<r>.c holds
 * rank r's table and nothing else. So OUT grows with the model, not with
 * the ranks. A person reads program.c top to bottom: its groups, its
 * buffers, its inputs, then one runtime call per operator of the forward
 * graph (step_parallel_end), the backward pass (autodiff.c) and the update. */
#include "shardc.h"

#include <stdlib.h>
#include <string.h>

enum { ALIGN = 256 };

struct Program {
	const Lowered *l;
	const char *model;       /* the model file, named in comments (sb_c_comment) */
	int64_t *offset;         /* (nvalues) byte offset in the slab */
	int *view;               /* (nvalues) the value whose buffer this one shares (copied_value), -1 none */
	int64_t *state;          /* (nparams) optimizer state's offset (Adam: m, then v); -1 none */
	int64_t slab_bytes, persistent_bytes, scratch;  /* scratch: the offset of one op's temporary */
	const char **cname;      /* (nvalues) C identifiers */
	const char **arg;        /* (nvalues) what an operator passes: cname, or a half value's Float32 copy */
	int *partition;          /* (nops) index into part[] of a collective's group, -1 none */
	int *part;               /* (npart) an op of each partition of the ranks into groups */
	int npart;
	/* The rank table: what program.c reads as T[pos .. pos + n) */
	struct Entry *entry;     /* (nentry) in table order */
	int nentry;
	int64_t tlen;            /* numbers in a rank's table */
	int64_t *tab;            /* (device_num, tlen) every rank's table */
	int *value_entry;        /* (nvalues) entry of a value's piece start, -1 none */
	int *op_entry;           /* (nops) entry of an op's rank's attributes or pieces, -1 none */
	int *part_entry;         /* (npart) entry of the first member of the rank's group */
	const TensorLayout **mat;   /* (nmat) the device matrices the entries are formulas on */
	int nmat;
};

/* One rank-dependent item of the table, a formula of the rank's row-major
 * coordinates on a device matrix. */
typedef enum {
	E_GROUP,     /* at partition k: the first member of the rank's group (1 number) */
	E_PIECE,     /* at value v: where the rank's piece starts, per dim (rank numbers) */
	E_SLICE,     /* at op i, a slice: its begin, then its end, per dim */
	E_OFFSET,    /* at op i, a Gather of a split table: the first row the rank holds (1) */
	E_SQNORM,    /* at op i, a global norm: per gradient piece, its size if the rank
	              * holds its first copy, else 0 (nin numbers) */
} EntryKind;

typedef struct Entry {
	EntryKind kind;
	int at, n;
	int64_t pos;         /* its numbers are T[pos .. pos + n); -1: the same on every rank, lit */
	const int64_t *lit;  /* (n) with pos -1: the numbers, written into program.c */
	int first;           /* the first entry with the same numbers on every rank (it names them) */
	int nsame;           /* on a first entry: how many others share its place */
} Entry;

static int64_t numel(const LValue *v)
{
	int64_t n = 1;
	for (int d = 0; d < v->type.rank; d++)
		n *= v->type.dims[d];
	return n;
}

static int64_t value_bytes(const LValue *v)
{
	return numel(v) * dtype_bytes(v->type.dtype);
}

static int64_t aligned(int64_t n)
{
	return (n + ALIGN - 1) / ALIGN * ALIGN;
}

/* ---- checks: what the v1 runtime computes ---- */

/* Operators that move elements of any type; the rest compute on floats. */
static bool any_dtype(OpKind op)
{
	return op == OP_RESHAPE || op == OP_FLATTEN || op == OP_TRANSPOSE || op == OP_CONCAT ||
	       op == OP_STRIDED_SLICE || op == OP_CAST || op_is_comm(op);
}

/* Backward operators that only move or convert elements, as their forward
 * ones; the rest compute on floats. */
static bool grad_any_dtype(const Lowered *l, const LOp *o)
{
	if (o->grad == GRAD_NONE)
		return true;   /* a collective or slice moving a gradient */
	if (o->grad != GRAD_ADJOINT)
		return false;
	OpKind f = l->ops[o->of].op;
	if (f == OP_BIAS_ADD && o->k == 0)
		return true;   /* a copy of dy */
	return any_dtype(f) && f != OP_STRIDED_SLICE;   /* its gradient scatters into zeros */
}

/* The runtime's kernels compute on Float32; Float16 and BFloat16 operands
 * are widened to Float32 around them (see "half types" below). Integer
 * arithmetic it has none of. Gradients are floats by construction. */
bool emit_check(const Lowered *l, Diag *d)
{
	const Graph *g = l->flat->g;
	int before = d->nerrors;
	for (int i = 0; i < l->nfwd; i++) {
		const LOp *o = &l->ops[i];
		if (o->node < 0 || any_dtype(o->op))
			continue;
		const Node *n = &g->nodes[o->node];
		for (int k = 0; k < o->nin; k++) {
			bool index = op_info[o->op].nograd & (1u << k);   /* indices, labels */
			DType t = l->values[o->in[k]].type.dtype;
			if (!index && t != DT_F32 && !dtype_is_half(t)) {
				diag_error(d, l->m->src, n->op_span, "%s on %s: the v1 runtime computes %s on Float32, Float16 "
				           "and BFloat16 only; Cast '%%%s' to Float32 first", op_info[o->op].name, dtype_name(t),
				           op_info[o->op].name, g->values[n->in[k]].name);
				break;
			}
		}
	}
	/* The global norm's one kernel reads every gradient: too many to widen. */
	const Train *t = l->m->train;
	for (int v = 0; t && t->clip_global_norm > 0 && v < l->nparams; v++)
		if (dtype_is_half(l->values[v].type.dtype)) {
			diag_error(d, l->m->src, t->span, "clip_global_norm with a %s parameter ('%%%s'): the global norm is "
			           "computed on Float32 gradients only; keep the parameters in Float32 and Cast them",
			           dtype_name(l->values[v].type.dtype), g->values[v].name);
			break;
		}
	return d->nerrors == before;
}

/* ---- half types: computed in float32 ----
 *
 * An operator that computes (not one that moves elements) on Float16 or
 * BFloat16 values runs the Float32 kernel between casts: each half value it
 * reads is widened (exactly) into a Float32 copy in the scratch area, the
 * kernel writes its result's Float32 copy there, and one sc_cast rounds it
 * to the result's type (to nearest, ties to even). So every half result is
 * the Float32 computation rounded once, on either backend; sums inside a
 * kernel (MatMul's, a reduction's, LayerNorm's) run in Float32 or wider. */

enum { MAX_WIDENED = 8 };   /* LayerNorm's adjoint: dy, x, gamma, beta, y and dx */

typedef struct {
	int value[MAX_WIDENED];
	int64_t off[MAX_WIDENED];       /* the Float32 copy's offset in the slab */
	int n, nread;                   /* value[0..nread) are read, the rest written */
	int64_t bytes;                  /* scratch the copies take */
} Widened;

static bool computes(const Lowered *l, const LOp *o)
{
	switch (o->grad) {
	case GRAD_NONE: return !any_dtype(o->op);
	case GRAD_SEED: case GRAD_ZERO: return false;   /* sc_fill takes every type */
	case GRAD_ACCUM: case GRAD_SCALE: case GRAD_MAX_MASK: case GRAD_TIE_COUNT: case GRAD_CLIP: return true;
	case GRAD_SQNORM: return true;   /* emit_check refuses it on half gradients */
	case GRAD_ADJOINT: return !grad_any_dtype(l, o);
	}
	return true;
}

/* A MatMul or BatchMatMul (or one's adjoint) whose two operands are of one
 * half type runs on them directly: sc_matmul_half / sc_batch_matmul_half sum
 * in Float32 (tensor cores on cuda) and write the Float32 copy of the
 * result, which is rounded once as for any operator. Its operands need no
 * widened copies. */
static bool is_matmul(OpKind op)
{
	return op == OP_MATMUL || op == OP_BATCH_MATMUL;
}

static bool matmul_on_halves(const Lowered *l, const LOp *o)
{
	int x0, x1;
	if (o->grad == GRAD_NONE && is_matmul(o->op)) {
		x0 = o->in[0];
		x1 = o->in[1];
	} else if (o->grad == GRAD_ADJOINT && is_matmul(l->ops[o->of].op)) {
		x0 = o->in[0];                               /* dy */
		x1 = l->ops[o->of].in[1 - o->k];             /* the other operand */
	} else {
		return false;
	}
	DType t = l->values[x0].type.dtype;
	return dtype_is_half(t) && l->values[x1].type.dtype == t;
}

static void widen_add(const Lowered *l, Widened *w, int v, int64_t *top)
{
	if (!dtype_is_half(l->values[v].type.dtype))
		return;
	for (int i = 0; i < w->n; i++)
		if (w->value[i] == v)
			return;
	if (w->n == MAX_WIDENED)
		die("an operator with more than %d half operands", MAX_WIDENED);
	w->value[w->n] = v;
	w->off[w->n++] = *top;
	*top += aligned(numel(&l->values[v]) * 4);
}

/* The half values operator o reads and writes, their Float32 copies placed
 * from offset base on. */
static void widened(const Lowered *l, const LOp *o, int64_t base, Widened *w)
{
	int64_t top = base;
	w->n = 0;
	if (computes(l, o) && !matmul_on_halves(l, o)) {
		for (int k = 0; k < o->nin; k++)
			widen_add(l, w, o->in[k], &top);
		if (o->grad == GRAD_ADJOINT) {
			const LOp *f = &l->ops[o->of];
			for (int k = 0; k < f->nin; k++)
				widen_add(l, w, f->in[k], &top);
			widen_add(l, w, f->result, &top);
		}
	}
	w->nread = w->n;
	if (computes(l, o))
		widen_add(l, w, o->result, &top);
	w->bytes = top - base;
}

/* ---- the buffer plan ---- */

/* Offline placement (greedy by size, as TensorFlow Lite's arena planner
 * does): every buffer's life [def, last] is known before any is placed, so
 * the largest go first, each at the lowest offset where it overlaps no
 * placed buffer alive at the same time. */
typedef struct {
	int64_t size, off;
	int def, last, value;
} Buffer;

static int larger_first(const void *a, const void *b)
{
	const Buffer *x = a, *y = b;
	if (x->size != y->size)
		return x->size < y->size ? 1 : -1;
	if (x->def != y->def)
		return x->def < y->def ? -1 : 1;
	return (x->value > y->value) - (x->value < y->value);
}

typedef struct {
	int64_t off, end;
} Busy;

static int busy_cmp(const void *a, const void *b)
{
	const Busy *x = a, *y = b;
	return (x->off > y->off) - (x->off < y->off);
}

/* Sets each buffer's off; returns the bytes they take together. */
static int64_t place_buffers(Buffer *buf, int n)
{
	Busy *busy = xmalloc(sizeof(Busy) * (size_t)(n ? n : 1));
	qsort(buf, (size_t)n, sizeof *buf, larger_first);
	int64_t peak = 0;
	for (int k = 0; k < n; k++) {
		int nb = 0;
		for (int j = 0; j < k; j++)
			if (buf[j].def <= buf[k].last && buf[k].def <= buf[j].last && buf[j].size > 0)
				busy[nb++] = (Busy){buf[j].off, buf[j].off + buf[j].size};
		qsort(busy, (size_t)nb, sizeof *busy, busy_cmp);
		int64_t at = 0;
		for (int j = 0; j < nb && busy[j].off < at + buf[k].size; j++)
			at = busy[j].end > at ? busy[j].end : at;
		buf[k].off = at;
		peak = at + buf[k].size > peak ? at + buf[k].size : peak;
	}
	free(busy);
	return peak;
}

/* A backward operator reads the forward operator it differentiates; a
 * kernel that carries a fused operator (fuse.c) reads that one's inputs,
 * and those of the one it carries in turn. */
static void mark_uses(const Lowered *l, const LOp *o, int at, int *last)
{
	for (int k = 0; k < o->nin; k++)
		last[o->in[k]] = at;
	int m[MAX_CHAIN], nm = chain_members(l, at, m);   /* an elementwise chain's last: every member's */
	for (int j = 0; j < nm; j++)
		for (int k = 0; k < l->ops[m[j]].nin; k++)
			last[l->ops[m[j]].in[k]] = at;
	for (int f = o->fuse_from; f >= 0; f = l->ops[f].fuse_from)
		for (int k = 0; k < l->ops[f].nin; k++)
			last[l->ops[f].in[k]] = at;
	if (o->grad == GRAD_ADJOINT) {
		const LOp *f = &l->ops[o->of];
		for (int k = 0; k < f->nin; k++)
			last[f->in[k]] = at;
		last[f->result] = at;
	}
}

/* The temporary a kernel needs: a broadcast BatchMatMul's gradient before
 * it is summed down to its input's shape; a bucket of AllReduces packed. */
static int64_t kernel_scratch(const Lowered *l, const LOp *o)
{
	if (o->bucket > 0) {
		int64_t bytes = 0;
		for (int j = 0; j < o->bucket; j++)
			bytes += value_bytes(&l->values[o[j].result]);
		return aligned(bytes);
	}
	if (o->grad != GRAD_ADJOINT || o->op != OP_BATCH_MATMUL)
		return 0;
	const LValue *y = &l->values[l->ops[o->of].result], *x = &l->values[o->result];
	int64_t batch = numel(y) / (y->type.dims[y->type.rank - 2] * y->type.dims[y->type.rank - 1]);
	return aligned(batch * x->type.dims[x->type.rank - 2] * x->type.dims[x->type.rank - 1] * 4);
}

/* The scratch an operator needs: its kernel's, then its half operands'
 * Float32 copies. */
static int64_t scratch_bytes(const Lowered *l, const LOp *o)
{
	if (o->chain >= 0)   /* sc_ew_chain reads and writes half values itself */
		return 0;
	Widened w;
	int64_t k = kernel_scratch(l, o);
	widened(l, o, k, &w);
	return k + w.bytes;
}

/* The optimizer's state per parameter, in buffers of the parameter's size:
 * SGD's accumulation (with momentum), Momentum's v, Adam's m and v. */
static int state_slots(const Train *t)
{
	if (!t)
		return 0;
	switch (t->optimizer) {
	case OPT_SGD: return t->momentum > 0;
	case OPT_MOMENTUM: return 1;
	case OPT_ADAM: case OPT_ADAM_WEIGHT_DECAY: return 2;
	}
	return 0;
}

/* The scratch a half parameter's update needs: Float32 copies of the
 * parameter, its gradient and its optimizer state. */
static int64_t update_scratch(const Lowered *l, int v)
{
	const LValue *x = &l->values[v];
	if (!dtype_is_half(x->type.dtype))
		return 0;
	return aligned(numel(x) * 4) * (2 + state_slots(l->m->train));
}

/* The value operator o's code would only copy into its result, bytes
 * unchanged (a Reshape or a Flatten, their adjoints, a BiasAdd's adjoint for
 * its input), or -1. */
static int copied_value(const Lowered *l, const LOp *o)
{
	bool copies = false;
	if (o->grad == GRAD_NONE && !o->step)
		copies = o->op == OP_RESHAPE || o->op == OP_FLATTEN;
	else if (o->grad == GRAD_ADJOINT) {
		OpKind f = l->ops[o->of].op;
		copies = f == OP_RESHAPE || f == OP_FLATTEN || (f == OP_BIAS_ADD && o->k == 0);
	}
	if (!copies || value_bytes(&l->values[o->in[0]]) != value_bytes(&l->values[o->result]))
		return -1;
	return o->in[0];
}

/* Views: a result that would be a copy of a value computed in this step
 * takes that value's buffer instead (no copy), and the buffer lives until
 * the last reader of either. Nothing writes a value after its operator, so
 * the two never differ. Parameters and inputs are left alone (their buffers
 * are not the step's to lend), and so are fused results, which have none.
 * A folded Transpose's two values share a buffer the same way (fuse.c), one
 * of them laid out with strides. */
static void plan_views(Program *p, int *last, const bool *unbuffered)
{
	const Lowered *l = p->l;
	for (int v = 0; v < l->nvalues; v++)
		p->view[v] = -1;
	for (int i = 0; i < l->nops; i++) {
		const LOp *o = &l->ops[i];
		int s = o->fold ? o->in[0] : o->shadow || o->fused ? -1 : copied_value(l, o);
		if (s < l->nparams || unbuffered[s])
			continue;
		p->view[o->result] = p->view[s] >= 0 ? p->view[s] : s;
	}
	for (int v = 0; v < l->nvalues; v++)
		if (p->view[v] >= 0 && last[v] > last[p->view[v]])
			last[p->view[v]] = last[v];
}

static void plan_buffers(Program *p)
{
	const Lowered *l = p->l;
	int nv = l->nvalues, nops = l->nops;
	p->offset = xmalloc(sizeof(int64_t) * (size_t)(nv ? nv : 1));
	p->state = xmalloc(sizeof(int64_t) * (size_t)(l->nparams ? l->nparams : 1));
	int64_t top = 0;
	for (int v = 0; v < l->nparams; v++) {
		p->offset[v] = top;
		top += aligned(value_bytes(&l->values[v]));
	}
	for (int v = 0; v < l->nparams; v++) {
		p->state[v] = -1;
		int slots = state_slots(l->m->train);
		if (!l->grad || l->grad[v] < 0 || !slots)
			continue;
		p->state[v] = top;
		top += aligned(value_bytes(&l->values[v])) * slots;
	}
	p->persistent_bytes = top;
	/* Last uses: operators' inputs; the loss is printed after the forward
	 * graph, the gradients feed the update, the results are saved at the end. */
	int *last = xmalloc(sizeof(int) * (size_t)(nv ? nv : 1));
	bool *unbuffered = xcalloc((size_t)(nv ? nv : 1), sizeof *unbuffered);   /* a fused operator's result */
	for (int v = 0; v < nv; v++)
		last[v] = -1;
	for (int i = 0; i < nops; i++) {
		if (l->ops[i].shadow)   /* no code: its adjoint reads through it (mark_uses) */
			continue;
		last[l->ops[i].result] = i;
		unbuffered[l->ops[i].result] = l->ops[i].fused && !l->ops[i].fused_writes;
		mark_uses(l, &l->ops[i], i, last);
	}
	if (l->loss >= 0 && last[l->loss] < l->nfwd)
		last[l->loss] = l->nfwd;
	for (int v = 0; l->grad && v < l->nparams; v++)
		if (l->grad[v] >= 0)
			last[l->grad[v]] = nops;
	for (int k = 0; k < l->nret; k++)
		last[l->rets[k]] = nops + 1;
	p->view = xmalloc(sizeof(int) * (size_t)(nv ? nv : 1));
	plan_views(p, last, unbuffered);
	/* Each buffer's life: from its operator to its last reader. */
	int *def = xcalloc((size_t)(nv ? nv : 1), sizeof *def);   /* 0 for one only a shadow defines: from the start */
	int64_t scratch = 0;
	for (int i = 0; i < nops; i++) {
		const LOp *o = &l->ops[i];
		int64_t s = scratch_bytes(l, o);
		scratch = s > scratch ? s : scratch;
		if (!o->shadow)
			def[o->result] = i;
	}
	Buffer *buf = xmalloc(sizeof *buf * (size_t)(nv ? nv : 1));   /* the values with buffers of their own */
	int n = 0;
	for (int v = l->nparams; v < nv; v++) {
		p->offset[v] = -1;
		if (last[v] >= 0 && !unbuffered[v] && p->view[v] < 0)
			buf[n++] = (Buffer){aligned(value_bytes(&l->values[v])), 0, def[v], last[v], v};
	}
	int64_t transient = place_buffers(buf, n);
	for (int k = 0; k < n; k++)
		p->offset[buf[k].value] = buf[k].off;
	for (int v = l->nparams; v < nv; v++)
		if (p->view[v] >= 0)
			p->offset[v] = p->offset[p->view[v]];
	for (int v = 0; l->grad && v < l->nparams; v++)
		if (l->grad[v] >= 0) {
			int64_t s = update_scratch(l, v);
			scratch = s > scratch ? s : scratch;
		}
	if (l->loss >= 0 && dtype_is_half(l->values[l->loss].type.dtype))
		scratch = scratch > 4 ? scratch : 4;   /* the loss widened for printing */
	for (int v = l->nparams; v < nv; v++)
		if (p->offset[v] >= 0)
			p->offset[v] += p->persistent_bytes;
	p->scratch = p->persistent_bytes + transient;
	p->slab_bytes = p->scratch + aligned(scratch);
	free(last);
	free(unbuffered);
	free(def);
	free(buf);
}

/* ---- C identifiers: the IR names made C, unique ---- */

static const char *const reserved[] = {
	"auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum", "extern",
	"float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return", "short", "signed",
	"sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void", "volatile", "while", "main",
	"argc", "argv", "rt", "slab", "step", "steps", "out_dir", "file", "t0", "t1", "NULL", "int64_t", "int32_t",
	"uint8_t", "printf", "input_names", "param_names", "T", "sc_ranks",
};

typedef struct {
	const char *name;
	int value;
} NameSlot;

static int slot_cmp(const void *a, const void *b)
{
	const NameSlot *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	return c ? c : (x->value > y->value) - (x->value < y->value);
}

static void name_values(Program *p, Arena *arena)
{
	const Lowered *l = p->l;
	int nv = l->nvalues;
	NameSlot *s = xmalloc(sizeof *s * (size_t)(nv ? nv : 1));
	for (int v = 0; v < nv; v++) {
		const char *n = l->values[v].name;
		StrBuf b = {0};
		if (!((n[0] >= 'a' && n[0] <= 'z') || (n[0] >= 'A' && n[0] <= 'Z') || n[0] == '_'))
			sb_putc(&b, 'v');
		for (const char *c = n; *c; c++)
			sb_putc(&b, (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ? *c : '_');
		for (size_t r = 0; r < sizeof reserved / sizeof *reserved; r++)
			if (!strcmp(b.data, reserved[r]))
				sb_puts(&b, "_");
		s[v] = (NameSlot){arena_strdup(arena, b.data), v};
		sb_free(&b);
	}
	qsort(s, (size_t)nv, sizeof *s, slot_cmp);
	p->cname = arena_alloc(arena, sizeof(char *) * (size_t)(nv ? nv : 1));
	for (int i = 0, run = 0; i < nv; i++) {   /* a repeated name takes _2, _3 ... (the IR has no such names) */
		run = i > 0 && !strcmp(s[i].name, s[i - 1].name) ? run + 1 : 0;
		if (!run) {
			p->cname[s[i].value] = s[i].name;
			continue;
		}
		StrBuf b = {0};
		sb_printf(&b, "%s__%d", s[i].name, run + 1);
		p->cname[s[i].value] = arena_strdup(arena, b.data);
		sb_free(&b);
	}
	free(s);
}

/* ---- groups: one partition of the ranks per (device matrix, axes) ---- */


static void plan_groups(Program *p)
{
	const Lowered *l = p->l;
	p->partition = xmalloc(sizeof(int) * (size_t)(l->nops ? l->nops : 1));
	p->part = xmalloc(sizeof(int) * (size_t)(l->nops ? l->nops : 1));
	p->npart = 0;
	for (int i = 0; i < l->nops; i++) {
		const LOp *o = &l->ops[i];
		p->partition[i] = -1;
		if (!o->step || o->step->kind == STEP_SLICE)
			continue;
		int k = 0;
		while (k < p->npart && !redist_same_group(l->ops[p->part[k]].step, o->step))
			k++;
		if (k == p->npart)
			p->part[p->npart++] = i;
		p->partition[i] = k;
	}
}

/* The group of rank for a collective of partition op, as sc_group_split_grid
 * takes it: its first member, then for each run of neighbouring group axes
 * (of the matrix the ranks are numbered row-major over) its size and rank
 * stride; ng runs, n members. Only first depends on the rank. */
static int64_t group_grid(const LOp *op, int64_t rank, int64_t *size, int64_t *stride, int *ng, int64_t *n)
{
	const TensorLayout *m = &op->step->from;
	int64_t coords[MAX_AXES], step[MAX_AXES], first = rank;
	layout_coords(m, rank, coords);
	for (int a = m->ndev - 1; a >= 0; a--)
		step[a] = a == m->ndev - 1 ? 1 : step[a + 1] * m->dev[a + 1];
	*ng = 0;
	*n = 1;
	for (int a = 0; a < m->ndev; a++) {
		if (!(op->step->axes >> a & 1) || m->dev[a] == 1)
			continue;
		first -= coords[a] * step[a];
		*n *= m->dev[a];
		if (*ng && stride[*ng - 1] == step[a] * m->dev[a]) {
			size[*ng - 1] *= m->dev[a];
			stride[*ng - 1] = step[a];
		} else {
			size[*ng] = m->dev[a];
			stride[(*ng)++] = step[a];
		}
	}
	return first;
}

static int add_entry(Program *p, EntryKind kind, int at, int n)
{
	p->entry[p->nentry] = (Entry){kind, at, n, -1, NULL, p->nentry, 0};
	return p->nentry++;
}

static void entry_values(const Program *p, const Entry *e, int64_t rank, int64_t *out, int64_t *members);

static uint64_t hash_ints(const int64_t *v, int64_t n)
{
	uint64_t h = 0xcbf29ce484222325u;
	for (int64_t i = 0; i < n; i++)
		h = (h ^ (uint64_t)v[i]) * 0x100000001b3u;
	return h;
}

/* Each entry's numbers on every rank: the same on all of them, it is
 * written into program.c; else it takes a place in the table, shared with
 * the entries before it that have the same numbers on every rank (every
 * layer's weight of one shape starts at the same place on a rank). */
static void place_entries(Program *p)
{
	const Lowered *l = p->l;
	int64_t ranks = l->device_num, *members = xmalloc(sizeof(int64_t) * (size_t)ranks);
	int hcap = 1;
	while (hcap < 2 * p->nentry + 2)
		hcap *= 2;
	int *hash = xmalloc(sizeof(int) * (size_t)hcap);   /* entries with a place, by their numbers */
	for (int i = 0; i < hcap; i++)
		hash[i] = -1;
	int64_t **all = xmalloc(sizeof(int64_t *) * (size_t)(p->nentry ? p->nentry : 1));   /* (ranks, n) each */
	for (int i = 0; i < p->nentry; i++) {
		Entry *e = &p->entry[i];
		int64_t n = e->n, *v = xmalloc(sizeof(int64_t) * (size_t)(n * ranks + 1));
		all[i] = v;
		for (int64_t r = 0; r < ranks; r++)
			entry_values(p, e, r, v + r * n, members);
		bool same = true;
		for (int64_t r = 1; r < ranks && same; r++)
			same = !memcmp(v, v + r * n, sizeof(int64_t) * (size_t)n);
		if (same) {
			int64_t *lit = arena_alloc(l->arena, sizeof(int64_t) * (size_t)(n + 1));
			memcpy(lit, v, sizeof(int64_t) * (size_t)n);
			e->lit = lit;
			continue;
		}
		uint64_t h = hash_ints(v, n * ranks) ^ (uint64_t)n;
		int at = (int)(h & (uint64_t)(hcap - 1));
		while (hash[at] >= 0) {
			const Entry *o = &p->entry[hash[at]];
			if (o->n == n && !memcmp(all[hash[at]], v, sizeof(int64_t) * (size_t)(n * ranks)))
				break;
			at = (at + 1) & (hcap - 1);
		}
		if (hash[at] >= 0) {
			e->pos = p->entry[hash[at]].pos;
			e->first = hash[at];
			p->entry[hash[at]].nsame++;
			continue;
		}
		hash[at] = i;
		e->pos = p->tlen;
		p->tlen += n;
	}
	p->tab = xmalloc(sizeof(int64_t) * (size_t)(p->tlen * ranks + 1));
	for (int i = 0; i < p->nentry; i++) {
		const Entry *e = &p->entry[i];
		if (e->pos < 0 || e->first != i)
			continue;
		for (int64_t r = 0; r < ranks; r++)
			memcpy(p->tab + r * p->tlen + e->pos, all[i] + r * e->n, sizeof(int64_t) * (size_t)e->n);
	}
	for (int i = 0; i < p->nentry; i++)
		free(all[i]);
	free(all);
	free(hash);
	free(members);
}

/* A gradient piece of the global norm that rank holds the first copy of. */
static bool first_copy(const LValue *g, int64_t rank)
{
	int64_t coords[MAX_AXES];
	layout_coords(&g->layout, rank, coords);
	uint32_t copies = layout_replica_axes(&g->layout);
	bool first = true;
	for (int ax = 0; ax < g->layout.ndev; ax++)
		first &= !(copies & (1u << ax)) || coords[ax] == 0;
	return first;
}

/* Device matrices in order of their axes, then their sizes: the tables do
 * not depend on which operator's layout names a matrix first. */
static int matrix_cmp(const TensorLayout *a, const TensorLayout *b)
{
	if (a->ndev != b->ndev)
		return a->ndev < b->ndev ? -1 : 1;
	for (int k = 0; k < a->ndev; k++)
		if (a->dev[k] != b->dev[k])
			return a->dev[k] < b->dev[k] ? -1 : 1;
	return 0;
}

static void add_matrix(Program *p, const TensorLayout *t)
{
	int j = 0;
	while (j < p->nmat && matrix_cmp(p->mat[j], t) < 0)
		j++;
	if (j < p->nmat && !matrix_cmp(p->mat[j], t))
		return;
	if (!(p->nmat & (p->nmat - 1)))
		p->mat = xrealloc(p->mat, sizeof *p->mat * (size_t)(p->nmat ? 2 * p->nmat : 1));
	memmove(&p->mat[j + 1], &p->mat[j], sizeof *p->mat * (size_t)(p->nmat - j));
	p->mat[j] = t;
	p->nmat++;
}

/* The table's entries in the order program.c first reads them: the groups,
 * the inputs' and parameters' pieces, the operators', the results' pieces. */
static void plan_table(Program *p)
{
	const Lowered *l = p->l;
	int nv = l->nvalues, nops = l->nops;
	p->entry = xmalloc(sizeof(Entry) * (size_t)(p->npart + nv + nops + 1));
	p->value_entry = xmalloc(sizeof(int) * (size_t)(nv ? nv : 1));
	p->op_entry = xmalloc(sizeof(int) * (size_t)(nops ? nops : 1));
	p->part_entry = xmalloc(sizeof(int) * (size_t)(p->npart ? p->npart : 1));
	p->nentry = 0;
	p->tlen = 0;
	for (int v = 0; v < nv; v++)
		p->value_entry[v] = -1;
	for (int k = 0; k < p->npart; k++)
		p->part_entry[k] = add_entry(p, E_GROUP, k, 1);
	for (int v = 0; v < l->nparams; v++)
		if (l->values[v].type.rank)
			p->value_entry[v] = add_entry(p, E_PIECE, v, l->values[v].type.rank);
	for (int i = 0; i < nops; i++) {
		const LOp *o = &l->ops[i];
		p->op_entry[i] = -1;
		if (o->grad == GRAD_NONE && o->step && o->step->kind == STEP_SLICE)
			p->op_entry[i] = add_entry(p, E_SLICE, i, 2 * l->values[o->in[0]].type.rank);
		else if (o->grad == GRAD_NONE && o->table && (o->a.present & (1u << ATTR_OFFSET)))
			p->op_entry[i] = add_entry(p, E_OFFSET, i, 1);
		else if (o->grad == GRAD_SQNORM)
			p->op_entry[i] = add_entry(p, E_SQNORM, i, o->nin);
	}
	for (int k = 0; k < l->nret; k++) {
		int v = l->rets[k];
		if (p->value_entry[v] < 0 && l->values[v].type.rank)
			p->value_entry[v] = add_entry(p, E_PIECE, v, l->values[v].type.rank);
	}
	place_entries(p);
	p->mat = NULL;
	p->nmat = 0;
	for (int i = 0; i < p->nentry; i++) {
		const Entry *e = &p->entry[i];
		if (e->pos < 0 || e->first != i)
			continue;
		const LOp *o = e->kind == E_GROUP ? &l->ops[p->part[e->at]] : e->kind == E_PIECE ? NULL : &l->ops[e->at];
		switch (e->kind) {
		case E_GROUP: add_matrix(p, &o->step->from); break;
		case E_PIECE: add_matrix(p, &l->values[e->at].layout); break;
		case E_SLICE: add_matrix(p, &o->step->to); break;
		case E_OFFSET: add_matrix(p, o->table); break;
		case E_SQNORM:
			for (int k = 0; k < o->nin; k++)
				add_matrix(p, &l->values[o->in[k]].layout);
			break;
		}
	}
}

/* Entry e's numbers on rank. */
static void entry_values(const Program *p, const Entry *e, int64_t rank, int64_t *out, int64_t *members)
{
	const Lowered *l = p->l;
	Attrs a;
	switch (e->kind) {
	case E_GROUP: {
		const LOp *op = &l->ops[p->part[e->at]];
		int64_t size[MAX_AXES], stride[MAX_AXES], n;
		int ng;
		out[0] = group_grid(op, rank, size, stride, &ng, &n);
		lowered_rank_attrs(l, op, rank, &a, members);
		for (int i = 0; i < a.ngroup; i++) {   /* the grid names the members lowering put in the group */
			int64_t r = out[0], rest = i;
			for (int j = ng - 1; j >= 0; j--) {
				r += rest % size[j] * stride[j];
				rest /= size[j];
			}
			if (a.ngroup != n || r != a.group[i])
				die("group grid of rank %lld disagrees with its members", (long long)rank);
		}
		return;
	}
	case E_PIECE:
		lowered_piece_start(&l->values[e->at], rank, out);
		return;
	case E_SLICE:
		lowered_rank_attrs(l, &l->ops[e->at], rank, &a, members);
		for (int d = 0; d < e->n / 2; d++) {
			out[d] = a.begin[d];
			out[e->n / 2 + d] = a.end[d];
		}
		return;
	case E_OFFSET:
		lowered_rank_attrs(l, &l->ops[e->at], rank, &a, members);
		out[0] = a.offset;
		return;
	case E_SQNORM: {
		const LOp *o = &l->ops[e->at];
		for (int k = 0; k < o->nin; k++)
			out[k] = first_copy(&l->values[o->in[k]], rank) ? numel(&l->values[o->in[k]]) : 0;
		return;
	}
	}
}

Program *emit_plan(const Lowered *l, const char *model)
{
	Program *p = arena_alloc(l->arena, sizeof *p);
	p->l = l;
	StrBuf c = {0};
	sb_c_comment(&c, model);
	p->model = arena_strndup(l->arena, c.data ? c.data : "", c.len);
	sb_free(&c);
	plan_buffers(p);
	name_values(p, l->arena);
	p->arg = arena_alloc(l->arena, sizeof(char *) * (size_t)(l->nvalues ? l->nvalues : 1));
	memcpy(p->arg, p->cname, sizeof(char *) * (size_t)l->nvalues);
	plan_groups(p);
	plan_table(p);
	return p;
}

void emit_free(Program *p)
{
	free(p->offset);
	free(p->view);
	free(p->state);
	free(p->partition);
	free(p->part);
	free(p->entry);
	free(p->value_entry);
	free(p->op_entry);
	free(p->part_entry);
	free(p->mat);
	free(p->tab);
}

int64_t emit_slab_bytes(const Program *p)
{
	return p->slab_bytes;
}

int64_t emit_offset(const Program *p, int value)
{
	return p->offset[value];
}

int emit_view_of(const Program *p, int value)
{
	return p->view[value];
}

/* ---- text helpers ---- */

static void dims_lit(StrBuf *b, const int64_t *dims, int rank)
{
	sb_puts(b, "(const int64_t[]){");
	for (int d = 0; d < rank; d++)
		sb_printf(b, d ? ", %lld" : "%lld", (long long)dims[d]);
	sb_puts(b, rank ? "}" : "1}");
}

static void ints_lit(StrBuf *b, const int64_t *v, int n)
{
	sb_puts(b, "(const int[]){");
	for (int d = 0; d < n; d++)
		sb_printf(b, d ? ", %lld" : "%lld", (long long)v[d]);
	sb_puts(b, n ? "}" : "0}");
}

static const char *sc_dtype_name(DType t)
{
	switch (t) {
	case DT_I32: return "SC_I32";
	case DT_I64: return "SC_I64";
	case DT_BOOL: return "SC_BOOL";
	case DT_F16: return "SC_F16";
	case DT_BF16: return "SC_BF16";
	default: return "SC_F32";
	}
}

static const char *c_type(DType t)
{
	switch (t) {
	case DT_I32: return "int32_t";
	case DT_I64: return "int64_t";
	case DT_BOOL: return "uint8_t";
	case DT_F16: case DT_BF16: return "uint16_t";   /* the bits; the runtime converts */
	default: return "float";
	}
}

/* `<name>, <dims>, <rank>` of a value: how most kernels take a tensor. */
static void tensor_arg(StrBuf *b, const Program *p, int v)
{
	const LValue *x = &p->l->values[v];
	sb_printf(b, "%s, ", p->cname[v]);
	dims_lit(b, x->type.dims, x->type.rank);
	sb_printf(b, ", %d", x->type.rank);
}

/* y = a op b, numpy broadcasting: values a, b and y. */
static void emit_binary(StrBuf *b, const Program *p, const char *op, int a, int bb, int y)
{
	sb_printf(b, "sc_binary(rt, %s, ", op);
	tensor_arg(b, p, a);
	sb_puts(b, ", ");
	tensor_arg(b, p, bb);
	sb_puts(b, ", ");
	tensor_arg(b, p, y);
	sb_puts(b, ");");
}

static const char *redop_name(ReduceOp op)
{
	return op == REDUCE_MAX_OP ? "SC_MAX" : op == REDUCE_MEAN_OP ? "SC_MEAN" : "SC_SUM";
}

/* Reduced axes, non-negative; all of them when none are named. */
static int reduce_axes(const Attrs *a, int rank, int64_t *axes)
{
	if (!a->has_axis || a->naxes == 0) {
		for (int d = 0; d < rank; d++)
			axes[d] = d;
		return rank;
	}
	for (int k = 0; k < a->naxes; k++)
		axes[k] = a->axes[k] < 0 ? a->axes[k] + rank : a->axes[k];
	return a->naxes;
}

static int64_t norm_axis(int64_t axis, int rank)
{
	return axis < 0 ? axis + rank : axis;
}

/* Numbers [k, k + n) of entry e: `T + pos` (array) or `T[pos]`, or the
 * numbers themselves where every rank has the same. */
static void entry_ref(StrBuf *b, const Entry *e, int k, int n, bool array)
{
	if (e->pos >= 0)
		sb_printf(b, array ? "T + %lld" : "T[%lld]", (long long)(e->pos + k));
	else if (array)
		dims_lit(b, e->lit + k, n);
	else
		sb_printf(b, "%lld", (long long)e->lit[k]);
}

/* The table entry of operator o, or NULL. */
static const Entry *op_table(const Program *p, const LOp *o)
{
	int e = p->op_entry[o - p->l->ops];
	return e >= 0 ? &p->entry[e] : NULL;
}

/* StridedSlice's begin, end and strides for every dim (missing ones: whole);
 * a slice redistribution's bounds are the rank's, from the table. */
static void slice_args(StrBuf *b, const Program *p, const LOp *o, const Attrs *a, const LValue *x)
{
	int64_t begin[MAX_DIMS], end[MAX_DIMS], strides[MAX_DIMS];
	const Entry *e = op_table(p, o);
	if (e && e->kind == E_SLICE) {
		for (int d = 0; d < x->type.rank; d++)
			strides[d] = 1;
		entry_ref(b, e, 0, x->type.rank, true);
		sb_puts(b, ", ");
		entry_ref(b, e, x->type.rank, x->type.rank, true);
		sb_puts(b, ", ");
		dims_lit(b, strides, x->type.rank);
		return;
	}
	for (int d = 0; d < x->type.rank; d++) {
		begin[d] = d < a->nbegin ? a->begin[d] : 0;
		end[d] = d < a->nend ? a->end[d] : x->type.dims[d];
		strides[d] = d < a->nstrides ? a->strides[d] : 1;
	}
	dims_lit(b, begin, x->type.rank);
	sb_puts(b, ", ");
	dims_lit(b, end, x->type.rank);
	sb_puts(b, ", ");
	dims_lit(b, strides, x->type.rank);
}

/* ---- one operator ---- */

/* Gather's offset (a split table's first row) and a class-split cross
 * entropy's (its first class) are the rank's, from the table. */
static void offset_arg(char *buf, size_t size, const Program *p, const LOp *o, const Attrs *a)
{
	const Entry *e = op_table(p, o);
	if (e && e->kind == E_OFFSET && e->pos >= 0)
		snprintf(buf, size, "T[%lld]", (long long)e->pos);
	else if (e && e->kind == E_OFFSET)
		snprintf(buf, size, "%lld", (long long)e->lit[0]);
	else
		snprintf(buf, size, "%lld", (long long)((a->present & (1u << ATTR_OFFSET)) ? a->offset : 0));
}

static void emit_collective(StrBuf *b, const Program *p, const LOp *o, int i)
{
	const Lowered *l = p->l;
	const LValue *x = &l->values[o->in[0]];
	const char *in = p->cname[o->in[0]], *out = p->cname[o->result], *dt = sc_dtype_name(x->type.dtype);
	int g = p->partition[i];
	switch (o->step->kind) {
	case STEP_ALL_REDUCE:
		if (o->bucket < 0) {
			sb_puts(b, "/* in the bucket above */");
		} else if (o->bucket > 0) {   /* o and the members after it, one call */
			StrBuf ins = {0}, outs = {0}, counts = {0};
			for (int j = 0; j < o->bucket; j++) {
				const LOp *m = o + j;
				sb_printf(&ins, j ? ", %s" : "%s", p->cname[m->in[0]]);
				sb_printf(&outs, j ? ", %s" : "%s", p->cname[m->result]);
				sb_printf(&counts, j ? ", %lld" : "%lld", (long long)numel(&l->values[m->in[0]]));
			}
			sb_printf(b, "sc_all_reduce_bucket(rt, g%d, %d, (const void *const[]){%s}, (void *const[]){%s}, "
			          "(const int64_t[]){%s}, %s, %s, slab + %lld);", g, o->bucket, ins.data, outs.data, counts.data,
			          dt, redop_name(o->step->op), (long long)p->scratch);
			sb_free(&ins);
			sb_free(&outs);
			sb_free(&counts);
		} else {
			sb_printf(b, "sc_all_reduce(rt, g%d, %s, %s, %s, %lld, %s);", g, in, out, dt, (long long)numel(x),
			          redop_name(o->step->op));
		}
		break;
	case STEP_ALL_GATHER:
		sb_printf(b, "sc_all_gather(rt, g%d, %s, %s, %s, ", g, in, out, dt);
		dims_lit(b, x->type.dims, x->type.rank);
		sb_printf(b, ", %d, %d);", x->type.rank, o->step->dim);
		break;
	case STEP_REDUCE_SCATTER:
		sb_printf(b, "sc_reduce_scatter(rt, g%d, %s, %s, %s, ", g, in, out, dt);
		dims_lit(b, x->type.dims, x->type.rank);
		sb_printf(b, ", %d, %d, %s);", x->type.rank, o->step->dim, redop_name(o->step->op));
		break;
	case STEP_ALL_TO_ALL:
		sb_printf(b, "sc_all_to_all(rt, g%d, %s, %s, %s, ", g, in, out, dt);
		dims_lit(b, x->type.dims, x->type.rank);
		sb_printf(b, ", %d, %d, %d);", x->type.rank, o->step->dim2, o->step->dim);
		break;
	case STEP_SLICE:
		break;
	}
}

static void emit_matmul_dims(const LOp *f, const Lowered *l, int64_t *m, int64_t *n, int64_t *k)
{
	const LValue *a = &l->values[f->in[0]], *y = &l->values[f->result];
	int ra = a->type.rank, ry = y->type.rank;
	*m = y->type.dims[ry - 2];
	*n = y->type.dims[ry - 1];
	*k = f->a.transpose_a ? a->type.dims[ra - 2] : a->type.dims[ra - 1];
}

/* `sc_matmul(rt, ` or, on half operands, `sc_matmul_half(rt, SC_BF16, `;
 * sc_batch_matmul likewise. */
static void matmul_call(StrBuf *b, const Lowered *l, const LOp *o, bool batch)
{
	const char *f = batch ? "sc_batch_matmul" : "sc_matmul";
	if (matmul_on_halves(l, o))
		sb_printf(b, "%s_half(rt, %s, ", f, sc_dtype_name(l->values[o->in[0]].type.dtype));
	else
		sb_printf(b, "%s(rt, ", f);
}

/* A BatchMatMul of which one value is laid out by a folded Transpose
 * (fuse.c): every operand by its strides, batch dims aligned to the
 * result's (y, nb of them) from the right, 0 where one repeats. */
static bool bmm_is_strided(const Lowered *l, int a, int b, int c)
{
	return strided_by(l, a) || strided_by(l, b) || strided_by(l, c);
}

static void operand_strides(StrBuf *b, const Lowered *l, int v, int nb)
{
	const LValue *x = &l->values[v];
	int64_t st[MAX_DIMS], out[MAX_DIMS + 1];
	value_strides(l, v, st);
	int xb = x->type.rank - 2;
	for (int d = 0; d < nb; d++) {
		int dx = d - (nb - xb);
		out[d] = dx < 0 || x->type.dims[dx] == 1 ? 0 : st[dx];
	}
	out[nb] = st[xb];
	dims_lit(b, out, nb + 1);
}

static void strided_bmm_call(StrBuf *b, const Program *p, const LOp *o, const int v[3], const char *c,
                             const LValue *y, int64_t m, int64_t n, int64_t k, int ta, int tb)
{
	const Lowered *l = p->l;
	int nb = y->type.rank - 2;
	if (matmul_on_halves(l, o))   /* c: the Float32 copy of the half result */
		sb_printf(b, "sc_batch_matmul_half_strided(rt, %s, %s, ", sc_dtype_name(l->values[v[0]].type.dtype),
		          p->cname[v[0]]);
	else
		sb_printf(b, "sc_batch_matmul_strided(rt, %s, ", p->cname[v[0]]);
	operand_strides(b, l, v[0], nb);
	sb_printf(b, ", %s, ", p->cname[v[1]]);
	operand_strides(b, l, v[1], nb);
	sb_printf(b, ", %s, ", c);
	operand_strides(b, l, v[2], nb);
	sb_puts(b, ", ");
	dims_lit(b, y->type.dims, nb);
	sb_printf(b, ", %d, %lld, %lld, %lld, %d, %d);", nb, (long long)m, (long long)n, (long long)k, ta, tb);
}

static void emit_forward(StrBuf *b, const Program *p, const LOp *o, const Attrs *a)
{
	const Lowered *l = p->l;
	const char *y = p->cname[o->result];
	const LValue *yv = &l->values[o->result], *x = &l->values[o->in[0]];
	const char *x0 = p->cname[o->in[0]], *x1 = o->nin > 1 ? p->cname[o->in[1]] : NULL;
	int64_t m, n, k, axes[MAX_DIMS];
	switch (o->op) {
	OP_CASES(UNARY_OPS)
		if (o->fuse_from >= 0) {   /* BiasAdd then the operator: one pass (fuse.c) */
			const LOp *bias = &l->ops[o->fuse_from];
			const LValue *bx = &l->values[bias->in[0]];
			int64_t c = bx->type.rank ? bx->type.dims[bx->type.rank - 1] : 1;
			sb_printf(b, "sc_bias_unary(rt, %s, %s, %s, %s, %s, %lld, %lld);", op_info[o->op].kernel,
			          p->cname[bias->in[0]], p->cname[bias->in[1]], bias->fused_writes ? x0 : "NULL", y,
			          (long long)(numel(bx) / c), (long long)c);
		} else
			sb_printf(b, "sc_unary(rt, %s, %s, %s, %lld);", op_info[o->op].kernel, x0, y, (long long)numel(yv));
		break;
	case OP_MATMUL:
		emit_matmul_dims(o, l, &m, &n, &k);
		matmul_call(b, l, o, false);
		sb_printf(b, "%s, %s, %s, %lld, %lld, %lld, %d, %d);", x0, x1, y, (long long)m, (long long)n, (long long)k,
		          a->transpose_a, a->transpose_b);
		break;
	case OP_BATCH_MATMUL: {
		emit_matmul_dims(o, l, &m, &n, &k);
		if (bmm_is_strided(l, o->in[0], o->in[1], o->result)) {
			strided_bmm_call(b, p, o, (const int[]){o->in[0], o->in[1], o->result}, y, yv, m, n, k, a->transpose_a,
			                 a->transpose_b);
			break;
		}
		const LValue *bv = &l->values[o->in[1]];
		matmul_call(b, l, o, true);
		sb_printf(b, "%s, ", x0);
		dims_lit(b, x->type.dims, x->type.rank - 2);
		sb_printf(b, ", %d, %s, ", x->type.rank - 2, x1);
		dims_lit(b, bv->type.dims, bv->type.rank - 2);
		sb_printf(b, ", %d, %s, ", bv->type.rank - 2, y);
		dims_lit(b, yv->type.dims, yv->type.rank - 2);
		sb_printf(b, ", %d, %lld, %lld, %lld, %d, %d);", yv->type.rank - 2, (long long)m, (long long)n, (long long)k,
		          a->transpose_a, a->transpose_b);
		break;
	}
	OP_CASES(BINARY_OPS)
		if (o->fuse_from >= 0) {   /* BiasAdd then this Add: one pass (fuse.c) */
			const LOp *bias = &l->ops[o->fuse_from];
			const LValue *bx = &l->values[bias->in[0]];
			int64_t c = bx->type.rank ? bx->type.dims[bx->type.rank - 1] : 1;
			int other = o->in[0] == bias->result ? o->in[1] : o->in[0];
			sb_printf(b, "sc_bias_add_residual(rt, %s, %s, %s, %s, %s, %lld, %lld);", p->cname[bias->in[0]],
			          p->cname[bias->in[1]], bias->fused_writes ? p->cname[bias->result] : "NULL", p->cname[other], y,
			          (long long)(numel(bx) / c), (long long)c);
		} else
			emit_binary(b, p, op_info[o->op].kernel, o->in[0], o->in[1], o->result);
		break;
	case OP_BIAS_ADD: {
		int64_t c = x->type.rank ? x->type.dims[x->type.rank - 1] : 1;
		sb_printf(b, "sc_bias_add(rt, %s, %s, %s, %lld, %lld);", x0, x1, y, (long long)(numel(x) / c), (long long)c);
		break;
	}
	case OP_SOFTMAX: case OP_LOG_SOFTMAX:
		if (fused_mask_operand(l, o) >= 0) {   /* softmax([x * scale] + mask): the Add's, the Mul's operands */
			const LOp *add = &l->ops[o->fuse_from], *mul = add->fuse_from >= 0 ? &l->ops[add->fuse_from] : NULL;
			int mk = fused_mask_operand(l, o), s = fused_scale_operand(l, o);
			const LValue *mv = &l->values[add->in[mk]];
			sb_printf(b, "sc_softmax_masked(rt, %s, %s, %s, ", p->cname[mul ? mul->in[1 - s] : add->in[1 - mk]],
			          mul ? p->cname[mul->in[s]] : "NULL", p->cname[add->in[mk]]);
			dims_lit(b, mv->type.dims, mv->type.rank);
			sb_printf(b, ", %d, %s, ", mv->type.rank, y);
			dims_lit(b, x->type.dims, x->type.rank);
			sb_printf(b, ", %d);", x->type.rank);
			break;
		}
		if (o->fuse_from >= 0) {   /* softmax(x * scale): the Mul's operands (fuse.c) */
			const LOp *mul = &l->ops[o->fuse_from];
			int s = fused_scale_operand(l, o);
			sb_printf(b, "sc_softmax_scaled(rt, %s, %s, %s, ", p->cname[mul->in[1 - s]], p->cname[mul->in[s]], y);
		} else
			sb_printf(b, "sc_%s(rt, %s, %s, ", o->op == OP_SOFTMAX ? "softmax" : "log_softmax", x0, y);
		dims_lit(b, x->type.dims, x->type.rank);
		sb_printf(b, ", %d, %lld);", x->type.rank, (long long)(a->has_axis && a->naxes ? a->axes[0] : -1));
		break;
	case OP_REDUCE_SUM: case OP_REDUCE_MEAN: case OP_REDUCE_MAX: {
		int na = reduce_axes(a, x->type.rank, axes);
		sb_printf(b, "sc_reduce_%s(rt, %s, %s, ", o->op == OP_REDUCE_SUM ? "sum" : o->op == OP_REDUCE_MEAN ? "mean" : "max",
		          x0, y);
		dims_lit(b, x->type.dims, x->type.rank);
		sb_printf(b, ", %d, ", x->type.rank);
		ints_lit(b, axes, na);
		sb_printf(b, ", %d);", na);
		break;
	}
	case OP_RESHAPE: case OP_FLATTEN:
		sb_printf(b, "sc_copy(rt, %s, %s, %lld);", y, x0, (long long)value_bytes(yv));
		break;
	case OP_TRANSPOSE:
		sb_printf(b, "sc_transpose(rt, %s, %s, %s, ", sc_dtype_name(x->type.dtype), x0, y);
		dims_lit(b, x->type.dims, x->type.rank);
		sb_printf(b, ", %d, ", x->type.rank);
		ints_lit(b, a->perm, a->nperm);
		sb_puts(b, ");");
		break;
	case OP_GATHER: {
		const LValue *idx = &l->values[o->in[1]];
		int64_t rows = x->type.dims[0];
		char off[32];
		offset_arg(off, sizeof off, p, o, a);
		sb_printf(b, "sc_gather(rt, %s, %lld, %lld, %s, %s, %lld, %s, %s);", x0, (long long)rows,
		          (long long)(numel(x) / rows), x1, sc_dtype_name(idx->type.dtype), (long long)numel(idx), off, y);
		break;
	}
	case OP_LAYER_NORM:
		if (o->nin == 5) {   /* a slice of the normalized dims (lower.c) */
			int64_t rows = 1, nd = norm_axis(a->begin_norm_axis, x->type.rank);
			for (int d = 0; d < nd; d++)
				rows *= x->type.dims[d];
			sb_printf(b, "sc_layer_norm_part(rt, %s, %s, %s, %s, %s, %s, %lld, %lld, %.17g);", x0, x1, p->cname[o->in[2]],
			          p->cname[o->in[3]], p->cname[o->in[4]], y, (long long)rows, (long long)(numel(x) / rows),
			          a->epsilon);
			break;
		}
		sb_printf(b, "sc_layer_norm(rt, %s, %s, %s, %s, ", x0, x1, p->cname[o->in[2]], y);
		dims_lit(b, x->type.dims, x->type.rank);
		sb_printf(b, ", %d, %lld, %lld, %.17g);", x->type.rank, (long long)a->begin_norm_axis,
		          (long long)a->begin_params_axis, a->epsilon);
		break;
	case OP_CONCAT: {
		int axis = (int)norm_axis(a->has_axis && a->naxes ? a->axes[0] : 0, yv->type.rank);
		sb_printf(b, "sc_concat(rt, %s, (const void *const[]){", sc_dtype_name(yv->type.dtype));
		for (int j = 0; j < o->nin; j++)
			sb_printf(b, j ? ", %s" : "%s", p->cname[o->in[j]]);
		sb_puts(b, "}, (const int64_t[]){");
		for (int j = 0; j < o->nin; j++)
			sb_printf(b, j ? ", %lld" : "%lld", (long long)l->values[o->in[j]].type.dims[axis]);
		sb_printf(b, "}, %d, %s, ", o->nin, y);
		dims_lit(b, yv->type.dims, yv->type.rank);
		sb_printf(b, ", %d, %d);", yv->type.rank, axis);
		break;
	}
	case OP_CAST:
		sb_printf(b, "sc_cast(rt, %s, %s, %s, %s, %lld);", x0, sc_dtype_name(x->type.dtype), y,
		          sc_dtype_name(yv->type.dtype), (long long)numel(x));
		break;
	case OP_STRIDED_SLICE:
		sb_printf(b, "sc_strided_slice(rt, %s, %s, %s, ", sc_dtype_name(x->type.dtype), x0, y);
		dims_lit(b, x->type.dims, x->type.rank);
		sb_printf(b, ", %d, ", x->type.rank);
		slice_args(b, p, o, a, x);
		sb_puts(b, ");");
		break;
	case OP_SPARSE_SOFTMAX_CE:
		if (o->nin == 4) {   /* a class slice's piece (lower.c); its first class from the table */
			char off[32];
			offset_arg(off, sizeof off, p, o, a);
			sb_printf(b, "sc_sparse_softmax_ce_part(rt, %s, %s, %s, %s, %s, %s, %lld, %lld, %s);", x0, x1,
			          sc_dtype_name(l->values[o->in[1]].type.dtype), p->cname[o->in[2]], p->cname[o->in[3]], y,
			          (long long)x->type.dims[0], (long long)x->type.dims[1], off);
		} else
			sb_printf(b, "sc_sparse_softmax_ce(rt, %s, %s, %s, %s, %lld, %lld);", x0, x1,
			          sc_dtype_name(l->values[o->in[1]].type.dtype), y, (long long)x->type.dims[0],
			          (long long)x->type.dims[1]);
		break;
	case OP_MSE_LOSS: case OP_L1_LOSS:
		sb_printf(b, "sc_%s_loss(rt, %s, %s, %s, %lld);", o->op == OP_MSE_LOSS ? "mse" : "l1", x0, x1, y,
		          (long long)numel(x));
		break;
	case OP_ALL_REDUCE: case OP_ALL_GATHER: case OP_REDUCE_SCATTER: case OP_ALL_TO_ALL:
		/* a collective written in a one-device model: a group of one */
		sb_printf(b, "sc_copy(rt, %s, %s, %lld);", y, x0, (long long)value_bytes(yv));
		break;
	case OP_CALL: case OP_COUNT:   /* inlined by flatten; rejected by check_names */
		die("no %s operator is left to emit", o->op == OP_CALL ? "Call" : "unknown");
	}
}

/* A MatMul gradient as one more product: y = op(a) op(b) is (m, n) over k;
 * da = dy op(b)^T, or its transpose op(b) dy^T when transpose_a; db =
 * op(a)^T dy, or dy^T op(a) when transpose_b. The product of the other
 * operand and dy, in the order dy_first says, with its own dims and flags. */
typedef struct {
	bool dy_first;
	int64_t m, n, k;
	int ta, tb;
} MatmulGrad;

static void matmul_grad_form(const Attrs *fa, int input, int64_t m, int64_t n, int64_t k, MatmulGrad *g)
{
	if (input == 0 && !fa->transpose_a)
		*g = (MatmulGrad){true, m, k, n, 0, !fa->transpose_b};
	else if (input == 0)
		*g = (MatmulGrad){false, k, m, n, fa->transpose_b, 1};
	else if (!fa->transpose_b)
		*g = (MatmulGrad){false, k, n, m, !fa->transpose_a, 0};
	else
		*g = (MatmulGrad){true, n, k, m, 1, fa->transpose_a};
}

/* The gradient of input o->k of forward operator f, from dy. */
static void emit_adjoint(StrBuf *b, const Program *p, const LOp *o, const Attrs *fa, int64_t scratch_off)
{
	const Lowered *l = p->l;
	const LOp *f = &l->ops[o->of];
	int k = o->k;
	const char *dy = p->cname[o->in[0]], *dx = p->cname[o->result];
	const LValue *x = &l->values[f->in[0]], *y = &l->values[f->result], *dxv = &l->values[o->result];
	const char *x0 = p->cname[f->in[0]], *x1 = f->nin > 1 ? p->cname[f->in[1]] : NULL, *yn = p->cname[f->result];
	int64_t n = numel(dxv), m, nn, kk, axes[MAX_DIMS];
	/* A two-input operator's other operand (MatMul's); LayerNorm's and
	 * Concat's inputs past the second have none. */
	const char *other_in = f->nin == 2 ? p->cname[f->in[1 - k]] : NULL;
	MatmulGrad mg;
	switch (f->op) {
	OP_CASES(UNARY_OPS) {   /* from the input, the output or dy alone, as its row says */
		GradReads r = op_info[f->op].grad;
		sb_printf(b, "sc_unary_grad(rt, %s, %s, %s, %s, %lld);", op_info[f->op].kernel,
		          r == GR_X ? x0 : r == GR_Y ? yn : "NULL", dy, dx, (long long)n);
		return;
	}
	case OP_MATMUL:
		emit_matmul_dims(f, l, &m, &nn, &kk);
		matmul_grad_form(fa, k, m, nn, kk, &mg);
		matmul_call(b, l, o, false);
		sb_printf(b, "%s, %s, %s, %lld, %lld, %lld, %d, %d);", mg.dy_first ? dy : other_in, mg.dy_first ? other_in : dy,
		          dx, (long long)mg.m, (long long)mg.n, (long long)mg.k, mg.ta, mg.tb);
		return;
	case OP_BATCH_MATMUL: {
		emit_matmul_dims(f, l, &m, &nn, &kk);
		matmul_grad_form(fa, k, m, nn, kk, &mg);
		int dy_v = o->in[0], other_v = f->in[1 - k];
		if (bmm_is_strided(l, dy_v, other_v, o->result)) {   /* direct (fuse.c) */
			int v[3] = {mg.dy_first ? dy_v : other_v, mg.dy_first ? other_v : dy_v, o->result};
			strided_bmm_call(b, p, o, v, dx, y, mg.m, mg.n, mg.k, mg.ta, mg.tb);
			return;
		}
		const LValue *in = &l->values[f->in[k]], *other = &l->values[f->in[1 - k]];
		int yb = y->type.rank - 2, ib = in->type.rank - 2, ob = other->type.rank - 2;
		bool direct = yb == ib && !memcmp(y->type.dims, in->type.dims, sizeof(int64_t) * (size_t)yb);
		StrBuf dst = {0};
		if (direct)
			sb_puts(&dst, dx);
		else   /* a broadcast input: its gradient is summed down to its shape */
			sb_printf(&dst, "(float *)(slab + %lld)", (long long)scratch_off);
		const char *p0 = mg.dy_first ? dy : other_in, *p1 = mg.dy_first ? other_in : dy;
		const LValue *v0 = mg.dy_first ? y : other, *v1 = mg.dy_first ? other : y;
		int64_t M = mg.m, N = mg.n, K = mg.k;
		int t0 = mg.ta, t1 = mg.tb;
		int n0 = v0 == y ? yb : ob, n1 = v1 == y ? yb : ob;
		matmul_call(b, l, o, true);
		sb_printf(b, "%s, ", p0);
		dims_lit(b, v0->type.dims, n0);
		sb_printf(b, ", %d, %s, ", n0, p1);
		dims_lit(b, v1->type.dims, n1);
		sb_printf(b, ", %d, %s, ", n1, dst.data);
		dims_lit(b, y->type.dims, yb);
		sb_printf(b, ", %d, %lld, %lld, %lld, %d, %d);", yb, (long long)M, (long long)N, (long long)K, t0, t1);
		if (!direct) {
			int64_t full[MAX_DIMS];
			memcpy(full, y->type.dims, sizeof(int64_t) * (size_t)yb);
			full[yb] = in->type.dims[ib];
			full[yb + 1] = in->type.dims[ib + 1];
			sb_printf(b, "\n\t\tsc_sum_to_shape(rt, %s, ", dst.data);
			dims_lit(b, full, yb + 2);
			sb_printf(b, ", %d, ", yb + 2);
			tensor_arg(b, p, o->result);
			sb_puts(b, ");");
		}
		sb_free(&dst);
		return;
	}
	OP_CASES(BINARY_OPS)
		sb_printf(b, "sc_binary_grad(rt, %s, ", op_info[f->op].kernel);
		tensor_arg(b, p, f->in[0]);
		sb_puts(b, ", ");
		tensor_arg(b, p, f->in[1]);
		sb_printf(b, ", %s, ", dy);
		dims_lit(b, y->type.dims, y->type.rank);
		sb_printf(b, ", %d, %s, %s);", y->type.rank, k == 0 ? dx : "NULL", k == 1 ? dx : "NULL");
		return;
	case OP_BIAS_ADD: {
		int64_t c = x->type.rank ? x->type.dims[x->type.rank - 1] : 1;
		if (k == 0)
			sb_printf(b, "sc_copy(rt, %s, %s, %lld);", dx, dy, (long long)value_bytes(dxv));
		else
			sb_printf(b, "sc_bias_add_grad(rt, %s, %s, %lld, %lld);", dy, dx, (long long)(numel(x) / c), (long long)c);
		return;
	}
	case OP_SOFTMAX: case OP_LOG_SOFTMAX:
		sb_printf(b, "sc_%s_grad(rt, %s, %s, %s, ", f->op == OP_SOFTMAX ? "softmax" : "log_softmax", yn, dy, dx);
		dims_lit(b, y->type.dims, y->type.rank);
		sb_printf(b, ", %d, %lld);", y->type.rank, (long long)(fa->has_axis && fa->naxes ? fa->axes[0] : -1));
		return;
	case OP_REDUCE_SUM: case OP_REDUCE_MEAN: {
		int na = reduce_axes(fa, x->type.rank, axes);
		int64_t kept[MAX_DIMS], count = 1;
		memcpy(kept, x->type.dims, sizeof kept);
		for (int j = 0; j < na; j++) {
			count *= kept[axes[j]];
			kept[axes[j]] = 1;
		}
		sb_printf(b, "sc_broadcast_to(rt, %s, ", dy);
		dims_lit(b, kept, x->type.rank);
		sb_printf(b, ", %d, ", x->type.rank);
		tensor_arg(b, p, o->result);
		sb_puts(b, ");");
		if (f->op == OP_REDUCE_MEAN)
			sb_printf(b, "\n\t\tsc_scale(rt, %s, %s, %lld, 1.0 / %lld);", dx, dx, (long long)n, (long long)count);
		return;
	}
	case OP_REDUCE_MAX: {   /* in[1]: the ties over every rank, when the reduced dims are split */
		int na = reduce_axes(fa, x->type.rank, axes);
		sb_printf(b, "sc_reduce_max_grad(rt, %s, %s, %s, %s, %s, ", x0, yn, dy, o->nin > 1 ? p->cname[o->in[1]] : "NULL",
		          dx);
		dims_lit(b, x->type.dims, x->type.rank);
		sb_printf(b, ", %d, ", x->type.rank);
		ints_lit(b, axes, na);
		sb_printf(b, ", %d);", na);
		return;
	}
	case OP_TRANSPOSE: {
		int64_t inv[MAX_DIMS];
		for (int d = 0; d < fa->nperm; d++)
			inv[fa->perm[d]] = d;
		sb_printf(b, "sc_transpose(rt, %s, %s, %s, ", sc_dtype_name(dxv->type.dtype), dy, dx);
		dims_lit(b, y->type.dims, y->type.rank);
		sb_printf(b, ", %d, ", y->type.rank);
		ints_lit(b, inv, fa->nperm);
		sb_puts(b, ");");
		return;
	}
	case OP_GATHER: {
		const LValue *idx = &l->values[f->in[1]];
		int64_t rows = x->type.dims[0];
		char off[32];
		offset_arg(off, sizeof off, p, f, fa);
		sb_printf(b, "sc_gather_grad(rt, %s, %s, %s, %lld, %s, %s, %lld, %lld);", dy, x1,
		          sc_dtype_name(idx->type.dtype), (long long)numel(idx), off, dx, (long long)rows,
		          (long long)(numel(x) / rows));
		return;
	}
	case OP_LAYER_NORM: {
		/* this gradient, and those of the other inputs fused into this call (fuse.c) */
		const char *g[5] = {"NULL", "NULL", "NULL", "NULL", "NULL"};
		g[k] = dx;
		int at[4], nat = fused_gradients(l, (int)(o - l->ops), at);
		for (int j = 0; j < nat; j++)
			g[l->ops[at[j]].k] = p->cname[l->ops[at[j]].result];
		if (f->nin == 5) {
			int64_t rows = 1, nd = norm_axis(fa->begin_norm_axis, x->type.rank);
			for (int d = 0; d < nd; d++)
				rows *= x->type.dims[d];
			sb_printf(b, "sc_layer_norm_part_grad(rt, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %lld, %lld, %.17g);", dy, x0,
			          x1, p->cname[f->in[3]], p->cname[f->in[4]], g[0], g[1], g[2], g[3], g[4], (long long)rows,
			          (long long)(numel(x) / rows), fa->epsilon);
			return;
		}
		sb_printf(b, "sc_layer_norm_grad(rt, %s, %s, %s, %s, %s, %s, ", dy, x0, x1, g[0], g[1], g[2]);
		dims_lit(b, x->type.dims, x->type.rank);
		sb_printf(b, ", %d, %lld, %lld, %.17g);", x->type.rank, (long long)fa->begin_norm_axis,
		          (long long)fa->begin_params_axis, fa->epsilon);
		return;
	}
	case OP_CONCAT: {
		int axis = (int)norm_axis(fa->has_axis && fa->naxes ? fa->axes[0] : 0, y->type.rank);
		int64_t begin[MAX_DIMS] = {0}, end[MAX_DIMS], strides[MAX_DIMS];
		for (int d = 0; d < y->type.rank; d++)
			end[d] = y->type.dims[d], strides[d] = 1;
		for (int j = 0; j < k; j++)
			begin[axis] += l->values[f->in[j]].type.dims[axis];
		end[axis] = begin[axis] + l->values[f->in[k]].type.dims[axis];
		sb_printf(b, "sc_strided_slice(rt, %s, %s, %s, ", sc_dtype_name(dxv->type.dtype), dy, dx);
		dims_lit(b, y->type.dims, y->type.rank);
		sb_printf(b, ", %d, ", y->type.rank);
		dims_lit(b, begin, y->type.rank);
		sb_puts(b, ", ");
		dims_lit(b, end, y->type.rank);
		sb_puts(b, ", ");
		dims_lit(b, strides, y->type.rank);
		sb_puts(b, ");");
		return;
	}
	case OP_STRIDED_SLICE:
		sb_printf(b, "sc_strided_slice_grad(rt, %s, %s, ", dy, dx);
		dims_lit(b, x->type.dims, x->type.rank);
		sb_printf(b, ", %d, ", x->type.rank);
		slice_args(b, p, f, fa, x);
		sb_puts(b, ");");
		return;
	case OP_SPARSE_SOFTMAX_CE:
		if (f->nin == 4) {
			char off[32];
			offset_arg(off, sizeof off, p, f, fa);
			sb_printf(b, "sc_sparse_softmax_ce_part_grad(rt, %s, %s, %s, %s, %s, %s, %s, %lld, %lld, %s, %lld);", x0,
			          x1, sc_dtype_name(l->values[f->in[1]].type.dtype), p->cname[f->in[2]], p->cname[f->in[3]], dy, dx,
			          (long long)x->type.dims[0], (long long)x->type.dims[1], off, (long long)x->global[1]);
		} else
			sb_printf(b, "sc_sparse_softmax_ce_grad(rt, %s, %s, %s, %s, %s, %lld, %lld);", x0, x1,
			          sc_dtype_name(l->values[f->in[1]].type.dtype), dy, dx, (long long)x->type.dims[0],
			          (long long)x->type.dims[1]);
		return;
	case OP_MSE_LOSS: case OP_L1_LOSS:
		sb_printf(b, "sc_%s_loss_grad(rt, %s, %s, %s, %s, %lld);", f->op == OP_MSE_LOSS ? "mse" : "l1", x0, x1, dy, dx,
		          (long long)n);
		if (k == 1)   /* the target's gradient is the prediction's, negated */
			sb_printf(b, "\n\t\tsc_unary(rt, SC_U_NEG, %s, %s, %lld);", dx, dx, (long long)n);
		return;
	case OP_CAST:   /* back to the input's float type */
		sb_printf(b, "sc_cast(rt, %s, %s, %s, %s, %lld);", dy, sc_dtype_name(y->type.dtype), dx,
		          sc_dtype_name(dxv->type.dtype), (long long)n);
		return;
	case OP_RESHAPE: case OP_FLATTEN:   /* the identity on the elements */
	case OP_ALL_REDUCE: case OP_ALL_GATHER: case OP_REDUCE_SCATTER: case OP_ALL_TO_ALL:   /* one device */
		sb_printf(b, "sc_copy(rt, %s, %s, %lld);", dx, dy, (long long)value_bytes(dxv));
		return;
	case OP_CALL: case OP_COUNT:   /* inlined by flatten; rejected by check_names */
		die("no %s operator is left to differentiate", f->op == OP_CALL ? "Call" : "unknown");
	}
}

/* Operator i's kernel call, its operands named by p->cname. */
static void emit_kernel(StrBuf *b, const Program *p, int i, int64_t rank, int64_t *members)
{
	const Lowered *l = p->l;
	const LOp *o = &l->ops[i];
	const LValue *y = &l->values[o->result];
	Attrs a;
	switch (o->grad) {
	case GRAD_SEED:
	case GRAD_ZERO:
		sb_printf(b, "sc_fill(rt, %s, %s, %lld, %s);", p->cname[o->result], sc_dtype_name(y->type.dtype),
		          (long long)numel(y), o->grad != GRAD_SEED ? "0.0" : l->overflow >= 0 ? "loss_scale" : "1.0");
		break;
	case GRAD_ACCUM:
		emit_binary(b, p, "SC_ADD", o->in[0], o->in[1], o->result);
		break;
	case GRAD_SCALE:
		sb_printf(b, "sc_scale(rt, %s, %s, %lld, %.17g);", p->cname[o->in[0]], p->cname[o->result],
		          (long long)numel(y), o->scale);
		break;
	case GRAD_MAX_MASK:
		sb_printf(b, "sc_where_equal(rt, %s, %s, %s, %s, %lld);", p->cname[o->in[0]], p->cname[o->in[1]],
		          p->cname[o->in[2]], p->cname[o->result], (long long)numel(y));
		break;
	case GRAD_TIE_COUNT: {
		const LValue *x = &l->values[o->in[0]];
		int64_t axes[MAX_DIMS];
		int na = reduce_axes(&l->ops[o->of].a, x->type.rank, axes);
		sb_printf(b, "sc_count_equal(rt, %s, %s, %s, ", p->cname[o->in[0]], p->cname[o->in[1]], p->cname[o->result]);
		dims_lit(b, x->type.dims, x->type.rank);
		sb_printf(b, ", %d, ", x->type.rank);
		ints_lit(b, axes, na);
		sb_printf(b, ", %d);", na);
		break;
	}
	case GRAD_SQNORM: {   /* the pieces this rank holds the first copy of: the table gives their sizes, else 0 */
		StrBuf xs = {0};
		for (int k = 0; k < o->nin; k++)
			sb_printf(&xs, k ? ", %s" : "%s", p->cname[o->in[k]]);
		sb_printf(b, "sc_sum_squares(rt, (const float *const[]){%s}, ", xs.data);
		entry_ref(b, op_table(p, o), 0, o->nin, true);
		sb_printf(b, ", %d, %s);", o->nin, p->cname[o->result]);
		sb_free(&xs);
		break;
	}
	case GRAD_CLIP:
		sb_printf(b, "sc_clip_by_norm(rt, %s, %s, %lld, %s, %.17g);", p->cname[o->in[0]], p->cname[o->result],
		          (long long)numel(y), p->cname[o->in[1]], l->m->train->clip_global_norm);
		break;
	case GRAD_ADJOINT:
		lowered_rank_attrs(l, &l->ops[o->of], rank, &a, members);
		emit_adjoint(b, p, o, &a, p->scratch);
		break;
	case GRAD_NONE:
		lowered_rank_attrs(l, o, rank, &a, members);
		if (o->step && o->step->kind != STEP_SLICE)
			emit_collective(b, p, o, i);
		else
			emit_forward(b, p, o, &a);
		break;
	}
}

/* `sc_cast(rt, x, x_dt, y, y_dt, n);` between value v and its Float32 copy at off. */
static void emit_widen(StrBuf *b, const Program *p, int v, int64_t off, bool narrow)
{
	const LValue *x = &p->l->values[v];
	const char *dt = sc_dtype_name(x->type.dtype);
	if (narrow)
		sb_printf(b, "sc_cast(rt, (float *)(slab + %lld), SC_F32, %s, %s, %lld);", (long long)off, p->cname[v], dt,
		          (long long)numel(x));
	else
		sb_printf(b, "sc_cast(rt, %s, %s, (float *)(slab + %lld), SC_F32, %lld);", p->cname[v], dt, (long long)off,
		          (long long)numel(x));
}

/* The elementwise chain that ends at operator i (fuse.c) as one
 * sc_ew_chain call: the values outside it its operands, each member's
 * operator a step, a half result rounded, the last result and those read
 * outside the chain stored. */
static void emit_chain(StrBuf *b, const Program *p, int i)
{
	const Lowered *l = p->l;
	int m[MAX_CHAIN], nm = chain_members(l, i, m);
	const LValue *y = &l->values[l->ops[i].result];
	int64_t n = numel(y), c = y->type.rank ? y->type.dims[y->type.rank - 1] : 1;
	int ins[2 * MAX_CHAIN], num[2 * MAX_CHAIN];   /* operands; each member's value number */
	int nin = chain_operands(l, m, nm, ins);
	sb_puts(b, "/* elementwise chain (fused):");
	for (int j = 0; j < nm; j++)
		sb_printf(b, "%s %%%s = %s", j ? "," : "", l->values[l->ops[m[j]].result].name, op_info[l->ops[m[j]].op].name);
	sb_puts(b, " */\n\t\tsc_ew_chain(rt, (const sc_ew_step[]){");
	int nsteps = 0;
	for (int j = 0; j < nm; j++) {
		const LOp *o = &l->ops[m[j]];
		int a[2];
		for (int k = 0; k < o->nin; k++) {
			int v = o->in[k], q = 0;
			while (q < nin && ins[q] != v)
				q++;
			if (q < nin)
				a[k] = q;
			else {
				for (q = 0; l->ops[m[q]].result != v; q++)
					;
				a[k] = num[q];
			}
		}
		const char *sep = nsteps ? ", " : "";
		if (op_is_unary(o->op))
			sb_printf(b, "%s{SC_EW_UNARY, %s, %d, 0, SC_F32, NULL}", sep, op_info[o->op].kernel, a[0]);
		else if (o->op != OP_CAST)
			sb_printf(b, "%s{SC_EW_BINARY, %s, %d, %d, SC_F32, NULL}", sep,
			          o->op == OP_BIAS_ADD ? "SC_ADD" : op_info[o->op].kernel, a[0], a[1]);
		num[j] = o->op == OP_CAST ? a[0] : nin + nsteps++;
		DType t = l->values[o->result].type.dtype;
		bool same = o->op == OP_CAST && l->values[o->in[0]].type.dtype == t;
		if (dtype_is_half(t) && !same) {
			sb_printf(b, "%s{SC_EW_ROUND, 0, %d, 0, %s, NULL}", nsteps ? ", " : "", num[j], sc_dtype_name(t));
			num[j] = nin + nsteps++;
		}
		if (m[j] == i || o->fused_writes) {
			sb_printf(b, "%s{SC_EW_STORE, 0, %d, 0, %s, %s}", nsteps ? ", " : "", num[j], sc_dtype_name(t),
			          p->cname[o->result]);
			num[j] = nin + nsteps++;
		}
	}
	sb_printf(b, "}, %d, (const sc_ew_operand[]){", nsteps);
	for (int k = 0; k < nin; k++) {
		const LValue *x = &l->values[ins[k]];
		int64_t xn = numel(x);
		sb_printf(b, "%s{%s, %s, %s}", k ? ", " : "", p->cname[ins[k]], sc_dtype_name(x->type.dtype),
		          xn == n ? "SC_EW_FULL" : xn == 1 ? "SC_EW_SCALAR" : "SC_EW_ROW");
	}
	sb_printf(b, "}, %d, %lld, %lld);", nin, (long long)(n / c), (long long)c);
}

static void emit_op(StrBuf *b, const Program *p, int i, int64_t rank, int64_t *members)
{
	const Lowered *l = p->l;
	const LOp *o = &l->ops[i];
	if (o->fused && o->chain >= 0) {
		sb_printf(b, "\t/* %%%s = %s: computed by %%%s's elementwise chain (fused) */\n", l->values[o->result].name,
		          op_info[o->op].name, l->values[l->ops[o->chain].result].name);
		return;
	}
	if (o->chain == i) {
		sb_puts(b, "\t");
		emit_chain(b, p, i);
		sb_putc(b, '\n');
		return;
	}
	if (o->fused && o->grad == GRAD_ADJOINT) {   /* one of a LayerNorm's gradients (fuse.c) */
		sb_printf(b, "\t/* %%%s: by the kernel below that computes %%%s's gradients together (fused) */\n",
		          l->values[o->result].name, l->values[l->ops[o->of].result].name);
		return;
	}
	if (o->fused) {
		sb_printf(b, "\t/* %%%s = %s: computed by the kernel that reads it (fused) */\n", l->values[o->result].name,
		          op_info[o->op].name);
		return;
	}
	if (o->fold == FOLD_READ) {   /* fuse.c, plan_views */
		sb_printf(b, "\t/* %%%s: %%%s's bytes, which BatchMatMuls read with strides (no copy) */\n",
		          l->values[o->result].name, l->values[o->in[0]].name);
		return;
	}
	if (o->fold == FOLD_WRITE) {
		sb_printf(b, "\t/* %%%s: written in place by a BatchMatMul, with strides, as %%%s (no copy) */\n",
		          l->values[o->result].name, l->values[o->in[0]].name);
		return;
	}
	if (p->view[o->result] >= 0) {   /* plan_views */
		sb_printf(b, "\t/* %%%s: %%%s's bytes, in its buffer (no copy) */\n", l->values[o->result].name,
		          l->values[o->in[0]].name);
		return;
	}
	Widened w;
	widened(l, o, p->scratch + kernel_scratch(l, o), &w);
	sb_puts(b, "\t");
	if (!w.n) {
		emit_kernel(b, p, i, rank, members);
	} else {   /* half operands: the Float32 kernel on their widened copies */
		sb_printf(b, "/* %s on %s: in Float32, rounded once */\n\t\t", op_info[o->op].name,
		          dtype_name(l->values[w.value[0]].type.dtype));
		for (int j = 0; j < w.nread; j++) {
			emit_widen(b, p, w.value[j], w.off[j], false);
			sb_puts(b, "\n\t\t");
		}
		StrBuf names[MAX_WIDENED] = {{0}};
		for (int j = 0; j < w.n; j++) {
			sb_printf(&names[j], "((float *)(slab + %lld))", (long long)w.off[j]);
			p->arg[w.value[j]] = names[j].data;
		}
		Program q = *p;
		q.cname = p->arg;
		emit_kernel(b, &q, i, rank, members);
		for (int j = 0; j < w.n; j++) {
			p->arg[w.value[j]] = p->cname[w.value[j]];
			sb_free(&names[j]);
		}
		for (int j = w.nread; j < w.n; j++) {
			sb_puts(b, "\n\t\t");
			emit_widen(b, p, w.value[j], w.off[j], true);
		}
	}
	if (o->why)
		sb_printf(b, "  /* %s */", o->why);
	sb_putc(b, '\n');
}

/* ---- inputs, parameters and results ---- */

static double lit_arg(const Lit *init, int k, double dflt)
{
	return init && init->kind == LIT_APPLY && k < init->nitems && lit_is_number(init->items[k])
	           ? lit_number(init->items[k]) : dflt;
}

/* `gdims, ndim, start, ldims` of value v's piece; where the rank's piece
 * starts is in the table. */
static void piece_args(StrBuf *b, const Program *p, int v)
{
	const LValue *x = &p->l->values[v];
	dims_lit(b, x->global, x->type.rank);
	sb_printf(b, ", %d, ", x->type.rank);
	if (x->type.rank)
		entry_ref(b, &p->entry[p->value_entry[v]], 0, x->type.rank, true);
	else
		dims_lit(b, x->type.dims, 0);
	sb_puts(b, ", ");
	dims_lit(b, x->type.dims, x->type.rank);
}

static void emit_input(StrBuf *b, const Program *p, int v)
{
	const Lowered *l = p->l;
	const Value *gv = &l->flat->g->values[v];
	const LValue *x = &l->values[v];
	const char *c = p->cname[v], *dt = sc_dtype_name(x->type.dtype);
	const Lit *init = gv->init;
	const char *kind = init ? init->s : gv->type.is_param ? "normal" : "uniform";
	sb_printf(b, "\tif ((file = sc_option(rt, \"%s\", \"%s\")))\n\t\tsc_load_npy(rt, \"%s\", file, %s, %s, ",
	          gv->type.is_param ? "--param" : "--input", gv->name, gv->name, c, dt);
	piece_args(b, p, v);
	sb_puts(b, ");\n\telse\n\t\t");
	if (!strcmp(kind, "zeros") || !strcmp(kind, "ones") || !strcmp(kind, "constant")) {
		double value = !strcmp(kind, "ones") ? 1 : !strcmp(kind, "constant") ? lit_arg(init, 0, 0) : 0;
		sb_printf(b, "sc_fill(rt, %s, %s, %lld, %.17g);\n", c, dt, (long long)numel(x), value);
		return;
	}
	sb_printf(b, "sc_init_%s(rt, %s, %s, \"%s\", %lldu, ", kind, c, dt, gv->name, (long long)l->m->ctx.seed);
	piece_args(b, p, v);
	if (!strcmp(kind, "normal"))
		sb_printf(b, ", %.17g);\n", lit_arg(init, 0, 0.01));
	else if (!strcmp(kind, "randint"))
		sb_printf(b, ", %lld, %lld);\n", (long long)lit_arg(init, 0, 0), (long long)lit_arg(init, 1, 1));
	else
		sb_printf(b, ", %.17g, %.17g);\n", lit_arg(init, 0, 0), lit_arg(init, 1, 1));
}

static void emit_save(StrBuf *b, const Program *p, int v, const char *file)
{
	const LValue *x = &p->l->values[v];
	sb_printf(b, "\tsc_save_npy(rt, out_dir, \"%s\", %s, %s, ", file, p->cname[v], sc_dtype_name(x->type.dtype));
	piece_args(b, p, v);
	sb_puts(b, ");\n");
}

/* Weight decay skips parameters named like LayerNorm's (MindSpore's default
 * decay filter for ungrouped parameters), except in nn.SGD, whose SGD kernel
 * decays every parameter. */
static double decay_of(const Train *t, const char *name)
{
	if (t->optimizer != OPT_SGD && (strstr(name, "beta") || strstr(name, "gamma")))
		return 0.0;
	return t->weight_decay;
}

/* The optimizer's call on parameter v: the names of the parameter, its
 * gradient and its state (Momentum's v; Adam's m, then v). */
static void emit_optimizer(StrBuf *b, const Program *p, int v, const char *c, const char *g, const char *s0,
                           const char *s1)
{
	const Lowered *l = p->l;
	const Train *t = l->m->train;
	long long n = (long long)numel(&l->values[v]);
	double wd = decay_of(t, l->flat->g->values[v].name);
	const char *count = l->overflow >= 0 ? "updates" : "step";   /* loss scaling skips steps: count updates */
	switch (t->optimizer) {
	case OPT_SGD:
		if (t->momentum > 0)
			sb_printf(b, "\t\tsc_sgd(rt, %s, %s, %s, %lld, %.17g, %.17g, %.17g, %.17g, %d, %s);\n", c, g, s0, n,
			          t->learning_rate, t->momentum, t->dampening, wd, t->nesterov, count);
		else
			sb_printf(b, "\t\tsc_sgd(rt, %s, %s, NULL, %lld, %.17g, 0, %.17g, %.17g, 0, %s);\n", c, g, n,
			          t->learning_rate, t->dampening, wd, count);
		break;
	case OPT_MOMENTUM:
		sb_printf(b, "\t\tsc_momentum(rt, %s, %s, %s, %lld, %.17g, %.17g, %.17g, %d);\n", c, g, s0, n, t->learning_rate,
		          t->momentum, wd, t->nesterov);
		break;
	case OPT_ADAM:
		sb_printf(b, "\t\tsc_adam(rt, %s, %s, %s, %s, %lld, %.17g, %.17g, %.17g, %.17g, %.17g, %s);\n", c, g, s0, s1,
		          n, t->learning_rate, t->beta1, t->beta2, t->eps, wd, count);
		break;
	case OPT_ADAM_WEIGHT_DECAY:
		sb_printf(b, "\t\tsc_adam_weight_decay(rt, %s, %s, %s, %s, %lld, %.17g, %.17g, %.17g, %.17g, %.17g);\n", c, g,
		          s0, s1, n, t->learning_rate, t->beta1, t->beta2, t->eps, wd);
		break;
	}
}

/* A half parameter's update computes on Float32 copies of it, its gradient
 * and its state (kept in the parameter's type), and rounds the parameter
 * and the state once. */
/* Dynamic loss scaling (MindSpore's DynamicLossScaleManager): an inf or NaN
 * in the scaled gradients shows in their squared global norm, which every
 * rank holds whole; then the step is skipped and the scale divided by
 * scale_factor (not below 1); else the gradients are unscaled for the update. */
static void emit_unscale(StrBuf *b, const Program *p)
{
	const Lowered *l = p->l;
	sb_printf(b, "\n\t\t/* Loss scaling: skip the step on an overflow, else unscale the gradients. */\n"
	          "\t\tfloat sqnorm;\n\t\tsc_to_host(rt, &sqnorm, %s, sizeof sqnorm);\n\t\tif (!isfinite(sqnorm)) {\n"
	          "\t\t\tdouble next = loss_scale / %.17g > 1 ? loss_scale / %.17g : 1;\n"
	          "\t\t\tif (sc_rank(rt) == 0)\n\t\t\t\tprintf(\"step: %%lld, overflow, loss scale %%.10g -> %%.10g, step "
	          "skipped\\n\", (long long)step, loss_scale, next);\n"
	          "\t\t\tloss_scale = next;\n\t\t\tgood_steps = 0;\n\t\t\tcontinue;\n\t\t}\n",
	          p->cname[l->overflow], l->m->train->scale_factor, l->m->train->scale_factor);
	for (int v = 0; v < l->nparams; v++)
		if (l->grad[v] >= 0)
			sb_printf(b, "\t\tsc_scale(rt, %s, %s, %lld, 1.0 / loss_scale);\n", p->cname[l->grad[v]],
			          p->cname[l->grad[v]], (long long)numel(&l->values[l->grad[v]]));
	sb_puts(b, "\t\tupdates++;\n");
}

static void emit_update(StrBuf *b, const Program *p, int v)
{
	const Lowered *l = p->l;
	const LValue *x = &l->values[v];
	long long st = (long long)p->state[v], state_bytes = (long long)aligned(value_bytes(x));
	int nstate = state_slots(l->m->train);
	StrBuf name[4] = {{0}};
	if (!dtype_is_half(x->type.dtype)) {
		sb_printf(&name[0], "(float *)(slab + %lld)", st);
		sb_printf(&name[1], "(float *)(slab + %lld)", st + state_bytes);
		emit_optimizer(b, p, v, p->cname[v], p->cname[l->grad[v]], name[0].data, name[1].data);
		sb_free(&name[0]);
		sb_free(&name[1]);
		return;
	}
	const char *dt = sc_dtype_name(x->type.dtype);
	long long n = (long long)numel(x), wide = (long long)aligned(numel(x) * 4);
	StrBuf src[4] = {{0}};
	sb_puts(&src[0], p->cname[v]);
	sb_puts(&src[1], p->cname[l->grad[v]]);
	for (int j = 0; j < nstate; j++)
		sb_printf(&src[2 + j], "(uint16_t *)(slab + %lld)", st + j * state_bytes);
	sb_printf(b, "\t\t/* %%%s is %s: updated in Float32, rounded once */\n", x->name, dtype_name(x->type.dtype));
	for (int j = 0; j < 2 + nstate; j++) {
		sb_printf(&name[j], "(float *)(slab + %lld)", (long long)p->scratch + j * wide);
		sb_printf(b, "\t\tsc_cast(rt, %s, %s, %s, SC_F32, %lld);\n", src[j].data, dt, name[j].data, n);
	}
	emit_optimizer(b, p, v, name[0].data, name[1].data, name[2].data, name[3].data);
	for (int j = 0; j < 2 + nstate; j++)
		if (j != 1)
			sb_printf(b, "\t\tsc_cast(rt, %s, SC_F32, %s, %s, %lld);\n", name[j].data, src[j].data, dt, n);
	for (int j = 0; j < 4; j++) {
		sb_free(&name[j]);
		sb_free(&src[j]);
	}
}

/* The group of partition k: its first member is the rank's, from the table;
 * the grid's shape is every rank's. The line does not grow with the ranks. */
static void emit_group(StrBuf *b, const Program *p, int k)
{
	int64_t size[MAX_AXES], stride[MAX_AXES], n;
	int ng;
	group_grid(&p->l->ops[p->part[k]], 0, size, stride, &ng, &n);
	const Entry *e = &p->entry[p->part_entry[k]];
	sb_printf(b, "\tsc_group *g%d = sc_group_split_grid(rt, %s", k, e->pos >= 0 ? "(int)" : "");
	entry_ref(b, e, 0, 1, false);
	sb_printf(b, ", %d, ", ng);
	ints_lit(b, size, ng);
	sb_puts(b, ", ");
	ints_lit(b, stride, ng);
	sb_printf(b, ");  /* %lld ranks */\n", (long long)n);
}

static void emit_names(StrBuf *b, const Lowered *l, const char *var, bool params)
{
	const Graph *g = l->flat->g;
	int n = 0;
	sb_printf(b, "\tstatic const char *const %s[] = {", var);
	for (int v = 0; v < l->nparams; v++)
		if (g->values[v].type.is_param == params)
			sb_printf(b, n++ ? ", \"%s\"" : "\"%s\"", g->values[v].name);
	sb_printf(b, "%s};\n\tsc_check_names(rt, \"%s\", %s, %d);\n", n ? "" : "NULL", params ? "--param" : "--input",
	          var, n);
}

/* An operator whose adjoint moves dy's bytes to dx and reads nothing else. */
static bool moves_bytes(OpKind op)
{
	return op == OP_TRANSPOSE || op == OP_RESHAPE || op == OP_FLATTEN;
}

/* Whether operator o has code of its own (emit_op): not a shadow, a fused
 * operator, a folded Transpose or a view. */
static bool has_code(const Program *p, const LOp *o)
{
	return !o->shadow && !o->fused && !o->fold && p->view[o->result] < 0;
}

/* The values program.c names: what an operator with code may pass (its
 * operands and result, a carried operator's, a differentiated operator's),
 * the inputs and parameters, and what is read after the operators. A value
 * between two operators without code (a Reshape of a folded Transpose's
 * operand) has a buffer but no name: a pointer to it would go unused. */
static bool *named_values(const Program *p)
{
	const Lowered *l = p->l;
	bool *named = xcalloc((size_t)(l->nvalues ? l->nvalues : 1), sizeof *named);
	for (int i = 0; i < l->nops; i++) {
		const LOp *o = &l->ops[i];
		if (!has_code(p, o))
			continue;
		named[o->result] = true;
		for (int k = 0; k < o->nin; k++)
			named[o->in[k]] = true;
		int at[4], nat = fused_gradients(l, i, at);   /* gradients written with this one's */
		for (int j = 0; j < nat; j++)
			named[l->ops[at[j]].result] = true;
		for (int f = o->fuse_from; f >= 0; f = l->ops[f].fuse_from) {
			for (int k = 0; k < l->ops[f].nin; k++)
				named[l->ops[f].in[k]] = true;
			named[l->ops[f].result] = true;
		}
		int m[MAX_CHAIN], nm = chain_members(l, i, m);   /* an elementwise chain's call */
		for (int j = 0; j < nm; j++) {
			for (int k = 0; k < l->ops[m[j]].nin; k++)
				named[l->ops[m[j]].in[k]] = true;
			named[l->ops[m[j]].result] = true;
		}
		const LOp *f = o->grad == GRAD_ADJOINT ? &l->ops[o->of] : NULL;
		if (f && moves_bytes(f->op))   /* dy to dx alone */
			f = NULL;
		for (int k = 0; f && k < f->nin; k++)
			named[f->in[k]] = true;
		if (f)
			named[f->result] = true;
	}
	for (int v = 0; v < l->nparams; v++)
		named[v] = true;
	for (int k = 0; k < l->nret; k++)
		named[l->rets[k]] = true;
	if (l->loss >= 0)
		named[l->loss] = true;
	if (l->overflow >= 0)
		named[l->overflow] = true;
	for (int v = 0; l->grad && v < l->nparams; v++)
		if (l->grad[v] >= 0)
			named[l->grad[v]] = true;
	return named;
}

/* program.c's main; rank only feeds lowered_rank_attrs, whose rank-dependent
 * attributes every caller takes from the table instead. */
static void emit_main(StrBuf *b, const Program *p, int64_t rank)
{
	const Lowered *l = p->l;
	const Graph *g = l->flat->g;
	const Train *t = l->m->train;
	int64_t *members = xmalloc(sizeof(int64_t) * (size_t)l->device_num);
	sb_printf(b, "int main(int argc, char **argv)\n{\n\tsc_rt *rt = sc_init(&argc, &argv, %lld);\n",
	          (long long)l->device_num);
	sb_puts(b, "\tconst int64_t *const T = sc_ranks[sc_rank(rt)];   /* this rank's table: rank_<r>.c */\n\t(void)T;\n");
	emit_names(b, l, "input_names", false);
	emit_names(b, l, "param_names", true);
	sb_printf(b, "\tint64_t steps = sc_steps(rt, %lld);\n", (long long)(t ? t->steps : 1));
	sb_puts(b, "\tconst char *out_dir = sc_option(rt, \"--output-dir\", NULL), *file = NULL;\n\t(void)file;\n");
	if (p->npart) {
		sb_puts(b, "\n\t/* Groups: each a partition of the ranks; this rank names its own group. */\n");
		for (int k = 0; k < p->npart; k++)
			emit_group(b, p, k);
	}
	sb_printf(b, "\n\t/* Memory: parameters, inputs and optimizer state first (%lld bytes), then every\n"
	          "\t * other value placed by liveness: buffers whose lives do not overlap share bytes. */\n"
	          "\tchar *slab = sc_slab(rt, %lld);\n", (long long)p->persistent_bytes, (long long)p->slab_bytes);
	bool *named = named_values(p);
	for (int v = 0; v < l->nvalues; v++) {
		const LValue *x = &l->values[v];
		if (p->offset[v] < 0 || !named[v])   /* fused away, or only views pass through it */
			continue;
		sb_printf(b, "\t%s *const %s = (%s *)(slab + %lld);  /* %%%s (", c_type(x->type.dtype), p->cname[v],
		          c_type(x->type.dtype), (long long)p->offset[v], x->name);
		for (int d = 0; d < x->type.rank; d++)
			sb_printf(b, d ? ", %lld" : "%lld", (long long)x->type.dims[d]);
		sb_puts(b, x->type.rank == 1 ? ",) */\n" : ") */\n");
	}
	free(named);
	sb_puts(b, "\n\t/* Inputs and parameters: this rank's slice of a file, or of the initializer. */\n");
	for (int v = 0; v < l->nparams; v++)
		emit_input(b, p, v);
	if (t && l->overflow >= 0)
		sb_printf(b, "\n\tdouble loss_scale = %.17g;   /* dynamic loss scaling (precision fp16) */\n"
		          "\tint64_t good_steps = 0, updates = 0;\n", l->m->train->init_loss_scale);
	sb_puts(b, "\n\tdouble t0 = sc_time(rt);\n\tfor (int64_t step = 1; step <= steps; step++) {\n");
	for (int i = 0; i < l->nfwd; i++) {
		sb_putc(b, '\t');
		emit_op(b, p, i, rank, members);
	}
	if (t) {
		const LValue *lv = &l->values[l->loss];
		if (dtype_is_half(lv->type.dtype))
			sb_printf(b, "\t\tsc_cast(rt, %s, %s, (float *)(slab + %lld), SC_F32, 1);\n\t\tsc_print_loss(rt, step, "
			          "(float *)(slab + %lld));\n\n\t\t/* Backward. */\n", p->cname[l->loss],
			          sc_dtype_name(lv->type.dtype), (long long)p->scratch, (long long)p->scratch);
		else
			sb_printf(b, "\t\tsc_print_loss(rt, step, %s);\n\n\t\t/* Backward. */\n", p->cname[l->loss]);
		for (int i = l->nfwd; i < l->nops; i++) {
			if (l->ops[i].shadow)   /* no code (recompute.c) */
				continue;
			sb_putc(b, '\t');
			emit_op(b, p, i, rank, members);
		}
		if (l->overflow >= 0)
			emit_unscale(b, p);
		sb_puts(b, "\n\t\t/* Update. */\n");
		for (int v = 0; v < l->nparams; v++)
			if (l->grad[v] >= 0)
				emit_update(b, p, v);
		if (l->overflow >= 0)
			sb_printf(b, "\t\tif (++good_steps == %lld) {   /* scale_window good steps: grow */\n\t\t\tloss_scale *= "
			          "%.17g;\n\t\t\tgood_steps = 0;\n\t\t}\n", (long long)l->m->train->scale_window,
			          l->m->train->scale_factor);
	}
	sb_puts(b, "\t}\n\tdouble t1 = sc_time(rt);\n\n\t/* Results: every rank passes its piece, rank 0 writes. */\n");
	for (int k = 0; k < l->nret; k++) {
		StrBuf f = {0};
		sb_printf(&f, "output_%d.npy", k);
		emit_save(b, p, l->rets[k], f.data);
		sb_free(&f);
	}
	for (int v = 0; t && v < l->nparams; v++)
		if (g->values[v].type.is_param) {
			StrBuf f = {0};
			sb_printf(&f, "param_%s.npy", g->values[v].name);
			emit_save(b, p, v, f.data);
			sb_free(&f);
		}
	sb_printf(b, "\tif (sc_rank(rt) == 0)\n\t\tprintf(\"time: %%lld %s in %%.6f s, %%.6g ms each\\n\", (long long)steps, "
	          "t1 - t0, 1e3 * (t1 - t0) / (double)steps);\n", t ? "steps" : "runs");
	sb_puts(b, "\tsc_finalize(rt);\n\treturn 0;\n}\n");
	free(members);
}

void emit_program(StrBuf *b, const Program *p)
{
	const Lowered *l = p->l;
	const Train *t = l->m->train;
	sb_printf(b, "/* program.c: every rank's program of @%s (%lld ranks), compiled by shardc from %s.\n"
	          " *\n"
	          " * Reads or initializes the rank's slices of the inputs and parameters, runs\n"
	          " * the graph%s, and writes the results (docs/output.md).\n"
	          " * Every number that differs between ranks is read from T, the rank's table:\n"
	          " * rank_<r>.c holds rank r's and says what each T[k] is. With rank r's numbers in\n"
	          " * place of T, the forward operators are those of ir/rank_<r>/step_parallel_end.ir\n"
	          " * (shardc --dump-ir); comments say why each collective is there. Sends %lld bytes\n"
	          " * per %s. Build: make (BACKEND=cpu|cuda); run: ./run.sh. */\n"
	          "#include \"shardc_rt.h\"\n\n#include <stdint.h>\n#include <stdio.h>\n\n"
	          "extern const int64_t *const sc_ranks[];   /* ranks.c: sc_ranks[r] is rank_<r>.c's table */\n\n",
	          l->flat->g->name, (long long)l->device_num, p->model,
	          t ? ", computes the gradients and updates the parameters, step by step" : "",
	          (long long)l->comm_bytes, t ? "training step" : "run");
	if (t && l->overflow >= 0)
		sb_puts(b, "#include <math.h>\n\n");
	size_t at = b->len;
	emit_main(b, p, 0);
	if (l->device_num > 1) {   /* the text must not depend on the rank: the last one's is the same */
		StrBuf other = {0};
		emit_main(&other, p, l->device_num - 1);
		if (other.len != b->len - at || memcmp(other.data, b->data + at, other.len))
			die("program.c depends on the rank: a rank-dependent number is not in the table");
		sb_free(&other);
	}
}

static void entry_label(StrBuf *b, const Program *p, const Entry *e, int64_t rank, const int64_t *val)
{
	const Lowered *l = p->l;
	switch (e->kind) {
	case E_GROUP: {
		const LOp *op = &l->ops[p->part[e->at]];
		int64_t size[MAX_AXES], stride[MAX_AXES], n;
		int ng;
		group_grid(op, rank, size, stride, &ng, &n);
		sb_printf(b, "g%d's first member: ranks ", e->at);
		if (n > 16) {
			sb_printf(b, "%lld.. (%lld)", (long long)val[0], (long long)n);
			return;
		}
		for (int i = 0; i < n; i++) {
			int64_t r = val[0], rest = i;
			for (int j = ng - 1; j >= 0; j--) {
				r += rest % size[j] * stride[j];
				rest /= size[j];
			}
			sb_printf(b, i ? ", %lld" : "%lld", (long long)r);
		}
		return;
	}
	case E_PIECE: sb_printf(b, "%%%s starts at", l->values[e->at].name); return;
	case E_SLICE: sb_printf(b, "%%%s: begin, end", l->values[l->ops[e->at].result].name); return;
	case E_OFFSET: sb_printf(b, "%%%s: the first row (class) held", l->values[l->ops[e->at].result].name); return;
	case E_SQNORM: sb_printf(b, "%%%s: sizes of the first copies", l->values[l->ops[e->at].result].name); return;
	}
}

void emit_table(StrBuf *b, const Program *p, int64_t rank)
{
	const Lowered *l = p->l;
	sb_printf(b, "/* rank_%lld.c: rank %lld of %lld of @%s, compiled by shardc from %s.\n"
	          " *\n"
	          " * The numbers program.c reads as T[k] on this rank, and nothing else\n"
	          " * (docs/output.md). Each is a formula of the rank's row-major coordinates c on\n"
	          " * a device matrix: a piece or a slice starts at c times the local size along a\n"
	          " * split dim, a group's first member is the rank with c zero on the group's axes,\n"
	          " * a gradient piece counts in the global norm where c is zero on the axes that\n"
	          " * copy it. c on each matrix here:",
	          (long long)rank, (long long)rank, (long long)l->device_num, l->flat->g->name, p->model);
	const TensorLayout **mats = p->mat;
	int nm = p->nmat;
	for (int j = 0; j < nm; j++) {
		int64_t c[MAX_AXES];
		layout_coords(mats[j], rank, c);
		sb_puts(b, j ? ";\n *" : "\n *");
		sb_puts(b, " (");
		for (int a = 0; a < mats[j]->ndev; a++)
			sb_printf(b, a ? ", %lld" : "%lld", (long long)c[a]);
		sb_puts(b, mats[j]->ndev == 1 ? ",) on (" : ") on (");
		for (int a = 0; a < mats[j]->ndev; a++)
			sb_printf(b, a ? ", %lld" : "%lld", (long long)mats[j]->dev[a]);
		sb_puts(b, mats[j]->ndev == 1 ? ",)" : ")");
	}
	sb_printf(b, "%s. */\n#include <stdint.h>\n\nconst int64_t sc_rank_%lld[] = {\n", nm ? "" : " (none)",
	          (long long)rank);
	const int64_t *row = p->tab + rank * p->tlen;
	for (int i = 0; i < p->nentry; i++) {
		const Entry *e = &p->entry[i];
		const int64_t *val = row + e->pos;
		if (e->pos < 0 || e->first != i)
			continue;
		sb_printf(b, "\t/* T[%lld] ", (long long)e->pos);
		entry_label(b, p, e, rank, val);
		if (e->nsame)
			sb_printf(b, "; and %d more", e->nsame);
		sb_puts(b, " */");
		for (int k = 0; k < e->n; k++)
			sb_printf(b, " %lld,", (long long)val[k]);
		sb_putc(b, '\n');
	}
	if (!p->tlen)
		sb_puts(b, "\t0   /* no numbers: C has no empty array */\n");
	sb_puts(b, "};\n");
}

void emit_ranks(StrBuf *b, const Lowered *l)
{
	sb_printf(b, "/* ranks.c: the %lld ranks' tables of @%s, by rank (generated by shardc).\n"
	          " * program.c reads sc_ranks[its rank]; each rank_<r>.c holds one. */\n"
	          "#include <stdint.h>\n\n", (long long)l->device_num, l->flat->g->name);
	for (int64_t r = 0; r < l->device_num; r++)
		sb_printf(b, "#include \"rank_%lld.c\"\n", (long long)r);
	sb_puts(b, "\nconst int64_t *const sc_ranks[] = {\n");
	for (int64_t r = 0; r < l->device_num; r++)
		sb_printf(b, "%ssc_rank_%lld,", r % 8 ? " " : r ? "\n\t" : "\t", (long long)r);
	sb_puts(b, "\n};\n");
}
/* ---- Makefile and run.sh ---- */

/* home as a make variable's value: '$' doubled, '#' escaped (no newline:
 * outdir.c refuses one). The Makefile quotes it for the shell with shq and
 * escapes its spaces for rule lines with mkesc. */
static void make_value(StrBuf *b, const char *home)
{
	for (const char *c = home; *c; c++) {
		if (*c == '$')
			sb_puts(b, "$$");
		else if (*c == '#')
			sb_puts(b, "\\#");
		else
			sb_putc(b, *c);
	}
}

void emit_makefile(StrBuf *b, const Lowered *l, const char *home)
{
	sb_printf(b, "# Makefile: builds the %lld rank programs of @%s (generated by shardc).\n"
	          "#   make [BACKEND=cpu|cuda]      bin/$(BACKEND)/rank_<r>\n"
	          "# program.c is compiled once; ranks.c holds every rank_<r>.c's table. They link\n"
	          "# into one executable, bin/$(BACKEND)/program, which takes its table by its MPI\n"
	          "# rank; bin/$(BACKEND)/rank_<r> are hard links to it, one a rank, for run.sh.\n"
	          "# SHARDC_HOME is where shardc was built: its runtime/ and build/runtime/.\n\n"
	          "SHARDC_HOME ?= ", (long long)l->device_num, l->flat->g->name);
	make_value(b, home);
	sb_printf(b, "\nBACKEND ?= cpu\nRANKS := %lld\nCC := mpicc\n"
	          "# The programs only call the runtime (built -O2): optimizing a main() of thousands of\n"
	          "# calls takes the compiler minutes and gains nothing.\n"
	          "CFLAGS ?= -O0 -std=c11 -Wall -Wextra\n"
	          "CUDA_HOME ?= /usr/local/cuda\n\n"
	          "# Paths may hold spaces and quotes: shq quotes one for the shell, mkesc for a rule line.\n"
	          "space := $(subst ,, )\n"
	          "shq = '$(subst ','\\'',$(1))'\n"
	          "mkesc = $(subst $(space),\\$(space),$(subst :,\\:,$(1)))\n"
	          "RT_LIB := $(SHARDC_HOME)/build/runtime/libshardc_rt_$(BACKEND).a\n"
	          "NCCL := $(if $(wildcard $(CUDA_HOME)/include/nccl.h /usr/include/nccl.h),-lnccl)\n"
	          "# The cpu library's link flags (its BLAS), as the runtime's build wrote them.\n"
	          "-include $(SHARDC_HOME)/build/runtime/link.mk\n"
	          "LIBS_cpu ?= -lopenblas -fopenmp -lm\n"
	          "LIBS_cuda := -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcublas -lcudart $(NCCL) -lstdc++ -lm\n"
	          "BIN := bin/$(BACKEND)\n"
	          "PROGRAMS := $(foreach r,$(shell seq 0 $$(($(RANKS) - 1))),$(BIN)/rank_$(r))\n\n"
	          "ifeq ($(filter $(BACKEND),cpu cuda),)\n$(error BACKEND is cpu or cuda, not '$(BACKEND)')\nendif\n\n"
	          ".PHONY: all clean\nall: $(PROGRAMS)\n\n"
	          "$(call mkesc,$(RT_LIB)):\n\t@echo \"no \"$(call shq,$(RT_LIB))\": build the runtime first "
	          "(make -C \"$(call shq,$(SHARDC_HOME))\" runtime)\" >&2; exit 1\n\n"
	          "$(BIN)/program.o: program.c | $(call mkesc,$(RT_LIB))\n\t@mkdir -p $(@D)\n"
	          "\t$(CC) $(CFLAGS) -I$(call shq,$(SHARDC_HOME)/runtime) -c -o $@ $<\n\n"
	          "$(BIN)/ranks.o: ranks.c $(wildcard rank_*.c)\n\t@mkdir -p $(@D)\n"
	          "\t$(CC) $(CFLAGS) -c -o $@ $<\n\n"
	          "$(BIN)/program: $(BIN)/program.o $(BIN)/ranks.o $(call mkesc,$(RT_LIB))\n"
	          "\t$(CC) $(CFLAGS) -o $@ $(BIN)/program.o $(BIN)/ranks.o $(call shq,$(RT_LIB)) $(LIBS_$(BACKEND))\n\n"
	          "$(PROGRAMS): $(BIN)/program\n\tln -f $< $@\n\n"
	          "clean:\n\trm -rf bin\n",
	          (long long)l->device_num);
}

void emit_run_sh(StrBuf *b, const Lowered *l)
{
	sb_printf(b, "#!/usr/bin/env bash\n"
	          "# run.sh: runs the %lld ranks of @%s as one MPMD job (generated by shardc; docs/output.md).\n"
	          "#   run.sh [--input NAME=FILE.npy]... [--param NAME=FILE.npy]... [--output-dir DIR]\n"
	          "#          [--steps K] [-- extra mpirun arguments]\n"
	          "# Builds the programs first (make, BACKEND=cpu|cuda from the environment, default cpu).\n"
	          "set -eu\nhere=$(cd \"$(dirname \"$0\")\" && pwd)\nbackend=${BACKEND:-cpu}\nranks=%lld\n"
	          "usage() { sed -n '3,4s/^# *//p' \"$0\"; }\n"
	          "args=() extra=() out=\"$here/results\"\n"
	          "while [ $# -gt 0 ]; do\n"
	          "\tcase $1 in\n"
	          "\t--) shift; extra=(\"$@\"); break ;;\n"
	          "\t-h|--help) usage; exit 0 ;;\n"
	          "\t--output-dir) [ $# -ge 2 ] || { echo \"run.sh: $1 needs a value\" >&2; exit 2; }; out=$2; shift 2 ;;\n"
	          "\t--output-dir=*) out=${1#*=}; shift ;;\n"
	          "\t--input|--param|--steps)\n"
	          "\t\t[ $# -ge 2 ] || { echo \"run.sh: $1 needs a value\" >&2; exit 2; }; args+=(\"$1\" \"$2\"); shift 2 ;;\n"
	          "\t--input=*|--param=*|--steps=*) args+=(\"$1\"); shift ;;\n"
	          "\t*) echo \"run.sh: unknown argument '$1'\" >&2; usage >&2; exit 2 ;;\n"
	          "\tesac\ndone\n"
	          "cores=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)\n"
	          "make -s -j \"$cores\" -C \"$here\" BACKEND=\"$backend\" >&2\n"
	          "mpi=(mpirun --oversubscribe)\n"
	          "# Fewer ranks than cores: unbound, each rank's BLAS takes its share of the cores;\n"
	          "# more: a rank waiting in a collective yields its core to the others.\n"
	          "if ((ranks < cores)); then mpi+=(--bind-to none); elif ((ranks > cores)); then mpi+=(--mca mpi_yield_when_idle 1); fi\n"
	          "[ \"$(id -u)\" != 0 ] || mpi+=(--allow-run-as-root)\n"
	          "app=()\n"
	          "for ((r = 0; r < ranks; r++)); do\n"
	          "\t[ $r = 0 ] || app+=(:)\n"
	          "\tapp+=(-np 1 \"$here/bin/$backend/rank_$r\" ${args[@]+\"${args[@]}\"} --output-dir \"$out\")\n"
	          "done\n"
	          "exec \"${mpi[@]}\" ${extra[@]+\"${extra[@]}\"} \"${app[@]}\"\n",
	          (long long)l->device_num, l->flat->g->name, (long long)l->device_num);
}
