# SPDX-License-Identifier: MIT
"""A cgo Go program under wallprof (issue 18, point 2: runtimes that take every signal).

go_split (test/targets/go_split.go, built by meson with the installed Go) is dynamically
linked (`import "C"`), so the agent loads. Go's runtime installs its handler on every signal
at start-up, the agent's SIGPROF included, and its own runtime/pprof CPU profile samples with
SIGPROF too. The program burns CPU in main.goBurnHeavy and main.goBurnLight (3 to 1 in rounds)
and measures its own truth: the CPU time spent in each. Under wallprof, in cpu and wall mode:

  * its output (numbers aside) and exit status are those of an unprofiled run;
  * Go's own CPU profile keeps its samples: per CPU second within a generous factor (0.5x)
    of an unprofiled run's, and split between the two functions as the program measured
    (the program's handler got its own signals, with their ucontext);
  * wallprof has samples in both Go functions, named from the binary's symbol table, unwound
    through their Go callers (frame pointers: Go code has no .eh_frame), in the proportion
    the program measured (within 8 points).

It failed on the code before chaining: the agent moved to signal 64, Go took that one too,
and the profile had no sample of either function.

Go ends with the exit_group system call, which no exit hook of the agent's sees: the sampler,
a task of its own outside the program's thread group, outlives it and writes the profile,
with the exit status (no checkpoint is asked for: the profile is the final one)."""

import os
import re
import shutil

import wplib as wp

SECONDS = "3"
FUNCS = ("main.goBurnHeavy", "main.goBurnLight")


def go_env():
    home = wp.tmp_path("gohome")
    os.makedirs(home, exist_ok=True)
    return {"HOME": home, "GOCACHE": os.path.join(home, "cache"),
            "GOPATH": os.path.join(home, "gopath"), "GOTOOLCHAIN": "local", "GOPROXY": "off",
            "GOFLAGS": "", "GOTELEMETRY": "off", "PPROF_TMPDIR": home,
            "PPROF_BINARY_PATH": home, "XDG_CONFIG_HOME": home}


def truth(stdout):
    """{function: CPU ms} from the program's last line."""
    m = re.search(r"go_split truth goBurnHeavy=([\d.]+) goBurnLight=([\d.]+)", stdout)
    return {FUNCS[0]: float(m.group(1)), FUNCS[1]: float(m.group(2))} if m else None


def shape(stdout):
    """The output with its measured numbers taken out."""
    return re.sub(r"[\d.]+", "N", stdout)


def go_pprof(t, go, path):
    """Go's own CPU profile: (samples in all, {function: flat samples})."""
    r = wp.run([go, "tool", "pprof", "-sample_index=samples", "-top", path], env=go_env(),
               timeout=120)
    t.check(r.returncode == 0, "go tool pprof reads %s" % os.path.basename(path), r.describe())
    m = re.search(r"of (\d+) total", r.stdout)
    flat = {}
    for line in r.stdout.splitlines():
        f = line.split()
        if len(f) >= 6 and f[-1] in FUNCS:
            flat[f[-1]] = int(f[0])
    return (int(m.group(1)) if m else 0), flat


def share(counts):
    total = sum(counts.get(f, 0) for f in FUNCS)
    return counts.get(FUNCS[0], 0) / total if total else 0.0


def main(t):
    go = shutil.which("go")
    prog = wp.target("go_split")
    if not go or not os.path.exists(prog):
        t.note("Go is not installed (golang-go, scripts/deps): go_split was not built")
        t.check(True, "nothing to run without Go")
        return

    base_pprof = wp.tmp_path("base.pprof")
    base = wp.run([prog, SECONDS, base_pprof], timeout=120)
    t.eq(base.returncode, 0, "go_split runs unprofiled", base.describe())
    base_truth = truth(base.stdout)
    base_n, _ = go_pprof(t, go, base_pprof)
    base_rate = base_n / (sum(base_truth.values()) / 1e3) if base_truth else 0
    t.check(base_rate > 20, "unprofiled, Go's profiler samples (%d samples, %.0f per CPU "
            "second)" % (base_n, base_rate))

    for mode in ("cpu", "wall"):
        out = wp.tmp_path("go-%s.prof" % mode)
        own = wp.tmp_path("go-%s.pprof" % mode)
        r = wp.record([prog, SECONDS, own], out, mode=mode, hz=1000,
                      env={"WALLPROF_CHECKPOINT": "0"}, timeout=180)
        t.eq(r.returncode, base.returncode, "%s: go_split's exit status is unchanged" % mode,
             r.describe())
        # the folded report is on stdout, so the program's stdout comes out on stderr, among
        # the command's own lines
        said = "".join(l for l in r.stderr.splitlines(True)
                       if not l.startswith(("wallprof:", "[wallprof]")))
        t.eq(shape(said), shape(base.stdout), "%s: go_split's output is unchanged" % mode,
             r.stderr[-1000:])
        tr = truth(said)
        if not tr or not os.path.exists(out):
            t.fail("%s: the program's truth and wallprof's profile exist" % mode, r.describe())
            continue
        want = share(tr)
        raw = wp.read_raw(out)
        t.eq(raw.end(), ("exit", base.returncode),
             "%s: the profile is the final one, with Go's exit status (exit_group)" % mode,
             str(raw.meta))

        # Go's own profiler kept its samples, and they land where the program worked
        n, flat = go_pprof(t, go, own)
        rate = n / (sum(tr.values()) / 1e3)
        t.check(rate >= 0.5 * base_rate,
                "%s: Go's own CPU profile keeps its samples (%d, %.0f per CPU second; "
                "unprofiled %.0f)" % (mode, n, rate, base_rate))
        # (a few hundred samples at 100 Hz: 3 standard deviations, at least 10 points)
        n2 = sum(flat.values())
        tol = max(0.10, 3 * (want * (1 - want) / max(1, n2)) ** 0.5)
        t.near(share(flat), want, tol,
               "%s: Go's own profile splits heavy/light as measured (%.3f, truth %.3f, %s)"
               % (mode, share(flat), want, flat))

        # wallprof's profile: both functions, named, unwound through their Go callers
        p = wp.load(out)
        counts = {f: p.through(f).total() for f in FUNCS}
        t.check(all(counts[f] > 100 for f in FUNCS),
                "%s: wallprof has samples in both Go functions (%s)" % (mode, counts),
                p.sample_lines(15))
        got = share(counts)
        t.near(got, want, 0.08, "%s: goBurnHeavy's share of the two agrees with the program's "
               "own measure (%.3f, truth %.3f)" % (mode, got, want))
        # (A thread whose request arrived together with Go's preemption signal, SIGURG,
        # while it waited for a CPU, is caught at the first instruction of the program's
        # handler, on Go's sigaltstack: the sample shows the context that signal interrupted,
        # whose stack the sampler copies; before, it stopped at the Go function, up to 15%
        # of the samples in wall mode on this loaded machine.)
        callers = sum((p.callers_of(f) for f in FUNCS), wp.collections.Counter())
        by_main = callers["main.main"] / max(1, sum(callers.values()))
        t.check(by_main >= 0.97,
                "%s: the Go functions are unwound to their caller main.main (%.1f%% of their "
                "samples; callers: %s)" % (mode, 100 * by_main, callers.most_common(5)))
        leaf = p.filter(lambda n, tid, f: f and f[-1] in FUNCS)
        roots = leaf.through(FUNCS[0]).roots()
        from_rt = sum(v for k, v in roots.items() if k and k.startswith("runtime."))
        t.check(from_rt >= 0.9 * max(1, sum(roots.values())),
                "%s: and on to the Go runtime that started them (roots: %s)"
                % (mode, roots.most_common(4)))


wp.main(main)
