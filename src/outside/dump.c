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

/* Each thread as the snapshot began (schedstat), and as it was right after its sample
 * (state, schedstat, how long it had not run): looked at then, not at the snapshot's end, up
 * to 100 ms later, by which time a sleeper of 10 ms has woken and slept again. */
struct look {
	pid_t tid;
	uint64_t run_ns, delay_ns;
	int noted;
	char state;
	uint64_t ran_ns, queued_ns;
	long long waited_ns;
};
static struct look *first;
static size_t nfirst;
static pid_t target;
static uint64_t bound_ns;

static struct look *first_of(pid_t tid);
static int by_tid(const void *a, const void *b);

/* Looks at thread `tid` now: its state, what its schedstat grew by since l's, how long it
 * has not run. 0, or -1 when it has ended. */
static int look_now(pid_t pid, pid_t tid, struct look *l)
{
	struct wp_snap now;
	uint64_t waited;
	if (wp_snap_state(pid, tid, &now) < 0)
		return -1;
	l->noted = 1;
	l->state = now.state ? now.state : '?';
	l->ran_ns = now.run_ns > l->run_ns ? now.run_ns - l->run_ns : 0;
	l->queued_ns = now.delay_ns > l->delay_ns ? now.delay_ns - l->delay_ns : 0;
	l->waited_ns = wp_waited_ns(pid, tid, wp_now_ns(), &waited) == 0 ? (long long)waited : -1;
	return 0;
}

void wp_dump_sampled(pid_t tid)
{
	struct look *f = first_of(tid);
	if (f)
		look_now(target, tid, f);
}

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
			struct look *v = realloc(first, ncap * sizeof(*v));
			if (!v)
				break;
			first = v;
			cap = ncap;
		}
		first[nfirst++] = (struct look){ .tid = tid, .run_ns = s.run_ns,
						 .delay_ns = s.delay_ns };
	}
	closedir(d);
	if (nfirst)
		qsort(first, nfirst, sizeof(*first), by_tid);
}

static int by_tid(const void *a, const void *b)
{
	const struct look *x = a, *y = b;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* (sorted by look_first: a process of thousands of threads is looked up once per thread) */
static struct look *first_of(pid_t tid)
{
	struct look key = { .tid = tid };
	return nfirst ? bsearch(&key, first, nfirst, sizeof(*first), by_tid) : NULL;
}

void wp_dump_take(pid_t pid, int hz, uint64_t *end)
{
	target = pid;
	wp_waited_calibrate(); /* (before the samples: each is looked at right after it) */
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
	if (add(&s, &len, &cap, "dump=1\nstopped_ns=0\ndump_bound_ns=%llu\n",
		(unsigned long long)bound_ns))
		goto oom;
	for (struct wp_athread *t = wp_othreads_all(); t; t = wp_othread_next(t)) {
		if (!t->alive)
			continue;
		/* not sampled, or started during the snapshot: as it is at the end */
		struct look *f = first_of(t->tid), end = { .tid = t->tid };
		if (!f || !f->noted) {
			if (f)
				end = *f;
			if (look_now(pid, t->tid, &end) < 0)
				continue;
			if (!f) /* (no first look: no growth known) */
				end.ran_ns = end.queued_ns = 0;
			f = &end;
		}
		if (add(&s, &len, &cap, "dump_thread.%d=%c %llu %llu %lld\n", (int)t->tid, f->state,
			(unsigned long long)f->ran_ns, (unsigned long long)f->queued_ns, f->waited_ns))
			goto oom;
	}
	return s;
oom:
	free(s);
	return NULL;
}
