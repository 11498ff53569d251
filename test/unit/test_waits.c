/* SPDX-License-Identifier: MIT */
/* Unit tests for the classification of waits (src/cli/model/waits.c): a WAIT record's system
 * call and the waiting stack's functions (leaf first) give the kind; the record's arguments
 * and what the caller found (a symbol, the waiting function, a joined thread's name) give
 * the object, in the form docs/profile-format.md documents. */
#include "cli/model/waits.h"

#include <string.h>
#include <sys/syscall.h>

#include "check.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static void test_classify(void)
{
	static const char *const lock[] = { "futex_wait", "__lll_lock_wait", "lll_mutex_lock_optimized",
					    "___pthread_mutex_lock", "locker_fn" };
	static const char *const cond[] = { "__futex_abstimed_wait_common64",
					    "__futex_abstimed_wait_common",
					    "__pthread_cond_wait_common", "___pthread_cond_wait" };
	/* a condition wait re-locking its mutex: the nearest function to the leaf decides */
	static const char *const relock[] = { "futex_wait", "__lll_lock_wait",
					      "__pthread_mutex_cond_lock",
					      "__pthread_cond_wait_common", "___pthread_cond_wait" };
	static const char *const join[] = { "__futex_abstimed_wait_common",
					    "__pthread_clockjoin_ex", "joiner_fn" };
	static const char *const sem[] = { "__futex_abstimed_wait_common", "do_futex_wait",
					   "__new_sem_wait_slow64", "__new_sem_wait" };
	static const char *const rw[] = { "__futex_abstimed_wait_common",
					  "__pthread_rwlock_wrlock_full64", "___pthread_rwlock_wrlock" };
	static const char *const raw[] = { "syscall", "my_futex_wait", "main" };
	CHECK_INT(wp_wait_classify(SYS_futex, lock, N(lock)), WP_WAIT_LOCK);
	CHECK_INT(wp_wait_classify(SYS_futex, cond, N(cond)), WP_WAIT_CONDITION);
	CHECK_INT(wp_wait_classify(SYS_futex, relock, N(relock)), WP_WAIT_LOCK);
	CHECK_INT(wp_wait_classify(SYS_futex, join, N(join)), WP_WAIT_JOIN);
	CHECK_INT(wp_wait_classify(SYS_futex, sem, N(sem)), WP_WAIT_SEMAPHORE);
	CHECK_INT(wp_wait_classify(SYS_futex, rw, N(rw)), WP_WAIT_RWLOCK);
	CHECK_INT(wp_wait_classify(SYS_futex, raw, N(raw)), WP_WAIT_FUTEX);
	CHECK_INT(wp_wait_classify(SYS_futex, NULL, 0), WP_WAIT_FUTEX);
	/* GLib's GCond: a futex of its own under g_cond_wait_until (glib's cond test) */
	static const char *const gcond[] = { "syscall", "g_cond_wait_until", "test_wait_until" };
	CHECK_INT(wp_wait_classify(SYS_futex, gcond, N(gcond)), WP_WAIT_CONDITION);
	/* the stack says nothing for other calls: their number does */
	CHECK_INT(wp_wait_classify(SYS_read, lock, N(lock)), WP_WAIT_IO);
	CHECK_INT(wp_wait_classify(SYS_accept4, NULL, 0), WP_WAIT_IO);
	CHECK_INT(wp_wait_classify(SYS_epoll_wait, NULL, 0), WP_WAIT_IO);
	CHECK_INT(wp_wait_classify(SYS_ppoll, NULL, 0), WP_WAIT_IO);
	CHECK_INT(wp_wait_classify(SYS_clock_nanosleep, NULL, 0), WP_WAIT_SLEEP);
	CHECK_INT(wp_wait_classify(SYS_nanosleep, NULL, 0), WP_WAIT_SLEEP);
	CHECK_INT(wp_wait_classify(SYS_wait4, NULL, 0), WP_WAIT_CHILD);
	CHECK_INT(wp_wait_classify(SYS_rt_sigtimedwait, NULL, 0), WP_WAIT_SIGNAL);
	CHECK_INT(wp_wait_classify(SYS_pause, NULL, 0), WP_WAIT_SIGNAL);
	CHECK_INT(wp_wait_classify(SYS_msgrcv, NULL, 0), WP_WAIT_IO);
	CHECK_INT(wp_wait_classify(SYS_semop, NULL, 0), WP_WAIT_SEMAPHORE);
	CHECK_INT(wp_wait_classify(SYS_sync_file_range, NULL, 0), WP_WAIT_IO);
	CHECK_INT(wp_wait_classify(SYS_epoll_pwait2, NULL, 0), WP_WAIT_IO);
	/* the file system's calls (PostgreSQL's rename of a WAL segment, rmdir of its
	 * temporary directories read "[wait other syscall 82]", "84" before) */
	CHECK_INT(wp_wait_classify(SYS_rename, NULL, 0), WP_WAIT_IO);
	CHECK_INT(wp_wait_classify(SYS_rmdir, NULL, 0), WP_WAIT_IO);
	CHECK_INT(wp_wait_classify(SYS_unlink, NULL, 0), WP_WAIT_IO);
	CHECK_INT(wp_wait_classify(SYS_ftruncate, NULL, 0), WP_WAIT_IO);
	CHECK_INT(wp_wait_classify(9999, NULL, 0), WP_WAIT_OTHER);
	/* the pseudo calls: whatever the stack */
	CHECK_INT(wp_wait_classify(WP_WAIT_NR_CPU, lock, N(lock)), WP_WAIT_CPU);
	CHECK_INT(wp_wait_classify(WP_WAIT_NR_DISK, NULL, 0), WP_WAIT_DISK);
	CHECK_STR(wp_wait_kind_name(WP_WAIT_CPU), "cpu");
	CHECK_STR(wp_wait_kind_name(WP_WAIT_DISK), "disk");
	CHECK_STR(wp_wait_kind_name(WP_WAIT_CONDITION), "condition");
	CHECK_STR(wp_wait_kind_name(WP_WAIT__N), "other");
}

static const char *describe(const struct wp_wait *w, const char *data, const char *waiter,
			    const char *joined)
{
	static char buf[256];
	const char *fr[] = { "__lll_lock_wait" };
	enum wp_wait_kind k = wp_wait_kind_of(w, fr, 1);
	wp_wait_describe(w, k, data, waiter, joined, buf, sizeof(buf));
	return buf;
}

static void test_describe(void)
{
	struct wp_wait w = { .nr = SYS_futex, .a0 = 0x5600001000, .target = "" };
	CHECK_STR(describe(&w, "big_lock", "worker", NULL), "big_lock");
	CHECK_STR(describe(&w, "big_cond+0x28", NULL, NULL), "big_cond");
	CHECK_STR(describe(&w, "operator+", NULL, NULL), "operator+");
	CHECK_STR(describe(&w, NULL, "update_table", NULL), "0x5600001000 in update_table");
	CHECK_STR(describe(&w, NULL, NULL, NULL), "0x5600001000");

	/* a condition with the mutex its waiter published */
	struct wp_wait c = { .nr = SYS_futex, .a0 = 0x5600001028, .target = "",
			     .cond_mutex = 0x5600002000 };
	char cb[64];
	wp_wait_describe(&c, WP_WAIT_CONDITION, "big_cond+0x28", NULL, NULL, cb, sizeof(cb));
	wp_wait_add_mutex(cb, sizeof(cb), "big_lock", c.cond_mutex);
	CHECK_STR(cb, "big_cond mutex=big_lock");
	wp_wait_describe(&c, WP_WAIT_CONDITION, NULL, "consumer", NULL, cb, sizeof(cb));
	wp_wait_add_mutex(cb, sizeof(cb), NULL, c.cond_mutex);
	CHECK_STR(cb, "0x5600001028 in consumer mutex=0x5600002000");
	wp_wait_describe(&c, WP_WAIT_CONDITION, "q", NULL, NULL, cb, sizeof(cb));
	wp_wait_add_mutex(cb, sizeof(cb), "queues+0x40", c.cond_mutex);
	CHECK_STR(cb, "q mutex=queues");
	char tiny[8] = "abcdef";
	wp_wait_add_mutex(tiny, sizeof(tiny), "big_lock", 1); /* truncated, NUL-terminated */
	CHECK_STR(tiny, "abcdef ");

	struct wp_wait j = { .nr = SYS_futex, .a0 = 0x7f0000000990, .a2 = 4242, .target = "" };
	char buf[64];
	wp_wait_describe(&j, WP_WAIT_JOIN, NULL, NULL, "worker-1", buf, sizeof(buf));
	CHECK_STR(buf, "worker-1");
	wp_wait_describe(&j, WP_WAIT_JOIN, NULL, NULL, NULL, buf, sizeof(buf));
	CHECK_STR(buf, "tid=4242");

	struct wp_wait io = { .nr = SYS_read, .a0 = 4, .aux = 1234, .target = "pipe:[1234]" };
	CHECK_STR(describe(&io, NULL, NULL, NULL), "pipe:[1234]");
	io.target = "";
	CHECK_STR(describe(&io, NULL, NULL, NULL), "fd 4");
	struct wp_wait poll = { .nr = SYS_poll, .a1 = 3, .target = "" };
	CHECK_STR(describe(&poll, NULL, NULL, NULL), "poll of 3 fds");
	/* select's first argument is the highest descriptor + 1, not how many */
	struct wp_wait sel = { .nr = SYS_pselect6, .a1 = 5, .target = "" };
	CHECK_STR(describe(&sel, NULL, NULL, NULL), "pselect6 of fds < 5");
	/* over no descriptor: a sleep (PostgreSQL's pg_usleep: select(0, ..., &delay)), its
	 * timeout read by the agent into aux */
	struct wp_wait nap = { .nr = SYS_pselect6, .a1 = 0, .aux = 20000000, .target = "" };
	CHECK_INT(wp_wait_kind_of(&nap, NULL, 0), WP_WAIT_SLEEP);
	CHECK_STR(describe(&nap, NULL, NULL, NULL), "20ms");
	nap.aux = 0;
	CHECK_STR(describe(&nap, NULL, NULL, NULL), "?");
	struct wp_wait pnap = { .nr = SYS_poll, .a1 = 0, .aux = 5000000, .target = "" };
	CHECK_STR(describe(&pnap, NULL, NULL, NULL), "5ms");
	CHECK_INT(wp_wait_kind_of(&poll, NULL, 0), WP_WAIT_IO);
	struct wp_wait ren = { .nr = SYS_rename, .a0 = 0x7ffd0000, .target = "" };
	CHECK_STR(describe(&ren, NULL, NULL, NULL), "rename");
	struct wp_wait rmd = { .nr = SYS_rmdir, .a0 = 0x7ffd0000, .target = "" };
	CHECK_STR(describe(&rmd, NULL, NULL, NULL), "rmdir");
	struct wp_wait ftr = { .nr = SYS_ftruncate, .a0 = 9, .target = "/db/base/5/16400" };
	CHECK_STR(describe(&ftr, NULL, NULL, NULL), "/db/base/5/16400");
	struct wp_wait sfr = { .nr = SYS_sync_file_range, .a0 = 7, .target = "/tmp/x" };
	CHECK_STR(describe(&sfr, NULL, NULL, NULL), "/tmp/x");
	struct wp_wait ep = { .nr = SYS_epoll_pwait2, .a0 = 9, .target = "" };
	CHECK_STR(describe(&ep, NULL, NULL, NULL), "epoll fd 9");
	struct wp_wait mq = { .nr = SYS_msgrcv, .a0 = 32768, .target = "" };
	CHECK_STR(describe(&mq, NULL, NULL, NULL), "System V message queue 32768");
	struct wp_wait sem = { .nr = SYS_semtimedop, .a0 = 3, .target = "" };
	CHECK_INT(wp_wait_kind_of(&sem, NULL, 0), WP_WAIT_SEMAPHORE);
	CHECK_STR(describe(&sem, NULL, NULL, NULL), "System V semaphore set 3");

	struct wp_wait sl = { .nr = SYS_clock_nanosleep, .aux = 10000000, .target = "" };
	CHECK_STR(describe(&sl, NULL, NULL, NULL), "10ms");
	sl.aux = 1500000000;
	CHECK_STR(describe(&sl, NULL, NULL, NULL), "1.5s");
	sl.aux = 0;
	CHECK_STR(describe(&sl, NULL, NULL, NULL), "?");
	/* TIMER_ABSTIME: a deadline, the same object whatever it is (CPython's time.sleep) */
	struct wp_wait abs = { .nr = SYS_clock_nanosleep, .a0 = 1, .a1 = 1, .aux = 14815190000000,
			       .target = "" };
	CHECK_STR(describe(&abs, NULL, NULL, NULL), "until a CLOCK_MONOTONIC deadline");
	abs.aux = 0;
	CHECK_STR(describe(&abs, NULL, NULL, NULL), "until a CLOCK_MONOTONIC deadline");
	abs.a0 = 5;
	CHECK_STR(describe(&abs, NULL, NULL, NULL), "until a deadline on clock 5");

	struct wp_wait ch = { .nr = SYS_wait4, .a0 = 321, .target = "" };
	CHECK_STR(describe(&ch, NULL, NULL, NULL), "pid 321");
	ch.a0 = (uint64_t)-1;
	CHECK_STR(describe(&ch, NULL, NULL, NULL), "any");
	/* a parent asleep in vfork (or posix_spawn's clone3) waits for its child to exec */
	CHECK_INT(wp_wait_classify(SYS_vfork, NULL, 0), WP_WAIT_CHILD);
	CHECK_INT(wp_wait_classify(SYS_clone3, NULL, 0), WP_WAIT_CHILD);
	struct wp_wait vf = { .nr = SYS_vfork, .target = "" };
	CHECK_STR(describe(&vf, NULL, NULL, NULL), "vfork");

	struct wp_wait other = { .nr = 9999, .target = "" };
	CHECK_STR(describe(&other, NULL, NULL, NULL), "syscall 9999");

	struct wp_wait cpu = { .nr = WP_WAIT_NR_CPU, .target = "" };
	CHECK_STR(describe(&cpu, NULL, NULL, NULL), "runqueue");
	struct wp_wait disk = { .nr = WP_WAIT_NR_DISK, .a0 = ~0ull, .target = "" };
	CHECK_STR(describe(&disk, NULL, NULL, NULL), "page fault");
	disk.a0 = SYS_fsync;
	CHECK_STR(describe(&disk, NULL, NULL, NULL), "fsync");
	disk.a0 = SYS_pread64;
	disk.target = "/var/lib/x.db";
	CHECK_STR(describe(&disk, NULL, NULL, NULL), "/var/lib/x.db");

	char d[32];
	wp_wait_duration(250000, d, sizeof(d));
	CHECK_STR(d, "250us");
	wp_wait_duration(800, d, sizeof(d));
	CHECK_STR(d, "800ns");
	wp_wait_duration(2000000000, d, sizeof(d));
	CHECK_STR(d, "2s");
}

/* Agents since issue 13's io objects describe sets and children in the target; a pipe end's
 * object gets the threads seen blocked on its other end. */
static void test_described_targets(void)
{
	struct wp_wait poll = { .nr = SYS_poll, .a1 = 2,
				.target = "poll pipe:[12] read end (write end fd 4), socket:[34] udp 127.0.0.1:53" };
	CHECK_STR(describe(&poll, NULL, NULL, NULL), poll.target);
	struct wp_wait ch = { .nr = SYS_wait4, .a0 = 321, .target = "pid 321 (sleep)" };
	CHECK_STR(describe(&ch, NULL, NULL, NULL), "pid 321 (sleep)");

	uint64_t ino = 0;
	struct wp_wait r = { .nr = SYS_read, .target = "pipe:[1234] read end (write end fd 4)" };
	CHECK_INT(wp_wait_pipe_end(&r, &ino), 1);
	CHECK_EQ_U(ino, 1234);
	struct wp_wait w = { .nr = SYS_write, .target = "pipe:[77] write end" };
	CHECK_INT(wp_wait_pipe_end(&w, &ino), 2);
	CHECK_EQ_U(ino, 77);
	struct wp_wait bare = { .nr = SYS_read, .target = "pipe:[77]" };
	CHECK_INT(wp_wait_pipe_end(&bare, &ino), 0);
	struct wp_wait sock = { .nr = SYS_read, .target = "socket:[77] tcp 1.2.3.4:5 -> 6.7.8.9:10" };
	CHECK_INT(wp_wait_pipe_end(&sock, &ino), 0);

	char obj[128] = "pipe:[1234] read end (write end fd 4)";
	wp_wait_pipe_used_by(obj, sizeof(obj), "writer tid=77");
	CHECK_STR(obj, "pipe:[1234] read end (write end fd 4, seen blocked on it: writer tid=77)");
	char obj2[128] = "pipe:[1234] read end";
	wp_wait_pipe_used_by(obj2, sizeof(obj2), "writer tid=77");
	CHECK_STR(obj2, "pipe:[1234] read end (other end seen blocked on it: writer tid=77)");
	char small[24] = "pipe:[1] read end (x)";
	wp_wait_pipe_used_by(small, sizeof(small), "a very long thread name tid=1");
	CHECK(strlen(small) < sizeof(small), "bounded: %s", small);
}

/* The C runtime, one list: glibc's files old and new, the loader, the C++ runtime, the vDSO;
 * a program's own libraries are not. */
static void test_runtime_module(void)
{
	static const char *const yes[] = { "libc.so.6", "libc-2.31.so", "libpthread.so.0",
					   "ld-linux-x86-64.so.2", "libstdc++.so.6",
					   "libgcc_s.so.1", "[vdso]" };
	static const char *const no[] = { "liblzma.so.5", "libglib-2.0.so.0", "libcrypto.so.3",
					  "myprogram", "" };
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		CHECK(wp_runtime_module(yes[i]), "%s", yes[i]);
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		CHECK(!wp_runtime_module(no[i]), "%s", no[i]);
	CHECK(!wp_runtime_module(NULL));
}

int main(void)
{
	test_classify();
	test_runtime_module();
	test_describe();
	test_described_targets();
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
