/* SPDX-License-Identifier: MIT */
/* The symbolizer's insides, shared by its files (symbolize.h is the API):
 *   symbolize.c     the module map, the per-address cache, resolving one address
 *   sym_debugfile.c opening a module's file (or its separate debug file), its load bias
 *   sym_elf.c       the ELF symbol table, sorted for lookups
 *   sym_dwarf.c     compile units and the scope index: source lines and inlined frames
 *   sym_jit.c       /tmp/perf-PID.map, names of JIT-compiled code
 *   sym_names.c     demangling and display names
 * Strings point into libdw/libelf data (alive as long as the module's Dwfl) or into the
 * symbolizer's arena. */
#ifndef WP_SYM_INTERNAL_H
#define WP_SYM_INTERNAL_H

#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <stdint.h>

#include "alloc.h"
#include "idmap.h"
#include "ranges.h"
#include "symbolize.h"

#define MAX_CHAIN 64 /* frames kept for one address */

struct sym {
	struct wp_range r;
	const char *raw;  /* from the ELF string table */
	const char *name; /* demangled, lazily */
	int rank;
};

struct scope {
	struct wp_range r;
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
	struct wp_range r;
	uint32_t cu;
};

enum { OBJ_UNLOADED = 0, OBJ_OK = 1, OBJ_BAD = -1 };

/* One distinct module file (path + build-id), shared by the module records that map it. */
struct obj {
	char *path; /* as recorded, " (deleted)" removed */
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
	size_t nsyms;
	struct sym *data;  /* its variables (STT_OBJECT), sorted, loaded on the first lookup */
	size_t ndata;
	int data_loaded;

	Dwarf *dw;
	Dwarf_Addr dwbias;
	struct cu *cus;
	size_t ncus;
	struct cu_range *cur;
	size_t ncur;
};

/* One module record of the profile: where a file was mapped. */
struct mod {
	struct wp_range r; /* [start, end) in the process */
	uint64_t file_offset;
	uint32_t flags;
	uint32_t order; /* index in the profile */
	struct obj *obj;
	const char *base; /* basename */
	int bias_state;	  /* 0: not computed, 1: ok, -1: no matching segment */
	uint64_t bias;
};

struct jit_sym {
	struct wp_range r;
	uint32_t seq;
	const char *name;
};

struct result {
	uint32_t first;
	uint32_t n;
};

/* Module files read once for several symbolizers (the processes of one report). */
struct wp_symcache {
	struct obj **objs;
	size_t nobjs, cap;
};

struct wp_symbolizer {
	struct mod *mods; /* sorted by start */
	size_t nmods;
	struct obj **objs; /* its own (freed with it); shared ones are in `shared` */
	size_t nobjs;
	struct wp_symcache *shared; /* NULL: none */

	long long pid;
	int jit_loaded;
	struct jit_sym *jit;
	size_t njit;

	struct wp_u64map cache; /* looked-up address -> results index */
	struct result *results;
	size_t nresults, capresults;
	struct wp_frame *frames;
	size_t nframes, capframes;

	struct wp_u64map demangled; /* pointer of a mangled string -> index in dnames */
	const char **dnames;
	size_t ndnames, capdnames;

	struct wp_interner strings; /* every string handed out: equal strings, same pointer */

	char *warn;
	size_t warnlen, warncap;

	struct wp_arena arena;
};

/* symbolize.c */
void sym_warn(struct wp_symbolizer *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *sym_basename(const char *path);

/* sym_debugfile.c */
void sym_obj_load(struct wp_symbolizer *s, struct obj *o, const struct mod *m);
void sym_obj_close(struct obj *o);
void sym_compute_bias(struct wp_symbolizer *s, struct mod *m);

/* sym_elf.c */
void sym_load_symbols(struct obj *o);
struct sym *sym_find(struct obj *o, uint64_t addr);
/* The data object (a global or static variable) covering ELF address `va`, its raw name and
 * *off the offset in it; NULL when none. The table is built on the first lookup. */
const char *sym_find_object(struct obj *o, uint64_t va, uint64_t *off);

/* sym_dwarf.c */
void sym_load_dwarf(struct obj *o);
void sym_free_dwarf(struct obj *o);
/* What DWARF knows of `va` (an ELF virtual address of o): writes the inlined frames that
 * hold it into fr (innermost first, at most `max`; function, file, line, inlined and known
 * set) and returns how many. *file and *line: the source position in the function that holds
 * them (the call site of the outermost inlined frame, else va's own line), NULL and 0 when
 * unknown. *outer: that function's DIE (alive as long as o), NULL when DWARF knows of none. */
int sym_dwarf_frames(struct wp_symbolizer *s, struct obj *o, uint64_t va, struct wp_frame *fr,
		     int max, const char **file, int *line, Dwarf_Die **outer);
const char *sym_die_name(struct wp_symbolizer *s, Dwarf_Die *die);

/* sym_jit.c */
const struct jit_sym *sym_find_jit(struct wp_symbolizer *s, uint64_t pc);

/* sym_names.c */
const char *sym_demangle(struct wp_symbolizer *s, const char *mangled);
const char *sym_display(struct wp_symbolizer *s, const char *raw);

#endif
