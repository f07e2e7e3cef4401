"""Backend faults, against a PostgreSQL 15 of this module's own (stopped and
started by the tests: tests/fixtures/pgserver.py).

Covers: a failed backend open reaches the client with the backend's own
SQLSTATE: 3D000 for an unknown database, 08001 for a port nobody listens on,
57P03 while the server shuts down (smart mode, a session still open); the
"cannot open backend" log line shows the connection string without its
password in every form the drivers accept (libpq `password = X`, `password=
'S3cret B'`, `password=S3cret\\ D`, tabs, a URI's user:password@; ODBC `PWD = X`
and `PWD={a}}b X}`); idle backends terminated by the server a moment after
their last use are not handed out: 5 of 5 clients get clean answers; a 10 s
outage with 32 clients makes a handful of connection attempts (back-off) and
log lines (one per 10 s with a count), every statement is answered from the
last failure meanwhile, and the clients are served again once the server is
back.
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import psycopg2

import wire
from harness import Wirepool, psql, raw_login

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures"))
import pgserver  # noqa: E402

SERVER = {}


def setUpModule():
    d = tempfile.mkdtemp(prefix="faults-pg-")
    os.rmdir(d)
    pgserver.start(d, False)
    with open(os.path.join(d, "info.json")) as f:
        SERVER.update(json.load(f))
    SERVER["dir"] = d
    os.environ["WIREPOOL_TEST_FAULTS_PASSWORD"] = SERVER["password"]


def tearDownModule():
    if SERVER:
        pgserver.stop(SERVER["dir"])


def pg_ctl(*args):
    data = os.path.join(SERVER["dir"], "data")
    return subprocess.run(pgserver.as_owner() + [f"{pgserver.BIN}/pg_ctl", "-D", data, *args],
                          capture_output=True, text=True, timeout=60)


def start_server():
    r = pg_ctl("-o", f"-p {SERVER['port']} -k {SERVER['dir']}", "-l",
               os.path.join(SERVER["dir"], "log"), "-w", "start")
    assert r.returncode == 0, r.stderr


def superuser(sql):
    return psql(f"host={SERVER['dir']} port={SERVER['port']} user=postgres dbname=postgres",
                "-At", "-c", sql)


def entry(name, pool="mode: transaction, max: 5", **conn):
    params = dict(host="127.0.0.1", port=SERVER["port"], user=SERVER["user"],
                  dbname=SERVER["database"])
    params.update(conn)
    connection = " ".join(f"{k}={v}" for k, v in params.items())
    return f"""
      - name: {name}
        driver: postgresql
        connection: "{connection}"
        password_env: WIREPOOL_TEST_FAULTS_PASSWORD
        pool: {{ {pool}, acquire_timeout: 5s }}
    """


def sqlstate_of(wp, database):
    """(SQLSTATE, text) of the error a login to `database` and a SELECT 1 get
    ((None, "served") without one): the login's ErrorResponse read raw, since
    libpq keeps no SQLSTATE for a refused connection."""
    try:
        s = raw_login(wp.port, database=database, timeout=20)
    except AssertionError as e:
        m = re.search(r"C([0-9A-Z]{5})\\x00", str(e))
        return (m.group(1) if m else None), str(e)
    try:
        s.sendall(wire.query("SELECT 1"))
        messages, _ = wire.Reader(s).until_ready()
        errors = [wire.fields(body) for t, body in messages if t == "E"]
        if errors:
            return errors[0].get("C"), errors[0].get("M", "")
        return None, "served"
    finally:
        s.close()


class FailedOpenTest(unittest.TestCase):
    """Failed opens keep the backend's SQLSTATE; their log lines keep no secret."""

    @classmethod
    def setUpClass(cls):
        cls.wp = Wirepool(databases=entry("nodb", dbname="no_such_database") +
                          entry("unreachable", port=1) + entry("fresh", pool="mode: session, max: 1"),
                          users="- { name: alice, password: wonderland }", name="faults-open")
        cls.wp.start()

    @classmethod
    def tearDownClass(cls):
        cls.wp.cleanup()

    def test_unknown_database_is_3d000(self):
        code, text = sqlstate_of(self.wp, "nodb")
        self.assertEqual(code, "3D000", text)
        self.assertIn('database "no_such_database" does not exist', text)

    def test_unreachable_is_08001(self):
        code, text = sqlstate_of(self.wp, "unreachable")
        self.assertEqual(code, "08001", text)

    def test_shutting_down_is_57p03(self):
        held = psycopg2.connect(host=SERVER["dir"], port=SERVER["port"], user="postgres",
                                dbname="postgres")
        try:
            r = pg_ctl("-m", "smart", "-W", "stop")  # waits for `held` to leave
            self.assertEqual(r.returncode, 0, r.stderr)
            time.sleep(0.5)
            code, text = sqlstate_of(self.wp, "fresh")
            self.assertEqual(code, "57P03", text)
        finally:
            held.close()
            deadline = time.time() + 30
            while os.path.exists(os.path.join(SERVER["dir"], "data", "postmaster.pid")):
                self.assertLess(time.time(), deadline)
                time.sleep(0.1)
            start_server()


class SecretsInLogsTest(unittest.TestCase):
    """Every form of an inline password is redacted by the driver's own parser."""

    FORMS = {
        "pg_spaces": ("postgresql", "host=127.0.0.1 port=1 user=u password = S3cretA"),
        "pg_quoted": ("postgresql", "host=127.0.0.1 port=1 user=u password= 'S3cret B'"),
        "pg_escaped": ("postgresql", "host=127.0.0.1 port=1 user=u password=S3cret\\\\ D"),
        "pg_tabs": ("postgresql", "host=127.0.0.1\\tport=1\\tpassword\\t=\\tS3cretE\\tuser=u"),
        "pg_uri": ("postgresql", "postgresql://u:S3cretF@127.0.0.1:1/db"),
        "odbc_spaces": ("odbc", "Driver={PostgreSQL Unicode};Server=127.0.0.1;Port=1;UID=u;"
                                "PWD = S3cretG"),
        "odbc_braces": ("odbc", "Driver={PostgreSQL Unicode};Server=127.0.0.1;Port=1;UID=u;"
                                "PWD={a}}b S3cretH}"),
    }

    def test_no_password_form_reaches_the_log(self):
        databases = "".join(f"""
          - name: {name}
            driver: {driver}
            connection: "{conn}"
            pool: {{ mode: transaction, max: 1, acquire_timeout: 5s }}
        """ for name, (driver, conn) in self.FORMS.items())
        wp = Wirepool(databases=databases, users="- { name: alice, password: wonderland }",
                      name="faults-secrets")
        wp.start()
        try:
            for name in self.FORMS:
                code, text = sqlstate_of(wp, name)
                self.assertIsNotNone(code, name)
                self.assertNotIn("S3cret", text)
            log = wp.log()
            for name in self.FORMS:
                self.assertIn(f"database {name}: cannot open backend", log)
            self.assertIn("password=***", log)
            self.assertIn("PWD", log)
            self.assertNotIn("S3cret", log, log[-4000:])
        finally:
            wp.cleanup()


class DeadIdleBackendTest(unittest.TestCase):
    """Backends the server terminated right after their last use."""

    def test_terminated_idle_backends_are_not_handed_out(self):
        wp = Wirepool(databases=entry("pg", pool="mode: transaction, max: 5, pipeline: false"),
                      users="- { name: alice, password: wonderland }",
                      name="faults-dead")
        wp.start()
        try:
            clients = [psycopg2.connect(wp.kv(database="pg")) for _ in range(5)]
            for c in clients:
                c.autocommit = True
            # Five backends busy at once, then idle in the pool.
            threads = [threading.Thread(target=lambda c=c: c.cursor().execute(
                "SELECT pg_sleep(0.3)")) for c in clients]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            n = superuser("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                          f"WHERE usename = '{SERVER['user']}'").stdout.strip()
            self.assertEqual(n, "5")
            time.sleep(0.2)  # the server's FATAL and EOF have arrived
            answers = []
            for c in clients:
                try:
                    cur = c.cursor()
                    cur.execute("SELECT 1")
                    answers.append(cur.fetchone()[0])
                except psycopg2.Error as e:
                    answers.append(f"{e.pgcode}: {e}")
            self.assertEqual(answers, [1] * 5)
            for c in clients:
                c.close()
        finally:
            wp.cleanup()


class OutageTest(unittest.TestCase):
    """The server stops for 10 s under 32 clients, then comes back."""

    def test_outage_backs_off_and_recovers(self):
        wp = Wirepool(databases=entry("pg", pool="mode: transaction, max: 8"),
                      users="- { name: alice, password: wonderland }", name="faults-outage",
                      http=True)
        wp.start()
        stop = threading.Event()
        errors = []
        served = [0]
        lock = threading.Lock()

        def client():
            c = None
            while not stop.is_set():
                try:
                    if c is None or c.closed:
                        c = psycopg2.connect(wp.kv(database="pg"), connect_timeout=10)
                        c.autocommit = True
                    cur = c.cursor()
                    cur.execute("SELECT 1")
                    cur.fetchone()
                    with lock:
                        served[0] += 1
                except psycopg2.Error as e:
                    with lock:
                        errors.append(e.pgcode)
                time.sleep(0.01)
            if c is not None:
                c.close()

        threads = [threading.Thread(target=client) for _ in range(32)]
        try:
            for t in threads:
                t.start()
            time.sleep(1)
            self.assertGreater(served[0], 0)

            def failures():
                return sum(v for k, v in wp.metrics().items()
                           if k.startswith("wirepool_backend_connect_failures_total"))

            attempts0, lines0, errors0 = failures(), wp.log().count("cannot open backend"), len(errors)
            r = pg_ctl("-m", "fast", "-w", "stop")
            self.assertEqual(r.returncode, 0, r.stderr)
            time.sleep(10)
            attempts = failures() - attempts0
            lines = wp.log().count("cannot open backend") - lines0
            answered = len(errors) - errors0
            start_server()
            sys.stderr.write(f"\n10 s outage (and the stop), 32 clients: {attempts:.0f} connection attempts, "
                             f"{lines} 'cannot open backend' lines, {answered} errors answered\n")
            # Thousands without a back-off (one attempt per statement).
            self.assertLessEqual(attempts, 40)
            self.assertLessEqual(lines, 5)
            self.assertGreater(answered, 1000)  # clients were answered, not kept waiting
            before = served[0]
            deadline = time.time() + 20
            while served[0] < before + 100:
                self.assertLess(time.time(), deadline, "not served again after the outage")
                time.sleep(0.1)
        finally:
            stop.set()
            for t in threads:
                t.join(30)
            wp.cleanup()


if __name__ == "__main__":
    unittest.main()
