# SPDX-License-Identifier: MIT
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


ROW = wp.PROCESS_ROW


def run_rows(text):
    """The header's table of the run's processes: {pid: [(ppid, file or None)]}."""
    rows = {}
    for line in text.splitlines():
        m = ROW.match(line)
        if m:
            f = re.search(r"\[(\S+\.prof)( \(this\))?\]", m.group(8))
            rows.setdefault(int(m.group(1)), []).append((int(m.group(2)),
                                                         f.group(1) if f else None))
    return rows


def run_table(text):
    """The header's rows: {pid: (end, samples, depth)} (the last image of each pid)."""
    rows = {}
    for line in text.splitlines():
        m = ROW.match(line)
        if m:
            rows[int(m.group(1))] = (m.group(3), int(m.group(6).replace(",", "")),
                                     len(m.group(7)) // 2)
    return rows


def check_listing(t, d, main_file, truth):
    """The main file's text report (--single-file) lists every process of the run; a damaged
    file named like a sibling gets one line on stderr and the rest is still listed."""
    r = wp.wallprof(["--report", main_file, "--single-file"])
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
    r = wp.wallprof(["--report", main_file, "--single-file"])
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
    m = re.search(r"\[STATS\]\s+samples: ([\d,]+) (?:\(.*\) )?from", text)
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


# --------------------------------------------------------------------------------------------
# tree_spawn: posix_spawn and vfork children and grandchildren, each measuring its own
# lifetime and saying how it ends; brief processes too short to be sampled

def read_spawn_truth(path):
    """tree_spawn's truth: {pid: dict(ppid, life_ns, cpu_ns, role, end)}."""
    procs = {}
    with open(path) as f:
        for line in f:
            pid, ppid, life, cpu, role, end = line.rstrip("\n").split(" ", 5)
            procs[int(pid)] = dict(ppid=int(ppid), life_ns=int(life), cpu_ns=int(cpu),
                                   role=role, end=end)
    return procs


def spawn_tree(name, preloaded):
    """Runs tree_spawn in wall mode at 1000 Hz (checkpoints every second, so the process
    that SIGKILLs itself at 1.3 s leaves one), under the command or bare LD_PRELOAD."""
    d = wp.tmp_path(name)
    os.makedirs(d, exist_ok=True)
    truth_path = os.path.join(d, "truth.txt")
    env = {"WP_TRUTH": truth_path, "WALLPROF_CHECKPOINT": "1"}
    if preloaded:
        env.update(wp.preload_env(mode="wall", hz=1000, out=os.path.join(d, "ts.%p.prof")))
        r = wp.run([wp.target("tree_spawn")], env=env, timeout=120)
    else:
        r = wp.record([wp.target("tree_spawn")], os.path.join(d, "ts.prof"), mode="wall",
                      hz=1000, env=env, fmt="text")
    return d, r, read_spawn_truth(truth_path), profiles_in(d)


def truth_end(end):
    """The truth's end as wpformat's Profile.end() says it."""
    if end == "kill":
        # SIGKILL: the agent's sampler, a task of its own, outlives the process and writes
        # its end (issue 18)
        return ("signal", 9)
    word, n = end.split()
    return (word, int(n))


def header_end(end):
    """... and as the header's 'ended' column says it."""
    return {"kill": "SIGKILL", "signal 15": "SIGTERM"}.get(end, end)


def run_rows_ended(text):
    """The header's process rows: {pid: [(ppid, ended)]}."""
    rows = {}
    for line in text.splitlines():
        m = ROW.match(line)
        if m:
            rows.setdefault(int(m.group(1)), []).append((int(m.group(2)), m.group(3)))
    return rows


def unsampled_in_header(text):
    m = re.search(r"^\[RUN\]\s+(\d+) process(?:es)? ran too briefly to sample", text, re.M)
    return int(m.group(1)) if m else 0


def check_spawn_tree(t, name, d, report, truth, profs, listed):
    """The processes of one tree_spawn run, as its files, its unsampled list and a report's
    header show them."""
    by_pid = {}
    for p in profs.values():
        by_pid.setdefault(int(p.meta.get("pid", -1)), []).append(p)
    roles = {v["role"] for v in truth.values()}
    t.eq(roles, {"root", "spawn-child", "spawn-grandchild", "vfork-child", "vfork-grandchild",
                 "term", "killed", "brief"}, "%s: every kind of process reported its truth"
         % name)
    # every process once: a profile, or a line of the unsampled list
    t.eq(sorted(set(by_pid) | listed), sorted(truth),
         "%s: each process has a profile or a line in the unsampled list" % name)
    t.eq(set(by_pid) & listed, set(), "%s: and never both" % name)
    rows = run_rows_ended(report)
    for pid, v in sorted(truth.items()):
        if v["role"] == "brief":
            continue
        files = by_pid.get(pid, [])
        if not t.check(files, "%s: the %s (pid %d) left a profile" % (name, v["role"], pid),
                       str(sorted(by_pid))):
            continue
        last = max(files, key=lambda p: int(p.meta.get("start_unix_ns", 0)))
        t.eq(last.meta.get("ppid"), str(v["ppid"]), "%s: the %s's parent" % (name, v["role"]))
        t.eq(last.end(), truth_end(v["end"]), "%s: the %s's profile says how it ended (%s)"
             % (name, v["role"], v["end"]))
        t.eq(rows.get(pid), [(v["ppid"], header_end(v["end"]))],
             "%s: the header's row of the %s: parent and end" % (name, v["role"]),
             report[:2500])
        # wall mode: each process for its own lifetime. At 1000 Hz the samples' weight
        # measures time to 1 ms, a late tick's sample weighing the time since the last one.
        # The agent starts in its constructor, before main takes t0 (a few ms more), and the
        # time after its last tick is not counted (an interval); a first look at the thread
        # that times out on a loaded machine loses its tick's weight (the set-up before it:
        # 20-25 ms seen at load 9-12 on 2 CPUs); a tick missed otherwise is a percent or
        # two. So: 5% + 20 ms.
        weight_ms = sum(s["weight_ns"] for p in files for s in p.stacks) / 1e6
        life_ms = v["life_ns"] / 1e6
        if v["role"] == "killed":
            t.check(weight_ms <= life_ms + 20,
                    "%s: the killed process's samples stop at its last checkpoint (%.0f ms "
                    "of its %.0f ms)" % (name, weight_ms, life_ms))
        else:
            t.near(weight_ms, life_ms, 0.05 * life_ms + 20,
                   "%s: wall mode: the %s's samples span its own lifetime (%.0f ms, it "
                   "measured %.0f ms)" % (name, v["role"], weight_ms, life_ms))
    brief = {pid for pid, v in truth.items() if v["role"] == "brief"}
    t.eq(unsampled_in_header(report), len(listed),
         "%s: the header counts the processes too brief to sample (%d of %d brief ones)"
         % (name, len(listed), len(brief)), report[:2500])
    for u in listed:
        t.eq(truth[u]["role"], "brief", "%s: only brief processes went unsampled" % name)


def check_spawn(t):
    d, r, truth, profs = spawn_tree("spawn-cmd", preloaded=False)
    t.eq(r.returncode, 0, "spawn, cmd: every process ended as the tree expected (it checks "
         "each status itself)", r.stderr[-800:])
    listed = wp.unsampled_pids(os.path.join(d, "ts.unsampled"))
    check_spawn_tree(t, "spawn, cmd", d, r.stdout, truth, profs, listed)
    t.eq(stats_samples(r.stdout), sum(p.samples() for p in profs.values()),
         "spawn, cmd: sum over the files == the report's total")
    t.eq(len({p.meta.get("run") for p in profs.values()}), 1,
         "spawn, cmd: one run id over posix_spawn'ed and vfork'ed processes too")

    # bare LD_PRELOAD: one file per process, and --report on the directory or on the files
    # gives the same tree view
    d, r, truth, profs = spawn_tree("spawn-bare", preloaded=True)
    t.eq(r.returncode, 0, "spawn, bare: every process ended as the tree expected",
         r.stderr[-800:])
    pids = [int(p.meta["pid"]) for p in profs.values()]
    t.eq(len(pids), len(set(pids)), "spawn, bare: one file per process (none exec'd here)")
    listed = wp.unsampled_pids(os.path.join(d, "ts.unsampled"))
    r = wp.wallprof(["--report", d])
    t.eq(r.returncode, 0, "spawn, bare: --report DIR", r.stderr[-500:])
    check_spawn_tree(t, "spawn, bare --report DIR", d, r.stdout, truth, profs, listed)
    t.eq(stats_samples(r.stdout), sum(p.samples() for p in profs.values()),
         "spawn, bare: sum over the files == the directory report's total")
    r2 = wp.wallprof(["--report"] + sorted(profs))
    t.eq((run_rows_ended(r2.stdout), unsampled_in_header(r2.stdout), stats_samples(r2.stdout)),
         (run_rows_ended(r.stdout), unsampled_in_header(r.stdout), stats_samples(r.stdout)),
         "spawn, bare: --report FILE... gives the directory's tree view", r2.stderr[-500:])
    check_foreign(t, d, r)


def check_foreign(t, d, clean):
    """Corrupt or foreign files among the siblings: one line each on stderr, never a crash,
    the rest of the tree reported as without them (`clean`: the directory's report)."""
    some = sorted(f for f in os.listdir(d) if f.endswith(".prof"))[0]
    with open(os.path.join(d, some), "rb") as f:
        data = f.read()
    bad = {"empty.prof": b"", "text.prof": b"not a profile at all\n",
           "cut.prof": data[:len(data) // 2], "newer.prof": b"WALLPROF\x09\x00\x00\x00" +
           data[12:]}
    for name, content in bad.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(content)
    os.mkdir(os.path.join(d, "adir.prof"))
    with open(os.path.join(d, "ts.unsampled"), "a") as f:
        f.write("garbage that is not a line of the list\nrun=x pid=notanumber\n")
    with open(os.path.join(d, "other.unsampled"), "wb") as f:
        f.write(b"\x00\xff binary junk " * 200)
    r = wp.wallprof(["--report", d])
    names = sorted(bad) + ["adir.prof"]
    lines = [l for l in r.stderr.splitlines() if any(n in l for n in names)]
    t.eq(r.returncode, 0, "foreign files: the directory is still reported", r.stderr[-800:])
    t.eq(sorted(n for n in names if any(n in l for l in lines)), sorted(names),
         "foreign files: each named on stderr", r.stderr[-1500:])
    t.eq(len(lines), len(names), "foreign files: one line each", r.stderr[-1500:])
    t.eq((run_rows_ended(r.stdout), unsampled_in_header(r.stdout), stats_samples(r.stdout)),
         (run_rows_ended(clean.stdout), unsampled_in_header(clean.stdout),
          stats_samples(clean.stdout)),
         "foreign files: the rest of the tree as without them (processes, unsampled, samples)")
    t.check("5 files of this run could not be read" in r.stdout,
            "foreign files: the header counts them", r.stdout[:3000])


# --------------------------------------------------------------------------------------------
# A build-like tree: make -j2 over a generated Makefile of many short processes, some run
# through a shell that execs them, some through a shell that forks them

def check_build(t):
    d = wp.tmp_path("build")
    os.makedirs(d, exist_ok=True)
    ts = wp.target("tree_spawn")
    n = 40
    with open(os.path.join(d, "Makefile"), "w") as f:
        names = ["d%d" % i for i in range(n)] + ["x%d" % i for i in range(n)] + \
                ["f%d" % i for i in range(n)]
        f.write("all: %s\n" % " ".join(names))
        for i in range(n):
            f.write("d%d:\n\t-@%s brief\n" % (i, ts))                  # make runs it
            f.write("x%d:\n\t-@sh -c 'exec %s brief'\n" % (i, ts))      # sh execs it
            f.write("f%d:\n\t-@%s brief; true\n" % (i, ts))             # sh forks it
    truth_path = os.path.join(d, "truth.txt")
    main_file = os.path.join(d, "prof", "make.prof")
    os.makedirs(os.path.dirname(main_file))
    r = wp.wallprof(["-o", main_file, "-f", "text", "--", "make", "-s", "-j2", "-C", d],
                    env={"WP_TRUTH": truth_path}, timeout=300)
    t.eq(r.returncode, 0, "build: make ran under the command", r.stderr[-800:])
    truth = read_spawn_truth(truth_path)
    t.eq(len(truth), 3 * n, "build: every brief process reported its truth")
    profs = profiles_in(os.path.dirname(main_file))
    lines = wp.unsampled_lines(os.path.join(d, "prof", "make.unsampled"))
    pids = {int(p.meta["pid"]) for p in profs.values()}
    listed = {u["pid"] for u in lines}
    t.eq(set(truth) - pids - listed, set(),
         "build: every program make ran (directly, through sh's exec or sh's fork) has a "
         "profile or a line in the list")
    t.eq(pids & listed & set(truth), set(), "build: never both")
    sh_exec = {u["pid"] for u in lines if u["end"] == "exec" and u["pid"] in truth}
    t.check(len(sh_exec) >= n // 2, "build: the shells that exec'd a program are in the list "
            "as 'exec' lines under the program's pid (%d of %d)" % (len(sh_exec), n))
    t.eq(unsampled_in_header(r.stdout), len(listed - pids),
         "build: the header counts each unsampled pid once (%d lines, %d pids)" %
         (len(lines), len(listed - pids)), r.stdout[:2000])
    t.eq(stats_samples(r.stdout), sum(p.samples() for p in profs.values()),
         "build: sum over the files == the report's total")
    t.eq(len({p.meta.get("run") for p in profs.values()} | {u["run"] for u in lines}), 1,
         "build: one run over the profiles and the list")


def check_tree_report(t, main_file, truth, profs, cmd_report):
    """The main file reports its whole run by default; the header's table is the tree (each
    process's samples, depth, the root's exit status); each process's section holds its
    threads; --thread works within --process; the SVG roots each process."""
    by_pid = {}
    for p in profs.values():
        by_pid[int(p.meta["pid"])] = by_pid.get(int(p.meta["pid"]), 0) + p.samples()
    file_total = sum(by_pid.values())
    r = wp.wallprof(["--report", main_file])
    t.eq(stats_samples(r.stdout), file_total,
         "--report MAIN.prof: the whole run by default (every file's samples, each once)",
         r.stderr[-500:])
    r1 = wp.wallprof(["--report", main_file, "--single-file"])
    t.eq(stats_samples(r1.stdout), wp.read_raw(main_file).samples(),
         "--report MAIN.prof --single-file: that file alone", r1.stderr[-500:])

    rows = run_table(cmd_report)
    want_depth = {"root": 0, "child": 1, "grandchild": 2, "exec-child": 1}
    for pid, (_ppid, _cpu, role) in truth.items():
        got = rows.get(pid)
        t.check(got is not None and got[1] == by_pid.get(pid, 0) and got[2] == want_depth[role],
                "header: the %s's row has its samples (%d) at depth %d" % (
                    role, by_pid.get(pid, 0), want_depth[role]), str(got))
    root = [pid for pid, v in truth.items() if v[2] == "root"][0]
    t.eq(rows.get(root, ("?",))[0], "exit 0", "header: the root's row says how it ended")

    # each process's section, then its threads within (a thread is named by pid and tid)
    text = r.stdout
    at = text.find("AND THEIR THREADS")
    t.check(at > 0, "text: a PROCESSES AND THEIR THREADS section", text[-2000:])
    heads = [(m.start(), int(m.group(1))) for m in
             re.finditer(r"^\S.* \(pid (\d+), parent \d+.*\): [\d,]+ samples?, ", text[at:],
                          re.M)]
    t.eq(sorted(p for _, p in heads), sorted(p for p, n in by_pid.items() if n),
         "text: one section per process with samples", text[at:at + 3000])
    for i, (pos, pid) in enumerate(heads):
        body = text[at + pos:at + (heads[i + 1][0] if i + 1 < len(heads) else len(text))]
        t.check(re.search(r"tid %d\b" % pid, body),
                "text: process %d's section holds its main thread (tid %d)" % (pid, pid),
                body[:800])

    # --thread within --process: the child's main thread, by name and by tid
    child = [pid for pid, v in truth.items() if v[2] == "child"][0]
    for sel in ("tree_burn", str(child)):
        r = wp.wallprof(["--report", main_file, "-f", "folded", "--process=%d" % child,
                         "--thread=%s" % sel])
        got = sum(wp.parse_folded(r.stdout).values())
        t.eq(got, by_pid[child], "--process=%d --thread=%s: the child's thread only" % (
            child, sel), r.stderr[-300:])
    r = wp.wallprof(["--report", main_file, "-f", "folded", "--thread=tree_burn"])
    named = sum(n for pid, n in by_pid.items() if truth[pid][2] != "exec-child")
    t.eq(sum(wp.parse_folded(r.stdout).values()), named,
         "--thread=NAME over the run: that name's threads in every process")

    # SVG: a root per process, each with its own samples
    r = wp.wallprof(["--report", main_file, "-f", "svg", "--per-process", "--per-thread"])
    t.eq(r.returncode, 0, "svg over the run is written", r.stderr[-300:])
    roots = {int(m.group(1)): int(m.group(2).replace(",", "")) for m in
             re.finditer(r"<title>\[tree_burn pid=(\d+)\] \(([\d,]+) samples?", r.stdout)}
    t.eq(roots, {k: v for k, v in by_pid.items() if v},
         "svg --per-process: a [tree_burn pid=N] root per process with its samples")
    t.check(re.search(r"<title>\[tree_burn tid=%d\] \(" % child, r.stdout),
            "svg --per-process --per-thread: thread roots below", r.stdout[:300])


def check_killed_late(t):
    """A process of the run SIGKILLed just before the root ends: its sampler writes its
    profile after its death, and the command's report waits for that writer (writers.c).
    Without the wait, the report's total fell short of its files' in 5 runs of 6 (the
    command saw the root's end at once through a pidfd)."""
    for i in range(3):
        d = wp.tmp_path("killed-late-%d" % i)
        os.makedirs(d, exist_ok=True)
        r = wp.wallprof(["--hz=1000", "-o", os.path.join(d, "k.prof"), "-f", "text", "--",
                         "sh", "-c", "yes > /dev/null & p=$!; sleep 0.3; kill -9 $p; exit 0"],
                        timeout=60)
        files = sum(p.samples() for p in profiles_in(d).values())
        t.check(r.returncode == 0 and stats_samples(r.stdout) == files and
                "SIGKILL" in r.stdout,
                "killed late, run %d: the report has the killed process (SIGKILL) and every "
                "sample of its files (%d of %d)" % (i, stats_samples(r.stdout), files),
                r.stdout[:1500])


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
    check_tree_report(t, main_file, truth, profs, run_tree.report)

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

    # The root is killed by SIGKILL: the sampler, a task of its own, outlives it and writes
    # its file with its end (issue 18).
    d = wp.tmp_path("tree-kill-task")
    os.makedirs(d, exist_ok=True)
    truth_path = os.path.join(d, "truth.txt")
    r = wp.record([wp.target("tree_burn")], os.path.join(d, "tree.prof"), mode="cpu",
                  env={"WP_TRUTH": truth_path, "TREE_BURN_ROOT_KILL": "1"}, fmt="text")
    profs = profiles_in(d)
    root = profs.get(os.path.join(d, "tree.prof"))
    t.check(root is not None and root.end() == ("signal", 9),
            "root killed: its sampler writes its file, ended by SIGKILL",
            str(root.meta if root else sorted(profs)))
    t.eq(stats_samples(r.stdout), sum(p.samples() for p in profs.values()),
         "root killed: the report covers the whole tree")

    # With the sampler on a thread of the program (the fallback), a root killed by SIGKILL
    # leaves no file: the command still reports the rest of the tree, found by the run id it
    # gave it.
    d = wp.tmp_path("tree-orphans")
    os.makedirs(d, exist_ok=True)
    truth_path = os.path.join(d, "truth.txt")
    r = wp.record([wp.target("tree_burn")], os.path.join(d, "tree.prof"), mode="cpu",
                  env={"WP_TRUTH": truth_path, "TREE_BURN_ROOT_KILL": "1",
                       "WALLPROF_TEST": "thread-sampler"}, fmt="text")
    profs = profiles_in(d)
    t.eq(len(profs), 3, "orphans: the root left no file, the three others did", str(profs))
    t.check("other 3 profiles of the run follow" in r.stderr, "orphans: the command says so",
            r.stderr[-600:])
    t.eq(stats_samples(r.stdout), sum(p.samples() for p in profs.values()),
         "orphans: the report covers the rest of the tree")

    # The root is killed by SIGKILL after a checkpoint, its sampler a thread of its own (the
    # fallback): its file has no final word, and the header says what the command's waitpid
    # saw
    d = wp.tmp_path("tree-root-kill")
    os.makedirs(d, exist_ok=True)
    truth_path = os.path.join(d, "truth.txt")
    r = wp.record([wp.target("tree_burn"), "3"], os.path.join(d, "tree.prof"), mode="cpu",
                  env={"WP_TRUTH": truth_path, "TREE_BURN_ROOT_KILL": "1",
                       "WALLPROF_CHECKPOINT": "1", "WALLPROF_TEST": "thread-sampler"},
                  fmt="text")
    root = [pid for pid, v in read_tree_truth(truth_path).items() if v[2] == "root"]
    raw = wp.read_raw(os.path.join(d, "tree.prof")) if os.path.exists(
        os.path.join(d, "tree.prof")) else None
    t.check(raw is not None and raw.end() == ("no word", None),
            "root killed: its last checkpoint is its file, with no final word",
            str(raw.meta if raw else None))
    rows = run_rows_ended(r.stdout)
    t.eq(rows.get(root[0]) if root else None, [(int(raw.meta["ppid"]) if raw else -1,
                                                "SIGKILL")],
         "root killed: the header's row says SIGKILL, as the command's waitpid saw",
         r.stdout[:2000])

    # Bare LD_PRELOAD: no environment is changed, so fork children share the root's run (the
    # agent's memory), and an exec'd program starts a run of its own.
    d, main_file, truth, profs = run_tree("tree-bare", preloaded=True)
    check_meta(t, "bare", truth, profs, main_file, {"root", "child", "grandchild"})
    by_pid = {int(p.meta.get("pid", -1)): p for p in profs.values()}
    ex = [pid for pid, v in truth.items() if v[2] == "exec-child" and pid in by_pid]
    if ex:
        run = by_pid[ex[0]].meta.get("run", "")
        t.check(run.startswith("%d-" % ex[0]), "bare: the exec'd program starts its own run", run)

    check_spawn(t)
    check_build(t)
    check_killed_late(t)


wp.main(main)
