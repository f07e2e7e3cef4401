"""Several processes: online restart with SO_REUSEPORT, and cancel requests
forwarded between peers.

Covers: with `reuse_port: true` a second process binds the listener's port
beside a running one; SIGTERM to the old one drains it — its client inside a
transaction commits, new connections meanwhile reach the new process — and the
old one exits 0 while the new one keeps serving; without `reuse_port` the
second process refuses to start with a one-line error naming the port; a
CancelRequest sent to the wrong process of two peers is forwarded to the one
that issued the key and cancels the running statement (57014), while a key
with a wrong secret cancels nothing there.
"""

import re
import signal
import socket
import struct
import subprocess
import time
import unittest

import psycopg2

from harness import WIREPOOL, Wirepool, free_port, raw_login

LISTENER = "reuse_port: true"


def same_port(wp, port):
    """Rewrites `wp`'s configuration to listen on `port`."""
    with open(wp.config_path) as f:
        text = f.read()
    with open(wp.config_path, "w") as f:
        f.write(re.sub(rf"port: {wp.port}\b", f"port: {port}", text))
    wp.port = port


def wait_for(predicate, timeout=15):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


class OnlineRestartTest(unittest.TestCase):

    def test_new_process_beside_the_old_one_which_drains(self):
        old = Wirepool(listener=LISTENER, name="old").start()
        new = Wirepool(listener=LISTENER, name="new")
        try:
            # A client of the old process, inside a transaction.
            inside = psycopg2.connect(old.kv())
            cur = inside.cursor()
            cur.execute("CREATE TABLE IF NOT EXISTS t (v INTEGER)")
            cur.execute("INSERT INTO t VALUES (1)")

            same_port(new, old.port)
            new.start()
            self.assertTrue(wait_for(lambda: "wirepool ready" in new.log()), new.log())

            old.proc.send_signal(signal.SIGTERM)
            self.assertTrue(wait_for(lambda: "draining" in old.log()), old.log())
            time.sleep(0.2)  # the drain closes the old listener right after that line
            # New connections reach the new process while the old one drains.
            for i in range(10):
                c = psycopg2.connect(new.kv())
                c.autocommit = True
                k = c.cursor()
                k.execute("SELECT %s", (i,))
                self.assertEqual(k.fetchone(), (i,))
                c.close()
            self.assertGreaterEqual(new.log().count("connected to database"), 10)
            # The old process's transaction is not cut: it commits, then the
            # old process closes that client and exits.
            cur.execute("INSERT INTO t VALUES (2)")
            inside.commit()
            self.assertEqual(old.proc.wait(20), 0, old.log()[-3000:])
            inside.close()
            c = psycopg2.connect(new.kv())
            k = c.cursor()
            k.execute("SELECT 1")
            self.assertEqual(k.fetchone(), (1,))
            c.close()
        finally:
            old.cleanup()
            self.assertEqual(new.stop(), 0, new.log()[-3000:])
            new.cleanup()

    def test_without_reuse_port_a_second_process_refuses_the_port(self):
        first = Wirepool(name="first").start()
        second = Wirepool(name="second")
        try:
            same_port(second, first.port)
            r = subprocess.run([WIREPOOL, "--config", second.config_path], capture_output=True,
                               text=True, timeout=30)
            self.assertEqual(r.returncode, 1)
            self.assertIn(f"cannot listen on 127.0.0.1:{first.port}", r.stderr)
        finally:
            first.cleanup()
            second.cleanup()


# Runs until cancelled (SQLite counts forever).
ENDLESS = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"


def send_cancel(port, pid, secret):
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(struct.pack("!IIii", 16, 80877102, pid, secret))
        s.recv(1)  # the server closes the connection


def query_result(sock, timeout):
    """Sends nothing; reads until ReadyForQuery: ("E", sqlstate) or ("C", tag)."""
    sock.settimeout(timeout)
    buf, outcome = b"", None
    while True:
        while len(buf) < 5 or len(buf) < 1 + struct.unpack("!I", buf[1:5])[0]:
            chunk = sock.recv(65536)
            if not chunk:
                raise AssertionError(f"closed: {buf!r}")
            buf += chunk
        n = struct.unpack("!I", buf[1:5])[0]
        t, body, buf = buf[:1], buf[5:1 + n], buf[1 + n:]
        if t == b"E":
            fields = dict((f[:1], f[1:]) for f in body.split(b"\0") if f)
            outcome = ("E", fields[b"C"].decode())
        elif t == b"C":
            outcome = ("C", body.rstrip(b"\0").decode())
        elif t == b"Z":
            return outcome


class PeerCancelTest(unittest.TestCase):

    def test_cancel_reaching_the_other_peer_is_forwarded(self):
        a_port, b_port = free_port(), free_port()
        a = Wirepool(name="peer1", server=f"peer_id: 1\n")
        b = Wirepool(name="peer2", server=f"peer_id: 2\n")
        for wp, port, other_id, other_port in ((a, a_port, 2, b_port), (b, b_port, 1, a_port)):
            same_port(wp, port)
            with open(wp.config_path, "a") as f:
                f.write(f"peers:\n  - {{ id: {other_id}, address: 127.0.0.1, port: {other_port} }}\n")
        a.start()
        b.start()
        try:
            key = {}
            s = raw_login(a.port, key=key)
            self.assertEqual(key["pid"] >> 23, 1)  # the key names its issuer
            body = ENDLESS.encode() + b"\0"
            # A wrong secret, sent to the other peer, is forwarded and cancels nothing.
            s.sendall(b"Q" + struct.pack("!I", len(body) + 4) + body)
            time.sleep(0.3)
            send_cancel(b.port, key["pid"], key["secret"] + 1)
            with self.assertRaises(socket.timeout):
                query_result(s, 1.0)
            # The right key, sent to the other peer, cancels the statement on its owner.
            send_cancel(b.port, key["pid"], key["secret"])
            self.assertEqual(query_result(s, 10), ("E", "57014"))
            self.assertIn("forwarded to peer 1", b.log())
            s.close()
        finally:
            a.cleanup()
            b.cleanup()


if __name__ == "__main__":
    unittest.main()
