#include "textfmt.h"

#include <stdio.h>

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
