#!/ usr / bin / python3
"""Captures what a real pytds (Debian python3-tds 1.8) client sends, for the TDS
codec's unit tests: a second client beside tedious, with its own encodings.

A plaintext TDS stub on a loopback port answers PRELOGIN with ENCRYPTION =
ENCRYPT_NOT_SUP (pytds without a CA file then logs in in the clear), LOGIN7
with LOGINACK + DONE, transaction manager requests with the begin / commit /
rollback ENVCHANGE, and every other request with DONE. Each message is written
as hex, one line per packet (header included), to OUTDIR/pytds_<n>_<what>.hex.
The client then runs a parameterised query (int, big int, str, Decimal,
datetime, date, bytes, bool, uuid, float, None) and commits.

Run with Debian's python (where pytds lives):
    /usr/bin/python3 capture_pytds.py OUTDIR
"""

import datetime
import decimal
import os
import socket
import struct
import sys
import threading
import uuid

import pytds

OUT = sys.argv[1] if len(sys.argv) > 1 else "."
PREFIX = "pytds"  # capture_freetds.py reuses serve() with its own prefix
NAMES = {1: "sqlbatch", 3: "rpc", 6: "attention", 14: "txmgr", 16: "login7", 18: "prelogin"}


def packet(payload):
    return struct.pack(">BBHHBB", 4, 1, len(payload) + 8, 0, 1, 0) + payload


def b_varchar(s):
    return bytes([len(s)]) + s.encode("utf-16le")


def done(status=0, count=0):
    return struct.pack("<BHHQ", 0xFD, status, 0, count)


def prelogin():
    opts = [(0, bytes([15, 0, 0x07, 0xD0, 0, 0])), (1, bytes([2])), (2, b"\0"), (3, b""), (4, b"\0")]
    off = len(opts) * 5 + 1
    table, data = b"", b""
    for token, d in opts:
        table += struct.pack(">BHH", token, off, len(d))
        data += d
        off += len(d)
    return table + b"\xff" + data


def loginack():
    body = b"\x01\x74\x00\x00\x04" + b_varchar("wirepool") + b"\x00\x01\x00\x00"
    return struct.pack("<BH", 0xAD, len(body)) + body


def envchange(kind, new, old):
    body = bytes([kind, len(new)]) + new + bytes([len(old)]) + old
    return struct.pack("<BH", 0xE3, len(body)) + body


def serve(listener):
    conn, _ = listener.accept()
    conn.settimeout(10)
    buf, packets, n = b"", [], 0
    desc = struct.pack("<Q", 1)
    while True:
        data = conn.recv(65536)
        if not data:
            break
        buf += data
        while len(buf) >= 8:
            length = struct.unpack(">H", buf[2:4])[0]
            if len(buf) < length:
                break
            p, buf = buf[:length], buf[length:]
            packets.append(p)
            if not p[1] & 1:
                continue
            kind = packets[0][0]
            name = "%s_%02d_%s.hex" % (PREFIX, n, NAMES.get(kind, kind))
            with open(os.path.join(OUT, name), "w") as f:
                f.write("".join(x.hex() + "\n" for x in packets))
            n += 1
            payload = b"".join(x[8:] for x in packets)
            packets = []
            if kind == 18:
                conn.sendall(packet(prelogin()))
            elif kind == 16:
                conn.sendall(packet(loginack() + done()))
            elif kind == 14:
                req = struct.unpack("<H", payload[struct.unpack("<I", payload[:4])[0]:][:2])[0]
                if req == 5:
                    ev = envchange(8, desc, b"")
                else:
                    ev = envchange(9 if req == 7 else 10, b"", desc)
                conn.sendall(packet(ev + done()))
            else:
                conn.sendall(packet(done(0x10, 1)))
    conn.close()


def main():
    os.makedirs(OUT, exist_ok=True)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    t = threading.Thread(target=serve, args=(listener,), daemon=True)
    t.start()
    with pytds.connect("127.0.0.1", database="demo", user="demo", password="Pässwörd!1", port=port,
                       autocommit=False, login_timeout=5, timeout=5, appname="capture") as conn:
        with conn.cursor() as cur:
            cur.execute(
                "SELECT %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s",
                (-123456, 2**40, "straße 😀", decimal.Decimal("-12345.678"),
                 datetime.datetime(2024, 2, 29, 13, 14, 15, 678901), datetime.date(2024, 2, 29),
                 pytds.Binary(b"\xde\xad\xbe\xef\x00"), True, uuid.UUID("6F9619FF-8B86-D011-B42D-00C04FC964FF"),
                 3.5e-7, None))
        conn.commit()
    t.join(5)


if __name__ == "__main__":
    main()
