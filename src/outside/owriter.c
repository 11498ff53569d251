/* SPDX-License-Identifier: MIT */
/* The outside sampler's profile file: owriter.h says what. */
#include "owriter.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/stacks.h"
#include "agent/waits.h"
#include "common/format.h"
#include "osample.h"
#include "rmodules.h"

static FILE *out;

static void put(const void *p, size_t n)
{
	if (n)
		fwrite(p, 1, n, out);
}

static void record(uint32_t type, const void *fixed, size_t len, uint64_t more)
{
	struct wp_rec_header h = { .type = type, .reserved = 0, .len = len + more };
	put(&h, sizeof(h));
	put(fixed, len);
}

static void write_modules(void)
{
	for (size_t i = 0; i < wp_modules_history_count(); i++) {
		const struct wp_module_rec *m = wp_modules_history_at(i);
		uint32_t plen = (uint32_t)strlen(m->path);
		struct wp_rec_module r = { .id = (uint32_t)i, .flags = m->flags, .start = m->start,
					   .end = m->end, .file_offset = m->file_offset,
					   .build_id_len = m->build_id_len, .path_len = plen };
		record(WP_REC_MODULE, &r, sizeof(r), (uint64_t)r.build_id_len + plen);
		put(m->build_id, m->build_id_len);
		put(m->path, plen);
	}
}

static void write_threads(void)
{
	for (struct wp_athread *t = wp_othreads_all(); t; t = wp_othread_next(t)) {
		struct wp_rec_thread r = { .tid = (uint32_t)t->tid, .flags = t->flags,
					   .samples = t->samples, .running = t->running,
					   .waiting = t->waiting, .first_ns = t->first_ns,
					   .last_ns = t->last_ns,
					   .name_len = (uint32_t)strnlen(t->name, sizeof(t->name)) };
		uint64_t unseen = 0;
		uint32_t why_len = 0;
		record(WP_REC_THREAD, &r, sizeof(r),
		       (uint64_t)r.name_len + sizeof(unseen) + sizeof(why_len));
		put(t->name, r.name_len);
		put(&unseen, sizeof(unseen));
		put(&why_len, sizeof(why_len));
	}
}

static void write_stacks(void)
{
	for (struct wp_stack_entry *e = wp_stacks_all(); e; e = e->hh.next) {
		struct wp_rec_stack r = { .id = e->id, .tid = e->tid, .flags = e->flags,
					  .nframes = e->nframes, .count = e->count,
					  .weight_ns = e->weight_ns };
		record(WP_REC_STACK, &r, sizeof(r), (uint64_t)e->nframes * 8);
		put(e->pcs, (size_t)e->nframes * 8);
	}
}

static void write_waits(void)
{
	for (struct wp_wait_entry *e = wp_waits_all(); e; e = e->hh.next) {
		if (!e->count)
			continue;
		struct wp_rec_wait r = { .stack_id = e->key.stack_id, .nr = e->key.nr,
					 .a0 = e->key.a0, .a1 = e->key.a1, .a2 = e->key.a2,
					 .aux = e->key.aux, .count = e->count,
					 .weight_ns = e->weight_ns, .target_len = e->target_len };
		uint32_t holder_stack = e->key.holder_stack; /* (UINT32_MAX: none) */
		uint64_t cond_mutex = e->key.cond_mutex;
		record(WP_REC_WAIT, &r, sizeof(r),
		       (uint64_t)r.target_len + sizeof(holder_stack) + sizeof(cond_mutex));
		put(e->target, r.target_len);
		put(&holder_stack, sizeof(holder_stack));
		put(&cond_mutex, sizeof(cond_mutex));
	}
}

/* Each live thread's last sample (format.h's WP_REC_LAST), as the agent's writer gives it:
 * what a detached profile's deadlock check reads (a loop of lock waits that held until the
 * detach). A lock's holder is read again now from the target's memory (waits.c): a thread
 * that took the lock after its sample is not waiting for it. */
static void write_lasts(void)
{
	for (struct wp_athread *t = wp_othreads_all(); t; t = wp_othread_next(t)) {
		struct wp_rec_last r;
		if (wp_waits_last_record(t, (uint32_t)t->tid, &r))
			record(WP_REC_LAST, &r, sizeof(r), 0);
	}
}

static void write_timelines(void)
{
	for (struct wp_athread *t = wp_othreads_all(); t; t = wp_othread_next(t)) {
		if (!t->tl_count)
			continue;
		struct wp_rec_timeline r = { .tid = (uint32_t)t->tid, .count = t->tl_count };
		record(WP_REC_TIMELINE, &r, sizeof(r), t->tl_len);
		put(t->tl, t->tl_len);
	}
}

int wp_owriter_write(const char *path, const char *meta)
{
	char tmp[4096];
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
	out = fopen(tmp, "wxe");
	if (!out)
		return -errno;
	struct wp_file_header h = { .version = WP_FORMAT_VERSION, .header_size = WP_HEADER_SIZE };
	memcpy(h.magic, WP_MAGIC, WP_MAGIC_LEN);
	put(&h, sizeof(h));
	record(WP_REC_META, meta, strlen(meta), 0);
	write_modules();
	write_threads();
	write_stacks();
	write_waits();
	write_lasts();
	write_timelines();
	record(WP_REC_END, NULL, 0, 0);
	int bad = ferror(out);
	if (fclose(out) != 0 || bad || rename(tmp, path) != 0) {
		int e = errno ? errno : EIO;
		unlink(tmp);
		return -e;
	}
	return 0;
}
