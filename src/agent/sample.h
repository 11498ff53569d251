/* SPDX-License-Identifier: MIT */
/* Taking samples (sample.c): what the sampler's loop (sampler.c) does at each tick. Sampler
 * thread only, under its tick lock; not async-signal-safe (a tick allocates, reads /proc and
 * unwinds, all outside the windows in which a thread is held; handshake.c is the window). */
#ifndef WP_SAMPLE_H
#define WP_SAMPLE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"

/* The run's settings, its start and the interval between ticks (both CLOCK_MONOTONIC ns). */
void wp_sample_begin(const struct wp_config *cfg, uint64_t run_start_ns, uint64_t every_ns);
/* The random choices (wall mode's subset, the tick's jitter): seed and draw. */
void wp_sample_seed(uint64_t seed);
uint64_t wp_sample_rand(void);
/* One tick: choose, hold, copy, unwind, count. */
void wp_sample_tick(uint64_t now);
/* Samples lock holders once more (wait_locks.c), after every owner read of the tick: the
 * same cheapest faithful way as any sample (the last stack when the thread has not run since,
 * a /proc copy when blocked, paid from the first-look ration, else one handshake batch), but
 * not counted: the stacks are interned (count 0 unless a counted sample has the same) and
 * reported with wp_locks_sampled. Touches none of the threads' sampling state. n <=
 * WP_HS_BATCH. */
struct wp_athread;
void wp_sample_holders(struct wp_athread **ts, size_t n, uint64_t now);
/* The sampler stops: the perf clocks of threads that block the signal (perfclock.h) are
 * closed, in cpu mode after counting what they recorded since the last tick (before the
 * final write). A sampler started again (a failed exec, wallprof_start) opens new ones as
 * it finds such threads. */
void wp_sample_end_clocks(void);
/* Forgets per-thread back-offs and the first-look ration (a new profile, a fork child). */
void wp_sample_forget(void);

#endif
