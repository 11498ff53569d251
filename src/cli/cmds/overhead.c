/* SPDX-License-Identifier: MIT */
/* --overhead-test: how much slower a workload runs under the agent at 100, 1000 and 10000 Hz
 * than without it. Runs alternate (each round visits every setting, starting one further
 * along each time, so that a machine getting busier or quieter does not favour one setting)
 * and the report gives medians. The workload is COMMAND when given after --, else a built-in
 * single-threaded CPU-bound one (`wallprof --internal-workload`, a hidden subcommand). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "textfmt.h"

#define ROUNDS 5
#define NRATES 4
#define GOOD_PCT 2.0  /* recommend the highest rate costing at most this */
#define HIGH_PCT 5.0  /* warn about rates costing more */

static const int rates[NRATES] = { 0, 100, 1000, 10000 };

static const char rule[] =
	"================================================================================";
static const char dashes[] = "-----------";

struct run {
	double wall, cpu;  /* seconds */
	double delivered;  /* samples per thread-second (wall) or per CPU-second (cpu); <0: none */
	double window_p50; /* µs */
};

/* ---------------------------------------------------------------------------------------- */
/* The built-in workload: deterministic CPU work through a few levels of calls, so that the
 * unwinder has real frames to walk. A fixed amount of work, not a fixed time: a slower run
 * must take longer. */

static __attribute__((noinline)) uint64_t mix(uint64_t x, int n)
{
	for (int i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		x += (uint64_t)i * 0x9e3779b97f4a7c15ull;
	}
	return x;
}

static __attribute__((noinline)) uint64_t descend(uint64_t x, int depth, int n)
{
	if (depth == 0)
		return mix(x, n);
	uint64_t y = descend(x + (uint64_t)depth, depth - 1, n);
	__asm__ volatile("" ::: "memory"); /* no tail call: keep the frame */
	return y ^ (x >> 3);
}

int wp_internal_workload(int argc, char **argv)
{
	long units = argc > 1 ? atol(argv[1]) : 0;
	if (units <= 0)
		units = 100;
	uint64_t x = 88172645463325252ull;
	for (long u = 0; u < units; u++)
		for (int k = 0; k < 1000; k++)
			x = descend(x, 8 + (k & 15), 4000);
	printf("%llu\n", (unsigned long long)x);
	return 0;
}

/* ---------------------------------------------------------------------------------------- */

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void setenv_int(const char *k, long v)
{
	char b[32];
	snprintf(b, sizeof(b), "%ld", v);
	setenv(k, b, 1);
}

/* Runs argv once, at `hz` (0: without the agent). Returns 0, or -1 with `why` filled. */
static int run_once(const struct wp_opts *o, char *const argv[], const char *agent, int hz,
		    const char *prof, struct run *res, char *why, size_t cap)
{
	double t0 = now_s();
	pid_t pid = fork();
	if (pid < 0) {
		snprintf(why, cap, "fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
			dup2(null, 2);
			if (null > 2)
				close(null);
		}
		for (char **e = environ; e && *e;) {
			/* the user's own WALLPROF_* settings would change what is measured */
			if (!strncmp(*e, "WALLPROF_", 9) && strncmp(*e, "WALLPROF_AGENT=", 15)) {
				char name[256];
				size_t n = strcspn(*e, "=");
				snprintf(name, sizeof(name), "%.*s", (int)n, *e);
				unsetenv(name);
				continue;
			}
			e++;
		}
		if (hz) {
			const char *old = getenv("LD_PRELOAD");
			char pre[PATH_MAX * 2];
			snprintf(pre, sizeof(pre), "%s%s%s", agent, old && *old ? " " : "",
				 old ? old : "");
			setenv("LD_PRELOAD", pre, 1);
			setenv_int("WALLPROF_HZ", hz);
			if (o->mode)
				setenv("WALLPROF_MODE", o->mode, 1);
			if (o->threads >= 0)
				setenv_int("WALLPROF_THREADS", o->threads);
			setenv("WALLPROF_OUT", prof, 1);
			setenv("WALLPROF_QUIET", "1", 1);
		}
		execvp(argv[0], argv);
		_exit(127);
	}
	int status;
	struct rusage ru;
	while (wait4(pid, &status, 0, &ru) < 0)
		if (errno != EINTR) {
			snprintf(why, cap, "waitpid: %s", strerror(errno));
			return -1;
		}
	res->wall = now_s() - t0;
	res->cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
		   (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	res->delivered = -1;
	res->window_p50 = -1;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
		snprintf(why, cap, "cannot run %s (exit status 127)", argv[0]);
		return -1;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		if (WIFSIGNALED(status))
			snprintf(why, cap, "%s was killed by signal %d", argv[0], WTERMSIG(status));
		else
			snprintf(why, cap, "%s exited with status %d", argv[0], WEXITSTATUS(status));
		return -1;
	}
	if (hz) {
		struct wp_profile *p;
		char err[256];
		if (wp_profile_read(prof, &p, err, sizeof(err)) == 0) {
			struct wp_summary sum; /* the rate the text report shows */
			wp_summarize(p, NULL, &sum);
			double rate = sum.cpu_mode ? sum.samples_per_cpu_s : sum.samples_per_thread_s;
			if (rate > 0)
				res->delivered = rate;
			if (p->info.window_n > 0)
				res->window_p50 = (double)p->info.window_p50_ns / 1e3;
			wp_profile_free(p);
		}
		unlink(prof);
	}
	return 0;
}

static const char *label(int hz)
{
	static char b[32];
	if (!hz)
		return "no agent";
	snprintf(b, sizeof(b), "%d Hz", hz);
	return b;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	double tmp[ROUNDS];
	int m = 0;
	for (int i = 0; i < n; i++)
		if (v[i] >= 0)
			tmp[m++] = v[i];
	if (!m)
		return -1;
	qsort(tmp, (size_t)m, sizeof(*tmp), cmp_double);
	return m % 2 ? tmp[m / 2] : (tmp[m / 2 - 1] + tmp[m / 2]) / 2;
}

int wp_overhead_test(const struct wp_opts *o, FILE *out)
{
	const char *agent = wp_find_agent();
	if (!agent)
		return 1;
	char self[PATH_MAX];
	char *builtin[] = { self, "--internal-workload", NULL };
	char *const *argv = o->cmd ? o->cmd : builtin;
	if (!o->cmd) {
		ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		if (n <= 0) {
			fprintf(stderr, "wallprof: cannot find the wallprof executable for the built-in "
					"workload (/proc/self/exe: %s); give one: --overhead-test -- "
					"COMMAND\n", strerror(errno));
			return 1;
		}
		self[n] = 0;
	}
	const char *tmp = getenv("TMPDIR");
	char dir[PATH_MAX], prof[PATH_MAX + 32], why[PATH_MAX + 64];
	snprintf(dir, sizeof(dir), "%s/wallprof-overhead.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		fprintf(stderr, "wallprof: cannot make a temporary directory %s: %s\n", dir,
			strerror(errno));
		return 1;
	}
	snprintf(prof, sizeof(prof), "%s/run.prof", dir);

	struct run runs[NRATES][ROUNDS];
	int rc = 0, tty = !o->quiet && isatty(2);
	for (int round = 0; round < ROUNDS && !rc; round++) {
		for (int k = 0; k < NRATES; k++) {
			int i = (round + k) % NRATES;
			if (tty)
				fprintf(stderr, "\r\033[K[wallprof] overhead test: round %d of %d, %s",
					round + 1, ROUNDS, label(rates[i]));
			if (run_once(o, argv, agent, rates[i], prof, &runs[i][round], why,
				     sizeof(why)) != 0) {
				if (tty)
					fprintf(stderr, "\r\033[K");
				fprintf(stderr, "wallprof: overhead test stopped: %s (%s)\n", why,
					rates[i] ? "under the agent" : "without the agent");
				rc = 1;
				break;
			}
		}
	}
	if (tty)
		fprintf(stderr, "\r\033[K");
	unlink(prof);
	/* the agent's list of the workload's processes that took no sample (run.unsampled) */
	snprintf(prof, sizeof(prof), "%s/run.unsampled", dir);
	unlink(prof);
	rmdir(dir);
	if (rc)
		return rc;

	double wall[NRATES], cpu[NRATES], deliv[NRATES], win[NRATES], lo[NRATES], hi[NRATES];
	for (int i = 0; i < NRATES; i++) {
		double w[ROUNDS], c[ROUNDS], d[ROUNDS], p[ROUNDS];
		lo[i] = INFINITY;
		hi[i] = 0;
		for (int r = 0; r < ROUNDS; r++) {
			w[r] = runs[i][r].wall;
			c[r] = runs[i][r].cpu;
			d[r] = runs[i][r].delivered;
			p[r] = runs[i][r].window_p50;
			lo[i] = fmin(lo[i], w[r]);
			hi[i] = fmax(hi[i], w[r]);
		}
		wall[i] = median(w, ROUNDS);
		cpu[i] = median(c, ROUNDS);
		deliv[i] = median(d, ROUNDS);
		win[i] = median(p, ROUNDS);
	}

	fprintf(out, "%s\n%*sPROFILER OVERHEAD ANALYSIS\n%s\n", rule, 27, "", rule);
	if (o->cmd) {
		/* the command as a shell would take it back, cut to fit the line */
		char line[256];
		size_t n = 0;
		for (char *const *a = o->cmd; *a && n < sizeof(line); a++) {
			int quote = !**a || strpbrk(*a, " \t\n\"'\\$`;&|<>()*?[]#~{}") != NULL;
			n += (size_t)snprintf(line + n, sizeof(line) - n, quote ? " '%s'" : " %s", *a);
		}
		if (n >= 90)
			memcpy(line + 86, "...", 4);
		fprintf(out, "[CONFIG] workload:%s\n", line);
	} else {
		fprintf(out, "[CONFIG] workload: built-in, single-threaded, CPU-bound (--overhead-test "
			     "-- COMMAND times yours)\n");
	}
	fprintf(out, "[CONFIG] mode %s%s\n", o->mode ? o->mode : "wall",
		o->mode ? "" : " (the default; --mode=cpu to test cpu mode)");
	fprintf(out, "[CONFIG] %d rounds of every setting in rotating order; medians of wall-clock "
		     "time\n", ROUNDS);
	fprintf(out, "[TEST] Running workload without profiling: %.3f s\n", wall[0]);
	double over[NRATES] = { 0 };
	for (int i = 1; i < NRATES; i++) {
		over[i] = wall[0] > 0 ? 100.0 * (wall[i] - wall[0]) / wall[0] : 0;
		fprintf(out, "[TEST] Running workload with profiling at %d Hz: %.3f s (%+.2f%%)\n",
			rates[i], wall[i], over[i]);
	}
	/* the details: fastest run, CPU time (the sampler's included), what the agent achieved */
	fprintf(out, "\n  %-9s  %9s  %9s  %8s  %9s  %8s  %11s  %11s\n", "setting", "median", "fastest",
		"wall +%", "CPU time", "CPU +%", "samples/s", "held/sample");
	fprintf(out, "  %.9s  %.9s  %.9s  %.8s  %.9s  %.8s  %.11s  %.11s\n", dashes, dashes, dashes,
		dashes, dashes, dashes, dashes, dashes);
	for (int i = 0; i < NRATES; i++) {
		char name[16], d[32] = "-", w[32] = "-", ow[16] = "-", oc[16] = "-";
		if (rates[i])
			snprintf(name, sizeof(name), "%d Hz", rates[i]);
		else
			snprintf(name, sizeof(name), "no agent");
		if (i) {
			snprintf(ow, sizeof(ow), "%+.2f%%", over[i]);
			snprintf(oc, sizeof(oc), "%+.1f%%",
				 cpu[0] > 0 ? 100.0 * (cpu[i] - cpu[0]) / cpu[0] : 0.0);
		}
		if (deliv[i] >= 0)
			snprintf(d, sizeof(d), "%s", wp_num((uint64_t)llround(deliv[i])));
		if (win[i] >= 0)
			snprintf(w, sizeof(w), "%.0f µs", win[i]);
		fprintf(out, "  %-9s  %7.3f s  %7.3f s  %8s  %7.3f s  %8s  %11s  %*s\n", name, wall[i],
			lo[i], ow, cpu[i], oc, d, 11 + (win[i] >= 0 ? 1 : 0), w);
	}
	fputc('\n', out);
	double noise = wall[0] > 0 ? 100.0 * (hi[0] - lo[0]) / wall[0] : 0;
	int best = 0;
	for (int i = 1; i < NRATES; i++)
		if (over[i] <= GOOD_PCT)
			best = i;
	if (best && over[best] < 0)
		fprintf(out, "[RECOMMENDATION] Use %d Hz for production profiling (no measurable cost "
			     "here)\n", rates[best]);
	else if (best)
		fprintf(out, "[RECOMMENDATION] Use %d Hz for production profiling (%+.2f%% here)\n",
			rates[best], over[best]);
	else
		fprintf(out, "[RECOMMENDATION] Every rate tested cost more than %.0f%% here: profile "
			     "in production at\n                 100 Hz or less, or only briefly\n",
			GOOD_PCT);
	for (int i = 1; i < NRATES; i++)
		if (over[i] > HIGH_PCT) {
			fprintf(out, "[WARNING] %d Hz slows this workload by %.1f%%: use it for short "
				     "runs, not in production\n", rates[i], over[i]);
		}
	if (noise > GOOD_PCT)
		fprintf(out, "[WARNING] runs without profiling took %.3f to %.3f s (%.0f%% apart): "
			     "differences smaller than\n          that are run-to-run noise (retry on a "
			     "quieter machine, or with a longer workload)\n", lo[0], hi[0], noise);
	return ferror(out) ? 1 : 0;
}
