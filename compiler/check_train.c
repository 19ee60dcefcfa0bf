/* check_train.c: the train block decoded into the module's Train
 * (docs/language.md, Training): the loss, the optimizer and its arguments
 * with MindSpore's defaults and checks, a learning-rate schedule, steps,
 * gradient accumulation, clipping, precision and loss scaling, recomputation, weight_decay_params.
 *
 * Requires the entry graph's names resolved (check.c, check_names calls it
 * last); only the form is checked here, the loss's shape with the strategies
 * (check_strategies.c). Calls context.c's helpers; nothing calls back. */
#include "check_internal.h"

#include <math.h>
#include <string.h>

/* The optimizers as MindSpore has them: each argument with its default
 * (NAN: none, the argument must be given) and its range. */
typedef enum {
	ARG_LR, ARG_MOMENTUM, ARG_DAMPENING, ARG_WEIGHT_DECAY, ARG_NESTEROV, ARG_BETA1, ARG_BETA2, ARG_EPS,
} OptArg;

typedef struct {
	const char *name;
	OptArg arg;
	double dflt;
} OptArgInfo;

typedef struct {
	const char *name;
	OptimizerKind kind;
	OptArgInfo args[6];
	int nargs;
} OptInfo;

static const OptInfo optimizers[] = {
	{"SGD", OPT_SGD, {{"learning_rate", ARG_LR, 0.1}, {"momentum", ARG_MOMENTUM, 0}, {"dampening", ARG_DAMPENING, 0},
	                  {"weight_decay", ARG_WEIGHT_DECAY, 0}, {"nesterov", ARG_NESTEROV, 0}}, 5},
	{"Momentum", OPT_MOMENTUM, {{"learning_rate", ARG_LR, NAN}, {"momentum", ARG_MOMENTUM, NAN},
	                            {"weight_decay", ARG_WEIGHT_DECAY, 0}, {"use_nesterov", ARG_NESTEROV, 0}}, 4},
	{"Adam", OPT_ADAM, {{"learning_rate", ARG_LR, 1e-3}, {"beta1", ARG_BETA1, 0.9}, {"beta2", ARG_BETA2, 0.999},
	                    {"eps", ARG_EPS, 1e-8}, {"weight_decay", ARG_WEIGHT_DECAY, 0}}, 5},
	{"AdamWeightDecay", OPT_ADAM_WEIGHT_DECAY, {{"learning_rate", ARG_LR, 1e-3}, {"beta1", ARG_BETA1, 0.9},
	                                            {"beta2", ARG_BETA2, 0.999}, {"eps", ARG_EPS, 1e-6},
	                                            {"weight_decay", ARG_WEIGHT_DECAY, 0}}, 5},
	{"Lamb", OPT_LAMB, {{"learning_rate", ARG_LR, NAN}, {"beta1", ARG_BETA1, 0.9}, {"beta2", ARG_BETA2, 0.999},
	                    {"eps", ARG_EPS, 1e-6}, {"weight_decay", ARG_WEIGHT_DECAY, 0}}, 5},
};
enum { NOPTIMIZERS = sizeof optimizers / sizeof optimizers[0] };

static double *opt_slot(Train *t, OptArg a)
{
	switch (a) {
	case ARG_LR: return &t->learning_rate;
	case ARG_MOMENTUM: return &t->momentum;
	case ARG_DAMPENING: return &t->dampening;
	case ARG_WEIGHT_DECAY: return &t->weight_decay;
	case ARG_BETA1: return &t->beta1;
	case ARG_BETA2: return &t->beta2;
	case ARG_EPS: return &t->eps;
	case ARG_NESTEROV: return NULL;
	}
	return NULL;
}

/* MindSpore's checks on one argument's value; NULL when it is fine. */
static const char *opt_arg_range(OptArg a, double v)
{
	switch (a) {
	case ARG_LR: return v >= 0 ? NULL : "at least 0";
	case ARG_MOMENTUM: return v >= 0 ? NULL : "at least 0";
	case ARG_DAMPENING: return v >= 0 ? NULL : "at least 0";
	case ARG_WEIGHT_DECAY: return v >= 0 ? NULL : "at least 0";
	case ARG_BETA1: case ARG_BETA2: return v > 0 && v < 1 ? NULL : "between 0 and 1, both excluded";
	case ARG_EPS: return v > 0 ? NULL : "greater than 0";
	case ARG_NESTEROV: return NULL;
	}
	return NULL;
}

/* The learning-rate schedules: MindSpore's nn.WarmUpLR, nn.CosineDecayLR,
 * nn.PolynomialDecayLR, nn.ExponentialDecayLR and MindFormers'
 * CosineWithWarmUpLR, each argument with its default (NAN: required) and
 * MindSpore's check on it; the arguments in sc_learning_rate's order. */
typedef enum { SA_NONNEG, SA_POS, SA_STEPS, SA_STEPS0, SA_BOOL } SchedArg;

static const struct {
	const char *name;
	LrSchedule kind;
	struct { const char *name; SchedArg check; double dflt; } args[MAX_LR_ARGS];
	int nargs;
	const char *example;
} schedules[] = {
	{"WarmUpLR", LR_WARMUP, {{"learning_rate", SA_NONNEG, NAN}, {"warmup_steps", SA_STEPS, NAN}}, 2,
	 "WarmUpLR(learning_rate: 0.1, warmup_steps: 10)"},
	{"CosineDecayLR", LR_COSINE, {{"min_lr", SA_NONNEG, NAN}, {"max_lr", SA_POS, NAN}, {"decay_steps", SA_STEPS, NAN}}, 3,
	 "CosineDecayLR(min_lr: 1e-5, max_lr: 1e-3, decay_steps: 100)"},
	{"PolynomialDecayLR", LR_POLYNOMIAL, {{"learning_rate", SA_POS, NAN}, {"end_learning_rate", SA_NONNEG, NAN},
	                                      {"decay_steps", SA_STEPS, NAN}, {"power", SA_POS, NAN},
	                                      {"update_decay_steps", SA_BOOL, 0}}, 5,
	 "PolynomialDecayLR(learning_rate: 0.1, end_learning_rate: 0.01, decay_steps: 100, power: 1.0)"},
	{"ExponentialDecayLR", LR_EXPONENTIAL, {{"learning_rate", SA_POS, NAN}, {"decay_rate", SA_POS, NAN},
	                                        {"decay_steps", SA_STEPS, NAN}, {"is_stair", SA_BOOL, 0}}, 4,
	 "ExponentialDecayLR(learning_rate: 0.1, decay_rate: 0.9, decay_steps: 10)"},
	{"CosineWithWarmUpLR", LR_COSINE_WARMUP, {{"learning_rate", SA_POS, NAN}, {"warmup_steps", SA_STEPS0, 0},
	                                          {"total_steps", SA_STEPS, NAN}, {"lr_end", SA_NONNEG, 0},
	                                          {"warmup_lr_init", SA_NONNEG, 0}}, 5,
	 "CosineWithWarmUpLR(learning_rate: 1e-3, warmup_steps: 10, total_steps: 100, lr_end: 1e-5)"},
};
enum { NSCHEDULES = sizeof schedules / sizeof schedules[0] };

/* learning_rate: Schedule(name: value, ...) into t->lr_schedule and t->lr_args. */
static void check_schedule(Checker *c, Train *t, const Lit *v)
{
	int s = 0;
	while (s < NSCHEDULES && strcmp(schedules[s].name, v->s) != 0)
		s++;
	const char *names[NSCHEDULES + MAX_LR_ARGS];
	if (s == NSCHEDULES) {
		for (int k = 0; k < NSCHEDULES; k++)
			names[k] = schedules[k].name;
		ERR(c, v->span, "unknown learning-rate schedule '%s' (learning_rate is a number or one of WarmUpLR, "
		    "CosineDecayLR, PolynomialDecayLR, ExponentialDecayLR, CosineWithWarmUpLR)%s", v->s,
		    DID_YOU_MEAN(v->s, names, NSCHEDULES));
		return;
	}
	int n = schedules[s].nargs;
	for (int k = 0; k < n; k++)
		names[k] = schedules[s].args[k].name;
	StrBuf all = {0};
	sb_join(&all, names, n, ", ");
	bool given[MAX_LR_ARGS] = {false};
	t->lr_schedule = schedules[s].kind;
	t->lr_nargs = n;
	for (int k = 0; k < n; k++)
		t->lr_args[k] = schedules[s].args[k].dflt;
	for (int i = 0; i < v->nitems; i++) {
		const Lit *key = v->keys[i], *x = v->items[i];
		if (!key) {   /* once: the rest would repeat it */
			ERR(c, x->span, "name the schedule's arguments, e.g. %s", schedules[s].example);
			sb_free(&all);
			return;
		}
		int k = 0;
		while (k < n && strcmp(names[k], key->s) != 0)
			k++;
		if (k == n) {
			ERR(c, key->span, "%s has no argument '%s' (it takes %s)%s", v->s, key->s, all.data,
			    DID_YOU_MEAN(key->s, names, n));
			continue;
		}
		given[k] = true;
		SchedArg check = schedules[s].args[k].check;
		bool steps = check == SA_STEPS || check == SA_STEPS0;
		if (check == SA_BOOL) {
			if (x->kind != LIT_BOOL)
				ERR(c, x->span, "%s's '%s' is true or false", v->s, key->s);
			else
				t->lr_args[k] = (double)x->i;
		} else if (steps ? x->kind != LIT_INT || x->i < (check == SA_STEPS) || x->i > 1000000000
		                 : !lit_is_number(x) || !isfinite(lit_number(x)) ||
		                       !(check == SA_POS ? lit_number(x) > 0 : lit_number(x) >= 0)) {
			ERR(c, x->span, "%s's '%s' is %s", v->s, key->s,
			    check == SA_STEPS ? "a positive integer (steps)" : check == SA_STEPS0 ? "an integer, at least 0 (steps)"
			    : check == SA_POS ? "a number greater than 0" : "a number, at least 0");
			t->lr_args[k] = 1;
		} else
			t->lr_args[k] = steps ? (double)x->i : lit_number(x);
	}
	StrBuf missing = {0};
	for (int k = 0; k < n; k++)
		if (!given[k] && isnan(schedules[s].args[k].dflt)) {
			sb_printf(&missing, "%s'%s'", missing.len ? ", " : "", names[k]);
			t->lr_args[k] = 1;
		}
	const double *a = t->lr_args;
	if (missing.len)
		ERR(c, v->span, "%s needs %s (MindSpore's has no default), e.g. %s", v->s, missing.data, schedules[s].example);
	else if (t->lr_schedule == LR_COSINE && !(a[0] < a[1]))
		ERR(c, v->span, "CosineDecayLR's max_lr must be greater than its min_lr (it decays from max_lr to min_lr)");
	else if (t->lr_schedule == LR_COSINE_WARMUP && !(a[2] > a[1]))
		ERR(c, v->span, "CosineWithWarmUpLR's total_steps must be greater than its warmup_steps (the cosine decays "
		    "over the steps after the warmup)");
	t->learning_rate = a[t->lr_schedule == LR_COSINE ? 1 : 0];   /* the peak, for what reads one number */
	sb_free(&all);
	sb_free(&missing);
}

static void check_optimizer(Checker *c, Train *t, const Lit *v)
{
	const OptInfo *o = NULL;
	for (int k = 0; k < NOPTIMIZERS; k++)
		if ((v->kind == LIT_APPLY || v->kind == LIT_IDENT) && strcmp(v->s, optimizers[k].name) == 0)
			o = &optimizers[k];
	if (!o) {
		const char *names[NOPTIMIZERS];
		for (int k = 0; k < NOPTIMIZERS; k++)
			names[k] = optimizers[k].name;
		bool named = v->kind == LIT_APPLY || v->kind == LIT_IDENT;
		ERR(c, v->span, "optimizer is SGD(...), Momentum(...), Adam(...), AdamWeightDecay(...) or Lamb(...)%s",
		    named ? DID_YOU_MEAN(v->s, names, NOPTIMIZERS) : "");
		return;
	}
	const char *args[6];
	for (int k = 0; k < o->nargs; k++)
		args[k] = o->args[k].name;
	StrBuf names = {0};
	sb_join(&names, args, o->nargs, ", ");
	t->optimizer = o->kind;
	bool given[6] = {false};
	for (int k = 0; k < o->nargs; k++) {
		double *slot = opt_slot(t, o->args[k].arg);
		if (slot)
			*slot = o->args[k].dflt;
	}
	for (int i = 0; v->kind == LIT_APPLY && i < v->nitems; i++) {
		const Lit *key = v->keys[i], *x = v->items[i];
		if (!key) {
			ERR(c, x->span, "name the optimizer's arguments: %s(%s: ...)", o->name, "learning_rate");
			continue;
		}
		int k = 0;
		while (k < o->nargs && strcmp(o->args[k].name, key->s) != 0)
			k++;
		if (k == o->nargs) {
			ERR(c, key->span, "%s has no argument '%s' (it takes %s)%s", o->name, key->s, names.data,
			    DID_YOU_MEAN(key->s, args, o->nargs));
			continue;
		}
		given[k] = true;
		OptArg a = o->args[k].arg;
		const char *range;
		if (a == ARG_LR && (x->kind == LIT_APPLY || x->kind == LIT_IDENT))
			check_schedule(c, t, x);
		else if (a == ARG_NESTEROV) {
			if (x->kind != LIT_BOOL)
				ERR(c, x->span, "'%s' is true or false", key->s);
			else
				t->nesterov = x->i != 0;
		} else if (!lit_is_number(x))
			ERR(c, x->span, a == ARG_LR ? "'%s' is a number or a schedule, such as CosineDecayLR(min_lr: 1e-5, max_lr: "
			    "1e-3, decay_steps: 100)" : "'%s' is a number", key->s);
		else if ((range = opt_arg_range(a, lit_number(x))))
			ERR(c, x->span, "%s's '%s' is %s", o->name, key->s, range);
		else
			*opt_slot(t, a) = lit_number(x);
	}
	bool missing = false;
	for (int k = 0; k < o->nargs; k++)
		missing |= isnan(o->args[k].dflt) && !given[k];
	if (missing && o->kind == OPT_LAMB)   /* nn.Lamb's learning_rate and nn.Momentum's two have no defaults */
		ERR(c, v->span, "Lamb needs learning_rate (MindSpore's nn.Lamb has no default), e.g. Lamb(learning_rate: 0.1)");
	else if (missing)
		ERR(c, v->span, "Momentum needs learning_rate and momentum (MindSpore's nn.Momentum has no default), "
		    "e.g. Momentum(learning_rate: 0.1, momentum: 0.9)");
	if (o->kind == OPT_SGD && t->nesterov && !(t->momentum > 0 && t->dampening == 0))
		ERR(c, v->span, "SGD with nesterov needs momentum > 0 and dampening 0 (as MindSpore's nn.SGD)");
	sb_free(&names);
}

/* weight_decay_params: (%p, ...): MindSpore's two parameter groups, these
 * parameters with the optimizer's weight_decay, every other with none. */
static void check_decays(Checker *c, const Graph *g, Train *t, const Lit *v)
{
	size_t n = (size_t)(g->nparams ? g->nparams : 1);
	t->decays = arena_alloc(c->m->arena, sizeof(bool) * n);
	memset(t->decays, 0, sizeof(bool) * n);
	if (v->kind != LIT_TUPLE) {
		ERR(c, v->span, "weight_decay_params is a tuple of parameters, such as (%%w1, %%w2): the ones the "
		    "optimizer's weight_decay applies to");
		return;
	}
	for (int k = 0; k < v->nitems; k++) {
		const Lit *p = v->items[k];
		int id = p->kind == LIT_VALUE ? graph_value(g, p->s) : -1;
		if (id < 0 || id >= g->nparams || !g->values[id].type.is_param)
			ERR(c, p->span, "weight_decay_params: %s%s is not a Parameter of the entry graph @%s",
			    p->kind == LIT_VALUE ? "%" : "", p->kind == LIT_VALUE ? p->s : "this item", g->name);
		else
			t->decays[id] = true;
	}
}

void check_train(Checker *c)
{
	Train *t = c->m->train;
	Graph *g = module_entry(c->m);
	t->optimizer = OPT_SGD;   /* no optimizer: nn.SGD with its defaults */
	t->init_loss_scale = 16777216;   /* DynamicLossScaleManager's defaults: 2^24, 2, 2000 */
	t->scale_factor = 2;
	t->scale_window = 2000;
	const Lit *scaling = NULL;
	t->learning_rate = 0.1;
	t->steps = 1;
	t->accumulate_steps = 1;
	for (int i = 0; i < t->lit->nitems; i++) {
		const char *key = t->lit->keys[i]->s;
		const Lit *v = t->lit->items[i];
		if (strcmp(key, "loss") == 0) {
			if (v->kind != LIT_VALUE) {
				ERR(c, v->span, "loss is a value of the entry graph, such as %%loss");
				continue;
			}
			t->loss = graph_value(g, v->s);
			if (t->loss < 0)
				ERR(c, v->span, "loss '%%%s' is not a value of the entry graph @%s", v->s, g->name);
		} else if (strcmp(key, "steps") == 0) {
			if (v->kind != LIT_INT || v->i < 1 || v->i > 1000000000)
				ERR(c, v->span, "steps is a positive integer");
			else
				t->steps = v->i;
		} else if (strcmp(key, "accumulate_steps") == 0 || strcmp(key, "micro_batches") == 0) {
			/* micro_batches (MindSpore's micro_size) is accumulate_steps under another name: the micro-batches
			 * a step runs, each of the graph's input shapes; a pipeline overlaps them across its stages */
			const Lit *other = lit_dict_get(t->lit, key[0] == 'a' ? "micro_batches" : "accumulate_steps");
			bool is_auto = key[0] == 'm' && v->kind == LIT_STR && !strcmp(v->s, "auto");
			if (!is_auto && (v->kind != LIT_INT || v->i < 1 || v->i > 1000000))
				ERR(c, v->span, "%s is a positive integer, at most 1000000 (the micro-batches whose "
				    "gradients are summed before each optimizer step; 1: none)%s", key,
				    key[0] == 'm' ? ", or \"auto\" (the search picks it, the graph written for the step's batch)" : "");
			else if (other && key[0] == 'm')
				ERR(c, v->span, "micro_batches and accumulate_steps are one count (the micro-batches a step runs): "
				    "give one of them");
			else if (is_auto)
				t->micro_auto = true;   /* the search's (search_stages.c), the graph the step's batch: rebatch.c */
			else
				t->accumulate_steps = v->i;
		} else if (strcmp(key, "clip_global_norm") == 0) {
			if (!lit_is_number(v) || !(lit_number(v) > 0))
				ERR(c, v->span, "clip_global_norm is a number greater than 0 (the largest global norm of the gradients)");
			else
				t->clip_global_norm = lit_number(v);
		} else if (strcmp(key, "precision") == 0) {
			if (!precision_of(v, &t->precision))
				ERR(c, v->span, "precision is \"bf16\", \"fp16\" or \"fp32\" (the type matrix products and "
				    "elementwise operators compute in; parameters stay Float32)");
			else if (c->m->ctx.precision != DT_F32 && t->precision != c->m->ctx.precision)
				ERR(c, v->span, "precision \"%s\" here, but the context (or --precision) says \"%s\": a model "
				    "has one precision", v->s, c->m->ctx.precision == DT_BF16 ? "bf16" : "fp16");
		} else if (strcmp(key, "init_loss_scale") == 0 || strcmp(key, "scale_factor") == 0) {
			bool init = key[0] == 'i';
			scaling = v;
			if (!lit_is_number(v) || !(init ? lit_number(v) >= 1 : lit_number(v) > 1) || !isfinite(lit_number(v)))
				ERR(c, v->span, "%s is a number %s", key, init ? "at least 1" : "greater than 1");
			else
				*(init ? &t->init_loss_scale : &t->scale_factor) = lit_number(v);
		} else if (strcmp(key, "scale_window") == 0) {
			scaling = v;
			if (v->kind != LIT_INT || v->i < 1 || v->i > 1000000000)
				ERR(c, v->span, "scale_window is a positive integer (good steps before the loss scale grows)");
			else
				t->scale_window = v->i;
		} else if (strcmp(key, "recompute") == 0) {
			if (v->kind == LIT_BOOL)
				t->recompute = v->i ? RECOMPUTE_LAYERS : RECOMPUTE_NONE;
			else if (str_is(v, "selective"))
				t->recompute = RECOMPUTE_SELECTIVE;
			else
				ERR(c, v->span, "recompute is true (recompute every layer's operators in the backward pass, "
				    "keeping the values between layers), \"selective\" (only attention's scores and Softmax) or false");
		} else if (strcmp(key, "weight_decay_params") == 0)
			check_decays(c, g, t, v);
		else if (strcmp(key, "optimizer") == 0)
			check_optimizer(c, t, v);
		else {
			static const char *const keys[] = {"loss", "optimizer", "steps", "accumulate_steps", "micro_batches",
			                                   "clip_global_norm",
			                                   "precision", "init_loss_scale", "scale_factor", "scale_window",
			                                   "recompute", "weight_decay_params"};
			int nkeys = (int)(sizeof keys / sizeof *keys);
			StrBuf b = {0};
			sb_join(&b, keys, nkeys, ", ");
			ERR(c, t->lit->keys[i]->span, "unknown train key '%s' (expected %s)%s", key, b.data,
			    DID_YOU_MEAN(key, keys, nkeys));
			sb_free(&b);
		}
	}
	/* One precision for the model: the train block's, else the context's. */
	if (t->precision == DT_F32)
		t->precision = c->m->ctx.precision;
	c->m->ctx.precision = t->precision;
	if (scaling && t->precision != DT_F16)
		ERR(c, scaling->span, "loss scaling is for precision: \"fp16\" (bf16 has Float32's exponent range)");
	if (t->precision == DT_F16 && t->clip_global_norm > 0)
		ERR(c, t->span, "clip_global_norm with precision: \"fp16\": not yet (the norm would be taken of the "
		    "scaled gradients)");
	const Lit *opt = lit_dict_get(t->lit, "optimizer");
	Span lamb = opt ? opt->span : t->span;
	if (t->precision == DT_F16 && t->optimizer == OPT_LAMB)
		ERR(c, lamb, "Lamb with precision: \"fp16\": not yet (its trust ratio's norms would be taken of the "
		    "scaled gradients); use precision: \"bf16\"");
	if (!lit_dict_get(t->lit, "loss"))
		ERR(c, t->span, "the train block needs 'loss: %%value'");
}
