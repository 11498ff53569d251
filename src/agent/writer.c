/* SPDX-License-Identifier: MIT */
#include "writer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "../common/format.h"
#include "agent.h"
#include "clock.h"
#include "log.h"
#include "handshake.h"
#include "modules.h"
#include "pages.h"
#include "perfclock.h"
#include "sampler.h"
#include "stacks.h"
#include "task.h"
#include "wait_locks.h"
#include "waits.h"
#include "cpuwait.h"
#include "stats.h"
#include "threads.h"
#include "title.h"


static char buf[1 << 16] WP_BIG;
static size_t used;
static int out_fd = -1;
static int failed;

static void flush(void)
{
	for (size_t off = 0; off < used && !failed;) {
		ssize_t n = write(out_fd, buf + off, used - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			failed = errno ? errno : EIO;
			break;
		}
		off += (size_t)n;
	}
	used = 0;
}

static void put(const void *p, size_t n)
{
	const uint8_t *s = p;
	while (n) {
		if (used == sizeof(buf))
			flush();
		size_t k = sizeof(buf) - used < n ? sizeof(buf) - used : n;
		memcpy(buf + used, s, k);
		used += k;
		s += k;
		n -= k;
	}
}

/* Integers and the structs of format.h are put as they are in memory: a little-endian host
 * (x86-64). */
static void u32(uint32_t v) { put(&v, 4); }

/* A record header, then the payload: the fixed fields of its type (format.h's struct
 * wp_rec_*, which the reader copies out the same way) and `more` bytes after them. */
static void record(uint32_t type, const void *fixed, size_t size, uint64_t more)
{
	struct wp_rec_header h = { .type = type, .len = size + more };
	put(&h, sizeof(h));
	put(fixed, size);
}

/* Room for the agent's META (8 KiB), the titles (title.h), 16 warnings and the rest. */
static char meta[32768] WP_BIG;

static size_t build_meta(const char *extra)
{
	size_t n = 0;
	uint64_t now = wp_now_ns(), start = wp_sampler_start_ns();
	uint64_t user = 0, sys = 0;
	wp_program_cpu(wp_task_program_pid(), &user, &sys);
	n += wp_format(meta + n, sizeof(meta) - n, "%s", wp_agent_meta());
	n += wp_format(meta + n, sizeof(meta) - n,
		       "start_unix_ns=%llu\nduration_ns=%llu\ncpu_user_ns=%llu\ncpu_sys_ns=%llu\n"
		       "sampler_cpu_ns=%llu\nunwind_ns=%llu\n",
		       (unsigned long long)wp_sampler_start_unix_ns(),
		       (unsigned long long)(now - start), (unsigned long long)user,
		       (unsigned long long)sys, (unsigned long long)wp_sampler_cpu_ns(),
		       (unsigned long long)wp_stats.unwind_ns);
	n += wp_format(meta + n, sizeof(meta) - n,
		       "ticks=%llu\nticks_late=%llu\nticks_idle=%llu\nsamples=%llu\nsignalled=%llu\n"
		       "reused=%llu\nunsignalled=%llu\nsyscall_refused=%llu\n"
		       "truncated=%llu\nstacks=%llu\nthreads_seen=%llu\nagent_bytes=%llu\n"
		       "unwind_table_bytes=%llu\ntimeline_truncated=%d\nstray_signals=%llu\n"
		       "waits=%llu\nwaits_lost=%llu\nholder_samples=%llu\nholder_missed=%llu\n",
		       (unsigned long long)wp_stats.ticks, (unsigned long long)wp_stats.ticks_late,
		       (unsigned long long)wp_stats.ticks_idle,
		       (unsigned long long)wp_stats.samples, (unsigned long long)wp_stats.signalled,
		       (unsigned long long)wp_stats.reused, (unsigned long long)wp_stats.unsignalled,
		       (unsigned long long)wp_stats.syscall_refused,
		       (unsigned long long)wp_stats.truncated,
		       (unsigned long long)wp_stacks_count(), (unsigned long long)wp_threads_seen(),
		       (unsigned long long)(wp_stacks_bytes() + wp_waits_bytes() + wp_cpuwait_bytes()),
		       (unsigned long long)wp_modules_copied_bytes(), wp_stacks_timeline_truncated(),
		       (unsigned long long)wp_handshake_stray(),
		       (unsigned long long)wp_waits_count(), (unsigned long long)wp_stats.waits_lost,
		       (unsigned long long)wp_locks_holder_samples(),
		       (unsigned long long)wp_locks_holder_missed());
	n += wp_format(meta + n, sizeof(meta) - n,
		       "schedstat_reads=%llu\nstate_reads=%llu\ncpuwait_read_ns=%llu\n",
		       (unsigned long long)wp_cpuwait_reads(),
		       (unsigned long long)wp_cpuwait_state_reads(),
		       (unsigned long long)wp_cpuwait_read_ns());
	n += wp_format(meta + n, sizeof(meta) - n,
		       "perf_clock_threads=%llu\nperf_clock_records=%llu\nperf_clock_lost=%llu\n"
		       "unseen_ns=%llu\n",
		       (unsigned long long)wp_pclk_opened(), (unsigned long long)wp_pclk_records(),
		       (unsigned long long)wp_pclk_lost(), (unsigned long long)wp_stats.unseen_ns);
	for (int i = 0; i < WP_MISS__N; i++)
		n += wp_format(meta + n, sizeof(meta) - n, "missed_%s=%llu\n", wp_miss_name(i),
			       (unsigned long long)wp_stats.missed[i]);
	n += wp_format(meta + n, sizeof(meta) - n,
		       "window_p50_ns=%llu\nwindow_p99_ns=%llu\nwindow_max_ns=%llu\nwindow_n=%llu\n"
		       "window_sum_ns=%llu\n",
		       (unsigned long long)wp_stats_window_quantile(0.5),
		       (unsigned long long)wp_stats_window_quantile(0.99),
		       (unsigned long long)wp_stats.window_max_ns,
		       (unsigned long long)wp_stats.window_n,
		       (unsigned long long)wp_stats.window_sum_ns);
	n += wp_title_meta(meta + n, sizeof(meta) - n, wp_stats.samples);
	n += wp_log_meta(meta + n, sizeof(meta) - n);
	if (extra)
		n += wp_format(meta + n, sizeof(meta) - n, "%s", extra);
	return n;
}

static void write_modules(void)
{
	size_t n = wp_modules_history_count();
	for (size_t i = 0; i < n; i++) {
		const struct wp_module_rec *m = wp_modules_history_at(i);
		struct wp_rec_module r = { .id = (uint32_t)i, .flags = m->flags, .start = m->start,
					   .end = m->end, .file_offset = m->file_offset,
					   .build_id_len = m->build_id_len,
					   .path_len = (uint32_t)strlen(m->path) };
		record(WP_REC_MODULE, &r, sizeof(r), (uint64_t)r.build_id_len + r.path_len);
		put(m->build_id, r.build_id_len);
		put(m->path, r.path_len);
	}
}

static uint32_t abs_tid(pid_t tid)
{
	return (uint32_t)(tid < 0 ? -tid : tid);
}

static void write_threads(void)
{
	/* A thread still alive was seen until now, not just until the last relist. */
	uint64_t now_rel = wp_now_ns() - wp_sampler_start_ns();
	for (struct wp_athread *t = wp_threads_all(); t; t = t->hh.next) {
		if (t->alive && t->last_ns < now_rel)
			t->last_ns = now_rel;
		struct wp_rec_thread r = { .tid = abs_tid(t->tid), .flags = t->flags,
					   .samples = t->samples, .running = t->running,
					   .waiting = t->waiting, .first_ns = t->first_ns,
					   .last_ns = t->last_ns,
					   .name_len = (uint32_t)strnlen(t->name, sizeof(t->name)) };
		/* appended after the name (format.h): the time it ran unseen, and why */
		const char *why = wp_pclk_why(t);
		uint32_t why_len = why ? (uint32_t)strlen(why) : 0;
		uint64_t unseen = t->unseen_ns;
		record(WP_REC_THREAD, &r, sizeof(r),
		       (uint64_t)r.name_len + sizeof(unseen) + sizeof(why_len) + why_len);
		put(t->name, r.name_len);
		put(&unseen, sizeof(unseen));
		put(&why_len, sizeof(why_len));
		put(why, why_len);
	}
}

static void write_stacks(void)
{
	for (struct wp_stack_entry *e = wp_stacks_all(); e; e = e->hh.next) {
		struct wp_rec_stack r = { .id = e->id, .tid = abs_tid((pid_t)e->tid),
					  .flags = e->flags, .nframes = e->nframes,
					  .count = e->count, .weight_ns = e->weight_ns };
		record(WP_REC_STACK, &r, sizeof(r), sizeof(uint64_t) * (uint64_t)r.nframes);
		put(e->pcs, sizeof(uint64_t) * r.nframes);
	}
}

static void write_waits(void)
{
	for (struct wp_wait_entry *e = wp_waits_all(); e; e = e->hh.next) {
		if (!e->count)
			continue; /* its samples turned out to be disk waits (cpuwait.h), or all moved
				   * to the entry with the holder's stack */
		struct wp_rec_wait r = { .stack_id = e->key.stack_id, .nr = e->key.nr,
					 .a0 = e->key.a0, .a1 = e->key.a1, .a2 = e->key.a2,
					 .aux = e->key.aux, .count = e->count,
					 .weight_ns = e->weight_ns, .target_len = e->target_len };
		uint32_t holder_stack = e->key.holder_stack; /* appended: format.h */
		uint64_t cond_mutex = e->key.cond_mutex; /* appended after it */
		record(WP_REC_WAIT, &r, sizeof(r),
		       (uint64_t)r.target_len + sizeof(holder_stack) + sizeof(cond_mutex));
		put(e->target, r.target_len);
		put(&holder_stack, sizeof(holder_stack));
		put(&cond_mutex, sizeof(cond_mutex));
	}
}

/* cpuwait.h's entries, as WAIT records with a pseudo call (format.h) */
static void write_cpuwaits(void)
{
	for (struct wp_cpuwait_entry *e = wp_cpuwait_all(); e; e = e->hh.next) {
		struct wp_rec_wait r = { .stack_id = e->key.stack_id, .nr = e->key.nr,
					 .a0 = e->key.a0, .a1 = e->key.a1,
					 .count = (e->units_fx + 512) / 1024,
					 .weight_ns = e->weight_ns, .target_len = e->target_len };
		record(WP_REC_WAIT, &r, sizeof(r), r.target_len);
		put(e->target, r.target_len);
	}
}

/* Each live thread's last sample: what it was blocked in (format.h's WP_REC_LAST). The final
 * write of a program that ends stuck (killed while deadlocked) so keeps who waited on whom. */
static void write_lasts(void)
{
	for (struct wp_athread *t = wp_threads_all(); t; t = t->hh.next) {
		struct wp_rec_last r;
		if (wp_waits_last_record(t, abs_tid(t->tid), &r))
			record(WP_REC_LAST, &r, sizeof(r), 0);
	}
}

static void write_timelines(void)
{
	for (struct wp_athread *t = wp_threads_all(); t; t = t->hh.next) {
		if (!t->tl_count)
			continue;
		struct wp_rec_timeline r = { .tid = abs_tid(t->tid), .count = t->tl_count };
		record(WP_REC_TIMELINE, &r, sizeof(r), t->tl_len);
		put(t->tl, t->tl_len);
	}
}

/* One writer at a time (the sampler's checkpoint, exit, exec, a fatal signal on any thread):
 * the buffer is static. A second writer waits a bounded time, then gives up. */
static _Atomic int busy;

static int acquire(void)
{
	for (int i = 0; i < 2000; i++) {
		int expected = 0;
		if (atomic_compare_exchange_strong(&busy, &expected, 1))
			return 0;
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	return -1;
}

static int write_locked(const char *path, const char *extra);

void wp_writer_abandon(void)
{
	atomic_store(&busy, 0);
	out_fd = -1; /* the parent task's number */
}

int wp_writer_write(const char *path, const char *extra)
{
	if (acquire() != 0)
		return -EBUSY;
	int r = write_locked(path, extra);
	atomic_store(&busy, 0);
	return r;
}

static int write_locked(const char *path, const char *extra)
{
	char tmp[4200];
	if (wp_format(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid()) >= sizeof(tmp) - 1)
		return -ENAMETOOLONG;
	unlink(tmp); /* ours from an earlier checkpoint; O_EXCL below refuses anything else */
	out_fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (out_fd < 0)
		return -errno;
	used = 0;
	failed = 0;
	put(WP_MAGIC, WP_MAGIC_LEN);
	u32(WP_FORMAT_VERSION);
	u32(WP_HEADER_SIZE);
	size_t mlen = build_meta(extra);
	record(WP_REC_META, meta, mlen, 0);
	write_modules();
	write_threads();
	write_stacks();
	write_waits();
	write_cpuwaits();
	write_lasts();
	write_timelines();
	record(WP_REC_END, NULL, 0, 0);
	flush();
	int e = failed;
	if (close(out_fd) != 0 && !e)
		e = errno;
	out_fd = -1;
	if (!e && rename(tmp, path) != 0)
		e = errno;
	if (e) {
		unlink(tmp);
		return -e;
	}
	return 0;
}
