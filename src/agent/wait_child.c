/* SPDX-License-Identifier: MIT */
/* What a wait4 or waitid waits for (wait_fds.h): the child's pid and command.
 *
 * The command is /proc/PID/comm, never /proc/PID/cmdline: cmdline reads the child's memory
 * under its mmap lock, and a process stuck with that lock held (a core dump, a fault on a
 * dead NFS server) hangs its reader, as it hangs ps; comm is a copy in the task. A wait for
 * any child lists the waiting thread's children (/proc/self/task/TID/children: the processes
 * it forked), else the main thread's (most programs fork there); any thread of a process may
 * reap any of the process's children, which no /proc file lists in one place. Each look is
 * cached a second (an exec changes comm), every read is bounded. Sampler thread only,
 * outside suspension windows; not async-signal-safe. */
#include "wait_fds.h"

#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "task.h"
#include "pages.h"

#define CHILD_SLOTS 64
#define CHILD_RECHECK_NS (1000 * 1000000ull)
#define CHILDREN_LISTED 8

struct comm_slot {
	pid_t pid;
	uint64_t checked_ns;
	char comm[20]; /* "" when gone */
};
static struct comm_slot comms[CHILD_SLOTS] WP_BIG;

struct children_slot {
	pid_t tid;
	uint64_t checked_ns;
	int n;
	pid_t pids[CHILDREN_LISTED];
};
static struct children_slot kids[CHILD_SLOTS] WP_BIG;

static const char *comm_of(pid_t pid, struct wp_look *look)
{
	struct comm_slot *s = &comms[(unsigned)pid % CHILD_SLOTS];
	uint64_t now = wp_now_ns();
	if (s->pid == pid && now - s->checked_ns < CHILD_RECHECK_NS)
		return s->comm;
	if (!look->may) {
		look->partial = 1;
		return s->pid == pid ? s->comm : "";
	}
	char path[48];
	wp_format(path, sizeof(path), "/proc/%d/comm", (int)pid);
	long n = wp_wait_read_small(path, s->comm, sizeof(s->comm), look);
	if (n < 0)
		n = 0;
	if (n > 0 && s->comm[n - 1] == '\n')
		n--;
	s->comm[n] = 0;
	s->pid = pid;
	s->checked_ns = now;
	return s->comm;
}

/* The children of thread `tid` ("1234 1240 "), at most CHILDREN_LISTED; their count. */
static int children_of(pid_t tid, pid_t *out, struct wp_look *look)
{
	struct children_slot *s = &kids[(unsigned)tid % CHILD_SLOTS];
	uint64_t now = wp_now_ns();
	int fresh = s->tid == tid && now - s->checked_ns < CHILD_RECHECK_NS;
	if (!fresh && !look->may)
		look->partial = 1;
	if (!fresh && look->may) {
		char path[64], buf[256];
		wp_format(path, sizeof(path), "/proc/%d/task/%d/children", (int)wp_task_program_pid(), (int)tid);
		long n = wp_wait_read_small(path, buf, sizeof(buf), look);
		s->tid = tid;
		s->checked_ns = now;
		s->n = 0;
		for (char *p = buf; n > 0 && *p && s->n < CHILDREN_LISTED;) {
			long v = 0;
			int digits = 0;
			for (; *p >= '0' && *p <= '9'; p++, digits++)
				v = v * 10 + (*p - '0');
			/* the sampler's task is a child too, but not one the program waits for */
			if (digits && v > 0 && (*p == ' ' || *p == 0 || *p == '\n') &&
			    (pid_t)v != wp_task_tid())
				s->pids[s->n++] = (pid_t)v;
			else if (!digits)
				p++;
			while (*p == ' ' || *p == '\n')
				p++;
		}
	}
	if (s->tid != tid)
		return 0;
	memcpy(out, s->pids, sizeof(pid_t) * (size_t)s->n);
	return s->n;
}

static void put_pid(char *buf, uint32_t cap, uint32_t *len, pid_t pid, struct wp_look *look)
{
	char t[64];
	const char *comm = comm_of(pid, look);
	wp_format(t, sizeof(t), *comm ? "pid %d (%s)" : "pid %d", (int)pid, comm);
	wp_wait_puts(buf, cap, len, t);
}

uint32_t wp_wait_child_describe(pid_t tid, long nr, const uint64_t args[6],
				struct wp_look *look, char *buf, uint32_t cap)
{
	/* wait4: pid > 0 that child, -1 any, 0 any of our process group, < -1 that group.
	 * waitid: idtype P_ALL 0, P_PID 1, P_PGID 2 (P_PIDFD 3: a descriptor) and the id. */
	long pid = (long)(int32_t)args[0];
	if (nr == SYS_waitid)
		pid = args[0] == 1 ? (long)(int32_t)args[1] : args[0] == 0 ? -1 :
		      args[0] == 2 ? -(long)(int32_t)args[1] : 0;
	uint32_t len = 0;
	if (pid > 0) {
		put_pid(buf, cap, &len, (pid_t)pid, look);
		return len;
	}
	char t[64];
	if (pid < -1 || (pid == 0 && nr == SYS_waitid && args[0] == 2)) {
		wp_format(t, sizeof(t), "process group %ld", pid < 0 ? -pid : 0L);
		wp_wait_puts(buf, cap, &len, t);
		return len;
	}
	if (nr == SYS_waitid && args[0] != 0)
		return 0; /* a pidfd, or an idtype not known here */
	pid_t kids_now[CHILDREN_LISTED];
	int n = children_of(tid, kids_now, look);
	if (!n && tid != wp_task_program_pid())
		n = children_of(wp_task_program_pid(), kids_now, look);
	wp_wait_puts(buf, cap, &len, n ? "any of " : "any");
	for (int i = 0; i < n; i++) {
		if (i)
			wp_wait_puts(buf, cap, &len, ", ");
		put_pid(buf, cap, &len, kids_now[i], look);
	}
	return len;
}

void wp_wait_child_reset(void)
{
	/* a fork child: pages.h */
	wp_pages_zero(comms, sizeof(comms));
	wp_pages_zero(kids, sizeof(kids));
}
