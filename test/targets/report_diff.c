/* SPDX-License-Identifier: MIT */
/* report_diff: three functions whose CPU time is set on the command line, for --compare
 * (test/e2e/test_report_diff.py). Run it twice with different amounts: the function given
 * more became slower, the one given less faster.
 *
 * Usage: report_diff HEAVY LIGHT STEADY (tenths of a second of CPU time each; default 4 4 4).
 * The three take turns in 10 ms slices, so that every part of the run looks alike. */
#include "common.h"

static volatile double sink;

/* The CPU clock is a system call: looked at every ~1.5 ms of work, not every 0.3 ms. Its
 * share of the samples (cpu mode's signals land as calls return, so a call is over-counted)
 * then stays near 0.1%. Looked at 5x as often it was 0.6% in one run and 2.0% in the next
 * under load, and two runs of the same thing differed beyond sampling noise (test_report_diff,
 * "same against same", in a clean run of the whole suite). */
static void burn(uint64_t ns)
{
	uint64_t end = thread_cpu_ns() + ns;
	double x = sink;
	do { for (int i = 0; i < 1000000; i++) x = x * 1.0000001 + 0.5; } while (thread_cpu_ns() < end);
	sink = x;
}

KEEP static void heavy_work(uint64_t ns) { burn(ns); BARRIER(); }
KEEP static void light_work(uint64_t ns) { burn(ns); BARRIER(); }
KEEP static void steady_work(uint64_t ns) { burn(ns); BARRIER(); }

int main(int argc, char **argv)
{
	long t[3] = { 4, 4, 4 };
	for (int i = 0; i < 3 && i + 1 < argc; i++)
		t[i] = atol(argv[i + 1]);
	const uint64_t slice = 10000000; /* 10 ms */
	uint64_t left[3];
	for (int i = 0; i < 3; i++)
		left[i] = (uint64_t)(t[i] > 0 ? t[i] : 0) * 100000000ull;
	while (left[0] || left[1] || left[2]) {
		for (int i = 0; i < 3; i++) {
			uint64_t n = left[i] < slice ? left[i] : slice;
			if (!n)
				continue;
			if (i == 0)
				heavy_work(n);
			else if (i == 1)
				light_work(n);
			else
				steady_work(n);
			left[i] -= n;
		}
	}
	return 0;
}
