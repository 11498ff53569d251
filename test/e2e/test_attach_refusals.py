# SPDX-License-Identifier: MIT
"""wallprof --pid refused: one line on standard error that says why and what to do, exit
status 1, no profile, and the process left alone:
  * no such pid;
  * another tracer already holds it (strace -p): named from TracerPid's comm;
  * another user's process (the test drops to nobody with setpriv when run as root);
  * Yama's ptrace_scope, where the kernel has Yama and it is above 0 (not on every machine).
perf_event_paranoid above 2 cannot be set here without changing the machine for everyone:
its line is the agent's (perfring.c's refusal), not tested here."""
import os
import shutil
import subprocess
import time

import wplib as wp


def one_line(r):
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    return lines[0] if len(lines) == 1 else "\n".join(lines)


def refused(t, what, args, must, prof, run=wp.wallprof, **kw):
    r = run(args + ["-o", prof, "-q"], **kw)
    t.eq(r.returncode, 1, "%s: wallprof --pid exits 1" % what, r.describe())
    line = one_line(r)
    t.check("\n" not in line and line.startswith("wallprof: "),
            "%s: one line on standard error" % what, r.stderr)
    for m in must:
        t.check(m in line, "%s: the line says %r" % (what, m), line)
    t.check(not os.path.exists(prof), "%s: no profile was written" % what)
    t.note("%s: %s" % (what, line))


def free_pid():
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def main(t):
    pid = free_pid()
    refused(t, "no such pid", ["--pid=%d" % pid], ["no process has pid %d" % pid],
            wp.tmp_path("refused_nopid.prof"))

    target = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        if shutil.which("strace"):
            tracer = subprocess.Popen(["strace", "-p", str(target.pid), "-o", os.devnull],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for _ in range(100):  # until it has attached
                with open("/proc/%d/status" % target.pid) as f:
                    if "TracerPid:\t%d" % tracer.pid in f.read():
                        break
                time.sleep(0.05)
            refused(t, "a tracer attached", ["--pid=%d" % target.pid],
                    ["traced by pid %d (strace)" % tracer.pid, "detach it first"],
                    wp.tmp_path("refused_traced.prof"))
            tracer.terminate()
            tracer.wait()
        else:
            t.note("strace not installed: the tracer refusal is not tested")

        if os.geteuid() == 0 and shutil.which("setpriv"):
            # nobody cannot read root's process (ptrace access: another user)
            drop = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
            out = "/tmp/wallprof-refusal-%d.prof" % os.getpid()
            r = wp.run(drop + [wp.cli(), "--pid=%d" % target.pid, "-o", out, "-q"], timeout=60)
            t.eq(r.returncode, 1, "another user's process: exits 1", r.describe())
            t.check("belongs to root" in one_line(r) and "\n" not in one_line(r),
                    "another user's process: one line names its owner", r.stderr)
            t.check(not os.path.exists(out), "another user's process: no profile")
            t.note("another user: %s" % one_line(r))
        elif os.geteuid() != 0:
            refused(t, "another user's process", ["--pid=1"], ["belongs to"],
                    wp.tmp_path("refused_user.prof"))
        t.check(target.poll() is None, "the target still runs after every refusal")
    finally:
        target.kill()
        target.wait()

    try:
        with open("/proc/sys/kernel/yama/ptrace_scope") as f:
            scope = int(f.read())
    except OSError:
        scope = None
    if scope and os.geteuid() != 0:
        other = subprocess.Popen(["sleep", "30"], start_new_session=True)
        try:
            refused(t, "Yama", ["--pid=%d" % other.pid], ["ptrace_scope is %d" % scope],
                    wp.tmp_path("refused_yama.prof"))
        finally:
            other.kill()
            other.wait()
    else:
        t.note("Yama's ptrace_scope: %s here (no Yama, 0, or run as root): not tested" % scope)


wp.main(main)
