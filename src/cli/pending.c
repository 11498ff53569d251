/* TEMPORARY: entry points whose real implementations are being written in their own files
 * (text.c, csv.c, svg.c, pprof.c, speedscope.c, diff.c, overhead.c, live.c). Each owner
 * deletes its function from here when adding the real one. This file must be empty and
 * removed before the work is called done. */
#include <stdio.h>

#include "cli.h"

static int pending(const char *what)
{
	fprintf(stderr, "wallprof: %s is not implemented yet\n", what);
	return -1;
}

int wp_live(struct wp_opts *o) { pending("--live"); return 1; }
