/* The unit tests' assertions: they count passes and failures and print each failure with its
 * place, the condition and, when given, a message, so a run reports every broken check, not
 * just the first. Each test ends with `return failed ? 1 : 0;`.
 *
 *   CHECK(cond) or CHECK(cond, fmt, ...)
 *   CHECK_EQ_U(a, b)   unsigned 64-bit equality, both values printed on failure
 *   CHECK_INT(a, b)    signed equality, likewise
 *   CHECK_STR(a, b)    string equality (NULL never equals anything)
 */
#ifndef WP_TEST_CHECK_H
#define WP_TEST_CHECK_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int passed, failed;

#define CHECK_RESULT_(ok, ...)                                                  \
	do {                                                                    \
		if (ok) {                                                       \
			passed++;                                               \
		} else {                                                        \
			failed++;                                               \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);    \
			fprintf(stderr, __VA_ARGS__);                           \
			fputc('\n', stderr);                                    \
		}                                                               \
	} while (0)

#define CHECK(cond, ...)                                                                \
	do {                                                                            \
		if (cond) {                                                             \
			passed++;                                                       \
		} else {                                                                \
			failed++;                                                       \
			fprintf(stderr, "FAIL %s:%d: %s", __FILE__, __LINE__, #cond);   \
			__VA_OPT__(fputs(": ", stderr); fprintf(stderr, __VA_ARGS__);)  \
			fputc('\n', stderr);                                            \
		}                                                                       \
	} while (0)

#define CHECK_EQ_U(a, b)                                                                  \
	do {                                                                              \
		uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);                          \
		CHECK_RESULT_(a_ == b_, "%s == %s (%" PRIu64 " != %" PRIu64 ")", #a, #b, a_, \
			      b_);                                                        \
	} while (0)

#define CHECK_INT(a, b)                                                                   \
	do {                                                                              \
		long long a_ = (long long)(a), b_ = (long long)(b);                       \
		CHECK_RESULT_(a_ == b_, "%s == %s (%lld != %lld)", #a, #b, a_, b_);       \
	} while (0)

#define CHECK_STR(a, b)                                                                   \
	do {                                                                              \
		const char *a_ = (a), *b_ = (b);                                          \
		CHECK_RESULT_(a_ && b_ && !strcmp(a_, b_), "%s == %s (\"%s\" != \"%s\")", #a, \
			      #b, a_ ? a_ : "(null)", b_ ? b_ : "(null)");                \
	} while (0)

#endif
