# SPDX-License-Identifier: MIT
"""wait objects (issue 13): what io and child waits wait FOR. test/targets/wait_objects.c runs
threads that each wait on one known thing for their whole life (a pipe's read end, a pipe's
write end, a loopback TCP connection, a listening socket, a poll over a pipe and a UDP socket,
a select over an eventfd, an epoll watching a unix socket, a timerfd, a child that exec'd
`sleep`) and writes, for each, the object as the report should name it, from what it knows
of its own descriptors (inodes, addresses, descriptor numbers, the child's pid).

Wall mode, `--format=folded --per-thread --waits`: of each such thread's waiting samples
(its THREAD record), >= 90% end with [wait io OBJECT] (or [wait child OBJECT]). The pump
(blocked writing into a full pipe for the first half of the run) and the drain (blocked
reading it for the second half) each name the other as seen blocked on the other end. The
text report's WAITS section lists the TCP connection with its addresses.

A copy of the profile with every WAIT record twice (its waits then say more samples than
their stacks have, as a record cut short by a checkpoint can) reports each object as the
folded --waits does (which takes no more of a stack's samples than it has): the text
report's WAITS counts as many waiting samples as folded's [wait ...] lines, and --compare's
share of each object is folded's (one count per object, the model's).
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wpformat as wf  # noqa: E402
import wplib as wp  # noqa: E402

SECONDS = 3.0
HZ = 200
SHARE = 0.90


def main(t):
    prof, truth, raw = wp.record_waits("wait_objects", [wp.target("wait_objects"), str(SECONDS)],
                                       HZ, stdout="wait_objects done\n")
    tid = wp.truth_tids(truth)
    obj = {k[4:]: v for k, v in truth.items() if k.startswith("obj.")}
    # the other end's threads: added by the report from the profile
    obj["drain"] = obj["drain"][:-1] + ", seen blocked on it: pump tid=%d)" % tid["pump"]
    obj["pump"] = obj["pump"][:-1] + ", seen blocked on it: drain tid=%d)" % tid["drain"]
    rep = wp.wallprof(["--report", prof, "--format=folded", "--per-thread", "--waits"])
    t.check(rep.returncode == 0, "folded --waits report", rep.describe())
    waits = wp.wait_frames(rep.stdout)
    for name, o in sorted(obj.items()):
        frame = "[wait %s %s]" % ("child" if name == "childwaiter" else "io", o)
        wp.check_wait_share(raw, waits, tid[name], name, frame, share=SHARE)

    text = wp.wallprof(["--report", prof])
    section = text.stdout.partition("WAITS")[2].partition("CALL GRAPH")[0]
    t.check(obj["tcpread"] in section, "the text report's WAITS section names the TCP "
            "connection with its addresses", section)

    check_over_counted(t, prof)


def over_counted(prof):
    """A copy of prof with each WAIT record twice."""
    with open(prof, "rb") as f:
        data = f.read()
    out = [wf.file_header()]
    for rtype, payload in wf.records(data, prof):
        out.append(wf.raw_record(rtype, payload))
        if rtype == wf.REC_WAIT:
            out.append(wf.raw_record(rtype, payload))
    out.append(wf.record(wf.REC_END))
    path = wp.tmp_path("doubled.prof")
    with open(path, "wb") as f:
        f.write(b"".join(out))
    return path


def check_over_counted(t, prof):
    doubled = over_counted(prof)
    folded = wp.wallprof(["--report", doubled, "--single-file", "--format=folded", "--waits"])
    in_waits = sum(int(l.rpartition(" ")[2]) for l in folded.stdout.splitlines() if "[wait " in l)
    text = wp.wallprof(["--report", doubled, "--single-file"])
    m = re.search(r"WAITS \(what waiting samples waited in: ([\d,]+) of ([\d,]+)\)", text.stdout)
    known, waiting = (int(g.replace(",", "")) for g in m.groups()) if m else (-1, -1)
    t.check(folded.returncode == 0 and text.returncode == 0 and 0 < known == in_waits <= waiting,
            "WAIT records said twice: the text report's WAITS counts each waiting sample once "
            "(as folded --waits)", "%d of %d, folded %d" % (known, waiting, in_waits))
    # --compare's share of each object (after: the doubled file) is folded --waits' share
    lines = [(l.rpartition(" ")[0], int(l.rpartition(" ")[2])) for l in folded.stdout.splitlines()]
    total = sum(n for _, n in lines)
    diff = wp.wallprof(["--compare", prof, doubled, "--single-file"])
    wrong = []
    for l in diff.stdout.partition("\nWaits (")[2].splitlines():
        m = re.match(r"  (\w+) +(.*): [\d.]+% -> ([\d.]+)%", l)
        if not m:
            continue
        kind, obj, after = m.group(1), m.group(2), float(m.group(3))
        head = "[wait %s " % kind
        # a long object is cut in its middle: its start says what it is, its end which
        start, cut, end = obj.rpartition("...")
        same = ((lambda o: o.startswith(start) and o.endswith(end)) if cut else
                (lambda o: o == obj))
        n = sum(c for text, c in lines if any(
            f.startswith(head) and same(f[len(head):-1]) for f in text.split(";")))
        if abs(after - 100.0 * n / max(total, 1)) > 0.06:
            wrong.append("%s (folded: %.2f%%)" % (l.strip(), 100.0 * n / max(total, 1)))
    t.check(diff.returncode == 0 and "\nWaits (" in diff.stdout and not wrong,
            "WAIT records said twice: --compare's share of each object is folded --waits' "
            "(each waiting sample once)", "\n".join(wrong[:5]))
    section = diff.stdout.partition("\nWaits (")[2]
    t.check("()" not in section, "--compare's Waits keep a long object's words in parentheses "
            "(\"read end (write end fd N)\" was cut to \"read end ()\")", section[:1500])

wp.main(main)
