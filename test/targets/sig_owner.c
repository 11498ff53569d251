/* SPDX-License-Identifier: MIT */
/* A program that owns every signal: it blocks them all in every thread and reads them itself,
 * as daemons using signalfd or a sigwait thread do. It sends itself SIGUSR1 now and then and
 * fails on any signal it did not send: under wallprof it must never see the sampling signal.
 *
 *   sig_owner MODE [SECONDS]
 *     signalfd  main blocks everything, then reads a signalfd (busy and sleeping threads run)
 *     sigwait   the same, read by a sigwait() thread
 *     toggle    threads block and unblock SIGPROF (or everything) rapidly while busy; after
 *               each block, the kernel's pending set (raw rt_sigpending, which no interposer
 *               sees) must hold no signal: none may have been sent to a thread that blocks it
 *     waitprof  SIGPROF is the program's: blocked, driven by its own ITIMER_PROF and read with
 *               sigwaitinfo while the thread works in between; every one must be the timer's
 *     vfork     what gdb does to start a program: it handles SIGPROF itself (the agent moves
 *               to another signal), then vforks children that put every signal back to its
 *               default and exec; a fork child runs a while first. Busy threads run all along.
 *
 * Exit status: 0 clean, 3 an unexpected signal arrived, 4 one was pending in a blocking
 * thread, 5 one of its own SIGUSR1s never arrived, 6 a child failed (or the program died of
 * a signal). Thread names: "busy", "sleeper",
 * "toggler", "waiter". */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/time.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

static _Atomic int stop;
static _Atomic int failures;
static _Atomic unsigned long pending_seen;
static _Atomic unsigned long received_usr1;
static volatile unsigned long sink;

static void complain(int sig, int code, int pid)
{
	fprintf(stderr, "sig_owner: unexpected signal %d (code %d, from pid %d)\n", sig, code, pid);
	atomic_store(&failures, 3);
}

KEEP static void spin_busy(void)
{
	for (int i = 0; i < 20000; i++)
		sink += (unsigned long)i * 7;
	BARRIER();
}

/* About a millisecond on the CPU. */
KEEP static void work_a_while(void)
{
	uint64_t until = mono_ns() + 1000000;
	while (mono_ns() < until)
		spin_busy();
	BARRIER();
}

static void *busy(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "busy");
	while (!atomic_load(&stop))
		spin_busy();
	return NULL;
}

KEEP static void nap(void)
{
	struct timespec ts = { 0, 5 * 1000000 };
	nanosleep(&ts, NULL);
	BARRIER();
}

static void *sleeper(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "sleeper");
	while (!atomic_load(&stop))
		nap();
	return NULL;
}

/* The kernel's view of this thread's pending signals (thread's and process's), not what an
 * interposed sigpending() would say. */
static int raw_pending(sigset_t *set)
{
	sigemptyset(set);
	return (int)syscall(SYS_rt_sigpending, set, 8);
}

static int any_member(const sigset_t *s)
{
	for (int i = 1; i < 65; i++)
		if (sigismember(s, i) == 1)
			return i;
	return 0;
}

KEEP static void toggle_work(int all)
{
	sigset_t block, old, pend;
	sigemptyset(&block);
	if (all)
		sigfillset(&block);
	else
		sigaddset(&block, SIGPROF);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	spin_busy();
	if (raw_pending(&pend) == 0) {
		int s = any_member(&pend);
		if (s) {
			atomic_fetch_add(&pending_seen, 1);
			if (atomic_load(&pending_seen) < 5)
				fprintf(stderr, "sig_owner: signal %d pending in a thread that blocks it\n",
					s);
		}
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	spin_busy();
	BARRIER();
}

static void *toggler(void *arg)
{
	int all = (int)(intptr_t)arg;
	pthread_setname_np(pthread_self(), "toggler");
	while (!atomic_load(&stop))
		toggle_work(all);
	return NULL;
}

/* The program's own signal: one SIGUSR1 at a time, each awaited before the next (standard
 * signals do not queue), so every one must arrive. */
static _Atomic unsigned long sent_usr1;

/* at most one every 10 ms */
static void send_own(void)
{
	static uint64_t last;
	uint64_t now = mono_ns();
	if (now - last < 10 * 1000000)
		return;
	if (atomic_load(&received_usr1) == atomic_load(&sent_usr1)) {
		last = now;
		atomic_fetch_add(&sent_usr1, 1);
		kill(getpid(), SIGUSR1);
	}
}

static void got(int sig, int code, int pid)
{
	if (sig == SIGUSR1 && pid == getpid() && code == SI_USER)
		atomic_fetch_add(&received_usr1, 1);
	else
		complain(sig, code, pid);
}

static void read_signalfd(double seconds)
{
	sigset_t all;
	sigfillset(&all);
	int fd = signalfd(-1, &all, SFD_CLOEXEC);
	if (fd < 0) {
		perror("signalfd");
		exit(2);
	}
	uint64_t end = mono_ns() + (uint64_t)(seconds * 1e9);
	while (mono_ns() < end) {
		/* busy half the time (a signal sent to this thread then would stay pending and
		 * show up here), waiting in the kernel the other half */
		work_a_while();
		send_own();
		struct pollfd p = { fd, POLLIN, 0 };
		if (poll(&p, 1, 2) <= 0)
			continue;
		struct signalfd_siginfo si;
		if (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si))
			got((int)si.ssi_signo, si.ssi_code, (int)si.ssi_pid);
	}
	close(fd);
}

static void *waiter(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "waiter");
	sigset_t all;
	sigfillset(&all);
	for (;;) {
		int sig = 0;
		if (sigwait(&all, &sig) != 0)
			continue;
		if (sig == SIGTERM && atomic_load(&stop))
			return NULL; /* our own "stop" */
		/* sigwait gives no siginfo: only SIGUSR1 is ours */
		if (sig == SIGUSR1)
			atomic_fetch_add(&received_usr1, 1);
		else
			complain(sig, 0, 0);
		work_a_while();
	}
}

static _Atomic unsigned long own_prof;

static void on_prof(int sig)
{
	(void)sig;
	atomic_fetch_add(&own_prof, 1);
}

/* A child about to exec, as gdb's: every disposition back to the default, mask emptied. */
static void restore_signals(void)
{
	struct sigaction dfl;
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	for (int s = 1; s < 65; s++)
		if (s != SIGKILL && s != SIGSTOP && (s < 32 || s > 33))
			sigaction(s, &dfl, NULL);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

static int run_children(double seconds)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_prof;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGPROF, &sa, NULL);
	pthread_t th[2];
	pthread_create(&th[0], NULL, busy, NULL);
	pthread_create(&th[1], NULL, busy, NULL);
	uint64_t end = mono_ns() + (uint64_t)(seconds * 1e9);
	int bad = 0, n = 0;
	while (mono_ns() < end && !bad) {
		pid_t c = n % 4 == 3 ? fork() : vfork();
		if (c == 0) {
			if (n % 4 == 3) {
				/* a fork child: samples itself a while, on the parent's signal */
				uint64_t until = mono_ns() + 300 * 1000000ull;
				while (mono_ns() < until)
					spin_busy();
			}
			restore_signals();
			execl("/bin/true", "true", (char *)NULL);
			_exit(127);
		}
		int st = 0;
		if (c < 0 || waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "sig_owner: child %d ended with status %#x\n", n, st);
			bad = 1;
		}
		n++;
		nap();
	}
	atomic_store(&stop, 1);
	pthread_join(th[0], NULL);
	pthread_join(th[1], NULL);
	printf("children %d\n", n);
	return bad ? 6 : 0;
}

static int wait_for_prof(double seconds)
{
	sigset_t prof;
	sigemptyset(&prof);
	sigaddset(&prof, SIGPROF);
	pthread_sigmask(SIG_BLOCK, &prof, NULL);
	struct itimerval it = { { 0, 10000 }, { 0, 10000 } };
	setitimer(ITIMER_PROF, &it, NULL);
	unsigned long ticks = 0;
	uint64_t end = mono_ns() + (uint64_t)(seconds * 1e9);
	while (mono_ns() < end) {
		work_a_while(); /* on a CPU: where a sampler would signal it */
		siginfo_t si;
		struct timespec tmo = { 0, 0 };
		if (sigtimedwait(&prof, &si, &tmo) != SIGPROF)
			continue;
		if (si.si_code == SI_KERNEL)
			ticks++; /* the timer's */
		else
			complain(si.si_signo, si.si_code, si.si_pid);
	}
	it = (struct itimerval){ 0 };
	setitimer(ITIMER_PROF, &it, NULL);
	printf("own_ticks %lu\n", ticks);
	if (atomic_load(&failures))
		return atomic_load(&failures);
	return ticks ? 0 : 5;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "signalfd";
	double seconds = argc > 2 ? atof(argv[2]) : 2.0;
	if (!strcmp(mode, "vfork"))
		return run_children(seconds);
	if (!strcmp(mode, "waitprof"))
		return wait_for_prof(seconds);
	int toggle = !strcmp(mode, "toggle");
	if (!toggle) {
		sigset_t all;
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, NULL);
	}
	pthread_t th[8];
	int n = 0;
	if (toggle) {
		pthread_create(&th[n++], NULL, toggler, (void *)0);
		pthread_create(&th[n++], NULL, toggler, (void *)1);
		pthread_create(&th[n++], NULL, sleeper, NULL);
	} else {
		pthread_create(&th[n++], NULL, busy, NULL);
		pthread_create(&th[n++], NULL, sleeper, NULL);
		pthread_create(&th[n++], NULL, sleeper, NULL);
	}
	pthread_t w;
	int have_waiter = !strcmp(mode, "sigwait");
	if (have_waiter)
		pthread_create(&w, NULL, waiter, NULL);

	if (!strcmp(mode, "signalfd")) {
		read_signalfd(seconds);
	} else {
		uint64_t end = mono_ns() + (uint64_t)(seconds * 1e9);
		while (mono_ns() < end) {
			if (have_waiter)
				send_own();
			nap();
		}
	}
	atomic_store(&stop, 1);
	if (have_waiter) {
		/* let the last SIGUSR1 arrive, then wake the waiter */
		for (int i = 0; i < 200 && atomic_load(&received_usr1) != atomic_load(&sent_usr1); i++)
			nap();
		pthread_kill(w, SIGTERM);
		pthread_join(w, NULL);
	}
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	printf("sent %lu received %lu pending_seen %lu\n", atomic_load(&sent_usr1),
	       atomic_load(&received_usr1), atomic_load(&pending_seen));
	if (atomic_load(&failures))
		return atomic_load(&failures);
	if (atomic_load(&pending_seen))
		return 4;
	if (!toggle && (atomic_load(&sent_usr1) == 0 ||
			atomic_load(&received_usr1) + 1 < atomic_load(&sent_usr1)))
		return 5;
	return 0;
}
