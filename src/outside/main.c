/* SPDX-License-Identifier: MIT */
/* wallprof-outside: the outside sampler (docs/design.md, "The outside sampler"). Run by the
 * wallprof command, never by hand:
 *   wallprof-outside --pid=PID --mode=M --hz=N --out=PATH [--duration=SECONDS]
 *       samples a running process until the duration ends, SIGINT or SIGTERM, or its end;
 *   wallprof-outside --exec --mode=M --hz=N --out=PATH -- PROGRAM ARGS...
 *       runs a program that cannot take the agent (statically linked) and samples it from its
 *       first instruction to its end; exits as the program did;
 *   wallprof-outside --pid=PID --once --hz=N --out=PATH
 *       --dump: one snapshot, each thread sampled once (dump.c).
 * Either way the profile is an ordinary one. Problems: one line on stderr, exit status 1. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/clock.h"
#include "agent/peek.h"
#include "agent/task.h"
#include "dump.h"
#include "osample.h"
#include "owriter.h"
#include "refusals.h"
#include "children.h"
#include "rmodules.h"

#ifndef WALLPROF_VERSION
#define WALLPROF_VERSION "0.0.0"
#endif

struct args {
	pid_t pid;
	int exec;
	int stdout_to_stderr; /* --exec: the report takes standard output (cmds/outside.c) */
	int checkpoint;       /* --checkpoint: the profile rewritten every second (--live) */
	int quiet;            /* --quiet: no line when sampling starts */
	int once;             /* --once: one snapshot of every thread (--dump) */
	int cpu_mode;
	int hz;
	double duration;
	const char *out;
	const char *run; /* --run=ID: a child's sampler, started by its parent's (children.h) */
	const char *root_out; /* --root-out=FILE: the run's main file (a child's sampler) */
	char **cmd;
};

static volatile sig_atomic_t stop;

static void on_stop(int sig)
{
	stop = 1;
}

static int parse(int argc, char **argv, struct args *a)
{
	memset(a, 0, sizeof(*a));
	a->hz = 100;
	for (int i = 1; i < argc; i++) {
		const char *s = argv[i];
		if (!strncmp(s, "--pid=", 6))
			a->pid = (pid_t)atoi(s + 6);
		else if (!strcmp(s, "--exec"))
			a->exec = 1;
		else if (!strcmp(s, "--stdout-to-stderr"))
			a->stdout_to_stderr = 1;
		else if (!strcmp(s, "--checkpoint"))
			a->checkpoint = 1;
		else if (!strcmp(s, "--quiet"))
			a->quiet = 1;
		else if (!strcmp(s, "--once"))
			a->once = 1;
		else if (!strncmp(s, "--mode=", 7))
			a->cpu_mode = !strcmp(s + 7, "cpu");
		else if (!strncmp(s, "--hz=", 5))
			a->hz = atoi(s + 5);
		else if (!strncmp(s, "--duration=", 11))
			a->duration = atof(s + 11);
		else if (!strncmp(s, "--out=", 6))
			a->out = s + 6;
		else if (!strncmp(s, "--run=", 6))
			a->run = s + 6;
		else if (!strncmp(s, "--root-out=", 11))
			a->root_out = s + 11;
		else if (!strcmp(s, "--")) {
			a->cmd = argv + i + 1;
			break;
		} else {
			fprintf(stderr, "wallprof-outside: unknown argument %s\n", s);
			return -1;
		}
	}
	if (a->hz < 1 || a->hz > 10000 || !a->out || (a->exec ? !a->cmd || !a->cmd[0] : a->pid <= 0)) {
		fprintf(stderr, "wallprof-outside: run by the wallprof command (wallprof --pid=PID)\n");
		return -1;
	}
	return 0;
}

/* The process's CPU time (user, system) from /proc/PID/stat, in ns. */
static void proc_cpu(pid_t pid, uint64_t *user, uint64_t *sys)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return;
	buf[n] = 0;
	const char *p = strrchr(buf, ')');
	unsigned long long ut, st;
	/* after ")": state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime */
	if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) == 2) {
		long tck = sysconf(_SC_CLK_TCK);
		*user = ut * (1000000000ull / (uint64_t)(tck > 0 ? tck : 100));
		*sys = st * (1000000000ull / (uint64_t)(tck > 0 ? tck : 100));
	}
}

static long proc_ppid(pid_t pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "re");
	long ppid = 0;
	if (f) {
		if (fgets(buf, sizeof(buf), f)) {
			const char *p = strrchr(buf, ')');
			if (p)
				sscanf(p + 2, "%*c %ld", &ppid);
		}
		fclose(f);
	}
	return ppid;
}

/* /proc/PID/cmdline, its NULs and newlines as spaces. */
static void command_of(pid_t pid, char *buf, size_t cap)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, cap - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n < 0)
		n = 0;
	while (n > 0 && buf[n - 1] == 0)
		n--;
	for (ssize_t i = 0; i < n; i++)
		if (buf[i] == 0 || buf[i] == '\n')
			buf[i] = ' ';
	buf[n] = 0;
}

struct run {
	pid_t pid;
	uint64_t start, end, start_unix;
	uint64_t cpu_user0, cpu_sys0, cpu_user, cpu_sys;
	char command[1024];
	long ppid;
	int status, have_status;
	char run[96];         /* --pid: the run id of its file and its children's ("": none) */
	uint64_t children_at; /* when their next look is due */
};

/* The children of an attached process are looked for this often (children.h). */
#define CHILDREN_EVERY_NS (100 * 1000000ull)

static void append(char *buf, size_t cap, size_t *len, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void append(char *buf, size_t cap, size_t *len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf + *len, cap - *len, fmt, ap);
	va_end(ap);
	if (n > 0)
		*len += (size_t)n < cap - *len ? (size_t)n : cap - *len - 1;
}

static int write_profile(const struct args *a, const struct run *r, const char *extra);

/* --checkpoint: the profile so far, every second, for the live view (checkpoint=1: no final
 * word yet). */
static void maybe_checkpoint(const struct args *a, struct run *r, uint64_t now, uint64_t *next)
{
	if (!a->checkpoint || now < *next)
		return;
	*next = now + 1000000000ull;
	r->end = now;
	write_profile(a, r, "");
}

static int write_profile(const struct args *a, const struct run *r, const char *extra)
{
	static char fixed[8192];
	size_t len = 0;
	size_t cap = sizeof(fixed) + strlen(extra);
	char *meta = cap > sizeof(fixed) ? malloc(cap) : fixed;
	if (!meta) {
		fprintf(stderr, "wallprof: out of memory\n");
		return -1;
	}
	const struct wp_ostats *s = wp_osample_stats();
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	uint64_t self_ns = (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000ull +
			   (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000ull;
	append(meta, cap, &len, "wallprof_version=%s\nmode=%s\nhz=%d\nthreads_per_tick=0\n"
	       "pid=%d\nppid=%ld\ncommand=%s\nncpus=%ld\nstart_unix_ns=%llu\nduration_ns=%llu\n",
	       WALLPROF_VERSION, a->cpu_mode ? "cpu" : "wall", a->hz, (int)r->pid, r->ppid,
	       r->command, sysconf(_SC_NPROCESSORS_ONLN), (unsigned long long)r->start_unix,
	       (unsigned long long)(r->end - r->start));
	append(meta, cap, &len, "cpu_user_ns=%llu\ncpu_sys_ns=%llu\nsampler_cpu_ns=%llu\n"
	       "unwind_ns=%llu\nticks=%llu\nticks_late=%llu\nsamples=%llu\nunsignalled=%llu\n"
	       "reused=%llu\ntruncated=%llu\nthreads_seen=%llu\nperf_clock_threads=%llu\n"
	       "perf_clock_records=%llu\nperf_clock_lost=%llu\nmissed_moving=%llu\n"
	       "unwind_table_bytes=%zu\n",
	       (unsigned long long)(r->cpu_user - r->cpu_user0),
	       (unsigned long long)(r->cpu_sys - r->cpu_sys0), (unsigned long long)self_ns,
	       (unsigned long long)s->unwind_ns, (unsigned long long)s->ticks,
	       (unsigned long long)s->ticks_late, (unsigned long long)s->samples,
	       (unsigned long long)s->stack_reads, (unsigned long long)s->reused,
	       (unsigned long long)s->truncated, (unsigned long long)s->threads_seen,
	       (unsigned long long)s->clocks_opened, (unsigned long long)s->perf_records,
	       (unsigned long long)s->perf_lost, (unsigned long long)s->moved,
	       wp_modules_copied_bytes());
	/* how it was sampled: from outside, attached to a running process or running a program
	 * that could not take the agent */
	append(meta, cap, &len, "sampler=outside\n%s", a->exec ? "static=1\n" : "attached=1\n");
	if (r->run[0])
		append(meta, cap, &len, "run=%s\n", r->run);
	if (s->clock_refused[0])
		append(meta, cap, &len, "message_1=%s\n", s->clock_refused);
	if (r->have_status && WIFSIGNALED(r->status))
		append(meta, cap, &len, "died_of_signal=%d\n", WTERMSIG(r->status));
	else if (r->have_status && WIFEXITED(r->status))
		append(meta, cap, &len, "exit_status=%d\n", WEXITSTATUS(r->status));
	else
		append(meta, cap, &len, "checkpoint=1\n"); /* still running: no final word */
	append(meta, cap, &len, "%s", extra);
	int e = wp_owriter_write(a->out, meta);
	if (meta != fixed)
		free(meta);
	if (e) {
		fprintf(stderr, "wallprof: cannot write the profile %s: %s\n", a->out, strerror(-e));
		return -1;
	}
	return 0;
}

/* The ticks, until the duration, a stop signal, or the process's end. */
static void loop(const struct args *a, struct run *r)
{
	uint64_t interval = 1000000000ull / (uint64_t)a->hz;
	uint64_t next = r->start + interval;
	uint64_t until = a->duration > 0 ? r->start + (uint64_t)(a->duration * 1e9) : UINT64_MAX;
	uint64_t next_checkpoint = r->start + 1000000000ull;
	for (;;) {
		struct timespec ts = { (time_t)(next / 1000000000ull), (long)(next % 1000000000ull) };
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR && !stop)
			;
		uint64_t now = wp_now_ns();
		uint32_t units = 1;
		if (now > next + interval)
			units += (uint32_t)((now - next) / interval);
		next += (uint64_t)units * interval;
		if (a->exec && !r->have_status) {
			pid_t w = waitpid(r->pid, &r->status, WNOHANG);
			if (w == r->pid)
				r->have_status = 1;
		}
		if (!r->have_status)
			proc_cpu(r->pid, &r->cpu_user, &r->cpu_sys);
		int live = wp_osample_tick(now, units);
		if (stop || r->have_status || !live || now >= until)
			break;
		if (r->run[0] && now >= r->children_at) {
			wp_children_poll(r->pid);
			r->children_at = now + CHILDREN_EVERY_NS;
		}
		maybe_checkpoint(a, r, now, &next_checkpoint);
	}
	r->end = wp_now_ns();
	wp_osample_end(r->end);
}

/* --exec: the program is started stopped at a pipe; its main thread's clock is opened
 * disabled with enable_on_exec, so it counts from the exec's first instruction. Returns the
 * pid, or -1 with the line said. */
static pid_t start_program(const struct args *a)
{
	int go[2], execd[2];
	if (pipe2(go, O_CLOEXEC) || pipe2(execd, O_CLOEXEC)) {
		perror("wallprof: pipe");
		return -1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		perror("wallprof: fork");
		return -1;
	}
	if (pid == 0) {
		char c;
		signal(SIGINT, SIG_DFL);
		signal(SIGQUIT, SIG_DFL);
		if (read(go[0], &c, 1) != 1)
			_exit(127);
		if (a->stdout_to_stderr)
			dup2(2, 1);
		execvp(a->cmd[0], a->cmd);
		int e = errno;
		if (write(execd[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	close(execd[1]);
	wp_osample_adopt_exec(pid);
	int e = 0;
	if (write(go[1], "x", 1) != 1 || read(execd[0], &e, sizeof(e)) > 0) {
		fprintf(stderr, "wallprof: cannot run %s: %s\n", a->cmd[0], strerror(e ? e : EIO));
		waitpid(pid, NULL, 0);
		return -1;
	}
	close(go[1]);
	close(execd[0]);
	return pid;
}

int main(int argc, char **argv)
{
	struct args a;
	if (parse(argc, argv, &a))
		return 2;
	struct run r;
	memset(&r, 0, sizeof(r));
	/* a child's sampler stops with the sampler that started it, even one killed by SIGKILL
	 * (whose own process would otherwise be sampled on by an orphan) */
	if (a.run && (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() == 1))
		return 1;
	char why[512];
	if (!a.exec && wp_refusal_check(a.pid, why, sizeof(why))) {
		if (!a.run) /* (a child's sampler: it ended, or exec'd what we may not read) */
			fprintf(stderr, "wallprof: %s\n", why);
		return 1;
	}
	if (a.exec && wp_refusal_check_self(why, sizeof(why))) {
		fprintf(stderr, "wallprof: cannot profile %s from outside: %s\n", a.cmd[0], why);
		return WP_OUTSIDE_REFUSED;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigaction(SIGTERM, &sa, NULL);
	/* --exec: Ctrl-C is the program's to handle; the profile ends when it does */
	if (a.exec)
		sa.sa_handler = SIG_IGN;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	struct timespec rt;
	clock_gettime(CLOCK_REALTIME, &rt);
	r.start_unix = wp_ts_ns(&rt);
	r.start = wp_now_ns();
	struct wp_osettings set = { .pid = a.pid, .cpu_mode = a.once ? 0 : a.cpu_mode, .hz = a.hz,
				    .once = a.once, .on_sampled = a.once ? wp_dump_sampled : NULL };
	if (a.exec) {
		set.pid = 0;
		if (wp_osample_begin(&set, r.start) < 0)
			return 1;
		r.pid = start_program(&a);
		if (r.pid < 0)
			return 127;
		set.pid = r.pid;
		wp_osample_retarget(r.pid);
	} else {
		r.pid = a.pid;
		if (wp_osample_begin(&set, r.start) < 0) {
			fprintf(stderr, "wallprof: cannot read pid %d's memory map\n", (int)a.pid);
			return 1;
		}
	}
	if (!a.exec && !a.quiet && !a.checkpoint && !a.once)
		fprintf(stderr, "wallprof: sampling pid %d from outside %s\n", (int)a.pid,
			a.duration > 0 ? "for the duration asked" : "until Ctrl-C or its end");
	wp_task_note_program(r.pid);
	wp_peek_set_tid(r.pid);
	command_of(r.pid, r.command, sizeof(r.command));
	r.ppid = proc_ppid(r.pid);
	proc_cpu(r.pid, &r.cpu_user0, &r.cpu_sys0);
	if (a.exec)
		r.cpu_user0 = r.cpu_sys0 = 0;
	r.cpu_user = r.cpu_user0;
	r.cpu_sys = r.cpu_sys0;
	/* --pid: the processes it starts are followed, each into a file of the same run */
	if (!a.exec && !a.once && !a.checkpoint) {
		if (a.run)
			snprintf(r.run, sizeof(r.run), "%s", a.run);
		else
			snprintf(r.run, sizeof(r.run), "outside-%d-%llu", (int)getpid(),
				 (unsigned long long)r.start_unix);
		if (wp_children_begin(a.root_out ? a.root_out : a.out, r.run, a.cpu_mode, a.hz))
			r.run[0] = 0;
	}
	if (a.once)
		wp_dump_take(r.pid, a.hz, &r.end);
	else
		loop(&a, &r);
	if (r.run[0])
		wp_children_end();
	if (a.exec && !r.have_status)
		r.have_status = waitpid(r.pid, &r.status, 0) == r.pid;
	char *extra = a.once ? wp_dump_meta(r.pid) : NULL;
	int rc = write_profile(&a, &r, extra ? extra : "") ? 1 : 0;
	free(extra);
	if (a.exec && r.have_status)
		return WIFEXITED(r.status) ? WEXITSTATUS(r.status) : 128 + WTERMSIG(r.status);
	return rc;
}
