/* SPDX-License-Identifier: MIT */
/* A fork child's first tick starts its sampler (firsttick.h). The kernel's timer calls are
 * made directly (glibc's timer_create makes a thread for SIGEV_THREAD, and keeps its own
 * ids): all of this is async-signal-safe. */
#include "firsttick.h"

#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "task.h"

static int timer_id;           /* the kernel's id */
/* the process whose timer it is while a start is deferred */
_Atomic pid_t wp_firsttick_armed_in;
#define armed_in wp_firsttick_armed_in
static const char tag;          /* its address is the value the timer's signal carries */

int wp_firsttick_arm(void (*fn)(void *), void *arg, uint64_t after_ns, int signo)
{
	if (wp_task_defer(fn, arg) != 0)
		return -1;
	struct sigevent ev;
	memset(&ev, 0, sizeof(ev));
	ev.sigev_notify = SIGEV_THREAD_ID;
	ev.sigev_signo = signo;
	ev.sigev_value.sival_ptr = (void *)&tag;
	ev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
	struct itimerspec when;
	memset(&when, 0, sizeof(when));
	when.it_value.tv_sec = (time_t)(after_ns / 1000000000ull);
	when.it_value.tv_nsec = (long)(after_ns % 1000000000ull);
	int id;
	if (syscall(SYS_timer_create, CLOCK_THREAD_CPUTIME_ID, &ev, &id) != 0) {
		wp_task_launch(); /* deferred already: made now, as without the timer */
		return 0;
	}
	timer_id = id;
	atomic_store(&armed_in, getpid());
	if (syscall(SYS_timer_settime, id, 0, &when, NULL) != 0)
		wp_firsttick_now();
	return 0;
}

int wp_firsttick_is_ours(const siginfo_t *info)
{
	return info && info->si_code == SI_TIMER && info->si_value.sival_ptr == (void *)&tag;
}

/* The timer is gone once nothing is deferred: 1 when this call took it down. */
static int disarm(void)
{
	pid_t me = (pid_t)syscall(SYS_getpid);
	pid_t was = me;
	if (!atomic_compare_exchange_strong(&armed_in, &was, 0))
		return 0;
	syscall(SYS_timer_delete, timer_id);
	return 1;
}

void wp_firsttick_now(void)
{
	if (atomic_load(&armed_in) && disarm())
		wp_task_launch();
}

int wp_firsttick_cancel(void)
{
	if (!atomic_load(&armed_in) || !disarm())
		return 0;
	return wp_task_cancel();
}

void wp_firsttick_fork_child(void)
{
	atomic_store(&armed_in, 0);
}
