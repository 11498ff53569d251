# SPDX-License-Identifier: MIT
"""fork_blocked: a fork child blocked at once in msgrcv, a call the kernel never restarts
after a signal handler, past its first ticks (100 ms; wall and cpu mode, 100 and 1000 Hz).
The agent signals only threads it finds running, so the child gets its message and exits 0,
and so does the program. (A late start of a fork child's sampler by a CLOCK_MONOTONIC timer,
session 15, signalled the child there: msgrcv failed with EINTR, and the child exited 1.)
"""
import os
import re

import wplib as wp


def main(t):
    for mode, hz in (("wall", 100), ("wall", 1000), ("cpu", 1000)):
        d = wp.tmp_path("fb.%s.%d" % (mode, hz))
        os.makedirs(d, exist_ok=True)
        for f in os.listdir(d):
            os.unlink(os.path.join(d, f))
        env = wp.preload_env(mode=mode, hz=hz, out=os.path.join(d, "fb.prof"))
        r = wp.run([wp.target("fork_blocked"), "100"], env=env, timeout=60)
        t.eq(r.returncode, 0, "%s %d Hz: the program and its blocked child exit 0" % (mode, hz),
             r.describe())
        m = re.search(r"^child (\d+) msgrcv=(\S+)", r.stdout, re.M)
        t.check(m and m.group(2) == "8", "%s %d Hz: the child's msgrcv got the whole message, "
                "not EINTR" % (mode, hz), r.stdout)
        if not m:
            continue
        # the agent ran in the child: its profile (wall mode: it waited), or its line in the
        # run's list of processes without samples (cpu mode: it never ran)
        pid = int(m.group(1))
        if mode == "wall":
            t.check(os.path.exists(os.path.join(d, "fb.%d.prof" % pid)), "%s %d Hz: the "
                    "blocked child has its profile" % (mode, hz), str(os.listdir(d)))
        else:
            t.check(pid in wp.unsampled_pids(os.path.join(d, "fb.unsampled")), "%s %d Hz: the "
                    "blocked child is listed without samples" % (mode, hz), str(os.listdir(d)))


wp.main(main)
