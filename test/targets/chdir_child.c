/* SPDX-License-Identifier: MIT */
/* A program that changes directory, then starts a child there (as CPython's regrtest runs its
 * workers in a temporary directory, and checks that a test left no file in it): the child's
 * profile must not land in that directory. Usage: chdir_child DIR. Makes DIR, enters it, forks
 * a child that sleeps 300 ms (long enough to be sampled and write a profile), waits for it,
 * then counts the files in DIR. Truth: pid.child, entries (files found in DIR). */
#include <dirent.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	truth_open();
	if (mkdir(argv[1], 0700) != 0 || chdir(argv[1]) != 0)
		return 3;
	pid_t pid = fork();
	if (pid == 0) {
		sleep_ns(300 * 1000000ull);
		_exit(0);
	}
	int st;
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return 4;
	int entries = 0;
	DIR *d = opendir(".");
	struct dirent *e;
	while (d && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			truth("file %s", e->d_name);
			entries++;
		}
	if (d)
		closedir(d);
	truth("pid.child %d", (int)pid);
	truth("entries %d", entries);
	truth_close();
	return 0;
}
