/* SPDX-License-Identifier: MIT */
/* The live view's counts (--live): what every process of a running tree did, brought up to
 * date with each process's checkpoints, overall and over the last interval.
 *
 * Every process (struct wp_live_proc: the main file's, and each NAME.PID.EXT beside it) has
 * its own model (resolve.h, built with wp_resolve_cached over the counts' one symbol cache and
 * updated with wp_resolve_update). What is counted belongs to one process (a thread, a
 * thread's function, a wait object) and keeps its count at that process's last two
 * checkpoints: the difference is its LAST INTERVAL, so each process contributes its own last
 * second whenever its checkpoints come. A process that had no checkpoint for a while
 * (wp_live_settle: it ended, or is stopped) contributes nothing to the interval. Functions
 * are numbered by (name, module) over every process with the model's own interning
 * (funcids.h), so the same function in two processes is one row. Waits are the model's
 * (wp_wait_totals, and who waited and held: wp_wait_people), per process.
 *
 * Nothing here knows of the terminal or of files: the live view (src/cli/live/) finds the
 * checkpoints, hands each to wp_live_absorb, then reads the counts after wp_live_tally. */
#ifndef WP_LIVE_COUNTS_H
#define WP_LIVE_COUNTS_H

#include <limits.h>
#include <stdint.h>
#include <sys/stat.h>
#include "uthash_cfg.h"

#include "funcids.h"
#include "resolve.h"
#include "waits.h"

/* Now (the last checkpoint), before (the one before it) and the difference, the last
 * interval: the three figures of every count. */
struct wp_live_func {
	const char *name, *module; /* the interner's (wp_live_counts.ids) */
	uint64_t now, before, ivl;
};

struct wp_live_proc {
	/* where its checkpoints come from (the view's file watching) */
	char path[PATH_MAX];
	long pid;
	int is_main;
	int st_valid;
	struct stat st;
	uint64_t changed_at;       /* monotonic ns when its file last changed */
	int settled;               /* stale: its interval was emptied */
	/* its model */
	struct wp_profile *prof;   /* the checkpoint its model was last built from */
	struct wp_resolved *model;
	uint32_t *fmap;            /* the model's function ids -> the counts' */
	size_t nfmap, capfmap;
	uint32_t nostack;          /* the counts' "(no stack)" function, or UINT32_MAX */
	/* its figures */
	int loaded, ended;
	uint64_t start_unix, total, total_before, dur_now, dur_before;
	long long threads_seen;
	int threads_live;
	double sampler_pct, held_pct;
	char prog[64];
	/* its latest checkpoint's first deadlock, one line (deadlock_model.h), "" when none */
	char deadlock[512];
};

/* A thread's samples of one function. */
struct wp_live_tfkey {
	uint32_t proc, tid, func;
};

struct wp_live_tf {
	UT_hash_handle hh;
	struct wp_live_tfkey key;
	uint64_t now, before, ivl;
};

/* A thread: key proc << 32 | tid (tids are the system's, but a pid file may be reused by an
 * exec'd image; the key keeps processes apart). */
struct wp_live_thread {
	UT_hash_handle hh;
	uint64_t key;
	uint32_t tid, proc;
	char name[64];
	int exited, seen;
	uint64_t now, before, ivl;
	uint64_t wait_now, wait_before, wait_ivl;
	int32_t top_ivl; /* its hottest function in the last interval, -1 none */
	uint64_t top_ivl_n;
};

/* A wait object of a process (waits.h): samples and time, now and at the previous
 * checkpoint; at the last checkpoint, who waited on it and held it, as the text report
 * counts them (rwaits.h: wp_wait_people): the threads that waited, the one with most
 * samples, the holder with most. */
struct wp_live_wait {
	UT_hash_handle hh;
	uint32_t id, proc;
	enum wp_wait_kind kind;
	uint64_t now, before, ivl;         /* samples */
	uint64_t ns_now, ns_before, ns_ivl;
	uint32_t nthreads;                 /* threads that waited on it (WP_WAIT_NAMES + 1:
					    * more than WP_WAIT_NAMES) */
	uint32_t top_tid;                  /* the thread with most samples, 0 none */
	uint32_t holder;                   /* the holder with most samples, 0 none */
	char *object;                      /* points into key */
	char key[];                        /* proc (4 bytes), kind (1 byte), object NUL */
};

struct wp_live_counts {
	void (*oom)(void);         /* called when out of memory; must not return */
	struct wp_live_proc **procs; /* procs[0] is the main file's */
	size_t nprocs, capprocs;
	struct wp_symcache *symcache; /* the module files the processes' models have read */
	struct wp_func_ids ids;    /* the functions, by name and module */
	struct wp_live_func *funcs; /* by id */
	size_t nfuncs, capfuncs;
	char warning[256];         /* the symbolizer's first warning */

	struct wp_live_tf *tf;
	struct wp_live_thread *threads;
	struct wp_live_wait *wait_by_key;
	struct wp_live_wait **waits; /* by id */
	size_t nwaits, capwaits;

	/* wp_live_tally's: the figures of the whole tree */
	uint64_t kind_now[WP_WAIT__N], kind_ivl[WP_WAIT__N];
	uint64_t kind_ns_now[WP_WAIT__N], kind_ns_ivl[WP_WAIT__N];
	int loaded;                /* some process has a checkpoint */
	uint64_t total_now, total_ivl;
	uint64_t ivl_ns;           /* the longest last interval of the processes that had one */
	long long threads_seen;
	double sampler_pct, held_pct;
	int nthreads_live, nprocs_live, nprocs_loaded;
	/* a deadlock of a process still running (the first such), one line, "" when none */
	char deadlock[512];
	/* from the main process's META */
	char command[1024], mode[16];
	long long hz, per_tick;
};

/* Empty counts with their symbol cache; `oom` (NULL: a message and exit 1) is called when
 * memory runs out. Returns 0, -1 when out of memory. */
int wp_live_counts_init(struct wp_live_counts *m, void (*oom)(void));
void wp_live_counts_free(struct wp_live_counts *m);

/* The process whose checkpoints are at `path`, added when new. */
uint32_t wp_live_proc_at(struct wp_live_counts *m, const char *path, long pid, int is_main);
/* Process k's new checkpoint p, counted; the counts keep p (its model points into it). */
void wp_live_absorb(struct wp_live_counts *m, uint32_t k, struct wp_profile *p);
/* Process k had no checkpoint for a while: nothing of it in the last interval. */
void wp_live_settle(struct wp_live_counts *m, uint32_t k);
/* Process k ended: its counts stay, its model goes (a build runs hundreds of processes; the
 * view must not keep a symbolizer for each). A later checkpoint at its path (an image its
 * pid exec'd) builds a new one. */
void wp_live_release(struct wp_live_counts *m, uint32_t k);
/* The figures of the whole tree and the last intervals, from every process's counts: after
 * any change, before the counts are read. */
void wp_live_tally(struct wp_live_counts *m);

/* A thread by key (proc << 32 | tid), NULL when unknown. */
struct wp_live_thread *wp_live_thread(const struct wp_live_counts *m, uint64_t key);
/* "prog pid" of process k. */
const char *wp_live_proc_label(const struct wp_live_counts *m, uint32_t k, char *buf,
			       size_t cap);

#endif
