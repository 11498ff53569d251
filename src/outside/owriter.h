/* SPDX-License-Identifier: MIT */
/* The outside sampler's profile file: the format the agent writes (src/common/format.h),
 * from the same tables (stacks.c, waits.c: linked here) and the remote module table, so every
 * report, export and comparison reads it as any other. Written to "<path>.tmp.<pid>" and
 * renamed over <path>. */
#ifndef WP_OWRITER_H
#define WP_OWRITER_H

/* `meta`: the META text ("key=value\n" lines). Returns 0 or -errno. */
int wp_owriter_write(const char *path, const char *meta);

#endif
