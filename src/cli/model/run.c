#include "run.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

/* "digits" */
static int all_digits(const char *s, size_t n)
{
	if (!n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return 1;
}

/* "execN" */
static int exec_tag(const char *s, size_t n)
{
	return n > 4 && !strncmp(s, "exec", 4) && all_digits(s + 4, n - 4);
}

/* Whether `name` is STEM.MID.EXT (EXT may be empty: then STEM.MID) with MID one of PID,
 * PID.execN, execN: the names the agent gives the other processes of the run whose main file
 * is STEM.EXT. */
static int sibling_name(const char *name, const char *stem, const char *ext)
{
	size_t ls = strlen(stem), le = strlen(ext), ln = strlen(name);
	if (ln < ls + le + 2 || strncmp(name, stem, ls) || name[ls] != '.' ||
	    strcmp(name + ln - le, ext))
		return 0;
	const char *mid = name + ls + 1;
	size_t lm = ln - le - ls - 1; /* MID: EXT holds the dot before it */
	const char *dot = memchr(mid, '.', lm);
	if (!dot)
		return all_digits(mid, lm) || exec_tag(mid, lm);
	return all_digits(mid, (size_t)(dot - mid)) &&
	       exec_tag(dot + 1, lm - (size_t)(dot - mid) - 1);
}

static uint64_t meta_u(const struct wp_profile *p, const char *key)
{
	long long v = wp_profile_meta_ll(p, key, 0);
	return v > 0 ? (uint64_t)v : 0;
}

/* The header's word for a known exit status: "exit N" or "signal N". */
static void end_text(struct wp_run_proc *rp)
{
	int st = rp->exit_status;
	if (!rp->exit_known)
		return;
	if (WIFEXITED(st))
		snprintf(rp->end, sizeof(rp->end), "exit %d", WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		snprintf(rp->end, sizeof(rp->end), "signal %d", WTERMSIG(st));
}

/* What the header says of one process, from its META. */
static int describe(const struct wp_profile *p, const char *path, int is_main,
		    struct wp_run_proc *rp)
{
	memset(rp, 0, sizeof(*rp));
	const char *cmd = wp_profile_meta(p, "command");
	const char *slash = strrchr(path, '/');
	rp->file = strdup(slash ? slash + 1 : path);
	rp->path = strdup(path);
	rp->command = strdup(cmd ? cmd : "");
	if (!rp->file || !rp->path || !rp->command) {
		free(rp->file);
		free(rp->path);
		free(rp->command);
		return -1;
	}
	rp->pid = wp_profile_meta_ll(p, "pid", -1);
	rp->ppid = wp_profile_meta_ll(p, "ppid", -1);
	rp->start_unix_ns = meta_u(p, "start_unix_ns");
	rp->wall_ns = meta_u(p, "duration_ns");
	rp->cpu_ns = meta_u(p, "cpu_user_ns") + meta_u(p, "cpu_sys_ns");
	for (size_t i = 0; i < p->nstacks; i++)
		rp->samples += p->stacks[i].count;
	rp->is_main = is_main;
	const char *st = wp_profile_meta(p, "exit_status");
	if (st && *st && !wp_profile_meta(p, "exec")) {
		rp->exit_known = 1;
		rp->exit_status = atoi(st);
	}
	long long sig = wp_profile_meta_ll(p, "died_of_signal", 0);
	if (wp_profile_meta(p, "exec"))
		snprintf(rp->end, sizeof(rp->end), "exec'd");
	else if (sig > 0)
		snprintf(rp->end, sizeof(rp->end), "signal %lld", sig);
	else if (wp_profile_meta(p, "checkpoint"))
		snprintf(rp->end, sizeof(rp->end), "checkpoint");
	else
		snprintf(rp->end, sizeof(rp->end), "ended");
	end_text(rp);
	return 0;
}

static int add(struct wp_run *run, size_t *cap)
{
	if (run->n < *cap)
		return 0;
	size_t c = *cap ? *cap * 2 : 16;
	struct wp_run_proc *np = realloc(run->procs, c * sizeof(*np));
	if (!np)
		return -1;
	run->procs = np;
	*cap = c;
	return 0;
}

static int by_start(const void *a, const void *b)
{
	const struct wp_run_proc *x = a, *y = b;
	if (x->start_unix_ns != y->start_unix_ns)
		return x->start_unix_ns < y->start_unix_ns ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return strcmp(x->file, y->file);
}

/* The siblings in `dir` of the main file STEM.EXT, of run `id` (or, `prefix` set, of any run
 * whose id starts with it). */
static int scan(const char *dir, const char *stem, const char *ext, const char *id, int prefix,
		FILE *warn, struct wp_run *run, size_t *cap)
{
	DIR *d = opendir(dir);
	if (!d)
		return 0; /* the main file was read from there: nothing else to find */
	struct dirent *e;
	int rc = 0;
	while (!rc && (e = readdir(d))) {
		if (!sibling_name(e->d_name, stem, ext))
			continue;
		char path[4096], err[256];
		if (snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= (int)sizeof(path))
			continue;
		struct wp_profile *p;
		if (wp_profile_read(path, &p, err, sizeof(err)) != 0) {
			fprintf(warn, "wallprof: %s: %s; left out of the run's processes\n", path, err);
			run->skipped++;
			continue;
		}
		const char *rid = wp_profile_meta(p, "run");
		if (rid && (prefix ? !strncmp(rid, id, strlen(id)) : !strcmp(rid, id))) {
			if (add(run, cap) || describe(p, path, 0, &run->procs[run->n]))
				rc = -1;
			else
				run->n++;
		}
		wp_profile_free(p);
	}
	closedir(d);
	return rc;
}

/* The files beside main_path of run `id` (a prefix of it with `prefix`) into run. */
static int siblings(const char *main_path, const char *id, int prefix, FILE *warn,
		    struct wp_run *run, size_t *cap)
{
	const char *slash = strrchr(main_path, '/');
	const char *base = slash ? slash + 1 : main_path;
	if (!id || !*id || !*base)
		return 0;
	char *dir = slash ? strndup(main_path, (size_t)(slash - main_path + (slash == main_path)))
			  : strdup(".");
	const char *dot = strrchr(base, '.');
	char *stem = dot && dot != base ? strndup(base, (size_t)(dot - base)) : strdup(base);
	const char *ext = dot && dot != base ? dot : "";
	int rc = dir && stem ? scan(dir, stem, ext, id, prefix, warn, run, cap) : -1;
	free(dir);
	free(stem);
	if (!rc)
		qsort(run->procs, run->n, sizeof(*run->procs), by_start);
	return rc;
}

/* The CPU time of an image of its own: the kernel counts a process's CPU time across exec,
 * so an image's figure holds its pid's earlier images' too. `run` sorted by start. */
static void own_cpu(struct wp_run *run)
{
	for (size_t i = run->n; i-- > 0;)
		for (size_t j = i; j-- > 0;)
			if (run->procs[j].pid == run->procs[i].pid && run->procs[i].pid > 0) {
				uint64_t before = run->procs[j].cpu_ns;
				run->procs[i].cpu_ns = run->procs[i].cpu_ns > before
							       ? run->procs[i].cpu_ns - before : 0;
				break;
			}
}

int wp_run_find(const char *main_path, const struct wp_profile *main, FILE *warn,
		struct wp_run *run)
{
	memset(run, 0, sizeof(*run));
	size_t cap = 0;
	if (add(run, &cap) || describe(main, main_path, 1, &run->procs[0]))
		goto oom;
	run->n = 1;
	if (siblings(main_path, wp_profile_meta(main, "run"), 0, warn, run, &cap))
		goto oom;
	own_cpu(run);
	return 0;
oom:
	fprintf(stderr, "wallprof: out of memory\n");
	wp_run_free(run);
	return -1;
}

int wp_run_find_orphans(const char *main_path, long root_pid, FILE *warn, struct wp_run *run)
{
	memset(run, 0, sizeof(*run));
	size_t cap = 0;
	char id[32];
	snprintf(id, sizeof(id), "%ld-", root_pid);
	if (siblings(main_path, id, 1, warn, run, &cap)) {
		fprintf(stderr, "wallprof: out of memory\n");
		wp_run_free(run);
		return -1;
	}
	return 0;
}

int wp_run_of(const struct wp_profile *const *ps, const char *const *paths, size_t n,
	      size_t skipped, struct wp_run *run)
{
	memset(run, 0, sizeof(*run));
	run->procs = calloc(n ? n : 1, sizeof(*run->procs));
	if (!run->procs)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (describe(ps[i], paths[i], 0, &run->procs[i])) {
			wp_run_free(run);
			return -1;
		}
		run->n++;
	}
	run->skipped = skipped;
	run->merged = 1;
	own_cpu(run);
	return 0;
}

void wp_run_set_exit(struct wp_run *run, long pid, int status)
{
	struct wp_run_proc *last = NULL;
	for (size_t i = 0; i < run->n; i++)
		if (run->procs[i].pid == pid && strcmp(run->procs[i].end, "exec'd"))
			last = &run->procs[i];
	if (!last)
		return;
	last->exit_known = 1;
	last->exit_status = status;
	end_text(last);
}

static const struct wp_run_proc *by_pid(const struct wp_run *run, long pid)
{
	for (size_t i = 0; pid > 0 && i < run->n; i++)
		if (run->procs[i].pid == pid)
			return &run->procs[i];
	return NULL;
}

const struct wp_run_proc *wp_run_root(const struct wp_run *run)
{
	for (size_t i = 0; i < run->n; i++)
		if (!by_pid(run, run->procs[i].ppid))
			return &run->procs[i];
	return run->n ? &run->procs[0] : NULL;
}

int wp_run_depth(const struct wp_run *run, size_t i)
{
	int d = 0;
	for (const struct wp_run_proc *p = by_pid(run, run->procs[i].ppid); p && d < 8;
	     p = by_pid(run, p->ppid))
		d++;
	return d;
}

uint64_t wp_run_pid_wall(const struct wp_run *run, long pid)
{
	uint64_t first = UINT64_MAX, last = 0;
	for (size_t i = 0; i < run->n; i++) {
		const struct wp_run_proc *p = &run->procs[i];
		if (p->pid != pid)
			continue;
		if (p->start_unix_ns < first)
			first = p->start_unix_ns;
		if (p->start_unix_ns + p->wall_ns > last)
			last = p->start_unix_ns + p->wall_ns;
	}
	return last > first ? last - first : 0;
}

void wp_run_free(struct wp_run *run)
{
	for (size_t i = 0; i < run->n; i++) {
		free(run->procs[i].file);
		free(run->procs[i].path);
		free(run->procs[i].command);
	}
	free(run->procs);
	memset(run, 0, sizeof(*run));
}
