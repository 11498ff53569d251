// SPDX-License-Identifier: MIT
// C++ waits (issue 13, found profiling a std::mutex / std::condition_variable program): the
// waiting function a report names is the program's, not the library code inlined into it
// from the system headers (std::mutex::lock's __gthread_mutex_lock, condition_variable's
// wait template). holder computes in compute_holding() holding big_mutex, 100 ms at a time;
// two lockers wait for it in contend(); two waiters wait on big_cv in cv_wait() until main
// sets ready after SECONDS (argv[1], default 2).
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

std::mutex big_mutex;
std::mutex cv_mutex;
std::condition_variable big_cv;
static bool ready;
// set by main without big_mutex: a mutex is not fair, and main waiting for it behind a
// holder that takes it back at once could wait for many seconds
static std::atomic<bool> done;
static volatile unsigned long sink;

__attribute__((noinline)) void compute_holding()
{
	for (;;) {
		std::lock_guard<std::mutex> g(big_mutex);
		if (done)
			return;
		auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
		while (std::chrono::steady_clock::now() < end)
			sink = sink + 1;
	}
}

__attribute__((noinline)) void contend()
{
	for (;;) {
		std::lock_guard<std::mutex> g(big_mutex);
		if (done)
			return;
		sink = sink + 1;
	}
}

__attribute__((noinline)) void cv_wait()
{
	std::unique_lock<std::mutex> l(cv_mutex);
	big_cv.wait(l, [] { return ready; });
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? std::atof(argv[1]) : 2.0;
	std::vector<std::thread> ts;
	ts.emplace_back(compute_holding);
	std::this_thread::sleep_for(std::chrono::milliseconds(20));
	for (int i = 0; i < 2; i++)
		ts.emplace_back(contend);
	for (int i = 0; i < 2; i++)
		ts.emplace_back(cv_wait);
	std::this_thread::sleep_for(std::chrono::milliseconds((long)(seconds * 1000)));
	{
		std::lock_guard<std::mutex> l(cv_mutex);
		ready = true;
	}
	big_cv.notify_all();
	done = true;
	for (auto &t : ts)
		t.join();
	std::puts("ok");
	return 0;
}
