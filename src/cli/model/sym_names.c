/* SPDX-License-Identifier: MIT */
/* Names as people read them: C++ names demangled, symbol versions shown only when they tell
 * two functions apart. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "sym_internal.h"

/* __cxa_demangle is taken from libstdc++ at run time: the C CLI does not link it, and only C++
 * profiles need it. If libstdc++ is already in the process it is used from there. */
typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);
static demangle_fn g_demangle;
static pthread_once_t g_demangle_once = PTHREAD_ONCE_INIT;

static void demangle_init(void)
{
	void *f = dlsym(RTLD_DEFAULT, "__cxa_demangle");
	if (!f) {
		void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
		if (h)
			f = dlsym(h, "__cxa_demangle"); /* h stays open for the process' life */
	}
	if (f)
		memcpy(&g_demangle, &f, sizeof(f));
}

/* malloc'd demangled form of a "_Z..." name, or NULL. */
static char *demangle_alloc(const char *mangled)
{
	if (!mangled || mangled[0] != '_' || mangled[1] != 'Z')
		return NULL;
	pthread_once(&g_demangle_once, demangle_init);
	if (!g_demangle)
		return NULL;
	int status = -1;
	char *d = g_demangle(mangled, NULL, NULL, &status);
	if (d && status != 0) {
		free(d);
		d = NULL;
	}
	return d;
}

/* Demangled form of `mangled` (cached by pointer: the strings live in ELF/DWARF data that
 * stays mapped), or `mangled` itself. */
const char *sym_demangle(struct wp_symbolizer *s, const char *mangled)
{
	if (!mangled || mangled[0] != '_' || mangled[1] != 'Z')
		return mangled;
	uint32_t idx;
	if (wp_u64map_get(&s->demangled, (uint64_t)(uintptr_t)mangled, &idx))
		return s->dnames[idx];
	const char *r = mangled;
	char *d = demangle_alloc(mangled);
	if (d) {
		const char *c = wp_arena_strdup(&s->arena, d);
		if (c)
			r = c;
		free(d);
	}
	if (!wp_grow(&s->dnames, &s->capdnames, s->ndnames + 1, sizeof(*s->dnames))) {
		s->dnames[s->ndnames] = r;
		if (!wp_u64map_put(&s->demangled, (uint64_t)(uintptr_t)mangled, (uint32_t)s->ndnames))
			s->ndnames++;
	}
	return r;
}

/* Display name of an ELF symbol: demangled; the default version of a versioned symbol
 * ("name@@VER") is just "name", a non-default one ("name@VER", e.g. a compat memcpy) keeps its
 * version so the two can be told apart. */
const char *sym_display(struct wp_symbolizer *s, const char *raw)
{
	const char *at = strchr(raw, '@');
	if (!at || at == raw)
		return sym_demangle(s, raw);
	size_t plen = (size_t)(at - raw);
	const char *ver = at[1] == '@' ? "" : at;
	char *prefix = malloc(plen + 1);
	if (!prefix)
		return raw;
	memcpy(prefix, raw, plen);
	prefix[plen] = 0;
	char *d = demangle_alloc(prefix);
	const char *base = d ? d : prefix;
	size_t blen = strlen(base), vlen = strlen(ver);
	char *r = wp_arena_alloc(&s->arena, blen + vlen + 1);
	if (r) {
		memcpy(r, base, blen);
		memcpy(r + blen, ver, vlen + 1);
	}
	free(d);
	free(prefix);
	return r ? r : raw;
}
