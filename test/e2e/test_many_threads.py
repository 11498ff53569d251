# SPDX-License-Identifier: MIT
"""many_threads: 5,000 short-lived threads (batches of 50, ~100 us of work each) under the
agent at 1000 Hz: in wall mode (16 threads a tick, and every thread every tick) and cpu mode.

  * the program finishes (watchdog) with exit 0 and all its threads created;
  * the profile is complete and valid, has samples, and the main thread's stacks are whole;
  * the slowdown against an unprofiled run is reported (a note, not a check: speed is for the
    benchmarks).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wplib as wp  # noqa: E402

THREADS = 5000
HZ = 1000
WATCHDOG = 120


def run(t, label, env):
    truth_path = wp.tmp_path("many_threads.%s.truth" % label)
    e = dict(env)
    e["WP_TRUTH"] = truth_path
    r = wp.run([wp.target("many_threads"), str(THREADS)], env=e, timeout=WATCHDOG)
    good = t.check(r.returncode == 0, "[%s] many_threads finishes within %d s and exits 0 (%.2f s)"
                   % (label, WATCHDOG, r.elapsed), r.describe())
    truth = wp.read_truth(truth_path) if good else {}
    if good:
        t.eq(int(truth.get("threads", 0)), THREADS, "[%s] all %d threads were created" % (label,
                                                                                         THREADS))
    return r, truth


def main(t):
    base = []
    for i in range(3):
        r, truth = run(t, "unprofiled-%d" % i, {})
        if truth:
            base.append(truth["elapsed_ns"] / 1e9)
    if not base:
        return
    baseline = min(base)
    t.note("unprofiled: %.3f s (best of %d)" % (baseline, len(base)))
    for label, settings in (("wall", dict(mode="wall")),
                            ("wall-all", dict(mode="wall", threads=0)),
                            ("cpu", dict(mode="cpu"))):
        prof = wp.tmp_path("many_threads.%s.prof" % label)
        r, truth = run(t, label, wp.preload_env(hz=HZ, out=prof, **settings))
        if not truth:
            continue
        try:
            raw = wp.read_raw(prof)
            t.ok("[%s] the profile is complete and well-formed" % label)
        except (OSError, ValueError) as e:
            t.fail("[%s] the profile is complete and well-formed" % label, str(e))
            continue
        t.check(raw.samples() > 0, "[%s] the profile has samples (%d)" % (label, raw.samples()))
        p = wp.load(prof)
        t.eq(p.total(), raw.samples(), "[%s] the report counts every sample of the file" % label)
        main_tid = int(raw.meta.get("pid", "0"))
        m = p.thread(main_tid)
        whole = m.filter(lambda n, tid, f: f and f[0] == "_start" and "main" in f)
        t.check(m.total() == 0 or whole.total() >= 0.95 * m.total(),
                "[%s] main thread's stacks are whole: %d of %d" % (label, whole.total(),
                                                                  m.total()),
                lambda: m.sample_lines(10))
        workers = p.filter(lambda n, tid, f: n == "worker")
        elapsed = truth["elapsed_ns"] / 1e9
        t.note("%s: %.3f s, slowdown x%.2f; %s samples (%d in %d worker threads), threads seen "
               "%s, missed: exited %s, timeout %s, error %s; ticks %s (late %s)" % (
                   label, elapsed, elapsed / baseline, raw.samples(), workers.total(),
                   len(workers.threads()), raw.meta.get("threads_seen"),
                   raw.meta.get("missed_exited"), raw.meta.get("missed_timeout"),
                   raw.meta.get("missed_error"), raw.meta.get("ticks"),
                   raw.meta.get("ticks_late")))


wp.main(main)
