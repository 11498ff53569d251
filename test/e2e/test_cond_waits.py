# SPDX-License-Identifier: MIT
"""futex-based waits test_waits.py's target lacks (issue 13): a timed condition wait, a
condition and mutex on the heap, a semaphore, a raw futex.

test/targets/cond_waits.c: tcondwaiter in pthread_cond_timedwait(&slow_cond, &slow_lock) (an
hour's deadline), heapwaiter in pthread_cond_wait on a condition and mutex inside one malloc'ed
block, semwaiter in sem_wait(&big_sem), futexwaiter in a raw FUTEX_WAIT (syscall) on the global
int big_word, each for the whole run. Wall mode, `--format=folded --per-thread --waits`: >= 90%
of each one's waiting samples (its THREAD record) end with
  [wait condition slow_cond mutex=slow_lock]
  [wait condition 0x... in heapwaiter_fn mutex=0xADDR]  (ADDR the mutex's, as the target says)
  [wait semaphore big_sem]
  [wait futex big_word]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wplib as wp  # noqa: E402

SECONDS = 1.5
HZ = 200
SHARE = 0.90


def main(t):
    prof, truth, raw = wp.record_waits("cond_waits", [wp.target("cond_waits"), str(SECONDS)], HZ)
    rep = wp.wallprof(["--report", prof, "--format=folded", "--per-thread", "--waits"])
    t.check(rep.returncode == 0, "folded --waits report", rep.describe())
    waits = wp.wait_frames(rep.stdout)
    heap_end = " in heapwaiter_fn mutex=%s]" % truth["heap_mutex"]
    cases = (
        ("tcondwaiter", "[wait condition slow_cond mutex=slow_lock]",
         lambda f: f == "[wait condition slow_cond mutex=slow_lock]"),
        ("heapwaiter", "[wait condition 0x...%s" % heap_end,
         lambda f: f.startswith("[wait condition 0x") and f.endswith(heap_end)),
        ("semwaiter", "[wait semaphore big_sem]", lambda f: f == "[wait semaphore big_sem]"),
        ("futexwaiter", "[wait futex big_word]", lambda f: f == "[wait futex big_word]"),
    )
    for name, frame, ok in cases:
        wp.check_wait_share(raw, waits, int(truth["tid." + name]), name, frame, ok, SHARE)


wp.main(main)
