/* SPDX-License-Identifier: MIT */
/* The sampler's task (task.h): a task outside the program's thread group.
 *
 * A task made with clone(CLONE_VM) shares the program's memory but runs no glibc code safely
 * on its own: it has no thread state (TLS: errno, malloc's per-thread cache, the stack
 * guard), and glibc can make one only for a thread of the caller's group. So the state is
 * lent: a thread made by pthread_create (the lender, with a stack of ours, so glibc never
 * frees or reuses that memory, nor, in a fork child, hands it to a new thread) clones the
 * task with CLONE_SETTLS pointing at its own thread state, and ends with the exit system
 * call, not through glibc, so glibc keeps that state as it was. The task waits until the
 * kernel has cleared the lender's tid (glibc asked for that when it made the thread), then
 * writes its own there: glibc's locks name their owner by it (a recursive lock whose owner
 * field is 0 would let the task in while another thread holds it).
 *
 * The task leads a thread group of its own: threads it makes with pthread_create are its
 * own, not the program's. Its parent is the program; its exit signal is none, so the
 * program's wait() never sees it (only __WALL or __WCLONE would). */
#include "task.h"

#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <asm/prctl.h>
#endif

#include "clock.h"
#include "threadstart.h"

#define LENDER_STACK (256u << 10) /* glibc puts the lent thread state at its top */
#define TASK_STACK (256u << 10)
/* CLONE_SIGHAND: the program's handler table is the task's, so the sampler sees (and keeps its
 * own on top of, signals.c) what the program installs with a system call. It blocks every
 * signal: none is ever run on it. Not CLONE_FS nor CLONE_FILES: a task that shared them would
 * stop the program entering a user namespace (setns), and its files would be the program's. */
#define TASK_FLAGS                                                                          \
	(CLONE_VM | CLONE_SIGHAND | CLONE_SETTLS | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID)

/* The task's tid while it lives: the kernel writes it (CLONE_PARENT_SETTID) and clears it
 * as the task ends (CLONE_CHILD_CLEARTID), waking who waits. */
static _Atomic pid_t task_word;
static pid_t program_pid;

static struct {
	void (*fn)(void *);
	void *arg;
	void *tp;        /* the lent thread state (its thread pointer) */
	pid_t *tid_slot; /* the lender's tid in its glibc thread state */
	pid_t lender_tid;
	char *stack;     /* the task's */
	/* STARTING until the task takes RUNNING, the lender FAILED or the starter, tired of
	 * waiting, ABANDONED (compare-and-swap: the task and the starter never both win) */
	_Atomic uint32_t state;
	_Atomic int lender_gone; /* set by the task: the starter may go on */
} lend;

#define STARTING 0u
#define RUNNING 1u
#define FAILED 2u
#define ABANDONED 3u

static long futex(void *w, int op, uint32_t val, const struct timespec *ts)
{
	return syscall(SYS_futex, w, op, val, ts, NULL, 0);
}

/* Where glibc keeps a thread's tid in its thread state (find_tid_slot), as an offset. */
static _Atomic size_t tid_offset;

/* Where glibc keeps this thread's tid: the first word of its thread state that holds it
 * (0x2d0 on x86-64 from glibc 2.26 on; looked for elsewhere should that change). The task
 * checks the guess: the kernel clears exactly that word as the lender ends. */
static pid_t *find_tid_slot(pid_t me)
{
	char *pd = (char *)pthread_self();
	pid_t *known = (pid_t *)(pd + 0x2d0);
	if (*known == me)
		return known;
	for (size_t off = 0x100; off < 4096; off += sizeof(pid_t))
		if (*(pid_t *)(pd + off) == me)
			return (pid_t *)(pd + off);
	return NULL;
}

/* The address CLONE_SETTLS takes: this thread's thread pointer. */
static void *thread_pointer(void)
{
#if defined(__x86_64__)
	unsigned long fs = 0;
	if (syscall(SYS_arch_prctl, ARCH_GET_FS, &fs) != 0)
		return NULL;
	return (void *)fs;
#else
	return __builtin_thread_pointer();
#endif
}

/* The task: until the lender has ended (the kernel clears its tid, `lender`, at `slot` then,
 * and wakes one waiter of that word), or `deadline`; 1 once it has. The kernel's wake is a
 * shared futex wake: wait the same way. */
static int wait_lender_gone(_Atomic pid_t *slot, pid_t lender, uint64_t deadline)
{
	int gone;
	while (!(gone = atomic_load(slot) != lender) && wp_now_ns() < deadline) {
		struct timespec ts = { 0, 1000000 };
		futex(slot, FUTEX_WAIT, (uint32_t)lender, &ts);
	}
	return gone;
}

/* The starter: the same, but the task may have written its own tid in the slot already, so
 * it also looks at lend.lender_gone, which the task sets first. Whoever the kernel woke
 * wakes the other. */
static int starter_wait_lender_gone(_Atomic pid_t *slot, uint64_t deadline)
{
	for (;;) {
		if (atomic_load(&lend.lender_gone))
			return 1;
		pid_t v = atomic_load(slot);
		if (v == 0) {
			futex(slot, FUTEX_WAKE, 1 << 30, NULL); /* the task, if it waits */
			return 1;
		}
		if (wp_now_ns() >= deadline)
			return 0;
		struct timespec ts = { 0, 1000000 };
		futex(slot, FUTEX_WAIT, (uint32_t)v, &ts);
	}
}

/* The task's first code: nothing here may use the thread state until the lender is gone. */
static int task_entry(void *unused)
{
	(void)unused;
	_Atomic pid_t *slot = (_Atomic pid_t *)lend.tid_slot;
	if (!wait_lender_gone(slot, lend.lender_tid, wp_now_ns() + 1000000000ull))
		return 0; /* the starter gives up too (it waits as long) */
	uint32_t starting = STARTING;
	if (!atomic_compare_exchange_strong(&lend.state, &starting, RUNNING))
		return 0; /* the starter gave up waiting: a thread samples instead */
	atomic_store(&lend.lender_gone, 1);
	atomic_store(slot, (pid_t)syscall(SYS_gettid));
	futex(slot, FUTEX_WAKE, 1 << 30, NULL); /* the starter, if it waits */
	lend.fn(lend.arg);
	return 0; /* glibc's clone() ends the task with the exit system call */
}

static void *lender_main(void *unused)
{
	(void)unused;
	lend.tid_slot = (pid_t *)((char *)pthread_self() + atomic_load(&tid_offset));
	lend.lender_tid = *lend.tid_slot;
	void *tp = thread_pointer();
	if (!tp) {
		atomic_store(&lend.state, FAILED);
		return NULL; /* the caller falls back to a thread */
	}
	lend.tp = tp;
	if (clone(task_entry, lend.stack + TASK_STACK, TASK_FLAGS, NULL, &task_word, tp,
		  &task_word) < 0) {
		atomic_store(&lend.state, FAILED);
		return NULL;
	}
	/* Not through glibc: it would free the thread state the task now uses. */
	for (;;)
		syscall(SYS_exit, 0);
}

static void *map_stack(size_t n)
{
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK,
		       -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

void wp_task_note_program(pid_t pid)
{
	program_pid = pid;
}

/* In a fork child whose parent's task ran and was in no guarded call (forkguard.h) as the
 * process forked: the parent task's thread state and stack are in this process's memory,
 * whole (its allocations and libunwind's state change only inside the guard), and nobody
 * here uses them. A new task takes them over: no lender, no thread the child did not make,
 * one clone (a fork child that execs or exits at once pays little more). */
static int reusable;

static int task_entry_again(void *unused)
{
	(void)unused;
	atomic_store((_Atomic pid_t *)lend.tid_slot, (pid_t)syscall(SYS_gettid));
	lend.fn(lend.arg);
	return 0;
}

static int start_again(void (*fn)(void *), void *arg)
{
	reusable = 0;
	lend.fn = fn;
	lend.arg = arg;
	atomic_store(&lend.state, RUNNING);
	return clone(task_entry_again, lend.stack + TASK_STACK, TASK_FLAGS, NULL, &task_word,
		     lend.tp, &task_word) < 0 ? -errno : 0;
}

/* The starter waits only until the lender is gone (so the program never sees a thread it
 * did not make), not for the task to run: the task confirms itself (lend.state) when it
 * must, and a stop before that finds task_word set and waits for it as for any task. One
 * wake-up (the kernel's, as the lender ends) instead of two. */
int wp_task_start(void (*fn)(void *), void *arg)
{
	if (reusable && start_again(fn, arg) == 0)
		return 0;
	lend.tp = NULL;
	lend.fn = fn;
	lend.arg = arg;
	atomic_store(&lend.state, STARTING);
	atomic_store(&lend.lender_gone, 0);
	/* Where glibc keeps a thread's tid, found in the starter's own thread state: the
	 * lender's is at the same place in its own. */
	pid_t *mine = find_tid_slot((pid_t)syscall(SYS_gettid));
	if (!mine)
		return -ENOTSUP; /* an unknown glibc: the caller falls back to a thread */
	size_t tid_off = (size_t)((char *)mine - (char *)pthread_self());
	/* Both mappings live as long as the process: the task's thread state is at the top of
	 * the lender's. */
	char *lstack = map_stack(LENDER_STACK);
	lend.stack = map_stack(TASK_STACK);
	if (!lstack || !lend.stack)
		return -ENOMEM;
	pthread_attr_t attr;
	if (pthread_attr_init(&attr) != 0)
		return -ENOMEM;
	pthread_attr_setstack(&attr, lstack, LENDER_STACK);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	atomic_store(&tid_offset, tid_off);
	pthread_t th;
	int e = wp_own_thread_create(&th, &attr, lender_main, NULL);
	pthread_attr_destroy(&attr);
	if (e)
		return -e;
	/* glibc wrote the lender's tid there before pthread_create returned */
	_Atomic pid_t *slot = (_Atomic pid_t *)((char *)th + tid_off);
	uint32_t starting = STARTING;
	if (!starter_wait_lender_gone(slot, wp_now_ns() + 1000000000ull) &&
	    atomic_compare_exchange_strong(&lend.state, &starting, ABANDONED))
		return -ETIMEDOUT; /* the task, should it come, will not run */
	return atomic_load(&lend.state) == FAILED ? -ENOTSUP : 0;
}

pid_t wp_task_tid(void)
{
	return atomic_load(&task_word);
}

pid_t wp_task_program_pid(void)
{
	/* before any start (the unit tests), on one of the program's threads */
	return program_pid ? program_pid : getpid();
}

int wp_task_wait_gone(uint64_t deadline)
{
	pid_t v;
	while ((v = atomic_load(&task_word)) != 0) {
		uint64_t now = wp_now_ns();
		if (now >= deadline)
			return 0;
		uint64_t left = deadline - now;
		if (left > 10000000ull)
			left = 10000000ull;
		struct timespec ts = { 0, (long)left };
		futex(&task_word, FUTEX_WAIT, (uint32_t)v, &ts);
	}
	return 1;
}

void wp_task_forget(int fork_whole)
{
	atomic_store(&task_word, 0);
	uint32_t st = atomic_load(&lend.state);
	reusable = fork_whole && st == RUNNING && lend.tp && lend.stack &&
		   lend.tid_slot;
}
