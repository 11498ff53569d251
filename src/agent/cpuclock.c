/* SPDX-License-Identifier: MIT */
/* Other threads' CPU time (clock.h). Inside the program's thread group a thread's CPU clock
 * answers; the sampler's task is outside it (task.h), where the kernel refuses another
 * group's thread clocks, so it reads /proc/PID/task/TID/schedstat, whose first field is the
 * same sum of run time, through a descriptor kept per thread (one pread, ~1 us, instead of an
 * open, a read and a close). The descriptors live on the task's own table.
 *
 * That sum is brought up to date only at the scheduler's ticks, at switches and when the
 * thread reads its own clock: a thread on a CPU for less than a tick since any of those shows
 * no change. So from the task a reading also carries schedstat's third field (pcount: the
 * times the thread was put on a CPU), and a reading that may have been taken while the thread
 * was on a CPU (its own, in our handler; one taken before it was known to be off a CPU) is
 * marked: unchanged since such a reading does not mean it has not run (wp_cpu_unmoved). And
 * whether a thread is running now is its state letter, from /proc/PID/task/TID/stat through a
 * second descriptor kept in the same slot (wp_thread_runnable; for up to STAT_KEPT threads),
 * not the clock moving between two reads. */
#include "clock.h"

#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "log.h"
#include "pages.h"
#include "task.h"

#define SLOTS 1024u /* descriptors kept; a thread past them is opened for each read */
#define PROBE 8u
/* stat descriptors kept (wp_thread_runnable), at most: beside one schedstat descriptor per
 * thread, not two per thread against a common limit of 1,024; a thread past them has its
 * stat opened for each look */
#define STAT_KEPT 256u

struct slot {
	pid_t tid;
	int fd;      /* schedstat */
	int stat_fd; /* stat, opened at the first wp_thread_runnable (-1: not yet) */
};

static struct slot slots[SLOTS] WP_BIG;
static unsigned stat_kept;
static int outside;

void wp_cpuclock_outside(int o)
{
	outside = o;
}

void wp_cpuclock_forget(void)
{
	/* the numbers were the parent task's: nothing to close here (written only where set:
	 * each page written is a page a fork child copies) */
	for (unsigned i = 0; i < SLOTS; i++)
		if (slots[i].tid)
			slots[i].tid = 0;
	stat_kept = 0;
}

int wp_cpuclock_lags(void)
{
	return outside;
}

static int open_task_file(pid_t tid, const char *file)
{
	char path[64];
	wp_format(path, sizeof(path), "/proc/%d/task/%d/%s", (int)wp_task_program_pid(), (int)tid,
		  file);
	return open(path, O_RDONLY | O_CLOEXEC);
}

/* "SUM RUN_DELAY PCOUNT": the first and the third into *r. 0, or -1 when unreadable. */
static int read_schedstat(int fd, struct wp_cpu_reading *r)
{
	char buf[96];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return -1;
	uint64_t f[3] = { 0, 0, 0 };
	ssize_t i = 0;
	for (int k = 0; k < 3; k++) {
		ssize_t from = i;
		for (; i < n && buf[i] >= '0' && buf[i] <= '9'; i++)
			f[k] = f[k] * 10 + (uint64_t)(buf[i] - '0');
		if (i == from)
			return -1;
		if (k < 2 && (i >= n || buf[i++] != ' '))
			return -1;
	}
	r->ns = (int64_t)f[0];
	r->runs = f[2];
	r->maybe_on_cpu = 0;
	return 0;
}

static void close_stat(struct slot *s)
{
	if (s->stat_fd < 0)
		return;
	close(s->stat_fd);
	s->stat_fd = -1;
	stat_kept--;
}

static void empty_slot(struct slot *s)
{
	close(s->fd);
	close_stat(s);
	s->tid = 0;
}

/* The slot that holds `tid`, or the one to put it in (its home when the probe is full). */
static struct slot *slot_for(pid_t tid)
{
	unsigned h = ((unsigned)tid * 2654435761u) % SLOTS;
	struct slot *free_slot = NULL;
	for (unsigned i = 0; i < PROBE; i++) {
		struct slot *s = &slots[(h + i) % SLOTS];
		if (s->tid == tid)
			return s;
		if (!s->tid && !free_slot)
			free_slot = s;
	}
	if (free_slot)
		return free_slot;
	struct slot *home = &slots[h];
	empty_slot(home);
	return home;
}

/* `tid`'s slot with its schedstat descriptor open (NULL when it cannot be opened: ended),
 * and its reading in *r. */
static struct slot *schedstat_read(pid_t tid, struct wp_cpu_reading *r)
{
	struct slot *s = slot_for(tid);
	if (s->tid == tid) {
		if (read_schedstat(s->fd, r) == 0)
			return s;
		/* ended; or a new thread took the number: open it once more */
		empty_slot(s);
	}
	int fd = open_task_file(tid, "schedstat");
	if (fd < 0)
		return NULL;
	if (read_schedstat(fd, r) != 0) {
		close(fd);
		return NULL;
	}
	s->tid = tid;
	s->fd = fd;
	s->stat_fd = -1;
	return s;
}

int64_t wp_thread_cpu_read(pid_t tid, struct wp_cpu_reading *r)
{
	r->ns = -1;
	r->runs = 0;
	r->maybe_on_cpu = 0;
	if (outside) {
		if (!schedstat_read(tid, r))
			r->ns = -1;
		return r->ns;
	}
	struct timespec ts;
	if (clock_gettime(wp_thread_cpu_clock(tid), &ts) == 0)
		r->ns = (int64_t)wp_ts_ns(&ts);
	return r->ns;
}

int64_t wp_thread_cpu_ns(pid_t tid)
{
	struct wp_cpu_reading r;
	return wp_thread_cpu_read(tid, &r);
}

int wp_cpu_unmoved(const struct wp_cpu_reading *then, const struct wp_cpu_reading *now)
{
	if (then->ns < 0 || now->ns != then->ns)
		return 0;
	if (!outside)
		return 1; /* the thread's own clock: it moves whenever the thread runs */
	/* schedstat: put on a CPU since (pcount), or on one then and maybe ever since without a
	 * tick (its sum not brought up to date) */
	return now->runs == then->runs && !then->maybe_on_cpu;
}

/* The state letter in a stat line ("PID (NAME) S ..."), 0 when there is none. */
static char state_of(const char *buf, ssize_t n)
{
	const char *p = NULL;
	for (ssize_t i = 0; i < n; i++)
		if (buf[i] == ')')
			p = buf + i; /* the name may hold anything, but not after its last ')' */
	return p && p + 2 < buf + n && p[1] == ' ' ? p[2] : 0;
}

int wp_thread_runnable(pid_t tid)
{
	char buf[512];
	for (int attempt = 0; attempt < 2; attempt++) {
		struct slot *s = slot_for(tid);
		struct wp_cpu_reading r;
		if (s->tid != tid && !(s = schedstat_read(tid, &r)))
			return -1; /* ended */
		if (s->stat_fd < 0 && stat_kept < STAT_KEPT) {
			s->stat_fd = open_task_file(tid, "stat");
			stat_kept += s->stat_fd >= 0;
		}
		int fd = s->stat_fd >= 0 ? s->stat_fd : open_task_file(tid, "stat");
		if (fd < 0)
			return -1;
		ssize_t n = pread(fd, buf, sizeof(buf), 0);
		if (fd != s->stat_fd)
			close(fd);
		if (n > 0) {
			char state = state_of(buf, n);
			return state ? state == 'R' : -1;
		}
		empty_slot(s); /* ended; or a new thread took the number: open it once more */
	}
	return -1;
}

/* The CPU clock of a whole process (CPUCLOCK_SCHED, per process), readable from outside it. */
static clockid_t process_clock(pid_t pid)
{
	return (clockid_t)((~(unsigned)pid << 3) | 2u);
}

/* Fields 14 and 15 of /proc/PID/stat, in clock ticks: only their ratio is used. */
static int stat_user_sys(pid_t pid, uint64_t *user, uint64_t *sys)
{
	char path[40], buf[1024];
	wp_format(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	char *p = strrchr(buf, ')'); /* the name may hold anything, but not after its ')' */
	if (!p)
		return -1;
	uint64_t f[16] = { 0 };
	int field = 2; /* ')' ends field 2 */
	for (p++; *p && field <= 15; p++) {
		if (*p == ' ') {
			field++;
			continue;
		}
		if (*p >= '0' && *p <= '9')
			f[field] = f[field] * 10 + (uint64_t)(*p - '0');
	}
	*user = f[14];
	*sys = f[15];
	return field >= 15 ? 0 : -1;
}

uint64_t wp_program_cpu_total(pid_t pid)
{
	struct timespec ts;
	clockid_t c = getpid() == pid ? CLOCK_PROCESS_CPUTIME_ID : process_clock(pid);
	return clock_gettime(c, &ts) == 0 ? wp_ts_ns(&ts) : 0;
}

int wp_program_cpu(pid_t pid, uint64_t *user_ns, uint64_t *sys_ns)
{
	*user_ns = *sys_ns = 0;
	if (getpid() == pid) {
		struct rusage ru;
		if (getrusage(RUSAGE_SELF, &ru) != 0)
			return -1;
		*user_ns = (uint64_t)ru.ru_utime.tv_sec * 1000000000ull +
			   (uint64_t)ru.ru_utime.tv_usec * 1000;
		*sys_ns = (uint64_t)ru.ru_stime.tv_sec * 1000000000ull +
			  (uint64_t)ru.ru_stime.tv_usec * 1000;
		return 0;
	}
	/* From the sampler's task: the exact total, split as /proc's tick counts split it. */
	struct timespec ts;
	if (clock_gettime(process_clock(pid), &ts) != 0)
		return -1;
	uint64_t total = wp_ts_ns(&ts), u = 0, s = 0;
	if (stat_user_sys(pid, &u, &s) == 0 && u + s > 0) {
		*sys_ns = (uint64_t)((double)total * (double)s / (double)(u + s));
		*user_ns = total - *sys_ns;
	} else {
		*user_ns = total;
	}
	return 0;
}
