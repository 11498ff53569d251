# SPDX-License-Identifier: MIT
"""rationed: first looks at blocked threads (a /proc read each, ~50 us in the kernel) are
rationed so that thousands of idle threads cannot keep the sampler busy; a chosen thread over the
ration is counted as missed ("rationed") and gets its turn later.

  * 200 idle threads fit in the default allowance: every one is sampled, none is rationed;
  * with the ration shrunk (WALLPROF_TEST=tight-ration: 0.1% of a core), 400 idle threads:
    misses counted as rationed, some idle threads sampled (the ration refills) but not all,
    and the report names the cause;
  * either way the program runs unharmed: exit 0, the same output.
"""
import wplib as wp

SECONDS = "2.5"


def run(t, label, n, hook):
    prof = wp.tmp_path("rationed-%s.prof" % label)
    env = wp.preload_env(mode="wall", hz=100, out=prof)
    if hook:
        env["WALLPROF_TEST"] = hook
    r = wp.run([wp.target("idle_pool"), str(n), SECONDS], env=env, timeout=120)
    t.eq(r.returncode, 0, "[%s] the program exits 0" % label, r.describe())
    t.eq(r.stdout, "idle_pool: %d threads\n" % n, "[%s] its output is unchanged" % label)
    raw = wp.read_raw(prof)
    idle = [th for th in raw.threads.values() if th["name"] == "idle" and th["samples"] > 0]
    rationed = int(raw.meta.get("missed_rationed", "-1"))
    return prof, raw, len(idle), rationed


def main(t):
    _, raw, sampled, rationed = run(t, "default", 200, None)
    t.eq(rationed, 0, "[default] 200 idle threads: no sample missed as rationed")
    t.eq(sampled, 200, "[default] every idle thread sampled",
         "first looks: %s" % raw.meta.get("unsignalled"))

    prof, raw, sampled, rationed = run(t, "tight", 400, "tight-ration")
    t.check(rationed > 0, "[tight] samples missed as rationed (%d)" % rationed)
    t.check(0 < sampled < 400, "[tight] some idle threads sampled, not all (%d of 400)" % sampled,
            "first looks: %s" % raw.meta.get("unsignalled"))
    rep = wp.wallprof(["--report", prof, "--format=text"], timeout=60)
    line = next((ln for ln in rep.stdout.splitlines() if "missed samples:" in ln), "")
    t.check("rationed" in line, "[tight] the report gives the cause: %s" % line.strip())


wp.main(main)
