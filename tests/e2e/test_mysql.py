"""wirepool in front of a real MariaDB (the CTest fixture `mariadb`, a throwaway
server started once per suite: tests/fixtures/mariadbserver.py), reached by
PostgreSQL clients through the mysql driver.

Covers: psql reads every value kind as PostgreSQL types (TINYINT(1) as bool,
BIGINT UNSIGNED as numeric, DECIMAL exact, BLOB as bytea, DATETIME as
timestamp, DATE as date, JSON as text) and gets MariaDB's errors with precise
SQLSTATEs (42601, 42P01); psycopg2 sees the type OIDs, the constraint errors
(23505, 23503, 23502, 23514), commit and rollback, a row lock refused as 55P03
with FOR UPDATE NOWAIT, and SELECT SLEEP(30) cancelled within a second;
node-postgres's extended protocol with $N parameters (repeated ones too):
untyped `true` and ISO dates with a zone are refused by MariaDB (22P02, 22007:
docs/mysql.md), while 1/0 and 'YYYY-MM-DD HH:MM:SS' are accepted; a backend
connection the server kills gives its client an error and is replaced for the
next (a prepared statement killed mid-execution: 08006 naming the lost
connection, and the client goes on); in session mode the next client finds no user variable or temporary
table of the last (COM_RESET_CONNECTION); an entry with a tls block reaches MariaDB over TLS 1.3; pgbench
with a custom script (BEGIN, SELECT, UPDATE, END) in simple, extended and
prepared modes with zero failed transactions; 200,000 rows through wirepool
without growing its memory. And a SQL Server client: tedious (TDS 8.0 strict)
through the TDS front end with @name parameters (rewritten to $n, then ?),
NULLs, NVARCHAR, DECIMAL and VARBINARY values, errors as SQL Server numbers
(2627 for a duplicate key, 102 for a syntax error) and a two-result batch.
"""

import json
import os
import re
import subprocess
import tempfile
import threading
import time
import unittest

import psycopg2
import psycopg2.errors

from harness import NODE_PATH, PGBENCH, WirepoolTestCase, mariadb_info, psql


def database_entry(info, name, mode, max_conns):
    return f"""
      - name: {name}
        driver: mysql
        connection: "host={info['host']} port={info['port']} user={info['user']} dbname={info['database']}"
        password_env: WIREPOOL_TEST_MARIADB_PASSWORD
        pool: {{ mode: {mode}, max: {max_conns} }}
    """


class MysqlTest(WirepoolTestCase):
    """wirepool with `my` (transaction mode, 4 connections) and `mysession`
    (session mode) on the same MariaDB."""

    users = "- { name: alice, password: wonderland }"

    @classmethod
    def setUpClass(cls):
        cls.info = mariadb_info()
        os.environ["WIREPOOL_TEST_MARIADB_PASSWORD"] = cls.info["password"]
        cls.databases = (database_entry(cls.info, "my", "transaction", 4) +
                         database_entry(cls.info, "mysession", "session", 4) +
                         database_entry(cls.info, "mysession1", "session", 1) +
                         database_entry(cls.info, "my1", "transaction", 1))
        if "tls" in cls.info:
            cls.databases += (database_entry(cls.info, "mytls", "transaction", 2).rstrip(" ") +
                              f"        tls: {{ ca: {cls.info['tls']['ca']} }}\n")
        super().setUpClass()

    def conn(self, database="my", autocommit=True):
        c = psycopg2.connect(self.wp.kv(database=database))
        c.autocommit = autocommit
        return c

    def q(self, *sql, database="my"):
        args = []
        for s in sql:
            args += ["-c", s]
        return psql(self.wp.dsn(database=database), *args).stdout.strip()

    def node(self, script, *args):
        r = subprocess.run(["node", "-e", script, self.wp.dsn(database="my"), *args],
                           capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, NODE_PATH=NODE_PATH, TZ="UTC"))
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout

    # ---- psql -------------------------------------------------------------

    def test_psql_reads_every_kind(self):
        self.q("DROP TABLE IF EXISTS kinds",
               "CREATE TABLE kinds (id INT PRIMARY KEY, b TINYINT(1), i BIGINT, "
               "u BIGINT UNSIGNED, f DOUBLE, d DECIMAL(10,2), t VARCHAR(20), bl BLOB, "
               "dt DATETIME(6), da DATE, j JSON)",
               "INSERT INTO kinds VALUES (1, 1, -9223372036854775808, 18446744073709551615, "
               "1.5, 12.50, 'grüße', X'00ff', '2024-02-29 12:34:56.123456', '2024-02-29', "
               "'{\"k\": [1, 2]}'), (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "
               "NULL)")
        out = self.q("SELECT b, i, u, f, d, t, bl, dt, da, j FROM kinds ORDER BY id")
        rows = out.splitlines()
        self.assertEqual(rows[0], "t|-9223372036854775808|18446744073709551615|1.5|12.50|grüße|"
                                  "\\x00ff|2024-02-29 12:34:56.123456|2024-02-29|"
                                  '{"k": [1, 2]}')
        self.assertEqual(rows[1], "|||||||||")

    def test_psql_errors_carry_precise_sqlstates(self):
        for sql, code in (("SELEC 1", "42601"), ("SELECT * FROM no_such_table", "42P01"),
                          ("SELECT nope FROM (SELECT 1 AS a) x", "42703")):
            r = psql(self.wp.dsn(database="my"), "-v", "VERBOSITY=verbose", "-c", sql,
                     check=False)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn(f"ERROR:  {code}:", r.stderr)

    # ---- psycopg2 -----------------------------------------------------------

    def test_psycopg2_types_and_constraint_errors(self):
        c = self.conn()
        cur = c.cursor()
        cur.execute("DROP TABLE IF EXISTS child")
        cur.execute("DROP TABLE IF EXISTS parent")
        cur.execute("CREATE TABLE parent (id INT PRIMARY KEY) ENGINE=InnoDB")
        cur.execute("CREATE TABLE child (id INT PRIMARY KEY, p INT NOT NULL, n INT CHECK (n > 0), "
                    "FOREIGN KEY (p) REFERENCES parent (id)) ENGINE=InnoDB")
        cur.execute("INSERT INTO parent VALUES (%s)", (1,))
        cur.execute("SELECT TRUE = 1, CAST(18446744073709551615 AS UNSIGNED), 2.50, 'x', CAST('2024-01-02' AS DATE)")
        # MariaDB describes 'x' as VARCHAR(1): varchar, as a VARCHAR(n) column is.
        self.assertEqual([d.type_code for d in cur.description], [23, 1700, 1700, 1043, 1082])
        cases = (("INSERT INTO parent VALUES (1)", psycopg2.errors.UniqueViolation),
                 ("INSERT INTO child VALUES (1, 99, 1)", psycopg2.errors.ForeignKeyViolation),
                 ("INSERT INTO child VALUES (1, NULL, 1)", psycopg2.errors.NotNullViolation),
                 ("INSERT INTO child VALUES (1, 1, -1)", psycopg2.errors.CheckViolation))
        for sql, error in cases:
            with self.assertRaises(error) as ctx:
                cur.execute(sql)
            self.assertTrue(ctx.exception.pgerror)
        c.close()

    def test_integer_columns_keep_their_width(self):
        # The smallest PostgreSQL integer that holds every value of the type:
        # node-postgres hands int2/int4 to JavaScript as numbers, int8 as strings.
        c = self.conn()
        cur = c.cursor()
        cur.execute("DROP TABLE IF EXISTS widths")
        cur.execute("CREATE TABLE widths (a TINYINT, b SMALLINT, c MEDIUMINT, d INT, e BIGINT, "
                    "f TINYINT UNSIGNED, g SMALLINT UNSIGNED, h INT UNSIGNED, i TINYINT(1))")
        cur.execute("INSERT INTO widths VALUES (-128, -32768, -8388608, -2147483648, "
                    "-9223372036854775808, 255, 65535, 4294967295, 1)")
        cur.execute("SELECT * FROM widths")
        self.assertEqual([d.type_code for d in cur.description],
                         [21, 21, 23, 23, 20, 21, 23, 20, 16])
        self.assertEqual(cur.fetchone(), (-128, -32768, -8388608, -2147483648,
                                          -9223372036854775808, 255, 65535, 4294967295, True))
        c.close()

    def test_psycopg2_commit_and_rollback(self):
        setup = self.conn()
        setup.cursor().execute("DROP TABLE IF EXISTS tx")
        setup.cursor().execute("CREATE TABLE tx (id INT PRIMARY KEY) ENGINE=InnoDB")
        c = self.conn(autocommit=False)
        cur = c.cursor()
        cur.execute("INSERT INTO tx VALUES (%s)", (1,))
        c.commit()
        cur.execute("INSERT INTO tx VALUES (%s)", (2,))
        c.rollback()
        cur.execute("SELECT id FROM tx ORDER BY id")
        self.assertEqual(cur.fetchall(), [(1,)])
        c.commit()
        c.close()
        setup.close()

    def test_row_lock_is_refused_as_55p03(self):
        a = self.conn(database="mysession", autocommit=False)
        b = self.conn()
        ca = a.cursor()
        ca.execute("DROP TABLE IF EXISTS locked")
        a.commit()
        ca.execute("CREATE TABLE locked (id INT PRIMARY KEY) ENGINE=InnoDB")
        ca.execute("INSERT INTO locked VALUES (1)")
        a.commit()
        ca.execute("SELECT id FROM locked WHERE id = 1 FOR UPDATE")
        with self.assertRaises(psycopg2.errors.LockNotAvailable):
            b.cursor().execute("SELECT id FROM locked WHERE id = 1 FOR UPDATE NOWAIT")
        a.rollback()
        cb = b.cursor()
        cb.execute("SELECT id FROM locked WHERE id = 1 FOR UPDATE NOWAIT")
        self.assertEqual(cb.fetchall(), [(1,)])
        a.close()
        b.close()

    def test_cancel_of_sleep_within_a_second(self):
        c = self.conn()
        t = threading.Timer(0.3, c.cancel)
        t0 = time.monotonic()
        t.start()
        try:
            cur = c.cursor()
            cur.execute("SELECT SLEEP(30)")
            # MariaDB ends an interrupted SLEEP early with 1 instead of an error.
            self.assertEqual(cur.fetchone()[0], 1)
        except psycopg2.errors.QueryCanceled:
            pass
        t.join()
        self.assertLess(time.monotonic() - t0, 1.5)
        cur = c.cursor()
        cur.execute("SELECT 2")
        self.assertEqual(cur.fetchone()[0], 2)
        c.close()

    def test_streaming_200000_rows_keeps_memory_flat(self):
        c = self.conn()
        cur = c.cursor()
        before = self.wp.rss_kib()
        cur.execute("SELECT seq, REPEAT('x', 100) FROM seq_1_to_200000")
        n = 0
        while True:
            rows = cur.fetchmany(10000)
            if not rows:
                break
            n += len(rows)
        self.assertEqual(n, 200000)
        grown = self.wp.rss_kib() - before
        self.assertLess(grown, 32 * 1024, f"wirepool grew by {grown} KiB")
        c.close()

    # ---- node-postgres ----------------------------------------------------

    def test_node_postgres_parameters(self):
        self.q("DROP TABLE IF EXISTS nt",
               "CREATE TABLE nt (id INT PRIMARY KEY, b TINYINT(1), dt DATETIME(3), s TEXT)")
        script = r"""
          const { Client } = require('pg');
          (async () => {
            const c = new Client({ connectionString: process.argv[1] });
            await c.connect();
            const out = {};
            // The forms MariaDB accepts: 1/0 and 'YYYY-MM-DD HH:MM:SS'.
            const ins = 'INSERT INTO nt VALUES ($1, $2, $3, $4)';
            out.ok = (await c.query(ins, [1, 1, '2024-02-29 12:34:56.789', 'a $1 ?'])).rowCount;
            out.ok0 = (await c.query(ins, [2, 0, '2024-03-01 00:00:00', null])).rowCount;
            // What node-postgres sends by itself: untyped 'true' and an ISO date.
            for (const [k, v] of [['bool', [3, true, '2024-03-01 00:00:00', 'x']],
                                  ['date', [4, 1, new Date(Date.UTC(2024, 1, 29)), 'x']]]) {
              try { await c.query(ins, v); out[k] = 'accepted'; }
              catch (e) { out[k] = e.code; }
            }
            const r = await c.query('SELECT id, b, dt, s FROM nt WHERE id IN ($1, $2) AND $1 > 0 ORDER BY id', [1, 2]);
            out.rows = r.rows;
            out.types = r.fields.map(f => f.dataTypeID);
            await c.end();
            console.log(JSON.stringify(out));
          })().catch(e => { console.error(e); process.exit(1); });
        """
        out = json.loads(self.node(script))
        self.assertEqual(out["ok"], 1)
        self.assertEqual(out["ok0"], 1)
        self.assertEqual(out["bool"], "22P02")  # Incorrect integer value: 'true'
        self.assertEqual(out["date"], "22007")  # Incorrect datetime value: '...T...+00:00'
        self.assertEqual(out["types"], [23, 16, 1114, 25])
        self.assertEqual(out["rows"][0]["b"], True)
        self.assertEqual(out["rows"][0]["dt"], "2024-02-29T12:34:56.789Z")
        self.assertEqual(out["rows"][0]["s"], "a $1 ?")
        self.assertEqual(out["rows"][1]["b"], False)
        self.assertIsNone(out["rows"][1]["s"])

    # ---- backend connections -------------------------------------------------

    def root_sql(self, sql):
        r = subprocess.run(["mariadb", "--no-defaults", "-uroot", "--socket=" + self.info["socket"],
                            "-N", "-e", sql], capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout.split()

    def test_backend_killed_by_the_server_is_replaced(self):
        c = self.conn(database="mysession")
        cur = c.cursor()
        cur.execute("SELECT CONNECTION_ID()")
        backend = cur.fetchone()[0]
        self.root_sql(f"KILL {backend}")
        # The client of the killed session gets an error, not a hang.
        with self.assertRaises(psycopg2.Error):
            cur.execute("SELECT 1")
            cur.fetchall()
        c.close()
        # The pool dropped the connection: the next client is served.
        c = self.conn(database="mysession")
        cur = c.cursor()
        cur.execute("SELECT CONNECTION_ID()")
        self.assertNotEqual(cur.fetchone()[0], backend)
        c.close()

    def test_prepared_statement_on_a_killed_backend_names_the_lost_connection(self):
        import psycopg
        with psycopg.connect(self.wp.kv(database="my1"), autocommit=True) as c:
            backend = c.execute("SELECT CONNECTION_ID()").fetchone()[0]
            killer = threading.Timer(0.5, self.root_sql, (f"KILL {backend}",))
            killer.start()
            with self.assertRaises(psycopg.Error) as cm:
                c.execute("SELECT SLEEP(5), %s", (6,), prepare=True).fetchone()
            killer.join()
            e = cm.exception
            self.assertEqual(e.sqlstate, "08006", f"{e.sqlstate}: {e}")
            self.assertIn("lost", str(e).lower())
            # The pool dropped that connection; the client goes on.
            self.assertEqual(c.execute("SELECT %s", (7,), prepare=True).fetchone()[0], "7")

    def test_session_mode_leaves_nothing_for_the_next_client(self):
        # One backend connection: the second client gets the first one's.
        c = self.conn(database="mysession1")
        cur = c.cursor()
        cur.execute("SELECT CONNECTION_ID()")
        backend = cur.fetchone()[0]
        # (SET is a client setting to wirepool's session layer: assign in a SELECT.)
        cur.execute("SELECT @secret := 'first client'")
        cur.execute("CREATE TEMPORARY TABLE scratch (a INT)")
        c.close()
        c = self.conn(database="mysession1")
        cur = c.cursor()
        cur.execute("SELECT CONNECTION_ID(), @secret")
        self.assertEqual(cur.fetchone(), (backend, None))
        with self.assertRaises(psycopg2.errors.UndefinedTable):
            cur.execute("SELECT * FROM scratch")
        c.close()

    def test_tls_to_the_backend(self):
        if "tls" not in self.info:
            self.skipTest("the fixture has no TLS")
        out = self.q("SHOW SESSION STATUS LIKE 'Ssl_version'", database="mytls")
        self.assertEqual(out, "Ssl_version|TLSv1.3")

    # ---- pgbench --------------------------------------------------------------

    def test_pgbench_custom_script_in_every_mode(self):
        self.q("DROP TABLE IF EXISTS bench",
               "CREATE TABLE bench (id INT PRIMARY KEY, v INT NOT NULL) ENGINE=InnoDB",
               "INSERT INTO bench SELECT seq, 0 FROM seq_1_to_1000")
        with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as f:
            f.write("\\set id random(1, 1000)\n"
                    "BEGIN;\n"
                    "SELECT v FROM bench WHERE id = :id;\n"
                    "UPDATE bench SET v = v + 1 WHERE id = :id;\n"
                    "END;\n")
            script = f.name
        env = dict(os.environ, PGPASSWORD="wonderland")
        base = ["-h", "127.0.0.1", "-p", str(self.wp.port), "-U", "alice"]
        try:
            for mode in ("simple", "extended", "prepared"):
                r = subprocess.run([PGBENCH, "-n", "-M", mode, "-c", "8", "-j", "2", "-t", "100",
                                    "-f", script, *base, "my"], capture_output=True, text=True,
                                   env=env, timeout=300)
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                self.assertIn("actually processed: 800/800", r.stdout)
                failed = re.search(r"number of failed transactions: (\d+)", r.stdout)
                self.assertEqual(failed.group(1), "0", r.stdout)
        finally:
            os.unlink(script)
        self.assertEqual(self.q("SELECT SUM(v) FROM bench"), "2400")


TEDIOUS_SCRIPT = r"""
const fs = require('fs');
const assert = require('assert');
const { Connection, Request, TYPES } = require('tedious');
const cfg = JSON.parse(process.argv[1]);
function connect() {
  const conn = new Connection({
    server: '127.0.0.1',
    authentication: { type: 'default', options: { userName: 'alice', password: 'wonderland' } },
    options: { port: cfg.port, database: 'my', encrypt: 'strict', serverName: 'localhost',
               cryptoCredentialsDetails: { ca: fs.readFileSync(cfg.ca) },
               trustServerCertificate: false, connectTimeout: 15000, requestTimeout: 60000 },
  });
  return new Promise((ok, ko) => { conn.on('error', () => {}); conn.connect((e) => e ? ko(e) : ok(conn)); });
}
function run(conn, sql, params = [], how = 'execSql') {
  return new Promise((ok, ko) => {
    const rows = [];
    const req = new Request(sql, (e, n) => e ? ko(e) : ok({ rows, n }));
    for (const p of params) req.addParameter(p[0], p[1], p[2], p[3]);
    req.on('row', (cols) => rows.push(cols.map((c) => c.value)));
    conn[how](req);
  });
}
(async () => {
  const c = await connect();
  const out = {};
  await run(c, 'DROP TABLE IF EXISTS tds_t', [], 'execSqlBatch');
  await run(c, 'CREATE TABLE tds_t (id INT PRIMARY KEY, s VARCHAR(20), d DECIMAL(10,2), b BLOB)', [], 'execSqlBatch');
  out.insert = (await run(c, 'INSERT INTO tds_t VALUES (@id, @s, @d, @b)',
      [['id', TYPES.Int, 1], ['s', TYPES.NVarChar, 'grüße'], ['d', TYPES.Decimal, 12.5, { precision: 10, scale: 2 }],
       ['b', TYPES.VarBinary, Buffer.from([0, 255])]])).n;
  await run(c, 'INSERT INTO tds_t VALUES (@id, @s, NULL, NULL)', [['id', TYPES.Int, 2], ['s', TYPES.NVarChar, null]]);
  const r = await run(c, 'SELECT id, s, d, b FROM tds_t WHERE id >= @min ORDER BY id', [['min', TYPES.Int, 1]]);
  out.rows = r.rows.map((row) => row.map((v) => Buffer.isBuffer(v) ? v.toString('hex') : v));
  try { await run(c, 'INSERT INTO tds_t VALUES (@id, NULL, NULL, NULL)', [['id', TYPES.Int, 1]]); out.dup = 'none'; }
  catch (e) { out.dup = e.number; }
  try { await run(c, 'SELEC 1', [], 'execSqlBatch'); out.syntax = 'none'; }
  catch (e) { out.syntax = e.number; }
  const b = await run(c, 'SELECT 1 AS a; SELECT 2 AS b', [], 'execSqlBatch');
  out.batch = b.rows;
  c.close();
  console.log(JSON.stringify(out));
})().catch((e) => { console.error(e); process.exit(1); });
"""


class MysqlTdsTest(WirepoolTestCase):
    """tedious (TDS 8.0 strict) through wirepool's TDS front end to MariaDB."""

    users = "- { name: alice, password: wonderland }"
    tls = "{ generate: true }"
    tds = True

    @classmethod
    def setUpClass(cls):
        cls.info = mariadb_info()
        os.environ["WIREPOOL_TEST_MARIADB_PASSWORD"] = cls.info["password"]
        cls.databases = database_entry(cls.info, "my", "transaction", 2)
        super().setUpClass()

    def test_tedious_parameters_errors_and_batches(self):
        node22 = os.path.join(NODE_PATH, ".bin", "node")
        if not os.path.isdir(os.path.join(NODE_PATH, "tedious")):
            self.skipTest("tedious is not installed (make test installs it)")
        cfg = json.dumps({"port": self.wp.tds_port, "ca": self.wp.certificate()})
        r = subprocess.run([node22, "-e", TEDIOUS_SCRIPT, cfg], capture_output=True, text=True,
                           timeout=120, env=dict(os.environ, NODE_PATH=NODE_PATH))
        self.assertEqual(r.returncode, 0, r.stderr + self.wp.log()[-3000:])
        out = json.loads(r.stdout)
        self.assertEqual(out["insert"], 1)
        self.assertEqual(out["rows"][0][:2], [1, "grüße"])
        self.assertEqual(str(out["rows"][0][2]), "12.5")
        self.assertEqual(out["rows"][0][3], "00ff")
        self.assertEqual(out["rows"][1], [2, None, None, None])
        self.assertEqual(out["dup"], 2627)  # 23505 as SQL Server's number
        self.assertEqual(out["syntax"], 102)  # 42601
        self.assertEqual(out["batch"], [[1], [2]])


if __name__ == "__main__":
    unittest.main()
