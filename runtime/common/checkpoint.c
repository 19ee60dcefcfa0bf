/* checkpoint.c: a training run's checkpoints, written in parallel and read
 * back on any rank count (docs/output.md, Checkpoints of a run).
 *
 * A checkpoint is the folder DIR/step-<S> (S zero-padded to 9 digits, so
 * that names sort as steps do) holding model.safetensors, every tensor
 * whole in its own dtype (parameters, optimizer state), and state.json, the
 * step and the run's counters. It is written as DIR/step-<S>.tmp and
 * renamed when whole: a folder named step-<S> is complete, and a crash
 * leaves at most a .tmp folder, which the next checkpoint removes. The
 * tensors' file is written by every rank at once: each rank knows every
 * shape, so rank 0 writes the header and sizes the file while the others
 * wait, then each rank writes the rows of its own slices at their places
 * (of a slice several ranks hold, the lowest of them), and every rank
 * syncs its writes before rank 0 writes state.json and renames the folder.
 * Reading is sc_safetensors_open's: each rank reads only its slices, so a
 * checkpoint of one plan loads into another. */
#include "rt_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { MAX_VALUES = 16 };
enum { KEEP_DEFAULT = 5 };   /* MindSpore's CheckpointConfig keep_checkpoint_max */

/* A count option's value: a non-negative integer (positive with `positive`),
 * else every rank exits 1 naming it. */
static int64_t count_option(sc_rt *rt, const char *flag, int64_t dflt, bool positive)
{
	const char *v = sc_option(rt, flag, NULL);
	if (!v)
		return dflt;
	char *end, msg[512], cut[SC_NAME_BUF];
	errno = 0;
	long long k = strtoll(v, &end, 10);
	snprintf(msg, sizeof msg, "shardc: %s '%s': expected a %s integer", flag, sc_cut(cut, v, strlen(v)),
	         positive ? "positive" : "non-negative");
	sc_agree_or_exit(rt, *v >= '0' && *v <= '9' && errno == 0 && !*end && k >= (positive ? 1 : 0), msg);
	return k;
}

sc_checkpointing sc_checkpoint_options(sc_rt *rt, int trains)
{
	bool none = !sc_option(rt, "--checkpoint", NULL) && !sc_option(rt, "--resume", NULL);
	sc_agree_or_exit(rt, trains || none, "shardc: --checkpoint and --resume are for training: this model has no "
	                 "train block");
	sc_checkpointing c = {sc_option(rt, "--checkpoint", NULL), count_option(rt, "--save-every", 0, true),
	                      (int)count_option(rt, "--keep", KEEP_DEFAULT, false), sc_option(rt, "--resume", NULL)};
	char why[256] = "", msg[600], cut[SC_NAME_BUF];
	sc_agree_or_exit(rt, !c.resume || (!sc_option(rt, "--params", NULL) && !sc_option(rt, "--param", NULL)),
	                 "shardc: --resume restores every parameter (and the optimizer state) from the checkpoint, so "
	                 "--params or --param would be overwritten: give one or the other");
	bool alone = c.dir || (!sc_option(rt, "--save-every", NULL) && !sc_option(rt, "--keep", NULL));
	sc_agree_or_exit(rt, alone, "shardc: --save-every and --keep need --checkpoint DIR (where to save)");
	bool ok = !c.dir || rt->rank != 0 || sc_npy_check_dir(c.dir, why, sizeof why);
	snprintf(msg, sizeof msg, "shardc: cannot write checkpoints to %s: %s", c.dir ? sc_cut(cut, c.dir, strlen(c.dir)) : "",
	         why);
	sc_agree_or_exit(rt, ok, msg);
	return c;
}

int sc_checkpoint_due(const sc_checkpointing *c, int64_t step, int64_t steps)
{
	return c->dir && (step == steps || (c->every && step % c->every == 0));
}

struct sc_checkpoint {
	char *dir;                   /* DIR */
	int64_t step;
	sc_st_piece *p;              /* (n): this rank's pieces, in the file's order */
	int n, cap;
	struct {
		char key[32];
		double v;
	} value[MAX_VALUES];
	int nvalue;
};

sc_checkpoint *sc_checkpoint_begin(const char *dir, int64_t step)
{
	sc_checkpoint *c = calloc(1, sizeof *c);
	if (!c)
		SC_DIE("out of memory");
	c->dir = sc_strdup(dir);
	c->step = step;
	return c;
}

void sc_checkpoint_add(sc_checkpoint *c, const char *name, const void *src, sc_dtype dt, const int64_t *gdims,
                       int ndim, const int64_t *start, const int64_t *ldims)
{
	sc_st_piece_add(&c->p, &c->n, &c->cap, "sc_checkpoint_add", name, src, dt, gdims, ndim, start, ldims);
}

void sc_checkpoint_value(sc_checkpoint *c, const char *key, double v)
{
	if (c->nvalue == MAX_VALUES || strlen(key) >= sizeof c->value[0].key)
		SC_DIE("sc_checkpoint_value: '%s': at most %d keys of under 32 bytes", key, MAX_VALUES);
	snprintf(c->value[c->nvalue].key, sizeof c->value[0].key, "%s", key);
	c->value[c->nvalue++].v = v;
}

static void step_dir(char *out, size_t n, const char *dir, int64_t step, const char *suffix)
{
	snprintf(out, n, "%s/step-%09lld%s", dir, (long long)step, suffix);
}

/* Removes folder path and the files in it (no subfolders); false: errno. */
static bool remove_dir(const char *path)
{
	DIR *d = opendir(path);
	if (!d)
		return errno == ENOENT;
	struct dirent *e;
	char f[4400];
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			snprintf(f, sizeof f, "%s/%s", path, e->d_name);
			unlink(f);
		}
	closedir(d);
	return rmdir(path) == 0;
}

/* The steps of DIR's complete checkpoints, ascending (malloc'd; *n of them;
 * *n -1 when DIR cannot be read). With `stale`, .tmp folders are removed. */
static int64_t *list_steps(const char *dir, int *n, bool stale)
{
	*n = 0;
	DIR *d = opendir(dir);
	if (!d) {
		*n = -1;
		return NULL;
	}
	int64_t *steps = NULL;
	int cap = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		long long s;
		char tail[8] = "";
		if (sscanf(e->d_name, "step-%9lld%7s", &s, tail) < 1 || strlen(e->d_name) < 14)
			continue;
		if (strcmp(tail, ".tmp") == 0) {
			if (stale) {
				char path[4400];
				snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
				remove_dir(path);
			}
			continue;
		}
		if (*tail)
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 16;
			if (!(steps = realloc(steps, (size_t)cap * sizeof *steps)))
				SC_DIE("out of memory");
		}
		steps[(*n)++] = s;
	}
	closedir(d);
	for (int i = 1; i < *n; i++)   /* insertion sort: a handful kept */
		for (int j = i; j > 0 && steps[j - 1] > steps[j]; j--) {
			int64_t t = steps[j];
			steps[j] = steps[j - 1];
			steps[j - 1] = t;
		}
	return steps;
}

/* Writes this rank's part of piece p: the rows of its slice, each a run of
 * contiguous elements of the whole tensor, at the tensor's place `at` in
 * the file. false: errno. */
static bool write_piece(sc_rt *rt, int fd, int64_t at, const sc_st_piece *p)
{
	size_t es = sc_dtype_size(p->dt);
	int64_t real[SC_MAX_DIMS], piece = sc_numel(p->ldims, p->ndim);   /* only the real part is written */
	sc_piece_real("sc_checkpoint_end", p->gdims, p->ndim, p->start, p->ldims, real);
	int64_t local = sc_numel(real, p->ndim);
	char *host = malloc((size_t)piece * es);
	if (!host)
		SC_DIE("out of memory");
	sc_to_host(rt, host, p->src, (size_t)piece * es);
	sc_piece_unpad(host, es, p->ndim, real, p->ldims);
	/* a run: the last dim's slice, widened over the trailing dims the slice holds whole */
	int inner = p->ndim;
	int64_t run = 1;
	while (inner > 0 && real[inner - 1] == p->gdims[inner - 1])
		run *= real[--inner];
	if (inner > 0)
		run *= real[--inner];
	int64_t idx[SC_MAX_DIMS] = {0}, runs = local / (run ? run : 1);
	bool ok = true;
	for (int64_t r = 0; r < runs && ok; r++) {
		int64_t off = 0;   /* the run's first element in the whole tensor, row-major */
		for (int d = 0; d < p->ndim; d++)
			off = off * p->gdims[d] + p->start[d] + (d < inner ? idx[d] : 0);
		const char *src = host + (size_t)(r * run) * es;
		size_t left = (size_t)run * es;
		off_t pos = (off_t)(at + off * (int64_t)es);
		while (left && ok) {
			ssize_t w = pwrite(fd, src, left, pos);
			ok = w > 0;
			if (ok)
				src += w, left -= (size_t)w, pos += w;
		}
		for (int d = inner - 1; d >= 0; d--)   /* the next run: odometer over the dims before `inner` */
			if (++idx[d] < real[d])
				break;
			else
				idx[d] = 0;
	}
	free(host);
	return ok;
}

/* Whether this rank writes p: it holds it, and no lower rank holds the same
 * slice. Collective over every rank. */
static bool writes_piece(sc_rt *rt, const sc_st_piece *p)
{
	enum { INFO = 1 + 2 * SC_MAX_DIMS };
	int64_t real[SC_MAX_DIMS];   /* the slices' real parts tile the tensor; padding alone holds nothing */
	sc_piece_real("sc_checkpoint_end", p->gdims, p->ndim, p->start, p->ldims, real);
	bool holds = p->src && sc_numel(real, p->ndim) > 0;
	int64_t mine[INFO] = {holds}, *all = malloc((size_t)rt->size * INFO * sizeof *all);
	if (!all)
		SC_DIE("out of memory");
	for (int d = 0; d < p->ndim; d++) {
		mine[1 + d] = p->start[d];
		mine[1 + SC_MAX_DIMS + d] = real[d];
	}
	SC_MPI_CHECK(MPI_Allgather(mine, INFO, MPI_INT64_T, all, INFO, MPI_INT64_T, MPI_COMM_WORLD));
	bool first = holds;
	for (int q = 0; q < rt->rank && first; q++)
		first = memcmp(all + q * INFO, mine, sizeof mine) != 0;
	int64_t covered = 0, whole = sc_numel(p->gdims, p->ndim);
	for (int q = 0; q < rt->size; q++) {   /* the distinct slices must tile the tensor */
		bool dup = !all[q * INFO];
		for (int o = 0; o < q && !dup; o++)
			dup = memcmp(all + o * INFO, all + q * INFO, INFO * sizeof *all) == 0;
		if (!dup)
			covered += sc_numel(all + q * INFO + 1 + SC_MAX_DIMS, p->ndim);
	}
	free(all);
	if (covered != whole)
		SC_DIE("sc_checkpoint_end: %s: the ranks' slices hold %lld of its %lld elements", p->name,
		       (long long)covered, (long long)whole);
	return first;
}

static bool write_state(const char *path, const sc_checkpoint *c)
{
	json_t *values = json_object();
	for (int i = 0; i < c->nvalue; i++)
		json_object_set_new(values, c->value[i].key, json_real(c->value[i].v));
	json_t *root = json_pack("{s:I, s:o}", "step", (json_int_t)c->step, "values", values);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	bool ok = root && fd >= 0 && json_dumpfd(root, fd, JSON_INDENT(1) | JSON_REAL_PRECISION(17)) == 0 &&
	          fsync(fd) == 0;
	if (fd >= 0 && close(fd) != 0)
		ok = false;
	json_decref(root);
	return ok;
}

void sc_checkpoint_end(sc_rt *rt, sc_checkpoint *c, int keep)
{
	char tmp[4200], final[4200], file[4300], msg[4600] = "";
	step_dir(tmp, sizeof tmp, c->dir, c->step, ".tmp");
	step_dir(final, sizeof final, c->dir, c->step, "");
	snprintf(file, sizeof file, "%s/model.safetensors", tmp);
	bool ok = true;
	int64_t data = 0, at = 0;   /* the data's first byte in the file (rank 0's header ends there) */
	if (rt->rank == 0) {   /* the folder, the header, the file at its full size */
		int n;
		free(list_steps(c->dir, &n, true));
		FILE *f = NULL;
		ok = (mkdir(c->dir, 0755) == 0 || errno == EEXIST) && mkdir(tmp, 0755) == 0 && (f = fopen(file, "wb")) &&
		     sc_st_write_header(f, c->p, c->n);
		int64_t bytes = 0;
		for (int i = 0; i < c->n; i++)
			bytes += sc_numel(c->p[i].gdims, c->p[i].ndim) * (int64_t)sc_dtype_size(c->p[i].dt);
		if (f) {
			data = ftell(f);
			ok = ok && fflush(f) == 0 && ftruncate(fileno(f), (off_t)(data + bytes)) == 0;
			ok = fclose(f) == 0 && ok;
		}
		if (!ok)
			snprintf(msg, sizeof msg, "shardc: cannot write the checkpoint %s: %s", file, strerror(errno));
	}
	sc_agree_or_exit(rt, ok, msg);
	SC_MPI_CHECK(MPI_Bcast(&data, 1, MPI_INT64_T, 0, MPI_COMM_WORLD));
	int fd = open(file, O_WRONLY);
	ok = fd >= 0;
	for (int i = 0; i < c->n; i++) {   /* every rank takes part in every agreement, whatever failed */
		bool mine = writes_piece(rt, &c->p[i]);
		if (ok && mine)
			ok = write_piece(rt, fd, data + at, &c->p[i]);
		at += sc_numel(c->p[i].gdims, c->p[i].ndim) * (int64_t)sc_dtype_size(c->p[i].dt);
	}
	if (fd >= 0) {
		ok = fsync(fd) == 0 && ok;
		ok = close(fd) == 0 && ok;
	}
	if (!ok)
		snprintf(msg, sizeof msg, "shardc: cannot write the checkpoint %s: %s", file, strerror(errno));
	sc_agree_or_exit(rt, ok, msg);
	if (rt->rank == 0) {   /* state.json, then the rename that makes it a checkpoint, then the old ones */
		char state[4300];
		snprintf(state, sizeof state, "%s/state.json", tmp);
		ok = write_state(state, c) && remove_dir(final) && rename(tmp, final) == 0;   /* a step saved again: replaced */
		if (!ok)
			snprintf(msg, sizeof msg, "shardc: cannot write the checkpoint %s: %s", final, strerror(errno));
		int n;
		int64_t *steps = ok ? list_steps(c->dir, &n, false) : NULL;
		for (int i = 0; ok && keep > 0 && i < n - keep; i++) {
			char old[4200];
			step_dir(old, sizeof old, c->dir, steps[i], "");
			remove_dir(old);
		}
		free(steps);
	}
	sc_st_pieces_free(c->p, c->n);
	free(c->dir);
	free(c);
	sc_agree_or_exit(rt, ok, msg);
}

struct sc_resume {
	int64_t step;
	char path[4200];             /* the checkpoint's folder */
	json_t *values;
};

sc_resume *sc_resume_open(sc_rt *rt, const char *dir)
{
	char msg[4600] = "";
	int64_t step = -1;
	if (rt->rank == 0) {
		int n;
		int64_t *steps = list_steps(dir, &n, false);
		if (n > 0)
			step = steps[n - 1];
		else {   /* DIR/step-N itself: the folder that holds it was meant */
			const char *base = strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir;
			bool one = strncmp(base, "step-", 5) == 0;
			snprintf(msg, sizeof msg, "shardc: --resume %s: %s%s", dir,
			         n < 0 ? strerror(errno) : "no checkpoint in it (a folder step-N that --checkpoint wrote)",
			         one && n >= 0 ? "; it is one checkpoint's folder: give the folder that holds it, the one "
			         "--checkpoint was given (the newest checkpoint there is resumed)" : "");
		}
		free(steps);
	}
	SC_MPI_CHECK(MPI_Bcast(&step, 1, MPI_INT64_T, 0, MPI_COMM_WORLD));
	sc_agree_or_exit(rt, step >= 0, msg);
	snprintf(msg, sizeof msg, "shardc: --resume %s: its newest checkpoint is at step %lld, and the run ends at step "
	         "%lld (--steps counts every step from the first): nothing is left to run; give --steps %lld or more "
	         "to train on", dir, (long long)step, (long long)rt->steps, (long long)step + 1);
	sc_agree_or_exit(rt, rt->steps <= 0 || step < rt->steps, msg);
	sc_resume *r = calloc(1, sizeof *r);
	if (!r)
		SC_DIE("out of memory");
	r->step = step;
	step_dir(r->path, sizeof r->path, dir, step, "");
	char state[4300];
	json_error_t je;
	snprintf(state, sizeof state, "%s/state.json", r->path);
	json_t *root = json_load_file(state, 0, &je), *s = json_object_get(root, "step");
	snprintf(msg, sizeof msg, "shardc: --resume: %s is not a checkpoint's state (%s)", state,
	         root ? "no step and values as --checkpoint writes them" : je.text);
	r->values = json_incref(json_object_get(root, "values"));
	bool ok = json_is_integer(s) && json_integer_value(s) == step && json_is_object(r->values);
	json_decref(root);
	sc_agree_or_exit(rt, ok, msg);
	return r;
}

int64_t sc_resume_step(const sc_resume *r)
{
	return r->step;
}

const char *sc_resume_file(const sc_resume *r, char *buf, size_t n)
{
	snprintf(buf, n, "%s/model.safetensors", r->path);
	return buf;
}

double sc_resume_value(sc_rt *rt, const sc_resume *r, const char *key)
{
	json_t *v = json_object_get(r->values, key);
	char msg[4600];
	snprintf(msg, sizeof msg, "shardc: --resume: %s/state.json has no number '%s': a program with fp16 loss scaling "
	         "keeps it, so this checkpoint was written by another (another precision or model); resume it with the "
	         "program that wrote it", r->path, key);
	sc_agree_or_exit(rt, json_is_number(v), msg);
	return json_number_value(v);
}

void sc_resume_close(sc_resume *r)
{
	if (!r)
		return;
	json_decref(r->values);
	free(r);
}
