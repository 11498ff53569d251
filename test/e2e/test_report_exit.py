# SPDX-License-Identifier: MIT
"""Exit status passing: wallprof exits as the program did (same code, or dies of the same
signal, so a shell sees 128+N), and the report's header says how the program ended."""

import signal

import reportlib as rl
import wplib as wp


def main(t):
    exe = rl.target("report_exit")
    if not wp.require_built(exe):
        return
    for how, code in (("0", 0), ("3", 3)):
        prof = wp.tmp_path("exit%s.prof" % how)
        r = wp.wallprof(["-q", "-o", prof, "--", exe, how, "0.2"], timeout=60)
        t.eq(r.returncode, code, "program exits %s: wallprof exits %s" % (code, code),
             r.describe())
        rep = rl.TextReport(r.stdout)
        t.check(rep.header_line("RUN", "exited with status %d" % code) is not None,
                "exit %d: the header says 'exited with status %d'" % (code, code), r.stdout[:600])
        t.check(rep.hottest_code() and rep.hottest_code().name == "work_before_exit",
                "exit %d: the profile was written and reported" % code, r.stdout[:2000])
        r2 = wp.wallprof(["--report", prof])
        t.check(r2.returncode == 0 and "work_before_exit" in r2.stdout,
                "exit %d: the saved profile reports with --report (exit 0)" % code, r2.describe())

    # killed by SIGSEGV: wallprof dies of SIGSEGV too; the report (when the agent could still
    # write) says so
    prof = wp.tmp_path("segv.prof")
    r = wp.wallprof(["-q", "-o", prof, "--", exe, "segv", "0.2"], timeout=60)
    t.eq(r.returncode, -signal.SIGSEGV, "program dies of SIGSEGV: so does wallprof", r.describe())
    t.check("killed by SIGSEGV (signal 11)" in r.stdout or "left no profile" in r.stderr,
            "SIGSEGV: the header says 'killed by SIGSEGV', or there is no profile to report",
            r.stdout[:600] + r.stderr)
    t.check("exited with status" not in r.stdout, "SIGSEGV: not reported as a normal exit")

    prof = wp.tmp_path("kill.prof")
    r = wp.wallprof(["-q", "-o", prof, "--", exe, "kill", "0.2"], timeout=60)
    t.eq(r.returncode, -signal.SIGKILL, "program dies of SIGKILL: so does wallprof", r.describe())

    # what a shell sees: 128 + N
    for how, sig in (("segv", signal.SIGSEGV), ("kill", signal.SIGKILL)):
        r = wp.run(["sh", "-c", '"$0" -q -o "$1" -- "$2" %s 0.1 >/dev/null 2>&1; echo "status=$?"'
                    % how, wp.cli(), wp.tmp_path("sh-%s.prof" % how), exe], timeout=60)
        t.check("status=%d" % (128 + sig) in r.stdout,
                "a shell sees status %d after %s" % (128 + sig, how), r.stdout + r.stderr)
    r = wp.run(["sh", "-c", '"$0" -q -o "$1" -- "$2" 3 0.1 >/dev/null 2>&1; echo "status=$?"',
                wp.cli(), wp.tmp_path("sh-3.prof"), exe], timeout=60)
    t.check("status=3" in r.stdout, "a shell sees status 3", r.stdout + r.stderr)

    # a command that cannot run: 127, as a shell does, with the reason
    r = wp.wallprof(["-q", "--", "/nonexistent/program"], timeout=60, cwd=wp.tmp_dir())
    t.check(r.returncode == 127 and "cannot run /nonexistent/program" in r.stderr,
            "a command that does not exist: exit 127 and 'cannot run'", r.describe())


wp.main(main)
