/* SPDX-License-Identifier: MIT */
/* Taking samples, one tick at a time: which threads (wall mode: a random subset, running or
 * blocked; cpu mode: those that used CPU since the last tick, in proportion to it), and for
 * each the cheapest faithful way: its last stack again when it has not run, a copy from
 * /proc's SP/PC when it is blocked in the kernel (those two without a signal:
 * sample_nosignal.c), the handshake (handshake.c) when it runs, a perf clock's record when it
 * blocks the signal. The copies are unwound (unwind.c) after the threads run again, and
 * counted (stacks.c).
 * Pacing, the sampler thread's life, fork and the process's end are sampler.c's. Everything
 * here runs on the sampler thread, under its tick lock. */
#include "sample.h"
#include "sample_internal.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../common/format.h"
#include "clock.h"
#include "handshake.h"
#include "peek.h"
#include "perfclock.h"
#include "stacks.h"
#include "stats.h"
#include "threadmask.h"
#include "threads.h"
#include "unwind.h"
#include "wait_locks.h"
#include "waits.h"
#include "cpuwait.h"
#include "forkguard.h"
#include "fds.h"
#include "pages.h"

/* Stack bytes copied while a thread is held. A thread whose root we have reached before gets
 * exactly what it needs plus a little slack (its outermost frames, thread start, are the same
 * in every sample, so the highest address an unwind needed rarely moves; when it does, the
 * unwind comes out truncated and the next copy is the default); others get the default.
 * Copying is the only work done inside the window besides the handshake itself. */
#define STACK_DEFAULT (64u << 10)
#define STACK_MAX (512u << 10)
#define STACK_SLACK 512u
/* A thread that did not answer is left alone for this long before we try again. */
#define BACKOFF_NS (1000 * 1000000ull)
/* ... and a thread found inside our handler without having answered (preempted there, starved
 * of CPU) for this long: our signal sent at each tick would stay pending, be taken as soon as
 * the handler returned, and keep it in the handler. */
#define IN_HANDLER_BACKOFF_NS (50 * 1000000ull)
/* cpu mode: at most this many thread CPU clocks read per tick (round robin beyond). */
#define CPU_POLLS_PER_TICK 256
/* cpu mode: at most this many perf clock records (perfclock.h) unwound per tick. A thread's
 * clock makes one per interval of its CPU time, so a tick on time finds about one per busy
 * CPU; more wait in their rings for the next tick (a ring that fills loses records, not
 * time: the next record's count carries it). */
#define PCLK_RECORDS_PER_TICK 32


static const struct wp_config *cfg = &wp_config_none;
static uint64_t start_ns, interval_ns;
static uint64_t rng = 0x9e3779b97f4a7c15ull;
/* Set while lock holders are sampled (wp_sample_holders): their samples are not counted and
 * leave the threads' sampling state (last stack, CPU clock, wait) as it was. */
static int holder_only;

/* One stack copy per thread of a batch: all are copied while held, then unwound. Mapped at
 * the first tick that needs them (never for a process that ends before), wiped in a fork
 * child (MADV_WIPEONFORK): the child never reads its parent's copies, so a fork copies no
 * page table entries for them, and the parent's next copies cause no copy-on-write faults. */
static uint8_t (*stack_bufs)[STACK_MAX];

static uint8_t *stack_buf(unsigned i)
{
	if (!stack_bufs) {
		size_t n = (size_t)WP_HS_BATCH * STACK_MAX;
		void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return NULL;
		madvise(p, n, MADV_WIPEONFORK); /* before Linux 4.14: copied, as before */
		stack_bufs = p;
	}
	return stack_bufs[i];
}
static uint64_t pcs[WP_AGENT_MAX_FRAMES] WP_BIG;
static uint32_t last_nframes; /* frames in pcs */

/* Threads that did not answer (they block our signal, or are stopped or traced) are left
 * alone for BACKOFF_NS. Until when is kept in this small side table, keyed by the thread's
 * entry (whose `flags` carry WP_THREAD_UNSAMPLEABLE meanwhile), not in the entry itself: few
 * threads ever need it. When it is full, a random slot is reused. */
struct backoff {
	struct wp_athread *t;
	uint64_t until;
	int runnable; /* in our handler, waiting for a CPU: its intervals are a CPU wait */
};
static struct backoff backoffs[64];

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* When the last wall-mode tick was (tick_wall). */
static uint64_t prev_tick;

static int backed_off(struct wp_athread *t, uint64_t now)
{
	for (size_t i = 0; i < sizeof(backoffs) / sizeof(backoffs[0]); i++)
		if (backoffs[i].t == t) {
			if (now < backoffs[i].until)
				return 1;
			backoffs[i].t = NULL;
			t->flags &= ~WP_THREAD_UNSAMPLEABLE;
		}
	return 0;
}

static void back_off(struct wp_athread *t, uint64_t now, uint64_t ns, int runnable)
{
	size_t victim = next_rand() % (sizeof(backoffs) / sizeof(backoffs[0]));
	for (size_t i = 0; i < sizeof(backoffs) / sizeof(backoffs[0]); i++)
		if (!backoffs[i].t || backoffs[i].t == t) {
			victim = i;
			break;
		}
	backoffs[victim] = (struct backoff){ t, now + ns, runnable };
}

static int backed_off_runnable(const struct wp_athread *t)
{
	for (size_t i = 0; i < sizeof(backoffs) / sizeof(backoffs[0]); i++)
		if (backoffs[i].t == t)
			return backoffs[i].runnable;
	return 0;
}

/* `tid`'s signal mask from /proc (outside any window); 0 when unreadable. */
static uint64_t proc_sigblk(pid_t tid)
{
	char buf[2048];
	if (wp_threads_read_proc(tid, "status", buf, sizeof(buf)) <= 0)
		return 0;
	char *p = strstr(buf, "SigBlk:");
	return p ? strtoull(p + 7, NULL, 16) : 0;
}

/* Whether `tid` has the sampling signal blocked, from /proc (outside any window). */
static int blocks_signal(pid_t tid)
{
	return (proc_sigblk(tid) >> (wp_handshake_signal() - 1)) & 1;
}

/* Whether `tid` published a mask (threadmask.h) that lets the sampling signal through. */
static int publishes_unblocked(pid_t tid)
{
	uint64_t mask;
	return wp_tmask_lookup(tid, &mask) && !((mask >> (wp_handshake_signal() - 1)) & 1);
}

/* The mask to assume for `t` when it has published none (threadmask.h): a thread the agent
 * did not see start (a raw clone(), one started before the agent), or one created a moment
 * ago that has not run yet. Its mask can only have changed since by means the agent does not
 * see (a raw system call), so one /proc read, on the first look, does. A thread that does
 * publish is looked up in the table by the handshake, after its request is posted. */
static uint64_t fallback_mask(struct wp_athread *t)
{
	uint64_t m;
	if (wp_tmask_lookup(t->tid, &m))
		return m;
	if (!t->sigblk_read) {
		t->sigblk_read = 1;
		t->proc_sigblk = proc_sigblk(t->tid);
	}
	return t->proc_sigblk;
}

/* Whether `tid` is stopped (SIGSTOP) or traced, from /proc (outside any window): such a
 * thread will not answer until someone resumes it, so it is left alone for a while. */
static int stopped_or_traced(pid_t tid)
{
	char state = wp_threads_state(tid);
	return state == 'T' || state == 't';
}

/* Whether the interrupted thread was inside (or restarting) a system call: the instruction
 * before pc is `syscall` and rax holds an interrupted-call code, or pc sits on a `syscall`
 * the kernel rewound to restart. */
static int was_in_syscall(const greg_t *g, const uint8_t code[4], int have_code)
{
	if (!have_code)
		return 0;
	long rax = (long)g[REG_RAX];
	int after = code[0] == 0x0f && code[1] == 0x05;
	int at = code[2] == 0x0f && code[3] == 0x05;
	return (after && (rax == -EINTR || (rax <= -512 && rax >= -516))) || at;
}

/* Whether rax could say "in a system call" (see was_in_syscall): an interrupted call's error
 * code, or a call number the kernel put back to restart it. Anything else spares reading the
 * code bytes. */
static int may_be_syscall(const greg_t *g)
{
	long rax = (long)g[REG_RAX];
	long nr = rax & ~0x40000000L; /* x32 calls have bit 30 set */
	return rax == -EINTR || (rax <= -512 && rax >= -516) || (nr >= 0 && nr < 1024);
}

uint32_t wp_sample_units(uint64_t weight_ns)
{
	uint64_t u = (weight_ns + interval_ns / 2) / interval_ns;
	return u < 1 ? 1 : u > 100000 ? 100000 : (uint32_t)u;
}

void wp_sample_miss(enum wp_miss why)
{
	if (holder_only) {
		/* a holder's extra look is no sample of the program: nothing it missed */
		wp_locks_count_holder_missed();
		return;
	}
	wp_stats.missed[why]++;
}

size_t wp_sample_copy_len(const struct wp_athread *t, uintptr_t sp)
{
	if (t->stack_top > sp && t->stack_top - sp + STACK_SLACK <= STACK_MAX)
		return t->stack_top - sp + STACK_SLACK;
	return STACK_DEFAULT;
}

int wp_sample_holder_only(void)
{
	return holder_only;
}

uint8_t *wp_sample_spare_buffer(void)
{
	return stack_buf(0);
}

uint64_t wp_sample_rel_us(uint64_t now)
{
	return (now - start_ns) / 1000;
}

/* A lock holder's stack (pcs[0..n)), interned without counting (wait_locks.h). */
static struct wp_stack_entry *record_holder(struct wp_athread *t, uint32_t flags,
					    const struct wp_cpu_reading *cpu)
{
	struct wp_stack_entry *e = wp_stacks_intern(t, pcs, last_nframes, flags);
	if (!e)
		return NULL;
	wp_locks_count_holder_sample();
	wp_locks_sampled(t, e->id, cpu);
	if (!t->name_reads) { /* a holder never sampled otherwise is named all the same */
		t->name_reads = 1;
		wp_threads_reread_name(t);
	}
	return e;
}

struct wp_stack_entry *wp_sample_record(struct wp_athread *t, const greg_t *gregs,
					const uint8_t *stack, size_t stack_len, uint32_t flags,
					uint64_t weight_ns, uint64_t now,
					const struct wp_cpu_reading *cpu)
{
	struct wp_unwind_input in = { gregs, (uintptr_t)gregs[REG_RSP], stack, stack_len };
	struct wp_unwind_result res;
	uint64_t u0 = wp_now_ns();
	wp_guard_enter(); /* libunwind's locks: a fork child must not copy them held */
	wp_unwind(&in, pcs, WP_AGENT_MAX_FRAMES, &res);
	wp_guard_leave();
	last_nframes = res.n;
	wp_stats.unwind_ns += wp_now_ns() - u0;
	if (res.truncated) {
		flags |= WP_STACK_TRUNCATED;
		wp_stats.truncated++;
		t->stack_top = 0; /* copy the default next time */
	} else if (res.max_sp > t->stack_top) {
		t->stack_top = res.max_sp;
	}
	if (holder_only)
		return record_holder(t, flags, cpu);
	t->last_wait = NULL; /* wp_sample_blocked sets it for a sample blocked in a call */
	t->cw_runnable = 0;   /* wp_sample_note_runnable sets it for a sample in state R */
	t->cw_ran_ns = t->last_cpu.ns > t->cw_cpu_ns ? t->last_cpu.ns - t->cw_cpu_ns : 0;
	t->cw_cpu_ns = t->last_cpu.ns; /* this sample's clock (finish_job, wp_sample_blocked) */
	wp_cpuwait_not_disk(t); /* note_disk sets it for a sample in state D */
	struct wp_stack_entry *e = wp_stacks_add(t, pcs, res.n, flags, wp_sample_units(weight_ns),
						 weight_ns, (now - start_ns) / 1000);
	if (!e) {
		wp_sample_miss(WP_MISS_MEMORY);
		return NULL;
	}
	wp_stats.samples++;
	if (t->cw_since_block < UINT32_MAX)
		t->cw_since_block++;
	wp_locks_sampled(t, e->id, cpu);
	/* Its name, read when first sampled (not when listed: 10,000 idle threads would cost
	 * 10,000 reads up front) and again later, as threads often name themselves once started. */
	static const uint64_t reread_at[] = { 1, 16, 256 };
	if (t->name_reads < 3 && t->samples >= reread_at[t->name_reads]) {
		t->name_reads++;
		wp_threads_reread_name(t);
	}
	return e;
}

/* A running thread to signal, and what was read while it was held. */
struct job {
	struct wp_athread *t;
	uint64_t weight_ns;
	greg_t gregs[NGREG];
	uint8_t *stack;
	size_t want;
	ssize_t got;
	uint64_t mask; /* its signal mask as known before the request (fallback_mask) */
};
static struct job jobs[WP_HS_BATCH];
/* Looks in a row finding the signal blocked that make a thread unsampleable. */
#define BLOCKED_LOOKS 3
static size_t njobs;

/* The window (called by the handshake while jobs[i]'s thread is held in its handler): copy
 * its registers and stack. Nothing else: no allocation, no locks, no stdio, no /proc. */
static void read_held(size_t i, const struct wp_capture *cap, void *arg)
{
	struct job *j = &((struct job *)arg)[i];
	memcpy(j->gregs, cap->gregs, sizeof(j->gregs));
	uintptr_t sp = (uintptr_t)j->gregs[REG_RSP];
	j->want = wp_sample_copy_len(j->t, sp);
	j->got = wp_peek_some(sp, j->stack, j->want);
}

/* The code bytes around a pc (was the thread in a system call?), read after the thread runs
 * again: code does not change with the thread's state, and each page a read pins costs the
 * held thread ~1 us more inside the window. Returns 0 when unreadable. */
static int read_code(uintptr_t pc, uint8_t code[4])
{
	return wp_peek(pc - 2, code, 4);
}

/* A runnable thread still waiting for a CPU on a loaded machine. It has not run since the
 * signal was sent, so it is where its last sample left it as far as anyone can tell: count
 * that stack rather than drop the interval (wall mode), as a wait for the CPU. */
static void count_runnable(struct wp_athread *t, uint64_t weight_ns, uint64_t now)
{
	/* As a lock's holder, that stack counts only if its clock has not moved since
	 * (wait_locks.h: never a stack from before its waiter's owner read); a holder is
	 * counted once, sampled or missed. */
	struct wp_cpu_reading cpu = { -1, 0, 1 };
	if (holder_only || wp_cpuclock_lags())
		wp_thread_cpu_read(t->tid, &cpu);
	if (holder_only && wp_locks_unmoved(t, &cpu))
		wp_locks_count_holder_sample();
	else
		wp_sample_miss(WP_MISS_TIMEOUT);
	/* From the task, the reading taken before the signal (wp_sample_unmoved) is marked: it may
	 * have been on a CPU then, and a later one equal to it would not say it has not run
	 * since. One that let a signal wait this long was off a CPU: this reading stands, so that
	 * the next ticks count it unmoved while it stays queued, without a signal (and its 20 ms
	 * wait) each. (Put on a CPU since and on it ever since, for less than a tick: one sample
	 * counted waiting that was running.) */
	if (!holder_only && wp_cpuclock_lags() && cpu.ns >= 0)
		t->last_cpu = cpu;
	if (cfg->mode == WP_MODE_WALL && t->last_stack && !holder_only) {
		t->last_wait = NULL; /* runnable, not blocked in a call */
		wp_stacks_again(t, t->last_stack, wp_sample_units(weight_ns), weight_ns,
				(now - start_ns) / 1000);
		/* queued since the signal was sent, at least */
		wp_sample_note_runnable(t, t->last_stack, weight_ns, 1, now);
		wp_stats.samples++;
		wp_stats.reused++;
	}
}

/* `t` ran `weight_ns` (CPU time in cpu mode, wall time in wall mode) with the sampling
 * signal blocked and no perf clock to see it: that time is unseen (its THREAD record says how
 * much). When `open`, a clock is opened for what comes next (perfclock.h); when none can be,
 * the reason goes into the record with the time. A lock holder's extra look is not the
 * program's time. */
static void ran_unseen(struct wp_athread *t, uint64_t weight_ns, uint64_t now, int open)
{
	if (holder_only)
		return;
	t->unseen_ns += weight_ns;
	if (!t->pclk && open)
		wp_pclk_open(t, now);
	if (wp_pclk_why(t))
		wp_stats.unseen_ns += weight_ns;
}

/* A thread that did not answer in time. */
static void missed_answer(struct wp_athread *t, uint64_t weight_ns, uint64_t now)
{
	/* Outside the window again: /proc may be read now. */
	if (!blocks_signal(t->tid)) {
		if (stopped_or_traced(t->tid)) {
			wp_sample_miss(WP_MISS_TIMEOUT);
			back_off(t, now, BACKOFF_NS, 0);
		} else {
			count_runnable(t, weight_ns, now); /* and try again next tick */
		}
	} else if (publishes_unblocked(t->tid)) {
		/* /proc's SigBlk shows the signal blocked, the thread's own mask does not: it is
		 * inside our handler, entered and preempted before it answered (a thread starved
		 * of CPU: nice 5 on a crowded one). Taken for one that blocks the signal, it was
		 * left alone a second and its time counted in no known call; signalled at every
		 * tick instead, it would be kept in the handler. */
		count_runnable(t, weight_ns, now);
		back_off(t, now, IN_HANDLER_BACKOFF_NS, 1);
	} else {
		wp_sample_miss(WP_MISS_BLOCKED);
		ran_unseen(t, weight_ns, now, 1);
		if (!t->pclk)
			t->flags |= WP_THREAD_UNSAMPLEABLE;
		back_off(t, now, BACKOFF_NS, 0);
	}
}

/* Wall mode: a backed-off thread that runs is not signalled; as for a thread that did not
 * answer, its interval is counted on its last stack rather than dropped (missed, by cause,
 * too), so the thread's wall time stays whole. */
static void count_backed_off(struct wp_athread *t, uint64_t weight_ns, uint64_t now)
{
	if (backed_off_runnable(t)) {
		count_runnable(t, weight_ns, now);
		return;
	}
	wp_sample_miss(t->flags & WP_THREAD_UNSAMPLEABLE ? WP_MISS_BLOCKED : WP_MISS_TIMEOUT);
	if (!t->last_stack)
		return;
	t->last_wait = NULL; /* running, not blocked in a call */
	wp_stacks_again(t, t->last_stack, wp_sample_units(weight_ns), weight_ns, (now - start_ns) / 1000);
	wp_stats.samples++;
	wp_stats.reused++;
}

/* After the batch: every thread runs again; unwind the copies and count them. */
static void finish_job(struct job *j, const struct wp_hs_request *r, uint64_t now)
{
	struct wp_athread *t = j->t;
	if (r->result == WP_HS_EXITED) {
		wp_sample_miss(WP_MISS_EXITED);
		wp_threads_gone(t);
		return;
	}
	/* It asked the sampler to stop since it was chosen (threads.h, wp_threads_set_stopping):
	 * what it answered, or its not answering, is the agent's stop in its signal handler, not
	 * the program (test_deadlock's main: its join counted again as "waiting, no call"). */
	if (wp_threads_is_excluded(t->tid))
		return;
	switch (r->result) {
	case WP_HS_OK:
		break;
	case WP_HS_TIMEOUT:
		missed_answer(t, j->weight_ns, now);
		return;
	case WP_HS_LATE:
		wp_sample_miss(WP_MISS_LATE); /* it resumed on its own while read: the copy may be torn */
		return;
	case WP_HS_BLOCKED:
		wp_sample_miss(WP_MISS_BLOCKED); /* it began blocking the signal as we asked: not sent */
		return;
	default:
		wp_sample_miss(r->result == WP_HS_NOSLOT ? WP_MISS_NOSLOT : WP_MISS_ERROR);
		return;
	}
	/* its clock as it left our handler: on a CPU, and exact (schedstat's lags behind it) */
	struct wp_cpu_reading cpu = { r->cpu_ns, 0, 1 };
	if (r->cpu_ns >= 0 && !holder_only)
		t->last_cpu = cpu;
	if (r->window_ns)
		wp_stats_window(r->window_ns); /* a holder's window is held time all the same */
	t->held_ns = r->window_ns;
	if (!holder_only)
		wp_stats.signalled++;
	size_t stack_len = j->got > 0 ? (size_t)j->got : 0;
	uint8_t code[4];
	int have_code = may_be_syscall(j->gregs) && read_code((uintptr_t)j->gregs[REG_RIP], code);
	uint32_t flags = was_in_syscall(j->gregs, code, have_code) ? WP_STACK_WAITING : 0;
	struct wp_stack_entry *e = wp_sample_record(t, j->gregs, j->stack, stack_len, flags,
					       j->weight_ns, now, &cpu);
	if (!e || holder_only)
		return;
	if (flags) {
		wp_sample_note_interrupted(t, e, j->gregs, j->weight_ns, now);
	} else {
		/* running, or runnable: state R; maybe just back from a blocking call */
		uint64_t unran = wp_sample_note_runnable(t, e, j->weight_ns, 0, now);
		wp_sample_note_returned(t, e, j->gregs, j->weight_ns, unran, now);
	}
}

/* Signals the queued threads all at once (handshake.c serves them as they answer), then
 * unwinds what was copied. */
static void flush_jobs(uint64_t now)
{
	struct wp_hs_request reqs[WP_HS_BATCH];
	for (size_t i = 0; i < njobs; i++) {
		reqs[i].tid = jobs[i].t->tid;
		reqs[i].fallback_mask = jobs[i].mask;
	}
	wp_handshake_batch(reqs, njobs, read_held, jobs);
	/* ---- every thread runs again ---- */
	for (size_t i = 0; i < njobs; i++) {
		finish_job(&jobs[i], &reqs[i], now);
		/* cpu mode: the thread spent the window spinning in our handler; that CPU is
		 * ours, not the program's, so it earns no credit (a lock holder's extra look
		 * too). Everything else it ran meanwhile (while the sampler unwound, say) is the
		 * program's and is credited at the next look. A holder never polled yet has no
		 * clock to move: its first poll starts from its clock then. */
		if (cfg->mode == WP_MODE_CPU && jobs[i].t->poll_cpu_ns >= 0)
			jobs[i].t->poll_cpu_ns += (int64_t)jobs[i].t->held_ns;
	}
	njobs = 0;
}

/* Queues a running thread for the next batch, unless it blocks the signal: such a thread is
 * never signalled (the signal would stay pending and reach the program: its signalfd, sigwait
 * or sigpending), only sampled from /proc while blocked in the kernel. */
static void sample_signalled(struct wp_athread *t, uint64_t weight_ns, uint64_t now)
{
	uint64_t mask = fallback_mask(t);
	int sig = wp_handshake_signal();
	if (sig > 0 && ((mask >> (sig - 1)) & 1)) {
		wp_sample_miss(WP_MISS_BLOCKED);
		/* From now on a perf clock samples it (perfclock.h), when it can have one: at once
		 * for a thread that published its mask, after BLOCKED_LOOKS looks in a row for one
		 * whose mask came from /proc (glibc's pthread_create blocks every signal for a
		 * moment, before the new thread publishes its own). Without one, its THREAD record
		 * says how long it ran unseen, and why (liblzma's workers block every signal:
		 * xz -T2's computing was invisible). */
		uint64_t published;
		uint32_t looks = t->blocked_looks + 1;
		ran_unseen(t, weight_ns, now,
			   wp_tmask_lookup(t->tid, &published) || looks >= BLOCKED_LOOKS);
		if (!t->pclk) {
			t->blocked_looks = looks;
			if (looks >= BLOCKED_LOOKS)
				t->flags |= WP_THREAD_UNSAMPLEABLE;
		}
		return;
	}
	t->blocked_looks = 0;
	struct job *j = &jobs[njobs];
	j->mask = mask;
	j->t = t;
	j->weight_ns = weight_ns;
	j->stack = stack_buf(njobs);
	if (!j->stack)
		return; /* no memory for the copy (never while a thread is held: it is not yet) */
	j->got = -1;
	t->held_ns = 0;
	if (++njobs == WP_HS_BATCH)
		flush_jobs(now);
}


/* Lock holders, after their waiters (wait_locks.h): see sample.h. */
void wp_sample_holders(struct wp_athread **ts, size_t n, uint64_t now)
{
	holder_only = 1;
	for (size_t i = 0; i < n && i < WP_HS_BATCH; i++) {
		struct wp_athread *t = ts[i];
		if (!t->alive || backed_off(t, now) || wp_threads_is_excluded(t->tid))
			continue;
		struct wp_cpu_reading cpu;
		if (wp_thread_cpu_read(t->tid, &cpu) < 0)
			continue;
		if (wp_locks_unmoved(t, &cpu)) {
			/* it has not run since its last sample: that stack is where it is */
			wp_locks_count_holder_sample();
			continue;
		}
		if (wp_sample_on_cpu_now(t, &cpu)) {
			sample_signalled(t, 0, now);
			continue;
		}
		/* not on a CPU: a /proc look, paid from the first looks' ration */
		int done = wp_sample_blocked_rationed(t, cpu, 0, now);
		if (done < 0) {
			wp_locks_count_holder_missed();
			continue;
		}
		if (!done)
			sample_signalled(t, 0, now);
	}
	/* WALLPROF_TEST=slow-holders: the first time, wait here (no thread held yet) so that a
	 * fork lands in this half-done tick (test_fork_mid_tick.py); poll, which the sampler
	 * calls nowhere else, tells the test it is there. */
	static int slowed;
	if (cfg->test_slow_holders && !slowed++)
		syscall(SYS_poll, NULL, 0, 1000);
	flush_jobs(now);
	holder_only = 0;
}

/* Threads that block the signal and have a perf clock (perfclock.h). How their records
 * count:
 *   - cpu mode: every record is a sample of the thread running, worth the CPU time its
 *     clock counted since the record before (one interval; more when records were lost),
 *     unwound and counted like a signalled sample's copy;
 *   - wall mode: a tick samples such a thread as any other: from its CPU clock when it has
 *     not run since its last sample, from /proc when it is blocked in the kernel, and when
 *     it runs (or waits for a CPU), instead of a signal, with its newest record, the latest
 *     interval of CPU time it ran through, counted with the tick's weight (sample_clocked).
 *     So its wall time is split between running and waiting by the ticks, exactly as for a
 *     signalled thread, and the stack of a running sample is at most one interval of its
 *     CPU time old. The other records are dropped unread.
 * Called at the start of each tick, before any owner read of the tick (wait_locks.h: a
 * record is older than them). Each clock is closed once its thread has ended, is excluded
 * or has let the signal through for a second (still_blocks; then it is signalled again). */
static void count_clocked(struct wp_athread *t, const struct wp_pclk_rec *r, void *arg)
{
	(void)arg;
	const struct wp_cpu_reading unknown = { -1, 0, 1 };
	wp_sample_record(t, r->gregs, r->stack, r->stack_len, 0, r->weight_ns,
		    r->time_ns > start_ns ? r->time_ns : start_ns, &unknown);
}

/* Whether `t`, which has a perf clock, still blocks the signal: by the mask it publishes
 * (threadmask.h), else by /proc's SigBlk, read again at most once a second. A clock is kept
 * until its thread has let the signal through at every tick for a second (and at least
 * BLOCKED_LOOKS ticks): a thread that blocks signals around short critical sections would
 * otherwise have one opened and closed again and again (~70 us of sampler CPU each time),
 * while one kept open samples it right whatever its mask. */
static int still_blocks(struct wp_athread *t, uint64_t now)
{
	int sig = wp_handshake_signal();
	uint64_t mask;
	if (sig <= 0)
		return 1;
	if (wp_tmask_lookup(t->tid, &mask)) {
		if ((mask >> (sig - 1)) & 1) {
			t->pclk_unblocked = 0;
			return 1;
		}
		if (!t->pclk_unblocked++)
			t->pclk_unblocked_at = now;
		return t->pclk_unblocked < BLOCKED_LOOKS || now - t->pclk_unblocked_at < BACKOFF_NS;
	}
	if (now < t->pclk_look_at)
		return 1;
	t->pclk_look_at = now + BACKOFF_NS;
	t->proc_sigblk = proc_sigblk(t->tid);
	t->sigblk_read = 1;
	return (t->proc_sigblk >> (sig - 1)) & 1;
}

static void clocked_tick(uint64_t now)
{
	static size_t cursor;
	size_t n = wp_pclk_slots(), budget = PCLK_RECORDS_PER_TICK;
	if (!wp_pclk_open_now())
		return;
	for (size_t k = 0; k < n; k++) {
		struct wp_athread *t = wp_pclk_thread((cursor + k) % n);
		if (!t)
			continue;
		int keep = t->alive && !wp_threads_is_excluded(t->tid) && still_blocks(t, now);
		if (cfg->mode == WP_MODE_CPU) {
			/* a clock about to close gives all it has */
			size_t got = wp_pclk_read(t, keep ? budget : SIZE_MAX, count_clocked, NULL);
			budget -= got < budget ? got : budget;
		} else {
			wp_pclk_newest(t, NULL); /* the rest would fill its ring */
		}
		if (keep)
			continue;
		wp_pclk_close(t);
		if (t->alive) {
			/* signalled from now on: its CPU time counts from its next poll */
			t->poll_cpu_ns = -1;
			t->credit_ns = 0;
			t->credit_waited = 0;
			t->blocked_looks = 0;
		} else {
			wp_threads_forget_unsampled(t);
		}
	}
	cursor = (cursor + 1) % n;
}

/* Wall mode: `t` (which has a perf clock) runs or waits for a CPU: its newest record instead
 * of a signal (clocked_tick says why that counts right). Outside any window. */
static void sample_clocked(struct wp_athread *t, uint64_t weight_ns, uint64_t now)
{
	struct wp_pclk_rec r;
	if (!wp_pclk_newest(t, &r)) {
		/* it has not run a whole interval since its clock opened */
		wp_sample_miss(WP_MISS_BLOCKED);
		t->unseen_ns += weight_ns;
		return;
	}
	/* A lock holder must be sampled after its waiter's owner read (wait_locks.h); a record
	 * may be older than that read, so it does not count as that sample (wp_sample_holders
	 * never takes one: a holder that blocks the signal is missed, `holder_missed`). */
	uint64_t seq = t->lock_seq;
	uint32_t stack = t->lock_stack;
	struct wp_cpu_reading cpu = t->lock_cpu;
	const struct wp_cpu_reading unknown = { -1, 0, 1 };
	struct wp_stack_entry *e = wp_sample_record(t, r.gregs, r.stack, r.stack_len, 0, weight_ns,
					       now, &unknown);
	t->lock_seq = seq;
	t->lock_stack = stack;
	t->lock_cpu = cpu;
	if (e) {
		/* running, or waiting for a CPU; maybe just back from a blocking call */
		uint64_t unran = wp_sample_note_runnable(t, e, weight_ns, 0, now);
		wp_sample_note_returned(t, e, r.gregs, weight_ns, unran, now);
	}
}

void wp_sample_end_clocks(void)
{
	for (size_t i = 0; i < wp_pclk_slots(); i++) {
		struct wp_athread *t = wp_pclk_thread(i);
		if (!t)
			continue;
		if (cfg->mode == WP_MODE_CPU)
			wp_pclk_read(t, SIZE_MAX, count_clocked, NULL);
		wp_pclk_close(t);
		if (!t->alive)
			wp_threads_forget_unsampled(t);
	}
}

static void tick_wall(uint64_t now)
{
	clocked_tick(now);
	size_t n;
	struct wp_athread **live = wp_threads_live(&n);
	if (!n)
		return;
	size_t k = cfg->threads == 0 || (size_t)cfg->threads > n ? n : (size_t)cfg->threads;
	/* Each sample stands for the wall time since the previous tick (the interval, or more
	 * when this tick came late on a busy machine), times n / k for the threads not chosen.
	 * The first tick's since the sampler started (wp_sample_begin): the set-up before it
	 * (an exec'd image's modules and unwinder, on a loaded machine tens of ms) is the
	 * program's wall time too. */
	uint64_t since = now > prev_tick ? now - prev_tick : interval_ns;
	prev_tick = now;
	/* e.g. the machine was suspended: do not invent time. At least a second: a sampler kept
	 * off the CPU for 100-300 ms on a loaded machine (seen at load 12 on 2 CPUs) is real
	 * wall time of the program's threads, which a cap of 100 intervals (100 ms at 1000 Hz)
	 * lost. */
	uint64_t cap = 100 * interval_ns > 1000000000ull ? 100 * interval_ns : 1000000000ull;
	if (since > cap)
		since = cap;
	uint64_t weight = since * n / k;
	for (size_t i = 0; i < k; i++) {
		/* Partial Fisher-Yates: live[i] becomes a uniformly chosen remaining thread. */
		size_t j = i + next_rand() % (n - i);
		struct wp_athread *t = live[j];
		live[j] = live[i];
		live[i] = t;
		if (!t->alive || wp_threads_is_excluded(t->tid))
			continue;
		/* A thread backed off (it blocked the signal: glibc's posix_spawn blocks every
		 * signal for a moment) is only spared the signal: a thread that has not run since
		 * its last sample, or is blocked in a call, is still counted from /proc, so its
		 * wall time is not lost for the back-off's second. */
		int off = backed_off(t, now);
		if (!cfg->test_signal_all) {
			if (wp_sample_unmoved(t, weight, now))
				continue;
			if (!wp_sample_on_cpu_now(t, &t->last_cpu) && wp_sample_look_blocked(t, weight, now))
				continue;
		}
		if (t->pclk)
			sample_clocked(t, weight, now); /* it blocks the signal: never signalled */
		else if (off)
			count_backed_off(t, weight, now);
		else
			sample_signalled(t, weight, now);
	}
	flush_jobs(now);
	wp_locks_settle(now); /* after every owner read of the tick */
}


/* cpu mode: on a CPU or waiting for one (state R), where its signal finds it where it runs.
 * From the task that is what wp_sample_on_cpu_now says; on a thread of the program (the
 * fallback) a clock that did not move may be a thread preempted, by the sampler itself on its
 * CPU as often as not, so its state letter is read then (test_tree's "orphans" run lost a
 * whole process's samples without it). */
static int runs_now(struct wp_athread *t, const struct wp_cpu_reading *cpu)
{
	return wp_sample_on_cpu_now(t, cpu) || (!wp_cpuclock_lags() && wp_thread_runnable(t->tid) == 1);
}

static void tick_cpu(uint64_t now)
{
	static size_t cursor;
	clocked_tick(now);
	size_t n;
	struct wp_athread **live = wp_threads_live(&n);
	size_t polls = n < CPU_POLLS_PER_TICK ? n : CPU_POLLS_PER_TICK;
	for (size_t i = 0; i < polls; i++) {
		struct wp_athread *t = live[(cursor + i) % n];
		if (!t->alive || wp_threads_is_excluded(t->tid) || t->pclk)
			continue; /* (a perf clock's records are its samples: clocked_tick) */
		struct wp_cpu_reading cpu;
		if (wp_thread_cpu_read(t->tid, &cpu) < 0) {
			wp_threads_gone(t);
			continue;
		}
		int64_t ran = t->poll_cpu_ns < 0 ? 0 : cpu.ns - t->poll_cpu_ns;
		t->poll_cpu_ns = cpu.ns;
		/* From the task, only credit seen at an earlier tick is paid now ("ripe"). There
		 * the clock is schedstat's sum, which moves when the kernel settles the thread's
		 * time: at a switch, a scheduler tick, and when the program reads its own CPU
		 * clock. Paid at the tick that saw it move, a sample lands where those happen:
		 * cpu_split, napping, timing each call with CLOCK_THREAD_CPUTIME_ID, had 21-31%
		 * of its samples in the clock read that ends a call; a tick later the thread has
		 * mostly moved on (3-5% there; a thread preempted by other load at such a read is
		 * still found there). A clock read in the thread group is exact: paid at once. */
		if (ran <= 0)
			continue; /* not run since the last look: asleep, or woken and not yet run */
		uint64_t ripe = wp_cpuclock_lags() ? t->credit_ns : t->credit_ns + (uint64_t)ran;
		t->credit_ns += (uint64_t)ran;
		if (ripe < interval_ns || backed_off(t, now))
			continue;
		/* One sample pays out whole intervals of CPU time it stands for, but a thread that
		 * has been on a CPU at every due tick since its last sample keeps one in hand when
		 * it could pay two or more: tick jitter (+-1/8 interval), or schedstat's lumps,
		 * would otherwise make it earn two at one tick and none at the next, and be
		 * captured at fewer ticks than it ran through (cpu_split's mean error: 0.3 points
		 * with it, 1 without). A thread whose credit waited while it was off a CPU pays all
		 * of it: what it kept in hand would be due at the very tick that sees its clock
		 * jump (napping, 7-11% of cpu_split's samples in its clock reads, against 2-4%).
		 * What a thread has in hand as it ends is not paid. */
		uint64_t whole = ripe / interval_ns;
		uint64_t weight = (whole >= 2 && !t->credit_waited ? whole - 1 : whole) * interval_ns;
		/* Off a CPU now (it ran, then blocked): where it waits is not where it ran, and a
		 * signal would interrupt its call. Its credit waits for a tick that finds it on a
		 * CPU (and its clock moved), which pays it there: a thread on a CPU a fraction f
		 * of the time is found so at about that fraction of the ticks, each paying about
		 * 1/f intervals, as perf's CPU clock samples only a running thread. (Taken from
		 * /proc instead, as it was, the CPU time of a thread that runs 1 ms and sleeps 3
		 * went ~80% to its nanosleep: test_cpu_split's napping run.) */
		if (!runs_now(t, &cpu)) {
			t->credit_waited = 1;
			continue;
		}
		t->credit_waited = 0;
		t->credit_ns -= weight;
		sample_signalled(t, weight, now);
	}
	flush_jobs(now);
	wp_locks_settle(now);
	cursor = n ? (cursor + polls) % n : 0;
}


void wp_sample_begin(const struct wp_config *c, uint64_t run_start_ns, uint64_t every_ns)
{
	cfg = c;
	wp_sample_nosignal_begin(c);
	start_ns = run_start_ns;
	wp_pclk_begin(c, every_ns);
	prev_tick = run_start_ns; /* a fork child's too: not its parent's last tick */
	interval_ns = every_ns;
}

void wp_sample_seed(uint64_t seed)
{
	rng ^= seed;
}

uint64_t wp_sample_rand(void)
{
	return next_rand();
}

void wp_sample_tick(uint64_t now)
{
	wp_locks_tick_begin();
	if (cfg->mode == WP_MODE_CPU)
		tick_cpu(now);
	else
		tick_wall(now);
}

void wp_sample_forget(void)
{
	/* A fork child may have copied a tick half done (fork_prepare waits for it 200 ms at
	 * most): its queued jobs name thread entries the child frees, and its holder_only
	 * would leave every later sample uncounted. */
	njobs = 0;
	holder_only = 0;
	wp_pages_zero(backoffs, sizeof(backoffs)); /* a fork child: pages.h */
	wp_sample_nosignal_forget();
	wp_locks_reset();
	wp_pclk_forget();
}
