"""PostgreSQL frontend messages built by hand and a reader of the backend's
answers, for tests that speak the protocol byte by byte (raw sockets, no client
library): the relay suite and the conformance suites."""

import struct


def msg(t, body=b""):
    return t + struct.pack("!I", len(body) + 4) + body


def parse(name, sql, oids=()):
    return msg(b"P", name.encode() + b"\0" + sql.encode() + b"\0" +
               struct.pack("!H", len(oids)) + b"".join(struct.pack("!I", o) for o in oids))


def bind(stmt, *values, portal=""):
    """Text parameters (None: NULL), text results."""
    body = portal.encode() + b"\0" + stmt.encode() + b"\0" + struct.pack("!H", 0)
    body += struct.pack("!H", len(values))
    for v in values:
        body += struct.pack("!i", -1) if v is None else struct.pack("!i", len(v)) + v.encode()
    return msg(b"B", body + struct.pack("!H", 0))


def describe(kind, name=""):
    return msg(b"D", kind + name.encode() + b"\0")


def execute(portal="", max_rows=0):
    return msg(b"E", portal.encode() + b"\0" + struct.pack("!i", max_rows))


def close_statement(name):
    return msg(b"C", b"S" + name.encode() + b"\0")


def close_portal(name):
    return msg(b"C", b"P" + name.encode() + b"\0")


SYNC = msg(b"S")
FLUSH = msg(b"H")
TERMINATE = msg(b"X")


def query(sql):
    return msg(b"Q", sql.encode() + b"\0")


def run(sql, *values):
    """Parse, Bind, Execute of one unnamed statement (no Sync)."""
    return parse("", sql) + bind("", *values) + execute()


class Reader:
    def __init__(self, sock):
        self.s = sock
        self.buf = b""

    def one(self):
        while len(self.buf) < 5 or len(self.buf) < 1 + struct.unpack("!I", self.buf[1:5])[0]:
            chunk = self.s.recv(65536)
            if not chunk:
                raise AssertionError(f"closed; buffered {self.buf[:200]!r}")
            self.buf += chunk
        n = struct.unpack("!I", self.buf[1:5])[0]
        t, body, self.buf = self.buf[:1].decode(), self.buf[5:1 + n], self.buf[1 + n:]
        return t, body

    def until_ready(self):
        """Messages up to ReadyForQuery: [(type, body)], and the status."""
        out = []
        while True:
            t, body = self.one()
            if t == "Z":
                return out, body.decode()
            out.append((t, body))

    def until(self, types):
        """Messages up to and including the first whose type is in `types`."""
        out = []
        while True:
            t, body = self.one()
            out.append((t, body))
            if t in types:
                return out


def fields(body):
    """An ErrorResponse's or NoticeResponse's fields: {code letter: text}."""
    out = {}
    for f in body.split(b"\0"):
        if f:
            out[f[:1].decode()] = f[1:].decode(errors="replace")
    return out


def sqlstate(body):
    return fields(body).get("C")


def summary(messages, status=None):
    """What a client observes of `messages`, comparable between servers:
    message types with their meaning (tags, values, SQLSTATEs, severities),
    without what legitimately differs (ParameterStatus, process ids)."""
    out = []
    for t, body in messages:
        if t == "S":
            continue
        if t in ("E", "N"):
            f = fields(body)
            out.append((t, f.get("V", f.get("S")), f.get("C")))
        elif t == "C":
            out.append((t, body.rstrip(b"\0").decode()))
        elif t == "D":
            n = struct.unpack("!h", body[:2])[0]
            pos, values = 2, []
            for _ in range(n):
                ln = struct.unpack("!i", body[pos:pos + 4])[0]
                pos += 4
                values.append(None if ln < 0 else body[pos:pos + ln].decode(errors="replace"))
                pos += max(ln, 0)
            out.append((t, tuple(values)))
        elif t == "T":
            n = struct.unpack("!h", body[:2])[0]
            pos, cols = 2, []
            for _ in range(n):
                end = body.index(b"\0", pos)
                name = body[pos:end].decode()
                oid = struct.unpack("!I", body[end + 7:end + 11])[0]
                cols.append((name, oid))
                pos = end + 19
            out.append((t, tuple(cols)))
        else:
            out.append((t,))
    if status is not None:
        out.append(("Z", status))
    return out
