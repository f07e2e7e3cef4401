#!/usr/bin/python3
"""A login storm: N SCRAM-SHA-256 clients connect within about a second
(spread evenly over `--spread` seconds), each runs one query and leaves, per
pooler, against one throwaway PostgreSQL. wirepool (transaction mode, pool
max POOL, a fresh process: its pool is cold) and PgBouncer 1.25 (built from
../shared/anchors, as bench/pgbench_poolers.py does; skipped with a printed
reason when absent).

Prints one JSON object: per pooler the clients that logged in and that failed,
login latency (TCP connect to the first ReadyForQuery) p50/p99/max in ms, logins
per second (clients logged in / from the first connect to the last login), the
query's p50/p99, and CPU µs per login of the pooler (/proc/PID/stat) and of the
client (this process: SCRAM's PBKDF2 runs here), and the connections the kernel
dropped from a full listen queue meanwhile (each costs its client a 1 s SYN retry). `--rounds N` starts every
pooler afresh each round, the order turning by one; "summary" has the medians. `--baseline OLD/wirepool` adds an older build as
"baseline", started the same way. A measurement, not a test: the client side (SCRAM in
Python threads) shares the 2 cores with the pooler and PostgreSQL, so only the
ratio within one run means anything.

Usage: bench/login_storm.py [--clients 2000] [--spread 1.0] [--pool 10] [--rounds 1] [--threads N]
                            [--only wirepool,baseline,pgbouncer-1.25] [--baseline BIN]   (run with /usr/bin/python3)
"""

import argparse
import json
import os
import resource
import struct
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
from harness import raw_login  # noqa: E402
from pgbench_poolers import (FIXTURE, bench_wirepool, cpu_seconds, percentile,  # noqa: E402
                             start_peers)


def one_query(sock):
    sql = b"SELECT 1\0"
    sock.sendall(b"Q" + struct.pack("!I", len(sql) + 4) + sql)
    buf = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            raise AssertionError("closed during the query")
        buf += chunk
        # ReadyForQuery is the last message: 'Z', length 5, status.
        if len(buf) >= 6 and buf[-6:-5] == b"Z":
            return


def storm(port, clients, spread):
    logins, queries, failures, done = [], [], [], []
    lock = threading.Lock()
    start = time.monotonic() + 0.5

    def client(i):
        time.sleep(max(0.0, start + spread * i / clients - time.monotonic()))
        t0 = time.monotonic()
        try:
            s = raw_login(port, "bench", "bench", "bench", timeout=60)
            t1 = time.monotonic()
            one_query(s)
            t2 = time.monotonic()
            s.close()
            with lock:
                done.append(t1)
                logins.append((t1 - t0) * 1000)
                queries.append((t2 - t1) * 1000)
        except Exception as e:  # noqa: BLE001 - every failure is counted, not raised
            with lock:
                failures.append(str(e)[:200])

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out = {"clients": clients, "ok": len(logins), "failed": len(failures)}
    if logins:
        out.update({"login_p50_ms": round(percentile(logins, 0.50), 1),
                    "login_p99_ms": round(percentile(logins, 0.99), 1),
                    "login_max_ms": round(max(logins), 1),
                    "logins_per_s": round(len(logins) / max(1e-6, max(done) - start)),
                    "query_p50_ms": round(percentile(queries, 0.50), 2),
                    "query_p99_ms": round(percentile(queries, 0.99), 2)})
    if failures:
        out["first_failure"] = failures[0]
    return out


def listen_overflows():
    """The kernel's count of connections dropped because a listen queue was
    full (TcpExt ListenOverflows, machine-wide): the client retries its SYN
    after 1 s, which shows as a login taking over a second."""
    with open("/proc/net/netstat") as f:
        lines = f.read().splitlines()
    for names, values in zip(lines[::2], lines[1::2]):
        if names.startswith("TcpExt:"):
            return int(dict(zip(names.split()[1:], values.split()[1:]))["ListenOverflows"])
    return 0


def run_one(name, binary, pg, args):
    """One fresh pooler process through one storm, with its CPU and the
    client's (this process: SCRAM's PBKDF2 in the client threads) over it."""
    if name == "pgbouncer-1.25":
        peers = start_peers(pg, args.pool, "scram", log=lambda m: print(m, file=sys.stderr),
                            only=name)
        if name not in peers:
            return None
        peer = peers[name]
        port, pid, stop = peer.port, peer.pid, peer.stop
    else:
        wp = bench_wirepool(pg, args.pool, "storm", threads=args.threads, max_clients=100000,
                            binary=binary)
        wp.start(timeout=120)  # long enough for valgrind (a callgrind profile)
        port, pid, stop = wp.port, wp.proc.pid, wp.cleanup
    try:
        cpu0, mine0, drops0 = cpu_seconds(pid), os.times(), listen_overflows()
        out = storm(port, args.clients, args.spread)
        cpu1, mine1, drops1 = cpu_seconds(pid), os.times(), listen_overflows()
        out["listen_overflows"] = drops1 - drops0
    finally:
        stop()
    if out["ok"]:
        out["cpu_us_per_login"] = round((cpu1 - cpu0) * 1e6 / out["ok"])
        client = mine1.user + mine1.system - mine0.user - mine0.system
        out["client_cpu_us_per_login"] = round(client * 1e6 / out["ok"])
    return out


def summarize(runs):
    """Per pooler: the median and min/max of each figure over the rounds."""
    out = {}
    names = sorted({n for r in runs for n in r})
    for name in names:
        rs = [r[name] for r in runs if name in r]
        s = {"ok": [r["ok"] for r in rs], "failed": [r["failed"] for r in rs]}
        for key in ("logins_per_s", "login_p50_ms", "login_p99_ms", "cpu_us_per_login",
                    "client_cpu_us_per_login"):
            v = sorted(r[key] for r in rs if key in r)
            if v:
                s[key] = {"median": v[len(v) // 2], "min": v[0], "max": v[-1]}
        out[name] = s
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--clients", type=int, default=2000)
    ap.add_argument("--spread", type=float, default=1.0)
    ap.add_argument("--pool", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=1,
                    help="rounds; each starts every pooler afresh, the order turning by one")
    ap.add_argument("--threads", type=int, default=None, help="wirepool's server.threads")
    ap.add_argument("--only", default="", help="comma-separated poolers (default: all)")
    ap.add_argument("--baseline", default="", help="an older wirepool binary, run as 'baseline'")
    args = ap.parse_args()
    only = set(args.only.split(",")) if args.only else None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, args.clients + 1000)), hard))
    threading.stack_size(256 << 10)

    targets = [("wirepool", None)]
    if args.baseline:
        targets.append(("baseline", args.baseline))
    targets.append(("pgbouncer-1.25", None))
    targets = [t for t in targets if not only or t[0] in only]

    pgdir = tempfile.mkdtemp(prefix="storm-pg-")
    subprocess.run(["/usr/bin/python3", FIXTURE, "start", pgdir], check=True,
                   stdout=subprocess.DEVNULL)
    result = {"clients": args.clients, "spread_s": args.spread, "pool": args.pool,
              "rounds": args.rounds, "runs": []}
    try:
        with open(os.path.join(pgdir, "info.json")) as f:
            pg = json.load(f)
        for i in range(args.rounds):
            run = {}
            turn = i % len(targets)
            for name, binary in targets[turn:] + targets[:turn]:
                r = run_one(name, binary, pg, args)
                if r is not None:
                    run[name] = r
                print(f"round {i + 1} {name}: {r}", file=sys.stderr)
            result["runs"].append(run)
        result["summary"] = summarize(result["runs"])
    finally:
        subprocess.run(["/usr/bin/python3", FIXTURE, "stop", pgdir], stdout=subprocess.DEVNULL)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
