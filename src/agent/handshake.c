#include "handshake.h"

#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "clock.h"
#include "eintr.h"
#include "signals.h"

enum phase {
	P_IDLE = 0,
	P_REQUEST = 1,   /* sampler: "tid, please stop" */
	P_CLAIMED = 2,   /* handler: "it's me, copying" */
	P_CAPTURED = 3,  /* msg2 */
	P_RELEASED = 4,  /* msg3 */
	P_RESUMED = 5,   /* msg4 */
	P_ABANDONED = 6, /* sampler gave up before any handler claimed the request */
	P_GAVEUP = 7,    /* handler gave up waiting for msg3 and resumed */
};

#define PHASE(w) ((w) & 7u)
#define GEN(w) ((w) >> 3)
#define WORD(gen, ph) (((gen) << 3) | (ph))

/* A slot is reusable once its handler can no longer touch it. A slot whose handler claimed a
 * request and then stalled is skipped until it finishes; a few spares keep sampling going. */
#define NSLOTS 4

struct wp_hs_ticket {
	_Atomic uint32_t word; /* futex word */
	_Atomic pid_t tid;
	struct wp_capture cap;
};

static struct wp_hs_ticket slots[NSLOTS];
static struct wp_hs_ticket *_Atomic current;
static uint32_t next_gen = 1;
static _Atomic int hs_signo;
static _Atomic int in_handshake;
static pid_t self_pid;
static _Atomic uint64_t stray_signals;
static uint64_t msg2_deadline_ns = 20 * 1000000ull;
static uint64_t msg3_deadline_ns = 200 * 1000000ull;

/* Spinning before sleeping: on a multi-core machine the other side answers within a few
 * microseconds, far less than a futex sleep/wake round trip (tens of microseconds in a VM).
 * Bounded so a single-core machine does not burn a time slice. */
#define SPIN_NS 30000ull

static long futex(_Atomic uint32_t *w, int op, uint32_t val, const struct timespec *ts)
{
	return syscall(SYS_futex, (uint32_t *)w, op | FUTEX_PRIVATE_FLAG, val, ts, NULL, 0);
}

static void wake(_Atomic uint32_t *w)
{
	futex(w, FUTEX_WAKE, 1, NULL);
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/* Spinning only helps when the other side runs on another CPU at the same time. With one
 * CPU for the process, or both on the same one, a spin just delays the side it waits for:
 * go straight to the futex. `sampler_cpu` is where the sampler last ran (sched_getcpu, vDSO). */
static _Atomic int sampler_cpu = -1;
static int last_peer_cpu = -1; /* where the last thread that answered ran (sampler only) */

/* Waits while *w == seen, until `deadline` (CLOCK_MONOTONIC ns), spinning first when `spin`.
 * Returns the new value, or `seen` on timeout. Async-signal-safe: only atomics,
 * clock_gettime and futex. */
static uint32_t wait_change(_Atomic uint32_t *w, uint32_t seen, uint64_t deadline, int spin)
{
	uint64_t now = wp_now_ns();
	uint64_t spin_end = spin ? now + SPIN_NS : now;
	uint32_t v;
	unsigned n = 0;
	while ((v = atomic_load(w)) == seen) {
		if ((++n & 63) == 0) {
			now = wp_now_ns();
			if (now >= deadline)
				return seen;
			if (now >= spin_end)
				break;
		}
		cpu_relax();
	}
	while ((v = atomic_load(w)) == seen) {
		now = wp_now_ns();
		if (now >= deadline)
			return seen;
		uint64_t left = deadline - now;
		/* Short sleeps, so a waiter re-checks liveness conditions often enough. */
		if (left > 2000000)
			left = 2000000;
		struct timespec ts = { (time_t)(left / 1000000000ull), (long)(left % 1000000000ull) };
		futex(w, FUTEX_WAIT, seen, &ts);
	}
	return v;
}

/* The handler. Async-signal-safe: atomics, gettid, clock_gettime, futex, memcpy of a
 * fixed-size register block into a preallocated slot; errno saved and restored. */
static void handler(int sig, siginfo_t *info, void *ucv)
{
	int saved_errno = errno;
	/* Any run of this handler may have interrupted a call of this thread: let the
	 * interposers know it was us (eintr.h). */
	wp_our_signals++;
	struct wp_hs_ticket *t = atomic_load(&current);
	pid_t me = (pid_t)syscall(SYS_gettid);
	uint32_t w = t ? atomic_load(&t->word) : 0;

	if (!t || PHASE(w) != P_REQUEST || atomic_load(&t->tid) != me ||
	    !atomic_compare_exchange_strong(&t->word, &w, WORD(GEN(w), P_CLAIMED))) {
		/* Not ours (late, or another thread's): leave without touching anything. */
		atomic_fetch_add(&stray_signals, 1);
		errno = saved_errno;
		(void)sig;
		(void)info;
		return;
	}
	uint32_t gen = GEN(w);
	ucontext_t *uc = ucv;
	t->cap.t_enter_ns = wp_now_ns();
	t->cap.cpu = sched_getcpu(); /* vDSO */
	memcpy(t->cap.gregs, uc->uc_mcontext.gregs, sizeof(t->cap.gregs));

	atomic_store(&t->word, WORD(gen, P_CAPTURED)); /* msg2 */
	wake(&t->word);

	uint64_t deadline = t->cap.t_enter_ns + msg3_deadline_ns;
	uint32_t seen = WORD(gen, P_CAPTURED);
	/* spin only if the sampler can run meanwhile: on another CPU */
	int spin = t->cap.cpu != atomic_load(&sampler_cpu);
	uint32_t v = wait_change(&t->word, seen, deadline, spin); /* msg3 */
	if (v == seen) {
		/* The sampler is not answering: resume on our own. If it releases us at the same
		 * moment the CAS fails and we take the normal path below. */
		if (atomic_compare_exchange_strong(&t->word, &seen, WORD(gen, P_GAVEUP))) {
			wake(&t->word);
			errno = saved_errno;
			return;
		}
	}
	t->cap.t_exit_ns = wp_now_ns();
	atomic_store(&t->word, WORD(gen, P_RESUMED)); /* msg4 */
	wake(&t->word);
	errno = saved_errno;
}

int wp_handshake_init(int signo)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = handler;
	/* SA_RESTART: restartable system calls resume after our handler instead of failing with
	 * EINTR. It does not cover everything (see docs/design.md); the sampler avoids
	 * signalling threads blocked in the calls it does not cover. */
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	hs_signo = signo;
	self_pid = getpid();
	if (wp_real_sigaction(signo, &sa, NULL) != 0)
		return -errno;
	return 0;
}

void wp_handshake_reset(void)
{
	for (int i = 0; i < NSLOTS; i++)
		atomic_store(&slots[i].word, 0);
	atomic_store(&current, NULL);
	atomic_store(&in_handshake, 0);
	self_pid = getpid();
}

int wp_handshake_is_ours(const struct sigaction *sa)
{
	return (sa->sa_flags & SA_SIGINFO) && sa->sa_sigaction == handler;
}

int wp_handshake_migrate(int to)
{
	if (to > 0) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = handler;
		sa.sa_flags = SA_SIGINFO | SA_RESTART;
		sigemptyset(&sa.sa_mask);
		if (wp_real_sigaction(to, &sa, NULL) != 0)
			return -errno;
	}
	/* Let a handshake in flight finish on the old signal (bounded: its own deadlines). */
	uint64_t deadline = wp_now_ns() + msg2_deadline_ns + msg3_deadline_ns;
	while (atomic_load(&in_handshake) && wp_now_ns() < deadline)
		sched_yield();
	atomic_store(&hs_signo, to);
	return 0;
}

uint64_t wp_handshake_stray(void)
{
	return atomic_load(&stray_signals);
}

int wp_handshake_signal(void)
{
	return hs_signo;
}

static struct wp_hs_ticket *free_slot(void)
{
	for (int i = 0; i < NSLOTS; i++) {
		uint32_t ph = PHASE(atomic_load(&slots[i].word));
		if (ph == P_IDLE || ph == P_RESUMED || ph == P_ABANDONED || ph == P_GAVEUP)
			return &slots[i];
	}
	return NULL;
}

static int thread_alive(pid_t tid)
{
	return syscall(SYS_tgkill, self_pid, tid, 0) == 0 || errno != ESRCH;
}

enum wp_hs_result wp_handshake_suspend(pid_t tid, struct wp_hs_ticket **ticket,
				       const struct wp_capture **cap)
{
	int sig = atomic_load(&hs_signo);
	if (!sig)
		return WP_HS_ERROR;
	struct wp_hs_ticket *t = free_slot();
	if (!t)
		return WP_HS_NOSLOT;
	atomic_store(&in_handshake, 1);
	atomic_store(&sampler_cpu, sched_getcpu());
	uint32_t gen = next_gen++ & 0x1fffffffu;
	uint32_t req = WORD(gen, P_REQUEST);
	atomic_store(&t->tid, tid);
	atomic_store(&t->word, req);
	atomic_store(&current, t);

	if (syscall(SYS_tgkill, self_pid, tid, sig) != 0) {
		int e = errno;
		atomic_store(&t->word, WORD(gen, P_ABANDONED));
		atomic_store(&in_handshake, 0);
		return e == ESRCH ? WP_HS_EXITED : WP_HS_ERROR;
	}

	uint64_t deadline = wp_now_ns() + msg2_deadline_ns;
	uint32_t v = req;
	for (;;) {
		/* Wake up at least every 2 ms to notice a thread that exited with our signal
		 * pending (its signal is then discarded and nobody would ever answer). */
		uint64_t step = wp_now_ns() + 2000000;
		/* Its CPU is not known yet: guess from the last thread that answered (with the
		 * whole process on one CPU, spinning would only keep it from running). */
		v = wait_change(&t->word, v, step < deadline ? step : deadline,
				last_peer_cpu != atomic_load(&sampler_cpu));
		if (PHASE(v) == P_CAPTURED)
			break;
		if (PHASE(v) == P_CLAIMED)
			continue; /* the handler is copying; msg2 comes next */
		/* Still P_REQUEST: give up at the deadline or when the thread is gone. Only
		 * abandon if no handler claimed it meanwhile (the CAS settles the race). */
		int gone = !thread_alive(tid);
		if (gone || wp_now_ns() >= deadline) {
			if (atomic_compare_exchange_strong(&t->word, &v, WORD(gen, P_ABANDONED))) {
				atomic_store(&in_handshake, 0);
				return gone ? WP_HS_EXITED : WP_HS_TIMEOUT;
			}
			/* A handler claimed it at the last moment: follow through. */
			if (PHASE(v) == P_CLAIMED)
				deadline = wp_now_ns() + msg2_deadline_ns;
		}
	}
	last_peer_cpu = t->cap.cpu;
	*ticket = t;
	*cap = &t->cap;
	return WP_HS_OK;
}

enum wp_hs_result wp_handshake_resume(struct wp_hs_ticket *t, uint64_t *window_ns)
{
	uint32_t w = atomic_load(&t->word);
	uint32_t gen = GEN(w);
	uint32_t captured = WORD(gen, P_CAPTURED);
	*window_ns = 0;
	if (!atomic_compare_exchange_strong(&t->word, &captured, WORD(gen, P_RELEASED))) {
		atomic_store(&in_handshake, 0);
		return WP_HS_LATE; /* P_GAVEUP: it resumed before we were done */
	}
	wake(&t->word); /* msg3 */

	uint32_t released = WORD(gen, P_RELEASED);
	int spin = t->cap.cpu != atomic_load(&sampler_cpu);
	uint32_t v = wait_change(&t->word, released, wp_now_ns() + msg2_deadline_ns, spin); /* msg4 */
	atomic_store(&in_handshake, 0);
	if (PHASE(v) != P_RESUMED)
		return WP_HS_OK; /* resumed but slow to say so; the slot stays busy until it does */
	if (t->cap.t_exit_ns > t->cap.t_enter_ns)
		*window_ns = t->cap.t_exit_ns - t->cap.t_enter_ns;
	return WP_HS_OK;
}
