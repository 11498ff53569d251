/* SPDX-License-Identifier: MIT */
/* --compare BEFORE AFTER: which functions take a bigger or smaller share of the samples after a
 * change, separating real changes from sampling noise; or, with --flame-graph, a differential
 * flame graph (widths: AFTER; red: more than before, blue: less).
 *
 * The two profiles come from different runs (different addresses under ASLR, maybe a rebuilt
 * binary), so each is symbolized on its own and functions are matched by name and module
 * basename. A function's shares are its self samples (it was the leaf) and its total samples
 * (anywhere in the stack) over all samples of that profile. Self pinpoints code that changed;
 * total also catches a function whose time moved into callees it shares with others.
 *
 * Significance: a two-proportion z-test per share, before (k1 of n1) against after (k2 of n2):
 * p = (k1+k2)/(n1+n2), z = (k2/n2 - k1/n1) / sqrt(p(1-p)(1/n1 + 1/n2)). With many functions
 * tested at once some would pass a plain 95% test by chance, so the threshold is Bonferroni-
 * corrected: |z| > z(1 - 0.05/(2m)) for m tests (two per function), which keeps the chance of
 * listing any pure-noise change at 5%. A function is listed by its self change when that is
 * significant, else by its total change. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "uthash_cfg.h"

#include "alloc.h"
#include "cli.h"
#include "procinfo.h"
#include "flame.h"
#include "textfmt.h"

#define LISTED 25   /* rows per section at most */
#define NOISE_ROWS 5

struct side {
	const char *path;
	struct wp_run run;      /* the run's processes and profiles: a main file's siblings, a
				 * directory's (wp_run_load) */
	const struct wp_profile **ps; /* their profiles, in the run's order */
	struct wp_profile *p;   /* the first (the root, by start) */
	struct wp_resolved *r;  /* filtered by the options, over every process of the run */
	struct wp_summary s;    /* its figures: units, what one sample stands for */
	uint64_t total;         /* samples kept */
};

struct entry {
	UT_hash_handle hh;
	const char *name, *module;
	uint64_t self[2], total[2];   /* samples */
	double sp[2], tp[2];          /* self / total shares in percent */
	double zs, zt;                /* z of the self / total change */
	int by_total;                 /* listed by its total change */
	int twin;                     /* another entry has the same name */
	double delta;                 /* points, of the share it is listed by */
	char key[];
};

static const char rule[] =
	"================================================================================";
static const char dashes[] =
	"----------------------------------------------------------------------------------------------------";

static const char *secs(uint64_t ns)
{
	static char bufs[8][32];
	static int at;
	char *b = bufs[at++ & 7];
	if (ns < 10000000)
		snprintf(b, 32, "%.1fms", (double)ns / 1e6);
	else if (ns < 1000000000)
		snprintf(b, 32, "%.0fms", (double)ns / 1e6);
	else
		snprintf(b, 32, "%.2fs", (double)ns / 1e9);
	return b;
}

/* `s` cut to `w` columns in its middle: a wait object or a "[wait ...]" frame, whose start
 * says what it is and whose end tells two of a kind apart (the thread seen on a pipe's other
 * end); its parentheses are words, not a parameter list. */
static const char *fit_middle(const char *s, int w, char *buf, size_t cap)
{
	size_t n = strlen(s);
	if ((int)n <= w || w <= 3)
		return s;
	int tail = (w - 3) / 3, head = w - 3 - tail;
	snprintf(buf, cap, "%.*s...%s", head, s, s + n - (size_t)tail);
	return buf;
}

/* Fits a function name into `w` columns: textfmt.h's wp_fit_name, the one shortening of C++
 * names (the text report's and the live view's too); a report's own frame ("[wait ...]") is
 * cut in its middle (fit_middle). */
static const char *fit(const char *s, int w, char *buf, size_t cap)
{
	if (wp_name_is_pseudo(s))
		return fit_middle(s, w, buf, cap);
	return wp_fit_name(s, w, buf, cap);
}

/* A path in `w` columns: its end, which names the file. */
static const char *fit_path(const char *s, int w, char *buf, size_t cap)
{
	size_t n = strlen(s);
	if ((int)n <= w || w <= 3)
		return s;
	snprintf(buf, cap, "...%s", s + n - (size_t)(w - 3));
	return buf;
}

/* A side: a run (its main file and the files beside it of the same run, or a directory),
 * or with --single-file the file alone. */
static int load(const struct wp_opts *o, struct side *s)
{
	if (wp_run_load(s->path, o->single_file, &s->run) != 0)
		return -1;
	s->ps = wp_xcalloc(s->run.n, sizeof(*s->ps));
	for (size_t i = 0; i < s->run.n; i++)
		s->ps[i] = s->run.procs[i].prof;
	s->p = s->run.procs[0].prof;
	struct wp_filter f = wp_opts_filter(o);
	/* only when asked: a pipe's inode or a child's pid differs from run to run, and its wait
	 * leaf would show as gone in one and new in the other */
	f.wait_leaves = o->wait_leaves > 0;
	s->r = wp_resolve_many(s->ps, s->run.n, &f);
	if (!s->r)
		return -1;
	wp_summarize(s->p, s->r, &s->s);
	s->total = s->r->total;
	const char *w = wp_symbolizer_warnings(s->r->sym);
	if (w && *w)
		fprintf(stderr, "wallprof: %s: %s", s->path, w);
	return 0;
}

static struct entry *collect(const struct wp_opts *o, struct side sides[2], size_t *n)
{
	struct entry *tab = NULL, *e;
	*n = 0;
	for (int k = 0; k < 2; k++) {
		const struct wp_resolved *r = sides[k].r;
		for (size_t i = 0; i < r->nfuncs; i++) {
			const struct wp_func *f = &r->funcs[i];
			if (!f->total)
				continue;
			size_t ln = strlen(f->name), lm = strlen(f->module);
			char key[2 * WP_MAX_NAME + 2];
			if (ln + lm + 2 > sizeof(key))
				continue;
			memcpy(key, f->name, ln + 1);
			memcpy(key + ln + 1, f->module, lm + 1);
			HASH_FIND(hh, tab, key, ln + lm + 2, e);
			if (!e) {
				e = calloc(1, sizeof(*e) + ln + lm + 2);
				if (!e)
					break;
				memcpy(e->key, key, ln + lm + 2);
				e->name = e->key;
				e->module = e->key + ln + 1;
				HASH_ADD(hh, tab, key, ln + lm + 2, e);
				(*n)++;
			}
			/* two functions of one profile may share name and module (static functions
			 * of different files): they are added up, as the other side cannot tell
			 * them apart either */
			e->self[k] += f->self;
			e->total[k] += f->total;
		}
	}
	return tab;
}

static int by_name(const void *a, const void *b)
{
	const struct entry *x = *(struct entry *const *)a, *y = *(struct entry *const *)b;
	return strcmp(x->name, y->name);
}

static int by_delta_up(const void *a, const void *b)
{
	const struct entry *x = *(struct entry *const *)a, *y = *(struct entry *const *)b;
	if (x->delta != y->delta)
		return x->delta > y->delta ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int by_delta_down(const void *a, const void *b)
{
	return -by_delta_up(a, b);
}

static int by_abs_delta(const void *a, const void *b)
{
	const struct entry *x = *(struct entry *const *)a, *y = *(struct entry *const *)b;
	if (fabs(x->delta) != fabs(y->delta))
		return fabs(x->delta) > fabs(y->delta) ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* The change tables: function | self before->after | total before->after | delta (of self or
 * total, whichever the function is listed by) | the time that share stands for. */
#define FW 28

static void table_head(FILE *out)
{
	fprintf(out, "  %-*s  %-15s  %-15s  %-13s  %s\n", FW, "function", "self %", "total %",
		"delta", "time (est.)");
	fprintf(out, "  %.*s\n", FW + 2 + 15 + 2 + 15 + 2 + 13 + 2 + 17, dashes);
}

static void table_row(FILE *out, const struct side sides[2], const struct entry *e, int note)
{
	char b[512], nm[512], sp[32], tp[32], d[32], tm[64];
	snprintf(sp, sizeof(sp), "%.1f->%.1f", e->sp[0], e->sp[1]);
	snprintf(tp, sizeof(tp), "%.1f->%.1f", e->tp[0], e->tp[1]);
	snprintf(d, sizeof(d), "%+.1f %s", e->delta, e->by_total ? "total" : "self");
	const uint64_t *c = e->by_total ? e->total : e->self;
	double ns0 = sides[0].s.ns_per_sample, ns1 = sides[1].s.ns_per_sample;
	if (ns0 > 0 && ns1 > 0)
		snprintf(tm, sizeof(tm), "%s->%s", secs((uint64_t)((double)c[0] * ns0)),
			 secs((uint64_t)((double)c[1] * ns1)));
	else
		snprintf(tm, sizeof(tm), "-");
	const char *name = e->name;
	if (e->twin) { /* another function of this name (in another module): say which */
		snprintf(nm, sizeof(nm), "%s (%s)", e->name, e->module);
		name = nm;
	}
	fprintf(out, "  %-*s  %-15s  %-15s  %-13s  %s%s\n", FW, fit(name, FW, b, sizeof(b)), sp,
		tp, d, tm,
		!note ? "" : !e->total[0] ? " (new)" : !e->total[1] ? " (gone)" : "");
}

static void section(FILE *out, const struct side sides[2], const char *title, struct entry **v,
		    size_t n)
{
	fprintf(out, "\n%s\n", title);
	if (!n) {
		fprintf(out, "  (none)\n");
		return;
	}
	table_head(out);
	for (size_t i = 0; i < n && i < LISTED; i++)
		table_row(out, sides, v[i], 1);
	if (n > LISTED)
		fprintf(out, "  (%zu more)\n", n - LISTED);
}

static void describe(FILE *out, const char *label, const struct side *s)
{
	const char *mode = s->p->info.mode;
	char what[160], b[512];
	char procs[48] = "";
	if (s->run.n > 1)
		snprintf(procs, sizeof(procs), " (%zu profiles of one run)", s->run.n);
	snprintf(what, sizeof(what), "%s samples%s, %s mode at %s Hz, %s", wp_num(s->total), procs,
		 mode ? mode : "wall", wp_num(s->p->info.hz),
		 secs(s->s.duration_ns));
	if (strlen(label) + strlen(s->path) + strlen(what) + 3 <= 100)
		fprintf(out, "%s %s: %s\n", label, s->path, what);
	else /* a long path: on its own line (its end, if need be) */
		fprintf(out, "%s %s\n%*s %s\n", label, fit_path(s->path, 90, b, sizeof(b)),
			(int)strlen(label), "", what);
}

static void change(FILE *out, const char *what, uint64_t a, uint64_t b)
{
	if (!a || !b)
		return;
	fprintf(out, "          %s %s -> %s (%+.1f%%)\n", what, secs(a), secs(b),
		100.0 * ((double)b - (double)a) / (double)a);
}

/* ---------------------------------------------------------------------------------------- */
/* Processes (matched by command line, not pid: pids differ from run to run) and wait
 * objects (matched by kind and object text): each one's share of its run's samples, before
 * and after, with the same test as functions (Bonferroni over the rows compared). */

struct group {
	UT_hash_handle hh;
	uint64_t n[2];       /* samples */
	uint64_t cpu[2];     /* processes: their CPU time, ns */
	size_t procs[2];     /* processes: profiles with this command line */
	double delta, z;
	char key[];          /* the command line; for a wait, the kind's letter then the object */
};

static struct group *group_get(struct group **tab, const char *key, size_t len, size_t *n)
{
	struct group *g;
	HASH_FIND(hh, *tab, key, len, g);
	if (g)
		return g;
	if (!(g = calloc(1, sizeof(*g) + len + 1)))
		return NULL;
	memcpy(g->key, key, len);
	HASH_ADD_KEYPTR(hh, *tab, g->key, len, g);
	(*n)++;
	return g;
}

static int by_group_delta(const void *a, const void *b)
{
	const struct group *x = *(struct group *const *)a, *y = *(struct group *const *)b;
	if (fabs(x->delta) != fabs(y->delta))
		return fabs(x->delta) > fabs(y->delta) ? -1 : 1;
	return strcmp(x->key, y->key);
}

/* The groups as an array sorted by the size of their change, shares and z filled in; NULL
 * when out of memory. */
static struct group **ranked(struct group *tab, size_t n, const struct side sides[2])
{
	struct group **v = calloc(n + 1, sizeof(*v)), *g, *tmp;
	size_t i = 0;
	if (!v)
		return NULL;
	HASH_ITER(hh, tab, g, tmp) {
		double a = sides[0].total ? 100.0 * (double)g->n[0] / (double)sides[0].total : 0;
		double b = sides[1].total ? 100.0 * (double)g->n[1] / (double)sides[1].total : 0;
		g->delta = b - a;
		g->z = wp_share_z(&sides[0].s, g->n[0], sides[0].total, &sides[1].s, g->n[1],
				  sides[1].total);
		v[i++] = g;
	}
	qsort(v, n, sizeof(*v), by_group_delta);
	return v;
}

static void groups_free(struct group *tab)
{
	struct group *g, *tmp;
	HASH_ITER(hh, tab, g, tmp) {
		HASH_DEL(tab, g);
		free(g);
	}
}

static double pct(uint64_t k, uint64_t n)
{
	return n ? 100.0 * (double)k / (double)n : 0;
}

#define ROOT_KEY "\002" /* the key of a run's root: before any command line */

/* A profile's command line as its process showed it (its title, when it retitled itself:
 * procinfo.h) with the program's directory left out. */
static void short_command(const struct wp_profile *p, char *buf, size_t cap)
{
	char title[512];
	const char *cmd = wp_proc_command(p, title, sizeof(title));
	cmd = *cmd ? cmd : "(command unknown)";
	const char *sp = strchr(cmd, ' '), *w = cmd;
	for (const char *c = cmd; *c && (!sp || c < sp); c++)
		if (*c == '/')
			w = c + 1;
	snprintf(buf, cap, "%s", w);
}

/* A process's key: the command lines from its tree's root down to it, each without the
 * program's directory, joined by '\001' (so that keys sort in tree order). Fork children
 * keep their parent's command line: the path tells the root, its child and its grandchild
 * apart, where pids cannot (they differ from run to run). */
static size_t process_key(const struct wp_resolved *r, size_t j, char *buf, size_t cap)
{
	size_t chain[16], n = 0;
	for (long k = (long)j; k >= 0 && n < 16;) {
		size_t i = 0;
		while (i < n && chain[i] != (size_t)k)
			i++;
		if (i < n)
			break; /* a cycle of reused pids */
		chain[n++] = (size_t)k;
		k = wp_procs_parent(r->ids, r->nprocs, (size_t)k);
	}
	size_t at = 0;
	buf[0] = 0;
	while (n-- > 0 && at + 1 < cap) {
		char w[4096];
		/* the run's root (the first to start) is the command the user ran, whatever its
		 * arguments: it matches the other run's root, and so do the paths below it */
		if (chain[n] == 0)
			snprintf(w, sizeof(w), "%s", ROOT_KEY);
		else
			short_command(r->procs[chain[n]], w, sizeof(w));
		int l = snprintf(buf + at, cap - at, "%s%s", at ? "\001" : "", w);
		at = l < 0 ? at : at + (size_t)l >= cap ? cap - 1 : at + (size_t)l;
	}
	return at;
}

static int by_key(const void *a, const void *b)
{
	return strcmp((*(struct group *const *)a)->key, (*(struct group *const *)b)->key);
}

#define WITHIN_PROCS 5 /* processes whose own functions are compared */
#define WITHIN_FUNCS 3 /* functions listed for each */

/* Within each process that changed beyond noise and ran in both runs (the WITHIN_PROCS
 * largest changes): the functions whose share of that process's own samples (self) moved
 * most. `of[k][j]`: the group of side k's process j. Returns -1 when out of memory. */
static int within_processes(const struct side sides[2], struct group **of[2],
			    struct group **v, size_t nv, double zcrit, FILE *out)
{
	int said = 0;
	size_t done = 0;
	char key[2 * WP_MAX_NAME + 2], b[512];
	/* v is in tree order: take the largest changes first */
	struct group **order = malloc((nv + 1) * sizeof(*order));
	if (!order)
		return -1;
	memcpy(order, v, nv * sizeof(*order));
	qsort(order, nv, sizeof(*order), by_group_delta);
	for (size_t i = 0; i < nv && done < WITHIN_PROCS; i++) {
		const struct group *g = order[i];
		if (!(fabs(g->z) > zcrit) || !g->n[0] || !g->n[1])
			continue;
		done++;
		struct group *funcs = NULL, *f, *tmp;
		size_t nf = 0;
		for (int k = 0; k < 2; k++) {
			const struct wp_resolved *r = sides[k].r;
			for (size_t s = 0; s < r->nstacks; s++) {
				const struct wp_rstack *st = &r->stacks[s];
				if (of[k][st->proc] != g || !st->n)
					continue;
				const struct wp_func *fn = &r->funcs[st->frames[st->n - 1].func];
				int l = snprintf(key, sizeof(key), "%s%c%s", fn->name, 0, fn->module);
				size_t len = l < 0 ? 0 : (size_t)l >= sizeof(key) ? sizeof(key) - 1
										 : (size_t)l;
				if (!(f = group_get(&funcs, key, len, &nf))) {
					groups_free(funcs);
					free(order);
					return -1;
				}
				f->n[k] += st->count;
			}
		}
		struct group **fv = calloc(nf + 1, sizeof(*fv));
		size_t m = 0;
		if (!fv) {
			groups_free(funcs);
			free(order);
			return -1;
		}
		HASH_ITER(hh, funcs, f, tmp) {
			f->delta = pct(f->n[1], g->n[1]) - pct(f->n[0], g->n[0]);
			fv[m++] = f;
		}
		qsort(fv, m, sizeof(*fv), by_group_delta);
		if (!said++)
			fprintf(out, "\nWithin the processes that changed (self share of each one's own "
				     "samples, the largest moves):\n");
		/* the process by its path from the root: "bash -c ... > make > cc1" */
		char path[1024];
		size_t at = 0;
		for (const char *c = g->key; *c && at + 1 < sizeof(path);) {
			size_t l = strcspn(c, "\001");
			char w[4096];
			if (l == strlen(ROOT_KEY) && !strncmp(c, ROOT_KEY, l))
				short_command(sides[1].r->procs[0], w, sizeof(w));
			else
				snprintf(w, sizeof(w), "%.*s", (int)l, c);
			int wl = snprintf(path + at, sizeof(path) - at, "%s%.60s%s", at ? " > " : "", w,
					  strlen(w) > 60 ? "..." : "");
			at = wl < 0 ? at : at + (size_t)wl >= sizeof(path) ? sizeof(path) - 1
									   : at + (size_t)wl;
			c += l + (c[l] != 0);
		}
		if (at > 96)
			fprintf(out, "  ...%s\n", path + at - 93);
		else
			fprintf(out, "  %s\n", path);
		for (size_t j = 0; j < m && j < WITHIN_FUNCS; j++) {
			const char *fname = fv[j]->key, *mod = fname + strlen(fname) + 1;
			fprintf(out, "    %-40s  %-14.14s  %5.1f%% -> %5.1f%%  (%+.1f)\n",
				fit(fname, 40, b, sizeof(b)), mod, pct(fv[j]->n[0], g->n[0]),
				pct(fv[j]->n[1], g->n[1]), fv[j]->delta);
		}
		free(fv);
		groups_free(funcs);
	}
	free(order);
	return 0;
}

/* Per process, when either run has several: share of the samples and CPU time, before and
 * after, in tree order. Returns -1 when out of memory. */
static int process_changes(const struct side sides[2], FILE *out)
{
	if (sides[0].r->nprocs < 2 && sides[1].r->nprocs < 2)
		return 0;
	struct group *tab = NULL, **v = NULL, **of[2] = { NULL, NULL };
	size_t n = 0;
	for (int k = 0; k < 2; k++) {
		const struct wp_resolved *r = sides[k].r;
		if (!(of[k] = calloc(r->nprocs, sizeof(*of[k]))))
			goto oom;
		for (size_t j = 0; j < r->nprocs; j++) {
			char key[4096];
			size_t kl = process_key(r, j, key, sizeof(key));
			if (!(of[k][j] = group_get(&tab, key, kl, &n)))
				goto oom;
			of[k][j]->procs[k]++;
			of[k][j]->cpu[k] += wp_procs_own_cpu(r->ids, r->nprocs, j);
		}
		for (size_t i = 0; i < r->nstacks; i++)
			of[k][r->stacks[i].proc]->n[k] += r->stacks[i].count;
	}
	if (!(v = ranked(tab, n, sides)))
		goto oom;
	/* the LISTED largest changes, shown in tree order */
	size_t listed = n < LISTED ? n : LISTED;
	qsort(v, listed, sizeof(*v), by_key);
	double zcrit = wp_z_critical(0.05 / (double)(n ? n : 1));
	char b[512], line[600];
	fprintf(out, "\nProcesses (matched by command line, theirs and their parents' below the "
		     "root, which is\nthe command run; share of all samples of each run; * beyond "
		     "sampling noise at 95%%,\ncorrected for the %zu processes):\n", n);
	fprintf(out, "  %-34s  %-7s  %-13s  %-7s  %s\n", "command", "procs", "share %", "delta",
		"CPU time");
	fprintf(out, "  %.*s\n", 34 + 2 + 7 + 2 + 13 + 2 + 7 + 2 + 19, dashes);
	for (size_t i = 0; i < listed; i++) {
		const struct group *g = v[i];
		/* the last command of the path, indented by its depth; the root's is AFTER's */
		const char *last = strrchr(g->key, '\001');
		int depth = 0;
		for (const char *c = g->key; *c; c++)
			depth += *c == '\001';
		const char *shown = last ? last + 1 : g->key;
		char root[4096];
		if (!strcmp(shown, ROOT_KEY)) {
			short_command(sides[1].r->procs[0], root, sizeof(root));
			shown = root;
		}
		snprintf(line, sizeof(line), "%*s%.500s", 2 * (depth > 8 ? 8 : depth), "", shown);
		char pr[32], sh[32], d[32], cpu[64];
		snprintf(pr, sizeof(pr), "%zu->%zu", g->procs[0], g->procs[1]);
		snprintf(sh, sizeof(sh), "%.1f->%.1f", pct(g->n[0], sides[0].total),
			 pct(g->n[1], sides[1].total));
		snprintf(d, sizeof(d), "%+.1f%s", g->delta, fabs(g->z) > zcrit ? " *" : "");
		snprintf(cpu, sizeof(cpu), "%s->%s", secs(g->cpu[0]), secs(g->cpu[1]));
		/* a command line is told apart by its start: its end goes */
		if (strlen(line) > 34)
			snprintf(b, sizeof(b), "%.31s...", line);
		else
			snprintf(b, sizeof(b), "%s", line);
		fprintf(out, "  %-34s  %-7s  %-13s  %-7s  %s%s\n", b, pr,
			sh, d, cpu, !g->procs[0] ? " (new)" : !g->procs[1] ? " (gone)" : "");
	}
	if (n > LISTED)
		fprintf(out, "  (%zu more)\n", n - LISTED);
	if (within_processes(sides, of, v, listed, zcrit, out) != 0)
		goto oom;
	free(v);
	free(of[0]);
	free(of[1]);
	groups_free(tab);
	return 0;
oom:
	free(v);
	free(of[0]);
	free(of[1]);
	groups_free(tab);
	return -1;
}

/* Per wait object (wall mode): the share of all samples that waited in it, before and after:
 * "lock table_lock: 31.0% -> 4.0%". Returns -1 when out of memory. */
static int wait_changes(const struct side sides[2], FILE *out)
{
	struct group *tab = NULL;
	size_t n = 0;
	char key[1 + WP_WAIT_OBJECT_MAX];
	for (int k = 0; k < 2; k++) {
		size_t nt;
		struct wp_wait_total *tot = wp_wait_totals(sides[k].r, NULL, NULL, &nt, NULL);
		for (size_t i = 0; i < nt; i++) {
			int kl = snprintf(key, sizeof(key), "%c%s", 'a' + tot[i].kind, tot[i].object);
			size_t len = kl < 0 ? 0 : (size_t)kl >= sizeof(key) ? sizeof(key) - 1 : (size_t)kl;
			struct group *g = group_get(&tab, key, len, &n);
			if (!g) {
				free(tot);
				goto oom;
			}
			g->n[k] += tot[i].count;
		}
		free(tot);
	}
	if (!n)
		return 0;
	struct group **v = ranked(tab, n, sides);
	if (!v)
		goto oom;
	double zcrit = wp_z_critical(0.05 / (double)n);
	char b[512];
	fprintf(out, "\nWaits (share of all samples waiting in each object, matched by kind and "
		     "object;\n* beyond sampling noise at 95%%, corrected for the %zu objects):\n", n);
	for (size_t i = 0; i < n && i < LISTED; i++) {
		const struct group *g = v[i];
		fprintf(out, "  %-9s  %s: %.1f%% -> %.1f%%  (%+.1f points%s)%s\n",
			wp_wait_kind_name((enum wp_wait_kind)(g->key[0] - 'a')),
			fit_middle(g->key + 1, 48, b, sizeof(b)), pct(g->n[0], sides[0].total),
			pct(g->n[1], sides[1].total), g->delta, fabs(g->z) > zcrit ? " *" : "",
			!g->n[0] ? " (new)" : !g->n[1] ? " (gone)" : "");
	}
	if (n > LISTED)
		fprintf(out, "  (%zu more)\n", n - LISTED);
	free(v);
	groups_free(tab);
	return 0;
oom:
	groups_free(tab);
	return -1;
}

static int compare_text(const struct wp_opts *o, struct side sides[2], FILE *out)
{
	size_t n;
	struct entry *tab = collect(o, sides, &n), *e, *tmp;
	struct entry **better = wp_xcalloc(n + 1, sizeof(*better));
	struct entry **worse = wp_xcalloc(n + 1, sizeof(*worse));
	struct entry **noise = wp_xcalloc(n + 1, sizeof(*noise));
	size_t nb = 0, nw = 0, nn = 0;
	int rc = -1;
	/* names shared by functions of different modules, to say which is which */
	size_t all = 0;
	HASH_ITER(hh, tab, e, tmp) {
		noise[all++] = e;
	}
	qsort(noise, all, sizeof(*noise), by_name);
	for (size_t i = 1; i < all; i++)
		if (!strcmp(noise[i - 1]->name, noise[i]->name))
			noise[i - 1]->twin = noise[i]->twin = 1;
	const double n1 = (double)sides[0].total, n2 = (double)sides[1].total;
	const double zcrit = wp_z_critical(0.05 / (double)(2 * (n ? n : 1)));
	HASH_ITER(hh, tab, e, tmp) {
		for (int k = 0; k < 2; k++) {
			double whole = k ? n2 : n1;
			e->sp[k] = whole > 0 ? 100.0 * (double)e->self[k] / whole : 0;
			e->tp[k] = whole > 0 ? 100.0 * (double)e->total[k] / whole : 0;
		}
		e->zs = wp_share_z(&sides[0].s, e->self[0], sides[0].total, &sides[1].s, e->self[1],
				   sides[1].total);
		e->zt = wp_share_z(&sides[0].s, e->total[0], sides[0].total, &sides[1].s,
				   e->total[1], sides[1].total);
		e->by_total = !(fabs(e->zs) > zcrit) &&
			      (fabs(e->zt) > zcrit || fabs(e->zt) > fabs(e->zs));
		e->delta = e->by_total ? e->tp[1] - e->tp[0] : e->sp[1] - e->sp[0];
		if (fabs(e->zs) > zcrit || fabs(e->zt) > zcrit)
			*(e->delta < 0 ? &better[nb++] : &worse[nw++]) = e;
		else
			noise[nn++] = e;
	}
	qsort(better, nb, sizeof(*better), by_delta_down);
	qsort(worse, nw, sizeof(*worse), by_delta_up);
	qsort(noise, nn, sizeof(*noise), by_abs_delta);

	fprintf(out, "%s\n%*sDIFFERENTIAL PROFILE\n%s\n", rule, 30, "", rule);
	describe(out, "Before:", &sides[0]);
	describe(out, "After: ", &sides[1]);
	if (sides[0].r->filter.thread)
		fprintf(out, "Thread: %s only\n", sides[0].r->filter.thread);
	const char *m1 = sides[0].p->info.mode, *m2 = sides[1].p->info.mode;
	if (m1 && m2 && strcmp(m1, m2))
		fprintf(out, "[WARNING] the profiles were taken in different modes (%s, %s): their "
			     "shares measure different things\n", m1, m2);
	fprintf(out, "Shares are of all samples of each profile: self (the function's own code) and "
		     "total (with\nwhat it calls). A change is listed when a two-proportion test finds "
		     "it beyond sampling\nnoise at 95%% confidence, corrected for the %zu functions "
		     "compared.\n", n);
	if (!sides[0].total || !sides[1].total) {
		fprintf(out, "\n[WARNING] %s has no samples%s: nothing to compare\n",
			!sides[0].total ? sides[0].path : sides[1].path,
			sides[0].r->filter.thread ? " in this thread" : "");
		rc = ferror(out) ? -1 : 0;
		goto done;
	}
	if (process_changes(sides, out) != 0 || wait_changes(sides, out) != 0) {
		fprintf(stderr, "wallprof: out of memory\n");
		goto done;
	}
	section(out, sides, "Improved (faster):", better, nb);
	section(out, sides, "Regressed (slower):", worse, nw);

	fprintf(out, "\nNot significant (within sampling noise): %zu function%s", nn, nn == 1 ? "" : "s");
	size_t shown = 0;
	while (shown < nn && shown < NOISE_ROWS && fabs(noise[shown]->delta) >= 0.05)
		shown++;
	if (shown) {
		fprintf(out, "; the largest moves:\n");
		table_head(out);
		for (size_t i = 0; i < shown; i++)
			table_row(out, sides, noise[i], 0);
	} else {
		fputc('\n', out);
	}

	double down = 0, up = 0;
	for (size_t i = 0; i < nb; i++)
		down += better[i]->by_total ? 0 : better[i]->delta;
	for (size_t i = 0; i < nw; i++)
		up += worse[i]->by_total ? 0 : worse[i]->delta;
	fprintf(out, "\n[SUMMARY] %zu improved, %zu regressed, %zu within noise", nb, nw, nn);
	if (down < 0 || up > 0)
		fprintf(out, "; self time moved: %.1f%% of samples less, %.1f%% more", fabs(down), up);
	fputc('\n', out);
	const struct wp_summary *s0 = &sides[0].s, *s1 = &sides[1].s;
	change(out, "wall time", s0->duration_ns, s1->duration_ns);
	change(out, "CPU time ", s0->cpu_user_ns + s0->cpu_sys_ns, s1->cpu_user_ns + s1->cpu_sys_ns);
	if (n1 < 100 || n2 < 100)
		fprintf(out, "[WARNING] fewer than 100 samples in a profile: only large changes can "
			     "be told from noise; run longer or raise --hz\n");
	rc = ferror(out) ? -1 : 0;
done:
	HASH_ITER(hh, tab, e, tmp) {
		HASH_DEL(tab, e);
		free(e);
	}
	free(better);
	free(worse);
	free(noise);
	return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* Differential flame graph: stacks of both profiles merged by their path of names. */

struct path {
	UT_hash_handle hh;
	struct wp_flame_frame *frames;
	int nframes;
	uint64_t count[2];
	char key[];
};

static int add_path(struct path **tab, const struct wp_opts *o, const struct side *sd, int k,
		    const struct wp_rstack *s)
{
	static char key[1 << 18];
	size_t n = 0;
	const struct wp_thread *t = o->per_thread ? wp_resolved_thread_of(sd->r, s->proc, s->tid)
						  : NULL;
	/* per-process and per-thread roots by name only: pids and tids differ from run to run */
	char prog[256];
	const char *proot = o->per_process ? wp_resolved_program(sd->r, s->proc, prog,
								  sizeof(prog)) : NULL;
	const char *root = o->per_thread ? (t && t->name && *t->name ? t->name : "?") : NULL;
	if (proot)
		n += (size_t)snprintf(key, sizeof(key), "[%s]", proot) + 1;
	if (root)
		n += (size_t)snprintf(key + n, sizeof(key) - n, "[%s]", root) + 1;
	for (uint32_t j = 0; j < s->n && n < sizeof(key) - 1; j++) {
		const struct wp_func *f = &sd->r->funcs[s->frames[j].func];
		int w = snprintf(key + n, sizeof(key) - n, "%s", f->name);
		n += (size_t)w + 1;
	}
	if (n >= sizeof(key))
		n = sizeof(key) - 1;
	struct path *p;
	HASH_FIND(hh, *tab, key, n, p);
	if (!p) {
		p = calloc(1, sizeof(*p) + n);
		struct wp_flame_frame *f = calloc(s->n + 3, sizeof(*f));
		if (!p || !f) {
			free(p);
			free(f);
			return -1;
		}
		memcpy(p->key, key, n);
		/* names point into the key: "[root]\0name\0name\0" */
		const char *at = p->key;
		int nf = 0;
		for (int q = 0; q < !!proot + !!root; q++) {
			f[nf++] = (struct wp_flame_frame){ at, WP_KIND_THREAD };
			at += strlen(at) + 1;
		}
		for (uint32_t j = 0; j < s->n; j++) {
			f[nf++] = (struct wp_flame_frame){ at, sd->r->funcs[s->frames[j].func].kind };
			at += strlen(at) + 1;
		}
		p->frames = f;
		p->nframes = nf;
		HASH_ADD(hh, *tab, key, n, p);
	}
	p->count[k] += s->count;
	return 0;
}

static int compare_flame_graph(const struct wp_opts *o, struct side sides[2], FILE *out)
{
	struct path *tab = NULL, *p, *tmp;
	size_t n = 0;
	int rc = -1;
	for (int k = 0; k < 2; k++)
		for (size_t i = 0; i < sides[k].r->nstacks; i++) {
			const struct wp_rstack *s = &sides[k].r->stacks[i];
			if (!s->count || !s->n)
				continue;
			if (add_path(&tab, o, &sides[k], k, s) != 0)
				goto oom;
		}
	struct wp_flame_stack *st = calloc(HASH_COUNT(tab) + 1, sizeof(*st));
	if (!st)
		goto oom;
	/* BEFORE scaled to AFTER's sample count, so that colours show changes of share and not
	 * just a longer or shorter run */
	double scale = sides[0].total ? (double)sides[1].total / (double)sides[0].total : 1.0;
	HASH_ITER(hh, tab, p, tmp) {
		st[n++] = (struct wp_flame_stack){ p->frames, p->nframes, p->count[1],
						   (uint64_t)llround((double)p->count[0] * scale) };
	}
	char sub[1024];
	snprintf(sub, sizeof(sub), "%.300s (%s samples, scaled) -> %.300s (%s samples); red: more "
		 "than before, blue: less", sides[0].path, wp_num(sides[0].total), sides[1].path,
		 wp_num(sides[1].total));
	struct wp_flame_opts fo = { .title = "Differential flame graph (wallprof --compare)",
				    .subtitle = sub, .differential = 1 };
	int e = wp_flame_write(out, st, n, &fo);
	if (e)
		fprintf(stderr, "wallprof: could not write the flame graph: %s\n", strerror(-e));
	rc = e ? -1 : 0;
	free(st);
	goto done;
oom:
	fprintf(stderr, "wallprof: out of memory\n");
done:
	HASH_ITER(hh, tab, p, tmp) {
		HASH_DEL(tab, p);
		free(p->frames);
		free(p);
	}
	return rc;
}

int wp_compare(const struct wp_opts *o, const char *before, const char *after, FILE *out)
{
	struct side sides[2] = { { .path = before }, { .path = after } };
	int rc = 1, svg = o->flame_graph || o->format == WP_FMT_SVG;
	if (o->format_set && o->format != WP_FMT_TEXT && o->format != WP_FMT_SVG) {
		fprintf(stderr, "wallprof: --compare writes text, or an SVG with --flame-graph\n"
				"Try 'wallprof --help' for the options.\n");
		return 2;
	}
	if (svg && out == stdout && isatty(fileno(out))) {
		fprintf(stderr, "wallprof: an SVG on a terminal is not readable; redirect it: > "
				"diff.svg\n");
		return 2;
	}
	if (load(o, &sides[0]) != 0 || load(o, &sides[1]) != 0)
		goto done;
	if (svg)
		rc = compare_flame_graph(o, sides, out);
	else
		rc = compare_text(o, sides, out);
	if (fflush(out) != 0 || rc != 0) {
		if (ferror(out))
			fprintf(stderr, "wallprof: could not write the comparison: %s\n", strerror(errno));
		rc = 1;
	}
done:
	for (int k = 0; k < 2; k++) {
		wp_resolved_free(sides[k].r);
		free(sides[k].ps);
		wp_run_free(&sides[k].run);
	}
	return rc;
}
