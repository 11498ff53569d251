/* SPDX-License-Identifier: MIT */
/* Small text helpers every report shares: numbers, shares and durations for people, and
 * UTF-8 validation, JSON strings. The one copy of each. */
#ifndef WP_TEXTFMT_H
#define WP_TEXTFMT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* v with thousands separators ("14,293"). The result lives in one of 16 rotating static
 * buffers, so up to 16 calls may appear in one printf. */
const char *wp_num(uint64_t v);

/* `part` in percent of `whole`; 0 when whole is 0. */
double wp_pct(uint64_t part, uint64_t whole);

/* A duration for people: "412 µs", "28.8 ms", "4.823 s", "3 min 12.4 s". Rotating static
 * buffers as for wp_num (8 of them). */
const char *wp_dur(uint64_t ns);

/* Length of the valid UTF-8 sequence at s (NUL-terminated), 0 when it is invalid (overlong
 * forms and surrogates included). */
size_t wp_utf8_seq(const unsigned char *s);

/* `s` as a JSON string, quotes included (NULL: ""); invalid UTF-8 becomes U+FFFD. */
void wp_json_str(FILE *out, const char *s);

/* Whether a frame name is one of the reports' own ("[wait io pipe:[12] read end (write end
 * fd 4)]", "[held by NAME tid=N]", "[name tid=N]"), not a function: cut to fit, it keeps its
 * start, which says what it is; a function's shortening (its parentheses taken for a C++
 * parameter list) would garble it. */
static inline int wp_name_is_pseudo(const char *name)
{
	return name && name[0] == '[';
}

/* Fits a function name into `w` columns (in buf, cap bytes, when it must be cut), shortening
 * C++ names the way a reader would: the parameter list goes first, then template arguments
 * ("Worker<>"), then leading namespaces ("...::Worker<>::run()"); an identifier still too
 * long keeps its start ("run_th..."); "module+0xOFF" keeps its end. A report's own frame
 * ("[wait ...]") keeps its start. The one shortening of a function's name: the text report,
 * --compare (cmds/compare.c, which cuts its own frames in their middle) and --live use it. */
const char *wp_fit_name(const char *s, int w, char *buf, size_t cap);
/* Prints `len` bytes of `s` after `prefix`, broken at spaces into lines of at most `width`
 * columns (a word longer than a line is cut), continuation lines indented by `indent`. */
void wp_wrap(FILE *out, const char *prefix, int indent, const char *s, int len, int width);
/* Fits `s` into `w` columns keeping its start ("libstdc++.so.6..."). */
const char *wp_fit_head(const char *s, int w, char *buf, size_t cap);

#endif
