"""waits (issue 13): threads that each wait for one known thing for the whole run; every
waiting sample of theirs read from /proc names what it waits in.

test/targets/waits.c: holder computes in compute_holding_lock() holding the global mutex
big_lock, three lockers are blocked in pthread_mutex_lock(&big_lock), a reader in read() on a
pipe, a sleeper in nanosleep(10 ms), a joiner in pthread_join(joinee), a condwaiter in
pthread_cond_wait(&big_cond), a sockreader in recv() on a loopback TCP connection, a
childwaiter in waitpid() for a child process. It reports its threads' tids, the pipe's and
the socket's inodes and the child's pid.

Wall mode, `--format=folded --per-thread --waits`: of each thread's waiting samples (its
THREAD record), >= 90% end with the right [wait KIND OBJECT] frame; of the lockers' lock
samples, >= 90% name the real holder ([held by holder tid=N]). Without --waits the folded
output has no such frame (the existing form is unchanged). The WAITS section of the text
report lists big_lock with its holder.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wplib as wp  # noqa: E402

SECONDS = 2.0
HZ = 200
SHARE = 0.90


def wait_counts(folded):
    """tid -> {(wait frame, held-by frame or None): count} from per-thread folded --waits."""
    out = {}
    for frames, n in wp.parse_folded(folded).items():
        tid = int(frames[0].rsplit("tid=", 1)[1].rstrip("]"))
        wait = held = None
        for i, f in enumerate(frames):
            if f.startswith("[wait "):
                wait = f
                held = frames[i + 1] if i + 1 < len(frames) else None
        d = out.setdefault(tid, {})
        d[(wait, held)] = d.get((wait, held), 0) + n
    return out


def main(t):
    prof = wp.tmp_path("waits.prof")
    truth_path = wp.tmp_path("waits.truth")
    r = wp.run_preloaded([wp.target("waits"), str(SECONDS)],
                         env=wp.preload_env(mode="wall", hz=HZ, out=prof,
                                            extra={"WP_TRUTH": truth_path}),
                         timeout=120)
    t.check(r.returncode == 0, "the target exits 0", r.describe())
    truth = wp.read_truth(truth_path)
    raw = wp.read_raw(prof)
    tid = {k[4:]: int(v) for k, v in truth.items() if k.startswith("tid.")}
    rep = wp.wallprof(["--report", prof, "--format=folded", "--per-thread", "--waits"])
    t.check(rep.returncode == 0, "folded --waits report", rep.describe())
    counts = wait_counts(rep.stdout)

    def share(name, frame, held=None):
        th = raw.threads.get(tid[name])
        waiting = th["waiting"] if th else 0
        # a frame without its closing "]" is a prefix: what an io or child object says after
        # the descriptor or pid is test_wait_objects.py's
        got = sum(n for (w, h), n in counts.get(tid[name], {}).items()
                  if w and (w == frame or (not frame.endswith("]") and w.startswith(frame)))
                  and (held is None or h == held))
        return got, waiting

    expect = {
        "reader": "[wait io %s read end " % truth["pipe"],
        "sleeper": "[wait sleep 10ms]",
        "joiner": "[wait join joinee]",
        "condwaiter": "[wait condition big_cond]",
        "sockreader": "[wait io %s tcp 127.0.0.1:" % truth["sock"],
        "childwaiter": "[wait child pid %d (waits)]" % truth["child"],
    }
    for name in ("locker-1", "locker-2", "locker-3"):
        expect[name] = "[wait lock big_lock]"
    for name, frame in sorted(expect.items()):
        got, waiting = share(name, frame)
        t.check(waiting >= 50 and got >= SHARE * waiting,
                "%s: >= 90%% of its waiting samples say %s" % (name, frame),
                "%d of %d; its waits: %r" % (got, waiting, counts.get(tid[name])))
    held = "[held by holder tid=%d]" % tid["holder"]
    lock_n = held_n = 0
    for name in ("locker-1", "locker-2", "locker-3"):
        held_n += share(name, "[wait lock big_lock]", held)[0]
        lock_n += share(name, "[wait lock big_lock]")[0]
    t.check(lock_n and held_n >= SHARE * lock_n,
            ">= 90%% of the lock samples name the holder (%s)" % held,
            "%d of %d" % (held_n, lock_n))

    plain = wp.wallprof(["--report", prof, "--format=folded", "--per-thread"])
    t.check(plain.returncode == 0 and "[wait " not in plain.stdout and "[held by" not in plain.stdout,
            "without --waits, no wait frames", plain.stdout[:500])

    text = wp.wallprof(["--report", prof])
    section = text.stdout.partition("WAITS")[2].partition("CALL GRAPH")[0]
    t.check("big_lock" in section and ("holder tid=%d" % tid["holder"]) in section
            and truth["pipe"] in section and "in: locker_fn" in section,
            "the text report's WAITS section names big_lock, its holder, the lockers' function "
            "and the pipe", section)


wp.main(main)
