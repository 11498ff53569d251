/* SPDX-License-Identifier: MIT */
/* Suspending threads: a SIGPROF carrying the request (rt_tgsigqueueinfo, SI_QUEUE, value
 * "wprf" << 32 | generation) and the msg2/msg3/msg4 handshake. The signal may be shared with
 * the program (signals.h): the handler serves only deliveries that carry a request in flight
 * for its thread, drops late ones of ours, and passes every other to the program's
 * disposition.
 *
 *   sampler                          sampled thread (in wp's signal handler)
 *   -------                          ---------------------------------------
 *   request(gen, tid); signal  --->  claim the request (CAS), copy ucontext registers
 *   wait msg2 (deadline)       <---  msg2: "captured" (and ring the sampler's bell)
 *   read what it needs (stack)       wait msg3 (deadline)
 *   msg3: "released"           --->
 *   wait msg4 (deadline)       <---  msg4: "resumed", return from the handler
 *
 * Each "msg" is a phase of one futex word holding (generation << 3 | phase), so a handler that
 * runs late (the sampler gave up on it) sees a generation or phase it does not expect and
 * leaves without touching the slot: it can never scribble over the next sample. Every wait on
 * both sides has a deadline; a thread that never answers costs one missed sample.
 *
 * The sampler asks up to WP_HS_BATCH threads at once and serves them in the order they
 * answer: a thread that is runnable but waiting for a CPU no longer delays the others (on an
 * oversubscribed machine a serial handshake waited for each in turn). Only one thread is held
 * at a time unless several answer together; each is released as soon as it has been read. */
#ifndef WP_HANDSHAKE_H
#define WP_HANDSHAKE_H

#include <signal.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/ucontext.h>

/* What the handler copies out of its ucontext. */
struct wp_capture {
	greg_t gregs[NGREG];
	uint64_t t_enter_ns; /* handler entry (CLOCK_MONOTONIC) */
	uint64_t t_exit_ns;  /* just before msg4 */
	int64_t cpu_ns;      /* its CPU clock just before msg4 (-1: unknown) */
	int cpu;             /* where the handler ran (to decide whether spinning helps) */
};

enum wp_hs_result {
	WP_HS_OK = 0,
	WP_HS_EXITED,      /* the thread was gone (ESRCH) before or while we waited */
	WP_HS_TIMEOUT,     /* no answer within the deadline (signal blocked, or never scheduled) */
	WP_HS_LATE,        /* the handler gave up waiting for msg3; the copy is not consistent */
	WP_HS_ERROR,       /* the signal could not be sent for another reason */
	WP_HS_NOSLOT,      /* every slot is held by a handler that has not finished */
	WP_HS_BLOCKED,     /* the thread blocks the signal (or is blocking it): not sent */
};

/* At most this many threads are asked at once. */
#define WP_HS_BATCH 4

/* One thread to sample, and what became of it. */
struct wp_hs_request {
	pid_t tid;
	uint64_t fallback_mask;   /* its mask if it has published none (threadmask.h) */
	enum wp_hs_result result; /* out */
	uint64_t window_ns;       /* out: how long it was held (0 when unknown) */
	int64_t cpu_ns;           /* out: its CPU clock as it left the handler (-1: unknown) */
};

/* Called while reqs[i]'s thread is held in its handler: read what is needed (registers from
 * `cap`, its stack) and return. It runs inside the window: no allocation, no locks, no stdio,
 * no /proc, no dl_iterate_phdr. */
typedef void (*wp_hs_read_fn)(size_t i, const struct wp_capture *cap, void *arg);

/* Installs the handler for `signo`. Call once, from the constructor. Returns 0 or -errno. */
int wp_handshake_init(int signo);

/* Sampler side. Signals every thread of reqs[0..n) (n <= WP_HS_BATCH) at once; as each
 * answers, calls read(i) while it is held, then releases it. Returns once every thread has
 * resumed, given up, timed out or exited; reqs[i].result says which. WP_HS_OK means read(i)
 * ran and the thread was released in time: what it read is consistent. */
void wp_handshake_batch(struct wp_hs_request *reqs, size_t n, wp_hs_read_fn read, void *arg);

/* Moves sampling to signal `to` (0: stop signalling altogether), waiting until no handshake
 * is in flight so no late signal of ours reaches the old signal's new owner. Returns 0 or
 * -errno. */
int wp_handshake_migrate(int to);
/* Called by a program thread that has just published a mask blocking more signals and is
 * about to apply it (sigmask.c): if the sampler has a request for `me` in flight, waits
 * (bounded by the sampler's own deadlines) until it is served or withdrawn, so a signal
 * already sent lands now instead of pending under the new mask. The sampler, for its part,
 * posts each request and only then reads the thread's published mask, withdrawing the
 * request unsent when it blocks the signal: one of the two always sees the other (both use
 * sequentially consistent atomics). A look at NSLOTS words when nothing is in flight.
 * Async-signal-safe. */
void wp_handshake_settle(pid_t me);
/* In a fork child: clears every slot (the parent may have been mid-handshake). */
void wp_handshake_reset(void);
/* Whether `sa` is the agent's handler. */
int wp_handshake_is_ours(const struct sigaction *sa);

/* Tests only: how long the sampler waits for msg2 and a handler for msg3 (under valgrind,
 * which runs one thread at a time, the defaults are too short to be fair). */
void wp_handshake_set_deadlines(uint64_t msg2_ns, uint64_t msg3_ns);
/* Tests only (WALLPROF_TEST=linger): the handler stays this long after resuming, so that the
 * program's own signals land inside it (test_transfers.py). */
void wp_handshake_set_linger(uint64_t ns);

/* Tests only (WALLPROF_TEST=tagless): requests go out with tgkill, as where a seccomp policy
 * refuses rt_tgsigqueueinfo (test_sig_share.py). */
void wp_handshake_set_tagless(void);
/* The signal handler's own statistics (stray signals it ignored). */
uint64_t wp_handshake_stray(void);
/* The signal in use. */
int wp_handshake_signal(void);

#endif
