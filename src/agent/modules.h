/* SPDX-License-Identifier: MIT */
/* The module table: where each loaded ELF object's code and unwind tables are.
 *
 * Built by dl_iterate_phdr, only ever outside a suspension window (it takes the loader lock
 * and allocates). Each module's .eh_frame_hdr and .eh_frame are COPIED into the agent's own
 * memory while the loader lock pins the module, so the unwinder never reads the host's
 * memory at all (except the stack copy it made itself): a library dlclose'd between two
 * refreshes cannot fault the sampler, and no read is unbounded.
 *
 * Two views: the current table (for unwinding, rebuilt when libraries come and go) and the
 * history of every executable mapping ever seen (for the profile's module map, append-only). */
#ifndef WP_MODULES_H
#define WP_MODULES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../common/format.h"

/* One executable segment of a loaded object, as the unwinder needs it. */
struct wp_rt_module {
	uintptr_t lo, hi;         /* the executable PT_LOAD, runtime addresses */
	uintptr_t eh_hdr;         /* runtime address of .eh_frame_hdr, 0 when none */
	uintptr_t table;          /* runtime address of its binary-search table */
	uint64_t fde_count;
	uint32_t history_id;
};

/* A range of host memory the agent reads through a private copy of it: whole (`data`, the
 * outside sampler's), or taken a chunk at a time as the unwinder first needs it (`chunks`,
 * the agent's: modules.c). */
struct wp_region {
	uintptr_t addr;
	size_t len;
	const uint8_t *data;
	uint8_t **chunks;
};

/* One entry of the profile's module map. Entries never move once published. */
struct wp_module_rec {
	uint64_t start, end, file_offset;
	uint32_t flags;
	uint32_t build_id_len;
	uint8_t build_id[WP_MAX_BUILD_ID];
	char *path;
};

/* Builds the first table (again in a fork child, after wp_modules_abandon). Returns 0 or
 * -ENOMEM. */
int wp_modules_init(void);
/* Cheap check (one dl_iterate_phdr callback) whether objects were loaded or unloaded since the
 * last build; if so builds a new table for the sampler to adopt. Returns 1 when it did. The
 * watcher thread's job: it may block on the loader lock. */
int wp_modules_refresh(void);
/* Builds the table in place, at once (the sampler's first set-up). */
int wp_modules_rebuild(void);
/* Sampler thread, between ticks: takes over a table the watcher built. 1 when it did. */
int wp_modules_adopt(void);
/* The watcher thread (named "wallprof-mods", all signals blocked, never sampled). */
int wp_modules_watch_start(void);
void wp_modules_watch_stop(void);
pid_t wp_modules_watcher_tid(void);
/* A fork child: the watcher does not exist here. (A fork waits for the watcher's
 * dl_iterate_phdr through the guard, forkguard.h.) */
void wp_modules_fork_child(void); /* allocates and frees nothing (forks.c) */
/* A fork child, before its sampler starts: drops the module table and any table the watcher
 * had built, never walked or freed (the parent's sampler may have been adopting one); the
 * history of modules stays (it only grows, inside the guard). */
void wp_modules_abandon(void);
/* Frees a table the watcher built but the sampler had not adopted (a new profile after a
 * stop). */
void wp_modules_forget_pending(void);

/* Lookups for the unwinder; no locks, no allocation. */
const struct wp_rt_module *wp_modules_find(uintptr_t pc);
/* The private copy covering [addr, addr+len), or NULL. */
const uint8_t *wp_modules_read(uintptr_t addr, size_t len);
/* Whether addr lies in a loaded module's image (any segment), copied or not. */
int wp_modules_contains(uintptr_t addr);
/* Bumped on every rebuild, so the unwinder knows to flush libunwind's caches. */
unsigned wp_modules_generation(void);

/* The module map history for the writer. Safe from any thread, even a signal handler:
 * entries below the count are complete and never move; only their UNLOADED flag changes. */
size_t wp_modules_history_count(void);
const struct wp_module_rec *wp_modules_history_at(size_t i);

/* Bytes held in private copies of unwind tables (for the statistics). */
size_t wp_modules_copied_bytes(void);

#endif
