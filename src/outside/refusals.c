/* SPDX-License-Identifier: MIT */
/* Why a process cannot be looked at from outside: refusals.h says what is checked. */
#include "refusals.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "agent/perfring.h"
#include "snapshot.h"

static long read_long(const char *path, long dflt)
{
	FILE *f = fopen(path, "re");
	long v = dflt;
	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = dflt;
		fclose(f);
	}
	return v;
}

/* The value after "key:" in /proc/PID/status, as a number; -1 when absent. */
static long status_field(const char *status, const char *key)
{
	const char *p = strstr(status, key);
	return p ? strtol(p + strlen(key), NULL, 10) : -1;
}

static void comm_of(pid_t pid, char *buf, size_t cap)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	FILE *f = fopen(path, "re");
	buf[0] = 0;
	if (f) {
		if (fgets(buf, (int)cap, f))
			buf[strcspn(buf, "\n")] = 0;
		fclose(f);
	}
	if (!buf[0])
		snprintf(buf, cap, "?");
}

static void user_name(long uid, char *buf, size_t cap)
{
	struct passwd *pw = getpwuid((uid_t)uid);
	if (pw)
		snprintf(buf, cap, "%s", pw->pw_name);
	else
		snprintf(buf, cap, "uid %ld", uid);
}

/* ptrace read access refused (reading the syscall file said EACCES or EPERM): which rule. */
static void access_refused(pid_t pid, long uid, int e, char *why, size_t cap)
{
	long scope = read_long("/proc/sys/kernel/yama/ptrace_scope", -1);
	char name[64];
	if (uid >= 0 && (uid_t)uid != geteuid()) {
		user_name(uid, name, sizeof(name));
		snprintf(why, cap, "pid %d belongs to %s: wallprof can attach only to processes of "
			 "its own user (or run it as root)", (int)pid, name);
	} else if (scope >= 1) {
		snprintf(why, cap, "attaching to pid %d refused by Yama: kernel.yama.ptrace_scope is "
			 "%ld (%s); run wallprof as root, or `sysctl kernel.yama.ptrace_scope=0`",
			 (int)pid, scope, scope == 1 ? "only a parent may read its children" :
			 scope == 2 ? "only root may" : "nobody may");
	} else {
		snprintf(why, cap, "reading pid %d's state refused: %s (another user namespace or "
			 "container, or a security module)", (int)pid, strerror(e));
	}
}

/* What may refuse a call that the kernel's own settings allow: the seccomp filter wallprof
 * runs under (a container's profile: Docker's default refuses perf_event_open without
 * CAP_PERFMON and process_vm_readv without CAP_SYS_PTRACE), else a security module. */
static const char *refuser(void)
{
	char status[4096];
	if (wp_snap_read(getpid(), getpid(), "status", status, sizeof(status)) >= 0 &&
	    status_field(status, "Seccomp:") == 2)
		return "the seccomp filter wallprof runs under (Seccomp: 2 in /proc/self/status: a "
		       "container's profile)";
	return "a security module or a container's seccomp profile";
}

void wp_refusal_perf(int e, char *why, size_t cap)
{
	long paranoid = read_long("/proc/sys/kernel/perf_event_paranoid", -100);
	if ((e == EACCES || e == EPERM) && paranoid > 2)
		snprintf(why, cap, "perf_event_open refused: %s (kernel.perf_event_paranoid is %ld; "
			 "above 2 needs CAP_PERFMON: `sysctl kernel.perf_event_paranoid=2`)",
			 strerror(e), paranoid);
	else if (e == EACCES || e == EPERM)
		snprintf(why, cap, "perf_event_open refused: %s, though kernel.perf_event_paranoid "
			 "is %ld, which allows it: refused by %s; allow perf_event_open there (docker "
			 "run --cap-add PERFMON) or run wallprof outside the container",
			 strerror(e), paranoid, refuser());
	else
		snprintf(why, cap, "perf_event_open: %s (this kernel cannot sample user stacks "
			 "with a software clock)", strerror(e));
}

/* One byte of pid's memory by process_vm_readv, at its first mapping: the call itself may be
 * refused (seccomp) where /proc's ptrace checks pass; stacks and unwind tables are read with
 * it. Other failures (the mapping went away) are not refusals. */
static int try_vm_read(pid_t pid, char *why, size_t cap)
{
	char path[64], line[128];
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "re");
	unsigned long lo = 0;
	if (f) {
		if (fgets(line, sizeof(line), f))
			lo = strtoul(line, NULL, 16);
		fclose(f);
	}
	char byte;
	struct iovec l = { &byte, 1 }, r = { (void *)lo, 1 };
	if (!lo || process_vm_readv(pid, &l, 1, &r, 1, 0) == 1 ||
	    (errno != EPERM && errno != EACCES && errno != ENOSYS))
		return 0;
	char whose[32] = "the program's";
	if (pid != getpid())
		snprintf(whose, sizeof(whose), "pid %d's", (int)pid);
	snprintf(why, cap, "reading %s memory (process_vm_readv) refused: %s, by %s; wallprof "
		 "copies stacks with it: allow process_vm_readv there (docker run --cap-add "
		 "SYS_PTRACE) or run wallprof outside the container", whose, strerror(errno),
		 refuser());
	return -1;
}

/* One clock on the leader, opened and closed: the refusal a thread's would meet. */
static int try_perf(pid_t pid, char *why, size_t cap)
{
	struct perf_event_attr a;
	wp_perf_attr(&a, 1000000, 4096, 1);
	a.disabled = 1;
	int fd = (int)syscall(SYS_perf_event_open, &a, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		wp_refusal_perf(errno, why, cap);
		return -1;
	}
	close(fd);
	return 0;
}

int wp_refusal_check(pid_t pid, char *why, size_t cap)
{
	char status[4096];
	if (pid <= 0 || wp_snap_read(pid, pid, "status", status, sizeof(status)) < 0) {
		snprintf(why, cap, "no process has pid %d", (int)pid);
		return -1;
	}
	if (pid == getpid()) {
		snprintf(why, cap, "pid %d is wallprof itself", (int)pid);
		return -1;
	}
	const char *state = strstr(status, "State:");
	if (state && strchr("ZX", state[7])) {
		snprintf(why, cap, "pid %d has ended (a zombie its parent has not waited for)",
			 (int)pid);
		return -1;
	}
	long tracer = status_field(status, "TracerPid:");
	if (tracer > 0) {
		char comm[64];
		comm_of((pid_t)tracer, comm, sizeof(comm));
		snprintf(why, cap, "pid %d is traced by pid %ld (%s): detach it first (wallprof "
			 "looks at a process only while no debugger or tracer holds it)", (int)pid,
			 tracer, comm);
		return -1;
	}
	char buf[256];
	if (wp_snap_read(pid, pid, "syscall", buf, sizeof(buf)) < 0) {
		int e = errno;
		const char *uid = strstr(status, "Uid:");
		access_refused(pid, uid ? strtol(uid + 4, NULL, 10) : -1, e, why, cap);
		return -1;
	}
	if (try_vm_read(pid, why, cap))
		return -1;
	return try_perf(pid, why, cap);
}

int wp_refusal_check_self(char *why, size_t cap)
{
	if (try_vm_read(getpid(), why, cap))
		return -1;
	return try_perf(getpid(), why, cap);
}
