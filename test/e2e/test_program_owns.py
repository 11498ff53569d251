# SPDX-License-Identifier: MIT
"""The program's descriptors, stderr and files are its own (issue 11, parts 3, 5 and 6).

- The agent holds no descriptor in the program's table: the program's first open() gets the
  number it gets unprofiled (3, or 0 when started with stdin closed) and /proc/self/fd lists
  the same numbers.
- A program that closes every descriptor above 2 still gets sampled.
- A program that closes fd 2 and reuses it for a data file finds only its own bytes there.
- Agent warnings never reach the program's stderr under the `wallprof` command (the report
  shows them) nor in a process the user's program started (its profile keeps them); the
  user's own process still prints them, unless WALLPROF_QUIET=1 (test_quiet.py).
- An unwritable WALLPROF_OUT is said at once, before the program's own output ends, and the
  samples go to the temporary directory named in that line; `wallprof -o` with an
  unwritable path refuses before running anything.
"""
import glob
import os

import wplib as wp

T = None


def hyg(*args):
    return [wp.target("fd_hygiene")] + [str(a) for a in args]


def samples_in(path):
    """Samples in the profile at `path`, 0 when there is none."""
    try:
        return wp.read_raw(path).samples()
    except (OSError, ValueError):
        return 0


def env(out, **extra):
    e = wp.preload_env(mode="wall", hz=1000, threads=0, out=out)
    e.update(extra)
    return e


def check_descriptors(t):
    base = wp.run(hyg("list"), timeout=60)
    t.eq(base.returncode, 0, "fd_hygiene list runs unprofiled", base.stderr)
    r = wp.run(hyg("list"), env=env(wp.tmp_path("list.prof")), timeout=60)
    t.eq(r.stdout, base.stdout, "profiled, the program sees the same descriptors "
         "(first open() and /proc/self/fd)", "unprofiled:\n%s\nprofiled:\n%s" % (base.stdout,
                                                                                  r.stdout))
    # stdin closed at exec (posix_spawn close actions, daemons): fd 0 is the program's to get
    sh = ["sh", "-c", 'exec "$0" list <&-', wp.target("fd_hygiene")]
    base0 = wp.run(sh, timeout=60)
    t.check("first open: 0" in base0.stdout, "unprofiled with stdin closed, open() gets 0",
            base0.stdout)
    r0 = wp.run(sh, env=env(wp.tmp_path("list0.prof")), timeout=60)
    t.eq(r0.stdout, base0.stdout, "profiled with stdin closed, open() still gets 0 and the "
         "same descriptors are open", r0.stdout)


def check_fallback_descriptors(t):
    """Where unshare(CLONE_FILES) is refused (WALLPROF_TEST=no-unshare stands in for a seccomp
    policy), the agent's descriptors sit on high numbers: the program's low ones are its own."""
    base = wp.run(hyg("list"), timeout=60)
    r = wp.run(hyg("list"), env=env(wp.tmp_path("list-fb.prof"), WALLPROF_TEST="no-unshare"),
               timeout=60)
    first = [l for l in r.stdout.splitlines() if l.startswith("first open")]
    t.eq(first, [l for l in base.stdout.splitlines() if l.startswith("first open")],
         "fallback: the first open() gets the number it gets unprofiled", r.stdout)
    extra = sorted(set(r.stdout.splitlines()) - set(base.stdout.splitlines()))
    t.check(all(int(l.split()[-1]) >= 900 for l in extra if l.startswith("open:")),
            "fallback: the agent's descriptors are all above 899", repr(extra))


def check_closefrom(t, hook):
    label = "fallback: " if hook else ""
    prof = wp.tmp_path("closefrom%s.prof" % hook)
    r = wp.run(hyg("closefrom", 800), env=env(prof, WALLPROF_TEST=hook), timeout=60)
    t.eq(r.returncode, 0, "%sa program closing every descriptor above 2 runs clean" % label,
         r.stderr)
    n = samples_in(prof)
    # 2 threads x 0.8 s at 1000 Hz: ~1600; the old agent lost /proc/self/task and took none
    t.check(n > 500, "%sand is still sampled (%d samples)" % (label, n))


def check_reused_stderr(t, hook):
    label = "fallback: " if hook else ""
    data = wp.tmp_path("data%s.txt" % hook)
    e = env(wp.tmp_path("reuse2%s.prof" % hook), WALLPROF_TEST=hook)
    e["WALLPROF_QUIET"] = "0"  # the exit summary would be printed to fd 2
    r = wp.run(hyg("reuse2", data), env=e, timeout=60)
    t.eq(r.returncode, 0, "%sa program reusing fd 2 for a data file runs clean" % label,
         r.stderr)
    with open(data) as f:
        got = f.read()
    t.eq(got, "data\n", "%sits data file holds only what it wrote (no agent line)" % label)


def check_warnings(t):
    # Under the command: the program's stderr is its own, the report shows the warning.
    base = wp.run(hyg("takeprof"), timeout=60)
    prof = wp.tmp_path("takeprof-cli.prof")
    r = wp.wallprof(["-q", "--hz=1000", "-o", prof, "--"] + hyg("takeprof"), timeout=60)
    t.eq(r.returncode, 0, "takeprof under the command exits 0", r.stderr)
    t.eq(r.stderr, base.stderr, "under the command the program's stderr is unchanged "
         "(no agent line)", r.stderr)
    t.check("[AGENT]" in r.stdout and "own handler for signal" in r.stdout,
            "the report shows the agent's warning", r.stdout[:1500])
    # Bare LD_PRELOAD, the user's own process, not quiet: the warning once, on its stderr
    # (test_quiet.py: nothing with WALLPROF_QUIET=1).
    r = wp.run(hyg("takeprof"), env=env(wp.tmp_path("takeprof-own.prof"), WALLPROF_QUIET="0"),
               timeout=60)
    t.eq(r.stderr.count("own handler for signal"), 1,
         "bare LD_PRELOAD: the user's process says it once", r.stderr)
    # A process the user's process started (sh forks it): nothing on its stderr; the
    # profile keeps the warning.
    outdir = wp.tmp_path("child")
    os.makedirs(outdir, exist_ok=True)
    sh = ["sh", "-c", '"$0" takeprof; true', wp.target("fd_hygiene")]
    r = wp.run(sh, env=env(os.path.join(outdir, "w.%p.prof")), timeout=60)
    t.eq(r.stderr, base.stderr, "a process the user's program started prints nothing of the "
         "agent's", r.stderr)
    kept = []
    for p in glob.glob(os.path.join(outdir, "*.prof")):
        kept += [v for k, v in wp.read_raw(p).meta.items() if k.startswith("message_")]
    t.check(any("own handler for signal" in m for m in kept),
            "its profile keeps the warning (META message_N)", repr(kept))


def check_out_path(t):
    tmp = wp.tmp_path("tmpdir")
    os.makedirs(tmp, exist_ok=True)
    e = env("/nonexistent-wallprof-dir/sub/x.prof", TMPDIR=tmp, WALLPROF_QUIET="0")
    r = wp.run(hyg("late", 400), env=e, timeout=60)
    t.eq(r.returncode, 0, "an unwritable WALLPROF_OUT leaves the program unharmed", r.stderr)
    # (not quiet: the summary line at exit follows the program's last line)
    lines = [l for l in r.stderr.splitlines() if " written to " not in l]
    said = [i for i, l in enumerate(lines) if "/nonexistent-wallprof-dir/sub/x.prof" in l]
    t.check(len(said) == 1 and lines[-1] == "done" and said[0] < len(lines) - 1,
            "said once, at start (before the program's last line)", r.stderr)
    fallback = os.path.join(tmp, "x.prof")
    t.check(said and fallback in lines[said[0]], "the line names where the samples go",
            r.stderr)
    t.check(samples_in(fallback) > 100, "the samples are there")
    marker = wp.tmp_path("ran")
    r = wp.wallprof(["-q", "-o", "/nonexistent-wallprof-dir/x.prof", "--", "sh", "-c",
                     "touch " + marker], timeout=60)
    t.eq(r.returncode, 2, "wallprof -o UNWRITABLE exits 2", r.stderr)
    t.check("/nonexistent-wallprof-dir" in r.stderr and not os.path.exists(marker),
            "it says why, before running the program", r.stderr)


def main(t):
    if not wp.require_built(wp.target("fd_hygiene")):
        return
    check_descriptors(t)
    check_fallback_descriptors(t)
    for hook in ("", "no-unshare"):
        check_closefrom(t, hook)
        check_reused_stderr(t, hook)
    check_warnings(t)
    check_out_path(t)


wp.main(main)
