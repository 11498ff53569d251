"""The agent's version script: libwallprof.so exports the wallprof_* API and, deliberately,
the libc calls it interposes; nothing else.

An LD_PRELOADed library's exported symbols join the global scope of every program it is
loaded into, so a stray export (a helper, a bundled library's function such as libunwind's
_Unwind_*) could replace the program's own. The interposers are the exception by design
(docs/design.md): they retry calls that wallprof's own signal interrupted (eintr.c), keep the
program's sigaction/signal working when it takes wallprof's signal (signals.c), publish each
thread's signal mask so a thread that blocks the signal is never sent it (sigmask.c,
threadstart.c), keep wallprof's signal out of what signalfd/sigwait/sigpending show the
program (sigwaits.c) and write the profile before exec replaces the image (agent.c). The list is exact: a new export must be
added here on purpose.
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
    "sigwaitinfo", "sigsuspend", "pause", "read", "write", "recv", "recvfrom", "recvmsg",
    "send", "sendto", "sendmsg", "accept", "accept4",
    # signals.c
    "sigaction", "signal",
    # fds.c
    "pipe2",
    # sigmask.c, threadstart.c
    "sigprocmask", "pthread_sigmask", "pthread_create",
    # sigwaits.c
    "signalfd", "sigwait", "sigpending",
    # agent.c
    "execve", "execv", "execvp", "execvpe", "fexecve", "execl", "execlp", "execle",
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
    und = wp.run(["nm", "-D", "--undefined-only", wp.agent()], timeout=30).stdout
    t.check("_Unwind_" not in r.stdout and "unw_" not in r.stdout,
            "libunwind's symbols stay out of the program's scope", und[:200])


wp.main(main)
