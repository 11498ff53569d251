/* SPDX-License-Identifier: MIT */
/* sigmask.c: on the thread that asked for it (the sampler), calls that cannot change its
 * all-blocked mask are answered without the system call and report the real mask; anything
 * else, and every call on any other thread, behaves exactly as libc's sigprocmask. */
#include <pthread.h>
#include <signal.h>
#include <string.h>

#include "../../src/agent/sigmask.h"
#include "check.h"

static volatile sig_atomic_t got_usr1;

static void on_usr1(int sig)
{
	(void)sig;
	got_usr1 = 1;
}

static sigset_t current(void)
{
	sigset_t s;
	pthread_sigmask(SIG_BLOCK, NULL, &s);
	return s;
}

static int same(const sigset_t *a, const sigset_t *b)
{
	for (int sig = 1; sig < NSIG; sig++)
		if (sigismember(a, sig) != sigismember(b, sig))
			return 0;
	return 1;
}

/* A program thread: blocking, pending, the old mask and unblocking work as libc's. */
static void test_program_thread(void)
{
	unsigned long long skipped0 = wp_sigmask_skipped();
	got_usr1 = 0;
	signal(SIGUSR1, on_usr1);
	sigset_t usr1, old, pending;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	CHECK(sigprocmask(SIG_BLOCK, &usr1, &old) == 0, "SIG_BLOCK works");
	CHECK(sigismember(&old, SIGUSR1) == 0, "the old mask did not block SIGUSR1");
	raise(SIGUSR1);
	CHECK(!got_usr1, "a blocked signal is not delivered");
	sigpending(&pending);
	CHECK(sigismember(&pending, SIGUSR1) == 1, "it is pending");
	sigset_t cur;
	CHECK(sigprocmask(SIG_SETMASK, NULL, &cur) == 0 && sigismember(&cur, SIGUSR1) == 1,
	      "a query reports it blocked");
	CHECK(sigprocmask(SIG_UNBLOCK, &usr1, NULL) == 0 && got_usr1, "unblocking delivers it");
	CHECK(sigprocmask(99, &usr1, NULL) == -1, "a bad `how` still fails");
	CHECK(wp_sigmask_skipped() == skipped0, "no call was answered without libc");
}

static void *sampler_like(void *arg)
{
	(void)arg;
	wp_sigmask_quiet_this_thread();
	sigset_t full, real = current(), old;
	sigfillset(&full);
	unsigned long long s0 = wp_sigmask_skipped();
	/* what libunwind does around each cache access */
	CHECK(sigprocmask(SIG_SETMASK, &full, &old) == 0, "SIG_SETMASK full: ok");
	CHECK(same(&old, &real), "the old mask reported is the thread's real mask");
	CHECK(sigprocmask(SIG_SETMASK, &old, NULL) == 0, "restoring it: ok");
	CHECK(sigprocmask(SIG_BLOCK, &full, NULL) == 0, "SIG_BLOCK: ok");
	CHECK(wp_sigmask_skipped() == s0 + 3, "those three were answered without the system call");
	CHECK(sigismember(&real, SIGUSR2) == 1 && sigismember(&real, SIGTERM) == 1,
	      "the thread now blocks every signal");
	/* a call that would change the mask goes to libc, and so does everything after it */
	sigset_t usr2;
	sigemptyset(&usr2);
	sigaddset(&usr2, SIGUSR2);
	CHECK(sigprocmask(SIG_UNBLOCK, &usr2, NULL) == 0, "SIG_UNBLOCK: ok");
	sigset_t now = current();
	CHECK(sigismember(&now, SIGUSR2) == 0, "SIG_UNBLOCK really unblocked");
	CHECK(sigprocmask(SIG_SETMASK, &full, &old) == 0 && sigismember(&old, SIGUSR2) == 0,
	      "after a change, the old mask is the real one again");
	now = current();
	CHECK(sigismember(&now, SIGUSR2) == 1, "and SIG_SETMASK full really blocked it again");
	CHECK(wp_sigmask_skipped() == s0 + 3, "no call after the change was answered by us");
	return NULL;
}

int main(void)
{
	test_program_thread();
	pthread_t th;
	pthread_create(&th, NULL, sampler_like, NULL);
	pthread_join(th, NULL);
	test_program_thread(); /* the main thread is untouched by the other thread's setting */
	printf("sigmask: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
