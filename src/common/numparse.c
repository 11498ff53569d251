/* SPDX-License-Identifier: MIT */
/* Whole numbers typed by a user (numparse.h). Not strtol: it skips leading white space and
 * takes a sign, so " 5" and "+5" would pass, and it depends on the locale. */
#include "numparse.h"

int wp_parse_int(const char *s, long lo, long hi, int *out)
{
	if (!s || !*s)
		return -1;
	long long v = 0;
	for (const char *c = s; *c; c++) {
		if (*c < '0' || *c > '9')
			return -1;
		v = v * 10 + (*c - '0');
		if (v > hi) /* checked at each digit: v stays below 10 * INT_MAX + 10 */
			return -1;
	}
	if (v < lo)
		return -1;
	*out = (int)v;
	return 0;
}
