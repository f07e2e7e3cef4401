"""A differential stress test: many raw-protocol clients at once, each running
its own seeded sequence of operations, against PostgreSQL directly and through
wirepool (session mode, transaction mode, transaction mode without
pipelining) in the same run; what each client observes and the rows it leaves
must be what PostgreSQL alone gives that client (differential.py).

Operations (each client draws them from its seed; rows are the client's own
id range of one shared table):
- a pipeline of INSERTs that succeeds, and one with an error inside (a
  duplicate key, or a division by zero at Execute after a Flush with its
  answers read first): the rows before the error are gone;
- named statements under names every client uses ("s1", "s2"), prepared,
  executed with parameters, closed, and prepared again with another text;
- an explicit transaction committed or rolled back at random, with a
  SAVEPOINT and an error rolled back to it;
- SET / SHOW / RESET of application_name and set_config of search_path, read
  back;
- a large result abandoned: a side connection asks for 200,000 rows, reads
  the first message and closes;
- abrupt endings: a side connection closes mid-transaction, or sends an
  INSERT without Sync and then Terminate: nothing of either is committed.
At the end each client's rows are counted directly.

`make test` runs 16 clients x 12 operations with one seed; `make soak`
(STRESS_CLIENTS, STRESS_OPS, STRESS_SEEDS) runs 80 clients x 40 operations
over 3 seeds. The wirepool pools have 3 connections in transaction mode and
one per client connection in session mode.
"""

import os
import random
import socket
import threading
import time

from differential import DifferentialCase, Target
from harness import psql
from test_postgresql import database_entry
from wire import FLUSH, SYNC, TERMINATE, bind, close_statement, execute, parse, query, summary

CLIENTS = int(os.environ.get("STRESS_CLIENTS", "16"))
OPS = int(os.environ.get("STRESS_OPS", "12"))
SEEDS = [int(s) for s in os.environ.get("STRESS_SEEDS", "1").split(",")]
SPAN = 100000  # ids per client


class Client:
    def __init__(self, t, index, seed):
        self.t = t
        self.i = index
        self.rng = random.Random(seed * 1000 + index)
        self.next_id = index * SPAN
        self.out = []

    def ids(self, n):
        first = self.next_id
        self.next_id += n
        return list(range(first, first + n))

    def insert(self, key, v="x"):
        return (parse("", f"INSERT INTO {self.t.table} VALUES ({key}, '{v}')") + bind("") +
                execute())

    def note(self, what, messages, status=None):
        self.out.append((what, summary(messages, status)))

    def run(self, ops):
        s, rd = self.t.connect(params=(("application_name", f"c{self.i}"),))
        for _ in range(ops):
            op = self.rng.choice(["pipeline_ok", "pipeline_error", "pipeline_flush_error",
                                  "named", "transaction", "settings", "abandon",
                                  "abrupt_transaction", "no_sync"])
            getattr(self, op)(s, rd)
        s.sendall(TERMINATE)

    def pipeline_ok(self, s, rd):
        s.sendall(b"".join(self.insert(k) for k in self.ids(self.rng.randint(1, 5))) + SYNC)
        self.note("pipeline_ok", *rd.until_ready())

    def pipeline_error(self, s, rd):
        keys = self.ids(3)
        s.sendall(self.insert(keys[0]) + self.insert(keys[1]) + self.insert(keys[0]) +
                  self.insert(keys[2]) + SYNC)
        self.note("pipeline_error", *rd.until_ready())

    def pipeline_flush_error(self, s, rd):
        keys = self.ids(2)
        s.sendall(self.insert(keys[0]) + FLUSH)
        self.note("flush", rd.until("C"))
        # 1/0 over a table's row fails at Execute (a constant 1/0 fails at Bind:
        # test_statements has that case).
        s.sendall(parse("", f"SELECT 1/(id - id) FROM {self.t.table} WHERE id = {keys[0]}") +
                  bind("") + execute() + self.insert(keys[1]) + SYNC)
        self.note("pipeline_flush_error", *rd.until_ready())

    def named(self, s, rd):
        a, b = self.rng.randint(1, 99), self.rng.randint(1, 99)
        s.sendall(parse("s1", "SELECT $1::int * 2 AS twice") + parse("s2", "SELECT $1::text AS t") +
                  bind("s1", str(a)) + execute() + bind("s2", f"v{b}") + execute() + SYNC)
        self.note("named", *rd.until_ready())
        s.sendall(close_statement("s1") + close_statement("s2") + SYNC)
        self.note("closed", *rd.until_ready())
        s.sendall(parse("s1", "SELECT $1::int + 1 AS plus") + bind("s1", str(b)) + execute() +
                  close_statement("s1") + SYNC)
        self.note("named again", *rd.until_ready())

    def transaction(self, s, rd):
        keys = self.ids(3)
        s.sendall(query(f"BEGIN; INSERT INTO {self.t.table} VALUES ({keys[0]}, 'a')"))
        self.note("begin", *rd.until_ready())
        s.sendall(query("SAVEPOINT sp"))
        self.note("savepoint", *rd.until_ready())
        s.sendall(query(f"INSERT INTO {self.t.table} VALUES ({keys[0]}, 'dup')"))
        self.note("duplicate", *rd.until_ready())
        s.sendall(query(f"ROLLBACK TO sp; INSERT INTO {self.t.table} VALUES ({keys[1]}, 'b')"))
        self.note("rolled back to savepoint", *rd.until_ready())
        s.sendall(query(self.rng.choice(["COMMIT", "ROLLBACK"])))
        self.note("end", *rd.until_ready())

    def settings(self, s, rd):
        name = f"c{self.i}x{self.rng.randint(1, 9)}"
        s.sendall(query(f"SET application_name TO '{name}'; SHOW application_name"))
        self.note("set", *rd.until_ready())
        # RESET and SHOW in one query would show the server's default
        # (docs/protocol-postgres.md: RESET inside a transaction block).
        s.sendall(query("RESET application_name"))
        self.note("reset", *rd.until_ready())
        s.sendall(query("SHOW application_name"))
        self.note("show", *rd.until_ready())
        s.sendall(query("SELECT set_config('search_path', 'pg_catalog, public', false)"))
        self.note("set_config", *rd.until_ready())
        s.sendall(query("SHOW search_path"))
        self.note("search_path", *rd.until_ready())
        s.sendall(query("RESET search_path; SHOW search_path"))
        self.note("reset search_path", *rd.until_ready())

    def side(self):
        return self.t.connect(params=(("application_name", f"c{self.i}side"),))

    def abandon(self, s, rd):
        side, srd = self.side()
        side.sendall(query("SELECT g, repeat('x', 100) FROM generate_series(1, 200000) g"))
        self.out.append(("abandon", srd.one()[0]))
        side.close()

    def abrupt_transaction(self, s, rd):
        side, srd = self.side()
        key = self.ids(1)[0]
        side.sendall(query(f"BEGIN; INSERT INTO {self.t.table} VALUES ({key}, 'gone')"))
        self.note("abrupt", *srd.until_ready())
        side.shutdown(socket.SHUT_RDWR)
        side.close()

    def no_sync(self, s, rd):
        side, srd = self.side()
        key = self.ids(1)[0]
        side.sendall(self.insert(key) + FLUSH)
        self.note("no sync", srd.until("C"))
        side.sendall(TERMINATE)
        side.close()


class StressTest(DifferentialCase):
    pool_max = 3
    session_pool_max = 2 * CLIENTS + 2

    @classmethod
    def more_databases(cls):
        return database_entry(cls.info, "pgtxn_nopipe", "transaction", cls.pool_max,
                              "pipeline: false")

    def targets(self, table):
        return super().targets(table) + [
            Target(self, "transaction, no pipelining", self.wp.port, "alice", "wonderland",
                   "pgtxn_nopipe", f"{table}_n")]

    def stress(self, seed):
        def scenario(t):
            clients = [Client(t, i, seed) for i in range(CLIENTS)]

            def work(c):
                try:
                    c.run(OPS)
                except Exception as e:  # noqa: BLE001 - the client's observation
                    c.out.append(("raised", type(e).__name__, str(e)[:200]))
            threads = [threading.Thread(target=work, args=(c,)) for c in clients]
            for th in threads:
                th.start()
            for th in threads:
                th.join(300)
            time.sleep(0.5)  # abrupt endings reach the server
            counts = psql(self.direct(), "-At", "-c",
                          f"SELECT id / {SPAN}, count(*) FROM {t.table} GROUP BY 1 ORDER BY 1")
            rows = dict(tuple(int(x) for x in line.split("|"))
                        for line in counts.stdout.split())
            return [(c.i, c.out, rows.get(c.i, 0)) for c in clients]
        scenario.__name__ = f"stress_seed_{seed}"
        self.differ(scenario)

    def test_many_clients(self):
        for seed in SEEDS:
            with self.subTest(seed=seed):
                self.stress(seed)


if __name__ == "__main__":
    import unittest
    unittest.main()
