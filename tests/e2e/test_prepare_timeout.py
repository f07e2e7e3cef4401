"""A statement timeout bounds the work a driver does at Parse.

The SQLite drivers (native, and SQLite ODBC) step a prepared SELECT once at
Parse to type its expression columns (docs/sqlite.md#types, docs/odbc.md#types).
Covers, on both: a slow recursive CTE prepared by psycopg 3 (extended
protocol: Parse, Bind, Describe, Execute) with statement_timeout set answers
57014 within the timeout's reach, not after the probe ran to its end; the
connection is usable afterwards and a later Parse is not cancelled by the
earlier timeout.
"""

import os
import shutil
import tempfile
import time
import unittest

import psycopg

from harness import WirepoolTestCase

# About 10-20 s of SQLite work on this machine: far beyond the timeout.
SLOW = ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 100000000) "
        "SELECT count(*) + %s FROM c")


class PrepareTimeoutTest(WirepoolTestCase):
    users = "- { name: alice, password: wonderland }"

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="wp-prepare-timeout-")
        cls.databases = f"""
          - name: lite
            driver: sqlite
            connection: {cls.dir}/lite.db
            pool: {{ mode: transaction, max: 2 }}
          - name: odbc_lite
            driver: odbc
            connection: "Driver={{SQLite3}};Database={cls.dir}/odbc.db"
            pool: {{ mode: transaction, max: 2 }}
        """
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        try:
            super().tearDownClass()
        finally:
            shutil.rmtree(cls.dir, ignore_errors=True)

    def check(self, database):
        with psycopg.connect(self.wp.kv(database=database), autocommit=True) as conn:
            conn.execute("SET statement_timeout = 500")
            started = time.monotonic()
            with self.assertRaises(psycopg.errors.QueryCanceled) as ctx:
                conn.execute(SLOW, (1,))
            elapsed = time.monotonic() - started
            self.assertLess(elapsed, 5, f"{database}: the Parse ran {elapsed:.1f} s")
            self.assertIn("statement timeout", str(ctx.exception))
            # The next Parse is not cancelled by the timeout before it.
            self.assertEqual(conn.execute("SELECT count(*) FROM (SELECT 1) WHERE %s = 1",
                                          (1,)).fetchone(), (1,))

    def test_sqlite_probe_at_parse_is_bounded(self):
        self.check("lite")

    def test_sqlite_odbc_probe_at_parse_is_bounded(self):
        self.check("odbc_lite")


if __name__ == "__main__":
    unittest.main()
