/* SPDX-License-Identifier: MIT */
/* --live: the view. The rows of the current view (functions, threads, waits) built from the
 * counts (model/live_counts.h), the whole screen drawn into one buffer and written at once,
 * and what each key does.
 *
 * Keys (live/keys.c: keys_action): q closes the view (the program runs on; its report
 * follows when it exits), t switches between functions and threads, w between functions and
 * waits, s sorts by the last interval or the whole run, j/k or the arrows (PgUp/PgDn,
 * Home/End, g/G) move the selection, Enter shows the selected function's threads (or, in the
 * thread list, that thread's functions), Esc or a goes back to all threads, p or space
 * pauses the numbers. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "uthash_cfg.h"

#include "alloc.h"
#include "live/screen.h"
#include "live/term.h"
#include "live/view.h"
#include "textfmt.h"

#define BREAKDOWN_MAX 8 /* threads listed under an expanded function */

/* A function's name in exactly `w` columns, shortened as every report shortens one
 * (textfmt.h's wp_fit_name: a C++ parameter list first, then template arguments, then
 * leading namespaces). */
static void sname(struct scr *s, const char *name, int w)
{
	char b[1024];
	sfield(s, wp_fit_name(name, w, b, sizeof(b)), w);
}

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
	if (wp_grow(&L->rowv, &L->caprows, L->nrows + 1, sizeof(*L->rowv)))
		term_oom();
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
		if (L->m.kind_now[k])
			add_row(L, (struct row){ ROW_WAIT_KIND, (uint64_t)k, L->m.kind_ivl[k],
						 L->m.kind_now[k], L->m.kind_ns_ivl[k],
						 L->m.kind_ns_now[k] });
	sort_rows(L, 0);
	size_t kinds = L->nrows;
	for (size_t i = 0; i < L->m.nwaits; i++) {
		const struct wp_live_wait *w = L->m.waits[i];
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
		struct wp_live_thread *t, *tt;
		HASH_ITER(hh, L->m.threads, t, tt) {
			if (!t->now)
				continue;
			add_row(L, (struct row){ ROW_THREAD, t->key, t->ivl, t->now, t->wait_ivl,
						 t->wait_now });
		}
		sort_rows(L, 0);
		return;
	}
	if (L->filter_on) {
		struct wp_live_tf *c, *ct;
		HASH_ITER(hh, L->m.tf, c, ct) {
			if (((uint64_t)c->key.proc << 32 | c->key.tid) == L->filter_thread && c->now)
				add_row(L, (struct row){ ROW_FUNC, c->key.func, c->ivl, c->now, 0, 0 });
		}
	} else {
		for (size_t i = 0; i < L->m.nfuncs; i++)
			if (L->m.funcs[i].now)
				add_row(L, (struct row){ ROW_FUNC, (uint32_t)i, L->m.funcs[i].ivl,
							 L->m.funcs[i].now, 0, 0 });
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
	struct wp_live_tf *c, *ct;
	HASH_ITER(hh, L->m.tf, c, ct) {
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
	struct wp_live_thread *t = wp_live_thread(&L->m, key);
	return t ? t->name : "?";
}

void live_window_size(struct live *L)
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
	snprintf(seg[n++], sizeof(seg[0]), "processes %d (%d live):", L->m.nprocs_loaded,
		 L->m.nprocs_live);
	for (int ended = 0; ended < 2; ended++)
		for (size_t k = 0; k < L->m.nprocs; k++) {
			const struct wp_live_proc *P = L->m.procs[k];
			if (!P->loaded || P->ended != ended)
				continue;
			if (n == PROC_SEGS) {
				snprintf(seg[n - 1], sizeof(seg[0]), "(and more)");
				continue;
			}
			char b[96];
			snprintf(seg[n++], sizeof(seg[0]), "%s%s", wp_live_proc_label(&L->m, (uint32_t)k, b,
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
	if (L->m.command[0])
		snprintf(cmd, sizeof(cmd), "%s", L->m.command);
	else if (L->target) /* --pid: its command line comes with the first checkpoint */
		snprintf(cmd, sizeof(cmd), "pid %ld (attached)", (long)L->target);
	else
		for (char **a = L->o->cmd; *a; a++)
			snprintf(cmd + strlen(cmd), sizeof(cmd) - strlen(cmd), "%s%s", a == L->o->cmd ?
				 "" : " ", *a);
	sput(s, cmd, INT_MAX);
	sbar_end(s);

	char seg[4][160];
	int n = 0, y = 1, two = L->rows >= 16 ? 2 : 1;
	const char *mode = L->m.mode[0] ? L->m.mode : L->o->mode ? L->o->mode : "wall";
	snprintf(seg[n++], sizeof(seg[0]), "pid %ld", (long)(L->target ? L->target : L->pid));
	char per[64] = "";
	if (!strcmp(mode, "wall") && L->m.loaded && L->m.per_tick > 0)
		snprintf(per, sizeof(per), " (up to %lld threads a tick)", L->m.per_tick);
	else if (!strcmp(mode, "wall") && L->m.loaded)
		snprintf(per, sizeof(per), " (every thread every tick)");
	snprintf(seg[n++], sizeof(seg[0]), "%s mode, %lld Hz%s", mode,
		 L->m.hz ? L->m.hz : L->o->hz ? L->o->hz : 100, per);
	snprintf(seg[n++], sizeof(seg[0]), "elapsed %s%s", clock_of(now - L->t0),
		 L->paused ? "   [paused]" : "");
	y = sflow(s, y, seg, n, two);

	n = 0;
	if (L->m.loaded) {
		snprintf(seg[n++], sizeof(seg[0]), "samples %s (+%s in %.1f s)", wp_num(L->m.total_now),
			 wp_num(L->m.total_ivl), (double)L->m.ivl_ns / 1e9);
		snprintf(seg[n++], sizeof(seg[0]), "threads %lld (%d live)", L->m.threads_seen,
			 L->m.nthreads_live);
		snprintf(seg[n++], sizeof(seg[0]), "sampler %.1f%% of a core, threads held %.2f%%",
			 L->m.sampler_pct, L->m.held_pct);
	} else {
		snprintf(seg[n++], sizeof(seg[0]), "waiting for the first checkpoint (the agent "
			 "writes one a second)...");
	}
	y = sflow(s, y, seg, n, two);
	if (L->m.nprocs_loaded > 1)
		y = draw_procs(L, s, y, L->rows >= 24 ? 3 : 1);

	if (L->m.deadlock[0]) { /* what matters most, on a line of its own */
		srow(s, y++);
		sesc(s, "\033[1;31m");
		sput(s, "DEADLOCK ", INT_MAX);
		sesc(s, "\033[22;39m");
		sput(s, L->m.deadlock, INT_MAX);
		srow_end(s);
	}
	srow(s, y++);
	if (L->status[0]) {
		sesc(s, "\033[1m");
		sput(s, L->status, INT_MAX);
	} else if (L->m.warning[0]) {
		sput(s, "warning: ", INT_MAX);
		sput(s, L->m.warning, INT_MAX);
	} else {
		sputf(s, "profile: %s", L->path);
	}
	srow_end(s);
	return y;
}

/* A wait object's row: "kind  object[ in prog pid][ (held by NAME tid=N)]: a waiting
 * thread[ and others]". */
static void wait_row_text(struct live *L, const struct wp_live_wait *w, char *b, size_t cap)
{
	char pl[96] = "", held[128] = "", who[256] = "";
	uint64_t key = (uint64_t)w->proc << 32;
	if (L->m.nprocs_loaded > 1)
		snprintf(pl, sizeof(pl), " in %s", wp_live_proc_label(&L->m, w->proc, (char[80]){ 0 }, 80));
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
	if (L->m.loaded)
		snprintf(title, sizeof(title), "LAST %.1f s%s", (double)L->m.ivl_ns / 1e9,
			 L->sort_overall ? "" : "*");
	else
		snprintf(title, sizeof(title), "LAST INTERVAL%s", L->sort_overall ? "" : "*");
	const char *overall = L->sort_overall ? "OVERALL*" : "OVERALL";
	if (L->view == VIEW_THREADS) {
		sputf(s, "%-17s%-16s", title, overall);
		srow_end(s);
		srow(s, y++);
		sesc(s, "\033[1m");
		sputf(s, "%7s %6s   %7s %6s  %-7s %-16s ", "samples", "wait", "samples", "wait", "tid",
		      "thread");
		if (procw) {
			sfield(s, "process", procw);
			sput(s, " ", 1);
		}
		sfield(s, "hottest function in the last interval", w - s->col);
	} else if (L->view == VIEW_WAITS) {
		sputf(s, "%-19s%-18s WAITS: time per kind, then per object", title, overall);
		srow_end(s);
		srow(s, y++);
		sesc(s, "\033[1m");
		sputf(s, "%6s %9s   %6s %9s  ", "share", "time", "share", "time");
		sfield(s, "kind      object (held by): waiting threads", w - s->col);
	} else {
		sputf(s, "%-19s%-18s", title, overall);
		if (L->filter_on)
			sputf(s, " thread %s (tid %u): Esc for all threads",
			      thread_name(L, L->filter_thread), (uint32_t)L->filter_thread);
		srow_end(s);
		srow(s, y++);
		sesc(s, "\033[1m");
		sputf(s, "%6s %9s   %6s %9s  ", "self", "samples", "self", "samples");
		int namew = w - s->col - (modw ? modw + 1 : 0);
		sfield(s, "function", namew);
		if (modw) {
			sput(s, " ", 1);
			sfield(s, "module", modw);
		}
	}
	srow_end(s);
}

/* One row of the table. */
static void draw_row(struct live *L, struct scr *s, const struct row *r, int modw, int procw,
		     uint64_t ivl_whole, uint64_t now_whole)
{
	int w = L->cols;
	char b[512];
	if (r->kind == ROW_THREAD) {
		struct wp_live_thread *t = wp_live_thread(&L->m, r->id);
		sputf(s, "%7s %5.1f%%   %7s %5.1f%%  %-7u ", wp_num(r->ivl),
		      wp_pct(r->wait_ivl, r->ivl), wp_num(r->now), wp_pct(r->wait_now, r->now),
		      (uint32_t)r->id);
		snprintf(b, sizeof(b), "%s%s", t ? t->name : "?", t && t->exited ? " (exited)" : "");
		sfield(s, b, 16);
		sput(s, " ", 1);
		if (procw) {
			sfield(s, t ? wp_live_proc_label(&L->m, t->proc, b, sizeof(b)) : "?", procw);
			sput(s, " ", 1);
		}
		sname(s, t && t->top_ivl >= 0 ? L->m.funcs[t->top_ivl].name : "-", w - s->col);
	} else if (r->kind == ROW_BREAKDOWN) {
		const struct wp_live_func *f = &L->m.funcs[L->expanded];
		sputf(s, "%5.1f%% %9s   %5.1f%% %9s  ", wp_pct(r->ivl, f->ivl), wp_num(r->ivl),
		      wp_pct(r->now, f->now), wp_num(r->now));
		char pl[96] = "";
		if (L->m.nprocs_loaded > 1)
			snprintf(pl, sizeof(pl), " in %s",
				 wp_live_proc_label(&L->m, (uint32_t)(r->id >> 32), (char[80]){ 0 }, 80));
		snprintf(b, sizeof(b), "  `- %s (tid %u)%s", thread_name(L, r->id), (uint32_t)r->id,
			 pl);
		sfield(s, b, w - s->col);
	} else if (r->kind == ROW_WAIT_KIND || r->kind == ROW_WAIT) {
		sputf(s, "%5.1f%% %9s   %5.1f%% %9s  ", wp_pct(r->ivl, ivl_whole),
		      wp_dur(r->wait_ivl), wp_pct(r->now, now_whole), wp_dur(r->wait_now));
		if (r->kind == ROW_WAIT_KIND) {
			snprintf(b, sizeof(b), "%s", wp_wait_kind_name((enum wp_wait_kind)r->id));
			sesc(s, "\033[1m");
		} else {
			wait_row_text(L, L->m.waits[r->id], b, sizeof(b));
		}
		sfield(s, b, w - s->col);
	} else {
		const struct wp_live_func *f = &L->m.funcs[r->id];
		sputf(s, "%5.1f%% %9s   %5.1f%% %9s  ", wp_pct(r->ivl, ivl_whole), wp_num(r->ivl),
		      wp_pct(r->now, now_whole), wp_num(r->now));
		int namew = w - s->col - (modw ? modw + 1 : 0);
		sname(s, f->name, namew);
		if (modw) {
			sput(s, " ", 1);
			sfield(s, f->module, modw);
		}
	}
}

/* Columns: interval self% + samples, overall self% + samples, then the name (waits: share
 * of every sample and time, then the kind and object). */
static void draw_table(struct live *L, struct scr *s, int top, int height)
{
	int w = L->cols;
	int modw = w >= 100 ? 22 : w >= 80 ? 14 : 0;
	int procw = L->m.nprocs_loaded > 1 && w >= 90 ? 20 : 0;
	int y = top;
	if (height < 3)
		return;
	draw_titles(L, s, y, modw, procw);
	y += 2;
	int avail = height - 2;
	if (!L->m.loaded || !L->nrows) {
		srow(s, y++);
		sput(s, !L->m.loaded ? "" : L->view == VIEW_WAITS ? "  (no waits known yet)" :
			"  (no samples yet)", INT_MAX);
		srow_end(s);
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
	uint64_t ivl_whole = L->m.total_ivl, now_whole = L->m.total_now;
	if (L->filter_on && L->view == VIEW_FUNCS) {
		struct wp_live_thread *t = wp_live_thread(&L->m, L->filter_thread);
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
		srow_end(s);
	}
}

void live_draw(struct live *L, int full)
{
	struct scr s = { 0 };
	s.width = L->cols;
	if (full)
		sesc(&s, "\033[2J");
	if (L->cols < 30 || L->rows < 8) {
		srow(&s, 0);
		sput(&s, "wallprof: terminal too small", INT_MAX);
		srow_end(&s);
		sesc(&s, "\033[J");
		term_draw(s.b, s.n);
		free(s.b);
		return;
	}
	uint64_t now = live_mono();
	int top = draw_header(L, &s, now);
	build_rows(L);
	follow_selection(L);
	const char *outl[RELAY_LINES];
	int lines = relay_last_lines(&L->out, outl);
	int out = lines && lines + 1 < L->rows - 12 ? lines + 1 : 0;
	int bottom = L->rows - 1 - out; /* the help bar takes the last row */
	srow(&s, top++);
	srow_end(&s);
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
		srow_end(&s);
		for (int i = 0; i < lines; i++) {
			srow(&s, y++);
			sput(&s, outl[i], INT_MAX);
			srow_end(&s);
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

int live_on_key(struct live *L, struct key k)
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
		if (live_on_key(L, k[i]))
			return 1;
	return 0;
}

int live_read_keys(struct live *L)
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
		L->keys_deadline = live_mono() + KEYS_ESC_WAIT_MS * 1000000ull;
	return 0;
}

