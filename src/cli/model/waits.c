/* SPDX-License-Identifier: MIT */
#include "waits.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

static const char *const kind_names[WP_WAIT__N] = {
	[WP_WAIT_LOCK] = "lock",	   [WP_WAIT_RWLOCK] = "rwlock", [WP_WAIT_CONDITION] = "condition",
	[WP_WAIT_SEMAPHORE] = "semaphore", [WP_WAIT_JOIN] = "join",	[WP_WAIT_FUTEX] = "futex",
	[WP_WAIT_IO] = "io",		   [WP_WAIT_SLEEP] = "sleep",	[WP_WAIT_CHILD] = "child",
	[WP_WAIT_SIGNAL] = "signal",	   [WP_WAIT_OTHER] = "other",	[WP_WAIT_CPU] = "cpu",
	[WP_WAIT_DISK] = "disk",
};

const char *wp_wait_kind_name(enum wp_wait_kind k)
{
	return (unsigned)k < WP_WAIT__N ? kind_names[k] : "other";
}

/* The calls a thread commonly blocks in (x86-64 numbers, as the agent's host records them). */
static const struct {
	uint32_t nr;
	const char *name;
	enum wp_wait_kind kind;
} calls[] = {
	{ SYS_read, "read", WP_WAIT_IO },	     { SYS_write, "write", WP_WAIT_IO },
	{ SYS_pread64, "pread64", WP_WAIT_IO },	     { SYS_pwrite64, "pwrite64", WP_WAIT_IO },
	{ SYS_readv, "readv", WP_WAIT_IO },	     { SYS_writev, "writev", WP_WAIT_IO },
	{ SYS_preadv, "preadv", WP_WAIT_IO },	     { SYS_pwritev, "pwritev", WP_WAIT_IO },
	{ SYS_accept, "accept", WP_WAIT_IO },	     { SYS_accept4, "accept4", WP_WAIT_IO },
	{ SYS_connect, "connect", WP_WAIT_IO },	     { SYS_recvfrom, "recvfrom", WP_WAIT_IO },
	{ SYS_sendto, "sendto", WP_WAIT_IO },	     { SYS_recvmsg, "recvmsg", WP_WAIT_IO },
	{ SYS_sendmsg, "sendmsg", WP_WAIT_IO },	     { SYS_recvmmsg, "recvmmsg", WP_WAIT_IO },
	{ SYS_sendmmsg, "sendmmsg", WP_WAIT_IO },    { SYS_epoll_wait, "epoll_wait", WP_WAIT_IO },
	{ SYS_epoll_pwait, "epoll_pwait", WP_WAIT_IO }, { SYS_flock, "flock", WP_WAIT_IO },
	{ SYS_fcntl, "fcntl", WP_WAIT_IO },	     { SYS_ioctl, "ioctl", WP_WAIT_IO },
	{ SYS_fsync, "fsync", WP_WAIT_IO },	     { SYS_fdatasync, "fdatasync", WP_WAIT_IO },
	{ SYS_splice, "splice", WP_WAIT_IO },	     { SYS_sendfile, "sendfile", WP_WAIT_IO },
	{ SYS_poll, "poll", WP_WAIT_IO },	     { SYS_ppoll, "ppoll", WP_WAIT_IO },
	{ SYS_select, "select", WP_WAIT_IO },	     { SYS_pselect6, "pselect6", WP_WAIT_IO },
	{ SYS_nanosleep, "nanosleep", WP_WAIT_SLEEP },
	{ SYS_clock_nanosleep, "clock_nanosleep", WP_WAIT_SLEEP },
	{ SYS_wait4, "wait4", WP_WAIT_CHILD },	     { SYS_waitid, "waitid", WP_WAIT_CHILD },
	/* a parent stays in vfork (posix_spawn: clone3 or clone with CLONE_VFORK) until its
	 * child execs or exits: a thread asleep in these waits for its child */
	{ SYS_vfork, "vfork", WP_WAIT_CHILD },	     { SYS_clone, "clone", WP_WAIT_CHILD },
	{ SYS_clone3, "clone3", WP_WAIT_CHILD },
	{ SYS_rt_sigsuspend, "sigsuspend", WP_WAIT_SIGNAL },
	{ SYS_rt_sigtimedwait, "sigtimedwait", WP_WAIT_SIGNAL },
	{ SYS_pause, "pause", WP_WAIT_SIGNAL },	     { SYS_futex, "futex", WP_WAIT_FUTEX },
	{ SYS_epoll_pwait2, "epoll_pwait2", WP_WAIT_IO },
	{ SYS_preadv2, "preadv2", WP_WAIT_IO },	     { SYS_pwritev2, "pwritev2", WP_WAIT_IO },
	{ SYS_sync_file_range, "sync_file_range", WP_WAIT_IO },
	{ SYS_syncfs, "syncfs", WP_WAIT_IO },	     { SYS_sync, "sync", WP_WAIT_IO },
	{ SYS_msync, "msync", WP_WAIT_IO },	     { SYS_tee, "tee", WP_WAIT_IO },
	{ SYS_vmsplice, "vmsplice", WP_WAIT_IO },    { SYS_copy_file_range, "copy_file_range", WP_WAIT_IO },
	{ SYS_mq_timedsend, "mq_timedsend", WP_WAIT_IO },
	{ SYS_mq_timedreceive, "mq_timedreceive", WP_WAIT_IO },
	{ SYS_open, "open", WP_WAIT_IO },	     { SYS_openat, "openat", WP_WAIT_IO },
	/* System V IPC: a message queue is read and written as io, a semaphore set is one */
	{ SYS_msgrcv, "msgrcv", WP_WAIT_IO },	     { SYS_msgsnd, "msgsnd", WP_WAIT_IO },
	{ SYS_semop, "semop", WP_WAIT_SEMAPHORE },   { SYS_semtimedop, "semtimedop", WP_WAIT_SEMAPHORE },
	{ SYS_futex_waitv, "futex_waitv", WP_WAIT_FUTEX },
	{ SYS_io_getevents, "io_getevents", WP_WAIT_IO },
	{ SYS_io_pgetevents, "io_pgetevents", WP_WAIT_IO },
	{ SYS_io_uring_enter, "io_uring_enter", WP_WAIT_IO },
	/* the file system's own calls, which block on its journal and the disk (PostgreSQL
	 * renames and unlinks WAL segments, removes its temporary directories, truncates and
	 * extends relations): a path's calls are named by the call, a descriptor's by its file */
	{ SYS_rename, "rename", WP_WAIT_IO },	     { SYS_renameat, "renameat", WP_WAIT_IO },
	{ SYS_renameat2, "renameat2", WP_WAIT_IO },  { SYS_unlink, "unlink", WP_WAIT_IO },
	{ SYS_unlinkat, "unlinkat", WP_WAIT_IO },    { SYS_rmdir, "rmdir", WP_WAIT_IO },
	{ SYS_mkdir, "mkdir", WP_WAIT_IO },	     { SYS_mkdirat, "mkdirat", WP_WAIT_IO },
	{ SYS_link, "link", WP_WAIT_IO },	     { SYS_linkat, "linkat", WP_WAIT_IO },
	{ SYS_symlink, "symlink", WP_WAIT_IO },	     { SYS_symlinkat, "symlinkat", WP_WAIT_IO },
	{ SYS_truncate, "truncate", WP_WAIT_IO },    { SYS_ftruncate, "ftruncate", WP_WAIT_IO },
	{ SYS_fallocate, "fallocate", WP_WAIT_IO },  { SYS_getdents64, "getdents64", WP_WAIT_IO },
	{ SYS_close, "close", WP_WAIT_IO },
};

/* The file system's calls that take a path, not a descriptor: named by the call. */
static int path_call(uint32_t nr)
{
	switch (nr) {
	case SYS_rename: case SYS_renameat: case SYS_renameat2: case SYS_unlink: case SYS_unlinkat:
	case SYS_rmdir: case SYS_mkdir: case SYS_mkdirat: case SYS_link: case SYS_linkat:
	case SYS_symlink: case SYS_symlinkat: case SYS_truncate:
		return 1;
	default:
		return 0;
	}
}

const char *wp_syscall_name(uint32_t nr)
{
	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++)
		if (calls[i].nr == nr)
			return calls[i].name;
	return NULL;
}

/* What a function in a futex-waiting stack says the futex is, or -1 when it says nothing.
 * glibc's own names (2.34 and later; older ones too): __lll_lock_wait[_private],
 * ___pthread_mutex_lock, __pthread_mutex_clocklock_common, __pthread_cond_wait_common,
 * __pthread_clockjoin_ex, __new_sem_wait_slow64, __pthread_rwlock_wrlock_full64... */
static int futex_user(const char *f)
{
	if (strstr(f, "lll_lock_wait") || strstr(f, "pthread_mutex_lock") ||
	    strstr(f, "pthread_mutex_timedlock") || strstr(f, "pthread_mutex_clocklock"))
		return WP_WAIT_LOCK;
	if (strstr(f, "pthread_rwlock_"))
		return WP_WAIT_RWLOCK;
	/* GLib's GCond waits on a futex of its own (g_cond_wait, g_cond_wait_until); its
	 * GMutex's slow path is a static function, nameless in a stripped libglib */
	if (strstr(f, "pthread_cond_") || strstr(f, "g_cond_wait"))
		return WP_WAIT_CONDITION;
	if (strstr(f, "sem_wait") || strstr(f, "sem_timedwait") || strstr(f, "sem_clockwait"))
		return WP_WAIT_SEMAPHORE;
	if (strstr(f, "pthread_join") || strstr(f, "pthread_clockjoin") ||
	    strstr(f, "pthread_timedjoin"))
		return WP_WAIT_JOIN;
	return -1;
}

enum wp_wait_kind wp_wait_classify(uint32_t nr, const char *const *funcs, size_t n)
{
	if (nr == WP_WAIT_NR_CPU)
		return WP_WAIT_CPU;
	if (nr == WP_WAIT_NR_DISK)
		return WP_WAIT_DISK;
	if (nr == SYS_futex) {
		for (size_t i = 0; i < n; i++) {
			int k = funcs[i] ? futex_user(funcs[i]) : -1;
			if (k >= 0)
				return (enum wp_wait_kind)k;
		}
		return WP_WAIT_FUTEX;
	}
	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++)
		if (calls[i].nr == nr)
			return calls[i].kind;
	return WP_WAIT_OTHER;
}

/* Whether w is a poll or select over no descriptor (the agent found none to name, and the
 * set was empty or it read the timeout of one): a sleep, PostgreSQL's pg_usleep. */
static int empty_poll(const struct wp_wait *w)
{
	int poll = w->nr == SYS_poll || w->nr == SYS_ppoll;
	int select = w->nr == SYS_select || w->nr == SYS_pselect6;
	return (poll || select) && !(w->target && *w->target) && (w->a1 == 0 || w->aux);
}

enum wp_wait_kind wp_wait_kind_of(const struct wp_wait *w, const char *const *funcs, size_t n)
{
	if (empty_poll(w))
		return WP_WAIT_SLEEP;
	return wp_wait_classify(w->nr, funcs, n);
}

void wp_wait_duration(uint64_t ns, char *buf, size_t cap)
{
	static const struct {
		uint64_t unit;
		const char *name;
	} units[] = { { 1000000000ull, "s" }, { 1000000ull, "ms" }, { 1000ull, "us" } };
	for (size_t i = 0; i < 3; i++)
		if (ns >= units[i].unit) {
			if (ns % units[i].unit == 0)
				snprintf(buf, cap, "%" PRIu64 "%s", ns / units[i].unit, units[i].name);
			else
				snprintf(buf, cap, "%.3g%s", (double)ns / (double)units[i].unit,
					 units[i].name);
			return;
		}
	snprintf(buf, cap, "%" PRIu64 "ns", ns);
}

/* A futex-based object: its symbol, else its address and the function that waits for it. */
static void futex_object(const struct wp_wait *w, const char *data_name, const char *waiter,
			 char *buf, size_t cap)
{
	if (data_name) {
		/* the whole object: a condition's futex words sit inside it ("big_cond+0x28") */
		snprintf(buf, cap, "%s", data_name);
		char *plus = strrchr(buf, '+');
		if (plus && plus[1] == '0' && plus[2] == 'x' && plus[3] &&
		    strspn(plus + 3, "0123456789abcdef") == strlen(plus + 3))
			*plus = 0;
	}
	else if (waiter)
		snprintf(buf, cap, "0x%" PRIx64 " in %s", w->a0, waiter);
	else
		snprintf(buf, cap, "0x%" PRIx64, w->a0);
}

void wp_wait_add_mutex(char *buf, size_t cap, const char *mutex_name, uint64_t cond_mutex)
{
	size_t len = strnlen(buf, cap);
	if (len + 1 >= cap)
		return;
	char m[512];
	if (mutex_name) {
		/* the whole mutex, as futex_object names a futex inside an object */
		snprintf(m, sizeof(m), "%s", mutex_name);
		char *plus = strrchr(m, '+');
		if (plus && plus[1] == '0' && plus[2] == 'x' && plus[3] &&
		    strspn(plus + 3, "0123456789abcdef") == strlen(plus + 3))
			*plus = 0;
		snprintf(buf + len, cap - len, " mutex=%s", m);
	} else {
		snprintf(buf + len, cap - len, " mutex=0x%" PRIx64, cond_mutex);
	}
}

/* An absolute clock_nanosleep (TIMER_ABSTIME: CPython's time.sleep, periodic loops) gives
 * a deadline, not the duration asked for, and each call of a loop gives another: named by
 * its clock only, so that one loop's sleeps are one object, not one per iteration. */
static void abs_sleep(uint64_t clock, char *buf, size_t cap)
{
	static const char *const names[] = { [0] = "CLOCK_REALTIME", [1] = "CLOCK_MONOTONIC",
					     [7] = "CLOCK_BOOTTIME", [11] = "CLOCK_TAI" };
	if (clock < sizeof(names) / sizeof(names[0]) && names[clock])
		snprintf(buf, cap, "until a %s deadline", names[clock]);
	else
		snprintf(buf, cap, "until a deadline on clock %" PRIu64, clock);
}

void wp_wait_describe(const struct wp_wait *w, enum wp_wait_kind k, const char *data_name,
		      const char *waiter, const char *joined_name, char *buf, size_t cap)
{
	const char *call = wp_syscall_name(w->nr);
	switch (k) {
	case WP_WAIT_SEMAPHORE:
		if (w->nr == SYS_semop || w->nr == SYS_semtimedop) {
			snprintf(buf, cap, "System V semaphore set %" PRIu64, w->a0);
			return;
		}
		/* fall through */
	case WP_WAIT_LOCK: case WP_WAIT_RWLOCK: case WP_WAIT_CONDITION: case WP_WAIT_FUTEX:
		if (w->nr == SYS_futex_waitv) {
			snprintf(buf, cap, "futex_waitv");
			return;
		}
		futex_object(w, data_name, waiter, buf, cap);
		return;
	case WP_WAIT_JOIN:
		/* pthread_join waits on the joined thread's tid word, expecting its tid */
		if (joined_name && *joined_name)
			snprintf(buf, cap, "%s", joined_name);
		else
			snprintf(buf, cap, "tid=%" PRIu64, w->a2);
		return;
	case WP_WAIT_IO:
		/* agents since issue 13 describe poll/select/epoll sets too; older ones did not */
		if (w->target && *w->target)
			snprintf(buf, cap, "%s", w->target);
		else if (w->nr == SYS_poll || w->nr == SYS_ppoll)
			snprintf(buf, cap, "%s of %" PRIu64 " fds", call, w->a1);
		else if (w->nr == SYS_select || w->nr == SYS_pselect6)
			/* select's first argument is the highest descriptor plus one, not a count:
			 * select([fd 4]) passes 5 */
			snprintf(buf, cap, "%s of fds < %" PRIu64, call, w->a1);
		else if (w->nr == SYS_msgrcv || w->nr == SYS_msgsnd)
			snprintf(buf, cap, "System V message queue %" PRIu64, w->a0);
		else if (w->nr == SYS_epoll_wait || w->nr == SYS_epoll_pwait ||
			 w->nr == SYS_epoll_pwait2)
			snprintf(buf, cap, "epoll fd %" PRIu64, w->a0); /* watching nothing known */
		else if (w->nr == SYS_sync || w->nr == SYS_openat || w->nr == SYS_open ||
			 w->nr == SYS_io_getevents || w->nr == SYS_io_pgetevents ||
			 w->nr == SYS_msync || path_call(w->nr))
			snprintf(buf, cap, "%s", call); /* no descriptor */
		else
			snprintf(buf, cap, "fd %" PRIu64, w->a0);
		return;
	case WP_WAIT_SLEEP:
		if (empty_poll(w) && !w->aux)
			snprintf(buf, cap, "?"); /* no timeout, or an agent before it was read */
		else if (w->nr == SYS_clock_nanosleep && (w->a1 & 1 /* TIMER_ABSTIME */))
			abs_sleep(w->a0, buf, cap);
		else if (!w->aux)
			snprintf(buf, cap, "?");
		else
			wp_wait_duration(w->aux, buf, cap);
		return;
	case WP_WAIT_CPU:
		snprintf(buf, cap, "runqueue");
		return;
	case WP_WAIT_DISK:
		/* the file when known, else the call, else (no call) a page fault */
		if (w->target && *w->target)
			snprintf(buf, cap, "%s", w->target);
		else if (w->a0 != ~0ull && w->a0 <= UINT32_MAX && wp_syscall_name((uint32_t)w->a0))
			snprintf(buf, cap, "%s", wp_syscall_name((uint32_t)w->a0));
		else if (w->a0 != ~0ull)
			snprintf(buf, cap, "syscall %" PRIu64, w->a0);
		else
			snprintf(buf, cap, "page fault");
		return;
	case WP_WAIT_CHILD:
		if (w->target && *w->target) /* "pid 1234 (sleep)", "any of pid 1 (a), ..." */
			snprintf(buf, cap, "%s", w->target);
		else if (w->nr == SYS_wait4 && (int32_t)w->a0 > 0)
			snprintf(buf, cap, "pid %" PRId32, (int32_t)w->a0);
		else if (w->nr == SYS_waitid && w->a0 == 1 /* P_PID */)
			snprintf(buf, cap, "pid %" PRId32, (int32_t)w->a1);
		else if (w->nr != SYS_wait4 && w->nr != SYS_waitid && call)
			snprintf(buf, cap, "%s", call); /* vfork, clone, clone3: until it execs */
		else
			snprintf(buf, cap, "any");
		return;
	default:
		if (call)
			snprintf(buf, cap, "%s", call);
		else
			snprintf(buf, cap, "syscall %" PRIu32, w->nr);
		return;
	}
}

int wp_wait_pipe_end(const struct wp_wait *w, uint64_t *ino)
{
	const char *t = w->target;
	if (!t || strncmp(t, "pipe:[", 6))
		return 0;
	char *end;
	unsigned long long v = strtoull(t + 6, &end, 10);
	if (end == t + 6 || strncmp(end, "] ", 2))
		return 0;
	*ino = v;
	return !strncmp(end + 2, "read end", 8) ? 1 : !strncmp(end + 2, "write end", 9) ? 2 : 0;
}

void wp_wait_pipe_used_by(char *obj, size_t cap, const char *who)
{
	size_t n = strlen(obj);
	if (n && obj[n - 1] == ')') /* "(write end fd 4)" -> "(write end fd 4, seen blocked on it: W)" */
		snprintf(obj + n - 1, cap - (n - 1), ", seen blocked on it: %s)", who);
	else
		snprintf(obj + n, cap - n, " (other end seen blocked on it: %s)", who);
}

int wp_runtime_module(const char *m)
{
	/* libc's file names: "libc.so.6", and "libc-2.31.so" before glibc 2.34 */
	static const char *const pre[] = { "libc.so", "libc-", "libpthread", "ld-linux",
					   "libstdc++", "libgcc_s", "[vdso]" };
	for (size_t i = 0; i < sizeof(pre) / sizeof(pre[0]); i++)
		if (m && !strncmp(m, pre[i], strlen(pre[i])))
			return 1;
	return 0;
}
