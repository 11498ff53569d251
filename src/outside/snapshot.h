/* SPDX-License-Identifier: MIT */
/* One look at one thread of another process from outside, without stopping it: its state,
 * its run time (schedstat), the system call it is blocked in with its arguments, its stack
 * and instruction pointers (/proc/PID/task/TID/syscall) and a copy of its stack from the
 * stack pointer up (process_vm_readv). The copy is kept only when the thread did not run
 * while it was taken (its schedstat run time is the same before and after): a thread blocked
 * in a call does not touch its stack below the call's frame, so the copy is what the stack
 * was when it blocked.
 *
 * The outside sampler's wall mode takes one for each blocked thread at each tick; a one-off
 * snapshot of every thread (a future --dump) needs nothing else. Reads /proc and the target's
 * memory: needs ptrace read access to the target (same user, Yama allowing), no stop. */
#ifndef WP_SNAPSHOT_H
#define WP_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/ucontext.h>

struct wp_snap {
	char state;          /* /proc's state letter: R, S, D, T, t, Z... (0: unknown) */
	uint64_t run_ns;     /* schedstat: time it has run */
	uint64_t delay_ns;   /* schedstat: time it has waited on a runqueue */
	long nr;             /* the call it is blocked in; -1 none (not in a call), -2 running */
	uint64_t args[6];
	greg_t gregs[NGREG]; /* rsp and rip from the syscall file; the others 0 (unknown) */
	uint8_t *stack;      /* the caller's buffer */
	size_t stack_len;    /* bytes copied from rsp up (0: none) */
	int moved;           /* it ran while the copy was taken: the copy is dropped */
};

/* Reads /proc/PID/task/TID/<name> into buf (NUL-terminated): length, or -1. */
ssize_t wp_snap_read(pid_t pid, pid_t tid, const char *name, char *buf, size_t cap);
/* The state letter and schedstat of `tid` into s (no stack). 0, or -1 when it has ended. */
int wp_snap_state(pid_t pid, pid_t tid, struct wp_snap *s);
/* A full look: state, schedstat, call, registers and up to `cap` bytes of stack into
 * `stack`. 0, or -1 when it has ended. A thread not blocked in a call (running, or between
 * calls) gets nr -2 or -1 and no stack. */
int wp_snap_thread(pid_t pid, pid_t tid, uint8_t *stack, size_t cap, struct wp_snap *s);

#endif
