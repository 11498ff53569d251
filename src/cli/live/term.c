/* SPDX-License-Identifier: MIT */
/* --live: the terminal and the signals (term.h).
 *
 * The view takes the terminal: the alternate screen, no cursor, no line wrap, keys one at a
 * time (no canonical mode, no echo; ISIG stays on, so Ctrl-C, Ctrl-\ and Ctrl-Z reach the
 * program and us through the terminal as usual: Ctrl-C ends the program, and with it the
 * view). It is given back on every way out: the program's exit, `q`, SIGTERM/SIGHUP/SIGQUIT,
 * a crash of wallprof (fatal signal handlers), exit() (atexit), and Ctrl-Z (given back
 * before stopping, taken again on `fg`). */
#include "term.h"

#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

static int tty_fd = -1;  /* where the view is drawn: standard output */
static int key_fd = -1;  /* where keys come from: standard input, or /dev/tty; -1 = none */
static int key_fd_opened;
static struct termios saved_tio;
static int tio_saved;
static volatile sig_atomic_t in_view;

static const char enter_seq[] = "\033[?1049h\033[?25l\033[?7l\033[H\033[2J";
static const char leave_seq[] = "\033[0m\033[?7h\033[?25h\033[?1049l";

/* Async-signal-safe (write only). */
void term_write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

void term_draw(const char *buf, size_t n)
{
	term_write_all(tty_fd, buf, n);
}

int term_open(void)
{
	tty_fd = STDOUT_FILENO;
	if (isatty(STDIN_FILENO)) {
		key_fd = STDIN_FILENO;
	} else {
		key_fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
		key_fd_opened = key_fd >= 0;
	}
	if (key_fd >= 0 && tcgetattr(key_fd, &saved_tio) == 0)
		tio_saved = 1;
	return key_fd;
}

void term_close(void)
{
	if (key_fd_opened)
		close(key_fd);
	key_fd = -1;
	key_fd_opened = 0;
}

int term_key_fd(void)
{
	return key_fd;
}

int term_size(struct winsize *ws)
{
	return ioctl(tty_fd, TIOCGWINSZ, ws) == 0 && ws->ws_col && ws->ws_row ? 0 : -1;
}

int term_in_view(void)
{
	return in_view;
}

/* Async-signal-safe: termios back as it was, cursor and wrap on, main screen. */
void term_restore(void)
{
	if (!in_view)
		return;
	in_view = 0;
	int e = errno;
	if (tio_saved)
		tcsetattr(key_fd, TCSANOW, &saved_tio);
	term_write_all(tty_fd, leave_seq, sizeof(leave_seq) - 1);
	errno = e;
}

int term_enter(void)
{
	if (tio_saved) {
		struct termios t = saved_tio;
		t.c_lflag &= ~(tcflag_t)(ICANON | ECHO | IEXTEN);
		t.c_iflag &= ~(tcflag_t)(IXON | ICRNL);
		t.c_cc[VMIN] = 1;
		t.c_cc[VTIME] = 0;
		if (tcsetattr(key_fd, TCSANOW, &t) != 0)
			return -1;
	}
	in_view = 1;
	term_write_all(tty_fd, enter_seq, sizeof(enter_seq) - 1);
	return 0;
}

void term_oom(void)
{
	term_restore();
	fprintf(stderr, "wallprof: out of memory\n");
	exit(1);
}

/* ---------------------------------------------------------------------------------------- */
/* Signals: handlers note them and wake the loop through a pipe */

static int wake_pipe[2] = { -1, -1 };
static volatile sig_atomic_t pending[NSIG];
static volatile pid_t child_pid;

/* Async-signal-safe: getpgid, getpgrp, kill, write. */
static void on_signal(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	int e = errno;
	/* Termination requests are the program's business first, as in the record path. But
	 * what the terminal sends (Ctrl-C, Ctrl-\, hangup: si_code SI_KERNEL) goes to its whole
	 * foreground process group, the program included when it stayed in ours: passing those
	 * on too would make one Ctrl-C two, and "press Ctrl-C again to force" programs exit. */
	if ((sig == SIGINT || sig == SIGTERM || sig == SIGHUP || sig == SIGQUIT) && child_pid > 0 &&
	    !(si && si->si_code == SI_KERNEL && getpgid(child_pid) == getpgrp()))
		kill(child_pid, sig);
	pending[sig] = 1;
	char c = (char)sig;
	if (wake_pipe[1] >= 0 && write(wake_pipe[1], &c, 1) < 0) {
		/* full: the loop is awake already */
	}
	errno = e;
}

/* Async-signal-safe once backtrace() has run outside a handler (its first call loads the
 * unwinder): what a bug report needs, the signal and the module offsets of the stack. */
static void say_crash(int sig)
{
	char msg[96] = "wallprof: internal error: died of signal ";
	size_t n = strlen(msg);
	char digits[4];
	int nd = 0;
	do
		digits[nd++] = (char)('0' + sig % 10);
	while ((sig /= 10) && nd < (int)sizeof(digits));
	while (nd)
		msg[n++] = digits[--nd];
	static const char tail[] = "; its stack, for a bug report:\n";
	memcpy(msg + n, tail, sizeof(tail) - 1);
	n += sizeof(tail) - 1;
	if (write(2, msg, n) < 0) {
		/* nowhere to say it */
	}
	void *pcs[64];
	backtrace_symbols_fd(pcs, backtrace(pcs, 64), 2);
}

/* wallprof itself crashed: give the terminal back, say where, then die of the same signal. */
static void on_crash(int sig, siginfo_t *si, void *uc)
{
	(void)si;
	(void)uc;
	term_restore();
	say_crash(sig);
	signal(sig, SIG_DFL);
	raise(sig);
}

static void handle(int sig, void (*fn)(int, siginfo_t *, void *), int flags)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = fn;
	sa.sa_flags = flags | SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, NULL);
}

static const int noted[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH, SIGCHLD, SIGTSTP,
			     SIGCONT };

int term_signals_init(void)
{
	return pipe2(wake_pipe, O_CLOEXEC | O_NONBLOCK);
}

void term_signals_catch(pid_t child)
{
	child_pid = child;
	atexit(term_restore);
	void *warm[1];
	backtrace(warm, 1); /* loads the unwinder now, not inside on_crash */
	static const int crash[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS };
	for (size_t i = 0; i < sizeof(crash) / sizeof(crash[0]); i++)
		handle(crash[i], on_crash, SA_RESETHAND | SA_NODEFER);
	for (size_t i = 0; i < sizeof(noted) / sizeof(noted[0]); i++)
		handle(noted[i], on_signal, 0);
	signal(SIGPIPE, SIG_IGN);
}

int term_signal_taken(int sig)
{
	if (!pending[sig])
		return 0;
	pending[sig] = 0;
	return 1;
}

int term_wake_fd(void)
{
	return wake_pipe[0];
}

void term_wake_drain(void)
{
	char drain[64];
	while (read(wake_pipe[0], drain, sizeof(drain)) > 0)
		;
}

void term_signals_end(void)
{
	child_pid = 0;
	for (size_t i = 0; i < sizeof(noted) / sizeof(noted[0]); i++)
		signal(noted[i], SIG_DFL);
	signal(SIGPIPE, SIG_DFL);
	close(wake_pipe[0]);
	close(wake_pipe[1]);
	wake_pipe[0] = wake_pipe[1] = -1;
}

int term_suspend(void)
{
	int was = in_view;
	term_restore();
	signal(SIGTSTP, SIG_DFL);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTSTP);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	raise(SIGTSTP);
	/* continued */
	handle(SIGTSTP, on_signal, 0);
	return was && term_enter() == 0;
}
