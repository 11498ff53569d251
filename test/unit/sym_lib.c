/* SPDX-License-Identifier: MIT */
/* Shared library of the symbolizer test (see test_symbolize.c): a static function, only in
 * .symtab (not exported), and an exported one. */
#include <stdint.h>

const void *sym_lib_static_addr(int *line);
const void *sym_lib_fn_addr(int *line);
int sym_lib_fn(int x);

static volatile int lib_sink;

enum { LIB_STATIC_LINE = __LINE__ + 1 };
static __attribute__((noinline)) int lib_static_fn(int x) { lib_sink += x; return lib_sink * 3; }

enum { LIB_FN_LINE = __LINE__ + 1 };
int sym_lib_fn(int x) { return lib_static_fn(x + 1) + 7; }

const void *sym_lib_static_addr(int *line)
{
	*line = LIB_STATIC_LINE;
	return (const void *)(uintptr_t)lib_static_fn;
}

const void *sym_lib_fn_addr(int *line)
{
	*line = LIB_FN_LINE;
	return (const void *)(uintptr_t)sym_lib_fn;
}

/* Attributed to a file name the target uses too (an interned string: same pointer). */
const void *sym_lib_shared_addr(void);
int sym_lib_shared_fn(int x);
#line 1000 "sym_shared.h"
__attribute__((noinline)) int sym_lib_shared_fn(int x) { return x * 5 + lib_sink; }
const void *sym_lib_shared_addr(void) { return (const void *)(uintptr_t)sym_lib_shared_fn; }
