/* SPDX-License-Identifier: MIT */
#include "stats.h"
#include "pages.h"

struct wp_stats wp_stats;

/* Buckets: 32 sub-buckets per power of two from 2^8 ns up to 2^34 ns. */
#define SUB 32
#define MIN_EXP 8
#define MAX_EXP 34
#define NBUCKETS ((MAX_EXP - MIN_EXP) * SUB + 1)
static uint64_t hist[NBUCKETS] WP_BIG;

static int bucket(uint64_t ns)
{
	if (ns < (1ull << MIN_EXP))
		return 0;
	int e = 63 - __builtin_clzll(ns);
	if (e >= MAX_EXP)
		return NBUCKETS - 1;
	int sub = (int)((ns >> (e - 5)) & (SUB - 1)); /* the 5 bits below the top one */
	return (e - MIN_EXP) * SUB + sub;
}

static uint64_t bucket_mid(int b)
{
	if (b == 0)
		return 1ull << (MIN_EXP - 1);
	int e = b / SUB + MIN_EXP, sub = b % SUB;
	uint64_t lo = (1ull << e) + ((uint64_t)sub << (e - 5));
	return lo + (1ull << (e - 6));
}

void wp_stats_window(uint64_t ns)
{
	hist[bucket(ns)]++;
	wp_stats.window_n++;
	wp_stats.window_sum_ns += ns;
	if (ns > wp_stats.window_max_ns)
		wp_stats.window_max_ns = ns;
}

uint64_t wp_stats_window_quantile(double q)
{
	if (!wp_stats.window_n)
		return 0;
	uint64_t want = (uint64_t)(q * (double)wp_stats.window_n);
	if (want >= wp_stats.window_n)
		want = wp_stats.window_n - 1;
	uint64_t seen = 0;
	for (int b = 0; b < NBUCKETS; b++) {
		seen += hist[b];
		if (seen > want) {
			uint64_t v = bucket_mid(b);
			return v > wp_stats.window_max_ns ? wp_stats.window_max_ns : v;
		}
	}
	return wp_stats.window_max_ns;
}

const char *wp_miss_name(enum wp_miss m)
{
	static const char *const names[WP_MISS__N] = {
		"exited", "timeout", "blocked_signal", "late", "no_slot", "error", "memory", "moving",
		"rationed",
	};
	return m < WP_MISS__N ? names[m] : "?";
}

uint64_t wp_stats_missed_total(void)
{
	uint64_t n = 0;
	for (int i = 0; i < WP_MISS__N; i++)
		n += wp_stats.missed[i];
	return n;
}
