/* SPDX-License-Identifier: MIT */
/* Samples taken without a signal ("One sample, step by step", 2 in docs/design.md): a thread
 * whose CPU clock has not moved since its last sample is counted where it was (its last
 * stack again); one blocked in the kernel is copied from /proc's SP/PC and unwound; what it
 * waits in (waits.h), whether it waited for a CPU or the disk (cpuwait.h) is noted; the /proc
 * looks are rationed in the sampler's CPU time. A thread found running is left to the
 * handshake (sample.c). Sampler thread only, under its tick lock, outside any window. */
#include "sample_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include "../common/format.h"
#include "clock.h"
#include "cpuwait.h"
#include "fds.h"
#include "log.h"
#include "peek.h"
#include "reconcile.h"
#include "stacks.h"
#include "stats.h"
#include "threads.h"
#include "wait_locks.h"
#include "waits.h"

/* the run's settings (wp_sample_nosignal_begin) */
static const struct wp_config *cfg = &wp_config_none;

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
/* The reads of cpuwait.h (schedstat of running threads, the state of blocked ones) have a
 * ration of the same shape, their own so that they never delay a first look. */
static int64_t state_look_tokens = FIRST_LOOK_BURST_NS;
static uint64_t state_look_refilled;

/* Whether a ration (tokens: the sampler's CPU ns it may still spend, refilled at 1% of the
 * time since `*refilled`) allows a /proc read now. The caller charges what the read cost. */
static int ration_allows(int64_t *tokens, uint64_t *refilled, uint64_t now)
{
	/* WALLPROF_TEST=tight-ration: 0.1% and a 100 µs allowance, so a test sees it bite */
	uint64_t share = cfg->test_tight_ration ? 10 * FIRST_LOOK_SHARE : FIRST_LOOK_SHARE;
	int64_t burst = cfg->test_tight_ration ? 100000 : FIRST_LOOK_BURST_NS;
	if (*refilled && now > *refilled)
		*tokens += (int64_t)((now - *refilled) / share);
	*refilled = now;
	if (*tokens > burst)
		*tokens = burst;
	return *tokens > 0;
}

/* Whether the first looks' ration allows one now. */
static int first_look_allowed(uint64_t now)
{
	return ration_allows(&first_look_tokens, &first_look_refilled, now);
}

/* What /proc/self/task/TID/syscall says of a blocked thread: the call (-1: blocked outside
 * one, e.g. a page fault) and its six arguments, its user SP and PC. */
struct blocked_regs {
	long nr;
	uint64_t args[6];
	uintptr_t sp, pc;
};

/* Reads the user SP and PC of a thread blocked in the kernel, and the call it is blocked in,
 * from /proc/self/task/TID/syscall ("NR a1..a6 SP PC", or "-1 SP PC" when blocked outside a
 * call, or "running"). Returns 1 when blocked, 0 when running, -1 when unreadable, -2 when
 * refused (below). */
static int read_blocked_regs(pid_t tid, struct blocked_regs *r)
{
	char buf[256];
	if (wp_threads_read_proc(tid, "syscall", buf, sizeof(buf)) <= 0)
		return errno == EACCES || errno == EPERM ? -2 : -1;
	if (!strncmp(buf, "running", 7))
		return 0;
	char *p = buf, *end;
	unsigned long long f[9];
	int k = 0;
	r->nr = strtol(p, &end, 10);
	for (p = end; k < 9; k++, p = end) {
		f[k] = strtoull(p, &end, 16);
		if (end == p)
			break;
	}
	if (k < 2)
		return -1;
	r->sp = (uintptr_t)f[k - 2];
	r->pc = (uintptr_t)f[k - 1];
	if (k != 8)
		r->nr = -1; /* no arguments: not in a call */
	for (int i = 0; i < 6; i++)
		r->args[i] = k == 8 ? f[i] : 0;
	return 1;
}

static void note_disk(struct wp_athread *t, struct wp_stack_entry *e,
		      const struct blocked_regs *br, uint32_t units, uint64_t weight_ns,
		      uint64_t whole_ns, uint64_t now);

/* Counts what a sample blocked in a call waits in (waits.h), `units` and `weight_ns` of it. A
 * descriptor's first look at its target reads /proc: rationed with the threads' first looks,
 * and paid from the same ration. */
static void note_wait(struct wp_athread *t, struct wp_stack_entry *e,
		      const struct blocked_regs *br, uint32_t units, uint64_t weight_ns,
		      uint64_t now)
{
	uint64_t looked_ns = 0;
	if (cfg->test_no_waits)
		return; /* WALLPROF_TEST=no-waits: no wait, so no owner read and no holder sample */
	struct wp_wait_entry *w = wp_waits_add(t, e->id, br->nr, br->args, units, weight_ns,
					       first_look_allowed(now), &looked_ns);
	if (!w)
		wp_stats.waits_lost++;
	else if (!wp_sample_holder_only())
		wp_reconcile_note_blocked(t, e, w, NULL);
	first_look_tokens -= (int64_t)looked_ns;
}

/* Wall mode: a sample of `t` found waiting on stack `e`, worth `*units` and `*weight_ns`:
 * what the thread ran meanwhile goes to its running stack (reconcile.h); `in_call` (blocked
 * in a system call, not preempted or in a page fault, whose state note_disk reads), the
 * runqueue time schedstat owes it is given as waiting for a CPU as for a runnable sample
 * (cpuwait.h: woken and queued before it blocked again). The rest is left for its wait. */
static void split_off(struct wp_athread *t, struct wp_stack_entry *e, uint32_t *units,
		      uint64_t *weight_ns, int in_call, uint64_t now)
{
	uint64_t ran_ns, whole_ns = *weight_ns, unran;
	if (cfg->mode != WP_MODE_WALL || cfg->test_no_waits)
		return;
	*units -= wp_reconcile_ran(t, e, *units, whole_ns, &ran_ns);
	*weight_ns -= ran_ns;
	/* a thread that did not run since its previous sample was not queued either (and its
	 * first sample has no interval): no schedstat read, which 1,000 idle threads' first
	 * looks would each have paid */
	if (!in_call || t->cw_ran_ns <= 0 || t->samples <= wp_sample_units(whole_ns))
		return;
	int may = wp_fds_private() && ration_allows(&state_look_tokens, &state_look_refilled, now);
	state_look_tokens -= (int64_t)wp_cpuwait_runnable(t, e->id, wp_sample_units(whole_ns),
							  whole_ns, 0, may, now, &unran);
	*weight_ns = unran < *weight_ns ? unran : *weight_ns;
}

/* The syscall file is read with ptrace's rules, and the sampler's task is outside the
 * program's thread group: a program that is not dumpable (PR_SET_DUMPABLE 0: sandboxes,
 * agents that hold keys) or Yama's ptrace_scope 1 refuses it to the task (the thread sampler,
 * inside the group, was always allowed). Every blocked thread was then a missed sample.
 * Refused, a blocked thread is signalled like a running one instead (the interposers retry
 * the call our signal interrupts, as under WALLPROF_TEST=signal-all), and the file is not
 * tried again for a second. */
static uint64_t refused_until_ns;

static int syscall_file_refused(uint64_t now)
{
	return refused_until_ns > now;
}

static void note_refused(uint64_t now)
{
	if (!refused_until_ns)
		wp_log("the program's /proc/PID/task/TID/syscall files are refused to the sampler "
		       "(the process is not dumpable, or Yama's ptrace_scope): its blocked threads "
		       "are signalled to be sampled, and their waits are not named");
	refused_until_ns = now + 1000000000ull;
	wp_stats.syscall_refused++;
}

/* A thread blocked in the kernel is sampled without any signal: a signal would interrupt its
 * call (EINTR for sleeps, polls and timed waits even with SA_RESTART). Its stack cannot change
 * while it stays blocked, which its CPU clock confirms (unchanged from before the /proc read
 * until after the copy). Returns 1 when sampled (or deliberately skipped), 0 when the thread
 * is running and may be signalled. */
int wp_sample_blocked(struct wp_athread *t, struct wp_cpu_reading before, uint64_t weight_ns,
			  uint64_t now)
{
	if (syscall_file_refused(now))
		return 0;
	for (int attempt = 0; attempt < 3; attempt++) {
		struct blocked_regs br;
		int b = read_blocked_regs(t->tid, &br);
		uintptr_t sp = br.sp, pc = br.pc;
		if (b == 0)
			return 0;
		if (b == -2) {
			note_refused(now);
			return 0;
		}
		if (b < 0) {
			wp_sample_miss(WP_MISS_ERROR);
			return 1;
		}
		if (sp == 0) {
			/* "-1 0x0 0x0": no user context, the thread has ended (the leader stays a
			 * zombie until the process ends; threads.c stops listing it soon) */
			wp_sample_miss(WP_MISS_EXITED);
			return 1;
		}
		static greg_t gregs[NGREG];
		memset(gregs, 0, sizeof(gregs));
		gregs[REG_RSP] = (greg_t)sp;
		gregs[REG_RIP] = (greg_t)pc;
		size_t want = wp_sample_copy_len(t, sp);
		/* no batch is in flight here: its first buffer is free */
		uint8_t *buf = wp_sample_spare_buffer();
		ssize_t got = buf ? wp_peek_some(sp, buf, want) : -1;
		struct wp_cpu_reading after;
		if (wp_thread_cpu_read(t->tid, &after) < 0) {
			wp_sample_miss(WP_MISS_EXITED);
			wp_threads_gone(t);
			return 1;
		}
		if (wp_threads_is_excluded(t->tid))
			return 1; /* it began the agent's stop meanwhile: its wait is ours (threads.h) */
		/* The look found it off a CPU: the same clock before and after it (and, from the
		 * task, the same count of times put on a CPU) means it was not put on one
		 * meanwhile, whether or not it was on one at the first reading. */
		if (got > 0 && after.ns == before.ns && after.runs == before.runs) {
			/* Registers other than SP and PC are unknown: frame-pointer code loses the
			 * frames above its first rbp-based frame (recorded, flagged truncated). */
			if (wp_sample_holder_only()) {
				wp_sample_record(t, gregs, buf, (size_t)got, WP_STACK_WAITING,
					    weight_ns, now, &after);
				return 1;
			}
			wp_stats.unsignalled++;
			t->last_cpu = after; /* off a CPU: what later readings compare with */
			struct wp_stack_entry *e = wp_sample_record(t, gregs, buf, (size_t)got,
							       WP_STACK_WAITING, weight_ns, now,
							       &after);
			if (!e)
				return 1;
			uint32_t units = wp_sample_units(weight_ns);
			uint64_t waited_ns = weight_ns;
			split_off(t, e, &units, &waited_ns, br.nr >= 0, now);
			if (br.nr >= 0)
				note_wait(t, e, &br, units, waited_ns, now);
			note_disk(t, e, &br, units, waited_ns, weight_ns, now);
			return 1;
		}
		before = after; /* it woke up meanwhile: look again */
	}
	/* Busy waking and sleeping: not worth a signal that could interrupt its next call. */
	wp_sample_miss(WP_MISS_MOVING);
	return 1;
}

/* Whether a thread is on a CPU right now: its CPU clock moved since `before`, read a moment
 * ago (a system call's worth of time; a blocked or preempted thread's clock stands still).
 * Such a thread is signalled straight away, sparing a /proc look at its syscall file (an open
 * and a read, 10-40 us in the kernel) per running thread; the others are looked up in /proc
 * first. From the task, where a running thread's clock (schedstat) moves only at the
 * scheduler's ticks, its state letter says it instead: R, on a CPU or waiting for one (both
 * are signalled), read through a kept descriptor (cpuclock.c), no open. */
int wp_sample_on_cpu_now(struct wp_athread *t, const struct wp_cpu_reading *before)
{
	if (wp_cpuclock_lags())
		return wp_thread_runnable(t->tid) == 1;
	return wp_thread_cpu_ns(t->tid) > before->ns;
}

/* Wall mode: a thread whose CPU clock has not moved since its last sample is exactly where
 * it was: count that stack again, as waiting, without signalling it. Returns 1 if done. */
int wp_sample_unmoved(struct wp_athread *t, uint64_t weight_ns, uint64_t now)
{
	struct wp_cpu_reading now_cpu;
	if (wp_thread_cpu_read(t->tid, &now_cpu) < 0) {
		wp_sample_miss(WP_MISS_EXITED);
		wp_threads_gone(t);
		return 1;
	}
	struct wp_stack_entry *last = t->last_stack;
	int unmoved = last && wp_cpu_unmoved(&t->last_cpu, &now_cpu);
	if (!unmoved) {
		/* it ran; it may be on a CPU now, where schedstat's sum stands still until a tick:
		 * marked, so that only a reading of a known state (wp_sample_blocked's, the
		 * handler's) is what later ones compare with */
		now_cpu.maybe_on_cpu = 1;
		t->last_cpu = now_cpu;
		return 0;
	}
	const struct wp_cpu_reading *cpu = &t->last_cpu; /* the same clock, of a known state */
	uint64_t rel_us = wp_sample_rel_us(now);
	if (!(last->flags & WP_STACK_WAITING))
		t->last_wait = NULL; /* preempted, not blocked in a call */
	if ((last->flags & WP_STACK_WAITING) && t->cw_runnable) {
		/* preempted at its last look too: still waiting for a CPU */
		wp_stacks_again(t, last, wp_sample_units(weight_ns), weight_ns, rel_us);
		wp_locks_sampled(t, last->id, cpu); /* exact: it has not run since */
		wp_sample_note_runnable(t, last, weight_ns, 1, now);
	} else if (last->flags & WP_STACK_WAITING) {
		wp_stacks_again(t, last, wp_sample_units(weight_ns), weight_ns, rel_us);
		wp_locks_sampled(t, last->id, cpu); /* exact: it has not run since */
		/* still blocked in the same call: the same wait (its owner read again) */
		uint64_t looked_ns = 0;
		wp_waits_again(t, wp_sample_units(weight_ns), weight_ns, first_look_allowed(now),
			       &looked_ns);
		first_look_tokens -= (int64_t)looked_ns;
		if (t->last_wait || t->cw_last_disk)
			wp_reconcile_note_blocked(t, last, t->last_wait, t->cw_last_disk);
		wp_cpuwait_again(t, wp_sample_units(weight_ns), weight_ns);
		if (t->last_wait && !t->cw_last_disk)
			wp_cpuwait_waited_again(t, wp_sample_units(weight_ns), weight_ns);
	} else {
		struct wp_stack_entry *e = wp_stacks_add(t, last->pcs, last->nframes,
							 last->flags | WP_STACK_WAITING,
							 wp_sample_units(weight_ns), weight_ns, rel_us);
		if (!e) {
			wp_sample_miss(WP_MISS_MEMORY);
			return 1;
		}
		wp_locks_sampled(t, e->id, cpu);
		/* preempted, not blocked in a call: it waited for a CPU since its last sample */
		wp_sample_note_runnable(t, e, weight_ns, 1, now);
	}
	wp_stats.samples++;
	wp_stats.reused++;
	return 1;
}

/* A sample of `t` in state R on stack `e`: cpuwait.h counts the share that waited for a CPU
 * (`unmoved`: all of it). Outside any window. */
uint64_t wp_sample_note_runnable(struct wp_athread *t, struct wp_stack_entry *e,
				 uint64_t weight_ns, int unmoved, uint64_t now)
{
	if (cfg->mode != WP_MODE_WALL || cfg->test_no_waits)
		return 0; /* a cpu profile's samples are CPU time: none of it waited (no-waits: no
			   * schedstat read) */
	/* without a descriptor table of its own (fds.h's fallback), a read would briefly take
	 * the lowest free number in the program's table: not for these extras */
	int may = unmoved || (wp_fds_private() &&
			      ration_allows(&state_look_tokens, &state_look_refilled, now));
	uint64_t unran;
	state_look_tokens -= (int64_t)wp_cpuwait_runnable(t, e->id, wp_sample_units(weight_ns),
							  weight_ns, unmoved, may, now, &unran);
	t->cw_runnable = 1;
	return unran;
}

void wp_sample_note_returned(struct wp_athread *t, struct wp_stack_entry *e, const greg_t *g,
			     uint64_t weight_ns, uint64_t unran_ns, uint64_t now)
{
	long nr;
	uint64_t args[6], looked_ns = 0, ran_ns;
	uint32_t units = wp_sample_units(weight_ns);
	if (cfg->mode != WP_MODE_WALL || cfg->test_no_waits)
		return;
	/* what the sample counts running: what it ran, and what it neither ran nor waited for
	 * a CPU (all of it when the thread ran more than the sample: nothing waited) */
	uint64_t ran = t->cw_ran_ns <= 0 ? 0 : (uint64_t)t->cw_ran_ns;
	uint64_t running = ran >= weight_ns ? weight_ns : ran + unran_ns;
	int back = unran_ns && wp_reconcile_call(g, 0, &nr, args);
	/* found blocked in a call at its previous sample, it left that call meanwhile: its
	 * blocked time was there most likely (a sleep before a write that did not block) */
	if (unran_ns && ((t->cw_since_block == 1 && (t->cw_block_wait || t->cw_block_disk)) ||
			 !back))
		running -= wp_reconcile_unseen(t, e, units, weight_ns, unran_ns);
	else if (back)
		running -= wp_reconcile_blocked(t, e, nr, args, units, weight_ns, unran_ns,
						first_look_allowed(now), &looked_ns);
	first_look_tokens -= (int64_t)looked_ns;
	if (back) {
		/* just back from a call it blocked in: woken, queued, and signalled as it got a
		 * CPU; what it ran meanwhile it ran before it blocked, where it runs */
		wp_reconcile_ran(t, e, units, weight_ns, &ran_ns);
		running -= ran_ns < running ? ran_ns : running;
	} else {
		t->cw_run_stack = e; /* where it runs */
	}
	wp_reconcile_cap(t, e, units, weight_ns, running);
}

void wp_sample_note_interrupted(struct wp_athread *t, struct wp_stack_entry *e, const greg_t *g,
				uint64_t weight_ns, uint64_t now)
{
	struct blocked_regs br;
	uint32_t units = wp_sample_units(weight_ns);
	if (cfg->mode != WP_MODE_WALL)
		return; /* a cpu profile's samples are CPU time: no wait */
	split_off(t, e, &units, &weight_ns, 1, now);
	if (wp_reconcile_call(g, 1, &br.nr, br.args))
		note_wait(t, e, &br, units, weight_ns, now);
}

/* A sample of `t` blocked in the kernel (call br->nr, -1: none) on stack `e`: when it may be
 * in state D, its state is read (rationed); in state D, the sample is a disk wait
 * (cpuwait.h), and leaves the call's own wait (waits.h) if it had one. Outside any call and
 * in state R, it was preempted in its own code (/proc's syscall file says "-1" for a
 * runnable thread not on a CPU): a sample in state R (wp_sample_note_runnable). Outside any window. */
static void note_disk(struct wp_athread *t, struct wp_stack_entry *e,
		      const struct blocked_regs *br, uint32_t units, uint64_t weight_ns,
		      uint64_t whole_ns, uint64_t now)
{
	struct wp_wait_entry *w = br->nr >= 0 ? t->last_wait : NULL;
	if (cfg->mode != WP_MODE_WALL || cfg->test_no_waits)
		return; /* a cpu profile takes no blocked sample (tick_cpu); no-waits: no stat
			 * read */
	if (!wp_fds_private() || /* see wp_sample_note_runnable */
	    !wp_cpuwait_may_be_disk(br->nr, w ? w->target : NULL, w ? w->target_len : 0) ||
	    !ration_allows(&state_look_tokens, &state_look_refilled, now))
		return;
	uint64_t spent;
	int state = wp_cpuwait_state(t->tid, &spent);
	state_look_tokens -= (int64_t)spent;
	if (state == 'R' && br->nr < 0) {
		/* the whole sample: it gives up to what the thread did not run */
		wp_sample_note_runnable(t, e, whole_ns, 0, now);
		return;
	}
	if (state != 'D')
		return;
	if (w) {
		/* counted as a wait in the call a moment ago: it is this disk wait instead */
		w->count -= w->count < units ? w->count : units;
		w->weight_ns -= w->weight_ns < weight_ns ? w->weight_ns : weight_ns;
		t->last_wait = NULL;
	}
	wp_cpuwait_disk(t, e->id, br->nr, br->nr >= 0 ? br->args[0] : 0, w ? w->target : NULL,
			w ? w->target_len : 0, units, weight_ns);
	wp_reconcile_note_blocked(t, e, NULL, t->cw_last_disk);
}

/* The /proc look at a thread not on a CPU, rationed when it is the thread's first. Returns 1
 * when done with the thread (sampled, or missed), 0 when it is running after all. */
int wp_sample_look_blocked(struct wp_athread *t, uint64_t weight_ns, uint64_t now)
{
	if (t->last_stack)
		return wp_sample_blocked(t, t->last_cpu, weight_ns, now);
	int done = wp_sample_blocked_rationed(t, t->last_cpu, weight_ns, now);
	if (done < 0) {
		wp_sample_miss(WP_MISS_RATIONED);
		return 1;
	}
	return done;
}

int wp_sample_blocked_rationed(struct wp_athread *t, struct wp_cpu_reading before,
			       uint64_t weight_ns, uint64_t now)
{
	if (!first_look_allowed(now))
		return -1;
	uint64_t c0 = wp_self_cpu_ns();
	int done = wp_sample_blocked(t, before, weight_ns, now);
	first_look_tokens -= (int64_t)(wp_self_cpu_ns() - c0);
	return done;
}

void wp_sample_nosignal_begin(const struct wp_config *c)
{
	cfg = c;
}

void wp_sample_nosignal_forget(void)
{
	first_look_tokens = FIRST_LOOK_BURST_NS;
	first_look_refilled = 0;
	refused_until_ns = 0;
	state_look_tokens = FIRST_LOOK_BURST_NS;
	state_look_refilled = 0;
}
