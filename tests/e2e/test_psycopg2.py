"""psycopg2 (Debian's python3-psycopg2) through wirepool to SQLite.

psycopg2 interpolates parameters on the client and sends simple queries.
Covers: int, float, text with non-ASCII characters, bool and NULL round trips;
psycopg2's own transaction handling (it opens BEGIN itself; commit and
rollback); a unique violation answers pgcode 23505 and a syntax error 42601,
and the connection stays usable after each; server-side settings reported to
the client (server_version, client encoding); a query cancelled from another
thread answers 57014 and the connection goes on; statement_timeout set by the
client cancels a long statement.
"""

import threading
import time
import unittest

import psycopg2
import psycopg2.errors

from harness import WirepoolTestCase

# A statement that runs for a long time on SQLite.
LONG_QUERY = ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
              "SELECT count(*) FROM c")


class Psycopg2Test(WirepoolTestCase):

    def connect(self):
        return psycopg2.connect(self.wp.kv())

    def test_round_trip_types(self):
        conn = self.connect()
        cur = conn.cursor()
        cur.execute("CREATE TABLE p1 (i BIGINT, f DOUBLE PRECISION, t TEXT, b BOOLEAN, n TEXT)")
        cur.execute("INSERT INTO p1 VALUES (%s, %s, %s, %s, %s)",
                    (9007199254740993, 3.25, "grüße, 世界", True, None))
        cur.execute("INSERT INTO p1 VALUES (%s, %s, %s, %s, %s)",
                    (-42, -0.5, "", False, None))
        conn.commit()
        cur.execute("SELECT i, f, t, b, n FROM p1 ORDER BY i")
        rows = cur.fetchall()
        self.assertEqual(rows, [(-42, -0.5, "", False, None),
                                (9007199254740993, 3.25, "grüße, 世界", True, None)])
        self.assertEqual([d.name for d in cur.description], ["i", "f", "t", "b", "n"])
        conn.close()

    def test_rollback(self):
        conn = self.connect()
        cur = conn.cursor()
        cur.execute("CREATE TABLE p2 (v INTEGER)")
        conn.commit()
        cur.execute("INSERT INTO p2 VALUES (1)")
        conn.rollback()
        cur.execute("SELECT count(*) FROM p2")
        self.assertEqual(cur.fetchone()[0], 0)
        conn.close()

    def test_errors_and_recovery(self):
        conn = self.connect()
        conn.autocommit = True
        cur = conn.cursor()
        cur.execute("CREATE TABLE p3 (id INTEGER PRIMARY KEY)")
        cur.execute("INSERT INTO p3 VALUES (1)")
        with self.assertRaises(psycopg2.errors.UniqueViolation) as ctx:
            cur.execute("INSERT INTO p3 VALUES (1)")
        self.assertEqual(ctx.exception.pgcode, "23505")
        self.assertIn("UNIQUE constraint failed: p3.id", str(ctx.exception))
        cur.execute("SELECT count(*) FROM p3")
        self.assertEqual(cur.fetchone()[0], 1)
        with self.assertRaises(psycopg2.errors.SyntaxError) as ctx:
            cur.execute("SELEKT 1")
        self.assertEqual(ctx.exception.pgcode, "42601")
        cur.execute("SELECT 2")
        self.assertEqual(cur.fetchone()[0], 2)
        conn.close()

    def test_reported_parameters(self):
        conn = self.connect()
        self.assertTrue(conn.server_version >= 150000)
        self.assertEqual(conn.encoding, "UTF8")
        conn.close()

    def test_cancel_from_another_thread(self):
        conn = self.connect()
        conn.autocommit = True
        cur = conn.cursor()
        threading.Timer(0.5, conn.cancel).start()
        started = time.time()
        with self.assertRaises(psycopg2.errors.QueryCanceled) as ctx:
            cur.execute(LONG_QUERY)
        self.assertLess(time.time() - started, 10)
        self.assertIn("canceling statement due to user request", str(ctx.exception))
        cur.execute("SELECT 3")
        self.assertEqual(cur.fetchone()[0], 3)
        conn.close()

    def test_statement_timeout(self):
        conn = self.connect()
        conn.autocommit = True
        cur = conn.cursor()
        cur.execute("SET statement_timeout = 300")
        started = time.time()
        with self.assertRaises(psycopg2.errors.QueryCanceled) as ctx:
            cur.execute(LONG_QUERY)
        self.assertLess(time.time() - started, 10)
        self.assertIn("statement timeout", str(ctx.exception))
        cur.execute("RESET statement_timeout")
        cur.execute("SELECT 4")
        self.assertEqual(cur.fetchone()[0], 4)
        conn.close()


if __name__ == "__main__":
    unittest.main()
