/* outdir.c: writing OUT, the compile's product. Everything (manifest.json,
 * strategy.json, program.c, rank_<r>.c, ranks.c, Makefile, run.sh, and ir/
 * with --dump-ir) is written into a staging folder beside OUT,
 * PARENT/.NAME.shardc-tmp.PID, which then replaces OUT by rename(2). So a reader never sees a mix of two
 * compiles (the last to finish wins whole), a recompile for fewer ranks
 * leaves no rank_7.c, ir/rank_7 or bin/ behind, and a failed write removes
 * the staging folder and leaves the old OUT as it was.
 *
 * OUT is replaced only if it is missing, an empty folder, or a folder with a
 * manifest.json (written by shardc); anything else is refused (exit 2), so a
 * mistyped -o never deletes the user's files. A symbolic link to a folder is
 * followed: the folder it names is replaced. */
#define _GNU_SOURCE   /* renameat2, nftw */
#include "pipeline.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
	const char *shown;   /* OUT as the user wrote it, for messages */
	const char *dir;     /* the staging folder the files go to */
	bool failed;         /* a write failed (reported); write nothing more */
} Out;

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	remove(path);
	return 0;
}

static void remove_tree(const char *path)
{
	nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Write text as OUT/name ("ir/rank_0/..." included). */
static void put(Out *o, const char *name, const char *data, size_t len)
{
	if (o->failed)
		return;
	StrBuf path = {0};
	sb_printf(&path, "%s/%s", o->dir, name);
	if (!write_bytes(path.data, data, len)) {
		fprintf(stderr, "shardc: cannot write %s/%s: %s\n", o->shown, name, strerror(errno));
		o->failed = true;
	}
	sb_free(&path);
}

static void put_sb(Out *o, const char *name, const StrBuf *b)
{
	put(o, name, b->data ? b->data : "", b->len);
}

/* put for malloc'd text, which it frees. */
static void put_owned(Out *o, const char *name, char *text)
{
	put(o, name, text, strlen(text));
	free(text);
}

static void put_dir(Out *o, const char *name)
{
	if (o->failed)
		return;
	StrBuf path = {0};
	sb_printf(&path, "%s/%s", o->dir, name);
	if (mkdir(path.data, 0777) != 0) {
		fprintf(stderr, "shardc: cannot create %s/%s: %s\n", o->shown, name, strerror(errno));
		o->failed = true;
	}
	sb_free(&path);
}

/* Where the runtime is: $SHARDC_HOME, else the first folder above the
 * executable holding runtime/shardc_rt.h (the build tree), or its
 * share/shardc (make install). The generated Makefile links it from there. */
static char *shardc_home(void)
{
	const char *env = getenv("SHARDC_HOME");
	if (env && *env)
		return xstrdup(env);
	char *exe = xcalloc(4096, 1);
	if (readlink("/proc/self/exe", exe, 4095) <= 0)
		exe[0] = 0;
	for (int up = 0; up < 4; up++) {
		char *slash = strrchr(exe, '/');
		if (!slash || slash == exe)
			break;
		*slash = 0;
		StrBuf h = {0};
		sb_printf(&h, "%s/runtime/shardc_rt.h", exe);
		bool found = access(h.data, R_OK) == 0;
		h.len = 0;
		sb_printf(&h, "%s/share/shardc/runtime/shardc_rt.h", exe);
		if (!found && access(h.data, R_OK) == 0) {
			h.len -= strlen("/runtime/shardc_rt.h");
			h.data[h.len] = 0;
			free(exe);
			return h.data;
		}
		sb_free(&h);
		if (found)
			return exe;
	}
	free(exe);
	return xstrdup(".");
}

/* --dump-after: ir/after_<stage>.ir for a one-text stage, one
 * ir/after_<stage>/rank_<r>.ir per rank for a lowered one. */
static void put_stage_dumps(Out *o, const Compilation *c, bool made_ir)
{
	StrBuf name = {0};
	if (!made_ir)
		put_dir(o, "ir");
	for (int s = 0; s < STAGE_COUNT && !o->failed; s++) {
		const StageDump *t = &c->dumps[s];
		const char *stage = stage_word((Stage)s);
		if (t->n == 1 && s <= STAGE_SEARCH) {
			name.len = 0;
			sb_printf(&name, "ir/after_%s.ir", stage);
			put_sb(o, name.data, &t->text[0]);
			continue;
		}
		if (t->n) {
			name.len = 0;
			sb_printf(&name, "ir/after_%s", stage);
			put_dir(o, name.data);
		}
		for (int r = 0; r < t->n && !o->failed; r++) {
			name.len = 0;
			sb_printf(&name, "ir/after_%s/rank_%d.ir", stage, r);
			put_sb(o, name.data, &t->text[r]);
		}
	}
	sb_free(&name);
}

/* Every file of OUT into the staging folder. */
static void put_all(Out *o, const Compilation *c, const char *home, bool dump_ir)
{
	const Module *m = c->m;
	const Lowered *low = c->low;
	const Program *p = c->plan;
	put_owned(o, "manifest.json", manifest_json(low));
	put_owned(o, "strategy.json", strategy_json(low));
	StrBuf b = {0}, name = {0};
	emit_program(&b, p);
	put_sb(o, "program.c", &b);
	for (int64_t r = 0; r < lowered_ranks(low) && !o->failed; r++) {
		name.len = b.len = 0;
		sb_printf(&name, "rank_%lld.c", (long long)r);
		emit_table(&b, p, r);
		put_sb(o, name.data, &b);
	}
	b.len = 0;
	emit_ranks(&b, low);
	put_sb(o, "ranks.c", &b);
	b.len = 0;
	emit_makefile(&b, low, home);
	put_sb(o, "Makefile", &b);
	b.len = 0;
	emit_run_sh(&b, low);
	put_sb(o, "run.sh", &b);
	name.len = 0;
	sb_printf(&name, "%s/run.sh", o->dir);
	if (!o->failed && chmod(name.data, 0755) != 0) {
		fprintf(stderr, "shardc: cannot make %s/run.sh executable: %s\n", o->shown, strerror(errno));
		o->failed = true;
	}
	if (dump_ir) {
		put_dir(o, "ir");
		b.len = 0;
		print_module(&b, m);
		put_sb(o, "ir/00_parsed.ir", &b);
		b.len = 0;
		dump_begin(&b, low);
		put_sb(o, "ir/step_parallel_begin.ir", &b);
		for (int64_t r = 0; r < lowered_ranks(low) && !o->failed; r++) {
			name.len = 0;
			sb_printf(&name, "ir/rank_%lld", (long long)r);
			put_dir(o, name.data);
			sb_puts(&name, "/step_parallel_end.ir");
			b.len = 0;
			dump_end(&b, low, r);
			put_sb(o, name.data, &b);
		}
	}
	if (c->dump_after && !o->failed)
		put_stage_dumps(o, c, dump_ir);
	sb_free(&b);
	sb_free(&name);
}

static int mkdir_p(const char *path)
{
	char *p = xstrdup(path);
	for (char *s = p + 1; *s; s++)
		if (*s == '/') {
			*s = 0;
			if (mkdir(p, 0777) && errno != EEXIST)
				goto fail;
			*s = '/';
		}
	if (mkdir(p, 0777) && errno != EEXIST)
		goto fail;
	free(p);
	return 0;
fail:
	free(p);
	return -1;
}

/* True if dir may be replaced: empty, or shardc's (it has manifest.json). */
static bool ours(const char *dir)
{
	StrBuf marker = {0};
	sb_printf(&marker, "%s/manifest.json", dir);
	struct stat st;
	bool yes = lstat(marker.data, &st) == 0 && S_ISREG(st.st_mode);
	sb_free(&marker);
	DIR *d = yes ? NULL : opendir(dir);
	if (d) {
		yes = true;
		for (struct dirent *e; yes && (e = readdir(d));)
			yes = strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0;
		closedir(d);
	}
	return yes;
}

/* Where OUT goes (malloc'd; symbolic links and "." resolved when it exists),
 * or NULL with the message printed and *status set. */
static char *target_of(const char *outdir, int *status)
{
	char *t = xstrdup(outdir);
	for (size_t n = strlen(t); n > 1 && t[n - 1] == '/'; n--)
		t[n - 1] = 0;
	struct stat st;
	if (stat(t, &st) == 0) {
		if (!S_ISDIR(st.st_mode)) {
			fprintf(stderr, "shardc: %s exists and is not a folder; not replacing it (choose another -o)\n", outdir);
			*status = EXIT_USAGE;
			goto fail;
		}
		if (!ours(t)) {
			fprintf(stderr, "shardc: %s is a folder shardc did not write (it has files and no manifest.json); "
			        "not replacing it (remove it or choose another -o)\n", outdir);
			*status = EXIT_USAGE;
			goto fail;
		}
		char *real = realpath(t, NULL);
		if (!real)
			goto io;
		free(t);
		t = real;
		if (strcmp(t, "/") == 0) {
			fprintf(stderr, "shardc: -o /: not replacing the root folder\n");
			*status = EXIT_USAGE;
			goto fail;
		}
		return t;
	}
	if (errno != ENOENT)
		goto io;
	char *slash = strrchr(t, '/');
	if (slash && slash != t) {
		*slash = 0;
		int bad = mkdir_p(t);
		*slash = '/';
		if (bad)
			goto io;
	}
	return t;
io:
	fprintf(stderr, "shardc: cannot create %s: %s\n", outdir, strerror(errno));
	*status = EXIT_IO;
fail:
	free(t);
	return NULL;
}

/* target's name beside it, prefixed by a dot and ending in tag and our pid. */
static char *beside(const char *target, const char *tag)
{
	const char *slash = strrchr(target, '/');
	StrBuf b = {0};
	if (slash)
		sb_printf(&b, "%.*s/.%s.%s.%ld", (int)(slash - target), target, slash + 1, tag, (long)getpid());
	else
		sb_printf(&b, ".%s.%s.%ld", target, tag, (long)getpid());
	return b.data;
}

/* Put staging in target's place; whatever was there is removed. Atomic
 * where the filesystem can exchange two names (renameat2), else the old
 * folder is renamed aside first, and retried if another compile's lands
 * in between. */
static int swap_in(const char *staging, const char *target)
{
#ifdef RENAME_EXCHANGE
	if (renameat2(AT_FDCWD, staging, AT_FDCWD, target, RENAME_EXCHANGE) == 0) {
		remove_tree(staging);
		return 0;
	}
#endif
	char *aside = beside(target, "shardc-old");
	int r = -1;
	for (int tries = 0; tries < 100; tries++) {
		if (rename(staging, target) == 0) {
			r = 0;
			break;
		}
		if (errno != ENOTEMPTY && errno != EEXIST)
			break;
		if (rename(target, aside) != 0 && errno != ENOENT)
			break;
		if (rename(staging, target) == 0) {
			r = 0;
			break;
		}
		remove_tree(aside);
	}
	int err = errno;
	remove_tree(aside);
	free(aside);
	errno = err;
	return r;
}

int outdir_write(const char *outdir, const Compilation *c, bool dump_ir)
{
	char *home = shardc_home();
	if (strchr(home, '\n')) {
		fprintf(stderr, "shardc: the runtime's folder (SHARDC_HOME) has a newline in its name, "
		        "which a Makefile cannot name\n");
		free(home);
		return EXIT_USAGE;
	}
	/* A file-size limit (ulimit -f) then fails the write with EFBIG, which is
	 * reported, instead of killing shardc with the staging folder left. */
	signal(SIGXFSZ, SIG_IGN);
	int status = 0;
	char *target = target_of(outdir, &status);
	if (!target) {
		free(home);
		return status;
	}
	char *staging = beside(target, "shardc-tmp");
	remove_tree(staging);   /* a stale one of a dead process with our pid */
	if (mkdir(staging, 0777) != 0) {
		fprintf(stderr, "shardc: cannot write %s: cannot create %s: %s\n", outdir, staging, strerror(errno));
		status = EXIT_IO;
	} else {
		Out o = {.shown = outdir, .dir = staging};
		put_all(&o, c, home, dump_ir);
		if (o.failed)
			status = EXIT_IO;
		else if (swap_in(staging, target) != 0) {
			fprintf(stderr, "shardc: cannot replace %s: %s\n", outdir, strerror(errno));
			status = EXIT_IO;
		}
		if (status)
			remove_tree(staging);
	}
	free(staging);
	free(target);
	free(home);
	return status;
}
