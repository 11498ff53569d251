/* SPDX-License-Identifier: MIT */
/* Why a process cannot be looked at from outside: refusals.h says what is checked. */
#include "refusals.h"

#include <errno.h>
#include <grp.h>
#include <linux/perf_event.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

/* ---- The explanations: decided from the facts alone (test/unit/test_refusals.c). ---- */

/* The syscall file refused (ptrace read access): the kernel's checks in its own order
 * (__ptrace_may_access: the user, then dumpability; then the security modules, Yama first),
 * so the line names the first rule that refused, the one to lift first. */
static void explain_proc(const struct wp_refusal_facts *f, char *why, size_t cap)
{
	int pid = (int)f->pid;
	long scope = f->ptrace_scope;
	if (f->err == ENOENT || f->err == ESRCH)
		snprintf(why, cap, "pid %d has ended", pid);
	else if (!f->root && f->other_uid >= 0)
		snprintf(why, cap, "pid %d belongs to %s: wallprof can attach only to processes of "
			 "its own user (or run it as root)", pid, f->owner);
	else if (!f->root && f->other_gid >= 0)
		snprintf(why, cap, "pid %d runs with group %s's rights (set-group-ID): wallprof can "
			 "attach only to processes of its own user and groups (or run it as root)",
			 pid, f->group);
	else if (!f->root && !f->dumpable)
		snprintf(why, cap, "pid %d is not dumpable (it called prctl(PR_SET_DUMPABLE, 0), or "
			 "runs a set-user-ID or privileged program): only root may read its state; "
			 "run wallprof as root", pid);
	else if (scope == 3)
		snprintf(why, cap, "attaching to pid %d refused by Yama: kernel.yama.ptrace_scope is "
			 "3 (no process may read another's, not even root, until the machine restarts "
			 "with a lower value); start the program under wallprof instead (`wallprof -- "
			 "PROGRAM`)", pid);
	else if (scope == 2 && !f->root)
		snprintf(why, cap, "attaching to pid %d refused by Yama: kernel.yama.ptrace_scope is "
			 "2 (only root may read another process); run wallprof as root, or `sysctl "
			 "kernel.yama.ptrace_scope=0`", pid);
	else if (scope == 1 && !f->root && !f->descendant)
		snprintf(why, cap, "attaching to pid %d refused by Yama: kernel.yama.ptrace_scope is "
			 "1 (only a process's ancestors may read it, and wallprof did not start pid "
			 "%d); run wallprof as root, start the program under wallprof (`wallprof -- "
			 "PROGRAM`), or `sysctl kernel.yama.ptrace_scope=0`", pid, pid);
	else if (f->ns_pid > 0)
		snprintf(why, cap, "reading pid %d's state refused: %s, at a container boundary (it "
			 "is pid %ld in its own pid namespace); run wallprof inside that container "
			 "(docker exec, or nsenter -t %d -a) with CAP_SYS_PTRACE", pid,
			 strerror(f->err), f->ns_pid, pid);
	else
		snprintf(why, cap, "reading pid %d's state refused: %s (another user namespace or "
			 "container, or a security module)", pid, strerror(f->err));
}

/* What may refuse a call that the kernel's own settings allow: the seccomp filter wallprof
 * runs under (a container's profile: Docker's default refuses perf_event_open without
 * CAP_PERFMON and process_vm_readv without CAP_SYS_PTRACE), else a security module. */
static const char *refuser(const struct wp_refusal_facts *f)
{
	return f->seccomp ? "the seccomp filter wallprof runs under (Seccomp: 2 in "
			    "/proc/self/status: a container's profile)"
			  : "a security module or a container's seccomp profile";
}

static void explain_vm(const struct wp_refusal_facts *f, char *why, size_t cap)
{
	char whose[32] = "the program's";
	if (!f->self)
		snprintf(whose, sizeof(whose), "pid %d's", (int)f->pid);
	snprintf(why, cap, "reading %s memory (process_vm_readv) refused: %s, by %s; wallprof "
		 "copies stacks with it: allow process_vm_readv there (docker run --cap-add "
		 "SYS_PTRACE) or run wallprof outside the container", whose, strerror(f->err),
		 refuser(f));
}

static void explain_perf(const struct wp_refusal_facts *f, char *why, size_t cap)
{
	int e = f->err;
	if ((e == EACCES || e == EPERM) && f->paranoid > 2)
		snprintf(why, cap, "perf_event_open refused: %s (kernel.perf_event_paranoid is %ld; "
			 "above 2 needs CAP_PERFMON: `sysctl kernel.perf_event_paranoid=2`)",
			 strerror(e), f->paranoid);
	else if ((e == EACCES || e == EPERM) && f->paranoid != WP_FACT_UNKNOWN)
		snprintf(why, cap, "perf_event_open refused: %s, though kernel.perf_event_paranoid "
			 "is %ld, which allows it: refused by %s; allow perf_event_open there (docker "
			 "run --cap-add PERFMON) or run wallprof outside the container",
			 strerror(e), f->paranoid, refuser(f));
	else if (e == EACCES || e == EPERM)
		snprintf(why, cap, "perf_event_open refused: %s, by %s; allow perf_event_open there "
			 "(docker run --cap-add PERFMON) or run wallprof outside the container",
			 strerror(e), refuser(f));
	else
		snprintf(why, cap, "perf_event_open: %s (this kernel cannot sample user stacks "
			 "with a software clock)", strerror(e));
}

int wp_refusal_explain(const struct wp_refusal_facts *f, char *why, size_t cap)
{
	why[0] = 0;
	if (f->tracer_pid > 0)
		snprintf(why, cap, "pid %d is traced by pid %ld (%s): detach it first (wallprof "
			 "looks at a process only while no debugger or tracer holds it)",
			 (int)f->pid, f->tracer_pid, f->tracer);
	else if (f->call == WP_REFUSED_PROC)
		explain_proc(f, why, cap);
	else if (f->call == WP_REFUSED_VM)
		explain_vm(f, why, cap);
	else if (f->call == WP_REFUSED_PERF)
		explain_perf(f, why, cap);
	else
		return 0;
	return -1;
}

/* ---- The facts, read from /proc and learnt from the calls themselves. ---- */

/* The target's uids (or gids) from its status line `key` ("Uid:": real, effective, saved):
 * the first that is not `ours`, effective first as it is the one a reader sees; -1 when none. */
static long other_id(const char *status, const char *key, long ours)
{
	const char *p = strstr(status, key);
	long id[3];
	if (!p)
		return -1;
	char *at = (char *)p + strlen(key);
	for (int i = 0; i < 3; i++)
		id[i] = strtol(at, &at, 10);
	static const int order[3] = { 1, 0, 2 };
	for (int i = 0; i < 3; i++)
		if (id[order[i]] != ours)
			return id[order[i]];
	return -1;
}

static void group_name(long gid, char *buf, size_t cap)
{
	struct group *gr = getgrgid((gid_t)gid);
	if (gr)
		snprintf(buf, cap, "%s", gr->gr_name);
	else
		snprintf(buf, cap, "gid %ld", gid);
}

/* How many pid namespaces a status's NSpid line spans, and the pid in the innermost one. */
static int ns_depth(const char *status, long *inner)
{
	const char *p = strstr(status, "NSpid:");
	int n = 0;
	if (!p)
		return 1;
	for (p += 6;; n++) {
		while (*p == '\t' || *p == ' ') /* (not strtol's own skip, which would pass '\n') */
			p++;
		if (*p < '0' || *p > '9')
			break;
		char *end;
		*inner = strtol(p, &end, 10);
		p = end;
	}
	return n ? n : 1;
}

/* Whether `pid` descends from wallprof: its parents, followed up to init (bounded, in case a
 * pid is reused into a loop while we walk). */
static int descends_from_us(pid_t pid)
{
	char status[4096];
	for (int i = 0; i < 4096 && pid > 1; i++) {
		if (pid == getpid())
			return 1;
		if (wp_snap_read(pid, pid, "status", status, sizeof(status)) < 0)
			return 0;
		pid = (pid_t)status_field(status, "PPid:");
	}
	return 0;
}

/* Not dumpable: the kernel then gives its /proc files to root instead of its effective user
 * (all but its directories, which everyone may list). */
static int dumpable(pid_t pid, const char *status)
{
	char path[64];
	struct stat st;
	const char *p = strstr(status, "Uid:");
	long euid = -1;
	if (p) {
		char *at;
		strtol(p + 4, &at, 10);
		euid = strtol(at, NULL, 10);
	}
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (euid <= 0 || stat(path, &st) != 0)
		return 1;
	return st.st_uid == (uid_t)euid;
}

/* The strings the facts point to. */
struct fact_names {
	char tracer[64], owner[64], group[64];
};

/* Everything about `pid` (whose status is `status`) and about wallprof that may explain a
 * refusal; read before any call is tried, at the cost of a few /proc files. */
static void read_facts(pid_t pid, const char *status, struct wp_refusal_facts *f,
		       struct fact_names *n)
{
	char self[4096];
	long inner = 0, ours = 0;
	memset(f, 0, sizeof(*f));
	f->pid = pid;
	f->self = pid == getpid();
	f->tracer_pid = status_field(status, "TracerPid:");
	n->tracer[0] = 0;
	if (f->tracer_pid > 0)
		comm_of((pid_t)f->tracer_pid, n->tracer, sizeof(n->tracer));
	f->tracer = n->tracer;
	f->root = geteuid() == 0;
	f->other_uid = other_id(status, "Uid:", (long)getuid());
	n->owner[0] = n->group[0] = 0;
	if (f->other_uid >= 0 && !f->root) /* (names only for a line that uses them) */
		user_name(f->other_uid, n->owner, sizeof(n->owner));
	f->owner = n->owner;
	f->other_gid = other_id(status, "Gid:", (long)getgid());
	if (f->other_gid >= 0 && !f->root)
		group_name(f->other_gid, n->group, sizeof(n->group));
	f->group = n->group;
	f->dumpable = dumpable(pid, status);
	f->ptrace_scope = read_long("/proc/sys/kernel/yama/ptrace_scope", -1);
	f->descendant = f->ptrace_scope == 1 && descends_from_us(pid);
	int mine = 1;
	if (wp_snap_read(getpid(), getpid(), "status", self, sizeof(self)) >= 0) {
		mine = ns_depth(self, &ours);
		f->seccomp = status_field(self, "Seccomp:") == 2;
	}
	if (ns_depth(status, &inner) > mine)
		f->ns_pid = inner;
	f->paranoid = read_long("/proc/sys/kernel/perf_event_paranoid", WP_FACT_UNKNOWN);
}

/* One byte of pid's memory by process_vm_readv, at its first mapping: the call itself may be
 * refused (seccomp) where /proc's ptrace checks pass; stacks and unwind tables are read with
 * it. Other failures (the mapping went away) are not refusals: 0 then, else the errno. */
static int try_vm_read(pid_t pid)
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
	return errno;
}

/* One clock on the leader, opened and closed: the refusal a thread's would meet (its errno),
 * or 0. */
static int try_perf(pid_t pid)
{
	struct perf_event_attr a;
	wp_perf_attr(&a, 1000000, 4096, 1);
	a.disabled = 1;
	int fd = (int)syscall(SYS_perf_event_open, &a, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

/* The calls the sampler will make, in order, until one is refused: which, with its errno.
 * The syscall file is skipped for ourselves (a static program: our child, no check). */
static void try_calls(pid_t pid, int proc, struct wp_refusal_facts *f)
{
	char buf[256];
	if (proc && wp_snap_read(pid, pid, "syscall", buf, sizeof(buf)) < 0) {
		f->err = errno;
		f->call = WP_REFUSED_PROC;
	} else if ((f->err = try_vm_read(pid))) {
		f->call = WP_REFUSED_VM;
	} else if ((f->err = try_perf(pid))) {
		f->call = WP_REFUSED_PERF;
	}
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
	struct wp_refusal_facts f;
	struct fact_names n;
	read_facts(pid, status, &f, &n);
	if (f.tracer_pid <= 0) /* (looked at while a tracer holds it, it would only be seen stopped) */
		try_calls(pid, 1, &f);
	return wp_refusal_explain(&f, why, cap);
}

int wp_refusal_check_self(char *why, size_t cap)
{
	char status[4096];
	struct wp_refusal_facts f;
	struct fact_names n;
	if (wp_snap_read(getpid(), getpid(), "status", status, sizeof(status)) < 0)
		status[0] = 0;
	read_facts(getpid(), status, &f, &n);
	f.tracer_pid = 0; /* (a debugger running wallprof itself is no refusal) */
	try_calls(getpid(), 0, &f);
	return wp_refusal_explain(&f, why, cap);
}
