/* SPDX-License-Identifier: MIT */
#include "forkguard.h"

#include <linux/futex.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"

/* Agent tasks inside the guard, and forks waiting or under way. Each side raises its own
 * count, then reads the other's (both sequentially consistent): at least one of them sees
 * the other, so a fork never proceeds while a task is inside, and a task that finds a fork
 * waiting steps back out. */
static _Atomic uint32_t inside;
static _Atomic uint32_t forking;
/* Sleepers on either word: a wake-up is a system call, made only when someone sleeps. */
static _Atomic uint32_t sleepers;

static void wake(_Atomic uint32_t *w)
{
	if (atomic_load(&sleepers))
		syscall(SYS_futex, (uint32_t *)w, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1 << 30, NULL,
			NULL, 0);
}

/* Sleeps while *w == seen, at most until `deadline` (CLOCK_MONOTONIC ns) and 10 ms at a time
 * (a wake-up lost between the check and the sleep costs 10 ms, never a hang). */
static void sleep_on(_Atomic uint32_t *w, uint32_t seen, uint64_t deadline)
{
	uint64_t now = wp_now_ns();
	if (now >= deadline)
		return;
	uint64_t left = deadline - now;
	if (left > 10000000ull)
		left = 10000000ull;
	struct timespec ts = { 0, (long)left };
	atomic_fetch_add(&sleepers, 1);
	if (atomic_load(w) == seen)
		syscall(SYS_futex, (uint32_t *)w, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, seen, &ts, NULL, 0);
	atomic_fetch_sub(&sleepers, 1);
}

void wp_guard_enter(void)
{
	uint64_t give_up = 0;
	for (;;) {
		uint32_t f = atomic_load(&forking);
		if (f == 0 || (give_up && wp_now_ns() >= give_up)) {
			atomic_fetch_add(&inside, 1);
			if (atomic_load(&forking) == 0 || (give_up && wp_now_ns() >= give_up))
				return;
			wp_guard_leave(); /* a fork came meanwhile: it goes first */
			continue;
		}
		if (!give_up)
			give_up = wp_now_ns() + 1000 * 1000000ull;
		sleep_on(&forking, f, give_up);
	}
}

void wp_guard_leave(void)
{
	if (atomic_fetch_sub(&inside, 1) == 1 && atomic_load(&forking))
		wake(&inside);
}

int wp_guard_fork_prepare(uint64_t timeout_ns)
{
	atomic_fetch_add(&forking, 1);
	uint64_t deadline = wp_now_ns() + timeout_ns;
	uint32_t n;
	while ((n = atomic_load(&inside)) != 0) {
		if (wp_now_ns() >= deadline)
			return 0;
		sleep_on(&inside, n, deadline);
	}
	return 1;
}

void wp_guard_fork_parent(void)
{
	if (atomic_fetch_sub(&forking, 1) == 1)
		wake(&forking);
}

void wp_guard_fork_child(void)
{
	atomic_store(&inside, 0);
	atomic_store(&forking, 0);
	atomic_store(&sleepers, 0);
}
