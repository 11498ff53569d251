# SPDX-License-Identifier: MIT
"""A real server with retitled worker processes, under the command (issue 18: point 4 and the
gate). Debian's nginx (scripts/deps installs it) runs in the foreground with a configuration
of our own in a temporary directory: master process on, 2 workers, a loopback port, its pid
file and logs beside the configuration. A few requests are made to it over 127.0.0.1, then
SIGQUIT stops it (a graceful shutdown: the workers finish and exit, then the master).

It runs once unprofiled and once as `wallprof --hz=1000 -- nginx ...`; the two must answer
the same (status and body of every request) and exit the same (status 0). The report must
name each worker by the title nginx gave it, "nginx: worker process" (the title `ps` shows,
read from /proc during the run), in the process table and the process sections, and the
master by its own "nginx: master process ..."; before titles were read, a worker was named
by the command line it started with, its master's.

A test of its own rather than a module of test_real_suites.py: nginx is no suite of test
ids to compare one by one, and what is checked here is the command's report of a process
tree, which the gate's runs (a bare LD_PRELOAD) do not make."""
import hashlib
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request

import wplib as wp

NGINX = os.environ.get("WP_NGINX", "/usr/sbin/nginx")
WORKERS = 2

CONF = """daemon off;
master_process on;
worker_processes %(workers)d;
%(user)s
pid %(dir)s/nginx.pid;
error_log %(dir)s/error.log;
events { worker_connections 64; }
http {
  access_log %(dir)s/access.log;
  client_body_temp_path %(dir)s/tmp-body;
  proxy_temp_path %(dir)s/tmp-proxy;
  fastcgi_temp_path %(dir)s/tmp-fastcgi;
  uwsgi_temp_path %(dir)s/tmp-uwsgi;
  scgi_temp_path %(dir)s/tmp-scgi;
  server {
    listen 127.0.0.1:%(port)d;
    root %(dir)s/www;
  }
}
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def setup(label):
    d = wp.tmp_path("nginx-" + label)
    os.makedirs(os.path.join(d, "www"))
    with open(os.path.join(d, "www", "index.html"), "w") as f:
        f.write("hello from nginx\n")
    with open(os.path.join(d, "www", "big.txt"), "w") as f:
        f.write("".join("line %06d of a file big enough for several writes\n" % i
                        for i in range(4000)))
    port = free_port()
    # as root, the workers would become `nobody` and could not write their profiles here
    user = "user root;" if os.geteuid() == 0 else ""
    with open(os.path.join(d, "nginx.conf"), "w") as f:
        f.write(CONF % {"workers": WORKERS, "user": user, "dir": d, "port": port})
    return d, port


def get(port, path, method="GET"):
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, hashlib.sha256(r.read()).hexdigest()[:16]
    except urllib.error.HTTPError as e:
        return e.code, hashlib.sha256(e.read()).hexdigest()[:16]


def wait_listening(port, proc, limit):
    end = time.monotonic() + limit
    while time.monotonic() < end and proc.poll() is None:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return True
        except OSError:
            time.sleep(0.1)
    return False


def titles_of_children(pid):
    """{pid: title} of pid's children, as /proc shows them (what ps shows), but for the
    agent's sampler: a task of its own, a child named "wallprof" that shares the process's
    memory, and so shows its command line (docs/design.md, "Where the sampler lives")."""
    out = {}
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % p) as f:
                name, _, rest = f.read().rpartition(")")
                if int(rest.split()[1]) != pid or name.endswith("(wallprof"):
                    continue
            with open("/proc/%s/cmdline" % p, "rb") as f:
                out[int(p)] = f.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
        except (OSError, ValueError, IndexError):
            pass
    return out


def serve(t, label, profiled):
    """Runs nginx (under the command when `profiled`), makes the requests, stops it.
    Returns (answers, exit status, report text, {worker pid: title}, master pid, stderr)."""
    d, port = setup(label)
    argv = [NGINX, "-p", d, "-c", os.path.join(d, "nginx.conf"), "-e",
            os.path.join(d, "error.log")]
    if profiled:
        argv = [wp.cli(), "-q", "--hz=1000", "-o", os.path.join(d, "nginx.prof"), "--"] + argv
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("WALLPROF_") and k != "LD_PRELOAD"}
    out = open(os.path.join(d, "stdout.txt"), "w")
    err = open(os.path.join(d, "stderr.txt"), "w")
    proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                            start_new_session=True)
    answers, workers, master = [], {}, None
    try:
        if not wait_listening(port, proc, 30 * wp.timeout_mult()):
            t.fail("%s: nginx listens on 127.0.0.1:%d" % (label, port))
            return None
        with open(os.path.join(d, "nginx.pid")) as f:
            master = int(f.read().strip())
        for path in ("/index.html", "/big.txt", "/missing.html", "/"):
            answers.append((path, get(port, path)))
        answers.append(("HEAD /big.txt", get(port, "/big.txt", "HEAD")))
        # a few at once, so that both workers have work
        got = {}

        def fetch(i):
            got[i] = get(port, "/big.txt")
        threads = [threading.Thread(target=fetch, args=(i,)) for i in range(8)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(30)
        answers += [("/big.txt #%d" % i, got.get(i)) for i in range(8)]
        time.sleep(0.5)  # a moment idle: the workers wait in epoll_wait
        workers = {p: c for p, c in titles_of_children(master).items()}
        os.kill(master, signal.SIGQUIT)
        proc.wait(timeout=60 * wp.timeout_mult())
    except subprocess.TimeoutExpired:
        t.fail("%s: nginx ends within 60 s of SIGQUIT" % label)
        return None
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        out.close()
        err.close()
    with open(os.path.join(d, "stdout.txt")) as f:
        report = f.read()
    with open(os.path.join(d, "stderr.txt")) as f:
        errors = f.read()
    with open(os.path.join(d, "error.log")) as f:
        log = f.read()
    bad = [l for l in log.splitlines() if re.search(r"\[(emerg|alert|crit)\]", l)]
    t.check(not bad, "%s: nginx's error log has no emerg, alert or crit line" % label,
            "\n".join(bad[:10]))
    return answers, proc.returncode, report, workers, master, errors


def main(t):
    if not os.path.exists(NGINX):
        t.fail("%s exists (Debian: nginx, which scripts/deps installs)" % NGINX)
        return
    base = serve(t, "plain", False)
    prof = serve(t, "profiled", True)
    if not base or not prof:
        return
    answers, code, _, _, _, errors = base
    panswers, pcode, report, workers, master, perrors = prof
    t.eq(code, 0, "unprofiled: nginx exits 0 after SIGQUIT")
    t.eq(pcode, code, "profiled: the same exit status")
    t.eq(panswers, answers, "profiled: every request gets the same status and body")
    t.eq(perrors, errors, "profiled: the same standard error (`wallprof -q` and the agent add "
         "nothing)")
    t.eq(sorted(workers.values()), ["nginx: worker process"] * WORKERS,
         "profiled: ps shows %d workers titled 'nginx: worker process'" % WORKERS, str(workers))
    rows = {}
    for line in report.splitlines():
        m = wp.PROCESS_ROW.match(line)
        if m:
            rows[int(m.group(1))] = m.group(8).strip()
    for pid in sorted(workers):
        t.eq(rows.get(pid), "nginx: worker process",
             "the report's process table names worker %d 'nginx: worker process'" % pid,
             report[:2500])
        t.check(re.search(r"^nginx: worker process \(pid %d, parent %d" % (pid, master),
                          report, re.M),
                "worker %d's process section is headed 'nginx: worker process'" % pid,
                "\n".join(l for l in report.splitlines() if "(pid " in l))
    t.check(rows.get(master, "").startswith("nginx: master process"),
            "the master is named by its own title, 'nginx: master process ...'", str(rows))


wp.main(main)
