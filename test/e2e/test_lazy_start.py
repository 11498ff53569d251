# SPDX-License-Identifier: MIT
"""lazy_start (issue 19): what a process does under the agent before its first tick. The
sampler's task starts at once but reads nothing (no /proc, no profile, no thread list) until
its first tick is due, so that a process that ends sooner (a shell's commands, a build's
compilers) costs little; its line in the run's list takes its command from memory. How fast
it is gets measured in scripts/bench (section 8); this checks that the lazy paths are right:

  * an exec chain that ends before any tick (1 Hz): no task opens anything under /proc
    (strace -f), both images are in the run's list with their commands, the second as it
    retitled itself (setproctitle: read from memory at its end);
  * the process the user started, ending before its first tick, still leaves a whole
    profile (its header and its thread, made at its end);
  * fork children that sample at once (cpu mode, 1000 Hz, children forked from main and from
    another thread, each forking a grandchild): on the thread state their parent's sampler
    used (task.c); each one's samples of its own burn match the CPU time it measured, and the
    children that _exit at once are in the run's list;
  * a first sample that comes late (20 Hz, 100 ms asleep first): the header, the thread and
    the samples are there;
  * a preloaded shell's child that outlives the shell keeps quiet at its end;
  * a fork child's task is one clone onto the thread state its parent's task used: children
    that _exit at once make exactly one clone (strace -ff: CLONE_VM, no lender thread) and
    no timer, and are in the run's list; children that, before their first tick (50 Hz),
    block every signal, make a thread, fork a grandchild or sleep across it, are each
    sampled in their burn against the CPU time they measured, the sleep is not cut short,
    and a raw futex wait across it (no interposer resumes one) times out uncut. (A start
    deferred to a timer on the child's CPU clock was withdrawn: test_fork_storm.)
"""
import os
import re
import shutil

import wplib as wp


def truth_lines(path):
    """{pid: (ppid, cpu_ns, role)} from lazy_start's $WP_TRUTH."""
    out = {}
    if os.path.exists(path):
        for line in open(path):
            f = line.split()
            out[int(f[1])] = (int(f[3]), int(f[5]), f[7])
    return out


def burn_samples(prof, func):
    """(all samples, samples through `func`) of a profile, from its folded report."""
    r = wp.wallprof(["--report", prof, "--format=folded"], timeout=60)
    total = through = 0
    for line in r.stdout.splitlines():
        stack, _, n = line.rpartition(" ")
        if n.isdigit():
            total += int(n)
            if func in stack.split(";"):
                through += int(n)
    return total, through


def strace_argv(strace, follow, calls, trace, env):
    """strace following children (`follow`: -f, or -ff for a file per process), tracing
    `calls` into `trace`, with `env` given to the traced program only."""
    argv = [strace, follow, "-qq", "-e", calls, "-o", trace]
    for k, v in env.items():
        argv += ["-E", "%s=%s" % (k, v)]
    return argv


def exec_chain(t):
    strace = shutil.which("strace")
    if not t.check(strace is not None, "strace is installed (scripts/deps installs it)"):
        return
    d = wp.tmp_path("lazy-exec")
    os.makedirs(d, exist_ok=True)
    trace = os.path.join(d, "trace")
    # WALLPROF_ROOT_PID=1: neither image is the user's (no whole profile of no samples)
    env = wp.preload_env(mode="wall", hz=1, out=os.path.join(d, "p.prof"),
                         extra={"WALLPROF_ROOT_PID": "1"})
    argv = strace_argv(strace, "-f", "trace=openat,open,clone,clone3,execve", trace, env)
    target = wp.target("lazy_start")
    r = wp.run(argv + ["env", "LAZY=1", target, "title", "x", "y"], timeout=60)
    t.eq(r.returncode, 0, "env ... lazy_start title: exit 0 under strace and the agent",
         r.describe())
    proc = [ln for ln in open(trace) if re.search(r'open(at)?\(.*"/proc/', ln)]
    t.check(not proc, "nothing under /proc is opened before the first tick", "".join(proc[:5]))
    lines = wp.unsampled_lines(os.path.join(d, "p.unsampled"))
    by_cmd = {u["command"]: u for u in lines}
    first = "env LAZY=1 %s title x y" % target
    t.check(first in by_cmd and by_cmd[first]["end"] == "exec",
            "the first image is listed, ended by its exec, with its command line",
            repr([(u["command"], u["end"]) for u in lines]))
    t.check("lazy-start: retitled" in by_cmd and by_cmd["lazy-start: retitled"]["end"] == "exit 0",
            "the second image is listed with the title it gave itself, exit 0",
            repr([(u["command"], u["end"]) for u in lines]))


def root_before_first_tick(t):
    prof = wp.tmp_path("lazy-root.prof")
    r = wp.record([wp.target("lazy_start"), "title", "x"], prof, mode="wall", hz=1,
                  fmt="text")
    t.eq(r.returncode, 0, "wallprof --hz=1 -- lazy_start title: exit 0", r.describe())
    if not t.check(os.path.exists(prof), "the user's process leaves a profile of no samples"):
        return
    raw = wp.read_raw(prof)
    t.eq(raw.meta.get("command"), "lazy-start: retitled", "its header names its command")
    t.eq(raw.meta.get("samples"), "0", "no sample")
    names = sorted(th.get("name") for th in raw.threads.values())
    t.eq(names, ["lazy_start"], "its one thread is listed, by name")


def forks(t):
    d = wp.tmp_path("lazy-forks")
    os.makedirs(d, exist_ok=True)
    truth_path = os.path.join(d, "truth")
    r = wp.record([wp.target("lazy_start"), "forks", "4"], os.path.join(d, "f.prof"),
                  mode="cpu", hz=1000, env={"WP_TRUTH": truth_path}, fmt="text")
    t.check(r.returncode == 0 and "forks: 0 failed" in r.stdout,
            "lazy_start forks 4: exit 0, every child and grandchild exit 0", r.describe())
    truth = truth_lines(truth_path)
    roles = sorted(v[2] for v in truth.values())
    t.eq(roles, ["child"] * 4 + ["grandchild"] * 4, "four children and four grandchildren burned")
    for pid, (ppid, cpu_ns, role) in sorted(truth.items()):
        prof = os.path.join(d, "f.%d.prof" % pid)
        if not t.check(os.path.exists(prof), "the %s %d left a profile" % (role, pid)):
            continue
        func = "child_burn" if role == "child" else "grandchild_burn"
        total, through = burn_samples(prof, func)
        # its own CPU time over the interval (the burn, a little start and end); ticks come
        # late on a loaded machine, so fewer, never more
        want = cpu_ns / 1e6
        t.check(0.5 * want <= total <= 1.1 * want + 5,
                "the %s %d: %d samples for %.0f ms of CPU" % (role, pid, total, want))
        t.check(through >= 0.9 * total,
                "the %s %d: %d of %d samples in %s" % (role, pid, through, total, func))
    listed = wp.unsampled_lines(os.path.join(d, "f.unsampled"))
    quick = [u for u in listed if u["end"] == "exit 0" and u["pid"] not in truth]
    t.check(len(quick) >= 4, "the four children that _exit at once are in the run's list",
            repr(listed))


def late(t):
    prof = wp.tmp_path("lazy-late.prof")
    target = wp.target("lazy_start")
    r = wp.record([target, "late", "100"], prof, mode="cpu", hz=20, fmt="text")
    t.eq(r.returncode, 0, "lazy_start late 100 (cpu mode, 20 Hz): exit 0", r.describe())
    raw = wp.read_raw(prof)
    t.eq(raw.meta.get("command"), "%s late 100" % target, "its header names its command")
    t.eq(sorted(th.get("name") for th in raw.threads.values()), ["lazy_start"],
         "its thread is listed")
    total, through = burn_samples(prof, "late_burn")
    t.check(3 <= through <= 9 and through >= total - 1,
            "300 ms of late_burn at 20 Hz: %d of %d samples in it" % (through, total))


def orphan_quiet(t):
    """Under bare LD_PRELOAD, a process the profiled program started keeps quiet, even once
    its parent has ended and it was reparented to a process never profiled (whether the
    parent was profiled is read at the start, not when the line would be printed: CPython's
    multiprocessing resource tracker printed its summary so). The shell waits until the
    child has started, then exits; the child ends later."""
    sh = shutil.which("sh") or "/bin/sh"
    d = wp.tmp_path("lazy-orphan")
    os.makedirs(d, exist_ok=True)
    env = wp.preload_env(mode="wall", hz=100, out=os.path.join(d, "o.%p.prof"), quiet=False)
    script = "%s late 300 & sleep 0.15; exit 0" % wp.target("lazy_start")
    r = wp.run([sh, "-c", script], env=env, timeout=60)  # waits for the child's stderr to close
    t.eq(r.returncode, 0, "sh -c 'lazy_start late 300 & sleep 0.15': exit 0", r.describe())
    target = wp.target("lazy_start")
    child = [f for f in os.listdir(d) if f.endswith(".prof") and
             (wp.read_raw(os.path.join(d, f)).meta.get("command") or "").startswith(target)]
    if not t.check(len(child) == 1, "the child left its profile", repr(os.listdir(d))):
        return
    loud = [ln for ln in r.stderr.splitlines() if ln.startswith("wallprof") and child[0] in ln]
    t.eq(loud, [], "the child, outliving the shell that started it, keeps quiet at its end",
         r.stderr)


def quick_children(t):
    strace = shutil.which("strace")
    if not t.check(strace is not None, "strace is installed (scripts/deps installs it)"):
        return
    d = wp.tmp_path("lazy-quick")
    os.makedirs(d, exist_ok=True)
    trace = os.path.join(d, "trace")
    env = wp.preload_env(mode="wall", hz=100, out=os.path.join(d, "q.prof"),
                         extra={"WALLPROF_ROOT_PID": "1"})
    argv = strace_argv(strace, "-ff", "trace=clone,clone3,timer_create", trace, env)
    r = wp.run(argv + [wp.target("lazy_start"), "quick", "3"], timeout=60)
    t.eq(r.returncode, 0, "lazy_start quick 3: exit 0 under strace and the agent", r.describe())
    calls = {}
    for f in os.listdir(d):
        if f.startswith("trace."):
            calls[int(f.split(".")[1])] = open(os.path.join(d, f)).read()
    forked = set()
    for text in calls.values():
        for m in re.finditer(r"clone\(child_stack=NULL, flags=[A-Z_|]*SIGCHLD.*= (\d+)", text):
            forked.add(int(m.group(1)))
    t.eq(len(forked), 3, "the three fork children are seen", repr(sorted(calls)))
    for pid in sorted(forked):
        text = calls.get(pid, "")
        clones = re.findall(r"clone3?\(.*", text)
        t.check("timer_create(" not in text and len(clones) == 1 and "CLONE_VM" in clones[0]
                and "CLONE_SETTLS" in clones[0],
                "the child %d that _exits at once makes its task with one clone onto its "
                "parent's thread state, no lender and no timer" % pid, text[-2000:])
    listed = wp.unsampled_lines(os.path.join(d, "q.unsampled"))
    cmd = "%s quick 3" % wp.target("lazy_start")
    t.check(forked <= {u["pid"] for u in listed if u["end"] == "exit 0" and u["command"] == cmd},
            "each is in the run's list, exit 0, with its command read from its own memory "
            "(not through its parent's sampler, in another process since the fork)",
            repr(listed))


def deferred(t):
    d = wp.tmp_path("lazy-deferred")
    os.makedirs(d, exist_ok=True)
    truth_path = os.path.join(d, "truth")
    hz = 50
    r = wp.record([wp.target("lazy_start"), "deferred"], os.path.join(d, "d.prof"),
                  mode="wall", hz=hz, env={"WP_TRUTH": truth_path}, fmt="text")
    t.check(r.returncode == 0 and "deferred: 0 failed" in r.stdout,
            "lazy_start deferred: exit 0, every child exit 0 (the sleeper's 60 ms in full, the "
            "futex wait timed out, not cut short)",
            r.describe())
    truth = truth_lines(truth_path)
    roles = {v[2]: pid for pid, v in truth.items()}
    t.eq(sorted(roles), ["grandchild", "masked", "sleeper", "threaded"],
         "the four children that start their sampler early burned")
    burns = {"masked": "masked_burn", "threaded": "thread_burn", "grandchild": "grandchild_burn",
             "sleeper": "sleeper_burn"}
    for role, pid in sorted(roles.items()):
        prof = os.path.join(d, "d.%d.prof" % pid)
        if not t.check(os.path.exists(prof), "the %s process %d left a profile" % (role, pid)):
            continue
        total, through = burn_samples(prof, burns[role])
        burn_ms = {"grandchild": 100, "sleeper": 200}.get(role, 300)
        want = burn_ms / (1000.0 / hz)
        # ticks come late on a loaded machine: fewer, never many more
        t.check(0.5 * want <= through <= 1.2 * want + 2,
                "the %s process %d: %d samples in %s for %d ms of CPU there (%.0f expected)"
                % (role, pid, through, burns[role], burn_ms, want))
    listed = wp.unsampled_lines(os.path.join(d, "d.unsampled"))
    quick = [u for u in listed if u["end"] == "exit 0" and u["pid"] not in truth]
    # (the futex child, blocked 60 ms from its start, is sampled waiting at 50 Hz: a profile)
    t.check(len(quick) >= 2, "the two that _exit at once are in the run's list",
            repr(listed))


def main(t):
    quick_children(t)
    deferred(t)
    orphan_quiet(t)
    exec_chain(t)
    root_before_first_tick(t)
    forks(t)
    late(t)


wp.main(main)
