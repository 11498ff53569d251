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
#include "fds.h"
#include "log.h"
#include "modules.h"

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
static char dents[1 << 16];

/* Fixed tables: written by the program's threads through the API, read by the sampler, so
 * entries are claimed with a CAS and never move. */
#define NPICKS 256
static _Atomic pid_t excluded[NPICKS];
static struct {
	_Atomic pid_t tid;
	char name[16];
} named[NPICKS];

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

int wp_threads_is_excluded(pid_t tid)
{
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
	char path[64];
	/* Relative to the task directory we hold: no lookup of /proc/self/task each time. */
	wp_format(path, sizeof(path), "%d/%s", tid, file);
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
	struct wp_athread *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->tid = tid;
	t->last_cpu_ns = -1;
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
		struct wp_athread **l = realloc(live, n * sizeof(*l));
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
	if (t->samples == 0) {
		/* Never sampled: nothing to report, so thousands of short-lived threads cost
		 * nothing once gone. */
		HASH_DEL(by_tid, t);
		free(t->tl);
		free(t);
	}
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
			if (tid == sampler_tid || tid == wp_modules_watcher_tid())
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
	int fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		if (!complained++)
			wp_log("cannot open /proc/self/task (%s): no threads can be listed",
			       strerror(e));
		return -e;
	}
	/* On the agent's own table this changes nothing; on the program's (fallback) it goes
	 * to a high number, where it does not shift the numbers the program gets. */
	task_fd = wp_fds_hide(fd);
	wp_fds_identify(task_fd, &task_id);
	return 0;
}

int wp_threads_init(pid_t self)
{
	sampler_tid = self;
	return task_fd >= 0 ? 0 : wp_threads_open();
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

void wp_threads_reset(void)
{
	struct wp_athread *t, *tmp;
	HASH_ITER(hh, by_tid, t, tmp) {
		HASH_DEL(by_tid, t);
		free(t->tl);
		free(t);
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
