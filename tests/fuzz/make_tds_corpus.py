#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_tds_decoder from the captured tedious messages.

For each capture in tests/unit/protocol/tds/captures/ it writes the raw client
stream (packets with headers) and the assembled payload; then a server token
stream (LOGINACK, ENVCHANGE, INFO, COLMETADATA with several types, ROW, NBCROW,
DONE) and a few TYPE_INFO + value seeds. Run from the repository root:
    python3 tests/fuzz/make_tds_corpus.py
"""

import glob
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
CAPTURES = os.path.join(HERE, "..", "unit", "protocol", "tds", "captures")
OUT = os.path.join(HERE, "corpus", "tds_decoder")


def ucs2(s):
    return s.encode("utf-16le")


def b_varchar(s):
    return bytes([len(s)]) + ucs2(s)


def len_token(tok, body):
    return bytes([tok]) + struct.pack("<H", len(body)) + body


def token_stream():
    out = b""
    out += len_token(0xAD, b"\x01\x74\x00\x00\x04" + b_varchar("wirepool") + b"\x00\x01\x00\x00")
    out += len_token(0xE3, b"\x01" + b_varchar("demo") + b_varchar("master"))
    out += len_token(0xE3, b"\x07\x05\x09\x04\xd0\x00\x34\x00")
    msg = "hello"
    out += len_token(0xAB, struct.pack("<iBB", 5701, 1, 10) + struct.pack("<H", len(msg)) +
                     ucs2(msg) + b_varchar("srv") + b_varchar("") + struct.pack("<i", 1))
    cols = [
        (b"\x26\x04", "i"),
        (b"\xe7\x40\x00\x09\x04\xd0\x00\x34", "s"),
        (b"\x6a\x09\x0c\x03", "d"),
        (b"\x2a\x07", "t"),
        (b"\xa5\xff\xff", "b"),
        (b"\x68\x01", "bit"),
        (b"\x24\x10", "g"),
        (b"\x6d\x08", "f"),
        (b"\x28", "date"),
        (b"\x2b\x07", "dto"),
    ]
    meta = b"\x81" + struct.pack("<H", len(cols))
    for ti, name in cols:
        meta += struct.pack("<IH", 0, 1) + ti + b_varchar(name)
    out += meta
    row = b"\xd1"
    row += b"\x04" + struct.pack("<i", -5)
    row += struct.pack("<H", 4) + ucs2("ab")
    row += b"\x09\x00" + (12345678).to_bytes(8, "little")
    row += b"\x08" + (123456789).to_bytes(5, "little") + (738000).to_bytes(3, "little")
    row += struct.pack("<Q", 3) + struct.pack("<I", 3) + b"xyz" + struct.pack("<I", 0)
    row += b"\x01\x01"
    row += b"\x10" + bytes(range(16))
    row += b"\x08" + struct.pack("<d", 2.5)
    row += b"\x03" + (738000).to_bytes(3, "little")
    row += b"\x0a" + (1).to_bytes(5, "little") + (738000).to_bytes(3, "little") + struct.pack("<h", 60)
    out += row
    nbc = b"\xd2" + bytes([0xFE, 0x03]) + b"\x04" + struct.pack("<i", 7)
    out += nbc
    out += b"\xfd" + struct.pack("<HHQ", 0x10, 0xC1, 2)
    return out


def main():
    os.makedirs(OUT, exist_ok=True)
    for path in sorted(glob.glob(os.path.join(CAPTURES, "*.hex"))):
        name = os.path.splitext(os.path.basename(path))[0]
        packets = [bytes.fromhex(line.strip()) for line in open(path) if line.strip()]
        with open(os.path.join(OUT, name + "_stream"), "wb") as f:
            f.write(b"".join(packets))
        with open(os.path.join(OUT, name + "_payload"), "wb") as f:
            f.write(b"".join(p[8:] for p in packets))
    with open(os.path.join(OUT, "tokens"), "wb") as f:
        f.write(token_stream())
    seeds = {
        "value_decimal": b"\x6a\x11\x26\x05\x11\x01" + (10**30).to_bytes(16, "little"),
        "value_nvarchar_plp": b"\xe7\xff\xff\x09\x04\xd0\x00\x34" + struct.pack("<Q", 4) +
                              struct.pack("<I", 4) + ucs2("hi") + struct.pack("<I", 0),
        "value_time": b"\x29\x03\x04" + (1234567).to_bytes(4, "little"),
        "value_money": b"\x6e\x08\x08" + struct.pack("<iI", -1, 5),
    }
    for name, data in seeds.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
