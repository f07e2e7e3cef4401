"""Prepared statements and multi-statement queries answer as PostgreSQL does:
checked differentially (differential.py) against PostgreSQL directly,
through wirepool in session mode and in transaction mode.

Covers: a named Parse the server refuses, sent with its own Sync by a client
holding no backend, is refused at Parse (42601), the name then does not exist
(Bind: 26000) and can be parsed again; a simple query of INSERT, SET and a
failing SELECT, and of INSERT, SELECT and a failing SELECT, gives every
answer before the error and rolls back the INSERT; an error raised at Bind
(a constant 1/0 folded into the plan, of the unnamed statement or of a
named one with its parameter) comes without BindComplete.
"""

import unittest

from differential import DifferentialCase
from wire import FLUSH, SYNC, bind, close_portal, describe, execute, parse, query, summary


class StatementTest(DifferentialCase):

    def test_a_refused_parse_leaves_no_statement(self):
        def scenario(t):
            s, rd = t.connect()
            out = []
            for batch in (parse("s1", "SELEC 1") + SYNC,
                          bind("s1") + execute() + SYNC,
                          parse("s1", "SELECT 1") + SYNC,
                          bind("s1") + execute() + SYNC):
                s.sendall(batch)
                out.append(summary(*rd.until_ready()))
            return out
        self.differ(scenario)

    def test_multi_statement_queries_answer_up_to_their_error(self):
        def scenario(t):
            s, rd = t.connect()
            out = []
            for q in (f"INSERT INTO {t.table} VALUES (1, 'a'); SET search_path TO public; "
                      "SELECT 1/0",
                      f"INSERT INTO {t.table} VALUES (2, 'a'); SELECT 1; SELECT 1/0"):
                s.sendall(query(q))
                out.append(summary(*rd.until_ready()))
            return out
        self.assertEqual(self.differ(scenario)[-1], ("rows", 0))


    def test_an_error_at_bind_has_no_bind_complete(self):
        # A constant 1/0 is folded when the plan is made, at Bind: PostgreSQL
        # answers ParseComplete and the error, no BindComplete.
        def scenario(t):
            s, rd = t.connect()
            out = []
            s.sendall(parse("", "SELECT 1/0") + bind("") + execute() + SYNC)
            out.append(summary(*rd.until_ready()))
            s.sendall(query("SELECT 1"))
            out.append(summary(*rd.until_ready()))
            s.sendall(parse("", "SELECT 1/0") + bind("") + execute() + FLUSH)
            out.append(summary(rd.until("E")))
            s.sendall(SYNC)
            out.append(summary(*rd.until_ready()))
            # A named statement: its custom plan folds 1/$1 with the value.
            s.sendall(parse("s", "SELECT 1/$1::int") + SYNC)
            out.append(summary(*rd.until_ready()))
            for value in ("0", "1", "0"):
                s.sendall(bind("s", value) + describe(b"P") + execute() + SYNC)
                out.append(summary(*rd.until_ready()))
            return out
        self.differ(scenario)

    def test_a_parameter_that_does_not_convert_fails_at_bind(self):
        def scenario(t):
            s, rd = t.connect()
            out = []
            for batch in (parse("", "SELECT $1::int") + bind("", "abc") + describe(b"P") +
                          execute() + SYNC,
                          parse("s", "SELECT $1::int + 1") + SYNC,
                          bind("s", "9999999999") + execute() + SYNC,
                          bind("s", "41") + describe(b"P") + execute() + SYNC,
                          query("BEGIN"),
                          bind("s", "x") + execute() + SYNC,
                          query("ROLLBACK")):
                s.sendall(batch)
                out.append(summary(*rd.until_ready()))
            return out
        self.differ(scenario)

    def test_named_portals_in_a_transaction_are_reachable_by_sql(self):
        def scenario(t):
            s, rd = t.connect()
            out = []
            sel = "SELECT g FROM generate_series(1, $1::int) g"
            for batch in (query("BEGIN"),
                          parse("s", sel) + bind("s", "6", portal="p1") + execute("p1", 3) + SYNC,
                          query('MOVE FORWARD 1 "p1"'),
                          execute("p1", 2) + SYNC,  # exactly the rows left: suspended
                          execute("p1", 2) + SYNC,
                          close_portal("p1") + SYNC,
                          bind("s", "2", portal="p1") + execute("p1") + SYNC,
                          query('CLOSE "p1"'),
                          close_portal("p1") + SYNC,
                          bind("s", "4", portal="p1") + execute("p1", 1) + SYNC,
                          query('FETCH 2 FROM "p1"'),
                          parse("", "SELECT 1/0") + bind("", portal="p2") + execute("p2") + SYNC,
                          query("ROLLBACK"),
                          # The transaction's portals went with it: the name is free.
                          query("BEGIN"),
                          bind("s", "3", portal="p1") + execute("p1", 2) + SYNC,
                          query("COMMIT"),
                          query("BEGIN"),
                          bind("s", "1", portal="p1") + execute("p1") + SYNC,
                          query("COMMIT")):
                s.sendall(batch)
                out.append(summary(*rd.until_ready()))
            return out
        self.differ(scenario)


if __name__ == "__main__":
    unittest.main()
