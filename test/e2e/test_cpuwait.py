# SPDX-License-Identifier: MIT
"""Waiting for a CPU (issue 13, kind "cpu"): threads that oversubscribe a CPU each measure
their own runqueue time; the text report's per-thread time budget says the same.

test/targets/cpuwait.c pins four threads to one CPU (spin-a, spin-b at nice 0, spin-n5 at
nice 5, half spinning 3 ms and sleeping 3 ms), so they queue for it whatever else the machine
runs; each reads its own /proc/thread-self/schedstat (run_delay) and the clock at its start
and end and reports its share of wall time spent on a runqueue (`wait.NAME`). The shares
differ per thread (the nice 5 thread gets less CPU; half sleeps), so a report that gave every
thread the same share would fail. The spinners' flat profiles (--thread) show that wait as the
leaf [wait cpu runqueue], within 5 points of their share, and spin_until's self time as the
rest (issue 20: it was spin_until's self time, as a build's CPU wait was ppoll's).

Wall mode, text report: each thread's "time (...): running X%, waiting for a CPU Y%, ..." line
adds up to 100% (to rounding), and Y is within 5 points of the thread's own share for the
spinners, 8 for half: its wake-ups from sleep wait for the CPU too, which samples that find it
not yet run since its sleep first count as the sleep, until schedstat's growth at its next read
moves that time to the CPU wait (cpuwait.c: most of it, not all); half's budget has its sleep;
a spinner has at most 2% in no known call, half 5% (spin-n5 had 6-16% in 3 runs of 22 while
a preemption inside the agent's handler was taken for a blocked signal).

duty (the target's `duty` variant: one thread, not pinned, computing 100 ms and sleeping
100 ms in turn), at 1000 Hz: on a machine with a CPU to spare it hardly waits for one, and
the report's CPU wait is within 8 points of its own schedstat's share, as half's, and its
sleep at most 8 points under what its own clocks say (its time in its sleeps less the wait
for a CPU their wake-ups added: about half its time): the take-back also moves to
"cpu" the runqueue time the thread spent before its sleep that no read had shown yet, a few
points here (sleep reported 45-48% against 49-50% by its clocks, in the code before this
check alike), once 12 points on a saturated machine (37.5% waiting by its schedstat; such a
run fails here). With the sampler on its task, thread clocks come from schedstat, whose run time a
running thread moves only at the scheduler's ticks (4 ms at HZ=250); compared with the
handler's exact reading, a thread that ran looked unmoved since its last sample, its
samples were given to "waiting for a CPU" ahead of schedstat, and the negative balance made
cpuwait.c's take-back move every sample of its sleep there too: 38-77% waiting for a CPU
against 1-17% by its schedstat, sleep 4-20% (the code before this check, 1000 Hz; 100 Hz,
with a tick in every interval, was right).
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wplib as wp  # noqa: E402

SECONDS = 3.0
HZ = 100
DUTY_HZ = 1000
POINTS = 5.0
# half's wake-ups from its sleeps queue for the CPU too; samples that find its clock unmoved
# since its sleep count the sleep first, and the take-back from schedstat's next growth
# (cpuwait.c) recovers most but not all of it: over 30 runs here (session 7) half was
# reported 0.5-5.7 points under its own share (mean 2.5), against 0.5-1.6 for the spinners.
# The spinners are held to the 5 points, half to 8.
POINTS_HALF = 8.0

def check_run(t, variant, hz=HZ):
    prof = wp.tmp_path("cpuwait-%s.prof" % variant)
    truth_path = wp.tmp_path("cpuwait-%s.truth" % variant)
    r = wp.record([wp.target("cpuwait"), str(SECONDS), variant], prof, mode="wall", hz=hz,
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
        points = POINTS_HALF if name in ("half", "duty") else POINTS
        t.check(abs(cpu - float(v)) <= points,
                "%s: %s waited for a CPU %.1f%% by its schedstat, report within %.0f points"
                % (variant, name, float(v), points), "report %.1f%%; %r" % (cpu, got))
        # time counted in no known call is time the agent lost track of: a spinner never
        # waits anywhere but for the CPU (half shows 1-2.5% around its wake-ups)
        unknown = got.get("waiting in no known call", 0.0)
        most = 5.0 if name in ("half", "duty") else 2.0
        t.check(unknown <= most, "%s: %s: at most %.0f%% in no known call"
                % (variant, name, most), "%.1f%%; %r" % (unknown, got))
    if variant == "pinned":
        for name in ("spin-a", "spin-b"):
            flat_cpu_wait(t, prof, name, int(truth["tid." + name]), float(truth["wait." + name]))
    return b, truth


FLAT_ROW = re.compile(r"^\s*(\d+\.\d)%\s+\S+\s+[\d,]+\s+\d+\.\d%\s+(\S.*?)\s{2,}")


def flat_cpu_wait(t, prof, name, tid, share):
    """A spinner's flat profile (--thread): its time waiting for a CPU is the leaf [wait cpu
    runqueue] under spin_until, within POINTS of its own schedstat share, and spin_until's
    self time is the rest (issue 20: the CPU wait was spin_until's self time, as ninja's was
    ppoll's)."""
    r = wp.wallprof(["--report", prof, "--thread=%d" % tid, "--top=50"])
    flat = r.stdout.partition("FLAT PROFILE")[2].partition("WAITS")[0]
    rows = {m.group(2): float(m.group(1)) for m in map(FLAT_ROW.match, flat.splitlines()) if m}
    cpu, spin = rows.get("[wait cpu runqueue]", 0.0), rows.get("spin_until", 0.0)
    t.check(abs(cpu - share) <= POINTS, "pinned: %s's flat profile shows its CPU wait as [wait "
            "cpu runqueue] %.1f%%, within %.0f points of its schedstat share %.1f%%"
            % (name, cpu, POINTS, share), flat)
    t.check(abs(spin - (100.0 - share)) <= POINTS, "pinned: %s's spin_until self time %.1f%% is "
            "its running share, %.1f%% by its schedstat" % (name, spin, 100.0 - share), flat)


def main(t):
    b, truth = check_run(t, "pinned")
    half = b.get(int(truth.get("tid.half", -1)), {})
    t.check(half.get("sleep", 0.0) >= 10.0, "pinned: half's budget shows its sleep", repr(half))
    b, truth = check_run(t, "duty", hz=DUTY_HZ)
    duty = b.get(int(truth.get("tid.duty", -1)), {})
    asleep = float(truth.get("sleep.duty", -100.0))
    t.check(duty.get("sleep", 0.0) >= asleep - POINTS_HALF,
            "duty: asleep %.1f%% by its own clocks (its sleeps less their wait for a CPU), "
            "report at most %.0f points under" % (asleep, POINTS_HALF), repr(duty))


wp.main(main)
