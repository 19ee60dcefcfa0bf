/* context.c: the context block over the defaults (docs/language.md, Context).
 *
 * Requires parsed. check_context decodes the file's context block into
 * Module.ctx over the defaults; context_apply sets one entry, from the file
 * or from a command-line override (main.c), saying what is expected when
 * the value is wrong. */
#include "check_internal.h"

#include <stdio.h>
#include <string.h>


static void context_defaults(Context *c)
{
	*c = (Context){.device_num = 1, .parallel_mode = PM_STAND_ALONE, .search_mode = SM_PROPAGATION,
	               .dataset_mode = DS_FULL_BATCH, .seed = 0, .precision = DT_F32, .optimizer_level = 1,
	               .optimizer_shard_size = -1, .pipeline_stages = 1, .stages = 1, .ranks = 1,
	               .scheduler = SCHED_1F1B};
}

bool str_is(const Lit *v, const char *s)
{
	return v->kind == LIT_STR && strcmp(v->s, s) == 0;
}

/* "bf16", "fp16", "fp32": the compute type of mixed precision (DT_F32: off). */
bool precision_of(const Lit *v, DType *t)
{
	if (str_is(v, "bf16"))
		*t = DT_BF16;
	else if (str_is(v, "fp16"))
		*t = DT_F16;
	else if (str_is(v, "fp32"))
		*t = DT_F32;
	else
		return false;
	return true;
}

bool context_apply(Context *c, const char *key, const Lit *v, const char **err)
{
	if (strcmp(key, "device_num") == 0) {
		if (v->kind != LIT_INT || v->i < 1 || v->i > (1 << 20)) {
			*err = "device_num must be an integer from 1 to 1048576";
			return false;
		}
		c->device_num = c->ranks = v->i;
	} else if (strcmp(key, "parallel_mode") == 0) {
		for (int k = PM_STAND_ALONE; k <= PM_AUTO; k++)
			if (str_is(v, parallel_mode_name((ParallelMode)k))) {
				c->parallel_mode = (ParallelMode)k;
				return true;
			}
		*err = "parallel_mode must be \"stand_alone\", \"data_parallel\", \"semi_auto_parallel\" or \"auto_parallel\"";
		return false;
	} else if (strcmp(key, "search_mode") == 0) {
		if (str_is(v, "sharding_propagation"))
			c->search_mode = SM_PROPAGATION;
		else if (str_is(v, "recursive_programming"))
			c->search_mode = SM_RECURSIVE;
		else {
			*err = "search_mode must be \"sharding_propagation\" or \"recursive_programming\"";
			return false;
		}
	} else if (strcmp(key, "dataset_strategy") == 0) {
		if (str_is(v, "full_batch"))
			c->dataset_mode = DS_FULL_BATCH;
		else if (str_is(v, "data_parallel"))
			c->dataset_mode = DS_DATA_PARALLEL;
		else if (v->kind == LIT_TUPLE) {
			for (int i = 0; i < v->nitems; i++) {
				const Lit *t = v->items[i];
				bool ok = t->kind == LIT_TUPLE && t->nitems <= MAX_DIMS;
				for (int j = 0; ok && j < t->nitems; j++)
					ok = t->items[j]->kind == LIT_INT && t->items[j]->i >= 1;
				if (!ok) {
					*err = "each dataset_strategy entry must be a tuple of positive integers, one per dim";
					return false;
				}
			}
			c->dataset_mode = DS_TUPLE;
			c->dataset_tuple = (Lit *)v;
			c->dataset_src = NULL;   /* the caller says where v was written */
		} else {
			*err = "dataset_strategy must be \"full_batch\", \"data_parallel\" or a tuple of strategies, one per input";
			return false;
		}
	} else if (strcmp(key, "seed") == 0) {
		if (v->kind != LIT_INT || v->i < 0) {
			*err = "seed must be a non-negative integer";
			return false;
		}
		c->seed = v->i;
	} else if (strcmp(key, "precision") == 0) {
		if (!precision_of(v, &c->precision)) {
			*err = "precision must be \"bf16\", \"fp16\" or \"fp32\" (the type matrix products and elementwise "
			       "operators compute in; Float32 parameters stay Float32)";
			return false;
		}
	} else if (strcmp(key, "enable_parallel_optimizer") == 0) {
		if (v->kind != LIT_BOOL) {
			*err = "enable_parallel_optimizer must be true or false";
			return false;
		}
		c->parallel_optimizer = v->i != 0;
	} else if (strcmp(key, "optimizer_level") == 0) {
		static const char *const levels[] = {"level1", "level2", "level3"};
		for (int k = 0; k < 3; k++)
			if (str_is(v, levels[k])) {
				c->optimizer_level = k + 1;
				return true;
			}
		*err = "optimizer_level must be \"level1\" (parameters and optimizer state as slices), \"level2\" (and "
		       "gradients) or \"level3\" (and each parameter gathered again for the backward pass)";
		return false;
	} else if (strcmp(key, "optimizer_weight_shard_size") == 0) {
		if (v->kind != LIT_INT || (v->i < 1 && v->i != -1) || v->i > (1 << 20)) {
			*err = "optimizer_weight_shard_size must be -1 (every copy) or a positive integer";
			return false;
		}
		c->optimizer_shard_size = v->i;
	} else if (strcmp(key, "pipeline_stages") == 0) {
		if (str_is(v, "auto"))
			c->pipeline_stages = 0;   /* the search picks (search_stages) */
		else if (v->kind != LIT_INT || v->i < 1 || v->i > (1 << 20)) {
			*err = "pipeline_stages must be a positive integer (the groups of devices consecutive layers run on; "
			       "1, the default: every operator on all devices) or \"auto\" (the search picks it)";
			return false;
		} else
			c->pipeline_stages = v->i;
	} else if (strcmp(key, "pipeline_scheduler") == 0) {
		if (str_is(v, "1f1b"))
			c->scheduler = SCHED_1F1B;
		else if (str_is(v, "gpipe"))
			c->scheduler = SCHED_GPIPE;
		else {
			*err = "pipeline_scheduler must be \"1f1b\" (each stage alternates a micro-batch's forward and "
			       "backward passes, holding at most pipeline_stages micro-batches' activations) or \"gpipe\" "
			       "(every forward pass, then every backward pass)";
			return false;
		}
	} else {
		*err = "unknown context key";
		return false;
	}
	return true;
}

bool check_context(Module *m, Diag *d)
{
	int before = d->nerrors;
	context_defaults(&m->ctx);
	Lit *lit = m->context_lit;
	for (int i = 0; lit && i < lit->nitems; i++) {
		const char *err = NULL;
		bool ok = context_apply(&m->ctx, lit->keys[i]->s, lit->items[i], &err);
		if (ok && m->ctx.dataset_tuple == lit->items[i])
			m->ctx.dataset_src = m->src;
		if (!ok && strcmp(lit->keys[i]->s, "accumulate_steps") == 0)   /* MindSpore sets it beside the context */
			diag_error(d, m->src, lit->keys[i]->span, "accumulate_steps is a key of the train block, not of the "
			           "context: train { loss: %%loss, accumulate_steps: 4 }%s", m->train ? "" : " (this model has "
			           "no train block: only training sums gradients over micro-batches)");
		else if (!ok && strcmp(err, "unknown context key") == 0) {
			static const char *const keys[] = {"device_num", "parallel_mode", "search_mode", "dataset_strategy",
			                                   "seed", "precision", "enable_parallel_optimizer", "optimizer_level",
			                                   "optimizer_weight_shard_size", "pipeline_stages",
			                                   "pipeline_scheduler"};
			int nkeys = (int)(sizeof keys / sizeof *keys);
			StrBuf b = {0};
			sb_join(&b, keys, nkeys, " or ");
			diag_error(d, m->src, lit->keys[i]->span, "unknown context key '%s' (expected %s)%s", lit->keys[i]->s,
			           b.data, DID_YOU_MEAN(lit->keys[i]->s, keys, nkeys));
			sb_free(&b);
		} else if (!ok)
			diag_error(d, m->src, lit->items[i]->span, "%s", err);
	}
	return d->nerrors == before;
}

/* The pipeline_stages entry as written, for its message; NULL: an override. */
static const Lit *context_entry(const Module *m, const char *key)
{
	const Lit *lit = m->context_lit;
	for (int i = 0; lit && i < lit->nitems; i++)
		if (strcmp(lit->keys[i]->s, key) == 0)
			return lit->items[i];
	return NULL;
}

bool context_stages(Module *m, Diag *d)
{
	Context *c = &m->ctx;
	c->stages = c->parallel_mode == PM_STAND_ALONE ? 1 : c->pipeline_stages;   /* one device: no stages */
	if (c->stages == 0) {   /* "auto": one stage until the search picks (search_stages) */
		c->stages = 1;
		if (c->parallel_mode != PM_AUTO || !m->train) {
			const Lit *at = context_entry(m, "pipeline_stages");
			diag_error(d, m->src, at ? at->span : (Span){0, 0}, "pipeline_stages \"auto\" is the search's choice: "
			           "it needs parallel_mode \"auto_parallel\" and a train block (or give pipeline_stages a number)");
			return false;
		}
	}
	if (c->stages == 1)
		return true;
	if (c->device_num % c->pipeline_stages) {
		const Lit *at = context_entry(m, "pipeline_stages");
		Span span = at ? at->span : (Span){0, 0};
		diag_error(d, m->src, span, "pipeline_stages %lld does not divide device_num %lld: each stage runs on "
		           "device_num / pipeline_stages devices (use a divisor of %lld, or change device_num)",
		           (long long)c->pipeline_stages, (long long)c->device_num, (long long)c->device_num);
		return false;
	}
	c->device_num /= c->stages;
	return true;
}

const char *devices_phrase(const Context *c, char *buf, size_t n)
{
	if (c->stages > 1)
		snprintf(buf, n, "a pipeline stage's %lld devices (device_num %lld over pipeline_stages %lld)",
		         (long long)c->device_num, (long long)c->ranks, (long long)c->stages);
	else
		snprintf(buf, n, "device_num %lld", (long long)c->device_num);
	return buf;
}
