"""wirepool in front of a real PostgreSQL (the CTest fixture `pg`, a throwaway
server started once per suite: tests/fixtures/pgserver.py).

Covers: PostgreSQL's own types reach PostgreSQL clients exactly (int4 stays
int4, numeric(10,2), uuid, json/jsonb, arrays, ranges, timestamptz, bytea) in
text and binary; ParameterStatus comes from the backend; errors carry the
backend's SQLSTATE and message; COMMIT of a failed transaction answers
ROLLBACK; a 100 KB value; a 200,000-row SELECT streams without growing
wirepool's memory; SELECT ... FOR UPDATE NOWAIT on a locked row answers 55P03;
pg_sleep(30) cancelled within a second; pg_terminate_backend on a session-mode
client's backend ends that client (an error, then closed) as PostgreSQL would;
a client that hangs up mid-statement has it cancelled in both modes; a
PostgreSQL restart is survived without restarting wirepool; SET follows the
client across backends in transaction mode (and a rolled-back SET does not);
named prepared statements in transaction mode from many clients, the same name
in two clients, DEALLOCATE; COPY FROM STDIN and TO STDOUT; LISTEN/NOTIFY in
session mode (also to a listener parked while idle), refused in transaction mode, and 20 listeners that left neither
counted nor waited for by SIGTERM's drain; psql's \\d, \\dt, \\l; pgbench -i, then
-S and the TPC-B-like script in simple, extended and prepared modes with zero
failed transactions.
"""

import json
import os
import re
import select
import subprocess
import threading
import time
import unittest

import psycopg2
import psycopg2.errors
import psycopg2.extensions

from harness import NODE_PATH, PGBENCH, Wirepool, WirepoolTestCase, pg_info, psql, raw_login
from wire import SYNC, Reader, bind, execute, parse, query

INFO_PATH = os.environ.get("WIREPOOL_PG_INFO")


def database_entry(info, name, mode, max_conns, pool=""):
    """A `postgresql` entry for the fixture server; `pool`: more pool keys."""
    more = f", {pool}" if pool else ""
    return f"""
      - name: {name}
        driver: postgresql
        connection: "host={info['host']} port={info['port']} user={info['user']} dbname={info['database']}"
        password_env: WIREPOOL_TEST_PG_PASSWORD
        pool: {{ mode: {mode}, max: {max_conns}{more} }}
    """


class PostgresTest(WirepoolTestCase):
    """wirepool with two entries on the same server: `pg` (transaction mode, 4
    connections) and `pgsession` (session mode)."""

    users = "- { name: alice, password: wonderland }"

    @classmethod
    def setUpClass(cls):
        cls.info = pg_info()
        os.environ["WIREPOOL_TEST_PG_PASSWORD"] = cls.info["password"]
        cls.databases = (database_entry(cls.info, "pg", "transaction", 4) +
                         database_entry(cls.info, "pgsession", "session", 4))
        super().setUpClass()
        psql(cls.direct(), "-c", "DROP TABLE IF EXISTS kinds, locked, big, cp, notes")

    @classmethod
    def direct(cls):
        i = cls.info
        return (f"postgresql://{i['user']}:{i['password']}@{i['host']}:{i['port']}/"
                f"{i['database']}")

    def conn(self, database="pg"):
        c = psycopg2.connect(self.wp.kv(database=database))
        c.autocommit = True
        return c

    def q(self, sql, database="pg"):
        return psql(self.wp.dsn(database=database), "-c", sql).stdout.strip()

    # ---- types -------------------------------------------------------------

    def test_backend_types_arrive_as_postgresql_sends_them(self):
        psql(self.direct(), "-c", """CREATE TABLE kinds (
            i int4, n numeric(10,2), u uuid, j json, jb jsonb, a int[], r int4range,
            t timestamptz, b bytea, tx text)""")
        psql(self.direct(), "-c", """INSERT INTO kinds VALUES (7, 12.5,
            'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{"k": 1}', '{"k": [1, 2]}',
            '{1,2,3}', '[1,10)', '2024-02-29 12:34:56.789+00', '\\x00ff', 'grüße')""")
        via = self.q("SELECT i, n, u, j, jb, a, r, t, b, tx FROM kinds")
        direct = psql(self.direct(), "-c", "SELECT i, n, u, j, jb, a, r, t, b, tx FROM kinds"
                      ).stdout.strip()
        self.assertEqual(via, direct)
        c = self.conn()
        cur = c.cursor()
        cur.execute("SELECT i, n, a, r FROM kinds")
        self.assertEqual([d.type_code for d in cur.description], [23, 1700, 1007, 3904])
        row = cur.fetchone()
        self.assertEqual(row[0], 7)
        self.assertEqual(str(row[1]), "12.50")
        self.assertEqual(row[2], [1, 2, 3])
        c.close()
        # Binary formats through node-postgres's extended protocol: the raw bytes
        # and descriptions are the same through wirepool as straight from
        # PostgreSQL.
        script = """
          const { Client } = require('pg');
          (async () => {
            const c = new Client({ connectionString: process.argv[1] });
            await c.connect();
            const raw = { getTypeParser: () => (v) => Buffer.isBuffer(v) ? v.toString('hex') : v };
            const r = await c.query({ text: 'SELECT i, n, u, j, jb, a, r, t, b, tx FROM kinds WHERE i = $1',
                                      values: [7], binary: true, types: raw });
            console.log(JSON.stringify([r.fields.map(f => [f.name, f.dataTypeID, f.dataTypeSize,
                                                           f.dataTypeModifier, f.format]),
                                        r.rows]));
            await c.end();
          })().catch(e => { console.error(e); process.exit(1); });
        """
        outputs = []
        for dsn in (self.wp.dsn(database="pg"), self.direct()):
            r = subprocess.run(["node", "-e", script, dsn], capture_output=True, text=True,
                               timeout=60, env=dict(os.environ, NODE_PATH=NODE_PATH))
            self.assertEqual(r.returncode, 0, r.stderr)
            outputs.append(json.loads(r.stdout))
        self.assertEqual(outputs[0], outputs[1])
        fields = outputs[0][0]
        self.assertEqual([f[1] for f in fields], [23, 1700, 2950, 114, 3802, 1007, 3904, 1184, 17, 25])
        self.assertTrue(all(f[4] == "binary" for f in fields))
        self.assertEqual(outputs[0][1][0]["i"], "\x00\x00\x00\x07")

    def test_parameter_status_comes_from_the_backend(self):
        c = self.conn()
        direct = psycopg2.connect(self.direct())
        self.assertEqual(c.get_parameter_status("server_version"),
                         direct.get_parameter_status("server_version"))
        self.assertNotIn("wirepool", c.get_parameter_status("server_version"))
        c.close()
        direct.close()

    # ---- errors and transactions ------------------------------------------

    def test_errors_and_failed_commit(self):
        c = self.conn()
        cur = c.cursor()
        with self.assertRaises(psycopg2.errors.UndefinedTable) as ctx:
            cur.execute("SELECT * FROM no_such_table")
        self.assertIn('relation "no_such_table" does not exist', str(ctx.exception))
        with self.assertRaises(psycopg2.errors.DivisionByZero):
            cur.execute("SELECT 1/0")
        # COMMIT of a failed transaction answers ROLLBACK, never a false success.
        r = psql(self.wp.dsn(database="pg"),
                 input="\\set ON_ERROR_STOP 0\nBEGIN;\nSELECT 1/0;\nCOMMIT;\n", check=False)
        self.assertIn("ROLLBACK", r.stdout)
        cur.execute("SELECT repeat('x', 100000)")
        self.assertEqual(len(cur.fetchone()[0]), 100000)
        c.close()

    def test_row_lock_nowait_is_55p03(self):
        psql(self.direct(), "-c", "CREATE TABLE locked (id int PRIMARY KEY)")
        psql(self.direct(), "-c", "INSERT INTO locked VALUES (1)")
        holder = psycopg2.connect(self.wp.kv(database="pg"))
        hc = holder.cursor()
        hc.execute("SELECT * FROM locked WHERE id = 1 FOR UPDATE")
        other = self.conn()
        with self.assertRaises(psycopg2.errors.LockNotAvailable) as ctx:
            other.cursor().execute("SELECT * FROM locked WHERE id = 1 FOR UPDATE NOWAIT")
        self.assertEqual(ctx.exception.pgcode, "55P03")
        holder.rollback()
        holder.close()
        other.close()

    def test_cancel_pg_sleep_within_a_second(self):
        c = self.conn()
        threading.Timer(0.5, c.cancel).start()
        started = time.time()
        with self.assertRaises(psycopg2.errors.QueryCanceled):
            c.cursor().execute("SELECT pg_sleep(30)")
        self.assertLess(time.time() - started, 1.5)
        cur = c.cursor()
        cur.execute("SELECT 1")
        self.assertEqual(cur.fetchone()[0], 1)
        c.close()

    def test_terminated_backend_ends_its_session_mode_client(self):
        c = psycopg2.connect(self.wp.kv(database="pgsession"))
        c.autocommit = True
        cur = c.cursor()
        cur.execute("SELECT pg_backend_pid()")
        pid = cur.fetchone()[0]
        psql(self.direct(), "-c", f"SELECT pg_terminate_backend({pid})")
        time.sleep(0.2)
        # As PostgreSQL: the session (temp tables, prepared statements) is gone,
        # so is the client's connection; it does not go on elsewhere unawares.
        with self.assertRaises(psycopg2.OperationalError):
            cur.execute("SELECT 1")
        self.assertNotEqual(c.closed, 0)
        c = psycopg2.connect(self.wp.kv(database="pgsession"))
        cur = c.cursor()
        cur.execute("SELECT pg_backend_pid()")
        self.assertNotEqual(cur.fetchone()[0], pid)
        c.close()

    def test_a_client_that_leaves_mid_statement_frees_its_backend(self):
        # #28 item 12: the statement is cancelled when its client goes away,
        # so the backend comes back at once, not when the statement ends.
        for database in ("pg", "pgsession"):
            tag = f"left-{database}-{os.getpid()}-{time.time_ns()}"
            s = raw_login(self.wp.port, database=database)
            s.sendall(query(f"SELECT pg_sleep(60), '{tag}'"))
            running = f"SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%{tag}%' " \
                      "AND pid <> pg_backend_pid()"
            deadline = time.time() + 10
            while psql(self.direct(), "-Atc", running).stdout.strip() != "1":
                self.assertLess(time.time(), deadline, "the statement never started")
                time.sleep(0.05)
            s.close()
            # PostgreSQL alone would keep it running (client_connection_check_interval
            # is off by default); wirepool's sweep sees the hang-up within 250 ms.
            deadline = time.time() + 10
            while psql(self.direct(), "-Atc", running + " AND state = 'active'"
                       ).stdout.strip() != "0":
                self.assertLess(time.time(), deadline, f"{database}: still running")
                time.sleep(0.05)
            self.assertIn("left while its statement ran", self.wp.log())

    def test_server_restart_is_survived(self):
        self.assertEqual(self.q("SELECT 1"), "1")
        subprocess.run(["/usr/bin/python3",
                        os.path.join(os.path.dirname(__file__), "..", "fixtures", "pgserver.py"),
                        "restart", os.path.dirname(INFO_PATH)], check=True, timeout=120)
        # The first attempt may meet a backend that died with the old server.
        deadline = time.time() + 20
        while True:
            r = psql(self.wp.dsn(database="pg"), "-c", "SELECT 2", check=False)
            if r.returncode == 0:
                break
            self.assertLess(time.time(), deadline, r.stderr)
            time.sleep(0.3)
        self.assertEqual(self.q("SELECT 3"), "3")

    # ---- session semantics -------------------------------------------------

    def test_settings_follow_the_client_across_backends(self):
        c = self.conn()
        cur = c.cursor()
        cur.execute("SET search_path TO pg_catalog, public")
        cur.execute("SET application_name = 'follow-me'")
        cur.execute("BEGIN")
        cur.execute("SET statement_timeout = '7s'")
        cur.execute("ROLLBACK")  # rolled back: not kept
        others = [self.conn() for _ in range(3)]  # keep other backends busy and mixed
        for i in range(20):
            for o in others:
                o.cursor().execute("SET application_name = 'other'")
            cur.execute("SELECT current_setting('search_path'), current_setting('application_name'),"
                        " current_setting('statement_timeout')")
            self.assertEqual(cur.fetchone(), ("pg_catalog, public", "follow-me", "0"))
        for o in others:
            o.close()
        c.close()

    def test_prepared_statements_in_transaction_mode(self):
        # Protocol-level named statements are the session's own: eight
        # node-postgres clients use the same name over four backends.
        script = """
          const { Client } = require('pg');
          (async () => {
            const clients = [];
            for (let i = 0; i < 8; i++) {
              const c = new Client({ connectionString: process.argv[1] });
              await c.connect();
              clients.push(c);
            }
            for (let round = 0; round < 20; round++) {
              await Promise.all(clients.map(async (c, i) => {
                const r = await c.query({ name: 'same', text: 'SELECT $1::int * 2 AS v',
                                          values: [i + round] });
                if (Number(r.rows[0].v) !== 2 * (i + round)) throw new Error('wrong row');
              }));
            }
            await clients[0].query('DEALLOCATE same');
            for (const c of clients) await c.end();
            console.log('ok');
          })().catch(e => { console.error(e); process.exit(1); });
        """
        r = subprocess.run(["node", "-e", script, self.wp.dsn(database="pg")],
                           capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, NODE_PATH=NODE_PATH))
        self.assertEqual(r.returncode, 0, r.stderr + self.wp.log()[-2000:])

    def test_copy_in_and_out(self):
        psql(self.direct(), "-c", "CREATE TABLE cp (id int, name text)")
        data = "".join(f"{i}\tname {i}\n" for i in range(1000))
        r = psql(self.wp.dsn(database="pg"), "-c", "COPY cp FROM STDIN", input=data)
        self.assertIn("COPY 1000", r.stdout)
        out = psql(self.wp.dsn(database="pg"), "-c", "COPY (SELECT * FROM cp ORDER BY id) TO STDOUT")
        self.assertEqual(out.stdout, data)
        self.assertEqual(self.q("SELECT count(*) FROM cp"), "1000")

    def test_listen_notify(self):
        r = psql(self.wp.dsn(database="pg"), "-c", "LISTEN ch", check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("session mode", r.stderr)
        # As from PostgreSQL, a notification reaches an idle listener at once,
        # without a statement of its own (#28 item 10).
        listener = self.conn("pgsession")
        listener.cursor().execute("LISTEN ch")
        self.conn().cursor().execute("NOTIFY ch, 'hello'")
        self.assertTrue(select.select([listener], [], [], 5)[0], "no notification while idle")
        listener.poll()
        self.assertEqual([n.payload for n in listener.notifies], ["hello"])
        listener.close()
        # LISTEN by the extended protocol (psycopg 3 sends it so).
        s = raw_login(self.wp.port, database="pgsession")
        s.sendall(parse("", "LISTEN ch2") + bind("") + execute() + SYNC)
        rd = Reader(s)
        rd.until_ready()
        self.conn().cursor().execute("NOTIFY ch2, 'again'")
        s.settimeout(5)
        t, body = rd.one()
        self.assertEqual(t, "A")
        self.assertIn(b"again", body)
        # Idle for over a second, the listener is parked outside Asio's
        # reactor (docs/architecture.md): a notification still reaches it.
        time.sleep(1.5)
        self.conn().cursor().execute("NOTIFY ch2, 'parked'")
        t, body = rd.one()
        self.assertEqual(t, "A")
        self.assertIn(b"parked", body)
        s.close()

    def test_psql_describe_commands(self):
        psql(self.direct(), "-c", "CREATE TABLE IF NOT EXISTS notes (id int)")
        for cmd, expect in (("\\dt", "notes"), ("\\d notes", "integer"), ("\\l", "wirepool")):
            r = psql(self.wp.dsn(database="pg"), "-c", cmd)
            self.assertIn(expect, r.stdout, cmd)

    def test_streaming_keeps_memory_flat(self):
        before = self.wp.rss_kib()
        r = psql(self.wp.dsn(database="pg"), "-c",
                 "SELECT g, repeat('x', 200) FROM generate_series(1, 200000) g", "-o", "/dev/null")
        self.assertEqual(r.returncode, 0)
        after = self.wp.rss_kib()
        # 200,000 rows of ~210 bytes are ~42 MB: a flat process grows by far less.
        self.assertLess(after - before, 20 * 1024, (before, after))

    # ---- pgbench -------------------------------------------------------------

    def test_pgbench_initialise_and_run(self):
        env = dict(os.environ, PGPASSWORD="wonderland")
        base = ["-h", "127.0.0.1", "-p", str(self.wp.port), "-U", "alice"]
        r = subprocess.run([PGBENCH, "-i", "-s", "1", "-q", *base, "pg"], capture_output=True,
                           text=True, env=env, timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        for script in ([], ["-S"]):
            for mode in ("simple", "extended", "prepared"):
                r = subprocess.run([PGBENCH, "-n", "-M", mode, "-c", "16", "-j", "2", "-t", "100",
                                    *script, *base, "pg"], capture_output=True, text=True,
                                   env=env, timeout=300)
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                self.assertIn("actually processed: 1600/1600", r.stdout)
                failed = re.search(r"number of failed transactions: (\d+)", r.stdout)
                self.assertEqual(failed.group(1), "0", r.stdout)


class LeftListenersTest(unittest.TestCase):
    """Session-mode clients that ran LISTEN (their backend is watched while
    they idle) and then left: each is gone at once, and SIGTERM's drain does
    not wait for them (#28: conformance_psycopg3's teardown outlived its
    stop timeout)."""

    def test_listeners_that_left_do_not_hold_the_drain(self):
        info = pg_info()
        os.environ["WIREPOOL_TEST_PG_PASSWORD"] = info["password"]
        wp = Wirepool(database_entry(info, "pgsession", "session", 20),
                      "- { name: alice, password: wonderland }",
                      server="shutdown_grace: 2s\n", http=True)
        wp.start()
        self.addCleanup(wp.cleanup)
        def clients():
            m = wp.metrics()
            return sum(m[f'wirepool_client_connections{{protocol="postgres",state="{s}"}}']
                       for s in ("active", "waiting", "idle"))
        listeners = [psycopg2.connect(wp.kv(database="pgsession")) for _ in range(20)]
        for c in listeners:
            c.autocommit = True
            c.cursor().execute("LISTEN ch")
        self.assertEqual(clients(), 20)
        for c in listeners:
            c.close()
        left, end = None, time.monotonic() + 10
        while left != 0 and time.monotonic() < end:
            time.sleep(0.1)
            left = clients()
        self.assertEqual(left, 0, "clients that left are still counted")
        self.assertEqual(wp.stop(timeout=15), 0, wp.stop_report)
        self.assertNotIn("still held", wp.log())


if __name__ == "__main__":
    unittest.main()
