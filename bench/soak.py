#!/usr/bin/python3
"""Memory under connection churn: wirepool in front of a throwaway PostgreSQL,
`--busy-clients` pgbench -S clients busy through it while churners connect,
log in (SCRAM-SHA-256, done by hand as raw_login does), run one query and
leave, `--connections` times; wirepool's RSS (/proc/PID/status VmRSS) is
sampled every `--sample-every` connections.

Prints one JSON object: the samples [connections, seconds, rss_kib], the RSS
when warm-up ends and at the end, the growth after warm-up, bytes per
connection (least-squares slope over the samples after warm-up), connections
per second, failed cycles and pgbench's result. With `--connections 0` only
pgbench runs, for `--seconds`, and samples are taken every second.

With `--max-growth-kib N` it is a check (make soak): exit status 1 when the
growth after warm-up exceeds N KiB or a cycle or pgbench failed.

Usage: bench/soak.py [--connections 100000] [--rate 150 | --rate 0] [--churners 4]
                     [--busy-clients 16] [--pool 10] [--binary PATH] [--pg-info FILE]
                     [--malloc-arena-max N] [--trim]
Run with /usr/bin/python3; needs postgresql-15 (pgbench, the fixture server).
Every loop is bounded: each cycle has a 30 s socket timeout, the whole run
`--max-seconds`.
"""

import argparse
import json
import os
import resource
import struct
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
from harness import PGBENCH, raw_login  # noqa: E402
from pgbench_poolers import bench_wirepool  # noqa: E402

FIXTURE = os.path.join(HERE, "..", "tests", "fixtures", "pgserver.py")
QUERY = b"SELECT 1"


def one_cycle(port):
    """Connect, log in, one simple query, Terminate, close."""
    s = raw_login(port, user="bench", password="bench", database="bench", timeout=30)
    try:
        s.sendall(b"Q" + struct.pack("!I", len(QUERY) + 5) + QUERY + b"\0")
        buf = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                raise ConnectionError("closed before ReadyForQuery")
            buf += chunk
            # ReadyForQuery is the last message of the answer: 'Z', length 5, status.
            if len(buf) >= 6 and buf[-6:-1] == b"Z\0\0\0\x05":
                break
        if b"E" == buf[:1]:
            raise ConnectionError(f"query failed: {buf!r}")
        s.sendall(b"X\0\0\0\x04")
    finally:
        s.close()


def linear_slope(points):
    """Least-squares slope of y over x."""
    n = len(points)
    if n < 2:
        return None
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    if sxx == 0:
        return None
    return sum((x - mx) * (y - my) for x, y in points) / sxx


class Churn:
    """`churners` threads sharing one counter; with `rate` > 0 cycles start on
    a common schedule of `rate` per second, otherwise back to back."""

    def __init__(self, port, total, rate, churners, deadline):
        self.port = port
        self.total = total
        self.rate = rate
        self.deadline = deadline
        self.lock = threading.Lock()
        self.started = 0
        self.done = 0
        self.failed = 0
        self.errors = []
        self.t0 = time.monotonic()
        self.threads = [threading.Thread(target=self.run, daemon=True) for _ in range(churners)]

    def next_slot(self):
        with self.lock:
            if self.started >= self.total or time.monotonic() > self.deadline:
                return None
            n = self.started
            self.started += 1
        return self.t0 + n / self.rate if self.rate > 0 else 0

    def run(self):
        while True:
            slot = self.next_slot()
            if slot is None:
                return
            delay = slot - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            try:
                one_cycle(self.port)
                ok = True
            except (OSError, AssertionError, ConnectionError) as e:
                ok = False
                err = str(e)
            with self.lock:
                self.done += 1
                if not ok:
                    self.failed += 1
                    if len(self.errors) < 5:
                        self.errors.append(err)

    def start(self):
        self.t0 = time.monotonic()
        for t in self.threads:
            t.start()

    def alive(self):
        return any(t.is_alive() for t in self.threads)


def start_pg():
    d = tempfile.mkdtemp(prefix="soak-pg-")
    subprocess.run(["/usr/bin/python3", FIXTURE, "start", d], check=True,
                   stdout=subprocess.DEVNULL)
    return d, os.path.join(d, "info.json")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--connections", type=int, default=100000,
                    help="connect/query/disconnect cycles (0: pgbench alone)")
    ap.add_argument("--rate", type=float, default=150,
                    help="cycles started per second, all churners together (0: back to back)")
    ap.add_argument("--churners", type=int, default=4, help="parallel churning threads")
    ap.add_argument("--busy-clients", type=int, default=16, help="pgbench -S clients (0: none)")
    ap.add_argument("--pool", type=int, default=10, help="pool.max (transaction mode)")
    ap.add_argument("--threads", type=int, default=0, help="wirepool server.threads")
    ap.add_argument("--binary", help="the wirepool executable (default: the harness's)")
    ap.add_argument("--pg-info", help="info.json of a running pgserver.py fixture "
                    "(default: start one and stop it after)")
    ap.add_argument("--warmup", type=int, default=None,
                    help="cycles before the baseline sample (default: 10%%, at most 10,000)")
    ap.add_argument("--sample-every", type=int, default=None,
                    help="cycles between samples (default: connections/50)")
    ap.add_argument("--seconds", type=float, default=60,
                    help="with --connections 0: how long pgbench alone runs")
    ap.add_argument("--max-seconds", type=float, default=3600, help="bound on the whole run")
    ap.add_argument("--malloc-arena-max", type=int, help="MALLOC_ARENA_MAX for wirepool")
    ap.add_argument("--trim", action="store_true",
                    help="at the end, call malloc_trim(0) in wirepool (through gdb) and sample "
                    "RSS again: what the allocator kept that no object used")
    ap.add_argument("--max-growth-kib", type=int,
                    help="check: exit 1 when RSS grows more than this after warm-up")
    args = ap.parse_args()

    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    pgdir = None
    if args.pg_info:
        info_path = args.pg_info
    else:
        pgdir, info_path = start_pg()
    with open(info_path) as f:
        pg = json.load(f)
    pg_env = dict(os.environ, PGPASSWORD=pg["password"])
    subprocess.run([PGBENCH, "-i", "-q", "-s", "1", "-h", pg["host"], "-p", str(pg["port"]),
                    "-U", pg["user"], pg["database"]], check=True, env=pg_env,
                   capture_output=True)
    if args.malloc_arena_max:
        os.environ["MALLOC_ARENA_MAX"] = str(args.malloc_arena_max)
    wp = bench_wirepool(pg, args.pool, "soak-wirepool", threads=args.threads, max_clients=10000,
                        binary=args.binary)
    wp.start()
    pgbench = None
    started = time.monotonic()
    deadline = started + args.max_seconds
    total = args.connections
    warmup = args.warmup if args.warmup is not None else min(total // 10, 10000)
    every = args.sample_every or max(total // 50, 1)
    samples = []
    try:
        if args.busy_clients:
            seconds = int(args.seconds if total == 0 else args.max_seconds)
            pgbench = subprocess.Popen(
                [PGBENCH, "-n", "-S", "-c", str(args.busy_clients), "-j", "2", "-P", "5",
                 "-T", str(seconds + 60), "-h", "127.0.0.1", "-p", str(wp.port), "-U", "bench",
                 "bench"],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                env=dict(os.environ, PGPASSWORD="bench"))
            time.sleep(2)  # pgbench's clients logged in and busy
        if total == 0:
            t0 = time.monotonic()
            while time.monotonic() - t0 < args.seconds:
                samples.append([0, round(time.monotonic() - t0, 2), wp.rss_kib()])
                time.sleep(1)
            churn = None
        else:
            churn = Churn(wp.port, total, args.rate, args.churners, deadline)
            churn.start()
            next_sample = 0
            while churn.alive():
                if churn.done >= next_sample:
                    samples.append([churn.done, round(time.monotonic() - churn.t0, 2),
                                    wp.rss_kib()])
                    next_sample = (churn.done // every + 1) * every
                if wp.proc.poll() is not None:
                    raise RuntimeError(f"wirepool exited with {wp.proc.returncode}")
                time.sleep(0.01)
            churn_seconds = time.monotonic() - churn.t0
            samples.append([churn.done, round(churn_seconds, 2), wp.rss_kib()])
        pgbench_result = None
        if pgbench:
            # Still running is the expected state: it runs until stopped. Its
            # progress lines (-P) carry the rate; any other line is an error.
            ended_early = pgbench.poll() is not None
            if not ended_early:
                pgbench.terminate()
            try:
                _, err = pgbench.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                pgbench.kill()
                _, err = pgbench.communicate()
            progress = [float(line.split()[3]) for line in err.splitlines()
                        if line.startswith("progress:")]
            errors = [line for line in err.splitlines()
                      if line.strip() and not line.startswith("progress:")]
            pgbench_result = {"tps_mean": round(sum(progress) / len(progress), 1)
                              if progress else None,
                              "ended_early": ended_early, "errors": errors[-3:]}
        time.sleep(2)
        rss_idle = wp.rss_kib()
        rss_trimmed = None
        if args.trim:
            subprocess.run(["gdb", "-p", str(wp.proc.pid), "-batch", "-ex",
                            "call (int) malloc_trim(0)"], capture_output=True, timeout=60)
            rss_trimmed = wp.rss_kib()
    finally:
        if pgbench and pgbench.poll() is None:
            pgbench.kill()
            pgbench.wait()
        code = wp.stop()
        log_tail = wp.log()[-2000:]
        wp.cleanup()
        if pgdir:
            subprocess.run(["/usr/bin/python3", FIXTURE, "stop", pgdir], check=False,
                           stdout=subprocess.DEVNULL)

    xkey = 0 if total else 1  # fit over connections, or over seconds for pgbench alone
    after = [s for s in samples if (s[0] >= warmup if total else s[1] >= 5)]
    base = after[0][2] if after else None
    end = samples[-1][2] if samples else None
    slope = linear_slope([(s[xkey], s[2] * 1024) for s in after])
    result = {
        "binary": wp.binary,
        "connections": total,
        "rate": args.rate,
        "churners": args.churners,
        "busy_clients": args.busy_clients,
        "pool": args.pool,
        "threads": args.threads,
        "malloc_arena_max": args.malloc_arena_max,
        "warmup": warmup,
        "rss_warm_kib": base,
        "rss_end_kib": end,
        "rss_idle_after_kib": rss_idle,
        "rss_after_trim_kib": rss_trimmed,
        "growth_after_warmup_kib": end - base if base is not None else None,
        ("bytes_per_connection" if total else "bytes_per_second"):
            round(slope, 1) if slope is not None else None,
        "exit_code": code,
        "pgbench": pgbench_result,
        "samples": samples,
    }
    if churn:
        result.update(done=churn.done, failed=churn.failed, errors=churn.errors,
                      seconds=round(churn_seconds, 1),
                      connections_per_second=round(churn.done / churn_seconds, 1))
    print(json.dumps(result))
    if args.max_growth_kib is not None:
        bad = []
        if result["growth_after_warmup_kib"] is None:
            bad.append("no sample after warm-up")
        elif result["growth_after_warmup_kib"] > args.max_growth_kib:
            bad.append(f"RSS grew {result['growth_after_warmup_kib']} KiB after warm-up "
                       f"(bound {args.max_growth_kib} KiB)")
        if churn and (churn.failed or churn.done < total):
            bad.append(f"{churn.failed} failed cycles, {churn.done}/{total} done: {churn.errors}")
        if pgbench_result and (pgbench_result["ended_early"] or pgbench_result["errors"]):
            bad.append(f"pgbench failed: {pgbench_result['errors']}")
        if code not in (0, None):
            bad.append(f"wirepool exited {code}: {log_tail}")
        for b in bad:
            print(f"soak: {b}", file=sys.stderr)
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
