# SPDX-License-Identifier: MIT
"""Deadlocks named (issue 21 point 3, recorded runs). test/targets/deadlock.c deadlocks its
threads (abba: two threads, two mutexes taken in opposite orders; ring: three threads; self:
a thread relocking its own normal mutex; join: a thread holding a mutex joins a thread
waiting for it), writes its truth (which thread holds and waits for
which lock, the line of the call that blocks) and says "stuck" once each thread of the loop
sleeps in futex; then it blocks for good, its main thread joining a thread of the loop.

Run under `wallprof` in wall mode, it is stopped as a user would: SIGINT to the command (which
passes it on; the program dies of it), for ring also SIGTERM to the command (the agent's flush
in its fatal-signal handler then spins 10 ms first: ticks meanwhile find main moved and
unanswering, and must not count that as the program's), and for abba also
SIGKILL to the program (the agent's task writes the profile after it). Checked against the truth:
  * the text report has a DEADLOCK section before the flat profile naming each thread of the
    loop with its tid, the lock it waits for by its symbol, the holder (the thread that holds
    it, or itself; for join, the joined thread), and its stack: lock_second at the line that
    blocks, then the thread's function (join_other then joiner_main for the joiner);
    main, which waits for the loop (a join) but is not in it, is not named in it;
  * every other format carries the loop in a line: folded and csv on the command's stderr,
    pprof as a comment (read back by `go tool pprof -comments` when go is there), speedscope
    in its "name", the flame graph in its subtitle.
Negative: contend (four threads taking two mutexes in the same order, over and over: heavy
contention, every thread's last sample blocked on a lock held by another) stopped by SIGINT
reports no deadlock in any format.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wpformat as wf  # noqa: E402
import wplib as wp  # noqa: E402

HZ = 200


def run_stuck(t, mode, stop, slow_fatal=False):
    """Runs the target's `mode` under wallprof until it says it is stuck, stops it with
    `stop` ("int": SIGINT to wallprof, "term": SIGTERM to wallprof, "kill": SIGKILL to the
    program), -> (Result-like
    (returncode, stdout, stderr), truth, profile path)."""
    prof = wp.tmp_path("%s-%s.prof" % (mode, stop))
    truth_path = wp.tmp_path("%s-%s.truth" % (mode, stop))
    ready = wp.tmp_path("%s-%s.ready" % (mode, stop))
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("WALLPROF_") or k == "LD_PRELOAD":
            del env[k]
    env["WP_TRUTH"] = truth_path
    if slow_fatal:
        env["WALLPROF_TEST"] = "slow-fatal"
    argv = [wp.cli(), "-q", "--hz=%d" % HZ, "-o", prof, "--",
            wp.target("deadlock"), mode, ready]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 30 * wp.timeout_mult()
        while not os.path.exists(ready) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        t.check(os.path.exists(ready), "%s: the target says it is stuck" % mode)
        time.sleep(0.4)  # a few ticks of the stuck program
        truth = wp.read_truth(truth_path) if os.path.exists(truth_path) else {}
        t.check(proc.poll() is None, "%s: the stuck program is still running" % mode)
        if stop in ("int", "term"):
            proc.send_signal(signal.SIGINT if stop == "int" else signal.SIGTERM)
        elif "pid" in truth:
            os.kill(int(truth["pid"]), signal.SIGKILL)
        out, err = proc.communicate(timeout=60 * wp.timeout_mult())
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        proc.wait()
    res = wp.Result(argv, proc.returncode, out.decode("utf-8", "replace"),
                    err.decode("utf-8", "replace"), 0.0)
    want = {"int": -signal.SIGINT, "term": -signal.SIGTERM, "kill": -signal.SIGKILL}[stop]
    t.check(res.returncode == want, "%s: wallprof dies of the program's signal (%d)" % (mode, want),
            res.describe())
    return res, truth, prof


def expected_members(truth):
    """{thread name: (tid, lock it waits for, holder name)} from the truth; a thread that
    joins another: (tid, None, the joined thread's name)."""
    tids = wp.truth_tids(truth)
    holder_of = {truth["holds." + n]: n for n in tids if "holds." + n in truth}
    out = {}
    for n in tids:
        w = truth["waits." + n]
        out[n] = (tids[n], None, w) if w in tids else (tids[n], w, holder_of[w])
    return out


def section(text):
    """The DEADLOCK sections of a text report (everything from the first to FLAT PROFILE)."""
    at = text.find("DEADLOCK")
    end = text.find("FLAT PROFILE")
    return text[at:end] if 0 <= at < end else ""


def check_text(t, mode, res, truth):
    members = expected_members(truth)
    sec = section(res.stdout)
    n = len(members)
    title = ("DEADLOCK: a thread waits for itself, for good" if n == 1 else
             "DEADLOCK: %d threads wait for each other, for good" % n)
    t.check(title in sec, "%s: the text report's DEADLOCK section (%s) comes before the flat "
            "profile" % (mode, title), res.stdout[:3000])
    t.check(sec.count("DEADLOCK:") == 1, "%s: one deadlock" % mode, sec)
    # each member's block: its line, then its frames, up to the next member's line
    blocks = re.split(r"\n(?=\S+ \(tid \d+\) )", sec)
    line_no = int(truth["line.lock"])
    for name, (tid, lock, holder) in sorted(members.items()):
        if lock is None:
            head = "%s (tid %d) joins %s (tid %d)" % (name, tid, holder, members[holder][0])
        elif holder == name:
            head = "%s (tid %d) waits for lock %s, which it holds itself" % (name, tid, lock)
        else:
            head = "%s (tid %d) waits for lock %s, held by %s (tid %d)" % (
                name, tid, lock, holder, members[holder][0])
        block = next((b for b in blocks if b.startswith(head)), "")
        t.check(block != "", "%s: the section says '%s'" % (mode, head), sec)
        frames = [ln.split() for ln in block.splitlines()[1:]]
        funcs = [f[0] for f in frames if f]
        if lock is None:
            t.check("join_other" in funcs and "joiner_main" in funcs and
                    funcs.index("join_other") < funcs.index("joiner_main"),
                    "%s: %s's stack, leaf first, has join_other then joiner_main" % (mode, name),
                    block)
            continue
        entry = "locker_main" if "locker_main" in funcs else "lockee_main"
        t.check("lock_second" in funcs and entry in funcs and
                funcs.index("lock_second") < funcs.index(entry),
                "%s: %s's stack, leaf first, has lock_second then %s" % (mode, name, entry),
                block)
        t.check(any(f[0] == "lock_second" and f[1] == "deadlock.c:%d" % line_no
                    for f in frames if len(f) > 1),
                "%s: %s's stack shows lock_second at the line that blocks (deadlock.c:%d)" %
                (mode, name, line_no), block)
    main_tid = int(truth["pid"])
    t.check("(tid %d)" % main_tid not in sec, "%s: main (joining the loop, not in it) is not "
            "named in the section" % mode, sec)
    return members


def check_lasts(t, mode, prof, members, killed=False):
    """The profile's LAST records: each thread of the loop blocked in futex (202) with its
    lock's holder as the owner read; main blocked joining the first locker. `killed`: the
    program was SIGKILLed, at any moment, maybe during a tick, which then saw a thread of the
    loop end (META missed_exited) and wrote no LAST record for it (seen once in a clean run:
    abba-2 missed, the rest right): only then is a missing record a note."""
    raw = wp.read_raw(prof)
    last = {l["tid"]: l for l in raw.lasts}
    ended_in_tick = killed and int(raw.meta.get("missed_exited", "0")) > 0
    for name, (tid, lock, holder) in sorted(members.items()):
        l = last.get(tid, {})
        if not l and ended_in_tick:
            t.note("%s: %s has no LAST record: the tick the SIGKILL interrupted saw it end "
                   "(missed_exited %s)" % (mode, name, raw.meta.get("missed_exited")))
            continue
        if lock is None:  # a join sleeps on the joined thread's tid word, expecting its tid
            t.check(l.get("flags", 0) & wf.LAST_IN_CALL and l.get("nr") == 202 and
                    l.get("a2") == members[holder][0],
                    "%s: %s's LAST record: blocked in futex, joining %s" % (mode, name, holder),
                    str(l))
            continue
        t.check(l.get("flags", 0) & wf.LAST_IN_CALL and l.get("nr") == 202 and
                l.get("aux") == members[holder][0],
                "%s: %s's LAST record: blocked in futex, owned by %s" % (mode, name, holder),
                str(l))
    first = next(iter(members.values()))[0]  # lockers[0], the thread main joins
    m = last.get(int(raw.meta.get("pid", 0)), {})
    if not m and ended_in_tick:
        t.note("%s: main has no LAST record: the tick the SIGKILL interrupted saw it end" % mode)
        return
    t.check(m.get("nr") == 202 and m.get("a2") == first,
            "%s: main's LAST record: blocked in futex on the first locker's tid (a join)" % mode,
            str(m))


def lost_in_kill(prof, truth):
    """Whether the SIGKILLed program's final tick saw a member of the loop end (META
    missed_exited) and so left it without a LAST record."""
    raw = wp.read_raw(prof)
    if int(raw.meta.get("missed_exited", "0")) <= 0:
        return False
    last = {l["tid"] for l in raw.lasts}
    return any(tid not in last for tid, _, _ in expected_members(truth).values())


def line_names(line, members):
    """Whether a one-line form names every member with its tid and its lock."""
    return all("%s tid=%d" % (n, tid) in line and
               ("waits for lock %s" % lock if lock else "joins %s tid=" % holder) in line
               for n, (tid, lock, holder) in members.items())


def check_formats(t, mode, prof, members):
    for fmt in ("folded", "csv"):
        r = wp.wallprof(["--report", prof, "--single-file", "--format=" + fmt])
        said = [l for l in r.stderr.splitlines() if l.startswith("wallprof: deadlock: ")]
        t.check(r.returncode == 0 and len(said) == 1 and line_names(said[0], members),
                "%s: --format=%s says the deadlock on stderr, one line naming each thread "
                "and lock" % (mode, fmt), r.describe())
        t.check("deadlock:" not in r.stdout, "%s: --format=%s's own output has no line of it" %
                (mode, fmt))
    r = wp.wallprof(["--report", prof, "--single-file", "--format=speedscope"])
    try:
        name = json.loads(r.stdout)["name"]
    except ValueError:
        name = ""
    t.check("; deadlock: " in name and line_names(name, members),
            "%s: speedscope's name carries the deadlock" % mode, name)
    r = wp.wallprof(["--report", prof, "--single-file", "--format=svg"])
    m = re.search(r'<text id="wp-subtitle"[^>]*>([^<]*)<', r.stdout)
    sub = m.group(1).replace("&amp;", "&") if m else ""
    t.check(sub.startswith("deadlock: ") and line_names(sub, members),
            "%s: the flame graph's subtitle names the deadlock" % mode, sub)
    pb = wp.tmp_path("%s.pb.gz" % mode)
    r = wp.wallprof(["--report", prof, "--single-file", "--format=pprof",
                     "--report-output=" + pb])
    t.check(r.returncode == 0, "%s: --format=pprof" % mode, r.describe())
    go = shutil.which("go")
    if not go:
        t.note("go not installed: pprof's comment not read back (./scripts/deps)")
        return
    r = wp.run([go, "tool", "pprof", "-comments", pb], timeout=120)
    said = [l for l in r.stdout.splitlines() if l.startswith("deadlock: ")]
    t.check(r.returncode == 0 and len(said) == 1 and line_names(said[0], members),
            "%s: go tool pprof -comments shows the deadlock" % mode, r.describe() + r.stdout)


def check_contend(t):
    res, truth, prof = run_stuck(t, "contend", "int")
    t.check("[RUN]" in res.stdout and "DEADLOCK" not in res.stdout,
            "contend: heavy contention is no deadlock in the text report", res.stdout[:3000])
    t.check("lock contend_lock_1" in res.stdout or "lock contend_lock_2" in res.stdout,
            "contend: the report shows the threads waiting for the locks (the test can fail)",
            res.stdout[:4000])
    for fmt in ("folded", "speedscope", "svg"):
        r = wp.wallprof(["--report", prof, "--single-file", "--format=" + fmt])
        t.check(r.returncode == 0 and "deadlock" not in r.stderr and "deadlock:" not in r.stdout,
                "contend: no deadlock in --format=%s" % fmt, r.describe())


def main(t):
    if not wp.require_built(wp.target("deadlock")):
        return
    for mode, stop in (("abba", "int"), ("abba", "kill"), ("ring", "int"), ("ring", "term"),
                       ("self", "int"), ("join", "int")):
        # ring's SIGTERM: the agent's flush spins 10 ms first, so that ticks signal main, now
        # in a handler that blocks every signal, and time out (its join counted again, with
        # no call, became its LAST record once in CI: check_lasts)
        res, truth, prof = run_stuck(t, mode, stop, slow_fatal=(stop == "term"))
        label = "%s (SIG%s)" % (mode, stop.upper())
        if stop == "kill" and lost_in_kill(prof, truth):
            # the SIGKILL landed in a tick, which saw a thread of the loop end and wrote no
            # LAST record for it: without it the loop cannot be named (2 runs in ~30 in
            # clean runs of the suite). Said, not failed: check_lasts holds the rest.
            t.note("%s: a loop member has no LAST record (missed_exited %s): the DEADLOCK "
                   "section is not expected" % (label, wp.read_raw(prof).meta.get(
                       "missed_exited")))
            check_lasts(t, label, prof, expected_members(truth), killed=True)
            continue
        members = check_text(t, label, res, truth)
        check_lasts(t, label, prof, members, killed=(stop == "kill"))
        if stop == "int":
            check_formats(t, label, prof, members)
    check_contend(t)


wp.main(main)
