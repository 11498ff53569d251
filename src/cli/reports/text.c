/* The text report: what ran and how well it was sampled, a flat profile with confidence
 * intervals and file:line, a call graph of the hottest functions, and one section per thread.
 * Counts are the model's (filtered by --thread when it was built), figures the summary's
 * (model/summary.h). Lines stay within 100 columns. */
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <uthash.h>

#include "cli.h"
#include "textfmt.h"

#define WIDTH 100       /* no line of a table is longer */
#define GRAPH_FUNCS 10  /* functions in the call graph */
#define GRAPH_EDGES 8   /* callers / callees listed per function */
#define THREAD_FUNCS 5  /* functions listed per thread */
#define MAX_THREADS 20  /* thread sections without --thread */
#define MAX_PROCS 20    /* process sections without --process */
#define FEW_SAMPLES 100 /* below this, warn that the shares are rough */

static const char rule[] =
	"================================================================================";
static const char dashes[] =
	"----------------------------------------------------------------------------------------";

struct text {
	const struct wp_opts *o;
	const struct wp_profile *p;
	const struct wp_resolved *r; /* the filtered model: every count below is of its samples */
	const struct wp_summary *s;  /* the figures shown */
	FILE *out;
	int wall;
	uint64_t total; /* samples kept by the filter */
};

/* The pid of each process of the model being reported (META lookups, once: the sections of
 * a run of many processes ask for them per stack). Set and cleared by wp_report_text. */
static const struct wp_resolved *pids_of;
static long *pids;

static long pid_of(const struct wp_resolved *r, uint32_t proc)
{
	return r == pids_of && pids && proc < r->nprocs ? pids[proc] : wp_resolved_pid(r, proc);
}

/* ---------------------------------------------------------------------------------------- */
/* Formatting */


/* Drops what is inside the last balanced open..close pair of `s` (in place), keeping the
 * brackets: "f(int, char) const" -> "f() const". Returns 1 if it removed anything. */
static int drop_last(char *s, char open, char close)
{
	char *c = strrchr(s, close);
	int depth = 0;
	if (!c)
		return 0;
	for (char *q = c; q >= s; q--) {
		if (*q == close)
			depth++;
		else if (*q == open && --depth == 0) {
			if (c - q <= 1)
				return 0;
			memmove(q + 1, c, strlen(c) + 1);
			return 1;
		}
	}
	return 0;
}

static const char *fit_head(const char *s, int w, char *buf, size_t cap);

/* Fits a function name into `w` columns, shortening C++ names the way a reader would: the
 * parameter list goes first, then template arguments ("Worker<>"), then leading namespaces
 * ("...::Worker<>::run()"); an identifier still too long keeps its start ("run_th...").
 * A report's own frame ("[wait ...]") keeps its start. */
static const char *fit_tail(const char *s, int w, char *buf, size_t cap)
{
	size_t n = strlen(s);
	if ((int)n <= w || w < 8)
		return s;
	if (wp_name_is_pseudo(s))
		return fit_head(s, w, buf, cap);
	/* "module+0xOFF" (no symbol): the offset is what tells rows apart, keep the end */
	const char *off = strstr(s, "+0x");
	if (off && !strchr(s, '(')) {
		snprintf(buf, cap, "...%s", s + n - (size_t)(w - 3));
		return buf;
	}
	snprintf(buf, cap, "%s", s);
	drop_last(buf, '(', ')');
	for (int i = 0; i < 16 && (int)strlen(buf) > w; i++)
		if (!drop_last(buf, '<', '>'))
			break;
	/* leading qualifiers: cut at a top-level "::" until it fits */
	while ((int)strlen(buf) > w) {
		/* after a first cut buf is "...::rest": look for the next "::" in rest */
		char *start = strncmp(buf, "...::", 5) ? buf : buf + 5, *cut = NULL;
		int depth = 0;
		for (char *q = start; *q && !cut; q++) {
			if (*q == '<' || *q == '(')
				depth++;
			else if ((*q == '>' || *q == ')') && depth > 0)
				depth--;
			else if (!depth && q > start && q[0] == ':' && q[1] == ':')
				cut = q;
		}
		if (!cut)
			break;
		memmove(buf + 3, cut, strlen(cut) + 1); /* strictly shorter: cut > buf + 3 */
		memcpy(buf, "...", 3);
	}
	if ((int)strlen(buf) > w) /* one identifier too long: keep its start */
		memcpy(buf + w - 3, "...", 4);
	return buf;
}

/* Fits `s` into `w` columns keeping its start ("libstdc++.so.6..."). */
static const char *fit_head(const char *s, int w, char *buf, size_t cap)
{
	if ((int)strlen(s) <= w || w < 4)
		return s;
	snprintf(buf, cap, "%.*s...", w - 3, s);
	return buf;
}

static const char *base_name(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;
	return s ? s + 1 : path;
}

/* "file.c:123" (basename), or "-" when unknown. */
static const char *source_of(const char *file, int line, char *buf, size_t cap)
{
	if (!file)
		return "-";
	if (line > 0)
		snprintf(buf, cap, "%s:%d", base_name(file), line);
	else
		snprintf(buf, cap, "%s", base_name(file));
	return buf;
}

/* Prints `len` bytes of `s` after `prefix`, broken at spaces into lines of at most WIDTH
 * columns, continuation lines indented under the text. */
static void wrapped(FILE *out, const char *prefix, const char *s, int len)
{
	int indent = (int)strlen(prefix), room = WIDTH - indent;
	fputs(prefix, out);
	while (len > 0) {
		int n = len;
		if (n > room) {
			n = room;
			while (n > 0 && s[n] != ' ')
				n--;
			if (n == 0) /* one word longer than the line: cut it */
				n = room;
		}
		fprintf(out, "%.*s\n", n, s);
		s += n;
		len -= n;
		while (len > 0 && *s == ' ') {
			s++;
			len--;
		}
		if (len > 0)
			fprintf(out, "%*s", indent, "");
	}
}

static void banner(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void banner(struct text *t, const char *fmt, ...)
{
	char title[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(title, sizeof(title), fmt, ap);
	va_end(ap);
	int pad = (int)(sizeof(rule) - 1 - strlen(title)) / 2;
	fprintf(t->out, "\n%s\n%*s%s\n%s\n", rule, pad > 0 ? pad : 0, "", title, rule);
}

/* ---------------------------------------------------------------------------------------- */
/* Header and statistics */

static uint64_t meta(const struct text *t, const char *key)
{
	long long v = wp_profile_meta_ll(t->p, key, 0);
	return v > 0 ? (uint64_t)v : 0;
}

static void exit_line(struct text *t, char *buf, size_t cap)
{
	int st;
	if (t->o->have_exit_status) {
		st = t->o->exit_status;
	} else {
		/* the profile's own word (exit_status, died_of_signal), as a wait status */
		int code;
		enum wp_end e = wp_profile_end(t->p, &code);
		if (e != WP_END_EXIT && e != WP_END_SIGNAL) {
			buf[0] = 0;
			return;
		}
		st = e == WP_END_EXIT ? (code & 0xff) << 8 : code & 0x7f;
	}
	if (WIFEXITED(st)) {
		snprintf(buf, cap, "exited with status %d", WEXITSTATUS(st));
	} else if (WIFSIGNALED(st)) {
		const char *abbrev = sigabbrev_np(WTERMSIG(st));
		snprintf(buf, cap, "killed by %s%s (signal %d)%s", abbrev ? "SIG" : "",
			 abbrev ? abbrev : "a signal", WTERMSIG(st),
			 WCOREDUMP(st) ? ", core dumped" : "");
	} else {
		snprintf(buf, cap, "ended with status 0x%x", st);
	}
}

/* One row of the run's table, and then (tree order) the processes it started. */
static void process_row(struct text *t, const struct wp_run *run, size_t i, char *done)
{
	const struct wp_run_proc *rp = &run->procs[i];
	char pid[24], ppid[24], line[WIDTH * 4], b[WIDTH * 4];
	done[i] = 1;
	snprintf(pid, sizeof(pid), "%ld", rp->pid);
	snprintf(ppid, sizeof(ppid), "%ld", rp->ppid);
	if (rp->pid < 0)
		strcpy(pid, "?");
	if (rp->ppid < 0)
		strcpy(ppid, "?");
	/* the program's name without its directory: the arguments tell processes apart */
	const char *cmd = rp->command, *sp = strchr(cmd, ' '), *sl = strrchr(cmd, '/');
	if (sl && (!sp || sl < sp))
		cmd = sl + 1;
	else if (sp && cmd[0] == '/')
		for (const char *c = cmd; c < sp; c++)
			if (*c == '/')
				cmd = c + 1;
	/* indented by its depth in the tree; the file only when the report is of one of them */
	int depth = wp_run_depth(run, i);
	snprintf(line, sizeof(line), "%*s%s%s%s%s", 2 * depth, "", *cmd ? cmd : "(command unknown)",
		 run->merged ? "" : "  [", run->merged ? "" : rp->file,
		 run->merged ? "" : rp->is_main ? " (this)]" : "]");
	fprintf(t->out, "  %7s %7s  %-10s %9s %9s %8s  %s\n", pid, ppid, rp->end,
		wp_dur(rp->wall_ns), wp_dur(rp->cpu_ns), wp_num(rp->samples),
		fit_head(line, WIDTH - 60, b, sizeof(b)));
	/* its children, by start; an exec'd image and the next image of its pid are siblings */
	for (size_t k = 0; k < run->n; k++)
		if (!done[k] && rp->pid > 0 && run->procs[k].ppid == rp->pid &&
		    run->procs[k].pid != rp->pid)
			process_row(t, run, k, done);
}

/* Every process of the run (a fork child, an exec'd image, a program it started), as a tree:
 * pid, parent, how it ended, wall and CPU time, samples, command line. With --single-file
 * the others are listed so that their time is not missed; their samples are in their files. */
static void processes(struct text *t)
{
	const struct wp_run *run = t->s->run;
	if (!run)
		return;
	const char *self = "";
	for (size_t i = 0; i < run->n; i++)
		if (run->procs[i].is_main)
			self = run->procs[i].file;
	if (run->merged)
		fprintf(t->out, "[RUN]     %zu profiles (each process, each image before an exec), "
				"all in this report:\n", run->n);
	else if (run->n == 1) /* shown for the processes that took no sample (below) */
		fprintf(t->out, "[RUN]     the run's only profile:\n");
	else
		fprintf(t->out, "[RUN]     %zu profiles in this run (each process, each image before "
				"an exec); this report is\n          of %s only (--single-file): "
				"`wallprof --report %s` reports them all\n", run->n, self, self);
	fprintf(t->out, "  %7s %7s  %-10s %9s %9s %8s  %s\n", "pid", "parent", "ended", "wall",
		"CPU", "samples", run->merged ? "command" : "command  [file]");
	char *done = calloc(run->n ? run->n : 1, 1);
	if (!done)
		return;
	for (size_t i = 0; i < run->n; i++) /* roots first (parent not in the run), by start */
		if (!done[i] && wp_run_depth(run, i) == 0)
			process_row(t, run, i, done);
	for (size_t i = 0; i < run->n; i++) /* a cycle of reused pids: still every row */
		if (!done[i])
			process_row(t, run, i, done);
	free(done);
	for (size_t i = 0; i < run->n; i++)
		if (run->procs[i].end_kind == WP_END_NO_WORD && !run->procs[i].exit_known) {
			fprintf(t->out, "[RUN]     no word: a process whose last write was a checkpoint "
					"(killed by SIGKILL, or still running)\n");
			break;
		}
	if (run->nunsampled)
		fprintf(t->out, "[RUN]     %zu process%s ran too briefly to sample (no profile; each "
				"a line in the run's .unsampled list)\n", run->nunsampled,
			run->nunsampled == 1 ? "" : "es");
	if (run->skipped)
		fprintf(t->out, "[WARNING] %zu file%s of this run could not be read (said on standard "
				"error)\n", run->skipped, run->skipped == 1 ? "" : "s");
}

static void header(struct text *t)
{
	const struct wp_profile *p = t->p;
	const struct wp_summary *s = t->s;
	const char *cmd = wp_profile_meta(p, "command");
	const char *mode = wp_profile_meta(p, "mode");
	char ex[128], b[160];
	uint64_t duration = s->duration_ns, user = s->cpu_user_ns, sys = s->cpu_sys_ns;
	uint64_t hz = s->hz, ticks = s->ticks, late = s->ticks_late;

	fprintf(t->out, "%s\n%*sWALLPROF PROFILE\n%s\n", rule, 32, "", rule);
	exit_line(t, ex, sizeof(ex));
	fprintf(t->out, "[RUN]     %s\n", cmd && *cmd ? fit_head(cmd, WIDTH - 10, b, sizeof(b))
						 : "(command unknown)");
	if (meta(t, "pid") || *ex) {
		fprintf(t->out, "[RUN]     ");
		if (meta(t, "pid"))
			fprintf(t->out, "pid %llu%s", (unsigned long long)meta(t, "pid"), *ex ? ", " : "");
		fprintf(t->out, "%s\n", ex);
	}
	const struct wp_run *run = s->run && s->run->merged ? s->run : NULL;
	const struct wp_run_proc *root = run ? wp_run_root(run) : NULL;
	uint64_t root_wall = root ? wp_run_pid_wall(run, root->pid) : 0;
	if (root_wall) {
		/* a tree: the wall time the user waited is the root's (every image of its pid);
		 * the CPU time is every process's */
		fprintf(t->out, "[RUN]     wall time %s (the root's), CPU time %s (user %s, system "
				"%s)\n          of all %zu profiles: %.2f cores busy\n", wp_dur(root_wall),
			wp_dur(user + sys), wp_dur(user), wp_dur(sys), run->n,
			(double)(user + sys) / (double)root_wall);
	} else if (duration) {
		fprintf(t->out, "[RUN]     wall time %s, CPU time %s (user %s, system %s)", wp_dur(duration),
			wp_dur(user + sys), wp_dur(user), wp_dur(sys));
		fprintf(t->out, ": %.2f cores busy\n", (double)(user + sys) / (double)duration);
	}
	processes(t);
	if (!mode || !strcmp(mode, "wall")) {
		long long per = wp_profile_meta_ll(p, "threads_per_tick", -1);
		if (per > 0)
			snprintf(b, sizeof(b), "up to %lld threads a tick", per);
		else
			snprintf(b, sizeof(b), "every thread every tick");
		fprintf(t->out, "[CONFIG]  mode wall: threads sampled running or waiting (%s)\n", b);
	} else {
		fprintf(t->out, "[CONFIG]  mode %s: threads sampled in proportion to the CPU time they "
				"use\n", mode);
	}
	if (hz && duration) {
		if (t->wall) {
			fprintf(t->out, "[CONFIG]  rate asked %s Hz; delivered %s ticks/s, %s samples "
					"per thread-second\n", wp_num(hz),
				wp_num((uint64_t)llround(s->ticks_per_s)),
				wp_num((uint64_t)llround(s->samples_per_thread_s)));
			if (ticks && late * 10 > ticks)
				fprintf(t->out, "[WARNING] %s of %s ticks came late (the machine was busy or "
						"the sampler could not keep up):\n          expect fewer "
						"samples than asked, or try a lower --hz\n", wp_num(late), wp_num(ticks));
		} else {
			fprintf(t->out, "[CONFIG]  rate asked %s Hz; delivered %s samples per CPU-second "
					"(%s in %s of CPU)\n",
				wp_num(hz), wp_num((uint64_t)llround(s->samples_per_cpu_s)),
				wp_num(s->samples_all), wp_dur(s->program_cpu_ns));
		}
	}
	if (t->r->filter.process)
		fprintf(t->out, "[FILTER]  --process%s=%s%s: %s of %s samples (%.1f%%)\n",
			t->r->filter.descendants ? "-tree" : "", t->r->filter.process,
			t->r->filter.descendants ? " and its descendants" : "", wp_num(t->total),
			wp_num(s->samples_all), wp_pct(t->total, s->samples_all));
	if (t->r->filter.thread)
		fprintf(t->out, "[FILTER]  --thread=%s: %s of %s samples (%.1f%%)\n",
			t->r->filter.thread, wp_num(t->total), wp_num(s->samples_all),
			wp_pct(t->total, s->samples_all));
	/* what the agent said while it ran (it never writes to the program's stderr under the
	 * command) */
	for (int i = 1;; i++) {
		char key[32];
		snprintf(key, sizeof(key), "message_%d", i);
		const char *m = wp_profile_meta(p, key);
		if (!m)
			break;
		wrapped(t->out, "[AGENT]   ", m, (int)strlen(m));
	}
	const char *w = wp_symbolizer_warnings(t->r->sym);
	while (w && *w) {
		const char *nl = strchr(w, '\n');
		int len = nl ? (int)(nl - w) : (int)strlen(w);
		wrapped(t->out, "[WARNING] ", w, len);
		w += len + (nl ? 1 : 0);
	}
}

static void stats(struct text *t)
{
	const struct wp_summary *s = t->s;
	uint64_t duration = s->duration_ns, sampler = s->sampler_cpu_ns, truncated = s->truncated;

	fprintf(t->out, "\n[STATS]   samples: %s", wp_num(t->total));
	if (t->wall)
		fprintf(t->out, " (%s running, %s waiting)", wp_num(t->total - s->waiting),
			wp_num(s->waiting));
	fprintf(t->out, " from %s thread%s; %s unique stacks\n", wp_num(s->threads),
		s->threads == 1 ? "" : "s", wp_num(s->stacks));

	/* Missed samples, by cause (the agent's missed_<cause> keys), for the whole run. */
	char causes[512] = "";
	size_t cl = 0;
	for (int i = 0; i < s->nmissed_by && cl < sizeof(causes); i++)
		cl += (size_t)snprintf(causes + cl, sizeof(causes) - cl, "%s%s %s", cl ? ", " : "",
				       s->missed_by[i].cause, wp_num(s->missed_by[i].n));
	if (s->missed)
		fprintf(t->out, "[STATS]   missed samples: %s (%.1f%% of attempts): %s\n",
			wp_num(s->missed), wp_pct(s->missed, s->missed + s->samples_all), causes);
	else
		fprintf(t->out, "[STATS]   missed samples: none\n");

	fprintf(t->out, "[STATS]   truncated stacks: %s", wp_num(truncated));
	if (truncated)
		fprintf(t->out, " samples (%.1f%%): their callers are missing from the call graph",
			wp_pct(truncated, t->total));
	fputc('\n', t->out);

	uint64_t wn = meta(t, "window_n");
	if (wn)
		fprintf(t->out, "[STATS]   thread suspension per sample: p50 %s, p99 %s, max %s "
				"(%s suspensions)\n",
			wp_dur(meta(t, "window_p50_ns")), wp_dur(meta(t, "window_p99_ns")),
			wp_dur(meta(t, "window_max_ns")), wp_num(wn));
	if (duration && wp_profile_meta(t->p, "sampler_cpu_ns"))
		fprintf(t->out, "[STATS]   sampler CPU time: %s (%.1f%% of one core)\n", wp_dur(sampler),
			s->sampler_core_pct);

	/* Estimated overhead on the program: threads held + sampler CPU (summary.h says why) */
	if (duration)
		fprintf(t->out, "[STATS]   estimated overhead: ~%.1f%% = %.1f%% threads held (%s in %s of "
				"thread lifetime)\n          + %.1f%% sampler CPU (%s in %s on %ld CPU%s)\n",
			s->overhead_pct, s->held_pct, wp_dur(s->window_sum_ns), wp_dur(s->thread_life_ns),
			s->sampler_pct, wp_dur(sampler), wp_dur(duration), s->ncpus,
			s->ncpus == 1 ? "" : "s");
	for (size_t i = 0; i < t->r->nthreads; i++) {
		const struct wp_thread *th = t->r->threads[i];
		if (th->flags & WP_THREAD_UNSAMPLEABLE)
			fprintf(t->out, "[WARNING] thread %s (tid %u) could not be sampled at times "
					"(it blocks the sampling signal or did not answer)\n",
				th->name && *th->name ? th->name : "?", th->tid);
	}
	if (t->total && t->total < FEW_SAMPLES) {
		double lo, hi;
		wp_share_ci(s, t->total / 2, t->total, &lo, &hi);
		fprintf(t->out, "[WARNING] only %s samples: shares below are rough (a 50%% share could "
				"be anywhere from %.0f%% to %.0f%%).\n          Run longer or raise --hz "
				"(this run: %s Hz).\n",
			wp_num(t->total), lo, hi, wp_num(s->hz));
	}
}

/* ---------------------------------------------------------------------------------------- */
/* Flat profile */

struct cols {
	int func, src, mod, samples;
};

/* Whether function f is anywhere in stack s. */
static int in_stack(const struct wp_rstack *s, uint32_t f)
{
	for (uint32_t j = 0; j < s->n; j++)
		if (s->frames[j].func == f)
			return 1;
	return 0;
}

/* "  pid N" of the process with most of function f's self samples (its total samples with
 * `total`), "+" when others had some too (the PROCESSES section splits them). */
static void main_process(const struct wp_resolved *r, uint32_t f, int total, char *buf,
			 size_t cap)
{
	uint64_t *per = calloc(r->nprocs, sizeof(*per));
	if (!per)
		return;
	size_t best = 0, with = 0;
	for (size_t i = 0; i < r->nstacks; i++) {
		const struct wp_rstack *s = &r->stacks[i];
		if (total ? in_stack(s, f) : s->n && s->frames[s->n - 1].func == f)
			per[s->proc] += s->count;
	}
	/* the images of one pid are one process */
	for (size_t k = 0; k < r->nprocs; k++)
		for (size_t j = 0; j < k; j++)
			if (per[k] && pid_of(r, (uint32_t)j) == pid_of(r, (uint32_t)k)) {
				per[j] += per[k];
				per[k] = 0;
			}
	for (size_t k = 0; k < r->nprocs; k++) {
		with += per[k] > 0;
		if (per[k] > per[best])
			best = k;
	}
	snprintf(buf, cap, "  pid %ld%s", pid_of(r, (uint32_t)best), with > 1 ? "+" : "");
	free(per);
}

static void flat(struct text *t)
{
	const struct wp_resolved *r = t->r;
	size_t n, withtotal = 0;
	uint32_t *ids = wp_funcs_ranked(r, NULL, WP_RANK_SELF, &n);
	if (!ids)
		return;
	for (size_t i = 0; i < r->nfuncs; i++)
		withtotal += r->funcs[i].total > 0;
	size_t shown = n < (size_t)t->o->top ? n : (size_t)t->o->top;
	char b1[512], b2[512], b3[512], b4[512];

	banner(t, "FLAT PROFILE (top %zu of %zu functions, by self time)", shown, n);
	/* Columns: self% | 95% CI | samples | total% | function | source:line | module */
	struct cols c = { 8, 11, 6, 7 };
	c.samples = (int)strlen(wp_num(r->total));
	if (c.samples < 7)
		c.samples = 7;
	for (size_t i = 0; i < shown; i++) {
		const struct wp_func *f = &r->funcs[ids[i]];
		int fl = (int)strlen(f->name), ml = (int)strlen(f->module);
		int sl = (int)strlen(source_of(f->file, f->line, b1, sizeof(b1)));
		if (fl > c.func)
			c.func = fl;
		if (sl > c.src)
			c.src = sl;
		if (ml > c.mod)
			c.mod = ml;
	}
	/* Everything fits in WIDTH when it can; else the module gives way first (down to 14,
	 * 10 beside a process column), then the source (down to 18, 14), then the function
	 * (down to 20). */
	int procs_col = r->nprocs > 1 ? 12 : 0; /* "  pid NNNNN+" */
	int mod_min = procs_col ? 10 : 14, src_min = procs_col ? 14 : 18;
	int avail = WIDTH - (2 + 6 + 2 + 11 + 2 + c.samples + 2 + 6 + 2) - 4 - procs_col;
	if (c.mod > 24)
		c.mod = 24;
	if (c.src > 28)
		c.src = 28;
	if (c.func + c.src + c.mod > avail && c.mod > mod_min)
		c.mod = c.func + c.src + mod_min > avail ? mod_min : avail - c.func - c.src;
	if (c.func + c.src + c.mod > avail && c.src > src_min)
		c.src = c.func + src_min + c.mod > avail ? src_min : avail - c.func - c.mod;
	if (c.func + c.src + c.mod > avail)
		c.func = avail - c.src - c.mod < 20 ? 20 : avail - c.src - c.mod;

	int procs = r->nprocs > 1; /* a process column, last */
	fprintf(t->out, "  %6s  %-11s  %*s  %6s  %-*s  %-*s  %-*s%s\n", "self", "95% CI", c.samples,
		"samples", "total", c.func, "function", c.src, "source:line", procs ? c.mod : 0,
		"module", procs ? "  process" : "");
	fprintf(t->out, "  %.6s  %.11s  %.*s  %.6s  %.*s  %.*s  %.*s%s\n", dashes, dashes, c.samples,
		dashes, dashes, c.func, dashes, c.src, dashes, c.mod, dashes,
		procs ? "  -------" : "");
	uint64_t listed = 0;
	for (size_t i = 0; i < shown; i++) {
		const struct wp_func *f = &r->funcs[ids[i]];
		double lo, hi;
		char ci[32];
		wp_share_ci(t->s, f->self, r->total, &lo, &hi);
		snprintf(ci, sizeof(ci), "%.1f-%.1f", lo, hi);
		char pc[48] = "";
		if (procs)
			main_process(r, ids[i], 0, pc, sizeof(pc));
		fprintf(t->out, "  %5.1f%%  %-11s  %*s  %5.1f%%  %-*s  %-*s  %-*s%s\n",
			wp_pct(f->self, r->total), ci, c.samples, wp_num(f->self), wp_pct(f->total, r->total),
			c.func, fit_tail(f->name, c.func, b1, sizeof(b1)), c.src,
			fit_tail(source_of(f->file, f->line, b2, sizeof(b2)), c.src, b3, sizeof(b3)),
			procs ? c.mod : 0, fit_head(f->module, c.mod, b4, sizeof(b4)), pc);
		listed += f->self;
	}
	uint64_t nostack = t->s->no_stack;
	if (n > shown) {
		uint64_t other = r->total - listed - nostack;
		snprintf(b1, sizeof(b1), "(other - %s functions)", wp_num(n - shown));
		fprintf(t->out, "  %5.1f%%  %-11s  %*s  %6s  %s\n", wp_pct(other, r->total), "",
			c.samples, wp_num(other), "", b1);
	}
	if (nostack)
		fprintf(t->out, "  %5.1f%%  %-11s  %*s  %6s  %s\n", wp_pct(nostack, r->total), "",
			c.samples, wp_num(nostack), "", "(no stack: the unwinder found no frame)");
	fprintf(t->out, "  %.6s  %11s  %.*s\n", dashes, "", c.samples, dashes);
	fprintf(t->out, "  %5.1f%%  %-11s  %*s  %6s  %s functions with samples, %s as leaf\n",
		r->total ? 100.0 : 0.0, "", c.samples, wp_num(r->total), "", wp_num(withtotal), wp_num(n));
	free(ids);
}

/* ---------------------------------------------------------------------------------------- */
/* Waits (wall mode): what the waiting samples waited in, per kind, then per object */

#define WAIT_OBJECTS 20   /* objects listed */
#define WAIT_NAMES 4      /* threads, holders named per object */

/* A lock's holder as the text names it: its thread, and where its stack in the same tick
 * was (the program function nearest the leaf, at its line) in its largest share. */
struct holder_slot {
	uint64_t key; /* process << 32 | tid, + 1; 0: free */
	const struct wp_rframe *at; /* NULL: no holder stack known; else the frame of the wait
				     * record that brought the most samples (best) */
	uint64_t n, best;
};

struct wait_obj {
	enum wp_wait_kind kind;
	const char *object;
	uint64_t count, weight_ns;
	uint64_t tids[WAIT_NAMES]; /* process << 32 | tid, + 1 */
	uint64_t tid_n[WAIT_NAMES];
	struct holder_slot holders[WAIT_NAMES];
	const char *funcs[WAIT_NAMES];
	uint64_t func_n[WAIT_NAMES];
	int more_funcs;
	uint64_t holder_known;
	int more_tids, more_holders;
};

/* Counts `n` samples of thread `tid` of process `proc` in the small table tids/tn
 * (WAIT_NAMES slots; 0 is free). */
static void tally_tid(uint64_t *tids, uint64_t *tn, int *more, uint32_t proc, uint32_t tid,
		      uint64_t n)
{
	uint64_t key = ((uint64_t)proc << 32 | tid) + 1;
	for (int i = 0; i < WAIT_NAMES; i++)
		if (tids[i] == key || !tids[i]) {
			tids[i] = key;
			tn[i] += n;
			return;
		}
	*more = 1;
}

/* The same for the waiting function `f` (names are interned: the pointer is the name). */
static void tally_func(struct wait_obj *w, const char *f, uint64_t n)
{
	if (!f)
		return;
	for (int i = 0; i < WAIT_NAMES; i++)
		if (w->funcs[i] == f || !w->funcs[i]) {
			w->funcs[i] = f;
			w->func_n[i] += n;
			return;
		}
	w->more_funcs = 1;
}

/* The frame a holder stack is shown by: the program's function nearest the leaf, else the
 * leaf; NULL when there is no stack. */
static const struct wp_rframe *holder_at(const struct wp_resolved *r, const struct wp_rwait *rw)
{
	for (uint32_t j = rw->holder_n; j-- > 0;)
		if (r->funcs[rw->holder_frames[j].func].kind == WP_KIND_PROGRAM)
			return &rw->holder_frames[j];
	return rw->holder_n ? &rw->holder_frames[rw->holder_n - 1] : NULL;
}

/* Counts `n` samples held by rw's holder (thread and place) in w's holder slots. */
static void tally_holder(const struct wp_resolved *r, struct wait_obj *w, uint32_t proc,
			 const struct wp_rwait *rw, uint64_t n)
{
	uint64_t key = ((uint64_t)proc << 32 | rw->holder) + 1;
	const struct wp_rframe *at = holder_at(r, rw);
	for (int i = 0; i < WAIT_NAMES; i++) {
		struct holder_slot *h = &w->holders[i];
		if (!h->key || h->key == key) {
			h->key = key;
			if (at && (!h->at || n > h->best)) {
				h->at = at;
				h->best = n;
			}
			h->n += n;
			return;
		}
	}
	w->more_holders = 1;
}

/* "holder tid=12 97% in compute (main.c:40), ...", most samples first */
static void put_holders(struct text *t, struct wait_obj *w, char *buf, size_t cap)
{
	size_t at = 0;
	buf[0] = 0;
	for (int i = 1; i < WAIT_NAMES; i++) /* insertion sort of 4 slots, by count */
		for (int j = i; j > 0 && w->holders[j].n > w->holders[j - 1].n; j--) {
			struct holder_slot tmp = w->holders[j];
			w->holders[j] = w->holders[j - 1];
			w->holders[j - 1] = tmp;
		}
	for (int i = 0; i < WAIT_NAMES && w->holders[i].key && at < cap; i++) {
		const struct holder_slot *h = &w->holders[i];
		uint32_t proc = (uint32_t)((h->key - 1) >> 32), tid = (uint32_t)(h->key - 1);
		const struct wp_thread *th = wp_resolved_thread_of(t->r, proc, tid);
		at += (size_t)snprintf(buf + at, cap - at, "%s%s tid=%u %.0f%%", i ? ", " : "",
				       th && th->name && *th->name ? th->name : "?", tid,
				       wp_pct(h->n, w->count));
		if (h->at && at < cap) {
			const struct wp_func *f = &t->r->funcs[h->at->func];
			const char *file = h->at->file ? h->at->file : f->file;
			int line = h->at->file ? h->at->line : f->line;
			const char *base = file ? strrchr(file, '/') : NULL;
			if (file && line > 0)
				at += (size_t)snprintf(buf + at, cap - at, " in %s (%s:%d)", f->name,
						       base ? base + 1 : file, line);
			else
				at += (size_t)snprintf(buf + at, cap - at, " in %s", f->name);
		}
	}
	if (w->more_holders && at < cap)
		snprintf(buf + at, cap - at, ", ...");
}

/* Sorts the WAIT_NAMES slots of a name table (keys, with their counts), most samples first:
 * they fill in the order the stacks come, and the lines name the biggest first. */
static void sort_slots(uint64_t *keys, uint64_t *n)
{
	for (int i = 1; i < WAIT_NAMES; i++)
		for (int j = i; j > 0 && n[j] > n[j - 1]; j--) {
			uint64_t k = keys[j], c = n[j];
			keys[j] = keys[j - 1];
			n[j] = n[j - 1];
			keys[j - 1] = k;
			n[j - 1] = c;
		}
}

static void put_tids(struct text *t, uint64_t *tids, uint64_t *tn, int more, uint64_t of,
		     char *buf, size_t cap)
{
	size_t at = 0;
	buf[0] = 0;
	sort_slots(tids, tn);
	for (int i = 0; i < WAIT_NAMES && tids[i] && at < cap; i++) {
		uint32_t proc = (uint32_t)((tids[i] - 1) >> 32), tid = (uint32_t)(tids[i] - 1);
		const struct wp_thread *th = wp_resolved_thread_of(t->r, proc, tid);
		at += (size_t)snprintf(buf + at, cap - at, "%s%s tid=%u %.0f%%", i ? ", " : "",
				       th && th->name && *th->name ? th->name : "?", tid,
				       wp_pct(tn[i], of));
	}
	if (more && at < cap)
		snprintf(buf + at, cap - at, ", ...");
}

/* One object's lines of the WAITS section: its share and time, who waited, where, held by. */
static void put_wait_obj(struct text *t, struct wait_obj *w)
{
	char b1[1024], b2[1024];
	fprintf(t->out, "  %5.1f%%  %10s  %-9s  %s\n", wp_pct(w->count, t->total),
		wp_dur(w->weight_ns), wp_wait_kind_name(w->kind), w->object);
	put_tids(t, w->tids, w->tid_n, w->more_tids, w->count, b1, sizeof(b1));
	fprintf(t->out, "  %30s  waiting: %s\n", "", b1);
	size_t at = 0;
	b2[0] = 0;
	uint64_t fk[WAIT_NAMES];
	for (int i = 0; i < WAIT_NAMES; i++)
		fk[i] = (uint64_t)(uintptr_t)w->funcs[i];
	sort_slots(fk, w->func_n);
	for (int i = 0; i < WAIT_NAMES; i++)
		w->funcs[i] = (const char *)(uintptr_t)fk[i];
	for (int i = 0; i < WAIT_NAMES && w->funcs[i] && at < sizeof(b2); i++)
		at += (size_t)snprintf(b2 + at, sizeof(b2) - at, "%s%s %.0f%%", i ? ", " : "",
				       w->funcs[i], wp_pct(w->func_n[i], w->count));
	if (w->more_funcs && at < sizeof(b2))
		snprintf(b2 + at, sizeof(b2) - at, ", ...");
	if (strlen(b2) > WIDTH - 38) /* long C++ names: the line stays in WIDTH */
		snprintf(b2 + WIDTH - 41, sizeof(b2) - (WIDTH - 41), "...");
	if (*b2)
		fprintf(t->out, "  %30s  in: %s\n", "", b2);
	if (w->holder_known) {
		put_holders(t, w, b2, sizeof(b2));
		fprintf(t->out, "  %30s  held by: %s\n", "", b2);
	}
}

/* The text report's own columns of each wait object (its totals are the model's,
 * wp_wait_totals): the threads that waited, where, and who held it. */
static void tally_waiters(const struct wp_resolved *r, struct wait_obj *objs, const uint32_t *of,
			  uint64_t *waiting)
{
	for (size_t i = 0; i < r->nstacks; i++) {
		const struct wp_rstack *s = &r->stacks[i];
		if (s->flags & WP_STACK_WAITING)
			*waiting += s->count;
		for (uint32_t k = 0; k < s->nwaits; k++) {
			const struct wp_rwait *rw = &s->waits[k];
			uint64_t c = wp_rwait_samples(s, k);
			if (!c)
				continue;
			struct wait_obj *w = &objs[of[rw - r->waits]];
			tally_tid(w->tids, w->tid_n, &w->more_tids, s->proc, s->tid, c);
			tally_func(w, rw->waiter, c);
			if (rw->holder) {
				w->holder_known += c;
				tally_holder(r, w, s->proc, rw, c);
			}
			if (!(s->flags & WP_STACK_WAITING))
				*waiting += c; /* a runnable thread's wait for a CPU */
		}
	}
}

static void waits(struct text *t)
{
	const struct wp_resolved *r = t->r;
	if (!t->wall || !r->nwaits)
		return;
	size_t nobjs;
	uint32_t *of;
	struct wp_wait_total *tot = wp_wait_totals(r, NULL, NULL, &nobjs, &of);
	struct wait_obj *objs = calloc(nobjs + 1, sizeof(*objs));
	uint64_t per_kind[WP_WAIT__N] = { 0 }, kind_ns[WP_WAIT__N] = { 0 }, known = 0, waiting = 0;
	if (!objs) {
		fprintf(stderr, "wallprof: out of memory\n");
		goto done;
	}
	tally_waiters(r, objs, of, &waiting);
	for (size_t i = 0; i < nobjs; i++) {
		per_kind[tot[i].kind] += tot[i].count;
		kind_ns[tot[i].kind] += tot[i].weight_ns;
		known += tot[i].count;
		objs[i].kind = tot[i].kind;
		objs[i].object = tot[i].object;
		objs[i].count = tot[i].count;
		objs[i].weight_ns = tot[i].weight_ns;
	}
	banner(t, "WAITS (what waiting samples waited in: %s of %s)", wp_num(known),
	       wp_num(waiting));
	fprintf(t->out, "  %6s  %10s  %9s  %s\n", "share", "time", "samples", "kind");
	for (int k = 0; k < WP_WAIT__N; k++)
		if (per_kind[k])
			fprintf(t->out, "  %5.1f%%  %10s  %9s  %s\n", wp_pct(per_kind[k], t->total),
				wp_dur(kind_ns[k]), wp_num(per_kind[k]),
				wp_wait_kind_name((enum wp_wait_kind)k));
	fprintf(t->out, "\n  %6s  %10s  %-9s  %s\n", "share", "time", "kind", "object: waiting threads");
	for (size_t i = 0; i < nobjs && i < WAIT_OBJECTS; i++)
		put_wait_obj(t, &objs[i]);
	if (nobjs > WAIT_OBJECTS)
		fprintf(t->out, "  (%zu more objects)\n", nobjs - WAIT_OBJECTS);
done:
	free(objs);
	free(of);
	free(tot);
}

/* ---------------------------------------------------------------------------------------- */
/* Call graph */

#define NO_FUNC UINT32_MAX

struct edge {
	UT_hash_handle hh;
	uint64_t key; /* caller << 32 | callee; NO_FUNC for the thread's root / self time */
	uint64_t count;
	size_t last; /* stack index + 1 that last counted it: once per sample */
};

struct graph {
	struct edge *edges;
	size_t nedges;
};

static void add_edge(struct graph *g, uint32_t from, uint32_t to, uint64_t count, size_t stack)
{
	uint64_t key = (uint64_t)from << 32 | to;
	struct edge *e;
	HASH_FIND(hh, g->edges, &key, sizeof(key), e);
	if (!e) {
		e = calloc(1, sizeof(*e));
		if (!e)
			return;
		e->key = key;
		HASH_ADD(hh, g->edges, key, sizeof(e->key), e);
		g->nedges++;
	}
	if (e->last == stack + 1)
		return;
	e->last = stack + 1;
	e->count += count;
}

struct link {
	uint32_t func;
	uint64_t count;
};

static int by_count(const void *a, const void *b)
{
	const struct link *x = a, *y = b;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return x->func < y->func ? -1 : x->func > y->func;
}

/* One "callers:" or "callees:" list; NO_FUNC is printed as `nofunc` ((self) or (root)). */
static void print_links(struct text *t, uint32_t of, const char *label, struct link *l, size_t n,
			const char *nofunc)
{
	char b[512];
	qsort(l, n, sizeof(*l), by_count);
	int nw = (int)strlen(wp_num(t->total));
	int fw = WIDTH - (6 + 11 + 7 + 2 + nw + 2);
	if (!n)
		fprintf(t->out, "      %-11s(none)\n", label);
	for (size_t i = 0; i < n && i < GRAPH_EDGES; i++) {
		const struct wp_func *f = l[i].func == NO_FUNC ? NULL : &t->r->funcs[l[i].func];
		const char *name = f ? f->name : nofunc;
		char named[512];
		if (f && !strcmp(f->name, t->r->funcs[of].name) && l[i].func != of) {
			/* same name, another function: say which (clock_gettime in libc / vdso) */
			snprintf(named, sizeof(named), "%s in %s", f->name, f->module);
			name = named;
		}
		fprintf(t->out, "      %-11s%6.1f%%  %*s  %s\n", i ? "" : label,
			wp_pct(l[i].count, t->total), nw, wp_num(l[i].count), fit_tail(name, fw, b, sizeof(b)));
	}
	if (n > GRAPH_EDGES) {
		uint64_t rest = 0;
		for (size_t i = GRAPH_EDGES; i < n; i++)
			rest += l[i].count;
		fprintf(t->out, "      %-11s%6.1f%%  %*s  (%zu more)\n", "", wp_pct(rest, t->total), nw,
			wp_num(rest), n - GRAPH_EDGES);
	}
}

static void call_graph(struct text *t)
{
	const struct wp_resolved *r = t->r;
	struct graph g = { 0 };
	for (size_t i = 0; i < r->nstacks; i++) {
		const struct wp_rstack *s = &r->stacks[i];
		if (!s->count || !s->n)
			continue;
		add_edge(&g, NO_FUNC, s->frames[0].func, s->count, i);
		for (uint32_t j = 0; j + 1 < s->n; j++)
			if (s->frames[j].func != s->frames[j + 1].func) /* recursion: not an edge */
				add_edge(&g, s->frames[j].func, s->frames[j + 1].func, s->count, i);
	}
	/* Per function: how many callers and callees, to skip plain pass-throughs below. */
	uint32_t *nin = calloc(r->nfuncs + 1, sizeof(*nin)), *nout = calloc(r->nfuncs + 1, sizeof(*nout));
	struct link *links = malloc((g.nedges + 2) * sizeof(*links));
	size_t n;
	uint32_t *ids = wp_funcs_ranked(r, NULL, WP_RANK_TOTAL, &n);
	if (!nin || !nout || !links || !ids)
		goto done;
	struct edge *e, *tmp;
	HASH_ITER(hh, g.edges, e, tmp) {
		uint32_t from = (uint32_t)(e->key >> 32), to = (uint32_t)e->key;
		if (from != NO_FUNC)
			nout[from]++;
		nin[to]++;
	}
	/* The hottest functions by total time, leaving out the plumbing of libraries and thread
	 * roots when it is a plain link of a chain (no self time, one caller, one callee:
	 * _start -> __libc_start_main -> main, nanosleep -> clock_nanosleep): its entry would
	 * repeat its neighbours'. The program's own functions always count. */
	uint32_t pick[GRAPH_FUNCS];
	size_t npick = 0;
	for (size_t i = 0; i < n && npick < GRAPH_FUNCS; i++) {
		const struct wp_func *f = &r->funcs[ids[i]];
		struct edge *root;
		uint64_t key = (uint64_t)NO_FUNC << 32 | ids[i];
		HASH_FIND(hh, g.edges, &key, sizeof(key), root);
		if (!f->self && nin[ids[i]] <= 1 && nout[ids[i]] == 1 &&
		    (f->kind != WP_KIND_PROGRAM || root))
			continue;
		pick[npick++] = ids[i];
	}
	if (!npick)
		goto done;
	banner(t, "CALL GRAPH (the %zu hottest functions by total time)", npick);
	fprintf(t->out, "For each function: who called it and what it called, with the share of "
			"all samples\nthat went through each call; (self) is time in its own code.\n");
	char b1[512], b2[256], b3[256];
	for (size_t k = 0; k < npick; k++) {
		uint32_t id = pick[k];
		const struct wp_func *f = &r->funcs[id];
		size_t nl = 0;
		const char *src = source_of(f->file, f->line, b2, sizeof(b2));
		/* over several processes, the one with most of its samples ("+": others too) */
		char pc[48] = "";
		if (r->nprocs > 1) {
			main_process(r, id, 1, pc, sizeof(pc));
			pc[0] = ',';
		}
		/* "[k] NAME  100.0% total, 100.0% self  (SRC, MODULE)": 41 columns besides */
		int sw = (int)strlen(src) > 30 ? 30 : (int)strlen(src);
		int fw = WIDTH - 41 - sw - (int)strlen(f->module) - (int)strlen(pc);
		if (fw < 20) { /* the source gives way first, then the name */
			sw -= 20 - fw;
			sw = sw < 12 ? 12 : sw;
			fw = 20;
		}
		fprintf(t->out, "\n[%zu] %s  %.1f%% total, %.1f%% self  (%s, %s%s)\n", k + 1,
			fit_tail(f->name, fw, b1, sizeof(b1)), wp_pct(f->total, t->total),
			wp_pct(f->self, t->total), fit_tail(src, sw, b3, sizeof(b3)), f->module, pc);
		HASH_ITER(hh, g.edges, e, tmp) {
			if ((uint32_t)e->key == id)
				links[nl++] = (struct link){ (uint32_t)(e->key >> 32), e->count };
		}
		print_links(t, id, "callers:", links, nl, "(thread root)");
		nl = 0;
		HASH_ITER(hh, g.edges, e, tmp) {
			if ((uint32_t)(e->key >> 32) == id)
				links[nl++] = (struct link){ (uint32_t)e->key, e->count };
		}
		if (f->self)
			links[nl++] = (struct link){ NO_FUNC, f->self };
		print_links(t, id, "callees:", links, nl, "(self)");
	}
done:
	HASH_ITER(hh, g.edges, e, tmp) {
		HASH_DEL(g.edges, e);
		free(e);
	}
	free(nin);
	free(nout);
	free(links);
	free(ids);
}

/* ---------------------------------------------------------------------------------------- */
/* Threads */

/* A thread of the report: tids are a process's own, and the images of one pid share their
 * threads (exec keeps the calling thread), so a thread is a (pid, tid). */
struct tcount {
	UT_hash_handle hh;
	uint64_t key;  /* pid << 32 | tid */
	uint32_t tid;
	uint32_t proc; /* the process it was first met in */
	long pid;
	uint64_t samples, waiting;
};

static uint64_t thread_key(const struct wp_resolved *r, uint32_t proc, uint32_t tid)
{
	return (uint64_t)(uint32_t)pid_of(r, proc) << 32 | tid;
}

static int by_samples(struct tcount *a, struct tcount *b)
{
	if (a->samples != b->samples)
		return a->samples > b->samples ? -1 : 1;
	return a->tid < b->tid ? -1 : a->tid > b->tid;
}

struct tname {
	UT_hash_handle hh;
	const char *name;
	size_t threads;
	uint64_t samples;
};

static int by_name_samples(struct tname *a, struct tname *b)
{
	if (a->samples != b->samples)
		return a->samples > b->samples ? -1 : 1;
	return strcmp(a->name, b->name);
}

/* The threads past the first `skip`, grouped by name: thread pools show up as one line. */
static void hidden_by_name(struct text *t, struct tcount *tc, size_t skip)
{
	struct tname *names = NULL, *nm, *tmp;
	struct tcount *c, *ctmp;
	size_t i = 0, groups = 0;
	HASH_ITER(hh, tc, c, ctmp) {
		if (i++ < skip)
			continue;
		const struct wp_thread *th = wp_resolved_thread_of(t->r, c->proc, c->tid);
		const char *name = th && th->name && *th->name ? th->name : "?";
		HASH_FIND_STR(names, name, nm);
		if (!nm) {
			nm = calloc(1, sizeof(*nm));
			if (!nm)
				break;
			nm->name = name;
			HASH_ADD_KEYPTR(hh, names, name, strlen(name), nm);
		}
		nm->threads++;
		nm->samples += c->samples;
	}
	HASH_SORT(names, by_name_samples);
	HASH_ITER(hh, names, nm, tmp) {
		if (groups++ < 8)
			fprintf(t->out, "    %-24s %6s thread%s  %9s samples  %5.1f%%\n", nm->name,
				wp_num(nm->threads), nm->threads == 1 ? " " : "s", wp_num(nm->samples),
				wp_pct(nm->samples, t->s->samples_all));
		HASH_DEL(names, nm);
		free(nm);
	}
	if (groups > 8)
		fprintf(t->out, "    (%s more names)\n", wp_num(groups - 8));
}

struct of_tid {
	const struct wp_resolved *r;
	uint64_t key;
};

static int of_thread(const struct wp_rstack *s, void *arg)
{
	const struct of_tid *a = arg;
	return thread_key(a->r, s->proc, s->tid) == a->key;
}

/* ---------------------------------------------------------------------------------------- */
/* Processes (a report over several): each one's share and its top functions */

struct of_pid {
	const struct wp_resolved *r;
	long pid;
};

static int of_process(const struct wp_rstack *s, void *arg)
{
	const struct of_pid *a = arg;
	return pid_of(a->r, s->proc) == a->pid;
}

/* The heading of process `k`'s section (the first image of its pid): its share and its top
 * functions over every image; its threads follow. */
static void process_head(struct text *t, size_t k)
{
	const struct wp_resolved *r = t->r;
	char b1[512], b2[256], b3[256], b4[256], prog[256];
	long pid = pid_of(r, (uint32_t)k);
	struct of_pid arg = { r, pid };
	struct wp_tally tally;
	if (wp_tally(r, of_process, &arg, &tally) != 0)
		return;
	long long ppid = wp_profile_meta_ll(r->procs[k], "ppid", -1);
	size_t images = 0, last = k;
	for (size_t j = 0; j < r->nprocs; j++)
		if (pid_of(r, (uint32_t)j) == pid) {
			images++;
			last = j; /* procs are in the order they started */
		}
	char first[256], from[300] = "";
	if (images > 1)
		snprintf(from, sizeof(from), ", exec'd from %s",
			 wp_resolved_program(r, (uint32_t)k, first, sizeof(first)));
	/* how it ended: its last image's row of the run */
	const char *end = NULL;
	for (size_t j = 0; t->s->run && j < t->s->run->n; j++)
		if (t->s->run->procs[j].pid == pid)
			end = t->s->run->procs[j].end;
	fprintf(t->out, "\n%s\n%s (pid %ld, parent %lld%s%s%s): %s sample%s, %.1f%% of all\n",
		dashes, wp_resolved_program(r, (uint32_t)last, prog, sizeof(prog)), pid, ppid, from,
		end ? ", " : "", end ? end : "",
		wp_num(tally.samples), tally.samples == 1 ? "" : "s",
		wp_pct(tally.samples, t->total));
	size_t n;
	uint32_t *ids = wp_funcs_ranked(r, &tally, WP_RANK_SELF, &n);
	for (size_t i = 0; ids && i < n && i < THREAD_FUNCS; i++) {
		const struct wp_func *f = &r->funcs[ids[i]];
		uint64_t self = tally.self[ids[i]];
		fprintf(t->out, "    %5.1f%%  %8s  %-36s  %-24s  %s\n",
			wp_pct(self, tally.samples), wp_num(self),
			fit_tail(f->name, 36, b1, sizeof(b1)),
			fit_tail(source_of(f->file, f->line, b2, sizeof(b2)), 24, b3, sizeof(b3)),
			fit_head(f->module, 14, b4, sizeof(b4)));
	}
	if (ids && n > THREAD_FUNCS)
		fprintf(t->out, "    %s more function%s\n", wp_num(n - THREAD_FUNCS),
			n - THREAD_FUNCS == 1 ? "" : "s");
	free(ids);
	wp_tally_free(&tally);
}

/* One line, when the thread ran unseen (it blocked the sampling signal and no perf clock
 * could sample it: summary.h): the share of its time no sample saw, and why. Returns 1 when
 * printed. */
static int unseen_line(struct text *t, uint32_t proc, uint32_t tid)
{
	uint64_t ns;
	double share;
	const char *why;
	if (!wp_thread_unseen(t->r, proc, tid, &ns, &share, &why))
		return 0;
	fprintf(t->out, "    unseen: %.1f%% of its %stime (%s it ran with the sampling signal "
			"blocked): %s\n", 100.0 * share, t->wall ? "" : "CPU ", wp_dur(ns), why);
	return 1;
}

/* One line: where the thread's wall time went, parts adding up to 100%: running, waiting
 * for a CPU, then each kind of wait, then waiting in no known call (summary.h's budget). */
static void time_budget(struct text *t, uint32_t proc, uint32_t tid)
{
	struct wp_budget b;
	wp_thread_budget(t->r, proc, tid, &b);
	if (!b.total_ns)
		return;
	fprintf(t->out, "    time (%s sampled): running %.1f%%", wp_dur(b.total_ns),
		wp_pct(b.running_ns, b.total_ns));
	if (b.kind_ns[WP_WAIT_CPU])
		fprintf(t->out, ", waiting for a CPU %.1f%%", wp_pct(b.kind_ns[WP_WAIT_CPU], b.total_ns));
	for (int k = 0; k < WP_WAIT__N; k++)
		if (k != WP_WAIT_CPU && b.kind_ns[k])
			fprintf(t->out, ", %s %.1f%%", wp_wait_kind_name((enum wp_wait_kind)k),
				wp_pct(b.kind_ns[k], b.total_ns));
	if (b.unknown_ns)
		fprintf(t->out, ", waiting in no known call %.1f%%", wp_pct(b.unknown_ns, b.total_ns));
	fputc('\n', t->out);
	if (unseen_line(t, proc, tid))
		return; /* it says what was missing, and why */
	const struct wp_thread *th = wp_resolved_thread_of(t->r, proc, tid);
	if (th && (th->flags & WP_THREAD_UNSAMPLEABLE) && th->last_ns > th->first_ns)
		fprintf(t->out, "    (it blocked the sampling signal at times, and was then sampled "
				"only while blocked in the kernel: %s sampled of the %s it was seen, "
				"its running time missing)\n",
			wp_dur(b.total_ns), wp_dur(th->last_ns - th->first_ns));
}

/* One thread's section: its samples, and the functions it spent them in. Returns -1 when out
 * of memory. */
static int thread_section(struct text *t, const struct tcount *c, uint64_t all)
{
	char b1[512], b2[256], b3[256], b4[256];
	const struct wp_thread *th = wp_resolved_thread_of(t->r, c->proc, c->tid);
	char in[64] = "";
	if (t->r->nprocs > 1)
		snprintf(in, sizeof(in), ", pid %ld", c->pid);
	fprintf(t->out, "\n%s (tid %u%s%s): %s sample%s, %.1f%% of the %s",
		th && th->name && *th->name ? th->name : "?", c->tid, in,
		th && (th->flags & WP_THREAD_EXITED) ? ", exited" : "", wp_num(c->samples),
		c->samples == 1 ? "" : "s", wp_pct(c->samples, all),
		t->r->nprocs > 1 ? "run" : "process");
	if (t->wall)
		fprintf(t->out, "; running %.1f%%, waiting %.1f%%",
			wp_pct(c->samples - c->waiting, c->samples), wp_pct(c->waiting, c->samples));
	fputc('\n', t->out);
	if (t->wall)
		time_budget(t, c->proc, c->tid);
	else
		unseen_line(t, c->proc, c->tid);
	struct wp_tally tally;
	struct of_tid arg = { t->r, c->key };
	if (wp_tally(t->r, of_thread, &arg, &tally) != 0)
		return -1;
	size_t n;
	uint32_t *ids = wp_funcs_ranked(t->r, &tally, WP_RANK_SELF, &n);
	if (!ids) {
		wp_tally_free(&tally);
		return -1;
	}
	int nw = (int)strlen(wp_num(c->samples)), fw = 8, sw = 8;
	for (size_t i = 0; i < n && i < THREAD_FUNCS; i++) {
		const struct wp_func *f = &t->r->funcs[ids[i]];
		int l1 = (int)strlen(f->name), l2 = (int)strlen(source_of(f->file, f->line, b2,
								      sizeof(b2)));
		fw = l1 > fw ? l1 : fw;
		sw = l2 > sw ? l2 : sw;
	}
	sw = sw > 24 ? 24 : sw;
	int room = WIDTH - (4 + 6 + 2 + nw + 2 + 2 + sw + 2) - 14;
	fw = fw > room ? room : fw;
	for (size_t i = 0; i < n && i < THREAD_FUNCS; i++) {
		const struct wp_func *f = &t->r->funcs[ids[i]];
		const char *src = fit_tail(source_of(f->file, f->line, b2, sizeof(b2)), sw, b3,
					   sizeof(b3));
		uint64_t self = tally.self[ids[i]];
		fprintf(t->out, "    %5.1f%%  %*s  %-*s  %-*s  %s\n", wp_pct(self, c->samples),
			nw, wp_num(self), fw, fit_tail(f->name, fw, b1, sizeof(b1)), sw, src,
			fit_head(f->module, 14, b4, sizeof(b4)));
	}
	if (n > THREAD_FUNCS)
		fprintf(t->out, "    %s more function%s\n", wp_num(n - THREAD_FUNCS),
			n - THREAD_FUNCS == 1 ? "" : "s");
	free(ids);
	wp_tally_free(&tally);
	return 0;
}

/* The threads of process `pid` (every thread when pid < 0), most sampled first, at most
 * `limit`; the rest summed up, by name. */
static void threads_of(struct text *t, struct tcount *tc, long pid, size_t limit, uint64_t all)
{
	struct tcount *c, *tmp, *only = NULL;
	size_t shown = 0, mine = 0;
	uint64_t rest = 0;
	HASH_ITER(hh, tc, c, tmp) {
		if (pid >= 0 && c->pid == pid && !mine++)
			only = c;
	}
	if (pid >= 0 && mine == 1) { /* its functions are the process's, just above */
		const struct wp_thread *th = wp_resolved_thread_of(t->r, only->proc, only->tid);
		fprintf(t->out, "    (one thread sampled: %s, tid %u%s)\n",
			th && th->name && *th->name ? th->name : "?", only->tid,
			!t->wall ? "" : only->waiting * 2 > only->samples ? ", mostly waiting"
									    : ", mostly running");
		return;
	}
	HASH_ITER(hh, tc, c, tmp) {
		if (pid >= 0 && c->pid != pid)
			continue;
		if (shown++ >= limit) {
			rest += c->samples;
			continue;
		}
		if (thread_section(t, c, all) != 0)
			break;
	}
	if (shown > limit) {
		fprintf(t->out, "\n(%s more threads with %s samples, %.1f%%; --thread=NAME|TID shows "
				"one)\n", wp_num(shown - limit), wp_num(rest), wp_pct(rest, all));
		if (pid < 0)
			hidden_by_name(t, tc, limit);
	}
}


static int by_u64_desc(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? 1 : x > y ? -1 : 0;
}

/* Over several processes: a section per process (the first image of each pid, in the order
 * they started) with its threads within; the MAX_PROCS most sampled (all with --process),
 * the rest summed up. */
static void process_sections(struct text *t, struct tcount *tc, size_t limit, uint64_t all,
			     size_t nthreads)
{
	const struct wp_resolved *r = t->r;
	size_t np = 0;
	uint64_t *per = calloc(r->nprocs, sizeof(*per)), *sorted = calloc(r->nprocs, sizeof(*per));
	size_t *head = calloc(r->nprocs, sizeof(*head)); /* each image's pid's first image */
	char *first = calloc(r->nprocs, 1);
	if (!per || !sorted || !head || !first)
		goto done;
	for (size_t k = 0; k < r->nprocs; k++) {
		size_t j = 0;
		while (j < k && pid_of(r, (uint32_t)j) != pid_of(r, (uint32_t)k))
			j++;
		head[k] = j;
		first[k] = j == k;
		np += j == k;
	}
	for (size_t i = 0; i < r->nstacks; i++) /* samples per pid, on its first image */
		per[head[r->stacks[i].proc]] += r->stacks[i].count;
	size_t ns = 0;
	for (size_t k = 0; k < r->nprocs; k++)
		if (first[k])
			sorted[ns++] = per[k];
	qsort(sorted, ns, sizeof(*sorted), by_u64_desc);
	size_t cap = r->filter.process ? SIZE_MAX : MAX_PROCS;
	uint64_t floor = ns > cap ? sorted[cap - 1] : 0;
	banner(t, "PROCESSES (%zu) AND THEIR THREADS (%zu with samples)", np, nthreads);
	size_t shown = 0, rest = 0;
	uint64_t rest_samples = 0;
	for (size_t k = 0; k < r->nprocs; k++) {
		if (!first[k])
			continue; /* an earlier image of this pid has the section */
		if (ns > cap && (per[k] < floor || shown >= cap || !per[k])) {
			rest++;
			rest_samples += per[k];
			continue;
		}
		shown++;
		process_head(t, k);
		threads_of(t, tc, pid_of(r, (uint32_t)k), limit, all);
	}
	if (rest)
		fprintf(t->out, "\n(%s more process%s with %s samples, %.1f%%; --process=PID|NAME "
				"shows one)\n", wp_num(rest), rest == 1 ? "" : "es",
			wp_num(rest_samples), wp_pct(rest_samples, t->total));
done:
	free(per);
	free(sorted);
	free(head);
	free(first);
}

/* The threads with no section in `tc` (no sample) that ran unseen (summary.h) say so, one
 * line each under their name. */
static void unseen_unsampled(struct text *t, struct tcount *tc)
{
	const struct wp_resolved *r = t->r;
	for (size_t i = 0; i < r->nthreads; i++) {
		const struct wp_thread *th = r->threads[i];
		uint64_t key = thread_key(r, r->thread_procs[i], th->tid), ns;
		double share;
		const char *why;
		struct tcount *c = NULL;
		HASH_FIND(hh, tc, &key, sizeof(key), c);
		if (c || !wp_thread_unseen(r, r->thread_procs[i], th->tid, &ns, &share, &why))
			continue;
		fprintf(t->out, "\n%s (tid %u%s): no samples\n", th->name && *th->name ? th->name : "?",
			th->tid, th->flags & WP_THREAD_EXITED ? ", exited" : "");
		unseen_line(t, r->thread_procs[i], th->tid);
	}
}

/* Per thread; over several processes, per process (the images of one pid are one process,
 * in the order they started) with its threads within. */
static void thread_sections(struct text *t)
{
	const struct wp_resolved *r = t->r;
	struct tcount *tc = NULL, *c, *tmp;
	size_t nthreads = 0;
	for (size_t i = 0; i < r->nstacks; i++) {
		const struct wp_rstack *s = &r->stacks[i];
		if (!s->count)
			continue;
		uint64_t key = thread_key(r, s->proc, s->tid);
		HASH_FIND(hh, tc, &key, sizeof(key), c);
		if (!c) {
			c = calloc(1, sizeof(*c));
			if (!c)
				break;
			c->key = key;
			c->tid = s->tid;
			c->proc = s->proc;
			c->pid = pid_of(r, s->proc);
			HASH_ADD(hh, tc, key, sizeof(c->key), c);
			nthreads++;
		}
		c->samples += s->count;
		if (s->flags & WP_STACK_WAITING)
			c->waiting += s->count;
	}
	HASH_SORT(tc, by_samples);
	uint64_t all = t->s->samples_all;
	size_t idle = 0, limit = r->filter.thread ? SIZE_MAX : MAX_THREADS;
	for (size_t i = 0; i < r->nthreads; i++) {
		uint64_t key = thread_key(r, r->thread_procs[i], r->threads[i]->tid);
		HASH_FIND(hh, tc, &key, sizeof(key), c);
		idle += !c;
	}
	if (r->nprocs > 1) {
		process_sections(t, tc, limit, all, nthreads);
	} else {
		banner(t, "THREADS (%zu with samples, most sampled first)", nthreads);
		threads_of(t, tc, -1, limit, all);
	}
	if (idle)
		fprintf(t->out, "\n(%s thread%s seen but never sampled)\n", wp_num(idle),
			idle == 1 ? "" : "s");
	unseen_unsampled(t, tc);
	HASH_ITER(hh, tc, c, tmp) {
		HASH_DEL(tc, c);
		free(c);
	}
}

/* ---------------------------------------------------------------------------------------- */

int wp_report_text(const struct wp_opts *o, const struct wp_resolved *r,
		   const struct wp_summary *s, FILE *out)
{
	struct text t = { o, r->p, r, s, out, !s->cpu_mode, s->samples };
	if ((pids = calloc(r->nprocs ? r->nprocs : 1, sizeof(*pids)))) {
		for (size_t k = 0; k < r->nprocs; k++)
			pids[k] = wp_resolved_pid(r, (uint32_t)k);
		pids_of = r;
	}
	header(&t);
	stats(&t);
	if (!t.total) {
		fprintf(out, "\nNo samples%s. The program may have ended before the first tick "
			     "(raise --hz), blocked the\nsampling signal, or replaced its environment "
			     "before the agent started.\n",
			r->filter.thread ? " in this thread" : "");
		unseen_unsampled(&t, NULL);
	} else {
		flat(&t);
		waits(&t);
		call_graph(&t);
		thread_sections(&t);
	}
	free(pids);
	pids = NULL;
	pids_of = NULL;
	return ferror(out) ? -1 : 0;
}
