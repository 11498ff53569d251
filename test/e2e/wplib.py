# SPDX-License-Identifier: MIT
"""Helpers for wallprof's end-to-end tests (python3, standard library only).

A test script looks like this:

    import wplib as wp

    def main(t):
        prof = wp.tmp_path("x.prof")
        r = wp.run_preloaded([wp.target("cpu_split")], env={"WALLPROF_OUT": prof}, timeout=60)
        t.check(r.returncode == 0, "the target exits 0", r.stderr)
        p = wp.load(prof)                       # folded + per-thread, through the CLI
        t.near(p.self_share("leaf_mul"), 0.5, 0.02, "leaf_mul's self share")

    wp.main(main)                               # prints "N passed, M failed", exits 1 on failure

Where things are: the build directory is $WP_BUILD (meson test sets it), else <repo>/build.
Every process runs in its own process group under a watchdog: when it outlives its timeout
the whole group is killed with SIGKILL, the timeout is counted as a failure, and
WatchdogTimeout is raised (wp.main reports it and carries on to the summary). Timeouts are
multiplied by $WP_TIMEOUT_MULT (default 1) for slow setups such as valgrind.
"""

import collections
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback

from wpformat import (REC_META, REC_MODULE, REC_THREAD, REC_STACK, REC_TIMELINE,  # noqa: F401
                      REC_END, STACK_WAITING, STACK_TRUNCATED, STACK_REUSED, THREAD_EXITED,
                      THREAD_UNSAMPLEABLE, Profile as RawProfile)
from wpformat import read as read_raw  # noqa: F401

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# --------------------------------------------------------------------------------------------
# Where things are


# A row of the text report's process table (the run's header): pid, parent, how it ended,
# wall, CPU, samples, the indent of its depth, command line (and its file).
PROCESS_ROW = re.compile(r"^  \s*(\d+)\s+(\d+)\s+(exit \d+|SIG\w+|signal \d+|exec'd|no word|ended)\s+"
                         r"(\S+ \S+)\s+(\S+ \S+)\s+([\d,]+)  ( *)(.*)$")


def process_parents(text):
    """The text report's process table: {pid: parent pid} (the last image of each pid)."""
    rows = {}
    for line in text.splitlines():
        m = PROCESS_ROW.match(line)
        if m:
            rows[int(m.group(1))] = int(m.group(2))
    return rows

def build_dir():
    """The meson build directory: $WP_BUILD, else <repo>/build."""
    d = os.environ.get("WP_BUILD") or os.path.join(ROOT, "build")
    return os.path.abspath(d)


def agent():
    """Path of libwallprof.so."""
    return os.path.join(build_dir(), "src", "agent", "libwallprof.so")


def cli():
    """Path of the wallprof command."""
    return os.path.join(build_dir(), "src", "cli", "wallprof")


def target(name):
    """Path of a test program built from test/targets/<name>.c."""
    return os.path.join(build_dir(), "test", "targets", name)


_tmp_root = None


def tmp_dir():
    """A private temporary directory, removed at exit unless $WP_KEEP_TMP is set."""
    global _tmp_root
    if _tmp_root is None:
        base = os.path.join(build_dir(), "test", "e2e-tmp")
        os.makedirs(base, exist_ok=True)
        _tmp_root = tempfile.mkdtemp(prefix=os.path.basename(sys.argv[0]).replace(".py", "") + ".",
                                     dir=base)
    return _tmp_root


def tmp_path(name):
    """A path named `name` inside tmp_dir() (not created)."""
    return os.path.join(tmp_dir(), name)


def _cleanup_tmp():
    if _tmp_root and not os.environ.get("WP_KEEP_TMP"):
        shutil.rmtree(_tmp_root, ignore_errors=True)


# --------------------------------------------------------------------------------------------
# Running things under a watchdog

class WatchdogTimeout(Exception):
    """A process outlived its timeout; its process group was killed."""


class Result:
    def __init__(self, argv, returncode, stdout, stderr, elapsed):
        self.argv = argv
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        self.elapsed = elapsed

    def describe(self):
        """A few lines to print when a check on this run fails."""
        def tail(s, n=1500):
            return s if len(s) <= n else "..." + s[-n:]
        return ("command: %s\nexit status: %s, %.2f s\nstderr:\n%s" %
                (" ".join(self.argv), self.returncode, self.elapsed, tail(self.stderr)))


def timeout_mult():
    try:
        return max(1.0, float(os.environ.get("WP_TIMEOUT_MULT", "1")))
    except ValueError:
        return 1.0


def _kill_group(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:  # no such group any more
        pass


def run(argv, env=None, timeout=60, cwd=None, stdin_data=None, base_env=None, text=True):
    """Runs argv with `env` added to the environment (base_env, default os.environ, minus any
    WALLPROF_* and LD_PRELOAD so that the caller's setting never leaks in). A value of None
    in `env` removes that variable. Returns a Result; on timeout kills the process group,
    counts a failure and raises WatchdogTimeout."""
    full = dict(os.environ if base_env is None else base_env)
    for k in list(full):
        if k.startswith("WALLPROF_") or k == "LD_PRELOAD":
            del full[k]
    for k, v in (env or {}).items():
        if v is None:
            full.pop(k, None)
        else:
            full[k] = v
    limit = timeout * timeout_mult()
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, env=full, cwd=cwd, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        out, err = proc.communicate(stdin_data.encode() if isinstance(stdin_data, str)
                                    else stdin_data, timeout=limit)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out, err = proc.communicate()
        elapsed = time.monotonic() - t0
        msg = "watchdog: %s still running after %.0f s; process group killed" % (
            " ".join(argv), limit)
        errtext = err.decode("utf-8", "replace")
        current().fail(msg, "stderr:\n" + errtext[-2000:])
        raise WatchdogTimeout(msg)
    except BaseException:
        _kill_group(proc)
        proc.wait()
        raise
    elapsed = time.monotonic() - t0
    # Whatever the program left behind in its group (daemons, stray children) goes too.
    _kill_group(proc)
    if text:
        out = out.decode("utf-8", "replace")
        err = err.decode("utf-8", "replace")
    return Result(list(argv), proc.returncode, out, err, elapsed)


def unsampled_lines(path):
    """The run's list of processes that took no sample (NAME.unsampled, one line each:
    "run=ID pid=N ppid=N end=WORD[ N] start_unix_ns=N wall_ns=N cpu_ns=N command=REST"), as
    dicts; [] when there is none."""
    out = []
    try:
        with open(path) as f:
            text = f.read()
    except FileNotFoundError:
        return out
    for line in text.splitlines():
        m = re.match(r"^run=(\S+) pid=(\d+) ppid=(\d+) end=(.*?) start_unix_ns=(\d+) "
                     r"wall_ns=(\d+) cpu_ns=(\d+) command=(.*)$", line)
        if m:
            out.append(dict(run=m.group(1), pid=int(m.group(2)), ppid=int(m.group(3)),
                            end=m.group(4), start_unix_ns=int(m.group(5)),
                            wall_ns=int(m.group(6)), cpu_ns=int(m.group(7)),
                            command=m.group(8)))
    return out


def unsampled_pids(path):
    """The distinct pids of the list at `path`."""
    return {u["pid"] for u in unsampled_lines(path)}


def preload_env(mode=None, hz=None, threads=None, out=None, quiet=True, extra=None):
    """The environment for running a program under the agent directly."""
    env = {"LD_PRELOAD": agent()}
    if mode is not None:
        env["WALLPROF_MODE"] = str(mode)
    if hz is not None:
        env["WALLPROF_HZ"] = str(hz)
    if threads is not None:
        env["WALLPROF_THREADS"] = str(threads)
    if out is not None:
        env["WALLPROF_OUT"] = out
    if quiet:
        env["WALLPROF_QUIET"] = "1"
    env.update(extra or {})
    return env


def run_preloaded(argv, env=None, timeout=60, **kw):
    """Runs argv with LD_PRELOAD=libwallprof.so plus `env` (WALLPROF_* settings etc.)."""
    e = {"LD_PRELOAD": agent()}
    e.update(env or {})
    return run(argv, env=e, timeout=timeout, **kw)


def wallprof(args, env=None, timeout=60, **kw):
    """Runs the wallprof command with `args`."""
    return run([cli()] + list(args), env=env, timeout=timeout, **kw)


def record(cmd, out, mode=None, hz=None, threads=None, env=None, timeout=120, fmt="folded",
           extra_args=()):
    """Records `cmd` with the CLI (`wallprof ... -o out -f fmt -- cmd`). Returns the Result
    (the report is its stdout)."""
    args = []
    if mode:
        args.append("--mode=%s" % mode)
    if hz:
        args.append("--hz=%d" % hz)
    if threads is not None:
        args.append("--threads=%d" % threads)
    args += ["-o", out, "-q", "-f", fmt] + list(extra_args) + ["--"] + list(cmd)
    return wallprof(args, env=env, timeout=timeout)


# --------------------------------------------------------------------------------------------
# Folded stacks

_THREAD_ROOT = re.compile(r"^\[(.*) tid=(\d+)\]$")


def parse_folded(text):
    """Folded text ("a;b;c COUNT" lines, root first) -> {tuple of frames: count}.
    Identical stacks on several lines are summed. Raises ValueError on a malformed line."""
    stacks = collections.Counter()
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        head, sep, count = line.rpartition(" ")
        if not sep or not count.isdigit():
            raise ValueError("folded line %d is malformed: %r" % (n, line))
        stacks[tuple(head.split(";"))] += int(count)
    return dict(stacks)


class Profile:
    """Samples as (thread name, tid, frames root first) -> count, from per-thread folded
    output. Without per-thread roots, name is None and tid is 0."""

    def __init__(self, samples):
        self.samples = dict(samples)

    @classmethod
    def from_folded(cls, text, per_thread=True):
        samples = collections.Counter()
        for stack, count in parse_folded(text).items():
            name, tid = None, 0
            if per_thread:
                m = _THREAD_ROOT.match(stack[0])
                if not m:
                    raise ValueError("per-thread stack without a [name tid=N] root: %r"
                                     % ";".join(stack))
                name, tid = m.group(1), int(m.group(2))
                stack = stack[1:]
            samples[(name, tid, tuple(stack))] += count
        return cls(samples)

    # -- selections -------------------------------------------------------------------------
    def filter(self, pred):
        """Keeps the samples for which pred(name, tid, frames) is true."""
        return Profile({k: v for k, v in self.samples.items() if pred(*k)})

    def thread(self, name_or_tid):
        """Only the samples of threads with this name (str) or tid (int)."""
        if isinstance(name_or_tid, int):
            return self.filter(lambda n, t, f: t == name_or_tid)
        return self.filter(lambda n, t, f: n == name_or_tid)

    def through(self, func):
        """Only the samples whose stack contains `func`."""
        return self.filter(lambda n, t, f: func in f)

    # -- counts -----------------------------------------------------------------------------
    def total(self):
        return sum(self.samples.values())

    def stacks(self):
        """{frames: count}, merged over threads."""
        c = collections.Counter()
        for (_, _, f), v in self.samples.items():
            c[f] += v
        return dict(c)

    def self_counts(self):
        """Counter: function -> samples in which it is the leaf."""
        c = collections.Counter()
        for (_, _, f), v in self.samples.items():
            if f:
                c[f[-1]] += v
        return c

    def total_counts(self):
        """Counter: function -> samples in which it appears anywhere (once per sample)."""
        c = collections.Counter()
        for (_, _, f), v in self.samples.items():
            for fn in set(f):
                c[fn] += v
        return c

    def self_share(self, func):
        t = self.total()
        return self.self_counts()[func] / t if t else 0.0

    def total_share(self, func):
        t = self.total()
        return self.total_counts()[func] / t if t else 0.0

    def threads(self):
        """{(name, tid): samples}."""
        c = collections.Counter()
        for (n, t, _), v in self.samples.items():
            c[(n, t)] += v
        return dict(c)

    def by_name(self):
        """{thread name: samples} (threads sharing a name are summed)."""
        c = collections.Counter()
        for (n, _, _), v in self.samples.items():
            c[n] += v
        return dict(c)

    def per_thread(self):
        """{(name, tid): Profile of that thread}."""
        out = collections.defaultdict(dict)
        for k, v in self.samples.items():
            out[(k[0], k[1])][k] = v
        return {k: Profile(v) for k, v in out.items()}

    def callers_of(self, func):
        """Counter: immediate caller of `func` -> samples (each occurrence of func in a stack
        counts; the root has caller None)."""
        c = collections.Counter()
        for (_, _, f), v in self.samples.items():
            for i, fn in enumerate(f):
                if fn == func:
                    c[f[i - 1] if i else None] += v
        return c

    def roots(self):
        """Counter: the outermost frame of each sample."""
        c = collections.Counter()
        for (_, _, f), v in self.samples.items():
            c[f[0] if f else None] += v
        return c

    def top(self, n=10, kind="self"):
        """The n biggest functions by self or total count, as 'name count' lines."""
        c = self.self_counts() if kind == "self" else self.total_counts()
        return "\n".join("  %6d %5.1f%% %s" % (v, 100.0 * v / max(1, self.total()), k)
                         for k, v in c.most_common(n))

    def sample_lines(self, n=15):
        """The n heaviest stacks as text, for failure messages."""
        items = sorted(self.samples.items(), key=lambda kv: -kv[1])[:n]
        return "\n".join("  %6d [%s tid=%d] %s" % (v, k[0], k[1], ";".join(k[2]))
                         for k, v in items)


def folded(profile_path, per_thread=False, thread=None, timeout=120):
    """`wallprof --report FILE --format=folded [--per-thread] [--thread=X]` -> its Result."""
    args = ["--report", profile_path, "--format=folded"]
    if per_thread:
        args.append("--per-thread")
    if thread is not None:
        args.append("--thread=%s" % thread)
    return wallprof(args, timeout=timeout)


def load(profile_path, thread=None, timeout=120):
    """Reports a saved profile through the CLI (folded, per thread) into a Profile. Raises
    RuntimeError when the CLI fails."""
    r = folded(profile_path, per_thread=True, thread=thread, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError("wallprof --report %s failed:\n%s" % (profile_path, r.describe()))
    return Profile.from_folded(r.stdout, per_thread=True)


# --------------------------------------------------------------------------------------------
# The raw profile file (docs/profile-format.md), read independently of the CLI, to check
# validity and the flags and statistics the reports may not show: wpformat.py, which the
# benchmark reads profiles with too.

# read_raw(path) -> RawProfile; the record types and flags: imported at the top.


_BUDGET_HEAD = re.compile(r"^(\S.*) \(tid (\d+)[,)]")
_BUDGET_PART = re.compile(r"([a-zA-Z][a-zA-Z ]*?) (\d+\.\d)%")


def time_budgets(text, by_name=False):
    """tid (or thread name) -> {part: percent} from a text report's per-thread time budgets,
    the line "    time (2.0 s sampled): running 35.1%, waiting for a CPU 64.9%, lock 0.2%, ..."
    under each "NAME (tid N...)" heading, and its continuation lines ("      sleep 3.0%, ...",
    indented 6, when it passes 100 columns)."""
    out, key, parts = {}, None, None
    for line in text.splitlines():
        if parts is not None and re.match(r"^      [a-z]", line):
            parts.update({k: float(v) for k, v in _BUDGET_PART.findall(line)})
            continue
        parts = None
        m = _BUDGET_HEAD.match(line)
        if m:
            key = m.group(1) if by_name else int(m.group(2))
        elif key is not None and line.startswith("    time ("):
            parts = {k: float(v) for k, v in _BUDGET_PART.findall(line.split("):", 1)[1])}
            out[key] = parts
            key = None
    return out


def read_truth(path):
    """A target's WP_TRUTH file ("key value" lines) -> {key: float or str}."""
    truth = {}
    with open(path) as f:
        for line in f:
            k, _, v = line.strip().partition(" ")
            if not k:
                continue
            try:
                truth[k] = float(v)
            except ValueError:
                truth[k] = v
    return truth


def truth_tids(truth):
    """The threads a target names in its truth ("tid.NAME N" lines): {NAME: tid}."""
    return {k[4:]: int(v) for k, v in truth.items() if k.startswith("tid.")}


# --------------------------------------------------------------------------------------------
# Waits: a target whose threads each wait for one known thing, and what --waits says of them

def record_waits(name, argv, hz, extra=None, label="", stdout=None):
    """Runs a waits target (argv) under the agent in wall mode at `hz` with a truth file
    ($WP_TRUTH) and checks that it exits 0 (and prints `stdout`, when given); -> (profile
    path, truth, raw profile). Files are NAME.prof and NAME.truth in the test's directory."""
    prof = tmp_path(name + ".prof")
    truth_path = tmp_path(name + ".truth")
    env = {"WP_TRUTH": truth_path}
    env.update(extra or {})
    r = run_preloaded(argv, env=preload_env(mode="wall", hz=hz, out=prof, extra=env),
                      timeout=120)
    if stdout is None:
        check(r.returncode == 0, label + "the target exits 0", r.describe())
    else:
        check(r.returncode == 0 and r.stdout == stdout,
              label + "the target exits 0 with its output", r.describe())
    return prof, read_truth(truth_path), read_raw(prof)


def folded_tid(frames):
    """The tid of a per-thread folded stack (its root frame "[NAME tid=N]")."""
    return int(frames[0].rsplit("tid=", 1)[1].rstrip("]"))


def wait_frames(folded):
    """tid -> {wait frame (the first "[wait ...]" of the stack) or None: count} from
    per-thread folded --waits."""
    out = {}
    for frames, n in parse_folded(folded).items():
        wait = next((f for f in frames if f.startswith("[wait ")), None)
        d = out.setdefault(folded_tid(frames), {})
        d[wait] = d.get(wait, 0) + n
    return out


def check_wait_share(raw, waits, tid, name, frame, match=None, share=0.90):
    """Checks that >= `share` of thread `tid`'s waiting samples (its THREAD record in the raw
    profile, at least 50) have the wait frame `frame`, from `waits` (wait_frames' tid ->
    {frame: count}). A frame without its closing "]" is a prefix; `match(f)`, when given,
    says instead which frames count (`frame` then only names them in the message)."""
    th = raw.threads.get(tid)
    waiting = th["waiting"] if th else 0
    if match is None:
        def match(f):
            return f == frame or (not frame.endswith("]") and f.startswith(frame))
    got = sum(n for f, n in waits.get(tid, {}).items() if f and match(f))
    check(waiting >= 50 and got >= share * waiting,
          "%s: >= %d%% of its waiting samples say %s" % (name, round(100 * share), frame),
          "%d of %d; its waits: %r" % (got, waiting, waits.get(tid)))


# --------------------------------------------------------------------------------------------
# Checks and the summary

class Checks:
    def __init__(self):
        self.passed = 0
        self.failed = 0
        self.failures = []

    def ok(self, what):
        self.passed += 1
        print("ok   %s" % what, flush=True)
        return True

    def fail(self, what, detail=""):
        self.failed += 1
        self.failures.append(what)
        print("FAIL %s" % what, flush=True)
        if detail:
            for line in str(detail).rstrip().splitlines():
                print("     | %s" % line)
        sys.stdout.flush()
        return False

    def check(self, cond, what, detail=""):
        """Counts one check; `detail` (str or callable) is printed only when it fails."""
        if cond:
            return self.ok(what)
        return self.fail(what, detail() if callable(detail) else detail)

    def near(self, actual, expected, tol, what, detail=""):
        """|actual - expected| <= tol."""
        good = abs(actual - expected) <= tol
        label = "%s: %.4g vs expected %.4g (+-%.3g)" % (what, actual, expected, tol)
        return self.check(good, label, detail)

    def between(self, actual, lo, hi, what, detail=""):
        label = "%s: %.4g in [%.4g, %.4g]" % (what, actual, lo, hi)
        return self.check(lo <= actual <= hi, label, detail)

    def eq(self, actual, expected, what, detail=""):
        good = actual == expected
        label = what if good else "%s: got %r, expected %r" % (what, actual, expected)
        return self.check(good, label, detail)

    def note(self, text):
        """Information, not a check (measurements worth reading)."""
        for line in str(text).splitlines():
            print("note %s" % line)
        sys.stdout.flush()

    def summary(self):
        print("%d passed, %d failed" % (self.passed, self.failed), flush=True)
        if self.failures:
            print("failed: " + "; ".join(self.failures), flush=True)
        return 1 if self.failed or not self.passed else 0


_current = Checks()


def current():
    return _current


def check(cond, what, detail=""):
    return _current.check(cond, what, detail)


def near(actual, expected, tol, what, detail=""):
    return _current.near(actual, expected, tol, what, detail)


def note(text):
    _current.note(text)


def require_built(*paths):
    """Fails (and returns False) when any of the given files is missing."""
    good = True
    for p in paths:
        if not os.path.exists(p):
            _current.fail("%s exists (build it: meson compile -C %s)" % (p, build_dir()))
            good = False
    return good


def main(fn):
    """Runs fn(checks); an exception (a watchdog timeout included) counts as one failure and
    ends the test. Prints "N passed, M failed" and exits 1 on any failure (or when nothing
    was checked), 0 otherwise."""
    t = _current
    try:
        if require_built(agent(), cli()):
            fn(t)
    except WatchdogTimeout:
        pass  # already counted
    except KeyboardInterrupt:
        t.fail("interrupted")
    except Exception:
        t.fail("the test raised an exception", traceback.format_exc())
    finally:
        _cleanup_tmp()
    sys.exit(t.summary())
