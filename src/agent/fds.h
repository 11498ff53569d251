/* SPDX-License-Identifier: MIT */
/* The agent's descriptors, kept out of the program's way.
 *
 * open() hands out the lowest free number, so any descriptor the agent holds in the program's
 * table shifts the numbers the program gets (a pipe at 3 and 4, or at 0 when the program was
 * started with stdin closed), shows up in /proc/self/fd, and can be closed or reused by a
 * program that closes everything above 2 (daemons, closefrom) or dup2()s over it. So the
 * agent's threads (the sampler and the module watcher it starts) run with a descriptor table
 * of their own: the sampler's first act is unshare(CLONE_FILES). From then on everything they
 * open (/proc/self/task, /proc files, libunwind's pipe, profile files) lives in that table,
 * which the program can neither see nor touch, and nothing the program closes or reuses can
 * reach the agent's.
 *
 * Where unshare(CLONE_FILES) is refused (a seccomp policy), the agent falls back to holding
 * its few long-lived descriptors in the program's table on high numbers, close-on-exec, and
 * checks each one is still the file it opened before using it (wp_fds_still_ours). */
/* Async-signal-safety: wp_fds_identify, wp_fds_still_ours, wp_fds_on_private_table and
 * wp_fds_private are (fstat and atomics). wp_fds_go_private, wp_fds_hide and the pipe2
 * interposer are not meant for handlers (sampler set-up, opening descriptors). */
#ifndef WP_FDS_H
#define WP_FDS_H

#include <stddef.h>
#include <sys/stat.h>

/* On the sampler thread, before it opens anything: gives this thread (and the threads it
 * creates) a descriptor table of its own, then closes every copy of the program's descriptors
 * in it except `keep[0..n)` (the original stderr, the command's channel). Returns 1 when the
 * table is private, 0 when the fallback applies (or `allowed` is 0: a test hook). */
int wp_fds_go_private(const int *keep, size_t n, int allowed);

/* While on (on the calling thread, in the fallback only): pipes made by pipe2 go to high
 * numbers. The sampler turns it on around libunwind's set-up, which makes one. */
void wp_fds_hide_new_pipes(int on);

/* On a thread the sampler created (the watcher): it shares the sampler's table. */
void wp_fds_adopt(void);

/* 1 when the calling thread is one of the agent's threads with the private table. */
int wp_fds_on_private_table(void);

/* Whether the agent runs with a private table (set once the sampler went private). */
int wp_fds_private(void);

/* Fallback: moves `fd` to a high number, close-on-exec, in the program's table (returns the
 * new descriptor, or `fd` when it cannot be moved). On the private table it returns `fd`. */
int wp_fds_hide(int fd);

/* The identity of an open file, to prove later that a descriptor number still names it. */
struct wp_fd_id {
	dev_t dev;
	ino_t ino;
	int valid;
};
void wp_fds_identify(int fd, struct wp_fd_id *id);
int wp_fds_still_ours(int fd, const struct wp_fd_id *id);

/* In a fork child: the agent's threads and their private table do not exist there. */
void wp_fds_forget(void);

#endif
