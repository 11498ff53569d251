/* SPDX-License-Identifier: MIT */
#include "threads.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../common/format.h"
#include "clock.h"
#include "pages.h"
#include "task.h"
#include "fds.h"
#include "log.h"
#include "modules.h"
#include "sampler.h"

struct linux_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

static int task_fd = -1;
static struct wp_fd_id task_id; /* to notice the program closing or reusing it (fallback) */
static pid_t sampler_tid;
static struct wp_athread *by_tid;      /* every kept thread, uthash by tid */
static struct wp_athread **live;
static size_t nlive, caplive;
static unsigned gen;
static nlink_t last_nlink;
static uint64_t last_list_ns;
static uint64_t relist_cost_ns; /* the sampler CPU time the last relist took */
static uint64_t seen_total;
static char dents[1 << 16] WP_BIG;

/* The end of the program's threads (see wp_threads_program_left). The leader is the thread
 * whose tid is the pid: the main thread, or in a fork child the thread that forked. */
#define LEADER_PERIOD_NS WP_RELIST_NS       /* periodic look at an idle leader */
#define LEADER_AGAIN_NS (10 * 1000000ull)   /* ... again, when it had just run */
#define LEADER_FIRST_GAP_NS (1000000ull)    /* after pthread_exit: 1, 2, 4... ms */
#define LAST_THREAD_LOOK_NS (20 * 1000000ull) /* leader gone: how soon the last thread's end is seen */
static pid_t leader;
static int leader_dead;              /* seen a zombie: it never runs again */
static _Atomic pid_t leaving_pid;    /* the pid whose leader called pthread_exit */
static uint64_t leaving_gap, leaving_look_at;
static uint64_t periodic_look_at;
static int periodic_again;
static int64_t leader_cpu_at_look = -1;
static nlink_t nlink_at_look;
static uint64_t last_look_ns;
static int program_left = 1;

/* Fixed tables: written by the program's threads through the API, read by the sampler, so
 * entries are claimed with a CAS and never move. */
#define NPICKS 256
static _Atomic pid_t excluded[NPICKS];
static struct {
	_Atomic pid_t tid;
	char name[16];
} named[NPICKS] WP_BIG;

int wp_threads_exclude(pid_t tid, int exclude)
{
	for (int i = 0; i < NPICKS; i++)
		if (atomic_load(&excluded[i]) == tid) {
			if (!exclude)
				atomic_store(&excluded[i], 0);
			return 0;
		}
	if (!exclude)
		return 0;
	for (int i = 0; i < NPICKS; i++) {
		pid_t zero = 0;
		if (atomic_compare_exchange_strong(&excluded[i], &zero, tid))
			return 0;
	}
	return -ENOSPC;
}

/* The thread that asked the sampler to stop (sampler.c): from then on it waits in the
 * agent's own code (a futex of ours, maybe inside the agent's fatal-signal handler), and a
 * sample taken later in the tick under way would make that wait its last one: its LAST
 * record a futex of the agent's instead of the program's (test_deadlock's main, found
 * "blocked in futex, 0" instead of joining, once in a clean run). Not sampled from then on,
 * like an excluded thread: its last sample stays the program's. */
static _Atomic pid_t stopping;

void wp_threads_set_stopping(pid_t tid)
{
	atomic_store(&stopping, tid);
}

int wp_threads_is_excluded(pid_t tid)
{
	if (tid && tid == atomic_load(&stopping))
		return 1;
	for (int i = 0; i < NPICKS; i++)
		if (atomic_load(&excluded[i]) == tid)
			return 1;
	return 0;
}

static const char *name_override(pid_t tid)
{
	for (int i = 0; i < NPICKS; i++)
		if (atomic_load(&named[i].tid) == tid)
			return named[i].name;
	return NULL;
}

int wp_threads_set_name(pid_t tid, const char *name)
{
	for (int i = 0; i < NPICKS; i++)
		if (atomic_load(&named[i].tid) == tid) {
			if (!name) {
				atomic_store(&named[i].tid, 0);
				return 0;
			}
			snprintf(named[i].name, sizeof(named[i].name), "%s", name);
			return 0;
		}
	if (!name)
		return 0;
	for (int i = 0; i < NPICKS; i++) {
		pid_t zero = 0;
		/* claim with an impossible tid, fill in the name, then publish */
		if (atomic_compare_exchange_strong(&named[i].tid, &zero, -1)) {
			snprintf(named[i].name, sizeof(named[i].name), "%s", name);
			atomic_store(&named[i].tid, tid);
			return 0;
		}
	}
	return -ENOSPC;
}

ssize_t wp_threads_read_proc(pid_t tid, const char *file, char *buf, size_t cap)
{
	char path[80];
	/* Relative to the task directory we hold: no lookup of /proc/self/task each time. Before
	 * the first tick there is none (sampler.c): the whole path then (a process that ended
	 * before its first tick, asked how it ended). */
	if (task_fd >= 0)
		wp_format(path, sizeof(path), "%d/%s", tid, file);
	else
		wp_format(path, sizeof(path), "/proc/%d/task/%d/%s", (int)wp_task_program_pid(),
			  tid, file);
	int fd = openat(task_fd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, cap - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = 0;
	return n;
}

char wp_threads_state(pid_t tid)
{
	char buf[512];
	if (wp_threads_read_proc(tid, "stat", buf, sizeof(buf)) <= 0)
		return 0;
	char *p = strrchr(buf, ')'); /* the name may contain anything, but not after its ')' */
	return p && p[1] == ' ' ? p[2] : 0;
}

void wp_threads_reread_name(struct wp_athread *t)
{
	const char *over = name_override(t->tid);
	if (over) {
		snprintf(t->name, sizeof(t->name), "%s", over);
		return;
	}
	ssize_t n = wp_threads_read_proc(t->tid, "comm", t->name, sizeof(t->name));
	if (n <= 0)
		return;
	if (t->name[n - 1] == '\n')
		n--;
	t->name[n] = 0;
}

static struct wp_athread *add(pid_t tid, uint64_t rel_ns)
{
	struct wp_athread *t = wp_task_calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->tid = tid;
	t->last_cpu.ns = -1;
	t->poll_cpu_ns = -1;
	t->first_ns = t->last_ns = rel_ns;
	HASH_ADD_INT(by_tid, tid, t);
	seen_total++;
	return t;
}

static int push_live(struct wp_athread *t)
{
	if (nlive == caplive) {
		size_t n = caplive ? caplive * 2 : 64;
		struct wp_athread **l = wp_task_realloc(live, n * sizeof(*l));
		if (!l)
			return -ENOMEM;
		live = l;
		caplive = n;
	}
	live[nlive++] = t;
	return 0;
}

static void forget_or_keep(struct wp_athread *t)
{
	t->alive = 0;
	t->flags |= WP_THREAD_EXITED;
	if (t->samples == 0 && !t->lock_seq && !t->pclk && !t->unseen_why) {
		/* Never sampled (lock_seq: not even as a lock holder, whose stack needs its
		 * THREAD record): nothing to report, so thousands of short-lived threads cost
		 * nothing once gone. One with a perf clock open still has records to be read
		 * (sample.c closes it, then calls wp_threads_forget_unsampled); one that ran
		 * unseen because no clock could be had has that to report. */
		HASH_DEL(by_tid, t);
		wp_task_free(t->tl);
		wp_task_free(t);
	}
}

void wp_threads_forget_unsampled(struct wp_athread *t)
{
	if (!t->alive && !t->pclk)
		forget_or_keep(t);
}

/* Whether the whole process is ending now: its leader, not a zombie (a leader that left by
 * pthread_exit is one while its threads go on), is exiting (PF_EXITING in /proc's flags,
 * field 9) or has SIGKILL pending (field 31: exit_group and fatal signals kill every thread
 * so). Unreadable: the leader is gone, and so is the process. One /proc read, made only
 * when threads vanished. */
#define PF_EXITING_FLAG 0x4u
static int process_ending(void)
{
	char buf[1024];
	if (wp_threads_read_proc(leader, "stat", buf, sizeof(buf)) <= 0)
		return 1;
	char *p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X')
		return 0;
	unsigned long long field[32] = { 0 };
	int k = 3;
	for (p += 3; *p && k < 31; p++)
		if (*p == ' ' && ++k < 32)
			field[k] = strtoull(p + 1, NULL, 10);
	return (field[9] & PF_EXITING_FLAG) || (field[31] & (1ull << (9 - 1)));
}

static void relist(uint64_t rel_ns)
{
	gen++;
	nlive = 0;
	if (lseek(task_fd, 0, SEEK_SET) < 0)
		return;
	for (;;) {
		long n = syscall(SYS_getdents64, task_fd, dents, sizeof(dents));
		if (n <= 0)
			break;
		for (long off = 0; off < n;) {
			struct linux_dirent64 *d = (void *)(dents + off);
			off += d->d_reclen;
			if (d->d_name[0] < '0' || d->d_name[0] > '9')
				continue;
			pid_t tid = (pid_t)strtol(d->d_name, NULL, 10);
			if (tid == sampler_tid || tid == wp_modules_watcher_tid() ||
			    tid == wp_sampler_exit_tid() ||
			    (tid == leader && leader_dead))
				continue;
			struct wp_athread *t;
			HASH_FIND_INT(by_tid, &tid, t);
			if (t && !t->alive) {
				/* A recycled tid: a new thread. Retire the old entry's tid slot. */
				HASH_DEL(by_tid, t);
				t->tid = -t->tid; /* keeps its data; never found again */
				HASH_ADD_INT(by_tid, tid, t);
				t = NULL;
			}
			if (!t && !(t = add(tid, rel_ns)))
				continue;
			t->alive = 1;
			t->seen_gen = gen;
			t->last_ns = rel_ns;
			push_live(t);
		}
	}
	struct wp_athread *t, *tmp;
	int vanished = 0;
	HASH_ITER(hh, by_tid, t, tmp)
		vanished += t->alive && t->seen_gen != gen;
	/* Threads that vanished because the whole process is ending (a SIGKILL, an exit_group
	 * our hooks did not see) died with it: they stay as they were last seen, so the profile
	 * the task writes next (program_gone) keeps their LAST records, and a deadlock the kill
	 * ended is still named. They are no longer sampled (not in `live`). */
	if (vanished && process_ending())
		return;
	HASH_ITER(hh, by_tid, t, tmp) {
		if (t->seen_gen != gen)
			forget_or_keep(t);
	}
}

int wp_threads_open(void)
{
	if (task_fd >= 0)
		return 0; /* inherited across fork: /proc/self follows whoever reads it */
	static int complained;
	char dir[32];
	wp_format(dir, sizeof(dir), "/proc/%d/task", (int)wp_task_program_pid());
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		if (!complained++)
			wp_log("cannot open %s (%s): no threads can be listed", dir,
			       strerror(e));
		return -e;
	}
	/* On the agent's own table this changes nothing; on the program's (fallback) it goes
	 * to a high number, where it does not shift the numbers the program gets. */
	task_fd = wp_fds_hide(fd);
	wp_fds_identify(task_fd, &task_id);
	return 0;
}

/* A new process (the first start, or a fork child): its own leader, alive. A restart in the
 * same process keeps what is known of the leader, which does not come back. */
static void meet_leader(void)
{
	pid_t pid = wp_task_program_pid();
	if (leader == pid)
		return;
	leader = pid;
	leader_dead = 0;
	leaving_gap = 0;
	leader_cpu_at_look = -1;
}

void wp_threads_init(pid_t self)
{
	sampler_tid = self;
	atomic_store(&stopping, 0);
	meet_leader();
	periodic_look_at = 0;
	periodic_again = 0;
	nlink_at_look = 0;
	program_left = 1;
}

/* The leader's stat line from its state on (after the name's ')', which may contain
 * anything but not after its last one), in `buf`; NULL when it cannot be read. */
static const char *leader_stat(char *buf, size_t cap)
{
	if (wp_threads_read_proc(leader, "stat", buf, cap) <= 0)
		return NULL;
	char *p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p + 2 : NULL;
}

/* Whether the leader has ended: /proc shows it a zombie (Z) until the whole process ends. Its
 * CPU clock still reads then, frozen, so the clock cannot tell an ended leader from an idle
 * one. One /proc read, ~10 us. */
static int leader_is_zombie(void)
{
	char buf[512];
	const char *f = leader_stat(buf, sizeof(buf));
	return f && (f[0] == 'Z' || f[0] == 'X'); /* unreadable (out of descriptors?): lives */
}

/* PF_EXITING (the kernel's task flag, stat's ninth field): set as a task starts to exit. */
#define WP_PF_EXITING 0x4u

int wp_threads_leader_exiting(void)
{
	char buf[512];
	unsigned long flags;
	const char *f = leader_stat(buf, sizeof(buf));
	if (!f)
		return 1; /* gone meanwhile: ending, not exec'd (an exec keeps the pid's files) */
	if (sscanf(f, "%*c %*d %*d %*d %*d %*d %lu", &flags) != 1)
		return 0;
	return (flags & WP_PF_EXITING) != 0;
}

/* The leader has ended: it is no longer sampled (in wall mode its frozen clock would count
 * its last stack again at every tick) nor listed. */
static void bury_leader(void)
{
	leader_dead = 1;
	struct wp_athread *t;
	HASH_FIND_INT(by_tid, &leader, t);
	if (t)
		wp_threads_gone(t);
	last_nlink = 0; /* relist at the next refresh, without it */
}

/* Whether to look at the leader's state now (see wp_threads_program_left for when). */
static int leader_look_due(uint64_t now, nlink_t nlink, unsigned ours)
{
	int due = 0;
	/* a thread just ended, and only the leader is left besides ours: maybe it ended too */
	if (nlink != nlink_at_look && nlink <= 3 + ours)
		due = 1;
	/* it said it is leaving; it ends after its cleanup handlers and TLS destructors */
	if (atomic_load(&leaving_pid) == leader) {
		if (!leaving_gap) {
			leaving_gap = LEADER_FIRST_GAP_NS;
			leaving_look_at = now + leaving_gap;
		} else if (now >= leaving_look_at) {
			due = 1;
			if (leaving_gap < LEADER_PERIOD_NS)
				leaving_gap *= 2;
			leaving_look_at = now + leaving_gap;
		}
	}
	/* it may also end without a word (cancelled, or returning from its start routine in a
	 * fork child): look every 250 ms when its clock stands still. One that ran since the
	 * last look is given a second chance 10 ms later, so an end is seen within 260 ms
	 * while a busy leader costs two clock reads per period and no /proc read. */
	if (now >= periodic_look_at) {
		int64_t cpu = wp_thread_cpu_ns(leader);
		int still = cpu < 0 || cpu == leader_cpu_at_look;
		int again = !still && !periodic_again;
		due |= still;
		periodic_again = again;
		periodic_look_at = now + (again ? LEADER_AGAIN_NS : LEADER_PERIOD_NS);
		leader_cpu_at_look = cpu;
	}
	return due;
}

/* After each fstat of /proc/self/task: its link count is the number of threads + 2, the
 * leader included until the process ends (a zombie), ours included. */
static void look_for_the_end(uint64_t now, nlink_t nlink)
{
	/* the exit thread; the sampler and the watcher when the sampler is a thread of the
	 * program's (on its own task, neither is listed here) */
	unsigned ours = (wp_sampler_exit_tid() != 0) +
			(wp_sampler_on_task() ? 0 : 1 + (wp_modules_watcher_tid() != 0));
	if (!leader_dead && leader_look_due(now, nlink, ours) && leader_is_zombie())
		bury_leader();
	nlink_at_look = nlink;
	last_look_ns = now;
	program_left = nlink > 2 + ours + (unsigned)leader_dead;
}

int wp_threads_program_left(void)
{
	return program_left;
}

uint64_t wp_threads_next_look(void)
{
	if (leader_dead)
		return last_look_ns + LAST_THREAD_LOOK_NS;
	uint64_t at = periodic_look_at;
	if (leaving_gap && leaving_look_at < at)
		at = leaving_look_at;
	if (atomic_load(&leaving_pid) == leader && !leaving_gap)
		at = 0; /* it just said so: schedule the looks */
	return at;
}

int wp_threads_leader_left(void)
{
	return leader_dead || atomic_load(&leaving_pid) == leader || leader_is_zombie();
}

void wp_threads_leader_leaving(pid_t pid)
{
	atomic_store(&leaving_pid, pid);
}

int wp_threads_refresh(uint64_t now_ns, uint64_t run_start_ns)
{
	struct stat st;
	if (task_fd >= 0 && !wp_fds_still_ours(task_fd, &task_id)) {
		/* The program closed or reused it (only possible on its table): never touch that
		 * number again. */
		task_fd = -1;
		last_nlink = 0;
	}
	if (task_fd < 0)
		wp_threads_open();
	if (task_fd < 0 || fstat(task_fd, &st) != 0)
		return 0;
	look_for_the_end(now_ns, st.st_nlink);
	/* A birth or death changes the link count, which one fstat sees. The periodic relist
	 * only catches a birth and a death in the same tick. A relist costs O(threads) (about
	 * 2 us per thread), so it is rationed by what the last one cost: at most 1% of the time
	 * for births and deaths, 0.2% for the periodic check. A thread born meanwhile is
	 * sampled from the next relist on. */
	uint64_t since = now_ns - last_list_ns;
	uint64_t period = WP_RELIST_NS > 500 * relist_cost_ns ? WP_RELIST_NS : 500 * relist_cost_ns;
	if (since < 100 * relist_cost_ns || (st.st_nlink == last_nlink && since < period))
		return 0;
	last_nlink = st.st_nlink;
	last_list_ns = now_ns;
	uint64_t c0 = wp_self_cpu_ns();
	relist(now_ns - run_start_ns);
	relist_cost_ns = wp_self_cpu_ns() - c0;
	return 1;
}

struct wp_athread **wp_threads_live(size_t *n)
{
	*n = nlive;
	return live;
}

struct wp_athread *wp_threads_all(void)
{
	return by_tid;
}

void wp_threads_gone(struct wp_athread *t)
{
	/* Stays in `live` until the next relist; the sampler skips it meanwhile. Forcing a
	 * relist soon keeps the live array short. */
	t->alive = 0;
	t->flags |= WP_THREAD_EXITED;
	last_nlink = 0;
}

uint64_t wp_threads_seen(void)
{
	return seen_total;
}

static struct {
	struct wp_athread *by_tid, **live;
} abandoned; /* reachable for leak checkers; never touched */

void wp_threads_reset(int abandon)
{
	struct wp_athread *t, *tmp;
	if (abandon) {
		abandoned.by_tid = by_tid;
		abandoned.live = live;
		by_tid = NULL;
		live = NULL;
		caplive = 0;
	}
	HASH_ITER(hh, by_tid, t, tmp) {
		HASH_DEL(by_tid, t);
		wp_task_free(t->tl);
		wp_task_free(t);
	}
	nlive = 0;
	last_nlink = 0;
	last_list_ns = 0;
	relist_cost_ns = 0;
	seen_total = 0;
	/* The child's new sampler opens the child's own task directory (the inherited one names
	 * the parent's). On the agent's own table the number means nothing here: the table
	 * stayed with the parent's sampler, and in the child that number may be the program's. */
	if (task_fd >= 0 && !wp_fds_private())
		close(task_fd);
	task_fd = -1;
}
