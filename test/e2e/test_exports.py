"""The agent's version script: libwallprof.so exports nothing but the wallprof_* API.

An LD_PRELOADed library's exported symbols join the global scope of every program it is
loaded into, so a stray export (a helper, a bundled library's function) could replace the
program's own. `nm -D --defined-only` must list only wallprof_* symbols (and wallprof_version
must be one of them).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wplib as wp  # noqa: E402


def main(t):
    r = wp.run(["nm", "-D", "--defined-only", wp.agent()], timeout=30)
    if not t.eq(r.returncode, 0, "nm -D --defined-only libwallprof.so runs", r.describe()):
        return
    names = []
    for line in r.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 3:
            names.append((parts[1], parts[2]))
        elif len(parts) == 2:
            names.append((parts[0], parts[1]))
    t.check(("T", "wallprof_version") in names, "wallprof_version is exported",
            r.stdout)
    others = [n for kind, n in names if not n.split("@")[0].startswith("wallprof_")]
    t.check(not others, "only wallprof_* symbols are exported (%d symbols)" % len(names),
            "also exported: " + ", ".join(others))


wp.main(main)
