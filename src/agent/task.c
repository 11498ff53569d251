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

#define LENDER_STACK (256u << 10) /* glibc puts the lent thread state at its top */
#define TASK_STACK (256u << 10)

/* The task's tid while it lives: the kernel writes it (CLONE_PARENT_SETTID) and clears it
 * as the task ends (CLONE_CHILD_CLEARTID), waking who waits. */
static _Atomic pid_t task_word;
static pid_t program_pid;

static struct {
	void (*fn)(void *);
	void *arg;
	pid_t *tid_slot; /* the lender's tid in its glibc thread state */
	char *stack;     /* the task's */
	_Atomic uint32_t state; /* 0 starting, 1 running, 2 failed */
	_Atomic uint32_t abandoned; /* the starter gave up waiting: the task must not run */
} lend;

#define STARTING 0u
#define RUNNING 1u
#define FAILED 2u

static long futex(void *w, int op, uint32_t val, const struct timespec *ts)
{
	return syscall(SYS_futex, w, op, val, ts, NULL, 0);
}

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

static void set_state(uint32_t s)
{
	atomic_store(&lend.state, s);
	futex(&lend.state, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1 << 30, NULL);
}

/* The task's first code: nothing here may use the thread state until the lender is gone. */
static int task_entry(void *unused)
{
	(void)unused;
	_Atomic pid_t *slot = (_Atomic pid_t *)lend.tid_slot;
	uint64_t deadline = wp_now_ns() + 1000000000ull;
	pid_t v;
	/* The kernel's wake for a cleared tid is a shared futex wake: wait the same way. */
	while ((v = atomic_load(slot)) != 0 && wp_now_ns() < deadline) {
		struct timespec ts = { 0, 1000000 };
		futex(slot, FUTEX_WAIT, (uint32_t)v, &ts);
	}
	if (v != 0 || atomic_load(&lend.abandoned)) {
		set_state(FAILED);
		return 0;
	}
	atomic_store(slot, (pid_t)syscall(SYS_gettid));
	set_state(RUNNING);
	lend.fn(lend.arg);
	return 0; /* glibc's clone() ends the task with the exit system call */
}

static void *lender_main(void *unused)
{
	(void)unused;
	pid_t me = (pid_t)syscall(SYS_gettid);
	lend.tid_slot = find_tid_slot(me);
	void *tp = thread_pointer();
	if (!lend.tid_slot || !tp) {
		set_state(FAILED);
		return NULL; /* an unknown glibc: the caller falls back to a thread */
	}
	/* CLONE_SIGHAND: the program's handler table is the task's, so the sampler sees (and
	 * keeps its own on top of, signals.c) what the program installs with a system call. It
	 * blocks every signal: none is ever run on it. Not CLONE_FS nor CLONE_FILES: a task
	 * that shared them would stop the program entering a user namespace (setns), and its
	 * files would be the program's. */
	int flags = CLONE_VM | CLONE_SIGHAND | CLONE_SETTLS | CLONE_PARENT_SETTID |
		    CLONE_CHILD_CLEARTID;
	if (clone(task_entry, lend.stack + TASK_STACK, flags, NULL, &task_word, tp, &task_word) < 0) {
		set_state(FAILED);
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

int wp_task_start(void (*fn)(void *), void *arg)
{
	lend.fn = fn;
	lend.arg = arg;
	lend.tid_slot = NULL;
	atomic_store(&lend.state, STARTING);
	atomic_store(&lend.abandoned, 0);
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
	pthread_t th;
	int e = pthread_create(&th, &attr, lender_main, NULL);
	pthread_attr_destroy(&attr);
	if (e)
		return -e;
	uint64_t deadline = wp_now_ns() + 1000000000ull;
	uint32_t s;
	while ((s = atomic_load(&lend.state)) == STARTING && wp_now_ns() < deadline) {
		struct timespec ts = { 0, 10000000 };
		futex(&lend.state, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, STARTING, &ts);
	}
	if (s == RUNNING)
		return 0;
	atomic_store(&lend.abandoned, 1);
	return s == FAILED ? -ENOTSUP : -ETIMEDOUT;
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

void wp_task_forget(void)
{
	atomic_store(&task_word, 0);
}
