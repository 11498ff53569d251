/* Small text helpers every report shares. */
#ifndef WP_TEXTFMT_H
#define WP_TEXTFMT_H

#include <stddef.h>
#include <stdint.h>

/* v with thousands separators ("14,293"). The result lives in one of 16 rotating static
 * buffers, so up to 16 calls may appear in one printf. */
const char *wp_num(uint64_t v);

/* Length of the valid UTF-8 sequence at s (NUL-terminated), 0 when it is invalid (overlong
 * forms and surrogates included). */
size_t wp_utf8_seq(const unsigned char *s);

#endif
