/* SPDX-License-Identifier: MIT */
#include "modules.h"

#include <elf.h>
#include <errno.h>
#include <link.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <time.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "clock.h"
#include "fds.h"
#include "forkguard.h"
#include "handshake.h"
#include "pages.h"
#include "peek.h"
#include "threadstart.h"

/* The history lives in fixed chunks so published entries never move (a fatal-signal
 * handler may be reading them) and a small process pays for one chunk only. */
#define CHUNK 128
#define NCHUNKS 64
#define HISTORY_MAX (CHUNK * NCHUNKS)

struct span {
	uintptr_t lo, hi;
};

struct table {
	struct wp_rt_module *mods;
	size_t nmods, capmods;
	struct span *spans; /* every PT_LOAD of every module, sorted */
	size_t nspans, capspans;
	struct wp_region *regions;
	size_t nregions, capregions;
	size_t copied;
};

static struct table cur;
static unsigned generation;
static unsigned long long seen_adds, seen_subs;

static struct wp_module_rec *_Atomic chunks[NCHUNKS];
static _Atomic size_t history_len;

static struct wp_module_rec *rec_at(size_t i)
{
	return &chunks[i / CHUNK][i % CHUNK];
}
static char exe_path[4096] WP_BIG;

/* ---- building a table (outside windows; inside dl_iterate_phdr's callback) ---- */

/* A module's .eh_frame_hdr or .eh_frame, to be copied lazily: a chunk at a time, as the
 * unwinder first reads it (wp_modules_read). Copying them whole as a module was found cost
 * every process its executable's tables at its first tick, most of which no sample ever
 * reads: 2.8 MB for gcc's cc1, a third of the agent's CPU time in a build. */
#define RCHUNK 4096u

static int push_region(struct table *t, uintptr_t addr, size_t len)
{
	/* Aligned to 8 bytes at both ends: libunwind reads whole aligned words. */
	uintptr_t a = addr & ~(uintptr_t)7, e = (addr + len + 7) & ~(uintptr_t)7;
	uint8_t **parts = calloc((e - a + RCHUNK - 1) / RCHUNK, sizeof(*parts));
	if (!parts)
		return -ENOMEM;
	if (t->nregions == t->capregions) {
		size_t n = t->capregions ? t->capregions * 2 : 64;
		struct wp_region *r = realloc(t->regions, n * sizeof(*r));
		if (!r) {
			free(parts);
			return -ENOMEM;
		}
		t->regions = r;
		t->capregions = n;
	}
	t->regions[t->nregions++] = (struct wp_region){ a, e - a, NULL, parts };
	return 0;
}

static int push_span(struct table *t, uintptr_t lo, uintptr_t hi)
{
	if (t->nspans == t->capspans) {
		size_t n = t->capspans ? t->capspans * 2 : 128;
		struct span *p = realloc(t->spans, n * sizeof(*p));
		if (!p)
			return -ENOMEM;
		t->spans = p;
		t->capspans = n;
	}
	t->spans[t->nspans++] = (struct span){ lo, hi };
	return 0;
}

static struct wp_rt_module *push_module(struct table *t)
{
	if (t->nmods == t->capmods) {
		size_t n = t->capmods ? t->capmods * 2 : 64;
		struct wp_rt_module *m = realloc(t->mods, n * sizeof(*m));
		if (!m)
			return NULL;
		t->mods = m;
		t->capmods = n;
	}
	memset(&t->mods[t->nmods], 0, sizeof(t->mods[0]));
	return &t->mods[t->nmods++];
}

/* Reads a DWARF EH pointer of the encodings .eh_frame_hdr uses (absptr, udata4, sdata4,
 * udata8, sdata8; pcrel or datarel to the header). Returns bytes consumed, 0 if unsupported. */
static size_t read_enc(const uint8_t *p, uint8_t enc, uintptr_t pc, uintptr_t hdr, uint64_t *out)
{
	uint64_t v;
	size_t n;
	switch (enc & 0x0f) {
	case 0x00: memcpy(&v, p, 8); n = 8; break;                                   /* absptr */
	case 0x03: { uint32_t x; memcpy(&x, p, 4); v = x; n = 4; break; }           /* udata4 */
	case 0x0b: { int32_t x; memcpy(&x, p, 4); v = (uint64_t)(int64_t)x; n = 4; break; }
	case 0x04: case 0x0c: memcpy(&v, p, 8); n = 8; break;                        /* u/sdata8 */
	default: return 0;
	}
	switch (enc & 0x70) {
	case 0x00: break;
	case 0x10: v += pc; break;  /* pcrel */
	case 0x30: v += hdr; break; /* datarel */
	default: return 0;
	}
	*out = v;
	return n;
}

static void read_build_id(struct dl_phdr_info *info, struct wp_module_rec *rec)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
		const uint8_t *end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *nh = (const void *)p;
			size_t name = (nh->n_namesz + 3) & ~3u, desc = (nh->n_descsz + 3) & ~3u;
			const uint8_t *d = p + sizeof(*nh) + name;
			if (d + desc > end)
				break;
			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
			    !memcmp(p + sizeof(*nh), "GNU", 4) && nh->n_descsz <= WP_MAX_BUILD_ID) {
				memcpy(rec->build_id, d, nh->n_descsz);
				rec->build_id_len = nh->n_descsz;
				return;
			}
			p = d + desc;
		}
	}
}

/* Records an executable mapping in the history, once; returns its id. */
static uint32_t remember(struct dl_phdr_info *info, const ElfW(Phdr) *ph, int first)
{
	uint64_t start = info->dlpi_addr + ph->p_vaddr;
	const char *name = info->dlpi_name;
	uint32_t flags = 0;
	if (first && (!name || !*name)) {
		name = exe_path;
		flags = WP_MODULE_MAIN;
	} else if (name && strstr(name, "linux-vdso")) {
		name = "[vdso]";
		flags = WP_MODULE_VDSO;
	} else if (!name || !*name) {
		name = "(unnamed)";
	}
	size_t n = atomic_load(&history_len);
	/* Same address and same file: the same mapping. A library loaded where an unloaded one
	 * used to be gets an entry of its own. */
	for (size_t i = n; i-- > 0;)
		if (rec_at(i)->start == start && !(rec_at(i)->flags & WP_MODULE_UNLOADED) &&
		    !strcmp(rec_at(i)->path, name))
			return (uint32_t)i;
	if (n >= HISTORY_MAX)
		return UINT32_MAX;
	if (!chunks[n / CHUNK] && !(chunks[n / CHUNK] = calloc(CHUNK, sizeof(struct wp_module_rec))))
		return UINT32_MAX;
	struct wp_module_rec *r = rec_at(n);
	memset(r, 0, sizeof(*r));
	r->start = start;
	r->end = start + ph->p_memsz;
	r->file_offset = ph->p_offset;
	r->flags = flags;
	r->path = strdup(name);
	if (!r->path)
		return UINT32_MAX;
	read_build_id(info, r);
	atomic_store(&history_len, n + 1); /* publish */
	return (uint32_t)n;
}

static int add_unwind_tables(struct table *t, struct dl_phdr_info *info, struct wp_rt_module *m)
{
	const ElfW(Phdr) *eh = NULL;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_GNU_EH_FRAME)
			eh = &info->dlpi_phdr[i];
	if (!eh)
		return 0;
	/* The segment holding the header bounds every read we make of it and of .eh_frame. */
	uintptr_t hdr = info->dlpi_addr + eh->p_vaddr, seg_end = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && hdr >= a && hdr < a + ph->p_filesz)
			seg_end = a + ph->p_filesz;
	}
	const uint8_t *h = (const uint8_t *)hdr;
	if (!seg_end || hdr + 4 + 16 > seg_end || h[0] != 1)
		return 0;
	uint8_t ptr_enc = h[1], count_enc = h[2], table_enc = h[3];
	if (table_enc != 0x3b) /* datarel|sdata4: the only table libunwind binary-searches */
		return 0;
	uint64_t eh_frame, count;
	size_t off = 4, n;
	if (!(n = read_enc(h + off, ptr_enc, hdr + off, hdr, &eh_frame)))
		return 0;
	off += n;
	if (!(n = read_enc(h + off, count_enc, hdr + off, hdr, &count)))
		return 0;
	off += n;
	if (count > (seg_end - hdr - off) / 8)
		return 0;
	size_t hdr_len = off + count * 8;
	if (push_region(t, hdr, hdr_len))
		return -ENOMEM;
	/* .eh_frame up to the end of its segment (or to the header, when it comes first): its
	 * exact length would be a walk over every record, all of its pages read at the first
	 * tick, and the copy is lazy anyway (push_region). */
	if (eh_frame >= hdr + hdr_len && eh_frame < seg_end) {
		if (push_region(t, eh_frame, seg_end - eh_frame))
			return -ENOMEM;
	} else if (eh_frame < hdr) {
		for (int i = 0; i < info->dlpi_phnum; i++) {
			const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
			uintptr_t a = info->dlpi_addr + ph->p_vaddr, e = a + ph->p_filesz;
			if (ph->p_type == PT_LOAD && eh_frame >= a && eh_frame < e &&
			    push_region(t, eh_frame, (e < hdr ? e : hdr) - eh_frame))
				return -ENOMEM;
		}
	}
	m->eh_hdr = hdr;
	m->table = hdr + off;
	m->fde_count = count;
	return 0;
}

struct build_ctx {
	struct table *t;
	int index;
	int err;
	unsigned long long adds, subs;
};

static int build_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct build_ctx *c = arg;
	if (c->index == 0 && size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
		c->adds = info->dlpi_adds;
		c->subs = info->dlpi_subs;
	}
	int first = c->index++ == 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD &&
		    push_span(c->t, info->dlpi_addr + ph->p_vaddr,
			      info->dlpi_addr + ph->p_vaddr + ph->p_memsz)) {
			c->err = -ENOMEM;
			return 1;
		}
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		struct wp_rt_module *m = push_module(c->t);
		if (!m) {
			c->err = -ENOMEM;
			return 1;
		}
		m->lo = info->dlpi_addr + ph->p_vaddr;
		m->hi = m->lo + ph->p_memsz;
		m->history_id = remember(info, ph, first);
		if (add_unwind_tables(c->t, info, m)) {
			c->err = -ENOMEM;
			return 1;
		}
	}
	return 0;
}

static int cmp_mod(const void *a, const void *b)
{
	const struct wp_rt_module *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int cmp_span(const void *a, const void *b)
{
	const struct span *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int cmp_region(const void *a, const void *b)
{
	const struct wp_region *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static void free_table(struct table *t)
{
	for (size_t i = 0; i < t->nregions; i++) {
		struct wp_region *r = &t->regions[i];
		for (size_t c = 0; c < (r->len + RCHUNK - 1) / RCHUNK; c++)
			free(r->chunks[c]);
		free(r->chunks);
	}
	free(t->regions);
	free(t->mods);
	free(t->spans);
	memset(t, 0, sizeof(*t));
}

/* The signal trampoline (__restore_rt): its address is what the kernel keeps as sa_restorer
 * for our signal. Copying its code lets libunwind recognise signal frames without reading
 * host memory. */
static void add_sigreturn_trampoline(struct table *t)
{
	struct {
		void *handler;
		unsigned long flags;
		void *restorer;
		uint64_t mask;
	} ksa;
	if (syscall(SYS_rt_sigaction, wp_handshake_signal(), NULL, &ksa, 8) != 0 || !ksa.restorer)
		return;
	push_region(t, (uintptr_t)ksa.restorer, 16);
}

/* Marks history entries whose module is gone as unloaded. */
static void mark_unloaded(const struct table *t)
{
	size_t n = atomic_load(&history_len);
	for (size_t i = 0; i < n; i++) {
		int found = 0;
		for (size_t j = 0; j < t->nmods && !found; j++)
			found = t->mods[j].history_id == i;
		if (!found)
			rec_at(i)->flags |= WP_MODULE_UNLOADED;
	}
}

/* A table built by the watcher, waiting for the sampler to adopt it between two ticks. */
static struct table *_Atomic pending;

/* Builds a table of what is loaded now into *t. */
static int build(struct table *t)
{
	struct build_ctx c = { t, 0, 0, 0, 0 };
	memset(t, 0, sizeof(*t));
	dl_iterate_phdr(build_cb, &c);
	if (c.err) {
		free_table(t);
		return c.err;
	}
	add_sigreturn_trampoline(t);
	qsort(t->mods, t->nmods, sizeof(*t->mods), cmp_mod);
	qsort(t->regions, t->nregions, sizeof(*t->regions), cmp_region);
	qsort(t->spans, t->nspans, sizeof(*t->spans), cmp_span);
	mark_unloaded(t);
	seen_adds = c.adds;
	seen_subs = c.subs;
	return 0;
}

int wp_modules_rebuild(void)
{
	struct table t;
	int e = build(&t);
	if (e)
		return e;
	free_table(&cur);
	cur = t;
	generation++;
	return 0;
}

int wp_modules_adopt(void)
{
	struct table *t = atomic_exchange(&pending, NULL);
	if (!t)
		return 0;
	free_table(&cur);
	cur = *t;
	free(t);
	generation++;
	return 1;
}

static int peek_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	unsigned long long *v = arg;
	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
		v[0] = info->dlpi_adds;
		v[1] = info->dlpi_subs;
	}
	return 1; /* the counters are the same on every entry: stop at the first */
}

int wp_modules_refresh(void)
{
	unsigned long long v[2] = { seen_adds, seen_subs };
	dl_iterate_phdr(peek_cb, v);
	if (v[0] == seen_adds && v[1] == seen_subs)
		return 0;
	struct table *t = malloc(sizeof(*t));
	if (!t || build(t) != 0) {
		free(t);
		return 0;
	}
	struct table *old = atomic_exchange(&pending, t);
	if (old) {
		free_table(old);
		free(old);
	}
	return 1;
}

/* ---- the watcher thread ----
 * dl_iterate_phdr takes the loader lock, which the program may hold for long stretches (its
 * own dl_iterate_phdr callbacks, a slow dlopen). Waiting for it is this thread's job, never
 * the sampler's: the sampler only adopts a finished table between two ticks. */

static pthread_t watcher;
static int watching;
static _Atomic uint32_t watch_stop;
static _Atomic pid_t watcher_tid;

static void *watch(void *arg)
{
	wp_fds_adopt(); /* started by the sampler: its descriptor table is the agent's own */
	atomic_store(&watcher_tid, (pid_t)syscall(SYS_gettid));
	syscall(SYS_futex, (uint32_t *)&watcher_tid, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, NULL, NULL, 0);
	prctl(PR_SET_NAME, "wallprof-mods", 0, 0, 0);
	while (!atomic_load(&watch_stop)) {
		/* inside the guard: a fork must not copy the loader's lock held (forkguard.h) */
		wp_guard_enter();
		wp_modules_refresh();
		wp_guard_leave();
		struct timespec ts = { 0, 50 * 1000000 };
		syscall(SYS_futex, (uint32_t *)&watch_stop, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, 0, &ts,
			NULL, 0);
	}
	return NULL;
}

int wp_modules_watch_start(void)
{
	if (watching)
		return 0;
	atomic_store(&watch_stop, 0);
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 128 << 10);
	int e = wp_own_thread_create(&watcher, &attr, watch, NULL);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e)
		return -e;
	watching = 1;
	/* Its tid must be known before the sampler lists threads, or it would be sampled. */
	for (int i = 0; i < 100 && !atomic_load(&watcher_tid); i++) {
		struct timespec ts = { 0, 10 * 1000000 };
		syscall(SYS_futex, (uint32_t *)&watcher_tid, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, 0, &ts,
			NULL, 0);
	}
	return 0;
}

void wp_modules_watch_stop(void)
{
	if (!watching)
		return;
	atomic_store(&watch_stop, 1);
	syscall(SYS_futex, (uint32_t *)&watch_stop, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, NULL, NULL, 0);
	struct timespec ts = wp_realtime_in_ms(2000);
	if (pthread_timedjoin_np(watcher, NULL, &ts) != 0)
		pthread_detach(watcher); /* stuck behind the program's loader lock: let it be */
	watching = 0;
	atomic_store(&watcher_tid, 0);
}

pid_t wp_modules_watcher_tid(void)
{
	return atomic_load(&watcher_tid);
}

void wp_modules_fork_child(void)
{
	watching = 0; /* the watcher does not exist here */
	atomic_store(&watcher_tid, 0);
}

void wp_modules_forget_pending(void)
{
	struct table *t = atomic_exchange(&pending, NULL);
	if (t) {
		free_table(t);
		free(t);
	}
}

/* Reachable for leak checkers; never touched. */
static struct table abandoned_cur;
static struct table *abandoned_pending;

void wp_modules_abandon(void)
{
	abandoned_cur = cur;
	memset(&cur, 0, sizeof(cur));
	abandoned_pending = atomic_exchange(&pending, NULL);
	seen_adds = seen_subs = 0;
	generation++;
}

int wp_modules_init(void)
{
	if (exe_path[0]) /* a fork child: the same executable, a table of its own */
		return wp_modules_rebuild();
	/* thread-self: /proc/self is the leader, and once main has ended (pthread_exit) that
	 * zombie has no executable to show */
	ssize_t n = readlink("/proc/thread-self/exe", exe_path, sizeof(exe_path) - 1);
	if (n <= 0)
		n = readlink("/proc/self/exe", exe_path, sizeof(exe_path) - 1);
	if (n > 0)
		exe_path[n] = 0;
	else
		strcpy(exe_path, "(main)");
	return wp_modules_rebuild();
}

/* ---- lookups (sampler thread, any time) ---- */

const struct wp_rt_module *wp_modules_find(uintptr_t pc)
{
	size_t lo = 0, hi = cur.nmods;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (pc < cur.mods[mid].lo)
			hi = mid;
		else if (pc >= cur.mods[mid].hi)
			lo = mid + 1;
		else
			return &cur.mods[mid];
	}
	return NULL;
}

/* Chunk `c` of `r`, copied now if it was not: with process_vm_readv on ourselves (peek.h),
 * which cannot fault (a module unloaded since the table was built reads as zeros: that
 * sample's frames are lost, nothing else). On the sampler, inside the fork guard (an unwind:
 * sample.c), never while a thread is held. NULL without memory. */
static const uint8_t *chunk(struct wp_region *r, size_t c)
{
	if (r->chunks[c])
		return r->chunks[c];
	size_t n = r->len - c * RCHUNK < RCHUNK ? r->len - c * RCHUNK : RCHUNK;
	uint8_t *buf = malloc(n);
	if (!buf)
		return NULL;
	ssize_t got = wp_peek_some(r->addr + c * RCHUNK, buf, n);
	if (got < 0)
		got = 0;
	memset(buf + got, 0, n - (size_t)got);
	cur.copied += n;
	return r->chunks[c] = buf;
}

/* `len` bytes at `addr` of a region, or NULL. A read across two chunks is assembled in a
 * buffer of ours (the unwinder reads words: len <= 8). */
/* `len` bytes at `off` of region `r`, or NULL. */
static const uint8_t *region_read(struct wp_region *r, size_t off, size_t len)
{
	static uint8_t across[16];
	size_t in = off % RCHUNK;
	if (len > r->len - off)
		return NULL;
	const uint8_t *a = chunk(r, off / RCHUNK);
	if (!a || in + len <= RCHUNK)
		return a ? a + in : NULL;
	const uint8_t *b = len <= sizeof(across) ? chunk(r, off / RCHUNK + 1) : NULL;
	if (!b)
		return NULL;
	memcpy(across, a + in, RCHUNK - in);
	memcpy(across + (RCHUNK - in), b, len - (RCHUNK - in));
	return across;
}

const uint8_t *wp_modules_read(uintptr_t addr, size_t len)
{
	/* The unwinder reads a word at a time, mostly near the last one (a table's binary
	 * search, an FDE's bytes): the region of the last read is tried first. Only an index,
	 * checked against the table as it is now, so a table changed since just misses. */
	static size_t last;
	if (last < cur.nregions) {
		struct wp_region *r = &cur.regions[last];
		if (addr >= r->addr && addr - r->addr < r->len)
			return region_read(r, addr - r->addr, len);
	}
	size_t lo = 0, hi = cur.nregions;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		struct wp_region *r = &cur.regions[mid];
		if (addr < r->addr) {
			hi = mid;
		} else if (addr >= r->addr + r->len) {
			lo = mid + 1;
		} else {
			last = mid;
			return region_read(r, addr - r->addr, len);
		}
	}
	return NULL;
}

int wp_modules_contains(uintptr_t addr)
{
	size_t lo = 0, hi = cur.nspans;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (addr < cur.spans[mid].lo)
			hi = mid;
		else if (addr >= cur.spans[mid].hi)
			lo = mid + 1;
		else
			return 1;
	}
	return 0;
}

unsigned wp_modules_generation(void)
{
	return generation;
}

size_t wp_modules_history_count(void)
{
	return atomic_load(&history_len);
}

const struct wp_module_rec *wp_modules_history_at(size_t i)
{
	return rec_at(i);
}

size_t wp_modules_copied_bytes(void)
{
	return cur.copied;
}
