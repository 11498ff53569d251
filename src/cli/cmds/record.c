/* SPDX-License-Identifier: MIT */
/* Running a program under the agent: LD_PRELOAD, the settings as WALLPROF_* variables, a
 * channel on a high descriptor (the agent's progress lines and warnings: the agent moves it
 * into its own descriptor table at start, so the program never sees it), and the program's
 * exit status passed back. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "common/paths.h"

#ifndef WP_LIBDIR
#define WP_LIBDIR "/usr/local/lib"
#endif

static int exists(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

const char *wp_find_beside(const char *const *rel, char *path, size_t cap)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return NULL;
	self[n] = 0;
	char *slash = strrchr(self, '/');
	if (slash)
		*slash = 0;
	for (size_t i = 0; rel[i]; i++)
		if (snprintf(path, cap, "%s/%s", self, rel[i]) < (int)cap && exists(path))
			return path;
	return NULL;
}

const char *wp_find_agent(void)
{
	static char path[PATH_MAX];
	const char *env = getenv("WALLPROF_AGENT");
	if (env && *env) {
		if (exists(env))
			return env;
		fprintf(stderr, "wallprof: WALLPROF_AGENT=%s does not exist\n", env);
		return NULL;
	}
	/* next to the executable, the build tree, then an installed layout */
	static const char *const rel[] = {
		"libwallprof.so", "../agent/libwallprof.so", "../lib/libwallprof.so",
		"../lib/x86_64-linux-gnu/libwallprof.so", "../lib64/libwallprof.so", NULL,
	};
	char real[PATH_MAX];
	if (wp_find_beside(rel, path, sizeof(path)))
		return realpath(path, real) ? strcpy(path, real) : path;
	snprintf(path, sizeof(path), "%s/libwallprof.so", WP_LIBDIR);
	if (exists(path))
		return path;
	fprintf(stderr, "wallprof: cannot find libwallprof.so next to the wallprof executable or in "
			"%s; set WALLPROF_AGENT to its path\n", WP_LIBDIR);
	return NULL;
}

static void setenv_int(const char *k, long v)
{
	char b[32];
	snprintf(b, sizeof(b), "%ld", v);
	setenv(k, b, 1);
}

/* A descriptor number the program will not notice: open() hands out the lowest free one, so
 * a high number does not shift the program's own descriptors. */
static int high_fd(void)
{
	struct rlimit rl;
	long top = 1000;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    (long)rl.rlim_cur - 24 < top)
		top = (long)rl.rlim_cur - 24;
	return top > 10 ? (int)top : 10;
}

/* The child's side, after fork (cli.h). */
void wp_exec_under_agent(const struct wp_opts *o, const char *agent, const char *profile_path,
			 int progress_fd)
{
	/* A report that is not text (an SVG, pprof, JSON, folded or csv) going to standard
	 * output must be the only thing there: `wallprof --flame-graph -- CMD > f.svg` would
	 * otherwise mix the program's own output into the file. The program's standard output
	 * goes to standard error instead, still in view. */
	if (o->format != WP_FMT_TEXT && !o->report_out && !o->live)
		dup2(2, 1);
	/* LD_PRELOAD: ours first, anything the user had after it */
	const char *old = getenv("LD_PRELOAD");
	char pre[PATH_MAX * 2];
	snprintf(pre, sizeof(pre), "%s%s%s", agent, old && *old ? " " : "", old ? old : "");
	setenv("LD_PRELOAD", pre, 1);
	if (o->mode)
		setenv("WALLPROF_MODE", o->mode, 1);
	if (o->hz)
		setenv_int("WALLPROF_HZ", o->hz);
	if (o->threads >= 0)
		setenv_int("WALLPROF_THREADS", o->threads);
	/* Absolute: a process that changes directory, or is started in another (CPython's
	 * regrtest runs its workers in a temporary directory and fails a test that leaves a
	 * file there), must find no file of ours in it; its children's files belong beside
	 * the main file, where the report looks for them. */
	char abs[PATH_MAX * 2], cwd[PATH_MAX];
	if (profile_path[0] != '/' && getcwd(cwd, sizeof(cwd)) &&
	    snprintf(abs, sizeof(abs), "%s/%s", cwd, profile_path) < (int)sizeof(abs))
		profile_path = abs;
	setenv("WALLPROF_OUT", profile_path, 1);
	/* This process keeps the pid through exec: it owns profile_path; any process it
	 * starts writes <name>.<pid>.prof beside it instead of over it. */
	setenv_int("WALLPROF_ROOT_PID", (long)getpid());
	/* Every process of the tree inherits this and writes it as META run=, so the files of
	 * one run find each other: the root's pid and the time it started. */
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	char run[64];
	snprintf(run, sizeof(run), "%ld-%lld", (long)getpid(),
		 (long long)now.tv_sec * 1000000000ll + now.tv_nsec);
	setenv("WALLPROF_RUN", run, 1);
	setenv("WALLPROF_QUIET", "1", 1);
	int wfd = high_fd();
	if (progress_fd >= 0 && dup2(progress_fd, wfd) == wfd)
		setenv_int("WALLPROF_PROGRESS_FD", wfd);
	execvp(o->cmd[0], o->cmd);
	fprintf(stderr, "wallprof: cannot run %s: %s\n", o->cmd[0], strerror(errno));
	_exit(127);
}

static volatile sig_atomic_t forwarded;
static pid_t child;

static void forward(int sig)
{
	if (child > 0)
		kill(child, sig);
	forwarded = sig;
}

/* The agent's warnings, received through the channel (it never writes to the program's
 * stderr under the command). The profile keeps them too (META message_N), and every report
 * shows them from there (procinfo.h); these are for when no profile was written. */
#define MAX_MESSAGES 16
static char *messages[MAX_MESSAGES];
static size_t nmessages;

static void keep_message(const char *m)
{
	if (nmessages < MAX_MESSAGES)
		messages[nmessages++] = strdup(m);
}

void wp_record_print_messages(FILE *to)
{
	for (size_t i = 0; i < nmessages; i++)
		if (messages[i])
			fprintf(to, "wallprof: the agent said: %s\n", messages[i]);
}

int wp_check_profile_path(const char *path)
{
	char dir[PATH_MAX];
	int r = wp_path_dir_writable(path, dir, sizeof(dir));
	if (r == 0)
		return 0;
	fprintf(stderr, "wallprof: cannot write the profile to %s: %s: %s (choose another -o)\n",
		path, dir, strerror(-r));
	return -1;
}

static void progress(int fd, int tty, int quiet)
{
	static char acc[256];
	static size_t len;
	static time_t last_plain;
	char buf[256];
	ssize_t n = read(fd, buf, sizeof(buf));
	if (n <= 0)
		return;
	for (ssize_t i = 0; i < n; i++) {
		if (buf[i] != '\n') {
			if (len < sizeof(acc) - 1)
				acc[len++] = buf[i];
			continue;
		}
		acc[len] = 0;
		len = 0;
		if (!strncmp(acc, "message=", 8)) {
			keep_message(acc + 8);
			continue;
		}
		if (quiet)
			continue;
		unsigned long long samples = 0, threads = 0;
		if (sscanf(acc, "samples=%llu threads=%llu", &samples, &threads) != 2)
			continue;
		if (tty) {
			fprintf(stderr, "\r\033[K[wallprof] %llu samples, %llu threads seen", samples,
				threads);
		} else if (time(NULL) - last_plain >= 5) {
			fprintf(stderr, "[wallprof] %llu samples, %llu threads seen\n", samples, threads);
			last_plain = time(NULL);
		}
	}
}

/* The agent's list of the run's processes that took no sample is STEM.unsampled beside the
 * main file STEM.EXT, appended to by each: an earlier run's list under the same name goes,
 * as its main file is replaced (the report would leave its lines out by their run id, but
 * the file would grow run after run). */
static void forget_unsampled(const char *profile_path)
{
	char list[PATH_MAX + 16];
	const char *slash = strrchr(profile_path, '/');
	const char *base = slash ? slash + 1 : profile_path;
	const char *dot = strrchr(base, '.');
	size_t stem = dot && dot != base ? (size_t)(dot - profile_path) : strlen(profile_path);
	if (snprintf(list, sizeof(list), "%.*s.unsampled", (int)stem, profile_path) <
	    (int)sizeof(list))
		unlink(list);
}

/* After the program's end: the agent's sampler is a task of its own (not one of the program's
 * threads) and outlives it when it ended without exit handlers (an exit_group system call, as
 * Go programs end, or a kill); it holds the channel until it has written the profile. At
 * most 30 s: a sampler that never ends must not keep the command waiting for good. */
static void drain_channel(struct pollfd *pf, int tty, int quiet)
{
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (pf->fd >= 0) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - t0.tv_sec >= 30)
			break;
		int r = poll(pf, 1, 100);
		if (r < 0 && errno != EINTR)
			break;
		if (r <= 0)
			continue;
		if (pf->revents & POLLIN)
			progress(pf->fd, tty, quiet);
		else if (pf->revents & (POLLHUP | POLLERR))
			pf->fd = -1;
	}
}

int wp_record(struct wp_opts *o, char *profile_path, size_t cap)
{
	/* no dynamic loader, nothing to preload into: sampled from outside instead */
	if (o->cmd && o->cmd[0] && wp_program_is_static(o->cmd[0]))
		return wp_record_outside(o, profile_path, cap);
	const char *agent = wp_find_agent();
	if (!agent)
		return -1;
	if (o->out)
		snprintf(profile_path, cap, "%s", o->out);
	else
		snprintf(profile_path, cap, "wallprof.%ld.prof", (long)getpid());
	/* Said before the program runs, not after: nothing is lost that way. */
	if (wp_check_profile_path(profile_path) != 0)
		return -2;
	forget_unsampled(profile_path);
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) != 0) {
		perror("wallprof: pipe");
		return -1;
	}
	int tty = isatty(2);

	child = fork();
	if (child < 0) {
		perror("wallprof: fork");
		return -1;
	}
	if (child == 0)
		wp_exec_under_agent(o, agent, profile_path, pfd[1]);
	close(pfd[1]);
	/* While the program runs, Ctrl-C and friends are its business: pass them on and keep
	 * waiting, so the profile is still reported. */
	struct sigaction sa, old_int, old_term, old_quit, old_hup;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = forward;
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	sigaction(SIGQUIT, &sa, &old_quit);
	sigaction(SIGHUP, &sa, &old_hup);

	int status = 0;
	/* The program's end is seen at once through a pidfd (readable when it exits); without
	 * one (before Linux 5.3), by looking every 50 ms, which added 25 ms to a run on average
	 * (a p90 of 54 ms over /bin/true in scripts/bench). */
	int pidfd = (int)syscall(SYS_pidfd_open, child, 0);
	struct pollfd pf[2] = { { pfd[0], POLLIN, 0 }, { pidfd, POLLIN, 0 } };
	for (;;) {
		pid_t w = waitpid(child, &status, WNOHANG);
		if (w == child)
			break;
		if (w < 0 && errno != EINTR) {
			perror("wallprof: waitpid");
			break;
		}
		if (poll(pf, pidfd >= 0 ? 2 : 1, pidfd >= 0 ? -1 : 50) > 0) {
			if (pf[0].revents & POLLIN)
				progress(pfd[0], tty, o->quiet);
			else if (pf[0].revents & (POLLHUP | POLLERR))
				pf[0].fd = -1; /* the program closed it; keep waiting on the child */
		}
	}
	if (pidfd >= 0)
		close(pidfd);
	/* a killed process of the run has its profile written after its death: the report
	 * waits for those writers (bounded), not for processes that outlive the root */
	wp_wait_run_writers((long)child, 2.0);
	drain_channel(&pf[0], tty, o->quiet);
	if (tty && !o->quiet)
		fprintf(stderr, "\r\033[K");
	close(pfd[0]);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	sigaction(SIGQUIT, &old_quit, NULL);
	sigaction(SIGHUP, &old_hup, NULL);
	o->exit_status = status;
	o->have_exit_status = 1;
	o->root_pid = child; /* its run id starts "<pid>-" (wp_exec_under_agent) */
	return 0;
}

int wp_exit_like(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status)) {
		/* Die of the same signal, so the shell sees what it would have seen. */
		int sig = WTERMSIG(status);
		fflush(NULL);
		signal(sig, SIG_DFL);
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, sig);
		sigprocmask(SIG_UNBLOCK, &set, NULL);
		raise(sig);
		return 128 + sig;
	}
	return 1;
}
