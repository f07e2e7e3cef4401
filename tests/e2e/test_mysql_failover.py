"""MariaDB failover (docs/high-availability.md#mariadb), against a MariaDB
primary (binary log on) and a semi-synchronous replica (read_only=ON) that this
module starts itself (tests/fixtures/mariadbserver.py `start --binlog`, `replica`).

MysqlFailoverTest: under a load of psycopg2 writers through wirepool that each
increment a counter and log (client, seq) in one transaction, the primary is
killed (SIGKILL) and the replica promoted as an operator would (STOP SLAVE
IO_THREAD, wait until the relay log is applied, STOP SLAVE, RESET SLAVE ALL,
SET GLOBAL read_only = 0):
  - new transactions commit on the new primary within 2 s of the promotion;
  - the counter equals the logged rows (nothing applied in part or twice), every
    acknowledged commit is there (nothing lost: semi-synchronous replication
    acknowledges a commit only once the replica has it);
  - the old primary restarted read-write (split brain) is reported diverged and
    none of the writes made afterwards lands on it.
"""

import os
import signal
import subprocess
import sys
import time
import unittest

import psycopg2

from harness import CounterWriters, admin_rows
from test_mysql_replicas import MariaPairTestCase, fixture, root


def slave_status(socket_path):
    out = {}
    for line in root(socket_path, "SHOW SLAVE STATUS", columns=True).splitlines():
        if ":" in line:
            k, v = line.split(":", 1)
            out[k.strip()] = v.strip()
    return out


def promote(socket_path):
    """What an operator does: let the replica apply what it received, then detach it."""
    root(socket_path, "STOP SLAVE IO_THREAD")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        s = slave_status(socket_path)
        if (s.get("Relay_Master_Log_File") == s.get("Master_Log_File") and
                s.get("Exec_Master_Log_Pos") == s.get("Read_Master_Log_Pos")):
            break
        time.sleep(0.02)
    root(socket_path, "STOP SLAVE; RESET SLAVE ALL; SET GLOBAL read_only = 0")


class MysqlFailoverTest(MariaPairTestCase):
    prefix = "fo-maria-"

    @classmethod
    def start_backends(cls):
        super().start_backends()
        primary_sock, replica_sock = cls.info["socket"], cls.info["replica"]["socket"]
        # Semi-synchronous: a commit is acknowledged once the replica has it.
        root(primary_sock, "SET GLOBAL rpl_semi_sync_master_enabled = ON; "
                           "SET GLOBAL rpl_semi_sync_master_timeout = 30000")
        root(replica_sock, "SET GLOBAL rpl_semi_sync_slave_enabled = ON; "
                           "STOP SLAVE IO_THREAD; START SLAVE IO_THREAD")
        root(primary_sock, "CREATE TABLE wirepool.counter (id int PRIMARY KEY, n bigint NOT "
                           "NULL); INSERT INTO wirepool.counter VALUES (1, 0); "
                           "CREATE TABLE wirepool.log (client int, seq int, "
                           "PRIMARY KEY (client, seq))")

    @classmethod
    def entry(cls):
        return f"""
          - name: app
            driver: mysql
            connection: "user=wirepool dbname=wirepool connect_timeout=2"
            password_env: WIREPOOL_TEST_MARIADB_PASSWORD
            hosts:
              - {{ host: 127.0.0.1, port: {cls.primary} }}
              - {{ host: 127.0.0.1, port: {cls.replica} }}
            health_check: {{ interval: 500ms, failover_interval: 100ms, ban_time: 500ms,
                            ban_time_max: 2s, failover_timeout: 10s }}
            pool: {{ mode: transaction, max: 4, acquire_timeout: 15s }}
        """

    def wait_role(self, port, role, timeout=10):
        deadline = time.monotonic() + timeout
        rows = None
        while time.monotonic() < deadline:
            rows = {r["host"]: r["role"] for r in admin_rows(self.wp, "SHOW HOSTS")}
            if rows.get(f"127.0.0.1:{port}") == role:
                return
            time.sleep(0.05)
        self.fail(f"127.0.0.1:{port} not {role} within {timeout} s: {rows}")

    def direct(self, port):
        return subprocess.run(
            ["mariadb", "--no-defaults", "-h127.0.0.1", f"-P{port}", "-uwirepool",
             f"-p{self.info['password']}", "-N", "wirepool"], capture_output=True, text=True,
            check=True, timeout=30)

    def query(self, sock, sql):
        return root(sock, sql).strip()

    def test_failover_loses_nothing_and_keeps_the_old_primary_out(self):
        self.wait_role(self.primary, "primary")
        self.wait_role(self.replica, "standby")
        with CounterWriters(self.wp.kv()) as load:
            time.sleep(1.0)
            with open(os.path.join(self.dir, "pid")) as f:
                os.kill(int(f.read().strip()), signal.SIGKILL)
            time.sleep(0.5)
            promoted = time.monotonic()  # before the promotion starts: an upper bound
            promote(self.info["replica"]["socket"])
            time.sleep(2.5)
        failover_s = load.first_commit_after(promoted)
        self.assertIsNotNone(failover_s, "no commit after the promotion")
        print(f"\nMariaDB failover: first commit {failover_s:.3f} s after the promotion began; "
              f"{len(load.acked)} commits, {len(load.ambiguous)} of unknown outcome",
              file=sys.stderr)
        self.assertLess(failover_s, 2.0, "first commit after the promotion")
        rsock = self.info["replica"]["socket"]
        counter = int(self.query(rsock, "SELECT n FROM wirepool.counter WHERE id = 1"))
        logged = {tuple(int(x) for x in line.split())
                  for line in root(rsock, "SELECT client, seq FROM wirepool.log").splitlines()}
        load.assert_exactly_once(self, counter, logged)

        # The old primary comes back read-write: a second writable host.
        self.wait_role(self.replica, "primary")
        fixture("restart", self.dir)
        self.assertEqual(self.query(self.info["socket"], "SELECT @@global.read_only"), "0",
                         "the old primary is not read-write: the test is void")
        self.wait_role(self.primary, "diverged")
        w = psycopg2.connect(self.wp.kv())
        w.autocommit = True
        for seq in range(30):
            w.cursor().execute("INSERT INTO log VALUES (99, %s)" % seq)
        w.close()
        self.assertEqual(self.query(self.info["socket"],
                                    "SELECT count(*) FROM wirepool.log WHERE client = 99"), "0",
                         "a write reached the old primary")
        self.assertEqual(self.query(rsock, "SELECT count(*) FROM wirepool.log WHERE client = 99"),
                         "30")
        self.assertIn("kept out", self.wp.log())


if __name__ == "__main__":
    unittest.main()
