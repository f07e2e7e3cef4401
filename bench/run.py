#!/usr/bin/python3
"""`make bench`: wirepool measured side by side, in one run, on this machine.

Starts everything it needs on free loopback ports: a throwaway PostgreSQL 15
(fsync=off), the peers (Debian's PgBouncer 1.18; PgBouncer 1.25.2 and Odyssey
1.5.1 built from ../shared/anchors into build/anchors, skipped with a printed
reason where that directory is absent), each in transaction mode with SCRAM
and the same pool size, and wirepool with its defaults (server.threads
included), and runs the workloads of docs/performance.md in alternating rounds
(the order turning each round) after an uncounted warm-up:

  poolers    pgbench -S, 32 clients, -M simple / extended / prepared:
             direct, every peer (in its best mode: PgBouncer 1.25 keeps
             prepared statements, Odyssey reserves them for -M prepared), wirepool
  many       the same with 500 clients
  idle       RSS per idle authenticated client, every pooler, and RSS once
             they have left
  streaming  a 1,000,000-row, 3-column SELECT read by psql, direct and
             through wirepool; wirepool's peak RSS during it
  drivers    each driver vs a C program on the raw C API (bench/driver_vs_c.py)
  embedded   pgbench with a primary-key SELECT script over the SQLite default
  crosscheck each pooler as measured above against a plain
             `pgbench -n -S -c 32 -j 2 -T 8` of it (bench/crosscheck.py)

Writes every sample, the medians and the spread as one JSON file in
bench/results/ (named by date and commit), then bench/report.py regenerates
docs/performance.md from it.

Usage: bench/run.py [--quick] [--rounds N] [--only poolers,idle,...]
       bench/run.py --self-check   (make test: one short round of each, output parsed)
Run with /usr/bin/python3 after `make build`. A measurement, not a test: the
machine is shared and noisy, so only ratios within one run mean anything.
"""

import argparse
import datetime
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "e2e"))
from harness import PGBENCH, PSQL, raw_login  # noqa: E402
import crosscheck  # noqa: E402
from report import best_peer  # noqa: E402
from pgbench_poolers import (FIXTURE, SYSTEM_PGBOUNCER, bench_wirepool, cpu_split,  # noqa: E402
                             peer_binaries, run_pgbench, start_peers, version)

MODES = ("simple", "extended", "prepared")
PK_SELECT = "\\set aid random(1, 100000)\nSELECT abalance FROM accounts WHERE aid = :aid;\n"


def log(msg):
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def summarize(values):
    values = [v for v in values if v is not None]
    if not values:
        return None
    med = statistics.median(values)
    return {"median": med, "min": min(values), "max": max(values), "n": len(values),
            "spread_pct": round((max(values) - min(values)) * 100.0 / med, 1) if med else None}


def ratio(a, b):
    return round(a / b, 3) if a and b else None


class Bench:
    """The servers every workload shares."""

    def __init__(self, args):
        self.args = args
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        self.pgdir = tempfile.mkdtemp(prefix="bench-pg-")
        subprocess.run(["/usr/bin/python3", FIXTURE, "start", self.pgdir,
                        "--max-connections=700"], check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(self.pgdir, "info.json")) as f:
            self.pg = json.load(f)
        env = dict(os.environ, PGPASSWORD=self.pg["password"])
        subprocess.run([PGBENCH, "-i", "-q", "-s", str(args.scale), "-h", self.pg["host"], "-p",
                        str(self.pg["port"]), "-U", self.pg["user"], self.pg["database"]],
                       check=True, env=env, capture_output=True)
        self.wp = self.new_wirepool("bench-wirepool")
        # SCRAM for every pooler: wirepool has no trust login, and the same
        # login work for all (bench/crosscheck.py measured what it costs).
        self.peers = start_peers(self.pg, args.pool, "scram", log)

    def new_wirepool(self, name):
        """A started wirepool: `bench` on the PostgreSQL server, `app` on SQLite."""
        wp = bench_wirepool(self.pg, self.args.pool, name, threads=self.args.wirepool_threads,
                            max_clients=100000, more_databases="""
          - name: app
            driver: sqlite
            connection: bench.db
            options: { busy_timeout: 10s }
            pool: { mode: transaction, max: 4 }
        """)
        wp.start()
        return wp

    def new_peer(self, name):
        """A fresh process of peer `name`, configured as the running one."""
        return start_peers(self.pg, self.args.pool, "scram", log, only=name)[name]

    def stop(self):
        for peer in self.peers.values():
            peer.stop()
        self.wp.cleanup()
        subprocess.run(["/usr/bin/python3", FIXTURE, "stop", self.pgdir], check=False,
                       stdout=subprocess.DEVNULL)

    def pgbench_targets(self, clients, seconds):
        """{name: (pid, run(mode))}: direct, every peer (its database for the
        mode: its best setting), wirepool."""
        pg, wp = self.pg, self.wp
        targets = {
            "direct": (None, lambda mode: run_pgbench(pg["port"], pg["user"], pg["database"], mode,
                                                      seconds, clients, pg["password"])),
        }
        for name, peer in self.peers.items():
            targets[name] = (peer.pid, lambda mode, p=peer: run_pgbench(
                p.port, "bench", p.database(mode), mode, seconds, clients, "bench"))
        targets["wirepool"] = (wp.proc.pid, lambda mode: run_pgbench(
            wp.port, "bench", "bench", mode, seconds, clients, "bench"))
        return targets


def pooler_rounds(bench, clients, seconds, rounds):
    targets = bench.pgbench_targets(clients, seconds)
    warm = bench.pgbench_targets(clients, min(seconds, 3))
    for mode in MODES:  # warm-up, not counted
        for _, run in warm.values():
            run(mode)
    names = list(targets)
    samples = []
    for rnd in range(rounds):
        for mode in MODES:
            # The order turns by one each round, so that no target always
            # follows the same one (the direct run leaves PostgreSQL busy).
            k = rnd % len(names)
            for name in names[k:] + names[:k]:
                pid, run = targets[name]
                cpu0 = cpu_split(pid) if pid else None
                s = run(mode)
                s.update(round=rnd, mode=mode, target=name)
                if cpu0 is not None:
                    user, kernel = (b - a for a, b in zip(cpu0, cpu_split(pid)))
                    s["cpu_s"] = round(user + kernel, 2)
                    s["cpu_kernel_s"] = round(kernel, 2)
                    if s["tps"]:
                        s["cpu_us_per_tx"] = round(s["cpu_s"] * 1e6 / (s["tps"] * seconds), 1)
                        s["cpu_kernel_us_per_tx"] = round(kernel * 1e6 / (s["tps"] * seconds), 1)
                samples.append(s)
                log(f"{clients} clients {mode} {name}: "
                    f"{'failed' if s['failed'] else round(s['tps'])} tps")
    peers = [n for n in names if n not in ("direct", "wirepool")]
    summary = {"peers": peers}
    for mode in MODES:
        m = summary.setdefault(mode, {})
        for name in names:
            xs = [s for s in samples if s["mode"] == mode and s["target"] == name]
            ok = [s for s in xs if not s["failed"]]
            entry = {"failed_runs": len(xs) - len(ok)}
            if ok:
                entry["tps"] = summarize([s["tps"] for s in ok])
                entry["p50_ms"] = summarize([s["p50_ms"] for s in ok])
                entry["p99_ms"] = summarize([s["p99_ms"] for s in ok])
                cpu = summarize([s.get("cpu_s") for s in ok])
                if cpu:
                    entry["cpu_s"] = cpu
                    entry["cpu_us_per_tx"] = summarize([s.get("cpu_us_per_tx") for s in ok])
                    entry["cpu_kernel_us_per_tx"] = summarize(
                        [s.get("cpu_kernel_us_per_tx") for s in ok])
            else:
                entry["error"] = xs[0]["error"] if xs else ""
            m[name] = entry
        w = (m["wirepool"].get("tps") or {}).get("median")
        for other in peers + ["direct"]:
            o = (m[other].get("tps") or {}).get("median")
            m[f"wirepool/{other}"] = ratio(w, o)
        # The best peer in this mode (each in its own mode: -M prepared held
        # against the peers' -M prepared); report.best_peer says which count.
        best, tps = best_peer(m, peers)
        m["best_peer"] = best
        m["wirepool/best_peer"] = ratio(w, tps)
    return {"clients": clients, "seconds": seconds, "rounds": rounds, "summary": summary,
            "samples": samples}


def workload_poolers(bench):
    a = bench.args
    return pooler_rounds(bench, 32, a.seconds, a.rounds)


def workload_many(bench):
    a = bench.args
    # 500 SCRAM logins take seconds (PgBouncer 1.18 does ~70 a second here), and a
    # run shorter than that ends before every client has connected: at least 10 s.
    seconds = a.seconds if a.self_check else max(a.seconds, 10)
    return pooler_rounds(bench, a.many_clients, seconds, a.many_rounds or a.rounds)


def workload_idle(bench):
    """RSS before and after N idle clients logged in with SCRAM, per pooler, and
    once they have left. Each round measures a fresh process of each pooler
    (after one warm-up login), so memory freed by an earlier round is not
    reused and counted as free."""
    a = bench.args
    n = a.idle_clients
    names = list(bench.peers) + ["wirepool"]
    samples = []
    for rnd in range(a.idle_rounds):
        for name in names:
            if name == "wirepool":
                proc = bench.new_wirepool("bench-idle")
                port, pid, stop = proc.port, proc.proc.pid, proc.cleanup
            else:
                proc = bench.new_peer(name)
                port, pid, stop = proc.port, proc.pid, proc.stop
            socks = []
            try:
                raw_login(port, "bench", "bench", "bench").close()  # one-time allocations
                time.sleep(0.5)
                before = rss_kib(pid)
                t0 = time.time()
                for _ in range(n):
                    socks.append(raw_login(port, "bench", "bench", "bench", timeout=60))
                login_s = time.time() - t0
                time.sleep(1.5)
                after = rss_kib(pid)
                for sock in socks:
                    sock.close()
                socks = []
                # Long enough for wirepool to see the clients go (it looks
                # every second) and a peer to free what it frees.
                time.sleep(3)
                left = rss_kib(pid)
            finally:
                for sock in socks:
                    sock.close()
                stop()
            s = {"round": rnd, "target": name, "clients": n, "rss_before_kib": before,
                 "rss_after_kib": after, "rss_left_kib": left,
                 "bytes_per_client": round((after - before) * 1024 / n),
                 "left_over_start": round(left / before, 3),
                 "logins_per_s": round(n / login_s, 1)}
            samples.append(s)
            log(f"idle {name}: {s['bytes_per_client']} B/client, "
                f"RSS {before} -> {after} -> {left} KiB")
    summary = {name: {k: summarize([s[k] for s in samples if s["target"] == name])
                      for k in ("bytes_per_client", "logins_per_s", "rss_before_kib",
                                "rss_after_kib", "rss_left_kib", "left_over_start")}
               for name in names}
    for name in bench.peers:
        summary[f"wirepool/{name}"] = ratio(
            summary["wirepool"]["bytes_per_client"]["median"],
            summary[name]["bytes_per_client"]["median"])
    return {"clients": n, "rounds": a.idle_rounds, "summary": summary, "samples": samples}


class RssSampler(threading.Thread):
    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.peak, self.stop_flag = pid, 0, False

    def run(self):
        while not self.stop_flag:
            self.peak = max(self.peak, rss_kib(self.pid))
            time.sleep(0.02)


def workload_streaming(bench):
    """A N-row, 3-column SELECT read by psql (rows discarded), direct and via wirepool."""
    a = bench.args
    rows = a.stream_rows
    sql = (f"SELECT g, g * 2.5, md5(g::text) FROM generate_series(1, {rows}) g")
    pg, wp = bench.pg, bench.wp
    targets = {
        "direct": (f"postgresql://{pg['user']}:{pg['password']}@{pg['host']}:{pg['port']}/"
                   f"{pg['database']}"),
        "wirepool": f"postgresql://bench:bench@127.0.0.1:{wp.port}/bench",
    }
    samples = []
    for rnd in range(a.rounds + 1):
        for name, dsn in targets.items():
            base = rss_kib(wp.proc.pid)
            sampler = RssSampler(wp.proc.pid)
            sampler.start()
            t0 = time.time()
            r = subprocess.run([PSQL, dsn, "-X", "-At", "-c", sql, "-o", "/dev/null"],
                               capture_output=True, text=True, timeout=600)
            elapsed = time.time() - t0
            sampler.stop_flag = True
            sampler.join()
            if rnd == 0:
                continue  # warm-up
            s = {"round": rnd, "target": name, "rows": rows, "seconds": round(elapsed, 3),
                 "rows_per_s": round(rows / elapsed) if r.returncode == 0 else None,
                 "failed": r.returncode != 0, "error": r.stderr.strip()[-300:]}
            if name == "wirepool":
                s["wirepool_rss_base_kib"] = base
                s["wirepool_rss_peak_kib"] = sampler.peak
                s["wirepool_rss_growth_kib"] = sampler.peak - base
            samples.append(s)
            log(f"streaming {name}: {s['rows_per_s']} rows/s")
    summary = {name: {"rows_per_s": summarize([s["rows_per_s"] for s in samples
                                               if s["target"] == name])}
               for name in targets}
    summary["wirepool"]["rss_growth_kib"] = summarize(
        [s["wirepool_rss_growth_kib"] for s in samples if s["target"] == "wirepool"])
    summary["wirepool/direct"] = ratio(summary["wirepool"]["rows_per_s"]["median"],
                                       summary["direct"]["rows_per_s"]["median"])
    return {"rows": rows, "rounds": a.rounds, "summary": summary, "samples": samples}


def workload_embedded(bench):
    """pgbench with a primary-key SELECT script through wirepool to SQLite."""
    a = bench.args
    wp = bench.wp
    dsn = f"postgresql://bench:bench@127.0.0.1:{wp.port}/app"
    init = ("DROP TABLE IF EXISTS accounts;\n"
            "CREATE TABLE accounts (aid INTEGER PRIMARY KEY, abalance INTEGER NOT NULL);\n"
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000)\n"
            "INSERT INTO accounts SELECT i, 0 FROM n;\n")
    subprocess.run([PSQL, dsn, "-X", "-q"], input=init, text=True, check=True,
                   capture_output=True)
    script = tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False)
    script.write(PK_SELECT)
    script.close()
    env = dict(os.environ, PGPASSWORD="bench")

    def run(mode, seconds):
        r = subprocess.run([PGBENCH, "-n", "-M", mode, "-c", "32", "-j", "2", "-T", str(seconds),
                            "-f", script.name, "-h", "127.0.0.1", "-p", str(wp.port), "-U",
                            "bench", "app"], capture_output=True, text=True, env=env,
                           timeout=seconds * 4 + 60)
        tps = lat = None
        for line in r.stdout.splitlines():
            if line.startswith("tps = "):
                tps = float(line.split()[2])
            if line.startswith("latency average = "):
                lat = float(line.split()[3])
        return {"tps": tps, "latency_ms": lat, "failed": r.returncode != 0 or tps is None}

    for mode in ("simple", "prepared"):
        run(mode, min(a.seconds, 3))
    samples = []
    for rnd in range(a.rounds):
        for mode in ("simple", "prepared"):
            s = run(mode, a.seconds)
            s.update(round=rnd, mode=mode)
            samples.append(s)
            log(f"embedded {mode}: {s['tps']} tps")
    os.unlink(script.name)
    summary = {mode: {"tps": summarize([s["tps"] for s in samples if s["mode"] == mode]),
                      "latency_ms": summarize([s["latency_ms"] for s in samples
                                               if s["mode"] == mode])}
               for mode in ("simple", "prepared")}
    return {"seconds": a.seconds, "rounds": a.rounds, "summary": summary, "samples": samples}


def workload_drivers(bench):
    """Each driver through the contract vs a C program on its raw C API."""
    script = os.path.join(HERE, "driver_vs_c.py")
    if not os.path.exists(script):
        return {"skipped": "bench/driver_vs_c.py is not in this version"}
    a = bench.args
    cmd = ["/usr/bin/python3", script, "--rounds", str(a.driver_rounds or a.rounds), "--json",
           "--no-save"]
    if a.quick or a.self_check:
        cmd.append("--quick")
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=3600,
                       env=dict(os.environ, WIREPOOL_BENCH_PG_INFO=os.path.join(bench.pgdir,
                                                                                "info.json")))
    if r.returncode != 0:
        return {"failed": True, "error": (r.stderr or r.stdout)[-2000:]}
    return json.loads(r.stdout)


def workload_crosscheck(bench):
    """Each pooler as the tables measure it against a plain `pgbench -n -S -c 32
    -j 2 -T 8` of the same pooler (peers with trust), in alternating rounds."""
    a = bench.args
    trust = start_peers(bench.pg, a.pool, "trust", log)
    try:
        targets = {name: {"scram": (peer.port, peer.database),
                          "trust": (trust[name].port, trust[name].database)}
                   for name, peer in bench.peers.items()}
        targets["wirepool"] = {"scram": (bench.wp.port, lambda mode: "bench")}
        seconds = 1 if a.self_check else 8
        return crosscheck.measure(bench.pg, targets, ["harness", "plain"],
                                  a.crosscheck_rounds, seconds, log=log)
    finally:
        for peer in trust.values():
            peer.stop()


WORKLOADS = {
    "poolers": workload_poolers,
    "many": workload_many,
    "idle": workload_idle,
    "streaming": workload_streaming,
    "drivers": workload_drivers,
    "embedded": workload_embedded,
    "crosscheck": workload_crosscheck,
}


def git(*args):
    r = subprocess.run(["git", "-C", REPO] + list(args), capture_output=True, text=True)
    return r.stdout.strip()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="make bench QUICK=1: under 10 minutes")
    ap.add_argument("--self-check", action="store_true",
                    help="make test: one short round of each workload, output parsed")
    ap.add_argument("--rounds", type=int)
    ap.add_argument("--seconds", type=int)
    ap.add_argument("--only", default="", help="comma-separated workloads")
    ap.add_argument("--idle-clients", type=int, dest="idle_clients")
    ap.add_argument("--idle-rounds", type=int, dest="idle_rounds")
    ap.add_argument("--many-rounds", type=int, dest="many_rounds",
                    help="counted rounds of the 500-client workload (default: --rounds)")
    ap.add_argument("--driver-rounds", type=int, dest="driver_rounds",
                    help="rounds of the drivers-vs-C workload (full run: 9; else --rounds)")
    ap.add_argument("--crosscheck-rounds", type=int, dest="crosscheck_rounds",
                    help="rounds of the plain-pgbench cross-check (full run: 3)")
    ap.add_argument("--out", help="result file (default bench/results/DATE-COMMIT.json)")
    ap.add_argument("--pool", type=int, default=10)
    ap.add_argument("--scale", type=int, default=10)
    # None: server.threads at its default, what users get (issue 30).
    ap.add_argument("--wirepool-threads", type=int, default=None)
    a = ap.parse_args()
    if a.self_check:
        defaults = dict(rounds=1, seconds=1, many_clients=50, idle_clients=50, idle_rounds=1,
                        stream_rows=20000, crosscheck_rounds=1)
    elif a.quick:
        # 500-client runs cannot be shorter than 10 s (the logins): QUICK counts
        # 2 rounds of them, not 5, to finish in 10 minutes (690 s with 5 on an
        # idle machine, 540 s of it in that workload); the full run counts 5.
        defaults = dict(rounds=5, seconds=2, many_clients=500, many_rounds=2, idle_clients=1000,
                        idle_rounds=2, stream_rows=200000, crosscheck_rounds=1)
    else:
        # The drivers' round-trip-bound cells (inserts, lookups against a
        # server) swing ±20% between single runs on this VM: 9 rounds, ~4
        # minutes more, for medians that hold still to a few percent.
        defaults = dict(rounds=5, seconds=10, many_clients=500, idle_clients=5000, idle_rounds=3,
                        stream_rows=1000000, driver_rounds=9, crosscheck_rounds=3)
    for k, v in defaults.items():
        if getattr(a, k, None) is None:
            setattr(a, k, v)
    only = [w for w in a.only.split(",") if w] or list(WORKLOADS)

    started = time.time()
    # The commit measured: read before the run (HEAD may move while it runs).
    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    bench = Bench(a)
    results = {}
    try:
        for name in only:
            log(f"workload {name}")
            t0 = time.time()
            try:
                results[name] = WORKLOADS[name](bench)
            except Exception as e:  # one failed workload is reported, the others still run
                log(f"workload {name} failed: {e!r}")
                results[name] = {"failed": True, "error": repr(e)[-2000:]}
            results[name]["elapsed_s"] = round(time.time() - t0, 1)
    finally:
        bench.stop()
    now = datetime.datetime.now(datetime.timezone.utc)
    doc = {
        "date": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "commit": commit + ("-dirty" if dirty else ""),
        "kind": "self-check" if a.self_check else "quick" if a.quick else "full",
        "machine": {"cpus": os.cpu_count(), "kernel": os.uname().release},
        "versions": {
            **{name: version(b) for name, b in
               ([("pgbouncer", SYSTEM_PGBOUNCER)] + list(peer_binaries(log).items()))},
            "postgresql": subprocess.run([PSQL, "--version"], capture_output=True,
                                         text=True).stdout.strip(),
        },
        "settings": {k: getattr(a, k) for k in ("rounds", "seconds", "pool", "scale",
                                                 "wirepool_threads", "many_clients", "many_rounds",
                                                 "idle_clients", "idle_rounds", "stream_rows",
                                                 "driver_rounds", "crosscheck_rounds")}
        | {"wirepool_pipeline": True},  # pool.pipeline as configured: the default
        "elapsed_s": round(time.time() - started, 1),
        "workloads": results,
    }
    out = a.out
    if not out:
        os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
        out = os.path.join(HERE, "results", f"{now.strftime('%Y-%m-%d')}-{doc['commit']}.json")
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
    log(f"wrote {out} after {doc['elapsed_s']} s")
    print(out)


if __name__ == "__main__":
    main()
