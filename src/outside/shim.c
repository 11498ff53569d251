/* SPDX-License-Identifier: MIT */
/* What the agent's shared pieces (waits.c, wait_fds.c, wait_net.c, wait_child.c, stacks.c,
 * unwind.c) ask of the rest of the agent, answered for the outside sampler: whose /proc and
 * memory to read (the target's), a lock's holder (its stack of the same tick: osample.c),
 * and what only exists inside a process: the mutex a condition waiter published (condwait.c:
 * only the agent's interposed pthread_cond_wait publishes it). */
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "agent/condwait.h"
#include "agent/fds.h"
#include "agent/forkguard.h"
#include "agent/log.h"
#include "agent/task.h"
#include "agent/wait_locks.h"
#include "osample.h"

static pid_t program;

void wp_task_note_program(pid_t pid)
{
	program = pid;
}

pid_t wp_task_program_pid(void)
{
	return program;
}

pid_t wp_task_tid(void)
{
	return gettid();
}

/* Our descriptor table is our own: /proc files may be opened at any time. */
int wp_fds_private(void)
{
	return 1;
}

void wp_locks_owner_read(struct wp_athread *t, struct wp_wait_entry *e, pid_t owner,
			 uint32_t units, uint64_t weight_ns)
{
	wp_osample_owner_read(t, e, owner, units, weight_ns);
}

uint64_t wp_condwait_mutex(pid_t tid, uint64_t futex)
{
	return 0;
}

size_t wp_format(char *buf, size_t cap, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, cap, fmt, ap);
	va_end(ap);
	return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap ? cap - 1 : 0;
}

void wp_log(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("wallprof: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* The agent's fork guard (forkguard.h: its tables' allocations wait out a fork of the
 * program in progress) has nothing to guard here: the sampler is a process of its own, and
 * its one fork (--exec) happens before any table is filled. */
void wp_guard_enter(void)
{
}

void wp_guard_leave(void)
{
}
