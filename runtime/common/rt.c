/* rt.c: the process: init and finalize, the command line, the loss printed
 * and checked (a NaN or inf loss, or loss scaling stuck at 1, stops every
 * rank with exit status 3), slabs, groups.
 *
 * Backend-independent; it calls the backend's sc_be_* hooks for what differs
 * (the GPU, NCCL, device memory). A group is an MPI communicator split from
 * the world with the member index as key, so member order is the order the
 * compiler gave; the cuda backend adds an NCCL communicator split the same
 * way. */
#include "rt_internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The options run.sh passes; keyed ones take NAME=VALUE, bare ones no value. */
static const struct {
	const char *flag;
	bool keyed, bare;
} options[] = {
	{"--input", true, false},
	{"--param", true, false},
	{"--params", false, false},
	{"--param-names", false, false},
	{"--output-dir", false, false},
	{"--steps", false, false},
	{"--data", true, false},
	{"--labels", false, false},
	{"--shuffle", false, false},
	{"--strict-inputs", false, true},
	{"--unchecked-ids", false, true},
	{"--log-every", false, false},
	{"--log", false, false},
	{"--checkpoint", false, false},
	{"--save-every", false, false},
	{"--keep", false, false},
	{"--resume", false, false},
	{"--tf32", false, true},
};

static int find_option(const char *arg, size_t *flag_len)
{
	for (size_t i = 0; i < sizeof options / sizeof options[0]; i++) {
		size_t n = strlen(options[i].flag);
		if (strncmp(arg, options[i].flag, n) == 0 && (arg[n] == '\0' || arg[n] == '=')) {
			*flag_len = n;
			return (int)i;
		}
	}
	return -1;
}

/* The option at argv[*i] (-1: not one) and its value, from `--flag value`
 * or `--flag=value` (NULL: none); *i moves onto the value. A bare flag's
 * value is "" (NULL when one is written after '='). */
static int option_at(int argc, char **argv, int *i, const char **value)
{
	size_t len;
	int k = find_option(argv[*i], &len);
	if (k >= 0 && options[k].bare)
		*value = argv[*i][len] == '=' ? NULL : "";
	else
		*value = k < 0 ? NULL : argv[*i][len] == '=' ? argv[*i] + len + 1 : *i + 1 < argc ? argv[++*i] : NULL;
	return k;
}

/* One message for the first bad option, or "" when all are good. */
static void check_options(int argc, char **argv, char *msg, size_t n)
{
	msg[0] = '\0';
	for (int i = 1; i < argc; i++) {
		const char *v;
		int k = option_at(argc, argv, &i, &v);
		char cut[SC_NAME_BUF];
		if (k < 0) {
			snprintf(msg, n, "shardc: unknown option '%s' (known: --input NAME=FILE, --param NAME=FILE, "
			         "--params FILE, --param-names FILE, --output-dir DIR, --steps K, --data NAME=FILE[:S], "
			         "--labels NAME, --shuffle SEED, --strict-inputs, --unchecked-ids, --log-every K, --log FILE, "
			         "--checkpoint DIR, --save-every K, --keep N, --resume DIR, --tf32)",
			         sc_cut(cut, argv[i], strlen(argv[i])));
			return;
		}
		if (options[k].bare) {
			if (!v) {
				snprintf(msg, n, "shardc: option %s takes no value", options[k].flag);
				return;
			}
			continue;
		}
		if (!v || !*v) {
			snprintf(msg, n, "shardc: option '%s' needs a value", options[k].flag);
			return;
		}
		const char *eq = strchr(v, '=');
		if (options[k].keyed && (!eq || eq == v || !eq[1])) {
			snprintf(msg, n, "shardc: option %s takes NAME=FILE, got '%s'", options[k].flag, sc_cut(cut, v, strlen(v)));
			return;
		}
	}
}

sc_rt *sc_init(int *argc, char ***argv, int expected_ranks)
{
	int provided;   /* the data reader (data.c) is a thread that makes no MPI call */
	SC_MPI_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided));
	sc_rt *rt = calloc(1, sizeof *rt);
	if (!rt)
		SC_DIE("out of memory");
	SC_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rt->rank));
	SC_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &rt->size));
	rt->argc = argc ? *argc : 0;
	rt->argv = argv ? *argv : NULL;
	char msg[512];
	snprintf(msg, sizeof msg, "shardc: this program was compiled for %d ranks, but runs on %d (mpirun -np %d)",
	         expected_ranks, rt->size, expected_ranks);
	sc_agree_or_exit(rt, expected_ranks <= 0 || expected_ranks == rt->size, msg);
	check_options(rt->argc, rt->argv, msg, sizeof msg);
	sc_agree_or_exit(rt, msg[0] == '\0', msg);
	sc_be_init(rt);
	return rt;
}

const char *sc_option(sc_rt *rt, const char *flag, const char *key)
{
	const char *found = NULL;
	size_t klen = key ? strlen(key) : 0;
	for (int i = 1; i < rt->argc; i++) {
		const char *v;
		int k = option_at(rt->argc, rt->argv, &i, &v);
		if (k < 0 || !v || strcmp(options[k].flag, flag) != 0)
			continue;
		if (!key)
			found = v;
		else if (strncmp(v, key, klen) == 0 && v[klen] == '=')
			found = v + klen + 1;
	}
	return found;
}

const char *sc_option_next(sc_rt *rt, const char *flag, int *i)
{
	while (++*i < rt->argc) {
		const char *v;
		int k = option_at(rt->argc, rt->argv, i, &v);
		if (k >= 0 && v && strcmp(options[k].flag, flag) == 0)
			return v;
	}
	return NULL;
}

int sc_rank(const sc_rt *rt)
{
	return rt->rank;
}

int sc_size(const sc_rt *rt)
{
	return rt->size;
}

int64_t sc_comm_bytes(const sc_rt *rt)
{
	return rt->bytes_sent;
}

int64_t sc_steps(sc_rt *rt, int64_t default_steps)
{
	const char *v = sc_option(rt, "--steps", NULL);
	if (!v)
		return rt->steps = default_steps;
	char *end, msg[256], cut[SC_NAME_BUF];
	errno = 0;
	long long k = strtoll(v, &end, 10);   /* which also takes leading spaces and a sign: digits only */
	snprintf(msg, sizeof msg, "shardc: --steps '%s': expected a positive integer", sc_cut(cut, v, strlen(v)));
	sc_agree_or_exit(rt, *v >= '0' && *v <= '9' && errno == 0 && !*end && k >= 1, msg);
	return rt->steps = k;
}

void sc_check_names(sc_rt *rt, const char *flag, const char *const *names, int n)
{
	for (int i = 1; i < rt->argc; i++) {   /* sc_init checked the form: every keyed value has NAME= */
		const char *v;
		int k = option_at(rt->argc, rt->argv, &i, &v);
		if (k < 0 || !v || strcmp(options[k].flag, flag) != 0)
			continue;
		const char *eq = strchr(v, '=');
		bool known = false;
		for (int j = 0; j < n && !known; j++)
			known = strlen(names[j]) == (size_t)(eq - v) && strncmp(v, names[j], (size_t)(eq - v)) == 0;
		char msg[1024], c1[SC_NAME_BUF], c2[SC_NAME_BUF];
		int at = snprintf(msg, sizeof msg, "shardc: %s %s: the model has no %s named '%s' (it has:", flag,
		                  sc_cut(c1, v, strlen(v)), strcmp(flag, "--param") == 0 ? "parameter" : "input",
		                  sc_cut(c2, v, (size_t)(eq - v)));
		for (int j = 0; j < n && at > 0 && (size_t)at < sizeof msg; j++)
			at += snprintf(msg + at, sizeof msg - (size_t)at, " %s", sc_cut(c1, names[j], strlen(names[j])));
		if (at > 0 && (size_t)at < sizeof msg)
			snprintf(msg + at, sizeof msg - (size_t)at, "%s)", n ? "" : " none");
		sc_agree_or_exit(rt, known, msg);
	}
}

void sc_check_inputs(sc_rt *rt, const char *const *names, const char *const *inits, int n)
{
	char msg[1024], cut[SC_NAME_BUF];
	int at = 0, unfed = 0;
	const char *labels = sc_option(rt, "--labels", NULL);   /* fed by --data's token stream */
	for (int k = 0; k < n; k++) {
		if (sc_option(rt, "--input", names[k]) || sc_option(rt, "--data", names[k]) ||
		    (labels && !strcmp(labels, names[k])))
			continue;
		if (at >= 0 && (size_t)at < sizeof msg)
			at += snprintf(msg + at, sizeof msg - (size_t)at, "%s'%s' (%s)", unfed ? ", " : "",
			               sc_cut(cut, names[k], strlen(names[k])), inits[k]);
		unfed++;
	}
	if (!unfed)
		return;
	char full[1200];
	bool strict = sc_option(rt, "--strict-inputs", NULL) != NULL;
	if (strict) {
		snprintf(full, sizeof full, "shardc: --strict-inputs: no --input NAME=FILE.npy gives the input%s %s; give %s, "
		         "or leave out --strict-inputs to run on %s initializer%s", unfed == 1 ? "" : "s", msg,
		         unfed == 1 ? "it" : "each", unfed == 1 ? "its" : "their", unfed == 1 ? "" : "s");
		sc_agree_or_exit(rt, false, full);
	}
	if (rt->rank == 0)
		fprintf(stderr, "shardc: warning: no --input gives %s: %s on %s initializer%s (--strict-inputs makes this "
		        "an error)\n", msg, unfed == 1 ? "it runs" : "they run", unfed == 1 ? "its" : "their",
		        unfed == 1 ? "" : "s");
}

double sc_time(sc_rt *rt)
{
	sc_be_sync(rt);
	return MPI_Wtime();
}

#define SC_PI 3.14159265358979323846

/* MindSpore's schedules (mindspore.nn.learning_rate_schedule) and
 * MindFormers' CosineWithWarmUpLR, in double; a[] holds the arguments in the
 * order shardc_rt.h gives; g is MindSpore's global_step, 0 at the first update. */
double sc_learning_rate(sc_lr_schedule s, const double *a, int64_t global_step)
{
	double g = (double)global_step;
	switch (s) {
	case SC_LR_CONSTANT:
		return a[0];
	case SC_LR_WARMUP:   /* learning_rate, warmup_steps */
		return a[0] * fmin(g, a[1]) / a[1];
	case SC_LR_COSINE:   /* min_lr, max_lr, decay_steps */
		return a[0] + 0.5 * (a[1] - a[0]) * (1 + cos(SC_PI * fmin(g, a[2]) / a[2]));
	case SC_LR_POLYNOMIAL: {   /* learning_rate, end_learning_rate, decay_steps, power, update_decay_steps */
		double d = a[2];
		if (a[4] != 0)
			d *= fmax(ceil(g / d), 1);
		else
			g = fmin(g, d);
		return (a[0] - a[1]) * pow(1 - g / d, a[3]) + a[1];
	}
	case SC_LR_EXPONENTIAL: {   /* learning_rate, decay_rate, decay_steps, is_stair */
		double p = g / a[2];
		return a[0] * pow(a[1], a[3] != 0 ? floor(p) : p);
	}
	case SC_LR_COSINE_WARMUP: {   /* learning_rate, warmup_steps, total_steps, lr_end, warmup_lr_init */
		if (g < a[1])
			return a[4] + (a[0] - a[4]) * g / a[1];
		double progress = fmin((g - a[1]) / (a[2] - a[1]), 1);
		return a[3] + 0.5 * (a[0] - a[3]) * (1 + cos(SC_PI * progress));
	}
	}
	return a[0];
}

/* The shortest decimal that reads back as the float32 x (numpy's str). */
static void float_str(char *buf, size_t n, float x)
{
	for (int digits = 1; digits <= 9; digits++) {
		snprintf(buf, n, "%.*g", digits, (double)x);
		if (strtof(buf, NULL) == x)
			break;
	}
	if (isnan(x))
		snprintf(buf, n, "nan");
	else if (isfinite(x) && !strpbrk(buf, ".e"))
		strcat(buf, ".0");
}

/* --log-every K (K >= 1, else every rank exits 1) and --log FILE, read at
 * the first step; the clock starts at t0. */
static void progress_options(sc_rt *rt, double t0)
{
	const char *v = sc_option(rt, "--log-every", NULL), *file = sc_option(rt, "--log", NULL);
	char *end, msg[512], cut[SC_NAME_BUF];
	long long k = 1;
	if (v) {
		errno = 0;
		k = strtoll(v, &end, 10);
		snprintf(msg, sizeof msg, "shardc: --log-every '%s': expected a positive integer", sc_cut(cut, v, strlen(v)));
		sc_agree_or_exit(rt, *v >= '0' && *v <= '9' && errno == 0 && !*end && k >= 1, msg);
	}
	rt->log_every = k;
	if (file && rt->rank == 0)
		rt->log = fopen(file, "w");
	snprintf(msg, sizeof msg, "shardc: --log '%s': cannot write it: %s", file ? sc_cut(cut, file, strlen(file)) : "",
	         strerror(errno));
	sc_agree_or_exit(rt, !file || rt->rank != 0 || rt->log, msg);
	rt->started = rt->last_time = t0;
}

void sc_print_step(sc_rt *rt, int64_t step, int64_t steps, double t0, float x, double lr, float sq, double items,
                   const char *unit)
{
	if (!rt->log_every) {
		progress_options(rt, t0);
		rt->first_step = step;   /* 1, or a resumed run's first */
		rt->last_step = step - 1;
	}
	sc_be_step_done(rt, step == rt->first_step, step == steps);
	bool sqnorm = !(sq < 0);   /* -1: none; a NaN or inf (an overflow under loss scaling) is printed */
	if (rt->rank != 0 || (step % rt->log_every != 0 && step != steps && step != rt->first_step))
		return;
	double now = MPI_Wtime(), ms = 1e3 * (now - rt->last_time) / (double)(step - rt->last_step);
	double eta = (now - rt->started) / (double)(step - rt->first_step + 1) * (double)(steps - step);
	rt->last_time = now;
	rt->last_step = step;
	char l[64], norm[64] = "", speed[64] = "";
	float_str(l, sizeof l, x);
	if (sqnorm)
		snprintf(norm, sizeof norm, ", grad norm %.6g", isnan(sq) ? NAN : sqrt((double)sq));   /* nan, not -nan */
	if (items > 0 && ms > 0)
		snprintf(speed, sizeof speed, ", %.4g %s/s", items / (ms / 1e3), unit);
	printf("step: %lld, loss is %s, lr %.6g%s%s, %.4g ms/step, eta %lld:%02lld:%02lld\n", (long long)step, l, lr,
	       norm, speed, ms, (long long)eta / 3600, (long long)eta / 60 % 60, (long long)eta % 60);
	fflush(stdout);
	if (rt->log) {
		fprintf(rt->log, "{\"step\": %lld, \"loss\": %s, \"lr\": %.17g", (long long)step, isfinite(x) ? l : "null",
		        lr);
		if (sqnorm && isfinite(sq))
			fprintf(rt->log, ", \"grad_norm\": %.9g", sqrt((double)sq));
		else if (sqnorm)
			fprintf(rt->log, ", \"grad_norm\": null");
		if (items > 0 && ms > 0)
			fprintf(rt->log, ", \"%s_per_s\": %.6g", unit, items / (ms / 1e3));
		fprintf(rt->log, ", \"ms_per_step\": %.6g, \"eta_s\": %.3f}\n", ms, eta);
		fflush(rt->log);
	}
}

void sc_check_loss_host(sc_rt *rt, int64_t step, float x)
{
	char msg[256] = "";
	if (!isfinite(x))
		snprintf(msg, sizeof msg, "shardc: step %lld: the loss is %s (%s)", (long long)step,
		         isnan(x) ? "nan" : x > 0 ? "inf" : "-inf",
		         step == 1 ? "at the first step, before any update: an input or a parameter holds a NaN, an inf "
		                     "or values too large"
		                   : "the run diverged: lower the learning rate, or clip gradients with clip_global_norm");
	sc_agree_or_stop(rt, isfinite(x), 3, msg);
}

void sc_check_loss(sc_rt *rt, int64_t step, const float *loss)
{
	float x;
	sc_to_host(rt, &x, loss, sizeof x);
	sc_check_loss_host(rt, step, x);
}

void sc_check_skips(sc_rt *rt, int64_t step, int64_t skipped)
{
	char msg[512];
	snprintf(msg, sizeof msg, "shardc: step %lld: %d steps in a row skipped, their gradients overflowing Float16 "
	         "with the loss scale at 1 (the run diverged, or its values are too large for Float16: lower the "
	         "learning rate, or train with precision \"bf16\")", (long long)step, SC_MAX_SKIPS_AT_1);
	sc_agree_or_stop(rt, skipped < SC_MAX_SKIPS_AT_1, 3, msg);
}

void sc_finalize(sc_rt *rt)
{
	sc_p2p_flush(rt);
	int64_t mine[2] = {rt->bytes_sent, rt->p2p_sent}, p2p = 0;
	int64_t *all = rt->rank == 0 ? calloc(2 * (size_t)rt->size, sizeof *all) : NULL;
	SC_MPI_CHECK(MPI_Gather(mine, 2, MPI_INT64_T, all, 2, MPI_INT64_T, 0, MPI_COMM_WORLD));
	if (rt->rank == 0) {
		for (int r = 0; r < rt->size; r++) {
			printf("rank %d: comm bytes sent %lld\n", r, (long long)all[2 * r]);
			p2p += all[2 * r + 1];
		}
		for (int r = 0; r < rt->size && p2p; r++)   /* pipeline stages: the point-to-point share */
			printf("rank %d: p2p bytes sent %lld\n", r, (long long)all[2 * r + 1]);
		fflush(stdout);
		free(all);
	}
	for (int i = 0; i < rt->ngroups; i++) {
		sc_group *g = rt->groups[i];
		sc_be_group_free(rt, g);
		if (g->comm != MPI_COMM_NULL)
			MPI_Comm_free(&g->comm);
		free(g->members);
		free(g);
	}
	for (int i = 0; i < rt->nslabs; i++)
		sc_be_free(rt, rt->slabs[i]);
	if (rt->log)
		fclose(rt->log);
	free(rt->groups);
	free(rt->slabs);
	free(rt->send_req);
	free(rt->send_copy);
	sc_be_finalize(rt);
	free(rt);
	MPI_Finalize();
}

void *sc_slab(sc_rt *rt, size_t bytes)
{
	if (rt->nslabs == rt->capslabs) {
		rt->capslabs = rt->capslabs ? 2 * rt->capslabs : 8;
		rt->slabs = realloc(rt->slabs, (size_t)rt->capslabs * sizeof *rt->slabs);
		if (!rt->slabs)
			SC_DIE("out of memory");
	}
	void *p = sc_be_alloc(rt, bytes ? bytes : 1);
	rt->slabs[rt->nslabs++] = p;
	return p;
}

/* Checks a member list, returning this rank's index in it (-1: not a member)
 * and its FNV hash, by which the ranks compare lists. */
static int group_members_check(const sc_rt *rt, const char *fn, const int *members, int n, uint64_t *hash)
{
	if (n < 1 || n > rt->size)
		SC_DIE("%s: %d members in a world of %d", fn, n, rt->size);
	uint64_t h = 0xcbf29ce484222325ull;
	int me = -1;
	char *seen = calloc((size_t)rt->size, 1);   /* linear: a group may hold every rank */
	if (!seen)
		SC_DIE("out of memory");
	for (int i = 0; i < n; i++) {
		if (members[i] < 0 || members[i] >= rt->size)
			SC_DIE("%s: member %d is rank %d, not in [0, %d)", fn, i, members[i], rt->size);
		if (seen[members[i]]++)
			SC_DIE("%s: rank %d is named twice", fn, members[i]);
		if (members[i] == rt->rank)
			me = i;
		h = (h ^ (uint64_t)members[i]) * 0x100000001b3ull;
	}
	free(seen);
	*hash = h;
	return me;
}

static sc_group *group_add(sc_rt *rt, const int *members, int n, int me, int color)
{
	sc_group *g = calloc(1, sizeof *g);
	if (!g || !(g->members = malloc((size_t)n * sizeof *g->members)))
		SC_DIE("out of memory");
	memcpy(g->members, members, (size_t)n * sizeof *members);
	g->n = n;
	g->me = me;
	g->color = color;
	SC_MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, color >= 0 ? color : MPI_UNDEFINED, me, &g->comm));
	sc_be_group_init(rt, g);
	if (rt->ngroups == rt->capgroups) {
		rt->capgroups = rt->capgroups ? 2 * rt->capgroups : 8;
		rt->groups = realloc(rt->groups, (size_t)rt->capgroups * sizeof *rt->groups);
		if (!rt->groups)
			SC_DIE("out of memory");
	}
	rt->groups[rt->ngroups++] = g;
	return g;
}

sc_group *sc_group_new(sc_rt *rt, const int *members, int n)
{
	uint64_t h, lo, hi;   /* every rank must pass the same list */
	int me = group_members_check(rt, "sc_group_new", members, n, &h);
	SC_MPI_CHECK(MPI_Allreduce(&h, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD));
	SC_MPI_CHECK(MPI_Allreduce(&h, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD));
	if (lo != hi)
		SC_DIE("sc_group_new: the ranks disagree on group %d's members (group calls out of order?)", rt->ngroups);
	return group_add(rt, members, n, me, me >= 0 ? 0 : -1);
}

sc_group *sc_group_split(sc_rt *rt, const int *members, int n)
{
	uint64_t h, lo, hi;   /* the members of one group must pass the same list */
	int me = group_members_check(rt, "sc_group_split", members, n, &h);
	if (me < 0)
		SC_DIE("sc_group_split: rank %d is not in the group it names", rt->rank);
	sc_group *g = group_add(rt, members, n, me, members[0]);
	SC_MPI_CHECK(MPI_Allreduce(&h, &lo, 1, MPI_UINT64_T, MPI_MIN, g->comm));
	SC_MPI_CHECK(MPI_Allreduce(&h, &hi, 1, MPI_UINT64_T, MPI_MAX, g->comm));
	int size;
	SC_MPI_CHECK(MPI_Comm_size(g->comm, &size));
	if (lo != hi || size != n)
		SC_DIE("sc_group_split: the ranks of group %d disagree on its members (group calls out of order?)",
		       rt->ngroups - 1);
	return g;
}

sc_group *sc_group_split_grid(sc_rt *rt, int first, int k, const int *size, const int *stride)
{
	int64_t n = 1;
	for (int j = 0; j < k; j++) {
		if (size[j] < 1 || stride[j] < 1)
			SC_DIE("sc_group_split_grid: axis %d has size %d and stride %d", j, size[j], stride[j]);
		n *= size[j];
		if (n > rt->size)
			SC_DIE("sc_group_split_grid: more than %d members in a world of %d", rt->size, rt->size);
	}
	int *members = malloc((size_t)n * sizeof *members);
	if (!members)
		SC_DIE("out of memory");
	for (int64_t i = 0; i < n; i++) {
		int64_t r = first, rest = i;
		for (int j = k - 1; j >= 0; j--) {
			r += rest % size[j] * stride[j];
			rest /= size[j];
		}
		if (r < 0 || r >= rt->size)
			SC_DIE("sc_group_split_grid: member %lld is rank %lld, not in [0, %d)", (long long)i, (long long)r,
			       rt->size);
		members[i] = (int)r;
	}
	sc_group *g = sc_group_split(rt, members, (int)n);
	free(members);
	return g;
}
