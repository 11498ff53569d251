/* SPDX-License-Identifier: MIT */
#include "textfmt.h"

#include <stdio.h>
#include <string.h>

const char *wp_num(uint64_t v)
{
	static char bufs[16][32];
	static int at;
	char tmp[32], *b = bufs[at++ & 15];
	int n = snprintf(tmp, sizeof(tmp), "%llu", (unsigned long long)v), j = 0;
	for (int i = 0; i < n; i++) {
		if (i && (n - i) % 3 == 0)
			b[j++] = ',';
		b[j++] = tmp[i];
	}
	b[j] = 0;
	return b;
}

double wp_pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

const char *wp_dur(uint64_t ns)
{
	static char bufs[8][32];
	static int at;
	char *b = bufs[at++ & 7];
	double v = (double)ns;
	if (ns < 1000000)
		snprintf(b, 32, "%.0f µs", v / 1e3);
	else if (ns < 1000000000)
		snprintf(b, 32, "%.1f ms", v / 1e6);
	else if (ns < 60000000000ull)
		snprintf(b, 32, "%.3f s", v / 1e9);
	else
		snprintf(b, 32, "%llu min %.1f s", (unsigned long long)(ns / 60000000000ull),
			 (double)(ns % 60000000000ull) / 1e9);
	return b;
}

size_t wp_utf8_seq(const unsigned char *s)
{
	unsigned c = s[0];
	if (c < 0x80)
		return 1;
	unsigned lo = 0x80, hi = 0xbf;
	size_t n;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		if (c == 0xe0)
			lo = 0xa0;
		else if (c == 0xed)
			hi = 0x9f; /* no surrogates */
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		if (c == 0xf0)
			lo = 0x90;
		else if (c == 0xf4)
			hi = 0x8f;
	} else
		return 0;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return n;
}

/* Drops what is inside the last balanced open..close pair of `s` (in place), keeping the
 * brackets: "f(int, char) const" -> "f() const". Returns 1 if it removed anything. */
static int drop_last(char *s, char open, char close)
{
	char *c = strrchr(s, close);
	int depth = 0;
	if (!c)
		return 0;
	for (char *q = c; q >= s; q--) {
		if (*q == close)
			depth++;
		else if (*q == open && --depth == 0) {
			if (c - q <= 1)
				return 0;
			memmove(q + 1, c, strlen(c) + 1);
			return 1;
		}
	}
	return 0;
}

const char *wp_fit_name(const char *s, int w, char *buf, size_t cap)
{
	size_t n = strlen(s);
	if ((int)n <= w || w < 8)
		return s;
	if (wp_name_is_pseudo(s))
		return wp_fit_head(s, w, buf, cap);
	/* "module+0xOFF" (no symbol): the offset is what tells rows apart, keep the end */
	const char *off = strstr(s, "+0x");
	if (off && !strchr(s, '(')) {
		snprintf(buf, cap, "...%s", s + n - (size_t)(w - 3));
		return buf;
	}
	snprintf(buf, cap, "%s", s);
	drop_last(buf, '(', ')');
	for (int i = 0; i < 16 && (int)strlen(buf) > w; i++)
		if (!drop_last(buf, '<', '>'))
			break;
	/* leading qualifiers: cut at a top-level "::" until it fits */
	while ((int)strlen(buf) > w) {
		/* after a first cut buf is "...::rest": look for the next "::" in rest */
		char *start = strncmp(buf, "...::", 5) ? buf : buf + 5, *cut = NULL;
		int depth = 0;
		for (char *q = start; *q && !cut; q++) {
			if (*q == '<' || *q == '(')
				depth++;
			else if ((*q == '>' || *q == ')') && depth > 0)
				depth--;
			else if (!depth && q > start && q[0] == ':' && q[1] == ':')
				cut = q;
		}
		if (!cut)
			break;
		memmove(buf + 3, cut, strlen(cut) + 1); /* strictly shorter: cut > buf + 3 */
		memcpy(buf, "...", 3);
	}
	if ((int)strlen(buf) > w) /* one identifier too long: keep its start */
		memcpy(buf + w - 3, "...", 4);
	return buf;
}

const char *wp_fit_head(const char *s, int w, char *buf, size_t cap)
{
	if ((int)strlen(s) <= w || w < 4)
		return s;
	snprintf(buf, cap, "%.*s...", w - 3, s);
	return buf;
}

void wp_json_str(FILE *out, const char *s)
{
	putc('"', out);
	for (const unsigned char *u = (const unsigned char *)(s ? s : ""); *u;) {
		unsigned c = *u;
		if (c == '"' || c == '\\') {
			putc('\\', out);
			putc((int)c, out);
			u++;
		} else if (c < 0x20 || c == 0x7f) {
			switch (c) {
			case '\n': fputs("\\n", out); break;
			case '\r': fputs("\\r", out); break;
			case '\t': fputs("\\t", out); break;
			case '\b': fputs("\\b", out); break;
			case '\f': fputs("\\f", out); break;
			default: fprintf(out, "\\u%04x", c);
			}
			u++;
		} else {
			size_t k = wp_utf8_seq(u);
			if (k) {
				fwrite(u, 1, k, out);
				u += k;
			} else {
				fputs("\xef\xbf\xbd", out);
				u++;
			}
		}
	}
	putc('"', out);
}

void wp_wrap(FILE *out, const char *prefix, int indent, const char *s, int len, int width)
{
	int col = (int)strlen(prefix);
	fputs(prefix, out);
	while (len > 0) {
		int room = width - col, n = len;
		if (n > room) {
			n = room;
			while (n > 0 && s[n] != ' ')
				n--;
			if (n == 0) /* one word longer than the line: cut it */
				n = room;
		}
		fprintf(out, "%.*s\n", n, s);
		s += n;
		len -= n;
		while (len > 0 && *s == ' ') {
			s++;
			len--;
		}
		if (len > 0)
			fprintf(out, "%*s", indent, "");
		col = indent;
	}
}
