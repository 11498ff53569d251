# SPDX-License-Identifier: MIT
"""meson install puts everything where users expect it, and the installed wallprof profiles a
program with the installed agent (not the build tree's)."""

import glob
import os
import shutil

import wplib as wp


def main(t):
    dest = wp.tmp_path("destdir")
    meson = shutil.which("meson")
    if not t.check(meson is not None, "meson is installed (run ./scripts/deps)"):
        return
    r = wp.run([meson, "install", "-C", wp.build_dir(), "--no-rebuild", "--quiet",
                "--destdir", dest], timeout=300)
    if not t.eq(r.returncode, 0, "meson install --destdir succeeds", r.describe()):
        return
    found = lambda pattern: glob.glob(os.path.join(dest, pattern), recursive=True)
    cli = found("**/bin/wallprof")
    agent = found("**/lib*/**/libwallprof.so") + found("**/lib/libwallprof.so")
    t.eq(len(cli), 1, "wallprof is installed in a bin directory", repr(cli))
    t.check(len(agent) >= 1, "libwallprof.so is installed in the library directory", repr(agent))
    t.check(found("**/include/wallprof.h"), "include/wallprof.h is installed")
    pc = found("**/pkgconfig/wallprof.pc")
    t.check(pc and "-lwallprof" in open(pc[0]).read(), "a pkg-config file wallprof.pc")
    t.check(found("**/man1/wallprof.1*") and found("**/man3/libwallprof.3*"),
            "man pages wallprof(1) and libwallprof(3)")
    if not cli or not agent:
        return
    out = wp.tmp_path("installed.prof")
    r = wp.run([cli[0], "--hz=500", "-q", "-o", out, "-f", "folded", "--",
                wp.target("cpu_split"), "1"], timeout=120)
    t.eq(r.returncode, 0, "the installed wallprof runs a program", r.describe())
    t.check("leaf_mul" in r.stdout, "and reports it", r.stdout[:500])
    raw = wp.read_raw(out)
    agents = [m["path"] for m in raw.modules if m["path"].endswith("libwallprof.so")]
    t.check(agents and all(a.startswith(dest) for a in agents),
            "with the installed agent", repr(agents))
    man = wp.run(["man", "-l", found("**/man1/wallprof.1*")[0]], env={"MANPAGER": "cat",
                 "MANWIDTH": "100"}, timeout=30)
    t.check(man.returncode == 0 and "--mode=wall|cpu" in man.stdout.replace("\u2010", "-"),
            "the man page renders (man -l)", man.stderr[:300] + man.stdout[:300])


wp.main(main)
