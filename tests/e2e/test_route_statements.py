"""Single read-only statements of a read-write database routed to a standby
(read_only.route_statements, docs/high-availability.md#routing-read-only-statements),
against a PostgreSQL 15 primary and a streaming standby that this module
starts itself (tests/fixtures/pgserver.py). `app` routes statements (its
read-only database `app_ro`, fallback: refuse); `plain` has a read-only
database but does not route. Which server answers is `pg_is_in_recovery()`.

StatementRouteTest:
  a. psycopg2 in autocommit: `SELECT pg_is_in_recovery()` (and VALUES, WITH,
     two SELECTs in one Query) run on the standby; an INSERT, a SELECT inside
     BEGIN, `SELECT ... FOR UPDATE` and a data-modifying CTE on the primary;
  b. `SELECT nextval('s')` succeeds (the classifier keeps it on the primary)
     and the sequence advances once per call;
  c. `SELECT f()` where f inserts a row: the standby refuses it (25006), it runs
     again on the primary, the client sees only the primary's answer, and the
     row is written exactly once per call (counted); also as the second
     statement of a Query with a SELECT before it;
  d. a SET of the session follows it to the standby (application_name, read
     back there);
  e. the extended protocol: psycopg 3 (Parse/Bind/Describe/Execute/Sync in one
     write) runs a read with a parameter on the standby and `SELECT f(%s)`
     retried on the primary, written once; node-postgres (which writes the
     messages one by one: its block is routed only when it arrives whole, else
     it keeps the primary) gets the primary's answer from f, written once;
  f. with the option off (`plain`) every statement runs on the primary.
On a binary without the option the configuration is refused (a to e fail).
"""

import time
import unittest

import psycopg
import psycopg2

from harness import node_pg
from test_route_reads import PrimaryStandbyCase

SETUP = """
CREATE TABLE IF NOT EXISTS w (x int, on_standby bool);
CREATE SEQUENCE IF NOT EXISTS s;
CREATE OR REPLACE FUNCTION f(v int DEFAULT 0) RETURNS bool LANGUAGE sql AS
  'INSERT INTO w VALUES (v, pg_is_in_recovery()) RETURNING pg_is_in_recovery()';
GRANT ALL ON w TO wirepool;
GRANT ALL ON s TO wirepool;
"""


class StatementRouteTest(PrimaryStandbyCase):
    route = ", route_statements: true"
    setup_sql = SETUP

    @classmethod
    def start_backends(cls):
        super().start_backends()
        # The standby must have the function before a routed call can reach it.
        s = cls.direct("standby")
        deadline = time.monotonic() + 30
        while True:
            cur = s.cursor()
            cur.execute("SELECT count(*) FROM pg_proc WHERE proname = 'f'")
            if cur.fetchone()[0] or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        s.close()

    def written(self, x):
        """Rows of w with x, on the primary: (count, how many on a standby)."""
        c = self.direct("primary")
        cur = c.cursor()
        cur.execute("SELECT count(*), count(*) FILTER (WHERE on_standby) FROM w WHERE x = %s",
                    (x,))
        r = cur.fetchone()
        c.close()
        return r

    def connect(self, database="app"):
        c = psycopg2.connect(self.wp.kv(database=database))
        c.autocommit = True
        return c

    def one(self, cur, sql, *args):
        cur.execute(sql, args or None)
        return cur.fetchone()[0]

    def test_a_reads_run_on_the_standby_and_the_rest_on_the_primary(self):
        c = self.connect()
        cur = c.cursor()
        for _ in range(3):
            self.assertTrue(self.one(cur, "SELECT pg_is_in_recovery()"))
        self.assertTrue(self.one(cur, "VALUES (pg_is_in_recovery())"))
        self.assertTrue(self.one(cur, "WITH a AS (SELECT pg_is_in_recovery() r) SELECT r FROM a"))
        cur.execute("SELECT 1; SELECT pg_is_in_recovery()")
        self.assertTrue(cur.fetchone()[0], "two SELECTs in one Query")
        self.assertFalse(self.one(cur, "INSERT INTO w VALUES (-1, pg_is_in_recovery()) "
                                       "RETURNING on_standby"))
        self.assertFalse(self.one(cur, "SELECT pg_is_in_recovery() FROM w LIMIT 1 FOR UPDATE"))
        self.assertFalse(self.one(cur, "WITH d AS (DELETE FROM w WHERE x = -1 RETURNING 1) "
                                       "SELECT pg_is_in_recovery()"))
        cur.execute("BEGIN")
        self.assertFalse(self.one(cur, "SELECT pg_is_in_recovery()"), "inside BEGIN")
        cur.execute("COMMIT")
        self.assertTrue(self.one(cur, "SELECT pg_is_in_recovery()"), "after COMMIT")
        c.close()

    def test_b_nextval_runs_on_the_primary(self):
        c = self.connect()
        cur = c.cursor()
        first = self.one(cur, "SELECT nextval('s')")
        self.assertEqual(self.one(cur, "SELECT nextval('s')"), first + 1)
        self.assertEqual(self.one(cur, "SELECT pg_catalog.nextval('s')"), first + 2)
        c.close()

    def test_c_a_function_that_writes_is_retried_on_the_primary_once(self):
        c = self.connect()
        cur = c.cursor()
        for _ in range(5):
            self.assertFalse(self.one(cur, "SELECT f(100)"), "the primary's answer")
        self.assertEqual(self.written(100), (5, 0))
        cur.execute("SELECT 1; SELECT f(101)")
        self.assertFalse(cur.fetchone()[0])
        self.assertEqual(self.written(101), (1, 0))
        # The session goes on, reads on the standby again.
        self.assertTrue(self.one(cur, "SELECT pg_is_in_recovery()"))
        c.close()

    def test_d_settings_follow_the_statement_to_the_standby(self):
        c = self.connect()
        cur = c.cursor()
        cur.execute("SET application_name = 'routed'")
        cur.execute("SELECT current_setting('application_name'), pg_is_in_recovery()")
        self.assertEqual(cur.fetchone(), ("routed", True))
        c.close()

    def test_e_psycopg3_extended_protocol(self):
        with psycopg.connect(self.wp.kv(), autocommit=True) as c:
            for i in range(3):
                self.assertTrue(c.execute("SELECT pg_is_in_recovery(), %s::int", (i,))
                                .fetchone()[0])
            for _ in range(3):
                self.assertFalse(c.execute("SELECT f(%s)", (210,)).fetchone()[0])
            self.assertTrue(c.execute("SELECT pg_is_in_recovery(), %s::int", (9,)).fetchone()[0])
        self.assertEqual(self.written(210), (3, 0))

    def test_e_node_postgres_extended_protocol(self):
        out = node_pg(self.wp.dsn(), """
            for (let i = 0; i < 3; i++) {
              out.push((await c.query('SELECT pg_is_in_recovery() AS r, $1::int AS n', [i]))
                .rows[0].r);
            }
            for (let i = 0; i < 3; i++) {
              out.push((await c.query('SELECT f($1) AS r', [200])).rows[0].r);
            }
            out.push((await c.query({ name: 'g', text: 'SELECT f($1) AS r', values: [201] }))
              .rows[0].r);
            out.push((await c.query({ name: 'g', text: 'SELECT f($1) AS r', values: [201] }))
              .rows[0].r);
            out.push((await c.query('SELECT pg_is_in_recovery() AS r, $1::int AS n', [9]))
              .rows[0].r);
        """)
        self.assertEqual(len(out), 9)
        self.assertEqual(out[3:8], [False] * 5, "f's answers come from the primary")
        self.assertEqual(self.written(200), (3, 0))
        self.assertEqual(self.written(201), (2, 0))

    def test_f_without_the_option_everything_runs_on_the_primary(self):
        c = self.connect("plain")
        cur = c.cursor()
        for _ in range(3):
            self.assertFalse(self.one(cur, "SELECT pg_is_in_recovery()"))
        self.assertFalse(self.one(cur, "SELECT f(300)"))
        self.assertEqual(self.written(300), (1, 0))
        c.close()


if __name__ == "__main__":
    unittest.main()
