# SPDX-License-Identifier: MIT
"""A program whose own allocator locks around fork (Chromium's PartitionAlloc, jemalloc and
tcmalloc do): its pthread_atfork handlers take the heap lock before fork and make it anew in
the child, and they were registered after the agent's, so the agent's child handler runs
first, with the lock still held. Anything the agent allocates or frees there (through the
program's malloc, which serves the whole process) waits for good: Chromium's crash handler
left such a child blocked. Each fork child must end as unprofiled, in wall and cpu mode at
1000 Hz, and through the command; the run's processes are all accounted for."""
import glob
import os

import wplib as wp

FORKS = "40"


def main(t):
    base = wp.run([wp.target("own_malloc"), FORKS], timeout=120)
    t.eq(base.returncode, 0, "unprofiled, every fork child ends", base.describe())
    for mode in ("wall", "cpu"):
        d = wp.tmp_path("own-malloc-" + mode)
        os.makedirs(d, exist_ok=True)
        env = wp.preload_env(mode=mode, hz=1000, out=os.path.join(d, "om.prof"))
        r = wp.run([wp.target("own_malloc"), FORKS], env=env, timeout=600)
        t.eq(r.returncode, 0, "%s mode, 1000 Hz: every fork child ends" % mode, r.describe())
        t.eq(r.stdout, base.stdout, "%s mode: the output as unprofiled" % mode)
        # the parent's profile, and each child in a profile or the run's unsampled list
        files = glob.glob(os.path.join(d, "om*.prof"))
        unsampled = glob.glob(os.path.join(d, "*.unsampled"))
        lines = sum(len(open(u).read().splitlines()) for u in unsampled)
        t.check(len(files) + lines >= int(FORKS) + 1,
                "%s mode: the parent and its %s children each left a profile or a line "
                "(%d profiles, %d lines)" % (mode, FORKS, len(files), lines))
    out = wp.tmp_path("own-malloc-cli.prof")
    r = wp.wallprof(["-q", "-o", out, "--hz=1000", "-f", "folded", "--",
                     wp.target("own_malloc"), FORKS], timeout=600)
    t.eq(r.returncode, 0, "through the command: every fork child ends", r.describe())
    t.check("churn" in r.stdout, "the report shows the program's allocating threads",
            r.stdout[-1000:])


wp.main(main)
