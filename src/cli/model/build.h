/* SPDX-License-Identifier: MIT */
/* The model's build as its two files share it, not for reports: resolve.c builds the model
 * (locations, functions, kept stacks and threads, counts) and wait_attach.c attaches the
 * WAIT records to its kept stacks and splits the waits off into leaves of their own
 * (--wait-leaves=on). */
#ifndef WP_MODEL_BUILD_H
#define WP_MODEL_BUILD_H

#include <stdint.h>

struct wp_resolved;
struct wp_symbolizer;

#define WP_NO_LOC UINT32_MAX /* an address of the agent's own code: in no stack */

/* The location of `pc` of process `proc` in its role (leaf: looked up at pc, else at pc-1),
 * symbolized on first use; WP_NO_LOC for the agent's own code (the one place where it is
 * left out). */
uint32_t wp_model_location(struct wp_resolved *r, uint32_t proc, uint64_t pc, int leaf);
/* The symbolizer of process `proc`. */
struct wp_symbolizer *wp_model_symbolizer(const struct wp_resolved *r, uint32_t proc);

/* wait_attach.c. Attaches the WAIT records of every process to the kept stacks they
 * describe (struct wp_rstack's waits), each with its kind, object, waiter and holder, capped
 * at the stack's samples; the previous build's waits are dropped first. */
void wp_waits_attach(struct wp_resolved *r);
/* The filter's wait_leaves: every wait in a call or in state D of a wall-mode profile becomes
 * a stack of its own ending in "[wait KIND OBJECT]", appended after the profile's. */
void wp_waits_split(struct wp_resolved *r);
/* Frees the model's waits. */
void wp_waits_drop(struct wp_resolved *r);

#endif
