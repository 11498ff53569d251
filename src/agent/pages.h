/* SPDX-License-Identifier: MIT */
/* A fork child's resets without page faults.
 *
 * The agent's tables are static arrays, mostly zero pages the process never touched. A fork
 * child that cleared or scanned them whole would fault every page in: measured with
 * bench/forklat, 156 page faults per fork more than unprofiled, most of them in the child's
 * resets (two 128-192 KiB tables scanned, a few KiB memset). These look at which pages are
 * in memory first (mincore: one system call for up to 64 pages) and touch only those; a page
 * in memory is written only when it holds something other than zeros. Async-signal-safe. */
#ifndef WP_PAGES_H
#define WP_PAGES_H

#include <stddef.h>

/* On a static table of 2 KiB or more: it goes to .lbss, which the linker places after .bss,
 * so the small variables that a process's start touches share a few pages instead of lying
 * between the tables, a page fault each (about 3 us on 2 vCPUs here; /bin/true's start
 * touched 25 pages of .bss, issue 19). */
#define WP_BIG __attribute__((section(".lbss")))

/* Zeroes [p, p + n), touching only the pages that are in memory and not zero already. */
void wp_pages_zero(void *p, size_t n);

/* Calls fn(lo, hi, arg) for each part of [p, p + n) that lies in pages in memory (a part
 * never spans a page out of memory; adjacent pages in memory may come as one part). */
void wp_pages_each(void *p, size_t n, void (*fn)(char *lo, char *hi, void *arg), void *arg);

#endif
