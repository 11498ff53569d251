/* SPDX-License-Identifier: MIT */
/* A fork child's late start (latestart.h): a one-shot timer whose signal starts the sampler. */
#include "latestart.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "handshake.h"

#define NONE 0
#define ARMED 1
#define STARTING 2
#define STARTED 3
#define HELD 4

static _Atomic int state;
static int timer_id; /* the kernel's timer id (an int), valid while ARMED or STARTING */
static void (*start_fn)(void);
static _Atomic int fired_held; /* the timer's signal came while HELD */

/* Every signal blocked around the start (the raw call: the interposed pthread_sigmask would
 * come back here), so no handler of the program's runs on top of a half-made start. */
static void block_all(uint64_t *old)
{
	uint64_t all = ~0ull;
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, old, sizeof(all));
}

static void restore(const uint64_t *old)
{
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, old, NULL, sizeof(*old));
}

void wp_latestart_now(void)
{
	int armed = ARMED;
	if (!atomic_compare_exchange_strong(&state, &armed, STARTING)) {
		if (armed == HELD)
			atomic_store(&fired_held, 1); /* a fork is copying the process: later */
		return; /* not armed, or another thread's handler is starting it */
	}
	uint64_t old;
	block_all(&old);
	syscall(SYS_timer_delete, timer_id); /* a signal already pending is ignored (no ARMED) */
	start_fn();
	atomic_store(&state, STARTED);
	restore(&old);
}

int wp_latestart_arm(uint64_t delay_ns, void (*start)(void))
{
	struct sigevent ev;
	memset(&ev, 0, sizeof(ev));
	ev.sigev_notify = SIGEV_SIGNAL; /* to whichever thread does not block it */
	ev.sigev_signo = wp_handshake_signal();
	ev.sigev_value.sival_ptr = wp_handshake_timer_value();
	int id;
	if (ev.sigev_signo <= 0 || syscall(SYS_timer_create, CLOCK_MONOTONIC, &ev, &id) != 0)
		return -(errno ? errno : EINVAL);
	timer_id = id;
	start_fn = start;
	wp_handshake_on_timer(wp_latestart_now);
	atomic_store(&state, ARMED);
	struct itimerspec its;
	memset(&its, 0, sizeof(its));
	its.it_value.tv_sec = (time_t)(delay_ns / 1000000000ull);
	its.it_value.tv_nsec = (long)(delay_ns % 1000000000ull);
	if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
		its.it_value.tv_nsec = 1;
	if (syscall(SYS_timer_settime, id, 0, &its, NULL) != 0) {
		int e = errno;
		int armed = ARMED;
		if (atomic_compare_exchange_strong(&state, &armed, NONE))
			syscall(SYS_timer_delete, id);
		return -e;
	}
	return 0;
}

int wp_latestart_armed(void)
{
	return atomic_load(&state) == ARMED;
}

/* Until a start under way on another thread is done (it has every signal blocked, so it is
 * not below us on this thread's stack); bounded. */
static void wait_started(void)
{
	uint64_t deadline = wp_now_ns() + 100 * 1000000ull;
	while (atomic_load(&state) == STARTING && wp_now_ns() < deadline) {
		struct timespec ts = { 0, 20000 };
		syscall(SYS_nanosleep, &ts, NULL); /* not the interposed one (eintr.c) */
	}
}

int wp_latestart_hold(void)
{
	int armed = ARMED;
	if (atomic_compare_exchange_strong(&state, &armed, HELD))
		return 1;
	wait_started();
	return 0;
}

void wp_latestart_release(void)
{
	int held = HELD;
	if (!atomic_compare_exchange_strong(&state, &held, ARMED))
		return;
	if (atomic_exchange(&fired_held, 0))
		wp_latestart_now();
}

int wp_latestart_cancel(void)
{
	int armed = ARMED, held = HELD;
	if (atomic_compare_exchange_strong(&state, &armed, NONE) ||
	    atomic_compare_exchange_strong(&state, &held, NONE)) {
		syscall(SYS_timer_delete, timer_id);
		atomic_store(&fired_held, 0);
		return 0;
	}
	wait_started();
	int s = atomic_exchange(&state, NONE);
	return s == STARTED || s == STARTING;
}

void wp_latestart_forget(void)
{
	atomic_store(&state, NONE);
	atomic_store(&fired_held, 0);
}
