/* SPDX-License-Identifier: MIT */
/* The profile as the CLI sees it: the file read back into memory, validated. Every file is
 * treated as untrusted input; wp_profile_read never crashes on a corrupt file, it returns an
 * error message instead. */
#ifndef WP_PROFILE_H
#define WP_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "format.h"

struct wp_module {
	uint32_t id;
	uint32_t flags;
	uint64_t start, end, file_offset;
	uint8_t build_id[WP_MAX_BUILD_ID];
	uint32_t build_id_len;
	char *path;
};

struct wp_thread {
	uint32_t tid;
	uint32_t flags;
	uint64_t samples, running, waiting;
	uint64_t first_ns, last_ns;
	char *name;
	/* appended after THREAD's first version (format.h): the time it ran unseen, blocking
	 * the sampling signal, and why (""; both 0/"" in older files) */
	uint64_t unseen_ns;
	char *unseen_why;
};

struct wp_stack {
	uint32_t id;
	uint32_t tid;
	uint32_t flags;
	uint32_t nframes;
	uint64_t count;
	uint64_t weight_ns;
	uint64_t *pcs; /* leaf first */
};

/* What some waiting samples of one stack were blocked in (format.h's struct wp_rec_wait). */
struct wp_wait {
	uint32_t stack_id, nr;
	uint64_t a0, a1, a2, aux;
	uint64_t count, weight_ns;
	char *target; /* a descriptor's target, "" when none */
	/* the lock holder's STACK record sampled in the same tick (appended to WAIT after its first version), else
	 * WP_WAIT_NO_HOLDER_STACK (files of older agents, or no holder sampled) */
	uint32_t holder_stack;
	/* a futex wait inside a condition: the address of the mutex its waiter passed to
	 * pthread_cond_wait (appended after holder_stack), else 0 (none, or an older agent) */
	uint64_t cond_mutex;
};

/* One thread's state at its last sample (format.h's struct wp_rec_last): what it was blocked
 * in when the profile was written. */
struct wp_last {
	uint32_t tid, flags; /* WP_LAST_* */
	uint32_t stack_id, nr;
	uint64_t a0, a1, a2, aux;
	uint64_t cond_mutex, at_ns;
};

struct wp_tl_entry {
	uint64_t t_us; /* since the run's start */
	uint32_t tid;
	uint32_t stack_id;
};

struct wp_meta {
	char *key;
	char *value;
};

/* What META says that the command reads, parsed once when the profile is read
 * (docs/profile-format.md has the keys): each figure as wp_profile_meta_ll reads it, the
 * last line of a key winning. Strings point into the profile, NULL when the key is missing;
 * counts and times are 0 when missing (or not a positive number); a key read by name only
 * where it is one of a family (missed_<cause>, message_<n>). */
struct wp_profile_info {
	const char *command, *mode, *run;
	const char *version;        /* wallprof_version */
	long long pid, ppid;        /* -1 when missing */
	long long threads_per_tick; /* -1 when missing */
	long long threads_seen;     /* -1 when missing */
	uint64_t hz, ncpus, samples, ticks, ticks_late;
	uint64_t start_unix_ns, duration_ns, cpu_user_ns, cpu_sys_ns, sampler_cpu_ns;
	uint64_t window_n, window_sum_ns, window_p50_ns, window_p99_ns, window_max_ns;
	int has_sampler_cpu;        /* sampler_cpu_ns is there (an older agent's file has not) */
	int checkpoint;             /* checkpoint is there: not the process's final write */
	int timeline_truncated;
	uint64_t messages_dropped;  /* the agent's messages past its 16 (message_N) */
};

struct wp_profile {
	struct wp_meta *meta;
	size_t nmeta;
	struct wp_profile_info info; /* META, parsed */
	struct wp_module *modules;
	size_t nmodules;
	struct wp_thread *threads;
	size_t nthreads;
	struct wp_stack *stacks; /* sorted by id; ids are unique */
	size_t nstacks;
	struct wp_wait *waits; /* in file order (WAIT records: none in files of older agents) */
	size_t nwaits;
	struct wp_last *lasts; /* in file order (LAST records: none in files of older agents) */
	size_t nlasts;
	struct wp_tl_entry *timeline; /* per thread in time order, threads in file order */
	size_t ntimeline;
};

/* Reads and validates `path`. On failure returns -1 and writes a one-line reason (without the
 * path) into err. */
int wp_profile_read(const char *path, struct wp_profile **out, char *err, size_t errlen);
/* What a reader may leave out, for a caller that does not use it. WP_READ_NO_TIMELINE: the
 * TIMELINE records (only the speedscope export's time axis reads them; a long profile's
 * largest part): p->timeline is empty, and those records are neither decoded nor checked. */
enum { WP_READ_ALL = 0, WP_READ_NO_TIMELINE = 1 };
/* wp_profile_read, leaving out what `what` says (WP_READ_* or'ed). */
int wp_profile_read_some(const char *path, unsigned what, struct wp_profile **out, char *err,
			 size_t errlen);
/* The same over a buffer in memory (used by the fuzzer). */
int wp_profile_parse(const uint8_t *data, size_t len, struct wp_profile **out, char *err,
		     size_t errlen);
void wp_profile_free(struct wp_profile *p);

/* Value of a META key, or NULL. */
const char *wp_profile_meta(const struct wp_profile *p, const char *key);
/* Value of a META key as an integer, or `dflt` when missing or not a number. */
long long wp_profile_meta_ll(const struct wp_profile *p, const char *key, long long dflt);
/* How the process (this image of it) ended, from META: exec=1, died_of_signal, exit_status
 * (written since 0.3), or checkpoint=1 / flush=1 alone (no final word: it was killed by
 * SIGKILL, ended in a way the agent does not see, or was still running). A file of an older
 * agent that ended normally has none of them: WP_END_ENDED (the status was not recorded). */
enum wp_end { WP_END_ENDED, WP_END_EXIT, WP_END_SIGNAL, WP_END_EXEC, WP_END_NO_WORD };
/* *code: the exit status (WP_END_EXIT) or the signal (WP_END_SIGNAL), else 0. */
enum wp_end wp_profile_end(const struct wp_profile *p, int *code);
/* The stack with this id, or NULL. */
const struct wp_stack *wp_profile_stack(const struct wp_profile *p, uint32_t id);
/* The module mapping `pc`, or NULL. */
const struct wp_module *wp_profile_module_at(const struct wp_profile *p, uint64_t pc);
/* The thread with this tid, or NULL. */
const struct wp_thread *wp_profile_thread(const struct wp_profile *p, uint32_t tid);

/* Sum of every stack's sample count (saturating). */
uint64_t wp_profile_total_samples(const struct wp_profile *p);
/* Sum of every stack's weight_ns (saturating). */
uint64_t wp_profile_total_weight_ns(const struct wp_profile *p);

#endif
