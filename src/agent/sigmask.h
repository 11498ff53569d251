/* The sampler thread's signal mask, answered without a system call.
 *
 * libunwind blocks every signal around each access to its cache of register rules (a
 * sigprocmask pair per frame unwound: ~14 pairs, ~5 us of the sampler's ~60 us tick on the
 * benchmark VM). The sampler thread runs with every signal blocked for its whole life, so on
 * that thread such calls cannot change anything; sigprocmask is interposed to answer them
 * there without entering the kernel. Any other call, on any other thread, goes to libc
 * unchanged. */
#ifndef WP_SIGMASK_H
#define WP_SIGMASK_H

/* Called by the sampler thread once: blocks every signal (it starts so anyway) and answers
 * this thread's later calls that would leave that mask as it is without a system call. */
void wp_sigmask_quiet_this_thread(void);
/* Resolves libc's sigprocmask (constructor; the interposer also resolves lazily). */
void wp_sigmask_init(void);
/* How many calls were answered without the system call (for META and the tests). */
unsigned long long wp_sigmask_skipped(void);

#endif
