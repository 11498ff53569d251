/* SPDX-License-Identifier: MIT */
/* Whole numbers typed by a user: the command's options (--hz=N, --top=N) and the agent's
 * WALLPROF_* variables. One parser for both, so the command and the agent accept and refuse
 * the same text. */
#ifndef WP_COMMON_NUMPARSE_H
#define WP_COMMON_NUMPARSE_H

/* Parses `s` as a whole decimal number in [lo, hi] (0 <= lo <= hi <= INT_MAX) into *out.
 * Only the digits 0-9 are accepted: no sign, no space before or after, no trailing junk, no
 * hex or exponent, not empty; leading zeros are fine ("007" is 7). A number past `hi` is
 * refused however many digits it has (no overflow). Returns 0, or -1 with *out untouched.
 * Async-signal-safe: no locale, no errno, no allocation (the agent parses its settings
 * inside the program, in its constructor). */
int wp_parse_int(const char *s, long lo, long hi, int *out);

#endif
