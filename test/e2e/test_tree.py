"""Process trees (issue 12): every process of one run is tied together. tree_burn forks a
child (which forks a grandchild) and a child that execs; each process appends its own pid,
parent and CPU time to the truth file, and the profiles are compared with it."""

import os
import re

import wplib as wp


def read_tree_truth(path):
    """tree_burn's truth: {pid: (ppid, cpu_ns, role)}."""
    procs = {}
    with open(path) as f:
        for line in f:
            pid, ppid, cpu, role = line.split()
            procs[int(pid)] = (int(ppid), int(cpu), role)
    return procs


def profiles_in(d):
    """{path: raw profile} of every .prof file in d."""
    return {os.path.join(d, f): wp.read_raw(os.path.join(d, f))
            for f in sorted(os.listdir(d)) if f.endswith(".prof")}


def run_tree(name, preloaded=False):
    """Runs tree_burn (cpu mode) under the command or bare LD_PRELOAD, in a directory of its
    own. Returns (dir, main file, truth, {path: raw profile})."""
    d = wp.tmp_path(name)
    os.makedirs(d, exist_ok=True)
    main_file = os.path.join(d, "tree.prof")
    truth_path = os.path.join(d, "truth.txt")
    if preloaded:
        # %p: with a fixed name, an exec'd program (not a fork child) would take the same file
        env = wp.preload_env(mode="cpu", out=os.path.join(d, "tree.%p.prof"))
        env["WP_TRUTH"] = truth_path
        r = wp.run([wp.target("tree_burn")], env=env)
    else:
        r = wp.record([wp.target("tree_burn")], main_file, mode="cpu",
                      env={"WP_TRUTH": truth_path}, fmt="text")
    wp.check(r.returncode == 0, "%s: the tree ran" % name, r.stderr[-800:])
    truth = read_tree_truth(truth_path)
    if preloaded:
        root = [pid for pid, v in truth.items() if v[2] == "root"][0]
        main_file = os.path.join(d, "tree.%d.prof" % root)
    return d, main_file, truth, profiles_in(d)


def check_meta(t, name, truth, profs, main_file, same_run_roles):
    by_pid = {int(p.meta.get("pid", -1)): p for p in profs.values()}
    for pid, (ppid, _cpu, role) in truth.items():
        p = by_pid.get(pid)
        if not t.check(p is not None, "%s: the %s (pid %d) left a profile" % (name, role, pid),
                       str(sorted(by_pid))):
            continue
        t.eq(p.meta.get("ppid"), str(ppid), "%s: the %s's META ppid is its parent" % (name, role))
    root_pid = [pid for pid, v in truth.items() if v[2] == "root"][0]
    root = wp.read_raw(main_file)
    t.eq(root.meta.get("pid"), str(root_pid), "%s: the main file is the root's" % name)
    run = root.meta.get("run", "")
    t.check(run.startswith("%d-" % root_pid),
            "%s: the run id is the root's pid and start time" % name, run)
    for pid, (_ppid, _cpu, role) in truth.items():
        if role in same_run_roles and pid in by_pid:
            t.eq(by_pid[pid].meta.get("run"), run, "%s: the %s shares the root's run" % (name, role))


def run_rows(text):
    """The header's table of the run's processes: {pid: (ppid, file)}."""
    rows = {}
    for line in text.splitlines():
        m = re.match(r"^\[RUN\]\s+(\d+)\s+(\d+)\s+\S+.*\s(\S+\.prof)( \(this\))?:", line)
        if m:
            rows.setdefault(int(m.group(1)), []).append((int(m.group(2)), m.group(3)))
    return rows


def check_listing(t, d, main_file, truth):
    """The main file's text report lists every process of the run; a damaged file named like
    a sibling gets one line on stderr and the rest is still listed."""
    r = wp.wallprof(["--report", main_file])
    rows = run_rows(r.stdout)
    t.eq(r.returncode, 0, "listing: the report of the main file succeeds", r.stderr[-500:])
    for pid, (ppid, _cpu, role) in truth.items():
        got = rows.get(pid, [])
        t.check(any(pp == ppid for pp, _f in got),
                "listing: the header lists the %s (pid %d, parent %d)" % (role, pid, ppid),
                r.stdout[:2000])
    t.check(("%d profiles in this run" % len(truth)) in r.stdout,
            "listing: the header counts the run's profiles", r.stdout[:1500])
    bad = os.path.join(d, "tree.99999.prof")
    with open(bad, "wb") as f:
        f.write(b"WALLPROF\x01\x00\x00\x00garbage")
    foreign = os.path.join(d, "tree.99998.prof")
    with open(foreign, "w") as f:
        f.write("not a profile at all\n")
    r = wp.wallprof(["--report", main_file])
    lines = [l for l in r.stderr.splitlines() if "tree.9999" in l]
    t.eq(r.returncode, 0, "damaged siblings: the report still succeeds", r.stderr[-500:])
    t.eq(len(lines), 2, "damaged siblings: one line each on stderr", r.stderr[-800:])
    t.eq(sorted(run_rows(r.stdout)), sorted(truth),
         "damaged siblings: every readable process is still listed", r.stdout[:1500])
    t.check("2 files of this run could not be read" in r.stdout,
            "damaged siblings: the header says how many were left out", r.stdout[:1500])
    os.unlink(bad)
    os.unlink(foreign)


def main(t):
    # Under the command every process of the tree, exec'd ones included, has the same run.
    d, main_file, truth, profs = run_tree("tree-cmd")
    t.eq(sorted(v[2] for v in truth.values()), ["child", "exec-child", "grandchild", "root"],
         "cmd: every process of the tree reported its truth")
    check_meta(t, "cmd", truth, profs, main_file, {"root", "child", "grandchild", "exec-child"})
    runs = {p.meta.get("run") for p in profs.values()}
    t.eq(len(runs), 1, "cmd: one run id over all %d files" % len(profs), str(runs))
    check_listing(t, d, main_file, truth)

    # Bare LD_PRELOAD: no environment is changed, so fork children share the root's run (the
    # agent's memory), and an exec'd program starts a run of its own.
    d, main_file, truth, profs = run_tree("tree-bare", preloaded=True)
    check_meta(t, "bare", truth, profs, main_file, {"root", "child", "grandchild"})
    by_pid = {int(p.meta.get("pid", -1)): p for p in profs.values()}
    ex = [pid for pid, v in truth.items() if v[2] == "exec-child" and pid in by_pid]
    if ex:
        run = by_pid[ex[0]].meta.get("run", "")
        t.check(run.startswith("%d-" % ex[0]), "bare: the exec'd program starts its own run", run)


wp.main(main)
