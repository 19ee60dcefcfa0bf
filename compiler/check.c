/* check.c: everything about a module that is not shapes.
 *
 *   check_context     (context.c) the context block over the defaults
 *                     (docs/language.md, Context)
 *   check_names       graph and value names, definition before use, callees
 *                     before calls, attribute names and kinds, strategies and
 *                     layouts decoded, shard and train blocks decoded, the
 *                     size of the entry once Calls are inlined
 *   check_train       (check_train.c) the train block: optimizer, schedule,
 *                     steps, precision, loss scaling (docs/language.md, Training)
 *   check_strategies  (check_strategies.c; needs shapes) one strategy per
 *                     input, one number per dim, slices, device counts,
 *                     layouts' device matrices, dataset_strategy, the train loss
 *
 * Operator-specific rules (MatMul's k, unsplit softmax axes) belong to the
 * parallel core; here only the form of what the user wrote is checked. */
#include "check_internal.h"
#include "conv.h"
#include "pad_v3.h"
#include "misc_ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- names ---- */

/* Open-addressing map from name to id: a graph's values, or the module's graphs. */
typedef struct NameMap {
	const char **keys;
	int *vals;
	int cap;
} NameMap;

static unsigned hash_str(const char *s)
{
	unsigned h = 2166136261u;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

static void map_init(NameMap *nm, int n)
{
	nm->cap = 16;
	while (nm->cap < 2 * n + 1)
		nm->cap *= 2;
	nm->keys = xcalloc((size_t)nm->cap, sizeof *nm->keys);
	nm->vals = xcalloc((size_t)nm->cap, sizeof *nm->vals);
}

static void map_free(NameMap *nm)
{
	free(nm->keys);
	free(nm->vals);
}

/* Returns the slot of `key`: keys[slot] is NULL when absent. */
static int map_slot(const NameMap *nm, const char *key)
{
	unsigned i = hash_str(key) & (unsigned)(nm->cap - 1);
	while (nm->keys[i] && strcmp(nm->keys[i], key) != 0)
		i = (i + 1) & (unsigned)(nm->cap - 1);
	return (int)i;
}

static int resolve_value(Checker *c, const Graph *g, const NameMap *nm, const Lit *ref, int limit)
{
	int slot = map_slot(nm, ref->s);
	if (!nm->keys[slot]) {
		ERR(c, ref->span, "undefined value '%%%s' in @%s", ref->s, g->name);
		return -1;
	}
	int id = nm->vals[slot];
	if (id >= limit) {
		int line, col;
		source_line_col(c->m->src, g->values[id].span.start, &line, &col);
		ERR(c, ref->span, "'%%%s' is used before it is defined (at line %d)", ref->s, line);
		return -1;
	}
	return id;
}

/* ---- attributes ---- */

static bool lit_ints(Checker *c, const Lit *v, int64_t *out, int max, int *n, const char *name)
{
	if (v->kind != LIT_TUPLE) {
		ERR(c, v->span, "'%s' is a tuple of integers, not %s", name, lit_kind_name(v->kind));
		return false;
	}
	if (v->nitems > max) {
		ERR(c, v->span, "'%s' has more than %d entries", name, max);
		return false;
	}
	for (int i = 0; i < v->nitems; i++) {
		if (v->items[i]->kind != LIT_INT) {
			ERR(c, v->items[i]->span, "'%s' is a tuple of integers", name);
			return false;
		}
		out[i] = v->items[i]->i;
	}
	*n = v->nitems;
	return true;
}

static const char *kind_wanted(AttrValueKind k)
{
	switch (k) {
	case AK_BOOL: return "true or false";
	case AK_INT: return "an integer";
	case AK_FLOAT: return "a number";
	case AK_INTS: return "a tuple of integers";
	case AK_AXES: return "an integer or a tuple of integers";
	case AK_DTYPE: return "an element type such as Float16";
	case AK_REDUCE_OP: return "\"sum\", \"max\", \"min\", \"prod\" or \"mean\"";
	case AK_APPROXIMATE: return "\"tanh\" or \"none\"";
	case AK_STRING: return "a string such as \"BNSD\"";
	case AK_GRAPH: return "a graph name such as @f";
	case AK_SHARD: return "a dict {in_strategy: ..., parameter_plan: {...}}";
	case AK_STRATEGY: return "a tuple of strategies";
	}
	return "?";
}

static bool decode_shard(Checker *c, const Graph *caller, const Lit *v, ShardSpec **out);

static bool decode_attr(Checker *c, const Graph *g, Node *n, AttrKind k, const Lit *v)
{
	Attrs *a = &n->a;
	const char *name = attr_info[k].name;
	AttrValueKind kind = attr_info[k].kind;
	bool ok = true;
	if (window_attr(n->op, k) || pad_v3_attr(n->op, k)) {   /* Conv2D's and the pools' own forms (conv.c), PadV3's */
		StrBuf e = {0};
		Span at;
		ok = (window_attr(n->op, k) ? window_decode_attr : pad_v3_decode_attr)(n->op, k, v, a, &e, &at);
		if (!ok)
			ERR(c, at, "%s", e.data);
		sb_free(&e);
		return ok;
	}
	switch (kind) {
	case AK_BOOL: ok = v->kind == LIT_BOOL; break;
	case AK_INT: ok = v->kind == LIT_INT; break;
	case AK_FLOAT: ok = lit_is_number(v); break;
	case AK_INTS: case AK_STRATEGY: case AK_SHARD: ok = true; break;
	case AK_AXES: ok = v->kind == LIT_INT || v->kind == LIT_TUPLE; break;
	case AK_DTYPE: ok = v->kind == LIT_IDENT || v->kind == LIT_STR; break;
	case AK_REDUCE_OP: ok = str_is(v, "sum") || str_is(v, "max") || str_is(v, "min") || str_is(v, "prod") ||
		                         str_is(v, "mean"); break;
	case AK_APPROXIMATE: ok = str_is(v, "tanh") || str_is(v, "none"); break;
	case AK_STRING: ok = v->kind == LIT_STR; break;
	case AK_GRAPH: ok = v->kind == LIT_GRAPH; break;
	}
	if (!ok) {
		ERR(c, v->span, "attribute '%s' of %s is %s", name, op_info[n->op].name, kind_wanted(kind));
		return false;
	}
	switch (k) {
	case ATTR_TRANSPOSE_A: a->transpose_a = v->i; break;
	case ATTR_TRANSPOSE_B: a->transpose_b = v->i; break;
	case ATTR_KEEP_DIMS: a->keep_dims = v->i; break;
	case ATTR_EXCLUSIVE: a->exclusive = v->i; break;
	case ATTR_REVERSE: a->reverse = v->i; break;
	case ATTR_ALIGN_CORNERS: a->align_corners = v->i; break;
	case ATTR_HALF_PIXEL_CENTERS: a->half_pixel_centers = v->i; break;
	case ATTR_PAD: a->pad = v->i; break;
	case ATTR_AXIS:
		a->has_axis = true;
		if (v->kind == LIT_INT) {
			a->naxes = 1;
			a->axes[0] = v->i;
		} else {
			a->axis_is_tuple = true;
			return lit_ints(c, v, a->axes, MAX_DIMS, &a->naxes, name);
		}
		break;
	case ATTR_SHAPE: case ATTR_MULTIPLES: case ATTR_SIZE: return lit_ints(c, v, a->shape, MAX_DIMS, &a->nshape, name);
	case ATTR_PERM: return lit_ints(c, v, a->perm, MAX_DIMS, &a->nperm, name);
	case ATTR_BEGIN: return lit_ints(c, v, a->begin, MAX_DIMS, &a->nbegin, name);
	case ATTR_END: return lit_ints(c, v, a->end, MAX_DIMS, &a->nend, name);
	case ATTR_STRIDES: return lit_ints(c, v, a->strides, MAX_DIMS, &a->nstrides, name);
	case ATTR_BEGIN_MASK: case ATTR_END_MASK: case ATTR_ELLIPSIS_MASK: case ATTR_NEW_AXIS_MASK:
	case ATTR_SHRINK_AXIS_MASK:
		if (v->i < 0) {
			ERR(c, v->span, "%s is a bit mask, bit i for entry i of begin, end and strides; it cannot be negative "
			    "(%lld)", name, (long long)v->i);
			return false;
		}
		if (k == ATTR_ELLIPSIS_MASK && v->i) {   /* MindSpore's StridedSliceInfo refuses it the same way */
			ERR(c, v->span, "ellipsis_mask %lld: StridedSlice under MindSpore's parallel modes does not support an "
			    "ellipsis; write the dims out (an entry per dim, begin_mask and end_mask bits for the whole ones) or "
			    "leave the trailing dims out of begin, end and strides", (long long)v->i);
			return false;
		}
		*(k == ATTR_BEGIN_MASK ? &a->begin_mask : k == ATTR_END_MASK ? &a->end_mask
		  : k == ATTR_NEW_AXIS_MASK ? &a->new_axis_mask : k == ATTR_SHRINK_AXIS_MASK ? &a->shrink_axis_mask
		  : &a->ellipsis_mask) = v->i;
		break;
	case ATTR_BEGIN_NORM_AXIS: a->begin_norm_axis = v->i; break;
	case ATTR_BEGIN_PARAMS_AXIS: a->begin_params_axis = v->i; break;
	case ATTR_EPSILON:
		a->epsilon = lit_number(v);
		if (!(a->epsilon >= 0)) {
			ERR(c, v->span, "epsilon must not be negative");
			return false;
		}
		break;
	case ATTR_DTYPE: case ATTR_OUTPUT_TYPE:
		if (!dtype_from_name(v->s, &a->dtype)) {
			ERR(c, v->span, "unknown element type '%s'%s", v->s, DID_YOU_MEAN(v->s, dtype_names, DT_BOOL + 1));
			return false;
		}
		if (k == ATTR_OUTPUT_TYPE && a->dtype != DT_I32) {
			ERR(c, v->span, "%s's output_type is Int32 here, not %s (MindSpore's default; Cast the indices to %s "
			    "after it)", op_info[n->op].name, v->s, v->s);
			return false;
		}
		break;
	case ATTR_K:
		a->topk = v->i;
		if (a->topk < 1) {
			ERR(c, v->span, "k, how many of the largest elements TopK keeps, must be at least 1, not %lld",
			    (long long)a->topk);
			return false;
		}
		break;
	case ATTR_SORTED: a->sorted = v->i; break;
	case ATTR_REDUCE_OP:
		a->reduce_op = str_is(v, "max")    ? REDUCE_MAX_OP
		               : str_is(v, "min")  ? REDUCE_MIN_OP
		               : str_is(v, "prod") ? REDUCE_PROD_OP
		               : str_is(v, "mean") ? REDUCE_MEAN_OP : REDUCE_SUM_OP;
		break;
	case ATTR_GROUP: {
		if (v->kind != LIT_TUPLE || v->nitems == 0) {
			ERR(c, v->span, "'group' is a non-empty tuple of global ranks");
			return false;
		}
		a->group = arena_alloc(c->m->arena, sizeof(int64_t) * (size_t)v->nitems);
		a->ngroup = v->nitems;
		for (int i = 0; i < v->nitems; i++) {
			const Lit *r = v->items[i];
			if (r->kind != LIT_INT || r->i < 0 || r->i >= c->m->ctx.device_num) {
				ERR(c, r->span, "a group member is a rank from 0 to %lld", (long long)c->m->ctx.device_num - 1);
				return false;
			}
			for (int j = 0; j < i; j++)
				if (a->group[j] == r->i) {
					ERR(c, r->span, "rank %lld appears twice in the group", (long long)r->i);
					return false;
				}
			a->group[i] = r->i;
		}
		break;
	}
	case ATTR_SPLIT_AXIS: a->split_axis = v->i; break;
	case ATTR_SIZE_SPLITS:
		if (v->kind != LIT_TUPLE || v->nitems == 0) {
			ERR(c, v->span, "size_splits is a non-empty tuple of the pieces' lengths along split_dim, such as (3, 3, 2)");
			return false;
		}
		a->size_splits = arena_alloc(c->m->arena, sizeof(int64_t) * (size_t)v->nitems);
		return lit_ints(c, v, a->size_splits, v->nitems, &a->nsize_splits, name);
	case ATTR_SPLIT_DIM: a->split_dim = v->i; break;
	case ATTR_INDICES:   /* InplaceAdd, Sub, Update: an int or a tuple of rows (MindSpore's) */
		if (v->kind == LIT_INT) {
			a->indices = arena_alloc(c->m->arena, sizeof(int64_t));
			a->indices[0] = v->i;
			a->nindices = 1;
			break;
		}
		if (v->kind != LIT_TUPLE || v->nitems == 0) {
			ERR(c, v->span, "indices is a row of x's dim 0 or a non-empty tuple of them, such as (0, 2)");
			return false;
		}
		a->indices = arena_alloc(c->m->arena, sizeof(int64_t) * (size_t)v->nitems);
		return lit_ints(c, v, a->indices, v->nitems, &a->nindices, name);
	case ATTR_NUM_SPLIT:
		a->num_split = v->i;
		if (a->num_split < 1) {
			ERR(c, v->span, "num_split, the number of pieces SplitV cuts split_dim into, must be at least 1");
			return false;
		}
		break;
	case ATTR_CONCAT_AXIS: a->concat_axis = v->i; break;
	case ATTR_OFFSET: a->offset = v->i; break;
	case ATTR_APPROXIMATE: a->gelu_erf = str_is(v, "none"); break;
	case ATTR_GRAPH: {
		int slot = map_slot(c->graphs, v->s);
		Graph *callee = c->graphs->keys[slot] ? c->m->graphs[c->graphs->vals[slot]] : NULL;
		if (!callee) {
			ERR(c, v->span, "undefined graph '@%s'", v->s);
			return false;
		}
		if (callee->span.start >= g->span.start) {
			ERR(c, v->span, "graph '@%s' must be defined before @%s calls it", v->s, g->name);
			return false;
		}
		a->callee = callee;
		break;
	}
	case ATTR_SHARD: return decode_shard(c, g, v, &a->shard);
	case ATTR_IN_STRATEGY: return decode_strategy(c, v, &a->in_strategy, "in_strategy");
	case ATTR_OUT_STRATEGY: return decode_strategy(c, v, &a->out_strategy, "out_strategy");
	case ATTR_RECOMPUTE: a->recompute = v->i; break;
	case ATTR_PIPELINE_STAGE:
		if (c->m->ctx.pipeline_stages == 0) {
			ERR(c, v->span, "pipeline_stage %lld with pipeline_stages \"auto\": the search places the stages "
			    "(give pipeline_stages a number to place them yourself)", (long long)v->i);
			return false;
		}
		if (v->i < 0 || v->i >= c->m->ctx.pipeline_stages) {
			ERR(c, v->span, "pipeline_stage %lld is not a stage of this model: the context's pipeline_stages is "
			    "%lld, so stages are 0 to %lld%s", (long long)v->i, (long long)c->m->ctx.pipeline_stages,
			    (long long)c->m->ctx.pipeline_stages - 1, c->m->ctx.pipeline_stages == 1 ?
			    " (set pipeline_stages: P in the context to run the layers on P groups of devices)" : "");
			return false;
		}
		a->pipeline_stage = v->i;
		break;
	case ATTR_START: a->start = lit_number(v); break;
	case ATTR_STOP: a->stop = lit_number(v); break;
	case ATTR_STEP:
		a->step = lit_number(v);
		if (a->step == 0) {
			ERR(c, v->span, "Arange's step must not be 0");
			return false;
		}
		break;
	case ATTR_FILL: a->fill = lit_number(v); break;
	case ATTR_THETA:
		a->theta = lit_number(v);
		if (!(a->theta > 0)) {
			ERR(c, v->span, "theta, the base of RoPE's frequencies, must be greater than 0 (LLaMA's is 10000)");
			return false;
		}
		break;
	case ATTR_KEEP_PROB:
		a->keep_prob = lit_number(v);
		if (n->op == OP_FLASH_ATTENTION && a->keep_prob != 1) {
			ERR(c, v->span, "keep_prob %g: FlashAttentionScore does not support dropout inside the operator (keep_prob "
			    "must be 1); for attention dropout write the unfused form (BatchMatMul, Mul by the scale, Softmax, "
			    "Dropout on the probabilities, BatchMatMul)", a->keep_prob);
			return false;
		}
		if (!(a->keep_prob > 0 && a->keep_prob <= 1)) {
			ERR(c, v->span, "keep_prob, the chance of keeping an element, must be in (0, 1] (MindSpore's Dropout; "
			    "1 keeps every element)");
			return false;
		}
		break;
	case ATTR_OUT_CHANNEL: case ATTR_KERNEL_SIZE: case ATTR_PAD_MODE: case ATTR_STRIDE: case ATTR_DILATION:
	case ATTR_DATA_FORMAT: case ATTR_PADDINGS: case ATTR_PADDINGS_CONTIGUOUS: case ATTR_INPUT_SIZE:
		die("%s is decoded by conv.c or pad_v3.c", name);
	case ATTR_ALPHA:
		a->alpha = lit_number(v);
		if (n->op == OP_LEAKY_RELU) {   /* any slope, as MindSpore's nn.LeakyReLU (Minimum above 1) */
			if (!isfinite(a->alpha)) {
				ERR(c, v->span, "LeakyReLU's alpha must be a finite number, the slope below 0");
				return false;
			}
			break;
		}
		if (a->alpha != 1) {
			ERR(c, v->span, "Elu's alpha %g: MindSpore's Elu supports only alpha 1.0, and so does shardc (leave it "
			    "out, or write 1.0)", a->alpha);
			return false;
		}
		break;
	case ATTR_LAMBD:
		a->lambd = lit_number(v);
		if (!(a->lambd >= 0) || !isfinite(a->lambd)) {
			ERR(c, v->span, "%s's lambd %g: the half-width of the band around 0 it zeroes must be a finite number, "
			    "0 or more (MindSpore's; 0.5 when left out)", op_info[n->op].name, a->lambd);
			return false;
		}
		break;
	case ATTR_REDUCTION:   /* KLDivLoss's, into mode (ops.h) */
		a->mode = str_is(v, "mean") ? KL_MEAN : str_is(v, "none") ? KL_NONE : str_is(v, "batchmean") ? KL_BATCHMEAN
		          : str_is(v, "sum") ? KL_SUM : -1;
		if (a->mode < 0) {
			ERR(c, v->span, "reduction \"%s\": KLDivLoss takes \"mean\" (the default), \"none\", \"batchmean\" or "
			    "\"sum\" (MindSpore's)", v->s);
			return false;
		}
		break;
	case ATTR_N: case ATTR_M: case ATTR_NUM:   /* Eye's (n, m), LinSpace's (num) as its whole shape */
		a->shape[k == ATTR_M] = v->i;
		a->nshape = k == ATTR_NUM ? 1 : 2;
		break;
	case ATTR_TOLERANCE:
		a->tolerance = lit_number(v);
		if (!(a->tolerance >= 0) || !isfinite(a->tolerance)) {
			ERR(c, v->span, "ApproximateEqual's tolerance %g: the largest |x - y| taken as equal must be a finite "
			    "number, 0 or more (MindSpore's; 1e-05 when left out)", a->tolerance);
			return false;
		}
		break;
	case ATTR_OUTPUT_NUM:
		a->output_num = v->i;
		if (a->output_num < 1) {
			ERR(c, v->span, "output_num, the number of pieces Split cuts the axis into, must be at least 1");
			return false;
		}
		break;
	case ATTR_OUTPUT_INDEX:
		a->output_index = v->i;
		if (a->output_index < 0) {
			ERR(c, v->span, "index, the %s %s returns, counts from 0", n->op == OP_SPLIT || n->op == OP_SPLIT_V ? "piece" : "result",
			    op_info[n->op].name);
			return false;
		}
		break;
	case ATTR_MODE:
		a->mode = v->i;
		if (a->mode != 0 && a->mode != 1) {
			ERR(c, v->span, "RotaryPositionEmbedding's mode is 0 (rotate-half, GPT-NeoX style) or 1 (interleaved "
			    "pairs, GPT-J style), not %lld", (long long)a->mode);
			return false;
		}
		break;
	case ATTR_DIM: a->dim = v->i; break;
	case ATTR_IS_TRAINING: a->is_training = v->i; break;
	case ATTR_MOMENTUM:   /* the weight of the batch's statistics in the moving ones (MindSpore's range) */
		a->momentum = lit_number(v);
		if (!(a->momentum >= 0 && a->momentum <= 1)) {
			ERR(c, v->span, "BatchNorm's momentum %g must be in [0, 1]: the weight of the batch's statistics in the "
			    "moving ones (nn.BatchNorm2d's momentum m is ops.BatchNorm's 1 - m)", a->momentum);
			return false;
		}
		break;
	case ATTR_DIAGONAL: a->diagonal = v->i; break;
	case ATTR_MAXLEN: case ATTR_SEED: case ATTR_SEED2:   /* Range's, UniformReal's (misc_ops.c) */
		return decode_misc_attr(c->d, c->src, n, k, v);
	case ATTR_AXIS1: a->axis1 = v->i; break;
	case ATTR_AXIS2: a->axis2 = v->i; break;
	case ATTR_NUM_SEGMENTS:
		a->num_segments = v->i;
		if (a->num_segments < 1) {
			ERR(c, v->span, "num_segments, %s's number of result rows, must be at least 1, not %lld",
			    op_info[n->op].name, (long long)a->num_segments);
			return false;
		}
		break;
	case ATTR_DEPTH:
		a->depth = v->i;
		if (a->depth < 1) {
			ERR(c, v->span, "depth, OneHot's number of classes, must be at least 1, not %lld", (long long)a->depth);
			return false;
		}
		break;
	case ATTR_HEAD_NUM:
		a->head_num = v->i;
		if (a->head_num < 1) {
			ERR(c, v->span, "head_num, FlashAttentionScore's number of heads, must be at least 1, not %lld",
			    (long long)a->head_num);
			return false;
		}
		break;
	case ATTR_SCALE_VALUE: a->scale_value = lit_number(v); break;
	case ATTR_SPARSE_MODE:
		a->sparse_mode = v->i;
		if (a->sparse_mode != 0 && a->sparse_mode != 2 && a->sparse_mode != 3) {
			ERR(c, v->span, "sparse_mode %lld: FlashAttentionScore takes 0 (attn_mask as given, or none), 2 or 3 "
			    "(causal: query i sees keys 0..i); MindSpore's other modes (1 all, 4 band, 5 to 8 prefix and "
			    "varlen) are not supported", (long long)a->sparse_mode);
			return false;
		}
		break;
	case ATTR_INPUT_LAYOUT:
		a->input_layout = str_is(v, "BNSD") ? FA_BNSD : str_is(v, "BSND") ? FA_BSND : str_is(v, "BSH") ? FA_BSH : -1;
		if (a->input_layout < 0) {
			ERR(c, v->span, "input_layout \"%s\": FlashAttentionScore takes \"BNSD\" (q (B, N, S, D)), \"BSND\" "
			    "(B, S, N, D) or \"BSH\" (B, S, N x D); MindSpore's SBH and TND are not supported: Transpose the "
			    "inputs to one of these", v->s);
			return false;
		}
		break;
	case ATTR_COUNT: die("bad attribute");
	}
	return true;
}

static bool decode_shard(Checker *c, const Graph *caller, const Lit *v, ShardSpec **out)
{
	if (v->kind != LIT_DICT) {
		ERR(c, v->span, "'shard' is %s", kind_wanted(AK_SHARD));
		return false;
	}
	ShardSpec *s = arena_alloc(c->m->arena, sizeof *s);
	s->span = v->span;
	*out = s;
	bool ok = true;
	for (int i = 0; i < v->nitems; i++) {
		const char *key = v->keys[i]->s;
		const Lit *x = v->items[i];
		if (strcmp(key, "in_strategy") == 0)
			ok &= decode_strategy(c, x, &s->in, "in_strategy");
		else if (strcmp(key, "out_strategy") == 0)
			ok &= decode_strategy(c, x, &s->out, "out_strategy");
		else if (strcmp(key, "parameter_plan") == 0) {
			if (x->kind != LIT_DICT) {
				ERR(c, x->span, "parameter_plan is a dict from parameter name to strategy, e.g. {\"w1\": (8, 1)}");
				ok = false;
				continue;
			}
			s->nplan = x->nitems;
			s->plan_names = arena_alloc(c->m->arena, sizeof(char *) * (size_t)x->nitems);
			s->plan = arena_alloc(c->m->arena, sizeof(TensorStrategy) * (size_t)x->nitems);
			s->plan_spans = arena_alloc(c->m->arena, sizeof(Span) * (size_t)x->nitems);
			for (int j = 0; j < x->nitems; j++) {
				const Lit *k = x->keys[j];
				s->plan_names[j] = k->s;
				s->plan_spans[j] = k->span;
				if (k->kind != LIT_STR) {
					ERR(c, k->span, "parameter_plan keys are strings: \"%s\"", k->s);
					ok = false;
					continue;
				}
				int id = graph_value(caller, k->s);
				if (id < 0 || !caller->values[id].type.is_param || id >= caller->nparams) {
					const char **params = xmalloc(sizeof(char *) * (size_t)(caller->nparams + 1));
					int np = 0;
					for (int p = 0; p < caller->nparams; p++)
						if (caller->values[p].type.is_param)
							params[np++] = caller->values[p].name;
					ERR(c, k->span, "parameter_plan names \"%s\", which is not a Parameter of @%s%s", k->s,
					    caller->name, DID_YOU_MEAN(k->s, params, np));
					free(params);
					ok = false;
					continue;
				}
				ok &= decode_tensor_strategy(c, x->items[j], &s->plan[j]);
			}
		} else {
			static const char *const keys[] = {"in_strategy", "out_strategy", "parameter_plan"};
			StrBuf b = {0};
			sb_join(&b, keys, 3, ", ");
			ERR(c, v->keys[i]->span, "unknown shard key '%s' (expected %s)%s", key, b.data, DID_YOU_MEAN(key, keys, 3));
			sb_free(&b);
			ok = false;
		}
	}
	if (ok && s->in.n == 0) {
		ERR(c, v->span, "shard needs an in_strategy, one entry per input of the called graph");
		ok = false;
	}
	return ok;
}

/* The attributes op takes: its row's, the strategies on a computing
 * operator with operands, pipeline_stage on all, recompute on all but Call (a Call's layer is
 * recomputed by the train block's recompute). */
static AttrMask op_attr_mask(OpKind op)
{
	AttrMask mask = op_info[op].attrs;
	if (op != OP_CALL && op != OP_DEPEND && !op_is_comm(op) && !op_is_constant(op))
		mask |= ATTR_BIT(ATTR_IN_STRATEGY) | ATTR_BIT(ATTR_OUT_STRATEGY);
	if (op != OP_CALL && op != OP_DEPEND)   /* Depend: its value, no operator of its own (flatten.c) */
		mask |= ATTR_BIT(ATTR_RECOMPUTE);
	return mask | ATTR_BIT(ATTR_PIPELINE_STAGE);
}

/* The attributes op takes, in the table's order, into names; returns how many. */
static int op_attrs(OpKind op, const char **names)
{
	AttrMask mask = op_attr_mask(op);
	int n = 0;
	for (int k = 0; k < ATTR_COUNT; k++)
		if (mask & ATTR_BIT(k))
			names[n++] = attr_info[k].name;
	return n;
}

static void decode_attrs(Checker *c, Graph *g, Node *n)
{
	Attrs *a = &n->a;
	/* MindSpore's RmsNorm and L2Normalize; LayerNorm as PyTorch's */
	a->epsilon = n->op == OP_RMS_NORM ? 1e-6 : n->op == OP_L2_NORMALIZE ? 1e-4 : 1e-5;
	a->begin_norm_axis = -1;
	a->begin_params_axis = -1;
	a->step = 1;
	a->theta = 10000;   /* RoPE's base, as LLaMA's and MindSpore's FreqsMgr's */
	a->keep_prob = n->op == OP_FLASH_ATTENTION ? 1 : 0.5;   /* MindSpore's ops.Dropout; FlashAttentionScore's */
	a->scale_value = 1;  /* MindSpore's ops.flash_attention_score */
	a->momentum = 0.1;   /* MindSpore's ops.BatchNorm */
	a->alpha = n->op == OP_LEAKY_RELU ? 0.2 : 1;   /* MindSpore's nn.LeakyReLU and ops.leaky_relu; Elu */
	a->lambd = 0.5;     /* MindSpore's HShrink and SoftShrink */
	a->tolerance = 1e-5;   /* MindSpore's ApproximateEqual */
	a->output_num = 1;  /* MindSpore's ops.Split */
	a->pipeline_stage = -1;
	window_defaults(a);   /* Conv2D's and the pools' kernel, stride, dilation and pad_mode */
	a->paddings_contiguous = true;   /* MindSpore's PadV3 */
	a->maxlen = 1000000;   /* MindSpore's Range */
	a->axis1 = 1;   /* MindSpore's TraceV2 (ops.auto_generate) */
	const Lit *d = n->attr_lit;
	AttrMask allowed = op_attr_mask(n->op);
	for (int i = 0; d && i < d->nitems; i++) {
		const Lit *key = d->keys[i];
		int k = 0;
		while (k < ATTR_COUNT && strcmp(attr_info[k].name, key->s) != 0)
			k++;
		if (op_is_constant(n->op) && (k == ATTR_IN_STRATEGY || k == ATTR_OUT_STRATEGY)) {
			ERR(c, key->span, "%s takes no %s: it has no operands, and each rank computes its piece of it in the "
			    "layout the operators reading it take (no communication); give those operators strategies",
			    op_info[n->op].name, key->s);
			continue;
		}
		if (k == ATTR_COUNT || !(allowed & ATTR_BIT(k))) {
			const char *names[ATTR_COUNT];
			int nnames = op_attrs(n->op, names);
			StrBuf b = {0};
			sb_join(&b, names, nnames, ", ");
			ERR(c, key->span, "%s has no attribute '%s' (it takes: %s)%s", op_info[n->op].name, key->s,
			    nnames ? b.data : "none", DID_YOU_MEAN(key->s, names, nnames));
			sb_free(&b);
			continue;
		}
		if (key->kind == LIT_STR) {
			ERR(c, key->span, "attribute keys are identifiers: write %s, not \"%s\"", key->s, key->s);
			continue;
		}
		if (decode_attr(c, g, n, (AttrKind)k, d->items[i]))
			a->present |= ATTR_BIT(k);
	}
	if (n->op == OP_ARANGE && !(a->present & (ATTR_BIT(ATTR_DTYPE)))) {
		/* MindSpore's ops.arange: Int64 from integers, else Float32. Written
		 * out, so that the dumps read back to the same type. */
		bool ints = true;
		static const char *const range[] = {"start", "stop", "step"};
		for (int k = 0; k < 3; k++) {
			const Lit *v = d ? lit_dict_get(d, range[k]) : NULL;
			ints &= !v || v->kind == LIT_INT;
		}
		a->dtype = ints ? DT_I64 : DT_F32;
		a->present |= ATTR_BIT(ATTR_DTYPE);
	}
}

/* The numbers n has for operands (Value.literal). */
static int numbers_of(const Node *n)
{
	int count = 0;
	for (int k = 0; k < n->nin; k++)
		count += n->operands->items[k]->kind != LIT_VALUE;
	return count;
}

/* What node n adds to its graph once Calls are inlined: its callee's
 * operators and numbers, or itself, and its own numbers. */
static int64_t inlined_size(const Node *n)
{
	const Graph *callee = n->op == OP_CALL ? n->a.callee : NULL;
	int64_t add = callee ? callee->nflat : 1;
	return add > INT64_MAX - numbers_of(n) ? INT64_MAX : add + numbers_of(n);
}

/* MindSpore operators shardc does not have, whose names lie near ones it
 * has (AssignAdd near Add, say): "did you mean" would
 * suggest another operator, so the message says the operator is missing. */
static bool mindspore_only(const char *name)
{
	static const char *const names[] = {
		"Assign", "AssignAdd", "AssignSub",
		"Embedding", "ScatterUpdate", "Einsum",
	};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (!strcmp(name, names[i]))
			return true;
	return false;
}

static void check_graph_names(Checker *c, Graph *g)
{
	NameMap nm;
	map_init(&nm, g->nvalues);
	for (int id = 0; id < g->nvalues; id++) {
		Value *v = &g->values[id];
		if (v->literal)   /* a number operand: no text names it (build_stmt gave its id) */
			continue;
		int slot = map_slot(&nm, v->name);
		if (nm.keys[slot]) {
			int line, col;
			source_line_col(c->m->src, g->values[nm.vals[slot]].span.start, &line, &col);
			ERR(c, v->span, "'%%%s' is defined twice in @%s (first at line %d)", v->name, g->name, line);
			continue;
		}
		nm.keys[slot] = v->name;
		nm.vals[slot] = id;
	}
	g->nflat = g->nliterals = 0;
	for (int i = 0; i < g->nnodes; i++) {
		Node *n = &g->nodes[i];
		for (int k = 0; k < n->nin; k++)
			if (n->operands->items[k]->kind == LIT_VALUE)
				n->in[k] = resolve_value(c, g, &nm, n->operands->items[k], n->result);
		if (n->op == OP_COUNT) {
			const char *names[OP_COUNT];
			int nnames = 0;
			for (int k = 0; k < OP_COUNT; k++)
				if (op_in_language((OpKind)k))
					names[nnames++] = op_info[k].name;
			if (mindspore_only(n->op_name))   /* a near name would change the model's meaning: no guess */
				ERR(c, n->op_span, "'%s' is a MindSpore operator shardc does not support yet (shardc --list-ops "
				    "lists those it does, docs/operators.md describes them)", n->op_name);
			else
				ERR(c, n->op_span, "unknown operator '%s'%s", n->op_name, DID_YOU_MEAN(n->op_name, names, nnames));
			continue;
		}
		const OpInfo *info = &op_info[n->op];
		if (n->nin < info->min_inputs || (info->max_inputs >= 0 && n->nin > info->max_inputs)) {
			int extra = info->max_inputs;   /* a number past the operands: a MindSpore input shardc takes as an attribute */
			const char *attr = NULL;   /* the operator's first attribute */
			if (extra >= 0 && extra < n->nin && n->operands->items[extra]->kind != LIT_VALUE)
				for (int k = 0; k < ATTR_COUNT && !attr; k++)
					if (info->attrs & ATTR_BIT(k))
						attr = attr_info[k].name;
			if (attr && n->op == OP_TOPK)   /* MindSpore's TopK(input, k) */
				attr = "k";
			if (n->op == OP_ONE_HOT && n->nin == 4) {   /* MindSpore's OneHot(indices, depth, on_value, off_value) */
				StrBuf w = {0};
				const int order[4] = {0, 2, 3, 1};   /* the depth last, as the attribute */
				for (int k = 0; k < 4; k++) {
					sb_puts(&w, k == 0 ? "OneHot(" : k == 3 ? ") {depth: " : ", ");
					lit_print(&w, n->operands->items[order[k]]);
				}
				ERR(c, n->op_span, "OneHot takes 3 operands (indices, on_value, off_value), 4 given; MindSpore's depth, "
				    "its second input, is an attribute here: %s}", w.data);
				sb_free(&w);
			} else if (n->op == OP_GATHER_D && n->nin == 3 && n->operands->items[1]->kind != LIT_VALUE) {
				StrBuf w = {0};   /* MindSpore's GatherD(x, dim, index) */
				sb_puts(&w, "GatherD(");
				lit_print(&w, n->operands->items[0]);
				sb_puts(&w, ", ");
				lit_print(&w, n->operands->items[2]);
				sb_puts(&w, ") {dim: ");
				lit_print(&w, n->operands->items[1]);
				ERR(c, n->op_span, "GatherD takes 2 operands (x, index), 3 given; MindSpore's dim, its second input, is "
				    "an attribute here: %s}", w.data);
				sb_free(&w);
			} else if (n->op == OP_RESIZE_BILINEAR && n->nin == 2) {   /* MindSpore's ResizeBilinearV2(x, size) */
				ERR(c, n->operands->items[1]->span, "ResizeBilinearV2 takes 1 operand (x), 2 given; MindSpore's size, "
				    "its second input, is an attribute here: ResizeBilinearV2(%%x) {size: (h, w)}");
			} else if (n->op == OP_EMBEDDING_LOOKUP && n->nin == 3) {
				StrBuf w = {0};   /* MindSpore's EmbeddingLookup(input_params, input_indices, offset) */
				bool number = n->operands->items[2]->kind != LIT_VALUE;
				sb_puts(&w, "EmbeddingLookup(");
				lit_print(&w, n->operands->items[0]);
				sb_puts(&w, ", ");
				lit_print(&w, n->operands->items[1]);
				sb_puts(&w, ") {offset: ");
				if (number)
					lit_print(&w, n->operands->items[2]);
				else
					sb_puts(&w, "N");
				ERR(c, number ? n->op_span : n->operands->items[2]->span, "EmbeddingLookup takes 2 operands (table, "
				    "indices), 3 given; MindSpore's offset, its third input, is the attribute 'offset' here%s: %s}",
				    number ? "" : ", a number known when compiling", w.data);
				sb_free(&w);
			} else if (op_is_segment(n->op) && n->nin == 3 && n->operands->items[2]->kind != LIT_VALUE) {
				StrBuf w = {0};   /* MindSpore's UnsortedSegmentSum(x, segment_ids, num_segments) */
				sb_printf(&w, "%s(", info->name);
				lit_print(&w, n->operands->items[0]);
				sb_puts(&w, ", ");
				lit_print(&w, n->operands->items[1]);
				sb_puts(&w, ") {num_segments: ");
				lit_print(&w, n->operands->items[2]);
				ERR(c, n->op_span, "%s takes 2 operands (x, segment_ids), 3 given; MindSpore's num_segments, its third "
				    "input, is an attribute here: %s}", info->name, w.data);
				sb_free(&w);
			} else if (is_range(n))   /* MindSpore's P.Range(start, limit, delta): misc_ops.c took no other form */
				ERR(c, n->op_span, "Range takes three numbers, start, limit and delta (MindSpore's 0-d tensors, "
				    "known when compiling; not start, stop or step attributes beside them): Range(0.0, 8.0, 1.0) "
				    "{maxlen: 1000}");
			else if (n->op == OP_DROPOUT_GEN_MASK)   /* MindSpore's DropoutGenMask(shape, keep_prob) */
				ERR(c, n->op_span, "DropoutGenMask takes no operands, %d given; MindSpore's inputs, the shape and "
				    "keep_prob, are attributes here (the shape is known when compiling): DropoutGenMask() {shape: "
				    "(128, 64), keep_prob: 0.9}", n->nin);
			else if (n->op == OP_DROPOUT_DO_MASK && n->nin == 3)   /* MindSpore's DropoutDoMask(x, mask, keep_prob) */
				ERR(c, n->op_span, "DropoutDoMask takes 2 operands (x, mask), 3 given; MindSpore's keep_prob, its "
				    "third input, is an attribute here, the same as its DropoutGenMask's: DropoutDoMask(%%x, %%mask) "
				    "{keep_prob: 0.9}");
			else if (attr)
				ERR(c, n->op_span, "%s takes %d operand%s, %d given; the number after them is an attribute here "
				    "(MindSpore passes it as an input): %s(...) {%s: ...}", info->name, info->max_inputs,
				    info->max_inputs == 1 ? "" : "s", n->nin, info->name, attr);
			else if (info->min_inputs == info->max_inputs)
				ERR(c, n->op_span, "%s takes %d operand%s, %d given", info->name, info->min_inputs,
				    info->min_inputs == 1 ? "" : "s", n->nin);
			else if (info->max_inputs >= 0)   /* LayerNorm, the cross-entropy: a slice's piece takes more */
				ERR(c, n->op_span, "%s takes %d to %d operands, %d given", info->name, info->min_inputs,
				    info->max_inputs, n->nin);
			else
				ERR(c, n->op_span, "%s takes at least %d operand%s, %d given", info->name, info->min_inputs,
				    info->min_inputs == 1 ? "" : "s", n->nin);
		}
		decode_attrs(c, g, n);
		if (n->op == OP_CALL && !lit_dict_get(n->attr_lit, "graph"))
			ERR(c, n->op_span, "Call needs a 'graph' attribute naming the called graph");
		if (n->op == OP_CALL && n->a.shard && n->a.callee && n->a.callee->contains_shard)
			ERR(c, n->a.shard->span, "nested shard: @%s already calls a graph with shard", n->a.callee->name);
		if (n->op == OP_CALL && (n->a.shard || (n->a.callee && n->a.callee->contains_shard)))
			g->contains_shard = true;
		int64_t add = inlined_size(n), lits = (n->op == OP_CALL && n->a.callee ? n->a.callee->nliterals : 0);
		lits += numbers_of(n);
		g->nflat = g->nflat > INT64_MAX - add ? INT64_MAX : g->nflat + add;
		g->nliterals = g->nliterals > INT64_MAX - lits ? INT64_MAX : g->nliterals + lits;
	}
	g->ret = arena_alloc(c->m->arena, sizeof(int) * (size_t)g->rets->nitems);
	g->nret = g->rets->nitems;
	for (int k = 0; k < g->nret; k++)
		g->ret[k] = resolve_value(c, g, &nm, g->rets->items[k], g->nvalues);
	map_free(&nm);
}

/* Initializers (docs/language.md, Graphs; docs/output.md, Initializers):
 * only on the entry graph's inputs. */
static void check_inits(Checker *c, const Graph *g, bool entry)
{
	static const struct { const char *name; int nargs; int dtypes; } inits[] = {
		{"zeros", 0, 0}, {"ones", 0, 0}, {"constant", 1, 0},
		{"uniform", 2, 1}, {"normal", 1, 1}, {"randint", 2, 2},
	};   /* dtypes: 0 any, 1 float only, 2 integer only */
	for (int k = 0; k < g->nparams; k++) {
		const Value *v = &g->values[k];
		const Lit *init = v->init;
		if (!init)
			continue;
		if (!entry) {
			ERR(c, init->span, "only the entry graph's inputs have initializers; @%s is called with its inputs",
			    g->name);
			continue;
		}
		int which = -1;
		for (int i = 0; i < 6; i++)
			if (strcmp(init->s, inits[i].name) == 0)
				which = i;
		if (which < 0) {
			const char *names[6];
			for (int i = 0; i < 6; i++)
				names[i] = inits[i].name;
			ERR(c, init->span, "unknown initializer '%s' (expected zeros, ones, constant(v), uniform(lo, hi), "
			    "normal(std) or randint(lo, hi))%s", init->s, DID_YOU_MEAN(init->s, names, 6));
			continue;
		}
		if (init->nitems != inits[which].nargs) {
			ERR(c, init->span, "%s takes %d argument%s, %d given", init->s, inits[which].nargs,
			    inits[which].nargs == 1 ? "" : "s", init->nitems);
			continue;
		}
		for (int i = 0; i < init->nitems; i++)
			if (init->keys[i] || !lit_is_number(init->items[i]))
				ERR(c, init->items[i]->span, "initializer arguments are plain numbers");
		bool is_float = dtype_is_float(v->type.dtype);
		if (v->type.rank >= 0 && ((inits[which].dtypes == 1 && !is_float) ||
		                          (inits[which].dtypes == 2 && (is_float || v->type.dtype == DT_BOOL))))
			ERR(c, init->span, "%s does not fit '%%%s' of type %s", init->s, v->name, dtype_name(v->type.dtype));
		else if (which == 5 && init->nitems == 2 && !(lit_number(init->items[0]) < lit_number(init->items[1])))
			ERR(c, init->span, "randint(lo, hi) needs lo < hi");
		else if (which == 4 && init->nitems == 1 && !(lit_number(init->items[0]) >= 0))
			ERR(c, init->span, "normal(std) needs std >= 0");
	}
}

/* Requires every graph's nflat. Inlining is refused before it starts when the
 * entry would exceed FLAT_LIMIT operators and numbers (40 graphs each calling the previous
 * twice are 2 KB of text and 2^40 operators). The error points at the Call
 * where the limit is first crossed: in the entry, the Call whose callee takes
 * the running count over; if that callee is over the limit by itself, the
 * same inside it, and so on down. */
static void check_inline_size(Checker *c)
{
	const Graph *entry = module_entry(c->m), *g = entry;
	if (entry->nflat <= FLAT_LIMIT)
		return;
	for (;;) {
		int64_t count = 0;
		for (int i = 0; i < g->nnodes; i++) {
			const Node *n = &g->nodes[i];
			const Graph *callee = n->op == OP_CALL ? n->a.callee : NULL;
			int64_t add = inlined_size(n);
			if (add <= FLAT_LIMIT - count) {
				count += add;
				continue;
			}
			if (callee && callee->nflat > FLAT_LIMIT) {
				g = callee;
				break;
			}
			char whole[96] = "";
			if (g != entry)
				snprintf(whole, sizeof whole, " (@%s would have %s%lld)", entry->name,
				         entry->nflat == INT64_MAX ? "over " : "", (long long)entry->nflat);
			if (callee)
				ERR(c, n->op_span, "inlining @%s here takes @%s to %lld operators, over the limit of %lld%s",
				    callee->name, g->name, (long long)(count + add), (long long)FLAT_LIMIT, whole);
			else
				ERR(c, n->op_span, "@%s has more than %lld operators once Calls are inlined", entry->name,
				    (long long)FLAT_LIMIT);
			return;
		}
	}
}

bool check_names(Module *m, Diag *d)
{
	Checker c = {m, d, m->src, NULL};
	int before = d->nerrors;
	if (m->ngraphs == 0) {
		Span file_start = {0, 0};
		ERR(&c, file_start, "the module has no graph (the last graph in the file is the entry)");
		return false;
	}
	NameMap graphs;
	map_init(&graphs, m->ngraphs);
	for (int i = 0; i < m->ngraphs; i++) {
		int slot = map_slot(&graphs, m->graphs[i]->name);
		if (graphs.keys[slot]) {
			ERR(&c, m->graphs[i]->name_span, "graph '@%s' is defined twice", m->graphs[i]->name);
			continue;
		}
		graphs.keys[slot] = m->graphs[i]->name;
		graphs.vals[slot] = i;
	}
	c.graphs = &graphs;
	for (int i = 0; i < m->ngraphs; i++) {
		check_graph_names(&c, m->graphs[i]);
		check_inits(&c, m->graphs[i], i == m->ngraphs - 1);
	}
	map_free(&graphs);
	if (m->train)
		check_train(&c);
	if (d->nerrors == before)
		check_inline_size(&c);
	return d->nerrors == before;
}
