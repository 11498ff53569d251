/* SPDX-License-Identifier: MIT */
/* Reading a wallprof profile (format v1, see format.h and docs/profile-format.md) back into
 * memory. The file is untrusted: every length is checked against the bytes that remain, every
 * count against the payload that must hold it, and every cross-reference (timeline -> stack,
 * stack/timeline -> thread) is resolved before the profile is handed out.
 *
 * The parse runs in passes over the record headers, which are cheap to walk:
 *   1. scan: check the header and the framing of every record up to END, and size everything
 *      (records by type, string bytes, pcs, timeline entries), so each array is allocated once;
 *   2. parse META, MODULE, THREAD and STACK records into those arrays;
 *   3. sort stacks by id (rejecting duplicates), modules by start, index threads by tid;
 *   4. decode the timeline records, grouped by thread, checking every stack id.
 * Nothing is allocated per entry, so a profile of ten million samples reads in a fraction of
 * a second. */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "profile.h"
#include "profile_impl.h"

#define WP_MAX_FILE_SIZE (UINT64_C(4) << 30)


/* One TIMELINE record, found by the scan. */
struct tl_rec {
	size_t off;   /* of the record header */
	uint64_t plen;
	uint64_t count;
	uint32_t tid;
	size_t order; /* file position among the timeline records */
	size_t group; /* `order` of the first timeline record of the same thread */
};

struct parser {
	const uint8_t *d;
	size_t len;
	char *err;
	size_t errlen;
	struct profile_impl *impl;
	unsigned what;             /* WP_READ_*: what to leave out */

	/* sizes found by the scan */
	size_t nmeta_max, nmodules, nthreads, nstacks, nwaits, nlasts;
	size_t str_bytes, npcs_max, ntl_entries;
	struct tl_rec *tl;
	size_t ntl, tl_cap;

	/* fill positions */
	size_t str_used, pcs_used;
};

__attribute__((format(printf, 3, 4))) static void set_err(char *err, size_t errlen,
							  const char *fmt, ...)
{
	if (!err || errlen == 0)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

#define fail(ps, ...) (set_err((ps)->err, (ps)->errlen, __VA_ARGS__), -1)

static inline uint32_t rd32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof v);
	return le32toh(v);
}

static inline uint64_t rd64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof v);
	return le64toh(v);
}

static const char *rec_name(uint32_t type, char buf[24])
{
	switch (type) {
	case WP_REC_META: return "META";
	case WP_REC_MODULE: return "MODULE";
	case WP_REC_THREAD: return "THREAD";
	case WP_REC_STACK: return "STACK";
	case WP_REC_TIMELINE: return "TIMELINE";
	case WP_REC_END: return "END";
	case WP_REC_WAIT: return "WAIT";
	case WP_REC_LAST: return "LAST";
	default:
		snprintf(buf, 24, "of type %" PRIu32, type);
		return buf;
	}
}

/* malloc(n * size) with an overflow check; never returns NULL for n == 0 on success. */
static void *alloc_array(size_t n, size_t size)
{
	if (n == 0)
		n = 1;
	if (n > SIZE_MAX / size)
		return NULL;
	return malloc(n * size);
}

static int oom(struct parser *ps, const char *what, size_t n)
{
	return fail(ps, "out of memory allocating %zu %s", n, what);
}

/* ---- pass 1: framing and sizes ---- */

static int scan_timeline(struct parser *ps, size_t off, const uint8_t *pl, uint64_t plen)
{
	struct wp_rec_timeline rec;
	if (plen < sizeof(rec))
		return fail(ps, "record TIMELINE at offset %zu: payload of %" PRIu64
			    " bytes is shorter than its %zu-byte header", off, plen, sizeof(rec));
	memcpy(&rec, pl, sizeof(rec));
	uint32_t tid = le32toh(rec.tid);
	uint64_t count = le64toh(rec.count);
	/* every entry takes at least two bytes (two one-byte varints) */
	uint64_t max = (plen - sizeof(rec)) / 2;
	if (count > max)
		return fail(ps, "timeline record at offset %zu (thread %" PRIu32 ") claims %" PRIu64
			    " entries but its %" PRIu64 "-byte payload holds at most %" PRIu64,
			    off, tid, count, plen, max);
	if (ps->ntl == ps->tl_cap) {
		size_t cap = ps->tl_cap ? ps->tl_cap * 2 : 64;
		struct tl_rec *n = NULL;
		if (cap <= SIZE_MAX / sizeof *n)
			n = realloc(ps->tl, cap * sizeof *n);
		if (!n)
			return oom(ps, "timeline records", cap);
		ps->tl = n;
		ps->tl_cap = cap;
	}
	struct tl_rec *r = &ps->tl[ps->ntl];
	r->off = off;
	r->plen = plen;
	r->count = count;
	r->tid = tid;
	r->order = ps->ntl;
	r->group = 0;
	ps->ntl++;
	/* count <= len / 2 for each record and the records do not overlap: no overflow */
	ps->ntl_entries += (size_t)count;
	return 0;
}

static int scan(struct parser *ps)
{
	const uint8_t *d = ps->d;
	size_t len = ps->len;
	char nb[24];

	if (len == 0)
		return fail(ps, "empty file: not a wallprof profile");
	size_t m = len < WP_MAGIC_LEN ? len : WP_MAGIC_LEN;
	if (memcmp(d, WP_MAGIC, m) != 0)
		return fail(ps, "not a wallprof profile (bad magic)");
	if (len < WP_HEADER_SIZE)
		return fail(ps, "truncated: the file is %zu bytes, shorter than the %u-byte header",
			    len, WP_HEADER_SIZE);
	uint32_t version = rd32(d + offsetof(struct wp_file_header, version));
	if (version == 0)
		return fail(ps, "not a wallprof profile (format version 0)");
	if (version > WP_FORMAT_VERSION)
		return fail(ps, "profile format version %" PRIu32
			    " is newer than this wallprof supports (%u)", version, WP_FORMAT_VERSION);

	size_t off = WP_HEADER_SIZE;
	for (;;) {
		if (off == len)
			return fail(ps, "missing END record: the file was cut short");
		size_t left = len - off;
		if (left < WP_RECORD_HEADER_SIZE)
			return fail(ps, "truncated: record header at offset %zu runs past end of file "
				    "(%zu of %u bytes present)", off, left, WP_RECORD_HEADER_SIZE);
		uint32_t type = rd32(d + off + offsetof(struct wp_rec_header, type));
		uint64_t plen = rd64(d + off + offsetof(struct wp_rec_header, len));
		left -= WP_RECORD_HEADER_SIZE;
		if (plen > left)
			return fail(ps, "truncated: record %s at offset %zu runs past end of file "
				    "(payload of %" PRIu64 " bytes, %zu left)",
				    rec_name(type, nb), off, plen, left);
		const uint8_t *pl = d + off + WP_RECORD_HEADER_SIZE;
		size_t n = (size_t)plen;

		switch (type) {
		case WP_REC_META: {
			/* lines <= newlines + 1 */
			size_t lines = 1;
			for (const uint8_t *p = pl, *e = pl + n;
			     (p = memchr(p, '\n', (size_t)(e - p))) != NULL; p++)
				lines++;
			ps->nmeta_max += lines;
			ps->str_bytes += n + 1;
			break;
		}
		case WP_REC_MODULE:
			ps->nmodules++;
			ps->str_bytes += n + 1;
			break;
		case WP_REC_THREAD:
			ps->nthreads++;
			ps->str_bytes += n + 1;
			break;
		case WP_REC_STACK:
			ps->nstacks++;
			ps->npcs_max += n / sizeof(uint64_t);
			break;
		case WP_REC_WAIT:
			ps->nwaits++;
			ps->str_bytes += n + 1;
			break;
		case WP_REC_LAST:
			ps->nlasts++;
			break;
		case WP_REC_TIMELINE: /* left out: neither decoded nor checked */
			if (!(ps->what & WP_READ_NO_TIMELINE) && scan_timeline(ps, off, pl, plen) < 0)
				return -1;
			break;
		default:
			break; /* END below; unknown types are skipped */
		}

		off += WP_RECORD_HEADER_SIZE + n;
		if (type == WP_REC_END) {
			if (off != len)
				return fail(ps, "unexpected data after the END record: %zu bytes at "
					    "offset %zu", len - off, off);
			return 0;
		}
	}
}

/* ---- pass 2: META, MODULE, THREAD, STACK ---- */

static char *str_copy(struct parser *ps, const uint8_t *s, size_t n)
{
	char *out = ps->impl->strings + ps->str_used;
	memcpy(out, s, n);
	out[n] = '\0';
	ps->str_used += n + 1;
	return out;
}

/* Up to 60 bytes of untrusted text, printable ASCII only, for an error message. */
static const char *excerpt(const uint8_t *s, size_t n, char out[64])
{
	size_t k = n > 60 ? 60 : n;
	for (size_t i = 0; i < k; i++)
		out[i] = s[i] >= 0x20 && s[i] < 0x7f ? (char)s[i] : '?';
	out[k] = '\0';
	return out;
}

static int parse_meta(struct parser *ps, size_t off, const uint8_t *pl, size_t n)
{
	struct wp_profile *p = &ps->impl->pub;
	if (memchr(pl, '\0', n))
		return fail(ps, "META record at offset %zu contains a NUL byte", off);
	const uint8_t *s = pl, *end = pl + n;
	size_t lineno = 0;
	while (s < end) {
		lineno++;
		const uint8_t *nl = memchr(s, '\n', (size_t)(end - s));
		const uint8_t *le = nl ? nl : end;
		if (le != s) {
			const uint8_t *eq = memchr(s, '=', (size_t)(le - s));
			char ex[64];
			if (!eq)
				return fail(ps, "META record at offset %zu: line %zu has no '=' (\"%s\")",
					    off, lineno, excerpt(s, (size_t)(le - s), ex));
			if (eq == s)
				return fail(ps, "META record at offset %zu: line %zu has an empty key "
					    "(\"%s\")", off, lineno, excerpt(s, (size_t)(le - s), ex));
			struct wp_meta *mt = &p->meta[p->nmeta++];
			mt->key = str_copy(ps, s, (size_t)(eq - s));
			mt->value = str_copy(ps, eq + 1, (size_t)(le - eq - 1));
		}
		s = nl ? nl + 1 : end;
	}
	return 0;
}

/* Copies the fixed fields of a record (one of format.h's struct wp_rec_*) out of its payload;
 * -1 with an error naming the record when the payload is shorter. */
static int fixed(struct parser *ps, const char *what, size_t off, const uint8_t *pl, size_t n,
		 void *rec, size_t size)
{
	if (n < size)
		return fail(ps, "record %s at offset %zu: payload of %zu bytes is shorter than the "
			    "%zu bytes of its fixed fields", what, off, n, size);
	memcpy(rec, pl, size);
	return 0;
}

/* The length of a record's text field (a module's path, a thread's name) against the limit. */
static int text_len_ok(struct parser *ps, const char *rec, uint32_t id, size_t off,
		       const char *what, uint32_t len)
{
	if (len > WP_MAX_NAME)
		return fail(ps, "%s %" PRIu32 " at offset %zu: %s of %" PRIu32 " bytes exceeds the "
			    "limit of %u", rec, id, off, what, len, WP_MAX_NAME);
	return 0;
}

/* A text field of `len` bytes at `at`, inside its record: its copy, or NULL when it holds a
 * NUL byte (with the error said as for text_len_ok). */
static char *text_copy(struct parser *ps, const char *rec, uint32_t id, size_t off,
		       const char *what, const uint8_t *at, uint32_t len)
{
	if (memchr(at, '\0', len)) {
		set_err(ps->err, ps->errlen, "%s %" PRIu32 " at offset %zu: %s contains a NUL byte",
			rec, id, off, what);
		return NULL;
	}
	return str_copy(ps, at, len);
}

/* A MODULE record: its fixed fields r, its whole payload pl (n bytes), into `mo`. */
static int parse_module(struct parser *ps, size_t off, const struct wp_rec_module *r,
			const uint8_t *pl, size_t n, struct wp_module *mo)
{
	*mo = (struct wp_module){ .id = le32toh(r->id), .flags = le32toh(r->flags),
				  .start = le64toh(r->start), .end = le64toh(r->end),
				  .file_offset = le64toh(r->file_offset) };
	uint32_t bid_len = le32toh(r->build_id_len), path_len = le32toh(r->path_len);
	if (bid_len > WP_MAX_BUILD_ID)
		return fail(ps, "module %" PRIu32 " at offset %zu: build-id of %" PRIu32
			    " bytes exceeds the limit of %u", mo->id, off, bid_len, WP_MAX_BUILD_ID);
	if (text_len_ok(ps, "module", mo->id, off, "path", path_len) < 0)
		return -1;
	if ((size_t)bid_len + path_len > n - sizeof(*r))
		return fail(ps, "module %" PRIu32 " at offset %zu: build-id and path (%" PRIu32
			    " + %" PRIu32 " bytes) run past the end of its %zu-byte record",
			    mo->id, off, bid_len, path_len, n);
	if (mo->start >= mo->end)
		return fail(ps, "module %" PRIu32 " at offset %zu: start 0x%" PRIx64
			    " is not below end 0x%" PRIx64, mo->id, off, mo->start, mo->end);
	memcpy(mo->build_id, pl + sizeof(*r), bid_len);
	mo->build_id_len = bid_len;
	mo->path = text_copy(ps, "module", mo->id, off, "path", pl + sizeof(*r) + bid_len, path_len);
	return mo->path ? 0 : -1;
}

/* A THREAD record (as parse_module). */
static int parse_thread(struct parser *ps, size_t off, const struct wp_rec_thread *r,
			const uint8_t *pl, size_t n, struct wp_thread *t)
{
	*t = (struct wp_thread){ .tid = le32toh(r->tid), .flags = le32toh(r->flags),
				 .samples = le64toh(r->samples), .running = le64toh(r->running),
				 .waiting = le64toh(r->waiting), .first_ns = le64toh(r->first_ns),
				 .last_ns = le64toh(r->last_ns) };
	uint32_t name_len = le32toh(r->name_len);
	if (text_len_ok(ps, "thread", t->tid, off, "name", name_len) < 0)
		return -1;
	if (name_len > n - sizeof(*r))
		return fail(ps, "thread %" PRIu32 " at offset %zu: name of %" PRIu32
			    " bytes runs past the end of its %zu-byte record", t->tid, off, name_len, n);
	t->name = text_copy(ps, "thread", t->tid, off, "name", pl + sizeof(*r), name_len);
	if (!t->name)
		return -1;
	/* appended after THREAD's first version, after the name: the time it ran unseen and
	 * why (absent in older files) */
	const uint8_t *q = pl + sizeof(*r) + name_len;
	size_t left = n - sizeof(*r) - name_len;
	uint32_t why_len = 0;
	if (left >= 8)
		t->unseen_ns = rd64(q);
	if (left >= 12)
		why_len = rd32(q + 8);
	if (text_len_ok(ps, "thread", t->tid, off, "unseen reason", why_len) < 0)
		return -1;
	if (left >= 12 && why_len > left - 12)
		return fail(ps, "thread %" PRIu32 " at offset %zu: unseen reason of %" PRIu32
			    " bytes runs past the end of its %zu-byte record", t->tid, off, why_len, n);
	t->unseen_why = text_copy(ps, "thread", t->tid, off, "unseen reason",
				  left >= 12 ? q + 12 : q, why_len);
	return t->unseen_why ? 0 : -1;
}

/* A STACK record (as parse_module). */
static int parse_stack(struct parser *ps, size_t off, const struct wp_rec_stack *r,
		       const uint8_t *pl, size_t n, struct wp_stack *s)
{
	*s = (struct wp_stack){ .id = le32toh(r->id), .tid = le32toh(r->tid),
				.flags = le32toh(r->flags), .nframes = le32toh(r->nframes),
				.count = le64toh(r->count), .weight_ns = le64toh(r->weight_ns) };
	if (s->nframes > WP_MAX_FRAMES)
		return fail(ps, "stack %" PRIu32 " at offset %zu has %" PRIu32
			    " frames, more than the limit of %u", s->id, off, s->nframes, WP_MAX_FRAMES);
	if ((size_t)s->nframes * sizeof(uint64_t) > n - sizeof(*r))
		return fail(ps, "stack %" PRIu32 " at offset %zu: %" PRIu32
			    " frames run past the end of its %zu-byte record", s->id, off, s->nframes, n);
	s->pcs = ps->impl->pcs + ps->pcs_used;
	const uint8_t *q = pl + sizeof(*r);
	for (uint32_t i = 0; i < s->nframes; i++, q += sizeof(uint64_t))
		s->pcs[i] = rd64(q);
	ps->pcs_used += s->nframes;
	return 0;
}

/* A WAIT record (as parse_module). */
static int parse_wait(struct parser *ps, size_t off, const struct wp_rec_wait *r,
		      const uint8_t *pl, size_t n, struct wp_wait *w)
{
	*w = (struct wp_wait){ .stack_id = le32toh(r->stack_id), .nr = le32toh(r->nr),
			       .a0 = le64toh(r->a0), .a1 = le64toh(r->a1), .a2 = le64toh(r->a2),
			       .aux = le64toh(r->aux), .count = le64toh(r->count),
			       .weight_ns = le64toh(r->weight_ns) };
	uint32_t len = le32toh(r->target_len);
	if (text_len_ok(ps, "wait of stack", w->stack_id, off, "target", len) < 0)
		return -1;
	if (len > n - sizeof(*r))
		return fail(ps, "wait of stack %" PRIu32 " at offset %zu: target of %" PRIu32
			    " bytes runs past the end of its %zu-byte record", w->stack_id, off,
			    len, n);
	w->target = text_copy(ps, "wait of stack", w->stack_id, off, "target", pl + sizeof(*r),
			      len);
	/* appended after WAIT's first version, after the target: the holder's stack id (checked once every STACK is in) */
	w->holder_stack = WP_WAIT_NO_HOLDER_STACK;
	if (n - sizeof(*r) - len >= 4)
		w->holder_stack = rd32(pl + sizeof(*r) + len);
	/* appended after holder_stack: a condition wait's mutex (0: none, or an older file) */
	w->cond_mutex = 0;
	if (n - sizeof(*r) - len >= 12)
		w->cond_mutex = rd64(pl + sizeof(*r) + len + 4);
	return w->target ? 0 : -1;
}

static int allocate(struct parser *ps)
{
	struct profile_impl *im = ps->impl;
	struct wp_profile *p = &im->pub;
	if (!(p->meta = alloc_array(ps->nmeta_max, sizeof *p->meta)))
		return oom(ps, "META entries", ps->nmeta_max);
	if (!(p->modules = alloc_array(ps->nmodules, sizeof *p->modules)))
		return oom(ps, "modules", ps->nmodules);
	if (!(p->threads = alloc_array(ps->nthreads, sizeof *p->threads)))
		return oom(ps, "threads", ps->nthreads);
	if (!(p->stacks = alloc_array(ps->nstacks, sizeof *p->stacks)))
		return oom(ps, "stacks", ps->nstacks);
	if (!(p->waits = alloc_array(ps->nwaits, sizeof *p->waits)))
		return oom(ps, "waits", ps->nwaits);
	if (!(p->lasts = alloc_array(ps->nlasts, sizeof *p->lasts)))
		return oom(ps, "last states", ps->nlasts);
	if (!(p->timeline = alloc_array(ps->ntl_entries, sizeof *p->timeline)))
		return oom(ps, "timeline entries", ps->ntl_entries);
	if (!(im->strings = alloc_array(ps->str_bytes, 1)))
		return oom(ps, "string bytes", ps->str_bytes);
	if (!(im->pcs = alloc_array(ps->npcs_max, sizeof *im->pcs)))
		return oom(ps, "frames", ps->npcs_max);
	return 0;
}

static int parse_records(struct parser *ps)
{
	struct wp_profile *p = &ps->impl->pub;
	size_t off = WP_HEADER_SIZE;
	for (;;) {
		/* the scan checked the framing up to and including END */
		uint32_t type = rd32(ps->d + off + offsetof(struct wp_rec_header, type));
		size_t n = (size_t)rd64(ps->d + off + offsetof(struct wp_rec_header, len));
		const uint8_t *pl = ps->d + off + WP_RECORD_HEADER_SIZE;
		union {
			struct wp_rec_module m;
			struct wp_rec_thread t;
			struct wp_rec_stack s;
			struct wp_rec_wait w;
			struct wp_rec_last l;
		} f;
		int r = 0;
		switch (type) {
		case WP_REC_META: r = parse_meta(ps, off, pl, n); break;
		case WP_REC_MODULE:
			r = fixed(ps, "MODULE", off, pl, n, &f.m, sizeof(f.m)) ?:
			    parse_module(ps, off, &f.m, pl, n, &p->modules[p->nmodules++]);
			break;
		case WP_REC_THREAD:
			r = fixed(ps, "THREAD", off, pl, n, &f.t, sizeof(f.t)) ?:
			    parse_thread(ps, off, &f.t, pl, n, &p->threads[p->nthreads++]);
			break;
		case WP_REC_STACK:
			r = fixed(ps, "STACK", off, pl, n, &f.s, sizeof(f.s)) ?:
			    parse_stack(ps, off, &f.s, pl, n, &p->stacks[p->nstacks++]);
			break;
		case WP_REC_WAIT:
			r = fixed(ps, "WAIT", off, pl, n, &f.w, sizeof(f.w)) ?:
			    parse_wait(ps, off, &f.w, pl, n, &p->waits[p->nwaits++]);
			break;
		case WP_REC_LAST:
			r = fixed(ps, "LAST", off, pl, n, &f.l, sizeof(f.l));
			if (r == 0)
				p->lasts[p->nlasts++] = (struct wp_last){
					.tid = le32toh(f.l.tid), .flags = le32toh(f.l.flags),
					.stack_id = le32toh(f.l.stack_id), .nr = le32toh(f.l.nr),
					.a0 = le64toh(f.l.a0), .a1 = le64toh(f.l.a1),
					.a2 = le64toh(f.l.a2), .aux = le64toh(f.l.aux),
					.cond_mutex = le64toh(f.l.cond_mutex),
					.at_ns = le64toh(f.l.at_ns) };
			break;
		case WP_REC_END: return 0;
		default: break;
		}
		if (r < 0)
			return -1;
		off += WP_RECORD_HEADER_SIZE + n;
	}
}

/* ---- pass 3: ordering and indexes ---- */

static int cmp_stack(const void *a, const void *b)
{
	uint32_t x = ((const struct wp_stack *)a)->id, y = ((const struct wp_stack *)b)->id;
	return x < y ? -1 : x > y;
}

static int cmp_module(const void *a, const void *b)
{
	const struct wp_module *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->end != y->end)
		return x->end < y->end ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static int cmp_thread_idx(const void *a, const void *b, void *threads)
{
	const struct wp_thread *t = threads;
	size_t i = *(const size_t *)a, j = *(const size_t *)b;
	uint32_t x = t[i].tid, y = t[j].tid;
	if (x != y)
		return x < y ? -1 : 1;
	return i < j ? -1 : i > j;
}

static int index_profile(struct parser *ps)
{
	struct profile_impl *im = ps->impl;
	struct wp_profile *p = &im->pub;

	/* stacks: usually written in id order already */
	int sorted = 1;
	for (size_t i = 1; i < p->nstacks && sorted; i++)
		sorted = p->stacks[i - 1].id < p->stacks[i].id;
	if (!sorted)
		qsort(p->stacks, p->nstacks, sizeof *p->stacks, cmp_stack);
	for (size_t i = 1; i < p->nstacks; i++)
		if (p->stacks[i - 1].id == p->stacks[i].id)
			return fail(ps, "duplicate stack id %" PRIu32 ": two STACK records share it",
				    p->stacks[i].id);

	/* modules by start; module_max_end lets lookups stop early over overlapping ranges */
	qsort(p->modules, p->nmodules, sizeof *p->modules, cmp_module);
	if (!(im->module_max_end = alloc_array(p->nmodules, sizeof *im->module_max_end)))
		return oom(ps, "module index entries", p->nmodules);
	uint64_t mx = 0;
	for (size_t i = 0; i < p->nmodules; i++) {
		if (p->modules[i].end > mx)
			mx = p->modules[i].end;
		im->module_max_end[i] = mx;
	}

	/* threads by tid, file order among equal tids (a tid can be reused) */
	if (!(im->thread_by_tid = alloc_array(p->nthreads, sizeof *im->thread_by_tid)))
		return oom(ps, "thread index entries", p->nthreads);
	for (size_t i = 0; i < p->nthreads; i++)
		im->thread_by_tid[i] = i;
	qsort_r(im->thread_by_tid, p->nthreads, sizeof *im->thread_by_tid, cmp_thread_idx,
		p->threads);

	for (size_t i = 0; i < p->nstacks; i++)
		if (!wp_profile_thread(p, p->stacks[i].tid))
			return fail(ps, "stack %" PRIu32 " refers to thread %" PRIu32
				    ", which has no THREAD record", p->stacks[i].id, p->stacks[i].tid);
	for (size_t i = 0; i < p->nwaits; i++)
		if (p->waits[i].holder_stack != WP_WAIT_NO_HOLDER_STACK &&
		    !wp_profile_stack(p, p->waits[i].holder_stack))
			return fail(ps, "wait of stack %" PRIu32 " names holder stack %" PRIu32
				    ", which has no STACK record", p->waits[i].stack_id,
				    p->waits[i].holder_stack);
	return 0;
}

/* ---- pass 4: the timeline ---- */

static int cmp_tl_tid(const void *a, const void *b)
{
	const struct tl_rec *x = a, *y = b;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

static int cmp_tl_group(const void *a, const void *b)
{
	const struct tl_rec *x = a, *y = b;
	if (x->group != y->group)
		return x->group < y->group ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* Which stack ids exist: a bitmap when the ids are dense enough, else a binary search. */
struct idset {
	uint8_t *bits;
	uint64_t nbits;
	const struct wp_profile *p;
	uint32_t last_hit;
	int have_last;
};

static int idset_init(struct idset *s, const struct wp_profile *p)
{
	memset(s, 0, sizeof *s);
	s->p = p;
	if (p->nstacks == 0)
		return 0;
	uint64_t nbits = (uint64_t)p->stacks[p->nstacks - 1].id + 1;
	uint64_t bytes = (nbits + 7) / 8;
	if (bytes > (UINT64_C(1) << 20) && bytes / 64 > p->nstacks)
		return 0; /* sparse ids: bsearch */
	s->bits = calloc((size_t)bytes, 1);
	if (!s->bits)
		return -1;
	s->nbits = nbits;
	for (size_t i = 0; i < p->nstacks; i++)
		s->bits[p->stacks[i].id >> 3] |= (uint8_t)(1u << (p->stacks[i].id & 7));
	return 0;
}

static inline int idset_has(struct idset *s, uint64_t id)
{
	if (s->bits)
		return id < s->nbits && ((s->bits[id >> 3] >> (id & 7)) & 1);
	if (id > UINT32_MAX)
		return 0;
	if (s->have_last && s->last_hit == id)
		return 1;
	if (wp_profile_stack(s->p, (uint32_t)id)) {
		s->last_hit = (uint32_t)id;
		s->have_last = 1;
		return 1;
	}
	return 0;
}

/* LEB128, at most 10 bytes, must fit 64 bits. 0 ok, -1 runs past end, -2 too long/overflow. */
static inline int get_varint(const uint8_t **pp, const uint8_t *end, uint64_t *v)
{
	const uint8_t *p = *pp;
	if (p < end && *p < 0x80) {
		*v = *p;
		*pp = p + 1;
		return 0;
	}
	uint64_t r = 0;
	for (unsigned i = 0; i < 10; i++) {
		if (p >= end)
			return -1;
		uint8_t b = *p++;
		if (i == 9 && b > 1)
			return -2;
		r |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			*v = r;
			*pp = p;
			return 0;
		}
	}
	return -2;
}

static int varint_fail(struct parser *ps, int rc, const struct tl_rec *r, uint64_t entry,
		       const char *what)
{
	if (rc == -1)
		return fail(ps, "timeline record at offset %zu (thread %" PRIu32 "): the %s of entry %"
			    PRIu64 " runs past the end of the record", r->off, r->tid, what, entry);
	return fail(ps, "timeline record at offset %zu (thread %" PRIu32 "): the %s of entry %"
		    PRIu64 " is a varint longer than 10 bytes or overflowing 64 bits",
		    r->off, r->tid, what, entry);
}

static int decode_timeline(struct parser *ps)
{
	struct wp_profile *p = &ps->impl->pub;
	size_t ntl = ps->ntl;
	if (ntl == 0)
		return 0;

	/* group records by thread, threads in order of their first record */
	struct tl_rec *tl = ps->tl;
	qsort(tl, ntl, sizeof *tl, cmp_tl_tid);
	for (size_t i = 0; i < ntl; i++)
		tl[i].group = (i > 0 && tl[i - 1].tid == tl[i].tid) ? tl[i - 1].group : tl[i].order;
	qsort(tl, ntl, sizeof *tl, cmp_tl_group);

	struct idset ids;
	if (idset_init(&ids, p) < 0)
		return oom(ps, "bytes of stack id bitmap", (size_t)(p->stacks[p->nstacks - 1].id / 8));

	int rc = 0;
	struct wp_tl_entry *out = p->timeline;
	uint64_t prev_t = 0;
	for (size_t i = 0; i < ntl && rc == 0; i++) {
		const struct tl_rec *r = &tl[i];
		int same_thread = i > 0 && tl[i - 1].tid == r->tid;
		if (!same_thread) {
			if (!wp_profile_thread(p, r->tid)) {
				rc = fail(ps, "timeline record at offset %zu is for thread %" PRIu32
					  ", which has no THREAD record", r->off, r->tid);
				break;
			}
			prev_t = 0;
		}
		const uint8_t *pl = ps->d + r->off + WP_RECORD_HEADER_SIZE;
		const uint8_t *q = pl + sizeof(struct wp_rec_timeline), *end = pl + r->plen;
		uint64_t t = 0;
		const uint32_t tid = r->tid;
		for (uint64_t k = 0; k < r->count; k++) {
			uint64_t dt, sid;
			int vr = get_varint(&q, end, &dt);
			if (vr < 0) {
				rc = varint_fail(ps, vr, r, k, "time delta");
				break;
			}
			vr = get_varint(&q, end, &sid);
			if (vr < 0) {
				rc = varint_fail(ps, vr, r, k, "stack id");
				break;
			}
			if (dt > UINT64_MAX - t) {
				rc = fail(ps, "timeline record at offset %zu (thread %" PRIu32
					  "): time overflows 64 bits at entry %" PRIu64, r->off, tid, k);
				break;
			}
			t += dt;
			if (!idset_has(&ids, sid)) {
				if (sid > UINT32_MAX)
					rc = fail(ps, "timeline record at offset %zu (thread %" PRIu32
						  "): entry %" PRIu64 " has stack id %" PRIu64
						  ", out of range", r->off, tid, k, sid);
				else
					rc = fail(ps, "timeline record at offset %zu (thread %" PRIu32
						  "): entry %" PRIu64 " refers to stack %" PRIu64
						  ", which has no STACK record", r->off, tid, k, sid);
				break;
			}
			if (k == 0 && same_thread && t < prev_t) {
				rc = fail(ps, "timeline of thread %" PRIu32 " goes back in time: the "
					  "record at offset %zu starts at %" PRIu64 " us, before the "
					  "previous record's last entry at %" PRIu64 " us",
					  tid, r->off, t, prev_t);
				break;
			}
			out->t_us = t;
			out->tid = tid;
			out->stack_id = (uint32_t)sid;
			out++;
		}
		if (r->count > 0)
			prev_t = t;
	}
	free(ids.bits);
	if (rc == 0)
		p->ntimeline = (size_t)(out - p->timeline);
	return rc;
}

/* ---- API ---- */

void wp_profile_free(struct wp_profile *p)
{
	if (!p)
		return;
	struct profile_impl *im = (struct profile_impl *)p;
	free(p->meta);
	free(p->modules);
	free(p->threads);
	free(p->stacks);
	free(p->timeline);
	free(p->waits);
	free(p->lasts);
	free(im->strings);
	free(im->pcs);
	free(im->thread_by_tid);
	free(im->module_max_end);
	free(im);
}

static int parse(const uint8_t *data, size_t len, unsigned what, struct wp_profile **out,
		 char *err, size_t errlen)
{
	struct parser ps;
	memset(&ps, 0, sizeof ps);
	ps.what = what;
	ps.d = data;
	ps.len = data ? len : 0;
	ps.err = err;
	ps.errlen = errlen;
	if (err && errlen)
		err[0] = '\0';
	if (out)
		*out = NULL;
	if (!out)
		return fail(&ps, "internal error: no place for the profile");

	int rc = -1;
	ps.impl = calloc(1, sizeof *ps.impl);
	if (!ps.impl) {
		oom(&ps, "bytes", sizeof *ps.impl);
		goto done;
	}
	if (scan(&ps) < 0 || allocate(&ps) < 0 || parse_records(&ps) < 0 ||
	    index_profile(&ps) < 0 || decode_timeline(&ps) < 0)
		goto done;
	wp_profile_fill_info(&ps.impl->pub);
	*out = &ps.impl->pub;
	ps.impl = NULL;
	rc = 0;
done:
	if (ps.impl)
		wp_profile_free(&ps.impl->pub);
	free(ps.tl);
	return rc;
}

int wp_profile_parse(const uint8_t *data, size_t len, struct wp_profile **out, char *err,
		     size_t errlen)
{
	return parse(data, len, WP_READ_ALL, out, err, errlen);
}

int wp_profile_read(const char *path, struct wp_profile **out, char *err, size_t errlen)
{
	return wp_profile_read_some(path, WP_READ_ALL, out, err, errlen);
}

int wp_profile_read_some(const char *path, unsigned what, struct wp_profile **out, char *err,
			 size_t errlen)
{
	if (out)
		*out = NULL;
	if (err && errlen)
		err[0] = '\0';
	/* O_NONBLOCK: opening a FIFO must not wait for a writer (it is rejected below) */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		set_err(err, errlen, "cannot open: %s", strerror(errno));
		return -1;
	}
	struct stat st;
	if (fstat(fd, &st) < 0) {
		set_err(err, errlen, "cannot stat: %s", strerror(errno));
		close(fd);
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		set_err(err, errlen, "not a regular file (%s)",
			S_ISDIR(st.st_mode) ? "a directory" : S_ISFIFO(st.st_mode) ? "a pipe" :
			S_ISCHR(st.st_mode) ? "a character device" : S_ISBLK(st.st_mode) ?
			"a block device" : S_ISSOCK(st.st_mode) ? "a socket" : "a special file");
		close(fd);
		return -1;
	}
	if ((uint64_t)st.st_size > WP_MAX_FILE_SIZE) {
		set_err(err, errlen, "the file is %" PRIu64 " bytes, larger than the 4 GiB limit "
			"for a profile", (uint64_t)st.st_size);
		close(fd);
		return -1;
	}
	size_t len = (size_t)st.st_size;
	if (len == 0) {
		close(fd);
		return parse(NULL, 0, what, out, err, errlen);
	}
	/* MAP_POPULATE: one bulk read-ahead instead of a page fault per 4 KiB. (If another
	 * process truncates the file while we read it, the kernel raises SIGBUS: profiles are
	 * written to a temporary name and renamed into place, so this does not happen to a
	 * finished profile.) */
	void *map = mmap(NULL, len, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
	int saved = errno;
	close(fd);
	if (map == MAP_FAILED) {
		set_err(err, errlen, "cannot map the file: %s", strerror(saved));
		return -1;
	}
	int rc = parse(map, len, what, out, err, errlen);
	munmap(map, len);
	return rc;
}
