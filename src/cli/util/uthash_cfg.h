/* SPDX-License-Identifier: MIT */
/* uthash, as every file of the command includes it: a table that cannot grow is out of
 * memory under the CLI's one policy (alloc.h: one line, exit 1), not uthash's own exit(-1).
 * Include this instead of <uthash.h>. */
#ifndef WP_UTHASH_CFG_H
#define WP_UTHASH_CFG_H

#include "alloc.h"

#define uthash_fatal(msg) wp_oom()

#include <uthash.h>

#endif
