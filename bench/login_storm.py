#!/usr/bin/python3
"""A login storm: N SCRAM-SHA-256 clients connect within about a second
(spread evenly over `--spread` seconds), each runs one query and leaves, per
pooler, against one throwaway PostgreSQL. wirepool (transaction mode, pool
max POOL, a fresh process: its pool is cold) and PgBouncer 1.25 (built from
../shared/anchors, as bench/pgbench_poolers.py does; skipped with a printed
reason when absent).

Prints one JSON object: per pooler the clients that logged in and that failed,
login latency (TCP connect to the first ReadyForQuery) p50/p99/max in ms, logins
per second (clients logged in / from the first connect to the last login), and
the query's p50/p99. `--baseline OLD/wirepool` adds an older build as
"baseline", started the same way. A measurement, not a test: the client side (SCRAM in
Python threads) shares the 2 cores with the pooler and PostgreSQL, so only the
ratio within one run means anything.

Usage: bench/login_storm.py [--clients 2000] [--spread 1.0] [--pool 10]
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
from harness import Wirepool, raw_login  # noqa: E402
from pgbench_poolers import FIXTURE, percentile, start_peers  # noqa: E402


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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--clients", type=int, default=2000)
    ap.add_argument("--spread", type=float, default=1.0)
    ap.add_argument("--pool", type=int, default=10)
    ap.add_argument("--only", default="", help="comma-separated poolers (default: all)")
    ap.add_argument("--baseline", default="", help="an older wirepool binary, run as 'baseline'")
    args = ap.parse_args()
    only = set(args.only.split(",")) if args.only else None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, args.clients + 1000)), hard))
    threading.stack_size(256 << 10)

    pgdir = tempfile.mkdtemp(prefix="storm-pg-")
    subprocess.run(["/usr/bin/python3", FIXTURE, "start", pgdir], check=True,
                   stdout=subprocess.DEVNULL)
    result = {"clients": args.clients, "spread_s": args.spread, "pool": args.pool}
    try:
        with open(os.path.join(pgdir, "info.json")) as f:
            pg = json.load(f)
        os.environ["WIREPOOL_BENCH_PG_PASSWORD"] = pg["password"]
        builds = [("wirepool", None)]
        if args.baseline:
            builds.append(("baseline", args.baseline))
        for build_name, binary in builds:
            if only and build_name not in only:
                continue
            wp = Wirepool(databases=f"""
              - name: bench
                driver: postgresql
                connection: "host={pg['host']} port={pg['port']} user={pg['user']} dbname={pg['database']}"
                password_env: WIREPOOL_BENCH_PG_PASSWORD
                pool: {{ mode: transaction, max: {args.pool} }}
            """, users="- { name: bench, password: bench }",
                          server="log: { level: warn }\nmax_clients: 100000", name="storm",
                          binary=binary)
            wp.start()
            try:
                result[build_name] = storm(wp.port, args.clients, args.spread)
            finally:
                wp.cleanup()
        peer_name = "pgbouncer-1.25"
        if not only or peer_name in only:
            peers = start_peers(pg, args.pool, "scram", log=lambda m: print(m, file=sys.stderr),
                                only=peer_name)
            for name, peer in peers.items():
                try:
                    result[name] = storm(peer.port, args.clients, args.spread)
                finally:
                    peer.stop()
    finally:
        subprocess.run(["/usr/bin/python3", FIXTURE, "stop", pgdir], stdout=subprocess.DEVNULL)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
