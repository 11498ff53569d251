# SPDX-License-Identifier: MIT
"""waits of C++ programs (issue 13): std::condition_variable waiters are named with the
condition and the std::mutex their lock holds.

test/targets/waits_cxx.cc: cvwaiter in big_cv.wait(lock on cv_mutex) (libstdc++'s wait, which
calls pthread_cond_wait through its PLT) and cvforwaiter in timed_cv.wait_for(lock on
timed_mutex, 1 hour) (the header's steady-clock wait: pthread_cond_clockwait from the
program), both for the whole run. Wall mode, `--format=folded --per-thread --waits`: >= 90% of
each one's waiting samples (its THREAD record) end with
[wait condition big_cv mutex=cv_mutex], [wait condition timed_cv mutex=timed_mutex].
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wplib as wp  # noqa: E402

SECONDS = 1.5
HZ = 200
SHARE = 0.90


def main(t):
    exe = os.path.join(wp.build_dir(), "test", "e2e", "waits_cxx")
    prof, truth, raw = wp.record_waits("waits_cxx", [exe, str(SECONDS)], HZ)
    rep = wp.wallprof(["--report", prof, "--format=folded", "--per-thread", "--waits"])
    t.check(rep.returncode == 0, "folded --waits report", rep.describe())
    waits = wp.wait_frames(rep.stdout)
    for name, frame in (("cvwaiter", "[wait condition big_cv mutex=cv_mutex]"),
                        ("cvforwaiter", "[wait condition timed_cv mutex=timed_mutex]")):
        wp.check_wait_share(raw, waits, int(truth["tid." + name]), name, frame, share=SHARE)


wp.main(main)
