# SPDX-License-Identifier: MIT
"""wallprof --pid: a running process sampled from outside (docs/design.md, "The outside
sampler"), at 1000 Hz:

  * cpu mode: cpu_split's self shares, attached after it started, within 2 points of the
    truth it measures itself (as test_cpu_split.py holds the agent), stacks through main;
  * transparency: eintr_calls and transfers, attached in wall and cpu mode for their whole
    run, see no EINTR and no short transfer: same output, exit status 0;
  * TracerPid stays 0 while attached and after, and the program runs on after --duration;
  * wallprof and its sampler killed with SIGKILL: the program runs on and ends as usual;
  * threads started while attached are in the profile, with their own stacks and, in cpu
    mode, their CPU split;
  * processes started while attached are followed: `sh -c 'sleep 0.5; exec tree_burn 2'`
    (whose exec keeps the attached pid; tree_burn forks a child that forks a grandchild, and
    a child that execs tree_burn again) gives each of its processes a file beside the main one
    (STEM.PID.prof, the same META run=), each with its CPU in its own burn function (the
    truth: the pids and CPU times tree_burn writes), and the report of the main file shows
    them as one run. (Failed before: no such files.)
"""
import os
import re
import signal
import subprocess
import threading
import time

import wplib as wp

HZ = 1000
TOL = 0.02


def start(argv, env=None):
    """Starts a target unprofiled (no agent), its output piped."""
    full = dict(os.environ)
    for k in list(full):
        if k.startswith("WALLPROF_") or k == "LD_PRELOAD":
            del full[k]
    full.update(env or {})
    return subprocess.Popen(argv, env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)


def tracer_pid(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("TracerPid:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def attach_args(pid, prof, mode, duration=None, fmt="folded"):
    args = ["--pid=%d" % pid, "--mode=%s" % mode, "--hz=%d" % HZ, "-o", prof, "-q", "-f", fmt]
    if duration:
        args.append("--duration=%g" % duration)
    return args


class Watch:
    """Polls a process's TracerPid every 50 ms while it lives."""

    def __init__(self, pid):
        self.pid, self.seen, self.looks = pid, set(), 0
        self.stop = False
        self.thread = threading.Thread(target=self.run)
        self.thread.start()

    def run(self):
        while not self.stop:
            v = tracer_pid(self.pid)
            if v is None:
                break
            self.seen.add(v)
            self.looks += 1
            time.sleep(0.05)

    def done(self):
        self.stop = True
        self.thread.join()
        return self.seen


def finish(proc, timeout=120):
    out, err = proc.communicate(timeout=timeout * wp.timeout_mult())
    return proc.returncode, out.decode(), err.decode()


def cpu_accuracy(t):
    truth_path = wp.tmp_path("attach_cpu_split.truth")
    prof = wp.tmp_path("attach_cpu_split.prof")
    proc = start([wp.target("cpu_split"), "4"], env={"WP_TRUTH": truth_path})
    time.sleep(0.3)
    watch = Watch(proc.pid)
    r = wp.wallprof(attach_args(proc.pid, prof, "cpu"), timeout=120)
    seen = watch.done()
    rc, out, err = finish(proc)
    t.eq(r.returncode, 0, "wallprof --pid exits 0 when the program ends", r.describe())
    t.eq(rc, 0, "cpu_split, attached, exits 0", err[-500:])
    t.check(seen == {0}, "TracerPid was 0 at every look while attached (%s)" % sorted(seen))
    raw = wp.read_raw(prof)
    t.eq(raw.meta.get("attached"), "1", "the profile says attached=1")
    t.eq(raw.meta.get("pid"), str(proc.pid), "the profile names the pid")
    t.check("cpu_split" in raw.meta.get("command", ""), "the command is from /proc/PID/cmdline",
            raw.meta.get("command"))
    truth = wp.read_truth(truth_path)
    p = wp.load(prof)
    total = p.total() - p.through("thread_cpu_ns").total()
    t.check(total >= 0.5 * HZ * 3, "samples: %d for ~3.7 s of CPU at %d Hz" % (total, HZ))
    if total <= 0:
        return
    selfc = p.self_counts()
    total_ns = sum(v for k, v in truth.items() if k.startswith("self."))
    dump = lambda: "top self:\n%s" % p.top(12)
    for name, keys in (("leaf_mul", ("self.leaf_mul.work_a", "self.leaf_mul.work_b")),
                       ("hash_loop", ("self.hash_loop",)),
                       ("lib_leaf_mul", ("self.lib_leaf_mul",))):
        expect = sum(truth[k] for k in keys) / total_ns
        t.near(selfc[name] / total, expect, TOL, "cpu mode, attached: self share of %s" % name,
               dump)
    a = p.filter(lambda n, tid, f: f[-2:] == ("work_a", "leaf_mul")).total() / total
    t.near(a, truth["self.leaf_mul.work_a"] / total_ns, TOL,
           "cpu mode, attached: leaf_mul under work_a", dump)
    complete = p.filter(lambda n, tid, f: len(f) >= 2 and f[0] == "_start" and "main" in f)
    t.check(complete.total() >= 0.99 * p.total(),
            "stacks rooted at _start through main: %d of %d" % (complete.total(), p.total()),
            dump)


def transparency(t):
    for name, argv in (("eintr_calls", [wp.target("eintr_calls"), "3"]),
                       ("transfers", [wp.target("transfers"), "2"])):
        base = start(argv)
        brc, bout, berr = finish(base)
        t.eq(brc, 0, "%s runs clean unprofiled" % name, berr[-500:])
        for mode in ("wall", "cpu"):
            prof = wp.tmp_path("attach_%s_%s.prof" % (name, mode))
            proc = start(argv)
            time.sleep(0.1)
            watch = Watch(proc.pid)
            r = wp.wallprof(attach_args(proc.pid, prof, mode), timeout=240)
            seen = watch.done()
            rc, out, err = finish(proc, 240)
            t.eq(rc, 0, "%s, attached in %s mode: no EINTR, no short transfer" % (name, mode),
                 err[-2000:])
            t.eq(out, bout, "%s, attached in %s mode: its output is unchanged" % (name, mode))
            t.eq(r.returncode, 0, "%s, %s mode: wallprof --pid exits 0" % (name, mode),
                 r.describe())
            t.check(seen == {0}, "%s, %s mode: TracerPid 0 while attached" % (name, mode))
            if r.returncode == 0:
                raw = wp.read_raw(prof)
                t.check(raw.samples() > (1000 if mode == "wall" else 5),
                        "%s, %s mode: samples were taken (%d)" % (name, mode, raw.samples()))


def detach_and_kill(t):
    # --duration: detached while the program sleeps; it runs on, untraced
    proc = start([wp.target("attach_late"), "2.5", "0.3"])
    proc.stdout.readline()  # "ready"
    prof = wp.tmp_path("attach_detach.prof")
    r = wp.wallprof(attach_args(proc.pid, prof, "wall", duration=1), timeout=60)
    t.eq(r.returncode, 0, "wallprof --pid --duration=1 exits 0", r.describe())
    t.check(proc.poll() is None, "the program still runs after wallprof detached")
    t.eq(tracer_pid(proc.pid), 0, "TracerPid is 0 after wallprof detached")
    rc, out, err = finish(proc)
    t.eq((rc, out), (0, "done\n"), "the program ends as usual after the detach", err)
    if r.returncode == 0:
        raw = wp.read_raw(prof)
        t.eq(raw.meta.get("checkpoint"), "1", "a detached profile has no final word "
             "(checkpoint=1: the program was still running)")

    # SIGKILL: the command and its sampler die at once; the program never notices
    proc = start([wp.target("attach_late"), "1.5", "0.3"])
    proc.stdout.readline()
    cmd = subprocess.Popen([wp.cli()] + attach_args(proc.pid, wp.tmp_path("attach_killed.prof"),
                                                    "wall"),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           start_new_session=True)
    time.sleep(0.7)
    t.check(cmd.poll() is None, "wallprof --pid runs until killed")
    os.killpg(cmd.pid, signal.SIGKILL)
    cmd.wait()
    time.sleep(0.1)
    t.eq(tracer_pid(proc.pid), 0, "TracerPid is 0 after wallprof was killed")
    rc, out, err = finish(proc)
    t.eq((rc, out), (0, "done\n"), "the program ends as usual after wallprof's SIGKILL", err)


def late_threads(t):
    for mode in ("cpu", "wall"):
        truth_path = wp.tmp_path("attach_late_%s.truth" % mode)
        prof = wp.tmp_path("attach_late_%s.prof" % mode)
        proc = start([wp.target("attach_late"), "0.8", "1.0"], env={"WP_TRUTH": truth_path})
        proc.stdout.readline()
        r = wp.wallprof(attach_args(proc.pid, prof, mode), timeout=120)
        rc, out, err = finish(proc)
        t.eq(r.returncode, 0, "[%s] wallprof --pid exits 0" % mode, r.describe())
        t.eq(rc, 0, "[%s] attach_late exits 0" % mode, err)
        truth = wp.read_truth(truth_path)
        tids = wp.truth_tids(truth)
        raw = wp.read_raw(prof)
        p = wp.load(prof)
        counts = {}
        for name in ("late-1", "late-2"):
            th = raw.threads.get(tids.get(name, -1))
            t.check(th is not None, "[%s] %s (started while attached) has a THREAD record"
                    % (mode, name), str(list(raw.threads)))
            fn = "late_burn_%s" % name[-1]
            sub = p.thread(name)
            counts[name] = sub.total()
            expected = truth["cpu.%s" % name] / 1e9 * HZ
            t.check(sub.total() >= 0.5 * expected, "[%s] %s: %d samples (~%.0f of CPU time)"
                    % (mode, name, sub.total(), expected))
            t.check(sub.total() and sub.through(fn).total() >= 0.95 * sub.total(),
                    "[%s] %s's samples are in %s" % (mode, name, fn), lambda: p.top(8))
        if mode == "cpu" and sum(counts.values()):
            share = counts["late-1"] / sum(counts.values())
            want = truth["cpu.late-1"] / (truth["cpu.late-1"] + truth["cpu.late-2"])
            t.near(share, want, 0.05, "[cpu] late-1's share of the late threads' samples")


WAIT_OBJECT = re.compile(r"^\s+([\d.]+)%\s+[\d.]+ \S+\s+(\w+)\s+(\S.*)$")


def wait_objects(report):
    """{(kind, object): share} of a text report's WAITS section, a pipe's inode left out."""
    out, on = {}, False
    for line in report.splitlines():
        if line.strip().startswith("WAITS ("):
            on = True
        elif on and line.startswith("====") and out:
            break
        elif on:
            m = WAIT_OBJECT.match(line)
            if m:
                # a pipe's peer "seen blocked on it" is named only when a sample caught it
                # blocked there, by its tid: neither says what the wait is
                name = re.sub(r", seen blocked on it: [^)]*", "", m.group(3))
                out[(m.group(2), re.sub(r"\[\d+\]", "[N]", name))] = float(m.group(1))
    return out


def waits_named(t):
    """demo's waits, attached in wall mode, have the names a recorded run gives them, and the
    lock's holders are named."""
    rec = wp.wallprof(["--hz=1000", "-o", wp.tmp_path("demo_recorded.prof"), "-q", "--",
                       wp.target("demo")], timeout=120)
    proc = start([wp.target("demo")])
    time.sleep(0.3)
    r = wp.wallprof(attach_args(proc.pid, wp.tmp_path("demo_attached.prof"), "wall",
                                fmt="text"), timeout=120)
    finish(proc)
    want = wait_objects(rec.stdout)
    got = wait_objects(r.stdout)
    t.check(("lock", "table_lock") in want, "the recorded run names the lock table_lock",
            rec.stdout[-3000:])
    for obj in sorted(want):
        # the waits a recorded run sees a while (a brief one, a sleep cut short, may be
        # missed or named by its remaining time)
        if want[obj] >= 2.0 and obj[0] in ("lock", "join", "io", "sleep"):
            t.check(obj in got, "attached: the wait %s %s is named as in a recorded run" % obj,
                    "attached: %s" % sorted(got))
    t.check("held by: worker-" in r.stdout, "attached: table_lock's holders are named",
            r.stdout[-3000:])
    # parser only computes: its time is running or waiting for a CPU (schedstat's runqueue
    # time), none of it in no known call
    budgets = wp.time_budgets(r.stdout, by_name=True)
    # a worker woken from its lock and not run since is waiting for a CPU, not in no known
    # call (20% of the workers' time was, before runnable threads were given CPU waits)
    for name in ("worker-1", "worker-2", "worker-3", "worker-4"):
        b = budgets.get(name, {})
        t.check(b and b.get("waiting in no known call", 0) <= 3,
                "attached: %s's time in no known call is under 3%%: %r" % (name, b))
    parser = budgets.get("parser", {})
    t.check(parser.get("running", 0) + parser.get("waiting for a CPU", 0) >= 97,
            "attached: parser's time budget is running or waiting for a CPU: %r" % parser)


def deadlock_named(t):
    """A process stuck in a deadlock when wallprof attaches (test/targets/deadlock abba): the
    report of the attached run names it, as a recorded run's does (the LAST records the
    outside sampler writes at the detach)."""
    stuck = wp.tmp_path("attach_deadlock.stuck")
    proc = start([wp.target("deadlock"), "abba", stuck])
    try:
        for _ in range(100):
            if os.path.exists(stuck) and os.path.getsize(stuck):
                break
            time.sleep(0.05)
        r = wp.wallprof(attach_args(proc.pid, wp.tmp_path("attach_deadlock.prof"), "wall",
                                    duration=1, fmt="text"), timeout=60)
        t.eq(r.returncode, 0, "attached to a deadlocked process: exits 0", r.describe())
        t.check("DEADLOCK: 2 threads wait for each other" in r.stdout,
                "attached: the deadlock is named in the report", r.stdout[:3000])
        for name in ("abba-1", "abba-2"):
            t.check(re.search(r"^%s \(tid \d+\) waits for lock abba_lock_" % name, r.stdout,
                              re.M), "attached: %s's wait is in the DEADLOCK section" % name)
        t.check(proc.poll() is None, "the deadlocked process is left as it was")
    finally:
        proc.kill()
        proc.wait()


def children(t):
    truth = wp.tmp_path("attach_tree.truth")
    prof = wp.tmp_path("attach_tree.prof")
    for f in os.listdir(os.path.dirname(prof)):
        if f.startswith("attach_tree.") and f.endswith(".prof") or f == os.path.basename(truth):
            os.unlink(os.path.join(os.path.dirname(prof), f))
    hz = 200
    proc = start(["sh", "-c", "sleep 0.5; exec %s 2" % wp.target("tree_burn")],
                 env={"WP_TRUTH": truth})
    r = wp.wallprof(["--pid=%d" % proc.pid, "--mode=cpu", "--hz=%d" % hz, "-o", prof, "-q", "-f",
                     "text"], timeout=120)
    finish(proc)
    t.eq(r.returncode, 0, "tree: wallprof --pid exits 0", r.describe())
    roles = {}
    with open(truth) as f:
        for line in f:
            pid, _, cpu_ns, role = line.split()
            roles[role] = (int(pid), int(cpu_ns))
    t.eq(sorted(roles), ["child", "exec-child", "grandchild", "root"], "tree: the truth has "
         "every process")
    run = wp.read_raw(prof).meta.get("run")
    t.check(run, "tree: the main file has a run id")
    for role, func in (("child", "burn_child"), ("grandchild", "burn_grandchild"),
                       ("exec-child", "burn_exec_child")):
        pid, cpu_ns = roles.get(role, (0, 0))
        side = prof[:-len(".prof")] + ".%d.prof" % pid
        if not t.check(os.path.exists(side), "tree: %s (pid %d) has its file %s"
                       % (role, pid, os.path.basename(side)), repr(sorted(os.listdir(
                           os.path.dirname(prof))))):
            continue
        t.eq(wp.read_raw(side).meta.get("run"), run, "tree: %s's file is of the same run" % role)
        p = wp.load(side)
        got, want = p.through(func).total(), cpu_ns * hz / 1e9
        # (sampled from when its sampler attached: up to 100 ms and a start after its fork)
        t.check(got >= 0.5 * want, "tree: %s's samples in %s: %d of ~%.0f its CPU time gives"
                % (role, func, got, want), p.top(5))
        t.check(str(pid) in r.stdout, "tree: the report lists %s (pid %d)" % (role, pid),
                r.stdout[:2000])


def main(t):
    if not wp.require_built(os.path.join(wp.build_dir(), "src", "outside", "wallprof-outside")):
        return
    cpu_accuracy(t)
    waits_named(t)
    deadlock_named(t)
    late_threads(t)
    detach_and_kill(t)
    transparency(t)
    children(t)


wp.main(main)
