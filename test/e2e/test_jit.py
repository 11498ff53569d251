# SPDX-License-Identifier: MIT
"""JIT code (issue 20): Node.js and the JVM run most of their time in code they compiled into
anonymous executable memory, which no module names: the report showed it as (unknown), 57%
of a Java run. Real runs of node (v20) and java (JDK 17), each computing in one hot function
for 2-3 s:

  * without the runtime's perf map, the text report's header says what the (unknown) share
    likely is and how to name it: node's `--perf-basic-prof`, java's
    `-XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit` (both write /tmp/perf-PID.map);
  * with it, the hot function has its name in the report (csv: no column shortens it),
    module [jit] (node: "JS:*hotLoopInJs ...", java: "double Burn.hotLoopInJava(int)"), and
    no hint is given.

CPython 3.12's `-X perf` writes the same map; this machine's CPython is 3.11, which has no
such option, so it is not run here (the hint for a libpython process names it).
The /tmp/perf-PID.map files the runs write are removed.
"""
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wplib as wp  # noqa: E402

NODE_JS = """
function hotLoopInJs(n) { let s = 0; for (let i = 0; i < n; i++) s += Math.sqrt(i) * (i % 7); return s; }
const end = Date.now() + 2000; let t = 0;
while (Date.now() < end) t += hotLoopInJs(1e6);
console.log("done", t > 0);
"""

JAVA = """
public class Burn {
    static double hotLoopInJava(int n) {
        double s = 0;
        for (int i = 0; i < n; i++) s += Math.sqrt(i) * (i % 7);
        return s;
    }
    public static void main(String[] a) {
        long end = System.currentTimeMillis() + 2500; double t = 0;
        while (System.currentTimeMillis() < end) t += hotLoopInJava(1000000);
        System.out.println("done " + (t > 0));
    }
}
"""

HINT = re.compile(r"^\[WARNING\] ([\d.]+)% of the samples not blocked in a call ran in "
                  r"anonymous\s+executable memory", re.M)


def unwrap(text):
    """The header's wrapped [WARNING] lines joined, for a search of a phrase."""
    return re.sub(r"\n {10}", " ", text)


def run(t, label, argv, cwd):
    """Records argv (wall mode, 200 Hz); -> (text report, csv report, pid), or Nones."""
    prof = os.path.join(cwd, label + ".prof")
    r = wp.run([wp.cli(), "-q", "--hz=200", "-o", prof, "--"] + argv, cwd=cwd, timeout=180)
    t.check(r.returncode == 0 and "done true" in r.stdout,
            "%s: the program runs to its end under wallprof" % label, r.describe())
    if r.returncode != 0:
        return None, None, None
    rep = wp.wallprof(["--report", prof, "--top=40"])
    csv = wp.wallprof(["--report", prof, "--format=csv"])
    pid = wp.read_raw(prof).meta.get("pid")
    return unwrap(rep.stdout), csv.stdout, int(pid) if pid else None


def remove_map(pid):
    if pid:
        try:
            os.unlink("/tmp/perf-%d.map" % pid)
        except OSError:
            pass


def check_pair(t, name, plain_argv, map_argv, how, hot, cwd):
    text, _, pid = run(t, name + " without a perf map", plain_argv, cwd)
    remove_map(pid)
    if text is not None:
        m = HINT.search(text)
        t.check(m is not None and float(m.group(1)) >= 20.0 and how in text,
                "%s without a perf map: the header says the (unknown) share is likely JIT "
                "code and names %s" % (name, how), text[:3000])
    text, csv, pid = run(t, name + " with " + how, map_argv, cwd)
    t.check(pid is not None and os.path.exists("/tmp/perf-%d.map" % pid),
            "%s with %s: the runtime wrote /tmp/perf-PID.map" % (name, how))
    remove_map(pid)
    if text is not None:
        # the csv report of the same profile: the text's column may shorten a long name
        rows = [l for l in csv.splitlines() if hot in l and "[jit]" in l]
        t.check(rows, "%s with %s: %s is named, module [jit] (csv report)" % (name, how, hot),
                csv[:3000])
        t.check(HINT.search(text) is None, "%s with %s: no hint" % (name, how), text[:3000])


def main(t):
    node, java, javac = shutil.which("node"), shutil.which("java"), shutil.which("javac")
    if not (node and java and javac):
        t.fail("node, java and javac are needed (Debian: nodejs, openjdk-17-jdk-headless)")
        return
    cwd = wp.tmp_dir()
    with open(os.path.join(cwd, "burn.js"), "w") as f:
        f.write(NODE_JS)
    with open(os.path.join(cwd, "Burn.java"), "w") as f:
        f.write(JAVA)
    r = wp.run([javac, "Burn.java"], cwd=cwd, timeout=120)
    t.check(r.returncode == 0, "javac Burn.java", r.describe())
    check_pair(t, "node", [node, "burn.js"], [node, "--perf-basic-prof", "burn.js"],
               "--perf-basic-prof", "hotLoopInJs", cwd)
    check_pair(t, "java", [java, "-cp", ".", "Burn"],
               [java, "-XX:+UnlockDiagnosticVMOptions", "-XX:+DumpPerfMapAtExit", "-cp", ".",
                "Burn"], "-XX:+DumpPerfMapAtExit", "Burn.hotLoopInJava", cwd)


if __name__ == "__main__":
    wp.main(main)
