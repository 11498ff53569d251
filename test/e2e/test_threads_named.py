# SPDX-License-Identifier: MIT
"""threads_named: named threads doing different things (spinner: CPU loop; sleeper: nanosleep;
holder: holds a mutex while sleeping; waiter: blocked on that mutex; main: pthread_join),
profiled with LD_PRELOAD at 1000 Hz.

Wall mode: every thread's samples are attributed to the right functions, with complete
stacks; the waiter's split between waiting for the lock and its short sleeps matches the
wall time it measured itself; every thread (all alive for the whole run) gets about the same
number of samples (+-25%); thread names and tids are right.
CPU mode: the spinner gets the samples, the sleeper almost none (<= 2%).
Wall mode with the CPUs oversubscribed (2 CPU-bound "hog" threads per CPU more): the threads
still get about the same number of samples each (+-25%), since each lives as long as the others
whether it waits for a lock, a timer or a CPU.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wplib as wp  # noqa: E402

SECONDS = 3.0
HZ = 1000
WORKERS = ("spinner", "sleeper", "holder", "waiter")
LOCK_FUNCS = re.compile(r"pthread_mutex_lock|__lll_lock_wait")
JOIN_FUNCS = re.compile(r"pthread_join|pthread_clockjoin|pthread_timedjoin")
SLEEP_FUNCS = re.compile(r"nanosleep")


def any_frame(rx):
    return lambda n, tid, f: any(rx.search(x) for x in f)


def run(t, mode, hogs=0):
    label = mode + ("-hogs" if hogs else "")
    prof = wp.tmp_path("threads_named.%s.prof" % label)
    truth_path = wp.tmp_path("threads_named.%s.truth" % label)
    r = wp.run_preloaded([wp.target("threads_named"), str(SECONDS), str(hogs)],
                         env=wp.preload_env(mode=mode, hz=HZ, out=prof,
                                            extra={"WP_TRUTH": truth_path}),
                         timeout=120)
    if not t.eq(r.returncode, 0, "[%s] threads_named exits 0 under the agent" % mode,
                r.describe()):
        return None, None, None
    truth = wp.read_truth(truth_path)
    raw = wp.read_raw(prof)
    p = wp.load(prof)
    return truth, raw, p


def check_names(t, mode, truth, raw, p):
    names = {tid: th["name"] for tid, th in raw.threads.items()}
    main_name = os.path.basename(wp.target("threads_named"))[:15]
    expect = {int(truth["tid.main"]): main_name}
    for w in WORKERS:
        expect[int(truth["tid." + w])] = w
    for tid, name in expect.items():
        if mode == "cpu" and name not in ("spinner",):
            continue  # in cpu mode only threads that used CPU need to be in the profile
        t.eq(names.get(tid), name, "[%s] thread %d is named %r in the profile" % (mode, tid, name),
             lambda: "threads in the profile: %r" % names)
        t.check(p.thread(tid).total() == 0 or set(n for n, _ in p.thread(tid).threads()) == {name},
                "[%s] the folded report names tid %d %r" % (mode, tid, name),
                lambda: repr(p.threads()))


def wall(t):
    truth, raw, p = run(t, "wall")
    if not p:
        return
    check_names(t, "wall", truth, raw, p)
    dump = lambda: p.sample_lines(25)
    per = {w: p.thread(int(truth["tid." + w])) for w in WORKERS}
    per["main"] = p.thread(int(truth["tid.main"]))
    counts = {k: v.total() for k, v in per.items()}
    t.note("wall mode samples per thread: %s" % ", ".join("%s %d" % kv for kv in counts.items()))

    # each thread's time in the right place
    sp = per["spinner"]
    if t.check(sp.total() > 0, "[wall] spinner has samples"):
        t.check(sp.self_counts()["spin_fn"] >= 0.9 * sp.total(),
                "[wall] spinner: spin_fn is the leaf in %d of %d samples (>= 90%%)"
                % (sp.self_counts()["spin_fn"], sp.total()), dump)
    sl = per["sleeper"]
    good = sl.filter(lambda n, tid, f: "sleep_fn" in f and any(SLEEP_FUNCS.search(x) for x in f))
    t.check(sl.total() > 0 and good.total() >= 0.95 * sl.total(),
            "[wall] sleeper: %d of %d samples pass through sleep_fn -> nanosleep (>= 95%%)"
            % (good.total(), sl.total()), dump)
    ho = per["holder"]
    good = ho.through("hold_fn")
    t.check(ho.total() > 0 and good.total() >= 0.95 * ho.total(),
            "[wall] holder: %d of %d samples pass through hold_fn (>= 95%%)"
            % (good.total(), ho.total()), dump)
    wa = per["waiter"]
    through = wa.through("wait_fn")
    t.check(wa.total() > 0 and through.total() >= 0.95 * wa.total(),
            "[wall] waiter: %d of %d samples pass through wait_fn (>= 95%%)"
            % (through.total(), wa.total()), dump)
    locked = wa.filter(lambda n, tid, f: "wait_fn" in f and any(LOCK_FUNCS.search(x) for x in f))
    lock_truth = truth["lock_wall_ns.waiter"] / (truth["lock_wall_ns.waiter"] +
                                                  truth["sleep_wall_ns.waiter"])
    if wa.total():
        t.near(locked.total() / wa.total(), lock_truth, 0.03,
               "[wall] waiter: share of samples in wait_fn -> pthread_mutex_lock/__lll_lock_wait "
               "(truth: its own wall-clock measurement)", dump)
    mn = per["main"]
    good = mn.filter(lambda n, tid, f: "main" in f and any(JOIN_FUNCS.search(x) for x in f))
    t.check(mn.total() > 0 and good.total() >= 0.95 * mn.total(),
            "[wall] main: %d of %d samples in main -> pthread_join (>= 95%%)"
            % (good.total(), mn.total()), dump)

    # complete stacks: every worker's samples reach start_thread and its own function
    for w, fn in (("spinner", "spin_fn"), ("sleeper", "sleep_fn"), ("holder", "hold_fn"),
                  ("waiter", "wait_fn")):
        s = per[w]
        good = s.filter(lambda n, tid, f: "start_thread" in f and fn in f)
        t.check(s.total() and good.total() >= 0.99 * s.total(),
                "[wall] %s: %d of %d stacks are complete (start_thread -> %s)"
                % (w, good.total(), s.total(), fn), dump)

    # about the same number of samples for every thread
    mean = sum(counts.values()) / len(counts)
    for k, v in counts.items():
        t.between(v / mean if mean else 0, 0.75, 1.25,
                  "[wall] %s's samples relative to the mean over threads" % k,
                  lambda: repr(counts))
    expected = HZ * SECONDS
    t.check(mean >= 0.5 * expected,
            "[wall] %.0f samples per thread on average, of ~%.0f expected at %d Hz"
            % (mean, expected, HZ), lambda: repr(raw.meta))
    t.check(raw.truncated() <= 0.01 * raw.samples(),
            "[wall] truncated unwinds: %d of %d" % (raw.truncated(), raw.samples()))
    return locked.total() / wa.total() if wa.total() else None, lock_truth


def cpu(t):
    truth, raw, p = run(t, "cpu")
    if not p:
        return
    check_names(t, "cpu", truth, raw, p)
    total = p.total()
    counts = {w: p.thread(int(truth["tid." + w])).total() for w in WORKERS}
    counts["main"] = p.thread(int(truth["tid.main"])).total()
    t.note("cpu mode samples per thread: %s" % ", ".join("%s %d" % kv for kv in counts.items()))
    if not t.check(total > 0, "[cpu] the profile has samples"):
        return
    t.check(counts["sleeper"] <= 0.02 * total,
            "[cpu] sleeper: %d of %d samples (<= 2%%)" % (counts["sleeper"], total),
            lambda: p.sample_lines(20))
    t.check(counts["spinner"] == max(counts.values()) and counts["spinner"] >= 0.9 * total,
            "[cpu] spinner gets the most samples: %d of %d (>= 90%%)" % (counts["spinner"], total),
            lambda: repr(counts))
    sp = p.thread(int(truth["tid.spinner"]))
    t.check(sp.self_counts()["spin_fn"] >= 0.9 * sp.total(),
            "[cpu] spinner: spin_fn is the leaf in %d of %d samples" % (
                sp.self_counts()["spin_fn"], sp.total()), lambda: p.sample_lines(20))
    spin_cpu = truth["cpu_ns.spinner"] / 1e9
    t.check(counts["spinner"] >= 0.5 * HZ * spin_cpu,
            "[cpu] spinner: %d samples for %.2f s of CPU at %d Hz" % (counts["spinner"], spin_cpu,
                                                                       HZ), lambda: repr(raw.meta))


def oversubscribed(t):
    hogs = max(4, 2 * (os.cpu_count() or 1))
    truth, raw, p = run(t, "wall", hogs=hogs)
    if not p:
        return
    counts = p.threads()
    named = {n for n, _ in counts}
    t.check({"spinner", "sleeper", "holder", "waiter", "hog"} <= named,
            "[wall, %d hogs] every thread is in the profile" % hogs, repr(counts))
    t.note("wall mode with %d hogs: samples per thread: %s; ticks %s of %d, missed on timeout %s"
           % (hogs, ", ".join("%s/%d %d" % (n, tid, v) for (n, tid), v in sorted(counts.items())),
              raw.meta.get("ticks"), HZ * SECONDS, raw.meta.get("missed_timeout")))
    mean = sum(counts.values()) / len(counts) if counts else 0
    low = {"%s/%d" % k: v for k, v in counts.items() if v < 0.75 * mean}
    high = {"%s/%d" % k: v for k, v in counts.items() if v > 1.25 * mean}
    t.check(mean > 0 and not low and not high,
            "[wall, %d hogs] every thread's samples within 25%% of the mean (%.0f)" % (hogs, mean),
            lambda: "below: %r\nabove: %r" % (low, high))


def main(t):
    got = wall(t)
    cpu(t)
    oversubscribed(t)
    if got and got[0] is not None:
        t.note("waiter blocked in pthread_mutex_lock: profile %.1f%%, truth %.1f%%"
               % (100 * got[0], 100 * got[1]))


wp.main(main)
