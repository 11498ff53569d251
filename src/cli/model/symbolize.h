/* SPDX-License-Identifier: MIT */
/* Turning raw addresses from a profile into function names and source lines, in the CLI only
 * (never in the profiled process). Uses elfutils' libdw over the module files named by the
 * profile's module map, so it works after the process is gone and across ASLR. */
#ifndef WP_SYMBOLIZE_H
#define WP_SYMBOLIZE_H

#include <stdint.h>
#include <string.h>

#include "common/profile.h"

struct wp_symbolizer;

/* One source-level frame. An address inside inlined code yields several: the innermost
 * (inlined) first, `inlined` set on all but the outermost. Strings are owned by the
 * symbolizer and live as long as it does. */
struct wp_frame {
	const char *function; /* demangled; never NULL: "module+0xoff" or "(unknown)" when unknown */
	const char *file;     /* NULL when no line information */
	int line;             /* 0 when unknown */
	int inlined;
	int known;            /* 0 when no symbol covers the address */
	const char *module;   /* basename of the module, "(unknown)" when outside every module */
	uint64_t module_offset; /* pc's offset in the module file (ELF virtual address) */
};

/* Whether a frame is the agent's own (its EINTR-retrying wrappers around nanosleep, poll...):
 * every report leaves those out, as if the program had called libc directly. */
static inline int wp_frame_is_agent(const struct wp_frame *f)
{
	return !strcmp(f->module, "libwallprof.so");
}

struct wp_symbolizer *wp_symbolizer_new(const struct wp_profile *p);
void wp_symbolizer_free(struct wp_symbolizer *s);

/* Module files read once for several symbolizers (every process of a report): a library or
 * executable with the same path and build-id is opened, and its symbols and DWARF indexed,
 * once. A warning about a shared file goes to the symbolizer that first read it. Free the
 * cache after every symbolizer that used it. */
struct wp_symcache;
struct wp_symcache *wp_symcache_new(void);
void wp_symcache_free(struct wp_symcache *c);
struct wp_symbolizer *wp_symbolizer_new_shared(const struct wp_profile *p,
					       struct wp_symcache *c);

/* Symbolizes `pc`. `is_return_address` is nonzero for every frame but a stack's leaf: the
 * symbolizer then looks up pc-1 so a call at the end of a function is not attributed to the
 * next one. Writes at most `max` frames into out (innermost first) and returns how many. Always
 * returns at least 1 when max >= 1. Results are cached per pc. */
int wp_symbolize(struct wp_symbolizer *s, uint64_t pc, int is_return_address,
		 struct wp_frame *out, int max);

/* The global or static variable at data address `addr` (a mutex, a condition...): its
 * display name, "name+0xOFF" inside it; NULL when no module's symbol table names it. Looks in
 * the modules mapped below `addr` (a module's data follows its code). */
const char *wp_symbolize_data(struct wp_symbolizer *s, uint64_t addr);

/* Problems met while symbolizing, for the caller to print: one line per module, each
 * "<path>: <what>\n" (a module file missing or not ELF, rebuilt since the profile was taken
 * (build-id mismatch: its frames are left as "module+0xoff"), no debug info for the main
 * executable, ...). Modules are read lazily, so call this after symbolizing. Returns "" when
 * there is nothing to say; the string is owned by the symbolizer and valid until the next
 * wp_symbolize call or wp_symbolizer_free. */
const char *wp_symbolizer_warnings(struct wp_symbolizer *s);

/* Notes on wp_frame values (no change to the contract above):
 * - an address in a module but in no symbol: function "module+0xOFF" with OFF the ELF
 *   virtual address (module_offset); when the file can't be read, OFF is the file offset.
 * - JIT code named by /tmp/perf-PID.map (PID from the profile's "pid" META key): module
 *   "[jit]", known=1, module_offset = pc.
 * - outside every module and JIT map: function and module "(unknown)", module_offset = pc.
 * - every string is interned: equal function, file or module names are the same pointer.
 * A wp_symbolizer is not thread-safe. */

#endif
