"""psql against wirepool in front of SQLite.

Covers: SCRAM login; queries and result formatting; explicit transactions
(commit and rollback visible to another connection); errors with their SQLSTATE
under ON_ERROR_STOP (unique violation 23505 with SQLite's message, syntax error
42601, missing table 42P01), and the session staying usable after each;
several statements in one query run as one implicit transaction; SET/SHOW kept
by wirepool (SET LOCAL undone at COMMIT); empty queries; wrong password, unknown user (same message),
unknown database (3D000), a user not allowed to a database (the same message
as a wrong password); transaction
warnings; a pool of 1 shared by sequential clients; version(),
current_database(), current_schema() and pg_backend_pid() answered on SQLite.
"""

import os
import subprocess
import unittest

from harness import WirepoolTestCase, psql


class PsqlTest(WirepoolTestCase):
    databases = """
      - name: app
        driver: sqlite
        connection: app.db
        pool: { mode: transaction, max: 2 }
      - name: other
        driver: sqlite
        connection: other.db
        pool: { mode: session, max: 1 }
    """

    def q(self, sql, **kw):
        return psql(self.wp.dsn(), "-c", sql, **kw).stdout.strip()

    def test_select_and_types(self):
        out = self.q("SELECT 1, 'héllo', 2.5, NULL, x'0102'")
        self.assertEqual(out, "1|héllo|2.5||\\x0102")

    def test_postgres_session_functions_answer_on_sqlite(self):
        # Issue #32: the first queries of PostgreSQL tools and drivers.
        out = self.q("SELECT version(), current_database(), current_schema(), pg_backend_pid() > 0")
        version, database, schema, pid_ok = out.split("|")
        self.assertRegex(version, r"^PostgreSQL 15\.0 \(wirepool, SQLite 3\.")
        self.assertEqual((database, schema, pid_ok), ("main", "public", "1"))

    def test_create_insert_select(self):
        psql(self.wp.dsn(), "-c", "CREATE TABLE t1 (id INTEGER PRIMARY KEY, name TEXT NOT NULL)")
        out = psql(self.wp.dsn(), "-c", "INSERT INTO t1 VALUES (1, 'a'), (2, 'b')").stdout
        self.assertEqual(out.strip(), "INSERT 0 2")
        self.assertEqual(self.q("SELECT name FROM t1 ORDER BY id"), "a\nb")
        self.assertEqual(psql(self.wp.dsn(), "-c", "UPDATE t1 SET name = 'c'").stdout.strip(),
                         "UPDATE 2")
        self.assertEqual(psql(self.wp.dsn(), "-c", "DELETE FROM t1 WHERE id = 1").stdout.strip(),
                         "DELETE 1")

    def test_transactions_commit_and_rollback(self):
        psql(self.wp.dsn(), "-c", "CREATE TABLE t2 (v INTEGER)")
        psql(self.wp.dsn(), input="BEGIN;\nINSERT INTO t2 VALUES (1);\nCOMMIT;\n")
        psql(self.wp.dsn(), input="BEGIN;\nINSERT INTO t2 VALUES (2);\nROLLBACK;\n")
        self.assertEqual(self.q("SELECT v FROM t2"), "1")
        # The transaction state reaches psql: its prompt marker says '*' inside.
        r = psql(self.wp.dsn(), "-v", "PROMPT1=%x|", input="BEGIN;\nSELECT 1;\nCOMMIT;\n",
                 env={"PAGER": ""})
        self.assertIn("1", r.stdout)

    def test_unique_violation_then_session_usable(self):
        psql(self.wp.dsn(), "-c", "CREATE TABLE t3 (id INTEGER PRIMARY KEY, u TEXT UNIQUE)")
        script = ("\\set VERBOSITY verbose\n"
                  "\\set ON_ERROR_STOP 0\n"
                  "INSERT INTO t3 VALUES (1, 'x');\n"
                  "INSERT INTO t3 VALUES (2, 'x');\n"
                  "INSERT INTO t3 VALUES (1, 'y');\n"
                  "SELECT count(*) FROM t3;\n")
        r = psql(self.wp.dsn(), input=script, check=False)
        self.assertIn("ERROR:  23505: UNIQUE constraint failed: t3.u", r.stderr)
        self.assertIn("ERROR:  23505: UNIQUE constraint failed: t3.id", r.stderr)
        self.assertTrue(r.stdout.strip().endswith("1"), r.stdout)

    def test_on_error_stop_syntax_error(self):
        r = psql(self.wp.dsn(), "-v", "VERBOSITY=verbose",
                 input="\\set VERBOSITY verbose\nSELEC 1;\nSELECT 'not reached';\n", check=False)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("42601", r.stderr)
        self.assertNotIn("not reached", r.stdout)
        self.assertEqual(self.q("SELECT 'still fine'"), "still fine")

    def test_missing_table(self):
        r = psql(self.wp.dsn(), input="\\set VERBOSITY verbose\nSELECT * FROM nope;\n",
                 check=False)
        self.assertIn("42P01", r.stderr)
        self.assertIn("no such table: nope", r.stderr)

    def test_multi_statement_query_is_one_implicit_transaction(self):
        psql(self.wp.dsn(), "-c", "CREATE TABLE t4 (id INTEGER PRIMARY KEY)")
        r = psql(self.wp.dsn(), "-c", "INSERT INTO t4 VALUES (1); INSERT INTO t4 VALUES (1)",
                 check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertEqual(self.q("SELECT count(*) FROM t4"), "0")
        psql(self.wp.dsn(), "-c", "INSERT INTO t4 VALUES (1); INSERT INTO t4 VALUES (2)")
        self.assertEqual(self.q("SELECT count(*) FROM t4"), "2")

    def test_set_show_reset(self):
        out = psql(self.wp.dsn(), input=("SET application_name = 'e2e';\nSHOW application_name;\n"
                                         "SET search_path TO a, b;\nSHOW search_path;\n"
                                         "RESET search_path;\nSHOW search_path;\n"
                                         "SHOW server_version;\nSHOW TIME ZONE;\n")).stdout
        lines = out.split("\n")
        self.assertIn("e2e", lines)
        self.assertIn("a, b", lines)
        self.assertIn('"$user", public', lines)
        self.assertIn("UTC", lines)
        r = psql(self.wp.dsn(), "-c", "SET DateStyle = 'German'", check=False)
        self.assertIn("ISO", r.stderr)
        out = psql(self.wp.dsn(), input=("SET application_name = 'outer';\nBEGIN;\n"
                                         "SET LOCAL application_name = 'inner';\n"
                                         "SHOW application_name;\nCOMMIT;\n"
                                         "SHOW application_name;\n")).stdout.split("\n")
        self.assertEqual([l for l in out if l in ("inner", "outer")], ["inner", "outer"])

    def test_empty_query_and_comments(self):
        self.assertEqual(self.q(";"), "")
        self.assertEqual(self.q("-- nothing"), "")

    def test_transaction_warnings(self):
        r = psql(self.wp.dsn(), input="COMMIT;\nBEGIN;\nBEGIN;\nROLLBACK;\n")
        self.assertIn("there is no transaction in progress", r.stderr)
        self.assertIn("there is already a transaction in progress", r.stderr)

    def test_wrong_password_and_unknown_user_look_the_same(self):
        a = psql(self.wp.dsn(password="nope"), "-c", "SELECT 1", check=False)
        b = psql(self.wp.dsn(user="mallory", password="nope"), "-c", "SELECT 1", check=False)
        self.assertNotEqual(a.returncode, 0)
        self.assertIn('password authentication failed for user "alice"', a.stderr)
        self.assertIn('password authentication failed for user "mallory"', b.stderr)
        self.assertEqual(a.stderr.replace("alice", "X").split("FATAL")[1],
                         b.stderr.replace("mallory", "X").split("FATAL")[1])
        self.assertNotIn("wonderland", self.wp.log())

    def test_unknown_database(self):
        r = psql(self.wp.dsn(database="nope"), "-c", "SELECT 1", check=False)
        self.assertIn('database "nope" does not exist', r.stderr)

    def test_user_restricted_to_databases(self):
        r = psql(self.wp.dsn(user="bob", password="builder", database="other"), "-c", "SELECT 1",
                 check=False)
        # The answer of a wrong password (docs/security.md); the log says why.
        self.assertIn('password authentication failed for user "bob"', r.stderr)
        self.assertIn('user "bob": may not use database "other"', self.wp.log())
        self.assertEqual(psql(self.wp.dsn(user="bob", password="builder"), "-c",
                              "SELECT 7").stdout.strip(), "7")

    def test_session_mode_pool_of_one_serves_clients_in_turn(self):
        dsn = self.wp.dsn(database="other")
        psql(dsn, "-c", "CREATE TABLE IF NOT EXISTS s (v INTEGER)")
        for i in range(5):
            psql(dsn, "-c", f"INSERT INTO s VALUES ({i})")
        self.assertEqual(psql(dsn, "-c", "SELECT sum(v) FROM s").stdout.strip(), "10")

    def test_concurrent_clients_over_small_pool(self):
        psql(self.wp.dsn(), "-c", "CREATE TABLE t5 (v INTEGER)")
        procs = [subprocess.Popen(
            ["psql", "-X", "-At", "-v", "ON_ERROR_STOP=1", "-d", self.wp.dsn(), "-c",
             f"INSERT INTO t5 VALUES ({i})"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            for i in range(20)]
        for p in procs:
            out, err = p.communicate(timeout=60)
            self.assertEqual(p.returncode, 0, err)
        self.assertEqual(self.q("SELECT count(*), sum(v) FROM t5"), "20|190")


if __name__ == "__main__":
    unittest.main()
