# SPDX-License-Identifier: MIT
"""Signals belong to the program. A program that blocks every signal in every thread and reads
them itself (a signalfd, a sigwait thread) never receives wallprof's signal, in wall mode
(1000 Hz, every thread) and cpu mode; threads that block and unblock it rapidly never have one
of ours pending while they block it; and such threads are still sampled, from /proc, whenever
they are blocked in the kernel. A program reading its own SIGPROF timer with sigtimedwait gets
only its own ticks (wallprof moves to another signal). gdb, which takes SIGPROF (wallprof
shares it) and starts programs from vfork children that reset every signal, runs under the
agent (it died of signal 63)."""

import os
import shutil

import wplib as wp

SECONDS = "2"
WALL = dict(mode="wall", hz=1000, threads=0)
CPU = dict(mode="cpu", hz=1000, threads=0)


def owner(mode, settings, tag):
    prof = wp.tmp_path("owner-%s-%s.prof" % (mode, tag))
    env = wp.preload_env(out=prof, quiet=(mode != "waitprof"), **settings)
    r = wp.run([wp.target("sig_owner"), mode, SECONDS], env=env, timeout=120)
    return r, prof


def sampled(raw, name):
    return sum(x["samples"] for x in raw.threads.values() if x["name"] == name)


def main(t):
    base = wp.run([wp.target("sig_owner"), "signalfd", "0.5"], timeout=60)
    t.eq(base.returncode, 0, "sig_owner runs clean unprofiled", base.describe())

    for mode in ("signalfd", "sigwait"):
        for tag, settings in (("wall", WALL), ("cpu", CPU)):
            r, prof = owner(mode, settings, tag)
            t.eq(r.returncode, 0, "%s, %s mode: the program sees only its own signals" % (
                mode, tag), r.describe())
            if tag != "wall" or r.returncode != 0:
                continue
            raw = wp.read_raw(prof)
            t.eq(raw.meta.get("signalled"), "0",
                 "%s: no thread was signalled (every one blocks the signal)" % mode)
            # blocked in the kernel: sampled from /proc, at the wall-clock rate
            for name in ("sleeper", "waiter" if mode == "sigwait" else "sig_owner"):
                n = sampled(raw, name)
                t.check(n > 200, "%s: the %s thread is sampled while it waits (%d)" % (
                    mode, name, n), repr([(x["name"], x["samples"])
                                          for x in raw.threads.values()]))

    for tag, settings in (("wall", WALL), ("cpu", CPU)):
        r, prof = owner("toggle", settings, tag)
        t.eq(r.returncode, 0, "toggle, %s mode: no signal ever pending in a thread that "
             "blocks it" % tag, r.describe())
        if r.returncode == 0:
            n = sampled(wp.read_raw(prof), "toggler")
            t.check(n > 100, "toggle, %s mode: the toggling threads are sampled (%d)" % (tag, n))

    # a program that reads its own SIGPROF timer with sigtimedwait: wallprof moves away
    r, prof = owner("waitprof", WALL, "wall")
    t.eq(r.returncode, 0, "waitprof: sigtimedwait returns only the program's own SIGPROF ticks",
         r.describe())
    t.check("now samples with signal" in r.stderr or r.returncode != 0,
            "waitprof: wallprof says it moved", r.stderr[-300:])

    # gdb's way of starting programs, reduced: SIGPROF taken (the agent shares it), vfork
    # children resetting every signal, a fork child sampling itself on its parent's signal
    r, prof = owner("vfork", WALL, "wall")
    t.eq(r.returncode, 0, "vfork children resetting every signal do not kill the parent",
         r.describe())
    kids = [f for f in os.listdir(wp.tmp_dir())
            if f.startswith("owner-vfork-wall.") and f.endswith(".prof") and
            f != os.path.basename(prof)]
    raws = [wp.read_raw(os.path.join(wp.tmp_dir(), f)) for f in kids]
    t.check(raws and all(x.samples() > 50 for x in raws),
            "fork children sample themselves (%s)" % [x.samples() for x in raws])
    parent_sig = wp.read_raw(prof).meta.get("signal") if os.path.exists(prof) else None
    t.check(raws and all(x.meta.get("signal") == parent_sig for x in raws),
            "fork children sample with their parent's signal (%s; the parent's %s)" % (
                [x.meta.get("signal") for x in raws], parent_sig))

    gdb = shutil.which("gdb")
    if not gdb:
        t.note("gdb is not installed: its case is not run")
        return
    cmd = [gdb, "-nx", "--batch", "-ex", "run", "--args", wp.target("sig_owner"), "toggle",
           "0.5"]
    plain = wp.run(cmd, timeout=120)
    if "exited normally" not in plain.stdout:
        t.note("gdb cannot run a program here (ptrace?): its case is not run\n" +
               plain.describe())
        return
    r = wp.run(cmd, env=wp.preload_env(out=wp.tmp_path("gdb.prof")), timeout=120)
    t.check(r.returncode == plain.returncode and "exited normally" in r.stdout,
            "gdb starts and finishes a program under the agent", r.describe())


wp.main(main)
