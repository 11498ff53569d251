/* Writing the profile file (format: src/common/format.h, docs/profile-format.md).
 *
 * Written into "<path>.tmp.<pid>" opened O_EXCL|O_NOFOLLOW, then renamed over <path>: a
 * planted symlink is never followed and a reader never sees a half-written file under the
 * final name. Uses only open/write/rename/close and a static buffer (no malloc, no stdio), so
 * the same code can run from a fatal-signal handler. */
#ifndef WP_WRITER_H
#define WP_WRITER_H

/* Extra META lines ("key=value\n"...) may be passed in `extra` (or NULL). Returns 0 or -errno
 * and says nothing: the caller knows whether a failure loses the profile. Opens a file: call
 * it on the agent's own descriptor table (the sampler thread) but from the fallback paths. */
int wp_writer_write(const char *path, const char *extra);

#endif
