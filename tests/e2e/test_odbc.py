"""wirepool's ODBC driver from PostgreSQL clients, through the three ODBC
drivers verified here: psqlODBC against the throwaway PostgreSQL (fixture
`pg`), MariaDB Connector/ODBC against the throwaway MariaDB (fixture
`mariadb`), SQLite ODBC against a file in a temporary directory.

Covers, on each: psql creates, fills and reads a table, with several
statements in one -c (SQLite ODBC refuses that in one call: the session layer
splits the text with the backend's lexer, a ';' inside a literal included);
psycopg2 round-trips integers, floats, non-ASCII text, NULL and decimals;
a duplicate key answers 23505 and a syntax error 42601 with the backend's
message, the client staying usable; BEGIN/ROLLBACK drops and BEGIN/COMMIT keeps
rows; an error inside a psql multi-statement text rolls back the statements
before it; node-postgres's untyped parameters: the forms a MySQL server
accepts (1/0, 'YYYY-MM-DD HH:MM:SS') work on all three, and what each backend
does with `true` and a Date is checked as docs/odbc.md records it.
"""

import json
import os
import shutil
import subprocess
import tempfile
import unittest

import psycopg2
import psycopg2.errors

from harness import NODE_PATH, WirepoolTestCase, psql

HERE = os.path.dirname(os.path.abspath(__file__))


def fixture_info(env, what):
    path = os.environ.get(env)
    if not path or not os.path.exists(path):
        raise unittest.SkipTest(f"no {what} fixture (run through ctest, which starts one)")
    with open(path) as f:
        return json.load(f)


BACKENDS = ("odbc_pg", "odbc_maria", "odbc_sqlite")


class OdbcTest(WirepoolTestCase):
    users = "- { name: alice, password: wonderland }"

    @classmethod
    def setUpClass(cls):
        pg = fixture_info("WIREPOOL_PG_INFO", "PostgreSQL")
        maria = fixture_info("WIREPOOL_MARIADB_INFO", "MariaDB")
        os.environ["WIREPOOL_TEST_ODBC_PG_PASSWORD"] = pg["password"]
        os.environ["WIREPOOL_TEST_ODBC_MARIA_PASSWORD"] = maria["password"]
        # The ODBC connection string is passed as written: SQLite ODBC opens a
        # relative path against the process's working directory, so give it an
        # absolute one.
        cls.sqlite_dir = tempfile.mkdtemp(prefix="wp-odbc-e2e-")
        sqlite_file = os.path.join(cls.sqlite_dir, "odbc_e2e.db")
        cls.databases = f"""
          - name: odbc_pg
            driver: odbc
            connection: "Driver={{PostgreSQL Unicode}};Server={pg['host']};Port={pg['port']};Database={pg['database']};Uid={pg['user']};BoolsAsChar=0"
            password_env: WIREPOOL_TEST_ODBC_PG_PASSWORD
            pool: {{ mode: transaction, max: 4 }}
          - name: odbc_maria
            driver: odbc
            connection: "Driver={{MariaDB Unicode}};Server={maria['host']};Port={maria['port']};Database={maria['database']};Uid={maria['user']}"
            password_env: WIREPOOL_TEST_ODBC_MARIA_PASSWORD
            pool: {{ mode: transaction, max: 4 }}
          - name: odbc_sqlite
            driver: odbc
            connection: "Driver={{SQLite3}};Database={sqlite_file}"
            pool: {{ mode: transaction, max: 4 }}
        """
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        try:
            super().tearDownClass()
        finally:
            shutil.rmtree(cls.sqlite_dir, ignore_errors=True)

    def conn(self, database):
        c = psycopg2.connect(self.wp.kv(database=database))
        c.autocommit = True
        return c

    def test_psql_several_statements_in_one_text(self):
        for db in BACKENDS:
            with self.subTest(db=db):
                dsn = self.wp.dsn(database=db)
                psql(dsn, "-c", "DROP TABLE IF EXISTS e_multi")
                psql(dsn, "-c", "CREATE TABLE e_multi (id int PRIMARY KEY, s varchar(20))")
                r = psql(dsn, "-c", "INSERT INTO e_multi VALUES (1, 'a;b'); "
                         "INSERT INTO e_multi VALUES (2, 'c'); SELECT count(*) FROM e_multi")
                self.assertEqual(r.stdout.strip().splitlines()[-1], "2")
                r = psql(dsn, "-c", "SELECT s FROM e_multi ORDER BY id")
                self.assertEqual(r.stdout.split(), ["a;b", "c"])
                # An error in the middle rolls back the statements before it.
                r = psql(dsn, "-c", "INSERT INTO e_multi VALUES (3, 'x'); "
                         "INSERT INTO e_multi VALUES (1, 'dup')", check=False)
                self.assertNotEqual(r.returncode, 0)
                r = psql(dsn, "-c", "SELECT count(*) FROM e_multi")
                self.assertEqual(r.stdout.strip(), "2")

    def test_psycopg2_round_trip_errors_and_transactions(self):
        for db in BACKENDS:
            with self.subTest(db=db):
                c = self.conn(db)
                cur = c.cursor()
                cur.execute("DROP TABLE IF EXISTS e_rt")
                cur.execute("CREATE TABLE e_rt (id int PRIMARY KEY, f double precision, "
                            "s varchar(40), n numeric(10,2))"
                            if db == "odbc_pg" else
                            "CREATE TABLE e_rt (id int PRIMARY KEY, f double, s varchar(40), "
                            "n numeric(10,2))")
                cur.execute("INSERT INTO e_rt VALUES (%s, %s, %s, %s)",
                            (1, 0.25, "Grüße 世界 🚀", "12.50"))
                cur.execute("INSERT INTO e_rt VALUES (%s, %s, %s, %s)", (2, None, None, None))
                cur.execute("SELECT id, f, s FROM e_rt ORDER BY id")
                self.assertEqual(cur.fetchall(), [(1, 0.25, "Grüße 世界 🚀"), (2, None, None)])
                with self.assertRaises(psycopg2.errors.UniqueViolation) as e:
                    cur.execute("INSERT INTO e_rt (id) VALUES (1)")
                self.assertTrue(str(e.exception).strip())
                with self.assertRaises(psycopg2.errors.SyntaxError):
                    cur.execute("SELEC 1")
                cur.execute("SELECT count(*) FROM e_rt")
                self.assertEqual(cur.fetchone()[0], 2)
                # Transactions: rollback drops, commit keeps.
                cur.execute("BEGIN")
                cur.execute("INSERT INTO e_rt (id) VALUES (10)")
                cur.execute("ROLLBACK")
                cur.execute("BEGIN")
                cur.execute("INSERT INTO e_rt (id) VALUES (11)")
                cur.execute("COMMIT")
                cur.execute("SELECT id FROM e_rt WHERE id >= 10")
                self.assertEqual(cur.fetchall(), [(11,)])
                c.close()

    def test_node_postgres_untyped_parameters(self):
        if not os.path.isdir(os.path.join(NODE_PATH, "pg")):
            self.fail(f"node-postgres is not installed in {NODE_PATH} (make test installs it)")
        # What docs/odbc.md records for each backend.
        expected = {
            "odbc_pg": {"bool true": "true", "Date": '"2024-02-29T12:34:56.000Z"'},
            "odbc_maria": {"bool true": "error 22P02", "Date": "error 22007"},
            "odbc_sqlite": {"bool true": "true", "Date": '"2024-02-29T12:34:56.000Z"'},
        }
        for db in BACKENDS:
            with self.subTest(db=db):
                r = subprocess.run(
                    ["node", os.path.join(HERE, "node", "odbc_untyped.js"),
                     self.wp.dsn(database=db), "e_untyped"],
                    capture_output=True, text=True, timeout=60,
                    env=dict(os.environ, NODE_PATH=NODE_PATH, TZ="UTC"))
                self.assertEqual(r.returncode, 0, r.stderr)
                got = dict(line.split(" -> ", 1) for line in r.stdout.strip().splitlines())
                # The forms a MySQL server accepts work everywhere.
                self.assertFalse(got["bool 1"].startswith("error"), got)
                self.assertFalse(got["bool 0"].startswith("error"), got)
                self.assertEqual(got["YYYY-MM-DD HH:MM:SS"], '"2024-02-29T12:34:56.000Z"')
                self.assertEqual(got["text"], '"Grüße 🚀"')
                for case, value in expected[db].items():
                    self.assertEqual(got[case], value, case)


if __name__ == "__main__":
    unittest.main()
