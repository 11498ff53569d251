# SPDX-License-Identifier: MIT
"""The command line's errors (each with a helpful message and exit status 2, or 1 for runtime
errors; a number with a space or a sign refused as the agent refuses it in WALLPROF_HZ), the
GNU spellings (-F1000, bundled short flags -qF250 and -qo FILE), the CSV report (well-formed for Python's csv module, quoted where needed, numbers
that agree with the folded output) and long C++ names kept within 100 columns."""

import csv
import io
import os

import reportlib as rl
import wplib as wp

HELP = "Try 'wallprof --help'"


def main(t):
    flat, cxx = rl.target("report_flat"), rl.target("report_cxx")
    if not wp.require_built(flat, cxx):
        return
    prof, truth_path = wp.tmp_path("flat.prof"), wp.tmp_path("flat.truth")
    r = wp.wallprof(["--hz=500", "-q", "-o", prof, "-f", "csv", "--", flat, "0.6"],
                    env={"WP_TRUTH": truth_path}, timeout=120)
    t.eq(r.returncode, 0, "recording report_flat with -f csv exits 0", r.describe())
    truth = wp.read_truth(truth_path)

    # -- usage errors: exit 2, the problem named, a pointer to --help ---------------------------
    usage = [
        (["--bogus", "--", flat], "unknown option: --bogus"),
        (["--hz=0", "--", flat], "sample rate takes a whole number of Hz from 1 to 10000"),
        (["--hz=abc", "--", flat], "sample rate takes a whole number of Hz from 1 to 10000"),
        (["--hz=20000", "--", flat], "sample rate takes a whole number of Hz from 1 to 10000"),
        (["--hz"], "sample rate takes"),
        # numbers as the agent reads WALLPROF_HZ: digits only (strtol would skip the space)
        (["--hz= 5", "--", flat], "sample rate takes a whole number of Hz from 1 to 10000"),
        (["-F", "5 ", "--", flat], "sample rate takes a whole number of Hz from 1 to 10000"),
        (["--top=\t5", "--report", prof], "--top takes a whole number"),
        (["--mode=fast", "--", flat], "--mode takes wall or cpu"),
        (["--format=xml", "--report", prof], "--format takes text, folded, svg, csv"),
        (["--top=0", "--report", prof], "--top takes a whole number"),
        (["--", ], "no command after --"),
        (["--compare", prof], "--compare takes two profile files"),
        (["--report"], "--report takes a profile file"),
        (["--report", prof, "--compare", prof, prof], "do not go together"),
        (["--report", prof, "--", flat], "--report takes no command"),
        (["stray", "--", flat], "unexpected argument"),
        (["--no-report", "--flame-graph", "--", flat], "--no-report records only"),
        (["--no-report", "-f", "csv", "--", flat], "--no-report records only"),
    ]
    for args, msg in usage:
        r = wp.wallprof(args, cwd=wp.tmp_dir())
        t.check(r.returncode == 2 and msg in r.stderr and HELP in r.stderr,
                "wallprof %s: exit 2, says '%s'" % (" ".join(args), msg), r.describe())
    # the agent refuses the same text in its variable, with the same reason
    r = wp.run_preloaded([flat, "0.1"], env={"WALLPROF_HZ": " 5",
                                             "WALLPROF_OUT": wp.tmp_path("spaced.prof")})
    t.check(r.returncode == 0 and "WALLPROF_HZ=' 5' is not valid" in r.stderr and
            "from 1 to 10000" in r.stderr, "WALLPROF_HZ=' 5' is refused by the agent too",
            r.describe())
    r = wp.wallprof([], cwd=wp.tmp_dir())
    t.check(r.returncode == 2 and "Usage:" in r.stderr and "-- COMMAND" in r.stderr,
            "no command at all: exit 2 with the usage", r.describe())
    r = wp.wallprof(["--help"])
    t.check(r.returncode == 0 and "--compare" in r.stdout and "--overhead-test" in r.stdout,
            "--help: exit 0, lists the subcommands")

    no_report(t, flat)

    # -- GNU spellings (getopt_long): a value stuck to its short option, short flags bundled --
    spellings = [
        (["-F1000"], {"hz": "1000"}),
        (["-qF250"], {"hz": "250"}),                     # -q and -F250 in one argument
        (["-F=300"], {"hz": "300"}),                     # the hand parser's spelling, kept
        (["--sample-rate", "400", "--mode", "cpu"], {"hz": "400", "mode": "cpu"}),
    ]
    for i, (args, meta) in enumerate(spellings):
        p = wp.tmp_path("spelling%d.prof" % i)
        r = wp.wallprof(args + ["-q", "-o", p, "-f", "folded", "--", flat, "0.2"], timeout=60)
        got = wp.read_raw(p).meta if r.returncode == 0 and os.path.exists(p) else {}
        t.check(r.returncode == 0 and all(got.get(k) == v for k, v in meta.items()),
                "wallprof %s: recorded with %s" % (" ".join(args), meta),
                "%s\nmeta: %s" % (r.describe(), {k: got.get(k) for k in meta}))
    p = wp.tmp_path("bundled.prof")
    r = wp.wallprof(["-qo", p, "-fcsv", "--", flat, "0.2"], timeout=60)
    t.check(r.returncode == 0 and os.path.exists(p) and r.stdout.startswith("function,module,") and
            "profile saved" not in r.stderr,
            "wallprof -qo FILE -fcsv: quiet, the profile at FILE, a CSV report", r.describe())

    # -- runtime errors: exit 1, the file named and the reason ---------------------------------
    junk, cut = wp.tmp_path("junk.prof"), wp.tmp_path("cut.prof")
    with open(junk, "w") as f:
        f.write("this is not a profile\n")
    with open(prof, "rb") as f, open(cut, "wb") as g:
        g.write(f.read()[:300])
    runtime = [
        (["--report", wp.tmp_path("missing.prof")], "missing.prof: cannot open: No such file"),
        (["--report", junk], "junk.prof: not a wallprof profile"),
        (["--report", cut], "cut.prof: truncated"),
        (["--report", prof, "--report-output", "/nonexistent-dir/r.txt"], "cannot write"),
        (["--report", prof, "--thread=nosuch"], "no thread named or numbered 'nosuch'"),
    ]
    for args, msg in runtime:
        r = wp.wallprof(args)
        t.check(r.returncode == 1 and msg in r.stderr,
                "wallprof %s: exit 1, says '%s'" % (" ".join(args), msg), r.describe())
    for fmt in ("text", "csv", "svg", "folded"):
        r = wp.wallprof(["--report", junk, "--format=%s" % fmt])
        t.check(r.returncode == 1 and r.stdout == "",
                "a bad file with --format=%s: exit 1 and no partial report" % fmt, r.describe())

    # -- CSV -------------------------------------------------------------------------------------
    r = wp.wallprof(["--report", prof, "--format=csv"])
    fields = ["function", "module", "file", "line", "self_samples", "self_percent",
              "total_samples", "total_percent"]
    rows = list(csv.reader(io.StringIO(r.stdout)))
    t.eq(rows[0] if rows else None, fields, "csv: the header row")
    t.check(all(len(x) == 8 for x in rows), "csv: every row has 8 fields")
    data = list(csv.DictReader(io.StringIO(r.stdout)))
    folded = wp.load(prof)
    n, selfc, totalc = folded.total(), folded.self_counts(), folded.total_counts()
    # folded output names functions only: functions of one name in two modules (clock_gettime
    # in libc and the vDSO) are one there, so compare self samples summed by name, and total
    # samples for names that are unique
    import collections
    by_name, seen = collections.Counter(), collections.Counter()
    bad = []
    for row in data:
        fn = row["function"]
        s, tot = int(row["self_samples"]), int(row["total_samples"])
        by_name[fn] += s
        seen[fn] += 1
        if abs(float(row["self_percent"]) - 100.0 * s / n) > 0.0001 or \
                abs(float(row["total_percent"]) - 100.0 * tot / n) > 0.0001:
            bad.append("%s: percents %s %s" % (fn, row["self_percent"], row["total_percent"]))
        if row["line"] and not row["line"].isdigit():
            bad.append("%s: line %r" % (fn, row["line"]))
        if tot < s:
            bad.append("%s: total %d < self %d" % (fn, tot, s))
    for row in data:
        fn = row["function"]
        if seen[fn] == 1 and int(row["total_samples"]) != totalc[fn]:
            bad.append("%s: total %s, folded %d" % (fn, row["total_samples"], totalc[fn]))
    for fn in totalc:
        if by_name[fn] != selfc[fn]:
            bad.append("%s: self %d, folded %d" % (fn, by_name[fn], selfc[fn]))
    t.eq(bad, [], "csv: every row's counts and percents agree with the folded output")
    t.eq(sorted(set(x["function"] for x in data)), sorted(totalc),
         "csv: a row for every function with samples")
    t.eq(len(data), len(set((x["function"], x["module"]) for x in data)),
         "csv: one row per function (name and module)")
    selfs = [int(x["self_samples"]) for x in data]
    t.eq(selfs, sorted(selfs, reverse=True), "csv: hottest (self) first")
    hot = next((x for x in data if x["function"] == "hot_loop"), None)
    t.check(hot and hot["file"].endswith("report_flat.c") and
            int(hot["line"]) == int(truth["line.hot_loop"]) and hot["module"] == "report_flat",
            "csv: hot_loop's file, line and module", repr(hot))
    t.check(r.stdout.endswith("\n") and "\r" not in r.stdout, "csv: plain \\n line ends")

    # -- C++ names: quoted in CSV, shortened in text -----------------------------------------------
    cp = wp.tmp_path("cxx.prof")
    r = wp.wallprof(["--hz=500", "-q", "-o", cp, "--", cxx, "0.5"], timeout=60)
    t.eq(r.returncode, 0, "recording report_cxx exits 0", r.describe())
    t.eq(rl.long_lines(r.stdout), [], "text with long C++ names: no line over 100 columns")
    rep = rl.TextReport(r.stdout)
    # the hottest function: on a loaded machine its wait for a CPU, [wait cpu runqueue], may
    # be hotter (issue 20: that wait is a leaf of its own)
    top = rep.hottest_code().name if rep.hottest_code() else ""
    t.check("crunch_the_numbers" in top and top.startswith("..."),
            "text: the long name is shortened from the front, keeping the method", top)
    rows = [x for x in rep.threads[0].rows if not x[2].startswith("[wait ")] \
        if rep.threads else []
    th = rows[0][2] if rows else ""
    t.check(th.endswith("crunch_the_numbers_for_a_while()"),
            "text: with room, the shortened name keeps the method whole", th)
    r = wp.wallprof(["--report", cp, "--format=csv"])
    data = list(csv.DictReader(io.StringIO(r.stdout)))
    full = next((x["function"] for x in data if "crunch_the_numbers_for_a_while" in x["function"]),
                "")
    t.check("Worker<int, double>::crunch_the_numbers_for_a_while(int, double, unsigned long)"
            in full, "csv: the full demangled name, commas and all, in one field", repr(full))
    t.check('"very_long_namespace_name_for_testing::' in r.stdout,
            "csv: a name with commas is quoted")



def no_report(t, flat):
    """--no-report records as perf record does: nothing on stdout but the program's own, the
    profile saved (said on stderr), the program's exit status kept; --report reports it later
    as the run's own report would (the same folded stacks)."""
    p = wp.tmp_path("noreport.prof")
    r = wp.wallprof(["--hz=500", "--no-report", "-o", p, "--", flat, "0.3"], timeout=60)
    t.check(r.returncode == 0 and r.stdout.strip() == "" and os.path.exists(p) and
            "profile saved to %s" % p in r.stderr,
            "--no-report: exit 0, no report on stdout, the profile saved and named on stderr",
            r.describe())
    rep = wp.wallprof(["--report", p, "-f", "folded"], timeout=60)
    t.check(rep.returncode == 0 and "hot_loop" in rep.stdout,
            "--no-report: the saved profile reports later (hot_loop in its stacks)",
            rep.describe())
    q = wp.wallprof(["-q", "--no-report", "-o", wp.tmp_path("noreport3.prof"), "--", "sh", "-c",
                     "exit 3"], timeout=60)
    t.check(q.returncode == 3 and q.stdout == "" and q.stderr == "",
            "--no-report -q: the program's exit status 3, nothing printed", q.describe())


wp.main(main)

