/* SPDX-License-Identifier: MIT */
/* --live: which files beside the run's main file are the other processes' of the tree
 * (procfiles.c). Names only: the profiles themselves are read by the caller (cmds/live.c).
 *
 * The agent writes the main file NAME.EXT for the process the command started and NAME.PID.EXT
 * for every other process of the tree it sampled (docs/design.md, "Process trees"); an image
 * replaced by exec leaves NAME[.PID].execN.EXT, a profile of an image that no longer runs,
 * which the live view leaves out (a process that execs starts counting afresh). */
#ifndef WP_LIVE_PROCFILES_H
#define WP_LIVE_PROCFILES_H

#include <stddef.h>

/* The pid in `name` when it is STEM.PID.EXT for the main file's `main_base` (STEM.EXT, EXT
 * from the last dot, possibly none), else -1. */
long procfile_pid(const char *main_base, const char *name);

/* Calls found(path, pid, arg) for every file beside `main_path` named STEM.PID.EXT. Returns
 * 0, or -1 when the directory cannot be read. */
int procfiles_scan(const char *main_path, void (*found)(const char *path, long pid, void *arg),
		   void *arg);

#endif
