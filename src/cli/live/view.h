/* SPDX-License-Identifier: MIT */
/* --live: the state of the view and of the run it watches, shared by the view (view.c: the
 * rows, drawing, what keys do) and the run (run.c: the program started under the agent, its
 * checkpoints found and counted, the loop). The counts themselves are the model's
 * (model/live_counts.h); the view only reads them. */
#ifndef WP_LIVE_VIEW_H
#define WP_LIVE_VIEW_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

#include "cli.h"
#include "live/keys.h"
#include "live/relay.h"
#include "live_counts.h"

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
	pid_t pid;              /* the child: the program, or (--pid) the outside sampler */
	pid_t target;           /* --pid: the process sampled (its files say so), else 0 */
	uint64_t t0;
	struct relay out;       /* the program's output */
	struct keys keys;       /* an escape sequence the last read cut */
	uint64_t keys_deadline; /* when it is given up (a lone ESC is then the Esc key) */

	struct wp_live_counts m; /* every process's counts, each with its model */

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

/* The monotonic clock, in ns. */
uint64_t live_mono(void);

/* view.c. The terminal's size, taken again (and given to the program's terminal). */
void live_window_size(struct live *L);
/* The whole screen, in one write (full: cleared first). */
void live_draw(struct live *L, int full);
/* Does what key `k` asks (keys.h). Returns 1 when the view should close (q). */
int live_on_key(struct live *L, struct key k);
/* Reads what the keyboard has; an escape sequence cut by the read is finished by the next
 * one (or, for a lone ESC, by KEYS_ESC_WAIT_MS of nothing). Returns 1 when the view should
 * close. */
int live_read_keys(struct live *L);

/* run.c. Starts the program under `agent`, shows the view until it exits, and gives the
 * terminal back. Returns the program's wait status, or -1 when it could not be started
 * (message printed). */
int live_run(struct live *L, const char *agent);

#endif
