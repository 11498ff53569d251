/* SPDX-License-Identifier: MIT */
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
#include "threadmask.h"

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
 * request and then stalled is skipped until it finishes; spares keep sampling going. */
#define NSLOTS (2 * WP_HS_BATCH)

struct wp_hs_ticket {
	_Atomic uint32_t word;     /* futex word: generation << 3 | phase */
	_Atomic uint32_t sleepers; /* waiters inside FUTEX_WAIT on `word` */
	_Atomic pid_t tid;
	struct wp_capture cap;
};

static struct wp_hs_ticket slots[NSLOTS];
static uint32_t next_gen = 1;
static _Atomic int hs_signo;
static _Atomic int in_handshake;
static pid_t self_pid;
static uid_t self_uid;
static _Atomic uint64_t stray_signals;
static uint64_t msg2_deadline_ns = 20 * 1000000ull;
/* How long a handler waits for msg3 before resuming on its own (the sample is then dropped as
 * late). Short: on an oversubscribed machine the sampler, woken by msg2, may wait a whole
 * time slice (2-4 ms) for a CPU. With 4 busy threads on 2 vCPUs at 1000 Hz, giving up at 2 ms
 * instead of 200 cut the time the threads spent held by ~40% (p99 2 ms -> 0.1-0.3 ms) for
 * ~1% of samples dropped. */
static uint64_t msg3_deadline_ns = 2 * 1000000ull;
/* Tests only: how long the handler stays after msg4 (wp_handshake_set_linger). */
static uint64_t linger_ns;
/* The sampler's doorbell: every msg2 (and every give-up) rings it, so the sampler waits on one
 * word for whichever of its pending threads answers first. */
static _Atomic uint32_t bell;
static _Atomic uint32_t bell_sleepers;

/* Spinning before sleeping: on a multi-core machine the other side answers within a few
 * microseconds, far less than a futex sleep/wake round trip (tens of microseconds in a VM).
 * Bounded so a single-core machine does not burn a time slice. */
#define SPIN_NS 30000ull

static long futex(_Atomic uint32_t *w, int op, uint32_t val, const struct timespec *ts)
{
	return syscall(SYS_futex, (uint32_t *)w, op | FUTEX_PRIVATE_FLAG, val, ts, NULL, 0);
}

/* Wakes the waiters of `w`, but only if one is asleep: when the other side is spinning (the
 * common case on a multi-core machine) this saves the handler two system calls per sample.
 * No wake-up is lost: a waiter counts itself in `sleepers` before FUTEX_WAIT, which returns at
 * once if `w` changed after the waiter last looked (both sides use sequentially consistent
 * atomics: either we see the count, or the kernel sees the new value). */
static void wake(_Atomic uint32_t *w, _Atomic uint32_t *sleepers)
{
	if (atomic_load(sleepers))
		futex(w, FUTEX_WAKE, INT32_MAX, NULL);
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
static uint32_t wait_change(_Atomic uint32_t *w, _Atomic uint32_t *sleepers, uint32_t seen,
			    uint64_t deadline, int spin)
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
		atomic_fetch_add(sleepers, 1);
		futex(w, FUTEX_WAIT, seen, &ts);
		atomic_fetch_sub(sleepers, 1);
	}
	return v;
}

/* The request addressed to the calling thread, if any. */
static struct wp_hs_ticket *find_request(pid_t me, uint32_t *w)
{
	for (int i = 0; i < NSLOTS; i++) {
		struct wp_hs_ticket *t = &slots[i];
		*w = atomic_load(&t->word);
		if (PHASE(*w) == P_REQUEST && atomic_load(&t->tid) == me)
			return t;
	}
	return NULL;
}

void wp_handshake_settle(pid_t me)
{
	uint32_t w;
	struct wp_hs_ticket *t = find_request(me, &w);
	if (!t)
		return;
	/* The signal reaches us while we wait (it is not blocked yet) and our handler moves the
	 * word on; or the sampler withdraws the request. Either way it is over within the
	 * sampler's msg2 deadline; a little more, in case the sampler is slow to withdraw. */
	uint64_t deadline = wp_now_ns() + msg2_deadline_ns + msg3_deadline_ns + 5000000ull;
	while (atomic_load(&t->word) == w && wp_now_ns() < deadline)
		wait_change(&t->word, &t->sleepers, w, deadline, 1);
}

static void ring_bell(void)
{
	atomic_fetch_add(&bell, 1);
	wake(&bell, &bell_sleepers);
}

/* Stays in the handler a while (tests: a program's signal then lands inside it). */
static void linger(void)
{
	struct timespec ts = { 0, (long)linger_ns };
	if (linger_ns)
		syscall(SYS_nanosleep, &ts, NULL);
}

/* The handler's work: the handshake with the sampler for the request of generation `gen`
 * (any request addressed to this thread when `any`). */
static void on_duty(void *ucv, uint32_t gen_sent, int any)
{
	pid_t me = (pid_t)syscall(SYS_gettid);
	uint32_t w;
	struct wp_hs_ticket *t = find_request(me, &w);
	if (!t || (!any && GEN(w) != gen_sent) ||
	    !atomic_compare_exchange_strong(&t->word, &w, WORD(GEN(w), P_CLAIMED))) {
		/* Not ours (late, or another thread's): leave without touching anything. */
		atomic_fetch_add(&stray_signals, 1);
		return;
	}
	uint32_t gen = GEN(w);
	const ucontext_t *uc = wp_signals_outer_context(ucv);
	t->cap.t_enter_ns = wp_now_ns();
	t->cap.cpu = sched_getcpu(); /* vDSO */
	memcpy(t->cap.gregs, uc->uc_mcontext.gregs, sizeof(t->cap.gregs));

	atomic_store(&t->word, WORD(gen, P_CAPTURED)); /* msg2 */
	ring_bell();

	uint64_t deadline = t->cap.t_enter_ns + msg3_deadline_ns;
	uint32_t seen = WORD(gen, P_CAPTURED);
	/* spin only if the sampler can run meanwhile: on another CPU */
	int spin = t->cap.cpu != atomic_load(&sampler_cpu);
	uint32_t v = wait_change(&t->word, &t->sleepers, seen, deadline, spin); /* msg3 */
	if (v == seen) {
		/* The sampler is not answering: resume on our own. If it releases us at the same
		 * moment the CAS fails and we take the normal path below. */
		if (atomic_compare_exchange_strong(&t->word, &seen, WORD(gen, P_GAVEUP))) {
			ring_bell();
			return;
		}
	}
	/* Its own CPU clock, last thing before leaving: anything it runs after this, even just
	 * blocking, moves the clock past this value, so the sampler never mistakes a thread that
	 * ran for one that did not. (Cheaper here than the sampler reading another thread's
	 * clock while holding it.) */
	struct timespec cpu;
	t->cap.cpu_ns = clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0 ? (int64_t)wp_ts_ns(&cpu) : -1;
	t->cap.t_exit_ns = wp_now_ns();
	atomic_store(&t->word, WORD(gen, P_RESUMED)); /* msg4 */
	wake(&t->word, &t->sleepers);
	linger();
}

/* Whether a delivery is one of the sampler's requests, and of which generation. The sampler
 * sends each with rt_tgsigqueueinfo: SI_QUEUE and WP_HS_TAG << 32 | generation as its value,
 * so a request is told from the program's own use of the signal (its timer, a kill, Go's
 * profiler) by what it carries, whoever sends it (si_pid is not looked at: a sampler in
 * another process would show its own). A tagged delivery that matches no request in flight is a late one of ours: never
 * the program's. Where the kernel refused to queue a value (tagless: a seccomp policy), or
 * lost it (a standard signal past RLIMIT_SIGPENDING arrives as SI_USER from pid 0), a
 * delivery is ours when it says it came from tgkill or nowhere and a request for this thread
 * is in flight (a program's own tgkill at that moment is then taken for ours: one of its
 * signals lost); with none in flight, a tgkill from this process is the program's when it
 * has a handler, else a late one of ours (a raise() of SIGPROF to die of it is lost).
 * Async-signal-safe. */
#define WP_HS_TAG 0x77707266u /* "wprf" */
static _Atomic int tagless;

static int from_sampler(int sig, const siginfo_t *info, uint32_t *gen, int *any)
{
	*any = 0;
	if (!info)
		return 0;
	if (info->si_code == SI_QUEUE) {
		uint64_t v = (uint64_t)(uintptr_t)info->si_value.sival_ptr;
		*gen = (uint32_t)v;
		return (uint32_t)(v >> 32) == WP_HS_TAG;
	}
	int lost = info->si_code == SI_USER && info->si_pid == 0;
	int plain = atomic_load(&tagless) && info->si_code == SI_TKILL;
	if (lost || plain) {
		uint32_t w;
		*any = 1;
		if (find_request((pid_t)syscall(SYS_gettid), &w))
			return 1;
		/* Tagless, a late one of ours looks like the program's own raise(): never let it
		 * kill the program through SIG_DFL (dropped, unless the program has a handler). */
		return plain && info->si_pid == self_pid && !wp_signals_program_handles(sig);
	}
	return 0;
}

/* The handler. Async-signal-safe: atomics, gettid, clock_gettime, futex, memcpy of a
 * fixed-size register block into a preallocated slot; errno saved and restored. The
 * program's deliveries go to its own disposition (wp_signals_forward). */
static void handler(int sig, siginfo_t *info, void *ucv)
{
	int saved_errno = errno;
	uint32_t gen = 0;
	int any;
	if (!from_sampler(sig, info, &gen, &any)) {
		wp_signals_forward(sig, info, ucv);
		errno = saved_errno;
		return;
	}
	/* This run may have interrupted a call of this thread: let the interposers know it was
	 * us (eintr.h). */
	wp_our_signals++;
	if (sig == atomic_load(&hs_signo)) {
		void *outer = wp_signals_enter_ours(ucv);
		on_duty(ucv, gen, any);
		wp_signals_leave_ours(outer);
	} else {
		atomic_fetch_add(&stray_signals, 1); /* late, on a signal we have left */
	}
	errno = saved_errno;
}

/* Sends the request of generation `gen` to `tid`. Returns 0 or -1 with errno. */
static int send_request(pid_t tid, int sig, uint32_t gen)
{
	if (!atomic_load(&tagless)) {
		siginfo_t si;
		memset(&si, 0, sizeof(si));
		si.si_signo = sig;
		si.si_code = SI_QUEUE;
		si.si_pid = self_pid;
		si.si_uid = self_uid;
		si.si_value.sival_ptr = (void *)(uintptr_t)((uint64_t)WP_HS_TAG << 32 | gen);
		if (syscall(SYS_rt_tgsigqueueinfo, self_pid, tid, sig, &si) == 0)
			return 0;
		if (errno != ENOSYS && errno != EPERM)
			return -1;
		atomic_store(&tagless, 1);
	}
	return (int)syscall(SYS_tgkill, self_pid, tid, sig);
}

int wp_handshake_init(int signo)
{
	hs_signo = signo;
	self_pid = getpid();
	self_uid = getuid();
	/* Installed with SA_RESTART (signals.c): restartable system calls resume after our
	 * handler instead of failing with EINTR. It does not cover everything (see
	 * docs/design.md); the sampler avoids signalling threads blocked in the calls it does not
	 * cover. */
	return wp_signals_take(signo, handler);
}

void wp_handshake_reset(void)
{
	wp_signals_fork_child();
	/* (a count of sleepers inherited from a parent thread that was waiting would only cost
	 * needless wake-ups, but the child starts clean) */
	for (int i = 0; i < NSLOTS; i++) {
		atomic_store(&slots[i].word, 0);
		atomic_store(&slots[i].sleepers, 0);
	}
	atomic_store(&bell_sleepers, 0);
	atomic_store(&in_handshake, 0);
	self_pid = getpid();
	self_uid = getuid();
}

int wp_handshake_is_ours(const struct sigaction *sa)
{
	return (sa->sa_flags & SA_SIGINFO) && sa->sa_sigaction == handler;
}

int wp_handshake_migrate(int to)
{
	if (to > 0) {
		int e = wp_signals_take(to, handler);
		if (e)
			return e;
	}
	/* The new signal first, then let a batch that may have read the old one finish on it
	 * (bounded: its own deadlines). A batch says it is in flight before it reads the
	 * signal, so one that did not see the new signal is seen here. */
	atomic_store(&hs_signo, to);
	uint64_t deadline = wp_now_ns() + msg2_deadline_ns + msg3_deadline_ns;
	while (atomic_load(&in_handshake) && wp_now_ns() < deadline)
		sched_yield();
	return 0;
}

void wp_handshake_set_tagless(void)
{
	atomic_store(&tagless, 1);
}

void wp_handshake_set_linger(uint64_t ns)
{
	linger_ns = ns;
}

void wp_handshake_set_deadlines(uint64_t msg2_ns, uint64_t msg3_ns)
{
	msg2_deadline_ns = msg2_ns;
	msg3_deadline_ns = msg3_ns;
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

/* One thread of a batch, as the sampler tracks it. */
struct pending {
	struct wp_hs_ticket *t;
	uint32_t gen;
	int state; /* S_* below */
};
enum { S_ASKED, S_RELEASED, S_DONE };

/* Step 1: a request in a free slot, then the signal. */
static void ask(struct wp_hs_request *r, struct pending *p, int sig)
{
	p->state = S_DONE;
	struct wp_hs_ticket *t = free_slot();
	if (!t) {
		r->result = WP_HS_NOSLOT;
		return;
	}
	p->t = t;
	p->gen = next_gen++ & 0x1fffffffu;
	atomic_store(&t->tid, r->tid);
	atomic_store(&t->word, WORD(p->gen, P_REQUEST));
	/* Only now its mask: a thread that starts blocking the signal after this read sees
	 * the request and waits for it (wp_handshake_settle). */
	uint64_t mask;
	if (!wp_tmask_lookup(r->tid, &mask))
		mask = r->fallback_mask;
	if ((mask >> (sig - 1)) & 1) {
		uint32_t req = WORD(p->gen, P_REQUEST);
		if (atomic_compare_exchange_strong(&t->word, &req, WORD(p->gen, P_ABANDONED)))
			wake(&t->word, &t->sleepers);
		r->result = WP_HS_BLOCKED;
		return;
	}
	if (send_request(r->tid, sig, p->gen) != 0) {
		int e = errno;
		atomic_store(&t->word, WORD(p->gen, P_ABANDONED));
		r->result = e == ESRCH ? WP_HS_EXITED : WP_HS_ERROR;
		return;
	}
	p->state = S_ASKED;
}

/* Step 2, for a thread that posted msg2: read it, then msg3. Returns 0 if it had already
 * given up (its copy may be torn). */
static int serve(size_t i, struct pending *p, wp_hs_read_fn read, void *arg)
{
	struct wp_hs_ticket *t = p->t;
	last_peer_cpu = t->cap.cpu;
	read(i, &t->cap, arg); /* ---- the window: the thread is held ---- */
	uint32_t captured = WORD(p->gen, P_CAPTURED);
	if (!atomic_compare_exchange_strong(&t->word, &captured, WORD(p->gen, P_RELEASED)))
		return 0; /* P_GAVEUP: it resumed before we were done */
	wake(&t->word, &t->sleepers); /* msg3 */
	return 1;
}

/* A request nobody claimed is withdrawn when its thread is gone or its time is up. The CAS
 * settles the race with a handler claiming it at that very moment. Returns 1 if withdrawn. */
static int withdraw(struct wp_hs_request *r, struct pending *p, uint64_t now, uint64_t deadline,
		    int check_alive)
{
	int gone = check_alive && !thread_alive(r->tid);
	if (!gone && now < deadline)
		return 0;
	uint32_t req = WORD(p->gen, P_REQUEST);
	if (!atomic_compare_exchange_strong(&p->t->word, &req, WORD(p->gen, P_ABANDONED)))
		return 0;
	wake(&p->t->word, &p->t->sleepers); /* a thread settling before it blocks the signal */
	r->result = gone ? WP_HS_EXITED : WP_HS_TIMEOUT;
	return 1;
}

/* Looks at every asked thread once: serves those that answered, withdraws those that will
 * not. Returns how many are still asked. */
static size_t sweep(struct wp_hs_request *reqs, struct pending *ps, size_t n, wp_hs_read_fn read,
		    void *arg, uint64_t deadline, int check_alive)
{
	size_t asked = 0;
	uint64_t now = wp_now_ns();
	for (size_t i = 0; i < n; i++) {
		struct pending *p = &ps[i];
		if (p->state != S_ASKED)
			continue;
		uint32_t w = atomic_load(&p->t->word);
		uint32_t ph = PHASE(w);
		if (GEN(w) != p->gen) {
			/* The slot moved on: its handler captured, waited out msg3 and gave up while
			 * the sampler was still asking the others (preempted), and a later request of
			 * this same batch took the slot. Ours is over; waiting for its phases, which
			 * are now another request's, never ended (a task left spinning after its
			 * program was gone, seen under signal-all at load 16). */
			reqs[i].result = WP_HS_LATE;
			p->state = S_DONE;
		} else if (ph == P_CAPTURED) {
			if (serve(i, p, read, arg)) {
				p->state = S_RELEASED;
			} else {
				reqs[i].result = WP_HS_LATE;
				p->state = S_DONE;
			}
			now = wp_now_ns();
		} else if (ph == P_GAVEUP) {
			reqs[i].result = WP_HS_LATE;
			p->state = S_DONE;
		} else if (ph == P_REQUEST && withdraw(&reqs[i], p, now, deadline, check_alive)) {
			p->state = S_DONE;
		} else if (ph == P_CLAIMED && now >= deadline + msg2_deadline_ns) {
			/* Claimed, then stopped before msg2 (SIGSTOP, a debugger): stop waiting.
			 * Its slot stays busy until the handler gives up on msg3 by itself. */
			reqs[i].result = WP_HS_TIMEOUT;
			p->state = S_DONE;
		} else if (ph == P_REQUEST || ph == P_CLAIMED) {
			asked++; /* msg2 comes next */
		} else {
			reqs[i].result = WP_HS_LATE; /* no phase of an asked request: never wait */
			p->state = S_DONE;
		}
	}
	return asked;
}

/* Step 3: msg4 from every released thread (it is running again; this only bounds how long
 * its slot stays busy and measures the window). */
static void collect_msg4(struct wp_hs_request *reqs, struct pending *ps, size_t n)
{
	int own = atomic_load(&sampler_cpu);
	for (size_t i = 0; i < n; i++) {
		struct pending *p = &ps[i];
		if (p->state != S_RELEASED)
			continue;
		struct wp_hs_ticket *t = p->t;
		uint32_t released = WORD(p->gen, P_RELEASED);
		uint32_t v = wait_change(&t->word, &t->sleepers, released,
					 wp_now_ns() + msg2_deadline_ns, t->cap.cpu != own);
		reqs[i].result = WP_HS_OK;
		/* Resumed but slow to say so: the slot stays busy until it does. */
		if (PHASE(v) != P_RESUMED)
			continue;
		reqs[i].cpu_ns = t->cap.cpu_ns;
		if (t->cap.t_exit_ns > t->cap.t_enter_ns)
			reqs[i].window_ns = t->cap.t_exit_ns - t->cap.t_enter_ns;
	}
}

/* A handler that claimed its request, stalled past the sampler's patience (a SIGSTOP between
 * claiming and msg2) and then posted msg2 anyway is waiting for a msg3 nobody will send: let
 * it go at once rather than hold it for msg3's whole deadline. Called when no batch is in
 * flight, so any captured slot is such an orphan. */
static void release_orphans(void)
{
	for (int i = 0; i < NSLOTS; i++) {
		uint32_t w = atomic_load(&slots[i].word);
		if (PHASE(w) == P_CAPTURED &&
		    atomic_compare_exchange_strong(&slots[i].word, &w, WORD(GEN(w), P_RELEASED)))
			wake(&slots[i].word, &slots[i].sleepers);
	}
}

void wp_handshake_batch(struct wp_hs_request *reqs, size_t n, wp_hs_read_fn read, void *arg)
{
	struct pending ps[WP_HS_BATCH];
	if (n > WP_HS_BATCH)
		n = WP_HS_BATCH;
	for (size_t i = 0; i < n; i++) {
		reqs[i].result = WP_HS_ERROR;
		reqs[i].window_ns = 0;
		reqs[i].cpu_ns = -1;
		ps[i].state = S_DONE;
	}
	/* In flight before reading the signal (see wp_handshake_migrate). */
	atomic_store(&in_handshake, 1);
	int sig = atomic_load(&hs_signo);
	if (!sig || !n) {
		atomic_store(&in_handshake, 0);
		return;
	}
	release_orphans();
	/* A program that put its own disposition on the signal with the system call itself (not
	 * sigaction) gets ours back on top first, chaining to its own: never signal a thread
	 * into a handler that is not ours (or into SIG_DFL). */
	wp_signals_keep_ours(sig);
	atomic_store(&sampler_cpu, sched_getcpu());
	for (size_t i = 0; i < n; i++)
		ask(&reqs[i], &ps[i], sig);

	uint64_t deadline = wp_now_ns() + msg2_deadline_ns;
	uint64_t next_alive_check = wp_now_ns() + 2000000;
	for (;;) {
		uint32_t rung = atomic_load(&bell);
		uint64_t now = wp_now_ns();
		/* Every 2 ms, notice a thread that exited with our signal pending (its signal is
		 * then discarded and nobody would ever answer). */
		int check_alive = now >= next_alive_check;
		if (check_alive)
			next_alive_check = now + 2000000;
		if (!sweep(reqs, ps, n, read, arg, deadline, check_alive))
			break;
		if (now > deadline + 2 * msg2_deadline_ns + msg3_deadline_ns) {
			/* Every asked request ends by the phases above; this bound is for a case
			 * nobody foresaw: the batch ends whatever the slots say. */
			for (size_t i = 0; i < n; i++)
				if (ps[i].state == S_ASKED) {
					reqs[i].result = WP_HS_TIMEOUT;
					ps[i].state = S_DONE;
				}
			break;
		}
		uint64_t until = next_alive_check;
		if (deadline > now && deadline < until)
			until = deadline;
		/* Which CPU answers next is not known yet: guess from the last thread that did
		 * (with the whole process on one CPU, spinning would only keep it from running). */
		wait_change(&bell, &bell_sleepers, rung, until,
			    last_peer_cpu != atomic_load(&sampler_cpu));
	}
	collect_msg4(reqs, ps, n);
	release_orphans(); /* before the sampler goes on to unwind, which may lock and allocate */
	atomic_store(&in_handshake, 0);
}
