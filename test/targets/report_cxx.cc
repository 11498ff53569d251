// SPDX-License-Identifier: MIT
// report_cxx: C++ with long demangled names holding commas and spaces, for the reports' name
// handling (test/e2e/test_report_cli.py): CSV quoting, and text rows kept within 100 columns.
//
// Usage: report_cxx [SECONDS] (default 0.5): the template member below burns that much CPU.
#include <cstdint>
#include <cstdlib>
#include <ctime>

namespace very_long_namespace_name_for_testing {
namespace inner_detail {

static volatile double sink;

static std::uint64_t cpu_ns()
{
	timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (std::uint64_t)ts.tv_sec * 1000000000ull + (std::uint64_t)ts.tv_nsec;
}

template <typename A, typename B> struct Worker {
	__attribute__((noipa)) static void crunch_the_numbers_for_a_while(A a, B b, std::uint64_t ns)
	{
		std::uint64_t end = cpu_ns() + ns;
		double x = sink + (double)a + (double)b;
		do { for (int i = 0; i < 200000; i++) x = x * 1.0000001 + 0.5; } while (cpu_ns() < end);
		sink = x;
	}
};

} // namespace inner_detail
} // namespace very_long_namespace_name_for_testing

int main(int argc, char **argv)
{
	double secs = argc > 1 ? std::atof(argv[1]) : 0.5;
	very_long_namespace_name_for_testing::inner_detail::Worker<int, double>::
		crunch_the_numbers_for_a_while(1, 2.0, (std::uint64_t)(secs * 1e9));
	return 0;
}
