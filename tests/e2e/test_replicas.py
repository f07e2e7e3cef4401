"""Read replicas (docs/high-availability.md#read-replicas), against a PostgreSQL
15 primary and two asynchronous streaming standbys that this module starts
itself (tests/fixtures/pgserver.py `standby --name=...`). `app` lists the three
in `hosts:`; its `read_only` block makes `app_ro` (max_replica_lag 1 s,
fallback to the primary) and `app2` the same hosts with `app2_ro` (fallback:
refuse). Which server answers is `inet_server_port()`.

ReplicaTest, in order (the cluster is shared):
  a. reads through app_ro spread over both standbys and never reach the
     primary; a write there fails read-only (25006); writes through app reach
     the primary; SHOW HOSTS and /metrics say which hosts take reads;
  b. a standby whose replay is paused (pg_wal_replay_pause) while the primary
     writes is excluded once its lag passes max_replica_lag (SHOW HOSTS
     reads=no, a log line), reads go to the other; resumed, it takes reads again;
  c. with both standbys paused and behind, app_ro reads from the primary
     (fallback: primary) and app2_ro refuses with an error naming the bound;
  d. a standby killed (-m immediate) is banned and reads go on, without an
     error after the first, on the other;
  e. `app3_ro` (standby2 listed first, probes every 300 s, so its monitor
     still takes the killed standby2 for readable): the first open fails
     there, bans it and is tried again at once on the other standby; the
     client sees no error.
On a binary without read replicas the configuration is refused (read_only).
"""

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import psycopg2

from harness import WirepoolTestCase, admin_rows

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures",
                       "pgserver.py")
STANDBYS = ("standby", "standby2")


def fixture(*args):
    subprocess.run([sys.executable, FIXTURE, *args], check=True, capture_output=True)


def direct(info, node):
    n = info["nodes"][node]
    return psycopg2.connect(host=n["socket_dir"], port=n["port"], user="postgres",
                            dbname=info["database"], connect_timeout=5)


def superuser(info, node, sql):
    c = direct(info, node)
    c.autocommit = True
    cur = c.cursor()
    cur.execute(sql)
    out = cur.fetchall() if cur.description else None
    c.close()
    return out


def replicas_cluster(name):
    d = tempfile.mkdtemp(prefix=f"ro-{name}-")
    fixture("start", d)
    for s in STANDBYS:
        fixture("standby", d, f"--name={s}")
    with open(os.path.join(d, "info.json")) as f:
        return d, json.load(f)


class ReplicaTest(WirepoolTestCase):
    users = """
      - { name: alice, password: wonderland }
      - { name: ops, password: secret, admin: true }
    """
    http = True
    dir = None

    @classmethod
    def start_backends(cls):
        cls.dir, cls.info = replicas_cluster(cls.__name__)
        os.environ["WIREPOOL_TEST_PG_PASSWORD"] = cls.info["password"]
        superuser(cls.info, "primary",
                  "CREATE TABLE log (client int, seq int, PRIMARY KEY (client, seq));"
                  "GRANT ALL ON log TO wirepool")
        nodes = cls.info["nodes"]
        cls.port = {n: nodes[n]["port"] for n in ("primary",) + STANDBYS}
        hosts = "\n".join(f"      - {{ host: 127.0.0.1, port: {cls.port[n]} }}"
                          for n in ("primary",) + STANDBYS)
        entry = """
          - name: {name}
            driver: postgresql
            connection: "user=wirepool dbname=wirepool connect_timeout=2"
            password_env: WIREPOOL_TEST_PG_PASSWORD
            hosts:
{hosts}
            read_only: {{ name: {name}_ro, max_replica_lag: 1s, fallback: {fallback},
                         balance: least_connections }}
            health_check: {{ interval: 200ms, failover_interval: 100ms, ban_time: 500ms,
                            ban_time_max: 2s, failover_timeout: 3s }}
            pool: {{ mode: transaction, max: 4, acquire_timeout: 10s }}
        """
        indent = "\n".join("      " + line for line in hosts.splitlines())
        late = "\n".join(f"            - {{ host: 127.0.0.1, port: {cls.port[n]} }}"
                         for n in ("primary", "standby2", "standby"))
        cls.databases = (entry.format(name="app", hosts=indent, fallback="primary") +
                         entry.format(name="app2", hosts=indent, fallback="refuse") + f"""
          - name: app3
            driver: postgresql
            connection: "user=wirepool dbname=wirepool connect_timeout=2"
            password_env: WIREPOOL_TEST_PG_PASSWORD
            hosts:
{late}
            read_only: {{ name: app3_ro, fallback: refuse }}
            health_check: {{ interval: 300s, failover_timeout: 3s }}
            pool: {{ mode: transaction, max: 1 }}
        """)

    @classmethod
    def stop_backends(cls):
        if cls.dir:
            fixture("stop", cls.dir)

    # ---- helpers

    def admin(self, command):
        return admin_rows(self.wp, command)

    def hosts(self, database):
        return {r["host"]: r for r in self.admin("SHOW HOSTS") if r["database"] == database}

    def wait_hosts(self, database, want, timeout=6):
        """Waits until SHOW HOSTS says `want` ({node: (role, reads)}) for `database`."""
        deadline = time.monotonic() + timeout
        rows = None
        while time.monotonic() < deadline:
            rows = self.hosts(database)
            if all((rows.get(f"127.0.0.1:{self.port[n]}", {}).get("role"),
                    rows.get(f"127.0.0.1:{self.port[n]}", {}).get("reads")) == w
                   for n, w in want.items()):
                return rows
            time.sleep(0.05)
        self.fail(f"{database}: not {want} within {timeout} s: {rows}")

    def ports_read(self, database, n=40, clients=4):
        """The server port that answered each of n reads by `clients` concurrent
        connections (each read holds its backend 20 ms, so the pool opens
        several: the balance rule applies per backend connection)."""
        conns = [psycopg2.connect(self.wp.kv(database=database)) for _ in range(clients)]
        seen = []
        lock = threading.Lock()

        def reader(c, count):
            c.autocommit = True
            cur = c.cursor()
            for _ in range(count):
                cur.execute("SELECT inet_server_port(), pg_sleep(0.02)")
                port = cur.fetchone()[0]
                with lock:
                    seen.append(port)

        threads = [threading.Thread(target=reader, args=(c, n // clients)) for c in conns]
        try:
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=60)
        finally:
            for c in conns:
                c.close()
        self.assertEqual(len(seen), n // clients * clients, "a reader failed")
        return seen

    def write(self, client, seqs):
        c = psycopg2.connect(self.wp.kv())
        c.autocommit = True
        cur = c.cursor()
        for seq in seqs:
            cur.execute("INSERT INTO log VALUES (%s, %s)", (client, seq))
        c.close()

    def all_readable(self):
        for s in STANDBYS:
            superuser(self.info, s, "SELECT pg_wal_replay_resume()")
        self.wait_hosts("app_ro", {s: ("standby", "yes") for s in STANDBYS})

    # ---- the cases

    def test_a_reads_spread_over_the_standbys_and_never_reach_the_primary(self):
        self.all_readable()
        seen = self.ports_read("app_ro")
        self.assertNotIn(self.port["primary"], seen)
        counts = {s: seen.count(self.port[s]) for s in STANDBYS}
        print(f"\nreads per standby, 4 concurrent clients, 40 reads: {counts}", file=sys.stderr)
        for s in STANDBYS:
            self.assertGreater(counts[s], 0, f"no read reached {s}: {counts}")
        c = psycopg2.connect(self.wp.kv(database="app_ro"))
        with self.assertRaises(psycopg2.Error) as cm:
            c.cursor().execute("INSERT INTO log VALUES (1, 1)")
        self.assertEqual(cm.exception.pgcode, "25006")
        c.close()
        self.write(1, range(5))
        c = psycopg2.connect(self.wp.kv())
        cur = c.cursor()
        cur.execute("SELECT inet_server_port()")
        self.assertEqual(cur.fetchone()[0], self.port["primary"])
        c.close()
        rows = self.hosts("app_ro")
        self.assertEqual(rows[f"127.0.0.1:{self.port['primary']}"]["reads"], "no")
        m = self.wp.metrics()
        for s in STANDBYS:
            key = f'wirepool_backend_host_reads{{database="app_ro",host="127.0.0.1:{self.port[s]}"}}'
            self.assertEqual(m.get(key), 1.0, key)
            lag = (f'wirepool_backend_host_replay_lag_seconds{{database="app_ro",'
                   f'host="127.0.0.1:{self.port[s]}"}}')
            self.assertIsNotNone(m.get(lag), lag)

    def test_b_a_lagging_standby_takes_no_reads_until_it_catches_up(self):
        self.all_readable()
        superuser(self.info, "standby2", "SELECT pg_wal_replay_pause()")
        self.write(2, range(3))
        paused = time.monotonic()
        rows = self.wait_hosts("app_ro", {"standby2": ("standby", "no"), "standby": ("standby", "yes")},
                               timeout=5)
        excluded_after = time.monotonic() - paused
        lag = int(rows[f"127.0.0.1:{self.port['standby2']}"]["lag_ms"])
        print(f"\nstandby2 excluded {excluded_after:.2f} s after the write (lag {lag} ms)",
              file=sys.stderr)
        self.assertGreater(lag, 1000)
        seen = self.ports_read("app_ro", n=20)
        self.assertEqual(set(seen), {self.port["standby"]}, seen)
        self.assertIn("takes no reads: replay lag", self.wp.log())
        superuser(self.info, "standby2", "SELECT pg_wal_replay_resume()")
        self.wait_hosts("app_ro", {"standby2": ("standby", "yes")}, timeout=5)
        # The read-only pools were moved: new reads reach standby2 again.
        seen = self.ports_read("app_ro", n=20)
        self.assertIn(self.port["standby2"], seen)

    def test_c_no_standby_within_the_bound_falls_back_or_refuses(self):
        self.all_readable()
        for s in STANDBYS:
            superuser(self.info, s, "SELECT pg_wal_replay_pause()")
        try:
            self.write(3, range(3))
            self.wait_hosts("app_ro", {s: ("standby", "no") for s in STANDBYS})
            self.wait_hosts("app2_ro", {s: ("standby", "no") for s in STANDBYS})
            seen = self.ports_read("app_ro", n=8, clients=2)
            self.assertEqual(set(seen), {self.port["primary"]}, seen)
            with self.assertRaises(psycopg2.Error) as cm:
                c = psycopg2.connect(self.wp.kv(database="app2_ro"))
                c.cursor().execute("SELECT 1")
            self.assertIn("no replica of database \"app2_ro\" takes reads", str(cm.exception))
            self.assertIn("max_replica_lag 1000 ms", str(cm.exception))
        finally:
            self.all_readable()

    def test_d_a_dead_standby_is_banned_and_reads_go_on(self):
        self.all_readable()
        stop = threading.Event()
        lock = threading.Lock()
        seen, errors = [], []

        def reader():
            c = None
            while not stop.is_set():
                try:
                    if c is None:
                        c = psycopg2.connect(self.wp.kv(database="app_ro"))
                        c.autocommit = True
                    cur = c.cursor()
                    cur.execute("SELECT inet_server_port(), pg_sleep(0.01)")
                    port = cur.fetchone()[0]
                    with lock:
                        seen.append((time.monotonic(), port))
                except psycopg2.Error as e:
                    with lock:
                        errors.append(str(e).strip())  # its backend died under it
                    c = None
            if c is not None:
                c.close()

        threads = [threading.Thread(target=reader) for _ in range(4)]
        for t in threads:
            t.start()
        try:
            time.sleep(0.7)
            killed = time.monotonic()
            fixture("kill", self.dir, "standby2")
            time.sleep(2.5)
        finally:
            stop.set()
            for t in threads:
                t.join(timeout=30)
        before = {p for t, p in seen if t < killed}
        late = {p for t, p in seen if t > killed + 1.0}
        print(f"\nkilled standby2: {len(errors)} failed reads of {len(seen) + len(errors)} "
              f"({errors[:2]})", file=sys.stderr)
        self.assertEqual(before, {self.port["standby"], self.port["standby2"]})
        self.assertEqual(late, {self.port["standby"]})
        self.assertLessEqual(len(errors), 4, errors)  # at most one per client whose backend died
        self.wait_hosts("app_ro", {"standby2": ("banned", "no")}, timeout=5)
        self.assertIn("banned for", self.wp.log())

    def test_e_a_failed_open_on_a_standby_is_tried_again_on_the_next(self):
        # After test_d: standby2 is dead, but app3_ro's monitor probed it
        # only at start-up (interval 300 s) and still takes it for readable.
        rows = self.hosts("app3_ro")
        self.assertEqual(rows[f"127.0.0.1:{self.port['standby2']}"]["reads"], "yes",
                         "app3_ro re-probed standby2: the test is void")
        # Which standby an open tries first turns with each open (ties in
        # least connections go round): the backend is replaced until one open
        # has met standby2, at most once per host.
        dead = f"127.0.0.1:{self.port['standby2']}"
        for _ in range(3):
            c = psycopg2.connect(self.wp.kv(database="app3_ro"))
            c.autocommit = True
            cur = c.cursor()
            cur.execute("SELECT inet_server_port()")
            self.assertEqual(cur.fetchone()[0], self.port["standby"])
            c.close()
            if self.hosts("app3_ro")[dead]["role"] == "banned":
                break
            self.admin("RECONNECT app3_ro")
        self.assertEqual(self.hosts("app3_ro")[dead]["role"], "banned")


if __name__ == "__main__":
    unittest.main()
