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
