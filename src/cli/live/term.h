/* SPDX-License-Identifier: MIT */
/* --live: the terminal (taken for the view, given back on every way out) and the signals that
 * reach wallprof while the view is up. One terminal per process: the state is global, as the
 * signal handlers that give the terminal back need it. */
#ifndef WP_LIVE_TERM_H
#define WP_LIVE_TERM_H

#include <stddef.h>
#include <sys/ioctl.h>
#include <sys/types.h>

/* Finds the terminal: the view is drawn on standard output, keys come from standard input
 * when it is a terminal, else from /dev/tty (none when there is no terminal to read). Saves
 * its settings. Returns the descriptor keys come from, or -1. */
int term_open(void);
/* Closes what term_open opened. */
void term_close(void);
/* The descriptor keys come from, or -1. */
int term_key_fd(void);
/* The terminal's size (TIOCGWINSZ on standard output); -1 when unknown. */
int term_size(struct winsize *ws);

/* Takes the terminal for the view: keys one at a time without echo (ISIG stays on), the
 * alternate screen, no cursor, no line wrap. Returns 0, or -1 when the settings cannot be
 * changed (errno set). */
int term_enter(void);
/* Gives it back as it was. Async-signal-safe: also called from the crash handlers and at
 * exit. Does nothing when the view is not up. */
void term_restore(void);
/* Whether the view has the terminal. */
int term_in_view(void);
/* Ctrl-Z: the terminal back to the shell, and stop; once continued (fg), take it again when
 * the view had it. Returns 1 when the view is up again (it must be redrawn whole). */
int term_suspend(void);
/* Writes a frame of the view (screen.h) to the terminal. */
void term_draw(const char *buf, size_t n);
/* Writes all of buf to fd, retrying after a signal; gives up on an error. */
void term_write_all(int fd, const void *buf, size_t n);
/* Out of memory: the terminal back, a message, exit 1. */
void term_oom(void) __attribute__((noreturn));

/* The signals: noted by handlers, which wake the loop through a pipe (term_wake_fd).
 * SIGINT, SIGTERM, SIGHUP and SIGQUIT are passed on to `child` first, unless the terminal
 * sent them to its whole foreground group, the child included. A crash of wallprof gives the
 * terminal back before dying of the same signal. term_signals_init makes the pipe (before
 * the program is started: it is close-on-exec) and term_signals_catch installs the handlers
 * (after: the program must not inherit SIGPIPE ignored). */
int term_signals_init(void);
void term_signals_catch(pid_t child);
/* Whether `sig` came since the last call; clears it. */
int term_signal_taken(int sig);
/* The pipe's end to poll, and emptying it once awake. */
int term_wake_fd(void);
void term_wake_drain(void);
/* Default dispositions back, the pipe closed; the child is no longer signalled. */
void term_signals_end(void);

#endif
