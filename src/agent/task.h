/* SPDX-License-Identifier: MIT */
#ifndef WALLPROF_TASK_H
#define WALLPROF_TASK_H

#include <stdint.h>
#include <sys/types.h>

/* The sampler's task: a task that shares the program's memory but is not one of its threads
 * (clone(CLONE_VM) without CLONE_THREAD), so the program counts only the threads it made
 * (/proc/self/task, "Threads:" in its status), unshare(CLONE_NEWUSER) and the other calls
 * that need a single-threaded process work, and the task outlives the program's thread group
 * however it ends (exit_group as a system call, a fatal signal), to write the profile then.
 * docs/design.md ("Where the sampler lives") says why and what it costs. */

/* Starts `fn(arg)` on a new task; returns 0 or -errno. The calling thread waits (at most 1 s)
 * until the thread lent for the task's glibc thread state is gone, so the program never sees
 * a thread it did not make; not until the task runs (task_word is set by then: a stop finds
 * it). */
int wp_task_start(void (*fn)(void *), void *arg);

/* The task's tid (its pid: it leads a thread group of its own), 0 before it started. */
pid_t wp_task_tid(void);

/* Waits until the task has ended, until `deadline` (CLOCK_MONOTONIC ns). 1 when it has. */
int wp_task_wait_gone(uint64_t deadline);

/* The process the task samples: the pid the program's threads share (getpid() on the task
 * gives the task's own). */
pid_t wp_task_program_pid(void);

/* Sets what wp_task_program_pid says: the sampler's start, on a thread of the program, task or
 * not. */
void wp_task_note_program(pid_t pid);

/* In a fork child: the parent's task does not exist here. `fork_whole`: the fork found no
 * agent task inside a guarded call (forkguard.h), so the next start may take over the
 * parent task's thread state instead of borrowing a new one. */
void wp_task_forget(int fork_whole);

#endif
