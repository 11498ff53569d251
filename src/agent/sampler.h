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
/* Asks it to stop and waits (bounded). Safe to call when it never started, and on the
 * sampler thread itself (when it ends the process: nothing to wait for then). */
void wp_sampler_stop(void);
/* Called by the interposed pthread_exit: when the caller is the leader, records its signal
 * mask and has the sampler look soon whether it was the program's last thread.
 * Async-signal-safe (system calls and atomics only). */
void wp_sampler_leader_leaving(void);
/* From a signal handler or any thread: asks the sampler to stop and waits (futex, no locks)
 * until its loop has exited or `timeout_ns` passed. Returns 0 when it stopped. Returns at
 * once (nonzero) when called on the sampler thread itself. */
int wp_sampler_stop_async(uint64_t timeout_ns);
/* Holds the sampler between two ticks (its tables are then consistent and still). */
void wp_sampler_pause(void);
void wp_sampler_resume(void);
/* Registers the fork handlers that keep fork from catching the sampler mid-tick. Call before
 * the agent's own atfork child handler is registered (so it runs first in the child). */
void wp_sampler_atfork(void);
/* In a fork child: forget the parent's sampler (it does not exist here) and its samples. */
void wp_sampler_forget(void);
/* Called on the sampler thread every `every_ns` (checkpoints). */
void wp_sampler_set_checkpoint(void (*fn)(void), uint64_t every_ns);
/* The sampler's own CPU time so far, ns. */
uint64_t wp_sampler_cpu_ns(void);
/* CLOCK_MONOTONIC / CLOCK_REALTIME at start, ns. */
uint64_t wp_sampler_start_ns(void);
uint64_t wp_sampler_start_unix_ns(void);

#endif
