/* SPDX-License-Identifier: MIT */
/* Squaring a thread's samples with its clocks (issue 20, "Figures that agree"). A sample
 * stands for its thread's whole interval in the state it was found in, and the moments a
 * tick finds are not independent of what the thread does. A thread that computes in short
 * bursts between blocking calls (a database backend between its client's queries) is woken,
 * queued, and often takes the sampling signal as it returns from the call: found in state R,
 * its blocked time was counted as running (PostgreSQL's backends: twice their CPU time). On
 * an idle machine the same thread is signalled because its clock moved and takes the signal
 * blocked in its next call a few microseconds later: its CPU time was counted as the wait
 * (test_bursts with no spinners: running 25% of its wall time against 80% of CPU).
 *
 * So a sample's interval is split by the thread's own clocks: its CPU clock says what it ran
 * since its previous sample, schedstat's runqueue time what it waited for a CPU (cpuwait.h,
 * given to samples up to what they did not run), and the rest it was blocked:
 *   - a sample found waiting (blocked in a call, or interrupted in one by the signal) gives
 *     what the thread ran to the stack of its latest sample found running, where its bursts
 *     run, and what it waited for a CPU to that, as a runnable sample does;
 *   - a sample found running gives the part of its interval it neither ran nor waited for a
 *     CPU to a wait: the call it was found blocked in at its previous sample (it left that
 *     call meanwhile); else the call it has just left, when the signal found it back from
 *     one (the same stack flagged waiting, with the call's wait, waits.h: read from the code
 *     before the pc, as glibc's wrappers load the call's number just before `syscall`, and
 *     from the argument registers, which the kernel leaves as they were), and then what it
 *     ran goes where it runs; else the call it was last found blocked in, on that sample's
 *     stack (blocked many times between two samples, for microseconds at a time). A thread
 *     never found blocked keeps it running;
 *   - no sample counts more running than the thread's CPU clock leaves (wp_reconcile_cap);
 *   - wall mode only: a cpu profile's samples are CPU time.
 * Runqueue time is read at most every 20 ms, so a sample may give as blocked what a later
 * read shows it waited for a CPU; that read then gives the later samples more of it: the
 * totals agree, and only which of a thread's waits a moment's time went to may shift.
 * test_bursts (crowded and idle): running within a point or two of the CPU time, io of the
 * blocked time, both cases; before, +3 to +10 points crowded and -52 idle.
 * Sampler thread only, after the thread runs again (outside any window): it reads the
 * program's memory and /proc. */
#ifndef WP_RECONCILE_H
#define WP_RECONCILE_H

#include <stdint.h>
#include <sys/ucontext.h>

struct wp_athread;
struct wp_stack_entry;
struct wp_wait_entry;
struct wp_cpuwait_entry;

/* Whether registers `g` stand just after a `syscall` instruction that a `mov $NR, %eax` (or
 * %rax) precedes, or (`interrupted`: the signal came inside the call) on one the kernel
 * rewound to restart, for a call that may block and that waits.h names from its arguments
 * alone (not a futex: a lock's holder is read as wait_locks.h orders it); *nr and args[6]
 * get the call and its arguments, which the kernel leaves in their registers. */
int wp_reconcile_call(const greg_t *g, int interrupted, long *nr, uint64_t args[6]);

/* Sample of `t` on running stack `e` worth `units` and `weight_ns`, of which `unran_ns` it
 * neither ran nor waited for a CPU, just back from call `nr`: moves `unran_ns` to that call's
 * wait on the waiting copy of `e`. `may_look`: whether a descriptor's target may be read from /proc now;
 * *looked_ns gets what reading it cost. */
uint64_t wp_reconcile_blocked(struct wp_athread *t, struct wp_stack_entry *e, long nr,
			      const uint64_t args[6], uint32_t units, uint64_t weight_ns,
			      uint64_t unran_ns, int may_look, uint64_t *looked_ns);

/* `t` was just sampled blocked on stack `e`, counted in wait `w` or, in state D, in disk
 * wait `d` (cpuwait.h): where wp_reconcile_unseen puts blocked time its running samples did
 * not see. */
void wp_reconcile_note_blocked(struct wp_athread *t, struct wp_stack_entry *e,
			       struct wp_wait_entry *w, struct wp_cpuwait_entry *d);

/* The same as wp_reconcile_blocked for a running sample that is not just back from a call it
 * can name: `unran_ns` goes to the call `t` was last found blocked in, on that sample's
 * stack; nowhere when it never was. Both return what they moved. */
uint64_t wp_reconcile_unseen(struct wp_athread *t, struct wp_stack_entry *e, uint32_t units,
			     uint64_t weight_ns, uint64_t unran_ns);

/* Running sample `e` of `t` (worth `units`, `weight_ns`) leaves `running_ns` counted running
 * after the moves above: what of it passes the thread's CPU clock (less what its samples
 * counted running before) goes to the wait it was last found blocked in. The clocks that
 * split each sample come from two sources (the handler's exact one, schedstat's from the
 * task) and from moments a little apart; under load their small disagreements add up, and
 * this keeps "running" within the CPU time all the same. */
void wp_reconcile_cap(struct wp_athread *t, struct wp_stack_entry *e, uint32_t units,
		      uint64_t weight_ns, uint64_t running_ns);

/* Sample of `t` found waiting on stack `e`, worth `units` and `weight_ns`, counted there a
 * moment ago: what the thread ran since its previous sample (its CPU clock, exact) moves to
 * the stack of its latest sample found running, where its bursts run, within what the
 * thread's CPU clock leaves (wp_reconcile_cap). Returns the whole samples moved; *ran_ns the
 * time. The caller counts the sample's wait for the rest. */
uint32_t wp_reconcile_ran(struct wp_athread *t, struct wp_stack_entry *e, uint32_t units,
			  uint64_t weight_ns, uint64_t *ran_ns);

#endif
