# SPDX-License-Identifier: MIT
"""xz -T2, a real program whose worker threads block every signal while they compute (issue
18, point 3: under cpu mode it gave 71 samples for 42 CPU-seconds, 41,117 missed as
blocked_signal). liblzma starts its workers with every signal blocked; the agent never
signals them and samples them with a perf clock of their own (perfclock.c).

Generated text (a few MB of words, ~2 s of CPU for `xz -T2 -6 --block-size=1MiB`: two
workers, one 1 MiB block each at a time) compressed unprofiled, then:
  * under a bare LD_PRELOAD in cpu mode at 200 Hz, as the issue ran it: the compressed bytes
    are the unprofiled run's; the worker threads' samples stand for >= 80% of their CPU time
    (the process's CPU time from its META, less the sampler's and the main thread's samples'
    weight: xz's main thread reads and writes, the workers compute), each worker has samples
    and no "unseen" reason, and at most a few intervals were missed as blocked_signal;
  * through the command in wall mode at 200 Hz: the same bytes, and each worker's time
    budget has its running time (running + waiting for a CPU >= 30%: the workers compute most
    of their life) with no "running time missing" or "unseen" line;
  * through the command in cpu mode with WALLPROF_TEST=no-perf (as where the kernel refuses
    perf events): the same bytes, and the report, which may have no sample at all, says under
    each worker that ran "unseen: N% of its CPU time (...): perf events turned off
    (WALLPROF_TEST=no-perf)", their unseen time adding up to >= 80% of their CPU time.
Skipped when xz is not installed (Debian's xz-utils)."""
import os
import random
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wplib as wp  # noqa: E402

XZ = shutil.which("xz")
ARGS = ["-T2", "-6", "--block-size=1MiB", "-c"]
MB = float(os.environ.get("XZ_WORKERS_MB", "3"))


def make_data(path):
    """Text of random words: compresses like text (xz does real work on it), reproducible."""
    rng = random.Random(18)
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 11)))
             for _ in range(30000)]
    out, size = [], 0
    while size < MB * 1e6:
        line = " ".join(rng.choice(words) for _ in range(12)) + "\n"
        out.append(line)
        size += len(line)
    with open(path, "w") as f:
        f.write("".join(out))


def worker_tids(raw):
    pid = int(raw.meta.get("pid", "0"))
    return [tid for tid in raw.threads if tid != pid]


def cpu_preloaded(t, data, plain):
    prof = wp.tmp_path("xz_workers.cpu.prof")
    env = wp.preload_env(mode="cpu", hz=200, out=prof)
    r = wp.run([XZ] + ARGS + [data], env=env, timeout=180, text=False)
    if not t.eq(r.returncode, 0, "[cpu] xz -T2 under the agent exits 0", r.stderr[-2000:]):
        return
    t.check(r.stdout == plain, "[cpu] the compressed bytes are the unprofiled run's (%d bytes)"
            % len(r.stdout), "profiled %d bytes, unprofiled %d" % (len(r.stdout), len(plain)))
    raw = wp.read_raw(prof)
    m = raw.meta
    pid = int(m.get("pid", "0"))
    interval = 1e9 / 200
    program_cpu = (int(m["cpu_user_ns"]) + int(m["cpu_sys_ns"]) - int(m["sampler_cpu_ns"]))
    main_w = sum(s["weight_ns"] for s in raw.stacks if s["tid"] == pid)
    tids = worker_tids(raw)
    work_w = sum(s["weight_ns"] for s in raw.stacks if s["tid"] in tids)
    work_n = sum(s["count"] for s in raw.stacks if s["tid"] in tids)
    workers_cpu = program_cpu - main_w
    t.note("[cpu] program CPU %.3f s (sampler's left out), main thread's samples %.3f s, "
           "workers' %.3f s in %d samples; perf_clock_threads %s, records %s, lost %s, "
           "missed_blocked_signal %s" % (program_cpu / 1e9, main_w / 1e9, work_w / 1e9, work_n,
                                         m.get("perf_clock_threads"),
                                         m.get("perf_clock_records"),
                                         m.get("perf_clock_lost"),
                                         m.get("missed_blocked_signal")))
    t.check(workers_cpu > 0.5e9, "[cpu] the workers computed for a while: %.2f s"
            % (workers_cpu / 1e9))
    t.check(work_w >= 0.8 * workers_cpu,
            "[cpu] the workers' samples stand for >= 80%% of their CPU time: %.3f of %.3f s"
            % (work_w / 1e9, workers_cpu / 1e9), lambda: "META: %r" % m)
    t.check(work_n * interval >= 0.8 * workers_cpu,
            "[cpu] the workers' samples x interval >= 80%% of their CPU time: %d samples "
            "(%.3f s)" % (work_n, work_n * interval / 1e9))
    with_samples = [tid for tid in tids if raw.threads[tid]["samples"] > 0]
    t.check(len(with_samples) >= 2, "[cpu] at least two worker threads have samples: %r"
            % {tid: raw.threads[tid]["samples"] for tid in tids})
    for tid in tids:
        th = raw.threads[tid]
        t.check(not th["unseen_why"] and not th["flags"] & wp.THREAD_UNSAMPLEABLE,
                "[cpu] worker %d is not unsampleable and says nothing unseen" % tid, repr(th))
    missed = int(m.get("missed_blocked_signal", "0"))
    t.check(missed <= 4 * max(1, len(tids)),
            "[cpu] at most a few intervals missed as blocked_signal: %d" % missed)


def wall_command(t, data, plain):
    prof = wp.tmp_path("xz_workers.wall.prof")
    r = wp.run([wp.cli(), "--mode=wall", "--hz=200", "--threads=0", "-q", "-o", prof,
                "--report-output=" + wp.tmp_path("xz_workers.wall.txt"), "--", XZ] + ARGS +
               [data], timeout=180, text=False)
    if not t.eq(r.returncode, 0, "[wall] wallprof -- xz -T2 exits 0", r.stderr[-2000:]):
        return
    t.check(r.stdout == plain, "[wall] the compressed bytes are the unprofiled run's")
    raw = wp.read_raw(prof)
    rep = wp.wallprof(["--report", prof]).stdout
    budgets = wp.time_budgets(rep)
    tids = [tid for tid in worker_tids(raw) if raw.threads[tid]["samples"] >= 20]
    t.check(len(tids) >= 2, "[wall] at least two worker threads have samples")
    for tid in tids:
        b = budgets.get(tid, {})
        busy = b.get("running", 0) + b.get("waiting for a CPU", 0)
        sec = re.search(r"^\S+ \(tid %d\b.*?(?=^\S|\Z)" % tid, rep, re.M | re.S)
        text = sec.group(0) if sec else ""
        t.check(busy >= 30, "[wall] worker %d's budget has its running time: running %.1f%%, "
                "waiting for a CPU %.1f%%" % (tid, b.get("running", 0),
                                              b.get("waiting for a CPU", 0)), text[:600])
        t.check("running time missing" not in text and "unseen:" not in text,
                "[wall] worker %d: nothing missing or unseen" % tid, text[:600])


def no_perf(t, data, plain):
    prof = wp.tmp_path("xz_workers.noperf.prof")
    txt = wp.tmp_path("xz_workers.noperf.txt")
    r = wp.run([wp.cli(), "--mode=cpu", "--hz=200", "-q", "-o", prof, "--report-output=" + txt,
                "--", XZ] + ARGS + [data], env={"WALLPROF_TEST": "no-perf"}, timeout=180,
               text=False)
    if not t.eq(r.returncode, 0, "[no-perf] wallprof -- xz -T2 exits 0", r.stderr[-2000:]):
        return
    t.check(r.stdout == plain, "[no-perf] the compressed bytes are the unprofiled run's")
    with open(txt) as f:
        rep = f.read()
    raw = wp.read_raw(prof)
    m = raw.meta
    workers_cpu = (int(m["cpu_user_ns"]) + int(m["cpu_sys_ns"]) - int(m["sampler_cpu_ns"]) -
                   sum(s["weight_ns"] for s in raw.stacks if s["tid"] == int(m["pid"])))
    unseen = {}
    for tid in worker_tids(raw):
        if not raw.threads[tid]["unseen_ns"]:
            continue
        sec = re.search(r"^\S+ \(tid %d\b.*?(?=^\S|\Z)" % tid, rep, re.M | re.S)
        text = sec.group(0) if sec else ""
        line = re.search(r"^    unseen: (\d+\.\d)% of its CPU time \(([^)]*)\): (.*)$", text, re.M)
        t.check(line and line.group(3) == "perf events turned off (WALLPROF_TEST=no-perf)",
                "[no-perf] worker %d's section says which share of its CPU time went unseen, "
                "and why" % tid, text or rep[-2500:])
        unseen[tid] = raw.threads[tid]["unseen_ns"]
    t.check(len(unseen) >= 2, "[no-perf] at least two workers ran unseen: %r" % unseen)
    t.check(sum(unseen.values()) >= 0.8 * workers_cpu,
            "[no-perf] their unseen time is >= 80%% of their CPU time: %.3f of %.3f s"
            % (sum(unseen.values()) / 1e9, workers_cpu / 1e9))


def main(t):
    if not XZ:
        t.note("skipped: no xz here (Debian's xz-utils)")
        return
    data = wp.tmp_path("xz_workers.txt")
    make_data(data)
    r = wp.run([XZ] + ARGS + [data], timeout=180, text=False)
    if not t.eq(r.returncode, 0, "xz -T2 unprofiled exits 0", r.stderr[-2000:]):
        return
    plain = r.stdout
    t.note("unprofiled: %.1f MB in %.2f s wall" % (len(plain) / 1e6, r.elapsed))
    cpu_preloaded(t, data, plain)
    wall_command(t, data, plain)
    no_perf(t, data, plain)


wp.main(main)
