/* SPDX-License-Identifier: MIT */
/* report_flat: a single-threaded CPU-bound program whose profile is known in advance, for the
 * text report's flat profile and call graph (test/e2e/test_report_flat.py).
 *
 *   main -> phase_a -> dispatch -> hot_loop    SCALE x 0.90 s of CPU
 *                              \-> mid_loop    SCALE x 0.40 s
 *   main -> cold_loop                          SCALE x 0.20 s
 *
 * Each loop burns this thread's CPU time in a loop written on one line, so every sample of
 * it lands on that line. hot_loop and mid_loop take turns in 10 ms slices.
 *
 * Usage: report_flat [SCALE] (default 1). WP_TRUTH=FILE receives
 *   file report_flat.c    line.FUNC N    cpu_ns.FUNC N    (FUNC: hot_loop mid_loop cold_loop) */
#include "common.h"

static volatile double sink;

/* The burn loop, on one line: it runs 200,000 dependent multiply-adds between clock reads. */
#define BURN(ns) do { uint64_t end_ = thread_cpu_ns() + (ns); double x_ = sink; do { for (int i_ = 0; i_ < 200000; i_++) x_ = x_ * 1.0000001 + 0.5; } while (thread_cpu_ns() < end_); sink = x_; } while (0)

static uint64_t spent[3];

enum { HOT_LINE = __LINE__ + 4 };
KEEP static void hot_loop(uint64_t ns)
{
	uint64_t t0 = thread_cpu_ns();
	BURN(ns);
	spent[0] += thread_cpu_ns() - t0;
}

enum { MID_LINE = __LINE__ + 4 };
KEEP static void mid_loop(uint64_t ns)
{
	uint64_t t0 = thread_cpu_ns();
	BURN(ns);
	spent[1] += thread_cpu_ns() - t0;
}

enum { COLD_LINE = __LINE__ + 4 };
KEEP static void cold_loop(uint64_t ns)
{
	uint64_t t0 = thread_cpu_ns();
	BURN(ns);
	spent[2] += thread_cpu_ns() - t0;
}

KEEP static void dispatch(uint64_t hot_ns, uint64_t mid_ns)
{
	const uint64_t slice = 10000000;
	while (hot_ns || mid_ns) {
		uint64_t h = hot_ns < slice ? hot_ns : slice;
		uint64_t m = mid_ns < slice * 4 / 9 ? mid_ns : slice * 4 / 9;
		if (h)
			hot_loop(h);
		if (m)
			mid_loop(m);
		hot_ns -= h;
		mid_ns -= m;
	}
	BARRIER();
}

KEEP static void phase_a(double scale)
{
	dispatch((uint64_t)(scale * 0.90e9), (uint64_t)(scale * 0.40e9));
	BARRIER();
}

int main(int argc, char **argv)
{
	double scale = run_seconds(argc, argv, 1.0);
	truth_open();
	phase_a(scale);
	cold_loop((uint64_t)(scale * 0.20e9));
	truth("file report_flat.c");
	truth("line.hot_loop %d", (int)HOT_LINE);
	truth("line.mid_loop %d", (int)MID_LINE);
	truth("line.cold_loop %d", (int)COLD_LINE);
	truth("cpu_ns.hot_loop %llu", (unsigned long long)spent[0]);
	truth("cpu_ns.mid_loop %llu", (unsigned long long)spent[1]);
	truth("cpu_ns.cold_loop %llu", (unsigned long long)spent[2]);
	truth_close();
	return 0;
}
