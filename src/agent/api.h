/* SPDX-License-Identifier: MIT */
/* What the public API (api.c) needs from the agent's life (agent.c). Any program thread;
 * not async-signal-safe (they start, stop and wait for the sampler thread). */
#ifndef WP_API_H
#define WP_API_H

#include "config.h"

int wp_agent_begin(const struct wp_config *c);
int wp_agent_end(void);
int wp_agent_flush(const char *path);

#endif
