/* Turning raw addresses from a profile into function names and source lines, in the CLI only
 * (never in the profiled process). Uses elfutils' libdw over the module files named by the
 * profile's module map, so it works after the process is gone and across ASLR. */
#ifndef WP_SYMBOLIZE_H
#define WP_SYMBOLIZE_H

#include <stdint.h>

#include "../common/profile.h"

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

struct wp_symbolizer *wp_symbolizer_new(const struct wp_profile *p);
void wp_symbolizer_free(struct wp_symbolizer *s);

/* Symbolizes `pc`. `is_return_address` is nonzero for every frame but a stack's leaf: the
 * symbolizer then looks up pc-1 so a call at the end of a function is not attributed to the
 * next one. Writes at most `max` frames into out (innermost first) and returns how many. Always
 * returns at least 1 when max >= 1. Results are cached per pc. */
int wp_symbolize(struct wp_symbolizer *s, uint64_t pc, int is_return_address,
		 struct wp_frame *out, int max);

#endif
