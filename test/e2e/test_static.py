# SPDX-License-Identifier: MIT
"""A statically linked program (cpu_split_static: cpu_split's code linked with -static, no
PT_INTERP) under `wallprof -- PROGRAM`: the command says in one line that it profiles it from
outside, and does, from its first instruction: its output and exit status are its own, and
its self shares are within 2 points of the truth it measures itself, in cpu and in wall mode
at 1000 Hz: the bar test_cpu_split.py holds the agent to on the same code.

Wall mode runs with a spinner pinned to the program's CPU, so the program waits for that CPU
about half of its time whatever the machine's load: a runnable thread must be counted where
it was preempted, as the agent's signal lands. The sampler counted a preempted thread with
its clock's newest periodic record, up to half an interval of its CPU time old, so a thread
preempted just after a call returned was counted in that call for as long as it waited:
4.4 points off at load 5-20 (6.6 in one run at load 11), where the agent stayed within 2.
Now each tick arms the thread's clock for one record, which comes 10 us of its CPU time
later: as it resumes when it waits (docs/design.md, "The outside sampler"). One sign of it:
a thread preempted on its way out of a system call is seen at the call's return, as the
agent sees it: cpu_split's clock reads (thread_cpu_ns is a system call) hold about a tenth of
the samples with the spinner, for the agent and now here (0.2% before: this check failed on
the code before the change, which counted such waits in the previous call's leaf).
The shares are of the samples inside the four timed calls (the truth's whole: the calls'
time), the program's clock reads left out on both sides (as test_cpu_split.py does; mono_ns
too: the record comes up to 10 us after the thread resumes, past the system call's return,
and so may fall past the call's end, in main's loop: 1-3% of the samples with the spinner,
which counted in the whole made every share 1-2 points low)."""
import os
import subprocess

import wplib as wp

SECONDS = "3"
HZ = 1000
TOL = {"cpu": 0.02, "wall": 0.02}
# wall mode with the spinner: the samples in the program's clock reads, at least (measured: the
# agent 9-10%, the outside sampler 10-14% and 2.8% once in a clean run under the suite's load,
# the code before the change 0.2%)
CLOCK_READS_MIN = 0.015
# the calls cpu_split times (each between its clock reads)
CALLS = ("work_a", "work_b", "do_hash", "work_c")


def pinned_spinner():
    """Pins this process (so the command and the program it starts) to one CPU and starts a
    spinner there. Returns (spinner, CPUs to restore)."""
    cpus = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {max(cpus)})
    spin = subprocess.Popen(["sh", "-c", "while :; do :; done"], start_new_session=True)
    return spin, cpus


def one_mode(t, mode):
    prof = wp.tmp_path("static.%s.prof" % mode)
    truth_path = wp.tmp_path("static.%s.truth" % mode)
    spin, cpus = pinned_spinner() if mode == "wall" else (None, None)
    try:
        r = wp.wallprof(["--mode=%s" % mode, "--hz=%d" % HZ, "-o", prof, "-f", "folded", "--",
                         wp.target("cpu_split_static"), SECONDS], env={"WP_TRUTH": truth_path},
                        timeout=120)
    finally:
        if spin:
            spin.kill()
            spin.wait()
            os.sched_setaffinity(0, cpus)
    t.eq(r.returncode, 0, "[%s] wallprof -- cpu_split_static exits as it does (0)" % mode,
         r.describe())
    said = [x for x in r.stderr.splitlines() if "statically linked" in x]
    t.eq(len(said), 1, "[%s] one line says it is statically linked" % mode, r.stderr)
    t.check("cpu_split:" in r.stderr, "[%s] the program's own output is there" % mode)
    raw = wp.read_raw(prof)
    t.eq(raw.meta.get("static"), "1", "[%s] the profile says static=1" % mode)
    t.eq(raw.meta.get("exit_status"), "0", "[%s] the profile has its exit status" % mode)
    truth = wp.read_truth(truth_path)
    p = wp.load(prof)
    clock_reads = p.filter(lambda n, tid, f: "thread_cpu_ns" in f or "mono_ns" in f).total()
    # the truth's whole is the time inside the four calls: samples outside them (main's loop,
    # jitter, the start) are left out, as are the clock reads inside them
    calls = p.filter(lambda n, tid, f: any(c in f for c in CALLS) and
                     "thread_cpu_ns" not in f and "mono_ns" not in f)
    total = calls.total()
    t.check(total >= 0.5 * HZ * float(SECONDS), "[%s] samples: %d" % (mode, total))
    if total <= 0:
        return
    if mode == "wall":
        t.check(clock_reads >= CLOCK_READS_MIN * p.total(),
                "[wall] a thread preempted on its way out of a system call is seen there: "
                "%d of %d samples in the program's clock reads (>= %d%%)"
                % (clock_reads, p.total(), 100 * CLOCK_READS_MIN))
    kind = "wall." if mode == "wall" else "self."
    total_ns = sum(v for k, v in truth.items() if k.startswith(kind))
    selfc = p.self_counts()
    dump = lambda: "top self:\n%s" % p.top(12)
    for name, keys in (("leaf_mul", ("leaf_mul.work_a", "leaf_mul.work_b")),
                       ("hash_loop", ("hash_loop",)), ("lib_leaf_mul", ("lib_leaf_mul",))):
        expect = sum(truth[kind + k] for k in keys) / total_ns
        t.near(selfc[name] / total, expect, TOL[mode], "[%s] self share of %s" % (mode, name),
               dump)
    callers = p.callers_of("leaf_mul")
    both = callers["work_a"] + callers["work_b"]
    if both:
        want = truth[kind + "leaf_mul.work_a"] / (truth[kind + "leaf_mul.work_a"] +
                                                 truth[kind + "leaf_mul.work_b"])
        t.near(callers["work_a"] / both, want, 0.03 if mode == "cpu" else 0.05,
               "[%s] leaf_mul's split between work_a and work_b" % mode, dump)
    complete = p.filter(lambda n, tid, f: len(f) >= 2 and f[0] == "_start" and "main" in f)
    t.check(complete.total() >= 0.99 * p.total(),
            "[%s] stacks rooted at _start through main: %d of %d" % (mode, complete.total(),
                                                                     p.total()), dump)


def main(t):
    for mode in ("cpu", "wall"):
        one_mode(t, mode)


wp.main(main)
