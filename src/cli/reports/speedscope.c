/* SPDX-License-Identifier: MIT */
/* --format=speedscope: the speedscope file format (JSON, "$schema"
 * https://www.speedscope.app/file-format-schema.json), for https://www.speedscope.app or
 * `npx speedscope FILE`.
 *
 * - "shared.frames": one frame per resolved function (name, and its hottest source file and
 *   line; the module's name as the file when there is no line information), so a function is
 *   one node of the flame graph whatever line it was sampled at, as in the folded report.
 * - One "sampled" profile per thread (threads in file order, one per tid), named
 *   "NAME (tid N)", unit nanoseconds, on the run's clock: startValue 0, endValue the run's
 *   duration. Samples are root-first frame indices.
 * - From the TIMELINE, each thread's samples in time order, at their times: a sample at t
 *   weighs the time until the thread's next sample (the last one: what it stands for, its
 *   stack's weight_ns / count, i.e. the interval). In cpu mode a gap longer than 1.5 times
 *   what the sample stands for means the thread was off CPU: the sample then weighs what it
 *   stands for and the rest of the gap is idle (in wall mode only an absurd gap, over 100
 *   times, is). Idle time (also before the thread's first sample and after its last) is an
 *   empty sample, which speedscope treats as idle, so every thread spans the run and the
 *   threads line up in the time-order view. Consecutive samples with the same frames are
 *   merged (speedscope would merge them anyway).
 * - A waiting sample ends with the frame "[wait KIND OBJECT]" (a running one's share that
 *   waited for a CPU with "[wait cpu runqueue]": the model's rule, wp_rwait_adds_frame;
 *   with --wait-leaves=on the stack's leaf is that frame) and, for a lock whose holder
 *   is a thread of the profile, "[held by NAME tid=N]" (the folded --waits form; frames of
 *   shared.frames after the functions', without a file). The timeline says which stack a
 *   sample had, not which of its waits: a stack whose waits split over several objects (or,
 *   with --wait-leaves=on, over the stacks split off it) has its timeline samples dealt out
 *   among them in proportion to their counts (deal_wait), right over the run but not sample
 *   by sample; a stack with one wait is exact.
 * - A thread whose timeline is missing, or any thread when the agent stopped recording the
 *   timeline at its memory budget (META timeline_truncated=1), falls back to its
 *   stacks, one sample per distinct stack (and wait) weighing its weight_ns (count x
 *   interval), not in time order; the profile name and the "exporter" field say so.
 * Strings are escaped for JSON; invalid UTF-8 becomes U+FFFD. The --thread filter applies. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "uthash_cfg.h"

#include "alloc.h"
#include "cli.h"
#include "deadlock_model.h"
#include "textfmt.h"


static void json_str(FILE *out, const char *s)
{
	wp_json_str(out, s);
}

/* ---- per-thread indexes ---- */

struct tid_ent {
	UT_hash_handle hh;
	uint32_t tid;
	size_t tl_start, tl_n; /* its run in p->timeline */
	uint64_t samples;      /* sum of its stacks' counts */
	int split;             /* entries not in one run: not trusted */
	int done;              /* profile written */
};

static struct tid_ent *tid_get(struct tid_ent **h, uint32_t tid)
{
	struct tid_ent *t;
	HASH_FIND(hh, *h, &tid, sizeof(tid), t);
	if (!t) {
		t = calloc(1, sizeof(*t));
		if (!t)
			return NULL;
		t->tid = tid;
		HASH_ADD(hh, *h, tid, sizeof(t->tid), t);
	}
	return t;
}

/* ---- one profile's samples, consecutive equal stacks merged ---- */

/* The frames that end a waiting sample (waits of the model): "[wait KIND OBJECT]", then
 * "[held by NAME tid=N]" when a lock's holder is known. Each distinct name is one frame of
 * shared.frames, after the functions: index nfuncs + its number. */
struct wframe {
	UT_hash_handle hh;
	uint32_t index;
	char name[];
};

struct wframes {
	struct wframe *by_name;
	struct wframe **order; /* by index - nfuncs */
	size_t n, cap;
	uint32_t base;         /* nfuncs */
	uint32_t *of_wait;     /* per wait of the model: its two frames (UINT32_MAX: none) */
};

/* A sample's stack and the wait frames after its leaf (nw of them). */
struct part {
	const struct wp_rstack *s; /* NULL: idle */
	uint32_t wf[2];
	uint32_t nw;
};

struct emitter {
	FILE *out;
	const struct wp_resolved *r;
	struct part pending;
	uint64_t pending_w;
	int have_pending;
	int nsamples;
	/* weights are written after the samples: kept here */
	uint64_t *weights;
	size_t nweights, capweights;
	uint64_t total;
	int oom;
};

static int same_frames(const struct part *x, const struct part *y)
{
	const struct wp_rstack *a = x->s, *b = y->s;
	if (x->nw != y->nw || (x->nw && memcmp(x->wf, y->wf, x->nw * sizeof(x->wf[0]))))
		return 0;
	if (a == b)
		return 1;
	if (!a || !b || a->n != b->n)
		return 0;
	for (uint32_t i = 0; i < a->n; i++)
		if (a->frames[i].func != b->frames[i].func)
			return 0;
	return 1;
}

static void flush_pending(struct emitter *em)
{
	if (!em->have_pending || !em->pending_w)
		return;
	if (wp_grow(&em->weights, &em->capweights, em->nweights + 1, sizeof(*em->weights))) {
		em->oom = 1;
		return;
	}
	em->weights[em->nweights++] = em->pending_w;
	fputs(em->nsamples++ ? ",[" : "[", em->out);
	const struct wp_rstack *s = em->pending.s;
	for (uint32_t i = 0; s && i < s->n; i++)
		fprintf(em->out, i ? ",%u" : "%u", s->frames[i].func);
	for (uint32_t i = 0; s && i < em->pending.nw; i++)
		fprintf(em->out, ",%u", em->pending.wf[i]);
	putc(']', em->out);
	em->have_pending = 0;
}

/* Adds a sample of part pt (pt.s NULL: idle) weighing w ns. */
static void emit(struct emitter *em, struct part pt, uint64_t w)
{
	if (!pt.s || !pt.s->n)
		pt = (struct part){ 0 }; /* a stack without frames shows as idle */
	if (!w)
		return;
	em->total += w;
	if (em->have_pending && same_frames(&em->pending, &pt)) {
		em->pending_w += w;
		return;
	}
	flush_pending(em);
	em->pending = pt;
	em->pending_w = w;
	em->have_pending = 1;
}

static const struct part idle = { 0 };

/* Stack s with no wait frames, or with those of its k-th wait: its "[wait ...]" frame unless
 * s ends in it already (wp_rwait_adds_frame), and its "[held by ...]". */
static struct part part_of(const struct wframes *wf, const struct wp_resolved *r,
			   const struct wp_rstack *s, int k)
{
	struct part pt = { .s = s };
	if (k < 0)
		return pt;
	const uint32_t *f = &wf->of_wait[2 * (size_t)(&s->waits[k] - r->waits)];
	for (int i = wp_rwait_adds_frame(r, s) ? 0 : 1; i < 2; i++)
		if (f[i] != UINT32_MAX)
			pt.wf[pt.nw++] = f[i];
	return pt;
}

/* A stack of the model and one of its waits (-1: its samples with no wait). */
struct pick {
	const struct wp_rstack *s;
	int k;
};

/* Credits candidate (m, k) with its c samples; *top is the credit furthest ahead so far. */
static void bid(int64_t *cr, uint64_t c, const struct wp_rstack *m, int k, struct pick *best,
		int64_t **top)
{
	if (!c)
		return;
	*cr += (int64_t)c;
	if (!*top || *cr > **top) {
		*top = cr;
		*best = (struct pick){ m, k };
	}
}

/* The timeline says which stack of the profile each sample had, not which of its waits: the
 * samples of a stack whose waits split over several objects are dealt out among them in
 * proportion to their counts (wp_rwait_samples), interleaved (smooth weighted round robin:
 * each part gains its count at every sample, the one furthest ahead is taken and pays the
 * stack's total), so a thread's share per object is right over the run, not sample by
 * sample. A stack with one wait (the common case) is exact. The parts are s's waits, its
 * samples with no wait, and with --wait-leaves=on the stacks split off it (s->leaf0: the
 * profile's stack id finds s alone). `credit`: per wait of the model, then per stack (its
 * samples with no wait), zeroed at the start. */
static struct pick deal_wait(const struct wp_resolved *r, const struct wp_rstack *s,
			     int64_t *credit)
{
	struct pick best = { s, -1 };
	int64_t *top = NULL;
	uint64_t total = 0;
	for (uint32_t i = 0; s && (s->nwaits || s->nleaves) && i <= s->nleaves; i++) {
		const struct wp_rstack *m = i ? &r->stacks[s->leaf0 + i - 1] : s;
		for (uint32_t k = 0; k < m->nwaits; k++)
			bid(&credit[&m->waits[k] - r->waits], wp_rwait_samples(m, k), m, (int)k,
			    &best, &top);
		bid(&credit[r->nwaits + (size_t)(m - r->stacks)], wp_rstack_unwaited(m), m, -1,
		    &best, &top);
		total += m->count;
	}
	if (top)
		*top -= (int64_t)total;
	return best;
}

/* What one sample of the profile's stack s (with the stacks split off it) stands for. */
static uint64_t per_sample(const struct wp_resolved *r, const struct wp_rstack *s,
			   uint64_t interval)
{
	uint64_t n = 0, w = 0;
	for (uint32_t i = 0; s && i <= s->nleaves; i++) {
		const struct wp_rstack *m = i ? &r->stacks[s->leaf0 + i - 1] : s;
		n += m->count;
		w += m->weight_ns;
	}
	return n && w ? w / n : interval;
}

/* How long sample i of a thread lasts on the time axis, at `start`, `next` being the time of
 * the thread's next sample (0: none) and w what the sample stands for. The rest of the gap
 * to the next sample is idle. */
static uint64_t duration_of(int cpu, uint64_t start, uint64_t next, uint64_t w)
{
	if (!next || next <= start)
		return w;
	uint64_t gap = next - start;
	/* wall: the thread was alive between the two samples (the sampler was late, or looked
	 * at other threads), so the sample lasts until the next one, unless the gap is absurd;
	 * cpu: a gap much longer than the CPU time the sample pays for is time off CPU. */
	uint64_t limit = cpu ? w + w / 2 : 100 * w;
	return gap <= limit ? gap : w;
}

/* The timeline has one entry per sample taken; a thread's sample count can be larger (a
 * sample of a late tick counts for the intervals it covers), so the two are not compared.
 * Only a thread with no entries, or a timeline the agent stopped recording, falls back. */
static int no_timeline(const struct wp_profile *p, const struct tid_ent *te)
{
	return te->tl_n == 0 || te->split || p->info.timeline_truncated;
}

/* `origin`: when process `proc` started, after the first process of the report (its
 * timeline's times are from its own start). */
static void timeline_samples(struct emitter *em, const struct wframes *wf, int64_t *credit,
			     uint32_t proc, uint64_t origin, const struct tid_ent *te,
			     uint64_t interval, int cpu, uint64_t *cursor)
{
	const struct wp_profile *p = em->r->procs[proc];
	const struct wp_tl_entry *tl = p->timeline + te->tl_start;
	uint64_t at = 0;
	for (size_t i = 0; i < te->tl_n; i++) {
		const struct wp_rstack *s = wp_resolved_stack_of(em->r, proc, tl[i].stack_id);
		uint64_t t = tl[i].t_us * 1000 + origin;
		uint64_t start = t > at ? t : at;
		if (start > at)
			emit(em, idle, start - at);
		uint64_t next = i + 1 < te->tl_n ? tl[i + 1].t_us * 1000 + origin : 0;
		uint64_t d = duration_of(cpu, start, next, per_sample(em->r, s, interval));
		struct pick pk = deal_wait(em->r, s, credit);
		emit(em, part_of(wf, em->r, pk.s, pk.k), d);
		at = start + d;
	}
	*cursor = at;
}

/* Without a timeline: each stack's weight, split over its waits (the waits' own weights;
 * the samples with no wait known take the rest). */
static void stack_samples(struct emitter *em, const struct wframes *wf, uint32_t proc,
			  uint32_t tid, uint64_t interval, uint64_t *cursor)
{
	const struct wp_resolved *r = em->r;
	uint64_t at = 0;
	for (size_t i = 0; i < r->nstacks; i++) {
		const struct wp_rstack *s = &r->stacks[i];
		if (s->proc != proc || s->tid != tid || !s->count)
			continue;
		uint64_t w = s->weight_ns ? s->weight_ns : s->count * interval;
		uint64_t rest = s->count, rest_w = w;
		for (uint32_t k = 0; k < s->nwaits; k++) {
			uint64_t c = wp_rwait_samples(s, k);
			if (!c)
				continue;
			rest -= c;
			uint64_t wk = s->weight_ns ? s->waits[k].weight_ns : c * interval;
			if (wk > rest_w || !rest)
				wk = rest_w; /* the last part takes what the rounding left */
			rest_w -= wk;
			emit(em, part_of(wf, r, s, (int)k), wk);
		}
		emit(em, part_of(wf, r, s, -1), rest_w); /* nothing when rest_w is 0 */
		at += w;
	}
	*cursor = at;
}

/* The wait frame named `name`, added when new. Returns its index, UINT32_MAX when out of
 * memory. */
static uint32_t wframe_get(struct wframes *wf, const char *name)
{
	struct wframe *f;
	size_t len = strlen(name);
	HASH_FIND(hh, wf->by_name, name, len, f);
	if (f)
		return f->index;
	if (wp_grow(&wf->order, &wf->cap, wf->n + 1, sizeof(*wf->order)))
		return UINT32_MAX;
	if (!(f = malloc(sizeof(*f) + len + 1)))
		return UINT32_MAX;
	memcpy(f->name, name, len + 1);
	f->index = wf->base + (uint32_t)wf->n;
	wf->order[wf->n++] = f;
	HASH_ADD_KEYPTR(hh, wf->by_name, f->name, len, f);
	return f->index;
}

/* The frames of every wait of the model. Returns 0, -1 when out of memory. */
static int wframes_build(struct wframes *wf, const struct wp_resolved *r)
{
	wf->base = (uint32_t)r->nfuncs;
	wf->of_wait = malloc((2 * r->nwaits + 1) * sizeof(*wf->of_wait));
	if (!wf->of_wait)
		return -1;
	for (size_t i = 0; i < r->nstacks; i++) {
		const struct wp_rstack *s = &r->stacks[i];
		for (uint32_t k = 0; k < s->nwaits; k++) {
			const struct wp_rwait *w = &s->waits[k];
			uint32_t *f = &wf->of_wait[2 * (size_t)(w - r->waits)];
			f[0] = f[1] = UINT32_MAX;
			char name[WP_WAIT_LEAF_MAX];
			wp_wait_frame_name(w, name, sizeof(name));
			f[0] = wframe_get(wf, name);
			f[1] = UINT32_MAX;
			if (w->holder) {
				const struct wp_thread *t = wp_resolved_thread_of(r, s->proc, w->holder);
				snprintf(name, sizeof(name), "[held by %s tid=%u]",
					 t && t->name && *t->name ? t->name : "?", w->holder);
				f[1] = wframe_get(wf, name);
			}
			if (f[0] == UINT32_MAX || (w->holder && f[1] == UINT32_MAX))
				return -1;
		}
	}
	return 0;
}

static void wframes_free(struct wframes *wf)
{
	struct wframe *f, *t;
	HASH_ITER(hh, wf->by_name, f, t) {
		HASH_DEL(wf->by_name, f);
		free(f);
	}
	free(wf->order);
	free(wf->of_wait);
}

/* Thread record i of the model, when it gets a profile of its own: it has samples and is the
 * first record of its (process, tid) (a recycled tid's records make one profile). Marks it
 * done; clear `done` to walk again. */
static struct tid_ent *profiled(const struct wp_resolved *r, struct tid_ent **tids_of, size_t i)
{
	const struct wp_thread *t = r->threads[i];
	struct tid_ent *te;
	HASH_FIND(hh, tids_of[r->thread_procs[i]], &t->tid, sizeof(t->tid), te);
	if (!te || !te->samples || te->done)
		return NULL;
	te->done = 1;
	return te;
}

int wp_report_speedscope(const struct wp_opts *o, const struct wp_resolved *r,
			 const struct wp_summary *sum, FILE *out)
{
	(void)o;
	const struct wp_profile *p = r->p;
	struct tid_ent *te, *tmp;
	/* per process: its threads' timeline runs and sample counts */
	struct tid_ent **tids_of = calloc(r->nprocs, sizeof(*tids_of));
	uint64_t *origin = calloc(r->nprocs, sizeof(*origin));
	int64_t *credit = calloc(r->nwaits + r->nstacks + 1, sizeof(*credit));
	struct wframes wf = { 0 };
	int rc = -1;
	if (!tids_of || !origin || !credit || wframes_build(&wf, r) != 0)
		goto oom;
	long long hz = (long long)p->info.hz;
	uint64_t interval = sum->interval_ns ? sum->interval_ns : 10000000; /* 100 Hz, the default */
	uint64_t dur = sum->duration_ns;
	const char *mode = p->info.mode;
	int cpu = sum->cpu_mode;

	/* Index each timeline by thread (each thread's entries are one run) and count samples.
	 * Several processes share one time axis, from the first one's start. */
	uint64_t t0 = p->info.start_unix_ns;
	for (size_t k = 0; k < r->nprocs; k++) {
		const struct wp_profile *pk = r->procs[k];
		uint64_t tk = pk->info.start_unix_ns;
		origin[k] = k && t0 > 0 && tk > t0 ? tk - t0 : 0;
		for (size_t i = 0; i < pk->ntimeline;) {
			size_t j = i;
			while (j < pk->ntimeline && pk->timeline[j].tid == pk->timeline[i].tid)
				j++;
			if (!(te = tid_get(&tids_of[k], pk->timeline[i].tid)))
				goto oom;
			if (!te->tl_n && !te->split) {
				te->tl_start = i;
				te->tl_n = j - i;
			} else {
				te->split = 1;
				te->tl_n = 0; /* falls back to its stacks */
			}
			i = j;
		}
	}
	for (size_t i = 0; i < r->nstacks; i++) {
		if (!(te = tid_get(&tids_of[r->stacks[i].proc], r->stacks[i].tid)))
			goto oom;
		te->samples += r->stacks[i].count;
	}

	/* Which threads get a profile, and how many fall back to their stacks. */
	size_t nprof = 0, nfallback = 0, active = 0;
	uint64_t best = 0;
	for (size_t i = 0; i < r->nthreads; i++) {
		uint32_t k = r->thread_procs[i];
		if (!(te = profiled(r, tids_of, i)))
			continue;
		const struct wp_thread *last = wp_resolved_thread_of(r, k, te->tid);
		if (last->running > best) {
			best = last->running;
			active = nprof;
		}
		nprof++;
		if (no_timeline(r->procs[k], te))
			nfallback++;
	}

	const char *ver = p->info.version;
	const char *cmd = p->info.command;
	char name[4200];
	int nl = snprintf(name, sizeof(name), "%s (%s, %lld Hz)", cmd && *cmd ? cmd : "wallprof",
			  mode ? mode : "wall", hz);
	for (size_t i = 0; i < r->ndeadlocks && nl > 0 && (size_t)nl < sizeof(name); i++) {
		char line[2048];
		wp_deadlock_line(&r->deadlocks[i], line, sizeof(line));
		nl += snprintf(name + nl, sizeof(name) - (size_t)nl, "; %s", line);
	}
	char exporter[256];
	int n = snprintf(exporter, sizeof(exporter), "wallprof %s", ver ? ver : "");
	if (nfallback && n > 0 && (size_t)n < sizeof(exporter))
		snprintf(exporter + n, sizeof(exporter) - (size_t)n,
			 "; no complete timeline for %zu of %zu threads: their samples are grouped "
			 "by stack, not in time order", nfallback, nprof);

	fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\n\"name\":", out);
	json_str(out, name);
	fputs(",\n\"exporter\":", out);
	json_str(out, exporter);
	fprintf(out, ",\n\"activeProfileIndex\":%zu,\n\"shared\":{\"frames\":[", active);
	for (size_t i = 0; i < r->nfuncs; i++) {
		const struct wp_func *f = &r->funcs[i];
		fputs(i ? ",\n{\"name\":" : "\n{\"name\":", out);
		json_str(out, f->name);
		if (f->file || f->module) {
			fputs(",\"file\":", out);
			json_str(out, f->file ? f->file : f->module);
		}
		if (f->file && f->line > 0)
			fprintf(out, ",\"line\":%d", f->line);
		putc('}', out);
	}
	for (size_t i = 0; i < wf.n; i++) {
		fputs(r->nfuncs || i ? ",\n{\"name\":" : "\n{\"name\":", out);
		json_str(out, wf.order[i]->name);
		putc('}', out);
	}
	fputs("]},\n\"profiles\":[", out);

	for (size_t k = 0; k < r->nprocs; k++)
		HASH_ITER(hh, tids_of[k], te, tmp)
			te->done = 0;
	size_t written = 0;
	for (size_t i = 0; i < r->nthreads; i++) {
		uint32_t k = r->thread_procs[i];
		if (!(te = profiled(r, tids_of, i)))
			continue;
		const struct wp_thread *last = wp_resolved_thread_of(r, k, te->tid);
		int fallback = no_timeline(r->procs[k], te);
		char pname[4200], in[300] = "", prog[256];
		if (r->nprocs > 1) /* "command pid / thread (tid N)" */
			snprintf(in, sizeof(in), "%s %ld / ",
				 wp_resolved_program(r, k, prog, sizeof(prog)), wp_resolved_pid(r, k));
		snprintf(pname, sizeof(pname), "%s%s (tid %u)%s", in,
			 last->name && *last->name ? last->name : "?", te->tid,
			 fallback ? " [no timeline: grouped by stack, not in time order]" : "");
		fputs(written++ ? ",\n{\"type\":\"sampled\",\"name\":" : "\n{\"type\":\"sampled\",\"name\":",
		      out);
		json_str(out, pname);
		fputs(",\"unit\":\"nanoseconds\",\"samples\":[", out);
		struct emitter em = { .out = out, .r = r };
		uint64_t cursor = 0;
		if (fallback)
			stack_samples(&em, &wf, k, te->tid, interval, &cursor);
		else
			timeline_samples(&em, &wf, credit, k, origin[k], te, interval, cpu, &cursor);
		if (!fallback && dur > cursor)
			emit(&em, idle, dur - cursor); /* idle to the end of the run */
		flush_pending(&em);
		fputs("],\"weights\":[", out);
		for (size_t w = 0; w < em.nweights; w++)
			fprintf(out, w ? ",%llu" : "%llu", (unsigned long long)em.weights[w]);
		fprintf(out, "],\"startValue\":0,\"endValue\":%llu}", (unsigned long long)em.total);
		free(em.weights);
		if (em.oom)
			goto oom;
	}
	if (!written) /* speedscope cannot open a file without profiles */
		fputs("\n{\"type\":\"sampled\",\"name\":\"(no samples)\",\"unit\":\"nanoseconds\","
		      "\"samples\":[],\"weights\":[],\"startValue\":0,\"endValue\":0}", out);
	fputs("\n]}\n", out);
	rc = ferror(out) ? -1 : 0;
	goto done;
oom:
	fprintf(stderr, "wallprof: out of memory while writing the speedscope profile\n");
done:
	for (size_t k = 0; tids_of && k < r->nprocs; k++)
		HASH_ITER(hh, tids_of[k], te, tmp) {
			HASH_DEL(tids_of[k], te);
			free(te);
		}
	free(tids_of);
	free(origin);
	free(credit);
	wframes_free(&wf);
	return rc;
}
