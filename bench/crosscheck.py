#!/usr/bin/python3
"""The harness against a plain pgbench run: each pooler's TPS as `make bench`
measures it next to the TPS of the command a user would type,
`pgbench -n -S -c 32 -j 2 -T 8` (trust, no per-transaction log), in
alternating rounds on the same servers.

Variants (`--variants`, comma-separated), per pooler:
  harness      SCRAM login, --log of one transaction in ten (p50/p99), as
               bench/run.py runs it
  scram        SCRAM login, no --log
  log          trust, --log (one in ten)
  plain        trust, no --log: the plain run
  after-direct the harness's run right after a direct pgbench run of the same
               length (the order bench/run.py used: direct, then the poolers)

Usage: bench/crosscheck.py [--rounds 3] [--seconds 8] [--variants harness,plain]
                           [--targets pgbouncer,wirepool,...]
Prints one JSON object: samples, medians, spreads and each variant / plain.
A measurement, not a test.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
from harness import PGBENCH  # noqa: E402
from pgbench_poolers import FIXTURE, bench_wirepool, run_pgbench, start_peers  # noqa: E402

VARIANTS = {  # name: (auth, per-transaction log, a direct run first)
    "harness": ("scram", True, False),
    "scram": ("scram", False, False),
    "log": ("trust", True, False),
    "plain": ("trust", False, False),
    "after-direct": ("scram", True, True),
}


def start_wirepool(pg, pool, threads):
    """wirepool with `bench` on PostgreSQL (SCRAM: wirepool has no trust login)."""
    return bench_wirepool(pg, pool, "crosscheck-wirepool", threads=threads,
                          max_clients=100000).start()


def measure(pg, targets, variants, rounds, seconds, clients=32, log=print):
    """`targets`: {name: {auth: (port, database_for(mode))}}. Alternating
    rounds of every (target, variant); answers samples and a summary."""
    samples = []
    for rnd in range(rounds + 1):  # round 0: warm-up, not counted
        for name, by_auth in targets.items():
            for v in variants:
                auth, latencies, direct_first = VARIANTS[v]
                # wirepool has no trust login: its plain run logs in with SCRAM.
                port, db = by_auth.get(auth) or by_auth["scram"]
                if direct_first:
                    run_pgbench(pg["port"], pg["user"], pg["database"], "simple", seconds,
                                clients, pg["password"], latencies=True)
                s = run_pgbench(port, "bench", db("simple"), "simple",
                                seconds if rnd else 2, clients, "bench", latencies=latencies)
                if rnd == 0:
                    continue
                s.update(round=rnd, target=name, variant=v)
                samples.append(s)
                log(f"crosscheck {name} {v}: {'failed' if s['failed'] else round(s['tps'])} tps")
    summary = {}
    for name in targets:
        m = summary.setdefault(name, {})
        for v in variants:
            ok = [s["tps"] for s in samples
                  if s["target"] == name and s["variant"] == v and not s["failed"]]
            failed = sum(1 for s in samples
                         if s["target"] == name and s["variant"] == v and s["failed"])
            m[v] = {"failed_runs": failed}
            if ok:
                med = statistics.median(ok)
                m[v].update(median=med, min=min(ok), max=max(ok),
                            spread_pct=round((max(ok) - min(ok)) * 100 / med, 1))
                # pgbench's own CPU per transaction: what --log costs the client.
                cpu = [s["pgbench_cpu_us_per_tx"] for s in samples
                       if s["target"] == name and s["variant"] == v and not s["failed"]]
                m[v]["pgbench_cpu_us_per_tx"] = statistics.median(cpu)
        plain = (m.get("plain") or {}).get("median")
        for v in variants:
            x = m[v].get("median")
            if v != "plain" and x and plain:
                m[f"{v}/plain"] = round(x / plain, 3)
    return {"rounds": rounds, "seconds": seconds, "clients": clients, "variants": variants,
            "summary": summary, "samples": samples}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=8)
    ap.add_argument("--pool", type=int, default=10)
    ap.add_argument("--scale", type=int, default=10)
    ap.add_argument("--threads", type=int, default=0, help="wirepool's server.threads")
    ap.add_argument("--variants", default="harness,plain")
    ap.add_argument("--targets", default="", help="comma-separated (default: all)")
    a = ap.parse_args()
    variants = a.variants.split(",")
    auths = sorted({VARIANTS[v][0] for v in variants})
    log = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    pgdir = tempfile.mkdtemp(prefix="crosscheck-pg-")
    subprocess.run(["/usr/bin/python3", FIXTURE, "start", pgdir, "--max-connections=700"],
                   check=True, stdout=subprocess.DEVNULL)
    started = []
    try:
        with open(os.path.join(pgdir, "info.json")) as f:
            pg = json.load(f)
        subprocess.run([PGBENCH, "-i", "-q", "-s", str(a.scale), "-h", pg["host"], "-p",
                        str(pg["port"]), "-U", pg["user"], pg["database"]], check=True,
                       env=dict(os.environ, PGPASSWORD=pg["password"]), capture_output=True)
        targets = {}
        for auth in auths:
            for name, peer in start_peers(pg, a.pool, auth, log).items():
                started.append(peer.stop)
                targets.setdefault(name, {})[auth] = (peer.port, peer.database)
        wp = start_wirepool(pg, a.pool, a.threads)
        started.append(wp.cleanup)
        targets["wirepool"] = {"scram": (wp.port, lambda mode: "bench")}
        if a.targets:
            keep = a.targets.split(",")
            targets = {k: v for k, v in targets.items() if k in keep}
        print(json.dumps(measure(pg, targets, variants, a.rounds, a.seconds, log=log), indent=1))
    finally:
        for stop in started:
            stop()
        subprocess.run(["/usr/bin/python3", FIXTURE, "stop", pgdir], check=False,
                       stdout=subprocess.DEVNULL)


if __name__ == "__main__":
    main()
