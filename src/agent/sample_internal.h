/* SPDX-License-Identifier: MIT */
/* What the two halves of taking samples share: sample.c (each tick: which threads, the
 * signalled ones through the handshake, lock holders, threads with a perf clock) and
 * sample_nosignal.c (the samples taken without a signal: a thread that has not run, one
 * blocked in the kernel, and the notes on what a sample waited for). Sampler thread only,
 * under its tick lock, outside any window. Internal to the agent. */
#ifndef WP_SAMPLE_INTERNAL_H
#define WP_SAMPLE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/ucontext.h>

#include "config.h"
#include "clock.h"
#include "stats.h"

struct wp_athread;
struct wp_stack_entry;

/* --- sample.c --- */

/* How many sampling intervals a sample worth `weight_ns` stands for (at least one). */
uint32_t wp_sample_units(uint64_t weight_ns);
/* A sample missed for `why` (not counted while lock holders are sampled: a holder's extra
 * look is no sample of the program). */
void wp_sample_miss(enum wp_miss why);
/* Whether lock holders are being sampled (wp_sample_holders): their samples are not counted
 * and leave the threads' sampling state as it was. */
int wp_sample_holder_only(void);
/* Stack bytes to copy for `t` whose stack pointer is `sp`. */
size_t wp_sample_copy_len(const struct wp_athread *t, uintptr_t sp);
/* A stack buffer of the largest copy, free whenever no handshake batch is in flight; NULL when
 * the buffers could not be mapped (sample.c maps them at first use). */
uint8_t *wp_sample_spare_buffer(void);
/* A time of the run as microseconds from its start (a stack's last sample). */
uint64_t wp_sample_rel_us(uint64_t now);
/* Unwinds a copied thread state (after the thread runs again) and counts the stack, `cpu`
 * the thread's clock then (for wait_locks.h). Returns its entry, NULL when lost. */
struct wp_stack_entry *wp_sample_record(struct wp_athread *t, const greg_t *gregs,
					const uint8_t *stack, size_t stack_len, uint32_t flags,
					uint64_t weight_ns, uint64_t now,
					const struct wp_cpu_reading *cpu);

/* --- sample_nosignal.c --- */

/* The run's settings; the rations refilled (a new profile, a fork child). */
void wp_sample_nosignal_begin(const struct wp_config *c);
void wp_sample_nosignal_forget(void);
/* A thread blocked in the kernel, sampled from /proc without a signal, `before` its CPU
 * clock before the look. Returns 1 when sampled (or deliberately skipped), 0 when the thread
 * is running and may be signalled. */
int wp_sample_blocked(struct wp_athread *t, struct wp_cpu_reading before, uint64_t weight_ns,
		      uint64_t now);
/* The same, paid from the first looks' ration: -1 when over it (nothing done). */
int wp_sample_blocked_rationed(struct wp_athread *t, struct wp_cpu_reading before,
			       uint64_t weight_ns, uint64_t now);
/* The /proc look at a thread not on a CPU, rationed when it is the thread's first. Returns 1
 * when done with the thread (sampled, or missed), 0 when it is running after all. */
int wp_sample_look_blocked(struct wp_athread *t, uint64_t weight_ns, uint64_t now);
/* Whether a thread is on a CPU right now (its clock moved since `before`, or its state). */
int wp_sample_on_cpu_now(struct wp_athread *t, const struct wp_cpu_reading *before);
/* Wall mode: a thread whose CPU clock has not moved since its last sample counted where it
 * was, without a signal. Returns 1 if done. */
int wp_sample_unmoved(struct wp_athread *t, uint64_t weight_ns, uint64_t now);
/* A sample of `t` in state R on stack `e`: cpuwait.h counts the share that waited for a CPU
 * (`unmoved`: all of it). */
/* Returns the part of the sample it neither ran nor waited for a CPU (when known). */
uint64_t wp_sample_note_runnable(struct wp_athread *t, struct wp_stack_entry *e,
				 uint64_t weight_ns, int unmoved, uint64_t now);
/* A sample of `t` running on stack `e` with registers `g`, of which `unran_ns` it neither
 * ran nor waited for a CPU, squares the thread's samples with its clocks (reconcile.h): that
 * part goes to a wait (the call it was in at its previous sample, the call it just left, or
 * the one it was last found in), and no more than its CPU clock leaves stays running. */
void wp_sample_note_returned(struct wp_athread *t, struct wp_stack_entry *e, const greg_t *g,
			     uint64_t weight_ns, uint64_t unran_ns, uint64_t now);
/* A signalled sample of `t` on stack `e` with registers `g`, interrupted in a call (or about to
 * restart one): what the thread ran since its previous sample goes to its running stack
 * (reconcile.h), the rest to the call's wait when the code names the call. */
void wp_sample_note_interrupted(struct wp_athread *t, struct wp_stack_entry *e, const greg_t *g,
				uint64_t weight_ns, uint64_t now);

#endif
