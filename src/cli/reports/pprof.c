/* SPDX-License-Identifier: MIT */
/* --format=pprof: the profile as a gzipped perftools.profiles.Profile (profile.proto), as
 * `go tool pprof` and the other pprof readers load it.
 *
 * Encoder: the protobuf wire format is written by hand (varints, and length-delimited
 * submessages built in scratch buffers). profile.proto needs only two wire types and a dozen
 * small messages, so the encoder is a few dozen lines with no new dependency, no generated
 * code and no .proto to keep in step; protobuf-c would have added a build-time compiler, a
 * runtime library and an in-memory copy of every message for the same bytes. gzip is zlib's.
 *
 * What goes in:
 * - sample types [samples/count, wall|cpu/nanoseconds] (by the "mode" META key), values
 *   [count, weight_ns] of each stack; the time type is the default one;
 * - period type wall|cpu/nanoseconds, period 1e9/hz; time_nanos and duration_nanos;
 * - on every sample the string labels "thread" (its name) and "thread_id" (the tid, as a
 *   string so `-tags` lists it readably), "pid" and "process" (the program's name), and in
 *   wall mode "state" (running, runnable: waiting for a CPU, or waiting: blocked);
 * - a waiting sample whose wait is known has "wait" (the kind: lock, io, sleep, ...),
 *   "wait_object" (big_lock, pipe:[1234], 10ms: the object as the text report's WAITS names
 *   it) and, for a lock whose holder is a thread of the profile, "holder" ("NAME tid=N").
 *   A stack is one Sample per wait it was seen in (a loop that reads two pipes is two
 *   Samples with the same locations) plus one for its samples with no wait known; their
 *   values add up to the stack's;
 * - one Location per location of the model (a distinct pc and role: a leaf pc is looked up
 *   as is, a return address at pc-1, so the same address in both roles gives two
 *   Locations), with its Mapping and address; an inline chain is one Location with several
 *   Lines, innermost first; the model has no agent frames (libwallprof.so's EINTR-retrying
 *   wrappers), as in every other report, and a stack made only of them is dropped;
 * - Functions by the model's function (name, module) and file; start_line 0 (not known);
 * - one Mapping per executable module mapping, the main executable first (pprof takes
 *   mapping[0] for the main binary), with the build-id in hex, and has_functions etc. set
 *   since every location is already symbolized (pprof then never re-symbolizes them);
 * - the string table deduplicated, every string made valid UTF-8 (proto3 requires it).
 * Only the stacks the model kept (--thread) are written. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "uthash_cfg.h"
#include <zlib.h>

#include "alloc.h"
#include "cli.h"
#include "deadlock_model.h"
#include "textfmt.h"

/* ---- wire format ---- */

enum { WT_VARINT = 0, WT_LEN = 2 };

struct buf {
	uint8_t *p;
	size_t n, cap;
	int oom;
};

static void b_raw(struct buf *b, const void *d, size_t n)
{
	if (b->oom)
		return;
	if (b->n + n > b->cap) {
		if (wp_grow(&b->p, &b->cap, b->n + n, 1)) {
			b->oom = 1;
			return;
		}
	}
	memcpy(b->p + b->n, d, n);
	b->n += n;
}

static void b_varint(struct buf *b, uint64_t v)
{
	uint8_t t[10];
	size_t n = 0;
	do {
		t[n++] = (uint8_t)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
		v >>= 7;
	} while (v);
	b_raw(b, t, n);
}

static void b_tag(struct buf *b, unsigned field, unsigned wt)
{
	b_varint(b, (uint64_t)field << 3 | wt);
}

/* A scalar field (uint64, or int64 as its two's complement); proto3 leaves zeros out. */
static void b_num(struct buf *b, unsigned field, uint64_t v)
{
	if (!v)
		return;
	b_tag(b, field, WT_VARINT);
	b_varint(b, v);
}

static void b_bytes(struct buf *b, unsigned field, const void *d, size_t n)
{
	b_tag(b, field, WT_LEN);
	b_varint(b, n);
	b_raw(b, d, n);
}

/* Appends `sub` as a submessage in `field` of b, and empties sub for reuse. */
static void b_msg(struct buf *b, unsigned field, struct buf *sub)
{
	if (sub->oom)
		b->oom = 1;
	b_bytes(b, field, sub->p, sub->n);
	sub->n = 0;
}

static void b_packed(struct buf *b, unsigned field, const uint64_t *v, size_t n, struct buf *tmp)
{
	if (!n)
		return;
	for (size_t i = 0; i < n; i++)
		b_varint(tmp, v[i]);
	b_msg(b, field, tmp);
}

/* ---- string table ---- */

struct str {
	UT_hash_handle hh;
	int64_t index;
	size_t len;
	char s[];
};

struct enc {
	const struct wp_profile *p;
	const struct wp_resolved *r;
	struct str *strs;
	int64_t nstrs;
	struct buf strtab, samples, mappings, locations, functions, tmp, tmp2;
	struct func_ent *funcs;
	uint64_t nfuncs;
	uint64_t *loc_id;     /* per location of the model: its Location id, 0 until written */
	uint64_t nlocs;
	uint64_t *wait_loc;   /* per function of the model: the Location of a wait leaf, 0 until
			       * written (--wait-leaves=on) */
	uint64_t *mapping_of; /* per module of every process (from map_base[proc]): mapping id */
	size_t *map_base;     /* per process: where its modules start in mapping_of */
	int oom;
};


/* s with every invalid UTF-8 byte replaced by U+FFFD, into a malloc'ed string. */
static char *utf8_clean(const char *s, size_t *len)
{
	size_t n = strlen(s);
	char *d = malloc(n * 3 + 1);
	if (!d)
		return NULL;
	size_t o = 0;
	for (const unsigned char *u = (const unsigned char *)s; *u;) {
		size_t k = wp_utf8_seq(u);
		if (k) {
			memcpy(d + o, u, k);
			o += k;
			u += k;
		} else {
			memcpy(d + o, "\xef\xbf\xbd", 3);
			o += 3;
			u++;
		}
	}
	d[o] = 0;
	*len = o;
	return d;
}

static int64_t str_index(struct enc *e, const char *s)
{
	if (!s)
		s = "";
	size_t n;
	char *c = utf8_clean(s, &n);
	if (!c) {
		e->oom = 1;
		return 0;
	}
	struct str *st;
	HASH_FIND(hh, e->strs, c, n, st);
	if (!st) {
		st = malloc(sizeof(*st) + n + 1);
		if (!st) {
			free(c);
			e->oom = 1;
			return 0;
		}
		st->index = e->nstrs++;
		st->len = n;
		memcpy(st->s, c, n + 1);
		HASH_ADD_KEYPTR(hh, e->strs, st->s, n, st);
		/* string_table = 6 */
		b_bytes(&e->strtab, 6, st->s, n);
	}
	free(c);
	return st->index;
}

/* ---- functions and locations ---- */

/* A Function per (function of the model, source file): the same function seen in two files
 * (an inline header function) is two Functions, as pprof's own symbolizer would make it. */
struct func_ent {
	UT_hash_handle hh;
	struct {
		uint32_t func;
		const char *file; /* interned by the symbolizer: pointer identity is string identity */
	} k;
	uint64_t id;
};

static uint64_t function_id(struct enc *e, const struct wp_rframe *f)
{
	struct func_ent probe, *fe;
	memset(&probe.k, 0, sizeof(probe.k));
	probe.k.func = f->func;
	probe.k.file = f->file;
	HASH_FIND(hh, e->funcs, &probe.k, sizeof(probe.k), fe);
	if (fe)
		return fe->id;
	fe = calloc(1, sizeof(*fe));
	if (!fe) {
		e->oom = 1;
		return 0;
	}
	fe->k = probe.k;
	fe->id = ++e->nfuncs;
	HASH_ADD(hh, e->funcs, k, sizeof(fe->k), fe);
	const struct wp_func *fn = &e->r->funcs[f->func];
	int64_t name = str_index(e, fn->name);
	struct buf *m = &e->tmp2;
	b_num(m, 1, fe->id);
	b_num(m, 2, (uint64_t)name);
	b_num(m, 3, (uint64_t)name); /* system_name: the symbolizer gives demangled names only */
	b_num(m, 4, (uint64_t)str_index(e, f->file));
	/* start_line (5): unknown, 0 */
	b_msg(&e->functions, 5, m);
	return fe->id;
}

/* The Location of the model's location `li`, written when first used. */
static uint64_t location_id(struct enc *e, uint32_t li)
{
	if (e->loc_id[li])
		return e->loc_id[li];
	const struct wp_loc *l = &e->r->locs[li];
	uint64_t id = e->loc_id[li] = ++e->nlocs;
	/* Lines, innermost first, for the pc itself (leaf) or the call at pc-1. */
	uint64_t fids[WP_MAX_INLINE];
	for (uint32_t i = 0; i < l->n; i++)
		fids[i] = function_id(e, &l->frames[i]);
	struct buf *m = &e->tmp;
	b_num(m, 1, id);
	if (l->module >= 0)
		b_num(m, 2, e->mapping_of[e->map_base[l->proc] + (size_t)l->module]);
	b_num(m, 3, l->pc);
	struct buf line = { 0 };
	for (uint32_t i = 0; i < l->n; i++) {
		b_num(&line, 1, fids[i]);
		b_num(&line, 2, l->frames[i].line > 0 ? (uint64_t)l->frames[i].line : 0);
		b_msg(m, 4, &line);
	}
	free(line.p);
	b_msg(&e->locations, 4, m);
	return id;
}

/* The Location of wait leaf `f` ("[wait KIND OBJECT]", module "[wait]": --wait-leaves=on),
 * which no address of the program has: no mapping, no address, one Line. */
static uint64_t wait_location_id(struct enc *e, const struct wp_rframe *f)
{
	if (e->wait_loc[f->func])
		return e->wait_loc[f->func];
	uint64_t id = e->wait_loc[f->func] = ++e->nlocs;
	uint64_t fid = function_id(e, f);
	struct buf *m = &e->tmp;
	b_num(m, 1, id);
	struct buf line = { 0 };
	b_num(&line, 1, fid);
	b_msg(m, 4, &line);
	free(line.p);
	b_msg(&e->locations, 4, m);
	return id;
}

/* ---- the profile ---- */

static void mapping(struct enc *e, uint32_t proc, size_t mi, uint64_t id)
{
	const struct wp_module *mod = &e->r->procs[proc]->modules[mi];
	struct buf *m = &e->tmp;
	char hex[2 * WP_MAX_BUILD_ID + 1];
	for (uint32_t i = 0; i < mod->build_id_len && i < WP_MAX_BUILD_ID; i++)
		snprintf(hex + 2 * i, 3, "%02x", mod->build_id[i]);
	hex[2 * (mod->build_id_len < WP_MAX_BUILD_ID ? mod->build_id_len : WP_MAX_BUILD_ID)] = 0;
	e->mapping_of[e->map_base[proc] + mi] = id;
	b_num(m, 1, id);
	b_num(m, 2, mod->start);
	b_num(m, 3, mod->end);
	b_num(m, 4, mod->file_offset);
	b_num(m, 5, (uint64_t)str_index(e, mod->path));
	b_num(m, 6, (uint64_t)str_index(e, hex));
	for (unsigned f = 7; f <= 10; f++)
		b_num(m, f, 1); /* has_functions, has_filenames, has_line_numbers, has_inline_frames */
	b_msg(&e->mappings, 3, m);
}

static void value_type(struct enc *e, struct buf *dst, unsigned field, const char *type,
		       const char *unit)
{
	struct buf *m = &e->tmp;
	b_num(m, 1, (uint64_t)str_index(e, type));
	b_num(m, 2, (uint64_t)str_index(e, unit));
	b_msg(dst, field, m);
}

static void label(struct enc *e, struct buf *sample, const char *key, const char *val)
{
	struct buf *m = &e->tmp2;
	b_num(m, 1, (uint64_t)str_index(e, key));
	b_num(m, 2, (uint64_t)str_index(e, val));
	b_msg(sample, 3, m);
}

static void comment(struct enc *e, struct buf *head, const char *what, const char *text)
{
	char line[4096];
	snprintf(line, sizeof(line), "%s%s", what, text ? text : "?");
	b_num(head, 13, (uint64_t)str_index(e, line));
}

/* What a sample's thread was doing: "running", "runnable" (waiting for a CPU: a wait of
 * kind "cpu", when the model has it) or "waiting" (blocked). */
static const char *state_of(const struct wp_rstack *s, const struct wp_rwait *w)
{
	if (w && w->kind == WP_WAIT_CPU) /* its share spent waiting for a CPU */
		return "runnable";
	return s->flags & WP_STACK_WAITING ? "waiting" : "running";
}

/* One Sample: `n` locations (leaf first), values count and weight_ns, the labels of its
 * thread and process, and in wall mode its state and wait `w` (NULL: none known). */
static void sample(struct enc *e, const struct wp_rstack *s, const uint64_t *locids, uint32_t n,
		   uint64_t count, uint64_t weight_ns, int cpu, const struct wp_rwait *w)
{
	const struct wp_resolved *r = e->r;
	struct buf smp = { 0 };
	/* location_id = 1 (leaf first, as in the file), value = 2, label = 3 */
	b_packed(&smp, 1, locids, n, &e->tmp);
	uint64_t vals[2] = { count, weight_ns };
	b_packed(&smp, 2, vals, 2, &e->tmp);
	const struct wp_thread *t = wp_resolved_thread_of(r, s->proc, s->tid);
	char tid[16], pid[24], prog[256];
	snprintf(tid, sizeof(tid), "%u", s->tid);
	snprintf(pid, sizeof(pid), "%ld", wp_resolved_pid(r, s->proc));
	label(e, &smp, "thread", t && t->name && *t->name ? t->name : tid);
	label(e, &smp, "thread_id", tid);
	label(e, &smp, "pid", pid);
	label(e, &smp, "process", wp_resolved_program(r, s->proc, prog, sizeof(prog)));
	if (!cpu)
		label(e, &smp, "state", state_of(s, w));
	if (w) {
		label(e, &smp, "wait", wp_wait_kind_name(w->kind));
		label(e, &smp, "wait_object", w->object);
	}
	if (w && w->holder) {
		const struct wp_thread *h = wp_resolved_thread_of(r, s->proc, w->holder);
		char holder[320];
		snprintf(holder, sizeof(holder), "%s tid=%u", h && h->name && *h->name ? h->name : "?",
			 w->holder);
		label(e, &smp, "holder", holder);
	}
	if (s->flags & WP_STACK_TRUNCATED)
		label(e, &smp, "truncated", "yes");
	b_msg(&e->samples, 2, &smp);
	free(smp.p);
}

static int gzip_out(FILE *out, struct buf *const *parts, size_t nparts)
{
	z_stream z;
	memset(&z, 0, sizeof(z));
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -1;
	static uint8_t chunk[1 << 16];
	int rc = 0;
	for (size_t i = 0; i < nparts && !rc; i++) {
		const uint8_t *at = parts[i]->p;
		size_t left = parts[i]->n;
		int last = i + 1 == nparts;
		do { /* avail_in is a uInt: feed large parts in pieces */
			uInt take = left > (1u << 30) ? (1u << 30) : (uInt)left;
			z.next_in = (Bytef *)at;
			z.avail_in = take;
			at += take;
			left -= take;
			int flush = last && !left ? Z_FINISH : Z_NO_FLUSH;
			int zr;
			do {
				z.next_out = chunk;
				z.avail_out = sizeof(chunk);
				zr = deflate(&z, flush);
				size_t have = sizeof(chunk) - z.avail_out;
				if (zr == Z_STREAM_ERROR || (have && fwrite(chunk, 1, have, out) != have))
					rc = -1;
			} while (!rc && (z.avail_out == 0 || (flush == Z_FINISH && zr != Z_STREAM_END)));
		} while (left && !rc);
	}
	deflateEnd(&z);
	return rc;
}

static void enc_free(struct enc *e)
{
	struct str *s, *t1;
	HASH_ITER(hh, e->strs, s, t1) {
		HASH_DEL(e->strs, s);
		free(s);
	}
	struct func_ent *f, *t2;
	HASH_ITER(hh, e->funcs, f, t2) {
		HASH_DEL(e->funcs, f);
		free(f);
	}
	free(e->loc_id);
	free(e->wait_loc);
	struct buf *bufs[] = { &e->strtab, &e->samples, &e->mappings, &e->locations,
			       &e->functions, &e->tmp, &e->tmp2 };
	for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
		free(bufs[i]->p);
	free(e->mapping_of);
	free(e->map_base);
}

int wp_report_pprof(const struct wp_opts *o, const struct wp_resolved *r,
		    const struct wp_summary *sum, FILE *out)
{
	(void)o;
	const struct wp_profile *p = r->p;
	struct enc e;
	memset(&e, 0, sizeof(e));
	e.p = p;
	e.r = r;
	struct buf head = { 0 };
	size_t nmods = 0;
	e.map_base = calloc(r->nprocs + 1, sizeof(*e.map_base));
	for (size_t k = 0; e.map_base && k < r->nprocs; k++) {
		e.map_base[k] = nmods;
		nmods += r->procs[k]->nmodules;
	}
	e.mapping_of = calloc(nmods + 1, sizeof(*e.mapping_of));
	e.loc_id = calloc(r->nlocs + 1, sizeof(*e.loc_id));
	e.wait_loc = calloc(r->nfuncs + 1, sizeof(*e.wait_loc));
	if (!e.mapping_of || !e.loc_id || !e.map_base || !e.wait_loc) {
		free(e.mapping_of);
		free(e.map_base);
		free(e.loc_id);
		free(e.wait_loc);
		fprintf(stderr, "wallprof: out of memory\n");
		return -1;
	}
	str_index(&e, ""); /* string_table[0] must be "" */

	int cpu = sum->cpu_mode;
	const char *vtype = cpu ? "cpu" : "wall";

	/* sample_type = 1, period_type = 11, period = 12, default_sample_type = 14 */
	value_type(&e, &head, 1, "samples", "count");
	value_type(&e, &head, 1, vtype, "nanoseconds");
	value_type(&e, &head, 11, vtype, "nanoseconds");
	b_num(&head, 12, sum->interval_ns);
	b_num(&head, 14, (uint64_t)str_index(&e, vtype));
	/* time_nanos = 9, duration_nanos = 10 */
	if (p->info.start_unix_ns)
		b_num(&head, 9, p->info.start_unix_ns);
	b_num(&head, 10, sum->duration_ns);
	/* comment = 13 */
	comment(&e, &head, "recorded by wallprof ", p->info.version);
	comment(&e, &head, "mode: ", vtype);
	if (p->info.command)
		comment(&e, &head, "command: ", p->info.command);
	if (r->filter.thread)
		comment(&e, &head, "only thread: ", r->filter.thread);

	if (r->filter.process)
		comment(&e, &head, "only process: ", r->filter.process);
	for (size_t i = 0; i < r->ndeadlocks; i++) {
		char line[4096];
		wp_deadlock_line(&r->deadlocks[i], line, sizeof(line));
		comment(&e, &head, "", line);
	}

	/* Mappings: the main executable first, then the others in address order; the first
	 * process's, then each other's (a mapping per process: their address spaces differ). */
	uint64_t next_map = 0;
	for (uint32_t k = 0; k < r->nprocs; k++) {
		const struct wp_profile *pk = r->procs[k];
		for (int pass = 0; pass < 2; pass++)
			for (size_t i = 0; i < pk->nmodules; i++) {
				int is_main = (pk->modules[i].flags & WP_MODULE_MAIN) != 0;
				if (is_main == (pass == 0))
					mapping(&e, k, i, ++next_map);
			}
	}

	uint64_t locids[WP_MAX_FRAMES];
	for (size_t i = 0; i < r->nstacks && !e.oom; i++) {
		const struct wp_rstack *s = &r->stacks[i];
		int leaf = wp_rstack_wait_leaf(r, s);
		if (!s->count || (!s->nlocs && !leaf))
			continue; /* no samples, or only the agent's own frames */
		uint32_t n = 0;
		if (leaf) /* leaf first: the wait the model made the leaf */
			locids[n++] = wait_location_id(&e, &s->frames[s->n - 1]);
		for (uint32_t j = 0; j < s->nlocs && n < WP_MAX_FRAMES; j++)
			locids[n++] = location_id(&e, s->locs[j]);
		/* One sample per wait of the stack (its kind, object and holder as labels), then
		 * one for the samples no wait was read for; the weights add up to the stack's. */
		uint64_t rest = s->count, rest_w = s->weight_ns;
		for (uint32_t k = 0; !cpu && k < s->nwaits; k++) {
			const struct wp_rwait *w = &s->waits[k];
			uint64_t c = wp_rwait_samples(s, k);
			if (!c)
				continue;
			uint64_t wns = w->weight_ns < rest_w ? w->weight_ns : rest_w;
			rest -= c;
			rest_w -= wns;
			if (!rest) { /* the last part takes what the rounding left */
				wns += rest_w;
				rest_w = 0;
			}
			sample(&e, s, locids, n, c, wns, cpu, w);
		}
		if (rest)
			sample(&e, s, locids, n, rest, rest_w, cpu, NULL);
	}

	int rc = -1;
	struct buf *parts[] = { &head, &e.samples, &e.mappings, &e.locations, &e.functions,
				&e.strtab };
	int oom = e.oom;
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		oom |= parts[i]->oom;
	if (oom)
		fprintf(stderr, "wallprof: out of memory while encoding the pprof profile\n");
	else
		rc = gzip_out(out, parts, sizeof(parts) / sizeof(parts[0]));
	free(head.p);
	enc_free(&e);
	return rc || ferror(out) ? -1 : 0;
}
