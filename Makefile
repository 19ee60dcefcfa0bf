# shardc: build, test, install. `make` builds build/shardc; `make test` runs
# everything CI runs (sanitized unit tests, golden tests, round trips, the sanitized
# sweep, the new-operator check, fuzzing).

PREFIX ?= /usr/local
CC ?= cc
FUZZ_SECONDS ?= 60
B := build
comma := ,
# What every binary that links libshardc.a links too (manifest.c writes JSON with jansson).
LIBS := -ljansson -lm

WARN := -Wall -Wextra -Werror -Wshadow -Wmissing-prototypes -Wstrict-prototypes
CFLAGS_BASE := -std=c11 -D_POSIX_C_SOURCE=200809L $(WARN) -Icompiler -I$(B)/gen -g
OPT := -O2
SAN := -O1 -DSHARDC_VERIFY -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
# flex and bison output is not ours: same warnings, minus the ones it trips.
GEN_WARN := -Wno-unused-function -Wno-sign-compare -Wno-missing-prototypes -Wno-unused-parameter

COMPILER_SRCS := util.c diag.c lit.c ir.c parse.c context.c check.c check_train.c check_strategies.c shape.c shape_util.c shape_views.c shape_slice.c shape_constants.c conv.c segment.c pad_v3.c resize.c misc_ops.c int_math.c scatter_state.c kldiv_loss.c embedding_lookup.c scatter_nd.c slice.c print.c layout.c op_dims.c rules.c redistribute.c flatten.c rebatch.c stages.c schedule.c autocast.c check_kernels.c strategy.c cost.c search_graph.c price.c propagate.c polish.c rec_search.c search_run.c savings.c search.c search_stages.c strategy_file.c lowered.c lower.c lower_pad.c uneven.c autodiff.c checkpoint.c recompute.c accumulate.c bucket.c fuse.c dump.c manifest.c dot.c place.c plan.c emit_args.c emit_forward.c emit_adjoint.c emit_checkpoint.c emit_update.c emit.c emit_pipeline.c emit_table.c build_files.c outdir.c pipeline.c verify.c
COMPILER_OBJS := $(COMPILER_SRCS:.c=.o) parser.o lexer.o
UNIT_TESTS := test_lex_parse test_shape test_check test_print test_layout test_manifest test_eval test_simulate \
	test_redistribute test_search test_emit test_recompute test_optimizer_parallel test_checkpoint \
	test_rules test_cost test_autocast test_autodiff test_accumulate test_bucket test_fuse test_pipeline

.PHONY: all deps demo test test-full docs-check unit golden agree roundtrip dumps search structure json outdir sweep newop bounds fuzz fuzz-build bench bench-search install clean fresh-check
all: deps $(B)/shardc runtime

# ---- dependencies: installed and probed once; the flags they need are written
# to $(B)/config.mk, which make includes (and so makes first, then restarts).
# Goals that build nothing do not install anything.
NO_DEPS_GOALS := clean fresh-check bench-gpu
ifneq ($(filter-out $(NO_DEPS_GOALS),$(or $(MAKECMDGOALS),all)),)
include $(B)/config.mk
endif
$(B)/config.mk: tools/install-deps.sh
	sh tools/install-deps.sh $@
deps: $(B)/config.mk

# The runtime library and its tests (after `all`, so `all` stays the default goal).
include runtime/runtime.mk

# ---- generated parser and lexer ----
$(B)/gen/parser.c $(B)/gen/parser.h &: grammar/parser.y | $(B)/config.mk
	@mkdir -p $(B)/gen
	bison -Wall -Werror --defines=$(B)/gen/parser.h -o $(B)/gen/parser.c $<
$(B)/gen/lexer.c: grammar/lexer.l $(B)/gen/parser.h | $(B)/config.mk
	@mkdir -p $(B)/gen
	flex -o $@ $<

HDRS := compiler/shardc.h compiler/util.h compiler/ops.h runtime/shardc_rt.h compiler/parse_internal.h \
	compiler/check_internal.h compiler/shape_internal.h compiler/lower_internal.h compiler/emit_internal.h \
	compiler/search_internal.h compiler/pipeline.h compiler/cost.h compiler/slice.h compiler/conv.h compiler/rules_internal.h compiler/segment.h compiler/scatter_nd.h compiler/layout.h compiler/uneven.h compiler/pad_v3.h compiler/resize.h compiler/misc_ops.h compiler/int_math.h compiler/scatter_state.h compiler/kldiv_loss.h compiler/embedding_lookup.h \
	$(B)/gen/parser.h

# ---- three builds of the compiler library: opt, san (tests), fuzz ----
define variant
$(B)/$(1)/%.o: compiler/%.c $(HDRS)
	@mkdir -p $$(@D)
	$(2) $$(CFLAGS_BASE) $(3) -c -o $$@ $$<
$(B)/$(1)/parser.o: $(B)/gen/parser.c $(HDRS)
	@mkdir -p $$(@D)
	$(2) $$(CFLAGS_BASE) $(3) $$(GEN_WARN) -c -o $$@ $$<
$(B)/$(1)/lexer.o: $(B)/gen/lexer.c $(HDRS)
	@mkdir -p $$(@D)
	$(2) $$(CFLAGS_BASE) $(3) $$(GEN_WARN) -c -o $$@ $$<
$(B)/$(1)/libshardc.a: $(addprefix $(B)/$(1)/,$(COMPILER_OBJS))
	ar rcs $$@ $$^
$(B)/$(1)/shardc: $(B)/$(1)/main.o $(B)/$(1)/libshardc.a
	$(2) $(3) -o $$@ $$^ $$(LIBS)
endef
$(eval $(call variant,opt,$(CC),$(OPT)))
$(eval $(call variant,san,$(CC),$(SAN)))
$(eval $(call variant,fuzz,clang,-O1 -DSHARDC_VERIFY -fsanitize=fuzzer-no-link$(comma)address$(comma)undefined -fno-sanitize-recover=all))

$(B)/shardc: $(B)/opt/shardc
	cp $< $@

# ---- tests ----
$(B)/san/harness.o: tests/unit/harness.c tests/unit/harness.h $(HDRS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_BASE) $(SAN) -c -o $@ $<
$(B)/san/test_%: tests/unit/test_%.c $(B)/san/harness.o tests/unit/harness.h $(B)/san/libshardc.a $(HDRS)
	$(CC) $(CFLAGS_BASE) $(SAN) -o $@ $< $(B)/san/harness.o $(B)/san/libshardc.a -lcriterion $(LIBS)

# ---- the simulator (tests/sim): test-only, san build; tests that use it ----
SIM_TESTS := test_eval test_simulate test_redistribute
$(B)/san/sim_%.o: tests/sim/%.c tests/sim/eval.h tests/sim/simulate.h $(HDRS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_BASE) $(SAN) -Itests/sim -c -o $@ $<
$(B)/san/libsim.a: $(B)/san/sim_eval.o $(B)/san/sim_simulate.o
	ar rcs $@ $^
$(addprefix $(B)/san/,$(SIM_TESTS)): $(B)/san/test_%: tests/unit/test_%.c $(B)/san/libsim.a $(B)/san/harness.o \
		tests/unit/harness.h $(B)/san/libshardc.a $(HDRS)
	$(CC) $(CFLAGS_BASE) $(SAN) -Itests/sim -o $@ $< $(B)/san/libsim.a $(B)/san/harness.o $(B)/san/libshardc.a \
		-lcriterion $(LIBS)

# test-full: make test with the end-to-end variants on every rank count,
# every program run even where it repeats one already run, the sweep on
# every device count, and agree and json on MindSpore's translations at
# every count too (E2E_FULL).
test-full:
	$(MAKE) test E2E_FULL=1

# make test fuzzes 30 s (FUZZ_SECONDS=N for more; `make fuzz` alone: 60)
test: FUZZ_SECONDS = 30
test: deps $(B)/shardc docs-check unit golden agree roundtrip dumps search structure json outdir sweep newop bounds fuzz runtime runtime-test runtime-cuda-test ref-test e2e faults launch resume safetensors data
	@echo "make test: all passed"

unit: $(addprefix $(B)/san/,$(UNIT_TESTS))
	@set -e; for t in $^; do echo "== $$t"; ASAN_OPTIONS=detect_leaks=1 $$t --jobs 2; done

golden: $(B)/san/shardc
	sh tests/run_golden.sh $(B)/san/shardc
	sh tests/run_ops_doc.sh $(B)/san/shardc

# --check accepts exactly what -o compiles: every sample, e2e model and bad
# case both ways, on 8 devices in every mode and in bf16 and fp16 (the
# optimized build: some 13,000 compiles; MindSpore's translations in
# tests/good on their own device count, on 8 too under test-full).
agree: $(B)/shardc
	AGREE_FULL=$(E2E_FULL) sh tests/run_agree.sh $(B)/shardc

roundtrip: $(B)/san/shardc
	sh tests/run_roundtrip.sh $(B)/san/shardc

dumps: $(B)/san/shardc
	sh tests/run_dumps.sh $(B)/san/shardc

search: $(B)/san/shardc $(B)/shardc
	sh tests/run_search.sh $(B)/san/shardc $(B)/shardc

# Every manifest.json and strategy.json parses, at 1 to 1,024 devices.
json: $(B)/shardc
	JSON_FULL=$(E2E_FULL) sh tests/run_json.sh $(B)/shardc

# Rooms of one concern: no compiler file over 1,000 lines, and no circle of
# calls between compiler files (read from the optimized objects with nm).
structure: $(B)/opt/libshardc.a
	@sh tests/run_structure.sh $(addprefix $(B)/opt/,$(COMPILER_SRCS:.c=.o))

# Every sample on 1 to 16 devices in every parallel mode under ASan and UBSan,
# and each one's step_parallel_begin.ir again: no crash, only clean diagnostics.
sweep: $(B)/san/shardc
	SWEEP_FULL=$(E2E_FULL) sh tests/run_sweep.sh $(B)/san/shardc

# An operator added to ops.h alone must be a build error in every switch over
# the operators (none may take it silently through a default).
newop: $(B)/gen/parser.h
	sh tests/run_newop.sh $(CC) $(CFLAGS_BASE)
	bash tests/run_newop_e2e.sh

# The optimized build: the models are large (20,000 graphs, 1,024 ranks).
bounds: $(B)/shardc
	sh tests/run_bounds.sh $(B)/shardc

# Writing OUT: staging and swap, refusals, write errors, odd paths (builds and runs on 2 ranks).
outdir: $(B)/san/shardc runtime
	$(ONE_MACHINE_MPI) bash tests/run_outdir.sh $(B)/san/shardc

# The command examples of README.md and docs/ (```console blocks, tests/run_docs.sh)
# still run and exit as they say.
docs-check: $(B)/shardc runtime
	bash tests/run_docs.sh $(B)/shardc

# ---- the numpy reference evaluator (tools/ref_eval.py): its own tests ----
# (mixed precision takes the operators' precision classes from build/shardc --list-ops --json)
.PHONY: ref-test
ref-test: $(B)/shardc
	/usr/bin/python3 tests/ref/test_ref_eval.py

# Every rank of a test run on this one machine: Open MPI's shared-memory
# transport (its ob1 messaging over vader) starts a job in half the time its
# default, UCX, takes (0.2 s against 0.4 at 8 ranks; the e2e suite starts
# about 1,500), and the programs are the same. The runtime's, the docs', the
# launchers' and the faults' tests keep the default a user gets.
ONE_MACHINE_MPI := OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader

# ---- end to end: every sample and tests/e2e model through run.sh on 1, 2, 4, 8 ranks (CPU) ----
.PHONY: e2e
e2e: $(B)/shardc runtime
	$(ONE_MACHINE_MPI) E2E_FULL=$(E2E_FULL) bash tests/run_e2e.sh $(B)/shardc

# ---- runs that must stop (2 ranks, CPU): a diverging loss, Float16 loss scaling stuck at 1, an
# output folder that cannot be written, a save failing mid-way, a rank killed; seconds each ----
.PHONY: faults
faults: $(B)/shardc runtime
	bash tests/run_faults.sh $(B)/shardc

# ---- checkpoints: runs killed and resumed bit for bit, resharded, the options refused ----
.PHONY: resume
resume: $(B)/shardc runtime
	$(ONE_MACHINE_MPI) E2E_FULL=$(E2E_FULL) bash tests/run_resume.sh $(B)/shardc

# ---- run.sh's launchers (2 ranks, CPU): a hostfile, srun (a stand-in) ----
.PHONY: launch
launch: $(B)/shardc runtime
	bash tests/run_launch.sh $(B)/shardc

# ---- checkpoints: run.sh --params FILE.safetensors against the same weights as .npy files, on 8 and 1 ranks;
# params.safetensors read back; broken files (tests/run_safetensors.sh; numpy and json write the files) ----
.PHONY: safetensors
safetensors: $(B)/shardc runtime
	$(ONE_MACHINE_MPI) bash tests/run_safetensors.sh $(B)/shardc

# ---- inputs that stream: run.sh --data (a .npy dataset, token streams) on 1, 2, 4 and 8 ranks against
# tools/ref_eval.py fed the same batches; bad data files (tests/run_data.sh; numpy writes the files) ----
.PHONY: data
data: $(B)/shardc runtime
	$(ONE_MACHINE_MPI) bash tests/run_data.sh $(B)/shardc

# ---- the cuda backend on a machine with a GPU (and no MPI, no OpenBLAS) ----
# `make gpu-kit`, here: every e2e run's OUTDIR with the one-device CPU
# program's results, the GPT stacks to time, OpenMPI unpacked from Debian's
# packages and the cuda test programs, in one file (tools/gpu_kit.sh);
# GPU_KIT_E2E=0 leaves the e2e runs out (a quick kit for the timings);
# GPU_KIT_MODELS="A.ir B.ir" takes those models' runs only.
# `make bench-gpu`, there, from a copy of this tree with the kit beside it:
# the kernels against their CPU twins, the GEMMs, the GPT training steps
# with their MFU and profiles, then the e2e runs until GPU_SECONDS have passed
# (tools/gpu_run.sh; it needs no dependency installed).
GPU_KIT ?= $(B)/gpu-kit.tar.xz
GPU_SECONDS ?= 240
.PHONY: gpu-kit bench-gpu
gpu-kit: $(B)/shardc runtime
ifeq ($(GPU_KIT_E2E),0)
	bash tools/gpu_kit.sh none $(GPU_KIT)
else
	rm -rf $(B)/e2e-work
	E2E_WORK=$(B)/e2e-work bash tests/run_e2e.sh $(B)/shardc $(GPU_KIT_MODELS)
	bash tools/gpu_kit.sh $(B)/e2e-work $(GPU_KIT)
endif
bench-gpu:
	bash tools/gpu_run.sh $(GPU_KIT) $(GPU_SECONDS)

# ---- fuzzing: libFuzzer on parse + check, then on the whole pipeline ----
# FUZZ_SECONDS in all: a third on the front end (fuzz_parser), the rest on
# every stage through the emitted programs, in memory (fuzz_pipeline). Both
# are seeded with the samples and the samples' step_parallel_begin dumps.
FUZZ_TARGETS := fuzz_parser fuzz_pipeline
$(B)/fuzz/fuzz_%: tools/fuzz_%.c $(B)/fuzz/libshardc.a $(HDRS)
	clang $(CFLAGS_BASE) -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -o $@ $< $(B)/fuzz/libshardc.a $(LIBS)
fuzz-build: $(addprefix $(B)/fuzz/,$(FUZZ_TARGETS))
fuzz: fuzz-build
	@rm -rf $(B)/fuzz/seeds; mkdir -p $(B)/fuzz/seeds
	cp ir-samples/*.ir tests/good/*.ir tests/bad/*.ir tests/e2e/*.ir $(B)/fuzz/seeds/
	@for d in tests/dumps/*/; do cp $$d/step_parallel_begin.ir $(B)/fuzz/seeds/begin_$$(basename $$d).ir; done
	@set -e; for t in $(FUZZ_TARGETS); do \
		if [ $$t = fuzz_parser ]; then s=$$(($(FUZZ_SECONDS) / 3)); else s=$$(($(FUZZ_SECONDS) - $(FUZZ_SECONDS) / 3)); fi; \
		mkdir -p $(B)/fuzz/corpus_$$t; \
		echo "fuzz: $$s s of libFuzzer on $$t, seeded with the samples"; \
		if $(B)/fuzz/$$t -max_total_time=$$s -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
			-artifact_prefix=$(B)/fuzz/$$t- -print_final_stats=1 $(B)/fuzz/corpus_$$t $(B)/fuzz/seeds \
			>$(B)/fuzz/$$t.log 2>&1; then \
			grep -E '^(Done|stat::number_of_executed_units|#[0-9]+ +DONE)' $(B)/fuzz/$$t.log; \
			echo "fuzz: $$t: no crash, leak or sanitizer report"; \
		else tail -n 60 $(B)/fuzz/$$t.log; echo "fuzz: $$t FAILED (input saved under $(B)/fuzz/$$t-*)"; exit 1; fi; \
	done

# ---- the main job: compile a seed sample as far as the compiler goes today ----
DEMO ?= ir-samples/matmul_relu_semi.ir
demo: all
	$(B)/shardc $(DEMO) -o out/demo --dump-ir
	@echo "== out/demo/ir/step_parallel_begin.ir"
	@cat out/demo/ir/step_parallel_begin.ir
	@echo "== out/demo/ir/rank_0/step_parallel_end.ir"
	@cat out/demo/ir/rank_0/step_parallel_end.ir
	@echo "== out/demo/run.sh (8 ranks, CPU backend)"
	out/demo/run.sh
	@/usr/bin/python3 -c 'import numpy as n; y = n.load("out/demo/results/output_0.npy"); print("== out/demo/results/output_0.npy", y.shape, y.dtype, "sum %.6f" % y.sum())'

# ---- benchmarks ----
# The front end on 100,000 operators; then the generated programs against the same
# models written by hand with OpenBLAS (tools/bench_direct.c), on 1 and 8 ranks;
# then the GPT layer against JAX/XLA (tools/bench_jax.py; skipped without jax);
# then what --data and checkpoints cost a step, and FlashAttentionScore against
# the unfused attention (docs/benchmarks.md).
$(B)/bench/bench_direct: tools/bench_direct.c
	@mkdir -p $(@D)
	$(CC) -std=c11 -D_POSIX_C_SOURCE=200809L $(WARN) $(OPT) $(BLAS_CFLAGS) -o $@ $< $(BLAS_LIBS) -lm
bench: $(B)/shardc $(RT_B)/libshardc_rt_cpu.a $(B)/bench/bench_direct
	sh tools/bench.sh $(B)/shardc
	sh tools/bench_programs.sh $(B)/shardc $(B)/bench/bench_direct
	/usr/bin/python3 tools/bench_jax.py $(B)/shardc
	bash tools/bench_data.sh $(B)/shardc
	bash tools/bench_checkpoint.sh $(B)/shardc
	bash tools/bench_attention.sh $(B)/shardc

# A byte-level GPT trained for a few minutes on the Python standard
# library's source on 8 ranks, with checkpoints; its loss curve in
# $(B)/train-demo/loss.png (tools/train_demo.sh).
.PHONY: train-demo
train-demo: $(B)/shardc runtime
	bash tools/train_demo.sh $(B)/shardc $(B)/train-demo

# The strategy search against the hand plans (Megatron mp 2/4/8, data parallel) on
# GPT stacks of 13B, 1.3B and 350M parameters: cost, bytes, memory, slab, compile time.
bench-search: $(B)/shardc
	/usr/bin/python3 tools/bench_search.py $(B)/shardc

# The generated Makefiles find the runtime in PREFIX/share/shardc (runtime/
# and build/runtime/, as in this tree).
install: $(B)/shardc runtime
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/shardc/runtime \
	        $(DESTDIR)$(PREFIX)/share/shardc/build/runtime
	install -m 755 $(B)/shardc $(DESTDIR)$(PREFIX)/bin/shardc
	install -m 644 runtime/shardc_rt.h $(DESTDIR)$(PREFIX)/share/shardc/runtime/
	install -m 644 $(wildcard $(B)/runtime/libshardc_rt_*.a) $(B)/runtime/link.mk $(DESTDIR)$(PREFIX)/share/shardc/build/runtime/

# The README's two commands on a freshly debootstrapped Debian bookworm, in a
# chroot, from a clone of HEAD (needs root; not part of make test).
fresh-check:
	sh tools/fresh-machine.sh

clean:
	rm -rf $(B)
