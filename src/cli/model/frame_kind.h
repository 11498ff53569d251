/* SPDX-License-Identifier: MIT */
/* What kind of code a function is: the model says it (resolve.c), reports colour or group by
 * it. Kept apart so that a report's own header (flame.h) can use it without the model
 * depending on that report. */
#ifndef WP_FRAME_KIND_H
#define WP_FRAME_KIND_H

enum wp_frame_kind {
	WP_KIND_PROGRAM = 0, /* the main executable */
	WP_KIND_LIBRARY = 1, /* a shared library */
	WP_KIND_KERNEL = 2,  /* reserved */
	WP_KIND_UNKNOWN = 3, /* no symbol */
	WP_KIND_THREAD = 4,  /* not code: a report's per-thread root frame "[name tid=N]" */
};

#endif
