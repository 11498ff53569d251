/* SPDX-License-Identifier: MIT */
/* The unit tests' assertions: they count passes and failures and print each failure with its
 * place, what was checked and, when given, a message, so a run reports every broken check,
 * not just the first. Each test ends with `return failed ? 1 : 0;`.
 *
 *   CHECK(cond) or CHECK(cond, fmt, ...)
 *   CHECK_EQ_U(a, b)   unsigned 64-bit equality, both values printed on failure
 *   CHECK_INT(a, b)    signed equality, likewise
 *   CHECK_STR(a, b)    string equality (NULL never equals anything)
 */
#ifndef WP_TEST_CHECK_H
#define WP_TEST_CHECK_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int passed, failed;

/* CHECK without a message passes an empty format, which is what it means here. */
#pragma GCC diagnostic ignored "-Wformat-zero-length"

__attribute__((format(printf, 5, 6))) static inline void check_(int ok, const char *file,
								  int line, const char *what,
								  const char *fmt, ...)
{
	if (ok) {
		passed++;
		return;
	}
	failed++;
	fprintf(stderr, "FAIL %s:%d: %s", file, line, what);
	if (*fmt) {
		va_list ap;
		va_start(ap, fmt);
		fputs(": ", stderr);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
	}
	fputc('\n', stderr);
}

/* The message, when given, is a string literal: "" in front of it makes one format either way. */
#define CHECK(cond, ...) check_(!!(cond), __FILE__, __LINE__, #cond, "" __VA_ARGS__)

#define CHECK_EQ_U(a, b)                                                                    \
	do {                                                                                \
		uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);                            \
		check_(a_ == b_, __FILE__, __LINE__, #a " == " #b, "%" PRIu64 " != %" PRIu64, \
		       a_, b_);                                                             \
	} while (0)

#define CHECK_INT(a, b)                                                                     \
	do {                                                                                \
		long long a_ = (long long)(a), b_ = (long long)(b);                         \
		check_(a_ == b_, __FILE__, __LINE__, #a " == " #b, "%lld != %lld", a_, b_); \
	} while (0)

#define CHECK_STR(a, b)                                                                     \
	do {                                                                                \
		const char *a_ = (a), *b_ = (b);                                            \
		check_(a_ && b_ && !strcmp(a_, b_), __FILE__, __LINE__, #a " == " #b,       \
		       "\"%s\" != \"%s\"", a_ ? a_ : "(null)", b_ ? b_ : "(null)");         \
	} while (0)

#endif
