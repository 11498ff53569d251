/* SPDX-License-Identifier: MIT */
#include "run.h"

#include "alloc.h"
#include "procinfo.h"

#include <dirent.h>
#include <signal.h>
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

/* The directory part of `path` ("." when none, "/" for "/x"), malloc'd. */
static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? strndup(path, (size_t)(slash - path + (slash == path))) : strdup(".");
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

/* The header's word for how a process ended: a known status ("exit N", "SIGSEGV"), else what
 * its file says. */
static void end_text(struct wp_run_proc *rp)
{
	int st = rp->exit_status;
	const char *abbrev;
	if (rp->exit_known && WIFEXITED(st)) {
		snprintf(rp->end, sizeof(rp->end), "exit %d", WEXITSTATUS(st));
	} else if (rp->exit_known && WIFSIGNALED(st)) {
		abbrev = sigabbrev_np(WTERMSIG(st));
		if (abbrev)
			snprintf(rp->end, sizeof(rp->end), "SIG%s", abbrev);
		else
			snprintf(rp->end, sizeof(rp->end), "signal %d", WTERMSIG(st));
	} else {
		snprintf(rp->end, sizeof(rp->end), "%s",
			 rp->end_kind == WP_END_EXEC      ? "exec'd"
			 : rp->end_kind == WP_END_NO_WORD ? "no word"
							  : "ended");
	}
}

/* What the header says of one process, from its META. */
static int describe(const struct wp_profile *p, const char *path, int is_main,
		    struct wp_run_proc *rp)
{
	memset(rp, 0, sizeof(*rp));
	char buf[512];
	const char *cmd = wp_proc_command(p, buf, sizeof(buf));
	const char *slash = strrchr(path, '/');
	rp->file = strdup(slash ? slash + 1 : path);
	rp->path = strdup(path);
	rp->command = strdup(cmd);
	if (!rp->file || !rp->path || !rp->command) {
		free(rp->file);
		free(rp->path);
		free(rp->command);
		return -1;
	}
	rp->pid = p->info.pid;
	rp->ppid = p->info.ppid;
	rp->start_unix_ns = p->info.start_unix_ns;
	rp->wall_ns = p->info.duration_ns;
	rp->cpu_ns = p->info.cpu_user_ns + p->info.cpu_sys_ns;
	for (size_t i = 0; i < p->nstacks; i++)
		rp->samples += p->stacks[i].count;
	rp->is_main = is_main;
	int code;
	rp->end_kind = wp_profile_end(p, &code);
	if (rp->end_kind == WP_END_EXIT || rp->end_kind == WP_END_SIGNAL) {
		rp->exit_known = 1; /* as a wait status */
		rp->exit_status = rp->end_kind == WP_END_EXIT ? (code & 0xff) << 8 : code & 0x7f;
	}
	end_text(rp);
	return 0;
}

static int add(struct wp_run *run, size_t *cap)
{
	return wp_grow(&run->procs, cap, run->n + 1, sizeof(*run->procs));
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
 * whose id starts with it); with `keep`, each with its profile (read as `what` says). */
static int scan(const char *dir, const char *stem, const char *ext, const char *id, int prefix,
		int keep, unsigned what, FILE *warn, struct wp_run *run, size_t *cap)
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
		/* described: no timeline; kept: what the caller reads */
		if (wp_profile_read_some(path, keep ? what : WP_READ_NO_TIMELINE, &p, err,
					 sizeof(err)) != 0) {
			fprintf(warn, "wallprof: %s: %s; left out of the run's processes\n", path, err);
			run->skipped++;
			continue;
		}
		const char *rid = p->info.run;
		if (rid && (prefix ? !strncmp(rid, id, strlen(id)) : !strcmp(rid, id))) {
			if (add(run, cap) || describe(p, path, 0, &run->procs[run->n])) {
				rc = -1;
			} else {
				run->procs[run->n++].prof = keep ? p : NULL;
				if (keep)
					continue;
			}
		}
		wp_profile_free(p);
	}
	closedir(d);
	return rc;
}

/* The files beside main_path of run `id` (a prefix of it with `prefix`) into run. */
static int siblings(const char *main_path, const char *id, int prefix, int keep,
		    unsigned what, FILE *warn, struct wp_run *run, size_t *cap)
{
	const char *slash = strrchr(main_path, '/');
	const char *base = slash ? slash + 1 : main_path;
	if (!id || !*id || !*base)
		return 0;
	char *dir = dir_of(main_path);
	const char *dot = strrchr(base, '.');
	char *stem = dot && dot != base ? strndup(base, (size_t)(dot - base)) : strdup(base);
	const char *ext = dot && dot != base ? dot : "";
	int rc = dir && stem ? scan(dir, stem, ext, id, prefix, keep, what, warn, run, cap) : -1;
	free(dir);
	free(stem);
	if (!rc)
		qsort(run->procs, run->n, sizeof(*run->procs), by_start);
	return rc;
}

/* ---- the processes that took no sample: the run's NAME.unsampled lists ----
 * A line: "run=ID pid=N ppid=N end=WORD[ N] start_unix_ns=N wall_ns=N cpu_ns=N command=REST"
 * (agent.c, note_unsampled). */

struct line {
	struct wp_run_unsampled u;
	char run[64];
	uint64_t start;
	int keep;
};

struct lines {
	struct line *v;
	size_t n, cap;
	size_t bad;
};

/* After `key` at *p: a number; moves *p past it. */
static int field_u(char **p, const char *key, unsigned long long *out)
{
	size_t k = strlen(key);
	if (strncmp(*p, key, k))
		return -1;
	char *end;
	*out = strtoull(*p + k, &end, 10);
	if (end == *p + k || (*end && *end != ' '))
		return -1;
	*p = *end ? end + 1 : end;
	return 0;
}

static int parse_line(char *s, struct line *l)
{
	memset(l, 0, sizeof(*l));
	unsigned long long pid, ppid, wall, cpu;
	char *sp = strchr(s, ' ');
	if (strncmp(s, "run=", 4) || !sp || (size_t)(sp - s - 4) >= sizeof(l->run))
		return -1;
	memcpy(l->run, s + 4, (size_t)(sp - s - 4));
	char *p = sp + 1;
	if (field_u(&p, "pid=", &pid) || field_u(&p, "ppid=", &ppid) || strncmp(p, "end=", 4))
		return -1;
	char *st = strstr(p, " start_unix_ns=");
	if (!st || (size_t)(st - p - 4) >= sizeof(l->u.end))
		return -1;
	memcpy(l->u.end, p + 4, (size_t)(st - p - 4));
	p = st + 1;
	if (field_u(&p, "start_unix_ns=", (unsigned long long *)&l->start) ||
	    field_u(&p, "wall_ns=", &wall) || field_u(&p, "cpu_ns=", &cpu) ||
	    strncmp(p, "command=", 8))
		return -1;
	l->u.pid = (long)pid;
	l->u.ppid = (long)ppid;
	l->u.wall_ns = wall;
	l->u.cpu_ns = cpu;
	l->u.command = p + 8; /* pointed into the line; copied when kept */
	return 0;
}

/* Appends the lines of the list at `path` (none when it does not exist). */
static int read_list(const char *path, struct lines *ls)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	char buf[2048];
	int rc = 0;
	while (!rc && fgets(buf, sizeof(buf), f)) {
		size_t len = strlen(buf);
		if (len && buf[len - 1] == '\n')
			buf[--len] = 0;
		else if (!feof(f)) { /* too long: not ours; skip the rest of it */
			int c;
			while ((c = fgetc(f)) != EOF && c != '\n')
				;
			ls->bad++;
			continue;
		}
		struct line l;
		if (!len)
			continue;
		if (parse_line(buf, &l)) {
			ls->bad++;
			continue;
		}
		if (wp_grow(&ls->v, &ls->cap, ls->n + 1, sizeof(*ls->v))) {
			rc = -1;
			break;
		}
		if (!(l.u.command = strdup(l.u.command)))
			rc = -1;
		else
			ls->v[ls->n++] = l;
	}
	fclose(f);
	return rc;
}

/* Every *.unsampled list in `dir`. */
static int read_lists_in(const char *dir, struct lines *ls)
{
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	struct dirent *e;
	int rc = 0;
	while (!rc && (e = readdir(d))) {
		size_t l = strlen(e->d_name);
		char path[4096];
		if (l <= 10 || strcmp(e->d_name + l - 10, ".unsampled") ||
		    snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= (int)sizeof(path))
			continue;
		rc = read_list(path, ls);
	}
	closedir(d);
	return rc;
}

static int by_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;
	return x < y ? -1 : x > y;
}

static int has_pid(const long *pids, size_t n, long pid)
{
	return bsearch(&pid, pids, n, sizeof(*pids), by_long) != NULL;
}

/* The kept lines into run->unsampled: one per pid, none of a pid that has a profile; of a
 * pid's lines, its last end other than an exec (its last image's), else its last exec. */
static int take_kept(struct wp_run *run, struct lines *ls)
{
	long *pids = malloc((run->n + 1) * sizeof(*pids));
	if (!pids)
		return -1;
	for (size_t i = 0; i < run->n; i++)
		pids[i] = run->procs[i].pid;
	qsort(pids, run->n, sizeof(*pids), by_long);
	size_t cap = 0;
	int rc = 0;
	for (size_t i = 0; !rc && i < ls->n; i++) {
		struct line *l = &ls->v[i];
		if (!l->keep || has_pid(pids, run->n, l->u.pid))
			continue;
		size_t j = 0;
		while (j < run->nunsampled && run->unsampled[j].pid != l->u.pid)
			j++;
		if (j < run->nunsampled) { /* another image of it */
			struct wp_run_unsampled *u = &run->unsampled[j];
			if (strcmp(l->u.end, "exec") || !strcmp(u->end, "exec")) {
				free(u->command);
				*u = l->u;
				l->u.command = NULL;
			}
			continue;
		}
		if (wp_grow(&run->unsampled, &cap, run->nunsampled + 1, sizeof(*run->unsampled))) {
			rc = -1;
			break;
		}
		run->unsampled[run->nunsampled++] = l->u;
		l->u.command = NULL;
	}
	free(pids);
	run->unsampled_bad += ls->bad;
	return rc;
}

static void free_lines(struct lines *ls)
{
	for (size_t i = 0; i < ls->n; i++)
		free(ls->v[i].u.command);
	free(ls->v);
}

/* The unsampled processes of run `id` (a prefix of it with `prefix`), listed in STEM.unsampled
 * beside the main file STEM.EXT. */
static int unsampled_of_run(const char *main_path, const char *id, int prefix,
			    struct wp_run *run)
{
	if (!id || !*id)
		return 0;
	const char *slash = strrchr(main_path, '/');
	const char *base = slash ? slash + 1 : main_path;
	const char *dot = strrchr(base, '.');
	size_t stem = dot && dot != base ? (size_t)(dot - main_path) : strlen(main_path);
	char path[4096];
	if (snprintf(path, sizeof(path), "%.*s.unsampled", (int)stem, main_path) >= (int)sizeof(path))
		return 0;
	struct lines ls = { 0 };
	int rc = read_list(path, &ls);
	for (size_t i = 0; i < ls.n; i++)
		ls.v[i].keep = prefix ? !strncmp(ls.v[i].run, id, strlen(id)) : !strcmp(ls.v[i].run, id);
	if (!rc)
		rc = take_kept(run, &ls);
	free_lines(&ls);
	return rc;
}

/* Of several files (wp_run_of): the lists in their directories; a line is kept when its run
 * is one of theirs, or its parent is one of their processes or of the lines kept (under bare
 * LD_PRELOAD an exec'd program starts a run of its own), and it started no earlier than the
 * first of them. */
static int unsampled_of_files(const struct wp_profile *const *ps, const char *const *paths,
			      size_t n, struct wp_run *run)
{
	struct lines ls = { 0 };
	int rc = 0;
	uint64_t first = UINT64_MAX;
	for (size_t i = 0; i < run->n; i++)
		if (run->procs[i].start_unix_ns && run->procs[i].start_unix_ns < first)
			first = run->procs[i].start_unix_ns;
	char **dirs = calloc(n + 1, sizeof(*dirs));
	size_t nd = 0;
	if (!dirs)
		rc = -1;
	for (size_t i = 0; !rc && i < n; i++) {
		char *d = dir_of(paths[i]);
		size_t j = 0;
		while (d && j < nd && strcmp(dirs[j], d))
			j++;
		if (!d)
			rc = -1;
		else if (j < nd)
			free(d); /* each directory once */
		else
			rc = read_lists_in(dirs[nd++] = d, &ls);
	}
	for (size_t j = 0; j < nd; j++)
		free(dirs[j]);
	free(dirs);
	long *pids = malloc((run->n + ls.n + 1) * sizeof(*pids));
	size_t np = 0;
	if (!pids)
		rc = -1;
	for (size_t i = 0; !rc && i < run->n; i++)
		pids[np++] = run->procs[i].pid;
	for (int changed = 1; !rc && changed;) {
		changed = 0;
		qsort(pids, np, sizeof(*pids), by_long);
		size_t known = np;
		for (size_t i = 0; i < ls.n; i++) {
			struct line *l = &ls.v[i];
			if (l->keep)
				continue;
			int mine = 0;
			for (size_t k = 0; k < n && !mine; k++) {
				const char *rid = ps[k]->info.run;
				mine = rid && !strcmp(rid, l->run);
			}
			if (!mine && (first == UINT64_MAX || l->start < first ||
				      !has_pid(pids, known, l->u.ppid)))
				continue;
			l->keep = 1;
			pids[np++] = l->u.pid;
			changed = 1;
		}
	}
	if (!rc)
		rc = take_kept(run, &ls);
	free(pids);
	free_lines(&ls);
	return rc;
}

/* The run's processes as proctree.h sees them (run->ids), and each image's CPU time made its
 * own (the kernel counts a process's across exec: an image's figure holds its pid's earlier
 * images' too). Returns 0, -1 when out of memory. */
static int index_procs(struct wp_run *run)
{
	free(run->ids);
	if (!(run->ids = malloc((run->n ? run->n : 1) * sizeof(*run->ids))))
		return -1;
	for (size_t i = 0; i < run->n; i++) {
		const struct wp_run_proc *p = &run->procs[i];
		run->ids[i] = (struct wp_proc_id){ p->pid, p->ppid, p->start_unix_ns, p->cpu_ns };
	}
	for (size_t i = 0; i < run->n; i++)
		run->procs[i].cpu_ns = wp_procs_own_cpu(run->ids, run->n, i);
	return 0;
}

int wp_run_find(const char *main_path, const struct wp_profile *main, FILE *warn,
		struct wp_run *run)
{
	memset(run, 0, sizeof(*run));
	size_t cap = 0;
	if (add(run, &cap) || describe(main, main_path, 1, &run->procs[0]))
		goto oom;
	run->n = 1;
	if (siblings(main_path, main->info.run, 0, 0, 0, warn, run, &cap) ||
	    unsampled_of_run(main_path, main->info.run, 0, run) ||
	    index_procs(run))
		goto oom;
	return 0;
oom:
	fprintf(stderr, "wallprof: out of memory\n");
	wp_run_free(run);
	return -1;
}

int wp_run_siblings(const char *main_path, const struct wp_profile *main, unsigned what,
		    FILE *warn, struct wp_run *run)
{
	memset(run, 0, sizeof(*run));
	size_t cap = 0;
	if (add(run, &cap) || describe(main, main_path, 1, &run->procs[0]))
		goto oom;
	run->n = 1;
	if (siblings(main_path, main->info.run, 0, 1, what, warn, run, &cap))
		goto oom;
	return 0;
oom:
	fprintf(stderr, "wallprof: out of memory\n");
	for (size_t i = 0; i < run->n; i++)
		if (run->procs[i].prof)
			wp_profile_free(run->procs[i].prof);
	wp_run_free(run);
	return -1;
}

int wp_run_find_orphans(const char *main_path, long root_pid, FILE *warn, struct wp_run *run)
{
	memset(run, 0, sizeof(*run));
	size_t cap = 0;
	char id[32];
	snprintf(id, sizeof(id), "%ld-", root_pid);
	if (siblings(main_path, id, 1, 0, 0, warn, run, &cap) || unsampled_of_run(main_path, id, 1, run) ||
	    index_procs(run)) {
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
	if (index_procs(run) || unsampled_of_files(ps, paths, n, run)) {
		wp_run_free(run);
		return -1;
	}
	return 0;
}

void wp_run_set_exit(struct wp_run *run, long pid, int status)
{
	struct wp_run_proc *last = NULL;
	for (size_t i = 0; i < run->n; i++)
		if (run->procs[i].pid == pid && run->procs[i].end_kind != WP_END_EXEC)
			last = &run->procs[i];
	if (!last)
		return;
	last->exit_known = 1;
	last->exit_status = status;
	end_text(last);
}

const struct wp_run_proc *wp_run_root(const struct wp_run *run)
{
	for (size_t i = 0; i < run->n; i++)
		if (wp_procs_parent(run->ids, run->n, i) < 0)
			return &run->procs[i];
	return run->n ? &run->procs[0] : NULL;
}

int wp_run_depth(const struct wp_run *run, size_t i)
{
	int d = 0;
	for (long p = wp_procs_parent(run->ids, run->n, i); p >= 0 && d < 8;
	     p = wp_procs_parent(run->ids, run->n, (size_t)p))
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
		if (run->keeps_profs)
			wp_profile_free(run->procs[i].prof);
		free(run->procs[i].file);
		free(run->procs[i].path);
		free(run->procs[i].command);
	}
	free(run->procs);
	free(run->ids);
	for (size_t i = 0; i < run->nunsampled; i++)
		free(run->unsampled[i].command);
	free(run->unsampled);
	memset(run, 0, sizeof(*run));
}
