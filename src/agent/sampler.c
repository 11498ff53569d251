#include "sampler.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "../common/format.h"
#include "clock.h"
#include "fds.h"
#include "handshake.h"
#include "log.h"
#include "modules.h"
#include "sigmask.h"
#include "stacks.h"
#include "stats.h"
#include "threadmask.h"
#include "threads.h"
#include "unwind.h"

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
/* cpu mode: at most this many thread CPU clocks read per tick (round robin beyond). */
#define CPU_POLLS_PER_TICK 256

static struct wp_config cfg;
static pthread_t thread;
static int started;
static _Atomic uint32_t stop_word;
static _Atomic int sampler_tid;
static uint64_t start_ns, start_unix_ns, interval_ns;
static _Atomic uint64_t cpu_ns_final;
static _Atomic uint32_t done_word; /* 1 once the loop has exited */
static void (*checkpoint_fn)(void);
/* Held by the sampler for each tick and its set-up. fork() takes it first (atfork prepare),
 * so a fork never happens while the sampler holds the loader's lock (dl_iterate_phdr,
 * dlopen), libunwind's or a half-updated table: the child would inherit them locked and
 * deadlock on its first dlopen or C++ exception. */
static pthread_mutex_t tick_lock = PTHREAD_MUTEX_INITIALIZER;
static int fork_locked;
static uint64_t checkpoint_every_ns, checkpoint_next;
static pid_t pid;
/* Whose memory process_vm_readv reads: the sampler's own tid. The pid names the leader, and
 * once main has ended (pthread_exit) the leader is a zombie without memory: every read would
 * fail with ESRCH and every stack would be cut to its pc. */
static pid_t mem_tid;
static uint64_t rng = 0x9e3779b97f4a7c15ull;
/* The signal mask of the program's thread that started us, and the leader's as it called
 * pthread_exit: the mask of the thread that ends the process for the program (end_process). */
static sigset_t starter_mask, leader_mask;
static _Atomic pid_t leader_mask_pid;
static int ending; /* end_process has run */

/* One stack copy per thread of a batch: all are copied while held, then unwound. */
static uint8_t stack_bufs[WP_HS_BATCH][STACK_MAX];
static uint64_t pcs[WP_AGENT_MAX_FRAMES];

/* Per-thread back-off deadlines live on the thread entry's credit field in wall mode would be
 * confusing; keep a tiny side table keyed by pointer instead: the entry's `flags` carries
 * UNSAMPLEABLE and this records until when. */
struct backoff {
	struct wp_athread *t;
	uint64_t until;
};
static struct backoff backoffs[64];

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

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

static void back_off(struct wp_athread *t, uint64_t now)
{
	size_t victim = next_rand() % (sizeof(backoffs) / sizeof(backoffs[0]));
	for (size_t i = 0; i < sizeof(backoffs) / sizeof(backoffs[0]); i++)
		if (!backoffs[i].t || backoffs[i].t == t) {
			victim = i;
			break;
		}
	backoffs[victim] = (struct backoff){ t, now + BACKOFF_NS };
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
	char buf[512];
	if (wp_threads_read_proc(tid, "stat", buf, sizeof(buf)) <= 0)
		return 0;
	char *p = strrchr(buf, ')'); /* the name may contain anything, but not after its ')' */
	return p && p[1] == ' ' && (p[2] == 'T' || p[2] == 't');
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

/* How many sampling intervals a sample worth `weight_ns` stands for (at least one). */
static uint32_t units_of(uint64_t weight_ns)
{
	uint64_t u = (weight_ns + interval_ns / 2) / interval_ns;
	return u < 1 ? 1 : u > 100000 ? 100000 : (uint32_t)u;
}

static void miss(enum wp_miss why)
{
	wp_stats.missed[why]++;
}

static size_t copy_len_for(const struct wp_athread *t, uintptr_t sp)
{
	if (t->stack_top > sp && t->stack_top - sp + STACK_SLACK <= STACK_MAX)
		return t->stack_top - sp + STACK_SLACK;
	return STACK_DEFAULT;
}

/* Unwinds a copied thread state (after the thread runs again) and counts the stack. */
static void record_copy(struct wp_athread *t, const greg_t *gregs, const uint8_t *stack,
			size_t stack_len, uint32_t flags, uint64_t weight_ns, uint64_t now)
{
	struct wp_unwind_input in = { gregs, (uintptr_t)gregs[REG_RSP], stack, stack_len };
	struct wp_unwind_result res;
	uint64_t u0 = wp_now_ns();
	wp_unwind(&in, pcs, WP_AGENT_MAX_FRAMES, &res);
	wp_stats.unwind_ns += wp_now_ns() - u0;
	if (res.truncated) {
		flags |= WP_STACK_TRUNCATED;
		wp_stats.truncated++;
		t->stack_top = 0; /* copy the default next time */
	} else if (res.max_sp > t->stack_top) {
		t->stack_top = res.max_sp;
	}
	if (!wp_stacks_add(t, pcs, res.n, flags, units_of(weight_ns), weight_ns,
			   (now - start_ns) / 1000)) {
		miss(WP_MISS_MEMORY);
		return;
	}
	wp_stats.samples++;
	/* Its name, read when first sampled (not when listed: 10,000 idle threads would cost
	 * 10,000 reads up front) and again later, as threads often name themselves once started. */
	static const uint64_t reread_at[] = { 1, 16, 256 };
	if (t->name_reads < 3 && t->samples >= reread_at[t->name_reads]) {
		t->name_reads++;
		wp_threads_reread_name(t);
	}
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
static size_t njobs;

/* The window (called by the handshake while jobs[i]'s thread is held in its handler): copy
 * its registers and stack. Nothing else: no allocation, no locks, no stdio, no /proc. */
static void read_held(size_t i, const struct wp_capture *cap, void *arg)
{
	struct job *j = &((struct job *)arg)[i];
	memcpy(j->gregs, cap->gregs, sizeof(j->gregs));
	uintptr_t sp = (uintptr_t)j->gregs[REG_RSP];
	j->want = copy_len_for(j->t, sp);
	struct iovec local = { j->stack, j->want }, remote = { (void *)sp, j->want };
	/* process_vm_readv on ourselves cannot fault: it stops at the first unmapped byte. */
	j->got = process_vm_readv(mem_tid, &local, 1, &remote, 1, 0);
}

/* The code bytes around a pc (was the thread in a system call?), read after the thread runs
 * again: code does not change with the thread's state, and each page a read pins costs the
 * held thread ~1 us more inside the window. Returns 0 when unreadable. */
static int read_code(uintptr_t pc, uint8_t code[4])
{
	struct iovec local = { code, 4 }, remote = { (void *)(pc - 2), 4 };
	return process_vm_readv(mem_tid, &local, 1, &remote, 1, 0) == 4;
}

/* A thread that did not answer in time. */
static void missed_answer(struct wp_athread *t, uint64_t weight_ns, uint64_t now)
{
	/* Outside the window again: /proc may be read now. */
	if (blocks_signal(t->tid)) {
		miss(WP_MISS_BLOCKED);
		t->flags |= WP_THREAD_UNSAMPLEABLE;
		back_off(t, now);
	} else if (stopped_or_traced(t->tid)) {
		miss(WP_MISS_TIMEOUT);
		back_off(t, now);
	} else {
		/* A runnable thread still waiting for a CPU on a loaded machine. It has not run
		 * since the signal was sent, so it is where its last sample left it as far as
		 * anyone can tell: count that stack rather than drop the interval (wall mode),
		 * and try again next tick. */
		miss(WP_MISS_TIMEOUT);
		if (cfg.mode == WP_MODE_WALL && t->last_stack) {
			wp_stacks_again(t, t->last_stack, units_of(weight_ns), weight_ns,
					(now - start_ns) / 1000);
			wp_stats.samples++;
			wp_stats.reused++;
		}
	}
}

/* After the batch: every thread runs again; unwind the copies and count them. */
static void finish_job(struct job *j, const struct wp_hs_request *r, uint64_t now)
{
	struct wp_athread *t = j->t;
	switch (r->result) {
	case WP_HS_OK:
		break;
	case WP_HS_EXITED:
		miss(WP_MISS_EXITED);
		wp_threads_gone(t);
		return;
	case WP_HS_TIMEOUT:
		missed_answer(t, j->weight_ns, now);
		return;
	case WP_HS_LATE:
		miss(WP_MISS_LATE); /* it resumed on its own while read: the copy may be torn */
		return;
	case WP_HS_BLOCKED:
		miss(WP_MISS_BLOCKED); /* it began blocking the signal as we asked: not sent */
		return;
	default:
		miss(r->result == WP_HS_NOSLOT ? WP_MISS_NOSLOT : WP_MISS_ERROR);
		return;
	}
	if (r->cpu_ns >= 0)
		t->last_cpu_ns = r->cpu_ns; /* its clock as it left our handler */
	if (r->window_ns)
		wp_stats_window(r->window_ns);
	t->held_ns = r->window_ns;
	wp_stats.signalled++;
	size_t stack_len = j->got > 0 ? (size_t)j->got : 0;
	uint8_t code[4];
	int have_code = may_be_syscall(j->gregs) && read_code((uintptr_t)j->gregs[REG_RIP], code);
	uint32_t flags = was_in_syscall(j->gregs, code, have_code) ? WP_STACK_WAITING : 0;
	record_copy(t, j->gregs, j->stack, stack_len, flags, j->weight_ns, now);
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
		 * ours, not the program's, so it earns no credit. Everything else it ran
		 * meanwhile (while the sampler unwound, say) is the program's and is credited
		 * at the next look. */
		if (cfg.mode == WP_MODE_CPU)
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
		miss(WP_MISS_BLOCKED);
		return;
	}
	struct job *j = &jobs[njobs];
	j->mask = mask;
	j->t = t;
	j->weight_ns = weight_ns;
	j->stack = stack_bufs[njobs];
	j->got = -1;
	t->held_ns = 0;
	if (++njobs == WP_HS_BATCH)
		flush_jobs(now);
}

/* Reads the user SP and PC of a thread blocked in the kernel from
 * /proc/self/task/TID/syscall ("NR a1..a6 SP PC", or "-1 SP PC" when blocked outside a call,
 * or "running"). Returns 1 when blocked, 0 when running, -1 when unreadable. */
static int read_blocked_regs(pid_t tid, uintptr_t *sp, uintptr_t *pc)
{
	char buf[256];
	if (wp_threads_read_proc(tid, "syscall", buf, sizeof(buf)) <= 0)
		return -1;
	if (!strncmp(buf, "running", 7))
		return 0;
	char *p = buf, *end;
	unsigned long long f[9];
	int k = 0;
	strtol(p, &end, 10);
	for (p = end; k < 9; k++, p = end) {
		f[k] = strtoull(p, &end, 16);
		if (end == p)
			break;
	}
	if (k < 2)
		return -1;
	*sp = (uintptr_t)f[k - 2];
	*pc = (uintptr_t)f[k - 1];
	return 1;
}

/* A thread blocked in the kernel is sampled without any signal: a signal would interrupt its
 * call (EINTR for sleeps, polls and timed waits even with SA_RESTART). Its stack cannot change
 * while it stays blocked, which its CPU clock confirms (unchanged from before the /proc read
 * until after the copy). Returns 1 when sampled (or deliberately skipped), 0 when the thread
 * is running and may be signalled. */
static int sample_blocked(struct wp_athread *t, int64_t cpu_before, uint64_t weight_ns,
			  uint64_t now)
{
	for (int attempt = 0; attempt < 3; attempt++) {
		uintptr_t sp, pc;
		int b = read_blocked_regs(t->tid, &sp, &pc);
		if (b == 0)
			return 0;
		if (b < 0) {
			miss(WP_MISS_ERROR);
			return 1;
		}
		if (sp == 0) {
			/* "-1 0x0 0x0": no user context, the thread has ended (the leader stays a
			 * zombie until the process ends; threads.c stops listing it soon) */
			miss(WP_MISS_EXITED);
			return 1;
		}
		static greg_t gregs[NGREG];
		memset(gregs, 0, sizeof(gregs));
		gregs[REG_RSP] = (greg_t)sp;
		gregs[REG_RIP] = (greg_t)pc;
		size_t want = copy_len_for(t, sp);
		/* no batch is in flight here: its first buffer is free */
		struct iovec local = { stack_bufs[0], want }, remote = { (void *)sp, want };
		ssize_t got = process_vm_readv(mem_tid, &local, 1, &remote, 1, 0);
		int64_t cpu_after = wp_thread_cpu_ns(t->tid);
		if (cpu_after < 0) {
			miss(WP_MISS_EXITED);
			wp_threads_gone(t);
			return 1;
		}
		if (got > 0 && cpu_after == cpu_before) {
			/* Registers other than SP and PC are unknown: frame-pointer code loses the
			 * frames above its first rbp-based frame (recorded, flagged truncated). */
			wp_stats.unsignalled++;
			record_copy(t, gregs, stack_bufs[0], (size_t)got, WP_STACK_WAITING, weight_ns,
				    now);
			return 1;
		}
		cpu_before = cpu_after; /* it woke up meanwhile: look again */
	}
	/* Busy waking and sleeping: not worth a signal that could interrupt its next call. */
	miss(WP_MISS_MOVING);
	return 1;
}

/* Whether a thread is on a CPU right now: its CPU clock moved since `cpu_before`, read a
 * moment ago (a system call's worth of time; a blocked or preempted thread's clock stands
 * still). Such a thread is signalled straight away, sparing a /proc read (10-40 us in the
 * kernel) per running thread; the others are looked up in /proc first. */
static int on_cpu_now(struct wp_athread *t, int64_t cpu_before)
{
	return wp_thread_cpu_ns(t->tid) > cpu_before;
}

/* Wall mode: a thread whose CPU clock has not moved since its last sample is exactly where
 * it was: count that stack again, as waiting, without signalling it. Returns 1 if done. */
static int sample_unmoved(struct wp_athread *t, uint64_t weight_ns, uint64_t now)
{
	int64_t cpu = wp_thread_cpu_ns(t->tid);
	if (cpu < 0) {
		miss(WP_MISS_EXITED);
		wp_threads_gone(t);
		return 1;
	}
	struct wp_stack_entry *last = t->last_stack;
	int unmoved = last && cpu == t->last_cpu_ns;
	t->last_cpu_ns = cpu;
	if (!unmoved)
		return 0;
	uint64_t rel_us = (now - start_ns) / 1000;
	if (last->flags & WP_STACK_WAITING) {
		wp_stacks_again(t, last, units_of(weight_ns), weight_ns, rel_us);
	} else if (!wp_stacks_add(t, last->pcs, last->nframes, last->flags | WP_STACK_WAITING,
				  units_of(weight_ns), weight_ns, rel_us)) {
		miss(WP_MISS_MEMORY);
		return 1;
	}
	wp_stats.samples++;
	wp_stats.reused++;
	return 1;
}

/* Wall mode: the first look at a blocked thread costs ~50 us (two /proc reads, its syscall
 * file and its name, then a cold stack copy and unwind); later looks at an idle thread cost
 * one CPU-clock read. With thousands of idle threads those first looks would keep the sampler
 * busy for seconds, so they are rationed, in the sampler's CPU time: 1% of one core on
 * average (the rest of a tick costs about as much), with a 50 ms allowance up front (about
 * 1,000 threads' worth, so most programs never notice). A chosen thread over the ration is
 * counted as missed ("rationed") and gets its turn at a later tick. */
#define FIRST_LOOK_SHARE 100 /* 1/100 = 1% */
#define FIRST_LOOK_BURST_NS (50 * 1000000ll)
static int64_t first_look_tokens = FIRST_LOOK_BURST_NS;
static uint64_t first_look_refilled;

static int first_look_allowed(uint64_t now)
{
	/* WALLPROF_TEST=tight-ration: 0.1% and a 100 µs allowance, so a test sees it bite */
	uint64_t share = cfg.test_tight_ration ? 10 * FIRST_LOOK_SHARE : FIRST_LOOK_SHARE;
	int64_t burst = cfg.test_tight_ration ? 100000 : FIRST_LOOK_BURST_NS;
	if (first_look_refilled && now > first_look_refilled)
		first_look_tokens += (int64_t)((now - first_look_refilled) / share);
	first_look_refilled = now;
	if (first_look_tokens > burst)
		first_look_tokens = burst;
	return first_look_tokens > 0;
}

/* The /proc look at a thread not on a CPU, rationed when it is the thread's first. Returns 1
 * when done with the thread (sampled, or missed), 0 when it is running after all. */
static int look_blocked(struct wp_athread *t, uint64_t weight_ns, uint64_t now)
{
	if (t->last_stack)
		return sample_blocked(t, t->last_cpu_ns, weight_ns, now);
	if (!first_look_allowed(now)) {
		miss(WP_MISS_RATIONED);
		return 1;
	}
	uint64_t c0 = wp_self_cpu_ns();
	int done = sample_blocked(t, t->last_cpu_ns, weight_ns, now);
	first_look_tokens -= (int64_t)(wp_self_cpu_ns() - c0);
	return done;
}

static void tick_wall(uint64_t now)
{
	size_t n;
	struct wp_athread **live = wp_threads_live(&n);
	if (!n)
		return;
	size_t k = cfg.threads == 0 || (size_t)cfg.threads > n ? n : (size_t)cfg.threads;
	/* Each sample stands for the wall time since the previous tick (the interval, or more
	 * when this tick came late on a busy machine), times n / k for the threads not chosen. */
	static uint64_t prev_tick;
	uint64_t since = prev_tick && now > prev_tick ? now - prev_tick : interval_ns;
	prev_tick = now;
	if (since > 100 * interval_ns)
		since = 100 * interval_ns; /* e.g. the machine was suspended: do not invent time */
	uint64_t weight = since * n / k;
	for (size_t i = 0; i < k; i++) {
		/* Partial Fisher-Yates: live[i] becomes a uniformly chosen remaining thread. */
		size_t j = i + next_rand() % (n - i);
		struct wp_athread *t = live[j];
		live[j] = live[i];
		live[i] = t;
		if (!t->alive || backed_off(t, now) || wp_threads_is_excluded(t->tid))
			continue;
		if (!cfg.test_signal_all) {
			if (sample_unmoved(t, weight, now))
				continue;
			if (!on_cpu_now(t, t->last_cpu_ns) && look_blocked(t, weight, now))
				continue;
		}
		sample_signalled(t, weight, now);
	}
	flush_jobs(now);
}


static void tick_cpu(uint64_t now)
{
	static size_t cursor;
	size_t n;
	struct wp_athread **live = wp_threads_live(&n);
	size_t polls = n < CPU_POLLS_PER_TICK ? n : CPU_POLLS_PER_TICK;
	for (size_t i = 0; i < polls; i++) {
		struct wp_athread *t = live[(cursor + i) % n];
		if (!t->alive || wp_threads_is_excluded(t->tid))
			continue;
		int64_t cpu = wp_thread_cpu_ns(t->tid);
		if (cpu < 0) {
			wp_threads_gone(t);
			continue;
		}
		int64_t ran = t->poll_cpu_ns < 0 ? 0 : cpu - t->poll_cpu_ns;
		t->poll_cpu_ns = cpu;
		if (ran <= 0)
			continue; /* asleep since the last look: a cpu profile gives it nothing */
		t->credit_ns += (uint64_t)ran;
		if (t->credit_ns < interval_ns || backed_off(t, now))
			continue;
		/* One sample pays out whole intervals of CPU time it stands for, but keeps one in
		 * hand when it could pay two or more: tick jitter (+-1/8 interval) would otherwise
		 * make a thread that runs one interval per tick earn two at one tick and none at
		 * the next, and be captured at fewer ticks than it ran through. The bank stays
		 * below two intervals, so no CPU time goes uncounted for long. */
		uint64_t whole = t->credit_ns / interval_ns;
		uint64_t weight = (whole >= 2 ? whole - 1 : whole) * interval_ns;
		t->credit_ns -= weight;
		/* It ran during the last tick but may have just blocked: then take it from /proc
		 * rather than interrupt its call. */
		if (on_cpu_now(t, cpu) || !sample_blocked(t, cpu, weight, now))
			sample_signalled(t, weight, now);
	}
	flush_jobs(now);
	cursor = n ? (cursor + polls) % n : 0;
}

/* Progress for the CLI: one short line every half second through the command's channel
 * (log.c), with any warning the command has not had yet. Non-blocking: a reader that
 * stopped reading never stalls the sampler. */
static uint64_t progress_next;

static void progress(uint64_t now)
{
	if (wp_log_channel_fd() < 0 || now < progress_next)
		return;
	progress_next = now + 500 * 1000000ull;
	char line[96];
	size_t n = wp_format(line, sizeof(line), "samples=%llu threads=%llu\n",
			     (unsigned long long)wp_stats.samples,
			     (unsigned long long)wp_threads_seen());
	wp_log_channel_write(line, n);
	wp_log_forward();
}

/* stop_word's bits: the loop ends on STOP; JOB wakes it for work handed over (below). */
#define STOP 1u
#define JOB 2u

/* ---- work done on the sampler thread for others ----
 * Profile files are written, and /proc read, only by the agent's own threads, so that every
 * descriptor the agent opens lives in its own table (fds.h): a file opened on a program
 * thread would take the lowest free number in the program's table, where a thread of the
 * program could dup2() over it. One job at a time; callers wait with a deadline. */
static void (*_Atomic job_fn)(void *);
static _Atomic int job_busy; /* the one caller whose job is in the slot */
static void *job_arg;
static _Atomic uint32_t job_done;
static void (*_Atomic last_fn)(void); /* run after the last tick, before the thread ends */
static _Atomic uint32_t last_state;
#define LAST_RUNNING 1u
static void (*first_fn)(void); /* run on the sampler thread before its first tick */
/* 0 until the sampler has its descriptor table; then 2 when private, 1 when shared */
static _Atomic uint32_t private_word;

static void wake_word(_Atomic uint32_t *w)
{
	syscall(SYS_futex, (uint32_t *)w, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1 << 30, NULL, NULL, 0);
}

/* Waits while *w == seen, until `deadline` (CLOCK_MONOTONIC ns). Returns 1 when it changed.
 * Async-signal-safe (atomics and futex only). */
static int wait_word(_Atomic uint32_t *w, uint32_t seen, uint64_t deadline)
{
	while (atomic_load(w) == seen) {
		uint64_t now = wp_now_ns();
		if (now >= deadline)
			return 0;
		uint64_t left = deadline - now;
		struct timespec ts = { (time_t)(left / 1000000000ull), (long)(left % 1000000000ull) };
		syscall(SYS_futex, (uint32_t *)w, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, seen, &ts, NULL, 0);
	}
	return 1;
}

static void run_job(void)
{
	void (*fn)(void *) = atomic_exchange(&job_fn, NULL);
	if (!fn)
		return;
	fn(job_arg);
	atomic_fetch_add(&job_done, 1);
	wake_word(&job_done);
}

/* Sleeps until `deadline` (CLOCK_MONOTONIC ns), an absolute wait on the stop word, so that a
 * stop request ends it at once; a job handed over meanwhile is done, and the sleep goes on. */
static void sleep_until(uint64_t deadline)
{
	struct timespec ts = { (time_t)(deadline / 1000000000ull), (long)(deadline % 1000000000ull) };
	for (;;) {
		uint32_t w = atomic_load(&stop_word);
		if (w & STOP)
			return;
		if (w & JOB) {
			atomic_fetch_and(&stop_word, ~JOB);
			pthread_mutex_lock(&tick_lock);
			run_job();
			pthread_mutex_unlock(&tick_lock);
			continue;
		}
		if (wp_now_ns() >= deadline)
			return;
		syscall(SYS_futex, (uint32_t *)&stop_word, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, 0,
			&ts, NULL, FUTEX_BITSET_MATCH_ANY);
	}
}

static int on_sampler_thread(void)
{
	return syscall(SYS_gettid) == atomic_load(&sampler_tid);
}

int wp_sampler_call(void (*fn)(void *), void *arg, uint64_t timeout_ns)
{
	if (!started || atomic_load(&done_word) || on_sampler_thread())
		return -ESRCH;
	uint64_t deadline = wp_now_ns() + timeout_ns;
	int free_ = 0;
	while (!atomic_compare_exchange_strong(&job_busy, &free_, 1)) {
		free_ = 0;
		if (wp_now_ns() >= deadline)
			return -EBUSY;
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	uint32_t seen = atomic_load(&job_done);
	job_arg = arg;
	atomic_store(&job_fn, fn);
	atomic_fetch_or(&stop_word, JOB);
	wake_word(&stop_word);
	int done = wait_word(&job_done, seen, deadline);
	/* Not taken in time: withdraw it, unless the sampler took it just now. */
	if (!done && atomic_exchange(&job_fn, NULL) == NULL)
		done = wait_word(&job_done, seen, wp_now_ns() + 30000 * 1000000ull);
	atomic_store(&job_busy, 0);
	return done ? 0 : -ETIMEDOUT;
}

/* ---- the end of the program's threads ----
 * glibc ends the process when the last thread it counts ends: that thread calls exit(0).
 * Ours are counted too, so without this the process would never end. When no program
 * thread is left (threads.h says how that is noticed), the sampler starts one more thread
 * that calls exit(0) in the program's stead: atexit handlers and destructors run (ours
 * writes the profile, once, and stops the sampler the ordinary way) on a thread with the
 * program's default stack and the signal mask its last thread most likely had, not on ours
 * (256 KiB, every signal blocked). */

static char exiter_name[16];

/* The mask of the thread that ends the process: the leader's when it left by pthread_exit
 * (threads it started before inherited it), else that of the thread that started us. Signals
 * pending now stay blocked: they came while every thread alive blocked them, or after the
 * last program thread ended, when the process was already ending with status 0. */
static void exiter_mask(sigset_t *mask)
{
	*mask = atomic_load(&leader_mask_pid) == pid ? leader_mask : starter_mask;
	sigset_t pending;
	if (sigpending(&pending) == 0)
		for (int sig = 1; sig < NSIG; sig++)
			if (sigismember(&pending, sig) == 1)
				sigaddset(mask, sig);
}

/* The thread that calls exit(0) for the program. It has to exist from the start: the sampler
 * runs on a descriptor table of its own (fds.h), and once the program's last thread has
 * ended, no thread of the program's table would be left to run its exit handlers (stdio's
 * flush to fd 1, say), nor to keep that table, and so the program's files, open meanwhile.
 * So the sampler starts this one before it leaves the program's table; it sleeps, every
 * signal blocked, until told. Not a program thread: never listed, sampled or counted. */
static pthread_t exit_thread;
static _Atomic pid_t exit_tid;
static _Atomic uint32_t exit_word; /* 1: end the process now */

static void *exit_main(void *arg)
{
	(void)arg;
	atomic_store(&exit_tid, (pid_t)syscall(SYS_gettid));
	prctl(PR_SET_NAME, "wallprof-exit", 0, 0, 0);
	while (!atomic_load(&exit_word)) {
		struct timespec ts = { 10, 0 }; /* every wait has a deadline; this one loops */
		syscall(SYS_futex, (uint32_t *)&exit_word, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, 0, &ts,
			NULL, 0);
	}
	prctl(PR_SET_NAME, exiter_name, 0, 0, 0);
	sigset_t mask;
	exiter_mask(&mask);
	pthread_sigmask(SIG_SETMASK, &mask, NULL);
	exit(0);
}

/* On the sampler thread, before it takes its own descriptor table. */
static void start_exit_thread(void)
{
	pthread_attr_t attr;
	if (pthread_attr_init(&attr) != 0)
		return;
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&exit_thread, &attr, exit_main, NULL) == 0) {
		for (int i = 0; i < 1000 && !atomic_load(&exit_tid); i++) {
			struct timespec ts = { 0, 100000 };
			nanosleep(&ts, NULL); /* at most 100 ms: its tid must be known before listing */
		}
	}
	pthread_attr_destroy(&attr);
}

pid_t wp_sampler_exit_tid(void)
{
	return atomic_load(&exit_tid);
}

/* No program thread is left (sampler thread, tick_lock not held). */
static void end_process(void)
{
	if (!ending && atomic_load(&exit_tid)) {
		ending = 1;
		ssize_t n = wp_threads_read_proc(pid, "comm", exiter_name, sizeof(exiter_name));
		if (n > 0 && exiter_name[n - 1] == '\n')
			exiter_name[n - 1] = 0;
		atomic_store(&exit_word, 1);
		syscall(SYS_futex, (uint32_t *)&exit_word, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, NULL,
			NULL, 0);
		return; /* sampling goes on (the exit handlers are the program's work) */
	}
	/* No exit thread (it could not be started): end it from here, every signal blocked; the
	 * sampler then stayed on the program's descriptor table (run), which this thread keeps
	 * open. wp_sampler_stop knows not to wait for this thread; tick_lock is free, so a flush
	 * or fork from an exit handler goes ahead. */
	exit(0);
}

/* Sleeps until the next tick at `next`, refreshing the thread list between ticks when
 * threads.c asks (the end of the program's threads is noticed soon at any rate). Returns 0
 * at `next`, -1 when asked to stop. */
static int wait_tick(uint64_t next)
{
	for (;;) {
		uint64_t look = wp_threads_next_look();
		sleep_until(look < next ? look : next);
		if (atomic_load(&stop_word) & STOP)
			return -1;
		uint64_t now = wp_now_ns();
		if (now >= next)
			return 0;
		pthread_mutex_lock(&tick_lock);
		wp_threads_refresh(now, start_ns);
		int left = wp_threads_program_left();
		pthread_mutex_unlock(&tick_lock);
		if (!left && !ending)
			end_process();
	}
}

static void *run(void *arg)
{
	sampler_tid = (int)syscall(SYS_gettid);
	mem_tid = sampler_tid;
	/* On the program's descriptor table, so before leaving it. Without it (it could not be
	 * started; WALLPROF_TEST=exit-on-sampler) the sampler would have to end the process
	 * itself, and must stay on the program's table for that. */
	if (!atomic_load(&exit_tid) && !cfg.test_exit_on_sampler)
		start_exit_thread();
	int own_table = !cfg.test_no_unshare && atomic_load(&exit_tid);
	/* Before anything is opened: a descriptor table of our own (fds.h), keeping the stderr
	 * the process started with and the command's channel. */
	int keep[2] = { 2, wp_log_channel_fd() };
	atomic_store(&private_word, wp_fds_go_private(keep, 2, own_table) ? 2 : 1);
	wake_word(&private_word);
	prctl(PR_SET_NAME, "wallprof", 0, 0, 0);
	/* Ticks on time, not within the default 50 us of slack: with slack, the kernel fires our
	 * timer together with a program timer expiring nearby, so ticks line up with the
	 * program's own wake-ups, and a thread woken then (a pipe writer that a reader's read
	 * woke) is caught runnable in the middle of its call and signalled. Measured with
	 * `transfers measure` (a writer blocked in 256 KiB pipe writes, a reader that sleeps
	 * 100 us between reads, wall 1000 Hz): signals landing inside a write fell from 816 to
	 * 461 per 4 s (-44%), ticks and samples unchanged (docs/design.md). */
	prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0);
	wp_sigmask_quiet_this_thread(); /* started with every signal blocked */
	if (first_fn)
		first_fn();
	/* The expensive set-up happens here rather than in the constructor, so the program's
	 * main() is not kept waiting (a shell script starting many short commands would be). */
	static int ready;
	pthread_mutex_lock(&tick_lock);
	if (!ready) {
		wp_fds_hide_new_pipes(1);
		int bad = wp_modules_init() != 0 || wp_unwind_init() != 0;
		wp_fds_hide_new_pipes(0);
		if (bad) {
			pthread_mutex_unlock(&tick_lock);
			wp_log("cannot set up unwinding; profiling is off for this run");
			atomic_store(&done_word, 1);
			return NULL;
		}
		ready = 1;
	}
	wp_modules_watch_start();
	pthread_mutex_unlock(&tick_lock);
	rng ^= wp_now_ns() ^ ((uint64_t)pid << 32);
	wp_threads_init(sampler_tid);
	wp_threads_refresh(wp_now_ns(), start_ns);

	uint64_t next = wp_now_ns();
	while (!(atomic_load(&stop_word) & STOP)) {
		/* Jitter of up to +-1/8 interval, mean zero: the rate asked is the rate delivered,
		 * and ticks do not phase-lock with periodic work in the program. */
		int64_t j = (int64_t)(next_rand() % (interval_ns / 4 + 1)) - (int64_t)(interval_ns / 8);
		next += (uint64_t)((int64_t)interval_ns + j);
		if (wait_tick(next) < 0)
			break;
		uint64_t now = wp_now_ns();
		if (now > next + interval_ns) {
			/* Fell behind (machine busy): resume the cadence from now, no burst. */
			wp_stats.ticks_late++;
			next = now;
		}
		pthread_mutex_lock(&tick_lock);
		wp_stats.ticks++;
		/* New or unloaded libraries: the watcher thread waits for the loader lock and
		 * builds the table; the sampler never takes that lock. */
		wp_modules_adopt();
		wp_threads_refresh(now, start_ns);
		int left = wp_threads_program_left();
		if (cfg.mode == WP_MODE_CPU)
			tick_cpu(now);
		else
			tick_wall(now);
		progress(now);
		if (checkpoint_fn && checkpoint_every_ns && now >= checkpoint_next) {
			checkpoint_next = now + checkpoint_every_ns;
			checkpoint_fn();
		}
		pthread_mutex_unlock(&tick_lock);
		if (!left && !ending)
			end_process();
	}
	run_job(); /* one handed over as the stop came */
	struct timespec ts;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0)
		atomic_store(&cpu_ns_final, wp_ts_ns(&ts));
	void (*last)(void) = atomic_exchange(&last_fn, NULL);
	if (last) {
		atomic_store(&last_state, LAST_RUNNING);
		last();
	}
	atomic_store(&done_word, 1);
	wake_word(&done_word);
	return NULL;
}

/* Asks the loop to end, with `last` to run on the sampler thread after its last tick. */
static void request_stop(void (*last)(void))
{
	atomic_store(&last_state, 0);
	atomic_store(&last_fn, last);
	atomic_fetch_or(&stop_word, STOP);
	wake_word(&stop_word);
}

/* After waiting for the sampler: 1 when it ran `last` (or is running it and finishes within
 * `more_ns`), 0 when it never took it (the caller runs it). Async-signal-safe. */
static int last_done(uint64_t more_ns)
{
	if (atomic_exchange(&last_fn, NULL))
		return 0;
	if (atomic_load(&last_state) == LAST_RUNNING)
		wait_word(&done_word, 0, wp_now_ns() + more_ns);
	return 1;
}

int wp_sampler_stop_async(uint64_t timeout_ns, void (*last)(void))
{
	if (!started || atomic_load(&done_word) || on_sampler_thread())
		return -1;
	request_stop(last);
	wait_word(&done_word, 0, wp_now_ns() + timeout_ns);
	return last_done(5000 * 1000000ull) ? 0 : -1;
}

/* atfork prepare: wait for the sampler to finish its tick. Bounded, because the thread that
 * forks may itself hold the loader lock the sampler is waiting for (fork from a constructor or
 * a dl_iterate_phdr callback); then fork goes ahead and the child starts without the parent's
 * half-done tick. */
static void fork_prepare(void)
{
	if (!started || syscall(SYS_gettid) == atomic_load(&sampler_tid))
		return;
	struct timespec ts = wp_realtime_in_ms(200);
	fork_locked = pthread_mutex_timedlock(&tick_lock, &ts) == 0;
	/* Then the watcher's lock. In this order: the sampler starts the watcher while it holds
	 * tick_lock, so the watcher is now either known or not started. The other way round, a
	 * fork just after the start found the watcher running its first dl_iterate_phdr but not
	 * yet known, and the child inherited the loader's lock held (its own watcher then hung,
	 * and would any dlopen). */
	wp_modules_fork_prepare();
}

static void fork_parent(void)
{
	wp_modules_fork_parent();
	if (fork_locked)
		pthread_mutex_unlock(&tick_lock);
	fork_locked = 0;
}

static void fork_child(void)
{
	/* The sampler does not exist here; whatever it held is ours to reset. */
	pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
	tick_lock = fresh;
	fork_locked = 0;
	wp_modules_fork_child();
}

void wp_sampler_atfork(void)
{
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}

void wp_sampler_forget(void)
{
	started = 0;
	atomic_store(&stop_word, 0);
	atomic_store(&done_word, 0);
	atomic_store(&sampler_tid, 0);
	atomic_store(&cpu_ns_final, 0);
	atomic_store(&job_fn, NULL);
	atomic_store(&job_busy, 0);
	atomic_store(&last_fn, NULL);
	atomic_store(&private_word, 0);
	atomic_store(&exit_tid, 0); /* a fork child has no exit thread: its sampler starts one */
	atomic_store(&exit_word, 0);
	memset(&wp_stats, 0, sizeof(wp_stats));
	memset(backoffs, 0, sizeof(backoffs));
	first_look_tokens = FIRST_LOOK_BURST_NS;
	first_look_refilled = 0;
	wp_stacks_reset();
	wp_threads_reset();
	wp_handshake_reset();
}

void wp_sampler_set_checkpoint(void (*fn)(void), uint64_t every_ns)
{
	checkpoint_fn = fn;
	checkpoint_every_ns = every_ns;
	checkpoint_next = wp_now_ns() + every_ns;
}

int wp_sampler_start(const struct wp_config *c, void (*first)(void))
{
	cfg = *c;
	atomic_store(&stop_word, 0);
	atomic_store(&done_word, 0);
	pid = getpid();
	interval_ns = 1000000000ull / (uint64_t)cfg.hz;
	start_ns = wp_now_ns();
	struct timespec rt;
	clock_gettime(CLOCK_REALTIME, &rt);
	start_unix_ns = wp_ts_ns(&rt);

	first_fn = first;
	atomic_store(&private_word, 0);
	ending = 0;
	/* The sampler must never receive the program's signals (a process-directed SIGINT
	 * landing on our thread would run the program's handler here), so it starts with all
	 * of them blocked. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	starter_mask = old;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 << 10);
	int e = pthread_create(&thread, &attr, run, NULL);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e)
		return -e;
	started = 1;
	/* The command's channel moves into the sampler's own table: wait (briefly, bounded)
	 * until it has one, then close the program's copy. */
	if (wp_log_channel_fd() >= 0 && wait_word(&private_word, 0, wp_now_ns() + 1000000000ull))
		wp_log_channel_handover(atomic_load(&private_word) == 2);
	return 0;
}

void wp_sampler_stop(void (*last)(void))
{
	if (!started || atomic_load(&done_word)) {
		if (started)
			pthread_join(thread, NULL); /* its loop has ended: returns at once */
		wp_modules_watch_stop();
		started = 0;
		if (last)
			last();
		return;
	}
	if (on_sampler_thread()) {
		/* Called from the exit the sampler itself started (end_process's fallback): its
		 * loop is not running and never will again; it is on its own table already. */
		struct timespec ts;
		if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0)
			atomic_store(&cpu_ns_final, wp_ts_ns(&ts));
		atomic_fetch_or(&stop_word, STOP);
		wp_modules_watch_stop();
		started = 0;
		if (last)
			last();
		return;
	}
	request_stop(last);
	struct timespec ts = wp_realtime_in_ms(2000);
	int joined = pthread_timedjoin_np(thread, NULL, &ts) == 0;
	int ran = last_done(30000 * 1000000ull);
	if (!joined && !ran)
		wp_log("the sampler did not stop within 2 s; writing what it has");
	wp_modules_watch_stop();
	started = 0;
	if (!ran && last)
		last();
}

void wp_sampler_leader_leaving(void)
{
	pid_t self = getpid();
	if (syscall(SYS_gettid) != self)
		return;
	pthread_sigmask(SIG_BLOCK, NULL, &leader_mask);
	atomic_store(&leader_mask_pid, self);
	wp_threads_leader_leaving(self);
	/* wake the sampler, which then looks at the leader soon whatever the rate */
	syscall(SYS_futex, (uint32_t *)&stop_word, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, NULL, NULL, 0);
}

uint64_t wp_sampler_cpu_ns(void)
{
	uint64_t v = atomic_load(&cpu_ns_final);
	if (v)
		return v;
	int tid = atomic_load(&sampler_tid);
	int64_t c = tid ? wp_thread_cpu_ns(tid) : -1;
	return c > 0 ? (uint64_t)c : 0;
}

uint64_t wp_sampler_start_ns(void)
{
	return start_ns;
}

uint64_t wp_sampler_start_unix_ns(void)
{
	return start_unix_ns;
}

