# SPDX-License-Identifier: MIT
"""--live: the full-screen view, driven in a real terminal (tmux, on a private server).

Each run starts `wallprof --live ... -- live_target` in a tmux pane through a small wrapper
(this script with --wrap), which records wallprof's pid, its exit status and the terminal
settings it left (`stty -a`), then keeps the pane open so the screen can still be read.

  * a terminal is required: with standard output on a pipe, --live refuses with a message;
  * the view: a header (command, pid, mode, rate, elapsed, samples, threads, sampler
    overhead), the hot function within a few refreshes, numbers that change between
    captures, an interval column that follows the program (live_hot_first stops gaining
    samples once live_target moves on to live_hot_second), `t` for the thread list, Enter for a
    function's per-thread breakdown, a resize re-lays the screen out;
  * the view costs little: wallprof's own CPU use while it runs;
  * at the end: the main screen is back (alternate_on 0, cursor shown, termios canonical with
    echo), the program's output and the final report are there, and wallprof exits with the
    program's status;
  * `q` closes the view and the program runs on to its report;
  * Ctrl-C stops the program (SIGINT) and wallprof dies of SIGINT too, terminal restored;
    SIGTERM sent to wallprof likewise;
  * slowdown: a fixed CPU workload's wall and CPU time plain, under `wallprof` and under
    `wallprof --live` (notes only: timing on a shared machine is too noisy for a check; the
    view's own CPU use above is the checked part);
  * `w`, the waits view (issue 13), on test/targets/waits.c: time per kind, then per object,
    over the last interval and overall; big_lock's row names its real holder (the target's
    own tid) and has the lockers' share of the samples (3 of the 13 threads of the target and
    its forked child, every one sampled every tick); the reader's pipe and the sleeper's 10ms are there; `w` again: back
    to the functions;
  * a process tree (issue 12): `sh -c 'live_target 3 0 & waits 7; wait'`: the processes
    line lists sh, live_target and waits with their pids as they appear, the functions of the
    children (live_hot_first, compute_holding_lock) are in the table, the thread list has a
    process column, the waits view has the child's big_lock, and live_target is marked
    ended once it exits while waits runs on;
  * a root that execs after a child ended (`sh -c 'live_target; sleep 1; exec waits'`): the
    processes line names the root's new image with the same pid, and the functions and
    wait leaves of the last interval have their names (the models share one symbol cache);
  * a deadlock (issue 21): test/targets/deadlock.c's abba stuck for good, the header has a
    line "DEADLOCK deadlock: abba-1 tid=N ... waits for lock abba_lock_b held by abba-2 ..."
    naming both threads (tids from the target's truth) and locks; Ctrl-C ends it and the
    final report opens with the DEADLOCK section;
  * the same leaves as the text report (issue 20): on test/targets/demo.c, the view lists
    [wait lock table_lock], [wait sleep 20ms] and [wait io pipe:...] where it listed the C
    library's futex_wait, clock_nanosleep and __GI___libc_read, and the text report of the
    same profile has them too.
"""
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wplib as wp  # noqa: E402

WIDTH, HEIGHT = 120, 40


# --------------------------------------------------------------------------------------------
# The wrapper, run inside the pane: `test_live.py --wrap STATUS_FILE -- CMD...`

def wrap(argv):
    status_file = argv[0]
    cmd = argv[2:]
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("WALLPROF_") and k != "LD_PRELOAD"}
    proc = subprocess.Popen(cmd, env=env)
    # Only now: the child must not inherit SIG_IGN. Ctrl-C is for wallprof and its program.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGQUIT, signal.SIG_IGN)
    with open(status_file, "a") as f:
        f.write("pid %d\n" % proc.pid)
    rc = proc.wait()
    stty = subprocess.run(["stty", "-a"], capture_output=True, text=True).stdout
    with open(status_file, "a") as f:
        f.write("stty %s\n" % " ".join(stty.split()))
        f.write("status %d\n" % rc)
    print("[wrapper] wallprof returned %d" % rc, flush=True)
    time.sleep(300)


# --------------------------------------------------------------------------------------------
# tmux

class Pane:
    """One tmux session on a private server, running `cmd` through the wrapper."""
    count = 0

    def __init__(self, cmd, width=WIDTH, height=HEIGHT):
        Pane.count += 1
        # a socket of its own: a server still shutting down must not be reused
        self.sock = wp.tmp_path("tmux%d.sock" % Pane.count)
        self.name = "live%d" % Pane.count
        self.status_file = wp.tmp_path("%s.status" % self.name)
        wrapper = [sys.executable, os.path.abspath(__file__), "--wrap", self.status_file, "--"]
        line = " ".join(shlex.quote(a) for a in wrapper + list(cmd))
        self.tmux("new-session", "-d", "-x", str(width), "-y", str(height), "-s", self.name,
                  "cd %s && exec %s" % (shlex.quote(wp.tmp_dir()), line))
        self.t0 = time.monotonic()

    def tmux(self, *args):
        r = subprocess.run(["tmux", "-f", "/dev/null", "-S", self.sock] + list(args),
                           capture_output=True, text=True, timeout=20)
        if r.returncode != 0:
            raise RuntimeError("tmux %s: %s" % (" ".join(args), r.stderr.strip()))
        return r.stdout

    def screen(self):
        return self.tmux("capture-pane", "-p", "-t", self.name)

    def display(self, fmt):
        return self.tmux("display-message", "-p", "-t", self.name, fmt).strip()

    def keys(self, *keys):
        self.tmux("send-keys", "-t", self.name, *keys)

    def status(self):
        """{'pid': int, 'stty': str, 'status': int} as far as the wrapper got."""
        out = {}
        try:
            with open(self.status_file) as f:
                for line in f:
                    k, _, v = line.rstrip("\n").partition(" ")
                    out[k] = int(v) if k in ("pid", "status") else v
        except OSError:
            pass
        return out

    def wait(self, pred, timeout, step=0.2):
        """Polls the screen until pred(screen) is true; returns the last screen, or None."""
        end = time.monotonic() + timeout * wp.timeout_mult()
        while True:
            s = self.screen()
            if pred(s):
                return s
            if time.monotonic() > end:
                self.last = s
                return None
            time.sleep(step)

    def wait_exit(self, timeout):
        end = time.monotonic() + timeout * wp.timeout_mult()
        while time.monotonic() < end:
            st = self.status()
            if "status" in st:
                return st
            time.sleep(0.2)
        return None

    def close(self):
        try:
            self.tmux("kill-session", "-t", self.name)
        except Exception:
            pass


def kill_server(sock):
    subprocess.run(["tmux", "-S", sock, "kill-server"], capture_output=True)


# --------------------------------------------------------------------------------------------
# The screen

ROW = re.compile(r"^\s*(\d+\.\d)%\s+([\d,]+)\s+(\d+\.\d)%\s+([\d,]+)\s+(\S.*?)\s*$")


def num(s):
    return int(s.replace(",", ""))


def func_rows(screen):
    """{function: (interval samples, overall samples)} from the functions table."""
    rows = {}
    for line in screen.splitlines():
        m = ROW.match(line)
        if m and not m.group(5).startswith("`-"):
            name = m.group(5).split()[0]
            rows[name] = (num(m.group(2)), num(m.group(4)))
    return rows


def header_samples(screen):
    m = re.search(r"^samples ([\d,]+) \(\+([\d,]+) in ", screen, re.M)
    return num(m.group(1)) if m else None


def restored(t, pane, st, what):
    """The terminal is as it was: main screen, cursor shown, canonical mode with echo."""
    t.eq(pane.display("#{alternate_on}"), "0", "%s: the main screen is back" % what)
    t.eq(pane.display("#{cursor_flag}"), "1", "%s: the cursor is shown" % what)
    flags = (st or {}).get("stty", "").split()
    t.check("icanon" in flags and "echo" in flags and "isig" in flags and "icrnl" in flags
            and "ixon" in flags,
            "%s: the terminal is in canonical mode with echo again (stty)" % what,
            (st or {}).get("stty", "(no stty output)"))


def live_cmd(prof, *target_args, extra=()):
    return ([wp.cli(), "--live", "-o", prof] + list(extra) +
            ["--", wp.target("live_target")] + list(target_args))


def proc_cpu_s(pid):
    """utime + stime of a process, in seconds (None when it is gone)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


# --------------------------------------------------------------------------------------------
# The tests

def not_a_terminal(t):
    r = wp.wallprof(["--live", "--", wp.target("live_target"), "1"], timeout=30)
    t.check(r.returncode == 2 and "--live needs a terminal" in r.stderr and "--report" in r.stderr,
            "with standard output on a pipe, --live refuses and says what to use instead",
            r.describe())
    t.check("live_target: start" not in r.stdout, "... without running the program", r.stdout)


def full_run(t):
    prof = wp.tmp_path("full.prof")
    pane = Pane(live_cmd(prof, "9", "5"))
    try:
        s = pane.wait(lambda s: "wallprof --live" in s and re.search(r"^pid \d+", s, re.M), 8)
        if not t.check(s is not None, "the view comes up with its header",
                       lambda: getattr(pane, "last", "")):
            return
        t.eq(pane.display("#{alternate_on}"), "1", "the view is on the alternate screen")
        pid = pane.status().get("pid")
        s = pane.wait(lambda s: "live_hot_first" in func_rows(s), 5)
        if not t.check(s is not None, "the hot function live_hot_first shows within a few "
                       "refreshes", lambda: getattr(pane, "last", "")):
            return
        head = "\n".join(s.splitlines()[:6])
        t.check("live_target 9 5" in head, "header: the command", head)
        m = re.search(r"^pid (\d+)\s+wall mode, 100 Hz", s, re.M)
        t.check(m is not None and "elapsed 0:0" in head, "header: pid, mode, rate, elapsed", head)
        t.check(re.search(r"samples [\d,]+ \(\+[\d,]+ in \d+\.\d s\)\s+threads \d+ \(\d+ live\)"
                          r"\s+sampler \d+\.\d% of a core, threads held \d+\.\d+%", head)
                is not None, "header: samples (and the interval's), threads, sampler overhead",
                head)
        t.check(re.search(r"^LAST \d+\.\d s\*?\s+OVERALL", s, re.M) is not None,
                "the table has the last interval and the whole run side by side", s)

        # live: the numbers move between captures
        n1 = header_samples(s)
        s2 = pane.wait(lambda x: (header_samples(x) or 0) > (n1 or 0), 3)
        t.check(s2 is not None, "the sample count grows between captures (%s, then %s)" % (
            n1, header_samples(s2 or "")), lambda: getattr(pane, "last", ""))
        if s2:
            a, b = func_rows(s).get("live_hot_first"), func_rows(s2).get("live_hot_first")
            t.check(a and b and b[1] > a[1], "live_hot_first's overall count grows (%s -> %s)"
                    % (a, b))

        # `t`: the thread list; `t` again: the functions
        pane.keys("t")
        s = pane.wait(lambda x: "live-worker" in x and "live-sleeper" in x, 3)
        t.check(s is not None and re.search(r"\btid\s+thread\b", s) is not None,
                "`t` shows the thread list (live-worker, live-sleeper, tid, thread)",
                lambda: s or getattr(pane, "last", ""))
        if s:
            line = [x for x in s.splitlines() if "live-worker" in x]
            # computing, asleep ([wait sleep 5ms]: the C library's clock_nanosleep before the
            # view read the report's leaves), or on a loaded machine waiting for a CPU
            t.check(bool(line) and ("live_worker_loop" in line[0] or "[wait sleep" in line[0]
                                    or "[wait cpu runqueue]" in line[0]),
                    "the thread list names each thread's hottest function", s)
        pane.keys("t")
        s = pane.wait(lambda x: re.search(r"self\s+samples\s+self\s+samples\s+function", x), 3)
        t.check(s is not None, "`t` again: back to the functions",
                lambda: getattr(pane, "last", ""))

        # Enter: the selected (top) function's per-thread breakdown
        pane.keys("Enter")
        s = pane.wait(lambda x: re.search(r"`- \S+ \(tid \d+\)", x), 3)
        t.check(s is not None, "Enter shows the selected function's threads",
                lambda: getattr(pane, "last", ""))
        pane.keys("Escape")

        # the CPU the view costs (wallprof itself, not the program)
        cpu0, w0 = proc_cpu_s(pid) if pid else None, time.monotonic()

        # the interval follows the program: after half its run (4.5 s) it runs live_hot_second only
        def moved_on(x):
            r = func_rows(x)
            return (r.get("live_hot_first", (1, 0))[0] == 0 and
                    r.get("live_hot_first", (0, 0))[1] > 0 and
                    r.get("live_hot_second", (0, 0))[0] > 0)
        s = pane.wait(moved_on, 5)
        t.check(s is not None, "once the program moved on, live_hot_first has no samples in "
                "the last interval but keeps its overall count, live_hot_second has some",
                lambda: getattr(pane, "last", ""))

        # resize: the screen is laid out again for the new size
        pane.tmux("resize-window", "-t", pane.name, "-x", "72", "-y", "18")
        s = pane.wait(lambda x: len(x.splitlines()) <= 18 and "q close view" in x and
                      "wallprof --live" in x, 3)
        t.check(s is not None, "after a resize to 72x18 the header and the help line are "
                "still on screen", lambda: getattr(pane, "last", ""))
        cpu1, w1 = proc_cpu_s(pid) if pid else None, time.monotonic()
        if cpu0 is not None and cpu1 is not None:
            share = (cpu1 - cpu0) / (w1 - w0)
            t.check(share < 0.10, "the view used %.1f%% of a core while the program ran (< 10%%)"
                    % (100 * share))
        pane.tmux("resize-window", "-t", pane.name, "-x", str(WIDTH), "-y", str(HEIGHT))

        st = pane.wait_exit(15)
        if not t.check(st is not None, "wallprof exits when the program does",
                       lambda: pane.screen()):
            return
        t.eq(st["status"], 5, "wallprof exits with the program's status (5)")
        restored(t, pane, st, "at the end")
        s = pane.screen()
        full = pane.tmux("capture-pane", "-p", "-t", pane.name, "-S", "-400")
        t.check("WALLPROF PROFILE" in full and "FLAT PROFILE" in full and
                "live_hot_first" in full, "the final text report follows", s)
        t.check("live_target: start" in full and "live_target: done" in full,
                "the program's own output is shown once the view is gone", full[-3000:])
        t.check("profile saved to" in full and os.path.exists(prof),
                "the profile is saved where -o said", s)
    finally:
        pane.close()


def quit_key(t):
    prof = wp.tmp_path("quit.prof")
    pane = Pane(live_cmd(prof, "4", "0"))
    try:
        s = pane.wait(lambda s: "live_hot_first" in func_rows(s), 8)
        if not t.check(s is not None, "[q] the view is up", lambda: getattr(pane, "last", "")):
            return
        pane.keys("q")
        s = pane.wait(lambda x: "view closed" in x, 3)
        t.check(s is not None, "[q] the view closes and says the program runs on",
                lambda: getattr(pane, "last", ""))
        t.eq(pane.display("#{alternate_on}"), "0", "[q] the main screen is back at once")
        t.check(s is not None and "live_target: start" in s,
                "[q] what the program wrote under the view is shown", s)
        t.check("status" not in pane.status(), "[q] the program is still running")
        st = pane.wait_exit(15)
        if not t.check(st is not None, "[q] wallprof waits for the program, then exits"):
            return
        t.eq(st["status"], 0, "[q] exit status 0, the program's")
        restored(t, pane, st, "[q]")
        full = pane.tmux("capture-pane", "-p", "-t", pane.name, "-S", "-400")
        t.check("live_target: done" in full and "WALLPROF PROFILE" in full,
                "[q] the program's later output and the final report follow", full[-3000:])
    finally:
        pane.close()


def interrupted(t, how):
    prof = wp.tmp_path("%s.prof" % how)
    pane = Pane(live_cmd(prof, "30", "0"))
    sig = signal.SIGINT if how == "ctrl-c" else signal.SIGTERM
    try:
        s = pane.wait(lambda s: "live_hot_first" in func_rows(s), 8)
        if not t.check(s is not None, "[%s] the view is up" % how,
                       lambda: getattr(pane, "last", "")):
            return
        t0 = time.monotonic()
        if how == "ctrl-c":
            pane.keys("C-c")
        else:
            os.kill(pane.status()["pid"], signal.SIGTERM)
        st = pane.wait_exit(10)
        if not t.check(st is not None, "[%s] the program stops (%.1f s after the signal)" % (
                how, time.monotonic() - t0), lambda: pane.screen()):
            return
        t.eq(st["status"], -sig, "[%s] wallprof dies of %s, as the program did" % (
            how, signal.Signals(sig).name))
        restored(t, pane, st, "[%s]" % how)
        full = pane.tmux("capture-pane", "-p", "-t", pane.name, "-S", "-400")
        t.check("killed by %s" % signal.Signals(sig).name in full,
                "[%s] the final report says the program was killed by %s" % (
                    how, signal.Signals(sig).name), full[-3000:])
    finally:
        pane.close()


def slowdown(t):
    rounds = os.environ.get("LIVE_WORK_ROUNDS", "1500")
    work = [wp.target("live_target"), "--work", rounds]

    def secs(text):
        m = re.search(r"work: (\d+\.\d+) s wall, (\d+\.\d+) s cpu", text)
        return (float(m.group(1)), float(m.group(2))) if m else None
    plain = wp.run(work, timeout=120)
    rec = wp.wallprof(["-q", "-o", wp.tmp_path("work.prof"), "--"] + work, timeout=120)
    pane = Pane(live_cmd(wp.tmp_path("work-live.prof"), "--work", rounds))
    try:
        st = pane.wait_exit(120)
        full = pane.tmux("capture-pane", "-p", "-t", pane.name, "-S", "-400")
    finally:
        pane.close()
    a, b, c = secs(plain.stdout), secs(rec.stdout), secs(full)
    if not t.check(None not in (a, b, c) and st and st.get("status") == 0,
                   "the fixed workload ran plain, under wallprof and under wallprof --live",
                   "plain %r, record %r, live %r\n%s" % (a, b, c, full[-2000:])):
        return
    for i, what in enumerate(("wall time", "its thread's CPU time")):
        wp.note("CPU-bound workload (%s rounds of live_work), %s: plain %.3f s; wallprof "
                "%.3f s (%+.1f%%); wallprof --live %.3f s (%+.1f%%, %+.1f%% against wallprof)"
                % (rounds, what, a[i], b[i], 100 * (b[i] / a[i] - 1), c[i],
                   100 * (c[i] / a[i] - 1), 100 * (c[i] / b[i] - 1)))


WROW = re.compile(r"^\s*(\d+\.\d)%\s+([\d.]+ \S+)\s+(\d+\.\d)%\s+([\d.]+ \S+)\s+(\S.*?)\s*$")


def wait_rows(screen):
    """[(interval share, overall share, text)] of the waits view, in screen order."""
    return [(float(m.group(1)), float(m.group(3)), m.group(5))
            for m in map(WROW.match, screen.splitlines()) if m]


def waits_view(t):
    prof, truth_path = wp.tmp_path("waits.prof"), wp.tmp_path("waits.truth")
    cmd = ["env", "WP_TRUTH=" + truth_path, wp.cli(), "--live", "-o", prof, "--",
           wp.target("waits"), "8"]
    pane = Pane(cmd, width=160)  # room for a wait row's holder and waiting threads
    try:
        s = pane.wait(lambda s: "compute_holding_lock" in func_rows(s), 10)
        if not t.check(s is not None, "[waits] the view is up", lambda: getattr(pane, "last", "")):
            return
        t.check("w waits" in s, "[waits] the help bar offers `w waits`", s)
        pane.keys("w")
        s = pane.wait(lambda x: any(r[2].startswith("lock ") and "big_lock" in r[2]
                                    for r in wait_rows(x)), 5)
        if not t.check(s is not None, "`w`: the waits view lists big_lock",
                       lambda: getattr(pane, "last", "")):
            return
        rows = wait_rows(s)
        t.check(re.search(r"WAITS: time per kind, then per object", s) and
                re.search(r"share\s+time\s+share\s+time\s+kind\s+object \(held by\)", s),
                "the waits view's titles: share and time, last interval and overall", s)
        kinds = [r[2] for r in rows if " " not in r[2]]
        t.check({"lock", "io", "sleep", "join", "condition", "child"} <= set(kinds),
                "the kinds: lock, io, sleep, join, condition, child (%s)" % ", ".join(kinds), s)
        lock = [r for r in rows if r[2].startswith("lock ") and "big_lock" in r[2]][0]
        t.check(re.search(r"big_lock( in waits \d+)? \(held by holder tid=\d+\): locker-\d "
                          r"tid=\d+ and others", lock[2]) is not None,
                "big_lock's row names a waiting locker, and others", lock[2])
        # every thread is sampled every tick: 3 lockers of 13 threads (waits' 12 and its
        # forked child's one)
        t.near(lock[0], 100.0 * 3 / 13, 8.0, "big_lock's share of the last interval's samples "
               "(3 lockers of 13 threads)", s)
        t.check(any(re.match(r"sleep +10ms( in waits \d+)?: sleeper", r[2]) for r in rows),
                "the sleeper's 10ms is listed", s)
        pane.keys("w")
        s2 = pane.wait(lambda x: re.search(r"self\s+samples\s+self\s+samples\s+function", x), 3)
        t.check(s2 is not None, "`w` again: back to the functions",
                lambda: getattr(pane, "last", ""))
        st = pane.wait_exit(20)
        t.check(st is not None and st.get("status") == 0, "[waits] wallprof exits 0 with it",
                lambda: pane.screen())
        # the target writes its truth (tids, the pipe) as it ends
        truth = wp.read_truth(truth_path)
        holder = "(held by holder tid=%d)" % truth.get("tid.holder", -1)
        t.check(holder in lock[2], "big_lock's row named its real holder %s" % holder, lock[2])
        t.check(any(r[2].startswith("io ") and truth.get("pipe", "?") in r[2] for r in rows),
                "the reader's pipe %s was listed under io" % truth.get("pipe"), s)
    finally:
        pane.close()


def proc_line(screen):
    """{program: [(pid, ended)]} from the processes line(s) of the header."""
    m = re.search(r"^processes (\d+) \((\d+) live\):(.*?)(?=^profile:|^warning:|^SIGINT|\Z)",
                  screen, re.M | re.S)
    out = {}
    if m:
        for prog, pid, ended in re.findall(r"(\S+) (\d+)( \(ended\))?", m.group(3)):
            out.setdefault(prog, []).append((int(pid), bool(ended)))
    return out


def tree_view(t):
    prof = wp.tmp_path("tree.prof")
    script = "%s 3 0 >/dev/null & %s 7 >/dev/null; wait" % (wp.target("live_target"),
                                                            wp.target("waits"))
    pane = Pane([wp.cli(), "--live", "-o", prof, "--", "sh", "-c", script])
    try:
        s = pane.wait(lambda s: {"sh", "live_target", "waits"} <= set(proc_line(s)), 10)
        listed = t.check(s is not None, "[tree] the processes line lists sh, live_target and "
                         "waits", lambda: getattr(pane, "last", ""))
        t.check(listed and re.search(r"^processes \d+ \(\d+ live\):", s, re.M) is not None,
                "[tree] the processes line says how many, and how many live", s)
        s = pane.wait(lambda x: {"live_hot_first", "compute_holding_lock"} <= set(func_rows(x)),
                      5)
        t.check(s is not None, "[tree] the children's functions are in the table "
                "(live_hot_first of live_target, compute_holding_lock of waits)",
                lambda: getattr(pane, "last", ""))
        if not listed:
            return
        pane.keys("t")
        s = pane.wait(lambda x: "live-worker" in x and "locker-1" in x, 4)
        if t.check(s is not None, "[tree] the thread list has the threads of both children",
                   lambda: getattr(pane, "last", "")):
            t.check(re.search(r"\btid\s+thread\s+process\b", s) is not None,
                    "[tree] the thread list has a process column", s)
            line = [x for x in s.splitlines() if "locker-1" in x]
            m = re.search(r"\bwaits (\d+)\b", line[0]) if line else None
            pids = [p for p, _ in proc_line(s).get("waits", [])]  # as listed now
            t.check(m and int(m.group(1)) in pids,
                    "[tree] locker-1's row names its process, waits %s" % (
                        m.group(1) if m else "?"), s)
        pane.keys("w")
        s = pane.wait(lambda x: any("big_lock" in r[2] for r in wait_rows(x)), 4)
        t.check(s is not None and any(re.search(r"big_lock in waits \d+ \(held by holder tid=\d+\): locker-", r[2])
                                      for r in wait_rows(s)),
                "[tree] `w`: the waits view has waits' big_lock, with its process",
                lambda: s or getattr(pane, "last", ""))
        pane.keys("w")
        # live_target runs 3 s, waits 7 s: live_target ends first
        def lt_ended(x):
            p = proc_line(x)
            return (any(e for _, e in p.get("live_target", [])) and
                    any(not e for _, e in p.get("waits", [])))
        s = pane.wait(lt_ended, 10)
        t.check(s is not None, "[tree] once live_target exits it is marked ended, waits is not",
                lambda: getattr(pane, "last", ""))
        st = pane.wait_exit(25)
        t.check(st is not None and st.get("status") == 0, "[tree] wallprof exits 0 with sh",
                lambda: pane.screen())
    finally:
        pane.close()


def exec_view(t):
    """The root execs (its image replaced, its pid kept) after a child ended: the view follows
    the new image, with the libraries' function names (the processes' models share one symbol
    cache, and a model freed on exec or end must not take names the others use: that is
    checked for sure by test_symbolize's test_shared_outlives, here as far as it shows)."""
    prof = wp.tmp_path("exec.prof")
    script = "%s 1 0 >/dev/null; sleep 1; exec %s 5 >/dev/null" % (wp.target("live_target"),
                                                                 wp.target("waits"))
    pane = Pane([wp.cli(), "--live", "-o", prof, "--", "sh", "-c", script])
    try:
        def after_exec(x):
            m = re.search(r"^pid (\d+)", x, re.M)
            return m and int(m.group(1)) in [p for p, _ in proc_line(x).get("waits", [])]
        s = pane.wait(after_exec, 10)
        t.check(s is not None, "[exec] the processes line names the root by its new image, "
                "waits, with the same pid", lambda: getattr(pane, "last", ""))
        # a library's names: big_lock, a data symbol of the new image, names the lock
        # (its waiting C-library frames, futex_wait..., are that leaf since issue 20)
        want = {"[wait lock big_lock]", "[wait sleep 10ms]", "compute_holding_lock"}
        s = pane.wait(lambda x: want <= {n for i, _, n in leaf_rows(x, True) if i}, 5)
        t.check(s is not None, "[exec] after the exec and live_target's end, the last interval "
                "has %s by name" % ", ".join(sorted(want)), lambda: getattr(pane, "last", ""))
        st = pane.wait_exit(20)
        t.check(st is not None and st.get("status") == 0, "[exec] wallprof exits 0",
                lambda: pane.screen())
    finally:
        pane.close()


def deadlock_view(t):
    prof = wp.tmp_path("deadlock.prof")
    truth_path = wp.tmp_path("deadlock.truth")
    ready = wp.tmp_path("deadlock.ready")
    cmd = ["env", "WP_TRUTH=" + truth_path, wp.cli(), "--live", "-o", prof, "--",
           wp.target("deadlock"), "abba", ready]
    pane = Pane(cmd, width=200)
    try:
        s = pane.wait(lambda s: "DEADLOCK deadlock:" in s, 15)
        line = next((l for l in (s or "").splitlines() if "DEADLOCK deadlock:" in l), "")
        tids = wp.truth_tids(wp.read_truth(truth_path)) if os.path.exists(truth_path) else {}
        t.check(s is not None and tids and all(
            "%s tid=%d" % (n, tid) in line for n, tid in tids.items()) and
            "waits for lock abba_lock_b held by abba-2" in line and
            "waits for lock abba_lock_a held by abba-1" in line,
            "[deadlock] the header names the deadlock: its threads and locks", lambda: (
                line or getattr(pane, "last", "")) + "\ntruth: %r" % tids)
        pane.keys("C-c")
        st = pane.wait_exit(10)
        if not t.check(st is not None, "[deadlock] Ctrl-C stops the stuck program",
                       lambda: pane.screen()):
            return
        full = pane.tmux("capture-pane", "-p", "-t", pane.name, "-S", "-400")
        t.check("DEADLOCK: 2 threads wait for each other" in full,
                "[deadlock] the final report has the DEADLOCK section", full[-3000:])
    finally:
        pane.close()


def leaf_rows(screen, interval=False):
    """[(overall samples, function)] of the functions table, the function's whole name (a
    wait leaf's "[wait KIND OBJECT]" has spaces; the module follows after two or more);
    `interval`: [(interval samples, overall samples, function)]."""
    out = []
    for line in screen.splitlines():
        m = ROW.match(line)
        if m and not m.group(5).startswith("`-"):
            name = m.group(5)
            if not name.startswith("[wait "):
                name = name.split()[0]
            elif "]" in name:
                name = name[:name.index("]") + 1]
            out.append((num(m.group(2)), num(m.group(4)), name) if interval
                       else (num(m.group(4)), name))
    return out


# the C library's waiting frames a wait leaf replaces (issue 20: the live view listed them
# where the text report of the same profile had [wait lock table_lock], [wait sleep 20ms]...)
LIBC_WAITING = ("futex_wait", "__futex_abstimed_wait", "__lll_lock_wait", "clock_nanosleep",
                "__GI___libc_read", "__libc_read", "__GI___nanosleep")


def same_leaves(t):
    """The live view's functions are the text report's leaves: a waiting sample's C-library
    frames are one [wait KIND OBJECT] row in both (test/targets/demo.c: four workers on
    table_lock, an io thread reading a pipe and sleeping 20 ms, main joining)."""
    prof = wp.tmp_path("leaves.prof")
    pane = Pane([wp.cli(), "--live", "--threads=0", "-o", prof, "--", wp.target("demo"), "4"],
                width=160)
    try:
        want = ("[wait lock table_lock]", "[wait sleep 20ms]", "[wait io pipe:")

        def has_all(x):
            names = [n for _, n in leaf_rows(x)]
            return all(any(n.startswith(w) for n in names) for w in want)
        s = pane.wait(has_all, 8)
        live = leaf_rows(s if s is not None else getattr(pane, "last", ""))
        t.check(s is not None, "[leaves] the live view lists [wait lock table_lock], [wait "
                "sleep 20ms] and [wait io pipe:...] rows", lambda: getattr(pane, "last", ""))
        st = pane.wait_exit(30)
        t.check(st is not None and st.get("status") == 0, "[leaves] wallprof exits 0",
                lambda: pane.screen())
        rep = wp.wallprof(["--report", prof, "--top=40"])
        flat = rep.stdout.partition("FLAT PROFILE")[2].partition("WAITS")[0]
        text = [line.split("  ")[0] for line in
                (re.sub(r"^\s*\d+\.\d%\s+\S+\s+[\d,]+\s+\d+\.\d%\s+", "", x)
                 for x in flat.splitlines() if re.match(r"^\s*\d+\.\d%\s+\d", x))]
        for w in want:
            t.check(any(n.startswith(w) for n in text), "[leaves] the text report of the same "
                    "profile has %s too" % w, flat)
        # the view's top rows are leaves the text report has: a wait leaf as a leaf, a
        # C-library waiting frame at most as much as the report shows it (its CPU-wait share)
        top = sorted(live, reverse=True)[:8]
        total = sum(n for n, _ in live) or 1
        for n, name in top:
            if name.startswith("[wait "):
                continue
            t.check(any(x.startswith(name[:28]) for x in text),
                    "[leaves] %s, a row of the live view, is in the text report's flat "
                    "profile" % name, flat)
        libc = [(n, name) for n, name in live if name in LIBC_WAITING and n > 0.15 * total]
        t.check(not libc, "[leaves] no C-library waiting frame holds over 15% of the live "
                "view's samples (the report shows them as wait leaves)", repr(live))
    finally:
        pane.close()


def attach_view(t):
    """--live --pid: the view of a process that was already running (the outside sampler's
    checkpoints), Ctrl-C ends the view and the sampling, the process runs on, the final
    report says it was attached."""
    prof = wp.tmp_path("attached.prof")
    target = subprocess.Popen([wp.target("live_target"), "30", "0"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    pane = Pane([wp.cli(), "--live", "--pid=%d" % target.pid, "-o", prof])
    try:
        s = pane.wait(lambda s: "live_hot_first" in func_rows(s), 10)
        if not t.check(s is not None, "[attach] the view of the running process is up",
                       lambda: getattr(pane, "last", "")):
            return
        pane.keys("C-c")
        st = pane.wait_exit(10)
        if not t.check(st is not None, "[attach] Ctrl-C ends the view", lambda: pane.screen()):
            return
        t.eq(st["status"], 0, "[attach] wallprof --live --pid exits 0")
        t.check(target.poll() is None, "[attach] the process runs on after the view ended")
        full = pane.tmux("capture-pane", "-p", "-t", pane.name, "-S", "-400")
        t.check("attached to it while it ran" in full, "[attach] the final report says it was "
                "attached", full[-3000:])
    finally:
        pane.close()
        target.kill()
        target.wait()


def main(t):
    if not shutil.which("tmux"):
        t.fail("tmux is missing: run ./scripts/deps")
        return
    if not wp.require_built(wp.target("live_target"), wp.target("waits"),
                            wp.target("deadlock"), wp.target("demo")):
        return
    sock = wp.tmp_path("tmux.sock")
    try:
        # LIVE_ONLY=name,name runs only those (while working on one)
        only = set(filter(None, os.environ.get("LIVE_ONLY", "").split(",")))
        steps = [("not_a_terminal", not_a_terminal), ("full_run", full_run),
                 ("quit_key", quit_key), ("ctrl_c", lambda t: interrupted(t, "ctrl-c")),
                 ("sigterm", lambda t: interrupted(t, "sigterm")), ("waits_view", waits_view),
                 ("tree_view", tree_view), ("exec_view", exec_view),
                 ("same_leaves", same_leaves), ("slowdown", slowdown),
                 ("deadlock_view", deadlock_view), ("attach_view", attach_view)]
        for name, fn in steps:
            if not only or name in only:
                fn(t)
    finally:
        kill_server(sock)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--wrap":
        wrap(sys.argv[2:])
    else:
        wp.main(main)
