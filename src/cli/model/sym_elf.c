/* SPDX-License-Identifier: MIT */
/* A module's ELF symbol table, sorted by address for binary search. libdwfl's own
 * address-to-symbol search is linear in the symbol count; and an address in no symbol is not
 * given the nearest name here. */
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

#include "sym_internal.h"

/* Which of several names for one address to show: lower is better. */
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
	if (x->r.lo != y->r.lo)
		return x->r.lo < y->r.lo ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return strcmp(x->raw, y->raw);
}

/* Whether symbol i of the table names code: functions, and sized untyped symbols
 * (hand-written assembly) in code sections. Sets *sym, *addr and *name. */
static int is_code(struct obj *o, int i, GElf_Sym *sym, GElf_Addr *addr, const char **name)
{
	GElf_Word shndx;
	Elf *elf = NULL;
	*name = dwfl_module_getsym_info(o->mod, i, sym, addr, &shndx, &elf, NULL);
	if (!*name || !**name || sym->st_size == 0)
		return 0;
	if (shndx == SHN_UNDEF || shndx == SHN_ABS || shndx == (GElf_Word)-1)
		return 0;
	int type = GELF_ST_TYPE(sym->st_info);
	if (type == STT_NOTYPE) {
		GElf_Shdr sh;
		Elf_Scn *scn = elf ? elf_getscn(elf, shndx) : NULL;
		return scn && gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_EXECINSTR);
	}
	return type == STT_FUNC || type == STT_GNU_IFUNC;
}

/* Whether symbol i of the table names a variable: a sized STT_OBJECT symbol defined here. */
static int is_data(struct obj *o, int i, GElf_Sym *sym, GElf_Addr *addr, const char **name)
{
	GElf_Word shndx;
	Elf *elf = NULL;
	*name = dwfl_module_getsym_info(o->mod, i, sym, addr, &shndx, &elf, NULL);
	return *name && **name && GELF_ST_TYPE(sym->st_info) == STT_OBJECT && shndx != SHN_UNDEF &&
	       sym->st_size;
}

/* The module's symbols that `want` keeps, sorted by start (best-ranked first at one start) and
 * indexed for lookups by address. Returns how many, *out NULL when none. */
static size_t collect(struct obj *o, int (*want)(struct obj *, int, GElf_Sym *, GElf_Addr *,
						  const char **), struct sym **out)
{
	*out = NULL;
	int n = dwfl_module_getsymtab(o->mod);
	if (n <= 0)
		return 0;
	struct sym *v = malloc((size_t)n * sizeof(*v));
	if (!v)
		return 0;
	size_t k = 0;
	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		const char *name;
		if (!want(o, i, &sym, &addr, &name) || addr + sym.st_size < addr)
			continue;
		v[k++] = (struct sym){ .r = { .lo = addr, .hi = addr + sym.st_size }, .raw = name,
				       .rank = sym_rank(name, GELF_ST_BIND(sym.st_info),
							GELF_ST_TYPE(sym.st_info)) };
	}
	if (!k) {
		free(v);
		return 0;
	}
	qsort(v, k, sizeof(*v), cmp_sym);
	*out = v;
	return k;
}

void sym_load_symbols(struct obj *o)
{
	struct sym *v;
	size_t k = collect(o, is_code, &v);
	if (!k)
		return;
	/* aliases (same start): keep the best-ranked name, with the largest extent */
	size_t w = 0;
	for (size_t i = 0; i < k; i++) {
		if (w && v[w - 1].r.lo == v[i].r.lo) {
			if (v[i].r.hi > v[w - 1].r.hi)
				v[w - 1].r.hi = v[i].r.hi;
			continue;
		}
		v[w++] = v[i];
	}
	wp_ranges_index(v, w, sizeof(*v));
	o->syms = v;
	o->nsyms = w;
}

/* The symbol covering addr with the closest start, or NULL. */
struct sym *sym_find(struct obj *o, uint64_t addr)
{
	return wp_ranges_find(o->syms, o->nsyms, sizeof(*o->syms), addr);
}

/* Sorts the module's variables (sized STT_OBJECT symbols) for lookups, once. */
static void load_data(struct obj *o)
{
	o->data_loaded = 1;
	o->ndata = collect(o, is_data, &o->data);
	if (o->ndata)
		wp_ranges_index(o->data, o->ndata, sizeof(*o->data));
}

const char *sym_find_object(struct obj *o, uint64_t va, uint64_t *off)
{
	if (!o->data_loaded)
		load_data(o);
	struct sym *d = wp_ranges_find(o->data, o->ndata, sizeof(*o->data), va);
	if (!d)
		return NULL;
	*off = va - d->r.lo;
	return d->raw;
}
