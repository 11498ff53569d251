# SPDX-License-Identifier: MIT
"""A thread that runs in short bursts between blocking calls (issue 20's PostgreSQL backend:
2,365 running samples at 1 ms against 1.025 s of CPU; docs/design.md, "A real database", and
src/agent/reconcile.h).

test/targets/bursts.c: "worker" blocks in epoll_wait, recv's a byte, computes ~50 us of its
own CPU time, sends it back to "client", which waits in recv. The worker measures its own CPU
time, wall time and runqueue time (schedstat) over the run: the truth its time budget in the
text report is compared with. Two cases, nothing pinned, 1000 Hz, every thread a tick:
  - crowded: four spinners keep both CPUs busy; the worker is woken, queued, and takes the
    signal as it returns from its call, so its blocked time was counted as running (before
    reconcile.c: +3 to +10 points over its CPU share under load, x1.14-1.51);
  - idle: no spinners; the worker's clock moves, the sampler signals it, and the signal finds
    it blocked in its next call microseconds later, so its CPU time was counted as waiting
    (before: running 25-27% against 79-80% of CPU, and 28-31% "waiting in no known call",
    the signalled samples inside a call having no wait).

Checked in each: the run ends, the worker's budget adds up to 100%, its running share is
within RUN_POINTS of its CPU share, its waiting for a CPU within QUEUE_POINTS of its
runqueue share and its io within IO_POINTS of its blocked share, almost nothing is "waiting
in no known call", and its blocked epoll_wait shows as a [wait io epoll ...] leaf. With
src/agent/reconcile.c, measured here (load 1-4): within 0.3 points each, both cases.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wplib as wp  # noqa: E402

SECONDS = 3.0
HZ = 1000
RUN_POINTS = 3.0
IO_POINTS = 4.0
QUEUE_POINTS = 5.0
UNKNOWN_POINTS = 2.0


def check_case(t, name, spinners):
    prof = wp.tmp_path("bursts-%s.prof" % name)
    truth_path = wp.tmp_path("bursts-%s.truth" % name)
    r = wp.record([wp.target("bursts"), str(SECONDS), "free", str(spinners)], prof,
                  mode="wall", hz=HZ, threads=0, fmt="text", env={"WP_TRUTH": truth_path},
                  timeout=120)
    t.check(r.returncode == 0, "%s: recorded, exit 0" % name, r.describe())
    truth = wp.read_truth(truth_path)
    tid = int(truth["tid.worker"])
    wall = float(truth["wall.worker"])
    cpu = 100.0 * float(truth["cpu.worker"]) / wall
    queued = 100.0 * float(truth["delay.worker"]) / wall
    blocked = 100.0 - cpu - queued
    got = wp.time_budgets(r.stdout).get(tid)
    t.check(got is not None, "%s: the worker has a time budget" % name, r.stdout[-3000:])
    if got is None:
        return
    t.check(abs(sum(got.values()) - 100.0) <= 0.6, "%s: the worker's budget adds up to 100%%"
            % name, repr(got))
    running = got.get("running", 0.0)
    cpu_wait = got.get("waiting for a CPU", 0.0)
    io = got.get("io", 0.0)
    unknown = got.get("waiting in no known call", 0.0)
    t.note("%s: worker by its own clocks: CPU %.1f%%, runqueue %.1f%%, blocked %.1f%% (%d "
           "rounds); by the report: %r" % (name, cpu, queued, blocked, int(truth["rounds"]),
                                           got))
    t.check(abs(running - cpu) <= RUN_POINTS,
            "%s: running %.1f%% is within %.0f points of its CPU share %.1f%%"
            % (name, running, RUN_POINTS, cpu), repr(got))
    t.check(abs(io - blocked) <= IO_POINTS,
            "%s: its io wait %.1f%% is within %.0f points of its blocked share %.1f%%"
            % (name, io, IO_POINTS, blocked), repr(got))
    t.check(unknown <= UNKNOWN_POINTS, "%s: waiting in no known call %.1f%% is at most %.0f%%"
            % (name, unknown, UNKNOWN_POINTS), repr(got))
    t.check(abs(cpu_wait - queued) <= QUEUE_POINTS,
            "%s: waiting for a CPU %.1f%% is within %.0f points of its runqueue share %.1f%%"
            % (name, cpu_wait, QUEUE_POINTS, queued), repr(got))
    flat = wp.wallprof(["--report", prof, "--thread=%d" % tid, "--top=50"]).stdout
    m = re.search(r"^\s*(\d+\.\d)%.*\[wait io epoll [^\]]*\]", flat, re.M)
    t.check(m is not None, "%s: the worker's epoll_wait shows as a [wait io epoll ...] leaf"
            % name, flat[-3000:])


def main(t):
    check_case(t, "crowded", 4)
    check_case(t, "idle", 0)


wp.main(main)
