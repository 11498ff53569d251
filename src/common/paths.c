/* SPDX-License-Identifier: MIT */
#include "paths.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

int wp_path_dir_writable(const char *path, char *dir, size_t cap)
{
	const char *slash = strrchr(path, '/');
	size_t len = !slash ? 1 : slash == path ? 1 : (size_t)(slash - path);
	if (len + 1 > cap)
		return -ENAMETOOLONG;
	if (!slash)
		memcpy(dir, ".", 2);
	else if (slash == path)
		memcpy(dir, "/", 2);
	else {
		memcpy(dir, path, len);
		dir[len] = 0;
	}
	return access(dir, W_OK | X_OK) == 0 ? 0 : -errno;
}
