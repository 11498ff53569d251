# SPDX-License-Identifier: MIT
"""The wallprof profile file (docs/profile-format.md) for the Python tools: the end-to-end
tests (wplib.read_raw) and the benchmark (bench/bench.py) read profiles with read() here, and
the benchmark writes its synthetic ones with record() and raw_record().

The layout is not written down a second time: the record types, the flags and each record's
fixed fields are taken from src/common/format.h, the header that the agent's writer and the
command's reader are compiled from (its packed structs wp_rec_*, in field order). A change
there is a change here. Standard library only.
"""
import os
import re
import struct

FORMAT_H = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir,
                        "src", "common", "format.h")

_C_TYPES = {"uint32_t": "I", "uint64_t": "Q", "char": "s"}


def _parse_header(path):
    """format.h -> (integer constants by name, {struct name: (struct.Struct, field names)})."""
    with open(path) as f:
        text = re.sub(r"/\*.*?\*/", " ", f.read(), flags=re.S)
    consts = {}
    for name, value in re.findall(r"#define\s+(WP_\w+)\s+(0x[0-9a-fA-F]+|\d+)u?\b", text):
        consts[name] = int(value, 0)
    for name, value in re.findall(r"#define\s+(WP_\w+)\s+\"([^\"]*)\"", text):
        consts[name] = value.encode()
    for name, value in re.findall(r"\b(WP_REC_\w+)\s*=\s*(\d+)", text):
        consts[name] = int(value)
    structs = {}
    for name, body in re.findall(r"struct\s+(wp_\w+)\s*\{([^}]*)\}\s*__attribute__\(\(packed\)\)",
                                 text):
        fmt, fields = "<", []
        for decl in body.split(";"):
            words = decl.replace(",", " , ").split()
            if not words:
                continue
            ctype = words[0]
            if ctype not in _C_TYPES:
                raise ValueError("%s: struct %s: type %s is not known here" % (path, name, ctype))
            for item in " ".join(words[1:]).split(","):
                m = re.fullmatch(r"\s*(\w+)\s*(?:\[\s*(\w+)\s*\])?\s*", item)
                if not m:
                    raise ValueError("%s: struct %s: cannot read %r" % (path, name, item))
                count = m.group(2)
                if count is not None:
                    count = consts[count] if count in consts else int(count, 0)
                    fmt += "%d%s" % (count, _C_TYPES[ctype])
                else:
                    fmt += _C_TYPES[ctype]
                fields.append(m.group(1))
        structs[name] = (struct.Struct(fmt), tuple(fields))
    return consts, structs


_CONSTS, _STRUCTS = _parse_header(FORMAT_H)

MAGIC = _CONSTS["WP_MAGIC"]
VERSION = _CONSTS["WP_FORMAT_VERSION"]
REC_META, REC_MODULE, REC_THREAD, REC_STACK, REC_TIMELINE, REC_END = (
    _CONSTS["WP_REC_" + n] for n in ("META", "MODULE", "THREAD", "STACK", "TIMELINE", "END"))
STACK_WAITING = _CONSTS["WP_STACK_WAITING"]
STACK_TRUNCATED = _CONSTS["WP_STACK_TRUNCATED"]
STACK_REUSED = _CONSTS["WP_STACK_REUSED"]
THREAD_EXITED = _CONSTS["WP_THREAD_EXITED"]
THREAD_UNSAMPLEABLE = _CONSTS["WP_THREAD_UNSAMPLEABLE"]
REC_WAIT = _CONSTS["WP_REC_WAIT"]
WAIT_NO_HOLDER_STACK = _CONSTS["WP_WAIT_NO_HOLDER_STACK"]
# WAIT pseudo calls: waiting for a CPU, uninterruptible sleep (state D)
WAIT_NR_CPU = _CONSTS["WP_WAIT_NR_CPU"]
WAIT_NR_DISK = _CONSTS["WP_WAIT_NR_DISK"]
# LAST: each live thread's last sample, what it was blocked in (newer agents)
REC_LAST = _CONSTS["WP_REC_LAST"]
LAST_IN_CALL = _CONSTS["WP_LAST_IN_CALL"]
LAST_WAITING = _CONSTS["WP_LAST_WAITING"]
MODULE_MAIN = _CONSTS["WP_MODULE_MAIN"]
MODULE_VDSO = _CONSTS["WP_MODULE_VDSO"]
MODULE_UNLOADED = _CONSTS["WP_MODULE_UNLOADED"]

FILE_HEADER = _STRUCTS["wp_file_header"][0]
RECORD_HEADER = _STRUCTS["wp_rec_header"][0]
# record type -> (struct.Struct of its fixed fields, their names)
FIXED = {REC_MODULE: _STRUCTS["wp_rec_module"], REC_THREAD: _STRUCTS["wp_rec_thread"],
         REC_STACK: _STRUCTS["wp_rec_stack"], REC_TIMELINE: _STRUCTS["wp_rec_timeline"],
         REC_WAIT: _STRUCTS["wp_rec_wait"], REC_LAST: _STRUCTS["wp_rec_last"]}


def file_header():
    """The bytes a profile starts with."""
    return FILE_HEADER.pack(MAGIC, VERSION, FILE_HEADER.size)


def raw_record(rtype, payload):
    """One record with the payload given whole: its header and the payload."""
    return RECORD_HEADER.pack(rtype, 0, len(payload)) + payload


def record(rtype, rest=b"", **fields):
    """One record: its header, its fixed fields (by name; missing ones are 0) and `rest`."""
    fixed = b""
    if rtype in FIXED:
        st, names = FIXED[rtype]
        unknown = set(fields) - set(names)
        if unknown:
            raise ValueError("record %d has no field %s" % (rtype, ", ".join(sorted(unknown))))
        fixed = st.pack(*(fields.get(n, 0) for n in names))
    return raw_record(rtype, fixed + rest)


def records(data, where="profile"):
    """(type, payload) of each record of a complete profile, END excluded. Raises ValueError
    when `data` is not a complete, well-formed file of this version."""
    if len(data) < FILE_HEADER.size or data[:len(MAGIC)] != MAGIC:
        raise ValueError("%s: no WALLPROF header" % where)
    _, version, _ = FILE_HEADER.unpack_from(data, 0)
    if version != VERSION:
        raise ValueError("%s: format version %d" % (where, version))
    off, out = FILE_HEADER.size, []
    while True:
        if off + RECORD_HEADER.size > len(data):
            raise ValueError("%s: %s at %d" % (where, "no END record (cut short)" if off == len(data)
                                               else "truncated record header", off))
        rtype, _, length = RECORD_HEADER.unpack_from(data, off)
        off += RECORD_HEADER.size
        if off + length > len(data):
            raise ValueError("%s: truncated record (type %d) at %d" % (where, rtype, off))
        if rtype == REC_END:
            if off + length != len(data):
                raise ValueError("%s: bytes after the END record" % where)
            return out
        out.append((rtype, data[off:off + length]))
        off += length


def fixed_fields(rtype, payload, where="profile"):
    """The fixed fields of a record as a dict, and the bytes after them."""
    st, names = FIXED[rtype]
    if len(payload) < st.size:
        raise ValueError("%s: record of type %d shorter than its fixed fields" % (where, rtype))
    return dict(zip(names, st.unpack_from(payload, 0))), payload[st.size:]


class Profile:
    """A profile as read(): META as a dict; modules in file order, threads by tid, stacks in
    file order, each a dict of its fixed fields (named as in format.h) and the parts that
    follow them."""

    def __init__(self):
        self.meta = {}
        self.modules = []           # + build_id (hex), path; offset = file_offset
        self.threads = {}           # tid -> fields + name
        self.stacks = []            # + pcs (leaf first)
        self.waits = []             # WAIT records + target (str)
        self.lasts = []             # LAST records (none in files of older agents)
        self.timeline_entries = 0
        self.timeline_bytes = 0     # of entries, the fixed fields left out

    def samples(self):
        return sum(s["count"] for s in self.stacks)

    def truncated(self):
        return sum(s["count"] for s in self.stacks if s["flags"] & STACK_TRUNCATED)

    def end(self):
        """How this image of the process ended, as profile_read.c's wp_profile_end: ("exec",
        None), ("signal", N), ("exit", N), ("no word", None) (a checkpoint or flush was its
        last write), or ("ended", None) (an older agent: a normal end, status not recorded)."""
        m = self.meta
        if "exec" in m:
            return ("exec", None)
        if m.get("died_of_signal", "").isdigit() and 0 < int(m["died_of_signal"]) < 65:
            return ("signal", int(m["died_of_signal"]))
        if m.get("exit_status", "").isdigit() and int(m["exit_status"]) <= 255:
            return ("exit", int(m["exit_status"]))
        if "checkpoint" in m or "flush" in m:
            return ("no word", None)
        return ("ended", None)


def _text(b):
    return b.decode("utf-8", "replace")


def read(path):
    """Reads a profile file. Raises ValueError when it is not a complete, well-formed file
    of this version."""
    with open(path, "rb") as f:
        data = f.read()
    p = Profile()
    for rtype, pl in records(data, path):
        if rtype == REC_META:
            for line in _text(pl).splitlines():
                k, sep, v = line.partition("=")
                if sep:
                    p.meta[k] = v
            continue
        if rtype not in FIXED:
            continue  # a type this reader does not know: skipped, as the command does
        f, rest = fixed_fields(rtype, pl, path)
        if rtype == REC_MODULE:
            bl, nl = f["build_id_len"], f["path_len"]
            f.update(build_id=rest[:bl].hex(), path=_text(rest[bl:bl + nl]),
                     offset=f["file_offset"])
            p.modules.append(f)
        elif rtype == REC_THREAD:
            nl = f["name_len"]
            f["name"] = _text(rest[:nl])
            # appended after THREAD's first version: the time it ran unseen (blocking the
            # sampling signal) and why (absent in older files)
            f["unseen_ns"] = struct.unpack_from("<Q", rest, nl)[0] if len(rest) >= nl + 8 else 0
            wl = struct.unpack_from("<I", rest, nl + 8)[0] if len(rest) >= nl + 12 else 0
            f["unseen_why"] = _text(rest[nl + 12:nl + 12 + wl])
            p.threads[f["tid"]] = f
        elif rtype == REC_STACK:
            if 8 * f["nframes"] > len(rest):
                raise ValueError("%s: stack %d claims %d frames" % (path, f["id"], f["nframes"]))
            f["pcs"] = list(struct.unpack_from("<%dQ" % f["nframes"], rest, 0))
            p.stacks.append(f)
        elif rtype == REC_WAIT:
            tl = f["target_len"]
            f["target"] = _text(rest[:tl])
            # appended after WAIT's first version: the holder's stack id after the target (absent in older files)
            f["holder_stack"] = (struct.unpack_from("<I", rest, tl)[0] if len(rest) >= tl + 4
                                 else WAIT_NO_HOLDER_STACK)
            # appended after holder_stack: a condition wait's mutex address (0: none, older files)
            f["cond_mutex"] = (struct.unpack_from("<Q", rest, tl + 4)[0] if len(rest) >= tl + 12
                               else 0)
            p.waits.append(f)
        elif rtype == REC_LAST:
            p.lasts.append(f)
        elif rtype == REC_TIMELINE:
            p.timeline_entries += f["count"]
            p.timeline_bytes += len(rest)
    return p
