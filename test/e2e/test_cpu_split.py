# SPDX-License-Identifier: MIT
"""cpu_split: a single CPU-bound thread with a known split of self time (measured by the
target itself with CLOCK_THREAD_CPUTIME_ID) across leaves reached through distinct callers,
one of them in a shared library. In wall and cpu mode at 1000 Hz, through the CLI:

  * each function's self share is within 2 percentage points of the truth;
  * leaf_mul's samples are split between its callers work_a and work_b as the truth says;
  * stacks are complete: rooted at _start and passing through main, through -O2 code without
    frame pointers, and through libcpu_split_lib.so (work_c -> lib_work -> lib_leaf_mul).

cpu mode again with a 3 ms nap after each call (CPU_SPLIT_NAP_US; the process idles ~3/4 of
the time): the sampler's task skips the ticks that find the program's process CPU clock
unmoved (sampler.c, program_idle), and must lose nothing by it. The same checks hold (the
few samples in the nap left out like the clock reads; shares within 8 points, as a thread on
a CPU a quarter of the time gives a quarter as many independent samples), at most 5% of the
samples are in the nap (75-80% on the code before: a tick that found the thread blocked took
its stack from /proc, in nanosleep, for the CPU time it had run in the call), the samples are
at least 80% of the program's CPU time at 1000 Hz, and META ticks_idle shows the skip at
work: at least 35% of the ticks (0 on the code before it, which had no such count).

cpu mode's samples in the target's own clock reads are at most 8% (perf finds 1-2% there):
napping, and 15% napping again with the program, the command and the sampler all on one CPU
(shared with the suite's other tests).
The code before had 21-31% and 56% there (sampler.c's short_slice, sample.c's ripe credit).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wplib as wp  # noqa: E402

SECONDS = float(os.environ.get("CPU_SPLIT_SECONDS", "3"))
HZ = 1000
TOL = 0.02  # share, i.e. 2 percentage points


NAP_US = 3000
NAP_SECONDS = 1.0  # of CPU: about 4 s of wall time with the naps


def run_label(mode, nap_us, one_cpu):
    return mode + (", napping" if nap_us else "") + (", one CPU" if one_cpu else "")


def one_mode(t, mode, nap_us=0, one_cpu=False):
    label = run_label(mode, nap_us, one_cpu)
    name = "cpu_split.%s%s%s" % (mode, ".nap" if nap_us else "", ".one" if one_cpu else "")
    prof, truth_path = wp.tmp_path(name + ".prof"), wp.tmp_path(name + ".truth")
    env = {"WP_TRUTH": truth_path}
    if nap_us:
        env["CPU_SPLIT_NAP_US"] = str(nap_us)
    mask = os.sched_getaffinity(0)
    if one_cpu:  # the program, the command and the sampler's task share one CPU
        os.sched_setaffinity(0, {min(mask)})
    try:
        r = wp.record([wp.target("cpu_split"), str(NAP_SECONDS if nap_us else SECONDS)], prof,
                      mode=mode, hz=HZ, env=env, timeout=120)
    finally:
        os.sched_setaffinity(0, mask)
    mode_name, mode = mode, label  # the checks' labels name the run
    if not t.eq(r.returncode, 0, "[%s] wallprof -- cpu_split exits 0" % mode, r.describe()):
        return None
    # with a folded report on stdout, the program's own output goes to stderr
    t.check("cpu_split:" in r.stderr and "cpu_split:" not in r.stdout,
            "[%s] the program's own output is there, on stderr, out of the report" % mode,
            r.stdout[:300] + r.stderr[:300])
    truth = wp.read_truth(truth_path)
    total_ns = truth["total_ns"]

    raw = wp.read_raw(prof)
    t.eq(raw.meta.get("mode"), mode_name, "[%s] the profile says mode=%s" % (mode, mode_name))
    t.eq(raw.meta.get("hz"), str(HZ), "[%s] the profile says hz=%d" % (mode, HZ))
    expected = HZ * total_ns / 1e9
    t.check(raw.samples() >= (0.8 if nap_us else 0.5) * expected,
            "[%s] samples: %d of ~%.0f expected at %d Hz" % (mode, raw.samples(), expected, HZ),
            lambda: "META: %r" % raw.meta)
    if nap_us:
        ticks, idle = int(raw.meta.get("ticks", "0")), int(raw.meta.get("ticks_idle", "0"))
        # each ~4.2 ms round has ~1 tick in the call and one after it that sees the call's
        # end: about half the ticks are idle (seen 48-55%)
        t.check(idle >= 0.35 * ticks, "[%s] ticks that found nothing had run, skipped: %d of "
                "%d (>= 35%%)" % (mode, idle, ticks), lambda: "META: %r" % raw.meta)
    t.check(raw.truncated() <= 0.01 * raw.samples(),
            "[%s] truncated unwinds: %d of %d samples (<= 1%%)" % (mode, raw.truncated(),
                                                                   raw.samples()))

    p = wp.load(prof)
    total = p.total()
    t.eq(len(p.threads()), 1, "[%s] one thread in the profile" % mode, str(p.threads()))
    t.check(total > 0, "[%s] the folded report has samples" % mode)
    if not total:
        return None
    dump = lambda: "top self:\n%s\nheaviest stacks:\n%s" % (p.top(12), p.sample_lines(12))

    # --- self shares against the truth --------------------------------------------------
    # Shares of the WORK: the target's own accounting (clock_gettime in thread_cpu_ns) is left
    # out on both sides. Its true CPU cost is tiny, but on a busy machine a thread is often
    # preempted on the way out of that system call, and wall mode rightly shows it waiting
    # there; the truth, which is CPU time, cannot see that.
    instrument = p.through("thread_cpu_ns").total()
    naps = p.through("nap").total()
    if nap_us:
        # CPU time run in the calls, not in the nap that follows them (the code before
        # this check's change counted 75-80% of the samples there)
        t.check(naps <= 0.05 * total, "[%s] samples in the nap: %d of %d (<= 5%%)"
                % (mode, naps, total))
    total = total - instrument - naps
    # Napping, a thread is on a CPU at about a quarter of the ticks, each paying out about
    # four intervals of its CPU time: a quarter as many independent draws. Shares are held
    # to a looser bar there (seen within 3.6 points, under load too).
    tol = TOL if not nap_us else 0.08
    # Wall mode is held to the calls' wall time: on a loaded machine (the suite runs tests
    # side by side) a thread preempted inside a call waits there, and wall mode rightly
    # counts it; CPU time cannot see that (seen 3.7 points off at load 6 against CPU time).
    kind = "wall." if mode_name == "wall" else "self."
    total_ns = sum(v for k, v in truth.items() if k.startswith(kind))
    t.note("[%s] samples in the target's own clock_gettime: %d" % (mode, instrument))
    if mode_name == "cpu":
        # perf: 1-2% of the CPU time (the system calls included). The code before this
        # check had 21-31% there napping and 56% on one CPU: a sampler waiting for the
        # program's CPU got it when the program's clock read ended its slice, and found it
        # there; and credit was paid at the tick that saw the clock read move the clock.
        # On one CPU, the suite's other tests share it: a thread they preempt at its clock
        # read is still found there, so that run's bar is looser (still far from 56%).
        bar = 0.15 if one_cpu else 0.08
        t.check(0 < instrument <= bar * p.total(), "[%s] samples in the target's clock "
                "reads: %d of %d (some, as the clock reads run; <= %d%%)"
                % (mode, instrument, p.total(), bar * 100), dump)
    selfc = p.self_counts()
    callers = p.callers_of("leaf_mul")
    measured = {
        "leaf_mul": selfc["leaf_mul"] / total,
        "leaf_mul<-work_a": p.filter(lambda n, tid, f: f[-2:] == ("work_a", "leaf_mul")).total() / total,
        "leaf_mul<-work_b": p.filter(lambda n, tid, f: f[-2:] == ("work_b", "leaf_mul")).total() / total,
        "hash_loop": selfc["hash_loop"] / total,
        "lib_leaf_mul": selfc["lib_leaf_mul"] / total,
    }
    expect = {
        "leaf_mul": (truth[kind + "leaf_mul.work_a"] + truth[kind + "leaf_mul.work_b"]) / total_ns,
        "leaf_mul<-work_a": truth[kind + "leaf_mul.work_a"] / total_ns,
        "leaf_mul<-work_b": truth[kind + "leaf_mul.work_b"] / total_ns,
        "hash_loop": truth[kind + "hash_loop"] / total_ns,
        "lib_leaf_mul": truth[kind + "lib_leaf_mul"] / total_ns,
    }
    errors = {}
    for k in expect:
        errors[k] = 100.0 * (measured[k] - expect[k])
        t.near(measured[k], expect[k], tol, "[%s] self share of %s" % (mode, k), dump)
    # the callers themselves do (almost) nothing but call
    for f in ("work_a", "work_b", "work_c", "lib_work", "do_hash"):
        t.check(selfc[f] / total <= TOL, "[%s] %s's self share %.2f%% is ~0" %
                (mode, f, 100.0 * selfc[f] / total), dump)

    # --- callers recovered ----------------------------------------------------------------
    both = callers["work_a"] + callers["work_b"]
    t.check(callers["work_a"] > 0 and callers["work_b"] > 0,
            "[%s] leaf_mul appears under both work_a (%d) and work_b (%d)"
            % (mode, callers["work_a"], callers["work_b"]), dump)
    t.check(both >= 0.99 * sum(callers.values()),
            "[%s] leaf_mul's callers are work_a/work_b: %r" % (mode, dict(callers)), dump)
    if both:
        truth_a = truth[kind + "leaf_mul.work_a"] / (truth[kind + "leaf_mul.work_a"] +
                                                   truth[kind + "leaf_mul.work_b"])
        t.near(callers["work_a"] / both, truth_a, 0.03 if not nap_us else 0.10,
               "[%s] leaf_mul's split between work_a and work_b" % mode, dump)
    lib_callers = p.callers_of("lib_leaf_mul")
    t.check(lib_callers["lib_work"] >= 0.99 * max(1, sum(lib_callers.values())),
            "[%s] lib_leaf_mul is called by lib_work: %r" % (mode, dict(lib_callers)), dump)
    lw = p.callers_of("lib_work")
    t.check(lw["work_c"] >= 0.99 * max(1, sum(lw.values())),
            "[%s] lib_work (in the shared library) is called by work_c: %r" % (mode, dict(lw)),
            dump)

    # --- complete stacks ------------------------------------------------------------------
    complete = p.filter(lambda n, tid, f: len(f) >= 2 and f[0] == "_start" and "main" in f)
    t.check(complete.total() >= 0.99 * total,
            "[%s] stacks rooted at _start through main: %d of %d" % (mode, complete.total(),
                                                                     total),
            lambda: "other roots: %r\n%s" % (dict(p.roots()), dump()))
    for leaf, path in (("leaf_mul", ("main", "work_a", "leaf_mul")),
                       ("lib_leaf_mul", ("main", "work_c", "lib_work", "lib_leaf_mul"))):
        s = p.filter(lambda n, tid, f: f and f[-1] == leaf)
        good = s.filter(lambda n, tid, f: all(x in f for x in path))
        if leaf == "leaf_mul":
            good = s.filter(lambda n, tid, f: "main" in f and f[-2] in ("work_a", "work_b"))
        t.check(s.total() and good.total() >= 0.99 * s.total(),
                "[%s] %s's stacks are main -> ... -> %s: %d of %d" % (mode, leaf, leaf,
                                                                      good.total(), s.total()),
                dump)
    return errors


def main(t):
    results = {}
    for mode, nap_us, one_cpu in (("wall", 0, False), ("cpu", 0, False), ("cpu", NAP_US, False),
                                  ("cpu", NAP_US, True)):
        errs = one_mode(t, mode, nap_us, one_cpu)
        if errs:
            results[run_label(mode, nap_us, one_cpu)] = errs
    for mode, errs in results.items():
        t.note("%s mode, error in percentage points (profile - truth): %s" % (
            mode, ", ".join("%s %+.2f" % (k, v) for k, v in errs.items())))


wp.main(main)
