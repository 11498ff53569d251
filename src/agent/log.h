/* The agent's only way to speak: one line at a time with write(2), prefixed "wallprof: ".
 * Async-signal-safe: formats into a stack buffer, never allocates, never touches stdio (the
 * host's stdio buffers and locks are the host's). The CLI may pass WALLPROF_LOG_FD to route
 * these lines away from the program's stderr. */
#ifndef WP_LOG_H
#define WP_LOG_H

#include <stddef.h>
#include <stdint.h>

/* Sets the descriptor lines go to (default 2). */
void wp_log_set_fd(int fd);

/* printf-like with a small, async-signal-safe subset: %s %d %u %ld %lu %lld %llu %x %lx %%
 * and a field width for numbers (e.g. %5u). Appends the newline. */
void wp_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The formatter behind wp_log, for building lines elsewhere (META text). Returns the length
 * written, at most cap-1, always NUL-terminated. */
size_t wp_format(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
