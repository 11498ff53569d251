/* SPDX-License-Identifier: MIT */
/* Sampling a thread that blocks the sampling signal, without signalling it: a perf software
 * clock of its own (perf_event_open, PERF_COUNT_SW_TASK_CLOCK, user mode only), whose ring
 * buffer receives, every sampling interval of the thread's CPU time, its user registers and a
 * copy of the top of its user stack. The sampler reads the ring at its ticks and unwinds each
 * record with the code that unwinds a signalled sample (unwind.h); sample.c counts them.
 *
 * Such a thread is never signalled (a signal it blocks stays pending and reaches the program:
 * docs/design.md, "Signal masks"). A clock is opened when the sampler finds the thread running
 * with the signal blocked, kept while it blocks it, and closed once it has ended or has let
 * the signal through for a second (sample.c). Each record carries the thread's clock (the count)
 * as well, so a record lost to a full ring (a late tick) passes its time on to the next one.
 *
 * Nothing here uses getpid(), /proc/self or the sampler's own identity: the event is opened
 * for the thread's tid from whatever task the sampler is (perf_event_open(tid, cpu -1) works
 * from another process of the same user), and its descriptor is closed as soon as the ring is
 * mapped (the mapping keeps the event), so no descriptor of ours stays in any table.
 *
 * Where the kernel refuses (kernel.perf_event_paranoid above 2 without CAP_PERFMON, a seccomp
 * filter, no ptrace access to the thread, the locked-memory limit for the ring), the thread's
 * running time stays unseen: its `unseen_why` says why (wp_pclk_why), and sample.c adds each
 * interval it could not see to its `unseen_ns`. Both go into its THREAD record.
 *
 * Sampler thread only, outside any suspension window (these open, map and unmap). */
#ifndef WP_PERFCLOCK_H
#define WP_PERFCLOCK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/ucontext.h>

#include "config.h"
#include "perfring.h"
#include "threads.h"

void wp_pclk_begin(const struct wp_config *cfg, uint64_t interval_ns);

/* Opens a clock for `t` (which blocks the signal). Returns 0 (t->pclk set), or -errno with
 * t->unseen_why set; a refusal that would be the same for every thread (EACCES, ENOSYS...)
 * is remembered and not tried again, other failures at most once a second per thread. */
int wp_pclk_open(struct wp_athread *t, uint64_t now);
/* Closes t's clock (unmaps its ring). */
void wp_pclk_close(struct wp_athread *t);

/* cpu mode: hands `fn` t's records in order, at most `max`, and drops them from the ring.
 * Returns how many. */
typedef void wp_pclk_fn(struct wp_athread *t, const struct wp_pclk_rec *r, void *arg);
size_t wp_pclk_read(struct wp_athread *t, size_t max, wp_pclk_fn *fn, void *arg);
/* wall mode: drops every record but the newest, which stays in the ring (a later tick may
 * still want it), and fills `r` with it when `r` is not NULL. Returns 1 when there is one. */
int wp_pclk_newest(struct wp_athread *t, struct wp_pclk_rec *r);

/* The threads with a clock open: slot i's thread or NULL, i < wp_pclk_slots(). */
size_t wp_pclk_slots(void);
struct wp_athread *wp_pclk_thread(size_t i);

/* Why `t` has no clock, or NULL when nothing failed for it: one line, for its THREAD record.
 * Async-signal-safe (a static string). */
const char *wp_pclk_why(const struct wp_athread *t);

/* For META: threads that got a clock, records counted, records the kernel lost to a full
 * ring, clocks open now. */
uint64_t wp_pclk_opened(void);
uint64_t wp_pclk_records(void);
uint64_t wp_pclk_lost(void);
uint64_t wp_pclk_open_now(void);

/* A fork child: the rings are not mapped there (perf maps them VM_DONTCOPY) and its threads
 * are new: forget every slot without unmapping anything. */
void wp_pclk_forget(void);

/* Whether the calling thread runs under a seccomp filter (its /proc status), which may kill
 * the process for a call it does not list: the sampler then makes none of its optional ones
 * (perf_event_open here, sched_setattr in sampler.c). */
int wp_seccomp_filtered(void);

#endif
