/* SPDX-License-Identifier: MIT */
/* DWARF: source lines and inlined frames. dwarf_getscopes would walk a whole compile unit for
 * every address; instead:
 *   CUs:    the address ranges of every CU DIE, sorted;
 *   scopes: per CU, built on its first use, the ranges of its subprograms and inlined
 *           subroutines sorted and linked to their innermost enclosing range, so the inline
 *           chain of an address is a binary search and a walk up the parents. */
#include <dwarf.h>
#include <stdlib.h>
#include <string.h>

#include "sym_internal.h"

#define MAX_DIE_DEPTH 256 /* DIE nesting followed when indexing a CU */

static int cmp_cur(const void *a, const void *b)
{
	const struct cu_range *x = a, *y = b;
	int c = wp_range_cmp(&x->r, &y->r);
	return c ? c : x->cu < y->cu ? -1 : x->cu > y->cu;
}

/* The split unit of a -gsplit-dwarf skeleton (its scopes are in the .dwo/.dwp), else the
 * unit's own DIE. */
static Dwarf_Die walk_die(Dwarf_CU *cu, uint8_t unit_type, Dwarf_Die cudie)
{
	Dwarf_Die split;
	memset(&split, 0, sizeof(split));
	if (unit_type == DW_UT_skeleton &&
	    dwarf_cu_info(cu, NULL, NULL, NULL, &split, NULL, NULL, NULL) == 0 && split.addr)
		return split;
	return cudie;
}

/* Adds the address ranges of one CU, and the CU when it has code. -1 when out of memory. */
static int add_cu(struct obj *o, size_t *capcus, size_t *capcur, Dwarf_Die cudie, Dwarf_Die walk)
{
	size_t before = o->ncur;
	ptrdiff_t off = 0;
	Dwarf_Addr base, lo, hi;
	int nr = 0;
	while ((off = dwarf_ranges(&cudie, off, &base, &lo, &hi)) > 0 && nr < 1000000) {
		nr++;
		if (hi <= lo)
			continue;
		if (wp_grow(&o->cur, capcur, o->ncur + 1, sizeof(*o->cur))) {
			o->ncur = before;
			return -1;
		}
		o->cur[o->ncur++] = (struct cu_range){ .r = { .lo = lo, .hi = hi },
						       .cu = (uint32_t)o->ncus };
	}
	if (o->ncur == before)
		return 0; /* no code */
	if (wp_grow(&o->cus, capcus, o->ncus + 1, sizeof(*o->cus))) {
		o->ncur = before;
		return -1;
	}
	o->cus[o->ncus++] = (struct cu){ .cudie = cudie, .walk = walk };
	return 0;
}

void sym_load_dwarf(struct obj *o)
{
	Dwarf_Addr bias = 0;
	Dwarf *dw = dwfl_module_getdwarf(o->mod, &bias);
	if (!dw)
		return;
	o->dw = dw; /* even with no code ranges: marks "has DWARF" */
	o->dwbias = bias;
	size_t capcus = 0, capcur = 0;
	Dwarf_CU *cu = NULL;
	Dwarf_Half version;
	uint8_t unit_type;
	Dwarf_Die cudie, subdie;
	/* bounded: a corrupt section can't make dwarf_get_units loop, but be safe anyway */
	for (size_t guard = 0; guard < 10000000; guard++) {
		if (dwarf_get_units(dw, cu, &cu, &version, &unit_type, &cudie, &subdie) != 0)
			break;
		if ((unit_type != DW_UT_compile && unit_type != DW_UT_skeleton) || !cudie.addr)
			continue;
		if (add_cu(o, &capcus, &capcur, cudie, walk_die(cu, unit_type, cudie)))
			break;
	}
	if (!o->ncur) {
		sym_free_dwarf(o);
		return;
	}
	qsort(o->cur, o->ncur, sizeof(*o->cur), cmp_cur);
	wp_ranges_index(o->cur, o->ncur, sizeof(*o->cur));
}

void sym_free_dwarf(struct obj *o)
{
	for (size_t j = 0; j < o->ncus; j++)
		free(o->cus[j].scopes);
	free(o->cus);
	free(o->cur);
	o->cus = NULL;
	o->cur = NULL;
	o->ncus = o->ncur = 0;
}

static struct cu *find_cu(struct obj *o, uint64_t addr)
{
	struct cu_range *r = wp_ranges_find(o->cur, o->ncur, sizeof(*o->cur), addr);
	return r ? &o->cus[r->cu] : NULL;
}

static int cmp_scope(const void *a, const void *b)
{
	const struct scope *x = a, *y = b;
	int c = wp_range_cmp(&x->r, &y->r);
	return c ? c : x->seq < y->seq ? -1 : x->seq > y->seq;
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

/* Adds the ranges of a subprogram or inlined subroutine DIE. -1 when out of memory. */
static int add_scope(struct scope **v, size_t *n, size_t *cap, Dwarf_Die *d, int tag,
		     uint32_t seq)
{
	ptrdiff_t off = 0;
	Dwarf_Addr base, lo, hi;
	int nr = 0;
	while ((off = dwarf_ranges(d, off, &base, &lo, &hi)) > 0 && nr++ < 100000) {
		if (hi <= lo)
			continue;
		if (wp_grow(v, cap, *n + 1, sizeof(**v)))
			return -1;
		(*v)[(*n)++] = (struct scope){ .r = { .lo = lo, .hi = hi }, .parent = -1,
					       .seq = seq,
					       .inlined = tag == DW_TAG_inlined_subroutine,
					       .die = *d };
	}
	return 0;
}

/* parent = the innermost earlier range containing each one (a stack of open ranges) */
static int link_parents(struct scope *v, size_t n)
{
	int32_t *open = malloc(n * sizeof(*open));
	if (!open)
		return -1;
	size_t top = 0;
	for (size_t i = 0; i < n; i++) {
		while (top && !(v[open[top - 1]].r.hi >= v[i].r.hi &&
				v[open[top - 1]].r.lo <= v[i].r.lo))
			top--;
		v[i].parent = top ? open[top - 1] : -1;
		open[top++] = (int32_t)i;
	}
	free(open);
	return 0;
}

static void build_scopes(struct cu *c)
{
	c->built = 1;
	struct scope *v = NULL;
	size_t n = 0, cap = 0;
	uint32_t seq = 0;
	Dwarf_Die stack[MAX_DIE_DEPTH];
	if (dwarf_child(&c->walk, &stack[0]) != 0)
		return;
	int sp = 1;
	while (sp > 0) {
		Dwarf_Die *d = &stack[sp - 1];
		int tag = dwarf_tag(d);
		if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine) {
			if (add_scope(&v, &n, &cap, d, tag, seq++))
				break;
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
	if (!n) {
		free(v);
		return;
	}
	qsort(v, n, sizeof(*v), cmp_scope);
	if (link_parents(v, n)) {
		free(v);
		return;
	}
	c->scopes = v;
	c->nscopes = n;
}

/* Innermost scope containing addr (index), or -1. */
static ptrdiff_t find_scope(const struct cu *c, uint64_t addr)
{
	ptrdiff_t i = wp_ranges_last(c->scopes, c->nscopes, sizeof(*c->scopes), addr);
	for (int steps = 0; i >= 0 && steps < MAX_CHAIN * 4; steps++) {
		if (c->scopes[i].r.lo <= addr && addr < c->scopes[i].r.hi)
			return i;
		i = c->scopes[i].parent;
	}
	return -1;
}

/* Where an inlined subroutine was called from. */
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

const char *sym_die_name(struct wp_symbolizer *s, Dwarf_Die *die)
{
	Dwarf_Attribute a;
	const char *linkage = NULL;
	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &a) ||
	    dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a))
		linkage = dwarf_formstring(&a);
	if (linkage) {
		const char *d = sym_demangle(s, linkage);
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

/* The scopes holding da, innermost first, up to the subprogram (included) when there is one.
 * Returns how many; *has_subprogram tells whether the last one is the subprogram. */
static int scope_chain(struct cu *c, uint64_t da, ptrdiff_t chain[MAX_CHAIN], int *has_subprogram)
{
	int n = 0;
	*has_subprogram = 0;
	for (ptrdiff_t i = find_scope(c, da); i >= 0 && n < MAX_CHAIN; i = c->scopes[i].parent) {
		if (!(c->scopes[i].r.lo <= da && da < c->scopes[i].r.hi))
			continue;
		chain[n++] = i;
		if (!c->scopes[i].inlined) {
			*has_subprogram = 1;
			break;
		}
	}
	return n;
}

int sym_dwarf_frames(struct wp_symbolizer *s, struct obj *o, uint64_t va, struct wp_frame *fr,
		     int max, const char **file, int *line, Dwarf_Die **outer)
{
	uint64_t da = va - o->dwbias;
	struct cu *c = o->dw && o->ncur ? find_cu(o, da) : NULL;
	*file = NULL;
	*line = 0;
	*outer = NULL;
	if (!c)
		return 0;
	if (!c->built)
		build_scopes(c);
	ptrdiff_t chain[MAX_CHAIN];
	int has_subprogram = 0;
	int nchain = c->nscopes ? scope_chain(c, da, chain, &has_subprogram) : 0;
	Dwarf_Line *l = dwarf_getsrc_die(&c->cudie, da);
	if (l) {
		*file = dwarf_linesrc(l, NULL, NULL);
		if (dwarf_lineno(l, line) != 0 || *line < 0)
			*line = 0;
	}
	/* inlined frames, innermost first; the outer frame's line is the inner's call site */
	int n = 0, ninl = has_subprogram ? nchain - 1 : nchain;
	for (int k = 0; k < ninl && n < max; k++) {
		Dwarf_Die *die = &c->scopes[chain[k]].die;
		const char *name = sym_die_name(s, die);
		fr[n++] = (struct wp_frame){ .function = name ? name : "(inlined)", .file = *file,
					     .line = *line, .inlined = 1, .known = 1 };
		call_site(die, file, line);
	}
	if (has_subprogram)
		*outer = &c->scopes[chain[nchain - 1]].die;
	return n;
}
