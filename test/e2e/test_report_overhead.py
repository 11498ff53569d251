# SPDX-License-Identifier: MIT
"""--overhead-test: timing a workload without the agent and at 100, 1000 and 10000 Hz, with
medians, a recommendation and the details table; the workload's own output kept out of the
report; failures of the workload reported; temporary profiles cleaned up."""

import os
import re

import reportlib as rl
import wplib as wp

RATES = (100, 1000, 10000)


def parse(text):
    """{rate or 0: (median s, plus %)} from the [TEST] lines; {setting: row fields} from the
    details table."""
    tests, table = {}, {}
    m = re.search(r"^\[TEST\] Running workload without profiling: (\d+\.\d+) s$", text, re.M)
    if m:
        tests[0] = (float(m.group(1)), 0.0)
    for m in re.finditer(r"^\[TEST\] Running workload with profiling at (\d+) Hz: (\d+\.\d+) s "
                         r"\(([+-]\d+\.\d+)%\)$", text, re.M):
        tests[int(m.group(1))] = (float(m.group(2)), float(m.group(3)))
    for m in re.finditer(r"^  (no agent|\d+ Hz) +(\d+\.\d+) s +(\d+\.\d+) s +(\S+) +(\d+\.\d+) s "
                         r"+(\S+) +(\S+) +(.+)$", text, re.M):
        key = 0 if m.group(1) == "no agent" else int(m.group(1).split()[0])
        table[key] = m.groups()[1:]
    return tests, table


def pct(s):
    return float(s.rstrip("%")) if s != "-" else None


def main(t):
    exe = rl.target("report_exit")
    if not wp.require_built(exe):
        return
    tmp = wp.tmp_path("tmpdir")
    os.makedirs(tmp)
    env = {"TMPDIR": tmp}

    # -- a short command of our own, noisy on stdout and stderr ---------------------------------
    cmd = ["sh", "-c", 'echo NOISE-OUT; echo NOISE-ERR >&2; exec "$0" 0 0.05', exe]
    r = wp.wallprof(["--overhead-test", "--mode=cpu", "--"] + cmd, env=env, timeout=240)
    t.eq(r.returncode, 0, "--overhead-test -- COMMAND exits 0", r.describe())
    t.check(not re.search(r"^NOISE-", r.stdout + r.stderr, re.M),
            "the workload's own output goes to /dev/null", r.stdout + r.stderr)
    tests, table = parse(r.stdout)
    t.eq(sorted(tests), [0] + list(RATES), "a [TEST] line without profiling and at each rate",
         r.stdout)
    t.eq(sorted(table), [0] + list(RATES), "the details table has a row per setting", r.stdout)
    if 0 in tests:
        for hz in RATES:
            if hz in tests:
                expect = 100.0 * (tests[hz][0] - tests[0][0]) / tests[0][0]
                # both times are printed to the ms: allow for that rounding
                tol = 100.0 * 0.0011 / tests[0][0] + 0.01
                t.near(tests[hz][1], expect, tol, "%d Hz: +%% = its median against the "
                       "unprofiled median (rounded times)" % hz)
    t.check(re.search(r"^\[CONFIG\] workload: sh -c ", r.stdout, re.M),
            "the report names the workload")
    t.check(re.search(r"^\[CONFIG\] mode cpu$", r.stdout, re.M), "the report names the mode")
    t.check(re.search(r"^\[RECOMMENDATION\] (Use (100|1000|10000) Hz|Every rate tested)",
                      r.stdout, re.M), "a recommendation", r.stdout)
    if 100 in table and 10000 in table:
        d100, d10k = table[100][5].replace(",", ""), table[10000][5].replace(",", "")
        t.check(d100.isdigit() and d10k.isdigit() and int(d10k) > int(d100),
                "more samples per second delivered at 10000 Hz than at 100 Hz (%s, %s)" %
                (d100, d10k))
    t.eq(os.listdir(tmp), [], "no temporary profiles left behind")

    # -- the workload fails: stop and say why --------------------------------------------------
    r = wp.wallprof(["--overhead-test", "--", exe, "3", "0.01"], env=env, timeout=120)
    t.check(r.returncode == 1 and "overhead test stopped" in r.stderr and
            "exited with status 3" in r.stderr, "a failing workload: exit 1 and why",
            r.describe())
    r = wp.wallprof(["--overhead-test", "--", "/nonexistent/program"], env=env, timeout=120)
    t.check(r.returncode == 1 and "cannot run /nonexistent/program" in r.stderr,
            "a workload that does not exist: exit 1, 'cannot run'", r.describe())
    t.eq(os.listdir(tmp), [], "no temporary files left behind after a failure")

    # -- the built-in workload -------------------------------------------------------------------
    r = wp.wallprof(["--internal-workload", "2"], timeout=60)
    t.check(r.returncode == 0 and r.stdout.strip().isdigit(),
            "wallprof --internal-workload runs the built-in workload", r.describe())
    r = wp.wallprof(["--overhead-test"], env=env, timeout=280)
    t.eq(r.returncode, 0, "--overhead-test with the built-in workload exits 0", r.describe())
    t.eq(rl.long_lines(r.stdout), [], "no line longer than 100 columns")
    tests, table = parse(r.stdout)
    t.eq(sorted(tests), [0] + list(RATES), "built-in: a [TEST] line per setting", r.stdout)
    t.check("built-in" in r.stdout and re.search(r"^\[CONFIG\] mode wall \(the default",
                                                  r.stdout, re.M),
            "built-in: says which workload and that wall is the default mode")
    if 100 in table and 10000 in table:
        c100, c10k = pct(table[100][4]), pct(table[10000][4])
        t.check(c100 is not None and c10k is not None and c10k > c100,
                "built-in: sampling at 10000 Hz costs more CPU than at 100 Hz (%s, %s)" %
                (c100, c10k), r.stdout)
    t.note(r.stdout)


wp.main(main)
