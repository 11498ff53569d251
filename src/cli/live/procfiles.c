/* SPDX-License-Identifier: MIT */
/* --live: the other processes' files beside the main file (procfiles.h). */
#include "procfiles.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

long procfile_pid(const char *main_base, const char *name)
{
	const char *dot = strrchr(main_base, '.');
	size_t ls = dot && dot != main_base ? (size_t)(dot - main_base) : strlen(main_base);
	const char *ext = main_base + ls; /* "" or ".EXT" */
	size_t le = strlen(ext), ln = strlen(name);
	if (ln < ls + le + 2 || strncmp(name, main_base, ls) || name[ls] != '.' ||
	    strcmp(name + ln - le, ext))
		return -1;
	long pid = 0;
	size_t digits = ln - le - ls - 1;
	if (!digits || digits > 9)
		return -1;
	for (size_t i = ls + 1; i < ls + 1 + digits; i++) {
		if (name[i] < '0' || name[i] > '9')
			return -1;
		pid = pid * 10 + (name[i] - '0');
	}
	return pid > 0 ? pid : -1;
}

int procfiles_scan(const char *main_path, void (*found)(const char *path, long pid, void *arg),
		   void *arg)
{
	const char *slash = strrchr(main_path, '/');
	const char *base = slash ? slash + 1 : main_path;
	char dir[PATH_MAX];
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s", slash == main_path ? 1 : (int)(slash - main_path),
			 main_path);
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	struct dirent *e;
	while ((e = readdir(d))) {
		long pid = procfile_pid(base, e->d_name);
		char path[PATH_MAX];
		if (pid < 0 || snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= (int)sizeof(path))
			continue;
		found(path, pid, arg);
	}
	closedir(d);
	return 0;
}
