/* SPDX-License-Identifier: MIT */
/* Symbolizer: runtime pc -> module -> ELF symbol + DWARF line and inline chain (see
 * sym_internal.h for the files that do each part). This file holds the module map built from
 * the profile, the lookup of one address, the per-address cache and the interning of every
 * string handed out. */
#include "symbolize.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "sym_internal.h"

/* ---------------------------------------------------------------- warnings */

void sym_warn(struct wp_symbolizer *s, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	line[n] = 0;
	if (s->warn && strstr(s->warn, line)) /* once per distinct message */
		return;
	if (wp_grow(&s->warn, &s->warncap, s->warnlen + (size_t)n + 1, 1))
		return;
	memcpy(s->warn + s->warnlen, line, (size_t)n + 1);
	s->warnlen += (size_t)n;
}

const char *wp_symbolizer_warnings(struct wp_symbolizer *s)
{
	return s && s->warn ? s->warn : "";
}

const char *sym_basename(const char *path)
{
	const char *b = strrchr(path, '/');
	return b && b[1] ? b + 1 : path;
}

/* ---------------------------------------------------------------- the module map */

static struct mod *find_mod(struct wp_symbolizer *s, uint64_t pc)
{
	struct wp_ranges_iter it;
	wp_ranges_iter_init(&it, s->mods, s->nmods, sizeof(*s->mods), pc);
	struct mod *best = NULL, *m;
	while ((m = wp_ranges_next(&it))) {
		/* overlapping records (a library unloaded, another loaded at its place): prefer
		 * one still loaded, then the latest recorded */
		int gone = !!(m->flags & WP_MODULE_UNLOADED);
		int best_gone = best && (best->flags & WP_MODULE_UNLOADED);
		if (!best || (best_gone && !gone) || (best_gone == gone && m->order > best->order))
			best = m;
	}
	return best;
}

static int cmp_mod(const void *a, const void *b)
{
	const struct mod *x = a, *y = b;
	if (x->r.lo != y->r.lo)
		return x->r.lo < y->r.lo ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

static long long meta_pid(const struct wp_profile *p)
{
	long long pid = 0;
	for (size_t i = 0; i < p->nmeta; i++) {
		if (p->meta[i].key && p->meta[i].value && !strcmp(p->meta[i].key, "pid")) {
			char *e;
			long long v = strtoll(p->meta[i].value, &e, 10);
			if (e != p->meta[i].value && *e == 0 && v > 0)
				pid = v;
		}
	}
	return pid;
}

static struct wp_symbolizer *wp_symbolizer_fill(struct wp_symbolizer *s,
						const struct wp_profile *p);

/* The object for a module record's file: one per distinct path and build-id (per symbolizer,
 * or per shared cache: wp_symbolizer_new_shared). */
static struct obj *obj_for(struct wp_symbolizer *s, const struct wp_module *pm)
{
	char path[WP_MAX_NAME + 1];
	snprintf(path, sizeof(path), "%s", pm->path && pm->path[0] ? pm->path : "[anon]");
	size_t pl = strlen(path);
	if (pl > 10 && !strcmp(path + pl - 10, " (deleted)"))
		path[pl - 10] = 0;
	uint32_t bl = pm->build_id_len > WP_MAX_BUILD_ID ? WP_MAX_BUILD_ID : pm->build_id_len;
	int vdso = (pm->flags & WP_MODULE_VDSO) || !strcmp(path, "[vdso]");
	struct wp_symcache *c = vdso ? NULL : s->shared; /* a vDSO is read per process */
	struct obj **in = c ? c->objs : s->objs;
	size_t nin = c ? c->nobjs : s->nobjs;
	for (size_t j = 0; j < nin; j++) {
		struct obj *o = in[j];
		if (!strcmp(o->path, path) && o->build_id_len == bl &&
		    !memcmp(o->build_id, pm->build_id, bl))
			return o;
	}
	if (c && wp_grow(&c->objs, &c->cap, c->nobjs + 1, sizeof(*c->objs)))
		return NULL;
	struct obj *o = calloc(1, sizeof(*o));
	if (!o)
		return NULL;
	o->path = strdup(path);
	if (!o->path) {
		free(o);
		return NULL;
	}
	memcpy(o->build_id, pm->build_id, bl);
	o->build_id_len = bl;
	o->is_vdso = vdso;
	if (c)
		c->objs[c->nobjs++] = o;
	else
		s->objs[s->nobjs++] = o;
	return o;
}

static void obj_free(struct obj *o)
{
	sym_free_dwarf(o);
	free(o->syms);
	free(o->data);
	sym_obj_close(o);
	free(o->path);
	free(o);
}

struct wp_symcache *wp_symcache_new(void)
{
	return calloc(1, sizeof(struct wp_symcache));
}

void wp_symcache_free(struct wp_symcache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nobjs; i++)
		obj_free(c->objs[i]);
	free(c->objs);
	free(c);
}

struct wp_symbolizer *wp_symbolizer_new_shared(const struct wp_profile *p, struct wp_symcache *c)
{
	struct wp_symbolizer *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->shared = c;
	return wp_symbolizer_fill(s, p);
}

struct wp_symbolizer *wp_symbolizer_new(const struct wp_profile *p)
{
	struct wp_symbolizer *s = calloc(1, sizeof(*s));
	return s ? wp_symbolizer_fill(s, p) : NULL;
}

static struct wp_symbolizer *wp_symbolizer_fill(struct wp_symbolizer *s,
						const struct wp_profile *p)
{
	if (!p)
		return s;
	s->pid = meta_pid(p);
	if (p->nmodules) {
		s->mods = calloc(p->nmodules, sizeof(*s->mods));
		s->objs = calloc(p->nmodules, sizeof(*s->objs));
		if (!s->mods || !s->objs)
			goto fail;
	}
	for (size_t i = 0; i < p->nmodules; i++) {
		const struct wp_module *pm = &p->modules[i];
		if (pm->start >= pm->end)
			continue;
		struct obj *o = obj_for(s, pm);
		if (!o)
			goto fail;
		if (pm->flags & WP_MODULE_MAIN)
			o->is_main = 1;
		s->mods[s->nmods++] = (struct mod){ .r = { .lo = pm->start, .hi = pm->end },
						    .file_offset = pm->file_offset,
						    .flags = pm->flags, .order = (uint32_t)i,
						    .obj = o, .base = sym_basename(o->path) };
	}
	if (s->nmods) /* qsort's array must not be NULL, even empty (a profile without modules) */
		qsort(s->mods, s->nmods, sizeof(*s->mods), cmp_mod);
	wp_ranges_index(s->mods, s->nmods, sizeof(*s->mods));
	return s;
fail:
	wp_symbolizer_free(s);
	return NULL;
}

void wp_symbolizer_free(struct wp_symbolizer *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nobjs; i++)
		obj_free(s->objs[i]);
	free(s->objs);
	free(s->mods);
	free(s->jit);
	wp_u64map_free(&s->cache);
	wp_u64map_free(&s->demangled);
	free(s->dnames);
	wp_interner_free(&s->strings);
	free(s->results);
	free(s->frames);
	free(s->warn);
	wp_arena_free(&s->arena);
	free(s);
}

/* ---------------------------------------------------------------- lookup */

static const char *fmt_offset(struct wp_symbolizer *s, const char *base, uint64_t off)
{
	char buf[WP_MAX_NAME + 32];
	snprintf(buf, sizeof(buf), "%s+0x%" PRIx64, base, off);
	const char *r = wp_arena_strdup(&s->arena, buf);
	return r ? r : base;
}

static int unknown_frame(struct wp_frame *f, uint64_t pc)
{
	*f = (struct wp_frame){ .function = "(unknown)", .module = "(unknown)",
				.module_offset = pc };
	return 1;
}

static int jit_frame(struct wp_symbolizer *s, const struct jit_sym *j, uint64_t addr,
		     struct wp_frame *fr)
{
	fr[0] = (struct wp_frame){ .function = sym_demangle(s, j->name), .module = "[jit]",
				   .known = 1, .module_offset = addr };
	return 1;
}

/* A frame named "module+0xOFF": in the module, in no function we know of. */
static int offset_frame(struct wp_symbolizer *s, const struct mod *m, uint64_t off,
			struct wp_frame *fr)
{
	fr[0] = (struct wp_frame){ .function = fmt_offset(s, m->base, off), .module = m->base,
				   .module_offset = off };
	return 1;
}

/* The module m's frames for addr, once its file is open and its bias known. */
static int resolve_in(struct wp_symbolizer *s, struct mod *m, uint64_t addr, struct wp_frame *fr)
{
	struct obj *o = m->obj;
	uint64_t va = addr - m->bias;
	struct sym *sym = sym_find(o, va);
	const char *file;
	int line;
	Dwarf_Die *outer;
	int n = sym_dwarf_frames(s, o, va, fr, MAX_CHAIN - 1, &file, &line, &outer);
	if (!sym && !outer) /* never the nearest name */
		return offset_frame(s, m, va, fr);
	const char *name;
	if (sym) {
		name = sym->name;
		if (!name) {
			name = sym_display(s, sym->raw); /* in s's arena, or the ELF data itself */
			/* A file of a wp_symcache outlives this symbolizer (the live view frees a
			 * process's symbolizer when it execs or ends): only its own files keep a
			 * name from s's arena. A shared file's name is made once per symbolizer
			 * (each pc's frames are cached in s anyway). */
			if (!s->shared || o->is_vdso)
				sym->name = name;
		}
	} else {
		name = sym_die_name(s, outer);
	}
	if (name)
		fr[n++] = (struct wp_frame){ .function = name, .file = file, .line = line,
					     .known = 1 };
	else
		fr[n++] = (struct wp_frame){ .function = fmt_offset(s, m->base, va), .file = file,
					     .line = line };
	for (int k = 0; k < n; k++) {
		fr[k].module = m->base;
		fr[k].module_offset = va;
		if (!fr[k].file)
			fr[k].line = 0;
	}
	return n;
}

/* Resolves one address into up to MAX_CHAIN frames. */
static int resolve(struct wp_symbolizer *s, uint64_t addr, struct wp_frame *fr)
{
	struct mod *m = find_mod(s, addr);
	if (!m) {
		const struct jit_sym *j = sym_find_jit(s, addr);
		return j ? jit_frame(s, j, addr, fr) : unknown_frame(fr, addr);
	}
	struct obj *o = m->obj;
	if (o->path[0] != '/' && !o->is_vdso) {
		/* anonymous executable memory, "//anon", "/memfd:..." are where JITs put code */
		const struct jit_sym *j = sym_find_jit(s, addr);
		if (j)
			return jit_frame(s, j, addr, fr);
	}
	if (o->state == OBJ_UNLOADED)
		sym_obj_load(s, o, m);
	if (o->state == OBJ_OK && !m->bias_state)
		sym_compute_bias(s, m);
	if (o->state != OBJ_OK || m->bias_state != 1)
		return offset_frame(s, m, m->file_offset + (addr - m->r.lo), fr);
	return resolve_in(s, m, addr, fr);
}

/* The interned copy of `str` (a string that lives as long as the symbolizer: libelf/libdw
 * data, our arena, a literal), or str itself when out of memory. */
static const char *canon(struct wp_symbolizer *s, const char *str)
{
	if (!str)
		return NULL;
	int64_t id = wp_intern(&s->strings, str);
	return id < 0 ? str : wp_interned(&s->strings, (uint32_t)id);
}

/* Keeps n frames as the answer for addr; 0, or -1 when out of memory. */
static int cache_put(struct wp_symbolizer *s, uint64_t addr, const struct wp_frame *fr, int n)
{
	if (s->nresults >= UINT32_MAX - 1 || s->nframes + (size_t)n >= UINT32_MAX ||
	    wp_grow(&s->results, &s->capresults, s->nresults + 1, sizeof(*s->results)) ||
	    wp_grow(&s->frames, &s->capframes, s->nframes + (size_t)n, sizeof(*s->frames)) ||
	    wp_u64map_put(&s->cache, addr, (uint32_t)s->nresults))
		return -1;
	memcpy(s->frames + s->nframes, fr, (size_t)n * sizeof(*fr));
	s->results[s->nresults++] = (struct result){ .first = (uint32_t)s->nframes,
						     .n = (uint32_t)n };
	s->nframes += (size_t)n;
	return 0;
}

static int copy_out(struct wp_frame *out, int max, const struct wp_frame *fr, int n)
{
	if (n > max)
		n = max;
	memcpy(out, fr, (size_t)n * sizeof(*out));
	return n;
}

int wp_symbolize(struct wp_symbolizer *s, uint64_t pc, int is_return_address,
		 struct wp_frame *out, int max)
{
	if (max <= 0 || !out)
		return 0;
	uint64_t addr = is_return_address && pc ? pc - 1 : pc;
	if (!s)
		return unknown_frame(out, addr);
	uint32_t idx;
	if (wp_u64map_get(&s->cache, addr, &idx)) {
		const struct result *r = &s->results[idx];
		return copy_out(out, max, s->frames + r->first, (int)r->n);
	}
	struct wp_frame fr[MAX_CHAIN];
	int n = resolve(s, addr, fr);
	if (n < 1)
		n = unknown_frame(fr, addr);
	for (int i = 0; i < n; i++) {
		fr[i].function = canon(s, fr[i].function);
		fr[i].file = canon(s, fr[i].file);
		fr[i].module = canon(s, fr[i].module);
	}
	cache_put(s, addr, fr, n); /* out of memory: answered without caching */
	return copy_out(out, max, fr, n);
}

const char *wp_symbolize_data(struct wp_symbolizer *s, uint64_t addr)
{
	int tried = 0;
	for (size_t i = s->nmods; i-- > 0 && tried < 2;) {
		struct mod *m = &s->mods[i];
		if (m->r.lo > addr || (m->flags & WP_MODULE_UNLOADED) || m->obj->is_vdso)
			continue;
		if (m->obj->path[0] != '/')
			continue;
		tried++;
		struct obj *o = m->obj;
		if (o->state == OBJ_UNLOADED)
			sym_obj_load(s, o, m);
		if (o->state == OBJ_OK && !m->bias_state)
			sym_compute_bias(s, m);
		if (o->state != OBJ_OK || m->bias_state != 1)
			continue;
		uint64_t off;
		const char *raw = sym_find_object(o, addr - m->bias, &off);
		if (!raw)
			continue;
		const char *name = sym_display(s, raw);
		if (!off)
			return name;
		char buf[512];
		snprintf(buf, sizeof(buf), "%s+0x%llx", name, (unsigned long long)off);
		const char *copy = wp_arena_strdup(&s->arena, buf); /* canon keeps no copy */
		return copy ? canon(s, copy) : name;
	}
	return NULL;
}
