"""What a session shows of itself is what PostgreSQL shows: checked
differentially (differential.py) against PostgreSQL directly, through
wirepool in session mode and in transaction mode.

Covers: application_name without one in the startup packet is '' (not a
name of wirepool's); an error keeps every field the server sent (position, schema, table,
column, constraint, data type, context, source file, line and routine) and a
notice too; a SET inside a committed transaction follows its client, does
not keep a backend pinned while the client idles (two other clients open
transactions on a pool of two), and does not reach the next client after the
first leaves, also when the SET came by the extended protocol and the client
dropped mid-transaction; SET SESSION CHARACTERISTICS (PgJDBC's
setTransactionIsolation) follows its client and reaches no other.
"""

import socket
import unittest

from differential import DifferentialCase
from wire import SYNC, bind, execute, fields, parse, query, summary


def all_fields(messages, table):
    """Every field of every ErrorResponse and NoticeResponse, by code (each
    target's table name made the same)."""
    out = []
    for t, body in messages:
        if t in ("E", "N"):
            out.append((t, sorted((k, v.replace(table, "T")) for k, v in fields(body).items())))
    return out


class SessionTest(DifferentialCase):

    def test_application_name_defaults_to_empty(self):
        def scenario(t):
            s, rd = t.connect()
            s.sendall(query("SHOW application_name"))
            return [summary(*rd.until_ready())]
        self.assertIn(("D", ("",)), self.differ(scenario)[0])

    def test_errors_and_notices_keep_every_field(self):
        def scenario(t):
            s, rd = t.connect()
            out = []
            for q in (f"INSERT INTO {t.table} VALUES (1, 'a')",
                      f"INSERT INTO {t.table} VALUES (1, 'b')",          # unique: constraint
                      f"INSERT INTO {t.table} VALUES (NULL, 'c')",       # not null: column
                      f"SELECT nosuchcolumn FROM {t.table}",             # position
                      "DO $$BEGIN RAISE NOTICE 'hello' USING DETAIL = 'd', HINT = 'h', "
                      "SCHEMA = 'sc', TABLE = 'tb', COLUMN = 'co', CONSTRAINT = 'cn', "
                      "DATATYPE = 'dt'; END$$",
                      "DO $$BEGIN PERFORM 1/0; END$$"):                   # context
                s.sendall(query(q))
                out.append(all_fields(rd.until_ready()[0], t.table))
            s.sendall(parse("", "SELECT 1/0") + bind("") + execute() + SYNC)
            out.append(all_fields(rd.until_ready()[0], t.table))
            return out
        seen = self.differ(scenario)
        codes = {c for _, fs in seen[1] for c, _ in fs}
        self.assertTrue({"s", "t", "n", "F", "L", "R"} <= codes, codes)

    def test_a_set_in_a_transaction_stays_with_its_client(self):
        def show(t):
            s, rd = t.connect()
            s.sendall(query("SHOW search_path"))
            got = summary(*rd.until_ready())
            s.close()
            return got

        def scenario(t):
            out = []
            a, ar = t.connect()
            for q in ("BEGIN", "SET search_path TO evil, public", "COMMIT",
                      "SELECT current_setting('search_path')"):
                a.sendall(query(q))
                out.append(summary(*ar.until_ready()))
            # A idles; as many others as the pool has backends hold transactions
            # (in session mode A keeps its own, as it should): all are served.
            held, served = [], True
            for _ in range(self.pool_max - (t.name == "session")):
                s, rd = t.connect()
                s.settimeout(5)
                try:
                    s.sendall(query("BEGIN; SELECT 1"))
                    rd.until_ready()
                except socket.timeout:
                    served = False  # the idle client kept a backend
                held.append(s)
            out.append(("others served", served))
            for s in held:
                s.close()
            a.close()
            out.append(show(t))
            # A SET by the extended protocol, then the client drops mid-transaction.
            b, br = t.connect()
            b.sendall(query("BEGIN"))
            br.until_ready()
            b.sendall(parse("", "SET search_path TO evil2, public") + bind("") + execute() + SYNC)
            out.append(summary(*br.until_ready()))
            b.close()
            out.append(show(t))
            return out
        self.differ(scenario, settle=0.2)

    def test_session_characteristics_stay_with_their_client(self):
        def scenario(t):
            out = []
            a, ar = t.connect()
            a.sendall(query("SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL "
                            "SERIALIZABLE, READ WRITE, DEFERRABLE"))
            out.append(summary(*ar.until_ready()))
            # Others hold every other backend: one of them gets A's last one.
            held, seen = [], set()
            for _ in range(self.pool_max - (t.name == "session")):
                s, rd = t.connect()
                s.sendall(query("BEGIN; SHOW default_transaction_isolation; "
                                "SHOW default_transaction_deferrable"))
                seen.add(repr(summary(*rd.until_ready())))
                held.append(s)
            out.append(sorted(seen))  # what the others saw, however many there are
            for s in held:
                s.close()
            for q in ("SHOW default_transaction_isolation", "BEGIN; SHOW transaction_isolation",
                      "COMMIT", "SHOW default_transaction_deferrable"):
                a.sendall(query(q))
                out.append(summary(*ar.until_ready()))
            a.close()
            return out
        self.differ(scenario, settle=0.2)


if __name__ == "__main__":
    unittest.main()
