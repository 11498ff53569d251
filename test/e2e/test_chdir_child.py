# SPDX-License-Identifier: MIT
"""The program's directories are its own (found with CPython's regrtest, whose workers run in
a temporary directory and report 'env changed' when a test leaves a file in it: under
`wallprof -o pyt.prof`, test_threading and test_thread failed so).

test/targets/chdir_child.c makes a directory, enters it, forks a child that lives 300 ms and
exits, then counts the files in that directory.

Recorded with a relative -o: the directory stays empty (the child's profile went there,
relative to the child's working directory, before), the child's profile is beside the main
file, and the report of the run finds it."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wplib as wp  # noqa: E402


def main(t):
    base = os.path.dirname(wp.tmp_path("chdir.prof"))
    truth_path = os.path.join(base, "chdir.truth")
    inner = os.path.join(base, "inner")
    # -o relative to the command's working directory (base), as a user types it
    r = wp.run([wp.cli(), "-q", "-o", "chdir.prof", "--",
                wp.target("chdir_child"), inner], env={"WP_TRUTH": truth_path}, cwd=base,
               timeout=60)
    t.check(r.returncode == 0, "recorded, exit 0", r.describe())
    truth = wp.read_truth(truth_path)
    t.check(truth["entries"] == 0, "the program's directory has no file of ours",
            repr(sorted(os.listdir(inner))))
    child = "chdir.%d.prof" % truth["pid.child"]
    t.check(os.path.exists(os.path.join(base, child)),
            "the child's profile is beside the main file (%s)" % child, repr(os.listdir(base)))
    rows = wp.process_parents(r.stdout)
    child_pid = int(truth["pid.child"])
    t.check(child_pid in rows and rows[child_pid] in rows,
            "the report lists the child's process under its parent", r.stdout[:2000])


wp.main(main)
