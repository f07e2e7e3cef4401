"""auth.mode passthrough (issue 29 item 4): clients reach the backend as their
own PostgreSQL roles, against the throwaway PostgreSQL of the CTest fixture
`pg`.

Covers: two roles with different GRANTs and a row-level security policy each
see exactly their own rows through wirepool, in transaction and session mode,
with psycopg2 and psql; a wrong password gets 28P01 after the backend refused
it; two roles never share a backend session (pg_stat_activity usename per
backend pid); a login without TLS is refused before any password is asked
for; passwords of 10,000 characters or invalid UTF-8 are refused with
28P01, and wirepool keeps serving.
"""

import os
import subprocess
import unittest

import psycopg2

from harness import WirepoolTestCase, psql
from test_postgresql import pg_info


def passthrough_entry(info, name, mode):
    return f"""
      - name: {name}
        driver: postgresql
        connection: "host={info['host']} port={info['port']} user={info['user']} dbname={info['database']}"
        password_env: WIREPOOL_TEST_PG_PASSWORD
        auth: {{ mode: passthrough }}
        pool: {{ mode: {mode}, max: 2 }}
    """


class PassthroughTest(WirepoolTestCase):
    users = "- { name: admin, password: console, admin: true }"
    tls = "{ generate: true }"

    @classmethod
    def setUpClass(cls):
        cls.info = pg_info()
        os.environ["WIREPOOL_TEST_PG_PASSWORD"] = cls.info["password"]
        su = (f"host={cls.info['socket_dir']} port={cls.info['port']} "
              f"user={cls.info.get('superuser', 'postgres')} dbname={cls.info['database']}")
        cls.su = su
        for stmt in [
            "DROP TABLE IF EXISTS pt_notes", "DROP TABLE IF EXISTS pt_secret",
            "DROP ROLE IF EXISTS pt_ann", "DROP ROLE IF EXISTS pt_ben",
            "CREATE ROLE pt_ann LOGIN PASSWORD 'ann-pw'",
            "CREATE ROLE pt_ben LOGIN PASSWORD 'ben-pw'",
            "CREATE TABLE pt_notes (owner name, body text)",
            "INSERT INTO pt_notes VALUES ('pt_ann', 'ann 1'), ('pt_ann', 'ann 2'), "
            "('pt_ben', 'ben 1')",
            "ALTER TABLE pt_notes ENABLE ROW LEVEL SECURITY",
            "CREATE POLICY own ON pt_notes USING (owner = current_user)",
            "GRANT SELECT ON pt_notes TO pt_ann, pt_ben",
            "CREATE TABLE pt_secret (v text)", "INSERT INTO pt_secret VALUES ('ann only')",
            "GRANT SELECT ON pt_secret TO pt_ann",
        ]:
            subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", su, "-c", stmt],
                           check=True, capture_output=True, timeout=30)
        cls.databases = (passthrough_entry(cls.info, "rls", "transaction") +
                         passthrough_entry(cls.info, "rlsession", "session"))
        super().setUpClass()

    def connect(self, user, password, database="rls"):
        c = psycopg2.connect(host="127.0.0.1", port=self.wp.port, user=user, password=password,
                             dbname=database, sslmode="require", connect_timeout=20)
        c.autocommit = True
        self.addCleanup(c.close)
        return c

    def rows(self, conn, sql):
        cur = conn.cursor()
        cur.execute(sql)
        return cur.fetchall()

    def test_each_role_sees_its_own_rows_in_both_modes(self):
        for database in ("rls", "rlsession"):
            with self.subTest(database=database):
                ann = self.connect("pt_ann", "ann-pw", database)
                ben = self.connect("pt_ben", "ben-pw", database)
                for _ in range(3):  # interleaved: the pools never mix them up
                    self.assertEqual(self.rows(ann, "SELECT current_user, body FROM pt_notes "
                                                    "ORDER BY body"),
                                     [("pt_ann", "ann 1"), ("pt_ann", "ann 2")])
                    self.assertEqual(self.rows(ben, "SELECT current_user, body FROM pt_notes"),
                                     [("pt_ben", "ben 1")])
                self.assertEqual(self.rows(ann, "SELECT v FROM pt_secret"), [("ann only",)])
                with self.assertRaises(psycopg2.Error) as e:
                    self.rows(ben, "SELECT v FROM pt_secret")
                self.assertEqual(e.exception.pgcode, "42501")

    def test_psql_sees_its_own_rows(self):
        out = psql(f"postgresql://pt_ben:ben-pw@127.0.0.1:{self.wp.port}/rls?sslmode=require",
                   "-At", "-c", "SELECT body FROM pt_notes")
        self.assertEqual(out.strip(), "ben 1")

    def test_wrong_password_gets_28P01(self):
        with self.assertRaises(psycopg2.OperationalError) as e:
            self.connect("pt_ann", "ben-pw")
        self.assertIn("password authentication failed", str(e.exception))
        # The right one still works (nothing held from the wrong one).
        self.assertEqual(self.rows(self.connect("pt_ann", "ann-pw"), "SELECT current_user"),
                         [("pt_ann",)])

    def test_two_roles_never_share_a_backend_session(self):
        seen = {}
        for user, pw in (("pt_ann", "ann-pw"), ("pt_ben", "ben-pw")) * 3:
            c = self.connect(user, pw)
            pid = self.rows(c, "SELECT pg_backend_pid()")[0][0]
            seen.setdefault(pid, set()).add(user)
        for pid, users in seen.items():
            self.assertEqual(len(users), 1, f"backend {pid} served {users}")
        out = subprocess.run(["psql", "-X", "-At", self.su, "-c",
                              "SELECT pid, usename FROM pg_stat_activity WHERE pid IN (" +
                              ",".join(str(p) for p in seen) + ")"],
                             check=True, capture_output=True, text=True, timeout=30).stdout
        for line in out.split():
            pid, usename = line.split("|")
            self.assertEqual({usename}, seen[int(pid)])

    def test_no_password_is_asked_for_without_tls(self):
        with self.assertRaises(psycopg2.OperationalError) as e:
            psycopg2.connect(host="127.0.0.1", port=self.wp.port, user="pt_ann",
                             password="ann-pw", dbname="rls", sslmode="disable",
                             connect_timeout=20)
        self.assertIn("only over TLS", str(e.exception))

    def test_bad_passwords_are_refused(self):
        # 10,000 characters, and bytes that are not UTF-8 (libpq cannot send a NUL).
        for password in (b"x" * 10000, b"\xff\xfe"):
            with self.subTest(length=len(password)):
                env = {k.encode(): v.encode() for k, v in os.environ.items()}
                env[b"PGPASSWORD"] = password
                r = subprocess.run(["psql", "-X", f"host=127.0.0.1 port={self.wp.port} "
                                    "user=pt_ann dbname=rls sslmode=require", "-c", "SELECT 1"],
                                   env=env, capture_output=True, timeout=30)
                self.assertNotEqual(r.returncode, 0)
                self.assertIn(b"password authentication failed", r.stderr)
        self.assertEqual(self.rows(self.connect("pt_ann", "ann-pw"), "SELECT 1"), [(1,)])


if __name__ == "__main__":
    unittest.main()
