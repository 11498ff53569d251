# SPDX-License-Identifier: MIT
"""Wait leaves (issue 13): in the text report, a waiting sample's C-library waiting frames
(futex_wait, __GI___libc_read, clock_nanosleep...) are replaced by one leaf frame
"[wait KIND OBJECT]" whose caller is the program's function that waited, so the flat profile's
top rows say what the threads waited on, and the call graph agrees.

test/targets/waits.c: each thread waits for one known thing for the whole run (three lockers
on big_lock in locker_fn, a reader on a pipe in reader_fn, a sleeper, a joiner, a condition
waiter, a socket reader, a child waiter) or computes holding the lock.

Text report, wall mode:
- each thread's wait is a flat-profile row [wait KIND OBJECT] holding >= 90% of that thread's
  waiting samples (its THREAD record), and the lockers' row holds >= 90% of theirs;
- no function of the C library has more than 2% self time;
- the call graph gives [wait lock big_lock] one caller, locker_fn; with --wait-leaves=on,
  folded output (the same model) has [wait io pipe:[N]] as a leaf under reader_fn;
- folded with --wait-leaves=on and --waits ends the lockers' stacks with
  locker_fn;[wait lock big_lock];[held by ...] (then the holder's frames), the wait
  frame once;
- a wait leaf too long for its column is cut keeping its start ("...");
- --wait-leaves=off gives the C library's frames back (no [wait ...] row), and folded output
  keeps its own form (no [wait ...] frame without --waits).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reportlib as rl  # noqa: E402
import wplib as wp  # noqa: E402

SHARE = 0.90


def main(t):
    prof = wp.tmp_path("leaves.prof")
    truth_path = wp.tmp_path("leaves.truth")
    r = wp.run_preloaded([wp.target("waits"), "2"],
                         env=wp.preload_env(mode="wall", hz=200, out=prof,
                                            extra={"WP_TRUTH": truth_path}), timeout=120)
    t.check(r.returncode == 0, "the target exits 0", r.describe())
    truth = wp.read_truth(truth_path)
    raw = wp.read_raw(prof)
    tid = wp.truth_tids(truth)

    def waiting(*names):
        return sum(raw.threads[tid[n]]["waiting"] for n in names if tid[n] in raw.threads)

    # --single-file: the target's forked child (it sleeps, then _exit) writes a profile of
    # its own at _exit, a sibling of the run; these checks are of the parent's threads
    rep = wp.wallprof(["--report", prof, "--single-file", "--top=40"])
    t.check(rep.returncode == 0, "text report", rep.describe())
    text = rl.TextReport(rep.stdout)
    expect = [
        ("[wait lock big_lock]", ("locker-1", "locker-2", "locker-3")),
        ("[wait io %s]" % truth["pipe"], ("reader",)),
        ("[wait io %s]" % truth["sock"], ("sockreader",)),
        ("[wait sleep 10ms]", ("sleeper",)),
        ("[wait join joinee]", ("joiner",)),
        ("[wait condition big_cond]", ("condwaiter",)),
        ("[wait child pid %d]" % truth["child"], ("childwaiter",)),
    ]
    def flat_row(frame):
        # io and child objects go on after what the truth names (a pipe's ends, a socket's
        # addresses, the child's command), and long names are cut with "...": match the
        # frame without its closing bracket as a prefix
        stem = frame[:-1]
        for f in text.flat:
            name = f.name[:-3] if f.name.endswith("...") else f.name
            if name == frame or name.startswith(stem + " ") or (
                    f.name.endswith("...") and stem.startswith(name)):
                return f
        return None

    # a wait leaf too long for its column keeps its start: never the C++ shortening, which
    # took "(write end fd 4)" for a parameter list and printed "read end ()]"
    garbled = [l.strip() for l in rep.stdout.splitlines() if "[wait " in l and "()" in l]
    t.check(not garbled, "wait leaves cut to fit keep their start (no \"()\" put in)",
            "\n".join(garbled[:5]))

    for frame, names in expect:
        row = flat_row(frame)
        want = waiting(*names)
        got = row.samples if row else 0
        t.check(want >= 50 and got >= SHARE * want,
                "flat profile: %s holds >= 90%% of %s's waiting samples" % (frame, ", ".join(names)),
                "%d of %d; rows: %r" % (got, want, text.flat[:12]))
        t.check(row is not None and row.module == "[wait]", "%s's module is [wait]" % frame,
                repr(row))
    libc = [f for f in text.flat if f.module.startswith("libc.so") and f.self_pct > 2.0]
    t.check(not libc, "no C-library function has more than 2% self time", repr(libc))

    g = text.graph_entry("[wait lock big_lock]")
    callers = [c[0] for c in g.callers] if g else None
    t.check(callers == ["locker_fn"], "call graph: [wait lock big_lock] is called by locker_fn "
            "alone", repr(callers))
    # the same model in another report: folded with the option on
    leaves = wp.wallprof(["--report", prof, "--single-file", "--format=folded",
                          "--wait-leaves=on"])
    pipe = "[wait io %s]" % truth["pipe"]
    callers = set(fr[i - 1] for fr in wp.parse_folded(leaves.stdout) for i, x in enumerate(fr)
                  if x == pipe or x.startswith(pipe[:-1] + " "))
    t.check(leaves.returncode == 0 and callers == {"reader_fn"},
            "folded --wait-leaves=on: %s is a leaf under reader_fn" % pipe, repr(callers))

    both = wp.wallprof(["--report", prof, "--single-file", "--format=folded",
                        "--wait-leaves=on", "--waits"])
    folded = wp.parse_folded(both.stdout)
    lock = [fr for fr in folded if "[wait lock big_lock]" in fr]
    # A sample whose holder was not sampled that tick (META holder_missed: its handshake
    # timed out on a loaded machine, d71c6cf's agent too) ends at the wait, without one.
    after = [fr[fr.index("[wait lock big_lock]") + 1:] for fr in lock]
    held = sum(folded[fr] for fr, rest in zip(lock, after) if rest)
    t.check(both.returncode == 0 and lock and all(
        fr.count("[wait lock big_lock]") == 1
        and fr[fr.index("[wait lock big_lock]") - 1] == "locker_fn"
        and (not rest or rest[0].startswith("[held by ")) for fr, rest in zip(lock, after))
            and held * 2 > sum(folded[fr] for fr in lock),
            "folded --wait-leaves=on --waits: locker_fn;[wait lock big_lock];[held by ...] once"
            " (then the holder's frames), for most of its samples",
            repr(lock[:3]))
    off = wp.wallprof(["--report", prof, "--single-file", "--wait-leaves=off"])
    t.check(off.returncode == 0 and "[wait " not in rl.TextReport(off.stdout).text.partition(
        "WAITS")[0], "--wait-leaves=off: no [wait ...] row in the flat profile",
            off.stdout[:1500])
    folded = wp.wallprof(["--report", prof, "--single-file", "--format=folded"])
    t.check(folded.returncode == 0 and "[wait " not in folded.stdout,
            "folded without --waits: no [wait ...] frame", folded.stdout[:500])


wp.main(main)
