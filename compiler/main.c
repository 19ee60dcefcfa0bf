/* main.c: the driver. One call per stage, the check between stages, the
 * optional dump; nothing else. Exit 0 ok, 1 bad model, 2 bad command line,
 * 3 internal error (an abort also means our bug), 4 a file could not be
 * written (outdir.c writes OUT). */
#include "shardc.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SHARDC_VERSION "0.1.0"

static const char usage[] =
	"usage: shardc MODEL.ir -o OUTDIR [options]\n"
	"       shardc MODEL.ir --check [options]\n"
	"\n"
	"Compile a MindIR-like graph with sharding annotations into one C program that every\n"
	"rank runs, with a table of numbers per rank.\n"
	"\n"
	"  -o, --output DIR          where to write (created, or replaced whole if shardc wrote it)\n"
	"      --check               parse, check and infer only; write nothing\n"
	"      --dump-ir             also write the IR dumps under OUTDIR/ir/: 00_parsed.ir,\n"
	"                            step_parallel_begin.ir, rank_<r>/step_parallel_end.ir\n"
	"      --device-num N        override the context's device_num\n"
	"      --parallel-mode M     stand_alone | data_parallel | semi_auto_parallel | auto_parallel\n"
	"      --search-mode S       sharding_propagation | recursive_programming\n"
	"      --dataset-strategy D  full_batch | data_parallel | ((8, 1), (8,))\n"
	"      --seed S              seed of the deterministic initializers\n"
	"      --precision P         bf16 | fp16 | fp32: mixed precision for inference and training\n"
	"      --parallel-optimizer L  off | level1 | level2 | level3: trained parameters, their\n"
	"                            gradients and optimizer state as slices over their copies (ZeRO)\n"
	"      --recompute           training: recompute each layer's activations in the backward pass\n"
	"                            (the train block's recompute: true)\n"
	"      --strategy-out FILE   save every operator's strategy as JSON\n"
	"      --dot FILE            write the graph, strategies, costs and communication as Graphviz DOT\n"
	"      --strategy-in FILE    load every operator's strategy from JSON (no search)\n"
	"      --cluster FILE        JSON description of devices and links (the search's cost model)\n"
	"      --explain             print each operator's strategy, its cost and the runner-up\n"
	"      --time                print how long each stage took, and memory, to stderr\n"
	"  -h, --help                this text\n"
	"      --version             print the version\n";

typedef struct {
	const char *model, *outdir;
	bool check_only, dump_ir, time, explain, recompute;
	const char *strategy_in, *strategy_out, *cluster, *dot;
	const char *override_key[12];
	const char *override_flag[12];   /* as typed, for messages */
	const char *override_text[12];
	int noverrides;
} Options;

static noreturn void usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "shardc: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n(see shardc --help)\n");
	exit(EXIT_USAGE);
}

static void add_override(Options *o, const char *key, const char *flag, const char *text)
{
	for (int i = 0; i < o->noverrides; i++)
		if (strcmp(o->override_key[i], key) == 0) {
			o->override_text[i] = text;
			return;
		}
	o->override_flag[o->noverrides] = flag;
	o->override_key[o->noverrides] = key;
	o->override_text[o->noverrides++] = text;
}

static void parse_args(int argc, char **argv, Options *o)
{
	enum { O_CHECK = 256, O_DUMP, O_DEV, O_PM, O_SM, O_DS, O_SEED, O_PREC, O_POPT, O_SOUT, O_SIN, O_CLUSTER, O_VERSION,
	       O_TIME, O_EXPLAIN, O_DOT, O_RECOMPUTE };
	static const struct option longs[] = {
		{"output", required_argument, 0, 'o'}, {"check", no_argument, 0, O_CHECK},
		{"dump-ir", no_argument, 0, O_DUMP}, {"device-num", required_argument, 0, O_DEV},
		{"parallel-mode", required_argument, 0, O_PM}, {"search-mode", required_argument, 0, O_SM},
		{"dataset-strategy", required_argument, 0, O_DS}, {"seed", required_argument, 0, O_SEED},
		{"precision", required_argument, 0, O_PREC}, {"parallel-optimizer", required_argument, 0, O_POPT},
		{"strategy-out", required_argument, 0, O_SOUT}, {"strategy-in", required_argument, 0, O_SIN},
		{"cluster", required_argument, 0, O_CLUSTER}, {"help", no_argument, 0, 'h'},
		{"version", no_argument, 0, O_VERSION}, {"time", no_argument, 0, O_TIME},
		{"explain", no_argument, 0, O_EXPLAIN}, {"dot", required_argument, 0, O_DOT},
		{"recompute", no_argument, 0, O_RECOMPUTE}, {0, 0, 0, 0},
	};
	opterr = 0;
	int c;
	while ((c = getopt_long(argc, argv, ":o:h", longs, NULL)) != -1) {
		switch (c) {
		case 'o': o->outdir = optarg; break;
		case 'h': fputs(usage, stdout); exit(0);
		case O_VERSION: printf("shardc %s\n", SHARDC_VERSION); exit(0);
		case O_CHECK: o->check_only = true; break;
		case O_DUMP: o->dump_ir = true; break;
		case O_TIME: o->time = true; break;
		case O_DEV: add_override(o, "device_num", "--device-num", optarg); break;
		case O_PM: add_override(o, "parallel_mode", "--parallel-mode", optarg); break;
		case O_SM: add_override(o, "search_mode", "--search-mode", optarg); break;
		case O_DS: add_override(o, "dataset_strategy", "--dataset-strategy", optarg); break;
		case O_SEED: add_override(o, "seed", "--seed", optarg); break;
		case O_PREC: add_override(o, "precision", "--precision", optarg); break;
		case O_POPT:
			add_override(o, "enable_parallel_optimizer", "--parallel-optimizer", strcmp(optarg, "off") ? "true" : "false");
			if (strcmp(optarg, "off"))
				add_override(o, "optimizer_level", "--parallel-optimizer", optarg);
			break;
		case O_EXPLAIN: o->explain = true; break;
		case O_RECOMPUTE: o->recompute = true; break;
		case O_SOUT: o->strategy_out = optarg; break;
		case O_SIN: o->strategy_in = optarg; break;
		case O_CLUSTER: o->cluster = optarg; break;
		case O_DOT: o->dot = optarg; break;
		case ':': usage_error("option %s needs a value", argv[optind - 1]);
		default: usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind >= argc)
		usage_error("%s", "no model file given");
	if (optind + 1 < argc)
		usage_error("one model file at a time; unexpected '%s'", argv[optind + 1]);
	o->model = argv[optind];
	if (!o->check_only && !o->outdir)
		usage_error("%s", "give -o OUTDIR, or --check to only check the model");
	if (o->strategy_in && access(o->strategy_in, R_OK) != 0)
		usage_error("cannot read --strategy-in file '%s'", o->strategy_in);
}

/* Command-line values are IR values; bare words are taken as strings. */
static void apply_overrides(Module *m, const Options *o, Module **holders)
{
	for (int i = 0; i < o->noverrides; i++) {
		const char *text = o->override_text[i];
		StrBuf b = {0};
		if (text[0] == '(' || text[0] == '"' || text[0] == '-' || (text[0] >= '0' && text[0] <= '9') ||
		    !strcmp(text, "true") || !strcmp(text, "false"))
			sb_puts(&b, text);
		else
			sb_printf(&b, "\"%s\"", text);
		Lit *v = parse_value_text(o->override_flag[i], b.data, &holders[i]);
		sb_free(&b);
		const char *err = "not a value";
		if (!v || !context_apply(&m->ctx, o->override_key[i], v, &err)) {
			fprintf(stderr, "shardc: %s '%s': %s\n", o->override_flag[i], text, err);
			exit(EXIT_USAGE);
		}
		if (m->ctx.dataset_tuple == v)
			m->ctx.dataset_src = holders[i]->src;
	}
}

/* --recompute: the train block's recompute: true. */
static void set_recompute(Module *m, const char *model)
{
	if (!m->train) {
		fprintf(stderr, "shardc: --recompute: %s has no train block (recomputation is for training)\n", model);
		exit(EXIT_USAGE);
	}
	m->train->recompute = RECOMPUTE_LAYERS;
}

/* --strategy-out FILE, --dot FILE: written whole or not at all. */
static void write_path(const char *path, char *text)
{
	if (!write_file(path, text, strlen(text))) {
		fprintf(stderr, "shardc: cannot write %s: %s\n", path, strerror(errno));
		exit(EXIT_IO);
	}
	free(text);
}

/* --time: each stage's seconds, in pipeline order. */
typedef struct {
	const char *name[16];
	double seconds[16];
	int n;
	double last, start;
} Stages;

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Ends the stage that was running: called after each one. */
static void stage(Stages *t, const char *name)
{
	double n = now();
	t->name[t->n] = name;
	t->seconds[t->n++] = n - t->last;
	t->last = n;
}

static void print_stages(const Stages *t, const Module *m)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	int nodes = 0;
	for (int i = 0; i < m->ngraphs; i++)
		nodes += m->graphs[i]->nnodes;
	fprintf(stderr, "shardc: %d operators:", nodes);
	for (int i = 0; i < t->n; i++)
		fprintf(stderr, " %s %.3f s,", t->name[i], t->seconds[i]);
	fprintf(stderr, " total %.3f s, peak memory %.1f MB\n", t->last - t->start, (double)ru.ru_maxrss / 1024.0);
}

/* The model's text; exits with a message when it cannot be read. */
static char *read_model(const char *path, size_t *len)
{
	struct stat st;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		fprintf(stderr, "shardc: %s is a directory, not a model file\n", path);
		exit(EXIT_USAGE);
	}
	char *text = read_file(path, len);
	if (!text) {
		fprintf(stderr, "shardc: cannot read %s: %s\n", path, strerror(errno));
		exit(EXIT_USAGE);
	}
	if (*len > (size_t)1 << 30) {
		fprintf(stderr, "shardc: %s is larger than 1 GiB\n", path);
		exit(EXIT_USAGE);
	}
	return text;
}

static void report_errors(const Diag *d)
{
	if (d->nerrors > MAX_ERRORS)
		fprintf(stderr, "%d errors (the first %d shown)\n", d->nerrors, MAX_ERRORS);
	else
		fprintf(stderr, "%d error%s\n", d->nerrors, d->nerrors == 1 ? "" : "s");
}

/* The pipeline, one stage a line; each stage runs only when the ones before
 * it found no error. */
int main(int argc, char **argv)
{
	Options o = {0};
	parse_args(argc, argv, &o);
	SearchOptions search = {.explain = o.explain, .out = stdout, .results_only = o.strategy_in != NULL};
	cluster_default(&search.cluster);
	int cl = o.cluster ? cluster_load(o.cluster, &search.cluster, stderr) : 0;
	if (cl)
		return cl == 2 ? EXIT_USAGE : EXIT_MODEL;
	size_t len;
	char *text = read_model(o.model, &len);
	Diag d = {.out = stderr, .caret = true};
	Module *holders[8] = {0};
	Stages t = {.start = now()};
	t.last = t.start;
	/* Lowering reports nothing (every model error is found before it), so a
	 * --check run stops before it, unless it is to save the strategies or the DOT. */
	bool lowering = !o.check_only || o.strategy_out || o.dot;
	int status = 0;

	Module *m = parse_module(o.model, text, (int)len, &d);
	stage(&t, "parse");
	bool ok = d.nerrors == 0 && check_context(m, &d);
	if (ok)
		apply_overrides(m, &o, holders);
	ok = ok && check_names(m, &d);
	if (ok && o.recompute)
		set_recompute(m, o.model);
	stage(&t, "check");
	ok = ok && infer_shapes(m, &d) && check_strategies(m, &d);
	stage(&t, "infer");
	FlatGraph *flat = ok ? flatten(m) : NULL;
	stage(&t, "flatten");
	if (ok)
		autocast(m, flat);
	stage(&t, "autocast");
	Strategies strategies;
	ok = ok && assign_strategies(m, flat, &strategies, &d);
	stage(&t, "strategies");
	ok = ok && search_strategies(m, flat, &strategies, &search, &d);
	if (ok && o.strategy_in) {
		int r = strategy_load(o.strategy_in, m, flat, &strategies, &d);
		status = r == 2 ? EXIT_USAGE : 0;
		ok = r == 0;
	}
	if (ok)
		autocast_strategies(m, flat, &strategies);
	stage(&t, "search");
	Lowered *low = ok && lowering ? lower(m, flat, &strategies) : NULL;
	stage(&t, "lower");
	if (low && m->train)
		differentiate(low);
	stage(&t, "differentiate");
	if (low && m->train)
		recompute(low);
	stage(&t, "recompute");
	if (low && m->train)
		bucket_gradients(low, (int64_t)search.cluster.bucket_bytes);
	stage(&t, "bucket");
	if (low)
		fuse_operators(low);
	stage(&t, "fuse");
	ok = ok && (o.check_only || emit_check(low, &d));
	Program *plan = ok && !o.check_only ? emit_plan(low, o.model) : NULL;
	stage(&t, "plan memory");

	if (!ok) {
		if (status == 0) {
			report_errors(&d);
			status = EXIT_MODEL;
		}
	} else {
		if (o.strategy_out)
			write_path(o.strategy_out, strategy_json(low));
		if (o.dot)
			write_path(o.dot, dot_graph(low, &search.cluster));
		if (plan)
			status = outdir_write(o.outdir, m, low, plan, o.dump_ir);
	}
	stage(&t, "emit and write");
	if (o.time)
		print_stages(&t, m);
	if (plan)
		emit_free(plan);
	for (int i = 0; i < 8; i++)
		module_free(holders[i]);
	module_free(m);
	free(text);
	return status;
}
