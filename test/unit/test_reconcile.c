/* SPDX-License-Identifier: MIT */
/* Samples squared with their thread's clocks (src/agent/reconcile.h): the call a thread has
 * just left, read from the code before its pc and its registers; and the moves between its
 * stacks and waits, whole samples carried as their shares add up. */
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "agent/cpuwait.h"
#include "agent/fds.h"
#include "agent/peek.h"
#include "agent/reconcile.h"
#include "agent/stacks.h"
#include "agent/taskalloc.h"
#include "agent/threads.h"
#include "agent/waits.h"
#include "common/format.h"

#include "check.h"

/* glibc 2.36's epoll_wait: `mov $0xe8, %eax; syscall`, then `cmp $-4096, %rax` */
static const uint8_t epoll_code[] = { 0x41, 0x89, 0xb8, 0xe8, 0x00, 0x00, 0x00, 0x0f, 0x05,
				      0x48, 0x3d, 0x00, 0xf0 };
/* the same with `mov $imm32, %rax` (48 c7 c0): read(2) */
static const uint8_t read_code[] = { 0x48, 0xc7, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x0f, 0x05,
				     0xc3, 0x90 };
/* a futex wait: named where wait_locks.h orders its holder read, not here */
static const uint8_t futex_code[] = { 0x90, 0x90, 0xb8, 0xca, 0x00, 0x00, 0x00, 0x0f, 0x05,
				      0xc3, 0x90 };
/* syscall(2)'s generic wrapper: the number came in a register */
static const uint8_t generic_code[] = { 0x90, 0x90, 0x90, 0x90, 0x48, 0x89, 0xf8, 0x0f, 0x05,
					0xc3, 0x90 };

static void regs_at(greg_t g[NGREG], const uint8_t *pc)
{
	memset(g, 0, sizeof(greg_t) * NGREG);
	g[REG_RIP] = (greg_t)(uintptr_t)pc;
	g[REG_RDI] = 5;
	g[REG_RSI] = 0x1000;
	g[REG_RDX] = 1;
	g[REG_R10] = -1;
	g[REG_R8] = 7;
	g[REG_R9] = 8;
}

static void test_calls(void)
{
	greg_t g[NGREG];
	long nr = -1;
	uint64_t args[6];
	regs_at(g, epoll_code + 9);
	g[REG_RAX] = 1; /* what it returned */
	CHECK(wp_reconcile_call(g, 0, &nr, args), "back from epoll_wait");
	CHECK_INT(nr, SYS_epoll_wait);
	CHECK_EQ_U(args[0], 5);
	CHECK_EQ_U(args[2], 1);
	CHECK_EQ_U(args[3], (uint64_t)-1);
	CHECK_EQ_U(args[5], 8);
	regs_at(g, read_code + 9);
	CHECK(wp_reconcile_call(g, 0, &nr, args) && nr == SYS_read, "back from read (mov to rax)");
	regs_at(g, futex_code + 9);
	CHECK(!wp_reconcile_call(g, 0, &nr, args), "a futex is not named here");
	regs_at(g, generic_code + 9);
	CHECK(!wp_reconcile_call(g, 0, &nr, args), "no number before the syscall: not named");
	regs_at(g, epoll_code + 4);
	CHECK(!wp_reconcile_call(g, 0, &nr, args), "not after a syscall instruction");
	/* rewound by the kernel to restart: pc on the syscall, the number back in rax */
	regs_at(g, epoll_code + 7);
	g[REG_RAX] = SYS_epoll_wait;
	CHECK(!wp_reconcile_call(g, 0, &nr, args), "on a syscall, not interrupted: nothing");
	CHECK(wp_reconcile_call(g, 1, &nr, args) && nr == SYS_epoll_wait,
	      "interrupted and rewound: the call from rax");
	/* unreadable code (the first page): nothing, no fault */
	regs_at(g, (const uint8_t *)16);
	CHECK(!wp_reconcile_call(g, 0, &nr, args), "unreadable code");
}

static void test_moves(void)
{
	struct wp_athread t;
	memset(&t, 0, sizeof(t));
	t.tid = (pid_t)syscall(SYS_gettid);
	const uint64_t run_pcs[1] = { 0x1000 }, wait_pcs[1] = { 0x2000 };
	const uint64_t no_args[6] = { 0 };
	struct wp_stack_entry *run = wp_stacks_add(&t, run_pcs, 1, 0, 1, 1000000, 0);
	struct wp_stack_entry *blocked = wp_stacks_add(&t, wait_pcs, 1, WP_STACK_WAITING, 1,
						       1000000, 1000);
	uint64_t looked;
	struct wp_wait_entry *w = wp_waits_add(&t, blocked->id, SYS_nanosleep, no_args, 1,
					       1000000, 0, &looked);
	CHECK(run && blocked && w, "entries");
	if (!run || !blocked || !w)
		return;
	wp_reconcile_note_blocked(&t, blocked, w, NULL);
	/* a running sample that did not run 0.4 of its 1 ms: to the latest wait. Whole samples
	 * move as the shares add up: 0.4, 0.8, then 1.2 (one moves, 0.2 carried) */
	wp_reconcile_unseen(&t, run, 1, 1000000, 400000);
	CHECK(run->weight_ns == 600000 && blocked->weight_ns == 1400000 &&
	      w->weight_ns == 1400000, "unseen: 0.4 ms moved, %llu %llu %llu",
	      (unsigned long long)run->weight_ns, (unsigned long long)blocked->weight_ns,
	      (unsigned long long)w->weight_ns);
	CHECK_EQ_U(run->count, 1);
	wp_reconcile_unseen(&t, run, 1, 1000000, 400000);
	CHECK_EQ_U(run->count, 1);
	wp_stacks_again(&t, run, 1, 1000000, 2000);
	wp_reconcile_unseen(&t, run, 1, 1000000, 400000);
	CHECK_EQ_U(run->count, 1); /* 2 - 1 */
	CHECK_EQ_U(blocked->count, 2);
	CHECK_EQ_U(w->count, 2);
	CHECK_EQ_U(t.running + t.waiting, 3); /* three samples, one moved */
	CHECK_EQ_U(t.waiting, 2);
	/* a sample found waiting whose thread ran 0.3 ms of it: to its running stack */
	uint64_t ran;
	t.cw_cpu_ns = 10000000000; /* its CPU clock: 10 s, all of it still to count */
	t.cw_ran_ns = 300000;
	t.cw_run_stack = run;
	uint64_t before = run->weight_ns;
	uint32_t whole = wp_reconcile_ran(&t, blocked, 1, 1000000, &ran);
	CHECK_EQ_U(ran, 300000);
	CHECK_EQ_U(whole, 0);
	CHECK_EQ_U(run->weight_ns, before + 300000);
	/* more than the sample: capped at its weight */
	t.cw_ran_ns = 5000000;
	wp_reconcile_ran(&t, blocked, 1, 1000000, &ran);
	CHECK_EQ_U(ran, 1000000);
	/* the running stack itself: nothing to move */
	wp_reconcile_ran(&t, run, 1, 1000000, &ran);
	CHECK_EQ_U(ran, 0);
	/* no more running than its CPU clock: 0.1 ms left of it, a sample counting 0.5 running
	 * keeps 0.1 and gives 0.4 to the wait it was last found in */
	t.cw_run_given_ns = t.cw_cpu_ns - 100000;
	before = run->weight_ns;
	uint64_t wait_before = w->weight_ns;
	wp_reconcile_cap(&t, run, 1, 1000000, 500000);
	CHECK_EQ_U(run->weight_ns, before - 400000);
	CHECK_EQ_U(w->weight_ns, wait_before + 400000);
	CHECK_EQ_U(t.cw_run_given_ns, (uint64_t)t.cw_cpu_ns);
	/* nothing left: a sample found waiting gives none of it to running */
	t.cw_ran_ns = 300000;
	wp_reconcile_ran(&t, blocked, 1, 1000000, &ran);
	CHECK_EQ_U(ran, 0);
	/* never found blocked: unseen time stays running */
	struct wp_athread fresh;
	memset(&fresh, 0, sizeof(fresh));
	before = run->weight_ns;
	wp_reconcile_unseen(&fresh, run, 1, 1000000, 400000);
	CHECK_EQ_U(run->weight_ns, before);
	/* last found in the disk (state D): the disk wait takes it */
	struct wp_athread d;
	memset(&d, 0, sizeof(d));
	d.tid = t.tid + 1; /* stacks are keyed by thread */
	struct wp_stack_entry *drun = wp_stacks_add(&d, run_pcs, 1, 0, 1, 1000000, 0);
	struct wp_stack_entry *dwait = wp_stacks_add(&d, wait_pcs, 1, WP_STACK_WAITING, 1,
						     1000000, 1000);
	wp_cpuwait_disk(&d, dwait->id, -1, 0, NULL, 0, 1, 1000000);
	wp_reconcile_note_blocked(&d, dwait, NULL, d.cw_last_disk);
	wp_reconcile_unseen(&d, drun, 1, 1000000, 700000);
	CHECK(d.cw_last_disk && d.cw_last_disk->weight_ns == 1700000 && dwait->weight_ns == 1700000,
	      "the disk wait and its stack took 0.7 ms");
	CHECK_EQ_U(drun->weight_ns, 300000);
	wp_task_free(d.tl);
	wp_cpuwait_reset(0);
	/* back from a named call: a waiting copy of the stack with that call's wait */
	t.cw_moved_fx = 0;
	uint64_t sleep_args[6] = { 0 };
	wp_reconcile_blocked(&t, run, SYS_nanosleep, sleep_args, 1, 1000000, 600000, 0, &looked);
	struct wp_stack_entry *copy = wp_stacks_intern(&t, run_pcs, 1, WP_STACK_WAITING);
	CHECK(copy && copy->weight_ns == 600000 && copy->count == 0,
	      "the waiting copy has 0.6 ms, no whole sample yet");
	CHECK(t.last_wait == NULL, "running now: no last wait");
	int found = 0;
	for (struct wp_wait_entry *e = wp_waits_all(); e; e = e->hh.next)
		if (copy && e->key.stack_id == copy->id && e->key.nr == SYS_nanosleep &&
		    e->weight_ns == 600000)
			found = 1;
	CHECK(found, "the copy's nanosleep wait has 0.6 ms");
	wp_stacks_reset(0);
	wp_waits_reset(0);
	wp_task_free(t.tl); /* its timeline (threads.c frees it with the thread) */
}

int main(void)
{
	int keep[2] = { 1, 2 };
	wp_fds_go_private(keep, 2, 1);
	wp_peek_set_tid((pid_t)syscall(SYS_gettid));
	test_calls();
	test_moves();
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
