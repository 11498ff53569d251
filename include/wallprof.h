/* SPDX-License-Identifier: MIT */
/* wallprof: a wall-clock and CPU sampling profiler for Linux programs.
 *
 * Most programs never include this header: `wallprof -- ./app` (or
 * `LD_PRELOAD=libwallprof.so ./app`) profiles them unchanged, from start to exit.
 *
 * A program that links libwallprof (pkg-config wallprof) controls profiling itself with the
 * functions below: start and stop around the part it cares about, flush a profile while it
 * keeps running, and name or exclude its own threads. Linked (not preloaded), nothing is
 * sampled until wallprof_start(), unless WALLPROF_AUTOSTART=1.
 *
 * Every function is thread-safe and returns 0 or a negative errno value. None may be called
 * from a signal handler. Profiles are read with `wallprof --report FILE`. */
#ifndef WALLPROF_H
#define WALLPROF_H

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define WALLPROF_API __attribute__((visibility("default")))
#else
#define WALLPROF_API
#endif

#define WALLPROF_OPTIONS_VERSION 1

/* Settings for wallprof_start. Zero/NULL fields take the environment's WALLPROF_* value, or
 * the default when that is unset too. */
struct wallprof_options {
	int version;       /* WALLPROF_OPTIONS_VERSION */
	const char *mode;  /* "wall" (default) or "cpu" */
	int hz;            /* ticks per second, 1-10000 (default 100) */
	int threads;       /* wall mode: threads per tick (default 16); -1 = all */
	const char *out;   /* profile path written by wallprof_stop; "%p" = pid
			      (default "wallprof.%p.prof") */
	int quiet;         /* 1: nothing on stderr: no summary line, no warning (the profile
			      keeps them), as WALLPROF_QUIET=1 */
};

/* The library's version, e.g. "0.1.0". Never NULL. */
WALLPROF_API const char *wallprof_version(void);

/* Starts sampling every thread of the process with `opts` (NULL: the environment's settings).
 * A new start begins a new profile.
 * Returns 0; -EALREADY when already sampling; -EINVAL for a bad setting (one line on stderr
 * names it); or another -errno when the sampler cannot start. */
WALLPROF_API int wallprof_start(const struct wallprof_options *opts);

/* Stops sampling and writes the profile to the configured path.
 * Returns 0; -ESRCH when not sampling; or -errno when the file cannot be written. */
WALLPROF_API int wallprof_stop(void);

/* Writes the profile so far to `path` (NULL: the configured path) and keeps sampling. The
 * file is written to a temporary name and renamed, so readers never see half of it.
 * Returns 0; -ESRCH when not sampling; or -errno when the file cannot be written. */
WALLPROF_API int wallprof_flush(const char *path);

/* Names the calling thread in profiles (at most 15 bytes are kept), without renaming it for
 * the rest of the system. NULL forgets the name. Returns 0, -EINVAL, or -ENOSPC when 256
 * threads are already named. */
WALLPROF_API int wallprof_thread_name(const char *name);

/* exclude = 1: the calling thread is never sampled from now on (e.g. a thread whose timing
 * must not be touched at all); 0: it is sampled again. Returns 0, or -ENOSPC when 256
 * threads are already excluded. */
WALLPROF_API int wallprof_thread_exclude(int exclude);

#ifdef __cplusplus
}
#endif

#endif
