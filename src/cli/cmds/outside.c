/* SPDX-License-Identifier: MIT */
/* The command's side of the outside sampler (docs/design.md, "The outside sampler"): --pid,
 * and statically linked programs, which no LD_PRELOAD can enter. Both run wallprof-outside
 * (found next to this executable, as the agent is) and report the ordinary profile it
 * writes. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "common/profile.h"

static int is_file(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* wallprof-outside: WALLPROF_OUTSIDE, next to this executable (where it is installed too),
 * then the build tree. NULL with a line said. */
static const char *find_outside(void)
{
	static char path[PATH_MAX];
	const char *env = getenv("WALLPROF_OUTSIDE");
	if (env && *env)
		return env;
	static const char *const rel[] = { "wallprof-outside", "../outside/wallprof-outside", NULL };
	if (wp_find_beside(rel, path, sizeof(path)))
		return path;
	fprintf(stderr, "wallprof: wallprof-outside not found next to wallprof (set "
			"WALLPROF_OUTSIDE)\n");
	return NULL;
}

/* Runs wallprof-outside with these arguments; its wait status. While it runs, Ctrl-C is for
 * it (attached: it ends the sampling) or the program (--exec): not for us, who report after. */
static int run_outside(char **argv, int *status)
{
	struct sigaction ign, old_int, old_quit;
	memset(&ign, 0, sizeof(ign));
	ign.sa_handler = SIG_IGN;
	sigaction(SIGINT, &ign, &old_int);
	sigaction(SIGQUIT, &ign, &old_quit);
	pid_t pid = fork();
	if (pid == 0) {
		sigaction(SIGINT, &old_int, NULL);
		sigaction(SIGQUIT, &old_quit, NULL);
		execv(argv[0], argv);
		fprintf(stderr, "wallprof: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	int rc = -1;
	if (pid > 0) {
		while (waitpid(pid, status, 0) < 0 && errno == EINTR)
			;
		rc = 0;
	} else {
		perror("wallprof: fork");
	}
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGQUIT, &old_quit, NULL);
	return rc;
}

/* The outside sampler's common arguments into argv (from index 1); returns the next index. */
static int common_args(const struct wp_opts *o, const char *profile, char **argv,
		       char bufs[4][PATH_MAX + 16])
{
	int n = 1;
	snprintf(bufs[0], sizeof(bufs[0]), "--mode=%s", o->mode ? o->mode : "wall");
	snprintf(bufs[1], sizeof(bufs[1]), "--hz=%d", o->hz ? o->hz : 100);
	snprintf(bufs[2], sizeof(bufs[2]), "--out=%s", profile);
	argv[n++] = bufs[0];
	argv[n++] = bufs[1];
	argv[n++] = bufs[2];
	return n;
}

static int profile_path(const struct wp_opts *o, char *path, size_t cap)
{
	if (o->out)
		snprintf(path, cap, "%s", o->out);
	else
		snprintf(path, cap, "wallprof.%ld.prof", (long)getpid());
	return wp_check_profile_path(path);
}

int wp_attach(struct wp_opts *o)
{
	char path[PATH_MAX], bufs[4][PATH_MAX + 16], pid[32], dur[64];
	const char *exe = find_outside();
	if (!exe)
		return 1;
	if (o->cmd)
		return wp_usage_error("--pid takes no command", NULL);
	if (profile_path(o, path, sizeof(path)) != 0)
		return 2;
	char *argv[12] = { (char *)exe };
	int n = common_args(o, path, argv, bufs);
	snprintf(pid, sizeof(pid), "--pid=%d", o->attach_pid);
	argv[n++] = pid;
	if (o->duration > 0) {
		snprintf(dur, sizeof(dur), "--duration=%.6f", o->duration);
		argv[n++] = dur;
	}
	if (o->quiet)
		argv[n++] = "--quiet"; /* (it says when sampling starts: after its checks) */
	argv[n] = NULL;
	int status = 0;
	if (run_outside(argv, &status) != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return 1; /* (it said why) */
	o->exit_status = 0;
	o->have_exit_status = 0;
	return wp_report_after_run(o, path);
}

void wp_exec_outside_live(const struct wp_opts *o, const char *profile)
{
	char bufs[4][PATH_MAX + 16], pid[32], dur[64];
	const char *exe = find_outside();
	if (!exe)
		_exit(127);
	char *argv[12] = { (char *)exe };
	int n = common_args(o, profile, argv, bufs);
	snprintf(pid, sizeof(pid), "--pid=%d", o->attach_pid);
	argv[n++] = pid;
	argv[n++] = "--checkpoint";
	if (o->duration > 0) {
		snprintf(dur, sizeof(dur), "--duration=%.6f", o->duration);
		argv[n++] = dur;
	}
	argv[n] = NULL;
	execv(argv[0], argv);
	fprintf(stderr, "wallprof: cannot run %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

int wp_outside_once(int pid, const char *profile)
{
	char pidarg[32], out[PATH_MAX + 16];
	const char *exe = find_outside();
	if (!exe)
		return 1;
	snprintf(pidarg, sizeof(pidarg), "--pid=%d", pid);
	snprintf(out, sizeof(out), "--out=%s", profile);
	/* 200 Hz: ticks every 5 ms, a running thread's clock records every 2.5 ms of its CPU */
	char *argv[] = { (char *)exe, pidarg, "--once", "--mode=wall", "--hz=200", out, "--quiet",
			 NULL };
	int status = 0;
	if (run_outside(argv, &status) != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return 1; /* (it said why) */
	return 0;
}

/* The path execvp would run for `prog`, into buf; 0, or -1 when not found. */
static int resolve(const char *prog, char *buf, size_t cap)
{
	if (strchr(prog, '/')) {
		snprintf(buf, cap, "%s", prog);
		return is_file(buf) ? 0 : -1;
	}
	const char *path = getenv("PATH");
	for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
		size_t len = strcspn(p, ":");
		snprintf(buf, cap, "%.*s/%s", (int)len, len ? p : ".", prog);
		if (is_file(buf) && access(buf, X_OK) == 0)
			return 0;
		p += len + (p[len] == ':');
	}
	return -1;
}

int wp_program_is_static(const char *prog)
{
	char path[PATH_MAX];
	if (resolve(prog, path, sizeof(path)) != 0)
		return 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	Elf64_Ehdr eh;
	int is_static = 0;
	if (pread(fd, &eh, sizeof(eh), 0) == sizeof(eh) && !memcmp(eh.e_ident, ELFMAG, SELFMAG) &&
	    eh.e_ident[EI_CLASS] == ELFCLASS64 && eh.e_phentsize == sizeof(Elf64_Phdr) &&
	    eh.e_phnum > 0 && eh.e_phnum < 256) {
		is_static = 1;
		for (int i = 0; i < eh.e_phnum; i++) {
			Elf64_Phdr ph;
			if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * sizeof(ph))) !=
			    sizeof(ph) || ph.p_type == PT_INTERP) {
				is_static = 0;
				break;
			}
		}
	}
	close(fd);
	return is_static;
}

/* wallprof-outside's exit status when it refuses before running the program
 * (WP_OUTSIDE_REFUSED, src/outside/refusals.h) */
#define OUTSIDE_REFUSED 125

int wp_record_outside(struct wp_opts *o, char *path, size_t cap)
{
	const char *exe = find_outside();
	if (!exe)
		return -1;
	if (profile_path(o, path, cap) != 0)
		return -2;
	size_t ncmd = 0;
	while (o->cmd[ncmd])
		ncmd++;
	char bufs[4][PATH_MAX + 16];
	char **argv = calloc(ncmd + 9, sizeof(*argv));
	if (!argv)
		return -1;
	argv[0] = (char *)exe;
	int n = common_args(o, path, argv, bufs);
	argv[n++] = "--exec";
	/* as under the agent (wp_exec_under_agent): a report that is not text on standard
	 * output must be alone there; the program's output goes to standard error */
	if (o->format != WP_FMT_TEXT && !o->report_out)
		argv[n++] = "--stdout-to-stderr";
	argv[n++] = "--";
	for (size_t i = 0; i < ncmd; i++)
		argv[n++] = o->cmd[i];
	if (!o->quiet)
		fprintf(stderr, "wallprof: %s is statically linked: profiling it from outside (no "
			"dynamic loader to preload the agent into: waits are named from /proc, without "
			"the agent's EINTR protection or lock holders' stacks)\n", o->cmd[0]);
	struct stat before;
	int had = stat(path, &before) == 0;
	int status = 0;
	int rc = run_outside(argv, &status);
	free(argv);
	if (rc != 0)
		return -1;
	/* Refused before it ran the program (a seccomp filter: it said why): no profile written
	 * (the program's own exit status 125 comes with one) */
	struct stat after;
	if (WIFEXITED(status) && WEXITSTATUS(status) == OUTSIDE_REFUSED &&
	    (stat(path, &after) != 0 || (had && after.st_mtim.tv_sec == before.st_mtim.tv_sec &&
					 after.st_mtim.tv_nsec == before.st_mtim.tv_nsec &&
					 after.st_ino == before.st_ino)))
		return -1;
	/* It exits as the program did (128 + N: died of signal N); the profile says which */
	struct wp_profile *p = NULL;
	char err[256];
	o->exit_status = WIFEXITED(status) ? (WEXITSTATUS(status) & 0xff) << 8 : status;
	if (wp_profile_read(path, &p, err, sizeof(err)) == 0) {
		int code;
		enum wp_end end = wp_profile_end(p, &code);
		if (end == WP_END_SIGNAL)
			o->exit_status = code; /* as waitpid says a death by signal `code` */
		else if (end == WP_END_EXIT)
			o->exit_status = code << 8;
		wp_profile_free(p);
	}
	o->have_exit_status = 1;
	return 0;
}
