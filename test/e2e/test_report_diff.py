# SPDX-License-Identifier: MIT
"""--compare on report_diff, whose three functions get the CPU time its arguments say:
before 4/4/4 tenths of a second, after 7/1/4. heavy_work must come out regressed,
light_work improved and steady_work (same share) neither; two runs of the same thing must
show nothing significant. Also the differential flame graph and the errors."""

import re
import xml.etree.ElementTree as ET

import reportlib as rl
import wplib as wp

SVG = "{http://www.w3.org/2000/svg}"


def sections(text):
    """{'Improved': [row lines], 'Regressed': [...], 'Not significant': [...]}: the function
    names listed in each part of a --compare report."""
    out, cur = {}, None
    for line in text.splitlines():
        m = re.match(r"^(Improved|Regressed) \((faster|slower)\):$", line)
        if m:
            cur = out.setdefault(m.group(1), [])
            continue
        if line.startswith("Not significant"):
            cur = out.setdefault("Not significant", [])
            continue
        if line.startswith("[SUMMARY]"):
            cur = None
        if cur is None or not line.startswith("  ") or line.strip().startswith(("function", "---",
                                                                                 "(none)")):
            continue
        cur.append(line)
    return out


def names(rows):
    return [r.split()[0] for r in rows]


def delta_of(rows, name):
    for r in rows:
        f = r.split()
        if f[0] == name:
            m = re.search(r"([+-]\d+\.\d) (self|total)", r)
            return float(m.group(1)) if m else None
    return None


def rgb(fill):
    m = re.match(r"rgb\((\d+),(\d+),(\d+)\)", fill or "")
    return tuple(int(x) for x in m.groups()) if m else None


def main(t):
    exe = rl.target("report_diff")
    if not wp.require_built(exe):
        return
    before, same, after = (wp.tmp_path(x) for x in ("before.prof", "same.prof", "after.prof"))
    for path, args in ((before, ["4", "4", "4"]), (same, ["4", "4", "4"]),
                       (after, ["7", "1", "4"])):
        r = wp.wallprof(["--mode=cpu", "--hz=1000", "-q", "-o", path, "-f", "folded", "--",
                         exe] + args, timeout=120)
        t.eq(r.returncode, 0, "recording report_diff %s" % " ".join(args), r.describe())

    # -- a real change ------------------------------------------------------------------------
    r = wp.wallprof(["--compare", before, after])
    t.eq(r.returncode, 0, "--compare exits 0", r.describe())
    t.eq(rl.long_lines(r.stdout), [], "no line longer than 100 columns")
    s = sections(r.stdout)
    imp, reg = s.get("Improved", []), s.get("Regressed", [])
    t.check("light_work" in names(imp), "light_work (4 -> 1) is listed as improved", r.stdout)
    t.check("heavy_work" in names(reg), "heavy_work (4 -> 7) is listed as regressed", r.stdout)
    t.check("steady_work" not in names(imp) + names(reg),
            "steady_work (same share) is not listed as a change", r.stdout)
    d = delta_of(reg, "heavy_work")
    t.check(d is not None and abs(d - 25.0) <= 7.0,
            "heavy_work's delta ~ +25 points (33%% -> 58%%): %s" % d)
    d = delta_of(imp, "light_work")
    t.check(d is not None and abs(d + 25.0) <= 7.0,
            "light_work's delta ~ -25 points (33%% -> 8%%): %s" % d)
    m = re.search(r"^\[SUMMARY\] (\d+) improved, (\d+) regressed, (\d+) within noise", r.stdout,
                  re.M)
    t.check(m and int(m.group(1)) == len(imp) and int(m.group(2)) == len(reg),
            "[SUMMARY] counts the functions listed", r.stdout[-600:])
    head = r.stdout.split("Shares are")[0]
    t.check(re.search(r"^Before: .*before\.prof", head, re.M) and
            re.search(r"^After: +.*after\.prof", head, re.M) and
            len(re.findall(r"[\d,]+ samples, cpu mode at 1,000 Hz", head)) == 2,
            "the header names both profiles with their samples, mode and rate", head)

    # -- the same thing twice: nothing significant ------------------------------------------------
    r = wp.wallprof(["--compare", before, same])
    s = sections(r.stdout)
    t.check(r.returncode == 0 and not s.get("Improved") and not s.get("Regressed"),
            "same against same: no improvement or regression listed", r.stdout)
    t.check(re.search(r"^\[SUMMARY\] 0 improved, 0 regressed, \d+ within noise", r.stdout, re.M),
            "same against same: [SUMMARY] 0 improved, 0 regressed")
    noise = names(s.get("Not significant", []))
    t.check("heavy_work" in noise or "steady_work" in noise or "light_work" in noise or
            "within sampling noise): " in r.stdout,
            "same against same: the small moves are listed as not significant", r.stdout)

    # -- differential flame graph ----------------------------------------------------------------
    r = wp.wallprof(["--compare", before, after, "--flame-graph"])
    fills = {}
    try:
        root = ET.fromstring(r.stdout)
        for g in root.iter(SVG + "g"):
            title, rect = g.find(SVG + "title"), g.find(SVG + "rect")
            if title is not None and rect is not None and g.get("data-b") is not None:
                fills[title.text.split(" (")[0]] = (rgb(rect.get("fill")), int(g.get("data-n")),
                                                    int(g.get("data-b")))
        t.ok("--compare --flame-graph writes well-formed SVG")
    except ET.ParseError as e:
        t.fail("--compare --flame-graph writes well-formed SVG", str(e))
    h, l = fills.get("heavy_work"), fills.get("light_work")
    t.check(h and h[0] and h[0][0] > h[0][2] and h[1] > h[2],
            "heavy_work is red (more after than before)", repr(h))
    t.check(l and l[0] and l[0][2] > l[0][0] and l[1] < l[2],
            "light_work is blue (less after than before)", repr(l))

    # -- errors ----------------------------------------------------------------------------------
    r = wp.wallprof(["--compare", wp.tmp_path("missing.prof"), after])
    t.check(r.returncode == 1 and "missing.prof" in r.stderr and "No such file" in r.stderr,
            "a missing file: exit 1, the file named and why", r.describe())
    cut = wp.tmp_path("cut.prof")
    with open(before, "rb") as f, open(cut, "wb") as g:
        g.write(f.read()[:200])
    r = wp.wallprof(["--compare", before, cut])
    t.check(r.returncode == 1 and "cut.prof" in r.stderr and "truncated" in r.stderr,
            "a cut-short file: exit 1 with the reason", r.describe())
    r = wp.wallprof(["--compare", before])
    t.check(r.returncode == 2 and "two profile files" in r.stderr,
            "--compare with one file: exit 2 and what it takes", r.describe())
    r = wp.wallprof(["--compare", before, after, "--format=csv"])
    t.check(r.returncode == 2 and "--compare writes text" in r.stderr,
            "--compare --format=csv: exit 2, says what it can write", r.describe())


wp.main(main)
