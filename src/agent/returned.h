/* SPDX-License-Identifier: MIT */
/* A running sample just back from a blocking call (issue 20, "Figures that agree"). A thread
 * that computes in short bursts between blocking calls (a database backend between its
 * client's queries) is woken, queued, and often takes the sampling signal as it returns from
 * the call: the sample finds it in state R at the instruction after `syscall`, and its whole
 * interval counted as running although its clocks say it was blocked for much of it
 * (cpuwait.h: wp_cpuwait_unseen_block). Such a sample gives that blocked time to the call it
 * has just left: the same stack, flagged waiting, with the call's wait (waits.h), read from
 * the code before the pc (glibc's wrappers load the call's number just before `syscall`) and
 * the argument registers, which the kernel leaves as they were. Sampler thread only, after
 * the thread runs again (outside any window): it reads the program's memory and /proc. */
#ifndef WP_RETURNED_H
#define WP_RETURNED_H

#include <stdint.h>
#include <sys/ucontext.h>

struct wp_athread;
struct wp_stack_entry;

/* Whether registers `g` stand just after a `syscall` instruction that a `mov $NR, %eax` (or
 * %rax) precedes, for a call that may block and is named by waits.h (not a futex: its lock
 * may have another holder now); *nr and args[6] get the call and its arguments. */
int wp_returned_call(const greg_t *g, long *nr, uint64_t args[6]);

/* Sample of `t` on running stack `e` worth `units` and `weight_ns`, of which `unran_ns` it neither ran
 * nor waited for a CPU, just back from call `nr`: moves the blocked time the thread's clocks
 * showed and no sample counted (up to `unran_ns`) to that call's wait on the waiting copy of
 * `e`. `may_look`: whether a descriptor's target may be read from /proc now; *looked_ns
 * gets what reading it cost. */
void wp_returned_count(struct wp_athread *t, struct wp_stack_entry *e, long nr,
		       const uint64_t args[6], uint32_t units, uint64_t weight_ns, uint64_t unran_ns,
		       int may_look, uint64_t *looked_ns);

#endif
