/* SPDX-License-Identifier: MIT */
/* The processes of a tree, as their files describe them (META pid, ppid, start_unix_ns and
 * CPU time): who is whose parent, and whose CPU time is whose. One answer for the run's list
 * (run.c), the model's filter (--process-tree, resolve.c), --compare's process keys and CPU
 * (compare.c) and the summary's CPU time (summary.c).
 *
 * A pid can have several images (exec replaces the program, keeps the pid): an image is
 * found by pid and time, the one running then. The kernel keeps a process's CPU time across
 * exec, so an image's figure holds its pid's earlier images' too. */
#ifndef WP_PROCTREE_H
#define WP_PROCTREE_H

#include <stddef.h>
#include <stdint.h>

#include "common/profile.h"

/* One image of a process. */
struct wp_proc_id {
	long pid, ppid;     /* -1 when unknown */
	uint64_t start_ns;  /* its start (unix time, ns) */
	uint64_t cpu_ns;    /* user + system, as its META says (its pid's earlier images' too) */
};

/* The image of a profile (from its META). */
struct wp_proc_id wp_proc_id_of(const struct wp_profile *p);

/* The image of process `pid` among v[0..n) that was running at `at`: the last to start by
 * then (of equal starts, the later in v), else the first to start; -1 when none has that
 * pid. */
long wp_procs_image_at(const struct wp_proc_id *v, size_t n, long pid, uint64_t at);
/* v[i]'s parent: the image of its ppid running when it started, or -1 (not among v). */
long wp_procs_parent(const struct wp_proc_id *v, size_t n, size_t i);
/* Whether v[i] descends from an image that `mark` marks (its parent, its parent's parent...;
 * not v[i] itself). */
int wp_procs_descends(const struct wp_proc_id *v, size_t n, size_t i, const char *mark);
/* Whether v[i] is its pid's last image (its CPU figure then holds the whole process's). */
int wp_procs_last_image(const struct wp_proc_id *v, size_t n, size_t i);
/* v[i]'s own CPU time: its figure less that of its pid's image before it. */
uint64_t wp_procs_own_cpu(const struct wp_proc_id *v, size_t n, size_t i);

#endif
