/* SPDX-License-Identifier: MIT */
/* The module table of ANOTHER process, for the outside sampler: the same interface as the
 * agent's (src/agent/modules.h: wp_modules_find, wp_modules_read, wp_modules_contains,
 * wp_modules_generation), which the agent's unwinder (unwind.c) is linked against here.
 *
 * Built from /proc/PID/maps: every executable mapping of a file (or the vDSO) is a module.
 * Each image's ELF header and program headers are read from the target's memory
 * (process_vm_readv), and the load segments holding its .eh_frame_hdr and .eh_frame are
 * copied, so the unwinder reads only copies: the target is never stopped, and a library it
 * unloads meanwhile cannot make a read fail halfway through an unwind.
 *
 * The history of every executable mapping ever seen gives the profile's MODULE records. */
#ifndef WP_RMODULES_H
#define WP_RMODULES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent/modules.h"

/* Reads /proc/PID/maps and rebuilds the table when it changed since the last call (a hash of
 * the file). Returns 1 when it rebuilt, 0 when unchanged, -errno when the file cannot be read
 * (the process is gone). */
int wp_rmodules_load(pid_t pid);
/* Frees every copy and the history. */
void wp_rmodules_free(void);

#endif
