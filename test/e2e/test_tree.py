"""Process trees (issue 12): every process of one run is tied together. tree_burn forks a
child (which forks a grandchild) and a child that execs; each process appends its own pid,
parent and CPU time to the truth file, and the profiles are compared with it."""

import json
import os
import re
import shutil

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
        # 1000 Hz and twice the work: enough samples for a 2-point comparison
        r = wp.record([wp.target("tree_burn"), "2"], main_file, mode="cpu", hz=1000,
                      env={"WP_TRUTH": truth_path}, fmt="text")
    wp.check(r.returncode == 0, "%s: the tree ran" % name, r.stderr[-800:])
    truth = read_tree_truth(truth_path)
    if preloaded:
        root = [pid for pid, v in truth.items() if v[2] == "root"][0]
        main_file = os.path.join(d, "tree.%d.prof" % root)
    run_tree.report = r.stdout
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


def folded_roots(text):
    """Folded output with --per-process: {pid: samples} and the set of (pid, thread root)."""
    per, threads = {}, set()
    for line in text.splitlines():
        stack, _, n = line.rpartition(" ")
        frames = stack.split(";")
        m = re.match(r"^\[(.*) pid=(\d+)\]$", frames[0])
        if not m:
            return None, None
        pid = int(m.group(2))
        per[pid] = per.get(pid, 0) + int(n)
        if len(frames) > 1 and re.match(r"^\[.* tid=\d+\]$", frames[1]):
            threads.add((pid, frames[1]))
    return per, threads


def stats_samples(text):
    m = re.search(r"\[STATS\]\s+samples: ([\d,]+) from", text)
    return int(m.group(1).replace(",", "")) if m else -1


def check_merged(t, d, main_file, truth, profs):
    """--report over every process of the run: one model, each sample once, shares as the
    processes' own CPU shares."""
    file_total = sum(p.samples() for p in profs.values())
    r = wp.wallprof(["--report", main_file, "--whole-run"])
    t.eq(r.returncode, 0, "merged: --whole-run reports", r.stderr[-500:])
    t.eq(stats_samples(r.stdout), file_total,
         "merged: the samples of every file, each once (sum over files == merged total)")
    t.check("all in this report" in r.stdout and "PROCESSES" in r.stdout and
            re.search(r"function .* process\n", r.stdout),
            "merged: header table, process column and PROCESSES section", r.stdout[:3000])
    r2 = wp.wallprof(["--report", d])
    t.eq(stats_samples(r2.stdout), file_total, "merged: a directory gives the same total",
         r2.stderr[-500:])
    r3 = wp.wallprof(["--report"] + sorted(profs) + [main_file])
    t.eq(stats_samples(r3.stdout), file_total,
         "merged: several files, one given twice, count each sample once", r3.stderr[-500:])

    r = wp.wallprof(["--report", main_file, "--whole-run", "-f", "folded", "--per-process"])
    per, _ = folded_roots(r.stdout)
    t.check(per is not None, "folded --per-process: every line has a [program pid=N] root",
            r.stdout[:1000])
    per = per or {}
    # the images of one pid are one process: the truth's pids are the processes
    got_total = sum(per.values())
    cpu_total = sum(v[1] for v in truth.values())
    for pid, (_ppid, cpu, role) in sorted(truth.items()):
        share = 100.0 * per.get(pid, 0) / got_total if got_total else 0
        want = 100.0 * cpu / cpu_total
        t.near(share, want, 2.0, "cpu mode: the %s's share of the merged profile (%.1f%%) is "
               "its own CPU share (%.1f%%) within 2 points" % (role, share, want))
    by_pid = {}
    for p in profs.values():
        pid = int(p.meta["pid"])
        by_pid[pid] = by_pid.get(pid, 0) + p.samples()
    t.eq(per, {k: v for k, v in by_pid.items() if v},
         "folded --per-process: each pid's samples are its files' samples")
    r = wp.wallprof(["--report", main_file, "--whole-run", "-f", "folded", "--per-process",
                     "--per-thread"])
    _, threads = folded_roots(r.stdout)
    t.check(threads and {pid for pid, _ in threads} == set(per),
            "folded --per-process --per-thread: thread roots under each process root",
            r.stdout[:1000])

    for pid, (_ppid, _cpu, role) in truth.items():
        fn = {"root": "burn_root", "child": "burn_child", "grandchild": "burn_grandchild",
              "exec-child": "burn_exec_child"}[role]
        r = wp.wallprof(["--report", main_file, "--whole-run", "-f", "folded",
                         "--process=%d" % pid])
        stacks = wp.parse_folded(r.stdout)
        total = sum(stacks.values())
        mine = sum(n for k, n in stacks.items() if fn in k)
        t.eq(total, by_pid.get(pid, 0), "--process=%d: only the %s's samples" % (pid, role),
             r.stderr[-300:])
        t.check(total and mine >= 0.8 * total,
                "--process=%d: its samples are in %s (%d of %d)" % (pid, fn, mine, total))
    # --process-tree: the child and the grandchild it forked, not the rest
    child = [pid for pid, v in truth.items() if v[2] == "child"][0]
    grand = [pid for pid, v in truth.items() if v[2] == "grandchild"][0]
    r = wp.wallprof(["--report", main_file, "--whole-run", "-f", "folded", "--per-process",
                     "--process-tree=%d" % child])
    got, _ = folded_roots(r.stdout)
    t.eq(got, {k: v for k, v in by_pid.items() if k in (child, grand) and v},
         "--process-tree=%d: the child and its grandchild, each with all its samples" % child,
         r.stderr[-300:])
    r = wp.wallprof(["--report", main_file, "--whole-run", "--process=nosuchprogram"])
    t.check(r.returncode != 0 and "nosuchprogram" in r.stderr,
            "--process with no such process says so", r.stderr[-300:])

    # a damaged sibling: one line, the rest merged
    bad = os.path.join(d, "tree.99999.prof")
    with open(bad, "wb") as f:
        f.write(b"WALLPROF\x01\x00\x00\x00\x10\x00\x00\x00garbage")
    r = wp.wallprof(["--report", main_file, "--whole-run"])
    os.unlink(bad)
    lines = [l for l in r.stderr.splitlines() if "tree.99999" in l]
    t.eq((r.returncode, len(lines)), (0, 1), "merged, damaged sibling: one line, a report",
         r.stderr[-500:])
    t.eq(stats_samples(r.stdout), file_total, "merged, damaged sibling: the rest is all there")

    # speedscope: a profile per thread of each process, named "program pid / thread (tid N)"
    r = wp.wallprof(["--report", main_file, "--whole-run", "-f", "speedscope"])
    try:
        names = [p["name"] for p in json.loads(r.stdout)["profiles"]]
    except ValueError:
        names = []
    for pid in by_pid:
        t.check(any(n.startswith("tree_burn %d / " % pid) and "(tid " in n for n in names),
                "speedscope: a profile named 'tree_burn %d / thread (tid N)'" % pid, str(names))

    # pprof: pid and process labels, each pid with its own samples (go tool pprof -tags)
    pb = os.path.join(d, "merged.pb.gz")
    r = wp.wallprof(["--report", main_file, "--whole-run", "-f", "pprof",
                     "--report-output=" + pb])
    t.eq(r.returncode, 0, "pprof of the run is written", r.stderr[-300:])
    go = shutil.which("go")
    if not go:
        wp.note("go not found: pprof labels not checked")
        return
    r = wp.run([go, "tool", "pprof", "-tags", "-sample_index=samples", pb], timeout=120)
    tags, key = {}, None
    for line in r.stdout.splitlines():
        m = re.match(r"^\s*(\w+): Total", line)
        if m:
            key = m.group(1)
            tags[key] = {}
            continue
        m = re.match(r"^\s*([\d.]+) \(.*\): (.*)$", line)
        if m and key:
            tags[key][m.group(2).strip()] = float(m.group(1))
    t.eq({int(k): int(v) for k, v in tags.get("pid", {}).items()},
         {k: v for k, v in by_pid.items() if v},
         "pprof -tags: pid = each process with its samples", r.stdout[-1500:])
    t.eq(set(tags.get("process", {})), {"tree_burn"}, "pprof -tags: process = the program",
         r.stdout[-1500:])


def main(t):
    # Under the command every process of the tree, exec'd ones included, has the same run.
    d, main_file, truth, profs = run_tree("tree-cmd")
    t.eq(sorted(v[2] for v in truth.values()), ["child", "exec-child", "grandchild", "root"],
         "cmd: every process of the tree reported its truth")
    check_meta(t, "cmd", truth, profs, main_file, {"root", "child", "grandchild", "exec-child"})
    runs = {p.meta.get("run") for p in profs.values()}
    t.eq(len(runs), 1, "cmd: one run id over all %d files" % len(profs), str(runs))
    t.eq(stats_samples(run_tree.report), sum(p.samples() for p in profs.values()),
         "wallprof -- CMD: the report covers every process of the tree")
    t.check("all in this report" in run_tree.report and "exited with status 0" in
            run_tree.report, "wallprof -- CMD: the header lists the tree, and the root's status",
            run_tree.report[:1500])
    check_listing(t, d, main_file, truth)
    check_merged(t, d, main_file, truth, profs)

    # The root ends by _exit (as dash does): its file is written there, with the status
    # (before, _exit left no file and the root was missing from the tree).
    d = wp.tmp_path("tree-root-exit")
    os.makedirs(d, exist_ok=True)
    r = wp.record([wp.target("tree_burn")], os.path.join(d, "tree.prof"), mode="cpu",
                  env={"WP_TRUTH": os.path.join(d, "truth.txt"), "TREE_BURN_ROOT_EXIT": "1"},
                  fmt="text")
    profs = profiles_in(d)
    root = profs.get(os.path.join(d, "tree.prof"))
    t.check(root is not None and root.end() == ("exit", 0),
            "root _exit: the main file is written, with exit_status=0",
            str(root.meta if root else sorted(profs)))
    t.eq(stats_samples(r.stdout), sum(p.samples() for p in profs.values()),
         "root _exit: the report covers the whole tree")

    # The root is killed by SIGKILL and leaves no file: the command still reports the rest
    # of the tree, found by the run id it gave it.
    d = wp.tmp_path("tree-orphans")
    os.makedirs(d, exist_ok=True)
    truth_path = os.path.join(d, "truth.txt")
    r = wp.record([wp.target("tree_burn")], os.path.join(d, "tree.prof"), mode="cpu",
                  env={"WP_TRUTH": truth_path, "TREE_BURN_ROOT_KILL": "1"}, fmt="text")
    profs = profiles_in(d)
    t.eq(len(profs), 3, "orphans: the root left no file, the three others did", str(profs))
    t.check("other 3 profiles of the run follow" in r.stderr, "orphans: the command says so",
            r.stderr[-600:])
    t.eq(stats_samples(r.stdout), sum(p.samples() for p in profs.values()),
         "orphans: the report covers the rest of the tree")

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
