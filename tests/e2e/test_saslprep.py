"""SASLprep (RFC 4013) of `password:` entries, against PostgreSQL's own: each
password below is given to a throwaway PostgreSQL (CREATE ROLE ... PASSWORD)
and to wirepool (`password:`), and each is then tried, as typed and in other
forms, with psql (libpq) and node-postgres, directly and through wirepool: every
attempt must have the same outcome on both.

Covers: NFKC ("I\u2168" is "IIX"), mapped to nothing (U+00AD), non-ASCII
space (U+00A0 is a space), a prohibited character (U+200E: PostgreSQL hashes
the raw bytes), the bidi rule (Arabic then a digit: raw bytes). node-postgres
8.13 does not SASLprep (it hashes the UTF-8 bytes), so "I\u2168" typed fails
there as it does against PostgreSQL, and "IIX" works.
"""

import json
import os
import subprocess
import unittest

from harness import NODE_PATH, PSQL, Wirepool, psql

HERE = os.path.dirname(os.path.abspath(__file__))
INFO_PATH = os.environ.get("WIREPOOL_PG_INFO")

# role suffix -> (the password configured, the passwords tried)
CASES = {
    "nfkc": ("I\u2168", ["I\u2168", "IIX", "I\u2168x"]),
    "shy": ("pass\u00adword", ["pass\u00adword", "password"]),
    "nbsp": ("a\u00a0b", ["a\u00a0b", "a b", "ab"]),
    "lrm": ("x\u200ey", ["x\u200ey", "xy"]),
    "bidi": ("\u0627\u0031", ["\u0627\u0031"]),
}

NODE_LOGIN = """
const { Client } = require('pg');
const [host, port, user, database, password] = process.argv.slice(1);  // node -e: no script path
const c = new Client({ host, port: Number(port), user, database, password, ssl: false });
c.connect().then(() => c.query('SELECT 1')).then(() => { console.log('ok'); return c.end(); })
  .catch((e) => { console.log('fail ' + (e.code || e.message)); process.exit(0); });
"""


def psql_login(port, user, database, password):
    r = psql(f"host=127.0.0.1 port={port} user={user} dbname={database} sslmode=disable",
             "-c", "SELECT 1", check=False, env={"PGPASSWORD": password})
    return "ok" if r.returncode == 0 else "fail"


def node_login(port, user, database, password):
    r = subprocess.run(["node", "-e", NODE_LOGIN, "127.0.0.1", str(port), user, database,
                        password], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, NODE_PATH=NODE_PATH))
    return "ok" if r.stdout.strip() == "ok" else "fail"


class SaslprepTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not INFO_PATH or not os.path.exists(INFO_PATH):
            raise unittest.SkipTest("no PostgreSQL fixture (run through ctest, which starts one)")
        with open(INFO_PATH) as f:
            cls.pg = json.load(f)
        cls.prefix = f"sp{os.getpid()}_"
        for name, (password, _) in CASES.items():
            literal = password.replace("'", "''")
            cls.superuser(f"DROP ROLE IF EXISTS {cls.prefix}{name}; "
                          f"CREATE ROLE {cls.prefix}{name} LOGIN PASSWORD '{literal}'")
        users = "".join(f"\n  - {{ name: {cls.prefix}{name}, password: {json.dumps(password)} }}"
                        for name, (password, _) in CASES.items())
        cls.wp = Wirepool(name="saslprep", users=users).start()

    @classmethod
    def tearDownClass(cls):
        cls.wp.cleanup()
        cls.superuser("; ".join(f"DROP ROLE IF EXISTS {cls.prefix}{n}" for n in CASES))

    @classmethod
    def superuser(cls, sql):
        subprocess.run([PSQL, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", cls.pg["socket_dir"],
                        "-p", str(cls.pg["port"]), "-U", cls.pg["superuser"], "-d", "postgres",
                        "-c", sql], check=True, capture_output=True, timeout=60)

    def outcomes(self, login):
        got = {}
        for name, (_, tried) in CASES.items():
            user = self.prefix + name
            for password in tried:
                direct = login(self.pg["port"], user, "postgres", password)
                proxied = login(self.wp.port, user, "app", password)
                got[(name, password)] = (direct, proxied)
        return got

    def check(self, login):
        got = self.outcomes(login)
        differ = {k: v for k, v in got.items() if v[0] != v[1]}
        self.assertEqual(differ, {}, "(PostgreSQL, wirepool) outcomes that differ")
        self.assertEqual(got[("nfkc", "IIX")], ("ok", "ok"))
        return got

    def test_psql_as_postgresql(self):
        got = self.check(psql_login)
        # libpq SASLpreps too: the password as typed works.
        for name, (password, _) in CASES.items():
            self.assertEqual(got[(name, password)], ("ok", "ok"), name)

    def test_node_postgres_as_postgresql(self):
        if not os.path.isdir(os.path.join(NODE_PATH, "pg")):
            self.fail(f"node-postgres is not installed in {NODE_PATH} (make test installs it)")
        self.check(node_login)


if __name__ == "__main__":
    unittest.main()
