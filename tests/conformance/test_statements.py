"""Prepared statements and multi-statement queries answer as PostgreSQL does:
checked differentially (differential.py) against PostgreSQL directly,
through wirepool in session mode and in transaction mode.

Covers: a named Parse the server refuses, sent with its own Sync by a client
holding no backend, is refused at Parse (42601), the name then does not exist
(Bind: 26000) and can be parsed again; a simple query of INSERT, SET and a
failing SELECT, and of INSERT, SELECT and a failing SELECT, gives every
answer before the error and rolls back the INSERT; an error raised at Bind
(a constant 1/0) comes without BindComplete (a known difference for now).
"""

import unittest

from differential import DifferentialCase, known_difference
from wire import FLUSH, SYNC, bind, execute, parse, query, summary

BIND_ERROR = ("#28: the ordinary path runs Bind and Execute as one libpq call and answers "
              "BindComplete before an error the server raised at Bind (a constant 1/0 "
              "folded into the plan); the relay is exact except after a Flush")


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


    @known_difference("session", BIND_ERROR)
    @known_difference("transaction", BIND_ERROR)
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
            return out
        self.differ(scenario)


if __name__ == "__main__":
    unittest.main()
