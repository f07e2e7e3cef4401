"""Everything before authentication completes (docs/security.md, "Before
authentication"): raw sockets against a real wirepool, measuring its RSS
(/proc/PID/status) and descriptors (/proc/PID/fd).

Covers:
- TDS: a cleartext PRELOGIN header with a length below 8 is refused at once
  (it used to spin, buffering all it was sent); TDS 8.0 PRELOGIN messages are
  bounded to 16 KiB before login (they used to be buffered up to
  max_message_size): RSS stays flat under both.
"""

import socket
import ssl
import struct
import unittest

from harness import WirepoolTestCase


def connect(port, source=None, timeout=10):
    return socket.create_connection(("127.0.0.1", port), timeout=timeout,
                                    source_address=(source, 0) if source else None)


def recv_all(s, timeout=5.0):
    """What the server sends until it closes (or `timeout` passes)."""
    s.settimeout(timeout)
    data = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return data
            data += chunk
    except (socket.timeout, ConnectionResetError, ssl.SSLError, OSError):
        return data


def tds_packet(ptype, payload, status=1, length=None):
    return struct.pack(">BBHHBB", ptype, status, length or len(payload) + 8, 0, 1, 0) + payload


def tds_strict(port, ca, source=None):
    """TLS 1.3 with ALPN tds/8.0; nothing sent yet."""
    ctx = ssl.create_default_context(cafile=ca)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    ctx.set_alpn_protocols(["tds/8.0"])
    return ctx.wrap_socket(connect(port, source), server_hostname="localhost")


class TdsPreloginMemoryTest(WirepoolTestCase):
    tls = "{ generate: true }"
    tds = True
    server = "login_timeout: 10s"

    def test_cleartext_prelogin_length_below_8_is_refused(self):
        before = self.wp.rss_kib()
        sent = 0
        with connect(self.wp.tds_port) as s:
            s.sendall(bytes([0x12, 0x01, 0x00, 0x04, 0, 0, 1, 0]))
            chunk = b"\0" * (1 << 20)
            try:
                for _ in range(64):
                    s.sendall(chunk)
                    sent += len(chunk)
            except OSError:
                pass
            recv_all(s, timeout=5)
        growth = self.wp.rss_kib() - before
        print(f"\n  cleartext PRELOGIN, length 4: {sent >> 20} MiB sent, RSS +{growth} KiB")
        self.assertLess(growth, 16 * 1024)
        self.assertIn("malformed PRELOGIN packet header", self.wp.log())

    def test_strict_prelogin_is_bounded_before_login(self):
        before = self.wp.rss_kib()
        socks = []
        packet = tds_packet(0x12, b"\0" * (32767 - 8), status=0)
        for _ in range(8):
            s = tds_strict(self.wp.tds_port, self.wp.certificate())
            socks.append(s)
            try:
                for _ in range(256):  # 8 MiB each, never EOM
                    s.sendall(packet)
            except OSError:
                pass
        time.sleep(0.5)
        growth = self.wp.rss_kib() - before
        fds = self.wp.open_fds()
        for s in socks:
            s.close()
        print(f"\n  8 TDS 8.0 PRELOGIN floods: RSS +{growth} KiB, {fds} descriptors")
        self.assertLess(growth, 16 * 1024)
        self.assertIn("exceeds the limit of 16384 bytes", self.wp.log())


if __name__ == "__main__":
    unittest.main()
