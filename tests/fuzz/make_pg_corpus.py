#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_pg_decoder: valid PostgreSQL v3 client streams.

Each seed is what a client sends: a startup packet, then frontend messages.
Run from the repository root:  python3 tests/fuzz/make_pg_corpus.py
The SCRAM seeds match the target's fixed verifier (password "pencil", salt
"fuzzsaltfuzzsalt", 1 iteration, server nonce "srvnonce") so the fuzzer starts
from exchanges that succeed.
"""

import base64
import hashlib
import hmac
import os
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "pg_decoder")


def i16(v):
    return struct.pack(">h", v)


def i32(v):
    return struct.pack(">i", v)


def cstr(s):
    return (s.encode() if isinstance(s, str) else s) + b"\0"


def msg(t, body=b""):
    return t.encode() + i32(len(body) + 4) + body


def startup(**params):
    body = i32(196608) + b"".join(cstr(k) + cstr(v) for k, v in params.items()) + b"\0"
    return i32(len(body) + 4) + body


def bind(portal, stmt, formats, params, results):
    body = cstr(portal) + cstr(stmt) + i16(len(formats)) + b"".join(i16(f) for f in formats)
    body += i16(len(params))
    for p in params:
        body += i32(-1) if p is None else i32(len(p)) + p
    body += i16(len(results)) + b"".join(i16(f) for f in results)
    return msg("B", body)


def sasl_initial(mechanism, data):
    return msg("p", cstr(mechanism) + i32(len(data)) + data)


def scram_final(gs2, cb_data, client_nonce):
    salt, iterations, password = b"fuzzsaltfuzzsalt", 1, b"pencil"
    bare = "n=,r=" + client_nonce
    nonce = client_nonce + "srvnonce"
    server_first = "r=%s,s=%s,i=%d" % (nonce, base64.b64encode(salt).decode(), iterations)
    without_proof = "c=%s,r=%s" % (base64.b64encode(gs2 + cb_data).decode(), nonce)
    auth = ("%s,%s,%s" % (bare, server_first, without_proof)).encode()
    salted = hashlib.pbkdf2_hmac("sha256", password, salt, iterations)
    client_key = hmac.new(salted, b"Client Key", hashlib.sha256).digest()
    stored = hashlib.sha256(client_key).digest()
    signature = hmac.new(stored, auth, hashlib.sha256).digest()
    proof = bytes(a ^ b for a, b in zip(client_key, signature))
    first = gs2 + bare.encode()
    final = (without_proof + ",p=" + base64.b64encode(proof).decode()).encode()
    return first, final


# One text value per type the target tries, in its kParamTypes order (statement "").
TEXT_PARAMS = [b"abc", b"t", b"12", b"-5", b"123456789012", b"1.5", b"1e100", b"-0.000100",
               "h\u00e9llo".encode(), b"\\x0102", b"2024-01-02", b"2024-01-02 03:04:05.5",
               b"2024-01-02 03:04:05+02", b"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", b"{}", b"42"]
BINARY_PARAMS = [b"\x00\x01", b"\x01", i16(-2), i32(7), struct.pack(">q", -9), struct.pack(">f", 1.5),
                 struct.pack(">d", 0.1), i16(1) + i16(-1) + i16(0x4000) + i16(6) + i16(1), b"text",
                 b"\x00\xff", i32(-1), struct.pack(">q", 123456), struct.pack(">q", -1),
                 bytes(range(16)), b"\x01[1]", i32(26)]


def seeds():
    hello = startup(user="alice", database="demo", application_name="psql")
    yield "simple_query", hello + msg("Q", cstr("SELECT 1")) + msg("X")
    yield "ssl_then_query", i32(8) + i32(80877103) + msg("Q", cstr("SELECT now()"))
    yield "cancel", i32(16) + i32(80877102) + i32(4242) + i32(77)
    yield "gssenc", i32(8) + i32(80877104)
    yield "extended_text", (hello
                            + msg("P", cstr("") + cstr("SELECT $1") + i16(1) + i32(23))
                            + bind("", "", [], TEXT_PARAMS, [0])
                            + msg("D", b"P" + cstr("")) + msg("E", cstr("") + i32(0))
                            + msg("S"))
    yield "extended_binary", (hello
                              + bind("p1", "", [1], BINARY_PARAMS, [1, 0])
                              + msg("E", cstr("p1") + i32(10)) + msg("H")
                              + msg("C", b"P" + cstr("p1")) + msg("C", b"S" + cstr("s1"))
                              + msg("S"))
    yield "bind_nulls_mixed", (hello + bind("", "s", [0, 1, 0], [None, i32(5), b"x"], [])
                               + msg("S"))
    yield "copy", (hello + msg("Q", cstr("COPY t FROM STDIN")) + msg("d", b"1\t2\n")
                   + msg("d", b"3\t\\N\n") + msg("c") + msg("f", cstr("aborted")))
    yield "function_call", hello + msg("F", i32(1598) + i16(1) + i16(0) + i16(1) + i32(1) + b"x" + i16(0))
    yield "numeric_text", hello + msg("Q", cstr("99999999999999999999.99"))
    yield "password", startup(user="bob") + msg("p", cstr("secret"))
    first, final = scram_final(b"n,,", b"", "cnonce1")
    yield "scram", hello + sasl_initial("SCRAM-SHA-256", first) + msg("p", final)
    first, final = scram_final(b"p=tls-server-end-point,,", b"cb-data", "cnonce2")
    yield "scram_plus", hello + sasl_initial("SCRAM-SHA-256-PLUS", first) + msg("p", final)
    first, final = scram_final(b"y,,", b"", "cnonce3")
    yield "scram_y", hello + sasl_initial("SCRAM-SHA-256", first) + msg("p", final)


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, data in seeds():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
        print("%-18s %5d bytes" % (name, len(data)))


if __name__ == "__main__":
    main()
