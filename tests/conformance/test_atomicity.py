"""Statements commit when PostgreSQL would commit them, and only then: checked
differentially (differential.py) against PostgreSQL directly, through wirepool
in session mode and in transaction mode.

Covers: the messages before one Sync run as one implicit transaction, so an
error rolls back the statements before it — a duplicate key after two INSERTs;
a Parse that fails (42601) after an INSERT; an INSERT, a SHOW and a failing
INSERT; a named portal; a row-limited Execute (PortalSuspended) before the
error; Flush in the middle with the answers read before the rest is sent
(psycopg 3's pipeline), with another connection seeing nothing before the
Sync; a batch that arrives in two reads 50 ms apart; 4,000 INSERTs (about
290 KiB) and a failing one. A Sync block that succeeds commits at its Sync. An
INSERT without Sync is never committed when the client then closes its
socket, sends Terminate, or sends Flush, reads the answer and closes; the
next client of the pool finds the backend clean. Inside a Sync block BEGIN
makes the implicit transaction explicit (no warning, status T), COMMIT and
ROLLBACK end it with PostgreSQL's warning, SAVEPOINT is refused (25P01) as
outside a transaction block. A simple Query that arrives while messages are
skipped after an error is skipped too (PostgreSQL ignores everything until
Sync).
"""

import time
import unittest

from differential import DifferentialCase
from wire import FLUSH, SYNC, TERMINATE, bind, execute, parse, query, run, summary


def ins(t, key, v="x"):
    return run(f"INSERT INTO {t.table} VALUES ({key}, '{v}')")


class AtomicityTest(DifferentialCase):

    def test_error_rolls_back_the_statements_before_it_in_its_sync_block(self):
        def scenario(t):
            s, rd = t.connect()
            s.sendall(ins(t, 1) + ins(t, 2) + ins(t, 1) + SYNC)
            out = [summary(*rd.until_ready())]
            # The connection goes on: the next block commits.
            s.sendall(ins(t, 3) + SYNC)
            out.append(summary(*rd.until_ready()))
            return out
        seen = self.differ(scenario)
        self.assertEqual(seen[-1], ("rows", 1))

    def test_a_failed_parse_rolls_back_an_insert_before_it(self):
        def scenario(t):
            s, rd = t.connect()
            s.sendall(ins(t, 1) + parse("", "SELEC 1") + bind("") + execute() + SYNC)
            return [summary(*rd.until_ready())]
        self.assertEqual(self.differ(scenario)[-1], ("rows", 0))

    def test_show_between_statements_keeps_the_block_whole(self):
        def scenario(t):
            s, rd = t.connect()
            s.sendall(ins(t, 1) + run("SHOW DateStyle") + ins(t, 1) + SYNC)
            return [summary(*rd.until_ready())]
        self.assertEqual(self.differ(scenario)[-1], ("rows", 0))

    def test_named_portal_and_row_limit_keep_the_block_whole(self):
        def scenario(t):
            s, rd = t.connect()
            s.sendall(parse("", f"INSERT INTO {t.table} VALUES (1, 'a')") +
                      bind("", portal="p1") + execute("p1") +
                      parse("", f"INSERT INTO {t.table} SELECT g, 'b' FROM "
                                "generate_series(10, 14) g RETURNING id") +
                      bind("", portal="p2") + execute("p2", max_rows=2) +
                      ins(t, 1) + SYNC)
            return [summary(*rd.until_ready())]
        self.assertEqual(self.differ(scenario)[-1], ("rows", 0))

    def test_flush_mid_block_commits_nothing_before_sync(self):
        def scenario(t):
            s, rd = t.connect()
            s.sendall(ins(t, 1) + FLUSH)
            out = [summary(rd.until("C"))]
            # Read before the Sync: not committed, so not visible.
            out.append(("visible before sync", t.rows()))
            s.sendall(ins(t, 2) + FLUSH)
            out.append(summary(rd.until("C")))
            s.sendall(ins(t, 1) + SYNC)
            out.append(summary(*rd.until_ready()))
            return out
        self.assertEqual(self.differ(scenario)[-1], ("rows", 0))

    def test_a_block_in_two_reads_is_one_transaction(self):
        def scenario(t):
            s, rd = t.connect()
            s.sendall(ins(t, 1))
            time.sleep(0.05)
            s.sendall(ins(t, 1) + SYNC)
            return [summary(*rd.until_ready())]
        self.assertEqual(self.differ(scenario)[-1], ("rows", 0))

    def test_four_thousand_inserts_and_an_error_leave_nothing(self):
        def scenario(t):
            s, rd = t.connect()
            batch = b"".join(ins(t, k) for k in range(4000)) + ins(t, 7) + SYNC
            s.sendall(batch)
            msgs, status = rd.until_ready()
            return [len(msgs), summary(msgs[-1:], status)]
        self.assertEqual(self.differ(scenario)[-1], ("rows", 0))

    def test_a_block_that_succeeds_commits_at_its_sync(self):
        def scenario(t):
            s, rd = t.connect()
            s.sendall(ins(t, 1) + ins(t, 2) + SYNC)
            return [summary(*rd.until_ready())]
        self.assertEqual(self.differ(scenario)[-1], ("rows", 2))

    def test_insert_without_sync_is_not_committed_when_the_client_leaves(self):
        def closes(t):
            s, rd = t.connect()
            s.sendall(ins(t, 1))
            time.sleep(0.1)
            s.close()
            return []

        def terminates(t):
            s, rd = t.connect()
            s.sendall(ins(t, 1) + TERMINATE)
            time.sleep(0.1)
            s.close()
            return []

        def flushes(t):
            s, rd = t.connect()
            s.sendall(ins(t, 1) + FLUSH)
            out = [summary(rd.until("C"))]
            s.close()
            return out

        for scenario in (closes, terminates, flushes):
            with self.subTest(scenario.__name__):
                self.assertEqual(self.differ(scenario, table="gone_" + scenario.__name__,
                                             settle=0.3)[-1], ("rows", 0))

    def test_the_next_client_finds_a_clean_backend_after_one_left_mid_block(self):
        def scenario(t):
            out = []
            for _ in range(2 * self.pool_max):
                s, rd = t.connect()
                s.sendall(ins(t, 1) + FLUSH)
                out.append(summary(rd.until("C")))
                s.close()
            time.sleep(0.3)
            s, rd = t.connect()
            s.sendall(ins(t, 1) + SYNC)
            out.append(summary(*rd.until_ready()))
            s.sendall(query("SELECT 1"))
            out.append(summary(*rd.until_ready()))
            return out
        self.assertEqual(self.differ(scenario)[-1], ("rows", 1))

    def test_begin_inside_a_block_makes_it_explicit(self):
        def scenario(t):
            s, rd = t.connect()
            s.sendall(ins(t, 1) + run("BEGIN") + ins(t, 2) + SYNC)
            out = [summary(*rd.until_ready())]
            s.sendall(query("ROLLBACK"))
            out.append(summary(*rd.until_ready()))
            return out
        self.assertEqual(self.differ(scenario)[-1], ("rows", 0))

    def test_commit_and_rollback_inside_a_block_end_it(self):
        def commits(t):
            s, rd = t.connect()
            s.sendall(ins(t, 1) + run("COMMIT") + ins(t, 2) + ins(t, 2) + SYNC)
            return [summary(*rd.until_ready())]

        def rolls_back(t):
            s, rd = t.connect()
            s.sendall(ins(t, 1) + run("ROLLBACK") + ins(t, 2) + SYNC)
            return [summary(*rd.until_ready())]

        self.assertEqual(self.differ(commits)[-1], ("rows", 1))
        self.assertEqual(self.differ(rolls_back)[-1], ("rows", 1))

    def test_savepoint_outside_a_transaction_block_is_refused(self):
        def scenario(t):
            s, rd = t.connect()
            s.sendall(ins(t, 1) + run("SAVEPOINT a") + ins(t, 2) + SYNC)
            return [summary(*rd.until_ready())]
        self.assertEqual(self.differ(scenario)[-1], ("rows", 0))

    def test_a_query_while_skipping_to_sync_is_skipped(self):
        def scenario(t):
            s, rd = t.connect()
            s.sendall(ins(t, 1) + ins(t, 1) + query(f"INSERT INTO {t.table} VALUES (5, 'q')") +
                      SYNC)
            return [summary(*rd.until_ready())]
        self.assertEqual(self.differ(scenario)[-1], ("rows", 0))


if __name__ == "__main__":
    unittest.main()
