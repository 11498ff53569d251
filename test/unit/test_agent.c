/* SPDX-License-Identifier: MIT */
/* White-box tests of the agent's pieces that have logic of their own: settings parsing, the
 * output path, the async-signal-safe formatter, the suspension-window histogram, the
 * signal-name parser. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/config.h"
#include "agent/cpuwait.h"
#include "common/format.h"
#include "agent/log.h"
#include "agent/signals.h"
#include "agent/stats.h"

#include "check.h"

/* A fake environment for wp_config_load. */
static const char *env_keys[16], *env_vals[16];
static int env_n;

static char *fake_getenv(const char *k)
{
	for (int i = 0; i < env_n; i++)
		if (!strcmp(env_keys[i], k))
			return (char *)env_vals[i];
	return NULL;
}

static int load(struct wp_config *c, const char *k, const char *v)
{
	env_n = 0;
	if (k) {
		env_keys[0] = k;
		env_vals[0] = v;
		env_n = 1;
	}
	return wp_config_load(c, fake_getenv);
}

static void test_config(void)
{
	struct wp_config c;
	CHECK(load(&c, NULL, NULL) == 0 && c.mode == WP_MODE_WALL && c.hz == WP_DEFAULT_HZ &&
		      c.threads == WP_DEFAULT_THREADS && !strcmp(c.out, WP_DEFAULT_OUT) &&
		      c.checkpoint_s == WP_DEFAULT_CHECKPOINT_S && c.autostart == -1,
	      "defaults");
	CHECK(load(&c, "WALLPROF_MODE", "cpu") == 0 && c.mode == WP_MODE_CPU, "mode cpu");
	CHECK(load(&c, "WALLPROF_HZ", "10000") == 0 && c.hz == 10000, "hz 10000");
	CHECK(load(&c, "WALLPROF_HZ", "1") == 0 && c.hz == 1, "hz 1");
	CHECK(load(&c, "WALLPROF_THREADS", "0") == 0 && c.threads == 0, "threads 0 = all");
	static const char *const bad[][2] = {
		{ "WALLPROF_MODE", "Wall" },   { "WALLPROF_MODE", "" },      { "WALLPROF_HZ", "0" },
		{ "WALLPROF_HZ", "10001" },    { "WALLPROF_HZ", "+5" },      { "WALLPROF_HZ", "5x" },
		{ "WALLPROF_HZ", " 5" },       { "WALLPROF_HZ", "-5" },      { "WALLPROF_THREADS", "-1" },
		{ "WALLPROF_THREADS", "1e3" }, { "WALLPROF_OUT", "" },       { "WALLPROF_QUIET", "yes" },
		{ "WALLPROF_CHECKPOINT", "-1" }, { "WALLPROF_AUTOSTART", "2" },
		{ "WALLPROF_SIGNAL", "KILL" }, { "WALLPROF_SIGNAL", "RTMIN+99" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(load(&c, bad[i][0], bad[i][1]) == -1, "%s='%s' is refused", bad[i][0], bad[i][1]);
}

static void test_out_path(void)
{
	struct wp_config c;
	char buf[256];
	load(&c, "WALLPROF_OUT", "/tmp/x.%p.prof");
	CHECK(wp_config_out_path(&c, 42, buf, sizeof(buf)) == 0 && !strcmp(buf, "/tmp/x.42.prof"),
	      "%%p: %s", buf);
	load(&c, "WALLPROF_OUT", "a%%b%p");
	CHECK(wp_config_out_path(&c, 7, buf, sizeof(buf)) == 0 && !strcmp(buf, "a%b7"), "%%%%: %s", buf);
	load(&c, "WALLPROF_OUT", "/tmp/run.prof");
	c.root_pid = 10;
	CHECK(wp_config_out_path(&c, 10, buf, sizeof(buf)) == 0 && !strcmp(buf, "/tmp/run.prof"),
	      "the root process keeps the name: %s", buf);
	CHECK(wp_config_out_path(&c, 11, buf, sizeof(buf)) == 0 && !strcmp(buf, "/tmp/run.11.prof"),
	      "another process gets .PID before the extension: %s", buf);
	load(&c, "WALLPROF_OUT", "/tmp/dir.d/noext");
	c.root_pid = 10;
	CHECK(wp_config_out_path(&c, 12, buf, sizeof(buf)) == 0 && !strcmp(buf, "/tmp/dir.d/noext.12"),
	      "a dot in a directory name is not an extension: %s", buf);
	CHECK(wp_config_out_path(&c, 12, buf, 8) == -ENAMETOOLONG, "too long is refused");

	/* the run's list of unsampled processes: the main file's stem, or the template before %p */
	static const char *const lists[][2] = {
		{ "/tmp/run.prof", "/tmp/run.unsampled" },
		{ "/d/wallprof.123.prof", "/d/wallprof.123.unsampled" },
		{ "/tmp/x.%p.prof", "/tmp/x.unsampled" },
		{ "/tmp/x-%p.prof", "/tmp/x.unsampled" },
		{ "/tmp/%p.prof", "/tmp/wallprof.unsampled" },
		{ "%p", "wallprof.unsampled" },
		{ "/tmp/dir.d/noext", "/tmp/dir.d/noext.unsampled" },
		{ "a%%b.prof", "a%b.unsampled" },
	};
	for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
		load(&c, "WALLPROF_OUT", lists[i][0]);
		CHECK(wp_config_unsampled_path(&c, buf, sizeof(buf)) == 0 && !strcmp(buf, lists[i][1]),
		      "%s: list %s", lists[i][0], buf);
	}
	load(&c, "WALLPROF_OUT", "/tmp/run.prof");
	CHECK(wp_config_unsampled_path(&c, buf, 12) == -ENAMETOOLONG, "a list path too long");
}

static void test_format(void)
{
	char b[128];
	wp_format(b, sizeof(b), "%s=%d %u %5u|%x %lld %llu %%", "k", -12, 7u, 42u, 255u, -5LL, 18446744073709551615ULL);
	CHECK(!strcmp(b, "k=-12 7    42|ff -5 18446744073709551615 %"), "format: '%s'", b);
	wp_format(b, 6, "%s", "truncate me");
	CHECK(!strcmp(b, "trunc"), "truncation keeps the NUL: '%s'", b);
	const char *volatile nothing = NULL; /* volatile: the compiler must not see it is NULL */
	wp_format(b, sizeof(b), "%s", nothing);
	CHECK(!strcmp(b, "(null)"), "NULL string");
}

static void test_window_stats(void)
{
	memset(&wp_stats, 0, sizeof(wp_stats));
	CHECK(wp_stats_window_quantile(0.5) == 0, "empty histogram");
	/* 1..1000 us: p50 ~ 500 us, p99 ~ 990 us, within the histogram's ~3% resolution */
	for (int i = 1; i <= 1000; i++)
		wp_stats_window((uint64_t)i * 1000);
	double p50 = (double)wp_stats_window_quantile(0.5), p99 = (double)wp_stats_window_quantile(0.99);
	CHECK(p50 > 500e3 * 0.96 && p50 < 500e3 * 1.04, "p50 %.0f ns", p50);
	CHECK(p99 > 990e3 * 0.96 && p99 < 990e3 * 1.04, "p99 %.0f ns", p99);
	CHECK(wp_stats_window_quantile(1.0) <= wp_stats.window_max_ns, "quantiles never pass the max");
	CHECK(wp_stats.window_max_ns == 1000000 && wp_stats.window_n == 1000, "max and count");
	wp_stats_window(5);           /* below the first bucket */
	wp_stats_window(1ull << 40);  /* above the last */
	CHECK(wp_stats.window_max_ns == (1ull << 40), "extremes are kept");
}

static void test_signal_names(void)
{
	CHECK(wp_signals_parse_env("PROF") == SIGPROF && wp_signals_parse_env("SIGPROF") == SIGPROF,
	      "PROF");
	CHECK(wp_signals_parse_env("RTMIN+3") == SIGRTMIN + 3, "RTMIN+3");
	CHECK(wp_signals_parse_env("RTMAX-1") == SIGRTMAX - 1, "RTMAX-1");
	CHECK(wp_signals_parse_env("RTMAX") == SIGRTMAX, "RTMAX");
	char num[16];
	snprintf(num, sizeof(num), "%d", SIGRTMIN + 5);
	CHECK(wp_signals_parse_env(num) == SIGRTMIN + 5, "a number");
	CHECK(wp_signals_parse_env("9") == -1 && wp_signals_parse_env("RTMIN+x") == -1 &&
		      wp_signals_parse_env("RTMAX+1") == -1,
	      "SIGKILL, junk and out-of-range are refused");
	CHECK(wp_signals_parse_env("") == 0, "empty = choose");
}

/* The share of runnable samples that waited for a CPU (cpuwait.c), without /proc: runqueue
 * time owed to the thread is given to its samples, each up to its weight less what the
 * thread ran since its previous sample; an unmoved sample waited all of it, ahead of
 * schedstat. */
static uint64_t cpu_weight(uint32_t stack_id)
{
	for (struct wp_cpuwait_entry *e = wp_cpuwait_all(); e; e = e->hh.next)
		if (e->key.stack_id == stack_id && e->key.nr == WP_WAIT_NR_CPU)
			return e->weight_ns;
	return 0;
}

static void test_cpuwait(void)
{
	struct wp_athread t;
	memset(&t, 0, sizeof(t));
	t.tid = -1;
	uint64_t unran;
	wp_cpuwait_reset(0);
	/* 6 ms owed; a 10 ms sample in which it ran 7 ms can have waited 3 */
	t.cw_owed_ns = 6000000;
	t.cw_ran_ns = 7000000;
	wp_cpuwait_runnable(&t, 1, 1, 10000000, 0, 0, 1, &unran);
	CHECK_EQ_U(cpu_weight(1), 3000000);
	CHECK_EQ_U((uint64_t)t.cw_owed_ns, 3000000);
	CHECK_EQ_U(unran, 0); /* 7 ran, 3 waited: all of it */
	/* the next one ran 2 ms: the 3 ms left */
	t.cw_ran_ns = 2000000;
	wp_cpuwait_runnable(&t, 1, 1, 10000000, 0, 0, 2, &unran);
	CHECK_EQ_U(cpu_weight(1), 6000000);
	CHECK_EQ_U((uint64_t)t.cw_owed_ns, 0);
	CHECK_EQ_U(unran, 5000000); /* 2 ran, 3 waited: 5 blocked, or queued as read later */
	/* unmoved: all 10 ms, ahead of schedstat (owed goes negative) */
	wp_cpuwait_runnable(&t, 2, 1, 10000000, 1, 0, 3, &unran);
	CHECK_EQ_U(cpu_weight(2), 10000000);
	CHECK(t.cw_owed_ns == -10000000, "given ahead: %lld", (long long)t.cw_owed_ns);
	/* nothing owed: nothing given; ran the whole interval: nothing either */
	t.cw_ran_ns = 0;
	wp_cpuwait_runnable(&t, 3, 1, 10000000, 0, 0, 4, &unran);
	CHECK_EQ_U(cpu_weight(3), 0);
	t.cw_owed_ns = 5000000;
	t.cw_ran_ns = 10000000;
	wp_cpuwait_runnable(&t, 3, 1, 10000000, 0, 0, 5, &unran);
	CHECK_EQ_U(cpu_weight(3), 0);
	/* a share of a sample: 3 ms of 10 is 0.3 of a unit (1024ths) */
	for (struct wp_cpuwait_entry *e = wp_cpuwait_all(); e; e = e->hh.next)
		if (e->key.stack_id == 1)
			CHECK_EQ_U(e->units_fx, 2 * 1024 * 3 / 10);
	/* disk: counted, and again for an unmoved sample */
	wp_cpuwait_disk(&t, 4, -1, 0, NULL, 0, 1, 5000000);
	wp_cpuwait_again(&t, 1, 5000000);
	CHECK(t.cw_last_disk && t.cw_last_disk->weight_ns == 10000000 &&
	      t.cw_last_disk->key.a0 == ~0ull, "disk counted twice, no call");
	wp_cpuwait_not_disk(&t);
	wp_cpuwait_again(&t, 1, 5000000);
	CHECK_EQ_U(wp_cpuwait_count(), 3); /* stacks 1, 2 (cpu), 4 (disk): 3 never waited */
	wp_cpuwait_reset(0);
	CHECK_EQ_U(wp_cpuwait_count(), 0);
}

int main(void)
{
	/* complaints go to stderr, the results to stdout */
	test_cpuwait();
	test_config();
	test_out_path();
	test_format();
	test_window_stats();
	test_signal_names();
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
