"""pgbench through wirepool to SQLite, 32 clients over a pool of 4 backend
connections in transaction mode, in each query mode.

Covers: -M simple, -M extended and -M prepared (named statements prepared on
demand on whichever backend serves them) each finish with zero failed
transactions and every transaction processed; the balances add up afterwards
(no lost or duplicated update). The TPS seen is printed for the record, never
asserted (the machine is shared).
"""

import os
import re
import subprocess
import tempfile
import unittest

from harness import PGBENCH, WirepoolTestCase, psql

SCRIPT = """\\set aid random(1, 1000)
\\set delta random(-5000, 5000)
BEGIN;
UPDATE accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM accounts WHERE aid = :aid;
INSERT INTO history (aid, delta) VALUES (:aid, :delta);
END;
"""


class PgbenchTest(WirepoolTestCase):
    databases = """
      - name: app
        driver: sqlite
        connection: bench.db
        options: { busy_timeout: 10s }
        pool: { mode: transaction, max: 4 }
    """

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        psql(cls.wp.dsn(), input=(
            "CREATE TABLE accounts (aid INTEGER PRIMARY KEY, abalance INTEGER NOT NULL);\n"
            "CREATE TABLE history (id INTEGER PRIMARY KEY, aid INTEGER, delta INTEGER);\n"
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000)\n"
            "INSERT INTO accounts SELECT i, 0 FROM n;\n"))
        fd, cls.script = tempfile.mkstemp(suffix=".sql")
        with os.fdopen(fd, "w") as f:
            f.write(SCRIPT)

    @classmethod
    def tearDownClass(cls):
        os.unlink(cls.script)
        super().tearDownClass()

    def run_mode(self, mode):
        before = int(psql(self.wp.dsn(), "-c", "SELECT count(*) FROM history").stdout)
        env = dict(os.environ, PGPASSWORD="wonderland")
        r = subprocess.run(
            [PGBENCH, "-n", "-M", mode, "-c", "32", "-j", "2", "-t", "50", "-f", self.script,
             "-h", "127.0.0.1", "-p", str(self.wp.port), "-U", "alice", "app"],
            capture_output=True, text=True, timeout=600, env=env)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("number of transactions actually processed: 1600/1600", r.stdout)
        failed = re.search(r"number of failed transactions: (\d+)", r.stdout)
        self.assertIsNotNone(failed, r.stdout)
        self.assertEqual(failed.group(1), "0", r.stdout)
        tps = re.search(r"tps = ([\d.]+)", r.stdout)
        print(f"\npgbench -M {mode} -c 32 over 4 SQLite connections: {tps.group(1)} tps")
        after = int(psql(self.wp.dsn(), "-c", "SELECT count(*) FROM history").stdout)
        self.assertEqual(after - before, 1600)
        # Every committed delta is in the balances: nothing lost, nothing doubled.
        out = psql(self.wp.dsn(), "-c",
                   "SELECT (SELECT sum(abalance) FROM accounts) = "
                   "(SELECT sum(delta) FROM history)").stdout.strip()
        self.assertEqual(out, "1")

    def test_simple(self):
        self.run_mode("simple")

    def test_extended(self):
        self.run_mode("extended")

    def test_prepared(self):
        self.run_mode("prepared")


if __name__ == "__main__":
    unittest.main()
