"""The admin console: the virtual database `wirepool`, through psql.

Covers: a non-admin user is refused as a wrong password is (28P01, the log
says why) (and an admin user may not use it to reach a real database it is
not allowed to); every SHOW command answers
PgBouncer 1.18's columns in its order, then wirepool's own; SHOW POOLS, CLIENTS,
SERVERS, STATS and DATABASES reflect a client holding a transaction (a client's
ptr is a connection number, not a heap address); PAUSE waits
for the transaction to end and makes new work wait until RESUME; RECONNECT
replaces backend connections; KILL disconnects the database's clients and
pauses it; RELOAD answers; an unknown command is 42601 and the console stays
usable; SHUTDOWN drains the process, which exits 0; over a PostgreSQL backend
(the `pg` fixture) SHOW SERVERS gives each connection's backend pid
(`remote_pid`), local address and port as pg_stat_activity sees them
(`client_addr`, `client_port`), and each backend connection costs the
process 2 descriptors (libpq's socket and the watcher's duplicate).
"""

import json
import os
import subprocess
import threading
import time
import unittest

import psycopg2

from harness import PSQL, Wirepool, WirepoolTestCase, psql, raw_login

USERS = """
  - { name: alice, password: wonderland }
  - { name: ops, password: secret, admin: true }
"""

POOLS = ("database|user|cl_active|cl_waiting|cl_active_cancel_req|cl_waiting_cancel_req|"
         "sv_active|sv_active_cancel|sv_being_canceled|sv_idle|sv_used|sv_tested|sv_login|"
         "maxwait|maxwait_us|pool_mode|driver")
CONN = ("type|user|database|state|addr|port|local_addr|local_port|connect_time|request_time|"
        "wait|wait_us|close_needed|ptr|link|remote_pid|tls|application_name")
EXPECTED = {
    "POOLS": POOLS,
    "CLIENTS": CONN + "|protocol",
    "SERVERS": CONN + "|driver",
    "STATS": ("database|total_xact_count|total_query_count|total_received|total_sent|"
              "total_xact_time|total_query_time|total_wait_time|avg_xact_count|avg_query_count|"
              "avg_recv|avg_sent|avg_xact_time|avg_query_time|avg_wait_time|driver"),
    "DATABASES": ("name|host|port|database|force_user|pool_size|min_pool_size|reserve_pool|"
                  "pool_mode|max_connections|current_connections|paused|disabled|driver"),
    "USERS": "name|pool_mode|admin|databases",
    "CONFIG": "key|value|default|changeable",
    "VERSION": "version",
}


class AdminConsoleTest(WirepoolTestCase):
    users = USERS
    databases = """
      - name: app
        driver: sqlite
        connection: app.db
        pool: { mode: transaction, max: 2 }
    """

    def table(self, command):
        """psql -A with its header line: (header, [row dicts])."""
        r = subprocess.run([PSQL, "-X", "-A", "-F", "|", "-P", "footer=off", "-v",
                            "ON_ERROR_STOP=1", "-d", self.wp.dsn("ops", "secret", "wirepool"),
                            "-c", command], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        header = lines[0]
        rows = [dict(zip(header.split("|"), l.split("|"))) for l in lines[1:] if l]
        return header, rows

    def test_non_admin_is_refused_as_a_wrong_password(self):
        with self.assertRaises(AssertionError) as cm:
            raw_login(self.wp.port, "alice", "wonderland", "wirepool")
        self.assertIn("C28P01", str(cm.exception))
        r = psql(self.wp.dsn("alice", "wonderland", "wirepool"), "-c", "SHOW POOLS", check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn('password authentication failed for user "alice"', r.stderr)
        self.assertIn("not an admin user, asked for the admin console", self.wp.log())
        r = psql(self.wp.dsn("ops", "wrong", "wirepool"), "-c", "SHOW POOLS", check=False)
        self.assertIn("password authentication failed", r.stderr)

    def test_every_show_command_has_pgbouncer_columns(self):
        for what, columns in EXPECTED.items():
            header, rows = self.table(f"SHOW {what}")
            self.assertEqual(header, columns, what)
        _, rows = self.table("SHOW VERSION")
        self.assertRegex(rows[0]["version"], r"^wirepool \d+\.\d+\.\d+$")
        _, rows = self.table("SHOW USERS")
        self.assertEqual({r["name"]: r["admin"] for r in rows}, {"alice": "no", "ops": "yes"})
        _, rows = self.table("SHOW CONFIG")
        keys = {r["key"]: r for r in rows}
        self.assertEqual(keys["shutdown_grace"]["default"], "30s")
        self.assertIn("listeners[0]", keys)
        # Several commands in one query, lower case works too.
        r = psql(self.wp.dsn("ops", "secret", "wirepool"), "-c", "show version; show users")
        self.assertIn("wirepool", r.stdout)
        self.assertIn("alice", r.stdout)

    def test_show_reflects_a_client_in_a_transaction(self):
        conn = psycopg2.connect(self.wp.kv() + " application_name=probe")
        try:
            cur = conn.cursor()
            cur.execute("SELECT 1")  # psycopg2 opened a transaction: the backend is leased
            _, pools = self.table("SHOW POOLS")
            app = [p for p in pools if p["database"] == "app"][0]
            self.assertEqual(app["sv_active"], "1")
            self.assertEqual(app["cl_active"], "1")
            self.assertEqual(app["cl_waiting"], "0")
            self.assertEqual(app["pool_mode"], "transaction")
            self.assertEqual(app["driver"], "sqlite")
            _, clients = self.table("SHOW CLIENTS")
            mine = [c for c in clients if c["application_name"] == "probe"]
            self.assertEqual(len(mine), 1, clients)
            self.assertEqual(mine[0]["user"], "alice")
            self.assertEqual(mine[0]["database"], "app")
            self.assertEqual(mine[0]["state"], "active")
            self.assertEqual(mine[0]["protocol"], "postgres")
            self.assertEqual(mine[0]["addr"], "127.0.0.1")
            self.assertNotEqual(mine[0]["link"], "")
            # The console's own client is listed too.
            self.assertTrue(any(c["database"] == "wirepool" for c in clients))
            # Numbers in order of connection (this test made a handful), not
            # addresses that would tell where the heap is.
            ptrs = sorted(int(c["ptr"], 16) for c in clients)
            self.assertEqual(len(set(ptrs)), len(ptrs), clients)
            self.assertLess(ptrs[-1], 1000, clients)
            _, servers = self.table("SHOW SERVERS")
            active = [s for s in servers if s["database"] == "app" and s["state"] == "active"]
            self.assertEqual([s["ptr"] for s in active], [mine[0]["link"]])
            self.assertEqual(active[0]["driver"], "sqlite")
            conn.commit()
            _, servers = self.table("SHOW SERVERS")
            self.assertEqual({s["state"] for s in servers if s["database"] == "app"}, {"idle"})
            _, stats = self.table("SHOW STATS")
            app = [s for s in stats if s["database"] == "app"][0]
            self.assertGreaterEqual(int(app["total_query_count"]), 1)
            self.assertGreaterEqual(int(app["total_xact_count"]), 1)
            self.assertGreater(int(app["total_received"]), 0)
            self.assertGreater(int(app["total_sent"]), 0)
            _, dbs = self.table("SHOW DATABASES")
            self.assertEqual(dbs[0]["name"], "app")
            self.assertEqual(dbs[0]["database"], "app.db")
            self.assertEqual(dbs[0]["pool_size"], "2")
            self.assertGreaterEqual(int(dbs[0]["current_connections"]), 1)
            self.assertEqual(dbs[0]["paused"], "0")
        finally:
            conn.close()

    def test_pause_waits_for_the_transaction_and_holds_new_work_until_resume(self):
        holder = psycopg2.connect(self.wp.kv())
        holder.cursor().execute("SELECT 1")  # a transaction holds the backend
        done = {}

        def pause():
            t = time.monotonic()
            psql(self.wp.dsn("ops", "secret", "wirepool"), "-c", "PAUSE app")
            done["pause"] = time.monotonic() - t

        t = threading.Thread(target=pause)
        t.start()
        time.sleep(0.5)
        self.assertNotIn("pause", done)  # still waiting for the transaction
        holder.cursor().execute("SELECT 2")  # a running transaction is never cut
        holder.commit()
        t.join(10)
        self.assertIn("pause", done)
        self.assertGreaterEqual(done["pause"], 0.5)
        _, dbs = self.table("SHOW DATABASES")
        self.assertEqual(dbs[0]["paused"], "1")

        # New work waits while paused...
        answered = {}

        def query():
            c = psycopg2.connect(self.wp.kv())
            c.autocommit = True
            cur = c.cursor()
            cur.execute("SELECT 42")
            answered["value"] = cur.fetchone()[0]
            c.close()

        q = threading.Thread(target=query)
        q.start()
        time.sleep(0.5)
        self.assertNotIn("value", answered)
        _, pools = self.table("SHOW POOLS")
        self.assertEqual(pools[0]["cl_waiting"], "1")
        # ...until RESUME.
        psql(self.wp.dsn("ops", "secret", "wirepool"), "-c", "RESUME app")
        q.join(10)
        self.assertEqual(answered.get("value"), 42)
        holder.close()

    def test_reconnect_replaces_backend_connections(self):
        with psycopg2.connect(self.wp.kv()) as c:
            c.cursor().execute("SELECT 1")
        c.close()
        _, before = self.table("SHOW SERVERS")
        self.assertTrue(before)
        psql(self.wp.dsn("ops", "secret", "wirepool"), "-c", "RECONNECT")
        deadline = time.time() + 5
        while time.time() < deadline:
            _, now = self.table("SHOW SERVERS")
            if not {s["ptr"] for s in now} & {s["ptr"] for s in before}:
                break
            time.sleep(0.05)
        self.assertFalse({s["ptr"] for s in now} & {s["ptr"] for s in before})
        with psycopg2.connect(self.wp.kv()) as c:
            c.cursor().execute("SELECT 1")
        c.close()

    def test_kill_disconnects_the_database_clients(self):
        victim = psycopg2.connect(self.wp.kv())
        victim.autocommit = True
        victim.cursor().execute("SELECT 1")
        psql(self.wp.dsn("ops", "secret", "wirepool"), "-c", "KILL app")
        with self.assertRaises(psycopg2.Error):
            for _ in range(20):
                victim.cursor().execute("SELECT 1")
                time.sleep(0.05)
        _, dbs = self.table("SHOW DATABASES")
        self.assertEqual(dbs[0]["paused"], "1")
        psql(self.wp.dsn("ops", "secret", "wirepool"), "-c", "RESUME")
        with psycopg2.connect(self.wp.kv()) as c:
            c.cursor().execute("SELECT 1")
        c.close()

    def test_reload_and_errors(self):
        r = psql(self.wp.dsn("ops", "secret", "wirepool"), "-c", "RELOAD")
        self.assertEqual(r.returncode, 0)
        r = psql(self.wp.dsn("ops", "secret", "wirepool"), "-c", "SHOW NOTHING", check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("unknown SHOW command", r.stderr)
        r = psql(self.wp.dsn("ops", "secret", "wirepool"), "-v", "VERBOSITY=verbose", "-c",
                 "FROBNICATE", check=False)
        self.assertIn("42601", r.stderr)
        r = psql(self.wp.dsn("ops", "secret", "wirepool"), "-c", "PAUSE nosuchdb", check=False)
        self.assertIn('database "nosuchdb" does not exist', r.stderr)


class ServersOverPostgresTest(unittest.TestCase):
    """SHOW SERVERS against a real PostgreSQL backend."""

    def test_servers_match_pg_stat_activity(self):
        path = os.environ.get("WIREPOOL_PG_INFO")
        if not path or not os.path.exists(path):
            raise unittest.SkipTest("no PostgreSQL fixture (run through ctest)")
        with open(path) as f:
            i = json.load(f)
        os.environ["WIREPOOL_TEST_PG_PASSWORD"] = i["password"]
        wp = Wirepool(databases=f"""
          - name: pg
            driver: postgresql
            connection: "host={i['host']} port={i['port']} user={i['user']} dbname={i['database']} application_name=wp-admin-test"
            password_env: WIREPOOL_TEST_PG_PASSWORD
            pool: {{ mode: transaction, max: 3, pipeline: false }}
        """, users=USERS, name="admin-pg")
        wp.start()
        try:
            fds_before = wp.open_fds()
            clients = [psycopg2.connect(wp.kv(database="pg")) for _ in range(3)]
            for c in clients:
                c.autocommit = True
            threads = [threading.Thread(target=lambda c=c: c.cursor().execute(
                "SELECT pg_sleep(0.2)")) for c in clients]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            out = psql(wp.dsn("ops", "secret", "wirepool"), "-A", "-F", "|", "-P", "footer=off",
                       "-c", "SHOW SERVERS").stdout.splitlines()
            cols = ("type user database state addr port local_addr local_port connect_time "
                    "request_time wait wait_us close_needed ptr link remote_pid tls "
                    "application_name driver").split()
            servers = [dict(zip(cols, line.split("|"))) for line in out]
            self.assertGreaterEqual(len(servers), 1)
            direct = (f"host={i['host']} port={i['port']} user={i['user']} "
                      f"password={i['password']} dbname={i['database']}")
            rows = psql(direct, "-At", "-F", "|", "-c",
                        "SELECT pid, client_addr, client_port, application_name "
                        "FROM pg_stat_activity WHERE application_name = 'wp-admin-test'"
                        ).stdout.split()
            activity = {r.split("|")[0]: r.split("|")[1:] for r in rows}
            for s in servers:
                self.assertIn(s["remote_pid"], activity, (servers, activity))
                addr, port, app = activity[s["remote_pid"]]
                self.assertEqual((s["local_addr"], s["local_port"]), (addr, port))
                self.assertEqual(s["application_name"], app)
            # Clients' own sockets: 3; each backend connection: 2 (docs/operations.md);
            # the idle park's epoll set of each loop a client parked on: at most 3.
            self.assertLessEqual(wp.open_fds() - fds_before, 3 + 2 * len(servers) + 3)
            for c in clients:
                c.close()
        finally:
            wp.cleanup()


class ShutdownTest(unittest.TestCase):
    def test_shutdown_drains_and_exits_zero(self):
        wp = Wirepool(users=USERS, name="admin-shutdown").start()
        try:
            psql(wp.dsn("ops", "secret", "wirepool"), "-c", "SHUTDOWN")
            wp.proc.wait(15)
            self.assertEqual(wp.proc.returncode, 0, wp.log()[-3000:])
        finally:
            wp.cleanup()


if __name__ == "__main__":
    unittest.main()
