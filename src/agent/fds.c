/* SPDX-License-Identifier: MIT */
#include "fds.h"
#include "forkguard.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_close_range
#define SYS_close_range 436
#endif

/* Fallback descriptors start here: far above what programs use, below common limits. */
#define HIGH_FD 900

static _Atomic int private_table;
/* Set on the thread that went private; threads it creates share its table and set it too. */
static __thread int on_private __attribute__((tls_model("initial-exec")));

static int is_kept(int fd, const int *keep, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (keep[i] == fd)
			return 1;
	return 0;
}

/* Closes [lo, hi] in the calling thread's table. */
static int close_span(unsigned lo, unsigned hi)
{
	if (lo > hi)
		return 0;
	return (int)syscall(SYS_close_range, lo, hi, 0);
}

/* Without close_range (kernels before 5.9): close what /proc lists for this thread. Inside
 * the fork guard: opendir allocates, and a fork child may take over this task's thread state
 * (task.c), its malloc cache included. */
static void close_listed(const int *keep, size_t n)
{
	wp_guard_enter();
	DIR *d = opendir("/proc/thread-self/fd");
	if (!d) {
		wp_guard_leave();
		return;
	}
	int self = dirfd(d);
	struct dirent *e;
	while ((e = readdir(d))) {
		char *end;
		long fd = strtol(e->d_name, &end, 10);
		if (*end || end == e->d_name || fd == self || is_kept((int)fd, keep, n))
			continue;
		close((int)fd);
	}
	closedir(d);
	wp_guard_leave();
}

int wp_fds_go_private(const int *keep, size_t n, int allowed)
{
	on_private = 0; /* a task on a fork child's inherited thread state (task.c) starts here */
	if (!allowed || unshare(CLONE_FILES) != 0)
		return 0;
	on_private = 1;
	atomic_store(&private_table, 1);
	/* The copy holds a reference to every file the program has open: drop them now, so a
	 * pipe the program closes reaches EOF and a socket it closes is released as before.
	 * (POSIX record locks belong to a descriptor table, so closing our copies never
	 * releases the program's locks.) */
	int sorted[8];
	size_t k = 0;
	for (size_t i = 0; i < n && k < 8; i++)
		if (keep[i] >= 0)
			sorted[k++] = keep[i];
	for (size_t i = 1; i < k; i++)
		for (size_t j = i; j > 0 && sorted[j - 1] > sorted[j]; j--) {
			int t = sorted[j];
			sorted[j] = sorted[j - 1];
			sorted[j - 1] = t;
		}
	unsigned lo = 0;
	int ok = 1;
	for (size_t i = 0; i < k && ok; i++) {
		if ((unsigned)sorted[i] > lo)
			ok = close_span(lo, (unsigned)sorted[i] - 1) == 0;
		lo = (unsigned)sorted[i] + 1;
	}
	if (!ok || close_span(lo, ~0u) != 0)
		close_listed(keep, n);
	return 1;
}

void wp_fds_adopt(void)
{
	on_private = atomic_load(&private_table);
}

int wp_fds_on_private_table(void)
{
	return on_private;
}

int wp_fds_private(void)
{
	return atomic_load(&private_table);
}

int wp_fds_hide(int fd)
{
	if (fd < 0 || on_private)
		return fd;
	int hi = fcntl(fd, F_DUPFD_CLOEXEC, HIGH_FD);
	if (hi < 0)
		return fd;
	close(fd);
	return hi;
}

void wp_fds_identify(int fd, struct wp_fd_id *id)
{
	struct stat st;
	id->valid = fd >= 0 && fstat(fd, &st) == 0;
	id->dev = id->valid ? st.st_dev : 0;
	id->ino = id->valid ? st.st_ino : 0;
}

int wp_fds_still_ours(int fd, const struct wp_fd_id *id)
{
	struct stat st;
	if (on_private)
		return fd >= 0;
	return fd >= 0 && id->valid && fstat(fd, &st) == 0 && st.st_dev == id->dev &&
	       st.st_ino == id->ino;
}

/* ---- libunwind's pipe ----
 * libunwind's initialisation opens a pipe it only uses to probe memory when unwinding its own
 * process, which the agent never does (it unwinds copies through its own accessors). On the
 * agent's table that pipe is harmless; on the program's (the fallback) it would take the
 * program's lowest numbers for good, so while the sampler sets libunwind up, pipes it makes
 * move to high numbers. Every other caller gets libc's pipe2 unchanged. */
static __thread int hiding_pipes __attribute__((tls_model("initial-exec")));

void wp_fds_hide_new_pipes(int on)
{
	hiding_pipes = on && !on_private;
}

__attribute__((visibility("default"))) int pipe2(int fds[2], int flags)
{
	static int (*real)(int[2], int);
	if (!real && !(real = (int (*)(int[2], int))dlsym(RTLD_NEXT, "pipe2"))) {
		errno = ENOSYS;
		return -1;
	}
	int r = real(fds, flags);
	if (r == 0 && hiding_pipes) {
		fds[0] = wp_fds_hide(fds[0]);
		fds[1] = wp_fds_hide(fds[1]);
	}
	return r;
}

void wp_fds_forget(void)
{
	atomic_store(&private_table, 0);
	on_private = 0;
}
