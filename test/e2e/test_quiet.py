# SPDX-License-Identifier: MIT
"""WALLPROF_QUIET=1 means nothing at all on the program's stderr, and every warning of the
agent reaches the report through the profile (issue 18, point 4).

- A program that installs its own SIGPROF handler (the agent moves to another signal and says
  so), run with a bare LD_PRELOAD and WALLPROF_QUIET=1: its stderr is byte-identical to an
  unprofiled run's; `wallprof --report` on its profile shows the warning as an [AGENT] line.
- The same for the other warnings a run can give: an unwritable WALLPROF_OUT (the samples go
  to $TMPDIR) and a bad setting (profiling is off; nothing is written, nothing said).
- A warning said in a fork child, not in the process the command ran, is in the report too,
  naming the process that said it (the text report's [AGENT] lines, the other formats' lines
  on the command's stderr), and a quiet bare run of it prints nothing either.
"""
import glob
import os

import wplib as wp

WARNING = "own handler for signal"


def hyg(*args):
    return [wp.target("fd_hygiene")] + [str(a) for a in args]


def quiet_env(out, **extra):
    e = wp.preload_env(mode="wall", hz=1000, threads=0, out=out, quiet=True)
    e.update(extra)
    return e


def check_same(t, r, base, what):
    t.eq(r.returncode, base.returncode, "%s: the same exit status as unprofiled" % what,
         r.describe())
    t.eq(r.stderr, base.stderr, "%s: stderr is byte-identical to an unprofiled run's" % what,
         "unprofiled:\n%r\nprofiled:\n%r" % (base.stderr, r.stderr))


def agent_lines(report):
    """The report's [AGENT] lines, each with its wrapped continuation lines joined."""
    out = []
    for l in report.splitlines():
        if l.startswith("[AGENT]"):
            out.append(l[len("[AGENT]"):].strip())
        elif out and out[-1] is not None and l.startswith(" " * 10) and l.strip():
            out[-1] += " " + l.strip()
        elif out:
            out.append(None)  # the block ended
    return [l for l in out if l is not None]


def check_own_handler(t):
    base = wp.run(hyg("takeprof"), timeout=60)
    prof = wp.tmp_path("takeprof.prof")
    r = wp.run(hyg("takeprof"), env=quiet_env(prof), timeout=60)
    check_same(t, r, base, "takeprof, WALLPROF_QUIET=1")
    rep = wp.wallprof(["--report", prof], timeout=60)
    t.eq(rep.returncode, 0, "the report of its profile succeeds", rep.stderr)
    said = agent_lines(rep.stdout)
    t.check(any(WARNING in l for l in said), "the report shows the agent's warning as an "
            "[AGENT] line", "\n".join(said) or rep.stdout[:1500])


def check_out_path(t):
    base = wp.run(hyg("late", 300), timeout=60)
    tmp = wp.tmp_path("tmpdir")
    os.makedirs(tmp, exist_ok=True)
    r = wp.run(hyg("late", 300), env=quiet_env("/nonexistent-wallprof-dir/q.prof", TMPDIR=tmp),
               timeout=60)
    check_same(t, r, base, "unwritable WALLPROF_OUT, WALLPROF_QUIET=1")
    fallback = os.path.join(tmp, "q.prof")
    t.check(os.path.exists(fallback), "the samples went to $TMPDIR", str(os.listdir(tmp)))
    if os.path.exists(fallback):
        rep = wp.wallprof(["--report", fallback], timeout=60)
        t.check(any("/nonexistent-wallprof-dir/q.prof" in l and fallback in l
                    for l in agent_lines(rep.stdout)),
                "its report says where the profile went and why", rep.stdout[:1500])


def check_bad_setting(t):
    base = wp.run(hyg("late", 100), timeout=60)
    d = wp.tmp_path("bad")
    os.makedirs(d, exist_ok=True)
    r = wp.run(hyg("late", 100), env=quiet_env(os.path.join(d, "b.prof"), WALLPROF_HZ="fast"),
               timeout=60)
    check_same(t, r, base, "WALLPROF_HZ=fast, WALLPROF_QUIET=1")
    t.eq(os.listdir(d), [], "a bad setting: no profile (profiling is off)")


def check_fork_child(t):
    base = wp.run(hyg("forkprof"), timeout=60)
    t.eq(base.returncode, 0, "forkprof runs unprofiled", base.describe())
    # a bare run, quiet: nothing from the parent's agent nor the child's
    d = wp.tmp_path("forkq")
    os.makedirs(d, exist_ok=True)
    r = wp.run(hyg("forkprof"), env=quiet_env(os.path.join(d, "f.%p.prof")), timeout=60)
    check_same(t, r, base, "forkprof, WALLPROF_QUIET=1")
    # under the command: the child's warning is in the merged report, naming the child
    prof = wp.tmp_path("forkprof.prof")
    r = wp.wallprof(["-q", "--hz=1000", "-o", prof, "--"] + hyg("forkprof"), timeout=60)
    t.eq(r.returncode, 0, "forkprof under the command exits 0", r.describe())
    children = [p for p in glob.glob(wp.tmp_path("forkprof.*.prof"))]
    t.eq(len(children), 1, "the fork child wrote its own profile", str(children))
    child_pid = int(children[0].split(".")[-2]) if children else -1
    said = agent_lines(r.stdout)
    t.check(any(WARNING in l and ("pid %d " % child_pid) in l for l in said),
            "the report shows the fork child's warning, naming the child (pid %d)" % child_pid,
            "\n".join(said) or r.stdout[:2000])
    t.check(not any(WARNING in l and "pid %d " % child_pid not in l for l in said),
            "and only the child's (the parent kept its SIGPROF)", "\n".join(said))
    # another format: on the command's stderr, from the profiles
    f = wp.wallprof(["--report", prof, "--format=folded"], timeout=60)
    t.check(f.returncode == 0 and any(WARNING in l and "(pid %d)" % child_pid in l
                                      for l in f.stderr.splitlines()),
            "--format=folded: the command says the child's warning on its stderr", f.describe())


def main(t):
    if not wp.require_built(wp.target("fd_hygiene")):
        return
    check_own_handler(t)
    check_out_path(t)
    check_bad_setting(t)
    check_fork_child(t)


wp.main(main)
