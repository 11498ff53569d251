# SPDX-License-Identifier: MIT
"""Threads the agent did not see being born: one started by a library constructor that runs
before the agent's (preloaded ahead of it), and one made with a raw clone() (no pthread, no
TLS of its own). Both are sampled, at the right function, and nothing waits on them."""

import wplib as wp


def main(t):
    early = wp.target("libearly_lib.so")
    for order in ("early first", "agent first"):
        prof = wp.tmp_path("odd-%s.prof" % order.split()[0])
        libs = [early, wp.agent()] if order == "early first" else [wp.agent(), early]
        env = wp.preload_env(hz=1000, threads=0, out=prof)
        env["LD_PRELOAD"] = " ".join(libs)
        r = wp.run([wp.target("odd_threads"), "1.5"], env=env, timeout=60)
        t.eq(r.returncode, 0, "[%s] the program finishes" % order, r.describe())
        p = wp.load(prof)
        t.check(p.thread("early").through("early_fn").total() > 300,
                "[%s] the thread started in a library constructor is sampled in early_fn"
                % order, repr(p.by_name()))
        raw = p.through("raw_fn").total()
        t.check(raw > 300, "[%s] the raw clone() thread is sampled in raw_fn (%d)" % (order, raw),
                repr(p.by_name()))


wp.main(main)
