/* SPDX-License-Identifier: MIT */
/* What the sampler knows about itself: samples taken and missed by cause, how long each
 * sampled thread was held (a log-linear histogram: fixed memory, ~3% resolution), and ticks
 * that ran late. Sampler thread only; read by the writer at the end. */
#ifndef WP_STATS_H
#define WP_STATS_H

#include <stdint.h>

enum wp_miss {
	WP_MISS_EXITED,   /* the thread ended before it answered */
	WP_MISS_TIMEOUT,  /* no answer before the deadline */
	WP_MISS_BLOCKED,  /* the thread blocks the sampling signal */
	WP_MISS_LATE,     /* answered, but resumed before we finished reading */
	WP_MISS_NOSLOT,   /* every handshake slot busy with a stalled handler */
	WP_MISS_ERROR,    /* tgkill or the stack read failed otherwise */
	WP_MISS_MEMORY,   /* no memory to count it */
	WP_MISS_MOVING,   /* kept waking and blocking while we looked; not worth a signal */
	WP_MISS_RATIONED, /* a blocked thread never sampled before, over the first-visit ration */
	WP_MISS__N
};

struct wp_stats {
	uint64_t ticks, ticks_late;
	uint64_t ticks_idle;        /* cpu mode: ticks that found no thread had run (sampler.c) */
	uint64_t samples;           /* counted samples (signalled + reused) */
	uint64_t signalled;         /* of which: a handshake */
	uint64_t reused;            /* of which: the thread had not run, last stack reused */
	uint64_t unsignalled;       /* of which: blocked in a call, read from /proc, no signal */
	uint64_t truncated;         /* unwinds that stopped before the root */
	uint64_t missed[WP_MISS__N];
	uint64_t window_max_ns, window_sum_ns, window_n;
	uint64_t waits_lost;        /* waiting samples counted without their wait (no memory) */
	uint64_t unwind_ns;         /* time spent unwinding, for the overhead estimate */
	uint64_t syscall_refused;   /* /proc syscall files refused: blocked threads signalled */
	uint64_t unseen_ns;         /* time threads ran blocking the signal where no perf clock
				     * could be had (perfclock.h): seen by no sample */
};

extern struct wp_stats wp_stats;

void wp_stats_window(uint64_t ns);
/* Quantile q (0..1) of the suspension window in ns, from the histogram. */
uint64_t wp_stats_window_quantile(double q);
const char *wp_miss_name(enum wp_miss m);
uint64_t wp_stats_missed_total(void);

#endif
