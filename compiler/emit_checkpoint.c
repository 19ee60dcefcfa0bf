/* emit_checkpoint.c: a training program's checkpoints and its resuming
 * (run.sh --checkpoint DIR --save-every K --keep N, --resume DIR;
 * docs/output.md, Checkpoints of a run).
 *
 * A checkpoint holds every trained parameter's pieces and its optimizer
 * state's, whole tensors under MindSpore's names (Adam's moment1.NAME and
 * moment2.NAME, AdamWeightDecay's adam_m.NAME and adam_v.NAME, Lamb's
 * lamb_m.NAME and lamb_v.NAME, Momentum's and SGD's moments.NAME), and
 * the counters the next step reads: with loss scaling the scale, the good
 * steps in a row, the updates made and the steps skipped at scale 1. The
 * step's number gives the rest: the learning rate, Adam's and Lamb's bias
 * corrections (without loss scaling), the data's position and Dropout's
 * masks. So a run resumed from step S goes on with
 * the bytes an uninterrupted run has after step S, on any plan: each rank
 * reads its own slices of the whole tensors. */
#include "emit_internal.h"

/* The name of optimizer state slot j of parameter `name`. */
static void state_name(StrBuf *b, const Train *t, int j, const char *name)
{
	static const char *const adam[] = {"moment1", "moment2"}, *const adamw[] = {"adam_m", "adam_v"},
	                  *const lamb[] = {"lamb_m", "lamb_v"};   /* nn.Lamb's clones of the parameters */
	const char *prefix = t->optimizer == OPT_ADAM ? adam[j] : t->optimizer == OPT_ADAM_WEIGHT_DECAY ? adamw[j]
	                   : t->optimizer == OPT_LAMB ? lamb[j] : "moments";
	sb_printf(b, "%s.%s", prefix, name);
}

/* Calls `fn(rt-side object, "NAME", pointer, dtype, piece)` for every
 * parameter that trains and every slot of its state, and every moving
 * statistic (BatchNorm's, no state), the pointer NULL on
 * the ranks of other pipeline stages (held_arg). */
static void each_tensor(StrBuf *b, const Program *p, const char *indent, const char *call)
{
	const Lowered *l = p->l;
	const Graph *g = l->flat->g;
	const Train *t = l->m->train;
	int nstate = state_slots(t);
	for (int v = 0; v < l->nparams; v++) {
		bool moving = param_is_moving_stat(g, v);   /* BatchNorm's: saved, with no optimizer state */
		if (!g->values[v].type.is_param || (l->grad[v] < 0 && !moving))
			continue;
		const LValue *x = &l->values[v];
		const char *dt = sc_dtype_name(x->type.dtype), *ct = c_type(x->type.dtype);
		long long state_bytes = (long long)aligned(value_bytes(x));
		for (int j = -1; j < (moving ? 0 : nstate); j++) {
			StrBuf name = {0};
			if (j < 0)
				sb_puts(&name, g->values[v].name);
			else
				state_name(&name, t, j, g->values[v].name);
			sb_printf(b, "%s%s\"%s\", ", indent, call, name.data);
			StrBuf ptr = {0};
			if (j < 0)
				sb_puts(&ptr, p->cname[v]);
			else
				sb_printf(&ptr, "(%s *)(slab + %lld)", ct, (long long)p->state[v] + j * state_bytes);
			held_arg(b, p, v, ptr.data);
			sb_free(&ptr);
			sb_printf(b, ", %s, ", dt);
			piece_args(b, p, v);
			sb_puts(b, ");\n");
			sb_free(&name);
		}
	}
}

/* The counters loss scaling keeps (emit.c declares them). */
static const char *const counters[] = {"loss_scale", "good_steps", "updates", "skipped_at_1"};
enum { NCOUNTERS = sizeof counters / sizeof counters[0] };

void emit_checkpoint_options(StrBuf *b, const Program *p)
{
	sb_printf(b, "\tsc_checkpointing ckpts = sc_checkpoint_options(rt, %d);   /* --checkpoint, --resume */\n"
	          "\t(void)ckpts;\n", p->l->m->train != NULL);
}

void emit_resume(StrBuf *b, const Program *p)
{
	const Lowered *l = p->l;
	sb_puts(b, "\tint64_t first = 1;   /* the first step: after the checkpoint's with --resume */\n"
	        "\tif (ckpts.resume) {   /* the newest checkpoint's parameters, optimizer state and counters */\n"
	        "\t\tsc_resume *resumed = sc_resume_open(rt, ckpts.resume);\n\t\tchar resumed_file[4400];\n"
	        "\t\tsc_safetensors *resumed_st = sc_safetensors_open(rt, \"--resume\", sc_resume_file(resumed, resumed_file, "
	        "sizeof resumed_file), NULL, NULL, 0);\n");
	each_tensor(b, p, "\t\t", "sc_load_safetensors(rt, resumed_st, ");
	for (int k = 0; l->overflow >= 0 && k < NCOUNTERS; k++)
		sb_printf(b, "\t\t%s = sc_resume_value(rt, resumed, \"%s\");\n", counters[k], counters[k]);
	sb_puts(b, "\t\tfirst = sc_resume_step(resumed) + 1;\n\t\tsc_safetensors_close(resumed_st);\n"
	        "\t\tsc_resume_close(resumed);\n\t}\n");
}

void emit_checkpoint(StrBuf *b, const Program *p)
{
	const Lowered *l = p->l;
	sb_puts(b, "\t\tif (sc_checkpoint_due(&ckpts, step, steps)) {   /* every --save-every K steps and the last */\n"
	        "\t\t\tsc_checkpoint *saving = sc_checkpoint_begin(ckpts.dir, step);\n");
	each_tensor(b, p, "\t\t\t", "sc_checkpoint_add(saving, ");
	for (int k = 0; l->overflow >= 0 && k < NCOUNTERS; k++)
		sb_printf(b, "\t\t\tsc_checkpoint_value(saving, \"%s\", (double)%s);\n", counters[k], counters[k]);
	sb_puts(b, "\t\t\tsc_checkpoint_end(rt, saving, ckpts.keep);\n\t\t}\n");
}
