/* --live: a full-screen terminal view of where the program's threads are, refreshed as it
 * runs, like top for stacks; then the usual final report.
 *
 * The program runs under the agent with WALLPROF_CHECKPOINT=1: once a second the agent of
 * every process of the tree replaces its profile file (atomically, by rename) with
 * everything sampled so far: the main file for the process started here, NAME.PID.EXT beside
 * it for the others (live/procfiles.c). This process only watches those files (a directory
 * scan and a stat each every 200 ms), reads each new checkpoint, brings that process's model
 * up to date with it (model/resolve.h: wp_resolve_update) and counts every stack's leaf
 * function and wait. The difference from the process's previous checkpoint is the LAST
 * INTERVAL column; the counts themselves are OVERALL. Addresses are symbolized once: each
 * model keeps its symbolizer, locations and function ids across refreshes (rebuilt only when
 * the module map changes), so a refresh costs a file read and a walk over the stacks.
 *
 * Keys (live/keys.c: keys_action): q closes the view (the program runs on; its report
 * follows when it exits), t switches between functions and threads, w between functions and
 * waits, s sorts by the last interval or the whole run, j/k or the arrows (PgUp/PgDn,
 * Home/End, g/G) move the selection, Enter shows the selected function's threads (or, in the
 * thread list, that thread's functions), Esc or a goes back to all threads, p or space
 * pauses the numbers.
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
#include "live/procfiles.h"
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
/* The counts of the view. Every process of the tree (struct lproc: the main file's, and each
 * NAME.PID.EXT beside it) has its own model, brought up to date with its own checkpoints.
 * What is counted belongs to one process (a thread, a thread's function, a wait object), and
 * keeps its count at that process's last two checkpoints: the difference is its LAST
 * INTERVAL, so each process contributes its own last second whenever its checkpoints come.
 * A process whose file has not changed for STALE_NS (it ended, or is stopped) contributes
 * nothing to the interval. Functions are the views' own (by name and module), so the same
 * function in two processes is one row. */

#define STALE_NS 2500000000ull /* no checkpoint for this long: nothing in the last interval */

struct lfunc {
	UT_hash_handle hh;
	uint32_t id;
	uint64_t now, before, ivl;
	char *module;              /* points into key */
	char key[];                /* name NUL module NUL */
};

struct lproc {
	char path[PATH_MAX];
	long pid;
	int is_main;
	int st_valid;
	struct stat st;
	uint64_t changed_at;       /* mono() when its file last changed */
	int settled;               /* stale: its interval was emptied */
	struct wp_profile *prof;   /* the checkpoint its model was last built from */
	struct wp_resolved *model;
	uint32_t *fmap;            /* the model's function ids -> the view's */
	size_t nfmap;
	uint32_t nostack;          /* the view's "(no stack)" function, or UINT32_MAX */
	int loaded, ended;
	uint64_t start_unix, total, total_before, dur_now, dur_before;
	long long threads_seen;
	int threads_live;
	double sampler_pct, held_pct;
	char prog[64];
};

struct tfkey {
	uint32_t proc, tid, func;
};

struct tfcount {
	UT_hash_handle hh;
	struct tfkey key;
	uint64_t now, before, ivl;
};

/* A thread: key proc << 32 | tid (tids are the system's, but a pid file may be reused by an
 * exec'd image; the key keeps processes apart). */
struct lthread {
	UT_hash_handle hh;
	uint64_t key;
	uint32_t tid, proc;
	char name[64];
	int exited, seen;
	uint64_t now, before, ivl;
	uint64_t wait_now, wait_before, wait_ivl;
	int32_t top_ivl; /* its hottest function in the last interval, -1 none */
	uint64_t top_ivl_n;
};

/* A wait object of a process (model/waits.h): samples and time, now and at the previous
 * checkpoint, the thread that waited on it most and the holder seen most. */
struct lwait {
	UT_hash_handle hh;
	uint32_t id, proc;
	enum wp_wait_kind kind;
	uint64_t now, before, ivl;         /* samples */
	uint64_t ns_now, ns_before, ns_ivl;
	uint32_t nthreads;                 /* threads that waited on it, last checkpoint */
	uint32_t tids[4];
	uint32_t holder;
	uint64_t holder_n, top_n;
	uint32_t top_tid;
	char *object;                      /* points into key */
	char key[];                        /* proc (4 bytes), kind (1 byte), object NUL */
};

enum { VIEW_FUNCS, VIEW_THREADS, VIEW_WAITS };

enum { ROW_FUNC, ROW_THREAD, ROW_BREAKDOWN, ROW_WAIT_KIND, ROW_WAIT };

struct row {
	int kind;    /* ROW_* */
	uint64_t id; /* function id, thread key, wait kind or wait id */
	uint64_t ivl, now;
	uint64_t wait_ivl, wait_now; /* threads: waiting samples; waits: time */
};

struct live {
	struct wp_opts *o;
	char path[PATH_MAX];
	pid_t pid;
	uint64_t t0;
	struct relay out;       /* the program's output */
	struct keys keys;       /* an escape sequence the last read cut */
	uint64_t keys_deadline; /* when it is given up (a lone ESC is then the Esc key) */

	/* the processes, each with its model; procs[0] is the main file's */
	struct lproc **procs;
	size_t nprocs, capprocs;
	struct wp_symcache *symcache; /* the module files the processes' models have read */
	struct lfunc *func_by_key; /* the view's functions, by name and module */
	struct lfunc **funcs;      /* by id */
	size_t nfuncs, capfuncs;
	char warning[256];

	/* counts */
	struct tfcount *tf;
	struct lthread *threads;
	struct lwait *wait_by_key;
	struct lwait **waits;     /* by id */
	size_t nwaits, capwaits;
	uint64_t kind_now[WP_WAIT__N], kind_ivl[WP_WAIT__N];
	uint64_t kind_ns_now[WP_WAIT__N], kind_ns_ivl[WP_WAIT__N];
	int loaded;
	uint64_t total_now, total_ivl;
	uint64_t ivl_ns;          /* the longest last interval of the processes that had one */
	char command[1024], mode[16];
	long long hz, per_tick, threads_seen;
	double sampler_pct, held_pct;
	int nthreads_live, nprocs_live, nprocs_loaded;

	/* the view */
	int view, sort_overall, paused, expanded_on;
	uint32_t expanded;      /* function whose per-thread breakdown is shown */
	int filter_on;
	uint64_t filter_thread; /* functions of this thread (key) only */
	int sel;                /* selected row */
	int sel_kind;
	uint64_t sel_id;        /* what is selected, to follow it when rows move */
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

static void *grow(void *p, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return p;
	size_t c = *cap ? *cap * 2 : 64;
	while (c <= n)
		c *= 2;
	p = realloc(p, c * size);
	if (!p)
		oom();
	*cap = c;
	return p;
}

/* The view's function (name, module), added when new. */
static uint32_t func_id(struct live *L, const char *name, const char *module)
{
	size_t ln = strlen(name), lm = strlen(module ? module : "");
	char stackbuf[512], *k = ln + lm + 2 <= sizeof(stackbuf) ? stackbuf : malloc(ln + lm + 2);
	if (!k)
		oom();
	memcpy(k, name, ln + 1);
	memcpy(k + ln + 1, module ? module : "", lm + 1);
	struct lfunc *f;
	HASH_FIND(hh, L->func_by_key, k, ln + lm + 2, f);
	if (!f) {
		f = calloc(1, sizeof(*f) + ln + lm + 2);
		if (!f)
			oom();
		memcpy(f->key, k, ln + lm + 2);
		f->module = f->key + ln + 1;
		f->id = (uint32_t)L->nfuncs;
		L->funcs = grow(L->funcs, &L->capfuncs, L->nfuncs, sizeof(*L->funcs));
		L->funcs[L->nfuncs++] = f;
		HASH_ADD(hh, L->func_by_key, key[0], ln + lm + 2, f);
	}
	if (k != stackbuf)
		free(k);
	return f->id;
}

static const char *func_name(const struct live *L, uint32_t id)
{
	return L->funcs[id]->key;
}

/* The view's id of function `mf` of process P's model. */
static uint32_t proc_func(struct live *L, struct lproc *P, uint32_t mf)
{
	const struct wp_resolved *r = P->model;
	if (mf >= P->nfmap) {
		size_t n = r->nfuncs > mf ? r->nfuncs : mf + 1;
		P->fmap = realloc(P->fmap, n * sizeof(*P->fmap));
		if (!P->fmap)
			oom();
		for (size_t i = P->nfmap; i < n; i++)
			P->fmap[i] = UINT32_MAX;
		P->nfmap = n;
	}
	if (P->fmap[mf] == UINT32_MAX)
		P->fmap[mf] = func_id(L, r->funcs[mf].name, r->funcs[mf].module);
	return P->fmap[mf];
}

static struct lthread *thread_of(struct live *L, uint32_t proc, uint32_t tid)
{
	uint64_t key = (uint64_t)proc << 32 | tid;
	struct lthread *t;
	HASH_FIND(hh, L->threads, &key, sizeof(key), t);
	if (!t) {
		t = calloc(1, sizeof(*t));
		if (!t)
			oom();
		t->key = key;
		t->proc = proc;
		t->tid = tid;
		t->top_ivl = -1;
		HASH_ADD(hh, L->threads, key, sizeof(t->key), t);
	}
	return t;
}

static struct lthread *thread_by_key(struct live *L, uint64_t key)
{
	struct lthread *t;
	HASH_FIND(hh, L->threads, &key, sizeof(key), t);
	return t;
}

static void tf_add(struct live *L, uint32_t proc, uint32_t tid, uint32_t func, uint64_t n)
{
	struct tfkey key = { proc, tid, func };
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

static struct lwait *wait_of(struct live *L, uint32_t proc, enum wp_wait_kind kind,
			     const char *object)
{
	size_t lo = strlen(object), len = 5 + lo + 1;
	char stackbuf[512], *k = len <= sizeof(stackbuf) ? stackbuf : malloc(len);
	if (!k)
		oom();
	memcpy(k, &proc, 4);
	k[4] = (char)kind;
	memcpy(k + 5, object, lo + 1);
	struct lwait *w;
	HASH_FIND(hh, L->wait_by_key, k, len, w);
	if (!w) {
		w = calloc(1, sizeof(*w) + len);
		if (!w)
			oom();
		memcpy(w->key, k, len);
		w->object = w->key + 5;
		w->proc = proc;
		w->kind = kind;
		w->id = (uint32_t)L->nwaits;
		L->waits = grow(L->waits, &L->capwaits, L->nwaits, sizeof(*L->waits));
		L->waits[L->nwaits++] = w;
		HASH_ADD(hh, L->wait_by_key, key[0], len, w);
	}
	if (k != stackbuf)
		free(k);
	return w;
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

/* What process k counted becomes its previous checkpoint's (fresh: a new image, nothing
 * before), and its counts start over. */
static void roll(struct live *L, uint32_t k, int fresh)
{
	struct tfcount *c, *ct;
	HASH_ITER(hh, L->tf, c, ct) {
		if (c->key.proc != k)
			continue;
		c->before = fresh ? 0 : c->now;
		c->now = 0;
	}
	struct lthread *t, *tt;
	HASH_ITER(hh, L->threads, t, tt) {
		if (t->proc != k)
			continue;
		t->before = fresh ? 0 : t->now;
		t->wait_before = fresh ? 0 : t->wait_now;
		t->now = t->wait_now = 0;
		t->seen = 0;
	}
	for (size_t i = 0; i < L->nwaits; i++) {
		struct lwait *w = L->waits[i];
		if (w->proc != k)
			continue;
		w->before = fresh ? 0 : w->now;
		w->ns_before = fresh ? 0 : w->ns_now;
		w->now = w->ns_now = 0;
		w->nthreads = 0;
		w->holder = 0;
		w->holder_n = w->top_n = 0;
		w->top_tid = 0;
	}
	struct lproc *P = L->procs[k];
	P->total_before = fresh ? 0 : P->total;
	P->dur_before = fresh ? 0 : P->dur_now;
}

/* Process k had no checkpoint for a while: nothing of it in the last interval. */
static void settle(struct live *L, uint32_t k)
{
	struct tfcount *c, *ct;
	HASH_ITER(hh, L->tf, c, ct)
		if (c->key.proc == k)
			c->before = c->now;
	struct lthread *t, *tt;
	HASH_ITER(hh, L->threads, t, tt)
		if (t->proc == k) {
			t->before = t->now;
			t->wait_before = t->wait_now;
		}
	for (size_t i = 0; i < L->nwaits; i++)
		if (L->waits[i]->proc == k) {
			L->waits[i]->before = L->waits[i]->now;
			L->waits[i]->ns_before = L->waits[i]->ns_now;
		}
	struct lproc *P = L->procs[k];
	P->total_before = P->total;
	P->dur_before = P->dur_now;
	P->settled = 1;
}

/* That stack s's c samples waited on w (its wait rw): the threads that waited on it, the one
 * that waited most and the holder seen most. */
static void note_waiter(struct lwait *w, const struct wp_rstack *s, const struct wp_rwait *rw,
			uint64_t c)
{
	int known = 0;
	for (uint32_t i = 0; i < w->nthreads && i < 4; i++)
		known |= w->tids[i] == s->tid;
	if (!known) { /* beyond 4, a thread with several stacks counts more than once */
		if (w->nthreads < 4)
			w->tids[w->nthreads] = s->tid;
		w->nthreads++;
	}
	if (c > w->top_n) {
		w->top_n = c;
		w->top_tid = s->tid;
	}
	if (rw->holder && c > w->holder_n) {
		w->holder_n = c;
		w->holder = rw->holder;
	}
}

/* The waits of process k's model r: per object its samples and time (the model's totals,
 * wp_wait_totals), then who waited on it and who held it. */
static void count_waits(struct live *L, uint32_t k, const struct wp_resolved *r)
{
	size_t n;
	uint32_t *of;
	struct wp_wait_total *tot = wp_wait_totals(r, NULL, NULL, &n, &of);
	struct lwait **by = malloc((n + 1) * sizeof(*by));
	if (!by)
		oom();
	for (size_t i = 0; i < n; i++) {
		by[i] = wait_of(L, k, tot[i].kind, tot[i].object);
		by[i]->now += tot[i].count;
		by[i]->ns_now += tot[i].weight_ns;
	}
	for (size_t i = 0; i < r->nstacks; i++) {
		const struct wp_rstack *s = &r->stacks[i];
		for (uint32_t j = 0; j < s->nwaits; j++) {
			uint64_t c = wp_rwait_samples(s, j);
			if (c)
				note_waiter(by[of[&s->waits[j] - r->waits]], s, &s->waits[j], c);
		}
	}
	free(by);
	free(of);
	free(tot);
}

/* Process k's new checkpoint p, counted. */
static void absorb(struct live *L, uint32_t k, struct wp_profile *p)
{
	struct lproc *P = L->procs[k];
	uint64_t start = meta_u(p, "start_unix_ns");
	uint64_t total = wp_profile_total_samples(p);
	/* A new program image (exec) starts counting afresh: no interval to take. */
	int fresh = !P->loaded || start != P->start_unix || total < P->total;
	if (!P->model)
		P->model = wp_resolve_cached(p, NULL, L->symcache);
	else if (wp_resolve_update(P->model, p) != 0)
		oom();
	if (!P->model)
		oom();
	roll(L, k, fresh);

	const struct wp_resolved *r = P->model;
	for (size_t i = 0; i < r->nstacks; i++) {
		const struct wp_rstack *s = &r->stacks[i];
		if (!s->count)
			continue;
		uint32_t f;
		if (s->n) {
			f = proc_func(L, P, s->frames[s->n - 1].func);
		} else { /* only the agent's frames, or none */
			if (P->nostack == UINT32_MAX)
				P->nostack = func_id(L, "(no stack)", "");
			f = P->nostack;
		}
		tf_add(L, k, s->tid, f, s->count);
		struct lthread *th = thread_of(L, k, s->tid);
		th->now += s->count;
		if (s->flags & WP_STACK_WAITING)
			th->wait_now += s->count;
	}
	count_waits(L, k, r);
	P->threads_live = 0;
	for (size_t i = 0; i < p->nthreads; i++) {
		struct lthread *th = thread_of(L, k, p->threads[i].tid);
		const char *name = p->threads[i].name;
		snprintf(th->name, sizeof(th->name), "%s", name && *name ? name : "?");
		th->exited = !!(p->threads[i].flags & WP_THREAD_EXITED);
		th->seen = 1;
	}
	struct lthread *t, *tt;
	HASH_ITER(hh, L->threads, t, tt)
		if (t->proc == k && t->seen && !t->exited)
			P->threads_live++;

	P->total = total;
	P->dur_now = meta_u(p, "duration_ns");
	P->start_unix = start;
	P->loaded = 1;
	P->settled = 0;
	P->ended = !wp_profile_meta(p, "checkpoint"); /* the final write */
	wp_resolved_program(r, 0, P->prog, sizeof(P->prog));
	P->threads_seen = wp_profile_meta_ll(p, "threads_seen", (long long)p->nthreads);
	struct wp_summary sum;
	wp_summarize(p, r, &sum);
	P->sampler_pct = sum.sampler_core_pct;
	P->held_pct = sum.held_pct; /* threads held by the sampler, of their lifetimes */
	if (P->is_main) {
		const char *v = wp_profile_meta(p, "command");
		if (v && *v)
			snprintf(L->command, sizeof(L->command), "%s", v);
		v = wp_profile_meta(p, "mode");
		snprintf(L->mode, sizeof(L->mode), "%s", v && *v ? v : "wall");
		L->hz = wp_profile_meta_ll(p, "hz", 0);
		L->per_tick = wp_profile_meta_ll(p, "threads_per_tick", -1);
	}
	const char *w = wp_symbolizer_warnings(r->sym);
	if (w && *w && !L->warning[0]) {
		const char *nl = strchr(w, '\n');
		snprintf(L->warning, sizeof(L->warning), "%.*s", nl ? (int)(nl - w) : (int)strlen(w),
			 w);
	}
	/* the model points into the checkpoint it was built from: keep that one */
	if (P->prof)
		wp_profile_free(P->prof);
	P->prof = p;
}

/* The figures of the whole view, from every process's counts. */
static void tally(struct live *L)
{
	for (size_t i = 0; i < L->nfuncs; i++)
		L->funcs[i]->now = L->funcs[i]->before = L->funcs[i]->ivl = 0;
	struct lthread *t, *tt;
	HASH_ITER(hh, L->threads, t, tt) {
		t->ivl = sub0(t->now, t->before);
		t->wait_ivl = sub0(t->wait_now, t->wait_before);
		t->top_ivl = -1;
		t->top_ivl_n = 0;
	}
	struct tfcount *c, *ct;
	HASH_ITER(hh, L->tf, c, ct) {
		c->ivl = sub0(c->now, c->before);
		struct lfunc *f = L->funcs[c->key.func];
		f->now += c->now;
		f->ivl += c->ivl;
	}
	HASH_ITER(hh, L->tf, c, ct) {
		struct lthread *th = thread_of(L, c->key.proc, c->key.tid);
		uint32_t f = c->key.func;
		if (c->ivl > th->top_ivl_n ||
		    (c->ivl && c->ivl == th->top_ivl_n &&
		     L->funcs[f]->now > L->funcs[th->top_ivl]->now)) {
			th->top_ivl = (int32_t)f;
			th->top_ivl_n = c->ivl;
		}
	}
	memset(L->kind_now, 0, sizeof(L->kind_now));
	memset(L->kind_ivl, 0, sizeof(L->kind_ivl));
	memset(L->kind_ns_now, 0, sizeof(L->kind_ns_now));
	memset(L->kind_ns_ivl, 0, sizeof(L->kind_ns_ivl));
	for (size_t i = 0; i < L->nwaits; i++) {
		struct lwait *w = L->waits[i];
		w->ivl = sub0(w->now, w->before);
		w->ns_ivl = sub0(w->ns_now, w->ns_before);
		L->kind_now[w->kind] += w->now;
		L->kind_ivl[w->kind] += w->ivl;
		L->kind_ns_now[w->kind] += w->ns_now;
		L->kind_ns_ivl[w->kind] += w->ns_ivl;
	}
	L->total_now = L->total_ivl = L->ivl_ns = 0;
	L->threads_seen = L->nthreads_live = L->nprocs_live = L->nprocs_loaded = 0;
	L->sampler_pct = L->held_pct = 0;
	for (size_t k = 0; k < L->nprocs; k++) {
		struct lproc *P = L->procs[k];
		if (!P->loaded)
			continue;
		L->nprocs_loaded++;
		L->nprocs_live += !P->ended;
		L->total_now += P->total;
		L->total_ivl += sub0(P->total, P->total_before);
		uint64_t d = sub0(P->dur_now, P->dur_before);
		if (d > L->ivl_ns)
			L->ivl_ns = d;
		L->threads_seen += P->threads_seen;
		L->nthreads_live += P->ended ? 0 : P->threads_live;
		/* a sampler per process: of one core, summed over those running now */
		L->sampler_pct += P->ended ? 0 : P->sampler_pct;
		L->held_pct += P->held_pct * (double)P->total; /* weighted by samples, below */
	}
	L->held_pct = L->total_now ? L->held_pct / (double)L->total_now : 0;
	L->loaded = L->nprocs_loaded > 0;
}

/* The process whose file is `path`, added when new. */
static uint32_t proc_at(struct live *L, const char *path, long pid, int is_main)
{
	for (size_t k = 0; k < L->nprocs; k++)
		if (!strcmp(L->procs[k]->path, path))
			return (uint32_t)k;
	struct lproc *P = calloc(1, sizeof(*P));
	if (!P)
		oom();
	snprintf(P->path, sizeof(P->path), "%s", path);
	P->pid = pid;
	P->is_main = is_main;
	P->nostack = UINT32_MAX;
	L->procs = grow(L->procs, &L->capprocs, L->nprocs, sizeof(*L->procs));
	L->procs[L->nprocs++] = P;
	return (uint32_t)(L->nprocs - 1);
}

/* Whether checkpoint p belongs to this run: the main file's is the process we started; the
 * others carry the run id that process gave the tree ("<its pid>-..."). */
static int of_this_run(const struct live *L, const struct wp_profile *p, int is_main)
{
	if (is_main)
		return wp_profile_meta_ll(p, "pid", 0) == (long long)L->pid;
	const char *run = wp_profile_meta(p, "run");
	char want[32];
	snprintf(want, sizeof(want), "%ld-", (long)L->pid);
	return run && !strncmp(run, want, strlen(want));
}

/* Reads process k's file when the agent has replaced it since last time. Returns 1 when a
 * new checkpoint was taken in. */
static int poll_proc(struct live *L, uint32_t k, uint64_t now)
{
	struct lproc *P = L->procs[k];
	struct stat st;
	if (stat(P->path, &st) != 0)
		return 0;
	if (P->st_valid && st.st_ino == P->st.st_ino && st.st_dev == P->st.st_dev &&
	    st.st_size == P->st.st_size && st.st_mtim.tv_sec == P->st.st_mtim.tv_sec &&
	    st.st_mtim.tv_nsec == P->st.st_mtim.tv_nsec) {
		if (P->loaded && !P->settled && now - P->changed_at >= STALE_NS)
			settle(L, k);
		return 0;
	}
	struct wp_profile *p;
	char err[256];
	if (wp_profile_read(P->path, &p, err, sizeof(err)) != 0)
		return 0; /* mid-replacement or not ours yet: next time */
	int ours = of_this_run(L, p, P->is_main);
	if (ours)
		absorb(L, k, p); /* keeps p */
	else
		wp_profile_free(p);
	P->st = st; /* a stale file from an earlier run is not read again until replaced */
	P->st_valid = 1;
	P->changed_at = now;
	return ours;
}

/* Process k ended: its counts stay, its model goes (a build runs hundreds of processes; the
 * view must not keep a symbolizer for each). A later checkpoint at its path (an image its
 * pid exec'd) builds a new one. */
static void release(struct lproc *P)
{
	wp_resolved_free(P->model);
	P->model = NULL;
	if (P->prof)
		wp_profile_free(P->prof);
	P->prof = NULL;
	free(P->fmap);
	P->fmap = NULL;
	P->nfmap = 0;
}

static void found_proc(const char *path, long pid, void *arg)
{
	proc_at(arg, path, pid, 0);
}

/* Looks for new processes' files, and new checkpoints of every process. Returns 1 when
 * anything changed. */
static int poll_checkpoints(struct live *L)
{
	uint64_t now = mono();
	if (!L->nprocs)
		proc_at(L, L->path, L->pid, 1);
	procfiles_scan(L->path, found_proc, L);
	int changed = 0, first_loads = 0;
	for (size_t k = 0; k < L->nprocs; k++) {
		int was_settled = L->procs[k]->settled;
		/* A process's first checkpoint costs symbolizing all its modules: one a poll, so
		 * that a tree starting many processes at once does not hold the keys and the
		 * screen (the others are read at the next polls, 200 ms apart). */
		int was_loaded = L->procs[k]->loaded;
		if (!was_loaded && first_loads)
			continue;
		changed |= poll_proc(L, (uint32_t)k, now);
		first_loads += !was_loaded && L->procs[k]->loaded;
		changed |= L->procs[k]->settled != was_settled;
		/* a process killed before its final write: its last checkpoint stays */
		if (L->procs[k]->loaded && !L->procs[k]->ended && L->procs[k]->pid > 0 &&
		    kill((pid_t)L->procs[k]->pid, 0) != 0 && errno == ESRCH) {
			L->procs[k]->ended = 1;
			changed = 1;
		}
		if (L->procs[k]->ended && L->procs[k]->model)
			release(L->procs[k]);
	}
	if (changed)
		tally(L);
	return changed;
}

/* "prog pid" of process k. */
static const char *proc_label(const struct live *L, uint32_t k, char *buf, size_t cap)
{
	const struct lproc *P = L->procs[k];
	snprintf(buf, cap, "%s %ld", P->prog[0] ? P->prog : "?", P->pid);
	return buf;
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

/* Sorts the rows from `from` on (none yet: rowv may be NULL, which qsort must not get). */
static void sort_rows(struct live *L, size_t from)
{
	if (L->nrows > from)
		qsort_r(L->rowv + from, L->nrows - from, sizeof(*L->rowv), cmp_rows,
			&L->sort_overall);
}

/* The waits view's rows: the kinds, then the objects, each sorted. */
static void build_wait_rows(struct live *L)
{
	for (int k = 0; k < WP_WAIT__N; k++)
		if (L->kind_now[k])
			add_row(L, (struct row){ ROW_WAIT_KIND, (uint64_t)k, L->kind_ivl[k],
						 L->kind_now[k], L->kind_ns_ivl[k],
						 L->kind_ns_now[k] });
	sort_rows(L, 0);
	size_t kinds = L->nrows;
	for (size_t i = 0; i < L->nwaits; i++) {
		const struct lwait *w = L->waits[i];
		if (w->now)
			add_row(L, (struct row){ ROW_WAIT, w->id, w->ivl, w->now, w->ns_ivl, w->ns_now });
	}
	sort_rows(L, kinds);
}

/* The rows of the current view, sorted; an expanded function followed by its threads. */
static void build_rows(struct live *L)
{
	L->nrows = 0;
	if (L->view == VIEW_WAITS) {
		build_wait_rows(L);
		return;
	}
	if (L->view == VIEW_THREADS) {
		struct lthread *t, *tt;
		HASH_ITER(hh, L->threads, t, tt) {
			if (!t->now)
				continue;
			add_row(L, (struct row){ ROW_THREAD, t->key, t->ivl, t->now, t->wait_ivl,
						 t->wait_now });
		}
		sort_rows(L, 0);
		return;
	}
	if (L->filter_on) {
		struct tfcount *c, *ct;
		HASH_ITER(hh, L->tf, c, ct) {
			if (((uint64_t)c->key.proc << 32 | c->key.tid) == L->filter_thread && c->now)
				add_row(L, (struct row){ ROW_FUNC, c->key.func, c->ivl, c->now, 0, 0 });
		}
	} else {
		for (size_t i = 0; i < L->nfuncs; i++)
			if (L->funcs[i]->now)
				add_row(L, (struct row){ ROW_FUNC, (uint32_t)i, L->funcs[i]->ivl,
							 L->funcs[i]->now, 0, 0 });
	}
	sort_rows(L, 0);
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
		if (c->key.func != L->expanded || !c->now)
			continue;
		struct row r = { ROW_BREAKDOWN, (uint64_t)c->key.proc << 32 | c->key.tid, c->ivl,
				 c->now, 0, 0 };
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

static const char *thread_name(struct live *L, uint64_t key)
{
	struct lthread *t = thread_by_key(L, key);
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

#define PROC_SEGS 48 /* processes named on the processes line, at most */

/* The processes line (more than one process): each one, "prog pid", live ones first, those
 * that ended marked so. Returns the next row. */
static int draw_procs(struct live *L, struct scr *s, int y, int max_rows)
{
	static char seg[PROC_SEGS + 1][160];
	int n = 0;
	snprintf(seg[n++], sizeof(seg[0]), "processes %d (%d live):", L->nprocs_loaded,
		 L->nprocs_live);
	for (int ended = 0; ended < 2; ended++)
		for (size_t k = 0; k < L->nprocs; k++) {
			const struct lproc *P = L->procs[k];
			if (!P->loaded || P->ended != ended)
				continue;
			if (n == PROC_SEGS) {
				snprintf(seg[n - 1], sizeof(seg[0]), "(and more)");
				continue;
			}
			char b[96];
			snprintf(seg[n++], sizeof(seg[0]), "%s%s", proc_label(L, (uint32_t)k, b,
									     sizeof(b)),
				 P->ended ? " (ended)" : "");
		}
	return sflow(s, y, seg, n, max_rows);
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
			 wp_num(L->total_ivl), (double)L->ivl_ns / 1e9);
		snprintf(seg[n++], sizeof(seg[0]), "threads %lld (%d live)", L->threads_seen,
			 L->nthreads_live);
		snprintf(seg[n++], sizeof(seg[0]), "sampler %.1f%% of a core, threads held %.2f%%",
			 L->sampler_pct, L->held_pct);
	} else {
		snprintf(seg[n++], sizeof(seg[0]), "waiting for the first checkpoint (the agent "
			 "writes one a second)...");
	}
	y = sflow(s, y, seg, n, two);
	if (L->nprocs_loaded > 1)
		y = draw_procs(L, s, y, L->rows >= 24 ? 3 : 1);

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

/* A wait object's row: "kind  object[ in prog pid][ (held by NAME tid=N)]: a waiting
 * thread[ and others]". */
static void wait_row_text(struct live *L, const struct lwait *w, char *b, size_t cap)
{
	char pl[96] = "", held[128] = "", who[256] = "";
	uint64_t key = (uint64_t)w->proc << 32;
	if (L->nprocs_loaded > 1)
		snprintf(pl, sizeof(pl), " in %s", proc_label(L, w->proc, (char[80]){ 0 }, 80));
	if (w->holder)
		snprintf(held, sizeof(held), " (held by %s tid=%u)", thread_name(L, key | w->holder),
			 w->holder);
	if (w->nthreads)
		snprintf(who, sizeof(who), ": %s tid=%u%s", thread_name(L, key | w->top_tid),
			 w->top_tid, w->nthreads > 1 ? " and others" : "");
	snprintf(b, cap, "%-9s %s%s%s%s", wp_wait_kind_name(w->kind), w->object, pl, held, who);
}

/* The column titles of the current view. */
static void draw_titles(struct live *L, struct scr *s, int y, int modw, int procw)
{
	int w = L->cols;
	char title[128];
	srow(s, y++);
	sesc(s, "\033[1m");
	if (L->loaded)
		snprintf(title, sizeof(title), "LAST %.1f s%s", (double)L->ivl_ns / 1e9,
			 L->sort_overall ? "" : "*");
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
		if (procw) {
			sfield(s, "process", procw, 0);
			sput(s, " ", 1);
		}
		sfield(s, "hottest function in the last interval", w - s->col, 0);
	} else if (L->view == VIEW_WAITS) {
		sputf(s, "%-19s%-18s WAITS: time per kind, then per object", title, overall);
		send_row(s);
		srow(s, y++);
		sesc(s, "\033[1m");
		sputf(s, "%6s %9s   %6s %9s  ", "share", "time", "share", "time");
		sfield(s, "kind      object (held by): waiting threads", w - s->col, 0);
	} else {
		sputf(s, "%-19s%-18s", title, overall);
		if (L->filter_on)
			sputf(s, " thread %s (tid %u): Esc for all threads",
			      thread_name(L, L->filter_thread), (uint32_t)L->filter_thread);
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
	}
	send_row(s);
}

/* One row of the table. */
static void draw_row(struct live *L, struct scr *s, const struct row *r, int modw, int procw,
		     uint64_t ivl_whole, uint64_t now_whole)
{
	int w = L->cols;
	char b[512];
	if (r->kind == ROW_THREAD) {
		struct lthread *t = thread_by_key(L, r->id);
		sputf(s, "%7s %5.1f%%   %7s %5.1f%%  %-7u ", wp_num(r->ivl),
		      wp_pct(r->wait_ivl, r->ivl), wp_num(r->now), wp_pct(r->wait_now, r->now),
		      (uint32_t)r->id);
		snprintf(b, sizeof(b), "%s%s", t ? t->name : "?", t && t->exited ? " (exited)" : "");
		sfield(s, b, 16, 0);
		sput(s, " ", 1);
		if (procw) {
			sfield(s, t ? proc_label(L, t->proc, b, sizeof(b)) : "?", procw, 0);
			sput(s, " ", 1);
		}
		sfield(s, t && t->top_ivl >= 0 ? func_name(L, (uint32_t)t->top_ivl) : "-",
		       w - s->col, 1);
	} else if (r->kind == ROW_BREAKDOWN) {
		const struct lfunc *f = L->funcs[L->expanded];
		sputf(s, "%5.1f%% %9s   %5.1f%% %9s  ", wp_pct(r->ivl, f->ivl), wp_num(r->ivl),
		      wp_pct(r->now, f->now), wp_num(r->now));
		char pl[96] = "";
		if (L->nprocs_loaded > 1)
			snprintf(pl, sizeof(pl), " in %s",
				 proc_label(L, (uint32_t)(r->id >> 32), (char[80]){ 0 }, 80));
		snprintf(b, sizeof(b), "  `- %s (tid %u)%s", thread_name(L, r->id), (uint32_t)r->id,
			 pl);
		sfield(s, b, w - s->col, 0);
	} else if (r->kind == ROW_WAIT_KIND || r->kind == ROW_WAIT) {
		sputf(s, "%5.1f%% %9s   %5.1f%% %9s  ", wp_pct(r->ivl, ivl_whole),
		      wp_dur(r->wait_ivl), wp_pct(r->now, now_whole), wp_dur(r->wait_now));
		if (r->kind == ROW_WAIT_KIND) {
			snprintf(b, sizeof(b), "%s", wp_wait_kind_name((enum wp_wait_kind)r->id));
			sesc(s, "\033[1m");
		} else {
			wait_row_text(L, L->waits[r->id], b, sizeof(b));
		}
		sfield(s, b, w - s->col, 0);
	} else {
		const struct lfunc *f = L->funcs[r->id];
		sputf(s, "%5.1f%% %9s   %5.1f%% %9s  ", wp_pct(r->ivl, ivl_whole), wp_num(r->ivl),
		      wp_pct(r->now, now_whole), wp_num(r->now));
		int namew = w - s->col - (modw ? modw + 1 : 0);
		sfield(s, f->key, namew, 1);
		if (modw) {
			sput(s, " ", 1);
			sfield(s, f->module, modw, 0);
		}
	}
}

/* Columns: interval self% + samples, overall self% + samples, then the name (waits: share
 * of every sample and time, then the kind and object). */
static void draw_table(struct live *L, struct scr *s, int top, int height)
{
	int w = L->cols;
	int modw = w >= 100 ? 22 : w >= 80 ? 14 : 0;
	int procw = L->nprocs_loaded > 1 && w >= 90 ? 20 : 0;
	int y = top;
	if (height < 3)
		return;
	draw_titles(L, s, y, modw, procw);
	y += 2;
	int avail = height - 2;
	if (!L->loaded || !L->nrows) {
		srow(s, y++);
		sput(s, !L->loaded ? "" : L->view == VIEW_WAITS ? "  (no waits known yet)" :
			"  (no samples yet)", INT_MAX);
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
		struct lthread *t = thread_by_key(L, L->filter_thread);
		ivl_whole = t ? t->ivl : 0;
		now_whole = t ? t->now : 0;
	}
	for (int i = L->scroll; i < (int)L->nrows && y < top + height; i++) {
		const struct row *r = &L->rowv[i];
		srow(s, y++);
		if (i == L->sel)
			sesc(s, "\033[7m");
		draw_row(L, s, r, modw, procw, ivl_whole, now_whole);
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
		sput(&s, " q close view  t functions  w waits  s sort (*)  j/k move  Enter its "
			 "functions  p pause", INT_MAX);
	else if (L->view == VIEW_WAITS)
		sput(&s, " q close view  w functions  t threads  s sort (*)  j/k move  p pause",
		     INT_MAX);
	else
		sput(&s, " q close view  t threads  w waits  s sort (*)  j/k move  Enter by thread  "
			 "Esc all  p pause", INT_MAX);
	sbar_end(&s);
	term_draw(s.b, s.n);
	free(s.b);
}

/* ---------------------------------------------------------------------------------------- */
/* Keys */

static void switch_view(struct live *L, int view)
{
	L->view = view;
	L->sel = L->scroll = 0;
	L->sel_kind = -1;
}

/* Does what key `k` asks (keys.h). Returns 1 when the view should close (q). */
static int on_key(struct live *L, struct key k)
{
	int page = L->rows > 12 ? L->rows - 10 : 1;
	switch (keys_action(k)) {
	case ACT_NONE: break;
	case ACT_QUIT: return 1;
	case ACT_UP: select_row(L, L->sel - 1); break;
	case ACT_DOWN: select_row(L, L->sel + 1); break;
	case ACT_PGUP: select_row(L, L->sel - page); break;
	case ACT_PGDN: select_row(L, L->sel + page); break;
	case ACT_TOP: select_row(L, 0); break;
	case ACT_BOTTOM: select_row(L, (int)L->nrows - 1); break;
	case ACT_ALL:
		L->filter_on = 0;
		L->expanded_on = 0;
		break;
	case ACT_THREADS:
		switch_view(L, L->view == VIEW_THREADS ? VIEW_FUNCS : VIEW_THREADS);
		break;
	case ACT_WAITS:
		switch_view(L, L->view == VIEW_WAITS ? VIEW_FUNCS : VIEW_WAITS);
		break;
	case ACT_SORT: L->sort_overall = !L->sort_overall; break;
	case ACT_PAUSE: L->paused = !L->paused; break;
	case ACT_ENTER:
		if (!L->nrows || L->sel >= (int)L->nrows || L->view == VIEW_WAITS)
			break;
		if (L->view == VIEW_THREADS) {
			L->filter_on = 1;
			L->filter_thread = L->rowv[L->sel].id;
			L->expanded_on = 0;
			switch_view(L, VIEW_FUNCS);
		} else if (!L->filter_on) {
			const struct row *r = &L->rowv[L->sel];
			uint32_t f = r->kind == ROW_BREAKDOWN ? L->expanded : (uint32_t)r->id;
			if (L->expanded_on && L->expanded == f) {
				L->expanded_on = 0;
			} else {
				L->expanded_on = 1;
				L->expanded = f;
			}
			L->sel_kind = ROW_FUNC;
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
			if (!L->paused && poll_checkpoints(L))
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
	HASH_CLEAR(hh, L->func_by_key);
	for (size_t i = 0; i < L->nfuncs; i++)
		free(L->funcs[i]);
	free(L->funcs);
	HASH_CLEAR(hh, L->wait_by_key);
	for (size_t i = 0; i < L->nwaits; i++)
		free(L->waits[i]);
	free(L->waits);
	free(L->rowv);
	for (size_t k = 0; k < L->nprocs; k++) {
		struct lproc *P = L->procs[k];
		wp_resolved_free(P->model);
		if (P->prof)
			wp_profile_free(P->prof);
		free(P->fmap);
		free(P);
	}
	free(L->procs);
	wp_symcache_free(L->symcache); /* after the models that used it */
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
	if (!(L.symcache = wp_symcache_new())) {
		fprintf(stderr, "wallprof: out of memory\n");
		return 1;
	}

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
