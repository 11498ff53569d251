# SPDX-License-Identifier: MIT
"""fork_mid_tick: a fork that lands while the sampler is half-way through a tick starts the
child's profile clean. A fork does not wait for the tick (docs/design.md, "Fork, exec,
signals, exit"), so a fork may copy the sampler's half-done tick: here, the lock-holder samples of wait_locks.c (WALLPROF_TEST=slow-holders makes the
first holder batch wait 1 s in poll, with the holder already queued for a signal, and
fork_holder forks while the sampler sits there).

The child must forget that tick: counted as a holder's extra look (holder_only), every
sample of the child went uncounted (its profile had no samples at all), and the queued job
pointed at a thread entry the child had freed.

  * the child's profile counts its own work: samples, most in child_work;
  * parent and child exit 0.
"""
import os

import wplib as wp


def main(t):
    d = wp.tmp_dir()
    prof = os.path.join(d, "fh.prof")
    env = wp.preload_env(mode="wall", hz=200, threads=1, out=prof,
                         extra={"WALLPROF_TEST": "slow-holders"})
    r = wp.run([wp.target("fork_holder")], env=env, timeout=60)
    t.eq(r.returncode, 0, "the program (and its child) exit 0", r.describe())
    line = r.stdout.strip()
    t.check(line.startswith("child "), "the child's pid is printed: %r" % line)
    if not line.startswith("child "):
        return
    child = int(line.split()[1])
    cprof = os.path.join(d, "fh.%d.prof" % child)
    t.check(os.path.exists(cprof), "the child wrote its own profile",
            "files: %s" % sorted(os.listdir(d)))
    if not os.path.exists(cprof):
        return
    raw = wp.read_raw(cprof)
    counted = raw.samples()
    t.check(counted >= 20, "the child's profile counts samples (%d; ~100 expected)" % counted,
            "META: %s" % {k: v for k, v in raw.meta.items()
                          if k.startswith(("samples", "holder", "missed"))})
    rep = wp.wallprof(["--report", cprof, "--single-file", "-f", "folded"], timeout=60)
    t.eq(rep.returncode, 0, "the child's profile reports", rep.describe())
    share = wp.Profile.from_folded(rep.stdout, per_thread=False).total_share("child_work")
    t.check(share > 0.5, "most of the child's samples are in child_work (%.2f)" % share)


wp.main(main)
