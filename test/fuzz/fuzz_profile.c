/* SPDX-License-Identifier: MIT */
/* libFuzzer target for the profile reader: any bytes must give either an error message or a
 * profile whose every field and lookup can be used. Build with -Dfuzz=true (clang); run with
 * scripts/fuzz. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint64_t sink;

static void walk(const struct wp_profile *p)
{
	uint64_t h = 0;
	for (size_t i = 0; i < p->nmeta; i++) {
		h += strlen(p->meta[i].key) + strlen(p->meta[i].value);
		if (wp_profile_meta(p, p->meta[i].key) == NULL)
			abort(); /* a key that is there must be found */
		h += (uint64_t)wp_profile_meta_ll(p, p->meta[i].key, 0);
	}
	for (size_t i = 0; i < p->nmodules; i++) {
		const struct wp_module *m = &p->modules[i];
		if (m->build_id_len > WP_MAX_BUILD_ID || m->start >= m->end ||
		    strlen(m->path) > WP_MAX_NAME)
			abort();
		if (i > 0 && p->modules[i - 1].start > m->start)
			abort(); /* sorted by start */
		for (uint32_t k = 0; k < m->build_id_len; k++)
			h += m->build_id[k];
		const struct wp_module *at = wp_profile_module_at(p, m->start);
		if (!at || at->start > m->start || m->start >= at->end)
			abort();
		h += m->file_offset + m->flags + m->id;
		h += wp_profile_module_at(p, m->end) != NULL;
		h += wp_profile_module_at(p, m->start - 1) != NULL;
	}
	for (size_t i = 0; i < p->nthreads; i++) {
		const struct wp_thread *t = &p->threads[i];
		const struct wp_thread *found = wp_profile_thread(p, t->tid);
		if (!found || found->tid != t->tid || strlen(t->name) > WP_MAX_NAME)
			abort();
		h += t->flags + t->samples + t->running + t->waiting + t->first_ns + t->last_ns;
	}
	for (size_t i = 0; i < p->nstacks; i++) {
		const struct wp_stack *s = &p->stacks[i];
		if (i > 0 && p->stacks[i - 1].id >= s->id)
			abort(); /* sorted, unique */
		if (wp_profile_stack(p, s->id) != s || s->nframes > WP_MAX_FRAMES ||
		    !wp_profile_thread(p, s->tid))
			abort();
		for (uint32_t k = 0; k < s->nframes; k++) {
			const struct wp_module *m = wp_profile_module_at(p, s->pcs[k]);
			if (m && (s->pcs[k] < m->start || s->pcs[k] >= m->end))
				abort();
			h += s->pcs[k];
		}
		h += s->count + s->weight_ns + s->flags;
	}
	for (size_t i = 0; i < p->ntimeline; i++) {
		const struct wp_tl_entry *e = &p->timeline[i];
		if (!wp_profile_stack(p, e->stack_id) || !wp_profile_thread(p, e->tid))
			abort();
		if (i > 0 && p->timeline[i - 1].tid == e->tid && p->timeline[i - 1].t_us > e->t_us)
			abort(); /* per thread in time order */
		h += e->t_us;
	}
	h += wp_profile_total_samples(p) + wp_profile_total_weight_ns(p);
	sink = h;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wp_profile *p = NULL;
	char err[256];
	err[0] = '\0';
	if (wp_profile_parse(data, size, &p, err, sizeof err) == 0) {
		if (!p)
			abort();
		walk(p);
		wp_profile_free(p);
	} else if (p != NULL || err[0] == '\0') {
		abort(); /* a failure leaves no profile and always says why */
	}
	return 0;
}
