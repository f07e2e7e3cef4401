"""Output limits: a value larger than server.max_value_size is refused with
54000, never materialised.

Covers, on SQLite: with the default (64 MiB), SELECT zeroblob(200000000) and an
80 MB TEXT (hex() of a blob) answer 54000 "value too large", the session stays
usable, and the process's peak RSS (VmHWM) grows by less than 100 MB; with
max_value_size: 1MiB, a 1 MiB blob and a text of 1 MiB - 2 bytes pass, a blob one byte
above the limit and a text over it fail with 54000; a result of many rows each under the limit passes
(400 rows of 100 kB). Through the ODBC driver (SQLite ODBC), with
max_value_size: 1MiB: a 1.2 MB TEXT and a 2 MB blob answer 54000, a value under
the limit passes and the session stays usable. Through the MySQL driver (the
`mariadb` fixture), with max_value_size: 1MiB, in both protocols (psycopg2's
text queries, psycopg 3's bound parameters: prepared statements): a 1 MiB value
passes, one byte more answers 54000 and the same backend connection serves the
next statement; a 200 MB REPEAT() answers 54000 with the backend connection
closed (its row packet is refused unread), the next statement works on a new
one, and peak RSS grows by less than 50 MB. Through the SQL Server driver (a
second wirepool's TDS listener over SQLite, serving values up to 1 GiB), with
max_value_size: 1MiB: a 1 MiB varbinary(max) and an 800 kB nvarchar(max) (1.6 MB
of UCS-2) pass; a blob one byte over the limit answers 54000 by its announced
PLP length; a text of 400,000 CJK characters (800 kB of UCS-2, 1.2 MB of UTF-8)
answers 54000 after decoding; a 200 MB blob answers 54000 with peak RSS growing
by less than 50 MB; after each the next statement works on the same client
connection.
"""

import json
import os
import unittest

import psycopg
import psycopg2

from harness import Wirepool


def vm_hwm_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


class ValueSizeTest(unittest.TestCase):

    def start(self, server="", databases=None):
        wp = Wirepool(server=server, databases=databases, name="limits").start()
        self.addCleanup(wp.cleanup)
        conn = psycopg2.connect(wp.kv())
        conn.autocommit = True
        self.addCleanup(conn.close)
        return wp, conn.cursor()

    def refused(self, cur, sql):
        with self.assertRaises(psycopg2.Error) as ctx:
            cur.execute(sql)
        self.assertEqual(ctx.exception.pgcode, "54000", ctx.exception)
        self.assertIn("value too large", str(ctx.exception))

    def test_default_limit_refuses_huge_values_with_bounded_memory(self):
        wp, cur = self.start()
        cur.execute("SELECT 1")
        before = vm_hwm_kib(wp.proc.pid)
        self.refused(cur, "SELECT zeroblob(200000000)")
        self.refused(cur, "SELECT hex(zeroblob(40000000))")  # 80 MB of TEXT
        cur.execute("SELECT length(zeroblob(1000))")
        self.assertEqual(cur.fetchone(), (1000,))
        grown = vm_hwm_kib(wp.proc.pid) - before
        self.assertLess(grown, 100 * 1024, f"peak RSS grew by {grown} KiB")

    def test_configured_limit_is_exact(self):
        wp, cur = self.start("max_value_size: 1MiB")
        limit = 1 << 20
        cur.execute(f"SELECT length(zeroblob({limit})), zeroblob({limit})")
        n, blob = cur.fetchone()
        self.assertEqual((n, len(blob)), (limit, limit))
        cur.execute(f"SELECT hex(zeroblob({limit // 2 - 1}))")  # hex() also needs a NUL
        self.assertEqual(len(cur.fetchone()[0]), limit - 2)
        self.refused(cur, f"SELECT zeroblob({limit + 1})")
        self.refused(cur, f"SELECT hex(zeroblob({limit // 2})) || 'x'")
        # Many rows under the limit stream through.
        cur.execute("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 400) "
                    "SELECT i, zeroblob(100000) FROM n")
        rows = cur.fetchall()
        self.assertEqual(len(rows), 400)
        self.assertEqual(sum(len(r[1]) for r in rows), 40_000_000)


    def test_odbc_refuses_values_above_the_limit(self):
        # SQLite ODBC opens a relative path against the working directory.
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "build",
                            f"limits-odbc-{os.getpid()}.db")
        self.addCleanup(lambda: os.path.exists(path) and os.unlink(path))
        wp, cur = self.start("max_value_size: 1MiB", databases=f"""
          - name: app
            driver: odbc
            connection: "Driver={{SQLite3}};Database={os.path.abspath(path)}"
        """)
        # Table columns: SQLite ODBC declares an expression's width too small.
        cur.execute("CREATE TABLE big (id INTEGER, v TEXT, b BLOB)")
        cur.execute("INSERT INTO big VALUES (1, hex(zeroblob(400000)), zeroblob(1000)), "
                    "(2, hex(zeroblob(600000)), NULL), (3, NULL, zeroblob(2000000))")
        cur.execute("SELECT v, b FROM big WHERE id = 1")
        v, b = cur.fetchone()
        self.assertEqual((len(v), len(b)), (800000, 1000))
        self.refused(cur, "SELECT v FROM big WHERE id = 2")
        self.refused(cur, "SELECT b FROM big WHERE id = 3")
        cur.execute("SELECT 1")
        self.assertEqual(cur.fetchone()[0], 1)

class MysqlValueSizeTest(unittest.TestCase):
    """max_value_size: 1MiB on a MariaDB entry in transaction mode with one backend."""

    def setUp(self):
        path = os.environ.get("WIREPOOL_MARIADB_INFO")
        if not path or not os.path.exists(path):
            self.skipTest("no MariaDB fixture (run through ctest, which starts one)")
        with open(path) as f:
            info = json.load(f)
        os.environ["WIREPOOL_TEST_MARIADB_PASSWORD"] = info["password"]
        self.wp = Wirepool(server="max_value_size: 1MiB", name="limits-mysql", databases=f"""
          - name: app
            driver: mysql
            connection: "host={info['host']} port={info['port']} user={info['user']} dbname={info['database']}"
            password_env: WIREPOOL_TEST_MARIADB_PASSWORD
            pool: {{ mode: transaction, max: 1 }}
        """).start()
        self.addCleanup(self.wp.cleanup)

    def refused(self, execute, n):
        with self.assertRaises((psycopg2.Error, psycopg.Error)) as ctx:
            execute("SELECT 1, REPEAT('x', %s)", n)
        e = ctx.exception
        self.assertEqual(getattr(e, "pgcode", None) or getattr(e, "sqlstate", None), "54000", e)
        self.assertIn("value too large", str(e))

    def check(self, execute):
        """`execute(sql, n)` runs `sql` with n for its %s and returns the first row."""
        limit = 1 << 20
        backend = execute("SELECT CONNECTION_ID(), %s", 1)[0]
        self.assertEqual(len(execute("SELECT REPEAT('x', %s)", limit)[0]), limit)
        self.refused(execute, limit + 1)
        # The row was read whole: the backend connection stays.
        self.assertEqual(execute("SELECT CONNECTION_ID(), %s", 1)[0], backend)
        before = vm_hwm_kib(self.wp.proc.pid)
        self.refused(execute, 200_000_000)
        grown = vm_hwm_kib(self.wp.proc.pid) - before
        self.assertLess(grown, 50 * 1024, f"peak RSS grew by {grown} KiB")
        # The half-read packet took its backend connection along; a new one serves.
        self.assertNotEqual(execute("SELECT CONNECTION_ID(), %s", 1)[0], backend)

    def test_text_protocol_refuses_values_above_the_limit(self):
        conn = psycopg2.connect(self.wp.kv())
        conn.autocommit = True
        self.addCleanup(conn.close)
        cur = conn.cursor()

        def text(sql, n):
            cur.execute(sql % n)  # no parameters reach the driver: the text protocol
            return cur.fetchone()
        self.check(text)

    def test_prepared_statements_refuse_values_above_the_limit(self):
        conn = psycopg.connect(self.wp.kv(), autocommit=True)
        self.addCleanup(conn.close)

        def ext(sql, n):
            # A bound parameter: the driver runs a prepared statement (binary protocol).
            return conn.execute(sql, (n,)).fetchone()
        self.check(ext)


class TdsValueSizeTest(unittest.TestCase):
    """max_value_size: 1MiB on a `driver: tds` entry; its server allows 1 GiB."""

    def setUp(self):
        backend = Wirepool(name="limits-tds-backend", tls="{ generate: true }", tds=True,
                           server="max_value_size: 1GiB").start()
        self.addCleanup(backend.cleanup)
        os.environ["WIREPOOL_TEST_TDS_PASSWORD"] = "wonderland"
        self.wp = Wirepool(server="max_value_size: 1MiB", name="limits-tds", databases=f"""
          - name: app
            driver: tds
            connection: "host=127.0.0.1;port={backend.tds_port};user=alice;database=app"
            password_env: WIREPOOL_TEST_TDS_PASSWORD
            pool: {{ mode: transaction, max: 1 }}
            tls: {{ ca: {backend.certificate()} }}
        """).start()
        self.addCleanup(self.wp.cleanup)
        conn = psycopg2.connect(self.wp.kv())
        conn.autocommit = True
        self.addCleanup(conn.close)
        self.cur = conn.cursor()

    def refused(self, sql):
        with self.assertRaises(psycopg2.Error) as ctx:
            self.cur.execute(sql)
        self.assertEqual(ctx.exception.pgcode, "54000", ctx.exception)
        self.assertIn("value too large", str(ctx.exception))
        self.cur.execute("SELECT 1")
        self.assertEqual(self.cur.fetchone(), (1,))

    def test_values_above_the_limit_are_refused(self):
        limit = 1 << 20
        self.cur.execute(f"SELECT zeroblob({limit}), hex(zeroblob(400000))")
        blob, text = self.cur.fetchone()
        self.assertEqual((len(blob), len(text)), (limit, 800000))
        self.refused(f"SELECT zeroblob({limit + 1})")
        self.refused("SELECT replace(hex(zeroblob(200000)), '0', '世')")
        before = vm_hwm_kib(self.wp.proc.pid)
        self.refused("SELECT zeroblob(200000000)")
        grown = vm_hwm_kib(self.wp.proc.pid) - before
        self.assertLess(grown, 50 * 1024, f"peak RSS grew by {grown} KiB")


if __name__ == "__main__":
    unittest.main()
