# SPDX-License-Identifier: MIT
"""A process that retitles itself is named by the title it had when sampled (issue 18,
point 4), not by its parent's command line, which a fork child starts with.

- `retitle argv`: a fork child sets itself up for 80 ms, then writes "retitle-worker: serving
  requests" over its argv (as nginx's and PostgreSQL's workers do) and runs 600 ms. The report
  of a run under the command names it by that title in the process table, its process section,
  --process and the exports that name processes (folded and svg --per-process, speedscope);
  its parent keeps its own command line.
- `retitle comm`: the child names itself with prctl(PR_SET_NAME, "rt-named-worker"): the table
  shows its command line "(named rt-named-worker)" and the rest of the report that name.
- Both runs print what they print unprofiled (the child's title and comm, as the kernel shows
  them) and exit 0.
"""
import glob
import json
import re

import wplib as wp

TITLE = "retitle-worker: serving requests"
NAMED = "rt-named-worker"


def run(t, mode):
    base = wp.run([wp.target("retitle"), mode], timeout=60)
    t.eq(base.returncode, 0, "%s: runs unprofiled" % mode, base.describe())
    prof = wp.tmp_path("retitle-%s.prof" % mode)
    r = wp.wallprof(["-q", "--hz=1000", "-o", prof, "--", wp.target("retitle"), mode],
                    timeout=90)
    t.eq(r.returncode, 0, "%s: exits 0 under the command" % mode, r.describe())
    want = [l for l in base.stdout.splitlines() if l.startswith("child ")]
    got = [l for l in r.stdout.splitlines() if l.startswith("child ")]
    if mode == "argv":
        # the title overwrote the program's path: the same whatever the path
        t.eq(got, want, "%s: the child sees the title it sees unprofiled" % mode, r.stdout[:500])
    else:
        t.eq([l for l in got if "comm" in l], [l for l in want if "comm" in l],
             "%s: the child sees the name it sees unprofiled" % mode, r.stdout[:500])
    kids = glob.glob(wp.tmp_path("retitle-%s.*.prof" % mode))
    t.eq(len(kids), 1, "%s: the child wrote a profile" % mode, str(kids))
    child = int(kids[0].split(".")[-2]) if kids else -1
    return r, prof, child


def rows(report):
    """{pid: command} of the report's process table."""
    out = {}
    for line in report.splitlines():
        m = wp.PROCESS_ROW.match(line)
        if m:
            out[int(m.group(1))] = m.group(8)
    return out


def check_exports(t, mode, prof, child, name):
    r = wp.wallprof(["--report", prof, "--format=folded", "--per-process"], timeout=60)
    roots = {l.split(";")[0] for l in r.stdout.splitlines() if l}
    t.check("[%s pid=%d]" % (name, child) in roots,
            "%s: folded --per-process roots the child's stacks at [%s pid=%d]" % (mode, name, child),
            str(sorted(roots)))
    svg = wp.tmp_path("retitle-%s.svg" % mode)
    r = wp.wallprof(["--report", prof, "--format=svg", "--per-process", "--report-output", svg],
                    timeout=60)
    if r.returncode == 0:
        with open(svg) as f:
            text = f.read()
        t.check("[%s pid=%d]" % (name, child) in text,
                "%s: the svg flame graph names the child by its title" % mode)
    else:
        t.fail("%s: svg report: %s" % (mode, r.describe()))
    r = wp.wallprof(["--report", prof, "--format=speedscope"], timeout=60)
    names = []
    if r.returncode == 0:
        names = [p.get("name", "") for p in json.loads(r.stdout).get("profiles", [])]
    t.check(any(n.startswith("%s %d / " % (name, child)) for n in names),
            "%s: speedscope names the child's threads under its title" % mode, str(names))
    r = wp.wallprof(["--report", prof, "--process=%s" % name], timeout=60)
    m = re.search(r"^\[FILTER\]  --process=.*: ([\d,]+) of", r.stdout, re.M)
    t.check(r.returncode == 0 and m and "(pid %d," % child in r.stdout,
            "%s: --process='%s' selects the child" % (mode, name), r.describe())


def main(t):
    if not wp.require_built(wp.target("retitle")):
        return
    # argv overwritten, as nginx's workers do
    r, prof, child = run(t, "argv")
    table = rows(r.stdout)
    t.eq(table.get(child, "").strip(), TITLE,
         "argv: the process table shows the child's title", r.stdout[:2000])
    parents = [c for p, c in table.items() if p != child]
    t.check(parents and all(c.strip().endswith("retitle argv") for c in parents),
            "argv: the parent keeps its own command line", str(table))
    t.check(re.search(r"^%s \(pid %d, parent \d+" % (re.escape(TITLE), child), r.stdout, re.M),
            "argv: the child's process section is headed by its title", r.stdout[:3000])
    check_exports(t, "argv", prof, child, TITLE)

    # PR_SET_NAME
    r, prof, child = run(t, "comm")
    table = rows(r.stdout)
    t.check(table.get(child, "").strip().endswith("retitle comm (named %s)" % NAMED),
            "comm: the process table shows the child's new name", r.stdout[:2000])
    t.check(re.search(r"^%s \(pid %d, parent \d+" % (NAMED, child), r.stdout, re.M),
            "comm: the child's process section is headed by its name", r.stdout[:3000])
    check_exports(t, "comm", prof, child, NAMED)


wp.main(main)
