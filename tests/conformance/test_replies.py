"""Each answer goes out when it is complete, as PostgreSQL flushes at every
ReadyForQuery: checked differentially (differential.py) against PostgreSQL
directly, through wirepool in session mode and in transaction mode.

Covers: several Sync- or Query-terminated batches arriving in one write, the
second blocked on a lock the test holds: the first batch's whole answer
arrives while the second is still blocked (simple and extended protocol).
"""

import socket
import unittest

import psycopg2

from differential import DifferentialCase
from wire import SYNC, bind, execute, parse, query, summary


class RepliesTest(DifferentialCase):

    def blocked_second(self, first, second):
        def scenario(t):
            holder = psycopg2.connect(self.direct())
            try:
                holder.cursor().execute("SELECT pg_advisory_lock(4711)")
                s, rd = t.connect()
                s.sendall(first + second)
                s.settimeout(5)  # the second batch cannot end while the lock is held
                try:
                    out = [summary(*rd.until_ready())]
                except socket.timeout:
                    out = ["the first answer was held back behind the blocked second batch"]
                holder.cursor().execute("SELECT pg_advisory_unlock(4711)")
                s.settimeout(10)
                out.append(summary(*rd.until_ready()))
                return out
            finally:
                holder.close()
        return scenario

    def test_simple_queries_in_one_write(self):
        lock = query("SELECT pg_advisory_xact_lock(4711)::text")
        self.differ(self.blocked_second(query("SELECT 1"), lock), table="replies_simple")

    def test_extended_batches_in_one_write(self):
        first = parse("", "SELECT 1") + bind("") + execute() + SYNC
        second = (parse("", "SELECT pg_advisory_xact_lock(4711)::text") + bind("") + execute() +
                  SYNC)
        self.differ(self.blocked_second(first, second), table="replies_extended")


if __name__ == "__main__":
    unittest.main()
