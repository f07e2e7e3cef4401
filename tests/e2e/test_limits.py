"""Output limits: a value larger than server.max_value_size is refused with
54000, never materialised.

Covers, on SQLite: with the default (64 MiB), SELECT zeroblob(200000000) and an
80 MB TEXT (hex() of a blob) answer 54000 "value too large", the session stays
usable, and the process's peak RSS (VmHWM) grows by less than 100 MB; with
max_value_size: 1MiB, a 1 MiB blob and a text of 1 MiB - 2 bytes pass, a blob one byte
above the limit and a text over it fail with 54000; a result of many rows each under the limit passes
(400 rows of 100 kB). Through the ODBC driver (SQLite ODBC), with
max_value_size: 1MiB: a 1.2 MB TEXT and a 2 MB blob answer 54000, a value under
the limit passes and the session stays usable.
"""

import os
import unittest

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


if __name__ == "__main__":
    unittest.main()
