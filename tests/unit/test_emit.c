/* test_emit.c: the per-rank C programs' buffer plan and text.
 *
 * The buffer plan is checked against lifetimes computed here from the
 * program alone: a value lives from the operator that defines it to its last
 * reader (a backward operator reads the forward operator it differentiates;
 * the loss is read after the forward graph, gradients by the update, results
 * at the end), parameters and inputs for the whole run. No two values alive
 * at once may share a byte, unless one is a view of the other (a copy not
 * made: the same bytes, in the same place), and every buffer lies in the
 * slab. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "emit_internal.h"
#include "harness.h"

static int64_t bucket_bytes = 25000000;   /* the cluster's default */

/* The pipeline up to fusion, in parallel mode `mode` (NULL: the model's),
 * with buckets of bucket_bytes. */
static Lowered *lower_text(const char *name, const char *text, size_t len, const char *mode, Run **run)
{
	Override o = {"parallel_mode", "--parallel-mode", mode};
	Run *r = run_pipeline(name, text, len, STAGE_RECOMPUTE, &o, mode ? 1 : 0);
	expect_clean(r);
	r->c.search.cluster.bucket_bytes = (double)bucket_bytes;
	run_resume(r, STAGE_BUCKET, STAGE_FUSE);
	expect_clean(r);
	*run = r;
	return r->c.low;
}

static Lowered *lower_path(const char *path, const char *mode, Run **run)
{
	size_t len;
	char *text = read_file(path, &len);
	cr_assert_not_null(text, "cannot read %s (run the tests from the repository root)", path);
	Lowered *l = lower_text(path, text, len, mode, run);
	free(text);
	return l;
}

static int64_t bytes_of(const LValue *v)
{
	int64_t n = dtype_bytes(v->type.dtype);
	for (int d = 0; d < v->type.rank; d++)
		n *= v->type.dims[d];
	return n;
}

/* The value whose buffer v's is: through views and values computed in
 * place (a cross-entropy's gradient over its logits, which end there). */
static int root_buffer(const Program *p, int v)
{
	for (;;) {
		int s = emit_view_of(p, v) >= 0 ? emit_view_of(p, v) : emit_in_place_of(p, v);
		if (s < 0)
			return v;
		v = s;
	}
}

static void expect_plan(const char *path, const char *mode)
{
	Run *r;
	Lowered *l = lower_path(path, mode, &r);
	Program *p = emit_plan(l, path);
	int nv = l->nvalues, end = l->nops + 2;
	int *def = malloc(sizeof(int) * (size_t)nv), *last = malloc(sizeof(int) * (size_t)nv);
	for (int v = 0; v < nv; v++)
		def[v] = last[v] = v < l->nparams ? -1 : -2;
	for (int i = 0; i < l->nops; i++) {
		const LOp *o = &l->ops[i];
		if (op_shadow(l, i))   /* not run: the adjoint reading through it marks its operands below */
			continue;
		def[o->result] = last[o->result] = i;
		for (int k = 0; k < o->nin; k++)   /* a fused operator's: what its group reads from outside */
			last[o->in[k]] = i;
		if (o->grad == GRAD_ADJOINT) {   /* the operator as it was before fusion, as its grad column says */
			const LOp *f = differentiated(l, o);
			for (int k = 0; k < f->nin && (op_info[f->op].grad & GR_X); k++)
				last[f->in[k]] = i;
			if (op_info[f->op].grad & GR_Y)
				last[f->result] = i;
		}
	}
	for (int i = 0; i < l->nops; i++) {   /* a stored placeholder is written where its kernel runs */
		const LOp *o = &l->ops[i];
		if (o->op == OP_FUSED && l->fusion[i].writes && l->fusion[i].into > last[o->result])
			last[o->result] = l->fusion[i].into;
	}
	if (l->loss >= 0 && last[l->loss] < l->nfwd)
		last[l->loss] = l->nfwd;
	for (int v = 0; l->grad && v < l->nparams; v++)
		if (l->grad[v] >= 0)
			last[l->grad[v]] = l->nops;
	for (int k = 0; k < l->nret; k++)
		last[l->rets[k]] = l->nops + 1;
	for (int v = 0; v < l->nparams; v++)
		last[v] = end;
	/* a half operator's adjoint (but a Cast's) widens its operands and
	 * result, whatever it reads: each must have a buffer, fused or not */
	for (int i = 0; i < l->nops; i++) {
		const LOp *o = &l->ops[i], *f = o->grad == GRAD_ADJOINT ? differentiated(l, o) : NULL;
		if (!f || f->op == OP_CAST || l->values[f->result].type.dtype != DT_BF16)
			continue;
		cr_assert(emit_offset(p, f->result) >= 0, "%s: %%%s's adjoint widens it, which has no buffer", path,
		          l->values[f->result].name);
		for (int k = 0; k < f->nin; k++)
			cr_assert(emit_offset(p, f->in[k]) >= 0 || l->values[f->in[k]].type.dtype != DT_BF16,
			          "%s: %%%s's adjoint widens %%%s, which has no buffer", path, l->values[f->result].name,
			          l->values[f->in[k]].name);
	}
	int64_t slab = emit_slab_bytes(p);
	bool *fused = calloc((size_t)nv, sizeof *fused);
	for (int i = 0; i < l->nops; i++)
		fused[l->ops[i].result] = l->ops[i].op == OP_FUSED && !l->fusion[i].writes;   /* no buffer */
	for (int v = 0; v < nv; v++) {
		int64_t off = emit_offset(p, v), size = bytes_of(&l->values[v]);
		cr_assert(def[v] > -2, "%s: %%%s is never defined", path, l->values[v].name);
		cr_assert((off < 0) == fused[v], "%s: %%%s %s", path, l->values[v].name,
		          fused[v] ? "is fused but has a buffer" : "has no buffer");
		if (fused[v])
			continue;
		cr_assert(off % 256 == 0 && off >= 0 && off + size <= slab, "%s: %%%s at [%lld, %lld) in a slab of %lld",
		          path, l->values[v].name, (long long)off, (long long)(off + size), (long long)slab);
		for (int u = 0; u < v; u++) {
			if (fused[u])
				continue;
			bool alive_together = def[u] <= last[v] && def[v] <= last[u];
			int64_t uo = emit_offset(p, u), us = bytes_of(&l->values[u]);
			int ru = root_buffer(p, u), rv = root_buffer(p, v);
			if (ru == rv) {   /* a view and its source, two views of one value, a value computed in place */
				cr_assert(uo == off && us == size, "%s: view %%%s is not where %%%s is", path, l->values[v].name,
				          l->values[u].name);
				continue;
			}
			bool share = size && us && uo < off + size && off < uo + us;
			cr_assert(!(alive_together && share), "%s: %%%s [%d, %d] and %%%s [%d, %d] share bytes", path,
			          l->values[u].name, def[u], last[u], l->values[v].name, def[v], last[v]);
		}
	}
	for (int i = 0; i < l->nops; i++) {   /* an operator's scratch: no value alive while it runs lies there */
		if (p->op_scratch[i] < 0)
			continue;
		int64_t at = p->op_scratch[i], bytes = scratch_bytes(l, &l->ops[i]);
		int until = i + (op_bucket(l, i) > 0 ? op_bucket(l, i) - 1 : 0);
		cr_assert(at % 256 == 0 && at + bytes <= slab, "%s: operator %d's scratch [%lld, %lld) in a slab of %lld", path, i,
		          (long long)at, (long long)(at + bytes), (long long)slab);
		for (int v = l->nparams; v < nv; v++) {
			int64_t off = emit_offset(p, v), size = bytes_of(&l->values[v]);
			bool alive = !fused[v] && def[v] <= until && i <= last[v];
			cr_assert(!(alive && size && off < at + bytes && at < off + size),
			          "%s: operator %d's scratch [%d, %d] and %%%s [%d, %d] share bytes", path, i, i, until,
			          l->values[v].name, def[v], last[v]);
		}
	}
	free(def);
	free(last);
	free(fused);
	emit_free(p);
	run_free(r);
}

Test(plan, no_live_buffers_share_bytes)
{
	static const char *const models[] = {
		"ir-samples/auto_parallel_case.ir", "ir-samples/data_parallel_mlp.ir", "ir-samples/ffn_propagation.ir",
		"ir-samples/layout_dense_matmul.ir", "ir-samples/layout_three_layer.ir", "ir-samples/matmul_relu_semi.ir",
		"ir-samples/recursive_net.ir", "ir-samples/shard_dense_relu.ir", "ir-samples/shard_net1.ir",
		"ir-samples/shard_net2.ir", "ir-samples/transformer_block.ir", "tests/e2e/transformer_train.ir",
		"tests/e2e/every_grad.ir", "tests/e2e/recompute_layers.ir", "tests/e2e/masked_attention.ir",
		"tests/e2e/masked_attention_fwd.ir", "tests/e2e/half_transformer_bf16.ir",
		"tests/e2e/half_every_grad_bf16.ir", "ir-samples/stand_alone_ops.ir",
	};
	for (size_t i = 0; i < sizeof models / sizeof *models; i++) {
		expect_plan(models[i], NULL);
		expect_plan(models[i], "\"stand_alone\"");
	}
}

/* Buffers are reused: the transformer block's intermediate values need far
 * less than their sum. */
Test(plan, liveness_shares_memory)
{
	Run *r;
	Lowered *l = lower_path("ir-samples/transformer_block.ir", NULL, &r);
	Program *p = emit_plan(l, "t.ir");
	int64_t params = 0, values = 0;
	for (int v = 0; v < l->nvalues; v++)
		*(v < l->nparams ? &params : &values) += (bytes_of(&l->values[v]) + 255) / 256 * 256;
	int64_t transient = emit_slab_bytes(p) - params;
	cr_assert_lt(transient * 3, values, "%lld bytes for values of %lld", (long long)transient, (long long)values);
	emit_free(p);
	run_free(r);
}

/* program.c, then rank's table (rank_<r>.c). */
static char *program_text(Lowered *l, Run *r, const char *name, int64_t rank)
{
	Program *p = emit_plan(l, name);
	StrBuf b = {0};
	emit_program(&b, p);
	emit_table(&b, p, rank);
	emit_free(p);
	run_free(r);
	return b.data;
}

static char *rank_text(const char *path, int64_t rank)
{
	Run *r;
	Lowered *l = lower_path(path, NULL, &r);
	return program_text(l, r, path, rank);
}

static char *rank_text_of(const char *text, int64_t rank)
{
	Run *r;
	Lowered *l = lower_text("t.ir", text, strlen(text), NULL, &r);
	return program_text(l, r, "t.ir", rank);
}

static void expect_no_line(const char *text, const char *line)
{
	cr_assert_null(strstr(text, line), "unexpected\n  %s\nin\n%s", line, text);
}

static void expect_line(const char *text, const char *line)
{
	cr_assert_not_null(strstr(text, line), "no line\n  %s\nin\n%s", line, text);
}

/* The seed: rank 0 and rank 5 join different groups of the same partition,
 * slice their own piece of x, and reduce-scatter the partial sums. The one
 * program reads the rank's numbers from its table: the group's first member,
 * the slice bounds, where the pieces start. */
/* The MatMul -> ReLU sample with x held whole by a dataset tuple, as
 * full_batch holds it, so that its result stays split as the ReLU computes
 * it (full_batch would hand it over whole) and each rank saves its piece. */
static char *seed_as_computed(void)
{
	size_t len;
	char *text = read_file("ir-samples/matmul_relu_semi.ir", &len);
	cr_assert_not_null(text);
	const char *at = strstr(text, "context {\n");
	cr_assert_not_null(at);
	StrBuf b = {0};
	sb_printf(&b, "%.*scontext {\n  dataset_strategy: ((1, 1),),\n%s", (int)(at - text), text,
	          at + strlen("context {\n"));
	free(text);
	return b.data;
}

Test(text, seed_ranks)
{
	char *seed = seed_as_computed();
	char *r0 = rank_text_of(seed, 0), *r5 = rank_text_of(seed, 5);
	free(seed);
	expect_line(r0, "sc_rt *rt = sc_init(&argc, &argv, 8);");
	expect_line(r0, "const int64_t *const T = sc_ranks[sc_rank(rt)];");
	expect_line(r0, "sc_group *g0 = sc_group_split_grid(rt, (int)T[0], 1, (const int[]){4}, (const int[]){1});  "
	                "/* 4 ranks */");
	expect_line(r0, "const int64_t sc_rank_0[] = {\n\t/* T[0] g0's first member: ranks 0, 1, 2, 3 */ 0,\n");
	expect_line(r5, "const int64_t sc_rank_5[] = {\n\t/* T[0] g0's first member: ranks 4, 5, 6, 7 */ 4,\n");
	expect_line(r5, " * (1, 1) on (2, 4);");
	expect_line(r0, "sc_matmul(rt, x_1, w, v1, 8, 16, 8, 0, 0);");
	expect_line(r0, "sc_reduce_scatter(rt, g0, v1, v1_1, SC_F32, (const int64_t[]){8, 16}, 2, 0, SC_SUM);");
	/* rank 5: coordinates (1, 1) on (2, 4): rows 8:16, columns 8:16 of x */
	expect_line(r5, "sc_strided_slice(rt, SC_F32, x, x_1, (const int64_t[]){16, 32}, 2, T + 3, T + 5, "
	                "(const int64_t[]){1, 1});");
	expect_line(r5, "\t/* T[3] %x.1: begin, end */ 8, 8, 16, 16,\n");
	expect_line(r0, "\t/* T[3] %x.1: begin, end */ 0, 0, 8, 8,\n");
	expect_line(r5, "sc_save_npy(rt, out_dir, \"output_0.npy\", v2, SC_F32, (const int64_t[]){16, 16}, 2, "
	                "T + 7, (const int64_t[]){2, 16});");
	expect_line(r5, "\t/* T[7] %2 starts at */ 10, 0,\n");
	/* x is whole on every rank: where its piece starts is in the program */
	expect_line(r5, "sc_init_uniform(rt, x, SC_F32, \"x\", 0u, (const int64_t[]){16, 32}, 2, (const int64_t[]){0, 0}, ");
	free(r0);
	free(r5);
}

/* Dynamic loss scaling: an overflow at scale 1 counts towards the run's
 * stop (sc_check_skips), a good step starts the count again. */
Test(text, loss_scale_stuck_at_one_stops)
{
	char *t = rank_text("tests/e2e/mixed_loss_scale_f16.ir", 0);
	expect_line(t, "int64_t good_steps = 0, updates = 0, skipped_at_1 = 0;");
	expect_line(t, "\t\t\tif (loss_scale == 1)   /* skipped at scale 1: SC_MAX_SKIPS_AT_1 in a row stop the run */\n"
	               "\t\t\t\tsc_check_skips(rt, step, ++skipped_at_1);\n");
	expect_line(t, "\t\t\tgoto step_done;\n\t\t}\n\t\tskipped_at_1 = 0;\n");
	expect_line(t, "\tstep_done:\n\t\tif (sc_checkpoint_due(&ckpts, step, steps)) {");   /* a skipped step's checkpoint too */
	expect_line(t, "sc_check_loss(rt, step, ");
	free(t);
}

/* Training (the searched plan, as the driver compiles it): the loss
 * completed by an AllReduce and printed, the gradients of w and w2, whose
 * MatMuls split the batch, summed over those ranks in one bucket, Momentum
 * with its state in the slab. */
Test(text, training_step)
{
	char *t = rank_text("ir-samples/auto_parallel_case.ir", 0);
	expect_line(t, "int64_t steps = sc_steps(rt, 20);");
	expect_line(t, "const double lr = sc_learning_rate(SC_LR_CONSTANT, (const double[]){0.20000000000000001}, step - 1);");
	expect_line(t, "sc_check_loss(rt, step, loss_1);   /* NaN or inf: every rank stops */\n\t\tfloat loss_now, ");
	expect_line(t, "sc_to_host(rt, &loss_now, loss_1, sizeof loss_now);");   /* the loss made whole on every rank */
	expect_line(t, "sc_print_step(rt, step, steps, t0, loss_now, lr, -1, ");   /* no clip: no norm */
	expect_line(t, "const char *out_dir = sc_output_dir(rt), ");   /* checked writable before step 1 */
	expect_line(t, "sc_all_reduce_bucket(rt, g1, 2, (const void *const[]){grad_w, grad_w2}, "
	               "(void *const[]){grad_w_1, grad_w2_1}, (const int64_t[]){128, 256}, SC_F32, SC_SUM, ");
	expect_line(t, "sc_momentum(rt, w, grad_w_1, (float *)(slab + ");
	expect_line(t, "sc_momentum(rt, w2, grad_w2_1, (float *)(slab + ");
	expect_line(t, "sc_save_npy(rt, out_dir, \"param_w2.npy\", w2, SC_F32, ");
	free(t);
}

/* A checkpoint: every parameter from --param's .npy file, else from the
 * --params safetensors file, else its initializer; the trained ones also
 * written to params.safetensors, each rank adding its piece. Inputs take
 * no checkpoint. */
Test(text, checkpoint_in_and_out)
{
	char *t = rank_text("ir-samples/auto_parallel_case.ir", 0);
	expect_line(t, "sc_safetensors *ckpt = sc_safetensors_open(rt, \"--params\", sc_option(rt, \"--params\", NULL), "
	               "sc_option(rt, \"--param-names\", NULL), param_names, 2);");
	expect_line(t, "\tif ((file = sc_option(rt, \"--param\", \"w2\")))\n\t\tsc_load_npy(rt, \"w2\", file, w2, SC_F32, ");
	expect_line(t, ");\n\telse if (ckpt)\n\t\tsc_load_safetensors(rt, ckpt, \"w2\", w2, SC_F32, ");
	expect_line(t, "\tsc_safetensors_close(ckpt);\n");
	expect_line(t, "\tsc_safetensors_writer *ckpt_out = sc_safetensors_create(out_dir, \"params.safetensors\");\n");
	expect_line(t, "\tsc_safetensors_add(ckpt_out, \"w2\", w2, SC_F32, ");
	expect_line(t, "\tsc_safetensors_write(rt, ckpt_out);\n");
	expect_no_line(t, "sc_load_safetensors(rt, ckpt, \"x\"");
	free(t);
	t = rank_text("ir-samples/matmul_relu_semi.ir", 0);   /* inference: read, never written */
	expect_line(t, "else if (ckpt)\n\t\tsc_load_safetensors(rt, ckpt, \"w\", w, SC_F32, ");
	expect_no_line(t, "sc_safetensors_create");
	free(t);
}

/* Data that streams: every input registered with sc_data_input (token ids
 * and labels with their bound), read before each step when --data feeds
 * it, else from --input or its initializer; parameters never stream. */
Test(text, data_streams)
{
	char *t = rank_text("tests/e2e/tied_embedding.ir", 0);
	expect_line(t, "\tsc_data *data = sc_data_new(rt);");
	expect_line(t, "\tif (sc_data_input(data, \"ids\", ids, SC_I32, (const int64_t[]){8, 4}, 2, ");
	expect_line(t, ", 48, \"they index Gather %h's table %wte, which has 48 rows\"))\n\t\t;   /* read before each step "
	               "(sc_data_step) */\n\telse if ((file = sc_option(rt, \"--input\", \"ids\")))\n\t\tsc_load_indices(");
	expect_line(t, "\tif (sc_data_input(data, \"labels\", labels, SC_I32, (const int64_t[]){32}, 1, ");
	expect_line(t, "\tsc_data_start(rt, data, first, steps);");
	expect_line(t, "for (int64_t step = first; step <= steps; step++) {\n\t\tsc_data_step(rt, data, step);");
	expect_line(t, "\tdouble t1 = sc_time(rt);\n\tsc_data_close(rt, data);\n");
	expect_no_line(t, "sc_data_input(data, \"wte\"");
	free(t);
	t = rank_text("ir-samples/matmul_relu_semi.ir", 0);   /* a float input: no bound */
	expect_line(t, "\tif (sc_data_input(data, \"x\", x, SC_F32, ");
	expect_line(t, ", -1, NULL))\n\t\t;");
	free(t);
}

/* A ReduceMax split along its reduced dim: the maximum's ranks pass the
 * gradient on, each counts its piece's ties of the maximum and one AllReduce
 * sums the counts, which the gradient kernel divides by. */
Test(text, split_reduce_max_counts_ties_over_ranks)
{
	char *t = rank_text("tests/e2e/max_ties.ir", 0);
	expect_line(t, "sc_where_equal(rt, m, m_2, ");
	expect_line(t, "sc_count_equal(rt, w, m_2, ties_m, (const int64_t[]){4, 2}, 2, (const int[]){1}, 1);");
	expect_line(t, "SC_F32, 2, SC_SUM);  /* gradient of %m, the ties counted over the ranks that split the reduced dims");
	expect_line(t, "sc_reduce_max_grad(rt, w, m, grad_m, ties_m_3, grad_w, ");
	expect_line(t, "sc_count_equal(rt, y_2, m3_1, ties_m3, (const int64_t[]){2, 2}, 2, (const int[]){0, 1}, 2);");
	free(t);
	t = rank_text("tests/e2e/max_ties_2.ir", 0);   /* ReduceMax over a whole dim: the ties it holds */
	expect_line(t, "sc_reduce_max_grad(rt, z, rz, grad_rz, NULL, grad_z, ");
	expect_no_line(t, "sc_count_equal(rt, z, ");
	free(t);
}

/* FlashAttentionScore's scale_value is written as a C number that compiles
 * whatever its value: the default 1 was written "1f", which is no C
 * literal (its program did not build). */
Test(text, flash_attention_default_scale_is_a_c_number)
{
	char *t = rank_text_of("context {device_num: 1}\n"
	                       "graph @g(%q: <Tensor[Float32], (1, 2, 4, 8)>, %k: <Tensor[Float32], (1, 2, 4, 8)>,\n"
	                       "         %v: <Tensor[Float32], (1, 2, 4, 8)>) {\n"
	                       "  %o = FlashAttentionScore(%q, %k, %v) {head_num: 2}\n  return %o\n}\n", 0);
	expect_line(t, "(const int64_t[]){1, 2, 4, 4, 8, 2}, 1, 0, SC_FA_BNSD);");
	free(t);
}

/* ReduceMin likewise: its partial minima completed by MIN collectives, the
 * minimum's ranks passing the gradient on, the ties counted over the ranks,
 * and ReduceMin's own gradient entry; an uneven piece's padding the highest
 * float. */
Test(text, split_reduce_min_counts_ties_over_ranks)
{
	char *t = rank_text("tests/e2e/reduce_min.ir", 0);
	expect_line(t, "sc_reduce_min(rt, w, m, (const int64_t[]){4, 2}, 2, (const int[]){1}, 1);");
	expect_line(t, "sc_reduce_scatter(rt, g0, m, m_1, SC_F32, (const int64_t[]){4}, 1, 0, SC_MIN);");
	expect_line(t, "SC_F32, 1, SC_MIN);  /* %m3 to Add %a2 input 1: partial results made whole; ");
	expect_line(t, "sc_where_equal(rt, m, m_2, grad_m_1_1, grad_m, 4);");
	expect_line(t, "sc_count_equal(rt, w, m_2, ties_m, (const int64_t[]){4, 2}, 2, (const int[]){1}, 1);");
	expect_line(t, "sc_reduce_min_grad(rt, w, m, grad_m, ties_m_3, grad_w, ");
	expect_line(t, "/* gradient of %m2, the minimum, to mask the gradient: partial results made whole; ");
	expect_line(t, ", 3.4028234663852886e+38);");
	expect_no_line(t, "sc_reduce_max(");
	expect_no_line(t, "sc_reduce_max_grad(");
	expect_no_line(t, "SC_MAX);");
	free(t);
}

/* ReduceProd: partial products completed by PROD collectives, whose
 * adjoint passes dy on; the gradient's nonzero product and zero count over
 * the ranks (an AllReduce prod and one sum); an uneven piece's padding 1.
 * ReduceAll and ReduceAny: Bool bytes completed by MIN and MAX, the uneven
 * padding true under All and false under Any. */
Test(text, split_reduce_prod_all_any)
{
	char *t = rank_text("tests/e2e/reduce_prod_logical.ir", 0);
	expect_line(t, "sc_reduce_prod(rt, w, p1, (const int64_t[]){4, 2}, 2, (const int[]){1}, 1);");
	expect_line(t, "sc_reduce_scatter(rt, g0, p1, p1_1, SC_F32, (const int64_t[]){4}, 1, 0, SC_PROD);");
	expect_line(t, "sc_reduce_prod_stat(rt, w, 0, nonzero_prod_p1, (const int64_t[]){4, 2}, 2, (const int[]){1}, 1);");
	expect_line(t, "sc_reduce_prod_stat(rt, w, 1, zeros_p1, (const int64_t[]){4, 2}, 2, (const int[]){1}, 1);");
	expect_line(t, "/* gradient of %p1, the nonzero factors' product over the ranks that split the reduced dims: ");
	expect_line(t, "/* gradient of %p1, the zeros counted over the ranks that split the reduced dims: ");
	expect_line(t, "sc_reduce_prod_grad(rt, w, grad_p1_1_1, nonzero_prod_p1_3, zeros_p1_3, grad_w, ");
	expect_line(t, "sc_reduce_all(rt, c1, all, (const int64_t[]){8, 2}, 2, (const int[]){1}, 1);");
	expect_line(t, "SC_BOOL, (const int64_t[]){8}, 1, 0, SC_MIN);");
	expect_line(t, "sc_all_reduce(rt, g5, any, any_1, SC_BOOL, 8, SC_MAX);");
	expect_line(t, "SC_BOOL, (const int64_t[]){2, 2, 4}, 3, 1, sc_real_len(10, T[32], 2), 1);  /* ReduceAll %alls");
	expect_line(t, "SC_BOOL, (const int64_t[]){2, 2, 4}, 3, 1, sc_real_len(10, T[32], 2), 0);  /* ReduceAny %anys");
	expect_line(t, "SC_F32, (const int64_t[]){2, 2, 4}, 3, 1, sc_real_len(10, T[32], 2), 1);  /* ReduceProd %p5");
	free(t);
}

#define OPT_MODEL(opt, extra)                                                                             \
	"context {device_num: 4, parallel_mode: \"semi_auto_parallel\"}\n"                                    \
	"graph @g(%x: <Tensor[Float32], (8, 4)>, %w: <Parameter[Float32], (4, 4)>,\n"                         \
	"         %gamma: <Parameter[Float32], (4,)>, %wc: <Parameter[Float32], (4, 4)>) {\n"                   \
	"  %y = MatMul(%x, %w)\n  %z = Mul(%y, %gamma)\n"                                                     \
	"  %u = MatMul(%z, %wc) {in_strategy: ((1, 1), (1, 4))}\n"                                           \
	"  %loss = ReduceMean(%u) {axis: (0, 1)}\n  return %loss\n}\n"                                       \
	"train {loss: %loss, optimizer: " opt extra "}\n"

/* Lamb: per parameter its squared norms into the rank's share of
 * lamb_norms (the table's size of a first copy, else 0), one AllReduce,
 * then sc_lamb reading the whole parameter's two sums; gamma undecayed. */
Test(text, lamb_norms_then_update)
{
	char *t = rank_text_of(OPT_MODEL("Lamb(learning_rate: 0.01, weight_decay: 0.1)", ""), 1);
	expect_line(t, "sc_lamb_norms(rt, w, grad_w_1, (const float *)(slab + ");
	expect_line(t, ", 0.90000000000000002, 0.999, 9.9999999999999995e-07, 0.10000000000000001, step, lamb_norms + 0);");
	expect_line(t, ", 0.90000000000000002, 0.999, 9.9999999999999995e-07, 0, step, lamb_norms + 2);");   /* gamma */
	expect_line(t, "sc_all_reduce(rt, g");
	expect_line(t, "lamb_norms, lamb_norms_1, SC_F32, 6, SC_SUM);  /* Lamb's squared norms of each parameter and of "
	            "its update, for the trust ratio: summed over every rank");
	expect_line(t, "sc_lamb(rt, wc, grad_wc, (float *)(slab + ");
	expect_line(t, ", lr, 0.90000000000000002, 0.999, 9.9999999999999995e-07, 0.10000000000000001, step, "
	            "lamb_norms_1 + 4);");
	expect_line(t, "%lamb_norms: sizes of the first copies */");   /* rank 1's table */
	free(t);
}

/* The optimizers' calls with their options; gamma is not decayed but by SGD. */
Test(text, optimizer_options)
{
	char *t = rank_text_of(OPT_MODEL("AdamWeightDecay(learning_rate: 0.01, weight_decay: 0.1)", ""), 1);
	expect_line(t, "sc_adam_weight_decay(rt, w, grad_w_1, (float *)(slab + ");
	expect_line(t, ", lr, 0.90000000000000002, 0.999, 9.9999999999999995e-07, 0.10000000000000001);");
	expect_line(t, ", lr, 0.90000000000000002, 0.999, 9.9999999999999995e-07, 0);");   /* gamma */
	expect_line(t, "const double lr = sc_learning_rate(SC_LR_CONSTANT, (const double[]){0.01}, step - 1);");
	expect_no_line(t, "sc_clip_by_norm(");
	free(t);
	t = rank_text_of(OPT_MODEL("SGD(momentum: 0.9, dampening: 0.1, weight_decay: 0.1)", ""), 0);
	expect_line(t, "sc_sgd(rt, gamma, grad_gamma_1, (float *)(slab + ");
	expect_line(t, ", lr, 0.90000000000000002, 0.10000000000000001, 0.10000000000000001, 0, step);");
	free(t);
	t = rank_text_of(OPT_MODEL("SGD", ""), 0);   /* no momentum: no state */
	expect_line(t, "sc_sgd(rt, w, grad_w_1, NULL, 16, lr, 0, 0, 0, 0, step);");
	expect_line(t, "(const double[]){0.10000000000000001}, step - 1);");   /* nn.SGD's default */
	free(t);
	t = rank_text_of(OPT_MODEL("Momentum(learning_rate: 0.1, momentum: 0.9, weight_decay: 0.5, use_nesterov: true)", ""),
	                 0);
	expect_line(t, ", 16, lr, 0.90000000000000002, 0.5, 1);");
	expect_line(t, ", 4, lr, 0.90000000000000002, 0, 1);");   /* gamma */
	free(t);
	/* a schedule: its arguments in sc_learning_rate's order, defaults filled in */
	t = rank_text_of(OPT_MODEL("Adam(learning_rate: CosineWithWarmUpLR(learning_rate: 0.01, warmup_steps: 2, "
	                           "total_steps: 10))", ""), 0);
	expect_line(t, "const double lr = sc_learning_rate(SC_LR_COSINE_WARMUP, (const double[]){0.01, 2, 10, 0, 0}, "
	               "step - 1);");
	free(t);
}

/* clip_global_norm: each rank sums the squares of the gradient pieces it
 * holds the first copy of (w and gamma are replicated: rank 0 only; wc's
 * columns are split: every rank), one AllReduce over every rank, then each
 * gradient is scaled before the update. */
Test(text, clip_global_norm)
{
	const char *model = OPT_MODEL("SGD(learning_rate: 0.1)", ", clip_global_norm: 1.5");
	char *t0 = rank_text_of(model, 0), *t2 = rank_text_of(model, 2);
	expect_line(t0, "sc_sum_squares(rt, (const float *const[]){grad_w_1, grad_gamma_1, grad_wc}, T + 6, 3, "
	                "grad_sqnorm);");
	expect_line(t0, "\t/* T[6] %grad_sqnorm: sizes of the first copies */ 16, 4, 4,\n");
	expect_line(t2, "\t/* T[6] %grad_sqnorm: sizes of the first copies */ 0, 0, 4,\n");
	expect_line(t0, "sc_all_reduce(rt, g");
	expect_line(t0, "grad_sqnorm, grad_sqnorm_1, SC_F32, 1, SC_SUM);  /* the gradients' squared global norm");
	expect_line(t0, "sc_clip_by_norm(rt, grad_w_1, grad_w__2, 16, grad_sqnorm_1, 1.5);");
	expect_line(t0, "sc_to_host(rt, &sqnorm_now, grad_sqnorm_1, sizeof sqnorm_now);");   /* printed */
	expect_line(t0, "sc_print_step(rt, step, steps, t0, loss_now, lr, sqnorm_now, ");
	expect_line(t0, "sc_sgd(rt, w, grad_w__2, NULL, 16, ");
	free(t0);
	free(t2);
}

/* Collective calls a run makes: a bucket is one. */
static int collective_calls(const Lowered *l)
{
	int n = 0;
	for (int i = 0; i < l->nops; i++)
		n += l->ops[i].step && l->ops[i].step->kind != STEP_SLICE && op_bucket(l, i) >= 0;
	return n;
}

/* The data-parallel gradient sums of a training step go out in buckets:
 * fewer calls, the same bytes, each bucket's members over one group and
 * consecutive, and no operator reads a member's result before its bucket. */
Test(bucket, gradient_sums_share_calls)
{
	Run *r0, *r1;
	bucket_bytes = 0;
	Lowered *alone = lower_path("tests/e2e/transformer_train.ir", NULL, &r0);
	bucket_bytes = 25000000;
	Lowered *l = lower_path("tests/e2e/transformer_train.ir", NULL, &r1);
	cr_assert_eq(l->comm_bytes, alone->comm_bytes);
	cr_assert_eq(l->nops, alone->nops);
	int calls = collective_calls(l), before = collective_calls(alone), buckets = 0;
	cr_assert_lt(calls, before, "%d collective calls with buckets, %d without", calls, before);
	for (int i = 0; i < l->nops; i++) {
		const LOp *h = &l->ops[i];
		int n = op_bucket(l, i);
		if (n <= 0)
			continue;
		buckets++;
		cr_assert(i >= l->nfwd && i + n <= l->nops);
		for (int j = 1; j < n; j++) {
			const LOp *m = &l->ops[i + j];
			cr_assert_eq(op_bucket(l, i + j), -1);
			cr_assert(m->step->kind == STEP_ALL_REDUCE && redist_same_group(h->step, m->step));
		}
		for (int u = 0; u < i + n; u++)
			for (int k = 0; k < l->ops[u].nin; k++)
				for (int j = 0; j < n; j++)
					cr_assert_neq(l->ops[u].in[k], l->ops[i + j].result,
					              "op %d reads a result of the bucket at %d before it is sent", u, i);
	}
	cr_assert_gt(buckets, 0);
	for (int i = 0; i < alone->nops; i++)
		cr_assert_eq(op_bucket(alone, i), 0);
	run_free(r0);
	run_free(r1);
}

/* A MatMul of two BFloat16 operands runs on them directly (sc_matmul_half:
 * tensor cores on cuda), forward and in both adjoints, and writes its
 * BFloat16 result itself, rounded once in the kernel: neither the operands
 * nor the result have Float32 copies. */
Test(text, half_matmul_reads_its_operands_directly)
{
	static const char ir[] =
		"context { device_num: 1, parallel_mode: \"stand_alone\" }\n"
		"graph @m(%x: <Tensor[BFloat16], (4, 8)> = uniform(-1, 1),\n"
		"         %w: <Parameter[BFloat16], (8, 2)> = normal(0.5)) {\n"
		"  %y = MatMul(%x, %w)\n"
		"  %l = ReduceSum(%y) {axis: (0, 1)}\n"
		"  return %l\n"
		"}\n"
		"train { loss: %l, optimizer: SGD(learning_rate: 0.1) }\n";
	char *t = rank_text_of(ir, 0);
	expect_line(t, "sc_matmul_half(rt, SC_BF16, x, w, y, SC_BF16, 4, 2, 8, 0, 0);");
	expect_line(t, "sc_matmul_half(rt, SC_BF16, x, grad_y, grad_w, SC_BF16, ");   /* dw = x^T dy */
	expect_no_line(t, "sc_cast(rt, x, SC_BF16");                /* x is never widened */
	expect_no_line(t, "SC_F32, y, SC_BF16");                    /* nor rounded from a Float32 copy */
	expect_no_line(t, "SC_F32, grad_w, SC_BF16");
	const char *w = strstr(t, "sc_cast(rt, w, SC_BF16");        /* w once: for SGD's update */
	cr_assert(w && !strstr(w + 1, "sc_cast(rt, w, SC_BF16") && strstr(w, "sc_sgd("), "w widened outside SGD:\n%s", t);
	expect_no_line(t, "sc_matmul(rt, ");
	free(t);
}

/* BatchMatMul likewise: sc_batch_matmul_half, forward and adjoints. */
Test(text, half_batch_matmul_reads_its_operands_directly)
{
	static const char ir[] =
		"context { device_num: 1, parallel_mode: \"stand_alone\" }\n"
		"graph @m(%x: <Tensor[BFloat16], (2, 4, 8)> = uniform(-1, 1),\n"
		"         %w: <Parameter[BFloat16], (2, 8, 3)> = normal(0.5)) {\n"
		"  %y = BatchMatMul(%x, %w)\n"
		"  %l = ReduceSum(%y) {axis: (0, 1, 2)}\n"
		"  return %l\n"
		"}\n"
		"train { loss: %l, optimizer: SGD(learning_rate: 0.1) }\n";
	char *t = rank_text_of(ir, 0);
	expect_line(t, "sc_batch_matmul_half(rt, SC_BF16, x, (const int64_t[]){2}, 1, w, (const int64_t[]){2}, 1, "
	               "y, SC_BF16, ");
	expect_line(t, "sc_batch_matmul_half(rt, SC_BF16, x, (const int64_t[]){2}, 1, grad_y");   /* dw = x^T dy */
	expect_no_line(t, "sc_cast(rt, x, SC_BF16");
	expect_no_line(t, "SC_F32, y, SC_BF16");
	expect_no_line(t, "SC_F32, grad_w, SC_BF16");
	expect_no_line(t, "sc_batch_matmul(rt, ");
	free(t);
}

/* A broadcast operand's gradient is the one product on halves written in
 * Float32: it is summed down to the operand's shape, then rounded once. */
Test(text, half_batch_matmul_broadcast_gradient_is_summed_in_float32)
{
	static const char ir[] =
		"context { device_num: 1, parallel_mode: \"stand_alone\" }\n"
		"graph @m(%x: <Tensor[BFloat16], (2, 4, 8)> = uniform(-1, 1),\n"
		"         %w: <Parameter[BFloat16], (1, 8, 3)> = normal(0.5)) {\n"
		"  %y = BatchMatMul(%x, %w)\n"
		"  %l = ReduceSum(%y) {axis: (0, 1, 2)}\n"
		"  return %l\n"
		"}\n"
		"train { loss: %l, optimizer: SGD(learning_rate: 0.1) }\n";
	char *t = rank_text_of(ir, 0);
	expect_line(t, "sc_batch_matmul_half(rt, SC_BF16, x, (const int64_t[]){2}, 1, w, (const int64_t[]){1}, 1, "
	               "y, SC_BF16, ");
	expect_line(t, "sc_batch_matmul_half(rt, SC_BF16, x, (const int64_t[]){2}, 1, grad_y, (const int64_t[]){2}, 1, "
	               "(float *)(slab + ");                                            /* dw = x^T dy, then summed */
	expect_line(t, "), SC_F32, (const int64_t[]){2}, 1, 8, 3, 4, 1, 0);");
	expect_line(t, "sc_sum_to_shape(rt, (float *)(slab + ");
	expect_line(t, ", SC_F32, grad_w, SC_BF16, 24);");
	free(t);
}

/* Attention's scaling: the Mul by a one-element tensor is done by the
 * Softmax's kernel as it reads (fuse.c), in training too (the Mul's adjoint
 * reads its operands); the Mul has no code and its result no buffer. */
static char *fuse_text(const char *q_line)
{
	StrBuf b = {0};
	sb_puts(&b, "context { device_num: 1, parallel_mode: \"stand_alone\" }\n"
	            "graph @m(%x: <Tensor[Float32], (4, 8)> = uniform(-1, 1),\n"
	            "         %s: <Tensor[Float32], (1,)> = constant(0.5),\n"
	            "         %w: <Parameter[Float32], (8, 8)> = normal(0.5)) {\n"
	            "  %h = MatMul(%x, %w)\n"
	            "  %z = Mul(%h, %s)\n"
	            "  %p = Softmax(%z) {axis: -1}\n");
	sb_puts(&b, q_line);
	sb_puts(&b, "  %l = ReduceSum(%q) {axis: (0, 1)}\n"
	            "  return %l\n"
	            "}\n"
	            "train { loss: %l, optimizer: SGD(learning_rate: 0.1) }\n");
	char *t = rank_text_of(b.data, 0);
	sb_free(&b);
	return t;
}

Test(fuse, softmax_reads_the_scaled_operand)
{
	char *t = fuse_text("  %q = Square(%p)\n");
	expect_line(t, "/* %z = Mul: computed by the kernel that reads it (fused) */");
	expect_line(t, "sc_softmax_scaled(rt, h, s, p, (const int64_t[]){4, 8}, 2, -1);");
	expect_no_line(t, "*const z = ");                      /* no buffer */
	expect_no_line(t, "sc_binary(rt, SC_MUL, h");          /* no Mul kernel */
	expect_line(t, "sc_binary_grad(rt, SC_MUL, h, ");      /* its adjoint reads its operands */
	free(t);
}

Test(fuse, not_when_another_operator_reads_the_product)
{
	char *t = fuse_text("  %q = Add(%p, %z)\n");
	expect_no_line(t, "sc_softmax_scaled");
	expect_line(t, "sc_softmax(rt, z, p, ");
	free(t);
}

/* A BiasAdd first read by a unary operator: one kernel. In training the
 * GeLU's adjoint reads the sum, so the kernel writes it; forward only, the
 * sum has no buffer. gelu: the GeLU's attributes, as written. */
static char *bias_text_of(bool train, const char *gelu)
{
	StrBuf b = {0};
	sb_printf(&b,
	          "context { device_num: 1, parallel_mode: \"stand_alone\" }\n"
	          "graph @m(%%x: <Tensor[Float32], (4, 8)> = uniform(-1, 1),\n"
	          "         %%w: <Parameter[Float32], (8, 6)> = normal(0.5),\n"
	          "         %%c: <Parameter[Float32], (6,)> = normal(0.5)) {\n"
	          "  %%h = MatMul(%%x, %%w)\n"
	          "  %%hb = BiasAdd(%%h, %%c)\n"
	          "  %%g = GeLU(%%hb)%s\n"
	          "  %%l = ReduceSum(%%g) {axis: (0, 1)}\n"
	          "  return %%l\n"
	          "}\n",
	          gelu);
	if (train)
		sb_puts(&b, "train { loss: %l, optimizer: SGD(learning_rate: 0.1) }\n");
	char *t = rank_text_of(b.data, 0);
	sb_free(&b);
	return t;
}

static char *bias_text(bool train)
{
	return bias_text_of(train, "");
}

/* A BiasAdd first read by an Add of its own shape (a residual): one kernel,
 * whichever side of the Add it is on; in training the Add's adjoint reads
 * the sum, so the kernel writes it. */
static char *residual_text(bool train, bool bias_first)
{
	StrBuf b = {0};
	sb_printf(&b,
	          "context { device_num: 1, parallel_mode: \"stand_alone\" }\n"
	          "graph @m(%%x: <Tensor[Float32], (4, 8)> = uniform(-1, 1),\n"
	          "         %%w: <Parameter[Float32], (8, 8)> = normal(0.5),\n"
	          "         %%c: <Parameter[Float32], (8,)> = normal(0.5)) {\n"
	          "  %%h = MatMul(%%x, %%w)\n"
	          "  %%hb = BiasAdd(%%h, %%c)\n"
	          "  %%r = Add(%s)\n"
	          "  %%l = ReduceSum(%%r) {axis: (0, 1)}\n"
	          "  return %%l\n"
	          "}\n",
	          bias_first ? "%hb, %x" : "%x, %hb");
	if (train)
		sb_puts(&b, "train { loss: %l, optimizer: SGD(learning_rate: 0.1) }\n");
	char *t = rank_text_of(b.data, 0);
	sb_free(&b);
	return t;
}

Test(fuse, bias_and_residual_add_in_one_pass)
{
	for (int side = 0; side < 2; side++) {
		char *t = residual_text(false, side);
		expect_line(t, "/* %hb = BiasAdd: computed by the kernel that reads it (fused) */");
		expect_line(t, "sc_bias_add_residual(rt, h, c, NULL, x, r, 4, 8);");
		expect_no_line(t, "*const hb = ");
		expect_no_line(t, "sc_bias_add(rt");
		expect_no_line(t, "sc_binary(rt");
		free(t);
		t = residual_text(true, side);
		expect_line(t, "sc_bias_add_residual(rt, h, c, hb, x, r, 4, 8);");
		expect_line(t, "*const hb = ");
		free(t);
	}
}

Test(fuse, bias_and_unary_in_one_pass)
{
	char *t = bias_text(false);
	expect_line(t, "/* %hb = BiasAdd: computed by the kernel that reads it (fused) */");
	expect_line(t, "sc_bias_unary(rt, SC_U_GELU, 0, h, c, NULL, g, 4, 6);");
	expect_no_line(t, "*const hb = ");
	expect_no_line(t, "sc_bias_add(rt");
	free(t);
	t = bias_text(true);
	expect_line(t, "sc_bias_unary(rt, SC_U_GELU, 0, h, c, hb, g, 4, 6);");   /* the adjoint reads hb */
	expect_line(t, "*const hb = ");
	expect_line(t, "sc_unary_grad(rt, SC_U_GELU, 0, hb, ");
	free(t);
}

/* GeLU's erf form (approximate: "none") is its own kernel, which the fused
 * call and the adjoint name; "tanh", as written, is the default's. */
Test(fuse, bias_and_gelu_erf_form_in_one_pass)
{
	char *t = bias_text_of(true, " {approximate: \"none\"}");
	expect_line(t, "sc_bias_unary(rt, SC_U_GELU_ERF, 0, h, c, hb, g, 4, 6);");
	expect_line(t, "sc_unary_grad(rt, SC_U_GELU_ERF, 0, hb, ");
	expect_no_line(t, "SC_U_GELU,");
	free(t);
	t = bias_text_of(true, " {approximate: \"tanh\"}");
	expect_line(t, "sc_bias_unary(rt, SC_U_GELU, 0, h, c, hb, g, 4, 6);");
	expect_line(t, "sc_unary_grad(rt, SC_U_GELU, 0, hb, ");
	expect_no_line(t, "SC_U_GELU_ERF");
	free(t);
}

/* Attention's head transposes keep the last axis, so the BatchMatMuls read
 * q, k and v and write the context through strides (fuse.c): no Transpose
 * copies, forward or backward, and the Reshapes around them name nothing.
 * Every value of type dt. */
static char *heads_text(bool train, const char *extra, const char *dt)
{
	StrBuf b = {0};
	sb_printf(&b,
	          "context { device_num: 1, parallel_mode: \"stand_alone\" }\n"
	          "graph @m(%%x: <Tensor[%s], (8, 6)> = uniform(-1, 1),\n"
	          "         %%wq: <Parameter[%s], (6, 6)> = normal(0.5),\n"
	          "         %%wk: <Parameter[%s], (6, 6)> = normal(0.5),\n"
	          "         %%wv: <Parameter[%s], (6, 6)> = normal(0.5)) {\n"
	          "  %%q = MatMul(%%x, %%wq)\n"
	          "  %%k = MatMul(%%x, %%wk)\n"
	          "  %%v = MatMul(%%x, %%wv)\n"
	          "  %%q4 = Reshape(%%q) {shape: (2, 4, 2, 3)}\n"
	          "  %%k4 = Reshape(%%k) {shape: (2, 4, 2, 3)}\n"
	          "  %%v4 = Reshape(%%v) {shape: (2, 4, 2, 3)}\n"
	          "  %%qh = Transpose(%%q4) {perm: (0, 2, 1, 3)}\n"
	          "  %%kh = Transpose(%%k4) {perm: (0, 2, 1, 3)}\n"
	          "  %%vh = Transpose(%%v4) {perm: (0, 2, 1, 3)}\n"
	          "  %%s = BatchMatMul(%%qh, %%kh) {transpose_b: true}\n"
	          "  %%c = BatchMatMul(%%s, %%vh)\n"
	          "  %%ct = Transpose(%%c) {perm: (0, 2, 1, 3)}\n"
	          "  %%c2 = Reshape(%%ct) {shape: (8, 6)}\n"
	          "%s"
	          "  %%l = ReduceSum(%%c2) {axis: (0, 1)}\n"
	          "  return %%l\n"
	          "}\n",
	          dt, dt, dt, dt, extra);
	if (train)
		sb_puts(&b, "train { loss: %l, optimizer: SGD(learning_rate: 0.1) }\n");
	char *t = rank_text_of(b.data, 0);
	sb_free(&b);
	return t;
}

Test(fuse, head_transposes_read_and_written_through_strides)
{
	for (int train = 0; train < 2; train++) {
		char *t = heads_text(train, "", "Float32");
		/* q4 (2, 4, 2, 3) as qh (2, 2, 4, 3): batches 24 and 3 apart, rows 6 */
		expect_line(t, "sc_batch_matmul_strided(rt, qh, (const int64_t[]){24, 3, 6}, kh, (const int64_t[]){24, 3, 6}, "
		               "s, (const int64_t[]){32, 16, 4}, (const int64_t[]){2, 2}, 2, 4, 4, 3, 0, 1);");
		expect_line(t, "sc_batch_matmul_strided(rt, s, (const int64_t[]){32, 16, 4}, vh, (const int64_t[]){24, 3, 6}, "
		               "c, (const int64_t[]){24, 3, 6}, (const int64_t[]){2, 2}, 2, 4, 3, 4, 0, 0);");
		expect_line(t, "/* %qh: %q4's bytes, which BatchMatMuls read with strides (no copy) */");
		expect_line(t, "/* %ct: written in place by a BatchMatMul, with strides, as %c (no copy) */");
		expect_no_line(t, "sc_transpose(");
		expect_no_line(t, "*const q4 = ");   /* only views pass through it */
		if (train) {   /* the gradients of q, k, v written in place, dc read through strides */
			expect_line(t, "/* %grad_q4: written in place by a BatchMatMul, with strides, as %grad_qh (no copy) */");
			expect_line(t, "/* %grad_c: %grad_ct's bytes, which BatchMatMuls read with strides (no copy) */");
			expect_line(t, "sc_batch_matmul_strided(rt, grad_s, (const int64_t[]){32, 16, 4}, kh, "
			               "(const int64_t[]){24, 3, 6}, grad_qh, (const int64_t[]){24, 3, 6}, ");
		}
		free(t);
	}
}

Test(fuse, not_when_another_operator_reads_the_heads)
{
	char *t = heads_text(false, "  %u = ReduceSum(%qh) {axis: (0, 1, 2, 3)}\n  %w = Add(%u, %u)\n", "Float32");
	expect_line(t, "sc_transpose(rt, SC_F32, q4, qh, ");   /* the ReduceSum reads qh row-major */
	expect_line(t, "sc_batch_matmul_strided(rt, qh, (const int64_t[]){24, 12, 3}, kh, ");   /* qh row-major */
	free(t);
}

/* In BFloat16 likewise: the half products round their results into the
 * strided half buffers themselves. */
Test(fuse, half_head_transposes_read_and_written_through_strides)
{
	for (int train = 0; train < 2; train++) {
		char *t = heads_text(train, "", "BFloat16");
		expect_line(t, "sc_batch_matmul_half_strided(rt, SC_BF16, s, (const int64_t[]){32, 16, 4}, vh, "
		               "(const int64_t[]){24, 3, 6}, c, SC_BF16, (const int64_t[]){24, 3, 6}, (const int64_t[]){2, 2}, "
		               "2, 4, 3, 4, 0, 0);");
		expect_line(t, "/* %ct: written in place by a BatchMatMul, with strides, as %c (no copy) */");
		expect_no_line(t, "sc_transpose(");
		if (train) {
			expect_line(t, "/* %grad_q4: written in place by a BatchMatMul, with strides, as %grad_qh (no copy) */");
			expect_line(t, "sc_batch_matmul_half_strided(rt, SC_BF16, grad_s, (const int64_t[]){32, 16, 4}, kh, "
			               "(const int64_t[]){24, 3, 6}, grad_qh, SC_BF16, (const int64_t[]){24, 3, 6}, ");
		}
		free(t);
	}
}

/* A mask added before the Softmax (attention's): the Add, and forward only
 * the scaling Mul before it, ride on the Softmax's kernel. In training the
 * Add's adjoint reads the product, so the Mul keeps its kernel. */
static char *masked_text(bool train)
{
	StrBuf b = {0};
	sb_puts(&b, "context { device_num: 1, parallel_mode: \"stand_alone\" }\n"
	            "graph @m(%x: <Tensor[Float32], (2, 4, 8)> = uniform(-1, 1),\n"
	            "         %s: <Tensor[Float32], (1,)> = constant(0.5),\n"
	            "         %k: <Tensor[Float32], (4, 8)> = uniform(-3, 0),\n"
	            "         %w: <Parameter[Float32], (8, 8)> = normal(0.5)) {\n"
	            "  %h = BatchMatMul(%x, %w)\n"
	            "  %z = Mul(%h, %s)\n"
	            "  %a = Add(%z, %k)\n"
	            "  %p = Softmax(%a) {axis: -1}\n"
	            "  %q = Square(%p)\n"
	            "  %l = ReduceSum(%q) {axis: (0, 1, 2)}\n"
	            "  return %l\n"
	            "}\n");
	if (train)
		sb_puts(&b, "train { loss: %l, optimizer: SGD(learning_rate: 0.1) }\n");
	char *t = rank_text_of(b.data, 0);
	sb_free(&b);
	return t;
}

Test(fuse, softmax_reads_the_masked_scores)
{
	char *t = masked_text(false);
	expect_line(t, "/* %z = Mul: computed by the kernel that reads it (fused) */");
	expect_line(t, "/* %a = Add: computed by the kernel that reads it (fused) */");
	expect_line(t, "sc_softmax_masked(rt, h, s, k, (const int64_t[]){4, 8}, 2, p, (const int64_t[]){2, 4, 8}, 3);");
	expect_no_line(t, "*const z = ");
	expect_no_line(t, "*const a = ");
	free(t);
	t = masked_text(true);
	expect_line(t, "sc_binary(rt, SC_MUL, h, ");
	expect_line(t, "sc_softmax_masked(rt, z, NULL, k, (const int64_t[]){4, 8}, 2, p, (const int64_t[]){2, 4, 8}, 3);");
	/* the Add's adjoint for the product is dy itself: no code, dy's buffer */
	expect_line(t, "/* %grad_z: %grad_a's bytes, in its buffer (no copy) */");
	expect_no_line(t, "sc_binary_grad(rt, SC_ADD, ");
	expect_no_line(t, "*const a = ");
	free(t);
}

/* Select: one sc_select call forward; each branch's gradient is the same
 * call with dy on its side and zeros (NULL) on the other; the Bool
 * condition has none. */
Test(text, select_and_its_gradients)
{
	char *t = rank_text_of("context { device_num: 1, parallel_mode: \"stand_alone\" }\n"
	                       "graph @m(%c: <Tensor[Bool], (4, 6)> = ones,\n"
	                       "         %x: <Tensor[Float32], (4, 6)> = uniform(-1, 1),\n"
	                       "         %v: <Parameter[Float32], (4, 6)> = normal(0.5),\n"
	                       "         %w: <Parameter[Float32], (4, 6)> = normal(0.5)) {\n"
	                       "  %s = Select(%c, %v, %w)\n"
	                       "  %m = Mul(%s, %x)\n"
	                       "  %l = ReduceSum(%m) {axis: (0, 1)}\n"
	                       "  return %l\n"
	                       "}\n"
	                       "train { loss: %l, optimizer: SGD(learning_rate: 0.1) }\n",
	                       0);
	expect_line(t, "sc_select(rt, c, v, w, s, 24);");
	expect_line(t, "sc_select(rt, c, grad_s, NULL, grad_v, 24);");
	expect_line(t, "sc_select(rt, c, NULL, grad_s, grad_w, 24);");
	expect_no_line(t, "grad_c");
	free(t);
}

/* A language model's head in bfloat16: the product whose half result only
 * the cross-entropy's Cast widens writes Float32 and rounds it in place,
 * the Cast a view; the weight's gradient likewise; the cross-entropy's
 * gradient overwrites the logits, which end there. */
Test(text, half_logits_written_float32_and_their_gradient_in_place)
{
	char *t = rank_text_of("context { device_num: 1, parallel_mode: \"stand_alone\", precision: \"bf16\" }\n"
	                       "graph @m(%x: <Tensor[Float32], (8, 16)> = uniform(-1, 1),\n"
	                       "         %labels: <Tensor[Int32], (8,)> = randint(0, 32),\n"
	                       "         %w: <Parameter[Float32], (16, 32)> = normal(0.5)) {\n"
	                       "  %logits = MatMul(%x, %w)\n"
	                       "  %loss = SparseSoftmaxCrossEntropyWithLogits(%logits, %labels)\n"
	                       "  return %loss\n"
	                       "}\n"
	                       "train { loss: %loss, optimizer: SGD(learning_rate: 0.1) }\n",
	                       0);
	expect_line(t, "sc_matmul_half(rt, SC_BF16, x_bf16, w_bf16, logits, SC_F32, 8, 32, 16, 0, 0);");
	expect_line(t, "sc_round(rt, logits, SC_BF16, 256);   /* the product as its BFloat16 result would be */");
	expect_line(t, "/* %logits.f32: %logits's bytes, in its buffer (no copy) */");
	expect_line(t, "sc_matmul_half(rt, SC_BF16, x_bf16, grad_logits, grad_w_bf16, SC_F32, 16, 32, 8, 1, 0);");
	expect_line(t, "sc_round(rt, grad_w_bf16, SC_BF16, 512);   /* the product as its BFloat16 result would be */");
	expect_line(t, "/* %grad_w: %grad_w.bf16's bytes, in its buffer (no copy) */");
	const char *a = strstr(t, "float *const logits_f32 = (float *)(slab + "), *b = strstr(t, "float *const grad_logits_f32 = (float *)(slab + ");
	cr_assert(a && b, "%s", t);
	cr_assert_eq(atoll(strchr(a, '+') + 1), atoll(strchr(b, '+') + 1), "the gradient is not over the logits:\n%s", t);
	free(t);
}

/* RotaryPositionEmbedding: one sc_rotary call forward, the transposed one
 * for x's gradient; a parameter sin broadcast over the heads takes the
 * forward with dy for sin and zeros for cos, in scratch, summed down to its
 * shape; the input cos has none. */
Test(text, rotary_and_its_gradients)
{
	char *t = rank_text_of("context { device_num: 1, parallel_mode: \"stand_alone\" }\n"
	                       "graph @m(%x: <Parameter[Float32], (1, 2, 2, 4)> = normal(0.5),\n"
	                       "         %c: <Tensor[Float32], (1, 1, 2, 4)> = uniform(-1, 1),\n"
	                       "         %s: <Parameter[Float32], (1, 1, 2, 4)> = normal(0.5)) {\n"
	                       "  %y = RotaryPositionEmbedding(%x, %c, %s) {mode: 1}\n"
	                       "  %l = ReduceSum(%y) {axis: (0, 1, 2, 3)}\n"
	                       "  return %l\n"
	                       "}\n"
	                       "train { loss: %l, optimizer: SGD(learning_rate: 0.1) }\n",
	                       0);
	expect_line(t, "sc_rotary(rt, 1, 0, x, (const int64_t[]){1, 2, 2, 4}, c, (const int64_t[]){1, 1, 2, 4}, s, "
	               "(const int64_t[]){1, 1, 2, 4}, y);");
	expect_line(t, "sc_rotary(rt, 1, 1, grad_y, (const int64_t[]){1, 2, 2, 4}, c, (const int64_t[]){1, 1, 2, 4}, s, "
	               "(const int64_t[]){1, 1, 2, 4}, grad_x);");
	expect_line(t, "sc_rotary(rt, 1, 0, x, (const int64_t[]){1, 2, 2, 4}, NULL, (const int64_t[]){1, 2, 2, 4}, grad_y, "
	               "(const int64_t[]){1, 2, 2, 4}, (float *)(slab + 1792));");
	expect_line(t, "sc_sum_to_shape(rt, (float *)(slab + 1792), (const int64_t[]){1, 2, 2, 4}, 4, grad_s, "
	               "(const int64_t[]){1, 1, 2, 4}, 4);");
	expect_no_line(t, "grad_c");
	free(t);
}

/* An erf GeLU, a Mul and an Add: one chain whose GeLU step is the erf
 * form's kernel, forward; its adjoint is the erf form's too. */
Test(fuse, gelu_erf_form_in_a_chain)
{
	char *t = rank_text_of("context { device_num: 1, parallel_mode: \"stand_alone\" }\n"
	                       "graph @m(%x: <Tensor[Float32], (4, 6)> = uniform(-1, 1),\n"
	                       "         %y: <Tensor[Float32], (4, 6)> = uniform(-1, 1),\n"
	                       "         %w: <Parameter[Float32], (6, 6)> = normal(0.5)) {\n"
	                       "  %h = MatMul(%x, %w)\n"
	                       "  %g = GeLU(%h) {approximate: \"none\"}\n"
	                       "  %m = Mul(%g, %y)\n"
	                       "  %a = Add(%m, %x)\n"
	                       "  %l = ReduceSum(%a) {axis: (0, 1)}\n"
	                       "  return %l\n"
	                       "}\n"
	                       "train { loss: %l, optimizer: SGD(learning_rate: 0.1) }\n",
	                       0);
	expect_line(t, "/* elementwise chain (fused): %g = GeLU, %m = Mul, %a = Add */");
	expect_line(t, "sc_ew_chain(rt, (const sc_ew_step[]){{SC_EW_UNARY, SC_U_GELU_ERF, 0, 0, SC_F32, NULL, 0}, ");
	expect_line(t, "sc_unary_grad(rt, SC_U_GELU_ERF, 0, h, ");
	expect_no_line(t, "SC_U_GELU,");
	free(t);
}

/* A BFloat16 MLP's bias, GeLU and scale, then a residual Add: one
 * sc_ew_chain call at the last operator's place reading the matmul's
 * result, the bias (a row), the scale (one element) and x, each half result
 * rounded; forward only, no intermediate has a buffer. In training the
 * call stores what the adjoints read: hb (GeLU's), the Mul's and the Add's
 * operands, not the Add's result. */
static char *chain_text(bool train)
{
	StrBuf b = {0};
	sb_puts(&b, "context { device_num: 1, parallel_mode: \"stand_alone\" }\n"
	            "graph @m(%x: <Tensor[BFloat16], (4, 6)> = uniform(-1, 1),\n"
	            "         %s: <Tensor[BFloat16], (1,)> = constant(0.5),\n"
	            "         %w: <Parameter[BFloat16], (6, 6)> = normal(0.5),\n"
	            "         %c: <Parameter[BFloat16], (6,)> = normal(0.5)) {\n"
	            "  %h = MatMul(%x, %w)\n"
	            "  %hb = BiasAdd(%h, %c)\n"
	            "  %g = GeLU(%hb)\n"
	            "  %gs = Mul(%g, %s)\n"
	            "  %r = Add(%x, %gs)\n"
	            "  %r32 = Cast(%r) {dtype: Float32}\n"
	            "  %l = ReduceSum(%r32) {axis: (0, 1)}\n"
	            "  return %l\n"
	            "}\n");
	if (train)
		sb_puts(&b, "train { loss: %l, optimizer: SGD(learning_rate: 0.1) }\n");
	char *t = rank_text_of(b.data, 0);
	sb_free(&b);
	return t;
}

Test(fuse, elementwise_chain_in_one_call)
{
	char *t = chain_text(false);
	expect_line(t, "/* %hb = BiasAdd: computed by %r32's elementwise chain (fused) */");
	expect_line(t, "/* elementwise chain (fused): %hb = BiasAdd, %g = GeLU, %gs = Mul, %r = Add, %r32 = Cast */");
	expect_line(t, "sc_ew_chain(rt, (const sc_ew_step[]){{SC_EW_BINARY, SC_ADD, 0, 1, SC_F32, NULL, 0}, "
	               "{SC_EW_ROUND, 0, 4, 0, SC_BF16, NULL, 0}, {SC_EW_UNARY, SC_U_GELU, 5, 0, SC_F32, NULL, 0}, "
	               "{SC_EW_ROUND, 0, 6, 0, SC_BF16, NULL, 0}, {SC_EW_BINARY, SC_MUL, 7, 2, SC_F32, NULL, 0}, "
	               "{SC_EW_ROUND, 0, 8, 0, SC_BF16, NULL, 0}, {SC_EW_BINARY, SC_ADD, 3, 9, SC_F32, NULL, 0}, "
	               "{SC_EW_ROUND, 0, 10, 0, SC_BF16, NULL, 0}, {SC_EW_STORE, 0, 11, 0, SC_F32, r32, 0}}, 9, "
	               "(const sc_ew_operand[]){{h, SC_BF16, SC_EW_FULL}, {c, SC_BF16, SC_EW_ROW}, "
	               "{s, SC_BF16, SC_EW_SCALAR}, {x, SC_BF16, SC_EW_FULL}}, 4, 4, 6);");
	for (const char *const *v = (const char *const[]){"hb", "g", "gs", "r", NULL}; *v; v++) {
		char decl[32];
		snprintf(decl, sizeof decl, "*const %s = ", *v);
		expect_no_line(t, decl);   /* no buffer */
	}
	expect_no_line(t, "sc_bias_add(rt");
	expect_no_line(t, "sc_unary(rt");
	expect_no_line(t, "sc_binary(rt");
	free(t);
	t = chain_text(true);
	expect_line(t, "{SC_EW_ROUND, 0, 4, 0, SC_BF16, NULL, 0}, {SC_EW_STORE, 0, 5, 0, SC_BF16, hb, 0}, "
	               "{SC_EW_UNARY, SC_U_GELU, 6, 0, SC_F32, NULL, 0}");   /* the adjoint reads hb */
	expect_line(t, "*const hb = ");
	expect_line(t, "{SC_EW_STORE, 0, 8, 0, SC_BF16, g, 0}");     /* the Mul's adjoint reads its operands, */
	expect_line(t, "{SC_EW_STORE, 0, 11, 0, SC_BF16, gs, 0}");   /* the Add's (as its row says) too, */
	expect_no_line(t, "*const r = ");                          /* and no adjoint reads the Add's result */
	free(t);
}

/* A value something reads between two operators of a would-be chain is
 * computed before that reader: the chain stops short of it. */
Test(fuse, chain_stops_before_an_early_reader)
{
	char *t = rank_text_of("context { device_num: 1, parallel_mode: \"stand_alone\" }\n"
	                       "graph @m(%x: <Tensor[Float32], (4, 8)> = uniform(-1, 1)) {\n"
	                       "  %a = Exp(%x)\n"
	                       "  %b = Neg(%a)\n"
	                       "  %s = ReduceSum(%a) {axis: (0, 1)}\n"
	                       "  %c = Square(%b)\n"
	                       "  return %c, %s\n"
	                       "}\n", 0);
	expect_line(t, "/* elementwise chain (fused): %a = Exp, %b = Neg */");
	expect_line(t, "sc_unary(rt, SC_U_SQUARE, 0, b, c, 32);");
	expect_line(t, "*const a = ");   /* ReduceSum reads it: stored */
	free(t);
}

/* A LayerNorm's gradients for x, gamma and beta: one call at the last
 * one's place computes all three (the row statistics once); the earlier
 * ones are comments. Not when one is read before that call. */
Test(fuse, layer_norm_gradients_in_one_call)
{
	char *t = rank_text_of("context { device_num: 1, parallel_mode: \"stand_alone\" }\n"
	                       "graph @m(%x: <Tensor[Float32], (4, 8)> = uniform(-1, 1),\n"
	                       "         %w: <Parameter[Float32], (8, 8)> = normal(0.5),\n"
	                       "         %g: <Parameter[Float32], (8,)> = ones,\n"
	                       "         %b: <Parameter[Float32], (8,)> = zeros) {\n"
	                       "  %h = MatMul(%x, %w)\n"
	                       "  %n = LayerNorm(%h, %g, %b) {begin_norm_axis: -1, begin_params_axis: -1, epsilon: 1e-5}\n"
	                       "  %l = ReduceSum(%n) {axis: (0, 1)}\n"
	                       "  return %l\n"
	                       "}\n"
	                       "train { loss: %l, optimizer: SGD(learning_rate: 0.1) }\n",
	                       0);
	expect_line(t, "/* %grad_h: by the kernel below that computes %n's gradients together (fused) */");
	expect_line(t, "sc_norm_grad(rt, SC_N_LAYER_NORM, grad_n, h, g, grad_h, grad_g, grad_b, ");
	const char *first = strstr(t, "sc_norm_grad(");
	cr_assert(first && !strstr(first + 1, "sc_norm_grad("), "more than one LayerNorm gradient call");
	free(t);
}

/* place_lives against the placement written the plain way: the buffers in
 * its order, each raised past every placed buffer alive with it that it
 * would touch, until none is left; on random lives and sizes (from a few
 * bytes to many times the others, lives from one operator to all). */
Test(plan, placement_is_the_lowest_fit)
{
	unsigned seed = 12345;
	for (int round = 0; round < 200; round++) {
		int n = 1 + (int)((seed = seed * 1103515245u + 12345u) >> 16) % 300;
		int span = 1 + (int)((seed = seed * 1103515245u + 12345u) >> 16) % 500;
		int64_t *size = malloc(sizeof(int64_t) * (size_t)n), *off = malloc(sizeof(int64_t) * (size_t)n);
		int *def = malloc(sizeof(int) * (size_t)n), *last = malloc(sizeof(int) * (size_t)n);
		int *order = malloc(sizeof(int) * (size_t)n);
		for (int k = 0; k < n; k++) {
			seed = seed * 1103515245u + 12345u;
			size[k] = 256 * (int64_t)(1 + (seed >> 16) % ((seed >> 8) % 3 ? 4 : 64));
			if (k % 17 == 0)
				size[k] = 0;
			def[k] = (int)((seed = seed * 1103515245u + 12345u) >> 16) % span;
			int len = (int)((seed = seed * 1103515245u + 12345u) >> 16) % (k % 5 ? 8 : span);
			last[k] = def[k] + len < span ? def[k] + len : span - 1;
			order[k] = k;
		}
		int64_t peak = place_lives(n, size, def, last, off);
		for (int i = 0; i < n; i++)   /* larger first, then earlier, then lower k */
			for (int j = i + 1; j < n; j++) {
				int a = order[i], b = order[j];
				bool after = size[b] > size[a] || (size[b] == size[a] && (def[b] < def[a] || (def[b] == def[a] && b < a)));
				if (after)
					order[i] = b, order[j] = a;
			}
		int64_t want_peak = 0;
		for (int i = 0; i < n; i++) {
			int a = order[i];
			int64_t at = 0;
			for (bool moved = true; moved;) {
				moved = false;
				for (int j = 0; j < i; j++) {
					int b = order[j];
					if (size[b] && def[b] <= last[a] && def[a] <= last[b] && off[b] < at + size[a] && at < off[b] + size[b]) {
						at = off[b] + size[b];
						moved = true;
					}
				}
			}
			cr_assert_eq(off[a], at, "round %d: buffer %d (%lld bytes, [%d, %d]) at %lld, the lowest fit is %lld", round, a,
			             (long long)size[a], def[a], last[a], (long long)off[a], (long long)at);
			want_peak = at + size[a] > want_peak ? at + size[a] : want_peak;
		}
		cr_assert_eq(peak, want_peak);
		free(size);
		free(off);
		free(def);
		free(last);
		free(order);
	}
}

/* BatchNorm's moving statistics (docs/language.md, Moving statistics): the
 * training forward updates them in place (SC_BN_TRAIN, the whole batch's
 * count for the unbiased variance), the optimizer never does and keeps no
 * state for them, and they are saved with the parameters and checkpointed. */
Test(text, batch_norm_moving_statistics)
{
	char *t = rank_text("tests/e2e/batch_norm.ir", 0);
	expect_line(t, "sc_batch_norm(rt, c, g1_, b1, mm1, mv1, n1_mean_1, n1_var_1, n1, 2, 4, 16, 1.0000000000000001e-05, "
	               "0.10000000000000001, 128, SC_BN_TRAIN);");
	expect_line(t, "sc_sgd(rt, g1_, ");
	expect_no_line(t, "sc_sgd(rt, mm1, ");
	expect_no_line(t, "sc_sgd(rt, mv5, ");
	expect_line(t, "sc_save_npy(rt, out_dir, \"param_mm1.npy\", mm1, SC_F32, ");
	expect_line(t, "sc_safetensors_add(ckpt_out, \"mv1\", mv1, SC_F32, ");
	expect_line(t, "sc_checkpoint_add(saving, \"mm1\", mm1, SC_F32, ");
	expect_no_line(t, "moments.mm1");
	expect_line(t, "SC_BN_INFER);");
	free(t);
}
