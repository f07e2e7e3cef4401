"""psycopg 3 (Debian python3-psycopg 3.1) sees PostgreSQL through wirepool:
checked differentially (differential.py) against PostgreSQL directly, through
wirepool in session mode and in transaction mode.

Covers: pipeline mode with an error inside (the rows written before it in the
same pipeline are gone); 600 statements in one pipeline; binary parameters and
results for 24 types (int2/4/8, float4/8, numeric, bool, text, bytea, date,
time, timestamp, timestamptz, interval, uuid, json, jsonb, inet, int and text
arrays, NULLs); server-side named cursors in a transaction (50,000 rows
fetched in batches, a scrollable one moved back and forth, three open at
once); COPY in text and binary format, to and from the server; prepared
statements (prepare_threshold=0) used across transactions; every diagnostic field of an error (schema, table,
column, constraint, data type, position, context). Faults: the
backend terminated mid-pipeline (the rows before it are gone, the session
ends) and mid-COPY; the client gone mid-COPY and mid-pipeline (nothing
stays, the next client works). NOTIFY delivered to an idle LISTEN client.
SCRAM with a password that SASLprep changes (U+2168, U+00AD).

Run with /usr/bin/python3 (Debian's psycopg). A watchdog shuts the client's
socket after `DEADLINE` seconds, so a hang fails the check instead of stalling.
"""

import datetime
import decimal
import ipaddress
import select
import socket
import threading
import time
import unittest
import uuid

import psycopg
from psycopg.types.json import Json, Jsonb

from differential import DifferentialCase, known_difference

DEADLINE = 30


class watchdog:
    """Shuts down `conn`'s socket after `seconds` unless left first."""

    def __init__(self, conn, seconds=DEADLINE):
        self.sock = socket.socket(fileno=socket.dup(conn.fileno()))
        self.timer = threading.Timer(seconds, self._fire)

    def _fire(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def __enter__(self):
        self.timer.start()
        return self

    def __exit__(self, *exc):
        self.timer.cancel()
        self.sock.close()


def connect(t, **kw):
    return psycopg.connect(t.dsn(), **kw)


def error(e):
    return ("error", type(e).__name__, e.sqlstate)


def lost(e):
    """A lost session as a client sees it: 57P01 (terminated) or the 08 class
    (connection failure, which libpq reports without a SQLSTATE) count the same."""
    if e.sqlstate == "57P01" or e.sqlstate is None or e.sqlstate.startswith("08"):
        return ("connection lost", isinstance(e, psycopg.OperationalError))
    return error(e)


SASL_USER = "saslprep_user"
SASL_PASSWORD = "\u2168\u00adpw"  # SASLprep (RFC 4013) makes it "IXpw"


def vanish(t, c, ctx):
    """The client's socket shut down under psycopg in the middle of `ctx` (a
    COPY or a pipeline), which is then left: what the client sees, then what a
    new connection sees (it must work, with nothing of the old one committed)."""
    out = []
    socket.socket(fileno=socket.dup(c.fileno())).shutdown(socket.SHUT_RDWR)
    try:
        ctx.__exit__(None, None, None)
    except psycopg.Error as e:
        out.append(lost(e))
    c.close()
    time.sleep(0.3)
    with connect(t) as c2, watchdog(c2):
        out.append(c2.execute("SELECT 4").fetchone())
    return out


class Psycopg3Test(DifferentialCase):
    users = ("- { name: alice, password: wonderland }\n"
             f"- {{ name: {SASL_USER}, password: \"{SASL_PASSWORD}\" }}")

    def test_pipeline_error_rolls_back_the_rows_before_it(self):
        def scenario(t):
            out = []
            with connect(t, autocommit=True) as c, watchdog(c):
                try:
                    with c.pipeline():
                        c.execute(f"INSERT INTO {t.table} VALUES (1, 'a')")
                        c.execute(f"INSERT INTO {t.table} VALUES (2, 'b')")
                        c.execute(f"INSERT INTO {t.table} VALUES (1, 'dup')")
                        c.execute(f"INSERT INTO {t.table} VALUES (3, 'c')")
                except psycopg.Error as e:
                    out.append(error(e))
                # The connection goes on, and a pipeline that succeeds commits.
                with c.pipeline():
                    c.execute(f"INSERT INTO {t.table} VALUES (10, 'x')")
                    cur = c.execute(f"SELECT count(*) FROM {t.table}")
                out.append(cur.fetchall())
            return out
        self.assertEqual(self.differ(scenario)[-1], ("rows", 1))

    def test_six_hundred_statements_in_one_pipeline(self):
        def scenario(t):
            with connect(t, autocommit=True) as c, watchdog(c):
                curs = []
                with c.pipeline():
                    for i in range(300):
                        c.execute(f"INSERT INTO {t.table} VALUES (%s, %s)", (i, f"v{i}"))
                        curs.append(c.execute("SELECT %s::int * 2", (i,)))
                return [sum(cur.fetchone()[0] for cur in curs)]
        self.assertEqual(self.differ(scenario), [299 * 300, ("rows", 300)])

    def test_binary_parameters_and_results(self):
        values = [
            ("int2", 32767), ("int4", -2147483648), ("int8", 9223372036854775807),
            ("float4", 1.5), ("float8", -2.25e300), ("numeric", decimal.Decimal("-12345.678900")),
            ("bool", True), ("text", "h\u00e9llo \u2603"), ("bytea", bytes(range(256))),
            ("date", datetime.date(2024, 2, 29)), ("time", datetime.time(23, 59, 58, 123456)),
            ("timestamp", datetime.datetime(1999, 12, 31, 23, 59, 59, 999999)),
            ("timestamptz", datetime.datetime(2020, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)),
            ("interval", datetime.timedelta(days=3, seconds=7, microseconds=5)),
            ("uuid", uuid.UUID("12345678-1234-5678-1234-567812345678")),
            ("json", Json({"a": [1, 2]})), ("jsonb", Jsonb({"b": None})),
            ("inet", ipaddress.ip_address("192.0.2.1")),
            ("int4[]", [1, None, 3]), ("text[]", ["a", "b c", None]),
            ("int8", None), ("text", None), ("bytea", None), ("numeric", decimal.Decimal("NaN")),
        ]

        def plain(v):
            return v.obj if isinstance(v, (Json, Jsonb)) else v

        def scenario(t):
            sql = "SELECT " + ", ".join(f"%b::{ty}" for ty, _ in values)
            with connect(t, autocommit=True) as c, watchdog(c):
                cur = c.cursor(binary=True)
                row = cur.execute(sql, [v for _, v in values]).fetchone()
                types = [d.type_code for d in cur.description]
                formats = [cur.pgresult.fformat(i) for i in range(len(values))]
                same = [got == plain(v) or (ty == "numeric" and v is not None and v.is_nan()
                                            and got.is_nan())
                        for (ty, v), got in zip(values, row)]
                return [repr(row), types, formats, same]
        seen = self.differ(scenario)
        self.assertEqual(len(values), 24)
        self.assertEqual(set(seen[2]), {1})
        self.assertTrue(all(seen[3]), seen[3])

    def test_server_side_cursors(self):
        def scenario(t):
            out = []
            with connect(t) as c, watchdog(c):
                with c.transaction():
                    big = c.cursor("big")
                    big.itersize = 5000
                    big.execute("SELECT g, md5(g::text) FROM generate_series(1, 50000) g")
                    total, batches = 0, 0
                    while rows := big.fetchmany(5000):
                        total += sum(r[0] for r in rows)
                        batches += 1
                    out.append((total, batches))
                    big.close()
                    # Three at once, read in turns; one scrollable.
                    a = c.cursor("a")
                    b = c.cursor("b")
                    s = c.cursor("s", scrollable=True)
                    a.execute("SELECT g FROM generate_series(1, 100) g")
                    b.execute("SELECT g * 10 FROM generate_series(1, 100) g")
                    s.execute("SELECT g * 100 FROM generate_series(1, 100) g")
                    for _ in range(3):
                        out.append((a.fetchmany(7), b.fetchmany(3), s.fetchmany(5)))
                    s.scroll(-10)
                    out.append(s.fetchone())
                    s.scroll(50, mode="absolute")
                    out.append(s.fetchmany(2))
                    out.append(len(a.fetchall()) + len(b.fetchall()))
                out.append(c.execute("SELECT 1").fetchone())
            return out
        self.assertEqual(self.differ(scenario)[0], (50000 * 50001 // 2, 10))

    def test_copy_text_and_binary_both_ways(self):
        def scenario(t):
            out = []
            with connect(t, autocommit=True) as c, watchdog(c):
                cur = c.cursor()
                with cur.copy(f"COPY {t.table} (id, v) FROM STDIN") as cp:
                    for i in range(1000):
                        cp.write_row((i, f"t\t{i}\n"))
                with cur.copy(f"COPY {t.table} (id, v) FROM STDIN (FORMAT BINARY)") as cp:
                    cp.set_types(["int4", "text"])
                    for i in range(1000, 2000):
                        cp.write_row((i, None if i % 7 == 0 else f"b{i}"))
                with cur.copy(f"COPY (SELECT id, v FROM {t.table} ORDER BY id) TO STDOUT") as cp:
                    text = b"".join(bytes(d) for d in cp)
                out.append((len(text), hash(text)))
                with cur.copy(f"COPY (SELECT id, v FROM {t.table} ORDER BY id) TO STDOUT "
                              "(FORMAT BINARY)") as cp:
                    cp.set_types(["int4", "text"])
                    rows = list(cp.rows())
                out.append((len(rows), rows[0], rows[1500], rows[-1]))
                # A COPY that fails (a duplicate key) leaves nothing and the connection usable.
                try:
                    with cur.copy(f"COPY {t.table} (id, v) FROM STDIN") as cp:
                        cp.write_row((5000, "new"))
                        cp.write_row((1, "dup"))
                except psycopg.Error as e:
                    out.append(error(e))
                out.append(c.execute("SELECT 1").fetchone())
            return out
        self.assertEqual(self.differ(scenario)[-1], ("rows", 2000))

    def test_prepared_statements_across_transactions(self):
        def scenario(t):
            out = []
            with connect(t, prepare_threshold=0) as c, watchdog(c):
                for n in range(5):
                    with c.transaction():
                        c.execute(f"INSERT INTO {t.table} VALUES (%s, %s)", (n, f"p{n}"))
                        out.append(c.execute(f"SELECT count(*), max(id) FROM {t.table} "
                                             "WHERE id <= %s", (n,)).fetchone())
                    out.append(c.execute("SELECT %s::text || 'x'", (str(n),)).fetchone())
                try:
                    with c.transaction():
                        c.execute(f"INSERT INTO {t.table} VALUES (%s, %s)", (100, "r"))
                        c.execute(f"INSERT INTO {t.table} VALUES (%s, %s)", (0, "dup"))
                except psycopg.Error as e:
                    out.append(error(e))
                out.append(c.execute(f"SELECT count(*), max(id) FROM {t.table} WHERE id <= %s",
                                     (1000,)).fetchone())
            return out
        self.assertEqual(self.differ(scenario)[-1], ("rows", 5))

    def test_error_fields_reach_the_client(self):
        fields = ("sqlstate", "severity", "severity_nonlocalized", "message_primary",
                  "message_detail", "message_hint", "statement_position", "context",
                  "schema_name", "table_name", "column_name", "datatype_name",
                  "constraint_name", "source_function")

        def scenario(t):
            out = []
            with connect(t, autocommit=True) as c, watchdog(c):
                for q, p in ((f"INSERT INTO {t.table} VALUES (%s, 'a')", (1,)),
                             (f"INSERT INTO {t.table} VALUES (%s, 'b')", (1,)),
                             (f"INSERT INTO {t.table} VALUES (%s, 'c')", (None,)),
                             (f"SELECT nosuch FROM {t.table} WHERE id = %s", (1,)),
                             ("SELECT 1 / %s::int", (0,))):
                    try:
                        c.execute(q, p)
                    except psycopg.Error as e:
                        out.append([(f, str(getattr(e.diag, f)).replace(t.table, "T"))
                                    for f in fields])
            return out
        seen = self.differ(scenario)
        self.assertEqual(dict(seen[0])["constraint_name"], "T_pkey")
        self.assertEqual(dict(seen[1])["column_name"], "id")

    def test_backend_terminated_mid_pipeline(self):
        def scenario(t):
            out = []
            with connect(t, autocommit=True) as c, watchdog(c):
                try:
                    with c.pipeline():
                        c.execute(f"INSERT INTO {t.table} VALUES (1, 'a')")
                        c.execute("SELECT pg_terminate_backend(pg_backend_pid())")
                        c.execute(f"INSERT INTO {t.table} VALUES (2, 'b')")
                except psycopg.Error as e:
                    out.append(lost(e))
                # The session is gone: its next statement fails too.
                try:
                    out.append(c.execute("SELECT 1").fetchone())
                except psycopg.Error as e:
                    out.append(lost(e))
            with connect(t) as c, watchdog(c):
                out.append(c.execute("SELECT 2").fetchone())
            return out
        self.assertEqual(self.differ(scenario)[-1], ("rows", 0))

    def test_backend_terminated_mid_copy(self):
        def scenario(t):
            out = []
            with connect(t) as c, watchdog(c):
                pid = c.execute("SELECT pg_backend_pid()").fetchone()[0]
                try:
                    with c.cursor().copy(f"COPY {t.table} (id, v) FROM STDIN") as cp:
                        for i in range(100):
                            cp.write_row((i, "c"))
                        with psycopg.connect(self.direct(), autocommit=True) as k:
                            k.execute("SELECT pg_terminate_backend(%s)", (pid,))
                        for i in range(100, 200):
                            cp.write_row((i, "c"))
                except psycopg.Error as e:
                    out.append(lost(e))
            with connect(t) as c, watchdog(c):
                out.append(c.execute("SELECT 3").fetchone())
            return out
        self.assertEqual(self.differ(scenario)[-1], ("rows", 0))

    def test_client_gone_mid_copy(self):
        def scenario(t):
            out = []
            c = connect(t)
            cp_ctx = c.cursor().copy(f"COPY {t.table} (id, v) FROM STDIN")
            cp = cp_ctx.__enter__()
            for i in range(1000):
                cp.write_row((i, "g"))
            # Leaves without CopyDone.
            return out + vanish(t, c, cp_ctx)
        self.assertEqual(self.differ(scenario, settle=0.5)[-1], ("rows", 0))

    def test_client_gone_mid_pipeline(self):
        def scenario(t):
            out = []
            c = connect(t, autocommit=True)
            p = c.pipeline()
            p.__enter__()
            for i in range(50):
                c.execute(f"INSERT INTO {t.table} VALUES (%s, 'p')", (i,))
            c.pgconn.flush()
            # Leaves before any Sync.
            return out + vanish(t, c, p)
        self.assertEqual(self.differ(scenario, settle=0.5)[-1], ("rows", 0))

    @known_difference("transaction", "docs/protocol-postgres.md 'Limits of transaction "
                      "pooling': LISTEN is refused with 0A000 (as PgBouncer cannot keep it)")
    def test_notify_reaches_an_idle_listener(self):
        def scenario(t):
            out = []
            with connect(t, autocommit=True) as c, watchdog(c):
                try:
                    c.execute(f"LISTEN {t.table}")
                except psycopg.Error as e:
                    return [error(e)]
                with connect(t, autocommit=True) as n, watchdog(n):
                    n.execute(f"NOTIFY {t.table}, 'hello'")
                # The listener sends nothing: the notification must come on its own.
                got, end = [], time.monotonic() + 3
                while not got and time.monotonic() < end:
                    select.select([c.fileno()], [], [], max(0.0, end - time.monotonic()))
                    c.pgconn.consume_input()
                    while (x := c.pgconn.notifies()) is not None:
                        got.append(x.extra.decode())
                out.append(got)
            return out
        self.assertEqual(self.differ(scenario)[0], ["hello"])

    def test_scram_with_a_password_saslprep_changes(self):
        i = self.info
        su = f"host={i['socket_dir']} port={i['port']} user={i['superuser']} dbname={i['database']}"
        with psycopg.connect(su, autocommit=True) as c:
            c.execute(f"DROP ROLE IF EXISTS {SASL_USER}")
            c.execute(f"CREATE ROLE {SASL_USER} LOGIN PASSWORD '{SASL_PASSWORD}'")

        def drop():
            with psycopg.connect(su, autocommit=True) as c:
                c.execute(f"DROP ROLE IF EXISTS {SASL_USER}")
        self.addCleanup(drop)

        def scenario(t):
            user = SASL_USER
            kw = dict(host=t.host, port=t.port, dbname=t.database, user=user,
                      password=SASL_PASSWORD, sslmode="disable", connect_timeout=10)
            out = []
            try:
                with psycopg.connect(**kw) as c, watchdog(c):
                    out.append(c.execute("SELECT 1").fetchone())
            except psycopg.OperationalError as e:
                out.append(("refused", str(e).strip().splitlines()[-1][-80:]))
            return out
        self.assertEqual(self.differ(scenario)[0], (1,))


if __name__ == "__main__":
    unittest.main()
