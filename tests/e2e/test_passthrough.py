"""auth.mode passthrough (issue 29 item 4): clients reach the backend as their
own PostgreSQL roles, against the throwaway PostgreSQL of the CTest fixture
`pg`.

Covers: two roles with different GRANTs and a row-level security policy each
see exactly their own rows through wirepool, in transaction, session and
statement mode, with psycopg2 and psql, and with tedious over TDS (LOGIN7's
password is the backend's); two roles never share a backend session (the
backend pids each sees, pg_stat_activity's usename of each, SHOW SERVERS);
the backend refusing the role (a wrong password, an unknown role, a NOLOGIN
role) gets 28P01 as PostgreSQL gives (18456 over TDS) and a log line with the
backend's reason and no password; the backend down gets 08006; a login
without TLS is refused before any password is asked for; bad input (a
password with NUL or a newline, of 10,000 characters, not UTF-8; a user name
with a newline, not UTF-8, of 10,000 characters) gets a clear error, no
password in the log, and wirepool keeps serving.
"""

import os
import subprocess
import unittest

import psycopg2

from harness import WirepoolTestCase, free_port, psql, tedious_query, tls_login_answer
from test_isolation import backend_pids
from test_postgresql import pg_info

ANN = ("pt_ann", "ann-pw-4f1c")
BEN = ("pt_ben", "ben-pw-9d2e")
# Never written by wirepool, whatever it refuses.
SECRETS = ("ann-pw-4f1c", "ben-pw-9d2e", "Wrong-7731", "nologin-pw-55")


def passthrough_entry(info, name, mode, port=None, driver="postgresql",
                      password_env="WIREPOOL_TEST_PG_PASSWORD"):
    """A passthrough entry for the fixture server `info` (the mysql driver's
    too); `port`: another port than the server's."""
    return f"""
      - name: {name}
        driver: {driver}
        connection: "host={info['host']} port={port or info['port']} user={info['user']} dbname={info['database']}"
        password_env: {password_env}
        auth: {{ mode: passthrough }}
        pool: {{ mode: {mode}, max: 2 }}
    """


def make_roles(info):
    """pt_ann and pt_ben (LOGIN), pt_nologin, and their tables on the fixture's
    PostgreSQL; the superuser's connection string."""
    su = (f"host={info['socket_dir']} port={info['port']} "
          f"user={info.get('superuser', 'postgres')} dbname={info['database']}")
    for stmt in [
        "DROP TABLE IF EXISTS pt_notes", "DROP TABLE IF EXISTS pt_secret",
        "DROP ROLE IF EXISTS pt_ann", "DROP ROLE IF EXISTS pt_ben",
        "DROP ROLE IF EXISTS pt_nologin",
        f"CREATE ROLE pt_ann LOGIN PASSWORD '{ANN[1]}'",
        f"CREATE ROLE pt_ben LOGIN PASSWORD '{BEN[1]}'",
        "CREATE ROLE pt_nologin NOLOGIN PASSWORD 'nologin-pw-55'",
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
    return su


class PassthroughTest(WirepoolTestCase):
    users = "- { name: admin, password: console, admin: true }"
    tls = "{ generate: true }"
    tds = True
    secrets = SECRETS

    @classmethod
    def setUpClass(cls):
        cls.info = pg_info()
        os.environ["WIREPOOL_TEST_PG_PASSWORD"] = cls.info["password"]
        cls.su = make_roles(cls.info)
        cls.databases = (passthrough_entry(cls.info, "rls", "transaction") +
                         passthrough_entry(cls.info, "rlsession", "session") +
                         passthrough_entry(cls.info, "rlstatement", "statement") +
                         passthrough_entry(cls.info, "down", "transaction", port=free_port()))
        super().setUpClass()

    def connect(self, user, password, database="rls"):
        return self.connect_tls(user, password, database)

    def login_answer(self, user, password, database="rls"):
        """The answer to a login by hand (harness.tls_login_answer)."""
        return tls_login_answer(self.wp.port, self.wp.certificate(), user, password, database)

    def assert_still_serving(self):
        self.assertEqual(self.rows(self.connect(*ANN), "SELECT current_user"), [("pt_ann",)])

    def tds(self, user, password, sql, database="rls"):
        return tedious_query(self.wp.tds_port, self.wp.certificate(), user, password, database,
                             sql, "postgresql")

    def test_each_role_sees_its_own_rows_in_every_mode(self):
        for database in ("rls", "rlsession", "rlstatement"):
            with self.subTest(database=database):
                ann = self.connect(*ANN, database)
                ben = self.connect(*BEN, database)
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
        out = psql(f"postgresql://{BEN[0]}:{BEN[1]}@127.0.0.1:{self.wp.port}/rls?sslmode=require",
                   "-At", "-c", "SELECT body FROM pt_notes").stdout
        self.assertEqual(out.strip(), "ben 1")

    def test_tds_clients_log_in_with_their_own_password(self):
        self.assertEqual(self.tds(*ANN, "SELECT current_user, body FROM pt_notes ORDER BY body"),
                         ("rows", [["pt_ann", "ann 1"], ["pt_ann", "ann 2"]]))
        self.assertEqual(self.tds(*BEN, "SELECT current_user, body FROM pt_notes"),
                         ("rows", [["pt_ben", "ben 1"]]))
        kind, error = self.tds(*BEN, "SELECT v FROM pt_secret")
        self.assertEqual(kind, "error")
        self.assertIn("permission denied", error["message"])
        kind, error = self.tds(BEN[0], "Wrong-7731", "SELECT 1")
        self.assertEqual((kind, error["code"]), ("error", "ELOGIN"), error)
        self.assertIn("Login failed for user 'pt_ben'", error["message"])
        self.assertIn("authentication failed for user \"pt_ben\": the backend refused the login "
                      "(28P01)", self.wp.log())

    def test_a_backend_refusing_the_role_gets_28P01(self):
        # A wrong password, a role the server does not know, a role that may not log in.
        for user, password, backend in ((ANN[0], b"Wrong-7731", "28P01"),
                                        ("pt_nobody", b"Wrong-7731", "28P01"),
                                        ("pt_nologin", b"nologin-pw-55", "28000")):
            with self.subTest(user=user):
                state, message = self.login_answer(user.encode(), password)
                self.assertEqual(state, "28P01")
                self.assertEqual(message, f'password authentication failed for user "{user}"')
                self.assertIn(f'authentication failed for user "{user}": the backend refused the '
                              f"login ({backend})", self.wp.log())
        # The right one still works: nothing of the wrong one is held.
        self.assert_still_serving()

    def test_backend_down_gets_08006(self):
        state, message = self.login_answer(ANN[0].encode(), ANN[1].encode(), database="down")
        self.assertEqual(state, "08006")
        self.assertIn("backend of database \"down\" is unavailable", message)
        self.assert_still_serving()

    def test_two_roles_never_share_a_backend_session(self):
        seen = {}
        for user, password in (ANN, BEN):
            def connect(user=user, password=password):
                return psycopg2.connect(host="127.0.0.1", port=self.wp.port, user=user,
                                        password=password, dbname="rls", sslmode="require",
                                        connect_timeout=20)
            for pid in backend_pids(connect):
                seen.setdefault(pid, set()).add(user)
        for pid, users in seen.items():
            self.assertEqual(len(users), 1, f"backend {pid} served {users}")
        out = subprocess.run(["psql", "-X", "-At", self.su, "-c",
                              "SELECT pid, usename FROM pg_stat_activity WHERE pid IN (" +
                              ",".join(str(p) for p in seen) + ")"],
                             check=True, capture_output=True, text=True, timeout=30).stdout
        found = dict(line.split("|") for line in out.split())
        self.assertEqual({int(p): {u} for p, u in found.items()},
                         {p: u for p, u in seen.items() if str(p) in found})
        self.assertTrue(found)
        # SHOW SERVERS names each backend's pool user and remote_pid alike.
        admin = self.wp.dsn(user="admin", password="console", database="wirepool")
        out = psql(admin, "-F", "|", "-P", "tuples_only=off", "-c",
                   "SHOW SERVERS").stdout.splitlines()
        header = out[0].split("|")
        rows = [dict(zip(header, line.split("|"))) for line in out[1:] if "|" in line]
        servers = {int(r["remote_pid"]): r["user"] for r in rows if r["database"] == "rls"}
        for pid, users in seen.items():
            self.assertEqual({servers[pid]}, users, f"SHOW SERVERS: {rows}")

    def test_no_password_is_asked_for_without_tls(self):
        with self.assertRaises(psycopg2.OperationalError) as e:
            psycopg2.connect(host="127.0.0.1", port=self.wp.port, user=ANN[0],
                             password=ANN[1], dbname="rls", sslmode="disable",
                             connect_timeout=20)
        self.assertIn("only over TLS", str(e.exception))

    def test_bad_passwords_get_28P01(self):
        for password in (b"x" * 10000, b"\xff\xfe", b"ann\npw", b"ann-pw-4f1c\0tail"):
            with self.subTest(password=password[:12]):
                state, message = self.login_answer(ANN[0].encode(), password)
                self.assertEqual(state, "28P01")
                self.assertEqual(message, 'password authentication failed for user "pt_ann"')
        log = self.wp.log()
        self.assertIn("the password holds a NUL byte", log)
        self.assertIn("the password is longer than 1024 bytes", log)
        # psql sends what it is given, too.
        env = {k.encode(): v.encode() for k, v in os.environ.items()}
        env[b"PGPASSWORD"] = b"\xff\xfe"
        r = subprocess.run(["psql", "-X", f"host=127.0.0.1 port={self.wp.port} "
                            "user=pt_ann dbname=rls sslmode=require", "-c", "SELECT 1"],
                           env=env, capture_output=True, timeout=30)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn(b"password authentication failed", r.stderr)
        self.assert_still_serving()

    def test_bad_user_names_are_refused_before_the_password(self):
        for user, why in ((b"pt_ann\nforged log line", "control character"),
                          (b"pt_\xff\xfe", "not valid UTF-8"),
                          (b"u" * 100, "longer than 63 bytes")):
            with self.subTest(user=user[:12]):
                state, message = self.login_answer(user, ANN[1].encode())
                self.assertEqual(state, "28000")
                self.assertIn(why, message)
        # 10,000 characters do not fit a startup packet: closed without a
        # word, as PostgreSQL does on a bad startup length.
        self.assertEqual(self.login_answer(b"u" * 10000, ANN[1].encode()), "closed")
        log = self.wp.log()
        self.assertIn("bad startup packet: invalid length of startup packet", log)
        self.assertNotIn("forged log line", log)
        self.assert_still_serving()


if __name__ == "__main__":
    unittest.main()
