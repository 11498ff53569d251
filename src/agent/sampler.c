/* SPDX-License-Identifier: MIT */
#include "sampler.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <linux/kcmp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../common/format.h"
#include "clock.h"
#include "fds.h"
#include "forkguard.h"
#include "handshake.h"
#include "peek.h"
#include "perfclock.h"
#include "log.h"
#include "modules.h"
#include "sample.h"
#include "sigmask.h"
#include "signals.h"
#include "stacks.h"
#include "waits.h"
#include "cpuwait.h"
#include "stats.h"
#include "task.h"
#include "threadmask.h"
#include "threads.h"
#include "title.h"
#include "unwind.h"
#include "writer.h"
#include "threadstart.h"

static const struct wp_config *cfg = &wp_config_none;
static pthread_t thread;
static int started;
/* 1: the sampler runs on its own task, outside the program's thread group (task.h); 0: on a
 * thread of the program's (the fallback, and WALLPROF_TEST=thread-sampler). */
static int on_task;
/* On the task: a pidfd of the program (readable once its thread group has ended), and what
 * to run then, the program's exit hooks having had no chance to. */
static int program_fd = -1;
static void (*orphan_fn)(int exec);
static _Atomic uint32_t stop_word;
static _Atomic int sampler_tid;
static uint64_t start_ns, start_unix_ns, interval_ns;
static _Atomic uint64_t cpu_ns_final;
static _Atomic uint32_t done_word; /* 1 once the loop has exited */
static void (*checkpoint_fn)(void);
/* 1 while the sampler thread is in a tick, its set-up or a job: the tables are changing, and
 * wp_sampler_stop_async must not hand the caller a profile to write then. A fork does not
 * wait for it: the child abandons those tables (forkguard.h). */
static _Atomic uint32_t busy_word;
/* How long wp_sampler_stop_async waits, at most, for a tick to end. */
#define BUSY_WAIT_NS (5000 * 1000000ull)
static uint64_t checkpoint_every_ns, checkpoint_next;
static pid_t pid;
/* The signal mask of the program's thread that started us, and the leader's as it called
 * pthread_exit: the mask of the thread that ends the process for the program (end_process). */
static sigset_t starter_mask, leader_mask;
static _Atomic pid_t leader_mask_pid;
static int ending; /* end_process has run */

/* Progress for the CLI: one short line every half second through the command's channel
 * (log.c), with any warning the command has not had yet. Non-blocking: a reader that
 * stopped reading never stalls the sampler. */
static uint64_t progress_next;

static void progress(uint64_t now)
{
	if (wp_log_channel_fd() < 0 || now < progress_next)
		return;
	progress_next = now + 500 * 1000000ull;
	char line[96];
	size_t n = wp_format(line, sizeof(line), "samples=%llu threads=%llu\n",
			     (unsigned long long)wp_stats.samples,
			     (unsigned long long)wp_threads_seen());
	wp_log_channel_write(line, n);
	wp_log_forward();
}

/* stop_word's bits: the loop ends on STOP; JOB wakes it for work handed over (below). */
#define STOP 1u
#define JOB 2u

/* ---- work done on the sampler thread for others ----
 * Profile files are written, and /proc read, only by the agent's own threads, so that every
 * descriptor the agent opens lives in its own table (fds.h): a file opened on a program
 * thread would take the lowest free number in the program's table, where a thread of the
 * program could dup2() over it. One job at a time; callers wait with a deadline. */
static void (*_Atomic job_fn)(void *);
static _Atomic int job_busy; /* the one caller whose job is in the slot */
static void *job_arg;
static _Atomic uint32_t job_done;
static void (*_Atomic last_fn)(void); /* run after the last tick, before the thread ends */
static _Atomic uint32_t last_state;
#define LAST_RUNNING 1u
static void (*first_fn)(void); /* run on the sampler thread before its first tick */
/* 0 until the sampler has its descriptor table; then 2 when private, 1 when shared */
static _Atomic uint32_t private_word;

static void wake_word(_Atomic uint32_t *w)
{
	syscall(SYS_futex, (uint32_t *)w, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1 << 30, NULL, NULL, 0);
}

/* Waits while *w == seen, until `deadline` (CLOCK_MONOTONIC ns). Returns 1 when it changed.
 * Async-signal-safe (atomics and futex only). */
static int wait_word(_Atomic uint32_t *w, uint32_t seen, uint64_t deadline)
{
	while (atomic_load(w) == seen) {
		uint64_t now = wp_now_ns();
		if (now >= deadline)
			return 0;
		uint64_t left = deadline - now;
		struct timespec ts = { (time_t)(left / 1000000000ull), (long)(left % 1000000000ull) };
		syscall(SYS_futex, (uint32_t *)w, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, seen, &ts, NULL, 0);
	}
	return 1;
}

/* A tick, its set-up or a job on the sampler thread. (Before issue 19 this took a lock that
 * fork_prepare took too, so a fork waited for the tick in progress: 15 ms at the median with
 * 8 busy threads at 1000 Hz, against 0.3 ms unprofiled. The fork child now abandons what a
 * tick changes, and a fork waits only for the guard, forkguard.h.) */
static void lock_tick(void)
{
	atomic_store(&busy_word, 1);
}

static void unlock_tick(void)
{
	atomic_store(&busy_word, 0);
}

static void run_job(void)
{
	void (*fn)(void *) = atomic_exchange(&job_fn, NULL);
	if (!fn)
		return;
	fn(job_arg);
	atomic_fetch_add(&job_done, 1);
	wake_word(&job_done);
}

/* Sleeps until `deadline` (CLOCK_MONOTONIC ns), an absolute wait on the stop word, so that a
 * stop request ends it at once; a job handed over meanwhile is done, and the sleep goes on. */
static void sleep_until(uint64_t deadline)
{
	struct timespec ts = { (time_t)(deadline / 1000000000ull), (long)(deadline % 1000000000ull) };
	for (;;) {
		uint32_t w = atomic_load(&stop_word);
		if (w & STOP)
			return;
		if (w & JOB) {
			atomic_fetch_and(&stop_word, ~JOB);
			lock_tick();
			run_job();
			unlock_tick();
			continue;
		}
		if (wp_now_ns() >= deadline)
			return;
		syscall(SYS_futex, (uint32_t *)&stop_word, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, 0,
			&ts, NULL, FUTEX_BITSET_MATCH_ANY);
	}
}

static int on_sampler_thread(void)
{
	return syscall(SYS_gettid) == atomic_load(&sampler_tid);
}

int wp_sampler_call(void (*fn)(void *), void *arg, uint64_t timeout_ns)
{
	if (!started || atomic_load(&done_word) || on_sampler_thread())
		return -ESRCH;
	uint64_t deadline = wp_now_ns() + timeout_ns;
	int free_ = 0;
	while (!atomic_compare_exchange_strong(&job_busy, &free_, 1)) {
		free_ = 0;
		if (wp_now_ns() >= deadline)
			return -EBUSY;
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	uint32_t seen = atomic_load(&job_done);
	job_arg = arg;
	atomic_store(&job_fn, fn);
	atomic_fetch_or(&stop_word, JOB);
	wake_word(&stop_word);
	int done = wait_word(&job_done, seen, deadline);
	/* Not taken in time: withdraw it, unless the sampler took it just now. */
	if (!done && atomic_exchange(&job_fn, NULL) == NULL)
		done = wait_word(&job_done, seen, wp_now_ns() + 30000 * 1000000ull);
	atomic_store(&job_busy, 0);
	return done ? 0 : -ETIMEDOUT;
}

/* ---- the end of the program's threads ----
 * glibc ends the process when the last thread it counts ends: that thread calls exit(0).
 * Ours are counted too, so without this the process would never end. When no program
 * thread is left (threads.h says how that is noticed), the sampler starts one more thread
 * that calls exit(0) in the program's stead: atexit handlers and destructors run (then the
 * agent's exit handler writes the profile, once, and stops the sampler the ordinary way,
 * agent.c) on a thread with the
 * program's default stack and the signal mask its last thread most likely had, not on ours
 * (256 KiB, every signal blocked). */

static char exiter_name[16];

/* The mask of the thread that ends the process: the leader's when it left by pthread_exit
 * (threads it started before inherited it), else that of the thread that started us. Signals
 * pending now stay blocked: they came while every thread alive blocked them, or after the
 * last program thread ended, when the process was already ending with status 0. */
static void exiter_mask(sigset_t *mask)
{
	*mask = atomic_load(&leader_mask_pid) == pid ? leader_mask : starter_mask;
	sigset_t pending;
	if (sigpending(&pending) == 0)
		for (int sig = 1; sig < NSIG; sig++)
			if (sigismember(&pending, sig) == 1)
				sigaddset(mask, sig);
}

/* The thread that calls exit(0) for the program. It must share the program's descriptor
 * table: the sampler runs on one of its own (fds.h), and once the program's last thread has
 * ended, no thread of the program's table would be left to run its exit handlers (stdio's
 * flush to fd 1, say), nor to keep that table, and so the program's files, open meanwhile.
 * So it is started by the leader as it leaves (pthread_exit, or its start routine returning
 * in a fork child: threadmask.c's exit hook), the one moment it can be needed from: no
 * process can lose its last program thread while the leader lives. Not earlier: a second
 * thread on the program's table makes every descriptor call of a single-threaded program
 * slower (the kernel's fdget takes a reference once the table is shared: +50-65 ns a write
 * on the benchmark VM). It sleeps, every signal blocked, until told. Not a program thread:
 * never listed, sampled or counted. */
static pthread_t exit_thread;
static _Atomic pid_t exit_tid;
static _Atomic uint32_t exit_word; /* 1: end the process now */

static void *exit_main(void *arg)
{
	(void)arg;
	atomic_store(&exit_tid, (pid_t)syscall(SYS_gettid));
	prctl(PR_SET_NAME, "wallprof-exit", 0, 0, 0);
	while (!atomic_load(&exit_word)) {
		struct timespec ts = { 10, 0 }; /* every wait has a deadline; this one loops */
		syscall(SYS_futex, (uint32_t *)&exit_word, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, 0, &ts,
			NULL, 0);
	}
	prctl(PR_SET_NAME, exiter_name, 0, 0, 0);
	sigset_t mask;
	exiter_mask(&mask);
	pthread_sigmask(SIG_SETMASK, &mask, NULL);
	exit(0);
}

static _Atomic int exit_thread_asked;

/* On the leader, as it leaves (a program thread: the program's descriptor table). */
void wp_sampler_prepare_exit_thread(void)
{
	if (!started || cfg->test_exit_on_sampler || atomic_exchange(&exit_thread_asked, 1))
		return;
	pthread_attr_t attr;
	if (pthread_attr_init(&attr) != 0)
		return;
	sigset_t all;
	sigfillset(&all);
	pthread_attr_setsigmask_np(&attr, &all); /* never takes a signal of the program's */
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (wp_own_thread_create(&exit_thread, &attr, exit_main, NULL) == 0) {
		for (int i = 0; i < 1000 && !atomic_load(&exit_tid); i++) {
			struct timespec ts = { 0, 100000 };
			nanosleep(&ts, NULL); /* at most 100 ms: its tid must be known before listing */
		}
	}
	pthread_attr_destroy(&attr);
}

pid_t wp_sampler_exit_tid(void)
{
	return atomic_load(&exit_tid);
}

/* No program thread is left (sampler thread, between ticks). */
static void end_process(void)
{
	if (!ending && atomic_load(&exit_tid)) {
		ending = 1;
		ssize_t n = wp_threads_read_proc(pid, "comm", exiter_name, sizeof(exiter_name));
		if (n > 0 && exiter_name[n - 1] == '\n')
			exiter_name[n - 1] = 0;
		atomic_store(&exit_word, 1);
		syscall(SYS_futex, (uint32_t *)&exit_word, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, NULL,
			NULL, 0);
		return; /* sampling goes on (the exit handlers are the program's work) */
	}
	/* No exit thread (the test hook, or it could not be started): end it from here, every
	 * signal blocked. Under the hook the sampler stayed on the program's descriptor table;
	 * otherwise the program's files are closed by now (its last thread took its table with
	 * it), so its exit handlers find no descriptors: the price of a thread that could not be
	 * created. wp_sampler_stop knows not to wait for this thread; no tick is in progress,
	 * so a flush from an exit handler goes ahead. On the task, exit() would run the
	 * program's exit handlers outside it: the thread group ends by itself as its last thread
	 * leaves, and the task writes the profile then (program_gone). */
	if (!on_task)
		exit(0);
}

/* On the task: the program's thread group has ended without our exit hooks (exit_group as
 * a system call, a kill), or its image was replaced by an execve the exec interposers did not
 * see (a system call): the task outlives both. 1: ended, 2: exec'd, 0: neither. Two system
 * calls a tick. */
static int program_ended(void)
{
	struct pollfd p = { program_fd, POLLIN, 0 };
	return program_fd >= 0 && poll(&p, 1, 0) > 0;
}

/* cpu mode, on the task: the program's process CPU clock (read from the task, it leaves the
 * task out), and its reading at the last tick. When it has not moved, no thread of the
 * program has run since: a cpu profile has nothing to take, nor has a thread been born, ended
 * or exec'd (each needs a thread to run). Such a tick (an idle compiler driver waiting for its
 * cc1, a make between jobs) then costs a clock read and the pidfd's poll instead of the thread
 * list's, each thread's clock and the look at the memory: 35 -> 25 us of the task's CPU here
 * (a bare 1 ms sleep loop costs 18 us a wake-up on this VM). */
static clockid_t program_clock;
static int have_program_clock;
static int64_t program_clock_ns = -1;

static int program_idle(void)
{
	struct timespec ts;
	if (!have_program_clock || clock_gettime(program_clock, &ts) != 0)
		return 0;
	int64_t ns = (int64_t)wp_ts_ns(&ts);
	int idle = ns == program_clock_ns;
	program_clock_ns = ns;
	return idle;
}

static int program_gone(void)
{
	if (!on_task)
		return 0;
	if (program_ended())
		return 1;
	long same = syscall(SYS_kcmp, getpid(), pid, KCMP_VM, 0, 0);
	if (same == 0)
		return 0;
	if (same < 0)
		return errno == ESRCH; /* reaped already; EPERM, ENOSYS: cannot tell */
	/* Another memory behind the pid, or none: an exec, or the leader has ended (the whole
	 * process, or the leader alone, by pthread_exit or returning from a fork child's start
	 * routine, its threads going on). Asked of /proc only now; the pidfd last, as a
	 * process ends before it is reaped (and /proc forgets it). */
	int leader_left = wp_threads_leader_left();
	if (program_ended())
		return 1;
	/* A process being killed gives up its memory before its end reaches the pidfd: on a
	 * loaded machine it can be held between the two, and was taken for an exec (test_tree's
	 * killed-late run: the killed `yes` said "exec'd", once in a clean run). Not yet: the
	 * pidfd says it soon. */
	if (leader_left || wp_threads_leader_exiting())
		return 0;
	return 2;
}

/* What the first tick needs, and a process that ends before it never: the profile's header
 * (first_fn: the command line, an earlier image's file) and the thread list (/proc). A
 * process that ends first (a shell's commands, a build's compilers) costs the program no
 * /proc read at all, and the sampler's start nothing the program waits for. */
static int listed;

static void list_first(void)
{
	listed = 1;
	if (first_fn)
		first_fn();
	wp_threads_refresh(wp_now_ns(), start_ns);
}

void wp_sampler_list_late(void)
{
	if (!listed && on_sampler_thread())
		list_first();
}

/* Sleeps until the next tick at `next`, refreshing the thread list between ticks when
 * threads.c asks (the end of the program's threads is noticed soon at any rate). Returns 0
 * at `next`, -1 when asked to stop. Before the first tick there is no list to refresh. */
static int wait_tick(uint64_t next, int *idle)
{
	for (;;) {
		uint64_t look = listed ? wp_threads_next_look() : next;
		sleep_until(look < next ? look : next);
		if (atomic_load(&stop_word) & STOP)
			return -1;
		uint64_t now = wp_now_ns();
		/* the clock before the look at the memory: an exec after this reading moves it */
		*idle = now >= next && program_idle();
		int gone = *idle ? program_ended() : program_gone();
		if (gone)
			return -1 - gone;
		if (now >= next)
			return 0;
		if (!listed)
			continue;
		lock_tick();
		wp_threads_refresh(now, start_ns);
		int left = wp_threads_program_left();
		unlock_tick();
		if (!left && !ending)
			end_process();
	}
}

/* The expensive set-up (the module table with a copy of each module's unwind tables, and
 * libunwind), once per process, and the module watcher, once per start: at the first tick,
 * not at start, so that a process that ends before its first tick (a shell's commands, a
 * build's compilers) never pays for it, and the program's main() is never kept waiting. A
 * fork child makes its own (set_up_done is cleared in it): the parent's may have been half
 * changed when it forked. Inside the guard: dlopen and dl_iterate_phdr take the loader's
 * lock, which a fork child must not inherit held. */
static int set_up_done;

/* A short scheduler slice (EEVDF's custom slice, Linux 6.12+, asked for without privilege;
 * the sampler's share of the CPU is unchanged, only how soon it gets it). With the default
 * slice (1.4 ms here), a sampler woken on the CPU a program thread runs on waits until the
 * kernel next settles that thread's time: a scheduler tick, or a system call that reads its
 * clock. The thread is preempted there and found there: cpu_split, napping, with every
 * process on one CPU, had 56% of its cpu-mode samples in the clock_gettime that ends each
 * call (perf: 1-2%); with a 0.1 ms slice, 3-4%. The sampler now preempts where its timer
 * fires, a moment the program's code does not choose. Older kernels ignore the field. */
struct slice_attr { /* the kernel's struct sched_attr (whose header clashes with sched.h) */
	uint32_t size, policy;
	uint64_t flags;
	int32_t nice;
	uint32_t priority;
	uint64_t runtime, deadline, period; /* runtime: a fair task's slice */
	uint32_t util_min, util_max;
};
_Static_assert(sizeof(struct slice_attr) == 56, "struct sched_attr, SCHED_ATTR_SIZE_VER1");

static void short_slice(void)
{
	if (wp_seccomp_filtered())
		return; /* a filter may kill for a call it does not list (perfclock.h) */
	struct slice_attr a;
	memset(&a, 0, sizeof(a));
	if (syscall(SYS_sched_getattr, 0, &a, sizeof(a), 0) != 0 || a.policy != SCHED_OTHER)
		return;
	a.size = sizeof(a);
	a.flags = 0;
	a.runtime = 100 * 1000;
	(void)syscall(SYS_sched_setattr, 0, &a, 0);
}

static int set_up(void)
{
	wp_signals_finish_setup(); /* the fatal handlers, deferred to the first tick */
	if (!cfg->test_long_slice)
		short_slice(); /* reads /proc: not before the first tick (test_lazy_start) */
	lock_tick();
	wp_guard_enter();
	if (!set_up_done) {
		wp_fds_hide_new_pipes(1);
		int bad = wp_modules_init() != 0 || wp_unwind_init() != 0;
		wp_fds_hide_new_pipes(0);
		if (bad) {
			wp_guard_leave();
			unlock_tick();
			return -1;
		}
		set_up_done = 1;
	}
	wp_modules_watch_start();
	wp_guard_leave();
	unlock_tick();
	return 0;
}

/* One tick's work, under the tick's lock: 0 when the program's threads have all left. */
static int sample_tick(uint64_t now)
{
	/* New or unloaded libraries: the watcher thread waits for the loader lock and builds
	 * the table; the sampler never takes that lock. */
	wp_guard_enter(); /* a fork child keeps the table when no fork came mid-swap */
	wp_modules_adopt();
	wp_guard_leave();
	wp_threads_refresh(now, start_ns);
	int left = wp_threads_program_left();
	wp_sample_tick(now);
	if (cfg->test_slow_tick) {
		struct timespec slow = { 0, 800 * 1000000L };
		nanosleep(&slow, NULL);
	}
	return left;
}

static void *run(void *arg)
{
	sampler_tid = (int)syscall(SYS_gettid);
	wp_peek_set_tid(sampler_tid);
	/* WALLPROF_TEST=exit-on-sampler: no exit thread, the sampler ends the process itself and
	 * so stays on the program's descriptor table for that. */
	int own_table = !cfg->test_no_unshare && !cfg->test_exit_on_sampler;
	/* Before anything is opened: a descriptor table of our own (fds.h), keeping the stderr
	 * the process started with and the command's channel. */
	int keep[2] = { 2, wp_log_channel_fd() };
	atomic_store(&private_word, wp_fds_go_private(keep, 2, own_table) ? 2 : 1);
	wake_word(&private_word);
	wp_cpuclock_outside(on_task);
	if (on_task && program_fd < 0)
		program_fd = (int)syscall(SYS_pidfd_open, pid, 0);
	program_clock_ns = -1; /* a fork child's task: its own process's clock */
	have_program_clock = on_task && cfg->mode == WP_MODE_CPU && !cfg->test_no_idle &&
			     clock_getcpuclockid(pid, &program_clock) == 0;
	prctl(PR_SET_NAME, "wallprof", 0, 0, 0);
	/* Ticks on time, not within the default 50 us of slack: with slack, the kernel fires our
	 * timer together with a program timer expiring nearby, so ticks line up with the
	 * program's own wake-ups, and a thread woken then (a pipe writer that a reader's read
	 * woke) is caught runnable in the middle of its call and signalled. Measured with
	 * `transfers measure` (a writer blocked in 256 KiB pipe writes, a reader that sleeps
	 * 100 us between reads, wall 1000 Hz): signals landing inside a write fell from 816 to
	 * 461 per 4 s (-44%), ticks and samples unchanged (docs/design.md). */
	prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0);
	wp_sigmask_quiet_this_thread(); /* started with every signal blocked */
	wp_sample_seed(wp_now_ns() ^ ((uint64_t)pid << 32));
	wp_threads_init(sampler_tid); /* the leader, whose end program_gone() must know */

	uint64_t next = wp_now_ns();
	int orphaned = 0, set = 0, idle = 0;
	while (!(atomic_load(&stop_word) & STOP)) {
		/* Jitter of up to +-1/8 interval, mean zero: the rate asked is the rate delivered,
		 * and ticks do not phase-lock with periodic work in the program. */
		int64_t j = (int64_t)(wp_sample_rand() % (interval_ns / 4 + 1)) - (int64_t)(interval_ns / 8);
		next += (uint64_t)((int64_t)interval_ns + j);
		int w = wait_tick(next, &idle);
		if (w < -1) {
			orphaned = -1 - w;
			break;
		}
		if (w < 0)
			break;
		if (!listed)
			list_first();
		if (!set && !(set = set_up() == 0)) {
			wp_log("cannot set up unwinding; profiling is off for this run");
			break;
		}
		uint64_t now = wp_now_ns();
		if (now > next + interval_ns) {
			/* Fell behind (machine busy): resume the cadence from now, no burst. */
			wp_stats.ticks_late++;
			next = now;
		}
		lock_tick();
		wp_stats.ticks++;
		int left = 1;
		if (idle)
			wp_stats.ticks_idle++; /* nothing ran: nothing to take (program_idle) */
		else
			left = sample_tick(now);
		progress(now);
		if (checkpoint_fn && checkpoint_every_ns && now >= checkpoint_next) {
			checkpoint_next = now + checkpoint_every_ns;
			checkpoint_fn();
		}
		unlock_tick();
		/* after the tick: no thread is held (and out of the lock a fork waits for) */
		if (!idle)
			wp_title_tick(now, wp_stats.samples);
		if (!left && !ending)
			end_process();
	}
	/* the perf clocks of threads that block the signal: closed, their records since the
	 * last tick counted first (cpu mode) */
	lock_tick();
	wp_sample_end_clocks();
	unlock_tick();
	run_job(); /* one handed over as the stop came */
	struct timespec ts;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0)
		atomic_store(&cpu_ns_final, wp_ts_ns(&ts));
	if (orphaned && orphan_fn)
		orphan_fn(orphaned == 2);
	if (on_task)
		wp_modules_watch_stop(); /* a thread of the task's group: it would outlive the task */
	void (*last)(void) = atomic_exchange(&last_fn, NULL);
	if (last) {
		atomic_store(&last_state, LAST_RUNNING);
		last();
	}
	atomic_store(&done_word, 1);
	wake_word(&done_word);
	return NULL;
}

/* Asks the loop to end, with `last` to run on the sampler thread after its last tick. */
static void request_stop(void (*last)(void))
{
	wp_threads_set_stopping((pid_t)syscall(SYS_gettid));
	atomic_store(&last_state, 0);
	atomic_store(&last_fn, last);
	atomic_fetch_or(&stop_word, STOP);
	wake_word(&stop_word);
}

/* After waiting for the sampler: 1 when it ran `last` (or is running it and finishes within
 * `more_ns`), 0 when it never took it (the caller runs it). Async-signal-safe. */
static int last_done(uint64_t more_ns)
{
	if (atomic_exchange(&last_fn, NULL))
		return 0;
	if (atomic_load(&last_state) == LAST_RUNNING)
		wait_word(&done_word, 0, wp_now_ns() + more_ns);
	return 1;
}

int wp_sampler_in_tick(void)
{
	return atomic_load(&busy_word) && !on_sampler_thread();
}

int wp_sampler_stop_async(uint64_t timeout_ns, void (*last)(void))
{
	if (!started || atomic_load(&done_word) || on_sampler_thread())
		return -1;
	request_stop(last);
	uint64_t t0 = wp_now_ns();
	wait_word(&done_word, 0, t0 + timeout_ns);
	/* Still in a tick (thousands of threads on a loaded machine): it runs `last` as the tick
	 * ends. The caller writing meanwhile would read tables the tick is changing. */
	uint64_t most = t0 + BUSY_WAIT_NS;
	while (!atomic_load(&done_word) && atomic_load(&busy_word) && wp_now_ns() < most)
		wait_word(&done_word, 0, wp_now_ns() + 10 * 1000000ull);
	if (!atomic_load(&done_word) && atomic_load(&busy_word)) {
		/* nor does the sampler, once its tick ends: the process is gone by then */
		atomic_exchange(&last_fn, NULL);
		return -EBUSY;
	}
	return last_done(5000 * 1000000ull) ? 0 : -1;
}

/* atfork prepare: a fork waits for no tick (the child abandons the tables a tick changes,
 * wp_sampler_forget_fork), only until no agent task is inside a call that holds a lock of
 * the loader's or libunwind's (forkguard.h): microseconds. Bounded, because the thread that
 * forks may itself hold the loader lock the watcher is waiting for (fork from a constructor
 * or a dl_iterate_phdr callback); then fork goes ahead, and the child, which never reuses
 * the parent's libunwind state, builds its tables again at its first tick. */
/* Whether this thread's fork_prepare closed the guard (the sampler may stop meanwhile,
 * from another thread: the parent handler must undo exactly what prepare did), and whether
 * no agent task was inside it as the process forked (the child's copy of this thread's
 * value says so: then the module table and libunwind's state, changed only inside the
 * guard, are whole in the child, which keeps them). */
static __thread int fork_closed __attribute__((tls_model("initial-exec")));
static __thread int fork_whole __attribute__((tls_model("initial-exec")));

void wp_sampler_fork_prepare(void)
{
	fork_closed = fork_whole = 0;
	if (!started || syscall(SYS_gettid) == atomic_load(&sampler_tid))
		return;
	fork_closed = 1;
	fork_whole = wp_guard_fork_prepare(200 * 1000000ull);
}

void wp_sampler_fork_parent(void)
{
	if (fork_closed)
		wp_guard_fork_parent();
	fork_closed = fork_whole = 0;
}

void wp_sampler_fork_child(void)
{
	/* The sampler does not exist here; whatever it held is void. */
	fork_closed = 0;
	wp_guard_fork_child();
	wp_modules_fork_child();
}

/* What a new profile forgets: `abandon` in a fork child, whose tables the parent's sampler
 * may have been changing as it forked: they are dropped, never walked or freed (copies of the
 * parent's pages, untouched, they cost the child nothing). The module table and libunwind's
 * address space are kept when the fork found the guard free (`whole`): they change only
 * inside it, and making them again costs the child's first tick milliseconds (a module
 * table copies every module's unwind tables). */
static void forget(int abandon, int whole)
{
	started = 0;
	atomic_store(&stop_word, 0);
	atomic_store(&done_word, 0);
	atomic_store(&sampler_tid, 0);
	wp_peek_set_tid(0); /* a fork child: the parent's sampler is in another process now */
	atomic_store(&cpu_ns_final, 0);
	atomic_store(&job_fn, NULL);
	atomic_store(&job_busy, 0);
	atomic_store(&last_fn, NULL);
	atomic_store(&private_word, 0);
	atomic_store(&busy_word, 0);
	atomic_store(&exit_tid, 0); /* a fork child has no exit thread: its leader starts one */
	atomic_store(&exit_word, 0);
	atomic_store(&exit_thread_asked, 0);
	/* A table the watcher built but the sampler had not adopted: freed for a new profile; a
	 * fork child whose fork found the guard free adopts it (it is whole, and the watcher
	 * would not build it again), one that did not drops it (wp_modules_abandon). */
	if (!abandon)
		wp_modules_forget_pending();
	wp_task_forget(abandon && whole); /* the parent's task is not here */
	wp_cpuclock_forget();
	program_fd = -1; /* the parent task's number */
	memset(&wp_stats, 0, sizeof(wp_stats));
	wp_sample_forget();
	if (abandon && !whole) {
		set_up_done = 0; /* the parent's module table and libunwind state are not trusted */
		wp_modules_abandon();
		wp_unwind_abandon();
	}
	if (abandon)
		wp_writer_abandon();
	wp_stacks_reset(abandon);
	wp_waits_reset(abandon);
	wp_cpuwait_reset(abandon);
	wp_threads_reset(abandon);
	wp_handshake_reset();
}

void wp_sampler_forget(void)
{
	forget(0, 1);
}

void wp_sampler_forget_fork(void)
{
	forget(1, fork_whole);
	fork_whole = 0;
}

static void run_on_task(void *arg)
{
	run(arg);
}

/* The sampler on its own task (task.h); on a thread of the program's when the task cannot be
 * made (an unknown glibc) or a test asks for the thread (its fallbacks are the thread's).
 * Called with every signal blocked: the task and the thread inherit that. */
static int start_task_or_thread(void)
{
	int want_task = !cfg->test_thread_sampler && !cfg->test_no_unshare &&
			!cfg->test_exit_on_sampler;
	on_task = want_task;
	/* A fork child makes its task at once, with one clone on the thread state its parent's
	 * task used (task.c). Not at its first tick of CPU time (tried): a thread's CPU
	 * clock timer is looked at only at a scheduler tick that lands while the thread runs,
	 * and on a busy machine (2 CPUs, 7 threads computing) that came 8-57 ms of CPU late or
	 * not within 60 ms at all (5 children in 10): test_fork_storm's computing children were
	 * left without a profile, 1 in 12, in about half the runs of the whole suite. */
	if (want_task && wp_task_start(run_on_task, NULL) == 0)
		return 0;
	on_task = 0;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 << 10);
	int e = wp_own_thread_create(&thread, &attr, run, NULL);
	pthread_attr_destroy(&attr);
	return e;
}

/* PIDFD_GET_INFO (Linux 6.15): a pidfd tells its process's exit status once it has been
 * reaped, to whoever holds it. Declared here for older headers: the first 64 bytes of
 * struct pidfd_info, all the kernel needs. */
struct pidfd_info_v0 {
	uint64_t mask, cgroupid;
	uint32_t pid, tgid, ppid, ruid, rgid, euid, egid, suid, sgid, fsuid, fsgid;
	int32_t exit_code;
	uint32_t coredump_mask, spare;
};
#define WP_PIDFD_GET_INFO _IOWR(0xFF, 11, struct pidfd_info_v0)
#define WP_PIDFD_INFO_EXIT (1ull << 3)

/* Field 52 of /proc/PID/stat, the exit status while the leader is a zombie; -1 else. */
static int zombie_status(void)
{
	char buf[1024];
	ssize_t n = wp_threads_read_proc(pid, "stat", buf, sizeof(buf));
	char *p = n > 0 ? strrchr(buf, ')') : NULL;
	if (!p)
		return -1;
	int field = 2;
	for (p++; *p && field < 52; p++)
		if (*p == ' ')
			field++;
	return field == 52 && *p >= '0' && *p <= '9' ? atoi(p) : -1;
}

int wp_sampler_program_status(void)
{
	uint64_t give_up = wp_now_ns() + 200 * 1000000ull;
	for (;;) {
		int st = zombie_status();
		if (st >= 0)
			return st;
		struct pidfd_info_v0 info = { .mask = WP_PIDFD_INFO_EXIT };
		if (program_fd >= 0 && ioctl(program_fd, WP_PIDFD_GET_INFO, &info) == 0 &&
		    (info.mask & WP_PIDFD_INFO_EXIT))
			return info.exit_code;
		if (wp_now_ns() >= give_up)
			return -1; /* an older kernel, and reaped already */
		struct timespec ts = { 0, 5 * 1000000L };
		nanosleep(&ts, NULL); /* between its zombie's end and its reaping */
	}
}

int wp_sampler_on_task(void)
{
	return on_task;
}

void wp_sampler_set_orphan(void (*fn)(int exec))
{
	orphan_fn = fn;
}

/* Waits (until `deadline_ns`) for the sampler's task or thread to be gone; 1 when it is. An
 * ended task is reaped here: it is the program's child, and would stay a zombie for as long
 * as the process lives (after an exec too), and be returned to a wait with __WALL. */
static int sampler_gone(uint64_t deadline_ns)
{
	if (on_task) {
		int gone = wp_task_wait_gone(deadline_ns);
		pid_t tid = atomic_load(&sampler_tid);
		if (gone && tid > 0)
			syscall(SYS_wait4, tid, NULL, __WALL | WNOHANG, NULL);
		return gone;
	}
	if (atomic_load(&done_word)) {
		pthread_join(thread, NULL); /* its loop has ended: returns at once */
		return 1;
	}
	struct timespec ts = wp_realtime_in_ms((deadline_ns - wp_now_ns()) / 1000000);
	return pthread_timedjoin_np(thread, NULL, &ts) == 0;
}

void wp_sampler_set_checkpoint(void (*fn)(void), uint64_t every_ns)
{
	checkpoint_fn = fn;
	checkpoint_every_ns = every_ns;
	checkpoint_next = wp_now_ns() + every_ns;
}

int wp_sampler_start(const struct wp_config *c, void (*first)(void))
{
	cfg = c;
	atomic_store(&stop_word, 0);
	atomic_store(&done_word, 0);
	pid = getpid();
	wp_task_note_program(pid);
	wp_title_reset(pid);
	interval_ns = 1000000000ull / (uint64_t)cfg->hz;
	start_ns = wp_now_ns();
	wp_sample_begin(cfg, start_ns, interval_ns);
	struct timespec rt;
	clock_gettime(CLOCK_REALTIME, &rt);
	start_unix_ns = wp_ts_ns(&rt);

	first_fn = first;
	listed = 0;
	atomic_store(&private_word, 0);
	ending = 0;
	/* The sampler must never receive the program's signals (a process-directed SIGINT
	 * landing on our thread would run the program's handler here), so it starts with all
	 * of them blocked. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	starter_mask = old;
	int e = start_task_or_thread();
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e)
		return -e;
	started = 1;
	/* The command's channel moves into the sampler's own table: wait (briefly, bounded)
	 * until it has one, then close the program's copy. */
	if (wp_log_channel_fd() >= 0 && wait_word(&private_word, 0, wp_now_ns() + 1000000000ull))
		wp_log_channel_handover(atomic_load(&private_word) == 2);
	return 0;
}

void wp_sampler_stop(void (*last)(void))
{
	if (!started || atomic_load(&done_word)) {
		if (started)
			sampler_gone(wp_now_ns() + 1000000000ull); /* its loop has ended */
		wp_modules_watch_stop();
		started = 0;
		if (last)
			last();
		return;
	}
	if (on_sampler_thread()) {
		/* Called from the exit the sampler itself started (end_process's fallback): its
		 * loop is not running and never will again; it is on its own table already. */
		struct timespec ts;
		if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0)
			atomic_store(&cpu_ns_final, wp_ts_ns(&ts));
		atomic_fetch_or(&stop_word, STOP);
		wp_modules_watch_stop();
		started = 0;
		if (last)
			last();
		return;
	}
	request_stop(last);
	int joined = sampler_gone(wp_now_ns() + 2000 * 1000000ull);
	int ran = last_done(30000 * 1000000ull);
	if (!joined && !ran)
		wp_log("the sampler did not stop within 2 s; writing what it has");
	wp_modules_watch_stop();
	started = 0;
	if (!ran && last)
		last();
}

void wp_sampler_leader_leaving(void)
{
	pid_t self = getpid();
	if (syscall(SYS_gettid) != self)
		return;
	pthread_sigmask(SIG_BLOCK, NULL, &leader_mask);
	atomic_store(&leader_mask_pid, self);
	wp_sampler_prepare_exit_thread();
	wp_threads_leader_leaving(self);
	/* wake the sampler, which then looks at the leader soon whatever the rate */
	syscall(SYS_futex, (uint32_t *)&stop_word, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, NULL, NULL, 0);
}

uint64_t wp_sampler_cpu_ns(void)
{
	uint64_t v = atomic_load(&cpu_ns_final);
	if (v)
		return v;
	if (on_sampler_thread())
		return wp_self_cpu_ns();
	int tid = atomic_load(&sampler_tid);
	/* the task is not in the program's thread group: its clock is refused from there */
	int64_t c = tid && !on_task ? wp_thread_cpu_ns(tid) : -1;
	return c > 0 ? (uint64_t)c : 0;
}

uint64_t wp_sampler_start_ns(void)
{
	return start_ns;
}

uint64_t wp_sampler_start_unix_ns(void)
{
	return start_unix_ns;
}

