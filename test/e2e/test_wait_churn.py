# SPDX-License-Identifier: MIT
"""wait churn (issue 13): a wait's object that changes under the sampler (a mutex whose mapping
is unmapped while others wait on its neighbours, descriptor numbers closed and reused at once
with other targets, pollfd arrays and fd_sets freed right after the wait, threads and
children that exit constantly) gives a wrong name at worst, never a crash or a hang.

test/targets/wait_churn.c checks every transfer it makes and prints one line. Run without the
agent and with it (wall mode, 1000 Hz, every thread each tick): the same output, stderr and
exit status, within a bounded time; the profile loads, its text report has a WAITS section and
`folded --waits` works. And the churn did reach what the agent reads for io waits: some
samples name a poll set, an epoll set and a socket with its protocol, from the /proc reads
and memory reads this test is about.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wplib as wp  # noqa: E402

SECONDS = 3.0


def main(t):
    argv = [wp.target("wait_churn"), str(SECONDS)]
    plain = wp.run(argv, timeout=60)
    t.check(plain.returncode == 0 and plain.stdout == "churn ok\n",
            "without the agent: churn ok", plain.describe())
    prof = wp.tmp_path("wait_churn.prof")
    r = wp.run_preloaded(argv, env=wp.preload_env(mode="wall", hz=1000, threads=0, out=prof),
                         timeout=120)
    t.check((r.returncode, r.stdout, r.stderr) == (plain.returncode, plain.stdout, plain.stderr),
            "with the agent at 1000 Hz: the same exit status, output and stderr", r.describe())
    text = wp.wallprof(["--report", prof])
    t.check(text.returncode == 0 and "WAITS" in text.stdout, "the text report loads, with "
            "its WAITS section", text.describe())
    folded = wp.wallprof(["--report", prof, "--format=folded", "--waits"])
    t.check(folded.returncode == 0, "folded --waits", folded.describe())
    frames = set()
    for stack in wp.parse_folded(folded.stdout):
        frames.update(f for f in stack if f.startswith("[wait "))
    for what in ("[wait io poll ", "[wait io epoll ", "[wait io select "):
        t.check(any(f.startswith(what) for f in frames), "some samples name a set: %s..." % what,
                sorted(frames)[:40])
    t.check(any(" unix stream" in f for f in frames),
            "some samples name a socket with its protocol", sorted(frames)[:40])


wp.main(main)
