/* SPDX-License-Identifier: MIT */
/* Code in anonymous executable memory (issue 20): a JIT compiler's output, which no module
 * names. Where a large share of the samples that were not blocked in a call ran there, the
 * report says what it likely is and how to name it: the runtime (from the process's modules
 * and command) writes /tmp/perf-PID.map when asked, which the symbolizer reads (sym_jit.c):
 * node --perf-basic-prof, java -XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit,
 * python3.12 -X perf. */
#ifndef WP_JIT_HINT_H
#define WP_JIT_HINT_H

#include <stddef.h>
#include <stdint.h>

#include "resolve.h"

/* A share at or above this (of the samples not blocked in a call) gets the hint. */
#define WP_JIT_HINT_SHARE 0.20
/* ... and at least this many samples. */
#define WP_JIT_HINT_MIN 20

struct wp_jit_use {
	uint64_t unknown;  /* samples whose stack has a frame in no module: "(unknown)" */
	uint64_t base;     /* samples not blocked in a call (stacks not flagged waiting) */
	long pid;          /* the process with most such samples, -1 none */
	const char *runtime; /* "node", "java", "python", else NULL (unknown runtime) */
};

/* Counts r's samples in anonymous executable memory (struct wp_jit_use). */
void wp_jit_use(const struct wp_resolved *r, struct wp_jit_use *u);

/* The hint, one paragraph in buf (cap bytes), when u's share calls for one: returns 1,
 * else 0 and buf is "". */
int wp_jit_hint(const struct wp_jit_use *u, char *buf, size_t cap);

#endif
