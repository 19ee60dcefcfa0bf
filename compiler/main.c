/* main.c: the driver. One call per stage, the check between stages, the
 * optional dump; nothing else. Exit 0 ok, 1 bad model, 2 bad command line,
 * 3 internal error (an abort also means our bug), 4 a file could not be
 * written (outdir.c writes OUT). */
#include "pipeline.h"

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
	"       shardc --list-ops [--json]\n"
	"\n"
	"Compile a MindIR-like graph with sharding annotations into one C program that every\n"
	"rank runs, with a table of numbers per rank.\n"
	"\n"
	"  -o, --output DIR          where to write (created, or replaced whole if shardc wrote it)\n"
	"      --check               parse, check and infer only; write nothing\n"
	"      --dump-ir             also write the IR dumps under OUTDIR/ir/: 00_parsed.ir,\n"
	"                            step_parallel_begin.ir, rank_<r>/step_parallel_end.ir\n"
	"      --dump-after STAGE[,STAGE]  also write the program as STAGE leaves it under\n"
	"                            OUTDIR/ir/after_STAGE (check, infer, validate, search, lower,\n"
	"                            differentiate, recompute, bucket, fuse, plan)\n"
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
	"      --list-ops            print the operator table (ops.h), one line per operator: inputs,\n"
	"                            precision class, what its gradient reads, view, attributes;\n"
	"                            with --json a JSON array of one object per operator\n"
	"  -h, --help                this text\n"
	"      --version             print the version\n";

typedef struct {
	const char *model, *outdir;
	bool check_only, dump_ir, time, explain, recompute, list_ops, json;
	const char *strategy_in, *strategy_out, *cluster, *dot;
	Override overrides[12];
	int noverrides;
	unsigned dump_after;     /* bit s: --dump-after names stage s */
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
		if (strcmp(o->overrides[i].key, key) == 0) {
			o->overrides[i].text = text;
			return;
		}
	o->overrides[o->noverrides++] = (Override){key, flag, text};
}

/* --dump-after STAGE[,STAGE...]: the stages whose program OUT/ir/ keeps. */
static void add_dump_after(Options *o, const char *list)
{
	char *copy = xstrdup(list), *save = NULL;
	for (char *name = strtok_r(copy, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
		Stage s = stage_named(name);
		if (s == STAGE_COUNT || !stage_dumpable(s)) {
			StrBuf b = {0};
			for (int k = 0; k < STAGE_COUNT; k++)
				if (stage_dumpable((Stage)k))
					sb_printf(&b, "%s%s", b.len ? ", " : "", stage_word((Stage)k));
			fprintf(stderr, "shardc: --dump-after: %s '%s'; the stages with a text are %s\n(see shardc --help)\n",
			        s == STAGE_COUNT ? "no stage" : "no text of its own for the stage", name, b.data);
			exit(EXIT_USAGE);
		}
		o->dump_after |= 1u << s;
	}
	free(copy);
}

static void parse_args(int argc, char **argv, Options *o)
{
	enum { O_CHECK = 256, O_DUMP, O_DEV, O_PM, O_SM, O_DS, O_SEED, O_PREC, O_POPT, O_SOUT, O_SIN, O_CLUSTER, O_VERSION,
	       O_TIME, O_EXPLAIN, O_DOT, O_RECOMPUTE, O_DUMP_AFTER, O_LIST_OPS, O_JSON };
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
		{"recompute", no_argument, 0, O_RECOMPUTE}, {"dump-after", required_argument, 0, O_DUMP_AFTER},
		{"list-ops", no_argument, 0, O_LIST_OPS}, {"json", no_argument, 0, O_JSON},
		{0, 0, 0, 0},
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
		case O_DUMP_AFTER: add_dump_after(o, optarg); break;
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
		case O_LIST_OPS: o->list_ops = true; break;
		case O_JSON: o->json = true; break;
		case ':': usage_error("option %s needs a value", argv[optind - 1]);
		default: usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (o->json && !o->list_ops)
		usage_error("%s", "--json goes with --list-ops");
	if (o->list_ops) {   /* the table alone: no model */
		if (optind < argc)
			usage_error("--list-ops takes no model; unexpected '%s'", argv[optind]);
		return;
	}
	if (optind >= argc)
		usage_error("%s", "no model file given");
	if (optind + 1 < argc)
		usage_error("one model file at a time; unexpected '%s'", argv[optind + 1]);
	o->model = argv[optind];
	if (!o->check_only && !o->outdir)
		usage_error("%s", "give -o OUTDIR, or --check to only check the model");
	if (o->dump_after && !o->outdir)
		usage_error("%s", "--dump-after writes under OUTDIR/ir/: give -o OUTDIR");
	if (o->strategy_in && access(o->strategy_in, R_OK) != 0)
		usage_error("cannot read --strategy-in file '%s'", o->strategy_in);
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

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* --time: each stage's seconds, in pipeline order, then writing OUT. */
static void print_stages(const Compilation *c, double write, double total)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	int nodes = 0;
	for (int i = 0; c->m && i < c->m->ngraphs; i++)
		nodes += c->m->graphs[i]->nnodes;
	fprintf(stderr, "shardc: %d operators:", nodes);
	for (int s = 0; s <= (int)c->reached; s++)
		fprintf(stderr, " %s %.3f s,", stage_names[s], c->seconds[s]);
	fprintf(stderr, " emit and write %.3f s, total %.3f s, peak memory %.1f MB\n", write, total,
	        (double)ru.ru_maxrss / 1024.0);
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

/* Reads the command line and the model, runs the pipeline (pipeline.c) as
 * far as the command asks, and writes what it asks for. */
int main(int argc, char **argv)
{
	Options o = {0};
	parse_args(argc, argv, &o);
	if (o.list_ops) {
		char *t = ops_list(o.json);
		fputs(t, stdout);
		free(t);
		return 0;
	}
	double start = now();
	Diag d = {.out = stderr, .caret = true};
	Compilation c = {
		.stop = STAGE_PLAN, .name = o.model, .d = &d, .overrides = o.overrides, .noverrides = o.noverrides,
		.recompute = o.recompute, .strategy_in = o.strategy_in, .dump_after = o.dump_after,
		.search = {.explain = o.explain, .out = stdout, .results_only = o.strategy_in != NULL},
	};
	cluster_default(&c.search.cluster);
	int cl = o.cluster ? cluster_load(o.cluster, &c.search.cluster, stderr) : 0;
	if (cl)
		return cl == 2 ? EXIT_USAGE : EXIT_MODEL;
	size_t len;
	char *text = read_model(o.model, &len);
	c.text = text;
	c.len = (int)len;
	/* --check stops after lowering (every model error is found by then: the
	 * last, uneven.c's, on the lowered program), or after fusion to save the
	 * strategies or the DOT, which read the lowered program; it never plans
	 * memory. */
	if (o.check_only)
		c.stop = o.strategy_out || o.dot ? STAGE_FUSE : STAGE_LOWER;

	int status = 0;
	double write = now();
	if (!pipeline_run(&c)) {
		if (c.status == EXIT_MODEL)
			report_errors(&d);
		status = c.status;
	} else {
		write = now();
		if (o.strategy_out)
			write_path(o.strategy_out, strategy_json(c.low));
		if (o.dot)
			write_path(o.dot, dot_graph(c.low, &c.search.cluster));
		if (!o.check_only)
			status = outdir_write(o.outdir, &c, o.dump_ir);
	}
	double end = now();
	if (o.time)
		print_stages(&c, end - write, end - start);
	compilation_free(&c);
	free(text);
	return status;
}
