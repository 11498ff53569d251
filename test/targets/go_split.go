// SPDX-License-Identifier: MIT
// go_split: a cgo Go program (dynamically linked, so the agent loads) that burns CPU in two
// known Go functions in known proportions and measures its own truth: the CPU time each
// spent (per-thread CPU clock around each burst, the goroutine locked to its thread). It
// also runs Go's own runtime/pprof CPU profile (SIGPROF from per-thread timers) into the
// file given, so a test can check the runtime's profiler keeps its samples under wallprof.
//
// usage: go_split SECONDS PPROF_OUT
// prints: go_split truth goBurnHeavy=<ms> goBurnLight=<ms> (CPU time in each)
package main

/*
#include <time.h>
static long long thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
*/
import "C"

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"time"
)

var sink uint64

// Both burn the same loop; only the number of rounds differs (3 heavy to 1 light).
//
//go:noinline
func goBurnHeavy(rounds int) uint64 {
	x := sink | 1
	for i := 0; i < rounds; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	return x
}

//go:noinline
func goBurnLight(rounds int) uint64 {
	x := sink | 1
	for i := 0; i < rounds; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	return x
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: go_split SECONDS PPROF_OUT")
		os.Exit(2)
	}
	secs, err := strconv.ParseFloat(os.Args[1], 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, "go_split: bad SECONDS")
		os.Exit(2)
	}
	f, err := os.Create(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, "go_split:", err)
		os.Exit(2)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, "go_split:", err)
		os.Exit(2)
	}
	// One goroutine on one thread, so the thread's CPU clock is this work's.
	runtime.LockOSThread()
	var heavy, light int64
	end := time.Now().Add(time.Duration(secs * float64(time.Second)))
	for time.Now().Before(end) {
		t0 := int64(C.thread_cpu_ns())
		sink += goBurnHeavy(300000)
		t1 := int64(C.thread_cpu_ns())
		sink += goBurnLight(100000)
		t2 := int64(C.thread_cpu_ns())
		heavy += t1 - t0
		light += t2 - t1
	}
	pprof.StopCPUProfile()
	f.Close()
	fmt.Printf("go_split truth goBurnHeavy=%.1f goBurnLight=%.1f\n",
		float64(heavy)/1e6, float64(light)/1e6)
}
