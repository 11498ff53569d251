/* SPDX-License-Identifier: MIT */
/* Calls interrupted by our own signal are retried, invisibly to the program.
 *
 * The sampler signals only threads that /proc says are running, but a thread can enter a
 * blocking call between that check and the signal's arrival. Calls the kernel restarts under
 * SA_RESTART are safe; the ones it does not restart (sleeps, polls, timed waits, socket calls
 * with timeouts, pause, sigsuspend...) are interposed here: when one fails with EINTR and the
 * agent's handler ran on this thread during the call, it is called again with the remaining
 * timeout. A signal of the program's own still interrupts it as before (see the limits in
 * docs/design.md). */
#ifndef WP_EINTR_H
#define WP_EINTR_H

/* Incremented by the agent's signal handler on the thread it runs on (initial-exec TLS:
 * async-signal-safe, no allocation). */
extern __thread unsigned wp_our_signals __attribute__((tls_model("initial-exec")));
/* Incremented on the thread that runs any of the PROGRAM's signal handlers (signals.c wraps
 * them): a call that failed with EINTR while one of them ran is the program's business and is
 * never retried, even if our signal arrived at the same moment. */
extern __thread unsigned wp_program_signals __attribute__((tls_model("initial-exec")));

/* A snapshot of both counters, taken just before a call. */
static inline unsigned long long wp_signals_snap(void)
{
	return ((unsigned long long)wp_program_signals << 32) | wp_our_signals;
}

/* The rule every interposer applies (eintr.c, transfers.c): since the snapshot `before`, the
 * agent's handler ran on this thread and none of the program's did (and the test hook has not
 * switched retries off). Then whatever cut the call short was ours, and the call is resumed. */
int wp_ours_since(unsigned long long before);

/* Resolves the real libc functions; called from the constructor (interposers also resolve
 * lazily if the program calls them before that). */
void wp_eintr_init(void);
/* Test hook: pass EINTR through as if there were no interposers. */
void wp_eintr_disable_retry(void);

#endif
