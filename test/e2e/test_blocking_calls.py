# SPDX-License-Identifier: MIT
"""Every blocking system call the C library makes gets a wait kind and a readable object
(issue 20). test/targets/blocking_calls.c runs one thread per call, each blocking in its
call about 20 ms at a time for the whole run, from a function of its own (wait_in_NAME), and
writes what each call waits on as it knows it (a pipe's or socket's /proc name, a file's
path, a System V id, "20ms" for the polls over no descriptor).

Wall mode, every thread at every tick, the text report's leaves (`--format=folded
--per-thread --wait-leaves=on`, the leaves of the text report): of each thread's samples in
wait_in_NAME, >= 80% end with the leaf its call should read (a file's sync: >= 50%, and the
leaf may be a disk wait, as the kernel writes the pages back in state D; the rest runs in
the kernel). No leaf anywhere reads [wait other ...], nor a poll or select over no descriptor
as io ("[wait io pselect6 of fds < 0]": PostgreSQL's pg_usleep, issue 20).
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wplib as wp  # noqa: E402

SECONDS = 2.0
HZ = 200
SHARE = 0.80
SYNC_SHARE = 0.50
SLEEP = re.compile(r"\[wait sleep (19(\.\d+)?|20)ms\]$")


def expected(name, obj):
    """(a test of a leaf, its description, the share asked for) for thread `name`."""
    def prefix(p):
        return (lambda leaf: leaf.startswith(p)), p + "...", SHARE
    if name.startswith("epoll"):
        return prefix("[wait io epoll %s read end" % obj)
    if name in ("recv", "recvmsg", "send", "sendmsg", "accept"):
        return prefix("[wait io %s unix stream" % obj)
    if name in ("poll0", "ppoll0", "select0", "pselect0"):
        return (lambda leaf: bool(SLEEP.match(leaf))), "[wait sleep 20ms]", SHARE
    if name in ("fdatasync", "fsync", "sync_file_range"):
        ok = ("[wait disk %s]" % obj, "[wait io %s]" % obj)
        return (lambda leaf: leaf in ok), " or ".join(ok), SYNC_SHARE
    if name in ("flock", "ofd_lock"):
        return prefix("[wait io %s]" % obj)
    if name == "msgrcv":
        return prefix("[wait io System V message queue %s]" % obj)
    if name == "semtimedop":
        return prefix("[wait semaphore System V semaphore set %s]" % obj)
    if name == "sigtimedwait":
        return prefix("[wait signal sigtimedwait]")
    if name == "waitid":
        return prefix("[wait child pid ")
    return None


def main(t):
    workdir = wp.tmp_dir()
    prof = os.path.join(workdir, "calls.prof")
    truth_path = os.path.join(workdir, "calls.truth")
    env = {"WP_TRUTH": truth_path, "BLOCKING_CALLS_DIR": workdir}
    r = wp.run([wp.cli(), "-q", "--hz=%d" % HZ, "--threads=0", "-o", prof, "--",
                wp.target("blocking_calls"), str(SECONDS)], env=env, cwd=workdir, timeout=120)
    t.check(r.returncode == 0, "the target exits 0 under wallprof", r.describe())
    truth = wp.read_truth(truth_path)
    tids = wp.truth_tids(truth)
    objs = {k[4:]: "%d" % v if isinstance(v, float) else v
            for k, v in truth.items() if k.startswith("obj.")}
    rep = wp.wallprof(["--report", prof, "--format=folded", "--per-thread",
                       "--wait-leaves=on"])
    t.check(rep.returncode == 0, "folded report with the text report's leaves", rep.describe())
    stacks = wp.parse_folded(rep.stdout)

    leaves = {}  # tid -> {leaf of a stack through wait_in_NAME: count}
    for frames, n in stacks.items():
        tid = wp.folded_tid(frames)
        name = next((k for k, v in tids.items() if v == tid), None)
        if name and "wait_in_" + name in frames:
            d = leaves.setdefault(tid, {})
            d[frames[-1]] = d.get(frames[-1], 0) + n
    for name, tid in sorted(tids.items()):
        want = expected(name, objs.get(name, ""))
        if not want:
            continue  # a helper: the lock holder, the queue's sender
        test, text, share = want
        mine = leaves.get(tid, {})
        total = sum(mine.values())
        got = sum(n for leaf, n in mine.items() if test(leaf))
        t.check(truth.get("in_ns." + name, 0) > 0.5e9 and total >= 50 and got >= share * total,
                "%s: >= %d%% of its samples in wait_in_%s end with %s"
                % (name, round(100 * share), name, text),
                "%d of %d; in its call %.2fs; its leaves: %r"
                % (got, total, truth.get("in_ns." + name, 0) / 1e9, mine))

    bad = {}
    for frames, n in stacks.items():
        leaf = frames[-1]
        if leaf.startswith("[wait other") or re.match(r"\[wait io p?(select6?|poll) of", leaf):
            bad[leaf] = bad.get(leaf, 0) + n
    t.check(not bad, "no leaf reads [wait other ...] or a poll over no descriptor as io",
            repr(bad))


if __name__ == "__main__":
    wp.main(main)
