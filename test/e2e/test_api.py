# SPDX-License-Identifier: MIT
"""The public C API (include/wallprof.h), from a program that links libwallprof: nothing is
sampled before wallprof_start; start takes its settings; flush writes while sampling goes on;
stop writes the profile; a named thread carries its name, an excluded one is never sampled;
a second start makes a new profile with new settings; every documented error code."""

import wplib as wp


def main(t):
    p1, fl, p2 = (wp.tmp_path(n) for n in ("api1.prof", "api-flush.prof", "api2.prof"))
    r = wp.run([wp.target("api_user"), p1, fl, p2], timeout=60)
    t.eq(r.returncode, 0, "api_user runs and every return code is as documented",
         r.stdout + r.stderr)
    for line in r.stdout.splitlines():
        if line.startswith("check "):
            t.check(" ok " in line, line)

    raw = wp.read_raw(p1)
    t.eq(raw.meta.get("mode"), "cpu", "the first profile has the mode wallprof_start asked for")
    t.eq(raw.meta.get("hz"), "500", "... and the rate")
    p = wp.load(p1)
    t.eq(p.through("before_start_fn").total(), 0, "nothing before wallprof_start is sampled")
    t.eq(p.through("after_stop_fn").total(), 0, "nothing after wallprof_stop is sampled")
    t.check(p.through("main_fn").total() > 100, "the work between start and stop is there")
    names = p.by_name()
    t.check(names.get("renamed-worker", 0) > 50 and
            p.thread("renamed-worker").through("named_fn").total() > 50,
            "wallprof_thread_name names the thread in the profile", repr(names))
    t.eq(p.through("excluded_fn").total(), 0, "an excluded thread is never sampled")
    t.eq(names.get("excluded", 0), 0, "... and has no samples at all")

    fraw = wp.read_raw(fl)
    t.eq(fraw.meta.get("flush"), "1", "wallprof_flush wrote a profile")
    t.check(0 < fraw.samples() < raw.samples(),
            "the flushed profile holds what was sampled so far (%d of %d)" % (
                fraw.samples(), raw.samples()))

    raw2 = wp.read_raw(p2)
    t.eq(raw2.meta.get("mode"), "wall", "a second start makes a new profile with new settings")
    p2_ = wp.load(p2)
    t.check(p2_.through("second_fn").total() > 100, "the second profile has the second work")
    t.eq(p2_.through("main_fn").total(), 0, "and none of the first profile's")


wp.main(main)
