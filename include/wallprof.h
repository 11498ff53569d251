/* wallprof: a wall-clock and CPU sampling profiler for Linux programs.
 *
 * Most programs never include this header: `LD_PRELOAD=libwallprof.so ./app` (or
 * `wallprof -- ./app`) profiles them unchanged. Programs that link libwallprof directly can
 * use the functions below. Every function is safe to call from any thread. */
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

/* The library's version, e.g. "0.1.0". Never NULL. */
WALLPROF_API const char *wallprof_version(void);

#ifdef __cplusplus
}
#endif

#endif
