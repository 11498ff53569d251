# SPDX-License-Identifier: MIT
"""A program that is not dumpable (PR_SET_DUMPABLE 0, as sandboxes and agents that hold keys
make themselves) closes its /proc/PID/task/TID/syscall files to every other process of its
user, and the sampler's task is one (it is outside the program's thread group; Yama's
ptrace_scope 1 does the same to it). Those files are how a blocked thread is sampled without
a signal; refused, every sample of a blocked thread was missed ("error": 73,108 missed for
733 samples of eintr_calls). Now such threads are signalled like running ones, and the
interposers retry the calls the signal cuts, so the program still sees no EINTR and no short
sleep: eintr_calls, made not dumpable, as an unprivileged user (root may read the files
anyway), wall mode at 1000 Hz with every thread sampled each tick."""
import os

import wplib as wp

SECONDS = "3"


def main(t):
    d = wp.tmp_path("nodump")
    os.makedirs(d, exist_ok=True)
    os.chmod(d, 0o777)
    os.chmod(os.path.dirname(d), 0o777)
    drop = (["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
            if os.geteuid() == 0 else [])
    argv = drop + [wp.target("eintr_calls"), SECONDS, "nodump"]
    base = wp.run(argv, timeout=120)
    t.eq(base.returncode, 0, "unprofiled, not dumpable: no call saw EINTR", base.describe())
    prof = os.path.join(d, "nd.prof")
    env = wp.preload_env(mode="wall", hz=1000, threads=0, out=prof)
    r = wp.run(argv, env=env, timeout=180)
    t.eq(r.returncode, 0, "under the agent, not dumpable: no call saw EINTR or returned early",
         r.describe())
    t.eq(r.stdout, base.stdout, "its output as unprofiled")
    if not os.path.exists(prof):
        t.fail("the profile was written")
        return
    raw = wp.read_raw(prof)
    refused = int(raw.meta.get("syscall_refused", 0))
    t.check(refused > 0, "the syscall files were refused to the sampler (%d)" % refused,
            str(raw.meta))
    said = [v for k, v in raw.meta.items() if k.startswith("message_")]
    t.check(any("refused" in m for m in said), "the profile says so", str(said))
    errors = int(raw.meta.get("missed_error", 0))
    t.check(errors * 20 < raw.samples(), "blocked threads are sampled, not missed: %d samples, "
            "%d missed as error" % (raw.samples(), errors))
    p = wp.load(prof)
    for name, call in (("t_nanosleep", "nanosleep"), ("t_poll", "poll"), ("t_epoll", "epoll_wait")):
        th = p.thread(name)
        total = th.total()
        share = th.through(call).total() / total if total else 0
        t.check(total > 300 and share > 0.8, "%s: %d samples, %.0f%% inside %s (it sleeps)"
                % (name, total, 100 * share, call))


wp.main(main)
