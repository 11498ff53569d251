#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The flame graph tree's worst case as a profile: from a recorded profile, N stacks of one
thread, each the recorded program's deepest running stack under a random tail of TAIL of its
real return addresses (so every stack is distinct and the report symbolizes real code, some
N * TAIL distinct tree nodes). scripts/bench times `--report F --format=svg` (the flame
graph) and the text report of it (docs/bench.md, section 4; docs/design.md, util/).

    bench/unique_tails.py RECORDED.prof OUT.prof [N [TAIL]]     (default 1000000, 10)
"""
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test", "e2e"))
import wpformat  # noqa: E402


def write(src, dst, n=1000000, tail=10):
    """Writes the profile; returns (stacks, frames a stack, return addresses in the pool)."""
    with open(src, "rb") as f:
        recs = wpformat.records(f.read(), src)
    stacks = []
    for rtype, pl in recs:
        if rtype == wpformat.REC_STACK:
            fx, rest = wpformat.fixed_fields(rtype, pl, src)
            stacks.append((fx, rest[:8 * fx["nframes"]]))
    running = [s for s in stacks if not s[0]["flags"] & wpformat.STACK_WAITING]
    base_fx, base_pcs = max(running, key=lambda s: (s[0]["nframes"], s[0]["count"]))
    pool = sorted({s[1][i:i + 8] for s in stacks for i in range(8, len(s[1]), 8)})
    rng = random.Random(20)
    out = bytearray(wpformat.file_header())
    tid = base_fx["tid"]
    for rtype, pl in recs:
        if rtype in (wpformat.REC_META, wpformat.REC_MODULE):
            out += wpformat.raw_record(rtype, pl)
        elif rtype == wpformat.REC_THREAD:
            fx, rest = wpformat.fixed_fields(rtype, pl, src)
            if fx["tid"] == tid:
                fx.update(samples=n, running=n, waiting=0)
                out += wpformat.record(rtype, rest, **fx)
    # the leaf stays the recorded PC; the tail goes between it and the base's callers
    for i in range(n):
        pcs = base_pcs[:8] + b"".join(rng.choices(pool, k=tail)) + base_pcs[8:]
        out += wpformat.record(wpformat.REC_STACK, pcs, id=i + 1, tid=tid, flags=0,
                               nframes=len(pcs) // 8, count=1, weight_ns=1000000)
    out += wpformat.record(wpformat.REC_END)
    with open(dst, "wb") as f:
        f.write(out)
    return n, len(base_pcs) // 8 + tail, len(pool)


def main():
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 1000000
    tail = int(sys.argv[4]) if len(sys.argv) > 4 else 10
    print("%d stacks of %d frames, a pool of %d return addresses" %
          write(sys.argv[1], sys.argv[2], n, tail))


if __name__ == "__main__":
    main()
