/* SPDX-License-Identifier: MIT */
/* The sampler thread's life: started by the agent, it paces ticks (each tick's samples are
 * sample.c's), does the work other threads hand it (profile writes, on its own descriptor
 * table), keeps fork from catching it mid-tick, notices when the program's last thread has
 * ended and has the process end as glibc would, and stops. */
/* Async-signal-safety: only wp_sampler_stop_async and wp_sampler_leader_leaving are (futex
 * waits and atomics); everything else takes the tick lock, joins or allocates. */
#ifndef WP_SAMPLER_H
#define WP_SAMPLER_H

#include <stdint.h>
#include <sys/types.h>

#include "config.h"

/* Starts the thread (named "wallprof", all signals blocked). Its first act is to take a
 * descriptor table of its own (fds.h); then it runs `first` (may be NULL) and lists the
 * program's threads when its first tick is due, not before: a process that ends sooner
 * never pays for either. Returns 0 or -errno. */
int wp_sampler_start(const struct wp_config *cfg, void (*first)(void));
/* On the sampler, at the end of a process that ended before its first tick and writes a
 * whole profile all the same: `first` and the thread list, now. Elsewhere nothing. */
void wp_sampler_list_late(void);
/* Asks it to stop and waits (bounded), `last` (may be NULL) running on the sampler thread
 * after its last tick, so that files are written from the agent's own descriptor table.
 * When the sampler cannot run it (never started, gone, stuck), `last` runs on the caller's
 * thread. Called on the sampler thread itself, it runs `last` there and returns. */
void wp_sampler_stop(void (*last)(void));
/* The same from a signal handler (futex waits, no locks), waiting at most `timeout_ns` for
 * the loop to end, or up to 5 s while a tick is under way (it runs `last` as it ends). Returns
 * 0 when the sampler ran `last`; -EBUSY when it is still in a tick (the caller must not
 * write: the tables are changing); otherwise the caller should run it. */
int wp_sampler_stop_async(uint64_t timeout_ns, void (*last)(void));
/* 1 when called off the sampler thread while it is in a tick (tests: WALLPROF_TEST=slow-tick).
 * Async-signal-safe. */
int wp_sampler_in_tick(void);
/* Runs fn(arg) on the sampler thread between two ticks and waits for it (bounded). Returns 0,
 * or -ESRCH when the sampler is not running (or this is the sampler), -EBUSY/-ETIMEDOUT. */
int wp_sampler_call(void (*fn)(void *), void *arg, uint64_t timeout_ns);
/* The thread that waits to call exit(0) for the program (0 before it is started). */
pid_t wp_sampler_exit_tid(void);
/* Called on the leader as it leaves (pthread_exit; its start routine returning in a fork
 * child): starts that thread, on the program's descriptor table. Not async-signal-safe. */
void wp_sampler_prepare_exit_thread(void);
/* Called by the interposed pthread_exit: when the caller is the leader, records its signal
 * mask and has the sampler look soon whether it was the program's last thread.
 * Async-signal-safe (system calls and atomics only). */
void wp_sampler_leader_leaving(void);
/* Fork (forks.c): prepare waits only for the fork guard (forkguard.h), never for a tick;
 * parent reopens it; child resets what the parent's sampler held. None of them allocates or
 * frees: they may run inside the C library's fork, between the program's allocator's own
 * handlers. */
void wp_sampler_fork_prepare(void);
void wp_sampler_fork_parent(void);
void wp_sampler_fork_child(void);
/* Before a new profile (a restart after wallprof_stop): forget the samples so far. */
void wp_sampler_forget(void);
/* In a fork child, once its allocator is usable: forget the parent's sampler (it does not
 * exist here) and its samples, abandoning every table it may have been changing as the
 * process forked (never walked or freed), and, unless the fork found the guard free, the
 * module table and libunwind state (made again at the child's first tick). */
void wp_sampler_forget_fork(void);
/* Called on the sampler thread every `every_ns` (checkpoints). */
void wp_sampler_set_checkpoint(void (*fn)(void), uint64_t every_ns);
/* The sampler's own CPU time so far, ns. */
uint64_t wp_sampler_cpu_ns(void);

/* `fn` runs on the sampler's task after its last tick when the program's thread group ended,
 * or its image was replaced, without the agent's exit hooks (an exit_group or execve system
 * call, SIGKILL): the task outlives it and writes the profile. */
void wp_sampler_set_orphan(void (*fn)(int exec));

/* On the task, once the program's thread group has ended: its exit status as waitpid gives
 * it, or -1 when it cannot be known (reaped already, on a kernel before 6.15). */
int wp_sampler_program_status(void);

/* 1 when the sampler runs on its own task (task.h), outside the program's thread group. */
int wp_sampler_on_task(void);
/* CLOCK_MONOTONIC / CLOCK_REALTIME at start, ns. */
uint64_t wp_sampler_start_ns(void);
uint64_t wp_sampler_start_unix_ns(void);

#endif
