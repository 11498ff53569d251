/* SPDX-License-Identifier: MIT */
/* The dump of a snapshot: dump_model.h says what and why. */
#include "dump_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "waits.h"

const char *wp_dump_state_name(enum wp_dump_state s)
{
	static const char *const names[] = { "running", "runnable", "blocked", "disk",
					     "stopped", "other" };
	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "other";
}

/* One "dump_thread.TID" META line's value: "STATE RAN_NS QUEUED_NS WAITED_NS". */
struct look {
	char letter;
	unsigned long long ran, queued;
	long long waited;
};

static const struct wp_last *last_of(const struct wp_profile *p, uint32_t tid)
{
	for (size_t i = 0; i < p->nlasts; i++)
		if (p->lasts[i].tid == tid)
			return &p->lasts[i];
	return NULL;
}

/* The wait of the stack a thread was last sampled with: its one wait in a call (a thread
 * is sampled once in a dump; a wait for a CPU its sample may carry is not what it waits for:
 * the dump gives its runqueue time instead). */
static const struct wp_rwait *wait_of(const struct wp_rstack *s)
{
	for (uint32_t k = 0; s && k < s->nwaits; k++)
		if (s->waits[k].kind != WP_WAIT_CPU)
			return &s->waits[k];
	return NULL;
}

static enum wp_dump_state state_of(const struct look *l, const struct wp_rstack *s)
{
	switch (l->letter) {
	case 'R':
		/* sampled by its clock: it ran then (it may have queued too: queued_ns says).
		 * Never sampled: runnable when it queued and did not run during the snapshot.
		 * (schedstat's run time is brought up to date only at the scheduler's tick or a
		 * switch, so a few ms of running may not show in it yet: a sample is surer) */
		if (!s && l->queued && !l->ran)
			return WP_DS_RUNNABLE;
		return WP_DS_RUNNING;
	case 'S':
		return WP_DS_BLOCKED;
	case 'D':
		return WP_DS_DISK;
	case 'T':
	case 't':
		return WP_DS_STOPPED;
	default:
		return WP_DS_OTHER;
	}
}

static void fill(const struct wp_resolved *r, uint32_t tid, const struct look *l,
		 struct wp_dump_thread *t)
{
	const struct wp_profile *p = r->p;
	const struct wp_thread *th = wp_profile_thread(p, tid);
	const struct wp_last *last = last_of(p, tid);
	t->tid = tid;
	t->name = th && th->name && *th->name ? th->name : "?";
	t->letter = l->letter; /* (/proc's, at the end, whatever the sample says) */
	t->stack = last ? wp_resolved_stack(r, last->stack_id) : NULL;
	struct look seen = *l;
	if (last && (last->flags & WP_LAST_IN_CALL) && l->letter == 'R') {
		/* sampled blocked, woken by the snapshot's end (a sleeper's period ended): the
		 * dump is of its sample, how long it had waited then is not known */
		seen.letter = 'S';
		seen.waited = -1;
	}
	if (last && !(last->flags & WP_LAST_WAITING) && l->letter != 'R') {
		/* sampled running by its clock, blocked by the end: the dump is of its sample */
		seen.letter = 'R';
		seen.waited = -1;
	}
	l = &seen;
	t->state = state_of(l, t->stack);
	t->queued_ns = l->queued;
	t->ran_ns = l->ran;
	int blocked = t->state == WP_DS_BLOCKED || t->state == WP_DS_DISK ||
		      t->state == WP_DS_STOPPED;
	/* what it waits for, only when the sample says the same as /proc's state: a thread that
	 * woke between its sample and the snapshot's end is running, its old wait is stale */
	if (blocked && last && (last->flags & WP_LAST_IN_CALL)) {
		t->call = wp_syscall_name(last->nr);
		t->wait = wait_of(t->stack);
	}
	t->waited_ns = blocked ? l->waited : -1;
}

static int by_tid(const void *a, const void *b)
{
	const struct wp_dump_thread *x = a, *y = b;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* Whether two threads are alike (one group). */
static int alike(const struct wp_dump_thread *a, const struct wp_dump_thread *b)
{
	if (a->state != b->state || !a->call != !b->call || (a->call && strcmp(a->call, b->call)) ||
	    !a->wait != !b->wait || !a->stack != !b->stack)
		return 0;
	if (a->wait && (a->wait->kind != b->wait->kind || a->wait->holder != b->wait->holder ||
			strcmp(a->wait->object, b->wait->object)))
		return 0;
	if (!a->stack)
		return 1;
	if (a->stack->n != b->stack->n)
		return 0;
	for (uint32_t j = 0; j < a->stack->n; j++)
		if (a->stack->frames[j].func != b->stack->frames[j].func ||
		    a->stack->frames[j].line != b->stack->frames[j].line)
			return 0;
	return 1;
}

static int by_size(const void *a, const void *b)
{
	const struct wp_dump_group *x = a, *y = b;
	if (x->n != y->n)
		return x->n > y->n ? -1 : 1;
	return x->members[0] < y->members[0] ? -1 : x->members[0] > y->members[0];
}

static void group(struct wp_dump *d)
{
	d->groups = wp_xcalloc(d->nthreads ? d->nthreads : 1, sizeof(*d->groups));
	for (size_t i = 0; i < d->nthreads; i++) {
		size_t g = 0;
		while (g < d->ngroups && !alike(&d->threads[d->groups[g].members[0]], &d->threads[i]))
			g++;
		if (g == d->ngroups) {
			d->groups[g].members = wp_xmalloc(d->nthreads * sizeof(size_t));
			d->ngroups++;
		}
		d->groups[g].members[d->groups[g].n++] = i;
	}
	qsort(d->groups, d->ngroups, sizeof(*d->groups), by_size);
}

int wp_dump_build(const struct wp_resolved *r, struct wp_dump *d)
{
	const struct wp_profile *p = r->p;
	memset(d, 0, sizeof(*d));
	if (wp_profile_meta_ll(p, "dump", 0) != 1)
		return -1;
	d->pid = p->info.pid;
	d->command = p->info.command ? p->info.command : "?";
	d->stopped_ns = (uint64_t)wp_profile_meta_ll(p, "stopped_ns", 0);
	d->snapshot_ns = (uint64_t)wp_profile_meta_ll(p, "duration_ns", 0);
	d->bound_ns = (uint64_t)wp_profile_meta_ll(p, "dump_bound_ns", 0);
	d->threads = wp_xcalloc(p->nmeta ? p->nmeta : 1, sizeof(*d->threads));
	for (size_t i = 0; i < p->nmeta; i++) {
		const struct wp_meta *m = &p->meta[i];
		struct look l = { 0 };
		if (strncmp(m->key, "dump_thread.", 12) ||
		    sscanf(m->value, "%c %llu %llu %lld", &l.letter, &l.ran, &l.queued, &l.waited) != 4)
			continue;
		fill(r, (uint32_t)strtoul(m->key + 12, NULL, 10), &l, &d->threads[d->nthreads++]);
	}
	qsort(d->threads, d->nthreads, sizeof(*d->threads), by_tid);
	group(d);
	return 0;
}

void wp_dump_free(struct wp_dump *d)
{
	for (size_t g = 0; g < d->ngroups; g++)
		free(d->groups[g].members);
	free(d->groups);
	free(d->threads);
	memset(d, 0, sizeof(*d));
}
