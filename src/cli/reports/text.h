/* SPDX-License-Identifier: MIT */
/* What the text report's two files share (text.c: header, STATS, flat profile, WAITS, call
 * graph; text_threads.c: the per-process and per-thread sections): the report's state, its
 * widths and the few formatting helpers both use. Internal to reports/. */
#ifndef WP_REPORTS_TEXT_H
#define WP_REPORTS_TEXT_H

#include <stdint.h>
#include <stdio.h>

#include "cli.h"
#include "tally.h"

#define WIDTH 100       /* no line of a table is longer */
#define GRAPH_FUNCS 10  /* functions in the call graph */
#define GRAPH_EDGES 8   /* callers / callees listed per function */
#define THREAD_FUNCS 5  /* functions listed per thread */
#define MAX_THREADS 20  /* thread sections without --thread */
#define MAX_PROCS 20    /* process sections without --process */
#define FEW_SAMPLES 100 /* below this, warn that the shares are rough */

/* A table's dashes, 88 of them (text.c) */
extern const char wp_text_dashes[];

struct text {
	const struct wp_opts *o;
	const struct wp_profile *p;
	const struct wp_resolved *r; /* the filtered model: every count below is of its samples */
	const struct wp_summary *s;  /* the figures shown */
	FILE *out;
	int wall;
	uint64_t total; /* samples kept by the filter */
};

/* "file.c:123" (basename), or "-" when unknown. */
const char *wp_text_source(const char *file, int line, char *buf, size_t cap);

/* A section's title, centred between two rules. */
void wp_text_banner(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Per thread; over several processes, per process (the images of one pid are one process,
 * in the order they started) with its threads within (text_threads.c). */
void wp_text_threads(struct text *t);

/* The threads without a section (none of the `ntc` in `tc`: no sample) that ran unseen
 * (summary.h) say so, one line each under their name (text_threads.c). */
void wp_text_unseen_unsampled(struct text *t, const struct wp_thread_count *tc, size_t ntc);

#endif
