#!/usr/bin/python3
"""The mysql driver against the same work written directly in C.

Starts a throwaway MariaDB (tests/fixtures/mariadbserver.py), then runs
build/release/driver_bench (through the driver contract) and
build/release/mysql_raw (bench/c/mysql_raw.c, libmysqlclient with the driver's
strategy) alternately RUNS times each: insert 20,000 rows of (bigint, text,
double) through one prepared statement in one transaction, scan them with one
streaming reader, 5,000 primary-key lookups through one prepared statement.
Prints (and writes to bench/results/mysql_driver_vs_c.json) the median rows
per second of each cell and the ratio driver / C. A third program, mysql_raw
with MYSQL_RAW_NONBLOCK=1, runs the scan and the lookups through MariaDB's
non-blocking API (poll between calls, as on an event loop): the ratio
nonblocking / blocking is the measurement behind the driver's blocking design.

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
        raw = [os.path.join(build, "mysql_raw"), info["host"], str(info["port"]), info["user"],
               info["database"]]
        programs = {
            "driver": ([os.path.join(build, "driver_bench"), "mysql", conn], env),
            "c": (raw, env),
            "c_nonblock": (raw, dict(env, MYSQL_RAW_NONBLOCK="1")),
        }
        results = {name: [] for name in programs}
        for _ in range(runs):
            for name, (cmd, e) in programs.items():  # alternating, so drift hits all
                out = subprocess.run(cmd, env=e, check=True, capture_output=True, text=True)
                results[name].append(json.loads(out.stdout))
        table = {}
        for cell in CELLS:
            med = {name: statistics.median(r[cell] for r in rs) for name, rs in results.items()}
            # Contention from other work only ever slows a run down, so the best
            # of the runs is reported beside the median.
            best = {name: max(r[cell] for r in rs) for name, rs in results.items()}
            table[cell] = dict(med, ratio=round(med["driver"] / med["c"], 3),
                               nonblock_ratio=round(med["c_nonblock"] / med["c"], 3),
                               best=best, best_ratio=round(best["driver"] / best["c"], 3),
                               best_nonblock_ratio=round(best["c_nonblock"] / best["c"], 3))
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
