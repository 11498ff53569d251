# SPDX-License-Identifier: MIT
"""A real PostgreSQL server under the command (issue 20, "Figures that agree": a backend's
epoll_wait, send and fdatasync, the postmaster's select). Debian's postgresql (scripts/deps
installs it): initdb in a temporary directory (as `nobody` when the test runs as root, since
postgres refuses root), then `wallprof --hz=1000 -- postgres -D DATA -k SOCKDIR` (wall mode),
pgbench's tables (-i), a 3-second pgbench load with 2 clients, a CHECKPOINT, and
`pg_ctl stop -m fast` (SIGINT to the postmaster).

What the run itself says, and the report must show:
  - the server exits 0, its log has no ERROR, FATAL or PANIC line (the agent interrupts
    nothing: no EINTR reaches PostgreSQL), pgbench ran transactions and none failed;
  - the postmaster waits for connections in select on the listening socket we chose:
    a [wait io select socket:[N] unix stream SOCKDIR/.s.PGSQL.PORT listening] leaf;
  - each pgbench client's backend waits for its client's next query in epoll_wait on its
    connection, the socket of the same path: a [wait io epoll ... socket:[N] unix stream
    SOCKDIR/.s.PGSQL.PORT ...] leaf under secure_read;
  - pgbench committed transactions, each of which flushes the WAL (wal_sync_method
    fdatasync, Linux's default): the backends wait on a file DATA/pg_wal/<24 hex digits>
    ([wait disk ...] or [wait io ...]). (Not "under XLogFlush": a thread blocked in the
    disk is unwound from /proc's SP and PC alone, and the frame of PostgreSQL's
    issue_xlog_fsync needs its RBP, so those stacks stop there, flagged truncated.)
  - the checkpointer and background writer sleep in WaitLatch (epoll_wait) between rounds:
    at least their off-CPU share of their samples (1 - CPU time / wall time, from the run's
    process table, less 5 points) ends in a [wait io epoll ...] leaf, none in a bare
    epoll_wait frame;
  - each backend's running samples are at most its CPU time (the process table's) + 10%;
  - STATS' waiting count is the one the WAITS section counts, and nearly every waiting
    sample has a wait leaf there; no leaf reads "[wait other syscall N]" for the calls
    named above, nor for the file system's calls PostgreSQL makes (rename and unlink of WAL
    segments, rmdir of its temporary directories at shutdown: "syscall 82", "84" before)."""
import glob
import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
import time

import wplib as wp


# the C library's entries of the calls a backend blocks in, seen as running self time
BLOCKING_LEAVES = {"epoll_wait", "__libc_send", "__libc_recv", "fdatasync", "__libc_pwrite64",
                   "__libc_pread64", "sync_file_range"}


def pg_bin():
    """The newest PostgreSQL's bin directory (Debian: /usr/lib/postgresql/VERSION/bin)."""
    if os.environ.get("WP_PG_BIN"):
        return os.environ["WP_PG_BIN"]
    dirs = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"),
                  key=lambda p: int(p.split("/")[-3]) if p.split("/")[-3].isdigit() else 0)
    return os.path.dirname(dirs[-1]) if dirs else None


def as_user():
    """argv prefix that runs a command as the server's user: `nobody` when we are root."""
    return ["runuser", "-u", "nobody", "--"] if os.geteuid() == 0 else []


def make_dir(path):
    os.makedirs(path)
    if os.geteuid() == 0:
        pw = pwd.getpwnam("nobody")
        os.chown(path, pw.pw_uid, pw.pw_gid)


def run_as(t, argv, what, timeout=60):
    r = wp.run(as_user() + argv, timeout=timeout)
    t.check(r.returncode == 0, what, r.describe() + "\nstdout:\n" + r.stdout[-1500:])
    return r


def wait_ready(binp, sock, port, proc, limit):
    end = time.monotonic() + limit
    while time.monotonic() < end and proc.poll() is None:
        r = subprocess.run(as_user() + [os.path.join(binp, "pg_isready"), "-q", "-h", sock,
                                        "-p", str(port), "-U", "postgres", "-d", "postgres"])
        if r.returncode == 0:
            return True
        time.sleep(0.2)
    return False


def seconds(s):
    """A duration of the process table ("6.504 s", "29.4 ms", "920 µs") in seconds."""
    v, unit = s.split()
    return float(v.replace(",", "")) * {"s": 1, "ms": 1e-3, "µs": 1e-6, "ns": 1e-9}[unit]


def leaves(folded_text):
    """[(process root, frames, count)] of `folded --per-process` lines."""
    out = []
    for line in folded_text.splitlines():
        stack, _, n = line.rpartition(" ")
        if not stack or not n.isdigit():
            continue
        frames = stack.split(";")
        out.append((frames[0], frames[1:], int(n)))
    return out


def main(t):
    binp = pg_bin()
    if not binp:
        t.fail("PostgreSQL is installed (Debian: postgresql, which scripts/deps installs)")
        return
    # everything the server's user touches lives in a directory of its own in /tmp: the build
    # tree may be closed to it (a clone under /root), and a socket's path must fit in 107
    # bytes
    base = tempfile.mkdtemp(prefix="wp-pg.")
    try:
        os.chmod(base, 0o755)
        if os.geteuid() == 0:
            pw = pwd.getpwnam("nobody")
            os.chown(base, pw.pw_uid, pw.pw_gid)
        run_server(t, binp, base)
    finally:
        if not os.environ.get("WP_KEEP_TMP"):
            shutil.rmtree(base, ignore_errors=True)


def reachable(path, test):
    """Whether the server's user may open `path` (`test`: -r, -x)."""
    return subprocess.run(as_user() + ["test", test, path]).returncode == 0


def run_server(t, binp, base):
    data, sock, outd = (os.path.join(base, n) for n in ("data", "sock", "out"))
    for d in (sock, outd):
        make_dir(d)
    cli, agent = wp.cli(), wp.agent()
    if not reachable(cli, "-x") or not reachable(agent, "-r"):
        bind = os.path.join(base, "bin")
        os.makedirs(bind)
        for f in (cli, agent):
            shutil.copy2(f, bind)
            os.chmod(os.path.join(bind, os.path.basename(f)), 0o755)
        cli, agent = (os.path.join(bind, os.path.basename(f)) for f in (cli, agent))
    port = 54000 + os.getpid() % 1000
    run_as(t, [os.path.join(binp, "initdb"), "-D", data, "-A", "trust", "-U", "postgres",
               "--no-sync", "-E", "UTF8", "--locale=C"], "initdb succeeds", timeout=120)
    prof = os.path.join(outd, "pg.prof")
    log_path = os.path.join(base, "server.log")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("WALLPROF_") and k != "LD_PRELOAD"}
    env["WALLPROF_AGENT"] = agent
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            as_user() + [cli, "-q", "--hz=1000", "-o", prof, "--report-output=/dev/null",
                         "--", os.path.join(binp, "postgres"), "-D", data, "-k", sock,
                         "-c", "listen_addresses=", "-p", str(port)],
            env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
    tx = None
    try:
        if not wait_ready(binp, sock, port, proc, 30 * wp.timeout_mult()):
            t.fail("postgres accepts connections on %s port %d" % (sock, port))
            return
        conn = ["-h", sock, "-p", str(port), "-U", "postgres"]
        run_as(t, [os.path.join(binp, "pgbench")] + conn + ["-i", "-q", "-s", "1", "postgres"],
               "pgbench -i succeeds")
        r = run_as(t, [os.path.join(binp, "pgbench")] + conn +
                   ["-T", "3", "-c", "2", "-j", "2", "postgres"], "pgbench -T 3 succeeds")
        m = re.search(r"number of transactions actually processed: (\d+)", r.stdout)
        tx = int(m.group(1)) if m else None
        failed = re.search(r"number of failed transactions: (\d+)", r.stdout)
        t.check(tx and tx > 0, "pgbench processed transactions (%s)" % tx, r.stdout[-800:])
        t.check(failed and failed.group(1) == "0", "no pgbench transaction failed",
                r.stdout[-800:])
        run_as(t, [os.path.join(binp, "psql")] + conn + ["-q", "-c", "CHECKPOINT", "postgres"],
               "CHECKPOINT succeeds")
        run_as(t, [os.path.join(binp, "pg_ctl"), "-D", data, "stop", "-m", "fast", "-w"],
               "pg_ctl stop -m fast succeeds")
        proc.wait(timeout=60 * wp.timeout_mult())
    except subprocess.TimeoutExpired:
        t.fail("postgres ends within 60 s of pg_ctl stop")
        return
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    with open(log_path) as f:
        log_text = f.read()
    t.eq(proc.returncode, 0, "the server (and wallprof) exit 0", log_text[-2000:])
    bad = [l for l in log_text.splitlines() if re.search(r"\b(ERROR|FATAL|PANIC):", l)]
    t.check(not bad, "the server log has no ERROR, FATAL or PANIC line", "\n".join(bad[:10]))
    t.check("database system is shut down" in log_text, "the server shut down cleanly",
            log_text[-1500:])
    if proc.returncode != 0 or not os.path.exists(prof):
        return

    text = wp.wallprof(["--report", prof])
    t.eq(text.returncode, 0, "the text report succeeds", text.describe())
    fold = wp.wallprof(["--report", prof, "--format=folded", "--per-process",
                        "--wait-leaves=on"])
    t.eq(fold.returncode, 0, "the folded report succeeds", fold.describe())
    rows = {}
    for line in text.stdout.splitlines():
        m = wp.PROCESS_ROW.match(line)
        if m:
            rows[int(m.group(1))] = m
    stacks = leaves(fold.stdout)
    listen = "%s/.s.PGSQL.%d" % (sock, port)

    def of(pred):
        return [(root, fr, n) for root, fr, n in stacks if pred(root)]

    def show(items, k=12):
        items = sorted(items, key=lambda x: -x[2])[:k]
        return "\n".join("%6d %s ... %s" % (n, root, ";".join(fr[-3:])) for root, fr, n in items)

    # the postmaster: the process wallprof started, waiting for connections
    post = of(lambda root: re.match(r"\[postgres pid=\d+\]$", root))
    sel = sum(n for _, fr, n in post if re.match(
        r"\[wait io select socket:\[\d+\] unix stream %s listening\]$" % re.escape(listen),
        fr[-1]))
    total = sum(n for _, _, n in post)
    t.check(total and sel >= 0.5 * total,
            "the postmaster waits in select on %s listening (%d of its %d samples)" %
            (listen, sel, total), show(post))

    # pgbench's two client backends: the two busiest "[local]" sessions
    sessions = {}
    for root, fr, n in of(lambda root: "[local]" in root):
        sessions[root] = sessions.get(root, 0) + n
    clients = sorted(sessions, key=lambda r: -sessions[r])[:2]
    t.eq(len(clients), 2, "two client backends have samples", str(sessions))
    epoll_re = re.compile(r"\[wait io epoll .*socket:\[\d+\] unix stream %s[,\]]" %
                          re.escape(listen))
    wal_re = re.compile(r"\[wait (disk|io) %s/pg_wal/[0-9A-F]{24}\]$" % re.escape(data))
    for c in clients:
        mine = of(lambda root: root == c)
        on_sock = sum(n for _, fr, n in mine if epoll_re.match(fr[-1]) and "secure_read" in fr)
        on_wal = sum(n for _, fr, n in mine if wal_re.match(fr[-1]))
        t.check(on_sock > 0, "%s waits for its client in epoll_wait on its socket (%s), "
                "under secure_read: %d samples" % (c, listen, on_sock), show(mine))
        t.check(on_wal > 0, "%s, %s transactions committed: waits on a WAL file: %d samples" %
                (c, tx, on_wal), show(mine))
        # running samples (1 ms each at 1000 Hz) against the backend's CPU time: it computes
        # in short bursts between its client's queries (reconcile.h). Before: x1.15-1.2 here
        # quiet (1,481 against 1,239 ms, 788 of them self time in the calls below), about
        # twice at load 5; now x1.02 (1,234 against 1,210 ms, 302 in the calls)
        pid = int(re.search(r"pid=(\d+)\]$", c).group(1))
        row = rows.get(pid)
        running = sum(n for _, fr, n in mine if not fr[-1].startswith("[wait "))
        in_calls = sum(n for _, fr, n in mine if fr[-1] in BLOCKING_LEAVES)
        if row:
            cpu_ms = 1000 * seconds(row.group(5))
            t.note("%s: %d running samples (%d of them in %s), CPU %.0f ms, wall %.0f ms" %
                   (c, running, in_calls, "/".join(sorted(BLOCKING_LEAVES)), cpu_ms,
                    1000 * seconds(row.group(4))))
            by_leaf = {}
            for _, fr, n in mine:
                if not fr[-1].startswith("[wait "):
                    by_leaf[fr[-1]] = by_leaf.get(fr[-1], 0) + n
            t.note("%s: its running samples' leaves: %s" %
                   (c, sorted(by_leaf.items(), key=lambda x: -x[1])[:8]))
            t.check(running <= 1.10 * cpu_ms + 50,
                    "%s: its running samples (%d, 1 ms each) are at most its CPU time "
                    "(%.0f ms) + 10%%" % (c, running, cpu_ms), show(mine))
        else:
            t.fail("%s has a row in the process table" % c)

    # the checkpointer and background writer sleep in WaitLatch between rounds
    for title in ("checkpointer", "background writer"):
        mine = of(lambda root: root.startswith("[postgres: %s pid=" % title))
        pid = int(re.search(r"pid=(\d+)\]$", mine[0][0]).group(1)) if mine else None
        row = rows.get(pid)
        if not mine or not row:
            t.fail("the %s has samples and a row in the process table" % title, show(stacks))
            continue
        wall, cpu = (seconds(row.group(i)) for i in (4, 5))
        total = sum(n for _, _, n in mine)
        slept = sum(n for _, fr, n in mine
                    if fr[-1].startswith("[wait io epoll ") and "WaitLatch" in fr)
        bare = sum(n for _, fr, n in mine if fr[-1] == "epoll_wait")
        want = 1 - cpu / wall - 0.05
        t.check(slept >= want * total,
                "the %s sleeps in WaitLatch's epoll_wait at least %.0f%% of its samples (off "
                "CPU: %.1f of %.1f s): %d of %d" % (title, 100 * want, wall - cpu, wall,
                                                    slept, total), show(mine))
        t.check(bare <= 0.02 * total, "the %s: epoll_wait ends without a wait leaf in at most "
                "2%% of its samples (%d of %d)" % (title, bare, total), show(mine))

    # one definition of a waiting sample in STATS and WAITS
    st = re.search(r"\[STATS\]\s+samples: ([\d,]+) \(([\d,]+) running, ([\d,]+) waiting\)",
                   text.stdout)
    wt = re.search(r"WAITS \(what waiting samples waited in: ([\d,]+) of ([\d,]+)\)",
                   text.stdout)
    if not st or not wt:
        t.fail("the text report has its STATS samples line and a WAITS section",
               text.stdout[:3000])
        return
    waiting, in_waits, of_waits = (int(x.replace(",", "")) for x in
                                   (st.group(3), wt.group(1), wt.group(2)))
    t.eq(of_waits, waiting, "WAITS counts the waiting samples STATS counts")
    t.check(in_waits >= 0.98 * waiting, "at least 98%% of the waiting samples have a wait "
            "leaf (%d of %d)" % (in_waits, waiting))
    named = {"select": 23, "pselect6": 270, "epoll_wait": 232, "sendto": 44, "recvfrom": 45,
             "fdatasync": 75, "fsync": 74, "sync_file_range": 277, "pwrite64": 18,
             "pread64": 17, "epoll_pwait": 281, "rename": 82, "rmdir": 84, "unlink": 87,
             "ftruncate": 77, "fallocate": 285}
    other = sorted({fr[-1] for _, fr, _ in stacks
                    if re.match(r"\[wait \w+ syscall (%s)\]$" %
                                "|".join(str(v) for v in named.values()), fr[-1])})
    t.check(not other, "the calls PostgreSQL waits in are named, never '[wait ... syscall N]'",
            "\n".join(other))


wp.main(main)
