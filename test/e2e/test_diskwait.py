# SPDX-License-Identifier: MIT
"""Waiting for the disk (issue 13, kind "disk"): samples of a thread in uninterruptible sleep
(state D in /proc), inside a system call or outside any (a page fault), say so.

test/targets/diskwait.c: reader drops an 8 MiB file from the page cache and preads it back,
over and over, measuring the share of its wall time spent inside pread (call_pct); faulter
does the same through a memory mapping (major page faults, outside any call; it counts them
with getrusage); piper waits on a pipe (never the disk).

Wall mode: the reader's budget has a disk share, at most its time inside pread (plus 5
points), and its folded wait frames name the file ([wait disk PATH]); the faulter's samples
include [wait disk page fault] when it had major faults; the piper has no disk wait at all.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wplib as wp  # noqa: E402


def fs_type(path):
    """The filesystem type of the mount holding `path` (/proc/mounts: longest prefix)."""
    best, kind = "", "?"
    with open("/proc/mounts") as f:
        for line in f:
            parts = line.split()
            if len(parts) > 2 and (path + "/").startswith(parts[1].rstrip("/") + "/") \
                    and len(parts[1]) > len(best):
                best, kind = parts[1], parts[2]
    return kind


def main(t):
    prof = wp.tmp_path("diskwait.prof")
    truth_path = wp.tmp_path("diskwait.truth")
    # on a disk, not $TMPDIR: a tmpfs file is memory, and nothing waits for a disk (the
    # target removes its files). The build directory, else /var/tmp or the home directory.
    data_dir = None
    for base in (os.path.join(wp.build_dir(), "test"), "/var/tmp", os.path.expanduser("~")):
        if os.path.isdir(base) and os.access(base, os.W_OK) and \
                fs_type(os.path.realpath(base)) not in ("tmpfs", "ramfs"):
            data_dir = os.path.join(base, "diskwait-data.%d" % os.getpid())
            break
    if not t.check(data_dir is not None, "a directory on a disk to read from",
                   "the build directory, /var/tmp and ~ are all in memory (tmpfs)"):
        return
    os.makedirs(data_dir, exist_ok=True)
    r = wp.record([wp.target("diskwait"), data_dir, "2"], prof, mode="wall", hz=200,
                  threads=0, fmt="text", env={"WP_TRUTH": truth_path}, timeout=120)
    t.check(r.returncode == 0, "recorded, exit 0", r.describe())
    truth = wp.read_truth(truth_path)
    tid = wp.truth_tids(truth)
    b = wp.time_budgets(r.stdout)
    reader, piper = b.get(tid["reader"], {}), b.get(tid["piper"], {})
    disk = reader.get("disk", 0.0)
    t.check(disk >= 10.0 and disk <= truth["call_pct.reader"] + 5.0,
            "reader: a disk share, at most its time inside pread (%.1f%%)"
            % truth["call_pct.reader"], repr(reader))
    t.check("disk" not in piper and piper.get("io", 0.0) >= 90.0,
            "piper: its pipe, never the disk", repr(piper))

    folded = wp.wallprof(["--report", prof, "--format=folded", "--per-thread", "--waits"])
    frames = {}
    for fr, n in wp.parse_folded(folded.stdout).items():
        th = int(fr[0].rsplit("tid=", 1)[1].rstrip("]"))
        for f in fr:
            if f.startswith("[wait disk"):
                frames.setdefault(th, {}).setdefault(f, 0)
                frames[th][f] += n
    want = "[wait disk %s]" % truth["path.reader"]
    got = frames.get(tid["reader"], {})
    t.check(got.get(want, 0) >= 0.9 * sum(got.values()) and got,
            "reader: its disk waits name the file (%s)" % want, repr(got))
    if truth["majflt.faulter"] >= 10:
        got = frames.get(tid["faulter"], {})
        t.check(got.get("[wait disk page fault]", 0) > 0,
                "faulter (%d major faults): [wait disk page fault]" % truth["majflt.faulter"],
                repr(got))
    else:
        t.note("faulter had %d major faults only: page faults not checked"
               % truth["majflt.faulter"])
    t.check(tid["piper"] not in frames, "piper: no disk wait frame", repr(frames))
    try:
        os.rmdir(data_dir)
    except OSError:
        pass


wp.main(main)
