/* SPDX-License-Identifier: MIT */
/* The outside sampler's ticks: osample.h says what and why. */
#include "osample.h"

#include <dirent.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent/clock.h"
#include "agent/perfring.h"
#include "agent/stacks.h"
#include "agent/unwind.h"
#include "agent/waits.h"
#include "rmodules.h"
#include "snapshot.h"

/* Each ring's data area in pages: 15 records of 32 KiB stacks (a tick may come 15 intervals
 * late on a busy machine before the kernel loses records; those lost are counted, below),
 * halved down to one record's worth when the locked-memory limit refuses. */
#define DATA_PAGES 128
#define DATA_PAGES_MIN 16
/* Bytes of a blocked thread's stack copied: deeper than a perf record's, the copy is read
 * once per wait, not once per interval. */
#define SNAP_STACK (64u << 10)
/* /proc/PID/maps is read again at most this often (a library loaded meanwhile unwinds as
 * truncated until then), and at once when a pc falls in no module. */
#define MAPS_EVERY_NS (200 * 1000000ull)
/* wall mode's armed clock: its one record comes this much of the thread's CPU time after it
 * was armed (the kernel's least period for a software clock), in a ring of this many pages
 * (one record of WP_PCLK_STACK_BYTES) */
#define PROBE_NS 10000
#define PROBE_PAGES 16

struct othread {
	struct wp_athread a; /* stacks.c and waits.c count into it */
	struct wp_perf_ring ring;
	int fd;              /* wall mode: the clock, kept to arm it (-1: none) */
	int armed;           /* wall mode: armed for one record, none read since */
	uint64_t count;      /* the clock's count at the last record */
	uint64_t lost;       /* records the kernel lost to a full ring, not yet paid out */

	uint64_t run_ns;     /* schedstat at its last fresh wall sample */
	uint64_t delay_ns;   /* schedstat's runqueue time at its last look (wall mode) */
	int64_t owed_ns;     /* runqueue time not yet given to samples as CPU waits (negative:
			      * given ahead of schedstat, which counts a wait when it ends) */
	/* wall mode: ticks that found it runnable, waiting for the record of the clock armed
	 * then (pend_cpu: those of them that are CPU waits) */
	uint32_t pend_units, pend_cpu_units;
	uint64_t pend_w, pend_cpu_w, pend_at;
	int listed;
	int clock_tried;     /* once: its clock was opened when first seen running */
	uint64_t sampled_tick; /* the tick of its latest sample */
	struct othread *next;
};

/* Waits on a lock whose holder was read this tick (waits.c calls wp_locks_owner_read): given
 * the holder's stack of the same tick at its end, as the agent's wait_locks.c does. */
#define MAX_PENDING 256
static struct pending {
	struct wp_athread *waiter;
	struct wp_wait_entry *e;
	pid_t owner;
	uint32_t units;
	uint64_t weight_ns;
} pending[MAX_PENDING];
static size_t npending;

static struct wp_osettings set;
static struct wp_ostats st;
static struct othread *threads;
static uint64_t interval_ns, start, maps_at;
static size_t page;
static uint8_t scratch[1 << 16];
static uint8_t snap_stack[SNAP_STACK];

const struct wp_ostats *wp_osample_stats(void)
{
	return &st;
}

struct wp_athread *wp_othreads_all(void)
{
	return threads ? &threads->a : NULL;
}

static void open_clock(struct othread *t, int on_exec)
{
	struct perf_event_attr a;
	wp_perf_attr(&a, interval_ns, (uint32_t)(DATA_PAGES * page), 1);
	size_t pages = DATA_PAGES;
	if (!set.cpu_mode) {
		/* wall mode: a clock armed for one record at a time (arm()), taken PROBE_NS of
		 * the thread's CPU time after the tick that armed it: where it is now when it
		 * runs, or where it was preempted when it waits for a CPU. One record at most
		 * is ever in the ring. Disabled until armed; after an exec too (the first tick
		 * arms it) */
		a.sample_period = PROBE_NS;
		/* --dump: a thread is shown running when it ran half an interval of CPU (2.5 ms)
		 * within the snapshot, else with what it is blocked in when next seen blocked: a
		 * sleeper that wakes for a few us between 10 ms sleeps was shown running in its
		 * loop, not in its sleep, with PROBE_NS (test_dump's sleeper) */
		if (set.once)
			a.sample_period = interval_ns / 2;
		a.disabled = 1;
		pages = PROBE_PAGES;
	} else {
		/* a program started for us: counting from its exec's first instruction */
		a.disabled = on_exec;
		a.enable_on_exec = on_exec;
	}
	int fd = (int)syscall(SYS_perf_event_open, &a, t->a.tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		if (errno != ESRCH && !st.clock_refused[0])
			snprintf(st.clock_refused, sizeof(st.clock_refused),
				 "perf_event_open for thread %d: %s", (int)t->a.tid, strerror(errno));
		return;
	}
	int r = wp_perf_ring_map(fd, page, pages, set.cpu_mode ? DATA_PAGES_MIN : PROBE_PAGES,
				 &t->ring);
	if (r < 0 && !st.clock_refused[0])
		snprintf(st.clock_refused, sizeof(st.clock_refused), "perf ring for thread %d: %s "
			 "(the locked-memory limit, ulimit -l)", (int)t->a.tid, strerror(-r));
	else if (r == 0)
		st.clocks_opened++;
	if (r == 0 && !set.cpu_mode)
		t->fd = fd; /* (armed by ioctl) */
	else
		close(fd); /* the mapping keeps the event */
}

static void read_name(struct othread *t)
{
	char buf[64];
	if (wp_snap_read(set.pid, t->a.tid, "comm", buf, sizeof(buf)) > 0) {
		buf[strcspn(buf, "\n")] = 0;
		buf[sizeof(t->a.name) - 1] = 0; /* (a comm is at most 15 bytes) */
		memcpy(t->a.name, buf, sizeof(t->a.name));
	}
	t->a.name_reads++;
}

static struct othread *find(pid_t tid)
{
	for (struct othread *t = threads; t; t = t->next)
		if (t->a.tid == tid && t->a.alive)
			return t;
	return NULL;
}

static struct othread *add_thread(pid_t tid, uint64_t now, int on_exec)
{
	struct othread *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->a.tid = tid;
	t->fd = -1;
	t->a.alive = 1;
	t->a.first_ns = now - start;
	t->listed = 1;
	t->next = threads;
	threads = t;
	st.threads_seen++;
	/* once: a clock only for a thread seen running (sample_wall), the others need none, and
	 * opening one costs (500 idle threads: 2.7 s of a snapshot, 50 ms without) */
	if (!set.once)
		open_clock(t, on_exec);
	if (!on_exec)
		read_name(t);
	return t;
}

/* Relists /proc/PID/task: new threads added, those gone marked. Returns live threads. */
static int relist(uint64_t now)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)set.pid);
	DIR *d = opendir(path);
	if (!d)
		return 0;
	for (struct othread *t = threads; t; t = t->next)
		t->listed = 0;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		pid_t tid = (pid_t)atoi(e->d_name);
		if (tid <= 0)
			continue;
		struct othread *t = find(tid);
		if (t)
			t->listed = 1;
		else
			add_thread(tid, now, 0);
		n++;
	}
	closedir(d);
	/* A process that has ended but is not yet reaped keeps its leader listed, a zombie:
	 * that is the end too (its parent may be waiting for us to finish first). */
	struct wp_snap leader;
	if (n == 1 && wp_snap_state(set.pid, set.pid, &leader) == 0 &&
	    (leader.state == 'Z' || leader.state == 'X'))
		return 0;
	return n;
}

/* A pc in no module: a library loaded since the last read of the maps. Read again, at most
 * every 20 ms (a pc in anonymous code, a JIT's, would otherwise read it at every sample). */
static void maps_on_miss(void)
{
	uint64_t now = wp_now_ns();
	if (now - maps_at < 20 * 1000000ull)
		return;
	maps_at = now;
	wp_rmodules_load(set.pid);
}

/* Unwinds a record or a snapshot into pcs; returns the frame count, *truncated set. */
static uint32_t unwind(const greg_t *gregs, const uint8_t *stack, size_t len, uint64_t *pcs,
		       int *truncated)
{
	struct wp_unwind_input in = { .gregs = gregs, .stack_lo = (uintptr_t)gregs[REG_RSP],
				      .stack = stack, .stack_len = len };
	if (!wp_modules_find((uintptr_t)gregs[REG_RIP]))
		maps_on_miss();
	struct wp_unwind_result res;
	wp_unwind(&in, pcs, WP_AGENT_MAX_FRAMES, &res);
	*truncated = res.truncated;
	st.truncated += res.truncated != 0;
	return res.n;
}

static uint64_t rel_us(uint64_t t)
{
	return t > start ? (t - start) / 1000 : 0;
}

/* A record counted as a running sample worth `w` of CPU time. */
static struct wp_stack_entry *count_record(struct othread *t, const struct wp_pclk_rec *r,
					   uint32_t units, uint64_t w, uint64_t at_ns)
{
	uint64_t pcs[WP_AGENT_MAX_FRAMES];
	int truncated;
	uint64_t t0 = wp_self_cpu_ns();
	uint32_t n = unwind(r->gregs, r->stack, r->stack_len, pcs, &truncated);
	st.unwind_ns += wp_self_cpu_ns() - t0;
	st.samples += units;
	t->a.last_wait = NULL;
	return wp_stacks_add(&t->a, pcs, n, truncated ? WP_STACK_TRUNCATED : 0, units, w,
			     rel_us(at_ns));
}

/* cpu mode: walks t's ring from its tail to its head, counting every sample; everything
 * read is dropped from the ring. */
static void drain(struct othread *t)
{
	struct wp_perf_ring *ring = &t->ring;
	if (!ring->map)
		return;
	struct perf_event_mmap_page *mp = (void *)ring->map;
	uint64_t head = __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = mp->data_tail;
	while (tail < head) {
		struct perf_event_header h;
		memcpy(&h, wp_perf_ring_at(ring, tail, sizeof(h), scratch), sizeof(h));
		if (h.size < sizeof(h) || h.size > head - tail)
			break;
		const uint8_t *p = wp_perf_ring_at(ring, tail, h.size, scratch);
		struct wp_pclk_rec r;
		uint64_t count;
		if (h.type == PERF_RECORD_LOST) {
			uint64_t n = wp_perf_lost(p, h.size);
			st.perf_lost += n;
			t->lost += n;
		} else if (h.type == PERF_RECORD_SAMPLE && wp_perf_parse(p, h.size, 1, &r, &count)) {
			uint64_t cw = count > t->count ? count - t->count : interval_ns;
			t->count = count;
			st.perf_records++;
			/* one sample, plus part of what the ring lost: a burst of lost records
			 * paid to one record made one stack worth 50 samples (cpu_split_static off
			 * by 4.5 points at load 20); spread over the records that follow, at most 3
			 * each, a thread's total still comes right (the split between threads needs
			 * it: 0.42 vs 0.50 without). A tick that fell in the kernel (no record at
			 * all: exclude_kernel) is the system call's time, not the next user
			 * function's: never paid (its time stays in the weight) */
			uint32_t pay = t->lost < 3 ? (uint32_t)t->lost : 3;
			count_record(t, &r, 1 + pay, cw, r.time_ns);
			t->lost -= pay;
		}
		tail += h.size;
	}
	__atomic_store_n(&mp->data_tail, head, __ATOMIC_RELEASE);
}

/* wall mode: arms t's clock for one record (the kernel disables it after one: the event's
 * limit), unless it is armed already (arming adds to the limit). */
static void arm(struct othread *t)
{
	if (t->fd < 0 || t->armed)
		return;
	if (ioctl(t->fd, PERF_EVENT_IOC_REFRESH, 1) == 0)
		t->armed = 1;
}

/* wall mode: the pending ticks counted on stack `e` (NULL: lost), their CPU waits with it. */
static void pend_count(struct othread *t, struct wp_stack_entry *e)
{
	uint64_t looked;
	if (e && t->pend_cpu_units)
		wp_waits_add(&t->a, e->id, WP_WAIT_NR_CPU, (const uint64_t[6]){ 0 },
			     t->pend_cpu_units, t->pend_cpu_w, 0, &looked);
	t->a.last_wait = NULL; /* (not a wait to count again as a blocked one) */
	t->pend_units = t->pend_cpu_units = 0;
	t->pend_w = t->pend_cpu_w = 0;
}

/* wall mode: the record of t's armed clock, when it came, is the stack of the ticks pending
 * since it was armed. Returns 1 when it came. */
static int take_record(struct othread *t)
{
	struct wp_perf_ring *ring = &t->ring;
	if (!ring->map)
		return 0;
	struct perf_event_mmap_page *mp = (void *)ring->map;
	uint64_t head = __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = mp->data_tail;
	int found = 0;
	while (tail < head && !found) {
		struct perf_event_header h;
		memcpy(&h, wp_perf_ring_at(ring, tail, sizeof(h), scratch), sizeof(h));
		if (h.size < sizeof(h) || h.size > head - tail)
			break;
		struct wp_pclk_rec r;
		uint64_t count;
		if (h.type == PERF_RECORD_SAMPLE &&
		    wp_perf_parse(wp_perf_ring_at(ring, tail, h.size, scratch), h.size, 1, &r,
				  &count)) {
			found = 1;
			st.perf_records++;
			if (t->pend_units)
				pend_count(t, count_record(t, &r, t->pend_units, t->pend_w,
							   t->pend_at));
		}
		tail += h.size;
	}
	__atomic_store_n(&mp->data_tail, head, __ATOMIC_RELEASE);
	if (found)
		t->armed = 0;
	return found;
}

/* wall mode: the pending ticks whose record did not come (the thread blocked, ended, or the
 * run ended first) counted on its last stack, as a thread seen not to move. */
static void pend_flush(struct othread *t, uint64_t now)
{
	if (!t->pend_units)
		return;
	struct wp_stack_entry *last = t->a.last_stack;
	if (last) {
		wp_stacks_again(&t->a, last, t->pend_units, t->pend_w, rel_us(now));
		st.reused += t->pend_units;
		st.samples += t->pend_units;
	}
	pend_count(t, last);
}

/* wall mode: a blocked thread, from /proc and a copy of its stack (or its last sample again
 * when it has not run since).
 *
 * Ticks still pending (it was seen runnable, its clock armed, and it blocked before running
 * PROBE_NS more) were spent on the way to this wait: they are counted on the stack where it
 * blocked, as running there (their CPU waits with them). Counted on its last stack instead,
 * when that was an earlier wait, they were time "waiting in no known call": a demo worker
 * woken from its lock that ran a few µs and blocked on it again had up to 11% of its time
 * there under load (test_attach, 2 runs in 14 while the suite ran). When the last stack is
 * one it ran on, or no stack is read now, they go on the last stack, as before. */
static void sample_blocked(struct othread *t, const struct wp_snap *look, uint32_t units,
			   uint64_t w, uint64_t now)
{
	struct wp_stack_entry *last = t->a.last_stack;
	int pend_here = t->pend_units && last && (last->flags & WP_STACK_WAITING);
	if (!pend_here)
		pend_flush(t, now);
	uint64_t looked;
	if (!t->pend_units && last && (last->flags & WP_STACK_WAITING) &&
	    look->run_ns == t->run_ns) {
		wp_stacks_again(&t->a, last, units, w, rel_us(now));
		wp_waits_again(&t->a, units, w, 1, &looked);
		st.reused += units;
		st.samples += units;
		return;
	}
	struct wp_snap s;
	if (wp_snap_thread(set.pid, t->a.tid, snap_stack, sizeof(snap_stack), &s) < 0) {
		pend_flush(t, now);
		return;
	}
	st.stack_reads++;
	if (s.moved || s.nr == -2) {
		st.moved++; /* it ran meanwhile: seen at the next tick (its pending ticks too) */
		return;
	}
	uint64_t pcs[WP_AGENT_MAX_FRAMES];
	int truncated;
	uint64_t t0 = wp_self_cpu_ns();
	uint32_t n = unwind(s.gregs, s.stack, s.stack_len, pcs, &truncated);
	st.unwind_ns += wp_self_cpu_ns() - t0;
	uint32_t trunc = truncated ? WP_STACK_TRUNCATED : 0;
	if (t->pend_units) {
		st.samples += t->pend_units;
		pend_count(t, wp_stacks_add(&t->a, pcs, n, trunc, t->pend_units, t->pend_w,
					    rel_us(t->pend_at)));
	}
	t->a.last_wait = NULL;
	struct wp_stack_entry *e = wp_stacks_add(&t->a, pcs, n, WP_STACK_WAITING | trunc, units,
						 w, rel_us(now));
	st.samples += units;
	t->run_ns = s.run_ns;
	if (e && s.nr >= 0)
		wp_waits_add(&t->a, e->id, s.nr, s.args, units, w, 1, &looked);
}

void wp_osample_owner_read(struct wp_athread *waiter, struct wp_wait_entry *e, pid_t owner,
			   uint32_t units, uint64_t weight_ns)
{
	if (npending < MAX_PENDING)
		pending[npending++] = (struct pending){ waiter, e, owner, units, weight_ns };
}

/* End of a tick: each lock wait read this tick gets its holder's stack when the holder was
 * sampled in the same tick (wall mode samples every thread every tick, so it was, unless it
 * ran while its stack was copied, or ended). The holder's sample may come before the owner
 * read by up to a tick: unlike the agent (wait_locks.c), no order is enforced. */
static void settle_holders(void)
{
	for (size_t i = 0; i < npending; i++) {
		struct pending *p = &pending[i];
		struct othread *h = find(p->owner);
		if (h && h->sampled_tick == st.ticks && h->a.last_stack)
			wp_waits_set_holder(p->waiter, p->e, p->units, p->weight_ns,
					    h->a.last_stack->id);
	}
	npending = 0;
}

/* wall mode: a runnable thread's sample is a CPU wait (the pseudo call WP_WAIT_NR_CPU,
 * format.h: reports show it as waiting for a CPU) while runqueue time (schedstat) read since
 * its last looks is owed: whole samples, each paying its weight, so that the samples' share
 * of CPU waits follows the share of time it spent queued. A thread that woke from a blocked
 * sample and has not run since is queued now: its wait is given at once, ahead of schedstat
 * (which adds a wait when it ends). At most four samples' worth is carried over either way.
 * Returns whether this sample is one. */
static int cpu_owed(struct othread *t, uint64_t w, int queued)
{
	if (!queued && t->owed_ns * 2 < (int64_t)w)
		return 0;
	t->owed_ns -= (int64_t)w;
	if (t->owed_ns < -4 * (int64_t)w)
		t->owed_ns = -4 * (int64_t)w;
	return 1;
}

/* wall mode, a runnable thread (on a CPU or waiting for one). Its tick is pending until its
 * clock, armed now, gives a record: PROBE_NS of its CPU time later, where it is when it runs,
 * or, when it waits for a CPU, where it was preempted (the record comes as it resumes), as
 * the agent's signal lands. Counting the clock's newest periodic record instead (up to a
 * period of CPU time old) put a thread preempted just after a call returned in that call for
 * as long as it waited: cpu_split_static's wall mode was off by up to 4.4 points at load
 * 5-20. A thread that woke from a blocked sample and has not run since is counted with that
 * stack at once, its CPU wait given ahead of schedstat. */
static void sample_runnable(struct othread *t, const struct wp_snap *look, uint32_t units,
			    uint64_t w, uint64_t now)
{
	struct wp_stack_entry *last = t->a.last_stack;
	if (!t->pend_units && last && (last->flags & WP_STACK_WAITING) &&
	    look->run_ns == t->run_ns) {
		wp_stacks_again(&t->a, last, units, w, rel_us(now));
		st.reused += units;
		st.samples += units;
		uint64_t looked;
		if (cpu_owed(t, w, 1))
			wp_waits_add(&t->a, last->id, WP_WAIT_NR_CPU, (const uint64_t[6]){ 0 },
				     units, w, 0, &looked);
		t->a.last_wait = NULL;
		return;
	}
	if (set.once && !t->ring.map && !t->clock_tried) {
		t->clock_tried = 1;
		open_clock(t, 0);
	}
	if (!t->pend_units)
		t->pend_at = now;
	t->pend_units += units;
	t->pend_w += w;
	if (cpu_owed(t, w, 0)) {
		t->pend_cpu_units += units;
		t->pend_cpu_w += w;
	}
	arm(t);
	if (!t->armed)
		pend_flush(t, now); /* no clock to arm: its last stack, as a thread not seen to move */
	t->run_ns = look->run_ns;
}

/* wall mode: one look at `t`. */
static void sample_wall(struct othread *t, uint32_t units, uint64_t now)
{
	uint64_t w = (uint64_t)units * interval_ns;
	struct wp_snap look;
	if (wp_snap_state(set.pid, t->a.tid, &look) < 0)
		return;
	if (t->delay_ns && look.delay_ns > t->delay_ns) {
		t->owed_ns += (int64_t)(look.delay_ns - t->delay_ns);
		if (t->owed_ns > 4 * (int64_t)w)
			t->owed_ns = 4 * (int64_t)w;
	}
	take_record(t); /* the ticks pending since it was armed */
	if (look.state == 'R') {
		sample_runnable(t, &look, units, w, now);
	} else if (look.state == 'S' || look.state == 'D' || look.state == 'T' || look.state == 't') {
		/* blocked before its clock's record came (the record, still armed, comes after
		 * it wakes: dropped then) */
		sample_blocked(t, &look, units, w, now);
	}
	t->delay_ns = look.delay_ns;
}

/* Closes t's clock: cpu mode drains its ring first, wall mode counts its pending ticks. */
static void close_clock(struct othread *t, uint64_t now)
{
	if (set.cpu_mode) {
		drain(t);
	} else {
		take_record(t);
		pend_flush(t, now);
	}
	wp_perf_ring_unmap(&t->ring);
	if (t->fd >= 0)
		close(t->fd);
	t->fd = -1;
}

static void ended(struct othread *t, uint64_t now)
{
	close_clock(t, now);
	t->a.alive = 0;
	t->a.flags |= WP_THREAD_EXITED;
	t->a.last_ns = now - start;
}

int wp_osample_begin(const struct wp_osettings *s, uint64_t start_ns)
{
	set = *s;
	start = maps_at = start_ns;
	interval_ns = 1000000000ull / (uint64_t)s->hz;
	long p = sysconf(_SC_PAGESIZE);
	page = p > 0 ? (size_t)p : 4096;
	if (wp_unwind_init() != 0)
		return -ENOSYS;
	/* wall mode keeps each thread's clock open (arm()): as many as the hard limit allows */
	struct rlimit rl;
	if (!s->cpu_mode && getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	int r = s->pid ? wp_rmodules_load(s->pid) : 0;
	return r < 0 ? r : 0;
}

void wp_osample_adopt_exec(pid_t pid)
{
	add_thread(pid, start, 1);
}

void wp_osample_retarget(pid_t pid)
{
	set.pid = pid;
	wp_rmodules_load(pid);
	for (struct othread *t = threads; t; t = t->next)
		if (t->a.tid == pid)
			read_name(t);
}

int wp_osample_tick(uint64_t now, uint32_t units)
{
	st.ticks++;
	st.ticks_late += units > 1;
	if (now - maps_at >= MAPS_EVERY_NS) {
		maps_at = now;
		wp_rmodules_load(set.pid);
	}
	int n = relist(now);
	for (struct othread *t = threads; t; t = t->next) {
		if (!t->a.alive)
			continue;
		if (!t->listed) {
			ended(t, now);
			continue;
		}
		uint64_t before = t->a.samples;
		if (set.once && before)
			continue;
		if (set.cpu_mode)
			drain(t);
		else
			sample_wall(t, units, now);
		if (t->a.samples != before) {
			if (set.on_sampled)
				set.on_sampled(t->a.tid);
			t->sampled_tick = st.ticks;
			t->a.last_ns = now - start;
			if ((t->a.name_reads == 1 && t->a.samples >= 16) ||
			    (t->a.name_reads == 2 && t->a.samples >= 256))
				read_name(t);
		}
	}
	settle_holders();
	return n;
}

int wp_osample_unsampled(void)
{
	int n = 0;
	for (struct othread *t = threads; t; t = t->next)
		n += t->a.alive && !t->a.samples;
	return n;
}

void wp_osample_end(uint64_t now)
{
	for (struct othread *t = threads; t; t = t->next) {
		if (!t->a.alive)
			continue;
		close_clock(t, now);
		t->a.last_ns = now - start;
	}
}

struct wp_athread *wp_othread_next(struct wp_athread *a)
{
	struct othread *t = (struct othread *)a;
	return t->next ? &t->next->a : NULL;
}
