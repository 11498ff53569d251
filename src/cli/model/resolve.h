/* SPDX-License-Identifier: MIT */
/* The model every report reads: one profile with every address symbolized, filtered once.
 *
 * wp_resolve(profile, filter) builds it in one pass over the profile's stacks (and
 * wp_resolve_many over the profiles of several processes of one run: see below):
 *  - locations: one per distinct address and role (a stack's leaf is looked up at its pc, a
 *    return address at pc-1), each the inline chain found there. The agent's own frames
 *    (wp_frame_is_agent: its EINTR-retrying wrappers) are left out HERE, and nowhere else:
 *    no stack of the model has them, as if the program had called libc directly;
 *  - functions: interned by (name, module) over EVERY stack of the profile, so a function's
 *    id, kind and hottest file:line are the same whatever the filter;
 *  - threads and stacks: only those the filter keeps, in the profile's order; every count of
 *    the model (funcs[].self and .total, total) is over those. A report never filters again.
 * Derived figures (rates, lifetimes, overhead, confidence intervals) are summary.h's.
 *
 * Adding a dimension (the process a sample came from, why a thread waits): a field in
 * struct wp_rstack, filled in resolve.c's keep_stack(); to select by it, a field in struct
 * wp_filter, tested in wp_filter_keeps_thread() (a selector of threads, like a process) or
 * wp_filter_keeps_stack() (of samples, like a wait reason). Every report then sees the field,
 * and every count respects the filter.
 *
 * The model points into the profile (stacks, thread records, META, the timeline): keep the
 * profile alive while the model is used. */
#ifndef WP_RESOLVE_H
#define WP_RESOLVE_H

#include <stddef.h>
#include <stdint.h>

#include "common/profile.h"
#include "frame_kind.h"
#include "proctree.h"
#include "symbolize.h"
#include "tally.h" /* the counts over the model: wp_tally, wp_funcs_ranked */

struct wp_rwait; /* rwaits.h: a kept stack's waits */

#define WP_MAX_INLINE 16 /* frames of one inline chain kept (innermost first) */

/* What the model keeps. Strings are the caller's and must outlive the model. */
struct wp_filter {
	const char *thread; /* --thread=NAME|TID: a tid or a thread name; NULL: every thread */
	const char *process; /* --process=PID|NAME: a pid (every image it ran), or a program's
			      * name (the command's first word without its directory) or a
			      * process's (its title: procinfo.h) */
	int descendants;     /* --process-tree: and every process they started, at any depth
			      * (by META ppid among the model's processes) */
	/* Not a selector: the one switch of how waits look. Each waiting sample's C-library
	 * waiting frames (futex_wait, __GI___libc_read...) are replaced by one leaf frame
	 * "[wait KIND OBJECT]" (module "[wait]") whose caller is the program's function that
	 * waited: such samples become stacks of their own, appended after the profile's. The
	 * share of a running stack that waited for a CPU becomes such a leaf too, [wait cpu
	 * runqueue]. The text report's default, and the live view's. */
	int wait_leaves;
};

struct wp_func {
	const char *name;    /* demangled, or "module+0xoff" / "(unknown)" */
	const char *module;  /* basename */
	const char *file;    /* hottest source file, NULL when unknown */
	int line;            /* hottest line, 0 when unknown */
	enum wp_frame_kind kind;
	int inlined;         /* seen as an inlined frame */
	uint64_t self;       /* kept samples with this function as the leaf */
	uint64_t total;      /* kept samples with this function anywhere (once per sample) */
};

struct wp_rframe {
	uint32_t func;
	int line;            /* the line executing in this frame (call site for non-leaves) */
	const char *file;
};

/* One address of the profile in one role, symbolized: pprof's Location. */
struct wp_loc {
	uint64_t pc;
	int leaf;            /* looked up as a leaf (pc itself), else as a return address (pc-1) */
	uint32_t proc;       /* the process (index in the model's procs) the address is of */
	int32_t module;      /* index in that profile's modules, -1 when outside every module */
	uint32_t n;          /* frames, >= 1 */
	struct wp_rframe frames[WP_MAX_INLINE]; /* INNERMOST FIRST, as the symbolizer gives them */
};

struct wp_rstack {
	const struct wp_stack *src;
	uint32_t proc;       /* the process its samples came from: index in the model's procs */
	uint32_t tid;
	uint32_t flags;      /* WP_STACK_* */
	uint64_t count;
	uint64_t weight_ns;
	uint32_t n;
	struct wp_rframe *frames; /* ROOT FIRST; frames[n-1] is the leaf */
	uint32_t nlocs;
	uint32_t *locs;      /* LEAF FIRST, as in the file: indexes into the model's locs */
	/* What its waiting samples were blocked in (waits.h), for those the agent read from
	 * /proc: counts add up to at most `count`; the rest waited in no known call (a thread
	 * preempted, or signalled inside a call). Points into the model's waits. */
	const struct wp_rwait *waits;
	uint32_t nwaits;
	/* --wait-leaves=on: the stacks split off this one, one per wait that got its leaf
	 * (r->stacks[leaf0 .. leaf0 + nleaves)); a profile's stack id finds this one
	 * (wp_resolved_stack), which keeps the samples of no such wait. 0 and 0 otherwise. */
	uint32_t leaf0, nleaves;
};

struct wp_deadlock;

struct wp_resolved {
	const struct wp_profile *p;     /* what it was built from (the first of procs) */
	const struct wp_profile **procs; /* the profiles of every process it is over; procs[0] == p */
	size_t nprocs;
	struct wp_proc_id *ids;         /* each one's pid, ppid, start and CPU: the tree's parents
					 * and CPU per image are proctree.h's over these */
	struct wp_filter filter;
	struct wp_func *funcs;
	size_t nfuncs;
	struct wp_loc *locs;
	size_t nlocs;
	struct wp_rstack *stacks;       /* the kept stacks, in the profile's order */
	size_t nstacks;
	const struct wp_thread **threads; /* the kept THREAD records, in file order */
	uint32_t *thread_procs;         /* each one's process (index in procs) */
	size_t nthreads;
	uint64_t total;                 /* samples in the kept stacks */
	struct wp_rwait *waits;         /* every kept stack's, grouped by stack */
	size_t nwaits;
	/* the loops of threads waiting for each other as each profile was last written
	 * (deadlock_model.h), whatever the filter: a deadlock stops the whole process */
	const struct wp_deadlock *deadlocks;
	size_t ndeadlocks;
	struct wp_symbolizer *sym;
	void *priv;
};

/* Symbolizes every stack of `p` and keeps what `f` keeps (NULL: everything). Returns NULL
 * when out of memory setting up (message printed); out of memory later in the build, it says
 * so and exits (alloc.h's wp_x* allocators), as the symbolizer's caches cannot be unwound. */
struct wp_resolved *wp_resolve(const struct wp_profile *p, const struct wp_filter *f);

/* The same over the profiles of several processes (a run's tree; ps[0] first, as r->p).
 * Each process's addresses are symbolized with its own module map; functions are interned by
 * (name, module) over all of them, so the same function of the same binary is one function
 * whichever process ran it. Every kept stack and thread carries its process.
 * wp_resolve_update is of a model of one process only. */
struct wp_resolved *wp_resolve_many(const struct wp_profile *const *ps, size_t n,
				    const struct wp_filter *f);

/* wp_resolve of one process whose symbolizers (this one, and those wp_resolve_update makes
 * when the module map changes) read module files through `c`, the caller's, which must
 * outlive the model: the live view's models of a tree's processes share the libraries they
 * map, read once. */
struct wp_resolved *wp_resolve_cached(const struct wp_profile *p, const struct wp_filter *f,
				      struct wp_symcache *c);

/* Rebuilds the model over `p`, a later profile of the same program (the live view's
 * checkpoints), with the same filter. Function ids stay what they were (new functions get new
 * ids); unless the module map changed (dlopen, exec), the symbolizer and the locations are
 * reused, and so is every kept stack that `p` repeats (same id, thread and addresses): a
 * checkpoint costs a walk over its stacks. The profile the model was built from must still be
 * alive (its stacks are compared with p's); free it after. Returns 0, or -1 when out of
 * memory setting up (message printed; free the model); later, as wp_resolve, it exits. */
int wp_resolve_update(struct wp_resolved *r, const struct wp_profile *p);

void wp_resolved_free(struct wp_resolved *r);

/* The kept stack that the profile's stack `stack_id` became, or NULL (filtered out, unknown):
 * of the first process; wp_resolved_stack_of: of process `proc` (its timeline's ids). */
const struct wp_rstack *wp_resolved_stack(const struct wp_resolved *r, uint32_t stack_id);
const struct wp_rstack *wp_resolved_stack_of(const struct wp_resolved *r, uint32_t proc,
					     uint32_t stack_id);

/* A thread's last THREAD record (its latest name and flags), or NULL: of the first process;
 * wp_resolved_thread_of: of process `proc` (a stack's proc). */
const struct wp_thread *wp_resolved_thread(const struct wp_resolved *r, uint32_t tid);
const struct wp_thread *wp_resolved_thread_of(const struct wp_resolved *r, uint32_t proc,
					      uint32_t tid);
/* The pid of process `proc` (META pid), -1 when unknown; its name (procinfo.h's
 * wp_proc_name: its title when it retitled itself, else its program), "?" when unknown. */
long wp_resolved_pid(const struct wp_resolved *r, uint32_t proc);
const char *wp_resolved_program(const struct wp_resolved *r, uint32_t proc, char *buf,
				size_t cap);

/* The id of the function (name, module), added when new: for a view's own pseudo-functions
 * ("(no stack)"), which no stack of the model refers to. */
uint32_t wp_resolved_func(struct wp_resolved *r, const char *name, const char *module);

/* Whether `f` keeps thread `tid` of `p` (--process: p's pid or program name; --thread: a
 * tid, or the name of its last THREAD record). Selectors of threads are tested here. */
int wp_filter_keeps_thread(const struct wp_profile *p, const struct wp_filter *f, uint32_t tid);
/* Whether `f` keeps stack `s` of `p`: its thread, then any selector of samples. */
int wp_filter_keeps_stack(const struct wp_profile *p, const struct wp_filter *f,
			  const struct wp_stack *s);

#endif
