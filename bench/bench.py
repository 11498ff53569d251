#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""wallprof's benchmark driver: scripts/bench builds everything and runs this.

Sections (each run alternates the settings it compares, round after round, and reports
medians of ratios to the baseline of the same round, never a single absolute time):

  1. overhead   wall and CPU time of bench/spin (1 and 4 busy threads) under wallprof (cpu and
                wall mode), gperftools' libprofiler and perf record (-g, --call-graph dwarf) at
                100 and 1000 Hz, against an unprofiled run; the sample rate each delivered;
                the floor no signal-based profiler can go below (spin --interrupt: a bare
                signal, or tgkill + three semaphores, 1000 times a second, no profiler), and
                wallprof at 250 Hz, the rate gperftools delivers when asked for 1000
  2. accuracy   self shares in cpu_split (test/targets) against its own CLOCK_THREAD_CPUTIME_ID
                truth; wallprof cpu mode's delivered rate at 997 and 1000 Hz; wallprof against
                perf's flat profile (top 10 functions) on CPython, xz and sqlite3
  3. window     how long wallprof holds a sampled thread (META window_p50/p99) against the
                floor measured by bench/floor (tgkill + three semaphores, no work)
  4. scale      bench/idle_threads with 10..10,000 idle threads in wall mode at 100 Hz:
                sampler CPU per tick, sampler share of a core, the busy thread's slowdown;
                the agent's memory after a long run; `wallprof --report` on 10M samples
  5. calls      what the agent's interposers cost the program's own calls (bench/calls:
                pthread_sigmask pairs, 64-byte writes, pthread_create+join) and a trivial
                process's start-to-exit, unprofiled and under the agent
  6. tree       a build-like process tree (make -j2 over a generated Makefile of tiny C
                files: make -> cc -> cc1, as, then ar) recorded with `wallprof -- make`: the
                build's time both ways, its profile files and unsampled processes, and the
                report of every file of the run (folded and text) per 1,000 files
  7. waits      what issue 13's waits cost (--only waits): wall-mode runs with the agent as it
                is against WALLPROF_TEST=no-waits (no wait objects, owner reads or holder
                samples; no schedstat/stat reads), alternating, on section 1's wall-mode rows
                (spin, 1 and 4 threads, 100 and 1000 Hz), the demo (test/targets/demo),
                bench/idle_threads with 1,000 threads and test/targets/waits with 3 threads a
                tick (contended locks whose holders are mostly not in the tick's subset): the
                sampler's CPU per tick (META sampler_cpu_ns / ticks), the program's wall time
                and CPU as ratios on/off, and what each part read per tick (META
                schedstat_reads, state_reads, holder_samples); target: within 15% per tick on
                the spin rows
  8. process    process-heavy work, issue 19 (--only process: alone, it replaces only section
                8 of docs/bench.md): the extra time per process of /bin/true and `gcc -c`
                on an empty file under the agent (LD_PRELOAD, default settings) and through
                the command, each run paired with an unprofiled one (median, p90); fork's
                latency (bench/forklat: fork+wait and fork alone, p50 and p99) unprofiled and
                under the agent, wall and cpu mode at 100 and 1000 Hz, 1 and 8 busy threads;
                both also for the previous design's build ($WP_BENCH_OLD, default
                /work/wt-old/build) when it is there; and a clean `ninja -j2` of the agent
                (a copy of the committed tree) unprofiled, under perf record -F 1000 -g,
                wallprof's defaults and wallprof --mode=cpu --hz=1000, alternating rounds,
                medians of the ratios to unprofiled
  9. attach     what wallprof --pid costs a program, beside the agent (--only attach)
 10. dump       wallprof --dump --pid (--only dump: alone, it replaces only section 10): the
                command's and the snapshot's time, how long the process was stopped and its
                CPU during the dump, on deadlock abba, demo and 500 idle threads

Standard library only. Progress lines go to stderr; the markdown report to stdout and to
docs/bench.md (--out, --no-write).
"""
import argparse
import bisect
import collections
import datetime
import json
import os
import pickle
import random
import re
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "test", "e2e"))
import wpformat  # noqa: E402  (profiles are read and written as the e2e tests do)
import unique_tails  # noqa: E402  (bench/unique_tails.py, beside this file)
LIBPROFILER = "/usr/lib/x86_64-linux-gnu/libprofiler.so"
PYTHON = "/usr/bin/python3"

# ------------------------------------------------------------------------------------------
# Settings


class Plan:
    """How much to run: the full benchmark or --quick."""

    def __init__(self, quick):
        self.quick = quick
        if quick:
            self.overhead_rounds = 3
            self.overhead_ms = 400          # CPU per busy thread (1-thread workload)
            self.accuracy_runs = 1
            self.cpu_split_s = 1.5
            self.rate_runs = 2
            self.real_runs = 1
            self.real_s = 1.0
            self.window_rounds = 2
            self.window_samples = 1000      # per floor run, at 1000 Hz
            self.scale_rounds = 1
            self.scale_ms = 1000
            self.scale_counts = [10, 100, 1000, 10000]
            self.steady_ms = 6000
            self.memory_s = 10
            self.report_runs = 2
            self.calls_rounds = 5
            self.calls_n = (100000, 200000, 1000, 20000)  # sigmask pairs, writes, threads, cond round trips
            self.calls_spawns = 10          # trivial processes each way per round
            self.tree_units = 120           # C files in the build (about 3 processes each)
            self.tree_rounds = 1
            self.waits_rounds = 3
            self.waits_s = 1.0              # demo and test/targets/waits: their own length
            self.proc_runs = 40             # runs of /bin/true and of gcc -c per setting
            self.fork_n = 200               # forks per bench/forklat run
            self.fork_max_ms = 1000         # ... or at most this long
            self.fork_rounds = 1
            self.build_objs = 6             # the build: this many of the agent's object files
            self.build_rounds = 1
        else:
            self.overhead_rounds = 5
            self.overhead_ms = 1000
            self.accuracy_runs = 3
            self.cpu_split_s = 3.0
            self.rate_runs = 5
            self.real_runs = 2
            self.real_s = 2.0
            self.window_rounds = 3
            self.window_samples = 1500
            self.scale_rounds = 3
            self.scale_ms = 3000
            self.scale_counts = [10, 100, 1000, 10000]
            self.steady_ms = 75000          # long enough for a first look at 10,000 threads
            self.memory_s = 60
            self.report_runs = 3
            self.calls_rounds = 11
            self.calls_n = (200000, 500000, 2000, 50000)
            self.calls_spawns = 20
            self.tree_units = 350
            self.tree_rounds = 3
            self.waits_rounds = 7
            self.waits_s = 2.0
            self.proc_runs = 400
            self.fork_n = 1000
            self.fork_max_ms = 2000
            self.fork_rounds = 2
            self.build_objs = 0             # 0: all of the agent (libwallprof.so)
            self.build_rounds = 3
        self.report_samples = 10_000_000


# ------------------------------------------------------------------------------------------
# Running things


def log(msg):
    sys.stderr.write("bench: %s\n" % msg)
    sys.stderr.flush()


class Run:
    def __init__(self, argv, rc, wall, cpu, maxrss_kb, out, err):
        self.argv, self.rc, self.wall, self.cpu = argv, rc, wall, cpu
        self.maxrss_kb, self.out, self.err = maxrss_kb, out, err

    def check(self):
        if self.rc != 0:
            raise RuntimeError("%s exited %s\n%s" % (" ".join(self.argv), self.rc,
                                                     self.err[-2000:]))
        return self


def clean_env(extra=None):
    env = {k: v for k, v in os.environ.items()
           if not (k.startswith("WALLPROF_") or k.startswith("CPUPROFILE")
                   or k in ("LD_PRELOAD", "PYTHONPATH"))}
    env.update(extra or {})
    return env


def run(argv, env=None, timeout=600, cwd=None, poll_hwm=False):
    """Runs argv; wall time from fork to reaping, CPU (user+sys) from wait4 (so it includes
    every descendant the child waited for: perf's workload, for instance). With poll_hwm, the
    peak RSS is VmHWM of the program's own address space, polled every 50 ms (wait4's
    ru_maxrss would include this driver's RSS, which the child inherits across fork+exec)."""
    hwm = [0]
    with tempfile.TemporaryFile() as fo, tempfile.TemporaryFile() as fe:
        t0 = time.monotonic()
        p = subprocess.Popen(argv, env=env if env is not None else clean_env(), stdout=fo,
                             stderr=fe, stdin=subprocess.DEVNULL, cwd=cwd,
                             start_new_session=True)
        timer = threading.Timer(timeout, lambda: os.killpg(p.pid, signal.SIGKILL))
        timer.start()
        stop = threading.Event()

        def poll():
            path = "/proc/%d/status" % p.pid
            while not stop.wait(0.05):
                try:
                    with open(path) as f:
                        for line in f:
                            if line.startswith("VmHWM:"):
                                hwm[0] = max(hwm[0], int(line.split()[1]))
                except (OSError, ValueError):
                    pass
        poller = threading.Thread(target=poll, daemon=True) if poll_hwm else None
        if poller:
            poller.start()
        try:
            _, status, ru = os.wait4(p.pid, 0)
        finally:
            timer.cancel()
            stop.set()
        wall = time.monotonic() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        fo.seek(0)
        fe.seek(0)
        out = fo.read().decode("utf-8", "replace")
        err = fe.read().decode("utf-8", "replace")
    return Run(argv, p.returncode, wall, ru.ru_utime + ru.ru_stime,
               hwm[0] if poll_hwm else ru.ru_maxrss, out, err)


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def iqr_half(xs):
    xs = sorted(x for x in xs if x is not None)
    if len(xs) < 3:
        return None
    q = statistics.quantiles(xs, n=4, method="inclusive")
    return (q[2] - q[0]) / 2


# ------------------------------------------------------------------------------------------
# Profilers: how to run a command under each, and what they delivered


class Profiler:
    """One profiler setting. wrap() gives (argv, env) to run `cmd` writing to `out`. Kind
    "floor" is no profiler but bench/spin's own interrupter (`cmd` must be spin): mode "tick"
    wakes at the rate and signals nothing, "empty" sends SIGPROF to an empty handler, "sem"
    adds the bare three-semaphore handshake."""

    def __init__(self, kind, hz=0, mode=None, cg=None, label=None, pinned=False):
        self.kind, self.hz, self.mode, self.cg, self.pinned = kind, hz, mode, cg, pinned
        self.label = label or self._label()

    def _label(self):
        if self.kind == "base":
            return "unprofiled" + (", pinned" if self.pinned else "")
        if self.kind == "wp":
            return "wallprof %s %d Hz%s" % (self.mode, self.hz,
                                            ", sampler pinned to the other CPU"
                                            if self.pinned else "")
        if self.kind == "gperf":
            return "gperftools %d Hz" % self.hz
        if self.kind == "floor":
            return "floor: %s, %d Hz" % ({"tick": "a thread's timed wake-ups, no signal",
                                          "empty": "empty signal handler",
                                          "sem": "tgkill + 3 semaphores"}[self.mode], self.hz)
        return "perf %s %d Hz" % ("-g" if self.cg == "fp" else "--call-graph " + self.cg,
                                  self.hz)

    def wrap(self, ctx, cmd, out, extra_env=None):
        env = clean_env(extra_env)
        if self.kind == "wp":
            env.update(LD_PRELOAD=ctx.agent, WALLPROF_MODE=self.mode, WALLPROF_HZ=str(self.hz),
                       WALLPROF_OUT=out, WALLPROF_QUIET="1")
        elif self.kind == "gperf":
            env.update(LD_PRELOAD=LIBPROFILER, CPUPROFILE=out,
                       CPUPROFILE_FREQUENCY=str(self.hz))
        elif self.kind == "perf":
            cg = ["-g"] if self.cg == "fp" else ["--call-graph", self.cg]
            cmd = ["perf", "record", "-F", str(self.hz)] + cg + ["-q", "-o", out, "--"] + cmd
        elif self.kind == "floor":
            opt = {"tick": "--tick", "empty": "--interrupt", "sem": "--interrupt-sem"}[self.mode]
            cmd = cmd + [opt, str(self.hz)]
        return cmd, env


def read_wp(path):
    """wallprof profile -> wpformat.Profile (meta, modules, threads, stacks, timeline_bytes)."""
    return wpformat.read(path)


def meta_int(p, key):
    try:
        return int(p.meta.get(key, ""))
    except ValueError:
        return None


def read_gperf(path):
    """gperftools CPU profile (legacy binary format, 64-bit words) -> (samples, period_us,
    [(count, [pcs])])."""
    with open(path, "rb") as f:
        data = f.read()
    nwords = len(data) // 8
    w = struct.unpack_from("<%dQ" % nwords, data)
    if len(w) < 5 or w[0] != 0:
        raise ValueError("%s: not a gperftools CPU profile" % path)
    hdr = w[1]
    period = w[3]
    i = 2 + hdr
    total, recs = 0, []
    while i + 2 <= len(w):
        count, depth = w[i], w[i + 1]
        if count == 0 and depth == 1:
            break
        recs.append((count, list(w[i + 2:i + 2 + depth])))
        total += count
        i += 2 + depth
    return total, period, recs


def perf_samples(path):
    r = run(["perf", "script", "-i", path, "-F", "period"], timeout=300)
    return sum(1 for line in r.out.splitlines() if line.strip())


# ------------------------------------------------------------------------------------------
# A small symbolizer shared by every profiler when their profiles are compared, so that only
# the sampling differs: an address maps to the ELF symbol containing it (symtab of the file or
# of its build-id debug file, else dynsym), else to the .eh_frame FDE range containing it
# (named module@0xSTART), the same function boundaries for everyone.


class ElfInfo:
    def __init__(self, path):
        self.path = path
        self.base = os.path.basename(path)
        self.segments = []  # (offset, vaddr, filesz)
        self.syms = []      # sorted (start, end, name)
        self.fdes = []      # sorted (start, end)
        if not os.path.exists(path):
            return
        out = subprocess.run(["readelf", "-lnW", path], capture_output=True, text=True).stdout
        bid = None
        for line in out.splitlines():
            f = line.split()
            if f[:1] == ["LOAD"]:
                self.segments.append((int(f[1], 16), int(f[2], 16), int(f[4], 16)))
            m = re.search(r"Build ID: ([0-9a-f]+)", line)
            if m:
                bid = m.group(1)
        sources = []
        if bid:
            dbg = "/usr/lib/debug/.build-id/%s/%s.debug" % (bid[:2], bid[2:])
            if os.path.exists(dbg):
                sources.append([dbg])
        sources += [[path], ["-D", path]]
        for src in sources:
            syms = self._nm(src)
            if syms:
                self.syms = syms
                break
        self.starts = [s[0] for s in self.syms]
        fr = subprocess.run(["readelf", "-wf", "-W", path], capture_output=True,
                            text=True).stdout
        for m in re.finditer(r" FDE cie=\S+ pc=([0-9a-f]+)\.\.([0-9a-f]+)", fr):
            self.fdes.append((int(m.group(1), 16), int(m.group(2), 16)))
        self.fdes.sort()
        self.fde_starts = [s for s, _ in self.fdes]

    @staticmethod
    def _nm(args):
        r = subprocess.run(["nm", "-n", "-S", "--defined-only"] + args, capture_output=True,
                           text=True)
        syms = []
        for line in r.stdout.splitlines():
            f = line.split()
            if len(f) == 4 and f[2] in "TtWwi":
                start, size = int(f[0], 16), int(f[1], 16)
                if size:
                    syms.append((start, start + size, f[3]))
        syms.sort()
        return syms

    def name_at_offset(self, foff):
        vaddr = None
        for off, va, sz in self.segments:
            if off <= foff < off + sz:
                vaddr = foff - off + va
                break
        if vaddr is None:
            return "%s@?" % self.base
        i = bisect.bisect_right(self.starts, vaddr) - 1
        # symbols may nest or alias: look back a little for one that contains vaddr
        for j in range(i, max(-1, i - 8), -1):
            s, e, n = self.syms[j]
            if s <= vaddr < e:
                return n
        i = bisect.bisect_right(self.fde_starts, vaddr) - 1
        if i >= 0 and self.fdes[i][0] <= vaddr < self.fdes[i][1]:
            return "%s@0x%x" % (self.base, self.fdes[i][0])
        return "%s@?" % self.base


_elf_cache = {}


def elf(path):
    """By real path: the agent names a library as the loader opened it (liblzma.so.5), perf
    by its real path (liblzma.so.5.4.1)."""
    real = os.path.realpath(path)
    if real not in _elf_cache:
        _elf_cache[real] = ElfInfo(real)
    return _elf_cache[real]


def symbolize_offset(path, foff):
    if path.startswith("[") or not path.startswith("/"):
        return path
    return elf(path).name_at_offset(foff)


def wp_leaf_shares(prof):
    """Self shares by leaf function (the interrupted pc), with the common symbolizer."""
    mods = sorted(prof.modules, key=lambda m: m["start"])
    starts = [m["start"] for m in mods]
    c = collections.Counter()
    total = 0
    for s in prof.stacks:
        if not s["count"] or not s["pcs"]:
            continue
        pc = s["pcs"][0]
        i = bisect.bisect_right(starts, pc) - 1
        name = "?"
        while i >= 0:
            m = mods[i]
            if m["start"] <= pc < m["end"]:
                name = symbolize_offset(m["path"], pc - m["start"] + m["offset"])
                break
            i -= 1
        c[name] += s["count"]
        total += s["count"]
    return {k: v / total for k, v in c.items()} if total else {}


_MMAP = re.compile(r"PERF_RECORD_MMAP2? .*?\[0x([0-9a-f]+)\(0x([0-9a-f]+)\) @ (0x[0-9a-f]+|0) "
                   r".*\]: [r-][w-]x\S* (.*)$")


def perf_leaf_shares(path):
    """perf data -> self shares by leaf function: the first user-space frame of each sample
    (a sample taken in the kernel counts for the user code that entered it, as in wallprof).
    perf script prints user addresses as file offsets in their DSO."""
    r = run(["perf", "script", "-i", path, "-F", "ip,dso", "--show-mmap-events"], timeout=600)
    c = collections.Counter()
    total = 0
    in_sample, taken = False, False
    for line in r.out.splitlines():
        if not line.strip():
            in_sample, taken = False, False
            continue
        if "PERF_RECORD_" in line:
            continue
        m = re.match(r"\s*([0-9a-f]+) \((.*)\)$", line)
        if not m:
            continue
        if not in_sample:
            in_sample = True
            total += 1
        if taken:
            continue
        dso = m.group(2)
        if dso.startswith("[kernel") or dso == "[unknown]" and int(m.group(1), 16) >= 1 << 47:
            continue
        taken = True
        c[symbolize_offset(dso, int(m.group(1), 16))] += 1
    return {k: v / total for k, v in c.items()} if total else {}


def perf_folded(path):
    """perf data recorded with call graphs -> {root-first frames tuple: count}, user frames
    only, names as perf symbolizes them."""
    r = run(["perf", "script", "-i", path, "-F", "ip,sym,dso"], timeout=900)
    stacks = collections.Counter()
    cur = []
    for line in r.out.splitlines() + [""]:
        if not line.strip():
            if cur:
                stacks[tuple(reversed(cur))] += 1
            cur = []
            continue
        m = re.match(r"\s*[0-9a-f]+ (.*) \((.*)\)$", line)
        if not m:
            continue
        sym, dso = m.group(1), m.group(2)
        if dso.startswith("[kernel"):
            continue
        sym = re.sub(r"\+0x[0-9a-f]+$", "", sym)
        cur.append(sym)
    # drop the [unknown] frames at the root of stacks perf could not finish
    return stacks


def parse_folded(text):
    stacks = collections.Counter()
    for line in text.splitlines():
        head, sep, count = line.rpartition(" ")
        if sep and count.isdigit():
            stacks[tuple(head.split(";"))] += int(count)
    return stacks


# ------------------------------------------------------------------------------------------
# The context: paths, and the machine


class Ctx:
    def __init__(self, build, plan):
        self.build = os.path.abspath(build)
        self.plan = plan
        self.agent = os.path.join(self.build, "src", "agent", "libwallprof.so")
        self.cli = os.path.join(self.build, "src", "cli", "wallprof")
        self.bin = os.path.join(self.build, "bench")
        self.targets = os.path.join(self.build, "test", "targets")
        self.tmp = tempfile.mkdtemp(prefix="wp-bench.", dir=self.build)
        self.outside = os.path.join(self.build, "src", "outside", "wallprof-outside")
        self.notes = []       # what could not run, and why
        self.perf_ok = False
        self.gperf_ok = os.path.exists(LIBPROFILER)

    def path(self, name):
        return os.path.join(self.tmp, name)

    def exe(self, name):
        return os.path.join(self.bin, name)


def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True).stdout.strip()
    except OSError:
        return ""


def machine_info(ctx):
    cpu = sh("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-").strip()
    info = collections.OrderedDict()
    info["date"] = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    info["machine"] = "%s CPUs (nproc), %s, %s GiB RAM" % (
        sh("nproc"), cpu or "?", sh("free -g | awk '/Mem:/{print $2}'"))
    info["kernel"] = sh("uname -sr")
    info["distribution"] = sh(". /etc/os-release; echo $PRETTY_NAME")
    info["wallprof"] = "%s (git %s%s), release build" % (
        sh("%s --version" % ctx.cli).split()[-1] if sh("%s --version" % ctx.cli) else "?",
        sh("git -C %s rev-parse --short HEAD" % ROOT),
        "+dirty tree" if sh("git -C %s status --porcelain -- src" % ROOT) else "")
    info["compiler"] = sh("cc --version | head -1")
    info["perf"] = sh("perf --version")
    info["gperftools"] = sh("dpkg-query -W -f='${Version}' libgoogle-perftools-dev")
    info["CPython"] = sh("%s --version" % PYTHON)
    info["xz"] = sh("xz --version | head -1")
    info["sqlite3"] = sh("sqlite3 --version | cut -d' ' -f1")
    info["perf_event_paranoid"] = sh("cat /proc/sys/kernel/perf_event_paranoid")
    return info


def check_perf(ctx):
    out = ctx.path("perf-check.data")
    r = run(["perf", "record", "-F", "1000", "-g", "-q", "-o", out, "--", "true"], timeout=60)
    if r.rc != 0:
        ctx.notes.append("perf record cannot run here (perf_event_paranoid=%s): %s" % (
            sh("cat /proc/sys/kernel/perf_event_paranoid"), r.err.strip()[-300:]))
        return False
    ev = sh("perf evlist -i %s" % out)
    ctx.perf_event = ev
    if "cycles" not in ev:
        ctx.notes.append("perf has no hardware PMU here (a VM): perf record samples the "
                         "`%s` software event (an hrtimer per task)." % ev)
    return True


# ------------------------------------------------------------------------------------------
# 1. Overhead


def spin_cmd(ctx, threads, units):
    return [ctx.exe("spin"), str(threads), str(units)]


def parse_kv(text, prefix):
    for line in text.splitlines():
        if line.startswith(prefix):
            return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", line)}
    return {}


def delivered(ctx, prof, out, run_, inner, threads):
    """Samples per CPU-second of the program (wall mode: per thread per wall-second); for a
    floor, interrupts (handler runs) per CPU-second of the working threads (the interrupter's
    CPU left out, as wallprof's sampler's is)."""
    prog_cpu_ns = inner.get("cpu_ns", 0)
    try:
        if prof.kind == "floor":
            if prof.mode == "tick":
                return None, {}  # nothing is delivered
            return inner["interrupts"] / (inner["thread_cpu_ns"] / 1e9), {}
        if prof.kind == "wp":
            p = read_wp(out)
            samples = meta_int(p, "samples")
            extra = dict(p50=meta_int(p, "window_p50_ns"), p99=meta_int(p, "window_p99_ns"),
                         sampler=meta_int(p, "sampler_cpu_ns"), ticks=meta_int(p, "ticks"),
                         held=meta_int(p, "window_sum_ns") / meta_int(p, "duration_ns"),
                         per_tick=meta_int(p, "sampler_cpu_ns") / max(1, meta_int(p, "ticks")),
                         ticks_rate=meta_int(p, "ticks") / (meta_int(p, "duration_ns") / 1e9))
            if prof.mode == "wall":
                dur = meta_int(p, "duration_ns") / 1e9
                return samples / (threads * dur), extra
            cpu = (meta_int(p, "cpu_user_ns") + meta_int(p, "cpu_sys_ns") -
                   meta_int(p, "sampler_cpu_ns")) / 1e9
            return samples / cpu, extra
        if prof.kind == "gperf":
            samples, _, _ = read_gperf(out)
            return samples / (prog_cpu_ns / 1e9), {}
        if prof.kind == "perf":
            return perf_samples(out) / (prog_cpu_ns / 1e9), {}
    except (OSError, ValueError, TypeError, ZeroDivisionError, KeyError) as e:
        log("could not read %s's output: %s" % (prof.label, e))
    return None, {}


def overhead(ctx):
    plan = ctx.plan
    units = int(run([ctx.exe("spin"), "--calibrate", str(plan.overhead_ms)]).check()
                .out.strip())
    workloads = [("1 thread", 1, units), ("4 threads", 4, max(1, units // 2))]
    # the floors first: what a thread that wakes 250 or 1000 times a second costs by itself,
    # then interrupting the threads that often, then the bare handshake
    profs = [Profiler("base"), Profiler("floor", 250, mode="tick"),
             Profiler("floor", 1000, mode="tick"), Profiler("floor", 250, mode="empty"),
             Profiler("floor", 1000, mode="empty"), Profiler("floor", 1000, mode="sem")]
    for mode in ("cpu", "wall"):
        # cpu 250 Hz: the rate gperftools delivers when asked for 1000 (one signal per kernel
        # tick at most: CONFIG_HZ=250 on the benchmark VM), to compare at the same rate
        for hz in (100, 250, 1000) if mode == "cpu" else (100, 1000):
            profs.append(Profiler("wp", hz, mode=mode))
    if ctx.gperf_ok:
        profs += [Profiler("gperf", 100), Profiler("gperf", 1000)]
    if ctx.perf_ok:
        for cg in ("fp", "dwarf"):
            for hz in (100, 1000):
                profs.append(Profiler("perf", hz, cg=cg))
    # one thread with placement fixed (spin --split): the program on CPU 0, the sampler on 1,
    # against an unprofiled run pinned the same way
    pinned = [Profiler("base", pinned=True), Profiler("wp", 1000, mode="cpu", pinned=True),
              Profiler("wp", 1000, mode="wall", pinned=True)]
    res = {}  # (workload, label) -> list of dict per round
    for rnd in range(plan.overhead_rounds):
        log("overhead: round %d of %d" % (rnd + 1, plan.overhead_rounds))
        for wname, threads, u in workloads:
            order = profs[:] + (pinned if threads == 1 else [])
            # the baseline first half of the time, last the other half; the others rotate
            k = rnd % (len(order) - 1)
            others = order[1:][k:] + order[1:][:k]
            order = [order[0]] + others if rnd % 2 == 0 else others + [order[0]]
            for prof in order:
                out = ctx.path("ovh.out")
                argv = spin_cmd(ctx, threads, u) + (["--split"] if prof.pinned else [])
                cmd, env = prof.wrap(ctx, argv, out)
                r = run(cmd, env=env).check()
                inner = parse_kv(r.out, "spin:")
                rate, extra = delivered(ctx, prof, out, r, inner, threads)
                res.setdefault((wname, prof.label), []).append(dict(
                    wall=r.wall, cpu=r.cpu, inner_wall=inner.get("wall_ns", 0) / 1e9,
                    thread_cpu=inner.get("thread_cpu_ns", 0) / 1e9, rate=rate, **extra))
                for f in (out,):
                    if os.path.exists(f):
                        os.unlink(f)
    # paired ratios
    table = []
    for prof in profs + pinned:
        row = dict(label=prof.label, kind=prof.kind, hz=prof.hz, mode=prof.mode,
                   pinned=prof.pinned)
        for wname, _, _ in workloads:
            if (wname, prof.label) not in res:
                continue
            runs = res[(wname, prof.label)]
            base = res[(wname, "unprofiled, pinned" if prof.pinned else "unprofiled")]
            for key in ("wall", "inner_wall", "cpu", "thread_cpu"):
                ratios = [r[key] / b[key] - 1 for r, b in zip(runs, base)]
                row[(wname, key)] = (median(ratios), iqr_half(ratios))
            row[(wname, "rate")] = median([r.get("rate") for r in runs])
            row[(wname, "p50")] = median([r.get("p50") for r in runs])
            row[(wname, "p99")] = median([r.get("p99") for r in runs])
            for key in ("held", "per_tick", "ticks_rate"):
                row[(wname, key)] = median([r.get(key) for r in runs])
        table.append(row)
    return dict(units=units, workloads=[w[0] for w in workloads], table=table,
                rounds=plan.overhead_rounds)


# ------------------------------------------------------------------------------------------
# 2. Accuracy

TRUTH_KEYS = ["leaf_mul<-work_a", "leaf_mul<-work_b", "hash_loop", "lib_leaf_mul"]


def truth_shares(path):
    t = {}
    with open(path) as f:
        for line in f:
            k, _, v = line.strip().partition(" ")
            t[k] = float(v)
    tot = t["total_ns"]
    return {"leaf_mul<-work_a": t["self.leaf_mul.work_a"] / tot,
            "leaf_mul<-work_b": t["self.leaf_mul.work_b"] / tot,
            "hash_loop": t["self.hash_loop"] / tot,
            "lib_leaf_mul": t["self.lib_leaf_mul"] / tot}


def folded_shares(stacks):
    total = sum(stacks.values())
    got = collections.Counter()
    for frames, n in stacks.items():
        if not frames:
            continue
        leaf = frames[-1]
        caller = frames[-2] if len(frames) > 1 else None
        if leaf == "leaf_mul" and caller in ("work_a", "work_b"):
            got["leaf_mul<-" + caller] += n
        elif leaf in ("hash_loop", "lib_leaf_mul"):
            got[leaf] += n
    return {k: got[k] / total for k in TRUTH_KEYS} if total else None


def accuracy(ctx):
    plan = ctx.plan
    profs = [Profiler("wp", 1000, mode="cpu"), Profiler("wp", 1000, mode="wall")]
    if ctx.perf_ok:
        profs.append(Profiler("perf", 1000, cg="dwarf"))
    if ctx.gperf_ok:
        profs.append(Profiler("gperf", 1000))
    exe = os.path.join(ctx.targets, "cpu_split")
    errs = collections.defaultdict(list)   # label -> list of {key: err pp}
    rates = collections.defaultdict(list)
    for rnd in range(plan.accuracy_runs):
        log("accuracy: cpu_split round %d of %d" % (rnd + 1, plan.accuracy_runs))
        order = profs[rnd % len(profs):] + profs[:rnd % len(profs)]
        for prof in order:
            out = ctx.path("acc.out")
            truth = ctx.path("acc.truth")
            cmd, env = prof.wrap(ctx, [exe, str(plan.cpu_split_s)], out,
                                 extra_env={"WP_TRUTH": truth})
            run(cmd, env=env).check()
            tr = truth_shares(truth)
            with open(truth) as f:
                total_ns = float(dict(l.split() for l in f)["total_ns"])
            if prof.kind == "wp":
                r = run([ctx.cli, "--report", out, "--format=folded"]).check()
                stacks = parse_folded(r.out)
                p = read_wp(out)
                rates[prof.label].append(meta_int(p, "samples") / (total_ns / 1e9))
            elif prof.kind == "perf":
                stacks = perf_folded(out)
                rates[prof.label].append(sum(stacks.values()) / (total_ns / 1e9))
            else:
                r = run(["google-pprof", "--collapsed", exe, out]).check()
                # names come as "leaf_mul<0000000000001710>"
                stacks = parse_folded(re.sub(r"<[0-9a-f]+>", "", r.out))
                rates[prof.label].append(read_gperf(out)[0] / (total_ns / 1e9))
            got = folded_shares(stacks)
            if got:
                errs[prof.label].append({k: 100 * (got[k] - tr[k]) for k in TRUTH_KEYS})
            os.unlink(out)
    rows = []
    for prof in profs:
        e = errs[prof.label]
        row = dict(label=prof.label, runs=len(e), rate=median(rates[prof.label]))
        for k in TRUTH_KEYS:
            row[k] = median([x[k] for x in e])
        row["mean_abs"] = median([sum(abs(x[k]) for k in TRUTH_KEYS) / len(TRUTH_KEYS)
                                  for x in e])
        row["max_abs"] = median([max(abs(x[k]) for k in TRUTH_KEYS) for x in e])
        rows.append(row)
    return rows


def rate_delivered(ctx):
    """wallprof cpu mode at 997 and 1000 Hz on one busy thread: samples per CPU-second."""
    plan = ctx.plan
    units = int(run([ctx.exe("spin"), "--calibrate", "1000"]).check().out.strip())
    out = collections.defaultdict(list)
    for rnd in range(plan.rate_runs):
        log("rate: round %d of %d" % (rnd + 1, plan.rate_runs))
        for hz in ((997, 1000) if rnd % 2 == 0 else (1000, 997)):
            prof = Profiler("wp", hz, mode="cpu")
            path = ctx.path("rate.prof")
            cmd, env = prof.wrap(ctx, spin_cmd(ctx, 1, units), path)
            run(cmd, env=env).check()
            p = read_wp(path)
            cpu = (meta_int(p, "cpu_user_ns") + meta_int(p, "cpu_sys_ns") -
                   meta_int(p, "sampler_cpu_ns")) / 1e9
            out[hz].append(dict(rate=meta_int(p, "samples") / cpu,
                                intervals=sum(x["count"] for x in p.stacks) / cpu,
                                ticks_rate=meta_int(p, "ticks") /
                                (meta_int(p, "duration_ns") / 1e9),
                                late=meta_int(p, "ticks_late") / max(1, meta_int(p, "ticks")),
                                missed=sum(int(v) for k, v in p.meta.items()
                                           if k.startswith("missed_"))))
            os.unlink(path)
    return {hz: dict(rate=median([x["rate"] for x in v]),
                     intervals=median([x["intervals"] for x in v]),
                     lo=min(x["rate"] for x in v), hi=max(x["rate"] for x in v),
                     ticks_rate=median([x["ticks_rate"] for x in v]),
                     late=median([x["late"] for x in v]),
                     missed=median([x["missed"] for x in v]))
            for hz, v in out.items()}


def xz_input(ctx, mb):
    path = os.path.join(ctx.bin, "xz-input-%dmb.txt" % mb)
    if not os.path.exists(path):
        rng = random.Random(42)
        vocab = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9)))
                 for _ in range(5000)]
        with open(path + ".tmp", "w") as f:
            size = 0
            while size < mb << 20:
                line = " ".join(rng.choice(vocab) for _ in range(12)) + " %d\n" % rng.randint(0, 99999)
                f.write(line)
                size += len(line)
        os.rename(path + ".tmp", path)
    return path


SQL = ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<%d) "
       "SELECT x%%997 AS k, count(*), sum(length(printf('%%x-%%d', x*x, x))), "
       "max(substr(hex(x*31),2)) FROM c GROUP BY k ORDER BY 3 DESC LIMIT 3;")


def real_programs(ctx):
    """Each program sized to about real_s seconds, then wallprof (cpu mode, 1000 Hz) and perf
    (-F 1000 -g) alternately; shares of the top-10 functions by perf compared."""
    plan = ctx.plan
    # size each program from one unprofiled run
    progs = []
    r = run([PYTHON, os.path.join(ROOT, "bench", "pywork.py"), "20"]).check()
    rounds = max(5, int(20 * plan.real_s / max(r.wall, 0.01)))
    progs.append(("CPython (bench/pywork.py)", [PYTHON, os.path.join(ROOT, "bench", "pywork.py"),
                                                str(rounds)]))
    inp = xz_input(ctx, 4)
    r = run(["xz", "-6", "-T1", "-c", inp]).check()
    mb = max(1, min(64, int(4 * plan.real_s / max(r.wall, 0.01))))
    inp = xz_input(ctx, mb)
    progs.append(("xz -6 -T1 (%d MB of text)" % mb,
                  ["sh", "-c", "exec xz -6 -T1 -c %s > /dev/null" % inp]))
    r = run(["sqlite3", ":memory:", SQL % 300000]).check()
    rows = max(100000, int(300000 * plan.real_s / max(r.wall, 0.01)))
    progs.append(("sqlite3 (recursive CTE, %dk rows, GROUP BY)" % (rows // 1000),
                  ["sqlite3", ":memory:", SQL % rows]))
    results = []
    for name, cmd in progs:
        shares = collections.defaultdict(list)   # kind -> [leaf shares]
        times = collections.defaultdict(list)    # kind -> [(wall, cpu)]
        kinds = [("base", Profiler("base")), ("wp", Profiler("wp", 1000, mode="cpu"))]
        if ctx.perf_ok:
            kinds += [("perf", Profiler("perf", 1000, cg="fp")),
                      ("perf+agent", Profiler("perf", 1000, cg="fp"))]
        for rnd in range(plan.real_runs):
            log("real programs: %s, round %d of %d" % (name.split()[0], rnd + 1, plan.real_runs))
            k = rnd % len(kinds)
            for kind, prof in kinds[k:] + kinds[:k]:
                out = ctx.path("real.out")
                argv = cmd
                if kind == "perf+agent":
                    # the agent loaded but idle (1 Hz): the program as it runs under wallprof
                    argv = ["env", "LD_PRELOAD=" + ctx.agent, "WALLPROF_HZ=1", "WALLPROF_QUIET=1",
                            "WALLPROF_OUT=" + ctx.path("idle-agent.prof")] + cmd
                c, env = prof.wrap(ctx, argv, out)
                r = run(c, env=env).check()
                times[kind].append((r.wall, r.cpu))
                if kind == "wp":
                    shares[kind].append(wp_leaf_shares(read_wp(out)))
                elif kind.startswith("perf"):
                    shares[kind].append(perf_leaf_shares(out))
                for f in (out, ctx.path("idle-agent.prof")):
                    if os.path.exists(f):
                        os.unlink(f)
        res = compare_flat(name, shares["wp"], shares["perf"], shares["perf+agent"])
        for kind in ("wp", "perf"):
            if times[kind]:
                res[kind + "_cost"] = tuple(
                    median([t[i] / b[i] - 1 for t, b in zip(times[kind], times["base"])])
                    for i in (0, 1))
        results.append(res)
    return results


def compare_flat(name, wp_runs, perf_runs, perf_agent_runs=()):
    if not perf_runs:
        top = collections.Counter()
        for s in wp_runs:
            top.update(s)
        return dict(name=name, top=[k for k, _ in top.most_common(3)], wp_perf=None,
                    perf_perf=None, wp_wp=None)
    pooled = collections.Counter()
    for s in perf_runs:
        for k, v in s.items():
            pooled[k] += v / len(perf_runs)
    top10 = [k for k, _ in pooled.most_common(10)]

    def diff(a, b):
        d = [abs(a.get(k, 0) - b.get(k, 0)) * 100 for k in top10]
        return sum(d) / len(d), max(d)

    def pairs(xs, ys, same=False):
        out = []
        for i, a in enumerate(xs):
            for j, b in enumerate(ys):
                if same and j <= i:
                    continue
                out.append(diff(a, b))
        return (median([m for m, _ in out]), median([x for _, x in out])) if out else None

    def mean_of(runs):
        return {k: sum(s.get(k, 0) for s in runs) / len(runs) for k in top10} if runs else {}
    wp_mean, pa_mean = mean_of(wp_runs), mean_of(perf_agent_runs)
    return dict(name=name, top=top10[:3], top10=top10,
                top_shares=[(k, 100 * pooled[k], 100 * wp_mean.get(k, 0),
                             100 * pa_mean[k] if pa_mean else None) for k in top10],
                top10_share=100 * sum(pooled[k] for k in top10),
                wp_perf=pairs(wp_runs, perf_runs), perf_perf=pairs(perf_runs, perf_runs, True),
                wp_wp=pairs(wp_runs, wp_runs, True),
                wp_perf_agent=pairs(wp_runs, perf_agent_runs) if perf_agent_runs else None,
                perf_agent_perf=pairs(perf_agent_runs, perf_runs) if perf_agent_runs else None)


# ------------------------------------------------------------------------------------------
# 3. Suspension window


PLACEMENTS = [
    ("unpinned", "unpinned (the scheduler decides)"),
    ("split", "separate CPUs (program on CPU 0, sampler on CPU 1)"),
    ("same", "one CPU (the whole process on CPU 0)"),
]


def window(ctx):
    """The floor and wallprof's window, alternately, for each placement of the sampler and the
    sampled thread: on a 2-CPU machine the scheduler puts them on the same CPU or not, and
    the two cases differ by an order of magnitude, so each is also measured pinned."""
    plan = ctx.plan
    units = int(run([ctx.exe("spin"), "--calibrate",
                     str(plan.window_samples)]).check().out.strip())
    res = {}
    for place, _ in PLACEMENTS:
        floors, wps = [], collections.defaultdict(list)
        for rnd in range(plan.window_rounds):
            log("window: %s, round %d of %d" % (place, rnd + 1, plan.window_rounds))
            steps = ["floor", "cpu", "wall"]
            k = rnd % 3
            for step in steps[k:] + steps[:k]:
                if step == "floor":
                    argv = [ctx.exe("floor"), str(plan.window_samples), "1000"]
                    if place != "unpinned":
                        argv.append("--" + place)
                    floors.append(parse_kv(run(argv).check().out, "floor:"))
                    continue
                prof = Profiler("wp", 1000, mode=step)
                path = ctx.path("win.prof")
                argv = spin_cmd(ctx, 1, units) + (["--split"] if place == "split" else [])
                cmd, env = prof.wrap(ctx, argv, path)
                if place == "same":
                    cmd = ["taskset", "-c", "0"] + cmd
                run(cmd, env=env).check()
                p = read_wp(path)
                wps[step].append(dict(p50=meta_int(p, "window_p50_ns"),
                                      p99=meta_int(p, "window_p99_ns"),
                                      mean=meta_int(p, "window_sum_ns") /
                                      max(1, meta_int(p, "window_n")),
                                      per_tick=meta_int(p, "sampler_cpu_ns") /
                                      max(1, meta_int(p, "ticks")),
                                      n=meta_int(p, "window_n")))
                os.unlink(path)
        r = dict(floor_p50=median([f["p50_ns"] for f in floors]),
                 floor_p99=median([f["p99_ns"] for f in floors]),
                 floor_mean=median([f["mean_ns"] for f in floors]),
                 floor_n=sum(f["n"] for f in floors))
        for mode, v in wps.items():
            r[mode] = {k: median([x[k] for x in v]) for k in ("p50", "p99", "mean", "per_tick")}
            r[mode]["n"] = sum(x["n"] for x in v)
        res[place] = r
    return res


# ------------------------------------------------------------------------------------------
# 4. Scale


def scale_run(ctx, kind, n, units):
    """One idle_threads run; for wallprof also the sampler's cost from its META and from the
    program's own reading of the sampler thread's CPU (whole work, and its last third)."""
    prof = Profiler(kind, 100, mode="wall")
    path = ctx.path("scale.prof")
    cmd, env = prof.wrap(ctx, [ctx.exe("idle_threads"), str(n), str(units)], path)
    r = run(cmd, env=env, timeout=1800).check()
    kv = parse_kv(r.out, "idle_threads:")
    if kind != "wp":
        return kv
    p = read_wp(path)
    ticks = meta_int(p, "ticks")
    ticks_per_s = ticks / (meta_int(p, "duration_ns") / 1e9)
    kv["per_tick"] = meta_int(p, "sampler_cpu_ns") / max(1, ticks)
    kv["core"] = meta_int(p, "sampler_cpu_ns") / meta_int(p, "duration_ns")
    kv["late"] = meta_int(p, "ticks_late") / max(1, ticks)
    kv["rationed"] = meta_int(p, "missed_rationed") or 0
    kv["first_looks"] = meta_int(p, "unsignalled") or 0
    if kv.get("sampler_ns", -1) >= 0:
        # while the busy thread worked (thread start-up left out)
        kv["work_core"] = kv["sampler_ns"] / kv["work_ns"]
        kv["work_tick"] = kv["sampler_ns"] / max(1, ticks_per_s * kv["work_ns"] / 1e9)
    if kv.get("tail_sampler_ns", -1) >= 0 and kv.get("tail_ns"):
        kv["tail_core"] = kv["tail_sampler_ns"] / kv["tail_ns"]
        kv["tail_tick"] = kv["tail_sampler_ns"] / max(1, ticks_per_s * kv["tail_ns"] / 1e9)
    os.unlink(path)
    return kv


def scale(ctx):
    plan = ctx.plan
    units = int(run([ctx.exe("spin"), "--calibrate", str(plan.scale_ms)]).check().out.strip())
    res = {}
    for n in plan.scale_counts:
        rounds = []
        for rnd in range(plan.scale_rounds):
            log("scale: %d idle threads, round %d of %d" % (n, rnd + 1, plan.scale_rounds))
            runs = {}
            for kind in (("base", "wp") if rnd % 2 == 0 else ("wp", "base")):
                runs[kind] = scale_run(ctx, kind, n, units)
            rounds.append(runs)
        wp = [r["wp"] for r in rounds]
        slow = [r["wp"]["work_ns"] / r["base"]["work_ns"] - 1 for r in rounds]

        def med(key):
            vals = [w[key] for w in wp if key in w]
            return median(vals) if vals else None
        res[n] = dict(slow=median(slow), slow_iqr=iqr_half(slow), per_tick=med("per_tick"),
                      core=med("core"), late=med("late"), work_core=med("work_core"),
                      work_tick=med("work_tick"), tail_core=med("tail_core"),
                      tail_tick=med("tail_tick"), rationed=med("rationed"),
                      start_ratio=median([r["wp"]["start_ns"] / r["base"]["start_ns"] - 1
                                          for r in rounds]))
    return res


def scale_steady(ctx):
    """The most threads, once, for long enough that every thread has had its first look (they
    are rationed): the sampler's cost over the last third of the work is its steady state."""
    plan = ctx.plan
    n = max(plan.scale_counts)
    units = int(run([ctx.exe("spin"), "--calibrate", str(plan.steady_ms)]).check().out.strip())
    log("scale: %d idle threads for %d s, and unprofiled" % (n, plan.steady_ms // 1000))
    wp = scale_run(ctx, "wp", n, units)
    base = scale_run(ctx, "base", n, units)
    return dict(n=n, ms=plan.steady_ms, wp=wp,
                slow=wp["work_ns"] / base["work_ns"] - 1,
                tail_slow=wp["tail_ns"] / base["tail_ns"] - 1)


def memory(ctx):
    """CPython in wall mode at 1000 Hz for memory_s seconds, and for a quarter of that: the
    agent's memory at the end of each (agent_bytes, and the program's peak RSS against an
    unprofiled run), and its growth between the two, for an honest extrapolation."""
    plan = ctx.plan
    script = os.path.join(ROOT, "bench", "pywork.py")
    prof = Profiler("wp", 1000, mode="wall")
    runs = {}
    for secs in (plan.memory_s // 4, plan.memory_s):
        log("memory: CPython for %d s at 1000 Hz (wall mode), and unprofiled" % secs)
        path = ctx.path("memory.%d.prof" % secs)
        cmd, env = prof.wrap(ctx, [PYTHON, script, "--seconds", str(secs)], path)
        rw = run(cmd, env=env, timeout=secs * 5 + 120, poll_hwm=True).check()
        rb = run([PYTHON, script, "--seconds", str(secs)], poll_hwm=True).check()
        p = read_wp(path)
        runs[secs] = dict(seconds=secs, samples=meta_int(p, "samples"),
                          agent_bytes=meta_int(p, "agent_bytes"), stacks=meta_int(p, "stacks"),
                          unwind_table_bytes=meta_int(p, "unwind_table_bytes"),
                          rss_wp_kb=rw.maxrss_kb, rss_base_kb=rb.maxrss_kb, profile=path,
                          timeline_bytes=p.timeline_bytes,
                          file_bytes=os.path.getsize(path))
    short, long_ = runs[plan.memory_s // 4], runs[plan.memory_s]
    res = dict(long_)
    res["short"] = short
    dt = long_["seconds"] - short["seconds"]
    res["growth_per_s"] = (long_["agent_bytes"] - short["agent_bytes"]) / dt
    res["rss_growth_per_s"] = ((long_["rss_wp_kb"] - long_["rss_base_kb"]) -
                               (short["rss_wp_kb"] - short["rss_base_kb"])) * 1024 / dt
    return res


def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def synthesize(src_path, dst_path, total):
    """A valid profile of `total` samples made from a recorded one (docs/profile-format.md):
    its META, MODULE and THREAD records and its distinct stacks (real addresses, so the report
    symbolizes real code), with counts scaled up, and a timeline of `total` entries 1 ms
    apart drawn in proportion to the recorded counts."""
    with open(src_path, "rb") as f:
        recs = wpformat.records(f.read(), src_path)
    stacks = []
    for rtype, pl in recs:
        if rtype == wpformat.REC_STACK:
            f, rest = wpformat.fixed_fields(rtype, pl, src_path)
            stacks.append([f["id"], f["tid"], f["flags"], f["nframes"], f["count"],
                           rest[:8 * f["nframes"]]])
    by_tid = collections.defaultdict(list)
    for s in stacks:
        by_tid[s[1]].append(s)
    grand = sum(s[4] for s in stacks)
    rng = random.Random(7)
    timelines = []  # (tid, [records])
    new_count = {}
    per_thread_total = {}
    for tid, ss in by_tid.items():
        share = sum(s[4] for s in ss) / grand
        want = max(len(ss), int(total * share))
        chunk_n = min(100_000, want)
        nrec = max(1, want // chunk_n)
        ids = [s[0] for s in ss]
        ids += rng.choices([s[0] for s in ss], weights=[max(1, s[4]) for s in ss],
                           k=chunk_n - len(ss))
        rng.shuffle(ids)
        occ = collections.Counter(ids)
        body = b"".join(varint(1000) + varint(i) for i in ids[1:])
        recs_t = []
        for k in range(nrec):
            first = varint(1000 * (k * chunk_n + 1)) + varint(ids[0])
            recs_t.append(wpformat.record(wpformat.REC_TIMELINE, first + body, tid=tid,
                                          count=chunk_n))
        timelines.append((tid, recs_t))
        for sid, c in occ.items():
            new_count[sid] = c * nrec
        per_thread_total[tid] = chunk_n * nrec
    out = bytearray(wpformat.file_header())
    for rtype, pl in recs:
        if rtype == wpformat.REC_META or rtype == wpformat.REC_MODULE:
            out += wpformat.raw_record(rtype, pl)
        elif rtype == wpformat.REC_THREAD:
            f, rest = wpformat.fixed_fields(rtype, pl, src_path)
            n = per_thread_total.get(f["tid"])
            if n is not None:
                waiting = sum(new_count.get(s[0], 0) for s in by_tid[f["tid"]]
                              if s[2] & wpformat.STACK_WAITING)
                f.update(samples=n, running=n - waiting, waiting=waiting)
            out += wpformat.record(rtype, rest, **f)
    for s in stacks:
        c = new_count.get(s[0], 0)
        out += wpformat.record(wpformat.REC_STACK, s[5], id=s[0], tid=s[1], flags=s[2],
                               nframes=s[3], count=c, weight_ns=c * 1000000)
    for tid, rs in timelines:
        for r in rs:
            out += r
    out += wpformat.record(wpformat.REC_END)
    with open(dst_path, "wb") as f:
        f.write(out)
    return sum(per_thread_total.values()), len(stacks)


def report_speed(ctx, mem):
    plan = ctx.plan
    big = ctx.path("big.prof")
    log("report: synthesizing a %d-sample profile" % plan.report_samples)
    n, nstacks = synthesize(mem["profile"], big, plan.report_samples)
    times, rss = [], []
    for i in range(plan.report_runs):
        log("report: run %d of %d" % (i + 1, plan.report_runs))
        r = run([ctx.cli, "--report", big, "--format=folded"]).check()
        times.append(r.wall)
        rss.append(r.maxrss_kb)
    # the same report of the recorded profile, for scale
    small = run([ctx.cli, "--report", mem["profile"], "--format=folded"]).check()
    out = dict(samples=n, stacks=nstacks, bytes=os.path.getsize(big), time=median(times),
               tmin=min(times), tmax=max(times), rss_kb=median(rss), small_time=small.wall,
               small_samples=mem["samples"])
    # the flame graph's worst case: 1M stacks, each with a tail of its own (issue 20)
    ut = ctx.path("unique_tails.prof")
    log("report: writing 1M stacks with unique tails")
    out["ut_stacks"], out["ut_frames"], _ = unique_tails.write(mem["profile"], ut)
    out["ut_bytes"] = os.path.getsize(ut)
    for fmt in ("svg", "text"):
        t, m = [], []
        for i in range(plan.report_runs):
            log("report: unique tails, %s, run %d of %d" % (fmt, i + 1, plan.report_runs))
            r = run([ctx.cli, "--report", ut, "--format=" + fmt,
                     "--report-output=/dev/null"]).check()
            t.append(r.wall)
            m.append(r.maxrss_kb)
        out["ut_" + fmt] = (median(t), min(t), max(t), median(m))
    os.unlink(ut)
    return out


# ------------------------------------------------------------------------------------------
# 5. Calls


CALL_KEYS = ("sigmask", "write", "write_shared", "thread", "cond", "condcall", "process")
# the keys bench/calls prints (process is timed here)
CALL_PS_KEYS = CALL_KEYS[:-1]


def spawn_wall(argv, env, root=False):
    """Wall time from fork to reaping of a program whose output goes to /dev/null: a lighter
    launcher than run(), so that a trivial process's start-to-exit is not buried. With root,
    the child is the profiled process, as under `wallprof` (WALLPROF_ROOT_PID is its own pid,
    so the agent writes its profile even with no samples)."""
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        try:
            fd = os.open(os.devnull, os.O_RDWR)
            for i in (0, 1, 2):
                os.dup2(fd, i)
            if root:
                env = dict(env, WALLPROF_ROOT_PID=str(os.getpid()))
            os.execve(argv[0], argv, env)
        finally:
            os._exit(127)
    _, status = os.waitpid(pid, 0)
    wall = time.monotonic() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError("%s exited %s" % (" ".join(argv), status))
    return wall


TREE_TEXT = (
    "A build-like process tree: `make -j2` over a generated Makefile of %d tiny C files (make "
    "runs `cc` for each, which starts `cc1` and `as`; then `ar`), recorded with `wallprof -q "
    "-o make.prof -- make -s -j2` (wall mode, 100 Hz: the defaults), alternating with an "
    "unprofiled build, %d round(s) (median). *profile files*: the recorded run's files (a "
    "process sampled at least once leaves one); *unsampled*: the processes that ran too "
    "briefly to be sampled, each a line of make.unsampled; *samples*: the sum over the files "
    "and the total of the folded report over all of them (`--report make.prof --whole-run`), "
    "which must be equal; the report times are medians of %d runs each (reading, "
    "symbolizing and merging every file). Load average (1, 5, 15 min) when the section "
    "ended: %s.")


def calls(ctx):
    """The program's own calls that the agent interposes on, timed by bench/calls unprofiled
    and under the agent (wall mode, 1000 Hz, every thread each tick), alternating round by
    round; and a trivial process (bench/calls with no work) from spawn to exit both ways."""
    plan = ctx.plan
    prof = Profiler("wp", 1000, mode="wall")
    out = ctx.path("calls.prof")
    work = [ctx.exe("calls")] + [str(n) for n in plan.calls_n]
    rounds = []
    for rnd in range(plan.calls_rounds):
        log("calls: round %d of %d" % (rnd + 1, plan.calls_rounds))
        r = {}
        for kind in (("base", "wp") if rnd % 2 == 0 else ("wp", "base")):
            if kind == "wp":
                cmd, env = prof.wrap(ctx, work, out, extra_env={"WALLPROF_THREADS": "0"})
            else:
                cmd, env = work, clean_env()
            kv = parse_kv(run(cmd, env=env).check().out, "calls:")
            r[kind] = {k: kv[k + "_ps"] / 1000 for k in CALL_PS_KEYS}
            if kind == "wp":
                if not meta_int(read_wp(out), "samples"):
                    raise RuntimeError("calls: the agent took no samples")
                os.unlink(out)
        walls = collections.defaultdict(list)
        for i in range(plan.calls_spawns):
            for kind in (("base", "wp") if i % 2 == 0 else ("wp", "base")):
                if kind == "wp":
                    cmd, env = prof.wrap(ctx, [ctx.exe("calls")], out,
                                         extra_env={"WALLPROF_THREADS": "0"})
                else:
                    cmd, env = [ctx.exe("calls")], clean_env()
                walls[kind].append(spawn_wall(cmd, env, root=kind == "wp") * 1e9)
        os.unlink(out)
        for kind in walls:
            r[kind]["process"] = min(walls[kind])
        rounds.append(r)
    res = dict(rounds=plan.calls_rounds, n=plan.calls_n, spawns=plan.calls_spawns,
               load=sh("cut -d' ' -f1-3 /proc/loadavg"))
    for k in CALL_KEYS:
        ratios = [r["wp"][k] / r["base"][k] for r in rounds]
        res[k] = dict(base=median([r["base"][k] for r in rounds]),
                      wp=median([r["wp"][k] for r in rounds]),
                      ratio=median(ratios), ratio_iqr=iqr_half(ratios))
    return res


# ------------------------------------------------------------------------------------------
# 6. Process trees


def make_tree_project(d, units):
    """`units` tiny C files and a Makefile that compiles each (make -> cc -> cc1, as: cc
    starts its passes with posix_spawn or vfork) and archives them (ar)."""
    os.makedirs(d, exist_ok=True)
    names = []
    for i in range(units):
        with open(os.path.join(d, "u%04d.c" % i), "w") as f:
            f.write("int f%d(int x) { int s = 0; for (int i = 0; i < x; i++) s += i * %d; "
                    "return s; }\n" % (i, i + 1))
        names.append("u%04d.o" % i)
    with open(os.path.join(d, "Makefile"), "w") as f:
        f.write("OBJS = %s\n\nlib.a: $(OBJS)\n\tar rcs $@ $(OBJS)\n\n"
                "%%.o: %%.c\n\tcc -O1 -c $< -o $@\n\nclean:\n\trm -f lib.a $(OBJS)\n"
                % " ".join(names))


def tree(ctx):
    """A build-like tree recorded with `wallprof -- make -j2` (default settings: wall mode,
    100 Hz), alternating with an unprofiled build, round by round; then the report of the
    last recorded run's files: `--whole-run` folded and text, each plan.report_runs times."""
    plan = ctx.plan
    proj = ctx.path("tree")
    make_tree_project(proj, plan.tree_units)
    pdir = ctx.path("tree-prof")
    main = os.path.join(pdir, "make.prof")
    walls = collections.defaultdict(list)
    for rnd in range(plan.tree_rounds):
        for kind in (("base", "wp") if rnd % 2 == 0 else ("wp", "base")):
            log("tree: round %d of %d, %s" % (rnd + 1, plan.tree_rounds, kind))
            run(["make", "-s", "clean"], cwd=proj).check()
            if kind == "wp":
                shutil.rmtree(pdir, ignore_errors=True)
                os.makedirs(pdir)
                cmd = [ctx.cli, "-q", "-o", main, "-f", "folded", "--", "make", "-s", "-j2"]
            else:
                cmd = ["make", "-s", "-j2"]
            walls[kind].append(run(cmd, cwd=proj).check().wall)
    files = [f for f in os.listdir(pdir) if f.endswith(".prof")]
    listed = set()
    with open(os.path.join(pdir, "make.unsampled")) as f:
        for line in f:
            m = re.match(r"^run=\S+ pid=(\d+) ", line)
            if m:
                listed.add(int(m.group(1)))
    profs = [wpformat.read(os.path.join(pdir, f)) for f in files]
    pids = {int(p.meta["pid"]) for p in profs}
    file_samples = sum(p.samples() for p in profs)
    times = collections.defaultdict(list)
    for i in range(plan.report_runs):
        for fmt in ("folded", "text"):
            log("tree: report %s, run %d of %d" % (fmt, i + 1, plan.report_runs))
            r = run([ctx.cli, "--report", main, "--whole-run", "-f", fmt]).check()
            times[fmt].append(r.wall)
            if fmt == "folded":
                folded = sum(int(line.rpartition(" ")[2]) for line in r.out.splitlines()
                             if line.strip())
            else:
                m = re.search(r"^\[RUN\]\s+(\d+) process(?:es)? ran too briefly", r.out, re.M)
                said = int(m.group(1)) if m else 0
    return dict(units=plan.tree_units, rounds=plan.tree_rounds, files=len(files),
                pids=len(pids), unsampled=len(listed - pids), said_unsampled=said,
                file_samples=file_samples, report_samples=folded,
                base=median(walls["base"]), wp=median(walls["wp"]),
                folded=median(times["folded"]), text=median(times["text"]),
                runs=plan.report_runs, load=sh("cut -d' ' -f1-3 /proc/loadavg"))


# 7. The cost of waits

WAITS_COUNTS = ("schedstat_reads", "state_reads", "cpuwait_read_ns", "holder_samples",
                "holder_missed")


def waits_workloads(ctx):
    """The wall-mode workloads whose waits are priced: (label, argv, hz, extra env, what
    "program wall" is: "spin" its own clock, "idle" the busy thread's work, "run" fork to
    exit of a program that runs for a set time)."""
    plan = ctx.plan
    units = int(run([ctx.exe("spin"), "--calibrate", str(plan.overhead_ms)]).check()
                .out.strip())
    wl = []
    for threads, u in ((1, units), (4, max(1, units // 2))):
        for hz in (100, 1000):
            wl.append(("spin, %d thread%s, %d Hz" % (threads, "s" if threads > 1 else "", hz),
                       spin_cmd(ctx, threads, u), hz, {}, "spin"))
    secs = "%g" % plan.waits_s
    wl.append(("demo (a lock, a pipe, sleeps, joins), 100 Hz",
               [os.path.join(ctx.targets, "demo"), secs], 100, {}, "run"))
    wl.append(("1,000 idle threads + 1 busy (bench/idle_threads), 100 Hz",
               [ctx.exe("idle_threads"), "1000", str(units)], 100, {}, "idle"))
    wl.append(("contended locks, 3 threads a tick (test/targets/waits), 100 Hz",
               [os.path.join(ctx.targets, "waits"), secs], 100, {"WALLPROF_THREADS": "3"},
               "run"))
    return wl


def waits_run(ctx, argv, hz, extra, wall_kind, off):
    """One wall-mode run with waits on, or off (WALLPROF_TEST=no-waits): the sampler's CPU per
    tick, the program's wall time and CPU (the process's less the sampler's), and what the
    wait machinery read per tick."""
    out = ctx.path("waits.prof")
    env_extra = dict(extra, **({"WALLPROF_TEST": "no-waits"} if off else {}))
    cmd, env = Profiler("wp", hz, mode="wall").wrap(ctx, argv, out, extra_env=env_extra)
    r = run(cmd, env=env).check()
    p = read_wp(out)
    os.unlink(out)
    ticks = max(1, meta_int(p, "ticks") or 0)
    sampler = meta_int(p, "sampler_cpu_ns") or 0
    if wall_kind == "spin":
        wall = parse_kv(r.out, "spin:")["wall_ns"] / 1e9
    elif wall_kind == "idle":
        wall = parse_kv(r.out, "idle_threads:")["work_ns"] / 1e9
    else:
        wall = r.wall
    d = dict(per_tick=sampler / ticks, wall=wall, cpu=r.cpu - sampler / 1e9,
             waits=meta_int(p, "waits") or 0, samples=meta_int(p, "samples") or 0)
    for k in WAITS_COUNTS:
        d[k] = (meta_int(p, k) or 0) / ticks
    return d


def waits_cost(ctx):
    """Each workload with waits on and off, alternately (the order swapped round by round),
    as ratios on/off within a round; medians over rounds."""
    plan = ctx.plan
    wl = waits_workloads(ctx)
    rounds = collections.defaultdict(list)  # label -> [{"on": d, "off": d}]
    for rnd in range(plan.waits_rounds):
        log("waits: round %d of %d" % (rnd + 1, plan.waits_rounds))
        for i, (label, argv, hz, extra, wall_kind) in enumerate(wl):
            r = {}
            for off in ((False, True) if (rnd + i) % 2 == 0 else (True, False)):
                r["off" if off else "on"] = waits_run(ctx, argv, hz, extra, wall_kind, off)
            rounds[label].append(r)
    rows = []
    for label, _, hz, _, wall_kind in wl:
        rs = rounds[label]
        row = dict(label=label, hz=hz, spin=wall_kind == "spin", wall_kind=wall_kind)
        for key in ("per_tick", "wall", "cpu"):
            ratios = [r["on"][key] / r["off"][key] - 1 for r in rs if r["off"][key] > 0]
            row[key] = (median(ratios), iqr_half(ratios))
        row["per_tick_off"] = median([r["off"]["per_tick"] for r in rs])
        row["per_tick_on"] = median([r["on"]["per_tick"] for r in rs])
        for k in WAITS_COUNTS + ("waits",):
            row[k] = median([r["on"][k] for r in rs])
            row[k + "_off"] = max(r["off"][k] for r in rs)
        rows.append(row)
    return dict(rounds=plan.waits_rounds, secs=plan.waits_s, rows=rows,
                load=sh("cut -d' ' -f1-3 /proc/loadavg"))


# ------------------------------------------------------------------------------------------
# 8. Process-heavy work (issue 19): starting a process, forking, a build


def old_build():
    """The previous design's build (its agent and command) to compare with, or None:
    $WP_BENCH_OLD (a build directory), by default /work/wt-old/build; labelled with the commit
    its source tree is at."""
    d = os.environ.get("WP_BENCH_OLD", "/work/wt-old/build")
    agent = os.path.join(d, "src", "agent", "libwallprof.so")
    cli = os.path.join(d, "src", "cli", "wallprof")
    if not (os.path.exists(agent) and os.access(cli, os.X_OK)):
        return None
    src = os.path.dirname(os.path.abspath(d))
    commit = sh("git -C %s rev-parse --short HEAD 2>/dev/null" % src) or "?"
    return dict(agent=agent, cli=cli, commit=commit, dir=d)


def spawn_ns(argv, env, cwd=None):
    """Wall time of argv from posix_spawn (vfork+exec: the driver's own size does not count)
    to reaping, output to /dev/null."""
    fa = [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
          (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
          (os.POSIX_SPAWN_DUP2, 1, 2)]
    if cwd:
        old = os.getcwd()
        os.chdir(cwd)
    try:
        t0 = time.monotonic_ns()
        pid = os.posix_spawn(argv[0], argv, env, file_actions=fa)
        _, status = os.waitpid(pid, 0)
        t = time.monotonic_ns() - t0
    finally:
        if cwd:
            os.chdir(old)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError("%s exited %s" % (" ".join(argv), status))
    return t


def empty_dir(d):
    for e in os.scandir(d):
        if e.is_dir(follow_symlinks=False):
            shutil.rmtree(e.path)
        else:
            os.unlink(e.path)


def pctl(xs, p):
    xs = sorted(xs)
    if not xs:
        return None
    i = max(0, -(-len(xs) * p // 100) - 1)
    return xs[i]


def process_start(ctx, old):
    """The per-process start cost: plan.proc_runs runs of /bin/true and of `gcc -c` on an
    empty file, each setting in an order that rotates run by run, every one paired with the
    unprofiled run of the same turn: bare LD_PRELOAD of the agent (default settings,
    WALLPROF_OUT in a temporary directory, emptied between turns), and through the `wallprof`
    command (-q -o FILE), for this build and the previous design's."""
    plan = ctx.plan
    pdir = ctx.path("proc-out")
    cwd = ctx.path("proc-cwd")
    os.makedirs(pdir)
    os.makedirs(cwd)
    with open(os.path.join(cwd, "empty.c"), "w"):
        pass
    gcc = shutil.which("gcc") or "/usr/bin/gcc"
    # the command's own start and report (~0.2 s with gcc's three files here) would make
    # gcc's turns several times longer: /bin/true only
    works = [("/bin/true", ["/bin/true"], 1, True),
             ("gcc -c empty.c", [gcc, "-c", "empty.c", "-o", "empty.o"], 3, False)]
    builds = [("new", ctx.agent, ctx.cli)]
    if old:
        builds.append(("old", old["agent"], old["cli"]))
    out = {}
    for wname, argv, nproc, with_cmd in works:
        settings = [("base", None)]
        for b, agent, cli in builds:
            settings.append(("preload-" + b, (agent, None)))
            if with_cmd:
                settings.append(("cmd-" + b, (agent, cli)))
        log("process: %d runs of %s, %d settings each" % (plan.proc_runs, wname, len(settings)))
        times = collections.defaultdict(list)
        for i in range(plan.proc_runs):
            k = i % len(settings)
            for name, how in settings[k:] + settings[:k]:
                env = clean_env()
                cmd = argv
                if how and how[1] is None:
                    env.update(LD_PRELOAD=how[0],
                               WALLPROF_OUT=os.path.join(pdir, "wallprof.%p.prof"))
                elif how:
                    env.update(WALLPROF_AGENT=how[0])
                    cmd = [how[1], "-q", "-o", os.path.join(pdir, "cmd.prof"), "--"] + argv
                times[name].append(spawn_ns(cmd, env, cwd=cwd))
            empty_dir(pdir)
        base = times["base"]
        r = dict(procs=nproc, base_p50=median(base), base_p90=pctl(base, 90), rows={})
        for name, _ in settings[1:]:
            d = [t - b for t, b in zip(times[name], base)]
            r["rows"][name] = dict(p50=median(d), p90=pctl(d, 90), abs_p50=median(times[name]))
        out[wname] = r
    return out


FORK_SETTINGS = [("wall", 100), ("wall", 1000), ("cpu", 100), ("cpu", 1000)]


def fork_latency(ctx, old):
    """bench/forklat unprofiled and under the agent (bare LD_PRELOAD) in wall and cpu mode at
    100 and 1000 Hz, this build and the previous design's, with 1 and 8 busy threads; the
    settings rotate round by round; medians over rounds of each run's p50 and p99."""
    plan = ctx.plan
    out_prof = ctx.path("fork.%p.prof")
    settings = [("base", None, None, 0)]
    for b, agent in [("new", ctx.agent)] + ([("old", old["agent"])] if old else []):
        for mode, hz in FORK_SETTINGS:
            settings.append(("%s %s %d" % (b, mode, hz), agent, mode, hz))
    res = {}
    for busy in (1, 8):
        runs = collections.defaultdict(list)
        for rnd in range(plan.fork_rounds):
            log("process: fork latency, %d busy thread(s), round %d of %d" % (
                busy, rnd + 1, plan.fork_rounds))
            k = rnd % len(settings)
            for name, agent, mode, hz in settings[k:] + settings[:k]:
                env = clean_env()
                if agent:
                    env.update(LD_PRELOAD=agent, WALLPROF_MODE=mode, WALLPROF_HZ=str(hz),
                               WALLPROF_OUT=out_prof, WALLPROF_QUIET="1")
                r = run([ctx.exe("forklat"), str(plan.fork_n), str(busy), "200",
                         str(plan.fork_max_ms)], env=env).check()
                runs[name].append(parse_kv(r.out, "forklat:"))
                for f in os.listdir(ctx.tmp):
                    if f.startswith("fork."):
                        os.unlink(ctx.path(f))
        rows = {}
        for name, *_ in settings:
            rs = runs[name]
            row = {k: median([x[k] for x in rs]) for k in
                   ("wait_p50_ns", "wait_p99_ns", "fork_p50_ns", "fork_p99_ns", "cpu_p50_ns",
                    "cpu_p99_ns")}
            row["n_min"] = min(x["n"] for x in rs)
            row["ratio"] = median([x["wait_p50_ns"] / b["wait_p50_ns"]
                                   for x, b in zip(rs, runs["base"])])
            rows[name] = row
        res[busy] = rows
    return dict(settings=[s[0] for s in settings], busy=res, n=plan.fork_n,
                rounds=plan.fork_rounds, max_ms=plan.fork_max_ms)


def build_side_by_side(ctx):
    """A clean `ninja -j2` of a fixed subset of this project (a copy of the committed tree,
    configured once), in alternated rounds: unprofiled, perf record -F 1000 -g, wallprof at
    its defaults (wall, 100 Hz) and wallprof --mode=cpu --hz=1000, through the command (-q,
    -o to a temporary file). Medians of the per-round ratios to the unprofiled build."""
    plan = ctx.plan
    src = ctx.path("buildsrc")
    os.makedirs(src)
    subprocess.run("git -C %s archive HEAD | tar -x -C %s" % (ROOT, src), shell=True,
                   check=True)
    bdir = os.path.join(src, "b")
    log("process: meson setup of the build's copy")
    run(["meson", "setup", bdir, "-Dbuildtype=release"], cwd=src).check()
    objs = sorted(t.split(":")[0] for t in
                  run(["ninja", "-C", bdir, "-t", "targets", "all"]).check().out.splitlines()
                  if t.startswith("src/agent/") and t.split(":")[0].endswith(".o"))
    if plan.build_objs:
        targets_ = objs[:plan.build_objs]
        what = "%d object files of the agent (src/agent)" % len(targets_)
    else:
        targets_ = ["src/agent/libwallprof.so"]
        what = "the agent, src/agent/libwallprof.so (%d object files and the link)" % len(objs)
    pdir = ctx.path("build-prof")
    os.makedirs(pdir)
    perf_data = ctx.path("x.data")
    settings = ["base"]
    if ctx.perf_ok:
        settings.append("perf")
    # with --no-report, as perf record (which reports nothing); and as a user runs it, with
    # the report of the run's profiles at the end
    settings += ["wpnr", "wpcpunr", "wp", "wpcpu"]
    ninja = ["ninja", "-j2"] + targets_
    walls = collections.defaultdict(list)
    bloads = collections.defaultdict(list)
    for rnd in range(plan.build_rounds):
        k = rnd % len(settings)
        for s in settings[k:] + settings[:k]:
            log("process: build round %d of %d, %s" % (rnd + 1, plan.build_rounds, s))
            run(["ninja", "-t", "clean"], cwd=bdir).check()
            empty_dir(pdir)
            load = sh("cut -d' ' -f1 /proc/loadavg")
            if s == "perf":
                cmd = ["perf", "record", "-F", "1000", "-g", "-q", "-o", perf_data, "--"] + ninja
            elif s.startswith("wp"):
                cmd = [ctx.cli, "-q"] + (["--no-report"] if s.endswith("nr") else []) + \
                    (["--mode=cpu", "--hz=1000"] if s.startswith("wpcpu") else []) + \
                    ["-o", os.path.join(pdir, "ninja.prof"), "--"] + ninja
            else:
                cmd = ninja
            r = run(cmd, cwd=bdir, env=clean_env({"WALLPROF_AGENT": ctx.agent})
                    if s.startswith("wp") else None)
            if r.rc != 0 and s == "perf":
                ctx.notes.append("process section: perf record was refused during the build "
                                 "(%s); its row is left out" % r.err.strip()[-200:])
                settings.remove("perf")
                continue
            r.check()
            walls[s].append(r.wall)
            bloads[s].append(load)
            if os.path.exists(perf_data):
                os.unlink(perf_data)
    rows = {}
    for s in settings:
        ratios = [w / b for w, b in zip(walls[s], walls["base"])]
        rows[s] = dict(wall=median(walls[s]), ratio=median(ratios), ratios=ratios,
                       loads=bloads[s])
    return dict(what=what, rounds=plan.build_rounds, rows=rows, settings=settings,
                perf=ctx.perf_ok)


def process_heavy(ctx):
    old = old_build()
    if not old:
        ctx.notes.append("process section: no previous design's build to compare with "
                         "($WP_BENCH_OLD, default /work/wt-old/build)")
    t0 = time.monotonic()
    loads = [sh("cut -d' ' -f1-3 /proc/loadavg")]
    res = dict(old=old, start=process_start(ctx, old))
    loads.append(sh("cut -d' ' -f1-3 /proc/loadavg"))
    res["fork"] = fork_latency(ctx, old)
    loads.append(sh("cut -d' ' -f1-3 /proc/loadavg"))
    res["build"] = build_side_by_side(ctx)
    loads.append(sh("cut -d' ' -f1-3 /proc/loadavg"))
    res["loads"] = loads
    res["secs"] = time.monotonic() - t0
    res["date"] = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    res["commit"] = "%s%s (src/ as of %s)" % (
        sh("git -C %s rev-parse --short HEAD" % ROOT),
        "+dirty tree" if sh("git -C %s status --porcelain -- src" % ROOT) else "",
        sh("git -C %s log -1 --format=%%h -- src" % ROOT))
    res["runs"] = ctx.plan.proc_runs
    res["quick"] = ctx.plan.quick
    return res


def ms(ns):
    return "%.2f ms" % (ns / 1e6) if ns is not None else "n/a"


def us_(ns):
    return "%.0f µs" % (ns / 1e3) if ns < 10e6 else "%.0f ms" % (ns / 1e6)


def render_process(pr):
    """Section 8's markdown lines."""
    L = []
    a = L.append
    old = pr["old"]
    oldc = old["commit"] if old else None
    a("## 8. Process-heavy work: starting, forking, a build (issue 19)")
    a("")
    a("Measured %s on commit %s (the sampler in a task outside the program's thread group, "
      "its set-up lazy, at the first tick)%s; %.0f s of runs%s. Load average (1, 5, 15 min) "
      "at the start of each part and at the end: %s. **The machine is shared with other work "
      "and was loaded (2 vCPUs)**: absolute times are inflated and noisy; compare the columns "
      "of the same run." % (
          pr["date"], pr["commit"],
          ", against the previous design (sampler thread in the program, set-up at start: "
          "commit %s, `%s`)" % (oldc, old["dir"]) if old else "", pr["secs"],
          " (`--quick`: a smoke run, few runs)" if pr["quick"] else "",
          "; ".join(pr["loads"])))
    a("")
    st = pr["start"]
    a("**Starting a process.** %d runs of each program per setting; in each turn every "
      "setting runs once, in an order that rotates turn by turn, and each run is paired with "
      "the unprofiled run of its turn: *extra* is the median (and p90) of run − unprofiled "
      "run, spawn (posix_spawn) to reaping, output to /dev/null. *LD_PRELOAD*: the agent "
      "preloaded at its default settings (wall, 100 Hz), WALLPROF_OUT in a temporary "
      "directory; *command*: `wallprof -q -o FILE -- PROGRAM` (the command itself, the "
      "agent, and its report at the end). `gcc -c empty.c` is 3 processes (gcc, cc1, as): "
      "its per-process figure is the run's extra / 3. The command runs only `/bin/true` (with "
      "gcc its report at the end would make each turn several times longer)." % pr["runs"])
    a("")
    cols = [("preload-new", "LD_PRELOAD, this build")]
    if old:
        cols.append(("preload-old", "LD_PRELOAD, previous (%s)" % oldc))
    cols.append(("cmd-new", "command, this build"))
    if old:
        cols.append(("cmd-old", "command, previous (%s)" % oldc))
    a("| program | unprofiled, median (p90) | " +
      " | ".join("%s: extra median (p90)" % c[1] for c in cols) + " |")
    a("| --- | ---: |" + " ---: |" * len(cols))
    for w, r in st.items():
        per = r["procs"]
        cells = []
        for key, _ in cols:
            x = r["rows"].get(key)
            if not x:
                cells.append("not run")
                continue
            cells.append("%s (%s)%s" % (ms(x["p50"]), ms(x["p90"]),
                                        "; per process %s" % ms(x["p50"] / per)
                                        if per > 1 else ""))
        a("| `%s` | %s (%s) | %s |" % (w, ms(r["base_p50"]), ms(r["base_p90"]),
                                       " | ".join(cells)))
    a("")
    fk = pr["fork"]
    a("**Forking.** `bench/forklat FORKS BUSY`: BUSY threads spin on CPU work while the "
      "main thread, after 200 ms, times fork() + the child's _exit(0) + waitpid "
      "(*fork+wait*) and fork() until it returns in the parent (*fork*), %d times (or for "
      "at most %.0f s: *n* below is the fewest forks a run made); exact p50 and p99 per run, "
      "then the median over %d round(s), the settings rotating round by round; *cpu*: the "
      "forking thread's own CPU time per fork+wait (p50); *ratio*: fork+wait's p50 over the "
      "unprofiled run's of the same round (median). The agent is preloaded (WALLPROF_MODE, "
      "WALLPROF_HZ). With 8 busy threads on 2 vCPUs the forking thread waits for a CPU: its "
      "wall times are mostly the scheduler's. The agent's atfork prepare handler (fork_prepare, "
      "src/agent/sampler.c) waits for no tick, only for the fork guard (an unwind or a "
      "loader call in progress, microseconds; before issue 19 it waited for the tick in "
      "progress, at most 200 ms). *fork+wait* includes the child's whole life: under the "
      "agent its sampler's start and its end, as for any process (the start cost above)." % (
          fk["n"], fk["max_ms"] / 1000, fk["rounds"]))
    a("")
    for busy, rows in fk["busy"].items():
        a("*%d busy thread%s*" % (busy, "" if busy == 1 else "s"))
        a("")
        a("| setting | fork+wait p50 | fork+wait p99 | fork p50 | fork p99 | cpu p50 | ratio "
          "| n |")
        a("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for name in fk["settings"]:
            r = rows[name]
            label = "unprofiled" if name == "base" else (
                ("this build, " if name.startswith("new") else "previous (%s), " % oldc) +
                "%s mode %s Hz" % tuple(name.split()[1:]))
            a("| %s | %s | %s | %s | %s | %s | %.2f× | %d |" % (
                label, us_(r["wait_p50_ns"]), us_(r["wait_p99_ns"]), us_(r["fork_p50_ns"]),
                us_(r["fork_p99_ns"]), us_(r["cpu_p50_ns"]), r["ratio"], r["n_min"]))
        a("")
    bd = pr["build"]
    a("**A process-heavy build.** A clean `ninja -j2` of %s, in a copy of the committed tree "
      "(release build, configured once; `ninja -t clean` before each build), %d round(s), "
      "the settings' order rotating round by round: unprofiled; `perf record -F 1000 -g -q "
      "-o FILE --`; `wallprof -q --no-report -o FILE --` (its defaults: wall mode, 100 Hz; "
      "record only, as perf record); `wallprof -q --no-report --mode=cpu --hz=1000 -o FILE "
      "--`; and both again without `--no-report`, as a user runs them (the report of the "
      "run's ~140 profiles at the end, written to a temporary file). *ratio*: median of the "
      "per-round ratios to the unprofiled build of the same round. The targets are judged on "
      "the `--no-report` rows, which do what perf record does. Wall time only: the sampler's "
      "task is outside the "
      "program's thread group and nobody waits for it, so wait4's CPU times would leave its "
      "CPU out.%s" % (
          bd["what"], bd["rounds"],
          "" if bd["perf"] else " **perf record was refused here: no perf row.**"))
    a("")
    a("| build | wall (median) | ratio to unprofiled | per-round ratios | 1-min load at each "
      "build's start |")
    a("| --- | ---: | ---: | --- | --- |")
    labels = dict(base="unprofiled", perf="perf record -F 1000 -g",
                  wpnr="wallprof --no-report (defaults: wall, 100 Hz)",
                  wpcpunr="wallprof --no-report --mode=cpu --hz=1000",
                  wp="wallprof (defaults), with its report",
                  wpcpu="wallprof --mode=cpu --hz=1000, with its report")
    for s in bd["settings"]:
        r = bd["rows"][s]
        a("| %s | %.1f s | %.3f× | %s | %s |" % (
            labels[s], r["wall"], r["ratio"], ", ".join("%.3f" % x for x in r["ratios"]),
            ", ".join(r.get("loads", []))))
    a("")
    # issue 19's targets, judged on these figures
    t = []
    tr = st.get("/bin/true")
    if tr:
        x = tr["rows"]["preload-new"]["p50"]
        t.append(("starting a process adds ≤ 0.25 ms (`/bin/true`, LD_PRELOAD)", ms(x),
                  x <= 0.25e6))
    gc = st.get("gcc -c empty.c")
    if gc:
        x = gc["rows"]["preload-new"]["p50"] / gc["procs"]
        t.append(("starting a process adds ≤ 0.25 ms (`gcc -c`, per process)", ms(x),
                  x <= 0.25e6))
    worst = max((rows[n]["ratio"], n, b) for b, rows in fk["busy"].items()
                for n in fk["settings"] if n.startswith("new"))
    t.append(("fork+wait within 1.5× unprofiled at the median, any rate and thread count",
              "worst %.2f× (%s, %d busy)" % worst, worst[0] <= 1.5))
    rows = bd["rows"]
    if "perf" in rows:
        p = rows["perf"]["ratio"]
        # a target 0.03 wide cannot be judged on rounds whose ratios disagree by more than
        # a few times that (the machine's load moving under the builds)
        spread = max(max(r["ratios"]) - min(r["ratios"]) for r in rows.values())
        for key, label, within in (("wpnr", "wallprof's defaults", 0.03),
                                   ("wpcpunr", "cpu mode 1000 Hz", 0.05)):
            x = rows[key]["ratio"]
            t.append(("build: %s within %.2f of perf's ratio" % (label, within),
                      "%.3f× against %.3f×%s" % (
                          x, p, "; the rounds' ratios spread over %.2f" % spread
                          if spread > 0.1 else ""),
                      "one round" if bd["rounds"] < 2 else "too noisy" if spread > 0.1
                      else x <= p + within))
    a("Issue 19's targets on these figures (one run on a loaded machine, not a verdict):")
    a("")
    a("| target | measured | met |")
    a("| --- | --- | --- |")
    for label, m, ok in t:
        a("| %s | %s | %s |" % (label, m, "not judged: " + ok if isinstance(ok, str) else
                                "yes" if ok else "**no**"))
    a("")
    return L


def splice_section(path, lines, head="## 8. "):
    """Replaces section 8 of an existing docs/bench.md (or inserts it before "## Targets"),
    leaving the other sections as they are."""
    with open(path) as f:
        text = f.read().split("\n")
    start = next((i for i, l in enumerate(text) if l.startswith(head)), None)
    if start is None:
        start = end = next((i for i, l in enumerate(text) if l.startswith("## Targets")),
                           len(text))
    else:
        end = next((i for i in range(start + 1, len(text)) if text[i].startswith("## ")),
                   len(text))
    text[start:end] = lines
    with open(path, "w") as f:
        f.write("\n".join(text))


# ------------------------------------------------------------------------------------------
# 9. Attached from outside (issue 21: wallprof --pid)


def attached_run(ctx, argv, mode, hz, out):
    """spin started unprofiled, wallprof-outside attached to it at once until it ends: spin's
    own line and the profile's META."""
    p = subprocess.Popen(argv, env=clean_env(), stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, start_new_session=True)
    s = subprocess.Popen([ctx.outside, "--pid=%d" % p.pid, "--mode=%s" % mode, "--hz=%d" % hz,
                          "--out=%s" % out], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, start_new_session=True)
    text = p.stdout.read().decode("utf-8", "replace")
    p.wait()
    err = s.communicate(timeout=120)[1].decode("utf-8", "replace")
    if s.returncode != 0:
        raise RuntimeError("wallprof-outside failed: %s" % err)
    return text


def run_stamp():
    """When, at what load and on which commit a section was measured (its heading's line)."""
    return dict(date=datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
                load=sh("cut -d' ' -f1-3 /proc/loadavg"),
                commit=sh("git -C %s rev-parse --short HEAD" % ROOT))


def attach_cost(ctx):
    """spin (section 1's workloads) unprofiled, under the agent and attached from outside,
    in wall and cpu mode at 100 and 1000 Hz: the program's own wall and thread CPU time as
    ratios to the unprofiled run of the same round, and the sampler's CPU."""
    plan = ctx.plan
    units = int(run([ctx.exe("spin"), "--calibrate", str(plan.overhead_ms)]).check()
                .out.strip())
    workloads = [("1 thread", 1, units), ("4 threads", 4, max(1, units // 2))]
    configs = [("unprofiled", None, None, 0)]
    for how in ("agent", "attached"):
        for mode in ("wall", "cpu"):
            for hz in (100, 1000):
                configs.append(("%s %s %d Hz" % ("under the agent (LD_PRELOAD)" if how == "agent"
                                                 else "attached (--pid)", mode, hz),
                                how, mode, hz))
    res = {}
    for rnd in range(plan.overhead_rounds):
        log("attach: round %d of %d" % (rnd + 1, plan.overhead_rounds))
        for wname, threads, u in workloads:
            k = rnd % (len(configs) - 1)
            order = [configs[0]] + configs[1:][k:] + configs[1:][:k]
            if rnd % 2:
                order = order[1:] + order[:1]
            for label, how, mode, hz in order:
                out = ctx.path("attach.prof")
                argv = spin_cmd(ctx, threads, u)
                if how == "attached":
                    text = attached_run(ctx, argv, mode, hz, out)
                else:
                    if how == "agent":
                        argv, env = Profiler("wp", hz, mode=mode).wrap(ctx, argv, out)
                    else:
                        env = None
                    text = run(argv, env=env).check().out
                inner = parse_kv(text, "spin:")
                row = dict(inner_wall=inner.get("wall_ns", 0) / 1e9,
                           thread_cpu=inner.get("thread_cpu_ns", 0) / 1e9)
                if how and os.path.exists(out):
                    pr = read_wp(out)
                    dur = max(1, meta_int(pr, "duration_ns")) / 1e9
                    row["sampler"] = meta_int(pr, "sampler_cpu_ns") / 1e9 / dur
                    row["samples"] = meta_int(pr, "samples")
                    os.unlink(out)
                res.setdefault((wname, label), []).append(row)
    table = []
    for label, how, mode, hz in configs:
        row = dict(label=label)
        for wname, _, _ in workloads:
            runs, base = res[(wname, label)], res[(wname, "unprofiled")]
            for key in ("inner_wall", "thread_cpu"):
                ratios = [r[key] / b[key] - 1 for r, b in zip(runs, base)]
                row[(wname, key)] = (median(ratios), iqr_half(ratios))
            row[(wname, "sampler")] = median([r.get("sampler") for r in runs]) if how else None
            row[(wname, "samples")] = median([r.get("samples") for r in runs]) if how else None
        table.append(row)
    return dict(table=table, workloads=[w[0] for w in workloads], rounds=plan.overhead_rounds,
                **run_stamp())


def render_attach(r):
    """Section 9's markdown lines."""
    L = ["## 9. Attached from outside (issue 21: wallprof --pid)", "",
         "Measured %s on commit %s, load %s, %d rounds (medians; ± half the interquartile "
         "range). `bench/spin` as in section 1, started unprofiled; *attached*: "
         "`wallprof-outside --pid` (what `wallprof --pid` runs) attached to it as soon as it "
         "has started and until it ends (the few ms before it attaches are unprofiled); "
         "*under the agent*: the same work preloaded, for comparison. *program wall* and "
         "*program threads' CPU*: spin's own clocks around its work, as ratios to the "
         "unprofiled run of the same round. *sampler CPU*: the sampler's CPU time per second "
         "of the run (META sampler_cpu_ns / duration_ns: the outside sampler is a process of "
         "its own, whose CPU the program does not pay but the machine does)." % (
             r["date"], r["commit"], r["load"], r["rounds"]), ""]
    for w in r["workloads"]:
        L += ["**%s**" % w, "", "| run | program wall | program threads' CPU | sampler CPU "
              "| samples |", "| --- | ---: | ---: | ---: | ---: |"]
        for row in r["table"]:
            s = row[(w, "sampler")]
            n = row[(w, "samples")]
            L.append("| %s | %s | %s | %s | %s |" % (
                row["label"], pct(*row[(w, "inner_wall")]), pct(*row[(w, "thread_cpu")]),
                "%.1f%% of a core" % (100 * s) if s is not None else "",
                "%d" % n if n is not None else ""))
        L.append("")
    return L


# ------------------------------------------------------------------------------------------
# 10. The dump (issue 21: wallprof --dump --pid)


def proc_cpu_ns(pid):
    """utime + stime of a process, in ns (clock ticks)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) * 1e9 / os.sysconf("SC_CLK_TCK")


def dump_cost(ctx):
    """`wallprof --dump --pid --format=json` of three targets started unprofiled: deadlock
    abba (two threads stuck), demo (running workers and lock waits) and idle_pool with 500
    idle threads. Per snapshot: the command's wall time, the snapshot's own time and how long
    the process was stopped (the json's snapshot_ns, stopped_ns), and the program's CPU time
    during the command (it ran on: nothing is stopped)."""
    rounds = 3 if ctx.plan.quick else 7
    tgt = lambda n: os.path.join(ctx.targets, n)
    ready = ctx.path("dump.ready")
    targets = [("deadlock abba (2 threads stuck)", [tgt("deadlock"), "abba", ready], "file"),
               ("demo (workers running and waiting)", [tgt("demo"), "60"], 1.0),
               ("idle_pool, 500 idle threads", [tgt("idle_pool"), "500", "60"], "line")]
    out = []
    for name, argv, how in targets:
        if os.path.exists(ready):
            os.unlink(ready)
        p = subprocess.Popen(argv, env=clean_env(), stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            if how == "file":
                deadline = time.monotonic() + 30
                while not os.path.exists(ready) and time.monotonic() < deadline:
                    time.sleep(0.05)
                time.sleep(0.2)
            elif how == "line":
                p.stdout.readline()
            else:
                time.sleep(how)
            rows = []
            for _ in range(rounds):
                c0, t0 = proc_cpu_ns(p.pid), time.monotonic()
                r = run([ctx.cli, "--dump", "--pid=%d" % p.pid, "--format=json"]).check()
                t1, c1 = time.monotonic(), proc_cpu_ns(p.pid)
                j = json.loads(r.out)
                rows.append(dict(cmd=t1 - t0, snap=j["snapshot_ns"] / 1e9,
                                 stopped=j["stopped_ns"] / 1e9, cpu=(c1 - c0) / 1e9,
                                 threads=sum(g["count"] for g in j["groups"]),
                                 deadlocks=len(j["deadlocks"])))
                time.sleep(0.2)
            log("dump: %s: %r" % (name, rows))
            out.append(dict(name=name, rows=rows))
        finally:
            p.kill()
            p.wait()
    return dict(targets=out, rounds=rounds, **run_stamp())


def render_dump(r):
    """Section 10's markdown lines."""
    L = ["## 10. The dump (issue 21: wallprof --dump --pid)", "",
         "Measured %s on commit %s, load %s, %d snapshots of each target (medians, with the "
         "range). Each target started unprofiled; `wallprof --dump --pid=PID --format=json` "
         "run against it: *command*: the whole command's wall time (the sampler's start, the "
         "snapshot, the report); *snapshot*: the snapshot's own time (json `snapshot_ns`: "
         "until every live thread had its sample, at most 100 ms); *stopped*: how long the "
         "process was stopped (json `stopped_ns`: nothing is stopped, by design); *program "
         "CPU*: the target's CPU time during the command, from /proc/PID/stat (clock ticks): "
         "a program with running threads goes on running through its dump." % (
             r["date"], r["commit"], r["load"], r["rounds"]), "",
         "| target | threads | command | snapshot | stopped | program CPU during the command "
         "| deadlocks named |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    rng = lambda xs, f: "%s (%s-%s)" % (f(median(xs)), f(min(xs)), f(max(xs)))
    ms_ = lambda x: "%.1f ms" % (1000 * x)
    for t in r["targets"]:
        rows = t["rows"]
        L.append("| %s | %d | %s | %s | %s | %s | %d |" % (
            t["name"], max(x["threads"] for x in rows), rng([x["cmd"] for x in rows], ms_),
            rng([x["snap"] for x in rows], ms_), ms_(max(x["stopped"] for x in rows)),
            rng([x["cpu"] for x in rows], ms_), max(x["deadlocks"] for x in rows)))
    L.append("")
    return L


# ------------------------------------------------------------------------------------------
# The report


def pct(x, iqr=None, digits=1):
    if x is None:
        return "n/a"
    s = "%+.*f%%" % (digits, 100 * x)
    if iqr is not None:
        s += " ±%.*f" % (digits, 100 * iqr)
    return s


def us(ns):
    return "n/a" if ns is None else "%.1f µs" % (ns / 1000)


def fmt_rate(x):
    return "n/a" if x is None else "%.0f" % x


def ns_or_us(ns):
    if ns >= 1e6:
        return "%.2f ms" % (ns / 1e6)
    return "%.1f ns" % ns if ns < 10000 else "%.1f µs" % (ns / 1000)


CALLS_TEXT = (
    "`bench/calls` times, on its main thread, %d pthread_sigmask block+unblock pairs, %d "
    "64-byte writes to /dev/null and %d pthread_create+join of an empty thread, then the "
    "writes again after starting an idle thread, then %d condition round trips with a partner "
    "thread and as many pthread_cond_timedwait calls with a bad deadline, each loop in "
    "50 chunks of 1-2 ms, and prints the fastest chunk's time per call (a chunk in which the "
    "program waited for a CPU on this shared machine does not count); it runs unprofiled and "
    "under "
    "the agent (LD_PRELOAD, wall mode, WALLPROF_HZ=1000, WALLPROF_THREADS=0) alternately, %d "
    "rounds. Each figure is the median over rounds; *ratio* is the median of the rounds' "
    "ratios (under wallprof / unprofiled, ± half the interquartile range). Under the agent "
    "the main thread is also sampled 1000 times a second while it works, 1-2 times a chunk; "
    "the fastest chunk is also one the sampler interrupted least, so these rows are the "
    "calls' own cost, not the sampling's (section 1). *process*: bench/calls with no "
    "arguments (it returns at once), fork to reaping, from this driver (python3's fork "
    "included, the same both ways); under the agent it is the profiled process "
    "(WALLPROF_ROOT_PID, as `wallprof` sets it, so it writes its profile); the fastest of %d "
    "runs each way per round (alternating). Load average (1, 5, 15 min) when the section "
    "ended: %s.")

CALL_ROWS = {
    "sigmask": ("pthread_sigmask block+unblock pair",
                "the interposed pthread_sigmask: each call also publishes the thread's new "
                "mask for the sampler (sigmask.c)"),
    "write": ("write, 64 bytes to /dev/null",
              "the transfer interposer (transfers.c) on a call no signal interrupted; the "
              "program has one thread both ways (the agent's threads have a descriptor "
              "table of their own, so the kernel keeps its single-threaded fast path to a "
              "descriptor)"),
    "write_shared": ("the same, with an idle second thread of the program's own",
                     "the control: both ways the table is shared (the kernel's slower "
                     "way to a descriptor), the ratio the interposer's own cost"),
    "thread": ("pthread_create + pthread_join, empty thread",
               "the interposed pthread_create (its trampoline publishes the child's mask, "
               "threadstart.c), and the sampler finding the new thread"),
    "cond": ("a round trip between two threads over two condition variables",
             "two pthread_cond_wait and two pthread_cond_signal: each wait publishes its "
             "condition and mutex for the sampler (condwait.c); the futex wake-ups dominate"),
    "condcall": ("pthread_cond_timedwait, deadline refused (EINVAL)",
                 "glibc returns before any futex call: the difference is the interposer's "
                 "own cost (condwait.c: a TLS load, two loads, four stores)"),
    "process": ("a trivial process, start to exit",
                "the agent's start-up (loading, its sampler thread, which unshares its "
                "descriptor table) and its end (writing the profile)"),
}


WAITS_TEXT = (
    "What issue 13's waits cost: the same wall-mode runs with the agent as it is (*on*) and "
    "with `WALLPROF_TEST=no-waits` (*off*: no wait objects, so no owner reads of locks and "
    "no holder samples; no schedstat reads for runnable samples, no stat reads for possible "
    "disk waits; the sampling itself, its /proc syscall reads for blocked threads included, "
    "is the same). The workloads: section 1's wall-mode rows (bench/spin, 1 and 4 busy "
    "threads, 100 and 1000 Hz, 16 threads a tick); the demo (test/targets/demo: a parser, a "
    "pipe reader fed every 20 ms, four workers contending for one lock, main joining them); "
    "bench/idle_threads with 1,000 threads blocked in a condition wait and one busy thread; "
    "test/targets/waits with WALLPROF_THREADS=3 (three lock holders, mutex, rwlock, and one "
    "that sleeps holding its lock, with waiters, among 19 threads: the holder is mostly not "
    "in the tick's subset and is added to the tick for its waiters). On and off alternate, "
    "the order swapped each round, %d rounds; the demo and the waits target run for a set "
    "%.1f s each. *sampler CPU per tick*: META sampler_cpu_ns / ticks, the medians of each "
    "setting, and *ratio*: the median over rounds of on / off − 1 (± half the interquartile "
    "range). *program wall*: bench/spin's own clock around its work, idle_threads' busy "
    "thread's work; for the demo and the waits target (set length) fork to exit, which "
    "only shows start-up and exit. *program CPU*: the process's user+sys less the "
    "sampler's. The reads per tick (META schedstat_reads, state_reads, holder_samples and "
    "holder_missed / ticks), *their CPU* (META cpuwait_read_ns / ticks: the sampler's CPU "
    "in the schedstat and stat reads, timed by the agent, a direct measure where the "
    "ratio is blurred by the machine's load) and *wait entries* (META waits: distinct wait "
    "objects x stacks) "
    "are medians of the *on* runs; every one is 0 in the *off* runs (checked: the row says "
    "so otherwise). Load average (1, 5, 15 min) when the section ended: %s.")


def render_waits(wa):
    """Section 7's lines (waits_cost's results)."""
    L = []
    a = L.append
    a("## 7. The cost of waits")
    a("")
    a(WAITS_TEXT % (wa["rounds"], wa["secs"], wa["load"]))
    a("")
    a("| workload | sampler CPU per tick, waits off → on | ratio | program wall | "
      "program CPU | schedstat reads / tick | state reads / tick | their CPU / tick | "
      "holder samples / tick (missed) | wait entries |")
    a("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in wa["rows"]:
        off_reads = sum(r[k + "_off"] for k in WAITS_COUNTS + ("waits",))
        a("| %s | %s → %s | %s | %s%s | %s | %.3f | %.3f | %s | %.3f (%.3f) | %.0f%s |" % (
            r["label"], us(r["per_tick_off"]), us(r["per_tick_on"]),
            pct(*r["per_tick"]), pct(*r["wall"]),
            "" if r["wall_kind"] != "run" else " (set length)", pct(*r["cpu"]),
            r["schedstat_reads"], r["state_reads"], us(r["cpuwait_read_ns"]),
            r["holder_samples"],
            r["holder_missed"], r["waits"],
            "" if not off_reads else " (**off: not all zero**)"))
    a("")
    return L


def render(ctx, info, res, elapsed, load0, load1):
    plan = ctx.plan
    L = []
    a = L.append
    a("# wallprof benchmark")
    a("")
    a("Generated by `scripts/bench%s` (%s of runs). Every overhead figure is the median, over "
      "alternating rounds, of a ratio to the unprofiled run of the same round (± half the "
      "interquartile range); never a single absolute time. The machine was shared with other "
      "work while this ran (load average %s at the start, %s at the end; the scale section's "
      "10,000-thread runs inflate the figure themselves when their threads exit): small "
      "differences are within the noise." % (" --quick" if plan.quick else "",
                                             "%.0f s" % elapsed, load0, load1))
    if res.get("loads"):
        a("")
        a("1-minute load average as each section started: " + ", ".join(
            "%s %s" % (k, v) for k, v in res["loads"].items()) + ".")
    a("")
    a("| | |")
    a("| --- | --- |")
    for k, v in info.items():
        a("| %s | %s |" % (k, v))
    a("")
    for n in ctx.notes:
        a("* " + n)
    if ctx.notes:
        a("")

    # 1 ---------------------------------------------------------------------------------
    ov = res.get("overhead")
    if ov:
        a("## 1. Overhead")
        a("")
        a("`bench/spin`: a fixed amount of CPU work (about %d ms of CPU per thread on its "
          "own) in 1 thread, and in 4 threads with half as much each (on 2 vCPUs: "
          "oversubscribed); -O2 -fomit-frame-pointer. *program wall*: the program's own clock "
          "around its work; *run wall*: fork to exit, start-up and writing the profile "
          "included; *CPU*: user+sys of the whole process tree (the sampler thread, perf's own "
          "process). *program threads' CPU*: the working threads' own CPU time "
          "(CLOCK_THREAD_CPUTIME_ID), which includes the time they spend held in a signal "
          "handler but not time spent waiting for a CPU: the part of the wall-time overhead "
          "that machine load cannot blur. %d rounds. *delivered*: samples per CPU-second of the program (wall "
          "mode: per thread per wall-second). For wallprof also: ticks per second, the "
          "sampler's CPU per tick (META sampler_cpu_ns / ticks), the share of the run the "
          "sampled thread spent held (window_sum_ns / duration_ns) and the window's p50/p99. "
          "*pinned*: spin --split puts the program on CPU 0 and the sampler on CPU 1, against "
          "an unprofiled run pinned to CPU 0; unpinned, the scheduler often puts the sampler "
          "on the program's CPU while the other one is busy (this machine is shared). "
          "*floor* rows run no profiler: spin's own interrupter thread wakes on a timer 250 or "
          "1000 times per wall-second and signals nothing (*a thread's timed wake-ups*: what a "
          "sampler thread costs the process before it does any work; waking an idle vCPU is a "
          "VM exit here), or also sends tgkill(SIGPROF) to each working thread, and the "
          "handler returns at once "
          "(*empty signal handler*) or does bench/floor's bare handshake with the interrupter "
          "(*tgkill + 3 semaphores*); what that costs the threads is what merely interrupting "
          "them costs on this machine (on a VM, the IPI that interrupts a running thread is a "
          "VM exit), which no signal-based profiler can go below. Their *delivered* is handler "
          "runs per CPU-second of the working threads (4 threads on 2 CPUs: the signals sent to "
          "a thread while it waits for a CPU merge into one; with the semaphores the "
          "interrupter waits for it instead, so far fewer come). *wallprof cpu 250 "
          "Hz*: the rate gperftools delivers when asked for 1000 (at most one signal per kernel "
          "tick), to compare the two at the same delivered rate." % (
              ctx.plan.overhead_ms, ov["rounds"]))
        a("")
        for w in ov["workloads"]:
            a("**%s**" % w)
            a("")
            a("| profiler | program wall | run wall | CPU | program threads' CPU | delivered /s | "
              "wallprof: ticks/s, sampler CPU per tick, time held, window p50 / p99 |")
            a("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
            for row in ov["table"]:
                if row["kind"] == "base" or (w, "wall") not in row:
                    continue
                win = ("%.0f, %s, %.2f%%, %s / %s" % (
                    row[(w, "ticks_rate")], us(row[(w, "per_tick")]), 100 * row[(w, "held")],
                    us(row[(w, "p50")]), us(row[(w, "p99")])) if row["kind"] == "wp" else "")
                a("| %s | %s | %s | %s | %s | %s | %s |" % (
                    row["label"], pct(*row[(w, "inner_wall")]), pct(*row[(w, "wall")]),
                    pct(*row[(w, "cpu")]), pct(*row[(w, "thread_cpu")]),
                    fmt_rate(row[(w, "rate")]), win))
            a("")

    # 2 ---------------------------------------------------------------------------------
    acc = res.get("accuracy")
    if acc:
        a("## 2. Accuracy")
        a("")
        a("`cpu_split` (test/targets, %.1f s of CPU, %d run(s) each, alternating) measures its "
          "own self time per function with CLOCK_THREAD_CPUTIME_ID; error = profile share − "
          "true share, in percentage points (median over runs). leaf_mul is split by caller "
          "(work_a / work_b), which needs whole stacks: perf uses --call-graph dwarf here (the "
          "target has no frame pointers)." % (plan.cpu_split_s, plan.accuracy_runs))
        a("")
        a("| profiler | mean abs error | max abs error | " +
          " | ".join(TRUTH_KEYS) + " | samples per CPU-s |")
        a("| --- | ---: | ---: | " + " | ".join("---:" for _ in TRUTH_KEYS) + " | ---: |")
        for row in acc:
            if not row["runs"]:
                a("| %s | no data | | %s | |" % (row["label"], " | ".join("" for _ in TRUTH_KEYS)))
                continue
            a("| %s | %.2f | %.2f | %s | %s |" % (
                row["label"], row["mean_abs"], row["max_abs"],
                " | ".join("%+.2f" % row[k] for k in TRUTH_KEYS), fmt_rate(row["rate"])))
        a("")
    rate = res.get("rate")
    if rate:
        a("**Rate delivered**, wallprof cpu mode, one busy thread (~1 s of CPU), %d runs each: "
          "samples (META samples: stacks captured) per CPU-second of the program (median, "
          "[min, max]); intervals counted per CPU-second (the stacks' counts: a capture that "
          "comes when the thread has used two intervals of CPU counts for both); ticks per "
          "wall-second; ticks late (> 1 interval behind); samples missed per run." % (
              plan.rate_runs))
        a("")
        a("| asked | samples per CPU-s | intervals per CPU-s | ticks per s | ticks late | "
          "missed |")
        a("| ---: | ---: | ---: | ---: | ---: | ---: |")
        for hz in sorted(rate):
            v = rate[hz]
            a("| %d Hz | %.0f [%.0f, %.0f] (%.1f%%) | %s | %.0f | %.1f%% | %.0f |" % (
                hz, v["rate"], v["lo"], v["hi"], 100 * v["rate"] / hz,
                "%.0f" % v["intervals"] if v.get("intervals") else "n/a", v["ticks_rate"],
                100 * v["late"], v["missed"]))
        a("")
    real = res.get("real")
    if real:
        a("**Real programs**: wallprof (cpu mode, 1000 Hz) against perf record (-F 1000 -g), "
          "%d run(s) each, alternating. Both profiles' leaf addresses (perf: the first "
          "user-space frame, so time in the kernel counts for the code that called it, as "
          "in wallprof) go through the same symbolizer (ELF symbol containing the address, "
          "CPython's from python3-dbg; stripped code by .eh_frame function range, shown as "
          "module@0xSTART), so only the sampling differs. Top 10 = perf's ten hottest "
          "functions; the difference is |wallprof share − perf share| in points, mean and max "
          "over those ten (median over run pairs); perf vs perf (two perf runs) is the "
          "sampling noise for comparison." % plan.real_runs)
        a("")
        a("| program | top 3 (perf) | top-10 share | wallprof vs perf: mean / max | "
          "perf vs perf | wallprof vs wallprof | perf with the agent idle vs perf | wallprof vs "
          "perf with the agent idle | cost: wallprof / perf (wall, CPU) |")
        a("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")

        def mm(x):
            return "n/a" if not x else "%.2f / %.2f" % x

        def cost(x):
            return "n/a" if not x else "%s, %s" % (pct(x[0]), pct(x[1]))
        for r in real:
            a("| %s | %s | %s | %s | %s | %s | %s | %s | %s / %s |" % (
                r["name"], ", ".join("`%s`" % t for t in r["top"]),
                "%.0f%%" % r["top10_share"] if r.get("top10_share") else "n/a",
                mm(r["wp_perf"]), mm(r["perf_perf"]), mm(r["wp_wp"]),
                mm(r.get("perf_agent_perf")), mm(r.get("wp_perf_agent")),
                cost(r.get("wp_cost")), cost(r.get("perf_cost"))))
        a("")
        a("*perf with the agent idle*: perf record of the program with libwallprof.so loaded at "
          "1 Hz, i.e. the program as it runs under wallprof (its sampler thread makes the "
          "process multi-threaded, which turns off glibc's single-thread fast paths in "
          "pthread_mutex_lock/unlock and malloc). *cost*: the run's wall and CPU time against "
          "an unprofiled run of the same round (median).")
        a("")
        for r in real:
            if r.get("top_shares"):
                a("<details><summary>%s: top 10 shares</summary>" % r["name"])
                a("")
                a("| function | perf | wallprof | perf, agent idle |")
                a("| --- | ---: | ---: | ---: |")
                for k, ps, ws, pa in r["top_shares"]:
                    a("| `%s` | %.2f%% | %.2f%% | %s |" % (
                        k, ps, ws, "n/a" if pa is None else "%.2f%%" % pa))
                a("")
                a("</details>")
                a("")

    # 3 ---------------------------------------------------------------------------------
    win = res.get("window")
    if win:
        a("## 3. Suspension window")
        a("")
        a("How long a sampled thread is held: from its signal handler's entry to just before "
          "it posts its last message. wallprof: META window_p50/p99 (and window_sum/n, the "
          "mean) of one busy thread (`bench/spin`) at 1000 Hz. Floor: `bench/floor`, the bare "
          "protocol (tgkill, then three POSIX semaphores msg2/msg3/msg4, no copying), the same "
          "interval over %d samples of a busy thread at 1000 Hz. %d alternating rounds per "
          "placement, medians. Where the sampler runs matters: on 2 vCPUs the scheduler "
          "sometimes puts it on the sampled thread's CPU, so each placement is also measured "
          "pinned." % (plan.window_samples, plan.window_rounds))
        a("")
        a("| placement | | p50 | p99 | mean | p50 / floor | p99 / floor | sampler CPU per tick |")
        a("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
        for place, title in PLACEMENTS:
            w = win.get(place)
            if not w:
                continue
            a("| %s | floor (tgkill + 3 semaphores) | %s | %s | %s | 1 | 1 | |" % (
                title, us(w["floor_p50"]), us(w["floor_p99"]), us(w["floor_mean"])))
            for mode in ("cpu", "wall"):
                if mode in w:
                    v = w[mode]
                    a("| | wallprof %s mode | %s | %s | %s | %.2f | %.2f | %s |" % (
                        mode, us(v["p50"]), us(v["p99"]), us(v["mean"]),
                        v["p50"] / w["floor_p50"], v["p99"] / w["floor_p99"],
                        us(v["per_tick"])))
        a("")

    # 4 ---------------------------------------------------------------------------------
    sc = res.get("scale")
    if sc:
        a("## 4. Scale")
        a("")
        a("`bench/idle_threads N`: N threads blocked on a condition variable plus one busy "
          "thread doing ~%d ms of fixed work, wall mode at 100 Hz (16 threads per tick, the "
          "default), %d alternating round(s) against an unprofiled run. *slowdown*: the busy "
          "thread's own work time; *sampler*: META sampler_cpu_ns per tick and over the run's "
          "duration (creating the threads included), and the sampler thread's schedstat CPU "
          "while the busy thread worked, read by the program itself." % (
              plan.scale_ms, plan.scale_rounds))
        a("")
        a("| idle threads | sampler CPU per tick: whole run / while the busy thread worked / "
          "its last third | sampler, % of a core: whole run / while it worked / its last third "
          "| first looks rationed | busy thread slowdown | ticks late | creating the threads: "
          "slowdown |")
        a("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")

        def us_or(v):
            return "n/a" if v is None else "%.0f µs" % (v / 1000)

        def pc_or(v):
            return "n/a" if v is None else "%.2f%%" % (100 * v)
        for n in sorted(sc):
            v = sc[n]
            a("| %s | %s / %s / %s | %s / %s / %s | %s | %s | %.1f%% | %s |" % (
                "{:,}".format(n), us_or(v["per_tick"]), us_or(v.get("work_tick")),
                us_or(v.get("tail_tick")), pc_or(v["core"]), pc_or(v.get("work_core")),
                pc_or(v.get("tail_core")), "{:,}".format(int(v.get("rationed") or 0)),
                pct(v["slow"], v["slow_iqr"]), 100 * v["late"], pct(v["start_ratio"])))
        a("")
        st = res.get("scale_steady")
        if st:
            w = st["wp"]
            a("**Steady state**: %s idle threads once more, the busy thread working %d s, so "
              "that every idle thread has had its first look (a /proc read, ~50 µs in the "
              "kernel, rationed to 1%% of a core after a 50 ms allowance; a chosen thread over "
              "the ration counts as missed_rationed). Sampler: **%s of a core over the last "
              "third** of the work (%s per tick), %s over the whole work (%s per tick), %s over "
              "the run; %s first looks, %s samples missed as rationed. Busy thread: %s over "
              "the whole work, %s over its last third, against one unprofiled run (single "
              "runs: noisy)." % (
                  "{:,}".format(st["n"]), st["ms"] // 1000, pc_or(w.get("tail_core")),
                  us_or(w.get("tail_tick")), pc_or(w.get("work_core")),
                  us_or(w.get("work_tick")), pc_or(w["core"]),
                  "{:,}".format(w["first_looks"]), "{:,}".format(w["rationed"]),
                  pct(st["slow"]), pct(st["tail_slow"])))
            a("")
    mem = res.get("memory")
    if mem:
        sh_ = mem["short"]
        hour = mem["agent_bytes"] + mem["growth_per_s"] * (3600 - mem["seconds"])
        a("**Memory**: CPython (bench/pywork.py), one thread, wall mode at 1000 Hz, for %d s "
          "and for %d s; peak RSS (VmHWM) against an unprofiled run of the same length." % (
              mem["seconds"], sh_["seconds"]))
        a("")
        a("| run | samples | distinct stacks | agent_bytes | unwind tables | peak RSS, "
          "profiled − unprofiled | profile file |")
        a("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for m in (sh_, mem):
            a("| %d s | %s | %s | %.2f MB | %.2f MB | %+.1f MB (%.1f vs %.1f) | %.2f MB |" % (
                m["seconds"], "{:,}".format(m["samples"]), "{:,}".format(m["stacks"]),
                m["agent_bytes"] / 1e6, m["unwind_table_bytes"] / 1e6,
                (m["rss_wp_kb"] - m["rss_base_kb"]) / 1024, m["rss_wp_kb"] / 1024,
                m["rss_base_kb"] / 1024, m["file_bytes"] / 1e6))
        a("")
        per_sample = ((mem["agent_bytes"] - sh_["agent_bytes"]) /
                      max(1, mem["samples"] - sh_["samples"]))
        tl = mem["timeline_bytes"] / max(1, mem["samples"])
        hour_samples = 3600 * mem["samples"] / mem["seconds"]
        a("Between the two runs agent_bytes (the stack table and the per-thread timelines) "
          "grew %.1f kB/s, %.1f bytes per sample. The timeline costs %.1f bytes per sample "
          "(encoded; its buffers double, so up to twice that in memory) and grows without end; "
          "the stack table grows with each new distinct stack (a stack's key includes the "
          "exact interrupted address, so new ones keep coming, ever more slowly). One hour at "
          "this rate (%s samples): between **%.0f MB** (timeline only, at most twice its "
          "encoded size, plus today's stacks) and **%.0f MB** (the late-run slope held for the "
          "whole hour, an overestimate)." % (
              mem["growth_per_s"] / 1e3, per_sample, tl, "{:,}".format(int(hour_samples)),
              (mem["agent_bytes"] + 2 * tl * (hour_samples - mem["samples"])) / 1e6,
              hour / 1e6))
        a("")
    rep = res.get("report")
    if rep:
        a("**Reporting 10M samples**: a profile synthesized from the one recorded above "
          "(bench.py's `synthesize`, following docs/profile-format.md: the run's META, "
          "modules, thread and its %s distinct real stacks, counts scaled up, and a "
          "%s-entry timeline drawn in proportion), %.0f MB. `wallprof --report F "
          "--format=folded`: **%.2f s** (median of %d, [%.2f, %.2f]), peak RSS %.0f MB; the "
          "recorded profile (%s samples) itself takes %.2f s." % (
              "{:,}".format(rep["stacks"]), "{:,}".format(rep["samples"]), rep["bytes"] / 1e6,
              rep["time"], plan.report_runs, rep["tmin"], rep["tmax"], rep["rss_kb"] / 1024,
              "{:,}".format(rep["small_samples"]), rep["small_time"]))
        a("")
        if "ut_svg" in rep:
            a("**The flame graph's worst case**: %s stacks of %d frames from the same recorded "
              "profile, each the program's deepest running stack under a random 10-frame "
              "tail of its real return addresses (`bench/unique_tails.py`: every stack "
              "distinct, some 10M tree nodes), %.0f MB. `--format=svg`: **%.2f s** (median "
              "of %d, [%.2f, %.2f]), peak RSS %.0f MB; the text report: %.2f s ([%.2f, "
              "%.2f]), peak RSS %.0f MB." % (
                  "{:,}".format(rep["ut_stacks"]), rep["ut_frames"], rep["ut_bytes"] / 1e6,
                  rep["ut_svg"][0], plan.report_runs, rep["ut_svg"][1], rep["ut_svg"][2],
                  rep["ut_svg"][3] / 1024, rep["ut_text"][0], rep["ut_text"][1],
                  rep["ut_text"][2], rep["ut_text"][3] / 1024))
            a("")

    # 5 ---------------------------------------------------------------------------------
    ca = res.get("calls")
    if ca:
        a("## 5. The program's own calls")
        a("")
        a(CALLS_TEXT % (ca["n"] + (ca["rounds"], ca["spawns"], ca["load"])))
        a("")
        a("| call | unprofiled | under wallprof | ratio | what it measures |")
        a("| --- | ---: | ---: | ---: | --- |")
        for k in CALL_KEYS:
            v = ca[k]
            a("| %s | %s | %s | %.2f× ±%.2f | %s |" % (
                CALL_ROWS[k][0], ns_or_us(v["base"]), ns_or_us(v["wp"]), v["ratio"],
                v["ratio_iqr"] or 0, CALL_ROWS[k][1]))
        a("")

    # 6 ---------------------------------------------------------------------------------
    tr = res.get("tree")
    if tr:
        a("## 6. Process trees")
        a("")
        a(TREE_TEXT % (tr["units"], tr["rounds"], tr["runs"], tr["load"]))
        a("")
        a("| build | profile files | processes with a file | unsampled (listed) | samples: "
          "files / report | report, folded | report, text | per 1,000 files (text) |")
        a("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        a("| %.2f s unprofiled, %.2f s recorded (%.2f×) | %s | %s | %s (header: %s) | "
          "%s / %s | %.2f s | %.2f s | %.2f s |" % (
              tr["base"], tr["wp"], tr["wp"] / tr["base"], "{:,}".format(tr["files"]),
              "{:,}".format(tr["pids"]), "{:,}".format(tr["unsampled"]),
              "{:,}".format(tr["said_unsampled"]), "{:,}".format(tr["file_samples"]),
              "{:,}".format(tr["report_samples"]), tr["folded"], tr["text"],
              1000 * tr["text"] / tr["files"]))
    if res.get("waits"):
        L.extend(render_waits(res["waits"]))

    # 8 ---------------------------------------------------------------------------------
    if res.get("process"):
        L.extend(render_process(res["process"]))
    if res.get("attach"):
        L.extend(render_attach(res["attach"]))
    if res.get("dump"):
        L.extend(render_dump(res["dump"]))

    # targets ---------------------------------------------------------------------------
    a("## Targets")
    a("")
    a("| target | measured | met |")
    a("| --- | --- | --- |")
    for t, m, ok in targets(res):
        a("| %s | %s | %s |" % (t, m, {True: "met", False: "**not met**", None: "n/a"}[ok]))
    a("")
    return "\n".join(L) + "\n"


def targets(res):
    out = []
    ov = res.get("overhead")

    def row(label):
        for r in ov["table"]:
            if r["label"] == label:
                return r
        return None
    if ov:
        w = "1 thread"
        for label in ("wallprof cpu 1000 Hz", "wallprof wall 1000 Hz",
                      "wallprof cpu 1000 Hz, sampler pinned to the other CPU",
                      "wallprof wall 1000 Hz, sampler pinned to the other CPU"):
            r = row(label)
            if not r or (w, "inner_wall") not in r:
                continue
            x, xi = r[(w, "inner_wall")]
            tc = r[(w, "thread_cpu")][0]
            # wall time on a shared machine has a spread of several percent: judge on the
            # program thread's own CPU (held in the handler, signal delivery), and require
            # the wall median not to be above 1% by more than its spread
            out.append(("1000 Hz, CPU-bound single thread: ≤ 1%% wall (%s)" % label[9:],
                        "program thread CPU %s; program wall %s (run wall %s), held %.2f%% of "
                        "the time; process CPU %s" % (
                            pct(tc), pct(x, xi), pct(r[(w, "wall")][0]), 100 * r[(w, "held")],
                            pct(r[(w, "cpu")][0])),
                        tc <= 0.01 and x <= 0.01 + (xi or 0)))
        # the same target against the physical floor: wallprof's own cost is what it adds to
        # the cost of a bare signal at the same rate
        f, fs = row("floor: empty signal handler, 1000 Hz"), row("floor: tgkill + 3 semaphores, "
                                                                "1000 Hz")
        for mode in ("cpu", "wall"):
            r = row("wallprof %s 1000 Hz" % mode)
            if not f or not r or (w, "thread_cpu") not in f:
                continue
            tc, ftc = r[(w, "thread_cpu")][0], f[(w, "thread_cpu")][0]
            out.append(("1000 Hz, CPU-bound single thread: program thread CPU within 1 point of "
                        "the cost of a bare signal at the same rate (%s mode)" % mode,
                        "%s vs %s for an empty signal handler (%+.1f points; tgkill + 3 "
                        "semaphores: %s); delivered %s vs %s/s" % (
                            pct(tc), pct(ftc), 100 * (tc - ftc),
                            pct(fs[(w, "thread_cpu")][0]) if fs else "n/a",
                            fmt_rate(r[(w, "rate")]), fmt_rate(f[(w, "rate")])),
                        tc <= ftc + 0.01))
        g = row("gperftools 1000 Hz")
        for mode in ("cpu", "wall"):
            r = row("wallprof %s 1000 Hz" % mode)
            if g:
                for wl in ov["workloads"]:
                    out.append(("≤ gperftools' overhead at 1000 Hz asked (%s mode, %s)" % (
                        mode, wl), "CPU %s vs %s; program wall %s vs %s (gperftools delivers "
                        "%s/s)" % (pct(r[(wl, "cpu")][0]), pct(g[(wl, "cpu")][0]),
                                   pct(r[(wl, "inner_wall")][0]), pct(g[(wl, "inner_wall")][0]),
                                   fmt_rate(g[(wl, "rate")])),
                        r[(wl, "cpu")][0] <= g[(wl, "cpu")][0]))
        # gperftools asked for 1000 Hz delivers about 250 (one per kernel tick): compare it
        # with the wallprof cpu row whose delivered rate is nearest (250 Hz on one thread;
        # with 4 threads on 2 CPUs wallprof delivers less than it is asked for, too)
        wps = [r for r in ov["table"] if r["kind"] == "wp" and r["mode"] == "cpu"
               and not r["pinned"]]
        for wl in ov["workloads"] if g else ():
            gr = g[(wl, "rate")]
            cands = [r for r in wps if r[(wl, "rate")] is not None]
            if gr is None or not cands:
                continue
            r = min(cands, key=lambda r: abs(r[(wl, "rate")] - gr))
            if abs(r[(wl, "rate")] / gr - 1) > 0.25:
                out.append(("≤ gperftools' overhead at the same delivered rate (%s)" % wl,
                            "no wallprof cpu row delivered within 25%% of gperftools' %s/s" %
                            fmt_rate(gr), None))
                continue
            cpu, gcpu = r[(wl, "cpu")][0], g[(wl, "cpu")][0]
            tc, gtc = r[(wl, "thread_cpu")][0], g[(wl, "thread_cpu")][0]
            out.append(("≤ gperftools' overhead at the same delivered rate (wallprof cpu %d Hz "
                        "vs gperftools 1000 Hz asked, %s)" % (r["hz"], wl),
                        "delivered %s vs %s/s; CPU %s vs %s; program threads' CPU %s vs %s" % (
                            fmt_rate(r[(wl, "rate")]), fmt_rate(gr), pct(cpu), pct(gcpu),
                            pct(tc), pct(gtc)),
                        cpu <= gcpu and tc <= gtc))
        p = row("perf -g 1000 Hz")
        for mode in ("cpu", "wall"):
            r = row("wallprof %s 1000 Hz" % mode)
            if p:
                for wl in ov["workloads"]:
                    out.append(("< perf record's overhead at 1000 Hz (-g; %s mode, %s)" % (
                        mode, wl), "CPU %s vs %s; run wall %s vs %s" % (
                        pct(r[(wl, "cpu")][0]), pct(p[(wl, "cpu")][0]),
                        pct(r[(wl, "wall")][0]), pct(p[(wl, "wall")][0])),
                        r[(wl, "cpu")][0] < p[(wl, "cpu")][0]))
    acc = res.get("accuracy")
    if acc:
        perf = [r for r in acc if r["label"].startswith("perf") and r["runs"]]
        for r in acc:
            if r["label"].startswith("wallprof") and r["runs"] and perf:
                out.append(("cpu_split: error within 0.5 points of perf's (%s)" % r["label"],
                            "mean abs %.2f vs perf %.2f; max %.2f vs %.2f" % (
                                r["mean_abs"], perf[0]["mean_abs"], r["max_abs"],
                                perf[0]["max_abs"]),
                            r["mean_abs"] <= perf[0]["mean_abs"] + 0.5))
    for r in res.get("real") or []:
        if r.get("wp_perf") and r.get("perf_perf"):
            out.append(("%s: top-10 shares within 0.5 points of perf's run-to-run difference"
                        % r["name"].split()[0],
                        "mean |wallprof − perf| %.2f, perf vs perf %.2f%s" % (
                            r["wp_perf"][0], r["perf_perf"][0],
                            "; wallprof vs perf with the agent idle %.2f" % r["wp_perf_agent"][0]
                            if r.get("wp_perf_agent") else ""),
                        r["wp_perf"][0] <= r["perf_perf"][0] + 0.5))
    if ov:
        for mode in ("cpu", "wall"):
            r = row("wallprof %s 1000 Hz" % mode)
            for wl in ov["workloads"]:
                x = r[(wl, "rate")]
                out.append(("%s mode 1000 Hz delivered as ~1000 Hz (%s; within 5%%)" % (mode, wl),
                            "%s per %s" % (fmt_rate(x), "CPU-s" if mode == "cpu"
                                           else "thread per wall-s"),
                            x is not None and abs(x / 1000 - 1) <= 0.05))
    rate = res.get("rate")
    if rate:
        for hz in sorted(rate):
            out.append(("cpu mode %d Hz delivered as ~%d Hz (rate runs; within 5%%)" % (hz, hz),
                        "%.0f samples per CPU-s%s" % (
                            rate[hz]["rate"], "" if not rate[hz].get("intervals") else
                            " (%.0f intervals counted)" % rate[hz]["intervals"]),
                        abs(rate[hz]["rate"] / hz - 1) <= 0.05))
    win = res.get("window")
    if win:
        for place, title in PLACEMENTS:
            w = win.get(place)
            for mode in ("cpu", "wall"):
                if not w or mode not in w:
                    continue
                v = w[mode]
                out.append(("window p50 ≤ 1.2× floor (%s mode, %s)" % (mode, place),
                            "%s vs %s (%.2f×)" % (us(v["p50"]), us(w["floor_p50"]),
                                                  v["p50"] / w["floor_p50"]),
                            v["p50"] <= 1.2 * w["floor_p50"]))
                out.append(("window p99 ≤ 1.5× floor (%s mode, %s)" % (mode, place),
                            "%s vs %s (%.2f×)" % (us(v["p99"]), us(w["floor_p99"]),
                                                  v["p99"] / w["floor_p99"]),
                            v["p99"] <= 1.5 * w["floor_p99"]))
    sc, st = res.get("scale"), res.get("scale_steady")
    if sc and 10000 in sc:
        out.append(("10,000 idle threads, 100 Hz: sampler < 2% of a core (3 s runs, first "
                    "looks included)",
                    "%.2f%% over the run, %s while the busy thread worked" % (
                        100 * sc[10000]["core"], "n/a" if sc[10000].get("work_core") is None
                        else "%.2f%%" % (100 * sc[10000]["work_core"])),
                    sc[10000]["core"] < 0.02 and (sc[10000].get("work_core") or 0) < 0.02))
        out.append(("10,000 idle threads, 100 Hz: program < 1% slower",
                    "%s (3 s runs, median)%s" % (
                        pct(sc[10000]["slow"]), "" if not st else
                        "; %s over the last third of the long run" % pct(st["tail_slow"])),
                    sc[10000]["slow"] < 0.01))
    if sc and st and st["n"] == 10000:
        w = st["wp"]
        tail = w.get("tail_core")
        out.append(("10,000 idle threads, 100 Hz: sampler < 2% of a core (steady state)",
                    "%s over the last third of a %d s run; %s over all of it (first looks "
                    "at the threads included)" % (
                        "n/a" if tail is None else "%.2f%%" % (100 * tail), st["ms"] // 1000,
                        "n/a" if w.get("work_core") is None
                        else "%.2f%%" % (100 * w["work_core"])),
                    tail is not None and tail < 0.02))
        lo = sc[min(sc)]
        if lo.get("tail_tick") and w.get("tail_tick"):
            grow = w["tail_tick"] / lo["tail_tick"]
            out.append(("per-tick work not growing with idle threads (steady state)",
                        "%.1f µs at %d threads, %.1f µs at 10,000 (%.1f×)" % (
                            lo["tail_tick"] / 1000, min(sc), w["tail_tick"] / 1000, grow),
                        grow <= 1.5))
    wa = res.get("waits")
    for r in (wa or {}).get("rows", []):
        if not r["spin"]:
            continue
        x, xi = r["per_tick"]
        out.append(("waits on: sampler CPU per tick within 15%% of waits off (%s)" % r["label"],
                    "%s → %s (%s); the schedstat/stat reads' own CPU %s a tick" % (
                        us(r["per_tick_off"]), us(r["per_tick_on"]), pct(x, xi),
                        us(r["cpuwait_read_ns"])),
                    x is not None and x <= 0.15))
    rep = res.get("report")
    if rep:
        out.append(("report of 10M samples < 2 s", "%.2f s" % rep["time"], rep["time"] < 2))
    tr = res.get("tree")
    if tr:
        per = 1000 * max(tr["folded"], tr["text"]) / tr["files"]
        out.append(("build-like tree: report < 2 s per 1,000 profile files",
                    "%.2f s per 1,000 (%s files; text %.2f s, folded %.2f s)" % (
                        per, "{:,}".format(tr["files"]), tr["text"], tr["folded"]), per < 2))
        out.append(("build-like tree: no sample counted twice or lost",
                    "%s in the files, %s in the report" % (
                        "{:,}".format(tr["file_samples"]), "{:,}".format(tr["report_samples"])),
                    tr["file_samples"] == tr["report_samples"]))
    return out


# ------------------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build-bench"))
    ap.add_argument("--quick", action="store_true", help="fewer, shorter runs (~3 min)")
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "bench.md"))
    ap.add_argument("--no-write", action="store_true", help="print only")
    ap.add_argument("--only", default="",
                    help="comma-separated sections: overhead,accuracy,rate,real,window,scale,"
                         "memory,report,calls,tree,waits,process,attach,dump (default: all); "
                         "--only process alone (without --merge) replaces only section 8 "
                         "of the existing --out file")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    ap.add_argument("--merge", action="store_true",
                    help="with --only: start from the results saved by the last run "
                         "(build-bench/bench/last-results.pickle) and replace only the sections "
                         "run now, e.g. to re-run one section when the machine is quieter")
    ap.add_argument("--render", metavar="PICKLE",
                    help="only render results saved by an earlier run (build-bench/bench/"
                         "last-results.pickle)")
    args = ap.parse_args()
    plan = Plan(args.quick)
    ctx = Ctx(args.build, plan)
    only = set(filter(None, args.only.split(",")))

    def want(s):
        if not only or s in only:
            loads[s] = sh("cut -d' ' -f1 /proc/loadavg")
            return True
        return False
    loads = {}

    saved = os.path.join(ctx.bin, "last-results.pickle")
    if args.render:
        with open(args.render, "rb") as f:
            d = pickle.load(f)
        ctx.notes = d["notes"]
        ctx.plan = Plan(d["quick"])
        text = render(ctx, d["info"], d["res"], d["elapsed"], d["load0"], d["load1"])
        sys.stdout.write(text)
        if not args.no_write:
            with open(args.out, "w") as f:
                f.write(text)
        return
    t0 = time.monotonic()
    load0 = sh("cut -d' ' -f1-3 /proc/loadavg")
    info = machine_info(ctx)
    ctx.perf_ok = check_perf(ctx)
    if not ctx.gperf_ok:
        ctx.notes.append("gperftools' libprofiler.so is missing (%s)" % LIBPROFILER)
    res = {}
    prev = None
    if args.merge:
        if not os.path.exists(saved):
            sys.exit("bench: --merge: no saved results (%s): run the full benchmark first" %
                     saved)
        with open(saved, "rb") as f:
            prev = pickle.load(f)
        if prev["quick"] != plan.quick:
            sys.exit("bench: --merge: the saved results are from a %s run" % (
                "--quick" if prev["quick"] else "full"))
        res = dict(prev["res"])
    try:
        if want("overhead"):
            res["overhead"] = overhead(ctx)
        if want("accuracy"):
            res["accuracy"] = accuracy(ctx)
        if want("rate"):
            res["rate"] = rate_delivered(ctx)
        if want("real"):
            res["real"] = real_programs(ctx)
        if want("window"):
            res["window"] = window(ctx)
        if want("scale"):
            res["scale"] = scale(ctx)
            res["scale_steady"] = scale_steady(ctx)
        if want("calls"):
            res["calls"] = calls(ctx)
        if want("tree"):
            res["tree"] = tree(ctx)
        if want("waits"):
            res["waits"] = waits_cost(ctx)
        if want("process"):
            res["process"] = process_heavy(ctx)
        if want("attach"):
            res["attach"] = attach_cost(ctx)
        if want("dump"):
            res["dump"] = dump_cost(ctx)
        if want("memory") or want("report"):
            res["memory"] = memory(ctx)
        if want("report"):
            res["report"] = report_speed(ctx, res["memory"])
    finally:
        if not args.keep:
            shutil.rmtree(ctx.tmp, ignore_errors=True)
        else:
            log("kept %s" % ctx.tmp)
    elapsed = time.monotonic() - t0
    load1 = sh("cut -d' ' -f1-3 /proc/loadavg")
    base = dict(date=info["date"], load0=load0)
    reruns = []
    if prev:
        # the full run's date and load, then one note per re-run still standing (a later
        # re-run of the same sections replaces the earlier one)
        base = prev.get("base") or dict(date=prev["info"]["date"].split("; ")[0],
                                        load0=prev["load0"].split(" (")[0])
        reruns = [r for r in prev.get("reruns", []) if not set(r["only"]) <= only]
        reruns.append(dict(only=sorted(only), date=info["date"], load0=load0))
        info["date"] = "; ".join([base["date"]] + ["%s re-run %s" % (", ".join(r["only"]),
                                                                      r["date"]) for r in reruns])
        load0 = base["load0"] + "".join(" (%s re-run: %s)" % (", ".join(r["only"]), r["load0"])
                                        for r in reruns)
        elapsed += prev["elapsed"]
    res["loads"] = dict(prev["res"].get("loads", {}), **loads) if prev else loads
    # sections 7, 9 and 10 alone: spliced into the existing file as section 8 is
    # (not named `render`: that is the whole file's, called below)
    for name, render_one, number in (("waits", render_waits, 7), ("attach", render_attach, 9),
                                     ("dump", render_dump, 10)):
        if only == {name} and not prev:
            lines = render_one(res[name])
            sys.stdout.write("\n".join(lines) + "\n")
            if not args.no_write and os.path.exists(args.out):
                splice_section(args.out, lines, head="## %d. " % number)
                log("wrote section %d into %s" % (number, args.out))
            return
    if only == {"process"} and not prev:
        # one section on its own: print it, and put it in place of section 8 of the
        # existing file, the other sections as they were (their own runs and dates)
        lines = render_process(res["process"])
        for n in reversed(ctx.notes):
            lines[4:4] = ["* " + n, ""]
        text = "\n".join(lines) + "\n"
        sys.stdout.write(text)
        if not args.no_write:
            if os.path.exists(args.out):
                splice_section(args.out, lines)
            else:
                with open(args.out, "w") as f:
                    f.write(text)
            log("wrote section 8 into %s" % args.out)
        return
    with open(saved, "wb") as f:
        pickle.dump(dict(info=info, res=res, elapsed=elapsed, load0=load0, load1=load1,
                         notes=ctx.notes, quick=plan.quick, base=base, reruns=reruns), f)
    text = render(ctx, info, res, elapsed, load0, load1)
    sys.stdout.write(text)
    if not args.no_write:
        with open(args.out, "w") as f:
            f.write(text)
        log("wrote %s" % args.out)


if __name__ == "__main__":
    main()
