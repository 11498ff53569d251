/* SPDX-License-Identifier: MIT */
/* report_exit: works a little, then ends as asked, for exit-status passing
 * (test/e2e/test_report_exit.py).
 *
 * Usage: report_exit HOW [SECONDS]: HOW is a number (exit with that status), "segv" (a bad
 * memory access) or "kill" (SIGKILL itself). SECONDS of CPU work first (default 0.3). */
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

static volatile double sink;
static int *volatile nowhere;

KEEP static void work_before_exit(uint64_t ns)
{
	uint64_t end = thread_cpu_ns() + ns;
	double x = sink;
	do { for (int i = 0; i < 200000; i++) x = x * 1.0000001 + 0.5; } while (thread_cpu_ns() < end);
	sink = x;
}

int main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "0";
	double secs = argc > 2 ? atof(argv[2]) : 0.3;
	work_before_exit((uint64_t)(secs * 1e9));
	if (!strcmp(how, "segv")) {
		signal(SIGSEGV, SIG_DFL);
		*nowhere = 1;
		return 99; /* not reached */
	}
	if (!strcmp(how, "kill")) {
		raise(SIGKILL);
		return 99;
	}
	return atoi(how);
}
