/* SPDX-License-Identifier: MIT */
/* Names of JIT-compiled code from /tmp/perf-PID.map (the perf convention: "START SIZE name"
 * lines, hexadecimal), PID from the profile's "pid" META key. Read on the first address that
 * falls outside every module, or in anonymous executable memory. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sym_internal.h"

static int cmp_jit(const void *a, const void *b)
{
	const struct jit_sym *x = a, *y = b;
	if (x->r.lo != y->r.lo)
		return x->r.lo < y->r.lo ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* One "START SIZE name" line (its newline removed) into *j; 0 if it is not one. */
static int parse_line(char *p, struct jit_sym *j)
{
	char *e;
	errno = 0;
	uint64_t lo = strtoull(p, &e, 16);
	if (e == p || errno)
		return 0;
	p = e;
	uint64_t size = strtoull(p, &e, 16);
	if (e == p || errno || (*e != ' ' && *e != '\t'))
		return 0;
	p = e;
	while (*p == ' ' || *p == '\t')
		p++;
	if (!*p || !size || lo + size < lo)
		return 0;
	*j = (struct jit_sym){ .r = { .lo = lo, .hi = lo + size }, .name = p };
	return 1;
}

static void read_map(struct wp_symbolizer *s, FILE *f)
{
	size_t cap = 0, linecap = 0;
	char *line = NULL;
	ssize_t len;
	uint32_t seq = 0;
	while ((len = getline(&line, &linecap, f)) > 0) {
		while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = 0;
		struct jit_sym j;
		if (!parse_line(line, &j))
			continue;
		if (wp_grow(&s->jit, &cap, s->njit + 1, sizeof(*s->jit)))
			break;
		j.name = wp_arena_strdup(&s->arena, j.name);
		if (!j.name)
			break;
		j.seq = seq++;
		s->jit[s->njit++] = j;
	}
	free(line);
}

static void load_jit(struct wp_symbolizer *s)
{
	s->jit_loaded = 1;
	if (s->pid <= 0)
		return;
	char path[64];
	snprintf(path, sizeof(path), "/tmp/perf-%lld.map", s->pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return;
	struct stat st;
	if (fstat(fileno(f), &st) == 0 && st.st_uid != getuid() && st.st_uid != 0)
		sym_warn(s, "%s: owned by uid %u, not by you: JIT names taken from it as they are",
			 path, (unsigned)st.st_uid);
	read_map(s, f);
	fclose(f);
	qsort(s->jit, s->njit, sizeof(*s->jit), cmp_jit);
	wp_ranges_index(s->jit, s->njit, sizeof(*s->jit));
}

const struct jit_sym *sym_find_jit(struct wp_symbolizer *s, uint64_t pc)
{
	if (!s->jit_loaded)
		load_jit(s);
	struct wp_ranges_iter it;
	wp_ranges_iter_init(&it, s->jit, s->njit, sizeof(*s->jit), pc);
	const struct jit_sym *best = NULL, *j;
	/* code is recycled: the latest entry covering pc wins */
	while ((j = wp_ranges_next(&it)))
		if (!best || j->seq > best->seq)
			best = j;
	return best;
}
