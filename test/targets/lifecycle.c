/* SPDX-License-Identifier: MIT */
/* One program, one promise per mode (argv[1]); each spends its time in a function named for
 * the mode so the test can find it in the profile.
 *   segv      burn, then dereference NULL              (dies of SIGSEGV)
 *   abort     burn, then abort()                       (dies of SIGABRT)
 *   term      burn until killed by SIGTERM from outside
 *   exit3     burn, exit(3)
 *   _exit     burn past a checkpoint, then _exit(0)    (no destructors)
 *   alarm_exit burn until a SIGALRM handler calls _exit(5) (at 1 s)
 *   fork      parent and child both burn; child writes its own profile
 *   exec      burn, then exec itself as "after_exec"
 *   after_exec burn in a different function
 *   sigprof   the program's own SIGPROF timer (setitimer) must keep ticking, every tick counted
 *   blocked   a thread that blocks SIGPROF for its whole life, next to a busy one
 *   vfork     posix_spawn children (vfork-like) while being sampled */
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Each burner has its own constant: identical bodies would be folded into one function by
 * gcc's -fipa-icf, and the profile could not tell them apart. */
#define BURNER(name, k)                                                   \
	__attribute__((noinline, noclone)) static double name(double secs)         \
	{                                                                 \
		double t0 = now(), x = 1;                                 \
		while (now() - t0 < secs)                                 \
			for (int i = 0; i < 10000; i++)                   \
				x = x * 1.0000001 + k;                    \
		__asm__ volatile("" ::: "memory");                        \
		return x;                                                 \
	}
BURNER(burn_before_crash, 0.1)
BURNER(burn_until_killed, 0.2)
BURNER(burn_then_exit, 0.3)
BURNER(burn_in_parent, 0.4)
BURNER(burn_in_child, 0.5)
BURNER(burn_before_exec, 0.6)
BURNER(burn_after_exec, 0.7)
BURNER(burn_with_own_timer, 0.8)
BURNER(burn_busy, 0.9)
BURNER(burn_spawning, 1.1)
BURNER(burn_till_alarm, 1.2)

static void exit_on_alarm(int s)
{
	(void)s;
	_exit(5);
}

/* The process's CPU time (every thread's, user and system): what ITIMER_PROF counts. */
static double process_cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static volatile sig_atomic_t own_ticks;
static void on_prof(int s) { own_ticks++; }

static void *blocker(void *arg)
{
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGPROF);
	pthread_sigmask(SIG_BLOCK, &s, NULL);
	pthread_setname_np(pthread_self(), "blocker");
	struct timespec ts = {0, 50000000};
	for (int i = 0; i < 30; i++)
		nanosleep(&ts, NULL);
	return NULL;
}

int main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "";
	volatile double sink = 0;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(m, "segv")) {
		sink += burn_before_crash(1.0);
		/* a real fault: a store into a page that exists but may not be written */
		volatile int *p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		*p = (int)(sink > 0);
	} else if (!strcmp(m, "abort")) {
		sink += burn_before_crash(1.0);
		abort();
	} else if (!strcmp(m, "term")) {
		printf("ready\n");
		sink += burn_until_killed(60);
	} else if (!strcmp(m, "exit3")) {
		sink += burn_then_exit(1.0);
		exit(3);
	} else if (!strcmp(m, "_exit")) {
		sink += burn_then_exit(argc > 2 ? atof(argv[2]) : 2.5);
		_exit(0);
	} else if (!strcmp(m, "alarm_exit")) {
		signal(SIGALRM, exit_on_alarm);
		struct itimerval it = { { 0, 0 }, { 1, 0 } };
		setitimer(ITIMER_REAL, &it, NULL);
		sink += burn_till_alarm(30);
		return 1; /* not reached */
	} else if (!strcmp(m, "fork")) {
		pid_t c = fork();
		if (c == 0) {
			sink += burn_in_child(1.0);
			exit(0);
		}
		sink += burn_in_parent(1.0);
		int st;
		waitpid(c, &st, 0);
		printf("child %d status %d\n", (int)c, st);
		return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
	} else if (!strcmp(m, "exec")) {
		sink += burn_before_exec(1.0);
		execl("/proc/self/exe", argv[0], "after_exec", (char *)NULL);
		perror("execl");
		return 1;
	} else if (!strcmp(m, "after_exec")) {
		sink += burn_after_exec(1.0);
		printf("after exec\n");
	} else if (!strcmp(m, "sigprof")) {
		struct sigaction sa = { 0 };
		sa.sa_handler = on_prof;
		sa.sa_flags = SA_RESTART;
		sigaction(SIGPROF, &sa, NULL);
		struct itimerval it = { {0, 10000}, {0, 10000} };
		double cpu0 = process_cpu_s();
		setitimer(ITIMER_PROF, &it, NULL);
		sink += burn_with_own_timer(2.0);
		it = (struct itimerval){ 0 };
		setitimer(ITIMER_PROF, &it, NULL);
		/* ~200 ticks on an idle machine, fewer when other work takes the CPU (the timer
		 * counts the process's CPU time): the test holds the ticks to that time */
		printf("own_ticks %d\n", (int)own_ticks);
		printf("own_cpu_ms %.0f\n", (process_cpu_s() - cpu0) * 1e3);
		struct sigaction cur;
		sigaction(SIGPROF, NULL, &cur);
		if (cur.sa_handler != on_prof) {
			printf("handler replaced!\n");
			return 1;
		}
		return own_ticks > 0 ? 0 : 1;
	} else if (!strcmp(m, "blocked")) {
		pthread_t t;
		pthread_create(&t, NULL, blocker, NULL);
		sink += burn_busy(1.5);
		pthread_join(t, NULL);
	} else if (!strcmp(m, "vfork")) {
		double t0 = now();
		int n = 0;
		while (now() - t0 < 1.5) {
			pid_t p;
			char *args[] = { "/bin/true", NULL };
			if (posix_spawn(&p, "/bin/true", NULL, NULL, args, environ) == 0) {
				int st;
				waitpid(p, &st, 0);
				n++;
			}
			sink += burn_spawning(0.005);
		}
		printf("spawned %d\n", n);
	} else {
		fprintf(stderr, "usage: lifecycle MODE\n");
		return 2;
	}
	printf("done %d\n", sink > 0);
	return 0;
}
