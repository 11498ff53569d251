# SPDX-License-Identifier: MIT
"""--format=pprof, read back by the real consumer: Debian's `go tool pprof`.

Records test/targets/export_threads.c (threads exp-main, exp-alpha with an inlined mix(),
exp-beta splitting its time between beta_hot and gamma_hot, and a sleeper) under the agent,
exports it, and checks that pprof's views agree with wallprof's own folded report:
  -raw        sample/period types, period, duration, mappings (main first, build-ids, ranges),
              an inline Location (mix, then alpha_hot in one Location)
  -top        every function's flat share by samples within 1 point of the folded leaf
              shares, totals equal (samples, and nanoseconds = the stacks' weight_ns)
  -tags       the thread names (one with quotes, a backslash, control and invalid UTF-8
              bytes) and tids, with the same sample counts as the per-thread folded report
  -traces     the expected call chains, each under its own thread's labels, "mix (inline)"
  -lines      mix's samples at lines inside mix, marked inline
  -diff_base  a second run with beta/gamma swapped: gamma_hot grew, beta_hot shrank, by
              exactly the folded difference
plus the wire format itself (decoded here with a small protobuf reader): a gzip stream,
string_table[0] == "", no duplicate strings, valid UTF-8, unique ids, every reference
resolving, one Location per (pc, role); the record-time `-f pprof` output is the same bytes
as a later --report; --thread filters; cpu mode says cpu/nanoseconds.

Needs `go` (apt-get install golang-go: ./scripts/deps). pprof never fetches anything: it runs
with -symbolize=none, GOTOOLCHAIN=local, GOPROXY=off and a private HOME/GOCACHE.
"""

import collections
import gzip
import os
import re
import shutil
import sys

import wplib as wp

DEPS = "run ./scripts/deps (it installs Debian's golang-go for `go tool pprof`)"
WEIRD = 'w"\\\t\x01\ufffd\u00e9'  # what the sleeper's name w"\<TAB><01><ff>é decodes to
SRC = os.path.join(wp.ROOT, "test", "targets", "export_threads.c")


# ------------------------------------------------------------------------------------------
# A minimal protobuf reader, to check the encoding independently of pprof.

def varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7f) << shift
        shift += 7
        if not c & 0x80:
            return v, i


def fields(b):
    """[(field, wire type, value)] of one message; LEN values as bytes."""
    out, i = [], 0
    while i < len(b):
        key, i = varint(b, i)
        f, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 2:
            n, i = varint(b, i)
            v = b[i:i + n]
            if len(v) != n:
                raise ValueError("truncated field %d" % f)
            i += n
        else:
            raise ValueError("unexpected wire type %d (field %d)" % (wt, f))
        out.append((f, wt, v))
    return out


def packed(v, wt):
    if wt == 0:
        return [v]
    vals, i = [], 0
    while i < len(v):
        x, i = varint(v, i)
        vals.append(x)
    return vals


def msg(b):
    """{field: [values]}"""
    d = collections.defaultdict(list)
    for f, wt, v in fields(b):
        d[f].append((wt, v))
    return d


def one(d, f, default=0):
    return d[f][-1][1] if d.get(f) else default


def decode_profile(data):
    top = msg(data)
    strings = [v for _, v in top[6]]
    samples = []
    for _, s in top[2]:
        m = msg(s)
        locs = [x for wt, v in m[1] for x in packed(v, wt)]
        vals = [x for wt, v in m[2] for x in packed(v, wt)]
        labels = []
        for _, l in m[3]:
            lm = msg(l)
            labels.append((one(lm, 1), one(lm, 2), one(lm, 3)))
        samples.append(dict(locs=locs, values=vals, labels=labels))
    mappings = []
    for _, b in top[3]:
        m = msg(b)
        mappings.append(dict(id=one(m, 1), start=one(m, 2), limit=one(m, 3), offset=one(m, 4),
                             filename=one(m, 5), build_id=one(m, 6),
                             flags=[one(m, f) for f in (7, 8, 9, 10)]))
    locations = []
    for _, b in top[4]:
        m = msg(b)
        lines = []
        for _, lb in m[4]:
            lm = msg(lb)
            lines.append((one(lm, 1), one(lm, 2)))
        locations.append(dict(id=one(m, 1), mapping=one(m, 2), address=one(m, 3), lines=lines))
    functions = []
    for _, b in top[5]:
        m = msg(b)
        functions.append(dict(id=one(m, 1), name=one(m, 2), system_name=one(m, 3),
                              filename=one(m, 4), start_line=one(m, 5)))
    types = []
    for _, b in top[1]:
        m = msg(b)
        types.append((one(m, 1), one(m, 2)))
    pt = msg(one(top, 11, b"")) if top.get(11) else {}
    return dict(strings=strings, samples=samples, mappings=mappings, locations=locations,
                functions=functions, sample_types=types,
                period_type=(one(pt, 1), one(pt, 2)) if pt else None, period=one(top, 12),
                time_nanos=one(top, 9), duration_nanos=one(top, 10),
                default_sample_type=one(top, 14), comments=[v for _, v in top[13]])


def agent_pc(raw):
    """pc -> whether it lies in libwallprof.so (the agent), from the raw module map."""
    spans = [(m["start"], m["end"]) for m in raw.modules
             if os.path.basename(m["path"]) == "libwallprof.so"]
    return lambda pc: any(lo <= pc < hi for lo, hi in spans)


def check_wire(t, data, raw, what):
    """Structural checks of one decoded profile against the raw .prof it came from."""
    t.check(data[:2] == b"\x1f\x8b", "%s: gzip magic" % what)
    try:
        pb = gzip.decompress(data)
        p = decode_profile(pb)
    except Exception as e:  # noqa: BLE001 - any decoding problem is the failure
        t.fail("%s: decodes as gzip + protobuf" % what, repr(e))
        return None
    s = p["strings"]
    t.check(s and s[0] == b"", "%s: string_table[0] is empty" % what)
    dups = [x for x, n in collections.Counter(s).items() if n > 1]
    t.check(not dups, "%s: string table deduplicated (%d strings)" % (what, len(s)),
            lambda: "duplicates: %r" % dups[:10])
    bad = []
    for x in s:
        try:
            x.decode("utf-8")
        except UnicodeDecodeError:
            bad.append(x)
    t.check(not bad, "%s: every string is valid UTF-8" % what, lambda: repr(bad[:5]))
    S = [x.decode("utf-8", "replace") for x in s]

    def ids_ok(items, name):
        ids = [x["id"] for x in items]
        t.check(ids and 0 not in ids and len(set(ids)) == len(ids),
                "%s: %d %s with unique nonzero ids" % (what, len(ids), name))
        return {x["id"]: x for x in items}

    maps = ids_ok(p["mappings"], "mappings")
    locs = ids_ok(p["locations"], "locations")
    funcs = ids_ok(p["functions"], "functions")
    idx_ok = all(0 <= i < len(s) for f in p["functions"] for i in
                 (f["name"], f["system_name"], f["filename"]))
    idx_ok &= all(0 <= m[k] < len(s) for m in p["mappings"] for k in ("filename", "build_id"))
    t.check(idx_ok, "%s: every string index is in the table" % what)
    t.check(all(fid in funcs for l in p["locations"] for fid, _ in l["lines"]) and
            all(l["mapping"] == 0 or l["mapping"] in maps for l in p["locations"]) and
            all(lid in locs for smp in p["samples"] for lid in smp["locs"]),
            "%s: every function, mapping and location reference resolves" % what)
    t.check(all(l["mapping"] == 0 or maps[l["mapping"]]["start"] <= l["address"] <
                maps[l["mapping"]]["limit"] for l in p["locations"]),
            "%s: every location's address lies in its mapping" % what)
    t.check(all(l["lines"] for l in p["locations"]), "%s: every location has lines" % what)

    # Mappings = the module map, the main executable first.
    mods = raw.modules
    main = [m for m in mods if m["flags"] & 0x1]
    t.check(len(p["mappings"]) == len(mods), "%s: one mapping per module (%d)" % (what, len(mods)))
    if main and p["mappings"]:
        m0 = p["mappings"][0]
        t.check(S[m0["filename"]] == main[0]["path"] and m0["start"] == main[0]["start"] and
                m0["limit"] == main[0]["end"] and m0["offset"] == main[0]["offset"] and
                S[m0["build_id"]] == main[0]["build_id"] and main[0]["build_id"],
                "%s: mapping[0] is the main executable, with its range, offset, build-id" % what,
                lambda: "%r vs %r" % (m0, main[0]))
    t.check(all(m["flags"] == [1, 1, 1, 1] for m in p["mappings"]),
            "%s: mappings say functions, files, lines and inlines are resolved" % what)
    by_start = {(m["start"], m["end"]): m for m in mods}
    t.check(all((m["start"], m["limit"]) in by_start and
                by_start[(m["start"], m["limit"])]["path"] == S[m["filename"]]
                for m in p["mappings"]), "%s: every mapping matches a module" % what)

    # One location per distinct (pc, leaf-or-return-address), the agent's own frames (its
    # EINTR-retrying wrappers) left out as in every other report.
    agent = agent_pc(raw)
    t.check(not any(agent(l["address"]) for l in p["locations"]),
            "%s: no location in libwallprof.so (the agent's frames are left out)" % what)
    want = set()
    for st in raw.stacks:
        if st["count"]:
            for j, pc in enumerate(st["pcs"]):
                if not agent(pc):
                    want.add((pc, j == 0))
    t.eq(len(p["locations"]), len(want), "%s: one location per distinct pc and role" % what)
    t.check({l["address"] for l in p["locations"]} == {pc for pc, _ in want},
            "%s: location addresses are the profile's pcs" % what)
    # Samples: the stacks, leaf first, values count and weight_ns (a stack whose waits split
    # over several objects is several samples: their values add up to the stack's).
    by_stack = collections.Counter()
    for st in raw.stacks:
        pcs = tuple(pc for pc in st["pcs"] if not agent(pc))
        if st["count"] and pcs:
            by_stack[(pcs, "count")] += st["count"]
            by_stack[(pcs, "ns")] += st["weight_ns"]
    got = collections.Counter()
    for smp in p["samples"]:
        pcs = tuple(locs[i]["address"] for i in smp["locs"])
        got[(pcs, "count")] += smp["values"][0]
        got[(pcs, "ns")] += smp["values"][1]
    t.check(got == by_stack, "%s: samples are the stacks (leaf-first pcs, count, weight_ns)" % what,
            lambda: "%d samples vs %d stacks" % (len(p["samples"]), len(raw.stacks)))
    return p, S


# ------------------------------------------------------------------------------------------
# go tool pprof

def find_go():
    go = shutil.which("go")
    if not go:
        for cand in sorted(os.listdir("/usr/lib")) if os.path.isdir("/usr/lib") else []:
            path = os.path.join("/usr/lib", cand, "bin", "go")
            if cand.startswith("go") and os.path.exists(path):
                go = path
    return go


class Pprof:
    def __init__(self, t, go):
        self.t = t
        self.go = go
        home = wp.tmp_path("gohome")
        os.makedirs(home, exist_ok=True)
        self.env = {"HOME": home, "GOCACHE": os.path.join(home, "cache"),
                    "GOPATH": os.path.join(home, "gopath"), "GOTOOLCHAIN": "local",
                    "GOPROXY": "off", "GOFLAGS": "", "GOTELEMETRY": "off",
                    "PPROF_TMPDIR": home, "PPROF_BINARY_PATH": home, "XDG_CONFIG_HOME": home}

    def run(self, *args, symbolize="none"):
        argv = [self.go, "tool", "pprof"]
        if symbolize:
            argv.append("-symbolize=" + symbolize)
        argv += list(args)
        r = wp.run(argv, env=self.env, timeout=120)
        self.t.check(r.returncode == 0, "go tool pprof %s" % " ".join(args[:-1]), r.describe)
        return r


def parse_top(text):
    """-top rows -> {name: (flat, flat%)} (name without " (inline)")."""
    rows = {}
    for line in text.splitlines():
        m = re.match(r"^\s*(-?[\d.]+)(\S*)\s+(-?[\d.]+)%\s+(-?[\d.]+)%\s+(-?[\d.]+)(\S*)\s+"
                     r"(-?[\d.]+)%\s+(.*)$", line)
        if m:
            name = m.group(8)
            if name.endswith(" (inline)"):
                name = name[:-len(" (inline)")]
            flat = float(m.group(1))
            prev = rows.get(name, (0.0, 0.0))
            rows[name] = (prev[0] + flat, prev[1] + float(m.group(3)))
    return rows


def parse_total(text):
    m = re.search(r"of (-?[\d.]+)(\w*) total", text)
    return (float(m.group(1)), m.group(2)) if m else (None, None)


def parse_tags(text):
    """-tags -> {key: {value: count}}"""
    tags, key = {}, None
    for line in text.splitlines():
        m = re.match(r"^ ?(\S+): Total ", line)
        if m:
            key = m.group(1)
            tags[key] = {}
            continue
        m = re.match(r"^\s+(-?[\d.]+)\w* \(\s*[\d.]+%\): ?(.*)$", line)
        if m and key:
            tags[key][squash(m.group(2))] = float(m.group(1))
    return tags


def squash(s):
    """s without whitespace: -tags prints through a tabwriter, which turns a TAB inside a
    label into column padding."""
    return re.sub(r"\s+", "", s)


def parse_traces(text):
    """-traces -> [(labels dict, value, [frames leaf first])]"""
    out = []
    for block in text.split("-----------+-------------------------------------------------------"):
        labels, frames, value = {}, [], None
        for line in block.splitlines():
            m = re.match(r"^\s*(\S+):  (.*)$", line)
            if m and value is None:
                labels[m.group(1)] = m.group(2).strip("[]")
                continue
            m = re.match(r"^\s+(-?[\d.]+\w*)\s+(\S.*)$", line)
            if m and value is None:
                value = m.group(1)
                frames.append(m.group(2))
                continue
            if value is not None and line.strip():
                frames.append(line.strip())
        if frames:
            out.append((labels, value, frames))
    return out


def mix_lines():
    """The source lines of mix() in export_threads.c."""
    with open(SRC) as f:
        lines = f.read().splitlines()
    start = next(i for i, l in enumerate(lines, 1) if re.search(r"\bmix\(uint64_t x\)", l))
    end = next(i for i, l in enumerate(lines, 1) if i > start and l.startswith("}"))
    return start, end


# ------------------------------------------------------------------------------------------

def record(t, name, args, mode="wall", hz=1000, fmt="pprof"):
    prof = wp.tmp_path(name + ".prof")
    cmd = [os.environ.get("EXPORT_TARGET") or wp.target("export_target")] + list(args)
    r = wp.run([wp.cli(), "--mode=%s" % mode, "--hz=%d" % hz, "-o", prof, "-q", "-f", fmt,
                "--"] + cmd, timeout=120, text=False)
    ok = t.check(r.returncode == 0, "record %s (%s)" % (name, " ".join(args)),
                 lambda: r.stderr.decode("utf-8", "replace")[-2000:])
    return prof, (r.stdout if ok else b"")


def export(t, prof, out, *extra):
    r = wp.wallprof(["--report", prof, "--format=pprof", "--report-output", out] + list(extra),
                    timeout=120)
    t.check(r.returncode == 0 and os.path.getsize(out) > 0,
            "wallprof --report %s --format=pprof %s" % (os.path.basename(prof), " ".join(extra)),
            r.describe)
    with open(out, "rb") as f:
        return f.read()


def go_pprof(t):
    """`go tool pprof` as a Pprof; None, a failed check, when go is missing."""
    go = find_go()
    if not go:
        t.fail("go is missing: " + DEPS)
        return None
    return Pprof(t, go)


def main(t):
    target = os.environ.get("EXPORT_TARGET") or wp.target("export_target")
    if not wp.require_built(target):
        return
    pp = go_pprof(t)
    if not pp:
        return
    vr = wp.run([pp.go, "version"], env=pp.env, timeout=60)
    if not t.check(vr.returncode == 0, "go works (%s)" % vr.stdout.strip(), vr.describe):
        return

    # Run A: beta 75% / gamma 25%, the sleeper with the awkward name. Recorded with -f pprof
    # (the record-time path), then exported again with --report: the same bytes.
    a_prof, a_stdout = record(t, "a", ["--seconds=1.2", "--beta-share=75", "--weird-name"])
    a_pb = wp.tmp_path("a.pb.gz")
    a_data = export(t, a_prof, a_pb)
    t.check(a_stdout == a_data, "record-time -f pprof output equals --report's",
            "%d vs %d bytes" % (len(a_stdout), len(a_data)))
    raw_a = wp.read_raw(a_prof)
    # The sleeper calls nanosleep, which the agent interposes: its raw stacks pass through
    # libwallprof.so, so the check that pprof leaves the agent's frames out means something.
    in_agent = agent_pc(raw_a)
    t.check(any(in_agent(pc) for st in raw_a.stacks for pc in st["pcs"]),
            "run A: the raw stacks have frames in libwallprof.so (the nanosleep wrapper)")
    res = check_wire(t, a_data, raw_a, "run A")
    if not res:
        return
    pa, S = res

    folded = wp.load(a_prof)
    total = folded.total()
    weight_total = sum(s["weight_ns"] for s in raw_a.stacks)

    # -raw: types, period, duration, comments, the inline location
    r = pp.run("-raw", a_pb)
    raw_text = r.stdout
    t.check("PeriodType: wall nanoseconds" in raw_text, "-raw: period type wall nanoseconds",
            raw_text[:600])
    t.check(re.search(r"^Period: 1000000$", raw_text, re.M), "-raw: period 1000000 ns (1000 Hz)")
    t.check(re.search(r"^\s*samples/count wall/nanoseconds\[dflt\]", raw_text, re.M),
            "-raw: sample types samples/count, wall/nanoseconds (the default)")
    dur = float(raw_a.meta.get("duration_ns", "0")) / 1e9
    m = re.search(r"^Duration: ([\d.]+)", raw_text, re.M)
    t.check(m and abs(float(m.group(1)) - dur) < 0.011, "-raw: duration %.2f s" % dur,
            m.group(0) if m else raw_text[:400])
    t.eq(pa["time_nanos"], int(raw_a.meta.get("start_unix_ns", "0")), "time_nanos = start_unix_ns")
    t.check(any("command:" in S[i] and "export_target" in S[i] for i in pa["comments"]),
            "comments name the command")
    lo, hi = mix_lines()
    inline_loc = re.search(r"^\s+\d+: 0x[0-9a-f]+ M=1 mix \S+export_threads\.c:(\d+) s=0\n"
                           r"\s+alpha_hot \S+export_threads\.c:\d+ s=0$", raw_text, re.M)
    t.check(inline_loc and lo <= int(inline_loc.group(1)) <= hi,
            "-raw: a Location holds mix (line in %d-%d) then alpha_hot: the inline chain, "
            "innermost first" % (lo, hi),
            lambda: raw_text[raw_text.find("Locations"):][:1500])

    # -top by samples: flat shares = folded leaf shares (within 1 point); totals equal.
    r = pp.run("-top", "-nodecount=1000", "-nodefraction=0", "-sample_index=samples", a_pb)
    top = parse_top(r.stdout)
    ptotal, _ = parse_total(r.stdout)
    t.eq(ptotal, float(total), "-top: total samples = the folded report's")
    leaf = folded.self_counts()
    worst = []
    for name in set(leaf) | {n for n, v in top.items() if v[0]}:
        ours = 100.0 * leaf.get(name, 0) / total
        theirs = top.get(name, (0, 0))[1]
        worst.append((abs(ours - theirs), name, ours, theirs))
    worst.sort(reverse=True)
    t.check(worst and worst[0][0] <= 1.0,
            "-top: every function's flat%% within 1 point of the folded leaf share "
            "(worst %s: %.2f%% vs %.2f%%)" % (worst[0][1], worst[0][2], worst[0][3]),
            lambda: r.stdout + "\n" + folded.top(15))
    for fn in ("mix", "beta_hot", "gamma_hot", "clock_nanosleep"):
        t.check(top.get(fn, (0, 0))[0] > 0, "-top lists %s" % fn, r.stdout)
    r = pp.run("-top", "-sample_index=wall", "-unit=ns", a_pb)
    wtotal, unit = parse_total(r.stdout)
    t.check(wtotal == float(weight_total) and unit == "ns",
            "-top -sample_index=wall: total %d ns = the stacks' weight_ns" % weight_total,
            r.stdout[:800])

    # Symbolization stays ours even when pprof is allowed to symbolize (default mode).
    r = pp.run("-top", "-sample_index=samples", a_pb, symbolize=None)
    t.check("mix" in r.stdout and "beta_hot" in r.stdout and "0x" not in r.stdout,
            "default symbolization keeps our names (no re-symbolizing, no raw addresses)",
            r.stdout + r.stderr)

    # -tags: thread names and tids, sample counts as in the per-thread folded report
    r = pp.run("-tags", "-sample_index=samples", a_pb)
    tags = parse_tags(r.stdout)
    by_thread = {squash(n): v for n, v in folded.by_name().items()}
    names = tags.get("thread", {})
    t.check(set(names) == set(by_thread) and
            all(names[n] == by_thread[n] for n in by_thread),
            "-tags: thread = the threads with their sample counts (%s)" %
            ", ".join(sorted(repr(n) for n in by_thread)),
            lambda: "pprof: %r\nfolded: %r\n%s" % (names, by_thread, r.stdout))
    for n in ("exp-main", "exp-alpha", "exp-beta", WEIRD):
        t.check(squash(n) in names, "-tags lists thread %r" % n, r.stdout)
    tids = {str(tid) for (_, tid) in folded.threads()}
    t.check(set(tags.get("thread_id", {})) == tids, "-tags: thread_id = the tids %s" %
            sorted(tids), r.stdout)
    states = tags.get("state", {})
    # runnable: a sample's share spent waiting for a CPU (schedstat), there when the machine
    # is loaded enough that the target's threads queue for one
    t.check({"running", "waiting"} <= set(states) <= {"running", "waiting", "runnable"} and
            sum(states.values()) == total,
            "-tags: state running/waiting (and runnable) covers every sample", r.stdout)

    # -traces: the call chains, under the right thread, with the inline frame marked
    r = pp.run("-traces", "-sample_index=samples", a_pb)
    traces = parse_traces(r.stdout)
    t.check(len(traces) >= 5, "-traces: %d traces" % len(traces), r.stdout[:1000])

    def has_chain(thread, chain):
        for labels, _, frames in traces:
            if labels.get("thread") != thread:
                continue
            for i in range(len(frames) - len(chain) + 1):
                if frames[i:i + len(chain)] == chain:
                    return True
        return False

    for thread, chain in [
            ("exp-alpha", ["mix (inline)", "alpha_hot", "alpha_loop", "alpha_thread",
                           "start_thread"]),
            ("exp-beta", ["beta_hot", "beta_loop", "beta_thread", "start_thread"]),
            ("exp-beta", ["gamma_hot", "beta_loop", "beta_thread", "start_thread"]),
            ("exp-main", ["main"]),
            (WEIRD, ["sleep_thread", "start_thread"])]:
        t.check(has_chain(thread, chain), "-traces: %s has %s" % (thread, " <- ".join(chain)),
                r.stdout[:3000])
    leaked = [lab.get("thread") for lab, _, fr in traces if "alpha_hot" in fr and
              lab.get("thread") != "exp-alpha"]
    t.check(not leaked, "-traces: alpha_hot only under exp-alpha", repr(leaked))
    t.check(all("thread_id" in lab and "thread" in lab for lab, _, _ in traces),
            "-traces: every trace carries thread and thread_id labels")

    # -lines: mix's samples sit at lines of mix, marked inline
    r = pp.run("-top", "-lines", "-nodecount=1000", "-nodefraction=0", "-sample_index=samples",
               a_pb)
    mix_rows = re.findall(r"\smix \S*export_threads\.c:(\d+) \(inline\)$", r.stdout, re.M)
    t.check(mix_rows and all(lo <= int(x) <= hi for x in mix_rows),
            "-lines: mix at export_threads.c lines %s, all inside mix (%d-%d), inline" %
            (",".join(sorted(set(mix_rows))), lo, hi), r.stdout)

    # --thread filter
    b_only = wp.tmp_path("beta-only.pb.gz")
    export(t, a_prof, b_only, "--thread=exp-beta")
    r = pp.run("-tags", "-sample_index=samples", b_only)
    tags_b = parse_tags(r.stdout)
    t.check(set(tags_b.get("thread", {})) == {"exp-beta"} and
            tags_b["thread"]["exp-beta"] == by_thread["exp-beta"],
            "--thread=exp-beta: only that thread, all its samples", r.stdout)

    # Run B: beta 25% / gamma 75%. -diff_base: gamma grew, beta shrank, by exactly the folded
    # difference.
    b_prof, _ = record(t, "b", ["--seconds=1.2", "--beta-share=25"])
    b_pb = wp.tmp_path("b.pb.gz")
    b_data = export(t, b_prof, b_pb)
    check_wire(t, b_data, wp.read_raw(b_prof), "run B")
    folded_b = wp.load(b_prof)
    r = pp.run("-top", "-nodecount=1000", "-nodefraction=0", "-sample_index=samples",
               "-diff_base=" + a_pb, b_pb)
    diff = parse_top(r.stdout)
    leaf_b = folded_b.self_counts()
    folded_diff = {fn: leaf_b.get(fn, 0) - leaf.get(fn, 0) for fn in set(leaf) | set(leaf_b)}
    wrong = {fn: (diff.get(fn, (0, 0))[0], d) for fn, d in folded_diff.items()
             if diff.get(fn, (0, 0))[0] != d}
    t.check(not wrong, "-diff_base: every function's flat change = folded B - A (gamma_hot %+d, "
            "beta_hot %+d)" % (folded_diff.get("gamma_hot", 0), folded_diff.get("beta_hot", 0)),
            lambda: "pprof vs folded: %r\n%s\nfolded stacks ending there (A, B):\n%s" % (
                wrong, r.stdout, "\n".join(
                    "%s %s %r %d" % (run, n, ";".join(f), v)
                    for run, prof in (("A", folded), ("B", folded_b))
                    for (n, _, f), v in prof.samples.items() if f and f[-1] in wrong)))
    # The function that got heavier: within exp-beta (--thread), normalized (-normalize
    # scales the base to the same total), so a loaded machine giving the threads different
    # sample counts in the two runs does not matter.
    a_beta, b_beta = wp.tmp_path("a-beta.pb.gz"), wp.tmp_path("b-beta.pb.gz")
    export(t, a_prof, a_beta, "--thread=exp-beta")
    export(t, b_prof, b_beta, "--thread=exp-beta")
    r = pp.run("-top", "-nodefraction=0", "-sample_index=samples", "-normalize",
               "-diff_base=" + a_beta, b_beta)
    nd = parse_top(r.stdout)
    t.check(nd and max(nd, key=lambda k: nd[k][0]) == "gamma_hot" and nd["gamma_hot"][0] > 0,
            "-diff_base (exp-beta, normalized): gamma_hot got heavier, the most", r.stdout)
    t.check(nd.get("beta_hot", (0, 0))[0] < 0 and
            min(nd, key=lambda k: nd[k][0]) == "beta_hot",
            "-diff_base (exp-beta, normalized): beta_hot got lighter, the most", r.stdout)

    # cpu mode: the time type is cpu
    c_prof, _ = record(t, "c", ["--seconds=0.6"], mode="cpu", hz=500)
    c_pb = wp.tmp_path("c.pb.gz")
    c_data = export(t, c_prof, c_pb)
    check_wire(t, c_data, wp.read_raw(c_prof), "cpu run")
    r = pp.run("-raw", c_pb)
    t.check("PeriodType: cpu nanoseconds" in r.stdout and "Period: 2000000" in r.stdout and
            re.search(r"samples/count cpu/nanoseconds\[dflt\]", r.stdout),
            "cpu mode: period type cpu nanoseconds, period 2 ms, sample type cpu/nanoseconds",
            r.stdout[:600])
    r = pp.run("-top", "-sample_index=samples", c_pb)
    ctop = parse_top(r.stdout)
    t.check(ctop.get("mix", (0, 0))[1] > 20 and "clock_nanosleep" not in ctop,
            "cpu mode: mix is hot, the sleeper is absent", r.stdout)
    r = pp.run("-tags", c_pb)
    t.check("state" not in parse_tags(r.stdout), "cpu mode: no running/waiting state label",
            r.stdout)


if __name__ == "__main__":
    wp.main(main)
