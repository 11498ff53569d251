/* SPDX-License-Identifier: MIT */
/* diskwait: threads that wait for the disk (issue 13's "disk" kind: uninterruptible sleep,
 * state D), and one that waits on a pipe (which must not be taken for the disk).
 *
 *   reader   drops an 8 MiB file from the page cache (posix_fadvise DONTNEED: allowed to
 *            anyone for a clean file) and preads it back in 64 KiB pieces, over and over
 *            (read_file)
 *   faulter  the same with a second file mapped in memory: drops it from the cache and from
 *            its own page tables (madvise DONTNEED), then touches one byte a page: major
 *            page faults, outside any system call (touch_pages)
 *   piper    read() on a pipe nobody writes until the end
 *
 * Usage: diskwait DIR [SECONDS] (default 2): the files are created in DIR and removed at the
 * end. WP_TRUTH=FILE receives "tid.NAME N", "path.reader PATH" (the file as /proc names it),
 * "call_pct.reader P" (the share of the reader's wall time spent inside pread),
 * "majflt.faulter N" (its major page faults, getrusage) and "passes.NAME N". */
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common.h"

#define FILE_SIZE (8u << 20)
#define PIECE (64u << 10)

static const char *dir;
static uint64_t deadline;
static int pipefd[2];
static volatile uint64_t sink;
static char path_r[PATH_MAX], path_f[PATH_MAX];
static int fd_r, fd_f;

struct thr {
	const char *name;
	void *(*fn)(void *);
	pthread_t handle;
	pid_t tid;
	uint64_t passes, call_ns, wall_ns;
	long majflt;
};

/* Creates the file and returns its descriptor, which its thread then reads: a number never
 * names two files in one run (the profiler may name a descriptor from an earlier look). */
static int make_file(const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0) {
		perror(path);
		exit(3);
	}
	static char buf[PIECE];
	uint64_t x = 88172645463325252ull;
	for (unsigned off = 0; off < FILE_SIZE; off += PIECE) {
		for (unsigned i = 0; i < PIECE; i += 8) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			memcpy(buf + i, &x, 8);
		}
		if (write(fd, buf, PIECE) != (ssize_t)PIECE) {
			perror("write");
			exit(3);
		}
	}
	fsync(fd); /* clean pages: DONTNEED can drop them */
	return fd;
}

static KEEP void read_file(struct thr *t, int fd)
{
	static char buf[PIECE];
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	for (unsigned off = 0; off < FILE_SIZE; off += PIECE) {
		uint64_t c0 = mono_ns();
		if (pread(fd, buf, PIECE, off) <= 0)
			break;
		t->call_ns += mono_ns() - c0;
		sink += (uint8_t)buf[0];
	}
}

static void *reader_fn(void *arg)
{
	struct thr *t = arg;
	int fd = fd_r;
	uint64_t w0 = mono_ns();
	while (fd >= 0 && mono_ns() < deadline) {
		read_file(t, fd);
		t->passes++;
	}
	t->wall_ns = mono_ns() - w0;
	return NULL;
}

static KEEP void touch_pages(int fd, volatile uint8_t *map)
{
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	madvise((void *)map, FILE_SIZE, MADV_DONTNEED);
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	uint64_t s = 0;
	for (unsigned off = 0; off < FILE_SIZE; off += 4096)
		s += map[off];
	sink += s;
}

static void *faulter_fn(void *arg)
{
	struct thr *t = arg;
	int fd = fd_f;
	void *map = fd >= 0 ? mmap(NULL, FILE_SIZE, PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
	struct rusage r0, r1;
	getrusage(RUSAGE_THREAD, &r0);
	while (map != MAP_FAILED && mono_ns() < deadline) {
		touch_pages(fd, map);
		t->passes++;
	}
	getrusage(RUSAGE_THREAD, &r1);
	t->majflt = r1.ru_majflt - r0.ru_majflt;
	return NULL;
}

static void *piper_fn(void *arg)
{
	(void)arg;
	char c;
	while (read(pipefd[0], &c, 1) < 0)
		;
	return NULL;
}

static struct thr thrs[] = {
	{ "reader", reader_fn, 0, 0, 0, 0, 0, 0 },
	{ "faulter", faulter_fn, 0, 0, 0, 0, 0, 0 },
	{ "piper", piper_fn, 0, 0, 0, 0, 0, 0 },
};
#define NTHR (sizeof(thrs) / sizeof(thrs[0]))

static void *start(void *arg)
{
	struct thr *t = arg;
	t->tid = (pid_t)syscall(SYS_gettid);
	pthread_setname_np(pthread_self(), t->name);
	return t->fn(t);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: diskwait DIR [SECONDS]\n");
		return 2;
	}
	dir = argv[1];
	double secs = run_seconds(argc - 1, argv + 1, 2.0);
	truth_open();
	snprintf(path_r, sizeof(path_r), "%s/diskwait-r.%d", dir, (int)getpid());
	snprintf(path_f, sizeof(path_f), "%s/diskwait-f.%d", dir, (int)getpid());
	if (pipe(pipefd) != 0) /* first: the files' descriptors are never the pipe's numbers */
		return 3;
	fd_r = make_file(path_r);
	fd_f = make_file(path_f);
	deadline = mono_ns() + (uint64_t)(secs * 1e9);
	for (size_t i = 0; i < NTHR; i++)
		pthread_create(&thrs[i].handle, NULL, start, &thrs[i]);
	pthread_join(thrs[0].handle, NULL);
	pthread_join(thrs[1].handle, NULL);
	if (write(pipefd[1], "x", 1) != 1)
		return 3;
	pthread_join(thrs[2].handle, NULL);
	char real[PATH_MAX];
	truth("path.reader %s", realpath(path_r, real) ? real : path_r);
	for (size_t i = 0; i < NTHR; i++) {
		truth("tid.%s %d", thrs[i].name, (int)thrs[i].tid);
		truth("passes.%s %llu", thrs[i].name, (unsigned long long)thrs[i].passes);
	}
	truth("call_pct.reader %.2f",
	      thrs[0].wall_ns ? 100.0 * (double)thrs[0].call_ns / (double)thrs[0].wall_ns : 0.0);
	truth("majflt.faulter %ld", thrs[1].majflt);
	truth_close();
	unlink(path_r);
	unlink(path_f);
	return 0;
}
