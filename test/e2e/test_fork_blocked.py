# SPDX-License-Identifier: MIT
"""fork_blocked: a fork child blocked at once in msgrcv, a call the kernel never restarts
after a signal handler, past its first ticks (100 ms; wall and cpu mode, 100 and 1000 Hz).
The agent signals only threads it finds running, so the child gets its message and exits 0,
and so does the program. (A late start of a fork child's sampler by a CLOCK_MONOTONIC timer,
session 15, signalled the child there: msgrcv failed with EINTR, and the child exited 1.)
"""
import wplib as wp


def main(t):
    for mode, hz in (("wall", 100), ("wall", 1000), ("cpu", 1000)):
        env = wp.preload_env(mode=mode, hz=hz, out=wp.tmp_path("fb.%s.%d.prof" % (mode, hz)))
        r = wp.run([wp.target("fork_blocked"), "100"], env=env, timeout=60)
        t.eq(r.returncode, 0, "%s %d Hz: the program and its blocked child exit 0" % (mode, hz),
             r.describe())
        t.check("child msgrcv=8\n" in r.stdout, "%s %d Hz: the child's msgrcv got the whole "
                "message, not EINTR" % (mode, hz), r.stdout)


wp.main(main)
