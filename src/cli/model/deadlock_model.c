/* SPDX-License-Identifier: MIT */
/* The model's deadlocks (deadlock_model.h): each process's LAST records give its threads'
 * edges (a futex wait with an owner read: that thread; one expecting a thread's tid: a join
 * of it), the loops among them are checked against the waiting stacks' functions (a lock or an
 * rwlock for an owner, pthread_join for a tid) and those confirmed are named. Only the loops'
 * stacks are symbolized, so a run without one keeps its model exactly as it was. */
#include "deadlock_model.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#include "alloc.h"
#include "build.h"
#include "deadlock.h"

/* The edge LAST record `l` of profile `p` may stand for, before its stack is looked at. */
static void candidate(const struct wp_profile *p, const struct wp_last *l, uint32_t proc,
		      struct wp_dl_thread *out)
{
	*out = (struct wp_dl_thread){ .proc = proc, .tid = l->tid, .kind = WP_DL_NONE,
				      .stack = l->stack_id };
	if (!(l->flags & WP_LAST_IN_CALL) || l->nr != SYS_futex || !wp_profile_stack(p, l->stack_id))
		return;
	/* a mutex's owner or an rwlock's writer, read by the agent (0: none) */
	if (l->aux && l->aux <= UINT32_MAX && wp_profile_thread(p, (uint32_t)l->aux)) {
		*out = (struct wp_dl_thread){ proc, l->tid, WP_DL_LOCK, l->a0, (uint32_t)l->aux,
					      l->stack_id };
		return;
	}
	/* pthread_join sleeps on the joined thread's tid word while it holds that tid */
	if (l->a2 > 2 && l->a2 <= UINT32_MAX && l->a2 != l->tid &&
	    wp_profile_thread(p, (uint32_t)l->a2))
		*out = (struct wp_dl_thread){ proc, l->tid, WP_DL_JOIN, l->a0, (uint32_t)l->a2,
					      l->stack_id };
}

/* The frames of process proc's stack `id`, LEAF FIRST (each address's inlined frames
 * innermost first, as the symbolizer gives them); *n their number. */
static struct wp_rframe *stack_frames(struct wp_resolved *r, uint32_t proc, uint32_t id,
				      uint32_t *n)
{
	const struct wp_stack *s = wp_profile_stack(r->procs[proc], id);
	*n = 0;
	if (!s || !s->nframes)
		return NULL;
	struct wp_rframe *f = NULL;
	size_t cap = 0;
	for (uint32_t j = 0; j < s->nframes; j++) {
		uint32_t li = wp_model_location(r, proc, s->pcs[j], j == 0);
		if (li == WP_NO_LOC)
			continue;
		const struct wp_loc *l = &r->locs[li];
		wp_xgrow(&f, &cap, *n + l->n, sizeof(*f));
		for (uint32_t k = 0; k < l->n; k++)
			f[(*n)++] = l->frames[k];
	}
	return f;
}

/* The kind the stack's functions give a futex wait (waits.h, leaf first). */
static enum wp_wait_kind kind_of(const struct wp_resolved *r, const struct wp_rframe *f,
				 uint32_t n)
{
	const char *names[64];
	size_t nn = 0;
	for (uint32_t j = 0; j < n && nn < 64; j++)
		names[nn++] = r->funcs[f[j].func].name;
	return wp_wait_classify(SYS_futex, names, nn);
}

/* Whether the stack's functions say what the edge says: a lock's owner, a join's tid. */
static int confirmed(const struct wp_dl_thread *t, enum wp_wait_kind k)
{
	if (t->kind == WP_DL_LOCK)
		return k == WP_WAIT_LOCK || k == WP_WAIT_RWLOCK;
	return t->kind == WP_DL_JOIN && k == WP_WAIT_JOIN;
}

/* The program function nearest the leaf (not _start, not a system header's inline code). */
static const char *waiter_of(const struct wp_resolved *r, const struct wp_rframe *f, uint32_t n)
{
	for (uint32_t j = 0; j < n; j++) {
		const struct wp_func *fn = &r->funcs[f[j].func];
		if (fn->kind == WP_KIND_PROGRAM && strcmp(fn->name, "_start") != 0 &&
		    !(f[j].file && !strncmp(f[j].file, "/usr/include/", 13)))
			return fn->name;
	}
	return NULL;
}

static const char *thread_name(const struct wp_profile *p, uint32_t tid)
{
	const struct wp_thread *t = wp_profile_thread(p, tid);
	return t && t->name && *t->name ? t->name : "?";
}

/* Names member `m` of a loop: thread `t`, from LAST record `l`. */
static void name_member(struct wp_resolved *r, const struct wp_dl_thread *t,
			const struct wp_last *l, struct wp_dl_member *m)
{
	const struct wp_profile *p = r->procs[t->proc];
	m->proc = t->proc;
	m->tid = t->tid;
	m->name = thread_name(p, t->tid);
	m->target = t->target;
	m->target_name = thread_name(p, t->target);
	m->at_ns = l->at_ns;
	m->frames = stack_frames(r, t->proc, t->stack, &m->nframes);
	m->kind = kind_of(r, m->frames, m->nframes);
	m->waiter = waiter_of(r, m->frames, m->nframes);
	struct wp_wait w = { .stack_id = l->stack_id, .nr = l->nr, .a0 = l->a0, .a1 = l->a1,
			     .a2 = l->a2, .aux = l->aux, .target = (char *)"",
			     .holder_stack = WP_WAIT_NO_HOLDER_STACK };
	const char *dn = m->kind == WP_WAIT_JOIN ? NULL :
		wp_symbolize_data(wp_model_symbolizer(r, t->proc), l->a0);
	char buf[WP_WAIT_OBJECT_MAX];
	wp_wait_describe(&w, m->kind, dn, m->waiter,
			 m->kind == WP_WAIT_JOIN ? m->target_name : NULL, buf, sizeof(buf));
	m->object = wp_xstrdup(buf);
}

/* Drops the edges of loop members whose stacks do not confirm them. Returns how many. */
static size_t unconfirmed(struct wp_resolved *r, struct wp_dl_thread *v,
			  const struct wp_dl_cycle *c, size_t nc)
{
	size_t dropped = 0;
	for (size_t i = 0; i < nc; i++)
		for (size_t k = 0; k < c[i].n; k++) {
			struct wp_dl_thread *t = &v[c[i].members[k]];
			uint32_t n;
			struct wp_rframe *f = stack_frames(r, t->proc, t->stack, &n);
			if (!confirmed(t, kind_of(r, f, n))) {
				t->kind = WP_DL_NONE;
				dropped++;
			}
			free(f);
		}
	return dropped;
}

void wp_deadlocks_build(struct wp_resolved *r)
{
	wp_deadlocks_drop(r);
	size_t n = 0, edges = 0;
	for (size_t k = 0; k < r->nprocs; k++)
		n += r->procs[k]->nlasts;
	if (!n)
		return;
	struct wp_dl_thread *v = wp_xmalloc(n * sizeof(*v));
	const struct wp_last **from = wp_xmalloc(n * sizeof(*from));
	size_t at = 0;
	for (size_t k = 0; k < r->nprocs; k++)
		for (size_t i = 0; i < r->procs[k]->nlasts; i++, at++) {
			from[at] = &r->procs[k]->lasts[i];
			candidate(r->procs[k], from[at], (uint32_t)k, &v[at]);
			edges += v[at].kind != WP_DL_NONE;
		}
	struct wp_dl_cycle *c = NULL;
	size_t nc = 0;
	/* each round drops at least one edge, or ends */
	while (edges && (nc = wp_dl_find(v, n, &c)) && unconfirmed(r, v, c, nc)) {
		wp_dl_cycles_free(c, nc);
		c = NULL;
		nc = 0;
	}
	if (nc) {
		struct wp_deadlock *d = wp_xcalloc(nc, sizeof(*d));
		for (size_t i = 0; i < nc; i++) {
			d[i].n = c[i].n;
			d[i].m = wp_xcalloc(c[i].n, sizeof(*d[i].m));
			for (size_t j = 0; j < c[i].n; j++)
				name_member(r, &v[c[i].members[j]], from[c[i].members[j]], &d[i].m[j]);
		}
		r->deadlocks = d;
		r->ndeadlocks = nc;
	}
	wp_dl_cycles_free(c, nc);
	free(from);
	free(v);
}

void wp_deadlocks_drop(struct wp_resolved *r)
{
	for (size_t i = 0; i < r->ndeadlocks; i++) {
		for (size_t j = 0; j < r->deadlocks[i].n; j++) {
			free(r->deadlocks[i].m[j].object);
			free(r->deadlocks[i].m[j].frames);
		}
		free(r->deadlocks[i].m);
	}
	free((void *)r->deadlocks);
	r->deadlocks = NULL;
	r->ndeadlocks = 0;
}

/* Appends to buf (cap bytes) what printf would write; a full buffer keeps its start. */
static void append(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void append(char *buf, size_t cap, const char *fmt, ...)
{
	size_t at = strlen(buf);
	if (at + 1 >= cap)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf + at, cap - at, fmt, ap);
	va_end(ap);
}

void wp_deadlock_line(const struct wp_deadlock *d, char *buf, size_t cap)
{
	if (!cap)
		return;
	buf[0] = 0;
	append(buf, cap, "deadlock:");
	for (size_t j = 0; j < d->n; j++) {
		const struct wp_dl_member *m = &d->m[j];
		append(buf, cap, "%s %s tid=%u", j ? ";" : "", m->name, (unsigned)m->tid);
		if (m->waiter)
			append(buf, cap, " in %s", m->waiter);
		if (m->kind == WP_WAIT_JOIN)
			append(buf, cap, " joins %s tid=%u", m->target_name, (unsigned)m->target);
		else if (m->target == m->tid)
			append(buf, cap, " waits for %s %s held by itself", wp_wait_kind_name(m->kind),
			       m->object);
		else
			append(buf, cap, " waits for %s %s held by %s tid=%u",
			       wp_wait_kind_name(m->kind), m->object, m->target_name,
			       (unsigned)m->target);
	}
}
