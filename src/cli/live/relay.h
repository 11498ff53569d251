/* SPDX-License-Identifier: MIT */
/* --live: the program's terminal output, relayed through a pseudo-terminal of ours while the
 * view is up (relay.c). */
#ifndef WP_LIVE_RELAY_H
#define WP_LIVE_RELAY_H

#include <stdint.h>
#include <stdio.h>
#include <sys/ioctl.h>

#define RELAY_LINES 4      /* the program's last lines, shown at the bottom of the view */
#define RELAY_LINE_MAX 512

struct relay {
	int master;      /* our end, or -1 (no pseudo-terminal: the program writes over the view) */
	int slave;       /* the program's standard output and error (we keep it open too) */
	int out_tty, err_tty, in_tty; /* which of ours were the terminal */
	FILE *captured;  /* the output while the view is up, replayed when it closes */
	uint64_t kept, dropped;
	int passthrough; /* the view is closed: output goes straight to our standard output */
	/* the printable text of the last lines */
	char lines[RELAY_LINES][RELAY_LINE_MAX];
	int nlines, head;
	char cur[RELAY_LINE_MAX]; /* the line being written */
	size_t curlen;
	int esc; /* 0 text, 1 after ESC, 2 in a CSI sequence, 3 in an OSC string */
	int cr;  /* a carriage return: the line starts over unless a newline follows */
};

/* Opens the pseudo-terminal when our standard output or error is a terminal, with the
 * terminal's settings and size (a message when it cannot: the program then draws over the
 * view). */
void relay_open(struct relay *r);
/* In the child, before exec: its standard output and error (those that were the terminal) on
 * the pseudo-terminal; its standard input /dev/null when it was the terminal, the keyboard
 * being the view's. */
void relay_child(const struct relay *r);
/* Reads what the program wrote (a bounded amount: a chatty program does not hold the loop):
 * kept for the replay and its last lines, or passed through once the view is closed. */
void relay_drain(struct relay *r);
/* The view closed: what the program wrote meanwhile goes to the terminal, and from now on
 * everything as it comes. */
void relay_replay(struct relay *r);
/* The program's terminal takes the size of ours. */
void relay_resize(struct relay *r, const struct winsize *ws);
/* The last lines to show (at most RELAY_LINES), oldest first: the last complete lines, then
 * the one being written (a prompt, a progress bar). Returns how many. */
int relay_last_lines(struct relay *r, const char *out[RELAY_LINES]);
/* Closes both ends. */
void relay_close(struct relay *r);

#endif
