/* fuse.c: operators whose work a later operator's kernel does as it reads.
 *
 * Requires a Lowered program, with its backward pass when it trains, so that
 * every reader of a value is seen. Three patterns, all in Float32, all giving
 * the unfused program's values bit for bit (each intermediate is rounded to
 * Float32 as its own kernel rounded it), and one fold:
 * - attention's scaling: a Mul of a tensor by a one-element tensor whose only
 *   reader is a Softmax along an axis it holds whole. The Softmax's kernel
 *   reads x * scale (sc_softmax_scaled); the Mul has no code and its result
 *   no buffer: one pass over the attention scores and one buffer of their
 *   size fewer, in training too, since the Mul's adjoint reads its operands
 *   and never its result. With a mask, an Add of a tensor that broadcasts
 *   whose only reader is a last-axis Softmax, the kernel reads x + mask, or
 *   x * scale + mask when the Add's other operand is such a Mul read only
 *   there (sc_softmax_masked; in training the Add's adjoint reads the
 *   product, so only the Add rides on the Softmax then).
 * - a BiasAdd whose first reader is a unary elementwise operator (the MLP's
 *   bias and GeLU): one kernel adds the bias and applies the operator
 *   (sc_bias_unary), writing the sum too when something reads it later (the
 *   GeLU's adjoint, in training), else the sum has no buffer.
 * - a BiasAdd whose first reader is an Add of two tensors of its own shape
 *   (the residual after a projection or the MLP): one kernel adds the bias
 *   and the other operand (sc_bias_add_residual), writing the sum too when
 *   something reads it later (the Add's adjoint, in training).
 * Then chains, in any float type: forward elementwise operators (the rows of
 * UNARY_OPS and BINARY_OPS, BiasAdd) and Casts between float types, each
 * first read by the next, every operand of the result's size, one element
 * or a vector along the last axis, every result of the chain's size. One
 * sc_ew_chain call at the last one's place computes them all, each as its
 * own kernel would (a half result rounded once): the unfused program's
 * values bit for bit, in one pass instead of one per operator and one per
 * half operand widened or result rounded. A member's result that something
 * outside the chain reads (an adjoint, a return) is stored too, which needs
 * every such reader after the chain's last operator; the rest have no
 * buffer. The three patterns above are kept where they apply.
 * Last, a Transpose keeping the last axis last between BatchMatMuls and
 * the rest (fold_transposes): no copy, the BatchMatMuls take strides.
 *
 * The patterns are found first (Mark, this file's own), then the program
 * is rewritten (rewrite): the operator whose kernel does the work becomes
 * a fused kind (ops.h, FUSED_OPS), its operands the values the group reads
 * from outside it; each operator it computes becomes a placeholder (Fused):
 * no code, its result stored only when the kernel writes it too. Positions
 * stay, so adjoints still name the operators they differentiate; what the
 * operators were, which placeholder a kernel stores and a fold's direction
 * are the side table Lowered.fusion. The dumps and the program say which
 * operator carries which (docs/output.md). */
#include "shardc.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

/* What the patterns decide about operator i, before the rewrite. */
typedef struct {
	int from;             /* an earlier operator whose result i's kernel computes as it reads; -1 */
	bool fused, writes;   /* computed by a later kernel; which stores the result too */
	int chain;            /* a member of the elementwise chain ending at this position; -1 */
	TransposeFold fold;
} Mark;

static void fold_transposes(Lowered *l, Mark *mk);
static void fold_widening_casts(Lowered *l);
static void fuse_norm_grads(Lowered *l, Mark *mk, const int *first, const int *prev);
static int *previous_adjoints(const Lowered *l);
static int chain_operands(const Lowered *l, const int *m, int n, int *ins);
enum { MAX_CHAIN = 16 };

static int64_t count(const LValue *v)
{
	int64_t n = 1;
	for (int d = 0; d < v->type.rank; d++)
		n *= v->type.dims[d];
	return n;
}

static bool same_dims(const LValue *a, const LValue *b)
{
	return a->type.rank == b->type.rank &&
	       !memcmp(a->type.dims, b->type.dims, sizeof(int64_t) * (size_t)a->type.rank);
}

/* The Mul's operand that scales (one element), or -1 when it is not x * s
 * with x of the Mul's own shape. */
static int scale_operand(const Lowered *l, const LOp *mul)
{
	const LValue *y = &l->values[mul->result];
	for (int k = 1; k >= 0; k--) {
		const LValue *s = &l->values[mul->in[k]], *x = &l->values[mul->in[1 - k]];
		if (count(s) == 1 && same_dims(x, y) && s->type.dtype == DT_F32 && x->type.dtype == DT_F32)
			return k;
	}
	return -1;
}

/* The Add's operand that is added (the mask), or -1 when neither is: the
 * other has the Add's own shape, the mask any shape that broadcasts to it
 * (the second when both could be). */
static int mask_operand(const Lowered *l, const LOp *add)
{
	const LValue *y = &l->values[add->result];
	for (int k = 1; k >= 0; k--)
		if (same_dims(&l->values[add->in[1 - k]], y))
			return k;
	return -1;
}

/* A Softmax along its last axis. */
static bool last_axis(const Lowered *l, const LOp *softmax)
{
	int r = l->values[softmax->result].type.rank;
	int64_t a = softmax->a.has_axis && softmax->a.naxes ? softmax->a.axes[0] : -1;
	return r >= 1 && (a == -1 || a == r - 1);
}

static bool all_f32(const Lowered *l, const LOp *o)
{
	for (int k = 0; k < o->nin; k++)
		if (l->values[o->in[k]].type.dtype != DT_F32)
			return false;
	return l->values[o->result].type.dtype == DT_F32;
}

/* A forward operator that computes (no collective or slice) in Float32. */
static bool plain(const Lowered *l, const Mark *mk, int i)
{
	const LOp *o = &l->ops[i];
	return o->grad == GRAD_NONE && !o->step && !mk[i].fused && mk[i].from < 0 && all_f32(l, o);
}

/* An Add at position i of two tensors of its own shape, one of them a
 * BiasAdd's result read first here: the BiasAdd rides on the Add's kernel. */
static void fuse_residual(Lowered *l, Mark *mk, int i, const int *producer, const int *first, const int *readers)
{
	const LOp *add = &l->ops[i];
	const LValue *y = &l->values[add->result];
	if (add->nin != 2 || add->in[0] == add->in[1] || !same_dims(&l->values[add->in[0]], y) ||
	    !same_dims(&l->values[add->in[1]], y))
		return;
	for (int k = 0; k < 2; k++) {
		int v = add->in[k], p = producer[v];
		if (p < 0 || first[v] != i || l->ops[p].op != OP_BIAS_ADD || !plain(l, mk, p))
			continue;
		mk[i].from = p;
		mk[p].fused = true;
		mk[p].writes = readers[v] > 1;
		return;
	}
}

static void read_at(int *readers, int *first, int v, int at)
{
	readers[v]++;
	if (first[v] < 0 || at < first[v])
		first[v] = at;
}

/* Whether f's adjoint reads f's result: counted for every operator but a
 * binary elementwise one (sc_binary_grad reads the operands and dy), more
 * than its row's grad column says (GR_Y), which is what the compiler has
 * always written: a chain stores a Log's, a GeLU's, a Cast's result that
 * only its own adjoint would read (the column alone drops those stores;
 * the output then changes). A half adjoint widens no more than its column
 * says either (plan.c, widened). */
static bool adjoint_reads_y(const LOp *f)
{
	return !op_is_binary(f->op);
}

/* Whether f's adjoint reads f's operands: as its row's grad column says
 * (ops.h, GR_X). */
static bool adjoint_reads_x(const LOp *f)
{
	return (op_info[f->op].grad & GR_X) != 0;
}

/* ---- elementwise chains ---- */

/* An operator a chain may hold: forward, computing (no collective or
 * slice), not in a pattern above, every value a float of the one size n
 * and last dim c, but for operands of one element or a last-axis vector. */
static bool chainable(const Lowered *l, const Mark *mk, int i, int64_t n, int64_t c)
{
	const LOp *o = &l->ops[i];
	if (o->grad != GRAD_NONE || o->step || op_shadow(l, i) || mk[i].fused || mk[i].from >= 0 || mk[i].chain >= 0)
		return false;
	if (!op_is_unary(o->op) && !op_is_binary(o->op) && o->op != OP_BIAS_ADD && o->op != OP_CAST)
		return false;
	const LValue *y = &l->values[o->result];
	int64_t yc = y->type.rank ? y->type.dims[y->type.rank - 1] : 1;
	if (!dtype_is_float(y->type.dtype) || count(y) != n || yc != c)
		return false;
	for (int k = 0; k < o->nin; k++) {
		const LValue *x = &l->values[o->in[k]];
		int64_t xn = count(x);
		if (!dtype_is_float(x->type.dtype) || (xn != n && xn != 1 && (xn != c || x->type.dims[x->type.rank - 1] != c)))
			return false;
	}
	return true;
}

/* Whether operator o (of the program's list) reads value v, as
 * fuse_operators counts readers. */
static bool reads(const Lowered *l, const LOp *o, int v)
{
	if (op_shadow(l, (int)(o - l->ops)))
		return false;
	for (int k = 0; k < o->nin; k++)
		if (o->in[k] == v)
			return true;
	if (o->grad != GRAD_ADJOINT)
		return false;
	const LOp *f = &l->ops[o->of];
	if (adjoint_reads_y(f) && f->result == v)
		return true;
	for (int k = 0; adjoint_reads_x(f) && k < f->nin; k++)
		if (f->in[k] == v)
			return true;
	return false;
}

static bool member_of(const int *m, int n, int i)
{
	for (int k = 0; k < n; k++)
		if (m[k] == i)
			return true;
	return false;
}

/* The runtime's limits on one call (SC_EW_MAX_STEPS, SC_EW_MAX_INS). */
enum { EW_MAX_STEPS = 16, EW_MAX_INS = 8 };

/* Whether chain m (n members) keeps to EW_MAX_STEPS and EW_MAX_INS: a
 * member takes one step for its operator, one to round a half result, one
 * to store; each outside value it reads is an operand. Stores are not
 * known yet: counted for every member. */
static bool fits(const Lowered *l, const int *m, int n)
{
	int steps = 0, ins[2 * MAX_CHAIN];
	for (int k = 0; k < n; k++) {
		const LOp *o = &l->ops[m[k]];
		DType t = l->values[o->result].type.dtype;
		steps += (o->op != OP_CAST) + (t != DT_F32) + 1;
	}
	return steps <= EW_MAX_STEPS && chain_operands(l, m, n, ins) <= EW_MAX_INS;
}

/* The values chain m (n members) reads from outside it, in order of first
 * read, into ins (2 n of them at most); returns how many. */
static int chain_operands(const Lowered *l, const int *m, int n, int *ins)
{
	int nin = 0;
	for (int k = 0; k < n; k++)
		for (int j = 0; j < l->ops[m[k]].nin; j++) {
			int v = l->ops[m[k]].in[j], seen = 0;
			for (int q = 0; q < k && !seen; q++)   /* an earlier member's result */
				seen = l->ops[m[q]].result == v;
			for (int q = 0; q < nin && !seen; q++)
				seen = ins[q] == v;
			if (!seen)
				ins[nin++] = v;
		}
	return nin;
}

/* The chain that starts at operator i, if it has two members or more. */
static void find_chain(Lowered *l, Mark *mk, int i, const int *first, const int *readers)
{
	const LValue *y = &l->values[l->ops[i].result];
	int64_t n = count(y), c = y->type.rank ? y->type.dims[y->type.rank - 1] : 1;
	if (!chainable(l, mk, i, n, c))
		return;
	int m[MAX_CHAIN], nm = 1;
	m[0] = i;
	while (nm < MAX_CHAIN) {
		int j = first[l->ops[m[nm - 1]].result];
		if (j < 0 || !chainable(l, mk, j, n, c) || (j < l->nfwd) != (i < l->nfwd) ||
		    (j >= l->nfwd && op_recomputes(l, j) < 0))
			break;
		m[nm] = j;
		if (!fits(l, m, nm + 1))
			break;
		/* every reader outside the chain of a member's result comes after j */
		bool late = true;
		for (int p = i + 1; p <= j && late; p++)
			for (int k = 0; k < nm && late; k++)
				late = member_of(m, nm + 1, p) || !reads(l, &l->ops[p], l->ops[m[k]].result);
		if (!late)
			break;
		nm++;
	}
	if (nm < 2)
		return;
	int end = m[nm - 1];
	for (int k = 0; k < nm; k++) {
		const LOp *o = &l->ops[m[k]];
		mk[m[k]].chain = end;
		if (k == nm - 1)
			break;
		int inside = 0;
		for (int q = 0; q < nm; q++)
			for (int j = 0; j < l->ops[m[q]].nin; j++)
				inside += l->ops[m[q]].in[j] == o->result;
		mk[m[k]].fused = true;
		mk[m[k]].writes = readers[o->result] > inside;
	}
}

static void rewrite(Lowered *l, const Mark *mk, const int *prev);

void fuse_operators(Lowered *l)
{
	Mark *mk = xmalloc(sizeof *mk * (size_t)(l->nops ? l->nops : 1));
	for (int i = 0; i < l->nops; i++)
		mk[i] = (Mark){.from = -1, .chain = -1};
	int nv = l->nvalues, n = nv ? nv : 1;
	int *readers = xcalloc((size_t)n, sizeof *readers);
	int *first = xmalloc(sizeof(int) * (size_t)n);     /* the first reader's position */
	int *producer = xmalloc(sizeof(int) * (size_t)n);
	for (int v = 0; v < nv; v++)
		producer[v] = first[v] = -1;
	for (int i = 0; i < l->nops; i++) {
		const LOp *o = &l->ops[i];
		if (op_shadow(l, i))   /* never run: its adjoint's reads are counted there */
			continue;
		producer[o->result] = i;
		for (int k = 0; k < o->nin; k++)
			read_at(readers, first, o->in[k], i);
		/* an adjoint reads its operator's result and operands as
		 * adjoint_reads_y and _x say (its operator may be a recomputed clone,
		 * an operand then the kept value) */
		if (o->grad == GRAD_ADJOINT) {
			const LOp *f = &l->ops[o->of];
			if (adjoint_reads_y(f))
				read_at(readers, first, f->result, i);
			for (int k = 0; adjoint_reads_x(f) && k < f->nin; k++)
				read_at(readers, first, f->in[k], i);
		}
	}
	/* what the program reads after the operators: never fused away */
	for (int k = 0; k < l->nret; k++)
		readers[l->rets[k]] += 2;
	if (l->loss >= 0)
		readers[l->loss] += 2;
	if (l->overflow >= 0)
		readers[l->overflow] += 2;
	for (int v = 0; l->grad && v < l->nparams; v++)
		if (l->grad[v] >= 0)
			readers[l->grad[v]] += 2;
	for (int i = 0; i < l->nops; i++) {   /* the forward operators, and their clones (recompute.c) */
		const LOp *o = &l->ops[i];
		if ((i >= l->nfwd && op_recomputes(l, i) < 0) || op_shadow(l, i) || o->nin < 1 || !plain(l, mk, i))
			continue;
		if (o->op == OP_ADD) {
			fuse_residual(l, mk, i, producer, first, readers);
			continue;
		}
		int v = o->in[0], p = producer[v];
		if (p < 0 || !plain(l, mk, p) || first[v] != i)
			continue;
		const LOp *from = &l->ops[p];
		bool softmax = o->op == OP_SOFTMAX && !o->lay && o->nin == 1 && readers[v] == 1;
		if (softmax && from->op == OP_MUL && scale_operand(l, from) >= 0) {
			mk[i].from = p;
			mk[p].fused = true;
		} else if (softmax && from->op == OP_ADD && last_axis(l, o) && mask_operand(l, from) >= 0) {
			mk[i].from = p;
			mk[p].fused = true;
			int t = from->in[1 - mask_operand(l, from)], pt = producer[t];   /* x * scale, the mask added */
			if (pt >= 0 && first[t] == p && readers[t] == 1 && l->ops[pt].op == OP_MUL && plain(l, mk, pt) &&
			    scale_operand(l, &l->ops[pt]) >= 0) {
				mk[p].from = pt;
				mk[pt].fused = true;
			}
		} else if (op_is_unary(o->op) && from->op == OP_BIAS_ADD) {
			mk[i].from = p;
			mk[p].fused = true;
			mk[p].writes = readers[v] > 1;
		}
	}
	for (int i = 0; i < l->nops; i++)
		if (!((i >= l->nfwd && op_recomputes(l, i) < 0) || op_shadow(l, i)))
			find_chain(l, mk, i, first, readers);
	int *prev = previous_adjoints(l);   /* the operators keep their places, adjoints and shadows from here on */
	fuse_norm_grads(l, mk, first, prev);
	free(readers);
	free(first);
	free(producer);
	fold_transposes(l, mk);
	rewrite(l, mk, prev);
	free(prev);
	free(mk);
	fold_widening_casts(l);
}

/* ---- products on half operands ---- */

static bool is_matmul(OpKind op)
{
	return op == OP_MATMUL || op == OP_BATCH_MATMUL || op == OP_BATCH_MATMUL_STRIDED;
}

bool matmul_on_halves(const Lowered *l, const LOp *o)
{
	int x0, x1;
	if (o->grad == GRAD_NONE && is_matmul(o->op)) {
		x0 = o->in[0];
		x1 = o->in[1];
	} else if (o->grad == GRAD_ADJOINT && is_matmul(differentiated(l, o)->op)) {
		x0 = o->in[0];                               /* dy */
		x1 = differentiated(l, o)->in[1 - o->k];     /* the other operand */
	} else {
		return false;
	}
	DType t = l->values[x0].type.dtype;
	return dtype_is_half(t) && l->values[x1].type.dtype == t;
}

/* ---- half products written in Float32 for the Cast that widens them ----
 *
 * A MatMul on two half operands whose result only a Cast to Float32 reads
 * (a language model's logits, widened for the cross-entropy; a weight's
 * gradient, widened for its Float32 parameter): the product writes the
 * Float32 value itself, rounded in place to the half type (sc_round), so the
 * numbers are the ones the Cast made, without the half buffer beside the
 * Float32 one at the step's peak. Its result becomes a Float32 value and the
 * Cast copies nothing (plan.c: a view). Readers are counted as the grad
 * column says (plan.c's lives do the same). */
static void fold_widening_casts(Lowered *l)
{
	int nv = l->nvalues;
	int *readers = xcalloc((size_t)(nv ? nv : 1), sizeof *readers), *reader = xmalloc(sizeof(int) * (size_t)(nv ? nv : 1));
	for (int i = 0; i < l->nops; i++) {
		const LOp *o = &l->ops[i];
		l->fusion[i].rounds = DT_F32;
		if (op_shadow(l, i))
			continue;
		for (int k = 0; k < o->nin; k++)
			readers[o->in[k]]++, reader[o->in[k]] = i;
		if (o->grad == GRAD_ADJOINT) {
			const LOp *f = differentiated(l, o);
			for (int k = 0; k < f->nin && (op_info[f->op].grad & GR_X); k++)
				readers[f->in[k]] += 2;
			if (op_info[f->op].grad & GR_Y)
				readers[f->result] += 2;
		}
	}
	for (int k = 0; k < l->nret; k++)
		readers[l->rets[k]] += 2;
	if (l->loss >= 0)
		readers[l->loss] += 2;
	for (int v = 0; l->grad && v < l->nparams; v++)
		if (l->grad[v] >= 0)
			readers[l->grad[v]] += 2;
	for (int i = 0; i < l->nops; i++) {
		const LOp *o = &l->ops[i];
		bool half_product = o->op == OP_MATMUL && matmul_on_halves(l, o) &&
		                    l->values[o->result].type.dtype == l->values[o->in[0]].type.dtype;
		if (!half_product || op_shadow(l, i) || readers[o->result] != 1)
			continue;
		const LOp *c = &l->ops[reader[o->result]];
		bool widens = c->op == OP_CAST && (c->grad == GRAD_NONE || c->grad == GRAD_ADJOINT) &&
		              l->values[c->result].type.dtype == DT_F32;
		if (!widens || op_shadow(l, reader[o->result]))
			continue;
		LValue *r = &l->values[o->result];
		l->fusion[i].rounds = r->type.dtype;
		r->type.dtype = DT_F32;
	}
	free(readers);
	free(reader);
}

/* ---- Transposes folded into BatchMatMul strides ---- */

/* A BatchMatMul's kernel reads its operands and writes its result with
 * strides (sc_batch_matmul_strided), so a Transpose between it and another
 * BatchMatMul, or between it and a Reshape, need not copy when it keeps the
 * last axis last (each matrix row stays contiguous): attention's (0, 2, 1, 3)
 * on q, k, v and the context, and their adjoints. Products of two half
 * operands read and write them in place too (sc_batch_matmul_half_strided,
 * which rounds its result into the half buffer itself); a broadcast
 * BatchMatMul's gradient, summed down to its input after the product, does
 * not. */

/* A BatchMatMul, or a BatchMatMul's adjoint writing its input's gradient
 * whole: the dtype its two operands share (dy and the other operand, for
 * the adjoint), else -1. */
static int bmm_operands(const Lowered *l, const LOp *o)
{
	if (op_shadow(l, (int)(o - l->ops)) || o->step)
		return -1;
	int a, b;
	if (o->grad == GRAD_NONE && o->op == OP_BATCH_MATMUL) {
		a = o->in[0];
		b = o->in[1];
	} else if (o->grad == GRAD_ADJOINT && l->ops[o->of].op == OP_BATCH_MATMUL) {
		const LOp *f = &l->ops[o->of];
		const LValue *y = &l->values[f->result], *x = &l->values[f->in[o->k]];
		int nb = y->type.rank - 2;
		if (x->type.rank != y->type.rank || memcmp(y->type.dims, x->type.dims, sizeof(int64_t) * (size_t)nb))
			return -1;
		a = o->in[0];
		b = f->in[1 - o->k];
	} else {
		return -1;
	}
	DType t = l->values[a].type.dtype;
	return l->values[b].type.dtype == t && dtype_is_float(t) ? (int)t : -1;
}

static bool bmm_reads_strided(const Lowered *l, const LOp *o)
{
	return bmm_operands(l, o) >= 0;
}

static bool bmm_writes_strided(const Lowered *l, const LOp *o)
{
	int t = bmm_operands(l, o);
	return t >= 0 && l->values[o->result].type.dtype == (DType)t;
}

/* A Transpose or a Transpose's adjoint that keeps the last axis: its
 * permutation (result axis d is operand axis perm[d]), else false. */
static bool transpose_perm(const Lowered *l, const Mark *mk, int i, int64_t *perm)
{
	const LOp *o = unfused(l, i), *f = o->grad == GRAD_ADJOINT ? differentiated(l, o) : o;
	if (op_shadow(l, i) || o->step || (mk && (mk[i].fused || mk[i].from >= 0)) || f->op != OP_TRANSPOSE ||
	    (o->grad != GRAD_NONE && o->grad != GRAD_ADJOINT) || !dtype_is_float(l->values[o->result].type.dtype))
		return false;
	int r = f->a.nperm;
	for (int d = 0; d < r; d++) {
		if (o->grad == GRAD_ADJOINT)
			perm[f->a.perm[d]] = d;
		else
			perm[d] = f->a.perm[d];
	}
	return r >= 2 && perm[r - 1] == r - 1;
}

/* For each value, whether something other than a BatchMatMul (or the
 * Transpose deciding it) reads it, and which operator writes it. */
typedef struct {
	int *others;     /* (nvalues) readers that are not BatchMatMuls */
	int *producer;   /* (nvalues) the operator that computes it, -1 */
} Reads;

static void count_reads(const Lowered *l, const Mark *mk, Reads *r)
{
	int n = l->nvalues ? l->nvalues : 1;
	r->others = xcalloc((size_t)n, sizeof(int));
	r->producer = xmalloc(sizeof(int) * (size_t)n);
	for (int v = 0; v < l->nvalues; v++)
		r->producer[v] = -1;
	for (int i = 0; i < l->nops; i++) {
		const LOp *o = &l->ops[i];
		if (op_shadow(l, i))
			continue;
		r->producer[o->result] = i;
		bool bmm = bmm_reads_strided(l, o);
		for (int k = 0; k < o->nin; k++)
			r->others[o->in[k]] += !bmm;
		for (int f = mk[i].from; f >= 0; f = mk[f].from)   /* a fused kernel reads its carried operators' operands */
			for (int k = 0; k < l->ops[f].nin; k++)
				r->others[l->ops[f].in[k]]++;
		/* an adjoint reads its operator's operands and result, as plan.c's
		 * lifetimes count them, except a Transpose's (dy alone) */
		if (o->grad == GRAD_ADJOINT && l->ops[o->of].op != OP_TRANSPOSE) {
			const LOp *f = &l->ops[o->of];
			for (int k = 0; k < f->nin; k++)
				r->others[f->in[k]] += !bmm;
			r->others[f->result] += !bmm;
		}
	}
	for (int k = 0; k < l->nret; k++)
		r->others[l->rets[k]]++;
	if (l->loss >= 0)
		r->others[l->loss]++;
	if (l->overflow >= 0)
		r->others[l->overflow]++;
	for (int v = 0; l->grad && v < l->nparams; v++)
		if (l->grad[v] >= 0)
			r->others[l->grad[v]]++;
}

/* The operator that lays value v out with strides (a fold of mk's), or -1. */
static void fold_transposes(Lowered *l, Mark *mk)
{
	Reads r;
	count_reads(l, mk, &r);
	bool *strided = xcalloc((size_t)(l->nvalues ? l->nvalues : 1), sizeof *strided);   /* by a fold so far */
	for (int i = 0; i < l->nops; i++) {
		const LOp *t = &l->ops[i];
		int64_t perm[MAX_DIMS];
		if (!transpose_perm(l, mk, i, perm))
			continue;
		int u = t->in[0], w = t->result, pu = r.producer[u];
		if (u < l->nparams || pu < 0 || mk[pu].fused || strided[u])
			continue;
		if (r.others[w] == 0) {
			mk[i].fold = FOLD_READ;
			strided[w] = true;
		} else if (r.others[u] == 1 && bmm_writes_strided(l, &l->ops[pu])) {   /* the one other reader: t */
			mk[i].fold = FOLD_WRITE;
			strided[u] = true;
		}
	}
	free(strided);
	free(r.others);
	free(r.producer);
}

const LOp *strided_by(const Lowered *l, int v)
{
	return l->strided && l->strided[v] >= 0 ? &l->ops[l->strided[v]] : NULL;
}

static void row_major(const LValue *v, int64_t *strides)
{
	int64_t s = 1;
	for (int d = v->type.rank - 1; d >= 0; d--) {
		strides[d] = s;
		s *= v->type.dims[d];
	}
}

void value_strides(const Lowered *l, int v, int64_t *strides)
{
	const LOp *t = strided_by(l, v);
	if (!t) {
		row_major(&l->values[v], strides);
		return;
	}
	int64_t perm[MAX_DIMS], laid[MAX_DIMS];
	int at = (int)(t - l->ops);
	transpose_perm(l, NULL, at, perm);
	int r = l->values[v].type.rank;
	if (l->fusion[at].fold == FOLD_READ) {   /* v = t's result: axis d is the operand's axis perm[d] */
		row_major(&l->values[t->in[0]], laid);
		for (int d = 0; d < r; d++)
			strides[d] = laid[perm[d]];
	} else {                      /* v = t's operand: axis perm[d] is the result's axis d */
		row_major(&l->values[t->result], laid);
		for (int d = 0; d < r; d++)
			strides[perm[d]] = laid[d];
	}
}

/* ---- a normalizer's gradients in one call ---- */

/* The adjoints of one Float32 normalizer (x's, gamma's, beta's: one each,
 * from the same dy) run as one sc_norm_grad call at the last one's
 * place, which computes the row statistics once for all (and a
 * FlashAttentionScore's, q's, k's and v's, one sc_flash_attention_grad
 * call: its row statistics and probabilities once): the earlier ones
 * are fused, their results written by that call (Fusion.writes), when
 * nothing reads them before it (one that is read sooner carries those
 * before it). Each gradient is the kernel's alone, so the
 * values are the separate calls' bit for bit. */
static void fuse_norm_grads(Lowered *l, Mark *mk, const int *first, const int *prev)
{
	for (int c = l->nops - 1; c >= 0; c--) {
		const LOp *o = &l->ops[c];
		OpKind fk = l->ops[o->of].op;
		if (o->grad != GRAD_ADJOINT || op_shadow(l, c) || mk[c].fused || !(op_is_norm(fk) || fk == OP_FLASH_ATTENTION) ||
		    !all_f32(l, &l->ops[o->of]) || !all_f32(l, o))
			continue;
		for (int j = prev[c]; j >= 0; j = prev[j]) {   /* back to one that cannot join (it carries those before it) */
			const LOp *s = &l->ops[j];
			if (mk[j].fused || s->in[0] != o->in[0] || !all_f32(l, s) ||
			    (first[s->result] >= 0 && first[s->result] <= c))
				break;
			mk[j].fused = true;
			mk[j].writes = true;
		}
	}
}

/* The adjoints of the same normalizer whose gradients the adjoint at
 * position carrier writes too, into at (4 at most); returns how many.
 * prev: each adjoint's previous adjoint of the same operator (no shadow), -1. */
static int norm_grads_of(const Lowered *l, const Mark *mk, const int *prev, int carrier, int *at)
{
	int n = 0;
	if (l->ops[carrier].grad != GRAD_ADJOINT || mk[carrier].fused)
		return 0;
	for (int j = prev[carrier]; j >= 0; j = prev[j]) {
		if (!mk[j].fused)   /* it carries those before it */
			break;
		if (n == 4)
			die("a normalizer with more than five gradients");
		at[n++] = j;
	}
	return n;
}

/* prev for norm_grads_of, malloc'd: one pass instead of a walk back from
 * every adjoint. */
static int *previous_adjoints(const Lowered *l)
{
	int *prev = xmalloc(sizeof(int) * (size_t)(l->nops ? l->nops : 1));
	int *last = xmalloc(sizeof(int) * (size_t)(l->nops ? l->nops : 1));
	for (int i = 0; i < l->nops; i++)
		last[i] = -1;
	for (int i = 0; i < l->nops; i++) {
		const LOp *o = &l->ops[i];
		prev[i] = o->grad == GRAD_ADJOINT ? last[o->of] : -1;
		if (o->grad == GRAD_ADJOINT && !op_shadow(l, i))
			last[o->of] = i;
	}
	free(last);
	return prev;
}

/* ---- the rewrite: fused kinds, placeholders, the side table ---- */

/* Operator i becomes kind op, its operands in[0..n) when in is not NULL;
 * the side table keeps what it was. */
static void become(Lowered *l, int i, OpKind op, const int *in, int n)
{
	LOp *o = &l->ops[i], *was = arena_alloc(l->arena, sizeof *was);
	*was = *o;
	l->fusion[i].was = was;
	o->op = op;
	if (in) {
		o->in = arena_alloc(l->arena, sizeof(int) * (size_t)(n ? n : 1));
		memcpy(o->in, in, sizeof(int) * (size_t)n);
		o->nin = n;
	}
}

/* The kind of pattern carrier i (mk[i].from >= 0) and its operands, the
 * values its group reads from outside it. */
static OpKind pattern_kind(const Lowered *l, const Mark *mk, int i, int *in, int *n)
{
	const LOp *o = &l->ops[i], *f = unfused(l, mk[i].from);   /* f: a placeholder by now */
	if (o->op == OP_SOFTMAX && f->op == OP_MUL) {   /* softmax(x * scale): (x, scale) */
		int s = scale_operand(l, f);
		in[0] = f->in[1 - s], in[1] = f->in[s], *n = 2;
		return OP_SOFTMAX_SCALED;
	}
	if (o->op == OP_SOFTMAX) {   /* softmax([x * scale] + mask): (x, [scale,] mask) */
		int m = mask_operand(l, f), mul = mk[mk[i].from].from;
		*n = 0;
		if (mul >= 0) {
			int s = scale_operand(l, unfused(l, mul));
			in[(*n)++] = unfused(l, mul)->in[1 - s];
			in[(*n)++] = unfused(l, mul)->in[s];
		} else
			in[(*n)++] = f->in[1 - m];
		in[(*n)++] = f->in[m];
		return OP_SOFTMAX_MASKED;
	}
	in[0] = f->in[0], in[1] = f->in[1], *n = 2;   /* the BiasAdd's (x, b) */
	if (op_is_unary(o->op))
		return OP_BIAS_UNARY;
	in[2] = o->in[0] == f->result ? o->in[1] : o->in[0], *n = 3;   /* and the residual */
	return OP_BIAS_ADD_RESIDUAL;
}

/* A BatchMatMul, or its adjoint, that reads or writes a value a fold lays
 * out with strides. */
static bool strided_bmm(const Lowered *l, const LOp *o)
{
	if (o->op != OP_BATCH_MATMUL || (o->grad != GRAD_NONE && o->grad != GRAD_ADJOINT))
		return false;
	int other = o->grad == GRAD_NONE ? o->in[1] : differentiated(l, o)->in[1 - o->k];
	return strided_by(l, o->in[0]) || strided_by(l, other) || strided_by(l, o->result);
}

static void rewrite(Lowered *l, const Mark *mk, const int *prev)
{
	l->fusion = arena_alloc(l->arena, sizeof *l->fusion * (size_t)(l->nops ? l->nops : 1));
	for (int i = 0; i < l->nops; i++)
		l->fusion[i].into = l->fusion[i].first = l->fusion[i].next = -1;
	/* which kernel computes each fused operator: its reader's (or that
	 * one's reader's: a masked Softmax's Mul), its chain's, its normalizer's */
	for (int i = 0; i < l->nops; i++) {
		if (mk[i].fused)
			continue;
		for (int f = mk[i].from; f >= 0; f = mk[f].from)
			l->fusion[f].into = i;
		int at[4], n = norm_grads_of(l, mk, prev, i, at);
		for (int k = 0; k < n; k++)
			l->fusion[at[k]].into = i;
	}
	for (int i = 0; i < l->nops; i++)
		if (mk[i].fused && mk[i].chain >= 0)
			l->fusion[i].into = mk[i].chain;
	/* each kernel's placeholders as a list, in order (fused_parts) */
	int *tail = xmalloc(sizeof(int) * (size_t)(l->nops ? l->nops : 1));
	for (int i = 0; i < l->nops; i++) {
		int c = l->fusion[i].into;
		if (c < 0)
			continue;
		if (l->fusion[c].first < 0)
			l->fusion[c].first = i;
		else
			l->fusion[tail[c]].next = i;
		tail[c] = i;
	}
	/* each chain's members in order, linked through tail: one pass, not
	 * one scan of the operators before each chain */
	int *members = xmalloc(sizeof(int) * (size_t)(l->nops ? l->nops : 1));
	for (int i = 0; i < l->nops; i++)
		members[i] = tail[i] = -1;
	for (int j = l->nops - 1; j >= 0; j--) {
		int c = mk[j].chain;
		if (c >= j) {
			tail[j] = members[c];
			members[c] = j;
		}
	}
	for (int i = 0; i < l->nops; i++) {
		int in[2 * MAX_CHAIN], n = 0;
		if (mk[i].fused) {
			l->fusion[i].writes = mk[i].writes;
			become(l, i, OP_FUSED, NULL, 0);
		} else if (mk[i].chain == i) {
			int m[MAX_CHAIN], nm = 0;
			for (int j = members[i]; j >= 0; j = tail[j])
				m[nm++] = j;
			n = chain_operands(l, m, nm, in);
			become(l, i, OP_EW_CHAIN, in, n);
		} else if (mk[i].from >= 0) {
			OpKind k = pattern_kind(l, mk, i, in, &n);
			become(l, i, k, in, n);
		} else if (norm_grads_of(l, mk, prev, i, in)) {
			become(l, i, l->ops[l->ops[i].of].op == OP_FLASH_ATTENTION ? OP_FLASH_ATTENTION_GRAD : OP_NORM_GRAD, NULL, 0);
		} else if (mk[i].fold) {
			l->fusion[i].fold = mk[i].fold;
			become(l, i, OP_TRANSPOSE_FOLDED, NULL, 0);
		}
	}
	free(tail);
	free(members);
	l->strided = arena_alloc(l->arena, sizeof(int) * (size_t)(l->nvalues ? l->nvalues : 1));
	for (int v = 0; v < l->nvalues; v++)
		l->strided[v] = -1;
	for (int i = 0; i < l->nops; i++) {   /* which values the folds lay out with strides */
		TransposeFold f = l->ops[i].op == OP_TRANSPOSE_FOLDED ? l->fusion[i].fold : FOLD_NONE;
		if (f != FOLD_NONE) {
			int v = f == FOLD_READ ? l->ops[i].result : l->ops[i].in[0];
			if (l->strided[v] < 0)
				l->strided[v] = i;
		}
	}
	for (int i = 0; i < l->nops; i++)   /* once every fold is in place */
		if (strided_bmm(l, &l->ops[i]))
			become(l, i, OP_BATCH_MATMUL_STRIDED, NULL, 0);
}

const LOp *unfused(const Lowered *l, int i)
{
	return l->fusion && l->fusion[i].was ? l->fusion[i].was : &l->ops[i];
}

const LOp *differentiated(const Lowered *l, const LOp *adjoint)
{
	return unfused(l, adjoint->of);
}

int fused_parts(const Lowered *l, int carrier, int *at)
{
	int n = 0;
	for (int j = l->fusion ? l->fusion[carrier].first : -1; j >= 0; j = l->fusion[j].next) {
		if (n == MAX_PARTS)
			die("a fused kernel computing more than %d operators", MAX_PARTS);
		at[n++] = j;
	}
	return n;
}
