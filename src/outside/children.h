/* SPDX-License-Identifier: MIT */
/* Following the processes an attached process starts (wallprof --pid): every 100 ms the
 * sampler lists the children of each of its process's threads, and each new one gets a
 * sampler process of its own (this program again, --pid=CHILD, the same mode and rate) that
 * writes STEM.CHILD.EXT beside the main profile with the same META run=: the files of a
 * recorded process tree, which the report of the main file finds and shows as one run. Each
 * such sampler follows its own children. When the main sampler ends (its duration, Ctrl-C,
 * its process's end) it stops them all, so the run ends as one. A child that starts and ends
 * between two looks is not seen, and each is sampled from when its sampler attached (up to
 * 100 ms and a process start after its fork). */
#ifndef WP_CHILDREN_H
#define WP_CHILDREN_H

#include <sys/types.h>

/* Samplers started for children write beside `out`, the run's main file (a child's sampler
 * is told it by --root-out), with run id `run`. 0, or -1 (no
 * following: this program's path is unknown). */
int wp_children_begin(const char *out, const char *run, int cpu_mode, int hz);
/* New children of `pid`'s threads get their sampler. */
void wp_children_poll(pid_t pid);
/* Stops every child's sampler and waits for it (bounded). */
void wp_children_end(void);

#endif
