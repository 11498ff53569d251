/* SPDX-License-Identifier: MIT */
#include "pages.h"

#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#define PAGE 4096u
#define BATCH 64u

static void zero_part(char *lo, char *hi, void *arg)
{
	(void)arg;
	for (char *a = lo; a < hi;) {
		char *e = (char *)(((uintptr_t)a & ~(uintptr_t)(PAGE - 1)) + PAGE);
		if (e > hi)
			e = hi;
		/* reading a page in memory costs nothing; writing a shared one copies it */
		size_t n = (size_t)(e - a);
		if (n && (a[0] || memcmp(a, a + 1, n - 1)))
			memset(a, 0, n);
		a = e;
	}
}

void wp_pages_zero(void *p, size_t n)
{
	wp_pages_each(p, n, zero_part, NULL);
}

void wp_pages_each(void *p, size_t n, void (*fn)(char *lo, char *hi, void *arg), void *arg)
{
	char *lo = p, *hi = lo + n;
	char *page = (char *)((uintptr_t)lo & ~(uintptr_t)(PAGE - 1));
	unsigned char in[BATCH];
	while (page < hi) {
		size_t pages = (size_t)(hi - page + PAGE - 1) / PAGE;
		if (pages > BATCH)
			pages = BATCH;
		if (mincore(page, pages * PAGE, in) != 0)
			memset(in, 1, pages); /* cannot tell: as if all were in memory */
		for (size_t i = 0; i < pages;) {
			if (!(in[i] & 1)) {
				i++;
				continue;
			}
			size_t j = i;
			while (j < pages && (in[j] & 1))
				j++;
			char *a = page + i * PAGE, *b = page + j * PAGE;
			fn(a < lo ? lo : a, b > hi ? hi : b, arg);
			i = j;
		}
		page += pages * PAGE;
	}
}
