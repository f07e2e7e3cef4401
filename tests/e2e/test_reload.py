"""Configuration reload: SIGHUP and the admin console's RELOAD.

Covers: SIGHUP grows a pool and adds a database while a client holds a
transaction open, which then commits (the new capacity serves a second client
at once, the new database takes clients, the running transaction is not cut);
a user added by RELOAD can log in, a removed one cannot; a removed database
takes no new clients (3D000) while a session on it finishes its transaction,
and its pool closes once that session ends; an invalid file is refused with
file:line:column in the log, the old configuration keeps serving, and
wirepool_config_reloads_total{result="failed"} counts it; the
wirepool_config_info hash follows the file.
"""

import hashlib
import signal
import time
import unittest

import psycopg2

from harness import Wirepool, psql

DATABASES = """
  - name: app
    driver: sqlite
    connection: app.db
    pool: { mode: transaction, max: 1, acquire_timeout: 500ms }
"""
USERS = """
  - { name: alice, password: wonderland }
  - { name: ops, password: secret, admin: true }
"""


class ReloadTest(unittest.TestCase):

    def setUp(self):
        self.wp = Wirepool(databases=DATABASES, users=USERS, name="reload", http=True).start()

    def tearDown(self):
        code = self.wp.stop()
        log = self.wp.log()
        self.wp.cleanup()
        self.assertEqual(code, 0, log[-3000:])

    def edit(self, old, new):
        with open(self.wp.config_path) as f:
            text = f.read()
        self.assertIn(old, text)
        with open(self.wp.config_path, "w") as f:
            f.write(text.replace(old, new))

    def reloads(self, result):
        return self.wp.metrics().get(f'wirepool_config_reloads_total{{result="{result}"}}', 0)

    def sighup_and_wait(self, result="ok"):
        before = self.reloads(result)
        self.wp.proc.send_signal(signal.SIGHUP)
        deadline = time.time() + 10
        while time.time() < deadline:
            if self.reloads(result) > before:
                return
            time.sleep(0.05)
        self.fail(f"no {result} reload:\n{self.wp.log()[-3000:]}")

    def test_sighup_grows_a_pool_and_adds_a_database_under_an_open_transaction(self):
        holder = psycopg2.connect(self.wp.kv())
        cur = holder.cursor()
        cur.execute("CREATE TABLE IF NOT EXISTS t (v INTEGER)")
        holder.commit()
        cur.execute("INSERT INTO t VALUES (1)")  # a transaction holds the only connection

        # With max 1, a second client times out.
        other = psycopg2.connect(self.wp.kv())
        other.autocommit = True
        with self.assertRaises(psycopg2.OperationalError) as cm:
            other.cursor().execute("SELECT 1")
        self.assertEqual(cm.exception.pgcode, "53300")
        other.close()

        self.edit("max: 1, acquire_timeout: 500ms", "max: 2, acquire_timeout: 500ms")
        with open(self.wp.config_path, "a") as f:
            f.write("  - { name: extra, driver: sqlite, connection: extra.db }\n")
        self.sighup_and_wait()

        other = psycopg2.connect(self.wp.kv())
        other.autocommit = True
        c = other.cursor()
        c.execute("SELECT 2")  # the second connection now exists
        self.assertEqual(c.fetchone(), (2,))
        other.close()
        extra = psycopg2.connect(self.wp.kv(database="extra"))
        extra.autocommit = True
        c = extra.cursor()
        c.execute("SELECT 3")
        self.assertEqual(c.fetchone(), (3,))
        extra.close()

        cur.execute("INSERT INTO t VALUES (2)")
        holder.commit()  # the transaction begun before the reload commits
        cur.execute("SELECT count(*) FROM t")
        self.assertEqual(cur.fetchone(), (2,))
        m = self.wp.metrics()  # while alice's pool has a client (idle pools are swept)
        holder.close()
        self.assertEqual(m['wirepool_pool_max_connections{database="app",user="alice",driver="sqlite"}'], 2)
        with open(self.wp.config_path, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        self.assertEqual(m[f'wirepool_config_info{{sha256="{digest}"}}'], 1)

    def test_reload_adds_and_removes_users(self):
        self.edit("- { name: alice, password: wonderland }", "- { name: carol, password: c4r0l }")
        psql(self.wp.dsn("ops", "secret", "wirepool"), "-c", "RELOAD")
        deadline = time.time() + 10
        while time.time() < deadline and self.reloads("ok") < 1:
            time.sleep(0.05)
        conn = psycopg2.connect(self.wp.kv(user="carol", password="c4r0l"))
        conn.close()
        with self.assertRaises(psycopg2.OperationalError):
            psycopg2.connect(self.wp.kv())

    def test_removed_database_drains(self):
        with open(self.wp.config_path, "a") as f:
            f.write("  - { name: extra, driver: sqlite, connection: extra.db }\n")
        self.sighup_and_wait()
        inside = psycopg2.connect(self.wp.kv(database="extra"))
        cur = inside.cursor()
        cur.execute("CREATE TABLE IF NOT EXISTS x (v INTEGER)")
        cur.execute("INSERT INTO x VALUES (1)")  # a transaction in flight

        self.edit("  - { name: extra, driver: sqlite, connection: extra.db }\n", "")
        self.sighup_and_wait()
        with self.assertRaises(psycopg2.OperationalError) as cm:
            psycopg2.connect(self.wp.kv(database="extra"))
        self.assertIn('database "extra" does not exist', str(cm.exception))
        # The running session is not cut: it finishes its transaction.
        cur.execute("INSERT INTO x VALUES (2)")
        inside.commit()
        cur.execute("SELECT count(*) FROM x")
        self.assertEqual(cur.fetchone(), (2,))
        inside.commit()
        inside.close()
        deadline = time.time() + 10
        while time.time() < deadline and "retired pool closed" not in self.wp.log():
            time.sleep(0.05)
        self.assertIn('database "extra": retired pool of user "alice" closed', self.wp.log())

    def test_invalid_file_is_refused_and_the_old_configuration_serves(self):
        self.edit("max: 1, acquire_timeout: 500ms", "max: lots, acquire_timeout: 500ms")
        self.sighup_and_wait("failed")
        log = self.wp.log()
        self.assertRegex(log, rf"reload refused: {self.wp.config_path}:\d+:\d+: "
                              r"databases\[0\]\.pool\.max")
        self.assertIn("the running configuration stays in force", log)
        conn = psycopg2.connect(self.wp.kv())
        conn.autocommit = True
        c = conn.cursor()
        c.execute("SELECT 1")
        self.assertEqual(c.fetchone(), (1,))
        m = self.wp.metrics()  # while alice's pool has a client (idle pools are swept)
        conn.close()
        self.assertEqual(self.reloads("ok"), 0)
        self.assertEqual(m['wirepool_pool_max_connections{database="app",user="alice",driver="sqlite"}'], 1)
        # YAML that does not parse at all is refused the same way.
        with open(self.wp.config_path, "a") as f:
            f.write("databases: [\n")
        self.sighup_and_wait("failed")
        self.assertRegex(self.wp.log(), rf"reload refused: {self.wp.config_path}:\d+:\d+: ")


if __name__ == "__main__":
    unittest.main()
