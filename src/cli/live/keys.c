/* SPDX-License-Identifier: MIT */
/* --live: the keyboard's bytes to keys (keys.h).
 *
 * Arrows and the like come as escape sequences: ESC [ A (CSI), ESC O A (SS3, the keypad in
 * application mode), ESC [ 5 ~ (PgUp), ESC [ 1 ; 5 A (with a modifier). A read can end
 * anywhere in one (a slow link, a busy terminal), so the parser keeps its place between
 * bytes instead of looking ahead within one read. ESC alone is also a key: it is told from
 * the start of a sequence by what follows, or by nothing following for a moment
 * (keys_timeout). CSI grammar (ECMA-48): parameter bytes 0x30-0x3f, intermediate bytes
 * 0x20-0x2f, one final byte 0x40-0x7e. */
#include "keys.h"

#include <stddef.h>

enum { GROUND, ESC, CSI, SS3 };

/* The key for a CSI or SS3 final byte; `param` is the first number (CSI ~ keys). */
static int final_key(unsigned char f, int param)
{
	switch (f) {
	case 'A': return KEY_UP;
	case 'B': return KEY_DOWN;
	case 'H': return KEY_HOME;
	case 'F': return KEY_END;
	case '~':
		switch (param) {
		case 1: case 7: return KEY_HOME;
		case 4: case 8: return KEY_END;
		case 5: return KEY_PGUP;
		case 6: return KEY_PGDN;
		}
		return KEY_NONE;
	}
	return KEY_NONE;
}

static int emit_special(struct key out[2], int n, int special)
{
	if (special != KEY_NONE)
		out[n++] = (struct key){ 0, special };
	return n;
}

int keys_feed(struct keys *k, unsigned char c, struct key out[2])
{
	int n = 0;
	switch (k->state) {
	case ESC:
		if (c == '[') {
			k->state = CSI;
			k->param = 0;
			k->in_first = 1;
			return 0;
		}
		if (c == 'O') {
			k->state = SS3;
			return 0;
		}
		/* not a sequence: the Esc key, then this byte as itself */
		out[n++] = (struct key){ 0, KEY_ESC };
		k->state = GROUND;
		break;
	case CSI:
		if (c >= '0' && c <= '9') {
			if (k->in_first && k->param < 1000)
				k->param = k->param * 10 + (c - '0');
			return 0;
		}
		if (c >= 0x20 && c <= 0x3f) { /* ';' and the like: the first number is done */
			k->in_first = 0;
			return 0;
		}
		k->state = GROUND;
		if (c >= 0x40 && c <= 0x7e)
			return emit_special(out, 0, final_key(c, k->param));
		break; /* a control byte cuts the sequence short: it is a key of its own */
	case SS3:
		k->state = GROUND;
		if (c >= 0x40 && c <= 0x7e)
			return emit_special(out, 0, final_key(c, 0));
		break;
	}
	if (c == 0x1b) {
		k->state = ESC;
		return n;
	}
	out[n++] = (struct key){ c, KEY_NONE };
	return n;
}

int keys_pending(const struct keys *k)
{
	return k->state != GROUND;
}

int keys_timeout(struct keys *k, struct key *out)
{
	int lone_esc = k->state == ESC;
	k->state = GROUND;
	if (lone_esc)
		*out = (struct key){ 0, KEY_ESC };
	return lone_esc;
}

enum key_action keys_action(struct key k)
{
	switch (k.special) {
	case KEY_UP: return ACT_UP;
	case KEY_DOWN: return ACT_DOWN;
	case KEY_PGUP: return ACT_PGUP;
	case KEY_PGDN: return ACT_PGDN;
	case KEY_HOME: return ACT_TOP;
	case KEY_END: return ACT_BOTTOM;
	case KEY_ESC: return ACT_ALL;
	}
	if (k.special)
		return ACT_NONE;
	switch (k.ch) {
	case 'q': case 'Q': return ACT_QUIT;
	case 't': case 'T': return ACT_THREADS;
	case 'w': case 'W': return ACT_WAITS;
	case 's': case 'S': return ACT_SORT;
	case 'p': case 'P': case ' ': return ACT_PAUSE;
	case 'j': return ACT_DOWN;
	case 'k': return ACT_UP;
	case 'g': return ACT_TOP;
	case 'G': return ACT_BOTTOM;
	case 'a': return ACT_ALL;
	case '\r': case '\n': return ACT_ENTER;
	}
	return ACT_NONE;
}
