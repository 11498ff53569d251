# SPDX-License-Identifier: MIT
"""Per-thread time budgets (issue 13): in a wall-mode text report, each thread's section says
where its wall time went, "running X%, waiting for a CPU Y%, lock Z%, ..., waiting in no known
call W%": the parts add up to 100%, and they match what the targets' threads are known to do.

test/targets/waits.c: each thread waits for one known thing the whole run (a lock, a pipe, a
sleep, a join, a condition, a socket, a child) or computes holding the lock (holder): >= 90% of
each one's budget is that kind (the holder: running or waiting for a CPU).
test/targets/demo.c: parser computes, feeder sleeps between writes, io reads a pipe and sleeps
a little per record, four workers take turns at one lock, main joins them.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wplib as wp  # noqa: E402

SHARE = 90.0


def adds_up(t, label, parts):
    total = sum(parts.values())
    t.check(abs(total - 100.0) <= 0.6, "%s's budget adds up to 100%%" % label,
            "%r sums to %.1f" % (parts, total))


def waits_target(t):
    prof = wp.tmp_path("budget-waits.prof")
    truth_path = wp.tmp_path("budget-waits.truth")
    r = wp.record([wp.target("waits"), "2"], prof, mode="wall", hz=200, threads=0, fmt="text",
                  env={"WP_TRUTH": truth_path}, timeout=120)
    t.check(r.returncode == 0, "waits: recorded, exit 0", r.describe())
    truth = wp.read_truth(truth_path)
    b = wp.time_budgets(r.stdout)
    expect = {"locker-1": ["lock"], "locker-2": ["lock"], "locker-3": ["lock"],
              "reader": ["io"], "sockreader": ["io"],
              # it wakes every 10 ms, and then waits for a CPU on a busy machine
              "sleeper": ["sleep", "running", "waiting for a CPU"],
              "joinee": ["sleep"], "joiner": ["join"], "condwaiter": ["condition"],
              "childwaiter": ["child"], "holder": ["running", "waiting for a CPU"]}
    for name, kinds in sorted(expect.items()):
        parts = b.get(int(truth["tid." + name]))
        t.check(parts is not None, "waits: %s has a time budget" % name, r.stdout[-2000:])
        if parts is None:
            continue
        adds_up(t, "waits: " + name, parts)
        got = sum(parts.get(k, 0.0) for k in kinds)
        t.check(got >= SHARE, "waits: >= %.0f%% of %s's time is %s" % (SHARE, name,
                                                                     " or ".join(kinds)),
                repr(parts))
        if name == "sleeper":
            t.check(parts.get("sleep", 0.0) >= 50.0, "waits: sleeper mostly sleeps", repr(parts))


def demo_target(t):
    prof = wp.tmp_path("budget-demo.prof")
    r = wp.record([wp.target("demo"), "2"], prof, mode="wall", hz=200, threads=0, fmt="text",
                  timeout=120)
    t.check(r.returncode == 0, "demo: recorded, exit 0", r.describe())
    b = wp.time_budgets(r.stdout, by_name=True)
    for name, parts in sorted(b.items()):
        adds_up(t, "demo: " + name, parts)

    def share(name, *kinds):
        return sum(b.get(name, {}).get(k, 0.0) for k in kinds)

    t.check(share("parser", "running", "waiting for a CPU") >= SHARE,
            "demo: parser computes (running or waiting for a CPU)", repr(b.get("parser")))
    t.check(share("feeder", "sleep") >= 50.0 and
            share("feeder", "sleep", "running", "waiting for a CPU") >= SHARE,
            "demo: feeder sleeps", repr(b.get("feeder")))
    t.check(share("io", "io") >= 50.0 and share("io", "io", "sleep") >= SHARE,
            "demo: io reads its pipe, and sleeps a little", repr(b.get("io")))
    t.check(share("demo", "join") >= SHARE, "demo: main joins", repr(b.get("demo")))
    for w in ("worker-1", "worker-2", "worker-3", "worker-4"):
        t.check(share(w, "lock") >= 10.0 and share(w, "running", "waiting for a CPU") >= 10.0,
                "demo: %s waits for the lock and computes" % w, repr(b.get(w)))


def main(t):
    waits_target(t)
    demo_target(t)


wp.main(main)
