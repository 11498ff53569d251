# SPDX-License-Identifier: MIT
"""cxx_frames: stacks must be whole through C++ frames that carry exception-handling data
(a personality routine and an LSDA in their CIE, "zPLR": any function with a destructor to run
or a try/catch), just as through plain frames. cxx_frames spends a third of its time in each of
main -> with_dtor -> spin, main -> with_catch -> spin, main -> plain -> spin_nothrow.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wplib as wp  # noqa: E402

HZ = 1000


def main(t):
    exe = os.path.join(wp.build_dir(), "test", "e2e", "cxx_frames")
    prof = wp.tmp_path("cxx_frames.prof")
    r = wp.run_preloaded([exe, "1.5"], env=wp.preload_env(hz=HZ, out=prof), timeout=60)
    if not t.eq(r.returncode, 0, "cxx_frames exits 0 under the agent", r.describe()):
        return
    raw = wp.read_raw(prof)
    p = wp.load(prof)
    total = p.total()
    t.check(total >= 100, "samples: %d (at most %d at %d Hz)" % (total, HZ * 1.5, HZ),
            lambda: repr(raw.meta))
    dump = lambda: p.sample_lines(10)
    for caller, leaf in (("with_dtor()", "spin()"), ("with_catch()", "spin()"),
                         ("plain()", "spin_nothrow()")):
        s = p.filter(lambda n, tid, f: len(f) >= 2 and f[-2:] == (caller, leaf))
        anywhere = p.filter(lambda n, tid, f: caller in f)
        whole = s.filter(lambda n, tid, f: f[0] == "_start" and "main" in f)
        t.check(anywhere.total() >= 0.15 * total,
                "%s -> %s: %d samples of %d" % (caller, leaf, anywhere.total(), total), dump)
        t.check(s.total() and whole.total() >= 0.99 * s.total(),
                "%s -> %s: stacks reach main and _start: %d of %d" % (caller, leaf,
                                                                     whole.total(), s.total()),
                lambda: anywhere.sample_lines(5))
    t.check(raw.truncated() <= 0.01 * raw.samples(),
            "truncated unwinds: %d of %d samples" % (raw.truncated(), raw.samples()))


wp.main(main)
