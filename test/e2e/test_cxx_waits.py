# SPDX-License-Identifier: MIT
"""C++ waits name the program's function that waits (issue 13; found profiling a std::mutex /
std::condition_variable program: its WAITS section said 'in: __gthread_mutex_lock' and
'in: wait<cv_wait()::<lambda()> >', code of the system headers inlined into the program).

test/targets/cxx_waits.cc: holder computes in compute_holding() holding big_mutex; two
lockers wait for it in contend(); two waiters wait on big_cv in cv_wait().

Wall mode, text report: WAITS lists lock big_mutex, waited for in contend() (>= 90%), held by
the holder in compute_holding(), and condition big_cv (with its mutex, cv_mutex) waited on in
cv_wait() (>= 90%)."""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wplib as wp  # noqa: E402


def waits_block(text, kind, obj):
    """The WAITS object entry `kind obj`: its lines up to the next object."""
    lines = text.splitlines()
    for i, l in enumerate(lines):
        if re.match(r"^\s+[\d.]+%%\s+.+?\s+%s\s+%s$" % (kind, re.escape(obj)), l):
            out = []
            for m in lines[i + 1:]:
                if not m.startswith("                 "):
                    break
                out.append(m.strip())
            return out
    return None


def share_of(line, fn):
    """The share of function fn in an 'in: a 60%, b 40%' line, 0 when absent."""
    m = re.search(r"(?:in:|,) %s (\d+)%%" % re.escape(fn), " " + line)
    return int(m.group(1)) if m else 0


def main(t):
    exe = os.path.join(wp.build_dir(), "test", "e2e", "cxx_waits")
    prof = wp.tmp_path("cxx_waits.prof")
    r = wp.record([exe, "2"], prof, mode="wall", hz=200, threads=0, fmt="text", timeout=120)
    t.check(r.returncode == 0, "recorded, exit 0", r.describe())
    lock = waits_block(r.stdout, "lock", "big_mutex")
    t.check(lock is not None, "WAITS lists lock big_mutex", r.stdout[-3000:])
    ins = [l for l in lock or [] if l.startswith("in:")]
    t.check(ins and share_of(ins[0], "contend()") >= 90,
            "lock big_mutex: waited for in contend() (>= 90%)", repr(lock))
    held = [l for l in lock or [] if l.startswith("held by:")]
    t.check(held and "compute_holding()" in held[0],
            "lock big_mutex: held in compute_holding()", repr(lock))
    cond = waits_block(r.stdout, "condition", "big_cv mutex=cv_mutex")
    ins = [l for l in cond or [] if l.startswith("in:")]
    t.check(ins and share_of(ins[0], "cv_wait()") >= 90,
            "condition big_cv: waited on in cv_wait() (>= 90%)", repr(cond))


wp.main(main)
