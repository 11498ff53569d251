/* SPDX-License-Identifier: MIT */
/* sig_share: a program that takes SIGPROF, the signal wallprof samples with, in the ways a
 * runtime does, and checks it gets exactly what it would get unprofiled (test_sig_share.py).
 *
 *   sig_share raw SECONDS    installs its SIGPROF handler with the rt_sigaction system call
 *                            itself (as Go without libc does), SA_ONSTACK on a sigaltstack,
 *                            then burns CPU under its own ITIMER_PROF: every tick must reach
 *                            its handler, from the timer (SI_KERNEL), on the alternate stack,
 *                            with the interrupted context; prints own_ticks and own_cpu_ms;
 *                            then puts back, the same way, what it read before (as Go does when
 *                            its profiler stops): sigaction() must show SIG_DFL again
 *   sig_share query          sigaction() returns what it installed (handler, flags, mask); a
 *                            sigqueue() value of its own reaches its handler unchanged;
 *                            SIG_IGN ignores kill(SIGPROF); SA_RESETHAND runs once
 *   sig_share dfl SECONDS    never touches SIGPROF, burns, then kill(getpid(), SIGPROF): dies
 *                            of it, as SIG_DFL says
 * Exit 0 when everything held (dfl: death by SIGPROF), else a message and 1. */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/time.h>
#include <sys/resource.h>
#include <ucontext.h>

#include "common.h"

static volatile uint64_t sink;
static atomic_int ticks, bad_code, off_stack, no_pc, values, bad_value;
static char altstack[64 * 1024];

KEEP static uint64_t burn_shared(double seconds)
{
	uint64_t x = 1, end = mono_ns() + (uint64_t)(seconds * 1e9);
	while (mono_ns() < end)
		for (int i = 0; i < 20000; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
	return x;
}

static double process_cpu_ms(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

static void on_tick(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	char here;
	(void)sig;
	if (si->si_code == SI_QUEUE) { /* query mode's own sigqueue */
		values++;
		if (si->si_value.sival_int != 1234 || si->si_pid != getpid())
			bad_value++;
		return;
	}
	ticks++;
	if (si->si_code != SI_KERNEL)
		bad_code++;
	if (&here < altstack || &here >= altstack + sizeof(altstack))
		off_stack++;
	if (!uc->uc_mcontext.gregs[REG_RIP])
		no_pc++;
}

/* The kernel's struct sigaction (x86-64). */
struct ksigaction {
	void *handler;
	unsigned long flags;
	void *restorer;
	uint64_t mask;
};

static int raw_mode(double seconds)
{
	stack_t ss = { .ss_sp = altstack, .ss_size = sizeof(altstack) };
	sigaltstack(&ss, NULL);
	/* glibc's signal return trampoline, which the kernel needs (SA_RESTORER): from a
	 * handler installed through libc on another signal */
	struct sigaction tmp;
	memset(&tmp, 0, sizeof(tmp));
	tmp.sa_handler = SIG_IGN;
	sigaction(SIGWINCH, &tmp, NULL);
	struct ksigaction k, got;
	syscall(SYS_rt_sigaction, SIGWINCH, NULL, &k, 8);
	/* what it replaces, as a runtime reads it to put it back later (Go's fwdSig) */
	struct ksigaction before;
	syscall(SYS_rt_sigaction, SIGPROF, NULL, &before, 8);
	k.handler = (void *)on_tick;
	k.flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART | 0x04000000 /* SA_RESTORER */;
	k.mask = 0;
	if (!k.restorer || syscall(SYS_rt_sigaction, SIGPROF, &k, NULL, 8) != 0) {
		printf("raw rt_sigaction failed: %s\n", strerror(errno));
		return 1;
	}
	struct itimerval it = { { 0, 10000 }, { 0, 10000 } };
	double cpu0 = process_cpu_ms();
	setitimer(ITIMER_PROF, &it, NULL);
	sink += burn_shared(seconds);
	it = (struct itimerval){ 0 };
	setitimer(ITIMER_PROF, &it, NULL);
	double cpu = process_cpu_ms() - cpu0;
	printf("own_ticks %d\nown_cpu_ms %.0f\n", ticks, cpu);
	printf("bad_code %d off_stack %d no_pc %d\n", bad_code, off_stack, no_pc);
	/* signals that were not its timer's (wallprof's requests, in the moment between the
	 * raw install and the sampler putting its handler back on top) */
	printf("foreign %d\n", values);
	/* Asked with sigaction() now, it is still the handler it installed */
	struct sigaction cur;
	sigaction(SIGPROF, NULL, &cur);
	syscall(SYS_rt_sigaction, SIGPROF, NULL, &got, 8);
	if (cur.sa_sigaction != on_tick || !(cur.sa_flags & SA_ONSTACK)) {
		printf("sigaction shows another handler\n");
		return 1;
	}
	/* Put back what it read before, with its own flags and mask, as Go does when its
	 * profiler stops: SIG_DFL again for sigaction(), as unprofiled */
	before.flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART | 0x04000000;
	before.restorer = k.restorer;
	before.mask = ~0ull;
	syscall(SYS_rt_sigaction, SIGPROF, &before, NULL, 8);
	sink += burn_shared(0.3);
	sigaction(SIGPROF, NULL, &cur);
	if (cur.sa_handler != SIG_DFL) {
		printf("after putting back what it read, sigaction shows %p, not SIG_DFL\n",
		       (void *)cur.sa_handler);
		return 1;
	}
	return ticks > 0 && !bad_code && !off_stack && !no_pc ? 0 : 1;
}

static int resethand_runs;
static void once(int sig)
{
	(void)sig;
	resethand_runs++;
}

static int query_mode(void)
{
	int bad = 0;
	struct sigaction sa, cur;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_tick;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGUSR1);
	if (sigaction(SIGPROF, &sa, NULL) != 0)
		return printf("sigaction failed\n"), 1;
	sigaction(SIGPROF, NULL, &cur);
	if (cur.sa_sigaction != on_tick || !(cur.sa_flags & SA_SIGINFO) ||
	    !(cur.sa_flags & SA_RESTART) || sigismember(&cur.sa_mask, SIGUSR1) != 1 ||
	    sigismember(&cur.sa_mask, SIGUSR2) != 0) {
		printf("sigaction returns another disposition (flags %#x)\n", cur.sa_flags);
		bad = 1;
	}
	/* its own sigqueue, value and sender intact */
	for (int i = 0; i < 50; i++) {
		union sigval v = { .sival_int = 1234 };
		sigqueue(getpid(), SIGPROF, v);
		sink += burn_shared(0.01);
	}
	if (values != 50 || bad_value) {
		printf("sigqueue: %d of 50 values reached the handler, %d wrong\n", values,
		       bad_value);
		bad = 1;
	}
	/* SIG_IGN: the old handler comes back from signal(), and kill does nothing */
	if ((void *)signal(SIGPROF, SIG_IGN) != (void *)on_tick) {
		printf("signal() did not return the handler\n");
		bad = 1;
	}
	for (int i = 0; i < 50; i++) {
		kill(getpid(), SIGPROF);
		sink += burn_shared(0.005);
	}
	/* SA_RESETHAND: once, then SIG_DFL (asked, not delivered: it would kill) */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = once;
	sa.sa_flags = SA_RESETHAND;
	sigaction(SIGPROF, &sa, NULL);
	raise(SIGPROF);
	sink += burn_shared(0.05);
	sigaction(SIGPROF, NULL, &cur);
	if (resethand_runs != 1 || cur.sa_handler != SIG_DFL) {
		printf("SA_RESETHAND: ran %d times, then %s\n", resethand_runs,
		       cur.sa_handler == SIG_DFL ? "SIG_DFL" : "not SIG_DFL");
		bad = 1;
	}
	sink += burn_shared(0.5);
	printf(bad ? "query: wrong\n" : "query: ok\n");
	return bad;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	const char *mode = argc > 1 ? argv[1] : "";
	double seconds = argc > 2 ? atof(argv[2]) : 1.0;
	if (!strcmp(mode, "raw"))
		return raw_mode(seconds);
	if (!strcmp(mode, "query"))
		return query_mode();
	if (!strcmp(mode, "dfl")) {
		sink += burn_shared(seconds);
		printf("dfl: sending SIGPROF\n");
		kill(getpid(), SIGPROF);
		sink += burn_shared(1.0);
		printf("dfl: survived SIGPROF\n");
		return 1;
	}
	fprintf(stderr, "usage: sig_share raw|query|dfl [SECONDS]\n");
	return 2;
}
