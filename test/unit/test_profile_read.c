/* SPDX-License-Identifier: MIT */
/* Unit tests of the profile reader (src/common/profile_read.c).
 *
 * Profiles are built in memory by a tiny builder below (deliberately independent of the
 * agent's writer: it encodes docs/profile-format.md directly), read back, and compared field by
 * field. Then they are damaged systematically: every truncation, every single-bit flip and a
 * few thousand random multi-byte corruptions must give an error or a valid profile, never a
 * crash (run this under ASan/UBSan too), and each specific defect must give its specific
 * message.
 *
 *   test_profile_read                    run the tests
 *   test_profile_read --write-corpus DIR write the sample files into DIR (fuzzing seeds)
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "common/profile.h"
#include "profile_build.h"

/* ---- profile builder: profile_build.h ---- */

/* ---- the sample profiles ---- */

static const uint8_t BID1[20] = {0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6,
				 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
static uint64_t big_pcs[WP_MAX_FRAMES];

/* Every record type, out-of-order stacks and modules, interleaved timelines, an unknown record,
 * duplicated META keys, a reused tid. */
static void build_full(struct buf *b)
{
	header(b, WP_FORMAT_VERSION);
	rec_meta(b, "mode=wall\nhz=99\ncommand=./a.out --x=1 y\n\npid=4242\nstart_unix_ns=1700000000000000000\n");
	rec_module(b, 2, 0, 0x7f0000001000, 0x7f0000005000, 0x1000, NULL, 0,
		   "/usr/lib/x86_64-linux-gnu/libc.so.6");
	rec_module(b, 1, WP_MODULE_MAIN, 0x400000, 0x401000, 0, BID1, sizeof BID1, "/tmp/a.out");
	rec_module(b, 3, WP_MODULE_VDSO, 0x7fff00000000, 0x7fff00002000, 0, BID1, 20, "[vdso]");
	rec_thread(b, 100, 0, 7, 5, 2, 0, 9000, "main");
	rec_thread(b, 101, WP_THREAD_EXITED, 3, 1, 2, 10, 5000, "worker-1");
	/* an unknown record type, skipped */
	size_t r = rec_begin(b, 999);
	put_u64(b, 0x1122334455667788ull);
	put(b, "future", 6);
	rec_end(b, r);
	static const uint64_t pcs5[] = {0x400123, 0x7f0000001234, 0x7f0000004ff0, 0x400010, 0x1};
	rec_stack(b, 5, 100, 0, 4, 40000000, pcs5, 5);
	rec_stack(b, 2, 101, WP_STACK_WAITING | WP_STACK_REUSED, 3, 30000000, pcs5 + 1, 2);
	rec_stack(b, 9, 100, WP_STACK_TRUNCATED, 2, 20000, NULL, 0);
	for (uint32_t i = 0; i < WP_MAX_FRAMES; i++)
		big_pcs[i] = 0x400000 + i;
	rec_stack(b, 0xfffffff0u, 101, 0, 1, 1, big_pcs, WP_MAX_FRAMES);
	static const uint64_t tl_a1[][2] = {{10, 5}, {20, 5}, {30, 9}};
	static const uint64_t tl_b1[][2] = {{15, 2}, {300, 0xfffffff0u}};
	static const uint64_t tl_a2[][2] = {{30, 5}, {1ull << 40, 9}};
	static const uint64_t tl_b2[][2] = {{400, 2}};
	rec_timeline(b, 100, tl_a1, 3);
	rec_timeline(b, 101, tl_b1, 2);
	rec_timeline(b, 100, tl_a2, 2);
	rec_timeline(b, 101, NULL, 0);
	rec_timeline(b, 101, tl_b2, 1);
	rec_meta(b, "hz=100\nduration_ns=12345\nexit_status=0"); /* no trailing newline */
	rec_thread(b, 100, 0, 8, 6, 2, 0, 9100, "main-renamed");   /* tid reused */
	rec_end_marker(b);
}

static void build_minimal(struct buf *b)
{
	header(b, WP_FORMAT_VERSION);
	rec_end_marker(b);
}

/* A plausible small profile, the shape the agent writes. */
static void build_small(struct buf *b)
{
	header(b, WP_FORMAT_VERSION);
	rec_meta(b, "mode=wall\nhz=99\nthreads_per_tick=64\ncommand=sleep 1\npid=1\n");
	rec_module(b, 1, WP_MODULE_MAIN, 0x1000, 0x2000, 0, BID1, 20, "/bin/sleep");
	rec_thread(b, 1, 0, 2, 1, 1, 0, 100, "sleep");
	static const uint64_t pcs[] = {0x1100, 0x1200};
	rec_stack(b, 1, 1, 0, 1, 10, pcs, 2);
	rec_stack(b, 2, 1, WP_STACK_WAITING, 1, 10, pcs + 1, 1);
	static const uint64_t tl[][2] = {{0, 1}, {10101, 2}};
	rec_timeline(b, 1, tl, 2);
	rec_meta(b, "duration_ns=1000000000\nexit_status=0\n");
	rec_end_marker(b);
}

/* ---- helpers ---- */

static char errbuf[512];

static struct wp_profile *parse_ok(const struct buf *b)
{
	struct wp_profile *p = (struct wp_profile *)0x1;
	errbuf[0] = 0;
	int rc = wp_profile_parse(b->d, b->len, &p, errbuf, sizeof errbuf);
	if (rc != 0) {
		fprintf(stderr, "unexpected parse failure: %s\n", errbuf);
		CHECK(rc == 0);
		return NULL;
	}
	CHECK(p != NULL);
	return p;
}

/* Parses, expects failure with `want` inside the message. */
static void expect_err_at(const uint8_t *d, size_t len, const char *want, int line)
{
	struct wp_profile *p = (struct wp_profile *)0x1;
	errbuf[0] = 0;
	int rc = wp_profile_parse(d, len, &p, errbuf, sizeof errbuf);
	if (rc != -1 || p != NULL) {
		failed++;
		fprintf(stderr, "%s:%d: FAILED: expected error \"%s\", parse returned %d\n",
			__FILE__, line, want, rc);
		if (rc == 0)
			wp_profile_free(p);
		return;
	}
	if (!strstr(errbuf, want)) {
		failed++;
		fprintf(stderr, "%s:%d: FAILED: expected error \"%s\", got \"%s\"\n", __FILE__,
			line, want, errbuf);
		return;
	}
	passed++;
}
#define EXPECT_ERR(b, want) expect_err_at((b)->d, (b)->len, (want), __LINE__)

/* Touches every field of a profile (for the corruption tests, where ASan watches). */
static uint64_t walk(const struct wp_profile *p)
{
	uint64_t h = 0;
	for (size_t i = 0; i < p->nmeta; i++)
		h += strlen(p->meta[i].key) + strlen(p->meta[i].value);
	for (size_t i = 0; i < p->nmodules; i++) {
		const struct wp_module *m = &p->modules[i];
		h += m->id + m->flags + m->start + m->end + m->file_offset + strlen(m->path);
		for (uint32_t k = 0; k < m->build_id_len; k++)
			h += m->build_id[k];
		h += wp_profile_module_at(p, m->start) != NULL;
	}
	for (size_t i = 0; i < p->nthreads; i++) {
		const struct wp_thread *t = &p->threads[i];
		h += t->tid + t->flags + t->samples + t->running + t->waiting + t->first_ns +
		     t->last_ns + strlen(t->name);
		h += wp_profile_thread(p, t->tid) != NULL;
	}
	for (size_t i = 0; i < p->nstacks; i++) {
		const struct wp_stack *s = &p->stacks[i];
		h += s->id + s->tid + s->flags + s->count + s->weight_ns;
		for (uint32_t k = 0; k < s->nframes; k++)
			h += s->pcs[k] + (wp_profile_module_at(p, s->pcs[k]) != NULL);
		if (wp_profile_stack(p, s->id) != s)
			h += 1000;
	}
	for (size_t i = 0; i < p->ntimeline; i++) {
		const struct wp_tl_entry *e = &p->timeline[i];
		h += e->t_us + e->tid + e->stack_id;
		h += wp_profile_stack(p, e->stack_id) != NULL;
	}
	h += wp_profile_total_samples(p) + wp_profile_total_weight_ns(p);
	h += (uint64_t)wp_profile_meta_ll(p, "hz", 0);
	return h;
}

/* ---- tests ---- */

static void test_roundtrip(void)
{
	struct buf b;
	build_full(&b);
	struct wp_profile *p = parse_ok(&b);
	if (!p) {
		buf_free(&b);
		return;
	}

	/* META: both records, in file order, empty line skipped, last key wins */
	CHECK_EQ_U(p->nmeta, 8);
	CHECK_STR(p->meta[0].key, "mode");
	CHECK_STR(p->meta[0].value, "wall");
	CHECK_STR(p->meta[2].key, "command");
	CHECK_STR(p->meta[2].value, "./a.out --x=1 y");
	CHECK_STR(p->meta[7].key, "exit_status");
	CHECK_STR(p->meta[7].value, "0");
	CHECK_STR(wp_profile_meta(p, "mode"), "wall");
	CHECK_STR(wp_profile_meta(p, "hz"), "100");
	CHECK_EQ_U(wp_profile_meta_ll(p, "hz", -1), 100);
	CHECK_EQ_U(wp_profile_meta_ll(p, "start_unix_ns", -1), 1700000000000000000ull);
	CHECK(wp_profile_meta_ll(p, "command", -7) == -7);
	CHECK(wp_profile_meta_ll(p, "nope", -8) == -8);
	CHECK(wp_profile_meta(p, "nope") == NULL);
	CHECK(wp_profile_meta(p, "") == NULL);

	/* modules, sorted by start */
	CHECK_EQ_U(p->nmodules, 3);
	const struct wp_module *m = &p->modules[0];
	CHECK_EQ_U(m->id, 1);
	CHECK_EQ_U(m->flags, WP_MODULE_MAIN);
	CHECK_EQ_U(m->start, 0x400000);
	CHECK_EQ_U(m->end, 0x401000);
	CHECK_EQ_U(m->file_offset, 0);
	CHECK_EQ_U(m->build_id_len, 20);
	CHECK(memcmp(m->build_id, BID1, 20) == 0);
	CHECK_STR(m->path, "/tmp/a.out");
	m = &p->modules[1];
	CHECK_EQ_U(m->id, 2);
	CHECK_EQ_U(m->flags, 0);
	CHECK_EQ_U(m->start, 0x7f0000001000);
	CHECK_EQ_U(m->end, 0x7f0000005000);
	CHECK_EQ_U(m->file_offset, 0x1000);
	CHECK_EQ_U(m->build_id_len, 0);
	CHECK_STR(m->path, "/usr/lib/x86_64-linux-gnu/libc.so.6");
	m = &p->modules[2];
	CHECK_EQ_U(m->id, 3);
	CHECK_EQ_U(m->flags, WP_MODULE_VDSO);
	CHECK_STR(m->path, "[vdso]");
	CHECK(wp_profile_module_at(p, 0x400000) == &p->modules[0]);
	CHECK(wp_profile_module_at(p, 0x400fff) == &p->modules[0]);
	CHECK(wp_profile_module_at(p, 0x401000) == NULL);
	CHECK(wp_profile_module_at(p, 0x3fffff) == NULL);
	CHECK(wp_profile_module_at(p, 0) == NULL);
	CHECK(wp_profile_module_at(p, 0x7f0000004fff) == &p->modules[1]);
	CHECK(wp_profile_module_at(p, 0x7fff00001000) == &p->modules[2]);
	CHECK(wp_profile_module_at(p, UINT64_MAX) == NULL);

	/* threads, file order; the reused tid finds its last record */
	CHECK_EQ_U(p->nthreads, 3);
	const struct wp_thread *t = &p->threads[0];
	CHECK_EQ_U(t->tid, 100);
	CHECK_EQ_U(t->flags, 0);
	CHECK_EQ_U(t->samples, 7);
	CHECK_EQ_U(t->running, 5);
	CHECK_EQ_U(t->waiting, 2);
	CHECK_EQ_U(t->first_ns, 0);
	CHECK_EQ_U(t->last_ns, 9000);
	CHECK_STR(t->name, "main");
	t = &p->threads[1];
	CHECK_EQ_U(t->tid, 101);
	CHECK_EQ_U(t->flags, WP_THREAD_EXITED);
	CHECK_EQ_U(t->samples, 3);
	CHECK_EQ_U(t->first_ns, 10);
	CHECK_STR(t->name, "worker-1");
	CHECK(wp_profile_thread(p, 101) == &p->threads[1]);
	CHECK(wp_profile_thread(p, 100) == &p->threads[2]);
	CHECK_STR(wp_profile_thread(p, 100)->name, "main-renamed");
	CHECK(wp_profile_thread(p, 102) == NULL);
	CHECK(wp_profile_thread(p, 0) == NULL);

	/* stacks, sorted by id */
	CHECK_EQ_U(p->nstacks, 4);
	CHECK_EQ_U(p->stacks[0].id, 2);
	CHECK_EQ_U(p->stacks[1].id, 5);
	CHECK_EQ_U(p->stacks[2].id, 9);
	CHECK_EQ_U(p->stacks[3].id, 0xfffffff0u);
	const struct wp_stack *s = wp_profile_stack(p, 5);
	CHECK(s == &p->stacks[1]);
	if (s) {
		CHECK_EQ_U(s->tid, 100);
		CHECK_EQ_U(s->flags, 0);
		CHECK_EQ_U(s->count, 4);
		CHECK_EQ_U(s->weight_ns, 40000000);
		CHECK_EQ_U(s->nframes, 5);
		CHECK_EQ_U(s->pcs[0], 0x400123);
		CHECK_EQ_U(s->pcs[4], 0x1);
	}
	s = wp_profile_stack(p, 2);
	CHECK(s != NULL);
	if (s) {
		CHECK_EQ_U(s->flags, WP_STACK_WAITING | WP_STACK_REUSED);
		CHECK_EQ_U(s->nframes, 2);
		CHECK_EQ_U(s->pcs[0], 0x7f0000001234);
		CHECK_EQ_U(s->pcs[1], 0x7f0000004ff0);
	}
	s = wp_profile_stack(p, 9);
	CHECK(s && s->nframes == 0 && s->flags == WP_STACK_TRUNCATED);
	s = wp_profile_stack(p, 0xfffffff0u);
	CHECK(s && s->nframes == WP_MAX_FRAMES);
	if (s)
		CHECK(memcmp(s->pcs, big_pcs, sizeof big_pcs) == 0);
	CHECK(wp_profile_stack(p, 0) == NULL);
	CHECK(wp_profile_stack(p, 3) == NULL);
	CHECK(wp_profile_stack(p, UINT32_MAX) == NULL);
	CHECK_EQ_U(wp_profile_total_samples(p), 10);
	CHECK_EQ_U(wp_profile_total_weight_ns(p), 70020001);

	/* timeline: grouped by thread (first appearance), absolute times */
	static const struct wp_tl_entry want[] = {
		{10, 100, 5}, {20, 100, 5}, {30, 100, 9}, {30, 100, 5}, {1ull << 40, 100, 9},
		{15, 101, 2}, {300, 101, 0xfffffff0u}, {400, 101, 2},
	};
	CHECK_EQ_U(p->ntimeline, sizeof want / sizeof want[0]);
	for (size_t i = 0; i < p->ntimeline && i < sizeof want / sizeof want[0]; i++) {
		CHECK_EQ_U(p->timeline[i].t_us, want[i].t_us);
		CHECK_EQ_U(p->timeline[i].tid, want[i].tid);
		CHECK_EQ_U(p->timeline[i].stack_id, want[i].stack_id);
	}
	wp_profile_free(p);
	buf_free(&b);

	/* the minimal file */
	build_minimal(&b);
	p = parse_ok(&b);
	if (p) {
		CHECK(p->nmeta == 0 && p->nmodules == 0 && p->nthreads == 0 && p->nstacks == 0 &&
		      p->ntimeline == 0);
		CHECK(wp_profile_stack(p, 0) == NULL);
		CHECK(wp_profile_module_at(p, 0x1000) == NULL);
		CHECK(wp_profile_thread(p, 1) == NULL);
		CHECK(wp_profile_meta(p, "hz") == NULL);
		CHECK_EQ_U(wp_profile_total_samples(p), 0);
		wp_profile_free(p);
	}
	buf_free(&b);
	wp_profile_free(NULL);
	CHECK(wp_profile_meta(NULL, "x") == NULL);
	CHECK(wp_profile_stack(NULL, 1) == NULL);
}

static void test_module_overlap(void)
{
	struct buf b;
	header(&b, WP_FORMAT_VERSION);
	/* a big unloaded mapping, a small one inside it, and a later one */
	rec_module(&b, 1, WP_MODULE_UNLOADED, 0x10000, 0x90000, 0, NULL, 0, "/old.so");
	rec_module(&b, 2, 0, 0x20000, 0x21000, 0, NULL, 0, "/new.so");
	rec_module(&b, 3, 0, 0xa0000, 0xa1000, 0, NULL, 0, "/late.so");
	rec_module(&b, 4, 0, 0x30000, 0x31000, 0, NULL, 0, "/mid.so");
	rec_end_marker(&b);
	struct wp_profile *p = parse_ok(&b);
	if (p) {
		CHECK_STR(wp_profile_module_at(p, 0x20500)->path, "/new.so");
		CHECK_STR(wp_profile_module_at(p, 0x25000)->path, "/old.so");
		CHECK_STR(wp_profile_module_at(p, 0x30000)->path, "/mid.so");
		CHECK_STR(wp_profile_module_at(p, 0x8ffff)->path, "/old.so");
		CHECK(wp_profile_module_at(p, 0x90000) == NULL);
		CHECK(wp_profile_module_at(p, 0x9ffff) == NULL);
		CHECK_STR(wp_profile_module_at(p, 0xa0fff)->path, "/late.so");
		CHECK(wp_profile_module_at(p, 0xa1000) == NULL);
		CHECK(wp_profile_module_at(p, 0xffff) == NULL);
		wp_profile_free(p);
	}
	buf_free(&b);
}

static void test_meta_values(void)
{
	struct buf b;
	header(&b, WP_FORMAT_VERSION);
	rec_meta(&b, "a=1\nneg=-42\nbig=99999999999999999999999\nhex=0x10\nempty=\nsp= 5\n"
		     "eq=x=y\nlast=\n");
	rec_end_marker(&b);
	struct wp_profile *p = parse_ok(&b);
	if (p) {
		CHECK(wp_profile_meta_ll(p, "a", 0) == 1);
		CHECK(wp_profile_meta_ll(p, "neg", 0) == -42);
		CHECK(wp_profile_meta_ll(p, "big", 7) == 7);
		CHECK(wp_profile_meta_ll(p, "hex", 7) == 7);
		CHECK(wp_profile_meta_ll(p, "empty", 7) == 7);
		CHECK_STR(wp_profile_meta(p, "empty"), "");
		CHECK_STR(wp_profile_meta(p, "eq"), "x=y");
		CHECK_STR(wp_profile_meta(p, "last"), "");
		wp_profile_free(p);
	}
	buf_free(&b);

	/* the keys the command reads, parsed once (p->info): the last line of a key wins,
	 * missing and negative figures are 0, missing ids -1 */
	header(&b, WP_FORMAT_VERSION);
	rec_meta(&b, "mode=cpu\nhz=100\npid=12\ncommand=./a b\nrun=12-34\nduration_ns=-5\n"
		     "checkpoint=1\nwallprof_version=0.9\nthreads_per_tick=16\nstart_unix_ns=77\n");
	rec_meta(&b, "hz=250\ncpu_user_ns=10\ncpu_sys_ns=20\nsampler_cpu_ns=0\nncpus=4\n");
	rec_end_marker(&b);
	p = parse_ok(&b);
	if (p) {
		const struct wp_profile_info *in = &p->info;
		CHECK_STR(in->mode, "cpu");
		CHECK_STR(in->command, "./a b");
		CHECK_STR(in->run, "12-34");
		CHECK_STR(in->version, "0.9");
		CHECK_EQ_U(in->hz, 250);
		CHECK(in->pid == 12 && in->ppid == -1 && in->threads_seen == -1);
		CHECK(in->threads_per_tick == 16);
		CHECK_EQ_U(in->duration_ns, 0);
		CHECK_EQ_U(in->start_unix_ns, 77);
		CHECK_EQ_U(in->cpu_user_ns + in->cpu_sys_ns, 30);
		CHECK_EQ_U(in->ncpus, 4);
		CHECK(in->checkpoint && in->has_sampler_cpu && !in->timeline_truncated);
		CHECK_EQ_U(in->sampler_cpu_ns, 0);
		wp_profile_free(p);
	}
	buf_free(&b);
}

/* How a process ended, from its META: newer agents' exit_status, a fatal signal, exec, a
 * checkpoint or flush alone (no final word), and an older agent's file (none: "ended"). */
static void test_end(void)
{
	static const struct { const char *meta; enum wp_end end; int code; } cases[] = {
		{ "pid=1\nexit_status=3\n", WP_END_EXIT, 3 },
		{ "exit_status=0\n", WP_END_EXIT, 0 },
		{ "died_of_signal=9\n", WP_END_SIGNAL, 9 },
		{ "checkpoint=1\ndied_of_signal=15\n", WP_END_SIGNAL, 15 },
		{ "exec=1\n", WP_END_EXEC, 0 },
		{ "checkpoint=1\n", WP_END_NO_WORD, 0 },
		{ "flush=1\n", WP_END_NO_WORD, 0 },
		{ "pid=1\n", WP_END_ENDED, 0 },
		{ "exit_status=999\n", WP_END_ENDED, 0 },  /* not a status: as if absent */
		{ "exit_status=x\ncheckpoint=1\n", WP_END_NO_WORD, 0 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct buf b;
		header(&b, WP_FORMAT_VERSION);
		rec_meta(&b, cases[i].meta);
		rec_end_marker(&b);
		struct wp_profile *p = parse_ok(&b);
		if (p) {
			int code = -1;
			enum wp_end e = wp_profile_end(p, &code);
			CHECK(e == cases[i].end && code == cases[i].code, "%s: end %d code %d",
			      cases[i].meta, (int)e, code);
			wp_profile_free(p);
		}
		buf_free(&b);
	}
}

/* A THREAD record's appended unseen time and reason (format.h); older files lack them. */
static void thread_tail(struct buf *b, uint32_t tid, const char *name, uint64_t unseen,
			const char *why, uint32_t why_len)
{
	size_t r = rec_begin(b, WP_REC_THREAD);
	put_u32(b, tid);
	put_u32(b, 0);
	for (int i = 0; i < 5; i++)
		put_u64(b, 0);
	put_u32(b, (uint32_t)strlen(name));
	put(b, name, strlen(name));
	put_u64(b, unseen);
	put_u32(b, why_len);
	put(b, why, strlen(why));
	rec_end(b, r);
}

static void test_thread_unseen(void)
{
	struct buf b;
	header(&b, WP_FORMAT_VERSION);
	thread_tail(&b, 7, "masked", 1500000000ull, "perf_event_open refused", 23);
	rec_thread(&b, 8, 0, 0, 0, 0, 0, 0, "old");
	rec_end_marker(&b);
	struct wp_profile *p = parse_ok(&b);
	if (p) {
		CHECK_EQ_U(p->nthreads, 2);
		CHECK_EQ_U(p->threads[0].unseen_ns, 1500000000ull);
		CHECK_STR(p->threads[0].unseen_why, "perf_event_open refused");
		CHECK_STR(p->threads[0].name, "masked");
		CHECK_EQ_U(p->threads[1].unseen_ns, 0);
		CHECK_STR(p->threads[1].unseen_why, "");
		wp_profile_free(p);
	}
	buf_free(&b);
	header(&b, WP_FORMAT_VERSION);
	thread_tail(&b, 7, "masked", 1, "short", 9);
	rec_end_marker(&b);
	EXPECT_ERR(&b, "thread 7 at offset 16: unseen reason of 9 bytes runs past the end of its "
		       "75-byte record");
	buf_free(&b);
}

/* Forward compatibility: a newer writer may append fields to a record and add record types. */
static void test_forward_compat(void)
{
	struct buf b;
	header(&b, WP_FORMAT_VERSION);
	size_t r = rec_begin(&b, WP_REC_THREAD);
	put_u32(&b, 7);
	put_u32(&b, 0);
	for (int i = 0; i < 5; i++)
		put_u64(&b, (uint64_t)i);
	put_u32(&b, 3);
	put(&b, "abc", 3);
	put_u64(&b, 0xffffffffffffffffull); /* a field this reader does not know */
	rec_end(&b, r);
	r = rec_begin(&b, WP_REC_STACK);
	put_u32(&b, 1);
	put_u32(&b, 7);
	put_u32(&b, 0x80); /* an unknown flag is kept */
	put_u32(&b, 1);
	put_u64(&b, 1);
	put_u64(&b, 2);
	put_u64(&b, 0x1234);
	put_u32(&b, 0xabcdef); /* appended */
	rec_end(&b, r);
	r = rec_begin(&b, 0x7fffffff);
	rec_end(&b, r);
	r = rec_begin(&b, 0);
	put(&b, "zero type", 9);
	rec_end(&b, r);
	rec_end_marker(&b);
	struct wp_profile *p = parse_ok(&b);
	if (p) {
		CHECK_EQ_U(p->nthreads, 1);
		CHECK_STR(p->threads[0].name, "abc");
		CHECK_EQ_U(p->threads[0].last_ns, 4);
		CHECK_EQ_U(p->nstacks, 1);
		CHECK_EQ_U(p->stacks[0].flags, 0x80);
		CHECK_EQ_U(p->stacks[0].pcs[0], 0x1234);
		wp_profile_free(p);
	}
	buf_free(&b);

	/* a non-empty END (reserved for the future) is fine too */
	header(&b, WP_FORMAT_VERSION);
	r = rec_begin(&b, WP_REC_END);
	put_u32(&b, 1);
	rec_end(&b, r);
	p = parse_ok(&b);
	wp_profile_free(p);
	buf_free(&b);
}

/* WAIT records (since 0.2): read back; absent in older files; a target that runs past its
 * record or holds a NUL is refused like any other string. */
/* LAST: each live thread's last sample (newer agents): read in file order, later bytes
 * ignored, a record shorter than its fixed fields refused. */
static void test_lasts(void)
{
	struct buf b;
	static const uint64_t pcs[] = { 0x1000 };
	header(&b, WP_FORMAT_VERSION);
	rec_thread(&b, 10, 0, 3, 0, 3, 0, 1, "t");
	rec_stack(&b, 1, 10, WP_STACK_WAITING, 3, 3000, pcs, 1);
	rec_last(&b, 10, 1, 202, 0x5000, 2, 11, 0);
	rec_last(&b, 11, 7, 0, 0, 0, 0, 8);
	rec_end_marker(&b);
	struct wp_profile *p = parse_ok(&b);
	if (p) {
		CHECK_EQ_U(p->nlasts, 2);
		CHECK_EQ_U(p->lasts[0].tid, 10);
		CHECK_EQ_U(p->lasts[0].flags, WP_LAST_IN_CALL | WP_LAST_WAITING);
		CHECK_EQ_U(p->lasts[0].stack_id, 1);
		CHECK_EQ_U(p->lasts[0].nr, 202);
		CHECK_EQ_U(p->lasts[0].a0, 0x5000);
		CHECK_EQ_U(p->lasts[0].a1, 128);
		CHECK_EQ_U(p->lasts[0].a2, 2);
		CHECK_EQ_U(p->lasts[0].aux, 11);
		CHECK_EQ_U(p->lasts[0].at_ns, 5000);
		/* a thread and a stack the file lacks: kept as written, the model ignores them */
		CHECK_EQ_U(p->lasts[1].tid, 11);
		CHECK_EQ_U(p->lasts[1].flags, 0);
		wp_profile_free(p);
	}
	buf_free(&b);

	header(&b, WP_FORMAT_VERSION);
	rec_thread(&b, 10, 0, 3, 0, 3, 0, 1, "t");
	size_t r = rec_begin(&b, WP_REC_LAST);
	put_u32(&b, 10);
	rec_end(&b, r);
	rec_end_marker(&b);
	expect_err_at(b.d, b.len, "LAST", __LINE__);
	buf_free(&b);
}

static void test_waits(void)
{
	struct buf b;
	static const uint64_t pcs[] = { 0x1000 };
	header(&b, WP_FORMAT_VERSION);
	rec_thread(&b, 10, 0, 3, 0, 3, 0, 1, "t");
	rec_stack(&b, 1, 10, WP_STACK_WAITING, 3, 3000, pcs, 1);
	rec_wait(&b, 1, 0 /* read */, 4, 1234, 2, "pipe:[1234]", 11, 11);
	rec_wait(&b, 1, 202 /* futex */, 0x5000, 77, 1, "", 0, 0);
	rec_end_marker(&b);
	struct wp_profile *p = parse_ok(&b);
	if (p) {
		CHECK_EQ_U(p->nwaits, 2);
		CHECK_EQ_U(p->waits[0].stack_id, 1);
		CHECK_EQ_U(p->waits[0].nr, 0);
		CHECK_EQ_U(p->waits[0].a0, 4);
		CHECK_EQ_U(p->waits[0].aux, 1234);
		CHECK_EQ_U(p->waits[0].count, 2);
		CHECK_EQ_U(p->waits[0].weight_ns, 2000);
		CHECK_STR(p->waits[0].target, "pipe:[1234]");
		CHECK_EQ_U(p->waits[1].nr, 202);
		CHECK_STR(p->waits[1].target, "");
		/* WAIT records of the first version end at the target: no holder stack */
		CHECK_EQ_U(p->waits[0].holder_stack, WP_WAIT_NO_HOLDER_STACK);
		CHECK_EQ_U(p->waits[1].holder_stack, WP_WAIT_NO_HOLDER_STACK);
		wp_profile_free(p);
	}
	buf_free(&b);

	/* appended to WAIT later: the holder's stack after the target; a holder stack may have count 0 */
	static const uint64_t hpcs[] = { 0x2000, 0x2100 };
	header(&b, WP_FORMAT_VERSION);
	rec_thread(&b, 10, 0, 3, 0, 3, 0, 1, "t");
	rec_thread(&b, 11, 0, 0, 0, 0, 0, 1, "holder");
	rec_stack(&b, 1, 10, WP_STACK_WAITING, 3, 3000, pcs, 1);
	rec_stack(&b, 2, 11, 0, 0, 0, hpcs, 2);
	rec_wait_holder(&b, 1, 0x5000, 11, 3, 2);
	rec_wait_holder(&b, 1, 0x5000, 11, 1, WP_WAIT_NO_HOLDER_STACK);
	rec_end_marker(&b);
	p = parse_ok(&b);
	if (p) {
		CHECK_EQ_U(p->nwaits, 2);
		CHECK_EQ_U(p->waits[0].holder_stack, 2);
		CHECK_EQ_U(p->waits[0].aux, 11);
		CHECK_EQ_U(p->waits[1].holder_stack, WP_WAIT_NO_HOLDER_STACK);
		CHECK_EQ_U(wp_profile_stack(p, 2)->count, 0);
		/* no cond_mutex after the holder stack: 0 */
		CHECK_EQ_U(p->waits[0].cond_mutex, 0);
		wp_profile_free(p);
	}
	buf_free(&b);

	/* appended after holder_stack: a condition wait's mutex */
	header(&b, WP_FORMAT_VERSION);
	rec_thread(&b, 10, 0, 3, 0, 3, 0, 1, "t");
	rec_stack(&b, 1, 10, WP_STACK_WAITING, 3, 3000, pcs, 1);
	rec_wait_cond(&b, 1, 0x5028, 3, 0x6000);
	rec_wait(&b, 1, 202 /* futex */, 0x5000, 0, 1, "", 0, 0);
	rec_end_marker(&b);
	p = parse_ok(&b);
	if (p) {
		CHECK_EQ_U(p->nwaits, 2);
		CHECK_EQ_U(p->waits[0].cond_mutex, 0x6000);
		CHECK_EQ_U(p->waits[0].holder_stack, WP_WAIT_NO_HOLDER_STACK);
		CHECK_EQ_U(p->waits[1].cond_mutex, 0); /* first version: ends at the target */
		wp_profile_free(p);
	}
	buf_free(&b);

	/* a holder stack that no STACK record has: refused, never followed */
	header(&b, WP_FORMAT_VERSION);
	rec_thread(&b, 10, 0, 3, 0, 3, 0, 1, "t");
	rec_stack(&b, 1, 10, WP_STACK_WAITING, 3, 3000, pcs, 1);
	rec_wait_holder(&b, 1, 0x5000, 11, 3, 7);
	rec_end_marker(&b);
	EXPECT_ERR(&b, "wait of stack 1 names holder stack 7, which has no STACK record");
	buf_free(&b);

	header(&b, WP_FORMAT_VERSION);
	rec_thread(&b, 10, 0, 3, 0, 3, 0, 1, "t");
	rec_end_marker(&b);
	p = parse_ok(&b);
	if (p) {
		CHECK_EQ_U(p->nwaits, 0);
		wp_profile_free(p);
	}
	buf_free(&b);

	header(&b, WP_FORMAT_VERSION);
	rec_wait(&b, 1, 0, 4, 0, 1, "abc", 9, 3);
	rec_end_marker(&b);
	EXPECT_ERR(&b, "target of 9 bytes runs past the end");
	buf_free(&b);

	header(&b, WP_FORMAT_VERSION);
	rec_wait(&b, 1, 0, 4, 0, 1, "a\0c", 3, 3);
	rec_end_marker(&b);
	EXPECT_ERR(&b, "target contains a NUL byte");
	buf_free(&b);
}

static void test_header_errors(void)
{
	struct buf b;
	build_minimal(&b);
	expect_err_at(b.d, 0, "empty file", __LINE__);
	expect_err_at(NULL, 0, "empty file", __LINE__);
	expect_err_at((const uint8_t *)"X", 1, "not a wallprof profile", __LINE__);
	expect_err_at((const uint8_t *)"WALLPROX", 8, "not a wallprof profile", __LINE__);
	expect_err_at((const uint8_t *)"\x7f" "ELF\2\1\1\0\0\0\0\0\0\0\0\0\0\0\0\0", 20,
		      "not a wallprof profile", __LINE__);
	expect_err_at((const uint8_t *)"WALL", 4, "shorter than the 16-byte header", __LINE__);
	b.d[0] = 'w';
	EXPECT_ERR(&b, "not a wallprof profile");
	buf_free(&b);

	header(&b, 2);
	rec_end_marker(&b);
	EXPECT_ERR(&b, "profile format version 2 is newer than this wallprof supports (1)");
	set_u32(&b, 8, 0xffffffffu);
	EXPECT_ERR(&b, "profile format version 4294967295 is newer than this wallprof supports");
	set_u32(&b, 8, 0);
	EXPECT_ERR(&b, "not a wallprof profile (format version 0)");
	buf_free(&b);

	/* the header_size word is ignored by version 1 readers */
	build_minimal(&b);
	set_u32(&b, 12, 0xdeadbeef);
	wp_profile_free(parse_ok(&b));
	buf_free(&b);
}

static void test_framing_errors(void)
{
	struct buf b;
	/* missing END */
	header(&b, WP_FORMAT_VERSION);
	EXPECT_ERR(&b, "missing END record: the file was cut short");
	rec_meta(&b, "a=b\n");
	EXPECT_ERR(&b, "missing END record: the file was cut short");
	/* data after END */
	rec_end_marker(&b);
	put(&b, "junk", 4);
	EXPECT_ERR(&b, "unexpected data after the END record: 4 bytes at offset");
	buf_free(&b);

	/* lengths that overflow when added to the offset */
	static const uint64_t huge[] = {UINT64_MAX, UINT64_MAX - 15, UINT64_MAX - 31,
					1ull << 63, 1ull << 32, 5};
	for (size_t i = 0; i < sizeof huge / sizeof huge[0]; i++) {
		header(&b, WP_FORMAT_VERSION);
		size_t r = rec_begin(&b, WP_REC_STACK);
		set_u64(&b, r + 8, huge[i]);
		put_u32(&b, 0); /* 4 payload bytes present */
		EXPECT_ERR(&b, "truncated: record STACK at offset 16 runs past end of file");
		buf_free(&b);
	}
	header(&b, WP_FORMAT_VERSION);
	size_t r = rec_begin(&b, 12345);
	set_u64(&b, r + 8, UINT64_MAX);
	EXPECT_ERR(&b, "truncated: record of type 12345 at offset 16 runs past end of file");
	buf_free(&b);
}

static void test_truncation(void)
{
	struct buf b;
	build_full(&b);
	unsigned bad = 0;
	for (size_t len = 0; len < b.len; len++) {
		char want[160];
		if (len == 0) {
			snprintf(want, sizeof want, "empty file");
		} else if (len < WP_HEADER_SIZE) {
			snprintf(want, sizeof want,
				 "truncated: the file is %zu bytes, shorter than the 16-byte header",
				 len);
		} else {
			/* the record the cut falls into */
			size_t k = 0;
			while (k + 1 < b.nrec && b.rec_off[k + 1] <= len)
				k++;
			size_t at = b.rec_off[k];
			if (len == at) {
				snprintf(want, sizeof want, "missing END record: the file was cut short");
			} else if (len < at + WP_RECORD_HEADER_SIZE) {
				snprintf(want, sizeof want,
					 "truncated: record header at offset %zu runs past end of "
					 "file (%zu of 16 bytes present)", at, len - at);
			} else {
				static const char *names[] = {"", "META", "MODULE", "THREAD",
							      "STACK", "TIMELINE", "END"};
				char name[32];
				if (b.rec_type[k] < 7)
					snprintf(name, sizeof name, "%s", names[b.rec_type[k]]);
				else
					snprintf(name, sizeof name, "of type %u", b.rec_type[k]);
				snprintf(want, sizeof want,
					 "truncated: record %s at offset %zu runs past end of file",
					 name, at);
			}
		}
		int before = failed;
		expect_err_at(b.d, len, want, __LINE__);
		if (failed != before && ++bad > 5) {
			fprintf(stderr, "(stopping the truncation test after 5 failures)\n");
			break;
		}
	}
	buf_free(&b);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* Parses arbitrary bytes: either an error with a message or a profile that can be walked. */
static int parse_any(const uint8_t *d, size_t len)
{
	struct wp_profile *p = NULL;
	char e[256];
	e[0] = 0;
	int rc = wp_profile_parse(d, len, &p, e, sizeof e);
	if (rc == 0) {
		if (!p)
			return -1;
		volatile uint64_t h = walk(p);
		(void)h;
		wp_profile_free(p);
		return 0;
	}
	if (rc != -1 || p != NULL || e[0] == '\0')
		return -1;
	return 0;
}

static void test_corruption(void)
{
	void (*builders[])(struct buf *) = {build_full, build_small};
	for (size_t bi = 0; bi < 2; bi++) {
		struct buf b;
		builders[bi](&b);
		uint8_t *copy = malloc(b.len);
		unsigned bad = 0, ok = 0, errs = 0;
		/* every bit of every byte */
		for (size_t i = 0; i < b.len; i++) {
			for (int bit = 0; bit < 8; bit++) {
				memcpy(copy, b.d, b.len);
				copy[i] ^= (uint8_t)(1u << bit);
				struct wp_profile *p = NULL;
				if (wp_profile_parse(copy, b.len, &p, errbuf, sizeof errbuf) == 0) {
					walk(p);
					wp_profile_free(p);
					ok++;
				} else if (p != NULL || errbuf[0] == '\0') {
					bad++;
				} else {
					errs++;
				}
			}
			/* and the extreme values */
			static const uint8_t vals[] = {0x00, 0xff, 0x80, 0x7f};
			for (size_t v = 0; v < sizeof vals; v++) {
				memcpy(copy, b.d, b.len);
				copy[i] = vals[v];
				if (parse_any(copy, b.len) < 0)
					bad++;
			}
		}
		CHECK(bad == 0);
		CHECK(ok > 0 && errs > 0);
		/* random multi-byte damage, including truncation */
		for (int iter = 0; iter < 20000; iter++) {
			memcpy(copy, b.d, b.len);
			int nflips = 1 + (int)(rng() % 8);
			for (int k = 0; k < nflips; k++)
				copy[rng() % b.len] = (uint8_t)rng();
			size_t len = (rng() % 4) ? b.len : (size_t)(rng() % (b.len + 1));
			if (parse_any(copy, len) < 0)
				bad++;
		}
		CHECK(bad == 0);
		free(copy);
		buf_free(&b);
	}
}

/* One specific defect each: the message must say what is wrong. */
static void test_specific_errors(void)
{
	struct buf b;
	static const uint64_t pcs[] = {1, 2, 3};
	static const uint64_t tl1[][2] = {{5, 1}};

#define BASE()                                                                                \
	do {                                                                                  \
		header(&b, WP_FORMAT_VERSION);                                                \
		rec_thread(&b, 10, 0, 1, 1, 0, 0, 1, "t");                                    \
	} while (0)

	/* duplicate stack ids */
	BASE();
	rec_stack(&b, 12, 10, 0, 1, 1, pcs, 1);
	rec_stack(&b, 3, 10, 0, 1, 1, pcs, 1);
	rec_stack(&b, 12, 10, 0, 1, 1, pcs, 2);
	rec_end_marker(&b);
	EXPECT_ERR(&b, "duplicate stack id 12");
	buf_free(&b);

	/* a stack of a thread without a THREAD record */
	BASE();
	rec_stack(&b, 12, 99, 0, 1, 1, pcs, 1);
	rec_end_marker(&b);
	EXPECT_ERR(&b, "stack 12 refers to thread 99, which has no THREAD record");
	buf_free(&b);

	/* a timeline of a thread without a THREAD record */
	BASE();
	rec_stack(&b, 1, 10, 0, 1, 1, pcs, 1);
	rec_timeline(&b, 77, tl1, 1);
	rec_end_marker(&b);
	EXPECT_ERR(&b, "is for thread 77, which has no THREAD record");
	buf_free(&b);

	/* a timeline entry naming an unknown stack (dense ids: bitmap path) */
	BASE();
	rec_stack(&b, 1, 10, 0, 1, 1, pcs, 1);
	static const uint64_t tl_bad[][2] = {{5, 1}, {6, 1}, {7, 42}};
	rec_timeline(&b, 10, tl_bad, 3);
	rec_end_marker(&b);
	EXPECT_ERR(&b, "entry 2 refers to stack 42, which has no STACK record");
	buf_free(&b);

	/* the same with sparse ids (binary search path) */
	BASE();
	rec_stack(&b, 4000000000u, 10, 0, 1, 1, pcs, 1);
	rec_stack(&b, 7, 10, 0, 1, 1, pcs, 1);
	static const uint64_t tl_sp[][2] = {{5, 4000000000u}, {6, 7}, {7, 4000000000u}, {8, 8}};
	rec_timeline(&b, 10, tl_sp, 4);
	rec_end_marker(&b);
	EXPECT_ERR(&b, "entry 3 refers to stack 8, which has no STACK record");
	buf_free(&b);

	/* timeline entries without any stack at all */
	BASE();
	rec_timeline(&b, 10, tl1, 1);
	rec_end_marker(&b);
	EXPECT_ERR(&b, "entry 0 refers to stack 1, which has no STACK record");
	buf_free(&b);

	/* a stack id beyond 32 bits */
	BASE();
	rec_stack(&b, 1, 10, 0, 1, 1, pcs, 1);
	static const uint64_t tl_big[][2] = {{5, 1ull << 32}};
	rec_timeline(&b, 10, tl_big, 1);
	rec_end_marker(&b);
	EXPECT_ERR(&b, "has stack id 4294967296, out of range");
	buf_free(&b);

	/* varints: 10 bytes is the maximum (UINT64_MAX), 11 is too long, a 10th byte > 1
	 * overflows, and one may not run past the record */
	for (int v = 0; v < 4; v++) {
		BASE();
		rec_stack(&b, 1, 10, 0, 1, 1, pcs, 1);
		size_t r = rec_begin(&b, WP_REC_TIMELINE);
		put_u32(&b, 10);
		put_u32(&b, 0);
		put_u64(&b, 1);
		if (v == 0) { /* UINT64_MAX us as 10 bytes: fine */
			put_varint(&b, UINT64_MAX);
			put_varint(&b, 1);
		} else if (v == 1) {
			put(&b, "\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x00", 11);
			put_varint(&b, 1);
		} else if (v == 2) {
			put(&b, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02", 10);
			put_varint(&b, 1);
		} else {
			put_varint(&b, 1);
			put(&b, "\x81\x80", 2);
		}
		rec_end(&b, r);
		rec_end_marker(&b);
		if (v == 0) {
			struct wp_profile *p = parse_ok(&b);
			if (p) {
				CHECK_EQ_U(p->timeline[0].t_us, UINT64_MAX);
				wp_profile_free(p);
			}
		} else if (v == 3) {
			EXPECT_ERR(&b, "the stack id of entry 0 runs past the end of the record");
		} else {
			EXPECT_ERR(&b, "the time delta of entry 0 is a varint longer than 10 bytes");
		}
		buf_free(&b);
	}

	/* time overflowing 64 bits */
	BASE();
	rec_stack(&b, 1, 10, 0, 1, 1, pcs, 1);
	size_t r = rec_begin(&b, WP_REC_TIMELINE);
	put_u32(&b, 10);
	put_u32(&b, 0);
	put_u64(&b, 2);
	put_varint(&b, UINT64_MAX - 1);
	put_varint(&b, 1);
	put_varint(&b, 2);
	put_varint(&b, 1);
	rec_end(&b, r);
	rec_end_marker(&b);
	EXPECT_ERR(&b, "time overflows 64 bits at entry 1");
	buf_free(&b);

	/* a count larger than the payload can hold */
	BASE();
	rec_stack(&b, 1, 10, 0, 1, 1, pcs, 1);
	r = rec_begin(&b, WP_REC_TIMELINE);
	put_u32(&b, 10);
	put_u32(&b, 0);
	put_u64(&b, 3);
	put_varint(&b, 1);
	put_varint(&b, 1);
	put_varint(&b, 1);
	put_varint(&b, 1);
	rec_end(&b, r);
	rec_end_marker(&b);
	EXPECT_ERR(&b, "claims 3 entries but its 20-byte payload holds at most 2");
	set_u64(&b, r + WP_RECORD_HEADER_SIZE + 8, UINT64_MAX);
	EXPECT_ERR(&b, "claims 18446744073709551615 entries");
	buf_free(&b);

	/* a count the payload can hold by size, but the varints run out */
	BASE();
	rec_stack(&b, 1, 10, 0, 1, 1, pcs, 1);
	r = rec_begin(&b, WP_REC_TIMELINE);
	put_u32(&b, 10);
	put_u32(&b, 0);
	put_u64(&b, 2);
	put_varint(&b, 300);
	put_varint(&b, 1);
	put(&b, "\x80", 1);
	rec_end(&b, r);
	rec_end_marker(&b);
	EXPECT_ERR(&b, "the time delta of entry 1 runs past the end of the record");
	buf_free(&b);

	/* a timeline payload shorter than its header */
	BASE();
	r = rec_begin(&b, WP_REC_TIMELINE);
	put_u32(&b, 10);
	rec_end(&b, r);
	rec_end_marker(&b);
	EXPECT_ERR(&b, "record TIMELINE at offset 85: payload of 4 bytes is shorter than its "
		       "16-byte header");
	buf_free(&b);

	/* a thread's later record going back in time */
	BASE();
	rec_stack(&b, 1, 10, 0, 1, 1, pcs, 1);
	static const uint64_t tl_late[][2] = {{100, 1}, {200, 1}};
	static const uint64_t tl_early[][2] = {{150, 1}};
	rec_timeline(&b, 10, tl_late, 2);
	rec_timeline(&b, 10, tl_early, 1);
	rec_end_marker(&b);
	EXPECT_ERR(&b, "timeline of thread 10 goes back in time");
	buf_free(&b);

	/* too many frames; frames past the payload; a short stack record */
	BASE();
	rec_stack(&b, 12, 10, 0, 1, 1, big_pcs, WP_MAX_FRAMES);
	set_u32(&b, b.len - 8 * WP_MAX_FRAMES - 32 + 12, WP_MAX_FRAMES + 1);
	rec_end_marker(&b);
	EXPECT_ERR(&b, "stack 12 at offset 85 has 513 frames, more than the limit of 512");
	buf_free(&b);
	BASE();
	rec_stack(&b, 12, 10, 0, 1, 1, pcs, 3);
	set_u32(&b, b.len - 3 * 8 - 32 + 12, 4);
	rec_end_marker(&b);
	EXPECT_ERR(&b, "stack 12 at offset 85: 4 frames run past the end of its 56-byte record");
	buf_free(&b);
	BASE();
	r = rec_begin(&b, WP_REC_STACK);
	put_u64(&b, 1);
	rec_end(&b, r);
	rec_end_marker(&b);
	EXPECT_ERR(&b, "record STACK at offset 85: payload of 8 bytes is shorter than the 32 bytes");
	buf_free(&b);

	/* module limits and shapes */
	uint8_t bid[WP_MAX_BUILD_ID + 1];
	memset(bid, 0xab, sizeof bid);
	header(&b, WP_FORMAT_VERSION);
	rec_module(&b, 4, 0, 0x1000, 0x2000, 0, bid, WP_MAX_BUILD_ID, "/x");
	rec_end_marker(&b);
	{
		struct wp_profile *p = parse_ok(&b);
		if (p) {
			CHECK_EQ_U(p->modules[0].build_id_len, WP_MAX_BUILD_ID);
			CHECK(memcmp(p->modules[0].build_id, bid, WP_MAX_BUILD_ID) == 0);
			wp_profile_free(p);
		}
	}
	buf_free(&b);
	header(&b, WP_FORMAT_VERSION);
	rec_module(&b, 4, 0, 0x1000, 0x2000, 0, bid, WP_MAX_BUILD_ID + 1, "/x");
	rec_end_marker(&b);
	EXPECT_ERR(&b, "module 4 at offset 16: build-id of 65 bytes exceeds the limit of 64");
	buf_free(&b);
	char *longname = malloc(WP_MAX_NAME + 2);
	memset(longname, 'n', WP_MAX_NAME + 1);
	longname[WP_MAX_NAME + 1] = 0;
	header(&b, WP_FORMAT_VERSION);
	rec_module(&b, 4, 0, 0x1000, 0x2000, 0, NULL, 0, longname);
	rec_end_marker(&b);
	EXPECT_ERR(&b, "module 4 at offset 16: path of 4097 bytes exceeds the limit of 4096");
	buf_free(&b);
	header(&b, WP_FORMAT_VERSION);
	rec_thread(&b, 5, 0, 0, 0, 0, 0, 0, longname);
	rec_end_marker(&b);
	EXPECT_ERR(&b, "thread 5 at offset 16: name of 4097 bytes exceeds the limit of 4096");
	buf_free(&b);
	longname[WP_MAX_NAME] = 0; /* exactly at the limit: fine */
	header(&b, WP_FORMAT_VERSION);
	rec_thread(&b, 5, 0, 0, 0, 0, 0, 0, longname);
	rec_module(&b, 4, 0, 0x1000, 0x2000, 0, NULL, 0, longname);
	rec_end_marker(&b);
	{
		struct wp_profile *p = parse_ok(&b);
		if (p) {
			CHECK_EQ_U(strlen(p->threads[0].name), WP_MAX_NAME);
			CHECK_EQ_U(strlen(p->modules[0].path), WP_MAX_NAME);
			wp_profile_free(p);
		}
	}
	buf_free(&b);
	free(longname);
	header(&b, WP_FORMAT_VERSION);
	rec_module(&b, 4, 0, 0x2000, 0x2000, 0, NULL, 0, "/x");
	rec_end_marker(&b);
	EXPECT_ERR(&b, "module 4 at offset 16: start 0x2000 is not below end 0x2000");
	buf_free(&b);
	header(&b, WP_FORMAT_VERSION);
	rec_module(&b, 4, 0, 0x1000, 0x2000, 0, NULL, 0, "/x");
	set_u32(&b, b.len - 2 - 4, 3); /* path_len 3 with 2 bytes left */
	rec_end_marker(&b);
	EXPECT_ERR(&b, "module 4 at offset 16: build-id and path (0 + 3 bytes) run past the end");
	buf_free(&b);
	header(&b, WP_FORMAT_VERSION);
	rec_module(&b, 4, 0, 0x1000, 0x2000, 0, NULL, 0, "/a\0b");
	b.d[b.len - 1] = 0;
	rec_end_marker(&b);
	EXPECT_ERR(&b, "module 4 at offset 16: path contains a NUL byte");
	buf_free(&b);
	header(&b, WP_FORMAT_VERSION);
	r = rec_begin(&b, WP_REC_MODULE);
	put_u64(&b, 0);
	rec_end(&b, r);
	rec_end_marker(&b);
	EXPECT_ERR(&b, "record MODULE at offset 16: payload of 8 bytes is shorter than the 40 bytes");
	buf_free(&b);

	/* thread shapes */
	header(&b, WP_FORMAT_VERSION);
	rec_thread(&b, 5, 0, 0, 0, 0, 0, 0, "abc");
	set_u32(&b, b.len - 3 - 4, 4);
	rec_end_marker(&b);
	EXPECT_ERR(&b, "thread 5 at offset 16: name of 4 bytes runs past the end of its 55-byte record");
	buf_free(&b);
	header(&b, WP_FORMAT_VERSION);
	rec_thread(&b, 5, 0, 0, 0, 0, 0, 0, "abc");
	b.d[b.len - 2] = 0;
	rec_end_marker(&b);
	EXPECT_ERR(&b, "thread 5 at offset 16: name contains a NUL byte");
	buf_free(&b);
	header(&b, WP_FORMAT_VERSION);
	r = rec_begin(&b, WP_REC_THREAD);
	put_u32(&b, 5);
	rec_end(&b, r);
	rec_end_marker(&b);
	EXPECT_ERR(&b, "record THREAD at offset 16: payload of 4 bytes is shorter than the 52 bytes");
	buf_free(&b);

	/* META */
	header(&b, WP_FORMAT_VERSION);
	rec_meta(&b, "a=1\nthis line has no equals sign\nb=2\n");
	rec_end_marker(&b);
	EXPECT_ERR(&b, "META record at offset 16: line 2 has no '=' (\"this line has no equals sign\")");
	buf_free(&b);
	header(&b, WP_FORMAT_VERSION);
	rec_meta(&b, "=1\n");
	rec_end_marker(&b);
	EXPECT_ERR(&b, "META record at offset 16: line 1 has an empty key");
	buf_free(&b);
	header(&b, WP_FORMAT_VERSION);
	rec_meta(&b, "bad\x1b[31m\tline");
	rec_end_marker(&b);
	EXPECT_ERR(&b, "META record at offset 16: line 1 has no '=' (\"bad?[31m?line\")");
	buf_free(&b);
	header(&b, WP_FORMAT_VERSION);
	rec_meta(&b, "a=1\nb=2x");
	b.d[b.len - 1] = 0;
	rec_end_marker(&b);
	EXPECT_ERR(&b, "META record at offset 16 contains a NUL byte");
	buf_free(&b);
#undef BASE
}

static int write_file(const char *path, const void *d, size_t len)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	size_t n = fwrite(d, 1, len, f);
	if (fclose(f) != 0 || n != len)
		return -1;
	return 0;
}

static char tmpdir[256];

static void test_read_file(void)
{
	char path[512], err[256];
	struct wp_profile *p = NULL;
	struct buf b;
	build_full(&b);
	snprintf(path, sizeof path, "%s/full.prof", tmpdir);
	CHECK(write_file(path, b.d, b.len) == 0);
	CHECK(wp_profile_read(path, &p, err, sizeof err) == 0);
	if (p) {
		CHECK_EQ_U(p->nstacks, 4);
		CHECK_EQ_U(p->ntimeline, 8);
		CHECK_STR(wp_profile_meta(p, "mode"), "wall");
		wp_profile_free(p);
	}
	/* without the timelines: everything else the same */
	CHECK(wp_profile_read_some(path, WP_READ_NO_TIMELINE, &p, err, sizeof err) == 0);
	if (p) {
		CHECK_EQ_U(p->nstacks, 4);
		CHECK_EQ_U(p->nthreads, 3);
		CHECK_EQ_U(p->ntimeline, 0);
		CHECK_STR(wp_profile_meta(p, "mode"), "wall");
		wp_profile_free(p);
	}
	/* cut short on disk */
	CHECK(truncate(path, (off_t)b.len - 1) == 0);
	p = (struct wp_profile *)0x1;
	CHECK(wp_profile_read(path, &p, err, sizeof err) == -1 && p == NULL);
	CHECK(strstr(err, "truncated: record header") != NULL);
	unlink(path);
	buf_free(&b);

	snprintf(path, sizeof path, "%s/empty.prof", tmpdir);
	CHECK(write_file(path, "", 0) == 0);
	CHECK(wp_profile_read(path, &p, err, sizeof err) == -1);
	CHECK(strstr(err, "empty file") != NULL);
	unlink(path);

	snprintf(path, sizeof path, "%s/does-not-exist.prof", tmpdir);
	CHECK(wp_profile_read(path, &p, err, sizeof err) == -1);
	CHECK(strstr(err, "No such file or directory") != NULL);

	CHECK(wp_profile_read(tmpdir, &p, err, sizeof err) == -1);
	CHECK_STR(err, "not a regular file (a directory)");
	CHECK(wp_profile_read("/dev/null", &p, err, sizeof err) == -1);
	CHECK_STR(err, "not a regular file (a character device)");
	/* a FIFO without a writer: rejected at once, not waited on */
	snprintf(path, sizeof path, "%s/fifo.prof", tmpdir);
	CHECK(mkfifo(path, 0600) == 0);
	CHECK(wp_profile_read(path, &p, err, sizeof err) == -1);
	CHECK_STR(err, "not a regular file (a pipe)");
	unlink(path);

	/* larger than 4 GiB (sparse: no disk used) */
	snprintf(path, sizeof path, "%s/huge.prof", tmpdir);
	int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	CHECK(fd >= 0);
	if (fd >= 0) {
		if (ftruncate(fd, (off_t)(4ull << 30) + 1) == 0) {
			CHECK(wp_profile_read(path, &p, err, sizeof err) == -1);
			CHECK(strstr(err, "larger than the 4 GiB limit") != NULL);
		} else {
			fprintf(stderr, "note: cannot make a sparse 4 GiB file here: %s\n",
				strerror(errno));
		}
		close(fd);
		unlink(path);
	}
	/* errlen 0 and a tiny errlen must not overflow */
	CHECK(wp_profile_read(tmpdir, &p, NULL, 0) == -1);
	char tiny[4];
	CHECK(wp_profile_read(tmpdir, &p, tiny, sizeof tiny) == -1 && strlen(tiny) == 3);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Ten million samples (the size of a long run) must read well under a second. */
static void test_performance(void)
{
	enum { NTHREADS = 16, NFLUSH = 50, PER = 12500, NSTACKS = 20000 };
	struct buf b;
	header(&b, WP_FORMAT_VERSION);
	rec_meta(&b, "mode=wall\nhz=99\n");
	for (uint32_t t = 0; t < NTHREADS; t++)
		rec_thread(&b, 1000 + t, 0, 0, 0, 0, 0, 0, "worker");
	uint64_t pcs[24];
	for (int i = 0; i < 24; i++)
		pcs[i] = 0x400000 + 16 * (uint64_t)i;
	for (uint32_t s = 0; s < NSTACKS; s++)
		rec_stack(&b, s, 1000 + s % NTHREADS, 0, 1, 1, pcs, 8 + s % 16);
	uint64_t t_thread[NTHREADS] = {0};
	uint64_t x = 12345;
	for (int f = 0; f < NFLUSH; f++) {
		for (uint32_t t = 0; t < NTHREADS; t++) {
			size_t r = rec_begin(&b, WP_REC_TIMELINE);
			put_u32(&b, 1000 + t);
			put_u32(&b, 0);
			put_u64(&b, PER);
			uint64_t prev = 0;
			for (int k = 0; k < PER; k++) {
				t_thread[t] += 10101;
				x = x * 6364136223846793005ull + 1442695040888963407ull;
				put_varint(&b, t_thread[t] - prev);
				put_varint(&b, (x >> 33) % NSTACKS);
				prev = t_thread[t];
			}
			rec_end(&b, r);
		}
	}
	rec_end_marker(&b);

	char path[512], err[256];
	snprintf(path, sizeof path, "%s/big.prof", tmpdir);
	CHECK(write_file(path, b.d, b.len) == 0);
	size_t file_len = b.len;
	buf_free(&b);

	struct wp_profile *p = NULL;
	double best = 1e9;
	for (int rep = 0; rep < 3; rep++) {
		double t0 = now();
		int rc = wp_profile_read(path, &p, err, sizeof err);
		double dt = now() - t0;
		CHECK(rc == 0);
		if (rc != 0) {
			fprintf(stderr, "read failed: %s\n", err);
			break;
		}
		if (dt < best)
			best = dt;
		CHECK_EQ_U(p->ntimeline, (uint64_t)NTHREADS * NFLUSH * PER);
		CHECK_EQ_U(p->nstacks, NSTACKS);
		/* grouped by thread, in time order */
		int ordered = 1;
		for (size_t i = 1; i < p->ntimeline; i++)
			if (p->timeline[i].tid == p->timeline[i - 1].tid &&
			    p->timeline[i].t_us <= p->timeline[i - 1].t_us)
				ordered = 0;
		CHECK(ordered);
		CHECK_EQ_U(p->timeline[0].tid, 1000);
		CHECK_EQ_U(p->timeline[p->ntimeline - 1].tid, 1000 + NTHREADS - 1);
		CHECK_EQ_U(p->timeline[p->ntimeline - 1].t_us, 10101ull * NFLUSH * PER);
		wp_profile_free(p);
		p = NULL;
	}
	unlink(path);
	fprintf(stderr, "performance: %d samples (%zu MB file) read in %.0f ms\n",
		NTHREADS * NFLUSH * PER, file_len >> 20, best * 1000);
	/* Speed is measured (printed above) and benchmarked (scripts/bench), never asserted in a
	 * test: a loaded or instrumented machine would make it fail for no fault of the code. */
}

static int write_corpus(const char *dir)
{
	void (*builders[])(struct buf *) = {build_full, build_minimal, build_small};
	static const char *names[] = {"full.prof", "minimal.prof", "small.prof"};
	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		fprintf(stderr, "cannot create %s: %s\n", dir, strerror(errno));
		return 1;
	}
	for (size_t i = 0; i < 3; i++) {
		struct buf b;
		builders[i](&b);
		char path[4096];
		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		if (write_file(path, b.d, b.len) < 0) {
			fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
			buf_free(&b);
			return 1;
		}
		buf_free(&b);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--write-corpus") == 0)
		return write_corpus(argv[2]);
	if (argc != 1) {
		fprintf(stderr, "usage: %s [--write-corpus DIR]\n", argv[0]);
		return 2;
	}
	const char *base = getenv("TMPDIR");
	snprintf(tmpdir, sizeof tmpdir, "%s/wp-test-read-XXXXXX", base && *base ? base : "/tmp");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 2;
	}

	test_roundtrip();
	test_module_overlap();
	test_meta_values();
	test_end();
	test_forward_compat();
	test_thread_unseen();
	test_waits();
	test_lasts();
	test_header_errors();
	test_framing_errors();
	test_truncation();
	test_specific_errors();
	test_corruption();
	test_read_file();
	test_performance();

	rmdir(tmpdir);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
