"""Users from the backend: auth_user + auth_query on a real PostgreSQL (the
CTest fixture `pg`), with roles made by the superuser through the socket.

Covers: a role with a SCRAM password that is not in `users:` logs in with
psql, psycopg2 and psycopg 3 and reaches the backend as the entry's fixed
role, in a pool of its own (SHOW POOLS, SHOW USERS), and over TDS with
tedious 19 (a wrong password, an md5 role and an unknown name refused with
18456, a dead auth connection named); only the database whose auth_query
found it; a YAML user of the same name wins; an unknown name, a wrong password
and an md5 role get the same 28P01 message, the same iteration count, and the
same salt for the same name after a restart and a reload; 20 logins of one
uncached name run one lookup; names with NUL, newline, 10,000 characters or
invalid UTF-8 get a clear error without a lookup; auth_query returning two
rows or an error answers 28000, NULL passwd 28P01, a slow one 08006 at
auth_query_timeout; the auth_user connection down answers 08006 while a
logged-in client keeps being served.
"""

import json
import os
import secrets
import shutil
import signal
import socket
import struct
import subprocess
import threading
import time
import unittest

import psycopg
import psycopg2

from harness import NODE_PATH, PSQL, Wirepool, pg_info, psql, raw_login, startup_packet

LOOKUP = "aq_lookup"
LOOKUP_PASSWORD = secrets.token_hex(12)


def entry(info, name, more=""):
    return f"""
      - name: {name}
        driver: postgresql
        connection: "host={info['host']} port={info['port']} user={info['user']} dbname={info['database']}"
        password_env: WIREPOOL_TEST_PG_PASSWORD
        auth_user: {LOOKUP}
        auth_password_env: WIREPOOL_TEST_AQ_PASSWORD
        pool: {{ mode: transaction, max: 2 }}
{more}"""


def server_first(port, user, database):
    """The salt and iteration count wirepool advertises for `user` (SCRAM's
    server-first message), without finishing the exchange."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(startup_packet(user, database))
        t, body = read_message(s)
        assert (t, struct.unpack("!I", body[:4])[0]) == (b"R", 10), (t, body)
        first = "n,,n=,r=" + "x" * 24
        msg = b"SCRAM-SHA-256\0" + struct.pack("!i", len(first)) + first.encode()
        s.sendall(b"p" + struct.pack("!I", len(msg) + 4) + msg)
        t, body = read_message(s)
        assert t == b"R", (t, body)
        attrs = dict(kv.split("=", 1) for kv in body[4:].decode().split(","))
        return attrs["s"], int(attrs["i"])


def read_message(s):
    buf = b""
    while len(buf) < 5 or len(buf) < 1 + struct.unpack("!I", buf[1:5])[0]:
        chunk = s.recv(65536)
        if not chunk:
            raise AssertionError(f"closed: {buf!r}")
        buf += chunk
    n = struct.unpack("!I", buf[1:5])[0]
    return buf[:1], buf[5:1 + n]


def error_fields(body):
    out = {}
    for part in body.split(b"\0"):
        if part:
            out[chr(part[0])] = part[1:].decode(errors="replace")
    return out


class AuthQueryTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.info = i = pg_info()
        os.environ["WIREPOOL_TEST_PG_PASSWORD"] = i["password"]
        os.environ["WIREPOOL_TEST_AQ_PASSWORD"] = LOOKUP_PASSWORD
        os.environ["WIREPOOL_TEST_AQ_WRONG"] = "not-the-password"
        cls.superuser(
            f"DROP ROLE IF EXISTS {LOOKUP}", f"CREATE ROLE {LOOKUP} LOGIN SUPERUSER PASSWORD "
            f"'{LOOKUP_PASSWORD}'",
            "DROP ROLE IF EXISTS aq_carol", "CREATE ROLE aq_carol LOGIN PASSWORD 'c4rol'",
            "DROP ROLE IF EXISTS aq_dave", "CREATE ROLE aq_dave LOGIN PASSWORD 'd4ve'",
            "DROP ROLE IF EXISTS aq_erin", "CREATE ROLE aq_erin LOGIN PASSWORD 'er1n'",
            "DROP ROLE IF EXISTS aq_many", "CREATE ROLE aq_many LOGIN PASSWORD 'm4ny'",
            "DROP ROLE IF EXISTS aq_yaml", "CREATE ROLE aq_yaml LOGIN PASSWORD 'backend-side'",
            "DROP ROLE IF EXISTS aq_md5",
            "SET password_encryption = 'md5'; CREATE ROLE aq_md5 LOGIN PASSWORD 'md5pw'")
        databases = (
            entry(i, "aq", "        auth_negative_ttl: 60s\n") +
            entry(i, "aq_two", "        auth_query: \"SELECT usename, passwd FROM pg_shadow "
                  "WHERE usename = $1 UNION ALL SELECT usename, passwd FROM pg_shadow WHERE "
                  "usename = $1\"\n") +
            entry(i, "aq_null", "        auth_query: \"SELECT $1::text, NULL::text\"\n") +
            entry(i, "aq_err", "        auth_query: \"SELECT usename, passwd FROM no_such_table "
                  "WHERE usename = $1\"\n") +
            entry(i, "aq_slow", "        auth_query: \"SELECT usename, passwd FROM pg_shadow, "
                  "pg_sleep(5) WHERE usename = $1\"\n        auth_query_timeout: 1s\n") +
            entry(i, "aq_down").replace("WIREPOOL_TEST_AQ_PASSWORD", "WIREPOOL_TEST_AQ_WRONG") +
            """
      - name: app
        driver: sqlite
        connection: app.db
        pool: { mode: transaction, max: 2 }
""")
        cls.wp = Wirepool(databases, users="- { name: alice, password: wonderland, admin: true }\n"
                                "- { name: aq_yaml, password: from-yaml }",
                          server="login_failure_burst: 100000", name="authq",
                          tls="{ generate: true }", tds=True).start()

    @classmethod
    def tearDownClass(cls):
        cls.wp.stop()
        cls.wp.cleanup()
        cls.superuser(*(f"DROP ROLE IF EXISTS {r}" for r in
                        ("aq_carol", "aq_dave", "aq_erin", "aq_many", "aq_md5", "aq_yaml",
                         LOOKUP)))

    @classmethod
    def superuser(cls, *statements):
        for sql in statements:
            subprocess.run([PSQL, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h",
                            cls.info["socket_dir"], "-p", str(cls.info["port"]), "-U",
                            cls.info["superuser"], "-d", "postgres", "-c", sql],
                           check=True, capture_output=True, timeout=60)

    def dsn(self, user, password, database="aq"):
        return f"host=127.0.0.1 port={self.wp.port} user={user} password={password} dbname={database}"

    def refused(self, user, password, database="aq"):
        """(SQLSTATE, message) of a refused psycopg2 login."""
        with self.assertRaises(psycopg2.OperationalError) as ctx:
            psycopg2.connect(self.dsn(user, password, database), connect_timeout=15)
        text = str(ctx.exception)
        for code in ("28P01", "28000", "08006", "08P01"):
            if code in text or (ctx.exception.pgcode == code):
                return code, text
        # libpq does not hand connection-time SQLSTATEs to psycopg2: use the raw login.
        return None, text

    def raw_refusal(self, user, password, database="aq"):
        """The ErrorResponse fields of a refused login, done by hand."""
        try:
            raw_login(self.wp.port, user=user, password=password, database=database).close()
        except AssertionError as e:
            text = str(e)
            if "login refused: " in text:
                body = eval(text.split("login refused: ", 1)[1])  # the bytes' repr
                return error_fields(body)
            raise
        self.fail(f"{user!r} logged in with {password!r}")

    def test_a_backend_role_logs_in_with_psql_psycopg2_and_psycopg3(self):
        r = psql(f"postgresql://aq_carol:c4rol@127.0.0.1:{self.wp.port}/aq", "-c",
                 "SELECT current_user")
        self.assertEqual(r.stdout.strip(), self.info["user"])  # the entry's fixed role
        with psycopg2.connect(self.dsn("aq_carol", "c4rol")) as c:
            cur = c.cursor()
            cur.execute("SELECT 1 + 1")
            self.assertEqual(cur.fetchone(), (2,))
        with psycopg.connect(self.dsn("aq_dave", "d4ve")) as c:
            self.assertEqual(c.execute("SELECT %s::int * 2", (21,)).fetchone(), (42,))
        pools = psql(self.dsn("alice", "wonderland", "wirepool"), "-F", "|", "-c",
                     "SHOW POOLS").stdout.splitlines()
        self.assertTrue(any(line.startswith("aq|aq_carol|") for line in pools), pools)
        self.assertTrue(any(line.startswith("aq|aq_dave|") for line in pools), pools)
        users = psql(self.dsn("alice", "wonderland", "wirepool"), "-F", "|", "-c",
                     "SHOW USERS").stdout.splitlines()
        self.assertIn("aq_carol||no|aq", users)

    def tds(self, user, password, database="aq"):
        """tedious 19 (Node 20) logs in over TDS 8.0 and runs SELECT 7."""
        if not os.path.isdir(os.path.join(NODE_PATH, "tedious")):
            self.fail(f"tedious is not installed in {NODE_PATH} (make test installs it)")
        cfg = dict(port=self.wp.tds_port, ca=self.wp.certificate(), user=user, password=password,
                   database=database, lib="tedious19", encrypt="strict", backend="postgresql")
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "node", "tds.js")
        return subprocess.run([shutil.which("node"), script, "connect_only", json.dumps(cfg)],
                              capture_output=True, text=True, timeout=120,
                              env=dict(os.environ, NODE_PATH=NODE_PATH))

    def test_a_backend_role_logs_in_over_tds_and_a_wrong_password_does_not(self):
        r = self.tds("aq_carol", "c4rol")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr + self.wp.log()[-3000:])
        for user, password in (("aq_carol", "wrong"), ("aq_md5", "md5pw"), ("aq_none", "x")):
            r = self.tds(user, password)
            self.assertNotEqual(r.returncode, 0, user)
            self.assertIn(f"Login failed for user '{user}'", r.stderr, user)
        r = self.tds("aq_carol", "c4rol", "aq_down")
        self.assertIn("wirepool cannot look up the user", r.stderr)

    def test_only_the_database_whose_auth_query_found_the_user(self):
        fields = self.raw_refusal("aq_carol", "c4rol", database="app")
        self.assertEqual(fields["C"], "28P01")

    def test_a_yaml_user_of_the_same_name_wins(self):
        with psycopg2.connect(self.dsn("aq_yaml", "from-yaml")) as c:
            c.cursor().execute("SELECT 1")
        self.assertEqual(self.raw_refusal("aq_yaml", "backend-side")["C"], "28P01")
        self.assertNotIn('"aq_yaml"', "\n".join(
            line for line in self.wp.log().splitlines() if "auth_query" in line))

    def test_unknown_wrong_password_and_md5_get_the_same_answer(self):
        line = 'user "aq_md5" cannot log in through wirepool'
        logged_before = self.wp.log().count(line)
        for user in ("aq_nobody", "aq_md5"):
            r = psql(f"postgresql://{user}:x@127.0.0.1:{self.wp.port}/aq", "-c", "SELECT 1",
                     check=False)
            self.assertIn(f'password authentication failed for user "{user}"', r.stderr)
        answers = {}
        for user, password in (("aq_nobody", "x"), ("aq_carol", "wrong"), ("aq_md5", "md5pw")):
            f = self.raw_refusal(user, password)
            answers[user] = (f["S"], f["C"], f["M"].replace(user, "USER"))
        self.assertEqual(len(set(answers.values())), 1, answers)
        self.assertEqual(answers["aq_nobody"][1], "28P01")
        _, real = server_first(self.wp.port, "aq_carol", "aq")
        for name in ("aq_nobody", "aq_md5"):
            _, iterations = server_first(self.wp.port, name, "aq")
            self.assertEqual(iterations, real, name)
        self.raw_refusal("aq_md5", "md5pw")  # twice: logged once (cached)
        log = self.wp.log()
        # Three refusals here, one lookup (or none: cached by an earlier test).
        self.assertLessEqual(log.count(line) - logged_before, 1, log[-3000:])
        self.assertIn("md5 hash", log)

    def test_unknown_and_wrong_password_are_answered_after_the_same_delay(self):
        def took(user, password):
            t0 = time.monotonic()
            self.raw_refusal(user, password)
            return time.monotonic() - t0

        took("aq_carol", "warm-the-cache")
        took("aq_timing_nobody", "warm-the-cache")
        wrong, unknown = [], []
        for _ in range(5):  # interleaved, so that load on the machine falls on both
            wrong.append(took("aq_carol", "wrong"))
            unknown.append(took("aq_timing_nobody", "wrong"))
        wrong, unknown = sorted(wrong)[2], sorted(unknown)[2]  # medians
        self.assertGreaterEqual(min(wrong, unknown), 0.24)
        self.assertLess(abs(wrong - unknown), 0.05, (wrong, unknown))

    def test_an_unknown_name_shows_the_same_salt_after_restart_and_reload(self):
        before = server_first(self.wp.port, "aq_ghost", "aq")
        self.assertEqual(server_first(self.wp.port, "aq_ghost", "aq"), before)
        self.assertNotEqual(server_first(self.wp.port, "aq_ghost2", "aq")[0], before[0])
        self.wp.proc.send_signal(signal.SIGHUP)
        deadline = time.time() + 10
        while "configuration reloaded" not in self.wp.log() and time.time() < deadline:
            time.sleep(0.05)
        self.assertEqual(server_first(self.wp.port, "aq_ghost", "aq"), before)
        self.wp.stop()
        self.wp.start()
        self.assertEqual(server_first(self.wp.port, "aq_ghost", "aq"), before)

    def test_concurrent_logins_of_one_name_run_one_lookup(self):
        errors = []

        def login():
            try:
                psycopg2.connect(self.dsn("aq_many", "m4ny"), connect_timeout=15).close()
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)

        threads = [threading.Thread(target=login) for _ in range(20)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        self.assertEqual(errors, [])
        self.assertEqual(self.wp.log().count('auth_query found user "aq_many"'), 1)

    def test_malformed_names_get_a_clear_error_and_no_lookup(self):
        for name in (b"aq\0carol", b"aq\ncarol", b"a" * 10000, b"aq\xff\xfecarol"):
            with socket.create_connection(("127.0.0.1", self.wp.port), timeout=10) as s:
                s.sendall(startup_packet(name, "aq"))
                if len(name) >= 10000:
                    # Over the startup packet's 10,000 bytes: closed without a
                    # word, as PostgreSQL does, and logged.
                    self.assertEqual(s.recv(100), b"")
                    continue
                t, body = read_message(s)
                if t == b"R":  # the exchange runs as for any unknown name
                    self.assertEqual(struct.unpack("!I", body[:4])[0], 10)
                    continue
                self.assertEqual(t, b"E", body)
                self.assertIn(error_fields(body)["C"], ("08P01", "28000", "28P01"))
        log = self.wp.log()
        self.assertIn("bad startup packet: invalid length of startup packet", log)
        self.assertNotIn('no role "aq\ncarol"', log)
        self.assertEqual(self.raw_refusal("aq\ncarol", "c4rol")["C"], "28P01")
        self.assertEqual(self.raw_refusal(b"aq\xffcarol", "c4rol")["C"], "28P01")
        with psycopg2.connect(self.dsn("aq_carol", "c4rol")) as c:  # still serving
            c.cursor().execute("SELECT 1")

    def test_two_rows_or_an_error_answer_28000(self):
        for database in ("aq_two", "aq_err"):
            f = self.raw_refusal("aq_carol", "c4rol", database)
            self.assertEqual(f["C"], "28000", (database, f))
            self.assertIn("auth_query failed", f["M"])
        log = self.wp.log()
        self.assertIn("auth_query returned 2 rows", log)
        self.assertIn("no_such_table", log)

    def test_null_passwd_is_a_wrong_password(self):
        self.assertEqual(self.raw_refusal("aq_carol", "c4rol", "aq_null")["C"], "28P01")
        self.assertIn("has no password (NULL)", self.wp.log())

    def test_a_slow_auth_query_answers_08006_at_its_timeout(self):
        t0 = time.monotonic()
        f = self.raw_refusal("aq_carol", "c4rol", "aq_slow")
        took = time.monotonic() - t0
        self.assertEqual(f["C"], "08006", f)
        self.assertLess(took, 3.5)
        self.assertGreaterEqual(took, 0.9)

    def test_the_auth_connection_down_answers_08006_and_serves_logged_in_clients(self):
        f = self.raw_refusal("aq_carol", "c4rol", "aq_down")
        self.assertEqual(f["C"], "08006", f)
        r = psql(f"postgresql://aq_carol:c4rol@127.0.0.1:{self.wp.port}/aq_down", "-c", "SELECT 1",
                 check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("the auth_user connection failed", r.stderr)
        with self.assertRaises(psycopg.OperationalError) as ctx:
            psycopg.connect(self.dsn("aq_carol", "c4rol", "aq_down"))
        self.assertIn("the auth_user connection failed", str(ctx.exception))
        logged_in = psycopg2.connect(self.dsn("aq_erin", "er1n"))
        logged_in.autocommit = True
        try:
            self.superuser(f"ALTER ROLE {LOOKUP} NOLOGIN",
                           "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                           f"WHERE usename = '{LOOKUP}'")
            f = self.raw_refusal("aq_uncached", "x")
            self.assertEqual(f["C"], "08006", f)
            cur = logged_in.cursor()
            cur.execute("SELECT 7")
            self.assertEqual(cur.fetchone(), (7,))
        finally:
            self.superuser(f"ALTER ROLE {LOOKUP} LOGIN")
            logged_in.close()
        self.assertIn("cannot connect as auth_user", self.wp.log())


if __name__ == "__main__":
    unittest.main()
