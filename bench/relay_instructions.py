#!/usr/bin/python3
"""The relay's cost per transaction counted, not timed: each wirepool binary
given runs under `valgrind --tool=callgrind` (threads: 1, transaction mode,
pool `--pool`; `--pool-mode session` counts the ordinary path instead) in
front of a throwaway PostgreSQL while pgbench -S runs a fixed number of
transactions in each protocol mode.

Per binary and mode: the counters are zeroed after a warm-up, pgbench runs
`-t 1` (its logins) and then `-t TX`, each followed by a dump; the difference
over clients x (TX - 1) transactions is the instructions per transaction.
The dumps stay in --out for callgrind_annotate (inclusive cost per function).

`--sqlite select|read-write` counts the embedded SQLite path instead (no
PostgreSQL; pool `--pool`, bench/pgbench_sqlite.py's tables and script).

Prints one JSON object: per binary and mode the instructions per transaction.
Binaries run one after the other, `--runs` times in turn: how many batches join
a train depends on timing, so single runs differ by a few per cent.

Usage: bench/relay_instructions.py BIN [BIN ...] [--tx 2000] [--clients 8]
                                   [--runs 1] [--pool 10] [--out DIR]
                                   [--pool-mode transaction|session]
                                   [--sqlite select|read-write]
Run with /usr/bin/python3; needs valgrind and postgresql-15. About a minute per
binary and run on a 2-core machine (docs/performance-notes.md has figures).
"""

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(HERE, "..", "tests", "fixtures", "pgserver.py")
PGBENCH = "/usr/lib/postgresql/15/bin/pgbench"
MODES = ("simple", "extended", "prepared")
SQLITE_TABLES = (
    "CREATE TABLE accounts (aid INTEGER PRIMARY KEY, abalance INTEGER NOT NULL);\n"
    "CREATE TABLE history (id INTEGER PRIMARY KEY, aid INTEGER, delta INTEGER);\n"
    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000)\n"
    "INSERT INTO accounts SELECT i, 0 FROM n;\n")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def total_of(path):
    with open(path) as f:
        for line in f:
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    return None


def measure(binary, pg, args, out):
    """Instructions per transaction of `binary`, per mode; dumps in `out`."""
    os.makedirs(os.path.join(out, "state"), exist_ok=True)
    port = free_port()
    config = os.path.join(out, "wirepool.yaml")
    if args.sqlite:
        db = os.path.join(out, "bench.db")
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(db + suffix):
                os.unlink(db + suffix)
        backend = f"""driver: sqlite
    connection: {db}
    options: {{ busy_timeout: 10s }}"""
    else:
        backend = f"""driver: postgresql
    connection: "host={pg['host']} port={pg['port']} user={pg['user']} dbname={pg['database']}"
    password_env: WIREPOOL_BENCH_PG_PASSWORD"""
    with open(config, "w") as f:
        f.write(f"""server:
  state_dir: {out}/state
  log: {{ level: warn }}
  threads: 1
listeners:
  - {{ protocol: postgres, address: 127.0.0.1, port: {port} }}
users:
  - {{ name: bench, password: bench }}
databases:
  - name: bench
    {backend}
    pool: {{ mode: {args.pool_mode}, max: {args.pool}, acquire_timeout: 60s }}
""")
    env = dict(os.environ, WIREPOOL_BENCH_PG_PASSWORD=pg["password"] if pg else "")
    log = open(os.path.join(out, "wirepool.log"), "w")
    proc = subprocess.Popen(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}/cg.%p",
                             binary, "--config", config], stdout=log, stderr=subprocess.STDOUT,
                            env=env)
    bench_env = dict(os.environ, PGPASSWORD="bench")

    def pgbench(mode, tx):
        script = ["-f", args.script] if args.sqlite else ["-S"]
        r = subprocess.run([PGBENCH, "-n", *script, "-M", mode, "-c", str(args.clients), "-j", "2",
                            "-t", str(tx), "-h", "127.0.0.1", "-p", str(port), "-U", "bench",
                            "bench"], capture_output=True, text=True, env=bench_env, timeout=900)
        if r.returncode != 0 or "failed transactions: 0" not in r.stdout:
            raise RuntimeError(f"pgbench -M {mode} -t {tx} failed:\n{r.stdout}{r.stderr}")

    def control(*what):
        subprocess.run(["callgrind_control", *what, str(proc.pid)], check=True,
                       capture_output=True, timeout=60)

    dumps = 0
    result = {}
    try:
        deadline = time.time() + 120
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if proc.poll() is not None or time.time() > deadline:
                    raise RuntimeError(f"wirepool did not start under valgrind (log: {out})")
                time.sleep(0.5)
        if args.sqlite:
            subprocess.run(["psql", "-h", "127.0.0.1", "-p", str(port), "-U", "bench", "-q",
                            "bench"], input=SQLITE_TABLES, text=True, env=bench_env, check=True,
                           capture_output=True, timeout=600)
        pgbench("simple", 50)  # the pool filled, caches warm
        for mode in MODES:
            pgbench(mode, 20)
            counts = {}
            for tx in (1, args.tx):
                control("-z")
                pgbench(mode, tx)
                control("-d", f"{mode}-{tx}")
                dumps += 1
                path = os.path.join(out, f"cg.{proc.pid}.{dumps}")
                deadline = time.time() + 60
                while not (os.path.exists(path) and total_of(path)):
                    if time.time() > deadline:
                        raise RuntimeError(f"no callgrind dump {path}")
                    time.sleep(0.2)
                os.replace(path, os.path.join(out, f"cg.{mode}-{tx}"))
                counts[tx] = total_of(os.path.join(out, f"cg.{mode}-{tx}"))
            result[mode] = round((counts[args.tx] - counts[1]) / (args.clients * (args.tx - 1)))
    finally:
        proc.terminate()
        try:
            proc.wait(120)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
    return result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binaries", nargs="+")
    ap.add_argument("--tx", type=int, default=2000, help="transactions per client")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--pool", type=int, default=10)
    ap.add_argument("--pool-mode", default="transaction", choices=("transaction", "session"),
                    help="session: the ordinary path (libpq), not the relay")
    ap.add_argument("--scale", type=int, default=10)
    ap.add_argument("--sqlite", choices=("select", "read-write"),
                    help="the embedded SQLite with bench/pgbench_sqlite.py's script instead")
    ap.add_argument("--out", help="where the callgrind dumps stay (default: a temporary folder)")
    args = ap.parse_args()
    if args.tx < 2:
        ap.error("--tx must be at least 2")
    out = args.out or tempfile.mkdtemp(prefix="relay-instructions-")
    pgdir = None if args.sqlite else tempfile.mkdtemp(prefix="relay-instructions-pg-")
    pg = None
    if args.sqlite:
        sys.path.insert(0, HERE)
        from pgbench_sqlite import READ_WRITE, SELECT_ONLY
        os.makedirs(out, exist_ok=True)
        args.script = os.path.join(out, "script.sql")
        with open(args.script, "w") as f:
            f.write(READ_WRITE if args.sqlite == "read-write" else SELECT_ONLY)
    else:
        shutil.rmtree(pgdir)
        subprocess.run(["/usr/bin/python3", FIXTURE, "start", pgdir], check=True,
                       stdout=subprocess.DEVNULL)
    samples = {b: {m: [] for m in MODES} for b in args.binaries}
    try:
        if pgdir:
            with open(os.path.join(pgdir, "info.json")) as f:
                pg = json.load(f)
            subprocess.run([PGBENCH, "-i", "-q", "-s", str(args.scale), "-h", pg["host"], "-p",
                            str(pg["port"]), "-U", pg["user"], pg["database"]], check=True,
                           env=dict(os.environ, PGPASSWORD=pg["password"]), capture_output=True)
        for run in range(args.runs):
            for i, binary in enumerate(args.binaries):
                r = measure(binary, pg, args, os.path.join(out, f"bin{i}-run{run}"))
                print(json.dumps({"binary": binary, "run": run, **r}), file=sys.stderr)
                for m in MODES:
                    samples[binary][m].append(r[m])
    finally:
        if pgdir:
            subprocess.run(["/usr/bin/python3", FIXTURE, "stop", pgdir], check=False,
                           stdout=subprocess.DEVNULL)
    summary = {b: {m: {"mean": round(statistics.mean(v)), "runs": v} for m, v in s.items()}
               for b, s in samples.items()}
    print(json.dumps({"tx_per_client": args.tx, "clients": args.clients, "pool": args.pool,
                      "dumps": out, "instructions_per_transaction": summary}, indent=1))


if __name__ == "__main__":
    main()
