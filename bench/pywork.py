# SPDX-License-Identifier: MIT
"""A CPU-bound CPython workload for the benchmark: a mix of what Python programs spend their time
on (calls and recursion, dicts and strings, sorting, float arithmetic, generators), so the
interpreter's profile has many distinct stacks.

Usage: python3 pywork.py ROUNDS           a fixed amount of work
       python3 pywork.py --seconds S      rounds until S seconds have passed
"""
import sys
import time


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def words(n, seed):
    x = seed
    out = []
    for _ in range(n):
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
        out.append("w%x" % (x % 5000))
    return out


def word_count(ws):
    counts = {}
    for w in ws:
        counts[w] = counts.get(w, 0) + 1
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:10]


def nbody_step(bodies, dt):
    for i, (p, v, m) in enumerate(bodies):
        for j in range(i + 1, len(bodies)):
            q, u, mm = bodies[j]
            dx, dy, dz = p[0] - q[0], p[1] - q[1], p[2] - q[2]
            d2 = dx * dx + dy * dy + dz * dz + 0.01
            mag = dt / (d2 * d2 ** 0.5)
            v[0] -= dx * mm * mag
            v[1] -= dy * mm * mag
            v[2] -= dz * mm * mag
            u[0] += dx * m * mag
            u[1] += dy * m * mag
            u[2] += dz * m * mag
    for p, v, _ in bodies:
        p[0] += dt * v[0]
        p[1] += dt * v[1]
        p[2] += dt * v[2]


def nbody(steps):
    bodies = [([float(i), float(i * i % 7), float(i % 3)], [0.0, 0.0, 0.0], 1.0 + i % 4)
              for i in range(6)]
    for _ in range(steps):
        nbody_step(bodies, 0.001)
    return bodies[0][0][0]


def primes(limit):
    return sum(1 for n in range(2, limit) if all(n % d for d in range(2, int(n ** 0.5) + 1)))


def text_ops(n):
    s = ",".join(str(i * 7919 % 10007) for i in range(n))
    parts = s.split(",")
    return len("".join(p[::-1].upper() for p in parts if p.endswith(("1", "3", "7"))))


def one_round(r):
    acc = fib(20)
    acc += len(word_count(words(20000, r + 1)))
    acc += int(nbody(400))
    acc += primes(6000)
    acc += text_ops(20000)
    return acc


def main():
    args = sys.argv[1:]
    acc = 0
    if args[:1] == ["--seconds"]:
        deadline = time.monotonic() + float(args[1])
        r = 0
        while time.monotonic() < deadline:
            acc += one_round(r)
            r += 1
    else:
        for r in range(int(args[0]) if args else 10):
            acc += one_round(r)
    print("pywork:", acc)


if __name__ == "__main__":
    main()
