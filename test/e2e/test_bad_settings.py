# SPDX-License-Identifier: MIT
"""Every bad setting turns the agent off and leaves the program untouched.

For each bad value, exit7 (prints a few lines including its thread count, exits 7) runs under
LD_PRELOAD=libwallprof.so in an empty directory:
  * stdout is identical to an unprofiled run (so no sampler thread was started either);
  * the exit status is 7;
  * stderr is exactly one line, naming the variable, its value and what it accepts;
  * no profile (or temporary file) is written, neither at WALLPROF_OUT nor in the directory.
A good setting is run the same way as a control: it must write a profile (so the checks above
are not vacuous).
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wplib as wp  # noqa: E402

# (variable, bad value, words the complaint must contain: what the variable accepts)
BAD = [
    ("WALLPROF_MODE", "foo", ["wall", "cpu"]),
    ("WALLPROF_MODE", "", ["wall", "cpu"]),
    ("WALLPROF_MODE", "WALL", ["wall", "cpu"]),
    ("WALLPROF_HZ", "0", ["1", "10000"]),
    ("WALLPROF_HZ", "abc", ["1", "10000"]),
    ("WALLPROF_HZ", "20000", ["1", "10000"]),
    ("WALLPROF_HZ", "-5", ["1", "10000"]),
    ("WALLPROF_HZ", "100x", ["1", "10000"]),
    ("WALLPROF_HZ", "", ["1", "10000"]),
    ("WALLPROF_THREADS", "-1", ["0"]),
    ("WALLPROF_THREADS", "x", ["0"]),
    ("WALLPROF_OUT", "", ["path"]),
    ("WALLPROF_QUIET", "yes", ["1"]),
]


def run_in(d, env, args=("a b", "c")):
    return wp.run([wp.target("exit7")] + list(args), env=env, cwd=d, timeout=30)


def files_in(d):
    found = []
    for root, _, names in os.walk(d):
        found += [os.path.relpath(os.path.join(root, n), d) for n in names]
    return sorted(found)


def main(t):
    plain_dir = wp.tmp_path("plain")
    os.makedirs(plain_dir)
    plain = run_in(plain_dir, {})
    t.eq(plain.returncode, 7, "unprofiled exit7 exits 7")
    t.check("threads 1\n" in plain.stdout, "unprofiled exit7 has one thread", plain.stdout)
    t.check("samplers 0\n" in plain.stdout, "unprofiled exit7 has no sampler", plain.stdout)

    for i, (var, value, accepts) in enumerate(BAD):
        label = "%s=%r" % (var, value)
        d = wp.tmp_path("bad%d" % i)
        os.makedirs(d)
        out = os.path.join(d, "p.%p.prof")
        env = {"LD_PRELOAD": wp.agent()}
        if var != "WALLPROF_OUT":
            env["WALLPROF_OUT"] = out
        env[var] = value
        r = run_in(d, env)
        t.eq(r.stdout, plain.stdout, "[%s] stdout is identical to an unprofiled run" % label)
        t.eq(r.returncode, 7, "[%s] exit status 7" % label, r.describe())
        lines = r.stderr.splitlines()
        t.check(len(lines) == 1 and r.stderr.endswith("\n"),
                "[%s] stderr is exactly one line" % label, "stderr:\n" + r.stderr)
        line = lines[0] if lines else ""
        prefix = "wallprof: %s='%s' is not valid: " % (var, value)
        t.check(line.startswith(prefix), "[%s] the line names the variable and the value" % label,
                "expected prefix: %r\ngot: %r" % (prefix, line))
        rest = line[len(prefix):] if line.startswith(prefix) else line
        missing = [w for w in accepts if not re.search(r"\b%s\b" % re.escape(w), rest)]
        t.check(not missing, "[%s] the line says what is accepted (%s)" % (label, ", ".join(accepts)),
                "missing %r in %r" % (missing, line))
        t.check("profiling is off" in line, "[%s] the line says profiling is off" % label, line)
        t.eq(files_in(d), [], "[%s] no profile or temporary file written" % label)

    # the control: the same run with good settings writes a profile (--busy: 300 ms of CPU
    # first, so that there are samples)
    d = wp.tmp_path("good")
    os.makedirs(d)
    r = run_in(d, {"LD_PRELOAD": wp.agent(), "WALLPROF_OUT": os.path.join(d, "p.%p.prof"),
                   "WALLPROF_HZ": "1000", "WALLPROF_QUIET": "1"}, args=("--busy",))
    t.eq(r.returncode, 7, "[control] exit status 7 with good settings")
    t.eq(r.stderr, "", "[control] WALLPROF_QUIET=1: nothing on stderr")
    # the program sees only its own thread (issue 18); the agent's sampler is a task of its
    # own, a child named "wallprof" (the thread that ends the process for the program,
    # "wallprof-exit", is started only when main leaves by pthread_exit)
    t.check("threads 1\n" in r.stdout, "[control] the program sees only its own thread", r.stdout)
    t.check("samplers 1\n" in r.stdout, "[control] the agent's sampler is there", r.stdout)
    written = files_in(d)
    t.check(len(written) == 1 and re.match(r"p\.\d+\.prof$", written[0]),
            "[control] one profile written, %%p expanded: %r" % written)
    if written:
        try:
            wp.read_raw(os.path.join(d, written[0]))
            t.ok("[control] the profile is complete and well-formed")
        except ValueError as e:
            t.fail("[control] the profile is complete and well-formed", str(e))


wp.main(main)
