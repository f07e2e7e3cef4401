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

Batches (docs/protocol-postgres.md, "Batches"): 300 pipelined Bind/Describe/
Execute of one INSERT before a Sync go to each ODBC driver as parameter
arrays (wirepool_batched_executions_total) and answer as PostgreSQL does, one
BindComplete, NoData and "INSERT 0 1" each; a pipeline whose batch hits a
duplicate key runs again one execution at a time and answers the rows before
it, then 23505, then nothing until Sync, inside a transaction (then failed)
and outside; pipelined UPDATEs report each execution's own count, batched
where the driver reports per-row counts (psqlODBC) and row by row elsewhere;
pgbench -M prepared with a \\startpipeline script of 20 INSERTs, a real
client whose pipelines are batched.
"""

import os
import re
import shutil
import struct
import subprocess
import tempfile
import unittest

import psycopg2
import psycopg2.errors

import test_protocol as proto
from harness import (NODE_PATH, PGBENCH, WirepoolTestCase, mariadb_info, mariadb_odbc_entry,
                     pg_info, psql, raw_login, sqlite_odbc_entry)

HERE = os.path.dirname(os.path.abspath(__file__))


BACKENDS = ("odbc_pg", "odbc_maria", "odbc_sqlite")


def tags(messages):
    return [body[:-1].decode() for t, body in messages if t == b"C"]


class OdbcTest(WirepoolTestCase):
    users = "- { name: alice, password: wonderland }"
    http = True
    sqlite_dir = None

    @classmethod
    def start_backends(cls):
        pg = pg_info()
        maria = mariadb_info()
        os.environ["WIREPOOL_TEST_ODBC_PG_PASSWORD"] = pg["password"]
        os.environ["WIREPOOL_TEST_ODBC_MARIA_PASSWORD"] = maria["password"]
        cls.sqlite_dir = tempfile.mkdtemp(prefix="wp-odbc-e2e-")
        cls.databases = f"""
      - name: odbc_pg
        driver: odbc
        connection: "Driver={{PostgreSQL Unicode}};Server={pg['host']};Port={pg['port']};Database={pg['database']};Uid={pg['user']};BoolsAsChar=0"
        password_env: WIREPOOL_TEST_ODBC_PG_PASSWORD
        pool: {{ mode: transaction, max: 4 }}
    """ + mariadb_odbc_entry("odbc_maria", maria, "WIREPOOL_TEST_ODBC_MARIA_PASSWORD", 4) + \
            sqlite_odbc_entry("odbc_sqlite", os.path.join(cls.sqlite_dir, "odbc_e2e.db"), 4)

    @classmethod
    def stop_backends(cls):
        if cls.sqlite_dir:
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

    def test_integer_columns_keep_their_width(self):
        # psqlODBC and MariaDB ODBC report the declared width; SQLite's follows
        # the declared name as on driver sqlite: INTEGER is its 64-bit type.
        want = {"odbc_pg": [21, 23, 20], "odbc_maria": [21, 23, 20], "odbc_sqlite": [21, 20, 20]}
        for db in BACKENDS:
            with self.subTest(db=db):
                c = self.conn(db)
                cur = c.cursor()
                cur.execute("DROP TABLE IF EXISTS e_widths")
                cur.execute("CREATE TABLE e_widths (a smallint, b integer, c bigint)")
                cur.execute("INSERT INTO e_widths VALUES (-32768, 2147483647, 9223372036854775807)")
                cur.execute("SELECT a, b, c FROM e_widths")
                self.assertEqual([d.type_code for d in cur.description], want[db])
                self.assertEqual(cur.fetchone(), (-32768, 2147483647, 9223372036854775807))
                c.close()

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


    # ---- batches ----------------------------------------------------------------

    def batched(self, database):
        """(batches, batched executions) of `database` from /metrics."""
        m = self.wp.metrics()

        def value(name):
            return sum(v for k, v in m.items()
                       if k.startswith(name + "{") and f'database="{database}"' in k)
        return value("wirepool_batches_total"), value("wirepool_batched_executions_total")

    def pipeline(self, database, sql, rows, oids=(20, 25), formats=(1, 0), first=()):
        """Parse, then Bind/Describe/Execute per row, then Sync, in one write
        (after the simple queries `first`); the answers up to ReadyForQuery."""
        c = proto.Conn(raw_login(self.wp.port, database=database))
        try:
            for q in first:
                c.send(proto.msg(b"Q", proto.cstr(q)))
                c.until_ready()
            msgs = [proto.parse("", sql, oids)]
            for r in rows:
                msgs += [proto.bind("", "", r, formats), proto.describe(b"P", ""),
                         proto.execute("")]
            msgs.append(proto.SYNC)
            c.send(*msgs)
            out = c.until_ready()
            if first:  # leave no transaction open
                c.send(proto.msg(b"Q", proto.cstr("ROLLBACK")))
                c.until_ready()
            return out
        finally:
            c.s.close()

    def count(self, database, table):
        return int(psql(self.wp.dsn(database=database), "-c",
                        f"SELECT count(*) FROM {table}").stdout.strip())

    def test_pipelined_inserts_go_as_one_parameter_array(self):
        for db in BACKENDS:
            with self.subTest(db=db):
                dsn = self.wp.dsn(database=db)
                psql(dsn, "-c", "DROP TABLE IF EXISTS e_batch")
                psql(dsn, "-c", "CREATE TABLE e_batch (id bigint PRIMARY KEY, s varchar(40))")
                before = self.batched(db)
                rows = [(struct.pack("!q", i), f"row {i} \u00e9".encode()) for i in range(300)]
                out = self.pipeline(db, "INSERT INTO e_batch (id, s) VALUES ($1, $2)", rows)
                self.assertEqual(proto.types(out), b"1" + b"2nC" * 300 + b"Z")
                self.assertEqual(set(tags(out)), {"INSERT 0 1"})
                self.assertEqual(out[-1][1], b"I")
                after = self.batched(db)
                # Sent in one write, read as it arrives: at most a last group
                # cut off from the rest runs alone.
                self.assertGreaterEqual(after[1] - before[1], 299)
                self.assertGreaterEqual(after[0] - before[0], 1)
                r = psql(dsn, "-c", "SELECT count(*), max(id), max(s) FROM e_batch")
                self.assertEqual(r.stdout.strip(), "300|299|row 99 \u00e9")

    def test_a_batch_that_fails_runs_again_one_execution_at_a_time(self):
        for db in BACKENDS:
            for in_tx in (False, True):
                with self.subTest(db=db, in_transaction=in_tx):
                    dsn = self.wp.dsn(database=db)
                    psql(dsn, "-c", "DROP TABLE IF EXISTS e_batch_dup")
                    psql(dsn, "-c", "CREATE TABLE e_batch_dup (id bigint PRIMARY KEY, s text)")
                    psql(dsn, "-c", "INSERT INTO e_batch_dup VALUES (5, 'there')")
                    before = self.batched(db)
                    rows = [(struct.pack("!q", i), b"x") for i in range(10)]
                    out = self.pipeline(db, "INSERT INTO e_batch_dup (id, s) VALUES ($1, $2)",
                                        rows, first=("BEGIN",) if in_tx else ())
                    # What PostgreSQL answers: the five before, the error, then
                    # nothing until Sync.
                    self.assertEqual(proto.types(out), b"1" + b"2nC" * 5 + b"2nE" + b"Z")
                    self.assertEqual(proto.sqlstates(out), ["23505"])
                    # The transaction goes on after a failed statement: MariaDB
                    # and SQLite roll back the statement, psqlODBC too (its
                    # statement-level rollback, docs/odbc.md).
                    self.assertEqual(out[-1][1], b"T" if in_tx else b"I")
                    self.assertEqual(self.batched(db)[1], before[1])  # none went batched
                    # Outside a transaction the block is one implicit
                    # transaction, as in PostgreSQL: the five roll back too.
                    self.assertEqual(self.count(db, "e_batch_dup"), 1)

    def test_pipelined_updates_report_each_executions_count(self):
        for db in BACKENDS:
            with self.subTest(db=db):
                dsn = self.wp.dsn(database=db)
                psql(dsn, "-c", "DROP TABLE IF EXISTS e_batch_up")
                psql(dsn, "-c", "CREATE TABLE e_batch_up (id bigint PRIMARY KEY, n bigint)")
                psql(dsn, "-c", "INSERT INTO e_batch_up VALUES (0, 0), (1, 0), (2, 0), (3, 0), "
                     "(4, 0), (5, 0), (6, 0), (7, 0), (8, 0), (9, 0)")
                before = self.batched(db)
                rows = [(struct.pack("!q", i),) for i in (0, 4, 20, 8)]
                out = self.pipeline(db, "UPDATE e_batch_up SET n = n + 1 WHERE id >= $1", rows,
                                    oids=(20,), formats=(1,))
                self.assertEqual(tags(out), ["UPDATE 10", "UPDATE 6", "UPDATE 0", "UPDATE 2"])
                # Batched only where the driver counts each row (psqlODBC);
                # MariaDB ODBC and SQLite ODBC give a total, so row by row.
                self.assertEqual(self.batched(db)[1] - before[1], 4 if db == "odbc_pg" else 0)
                r = psql(dsn, "-c", "SELECT sum(n) FROM e_batch_up")
                self.assertEqual(r.stdout.strip(), "18")

    def test_pgbench_pipelines_are_batched(self):
        lines = "INSERT INTO e_pgb (c, n) VALUES (:c, :n);\n" * 20
        with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as f:
            f.write("\\set c random(1, 1000000)\n\\set n random(0, 9)\n\\startpipeline\n" +
                    lines +
                    "\\endpipeline\n")
            script = f.name
        env = dict(os.environ, PGPASSWORD="wonderland")
        try:
            for db in BACKENDS:
                with self.subTest(db=db):
                    dsn = self.wp.dsn(database=db)
                    psql(dsn, "-c", "DROP TABLE IF EXISTS e_pgb")
                    psql(dsn, "-c", "CREATE TABLE e_pgb (c bigint NOT NULL, n int NOT NULL)")
                    before = self.batched(db)
                    r = subprocess.run([PGBENCH, "-n", "-M", "prepared", "-c", "2", "-j", "2",
                                        "-t", "10", "-f", script, "-h", "127.0.0.1",
                                        "-p", str(self.wp.port), "-U", "alice", db],
                                       capture_output=True, text=True, env=env, timeout=300)
                    self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                    self.assertIn("actually processed: 20/20", r.stdout)
                    failed = re.search(r"number of failed transactions: (\d+)", r.stdout)
                    self.assertEqual(failed.group(1), "0", r.stdout)
                    self.assertEqual(self.count(db, "e_pgb"), 400)
                    r2 = psql(dsn, "-c", "SELECT count(*) FROM e_pgb WHERE n BETWEEN 0 AND 9")
                    self.assertEqual(r2.stdout.strip(), "400")
                    # Each line is its own prepared statement of one text: a
                    # pipeline of 20 goes as batches.
                    self.assertGreater(self.batched(db)[1] - before[1], 300)
        finally:
            os.unlink(script)

if __name__ == "__main__":
    unittest.main()
