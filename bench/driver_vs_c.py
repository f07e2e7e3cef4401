#!/usr/bin/python3
"""Each driver against the same work written directly in C on its raw C API.

For every driver of this build: build/release/driver_bench (through the
driver contract, bench/driver_bench.cpp) and the C program of bench/c/ with the
driver's strategy, alternately (A B A B ...) ROUNDS times after a warm-up run
each: insert N rows of (bigint, text, double) through one prepared statement in
one transaction, scan them with one streaming reader, M primary-key lookups
through one prepared statement.

  sqlite      bench/c/sqlite.c   on a file          N = 100,000, M = 20,000
  postgresql  bench/c/libpq.c    throwaway PG 15    N = 20,000,  M = 5,000
  mysql       bench/c/mysql.c    throwaway MariaDB  N = 20,000,  M = 5,000
  odbc        bench/c/odbc.c     psqlODBC, MariaDB ODBC and SQLite ODBC (each a row),
                                 N = 20,000, M = 5,000; SQLite ODBC (in-process, like
                                 sqlite) N = 100,000, M = 20,000 (bench/odbc_vs_c.py
                                 adds the psqlODBC-vs-libpq scan)

The scan is read 5 times in every program run, the median reported.

Pinned (unless --no-pin, or fewer than 2 CPUs are usable): both programs run
on one CPU (taskset), and for a server driver the server's processes and
threads on another for the driver's rows (its own placement restored after).
Unpinned, the scheduler's placement of client and server (or, in-process, of
the program) split the samples of both programs into two modes (the psqlODBC
scan ~620k or ~930k rows/s; SQLite ODBC insert 178-297k rows/s, per-round
ratios 0.60-0.99), and a median of 5-9 rounds mixed them. Both programs of a
row always run alike, so the ratio stays a like-for-like comparison; what
pinning leaves out is the cost of client and server sharing a CPU.

(--quick: a fifth of N and M.) Prints one JSON object: every sample, per driver
and cell the median and best rows per second of each program, and the driver
as a percentage of C (above 100%: the driver was faster): the median over the
rounds of each round's driver/C ratio (the two runs of a round are back to
back, so a machine that slows down for a while slows both; a ratio of the two
medians, kept as `*_pct_of_medians`, paired a driver run from a slow stretch
with a C run from a fast one: SQLite ODBC insert 86% against 95% paired in one
pinned run). Also writes
bench/results/driver_vs_c.json unless --no-save.

Usage: bench/driver_vs_c.py [--rounds 5] [--quick] [--only sqlite,mysql] [--no-pin]
The PostgreSQL server of `make bench` is reused when $WIREPOOL_BENCH_PG_INFO
names its info.json; else one is started. A measurement, not a test.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
FIXTURES = os.path.join(REPO, "tests", "fixtures")
CELLS = ("insert", "scan", "lookup")


def log(msg):
    print(f"[driver_vs_c] {msg}", file=sys.stderr, flush=True)


class Server:
    """A throwaway server from tests/fixtures (pgserver.py / mariadbserver.py)."""

    def __init__(self, script):
        self.script = os.path.join(FIXTURES, script)
        self.dir = tempfile.mkdtemp(prefix="wp-driver-bench-")
        shutil.rmtree(self.dir)
        subprocess.run(["/usr/bin/python3", self.script, "start", self.dir], check=True,
                       stdout=subprocess.DEVNULL)
        with open(os.path.join(self.dir, "info.json")) as f:
            self.info = json.load(f)

    def stop(self):
        subprocess.run(["/usr/bin/python3", self.script, "stop", self.dir],
                       stdout=subprocess.DEVNULL)


def cpus_to_pin():
    """(client CPU, server CPU) as strings, or None with fewer than 2 usable CPUs."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2 or not shutil.which("taskset"):
        return None
    return str(cpus[-1]), str(cpus[-2])


def server_pids(port):
    """The process listening on `port` and its children (PostgreSQL's backends)."""
    r = subprocess.run(["ss", "-Hltnp", f"sport = :{port}"], capture_output=True, text=True)
    pids = set()
    for field in r.stdout.split("pid=")[1:]:
        pids.add(int(field.split(",")[0]))
    for pid in list(pids):
        c = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True)
        pids.update(int(x) for x in c.stdout.split())
    return sorted(pids)


class Pinned:
    """`pids` (every thread) on `cpu` while in the block; their own CPUs after."""

    def __init__(self, pids, cpu):
        self.pids, self.cpu, self.saved = pids, cpu, {}

    def __enter__(self):
        for pid in self.pids:
            try:
                self.saved[pid] = os.sched_getaffinity(pid)
            except OSError:
                continue
            subprocess.run(["taskset", "-a", "-p", "-c", self.cpu, str(pid)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return self

    def __exit__(self, *exc):
        for pid, cpus in self.saved.items():
            subprocess.run(["taskset", "-a", "-p", "-c", ",".join(map(str, sorted(cpus))),
                            str(pid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def setups(build, quick, only):
    """(name, n, m, {program: (cmd, env)}, cleanup, server port or None) per driver:
    programs "driver", "c",
    and for mysql "c_nonblock" (MariaDB's non-blocking API, the measurement behind
    the driver's blocking design: docs/mysql.md)."""
    scale = 5 if quick else 1
    out = []
    if "sqlite" in only:
        d = tempfile.mkdtemp(prefix="wp-sqlite-bench-")
        n, m = 100000 // scale, 20000 // scale
        env = dict(os.environ)
        out.append(("sqlite", n, m, {
            "driver": ([os.path.join(build, "driver_bench"), "sqlite", os.path.join(d, "d.db"),
                        str(n), str(m)], env),
            "c": ([os.path.join(build, "sqlite_raw"), os.path.join(d, "c.db"), str(n), str(m)],
                  env)}, lambda: shutil.rmtree(d, ignore_errors=True), None))
    servers = {}

    def pg_info():
        info_path = os.environ.get("WIREPOOL_BENCH_PG_INFO")
        if info_path and os.path.exists(info_path):
            with open(info_path) as f:
                return json.load(f)
        if "pg" not in servers:
            servers["pg"] = Server("pgserver.py")
        return servers["pg"].info

    def maria_info():
        if "mariadb" not in servers:
            servers["mariadb"] = Server("mariadbserver.py")
        return servers["mariadb"].info

    def stop_servers():
        for srv in servers.values():
            srv.stop()
        servers.clear()

    n, m = 20000 // scale, 5000 // scale
    if "postgresql" in only:
        info = pg_info()
        conn = (f"host={info['host']} port={info['port']} user={info['user']} "
                f"dbname={info['database']}")
        env = dict(os.environ, WIREPOOL_BENCH_PASSWORD=info["password"])
        out.append(("postgresql", n, m, {
            "driver": ([os.path.join(build, "driver_bench"), "postgresql", conn, str(n), str(m)],
                       env),
            "c": ([os.path.join(build, "libpq_raw"), conn, str(n), str(m)], env)},
            lambda: None, info["port"]))
    if "mysql" in only:
        info = maria_info()
        conn = (f"host={info['host']} port={info['port']} user={info['user']} "
                f"dbname={info['database']}")
        env = dict(os.environ, WIREPOOL_BENCH_PASSWORD=info["password"])
        raw = [os.path.join(build, "mysql_raw"), info["host"], str(info["port"]), info["user"],
               info["database"], str(n), str(m)]
        out.append(("mysql", n, m, {
            "driver": ([os.path.join(build, "driver_bench"), "mysql", conn, str(n), str(m)], env),
            "c": (raw, env),
            "c_nonblock": (raw, dict(env, MYSQL_RAW_NONBLOCK="1"))}, lambda: None,
            info["port"]))
    if "odbc" in only:
        pg, maria = pg_info(), maria_info()
        d = tempfile.mkdtemp(prefix="wp-sqliteodbc-bench-")
        targets = {
            "odbc (psqlODBC)": (f"Driver={{PostgreSQL Unicode}};Server={pg['host']};"
                                f"Port={pg['port']};Database={pg['database']};Uid={pg['user']};"
                                "BoolsAsChar=0", pg["password"]),
            "odbc (MariaDB ODBC)": (f"Driver={{MariaDB Unicode}};Server={maria['host']};"
                                    f"Port={maria['port']};Database={maria['database']};"
                                    f"Uid={maria['user']}", maria["password"]),
            "odbc (SQLite ODBC)": (f"Driver={{SQLite3}};Database={os.path.join(d, 'bench.db')}",
                                   ""),
        }
        ports = {"odbc (psqlODBC)": pg["port"], "odbc (MariaDB ODBC)": maria["port"]}
        for label, (conn, password) in targets.items():
            env = dict(os.environ, WIREPOOL_BENCH_PASSWORD=password)
            # SQLite ODBC runs in-process like the sqlite driver: its phases
            # at 20,000 rows last 20-80 ms, too short to time on a shared
            # machine, so it gets the sqlite driver's N and M.
            tn, tm = (100000 // scale, 20000 // scale) if "SQLite" in label else (n, m)
            out.append((label, tn, tm, {
                "driver": ([os.path.join(build, "driver_bench"), "odbc", conn, str(tn), str(tm)],
                           env),
                "c": ([os.path.join(build, "odbc_raw"), conn, str(tn), str(tm)], env)},
                lambda: None, ports.get(label)))
        out.append(("(sqlite odbc file)", 0, 0, {}, lambda: shutil.rmtree(d, ignore_errors=True),
                    None))
    out.append(("(servers)", 0, 0, {}, stop_servers, None))
    return out


def paired_pct(results, key):
    """The median of the rounds' driver/C ratios, in percent."""
    return round(100.0 * statistics.median(
        d[key] / c[key] for d, c in zip(results["driver"], results["c"])), 1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="sqlite,postgresql,mysql,odbc")
    ap.add_argument("--build", default=os.path.join(REPO, "build", "release"))
    ap.add_argument("--json", action="store_true", help="(default) print the JSON result")
    ap.add_argument("--no-save", action="store_true")
    ap.add_argument("--no-pin", action="store_true",
                    help="leave programs and servers where the scheduler puts them")
    a = ap.parse_args()
    pin = None if a.no_pin else cpus_to_pin()
    only = [d for d in a.only.split(",") if d]
    samples = []
    table = []
    cleanups = []
    try:
        entries = setups(a.build, a.quick, only)
        cleanups = [e[4] for e in entries]
        for name, n, m, programs, cleanup, port in entries:
            if not programs:
                continue
            pre = ["taskset", "-c", pin[0]] if pin else []
            with Pinned(server_pids(port) if pin and port else [], pin[1] if pin else ""):
                for cmd, env in programs.values():  # warm-up: caches, files, server buffers
                    subprocess.run(pre + cmd, env=env, check=True, capture_output=True,
                                   text=True)
                results = {p: [] for p in programs}
                for rnd in range(a.rounds):
                    # Odd rounds run the programs in reverse order: the
                    # machine's speed changes between two runs of a round
                    # (this VM has slow and fast stretches) then cost the
                    # driver and the C program equally often.
                    order = list(programs.items())
                    if rnd % 2:
                        order.reverse()
                    for p, (cmd, env) in order:
                        r = subprocess.run(pre + cmd, env=env, capture_output=True, text=True,
                                           timeout=900)
                        if r.returncode != 0:
                            raise SystemExit(f"{name} {p}: {r.stderr.strip()[-500:]}")
                        s = json.loads(r.stdout)
                        s.update(driver=name, program=p, round=rnd)
                        results[p].append(s)
                        samples.append(s)
            row = {"driver": name, "n": n, "lookups": m}
            for cell in CELLS:
                key = f"{cell}_rows_per_s"
                med = {p: statistics.median(s[key] for s in rs) for p, rs in results.items()}
                best = {p: max(s[key] for s in rs) for p, rs in results.items()}
                row[f"{cell}_driver"] = med["driver"]
                row[f"{cell}_c"] = med["c"]
                row[f"{cell}_pct"] = paired_pct(results, key)
                row[f"{cell}_pct_of_medians"] = round(med["driver"] * 100.0 / med["c"], 1)
                row[f"{cell}_best_pct"] = round(best["driver"] * 100.0 / best["c"], 1)
                if "c_nonblock" in med:
                    row[f"{cell}_c_nonblock_pct_of_c"] = round(
                        med["c_nonblock"] * 100.0 / med["c"], 1)
            # The ODBC programs also insert N rows as parameter arrays of 1000.
            if all(s.get("batch_rows_per_s", -1) > 0 for rs in results.values() for s in rs):
                med = {p: statistics.median(s["batch_rows_per_s"] for s in rs)
                       for p, rs in results.items()}
                row["batch_driver"] = med["driver"]
                row["batch_c"] = med["c"]
                row["batch_pct"] = paired_pct(results, "batch_rows_per_s")
                row["batch_pct_of_medians"] = round(med["driver"] * 100.0 / med["c"], 1)
            table.append(row)
            log(f"{name}: insert {row['insert_pct']}%, scan {row['scan_pct']}%, "
                f"lookup {row['lookup_pct']}% of C"
                + (f", batch {row['batch_pct']}%" if "batch_pct" in row else ""))
    finally:
        for c in cleanups:
            c()
    doc = {"rounds": a.rounds, "quick": a.quick,
           "pinned": {"client_cpu": pin[0], "server_cpu": pin[1]} if pin else None,
           "table": table, "samples": samples}
    if not a.no_save:
        os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
        with open(os.path.join(HERE, "results", "driver_vs_c.json"), "w") as f:
            json.dump(doc, f, indent=1)
    print(json.dumps(doc, indent=1))


if __name__ == "__main__":
    main()
