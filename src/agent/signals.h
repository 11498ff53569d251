/* SPDX-License-Identifier: MIT */
/* Living with the program's signals.
 *
 * - Which signal samples: SIGPROF unless WALLPROF_SIGNAL names another, or something already
 *   handles SIGPROF when the agent starts (another profiler): then a free real-time signal,
 *   said once on stderr.
 * - If the program installs its own disposition for our signal later (sigaction() and
 *   signal() are interposed; Go's runtime with cgo goes through them too), the signal is
 *   shared (chaining, as the JVM's libjsig does): our handler stays, the program's
 *   disposition is kept and gets every delivery that is not one of our requests, with its
 *   siginfo and ucontext; the program sees its own disposition when it asks. One installed
 *   with the system call itself is noticed by the sampler before each batch and put back
 *   under ours. Said once (wp_log). Only a program that waits for our signal (sigwait,
 *   signalfd) makes the sampler move to a free real-time signal.
 * - Fatal signals (SIGSEGV, SIGABRT, SIGTERM, SIGINT, ...) that the program leaves at their
 *   default get a handler that writes the samples taken so far, then lets the process die of
 *   the same signal (same status, core dump as before). The program sees SIG_DFL when it asks.
 * The agent's own code must call wp_real_sigaction, never sigaction (that would be us). */
#ifndef WP_SIGNALS_H
#define WP_SIGNALS_H

#include <signal.h>
#include <ucontext.h>

int wp_real_sigaction(int sig, const struct sigaction *act, struct sigaction *old);

/* Parses WALLPROF_SIGNAL ("PROF", "SIGPROF", "RTMIN+3", "RTMAX-2", or a number). Returns the
 * signal, 0 when unset, -1 when invalid (after the one-line complaint). */
int wp_signals_parse_env(const char *value);
/* The signal to sample with, given the setting (0 = choose). */
int wp_signals_choose(int wanted);
/* The program takes `sig`, our signal (`how`: "installs its own handler for", "waits for"):
 * sampling moves to a free real-time signal not in `avoid`, said once on stderr. With none
 * left, sampling stops, or, when `avoid` is given, stays where it is. Returns 0 when moved,
 * -1 otherwise. */
int wp_signals_move_away(int sig, const sigset_t *avoid, const char *how);
/* Puts `handler` (the agent's) on `sig`, keeping what was there as the program's disposition
 * to chain to (the first time for that signal). Returns 0 or -errno. */
int wp_signals_take(int sig, void (*handler)(int, siginfo_t *, void *));
/* A delivery of a signal our handler is on that is not one of the agent's requests: does what
 * the program's disposition says (its handler, with its mask and flags, on its siginfo and
 * ucontext unchanged; SIG_IGN; SIG_DFL's death, profile written first). Async-signal-safe. */
void wp_signals_forward(int sig, siginfo_t *info, void *ucontext);
/* Whether the program has a handler of its own on `sig`, a signal our handler is on.
 * Async-signal-safe. */
int wp_signals_program_handles(int sig);
/* The sampler, before signalling: if the program put its own disposition on `sig` with the
 * system call (unseen by sigaction()), ours goes back on top, chaining to it. One
 * rt_sigaction system call when nothing changed. */
void wp_signals_keep_ours(int sig);
/* The context a sample should show, given the one our handler interrupted: when that is the
 * first instruction of one of the program's handlers (the kernel delivered its signal and
 * then ours at once, before any of its code ran: Go's SIGURG and our request both pending
 * while the thread waited for a CPU), the context that signal interrupted, which its handler
 * receives (rdx, its third argument). That handler runs on the program's sigaltstack, where
 * the stack copy would miss the interrupted code's callers. Async-signal-safe. */
const ucontext_t *wp_signals_outer_context(const void *ucontext);
/* In a fork child, first thing: the lock around the shared signal's records is free. */
void wp_signals_fork_child(void);
/* exec: the program's SIG_IGN on a shared signal survives exec, as it would unprofiled;
 * after a failed exec our handler goes back. */
void wp_signals_before_exec(void);
void wp_signals_after_failed_exec(void);
/* Installs the fatal-signal handlers that flush the profile, and wraps the handlers other
 * libraries' constructors installed before ours. `flush` runs in a signal handler and must
 * be async-signal-safe. */
void wp_signals_install_fatal(void (*flush)(int sig));
/* The same, deferred to the sampler's first tick (wp_signals_finish_setup, on the sampler's
 * task, which shares the program's handler table): about 60 rt_sigaction calls a process
 * that ends before its first tick never makes (issue 19). Until then there is nothing to
 * flush, and a death by a signal is seen by the task (the program's pidfd) and written as
 * the exit hooks would have; the program's sigaction calls meanwhile take the chain lock, so
 * the deferred set-up never installs over a handler the program has just set. */
void wp_signals_defer_fatal(void (*flush)(int sig));
void wp_signals_finish_setup(void);
/* Notes where libc's code lies, so the program's handlers can tell a system call they leave
 * to be restarted (which they did not cut short) from one they interrupted (constructor). */
void wp_signals_find_libc(void);

/* The agent's handler brackets its run with these (it blocks no signal, so the program's may
 * land inside it): the program's handler then judges the call our signal interrupted, whose
 * context is `ucontext`, rather than our handler's own wait (signals.c). Enter returns the
 * value to give back to leave. Async-signal-safe. */
void *wp_signals_enter_ours(void *ucontext);
void wp_signals_leave_ours(void *outer);

#endif
