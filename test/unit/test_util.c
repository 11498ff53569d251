/* SPDX-License-Identifier: MIT */
/* Unit tests for the CLI's shared helpers (src/cli/util/): the u64 map and the string
 * interner on uthash (symbolizer caches, call graph, flame graph names), WP_HASH_RESERVE,
 * address ranges (symbol tables, module maps), growable arrays and the arena, and the text
 * helpers every report uses. */
#include "cli/util/alloc.h"
#include "cli/util/idmap.h"
#include "cli/util/ranges.h"
#include "cli/util/textfmt.h"
#include "cli/util/uthash_cfg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static void test_u64map(void)
{
	struct wp_u64map m = { 0 };
	uint32_t v = 7;
	CHECK(!wp_u64map_get(&m, 1, &v), "an empty map holds nothing");
	enum { N = 300000 }; /* many times uthash's table doubled, and its arena's chunks */
	int bad = 0;
	for (uint32_t i = 0; i < N; i++)
		bad += wp_u64map_put(&m, (uint64_t)i * 0x10001 << 12, i) != 0;
	CHECK_INT(bad, 0);
	CHECK_EQ_U(m.n, N);
	for (uint32_t i = 0; i < N; i++)
		bad += !wp_u64map_get(&m, (uint64_t)i * 0x10001 << 12, &v) || v != i;
	CHECK_INT(bad, 0);
	CHECK(!wp_u64map_get(&m, 3, &v), "a key never put is absent");
	v = 9;
	CHECK(wp_u64map_get_or_add(&m, 4096 * 0x10001, 77, &v) == 0 && v == 1,
	      "an existing key is found, not added");
	CHECK(wp_u64map_get_or_add(&m, 5, 42, &v) == 1 && v == 42, "a new key is added");
	CHECK(wp_u64map_get(&m, 5, &v) && v == 42);
	CHECK(wp_u64map_put(&m, 5, 43) == 0 && wp_u64map_get(&m, 5, &v) && v == 43,
	      "put replaces a value");
	CHECK(wp_u64map_put(&m, 6, UINT32_MAX) == 0 && wp_u64map_get(&m, 6, &v) &&
	      v == UINT32_MAX, "UINT32_MAX is a value");
	CHECK(wp_u64map_put(&m, UINT64_MAX, 0) == 0 && wp_u64map_get(&m, UINT64_MAX, &v) && !v,
	      "every key is a key, value 0 a value");
	CHECK_EQ_U(m.n, N + 3);
	wp_u64map_free(&m);
	CHECK(m.n == 0 && !wp_u64map_get(&m, 5, &v), "freed, the map is empty again");
}

static void test_interner(void)
{
	struct wp_interner in = { 0 };
	char a[] = "main", b[] = "main", c[] = "memcpy";
	int64_t ia = wp_intern(&in, a), ib = wp_intern(&in, b), ic = wp_intern(&in, c);
	CHECK_INT(ia, 0);
	CHECK_INT(ib, 0);
	CHECK_INT(ic, 1);
	CHECK(wp_interned(&in, 0) == a, "the first pointer seen stands for the text");
	CHECK(wp_intern(&in, "") == 2 && wp_intern(&in, "") == 2, "the empty string is a string");
	/* many strings: ids stay dense and in order, texts stay distinct */
	enum { N = 20000 };
	char *names = malloc((size_t)N * 16), *copies = malloc((size_t)N * 16);
	int bad = 0;
	for (int i = 0; i < N; i++) {
		snprintf(names + i * 16, 16, "f%d", i);
		bad += wp_intern(&in, names + i * 16) != 3 + i;
	}
	CHECK_INT(bad, 0);
	for (int i = 0; i < N; i++) { /* other pointers, same texts */
		snprintf(copies + i * 16, 16, "f%d", i);
		bad += wp_intern(&in, copies + i * 16) != 3 + i;
		bad += wp_interned(&in, (uint32_t)(3 + i)) != names + i * 16;
	}
	CHECK_INT(bad, 0);
	CHECK_EQ_U(in.n, N + 3);
	wp_interner_free(&in);
	free(names);
	free(copies);
}

struct item {
	struct wp_range r;
	int id;
};

static int cmp_item(const void *a, const void *b)
{
	return wp_range_cmp(a, b);
}

static void test_ranges(void)
{
	/* an outer function with two nested ones, an overlap, a gap */
	struct item v[] = {
		{ { 100, 200, 0 }, 0 }, { { 110, 120, 0 }, 1 }, { { 150, 160, 0 }, 2 },
		{ { 190, 260, 0 }, 3 }, { { 300, 310, 0 }, 4 },
	};
	size_t n = sizeof(v) / sizeof(v[0]);
	qsort(v, n, sizeof(v[0]), cmp_item);
	wp_ranges_index(v, n, sizeof(v[0]));
	CHECK_EQ_U(v[2].r.maxhi, 200);
	CHECK_EQ_U(v[3].r.maxhi, 260);
	struct item *f = wp_ranges_find(v, n, sizeof(v[0]), 115);
	CHECK(f && f->id == 1, "the innermost (latest start) range wins");
	f = wp_ranges_find(v, n, sizeof(v[0]), 130);
	CHECK(f && f->id == 0, "past a nested range, its parent");
	f = wp_ranges_find(v, n, sizeof(v[0]), 120);
	CHECK(f && f->id == 0, "at a nested range's end (excluded), its parent");
	CHECK(!wp_ranges_find(v, n, sizeof(v[0]), 270), "in a gap, nothing");
	CHECK(!wp_ranges_find(v, n, sizeof(v[0]), 99), "below all, nothing");
	CHECK(!wp_ranges_find(v, n, sizeof(v[0]), 310), "the end is excluded");
	CHECK(!wp_ranges_find(NULL, 0, sizeof(v[0]), 5), "an empty array");
	struct wp_ranges_iter it;
	wp_ranges_iter_init(&it, v, n, sizeof(v[0]), 195);
	int seen = 0;
	for (struct item *x; (x = wp_ranges_next(&it));)
		seen = seen * 10 + x->id + 1;
	CHECK_INT(seen, 41); /* 3, then 0 */
	CHECK_INT(wp_ranges_last(v, n, sizeof(v[0]), 150), 2);
}

static void test_alloc(void)
{
	int *v = NULL;
	size_t cap = 0;
	CHECK(wp_grow(&v, &cap, 1, sizeof(*v)) == 0 && cap == 16);
	CHECK(wp_grow(&v, &cap, 17, sizeof(*v)) == 0 && cap == 32);
	CHECK(wp_grow(&v, &cap, 5, sizeof(*v)) == 0 && cap == 32, "never shrinks");
	v[31] = 1;
	CHECK(wp_grow(&v, &cap, SIZE_MAX / 2, sizeof(*v)) == -1 && cap == 32,
	      "an overflowing size is refused, the array kept");
	free(v);

	struct wp_arena a = { 0 };
	const char *s1 = wp_arena_strdup(&a, "hello");
	char *big = wp_arena_alloc(&a, 100000); /* larger than a chunk */
	const char *s2 = wp_arena_strdup(&a, "world");
	CHECK(s1 && big && s2);
	memset(big, 'x', 100000);
	CHECK_STR(s1, "hello");
	CHECK_STR(s2, "world");
	wp_arena_free(&a);
	CHECK(a.head == NULL);
}

static void test_text(void)
{
	CHECK_STR(wp_num(0), "0");
	CHECK_STR(wp_num(999), "999");
	CHECK_STR(wp_num(1000), "1,000");
	CHECK_STR(wp_num(14293), "14,293");
	CHECK_STR(wp_num(18446744073709551615ull), "18,446,744,073,709,551,615");
	CHECK(wp_pct(1, 4) == 25.0);
	CHECK(wp_pct(5, 0) == 0.0, "no whole: 0, not a division by zero");
	CHECK_STR(wp_dur(412000), "412 µs");
	CHECK_STR(wp_dur(28800000), "28.8 ms");
	CHECK_STR(wp_dur(4823000000ull), "4.823 s");
	CHECK_STR(wp_dur(192400000000ull), "3 min 12.4 s");
	static const struct {
		const char *s;
		size_t n;
	} utf8[] = {
		{ "a", 1 },		{ "\xc3\xa9", 2 },	   { "\xe2\x80\xa6", 3 },
		{ "\xf0\x9f\x94\xa5", 4 }, { "\xc0\xaf", 0 },	   /* overlong */
		{ "\xed\xa0\x80", 0 },	   /* surrogate */	   { "\xf4\x90\x80\x80", 0 },
		{ "\xc3", 0 },		   { "\x80", 0 },	   { "\xe2\x28\xa1", 0 },
	};
	for (size_t i = 0; i < sizeof(utf8) / sizeof(utf8[0]); i++)
		CHECK(wp_utf8_seq((const unsigned char *)utf8[i].s) == utf8[i].n, "case %zu", i);
}

/* uthash's tables follow the CLI's out-of-memory policy (uthash_cfg.h): a table that cannot
 * grow prints "wallprof: out of memory" and exits 1, not uthash's bare exit(-1). A child with
 * its address space capped adds entries (made before the cap) until the table cannot grow. */
struct uh_item {
	int key;
	UT_hash_handle hh;
};

static void test_uthash_oom(void)
{
#ifdef __SANITIZE_ADDRESS__
	return; /* ASan's allocator aborts on its own when the cap is hit: the plain and
		 * valgrind builds check this */
#endif
	int err[2];
	if (pipe(err))
		return;
	pid_t pid = fork();
	if (pid == 0) {
		enum { N = 4000000 };
		struct uh_item *items = calloc(N, sizeof(*items)), *head = NULL;
		dup2(err[1], 2);
		struct rlimit rl = { 0, 0 };
		if (!items || getrlimit(RLIMIT_AS, &rl))
			_exit(3);
		FILE *f = fopen("/proc/self/statm", "r");
		unsigned long pages = 0;
		if (!f || fscanf(f, "%lu", &pages) != 1)
			_exit(3);
		rl.rlim_cur = pages * (unsigned long)sysconf(_SC_PAGESIZE) + (1ul << 20);
		if (setrlimit(RLIMIT_AS, &rl))
			_exit(3);
		for (int i = 0; i < N; i++) {
			items[i].key = i;
			HASH_ADD_INT(head, key, &items[i]);
		}
		_exit(4); /* the table grew past the cap: no test */
	}
	close(err[1]);
	char buf[256] = { 0 };
	ssize_t n = read(err[0], buf, sizeof(buf) - 1);
	close(err[0]);
	int st = 0;
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1, "a uthash table that cannot grow exits 1 (%d)",
	      WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st));
	CHECK(n > 0 && strstr(buf, "wallprof: out of memory"), "with the CLI's one line: %s", buf);
}

/* WP_HASH_RESERVE: the buckets asked for at once, every item still found, and the table
 * still one uthash grows by itself. */
static void test_reserve(void)
{
	struct item_ {
		int key;
		UT_hash_handle hh;
	} items[2000], *head = NULL, *f;
	for (int i = 0; i < 3; i++) {
		items[i].key = i * 7;
		HASH_ADD_INT(head, key, &items[i]);
	}
	WP_HASH_RESERVE(head, hh, 100000);
	CHECK(head->hh.tbl->num_buckets >= 50000 && head->hh.tbl->num_buckets < 100000,
	      "reserved %u buckets", head->hh.tbl->num_buckets);
	CHECK(!head->hh.tbl->noexpand, "uthash may still grow it");
	for (int i = 3; i < 2000; i++) {
		items[i].key = i * 7;
		HASH_ADD_INT(head, key, &items[i]);
	}
	int bad = 0;
	for (int i = 0; i < 2000; i++) {
		int k = i * 7;
		HASH_FIND_INT(head, &k, f);
		bad += f != &items[i];
	}
	CHECK_INT(bad, 0);
	CHECK_EQ_U(HASH_COUNT(head), 2000);
	HASH_CLEAR(hh, head);
}

int main(void)
{
	test_uthash_oom();
	test_reserve();
	test_u64map();
	test_interner();
	test_ranges();
	test_alloc();
	test_text();
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
