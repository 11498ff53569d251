/* SPDX-License-Identifier: MIT */
/* A profile of this very test program, for the tests of the model (test_resolve.c) and of the
 * pprof encoder (test_pprof_encode.c): real addresses of the fixture functions below, in a
 * module map read from /proc/self/maps, so the real symbolizer names them; a fake
 * libwallprof.so (the agent's own frames, which the model must leave out); and an address
 * outside every module.
 *
 *   stack 1  main    5  t_leaf <- t_mid <- t_root
 *   stack 2  worker  3  (agent) <- t_mid <- t_root          waiting
 *   stack 3  worker  2  (agent)                              only the agent's frames
 *   stack 4  main    4  t_mid+1 (leaf) <- t_mid+1 (return) <- t_root: one pc in both roles
 *   stack 5  main    1  t_leaf <- t_leaf (recursion) <- t_root         truncated
 *   stack 6  main    0  (unknown address)
 *   threads: main (10), worker (11, exited), idle (12, never sampled) */
#ifndef WP_TEST_MODEL_FIXTURE_H
#define WP_TEST_MODEL_FIXTURE_H

#include <inttypes.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/profile.h"
#include "profile_build.h"

/* Distinct bodies, no inlining, no cloning, no identical-code folding: each has its own
 * address and name. */
static volatile int fx_sink;
__attribute__((noipa, used)) static void t_leaf(void)
{
	fx_sink += 1;
}
__attribute__((noipa, used)) static void t_mid(void)
{
	t_leaf();
	fx_sink += 2;
}
__attribute__((noipa, used)) static void t_root(void)
{
	t_mid();
	fx_sink += 3;
}
__attribute__((noipa, used)) static void t_other(void)
{
	fx_sink += 4;
}

#define FX_AGENT_START 0x10000ull /* the fake libwallprof.so: no file, low addresses */
#define FX_AGENT_PC (FX_AGENT_START + 0x123)
#define FX_UNKNOWN_PC 0x5000ull  /* outside every module */

static inline uint64_t fx_addr(void (*fn)(void))
{
	return (uint64_t)(uintptr_t)fn;
}

/* A return address that lands in `fn` (the symbolizer looks it up at pc-1). */
static inline uint64_t fx_ret(void (*fn)(void))
{
	return fx_addr(fn) + 1;
}

static char fx_exe[PATH_MAX];

/* MODULE records for this program's executable mappings (ids from 2). */
static inline int fx_self_modules(struct buf *b)
{
	ssize_t n = readlink("/proc/self/exe", fx_exe, sizeof(fx_exe) - 1);
	if (n <= 0)
		return -1;
	fx_exe[n] = 0;
	FILE *f = fopen("/proc/self/maps", "r");
	if (!f)
		return -1;
	char line[PATH_MAX + 128];
	uint32_t id = 2;
	while (fgets(line, sizeof(line), f)) {
		uint64_t lo, hi, off;
		char perms[8], path[PATH_MAX];
		path[0] = 0;
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %4095s", &lo, &hi,
			   perms, &off, path) < 4)
			continue;
		if (perms[2] != 'x' || strcmp(path, fx_exe))
			continue;
		rec_module(b, id++, WP_MODULE_MAIN, lo, hi, off, NULL, 0, fx_exe);
	}
	fclose(f);
	return id > 2 ? 0 : -1;
}

/* The profile above, with `extra` appended to META (may be ""). */
static inline struct wp_profile *fx_profile(const char *extra)
{
	struct buf b;
	char meta[512];
	header(&b, WP_FORMAT_VERSION);
	snprintf(meta, sizeof(meta), "mode=wall\nhz=100\nduration_ns=1000000000\nsamples=15\n"
		 "start_unix_ns=1700000000000000000\ncommand=fixture\n%s", extra);
	rec_meta(&b, meta);
	rec_module(&b, 1, 0, FX_AGENT_START, FX_AGENT_START + 0x1000, 0, NULL, 0,
		   "/nonexistent/libwallprof.so");
	if (fx_self_modules(&b) != 0) {
		fprintf(stderr, "cannot read this program's mappings\n");
		exit(2);
	}
	rec_thread(&b, 10, 0, 10, 6, 4, 0, 900000000, "main");
	rec_thread(&b, 11, WP_THREAD_EXITED, 5, 0, 5, 100000000, 600000000, "worker");
	rec_thread(&b, 12, 0, 0, 0, 0, 200000000, 200000000, "idle");
	const uint64_t s1[] = { fx_addr(t_leaf), fx_ret(t_mid), fx_ret(t_root) };
	const uint64_t s2[] = { FX_AGENT_PC, fx_ret(t_mid), fx_ret(t_root) };
	const uint64_t s3[] = { FX_AGENT_PC };
	const uint64_t s4[] = { fx_ret(t_mid), fx_ret(t_mid), fx_ret(t_root) };
	const uint64_t s5[] = { fx_addr(t_leaf), fx_ret(t_leaf), fx_ret(t_root) };
	const uint64_t s6[] = { FX_UNKNOWN_PC };
	rec_stack(&b, 1, 10, 0, 5, 50000000, s1, 3);
	rec_stack(&b, 2, 11, WP_STACK_WAITING, 3, 30000000, s2, 3);
	rec_stack(&b, 3, 11, 0, 2, 20000000, s3, 1);
	rec_stack(&b, 4, 10, 0, 4, 40000000, s4, 3);
	rec_stack(&b, 5, 10, WP_STACK_TRUNCATED, 1, 10000000, s5, 3);
	rec_stack(&b, 6, 10, 0, 0, 0, s6, 1);
	rec_end_marker(&b);
	struct wp_profile *p = NULL;
	char err[256];
	if (wp_profile_parse(b.d, b.len, &p, err, sizeof(err)) != 0) {
		fprintf(stderr, "fixture profile: %s\n", err);
		exit(2);
	}
	buf_free(&b);
	return p;
}

#endif
