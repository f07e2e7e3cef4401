"""The HTTP listener: /metrics, /healthz, /readyz.

Covers: a live scrape passes `promtool check metrics`; /healthz answers 200;
/readyz answers 200 with every pool reachable and 503 with a JSON reason when a
pool's backend cannot be reached, a reason without the backend's host, port
or error (those are in the log); an unknown path is 404, another method 405,
oversized headers 431, a body 400; a client that sends nothing is closed at the
time bound; counters move after a scripted workload: a query (statements,
transactions, statement duration, bytes), a failed login (auth_failed, SQLSTATE
class 28), a pool timeout (pool_exhausted, pool_timeout, class 53, the acquire
wait histogram); client and backend connection gauges by state; HTTP clients
do not count against max_clients.
"""

import json
import os
import shutil
import socket
import subprocess
import threading
import time
import unittest

import psycopg2

from harness import Wirepool, WirepoolTestCase, free_port

PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"
DB = 'database="app",user="alice",driver="sqlite"'


class MetricsTest(WirepoolTestCase):
    http = True
    # One backend connection, a short acquire_timeout: a second client times out.
    databases = """
      - name: app
        driver: sqlite
        connection: app.db
        pool: { mode: transaction, max: 1, acquire_timeout: 300ms }
    """

    def test_promtool_accepts_a_live_scrape(self):
        # Some traffic first, so that every family has samples.
        with psycopg2.connect(self.wp.kv()) as conn:
            conn.cursor().execute("SELECT 1")
        status, headers, body = self.wp.http_get("/metrics")
        self.assertEqual(status, 200)
        self.assertTrue(headers["Content-Type"].startswith("text/plain; version=0.0.4"))
        r = subprocess.run([PROMTOOL, "check", "metrics"], input=body, capture_output=True,
                           text=True, timeout=30)
        self.assertEqual(r.returncode, 0, f"promtool: {r.stdout}{r.stderr}\n{body[:3000]}")
        for family in ("wirepool_build_info", "wirepool_config_info", "wirepool_uptime_seconds",
                       "process_resident_memory_bytes", "process_open_fds",
                       "wirepool_client_connections", "wirepool_backend_connections",
                       "wirepool_pool_acquire_wait_seconds", "wirepool_statement_duration_seconds",
                       "wirepool_statements_total", "wirepool_transactions_total",
                       "wirepool_errors_total", "wirepool_error_reasons_total",
                       "wirepool_client_received_bytes_total", "wirepool_client_sent_bytes_total",
                       "wirepool_tls_handshakes_total", "wirepool_pool_exhausted_total",
                       "wirepool_config_reloads_total"):
            self.assertIn(f"# TYPE {family} ", body)
        m = self.wp.metrics()
        self.assertGreater(m["process_resident_memory_bytes"], 1 << 20)
        self.assertGreater(m["process_open_fds"], 3)
        with open(self.wp.config_path, "rb") as f:
            import hashlib
            digest = hashlib.sha256(f.read()).hexdigest()
        self.assertEqual(m[f'wirepool_config_info{{sha256="{digest}"}}'], 1)

    def test_health_ready_and_not_found(self):
        self.assertEqual(self.wp.http_get("/healthz")[0], 200)
        status, _, body = self.wp.http_get("/readyz")
        self.assertEqual(status, 200, body)
        self.assertEqual(json.loads(body), {"ready": True})
        self.assertEqual(self.wp.http_get("/nope")[0], 404)
        self.assertEqual(self.wp.http_get("/metrics/x")[0], 404)

    def raw(self, request, timeout=15):
        with socket.create_connection(("127.0.0.1", self.wp.http_port), timeout=timeout) as s:
            s.sendall(request)
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    return data
                data += chunk

    def test_requests_are_bounded(self):
        self.assertTrue(self.raw(b"POST /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
                        .startswith(b"HTTP/1.1 405"))
        big = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 20000 + b"\r\n\r\n"
        self.assertTrue(self.raw(big).startswith(b"HTTP/1.1 431"))
        body = b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"
        self.assertTrue(self.raw(body).startswith(b"HTTP/1.1 400"))
        # Nothing sent: closed at the 10 s bound, without an answer.
        start = time.monotonic()
        self.assertEqual(self.raw(b"", timeout=30), b"")
        self.assertLess(time.monotonic() - start, 20)

    def test_counters_move_after_a_workload(self):
        before = self.wp.metrics()

        def delta(key):
            return self.wp.metrics().get(key, 0) - before.get(key, 0)

        # A query.
        with psycopg2.connect(self.wp.kv()) as conn:
            cur = conn.cursor()
            cur.execute("SELECT 1")
            self.assertEqual(cur.fetchone(), (1,))
        conn.close()
        after = self.wp.metrics()
        self.assertGreaterEqual(after[f"wirepool_statements_total{{{DB}}}"] -
                                before.get(f"wirepool_statements_total{{{DB}}}", 0), 1)
        self.assertGreaterEqual(after[f"wirepool_transactions_total{{{DB}}}"] -
                                before.get(f"wirepool_transactions_total{{{DB}}}", 0), 1)
        self.assertGreaterEqual(
            after[f"wirepool_statement_duration_seconds_count{{{DB}}}"] -
            before.get(f"wirepool_statement_duration_seconds_count{{{DB}}}", 0), 1)
        self.assertGreater(
            after['wirepool_client_received_bytes_total{protocol="postgres"}'] -
            before['wirepool_client_received_bytes_total{protocol="postgres"}'], 0)
        self.assertGreater(
            after['wirepool_client_sent_bytes_total{protocol="postgres"}'] -
            before['wirepool_client_sent_bytes_total{protocol="postgres"}'], 0)

        # A failed login.
        with self.assertRaises(psycopg2.OperationalError):
            psycopg2.connect(self.wp.kv(password="wrong"))
        self.assertEqual(delta('wirepool_error_reasons_total{reason="auth_failed"}'), 1)
        self.assertEqual(delta('wirepool_errors_total{sqlstate_class="28"}'), 1)

        # A pool timeout: one client holds the only backend connection in a
        # transaction; the second waits acquire_timeout (300 ms) and gets 53300.
        holder = psycopg2.connect(self.wp.kv())
        holder.cursor().execute("SELECT 1")  # psycopg2 opened a transaction: the lease stays
        m = self.wp.metrics()
        self.assertEqual(m[f'wirepool_backend_connections{{{DB},state="active"}}'], 1)
        self.assertGreaterEqual(m['wirepool_client_connections{protocol="postgres",state="active"}'],
                                1)
        waiter = psycopg2.connect(self.wp.kv())
        waiter.autocommit = True
        seen_waiting = []

        def watch():
            for _ in range(20):
                g = self.wp.metrics()
                seen_waiting.append(g[f"wirepool_pool_waiting_clients{{{DB}}}"])
                time.sleep(0.02)

        t = threading.Thread(target=watch)
        t.start()
        with self.assertRaises(psycopg2.OperationalError) as cm:
            waiter.cursor().execute("SELECT 2")
        t.join()
        self.assertEqual(cm.exception.pgcode, "53300")
        self.assertIn(1.0, seen_waiting)
        waiter.close()
        holder.rollback()
        holder.close()
        self.assertEqual(delta(f"wirepool_pool_exhausted_total{{{DB}}}"), 1)
        self.assertEqual(delta('wirepool_error_reasons_total{reason="pool_timeout"}'), 1)
        self.assertEqual(delta('wirepool_errors_total{sqlstate_class="53"}'), 1)
        # The timed-out wait (>= 300 ms) landed above the 0.25 s bucket.
        waits = (f'wirepool_pool_acquire_wait_seconds_count{{{DB}}}',
                 f'wirepool_pool_acquire_wait_seconds_bucket{{{DB},le="0.25"}}')
        self.assertGreaterEqual(delta(waits[0]) - delta(waits[1]), 1)
        m = self.wp.metrics()
        self.assertEqual(m[f'wirepool_backend_connections{{{DB},state="active"}}'], 0)

    def test_http_clients_do_not_count_against_max_clients(self):
        socks = [socket.create_connection(("127.0.0.1", self.wp.http_port)) for _ in range(5)]
        try:
            time.sleep(0.2)
            m = self.wp.metrics()
            self.assertGreaterEqual(m['wirepool_client_connections{protocol="http",state="idle"}'], 5)
            with psycopg2.connect(self.wp.kv()) as conn:
                conn.cursor().execute("SELECT 1")
            conn.close()
        finally:
            for s in socks:
                s.close()


class ReadinessTest(unittest.TestCase):
    """A pool whose backend cannot be reached makes /readyz answer 503 with the reason."""

    def test_unreachable_backend_is_not_ready(self):
        port = free_port()  # nobody listens there
        wp = Wirepool(databases=f"""
          - name: app
            driver: sqlite
            connection: app.db
          - name: gone
            driver: postgresql
            connection: host=127.0.0.1 port={port} user=nobody dbname=nothing connect_timeout=2
            pool: {{ min: 1, max: 2 }}
        """, name="readiness", http=True).start()
        try:
            deadline = time.time() + 10
            while time.time() < deadline:
                status, _, body = wp.http_get("/readyz")
                if status == 503:
                    break
                time.sleep(0.1)
            self.assertEqual(status, 503, body)
            answer = json.loads(body)
            self.assertEqual(answer["ready"], False)
            self.assertEqual('database "gone" cannot reach its backend', answer["reason"])
            self.assertNotIn(str(port), body)
            self.assertIn(f"{port}", wp.log())  # the detail is for the operator
            self.assertEqual(wp.http_get("/healthz")[0], 200)
            m = wp.metrics()
            # No client logged in: the readiness probe found it out.
            self.assertEqual(m['wirepool_database_reachable{database="gone",driver="postgresql"}'], 0)
            self.assertEqual(m['wirepool_database_reachable{database="app",driver="sqlite"}'], 1)
        finally:
            wp.cleanup()


if __name__ == "__main__":
    unittest.main()
