/* SPDX-License-Identifier: MIT */
/* Counts over the model's stacks that the reports show (resolve.h is the model itself): per
 * function over a subset of stacks (a thread's, a process's) and the one ranking of
 * functions; per thread and per process, the images of one pid taken as one process; which
 * process ran a function most. Reports format these and count nothing of their own. */
#ifndef WP_TALLY_H
#define WP_TALLY_H

#include <stddef.h>
#include <stdint.h>

struct wp_resolved;
struct wp_rstack;

/* Self and total samples per function over some of the model's stacks: a thread's section,
 * a view's selection. Indexed by function id. */
struct wp_tally {
	uint64_t *self, *total;
	uint64_t samples;
};

/* Counts the stacks for which keep(stack, arg) is nonzero. Returns 0, -1 when out of memory. */
int wp_tally(const struct wp_resolved *r, int (*keep)(const struct wp_rstack *, void *),
	     void *arg, struct wp_tally *t);
void wp_tally_free(struct wp_tally *t);

/* Orders of wp_funcs_ranked, so that every report ranks functions the same way. */
enum wp_rank {
	WP_RANK_SELF,     /* functions that were a leaf: most self samples first, then most
			   * total, then by name */
	WP_RANK_ANY_SELF, /* every function with samples, in the same order */
	WP_RANK_TOTAL,    /* every function with samples: most total first, then as above */
};

/* The ids of the functions with samples in `t` (NULL: the model's own counts), ranked.
 * Returns a malloc'ed array of *n ids, NULL when out of memory. */
uint32_t *wp_funcs_ranked(const struct wp_resolved *r, const struct wp_tally *t,
			  enum wp_rank order, size_t *n);


/* Selectors of stacks for wp_tally: wp_stack_of_thread keeps thread `tid` of pid `pid`
 * (every image of that pid: exec keeps the calling thread), wp_stack_of_pid every thread of
 * pid `pid`; `arg` is a struct wp_stack_sel. */
struct wp_stack_sel {
	const struct wp_resolved *r;
	long pid;
	uint32_t tid;
};
int wp_stack_of_thread(const struct wp_rstack *s, void *arg);
int wp_stack_of_pid(const struct wp_rstack *s, void *arg);

/* The pid with most of function f's samples (self, or with `total` anywhere in the stack:
 * once per sample), the images of one pid added up (the earliest wins a tie); *several:
 * whether other pids had some too. */
long wp_func_main_pid(const struct wp_resolved *r, uint32_t f, int total, int *several);

/* A thread of the model: tids are a process's own and the images of one pid share their
 * threads, so a thread is a (pid, tid); `proc` is the image it was first met in. */
struct wp_thread_count {
	uint32_t proc, tid;
	long pid;
	uint64_t samples;
	uint64_t waiting;  /* its waiting samples (rwaits.h's wp_rstack_waiting) */
};

/* The threads with samples: most samples first, then by tid, then the first met first.
 * Returns a malloc'ed array of *n (NULL and 0 when none), or NULL and *n = SIZE_MAX when
 * out of memory. *unsampled: the model's THREAD records of no thread among them (seen, never
 * sampled). */
struct wp_thread_count *wp_thread_counts(const struct wp_resolved *r, size_t *n,
					 size_t *unsampled);

/* Threads grouped by name (a pool shows as one line): most samples first, then by name. */
struct wp_thread_name {
	const char *name;  /* the thread's last THREAD record's, "?" when none */
	size_t threads;
	uint64_t samples;
};
/* Over the n threads `tc`. Returns a malloc'ed array of *ngroups, NULL when out of memory
 * (or n is 0). */
struct wp_thread_name *wp_thread_names(const struct wp_resolved *r,
				       const struct wp_thread_count *tc, size_t n,
				       size_t *ngroups);

/* The processes as pids: head[k], the first image (index in r->procs) of process k's pid;
 * samples[k], for a first image, the samples of every image of its pid (0 for the others).
 * Both are the caller's arrays of r->nprocs. Returns the number of pids. */
size_t wp_pid_samples(const struct wp_resolved *r, size_t *head, uint64_t *samples);
/* The images of process k's pid, and the last of them (they are in the order they started). */
size_t wp_pid_images(const struct wp_resolved *r, size_t k, size_t *last);

#endif
