/* SPDX-License-Identifier: MIT */
/* The processes an attached process starts: children.h says what and why. */
#include "children.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* Processes followed at most (each costs a sampler process); later ones are not followed. */
#define MAX_FOLLOWED 256

static struct followed {
	pid_t pid;     /* the child process */
	pid_t sampler; /* the wallprof-outside sampling it (0: could not start one) */
} followed[MAX_FOLLOWED];
static size_t nfollowed;
static char exe[PATH_MAX];
static const char *out_path, *run_id;
static char mode_arg[16], hz_arg[16];

int wp_children_begin(const char *out, const char *run, int cpu_mode, int hz)
{
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return -1;
	exe[n] = 0;
	out_path = out;
	run_id = run;
	snprintf(mode_arg, sizeof(mode_arg), "--mode=%s", cpu_mode ? "cpu" : "wall");
	snprintf(hz_arg, sizeof(hz_arg), "--hz=%d", hz);
	return 0;
}

/* OUT's sibling for process `pid`: STEM.PID.EXT, as a recorded run's processes name theirs
 * (model/run.h), so the report of the main file finds it by name and run id. */
static void sibling_path(pid_t pid, char *buf, size_t cap)
{
	const char *slash = strrchr(out_path, '/');
	const char *base = slash ? slash + 1 : out_path;
	const char *dot = strrchr(base, '.');
	if (!dot || dot == base)
		dot = base + strlen(base);
	snprintf(buf, cap, "%.*s.%d%s", (int)(dot - out_path), out_path, (int)pid, dot);
}

static int is_followed(pid_t pid)
{
	for (size_t i = 0; i < nfollowed; i++)
		if (followed[i].pid == pid)
			return 1;
	return 0;
}

/* A sampler of its own for `pid` (which follows its children in turn). */
static void follow(pid_t pid)
{
	if (nfollowed >= MAX_FOLLOWED)
		return;
	static char pid_arg[32], out_arg[PATH_MAX + 8], root_arg[PATH_MAX + 16], run_arg[128];
	char path[PATH_MAX];
	sibling_path(pid, path, sizeof(path));
	snprintf(pid_arg, sizeof(pid_arg), "--pid=%d", (int)pid);
	snprintf(out_arg, sizeof(out_arg), "--out=%s", path);
	snprintf(root_arg, sizeof(root_arg), "--root-out=%s", out_path);
	snprintf(run_arg, sizeof(run_arg), "--run=%s", run_id);
	char *argv[] = { exe, pid_arg, mode_arg, hz_arg, out_arg, root_arg, run_arg, "--quiet",
			 NULL };
	pid_t s = 0;
	if (posix_spawn(&s, exe, NULL, NULL, argv, environ) != 0)
		s = 0;
	followed[nfollowed++] = (struct followed){ pid, s };
}

/* The children of every thread of `pid` (/proc/PID/task/TID/children: a process is the
 * child of the thread that forked it). */
void wp_children_poll(pid_t pid)
{
	char path[320], buf[4096];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/children", (int)pid, e->d_name);
		FILE *f = fopen(path, "re");
		if (!f)
			continue;
		size_t n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[n] = 0;
		for (char *p = buf, *end; *p; p = end) {
			long c = strtol(p, &end, 10);
			if (end == p)
				break;
			if (c > 0 && !is_followed((pid_t)c))
				follow((pid_t)c);
		}
	}
	closedir(d);
}

/* Each sampler stopped (SIGTERM: it writes its profile and exits) and waited for, up to
 * about 5 s in all, then killed: the run's report reads their files next. */
void wp_children_end(void)
{
	for (size_t i = 0; i < nfollowed; i++)
		if (followed[i].sampler > 0)
			kill(followed[i].sampler, SIGTERM);
	struct timespec nap = { 0, 10 * 1000000L };
	for (int tries = 0; tries < 500; tries++) {
		size_t left = 0;
		for (size_t i = 0; i < nfollowed; i++) {
			if (followed[i].sampler <= 0)
				continue;
			pid_t w = waitpid(followed[i].sampler, NULL, WNOHANG);
			if (w == followed[i].sampler || (w < 0 && errno == ECHILD))
				followed[i].sampler = 0;
			else
				left++;
		}
		if (!left)
			return;
		nanosleep(&nap, NULL);
	}
	for (size_t i = 0; i < nfollowed; i++)
		if (followed[i].sampler > 0) {
			kill(followed[i].sampler, SIGKILL);
			waitpid(followed[i].sampler, NULL, 0);
		}
}
