// SPDX-License-Identifier: MIT
// C++ part of the symbolizer test target (see test_symbolize.c): a (static) member function in a
// namespace, and a namespaced always_inline function inlined into another, for demangling.
#include <cstdint>

extern "C" const void *sym_cxx_frob_addr(int *line);
extern "C" const void *sym_cxx_inline_ra(int *inner_line, int *outer_line);

namespace wp {

struct Widget {
	static int frob(int x);
};

static volatile int cxx_sink;
static const void *cxx_ra;
static int cxx_inner_line, cxx_outer_line;

enum { FROB_LINE = __LINE__ + 1 };
__attribute__((noinline)) int Widget::frob(int x) { cxx_sink = cxx_sink + x; return 3 * x + cxx_sink; }

__attribute__((noinline)) static void cxx_record(void)
{
	cxx_ra = __builtin_return_address(0);
	__asm__ volatile("" ::: "memory");
}

__attribute__((always_inline)) inline int helper(int x)
{
	cxx_sink = cxx_sink + x;
	cxx_inner_line = __LINE__; cxx_record();
	cxx_sink = cxx_sink + 1;
	return cxx_sink;
}

__attribute__((noinline)) int caller(int x)
{
	int r;
	cxx_outer_line = __LINE__; r = helper(x);
	return r + 2;
}

} // namespace wp

extern "C" const void *sym_cxx_frob_addr(int *line)
{
	wp::Widget::frob(2);
	*line = wp::FROB_LINE;
	return reinterpret_cast<const void *>(reinterpret_cast<uintptr_t>(&wp::Widget::frob));
}

extern "C" const void *sym_cxx_inline_ra(int *inner_line, int *outer_line)
{
	wp::caller(5);
	*inner_line = wp::cxx_inner_line;
	*outer_line = wp::cxx_outer_line;
	return wp::cxx_ra;
}
