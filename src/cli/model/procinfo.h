/* SPDX-License-Identifier: MIT */
/* What a profile says of its process besides its samples: the name it goes by, and what the
 * agent said while it ran. Every report names processes and shows warnings through these, so
 * that they cannot disagree.
 *
 * Names. A process may retitle itself: nginx's and PostgreSQL's workers write their title
 * over their argv ("nginx: worker process"), others set their comm with prctl(PR_SET_NAME),
 * and a fork child starts with its parent's. The agent reads the title while the process runs
 * and writes each one seen with the samples taken under it (META title_N, title_N_comm,
 * title_N_samples, title_N_retitled: docs/profile-format.md). A process goes by the title it
 * had for most of its samples; files without titles (older agents) by META command.
 *
 * Warnings. The agent keeps each process's warnings in its profile (META message_N, and
 * messages_dropped past 16): the one way they reach a report, whichever process said them. */
#ifndef WP_PROCINFO_H
#define WP_PROCINFO_H

#include <stddef.h>
#include <stdint.h>

#include "common/profile.h"

/* The process's name: its whole title when it rewrote its argv ("nginx: worker process"), its
 * comm when it renamed itself by PR_SET_NAME ("rt-named-worker"), else its program (the
 * command line's first word without its directory); "?" when unknown. Written into buf
 * (cap bytes) or a string of p's; valid while both are. */
const char *wp_proc_name(const struct wp_profile *p, char *buf, size_t cap);

/* The command line to show for the process: the title it had for most of its samples (the
 * command line as ps shows it), followed by " (named COMM)" when it renamed itself by
 * PR_SET_NAME only; META command for files without titles; "" when unknown. */
const char *wp_proc_command(const struct wp_profile *p, char *buf, size_t cap);

/* Whether `sel` (a --process=NAME) names the process: its program as started (META command's
 * first word without its directory) or its name (wp_proc_name). */
int wp_proc_named(const struct wp_profile *p, const char *sel);

/* One warning of the agent, once however many processes said it. */
struct wp_agent_msg {
	const char *text;   /* points into the profile that said it first */
	size_t proc;        /* that profile: its index in the caller's array */
	size_t more;        /* how many other processes said it too */
};

/* The warnings of the profiles ps[0..n), in their order (each process's in the order it said
 * them), each distinct text once. Returns how many (0 when out of memory: none shown), into
 * *out (free it); *dropped: warnings the agents counted but did not keep. */
size_t wp_agent_messages(const struct wp_profile *const *ps, size_t n,
			 struct wp_agent_msg **out, uint64_t *dropped);

#endif
