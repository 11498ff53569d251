/* SPDX-License-Identifier: MIT */
/* The agent's only way to speak: one line at a time, prefixed "wallprof: ".
 *
 * The program's stderr is the program's output (tests compare it), so a line reaches it only
 * when all of these hold: WALLPROF_QUIET is not 1, the agent was not started by the
 * `wallprof` command, this is the process the user started (not a fork child, not a program
 * it ran), and fd 2 is still the stderr the process started with. Every warning is kept for
 * the profile (META message_N, at most 16 a process, then messages_dropped counts): that is
 * how each one reaches the report, whichever process said it. Under the command it also goes
 * through the command's channel (a pipe the command passes in WALLPROF_PROGRESS_FD, which the
 * sampler keeps in its own descriptor table), which the command shows only when the run left
 * no profile.
 *
 * Async-signal-safe: formats into a stack buffer, never allocates, never touches stdio (the
 * host's stdio buffers and locks are the host's). */
#ifndef WP_LOG_H
#define WP_LOG_H

#include <stddef.h>
#include <stdint.h>

/* Once, first thing in the constructor (before the settings are read: their complaints are
 * lines too). Not async-signal-safe (it reads the parent's environment from /proc). Notes the stderr the process starts with, whether the command started it, and
 * the command's channel when this process is the one the command ran. */
void wp_log_init(char *(*getenv_fn)(const char *));

/* From now on nothing on stderr, as WALLPROF_QUIET=1 (wallprof_start's quiet option). */
void wp_log_quiet(void);

/* In a fork child: a process the user did not start; the channel is the parent's, and so
 * are the warnings kept so far (in the parent's profile). */
void wp_log_forked(void);

/* A warning: printf-like with a small, async-signal-safe subset: %s %d %u %ld %lu %lld %llu
 * %x %lx %% and a field width for numbers (e.g. %5u). Appends the newline. Kept for the
 * profile, sent to the command, printed on stderr when allowed (above). */
void wp_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The summary line at exit: printed when allowed, never kept or sent. */
void wp_log_summary(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The formatter behind wp_log, for building lines elsewhere (META text). Returns the length
 * written, at most cap-1, always NUL-terminated. */
size_t wp_format(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The command's channel: the descriptor to keep when the sampler makes its own descriptor
 * table (-1 when there is none), and the hand-over once it has: the program's copy is closed,
 * so the program never sees it and its children do not inherit it. */
int wp_log_channel_fd(void);
/* Not async-signal-safe: the constructor's, once. */
void wp_log_channel_handover(int private_table);
/* Sends one line (progress) to the command; on the sampler thread only. Non-blocking. */
void wp_log_channel_write(const char *line, size_t n);
/* On the sampler thread: sends the warnings the command has not had yet. */
void wp_log_forward(void);

/* The kept warnings as META lines "message_1=...\n" ... into buf; returns the length. */
size_t wp_log_meta(char *buf, size_t cap);

#endif
