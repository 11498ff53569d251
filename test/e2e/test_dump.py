# SPDX-License-Identifier: MIT
"""wallprof --dump --pid=PID (issue 21 point 3): one snapshot of a running process, now,
taken from outside by wallprof-outside --once, checked against the truth its targets print:

  * deadlock: test/targets/deadlock abba and self run unprofiled; once stuck, the dump (text
    and json) names the deadlock first, with each thread of the loop by name and tid, the lock
    it waits for by its symbol and its holder (abba: the other thread; self: itself), and its
    stack through lock_second; afterwards the process is alive, each thread blocked in the
    same call as before, TracerPid 0;
  * states: test/targets/waits (a thread computing while holding big_lock, three lockers
    blocked behind it, a reader of a pipe, a sleeper, a joiner, a waiter for a child...) and
    idle_pool (20 identical threads): each thread's state, its call and what it waits for, as
    a recorded run names it (the lock and its holder's tid, the pipe's inode, the sleep's
    length, the joined thread, the child's pid), how long it has waited (the lockers: about
    the target's age; the sleeper: under its 10 ms sleep plus slack), and alike threads in
    one group (the three lockers, the 20 idle threads);
  * cpuwait pinned (four threads on one CPU): the spinners run in spin_until, and at least
    two waited for a CPU during the snapshot (their runqueue time, json and text);
  * how long the process was stopped is said: 0 (nothing is stopped), in text and json;
  * dstate (a thread waiting for its vfork child: D; a sleeper and a joiner: S), then the same
    stopped by SIGSTOP (T; the vfork waiter stays D): each thread's state in json and text is
    /proc's (disk, blocked, stopped), and the dump leaves the stopped process stopped;
  * a refusal (no such pid) is one line, exit status 1; --format=json without --dump is a
    usage error.
"""
import json
import os
import re
import signal
import subprocess
import time

import wplib as wp


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
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("TracerPid:"):
                return int(line.split()[1])
    return None


def thread_calls(pid):
    """{tid: the first field of /proc/PID/task/TID/syscall} (the call each thread is in)."""
    out = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/syscall" % (pid, tid)) as f:
                out[int(tid)] = f.read().split()[0]
        except OSError:
            pass
    return out


def thread_names(pid):
    """{name: [tids]} of a live process, from each thread's comm."""
    out = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                out.setdefault(f.read().strip(), []).append(int(tid))
        except OSError:
            pass
    return out


def dump(pid, fmt=None):
    args = ["--dump", "--pid=%d" % pid] + (["--format=%s" % fmt] if fmt else [])
    return wp.wallprof(args, timeout=60)


def dump_json_until(pid, ok, tries=3):
    """The json dump of pid, taken again (up to `tries` times) until ok(dump) holds: a running
    thread has 100 ms to be sampled by its clock, which a loaded machine may not give it.
    -> (the last dump's Result, its parsed json or None)."""
    for _ in range(tries):
        r = dump(pid, "json")
        j = json.loads(r.stdout) if r.returncode == 0 else None
        if j is not None and ok(j):
            break
    return r, j


def wait_for_file(path, proc, secs=30):
    deadline = time.monotonic() + secs * wp.timeout_mult()
    while time.monotonic() < deadline and proc.poll() is None:
        if os.path.exists(path) and os.path.getsize(path):
            return True
        time.sleep(0.05)
    return False


def deadlock(t, mode):
    stuck = wp.tmp_path("dump_%s.stuck" % mode)
    truth_path = wp.tmp_path("dump_%s.truth" % mode)
    proc = start([wp.target("deadlock"), mode, stuck], env={"WP_TRUTH": truth_path})
    try:
        t.check(wait_for_file(stuck, proc), "%s: the target says it is stuck" % mode)
        truth = wp.read_truth(truth_path)
        tids = wp.truth_tids(truth)
        loop = {n: tid for n, tid in tids.items() if "waits." + n in truth}
        t.check(len(loop) == (2 if mode == "abba" else 1), "%s: the truth names the loop" % mode,
                repr(truth))
        before = thread_calls(proc.pid)
        r = dump(proc.pid)
        t.eq(r.returncode, 0, "%s: --dump exits 0" % mode, r.describe())
        text = r.stdout
        dl = text.find("DEADLOCK:")
        th = text.find("THREADS\n")
        t.check(0 <= dl < th, "%s: the DEADLOCK section comes first, before the threads" % mode,
                text[:3000])
        section = text[dl:th]
        holder_of = {truth["holds." + n]: n for n in tids if "holds." + n in truth}
        for name, tid in loop.items():
            lock = truth["waits." + name]
            holder = holder_of.get(lock)
            if holder == name:
                want = r"^%s \(tid %d\) waits for lock %s, which it holds itself" % (name, tid,
                                                                                      lock)
            else:
                want = r"^%s \(tid %d\) waits for lock %s, held by %s \(tid %d\)" % (
                    name, tid, lock, holder, tids[holder])
            t.check(re.search(want, section, re.M), "%s: text names %s's wait: %s" % (mode, name,
                                                                                      want),
                    section)
        t.check(section.count("lock_second") >= len(loop),
                "%s: each loop thread's stack is shown (lock_second)" % mode, section)
        t.check(re.search(r"stopped for 0 s", text), "%s: text says the process was stopped "
                "for 0 s" % mode, text[:600])
        rj = dump(proc.pid, "json")
        t.eq(rj.returncode, 0, "%s: --dump --format=json exits 0" % mode, rj.describe())
        j = json.loads(rj.stdout)
        t.eq(j["stopped_ns"], 0, "%s: json stopped_ns is 0" % mode)
        t.eq(j["pid"], proc.pid, "%s: json pid" % mode)
        t.eq(len(j["deadlocks"]), 1, "%s: json has one deadlock" % mode, rj.stdout[:2000])
        if j["deadlocks"]:
            got = {m["name"]: m for m in j["deadlocks"][0]["threads"]}
            t.eq(set(got), set(loop), "%s: json's loop threads are the truth's" % mode)
            for name, m in got.items():
                if name not in loop:
                    continue
                lock = truth["waits." + name]
                t.check(m["tid"] == loop[name] and m["waits_for"]["kind"] == "lock" and
                        m["waits_for"]["object"] == lock and
                        m["holder_tid"] == tids[holder_of[lock]] and
                        any(f["function"] == "lock_second" for f in m["stack"]),
                        "%s: json names %s (tid, lock, holder, stack)" % (mode, name), repr(m))
        t.check(proc.poll() is None, "%s: the process is alive after the dumps" % mode)
        t.eq(tracer_pid(proc.pid), 0, "%s: TracerPid 0 after the dumps" % mode)
        t.eq(thread_calls(proc.pid), before, "%s: each thread is in the same call as before"
             % mode)
    finally:
        proc.kill()
        proc.wait()


def groups_by_name(j):
    """{thread name: its group} from the json."""
    return {th["name"]: g for g in j["groups"] for th in g["threads"]}


def states(t):
    truth_path = wp.tmp_path("dump_waits.truth")
    born = time.monotonic()
    proc = start([wp.target("waits"), "5"], env={"WP_TRUTH": truth_path})
    try:
        time.sleep(2.0)
        names = thread_names(proc.pid)
        def holder_sampled(j):
            return any(f["function"] == "compute_holding_lock"
                       for f in groups_by_name(j).get("holder", {}).get("stack", []))
        rj, _ = dump_json_until(proc.pid, holder_sampled)
        age = time.monotonic() - born
        # the text the same way: taken again (3 times at most) while the holder was not
        # sampled running or the sleeper not blocked in its sleep (a loaded machine, the
        # suite's other tests beside it, may not give them that in the snapshot's 100 ms)
        for _ in range(3):
            rt = dump(proc.pid)
            if re.search(r"^holder \(tid \d+\)\n    (running|runnable)", rt.stdout, re.M) and \
                    re.search(r"^sleeper \(tid \d+\)\n    blocked in \w*nanosleep", rt.stdout,
                              re.M):
                break
        t.eq(tracer_pid(proc.pid), 0, "waits: TracerPid 0 after the dumps")
        t.eq(rj.returncode, 0, "waits: --dump --format=json exits 0", rj.describe())
        t.eq(rt.returncode, 0, "waits: --dump exits 0", rt.describe())
        # the truth (the pipe's inode, the child's pid) is written as the target ends
        t.check(proc.wait(timeout=60) == 0, "waits: the target ends as usual after the dumps")
        truth = wp.read_truth(truth_path) if os.path.exists(truth_path) else {}
        j = json.loads(rj.stdout)
        g = groups_by_name(j)
        holder_tid = names.get("holder", [0])[0]

        def wait_of(name):
            w = g.get(name, {}).get("wait") or {}
            return w.get("kind"), w.get("object") or "", w.get("holder_tid")

        lk = g.get("locker-1", {})
        t.check(lk.get("count") == 3 and
                {th["name"] for th in lk.get("threads", [])} == {"locker-1", "locker-2",
                                                                 "locker-3"},
                "waits: the three lockers are one group", repr(lk)[:800])
        t.eq(lk.get("state"), "blocked", "waits: the lockers are blocked")
        t.eq(wait_of("locker-1"), ("lock", "big_lock", holder_tid),
             "waits: the lockers wait for big_lock held by holder's tid")
        for th in lk.get("threads", []):
            w = th.get("waited_ns")
            t.check(w is not None and 0.8 * age - 0.5 < w / 1e9 < age + 0.1,
                    "waits: %s has waited about the target's age (%.2f s): %r" %
                    (th["name"], age, w))
        t.check(g.get("holder", {}).get("state") in ("running", "runnable") and
                any(f["function"] == "compute_holding_lock"
                    for f in g.get("holder", {}).get("stack", [])),
                "waits: holder is running in compute_holding_lock", repr(g.get("holder"))[:800])
        t.check(wait_of("reader")[0] == "io" and
                str(truth.get("pipe", "?")) in wait_of("reader")[1],
                "waits: reader waits on its pipe %s" % truth.get("pipe"), repr(wait_of("reader")))
        sk, so, _ = wait_of("sleeper")
        sl = g.get("sleeper", {})
        t.check(sk == "sleep" and "10ms" in so, "waits: sleeper sleeps 10ms: %r" % ((sk, so),),
                repr(sl)[:1500])
        sw = [th.get("waited_ns") for th in sl.get("threads", [])]
        t.check(sw and sw[0] is not None and sw[0] < 0.2e9,
                "waits: sleeper has waited less than its sleep plus slack: %r" % sw)
        t.check(wait_of("joiner")[0] == "join" and "joinee" in wait_of("joiner")[1],
                "waits: joiner joins joinee: %r" % (wait_of("joiner"),))
        t.check(wait_of("childwaiter")[0] == "child" and
                str(int(truth.get("child", -1))) in wait_of("childwaiter")[1],
                "waits: childwaiter waits for its child %s: %r" % (truth.get("child"),
                                                                   wait_of("childwaiter")))
        t.check(wait_of("naplocker")[:2] == ("lock", "nap_lock"),
                "waits: naplocker waits for nap_lock: %r" % (wait_of("naplocker"),))
        # the text says the same
        text = rt.stdout
        t.check(re.search(r"^3 threads alike: locker-\d \(tid \d+\), locker-\d \(tid \d+\), "
                          r"locker-\d \(tid \d+\)\n    blocked in futex, waiting for lock "
                          r"big_lock, held by holder \(tid %d\), for " % holder_tid, text, re.M),
                "waits: text groups the lockers with their wait and holder", text[:4000])
        t.check(re.search(r"^sleeper \(tid \d+\)\n    blocked in \w*nanosleep, waiting for "
                          r"sleep 10ms", text, re.M), "waits: text names the sleeper's sleep",
                text[:6000])
        t.check(re.search(r"^holder \(tid %d\)\n    (running|runnable)" % holder_tid, text, re.M),
                "waits: text says holder runs", text[:6000])
    finally:
        proc.kill()
        proc.wait()


def pool(t):
    proc = start([wp.target("idle_pool"), "20", "30"])
    try:
        line = proc.stdout.readline().decode()
        t.check("20 threads" in line, "idle_pool: says its threads wait", line)
        rj = dump(proc.pid, "json")
        t.eq(rj.returncode, 0, "idle_pool: --dump exits 0", rj.describe())
        j = json.loads(rj.stdout)
        idle = [g for g in j["groups"] if g["threads"][0]["name"] == "idle"]
        t.check(len(idle) == 1 and idle[0]["count"] == 20 and
                idle[0]["wait"] and idle[0]["wait"]["kind"] == "condition",
                "idle_pool: the 20 idle threads are one group waiting on a condition",
                repr([(g["count"], g["wait"]) for g in idle]))
        t.check(j["groups"][0] is (idle[0] if idle else None),
                "idle_pool: the biggest group comes first")
        rt = dump(proc.pid)
        t.check(re.search(r"^20 threads alike: idle \(tid \d+\)", rt.stdout, re.M),
                "idle_pool: text groups the 20 idle threads", rt.stdout[:3000])
    finally:
        proc.kill()
        proc.wait()


def cpu_queue(t):
    """cpuwait pinned: spin-a, spin-b, spin-n5 and half share one CPU; at most one runs as the
    snapshot begins, so at least two spinners queue and run during it (to be sampled): the
    dump shows them running in spin_until with the runqueue time they waited."""
    proc = start([wp.target("cpuwait"), "20", "pinned"])
    try:
        time.sleep(1.0)
        def spinners_sampled(j):
            g = groups_by_name(j)
            return all(g.get(n, {}).get("stack") for n in ("spin-a", "spin-b", "spin-n5"))
        rj, _ = dump_json_until(proc.pid, spinners_sampled)
        rt = dump(proc.pid)
        t.eq(rj.returncode, 0, "cpuwait: --dump exits 0", rj.describe())
        g = groups_by_name(json.loads(rj.stdout))
        spin = {n: g.get(n, {}) for n in ("spin-a", "spin-b", "spin-n5")}
        t.check(all(x.get("state") in ("running", "runnable") and
                    any(f["function"] == "spin_until" for f in x.get("stack", []))
                    for x in spin.values()),
                "cpuwait: the spinners run (or wait for a CPU) in spin_until",
                repr({n: (x.get("state"), x.get("stack", [])[:1]) for n, x in spin.items()}))
        queued = [th["queued_ns"] for x in json.loads(rj.stdout)["groups"]
                  for th in x["threads"] if th["name"] in spin]
        t.check(sum(q > 0 for q in queued) >= 2,
                "cpuwait: at least two spinners waited for a CPU during the snapshot: %r"
                % queued)
        t.check("also waited for a CPU (runqueue time grew by" in rt.stdout,
                "cpuwait: the text says a spinner waited for a CPU", rt.stdout[:3000])
    finally:
        proc.kill()
        proc.wait()


def proc_states(pid):
    """{tid: /proc's state letter} of every thread."""
    out = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                out[int(tid)] = f.read().rpartition(")")[2].split()[0]
        except OSError:
            pass
    return out


def until_states(pid, want, secs=5):
    """Waits until every thread's /proc state is in `want` ({tid: letters}); returns them."""
    deadline = time.monotonic() + secs * wp.timeout_mult()
    while True:
        st = proc_states(pid)
        if all(st.get(tid, "?") in letters for tid, letters in want.items()) or \
                time.monotonic() > deadline:
            return st
        time.sleep(0.02)


JSON_STATE = {"D": "disk", "S": "blocked", "T": "stopped", "t": "stopped"}
TEXT_STATE = {"D": "in uninterruptible sleep", "S": "blocked", "T": "stopped by a signal"}


def dt_states(t):
    """D and T: a thread waiting for its vfork child is in D; SIGSTOP puts the others in T."""
    proc = start([wp.target("dstate"), "6"])
    try:
        t.check(b"ready" in proc.stdout.readline(), "dstate: starts")
        names = {n: tids[0] for n, tids in thread_names(proc.pid).items()}
        vf, nap = names.get("vforker"), names.get("napper")
        if not t.check(vf and nap, "dstate: its threads are named", repr(names)):
            return
        for stop in (False, True):
            label = "stopped" if stop else "running"
            if stop:
                os.kill(proc.pid, signal.SIGSTOP)
            want = {vf: "D", nap: "T" if stop else "S", proc.pid: "T" if stop else "S"}
            before = until_states(proc.pid, want)
            rj, rt = dump(proc.pid, "json"), dump(proc.pid)
            after = proc_states(proc.pid)
            t.eq(rj.returncode, 0, "dstate %s: --dump exits 0" % label, rj.describe())
            t.eq(before, after, "dstate %s: /proc's states held during the dumps" % label)
            g = {th["tid"]: gr for gr in json.loads(rj.stdout or "{}").get("groups", [])
                 for th in gr["threads"]}
            for tid, letter in sorted(before.items()):
                t.eq(g.get(tid, {}).get("state"), JSON_STATE.get(letter),
                     "dstate %s: json names tid %d's state %s as /proc's %s"
                     % (label, tid, g.get(tid, {}).get("state"), letter), rj.stdout[:2000])
                head = re.search(r"\(tid %d\)\n    (.*)" % tid, rt.stdout)
                t.check(head and head.group(1).startswith(TEXT_STATE.get(letter, "?")),
                        "dstate %s: text names tid %d's state (%s): %r"
                        % (label, tid, letter, head and head.group(1)), rt.stdout[:3000])
            t.check("waiting for child" in (g.get(vf, {}).get("wait") or {}).get("kind", "") +
                    " " + (g.get(vf, {}).get("wait") or {}).get("object", "") or
                    re.search(r"\(tid %d\)\n    .*waiting for child" % vf, rt.stdout),
                    "dstate %s: the vfork waiter waits for its child" % label, rt.stdout[:3000])
        t.eq(tracer_pid(proc.pid), 0, "dstate: TracerPid 0 after the dumps")
        os.kill(proc.pid, signal.SIGCONT)
        t.eq(proc.wait(timeout=30), 0, "dstate: continued, it ends as usual (0)")
    finally:
        proc.kill()
        proc.wait()


def refusals(t):
    r = wp.wallprof(["--dump", "--pid=999999"])
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    t.check(r.returncode == 1 and len(lines) == 1 and "no process has pid 999999" in lines[0],
            "no such pid: one line, exit status 1", r.describe())
    t.eq(r.stdout, "", "no such pid: nothing on standard output")
    r = wp.wallprof(["--format=json", "--pid=1"])
    t.check(r.returncode == 2 and "--format=json goes with --dump" in r.stderr,
            "--format=json without --dump: a usage error", r.describe())


def main(t):
    if not wp.require_built(os.path.join(wp.build_dir(), "src", "outside", "wallprof-outside")):
        return
    refusals(t)
    for mode in ("abba", "self"):
        deadlock(t, mode)
    states(t)
    pool(t)
    cpu_queue(t)
    dt_states(t)


wp.main(main)
