/* SPDX-License-Identifier: MIT */
/* The agent's settings, read from the environment once, in the constructor. A bad value
 * disables the agent: one line on stderr names the variable and what it accepts, and the
 * program runs exactly as it would without wallprof. */
/* Not async-signal-safe (getenv, the constructor's work); wp_config_out_path is (it only
 * formats into the caller's buffer). */
#ifndef WP_CONFIG_H
#define WP_CONFIG_H

#include <limits.h>

enum wp_mode { WP_MODE_WALL = 0, WP_MODE_CPU = 1 };

#define WP_DEFAULT_HZ 100
#define WP_DEFAULT_THREADS 16
#define WP_DEFAULT_OUT "wallprof.%p.prof"
#define WP_DEFAULT_CHECKPOINT_S 10

struct wp_config {
	enum wp_mode mode;
	int hz;               /* ticks per second, 1..10000 */
	int threads;          /* wall mode: threads sampled per tick, 0 = all */
	char out[PATH_MAX];   /* output path template, %p = pid */
	int quiet;            /* no summary line at exit */
	int signal;           /* WALLPROF_SIGNAL; 0 = choose (SIGPROF unless taken) */
	int checkpoint_s;     /* WALLPROF_CHECKPOINT: seconds between checkpoints, 0 = none */
	int root_pid;         /* WALLPROF_ROOT_PID (set by the CLI): whose file WALLPROF_OUT is */
	char run[64];         /* WALLPROF_RUN (set by the CLI): the run every process of the tree
			       * belongs to; "" when absent or not [A-Za-z0-9._-]{1,63} */
	int autostart;        /* WALLPROF_AUTOSTART: 1/0; -1 = when preloaded, not when linked */
	/* Test hooks (WALLPROF_TEST=signal-all,no-retry,tight-ration,no-unshare,exit-on-sampler,
	 * slow-holders, no-waits, linger, slow-tick, no-perf; the last three below):
	 * make the sampler signal every chosen thread, make the EINTR interposers pass EINTR
	 * through, shrink the first-look ration (0.1% of a core, a 100 µs allowance), keep the
	 * agent on the program's descriptor table (the fallback of fds.h), have the sampler
	 * end a process left without threads itself, as when no thread can be started for it,
	 * make the first batch of lock-holder samples wait 1 s (in poll) before signalling, so
	 * that a fork lands in a half-done tick, or turn off what waiting samples carry (no wait
	 * objects, so no owner reads and no holder samples; no schedstat or stat reads: sample.c's
	 * note_* hooks), so the tests can show that each protection or fallback does what it
	 * says, and the benchmark can price the waits. Never for real use. */
	int test_signal_all;
	int test_no_retry;
	int test_tight_ration;
	int test_no_unshare;
	int test_exit_on_sampler;
	int test_thread_sampler; /* the sampler on a thread of the program (the fallback) */
	int test_slow_holders;
	int test_no_waits;
	int test_linger; /* the signal handler stays 20 ms after each sample (handshake.h) */
	int test_tagless; /* requests go out with tgkill, as where rt_tgsigqueueinfo is refused */
	int test_slow_tick; /* each tick holds its lock 800 ms longer; a profile written during a
			     * tick by another thread says test_written_in_tick=1 (sampler.h) */
	int test_slow_fatal; /* the fatal-signal flush spins 10 ms before it stops the sampler,
			      * so that ticks signal its thread meanwhile (it blocks every
			      * signal there): what they get is not the program's (sample.c) */
	int test_long_slice; /* the scheduler's default slice for the sampler (sampler.c, short_slice) */
	int test_no_idle;   /* cpu mode: every tick does its whole work, idle or not (sampler.c's
			     * program_idle), for the tests to compare with */
	int test_no_perf;   /* no perf clock for threads that block the signal, as where the
			     * kernel refuses one (perfclock.h): their running time goes unseen */
};

/* Reads `getenv` into cfg. Returns 0, or -1 after printing the one-line complaint. */
/* All zero: what the sampler's modules read before their begin. They keep a pointer to the
 * run's settings (agent.c's, which outlive every sampler), not a copy: four copies of a
 * 4 KiB struct were four pages more for every process to touch at its start (issue 19). */
extern const struct wp_config wp_config_none;

int wp_config_load(struct wp_config *cfg, char *(*getenv_fn)(const char *));

/* The output path with %p replaced by `pid` (and %% by %). When the template has no %p and
 * this process is not the one it was meant for (a fork child, or another program started by
 * the profiled one), ".PID" goes before the extension so processes never overwrite each
 * other's profiles. Returns 0 or -ENAMETOOLONG. */
int wp_config_out_path(const struct wp_config *cfg, int pid, char *buf, unsigned long cap);

/* The run's list of processes that took no sample (one line each, agent.c): the output path
 * before its extension with ".unsampled" (wallprof.1234.prof -> wallprof.1234.unsampled, the
 * main file's stem, the same for every process of a run under the command); a template with
 * %p is cut before the first %p and its trailing '.', '-', '_' (wallprof.%p.prof ->
 * wallprof.unsampled: one list per directory and name under bare LD_PRELOAD). %% is %.
 * Returns 0 or -ENAMETOOLONG. */
int wp_config_unsampled_path(const struct wp_config *cfg, char *buf, unsigned long cap);

#endif
