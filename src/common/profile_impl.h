/* SPDX-License-Identifier: MIT */
/* What the reader (profile_read.c) keeps beside a profile, and its lookups
 * (profile_query.c) use: not for the profile's users. */
#ifndef WP_PROFILE_IMPL_H
#define WP_PROFILE_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "profile.h"

/* The profile handed out is the first member of this, so wp_profile_free can find the rest. */
struct profile_impl {
	struct wp_profile pub;
	char *strings;             /* every string of the profile, NUL-terminated, back to back */
	uint64_t *pcs;             /* every stack's frames, back to back */
	size_t *thread_by_tid;     /* indices into pub.threads, sorted by tid then file order */
	uint64_t *module_max_end;  /* max(end) over pub.modules[0..i] (sorted by start) */
};

/* profile_query.c: p->info from p's META (the reader's last step). */
void wp_profile_fill_info(struct wp_profile *p);

#endif
