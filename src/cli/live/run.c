/* SPDX-License-Identifier: MIT */
/* --live: the run. The program is started under the agent with WALLPROF_CHECKPOINT=1: once a
 * second the agent of every process of the tree replaces its profile file (atomically, by
 * rename) with everything sampled so far: the main file for the process started here,
 * NAME.PID.EXT beside it for the others (procfiles.c). This process only watches those files
 * (a directory scan and a stat each every 200 ms), reads each new checkpoint and hands it to
 * the counts (model/live_counts.h: wp_live_absorb), which bring that process's model up to
 * date with it. Meanwhile the loop takes keys, signals (term.c) and the program's output
 * (relay.c), and redraws the view (view.c). */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "live/procfiles.h"
#include "live/term.h"
#include "live/view.h"

#define STAT_EVERY_NS 200000000ull /* how often to look for a new checkpoint */
#define STALE_NS 2500000000ull     /* no checkpoint for this long: nothing in the last
				    * interval (the process ended, or is stopped) */

uint64_t live_mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Whether checkpoint p belongs to this run: the main file's is the process we started; the
 * others carry the run id that process gave the tree ("<its pid>-..."). */
static int of_this_run(const struct live *L, const struct wp_profile *p, int is_main)
{
	if (is_main)
		return p->info.pid == (long long)(L->target ? L->target : L->pid);
	const char *run = p->info.run;
	char want[32];
	snprintf(want, sizeof(want), "%ld-", (long)L->pid);
	return run && !strncmp(run, want, strlen(want));
}

/* Reads process k's file when the agent has replaced it since last time. Returns 1 when a
 * new checkpoint was taken in. */
static int poll_proc(struct live *L, uint32_t k, uint64_t now)
{
	struct wp_live_proc *P = L->m.procs[k];
	struct stat st;
	if (stat(P->path, &st) != 0)
		return 0;
	if (P->st_valid && st.st_ino == P->st.st_ino && st.st_dev == P->st.st_dev &&
	    st.st_size == P->st.st_size && st.st_mtim.tv_sec == P->st.st_mtim.tv_sec &&
	    st.st_mtim.tv_nsec == P->st.st_mtim.tv_nsec) {
		if (P->loaded && !P->settled && now - P->changed_at >= STALE_NS)
			wp_live_settle(&L->m, k);
		return 0;
	}
	struct wp_profile *p;
	char err[256];
	if (wp_profile_read_some(P->path, WP_READ_NO_TIMELINE, &p, err, sizeof(err)) != 0)
		return 0; /* mid-replacement or not ours yet: next time */
	int ours = of_this_run(L, p, P->is_main);
	if (ours)
		wp_live_absorb(&L->m, k, p); /* keeps p */
	else
		wp_profile_free(p);
	P->st = st; /* a stale file from an earlier run is not read again until replaced */
	P->st_valid = 1;
	P->changed_at = now;
	return ours;
}

static void found_proc(const char *path, long pid, void *arg)
{
	struct live *L = arg;
	wp_live_proc_at(&L->m, path, pid, 0);
}

/* Looks for new processes' files, and new checkpoints of every process. Returns 1 when
 * anything changed. */
static int poll_checkpoints(struct live *L)
{
	uint64_t now = live_mono();
	if (!L->m.nprocs)
		wp_live_proc_at(&L->m, L->path, L->target ? L->target : L->pid, 1);
	procfiles_scan(L->path, found_proc, L);
	int changed = 0, first_loads = 0;
	for (size_t k = 0; k < L->m.nprocs; k++) {
		int was_settled = L->m.procs[k]->settled;
		/* A process's first checkpoint costs symbolizing all its modules: one a poll, so
		 * that a tree starting many processes at once does not hold the keys and the
		 * screen (the others are read at the next polls, 200 ms apart). */
		int was_loaded = L->m.procs[k]->loaded;
		if (!was_loaded && first_loads)
			continue;
		changed |= poll_proc(L, (uint32_t)k, now);
		first_loads += !was_loaded && L->m.procs[k]->loaded;
		changed |= L->m.procs[k]->settled != was_settled;
		/* a process killed before its final write: its last checkpoint stays */
		if (L->m.procs[k]->loaded && !L->m.procs[k]->ended && L->m.procs[k]->pid > 0 &&
		    kill((pid_t)L->m.procs[k]->pid, 0) != 0 && errno == ESRCH) {
			L->m.procs[k]->ended = 1;
			changed = 1;
		}
		if (L->m.procs[k]->ended && L->m.procs[k]->model)
			wp_live_release(&L->m, (uint32_t)k);
	}
	if (changed)
		wp_live_tally(&L->m);
	return changed;
}

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
		if (L->target)
			wp_exec_outside_live(L->o, L->path); /* --live --pid */
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
		live_window_size(L);
		live_draw(L, 1);
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
		live_draw(L, 0);
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
			live_window_size(L);
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

		uint64_t now = live_mono();
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
				if (live_on_key(L, k))
					key_typed(L, 1);
				redraw = 1;
			}
		}
		if (term_in_view() && redraw)
			live_draw(L, full);

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
		now = live_mono();
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
			    next_tick > live_mono() + 100000000ull)
				next_tick = live_mono() + 100000000ull;
		}
		if (key_at >= 0 && (pf[key_at].revents & POLLIN))
			key_typed(L, live_read_keys(L));
		else if (key_at >= 0 && (pf[key_at].revents & (POLLHUP | POLLERR | POLLNVAL)))
			close_view(L, NULL); /* the terminal went away */
	}
	relay_drain(&L->out);
	return status;
}


int live_run(struct live *L, const char *agent)
{
	term_open();
	if (term_signals_init() != 0) {
		perror("wallprof: pipe");
		return -1;
	}
	if (spawn(L, agent) != 0)
		return -1;
	L->t0 = live_mono();
	term_signals_catch(L->pid);

	if (term_enter() != 0) {
		fprintf(stderr, "wallprof: cannot set up the terminal: %s\n", strerror(errno));
		L->out.passthrough = 1;
	} else {
		live_window_size(L);
		live_draw(L, 1);
	}

	int status = live_loop(L);
	close_view(L, NULL);
	term_signals_end();
	term_close();
	relay_close(&L->out);
	return status;
}
