/* SPDX-License-Identifier: MIT */
/* The agent's life: the constructor reads the settings and starts the sampler; at the end an
 * exit handler (after every destructor, with the exit status) or _exit (exit.c) stops it and
 * writes the profile, or, when the process took no sample, one line in the run's list of
 * unsampled processes. In between, the process may fork (the child profiles itself into its
 * own file), exec (the profile so far is written first; the new image starts afresh), or die
 * of a signal (the samples so far are written, then it dies the same way). When its last
 * thread ends without exit() (main called pthread_exit, say), the sampler ends it as glibc
 * would have (sampler.c). Long runs are checkpointed, so even SIGKILL loses at most one
 * interval. */
#include <alloca.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pages.h"
#include "wallprof.h"

#include "common/paths.h"

#include "agent.h"
#include "api.h"
#include "clock.h"
#include "condwait.h"
#include "config.h"
#include "eintr.h"
#include "fds.h"
#include "handshake.h"
#include "log.h"
#include "modules.h"
#include "peek.h"
#include "sampler.h"
#include "sigmask.h"
#include "signals.h"
#include "stats.h"
#include "threadmask.h"
#include "threads.h"
#include "title.h"
#include "transfers.h"
#include "writer.h"

#define EXPORT __attribute__((visibility("default")))

static struct wp_config cfg WP_BIG;
static _Atomic int running;
static pid_t owner_pid, owner_ppid; /* the program's: the sampler's task has its own */
static int is_fork_child;
static char meta_text[8192] WP_BIG;
/* The run this process belongs to: WALLPROF_RUN when the command set it; else inherited in
 * memory by a fork child; else this process starts a run of its own ("<pid>-<start ns>"). */
static char run_id[64];

/* Before the sampler starts, on the starting thread: a fork child that follows at once must
 * find the id already in the memory it copies. */
static void choose_run_id(void)
{
	if (cfg.run[0]) {
		wp_format(run_id, sizeof(run_id), "%s", cfg.run);
	} else if (!run_id[0]) {
		struct timespec now;
		clock_gettime(CLOCK_REALTIME, &now);
		wp_format(run_id, sizeof(run_id), "%d-%llu", (int)getpid(),
			  (unsigned long long)now.tv_sec * 1000000000ull +
				  (unsigned long long)now.tv_nsec);
	}
}
static char out_path[PATH_MAX] WP_BIG;

WALLPROF_API const char *wallprof_version(void)
{
	return WALLPROF_VERSION;
}

/* META lines the agent knows from its settings; the writer adds the measurements. */
const char *wp_agent_meta(void)
{
	return meta_text;
}

/* Where the program's arguments are in its memory (what the kernel's arg_start and arg_end
 * say, and /proc/PID/cmdline reads), from the constructor's argv. */
static uintptr_t arg_start;
static size_t arg_len;

static void note_arguments(int argc, char **argv)
{
	if (argc < 1 || !argv || !argv[0] || !argv[argc - 1])
		return;
	arg_start = (uintptr_t)argv[0];
	uintptr_t end = (uintptr_t)argv[argc - 1] + strlen(argv[argc - 1]) + 1;
	arg_len = end > arg_start && end - arg_start < (1u << 20) ? end - arg_start : 0;
}

/* The arguments as they are now, read from memory (fault-proof: peek.h), no /proc read. A
 * title written over their end (setproctitle) goes on into the environment's memory, where
 * /proc/PID/cmdline reads it too. -1 when unknown. */
static ssize_t command_from_memory(char *out, size_t cap)
{
	if (!arg_len || cap < 2)
		return -1;
	size_t want = arg_len < cap - 1 ? arg_len : cap - 1;
	ssize_t n = wp_peek_some(arg_start, out, want);
	if (n == (ssize_t)arg_len && out[n - 1] != 0 && (size_t)n < cap - 1) {
		ssize_t more = wp_peek_some(arg_start + (size_t)n, out + n, cap - 1 - (size_t)n);
		char *nul = more > 0 ? memchr(out + n, 0, (size_t)more) : NULL;
		n += more > 0 ? (nul ? nul - (out + n) : more) : 0;
	}
	return n;
}

/* The command line, NULs turned into spaces, for the report header. /proc only when the
 * memory could not be read (the sampler's task gone, on a fallback path): from thread-self,
 * as once main has ended (pthread_exit), /proc/self names a zombie without memory. */
static void read_command(char *out, size_t cap)
{
	ssize_t n = command_from_memory(out, cap);
	if (n <= 0) {
		int fd = open("/proc/thread-self/cmdline", O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
		n = fd >= 0 ? read(fd, out, cap - 1) : -1;
		if (fd >= 0)
			close(fd);
	}
	if (n <= 0) {
		out[0] = 0;
		return;
	}
	for (ssize_t i = 0; i < n; i++)
		if (out[i] == 0 || out[i] == '\n')
			out[i] = ' ';
	while (n > 0 && out[n - 1] == ' ')
		n--;
	out[n] = 0;
}

/* Read once per profile: at the first tick (META), or at the end of a process that had none
 * (its line in the run's list). */
static char command[2048] WP_BIG;
static int command_known;

static const char *the_command(void)
{
	if (!command_known) {
		read_command(command, sizeof(command));
		command_known = 1;
	}
	return command;
}

static void build_meta(void)
{
	const char *cmd = the_command();
	wp_format(meta_text, sizeof(meta_text),
		  "wallprof_version=%s\nmode=%s\nhz=%d\nthreads_per_tick=%d\npid=%d\nppid=%d\n"
		  "run=%s\ncommand=%s\nsignal=%d\nncpus=%ld\n",
		  WALLPROF_VERSION, cfg.mode == WP_MODE_CPU ? "cpu" : "wall", cfg.hz, cfg.threads,
		  (int)owner_pid, (int)owner_ppid, run_id, cmd, wp_handshake_signal(),
		  sysconf(_SC_NPROCESSORS_ONLN));
}

/* Names can change over a thread's life; take the latest for those still here. */
static void refresh_names(void)
{
	size_t n;
	struct wp_athread **live = wp_threads_live(&n);
	for (size_t i = 0; i < n; i++)
		if (live[i]->alive)
			wp_threads_reread_name(live[i]);
}

/* Whether this process should leave a file: the process the user profiles always (even with
 * no samples, so the run is visible); any other process (a fork child, a program it started,
 * or any process when WALLPROF_ROOT_PID does not say which is the user's) only when it was
 * sampled, or ran unseen (threads that block the signal where no perf clock is allowed: the
 * profile says so), so that `sh -c`, build tools and posix_spawn'ed helpers do not litter. */
static int worth_writing(void)
{
	int root = !is_fork_child && cfg.root_pid == (int)owner_pid;
	return root || wp_stats.samples > 0 || wp_stats.unseen_ns > 0;
}

/* Where the profile goes when out_path cannot be written: the temporary directory, same name. */
static char fallback_path[PATH_MAX] WP_BIG;

/* The directory part of `path` is one we may create files in (else *err says why). */
static int dir_writable(const char *path, int *err)
{
	char dir[PATH_MAX];
	int r = wp_path_dir_writable(path, dir, sizeof(dir));
	*err = -r;
	return r == 0;
}

/* ${TMPDIR:-/tmp}/<the file name of out_path>. */
static void make_fallback(void)
{
	const char *tmp = getenv("TMPDIR");
	const char *base = strrchr(out_path, '/');
	base = base ? base + 1 : out_path;
	wp_format(fallback_path, sizeof(fallback_path), "%s/%s", tmp && *tmp ? tmp : "/tmp", base);
}

/* Checked at start, so the user hears at once, not after the run, that the profile cannot go
 * where they asked; the samples then go to the temporary directory, named in the line. */
static void check_out_path(void)
{
	int err = 0;
	if (dir_writable(out_path, &err))
		return;
	make_fallback();
	int err2 = 0;
	if (dir_writable(fallback_path, &err2)) {
		wp_log("cannot write the profile to %s (%s); it goes to %s instead", out_path,
		       strerror(err), fallback_path);
		wp_format(out_path, sizeof(out_path), "%s", fallback_path);
	} else {
		wp_log("cannot write the profile to %s (%s), nor to %s (%s); it will be lost", out_path,
		       strerror(err), fallback_path, strerror(err2));
	}
}

/* Writes the profile to out_path, or, when that fails now (its directory went away), to the
 * temporary directory, saying where (once: checkpoints would repeat it every interval). */
static int write_profile(const char *extra)
{
	static _Atomic int said;
	static char marked[256];
	if (cfg.test_slow_tick && wp_sampler_in_tick()) {
		/* the one thing the test of a slow tick looks for: this write raced the tick */
		wp_format(marked, sizeof(marked), "%stest_written_in_tick=1\n", extra ? extra : "");
		extra = marked;
	}
	int r = wp_writer_write(out_path, extra);
	if (r == 0 || r == -EBUSY)
		return r;
	make_fallback();
	if (strcmp(fallback_path, out_path) && wp_writer_write(fallback_path, extra) == 0) {
		if (!atomic_exchange(&said, 1))
			wp_log("cannot write %s (%s); the profile was written to %s instead", out_path,
			       strerror(-r), fallback_path);
		wp_format(out_path, sizeof(out_path), "%s", fallback_path);
		return 0;
	}
	if (!atomic_exchange(&said, 1))
		wp_log("cannot write %s (%s); the profile is lost", out_path, strerror(-r));
	return r;
}

/* On the sampler thread, every WALLPROF_CHECKPOINT seconds. */
static void checkpoint(void)
{
	if (worth_writing())
		write_profile("checkpoint=1\n");
}

/* ---- the end: exit, _exit, exec, fatal signal ---- */

/* The run's list of processes that took no sample (config.h: wp_config_unsampled_path). */
static char unsampled_path[PATH_MAX] WP_BIG;

/* "exit_status=3\n" -> "exit 3"; "died_of_signal=9\n" -> "signal 9"; "exec=1\n" -> "exec";
 * else "stop" (wallprof_stop). Async-signal-safe. */
static void end_word(const char *extra, char *out, size_t cap)
{
	const char *word = "stop", *num = NULL;
	if (extra && !strncmp(extra, "exit_status=", 12))
		word = "exit ", num = extra + 12;
	else if (extra && !strncmp(extra, "died_of_signal=", 15))
		word = "signal ", num = extra + 15;
	else if (extra && !strcmp(extra, "exec=1\n"))
		word = "exec";
	size_t n = wp_format(out, cap, "%s", word);
	for (; num && *num >= '0' && *num <= '9' && n + 1 < cap; num++)
		out[n++] = *num;
	out[n] = 0;
}

/* A process that took no sample leaves no profile (worth_writing): one line in the run's
 * list instead, so the report can count it without a file per process. One write() with
 * O_APPEND: the lines of processes ending at once never mix (a regular file's appends are
 * serialized by the kernel); under PIPE_BUF bytes. Async-signal-safe (system calls and the
 * agent's formatter; static buffers: called once, at the end, under the writer's rules). */
static int note_unsampled(const char *extra)
{
	static char line[1024];
	if (!unsampled_path[0])
		return 1;
	char end[32];
	end_word(extra, end, sizeof(end));
	/* the total alone, from the clock: no /proc read for a process that never sampled */
	unsigned long long cpu = (unsigned long long)wp_program_cpu_total(owner_pid);
	size_t n = wp_format(line, sizeof(line) - 1,
			     "run=%s pid=%d ppid=%d end=%s start_unix_ns=%llu wall_ns=%llu "
			     "cpu_ns=%llu command=%s",
			     run_id, (int)owner_pid, (int)owner_ppid, end,
			     (unsigned long long)wp_sampler_start_unix_ns(),
			     (unsigned long long)(wp_now_ns() - wp_sampler_start_ns()), cpu,
			     the_command());
	line[n++] = '\n';
	int fd = open(unsampled_path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	ssize_t w = write(fd, line, n);
	close(fd);
	return w == (ssize_t)n ? 1 : -EIO;
}

/* What the last write adds to META, and its result. */
static const char *final_extra;
static int final_result;

/* The final write, after the sampler's last tick: on the sampler thread when it can (its own
 * descriptor table), else on the caller's. 1: nothing written (no sample: a line in the
 * run's list instead). */
static void write_final(void)
{
	if (!worth_writing()) {
		final_result = note_unsampled(final_extra);
		return;
	}
	/* a process that ended before its first tick, whose file is written all the same */
	wp_sampler_list_late();
	if (!meta_text[0])
		build_meta(); /* not on the sampler (a fallback): the header at least */
	refresh_names();
	final_result = write_profile(final_extra);
}

/* On the sampler's task, after its last tick: the program's thread group ended, or its image
 * was replaced, without our exit hooks (sampler.h). The task outlived it: write what the
 * exit hook would have. */
static void write_orphaned(int exec)
{
	if (!atomic_exchange(&running, 0))
		return;
	static char extra[48];
	int st = exec ? -1 : wp_sampler_program_status();
	if (exec)
		wp_format(extra, sizeof(extra), "exec=1\n");
	else if (st >= 0 && (st & 0x7f))
		wp_format(extra, sizeof(extra), "died_of_signal=%d\n", st & 0x7f);
	else if (st >= 0)
		wp_format(extra, sizeof(extra), "exit_status=%d\n", (st >> 8) & 0xff);
	else
		wp_format(extra, sizeof(extra), "ended_unseen=1\n");
	final_extra = extra;
	final_result = 1;
	write_final();
}

static int finish(const char *why)
{
	/* the pid first: a vfork child (our memory) must not stop its parent's sampler */
	if (getpid() != owner_pid || !atomic_exchange(&running, 0))
		return -ESRCH;
	final_extra = why;
	final_result = 1;
	wp_sampler_stop(write_final);
	int r = final_result;
	if (r == 0 && !cfg.quiet && !(why && !strcmp(why, "exec=1\n")))
		wp_log_summary("%llu samples from %llu threads (%llu missed) written to %s",
			       (unsigned long long)wp_stats.samples,
			       (unsigned long long)wp_threads_seen(),
			       (unsigned long long)wp_stats_missed_total(), out_path);
	return r > 0 ? 0 : r;
}

/* The end where the caller cannot wait long or safely: a fatal signal handler, _exit (which
 * a signal handler may call too). Async-signal-safe only (the writer is). The pid is looked
 * at first: a vfork child shares our memory, and must not stop its parent's sampler. */
static int finish_async(const char *extra)
{
	if (getpid() != owner_pid || !atomic_exchange(&running, 0))
		return -ESRCH;
	final_extra = extra;
	final_result = 1;
	int r = wp_sampler_stop_async(500 * 1000000ull, write_final);
	if (r == -EBUSY) {
		wp_log("the sampler was still in a tick after 5 s; no profile written");
		return -EBUSY;
	}
	if (r != 0) {
		/* The sampler could not do it: here, then (names as last read). */
		int whole = worth_writing();
		if (whole && !meta_text[0])
			build_meta(); /* it ended before the first tick */
		final_result = whole ? write_profile(extra) : note_unsampled(extra);
	}
	return final_result;
}

/* Runs inside a fatal signal handler: async-signal-safe only. */
static void flush_on_signal(int sig)
{
	static char extra[48];
	wp_format(extra, sizeof(extra), "died_of_signal=%d\n", sig);
	if (cfg.test_slow_fatal)
		for (uint64_t until = wp_now_ns() + 10 * 1000000ull; wp_now_ns() < until;)
			; /* moved and unanswering: ticks signal it and time out (config.h) */
	if (finish_async(extra) == 0 && !cfg.quiet)
		wp_log_summary("dying of signal %d: %llu samples written to %s", sig,
			       (unsigned long long)wp_stats.samples, out_path);
}

/* The exit status, as the process ends (META exit_status: the low 8 bits, what a parent's
 * waitpid sees). exit() and a return from main come through the on_exit handler below;
 * _exit and _Exit through their interposers (exit.c). */
static char exit_extra[40];

static const char *exit_status_extra(int status)
{
	wp_format(exit_extra, sizeof(exit_extra), "exit_status=%d\n", status & 0xff);
	return exit_extra;
}

/* glibc runs on_exit handlers last registered, first run, and the one for the loader's
 * destructors (_dl_fini, registered by __libc_start_main after our constructor ran) before
 * ours: so this comes after every destructor and atexit handler of the program, with the
 * status they all lacked. A fork child inherits it; an exec'd image registers its own. */
static int exit_hook;

static void at_exit(int status, void *arg)
{
	(void)arg;
	if (getpid() == owner_pid) /* a vfork child calling exit must not touch our buffer */
		finish(exit_status_extra(status));
}

/* _exit/_Exit (exit.c), on any thread, maybe in a signal handler: no destructor runs, so
 * this is the process's last word. Async-signal-safe. */
void wp_agent_before__exit(int status)
{
	/* A vfork child shares our memory: it must not format its status into the buffer a
	 * sampler of ours may be writing out (finish_async would turn it away after that). */
	if (getpid() != owner_pid)
		return;
	if (finish_async(exit_status_extra(status)) == 0 && !cfg.quiet)
		wp_log_summary("%llu samples from %llu threads (%llu missed) written to %s",
			       (unsigned long long)wp_stats.samples,
			       (unsigned long long)wp_threads_seen(),
			       (unsigned long long)wp_stats_missed_total(), out_path);
}

void wp_agent_before_wall_wait(void)
{
	if (!atomic_load(&running) || getpid() != owner_pid || !wp_sampler_on_task())
		return;
	wp_log("the program waits for any child with __WALL (a tracer's wait): wallprof stops "
	       "here, as that wait would wait for its sampler (a child of the program's)");
	finish(NULL);
}

/* ---- start ---- */

/* When an earlier image of this same process (before an exec) left its profile at our path,
 * keep it as <stem>.exec<N><ext> so this image's profile does not replace it. */
static void keep_previous_image(void)
{
	char buf[4096];
	int fd = open(out_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = 0;
	char want[32];
	wp_format(want, sizeof(want), "\npid=%d\n", (int)owner_pid);
	if (memcmp(buf, "WALLPROF", 8) || !memmem(buf, (size_t)n, want, strlen(want)))
		return;
	const char *dot = strrchr(out_path, '.'), *slash = strrchr(out_path, '/');
	size_t stem = dot && (!slash || dot > slash + 1) ? (size_t)(dot - out_path) : strlen(out_path);
	for (int i = 1; i < 1000; i++) {
		char to[PATH_MAX];
		if (wp_format(to, sizeof(to), "%s", out_path) >= sizeof(to) - 16)
			return;
		wp_format(to + stem, sizeof(to) - stem, ".exec%d%s", i, out_path + stem);
		if (access(to, F_OK) != 0) {
			rename(out_path, to);
			return;
		}
	}
}

/* Set when this image may find an earlier image's profile at its path (first start only). */
static int previous_image_check;

/* On the sampler thread before its first tick: what needs files or /proc is done there, on
 * the agent's own descriptor table. */
static void on_sampler_start(void)
{
	build_meta();
	if (previous_image_check) {
		previous_image_check = 0;
		keep_previous_image();
	}
}

static int start(void)
{
	int e;
	if (wp_config_out_path(&cfg, (int)getpid(), out_path, sizeof(out_path)) != 0) {
		wp_log("WALLPROF_OUT is too long once expanded; profiling is off for this run");
		return -ENAMETOOLONG;
	}
	check_out_path();
	if (wp_config_unsampled_path(&cfg, unsampled_path, sizeof(unsampled_path)) != 0)
		unsampled_path[0] = 0;
	choose_run_id();
	meta_text[0] = 0; /* a new profile: its header at its first tick (or at its end) */
	command_known = 0;
	/* before the sampler starts: it names the process by them */
	owner_pid = getpid();
	owner_ppid = getppid();
	if ((e = wp_sampler_start(&cfg, on_sampler_start)) != 0) {
		wp_log("cannot start the sampler thread (%s); profiling is off", strerror(-e));
		return e;
	}
	if (cfg.checkpoint_s)
		wp_sampler_set_checkpoint(checkpoint, (uint64_t)cfg.checkpoint_s * 1000000000ull);
	atomic_store(&running, 1);
	return 0;
}

/* In a fork child the sampler does not exist: stop acting as if it did. Inside the C
 * library's fork: allocates nothing (forks.c). */
static int restart_child;

void wp_agent_fork_child(void)
{
	restart_child = atomic_exchange(&running, 0);
	if (!restart_child)
		return;
	is_fork_child = 1;
	if (!cfg.root_pid)
		cfg.root_pid = owner_pid; /* the parent owns the plain file name */
	wp_log_forked();
}

/* Then, once the child's allocator is whole: forget the parent's samples and profile this
 * process afresh, into its own file. */
void wp_agent_fork_child_restart(void)
{
	if (!restart_child)
		return;
	restart_child = 0;
	/* in this order: the parent's descriptor numbers are closed only where they were the
	 * program's table too, which wp_fds_private still tells (threads.c, title.c) */
	wp_sampler_forget_fork(); /* the parent's tables abandoned, never freed */
	wp_fds_forget(); /* the parent's private table stayed with the parent's sampler */
	start();
}

/* Starts (or, after a stop, restarts with a new profile) sampling with `c`. The one-time
 * set-up (signal, fatal handlers, fork handlers) happens on the first start. */
int wp_agent_begin(const struct wp_config *c)
{
	static int initialized;
	if (atomic_load(&running))
		return -EALREADY;
	cfg = *c;
	if (cfg.test_no_retry)
		wp_eintr_disable_retry();
	if (cfg.test_linger)
		wp_handshake_set_linger(20000000ull);
	if (cfg.test_tagless)
		wp_handshake_set_tagless();
	if (!initialized) {
		int e, sig = wp_signals_choose(cfg.signal);
		if ((e = wp_handshake_init(sig)) != 0) {
			wp_log("cannot start (%s); profiling is off for this run", strerror(-e));
			return e;
		}
		previous_image_check = 1;
		wp_sampler_set_orphan(write_orphaned);
		wp_forks_init();
		initialized = 1;
		e = start();
		/* On the task the fatal handlers wait for the first tick (signals.h): a process
		 * that ends before it never installs them, and the task sees a death by a signal
		 * before it. A sampler on a thread of the program's would die with it. */
		if (e == 0 && wp_sampler_on_task())
			wp_signals_defer_fatal(flush_on_signal);
		else
			wp_signals_install_fatal(flush_on_signal);
		return e;
	}
	wp_sampler_forget(); /* a new profile */
	return start();
}

/* Stops sampling and writes the profile (wallprof_stop). */
int wp_agent_end(void)
{
	return finish(NULL);
}

/* wallprof_flush, on the sampler thread between two ticks. */
struct flush_job {
	const char *path;
	int result;
};

static void flush_now(void *arg)
{
	struct flush_job *j = arg;
	refresh_names();
	j->result = wp_writer_write(j->path, "flush=1\n");
}

/* Writes the profile so far, sampling on (wallprof_flush). */
int wp_agent_flush(const char *path)
{
	if (!atomic_load(&running) || getpid() != owner_pid)
		return -ESRCH;
	struct flush_job j = { path ? path : out_path, -EIO };
	int r = wp_sampler_call(flush_now, &j, 10000 * 1000000ull);
	return r ? r : j.result;
}

/* Preloaded, the agent samples from the start; linked into a program, it waits for
 * wallprof_start() unless WALLPROF_AUTOSTART=1. */
static int preloaded(void)
{
	const char *p = getenv("LD_PRELOAD");
	return p && strstr(p, "libwallprof");
}

typedef void (*pthread_exit_fn)(void *) __attribute__((noreturn));
static pthread_exit_fn real_pthread_exit;

/* glibc passes argc, argv and the environment to ELF constructors. */
__attribute__((constructor)) static void wallprof_agent_init(int argc, char **argv, char **envp)
{
	(void)envp;
	wp_log_init(getenv);
	wp_title_exec(argc, argv);
	note_arguments(argc, argv);
	real_pthread_exit = (pthread_exit_fn)dlsym(RTLD_NEXT, "pthread_exit");
	wp_eintr_init();
	wp_transfers_init();
	wp_signals_find_libc();
	wp_sigmask_init();
	wp_tmask_init(); /* the main thread's mask, before anything is signalled */
	wp_condwait_init();
	struct wp_config c;
	if (wp_config_load(&c, getenv) != 0)
		return; /* the complaint is printed; the program runs untouched */
	/* Before anything runs that could call exit (the program's constructors, main). */
	exit_hook = on_exit(at_exit, NULL) == 0;
	if (c.autostart == 1 || (c.autostart == -1 && preloaded()))
		wp_agent_begin(&c);
}

/* Without the exit hook (on_exit failed), the destructor writes, without the status. */
__attribute__((destructor)) static void wallprof_agent_fini(void)
{
	if (!exit_hook)
		finish(NULL);
}

/* ---- pthread_exit: the leader may be the program's last thread ---- */

/* When main (or a fork child's only thread) leaves by pthread_exit and no other program thread
 * is left, glibc would end the process; the sampler does that in its stead, and this tells it
 * to look soon rather than at its next periodic look. Everything else goes to libc as is.
 * Once our constructor has run, only system calls and atomics happen here (a thread may leave
 * from a signal handler). */
EXPORT void pthread_exit(void *retval)
{
	if (!real_pthread_exit) /* called before our constructor ran */
		real_pthread_exit = (pthread_exit_fn)dlsym(RTLD_NEXT, "pthread_exit");
	wp_sampler_leader_leaving();
	real_pthread_exit(retval);
}

/* ---- exec: write before the image goes, and let no late signal kill the next one ---- */

/* Called by the exec interposers (exec.c) just before the image is replaced. */
void wp_agent_before_exec(void)
{
	if (!atomic_load(&running) || getpid() != owner_pid) {
		wp_signals_before_exec(); /* a vfork child: its own handler table */
		return; /* e.g. a vfork child, which shares our memory but is not us */
	}
	finish("exec=1\n");
	/* The sampler is stopped, so no new signal comes. One sent earlier to a thread that
	 * blocks it would survive the exec and meet SIG_DFL there ("Profiling timer expired"):
	 * ignoring the signal discards it; then back to the default the new image expects. */
	int sig = wp_handshake_signal();
	sigset_t pending;
	sigemptyset(&pending);
	/* the kernel's pending set: the interposed sigpending() leaves ours out */
	if (sig > 0 && syscall(SYS_rt_sigpending, &pending, _NSIG / 8) == 0 &&
	    sigismember(&pending, sig)) {
		struct sigaction ign, dfl;
		memset(&ign, 0, sizeof(ign));
		memset(&dfl, 0, sizeof(dfl));
		ign.sa_handler = SIG_IGN;
		dfl.sa_handler = SIG_DFL;
		wp_real_sigaction(sig, &ign, NULL);
		wp_real_sigaction(sig, &dfl, NULL);
	}
	wp_signals_before_exec();
}

/* The exec failed: this image lives on, and so does its profiling. */
void wp_agent_after_failed_exec(void)
{
	int saved = errno;
	if (atomic_load(&running) || getpid() != owner_pid || !owner_pid) {
		wp_signals_after_failed_exec();
		errno = saved;
		return;
	}
	struct sigaction sa;
	if (wp_real_sigaction(wp_handshake_signal(), NULL, &sa) == 0 && !wp_handshake_is_ours(&sa))
		wp_handshake_init(wp_handshake_signal());
	wp_signals_after_failed_exec();
	start();
	errno = saved;
}
