/* SPDX-License-Identifier: MIT */
/* Target of the symbolizer test (see test_symbolize.c). Prints the runtime addresses of its
 * functions with the source lines the symbolizer must find, then waits for EOF on stdin so
 * the test can read /proc/PID/maps:
 *   fn NAME ADDR LINE          entry of a function; LINE: where it is defined
 *   ra NAME ADDR L1 L2 ...     a return address inside inlined code; L1: line of the call in
 *                              the innermost inlined function, L2...: its call sites outwards
 *   gap ADDR                   an address in padding, covered by no symbol
 *   bias NAME HEX              load bias of the main program / the shared library
 *   ready
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const void *sym_lib_static_addr(int *line);
const void *sym_lib_fn_addr(int *line);
int sym_lib_fn(int x);
const void *sym_cxx_frob_addr(int *line);
const void *sym_cxx_inline_ra(int *inner_line, int *outer_line);
void sym_gap_fn(void);
int outer_fn(int n);
const void *sym_lib_shared_addr(void);
static const void *target_shared_addr(void);

static volatile int sink;
static const void *recorded_ra;
static int line_inner, line_middle, line_outer;

/* A one-byte function followed by 64 bytes of padding no symbol covers. */
__asm__(".text\n"
	".globl sym_gap_fn\n"
	".type sym_gap_fn, @function\n"
	"sym_gap_fn:\n"
	"\tret\n"
	".size sym_gap_fn, .-sym_gap_fn\n"
	"\t.fill 64, 1, 0xcc\n");

__attribute__((noinline)) static void record(void)
{
	recorded_ra = __builtin_return_address(0);
	__asm__ volatile("" ::: "memory");
}

enum { STATIC_FN_LINE = __LINE__ + 1 };
static __attribute__((noinline)) int static_fn(int x) { sink = sink + x; return sink * 2; }

static inline __attribute__((always_inline)) void inner_inl(int n)
{
	sink = sink + n;
	line_inner = __LINE__; record();
	sink = sink + 1;
}

static inline __attribute__((always_inline)) void middle_inl(int n)
{
	sink = sink ^ n;
	line_middle = __LINE__; inner_inl(n);
	sink = sink - 1;
}

enum { OUTER_FN_LINE = __LINE__ + 1 };
__attribute__((noinline)) int outer_fn(int n) { int r; sink = n;
	line_outer = __LINE__; middle_inl(n);
	r = sink;
	return r + 1;
}

static uintptr_t main_bias, lib_bias;

static int phdr_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	(void)data;
	if (!info->dlpi_name || !info->dlpi_name[0]) {
		if (!main_bias)
			main_bias = info->dlpi_addr;
	} else if (strstr(info->dlpi_name, "libwpsymlib")) {
		lib_bias = info->dlpi_addr;
	}
	return 0;
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

int main(void)
{
	int line, l1, l2;
	const void *a;
	int arr[4] = { 3, 1, 2, 0 };

	qsort(arr, 4, sizeof(int), cmp_int);
	sink = static_fn(1) + outer_fn(2) + sym_lib_fn(3);
	dl_iterate_phdr(phdr_cb, NULL);

	printf("fn static_fn %p %d\n", (void *)(uintptr_t)static_fn, STATIC_FN_LINE);
	printf("fn outer_fn %p %d\n", (void *)(uintptr_t)outer_fn, OUTER_FN_LINE);
	printf("ra inner_inl %p %d %d %d\n", recorded_ra, line_inner, line_middle, line_outer);
	printf("gap %p\n", (void *)((uintptr_t)sym_gap_fn + 1));
	printf("fn sym_gap_fn %p 0\n", (void *)(uintptr_t)sym_gap_fn);
	a = sym_lib_static_addr(&line);
	printf("fn lib_static_fn %p %d\n", a, line);
	a = sym_lib_fn_addr(&line);
	printf("fn sym_lib_fn %p %d\n", a, line);
	a = sym_cxx_frob_addr(&line);
	printf("fn wp::Widget::frob(int) %p %d\n", a, line);
	a = sym_cxx_inline_ra(&l1, &l2);
	printf("ra wp::helper(int) %p %d %d\n", a, l1, l2);
	/* div: a libc function sanitizers do not intercept; from dlsym, as &div is a PLT
	 * stub in a position-dependent executable */
	printf("fn div %p 0\n", dlsym(RTLD_DEFAULT, "div"));
	printf("fn target_shared_fn %p 1000\n", target_shared_addr());
	printf("fn sym_lib_shared_fn %p 1000\n", sym_lib_shared_addr());
	printf("bias main %lx\n", (unsigned long)main_bias);
	printf("bias lib %lx\n", (unsigned long)lib_bias);
	printf("ready\n");
	fflush(stdout);

	char buf[64];
	while (read(0, buf, sizeof(buf)) > 0)
		;
	return sink == 12345;
}

/* Attributed to a file name the library uses too (an interned string: same pointer). */
#line 1000 "sym_shared.h"
static __attribute__((noinline)) int target_shared_fn(int x) { return x * 7 + sink; }
static const void *target_shared_addr(void) { return (const void *)(uintptr_t)target_shared_fn; }
