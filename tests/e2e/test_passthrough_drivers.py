"""auth.mode passthrough on the drivers besides postgresql (issue 29): the
mysql driver and the odbc driver (MariaDB Connector/ODBC) against the
throwaway MariaDB of the CTest fixture `mariadb`, and the tds driver in front
of a second wirepool whose passthrough database is the fixture `pg`.

Covers: two MariaDB users with different GRANTs each see only what theirs
allow (a definer's view keeps each to its own rows), in transaction and
session mode, from psycopg2 and psql, over ODBC, and with tedious over TDS
(LOGIN7's password is the backend's); a password holding the ODBC
connection string's own characters (; } { =) logs in over ODBC and cannot
add a key; a wrong password or an unknown user gets 28P01 (18456 over TDS)
with the backend's SQLSTATE in the log; the backend down gets 08006; bad
input (a user name or password with a newline, invalid UTF-8, 10,000
bytes; a password with NUL) gets a clear error and no secret reaches the
log; a refused name with a newline and ESC leaves neither in the log. On the
fixture `pg` (postgresql passthrough): 3,000 failed logins with distinct
names leave no pool (SHOW POOLS, watched while they run) and bounded memory
(RSS before and after); a reload that switches a database from fixed to
passthrough and back: clients logged in before keep their session and role,
new logins get the new mode and never a backend of the old pool. The tds
driver chained: psycopg2 -> wirepool (tds driver, passthrough) -> wirepool
(TDS front end, passthrough) -> PostgreSQL: each role sees its own rows
under row-level security.
"""

import os
import re
import signal
import subprocess
import threading
import time
import unittest

import psycopg2

import test_passthrough as tp
from harness import (Wirepool, WirepoolTestCase, admin_rows, fetch_rows, free_port,
                     mariadb_odbc_entry, sanitized, tedious_query, tls_connect, tls_login_answer)
from test_mysql import mariadb_info

ANN = ("mpt_ann", "ann-Maria-4f1c")
BEN = ("mpt_ben", "ben-Maria-9d2e")
ODD = ("mpt_odd", "o;d}d{=Pw-77")  # the ODBC grammar's own characters
WRONG = "Wrong-Maria-3310"
SECRETS = (ANN[1], BEN[1], ODD[1], WRONG)


def maria_root(info, *sql):
    for statement in sql:
        subprocess.run(["mariadb", "--no-defaults", "-uroot", "--socket=" + info["socket"],
                        "-e", statement], check=True, capture_output=True, timeout=30)


def make_users(info):
    db = info["database"]
    stmts = []
    for user, password in (ANN, BEN, ODD):
        stmts += [f"DROP USER IF EXISTS '{user}'@'127.0.0.1'",
                  f"CREATE USER '{user}'@'127.0.0.1' IDENTIFIED BY '{password}'"]
    stmts += [
        f"DROP TABLE IF EXISTS {db}.mpt_all", f"DROP TABLE IF EXISTS {db}.mpt_secret",
        f"DROP VIEW IF EXISTS {db}.mpt_notes",
        f"CREATE TABLE {db}.mpt_all (owner VARCHAR(64), body VARCHAR(64))",
        f"INSERT INTO {db}.mpt_all VALUES ('mpt_ann', 'ann 1'), ('mpt_ann', 'ann 2'), "
        "('mpt_ben', 'ben 1')",
        # MariaDB has no row-level security: a definer's view filters on the login.
        f"CREATE SQL SECURITY DEFINER VIEW {db}.mpt_notes AS SELECT body FROM {db}.mpt_all "
        "WHERE owner = SUBSTRING_INDEX(USER(), '@', 1)",
        f"CREATE TABLE {db}.mpt_secret (v VARCHAR(64))",
        f"INSERT INTO {db}.mpt_secret VALUES ('ann only')",
        f"GRANT SELECT ON {db}.mpt_notes TO 'mpt_ann'@'127.0.0.1', 'mpt_ben'@'127.0.0.1', "
        "'mpt_odd'@'127.0.0.1'",
        f"GRANT SELECT ON {db}.mpt_secret TO 'mpt_ann'@'127.0.0.1'",
    ]
    maria_root(info, *stmts)


def mysql_entry(info, name, mode, port=None):
    return tp.passthrough_entry(info, name, mode, port, "mysql", "WIREPOOL_TEST_MARIADB_PASSWORD")


def odbc_entry(info, name):
    return mariadb_odbc_entry(name, info, "WIREPOOL_TEST_MARIADB_PASSWORD",
                              more="auth: { mode: passthrough }")


def tds_query(port, ca, user, password, database, sql):
    return tedious_query(port, ca, user, password, database, sql, "mysql")


class MariaPassthroughTest(WirepoolTestCase):
    users = "- { name: admin, password: console, admin: true }"
    tls = "{ generate: true }"
    tds = True
    # The 3,000 failed logins run at full speed.
    server = "login_failure_burst: 1000000"

    secrets = SECRETS

    def login_answer(self, user, password, database="mpt"):
        return tls_login_answer(self.wp.port, self.wp.certificate(), user, password, database)

    @classmethod
    def setUpClass(cls):
        cls.info = mariadb_info()
        os.environ["WIREPOOL_TEST_MARIADB_PASSWORD"] = cls.info["password"]
        make_users(cls.info)
        cls.databases = (mysql_entry(cls.info, "mpt", "transaction") +
                         mysql_entry(cls.info, "mptsession", "session") +
                         mysql_entry(cls.info, "mptdown", "transaction", port=free_port()) +
                         odbc_entry(cls.info, "mptodbc"))
        super().setUpClass()

    def connect(self, user, password, database="mpt"):
        return self.connect_tls(user, password, database)

    def assert_still_serving(self, database="mpt"):
        self.assertEqual(self.rows(self.connect(*ANN, database), "SELECT body FROM mpt_notes "
                                   "ORDER BY body"), [("ann 1",), ("ann 2",)])

    def test_each_user_sees_what_its_grants_allow(self):
        who = "SELECT SUBSTRING_INDEX(USER(), '@', 1), body FROM mpt_notes ORDER BY body"
        for database in ("mpt", "mptsession", "mptodbc"):
            with self.subTest(database=database):
                ann = self.connect(*ANN, database)
                ben = self.connect(*BEN, database)
                for _ in range(3):  # interleaved: the pools never mix them up
                    self.assertEqual(self.rows(ann, who),
                                     [("mpt_ann", "ann 1"), ("mpt_ann", "ann 2")])
                    self.assertEqual(self.rows(ben, who), [("mpt_ben", "ben 1")])
                self.assertEqual(self.rows(ann, "SELECT v FROM mpt_secret"), [("ann only",)])
                with self.assertRaises(psycopg2.Error) as e:
                    self.rows(ben, "SELECT v FROM mpt_secret")
                self.assertEqual(e.exception.pgcode, "42501", e.exception)

    def test_psql_sees_its_own_rows(self):
        out = tp.psql(f"postgresql://{BEN[0]}:{BEN[1]}@127.0.0.1:{self.wp.port}/mpt"
                      "?sslmode=require", "-At", "-c", "SELECT body FROM mpt_notes").stdout
        self.assertEqual(out.strip(), "ben 1")

    def test_tds_clients_log_in_with_their_own_password(self):
        q = lambda user, password, sql: tds_query(  # noqa: E731
            self.wp.tds_port, self.wp.certificate(), user, password, "mpt", sql)
        self.assertEqual(q(*ANN, "SELECT body FROM mpt_notes ORDER BY body"),
                         ("rows", [["ann 1"], ["ann 2"]]))
        self.assertEqual(q(*BEN, "SELECT body FROM mpt_notes"), ("rows", [["ben 1"]]))
        kind, error = q(*BEN, "SELECT v FROM mpt_secret")
        self.assertEqual(kind, "error")
        self.assertIn("denied", error["message"])
        kind, error = q(BEN[0], WRONG, "SELECT 1")
        self.assertEqual((kind, error["code"]), ("error", "ELOGIN"), error)
        self.assertIn("Login failed for user 'mpt_ben'", error["message"])
        self.assertIn('authentication failed for user "mpt_ben": the backend refused the login '
                      "(28P01)", self.wp.log())

    def test_odbc_grammar_characters_in_a_password(self):
        # Over ODBC the password is braced with '}' doubled; the mysql driver hands it as is.
        for database in ("mptodbc", "mpt"):
            with self.subTest(database=database):
                c = self.connect(*ODD, database)
                self.assertEqual(self.rows(c, "SELECT SUBSTRING_INDEX(USER(), '@', 1)"),
                                 [("mpt_odd",)])
        # A user name that would end the braces and add a key is one name to the server.
        state, _ = self.login_answer(b"x};DSN=evil;y={", ODD[1].encode(), database="mptodbc")
        self.assertEqual(state, "28P01")

    def test_the_backend_refusing_the_login_gets_28P01(self):
        for database in ("mpt", "mptodbc"):
            for user, password in ((ANN[0], WRONG), ("mpt_nobody", WRONG)):
                with self.subTest(database=database, user=user):
                    state, message = self.login_answer(user.encode(), password.encode(),
                                                       database=database)
                    self.assertEqual(state, "28P01")
                    self.assertEqual(message, f'password authentication failed for user "{user}"')
        self.assertIn('authentication failed for user "mpt_nobody": the backend refused the '
                      "login (28P01)", self.wp.log())
        self.assert_still_serving()
        self.assert_still_serving("mptodbc")

    def test_backend_down_gets_08006(self):
        state, message = self.login_answer(ANN[0].encode(), ANN[1].encode(), database="mptdown")
        self.assertEqual(state, "08006")
        self.assertIn('backend of database "mptdown" is unavailable', message)
        self.assert_still_serving()

    def test_bad_input_gets_clear_errors(self):
        for database in ("mpt", "mptodbc"):
            for password in (b"x" * 10000, b"\xff\xfe", b"ann\npw", ANN[1].encode() + b"\0tail"):
                with self.subTest(database=database, password=password[:12]):
                    state, message = self.login_answer(ANN[0].encode(), password,
                                                       database=database)
                    self.assertEqual(state, "28P01")
                    self.assertEqual(message, 'password authentication failed for user "mpt_ann"')
            for user, why in ((b"mpt_ann\nforged log line", "control character"),
                              (b"mpt_\xff\xfe", "not valid UTF-8"), (b"u" * 100, "longer than 63")):
                with self.subTest(database=database, user=user[:12]):
                    answer = self.login_answer(user, ANN[1].encode(), database=database)
                    self.assertEqual(answer[0], "28000")
                    self.assertIn(why, answer[1])
            self.assertEqual(self.login_answer(b"u" * 10000, ANN[1].encode(), database=database),
                             "closed")
        log = self.wp.log()
        self.assertIn("the password holds a NUL byte", log)
        self.assertIn("the password is longer than 1024 bytes", log)
        self.assertNotIn("\nforged log line", log)
        self.assert_still_serving()
        self.assert_still_serving("mptodbc")

    def test_refused_names_never_reach_the_log_raw(self):
        user = b"mpt_ann\nINFO forged\x1b[31m"
        database = "mpt"
        self.assertEqual(self.login_answer(user, ANN[1].encode(), database=database)[0], "28000")
        self.assertEqual(self.login_answer(b"mpt_\x1b]0;t\x07x", WRONG.encode())[0], "28000")
        with open(self.wp.log_path, "rb") as f:
            raw = f.read()
        self.assertNotIn(b"\x1b", raw)
        self.assertNotIn(b"\nINFO forged", raw)
        # The refusal says why without the name (test_logs: names escaped in fixed mode).
        self.assertIn(b'refused: the user name holds a control character (database "mpt"', raw)


class FailedLoginsLeaveNothingTest(WirepoolTestCase):
    """10,000 failed logins with distinct names against a postgresql
    passthrough database (the driver main already took it for)."""

    users = "- { name: admin, password: console, admin: true }"
    tls = "{ generate: true }"
    # The failed logins run at full speed.
    server = "login_failure_burst: 1000000"

    def login_answer(self, user, password, database="rls"):
        return tls_login_answer(self.wp.port, self.wp.certificate(), user, password, database)

    @classmethod
    def setUpClass(cls):
        cls.info = tp.pg_info()
        os.environ["WIREPOOL_TEST_PG_PASSWORD"] = cls.info["password"]
        tp.make_roles(cls.info)
        cls.databases = tp.passthrough_entry(cls.info, "rls", "transaction")
        super().setUpClass()

    def assert_still_serving(self):
        c = tls_connect(self.wp.port, *tp.ANN, "rls")
        try:
            self.assertEqual(fetch_rows(c, "SELECT current_user"), [(tp.ANN[0],)])
        finally:
            c.close()

    def user_pools(self, database):
        return [r["user"] for r in admin_rows(self.wp, "SHOW POOLS", "admin", "console")
                if r["database"] == database]

    def test_failed_logins_leave_no_pool_and_bounded_memory(self):
        self.assert_still_serving()
        self.assertEqual(set(self.user_pools("rls")) - {tp.ANN[0]}, set())
        # Warm up the allocator and the throttle table's first entries.
        for i in range(200):
            self.login_answer(f"pt_warm{i}".encode(), b"Wrong-7731")
        rss_before = self.wp.rss_kib()
        seen, stop = set(), threading.Event()

        def watch():
            while not stop.is_set():
                seen.update(u for u in self.user_pools("rls") if u.startswith("pt_x"))
                time.sleep(0.05)

        watcher = threading.Thread(target=watch)
        watcher.start()
        n, workers = 3000, 96
        got = []  # list.append is atomic across threads

        def worker(k):
            for i in range(k, n, workers):
                a = self.login_answer(f"pt_x{i}".encode(), b"Wrong-7731")
                got.append(a if isinstance(a, str) else a[0])

        t0 = time.monotonic()
        threads = [threading.Thread(target=worker, args=(k,)) for k in range(workers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.monotonic() - t0
        stop.set()
        watcher.join()
        rss_after = self.wp.rss_kib()
        answers = {k: got.count(k) for k in set(got)}
        print(f"\n{n} failed logins in {elapsed:.1f} s: {answers}; pools seen for them: "
              f"{len(seen)}; RSS {rss_before} KiB -> {rss_after} KiB")
        self.assertEqual(answers, {"28P01": n})
        self.assertEqual(seen, set(), f"{len(seen)} pools made for refused names")
        self.assertEqual([u for u in self.user_pools("rls") if u.startswith(("pt_x", "pt_warm"))],
                         [])
        # The throttle's table keeps about 150 bytes a name (bounded by
        # login_throttle_entries); nothing else may grow with the names.
        # AddressSanitizer's allocator keeps freed memory: RSS says nothing there.
        if not sanitized():
            self.assertLess(rss_after - rss_before, 16 * 1024)
        self.assert_still_serving()


class ReloadAuthModeTest(unittest.TestCase):
    """A reload that switches a postgresql database between fixed and passthrough."""

    @classmethod
    def setUpClass(cls):
        cls.info = tp.pg_info()
        os.environ["WIREPOOL_TEST_PG_PASSWORD"] = cls.info["password"]
        tp.make_roles(cls.info)
        entry = tp.passthrough_entry(cls.info, "flip", "transaction").replace(
            "mode: passthrough", "mode: fixed")
        # pt_ann is a wirepool user too, with the same password as on PostgreSQL.
        user = f"- {{ name: {tp.ANN[0]}, password: {tp.ANN[1]} }}"
        cls.wp = Wirepool(databases=entry, users=user, tls="{ generate: true }",
                          name="ReloadAuthMode").start()

    @classmethod
    def tearDownClass(cls):
        code = cls.wp.stop()
        log = cls.wp.log()
        cls.wp.cleanup()
        if code not in (0, None):
            raise AssertionError(f"wirepool exited with {code}:\n{log[-4000:]}")

    def connect(self, user, password):
        c = psycopg2.connect(host="127.0.0.1", port=self.wp.port, user=user, password=password,
                             dbname="flip", sslmode="require", connect_timeout=20)
        c.autocommit = True
        self.addCleanup(c.close)
        return c

    def role(self, conn):
        cur = conn.cursor()
        cur.execute("SELECT current_user")
        return cur.fetchone()[0]

    def switch(self, old, new):
        with open(self.wp.config_path) as f:
            text = f.read()
        self.assertIn(f"auth: {{ mode: {old} }}", text)
        with open(self.wp.config_path, "w") as f:
            f.write(text.replace(f"auth: {{ mode: {old} }}", f"auth: {{ mode: {new} }}"))
        before = self.wp.log().count("configuration reloaded")
        self.wp.proc.send_signal(signal.SIGHUP)
        deadline = time.time() + 15
        while self.wp.log().count("configuration reloaded") == before:
            self.assertLess(time.time(), deadline, self.wp.log()[-2000:])
            time.sleep(0.05)

    def test_fixed_to_passthrough_and_back(self):
        fixed_role = self.info["user"]
        fixed = self.connect(*tp.ANN)  # the YAML user: the connection's role
        self.assertEqual(self.role(fixed), fixed_role)
        self.switch("fixed", "passthrough")
        # Logged in before: keeps its session on the old pool, as the old role.
        self.assertEqual(self.role(fixed), fixed_role)
        # New logins: the client's own role, never a backend of the old pool.
        own = self.connect(*tp.ANN)
        for _ in range(3):
            self.assertEqual(self.role(own), tp.ANN[0])
        self.assertIn('its pool for user "pt_ann" takes no new clients', self.wp.log())
        self.switch("passthrough", "fixed")
        self.assertEqual(self.role(own), tp.ANN[0])  # still its own role
        again = self.connect(*tp.ANN)
        self.assertEqual(self.role(again), fixed_role)
        # A role only PostgreSQL knows is no wirepool user any more.
        with self.assertRaises(psycopg2.OperationalError) as e:
            self.connect(*tp.BEN)
        self.assertIn("password authentication failed", str(e.exception))
        self.assertEqual(self.role(fixed), fixed_role)


def pg_entry_tds(port, cert, name="app"):
    return f"""
      - name: {name}
        driver: tds
        connection: "host=127.0.0.1;port={port};user={tp.ANN[0]};database=rls"
        password_env: WIREPOOL_TEST_CHAIN_PASSWORD
        auth: {{ mode: passthrough }}
        pool: {{ mode: transaction, max: 2, acquire_timeout: 20s }}
        tls: {{ ca: {cert} }}
    """


class TdsDriverChainTest(unittest.TestCase):
    """psycopg2 -> front (tds driver, passthrough) -> back (TDS front end,
    postgresql passthrough) -> PostgreSQL."""

    @classmethod
    def setUpClass(cls):
        info = tp.pg_info()
        os.environ["WIREPOOL_TEST_PG_PASSWORD"] = info["password"]
        os.environ["WIREPOOL_TEST_CHAIN_PASSWORD"] = tp.ANN[1]
        tp.make_roles(info)
        cls.back = Wirepool(databases=tp.passthrough_entry(info, "rls", "transaction"),
                            users="- { name: admin, password: console, admin: true }",
                            tls="{ generate: true }", tds=True, name="chain-back").start()
        cert = cls.back.certificate()
        cls.front = Wirepool(databases=pg_entry_tds(cls.back.tds_port, cert) +
                             pg_entry_tds(free_port(), cert, name="down"),
                             users="- { name: admin, password: console, admin: true }",
                             tls="{ generate: true }", name="chain-front").start()

    @classmethod
    def tearDownClass(cls):
        cls.front.cleanup()
        cls.back.cleanup()

    def connect(self, user, password, database="app"):
        c = tls_connect(self.front.port, user, password, database, timeout=30)
        self.addCleanup(c.close)
        return c

    def rows(self, conn, sql):
        return fetch_rows(conn, sql)

    def test_each_role_sees_its_own_rows_through_two_wirepools(self):
        ann = self.connect(*tp.ANN)
        ben = self.connect(*tp.BEN)
        for _ in range(3):
            self.assertEqual(self.rows(ann, "SELECT current_user, body FROM pt_notes "
                                            "ORDER BY body"),
                             [("pt_ann", "ann 1"), ("pt_ann", "ann 2")])
            self.assertEqual(self.rows(ben, "SELECT current_user, body FROM pt_notes"),
                             [("pt_ben", "ben 1")])
        with self.assertRaises(psycopg2.Error):
            self.rows(ben, "SELECT v FROM pt_secret")

    def test_refusals_through_the_chain(self):
        for user in (tp.ANN[0], "pt_nobody"):
            with self.subTest(user=user):
                with self.assertRaises(psycopg2.OperationalError) as e:
                    self.connect(user, "Wrong-7731")
                self.assertIn(f'password authentication failed for user "{user}"',
                              str(e.exception))
        # The front saw the back's 18456 (28000 from the TDS driver).
        self.assertIn('authentication failed for user "pt_nobody": the backend refused the login '
                      "(28000)", self.front.log())
        self.assertIn('authentication failed for user "pt_nobody": the backend refused the login '
                      "(28P01)", self.back.log())
        with self.assertRaises(psycopg2.OperationalError) as e:
            self.connect(*tp.ANN, database="down")
        self.assertIn('backend of database "down" is unavailable', str(e.exception))
        for log in (self.front.log(), self.back.log()):
            for secret in tp.SECRETS:
                self.assertNotIn(secret, log)
        self.assertEqual(self.rows(self.connect(*tp.ANN), "SELECT current_user"), [("pt_ann",)])


if __name__ == "__main__":
    unittest.main()
