# SPDX-License-Identifier: MIT
"""pprof's wait labels (issue 13), read back by the real consumer, `go tool pprof`.

test/targets/waits.c: a holder computes holding big_lock, three lockers wait for it, and
threads wait in read (pipe), recv (TCP), nanosleep (10 ms), pthread_join, pthread_cond_wait
and waitpid, each for the whole run; it reports the tids, the pipe's and socket's inodes.
test/targets/wait_split.c: one thread naps from one call site, alternately 10 ms and 30 ms,
and measures the time spent in each.

Wall mode, `--format=pprof`, then `go tool pprof`:
  -tags        label `state`: running + waiting = every sample, waiting = the waiting stacks'
               samples; `wait` and `wait_object`: per kind and per object the same samples as
               the folded `--waits` report; `holder`: "holder tid=N" (the holder's real tid)
               on the lock samples that name it
  -tagfocus    wait_object=big_lock keeps >= 90% of each locker's waiting samples, and those
               carry holder=holder tid=N in >= 90%; wait_object=pipe:[INODE] is the reader's,
               socket:[INODE] the sockreader's; wait=sleep -top shows clock_nanosleep only
  wait_split   one stack, two objects: two samples with the same locations; -tags
               wait_object 10ms and 30ms exactly the folded --waits split, and within 8
               points of the napper's own 1:3 time split.
  --wait-leaves=on  -top: the wait leaves "[wait KIND OBJECT]" are leaf frames of the
               samples, as many as folded --wait-leaves=on's; a wait for a CPU is one
               too, [wait cpu runqueue] (state=runnable, a label as without leaves).
The decoded wire: every waiting sample with a known wait has both `wait` and `wait_object`.
"""
import gzip
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wplib as wp  # noqa: E402
from test_pprof import decode_profile, go_pprof, parse_tags, parse_top  # noqa: E402

HZ = 200
SHARE = 0.90


def record(t, name, argv, seconds):
    prof = wp.tmp_path(name + ".prof")
    truth_path = wp.tmp_path(name + ".truth")
    r = wp.run_preloaded(argv + [str(seconds)],
                         env=wp.preload_env(mode="wall", hz=HZ, out=prof,
                                            extra={"WP_TRUTH": truth_path}), timeout=120)
    t.check(r.returncode == 0, "%s exits 0" % name, r.describe())
    return prof, wp.read_truth(truth_path)


def export(t, prof, *extra):
    pb = wp.tmp_path(os.path.basename(prof) + ".pb.gz")
    # --single-file: the target's forked child writes a profile of its own; these checks are
    # of the parent's file (read raw by the test)
    r = wp.wallprof(["--report", prof, "--single-file", "--format=pprof", "--report-output",
                     pb] + list(extra))
    t.check(r.returncode == 0, "wallprof --report %s --format=pprof" % os.path.basename(prof),
            r.describe())
    return pb


def folded_waits(prof):
    """{(kind, object): samples} and {(kind, object, held-by frame): samples} from folded
    --waits."""
    r = wp.wallprof(["--report", prof, "--single-file", "--format=folded", "--waits"])
    objs, held = {}, {}
    for frames, n in wp.parse_folded(r.stdout).items():
        for i, f in enumerate(frames):
            m = re.match(r"^\[wait (\S+) (.*)\]$", f)
            if m:
                k = (m.group(1), m.group(2))
                objs[k] = objs.get(k, 0) + n
                h = frames[i + 1] if i + 1 < len(frames) else None
                if h:
                    hk = h[len("[held by "):-1]
                    held[hk] = held.get(hk, 0) + n
    return objs, held


def waits_run(t, pp):
    prof, truth = record(t, "waits", [wp.target("waits")], 2.0)
    tid = wp.truth_tids(truth)
    raw = wp.read_raw(prof)
    pb = export(t, prof)
    total = sum(s["count"] for s in raw.stacks)
    waiting = sum(s["count"] for s in raw.stacks if s["flags"] & 0x1)

    r = pp.run("-tags", "-sample_index=samples", pb)
    tags = parse_tags(r.stdout)
    state = tags.get("state", {})
    # runnable: the waits for a CPU, of stacks flagged waiting (preempted) or not (signalled
    # while runnable); so the flag's count lies between waiting and waiting + runnable
    run_, wait_, rable = (state.get(k, 0) for k in ("running", "waiting", "runnable"))
    t.check(run_ + wait_ + rable == total and wait_ <= waiting <= wait_ + rable,
            "-tags state: %d running, %d waiting, %d runnable of %d samples (%d with the "
            "stacks' WAITING flag)" % (run_, wait_, rable, total, waiting), r.stdout)

    objs, held = folded_waits(prof)
    kinds = {}
    for (k, _), n in objs.items():
        kinds[k] = kinds.get(k, 0) + n
    t.check(kinds and tags.get("wait") == {k: float(n) for k, n in kinds.items()},
            "-tags wait: per kind the folded --waits counts (%s)" % ", ".join(
                "%s %d" % kv for kv in sorted(kinds.items())),
            lambda: "pprof %r\nfolded %r" % (tags.get("wait"), kinds))
    by_obj = {}
    for (_, o), n in objs.items():
        by_obj[o] = by_obj.get(o, 0) + n
    t.check(by_obj and tags.get("wait_object") == {wp_squash(o): float(n)
                                                   for o, n in by_obj.items()},
            "-tags wait_object: per object the folded --waits counts (%d objects)" % len(by_obj),
            lambda: "pprof %r\nfolded %r" % (tags.get("wait_object"), by_obj))
    want_holder = "holder tid=%d" % tid["holder"]
    t.check(tags.get("holder") == {wp_squash(h): float(n) for h, n in held.items()} and
            want_holder.replace(" ", "") in tags.get("holder", {}),
            "-tags holder: %r, as folded's [held by] frames" % want_holder,
            lambda: "pprof %r\nfolded %r" % (tags.get("holder"), held))

    # The lockers: their waiting samples say big_lock and its real holder.
    r = pp.run("-tags", "-sample_index=samples", "-tagfocus=wait_object=big_lock", pb)
    lk = parse_tags(r.stdout)
    for name in ("locker-1", "locker-2", "locker-3"):
        w = raw.threads[tid[name]]["waiting"]
        got = lk.get("thread", {}).get(name, 0)
        t.check(w and got >= SHARE * w, "-tagfocus=wait_object=big_lock: %s %d of its %d "
                "waiting samples (>= 90%%)" % (name, got, w), r.stdout)
    hold = lk.get("holder", {}).get(want_holder.replace(" ", ""), 0)
    lock_total = sum(lk.get("thread", {}).values())
    t.check(lock_total and hold >= SHARE * lock_total, "... and %d of those %d name the holder "
            "%s (>= 90%%)" % (hold, lock_total, want_holder), r.stdout)

    for name, obj in (("reader", truth.get("pipe")), ("sockreader", truth.get("sock"))):
        r = pp.run("-tags", "-sample_index=samples", "-tagfocus=wait_object=" +
                   re.escape(str(obj)), pb)
        th = parse_tags(r.stdout).get("thread", {})
        w = raw.threads[tid[name]]["waiting"]
        t.check(set(th) == {name} and th[name] >= SHARE * w,
                "-tagfocus=wait_object=%s: the %s's waiting samples (%d of %d)" % (
                    obj, name, th.get(name, 0), w), r.stdout)

    r = pp.run("-top", "-sample_index=samples", "-tagfocus=wait=sleep", pb)
    top = parse_top(r.stdout)
    t.check(set(n for n, v in top.items() if v[0]) == {"clock_nanosleep"},
            "-tagfocus=wait=sleep -top: only clock_nanosleep", r.stdout)

    leaves_run(t, pp, prof)

    with open(pb, "rb") as f:
        p = decode_profile(gzip.decompress(f.read()))
    S = [x.decode("utf-8", "replace") for x in p["strings"]]
    bad = 0
    for smp in p["samples"]:
        keys = {S[k] for k, _, _ in smp["labels"]}
        if ("wait" in keys) != ("wait_object" in keys):
            bad += 1
    t.check(not bad, "every sample has both wait and wait_object, or neither", "%d not" % bad)


def leaves_run(t, pp, prof):
    """--wait-leaves=on: pprof's samples end in the model's wait leaves, as folded's do."""
    pb = export(t, prof, "--wait-leaves=on")
    r = pp.run("-top", "-nodecount=100000", "-nodefraction=0", "-sample_index=samples", pb)
    got = {n: v[0] for n, v in parse_top(r.stdout).items() if n.startswith("[wait ")}
    fl = wp.wallprof(["--report", prof, "--single-file", "--format=folded", "--wait-leaves=on"])
    want = {}
    for frames, n in wp.parse_folded(fl.stdout).items():
        if frames[-1].startswith("[wait "):
            want[frames[-1]] = want.get(frames[-1], 0) + n
    # pprof may shorten a name that looks like a C++ one ("(write end fd 4)"): the total, and
    # a plain name exactly
    t.check(want and sum(got.values()) == sum(want.values()) and
            got.get("[wait lock big_lock]") == want.get("[wait lock big_lock]"),
            "--wait-leaves=on -top: the wait leaves are leaf frames, with folded "
            "--wait-leaves=on's samples (%d)" % sum(want.values()),
            lambda: "pprof %r\nfolded %r" % (got, want))
    # a wait for a CPU is a leaf too (issue 20: it was the self time of the function the
    # thread was preempted in), [wait cpu runqueue] as folded's; its label says runnable
    r = pp.run("-tags", "-sample_index=samples", "-tagfocus=wait=cpu", pb)
    tags = parse_tags(r.stdout)
    t.check(got.get("[wait cpu runqueue]", 0) == want.get("[wait cpu runqueue]", 0) and
            set(tags.get("state", {"runnable": 0})) == {"runnable"},
            "--wait-leaves=on: the waits for a CPU are the leaf [wait cpu runqueue] (%d, as "
            "folded's) and state=runnable" % want.get("[wait cpu runqueue]", 0),
            lambda: "%s\npprof %r\nfolded %r" % (r.stdout, got, want))


def wp_squash(s):
    return re.sub(r"\s+", "", s)


def split_run(t, pp):
    prof, truth = record(t, "split", [wp.target("wait_split")], 2.0)
    pb = export(t, prof, "--thread=napper")
    with open(pb, "rb") as f:
        p = decode_profile(gzip.decompress(f.read()))
    S = [x.decode("utf-8", "replace") for x in p["strings"]]
    objs = {}
    for smp in p["samples"]:
        lab = {S[k]: S[v] for k, v, _ in smp["labels"]}
        if lab.get("wait") == "sleep":
            objs.setdefault(tuple(smp["locs"]), {})[lab.get("wait_object")] = smp["values"][0]
    split = [o for o in objs.values() if {"10ms", "30ms"} <= set(o)]
    t.check(split, "the napper's one stack is two samples, wait_object 10ms and 30ms, with the "
            "same locations", repr(objs))
    r = pp.run("-tags", "-sample_index=samples", pb)
    w = parse_tags(r.stdout).get("wait_object", {})
    a, b = w.get("10ms", 0), w.get("30ms", 0)
    objs_f, _ = folded_waits(prof)
    t.check((a, b) == (objs_f.get(("sleep", "10ms"), -1), objs_f.get(("sleep", "30ms"), -1)),
            "-tags wait_object 10ms %d, 30ms %d: the folded --waits split" % (a, b),
            lambda: "folded: %r\n%s" % (objs_f, r.stdout))
    ta, tb = truth.get("ns.10ms", 0), truth.get("ns.30ms", 0)
    if t.check(a + b > 0 and ta + tb > 0, "-tags wait_object lists 10ms and 30ms", r.stdout):
        # within 8 points: on a loaded machine a nap overruns while the thread waits for a
        # CPU, time the target counts and no wait record has
        t.near(100.0 * a / (a + b), 100.0 * ta / (ta + tb), 8.0,
               "-tags wait_object 10ms share of the napper's naps (its own clock: %.1f%%)"
               % (100.0 * ta / (ta + tb)), r.stdout)


def main(t):
    if not wp.require_built(wp.target("waits"), wp.target("wait_split")):
        return
    pp = go_pprof(t)
    if not pp:
        return
    waits_run(t, pp)
    split_run(t, pp)


if __name__ == "__main__":
    wp.main(main)
