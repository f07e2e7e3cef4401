"""Portals outlive their Sync inside a transaction, as in PostgreSQL: checked
differentially (differential.py) against PostgreSQL directly, through
wirepool in session mode and in transaction mode.

Covers: asyncpg's fetchrow inside BEGIN (an Execute with a row limit, then
Sync with the portal suspended) followed by another statement, COMMIT and
ROLLBACK, which must not fail with 55000; a named portal read in steps with
other statements run between the steps, its last step reporting the rows
left and PostgreSQL's tag (the rows of the last step); an unnamed portal suspended outside a
transaction block and a simple Query after it; a cursor opened with SQL
(DECLARE, as psycopg 3's server-side cursors do) described by Describe Portal
(text and BINARY, each column's format) and fetched, and a Describe of a
portal that does not exist (34000).
"""

import unittest

from differential import DifferentialCase
from wire import SYNC, bind, describe, execute, parse, query, summary


class PortalTest(DifferentialCase):

    def test_a_declared_cursor_is_described_and_fetched(self):
        def scenario(t):
            s, rd = t.connect()
            out = []
            s.sendall(query("BEGIN"))
            out.append(summary(*rd.until_ready()))
            for name, binary in (("c_text", ""), ("c_bin", "BINARY")):
                s.sendall(parse("", f"DECLARE {name} {binary} CURSOR FOR "
                                    "SELECT g, g::text AS t FROM generate_series(1, 5) g") +
                          bind("") + execute() + SYNC)
                out.append(summary(*rd.until_ready()))
                s.sendall(describe(b"P", name) + SYNC)
                msgs, status = rd.until_ready()
                out.append([(t_, b) for t_, b in msgs])  # RowDescription bytes, formats included
                s.sendall(parse("", f"FETCH 2 FROM {name}") + bind("") + execute() + SYNC)
                out.append(summary(*rd.until_ready()))
            s.sendall(describe(b"P", "nope") + SYNC)
            out.append(summary(*rd.until_ready()))
            s.sendall(query("COMMIT"))
            out.append(summary(*rd.until_ready()))
            return out
        self.differ(scenario)

    def test_a_row_limited_fetch_in_a_transaction_leaves_the_connection_usable(self):
        def scenario(t):
            s, rd = t.connect()
            out = []
            for key, end in ((7, "COMMIT"), (8, "ROLLBACK")):
                s.sendall(query("BEGIN"))
                out.append(summary(*rd.until_ready()))
                s.sendall(parse("", "SELECT g FROM generate_series(1, 5) g") + bind("") +
                          execute("", max_rows=1) + SYNC)
                out.append(summary(*rd.until_ready()))
                s.sendall(query(f"INSERT INTO {t.table} VALUES ({key}, 'x')"))
                out.append(summary(*rd.until_ready()))
                s.sendall(query(end))
                out.append(summary(*rd.until_ready()))
                out.append(("rows", t.rows()))
            return out
        seen = self.differ(scenario)
        self.assertEqual(seen[4], ("rows", 1))  # after COMMIT
        self.assertEqual(seen[9], ("rows", 1))  # after ROLLBACK

    def test_a_named_portal_is_read_in_steps_around_other_statements(self):
        def scenario(t):
            s, rd = t.connect()
            s.sendall(query("BEGIN"))
            out = [summary(*rd.until_ready())]
            s.sendall(parse("", "SELECT g, repeat('v', g) FROM generate_series(1, 7) g") +
                      bind("", portal="steps") + execute("steps", max_rows=2) + SYNC)
            out.append(summary(*rd.until_ready()))
            for i in range(3):
                s.sendall(parse("", f"INSERT INTO {t.table} VALUES ({i}, 'x')") + bind("") +
                          execute() + execute("steps", max_rows=2) + SYNC)
                out.append(summary(*rd.until_ready()))
            s.sendall(query("COMMIT"))
            out.append(summary(*rd.until_ready()))
            out.append(("rows", t.rows()))
            return out
        seen = self.differ(scenario)
        self.assertEqual(seen[-1], ("rows", 3))

    def test_a_simple_query_after_a_suspended_unnamed_portal(self):
        def scenario(t):
            s, rd = t.connect()
            s.sendall(parse("", "SELECT g FROM generate_series(1, 3) g") + bind("") +
                      execute("", max_rows=1) + SYNC)
            out = [summary(*rd.until_ready())]
            s.sendall(query("SELECT 42"))
            out.append(summary(*rd.until_ready()))
            return out
        self.differ(scenario)


if __name__ == "__main__":
    unittest.main()
