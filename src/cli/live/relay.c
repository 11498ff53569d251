/* SPDX-License-Identifier: MIT */
/* --live: the program's output (relay.h).
 *
 * The program's own terminal output would scribble over the view: while the view is up, its
 * standard output (and standard error, when that is the terminal too) go to a pseudo-terminal
 * of ours, so it still sees a terminal (same settings, same size, line buffering). The last
 * lines are shown at the bottom of the view, and everything is replayed on the real terminal
 * when the view closes; after that its output passes straight through. Its standard input,
 * when it was the terminal, is /dev/null: the keyboard belongs to the view. */
#include "relay.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "term.h"

#define KEEP_OUTPUT_MAX (64ull << 20) /* program output kept while the view is up */

void relay_open(struct relay *r)
{
	char name[128];
	memset(r, 0, sizeof(*r));
	r->out_tty = isatty(STDOUT_FILENO);
	r->err_tty = isatty(STDERR_FILENO);
	r->in_tty = isatty(STDIN_FILENO);
	r->master = r->slave = -1;
	r->captured = tmpfile();
	if (!r->out_tty && !r->err_tty)
		return;
	/* We keep the slave open too: the master never reads EIO (no writer yet, or the program
	 * gone), and we stop reading once the program has exited. */
	r->master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (r->master < 0 || grantpt(r->master) != 0 || unlockpt(r->master) != 0 ||
	    ptsname_r(r->master, name, sizeof(name)) != 0 ||
	    (r->slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0) {
		fprintf(stderr, "wallprof: cannot open a pseudo-terminal for the program's output "
				"(%s); it will draw over the view\n", strerror(errno));
		if (r->master >= 0)
			close(r->master);
		r->master = -1;
		return;
	}
	struct winsize ws;
	struct termios tio;
	if (tcgetattr(STDOUT_FILENO, &tio) == 0)
		tcsetattr(r->slave, TCSANOW, &tio);
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0)
		ioctl(r->slave, TIOCSWINSZ, &ws);
	fcntl(r->master, F_SETFL, fcntl(r->master, F_GETFL) | O_NONBLOCK);
}

void relay_child(const struct relay *r)
{
	if (r->slave >= 0) {
		if (r->out_tty)
			dup2(r->slave, STDOUT_FILENO);
		if (r->err_tty)
			dup2(r->slave, STDERR_FILENO);
	}
	if (r->in_tty) {
		int nul = open("/dev/null", O_RDONLY);
		if (nul >= 0 && nul != STDIN_FILENO) {
			dup2(nul, STDIN_FILENO);
			close(nul);
		}
	}
}

void relay_resize(struct relay *r, const struct winsize *ws)
{
	if (r->master >= 0)
		ioctl(r->master, TIOCSWINSZ, ws);
}

int relay_last_lines(struct relay *r, const char *out[RELAY_LINES])
{
	int partial = r->curlen > 0, whole = r->nlines, n = 0;
	if (whole + partial > RELAY_LINES)
		whole = RELAY_LINES - partial;
	for (int i = 0; i < whole; i++)
		out[n++] = r->lines[(r->head - whole + i + RELAY_LINES) % RELAY_LINES];
	if (partial) {
		r->cur[r->curlen] = 0;
		out[n++] = r->cur;
	}
	return n;
}

void relay_close(struct relay *r)
{
	if (r->master >= 0)
		close(r->master);
	if (r->slave >= 0)
		close(r->slave);
	r->master = r->slave = -1;
}

static void commit_line(struct relay *r)
{
	r->cur[r->curlen] = 0;
	memcpy(r->lines[r->head], r->cur, r->curlen + 1);
	r->head = (r->head + 1) % RELAY_LINES;
	if (r->nlines < RELAY_LINES)
		r->nlines++;
	r->curlen = 0;
}

/* Keeps the printable text of the output's last lines (escape sequences dropped). */
static void feed(struct relay *r, const char *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)b[i];
		if (r->esc == 1) {
			r->esc = c == '[' ? 2 : c == ']' ? 3 : 0;
			continue;
		}
		if (r->esc == 2) {
			if (c >= 0x40 && c <= 0x7e)
				r->esc = 0;
			continue;
		}
		if (r->esc == 3) {
			if (c == 7 || c == 0x1b)
				r->esc = c == 0x1b ? 1 : 0;
			continue;
		}
		if (c == '\n') {
			commit_line(r);
			r->cr = 0;
			continue;
		}
		if (c == '\r') {
			r->cr = 1;
			continue;
		}
		if (r->cr) { /* a progress line rewriting itself */
			r->curlen = 0;
			r->cr = 0;
		}
		if (c == 0x1b)
			r->esc = 1;
		else if (c == '\t' && r->curlen < RELAY_LINE_MAX - 1)
			r->cur[r->curlen++] = ' ';
		else if ((c >= 0x20 && c != 0x7f) && r->curlen < RELAY_LINE_MAX - 1)
			r->cur[r->curlen++] = (char)c;
	}
}

void relay_drain(struct relay *r)
{
	if (r->master < 0)
		return;
	char buf[8192];
	for (int rounds = 0; rounds < 64; rounds++) { /* a chatty program does not hold us */
		ssize_t n = read(r->master, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) { /* EIO: every writer is gone */
			close(r->master);
			r->master = -1;
			return;
		}
		if (r->passthrough) {
			term_write_all(STDOUT_FILENO, buf, (size_t)n);
		} else {
			if (r->captured && r->kept + (uint64_t)n <= KEEP_OUTPUT_MAX) {
				fwrite(buf, 1, (size_t)n, r->captured);
				r->kept += (uint64_t)n;
			} else {
				r->dropped += (uint64_t)n;
			}
			feed(r, buf, (size_t)n);
		}
	}
}

void relay_replay(struct relay *r)
{
	if (r->passthrough)
		return;
	r->passthrough = 1;
	if (!r->captured)
		return;
	fflush(r->captured);
	rewind(r->captured);
	char buf[8192];
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), r->captured)) > 0)
		term_write_all(STDOUT_FILENO, buf, n);
	fclose(r->captured);
	r->captured = NULL;
	if (r->dropped)
		fprintf(stderr, "\nwallprof: the program wrote %llu more bytes while the view was up; "
				"past the first %llu MiB they were not kept\n",
			(unsigned long long)r->dropped, KEEP_OUTPUT_MAX >> 20);
}
