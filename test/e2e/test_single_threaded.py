# SPDX-License-Identifier: MIT
"""Programs that must be single-threaded (issue 18, point 1): sandboxes, user namespaces,
Chromium's zygote. The agent's sampler is a task of its own, outside the program's thread
group (docs/design.md, "Where the sampler lives"), so the program counts only the threads it
made and may do what needs a single-threaded process.

  * solo (a target of ours) counts its threads in /proc/self/task and in "Threads:" of
    /proc/self/status, enters a new user namespace, and does the same in a fork child's first
    moments: under the agent (wall and cpu mode, 1000 Hz) it prints what it prints
    unprofiled, and each process's burner is in its profile;
  * `unshare -Ur id -u` and `unshare -U true` under the command: as unprofiled;
  * headless Chromium (its sandbox on: run as an unprivileged user when the test runs as
    root) prints the page under the command as unprofiled.
On the code before the task, the agent's threads made every process multi-threaded: solo saw
3 tasks and unshare(CLONE_NEWUSER) failed with EINVAL, and so did `unshare -Ur`."""

import os
import shutil
import subprocess
import time

import wplib as wp


def solo(t):
    base = wp.run([wp.target("solo"), "0.4"], timeout=60)
    t.eq(base.returncode, 0, "unprofiled solo exits 0", base.describe())
    t.check("parent: tasks 1, Threads: 1," in base.stdout, "unprofiled, solo is one thread",
            base.stdout)
    for mode in ("wall", "cpu"):
        d = wp.tmp_path("solo-" + mode)
        os.makedirs(d, exist_ok=True)
        env = wp.preload_env(mode=mode, hz=1000, out=os.path.join(d, "solo.%p.prof"))
        r = wp.run([wp.target("solo"), "0.4"], env=env, timeout=60)
        t.eq(r.returncode, 0, "%s: solo exits 0" % mode, r.describe())
        t.eq(r.stdout, base.stdout, "%s: solo sees what it sees unprofiled (one thread, a user "
             "namespace, in the parent and in a fork child)" % mode, r.describe())
        profs = [os.path.join(d, f) for f in sorted(os.listdir(d)) if f.endswith(".prof")]
        burners = {}
        for path in profs:
            p = wp.load(path)
            for fn in ("solo_parent_burn", "solo_child_burn"):
                burners[fn] = burners.get(fn, 0) + p.through(fn).total()
        for fn, n in sorted(burners.items()):
            t.check(n >= 100, "%s: %s is in the profiles (%d samples)" % (mode, fn, n),
                    str(profs))
        t.eq(len(burners), 2, "%s: both processes left a profile" % mode, str(profs))


def unshare(t):
    exe = shutil.which("unshare")
    if not exe:
        t.fail("unshare exists (util-linux)")
        return
    for argv in (["-Ur", "id", "-u"], ["-U", "true"]):
        base = wp.run([exe] + argv, timeout=30)
        prof = wp.tmp_path("unshare-%s.prof" % argv[-1])
        r = wp.wallprof(["-q", "-o", prof, "-f", "folded", "--", exe] + argv, timeout=60)
        label = "unshare " + " ".join(argv)
        t.eq(r.returncode, base.returncode, "%s: exit status as unprofiled (%d)"
             % (label, base.returncode), r.describe())
        # the folded report goes to stdout: the program's own output to stderr
        t.check(base.stdout in r.stderr, "%s: output as unprofiled (%r)"
                % (label, base.stdout), r.describe())


def chromium(t):
    exe = shutil.which("chromium")
    if not exe:
        t.fail("chromium exists (scripts/deps installs it)")
        return
    home = wp.tmp_path("chromium-home")
    os.makedirs(home, exist_ok=True)
    os.chmod(home, 0o777)
    os.chmod(os.path.dirname(home), 0o777)
    argv = [exe, "--headless", "--disable-gpu", "--disable-breakpad", "--no-first-run",
            "--dump-dom", "data:text/html,<p>solo page</p>"]
    # As root, Chromium refuses its sandbox; as another user it starts it (the zygote checks
    # that it is single-threaded before it sandboxes itself).
    drop = (["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
            if os.geteuid() == 0 else [])
    page = "<p>solo page</p>"
    out = os.path.join(home, "chromium.prof")
    for label, pre in (("unprofiled", []),
                       ("under wallprof", [wp.cli(), "-q", "-o", out, "-f", "folded", "--"])):
        # Output to a file, not a pipe: Chromium's crash handler may outlive the browser a
        # moment, holding what it inherited. Under the agent one of its fork children used
        # to stay blocked for good (the agent's fork handler freed memory while the
        # handler's allocator was locked for the fork: forks.c, test_own_allocator); it must
        # be gone as unprofiled. Whatever is left after that is killed.
        said = os.path.join(home, "said.txt")
        with open(said, "w") as f:
            try:
                rc = subprocess.run(drop + ["env", "HOME=" + home] + pre + argv, stdout=f,
                                    stderr=subprocess.STDOUT, timeout=120).returncode
            except subprocess.TimeoutExpired:
                rc = "timeout"
        left = []
        for _ in range(50):  # the crash handler ends soon after the browser
            left = subprocess.run(["pgrep", "-f", "chrome_crashpad_handler.*" + home],
                                  capture_output=True, text=True).stdout.split()
            if not left:
                break
            time.sleep(0.1)
        subprocess.run(["pkill", "-9", "-f", "chrome_crashpad_handler.*" + home])
        with open(said, errors="replace") as f:
            text = f.read()
        t.eq(rc, 0, "%s, headless Chromium (sandboxed) exits 0" % label, text[-2000:])
        t.check(page in text, "%s, it prints the page" % label, text[-2000:])
        t.check(not left, "%s, no crash-handler process is left 5 s after (%s)"
                % (label, " ".join(left)))
        # Chromium checks who closes its descriptors: one closed under it crashes a process
        t.check("FD ownership violation" not in text,
                "%s, no process of it saw a descriptor of its closed under it" % label,
                text[-2000:])
    t.check(os.path.exists(out), "under wallprof, its profile is written", str(os.listdir(home)))


def tracer(t):
    """The sampler's task is a child of the program's: a tracer's wait for any child with
    __WALL (strace -f) would wait for it for good; the agent stops before such a wait
    (waitall.c). Without that, strace -f under the agent never ended."""
    exe = shutil.which("strace")
    if not exe:
        t.fail("strace exists (scripts/deps installs it)")
        return
    d = wp.tmp_path("tracer")
    os.makedirs(d, exist_ok=True)
    argv = [exe, "-f", "-qq", "-o", os.path.join(d, "trace.txt"), wp.target("solo"), "0.2"]
    base = wp.run(argv, timeout=60)
    env = wp.preload_env(mode="wall", hz=1000, out=os.path.join(d, "st.%p.prof"))
    r = wp.run(argv, env=env, timeout=60)
    t.eq(r.returncode, base.returncode, "strace -f under the agent ends, as unprofiled",
         r.describe())
    t.eq(r.stdout, base.stdout, "strace -f under the agent: its tracee's output as unprofiled",
         r.describe())


def main(t):
    solo(t)
    unshare(t)
    chromium(t)
    tracer(t)


wp.main(main)
