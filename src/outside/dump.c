/* SPDX-License-Identifier: MIT */
/* One snapshot of every thread: dump.h says what and why. */
#include "dump.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/clock.h"
#include "agent/threads.h"
#include "osample.h"
#include "snapshot.h"
#include "waited.h"

/* schedstat of each thread listed as the snapshot began */
struct first_look {
	pid_t tid;
	uint64_t run_ns, delay_ns;
};
static struct first_look *first;
static size_t nfirst;
static uint64_t bound_ns;

static void look_first(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return;
	size_t cap = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		pid_t tid = (pid_t)atoi(e->d_name);
		struct wp_snap s;
		if (tid <= 0 || wp_snap_state(pid, tid, &s) < 0)
			continue;
		if (nfirst == cap) {
			size_t ncap = cap ? 2 * cap : 64;
			struct first_look *v = realloc(first, ncap * sizeof(*v));
			if (!v)
				break;
			first = v;
			cap = ncap;
		}
		first[nfirst++] = (struct first_look){ tid, s.run_ns, s.delay_ns };
	}
	closedir(d);
}

static const struct first_look *first_of(pid_t tid)
{
	for (size_t i = 0; i < nfirst; i++)
		if (first[i].tid == tid)
			return &first[i];
	return NULL;
}

void wp_dump_take(pid_t pid, int hz, uint64_t *end)
{
	look_first(pid);
	uint64_t start = wp_now_ns(), interval = 1000000000ull / (uint64_t)hz;
	bound_ns = DUMP_BOUND_NS;
	for (;;) {
		uint64_t now = wp_now_ns();
		int live = wp_osample_tick(now, 1);
		if (!live || !wp_osample_unsampled() || now - start >= bound_ns)
			break;
		struct timespec ts = { 0, (long)interval };
		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
	}
	*end = wp_now_ns();
	wp_osample_end(*end);
}

/* Appends printf output to a growing string; 0, or -1 when out of memory. */
static int add(char **s, size_t *len, size_t *cap, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int add(char **s, size_t *len, size_t *cap, const char *fmt, ...)
{
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(*s ? *s + *len : NULL, *s ? *cap - *len : 0, fmt, ap);
		va_end(ap);
		if (n < 0)
			return -1;
		if (*s && (size_t)n < *cap - *len) {
			*len += (size_t)n;
			return 0;
		}
		size_t ncap = (*cap ? *cap * 2 : 4096) + (size_t)n;
		char *v = realloc(*s, ncap);
		if (!v)
			return -1;
		*s = v;
		*cap = ncap;
	}
}

char *wp_dump_meta(pid_t pid)
{
	char *s = NULL;
	size_t len = 0, cap = 0;
	wp_waited_calibrate();
	if (add(&s, &len, &cap, "dump=1\nstopped_ns=0\ndump_bound_ns=%llu\n",
		(unsigned long long)bound_ns))
		goto oom;
	for (struct wp_athread *t = wp_othreads_all(); t; t = wp_othread_next(t)) {
		struct wp_snap now;
		if (!t->alive || wp_snap_state(pid, t->tid, &now) < 0)
			continue;
		const struct first_look *f = first_of(t->tid);
		uint64_t waited;
		long long w = wp_waited_ns(pid, t->tid, wp_now_ns(), &waited) == 0 ?
			(long long)waited : -1;
		if (add(&s, &len, &cap, "dump_thread.%d=%c %llu %llu %lld\n", (int)t->tid,
			now.state ? now.state : '?',
			(unsigned long long)(f && now.run_ns > f->run_ns ? now.run_ns - f->run_ns : 0),
			(unsigned long long)(f && now.delay_ns > f->delay_ns ?
					     now.delay_ns - f->delay_ns : 0), w))
			goto oom;
	}
	return s;
oom:
	free(s);
	return NULL;
}
