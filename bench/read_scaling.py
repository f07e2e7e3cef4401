#!/usr/bin/python3
"""Read scaling through wirepool's read replicas (docs/high-availability.md#read-replicas).

Starts a PostgreSQL 15 primary and two asynchronous streaming standbys
(tests/fixtures/pgserver.py), loads pgbench's tables (scale 10) on the
primary, and runs `pgbench -S` (select-only) through one wirepool:

  - `app`: the primary alone (read-write database, `hosts:` the three servers);
  - `app_ro`: the read-only database (`read_only:`), least_connections;
  - `app_rr`: the same with balance round_robin.

With --statements it compares instead, over --rounds rounds, the read-write
database with read_only.route_statements off (`app`: every SELECT on the
primary) and on (`app_st`: pgbench's autocommit SELECTs on the standbys).

For each: transactions per second, average and p99 latency (from pgbench's
per-transaction log) and how the transactions spread over the servers
(pg_stat_database.xact_commit on each). All servers, wirepool and pgbench
share this host's cores, so more servers buy no CPU: the figures show the
cost and the spread, not the scaling a real deployment gets.

    /usr/bin/python3 bench/read_scaling.py [--bin build/release/wirepool]
        [--seconds 15] [--clients 16] [--pool 8] [--statements --rounds 3]
"""

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "e2e"))
from harness import PGBENCH, PSQL, Wirepool  # noqa: E402
from test_replicas import STANDBYS, fixture, replicas_cluster, superuser  # noqa: E402

USERS = """
  - { name: alice, password: wonderland }
  - { name: ops, password: secret, admin: true }
"""
NODES = ("primary",) + STANDBYS


def entries(info, pool, statements=False):
    hosts = "\n".join(f"      - {{ host: 127.0.0.1, port: {info['nodes'][n]['port']} }}"
                      for n in NODES)
    out = ""
    dbs = [("app", "app_ro", "least_connections", ""), ("app2", "app_rr", "round_robin", "")]
    if statements:
        dbs.append(("app_st", "app_st_ro", "least_connections", ", route_statements: true"))
    for name, ro, balance, route in dbs:
        out += f"""
          - name: {name}
            driver: postgresql
            connection: "user=wirepool dbname=wirepool"
            password_env: WIREPOOL_TEST_PG_PASSWORD
            hosts:
{chr(10).join('      ' + line for line in hosts.splitlines())}
            read_only: {{ name: {ro}, max_replica_lag: 5s,
                         balance: {balance}{route} }}
            pool: {{ mode: transaction, max: {pool} }}
        """
    return out


def commits(info):
    # Backends report their counts at most every second, idle ones after 10 s.
    time.sleep(11)
    out = {}
    for n in NODES:
        rows = superuser(info, n, "SELECT xact_commit FROM pg_stat_database "
                                  "WHERE datname = 'wirepool'")
        out[n] = rows[0][0]
    return out


def connections(wp, database):
    r = subprocess.run([PSQL, "-X", "-A", "-t", "-F", "|", "-d", wp.dsn("ops", "secret", "wirepool"),
                        "-c", "SHOW HOSTS"], capture_output=True, text=True, check=True)
    per = []
    for line in r.stdout.split():
        cols = line.split("|")
        if cols[0] == database:
            per.append(cols[-1])
    return " / ".join(per)


def pgbench(wp, database, seconds, clients, logdir):
    for f in glob.glob(os.path.join(logdir, "pgbench_log.*")):
        os.remove(f)
    env = dict(os.environ, PGPASSWORD="wonderland")
    r = subprocess.run([PGBENCH, "-n", "-S", "-M", "extended", "-c", str(clients), "-j", "2",
                        "-T", str(seconds), "-l", "--log-prefix",
                        os.path.join(logdir, "pgbench_log"), "-h", "127.0.0.1", "-p",
                        str(wp.port), "-U", "alice", database],
                       capture_output=True, text=True, env=env, timeout=seconds + 120)
    if r.returncode != 0:
        raise SystemExit(f"pgbench failed ({r.returncode}): {r.stderr[-2000:]}")
    tps = float(re.search(r"tps = ([\d.]+)", r.stdout).group(1))
    lat = []
    for f in glob.glob(os.path.join(logdir, "pgbench_log.*")):
        with open(f) as fh:
            for line in fh:
                lat.append(int(line.split()[2]))  # microseconds
    lat.sort()
    p99 = lat[int(len(lat) * 0.99)] / 1000.0
    avg = sum(lat) / len(lat) / 1000.0
    return tps, avg, p99


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(REPO, "build", "release", "wirepool"))
    ap.add_argument("--seconds", type=int, default=15)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--pool", type=int, default=8)
    ap.add_argument("--statements", action="store_true",
                    help="route_statements off (app) vs on (app_st), --rounds rounds each")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    d, info = replicas_cluster("bench")
    wp = None
    logdir = tempfile.mkdtemp(prefix="read-scaling-")
    try:
        os.environ["WIREPOOL_TEST_PG_PASSWORD"] = info["password"]
        p = info["nodes"]["primary"]
        subprocess.run([PGBENCH, "-i", "-q", "-s", "10", "-h", p["socket_dir"], "-p",
                        str(p["port"]), "-U", "postgres", info["database"]],
                       check=True, capture_output=True)
        superuser(info, "primary", "GRANT SELECT ON ALL TABLES IN SCHEMA public TO wirepool")
        time.sleep(2)  # the standbys replay the load
        wp = Wirepool(entries(info, args.pool, args.statements), USERS, "log: { level: info }",
                      name="read-scaling", binary=os.path.abspath(args.bin)).start()
        print(f"pgbench -S -M extended, {args.clients} clients, {args.seconds} s, pool max "
              f"{args.pool}; one 2-core host shared by the servers, wirepool and pgbench")
        print("| database | servers read | tps | avg ms | p99 ms | transactions per server "
              "(primary / standby / standby2) | connections per server |")
        print("|---|---|---|---|---|---|---|")
        runs = [("app", "primary alone"), ("app_ro", "2 standbys, least_connections"),
                ("app_rr", "2 standbys, round_robin")]
        if args.statements:
            runs = [("app", "route_statements off"),
                    ("app_st", "route_statements on")] * args.rounds
        for database, what in runs:
            # A short warm-up opens the pools' connections.
            pgbench(wp, database, 2, args.clients, logdir)
            before = commits(info)
            tps, avg, p99 = pgbench(wp, database, args.seconds, args.clients, logdir)
            after = commits(info)
            spread = " / ".join(str(after[n] - before[n]) for n in NODES)
            print(f"| {database} | {what} | {tps:,.0f} | {avg:.2f} | {p99:.2f} | {spread} | "
                  f"{connections(wp, database)} |", flush=True)
        # A standby excluded during a run sends its reads to the primary: say so.
        for line in wp.log().splitlines():
            if "takes no reads" in line or "takes reads" in line or "banned" in line:
                print("log:", line)
    finally:
        if wp:
            wp.stop()
            wp.cleanup()
        fixture("stop", d)
        shutil.rmtree(logdir, ignore_errors=True)


if __name__ == "__main__":
    main()
