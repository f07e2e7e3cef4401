"""The TDS front end with real SQL Server clients.

Covers: tedious 20 (on npm's Node 22) and tedious 19 (on the machine's Node 20)
in strict mode (TDS 8.0: TLS 1.3 first, ALPN tds/8.0, the generated certificate
as the only root) against the SQLite backend and, with the throwaway PostgreSQL
fixture, the PostgreSQL backend: batches, sp_executesql with every parameter
type and NULLs, 100 KB NVARCHAR(MAX)/VARBINARY(MAX), multi-statement batches,
errors with SQL Server numbers, transaction-manager requests and BEGIN TRAN
text, sp_prepare/sp_execute/sp_unprepare, ATTENTION cancelling a long query,
more clients than backend connections; wrong passwords, unknown users and
databases refused. TDS 7.x clients (TLS inside PRELOGIN packets): tedious
with `encrypt: true` and pytds (Debian python3-tds) offer at most TLS 1.2,
FreeTDS's tsql sends its login before finishing TLS 1.3, tedious with
`encrypt: false` offers no TLS: each is refused before its login, with a log
line saying why. Garbage instead of a
PRELOGIN is refused without a crash.
"""

import json
import os
import shutil
import socket
import ssl
import struct
import subprocess
import tempfile
import time
import unittest

from harness import NODE_PATH, WirepoolTestCase

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "node", "tds.js")
NODE22 = os.path.join(NODE_PATH, ".bin", "node")


class TdsCase(WirepoolTestCase):
    tls = "{ generate: true }"
    tds = True
    backend = "sqlite"
    database = "app"

    def node(self, scenario, lib="tedious", timeout=180, **extra):
        """Runs tds.js SCENARIO with tedious 20 on Node 22 or tedious 19 on Node 20."""
        if not os.path.isdir(os.path.join(NODE_PATH, "tedious")):
            self.fail(f"tedious is not installed in {NODE_PATH} (make test installs it)")
        node = NODE22 if lib == "tedious" else shutil.which("node")
        cfg = dict(port=self.wp.tds_port, ca=self.wp.certificate(), user="alice",
                   password="wonderland", database=self.database, lib=lib, encrypt="strict",
                   backend=self.backend)
        cfg.update(extra)
        return subprocess.run([node, SCRIPT, scenario, json.dumps(cfg)], capture_output=True,
                              text=True, timeout=timeout, env=dict(os.environ, NODE_PATH=NODE_PATH))

    def assert_scenario(self, scenario, lib="tedious", **extra):
        r = self.node(scenario, lib, **extra)
        self.assertEqual(r.returncode, 0,
                         f"{lib} {scenario}:\n{r.stdout}\n{r.stderr}\n--- log:\n"
                         f"{self.wp.log()[-4000:]}")
        self.assertIn(f"tds {scenario}: ok", r.stdout)
        return r


def tds_packet(ptype, payload, status=1, length=None):
    return struct.pack(">BBHHBB", ptype, status, length or len(payload) + 8, 0, 1, 0) + payload


def prelogin():
    """VERSION and ENCRYPTION options, then the terminator."""
    table = bytes([0, 0, 11, 0, 6, 1, 0, 17, 0, 1, 0xFF])
    return tds_packet(0x12, table + bytes([16, 0, 0, 0, 0, 0]) + bytes([0]))


def strict_socket(port, ca):
    """TLS 1.3 with ALPN tds/8.0 (TDS 8.0 strict), then PRELOGIN answered."""
    ctx = ssl.create_default_context(cafile=ca)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    ctx.set_alpn_protocols(["tds/8.0"])
    s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10),
                        server_hostname="localhost")
    s.sendall(prelogin())
    header = s.recv(8)
    assert header[0] == 4, header
    length = struct.unpack(">H", header[2:4])[0]
    body = b""
    while len(body) < length - 8:
        body += s.recv(length - 8 - len(body))
    return s


def read_all(s):
    data = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    except (ConnectionResetError, ssl.SSLError, socket.timeout):
        pass
    return data


class TdsSqliteTest(TdsCase):
    databases = """
      - name: app
        driver: sqlite
        connection: app.db
        options: { busy_timeout: 5s }
        pool: { mode: transaction, max: 4 }
    """

    def test_roundtrip_tedious20(self):
        self.assert_scenario("roundtrip")

    def test_roundtrip_tedious19(self):
        self.assert_scenario("roundtrip", lib="tedious19")

    def test_transactions(self):
        self.assert_scenario("transactions")

    def test_prepared(self):
        self.assert_scenario("prepared", lib="tedious19")

    def test_cancel_with_attention(self):
        self.assert_scenario("cancel")

    def test_more_clients_than_backends(self):
        self.assert_scenario("pooling", clients=12)

    def test_login_errors(self):
        self.assert_scenario("login_errors")
        log = self.wp.log()
        self.assertIn('authentication failed for user "alice": wrong password', log)
        self.assertNotIn("wrong\"", log.replace('"alice"', ""))  # the password is never logged

    # TDS 7.x clients: TLS inside PRELOGIN packets. None of the three on this
    # machine completes TLS 1.3 that way, so each is refused before its login
    # with a log line that says why (docs/tds.md).

    def test_tds7_tedious_encrypt_true_refused(self):
        # tedious caps the TLS of TDS 7.x at 1.2 (message-io.js: maxVersion TLSv1.2).
        r = self.node("connect_only", lib="tedious19", encrypt=True)
        self.assertNotEqual(r.returncode, 0, r.stdout)
        self.assertRegex(self.wp.log(), r"refused: the TDS 7.x client's TLS handshake \(in PRELOGIN "
                                        r"packets\) failed: .*wirepool accepts TLS 1.3 only")

    def test_tds7_without_encryption_refused(self):
        r = self.node("connect_only", lib="tedious19", encrypt=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("requires encryption", r.stdout + r.stderr)
        self.assertIn("refused: TDS 7.x client without encryption", self.wp.log())

    def test_tds7_pytds_refused(self):
        import pytds  # Debian python3-tds: TLSv1_2_METHOD for TDS 7.x
        with self.assertRaises(Exception):
            pytds.connect(dsn="127.0.0.1", port=self.wp.tds_port, user="alice",
                          password="wonderland", database="app", cafile=self.wp.certificate(),
                          validate_host=False, login_timeout=10, autocommit=True)
        self.assertRegex(self.wp.log(), r"refused: the TDS 7.x client's TLS handshake .*"
                                        r"wirepool accepts TLS 1.3 only")

    def test_tds7_tsql_refused(self):
        # FreeTDS 1.3.17 negotiates TLS 1.3 but sends its LOGIN7 as a bare record
        # before its Finished: the handshake cannot complete.
        work = tempfile.mkdtemp(prefix="freetds-")
        try:
            conf = os.path.join(work, "freetds.conf")
            with open(conf, "w") as f:
                f.write(f"[wirepool]\n  host = 127.0.0.1\n  port = {self.wp.tds_port}\n"
                        f"  tds version = 7.4\n  encryption = require\n"
                        f"  ca file = {self.wp.certificate()}\n")
            r = subprocess.run(["tsql", "-S", "wirepool", "-U", "alice", "-P", "wonderland",
                                "-D", "app"], input="SELECT 6 * 7\ngo\nexit\n",
                               capture_output=True, text=True, timeout=60,
                               env=dict(os.environ, FREETDSCONF=conf))
            self.assertNotIn("42", r.stdout)
            self.assertIn("sent a TLS record its handshake could not use", self.wp.log())
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def test_garbage_refused(self):
        with socket.create_connection(("127.0.0.1", self.wp.tds_port), timeout=10) as s:
            s.sendall(b"GET / HTTP/1.1\r\n\r\n")
            self.assertEqual(s.recv(100), b"")
        with socket.create_connection(("127.0.0.1", self.wp.tds_port), timeout=10) as s:
            # A cleartext PRELOGIN header announcing a length beyond its bytes, then EOF.
            s.sendall(bytes([0x12, 0x01, 0x00, 0x40, 0, 0, 1, 0]) + b"\x00" * 8)
            s.shutdown(socket.SHUT_WR)
            self.assertEqual(s.recv(100), b"")
        self.assertIn("neither a TLS ClientHello nor a TDS PRELOGIN", self.wp.log())


class TdsRobustnessTest(TdsCase):
    """Bad input over TDS: an error to the client and a log line, never a crash."""

    def test_malformed_login7(self):
        with strict_socket(self.wp.tds_port, self.wp.certificate()) as s:
            s.sendall(tds_packet(0x10, b"\x10\x00\x00\x00" + b"\xff" * 40))
            answer = read_all(s)
        self.assertIn("Login failed".encode("utf-16-le"), answer)
        self.assertIn("bad LOGIN7", self.wp.log())

    def test_oversized_packet(self):
        with strict_socket(self.wp.tds_port, self.wp.certificate()) as s:
            s.sendall(tds_packet(0x10, b"\0" * 16, length=40000))
            self.assertEqual(read_all(s), b"")
        self.assertIn("TDS protocol error", self.wp.log())

    def test_tls12_refused(self):
        ctx = ssl.create_default_context(cafile=self.wp.certificate())
        ctx.maximum_version = ssl.TLSVersion.TLSv1_2
        with self.assertRaises(ssl.SSLError):
            ctx.wrap_socket(socket.create_connection(("127.0.0.1", self.wp.tds_port), timeout=10),
                            server_hostname="localhost").close()

    def test_wrong_alpn_refused(self):
        ctx = ssl.create_default_context(cafile=self.wp.certificate())
        ctx.set_alpn_protocols(["postgresql"])
        with self.assertRaises(ssl.SSLError):
            ctx.wrap_socket(socket.create_connection(("127.0.0.1", self.wp.tds_port), timeout=10),
                            server_hostname="localhost").close()

    def test_client_vanishes_mid_result(self):
        self.assert_scenario("vanish")
        deadline = time.time() + 10
        while "connection lost in the middle of a result" not in self.wp.log():
            self.assertLess(time.time(), deadline, self.wp.log()[-3000:])
            time.sleep(0.1)
        self.assert_scenario("connect_only")


class TdsPostgresTest(TdsCase):
    backend = "postgresql"

    @classmethod
    def setUpClass(cls):
        path = os.environ.get("WIREPOOL_PG_INFO")
        if not path or not os.path.exists(path):
            raise unittest.SkipTest("no PostgreSQL fixture (run through ctest)")
        with open(path) as f:
            info = json.load(f)
        cls.databases = f"""
          - name: app
            driver: postgresql
            connection: "host={info['host']} port={info['port']} user={info['user']} dbname={info['database']}"
            password_env: WIREPOOL_TEST_PG_PASSWORD
            pool: {{ mode: transaction, max: 4 }}
        """
        os.environ["WIREPOOL_TEST_PG_PASSWORD"] = info["password"]
        super().setUpClass()

    def test_roundtrip(self):
        self.assert_scenario("roundtrip")

    def test_transactions(self):
        self.assert_scenario("transactions")

    def test_cancel_with_attention(self):
        self.assert_scenario("cancel")

    def test_more_clients_than_backends(self):
        self.assert_scenario("pooling", clients=12)

    def test_client_vanishes_mid_result(self):
        self.assert_scenario("vanish")
        self.assert_scenario("connect_only")


if __name__ == "__main__":
    unittest.main()
