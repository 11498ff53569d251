# SPDX-License-Identifier: MIT
"""The agent's version script: libwallprof.so exports the wallprof_* API and, deliberately,
the libc calls it interposes; nothing else.

An LD_PRELOADed library's exported symbols join the global scope of every program it is
loaded into, so a stray export (a helper, a bundled library's function such as libunwind's
_Unwind_*) could replace the program's own. The interposers are the exception by design
(docs/design.md): they retry calls that wallprof's own signal interrupted (eintr.c) and finish
the transfers it cut short (transfers.c), keep the program's sigaction/signal working when it
takes wallprof's signal (signals.c), publish each thread's signal mask so a thread that blocks
the signal is never sent it (sigmask.c, threadstart.c), keep wallprof's signal out of what
signalfd/sigwait/sigpending show the program (sigwaits.c) and write the profile before exec
replaces the image (exec.c) or _exit ends the process (exit.c), notice the main thread's pthread_exit (agent.c)
and publish the mutex a condition waiter waits with (condwait.c). The list is exact: a new export must be
added here on purpose.

What it imports is checked the same way: libc only. libunwind is dlopen'ed RTLD_LOCAL by
unwind.c (docs/design.md), so neither it nor any other library is a link-time dependency, and
no symbol of the agent is bound through the program's scope to someone else's definition:
an imported unw_* or _Unwind_* would be the program's libunwind or libgcc_s, not ours.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wplib as wp  # noqa: E402

API = {"wallprof_version", "wallprof_start", "wallprof_stop", "wallprof_flush",
       "wallprof_thread_name", "wallprof_thread_exclude"}
INTERPOSED = {
    # eintr.c
    "nanosleep", "clock_nanosleep", "sleep", "usleep", "poll", "ppoll", "select", "pselect",
    "epoll_wait", "epoll_pwait", "sem_timedwait", "sem_clockwait", "sigtimedwait",
    "sigwaitinfo", "sigsuspend", "pause", "read", "accept", "accept4",
    # transfers.c
    "write", "writev", "pwritev2", "pwritev64v2", "send", "sendto", "sendmsg", "recv",
    "recvfrom", "recvmsg",
    # signals.c
    "sigaction", "signal",
    # fds.c
    "pipe2",
    # sigmask.c, threadstart.c
    "sigprocmask", "pthread_sigmask", "pthread_create",
    # sigwaits.c
    "signalfd", "sigwait", "sigpending",
    # exec.c
    "execve", "execv", "execvp", "execvpe", "fexecve", "execl", "execlp", "execle",
    "_exit", "_Exit",
    # waitall.c
    "waitpid", "wait4", "waitid", "fork",
    # agent.c
    "pthread_exit",
    # condwait.c
    "pthread_cond_wait", "pthread_cond_timedwait", "pthread_cond_clockwait",
}


def main(t):
    r = wp.run(["nm", "-D", "--defined-only", wp.agent()], timeout=30)
    if not t.eq(r.returncode, 0, "nm -D --defined-only libwallprof.so runs", r.describe()):
        return
    names = set()
    for line in r.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 2:
            names.add(parts[-1].split("@")[0])
    t.eq(sorted(API - names), [], "the whole public API is exported")
    t.eq(sorted(INTERPOSED - names), [], "every interposer is exported")
    stray = sorted(names - API - INTERPOSED)
    t.eq(stray, [], "nothing else is exported (no libunwind, no helpers)")
    check_imports(t)


# What a shared object's start files may leave undefined (weak, resolved to nothing).
CRT_WEAK = {"_ITM_deregisterTMCloneTable", "_ITM_registerTMCloneTable", "__gmon_start__"}
UNWIND_PREFIXES = ("_U", "unw_", "_Unwind_")


def check_imports(t):
    r = wp.run(["nm", "-D", "--undefined-only", wp.agent()], timeout=30)
    if not t.eq(r.returncode, 0, "nm -D --undefined-only libwallprof.so runs", r.describe()):
        return
    imports = [line.split()[-1] for line in r.stdout.splitlines() if line.split()]
    t.check(len(imports) > 20, "the agent's imports are listed", r.stdout[:300])
    not_libc = sorted(s for s in imports if "@GLIBC_" not in s and s not in CRT_WEAK)
    t.eq(not_libc, [], "every symbol the agent imports is a versioned glibc one")
    unwind = sorted(s for s in imports if s.split("@")[0].startswith(UNWIND_PREFIXES))
    t.eq(unwind, [], "no libunwind or _Unwind_ symbol is imported (libunwind is dlopen'ed "
         "RTLD_LOCAL)")
    d = wp.run(["readelf", "-d", wp.agent()], timeout=30)
    needed = [line.split("[", 1)[1].rstrip("]") for line in d.stdout.splitlines()
              if "(NEEDED)" in line]
    t.eq(needed, ["libc.so.6"], "libc is the agent's only link-time dependency", d.stdout[:400])


wp.main(main)
