# SPDX-License-Identifier: MIT
"""Helpers for the report tests (test_report_*.py): where the report_* targets are, and a
parser for wallprof's text report (flat profile, call graph, thread sections), so that tests
can compare what the report says with what the targets and the folded output know.

The parser is strict on purpose: a row that does not parse is an error, so a broken layout
fails the tests instead of silently matching nothing."""

import os
import re

import wplib as wp


def target(name):
    """Path of a report_* target (built by test/meson.build into <build>/test)."""
    return os.path.join(wp.build_dir(), "test", name)


def num(s):
    """'14,293' -> 14293."""
    return int(s.replace(",", ""))


_BANNER = re.compile(r"^={20,}$")

_FLAT_ROW = re.compile(
    r"^  +(\d+\.\d)%  +(\d+\.\d)-(\d+\.\d)  +([\d,]+)  +(\d+\.\d)%  +(\S(?:.*?\S)?)  +(\S+)  +(\S+)$")
_OTHER_ROW = re.compile(r"^  +(\d+\.\d)%  +([\d,]+)  +\(other - ([\d,]+) functions\)$")
_TOTAL_ROW = re.compile(r"^  +(\d+\.\d)%  +([\d,]+)  +([\d,]+) functions with samples, "
                        r"([\d,]+) as leaf$")
_GRAPH_HEAD = re.compile(r"^\[(\d+)\] (.+?)  (\d+\.\d)% total, (\d+\.\d)% self  \((.*)\)$")
_GRAPH_LINK = re.compile(r"^      (callers:|callees:| {8}) {3}( *\d+\.\d)%  +([\d,]+)  (.+)$")
_GRAPH_MORE = re.compile(r"^ +(\d+\.\d)%  +([\d,]+)  \((\d+) more\)$")
_THREAD_HEAD = re.compile(r"^(.+) \(tid (\d+)(, exited)?\): ([\d,]+) samples?, (\d+\.\d)% of the "
                          r"process(?:; running (\d+\.\d)%, waiting (\d+\.\d)%)?$")
_THREAD_ROW = re.compile(r"^    +(\d+\.\d)%  +([\d,]+)  (\S.*?)  +(\S+)  +(\S+)$")


class ParseError(Exception):
    pass


class FlatRow:
    def __init__(self, m):
        self.self_pct = float(m.group(1))
        self.ci = (float(m.group(2)), float(m.group(3)))
        self.samples = num(m.group(4))
        self.total_pct = float(m.group(5))
        self.name = m.group(6)
        self.source = m.group(7)
        self.module = m.group(8)

    def __repr__(self):
        return "<%s %.1f%% %d %s %s>" % (self.name, self.self_pct, self.samples, self.source,
                                        self.module)


class GraphEntry:
    def __init__(self, m):
        self.index = int(m.group(1))
        self.name = m.group(2)
        self.total_pct = float(m.group(3))
        self.self_pct = float(m.group(4))
        self.where = m.group(5)
        self.callers = []   # (name, samples, pct)
        self.callees = []
        self.more = {"callers": 0, "callees": 0}


class ThreadSection:
    def __init__(self, m):
        self.name = m.group(1)
        self.tid = int(m.group(2))
        self.exited = bool(m.group(3))
        self.samples = num(m.group(4))
        self.share = float(m.group(5))
        self.running = float(m.group(6)) if m.group(6) else None
        self.waiting = float(m.group(7)) if m.group(7) else None
        self.rows = []      # (pct, samples, name, source, module)


class TextReport:
    """wallprof's text report, split into its parts."""

    def __init__(self, text):
        self.text = text
        self.lines = text.splitlines()
        self.header = []                # lines before the first banner
        self.sections = {}              # first word of a banner title -> (title, lines)
        self._split()
        self.flat = []
        self.other = None               # (pct, samples, functions) of "(other - N functions)"
        self.total = None               # (samples, functions with samples, as leaf)
        self.graph = []
        self.threads = []
        if "FLAT" in self.sections:
            self._parse_flat()
        if "CALL" in self.sections:
            self._parse_graph()
        if "THREADS" in self.sections:
            self._parse_threads()

    def hottest_code(self):
        """The flat profile's first row that is code, not a wait leaf: on a loaded machine a
        CPU-bound program's [wait cpu runqueue] may come first (issue 20)."""
        return next((f for f in self.flat if not f.name.startswith("[wait ")), None)

    def _split(self):
        i, cur = 0, None
        lines = self.lines
        while i < len(lines):
            if (_BANNER.match(lines[i]) and i + 2 < len(lines) and _BANNER.match(lines[i + 2])):
                title = lines[i + 1].strip()
                key = title.split()[0]
                cur = []
                self.sections[key] = (title, cur)
                i += 3
                continue
            (self.header if cur is None else cur).append(lines[i])
            i += 1
        # the report's own title banner comes first: its "section" holds the header
        if "WALLPROF" in self.sections:
            self.header = self.sections.pop("WALLPROF")[1]

    def title(self, key):
        return self.sections[key][0]

    def _parse_flat(self):
        lines = self.sections["FLAT"][1]
        body = [l for l in lines if l.strip()]
        if len(body) < 2 or "function" not in body[0] or not body[1].strip().startswith("---"):
            raise ParseError("flat profile: no column header:\n" + "\n".join(body[:3]))
        for l in body[2:]:
            m = _FLAT_ROW.match(l)
            if m:
                self.flat.append(FlatRow(m))
                continue
            m = _OTHER_ROW.match(l)
            if m:
                self.other = (float(m.group(1)), num(m.group(2)), num(m.group(3)))
                continue
            m = _TOTAL_ROW.match(l)
            if m:
                self.total = (num(m.group(2)), num(m.group(3)), num(m.group(4)))
                continue
            if l.strip().startswith("---") or "(no stack" in l:
                continue
            raise ParseError("flat profile: row does not parse: %r" % l)

    def _parse_graph(self):
        cur, which = None, None
        for l in self.sections["CALL"][1]:
            if not l.strip() or l.startswith(("For each function", "that went through")):
                continue
            m = _GRAPH_HEAD.match(l)
            if m:
                cur = GraphEntry(m)
                self.graph.append(cur)
                continue
            if cur is None:
                raise ParseError("call graph: line before the first entry: %r" % l)
            m = _GRAPH_LINK.match(l)
            if m:
                if m.group(1).strip():
                    which = m.group(1).strip().rstrip(":")
                (cur.callers if which == "callers" else cur.callees).append(
                    (m.group(4), num(m.group(3)), float(m.group(2))))
                continue
            m = _GRAPH_MORE.match(l)
            if m and which:
                cur.more[which] = int(m.group(3))
                continue
            if l.strip() in ("callers:  (none)", "callees:  (none)") or \
                    re.match(r"^ +(callers|callees): +\(none\)$", l):
                continue
            raise ParseError("call graph: line does not parse: %r" % l)

    def _parse_threads(self):
        cur = None
        for l in self.sections["THREADS"][1]:
            if not l.strip() or l.startswith("(") or (cur is None and l.startswith("    ")):
                continue  # notes, and the hidden threads grouped by name
            m = _THREAD_HEAD.match(l)
            if m:
                cur = ThreadSection(m)
                self.threads.append(cur)
                continue
            if cur and (l.startswith(("    time (", "    (it blocked the sampling signal")) or
                        re.match(r"^      [a-z]", l)):
                continue  # the time budget (wp.time_budgets reads it), its note, its rest
            m = _THREAD_ROW.match(l)
            if m and cur:
                cur.rows.append((float(m.group(1)), num(m.group(2)), m.group(3), m.group(4),
                                 m.group(5)))
                continue
            if cur and re.match(r"^ +[\d,]+ more functions?$", l):
                continue
            raise ParseError("threads: line does not parse: %r" % l)

    # -- lookups ------------------------------------------------------------------------------
    def flat_row(self, name):
        for r in self.flat:
            if r.name == name:
                return r
        return None

    def graph_entry(self, name):
        for g in self.graph:
            if g.name == name:
                return g
        return None

    def thread(self, name):
        for t in self.threads:
            if t.name == name:
                return t
        return None

    def header_line(self, tag, contains=""):
        """The first header/[STATS] line starting with [tag] and containing `contains`."""
        for l in self.lines:
            if l.startswith("[%s]" % tag) and contains in l:
                return l
        return None


def long_lines(text, width=100):
    """Lines of `text` longer than `width` characters."""
    return [l for l in text.splitlines() if len(l) > width]


def adjacent_pairs(profile, same_name=False):
    """From a wplib.Profile: Counter (caller, callee) -> samples in which caller called callee
    directly (counted once per sample), as the call graph counts. Pairs of one name (A->A:
    recursion, or two functions of one name in different modules) only with same_name."""
    import collections
    c = collections.Counter()
    for (_, _, frames), v in profile.samples.items():
        pairs = set()
        for a, b in zip(frames, frames[1:]):
            if (a != b) != same_name:
                pairs.add((a, b))
        for p in pairs:
            c[p] += v
    return c
