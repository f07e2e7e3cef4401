#!/usr/bin/python3
"""Pipelined INSERTs through wirepool to the ODBC databases: batched as
parameter arrays (docs/protocol-postgres.md, "Batches") against the same
INSERTs one round trip each.

Starts a throwaway PostgreSQL and MariaDB (tests/fixtures/) and a wirepool
(build/release/wirepool) with three ODBC databases: psqlODBC to the
PostgreSQL, MariaDB ODBC to the MariaDB, SQLite ODBC to a file. For each, in
alternating rounds, pgbench -M prepared -c 4 -j 2 runs for SECONDS each:
  pipelined:  \\startpipeline, 100 INSERTs of one text, \\endpipeline
              (each pipeline one batch of 100 executions)
  one by one: BEGIN, the same 100 INSERTs, END (a round trip per INSERT)
and, for reference, both scripts directly against PostgreSQL. Prints and
writes bench/results/odbc_batch.json: median rows/s per cell and the ratio
pipelined / one by one.

Usage: bench/odbc_batch.py [ROUNDS] [SECONDS]   (/usr/bin/python3, as root)
A measurement, not a test: the machine is shared and noisy.
"""

import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "e2e"))
os.environ.setdefault("WIREPOOL_BIN", os.path.join(REPO, "build", "release", "wirepool"))
import harness  # noqa: E402
from odbc_vs_c import start, stop  # noqa: E402  (the fixtures, started the same way)

INSERTS = 100
INSERT = "INSERT INTO e_b (c, n) VALUES (:c, :n);\n"
SCRIPTS = {
    "pipelined": ("\\set c random(1, 1000000)\n\\set n random(0, 9)\n\\startpipeline\n" +
                  INSERT * INSERTS + "\\endpipeline\n"),
    "one_by_one": ("\\set c random(1, 1000000)\n\\set n random(0, 9)\nBEGIN;\n" +
                   INSERT * INSERTS + "END;\n"),
}


def pgbench(script, seconds, host, port, user, password, database):
    env = dict(os.environ, PGPASSWORD=password)
    r = subprocess.run([harness.PGBENCH, "-n", "-M", "prepared", "-c", "4", "-j", "2",
                        "-T", str(seconds), "-f", script, "-h", host, "-p", str(port),
                        "-U", user, database], capture_output=True, text=True, env=env,
                       timeout=seconds + 120)
    if r.returncode != 0:
        raise RuntimeError(r.stdout + r.stderr)
    failed = re.search(r"number of failed transactions: (\d+)", r.stdout)
    if failed and failed.group(1) != "0":
        raise RuntimeError(r.stdout)
    tps = float(re.search(r"tps = ([\d.]+)", r.stdout).group(1))
    return tps * INSERTS


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    seconds = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    work = tempfile.mkdtemp(prefix="wp-odbc-batch-")
    os.chmod(work, 0o755)  # the servers run as postgres / mysql
    scripts = {}
    for name, text in SCRIPTS.items():
        scripts[name] = os.path.join(work, name + ".sql")
        with open(scripts[name], "w") as f:
            f.write(text)
    pg = start("pgserver.py", os.path.join(work, "pg"))
    try:
        maria = start("mariadbserver.py", os.path.join(work, "mariadb"))
        try:
            os.environ["WP_BENCH_PG_PASSWORD"] = pg["password"]
            os.environ["WP_BENCH_MARIA_PASSWORD"] = maria["password"]
            db_file = os.path.join(work, "batch.db")
            wp = harness.Wirepool(databases=f"""
              - name: odbc_pg
                driver: odbc
                connection: "Driver={{PostgreSQL Unicode}};Server={pg['host']};Port={pg['port']};Database={pg['database']};Uid={pg['user']};BoolsAsChar=0"
                password_env: WP_BENCH_PG_PASSWORD
                pool: {{ mode: transaction, max: 4 }}
              - name: odbc_maria
                driver: odbc
                connection: "Driver={{MariaDB Unicode}};Server={maria['host']};Port={maria['port']};Database={maria['database']};Uid={maria['user']}"
                password_env: WP_BENCH_MARIA_PASSWORD
                pool: {{ mode: transaction, max: 4 }}
              - name: odbc_sqlite
                driver: odbc
                connection: "Driver={{SQLite3}};Database={db_file}"
                pool: {{ mode: transaction, max: 4 }}
            """, users="- { name: alice, password: wonderland }",
                server="log: { level: warn }", http=True)
            wp.start()
            try:
                targets = {
                    "odbc_pg": ("127.0.0.1", wp.port, "alice", "wonderland", "odbc_pg"),
                    "odbc_maria": ("127.0.0.1", wp.port, "alice", "wonderland", "odbc_maria"),
                    "odbc_sqlite": ("127.0.0.1", wp.port, "alice", "wonderland", "odbc_sqlite"),
                    "postgresql_direct": (pg["host"], pg["port"], pg["user"], pg["password"],
                                          pg["database"]),
                }
                for name, (host, port, user, password, database) in targets.items():
                    dsn = (f"host={host} port={port} user={user} password={password} "
                           f"dbname={database}")
                    harness.psql(dsn, "-c", "DROP TABLE IF EXISTS e_b")
                    harness.psql(dsn, "-c", "CREATE TABLE e_b (c bigint NOT NULL, n int NOT NULL)")
                samples = {t: {s: [] for s in SCRIPTS} for t in targets}
                for _ in range(rounds):  # alternating, so drift hits every cell
                    for t, args in targets.items():
                        for s in SCRIPTS:
                            samples[t][s].append(pgbench(scripts[s], seconds, *args))
                table = {}
                for t in targets:
                    med = {s: statistics.median(samples[t][s]) for s in SCRIPTS}
                    table[t] = {"pipelined_rows_per_s": round(med["pipelined"]),
                                "one_by_one_rows_per_s": round(med["one_by_one"]),
                                "ratio": round(med["pipelined"] / med["one_by_one"], 2)}
                metrics = wp.metrics()
                batched = {k: v for k, v in metrics.items()
                           if k.startswith("wirepool_batched_executions_total")}
            finally:
                wp.stop()
        finally:
            stop("mariadbserver.py", os.path.join(work, "mariadb"))
    finally:
        stop("pgserver.py", os.path.join(work, "pg"))
    report = {"rounds": rounds, "seconds": seconds, "inserts_per_transaction": INSERTS,
              "median": table, "batched_executions": batched, "all": samples}
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    with open(os.path.join(HERE, "results", "odbc_batch.json"), "w") as f:
        json.dump(report, f, indent=2)
    print(json.dumps({"median": table, "batched_executions": batched}, indent=2))


if __name__ == "__main__":
    main()
