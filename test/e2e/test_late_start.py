# SPDX-License-Identifier: MIT
"""late_start (issue 19): a fork child's sampler is made at its first tick, not at the fork
(src/agent/latestart.h): a one-shot timer half an interval after the fork, whose signal makes
the agent's task. Wall mode at 100 Hz and cpu mode at 1000 Hz, one child at a time:

  * quick: a child that looks at once finds no task of the agent's among its own processes
    (/proc/self/task/T/children; the code before made it at the fork: tasks=1), and it is
    in the run's list of processes without samples, ended by exit 0;
  * late: a child still there after 50 ms has its task, and a profile (wall mode; asleep,
    cpu mode lists it as without samples);
  * compute: a child that computes at once for 200 ms has its profile, with its samples in
    child_work against the time it measured itself (the first tick where it would have been:
    one interval after the fork);
  * masked: a child that blocks every signal first (the timer's signal cannot reach it: a
    thread about to block it starts the sampler) has its profile, its computing seen;
  * sleeper: a child asleep in nanosleep and then in a read of a pipe across the timer's
    signal sleeps its whole time (0 returned), reads the whole 4096 bytes, and is profiled
    there (wall mode);
  * grand: a grandchild forked by a child before its first tick has its own profile;
  * exec: a child that execs /bin/true at once is listed as ended by exec, /bin/true by its
    exit; term: one that raises SIGTERM at once is listed as ended by signal 15.
"""
import os
import re

import wplib as wp

CHILD_MS, WAIT_MS = 200, 50


def lines(stdout, kind):
    out = {}
    for m in re.finditer(r"^%s (\d+) (.*)$" % kind, stdout, re.M):
        out[int(m.group(1))] = dict(kv.split("=", 1) for kv in m.group(2).split())
    return out


def profile(t, label, d, pid):
    path = os.path.join(d, "ls.%d.prof" % pid)
    if not t.check(os.path.exists(path), "%s: child %d has its profile" % (label, pid),
                   "files: %s" % sorted(os.listdir(d))):
        return None
    return wp.load(path)


def check_compute(t, label, d, pid, v, mode, hz, what):
    p = profile(t, label, d, pid)
    if not p:
        return
    n = p.through("child_work").total()
    want = (int(v["cpu_ns"]) if mode == "cpu" else int(v["wall_ns"])) * hz / 1e9
    t.between(n / want, 0.7, 1.25, "%s: %s child %d: samples in child_work against its own "
              "%s time (%d of %.0f)" % (label, what, pid, mode, n, want))


def run_mode(t, mode, hz):
    label = "%s %d Hz" % (mode, hz)
    d = wp.tmp_path("late-%s" % mode)
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        os.unlink(os.path.join(d, f))
    env = wp.preload_env(mode=mode, hz=hz, out=os.path.join(d, "ls.prof"))
    r = wp.run([wp.target("late_start"), str(CHILD_MS), str(WAIT_MS)], env=env, timeout=120)
    if not t.eq(r.returncode, 0, "%s: late_start and its children end as they should" % label,
                r.describe()):
        return
    t.check("children ok" in r.stdout, "%s: every child ended as it should" % label,
            r.stdout[-400:])
    unsampled = wp.unsampled_lines(os.path.join(d, "ls.unsampled"))
    ends = {}
    for u in unsampled:
        ends.setdefault(u["pid"], []).append(u["end"])

    half_interval_ns = 1e9 / hz / 2
    for pid, v in lines(r.stdout, "quick").items():
        if int(v["since_fork_ns"]) < 0.8 * half_interval_ns:
            t.eq(v["tasks"], "0", "%s: a child that looked %.1f ms after its fork had no "
                 "task of the agent's" % (label, int(v["since_fork_ns"]) / 1e6))
        else:
            t.note("%s: the quick child looked %.1f ms after its fork, past its first tick: "
                   "not checked" % (label, int(v["since_fork_ns"]) / 1e6))
        t.eq(ends.get(pid), ["exit 0"], "%s: the quick child is listed, ended by exit 0"
             % label, repr(unsampled))
    for pid, v in lines(r.stdout, "late").items():
        t.eq(v["tasks"], "1", "%s: a child still there after %d ms has its task" % (label,
                                                                               WAIT_MS))
        if mode == "wall":  # asleep: cpu mode has nothing to sample (listed instead)
            p = profile(t, label, d, pid)
            t.check(p is not None and p.total() > 0, "%s: the late child has samples" % label)
        else:
            t.eq(ends.get(pid), ["exit 0"], "%s: the late child, asleep, is listed as without "
                 "samples" % label, repr(unsampled))
    for pid, v in lines(r.stdout, "compute").items():
        check_compute(t, label, d, pid, v, mode, hz, "computing")
    for pid, v in lines(r.stdout, "masked").items():
        check_compute(t, label, d, pid, v, mode, hz, "masked")
    for pid, v in lines(r.stdout, "sleeper").items():
        t.eq((v["rc"], v["read"]), ("0", "4096"), "%s: the sleeper's nanosleep returned 0 and "
             "its read got all 4096 bytes" % label)
        t.check(int(v["slept_ns"]) >= WAIT_MS * 1e6, "%s: the sleeper slept its %d ms (%.1f)"
                % (label, WAIT_MS, int(v["slept_ns"]) / 1e6))
        p = profile(t, label, d, pid) if mode == "wall" else None
        if p:
            t.check(p.through("nanosleep").total() + p.through("read").total() > 0,
                    "%s: the sleeper's samples are in its nanosleep and read" % label,
                    p.top(8))
    t.eq(len(lines(r.stdout, "compute")), 2, "%s: the computing child and the grandchild "
         "printed their truth" % label, r.stdout)
    execs = [pid for pid, e in ends.items() if e == ["exec", "exit 0"]]
    t.eq(len(execs), 1, "%s: the exec child is listed ended by exec, then /bin/true by its "
         "exit" % label, repr(unsampled))
    terms = [pid for pid, e in ends.items() if e == ["signal 15"]]
    t.eq(len(terms), 1, "%s: the child that raised SIGTERM is listed ended by signal 15"
         % label, repr(unsampled))


def main(t):
    run_mode(t, "wall", 100)
    run_mode(t, "cpu", 1000)


wp.main(main)
