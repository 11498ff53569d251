/* Suspending one thread at a time: tgkill(SIGPROF) and the msg2/msg3/msg4 handshake.
 *
 *   sampler                          sampled thread (in wp's signal handler)
 *   -------                          ---------------------------------------
 *   request(gen, tid); tgkill  --->  claim the request (CAS), copy ucontext registers
 *   wait msg2 (deadline)       <---  msg2: "captured"
 *   read what it needs (stack)       wait msg3 (deadline)
 *   msg3: "released"           --->
 *   wait msg4 (deadline)       <---  msg4: "resumed", return from the handler
 *
 * Each "msg" is a phase of one futex word holding (generation << 3 | phase), so a handler that
 * runs late (the sampler gave up on it) sees a generation or phase it does not expect and
 * leaves without touching the slot: it can never scribble over the next sample. Every wait on
 * both sides has a deadline; a thread that never answers costs one missed sample. */
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
	int cpu;             /* where the handler ran (to decide whether spinning helps) */
};

enum wp_hs_result {
	WP_HS_OK = 0,
	WP_HS_EXITED,      /* the thread was gone (ESRCH) before or while we waited */
	WP_HS_TIMEOUT,     /* no answer within the deadline (signal blocked, or never scheduled) */
	WP_HS_LATE,        /* the handler gave up waiting for msg3; the copy is not consistent */
	WP_HS_ERROR,       /* tgkill failed for another reason */
	WP_HS_NOSLOT,      /* every slot is held by a handler that has not finished */
};

struct wp_hs_ticket; /* one handshake in progress */

/* Installs the handler for `signo`. Call once, from the constructor. Returns 0 or -errno. */
int wp_handshake_init(int signo);

/* Sampler side. Signals `tid` and waits for msg2. On WP_HS_OK the thread is held in its
 * handler and *cap points at its registers until wp_handshake_resume. */
enum wp_hs_result wp_handshake_suspend(pid_t tid, struct wp_hs_ticket **ticket,
				       const struct wp_capture **cap);
/* Posts msg3 and waits for msg4. Returns WP_HS_OK, or WP_HS_LATE when the handler had already
 * resumed on its own (what was read while "suspended" may be torn: discard it).
 * *window_ns receives how long the thread was held (0 when unknown). */
enum wp_hs_result wp_handshake_resume(struct wp_hs_ticket *ticket, uint64_t *window_ns);

/* Moves sampling to signal `to` (0: stop signalling altogether), waiting until no handshake
 * is in flight so no late signal of ours reaches the old signal's new owner. Returns 0 or
 * -errno. */
int wp_handshake_migrate(int to);
/* In a fork child: clears every slot (the parent may have been mid-handshake). */
void wp_handshake_reset(void);
/* Whether `sa` is the agent's handler. */
int wp_handshake_is_ours(const struct sigaction *sa);

/* The signal handler's own statistics (stray signals it ignored). */
uint64_t wp_handshake_stray(void);
/* The signal in use. */
int wp_handshake_signal(void);

#endif
