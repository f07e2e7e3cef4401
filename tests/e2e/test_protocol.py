"""The PostgreSQL protocol on raw sockets, message by message, against
wirepool in front of SQLite.

Covers: NegotiateProtocolVersion for protocol 3.2 and `_pq_.` options; the
fake SCRAM exchange of an unknown user is the same on every attempt (same salt
and iteration count); Execute with a row limit answers PortalSuspended and the
next Execute continues where it stopped; Describe of a statement answers
ParameterDescription and RowDescription; binary result formats for int8,
float8, bool, bytea and timestamptz; binary parameters; after an error every
message up to Sync is skipped and exactly one ErrorResponse is sent; Flush
sends what is pending without Sync; duplicate statement names (42P05),
unknown statements (26000) and portals (34000); Close of a statement and a
portal; several statements in one Parse are refused (42601); CancelRequest
with a wrong secret cancels nothing; a cancel reaches only its own client.
"""

import base64
import socket
import struct
import threading
import time
import unittest

import psycopg2
import psycopg2.errors

from harness import WirepoolTestCase, psql, raw_login, startup_packet


def msg(t, body=b""):
    return t + struct.pack("!I", len(body) + 4) + body


def cstr(s):
    return s.encode() + b"\0"


def parse(name, sql, oids=()):
    return msg(b"P", cstr(name) + cstr(sql) + struct.pack("!h", len(oids)) +
               b"".join(struct.pack("!I", o) for o in oids))


def bind(portal, stmt, params=(), param_formats=(), result_formats=()):
    body = cstr(portal) + cstr(stmt)
    body += struct.pack("!h", len(param_formats)) + b"".join(struct.pack("!h", f)
                                                             for f in param_formats)
    body += struct.pack("!h", len(params))
    for p in params:
        body += struct.pack("!i", -1) if p is None else struct.pack("!i", len(p)) + p
    body += struct.pack("!h", len(result_formats)) + b"".join(struct.pack("!h", f)
                                                              for f in result_formats)
    return msg(b"B", body)


def describe(kind, name):
    return msg(b"D", kind + cstr(name))


def execute(portal, max_rows=0):
    return msg(b"E", cstr(portal) + struct.pack("!i", max_rows))


def close(kind, name):
    return msg(b"C", kind + cstr(name))


SYNC = msg(b"S")
FLUSH = msg(b"H")


class Conn:
    def __init__(self, sock):
        self.s = sock
        self.buf = b""

    def send(self, *messages):
        self.s.sendall(b"".join(messages))

    def read(self):
        while len(self.buf) < 5 or len(self.buf) < 1 + struct.unpack("!I", self.buf[1:5])[0]:
            chunk = self.s.recv(65536)
            if not chunk:
                raise AssertionError(f"connection closed; pending {self.buf!r}")
            self.buf += chunk
        n = struct.unpack("!I", self.buf[1:5])[0]
        t, body, self.buf = self.buf[:1], self.buf[5:1 + n], self.buf[1 + n:]
        return t, body

    def until_ready(self):
        out = []
        while True:
            t, body = self.read()
            out.append((t, body))
            if t == b"Z":
                return out


def types(messages):
    return b"".join(t for t, _ in messages)


def data_rows(messages):
    rows = []
    for t, body in messages:
        if t != b"D":
            continue
        (n,) = struct.unpack("!h", body[:2])
        i, row = 2, []
        for _ in range(n):
            (ln,) = struct.unpack("!i", body[i:i + 4])
            i += 4
            if ln < 0:
                row.append(None)
            else:
                row.append(body[i:i + ln])
                i += ln
        rows.append(row)
    return rows


def sqlstates(messages):
    out = []
    for t, body in messages:
        if t == b"E":
            for f in body.split(b"\0"):
                if f[:1] == b"C":
                    out.append(f[1:].decode())
    return out


class ProtocolTest(WirepoolTestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        psql(cls.wp.dsn(), input=(
            "CREATE TABLE nums (n INTEGER PRIMARY KEY, f DOUBLE PRECISION, b BOOLEAN,"
            " x BYTEA, t TIMESTAMPTZ);\n"
            "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 10)\n"
            "INSERT INTO nums SELECT i, i / 4.0, i % 2, x'00ff', '2024-01-02 03:04:05+00'"
            " FROM c;\n"))

    def conn(self):
        return Conn(raw_login(self.wp.port))

    def test_newer_minor_version_is_negotiated(self):
        s = socket.create_connection(("127.0.0.1", self.wp.port), timeout=10)
        body = struct.pack("!I", (3 << 16) | 2) + cstr("user") + cstr("alice") + \
            cstr("database") + cstr("app") + cstr("_pq_.fancy") + cstr("1") + b"\0"
        s.sendall(struct.pack("!I", len(body) + 4) + body)
        c = Conn(s)
        t, first = c.read()
        self.assertEqual(t, b"v")
        newest, count = struct.unpack("!Ii", first[:8])
        self.assertEqual((newest, count), (0, 1))
        self.assertEqual(first[8:], b"_pq_.fancy\0")
        t, auth = c.read()
        self.assertEqual((t, struct.unpack("!I", auth[:4])[0]), (b"R", 10))
        s.close()

    def scram_first(self, user):
        s = socket.create_connection(("127.0.0.1", self.wp.port), timeout=10)
        s.sendall(startup_packet(user=user))
        c = Conn(s)
        c.read()
        first = "n,,n=,r=" + base64.b64encode(b"0123456789ab").decode()
        m = cstr("SCRAM-SHA-256") + struct.pack("!i", len(first)) + first.encode()
        s.sendall(msg(b"p", m))
        t, body = c.read()
        s.close()
        attrs = dict(kv.split("=", 1) for kv in body[4:].decode().split(","))
        return attrs["s"], attrs["i"]

    def test_unknown_user_exchange_is_stable(self):
        a = self.scram_first("mallory")
        b = self.scram_first("mallory")
        self.assertEqual(a, b)
        self.assertEqual(a[1], "4096")
        self.assertNotEqual(self.scram_first("trudy")[0], a[0])

    def test_row_limit_and_portal_suspended(self):
        c = self.conn()
        c.send(parse("", "SELECT n FROM nums ORDER BY n"), bind("", ""), execute("", 3), FLUSH)
        got = [c.read() for _ in range(6)]  # ParseComplete, BindComplete, 3 rows, Suspended
        self.assertEqual(types(got), b"12DDDs")
        self.assertEqual(data_rows(got), [[b"1"], [b"2"], [b"3"]])
        c.send(execute("", 4), execute("", 0), SYNC)
        rest = c.until_ready()
        self.assertEqual(types(rest), b"DDDDsDDDCZ")
        self.assertEqual([r[0] for r in data_rows(rest)], [str(i).encode() for i in range(4, 11)])
        self.assertEqual(rest[-2][1], b"SELECT 3\0")

    def test_describe_statement(self):
        c = self.conn()
        c.send(parse("s1", "SELECT n, f FROM nums WHERE n = $1"), describe(b"S", "s1"), SYNC)
        got = c.until_ready()
        self.assertEqual(types(got), b"1tTZ")
        (nparams,) = struct.unpack("!h", got[1][1][:2])
        self.assertEqual(nparams, 1)
        row_desc = got[2][1]
        self.assertEqual(struct.unpack("!h", row_desc[:2])[0], 2)
        self.assertIn(b"n\0", row_desc)

    def test_binary_results_and_parameters(self):
        c = self.conn()
        c.send(parse("", "SELECT n, f, b, x, t FROM nums WHERE n = $1", [20]),
               bind("", "", [struct.pack("!q", 4)], [1], [1]), describe(b"P", ""),
               execute(""), SYNC)
        got = c.until_ready()
        self.assertEqual(types(got), b"12TDCZ")
        (row,) = data_rows(got)
        self.assertEqual(struct.unpack("!q", row[0])[0], 4)
        self.assertEqual(struct.unpack("!d", row[1])[0], 1.0)
        self.assertEqual(row[2], b"\x00")
        self.assertEqual(row[3], b"\x00\xff")
        # 2024-01-02 03:04:05 UTC in microseconds since 2000-01-01
        self.assertEqual(struct.unpack("!q", row[4])[0], 757479845000000)

    def test_error_skips_until_sync(self):
        c = self.conn()
        c.send(parse("", "SELECT nope FROM nums"), bind("", ""), execute(""), SYNC,
               parse("", "SELECT 1"), bind("", ""), execute(""), SYNC)
        first = c.until_ready()
        self.assertEqual(types(first), b"EZ")
        self.assertEqual(sqlstates(first), ["42703"])
        second = c.until_ready()
        self.assertEqual(types(second), b"12DCZ")

    def test_named_statement_errors(self):
        c = self.conn()
        c.send(parse("a", "SELECT 1"), parse("a", "SELECT 2"), SYNC)
        self.assertEqual(sqlstates(c.until_ready()), ["42P05"])
        c.send(bind("", "nope"), SYNC)
        self.assertEqual(sqlstates(c.until_ready()), ["26000"])
        c.send(execute("nope"), SYNC)
        self.assertEqual(sqlstates(c.until_ready()), ["34000"])
        c.send(parse("two", "SELECT 1; SELECT 2"), SYNC)
        self.assertEqual(sqlstates(c.until_ready()), ["42601"])

    def test_close_statement_and_portal(self):
        c = self.conn()
        c.send(parse("c1", "SELECT 5"), bind("p1", "c1"), close(b"P", "p1"), close(b"S", "c1"),
               SYNC)
        self.assertEqual(types(c.until_ready()), b"1233Z")
        c.send(bind("p1", "c1"), SYNC)
        self.assertEqual(sqlstates(c.until_ready()), ["26000"])

    def test_wrong_cancel_secret_cancels_nothing(self):
        s = socket.create_connection(("127.0.0.1", self.wp.port), timeout=10)
        s.sendall(struct.pack("!IIii", 16, 80877102, 12345, 678))
        self.assertEqual(s.recv(10), b"")
        s.close()
        self.assertIn("matched no session", self.wp.log())

    def test_cancel_reaches_only_its_own_client(self):
        long_query = ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c "
                      "WHERE x < 3000000) SELECT count(*) FROM c")
        victim = psycopg2.connect(self.wp.kv())
        bystander = psycopg2.connect(self.wp.kv())
        victim.autocommit = bystander.autocommit = True
        results = {}

        def run(name, conn):
            try:
                cur = conn.cursor()
                cur.execute(long_query)
                results[name] = cur.fetchone()[0]
            except psycopg2.Error as e:
                results[name] = e.pgcode

        threads = [threading.Thread(target=run, args=("victim", victim)),
                   threading.Thread(target=run, args=("bystander", bystander))]
        for t in threads:
            t.start()
        time.sleep(0.3)
        victim.cancel()
        for t in threads:
            t.join(60)
        self.assertEqual(results["victim"], "57014")
        self.assertEqual(results["bystander"], 3000000)
        victim.close()
        bystander.close()


if __name__ == "__main__":
    unittest.main()
