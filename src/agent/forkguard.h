/* SPDX-License-Identifier: MIT */
#ifndef WALLPROF_FORKGUARD_H
#define WALLPROF_FORKGUARD_H

#include <stdint.h>

/* What a fork waits for, and nothing more (docs/design.md, "Fork, exec, signals, exit").
 *
 * A fork child abandons every table of the agent (it never walks, frees or trusts them: the
 * sampler may have been half-way through changing any of them), so a fork never waits for a
 * tick. What the child cannot abandon are the locks of others it inherits: the loader's (held
 * inside dl_iterate_phdr and dlopen) and libunwind's own (its memory pools, held inside an
 * unwind). The agent's tasks hold this guard around exactly those calls, each microseconds
 * to a few milliseconds; a fork waits until no agent task is inside one, and none enters
 * while a fork waits.
 *
 * Not a pthread mutex: a fork waiting here is a plain futex wait under the agent's own frames
 * (which the report leaves out), never a "[wait lock ...]" named after a lock of the agent. */

/* On an agent task (the sampler, the module watcher), around a call that takes a lock of the
 * loader's or libunwind's. Waits while a fork is waiting (at most 1 s: a fork stuck in the
 * program's atfork handlers must not stop sampling for good). Never while a thread is held. */
void wp_guard_enter(void);
void wp_guard_leave(void);

/* atfork prepare, on the forking thread: waits until no agent task is inside the guard, for
 * at most `timeout_ns` (the forking thread may hold the loader lock the watcher waits for:
 * fork from a dl_iterate_phdr callback); keeps the guard closed until the parent or child
 * handler. 1 when the guard was free in time. */
int wp_guard_fork_prepare(uint64_t timeout_ns);
void wp_guard_fork_parent(void);
/* In the child: no agent task exists; whatever one held is void. */
void wp_guard_fork_child(void);

#endif
