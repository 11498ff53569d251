# SPDX-License-Identifier: MIT
"""--compare on runs (issues 12 and 13): BEFORE and AFTER are runs (a main file finds the rest
of its run; a directory), processes are matched by command line (theirs and their parents',
not pids), and the waits are compared per object. Truth: tree_burn's processes measure their
own CPU time, waits' lockers the time they were blocked on big_lock and every thread its life."""

import os
import re

import wplib as wp


def read_tree_truth(path):
    """tree_burn's truth: {role: cpu_ns}."""
    out = {}
    with open(path) as f:
        for line in f:
            _pid, _ppid, cpu, role = line.split()
            out[role] = int(cpu)
    return out


def tree_run(name, env):
    d = wp.tmp_path(name)
    os.makedirs(d, exist_ok=True)
    truth = os.path.join(d, "truth.txt")
    env = dict(env, WP_TRUTH=truth)
    r = wp.record([wp.target("tree_burn"), "2"], os.path.join(d, "tree.prof"), mode="cpu",
                  hz=1000, env=env)
    return r, d, read_tree_truth(truth)


# "  [indent]command  N->M  a->b  +d[ *]  cpu->cpu"
ROW = re.compile(r"^  ( *)(\S.*?)\s{2,}(\d+)->(\d+)\s+([\d.]+)->([\d.]+)\s+([+-][\d.]+)")


def process_rows(text):
    """The Processes table of --compare: [(depth, command, share before, share after)]."""
    rows, on = [], False
    for line in text.splitlines():
        if line.startswith("Processes ("):
            on = True
            continue
        if on and not line.strip():
            break
        m = ROW.match(line) if on else None
        if m:
            rows.append((len(m.group(1)) // 2, m.group(2), float(m.group(5)),
                         float(m.group(6))))
    return rows


def check_trees(t):
    r0, before, tb = tree_run("cmp-tree-before", {})
    r1, after, ta = tree_run("cmp-tree-after", {"TREE_BURN_CHILD_SCALE": "3"})
    t.eq((r0.returncode, r1.returncode), (0, 0), "both trees ran", r1.stderr[-500:])
    t.eq(sorted(tb), ["child", "exec-child", "grandchild", "root"], "the trees told their truth")
    # BEFORE: the run's main file; AFTER: its directory
    r = wp.wallprof(["--compare", os.path.join(before, "tree.prof"), after])
    t.eq(r.returncode, 0, "--compare of two runs", r.stderr[-500:])
    rows = process_rows(r.stdout)
    # roles by their place in the tree: the root, its fork child and the grandchild share the
    # command line "tree_burn 2"; the exec'd child runs "tree_burn exec-child 2"
    where = {"root": (0, "tree_burn 2"), "child": (1, "tree_burn 2"),
             "grandchild": (2, "tree_burn 2"), "exec-child": (1, "tree_burn exec-child 2")}
    got = {(d, c): (a, b) for d, c, a, b in rows}
    t.eq(sorted(got), sorted(where.values()),
         "one row per process, matched across runs by its command line and its parents'",
         r.stdout[:2500])
    for role, key in sorted(where.items()):
        want_a = 100.0 * tb[role] / sum(tb.values())
        want_b = 100.0 * ta[role] / sum(ta.values())
        a, b = got.get(key, (-100, -100))
        t.near(a, want_a, 2.0, "the %s's share before (%.1f%%) is its CPU share (%.1f%%)" % (
            role, a, want_a))
        t.near(b, want_b, 2.0, "the %s's share after (%.1f%%) is its CPU share (%.1f%%)" % (
            role, b, want_b))
    t.check(re.search(r"^Within the processes that changed.*\n(  .*\n|    .*\n)*"
                      r"  tree_burn 2 > tree_burn 2\n    \S", r.stdout, re.M),
            "the child, which changed most, gets its own functions compared, named by its "
            "path from the root", r.stdout[:3000])
    t.check(re.search(r"\(4 profiles of one run\)", r.stdout),
            "each side says it is a run of several profiles", r.stdout[:600])
    # the whole: burn_child's total share moved as the child's CPU did
    m = re.search(r"^  burn_child\s+\S+\s+([\d.]+)->([\d.]+)", r.stdout, re.M)
    want = 100.0 * ta["child"] / sum(ta.values())
    t.check(m and abs(float(m.group(2)) - want) <= 2.0,
            "the whole: burn_child's total share after is the child's CPU share (%.1f%%)" % want,
            r.stdout[-2500:])

    # --single-file: the main files alone, as before runs were compared
    r = wp.wallprof(["--compare", os.path.join(before, "tree.prof"),
                     os.path.join(after, "tree.prof"), "--single-file"])
    t.check(r.returncode == 0 and not process_rows(r.stdout) and
            "burn_child" not in r.stdout,
            "--compare --single-file: the roots' files alone", r.stdout[:1500])

    # the differential flame graph roots each process by its program
    r = wp.wallprof(["--compare", os.path.join(before, "tree.prof"), after, "--flame-graph",
                     "--per-process"])
    t.check(r.returncode == 0 and "<title>[tree_burn] (" in r.stdout,
            "--compare --flame-graph --per-process: a [program] root", r.stderr[-300:])


def waits_truth(path):
    d = wp.read_truth(path)
    life = sum(v for k, v in d.items() if k.startswith("life_ns."))
    lock = sum(v for k, v in d.items() if k.startswith("lockwait_ns."))
    return 100.0 * lock / life if life else -1


def check_waits(t):
    paths, truth = [], []
    for name, env in (("cmp-waits-before", {}), ("cmp-waits-after",
                                                  {"WAITS_HOLD_FRACTION": "0.2"})):
        out = wp.tmp_path(name + ".prof")
        tp = wp.tmp_path(name + ".truth")
        # every thread every tick: a thread's samples stand for its lifetime
        r = wp.record([wp.target("waits"), "2"], out, threads=0, env=dict(env, WP_TRUTH=tp))
        t.eq(r.returncode, 0, "%s ran" % name, r.stderr[-300:])
        paths.append(out)
        truth.append(waits_truth(tp))
    r = wp.wallprof(["--compare"] + paths)
    m = re.search(r"^  lock\s+big_lock: ([\d.]+)% -> ([\d.]+)%  \(([+-][\d.]+) points( \*)?\)",
                  r.stdout, re.M)
    t.check(m, "--compare: a line for the lock big_lock, before -> after", r.stdout[:2500])
    if not m:
        return
    for i, when in enumerate(("before", "after")):
        got = float(m.group(1 + i))
        t.near(got, truth[i], 3.0, "big_lock %s: %.1f%% of the samples, the lockers' own "
               "blocked time over every thread's life %.1f%%" % (when, got, truth[i]))
    t.check(m.group(4), "the drop of big_lock is beyond sampling noise (*)", m.group(0))


def main(t):
    check_trees(t)
    check_waits(t)


wp.main(main)
