/* Symbolizer: runtime pc -> module -> ELF symbol + DWARF line and inline chain.
 *
 * Design
 * - One Dwfl per distinct module file (path + build-id), reported at bias 0 so every address
 *   inside it is an ELF virtual address. Each module record of the profile keeps its own load
 *   bias, computed from the ELF program headers and the record's file_offset. Keeping the
 *   files apart (rather than one Dwfl laid out like the process) means overlapping records
 *   (a library dlclose'd and another loaded at the same place) can't conflict.
 * - libdwfl finds the separate debug info (build-id under /usr/lib/debug/.build-id, then
 *   .gnu_debuglink next to the file, in .debug/ and under /usr/lib/debug/<dir>), the dwz
 *   alternate file and .gnu_debugdata. Our own indexes do the lookups, since libdwfl's
 *   address-to-symbol search is linear in the symbol count and dwarf_getscopes walks the whole
 *   CU for every address:
 *     symbols:  sorted by address with sizes, binary search (an address in no symbol is not
 *               given the nearest name);
 *     CUs:      address ranges of every CU DIE, sorted;
 *     scopes:   per CU, built on first use, the ranges of its subprograms and inlined
 *               subroutines sorted and linked to their innermost enclosing range, so the
 *               inline chain of an address is a binary search and a walk up the parents.
 * - Files are read lazily, on the first pc that falls in them. Results are cached per looked
 *   up address. Strings either point into libdw/libelf data (alive as long as the Dwfl) or
 *   into our arena. */
#include "symbolize.h"

#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_CHAIN 64	     /* frames kept for one address */
#define MAX_DIE_DEPTH 256    /* DIE nesting followed when indexing a CU */
#define MAX_WALK_BACK 4096   /* overlapping-interval steps before giving up */

/* ---------------------------------------------------------------- small helpers */

static void *xrealloc_array(void *p, size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size)
		return NULL;
	size_t bytes = n * size;
	return realloc(p, bytes ? bytes : 1);
}

/* Grows the array whose pointer is at `pv` (`*cap` elements of `size`) to hold at least
 * `need`. Returns 0 or -1. (The pointer is copied with memcpy: no aliasing games.) */
static int grow(void *pv, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return 0;
	size_t ncap = *cap ? *cap : 16;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return -1;
		ncap *= 2;
	}
	void *v;
	memcpy(&v, pv, sizeof(v));
	void *n = xrealloc_array(v, ncap, size);
	if (!n)
		return -1;
	memcpy(pv, &n, sizeof(n));
	*cap = ncap;
	return 0;
}

/* String arena: strings live until the symbolizer is freed. */
struct chunk {
	struct chunk *next;
	size_t used, cap;
	char data[];
};

static char *arena_alloc(struct chunk **head, size_t len)
{
	struct chunk *c = *head;
	if (!c || c->cap - c->used < len) {
		size_t cap = len > 65536 ? len : 65536;
		c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->used = 0;
		c->cap = cap;
		if (*head && len > 65536) { /* a big one: keep filling the current chunk */
			c->next = (*head)->next;
			(*head)->next = c;
		} else {
			c->next = *head;
			*head = c;
		}
	}
	char *r = c->data + c->used;
	c->used += len;
	return r;
}

static const char *arena_strdup(struct chunk **head, const char *s)
{
	size_t n = strlen(s) + 1;
	char *r = arena_alloc(head, n);
	if (r)
		memcpy(r, s, n);
	return r;
}

/* Open-addressing map u64 -> u32. */
struct map {
	uint64_t *keys;
	uint32_t *vals; /* UINT32_MAX: empty */
	size_t cap, n;
};

static inline uint64_t hash64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

static int map_get(const struct map *m, uint64_t key, uint32_t *val)
{
	if (!m->cap)
		return 0;
	for (size_t i = hash64(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		if (m->vals[i] == UINT32_MAX)
			return 0;
		if (m->keys[i] == key) {
			*val = m->vals[i];
			return 1;
		}
	}
}

static int map_put(struct map *m, uint64_t key, uint32_t val)
{
	if ((m->n + 1) * 4 >= m->cap * 3) {
		size_t ncap = m->cap ? m->cap * 2 : 1024;
		uint64_t *nk = malloc(ncap * sizeof(*nk));
		uint32_t *nv = malloc(ncap * sizeof(*nv));
		if (!nk || !nv) {
			free(nk);
			free(nv);
			return -1;
		}
		memset(nv, 0xff, ncap * sizeof(*nv));
		for (size_t i = 0; i < m->cap; i++) {
			if (m->vals[i] == UINT32_MAX)
				continue;
			size_t j = hash64(m->keys[i]) & (ncap - 1);
			while (nv[j] != UINT32_MAX)
				j = (j + 1) & (ncap - 1);
			nk[j] = m->keys[i];
			nv[j] = m->vals[i];
		}
		free(m->keys);
		free(m->vals);
		m->keys = nk;
		m->vals = nv;
		m->cap = ncap;
	}
	size_t i = hash64(key) & (m->cap - 1);
	while (m->vals[i] != UINT32_MAX && m->keys[i] != key)
		i = (i + 1) & (m->cap - 1);
	if (m->vals[i] == UINT32_MAX)
		m->n++;
	m->keys[i] = key;
	m->vals[i] = val;
	return 0;
}

static void map_free(struct map *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}

/* Set of strings by content (open addressing), for interning. */
struct strset {
	const char **v;
	uint64_t *h;
	size_t cap, n;
};

static uint64_t hash_str(const char *str)
{
	uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */
	for (; *str; str++)
		h = (h ^ (unsigned char)*str) * 0x100000001b3ULL;
	return h;
}

/* The member equal to `str`, after adding `str` itself (which must outlive the set) when
 * there is none. Returns `str` on allocation failure. */
static const char *strset_intern(struct strset *ss, const char *str)
{
	if ((ss->n + 1) * 4 >= ss->cap * 3) {
		size_t ncap = ss->cap ? ss->cap * 2 : 1024;
		const char **nv = calloc(ncap, sizeof(*nv));
		uint64_t *nh = malloc(ncap * sizeof(*nh));
		if (!nv || !nh) {
			free(nv);
			free(nh);
			return str;
		}
		for (size_t i = 0; i < ss->cap; i++) {
			if (!ss->v[i])
				continue;
			size_t j = ss->h[i] & (ncap - 1);
			while (nv[j])
				j = (j + 1) & (ncap - 1);
			nv[j] = ss->v[i];
			nh[j] = ss->h[i];
		}
		free(ss->v);
		free(ss->h);
		ss->v = nv;
		ss->h = nh;
		ss->cap = ncap;
	}
	uint64_t h = hash_str(str);
	size_t i = h & (ss->cap - 1);
	for (; ss->v[i]; i = (i + 1) & (ss->cap - 1))
		if (ss->h[i] == h && !strcmp(ss->v[i], str))
			return ss->v[i];
	ss->v[i] = str;
	ss->h[i] = h;
	ss->n++;
	return str;
}

static void strset_free(struct strset *ss)
{
	free(ss->v);
	free(ss->h);
	memset(ss, 0, sizeof(*ss));
}

/* ---------------------------------------------------------------- demangling */

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

/* ---------------------------------------------------------------- data */

struct sym {
	uint64_t lo, hi;
	const char *raw;  /* from the ELF string table */
	const char *name; /* demangled, lazily */
	int rank;
};

struct scope {
	uint64_t lo, hi;
	int32_t parent; /* index of the innermost range containing this one, or -1 */
	uint32_t seq;	/* DIE pre-order, to keep parents before children on equal ranges */
	int inlined;
	Dwarf_Die die;
};

struct cu {
	Dwarf_Die cudie; /* for the line table */
	Dwarf_Die walk;	 /* the DIE whose children are indexed (split unit for skeletons) */
	struct scope *scopes;
	size_t nscopes;
	int built;
};

struct cu_range {
	uint64_t lo, hi, maxhi; /* maxhi: max hi of this and every earlier range */
	uint32_t cu;
};

enum { OBJ_UNLOADED = 0, OBJ_OK = 1, OBJ_BAD = -1 };

struct obj {
	char *path;	 /* as recorded, " (deleted)" removed */
	uint8_t build_id[WP_MAX_BUILD_ID];
	uint32_t build_id_len;
	int is_vdso, is_main;
	int state;
	int debug_only; /* the ELF is a separate debug file found by build-id: phdr offsets are
			   not the original's */
	Dwfl *dwfl;
	Dwfl_Module *mod;
	Elf *elf;

	struct sym *syms;
	uint64_t *sym_maxhi;
	size_t nsyms;

	Dwarf *dw;
	Dwarf_Addr dwbias;
	struct cu *cus;
	size_t ncus;
	struct cu_range *cur;
	size_t ncur;
};

struct mod {
	uint64_t start, end, file_offset, maxend;
	uint32_t flags;
	uint32_t order; /* index in the profile */
	struct obj *obj;
	const char *base; /* basename */
	int bias_state;	  /* 0: not computed, 1: ok, -1: no matching segment */
	uint64_t bias;
};

struct jit_sym {
	uint64_t lo, hi, maxhi;
	uint32_t seq;
	const char *name;
};

struct result {
	uint32_t first;
	uint32_t n;
};

struct wp_symbolizer {
	struct mod *mods; /* sorted by start */
	size_t nmods;
	struct obj **objs;
	size_t nobjs;

	long long pid;
	int jit_loaded;
	struct jit_sym *jit;
	size_t njit;

	struct map cache; /* looked-up address -> results index */
	struct result *results;
	size_t nresults, capresults;
	struct wp_frame *frames;
	size_t nframes, capframes;

	struct map demangled; /* pointer of a mangled string -> index in dnames */
	const char **dnames;
	size_t ndnames, capdnames;

	/* every string handed out is interned: equal strings, same pointer */
	struct strset strings;
	struct map canon; /* source pointer -> index in canons */
	const char **canons;
	size_t ncanons, capcanons;

	char *warn;
	size_t warnlen, warncap;

	struct chunk *arena;
};

/* ---------------------------------------------------------------- warnings */

__attribute__((format(printf, 2, 3))) static void warn(struct wp_symbolizer *s, const char *fmt,
							 ...)
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
	if (grow(&s->warn, &s->warncap, s->warnlen + (size_t)n + 1, 1))
		return;
	memcpy(s->warn + s->warnlen, line, (size_t)n + 1);
	s->warnlen += (size_t)n;
}

const char *wp_symbolizer_warnings(struct wp_symbolizer *s)
{
	return s && s->warn ? s->warn : "";
}

/* ---------------------------------------------------------------- names */

/* Demangled form of `mangled` (cached by pointer: the strings live in ELF/DWARF data that
 * stays mapped), or `mangled` itself. */
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

static const char *demangle(struct wp_symbolizer *s, const char *mangled)
{
	if (!mangled || mangled[0] != '_' || mangled[1] != 'Z')
		return mangled;
	uint32_t idx;
	if (map_get(&s->demangled, (uint64_t)(uintptr_t)mangled, &idx))
		return s->dnames[idx];
	const char *r = mangled;
	char *d = demangle_alloc(mangled);
	if (d) {
		const char *c = arena_strdup(&s->arena, d);
		if (c)
			r = c;
		free(d);
	}
	if (!grow(&s->dnames, &s->capdnames, s->ndnames + 1, sizeof(*s->dnames))) {
		s->dnames[s->ndnames] = r;
		if (!map_put(&s->demangled, (uint64_t)(uintptr_t)mangled, (uint32_t)s->ndnames))
			s->ndnames++;
	}
	return r;
}

static const char *die_name(struct wp_symbolizer *s, Dwarf_Die *die)
{
	Dwarf_Attribute a;
	const char *linkage = NULL;
	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &a) ||
	    dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a))
		linkage = dwarf_formstring(&a);
	if (linkage) {
		const char *d = demangle(s, linkage);
		if (d != linkage)
			return d;
	}
	const char *name = NULL;
	if (dwarf_attr_integrate(die, DW_AT_name, &a))
		name = dwarf_formstring(&a);
	/* A mangled linkage name we could not demangle is still more precise than a bare
	 * DW_AT_name, and matches what the symbol table shows then. */
	return linkage ? linkage : name;
}

/* Display name of an ELF symbol: demangled; the default version of a versioned symbol
 * ("name@@VER") is just "name", a non-default one ("name@VER", e.g. a compat memcpy) keeps its
 * version so the two can be told apart. */
static const char *sym_display(struct wp_symbolizer *s, const char *raw)
{
	const char *at = strchr(raw, '@');
	if (!at || at == raw)
		return demangle(s, raw);
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
	char *r = arena_alloc(&s->arena, blen + vlen + 1);
	if (r) {
		memcpy(r, base, blen);
		memcpy(r + blen, ver, vlen + 1);
	}
	free(d);
	free(prefix);
	return r ? r : raw;
}

static const char *basename_of(const char *path)
{
	const char *b = strrchr(path, '/');
	return b && b[1] ? b + 1 : path;
}

/* ---------------------------------------------------------------- symbol table */

static int sym_rank(const char *name, int bind, int type)
{
	int under = 0;
	while (name[under] == '_')
		under++;
	int b = bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2;
	int t = type == STT_FUNC ? 0 : 1;
	const char *at = strchr(name, '@');
	int versioned = at && at[1] != '@'; /* a non-default version: "memcpy@GLIBC_2.2.5" */
	size_t len = at ? (size_t)(at - name) : strlen(name);
	if (len > 4095)
		len = 4095;
	/* no non-default versions, then fewer leading underscores ("malloc" over
	 * "__libc_malloc"), then global over weak over local, then real functions, then the
	 * shorter name */
	return versioned << 19 | (under > 7 ? 7 : under) << 16 | b << 14 | t << 12 | (int)len;
}

static int cmp_sym(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;
	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return strcmp(x->raw, y->raw);
}

static void load_symbols(struct obj *o)
{
	int n = dwfl_module_getsymtab(o->mod);
	if (n <= 0)
		return;
	struct sym *v = malloc((size_t)n * sizeof(*v));
	if (!v)
		return;
	size_t k = 0;
	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		GElf_Word shndx;
		Elf *elf = NULL;
		const char *name = dwfl_module_getsym_info(o->mod, i, &sym, &addr, &shndx, &elf, NULL);
		if (!name || !*name || sym.st_size == 0)
			continue;
		if (shndx == SHN_UNDEF || shndx == SHN_ABS || shndx == (GElf_Word)-1)
			continue;
		int type = GELF_ST_TYPE(sym.st_info);
		if (type == STT_NOTYPE) {
			/* sized untyped symbols (hand-written assembly) only in code sections */
			GElf_Shdr sh;
			Elf_Scn *scn = elf ? elf_getscn(elf, shndx) : NULL;
			if (!scn || !gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_EXECINSTR))
				continue;
		} else if (type != STT_FUNC && type != STT_GNU_IFUNC) {
			continue;
		}
		if (addr + sym.st_size < addr)
			continue;
		v[k].lo = addr;
		v[k].hi = addr + sym.st_size;
		v[k].raw = name;
		v[k].name = NULL;
		v[k].rank = sym_rank(name, GELF_ST_BIND(sym.st_info), type);
		k++;
	}
	if (!k) {
		free(v);
		return;
	}
	qsort(v, k, sizeof(*v), cmp_sym);
	/* aliases (same start): keep the best-ranked name, with the largest extent */
	size_t w = 0;
	for (size_t i = 0; i < k; i++) {
		if (w && v[w - 1].lo == v[i].lo) {
			if (v[i].hi > v[w - 1].hi)
				v[w - 1].hi = v[i].hi;
			continue;
		}
		v[w++] = v[i];
	}
	uint64_t *maxhi = malloc(w * sizeof(*maxhi));
	if (!maxhi) {
		free(v);
		return;
	}
	uint64_t m = 0;
	for (size_t i = 0; i < w; i++) {
		if (v[i].hi > m)
			m = v[i].hi;
		maxhi[i] = m;
	}
	o->syms = v;
	o->sym_maxhi = maxhi;
	o->nsyms = w;
}

/* Index of the last element whose `lo` is <= addr, or -1. `lo` of element i is at
 * base + i * stride. */
static ptrdiff_t last_le(const void *base, size_t n, size_t stride, uint64_t addr)
{
	size_t lo = 0, hi = n; /* answer in [lo, hi) shifted by one */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t v;
		memcpy(&v, (const char *)base + mid * stride, sizeof(v));
		if (v <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (ptrdiff_t)lo - 1;
}

/* The symbol covering addr with the closest start, or NULL. */
static struct sym *find_sym(struct obj *o, uint64_t addr)
{
	ptrdiff_t i = last_le(o->syms, o->nsyms, sizeof(*o->syms), addr);
	for (int steps = 0; i >= 0 && o->sym_maxhi[i] > addr && steps < MAX_WALK_BACK;
	     i--, steps++)
		if (addr < o->syms[i].hi)
			return &o->syms[i];
	return NULL;
}

/* ---------------------------------------------------------------- DWARF */

static int cmp_cur(const void *a, const void *b)
{
	const struct cu_range *x = a, *y = b;
	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	if (x->hi != y->hi)
		return x->hi > y->hi ? -1 : 1;
	return x->cu < y->cu ? -1 : x->cu > y->cu;
}

static void load_dwarf(struct obj *o)
{
	Dwarf_Addr bias = 0;
	Dwarf *dw = dwfl_module_getdwarf(o->mod, &bias);
	if (!dw)
		return;
	size_t capcus = 0, capcur = 0;
	Dwarf_CU *cu = NULL;
	Dwarf_Half version;
	uint8_t unit_type;
	Dwarf_Die cudie, subdie;
	/* bounded: a corrupt section can't make dwarf_get_units loop, but be safe anyway */
	for (size_t guard = 0; guard < 10000000; guard++) {
		int r = dwarf_get_units(dw, cu, &cu, &version, &unit_type, &cudie, &subdie);
		if (r != 0)
			break;
		if (unit_type != DW_UT_compile && unit_type != DW_UT_skeleton)
			continue;
		if (!cudie.addr)
			continue;
		Dwarf_Die walk = cudie;
		if (unit_type == DW_UT_skeleton) {
			/* -gsplit-dwarf: the scopes are in the split unit (.dwo/.dwp) */
			Dwarf_Die split;
			memset(&split, 0, sizeof(split));
			if (dwarf_cu_info(cu, NULL, NULL, NULL, &split, NULL, NULL, NULL) == 0 &&
			    split.addr)
				walk = split;
		}
		size_t before = o->ncur;
		ptrdiff_t off = 0;
		Dwarf_Addr base, lo, hi;
		int nr = 0;
		while ((off = dwarf_ranges(&cudie, off, &base, &lo, &hi)) > 0 && nr < 1000000) {
			nr++;
			if (hi <= lo)
				continue;
			if (grow(&o->cur, &capcur, o->ncur + 1, sizeof(*o->cur)))
				break;
			o->cur[o->ncur++] = (struct cu_range){ .lo = lo, .hi = hi, .cu = (uint32_t)o->ncus };
		}
		if (o->ncur == before)
			continue; /* no code */
		if (grow(&o->cus, &capcus, o->ncus + 1, sizeof(*o->cus))) {
			o->ncur = before;
			break;
		}
		o->cus[o->ncus++] = (struct cu){ .cudie = cudie, .walk = walk };
	}
	if (!o->ncur) {
		free(o->cus);
		free(o->cur);
		o->cus = NULL;
		o->cur = NULL;
		o->ncus = 0;
		o->dw = dw; /* still usable for nothing, but marks "has DWARF" */
		o->dwbias = bias;
		return;
	}
	qsort(o->cur, o->ncur, sizeof(*o->cur), cmp_cur);
	uint64_t m = 0;
	for (size_t i = 0; i < o->ncur; i++) {
		if (o->cur[i].hi > m)
			m = o->cur[i].hi;
		o->cur[i].maxhi = m;
	}
	o->dw = dw;
	o->dwbias = bias;
}

static struct cu *find_cu(struct obj *o, uint64_t addr)
{
	ptrdiff_t i = last_le(o->cur, o->ncur, sizeof(*o->cur), addr);
	for (int steps = 0; i >= 0 && o->cur[i].maxhi > addr && steps < MAX_WALK_BACK;
	     i--, steps++)
		if (addr < o->cur[i].hi)
			return &o->cus[o->cur[i].cu];
	return NULL;
}

static int cmp_scope(const void *a, const void *b)
{
	const struct scope *x = a, *y = b;
	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	if (x->hi != y->hi)
		return x->hi > y->hi ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int descend_into(int tag)
{
	switch (tag) {
	case DW_TAG_subprogram:
	case DW_TAG_inlined_subroutine:
	case DW_TAG_lexical_block:
	case DW_TAG_namespace:
	case DW_TAG_module:
	case DW_TAG_try_block:
	case DW_TAG_catch_block:
	case DW_TAG_entry_point:
	case DW_TAG_with_stmt:
	case DW_TAG_common_block:
		return 1;
	default:
		return 0;
	}
}

static void build_scopes(struct cu *c)
{
	c->built = 1;
	struct scope *v = NULL;
	size_t n = 0, cap = 0;
	uint32_t seq = 0;
	Dwarf_Die stack[MAX_DIE_DEPTH];
	int sp = 0;
	if (dwarf_child(&c->walk, &stack[0]) != 0)
		return;
	sp = 1;
	while (sp > 0) {
		Dwarf_Die *d = &stack[sp - 1];
		int tag = dwarf_tag(d);
		if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine) {
			ptrdiff_t off = 0;
			Dwarf_Addr base, lo, hi;
			int nr = 0;
			while ((off = dwarf_ranges(d, off, &base, &lo, &hi)) > 0 && nr++ < 100000) {
				if (hi <= lo)
					continue;
				if (grow(&v, &cap, n + 1, sizeof(*v)))
					goto out;
				v[n++] = (struct scope){ .lo = lo, .hi = hi, .parent = -1, .seq = seq,
							 .inlined = tag == DW_TAG_inlined_subroutine,
							 .die = *d };
			}
			seq++;
		}
		if (descend_into(tag) && sp < MAX_DIE_DEPTH && dwarf_haschildren(d) > 0 &&
		    dwarf_child(d, &stack[sp]) == 0) {
			sp++;
			continue;
		}
		while (sp > 0) {
			Dwarf_Die next;
			if (dwarf_siblingof(&stack[sp - 1], &next) == 0) {
				stack[sp - 1] = next;
				break;
			}
			sp--;
		}
	}
out:
	if (!n) {
		free(v);
		return;
	}
	qsort(v, n, sizeof(*v), cmp_scope);
	/* parent = innermost earlier range containing this one (a stack of open ranges) */
	int32_t *open = malloc(n * sizeof(*open));
	if (!open) {
		free(v);
		return;
	}
	size_t top = 0;
	for (size_t i = 0; i < n; i++) {
		while (top && !(v[open[top - 1]].hi >= v[i].hi && v[open[top - 1]].lo <= v[i].lo))
			top--;
		v[i].parent = top ? open[top - 1] : -1;
		open[top++] = (int32_t)i;
	}
	free(open);
	c->scopes = v;
	c->nscopes = n;
}

/* Innermost scope containing addr (index), or -1. */
static ptrdiff_t find_scope(const struct cu *c, uint64_t addr)
{
	ptrdiff_t i = last_le(c->scopes, c->nscopes, sizeof(*c->scopes), addr);
	for (int steps = 0; i >= 0 && steps < MAX_CHAIN * 4; steps++) {
		if (c->scopes[i].lo <= addr && addr < c->scopes[i].hi)
			return i;
		i = c->scopes[i].parent;
	}
	return -1;
}

static void call_site(Dwarf_Die *inl, const char **file, int *line)
{
	Dwarf_Attribute a;
	Dwarf_Word w;
	*file = NULL;
	*line = 0;
	if (dwarf_attr(inl, DW_AT_call_line, &a) && dwarf_formudata(&a, &w) == 0 && w <= INT32_MAX)
		*line = (int)w;
	if (dwarf_attr(inl, DW_AT_call_file, &a) && dwarf_formudata(&a, &w) == 0) {
		Dwarf_Die cudie;
		Dwarf_Files *files;
		size_t nfiles;
		if (dwarf_diecu(inl, &cudie, NULL, NULL) &&
		    dwarf_getsrcfiles(&cudie, &files, &nfiles) == 0 && w < nfiles)
			*file = dwarf_filesrc(files, w, NULL, NULL);
	}
}

/* ---------------------------------------------------------------- loading files */

static int obj_open(struct wp_symbolizer *s, struct obj *o, const char *file, int fd);

static const Dwfl_Callbacks dwfl_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
	.debuginfo_path = NULL, /* ":.debug:/usr/lib/debug" */
};

/* This process' vdso, in a memfd, when its build-id is the recorded one (same kernel). */
static int own_vdso_fd(const struct obj *o, uint64_t recorded_size)
{
	FILE *f = fopen("/proc/self/maps", "re");
	if (!f)
		return -1;
	char line[512];
	uint64_t lo = 0, hi = 0;
	while (fgets(line, sizeof(line), f)) {
		if (strstr(line, "[vdso]") && sscanf(line, "%" SCNx64 "-%" SCNx64, &lo, &hi) == 2)
			break;
		lo = hi = 0;
	}
	fclose(f);
	if (hi <= lo || hi - lo > (64u << 20))
		return -1;
	if (!o->build_id_len && recorded_size && recorded_size != hi - lo)
		return -1;
	int fd = memfd_create("vdso", MFD_CLOEXEC);
	if (fd < 0)
		return -1;
	if (write(fd, (const void *)(uintptr_t)lo, hi - lo) != (ssize_t)(hi - lo) ||
	    lseek(fd, 0, SEEK_SET) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static int build_id_matches(const struct obj *o)
{
	const unsigned char *bits;
	GElf_Addr vaddr;
	int len = dwfl_module_build_id(o->mod, &bits, &vaddr);
	if (!o->build_id_len)
		return 1; /* nothing recorded: can't check */
	return len > 0 && (uint32_t)len == o->build_id_len &&
	       memcmp(bits, o->build_id, (size_t)len) == 0;
}

static void obj_close_dwfl(struct obj *o)
{
	if (o->dwfl)
		dwfl_end(o->dwfl);
	o->dwfl = NULL;
	o->mod = NULL;
	o->elf = NULL;
}

/* Reports `file` (or fd, which it takes) as the object's ELF. 0 on success. */
static int obj_open(struct wp_symbolizer *s, struct obj *o, const char *file, int fd)
{
	(void)s;
	if (fd < 0)
		fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	o->dwfl = dwfl_begin(&dwfl_callbacks);
	if (!o->dwfl) {
		close(fd);
		return -1;
	}
	dwfl_report_begin(o->dwfl);
	o->mod = dwfl_report_elf(o->dwfl, basename_of(o->path), file, fd, 0, true);
	dwfl_report_end(o->dwfl, NULL, NULL);
	if (!o->mod) {
		close(fd); /* not taken over on failure */
		obj_close_dwfl(o);
		return -1;
	}
	GElf_Addr bias;
	o->elf = dwfl_module_getelf(o->mod, &bias);
	if (!o->elf || bias != 0) {
		obj_close_dwfl(o);
		return -1;
	}
	return 0;
}

static void build_id_hex(const struct obj *o, char *out, size_t outlen)
{
	size_t k = 0;
	for (uint32_t i = 0; i < o->build_id_len && k + 3 <= outlen; i++)
		k += (size_t)snprintf(out + k, outlen - k, "%02x", o->build_id[i]);
	out[k] = 0;
}

/* The separate debug file named by the recorded build-id, if it has that build-id. */
static int obj_open_debug_by_build_id(struct wp_symbolizer *s, struct obj *o)
{
	if (o->build_id_len < 2)
		return -1;
	char hex[2 * WP_MAX_BUILD_ID + 1], path[256];
	build_id_hex(o, hex, sizeof(hex));
	snprintf(path, sizeof(path), "/usr/lib/debug/.build-id/%.2s/%s.debug", hex, hex + 2);
	if (access(path, R_OK) != 0 || obj_open(s, o, path, -1) != 0)
		return -1;
	if (!build_id_matches(o)) {
		obj_close_dwfl(o);
		return -1;
	}
	o->debug_only = 1;
	return 0;
}

static void obj_load(struct wp_symbolizer *s, struct obj *o, const struct mod *m)
{
	o->state = OBJ_BAD;
	int opened = 0;
	const char *why = NULL;
	if (o->path[0] != '/') {
		if (o->is_vdso) {
			int fd = own_vdso_fd(o, m->end - m->start);
			if (fd >= 0 && obj_open(s, o, o->path, fd) == 0) {
				if (build_id_matches(o))
					opened = 1;
				else
					obj_close_dwfl(o);
			}
		}
		if (!opened)
			return; /* [vdso] of another kernel, [vsyscall], [anon], ...: quietly "name+0xoff" */
	} else {
		struct stat st;
		if (stat(o->path, &st) != 0) {
			why = "cannot be read";
		} else if (!S_ISREG(st.st_mode)) {
			why = "is not a regular file";
		} else if (obj_open(s, o, o->path, -1) != 0) {
			why = "is not a readable ELF file";
		} else if (!build_id_matches(o)) {
			obj_close_dwfl(o);
			why = "does not match the profiled file (build-id differs: rebuilt or "
			      "upgraded since?)";
		} else {
			opened = 1;
		}
	}
	if (!opened) {
		if (obj_open_debug_by_build_id(s, o) == 0) {
			warn(s, "%s: %s; symbolizing from its debug file found by build-id", o->path,
			     why ? why : "unusable");
			opened = 1;
		} else {
			warn(s, "%s: %s; its frames are shown as %s+0xOFFSET", o->path,
			     why ? why : "unusable", basename_of(o->path));
			return;
		}
	}
	load_symbols(o);
	load_dwarf(o);
	if (!o->dw && o->is_main)
		warn(s, "%s: no DWARF debug info found (no source lines or inlined frames; build "
			"with -g or install its debug package)",
		     o->path);
	o->state = OBJ_OK;
}

/* Load bias of a module record: start - (vaddr that file_offset maps to). */
static void compute_bias(struct wp_symbolizer *s, struct mod *m)
{
	m->bias_state = -1;
	struct obj *o = m->obj;
	size_t phnum;
	if (elf_getphdrnum(o->elf, &phnum) != 0)
		return;
	if (o->debug_only) {
		/* Offsets in a debug file's program headers are not the original's: use the
		 * executable segment and the lowest mapped offset among this file's records. */
		uint64_t minoff = m->file_offset;
		for (size_t i = 0; i < s->nmods; i++)
			if (s->mods[i].obj == o && s->mods[i].file_offset < minoff)
				minoff = s->mods[i].file_offset;
		int nx = 0;
		GElf_Phdr x = { 0 };
		for (size_t i = 0; i < phnum; i++) {
			GElf_Phdr ph;
			if (gelf_getphdr(o->elf, (int)i, &ph) && ph.p_type == PT_LOAD &&
			    (ph.p_flags & PF_X)) {
				x = ph;
				nx++;
			}
		}
		if (nx != 1)
			return;
		m->bias = m->start - (m->file_offset - minoff) - (x.p_vaddr & ~(uint64_t)0xfff);
		m->bias_state = 1;
		return;
	}
	int best = -1;
	GElf_Phdr bp = { 0 };
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(o->elf, (int)i, &ph) || ph.p_type != PT_LOAD || !ph.p_filesz)
			continue;
		uint64_t pstart = ph.p_offset & ~(uint64_t)0xfff;
		if (m->file_offset < pstart || m->file_offset >= ph.p_offset + ph.p_filesz)
			continue;
		/* prefer exact containment, then executable segments */
		int score = (m->file_offset >= ph.p_offset ? 2 : 0) + ((ph.p_flags & PF_X) ? 1 : 0);
		if (score > best) {
			best = score;
			bp = ph;
		}
	}
	if (best < 0)
		return;
	m->bias = m->start - (bp.p_vaddr + (m->file_offset - bp.p_offset));
	m->bias_state = 1;
}

/* ---------------------------------------------------------------- JIT maps */

static int cmp_jit(const void *a, const void *b)
{
	const struct jit_sym *x = a, *y = b;
	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
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
		warn(s, "%s: owned by uid %u, not by you: JIT names taken from it as they are", path,
		     (unsigned)st.st_uid);
	size_t cap = 0;
	char *line = NULL;
	size_t linecap = 0;
	ssize_t len;
	uint32_t seq = 0;
	while ((len = getline(&line, &linecap, f)) > 0) {
		while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = 0;
		char *p = line, *e;
		errno = 0;
		uint64_t lo = strtoull(p, &e, 16);
		if (e == p || errno)
			continue;
		p = e;
		uint64_t size = strtoull(p, &e, 16);
		if (e == p || errno || (*e != ' ' && *e != '\t'))
			continue;
		p = e;
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p || !size || lo + size < lo)
			continue;
		if (grow(&s->jit, &cap, s->njit + 1, sizeof(*s->jit)))
			break;
		const char *name = arena_strdup(&s->arena, p);
		if (!name)
			break;
		s->jit[s->njit++] = (struct jit_sym){ .lo = lo, .hi = lo + size, .seq = seq++,
						      .name = name };
	}
	free(line);
	fclose(f);
	if (!s->njit)
		return;
	qsort(s->jit, s->njit, sizeof(*s->jit), cmp_jit);
	uint64_t m = 0;
	for (size_t i = 0; i < s->njit; i++) {
		if (s->jit[i].hi > m)
			m = s->jit[i].hi;
		s->jit[i].maxhi = m;
	}
}

static const struct jit_sym *find_jit(struct wp_symbolizer *s, uint64_t pc)
{
	if (!s->jit_loaded)
		load_jit(s);
	ptrdiff_t i = last_le(s->jit, s->njit, sizeof(*s->jit), pc);
	const struct jit_sym *best = NULL;
	/* code is recycled: the latest entry covering pc wins */
	for (int steps = 0; i >= 0 && s->jit[i].maxhi > pc && steps < MAX_WALK_BACK; i--, steps++)
		if (pc < s->jit[i].hi && (!best || s->jit[i].seq > best->seq))
			best = &s->jit[i];
	return best;
}

/* ---------------------------------------------------------------- modules */

static struct mod *find_mod(struct wp_symbolizer *s, uint64_t pc)
{
	ptrdiff_t i = last_le(s->mods, s->nmods, sizeof(*s->mods), pc);
	struct mod *best = NULL;
	for (int steps = 0; i >= 0 && s->mods[i].maxend > pc && steps < MAX_WALK_BACK;
	     i--, steps++) {
		struct mod *m = &s->mods[i];
		if (pc >= m->end)
			continue;
		/* overlapping records (a library unloaded, another loaded at its place): prefer
		 * one still loaded, then the latest recorded */
		if (!best || (((best->flags & WP_MODULE_UNLOADED) && !(m->flags & WP_MODULE_UNLOADED)) ||
			      (!(best->flags & WP_MODULE_UNLOADED) == !(m->flags & WP_MODULE_UNLOADED) &&
			       m->order > best->order)))
			best = m;
	}
	return best;
}

static int cmp_mod(const void *a, const void *b)
{
	const struct mod *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

struct wp_symbolizer *wp_symbolizer_new(const struct wp_profile *p)
{
	struct wp_symbolizer *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	if (!p)
		return s;
	for (size_t i = 0; i < p->nmeta; i++) {
		if (p->meta[i].key && p->meta[i].value && !strcmp(p->meta[i].key, "pid")) {
			char *e;
			long long v = strtoll(p->meta[i].value, &e, 10);
			if (e != p->meta[i].value && *e == 0 && v > 0)
				s->pid = v;
		}
	}
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
		char path[WP_MAX_NAME + 1];
		snprintf(path, sizeof(path), "%s", pm->path && pm->path[0] ? pm->path : "[anon]");
		size_t pl = strlen(path);
		if (pl > 10 && !strcmp(path + pl - 10, " (deleted)"))
			path[pl - 10] = 0;
		uint32_t bl = pm->build_id_len > WP_MAX_BUILD_ID ? WP_MAX_BUILD_ID : pm->build_id_len;
		struct obj *o = NULL;
		for (size_t j = 0; j < s->nobjs; j++) {
			struct obj *c = s->objs[j];
			if (!strcmp(c->path, path) && c->build_id_len == bl &&
			    !memcmp(c->build_id, pm->build_id, bl)) {
				o = c;
				break;
			}
		}
		if (!o) {
			o = calloc(1, sizeof(*o));
			if (!o)
				goto fail;
			o->path = strdup(path);
			if (!o->path) {
				free(o);
				goto fail;
			}
			memcpy(o->build_id, pm->build_id, bl);
			o->build_id_len = bl;
			o->is_vdso = (pm->flags & WP_MODULE_VDSO) || !strcmp(path, "[vdso]");
			s->objs[s->nobjs++] = o;
		}
		if (pm->flags & WP_MODULE_MAIN)
			o->is_main = 1;
		struct mod *m = &s->mods[s->nmods++];
		m->start = pm->start;
		m->end = pm->end;
		m->file_offset = pm->file_offset;
		m->flags = pm->flags;
		m->order = (uint32_t)i;
		m->obj = o;
		m->base = basename_of(o->path);
	}
	if (s->nmods) {
		qsort(s->mods, s->nmods, sizeof(*s->mods), cmp_mod);
		uint64_t mx = 0;
		for (size_t i = 0; i < s->nmods; i++) {
			if (s->mods[i].end > mx)
				mx = s->mods[i].end;
			s->mods[i].maxend = mx;
		}
	}
	return s;
fail:
	wp_symbolizer_free(s);
	return NULL;
}

void wp_symbolizer_free(struct wp_symbolizer *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nobjs; i++) {
		struct obj *o = s->objs[i];
		for (size_t j = 0; j < o->ncus; j++)
			free(o->cus[j].scopes);
		free(o->cus);
		free(o->cur);
		free(o->syms);
		free(o->sym_maxhi);
		obj_close_dwfl(o);
		free(o->path);
		free(o);
	}
	free(s->objs);
	free(s->mods);
	free(s->jit);
	map_free(&s->cache);
	map_free(&s->demangled);
	free(s->dnames);
	strset_free(&s->strings);
	map_free(&s->canon);
	free(s->canons);
	free(s->results);
	free(s->frames);
	free(s->warn);
	while (s->arena) {
		struct chunk *n = s->arena->next;
		free(s->arena);
		s->arena = n;
	}
	free(s);
}

/* ---------------------------------------------------------------- lookup */

static const char *fmt_offset(struct wp_symbolizer *s, const char *base, uint64_t off)
{
	char buf[WP_MAX_NAME + 32];
	snprintf(buf, sizeof(buf), "%s+0x%" PRIx64, base, off);
	const char *r = arena_strdup(&s->arena, buf);
	return r ? r : base;
}

static int unknown_frame(struct wp_frame *f, uint64_t pc)
{
	*f = (struct wp_frame){ .function = "(unknown)", .module = "(unknown)",
				.module_offset = pc };
	return 1;
}

/* Resolves one address into up to MAX_CHAIN frames. */
static int resolve(struct wp_symbolizer *s, uint64_t addr, struct wp_frame *fr)
{
	struct mod *m = find_mod(s, addr);
	if (!m) {
		const struct jit_sym *j = find_jit(s, addr);
		if (!j)
			return unknown_frame(fr, addr);
		fr[0] = (struct wp_frame){ .function = demangle(s, j->name), .module = "[jit]",
					   .known = 1, .module_offset = addr };
		return 1;
	}
	struct obj *o = m->obj;
	if (o->path[0] != '/' && !o->is_vdso) {
		/* anonymous executable memory, "//anon", "/memfd:..." are where JITs put code */
		const struct jit_sym *j = find_jit(s, addr);
		if (j) {
			fr[0] = (struct wp_frame){ .function = demangle(s, j->name), .module = "[jit]",
						   .known = 1, .module_offset = addr };
			return 1;
		}
	}
	if (o->state == OBJ_UNLOADED)
		obj_load(s, o, m);
	if (o->state == OBJ_OK && !m->bias_state)
		compute_bias(s, m);
	if (o->state != OBJ_OK || m->bias_state != 1) {
		uint64_t off = m->file_offset + (addr - m->start);
		fr[0] = (struct wp_frame){ .function = fmt_offset(s, m->base, off), .module = m->base,
					   .module_offset = off };
		return 1;
	}
	uint64_t va = addr - m->bias;
	struct sym *sym = find_sym(o, va);

	/* DWARF: CU, line, inline chain */
	struct cu *c = NULL;
	ptrdiff_t chain[MAX_CHAIN];
	int nchain = 0, has_subprogram = 0;
	uint64_t da = va - o->dwbias;
	if (o->dw && o->ncur) {
		c = find_cu(o, da);
		if (c && !c->built)
			build_scopes(c);
		if (c && c->nscopes) {
			for (ptrdiff_t i = find_scope(c, da); i >= 0 && nchain < MAX_CHAIN;
			     i = c->scopes[i].parent) {
				if (!(c->scopes[i].lo <= da && da < c->scopes[i].hi))
					continue;
				chain[nchain++] = i;
				if (!c->scopes[i].inlined) {
					has_subprogram = 1;
					break;
				}
			}
		}
	}

	if (!sym && !has_subprogram) {
		/* in the module but in no function we know of: never the nearest name */
		fr[0] = (struct wp_frame){ .function = fmt_offset(s, m->base, va), .module = m->base,
					   .module_offset = va };
		return 1;
	}

	const char *file = NULL;
	int line = 0;
	if (c) {
		Dwarf_Line *l = dwarf_getsrc_die(&c->cudie, da);
		if (l) {
			file = dwarf_linesrc(l, NULL, NULL);
			if (dwarf_lineno(l, &line) != 0 || line < 0)
				line = 0;
		}
	}

	int n = 0;
	/* inlined frames, innermost first; the outer frame's line is the inner's call site */
	int ninl = has_subprogram ? nchain - 1 : nchain;
	for (int k = 0; k < ninl && n < MAX_CHAIN - 1; k++) {
		struct scope *sc = &c->scopes[chain[k]];
		const char *name = die_name(s, &sc->die);
		fr[n++] = (struct wp_frame){ .function = name ? name : "(inlined)", .file = file,
					     .line = line, .inlined = 1, .known = 1,
					     .module = m->base, .module_offset = va };
		call_site(&sc->die, &file, &line);
	}
	const char *name = NULL;
	if (sym) {
		if (!sym->name)
			sym->name = sym_display(s, sym->raw);
		name = sym->name;
	} else {
		name = die_name(s, &c->scopes[chain[nchain - 1]].die);
	}
	if (name)
		fr[n++] = (struct wp_frame){ .function = name, .file = file, .line = line, .known = 1,
					     .module = m->base, .module_offset = va };
	else
		fr[n++] = (struct wp_frame){ .function = fmt_offset(s, m->base, va), .file = file,
					     .line = line, .module = m->base, .module_offset = va };
	for (int k = 0; k < n; k++)
		if (!fr[k].file)
			fr[k].line = 0;
	return n;
}

/* The interned copy of `str` (a string that lives as long as the symbolizer: libelf/libdw
 * data, our arena, a literal). Pointers seen before are answered without hashing the text. */
static const char *canon(struct wp_symbolizer *s, const char *str)
{
	if (!str)
		return NULL;
	uint32_t idx;
	if (map_get(&s->canon, (uint64_t)(uintptr_t)str, &idx))
		return s->canons[idx];
	const char *c = strset_intern(&s->strings, str);
	if (!grow(&s->canons, &s->capcanons, s->ncanons + 1, sizeof(*s->canons))) {
		s->canons[s->ncanons] = c;
		if (!map_put(&s->canon, (uint64_t)(uintptr_t)str, (uint32_t)s->ncanons))
			s->ncanons++;
	}
	return c;
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
	if (!map_get(&s->cache, addr, &idx)) {
		struct wp_frame fr[MAX_CHAIN];
		int n = resolve(s, addr, fr);
		if (n < 1)
			n = unknown_frame(fr, addr);
		for (int i = 0; i < n; i++) {
			fr[i].function = canon(s, fr[i].function);
			fr[i].file = canon(s, fr[i].file);
			fr[i].module = canon(s, fr[i].module);
		}
		if (s->nresults >= UINT32_MAX - 1 || s->nframes + (size_t)n >= UINT32_MAX ||
		    grow(&s->results, &s->capresults, s->nresults + 1, sizeof(*s->results)) ||
		    grow(&s->frames, &s->capframes, s->nframes + (size_t)n,
			 sizeof(*s->frames))) {
			/* out of memory: answer without caching */
			if (n > max)
				n = max;
			memcpy(out, fr, (size_t)n * sizeof(*out));
			return n;
		}
		memcpy(s->frames + s->nframes, fr, (size_t)n * sizeof(*fr));
		s->results[s->nresults] = (struct result){ .first = (uint32_t)s->nframes,
							   .n = (uint32_t)n };
		s->nframes += (size_t)n;
		idx = (uint32_t)s->nresults++;
		if (map_put(&s->cache, addr, idx)) {
			s->nresults--;
			s->nframes -= (size_t)n;
			if (n > max)
				n = max;
			memcpy(out, fr, (size_t)n * sizeof(*out));
			return n;
		}
	}
	const struct result *r = &s->results[idx];
	int n = (int)r->n < max ? (int)r->n : max;
	memcpy(out, s->frames + r->first, (size_t)n * sizeof(*out));
	return n;
}
