/* SPDX-License-Identifier: MIT */
/* Loading a profile, building its one model (symbolized and filtered, model/resolve.h) and
 * its figures (model/summary.h), and handing both to the report the user asked for; where
 * the report goes; the report at the end of a recorded run. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "alloc.h"
#include "cli.h"
#include "deadlock_model.h"
#include "procinfo.h"

struct wp_filter wp_opts_filter(const struct wp_opts *o)
{
	/* wait leaves: the text report's default; folded keeps its --waits form */
	int leaves = o->wait_leaves >= 0 ? o->wait_leaves : o->format == WP_FMT_TEXT;
	return (struct wp_filter){ .thread = o->thread, .process = o->process,
				   .descendants = o->process_tree, .wait_leaves = leaves };
}

typedef int report_fn(const struct wp_opts *, const struct wp_resolved *,
		      const struct wp_summary *, FILE *);

static report_fn *const reports[] = {
	[WP_FMT_TEXT] = wp_report_text,
	[WP_FMT_FOLDED] = wp_report_folded,
	[WP_FMT_SVG] = wp_report_svg,
	[WP_FMT_CSV] = wp_report_csv,
	[WP_FMT_PPROF] = wp_report_pprof,
	[WP_FMT_SPEEDSCOPE] = wp_report_speedscope,
};

/* The agent's warnings, for a format that has no place for them (the text report shows them
 * as [AGENT] lines): on standard error, from the profiles, as the text report has them. */
static void agent_said(const struct wp_resolved *r)
{
	struct wp_agent_msg *m;
	uint64_t dropped;
	size_t n = wp_agent_messages(r->procs, r->nprocs, &m, &dropped);
	for (size_t i = 0; i < n; i++)
		if (r->nprocs > 1)
			fprintf(stderr, "wallprof: the agent said (pid %ld): %s\n",
				wp_resolved_pid(r, (uint32_t)m[i].proc), m[i].text);
		else
			fprintf(stderr, "wallprof: the agent said: %s\n", m[i].text);
	if (dropped)
		fprintf(stderr, "wallprof: and %llu more warnings of the agent (it keeps 16 a "
				"process)\n", (unsigned long long)dropped);
	free(m);
}

/* A format other than text says each deadlock on the command's stderr too, as it says the
 * agent's warnings (folded and csv have no room for it; the others carry it as well). */
static void deadlocks_said(const struct wp_resolved *r)
{
	char line[4096];
	for (size_t i = 0; i < r->ndeadlocks; i++) {
		wp_deadlock_line(&r->deadlocks[i], line, sizeof(line));
		fprintf(stderr, "wallprof: %s\n", line);
	}
}

int wp_report(const struct wp_opts *o, const struct wp_resolved *r, const struct wp_run *run,
	      FILE *out)
{
	if (r->filter.process && !r->nthreads) {
		fprintf(stderr, "wallprof: no process numbered or named '%s' among these profiles\n",
			r->filter.process);
		return 1;
	}
	if (r->filter.thread && !r->nthreads) {
		fprintf(stderr, "wallprof: no thread named or numbered '%s' in this profile; "
				"`--per-thread` lists them\n", r->filter.thread);
		return 1;
	}
	struct wp_summary s;
	wp_summarize(r->p, r, &s);
	s.run = run && (run->n > 1 || run->skipped || run->nunsampled) ? run : NULL;
	int rc = -1;
	if (o->format != WP_FMT_TEXT) {
		agent_said(r);
		deadlocks_said(r);
	}
	if ((size_t)o->format < sizeof(reports) / sizeof(reports[0]) && reports[o->format])
		rc = reports[o->format](o, r, &s, out);
	if (fflush(out) != 0 || rc != 0) {
		fprintf(stderr, "wallprof: could not write the report: %s\n",
			ferror(out) ? strerror(errno) : "error");
		return 1;
	}
	return 0;
}

/* The root's exit status, which the command saw (waitpid), onto its row of the run. */
static void root_exit(const struct wp_opts *o, struct wp_run *run)
{
	const struct wp_run_proc *root = wp_run_root(run);
	long pid = o->root_pid ? o->root_pid : root ? root->pid : -1;
	if (o->have_exit_status && pid > 0)
		wp_run_set_exit(run, pid, o->exit_status);
}

/* The report of profile p, read from `path`, alone. */
static int report_one(const struct wp_opts *o, const char *path, const struct wp_profile *p,
		      FILE *out)
{
	/* the other processes of its run, for the header (their samples are in their files) */
	struct wp_run run;
	if (wp_run_find(path, p, stderr, &run) != 0)
		return 1;
	root_exit(o, &run);
	struct wp_filter f = wp_opts_filter(o);
	struct wp_resolved *r = wp_resolve(p, &f);
	if (!r) {
		wp_run_free(&run);
		return 1;
	}
	int rc = wp_report(o, r, &run, out);
	wp_resolved_free(r);
	wp_run_free(&run);
	return rc;
}

/* What a report reads of a profile: the timelines only for speedscope's time axis. */
static unsigned reads(const struct wp_opts *o)
{
	return o->format == WP_FMT_SPEEDSCOPE ? WP_READ_ALL : WP_READ_NO_TIMELINE;
}

int wp_report_file(const struct wp_opts *o, const char *path, FILE *out)
{
	char err[256];
	struct wp_profile *p;
	if (wp_profile_read_some(path, reads(o), &p, err, sizeof(err)) != 0) {
		fprintf(stderr, "wallprof: %s: %s\n", path, err);
		return 1;
	}
	int rc = report_one(o, path, p, out);
	wp_profile_free(p);
	return rc;
}

/* ---- several files: one model over their processes ---- */

/* The files to read; a file read already (finding its run) comes with its profile, so that
 * each file is read once. */
struct files {
	char **paths;
	struct wp_profile **read; /* per path: its profile when read already (owned), or NULL */
	size_t n, cap;
};

static int add_read(struct files *f, const char *path, struct wp_profile *p)
{
	if (f->n == f->cap) {
		size_t c = f->cap; /* both arrays grow together */
		if (wp_grow(&f->paths, &c, f->n + 1, sizeof(*f->paths)) ||
		    wp_grow(&f->read, &f->cap, f->n + 1, sizeof(*f->read)))
			return -1;
	}
	f->read[f->n] = p;
	return (f->paths[f->n] = strdup(path)) ? (int)(f->n++, 0) : -1;
}

static int add_path(struct files *f, const char *path)
{
	return add_read(f, path, NULL);
}

static void files_free(struct files *f)
{
	for (size_t i = 0; i < f->n; i++) {
		free(f->paths[i]);
		if (f->read[i])
			wp_profile_free(f->read[i]);
	}
	free(f->paths);
	free(f->read);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every *.prof of directory `dir`, by name. */
static int add_dir(struct files *f, const char *dir)
{
	DIR *d = opendir(dir);
	if (!d) {
		fprintf(stderr, "wallprof: %s: %s\n", dir, strerror(errno));
		return -1;
	}
	size_t first = f->n;
	struct dirent *e;
	int rc = 0;
	while (!rc && (e = readdir(d))) {
		size_t l = strlen(e->d_name);
		char path[PATH_MAX];
		if (l < 6 || strcmp(e->d_name + l - 5, ".prof") ||
		    snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= (int)sizeof(path))
			continue;
		rc = add_path(f, path);
	}
	closedir(d);
	if (f->n > first)
		qsort(f->paths + first, f->n - first, sizeof(*f->paths), by_name);
	return rc;
}

/* A loaded profile and where from. */
struct loaded {
	struct wp_profile *p;
	const char *path;
	dev_t dev;
	ino_t ino;
};

static int by_start(const void *a, const void *b)
{
	const struct loaded *x = a, *y = b;
	uint64_t sx = x->p->info.start_unix_ns, sy = y->p->info.start_unix_ns;
	if (sx != sy)
		return sx < sy ? -1 : 1;
	long long px = x->p->info.pid, py = y->p->info.pid;
	if (px != py)
		return px < py ? -1 : 1;
	return strcmp(x->path, y->path);
}

/* What a report is of: files and directories as named (--report A B..., a run's orphans), or
 * one file and the other files of its run (single_file: that file alone). */
struct inputs {
	const char *const *paths;
	size_t n;
	int single_file;
};

/* Whether the inputs are one file alone (not a directory), whose run is then reported. */
static int one_file(const struct inputs *in)
{
	struct stat st;
	return in->n == 1 && !(stat(in->paths[0], &st) == 0 && S_ISDIR(st.st_mode));
}

/* The files the inputs name: each FILE, each DIR's *.prof, or for one file its run (the
 * files of the same run beside it, model/run.h), each read as `what` says. Returns 0 or -1
 * (said). */
static int gather(const struct inputs *in, unsigned what, struct files *f, size_t *skipped)
{
	const char *one = in->paths[0];
	struct stat st;
	if (one_file(in)) {
		char err[256];
		struct wp_profile *p;
		if (wp_profile_read_some(one, what, &p, err, sizeof(err)) != 0) {
			fprintf(stderr, "wallprof: %s: %s\n", one, err);
			return -1;
		}
		struct wp_run run; /* the profiles of the run, each read once: kept for load_all */
		if (wp_run_siblings(one, p, what, stderr, &run)) {
			wp_profile_free(p);
			return -1;
		}
		*skipped += run.skipped;
		int rc = 0;
		for (size_t i = 0; i < run.n; i++) {
			struct wp_profile *rp = run.procs[i].is_main ? p : run.procs[i].prof;
			if (!rc && !(rc = add_read(f, run.procs[i].path, rp)))
				continue;
			wp_profile_free(rp); /* not handed over */
		}
		wp_run_free(&run);
		return rc;
	}
	for (size_t i = 0; i < in->n; i++) {
		const char *path = in->paths[i];
		int rc = stat(path, &st) == 0 && S_ISDIR(st.st_mode) ? add_dir(f, path)
								     : add_path(f, path);
		if (rc)
			return -1;
	}
	return 0;
}

/* Reads every file; one that cannot be read gets a line and is left out, as is a file given
 * twice (its samples would count twice). Returns the number loaded. */
static size_t load_all(const struct files *f, unsigned what, struct loaded *l, size_t *skipped)
{
	size_t n = 0;
	for (size_t i = 0; i < f->n; i++) {
		char err[256];
		struct stat st;
		if (stat(f->paths[i], &st) != 0) {
			fprintf(stderr, "wallprof: %s: %s; left out\n", f->paths[i], strerror(errno));
			++*skipped;
			continue;
		}
		size_t j = 0;
		while (j < n && (l[j].dev != st.st_dev || l[j].ino != st.st_ino))
			j++;
		if (j < n)
			continue; /* the same file again */
		if (f->read[i]) { /* read when its run was found */
			l[n].p = f->read[i];
			f->read[i] = NULL;
		} else if (wp_profile_read_some(f->paths[i], what, &l[n].p, err, sizeof(err)) != 0) {
			fprintf(stderr, "wallprof: %s: %s; left out\n", f->paths[i], err);
			++*skipped;
			continue;
		}
		l[n].path = f->paths[i];
		l[n].dev = st.st_dev;
		l[n].ino = st.st_ino;
		n++;
	}
	return n;
}

static int report_loaded(const struct wp_opts *o, struct loaded *l, size_t n, size_t skipped,
			 FILE *out)
{
	qsort(l, n, sizeof(*l), by_start);
	const struct wp_profile **ps = wp_xcalloc(n, sizeof(*ps));
	const char **paths = wp_xcalloc(n, sizeof(*paths));
	int rc = 1;
	struct wp_run run = { 0 };
	for (size_t i = 0; i < n; i++) {
		ps[i] = l[i].p;
		paths[i] = l[i].path;
	}
	if (wp_run_of(ps, paths, n, skipped, &run) != 0) {
		fprintf(stderr, "wallprof: out of memory\n");
		goto out;
	}
	root_exit(o, &run);
	struct wp_filter flt = wp_opts_filter(o);
	struct wp_resolved *r = wp_resolve_many(ps, n, &flt);
	if (r) {
		rc = wp_report(o, r, &run, out);
		wp_resolved_free(r);
	}
out:
	wp_run_free(&run);
	free(ps);
	free(paths);
	return rc;
}

/* The report of the inputs with the options' format and filter. */
static int report_inputs(const struct wp_opts *o, const struct inputs *in, FILE *out)
{
	int one = one_file(in);
	if (one && in->single_file)
		return wp_report_file(o, in->paths[0], out); /* that file alone */
	struct files f = { 0 };
	size_t skipped = 0, n = 0;
	struct loaded *l = NULL;
	int rc = 1;
	if (gather(in, reads(o), &f, &skipped) == 0) {
		l = wp_xcalloc(f.n, sizeof(*l));
		if (!(n = load_all(&f, reads(o), l, &skipped)))
			fprintf(stderr, "wallprof: no profile could be read\n");
		else if (n == 1 && !skipped && one)
			rc = report_one(o, l[0].path, l[0].p, out); /* a run of one: the usual report */
		else
			rc = report_loaded(o, l, n, skipped, out);
	}
	for (size_t i = 0; i < n; i++)
		wp_profile_free(l[i].p);
	free(l);
	files_free(&f);
	return rc;
}

int wp_report_files(const struct wp_opts *o, FILE *out)
{
	const char **paths = wp_xmalloc(((size_t)o->nreport_more + 1) * sizeof(*paths));
	paths[0] = o->report_file;
	for (int i = 0; i < o->nreport_more; i++)
		paths[i + 1] = o->report_more[i];
	struct inputs in = { paths, (size_t)o->nreport_more + 1, o->single_file };
	int rc = report_inputs(o, &in, out);
	free(paths);
	return rc;
}

int wp_run_load(const char *path, int single_file, struct wp_run *run)
{
	memset(run, 0, sizeof(*run));
	struct inputs in = { &path, 1, single_file };
	struct files f = { 0 };
	struct loaded *l = NULL;
	struct wp_profile **ps = NULL;
	const char **paths = NULL;
	size_t skipped = 0, n = 0;
	int rc = -1;
	if (single_file ? add_path(&f, path) : gather(&in, WP_READ_NO_TIMELINE, &f, &skipped))
		goto out;
	l = wp_xcalloc(f.n ? f.n : 1, sizeof(*l));
	n = load_all(&f, WP_READ_NO_TIMELINE, l, &skipped);
	if (!n) {
		fprintf(stderr, "wallprof: %s: no profile could be read\n", path);
		goto out;
	}
	qsort(l, n, sizeof(*l), by_start);
	ps = wp_xcalloc(n, sizeof(*ps));
	paths = wp_xcalloc(n, sizeof(*paths));
	for (size_t i = 0; i < n; i++) {
		ps[i] = l[i].p;
		paths[i] = l[i].path;
	}
	if (wp_run_of((const struct wp_profile *const *)ps, paths, n, skipped, run) != 0) {
		fprintf(stderr, "wallprof: out of memory\n");
		goto out;
	}
	for (size_t i = 0; i < n; i++) { /* the run keeps them: wp_run_free frees them */
		run->procs[i].prof = l[i].p;
		l[i].p = NULL;
	}
	run->keeps_profs = 1;
	rc = 0;
out:
	for (size_t i = 0; l && i < f.n; i++)
		if (l[i].p)
			wp_profile_free(l[i].p);
	free(l);
	free(ps);
	free(paths);
	files_free(&f);
	return rc;
}

FILE *wp_open_report(const struct wp_opts *o)
{
	if (!o->report_out)
		return stdout;
	FILE *f = fopen(o->report_out, "w");
	if (!f)
		fprintf(stderr, "wallprof: cannot write %s: %s\n", o->report_out, strerror(errno));
	return f;
}

int wp_close_report(const struct wp_opts *o, FILE *f, int rc)
{
	if (f != stdout && fclose(f) != 0 && !rc) {
		fprintf(stderr, "wallprof: cannot write %s: %s\n", o->report_out, strerror(errno));
		return 1;
	}
	return rc;
}

/* Why a run left no profile, as far as its exit status tells. */
static void say_no_profile(const struct wp_opts *o, const char *path)
{
	int st = o->exit_status;
	if (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)
		fprintf(stderr, "wallprof: the program was killed by SIGKILL before its first "
				"checkpoint, so no profile was written (WALLPROF_CHECKPOINT sets the "
				"interval, 10 s by default)\n");
	else if (WIFEXITED(st) && WEXITSTATUS(st) == 127)
		fprintf(stderr, "wallprof: no profile: the command could not be run\n");
	else
		fprintf(stderr, "wallprof: the program left no profile at %s (it may have cleared "
				"LD_PRELOAD from its environment, or called _exit before the agent's "
				"first checkpoint)\n", path);
}

/* The main file is missing but the tree's other processes left theirs: report those. */
static void report_orphans(const struct wp_opts *o, const char *path)
{
	struct wp_run run;
	if (!o->root_pid || wp_run_find_orphans(path, o->root_pid, stderr, &run) != 0)
		return;
	const char **paths = run.n ? calloc(run.n, sizeof(*paths)) : NULL;
	if (paths) {
		FILE *out = wp_open_report(o);
		if (out) {
			fprintf(stderr, "wallprof: the other %zu profile%s of the run follow%s\n",
				run.n, run.n == 1 ? "" : "s", run.n == 1 ? "s" : "");
			for (size_t i = 0; i < run.n; i++)
				paths[i] = run.procs[i].path;
			/* the exit status the command saw is the root's, and the root is not in
			 * it: these options, without it */
			struct wp_opts some = *o;
			some.have_exit_status = 0;
			struct inputs in = { paths, run.n, o->single_file };
			wp_close_report(o, out, report_inputs(&some, &in, out));
		}
	}
	free(paths);
	wp_run_free(&run);
}

int wp_report_after_run(const struct wp_opts *o, const char *path)
{
	if (access(path, R_OK) != 0) {
		say_no_profile(o, path);
		wp_record_print_messages(stderr);
		report_orphans(o, path);
	} else if (o->no_report) {
		/* record only: what the agent said goes to stderr as a report would carry it */
		wp_record_print_messages(stderr);
		if (!o->quiet)
			fprintf(stderr, "wallprof: profile saved to %s (wallprof --report %s)\n",
				path, path);
	} else {
		FILE *out = wp_open_report(o);
		if (out) {
			/* The whole tree the command started (every file of its run). A report
			 * that could not be written is said; the exit status stays the program's,
			 * as the shell would see it without wallprof. */
			struct inputs in = { &path, 1, 0 };
			wp_close_report(o, out, report_inputs(o, &in, out));
			if (!o->quiet)
				fprintf(stderr, "wallprof: profile saved to %s (wallprof --report %s)\n",
					path, path);
		}
	}
	return wp_exit_like(o->exit_status);
}
