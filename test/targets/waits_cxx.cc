// SPDX-License-Identifier: MIT
// waits_cxx: C++ threads waiting on std::condition_variable for the whole run, so that each
// waiting sample names the condition and its std::mutex (issue 13; test/e2e/test_waits_cxx.py).
//
//   cvwaiter    big_cv.wait(lock on cv_mutex, predicate): libstdc++'s wait, pthread_cond_wait
//   cvforwaiter timed_cv.wait_for(lock on timed_mutex, 1 hour, predicate): the header's
//               steady-clock wait, pthread_cond_clockwait (glibc 2.30 and later)
//
// Usage: waits_cxx [SECONDS] (default 2). WP_TRUTH=FILE receives "tid.NAME N" per thread.
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <pthread.h>
#include <sys/syscall.h>
#include <thread>
#include <unistd.h>

std::mutex cv_mutex;
std::condition_variable big_cv;
std::mutex timed_mutex;
std::condition_variable timed_cv;
static bool go; // under both mutexes

static pid_t tids[2];

static void name_me(int i, const char *name)
{
	tids[i] = (pid_t)syscall(SYS_gettid);
	pthread_setname_np(pthread_self(), name);
}

static void cvwaiter()
{
	name_me(0, "cvwaiter");
	std::unique_lock<std::mutex> lk(cv_mutex);
	big_cv.wait(lk, [] { return go; });
}

static void cvforwaiter()
{
	name_me(1, "cvforwaiter");
	std::unique_lock<std::mutex> lk(timed_mutex);
	while (!timed_cv.wait_for(lk, std::chrono::hours(1), [] { return go; }))
		;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? std::atof(argv[1]) : 2.0;
	std::thread a(cvwaiter), b(cvforwaiter);
	std::this_thread::sleep_for(std::chrono::duration<double>(secs));
	{
		std::lock_guard<std::mutex> l1(cv_mutex);
		std::lock_guard<std::mutex> l2(timed_mutex);
		go = true;
	}
	big_cv.notify_all();
	timed_cv.notify_all();
	a.join();
	b.join();
	if (const char *p = std::getenv("WP_TRUTH")) {
		FILE *f = std::fopen(p, "w");
		if (!f)
			return 3;
		std::fprintf(f, "tid.cvwaiter %d\ntid.cvforwaiter %d\n", (int)tids[0], (int)tids[1]);
		if (std::fclose(f) != 0)
			return 3;
	}
	std::puts("waits_cxx done");
	return 0;
}
