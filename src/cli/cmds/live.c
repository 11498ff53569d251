/* --live: a full-screen terminal view of where the program's threads are, refreshed as it
 * runs, like top for stacks; then the usual final report.
 *
 * The program runs under the agent with WALLPROF_CHECKPOINT=1: once a second the agent
 * replaces the profile file (atomically, by rename) with everything sampled so far. This
 * process only watches that file (a stat every 200 ms), reads each new checkpoint, brings
 * the report's model up to date with it (model/resolve.h: wp_resolve_update) and counts every
 * stack's leaf function. The difference from the previous checkpoint is the LAST INTERVAL
 * column; the counts themselves are OVERALL. Addresses are symbolized once: the model keeps
 * its symbolizer, locations and function ids across refreshes (rebuilt only when the module
 * map changes), so a refresh costs a file read and a walk over the stacks.
 *
 * Keys: q closes the view (the program runs on; its report follows when it exits), t switches
 * between functions and threads, s sorts by the last interval or the whole run, j/k or the
 * arrows (PgUp/PgDn, Home/End, g/G) move the selection, Enter shows the selected function's
 * threads (or, in the thread list, that thread's functions), Esc or a goes back to all
 * threads, p or space pauses the numbers.
 *
 * This file is the model, the view (rows, drawing, what keys do) and the run (starting the
 * program, the loop, the end). The parts that know nothing of the profile are in src/cli/live/:
 * the terminal and signals (term.c: how the terminal is taken and given back on every way
 * out), the screen buffer (screen.c), the program's output relayed through a pseudo-terminal
 * (relay.c), the keyboard's bytes to keys (keys.c). */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <uthash.h>

#include "cli.h"
#include "live/keys.h"
#include "live/relay.h"
#include "live/screen.h"
#include "live/term.h"
#include "textfmt.h"

#define STAT_EVERY_NS 200000000ull /* how often to look for a new checkpoint */
#define BREAKDOWN_MAX 8            /* threads listed under an expanded function */

/* ---------------------------------------------------------------------------------------- */
/* Formatting */

static const char *clock_of(uint64_t ns)
{
	static char b[32];
	unsigned long long s = ns / 1000000000ull;
	if (s >= 3600)
		snprintf(b, sizeof(b), "%llu:%02llu:%02llu", s / 3600, s / 60 % 60, s % 60);
	else
		snprintf(b, sizeof(b), "%llu:%02llu", s / 60, s % 60);
	return b;
}

static uint64_t mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---------------------------------------------------------------------------------------- */
/* The counts of the view: per function of the model (by its id), per thread, per thread and
 * function, now and at the previous checkpoint */

struct lfunc {
	const char *name, *module; /* the model's */
	uint64_t now, before, ivl;
};

struct tfcount {
	UT_hash_handle hh;
	uint64_t key; /* tid << 32 | function */
	uint64_t now, before, ivl;
};

struct lthread {
	UT_hash_handle hh;
	uint32_t tid;
	char name[64];
	int exited, seen;
	uint64_t now, before, ivl;
	uint64_t wait_now, wait_before, wait_ivl;
	int32_t top_ivl; /* its hottest function in the last interval, -1 none */
	uint64_t top_ivl_n;
};

enum { VIEW_FUNCS, VIEW_THREADS };

struct row {
	int kind;    /* 0 function, 1 thread, 2 breakdown line (thread under a function) */
	uint32_t id; /* function id or tid */
	uint64_t ivl, now;
	uint64_t wait_ivl, wait_now;
};

struct live {
	struct wp_opts *o;
	char path[PATH_MAX];
	pid_t pid;
	uint64_t t0;
	struct relay out;       /* the program's output */
	struct keys keys;       /* an escape sequence the last read cut */
	uint64_t keys_deadline; /* when it is given up (a lone ESC is then the Esc key) */

	/* the model (the reports' own, updated at each checkpoint) and the counts by function */
	struct wp_resolved *model;
	struct wp_profile *prof;  /* the checkpoint the model was last built from */
	struct lfunc *funcs;      /* indexed by the model's function ids */
	size_t nfuncs, capfuncs;
	char warning[256];

	/* counts */
	struct tfcount *tf;
	struct lthread *threads;
	int loaded;
	int st_valid;
	struct stat st;
	uint64_t total_now, total_before, total_ivl;
	uint64_t dur_now, dur_before;
	uint64_t start_unix;
	char command[1024], mode[16];
	long long hz, per_tick, threads_seen;
	double sampler_pct, held_pct;
	int nthreads_live;

	/* the view */
	int view, sort_overall, paused, expanded_on;
	uint32_t expanded;      /* function whose per-thread breakdown is shown */
	int filter_on;
	uint32_t filter_tid;    /* functions of this thread only */
	int sel;                /* selected row */
	int sel_kind;
	uint32_t sel_id;        /* what is selected, to follow it when rows move */
	int scroll;
	int rows, cols;
	int ints;               /* Ctrl-Cs seen */
	char status[256];
	struct row *rowv;
	size_t nrows, caprows;
};

static void oom(void)
{
	term_oom();
}

/* The view's counts for every function of the model; new ones start at zero. */
static void sync_funcs(struct live *L)
{
	const struct wp_resolved *r = L->model;
	if (r->nfuncs > L->capfuncs) {
		size_t cap = L->capfuncs ? L->capfuncs : 256;
		while (cap < r->nfuncs)
			cap *= 2;
		L->funcs = realloc(L->funcs, cap * sizeof(*L->funcs));
		if (!L->funcs)
			oom();
		L->capfuncs = cap;
	}
	for (size_t i = L->nfuncs; i < r->nfuncs; i++)
		memset(&L->funcs[i], 0, sizeof(L->funcs[i]));
	for (size_t i = 0; i < r->nfuncs; i++) {
		L->funcs[i].name = r->funcs[i].name;
		L->funcs[i].module = r->funcs[i].module;
	}
	L->nfuncs = r->nfuncs;
}

/* The model brought up to date with checkpoint p: same function ids as before. */
static void update_model(struct live *L, const struct wp_profile *p)
{
	if (!L->model)
		L->model = wp_resolve(p, NULL);
	else if (wp_resolve_update(L->model, p) != 0)
		oom();
	if (!L->model)
		oom();
	sync_funcs(L);
}

static struct lthread *thread_of(struct live *L, uint32_t tid)
{
	struct lthread *t;
	HASH_FIND(hh, L->threads, &tid, sizeof(tid), t);
	if (!t) {
		t = calloc(1, sizeof(*t));
		if (!t)
			oom();
		t->tid = tid;
		t->top_ivl = -1;
		HASH_ADD(hh, L->threads, tid, sizeof(t->tid), t);
	}
	return t;
}

static void tf_add(struct live *L, uint32_t tid, uint32_t func, uint64_t n)
{
	uint64_t key = (uint64_t)tid << 32 | func;
	struct tfcount *c;
	HASH_FIND(hh, L->tf, &key, sizeof(key), c);
	if (!c) {
		c = calloc(1, sizeof(*c));
		if (!c)
			oom();
		c->key = key;
		HASH_ADD(hh, L->tf, key, sizeof(c->key), c);
	}
	c->now += n;
}

static uint64_t sub0(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

static uint64_t meta_u(const struct wp_profile *p, const char *k)
{
	long long v = wp_profile_meta_ll(p, k, 0);
	return v > 0 ? (uint64_t)v : 0;
}

/* Header numbers: META, and the figures the text report shows for the whole run. */
static void read_meta(struct live *L, const struct wp_profile *p)
{
	const char *v = wp_profile_meta(p, "command");
	if (v && *v)
		snprintf(L->command, sizeof(L->command), "%s", v);
	v = wp_profile_meta(p, "mode");
	snprintf(L->mode, sizeof(L->mode), "%s", v && *v ? v : "wall");
	L->hz = wp_profile_meta_ll(p, "hz", 0);
	L->per_tick = wp_profile_meta_ll(p, "threads_per_tick", -1);
	L->threads_seen = wp_profile_meta_ll(p, "threads_seen", (long long)p->nthreads);
	struct wp_summary s;
	wp_summarize(p, L->model, &s);
	L->sampler_pct = s.sampler_core_pct;
	L->held_pct = s.held_pct; /* threads held by the sampler, of their lifetimes */
}

/* Counts a new checkpoint. */
static void absorb(struct live *L, const struct wp_profile *p)
{
	uint64_t start = meta_u(p, "start_unix_ns");
	uint64_t total = wp_profile_total_samples(p);
	/* A new program image (exec) starts counting afresh: no interval to take. */
	int fresh = !L->loaded || start != L->start_unix || total < L->total_now;
	update_model(L, p);
	for (size_t i = 0; i < L->nfuncs; i++) {
		struct lfunc *f = &L->funcs[i];
		f->before = fresh ? 0 : f->now;
		f->now = 0;
	}
	struct tfcount *c, *ct;
	HASH_ITER(hh, L->tf, c, ct) {
		c->before = fresh ? 0 : c->now;
		c->now = 0;
	}
	struct lthread *t, *tt;
	HASH_ITER(hh, L->threads, t, tt) {
		t->before = fresh ? 0 : t->now;
		t->wait_before = fresh ? 0 : t->wait_now;
		t->now = t->wait_now = 0;
		t->seen = 0;
	}

	const struct wp_resolved *r = L->model;
	uint32_t nostack = UINT32_MAX;
	for (size_t i = 0; i < r->nstacks; i++) {
		const struct wp_rstack *s = &r->stacks[i];
		if (!s->count)
			continue;
		if (!s->n && nostack == UINT32_MAX) /* only the agent's frames, or none */
			nostack = wp_resolved_func(L->model, "(no stack)", "");
		uint32_t f = s->n ? s->frames[s->n - 1].func : nostack;
		if (f >= L->nfuncs)
			sync_funcs(L);
		L->funcs[f].now += s->count;
		tf_add(L, s->tid, (uint32_t)f, s->count);
		struct lthread *th = thread_of(L, s->tid);
		th->now += s->count;
		if (s->flags & WP_STACK_WAITING)
			th->wait_now += s->count;
	}
	for (size_t i = 0; i < p->nthreads; i++) {
		struct lthread *th = thread_of(L, p->threads[i].tid);
		const char *name = p->threads[i].name;
		snprintf(th->name, sizeof(th->name), "%s", name && *name ? name : "?");
		th->exited = !!(p->threads[i].flags & WP_THREAD_EXITED);
		th->seen = 1;
	}

	for (size_t i = 0; i < L->nfuncs; i++)
		L->funcs[i].ivl = sub0(L->funcs[i].now, L->funcs[i].before);
	L->nthreads_live = 0;
	HASH_ITER(hh, L->threads, t, tt) {
		t->ivl = sub0(t->now, t->before);
		t->wait_ivl = sub0(t->wait_now, t->wait_before);
		t->top_ivl = -1;
		t->top_ivl_n = 0;
		if (t->seen && !t->exited)
			L->nthreads_live++;
	}
	HASH_ITER(hh, L->tf, c, ct) {
		c->ivl = sub0(c->now, c->before);
		uint32_t tid = (uint32_t)(c->key >> 32), f = (uint32_t)c->key;
		struct lthread *th = thread_of(L, tid);
		if (c->ivl > th->top_ivl_n || (c->ivl && c->ivl == th->top_ivl_n &&
					       L->funcs[f].now > L->funcs[th->top_ivl].now)) {
			th->top_ivl = (int32_t)f;
			th->top_ivl_n = c->ivl;
		}
	}
	L->total_before = fresh ? 0 : L->total_now;
	L->total_now = total;
	L->total_ivl = sub0(total, L->total_before);
	uint64_t dur = meta_u(p, "duration_ns");
	L->dur_before = fresh ? 0 : L->dur_now;
	L->dur_now = dur;
	L->start_unix = start;
	read_meta(L, p);
	const char *w = wp_symbolizer_warnings(L->model->sym);
	if (w && *w) {
		const char *nl = strchr(w, '\n');
		snprintf(L->warning, sizeof(L->warning), "%.*s", nl ? (int)(nl - w) : (int)strlen(w),
			 w);
	}
	L->loaded = 1;
}

/* Reads the profile file when the agent has replaced it since last time. Returns 1 when a
 * new checkpoint was taken in. */
static int poll_checkpoint(struct live *L)
{
	struct stat st;
	if (stat(L->path, &st) != 0)
		return 0;
	if (L->st_valid && st.st_ino == L->st.st_ino && st.st_dev == L->st.st_dev &&
	    st.st_size == L->st.st_size && st.st_mtim.tv_sec == L->st.st_mtim.tv_sec &&
	    st.st_mtim.tv_nsec == L->st.st_mtim.tv_nsec)
		return 0;
	struct wp_profile *p;
	char err[256];
	if (wp_profile_read(L->path, &p, err, sizeof(err)) != 0)
		return 0; /* mid-replacement or not ours yet: next time */
	int ours = wp_profile_meta_ll(p, "pid", 0) == (long long)L->pid;
	if (ours) {
		absorb(L, p);
		/* the model points into the checkpoint it was built from: keep that one */
		if (L->prof)
			wp_profile_free(L->prof);
		L->prof = p;
	} else {
		wp_profile_free(p);
	}
	L->st = st; /* a stale file from an earlier run is not read again until replaced */
	L->st_valid = 1;
	return ours;
}

/* ---------------------------------------------------------------------------------------- */
/* Drawing: the whole screen into one buffer, one write */

static int cmp_rows(const void *a, const void *b, void *arg)
{
	const struct row *x = a, *y = b;
	int overall = *(const int *)arg;
	uint64_t x1 = overall ? x->now : x->ivl, y1 = overall ? y->now : y->ivl;
	uint64_t x2 = overall ? x->ivl : x->now, y2 = overall ? y->ivl : y->now;
	if (x1 != y1)
		return x1 > y1 ? -1 : 1;
	if (x2 != y2)
		return x2 > y2 ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static void add_row(struct live *L, struct row r)
{
	if (L->nrows == L->caprows) {
		L->caprows = L->caprows ? L->caprows * 2 : 256;
		L->rowv = realloc(L->rowv, L->caprows * sizeof(*L->rowv));
		if (!L->rowv)
			oom();
	}
	L->rowv[L->nrows++] = r;
}

static int cmp_breakdown(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	if (x->ivl != y->ivl)
		return x->ivl > y->ivl ? -1 : 1;
	if (x->now != y->now)
		return x->now > y->now ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* The rows of the current view, sorted; an expanded function followed by its threads. */
static void build_rows(struct live *L)
{
	L->nrows = 0;
	if (L->view == VIEW_THREADS) {
		struct lthread *t, *tt;
		HASH_ITER(hh, L->threads, t, tt) {
			if (!t->now)
				continue;
			add_row(L, (struct row){ 1, t->tid, t->ivl, t->now, t->wait_ivl, t->wait_now });
		}
		qsort_r(L->rowv, L->nrows, sizeof(*L->rowv), cmp_rows, &L->sort_overall);
		return;
	}
	if (L->filter_on) {
		struct tfcount *c, *ct;
		HASH_ITER(hh, L->tf, c, ct) {
			if ((uint32_t)(c->key >> 32) == L->filter_tid && c->now)
				add_row(L, (struct row){ 0, (uint32_t)c->key, c->ivl, c->now, 0, 0 });
		}
	} else {
		for (size_t i = 0; i < L->nfuncs; i++)
			if (L->funcs[i].now)
				add_row(L, (struct row){ 0, (uint32_t)i, L->funcs[i].ivl,
							 L->funcs[i].now, 0, 0 });
	}
	qsort_r(L->rowv, L->nrows, sizeof(*L->rowv), cmp_rows, &L->sort_overall);
	if (!L->expanded_on || L->filter_on)
		return;
	size_t at = L->nrows;
	for (size_t i = 0; i < L->nrows; i++)
		if (L->rowv[i].id == L->expanded) {
			at = i;
			break;
		}
	if (at == L->nrows)
		return;
	struct row sub[64];
	size_t nsub = 0;
	struct tfcount *c, *ct;
	HASH_ITER(hh, L->tf, c, ct) {
		if ((uint32_t)c->key != L->expanded || !c->now)
			continue;
		struct row r = { 2, (uint32_t)(c->key >> 32), c->ivl, c->now, 0, 0 };
		if (nsub < sizeof(sub) / sizeof(sub[0])) {
			sub[nsub++] = r;
		} else {
			qsort(sub, nsub, sizeof(sub[0]), cmp_breakdown);
			if (cmp_breakdown(&r, &sub[nsub - 1]) < 0)
				sub[nsub - 1] = r;
		}
	}
	qsort(sub, nsub, sizeof(sub[0]), cmp_breakdown);
	if (nsub > BREAKDOWN_MAX)
		nsub = BREAKDOWN_MAX;
	for (size_t k = 0; k < nsub; k++)
		add_row(L, sub[0]); /* room; moved into place below */
	memmove(&L->rowv[at + 1 + nsub], &L->rowv[at + 1],
		(L->nrows - nsub - at - 1) * sizeof(*L->rowv));
	memcpy(&L->rowv[at + 1], sub, nsub * sizeof(sub[0]));
}

/* Keeps the selection on the same function or thread when the rows move. */
static void follow_selection(struct live *L)
{
	for (size_t i = 0; i < L->nrows; i++)
		if (L->rowv[i].kind == L->sel_kind && L->rowv[i].id == L->sel_id) {
			L->sel = (int)i;
			return;
		}
	if (L->sel >= (int)L->nrows)
		L->sel = (int)L->nrows - 1;
	if (L->sel < 0)
		L->sel = 0;
	if (L->nrows) {
		L->sel_kind = L->rowv[L->sel].kind;
		L->sel_id = L->rowv[L->sel].id;
	}
}

static void select_row(struct live *L, int i)
{
	if (!L->nrows)
		return;
	if (i >= (int)L->nrows)
		i = (int)L->nrows - 1;
	if (i < 0)
		i = 0;
	L->sel = i;
	L->sel_kind = L->rowv[i].kind;
	L->sel_id = L->rowv[i].id;
}

static const char *thread_name(struct live *L, uint32_t tid)
{
	struct lthread *t;
	HASH_FIND(hh, L->threads, &tid, sizeof(tid), t);
	return t ? t->name : "?";
}

static void window_size(struct live *L)
{
	struct winsize ws;
	if (term_size(&ws) == 0) {
		L->cols = ws.ws_col;
		L->rows = ws.ws_row;
		relay_resize(&L->out, &ws); /* the program's terminal follows ours */
	} else {
		L->cols = 80;
		L->rows = 24;
	}
}

/* The title bar, what runs and how it is sampled, the status line. Returns the next row. */
static int draw_header(struct live *L, struct scr *s, uint64_t now)
{
	srow(s, 0);
	sesc(s, "\033[7;1m");
	sput(s, " wallprof --live  ", INT_MAX);
	sesc(s, "\033[22m");
	char cmd[1024] = "";
	if (L->command[0])
		snprintf(cmd, sizeof(cmd), "%s", L->command);
	else
		for (char **a = L->o->cmd; *a; a++)
			snprintf(cmd + strlen(cmd), sizeof(cmd) - strlen(cmd), "%s%s", a == L->o->cmd ?
				 "" : " ", *a);
	sput(s, cmd, INT_MAX);
	sbar_end(s);

	char seg[4][160];
	int n = 0, y = 1, two = L->rows >= 16 ? 2 : 1;
	const char *mode = L->mode[0] ? L->mode : L->o->mode ? L->o->mode : "wall";
	snprintf(seg[n++], sizeof(seg[0]), "pid %ld", (long)L->pid);
	char per[64] = "";
	if (!strcmp(mode, "wall") && L->loaded && L->per_tick > 0)
		snprintf(per, sizeof(per), " (up to %lld threads a tick)", L->per_tick);
	else if (!strcmp(mode, "wall") && L->loaded)
		snprintf(per, sizeof(per), " (every thread every tick)");
	snprintf(seg[n++], sizeof(seg[0]), "%s mode, %lld Hz%s", mode,
		 L->hz ? L->hz : L->o->hz ? L->o->hz : 100, per);
	snprintf(seg[n++], sizeof(seg[0]), "elapsed %s%s", clock_of(now - L->t0),
		 L->paused ? "   [paused]" : "");
	y = sflow(s, y, seg, n, two);

	n = 0;
	if (L->loaded) {
		snprintf(seg[n++], sizeof(seg[0]), "samples %s (+%s in %.1f s)", wp_num(L->total_now),
			 wp_num(L->total_ivl), (double)sub0(L->dur_now, L->dur_before) / 1e9);
		snprintf(seg[n++], sizeof(seg[0]), "threads %lld (%d live)", L->threads_seen,
			 L->nthreads_live);
		snprintf(seg[n++], sizeof(seg[0]), "sampler %.1f%% of a core, threads held %.2f%%",
			 L->sampler_pct, L->held_pct);
	} else {
		snprintf(seg[n++], sizeof(seg[0]), "waiting for the first checkpoint (the agent "
			 "writes one a second)...");
	}
	y = sflow(s, y, seg, n, two);

	srow(s, y++);
	if (L->status[0]) {
		sesc(s, "\033[1m");
		sput(s, L->status, INT_MAX);
	} else if (L->warning[0]) {
		sput(s, "warning: ", INT_MAX);
		sput(s, L->warning, INT_MAX);
	} else {
		sputf(s, "profile: %s", L->path);
	}
	send_row(s);
	return y;
}

/* Columns: interval self% + samples, overall self% + samples, then the name. */
static void draw_table(struct live *L, struct scr *s, int top, int height)
{
	int w = L->cols;
	int modw = w >= 100 ? 22 : w >= 80 ? 14 : 0;
	int y = top;
	char title[128];
	if (height < 3)
		return;
	srow(s, y++);
	sesc(s, "\033[1m");
	double secs = (double)sub0(L->dur_now, L->dur_before) / 1e9;
	if (L->loaded)
		snprintf(title, sizeof(title), "LAST %.1f s%s", secs, L->sort_overall ? "" : "*");
	else
		snprintf(title, sizeof(title), "LAST INTERVAL%s", L->sort_overall ? "" : "*");
	const char *overall = L->sort_overall ? "OVERALL*" : "OVERALL";
	if (L->view == VIEW_THREADS) {
		sputf(s, "%-17s%-16s", title, overall);
		send_row(s);
		srow(s, y++);
		sesc(s, "\033[1m");
		sputf(s, "%7s %6s   %7s %6s  %-7s %-16s ", "samples", "wait", "samples", "wait", "tid",
		      "thread");
		sfield(s, "hottest function in the last interval", w - s->col, 0);
		send_row(s);
	} else {
		sputf(s, "%-19s%-18s", title, overall);
		if (L->filter_on)
			sputf(s, " thread %s (tid %u): Esc for all threads",
			      thread_name(L, L->filter_tid), L->filter_tid);
		send_row(s);
		srow(s, y++);
		sesc(s, "\033[1m");
		sputf(s, "%6s %9s   %6s %9s  ", "self", "samples", "self", "samples");
		int namew = w - s->col - (modw ? modw + 1 : 0);
		sfield(s, "function", namew, 0);
		if (modw) {
			sput(s, " ", 1);
			sfield(s, "module", modw, 0);
		}
		send_row(s);
	}
	int avail = height - 2;
	if (!L->loaded || !L->nrows) {
		srow(s, y++);
		sput(s, L->loaded ? "  (no samples yet)" : "", INT_MAX);
		send_row(s);
		return;
	}
	if (L->sel < L->scroll)
		L->scroll = L->sel;
	if (L->sel >= L->scroll + avail)
		L->scroll = L->sel - avail + 1;
	if (L->scroll > (int)L->nrows - avail)
		L->scroll = (int)L->nrows - avail;
	if (L->scroll < 0)
		L->scroll = 0;
	uint64_t ivl_whole = L->total_ivl, now_whole = L->total_now;
	if (L->filter_on && L->view == VIEW_FUNCS) {
		struct lthread *t;
		HASH_FIND(hh, L->threads, &L->filter_tid, sizeof(L->filter_tid), t);
		ivl_whole = t ? t->ivl : 0;
		now_whole = t ? t->now : 0;
	}
	for (int i = L->scroll; i < (int)L->nrows && y < top + height; i++) {
		const struct row *r = &L->rowv[i];
		srow(s, y++);
		if (i == L->sel)
			sesc(s, "\033[7m");
		if (r->kind == 1) {
			struct lthread *t;
			HASH_FIND(hh, L->threads, &r->id, sizeof(r->id), t);
			sputf(s, "%7s %5.1f%%   %7s %5.1f%%  %-7u ", wp_num(r->ivl),
			      wp_pct(r->wait_ivl, r->ivl), wp_num(r->now), wp_pct(r->wait_now, r->now), r->id);
			char b[128];
			snprintf(b, sizeof(b), "%s%s", t ? t->name : "?", t && t->exited ? " (exited)" : "");
			sfield(s, b, 16, 0);
			sput(s, " ", 1);
			sfield(s, t && t->top_ivl >= 0 ? L->funcs[t->top_ivl].name : "-", w - s->col, 1);
		} else if (r->kind == 2) {
			sputf(s, "%5.1f%% %9s   %5.1f%% %9s  ", wp_pct(r->ivl, L->funcs[L->expanded].ivl),
			      wp_num(r->ivl), wp_pct(r->now, L->funcs[L->expanded].now), wp_num(r->now));
			char b[128];
			snprintf(b, sizeof(b), "  `- %s (tid %u)", thread_name(L, r->id), r->id);
			sfield(s, b, w - s->col, 0);
		} else {
			const struct lfunc *f = &L->funcs[r->id];
			sputf(s, "%5.1f%% %9s   %5.1f%% %9s  ", wp_pct(r->ivl, ivl_whole), wp_num(r->ivl),
			      wp_pct(r->now, now_whole), wp_num(r->now));
			int namew = w - s->col - (modw ? modw + 1 : 0);
			sfield(s, f->name, namew, 1);
			if (modw) {
				sput(s, " ", 1);
				sfield(s, f->module, modw, 0);
			}
		}
		if (i == L->sel)
			sbar_end(s);
		send_row(s);
	}
}

static void draw(struct live *L, int full)
{
	struct scr s = { 0 };
	s.width = L->cols;
	if (full)
		sesc(&s, "\033[2J");
	if (L->cols < 30 || L->rows < 8) {
		srow(&s, 0);
		sput(&s, "wallprof: terminal too small", INT_MAX);
		send_row(&s);
		sesc(&s, "\033[J");
		term_draw(s.b, s.n);
		free(s.b);
		return;
	}
	uint64_t now = mono();
	int top = draw_header(L, &s, now);
	build_rows(L);
	follow_selection(L);
	const char *outl[RELAY_LINES];
	int lines = relay_last_lines(&L->out, outl);
	int out = lines && lines + 1 < L->rows - 12 ? lines + 1 : 0;
	int bottom = L->rows - 1 - out; /* the help bar takes the last row */
	srow(&s, top++);
	send_row(&s);
	sesc(&s, "\033[J"); /* clear below the header; the rest is drawn again */
	draw_table(L, &s, top, bottom - top);
	if (out) {
		int y = bottom;
		srow(&s, y++);
		sesc(&s, "\033[2m");
		sput(&s, "-- program output ", INT_MAX);
		while (s.col < s.width) {
			sraw(&s, "-", 1);
			s.col++;
		}
		send_row(&s);
		for (int i = 0; i < lines; i++) {
			srow(&s, y++);
			sput(&s, outl[i], INT_MAX);
			send_row(&s);
		}
	}
	srow(&s, L->rows - 1);
	sesc(&s, "\033[7m");
	if (L->view == VIEW_THREADS)
		sput(&s, " q close view  t functions  s sort (*)  j/k move  Enter its functions  "
			 "p pause", INT_MAX);
	else
		sput(&s, " q close view  t threads  s sort (*)  j/k move  Enter by thread  Esc all  "
			 "p pause", INT_MAX);
	sbar_end(&s);
	term_draw(s.b, s.n);
	free(s.b);
}

/* ---------------------------------------------------------------------------------------- */
/* Keys */

/* Does what key `k` asks (keys.h). Returns 1 when the view should close (q). */
static int on_key(struct live *L, struct key k)
{
	int page = L->rows > 12 ? L->rows - 10 : 1;
	if (k.special) {
		switch (k.special) {
		case KEY_UP: select_row(L, L->sel - 1); break;
		case KEY_DOWN: select_row(L, L->sel + 1); break;
		case KEY_PGUP: select_row(L, L->sel - page); break;
		case KEY_PGDN: select_row(L, L->sel + page); break;
		case KEY_HOME: select_row(L, 0); break;
		case KEY_END: select_row(L, (int)L->nrows - 1); break;
		case KEY_ESC:
			L->filter_on = 0;
			L->expanded_on = 0;
			break;
		}
		return 0;
	}
	switch (k.ch) {
	case 'q':
	case 'Q':
		return 1;
	case 't':
	case 'T':
		L->view = L->view == VIEW_FUNCS ? VIEW_THREADS : VIEW_FUNCS;
		L->sel = L->scroll = 0;
		L->sel_kind = -1;
		break;
	case 's':
	case 'S':
		L->sort_overall = !L->sort_overall;
		break;
	case 'p':
	case 'P':
	case ' ':
		L->paused = !L->paused;
		break;
	case 'j': select_row(L, L->sel + 1); break;
	case 'k': select_row(L, L->sel - 1); break;
	case 'g': select_row(L, 0); break;
	case 'G': select_row(L, (int)L->nrows - 1); break;
	case 'a':
		L->filter_on = 0;
		L->expanded_on = 0;
		break;
	case '\r':
	case '\n':
		if (!L->nrows || L->sel >= (int)L->nrows)
			break;
		if (L->view == VIEW_THREADS) {
			L->filter_on = 1;
			L->filter_tid = L->rowv[L->sel].id;
			L->expanded_on = 0;
			L->view = VIEW_FUNCS;
			L->sel = L->scroll = 0;
			L->sel_kind = -1;
		} else if (!L->filter_on) {
			const struct row *r = &L->rowv[L->sel];
			uint32_t f = r->kind == 2 ? L->expanded : r->id;
			if (L->expanded_on && L->expanded == f) {
				L->expanded_on = 0;
			} else {
				L->expanded_on = 1;
				L->expanded = f;
			}
			L->sel_kind = 0;
			L->sel_id = f;
		}
		break;
	}
	return 0;
}

/* Does what the keys ask. Returns 1 when the view should close. */
static int do_keys(struct live *L, const struct key *k, int n)
{
	for (int i = 0; i < n; i++)
		if (on_key(L, k[i]))
			return 1;
	return 0;
}

/* Reads what the keyboard has; an escape sequence cut by the read is finished by the next
 * one (or, for a lone ESC, by KEYS_ESC_WAIT_MS of nothing). Returns 1 when the view should
 * close. */
static int read_keys(struct live *L)
{
	unsigned char b[64];
	ssize_t n = read(term_key_fd(), b, sizeof(b));
	if (n <= 0)
		return 0;
	for (ssize_t i = 0; i < n; i++) {
		struct key k[2];
		if (do_keys(L, k, keys_feed(&L->keys, b[i], k)))
			return 1;
	}
	if (keys_pending(&L->keys))
		L->keys_deadline = mono() + KEYS_ESC_WAIT_MS * 1000000ull;
	return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Running the program */

static int spawn(struct live *L, const char *agent)
{
	relay_open(&L->out);
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		perror("wallprof: fork");
		return -1;
	}
	if (pid == 0) {
		relay_child(&L->out);
		setenv("WALLPROF_CHECKPOINT", "1", 1);
		wp_exec_under_agent(L->o, agent, L->path, -1);
	}
	L->pid = pid;
	return 0;
}

static void close_view(struct live *L, const char *why)
{
	if (term_in_view()) {
		term_restore();
		relay_replay(&L->out);
		if (why)
			fprintf(stderr, "wallprof: %s\n", why);
	}
	relay_replay(&L->out);
}

/* Ctrl-Z: the terminal back to the shell, stop; on fg, take it again. */
static void suspend(struct live *L)
{
	if (term_suspend()) {
		window_size(L);
		draw(L, 1);
	}
}

/* After keys: the view closed (q), or drawn again. */
static void key_typed(struct live *L, int close)
{
	if (close) {
		char why[256];
		snprintf(why, sizeof(why), "view closed; the program (pid %ld) runs on, the report "
			 "follows when it exits (Ctrl-C stops it)", (long)L->pid);
		close_view(L, why);
	} else if (term_in_view()) {
		draw(L, 0);
	}
}

static int live_loop(struct live *L)
{
	uint64_t next_stat = 0, next_tick = 0;
	int status = 0;
	for (;;) {
		term_wake_drain();
		int redraw = 0, full = 0;
		if (term_signal_taken(SIGWINCH) && term_in_view()) {
			window_size(L);
			redraw = full = 1;
		}
		if (term_signal_taken(SIGTSTP))
			suspend(L);
		if (term_signal_taken(SIGCONT) && term_in_view()) {
			redraw = full = 1;
		}
		if (term_signal_taken(SIGINT)) {
			/* forwarded by the handler; the program decides */
			if (++L->ints > 1)
				close_view(L, "Ctrl-C again: view closed; the report follows when the "
					      "program exits");
			snprintf(L->status, sizeof(L->status), "SIGINT: waiting for the program (pid %ld) "
				 "to exit; Ctrl-C again closes the view", (long)L->pid);
			redraw = 1;
		}
		static const int leave[] = { SIGTERM, SIGHUP, SIGQUIT };
		for (size_t i = 0; i < sizeof(leave) / sizeof(leave[0]); i++) {
			if (term_signal_taken(leave[i])) {
				char why[160];
				snprintf(why, sizeof(why), "SIG%s: the view is closed; waiting for the "
					 "program (pid %ld) to exit", sigabbrev_np(leave[i]), (long)L->pid);
				close_view(L, why);
			}
		}
		term_signal_taken(SIGCHLD);
		pid_t w = waitpid(L->pid, &status, WNOHANG);
		if (w == L->pid)
			break;
		if (w < 0 && errno != EINTR) {
			perror("wallprof: waitpid");
			status = 1 << 8;
			break;
		}

		uint64_t now = mono();
		if (now >= next_stat) {
			next_stat = now + STAT_EVERY_NS;
			if (!L->paused && poll_checkpoint(L))
				redraw = 1;
		}
		if (now >= next_tick) {
			/* the clock in the header, on the second */
			next_tick = now + 1000000000ull - (now - L->t0) % 1000000000ull;
			redraw = 1;
		}
		if (keys_pending(&L->keys) && now >= L->keys_deadline) {
			struct key k; /* nothing followed an ESC: the Esc key */
			if (keys_timeout(&L->keys, &k) && term_in_view()) {
				if (on_key(L, k))
					key_typed(L, 1);
				redraw = 1;
			}
		}
		if (term_in_view() && redraw)
			draw(L, full);

		struct pollfd pf[3];
		int n = 0;
		pf[n++] = (struct pollfd){ term_wake_fd(), POLLIN, 0 };
		int key_at = -1, out_at = -1;
		if (term_in_view() && term_key_fd() >= 0) {
			key_at = n;
			pf[n++] = (struct pollfd){ term_key_fd(), POLLIN, 0 };
		}
		if (L->out.master >= 0) {
			out_at = n;
			pf[n++] = (struct pollfd){ L->out.master, POLLIN, 0 };
		}
		now = mono();
		uint64_t until = next_stat < next_tick ? next_stat : next_tick;
		if (keys_pending(&L->keys) && L->keys_deadline < until)
			until = L->keys_deadline;
		int timeout = until > now ? (int)((until - now) / 1000000) + 1 : 0;
		if (poll(pf, (nfds_t)n, timeout) <= 0)
			continue;
		if (out_at >= 0 && pf[out_at].revents) {
			relay_drain(&L->out);
			/* new output lines at the bottom, at most ten times a second */
			if (term_in_view() && (L->out.nlines || L->out.curlen) &&
			    next_tick > mono() + 100000000ull)
				next_tick = mono() + 100000000ull;
		}
		if (key_at >= 0 && (pf[key_at].revents & POLLIN))
			key_typed(L, read_keys(L));
		else if (key_at >= 0 && (pf[key_at].revents & (POLLHUP | POLLERR | POLLNVAL)))
			close_view(L, NULL); /* the terminal went away */
	}
	relay_drain(&L->out);
	return status;
}

static void free_model(struct live *L)
{
	struct tfcount *c, *c2;
	HASH_ITER(hh, L->tf, c, c2) {
		HASH_DEL(L->tf, c);
		free(c);
	}
	struct lthread *t, *t2;
	HASH_ITER(hh, L->threads, t, t2) {
		HASH_DEL(L->threads, t);
		free(t);
	}
	free(L->funcs);
	free(L->rowv);
	wp_resolved_free(L->model);
	if (L->prof)
		wp_profile_free(L->prof);
}

int wp_live(struct wp_opts *o)
{
	if (!isatty(STDOUT_FILENO)) {
		fprintf(stderr, "wallprof: --live needs a terminal on standard output; to record "
				"without one, use `wallprof -o FILE -- COMMAND` and then "
				"`wallprof --report FILE`\n");
		return 2;
	}
	const char *term = getenv("TERM");
	if (!term || !*term || !strcmp(term, "dumb")) {
		fprintf(stderr, "wallprof: --live needs a terminal that can draw a full-screen view "
				"(TERM is %s); use `wallprof -- COMMAND` instead\n",
			term && *term ? term : "not set");
		return 2;
	}
	if (!o->report_out && (o->format == WP_FMT_SVG || o->format == WP_FMT_PPROF ||
			       o->flame_graph)) {
		fprintf(stderr, "wallprof: the final report of --live goes to the terminal; write "
				"an SVG or pprof file with --report-output=FILE\n");
		return 2;
	}
	if (o->flame_graph && !o->format_set)
		o->format = WP_FMT_SVG;
	const char *agent = wp_find_agent();
	if (!agent)
		return 1;

	static struct live L; /* some 10 KB of line buffers: not on the stack */
	memset(&L, 0, sizeof(L));
	L.o = o;
	L.sel_kind = -1;
	if (o->out)
		snprintf(L.path, sizeof(L.path), "%s", o->out);
	else
		snprintf(L.path, sizeof(L.path), "wallprof.%ld.prof", (long)getpid());
	if (wp_check_profile_path(L.path) != 0)
		return 2;

	term_open();
	if (term_signals_init() != 0) {
		perror("wallprof: pipe");
		return 1;
	}
	if (spawn(&L, agent) != 0)
		return 1;
	L.t0 = mono();
	term_signals_catch(L.pid);

	if (term_enter() != 0) {
		fprintf(stderr, "wallprof: cannot set up the terminal: %s\n", strerror(errno));
		L.out.passthrough = 1;
	} else {
		window_size(&L);
		draw(&L, 1);
	}

	int status = live_loop(&L);
	close_view(&L, NULL);
	term_signals_end();
	term_close();
	relay_close(&L.out);
	free_model(&L);

	o->exit_status = status;
	o->have_exit_status = 1;
	return wp_report_after_run(o, L.path);
}
