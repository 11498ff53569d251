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
    prof = wp.tmp_path("waits_cxx.prof")
    truth_path = wp.tmp_path("waits_cxx.truth")
    exe = os.path.join(wp.build_dir(), "test", "e2e", "waits_cxx")
    r = wp.run_preloaded([exe, str(SECONDS)],
                         env=wp.preload_env(mode="wall", hz=HZ, out=prof,
                                            extra={"WP_TRUTH": truth_path}),
                         timeout=120)
    t.check(r.returncode == 0, "the target exits 0", r.describe())
    truth = wp.read_truth(truth_path)
    raw = wp.read_raw(prof)
    rep = wp.wallprof(["--report", prof, "--format=folded", "--per-thread", "--waits"])
    t.check(rep.returncode == 0, "folded --waits report", rep.describe())
    counts = {}
    for frames, n in wp.parse_folded(rep.stdout).items():
        tid = int(frames[0].rsplit("tid=", 1)[1].rstrip("]"))
        wait = next((f for f in frames if f.startswith("[wait ")), None)
        d = counts.setdefault(tid, {})
        d[wait] = d.get(wait, 0) + n
    for name, frame in (("cvwaiter", "[wait condition big_cv mutex=cv_mutex]"),
                        ("cvforwaiter", "[wait condition timed_cv mutex=timed_mutex]")):
        tid = int(truth["tid." + name])
        th = raw.threads.get(tid)
        waiting = th["waiting"] if th else 0
        got = counts.get(tid, {}).get(frame, 0)
        t.check(waiting >= 50 and got >= SHARE * waiting,
                "%s: >= 90%% of its waiting samples say %s" % (name, frame),
                "%d of %d; its waits: %r" % (got, waiting, counts.get(tid)))


wp.main(main)
