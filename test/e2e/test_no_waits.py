# SPDX-License-Identifier: MIT
"""WALLPROF_TEST=no-waits (the benchmark's "cost of waits" section compares runs with it and
without it): it must turn off all three parts of issue 13's wait machinery, and nothing else.

Three targets, each run with the default agent and with the hook, wall mode:
- test/targets/waits with 3 threads a tick: lock waiters whose holder is mostly outside the
  tick's subset. Default: WAIT records, and holders sampled for their waiters (META
  holder_samples > 0). no-waits: no WAIT record, META waits = 0, holder_samples = 0.
- test/targets/cpuwait: four threads queued on one CPU. Default: schedstat read for runnable
  samples (META schedstat_reads > 0). no-waits: schedstat_reads = 0.
- test/targets/diskwait: a thread in pread on a file, one taking page faults. Default: their
  state read from /proc (META state_reads > 0). no-waits: state_reads = 0.
In every no-waits run the program is still sampled, waiting samples included (the hook must
price the waits, not the sampling).
"""
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wplib as wp  # noqa: E402

SECONDS = "1.5"


def record(name, argv, no_waits, threads, hz):
    prof = wp.tmp_path("%s-%s.prof" % (name, "off" if no_waits else "on"))
    extra = {"WALLPROF_TEST": "no-waits"} if no_waits else {}
    r = wp.run_preloaded(argv, env=wp.preload_env(mode="wall", hz=hz, threads=threads,
                                                  out=prof, extra=extra), timeout=120)
    return r, prof


def meta(raw, key):
    return int(raw.meta.get(key, -1))


def main(t):
    data_dir = os.path.join(wp.build_dir(), "test", "no-waits-data.%d" % os.getpid())
    os.makedirs(data_dir, exist_ok=True)
    runs = (("waits", [wp.target("waits"), SECONDS], 3, 200, ("waits", "holder_samples")),
            ("cpuwait", [wp.target("cpuwait"), SECONDS], 0, 100, ("schedstat_reads",)),
            ("diskwait", [wp.target("diskwait"), data_dir, SECONDS], 0, 200, ("state_reads",)))
    try:
        for name, argv, threads, hz, keys in runs:
            for no_waits in (False, True):
                label = "%s, %s" % (name, "no-waits" if no_waits else "default")
                r, prof = record(name, argv, no_waits, threads, hz)
                t.check(r.returncode == 0, "%s: the target exits 0" % label, r.describe())
                raw = wp.read_raw(prof)
                waiting = sum(1 for s in raw.stacks if s["flags"] & wp.STACK_WAITING)
                t.check(meta(raw, "samples") > 0 and waiting > 0,
                        "%s: sampled, waiting samples included" % label,
                        "samples=%d, waiting stacks=%d" % (meta(raw, "samples"), waiting))
                for key in keys:
                    v = meta(raw, key)
                    if no_waits:
                        t.check(v == 0, "%s: META %s = 0" % (label, key), str(v))
                    else:
                        t.check(v > 0, "%s: META %s > 0" % (label, key), str(v))
                if no_waits:
                    t.check(not raw.waits, "%s: no WAIT record" % label,
                            "%d WAIT records" % len(raw.waits))
                elif name == "waits":
                    t.check(len(raw.waits) > 0, "%s: WAIT records" % label, "none")
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


wp.main(main)
