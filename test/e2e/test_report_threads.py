# SPDX-License-Identifier: MIT
"""Per-thread sections and --thread, on report_threads: a CPU-bound thread "cruncher", a
sleeping thread "sleeper" and main joining them. Thread names and tids come from the target
(WP_TRUTH); sample counts are checked exactly against the folded output and the raw file."""

import collections
import xml.etree.ElementTree as ET

import reportlib as rl
import wpformat
import wplib as wp


def main(t):
    exe = rl.target("report_threads")
    if not wp.require_built(exe):
        return
    prof, truth_path = wp.tmp_path("threads.prof"), wp.tmp_path("threads.truth")
    r = wp.wallprof(["--hz=500", "-q", "-o", prof, "--", exe, "1"],
                    env={"WP_TRUTH": truth_path}, timeout=120)
    t.eq(r.returncode, 0, "the run exits 0", r.describe())
    truth = wp.read_truth(truth_path)
    tids = {name: int(truth["tid." + name]) for name in ("main", "cruncher", "sleeper")}
    folded = wp.load(prof)
    per = {tid: n for (_, tid), n in folded.threads().items()}
    raw = wp.read_raw(prof)
    # a waiting sample (issue 20's one definition): of a stack flagged waiting, or a running
    # stack's share that waited for a CPU (its WAIT records of the cpu pseudo call, capped at
    # its count)
    cpu = collections.Counter()
    for w in raw.waits:
        if w["nr"] == wpformat.WAIT_NR_CPU:
            cpu[w["stack_id"]] += w["count"]
    waiting = collections.Counter()
    for s in raw.stacks:
        if s["flags"] & wp.STACK_WAITING:
            waiting[s["tid"]] += s["count"]
        else:
            waiting[s["tid"]] += min(s["count"], cpu[s["id"]])
    n = folded.total()
    t.note("samples per thread: %r" % folded.threads())

    rep = rl.TextReport(r.stdout)
    t.eq(rl.long_lines(r.stdout), [], "no line longer than 100 columns")
    t.check("THREADS" in rep.sections, "the report has a THREADS section", r.stdout[-3000:])
    names = [s.name for s in rep.threads]
    t.check("cruncher" in names and "sleeper" in names, "sections for cruncher and sleeper",
            repr(names))
    counts = [s.samples for s in rep.threads]
    t.eq(counts, sorted(counts, reverse=True), "threads sorted by samples, most first")
    for s in rep.threads:
        t.eq(s.samples, per.get(s.tid), "%s (tid %d): samples = its folded samples" % (s.name,
                                                                                    s.tid))
        t.near(s.share, 100.0 * s.samples / n, 0.051, "%s: share of the process" % s.name)
        if s.samples:
            t.near(s.waiting, 100.0 * waiting[s.tid] / s.samples, 0.051,
                   "%s: waiting %% = its samples flagged waiting or waiting for a CPU" % s.name)
            t.near(s.running + s.waiting, 100.0, 0.11, "%s: running + waiting = 100%%" % s.name)
    for name in ("cruncher", "sleeper"):
        s = rep.thread(name)
        if s:
            t.eq(s.tid, tids[name], "%s's section gives its tid" % name)
    c, sl = rep.thread("cruncher"), rep.thread("sleeper")
    if c and sl:
        # (its wait for a CPU, [wait cpu runqueue], may come first on a loaded machine)
        code = [x for x in c.rows if not x[2].startswith("[wait ")]
        t.check(code and code[0][2] == "crunch_numbers",
                "cruncher's top function is crunch_numbers", repr(c.rows))
        # the text report's leaves: a share of crunch_numbers' samples that waited for a CPU
        # is its leaf [wait cpu runqueue] (issue 20), as in folded --wait-leaves=on
        lf = wp.wallprof(["--report", prof, "--format=folded", "--per-thread",
                          "--wait-leaves=on"])
        leaves = wp.Profile.from_folded(lf.stdout, per_thread=True)
        t.check(code and code[0][1] == leaves.thread(tids["cruncher"]).self_counts()[
            "crunch_numbers"], "cruncher's row counts its own samples only",
            "%r; folded with leaves: %d" % (c.rows, leaves.thread(
                tids["cruncher"]).self_counts()["crunch_numbers"]))
        t.check(sl.rows and "sleep" in sl.rows[0][2],
                "sleeper's top function is a sleep call", repr(sl.rows))
        t.check(len(c.rows) <= 5 and len(sl.rows) <= 5, "at most 5 functions a thread")
        t.check(sl.waiting >= 90.0, "sleeper is waiting (%.1f%%)" % sl.waiting)
        t.check(c.running > sl.running + 30, "cruncher runs more than sleeper (%.1f%% vs %.1f%%)"
                % (c.running, sl.running))

    # -- --thread=NAME -------------------------------------------------------------------------
    cn = per[tids["cruncher"]]
    r2 = wp.wallprof(["--report", prof, "--thread=cruncher"])
    rep2 = rl.TextReport(r2.stdout)
    t.eq(r2.returncode, 0, "--thread=cruncher exits 0", r2.describe())
    filt = rep2.header_line("FILTER")
    t.check(filt and "--thread=cruncher: %s of %s samples" % ("{:,}".format(cn), "{:,}".format(n))
            in filt, "the [FILTER] line gives the thread's samples of all", repr(filt))
    t.check(rep2.hottest_code() and rep2.hottest_code().name == "crunch_numbers",
            "--thread=cruncher: crunch_numbers tops the flat profile")
    t.check(rep2.total and rep2.total[0] == cn, "--thread=cruncher: the flat total is its samples",
            repr(rep2.total))
    t.check("wait_for_input" not in r2.stdout, "--thread=cruncher: nothing of sleeper's")
    t.eq([s.name for s in rep2.threads], ["cruncher"], "--thread=cruncher: one thread section")
    stats = rep2.header_line("STATS", "samples:")
    t.check(stats and "from 1 thread;" in stats, "--thread: [STATS] counts the one thread",
            repr(stats))

    # -- --thread=TID ----------------------------------------------------------------------------
    r3 = wp.wallprof(["--report", prof, "--thread=%d" % tids["sleeper"]])
    rep3 = rl.TextReport(r3.stdout)
    t.eq([s.tid for s in rep3.threads], [tids["sleeper"]], "--thread=TID: that thread only")
    t.check("crunch_numbers" not in r3.stdout, "--thread=TID: nothing of cruncher's")
    t.check(rep3.graph_entry("wait_for_input") is not None or
            any(g.name == "wait_for_input" or any(x[0] == "wait_for_input" for x in g.callers)
                for g in rep3.graph),
            "--thread=TID: the call graph shows the sleeper's functions", r3.stdout[-2500:])

    r4 = wp.wallprof(["--report", prof, "--thread=nosuch"])
    t.check(r4.returncode == 1 and "no thread named or numbered 'nosuch'" in r4.stderr,
            "--thread=nosuch: exit 1 with a message", r4.describe())

    # -- csv and svg honour --thread and --per-thread ----------------------------------------------
    import csv
    import io
    r5 = wp.wallprof(["--report", prof, "--thread=cruncher", "--format=csv"])
    rows = list(csv.DictReader(io.StringIO(r5.stdout)))
    byname = {row["function"]: row for row in rows}
    cf = folded.thread(tids["cruncher"])
    t.check("crunch_numbers" in byname and int(byname["crunch_numbers"]["self_samples"]) ==
            cf.self_counts()["crunch_numbers"], "csv --thread=cruncher: crunch_numbers' samples")
    t.check("wait_for_input" not in byname, "csv --thread=cruncher: nothing of sleeper's")
    t.eq(sum(int(row["self_samples"]) for row in rows), cn, "csv --thread: self samples add up")

    r6 = wp.wallprof(["--report", prof, "--format=svg", "--per-thread"])
    try:
        root = ET.fromstring(r6.stdout)
        titles = [e.text or "" for e in root.iter("{http://www.w3.org/2000/svg}title")]
    except ET.ParseError as e:
        titles = []
        t.fail("svg --per-thread is well-formed XML", str(e))
    t.check(any(x.startswith("[cruncher tid=%d]" % tids["cruncher"]) for x in titles) and
            any(x.startswith("[sleeper tid=%d]" % tids["sleeper"]) for x in titles),
            "svg --per-thread: a [NAME tid=N] root per thread", repr(titles[:8]))
    r7 = wp.wallprof(["--report", prof, "--format=svg", "--thread=sleeper"])
    t.check(r7.returncode == 0 and "wait_for_input" in r7.stdout and
            "crunch_numbers" not in r7.stdout, "svg --thread=sleeper: sleeper's stacks only")

    # -- cpu mode: no running/waiting split, the busy thread dominates -----------------------------
    cp = wp.tmp_path("threads-cpu.prof")
    r8 = wp.wallprof(["--mode=cpu", "--hz=500", "-q", "-o", cp, "--", exe, "1"], timeout=120)
    rep8 = rl.TextReport(r8.stdout)
    c8 = rep8.thread("cruncher")
    t.check(rep8.header_line("CONFIG", "mode cpu") and "samples per CPU-second" in r8.stdout,
            "cpu mode: header says so and gives samples per CPU-second", r8.stdout[:800])
    t.check(c8 is not None and c8.running is None and c8.share >= 90.0,
            "cpu mode: cruncher has most samples and no running/waiting split",
            r8.stdout[-1500:])


wp.main(main)
