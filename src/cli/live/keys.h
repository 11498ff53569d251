/* SPDX-License-Identifier: MIT */
/* --live: the keyboard's bytes to keys (keys.c). A pure function of its state and the bytes:
 * no reads, no clock, so that a unit test can cut the input anywhere. */
#ifndef WP_LIVE_KEYS_H
#define WP_LIVE_KEYS_H

enum {
	KEY_NONE = 0,
	KEY_UP,
	KEY_DOWN,
	KEY_PGUP,
	KEY_PGDN,
	KEY_HOME,
	KEY_END,
	KEY_ESC,
};

/* How long a lone ESC waits for the rest of a sequence before it is the Esc key (vim's
 * 'ttimeoutlen' default). */
#define KEYS_ESC_WAIT_MS 100

/* A key: a byte as typed (ch), or one of the KEY_* above (special, ch 0). */
struct key {
	int ch;
	int special;
};

/* What is carried from one read to the next: the part of an escape sequence read so far.
 * Zero it to start. */
struct keys {
	int state; /* 0 none, 1 after ESC, 2 in ESC [ (CSI), 3 after ESC O (SS3) */
	int param; /* CSI: the first number so far */
	int in_first; /* CSI: still reading the first number */
};

/* Takes one byte. Returns how many keys it completes (0, 1 or 2, written to out): an escape
 * sequence gives its key when its last byte comes, whatever reads it was cut across. ESC
 * followed by a byte that starts no sequence is the Esc key, then that byte's key. A
 * sequence the view has no use for (F-keys, modifiers alone) gives nothing. */
int keys_feed(struct keys *k, unsigned char c, struct key out[2]);
/* Whether a sequence is unfinished: the caller waits KEYS_ESC_WAIT_MS for more bytes, then
 * calls keys_timeout. */
int keys_pending(const struct keys *k);
/* No more bytes came: a lone ESC was the Esc key (returns 1, out set); the start of a
 * sequence is dropped (returns 0). */
int keys_timeout(struct keys *k, struct key *out);

/* What a key asks of the view. The mapping is here, apart from the view's state, so that a
 * unit test can check it (test/unit/test_live_keys.c). */
enum key_action {
	ACT_NONE = 0,
	ACT_QUIT,      /* q: close the view (the program runs on) */
	ACT_THREADS,   /* t: the thread list (from it: back to the functions) */
	ACT_WAITS,     /* w: the waits, per kind and object (again: back to the functions) */
	ACT_SORT,      /* s: sort by the last interval or by the whole run */
	ACT_PAUSE,     /* p, space: freeze the numbers */
	ACT_UP,        /* k, Up */
	ACT_DOWN,      /* j, Down */
	ACT_PGUP,
	ACT_PGDN,
	ACT_TOP,       /* g, Home */
	ACT_BOTTOM,    /* G, End */
	ACT_ALL,       /* a, Esc: back to every thread */
	ACT_ENTER,     /* Enter: the selected row's breakdown */
};

/* The action of key `k` (ACT_NONE: none). */
enum key_action keys_action(struct key k);

#endif
