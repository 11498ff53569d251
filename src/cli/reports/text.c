/* SPDX-License-Identifier: MIT */
/* The text report: what ran and how well it was sampled, a flat profile with confidence
 * intervals and file:line, a call graph of the hottest functions, and one section per thread
 * (text_threads.c).
 * Counts are the model's (filtered by --thread when it was built: per thread and process
 * model/tally.h, the call graph model/callgraph.h, who waited and held model/rwaits.h),
 * figures the summary's (model/summary.h); this file only lays them out. Lines stay within
 * 100 columns. */
#include <assert.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "callgraph.h"
#include "cli.h"
#include "procinfo.h"
#include "rwaits.h"
#include "tally.h"
#include "text.h"
#include "textfmt.h"

static const char rule[] =
	"================================================================================";
const char wp_text_dashes[] =
	"----------------------------------------------------------------------------------------";

/* ---------------------------------------------------------------------------------------- */
/* Formatting */

static const char *base_name(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;
	return s ? s + 1 : path;
}

const char *wp_text_source(const char *file, int line, char *buf, size_t cap)
{
	if (!file)
		return "-";
	if (line > 0)
		snprintf(buf, cap, "%s:%d", base_name(file), line);
	else
		snprintf(buf, cap, "%s", base_name(file));
	return buf;
}

/* Prints `len` bytes of `s` after `prefix`, wrapped, continuation lines under the text. */
static void wrapped(FILE *out, const char *prefix, const char *s, int len)
{
	wp_wrap(out, prefix, (int)strlen(prefix), s, len, WIDTH);
}

void wp_text_banner(struct text *t, const char *fmt, ...)
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
		wp_fit_head(line, WIDTH - 60, b, sizeof(b)));
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

/* What the agent said while it ran, in every process of the report, each warning once (its
 * profile keeps it; the program's stderr never had it under the command, nor with
 * WALLPROF_QUIET=1). With several processes, the first that said it is named. */
static void agent_said(struct text *t)
{
	const struct wp_resolved *r = t->r;
	struct wp_agent_msg *m;
	uint64_t dropped;
	size_t n = wp_agent_messages(r->procs, r->nprocs, &m, &dropped);
	for (size_t i = 0; i < n; i++) {
		char line[1024], name[256], more[48] = "";
		if (m[i].more)
			snprintf(more, sizeof(more), " and %zu other%s", m[i].more,
				 m[i].more == 1 ? "" : "s");
		if (r->nprocs > 1)
			snprintf(line, sizeof(line), "pid %ld (%s)%s: %s",
				 wp_resolved_pid(r, (uint32_t)m[i].proc),
				 wp_resolved_program(r, (uint32_t)m[i].proc, name, sizeof(name)), more,
				 m[i].text);
		else
			snprintf(line, sizeof(line), "%s", m[i].text);
		wrapped(t->out, "[AGENT]   ", line, (int)strlen(line));
	}
	if (dropped)
		fprintf(t->out, "[AGENT]   and %llu more warning%s (the agent keeps 16 a process)\n",
			(unsigned long long)dropped, dropped == 1 ? "" : "s");
	free(m);
}

static void header(struct text *t)
{
	const struct wp_profile *p = t->p;
	const struct wp_summary *s = t->s;
	const char *cmd = p->info.command;
	const char *mode = p->info.mode;
	char ex[128], b[160];
	uint64_t duration = s->duration_ns, user = s->cpu_user_ns, sys = s->cpu_sys_ns;
	uint64_t hz = s->hz, ticks = s->ticks, late = s->ticks_late;

	fprintf(t->out, "%s\n%*sWALLPROF PROFILE\n%s\n", rule, 32, "", rule);
	exit_line(t, ex, sizeof(ex));
	fprintf(t->out, "[RUN]     %s\n", cmd && *cmd ? wp_fit_head(cmd, WIDTH - 10, b, sizeof(b))
						 : "(command unknown)");
	uint64_t pid = t->p->info.pid > 0 ? (uint64_t)t->p->info.pid : 0;
	if (pid || *ex) {
		fprintf(t->out, "[RUN]     ");
		if (pid)
			fprintf(t->out, "pid %llu%s", (unsigned long long)pid, *ex ? ", " : "");
		fprintf(t->out, "%s\n", ex);
	}
	/* the outside sampler's files (docs/design.md, "The outside sampler") */
	if (wp_profile_meta(p, "attached"))
		fprintf(t->out, "[RUN]     attached to it while it ran (wallprof --pid): sampled from "
				"outside, then left running\n");
	else if (wp_profile_meta(p, "static"))
		fprintf(t->out, "[RUN]     statically linked: sampled from outside from its first "
				"instruction\n");
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
		long long per = p->info.threads_per_tick;
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
	agent_said(t);
	const char *w = wp_symbolizer_warnings(t->r->sym);
	while (w && *w) {
		const char *nl = strchr(w, '\n');
		int len = nl ? (int)(nl - w) : (int)strlen(w);
		wrapped(t->out, "[WARNING] ", w, len);
		w += len + (nl ? 1 : 0);
	}
	if (s->jit_hint[0])
		wrapped(t->out, "[WARNING] ", s->jit_hint, (int)strlen(s->jit_hint));
}

static void stats(struct text *t)
{
	const struct wp_summary *s = t->s;
	uint64_t duration = s->duration_ns, sampler = s->sampler_cpu_ns, truncated = s->truncated;

	fprintf(t->out, "\n[STATS]   samples: %s", wp_num(t->total));
	assert(s->waiting <= t->total); /* running is what is left */
	if (t->wall)
		fprintf(t->out, " (%s running, %s waiting)", wp_num(t->total - s->waiting),
			wp_num(s->waiting));
	fprintf(t->out, " from %s thread%s; %s unique stacks\n", wp_num(s->threads),
		s->threads == 1 ? "" : "s", wp_num(s->stacks));
	if (t->wall && s->waiting_cpu) /* waiting for a CPU is waiting (rwaits.h): say so */
		fprintf(t->out, "          waiting: %s of them for a CPU (runnable, not on one), "
			"here as in every section\n", wp_num(s->waiting_cpu));

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

	const struct wp_profile_info *in = &t->p->info;
	uint64_t wn = in->window_n;
	if (wn)
		fprintf(t->out, "[STATS]   thread suspension per sample: p50 %s, p99 %s, max %s "
				"(%s suspensions)\n",
			wp_dur(in->window_p50_ns), wp_dur(in->window_p99_ns),
			wp_dur(in->window_max_ns), wp_num(wn));
	if (duration && in->has_sampler_cpu)
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

/* "  pid N" of the process with most of function f's self samples (its total samples with
 * `total`), "+" when others had some too (the PROCESSES section splits them). */
static void main_process(const struct wp_resolved *r, uint32_t f, int total, char *buf,
			 size_t cap)
{
	int several;
	long pid = wp_func_main_pid(r, f, total, &several);
	snprintf(buf, cap, "  pid %ld%s", pid, several ? "+" : "");
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

	wp_text_banner(t, "FLAT PROFILE (top %zu of %zu functions, by self time)", shown, n);
	/* Columns: self% | 95% CI | samples | total% | function | source:line | module */
	struct cols c = { 8, 11, 6, 7 };
	c.samples = (int)strlen(wp_num(r->total));
	if (c.samples < 7)
		c.samples = 7;
	for (size_t i = 0; i < shown; i++) {
		const struct wp_func *f = &r->funcs[ids[i]];
		int fl = (int)strlen(f->name), ml = (int)strlen(f->module);
		int sl = (int)strlen(wp_text_source(f->file, f->line, b1, sizeof(b1)));
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
	fprintf(t->out, "  %.6s  %.11s  %.*s  %.6s  %.*s  %.*s  %.*s%s\n", wp_text_dashes, wp_text_dashes, c.samples,
		wp_text_dashes, wp_text_dashes, c.func, wp_text_dashes, c.src, wp_text_dashes, c.mod, wp_text_dashes,
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
			c.func, wp_fit_name(f->name, c.func, b1, sizeof(b1)), c.src,
			wp_fit_name(wp_text_source(f->file, f->line, b2, sizeof(b2)), c.src, b3, sizeof(b3)),
			procs ? c.mod : 0, wp_fit_head(f->module, c.mod, b4, sizeof(b4)), pc);
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
	fprintf(t->out, "  %.6s  %11s  %.*s\n", wp_text_dashes, "", c.samples, wp_text_dashes);
	fprintf(t->out, "  %5.1f%%  %-11s  %*s  %6s  %s functions with samples, %s as leaf\n",
		r->total ? 100.0 : 0.0, "", c.samples, wp_num(r->total), "", wp_num(withtotal), wp_num(n));
	free(ids);
}

/* ---------------------------------------------------------------------------------------- */
/* Waits (wall mode): what the waiting samples waited in, per kind, then per object */

#define WAIT_OBJECTS 20   /* objects listed */

/* One wait object as the section shows it: the model's totals and who waited and held. */
struct wait_obj {
	const struct wp_wait_total *tot;
	const struct wp_wait_people *who;
};

/* "holder tid=12 97% in compute (main.c:40), ...", most samples first */
static void put_holders(struct text *t, const struct wait_obj *o, char *buf, size_t cap)
{
	const struct wp_wait_people *w = o->who;
	size_t at = 0;
	buf[0] = 0;
	for (int i = 0; i < WP_WAIT_NAMES && w->holders[i].key && at < cap; i++) {
		const struct wp_wait_holder *h = &w->holders[i];
		uint32_t proc = (uint32_t)((h->key - 1) >> 32), tid = (uint32_t)(h->key - 1);
		const struct wp_thread *th = wp_resolved_thread_of(t->r, proc, tid);
		at += (size_t)snprintf(buf + at, cap - at, "%s%s tid=%u %.0f%%", i ? ", " : "",
				       th && th->name && *th->name ? th->name : "?", tid,
				       wp_pct(h->n, o->tot->count));
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

static void put_tids(struct text *t, const uint64_t *tids, const uint64_t *tn, int more,
		     uint64_t of, char *buf, size_t cap)
{
	size_t at = 0;
	buf[0] = 0;
	for (int i = 0; i < WP_WAIT_NAMES && tids[i] && at < cap; i++) {
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
static void put_wait_obj(struct text *t, const struct wait_obj *o)
{
	const struct wp_wait_total *tot = o->tot;
	const struct wp_wait_people *w = o->who;
	char b1[1024], b2[1024];
	fprintf(t->out, "  %5.1f%%  %10s  %-9s  %s\n", wp_pct(tot->count, t->total),
		wp_dur(tot->weight_ns), wp_wait_kind_name(tot->kind), tot->object);
	put_tids(t, w->tids, w->tid_n, w->more_tids, tot->count, b1, sizeof(b1));
	fprintf(t->out, "  %30s  waiting: %s\n", "", b1);
	size_t at = 0;
	b2[0] = 0;
	for (int i = 0; i < WP_WAIT_NAMES && w->funcs[i] && at < sizeof(b2); i++)
		at += (size_t)snprintf(b2 + at, sizeof(b2) - at, "%s%s %.0f%%", i ? ", " : "",
				       w->funcs[i], wp_pct(w->func_n[i], tot->count));
	if (w->more_funcs && at < sizeof(b2))
		snprintf(b2 + at, sizeof(b2) - at, ", ...");
	if (strlen(b2) > WIDTH - 38) /* long C++ names: the line stays in WIDTH */
		snprintf(b2 + WIDTH - 41, sizeof(b2) - (WIDTH - 41), "...");
	if (*b2)
		fprintf(t->out, "  %30s  in: %s\n", "", b2);
	if (w->holder_known) {
		put_holders(t, o, b2, sizeof(b2));
		fprintf(t->out, "  %30s  held by: %s\n", "", b2);
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
	struct wp_wait_people *who = wp_wait_people(r, of, nobjs);
	uint64_t per_kind[WP_WAIT__N], kind_ns[WP_WAIT__N];
	if (!who) {
		fprintf(stderr, "wallprof: out of memory\n");
		goto done;
	}
	uint64_t known = wp_wait_kind_totals(tot, nobjs, per_kind, kind_ns);
	wp_text_banner(t, "WAITS (what waiting samples waited in: %s of %s)", wp_num(known),
	       wp_num(wp_waiting_samples(r)));
	fprintf(t->out, "  %6s  %10s  %9s  %s\n", "share", "time", "samples", "kind");
	for (int k = 0; k < WP_WAIT__N; k++)
		if (per_kind[k])
			fprintf(t->out, "  %5.1f%%  %10s  %9s  %s\n", wp_pct(per_kind[k], t->total),
				wp_dur(kind_ns[k]), wp_num(per_kind[k]),
				wp_wait_kind_name((enum wp_wait_kind)k));
	fprintf(t->out, "\n  %6s  %10s  %-9s  %s\n", "share", "time", "kind", "object: waiting threads");
	for (size_t i = 0; i < nobjs && i < WAIT_OBJECTS; i++)
		put_wait_obj(t, &(struct wait_obj){ &tot[i], &who[i] });
	if (nobjs > WAIT_OBJECTS)
		fprintf(t->out, "  (%zu more objects)\n", nobjs - WAIT_OBJECTS);
done:
	free(who);
	free(of);
	free(tot);
}

/* ---------------------------------------------------------------------------------------- */
/* Call graph */

/* One "callers:" or "callees:" list (the model's, ranked); WP_NO_FUNC is printed as
 * `nofunc` ((self) or (root)). */
static void print_links(struct text *t, uint32_t of, const char *label, const struct wp_call *l,
			size_t n, int callees, const char *nofunc)
{
	char b[512];
	int nw = (int)strlen(wp_num(t->total));
	int fw = WIDTH - (6 + 11 + 7 + 2 + nw + 2);
	if (!n)
		fprintf(t->out, "      %-11s(none)\n", label);
	for (size_t i = 0; i < n && i < GRAPH_EDGES; i++) {
		uint32_t other = callees ? l[i].to : l[i].from;
		const struct wp_func *f = other == WP_NO_FUNC ? NULL : &t->r->funcs[other];
		const char *name = f ? f->name : nofunc;
		char named[512];
		if (f && !strcmp(f->name, t->r->funcs[of].name) && other != of) {
			/* same name, another function: say which (clock_gettime in libc / vdso) */
			snprintf(named, sizeof(named), "%s in %s", f->name, f->module);
			name = named;
		}
		fprintf(t->out, "      %-11s%6.1f%%  %*s  %s\n", i ? "" : label,
			wp_pct(l[i].count, t->total), nw, wp_num(l[i].count), wp_fit_name(name, fw, b, sizeof(b)));
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
	struct wp_callgraph g;
	if (wp_callgraph_build(r, &g) != 0)
		return;
	uint32_t pick[GRAPH_FUNCS];
	long npick = wp_callgraph_pick(r, &g, pick, GRAPH_FUNCS);
	if (npick <= 0)
		goto done;
	wp_text_banner(t, "CALL GRAPH (the %ld hottest functions by total time)", npick);
	fprintf(t->out, "For each function: who called it and what it called, with the share of "
			"all samples\nthat went through each call; (self) is time in its own code.\n");
	char b1[512], b2[256], b3[256];
	for (long k = 0; k < npick; k++) {
		uint32_t id = pick[k];
		const struct wp_func *f = &r->funcs[id];
		const char *src = wp_text_source(f->file, f->line, b2, sizeof(b2));
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
		fprintf(t->out, "\n[%ld] %s  %.1f%% total, %.1f%% self  (%s, %s%s)\n", k + 1,
			wp_fit_name(f->name, fw, b1, sizeof(b1)), wp_pct(f->total, t->total),
			wp_pct(f->self, t->total), wp_fit_name(src, sw, b3, sizeof(b3)), f->module, pc);
		for (int callees = 0; callees < 2; callees++) {
			size_t nl;
			struct wp_call *l = wp_callgraph_links(r, &g, id, callees, &nl);
			if (!l)
				break;
			print_links(t, id, callees ? "callees:" : "callers:", l, nl, callees,
				    callees ? "(self)" : "(thread root)");
			free(l);
		}
	}
done:
	wp_callgraph_free(&g);
}

/* ---------------------------------------------------------------------------------------- */

int wp_report_text(const struct wp_opts *o, const struct wp_resolved *r,
		   const struct wp_summary *s, FILE *out)
{
	struct text t = { o, r->p, r, s, out, !s->cpu_mode, s->samples };
	header(&t);
	stats(&t);
	wp_text_deadlocks(r, out);
	if (!t.total) {
		fprintf(out, "\nNo samples%s. The program may have ended before the first tick "
			     "(raise --hz), blocked the\nsampling signal, or replaced its environment "
			     "before the agent started.\n",
			r->filter.thread ? " in this thread" : "");
		wp_text_unseen_unsampled(&t, NULL, 0);
	} else {
		flat(&t);
		waits(&t);
		call_graph(&t);
		wp_text_threads(&t);
	}
	return ferror(out) ? -1 : 0;
}
