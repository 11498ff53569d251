/* SPDX-License-Identifier: MIT */
/* A binary-search table for an .eh_frame that has no .eh_frame_hdr: statically linked
 * programs (gcc -static links without --eh-frame-hdr), whose images have .eh_frame but no
 * PT_GNU_EH_FRAME. The table has .eh_frame_hdr's layout (pairs of int32: the function's
 * start and its FDE's address, relative to `base`, sorted by start), which is what
 * libunwind's table search reads. */
#ifndef WP_EHTABLE_H
#define WP_EHTABLE_H

#include <stddef.h>
#include <stdint.h>

/* Walks the .eh_frame copy `frame` (runtime address `addr`, `len` bytes) and writes into
 * *table (malloc'ed) the sorted pairs relative to `base`. Returns the number of FDEs (0: none
 * usable, *table NULL). */
size_t wp_ehtable_build(const uint8_t *frame, uintptr_t addr, size_t len, uintptr_t base,
			int32_t **table);

#endif
