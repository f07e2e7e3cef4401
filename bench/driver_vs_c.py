#!/usr/bin/python3
"""The mysql driver against the same work written directly in C.

Starts a throwaway MariaDB (tests/fixtures/mariadbserver.py), then runs
build/release/driver_bench (through the driver contract) and
build/release/mysql_raw (bench/c/mysql_raw.c, libmysqlclient with the driver's
strategy) alternately RUNS times each: insert 20,000 rows of (bigint, text,
double) through one prepared statement in one transaction, scan them with one
streaming reader, 5,000 primary-key lookups through one prepared statement.
Prints (and writes to bench/results/mysql_driver_vs_c.json) the median rows
per second of each cell and the ratio driver / C.

Usage: bench/driver_vs_c.py [RUNS] [BUILD_DIR]   (/usr/bin/python3)
A measurement, not a test: the machine is shared and noisy; do not run it
while something compiles.
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
FIXTURE = os.path.join(REPO, "tests", "fixtures", "mariadbserver.py")
CELLS = ("insert_rows_per_s", "scan_rows_per_s", "lookup_rows_per_s")


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    build = sys.argv[2] if len(sys.argv) > 2 else os.path.join(REPO, "build", "release")
    d = tempfile.mkdtemp(prefix="wp-mysql-bench-")
    subprocess.run(["/usr/bin/python3", FIXTURE, "start", d], check=True,
                   stdout=subprocess.DEVNULL)
    try:
        with open(os.path.join(d, "info.json")) as f:
            info = json.load(f)
        env = dict(os.environ, WIREPOOL_BENCH_PASSWORD=info["password"])
        conn = (f"host={info['host']} port={info['port']} user={info['user']} "
                f"dbname={info['database']}")
        programs = {
            "driver": [os.path.join(build, "driver_bench"), "mysql", conn],
            "c": [os.path.join(build, "mysql_raw"), info["host"], str(info["port"]),
                  info["user"], info["database"]],
        }
        results = {"driver": [], "c": []}
        for _ in range(runs):
            for name, cmd in programs.items():  # alternating, so drift hits both
                out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
                results[name].append(json.loads(out.stdout))
        table = {}
        for cell in CELLS:
            drv = statistics.median(r[cell] for r in results["driver"])
            c = statistics.median(r[cell] for r in results["c"])
            table[cell] = {"driver": drv, "c": c, "ratio": round(drv / c, 3)}
        report = {"runs": runs, "rows": 20000, "lookups": 5000, "median": table,
                  "all": results}
        os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
        with open(os.path.join(HERE, "results", "mysql_driver_vs_c.json"), "w") as f:
            json.dump(report, f, indent=2)
        print(json.dumps({"runs": runs, "median": table}, indent=2))
    finally:
        subprocess.run(["/usr/bin/python3", FIXTURE, "stop", d], stdout=subprocess.DEVNULL)


if __name__ == "__main__":
    main()
