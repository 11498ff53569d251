/* The sampler thread: paces ticks, picks threads (wall: a random subset, running or blocked;
 * cpu: the threads that used CPU since the last tick, in proportion to it), holds each one
 * with the handshake just long enough to copy its registers and stack, then unwinds the copy
 * after the thread has been resumed, and counts the stack. */
#ifndef WP_SAMPLER_H
#define WP_SAMPLER_H

#include <stdint.h>

#include "config.h"

/* Starts the thread (named "wallprof", all signals blocked). Returns 0 or -errno. */
int wp_sampler_start(const struct wp_config *cfg);
/* Asks it to stop and waits (bounded). Safe to call when it never started. */
void wp_sampler_stop(void);
/* The sampler's own CPU time so far, ns. */
uint64_t wp_sampler_cpu_ns(void);
/* CLOCK_MONOTONIC / CLOCK_REALTIME at start, ns. */
uint64_t wp_sampler_start_ns(void);
uint64_t wp_sampler_start_unix_ns(void);
/* Ticks asked for per second, and the sampler's tid. */
int wp_sampler_tid(void);

#endif
