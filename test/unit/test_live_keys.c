/* SPDX-License-Identifier: MIT */
/* The live view's key parser (src/cli/live/keys.c): escape sequences give the same keys
 * however the terminal's bytes are cut into reads. Every sequence is fed whole, then cut at
 * every point into two reads; a read may also hold several keys. The previous parser looked
 * for a sequence within one read only: ESC at the end of a read was the Esc key (clearing the
 * filter) and the rest of the arrow went as '[' and 'A'; ESC [ at the end was dropped and its
 * final byte became a key; ESC [ 1 ; 5 A swallowed every key after it in the read. */
#include <stdio.h>
#include <string.h>

#include "live/keys.h"

#include "check.h"

/* The keys as text: "UP", "ESC", a printable byte as itself, others as \xNN; comma-separated. */
static void describe(const struct key *k, char *out, size_t cap)
{
	static const char *const names[] = { "NONE", "UP", "DOWN", "PGUP", "PGDN",
					     "HOME", "END",  "ESC" };
	size_t len = strlen(out);
	if (k->special)
		snprintf(out + len, cap - len, "%s%s", len ? "," : "", names[k->special]);
	else if (k->ch > 0x20 && k->ch < 0x7f)
		snprintf(out + len, cap - len, "%s%c", len ? "," : "", k->ch);
	else
		snprintf(out + len, cap - len, "%s\\x%02x", len ? "," : "", k->ch);
}

/* Feeds the reads (NULL-terminated) one after the other, the next coming before the ESC
 * wait is over, then lets the wait run out. Returns the keys as text. */
static const char *decode(const char *const *reads)
{
	static char out[256];
	struct keys st;
	memset(&st, 0, sizeof(st));
	out[0] = 0;
	for (; *reads; reads++)
		for (const char *c = *reads; *c; c++) {
			struct key k[2];
			int n = keys_feed(&st, (unsigned char)*c, k);
			for (int i = 0; i < n; i++)
				describe(&k[i], out, sizeof(out));
		}
	struct key k;
	if (keys_timeout(&st, &k))
		describe(&k, out, sizeof(out));
	CHECK(!keys_pending(&st), "nothing pending after the wait");
	return out;
}

static const char *one(const char *a)
{
	const char *reads[] = { a, NULL };
	return decode(reads);
}

static const char *two(const char *a, const char *b)
{
	const char *reads[] = { a, b, NULL };
	return decode(reads);
}

static const struct {
	const char *seq, *keys;
} sequences[] = {
	{ "\033[A", "UP" },     { "\033[B", "DOWN" },   { "\033OA", "UP" },     { "\033OB", "DOWN" },
	{ "\033[H", "HOME" },   { "\033[F", "END" },    { "\033OH", "HOME" },   { "\033OF", "END" },
	{ "\033[1~", "HOME" },  { "\033[7~", "HOME" },  { "\033[4~", "END" },   { "\033[8~", "END" },
	{ "\033[5~", "PGUP" },  { "\033[6~", "PGDN" },  { "\033[1;5A", "UP" },  { "\033[1;2B", "DOWN" },
	{ "\033[5;5~", "PGUP" }, { "\033[15~", "" },    { "\033OP", "" },       { "\033[Z", "" },
	{ "\033[3~", "" },
};

/* Each sequence whole, then cut in two at every point, then with a key on either side. */
static void test_cut_anywhere(void)
{
	for (size_t i = 0; i < sizeof(sequences) / sizeof(sequences[0]); i++) {
		const char *seq = sequences[i].seq, *want = sequences[i].keys;
		CHECK_STR(one(seq), want);
		size_t n = strlen(seq);
		for (size_t cut = 1; cut < n; cut++) {
			char a[32], b[32];
			snprintf(a, sizeof(a), "%.*s", (int)cut, seq);
			snprintf(b, sizeof(b), "%s", seq + cut);
			const char *got = two(a, b);
			CHECK(!strcmp(got, want), "'\\e%s' cut after %zu bytes: got \"%s\", want \"%s\"",
			      seq + 1, cut, got, want);
		}
		char around[64], want_around[64];
		snprintf(around, sizeof(around), "j%sq", seq);
		snprintf(want_around, sizeof(want_around), "j%s%s,q", *want ? "," : "", want);
		const char *got = one(around);
		CHECK(!strcmp(got, want_around), "'j\\e%sq' in one read: got \"%s\", want \"%s\"",
		      seq + 1, got, want_around);
	}
}

static void test_esc(void)
{
	CHECK_STR(one("\033"), "ESC");                   /* alone, once the wait is over */
	CHECK_STR(two("\033", "t"), "ESC,t");            /* not the start of a sequence */
	CHECK_STR(one("\033q"), "ESC,q");
	CHECK_STR(one("\033\033[A"), "ESC,UP");          /* Esc, then an arrow */
	CHECK_STR(two("\033", "\033[B"), "ESC,DOWN");
	CHECK_STR(one("\033\033"), "ESC,ESC");
	CHECK_STR(one("\033[\r"), "\\x0d");              /* a control byte cuts a sequence short */
	CHECK_STR(one("\033["), "");                     /* the start of a sequence, no more */
	CHECK_STR(one("ab\rq "), "a,b,\\x0d,q,\\x20");   /* plain keys as they are */
	CHECK_STR(one("\033[99999999999999999999~q"), "q"); /* a long number does not overflow */
}

/* The keys' actions (keys_action): what the help bar promises, cut or whole. */
static enum key_action act(const char *read)
{
	struct keys st;
	memset(&st, 0, sizeof(st));
	enum key_action a = ACT_NONE;
	for (const char *c = read; *c; c++) {
		struct key k[2];
		int n = keys_feed(&st, (unsigned char)*c, k);
		for (int i = 0; i < n; i++)
			a = keys_action(k[i]);
	}
	struct key k;
	if (keys_timeout(&st, &k))
		a = keys_action(k);
	return a;
}

static void test_actions(void)
{
	static const struct {
		const char *read;
		enum key_action want;
	} cases[] = {
		{ "w", ACT_WAITS },    { "W", ACT_WAITS },   { "t", ACT_THREADS }, { "q", ACT_QUIT },
		{ "s", ACT_SORT },     { "p", ACT_PAUSE },   { " ", ACT_PAUSE },   { "j", ACT_DOWN },
		{ "k", ACT_UP },       { "\033[A", ACT_UP }, { "\033[B", ACT_DOWN },
		{ "\033[5~", ACT_PGUP }, { "\033[6~", ACT_PGDN }, { "g", ACT_TOP },
		{ "\033[H", ACT_TOP }, { "G", ACT_BOTTOM }, { "\033[F", ACT_BOTTOM },
		{ "a", ACT_ALL },      { "\033", ACT_ALL }, { "\r", ACT_ENTER }, { "\n", ACT_ENTER },
		{ "x", ACT_NONE },     { "\033[15~", ACT_NONE },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum key_action got = act(cases[i].read);
		CHECK(got == cases[i].want, "key \"%s\": action %d, want %d",
		      cases[i].read[0] == '\033' ? "ESC..." : cases[i].read, (int)got,
		      (int)cases[i].want);
	}
}

int main(void)
{
	test_cut_anywhere();
	test_esc();
	test_actions();
	printf("live_keys: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
