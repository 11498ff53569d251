/* SPDX-License-Identifier: MIT */
/* The process's title as `ps` shows it, read while the program runs: a process may retitle
 * itself (nginx's and PostgreSQL's workers write "nginx: worker process" over their argv,
 * others set their comm with prctl(PR_SET_NAME)), and a fork child starts with its parent's.
 * The report names each process by the title it had when sampled (META title_N, written by
 * wp_title_meta).
 *
 * The sampler reads /proc/PID/cmdline and /proc/PID/comm of the program's pid (never
 * /proc/self: the sampler may run as a task of its own), at most every 20 ms, between ticks:
 * never while a thread of the program is held. Samples taken between two reads count for the
 * title the first one found. */
#ifndef WP_TITLE_H
#define WP_TITLE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* In the constructor, on the thread that runs it (the image's main thread): the argv[0] and
 * comm this image was exec'd with, which a retitled process no longer shows. A fork child
 * keeps its parent's (the same image). No system call but prctl(PR_GET_NAME). */
void wp_title_exec(int argc, char **argv);

/* Forgets the titles read so far: a new profile of process `pid` (a start, a fork child's
 * start). Before the sampler runs. */
void wp_title_reset(pid_t pid);

/* On the sampler, between ticks (no thread held): reads the title when 20 ms have passed
 * since the last read; `samples` is the process's samples so far (wp_stats.samples). */
void wp_title_tick(uint64_t now_ns, uint64_t samples);

/* META lines title_N=, title_N_comm=, title_N_samples=, title_N_retitled= (format in
 * docs/profile-format.md) into buf; returns the length. `samples`: the samples so far, the
 * ones since the last read counting for the title it found. Async-signal-safe (formatting
 * only: the writer may run on a dying thread). */
size_t wp_title_meta(char *buf, size_t cap, uint64_t samples);

#endif
