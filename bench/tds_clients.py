#!/usr/bin/python3
"""The TDS front end next to the PostgreSQL one, in one run against the same
wirepool and SQLite database:

- queries per second of one client looping over a primary-key SELECT with one
  bound parameter: tedious 20 (sp_executesql over TDS 8.0, TLS 1.3) and
  node-postgres (extended protocol, plaintext; with --pg-tls over TLS 1.3);
- RSS per idle TDS client (N tedious connections logged in and idle).

Usage: bench/tds_clients.py [SECONDS] [N] [--pg-tls]   (defaults 10 s, 1000 clients)
Run after `make build` and the npm install of `make test` (build/npm).
Prints one JSON object. A measurement, not a test: no threshold is asserted.
"""

import json
import os
import resource
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
from harness import NODE_PATH, Wirepool  # noqa: E402
from pgbench_poolers import cpu_seconds  # noqa: E402

NODE22 = os.path.join(NODE_PATH, ".bin", "node")
TDS_JS = os.path.join(HERE, "..", "tests", "e2e", "node", "tds.js")


def node(args, **kw):
    return subprocess.run([NODE22] + args, capture_output=True, text=True,
                          env=dict(os.environ, NODE_PATH=NODE_PATH), **kw)


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    seconds = int(args[0]) if args else 10
    n = int(args[1]) if len(args) > 1 else 1000
    pg_tls = "--pg-tls" in sys.argv
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, n + 1000)), hard))
    wp = Wirepool(server="log: { level: warn }\nmax_clients: 100000\n", name="tdsbench",
                  tls="{ generate: true }", tds=True)
    wp.start()
    cfg = dict(port=wp.tds_port, ca=wp.certificate(), user="alice", password="wonderland",
               database="app", lib="tedious", encrypt="strict", seconds=seconds, clients=n)
    try:
        cpu0 = cpu_seconds(wp.proc.pid)
        r = node([TDS_JS, "bench", json.dumps(cfg)], timeout=seconds + 60)
        cpu1 = cpu_seconds(wp.proc.pid)
        tds_qps = float(r.stdout.split("tds bench:")[1].split()[0]) if "tds bench:" in r.stdout else None
        if tds_qps is None:
            print(r.stdout, r.stderr, file=sys.stderr)
        dsn = (wp.dsn(sslmode="verify-full", sslrootcert=wp.certificate()) if pg_tls
               else wp.dsn())
        cpu2 = cpu_seconds(wp.proc.pid)
        r = node([os.path.join(HERE, "node", "pg_loop.js"), dsn, str(seconds)],
                 timeout=seconds + 60)
        cpu3 = cpu_seconds(wp.proc.pid)
        pg_qps = float(r.stdout.split("pg bench:")[1].split()[0]) if "pg bench:" in r.stdout else None
        if pg_qps is None:
            print(r.stdout, r.stderr, file=sys.stderr)

        # Idle TDS clients: RSS before and after N logins.
        warm = node([TDS_JS, "connect_only", json.dumps(cfg)], timeout=60)
        assert warm.returncode == 0, warm.stderr
        time.sleep(0.5)
        before = wp.rss_kib()
        p = subprocess.Popen([NODE22, TDS_JS, "idle", json.dumps(cfg)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True,
                             env=dict(os.environ, NODE_PATH=NODE_PATH))
        started = time.time()
        line = p.stdout.readline()
        login_s = time.time() - started
        time.sleep(2)
        after = wp.rss_kib()
        p.stdin.close()
        p.wait(timeout=120)
        print(json.dumps({
            "seconds": seconds,
            "tedious_qps": tds_qps,
            "node_postgres_qps": pg_qps,
            "node_postgres_tls": pg_tls,
            "tds_over_pg": round(tds_qps / pg_qps, 3) if tds_qps and pg_qps else None,
            # wirepool's own CPU per query (the clients' CPU is not counted)
            "wirepool_us_per_tds_query": round((cpu1 - cpu0) * 1e6 / (tds_qps * seconds), 1)
            if tds_qps else None,
            "wirepool_us_per_pg_query": round((cpu3 - cpu2) * 1e6 / (pg_qps * seconds), 1)
            if pg_qps else None,
            "idle_tds_clients": n,
            "idle_connected": line.strip(),
            "tds_logins_per_s": round(n / login_s, 1),
            "rss_before_kib": before,
            "rss_after_kib": after,
            "bytes_per_idle_tds_client": round((after - before) * 1024 / n),
        }, indent=2))
    finally:
        wp.stop()
        wp.cleanup()


if __name__ == "__main__":
    main()
