/* SPDX-License-Identifier: MIT */
/* Writes a sample flame graph for the browser test (test/browser/flame.test.mjs):
 *   flame_demo OUT.svg [--diff]
 * The numbers are fixed and known to the browser test: 1000 samples in all; "compute_"
 * matches 650 of them (compute_outer holds compute_inner, which is also called elsewhere);
 * "^sqrt$" matches 450. With --diff, the same stacks are the AFTER profile and BEFORE had
 * 100 fewer samples in sqrt under compute_outer and 100 more in parse_input/read. */
#include "cli/reports/flame.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define P WP_KIND_PROGRAM
#define L WP_KIND_LIBRARY
#define U WP_KIND_UNKNOWN
#define T WP_KIND_THREAD

static const struct wp_flame_frame f_main[] = {
	{ "[main tid=4242]", T },	      { "_start", P },	      { "__libc_start_main", L },
	{ "main", P },			      { "parse_input", P },   { "read", L },
};
static const struct wp_flame_frame f_memchr[] = {
	{ "[main tid=4242]", T }, { "_start", P },	{ "__libc_start_main", L },
	{ "main", P },		  { "parse_input", P }, { "memchr", L },
};
static const struct wp_flame_frame f_sqrt[] = {
	{ "[main tid=4242]", T }, { "_start", P },	  { "__libc_start_main", L },
	{ "main", P },		  { "compute_outer", P }, { "compute_inner", P },
	{ "sqrt", L },
};
static const struct wp_flame_frame f_inner[] = {
	{ "[main tid=4242]", T }, { "_start", P },	  { "__libc_start_main", L },
	{ "main", P },		  { "compute_outer", P }, { "compute_inner", P },
};
static const struct wp_flame_frame f_helper[] = {
	{ "[main tid=4242]", T }, { "_start", P },	  { "__libc_start_main", L },
	{ "main", P },		  { "compute_outer", P }, { "helper<Matrix<double>, &apply>", P },
};
static const struct wp_flame_frame f_write[] = {
	{ "[main tid=4242]", T },
	{ "_start", P },
	{ "__libc_start_main", L },
	{ "main", P },
	{ "write_output", P },
	{ "std::vector<Record, std::allocator<Record> >::push_back(Record const&)", P },
	{ "operator new(unsigned long)", L },
	{ "malloc", L },
};
static const struct wp_flame_frame f_fwrite[] = {
	{ "[main tid=4242]", T }, { "_start", P }, { "__libc_start_main", L }, { "main", P },
	{ "write_output", P },	  { "fwrite", L }, { "write", L },
};
static const struct wp_flame_frame f_worker[] = {
	{ "[worker tid=4243]", T }, { "start_thread", L }, { "worker_loop", P },
	{ "compute_inner", P },	    { "sqrt", L },
};
static const struct wp_flame_frame f_unknown[] = {
	{ "[worker tid=4243]", T }, { "start_thread", L }, { "worker_loop", P }, { "[unknown]", U },
};

#define S(f, after, before) { f, (int)(sizeof(f) / sizeof(f[0])), after, before }

int main(int argc, char **argv)
{
	const struct wp_flame_stack stacks[] = {
		S(f_main, 150, 250),  S(f_memchr, 50, 50), S(f_sqrt, 300, 200),
		S(f_inner, 100, 100), S(f_helper, 100, 100), S(f_write, 60, 60),
		S(f_fwrite, 40, 40),  S(f_worker, 150, 150), S(f_unknown, 50, 50),
	};
	int diff = argc > 2 && !strcmp(argv[2], "--diff");
	struct wp_flame_opts opts = {
		.title = diff ? "Differential demo: before vs after" : "wallprof demo",
		.subtitle = "1,000 samples of a made-up program, 2 threads",
		.differential = diff,
	};
	FILE *f;
	int r;

	if (argc < 2) {
		fprintf(stderr, "usage: %s OUT.svg [--diff]\n", argv[0]);
		return 2;
	}
	f = fopen(argv[1], "w");
	if (!f) {
		perror(argv[1]);
		return 1;
	}
	r = wp_flame_write(f, stacks, sizeof(stacks) / sizeof(stacks[0]), &opts);
	if (fclose(f) != 0 && !r)
		r = -1;
	if (r) {
		fprintf(stderr, "wp_flame_write: %s\n", strerror(-r));
		return 1;
	}
	return 0;
}
