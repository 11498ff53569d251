# SPDX-License-Identifier: MIT
"""sampler_syscalls: what the sampler thread asks of the kernel for each sample, counted with
strace on a real run (cpu_split: one busy thread, cpu mode, 1000 Hz). How fast the sampler is
gets measured in scripts/bench, never here; this guards the structure that keeps it cheap:

  * no rt_sigprocmask per sample: libunwind masks every signal around each access to its cache
    (two calls per frame unwound, ~28 per sample here), which the agent answers on the sampler
    thread without the system call (sigmask.c; the sampler has every signal blocked anyway);
  * no /proc read per sample: a thread whose CPU clock moves is signalled straight away;
  * one rt_tgsigqueueinfo (the request's signal, carrying its generation: signals.c tells
    it from the program's own uses of the signal by that) and one process_vm_readv per sample
    (a copy of the stack while it is held), plus, after the thread runs again, a read of the
    code bytes at its pc when its rax could mean it was in a system call (a fraction of the
    samples);
  * at most one rt_sigaction per batch of threads signalled: the look that puts the agent's
    handler back on top of one the program installed with the system call itself.

The program runs as it would without strace: exit 0, its own output.
"""
import os
import re
import shutil

import wplib as wp

CALLS = ("prctl", "rt_sigprocmask", "tgkill", "rt_tgsigqueueinfo", "rt_sigaction",
         "process_vm_readv", "openat")


def sampler_calls(trace):
    """Counts of CALLS made by the thread that named itself "wallprof" (the sampler)."""
    lines = open(trace, encoding="utf-8", errors="replace").read().splitlines()
    tid = next((ln.split()[0] for ln in lines if 'PR_SET_NAME, "wallprof"' in ln), None)
    counts = dict.fromkeys(CALLS, 0)
    for ln in lines:
        m = re.match(r"(\d+)\s+(\w+)\(", ln)  # a call's start ("<... resumed>" halves excluded)
        if m and m.group(1) == tid and m.group(2) in counts:
            counts[m.group(2)] += 1
    return tid, counts


def main(t):
    strace = shutil.which("strace")
    if not t.check(strace is not None, "strace is installed (scripts/deps installs it)"):
        return
    prof, trace = wp.tmp_path("syscalls.prof"), wp.tmp_path("syscalls.strace")
    env = wp.preload_env(mode="cpu", hz=1000, out=prof)
    argv = [strace, "-f", "-qq", "--seccomp-bpf", "-e", "trace=" + ",".join(CALLS), "-o", trace]
    for k, v in env.items():
        argv += ["-E", "%s=%s" % (k, v)]  # the program's environment, not strace's own
    r = wp.run(argv + [wp.target("cpu_split"), "1.5"], timeout=120)
    t.eq(r.returncode, 0, "cpu_split exits 0 under strace and the agent", r.describe())
    t.check(r.stdout.startswith("cpu_split: "), "its own output", r.stdout)
    samples = int(wp.read_raw(prof).meta.get("samples", "0"))
    tid, n = sampler_calls(trace)
    if not t.check(tid is not None and samples >= 500,
                   "the sampler thread is found in the trace and took samples (%d)" % samples):
        return
    per = {k: v / samples for k, v in n.items()}
    t.check(per["rt_sigprocmask"] < 0.05,
            "rt_sigprocmask: %d calls for %d samples (libunwind's masking skipped)"
            % (n["rt_sigprocmask"], samples))
    # A thread found not on a CPU at that instant is looked up in /proc first (it may have
    # blocked). On an oversubscribed machine the busy thread often waits for a CPU, so nearly
    # every sample costs a look (measured at load 7 on 2 CPUs: 0.7-0.95 per sample, the
    # agent of before this check alike): the check holds only while the machine has a CPU
    # for it.
    load = os.getloadavg()[0]
    if load < os.cpu_count():
        t.check(per["openat"] < 0.1,
                "openat (/proc): %d calls for %d samples" % (n["openat"], samples))
    else:
        t.note("openat (/proc): %d calls for %d samples, not checked: load average %.1f on %d "
               "CPUs (the busy thread waits for a CPU)" % (n["openat"], samples, load,
                                                          os.cpu_count()))
    t.check(0.9 <= per["rt_tgsigqueueinfo"] <= 1.2,
            "rt_tgsigqueueinfo: %d calls for %d samples (one each)"
            % (n["rt_tgsigqueueinfo"], samples))
    t.check(per["tgkill"] <= 0.2, "tgkill (a thread's liveness): %d calls for %d samples"
            % (n["tgkill"], samples))
    t.check(per["rt_sigaction"] <= 1.2, "rt_sigaction: %d calls for %d samples (one a batch)"
            % (n["rt_sigaction"], samples))
    t.check(0.9 <= per["process_vm_readv"] <= 1.6,
            "process_vm_readv: %d calls for %d samples (one each, some code bytes besides)"
            % (n["process_vm_readv"], samples))


wp.main(main)
