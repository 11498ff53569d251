# SPDX-License-Identifier: MIT
"""The text report's header, flat profile and call graph, on report_flat: a program whose
hottest function and line it tells us itself (WP_TRUTH), checked against that truth and, for
exact counts, against the folded output of the same profile."""

import os
import re
import shutil
import subprocess

import reportlib as rl
import wplib as wp


def main(t):
    exe = rl.target("report_flat")
    if not wp.require_built(exe):
        return
    prof, truth_path = wp.tmp_path("flat.prof"), wp.tmp_path("flat.truth")
    # cpu mode: the truth is CPU time, and a busy machine would stretch the loops' wall time
    # unevenly
    r = wp.wallprof(["--mode=cpu", "--hz=1000", "-q", "-o", prof, "--", exe, "1"],
                    env={"WP_TRUTH": truth_path}, timeout=120)
    t.eq(r.returncode, 0, "wallprof exits with the program's status 0", r.describe())
    truth = wp.read_truth(truth_path)
    rep = rl.TextReport(r.stdout)
    folded = wp.load(prof)
    n = folded.total()
    selfc, totalc = folded.self_counts(), folded.total_counts()
    t.note("%d samples; folded top:\n%s" % (n, folded.top(6)))

    # -- header --------------------------------------------------------------------------------
    t.check(rep.header_line("RUN", exe) is not None, "header names the command", r.stdout[:800])
    t.check(rep.header_line("RUN", "exited with status 0") is not None,
            "header gives the exit status", r.stdout[:800])
    t.check(rep.header_line("CONFIG", "mode cpu") is not None, "header gives the mode")
    t.check(rep.header_line("CONFIG", "rate asked 1,000 Hz; delivered") is not None and
            rep.header_line("CONFIG", "samples per CPU-second") is not None,
            "header gives the rate asked (with a thousands separator) and delivered per "
            "CPU-second")
    t.check(rep.header_line("RUN", "wall time") and rep.header_line("RUN", "CPU time"),
            "header gives wall and CPU time")
    stats = "\n".join(l for l in rep.lines if l.startswith("[STATS]"))
    t.check(re.search(r"samples: %s\b" % re.escape("{:,}".format(n)), stats),
            "[STATS] total samples = folded total, with thousands separators", stats)
    for what in ("missed samples:", "truncated stacks:", "thread suspension per sample: p50",
                 "sampler CPU time:", "estimated overhead: ~"):
        t.check(what in stats, "[STATS] has '%s'" % what, stats)
    t.check(n >= 1000 and "," in stats.split("samples:")[1].split()[0],
            "more than 1,000 samples, printed as 1,xxx", stats)
    t.eq(rl.long_lines(r.stdout), [], "no line of the report is longer than 100 columns")

    # -- flat profile ----------------------------------------------------------------------------
    names = [row.name for row in rep.flat]
    t.eq(names[:3], ["hot_loop", "mid_loop", "cold_loop"],
         "flat profile: the three loops first, hottest first", r.stdout)
    spent = sum(truth["cpu_ns." + f] for f in ("hot_loop", "mid_loop", "cold_loop"))
    for f in ("hot_loop", "mid_loop", "cold_loop"):
        row = rep.flat_row(f)
        if not t.check(row is not None, "flat profile has a row for %s" % f):
            continue
        t.eq(row.source, "report_flat.c:%d" % int(truth["line." + f]),
             "%s: file:line is the loop's line the target reports" % f)
        t.eq(row.module, "report_flat", "%s: module" % f)
        t.eq(row.samples, selfc[f], "%s: samples = its self samples in the folded output" % f)
        t.near(row.self_pct, 100.0 * selfc[f] / n, 0.051, "%s: self %% = samples / total" % f)
        t.near(row.total_pct, 100.0 * totalc[f] / n, 0.051, "%s: total %% (inclusive)" % f)
        # the target's CPU time per loop includes its clock reads (thread_cpu_ns, whose
        # samples are the loop's total but not its self)
        share = 100.0 * truth["cpu_ns." + f] / spent
        t.near(row.total_pct, share, 4.0, "%s: total %% near its true share of the CPU time" % f)
        lo, hi = row.ci
        t.check(lo <= row.self_pct <= hi, "%s: the 95%% CI %.1f-%.1f contains %.1f%%" % (
            f, lo, hi, row.self_pct))
        p = row.samples / n
        half = 196.0 * (p * (1 - p) / n) ** 0.5
        t.near((hi - lo) / 2, half, 0.25 * half + 0.15,
               "%s: CI half-width ~ 1.96 sqrt(p(1-p)/n)" % f)
    t.check(rep.total and rep.total[0] == n, "flat profile's total row = all samples",
            repr(rep.total))
    # functions are name + module (folded output merges clock_gettime of libc and the vDSO):
    # count them from the CSV
    import csv
    import io
    rc = wp.wallprof(["--report", prof, "--format=csv"])
    csv_rows = list(csv.DictReader(io.StringIO(rc.stdout)))
    leaves = len([x for x in csv_rows if int(x["self_samples"])])
    t.check(rep.total and rep.total[2] == leaves and rep.total[1] == len(csv_rows),
            "total row counts the functions with samples and with self samples",
            repr(rep.total))

    # -- call graph ------------------------------------------------------------------------------
    pairs = rl.adjacent_pairs(folded)
    same = rl.adjacent_pairs(folded, same_name=True)
    d = rep.graph_entry("dispatch")
    if t.check(d is not None, "call graph has an entry for dispatch", r.stdout):
        callers = {name: c for name, c, _ in d.callers}
        callees = {name: c for name, c, _ in d.callees}
        t.check("phase_a" in callers, "dispatch is called from phase_a", repr(d.callers))
        t.check("hot_loop" in callees and "mid_loop" in callees,
                "dispatch calls hot_loop and mid_loop", repr(d.callees))
        t.eq(callees.get("hot_loop"), pairs[("dispatch", "hot_loop")],
             "dispatch -> hot_loop samples = samples with that call in the stack")
        t.near(d.total_pct, 100.0 * totalc["dispatch"] / n, 0.051, "dispatch's total %")
    h = rep.graph_entry("hot_loop")
    if t.check(h is not None, "call graph has an entry for hot_loop"):
        t.eq([name for name, _, _ in h.callers], ["dispatch"],
             "hot_loop's only caller is dispatch (no main -> hot_loop edge)")
        own = dict((name, c) for name, c, _ in h.callees)
        t.eq(own.get("(self)"), selfc["hot_loop"], "hot_loop's (self) line = its self samples")
    c = rep.graph_entry("cold_loop")
    if t.check(c is not None, "call graph has an entry for cold_loop"):
        t.eq([name for name, _, _ in c.callers], ["main"], "cold_loop is called from main")
    bad = []

    def edge(a, b):
        # "clock_gettime in [vdso]": another function of the same name (libc's calls vdso's)
        if " in " in a or " in " in b:
            return same.get((a.split(" in ")[0], b.split(" in ")[0]))
        return pairs.get((a, b))
    for g in rep.graph:
        for name, cnt, _ in g.callers:
            if name != "(thread root)" and edge(name, g.name) != cnt:
                bad.append("%s -> %s: %d (folded: %s)" % (name, g.name, cnt, edge(name, g.name)))
        for name, cnt, _ in g.callees:
            if name != "(self)" and edge(g.name, name) != cnt:
                bad.append("%s -> %s: %d (folded: %s)" % (g.name, name, cnt, edge(g.name, name)))
    t.eq(bad, [], "every call graph edge exists in the stacks, with the same sample count")
    t.check(len(rep.graph) <= 10, "call graph: at most 10 functions")

    # -- re-report: same text without the exit status; --report-output; --top ------------------
    r2 = wp.wallprof(["--report", prof])
    t.eq(r2.returncode, 0, "--report exits 0", r2.describe())
    rep2 = rl.TextReport(r2.stdout)
    t.eq([x.name for x in rep2.flat], names, "--report gives the same flat profile")
    out_file = wp.tmp_path("report.txt")
    r3 = wp.wallprof(["--report", prof, "--report-output", out_file])
    t.check(r3.returncode == 0 and r3.stdout == "" and os.path.exists(out_file)
            and open(out_file).read() == r2.stdout,
            "--report-output writes the same report to the file", r3.describe())
    r4 = wp.wallprof(["--report", prof, "--top=2"])
    rep4 = rl.TextReport(r4.stdout)
    t.eq(len(rep4.flat), 2, "--top=2 lists two functions")
    if t.check(rep4.other is not None, "--top=2: an (other - N functions) row", r4.stdout):
        t.eq(rep4.other[2], leaves - 2, "(other - N functions) counts the rest")
        t.eq(rep4.other[1], n - sum(x.samples for x in rep4.flat),
             "(other) samples = all samples minus the rows shown")
    t.check("top 2 of %d functions" % leaves in rep4.title("FLAT"), "the title says top 2 of N",
            rep4.title("FLAT"))
    t.check("(other" not in r2.stdout or len(rep2.flat) == 20, "no (other) row when all fit")

    # -- few samples: a warning with advice ------------------------------------------------------
    few = wp.tmp_path("few.prof")
    r5 = wp.wallprof(["--hz=20", "-q", "-o", few, "--", exe, "0.3"], timeout=60)
    t.check(r5.returncode == 0 and "[WARNING] only" in r5.stdout and
            "Run longer or raise --hz" in r5.stdout,
            "fewer than 100 samples: a warning to run longer or raise --hz", r5.stdout[:1500])
    t.check("[WARNING] only" not in r.stdout, "no few-samples warning with %d samples" % n)
    t.check(re.search(r"^\[CONFIG\]  mode wall: .*\n\[CONFIG\]  rate asked 20 Hz; delivered "
                      r"[\d,]+ ticks/s, [\d,]+ samples per thread-second$", r5.stdout, re.M),
            "wall mode (the default): the header gives ticks/s and samples per thread-second",
            r5.stdout[:800])

    # -- a stripped program: rows named module+0xoffset ------------------------------------------
    stripped = wp.tmp_path("report_flat_stripped")
    shutil.copy(exe, stripped)
    subprocess.run(["strip", stripped], check=True)
    sp = wp.tmp_path("stripped.prof")
    r6 = wp.wallprof(["--hz=500", "-q", "-o", sp, "--", stripped, "0.5"], timeout=60)
    rep6 = rl.TextReport(r6.stdout)
    top = rep6.hottest_code()
    # (the columns may be cut to keep the row within 100 columns: the module's end,
    # "report_flat_str...", and the name's start, "..._flat_stripped+0x1494", when another row
    # has a long source column)
    m = re.match(r"^(.*)\+0x[0-9a-f]+$", top.name) if top is not None else None
    t.check(m and (m.group(1) == "report_flat_stripped" or (
                m.group(1).startswith("...") and "report_flat_stripped".endswith(m.group(1)[3:])))
            and (top.module == "report_flat_stripped" or (
                top.module.endswith("...") and "report_flat_stripped".startswith(top.module[:-3])))
            and top.source == "-",
            "stripped program: the top row is named module+0xoffset, module given, no source",
            r6.stdout[:2500])


wp.main(main)
