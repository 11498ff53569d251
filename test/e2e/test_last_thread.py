# SPDX-License-Identifier: MIT
"""Processes whose last thread is not main (issue 11). glibc ends a process with exit(0) when
the last thread it counts ends, whichever that is: main may call pthread_exit and leave the
work to its threads, and in a child forked from a thread the forking thread may start helpers
and leave before them (CPython's test_threading does). wallprof's own threads must not keep
such a process alive: it ends with status 0 and the same output as without wallprof, and the
profile is written once, with the threads' work. Before the fix every such run hung (the
watchdog kills it and counts a failure); main-exit-term passed then, and guards the fatal
signal path once main has ended. fork-early and main-exit-now check two fixes found on the
way (the fork lock order; reading through a live thread rather than the ended leader).
test/targets/last_thread.c says what each mode does."""

import os
import signal
import subprocess
import time

import wplib as wp


def target(*args):
    return [wp.target("last_thread")] + list(args)


# Each run takes a second or two; a hang is what the watchdog is for.
RUN_TIMEOUT = 30


def preloaded(args, mode, out, hz=1000, extra=None, timeout=RUN_TIMEOUT):
    env = wp.preload_env(mode=mode, hz=hz, threads=0, out=out, quiet=False, extra=extra)
    return wp.run(target(*args), env=env, timeout=timeout)


def lines(text):
    """Output lines in order of content: the workers end in any order."""
    return sorted(text.splitlines())


def written_once(t, r, what):
    t.eq(r.stderr.count(" written to "), 1, "%s: the profile is written once" % what, r.stderr)


def main_has_ended(pid):
    """Whether the process's main thread is a zombie (it called pthread_exit and ended)."""
    try:
        with open("/proc/%d/task/%d/stat" % (pid, pid)) as f:
            return f.read().rpartition(")")[2].split()[0] == "Z"
    except OSError:
        return False


def signalled(t, args, env, sig, what, delay=0.0, timeout=RUN_TIMEOUT):
    """Starts the target, waits for its "ready" line, for main to have ended and `delay` s
    more, sends `sig` and waits (watchdog). Returns (returncode, stdout) or None after a
    watchdog kill."""
    full = {k: v for k, v in os.environ.items()
            if not k.startswith("WALLPROF_") and k != "LD_PRELOAD"}
    full.update(env)
    p = subprocess.Popen(target(*args), env=full, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, start_new_session=True)
    first = p.stdout.readline().decode()
    deadline = time.monotonic() + 10 * wp.timeout_mult()
    while not main_has_ended(p.pid) and time.monotonic() < deadline and p.poll() is None:
        time.sleep(0.01)
    time.sleep(delay)
    os.kill(p.pid, sig)
    try:
        out, err = p.communicate(timeout=timeout * wp.timeout_mult())
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        t.fail("watchdog: %s still running %d s after signal %d; killed" % (what, timeout, sig),
               err.decode()[-1500:])
        return None
    return p.returncode, first + out.decode()


def scenario(fn, *args):
    """Runs one scenario; a watchdog kill (already counted as a failure) ends only that one."""
    try:
        fn(*args)
    except wp.WatchdogTimeout:
        pass


def main_exit(t, mode, plain):
    """main calls pthread_exit; its three workers end the process."""
    out = wp.tmp_path("main-exit-%s.prof" % mode)
    r = preloaded(["main-exit", "1.5"], mode, out)
    what = "%s, main-exit" % mode
    t.eq(r.returncode, 0, "%s: exits 0 when the last worker ends" % what, r.describe())
    t.eq(lines(r.stdout), lines(plain.stdout),
         "%s: the same output as unprofiled (atexit handlers ran)" % what)
    written_once(t, r, what)
    raw = wp.read_raw(out)
    t.check("checkpoint" not in raw.meta and "died_of_signal" not in raw.meta,
            "%s: the final profile, not a checkpoint" % what, repr(raw.meta))
    prof = wp.load(out)
    pid = int(raw.meta["pid"])
    workers = {tid: n for (name, tid), n in prof.through("burn_in_worker").threads().items()}
    t.eq(len(workers), 3, "%s: the three workers are in the profile" % what, prof.sample_lines())
    burnt = prof.through("burn_in_worker")
    t.check(burnt.total() > least(mode), "%s: with their work (%d samples)"
            % (what, burnt.total()))
    # stacks are copied from the sampler's own memory view: the ended leader has none
    whole = burnt.through("worker").total()
    t.check(whole >= 0.9 * burnt.total(), "%s: whole stacks after main ended (%d of %d reach "
            "the thread's start routine)" % (what, whole, burnt.total()), burnt.sample_lines())
    if mode == "wall" and workers:
        # main lived 0.2 s; its ended thread (a zombie until the process ends, its CPU clock
        # frozen) must not be counted for the workers' 1.5 s
        main_n = sum(n for (name, tid), n in prof.threads().items() if tid == pid)
        t.check(main_n < 0.5 * min(workers.values()),
                "wall, main-exit: main is not sampled after it ended (%d samples against %d "
                "for a worker)" % (main_n, min(workers.values())), prof.sample_lines())


def exit_on_sampler(t, mode, plain):
    """The fallback when no thread can be started to end the process: the sampler calls
    exit(0) itself, and the destructor stops it without waiting for itself
    (WALLPROF_TEST=exit-on-sampler)."""
    out = wp.tmp_path("on-sampler-%s.prof" % mode)
    r = preloaded(["main-exit", "1.5"], mode, out, extra={"WALLPROF_TEST": "exit-on-sampler"})
    what = "%s, exit on the sampler" % mode
    t.eq(r.returncode, 0, "%s: exits 0" % what, r.describe())
    t.eq(lines(r.stdout), lines(plain.stdout), "%s: the same output as unprofiled" % what)
    written_once(t, r, what)
    t.check("did not stop" not in r.stderr, "%s: the sampler is not waited for" % what,
            r.stderr)
    t.check(wp.load(out).through("burn_in_worker").total() > least(mode),
            "%s: the workers' work is in the profile" % what)


def main_exit_now(t):
    """main leaves at once, often before the sampler thread has set itself up: the executable
    must still be found (/proc/self names the ended leader, which has none). 12 runs."""
    for i in range(12):
        out = wp.tmp_path("now.prof")
        r = preloaded(["main-exit-now", "0.3"], "wall", out)
        if r.returncode != 0:
            break
        burnt = wp.load(out).through("burn_in_worker").total()
        if burnt == 0:
            break
    t.eq(r.returncode, 0, "main-exit-now: exits 0 (%d runs)" % (i + 1), r.describe())
    t.check(burnt > 0, "main-exit-now: the executable's functions are named (%d runs)" % (i + 1),
            wp.folded(out, per_thread=True).stdout[:1500])


def main_alone(t, mode, plain):
    """main alone calls pthread_exit: it was the last thread."""
    out = wp.tmp_path("main-alone-%s.prof" % mode)
    r = preloaded(["main-alone"], mode, out)
    what = "%s, main-alone" % mode
    t.eq(r.returncode, 0, "%s: exits 0" % what, r.describe())
    t.eq(r.stdout, plain.stdout, "%s: the same output as unprofiled" % what)
    written_once(t, r, what)
    burnt = wp.load(out).through("burn_in_main").total()
    t.check(burnt > 200, "%s: main's work is in the profile (%d samples)" % (what, burnt))


def fork_helpers(t, mode, plain):
    """Fork from a thread; in the child that thread starts helpers and leaves first."""
    out = wp.tmp_path("fork-%s.prof" % mode)
    r = preloaded(["fork-helpers", "1.0"], mode, out)
    what = "%s, fork-helpers" % mode
    t.eq(r.returncode, 0, "%s: the child ends with status 0 (the parent checks)" % what,
         r.describe())
    t.eq(lines(r.stdout), lines(plain.stdout), "%s: the same output as unprofiled" % what)
    d = os.path.dirname(out)
    child = [f for f in os.listdir(d) if f.startswith("fork-%s." % mode) and
             f.endswith(".prof") and f != os.path.basename(out)]
    t.eq(len(child), 1, "%s: the child wrote its own profile" % what, repr(child))
    if child:
        helpers = wp.load(os.path.join(d, child[0])).through("burn_in_helper")
        t.eq(len(helpers.threads()), 2, "%s: with both helpers' work" % what,
             helpers.sample_lines())


def fork_alone(t, mode, plain):
    """... and in the child that thread leaves with no other thread at all."""
    r = preloaded(["fork-alone"], mode, wp.tmp_path("fork-alone-%s.prof" % mode))
    t.eq(r.returncode, 0, "%s, fork-alone: the child ends with status 0" % mode, r.describe())
    t.eq(lines(r.stdout), lines(plain.stdout),
         "%s, fork-alone: the same output as unprofiled" % mode)


def main_exit_term(t, mode):
    """SIGTERM while the workers of an ended main run: dies of it, as unprofiled."""
    out = wp.tmp_path("term-%s.prof" % mode)
    env = wp.preload_env(mode=mode, hz=1000, threads=0, out=out)
    got = signalled(t, ["main-exit-term"], env, signal.SIGTERM, "%s, main-exit-term" % mode,
                    delay=1.0)
    if got:
        t.eq(got[0], -signal.SIGTERM, "%s, main-exit-term: dies of SIGTERM" % mode, got[1])
        raw = wp.read_raw(out) if os.path.exists(out) else None
        burnt = wp.load(out).through("burn_until_killed") if raw else None
        t.check(raw is not None and raw.meta.get("died_of_signal") == "15" and
                burnt.total() > 100, "%s, main-exit-term: the workers' samples were written"
                % mode, lambda: "%r\n%s" % (raw and raw.meta, wp.folded(out, per_thread=True).stdout))


def term_blocked(t, mode):
    """A SIGTERM that every live thread blocks stays pending; the last worker's exit(0) ends
    the process with status 0, and so must the thread that ends it for wallprof."""
    base = signalled(t, ["term-blocked", "1.0"], {}, signal.SIGTERM, "unprofiled term-blocked")
    env = wp.preload_env(mode=mode, hz=1000, threads=0, out=wp.tmp_path("tb.prof"))
    got = signalled(t, ["term-blocked", "1.0"], env, signal.SIGTERM, "%s, term-blocked" % mode)
    if got and base:
        t.eq(base[0], 0, "unprofiled term-blocked: the pending SIGTERM is never taken")
        t.eq((got[0], lines(got[1])), (base[0], lines(base[1])),
             "%s, term-blocked: the same status and output as unprofiled" % mode)


def one_hz(t, args, plain):
    """One sample a second: the end is still noticed without waiting for a tick."""
    r = preloaded(list(args), "wall", wp.tmp_path("hz1.prof"), hz=1)
    t.eq(r.returncode, 0, "WALLPROF_HZ=1, %s: exits 0" % " ".join(args), r.describe())
    t.note("WALLPROF_HZ=1, %s: %.2f s (unprofiled %.2f s)" % (" ".join(args), r.elapsed,
                                                             plain.elapsed))


def fork_early(t):
    """A thread forks as soon as main starts, often while the sampler is starting the module
    watcher; the child walks the loaded modules, which takes the loader's lock. A fork that
    caught the new watcher inside dl_iterate_phdr left the child that lock held, and the
    child hung (about one run in 15 before the fix): 100 runs."""
    env = wp.preload_env(mode="wall", hz=1000, out=wp.tmp_path("early.prof"))
    for i in range(100):
        r = wp.run(target("fork-early"), env=env, timeout=RUN_TIMEOUT)
        if r.returncode != 0:
            break
    t.eq(r.returncode, 0, "fork-early: 100 children forked at start use the loader (%d run)"
         % (i + 1), r.describe())


def least(mode):
    """Samples that show the workers' work was kept: wall mode counts wall time (3 workers,
    >= 1.5 s each at 1000 Hz: thousands); cpu mode counts the CPU they got, which a loaded
    machine cuts to a few hundred (357 seen at load 8 on 2 CPUs)."""
    return 500 if mode == "wall" else 100


def api(t):
    """Profiling started through the API (WALLPROF_AUTOSTART=0, then wallprof_start)."""
    out = wp.tmp_path("api.prof")
    r = preloaded(["api-main-exit", "1.0"], "wall", out, extra={"WALLPROF_AUTOSTART": "0"})
    t.eq(r.returncode, 0, "api: exits 0 when the last worker ends", r.describe())
    written_once(t, r, "api")
    t.check(os.path.exists(out) and wp.load(out).through("burn_in_worker").total() > 300,
            "api: the workers' work is in the profile")


def cli(t, args):
    """Through the wallprof command: its status is the program's."""
    out = wp.tmp_path("cli.prof")
    r = wp.record(target(*args), out, hz=1000, timeout=RUN_TIMEOUT)
    t.eq(r.returncode, 0, "wallprof -- last_thread %s: exits 0" % " ".join(args), r.describe())
    t.check(os.path.exists(out) and wp.read_raw(out).samples() > 0,
            "wallprof -- last_thread %s: the profile is written" % " ".join(args))


def main(t):
    plain = {}
    for args in (("main-exit", "1.5"), ("main-alone",), ("fork-helpers", "1.0"),
                 ("fork-alone",), ("main-exit", "0.5")):
        r = wp.run(target(*args), timeout=RUN_TIMEOUT)
        t.eq(r.returncode, 0, "unprofiled %s exits 0" % " ".join(args), r.describe())
        plain[args] = r
    for mode in ("wall", "cpu"):
        scenario(main_exit, t, mode, plain[("main-exit", "1.5")])
        scenario(main_alone, t, mode, plain[("main-alone",)])
        scenario(fork_helpers, t, mode, plain[("fork-helpers", "1.0")])
        scenario(fork_alone, t, mode, plain[("fork-alone",)])
        scenario(main_exit_term, t, mode)
        scenario(term_blocked, t, mode)
        scenario(exit_on_sampler, t, mode, plain[("main-exit", "1.5")])
    scenario(main_exit_now, t)
    for args in (("main-exit", "0.5"), ("main-alone",), ("fork-alone",)):
        scenario(one_hz, t, args, plain[args])
    scenario(fork_early, t)
    scenario(api, t)
    for args in (("main-exit", "1.0"), ("fork-helpers", "0.5")):
        scenario(cli, t, args)


wp.main(main)
