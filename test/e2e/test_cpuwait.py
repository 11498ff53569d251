"""Waiting for a CPU (issue 13, kind "cpu"): threads that oversubscribe a CPU each measure
their own runqueue time; the text report's per-thread time budget says the same.

test/targets/cpuwait.c pins four threads to one CPU (spin-a, spin-b at nice 0, spin-n5 at
nice 5, half spinning 3 ms and sleeping 3 ms), so they queue for it whatever else the machine
runs; each reads its own /proc/thread-self/schedstat (run_delay) and the clock at its start
and end and reports its share of wall time spent on a runqueue (`wait.NAME`). The shares
differ per thread (the nice 5 thread gets less CPU; half sleeps), so a report that gave every
thread the same share would fail.

Wall mode, text report: each thread's "time (...): running X%, waiting for a CPU Y%, ..." line
adds up to 100% (to rounding), and Y is within 5 points of the thread's own share for every
thread, half's included: its wake-ups from sleep wait for the CPU too, which samples that find
it not yet run since its sleep first count as the sleep, until schedstat's growth at its next
read moves that time to the CPU wait (cpuwait.c); and half's budget has its sleep.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wplib as wp  # noqa: E402

SECONDS = 3.0
HZ = 100
POINTS = 5.0

def check_run(t, variant, names=None):
    prof = wp.tmp_path("cpuwait-%s.prof" % variant)
    truth_path = wp.tmp_path("cpuwait-%s.truth" % variant)
    r = wp.record([wp.target("cpuwait"), str(SECONDS), variant], prof, mode="wall", hz=HZ,
                  threads=0, fmt="text", env={"WP_TRUTH": truth_path}, timeout=120)
    t.check(r.returncode == 0, "%s: recorded, exit 0" % variant, r.describe())
    truth = wp.read_truth(truth_path)
    b = wp.time_budgets(r.stdout)
    for key, v in sorted(truth.items()):
        if not key.startswith("wait."):
            continue
        name = key[5:]
        tid = int(truth["tid." + name])
        got = b.get(tid)
        t.check(got is not None, "%s: %s has a time budget" % (variant, name), r.stdout[-3000:])
        if got is None:
            continue
        total = sum(got.values())
        t.check(abs(total - 100.0) <= 0.6, "%s: %s's budget adds up to 100%%" % (variant, name),
                "%r sums to %.1f" % (got, total))
        cpu = got.get("waiting for a CPU", 0.0)
        t.check(abs(cpu - float(v)) <= POINTS,
                "%s: %s waited for a CPU %.1f%% by its schedstat, report within %.0f points"
                % (variant, name, float(v), POINTS), "report %.1f%%; %r" % (cpu, got))
    return b, truth


def main(t):
    b, truth = check_run(t, "pinned")
    half = b.get(int(truth.get("tid.half", -1)), {})
    t.check(half.get("sleep", 0.0) >= 10.0, "pinned: half's budget shows its sleep", repr(half))


wp.main(main)
