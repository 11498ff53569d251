/* SPDX-License-Identifier: MIT */
/* The agent's life (agent.c), as the rest of the agent sees it.
 * Not async-signal-safe: these stop the sampler (joins, bounded waits) and may write files.
 * wp_agent_meta is (it returns a static buffer built at start). */
#ifndef WP_AGENT_H
#define WP_AGENT_H

/* The META lines the agent knows from its settings (mode, hz, command...); the writer adds
 * the measurements. */
const char *wp_agent_meta(void);

/* The exec interposers (exec.c): write the profile and make sure no signal of ours is left
 * pending before the image goes; after a failed exec, profile this image again. */
void wp_agent_before_exec(void);
void wp_agent_after_failed_exec(void);

/* The _exit interposers (exit.c): the final write, with the status. Async-signal-safe. */
void wp_agent_before__exit(int status);

/* Before a wait for any child with __WALL or __WCLONE (waitall.c), which would wait for the
 * sampler's task: the agent stops (the profile is written, the task ends). */
void wp_agent_before_wall_wait(void);

/* Fork (forks.c). In the child, inside the C library's fork: stop acting as the parent's
 * agent, allocating nothing. Then, once every fork handler has run: profile the child
 * afresh (allocates; starts its sampler). */
void wp_agent_fork_child(void);
void wp_agent_fork_child_restart(void);
/* Registers the fork handlers (once, at the first start). */
void wp_forks_init(void);

#endif
