/* SPDX-License-Identifier: MIT */
/* Other threads' CPU time (clock.h). Inside the program's thread group a thread's CPU clock
 * answers; the sampler's task is outside it (task.h), where the kernel refuses another
 * group's thread clocks, so it reads /proc/PID/task/TID/schedstat, whose first field is the
 * same sum of run time, through a descriptor kept per thread (one pread, ~1 us, instead of an
 * open, a read and a close). The descriptors live on the task's own table. */
#include "clock.h"

#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "log.h"
#include "task.h"

#define SLOTS 1024u /* descriptors kept; a thread past them is opened for each read */
#define PROBE 8u

struct slot {
	pid_t tid;
	int fd;
};

static struct slot slots[SLOTS];
static int outside;

void wp_cpuclock_outside(int o)
{
	outside = o;
}

void wp_cpuclock_forget(void)
{
	for (unsigned i = 0; i < SLOTS; i++)
		slots[i].tid = 0; /* the numbers were the parent task's: nothing to close here */
}

static int open_schedstat(pid_t tid)
{
	char path[64];
	wp_format(path, sizeof(path), "/proc/%d/task/%d/schedstat", (int)wp_task_program_pid(),
		  (int)tid);
	return open(path, O_RDONLY | O_CLOEXEC);
}

static int64_t read_schedstat(int fd)
{
	char buf[96];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return -1;
	int64_t v = 0;
	ssize_t i = 0;
	for (; i < n && buf[i] >= '0' && buf[i] <= '9'; i++)
		v = v * 10 + (buf[i] - '0');
	return i ? v : -1;
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
	close(home->fd);
	home->tid = 0;
	return home;
}

static int64_t schedstat_ns(pid_t tid)
{
	struct slot *s = slot_for(tid);
	if (s->tid == tid) {
		int64_t v = read_schedstat(s->fd);
		if (v >= 0)
			return v;
		/* ended; or a new thread took the number: open it once more */
		close(s->fd);
		s->tid = 0;
	}
	int fd = open_schedstat(tid);
	if (fd < 0)
		return -1;
	int64_t v = read_schedstat(fd);
	if (v < 0) {
		close(fd);
		return -1;
	}
	s->tid = tid;
	s->fd = fd;
	return v;
}

int64_t wp_thread_cpu_ns(pid_t tid)
{
	if (outside)
		return schedstat_ns(tid);
	struct timespec ts;
	if (clock_gettime(wp_thread_cpu_clock(tid), &ts) != 0)
		return -1;
	return (int64_t)wp_ts_ns(&ts);
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
