#!/usr/bin/python3
"""pgbench -S through poolers, side by side in one run: PostgreSQL directly,
PgBouncer (Debian's 1.18, transaction mode, default_pool_size = POOL) and
wirepool (transaction mode, max: POOL), in alternating rounds (A B C A B C ...)
after a warm-up, for -M simple, extended and prepared.

Prints one JSON object: every sample (TPS, p50/p99 latency from pgbench's
per-transaction log, wirepool's CPU seconds), then per target and mode the
median and the spread, and the ratios wirepool/PgBouncer and wirepool/direct.

With `--baseline BIN` a second wirepool built from another commit runs as one
more target in the same rounds, and the summary adds wirepool/baseline: how a
change is held to "the relay's cost unchanged". `--pipeline-max 0,8,off` runs
one wirepool per value of `pool.pipeline_max` (0: the default; off: `pipeline:
false`), and `--peers` adds PgBouncer 1.25 and Odyssey from ../shared/anchors
(each in its best mode, as `make bench` runs them).

Usage: bench/pgbench_poolers.py [--seconds 20] [--rounds 3] [--clients 32] [--pool 10]
                                [--baseline PATH] [--only wirepool,baseline]
                                [--wirepool-threads 1,2,0 | --pipeline-max 0,8,off] [--peers]
Run with /usr/bin/python3; needs postgresql-15 and pgbouncer. A measurement,
not a test: the machine is shared and noisy, so only ratios within one run
mean anything.
"""

import argparse
import glob
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
from harness import PGBENCH, Wirepool  # noqa: E402

FIXTURE = os.path.join(HERE, "..", "tests", "fixtures", "pgserver.py")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_split(pid):
    """CPU seconds of a process so far: (user, kernel)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def cpu_seconds(pid):
    return sum(cpu_split(pid))


def wait_port(port, timeout=15):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


def bench_wirepool(pg, pool, name, threads=None, max_clients=None, binary=None,
                   more_databases="", pipeline_max=None):
    """wirepool as the bench scripts run it, not yet started: database `bench`
    on PostgreSQL `pg` (pgserver.py's info.json) in transaction mode, pool max
    `pool`; user bench/bench; warn-level log. `threads` and `max_clients` set
    server.threads and server.max_clients when given; `more_databases` is YAML
    for more `databases:` entries; `binary` another build; `pipeline_max`
    sets pool.pipeline_max ("off": pool.pipeline false)."""
    os.environ["WIREPOOL_BENCH_PG_PASSWORD"] = pg["password"]
    server = "log: { level: warn }"
    if max_clients is not None:
        server += f"\nmax_clients: {max_clients}"
    if threads is not None:
        server += f"\nthreads: {threads}"
    pipeline = ("" if pipeline_max is None else ", pipeline: false" if pipeline_max == "off"
                else f", pipeline_max: {int(pipeline_max)}")
    bench = textwrap.dedent(f"""
      - name: bench
        driver: postgresql
        connection: "host={pg['host']} port={pg['port']} user={pg['user']} dbname={pg['database']}"
        password_env: WIREPOOL_BENCH_PG_PASSWORD
        pool: {{ mode: transaction, max: {pool}{pipeline} }}
    """)
    databases = bench.strip("\n") + "\n" + textwrap.dedent(more_databases).strip("\n")
    return Wirepool(databases=databases, users="- { name: bench, password: bench }",
                    server=server, name=name, binary=binary)


ANCHORS = os.environ.get("WIREPOOL_ANCHORS",
                         os.path.join(HERE, "..", "..", "shared", "anchors"))
ANCHORS_PREFIX = os.path.join(HERE, "..", "build", "anchors")
SYSTEM_PGBOUNCER = "/usr/sbin/pgbouncer"


def peer_binaries(log=print):
    """The peers built from `../shared/anchors` (build.sh, idempotent) into
    build/anchors: {"pgbouncer-1.25": path, "odyssey": path}, or {} with a
    printed reason when the sources are absent (a user's machine) or the build
    fails."""
    script = os.path.join(ANCHORS, "build.sh")
    if not os.path.exists(script):
        log(f"peers PgBouncer 1.25 and Odyssey skipped: {os.path.abspath(ANCHORS)} is absent")
        return {}
    prefix = os.path.abspath(ANCHORS_PREFIX)
    bins = {"pgbouncer-1.25": os.path.join(prefix, "bin", "pgbouncer-1.25"),
            "odyssey": os.path.join(prefix, "bin", "odyssey")}
    if not all(os.access(b, os.X_OK) for b in bins.values()):
        log(f"building PgBouncer 1.25 and Odyssey into {prefix} ({script})")
        r = subprocess.run(["bash", script, prefix], capture_output=True, text=True)
        if r.returncode != 0:
            log(f"peers skipped: {script} failed: {(r.stderr or r.stdout).strip()[-500:]}")
    return {k: v for k, v in bins.items() if os.access(v, os.X_OK)}


def version(binary):
    r = subprocess.run([binary, "--version"], capture_output=True, text=True)
    return (r.stdout or r.stderr).strip().splitlines()[0] if r.returncode == 0 else "?"


def _run_as_postgres(directory, argv):
    """Starts `argv` with a 20,000-descriptor limit, as `postgres` when root
    (setpriv, not runuser: runuser's PAM session resets the limit to 1,024,
    where a pooler stops accepting)."""
    runas = (["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups"]
             if os.geteuid() == 0 else [])
    if runas:
        shutil.chown(directory, "postgres")
        for p in glob.glob(os.path.join(directory, "*")):
            shutil.chown(p, "postgres")
    return subprocess.Popen(["bash", "-c", "ulimit -n 20000; exec " + " ".join(runas + argv)],
                            stdout=subprocess.DEVNULL)


def _wait_started(proc, port, logfile):
    try:
        wait_port(port)
    except RuntimeError:
        proc.kill()
        proc.wait(10)
        tail = open(logfile).read()[-500:] if os.path.exists(logfile) else ""
        raise RuntimeError(f"{proc.args[-1]}: nothing listens on {port}: {tail}")


class PgBouncer:
    """`auth`: "trust", or "scram" (SCRAM-SHA-256 with the password "bench", as
    wirepool's clients do). `prepared`: max_prepared_statements (PgBouncer
    >= 1.21 keeps protocol-level prepared statements in transaction mode; 0
    off, 1.18 has no such setting)."""

    def __init__(self, pg, pool, auth="trust", binary=SYSTEM_PGBOUNCER, prepared=0):
        self.dir = tempfile.mkdtemp(prefix="pgbouncer-")
        self.port = free_port()
        ini = os.path.join(self.dir, "pgbouncer.ini")
        with open(ini, "w") as f:
            f.write(f"""[databases]
bench = host={pg['host']} port={pg['port']} dbname={pg['database']} user={pg['user']} password={pg['password']}
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {self.port}
auth_type = {"scram-sha-256" if auth == "scram" else "trust"}
auth_file = {self.dir}/users.txt
pool_mode = transaction
default_pool_size = {pool}
max_client_conn = 20000
logfile = {self.dir}/pgbouncer.log
pidfile = {self.dir}/pgbouncer.pid
unix_socket_dir =
ignore_startup_parameters = extra_float_digits
""" + (f"max_prepared_statements = {prepared}\n" if prepared else ""))
        with open(os.path.join(self.dir, "users.txt"), "w") as f:
            f.write('"bench" "bench"\n' if auth == "scram" else '"bench" ""\n')
        self.proc = _run_as_postgres(self.dir, [binary, "-q", ini])
        _wait_started(self.proc, self.port, os.path.join(self.dir, "pgbouncer.log"))
        # bash execs setpriv, which execs PgBouncer: the same process.
        self.pid = self.proc.pid

    def database(self, mode):
        return "bench"

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(10)
        shutil.rmtree(self.dir, ignore_errors=True)


class Odyssey:
    """Odyssey 1.5.1 in transaction mode, `workers` threads. Database `bench`
    runs without and `bench_prepared` with pool_reserve_prepared_statement
    (what -M prepared needs in transaction mode), so that each mode gets
    Odyssey's best setting. `auth` as for PgBouncer."""

    def __init__(self, pg, pool, auth="trust", binary=None, workers=1):
        self.dir = tempfile.mkdtemp(prefix="odyssey-")
        self.port = free_port()
        conf = os.path.join(self.dir, "odyssey.conf")
        client_auth = ('authentication "scram-sha-256"\n\t\tpassword "bench"' if auth == "scram"
                       else 'authentication "none"')

        def db(name, reserve):
            return f"""database "{name}" {{
	user "bench" {{
		{client_auth}
		storage "pg"
		storage_db "{pg['database']}"
		storage_user "{pg['user']}"
		storage_password "{pg['password']}"
		pool "transaction"
		pool_size {pool}
		pool_timeout 0
		pool_ttl 60
		pool_discard no
		pool_cancel yes
		pool_rollback yes
		pool_reserve_prepared_statement {"yes" if reserve else "no"}
		client_fwd_error yes
		application_name_add_host no
		server_lifetime 3600
		log_debug no
	}}
}}
"""
        with open(conf, "w") as f:
            f.write(f"""daemonize no
pid_file "{self.dir}/odyssey.pid"
log_file "{self.dir}/odyssey.log"
log_to_stdout no
log_format "%p %t %l [%i %s] (%c) %m\\n"
log_debug no
log_config no
log_session no
log_query no
log_stats no
locks_dir "{self.dir}"
enable_online_restart no
graceful_die_on_errors no
workers {workers}
resolvers 1
readahead 8192
nodelay yes
keepalive 15
client_max 20000
listen {{
	host "127.0.0.1"
	port {self.port}
	backlog 1024
	tls "disable"
}}
storage "pg" {{
	type "remote"
	host "{pg['host']}"
	port {pg['port']}
}}
""" + db("bench", False) + db("bench_prepared", True))
        self.proc = _run_as_postgres(self.dir, [binary, conf])
        _wait_started(self.proc, self.port, os.path.join(self.dir, "odyssey.log"))
        self.pid = self.proc.pid

    def database(self, mode):
        return "bench_prepared" if mode == "prepared" else "bench"

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        shutil.rmtree(self.dir, ignore_errors=True)


def start_peers(pg, pool, auth, log=print, only=None):
    """Every peer this machine has, started: {name: pooler}. PgBouncer 1.18
    (Debian's) always; PgBouncer 1.25 (max_prepared_statements) and Odyssey
    when built from the anchors. `only`: just that one."""
    bins = {}
    if os.access(SYSTEM_PGBOUNCER, os.X_OK):
        bins["pgbouncer"] = SYSTEM_PGBOUNCER
    bins.update(peer_binaries(log))
    peers = {}
    try:
        for name, binary in bins.items():
            if only and name != only:
                continue
            if name == "odyssey":
                peers[name] = Odyssey(pg, pool, auth=auth, binary=binary)
            else:
                peers[name] = PgBouncer(pg, pool, auth=auth, binary=binary,
                                        prepared=200 if name == "pgbouncer-1.25" else 0)
    except Exception:
        for peer in peers.values():
            peer.stop()
        raise
    return peers


def percentile(values, p):
    values = sorted(values)
    if not values:
        return None
    k = (len(values) - 1) * p
    f, c = int(k), min(int(k) + 1, len(values) - 1)
    return values[f] + (values[c] - values[f]) * (k - f)


def run_pgbench(port, user, db, mode, seconds, clients, password=None, latencies=True,
                threads=2):
    """One pgbench -S run. `latencies`: p50/p99 from pgbench's per-transaction
    log (--log); without it the command is the plain `pgbench -n -S -c N -j 2
    -T S` a user would type. Exit status 2 (a client aborted) is a failed run."""
    logdir = tempfile.mkdtemp(prefix="pgbench-log-")
    env = dict(os.environ, PGPASSWORD=password or "")
    # One transaction in ten logged: p99 from thousands of samples, at a tenth
    # of the log's cost to pgbench (it shares the cores with the pooler).
    log_args = (["--log", "--sampling-rate=0.1", f"--log-prefix={logdir}/tx"] if latencies
                else [])
    cpu0 = os.times()
    r = subprocess.run([PGBENCH, "-n", "-S", "-M", mode, "-c", str(clients), "-j", str(threads),
                        "-T", str(seconds)] + log_args +
                       ["-h", "127.0.0.1", "-p", str(port), "-U", user, db],
                       capture_output=True, text=True, env=env, timeout=seconds * 4 + 60)
    cpu1 = os.times()
    pgbench_cpu = (cpu1.children_user + cpu1.children_system
                   - cpu0.children_user - cpu0.children_system)
    lat = []
    for path in glob.glob(os.path.join(logdir, "tx*")):
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 3:
                    lat.append(int(parts[2]) / 1000.0)  # microseconds -> ms
    shutil.rmtree(logdir, ignore_errors=True)
    tps = None
    for line in r.stdout.splitlines():
        if line.startswith("tps = "):
            tps = float(line.split()[2])
    failed = r.returncode != 0 or tps is None
    return {"tps": None if failed else tps, "failed": failed,
            "error": ([l for l in r.stderr.splitlines() if l.strip()] or [f"exit {r.returncode}"])[-1]
            if failed else "",
            "p50_ms": percentile(lat, 0.5), "p99_ms": percentile(lat, 0.99),
            "pgbench_cpu_us_per_tx": round(pgbench_cpu * 1e6 / (tps * seconds), 1)
            if tps else None}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--pool", type=int, default=10)
    ap.add_argument("--scale", type=int, default=10)
    # One event loop: on a 2-core host that also runs PostgreSQL and pgbench it
    # costs less CPU per transaction than one per core (cross-loop handoffs);
    # PgBouncer is single-threaded too.
    # A comma-separated list ("1,2,0") runs one wirepool per value, as targets
    # "wirepool-t1", "wirepool-t2", ... (0: the default, one loop per two cores).
    ap.add_argument("--wirepool-threads", default="1")
    # One wirepool per value of pool.pipeline_max, as targets "wirepool-pm0"
    # (0 is the default's own value), "wirepool-pm8", "wirepool-pmoff"
    # (pipelining off).
    ap.add_argument("--pipeline-max", default="")
    ap.add_argument("--peers", action="store_true",
                    help="PgBouncer 1.25 and Odyssey from ../shared/anchors too")
    ap.add_argument("--baseline", help="another wirepool binary, run as target 'baseline'")
    ap.add_argument("--only", default="", help="comma-separated targets (default: all)")
    args = ap.parse_args()
    thread_counts = [int(t) for t in args.wirepool_threads.split(",")]
    pipeline_maxes = [v for v in args.pipeline_max.split(",") if v]
    if len(thread_counts) > 1 and pipeline_maxes:
        ap.error("--wirepool-threads with several values and --pipeline-max: one or the other")
    if any(v != "off" and not v.isdigit() for v in pipeline_maxes):
        ap.error("--pipeline-max: integers >= 0 or off")
    # Checked before any server starts: a name that is not a target ran nothing.
    names = ["direct", "pgbouncer"] + (["pgbouncer-1.25", "odyssey"] if args.peers else [])
    if pipeline_maxes:
        names += [f"wirepool-pm{v}" for v in pipeline_maxes]
    else:
        names += ([f"wirepool-t{t}" for t in thread_counts] if len(thread_counts) > 1
                  else ["wirepool"])
    names += ["baseline"] if args.baseline else []
    only = set(args.only.split(",")) if args.only else set()
    if only - set(names):
        ap.error(f"--only: no target {', '.join(sorted(only - set(names)))} in this run "
                 f"(targets: {', '.join(names)})")

    pgdir = tempfile.mkdtemp(prefix="bench-pg-")
    subprocess.run(["/usr/bin/python3", FIXTURE, "start", pgdir], check=True,
                   stdout=subprocess.DEVNULL)
    with open(os.path.join(pgdir, "info.json")) as f:
        pg = json.load(f)
    direct_env = dict(os.environ, PGPASSWORD=pg["password"])
    subprocess.run([PGBENCH, "-i", "-q", "-s", str(args.scale), "-h", pg["host"], "-p",
                    str(pg["port"]), "-U", pg["user"], pg["database"]], check=True,
                   env=direct_env, capture_output=True)
    def start_wirepool(binary=None, threads=thread_counts[0], pipeline_max=None):
        return bench_wirepool(pg, args.pool, "bench-wirepool", threads=threads,
                              binary=binary, pipeline_max=pipeline_max).start()

    if pipeline_maxes:
        wp = start_wirepool(pipeline_max=pipeline_maxes[0])
        more = {f"wirepool-pm{v}": start_wirepool(pipeline_max=v) for v in pipeline_maxes[1:]}
        first = f"wirepool-pm{pipeline_maxes[0]}"
    else:
        wp = start_wirepool()
        more = {f"wirepool-t{t}": start_wirepool(threads=t) for t in thread_counts[1:]}
        first = f"wirepool-t{thread_counts[0]}"
    base = start_wirepool(args.baseline) if args.baseline else None
    # SCRAM for both poolers, as bench/run.py does: the same login work.
    bouncer = PgBouncer(pg, args.pool, auth="scram")
    targets = {
        "direct": lambda mode: run_pgbench(pg["port"], pg["user"], pg["database"], mode,
                                           args.seconds, args.clients, pg["password"]),
        "pgbouncer": lambda mode: run_pgbench(bouncer.port, "bench", "bench", mode, args.seconds,
                                              args.clients, "bench"),
        "wirepool": lambda mode: run_pgbench(wp.port, "bench", "bench", mode, args.seconds,
                                             args.clients, "bench"),
    }
    pids = {"pgbouncer": bouncer.pid, "wirepool": wp.proc.pid}
    peers = {}
    if args.peers:  # PgBouncer 1.18 runs already, as "pgbouncer"
        for name in ("pgbouncer-1.25", "odyssey"):
            peers.update(start_peers(pg, args.pool, "scram", only=name))
    for name, peer in peers.items():
        targets[name] = (lambda p: lambda mode: run_pgbench(
            p.port, "bench", p.database(mode), mode, args.seconds, args.clients, "bench"))(peer)
        pids[name] = peer.pid
    if more or pipeline_maxes:
        targets[first] = targets.pop("wirepool")
        pids[first] = pids.pop("wirepool")
    for name, w in more.items():
        targets[name] = (lambda port: lambda mode: run_pgbench(
            port, "bench", "bench", mode, args.seconds, args.clients, "bench"))(w.port)
        pids[name] = w.proc.pid
    if base:
        targets["baseline"] = lambda mode: run_pgbench(base.port, "bench", "bench", mode,
                                                       args.seconds, args.clients, "bench")
        pids["baseline"] = base.proc.pid
    if args.only:
        targets = {k: v for k, v in targets.items() if k in only}
    samples = []
    try:
        # Warm-up, not counted: caches, pools and prepared statements filled.
        warm = args.seconds
        args.seconds = 3
        for mode in ("simple", "extended", "prepared"):
            for run in targets.values():
                run(mode)
        args.seconds = warm
        for rnd in range(args.rounds):
            for mode in ("simple", "extended", "prepared"):
                for name, run in targets.items():
                    cpu0 = cpu_seconds(pids[name]) if name in pids else None
                    s = run(mode)
                    s.update(round=rnd, mode=mode, target=name)
                    if cpu0 is not None:
                        s["cpu_s"] = round(cpu_seconds(pids[name]) - cpu0, 2)
                    samples.append(s)
                    print(json.dumps(s), file=sys.stderr)
    finally:
        bouncer.stop()
        for peer in peers.values():
            peer.stop()
        wp.cleanup()
        for w in more.values():
            w.cleanup()
        if base:
            base.cleanup()
        subprocess.run(["/usr/bin/python3", FIXTURE, "stop", pgdir], check=False,
                       stdout=subprocess.DEVNULL)

    summary = {}
    for mode in ("simple", "extended", "prepared"):
        for name in targets:
            xs = [s for s in samples if s["mode"] == mode and s["target"] == name]
            ok = [s for s in xs if not s["failed"]]
            entry = {"failed_runs": len(xs) - len(ok)}
            if ok:
                tps = [s["tps"] for s in ok]
                entry.update(tps_median=statistics.median(tps), tps_min=min(tps),
                             tps_max=max(tps),
                             p50_ms_median=statistics.median(s["p50_ms"] for s in ok),
                             p99_ms_median=statistics.median(s["p99_ms"] for s in ok),
                             p99_ms_min=min(s["p99_ms"] for s in ok),
                             p99_ms_max=max(s["p99_ms"] for s in ok))
                cpus = [s["cpu_s"] for s in ok if "cpu_s" in s]
                if cpus:
                    entry["cpu_s_median"] = statistics.median(cpus)
            else:
                entry["error"] = xs[0]["error"] if xs else ""
            summary.setdefault(mode, {})[name] = entry
        m = summary[mode]
        for mine in [n for n in targets if n.startswith("wirepool")]:
            w = m[mine].get("tps_median")
            for other in ("pgbouncer", "pgbouncer-1.25", "odyssey", "direct", "baseline"):
                if other not in m:
                    continue
                o = m[other].get("tps_median")
                m[f"{mine}/{other}"] = round(w / o, 3) if w and o else None
    result = {"seconds": args.seconds, "rounds": args.rounds, "clients": args.clients,
              "pool": args.pool, "scale": args.scale, "wirepool_threads": args.wirepool_threads,
              "pipeline_max": args.pipeline_max, "peers": sorted(peers),
              "summary": summary, "samples": samples}
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
