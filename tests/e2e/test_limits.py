"""Output limits: a value larger than server.max_value_size is refused with
54000, never materialised.

Covers, on SQLite: with the default (64 MiB), SELECT zeroblob(200000000) and an
80 MB TEXT (hex() of a blob) answer 54000 "value too large", the session stays
usable, and the process's peak RSS (VmHWM) grows by less than 100 MB; with
max_value_size: 1MiB, a 1 MiB blob and a text of 1 MiB - 2 bytes pass, a blob one byte
above the limit and a text over it fail with 54000; a result of many rows each under the limit passes
(400 rows of 100 kB).
"""

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

    def start(self, server=""):
        wp = Wirepool(server=server, name="limits").start()
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


if __name__ == "__main__":
    unittest.main()
