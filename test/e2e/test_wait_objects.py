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
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wplib as wp  # noqa: E402

SECONDS = 3.0
HZ = 200
SHARE = 0.90


def main(t):
    prof, truth, raw = wp.record_waits("wait_objects", [wp.target("wait_objects"), str(SECONDS)],
                                       HZ, stdout="wait_objects done\n")
    tid = {k[4:]: int(v) for k, v in truth.items() if k.startswith("tid.")}
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


wp.main(main)
