/* SPDX-License-Identifier: MIT */
/* The agent's descriptions of io and child waits (src/agent/wait_fds.c): the bounded,
 * fault-proof reads of the program's memory (a poll's pollfd array, a select's fd_set
 * bitmaps) given unmapped, half-mapped and absurd arguments, and what a description says of
 * this process's own descriptors. Run on the unit test's own process: its memory is the
 * "program's", its thread the waiting one. */
#include <fcntl.h>
#include <stdlib.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../src/agent/fds.h"
#include "../../src/agent/peek.h"
#include "../../src/agent/wait_fds.h"
#include "check.h"

static pid_t me;
static char text[2048];

static uint32_t describe(long nr, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3)
{
	uint64_t args[6] = { a0, a1, a2, a3, 0, 0 }, id;
	struct wp_look look = { .may = 1 };
	uint32_t n = wp_wait_fds_describe(me, nr, args, &look, &id, text, sizeof(text) - 1);
	text[n] = 0;
	return n;
}

/* A page followed by an unmapped one: a read running past the first faults nowhere. */
static char *page_before_hole(void)
{
	long pg = sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, (size_t)(2 * pg), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	munmap(p + pg, (size_t)pg);
	return p;
}

static void test_unmapped_reads(void)
{
	long pg = sysconf(_SC_PAGESIZE);
	char *p = page_before_hole();
	CHECK(p != NULL, "mmap");
	if (!p)
		return;
	/* poll: the array unmapped, straddling the hole, absurdly long, or NULL */
	CHECK(describe(SYS_poll, (uint64_t)(uintptr_t)(p + pg), 2, 0, 0) == 0,
	      "an unmapped pollfd array: nothing, no fault");
	struct pollfd *edge = (struct pollfd *)(p + pg - sizeof(struct pollfd));
	edge->fd = 0;
	CHECK(describe(SYS_poll, (uint64_t)(uintptr_t)edge, 2, 0, 0) == 0,
	      "a pollfd array running into the hole: nothing");
	CHECK(describe(SYS_poll, (uint64_t)(uintptr_t)(p + pg - 16), 1ull << 40, 0, 0) == 0,
	      "2^40 descriptors: the bounded read runs into the hole");
	memset(p, 0xff, (size_t)pg); /* fd -1 everywhere: ignored, as poll ignores them */
	((struct pollfd *)p)[0].fd = 0;
	uint32_t n = describe(SYS_poll, (uint64_t)(uintptr_t)p, 1ull << 40, 0, 0);
	CHECK(n > 0 && n < 200 && strstr(text, " more"), "2^40 descriptors: a bounded read, a "
	      "bounded text: %s", text);
	CHECK(describe(SYS_poll, 0, 3, 0, 0) == 0, "NULL array");
	CHECK(describe(SYS_ppoll, ~0ull - 7, 1, 0, 0) == 0, "an address at the top of memory");
	/* select: bitmaps unmapped or straddling the hole */
	CHECK(describe(SYS_select, 64, (uint64_t)(uintptr_t)(p + pg), 0, 0) == 0,
	      "an unmapped fd_set: nothing");
	CHECK(describe(SYS_pselect6, 1024, (uint64_t)(uintptr_t)(p + pg - 8), 0, 0) == 0,
	      "an fd_set running into the hole: nothing");
	CHECK(describe(SYS_select, ~0ull, 0, 0, 0) == 0, "no bitmaps at all");
	/* descriptors that do not exist, an epoll that is not one */
	CHECK(describe(SYS_read, 1 << 20, 0, 0, 0) == 0, "a descriptor not open: nothing");
	CHECK(describe(SYS_epoll_wait, 1 << 20, 0, 0, 0) == 0, "an epoll not open: nothing");
	munmap(p, (size_t)pg);
}

static void test_names(void)
{
	int pfd[2];
	CHECK(pipe(pfd) == 0, "pipe");
	struct stat st;
	fstat(pfd[0], &st);
	char want[256];
	snprintf(want, sizeof(want), "pipe:[%lu] read end (write end fd %d)",
		 (unsigned long)st.st_ino, pfd[1]);
	describe(SYS_read, (uint64_t)pfd[0], 0, 0, 0);
	CHECK_STR(text, want);

	/* the file system's calls on a descriptor are named by its file, as fdatasync's are
	 * (a relation's ftruncate or fallocate, a directory's getdents64) */
	char tmpl[] = "/tmp/wp_wait_fds.XXXXXX";
	int tfd = mkstemp(tmpl);
	/* a number no later check reuses: looks are cached by number for a while */
	int ffd = fcntl(tfd, F_DUPFD_CLOEXEC, 900);
	close(tfd);
	CHECK(ffd >= 900, "mkstemp, F_DUPFD");
	CHECK(wp_wait_fds_handles(SYS_ftruncate) && wp_wait_fds_handles(SYS_fallocate) &&
	      wp_wait_fds_handles(SYS_getdents64), "ftruncate, fallocate, getdents64 are looked up");
	describe(SYS_ftruncate, (uint64_t)ffd, 0, 0, 0);
	CHECK_STR(text, tmpl);
	describe(SYS_fallocate, (uint64_t)ffd, 0, 0, 0);
	CHECK_STR(text, tmpl);
	unlink(tmpl);
	close(ffd);

	/* poll over a pipe's read end, an fd ignored (-1) and a unix socket */
	int sp[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sp) == 0, "socketpair");
	struct pollfd fds[3] = { { pfd[0], POLLIN, 0 }, { -1, 0, 0 }, { sp[0], POLLIN, 0 } };
	describe(SYS_poll, (uint64_t)(uintptr_t)fds, 3, 0, 0);
	fstat(sp[0], &st);
	char sock[64];
	snprintf(sock, sizeof(sock), ", socket:[%lu] unix stream", (unsigned long)st.st_ino);
	CHECK(!strncmp(text, "poll pipe:[", 11) && strstr(text, sock), "poll names both: %s",
	      text);

	/* select over the same two */
	uint64_t set[2] = { 0, 0 };
	set[pfd[0] / 64] |= 1ull << (pfd[0] % 64);
	set[sp[0] / 64] |= 1ull << (sp[0] % 64);
	describe(SYS_select, 128, (uint64_t)(uintptr_t)set, 0, 0);
	CHECK(!strncmp(text, "select pipe:[", 13) && strstr(text, sock), "select names both: %s",
	      text);

	/* anonymous inodes: their kind and descriptor */
	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGUSR1);
	int sfd = signalfd(-1, &sigs, 0), ifd = inotify_init1(0);
	describe(SYS_read, (uint64_t)sfd, 0, 0, 0);
	snprintf(want, sizeof(want), "signalfd fd %d", sfd);
	CHECK_STR(text, want);
	describe(SYS_read, (uint64_t)ifd, 0, 0, 0);
	snprintf(want, sizeof(want), "inotify fd %d", ifd);
	CHECK_STR(text, want);
	close(sfd);
	close(ifd);

	/* any child: this thread's children, by pid and command. The command is what the
	 * kernel says ours is (a fork child keeps it): "test_wait_fds", or valgrind's
	 * "memcheck-amd64-" when run under it */
	char comm[32] = "?";
	FILE *cf = fopen("/proc/self/comm", "r");
	if (cf) {
		if (fgets(comm, sizeof(comm), cf))
			comm[strcspn(comm, "\n")] = 0;
		fclose(cf);
	}
	pid_t kid = fork();
	if (kid == 0) {
		pause();
		_exit(0);
	}
	describe(SYS_wait4, (uint64_t)-1, 0, 0, 0);
	snprintf(want, sizeof(want), "any of pid %d (%s)", (int)kid, comm);
	CHECK_STR(text, want);
	describe(SYS_waitid, 1 /* P_PID */, (uint64_t)kid, 0, 0);
	snprintf(want, sizeof(want), "pid %d (%s)", (int)kid, comm);
	CHECK_STR(text, want);
	kill(kid, SIGKILL);
	waitpid(kid, NULL, 0);

	/* a child that is not one of ours, a process group */
	describe(SYS_wait4, (uint64_t)(uint32_t)getpid(), 0, 0, 0);
	snprintf(want, sizeof(want), "pid %d (%s)", (int)getpid(), comm);
	CHECK_STR(text, want);
	describe(SYS_wait4, (uint64_t)(uint32_t)-77, 0, 0, 0);
	CHECK_STR(text, "process group 77");
	close(pfd[0]);
	close(pfd[1]);
	close(sp[0]);
	close(sp[1]);
}

int main(void)
{
	/* the agent opens /proc files only on a private descriptor table (wait_fds.h), as its
	 * sampler has: this thread gets one, keeping stdout and stderr */
	int keep[2] = { 1, 2 };
	wp_fds_go_private(keep, 2, 1);
	me = (pid_t)syscall(SYS_gettid);
	wp_peek_set_tid(me);
	test_unmapped_reads();
	test_names();
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
