# SPDX-License-Identifier: MIT
"""wallprof --pid refused: one line on standard error that says why and what to do, exit
status 1, no profile, and the process left alone:
  * no such pid;
  * another tracer already holds it (strace -p): named from TracerPid's comm;
  * another user's process (the test drops to nobody with setpriv when run as root);
  * a process that made itself not dumpable (PR_SET_DUMPABLE 0; as root, both it and
    wallprof run as nobody): named as such (before: "another user namespace or container,
    or a security module");
  * Yama's ptrace_scope, where the kernel has Yama and it is above 0 (not on every machine).
Yama and perf_event_paranoid above 2 cannot be set here without changing the machine for
everyone, nor a container entered: their lines are checked from the facts alone by
test/unit/test_refusals.c (wp_refusal_explain, which wallprof calls with what it reads). A container's seccomp profile refusing the calls with EPERM
(Docker's default refuses perf_event_open without CAP_PERFMON, process_vm_readv without
CAP_SYS_PTRACE) is the same refusal of the same path, and test/targets/seccomp_deny runs
wallprof under such a filter:
  * perf_event_open refused: --pid and a static program say so in one line naming the
    seccomp filter (before: --pid advised `sysctl kernel.perf_event_paranoid=2` though it was
    2 already; the static program ran unprofiled and the report said "No samples", exit 0);
    the static program is not run;
  * process_vm_readv refused: --dump says so in one line (before: a dump and a profile of
    bare waits with no stack, exit 0);
  * ptrace refused: nothing of wallprof's uses it, --pid works (its profile has samples)."""
import os
import shutil
import subprocess
import sys
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


def seccomp(t):
    deny = lambda calls, args, **kw: wp.run([wp.target("seccomp_deny"), calls, wp.cli()] +
                                            args, **kw)
    target = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        refused(t, "seccomp refuses perf_event_open", ["--pid=%d" % target.pid, "--duration=1"],
                ["perf_event_open refused", "seccomp", "perf_event_paranoid is"],
                wp.tmp_path("refused_seccomp_perf.prof"),
                run=lambda a, **kw: deny("perf_event_open", a, **kw))
        refused(t, "seccomp refuses process_vm_readv (--dump)", ["--dump", "--pid=%d" % target.pid],
                ["process_vm_readv", "seccomp", "SYS_PTRACE"],
                wp.tmp_path("refused_seccomp_vm.prof"),
                run=lambda a, **kw: deny("process_vm_readv", a, **kw))
        prof = wp.tmp_path("seccomp_ptrace.prof")
        r = deny("ptrace", ["--pid=%d" % target.pid, "--duration=0.3", "-o", prof, "-q",
                            "-f", "folded"])
        t.eq(r.returncode, 0, "seccomp refuses ptrace: --pid needs none, exits 0", r.describe())
        t.check(os.path.exists(prof) and wp.read_raw(prof).samples() > 0,
                "seccomp refuses ptrace: the profile has samples")
        t.check(target.poll() is None, "the target still runs after the seccomp refusals")
    finally:
        target.kill()
        target.wait()
    prof = wp.tmp_path("refused_seccomp_static.prof")
    r = deny("perf_event_open", ["-o", prof, "--", wp.target("cpu_split_static"), "0.2"])
    t.eq(r.returncode, 1, "seccomp, a static program: wallprof exits 1", r.describe())
    why = [x for x in r.stderr.splitlines() if "cannot profile" in x]
    t.check(len(why) == 1 and "perf_event_open refused" in why[0] and "seccomp" in why[0],
            "seccomp, a static program: one line says why", r.stderr)
    t.check("cpu_split:" not in r.stdout + r.stderr and "No samples" not in r.stdout,
            "seccomp, a static program: not run, no report", r.stdout[-500:] + r.stderr)
    t.check(not os.path.exists(prof), "seccomp, a static program: no profile")


def not_dumpable(t):
    """A process of wallprof's own user that is not dumpable: only root may read it."""
    drop = []
    if os.geteuid() == 0:
        if not shutil.which("setpriv"):
            t.note("setpriv missing: the not-dumpable refusal is not tested as root")
            return
        drop = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
    # PR_SET_DUMPABLE is 4: then a line that says it is ready, and a wait
    code = ("import ctypes, sys, time; ctypes.CDLL(None).prctl(4, 0, 0, 0, 0); "
            "print('ready', flush=True); time.sleep(30)")
    target = subprocess.Popen(drop + [sys.executable, "-c", code], stdout=subprocess.PIPE,
                              text=True, start_new_session=True)
    try:
        t.eq(target.stdout.readline().strip(), "ready", "the not-dumpable target started")
        out = "/tmp/wallprof-refusal-nodump-%d.prof" % os.getpid()
        r = wp.run(drop + [wp.cli(), "--pid=%d" % target.pid, "-o", out, "-q"], timeout=60)
        t.eq(r.returncode, 1, "not dumpable: exits 1", r.describe())
        line = one_line(r)
        t.check("\n" not in line and "pid %d is not dumpable" % target.pid in line and
                "PR_SET_DUMPABLE" in line and "as root" in line,
                "not dumpable: one line says so and what to do", r.stderr)
        t.check(not os.path.exists(out), "not dumpable: no profile")
        t.check(target.poll() is None, "not dumpable: the target still runs")
        t.note("not dumpable: %s" % line)
    finally:
        target.kill()
        target.wait()


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

    not_dumpable(t)
    seccomp(t)

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
