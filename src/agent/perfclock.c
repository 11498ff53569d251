/* SPDX-License-Identifier: MIT */
/* A perf software clock per thread that blocks the sampling signal: perfclock.h says what and
 * why. */
#include "perfclock.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "pages.h"

/* Threads with a clock open at once. Each costs its ring (below): 256 of them, 33 MiB. */
#define NSLOTS 256
/* The ring's data area, in pages (a power of two), and a smaller one to try when the first is
 * refused (the locked-memory limit: perf counts rings against RLIMIT_MEMLOCK beyond
 * kernel.perf_event_mlock_kb per CPU). A record is the stack copy plus ~180 bytes: 128 KiB
 * hold 3 records of 32 KiB stacks, three ticks' worth for a thread that runs all the time
 * (the clock's period is the sampling interval); a record lost to a full ring costs no time,
 * only a stack (each record's clock count says how much CPU time passed since the one
 * before). */
#define DATA_PAGES 32
#define DATA_PAGES_MIN 16
/* How long to wait before trying again for a thread when opening failed for it alone (out of
 * descriptors, memory, slots). */
#define RETRY_NS (1000 * 1000000ull)

struct slot {
	struct wp_athread *t; /* NULL: free */
	struct wp_perf_ring ring;
	uint64_t count;       /* the clock's count at the last record read (cpu mode) */
};

static struct slot slots[NSLOTS] WP_BIG;
static int no_perf; /* WALLPROF_TEST_NO_PERF */
static uint64_t interval_ns;
static size_t page;
static uint64_t opened, records, lost, open_now;
/* A refusal that would be the same for every thread (a reason index, below): not tried again. */
static uint8_t refused;
/* A record that wraps around the end of the ring is copied here to be read in one piece
 * (a record is at most 64 KiB: its size is a u16). */
static uint8_t scratch[1 << 16] WP_BIG;

/* Reasons, one line each, built when first met (errno text and the settings that explain it);
 * a thread keeps an index (1..). */
#define NREASONS 8
static char reasons[NREASONS][200];

static uint8_t reason(const char *line)
{
	size_t i = 0;
	for (; i < NREASONS && reasons[i][0]; i++)
		if (!strcmp(reasons[i], line))
			return (uint8_t)(i + 1);
	if (i == NREASONS)
		i = NREASONS - 1; /* one more kind than ever seen: the last one stands for it */
	wp_format(reasons[i], sizeof(reasons[i]), "%s", line);
	return (uint8_t)(i + 1);
}

/* kernel.perf_event_paranoid, -100 when unreadable. Read at a refusal only. */
static long paranoid(void)
{
	char buf[32];
	int fd = open("/proc/sys/kernel/perf_event_paranoid", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -100;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -100;
	buf[n] = 0;
	return strtol(buf, NULL, 10);
}

/* Whether the calling thread (the sampler) runs under a seccomp filter. A filter may kill the
 * process for a call it does not allow (SECCOMP_RET_KILL_PROCESS, or SIGSYS: systemd's
 * SystemCallFilter= does so by default), and perf_event_open is seldom allowed, so it is not
 * tried there. From the sampler's own status (/proc/thread-self: the sampler's wherever it
 * lives), read before each open: a program may put a filter on every thread at any time
 * (SECCOMP_FILTER_FLAG_TSYNC), ours included. */
int wp_seccomp_filtered(void)
{
	char buf[4096];
	int fd = open("/proc/thread-self/status", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	const char *p = strstr(buf, "\nSeccomp:");
	return p && strtol(p + 9, NULL, 10) == 2;
}

void wp_pclk_begin(const struct wp_config *c, uint64_t every_ns)
{
	no_perf = c->test_no_perf;
	interval_ns = every_ns;
	long p = sysconf(_SC_PAGESIZE);
	page = p > 0 ? (size_t)p : 4096;
}

static int open_event(pid_t tid)
{
	struct perf_event_attr a;
	wp_perf_attr(&a, interval_ns, (uint32_t)(DATA_PAGES * page), 1);
	return (int)syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

static uint8_t open_refusal(int e)
{
	char line[200];
	const char *what = strerror(e);
	if (e == EACCES || e == EPERM)
		wp_format(line, sizeof(line), "perf_event_open refused: %s (kernel.perf_event_paranoid "
			  "is %ld; above 2 needs CAP_PERFMON)", what, paranoid());
	else if (e == ENOSYS)
		wp_format(line, sizeof(line), "perf_event_open: %s (no perf events in this kernel, "
			  "or a seccomp filter refuses the call)", what);
	else
		wp_format(line, sizeof(line), "perf_event_open: %s (this kernel cannot sample user "
			  "stacks with a software clock)", what);
	return reason(line);
}

int wp_pclk_open(struct wp_athread *t, uint64_t now)
{
	if (t->pclk)
		return 0;
	if (no_perf) {
		/* WALLPROF_TEST=no-perf: as where the kernel refuses, so a test sees the report */
		t->unseen_why = reason("perf events turned off (WALLPROF_TEST=no-perf)");
		return -EPERM;
	}
	if (refused) {
		t->unseen_why = refused;
		return -EPERM;
	}
	if (now < t->pclk_retry_at)
		return -EAGAIN;
	t->pclk_retry_at = now + RETRY_NS;
	size_t i = 0;
	while (i < NSLOTS && slots[i].t)
		i++;
	char line[200];
	if (i == NSLOTS) {
		wp_format(line, sizeof(line), "more than %d threads blocked the signal at once",
			  NSLOTS);
		t->unseen_why = reason(line);
		return -ENOSPC;
	}
	if (wp_seccomp_filtered()) {
		refused = reason("perf_event_open not tried: a seccomp filter is in force (it may "
				 "kill the process for a call it does not allow)");
		t->unseen_why = refused;
		return -EPERM;
	}
	int fd = open_event(t->tid);
	if (fd < 0) {
		int e = errno;
		if (e == ESRCH)
			return -e; /* it has ended */
		if (e == EMFILE || e == ENFILE || e == ENOMEM) {
			wp_format(line, sizeof(line), "perf_event_open: %s", strerror(e));
			t->unseen_why = reason(line);
			return -e;
		}
		refused = open_refusal(e);
		t->unseen_why = refused;
		return -e;
	}
	/* The ring: the header page, then the data area (perfring.h). */
	struct wp_perf_ring ring;
	int e = -wp_perf_ring_map(fd, page, DATA_PAGES, DATA_PAGES_MIN, &ring);
	/* The mapping holds the event; no descriptor of ours needs to stay in any table. */
	close(fd);
	if (e) {
		wp_format(line, sizeof(line), "its perf ring buffer could not be mapped: %s (the "
			  "locked-memory limit, ulimit -l)", strerror(e));
		t->unseen_why = reason(line);
		return -e;
	}
	slots[i] = (struct slot){ .t = t, .ring = ring };
	t->pclk = (int)i + 1;
	t->pclk_unblocked = 0;
	/* (an earlier failure's reason stays: the time it ran unseen then is still unseen) */
	opened++;
	open_now++;
	return 0;
}

void wp_pclk_close(struct wp_athread *t)
{
	if (!t->pclk)
		return;
	struct slot *s = &slots[t->pclk - 1];
	wp_perf_ring_unmap(&s->ring);
	memset(s, 0, sizeof(*s));
	t->pclk = 0;
	open_now--;
}

static const uint8_t *ring_at(const struct slot *s, uint64_t pos, size_t len)
{
	return wp_perf_ring_at(&s->ring, pos, len, scratch);
}

/* Walks t's records from the tail: cpu mode hands each sample to fn and drops it (at most
 * `max`); wall mode (fn NULL) drops all but the newest sample and parses that one into `r`. */
static size_t walk(struct wp_athread *t, size_t max, wp_pclk_fn *fn, void *arg,
		   struct wp_pclk_rec *newest, int *found)
{
	struct slot *s = &slots[t->pclk - 1];
	struct perf_event_mmap_page *mp = (void *)s->ring.map;
	uint64_t head = __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = mp->data_tail, keep = head, n = 0;
	*found = 0;
	while (tail < head && (!fn || n < max)) {
		struct perf_event_header h;
		memcpy(&h, ring_at(s, tail, sizeof(h)), sizeof(h));
		if (h.size < sizeof(h) || h.size > head - tail) {
			tail = head; /* cannot happen; never loop on it */
			break;
		}
		if (h.type == PERF_RECORD_LOST) {
			lost += wp_perf_lost(ring_at(s, tail, h.size), h.size);
		} else if (h.type == PERF_RECORD_SAMPLE) {
			if (!fn) {
				keep = tail;
			} else {
				struct wp_pclk_rec r;
				uint64_t count = 0;
				if (wp_perf_parse(ring_at(s, tail, h.size), h.size, 1, &r, &count)) {
					r.weight_ns = count > s->count ? count - s->count
								       : interval_ns;
					s->count = count;
					fn(t, &r, arg);
					records++;
					n++;
				}
			}
		}
		tail += h.size;
	}
	if (!fn && keep < head) {
		struct perf_event_header h;
		memcpy(&h, ring_at(s, keep, sizeof(h)), sizeof(h));
		uint64_t count;
		*found = wp_perf_parse(ring_at(s, keep, h.size), h.size, 1, newest, &count);
		newest->weight_ns = interval_ns; /* (the caller weighs it: a tick's weight) */
		tail = keep; /* it stays: a later tick may want it again */
	}
	__atomic_store_n(&mp->data_tail, tail, __ATOMIC_RELEASE);
	return n;
}

size_t wp_pclk_read(struct wp_athread *t, size_t max, wp_pclk_fn *fn, void *arg)
{
	int found;
	return t->pclk ? walk(t, max, fn, arg, NULL, &found) : 0;
}

int wp_pclk_newest(struct wp_athread *t, struct wp_pclk_rec *r)
{
	struct wp_pclk_rec dummy;
	int found = 0;
	if (t->pclk)
		walk(t, 0, NULL, NULL, r ? r : &dummy, &found);
	if (found && r)
		records++;
	return found;
}

size_t wp_pclk_slots(void)
{
	return NSLOTS;
}

struct wp_athread *wp_pclk_thread(size_t i)
{
	return i < NSLOTS ? slots[i].t : NULL;
}

const char *wp_pclk_why(const struct wp_athread *t)
{
	return t->unseen_why && t->unseen_why <= NREASONS ? reasons[t->unseen_why - 1] : NULL;
}

uint64_t wp_pclk_opened(void) { return opened; }
uint64_t wp_pclk_records(void) { return records; }
uint64_t wp_pclk_lost(void) { return lost; }
uint64_t wp_pclk_open_now(void) { return open_now; }

void wp_pclk_forget(void)
{
	wp_pages_zero(slots, sizeof(slots)); /* a fork child: pages.h */
	opened = records = lost = open_now = 0;
	refused = 0;
}
