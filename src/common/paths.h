/* SPDX-License-Identifier: MIT */
/* Paths the command and the agent both check the same way. */
#ifndef WP_COMMON_PATHS_H
#define WP_COMMON_PATHS_H

#include <stddef.h>

/* Whether a file can be created at `path`: its directory (".", "/" or the part before the
 * last '/', written into dir[cap]) is writable and searchable. Returns 0, or -errno (from
 * access(2); -ENAMETOOLONG when the directory does not fit). Opens nothing. */
int wp_path_dir_writable(const char *path, char *dir, size_t cap);

#endif
