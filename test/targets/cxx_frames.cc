// SPDX-License-Identifier: MIT
// cxx_frames: C++ frames that carry exception-handling data, which the profiler must unwind
// through like any other frame. About a third of the time each in spin(), called from:
//   main -> with_dtor  -> spin   (a local object with a destructor: a cleanup landing pad)
//   main -> with_catch -> spin   (a try/catch)
//   main -> plain      -> spin_nothrow (a noexcept callee, no landing pad: no personality)
// The first two have a CIE with a personality routine and an LSDA ("zPLR"), the last one not.
// Usage: cxx_frames [SECONDS] (default 1.5).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>

static volatile std::uint64_t sink;

static std::uint64_t now_ns()
{
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return std::uint64_t(ts.tv_sec) * 1000000000u + std::uint64_t(ts.tv_nsec);
}

struct Guard {
	~Guard() { sink = sink + 1; }
};

__attribute__((noinline)) void spin();
__attribute__((noinline)) void spin()
{
	for (int i = 0; i < 300000; i++)
		sink = sink + 1;
	if (sink == 7) // never: but the compiler cannot know, so callers need their EH data
		throw 1;
}

__attribute__((noinline)) void with_dtor();
__attribute__((noinline)) void with_dtor()
{
	Guard g;
	spin();
	asm volatile("" ::: "memory");
}

__attribute__((noinline)) void with_catch();
__attribute__((noinline)) void with_catch()
{
	try {
		spin();
	} catch (int) {
		sink = sink + 2;
	}
	asm volatile("" ::: "memory");
}

__attribute__((noinline)) void spin_nothrow() noexcept;
__attribute__((noinline)) void spin_nothrow() noexcept
{
	for (int i = 0; i < 300000; i++)
		sink = sink + 1;
}

__attribute__((noinline)) void plain();
__attribute__((noinline)) void plain()
{
	spin_nothrow();
	asm volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? std::atof(argv[1]) : 1.5;
	if (seconds <= 0)
		seconds = 1.5;
	std::uint64_t end = now_ns() + std::uint64_t(seconds * 1e9);
	while (now_ns() < end) {
		with_dtor();
		with_catch();
		plain();
	}
	std::printf("cxx_frames: done\n");
	return 0;
}
