/* The unit tests' one assertion: counts passes and failures and prints each failure with its
 * place, the condition and a message, so a run reports every broken check, not just the
 * first. Each test ends with `return failed ? 1 : 0;`. */
#ifndef WP_TEST_CHECK_H
#define WP_TEST_CHECK_H

#include <stdio.h>

static int passed, failed;

#define CHECK(cond, ...)                                                                \
	do {                                                                            \
		if (cond) {                                                             \
			passed++;                                                       \
		} else {                                                                \
			failed++;                                                       \
			fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);                                   \
			fputc('\n', stderr);                                            \
		}                                                                       \
	} while (0)

#endif
