/* SPDX-License-Identifier: MIT */
/* Folded stacks, the format flamegraph.pl and speedscope read: "root;caller;leaf COUNT",
 * one distinct stack a line (stacks that symbolize alike are merged), sorted. With --waits,
 * a waiting sample's stack ends with "[wait KIND OBJECT]" and, for a lock whose holder is
 * known, "[held by NAME tid=N]" and the holder's frames in the same tick, root first
 * (docs/profile-format.md, "Waits"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "uthash_cfg.h"

#include "cli.h"

struct line {
	UT_hash_handle hh;
	uint64_t count;
	char text[];
};

/* Folded lines are split on ';' and the last ' ', so a name must not contain ';' or a line
 * break; spaces are fine (flamegraph.pl splits on the LAST space). */
static size_t put_name(char *dst, size_t at, size_t cap, const char *s)
{
	for (; *s && at + 1 < cap; s++)
		dst[at++] = *s == ';' ? ':' : (*s == '\n' || *s == '\r') ? ' ' : *s;
	return at;
}

static int by_text(struct line *a, struct line *b)
{
	return strcmp(a->text, b->text);
}

/* Builds the folded text of stack `s` into buf; returns its length. */
size_t wp_folded_stack(const struct wp_opts *o, const struct wp_resolved *r,
		       const struct wp_rstack *s, char *buf, size_t cap)
{
	size_t n = 0;
	if (o->per_process) {
		char root[64], prog[256];
		n = put_name(buf, n, cap, "[");
		n = put_name(buf, n, cap, wp_resolved_program(r, s->proc, prog, sizeof(prog)));
		snprintf(root, sizeof(root), " pid=%ld]", wp_resolved_pid(r, s->proc));
		n = put_name(buf, n, cap, root);
	}
	if (o->per_thread) {
		const struct wp_thread *t = wp_resolved_thread_of(r, s->proc, s->tid);
		if (n && n + 1 < cap)
			buf[n++] = ';';
		char root[64];
		n = put_name(buf, n, cap, "[");
		n = put_name(buf, n, cap, t && t->name && *t->name ? t->name : "?");
		snprintf(root, sizeof(root), " tid=%u]", s->tid);
		n = put_name(buf, n, cap, root);
	}
	for (uint32_t j = 0; j < s->n; j++) {
		if (n && n + 1 < cap)
			buf[n++] = ';';
		n = put_name(buf, n, cap, r->funcs[s->frames[j].func].name);
	}
	buf[n] = 0;
	return n;
}

/* Appends the frames of wait `w` (of a stack of process `proc`) to the stack text of length
 * n in buf; `frame`: its [wait ...] frame goes after the stack (wp_rwait_adds_frame). */
static size_t put_wait(const struct wp_resolved *r, uint32_t proc, const struct wp_rwait *w,
		       int frame, char *buf, size_t n, size_t cap)
{
	if (frame) {
		char name[WP_WAIT_LEAF_MAX];
		wp_wait_frame_name(w, name, sizeof(name));
		if (n + 1 < cap)
			buf[n++] = ';';
		n = put_name(buf, n, cap, name);
	}
	if (w->holder) {
		const struct wp_thread *t = wp_resolved_thread_of(r, proc, w->holder);
		char tid[32];
		if (n + 1 < cap)
			buf[n++] = ';';
		n = put_name(buf, n, cap, "[held by ");
		n = put_name(buf, n, cap, t && t->name && *t->name ? t->name : "?");
		snprintf(tid, sizeof(tid), " tid=%u]", w->holder);
		n = put_name(buf, n, cap, tid);
		/* the holder's stack in the same tick, root first, above its frame */
		for (uint32_t j = 0; j < w->holder_n; j++) {
			if (n + 1 < cap)
				buf[n++] = ';';
			n = put_name(buf, n, cap, r->funcs[w->holder_frames[j].func].name);
		}
	}
	buf[n] = 0;
	return n;
}

static int add_line(struct line **lines, const char *text, size_t n, uint64_t count)
{
	struct line *l;
	HASH_FIND(hh, *lines, text, n, l);
	if (!l) {
		l = malloc(sizeof(*l) + n + 1);
		if (!l) {
			fprintf(stderr, "wallprof: out of memory\n");
			return -1;
		}
		l->count = 0;
		memcpy(l->text, text, n);
		l->text[n] = 0;
		HASH_ADD_KEYPTR(hh, *lines, l->text, n, l);
	}
	l->count += count;
	return 0;
}

int wp_report_folded(const struct wp_opts *o, const struct wp_resolved *r,
		     const struct wp_summary *sum, FILE *out)
{
	(void)sum;
	static char buf[1 << 18];
	struct line *lines = NULL, *l, *tmp;
	for (size_t i = 0; i < r->nstacks; i++) {
		const struct wp_rstack *s = &r->stacks[i];
		if (!s->count || !s->n)
			continue;
		size_t n = wp_folded_stack(o, r, s, buf, sizeof(buf));
		uint64_t rest = o->waits ? wp_rstack_unwaited(s) : s->count;
		int frame = wp_rwait_adds_frame(r, s);
		for (uint32_t k = 0; o->waits && k < s->nwaits; k++) {
			uint64_t c = wp_rwait_samples(s, k);
			if (!c)
				continue;
			size_t m = put_wait(r, s->proc, &s->waits[k], frame, buf, n, sizeof(buf));
			if (add_line(&lines, buf, m, c) < 0)
				return -1;
			buf[n] = 0;
		}
		if (rest && add_line(&lines, buf, n, rest) < 0)
			return -1;
	}
	HASH_SORT(lines, by_text);
	HASH_ITER(hh, lines, l, tmp) {
		fprintf(out, "%s %llu\n", l->text, (unsigned long long)l->count);
		HASH_DEL(lines, l);
		free(l);
	}
	return ferror(out) ? -1 : 0;
}
