"""One wirepool user never sees or touches another's backend session
(issue 29), against the throwaway PostgreSQL of the CTest fixture `pg`.

Covers: two users of one database never share a backend session (the
backend pids each sees, and SHOW SERVERS / SHOW POOLS rows per user); the
statement hijack — mallory reads the names of the statements prepared on the
backend sessions she reaches (pg_prepared_statements), deallocates them and
prepares her own under those names, yet alice's next execution of her own
statement returns alice's result and writes nothing into mallory's table; a
session setting changed with set_config() inside a SELECT (search_path) does
not reach another user's transactions; a role set with SET ROLE or
set_config('role', …) follows its client to its next transactions and reaches
no other client of the same pool; a temporary table and a session advisory
lock do not outlive the transaction that made them (the backend is reset
before another client gets it); relayed statement names carry 64
random bits; with standard_conforming_strings off, a DEALLOCATE ALL hidden
between backslash-escaped literals is seen as a statement of its own (refused
with other statements, as DEALLOCATE is) instead of being relayed to the
server as part of a SELECT, so another client of the same pool keeps its
prepared statements; a statement deallocated on the server behind wirepool's
back (a function that runs DEALLOCATE ALL) fails once with the server's
26000 and is prepared again on its next use.
"""

import os
import unittest

import psycopg2

from harness import WirepoolTestCase, psql, raw_login
from test_postgresql import database_entry, pg_info
from wire import Reader, SYNC, bind, execute, fields, parse, query, summary


def backend_pids(connect, n=6):
    """The backend pids that `n` connections made by `connect()` are served by
    (test_passthrough checks its roles with it too)."""
    pids = set()
    for _ in range(n):
        c = connect()
        c.autocommit = True
        cur = c.cursor()
        cur.execute("SELECT pg_backend_pid()")
        pids.add(cur.fetchone()[0])
        c.close()
    return pids


class IsolationTest(WirepoolTestCase):
    users = """
      - { name: alice, password: wonderland }
      - { name: mallory, password: eve }
      - { name: admin, password: console, admin: true }
    """

    @classmethod
    def setUpClass(cls):
        cls.info = pg_info()
        os.environ["WIREPOOL_TEST_PG_PASSWORD"] = cls.info["password"]
        # One connection per pool: were the users to share a pool, they would
        # share its one backend session.
        cls.databases = database_entry(cls.info, "pg", "transaction", 1, "acquire_timeout: 10s")
        super().setUpClass()
        psql(cls.direct(), "-c", "DROP TABLE IF EXISTS loot, mine",
             "-c", "CREATE TABLE loot (v text)", "-c", "CREATE TABLE mine (v text)",
             "-c", "CREATE SCHEMA IF NOT EXISTS evil",
             "-c", "CREATE OR REPLACE FUNCTION evil.now() RETURNS text LANGUAGE sql "
                   "AS $$ SELECT 'evil'::text $$")

    @classmethod
    def direct(cls):
        i = cls.info
        return (f"postgresql://{i['user']}:{i['password']}@{i['host']}:{i['port']}/"
                f"{i['database']}")

    def raw(self, user, password):
        s = raw_login(self.wp.port, user=user, password=password, database="pg")
        self.addCleanup(s.close)
        return s, Reader(s)

    def backend_pids(self, user, password):
        return backend_pids(lambda: psycopg2.connect(
            self.wp.kv(user=user, password=password, database="pg")))

    def test_two_users_never_share_a_backend_session(self):
        alice = self.backend_pids("alice", "wonderland")
        mallory = self.backend_pids("mallory", "eve")
        self.assertTrue(alice and mallory)
        self.assertFalse(alice & mallory, f"shared backend sessions: {alice & mallory}")
        admin = self.wp.dsn(user="admin", password="console", database="wirepool")
        pools = psql(admin, "-F", "|", "-c", "SHOW POOLS").stdout.splitlines()
        users = sorted(line.split("|")[1] for line in pools if line.startswith("pg|"))
        self.assertEqual(users, ["alice", "mallory"])
        servers = psql(admin, "-F", "|", "-c", "SHOW SERVERS").stdout.splitlines()
        self.assertEqual(sorted({line.split("|")[1] for line in servers}), ["alice", "mallory"])

    def test_prepared_statements_cannot_be_hijacked_by_another_user(self):
        a, ra = self.raw("alice", "wonderland")
        # alice's statement, prepared on her backend through the relay.
        a.sendall(parse("mine", "INSERT INTO mine VALUES ($1) RETURNING 'alice:' || v", (25,)) +
                  bind("mine", "one") + execute() + SYNC)
        msgs, _ = ra.until_ready()
        self.assertEqual(summary(msgs)[-2:], [("D", ("alice:one",)), ("C", "INSERT 0 1")])
        # mallory takes over every statement prepared where she runs.
        m, rm = self.raw("mallory", "eve")
        m.sendall(query("SELECT name FROM pg_prepared_statements"))
        msgs, _ = rm.until_ready()
        names = [v[0] for t, *v in summary(msgs) if t == "D" for v in v]
        for name in names:
            m.sendall(query(
                f"DO $$BEGIN EXECUTE 'DEALLOCATE {name}'; "
                f"EXECUTE 'PREPARE {name}(text) AS WITH x AS (INSERT INTO loot VALUES ($1)) "
                f"SELECT ''alice:forged'''; END$$"))
            msgs, _ = rm.until_ready()
        # alice's next execution is still her own.
        a.sendall(bind("mine", "two") + execute() + SYNC)
        msgs, _ = ra.until_ready()
        self.assertEqual(summary(msgs)[-2:], [("D", ("alice:two",)), ("C", "INSERT 0 1")])
        loot = psql(self.direct(), "-c", "SELECT count(*) FROM loot").stdout.strip()
        self.assertEqual(loot, "0")

    def test_a_setting_changed_inside_a_select_stays_with_its_user(self):
        m = psycopg2.connect(self.wp.kv(user="mallory", password="eve", database="pg"))
        m.autocommit = True
        m.cursor().execute("SELECT set_config('search_path', 'evil, public', false)")
        for _ in range(3):
            a = psycopg2.connect(self.wp.kv(database="pg"))
            a.autocommit = True
            cur = a.cursor()
            cur.execute("SELECT current_setting('search_path')")
            self.assertEqual(cur.fetchone()[0], '"$user", public')
            a.close()
        m.close()

    def two_of_alice(self):
        """Two clients of one user: one pool, so one backend session between them."""
        c1 = psycopg2.connect(self.wp.kv(database="pg"))
        c2 = psycopg2.connect(self.wp.kv(database="pg"))
        c1.autocommit = c2.autocommit = True
        self.addCleanup(c1.close)
        self.addCleanup(c2.close)
        return c1.cursor(), c2.cursor()

    def one(self, cur, sql):
        cur.execute(sql)
        return cur.fetchone()[0]

    def test_roles_follow_their_client_and_reach_no_other(self):
        i = self.info
        superuser = f"host={i['socket_dir']} port={i['port']} user={i['superuser']} dbname={i['database']}"
        psql(superuser, "-c", "DO $$BEGIN CREATE ROLE reader NOLOGIN; "
                                  "EXCEPTION WHEN duplicate_object THEN NULL; END$$",
             "-c", f"GRANT reader TO {self.info['user']}")
        base = self.info["user"]
        for how in ("SET ROLE reader", "SELECT set_config('role', 'reader', false)"):
            with self.subTest(how):
                c1, c2 = self.two_of_alice()
                c1.execute(how)
                self.assertEqual(self.one(c1, "SELECT current_user"), "reader")
                self.assertEqual(self.one(c2, "SELECT current_user"), base)
                self.assertEqual(self.one(c1, "SELECT current_user"), "reader")
                c1.execute("RESET ROLE")
                self.assertEqual(self.one(c1, "SELECT current_user"), base)

    def test_temporary_tables_and_advisory_locks_do_not_outlive_the_transaction(self):
        c1, c2 = self.two_of_alice()
        c1.execute("CREATE TEMP TABLE only_mine (a int)")
        self.assertIsNone(self.one(c2, "SELECT to_regclass('pg_temp.only_mine')"))
        c1.execute("SELECT pg_advisory_lock(4242)")
        self.assertEqual(self.one(c2, "SELECT 1"), 1)  # the backend served another client
        direct = psycopg2.connect(self.direct())
        direct.autocommit = True
        try:
            got = self.one(direct.cursor(), "SELECT pg_try_advisory_lock(4242)")
            self.assertTrue(got, "a pooled backend still holds a client's advisory lock")
        finally:
            direct.close()

    def test_relayed_statement_names_are_random(self):
        s, r = self.raw("alice", "wonderland")
        s.sendall(parse("", "SELECT 'named' AS x") + bind("") + execute() + SYNC)
        r.until_ready()
        s.sendall(query("SELECT name FROM pg_prepared_statements WHERE statement LIKE "
                        "'%''named''%'"))
        msgs, _ = r.until_ready()
        names = [v[0] for t, *v in summary(msgs) if t == "D" for v in v]
        self.assertTrue(names)
        for name in names:
            self.assertRegex(name, r"^wpr_[0-9a-f]{16}_\d+$")

    def test_statements_deallocated_behind_wirepools_back_are_prepared_again(self):
        psql(self.direct(), "-c",
             "CREATE OR REPLACE FUNCTION forget_all() RETURNS int LANGUAGE plpgsql AS "
             "$$BEGIN EXECUTE 'DEALLOCATE ALL'; RETURN 1; END$$")
        a, ra = self.raw("alice", "wonderland")
        a.sendall(parse("again", "SELECT 'again'::text") + bind("again") + execute() + SYNC)
        self.assertEqual(summary(ra.until_ready()[0])[-2], ("D", ("again",)))
        a.sendall(query("SELECT forget_all()"))
        ra.until_ready()
        # The server's own answer once (the statement is gone), then it works again.
        a.sendall(bind("again") + execute() + SYNC)
        first = summary(ra.until_ready()[0])
        a.sendall(bind("again") + execute() + SYNC)
        self.assertEqual(summary(ra.until_ready()[0])[-2], ("D", ("again",)), first)

    def test_hidden_deallocate_with_standard_conforming_strings_off(self):
        # Two clients of one user: one pool, one backend session.
        a, ra = self.raw("alice", "wonderland")
        a.sendall(parse("keep", "SELECT 'kept'::text") + bind("keep") + execute() + SYNC)
        self.assertEqual(summary(ra.until_ready()[0])[-2], ("D", ("kept",)))
        b, rb = self.raw("alice", "wonderland")
        b.sendall(query("SELECT set_config('standard_conforming_strings', 'off', false)"))
        rb.until_ready()
        b.sendall(query("SELECT 'x\\''; DEALLOCATE ALL; SELECT '\\''"))
        msgs, _ = rb.until_ready()
        errors = [fields(body) for t, body in msgs if t == "E"]
        self.assertEqual([e["C"] for e in errors], ["0A000"], msgs)
        a.sendall(bind("keep") + execute() + SYNC)
        self.assertEqual(summary(ra.until_ready()[0])[-2], ("D", ("kept",)))


if __name__ == "__main__":
    unittest.main()
