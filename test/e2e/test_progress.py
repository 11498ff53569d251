# SPDX-License-Identifier: MIT
"""While recording, wallprof shows progress on stderr: in a pipe, plain lines now and then;
on a terminal, one line updated in place; --quiet silences both. The report and the program's
output are not disturbed."""

import shutil

import wplib as wp


def main(t):
    out = wp.tmp_path("progress.prof")
    r = wp.wallprof(["--hz=200", "-o", out, "--", wp.target("cpu_split"), "1.5"], timeout=120)
    t.eq(r.returncode, 0, "wallprof records cpu_split", r.describe())
    lines = [l for l in r.stderr.splitlines() if l.startswith("[wallprof] ")]
    t.check(lines and "samples" in lines[0] and "threads seen" in lines[0],
            "in a pipe: plain progress lines on stderr", r.stderr[:500])
    t.check("\x1b[K" not in r.stderr, "in a pipe: no terminal escapes")
    t.check("FLAT PROFILE" in r.stdout and "[wallprof]" not in r.stdout,
            "the report on stdout is not mixed with progress")

    q = wp.wallprof(["--hz=200", "-q", "-o", out, "--", wp.target("cpu_split"), "1"], timeout=120)
    t.check(q.returncode == 0 and "[wallprof]" not in q.stderr, "--quiet: no progress",
            q.stderr[:300])

    script = shutil.which("script")
    if not t.check(script is not None, "script(1) is installed (util-linux; run ./scripts/deps)"):
        return
    cmd = "%s --hz=200 -o %s -- %s 1.5 >/dev/null" % (wp.cli(), out, wp.target("cpu_split"))
    tty = wp.run([script, "-qec", cmd, "/dev/null"], timeout=120)
    t.eq(tty.returncode, 0, "on a terminal: wallprof runs", tty.describe())
    t.check("\r\x1b[K[wallprof] " in tty.stdout,
            "on a terminal: one progress line, redrawn in place (\\r, erase line)",
            repr(tty.stdout[:300]))


wp.main(main)
