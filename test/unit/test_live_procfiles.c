/* SPDX-License-Identifier: MIT */
/* The live view's processes (src/cli/live/procfiles.c): which names beside the main file are
 * the other processes' checkpoint files. NAME.PID.EXT is; the main file itself, an image
 * replaced by exec (NAME[.PID].execN.EXT), another run's stem or extension, and anything else
 * is not. And a scan of a real directory finds exactly those. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "live/procfiles.h"

#include "check.h"

static void test_names(void)
{
	CHECK_INT(procfile_pid("t.prof", "t.1234.prof"), 1234);
	CHECK_INT(procfile_pid("run.x.prof", "run.x.77.prof"), 77); /* a stem with a dot */
	CHECK_INT(procfile_pid("noext", "noext.42"), 42);           /* no extension */
	CHECK_INT(procfile_pid("t.prof", "t.prof"), -1);            /* the main file */
	CHECK_INT(procfile_pid("t.prof", "t.exec1.prof"), -1);      /* an image replaced by exec */
	CHECK_INT(procfile_pid("t.prof", "t.1234.exec1.prof"), -1);
	CHECK_INT(procfile_pid("t.prof", "u.1234.prof"), -1);       /* another stem */
	CHECK_INT(procfile_pid("t.prof", "tt.1234.prof"), -1);
	CHECK_INT(procfile_pid("t.prof", "t.1234.pro"), -1);        /* another extension */
	CHECK_INT(procfile_pid("t.prof", "t.1234.prof.tmp"), -1);   /* a checkpoint being written */
	CHECK_INT(procfile_pid("t.prof", "t..prof"), -1);
	CHECK_INT(procfile_pid("t.prof", "t.12a4.prof"), -1);
	CHECK_INT(procfile_pid("t.prof", "t.0.prof"), -1);
	CHECK_INT(procfile_pid("t.prof", "t.12345678901.prof"), -1); /* not a pid */
}

struct seen {
	long pids[8];
	int n;
};

static void found(const char *path, long pid, void *arg)
{
	struct seen *s = arg;
	CHECK(strstr(path, "/r.") != NULL, "path %s is in the directory", path);
	if (s->n < 8)
		s->pids[s->n] = pid;
	s->n++;
}

static void test_scan(void)
{
	char dir[] = "/tmp/wp-procfiles-XXXXXX";
	if (!mkdtemp(dir)) {
		CHECK(0, "mkdtemp");
		return;
	}
	static const char *const names[] = { "r.prof", "r.11.prof", "r.exec1.prof",
					     "r.11.exec2.prof", "q.12.prof", "r.13.prof" };
	char path[256];
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		FILE *f = fopen(path, "w");
		CHECK(f != NULL, "create %s", path);
		if (f)
			fclose(f);
	}
	snprintf(path, sizeof(path), "%s/r.prof", dir);
	struct seen s = { { 0 }, 0 };
	CHECK_INT(procfiles_scan(path, found, &s), 0);
	CHECK_INT(s.n, 2);
	long sum = s.n == 2 ? s.pids[0] + s.pids[1] : 0;
	CHECK(sum == 24 && (s.pids[0] == 11 || s.pids[0] == 13), "found pids 11 and 13");
	snprintf(path, sizeof(path), "%s/none/r.prof", dir);
	CHECK_INT(procfiles_scan(path, found, &s), -1); /* no such directory */
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		unlink(path);
	}
	rmdir(dir);
}

int main(void)
{
	test_names();
	test_scan();
	printf("live_procfiles: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
