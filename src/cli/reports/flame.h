/* SPDX-License-Identifier: MIT */
/* Self-contained SVG flame graphs: one file, no network, hover details, click to zoom,
 * search with the matched share, and a differential mode. */
#ifndef WP_FLAME_H
#define WP_FLAME_H

#include <stdint.h>
#include <stdio.h>

#include "frame_kind.h" /* enum wp_frame_kind, for each frame's colour */

/* What a frame's sample was doing, for hot/cold graphs (wp_flame_opts.hotcold): a function
 * of a running sample (warm colours) or of a waiting one (cool colours), the wait itself as a
 * leaf "[wait KIND OBJECT]", a lock's "[held by NAME tid=N]" and the holder's stack above it
 * (its own colours). The same function running and waiting makes two frames, side by side. */
enum wp_flame_state {
	WP_FLAME_RUNNING = 0,
	WP_FLAME_WAITING,
	WP_FLAME_WAIT,    /* "[wait KIND OBJECT]" */
	WP_FLAME_HELD_BY, /* "[held by NAME tid=N]" */
	WP_FLAME_HOLDER,  /* the holder's frames */
	WP_FLAME__N
};

struct wp_flame_frame {
	const char *name;
	enum wp_frame_kind kind;
	enum wp_flame_state state; /* RUNNING (0) unless hotcold */
};

/* One stack, root first, with its sample count. For a differential graph, `count` is the
 * AFTER count and `base` the BEFORE count; otherwise base is ignored. */
struct wp_flame_stack {
	const struct wp_flame_frame *frames;
	int nframes;
	uint64_t count;
	uint64_t base;
};

struct wp_flame_opts {
	const char *title;
	const char *subtitle; /* may be NULL */
	int differential;     /* colour red (more in AFTER) / blue (less) */
	int width;            /* pixels; 0 = 1200 */
	double min_width_px;  /* frames narrower are merged away; 0 = 0.1 */
	int hotcold;          /* colour by state (struct wp_flame_frame.state): running warm,
			       * waiting cool, holders their own; each frame's <g> gets the
			       * class of its state (warm, cool, wait, held, holder) */
};

/* Writes the SVG to `out`. Stacks may repeat; equal prefixes are merged. Returns 0 or -errno. */
int wp_flame_write(FILE *out, const struct wp_flame_stack *stacks, size_t nstacks,
		   const struct wp_flame_opts *opts);

#endif
