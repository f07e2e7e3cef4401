"""Bad input on raw sockets: wirepool answers with an error and closes within
seconds, logs it, and keeps serving everyone else.

Covers: a 2 GiB length prefix in the startup packet (closed without a
word, as PostgreSQL does) and after login; a truncated startup packet; random
bytes; a length below 4 (startup: closed silently, as is a Terminate sent
before the startup packet; regular message: 08P01); an unsupported protocol
version (0A000, as PostgreSQL); an unknown message type; an oversized message (above
max_message_size) after login, rejected from its header alone; a client that
connects and says nothing (closed at login_timeout); a client that vanishes in
the middle of a large result; too many clients (53300); and a psql client
served normally after all of them.
"""

import os
import socket
import struct
import time
import unittest

import psycopg2

from harness import WirepoolTestCase, psql, raw_login, startup_packet


def read_until_close(sock, timeout=10.0):
    """Everything the server sends until it closes; fails the test on a hang."""
    with sock:
        return _read_until_close(sock, timeout)


def _read_until_close(sock, timeout):
    sock.settimeout(timeout)
    data = b""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            raise AssertionError(f"server did not close the connection; got {data!r}")
        except ConnectionResetError:
            return data
        if not chunk:
            return data
        data += chunk
    raise AssertionError("server did not close the connection")


def error_fields(data):
    """SQLSTATE codes of the ErrorResponse messages in `data`."""
    codes = []
    i = 0
    while i + 5 <= len(data):
        t = data[i:i + 1]
        (n,) = struct.unpack("!I", data[i + 1:i + 5])
        body = data[i + 5:i + 1 + n]
        if t == b"E":
            for field in body.split(b"\0"):
                if field[:1] == b"C":
                    codes.append(field[1:].decode())
        i += 1 + n
    return codes


class RobustnessTest(WirepoolTestCase):
    server = """
      login_timeout: 2s
      max_message_size: 1MiB
      max_clients: 40
    """

    def connect(self):
        return socket.create_connection(("127.0.0.1", self.wp.port), timeout=5)

    def logged_in(self):
        return raw_login(self.wp.port)

    def assert_still_serving(self):
        self.assertEqual(psql(self.wp.dsn(), "-c", "SELECT 42").stdout.strip(), "42")

    def test_startup_length_2gib(self):
        s = self.connect()
        s.sendall(struct.pack("!I", 0x7FFFFFF0) + struct.pack("!I", 196608))
        # As PostgreSQL: closed without a word, logged.
        self.assertEqual(read_until_close(s), b"")
        self.assertIn("invalid length of startup packet", self.wp.log())
        self.assert_still_serving()

    def test_startup_length_below_minimum(self):
        for n in (0, 3, 4, 7):
            s = self.connect()
            s.sendall(struct.pack("!I", n) + b"\0\0\0\0")
            self.assertEqual(read_until_close(s), b"", n)
        # node-postgres's connect-then-end: a Terminate before any startup packet.
        s = self.connect()
        s.sendall(b"X" + struct.pack("!I", 4))
        self.assertEqual(read_until_close(s), b"")
        self.assert_still_serving()

    def test_unsupported_protocol_version_is_fatal(self):
        s = self.connect()
        s.sendall(struct.pack("!II", 8, 9 << 16))
        self.assertEqual(error_fields(read_until_close(s)), ["0A000"])
        self.assert_still_serving()

    def test_truncated_startup_then_silence_hits_login_timeout(self):
        s = self.connect()
        s.sendall(startup_packet()[:9])
        started = time.time()
        read_until_close(s, timeout=10)
        self.assertLess(time.time() - started, 6)
        self.assert_still_serving()

    def test_silent_client_closed_at_login_timeout(self):
        s = self.connect()
        started = time.time()
        read_until_close(s, timeout=10)
        self.assertGreater(time.time() - started, 1.5)
        self.assertLess(time.time() - started, 6)
        self.assertIn("login_timeout", self.wp.log())
        self.assert_still_serving()

    def test_random_bytes(self):
        for seed in range(5):
            s = self.connect()
            s.sendall(os.urandom(64 + seed * 100))
            read_until_close(s)
        self.assert_still_serving()

    def test_message_length_2gib_after_login(self):
        s = self.logged_in()
        s.sendall(b"Q" + struct.pack("!I", 0x7FFFFFFF))
        data = read_until_close(s)
        self.assertEqual(error_fields(data), ["08P01"])
        self.assertIn("exceeds max_message_size", self.wp.log())
        self.assert_still_serving()

    def test_message_length_below_4_after_login(self):
        s = self.logged_in()
        s.sendall(b"Q" + struct.pack("!I", 3))
        self.assertEqual(error_fields(read_until_close(s)), ["08P01"])
        self.assert_still_serving()

    def test_unknown_message_type(self):
        s = self.logged_in()
        s.sendall(b"@" + struct.pack("!I", 4))
        self.assertEqual(error_fields(read_until_close(s)), ["08P01"])
        self.assert_still_serving()

    def test_oversized_message_is_refused_from_its_header(self):
        s = self.logged_in()
        s.sendall(b"Q" + struct.pack("!I", 2 * 1024 * 1024) + b"SELECT ")
        self.assertEqual(error_fields(read_until_close(s)), ["08P01"])
        self.assert_still_serving()

    def test_client_vanishes_mid_result(self):
        s = self.logged_in()
        q = (b"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 2000000) "
             b"SELECT x, 'padding padding padding padding' FROM c\0")
        s.sendall(b"Q" + struct.pack("!I", len(q) + 4) + q)
        s.recv(1000)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()  # RST
        time.sleep(0.5)
        self.assert_still_serving()
        # The backend went back to the pool: the pool of 4 still serves 4 at once.
        conns = [psycopg2.connect(self.wp.kv()) for _ in range(6)]
        for c in conns:
            c.autocommit = True
            c.cursor().execute("SELECT 1")
            c.close()

    def test_too_many_clients(self):
        held = [self.logged_in() for _ in range(40)]
        r = psql(self.wp.dsn(), "-c", "SELECT 1", check=False)
        self.assertIn("too many clients", r.stderr)
        for s in held:
            s.close()
        time.sleep(0.5)
        self.assert_still_serving()


if __name__ == "__main__":
    unittest.main()
