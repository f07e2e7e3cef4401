#!/usr/bin/python3
"""pgbench through wirepool to its embedded SQLite backend.

Two scripts (a primary-key SELECT, and a TPC-B-like read-write transaction) in
each query mode (simple, extended, prepared), `-c 32 -j 2`, over a pool of
`max` backend connections in transaction mode. Prints one JSON object with the
TPS and mean latency of each run, and wirepool's CPU seconds per run.

Usage: bench/pgbench_sqlite.py [seconds per run] [pool max]   (/usr/bin/python3)
A measurement, not a test: nothing is asserted. The machine is shared and noisy;
compare runs made side by side.
"""

import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
from harness import PGBENCH, Wirepool, psql  # noqa: E402
from pgbench_poolers import cpu_seconds  # noqa: E402

SELECT_ONLY = "\\set aid random(1, 100000)\nSELECT abalance FROM accounts WHERE aid = :aid;\n"
READ_WRITE = """\\set aid random(1, 100000)
\\set delta random(-5000, 5000)
BEGIN;
UPDATE accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM accounts WHERE aid = :aid;
INSERT INTO history (aid, delta) VALUES (:aid, :delta);
END;
"""


def main():
    seconds = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    pool_max = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    wp = Wirepool(databases=f"""
      - name: app
        driver: sqlite
        connection: bench.db
        options: {{ busy_timeout: 10s }}
        pool: {{ mode: transaction, max: {pool_max} }}
    """, server="log: { level: warn }\n", name="pgbench-sqlite")
    wp.start()
    results = {"seconds": seconds, "clients": 32, "pool_max": pool_max, "runs": []}
    try:
        psql(wp.dsn(), input=(
            "CREATE TABLE accounts (aid INTEGER PRIMARY KEY, abalance INTEGER NOT NULL);\n"
            "CREATE TABLE history (id INTEGER PRIMARY KEY, aid INTEGER, delta INTEGER);\n"
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000)\n"
            "INSERT INTO accounts SELECT i, 0 FROM n;\n"))
        env = dict(os.environ, PGPASSWORD="wonderland")
        for name, script in (("select", SELECT_ONLY), ("read-write", READ_WRITE)):
            with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as f:
                f.write(script)
            for mode in ("simple", "extended", "prepared"):
                cpu0 = cpu_seconds(wp.proc.pid)
                r = subprocess.run(
                    [PGBENCH, "-n", "-M", mode, "-c", "32", "-j", "2", "-T", str(seconds), "-f",
                     f.name, "-h", "127.0.0.1", "-p", str(wp.port), "-U", "alice", "app"],
                    capture_output=True, text=True, env=env, timeout=seconds * 4 + 60)
                cpu = cpu_seconds(wp.proc.pid) - cpu0
                tps = re.search(r"tps = ([\d.]+)", r.stdout)
                lat = re.search(r"latency average = ([\d.]+) ms", r.stdout)
                failed = re.search(r"number of failed transactions: (\d+)", r.stdout)
                results["runs"].append({
                    "script": name, "mode": mode, "exit": r.returncode,
                    "tps": float(tps.group(1)) if tps else None,
                    "latency_ms": float(lat.group(1)) if lat else None,
                    "failed": int(failed.group(1)) if failed else None,
                    "wirepool_cpu_s": round(cpu, 2),
                })
            os.unlink(f.name)
    finally:
        wp.cleanup()
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
