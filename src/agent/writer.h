/* SPDX-License-Identifier: MIT */
/* Writing the profile file (format: src/common/format.h, docs/profile-format.md).
 *
 * Written into "<path>.tmp.<pid>" opened O_EXCL|O_NOFOLLOW, then renamed over <path>: a
 * planted symlink is never followed and a reader never sees a half-written file under the
 * final name.
 *
 * What it may be called from: normally the sampler thread (agent.c hands it the writes), and
 * as a fallback a fatal-signal handler. For that it uses only system calls (open, write,
 * close, rename, unlink, getrusage, clock_gettime), the agent's own formatter and a static
 * buffer: no malloc, no stdio, no lock. It is NOT reentrant: one writer at a time (an atomic
 * flag); a second one waits at most 2 s in 1 ms sleeps and then gives up with -EBUSY, so a
 * fatal signal on the very thread that is writing loses that write rather than deadlocking.
 * It reads the sample tables without a lock: only call it while the sampler is stopped or
 * from the sampler thread itself. */
#ifndef WP_WRITER_H
#define WP_WRITER_H

/* Extra META lines ("key=value\n"...) may be passed in `extra` (or NULL). Returns 0 or -errno
 * and says nothing: the caller knows whether a failure loses the profile. Opens a file: call
 * it on the agent's own descriptor table (the sampler thread) but from the fallback paths. */
int wp_writer_write(const char *path, const char *extra);
/* A fork child: a write the parent's sampler had under way (a checkpoint) is not the child's;
 * without this its final write would wait 2 s for it and give up. */
void wp_writer_abandon(void);

#endif
