"""Several MariaDB hosts and a read replica (docs/high-availability.md), against a
MariaDB primary (binary log on) and a replica (read_only=ON, CHANGE MASTER TO
... MASTER_USE_GTID=slave_pos) that this module starts itself
(tests/fixtures/mariadbserver.py `start --binlog`, `replica`). Which server
answers is `@@port`.

MysqlReplicaTest, in order (the servers are shared):
  a. `hosts:` with the replica listed first: writes through `shop` reach the
     primary (@@read_only = 0); reads through `shop_ro` reach the replica; SHOW
     HOSTS names the roles and the replica's lag (Seconds_Behind_Master, 0);
  b. the replica's SQL thread stopped (STOP SLAVE SQL_THREAD: lag unknown) takes
     no reads: `shop_ro` falls back to the primary; started again, it takes
     reads again;
  c. the replica killed is banned; reads go on through the primary.
On a binary without MariaDB hosts the configuration is refused (hosts: for mysql).
"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import psycopg2

from harness import WirepoolTestCase, admin_rows

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures",
                       "mariadbserver.py")


def fixture(*args):
    subprocess.run([sys.executable, FIXTURE, *args], check=True, capture_output=True)


def root(socket_path, sql, columns=False):
    """Runs `sql` as MariaDB's root on `socket_path`; its output (-E with
    columns, else -N). test_mysql_failover uses it too."""
    r = subprocess.run(["mariadb", "--no-defaults", "-uroot", "--socket=" + socket_path,
                        "-E" if columns else "-N", "-e", sql],
                       check=True, capture_output=True, text=True, timeout=30)
    return r.stdout


def start_pair(prefix):
    """A binlog primary and its replica in a new folder: (folder, info.json's
    content). The caller stops them with fixture("stop", folder)."""
    folder = tempfile.mkdtemp(prefix=prefix)
    fixture("start", folder, "--binlog")
    try:
        fixture("replica", folder)
        with open(os.path.join(folder, "info.json")) as f:
            return folder, json.load(f)
    except Exception:
        fixture("stop", folder)
        raise


class MariaPairTestCase(WirepoolTestCase):
    """A wirepool in front of a MariaDB primary and its replica that the class
    starts (start_pair; `info`, `primary` and `replica`, their ports) and
    stops; `entry()` is the databases' YAML."""

    users = """
      - { name: alice, password: wonderland }
      - { name: ops, password: secret, admin: true }
    """
    prefix = "maria-"
    dir = None

    @classmethod
    def entry(cls):
        raise NotImplementedError

    @classmethod
    def start_backends(cls):
        cls.dir, cls.info = start_pair(cls.prefix)
        os.environ["WIREPOOL_TEST_MARIADB_PASSWORD"] = cls.info["password"]
        cls.primary, cls.replica = cls.info["port"], cls.info["replica"]["port"]
        cls.databases = cls.entry()

    @classmethod
    def stop_backends(cls):
        if cls.dir:
            fixture("stop", cls.dir)


class MysqlReplicaTest(MariaPairTestCase):
    prefix = "ro-maria-"

    @classmethod
    def entry(cls):
        return f"""
          - name: shop
            driver: mysql
            connection: "user=wirepool dbname=wirepool connect_timeout=2"
            password_env: WIREPOOL_TEST_MARIADB_PASSWORD
            hosts:
              - {{ host: 127.0.0.1, port: {cls.replica} }}
              - {{ host: 127.0.0.1, port: {cls.primary} }}
            read_only: {{ name: shop_ro, max_replica_lag: 5s }}
            health_check: {{ interval: 200ms, failover_interval: 100ms, ban_time: 500ms,
                            ban_time_max: 2s, failover_timeout: 3s }}
            pool: {{ mode: transaction, max: 2 }}
        """

    def hosts(self, database):
        rows = admin_rows(self.wp, "SHOW HOSTS")
        return {int(r["host"].rsplit(":", 1)[1]): r for r in rows if r["database"] == database}

    def wait_hosts(self, database, want, timeout=6):
        deadline = time.monotonic() + timeout
        rows = None
        while time.monotonic() < deadline:
            rows = self.hosts(database)
            if all((rows.get(p, {}).get("role"), rows.get(p, {}).get("reads")) == w
                   for p, w in want.items()):
                return rows
            time.sleep(0.05)
        self.fail(f"{database}: not {want} within {timeout} s: {rows}")

    def port_of(self, database):
        c = psycopg2.connect(self.wp.kv(database=database))
        c.autocommit = True
        cur = c.cursor()
        cur.execute("SELECT @@port")
        port = int(cur.fetchone()[0])
        c.close()
        return port

    def test_a_writes_reach_the_primary_and_reads_the_replica(self):
        rows = self.wait_hosts("shop_ro", {self.replica: ("standby", "yes"),
                                           self.primary: ("primary", "no")})
        self.assertEqual(rows[self.replica]["lag_ms"], "0")
        self.wait_hosts("shop", {self.replica: ("standby", "NULL"),
                                 self.primary: ("primary", "NULL")})
        c = psycopg2.connect(self.wp.kv(database="shop"))
        c.autocommit = True
        cur = c.cursor()
        cur.execute("CREATE TABLE t (id int PRIMARY KEY)")
        for i in range(20):
            cur.execute("INSERT INTO t VALUES (%s)" % i)
        cur.execute("SELECT @@port")
        self.assertEqual(int(cur.fetchone()[0]), self.primary)
        c.close()
        self.assertEqual(self.port_of("shop_ro"), self.replica)
        # The rows replicate and are read on the replica.
        deadline = time.monotonic() + 5
        n = None
        while time.monotonic() < deadline:
            c = psycopg2.connect(self.wp.kv(database="shop_ro"))
            c.autocommit = True
            cur = c.cursor()
            cur.execute("SELECT count(*), @@port FROM t")
            n, port = cur.fetchone()
            c.close()
            self.assertEqual(int(port), self.replica)
            if int(n) == 20:
                break
            time.sleep(0.1)
        self.assertEqual(int(n), 20)

    def test_b_a_replica_with_its_sql_thread_stopped_takes_no_reads(self):
        sock = self.info["replica"]["socket"]
        root(sock, "STOP SLAVE SQL_THREAD")
        try:
            self.wait_hosts("shop_ro", {self.replica: ("standby", "no")})
            self.assertEqual(self.port_of("shop_ro"), self.primary)
            self.assertIn("takes no reads: replay lag unknown", self.wp.log())
        finally:
            root(sock, "START SLAVE SQL_THREAD")
        self.wait_hosts("shop_ro", {self.replica: ("standby", "yes")})
        self.assertEqual(self.port_of("shop_ro"), self.replica)

    def test_c_a_dead_replica_is_banned_and_reads_go_to_the_primary(self):
        self.wait_hosts("shop_ro", {self.replica: ("standby", "yes")})
        with open(os.path.join(self.info["replica"]["dir"], "pid")) as f:
            os.kill(int(f.read().strip()), signal.SIGKILL)
        self.wait_hosts("shop_ro", {self.replica: ("banned", "no")})
        self.assertEqual(self.port_of("shop_ro"), self.primary)
        self.assertIn("banned for", self.wp.log())


if __name__ == "__main__":
    unittest.main()
