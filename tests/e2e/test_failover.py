"""Several backend hosts and failover (docs/high-availability.md), against a
PostgreSQL 15 primary and a synchronous streaming standby that this module
starts itself (tests/fixtures/pgserver.py `standby`; it kills and promotes them).

MultiHostTest (libpq's multi-host `connection`, the standby listed first):
writes reach the primary whichever host is listed first, and SHOW SERVERS and
/metrics name each host's role.

FailoverTest (`hosts:` list): under a load of psycopg2 writers that each
increment a counter and log (client, seq) in one transaction, the primary is
killed (-m immediate) and the standby promoted; new transactions commit on
the new primary within 2 s of the promotion; the counter equals the logged
rows (nothing applied twice), every acknowledged commit is there (nothing
lost); a client idle through the failover runs its next query without an
error. The old primary is then restarted as a diverged server (read-write on
its old timeline): it is reported diverged and none of the writes made
afterwards lands on it.

AuthQueryFailoverTest (`hosts:` with no host in `connection`, auth_user): a
role looked up with auth_query logs in through the primary; after the primary
is killed and the standby promoted, a role not looked up before logs in too
(the auth_user connection follows the host monitor's primary).

ReloadHostsTest: with only the standby in `hosts:` a login finds no primary
(an error naming it, after failover_timeout); SIGHUP with the primary added
moves the database's pools: the next login writes, SHOW HOSTS lists both.
"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import psycopg2

from harness import PSQL, CounterWriters, WirepoolTestCase

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures",
                       "pgserver.py")


def fixture(*args):
    subprocess.run([sys.executable, FIXTURE, *args], check=True, capture_output=True)


def cluster(name):
    d = tempfile.mkdtemp(prefix=f"ha-{name}-")
    fixture("start", d)
    fixture("standby", d, "--sync")
    with open(os.path.join(d, "info.json")) as f:
        return d, json.load(f)


def direct(info, node):
    n = info["nodes"][node]
    return psycopg2.connect(host=n["socket_dir"], port=n["port"], user="postgres",
                            dbname=info["database"], connect_timeout=5)


def admin(wp, command):
    r = subprocess.run([PSQL, "-X", "-A", "-F", "|", "-P", "footer=off", "-d",
                        wp.dsn("ops", "secret", "wirepool"), "-c", command],
                       capture_output=True, text=True, timeout=60, check=True)
    lines = r.stdout.strip().splitlines()
    header = lines[0].split("|")
    return [dict(zip(header, line.split("|"))) for line in lines[1:]]


def failover_under_load(wp, d, info, writers=4, before=1.0, down=0.5, after=2.5):
    """CounterWriters through `wp`; after `before` s the primary is killed,
    `down` s later the standby promoted, and the load runs `after` s more.
    Answers the time from the promotion to the first commit after it
    (failover_s, None if none: measured from the start of `pg_ctl promote`, so
    it includes the promotion itself), the counter and the logged rows read on
    the new primary, the acknowledged and ambiguous (COMMIT failed) (client,
    seq) pairs, and the load itself."""
    with CounterWriters(wp.kv(), writers) as load:
        time.sleep(before)
        fixture("kill", d, "primary")
        time.sleep(down)
        promoted = time.monotonic()  # before pg_ctl promote: an upper bound
        fixture("promote", d, "standby")
        time.sleep(after)
    new = direct(info, "standby")
    cur = new.cursor()
    cur.execute("SELECT n FROM counter WHERE id = 1")
    counter = cur.fetchone()[0]
    cur.execute("SELECT client, seq FROM log")
    logged = set(cur.fetchall())
    new.close()
    return {"failover_s": load.first_commit_after(promoted), "counter": counter,
            "logged": logged, "acked": load.acked, "ambiguous": load.ambiguous, "load": load}


def make_counter_tables(info):
    """The load's tables on the primary, for wirepool's backend role."""
    c = direct(info, "primary")
    c.autocommit = True
    c.cursor().execute("CREATE TABLE counter (id int PRIMARY KEY, n bigint NOT NULL);"
                       "INSERT INTO counter VALUES (1, 0);"
                       "CREATE TABLE log (client int, seq int, PRIMARY KEY (client, seq));"
                       "GRANT ALL ON counter, log TO wirepool")
    c.close()


USERS = """
  - { name: alice, password: wonderland }
  - { name: ops, password: secret, admin: true }
"""


class ClusterTestCase(WirepoolTestCase):
    users = USERS
    http = True
    dir = None

    @classmethod
    def entry(cls):
        raise NotImplementedError

    @classmethod
    def start_backends(cls):
        cls.dir, cls.info = cluster(cls.__name__)
        os.environ["WIREPOOL_TEST_PG_PASSWORD"] = cls.info["password"]
        make_counter_tables(cls.info)
        cls.databases = cls.entry()

    @classmethod
    def stop_backends(cls):
        if cls.dir:
            fixture("stop", cls.dir)

    def wait_role(self, host_port, role, timeout=5):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            rows = admin(self.wp, "SHOW HOSTS")
            for r in rows:
                if r["host"] == host_port and r["role"] == role:
                    return rows
            time.sleep(0.1)
        self.fail(f"{host_port} not {role} within {timeout} s: {rows}")


class MultiHostTest(ClusterTestCase):
    @classmethod
    def entry(cls):
        p, s = cls.info["nodes"]["primary"]["port"], cls.info["nodes"]["standby"]["port"]
        return f"""
          - name: app
            driver: postgresql
            connection: "host=127.0.0.1,127.0.0.1 port={s},{p} user=wirepool dbname=wirepool"
            password_env: WIREPOOL_TEST_PG_PASSWORD
            pool: {{ mode: transaction, max: 4 }}
        """

    def test_writes_reach_the_primary_with_the_standby_listed_first(self):
        c = psycopg2.connect(self.wp.kv())
        c.autocommit = True
        cur = c.cursor()
        for seq in range(50):
            cur.execute("INSERT INTO log VALUES (1, %s)", (seq,))
        c.close()
        d = direct(self.info, "primary")
        cur = d.cursor()
        cur.execute("SELECT count(*) FROM log WHERE client = 1")
        self.assertEqual(cur.fetchone()[0], 50)
        d.close()

    def test_show_hosts_and_metrics_name_each_role(self):
        p, s = self.info["nodes"]["primary"]["port"], self.info["nodes"]["standby"]["port"]
        self.wait_role(f"127.0.0.1:{p}", "primary")
        self.wait_role(f"127.0.0.1:{s}", "standby")
        metrics = self.wp.metrics()
        for port, role in ((p, "primary"), (s, "standby")):
            for r in ("primary", "standby", "banned", "diverged", "unknown"):
                key = f'wirepool_backend_host_role{{database="app",host="127.0.0.1:{port}",' \
                      f'role="{r}"}}'
                self.assertEqual(metrics.get(key), 1.0 if r == role else 0.0, key)


class ReloadHostsTest(ClusterTestCase):
    @classmethod
    def entry(cls):
        s = cls.info["nodes"]["standby"]["port"]
        return f"""
          - name: app
            driver: postgresql
            connection: "user=wirepool dbname=wirepool"
            password_env: WIREPOOL_TEST_PG_PASSWORD
            hosts:
              - {{ host: 127.0.0.1, port: {s} }}
            health_check: {{ failover_timeout: 1s }}
            pool: {{ mode: transaction, max: 2, acquire_timeout: 5s }}
        """

    def test_reload_with_the_primary_added_moves_the_pools_there(self):
        p, s = self.info["nodes"]["primary"]["port"], self.info["nodes"]["standby"]["port"]
        with self.assertRaises(psycopg2.OperationalError) as cm:
            psycopg2.connect(self.wp.kv())
        self.assertIn("no primary among the 1 hosts", str(cm.exception))
        with open(self.wp.config_path) as f:
            text = f.read()
        old = f"- {{ host: 127.0.0.1, port: {s} }}"
        self.assertIn(old, text)
        with open(self.wp.config_path, "w") as f:
            f.write(text.replace(old, old + f"\n      - {{ host: 127.0.0.1, port: {p} }}"))
        self.wp.proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 10
        while "configuration reloaded" not in self.wp.log() and time.monotonic() < deadline:
            time.sleep(0.05)
        c = psycopg2.connect(self.wp.kv())
        c.autocommit = True
        c.cursor().execute("INSERT INTO log VALUES (7, 1)")
        c.close()
        rows = self.wait_role(f"127.0.0.1:{p}", "primary")
        self.assertEqual(sorted(r["host"] for r in rows),
                         sorted([f"127.0.0.1:{p}", f"127.0.0.1:{s}"]))


class AuthQueryFailoverTest(ClusterTestCase):
    @classmethod
    def entry(cls):
        p, s = cls.info["nodes"]["primary"]["port"], cls.info["nodes"]["standby"]["port"]
        os.environ["WIREPOOL_TEST_AQ_PASSWORD"] = "lookup-pw"
        c = direct(cls.info, "primary")
        c.autocommit = True
        c.cursor().execute("CREATE ROLE aq_lookup LOGIN SUPERUSER PASSWORD 'lookup-pw';"
                           "CREATE ROLE aq_before LOGIN PASSWORD 'before-pw';"
                           "CREATE ROLE aq_after LOGIN PASSWORD 'after-pw'")
        c.close()
        return f"""
          - name: app
            driver: postgresql
            connection: "user=wirepool dbname=wirepool connect_timeout=2"
            password_env: WIREPOOL_TEST_PG_PASSWORD
            auth_user: aq_lookup
            auth_password_env: WIREPOOL_TEST_AQ_PASSWORD
            hosts:
              - {{ host: 127.0.0.1, port: {p} }}
              - {{ host: 127.0.0.1, port: {s} }}
            health_check: {{ interval: 500ms, failover_interval: 100ms, ban_time: 500ms,
                            ban_time_max: 2s, failover_timeout: 10s }}
            pool: {{ mode: transaction, max: 2, acquire_timeout: 15s }}
        """

    def login(self, user, password):
        c = psycopg2.connect(self.wp.kv(user=user, password=password), connect_timeout=20)
        c.autocommit = True
        cur = c.cursor()
        cur.execute("SELECT pg_is_in_recovery()")
        self.assertFalse(cur.fetchone()[0])
        c.close()

    def test_auth_query_logins_work_after_failover(self):
        p, s = self.info["nodes"]["primary"]["port"], self.info["nodes"]["standby"]["port"]
        self.wait_role(f"127.0.0.1:{p}", "primary")
        self.login("aq_before", "before-pw")
        fixture("kill", self.dir, "primary")
        fixture("promote", self.dir, "standby")
        self.wait_role(f"127.0.0.1:{s}", "primary", timeout=10)
        self.login("aq_after", "after-pw")
        self.assertIn('auth_query found user "aq_after"', self.wp.log())


class FailoverTest(ClusterTestCase):
    @classmethod
    def entry(cls):
        p, s = cls.info["nodes"]["primary"]["port"], cls.info["nodes"]["standby"]["port"]
        return f"""
          - name: app
            driver: postgresql
            connection: "user=wirepool dbname=wirepool connect_timeout=2"
            password_env: WIREPOOL_TEST_PG_PASSWORD
            hosts:
              - {{ host: 127.0.0.1, port: {p} }}
              - {{ host: 127.0.0.1, port: {s} }}
            health_check: {{ interval: 500ms, failover_interval: 100ms, ban_time: 500ms,
                            ban_time_max: 2s, failover_timeout: 10s }}
            pool: {{ mode: transaction, max: 4, acquire_timeout: 15s }}
        """

    def test_failover_loses_nothing_and_keeps_the_diverged_primary_out(self):
        p = self.info["nodes"]["primary"]["port"]
        self.wait_role(f"127.0.0.1:{p}", "primary")
        idle = psycopg2.connect(self.wp.kv())
        idle.autocommit = True
        idle.cursor().execute("SELECT 1")

        r = failover_under_load(self.wp, self.dir, self.info)
        self.assertIsNotNone(r["failover_s"], "no commit after the promotion")
        self.assertLess(r["failover_s"], 2.0, "first commit after the promotion")
        logged = r["logged"]
        r["load"].assert_exactly_once(self, r["counter"], logged)
        new = direct(self.info, "standby")
        new.autocommit = True
        cur = new.cursor()

        # The idle client notices nothing but a delay.
        cur_idle = idle.cursor()
        cur_idle.execute("SELECT count(*) FROM log")
        self.assertEqual(cur_idle.fetchone()[0], len(logged))
        idle.close()

        # The old primary comes back read-write on its old timeline.
        fixture("start-node", self.dir, "primary")
        self.wait_role(f"127.0.0.1:{p}", "diverged", timeout=10)
        old = direct(self.info, "primary")
        old.autocommit = True
        c2 = old.cursor()
        c2.execute("SELECT pg_is_in_recovery()")
        self.assertFalse(c2.fetchone()[0], "the old primary is not read-write: the test is void")
        w = psycopg2.connect(self.wp.kv())
        w.autocommit = True
        for seq in range(30):
            w.cursor().execute("INSERT INTO log VALUES (99, %s)", (seq,))
        w.close()
        c2.execute("SELECT count(*) FROM log WHERE client = 99")
        self.assertEqual(c2.fetchone()[0], 0, "a write reached the diverged old primary")
        cur.execute("SELECT count(*) FROM log WHERE client = 99")
        self.assertEqual(cur.fetchone()[0], 30)
        old.close()
        new.close()
        self.assertIn("diverged server, kept out", self.wp.log())


if __name__ == "__main__":
    unittest.main()
