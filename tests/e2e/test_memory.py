"""Memory of idle clients, and once they leave: wirepool's RSS follows its clients down.

Covers: 2,000 idle SCRAM clients log in on the default configuration (SQLite)
and cost at most BYTES_PER_IDLE_CLIENT of RSS each (a client that has only
logged in holds no statement state, no settings history, and waits parked
outside Asio's reactor with no operation pending: docs/performance.md); parked
clients are listed by SHOW CLIENTS with their addresses, answer a query, and a
parked client that hangs up is closed; they sit idle, and leave; within 10 s
wirepool has given back at least a third of the RSS they added (glibc kept the freed memory of their many small blocks, so RSS
stayed at its peak until the server trimmed it after a large drop in
connections: server/memory_trim.hpp; with 2,000 clients it gives back about
half, with 10,000 about two thirds, docs/performance-notes.md; without the
trim nothing). A measurement of memory, not of time: the 10 s only bound the
wait.
"""

import resource
import struct
import time
import unittest

from harness import WirepoolTestCase, admin_rows, raw_login, sanitized

CLIENTS = 2000
# Bytes of RSS per idle logged-in client, with a margin for a loaded machine
# over what this test measures (docs/performance-notes.md, "Bytes per idle
# client"); the code before parking idle clients fails it.
BYTES_PER_IDLE_CLIENT = 950


def simple_query(sock, sql):
    """Sends a Query and returns the message types up to ReadyForQuery."""
    body = sql.encode() + b"\0"
    sock.sendall(b"Q" + struct.pack("!I", len(body) + 4) + body)
    types, buf = [], b""
    while not types or types[-1] != "Z":
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed by the server")
        buf += chunk
        while len(buf) >= 5:
            n = struct.unpack("!I", buf[1:5])[0]
            if len(buf) < 1 + n:
                break
            types.append(chr(buf[0]))
            buf = buf[1 + n:]
    return types


@unittest.skipIf(sanitized(), "AddressSanitizer's allocator keeps freed memory in its own "
                 "quarantine and pools: the trim this checks is glibc's")
class RssAfterClientsLeaveTest(WirepoolTestCase):
    server = "max_clients: 100000\n"
    users = """
  - { name: alice, password: wonderland }
  - { name: ops, password: secret, admin: true }
"""

    @classmethod
    def setUpClass(cls):
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, CLIENTS + 500)), hard))
        super().setUpClass()

    def test_idle_clients_cost_bounded_memory_and_rss_returns_near_its_start(self):
        raw_login(self.wp.port).close()  # one-time allocations
        time.sleep(0.5)
        before = self.wp.rss_kib()
        socks = [raw_login(self.wp.port, timeout=60) for _ in range(CLIENTS)]
        time.sleep(1.5)
        peak = self.wp.rss_kib()
        per_client = (peak - before) * 1024 / CLIENTS
        self.assertLessEqual(per_client, BYTES_PER_IDLE_CLIENT,
                             f"RSS {before} KiB before {CLIENTS} idle clients, {peak} KiB with "
                             f"them: {per_client:.0f} B each")
        for s in socks:
            s.close()
        # A third, not the half it measures: a bound at the measured value fails at random.
        limit = before + (peak - before) * 2 / 3
        deadline = time.time() + 10
        after = self.wp.rss_kib()
        while after > limit and time.time() < deadline:
            time.sleep(0.25)
            after = self.wp.rss_kib()
        self.assertLessEqual(after, limit,
                             f"RSS {before} KiB before {CLIENTS} clients, {peak} KiB with them, "
                             f"{after} KiB 10 s after they left")
        # The server still serves after the trim.
        raw_login(self.wp.port).close()


class ParkedClientsTest(WirepoolTestCase):
    users = """
  - { name: alice, password: wonderland }
  - { name: ops, password: secret, admin: true }
"""

    def test_parked_clients_are_listed_answer_and_are_closed_when_they_hang_up(self):
        socks = [raw_login(self.wp.port) for _ in range(3)]
        time.sleep(1.5)  # idle: parked (at once after login, and after the sweeps)
        ports = {s.getsockname()[1] for s in socks}
        listed = [c for c in admin_rows(self.wp, "SHOW CLIENTS") if c["database"] == "app"]
        self.assertEqual({int(c["port"]) for c in listed}, ports, listed)
        self.assertTrue(all(c["addr"] == "127.0.0.1" and c["state"] == "idle" for c in listed))
        self.assertEqual(simple_query(socks[0], "SELECT 1"), ["T", "D", "C", "Z"])
        time.sleep(1.5)  # answered, then idle long enough to be parked again
        self.assertEqual(simple_query(socks[0], "SELECT 2"), ["T", "D", "C", "Z"])
        gone = socks[1].getsockname()[1]
        socks[1].close()
        deadline = time.time() + 5
        while time.time() < deadline:
            listed = [c for c in admin_rows(self.wp, "SHOW CLIENTS") if c["database"] == "app"]
            if len(listed) == 2:
                break
            time.sleep(0.1)
        self.assertEqual({int(c["port"]) for c in listed}, ports - {gone}, listed)
        for s in (socks[0], socks[2]):
            s.close()
