# SPDX-License-Identifier: MIT
"""early_death (issue 19): the fatal-signal handlers are installed at the sampler's first
tick, not in the constructor (docs/design.md, "Death by a signal"). A process that dies of a
signal before its first tick is still counted as unprofiled: it ends with the status it has
unprofiled, and the run's list of unsampled processes names its end as that signal (written
by the sampler's task, which outlives it). One that dies after its first tick goes through
the handlers, as before.

  * `sh -c 'kill -TERM $$'` at 1 Hz (no tick): status as unprofiled, listed "end=signal 15";
  * `sh -c 'trap "exit 7" TERM; kill -TERM $$'`: its own handler runs (status 7) though the
    agent's set-up was still pending when it was installed;
  * at 1000 Hz, a shell that waits past its first ticks and then dies of SIGTERM: status as
    unprofiled, and its profile (it took samples) says died_of_signal=15.
"""
import os
import shutil

import wplib as wp


def run_sh(t, label, script, hz):
    sh = shutil.which("sh") or "/bin/sh"
    base = wp.run([sh, "-c", script], timeout=30)
    d = wp.tmp_path("early-" + label)
    os.makedirs(d, exist_ok=True)
    out = os.path.join(d, "e.prof")
    # WALLPROF_ROOT_PID=1: no process here is the user's, so none writes a profile of no samples
    env = wp.preload_env(mode="wall", hz=hz, out=out, extra={"WALLPROF_ROOT_PID": "1"})
    r = wp.run([sh, "-c", script], env=env, timeout=30)
    t.eq(r.returncode, base.returncode, "%s: exit status as unprofiled (%d)"
         % (label, base.returncode), r.describe())
    return os.path.join(d, "e.unsampled")


def main(t):
    lst = run_sh(t, "no tick", "kill -TERM $$", 1)
    ends = [u["end"] for u in wp.unsampled_lines(lst)]
    t.eq(ends, ["signal 15"], "no tick: the process is listed, ended by signal 15")
    run_sh(t, "own handler", 'trap "exit 7" TERM; kill -TERM $$', 1)
    lst = run_sh(t, "after ticks", "sleep 0.2; kill -TERM $$", 1000)
    d = os.path.dirname(lst)
    deaths = [wp.read_raw(os.path.join(d, f)).meta.get("died_of_signal")
              for f in sorted(os.listdir(d)) if f.endswith(".prof")]
    t.check("15" in deaths, "after ticks: the shell's profile says it died of signal 15: %s"
            % deaths)


wp.main(main)
